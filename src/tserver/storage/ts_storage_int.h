/*
 * ts_storage_int.h
 *		The store's private structures: TsStore (whose registries the
 *		session layer fills: ts_store_int.h), TsTable, the meta family's
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

#define TS_GID_TAG_LEN 18		/* "~", 16 hex digits, ":" (session/ts_gid.c) */
#define TS_GID_MAX 218			/* a stored gid: TC_GID_MAX of tc_client.h, and
								 * a namespace's tag before it */

/*
 * A session's staging directory (under the store's staging_dir) and a
 * file's in it: the sizes of their paths (the session layer's and the
 * replica group's, which writes shipped files there).
 */
#define SESSION_DIR_SIZE 4096	/* of the session's staging directory's path */
#define SESSION_PATH_SIZE (SESSION_DIR_SIZE + 104)	/* of a file's in it */

/* the session layer's registries, which the store holds (ts_store_int.h) */
typedef struct TsPrepared TsPrepared;	/* ts_prepared_registry.c */
typedef struct TsLabelClaim TsLabelClaim;	/* ts_labels.c */
typedef struct TsKeyClaim TsKeyClaim;	/* ts_key_claims.c */
typedef struct TsSession TsSession;	/* ts_session_int.h */
typedef struct TsSnapshot TsSnapshot;	/* ts_snapshot.c */
typedef struct TsGroup TsGroup;	/* ts_group.c */

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
	 * so does replacing a table's schema (ts_store_open_table) and nothing
	 * else, so that a commit (shared) never sees a table dropped under it.
	 * Dropped tables and replaced schemas stay allocated until close.
	 */
	pthread_rwlock_t tables_lock;
	TsTable   **tables;			/* [tables_cap], indexed by id; NULL: no such id */
	uint32_t	tables_cap;
	uint32_t	next_table_id;

	/*
	 * Prepared sessions (ts_prepared_registry.c), one entry per record in the meta
	 * family and per Prepare in progress, under prepared_lock, which is
	 * never held while anything else is taken or written.  in_doubt_resolved
	 * (with prepared_lock, on CLOCK_MONOTONIC) is broadcast whenever an
	 * in-doubt entry leaves the registry: writes held back behind it wait
	 * on it (ts_in_doubt.c).
	 */
	pthread_mutex_t prepared_lock;
	pthread_cond_t in_doubt_resolved;
	TsPrepared **prepared;		/* [nprepared] */
	size_t		nprepared;
	size_t		prepared_cap;

	/*
	 * Load labels claimed by open or prepared sessions (ts_labels.c), under
	 * labels_lock, which is never held while prepared_lock is taken.
	 */
	pthread_mutex_t labels_lock;
	TsLabelClaim *claims;		/* [nclaims] */
	size_t		nclaims;
	size_t		claims_cap;

	/*
	 * Key claims of sessions with on_conflict policies, and the open
	 * sessions in the order they began (ts_key_claims.c), under
	 * key_claims_lock, which is taken before tables_lock and under no
	 * other.
	 */
	pthread_mutex_t key_claims_lock;
	TsKeyClaim **key_claims;	/* [nkey_claims] */
	size_t		nkey_claims;
	size_t		key_claims_cap;
	uint64_t	publish_seq;	/* claims published so far */
	TsSession  *live_first;
	TsSession  *live_last;

	/*
	 * Open write sessions not yet prepared, by id, for scans that read a
	 * session's writes (ts_session_read.c), under sessions_lock, which is
	 * taken under no other.
	 */
	pthread_mutex_t sessions_lock;
	TsSession  *sessions;

	/*
	 * Snapshots of the committed rows (ts_snapshot.c), under
	 * snapshots_lock, which is taken under no other but write_lock; publish_lock keeps
	 * them and scans' iterators from being made between the steps of a
	 * publish (exclusive there, shared here).
	 */
	pthread_mutex_t snapshots_lock;
	TsSnapshot *snapshots;
	uint64_t	next_snapshot_id;
	pthread_rwlock_t publish_lock;

	/*
	 * A prepared session's publish holds resolve_lock shared from before
	 * its rows are written until its entry leaves the registry; a snapshot
	 * that lists the prepared sessions holds it exclusive while it is made
	 * and the list read, so that each session is in one or the other.
	 * Taken before publish_lock and prepared_lock.
	 */
	pthread_rwlock_t resolve_lock;

	/*
	 * A backup (ts_backup.c) holds backup_lock exclusive while it takes
	 * RocksDB's checkpoint and links the prepared sessions' files; a
	 * Prepare holds it shared while it writes its record, a Resolve from
	 * its claim until its record is deleted and its directory removed, so
	 * that the checkpoint's records are the store's then, files and all.
	 * Taken before resolve_lock and publish_lock, under no other.
	 */
	pthread_rwlock_t backup_lock;

	/*
	 * Writes of rows (a publish's writes and ingestions) hold write_lock
	 * shared; a write that truncates or drops tables holds it exclusive
	 * until the files left with nothing but their old rows are dropped
	 * (ts_store_write_emptying), so that no file in their ranges can hold
	 * a row written after it.  Taken under the others.
	 */
	pthread_rwlock_t write_lock;

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
	TsGroup    *group;			/* the same member's, for the session layer */
	uint64_t	applied_index;
	uint64_t	applied_durable;

	/* test-only points of failure: see ts_store_crash_point */
	char	   *crash_at;		/* TSERVER_TEST_CRASH_AT: SIGKILL there */
	const char *test_stop_at;	/* unit tests: fail there, as a crash would leave it */

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
