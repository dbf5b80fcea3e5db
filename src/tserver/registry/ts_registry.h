/*
 * ts_registry.h
 *		What outlives a session (src/tserver/registry/), the one header of
 *		its folder: the registries the store points to (TsRegistries),
 *		each namespace's gids (ts_gid.c), the prepared records as stored
 *		(ts_prepared_record.c) and the registry of prepared sessions
 *		(ts_prepared_registry.c), writes held back behind in-doubt ones
 *		(ts_in_doubt.c), load labels (ts_labels.c), snapshots
 *		(ts_snapshot.c) and what a namespace holds on disk (ts_quota.c).
 */
#ifndef TS_REGISTRY_H
#define TS_REGISTRY_H

#include "tc_arena.h"
#include "tcopy.pb-c.h"
#include "ts_staging.h"

typedef struct TsPrepared TsPrepared;	/* ts_prepared_registry.c */
typedef struct TsLabelClaim TsLabelClaim;	/* ts_labels.c */

/*
 * The registries and the locks of publishing, resolving, backups and
 * writes, which the store points to (TsStore.reg, allocated by
 * ts_store_open, freed by ts_store_close).
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

/* The snapshots' registry and the store's publish, resolve, backup and write locks: ts_store_open and ts_store_close. */
void		ts_snapshots_init(TsStore *store);
void		ts_snapshots_destroy(TsStore *store);
const rocksdb_snapshot_t *ts_snapshot_rocksdb(const TsSnapshot *snapshot);
int			ts_snapshot_check_row(TsStore *store, const TsSnapshot *snapshot, const TsTable *table,
								  const uint8_t *key, size_t keylen, TsError *err);

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

/* in ts_in_doubt.c */

/*
 * Wait while an in-doubt prepared session holds a table the session writes
 * to or truncates (ts_in_doubt_wait: *waited_ms so far); 0, or -1 with
 * ERROR_SERIALIZATION.
 */
int			ts_session_wait_in_doubt(TsSession *session, int *waited_ms, TsError *err);

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

/* in ts_labels.c (see there) */

/* Put a LabelRecord for each of labels[n] (published now, by gid or NULL). */
void		ts_labels_batch_publish(TsStore *store, rocksdb_writebatch_t *wb,
									const TsLabelRef *labels, size_t n, const char *gid);

/* Delete every label of table_id (a truncate or a drop of it). */
void		ts_labels_batch_delete_table(TsStore *store, rocksdb_writebatch_t *wb,
										 uint32_t table_id);

/* Release the claims of the open session session_id. */
void		ts_labels_release_session(TsStore *store, uint64_t session_id);

/*
 * Release the claims of the open session session_id of table_id's labels
 * (the session truncated the table: they are forgotten with its rows).
 */
void		ts_labels_release_table(TsStore *store, uint64_t session_id, uint32_t table_id);

/* The open session's claims are now the prepared session gid's. */
int			ts_labels_move_to_gid(TsStore *store, uint64_t session_id, const char *gid,
								  TsError *err);

/* Release the claims of the prepared session gid (published or discarded). */
void		ts_labels_release_gid(TsStore *store, const char *gid);

/* At startup: a prepared session's labels are claimed by it again. */
int			ts_labels_claim_for_gid(TsStore *store, const char *gid,
									const TsLabelRef *labels, size_t n, TsError *err);

void		ts_labels_free_all(TsStore *store);

/* what the server calls (ts_store.h includes this header) */

/*
 * Remove every staging directory but the prepared sessions' (a replica
 * group's CLEAN entry: TsGroupConfig.clean_staging).  0, or -1 with err.
 */
int			ts_prepared_clean_staging(TsStore *store, TsError *err);

/*
 * The prepared sessions whose gid starts with prefix, sorted by gid, into
 * list (its array and strings taken from arena).  With a scope (a
 * connection's namespace; NULL: full access), only the sessions whose
 * tables are all within it.
 */
int			ts_store_list_prepared(TsStore *store, const char *prefix, const char *scope,
								   TcArena *arena, Tcopy__PreparedList *list,
								   TsError *err);

/*
 * Whether connection owner owns a prepared session (its gid into gid, of
 * gid_size bytes, when it does).
 */
bool		ts_store_prepared_owned(TsStore *store, uint64_t owner, char *gid,
									size_t gid_size);

/* Connection owner is gone: the sessions it owns become orphaned. */
void		ts_store_prepared_detach(TsStore *store, uint64_t owner);

/*
 * What namespace scope holds on disk (ts_quota.c): its tables' rows in SST
 * files into *stored, its open and prepared sessions' staging files into
 * *staging.  0, or -1 (no memory).  Call with no session's lock held.
 */
int			ts_store_namespace_bytes(TsStore *store, const char *scope, size_t scope_len,
									 uint64_t *stored, uint64_t *staging);

/* A scoped namespace's disk quota in bytes (--max-namespace-disk-mb); 0: none. */
uint64_t	ts_store_namespace_quota(TsStore *store);

/*
 * Claim load label for the session on table_id (docs/protocol.md#load-labels):
 * *state is LABEL_CLAIMED when the session now holds it (published with
 * it), LABEL_OWN when it held it already, LABEL_PUBLISHED (with
 * *published_at_ms) when it was published before, LABEL_BUSY when another
 * open session, or a prepared one whose connection is live, holds it,
 * LABEL_PREPARED (with its gid in holder_gid, of holder_size bytes) when an
 * orphaned prepared session holds it.  -1 with err on a bad label, an
 * unknown table or a storage failure.
 */
int			ts_session_claim_label(TsSession *session, uint32_t table_id,
								   const char *label, Tcopy__LabelState *state,
								   uint64_t *published_at_ms, char *holder_gid,
								   size_t holder_size, TsError *err);

/* Forget table_id's published label, durably; *found says whether it was. */
int			ts_store_forget_label(TsStore *store, uint32_t table_id, const char *label,
								  bool *found, TsError *err);

/*
 * The labels published for table_id, sorted as bytes, into list (its
 * arrays and strings taken from arena).
 */
int			ts_store_list_labels(TsStore *store, uint32_t table_id, TcArena *arena,
								 Tcopy__LabelList *list, TsError *err);

/*
 * Snapshots (ts_snapshot.c, docs/snapshots.md): take one (the caller
 * holds its reference), with the gids of the sessions prepared and not
 * published then that scope sees and that start with prepared_prefix
 * (none when it is empty; in arena), find one by id and key (a reference more, or
 * ERROR_SESSION_LOST), let a reference go; the id and key a client names
 * it by; how many are held (by connections, scans and sessions).
 */
#define TS_SNAPSHOT_KEY_SIZE 16
TsSnapshot *ts_snapshot_take(TsStore *store, const char *prepared_prefix, const char *scope,
							 TcArena *arena, char ***prepared, size_t *nprepared, TsError *err);
TsSnapshot *ts_snapshot_find(TsStore *store, uint64_t id, const uint8_t *key, size_t keylen,
							 TsError *err);
void		ts_snapshot_unref(TsStore *store, TsSnapshot *snapshot);
uint64_t	ts_snapshot_id(const TsSnapshot *snapshot, const uint8_t **key, size_t *keylen);
size_t		ts_snapshots_held(TsStore *store);

#endif							/* TS_REGISTRY_H */
