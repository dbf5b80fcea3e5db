/*
 * ts_store_int.h
 *		The session layer's private structures and functions, shared by its
 *		files: the sessions' registry and overlays (ts_session_read.c),
 *		prepared sessions and their registry (ts_prepared.c,
 *		ts_prepared_registry.c), writes held back behind in-doubt ones
 *		(ts_in_doubt.c), publishing (ts_publish.c) and load labels
 *		(ts_labels.c), and their registries (TsRegistries, which the
 *		store's private struct points to: ts_storage_int.h).
 */
#ifndef TS_STORE_INT_H
#define TS_STORE_INT_H

#include "tc_arena.h"
#include "tc_buf.h"
#include "ts_key_claims.h"
#include "ts_storage_int.h"
#include "ts_store.h"

typedef struct TsPrepared TsPrepared;	/* ts_prepared_registry.c */
typedef struct TsLabelClaim TsLabelClaim;	/* ts_labels.c */

/*
 * The session layer's registries and locks, which the store points to
 * (TsStore.reg, allocated by ts_store_open, freed by ts_store_close).
 */
typedef struct TsRegistries
{
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
} TsRegistries;

/* A load label of a table, as a session claims it and publishes it. */
typedef struct TsLabelRef
{
	uint32_t	table_id;
	char	   *label;			/* 1 .. TS_LABEL_MAX bytes, NUL-terminated */
} TsLabelRef;

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

/* The snapshots' registry and the store's publish, resolve, backup and write locks: ts_store_open and ts_store_close. */
void		ts_snapshots_init(TsStore *store);
void		ts_snapshots_destroy(TsStore *store);
const rocksdb_snapshot_t *ts_snapshot_rocksdb(const TsSnapshot *snapshot);
int			ts_snapshot_check_row(TsStore *store, const TsSnapshot *snapshot, const TsTable *table,
								  const uint8_t *key, size_t keylen, TsError *err);

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

/* A prepared session's sentinel key (TS_SENTINEL_KEY_MAX bytes at most) of gid. */
size_t		ts_sentinel_key(const char *gid, char *key);

/* in ts_backup_dir.c */

#define TS_BACKUP_MANIFEST "BACKUP"	/* a backup's manifest, in its directory */

/*
 * Check the backup directory path[pathlen] a client sent (under root when
 * there is one) and make it, with its missing parents, holding a manifest
 * that says it is incomplete: its path into dir, its parent's into parent,
 * each of TS_BACKUP_PATH_MAX + 1 bytes.  0, or -1 with err.
 */
int			ts_backup_make_dir(TsStore *store, const char *path, size_t pathlen,
							   const char *root, char *dir, char *parent, TsError *err);

/* in ts_backup.c */

/*
 * Before the store opens on dir: refuse a backup whose manifest is
 * incomplete (-1 with err); rename a complete one's BACKUP.old.
 */
int			ts_backup_check_start(const char *dir, TsError *err);

/* in ts_prepared_record.c: the prepared records as stored */

#define PREPARED_RECORD_VERSION 1
#define PREPARED_RECORD_VERSION_LABELS 2	/* a record with load labels */

struct Tstore__PreparedRecord;	/* ts_store.pb-c.h */

/* The meta family key of gid's record into key[size]; its length. */
size_t		ts_prepared_record_key(const char *gid, char *key, size_t size);

/* Pack rec into a new buffer (*len bytes); NULL when out of memory. */
uint8_t    *ts_prepared_record_pack(const struct Tstore__PreparedRecord *rec, size_t *len);

/* Read and decode gid's record, checked: NULL with err when missing or corrupt. */
struct Tstore__PreparedRecord *ts_prepared_record_read(TsStore *store, const char *gid,
													   TsError *err);

/*
 * Call fn(store, rec, arg, err) on every stored prepared record, checked,
 * in key order, until one fails; 0, or -1 with err (also for a record that
 * does not decode).
 */
typedef int (*TsPreparedRecordFn) (TsStore *store, const struct Tstore__PreparedRecord *rec,
								   void *arg, TsError *err);
int			ts_prepared_each(TsStore *store, TsPreparedRecordFn fn, void *arg, TsError *err);

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
	uint32_t   *tables;			/* [ntables]: those it wrote, truncates or
								 * drops */
	size_t		ntables;
	bool		in_doubt;		/* orphaned (restored at startup, or its
								 * connection ended) since it was prepared:
								 * until it leaves the registry, its outcome
								 * is for recovery to publish, and writes to
								 * its tables are held back (ts_in_doubt.c) */
};

/* The entry of gid, or NULL; call with prepared_lock held. */
TsPrepared *registry_find_locked(TsStore *store, const char *gid, size_t *index);

/*
 * Add an entry for gid in state, owned by owner; -1 with err when gid has
 * one already (ERROR_PROTOCOL) or out of memory.
 */
int			registry_add(TsStore *store, const char *gid, TsPreparedState state,
						 uint64_t owner, TsError *err);

/*
 * The gids of the prepared sessions (not those being prepared) that scope
 * sees and that start with prefix (none when it is empty), copied into
 * arena; -1 when out of memory.
 */
int			registry_gids(TsStore *store, const char *prefix, const char *scope, TcArena *arena,
						  char ***gids, size_t *ngids);

/* Remove gid's entry, if any (an in-doubt one wakes in_doubt_resolved). */
void		registry_remove(TsStore *store, const char *gid);

/*
 * A Prepare is done: gid's entry is a prepared session, which connections
 * of a namespace see only when scope_prefix starts with it (copied; when
 * out of memory, full access only).
 */
void		registry_set_prepared(TsStore *store, const char *gid, const char *scope_prefix,
								  uint64_t rows, uint64_t bytes, uint64_t prepared_at_ms,
								  const uint32_t *tables, size_t ntables,
								  const uint32_t *truncates, size_t ntruncates,
								  const uint32_t *drops, size_t ndrops);

/*
 * The in-doubt entry (TsPrepared.in_doubt) that holds one of the tables of
 * lists[nlists] (of counts[] each), that table into *table_id; or NULL.
 * Call with prepared_lock held.
 */
const TsPrepared *registry_in_doubt_locked(TsStore *store, const uint32_t *const *lists,
										   const size_t *counts, int nlists,
										   uint32_t *table_id);

/*
 * Whether an in-doubt prepared session (no live connection will resolve
 * it: its client went away, or the tserver restarted, before resolving it)
 * wrote to, truncates or drops table_id: its outcome is not yet on the
 * table.  Its gid into gid[size].
 */
bool		ts_store_table_in_doubt(TsStore *store, uint32_t table_id, char *gid, size_t size);

/* in ts_in_doubt.c */

/*
 * Wait while an in-doubt prepared session holds one of the tables of
 * lists[nlists] (of counts[] each): until none does (0), or, after the
 * store's in_doubt_wait_ms in all (*waited_ms so far, which this
 * advances), or when give_up(arg) (asked every slice of the wait) says so,
 * -1 with ERROR_SERIALIZATION in err, naming the session, the table (also
 * in err->table_id) and what, the write that could be overwritten.
 * Takes prepared_lock and releases it while it waits: call with no lock
 * held, so that the Resolve it waits for can proceed.
 */
int			ts_in_doubt_wait(TsStore *store, const uint32_t *const *lists, const size_t *counts,
							 int nlists, const char *what, bool (*give_up) (void *arg), void *arg,
							 int *waited_ms, TsError *err);


/* in ts_gid.c */

/* Whether a connection of scope (NULL: full access) sees entry. */
bool		ts_gid_visible(const TsPrepared *entry, const char *scope);

/*
 * The stored form of a client's gid (1 .. TC_GID_MAX bytes, else -1 with
 * err) for a connection of scope (NULL: full access) into out.
 */
int			ts_gid_store(const char *scope, const char *gid, char *out, size_t size,
						 TsError *err);

/*
 * entry's gid as a connection of scope names it (pointing into entry's),
 * or NULL when that connection may not see it.
 */
const char *ts_gid_shown(const TsPrepared *entry, const char *scope);
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
	const uint32_t *truncates;	/* truncated tables; spilled: applied first, */
	size_t		ntruncates;		/* in a step of their own */
	bool		truncates_applied;
	const uint32_t *drops;
	size_t		ndrops;
	const TsLabelRef *labels;	/* load labels published with it */
	size_t		nlabels;
} TsPublish;

/*
 * Publish: make the session's truncates, rows and drops visible, durably,
 * and, for a prepared session, delete its record.  0, or -1 with err; a
 * prepared session is then either wholly published or still prepared, and
 * publishing it again finishes the job (see ts_publish.c).
 */
int			ts_publish(TsStore *store, const TsPublish *pub, TsError *err);

/* Add to wb the deletion of every row of table_id (its key range). */
void		ts_batch_delete_table_rows(TsStore *store, rocksdb_writebatch_t *wb,
									   uint32_t table_id);

/*
 * Write wb synced, which truncates or drops tables[n] (every row), holding
 * write_lock exclusive, and let their old rows go with their files (and,
 * with compact, compact what is left of their ranges to the bottom level),
 * unless a snapshot is held (ts_publish.c).  0, or -1 with err ("what: why").
 */
int			ts_store_write_emptying(TsStore *store, rocksdb_writebatch_t *wb,
									const uint32_t *tables, size_t ntables, bool compact,
									const char *what, TsError *err);

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

#endif							/* TS_STORE_INT_H */
