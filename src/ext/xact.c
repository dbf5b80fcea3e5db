/*
 * xact.c
 *		Write sessions, and how they follow the Postgres transaction.
 *
 * The first write of a transaction on a cached write connection
 * (connection.c) begins a write session on it; every batch of the
 * transaction, whatever the table, goes into that session, numbered 1, 2,
 * ... here.  At pre-commit the session commits on the tserver (atomically:
 * all of its rows, or none, become visible), before Postgres commits, in
 * two steps: a prepare that does the slow work and can be cancelled, then
 * a short publish with interrupts held, so that a cancel cannot roll
 * Postgres back after the tserver published.  What remains is the window
 * every commit across two systems without two-phase commit has: a failure
 * after the publish and before Postgres' commit record (a crash, or an
 * error of a later pre-commit step) leaves the rows published; a
 * connection lost during the publish is reported as an unknown outcome.
 * When the transaction aborts, its sessions' connections are closed, which
 * makes the tservers discard them.
 *
 * Before a session has sent anything, losing its connection is invisible:
 * the next statement connects again; a cached connection whose tserver
 * went away in between is noticed when beginning the session, which is
 * then retried once on a new connection.  Once a session has sent batches,
 * losing it loses rows, and the transaction cannot commit.
 *
 * Rows cannot be taken back one subtransaction at a time, so a rolled-back
 * subtransaction that sent batches leaves its session uncommittable:
 * pre-commit then raises an error instead of committing rows that Postgres
 * rolled back.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy.h"

/* How long publishing a commit waits for a tserver before giving up. */
#define TCOPY_CLEANUP_TIMEOUT_MS	30000

static void tcopy_xact_callback(XactEvent event, void *arg);
static void tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);

/* Follow every transaction and subtransaction from now on. */
void
TcopyXactInit(void)
{
	RegisterXactCallback(tcopy_xact_callback, NULL);
	RegisterSubXactCallback(tcopy_subxact_callback, NULL);
}

/* A session that sent batches lost its connection: refuse to go on. */
static void
tcopy_report_session_lost(TcopyConnection *conn)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost the connection to tserver at \"%s\" in this transaction",
					conn->address),
			 errdetail("Rows this transaction wrote through it are gone; the transaction cannot commit.")));
}

/*
 * The cached write connection for the table's server and the current user,
 * connected (and reconnected after a failure) as needed, with a write
 * session begun in the current transaction.
 */
TcopyConnection *
tcopy_xact_write_connection(TcopyRelCodec *codec)
{
	TcopyConnection *conn = tcopy_connection_lookup(codec);

	if (conn->in_session && conn->session_lost)
		tcopy_report_session_lost(conn);

	if (conn->in_session)
	{
		if (conn->client != NULL)
			tc_client_set_window(conn->client, (unsigned) tcopy_window);
		return conn;
	}

	/*
	 * Begin the session.  A cached client may be dead (its tserver may have
	 * restarted since the last transaction): then retry once on a new one.
	 */
	if (!conn->null_transport)
	{
		for (;;)
		{
			bool		reused = conn->client != NULL;
			int			rc;

			if (conn->client == NULL)
				conn->client = tcopy_client_connect(conn->address, conn->token);
			tc_client_set_window(conn->client, (unsigned) tcopy_window);

			conn->busy = true;
			rc = tc_client_begin(conn->client, NULL);
			conn->busy = false;
			if (rc == 0)
				break;
			if (!reused)
				tcopy_connection_fail(conn, "could not begin a write session");
			tcopy_connection_close(conn);
		}
	}

	conn->in_session = true;
	conn->sent_any = false;
	conn->session_lost = false;
	conn->next_seq = 1;
	conn->rows_sent = 0;
	return conn;
}

/*
 * Remember that the session holds rows for table_id, at this nest level:
 * for tcopy_xact_wrote_relation (every relation bound to that table) and
 * for subtransaction aborts.
 */
static void
tcopy_xact_note_write(TcopyConnection *conn, uint32 table_id)
{
	ListCell   *lc;

	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
	foreach(lc, conn->tables)
	{
		TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);

		if (table->table_id == table_id &&
			!list_member_oid(conn->written_relids, table->relid))
		{
			MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);

			conn->written_relids = lappend_oid(conn->written_relids, table->relid);
			MemoryContextSwitchTo(oldcontext);
		}
	}
}

/*
 * Pack batch as the session's next (seq) and send it: the rows commit with
 * the transaction.
 */
void
tcopy_xact_send(TcopyConnection *conn, TcopyBatch *batch,
				uint32 table_id, uint64 nrows)
{
	if (!conn->in_session || conn->session_lost)
		elog(ERROR, "tcopy write connection has no open session");

	tcopy_batch_pack(batch, conn->next_seq, table_id);
	tcopy_xact_note_write(conn, table_id);
	if (!conn->null_transport)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_write(conn->client, conn->next_seq,
							 batch->send, batch->send_len);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_fail(conn, "could not send a write batch");
	}
	conn->next_seq++;
	conn->rows_sent += nrows;
}

/*
 * Whether this transaction has sent rows for relid: then reading or
 * truncating it must fail, as those rows are not visible before the commit.
 */
bool
tcopy_xact_wrote_relation(Oid relid)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	if (tcopy_connections == NULL)
		return false;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (list_member_oid(conn->written_relids, relid))
		{
			hash_seq_term(&scan);
			return true;
		}
	}
	return false;
}

/*
 * Pre-commit: commit every session on its tserver.  Refuse first, before
 * anything is published, if any session cannot commit; then prepare every
 * session, then publish each.  Sessions on different servers publish one
 * after the other: if a later one fails, the earlier ones stay committed.
 */
static void
tcopy_commit_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	bool		committed_any = false;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->in_session)
			continue;
		if (conn->subxact_lost)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot commit a transaction whose rolled-back subtransaction wrote to a tcopy table"),
					 errdetail("Rows sent to a tserver cannot be taken back one subtransaction at a time.")));
		if (conn->session_lost)
			tcopy_report_session_lost(conn);
	}

	/*
	 * Phase one, cancellable: every tserver does the slow part of its commit
	 * (merging, writing files) and publishes nothing.  A failure or a cancel
	 * here aborts the transaction and every session with it.
	 */
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;

		if (!conn->in_session || conn->null_transport)
			continue;
		conn->busy = true;
		rc = tc_client_prepare(conn->client, conn->rows_sent);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_fail(conn, "could not prepare the write session for commit");
	}

	/*
	 * Phase two, not cancellable: publishing is quick and atomic on each
	 * tserver.  A cancel now would roll back the Postgres transaction after
	 * a tserver had published, so interrupts are held; a tserver that does
	 * not answer within the cleanup deadline leaves the outcome unknown.
	 */
	HOLD_INTERRUPTS();
	tcopy_set_wait_deadline(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 TCOPY_CLEANUP_TIMEOUT_MS));
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;
		char	   *message;

		if (!conn->in_session)
			continue;
		if (conn->null_transport)
		{
			conn->in_session = false;
			continue;
		}
		conn->busy = true;
		rc = tc_client_commit(conn->client, conn->rows_sent, NULL);
		conn->busy = false;
		if (rc == 0)
		{
			conn->in_session = false;
			committed_any = true;
			continue;
		}
		message = pstrdup(tc_client_error(conn->client));
		tcopy_connection_close(conn);
		hash_seq_term(&scan);
		tcopy_set_wait_deadline(0);
		RESUME_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_TRANSACTION_RESOLUTION_UNKNOWN),
				 errmsg("could not learn whether tserver at \"%s\" committed the write session",
						conn->address),
				 errdetail_internal("%s", message),
				 committed_any ?
				 errhint("Rows written through other tcopy servers in this transaction are committed.") : 0));
	}
	tcopy_set_wait_deadline(0);
	RESUME_INTERRUPTS();
}

/*
 * Pre-prepare: a session cannot outlive the backend's transaction, so a
 * transaction that wrote cannot be prepared.  Sessions that sent nothing
 * are just ended.
 */
static void
tcopy_prepare_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->in_session && (conn->sent_any || conn->session_lost))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that has written to a tcopy foreign table")));
	}

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;

		if (!conn->in_session || conn->null_transport)
			continue;
		conn->busy = true;
		rc = tc_client_abort(conn->client);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_close(conn);
		conn->in_session = false;
	}
}

/*
 * Abort: close every connection with an open session (or in an unknown
 * state).  The tserver discards a session when its connection closes, so
 * nothing needs an answer: an unresponsive tserver cannot hold up a
 * rollback.  Runs with interrupts held, and must not raise an ERROR.
 */
static void
tcopy_abort_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->busy || (conn->in_session && conn->client != NULL))
			tcopy_connection_close(conn);
	}
}

/* The end of a transaction, whichever way it went: no session survives it. */
static void
tcopy_end_xact(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

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
		conn->write_level = 0;
		list_free(conn->written_relids);
		conn->written_relids = NIL;
	}
}

static void
tcopy_xact_callback(XactEvent event, void *arg)
{
	if (tcopy_connections != NULL)
	{
		switch (event)
		{
			case XACT_EVENT_PARALLEL_PRE_COMMIT:
			case XACT_EVENT_PRE_COMMIT:
				tcopy_commit_sessions();
				return;
			case XACT_EVENT_PRE_PREPARE:
				tcopy_prepare_sessions();
				return;
			case XACT_EVENT_PARALLEL_ABORT:
			case XACT_EVENT_ABORT:
				tcopy_abort_sessions();
				tcopy_end_xact();
				break;
			case XACT_EVENT_PARALLEL_COMMIT:
			case XACT_EVENT_COMMIT:
			case XACT_EVENT_PREPARE:
				tcopy_end_xact();
				break;
		}
	}

	switch (event)
	{
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			tcopy_close_scan_clients(0);
			break;
		default:
			break;
	}
}

/*
 * Subtransaction end: a committed one hands its writes to its parent; an
 * aborted one that sent batches makes its session uncommittable, and its
 * interrupted calls and leftover scan clients are closed.
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
				if (conn->write_level >= level)
					conn->subxact_lost = true;
			}
			if (conn->write_level >= level)
				conn->write_level = level - 1;
		}
	}

	if (event == SUBXACT_EVENT_ABORT_SUB)
		tcopy_close_scan_clients(level);
}
