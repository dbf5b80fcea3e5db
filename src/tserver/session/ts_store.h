/*
 * ts_store.h
 *		The session layer's API, what the server calls: a store opened with
 *		its registries, atomic write sessions, two-phase commit, scans,
 *		load labels.  Thread-safe: every connection thread calls it
 *		directly.  The tables themselves are the storage layer's
 *		(ts_storage.h, included).
 *
 * A session stages rows outside RocksDB: in a memory buffer up to a limit,
 * then as sorted run files in the session's staging directory.  Commit
 * publishes everything at once: a small session as one synced WriteBatch,
 * a spilled one by merging its runs into SST files ingested in one
 * IngestExternalFile call.  Nothing of a session is visible before that,
 * and abort, a dropped connection or a crash leaves nothing (staging
 * directories are removed at startup).
 *
 * Two-phase commit: a session prepared under a global id (gid) is written
 * out and recorded durably in the meta family, and from then on it is
 * published or discarded only by ts_store_resolve, on any connection,
 * after any restart.  The store keeps a registry of the prepared sessions,
 * each owned by the connection that prepared or claimed it, or orphaned.
 */
#ifndef TS_STORE_H
#define TS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tc_arena.h"
#include "tc_buf.h"
#include "tcopy.pb-c.h"
#include "ts_error.h"
#include "ts_registry.h"
#include "ts_storage.h"

typedef struct TsSession TsSession;
typedef struct TsStream TsStream;	/* a connection joined to a session: ts_streams.c */
typedef struct TsStreams TsStreams;	/* the streams of one session */
typedef struct TsScan TsScan;
typedef struct TsSnapshot TsSnapshot;

/* Open (creating when missing) the store in dir; NULL with err on failure. */
TsStore    *ts_store_open(const char *dir, const TsStoreOptions *options,
						  TsError *err);
/* Close RocksDB cleanly; every session and scan must be gone. */
void		ts_store_close(TsStore *store);

/*
 * A replica group's member taking the lead (TsGroupConfig.reload): forget
 * what the store keeps in memory of sessions (the prepared registry, load
 * labels, key claims) and load it again, with the tables, from RocksDB,
 * which the group's log brought up to date.  Nothing may hold any of it:
 * the member has served no client.  0, or -1 with err.
 */
int			ts_store_reload_sessions(TsStore *store, TsError *err);

/*
 * Backups (ts_backup.c, docs/storage.md#backups).  ts_store_backup takes
 * an online, consistent backup into path (pathlen bytes as a client sent
 * them: checked here; within root unless it is NULL), a new directory
 * that is a data directory, synced before it returns.  What it holds
 * goes into info, its gids taken from arena.  0, or -1 with err (and
 * nothing left at path).
 */
#define TS_BACKUP_PATH_MAX 1024
typedef struct TsBackupInfo
{
	uint32_t	tables;
	char	  **prepared;		/* [nprepared] gids of prepared sessions */
	size_t		nprepared;
	uint64_t	bytes;			/* of its files */
	uint64_t	sequence;		/* RocksDB's: every write up to it is in it */
	uint64_t	locked_us;		/* backup_lock held exclusive */
	uint64_t	took_ms;
} TsBackupInfo;

int			ts_store_backup(TsStore *store, const char *path, size_t pathlen, const char *root,
							TcArena *arena, TsBackupInfo *info, TsError *err);

/*
 * Truncate or drop a table, durably, at once (not part of any session).  A
 * truncate first waits for the in-doubt prepared sessions of the table
 * (ts_session_prepare_gid says how; give_up(arg), when given, is asked
 * every slice of the wait whether to stop).
 */
int			ts_store_table_op(TsStore *store, Tcopy__TableOpKind op,
							  uint32_t table_id, bool (*give_up) (void *arg), void *arg,
							  TsError *err);

/*
 * Publish (commit) or discard the session prepared under gid, as the
 * connection owner (a nonzero id): its own, or an orphaned one, which it
 * claims.  *outcome is RESOLVE_DONE once published or discarded durably,
 * RESOLVE_NOT_FOUND when nothing is prepared under gid (or nothing a
 * connection of scope, its namespace, may see: see ts_store_list_prepared;
 * NULL: full access), RESOLVE_BUSY when
 * another connection owns it or a Prepare or Resolve of it is under way;
 * *rows is the session's rows.  Returns -1 with err when resolving failed:
 * the session is then still prepared (whatever was published of it is
 * finished by the next Resolve), and owner still owns it.
 */
int			ts_store_resolve(TsStore *store, const char *gid, bool commit,
							 uint64_t owner, const char *scope,
							 Tcopy__ResolveOutcome *outcome,
							 uint64_t *rows, TsError *err);

TsSession  *ts_session_begin(TsStore *store, uint64_t *session_id, TsError *err);
/* Check the session's updates and deletes against snapshot (it takes a reference). */
void		ts_session_set_snapshot(TsSession *session, TsSnapshot *snapshot);

/*
 * Who began the session (Begin's client_*), and the namespace of the
 * credential it began under (scope of scope_len bytes; NULL: full access):
 * what the list of open sessions shows, and to whom.  0, or -1 (no memory).
 */
int			ts_session_set_client(TsSession *session, uint64_t system, uint32_t database,
								  uint32_t pid, const char *scope, size_t scope_len);

/*
 * The open sessions (begun, not yet preparing nor ended) that a connection
 * of namespace scope may see (NULL: full access, all of them), into a
 * malloc'd array *out of SessionInfo messages whose strings are constants;
 * their count, or -1 (no memory).
 */
ssize_t		ts_sessions_list(TsStore *store, const char *scope, size_t scope_len,
							 Tcopy__SessionInfo **out);

/*
 * What the session's prepare or commit asks, while it waits for an
 * in-doubt prepared session (ts_session_prepare_gid), whether to stop:
 * give_up(arg) true when the client or the server is going away.
 */
void		ts_session_set_give_up(TsSession *session, bool (*give_up) (void *arg), void *arg);

/* The key a scan names the session by, with its id (BEGIN_OK). */
const uint8_t *ts_session_key(const TsSession *session, size_t *len);

/*
 * Validate every row of batch against its table's schema and stage them
 * all, or none (ERROR_BAD_ROW, ERROR_UNKNOWN_TABLE, ERROR_STORAGE).
 * layout: the schema the client opened the table with (its rows are laid
 * out so), or NULL for the table's now; any that OPEN_TABLE matched with
 * the table's stores records every later schema reads (ts_codec.h).  The
 * batch's memory may be reused as soon as this returns.
 */
int			ts_session_write(TsSession *session, const Tcopy__WriteBatch *batch,
							 const TsLayout *layout, TsError *err);

/*
 * Streams of the session (ts_streams.c, docs/protocol.md#streams): open it
 * to streams that JOIN it, and close them, checking that chunks
 * 1 .. chunks and rows rows in all were staged (waiting, while some
 * stream is joined and none failed, for the chunks to end in turn, unless
 * give_up(arg) says the client or the server is going away).  The session's own
 * connection writes nothing while they are open.  scope: the namespace of
 * the session's credential (NULL: full access): only a connection of the
 * same namespace, or of full access, may join.  0, or -1 with err (a
 * failed stream's error, at the close).
 */
int			ts_session_streams_open(TsSession *session, const char *scope, TsError *err);
int			ts_session_streams_close(TsSession *session, uint64_t chunks, uint64_t rows,
									 bool (*give_up) (void *arg), void *arg, TsError *err);

/*
 * No stream sends chunks first .. through of the session (they have no
 * rows for it): their turns pass once chunk first - 1 has ended.  With
 * last, the input ends with chunk through (first may then be through + 1:
 * nothing is skipped).  Skips come in increasing order, each after the
 * one before.  0, or -1 with err.
 */
int			ts_session_streams_skip(TsSession *session, uint64_t first, uint64_t through,
									bool last, TsError *err);

/*
 * End the session's streams without a check, if open (an abort, or a
 * rollback to a savepoint): what they send from now on fails.
 */
void		ts_session_streams_end(TsSession *session);

/*
 * A connection that joined an open session's streams: it sends chunks of
 * batches (ts_stream_chunk with end false, ts_stream_encode and
 * ts_stream_stage for each batch, ts_stream_chunk
 * with end true), which the session stages in chunk order, waiting for
 * the chunk's turn; *rows: the session's rows after the batch or chunk.  A stream
 * that leaves in the middle of a chunk fails the session's streams.  The
 * end of a chunk that is the input's last (last) drops the chunks after it.
 */
TsStream   *ts_stream_join(TsStore *store, uint64_t session_id, const uint8_t *key,
						   size_t keylen, const char *scope, TsError *err);
int			ts_stream_chunk(TsStream *stream, uint64_t chunk, bool end, bool last,
							uint64_t *rows, TsError *err);
/*
 * A stream's batch: ts_stream_encode checks and encodes it (the batch may
 * be freed after) as laid out by layout (the schema the stream's
 * connection opened the table with; NULL: the table's now),
 * ts_stream_stage then stages it in its chunk's turn; after a successful
 * encode the stage must follow.
 */
int			ts_stream_encode(TsStream *stream, const Tcopy__WriteBatch *batch,
							 const TsLayout *layout, TsError *err);
int			ts_stream_stage(TsStream *stream, uint64_t *rows, TsError *err);
void		ts_stream_leave(TsStream *stream);

/* Rows staged so far (for Ack). */
uint64_t	ts_session_rows(const TsSession *session);

/* The bytes the session holds, staged and spilled (its owner's thread). */
uint64_t	ts_session_bytes(const TsSession *session);

/*
 * Stage a TRUNCATE or DROP of a table in the session, applied when it is
 * published: a TRUNCATE before the session's rows (the rows of the table
 * the session staged before it are discarded at once), a DROP after them
 * (and no rows are taken for the table after it).
 */
int			ts_session_table_op(TsSession *session, Tcopy__TableOpKind op,
								uint32_t table_id, TsError *err);

/*
 * Set what the session does with its rows of table_id of equal keys
 * (docs/storage.md, Duplicate keys): before its first row of the table
 * (ERROR_PROTOCOL after), once per policy; nothing for a keyless table.
 */
int			ts_session_set_on_conflict(TsSession *session, uint32_t table_id,
									   Tcopy__OnConflict policy, TsError *err);

/*
 * The tables whose names begin with prefix and that scope (NULL: full
 * access) allows into reply, drawn from arena.  0, or -1 with err.
 */
int			ts_store_list_tables(TsStore *store, const char *prefix, const char *scope,
								 size_t scope_len, TcArena *arena, Tcopy__TableList *reply,
								 TsError *err);

/*
 * Do everything of a commit but publishing: spill, merge the runs and write
 * the SST files, so that ts_session_commit has only the atomic publish
 * left.  Nothing is visible yet; after it the session takes no more writes.
 */
int			ts_session_prepare(TsSession *session, TsError *err);

/*
 * The first phase of a two-phase commit: ts_session_prepare, then record
 * the session durably under gid (1 .. TS_GID_MAX bytes, not prepared
 * already: ERROR_PROTOCOL), owned by connection owner (of scope: its
 * namespace, NULL for full access), and free the session, whose files stay
 * in its staging directory.  Always frees the session: on failure, nothing
 * is prepared.
 *
 * Held back behind an in-doubt session (docs/commit.md): while a prepared
 * session that no live connection will resolve (restored at startup, or
 * its connection ended) writes to, truncates or drops a table this one
 * writes to or truncates, this waits for it to be resolved, up to the
 * store's in_doubt_wait_ms, then fails with ERROR_SERIALIZATION (its
 * table in err->table_id); before the slow steps of the prepare, and
 * once more after them.  The same holds for ts_session_commit.
 */
int			ts_session_prepare_gid(TsSession *session, const char *gid,
								   uint64_t owner, const char *scope,
								   uint64_t *rows, TsError *err);

/*
 * Publish everything the session staged (preparing it first if needed),
 * durably and at once, then free the session (also on failure, which
 * publishes nothing).  A table the session wrote to that was dropped
 * since fails it (ERROR_UNKNOWN_TABLE).  Not crash-atomic in one case: a
 * spilled session with staged table operations publishes in steps, and a
 * crash between them leaves the first (its truncates, or its truncates and
 * rows) without the rest; prepare such a session to publish it atomically.
 */
int			ts_session_commit(TsSession *session, uint64_t *rows, TsError *err);

/* Discard everything the session staged and free it. */
void		ts_session_abort(TsSession *session);

/*
 * The encoded key range [*lo, *hi) of table within the bounds (NULL: none;
 * *hi empty: no upper bound), *empty when it holds no key: 0, or -1 with
 * err (ERROR_PROTOCOL: bounds that are not of a prefix of the key).
 */
int			ts_scan_key_range(const TsTable *table, const Tcopy__KeyBound *lower,
							  const Tcopy__KeyBound *upper, TcBuf *lo, TcBuf *hi,
							  bool *empty, TsError *err);

/*
 * in ts_split.c: up to max_parts - 1 keys that cut table's stored keys in
 * [lower, upper) (encoded keys; upper empty: no bound) into parts of about
 * equal size, ascending, strictly inside the range, malloc'ed into *keys
 * (free each with tc_buf_free, then the array): 0, or -1 with err.  No key:
 * one part.
 */
int			ts_scan_split(TsStore *store, const TsTable *table, const TcBuf *lower,
						  const TcBuf *upper, uint32_t max_parts, TcBuf **keys,
						  size_t *nkeys, TsError *err);

/*
 * Start a scan of committed rows (a consistent snapshot).  The request's
 * filter is checked here (ERROR_PROTOCOL) and read in place afterwards:
 * the request must outlive the scan.
 */
TsScan	   *ts_scan_open(TsStore *store, const Tcopy__Scan *request, TsError *err);

/*
 * Fill batch with the next rows (at most the request's batch_rows), their
 * memory taken from arena; batch->done is set with the last batch.  Rows
 * the filter removes count toward neither batch_rows nor the limit; a
 * batch may come back empty, not done, after the filter removed many.
 * Packed rows (Scan.packed) stay in the scan's memory until the next call,
 * with TC_FRAME_PACKED_HEADROOM and TC_FRAME_PACKED_TAILROOM bytes around
 * them that the caller may write over (tc_frame_around_packed).
 */
int			ts_scan_next(TsScan *scan, TcArena *arena, Tcopy__ScanBatch *batch,
						 TsError *err);
void		ts_scan_close(TsScan *scan);

/*
 * SPLIT (docs/scans.md, "Parallel scans"): the keys cutting the key range
 * of request->table_id between its bounds into up to max_parts parts (none:
 * one part), for Scan.raw_lower and raw_upper; *keys malloc'ed, each key
 * freed with tc_buf_free.  0, or -1 with err.
 */
int			ts_store_split(TsStore *store, const Tcopy__Split *request, TcBuf **keys,
						   size_t *nkeys, TsError *err);

/*
 * The scan's next row, decoded into (*values)[ncolumns]: the columns the
 * scan reads (its projection, every column without one; or its
 * aggregates' and groups'; and its filter's), the others unset.  Valid
 * until the next call (bytes point into the scan's memory): 1, 0 at the
 * end, -1 with err.  Not to be mixed with ts_scan_next, nor used with a
 * filter (a direct modify has none).
 */
int			ts_scan_next_values(TsScan *scan, const TsValue **values, TsError *err);

/*
 * Take back the session's rows after its first rows_mark, when they are
 * all still staged in memory: *done, or not and why in reason[size]
 * (the session then unchanged).  -1 with err for a mark past its rows.
 */
int			ts_session_rollback_to(TsSession *session, uint64_t rows_mark, bool *done,
								   char *reason, size_t size, TsError *err);

/*
 * MODIFY (docs/protocol.md#direct-modify): update or delete the rows of
 * request->table_id in its key range as the session reads them, staged
 * in the session as WRITE_UPDATE or WRITE_DELETE batches; *changed: how
 * many.  0, or -1 with err (the session is then to be aborted).
 */
int			ts_session_modify(TsSession *session, const Tcopy__Modify *request,
							  uint64_t *changed, TsError *err);

#endif							/* TS_STORE_H */
