/*
 * tc_client.h
 *		Client library for the tserver's wire protocol (plain C, no Postgres
 *		headers): used by the extension, tserver-cli and the tests.
 *
 * A TcClient is one connection.  Its socket is non-blocking; whenever the
 * library must wait it calls the wait hook, which by default polls, and
 * which the extension replaces with one that waits on its latch so that a
 * COPY can be cancelled while waiting.  Write batches are pipelined: up to
 * `window` packed batches are in flight; a write waits only when the
 * window is full.  Sending copies a batch into the socket, so the caller
 * may reuse its memory as soon as tc_client_write returns.
 *
 * Every call returns 0 on success and -1 on failure, with the reason in
 * tc_client_error() and, when the server sent an Error frame, its code in
 * tc_client_error_code().  After a failure the connection is unusable
 * (the server closes it after any error) and must be closed.
 */
#ifndef TC_CLIENT_H
#define TC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_tls.h"
#include "tcopy.pb-c.h"

/*
 * Defaults and limits of a client's writes, for every client (the
 * extension's GUCs and options, tserver-cli): kept as plain numbers so
 * that usage texts can print them.
 */
#define TC_CLIENT_WINDOW_DEFAULT 4	/* write batches in flight */
#define TC_CLIENT_WINDOW_MAX 1024
#define TC_GID_MAX 200			/* bytes of a prepared session's global id */
#define TC_BATCH_ROWS_DEFAULT 1000	/* rows a write batch closes after */
#define TC_BATCH_ROWS_MAX 1000000
#define TC_BATCH_KB_DEFAULT 1024	/* KB of row data a write batch closes after */
#define TC_BATCH_KB_MAX 32768	/* half of TC_FRAME_MAX_DEFAULT: a batch
									 * closes after passing it */

typedef struct TcClient TcClient;

/*
 * Wait until fd is readable (want_write false) or writable (true); fd -1:
 * nothing to wait on (connecting to a unix socket whose backlog is full),
 * pause for at most TC_CLIENT_PAUSE_MS before the call tries again.
 * Return 0 to go on, -1 to give up: the call in progress then fails with
 * the message the hook left through tc_client_set_error (or "wait
 * abandoned").
 */
typedef int (*TcWaitHook) (void *arg, TcClient *client, int fd, bool want_write);

/* Longest pause of a wait hook called with fd -1, in milliseconds. */
#define TC_CLIENT_PAUSE_MS 10

/*
 * A replica group's members (an address "A,B,..."): tried in turn until one
 * leads, a round every TC_CLIENT_GROUP_ROUND_MS, for TC_CLIENT_GROUP_WAIT_MS
 * at most (an election takes a second or two).
 */
#define TC_CLIENT_GROUP_ROUND_MS 200
#define TC_CLIENT_GROUP_WAIT_MS 15000
#define TC_CLIENT_GROUP_MEMBER_MS 3000	/* a member's connect and handshake */

/*
 * Connect to address ("unix:PATH" or "tcp:HOST:PORT", or a replica group's
 * members, comma-separated: the one that leads), over tcp: do the
 * TLS handshake tls asks for (NULL: the defaults, sslmode
 * TC_SSLMODE_DEFAULT; unix: never uses TLS), exchange hellos and wait for
 * READY.  With a token (else NULL), authenticate mutually (tc_auth.h):
 * prove the token, and fail unless the server proves it knows it too,
 * before anything else is sent.  NULL on failure with the reason in err
 * (tc_client_error_code ERROR_AUTH for an authentication failure).
 */
TcClient   *tc_client_connect(const char *address, const char *token,
							  const TcTlsOptions *tls, const char *client_name,
							  char *err, size_t errlen);

/*
 * tc_client_connect with every wait of the connect and handshake going
 * through hook.  *clientp is set before the first wait, so that a caller
 * whose hook may not return (a Postgres ERROR on cancel) can close the
 * half-open client; it is NULL again when this returns -1, with the
 * server's error code (ERROR_AUTH also for a server that failed to prove
 * the token, ERROR_NONE for a local failure) in *codep unless it is NULL.
 */
/* Set the largest frame payload the client accepts (TC_FRAME_MAX_DEFAULT). */
void		tc_client_set_max_frame(TcClient *client, uint32_t max_frame);

int			tc_client_connect_hooked(const char *address, const char *token,
									 const TcTlsOptions *tls,
									 const char *client_name, TcWaitHook hook,
									 void *arg, TcClient **clientp,
									 Tcopy__ErrorCode *codep,
									 char *err, size_t errlen);
void		tc_client_close(TcClient *client);

void		tc_client_set_wait_hook(TcClient *client, TcWaitHook hook, void *arg);
/*
 * Batches in flight before tc_client_write waits for an ack
 * (TC_CLIENT_WINDOW_DEFAULT).
 */
void		tc_client_set_window(TcClient *client, unsigned window);

const char *tc_client_error(const TcClient *client);
Tcopy__ErrorCode tc_client_error_code(const TcClient *client);
/* The table of the last ERROR_DUPLICATE_KEY or ERROR_SERIALIZATION, 0 otherwise. */
uint32_t	tc_client_error_table_id(const TcClient *client);
/*
 * The server's Error frame the last call failed with (for its other
 * fields: a duplicate's row), valid until the client is closed; NULL when
 * the failure was not the server's.
 */
const Tcopy__Error *tc_client_error_frame(const TcClient *client);
/* For wait hooks: set the message the failing call reports. */
void		tc_client_set_error(TcClient *client, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
/* "TLSv1.3 TLS_AES_256_GCM_SHA384", or "" without TLS. */
void		tc_client_tls_describe(const TcClient *client, char *out, size_t outlen);

/* The server's ServerHello.server string. */
const char *tc_client_server_name(const TcClient *client);

/*
 * Open (with create, make) a table.  schema may be NULL to open whatever is
 * stored; otherwise it must match the stored schema, which it replaces when
 * it only adds forms or renames types (docs/protocol.md#requests-and-states).
 * *schema_out, when asked for, is the stored schema, to be freed with
 * tcopy__schema__free_unpacked(s, NULL).
 */
int			tc_client_open_table(TcClient *client, const char *name,
								 const Tcopy__Schema *schema, bool create,
								 uint32_t *table_id, bool *created,
								 Tcopy__Schema **schema_out);

/*
 * Open table name for reading (create false) as tc_client_open_table does,
 * once per connection: a name and schema opened on this connection before
 * give the id it gave then, without a round trip (*cached).  Ids are never
 * reused, so a cached id of a table dropped since fails the request that
 * names it (ERROR_UNKNOWN_TABLE): open it again on a new connection.
 */
int			tc_client_open_table_cached(TcClient *client, const char *name,
										const Tcopy__Schema *schema, uint32_t *table_id,
										bool *cached);

int			tc_client_begin(TcClient *client, uint64_t *session_id);

/*
 * The round trips this process made: reads that waited for the answer to
 * a request sent since the last such read (requests sent together, or
 * behind batches in flight, make one).
 */
uint64_t	tc_client_round_trips(void);

/*
 * For a wait hook that keeps what it waits with across waits (an epoll
 * set): whether client's handshake is done (its socket will not change
 * any more), and how many sockets tc_client_close has closed in this
 * process (an fd number seen before may be another socket's since).
 */
bool		tc_client_ready(const TcClient *client);
uint64_t	tc_client_closes(void);

/*
 * Who this client's sessions are begun for (Begin's client_*: a Postgres
 * cluster's system identifier, a database's oid, a backend's pid), which
 * the tserver shows in its list of open sessions.
 */
void		tc_client_set_identity(TcClient *client, uint64_t system, uint32_t database,
								   uint32_t pid);
/*
 * Begin a session whose updates and deletes the tserver checks against a
 * snapshot (tc_client_snapshot's id and key): a row whose committed value
 * changed since fails the batch with ERROR_CONCURRENT_UPDATE.
 */
int			tc_client_begin_at(TcClient *client, uint64_t snapshot_id,
							   const uint8_t *snapshot_key, size_t snapshot_keylen,
							   uint64_t *session_id);

/*
 * Begin a session as tc_client_begin_at does, without waiting for the
 * answer: the next call that reads takes it first (and fails with the
 * tserver's error for the BEGIN, if it failed), so that the session's
 * first request goes out in the same round trip.  0, or -1 when the send
 * failed.  A cached connection should pass tc_client_idle_ok first: a
 * dead one is then noticed before anything is sent.
 */
int			tc_client_begin_deferred(TcClient *client, uint64_t snapshot_id,
									 const uint8_t *snapshot_key, size_t snapshot_keylen);

/*
 * Wait for the answers owed to requests sent without waiting for them (a
 * deferred BEGIN, a session's on_conflict).  0, or -1 with the error.
 */
int			tc_client_settle(TcClient *client);

/*
 * Whether an idle connection still looks usable, without a round trip:
 * false when the tserver closed it, sent something unasked (an Error
 * before closing: an idle timeout, a shutdown), or a call left it busy or
 * broken.
 */
bool		tc_client_idle_ok(TcClient *client);

/*
 * Take a snapshot of the committed rows, held by the tserver until this
 * connection closes or takes another (docs/snapshots.md): its id, and its
 * key into key[TC_SNAPSHOT_KEY_MAX] (*keylen bytes); with prepared_prefix
 * (NULL: none), the gids starting with it of the sessions prepared and not
 * yet published when it was taken, in *prepared[*nprepared], valid until
 * the next call on client.
 */
#define TC_SNAPSHOT_KEY_MAX 16
int			tc_client_snapshot(TcClient *client, const char *prepared_prefix,
							   uint64_t *snapshot_id, uint8_t *key, size_t *keylen,
							   char ***prepared, size_t *nprepared);

/*
 * Update or delete rows in the session on the tserver (a direct modify,
 * docs/protocol.md#direct-modify), as the session's next batch: waits for
 * the acks of the batches in flight, then for the answer.  *changed: the
 * rows updated or deleted.
 */
int			tc_client_modify(TcClient *client, Tcopy__Modify *request, uint64_t *changed);

/*
 * Take back the session's batches after last_seq (rows: the session's rows
 * then), as a savepoint's rollback: *done, or not and why (reason[size]);
 * the session stays open either way.  -1 when the call failed.
 */
int			tc_client_rollback_to(TcClient *client, uint64_t last_seq, uint64_t rows,
								  bool *done, char *reason, size_t size);

/*
 * The id and key of the session begun last, which a Scan names to read its
 * writes: 0, or -1 when the tserver gave no key.
 */
int			tc_client_session(TcClient *client, uint64_t *session_id,
							  const uint8_t **key, size_t *keylen);

/*
 * Send one write batch: payload is a packed Tcopy__WriteBatch whose seq is
 * seq (1, 2, ... in the session).  Returns once the frame is written, having
 * first waited while `window` batches were unacknowledged.
 */
int			tc_client_write(TcClient *client, uint64_t seq,
							const uint8_t *payload, size_t len);

/* Convenience: pack batch (batch->seq set by the caller) and send it. */
int			tc_client_write_batch(TcClient *client, const Tcopy__WriteBatch *batch);

/*
 * Streams of a write session (docs/protocol.md#streams).  The session's
 * connection opens it to streams (after its acks), then sends nothing but
 * skips (tc_client_skip_chunks: chunks first .. through no stream sends;
 * last: the input ends with through; no answer) and the close, which
 * waits for the chunks sent to be staged, names them (1 .. chunks) and the session's
 * rows then (its own and the streams'), and gives the rows the session
 * received.  Another connection joins it with the session's id and key
 * (tc_client_session's) and sends chunks: tc_client_chunk(chunk, false),
 * its batches with tc_client_write (seq 1, 2, ... on the stream), then
 * tc_client_chunk(chunk, true), which takes the stream's next seq and is
 * acknowledged as a batch is (tc_client_wait_acks covers it).  A chunk's
 * start has no answer: a failure shows in the next call that reads one.
 * An end with last set ends the input: later chunks are dropped.
 */
int			tc_client_streams_open(TcClient *client);
int			tc_client_streams_close(TcClient *client, uint64_t chunks, uint64_t rows,
									uint64_t *session_rows);
int			tc_client_join(TcClient *client, uint64_t session_id, const uint8_t *key,
						   size_t keylen);
int			tc_client_chunk(TcClient *client, uint64_t chunk, bool end, bool last);
int			tc_client_skip_chunks(TcClient *client, uint64_t first, uint64_t through,
								  bool last);

/* Wait until every batch sent has been acknowledged. */
int			tc_client_wait_acks(TcClient *client);

/*
 * Commit the session: wait for all acks, send Commit with the last seq sent
 * and rows_sent, wait for CommitOk (the session is durable once this
 * returns 0).  *rows_committed may be NULL.
 */
int			tc_client_commit(TcClient *client, uint64_t rows_sent,
							 uint64_t *rows_committed);
/*
 * Prepare the session for a two-phase commit under gid (at most
 * TC_GID_MAX bytes): wait for all acks, then have the tserver do
 * everything of the commit but publishing and record the session durably.
 * Nothing is visible yet; only tc_client_resolve, on this connection or
 * another, publishes or discards it, even after this connection closed or
 * the tserver restarted.
 */
int			tc_client_prepare(TcClient *client, uint64_t rows_sent, const char *gid);

/*
 * tc_client_prepare in two steps, so that several tservers prepare at once:
 * send the PREPARE (behind the batches in flight), then wait for their acks
 * and its answer.
 */
int			tc_client_prepare_send(TcClient *client, uint64_t rows_sent, const char *gid);
int			tc_client_prepare_wait(TcClient *client);

/*
 * Publish (commit) or discard the session prepared under gid: this
 * connection's own, or an orphaned one.  *outcome says what happened
 * (RESOLVE_DONE, or RESOLVE_NOT_FOUND when nothing is prepared under gid,
 * or RESOLVE_BUSY when another live connection owns it); *rows, when
 * asked for, the session's rows.  Returns -1 only when the call itself
 * failed: the outcome is then unknown.
 */
int			tc_client_resolve(TcClient *client, const char *gid, bool commit,
							  Tcopy__ResolveOutcome *outcome, uint64_t *rows);

/* tc_client_resolve in two steps: send the RESOLVE, then wait for its answer. */
int			tc_client_resolve_send(TcClient *client, const char *gid, bool commit);
int			tc_client_resolve_wait(TcClient *client, Tcopy__ResolveOutcome *outcome,
								   uint64_t *rows);

/*
 * The prepared sessions whose gid starts with gid_prefix; *list freed with
 * tcopy__prepared_list__free_unpacked(list, NULL).
 */
int			tc_client_list_prepared(TcClient *client, const char *gid_prefix,
									Tcopy__PreparedList **list);

/*
 * Back the tserver up into dir, an absolute path on the tserver's machine
 * that does not exist yet (docs/storage.md#backups); full access only.
 * *ok, what the backup holds, freed with tcopy__backup_ok__free_unpacked.
 */
int			tc_client_backup(TcClient *client, const char *dir, Tcopy__BackupOk **ok);

/*
 * A replica group's membership, asked of its leader (full access only):
 * change (GROUP_STATUS: none) member id (at address, to add it), then
 * *status, freed with tcopy__group_status__free_unpacked.
 */
int			tc_client_group(TcClient *client, Tcopy__GroupChange change, uint64_t id,
							const char *address, Tcopy__GroupStatus **status);

int			tc_client_abort(TcClient *client);

/* Truncate or drop a table at once, outside any session. */
int			tc_client_table_op(TcClient *client, Tcopy__TableOpKind op,
							   uint32_t table_id);

/*
 * Truncate or drop a table as part of the open write session: applied when
 * the session is published, with its rows, and not at all when it is not.
 */
int			tc_client_session_table_op(TcClient *client, Tcopy__TableOpKind op,
									   uint32_t table_id);

/*
 * Set what the open write session does with rows of table_id whose keys are
 * equal, before its first row of the table (docs/storage.md#duplicate-keys).
 * Sent once every batch in flight is acknowledged, without waiting for
 * its answer (see tc_client_begin_deferred).
 */
int			tc_client_session_on_conflict(TcClient *client, uint32_t table_id,
										  Tcopy__OnConflict on_conflict);

/*
 * Load labels (docs/protocol.md#load-labels).  A label has 1 to
 * TC_LABEL_MAX bytes.  The answer of a label operation: its state, and
 * when it was published (LABEL_PUBLISHED) or which prepared session holds
 * it (LABEL_PREPARED).
 */
#define TC_LABEL_MAX 1024

typedef struct TcLabelAnswer
{
	Tcopy__LabelState state;
	uint64_t	published_at_ms;	/* Unix time in milliseconds */
	char		holder_gid[TC_GID_MAX + 1];
} TcLabelAnswer;

/*
 * Claim label for the open session on table_id: LABEL_CLAIMED means the
 * session publishes it with its rows; any other state stages nothing.
 */
int			tc_client_session_claim_label(TcClient *client, uint32_t table_id,
										  const char *label, TcLabelAnswer *answer);

/* Forget a published label at once: LABEL_PUBLISHED if it was, else LABEL_NONE. */
int			tc_client_forget_label(TcClient *client, uint32_t table_id,
								   const char *label, TcLabelAnswer *answer);

/*
 * The labels published for table_id; *list freed with
 * tcopy__label_list__free_unpacked(list, NULL).
 */
int			tc_client_list_labels(TcClient *client, uint32_t table_id,
								  Tcopy__LabelList **list);

/*
 * The tables the connection may name whose names begin with prefix (NULL
 * or "": all); *list freed with tcopy__table_list__free_unpacked(list, NULL).
 */
int			tc_client_list_tables(TcClient *client, const char *prefix,
								  Tcopy__TableList **list);

/*
 * The server's counters, with table_id's estimate and its files by level
 * (0: no table), and with sessions, the open sessions this client's
 * credential may see; *stats freed with tcopy__stats__free_unpacked(stats,
 * NULL).
 */
int			tc_client_stats_request(TcClient *client, uint32_t table_id, bool sessions,
									Tcopy__Stats **stats);

/*
 * The server's estimate of the rows and stored bytes of table_id (opened on
 * this client): 0, 1 when the server gives none (it predates estimates),
 * -1 on failure.
 */
int			tc_client_table_estimate(TcClient *client, uint32_t table_id,
									 uint64_t *rows, uint64_t *bytes);

/*
 * The keys that cut the key range of request->table_id (opened on this
 * client) into up to request->max_parts parts of about the same size, for
 * the Scan.raw_lower and raw_upper of a parallel scan's parts; *ok freed
 * with tcopy__split_ok__free_unpacked(ok, NULL).
 */
int			tc_client_split(TcClient *client, const Tcopy__Split *request,
							Tcopy__SplitOk **ok);

/*
 * Start a scan, then call tc_client_scan_next until (*batch)->done.  Each
 * batch stays valid until the next call on this client.
 */
int			tc_client_scan_start(TcClient *client, const Tcopy__Scan *request);
int			tc_client_scan_next(TcClient *client, Tcopy__ScanBatch **batch);

/* For tests: write raw bytes, then read one frame (type and payload). */
int			tc_client_send_raw(TcClient *client, const void *bytes, size_t len);
int			tc_client_read_frame(TcClient *client, Tcopy__FrameType *type,
								 const uint8_t **payload, uint32_t *len);

#endif							/* TC_CLIENT_H */
