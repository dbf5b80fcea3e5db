/*
 * xact_commit.c
 *		The transaction callbacks of the write sessions (xact.c's file
 *		comment says how a session follows the transaction): at pre-commit
 *		every session prepared and recorded, at commit published, at abort
 *		discarded; a subtransaction's end taken back or handed to its
 *		parent; at PREPARE TRANSACTION every session prepared and recorded
 *		as at pre-commit, then let go of (xact_prepared.c finishes them).
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tc_address.h"
#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

#include "xact_int.h"

/* settings, registered in tcopy.c */
int			tcopy_test_pause_point = TCOPY_PAUSE_NONE;	/* tcopy.test_pause_at, as a TcopyPausePoint */
int			tcopy_test_pause_ms = 0;	/* tcopy.test_pause_ms */

static void tcopy_xact_callback(XactEvent event, void *arg);
static void tcopy_resolve_send(TcopyConnection *conn, bool commit);
static void tcopy_resolve_finish(TcopyConnection *conn, bool commit);
static void tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);

/* Follow every transaction and subtransaction from now on. */
void
TcopyXactInit(void)
{
	RegisterXactCallback(tcopy_xact_callback, NULL);
	RegisterSubXactCallback(tcopy_subxact_callback, NULL);
	TcopySnapshotInit();
}

/*
 * The subtransaction at level ends with a commit: its savepoint, if any,
 * is its parent's now (unless the parent wrote before it, or is the top).
 */
static void
tcopy_subxact_commit_writes(TcopyConnection *conn, int level)
{
	TcopySavepoint *last;
	bool		parent_has = false;
	ListCell   *lc;

	if (conn->savepoints == NIL)
		return;
	last = llast(conn->savepoints);
	if (last->level != level)
		return;
	foreach(lc, conn->savepoints)
		if (((TcopySavepoint *) lfirst(lc))->level == level - 1)
			parent_has = true;
	if (parent_has || level - 1 <= 1)
	{
		conn->savepoints = list_delete_last(conn->savepoints);
		pfree(last);
	}
	else
		last->level = level - 1;
}

/*
 * The subtransaction at level is rolled back: if it wrote, take its writes
 * back when the session is next used (tcopy_xact_apply_rollback), to its
 * savepoint, or to a deeper one of a subtransaction rolled back before
 * when it wrote nothing before that one began.  Without either, the
 * session is uncommittable.
 */
static void
tcopy_subxact_abort_writes(TcopyConnection *conn, int level)
{
	TcopySavepoint *mark = NULL;

	while (conn->savepoints != NIL && ((TcopySavepoint *) llast(conn->savepoints))->level >= level)
	{
		TcopySavepoint *last = llast(conn->savepoints);

		if (last->level == level)
			mark = last;
		else
			pfree(last);
		conn->savepoints = list_delete_last(conn->savepoints);
	}
	if (conn->write_level < level)
		;						/* it wrote nothing */
	else if (mark != NULL)
	{
		conn->pending = *mark;
		conn->rollback_pending = true;
		conn->write_level = mark->write_level;
	}
	else if (conn->rollback_pending && conn->pending.level > level)
		conn->write_level = conn->pending.write_level;
	else
		conn->subxact_lost = true;
	if (mark != NULL)
		pfree(mark);
}

/*
 * Test pause point point (tcopy.test_pause_at): say so in the server log,
 * then sleep until the process is killed, or for tcopy.test_pause_ms when
 * set (a test does something to the tservers meanwhile, and the commit
 * goes on); cancellable where the caller may be cancelled.
 */
static void
tcopy_test_pause(TcopyPausePoint point, bool cancellable)
{
	TimestampTz until;

	if (tcopy_test_pause_point != point)
		return;
	ereport(LOG,
			(errmsg("tcopy: paused at %s",
					point == TCOPY_PAUSE_AFTER_PREPARE ? "after-prepare" : "before-publish")));
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), tcopy_test_pause_ms);
	while (tcopy_test_pause_ms == 0 || GetCurrentTimestamp() < until)
	{
		if (cancellable)
			CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * End a session that has nothing to commit: one of null:, or one that
 * sent nothing (a COPY of no rows).  An Abort the tserver does not answer
 * closes the connection, which ends the session all the same.
 */
static void
tcopy_end_unused_session(TcopyConnection *conn)
{
	int			rc;

	if (!conn->null_transport && conn->client != NULL)
	{
		conn->busy = true;
		rc = tc_client_abort(conn->client);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_close(conn);
	}
	conn->in_session = false;
}

/*
 * Preparing failed on conn: read the answers of the PREPAREs sent to the
 * other tservers, so that the abort discards the sessions they prepared
 * (one whose answer cannot be read is left to recovery), then fail.  When
 * several failed on duplicate keys (a COPY into partitions on several
 * tservers whose keys arrived out of order), the error raised is the one
 * of the earliest line, as a serial COPY into a heap table gives it,
 * whichever tserver answered first.
 */
static void
tcopy_prepare_failed(TcopyConnection *failed)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	uint64		failed_line = tcopy_session_failure_line(failed);

	failed->request_sent = false;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		uint64		line;

		if (conn == failed || !conn->request_sent)
			continue;
		conn->request_sent = false;
		if (tc_client_prepare_wait(conn->client) < 0)
		{
			/* busy: the abort closes the connection */
			line = tcopy_session_failure_line(conn);
			if (failed_line > 0 && line > 0 && line < failed_line)
			{
				failed = conn;
				failed_line = line;
			}
			continue;
		}
		conn->busy = false;
		conn->prepared = true;
	}
	tcopy_session_fail(failed, "could not prepare the write session");
}

/*
 * Pre-commit, or pre-prepare (PREPARE TRANSACTION: for_2pc): the first
 * phase.  Refuse first, before anything is prepared, if any session cannot
 * commit; then prepare every session that sent something, then record each
 * in tcopy.prepared_session_records.  A commit then enters the commit gate;
 * a PREPARE TRANSACTION writes no commit record, and its records become
 * part of the prepared transaction, to commit with COMMIT PREPARED.
 * Cancellable: a cancel or a failure aborts the transaction, and the abort
 * discards what was prepared.
 */
static void
tcopy_prepare_sessions(bool for_2pc)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	FullTransactionId fxid;
	Oid			records_relid;
	Relation	records;
	bool		any_to_prepare = false;

	tcopy_stage_pending_drops(tcopy_xact_table_op);
	if (tcopy_connections == NULL)
		return;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->in_session)
			continue;
		tcopy_xact_apply_rollback(conn);
		if (!conn->subxact_lost && !conn->session_lost)
			tcopy_xact_flush_truncates(conn);
		if (conn->subxact_lost)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 for_2pc ?
					 errmsg("cannot prepare a transaction whose rolled-back subtransaction wrote to a tcopy table") :
					 errmsg("cannot commit a transaction whose rolled-back subtransaction wrote to a tcopy table"),
					 errdetail("The tserver could not take back the rows the subtransaction sent.%s%s",
							   conn->lost_why[0] ? " " : "", conn->lost_why)));
		if (conn->session_lost)
			tcopy_report_session_lost(conn);
		if (!conn->null_transport && conn->sent_any)
			any_to_prepare = true;
	}

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->in_session && (conn->null_transport || !conn->sent_any))
			tcopy_end_unused_session(conn);
	}
	if (!any_to_prepare)
		return;

	/* found before anything is prepared */
	records_relid = tcopy_records_relid(false);
	fxid = GetTopFullTransactionId();

	/* every tserver prepares at once: all the PREPAREs, then the answers */
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->in_session)
			continue;
		tcopy_gid_make(conn->gid, sizeof(conn->gid), fxid,
					   conn->key.serverid, conn->key.userid);
		conn->busy = true;
		if (tc_client_prepare_send(conn->client, conn->rows_sent, conn->gid) < 0)
		{
			hash_seq_term(&scan);
			tcopy_prepare_failed(conn);
		}
		conn->request_sent = true;
	}
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->request_sent)
			continue;
		if (tc_client_prepare_wait(conn->client) < 0)
		{
			hash_seq_term(&scan);
			tcopy_prepare_failed(conn);
		}
		conn->request_sent = false;
		conn->busy = false;
		conn->prepared = true;
	}

	records = table_open(records_relid, RowExclusiveLock);
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->prepared)
			tcopy_records_insert(records, conn->gid, conn->key.serverid,
								 conn->key.userid, fxid);
	}
	table_close(records, NoLock);

	if (for_2pc)
		return;

	tcopy_test_pause(TCOPY_PAUSE_AFTER_PREPARE, true);

	/* the commit record is written inside the gate (snapshot.c) */
	tcopy_commit_gate_enter();
}

/*
 * Publish (commit) or discard conn's prepared session, waiting at most
 * TCOPY_RESOLVE_TIMEOUT_MS.  Runs after the transaction's outcome is
 * decided, so it must not raise an ERROR: a session it cannot resolve is
 * warned about (a discard in the server log only) and stays prepared, for
 * recovery.
 */
static void
tcopy_resolve_session(TcopyConnection *conn, bool commit)
{
	tcopy_set_wait_deadline(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 TCOPY_RESOLVE_TIMEOUT_MS));
	tcopy_resolve_send(conn, commit);
	tcopy_resolve_finish(conn, commit);
	tcopy_set_wait_deadline(0);
}

/*
 * tcopy_resolve_session in two steps, so that several tservers resolve at
 * once: send the RESOLVE of conn's prepared session (when the connection
 * can take it), then read its answer and warn of a failure.  The caller
 * sets the wait deadline.
 */
static void
tcopy_resolve_send(TcopyConnection *conn, bool commit)
{
	conn->prepared = false;
	conn->in_session = false;
	if (conn->client == NULL || conn->busy)
		return;
	conn->busy = true;
	conn->request_sent = tc_client_resolve_send(conn->client, conn->gid, commit) == 0;
	if (!conn->request_sent)
		conn->busy = false;
}

static void
tcopy_resolve_finish(TcopyConnection *conn, bool commit)
{
	Tcopy__ResolveOutcome outcome = TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE;
	const char *reason;
	int			rc = -1;

	if (conn->request_sent)
	{
		rc = tc_client_resolve_wait(conn->client, &outcome, NULL);
		conn->request_sent = false;
		conn->busy = false;
	}
	/* NOT_FOUND: resolved already, by recovery after a tserver restart */
	if (rc == 0 && outcome != TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
		return;

	if (rc == 0)
		reason = "another connection holds the session";
	else if (conn->client == NULL || conn->busy)
		reason = "the connection was lost";
	else
		reason = pstrdup(tc_client_error(conn->client));
	if (rc < 0)
		tcopy_connection_close(conn);
	if (commit)
		ereport(WARNING,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not publish the write session on tserver at \"%s\": %s",
						conn->address, reason),
				 errdetail("The transaction is committed; its session stays prepared under global id \"%s\", and recovery will publish it.",
						   conn->gid)));
	else

		/*
		 * In the server log only: the client has the ERROR that aborted the
		 * transaction, and a message sent after it can reach psql's screen
		 * first.
		 */
		ereport(LOG_SERVER_ONLY,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not discard the write session on tserver at \"%s\": %s",
						conn->address, reason),
				 errdetail("Its session stays prepared under global id \"%s\", and recovery will discard it.",
						   conn->gid)));
}

/*
 * Commit, after Postgres' commit record: the second phase, publishing
 * every prepared session.  Interrupts are held (CommitTransaction holds
 * them), and nothing here may raise an ERROR, which would PANIC.
 */
static void
tcopy_publish_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	bool		any_prepared = false;

	tcopy_commit_gate_leave();
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
		any_prepared |= conn->prepared;
	if (!any_prepared)
		return;

	tcopy_test_pause(TCOPY_PAUSE_BEFORE_PUBLISH, false);

	/*
	 * With synchronous_commit off the commit record may not be on disk yet:
	 * a crash would then lose the decision after the tservers published.
	 */
	XLogFlush(XactLastCommitEnd);

	/* every tserver publishes at once: all the RESOLVEs, then the answers */
	tcopy_set_wait_deadline(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 TCOPY_RESOLVE_TIMEOUT_MS));
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->prepared)
			continue;
		tcopy_resolve_send(conn, true);
		if (!conn->request_sent)
			tcopy_resolve_finish(conn, true);	/* the warning, at once */
	}
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->request_sent)
			tcopy_resolve_finish(conn, true);
	}
	tcopy_set_wait_deadline(0);
}

/*
 * PREPARE TRANSACTION is done: the transaction's sessions are prepared on
 * their tservers and its records are part of the prepared transaction.
 * Let go of them: close their connections, the tserver then keeps each
 * session prepared, held by no connection, until a RESOLVE, which the
 * backend that runs COMMIT PREPARED or ROLLBACK PREPARED sends
 * (xact_prepared.c), or recovery once the transaction ended.  The next
 * transaction of this backend connects again.  Must not raise an ERROR.
 */
static void
tcopy_detach_prepared_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->prepared || conn->busy || (conn->in_session && conn->client != NULL))
			tcopy_connection_close(conn);
	}
}

/*
 * Abort: discard the prepared sessions (bounded, warned about when it
 * fails, like the publish), and close every other connection with an open
 * session, or caught in the middle of a call: the tserver discards a
 * session that is not prepared when its connection closes, so that needs
 * no answer, and an unresponsive tserver cannot hold up a rollback.  Runs
 * with interrupts held, and must not raise an ERROR.
 */
static void
tcopy_abort_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->prepared)
			tcopy_resolve_session(conn, false);
		else if (conn->busy || (conn->in_session && conn->client != NULL))
			tcopy_connection_close(conn);
	}
}

/* The end of a transaction, whichever way it went: no session survives it. */
static void
tcopy_end_xact(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	tcopy_xact_drops_reset();	/* its memory goes with the transaction */
	if (tcopy_connections == NULL)
		return;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		/* only a failed commit or abort callback of another module gets here busy */
		if (conn->busy)
			tcopy_connection_close(conn);
		conn->in_session = false;
		conn->sent_any = false;
		conn->session_lost = false;
		conn->subxact_lost = false;
		conn->lost_why[0] = '\0';
		conn->ops_sent = 0;
		tcopy_xact_pending_truncates_end(conn, 1, true);
		list_free_deep(conn->savepoints);
		conn->savepoints = NIL;
		conn->rollback_pending = false;
		conn->prepared = false;
		conn->request_sent = false;
		conn->gid[0] = '\0';
		conn->write_level = 0;
		list_free_deep(conn->written_tables);
		conn->written_tables = NIL;
		list_free_deep(conn->op_tables);
		conn->op_tables = NIL;
		list_free_deep(conn->conflict_policies);
		conn->conflict_policies = NIL;
		tcopy_lines_reset(conn);	/* up to TCOPY_LINE_RUNS_MAX runs: not kept idle */
	}
	tcopy_set_wait_deadline(0);
}

static void
tcopy_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_COMMIT:
			tcopy_prepare_sessions(false);
			return;
		case XACT_EVENT_PRE_PREPARE:
			tcopy_prepare_sessions(true);
			return;
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_ABORT:
			if (tcopy_connections != NULL)
				tcopy_abort_sessions();
			break;
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_COMMIT:
			if (tcopy_connections != NULL)
				tcopy_publish_sessions();
			break;
		case XACT_EVENT_PREPARE:
			if (tcopy_connections != NULL)
				tcopy_detach_prepared_sessions();
			break;
	}
	tcopy_end_xact();
	tcopy_close_scan_clients(0);
}

/*
 * Subtransaction end: a committed one hands its writes and its scan
 * clients to its parent; an aborted one that sent batches makes its
 * session uncommittable, and its interrupted calls and the scan clients it
 * owns are closed.
 */
static void
tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;

	if (tcopy_connections != NULL)
	{
		hash_seq_init(&scan, tcopy_connections);
		while ((conn = hash_seq_search(&scan)) != NULL)
		{
			if (event == SUBXACT_EVENT_ABORT_SUB)
			{
				if (conn->busy)
					tcopy_connection_close(conn);
				tcopy_subxact_abort_writes(conn, level);
			}
			else
				tcopy_subxact_commit_writes(conn, level);
			tcopy_xact_pending_truncates_end(conn, level, event == SUBXACT_EVENT_ABORT_SUB);
			if (conn->write_level >= level)
				conn->write_level = level - 1;
		}
	}

	tcopy_xact_drops_at_subxact_end(level, event == SUBXACT_EVENT_ABORT_SUB);

	if (event == SUBXACT_EVENT_ABORT_SUB)
		tcopy_close_scan_clients(level);
	else
		tcopy_scan_clients_to_parent(level);
}
