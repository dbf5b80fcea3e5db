/*
 * ts_storage_int.h
 *		The store's private structures, shared by ts_storage.c (tables),
 *		the write sessions (ts_session_int.h and the files it lists),
 *		ts_prepared.c and ts_prepared_registry.c (prepared sessions),
 *		ts_publish.c (publishing a session) and ts_scan.c (scans).
 */
#ifndef TS_STORAGE_INT_H
#define TS_STORAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <rocksdb/c.h>

#include "ts_codec.h"
#include "ts_key_claims.h"
#include "ts_storage.h"

#define TS_GID_MAX 200			/* TC_GID_MAX of tc_client.h */

typedef struct TsPrepared TsPrepared;	/* ts_prepared_registry.c */
typedef struct TsLabelClaim TsLabelClaim;	/* ts_labels.c */

/* A load label of a table, as a session claims it and publishes it. */
typedef struct TsLabelRef
{
	uint32_t	table_id;
	char	   *label;			/* 1 .. TS_LABEL_MAX bytes, NUL-terminated */
} TsLabelRef;

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
	rocksdb_writeoptions_t *write_nosync;	/* a prepared session's publish */
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
	 * never held while anything else is taken or written.
	 */
	pthread_mutex_t prepared_lock;
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

/* 0 when the store's file system has room to write bytes to the WAL, else -1. */
int			ts_store_check_space(TsStore *store, uint64_t bytes, TsError *err);

/*
 * A scan's view of an open session's writes to one table, within the
 * scan's key range (ts_session_read.c): each key once, in key order, as
 * the session left it (value NULL: deleted).  Copied when the scan opens,
 * so that the session goes on while the scan is read.
 */
typedef struct TsOverlayRow
{
	const uint8_t *key;
	uint32_t	keylen;
	uint32_t	valuelen;
	const uint8_t *value;		/* unmarked; NULL: the key is deleted */
	bool		yields;			/* a stored row of the key wins (on_conflict ignore) */
} TsOverlayRow;

typedef struct TsOverlay
{
	TsOverlayRow *rows;			/* [n], in key order */
	size_t		n;
	bool		hides_stored;	/* the session truncated the table */
	TcArena		arena;			/* the rows' keys and values */
} TsOverlay;

/* The session registry's lock: ts_store_open and ts_store_close. */
void		ts_sessions_init(TsStore *store);
void		ts_sessions_destroy(TsStore *store);

/*
 * Fill overlay with session_id's writes to table in [lower, upper) (upper
 * empty: no bound), when key is the session's: 0, or -1 with err.
 */
int			ts_session_overlay(TsStore *store, uint64_t session_id, const uint8_t *key,
							   size_t keylen, const TsTable *table, const TcBuf *lower,
							   const TcBuf *upper, TsOverlay *overlay, TsError *err);
void		ts_overlay_free(TsOverlay *overlay);

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
size_t		ts_sentinel_key(const char *gid, char *key);

/* Remove dir and everything in it; 0 or -1 with errno. */
int			ts_remove_tree(const char *dir);

/* A RocksDB error string as a TsError (frees errptr). */
void		ts_error_rocksdb(TsError *err, const char *what, char *errptr);

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

/* in ts_prepared.c */

/*
 * At open, once the tables are loaded: load every prepared record as an
 * orphaned session, raise next_session_id and keyless tables' row id
 * counters above whatever they hold, and empty the staging directory but
 * for the prepared sessions' directories.
 */
int			ts_prepared_load(TsStore *store, TsError *err);

/* in ts_prepared_registry.c */

typedef enum TsPreparedState
{
	PREPARED_PREPARING,			/* Prepare under way: no record yet */
	PREPARED_READY,				/* recorded: to be resolved */
	PREPARED_RESOLVING			/* a Resolve is under way */
} TsPreparedState;

struct TsPrepared
{
	char	   *gid;
	TsPreparedState state;
	uint64_t	owner;			/* connection id; 0: orphaned */
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	prepared_at_ms;
	char	   *scope_prefix;	/* see PreparedRecord.scope_prefix; NULL
								 * while preparing */
	uint32_t   *tables;			/* [ntables]: those it wrote or truncates */
	size_t		ntables;
};

/* The entry of gid, or NULL; call with prepared_lock held. */
TsPrepared *registry_find_locked(TsStore *store, const char *gid, size_t *index);

/*
 * Add an entry for gid in state, owned by owner; -1 with err when gid has
 * one already (ERROR_PROTOCOL) or out of memory.
 */
int			registry_add(TsStore *store, const char *gid, TsPreparedState state,
						 uint64_t owner, TsError *err);

/* Remove gid's entry, if any. */
void		registry_remove(TsStore *store, const char *gid);

/*
 * A Prepare is done: gid's entry is a prepared session, which connections
 * of a namespace see only when scope_prefix starts with it (copied; when
 * out of memory, full access only).
 */
void		registry_set_prepared(TsStore *store, const char *gid, const char *scope_prefix,
								  uint64_t rows, uint64_t bytes, uint64_t prepared_at_ms,
								  const uint32_t *tables, size_t ntables,
								  const uint32_t *truncates, size_t ntruncates);

/*
 * Whether an orphaned prepared session (no connection owns it: its client
 * went away before resolving it) wrote to or truncates table_id: its
 * outcome is not yet on the table.  Its gid into gid[size].
 */
bool		ts_store_table_in_doubt(TsStore *store, uint32_t table_id, char *gid, size_t size);

/* Whether a connection of scope (NULL: full access) sees entry. */
bool		registry_visible(const TsPrepared *entry, const char *scope);
void		ts_prepared_free_all(TsStore *store);

/* in ts_publish.c */

/*
 * What publishing a session takes: a prepared session's from its record,
 * a one-step commit's from the session itself.  See ts_publish.c.
 */
typedef struct TsPublish
{
	const char *gid;			/* a prepared session's; NULL: one-step commit */
	const uint8_t *record_truncated;	/* gid and truncates: the record with */
	size_t		record_truncated_len;	/* truncates_applied set */
	uint64_t	rows;
	rocksdb_writebatch_t *batch;	/* never spilled: its truncates, then its
									 * rows; NULL: spilled */
	char	  **files;			/* spilled: SST files in precedence order, a */
	size_t		nfiles;			/* prepared session's sentinel file first */
	const uint32_t *tables;		/* written to */
	size_t		ntables;
	const uint32_t *truncates;	/* spilled: applied first, in a step of */
	size_t		ntruncates;		/* their own */
	bool		truncates_applied;
	const uint32_t *drops;
	size_t		ndrops;
	const TsLabelRef *labels;	/* load labels published with it */
	size_t		nlabels;
	bool		unsynced_ok;	/* the last write needs no sync: the record
								 * keeps the session durable (ts_publish.c) */
} TsPublish;

/*
 * Publish: make the session's truncates, rows and drops visible, durably,
 * and, for a prepared session, delete its record.  0, or -1 with err; a
 * prepared session is then either wholly published or still prepared, and
 * publishing it again finishes the job (see ts_publish.c).
 */
int			ts_publish(TsStore *store, const TsPublish *pub, TsError *err);

/* in ts_labels.c (see there) */

/* Put a LabelRecord for each of labels[n] (published now, by gid or NULL). */
void		ts_labels_batch_publish(TsStore *store, rocksdb_writebatch_t *wb,
									const TsLabelRef *labels, size_t n, const char *gid);

/* Delete every label of table_id (a truncate or a drop of it). */
void		ts_labels_batch_delete_table(TsStore *store, rocksdb_writebatch_t *wb,
										 uint32_t table_id);

/* Release the claims of the open session session_id. */
void		ts_labels_release_session(TsStore *store, uint64_t session_id);

/* The open session's claims are now the prepared session gid's. */
int			ts_labels_move_to_gid(TsStore *store, uint64_t session_id, const char *gid,
								  TsError *err);

/* Release the claims of the prepared session gid (published or discarded). */
void		ts_labels_release_gid(TsStore *store, const char *gid);

/* At startup: a prepared session's labels are claimed by it again. */
int			ts_labels_claim_for_gid(TsStore *store, const char *gid,
									const TsLabelRef *labels, size_t n, TsError *err);

void		ts_labels_free_all(TsStore *store);

/* Is gid's sentinel in the data family?  1 yes, 0 no, -1 with err. */
int			ts_sentinel_present(TsStore *store, const char *gid, TsError *err);

#endif							/* TS_STORAGE_INT_H */
