/*
 * ts_storage_int.h
 *		The store's private structures: TsStore (which points to the
 *		state of the layers above, opaque here), TsTable, the meta family's
 *		keys, and what ts_storage.c offers the layers above (tables under
 *		their lock, free space, the test points of failure).
 */
#ifndef TS_STORAGE_INT_H
#define TS_STORAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <rocksdb/c.h>

#include "ts_codec.h"
#include "ts_storage.h"

#define TS_GID_TAG_LEN 18		/* "~", 16 hex digits, ":" (registry/ts_gid.c) */
#define TS_GID_MAX 218			/* a stored gid: TC_GID_MAX of tc_client.h, and
								 * a namespace's tag before it */

/*
 * A session's staging directory (under the store's staging_dir) and a
 * file's in it: the sizes of their paths (the session layer's and the
 * replica group's, which writes shipped files there).
 */
#define SESSION_DIR_SIZE 4096	/* of the session's staging directory's path */
#define SESSION_PATH_SIZE (SESSION_DIR_SIZE + 104)	/* of a file's in it */

typedef struct TsTable
{
	uint32_t	id;
	char	   *name;
	Tcopy__Schema *schema;		/* as stored; heap (protobuf-c default
								 * allocator); read under tables_lock,
								 * replaced under it held exclusively */
	Tcopy__Schema **old_schemas;	/* [nold_schemas] replaced ones, kept
									 * until close for readers that hold
									 * them */
	size_t		nold_schemas;
	_Atomic(TsLayout *) layout; /* digest of schema: read with
								 * ts_table_layout, once per request, as a
								 * replaced schema (ADD COLUMN) swaps it */
	TsLayout  **old_layouts;	/* [nold_schemas] theirs, kept likewise */
	bool		dropped;		/* set under tables_lock held for writing */
	_Atomic uint64_t next_rowid;	/* keyless tables: the next generated row id */
} TsTable;

/* in ts_schema.c: whether column i of schema is a key column */
bool		ts_schema_is_key(const Tcopy__Schema *schema, size_t i);

/*
 * in ts_schema.c: compare schema given with stored, of table (for
 * messages): 0 when they match, *upgrade set when given is to replace it;
 * else -1 with the first difference in err (SCHEMA_MISMATCH).
 */
int			ts_schema_compare(const char *table, const Tcopy__Schema *stored,
							  const Tcopy__Schema *given, bool *upgrade, TsError *err);

/*
 * The table's layout now.  A request reads it once and uses that one
 * throughout: replaced ones stay allocated until the store closes.
 */
static inline const TsLayout *
ts_table_layout(const TsTable *table)
{
	return atomic_load_explicit(&((TsTable *) table)->layout, memory_order_acquire);
}

struct TsStore
{
	rocksdb_t  *db;
	rocksdb_options_t *options;
	rocksdb_column_family_handle_t *cf_data;	/* "default": rows */
	rocksdb_column_family_handle_t *cf_meta;	/* "meta": table definitions */
	rocksdb_writeoptions_t *write_sync; /* commits and table changes */
	rocksdb_writeoptions_t *write_lazy; /* unsynced: ts_wal_sync.c */
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
	 * so does replacing a table's schema (ts_store_open_table) and nothing
	 * else, so that a commit (shared) never sees a table dropped under it.
	 * Dropped tables and replaced schemas stay allocated until close.
	 */
	pthread_rwlock_t tables_lock;
	TsTable   **tables;			/* [tables_cap], indexed by id; NULL: no such id */
	uint32_t	tables_cap;
	uint32_t	next_table_id;

	/*
	 * The layers above, opaque here, each allocated by ts_store_open: the
	 * staging layer's key claims and live sessions (staging/ts_staging.h's
	 * TsStaging), and the registries (prepared sessions, load labels, open
	 * sessions, snapshots) and the locks of publishing, resolving, backups
	 * and writes (registry/ts_registry.h's TsRegistries).
	 */
	struct TsStaging *staging;
	struct TsRegistries *reg;

	/*
	 * A replica group member's: every WriteBatch goes through replicator
	 * (ts_storage_write.c); applied_index is the last entry of the group's
	 * log applied here, applied_durable the last recorded in RocksDB,
	 * synced (at most applied_index: a staged file's chunk is recorded
	 * with the next entry, once the file is synced); written only by the
	 * member's apply, under the group's apply lock.
	 */
	TsStorageReplicator replicator;
	void	   *replicator_arg;
	void	   *group;			/* the same member's TsGroup (ts_group.h), set
								 * by ts_group_start, for the session layer */
	uint64_t	applied_index;
	uint64_t	applied_durable;

	/* test-only points of failure: see ts_store_crash_point */
	char	   *crash_at;		/* TSERVER_TEST_CRASH_AT: SIGKILL there */
	const char *test_stop_at;	/* unit tests: fail there, as a crash would leave it */

	/*
	 * Lazy writes (ts_wal_sync.c): those made since start, and how many
	 * of them a sync has covered; the syncer thread syncs the log when
	 * one is not covered soon enough.
	 */
	_Atomic uint64_t lazy_writes;
	_Atomic uint64_t lazy_covered;
	_Atomic uint64_t wal_background_syncs;	/* the syncer's, since start */
	pthread_t	wal_syncer;
	bool		wal_syncer_started;
	bool		wal_syncer_stop;	/* under wal_syncer_mutex */
	pthread_mutex_t wal_syncer_mutex;
	pthread_cond_t wal_syncer_cond;

	_Atomic uint64_t next_session_id;
	_Atomic uint64_t sessions_open;
	_Atomic uint64_t sessions_prepared;
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
 * its name and layout never change (its schema may: see TsTable).
 */
TsTable    *ts_store_table(TsStore *store, uint32_t table_id, TsError *err);

/*
 * The storage half of ts_store_open and ts_store_close (ts_storage.c):
 * the data directory, RocksDB and the table catalogue.
 */
int			ts_storage_open(TsStore *store, const char *dir, TsError *err);
void		ts_storage_close(TsStore *store);

/*
 * Write wb to the store, synced (ts_storage_write.c): straight to RocksDB,
 * or, on a replica group's member, through the group's log (applied on
 * every member by ts_storage_apply).  0, or -1 with err ("what: why").
 */
int			ts_storage_write(TsStore *store, rocksdb_writebatch_t *wb, const char *what,
							 TsError *err);

/*
 * Write wb unsynced, durable once the next synced write of the store, or
 * the background syncer within two rounds of 50 ms, syncs RocksDB's
 * log: for a write that something already durable stands for until then
 * (a prepared session's publish: its record).  Synced as ts_storage_write
 * does on a replica group's member and when the store syncs nothing.  0,
 * or -1 with err ("what: why").  ts_wal_sync.c.
 */
int			ts_storage_write_lazy(TsStore *store, rocksdb_writebatch_t *wb, const char *what,
								  TsError *err);

/* The syncer of lazy writes: started by ts_storage_open, stopped by close. */
int			ts_storage_wal_syncer_start(TsStore *store, TsError *err);
void		ts_storage_wal_syncer_stop(TsStore *store);

/*
 * Read the table catalogue again (a replica group's member about to lead:
 * ts_group.c), freeing the tables in memory: nothing may hold one.
 */
int			ts_storage_reload_tables(TsStore *store, TsError *err);

/*
 * Ingest SST files (absolute paths, moved into RocksDB) in one call, in
 * their order of precedence; the caller holds write_lock as a write of
 * rows does.  0, or -1 with err.
 */
int			ts_storage_ingest(TsStore *store, char *const *files, size_t nfiles, TsError *err);

/*
 * How many of files (absolute paths) are live files of the store already,
 * the same inode: an ingestion that moved them (hard links) and committed,
 * then was cut before it removed them from where they were.  0, or -1.
 */
int			ts_storage_files_live(TsStore *store, char *const *files, size_t nfiles,
								  size_t *live, TsError *err);

/*
 * The first step of a consistent copy of the store: its memtables flushed
 * (holding nothing, so that the checkpoint taken next, under the caller's
 * lock, copies little WAL), and RocksDB's checkpoint object made.  The
 * object, to be destroyed by the caller, or NULL with err.
 */
rocksdb_checkpoint_t *ts_storage_checkpoint_begin(TsStore *store, TsError *err);


/* The applied index stored with the rows, read at open. */
int			ts_storage_load_applied(TsStore *store, TsError *err);

/* 0 when the store's file system has room to write bytes to the WAL, else -1. */
int			ts_store_check_space(TsStore *store, uint64_t bytes, TsError *err);

/* Meta family keys of the catalogue and of prepared sessions. */
#define TS_META_TABLE_PREFIX "table:"
#define TS_META_PREPARED_PREFIX "prepared:"
#define TS_MAX_TABLE_NAME 1024
#define TS_META_LABEL_PREFIX "label:"	/* then be32(table id), then the label */
#define TS_LABEL_MAX 1024		/* TC_LABEL_MAX of tc_client.h */
#define TS_LABEL_KEY_MAX (sizeof(TS_META_LABEL_PREFIX) + TS_TABLE_ID_SIZE + TS_LABEL_MAX)

/*
 * A prepared session's sentinel, a key of table id 0 (ids start at 1: no
 * scan sees it) in the data family: be32(0) "prepared:" gid.  It is
 * ingested with the session's SST files and deleted with its record, so
 * that it is there exactly while the files are ingested and the record
 * not yet deleted.
 */
#define TS_SENTINEL_KEY_MAX (TS_TABLE_ID_SIZE + sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX)

/* Fill key[len] from getrandom (a session's or snapshot's); -1 with errno. */
int			ts_random_key(uint8_t *key, size_t len);

/* Remove dir and everything in it; 0 or -1 with errno. */
int			ts_remove_tree(const char *dir);

/*
 * Sync dir's entries (the files and directories made, renamed or removed
 * in it).  A failure stops the tserver, as a failed fsync stops Postgres
 * (data_sync_retry = off): what the kernel dropped cannot be written again.
 */
void		ts_sync_dir(const char *dir);

/*
 * Test-only points of failure, to check that a crash at any step of
 * preparing, publishing or discarding leaves a session either prepared or
 * resolved, and that resolving it again finishes the job.  Each is a
 * name, at the step it follows:
 *
 *   after-prepare-record   Prepare: the record is written (synced), the
 *                          session's buffers not yet freed, no PrepareOk
 *   after-truncates        publish of a spilled session: step 1 done
 *                          (staged TRUNCATEs and truncates_applied)
 *   after-ingest           publish of a spilled session: step 2 done
 *                          (its SST files and the sentinel ingested)
 *   before-record-delete   publish and discard: just before the WriteBatch
 *                          that deletes the record (and, publishing a
 *                          never-spilled session, writes its rows)
 *   after-record-delete    publish and discard: the record is deleted, the
 *                          staging directory not yet removed
 *
 * With the environment variable TSERVER_TEST_CRASH_AT set to a name when
 * the store opens, the tserver logs a warning and kills itself with
 * SIGKILL there (the TAP tests).  With store->test_stop_at set, this
 * returns -1 with err there instead, and the caller stops as if it had
 * crashed, leaving the disk as a crash would (the unit tests then close
 * and reopen the store).  Otherwise it returns 0: inert by default.
 */
int			ts_store_crash_point(TsStore *store, const char *point, TsError *err);

#endif							/* TS_STORAGE_INT_H */
