/*
 * ts_storage_int.h
 *		The store's private structures, shared by ts_storage.c (tables),
 *		the write sessions (ts_session_int.h and the files it lists) and
 *		ts_scan.c (scans).
 */
#ifndef TS_STORAGE_INT_H
#define TS_STORAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <rocksdb/c.h>

#include "ts_codec.h"
#include "ts_storage.h"

typedef struct TsTable
{
	uint32_t	id;
	char	   *name;
	Tcopy__Schema *schema;		/* as stored; heap (protobuf-c default allocator) */
	TsLayout	layout;
	bool		dropped;		/* set under tables_lock held for writing */
	_Atomic uint64_t next_rowid;	/* keyless tables: the next generated row id */
} TsTable;

struct TsStore
{
	rocksdb_t  *db;
	rocksdb_options_t *options;
	rocksdb_column_family_handle_t *cf_data;	/* "default": rows */
	rocksdb_column_family_handle_t *cf_meta;	/* "meta": table definitions */
	rocksdb_writeoptions_t *write_sync; /* commits and table changes */
	rocksdb_readoptions_t *read_default;
	rocksdb_block_based_table_options_t *table_options;
	rocksdb_cache_t *block_cache;
	rocksdb_envoptions_t *env_options;	/* for SstFileWriter */
	char	   *dir;
	char	   *staging_dir;	/* DIR/staging: one subdirectory per session */
	TsStoreOptions opts;

	/*
	 * Tables by id (ids start at 1 and are never reused).  Readers take the
	 * lock shared; creating, truncating and dropping take it exclusive, and
	 * so does nothing else, so that a commit (shared) never sees a table
	 * dropped under it.  Dropped tables stay allocated until close.
	 */
	pthread_rwlock_t tables_lock;
	TsTable   **tables;			/* [tables_cap], indexed by id; NULL: no such id */
	uint32_t	tables_cap;
	uint32_t	next_table_id;

	_Atomic uint64_t next_session_id;
	_Atomic uint64_t sessions_open;
	_Atomic uint64_t sessions_committed;
	_Atomic uint64_t sessions_aborted;
	_Atomic uint64_t rows_committed;
	_Atomic uint64_t staged_bytes;
	_Atomic uint64_t spilled_bytes;
	_Atomic uint64_t tables_live;
};

/*
 * The live table with this id, or NULL, with ERROR_UNKNOWN_TABLE in err
 * when err is not NULL; call with tables_lock held.
 */
TsTable    *ts_store_table_locked(TsStore *store, uint32_t table_id, TsError *err);

/*
 * ts_store_table_locked taking tables_lock shared.  The table stays
 * allocated once the lock is released (a dropped table's until close), and
 * its name and layout never change.
 */
TsTable    *ts_store_table(TsStore *store, uint32_t table_id, TsError *err);

/* 0 when the store's file system has room to write bytes to the WAL, else -1. */
int			ts_store_check_space(TsStore *store, uint64_t bytes, TsError *err);

/* Remove dir and everything in it; 0 or -1 with errno. */
int			ts_remove_tree(const char *dir);

/* A RocksDB error string as a TsError (frees errptr). */
void		ts_error_rocksdb(TsError *err, const char *what, char *errptr);

#endif							/* TS_STORAGE_INT_H */
