/*
 * tcopy/transaction.h
 *		The transaction layer (src/ext/transaction/): write sessions that
 *		commit and abort with the transaction in two phases (xact.c,
 *		xact_commit.c), or with COMMIT and ROLLBACK PREPARED
 *		(xact_prepared.c), the DROPs staged at pre-commit (xact_drop.c), rows
 *		to batches to a session (writer.c), the records of prepared
 *		sessions and their recovery (records.c, recovery.c,
 *		recovery_worker.c), the COPY lines of a session's rows
 *		(row_lines.c), a session's errors that need the codec to word
 *		(session_errors.c), and the tables truncated in the transaction
 *		(truncated.c).  Below it: the connection, codec and catalog layers.
 */
#ifndef TCOPY_TRANSACTION_H
#define TCOPY_TRANSACTION_H

#include "postgres.h"

#include "access/transam.h"
#include "storage/itemptr.h"
#include "utils/hsearch.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"

/* settings (registered in tcopy.c) */
extern int	tcopy_encoder;		/* tcopy.encoder */
extern int	tcopy_alloc_mode;	/* tcopy.alloc_mode */
extern int	tcopy_window;		/* tcopy.batches_in_flight ("window" is an SQL keyword) */
extern int	tcopy_recovery_interval;	/* tcopy.recovery_interval, ms; 0: off */
extern int	tcopy_test_pause_point;	/* TcopyPausePoint */
extern int	tcopy_test_pause_ms;	/* how long a pause lasts; 0: until killed */

/* tcopy.test_pause_at: where a commit stops for the crash tests */
typedef enum TcopyPausePoint
{
	TCOPY_PAUSE_NONE,
	TCOPY_PAUSE_AFTER_PREPARE,	/* pre-commit, after the records */
	TCOPY_PAUSE_BEFORE_PUBLISH	/* commit, after the commit record */
} TcopyPausePoint;

/* in row_lines.c (TcopyLineRun is connection.h's) */

/* Forget the session's lines: a session begins. */
extern void tcopy_lines_reset(TcopyConnection *conn);
/*
 * Before a batch of relname's nrows rows is sent: its runs (rows 0-based in
 * the batch), or NULL when they are not known.
 */
extern void tcopy_lines_add_batch(TcopyConnection *conn, const char *relname,
								  const TcopyLineRun *runs, int nruns, uint64 nrows);
/* The COPY and line of the session's row (1-based); false when not known. */
extern bool tcopy_lines_find(const TcopyConnection *conn, uint64 row,
							 const char **relname, uint64 *line);

/* in session_errors.c: a write session's failures the codec words */

/*
 * A call on conn's client, in a write session, failed: close it and raise
 * the failure, a duplicate key as Postgres' unique_violation.
 */
extern void tcopy_session_fail(TcopyConnection *conn,
							   const char *what) pg_attribute_noreturn();
/* The line of the duplicate key conn's client failed on; 0: none known. */
extern uint64 tcopy_session_failure_line(TcopyConnection *conn);

/* in records.c: prepared sessions' global ids and their records */

/* One record, as read with one snapshot. */
typedef struct TcopyRecord
{
	char		gid[TC_GID_MAX + 1];	/* hash key */
	Oid			server_id;
	Oid			user_id;
	ItemPointerData tid;
	bool		deleted;		/* deleted by this recovery */
} TcopyRecord;

/* The prefix of every gid of this database: tcopy:<sysid>:<database oid>: */
extern void tcopy_gid_prefix(char *buf, size_t len);
/* The gid of the session of transaction fxid on serverid for userid. */
extern void tcopy_gid_make(char *buf, size_t len, FullTransactionId fxid,
						   Oid serverid, Oid userid);
/* The xid and the user of a gid of this database; false: not one of tcopy's. */
extern bool tcopy_gid_parse(const char *gid, FullTransactionId *fxid, Oid *userid);
/* tcopy.prepared_session_records; an ERROR when missing unless missing_ok. */
extern Oid	tcopy_records_relid(bool missing_ok);
/* Record a prepared session in the current transaction. */
extern void tcopy_records_insert(Relation rel, const char *gid, Oid serverid,
								 Oid userid, FullTransactionId fxid);
/* The records visible to a snapshot taken now, by gid (TcopyRecord). */
extern HTAB *tcopy_records_read_now(Relation rel);
/* ... with a dirty snapshot: in-progress and prepared transactions' too. */
extern HTAB *tcopy_records_read_uncommitted(Relation rel);
/* Delete the record of gid in records (as read before), if any. */
extern void tcopy_records_forget(Relation rel, HTAB *records, const char *gid);

/* in recovery.c: resolving the prepared sessions nobody finished */

/* How long a resolve (or recovery's other calls) waits for a tserver. */
#define TCOPY_RESOLVE_TIMEOUT_MS	30000

/* Resolve the database's prepared sessions nobody finished; how many. */
extern int	tcopy_recover_database(int elevel);

/*
 * in xact_prepared.c: COMMIT PREPARED and ROLLBACK PREPARED of a
 * transaction whose sessions PREPARE TRANSACTION prepared (xact_commit.c)
 */

/*
 * Before COMMIT or ROLLBACK PREPARED gid runs: the records (TcopyRecord *)
 * of the sessions its transaction prepared; NIL when it has none, or is
 * not a prepared transaction of this database.
 */
extern List *tcopy_prepared_xact_sessions(const char *gid);
/*
 * After it ran: publish (commit) or discard those sessions, bounded, a
 * failure a WARNING (commit) or in the server log (rollback), never an
 * ERROR: what is left prepared is recovery's.
 */
extern void tcopy_finish_prepared_sessions(List *sessions, bool commit);

/* in recovery_worker.c: the background worker that runs recovery */
extern void TcopyRecoveryWorkerInit(void);

/* in xact.c: write sessions, committed and aborted with the transaction */
extern void TcopyXactInit(void);

/*
 * The field4 of tcopy's advisory-type lock tags (Postgres' advisory locks
 * use 1 and 2): + 0 a key's, + 1 a table's rows (row_locks.c), + 2 the
 * commit gate (snapshot.c).
 */
#define TCOPY_LOCK_FIELD4 0x7463	/* "tc" */

/*
 * in ssi.c: a read of a tcopy table (a scan's start) and a write (a
 * statement's first row, a COPY's start), told to Postgres' SSI at the
 * table's granularity, or of a part of it; the shared memory it keeps the
 * writers in
 */
extern void tcopy_ssi_read(Relation rel, Snapshot snapshot);
extern void tcopy_ssi_write(Relation rel);
/*
 * The same for some parts of the table only: a table of one integer key
 * column is split in TCOPY_SSI_PARTS parts by the key's hash, its part
 * tcopy_ssi_part(key); TCOPY_SSI_ALL is every part.
 */
#define TCOPY_SSI_PARTS 64
#define TCOPY_SSI_ALL (~UINT64CONST(0))
extern uint64 tcopy_ssi_part(int64 key);
extern void tcopy_ssi_read_parts(Relation rel, Snapshot snapshot, uint64 parts);
extern void tcopy_ssi_write_parts(Relation rel, uint64 parts);
extern void TcopySsiInit(void);

/*
 * in recovery.c: every tcopy server of the database, by Oid; the options of
 * some user mapping of serverid (false when it has none)
 */
extern List *tcopy_list_servers(void);
extern bool tcopy_any_user_mapping(Oid serverid, List **options);

/*
 * in snapshot.c: the transaction's snapshot on a tserver (REPEATABLE READ,
 * SERIALIZABLE); a committer's passage through the gate that snapshots
 * are taken behind, from its prepare to its publish
 */
extern bool tcopy_xact_snapshot(const TcopyTableOptions *options, uint64 *id,
								const uint8 **key, size_t *keylen);
/* READ COMMITTED too: a statement's scans of several tservers read snapshots */
extern void tcopy_statement_reads(struct EState *estate, const TcopyTableOptions *options);
extern bool tcopy_read_snapshot(struct EState *estate, const TcopyTableOptions *options,
								uint64 *id, const uint8 **key, size_t *keylen);
extern void tcopy_read_snapshot_in_doubt(struct EState *estate, const TcopyTableOptions *options);
/* ... taken even of one tserver: the one all of a parallel scan's participants read */
extern bool tcopy_read_snapshot_shared(struct EState *estate, const TcopyTableOptions *options,
									   uint64 *id, const uint8 **key, size_t *keylen);
extern void tcopy_publish_committed(const char *address, const char *token,
									const TcTlsOptions *tls);
extern void tcopy_commit_gate_enter(void);
extern void tcopy_commit_gate_leave(void);
extern List *tcopy_commit_gates_close(void);
extern void tcopy_commit_gates_open(List *dbs);
extern void TcopySnapshotInit(void);

/*
 * The cached write connection for (options->serverid, userid), connected
 * (and reconnected after a failure) as needed, with a write session begun
 * in the current transaction; the session commits and aborts with the
 * transaction.  NULL client for null:.
 */
extern TcopyConnection *tcopy_xact_write_connection(const TcopyTableOptions *options,
													Oid userid);
/* Send a packed batch; the session numbers it (seq). */
/* One table's on_conflict in a write session (xact.c). */
typedef struct TcopyTablePolicy
{
	uint32		table_id;
	TcopyOnConflict policy;
} TcopyTablePolicy;

/*
 * Set the session's on_conflict for table_id (of relname, for messages)
 * before its first rows; an ERROR if the transaction wrote to it with
 * another.
 */
extern void tcopy_xact_set_on_conflict(TcopyConnection *conn, uint32 table_id,
									   TcopyOnConflict policy, const char *relname);
extern void tcopy_xact_send(TcopyConnection *conn, TcopyBatch *batch,
							uint32 table_id, uint64 nrows);
/*
 * Whether this transaction has written rows to the tserver table of
 * options (address and table_name), whichever foreign table it wrote
 * through: reads then must fail.
 */
extern bool tcopy_xact_wrote_table(const TcopyTableOptions *options);
/* Streams of the session: a parallel COPY's workers write (xact.c) */
extern void tcopy_xact_streams_open(TcopyConnection *conn);
extern void tcopy_xact_streamed(TcopyConnection *conn, uint32 table_id, const char *relname,
								const TcopyLineRun *runs, int nruns, uint64 nrows);
extern void tcopy_xact_streams_skip(TcopyConnection *conn, uint64 first, uint64 through,
									bool last);
extern void tcopy_xact_streams_close(TcopyConnection *conn, uint64 chunks);
extern bool tcopy_xact_streams_end(TcopyConnection *conn, uint64 chunks);
extern uint64 tcopy_xact_modify(TcopyConnection *conn, Tcopy__Modify *request,
								const char *range_message);
extern bool tcopy_xact_session_to_read(const char *relname, const TcopyTableOptions *options,
									   Oid userid, uint64 *session_id, const uint8 **key,
									   size_t *keylen);
/* Stage a TRUNCATE or DROP of a table in the transaction's write session. */
extern void tcopy_xact_table_op(const TcopyTableOptions *options, Oid userid,
								bool track, Tcopy__TableOpKind op, uint32 table_id);
/* Whether this transaction staged a TRUNCATE of the tserver table of options. */
extern bool tcopy_xact_staged_op_on(const TcopyTableOptions *options);

/* A load label was claimed in conn's session: it has something to publish. */
extern void tcopy_xact_note_claim(TcopyConnection *conn);

/* in xact_drop.c: DROPs of tcopy tables, staged at pre-commit */

/* Drop the tserver's table when the transaction commits (a DROP of it). */
extern void tcopy_xact_drop_at_commit(const TcopyTableOptions *options, Oid userid,
									  bool has_mapping, const char *relname);
/* Whether the transaction drops the tserver table of options (address, name). */
extern bool tcopy_xact_drops_table(const TcopyTableOptions *options);
/* How xact.c stages a table operation: tcopy_xact_table_op's signature. */
typedef void (*TcopyTableOpFn) (const TcopyTableOptions *options, Oid userid, bool track,
								Tcopy__TableOpKind op, uint32 table_id);
/* Pre-commit: stage the pending DROPs in the write sessions through stage. */
extern void tcopy_stage_pending_drops(TcopyTableOpFn stage);
/* Whether the transaction has DROPs not yet staged. */
extern bool tcopy_xact_drops_pending(void);
/* The end of the transaction: forget its DROPs. */
extern void tcopy_xact_drops_reset(void);
/* A subtransaction ends: forget its DROPs if aborted, else pass them up. */
extern void tcopy_xact_drops_at_subxact_end(int level, bool aborted);

/* in writer.c: rows -> batches -> connection, shared by COPY and INSERT */
typedef struct TcopyWriter
{
	TcopyRelCodec *codec;
	TcopyConnection *conn;
	uint32		table_id;
	TcopyBatch	batch;
	TcopyRowBuf row;			/* the row being encoded */
	int			batch_rows;
	int			batch_bytes;

	/* COPY lines (row_lines.c): set line before each row is added */
	const char *line_relname;	/* the COPY's table, for a CONTEXT */
	uint64		line;			/* the row's COPY line; 0: none (INSERT) */
	uint64		next_line;		/* the line that goes on the batch's last run */
	TcopyLineRun *runs;			/* [nruns] the batch's, rows 0-based in it */
	int			nruns;
	int			runs_cap;
	bool		runs_lost;		/* more than TCOPY_LINE_RUNS_MAX in the batch */

	/* a partition a COPY routes rows to (copy_route.c) */
	bool		routed;			/* the COPY has seen it */
	struct TcopyFieldTarget *route_target;	/* the raw fields' target, or NULL */

	/* a parallel COPY's worker: batches go here, not to a tserver */
	void		(*sink) (struct TcopyWriter *writer);
} TcopyWriter;

/*
 * In a parallel COPY's worker: where the writers that routing opens (the
 * FDW's BeginForeignInsert) send their batches; NULL elsewhere.  Set by
 * the worker (copy_worker.c).
 */
extern void (*tcopy_parallel_sink) (TcopyWriter *writer);

extern TcopyWriter *tcopy_writer_begin(TcopyRelCodec *codec);
extern TcopyWriter *tcopy_writer_begin_detached(TcopyRelCodec *codec,
												void (*sink) (TcopyWriter *writer));
/* Send the batch built so far. */
extern void tcopy_writer_flush(TcopyWriter *writer);
/* Send a batch of rows a parallel COPY's worker encoded. */
extern void tcopy_writer_send_encoded(TcopyWriter *writer, const char *rows, size_t len,
									  uint32 nrows, const TcopyLineRun *runs, int nruns);
extern void tcopy_writer_add(TcopyWriter *writer, Datum *values, bool *nulls);
extern void tcopy_writer_set_kind(TcopyWriter *writer, Tcopy__WriteKind kind);
/* Add writer->row, filled by the caller. */
extern void tcopy_writer_add_row(TcopyWriter *writer);
/* Send what is left; the rows commit with the transaction. */
extern void tcopy_writer_finish(TcopyWriter *writer);
extern void tcopy_writer_free(TcopyWriter *writer);

/* in truncated.c: tables truncated in the transaction, for COPY FREEZE */
extern void TcopyTruncatedInit(void);
extern void tcopy_note_truncated(Oid relid);
extern bool tcopy_truncated_in_subxact(Oid relid);

#endif							/* TCOPY_TRANSACTION_H */
