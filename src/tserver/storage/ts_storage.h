/*
 * ts_storage.h
 *		The storage layer's API: a store's tables over RocksDB (their
 *		catalogue, estimates and counters) and its options.  Thread-safe:
 *		every connection thread calls it directly.  The store is opened,
 *		with its sessions, by the session layer (ts_store.h).
 *
 * Tables live in the "meta" column family (name -> id and schema) and their
 * rows in "default", keyed by the 4-byte big-endian table id followed by the
 * order-preserving encoding of the key columns (or an 8-byte generated row
 * id); the value holds the other columns (ts_codec.h).
 */
#ifndef TS_STORAGE_H
#define TS_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_arena.h"
#include "tcopy.pb-c.h"
#include "ts_codec.h"
#include "ts_error.h"

typedef struct TsStore TsStore;

#define TS_SESSION_MEMORY_MAX ((size_t) 1 << 31)	/* larger is clamped */
#define TS_MERGE_THREADS_MAX 16
/*
 * The default of TsStoreOptions.in_doubt_wait_ms: Postgres' recovery worker
 * runs at startup and every tcopy.recovery_interval (10 s by default), so
 * that a COMMIT right after a tserver restart waits for its round instead
 * of failing; 5 s more for the round itself.
 */
#define TS_IN_DOUBT_WAIT_MS_DEFAULT 15000
#define TS_IN_DOUBT_WAIT_MS_MAX 3600000

typedef struct TsStoreOptions
{
	size_t		session_memory_bytes;	/* staged bytes before a session spills */
	uint64_t	memory_bytes;	/* staged bytes of all sessions together before
								 * they spill early; 0: no such limit */
	size_t		sst_target_bytes;	/* size of one ingested SST file */
	int			merge_threads;	/* of a commit's merge, 1 .. TS_MERGE_THREADS_MAX */
	uint64_t	merge_part_bytes;	/* of runs, at least, for each merge thread */
	size_t		block_cache_bytes;
	int			compression;	/* of SST files: TS_COMPRESSION_* */
	size_t		block_bytes;	/* of SST files' data blocks */
	bool		sync_commits;	/* false only for measurements */
	bool		statistics;		/* RocksDB's, for measurements */
	uint64_t	namespace_disk_bytes;	/* a scoped namespace's stored and
										 * spilled bytes at most; 0: no quota
										 * (--max-namespace-disk-mb) */
	int			in_doubt_wait_ms;	/* how long a write waits for an in-doubt
									 * prepared session of its tables
									 * (ts_in_doubt.c); 0: refused at once */
	bool		replica_group;	/* a replica group's member (ts_group.h) */
} TsStoreOptions;

/* TsStoreOptions.compression */
#define TS_COMPRESSION_NONE	0
#define TS_COMPRESSION_LZ4	1
#define TS_COMPRESSION_ZSTD	2

void		ts_store_default_options(TsStoreOptions *options);

/*
 * Replica groups (ts_storage_write.c, docs/replication.md).  A replicator
 * takes a WriteBatch's bytes (rocksdb_writebatch_data), has them committed
 * by the group and applied on this member before it returns 0, or returns
 * -1 with err; set before the store serves anything, never changed after.
 */
typedef int (*TsStorageReplicator) (void *arg, const char *data, size_t len, TsError *err);

/*
 * Make every lazy write finished so far durable (a sync when any is
 * pending): before an answer that lets a client forget what stood for one
 * (a listing of prepared sessions, a resolve's NOT_FOUND).  0, or -1 with
 * err.
 */
int			ts_storage_sync_lazy(TsStore *store, TsError *err);

/* A sync covered the first written lazy writes (those made when it began). */
void		ts_storage_lazy_covered(TsStore *store, uint64_t written);

void		ts_storage_set_replicator(TsStore *store, TsStorageReplicator replicator, void *arg);
bool		ts_storage_replicated(const TsStore *store);

/*
 * Apply the entry at index of the group's log (a WriteBatch's bytes) with
 * the index beside it, synced; an index at or below the last applied is
 * skipped (a replay).  The member's raft thread only.  0, or -1 with err.
 */
int			ts_storage_apply(TsStore *store, uint64_t index, const char *data, size_t len,
							 TsError *err);
uint64_t	ts_storage_applied(const TsStore *store);

/*
 * Forget the applied index (synced): the store, a backup's, now begins a
 * new group's log.  0, or -1 with err.
 */
int			ts_storage_forget_applied(TsStore *store, TsError *err);

/*
 * Raise the applied index to index (an entry that wrote no batch).  With
 * sync, recorded in RocksDB, synced (an index at or below the one recorded
 * is skipped).  Without, in memory only: nothing is written, a restart
 * replays the entry, and the next recording (ts_storage_apply, or this
 * with sync) covers it, so the caller makes the entry's effect durable
 * before any.
 */
int			ts_storage_mark_applied(TsStore *store, uint64_t index, bool sync, TsError *err);

/* The applied index recorded in RocksDB, synced: what a restart starts from. */
uint64_t	ts_storage_applied_durable(const TsStore *store);

/*
 * Look table name up; with create, make it when missing (the definition is
 * durable before this returns, whatever happens to the caller's session).
 * A given schema must match the stored one (ERROR_SCHEMA_MISMATCH says how
 * it differs): names, kinds, typmods and key, and forms where both columns
 * have one, else type names.  A matching schema that adds forms or renames
 * types of equal forms replaces the stored one, durably.  *schema_out, when
 * asked for, points to the stored schema (after any replacement), valid
 * until the store is closed (a dropped table's definition and a replaced
 * schema stay allocated until then).
 */
int			ts_store_open_table(TsStore *store, const char *name,
								const Tcopy__Schema *schema, bool create,
								uint32_t *table_id, bool *created,
								const Tcopy__Schema **schema_out, TsError *err);

/* RocksDB's levels a table's files are counted at; deeper ones count at the last */
#define TS_STORE_LEVELS 8

/* A table's SST files at one level: those holding any of its keys, whole. */
typedef struct TsLevelFiles
{
	uint64_t	files;
	uint64_t	bytes;
} TsLevelFiles;

/*
 * The approximate rows and stored bytes of table_id, from RocksDB's
 * metadata and the memtables, without reading its rows (ts_estimate.c says
 * how, and how accurate), and, unless levels is NULL, its SST files by
 * level into levels[TS_STORE_LEVELS].  -1 with err for an unknown table.
 */
int			ts_store_table_estimate(TsStore *store, uint32_t table_id,
									uint64_t *rows, uint64_t *bytes, TsLevelFiles *levels,
									TsError *err);

/*
 * The approximate bytes the SST files hold of tables ids[n] (RocksDB's
 * index blocks, one call; rows still in memtables are not counted): what a
 * namespace's disk quota weighs.
 */
uint64_t	ts_store_tables_bytes(TsStore *store, const uint32_t *ids, size_t n);

/* Fill the store's fields of stats (tables, sessions, rows, staging). */
void		ts_store_stats(TsStore *store, Tcopy__Stats *stats);

#endif							/* TS_STORAGE_H */
