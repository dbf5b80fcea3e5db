/*
 * xact.c
 *		Write sessions, and how they follow the Postgres transaction: a
 *		two-phase commit whose decision is Postgres' commit record.  This
 *		file holds the sessions' state and what a statement does with it:
 *		beginning a session, sending batches, table operations, modifies,
 *		what a scan may read; xact_commit.c the transaction callbacks:
 *		prepare, publish, discard, and subtransaction ends.
 *
 * The first write of a transaction on a cached write connection
 * (connection.c) begins a write session on it; every batch of the
 * transaction, whatever the table, goes into that session, numbered 1, 2,
 * ... here; so do its TRUNCATEs and DROPs of tcopy tables, staged in the
 * session as table operations (fdw_modify.c, hook.c).  The session becomes
 * visible on the tserver only when it is published, atomically.  How it
 * follows the transaction:
 *
 * - pre-commit (cancellable): every session is prepared under a global id
 *   (recovery.c): the tserver does the slow part of the commit and keeps
 *   the session durably, to be published or discarded by a resolve only.
 *   Then one record per session goes into tcopy.prepared_session_records,
 *   in this transaction: the records commit exactly when it does.  Any
 *   failure is an ERROR that aborts the transaction.
 * - commit (after the commit record, interrupts held): every session is
 *   published, each call bounded by a deadline.  The transaction is
 *   committed whatever happens: a tserver that does not publish gets a
 *   WARNING, and recovery publishes its session later.
 * - abort: prepared sessions are discarded, best effort, bounded and
 *   warned about like the publish; the connections of sessions not
 *   prepared are closed, which makes the tservers discard them.
 *
 * What a crash or a lost connection leaves prepared, recovery resolves by
 * the records (recovery.c, and docs/commit.md for the whole argument).
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
int			tcopy_window = 4;	/* tcopy.batches_in_flight */

/* A session that sent batches lost its connection: refuse to go on. */
void
tcopy_report_session_lost(TcopyConnection *conn)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost the connection to tserver at \"%s\" in this transaction",
					conn->address),
			 errdetail("Rows this transaction wrote through it are gone; the transaction cannot commit.")));
}

/*
 * Note the session as it is before the current subtransaction's first
 * write, if this is it (TcopySavepoint).  At the top level, nothing: a
 * rollback there discards the session.
 */
static void
tcopy_xact_mark(TcopyConnection *conn)
{
	int			level = GetCurrentTransactionNestLevel();
	TcopySavepoint *mark;
	MemoryContext oldcontext;

	if (level <= 1 || conn->write_level >= level)
		return;
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	mark = palloc(sizeof(TcopySavepoint));
	mark->level = level;
	mark->seq = conn->next_seq - 1;
	mark->rows = conn->rows_sent;
	mark->ops = conn->ops_sent;
	mark->write_level = conn->write_level;
	conn->savepoints = lappend(conn->savepoints, mark);
	MemoryContextSwitchTo(oldcontext);
}

/*
 * Take back the batches of rolled-back subtransactions, if any, before the
 * session is used again: the tserver truncates the session to the
 * savepoint when all it received since is still in its staging memory.
 * Where it cannot (a spill since, a table operation since), the session is
 * uncommittable, as it was before savepoints were taken back.
 */
void
tcopy_xact_apply_rollback(TcopyConnection *conn)
{
	TcopySavepoint *to = &conn->pending;
	bool		done = true;
	char		reason[200] = "";

	if (!conn->rollback_pending)
		return;
	conn->rollback_pending = false;
	if (conn->session_lost || conn->subxact_lost)
		return;
	if (conn->ops_sent != to->ops)
	{
		conn->subxact_lost = true;
		snprintf(conn->lost_why, sizeof(conn->lost_why),
				 "The subtransaction truncated, dropped or labelled a table.");
		return;
	}
	/* a failed parallel COPY's streams sent rows, not seqs, and are open */
	if ((conn->next_seq - 1 != to->seq || conn->rows_sent != to->rows || conn->streaming) &&
		!conn->null_transport && conn->client != NULL)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_rollback_to(conn->client, to->seq, to->rows, &done, reason,
								   sizeof(reason));
		conn->busy = false;
		if (rc < 0)
			tcopy_session_fail(conn, "could not roll back the write session to a savepoint");
		/* the rollback ended the streams */
		conn->streaming = false;
	}
	if (!done)
	{
		conn->subxact_lost = true;
		snprintf(conn->lost_why, sizeof(conn->lost_why), "tserver: %s.", reason);
		return;
	}
	conn->next_seq = to->seq + 1;
	conn->rows_sent = to->rows;
	/* the COPY lines of the rows taken back are not the session's any more */
	conn->lines_complete = false;
}

/*
 * The cached write connection for (options->serverid, userid), connected
 * (and reconnected after a failure) as needed, with a write session begun
 * in the current transaction.
 */
TcopyConnection *
tcopy_xact_write_connection(const TcopyTableOptions *options, Oid userid)
{
	TcopyConnection *conn = tcopy_connection_lookup(options, userid);

	if (conn->in_session && conn->session_lost)
		tcopy_report_session_lost(conn);

	if (conn->in_session)
	{
		tcopy_xact_apply_rollback(conn);
		if (conn->client != NULL)
			tc_client_set_window(conn->client, (unsigned) tcopy_window);
		tcopy_xact_flush_truncates(conn);
		return conn;
	}

	/*
	 * Begin the session.  A cached client may be dead (its tserver may have
	 * restarted since the last transaction): then retry once on a new one.
	 * Without the records table the commit would fail: say so before
	 * anything is sent.
	 */
	if (!conn->null_transport)
	{
		(void) tcopy_records_relid(false);
		for (;;)
		{
			bool		reused = conn->client != NULL;
			int			rc;
			uint64		snapshot_id = 0;
			const uint8 *snapshot_key = NULL;
			size_t		snapshot_keylen = 0;

			/* closed by the tserver meanwhile: seen without a round trip */
			if (reused && !tc_client_idle_ok(conn->client))
			{
				tcopy_connection_close(conn);
				reused = false;
			}
			if (conn->client == NULL)
				conn->client = tcopy_client_connect(conn->address, conn->token, &conn->tls);
			tc_client_set_window(conn->client, (unsigned) tcopy_window);

			/* REPEATABLE READ: updates and deletes checked against the snapshot */
			(void) tcopy_xact_snapshot(options, &snapshot_id, &snapshot_key, &snapshot_keylen);

			/*
			 * Not waited for: its answer comes with the session's first
			 * request's (issue 46, one round trip per statement)
			 */
			conn->busy = true;
			rc = tc_client_begin_deferred(conn->client, snapshot_id, snapshot_key,
										  snapshot_keylen);
			conn->busy = false;
			if (rc == 0)
				break;
			if (!reused)
				tcopy_session_fail(conn, "could not begin a write session");
			tcopy_connection_close(conn);
		}
	}

	conn->in_session = true;
	conn->streaming = false;
	conn->sent_any = false;
	conn->session_lost = false;
	conn->next_seq = 1;
	conn->rows_sent = 0;
	tcopy_lines_reset(conn);
	return conn;
}

/*
 * Add name to a list of tserver table names (in TopMemoryContext, as the
 * list lasts the transaction), unless it is there already.
 */
static void
tcopy_xact_note_table(List **names, const char *name)
{
	MemoryContext oldcontext;
	ListCell   *lc;

	foreach(lc, *names)
	{
		if (strcmp((const char *) lfirst(lc), name) == 0)
			return;
	}
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	*names = lappend(*names, pstrdup(name));
	MemoryContextSwitchTo(oldcontext);
}

/*
 * Remember that the session holds rows for table_id, at this nest level:
 * for tcopy_xact_wrote_table (by the tserver table's name: any foreign
 * table bound to it) and for subtransaction aborts.
 */
static void
tcopy_xact_note_write(TcopyConnection *conn, uint32 table_id)
{
	ListCell   *lc;

	tcopy_xact_mark(conn);
	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
	foreach(lc, conn->tables)
	{
		TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);

		if (table->table_id == table_id)
		{
			tcopy_xact_note_table(&conn->written_tables, table->name);
			break;
		}
	}
}

void
tcopy_xact_set_on_conflict(TcopyConnection *conn, uint32 table_id,
						   TcopyOnConflict policy, const char *relname)
{
	static const Tcopy__OnConflict wire[] = {
		[TCOPY_ON_CONFLICT_ERROR] = TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
		[TCOPY_ON_CONFLICT_IGNORE] = TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
		[TCOPY_ON_CONFLICT_REPLACE] = TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE,
	};
	TcopyTablePolicy *entry;
	MemoryContext oldcontext;
	ListCell   *lc;

	foreach(lc, conn->conflict_policies)
	{
		entry = (TcopyTablePolicy *) lfirst(lc);
		if (entry->table_id != table_id)
			continue;
		if (entry->policy != policy)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot write to foreign table \"%s\" with on_conflict '%s'",
							relname, tcopy_on_conflict_name(policy)),
					 errdetail("This transaction wrote to its tserver table with on_conflict '%s'.",
							   tcopy_on_conflict_name(entry->policy)),
					 errhint("Write to a table with one on_conflict policy per transaction.")));
		return;
	}

	/* replace is the tserver's default: nothing to send */
	if (!conn->null_transport && policy != TCOPY_ON_CONFLICT_REPLACE)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_session_on_conflict(conn->client, table_id, wire[policy]);
		conn->busy = false;
		if (rc < 0)
			tcopy_session_fail(conn, psprintf("could not set on_conflict of foreign table \"%s\"",
												 relname));
	}
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc(sizeof(TcopyTablePolicy));
	entry->table_id = table_id;
	entry->policy = policy;
	conn->conflict_policies = lappend(conn->conflict_policies, entry);
	MemoryContextSwitchTo(oldcontext);
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
	/* a TRUNCATE held back meanwhile (a function the statement called) */
	tcopy_xact_flush_truncates(conn);

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
			tcopy_session_fail(conn, "could not send a write batch");
	}
	conn->next_seq++;
	conn->rows_sent += nrows;
}

/*
 * Open conn's session to streams (docs/parallel.md#streams): a parallel
 * COPY's workers send rows on connections of their own, and the session's
 * own connection sends nothing until they are closed.
 */
void
tcopy_xact_streams_open(TcopyConnection *conn)
{
	int			rc;

	if (!conn->in_session || conn->session_lost || conn->null_transport)
		elog(ERROR, "tcopy write connection has no session to open to streams");
	tcopy_xact_flush_truncates(conn);
	conn->busy = true;
	rc = tc_client_streams_open(conn->client);
	conn->busy = false;
	if (rc < 0)
		tcopy_session_fail(conn, "could not open the write session to parallel COPY workers");
	conn->streaming = true;
}

/*
 * A batch of nrows rows of table_id that a stream of the session sent, in
 * the session's order (the streams' chunks, in turn): its COPY lines (runs,
 * NULL: not known) are the session's next rows'.
 */
void
tcopy_xact_streamed(TcopyConnection *conn, uint32 table_id, const char *relname,
					const TcopyLineRun *runs, int nruns, uint64 nrows)
{
	/* before the rows count: a subtransaction's mark is the session before them */
	tcopy_xact_note_write(conn, table_id);
	tcopy_lines_add_batch(conn, relname, runs, nruns, nrows);
	conn->rows_sent += nrows;
}

/*
 * No stream of the session sends chunks first .. through (they had no rows
 * for it); last: the input ended with chunk through.  Not answered: a
 * failure shows at the close.
 */
void
tcopy_xact_streams_skip(TcopyConnection *conn, uint64 first, uint64 through, bool last)
{
	int			rc;

	conn->busy = true;
	rc = tc_client_skip_chunks(conn->client, first, through, last);
	conn->busy = false;
	if (rc < 0)
		tcopy_session_fail(conn, "could not write the rows of parallel COPY workers");
}

/*
 * Close the session's streams: chunks 1 .. chunks (the tserver waits for
 * those still on their way), and every row counted by
 * tcopy_xact_streamed, must have been staged; an error otherwise, or
 * when a stream failed (its error: a duplicate key, with its line).
 */
void
tcopy_xact_streams_close(TcopyConnection *conn, uint64 chunks)
{
	if (!tcopy_xact_streams_end(conn, chunks))
		tcopy_session_fail(conn, "could not write the rows of parallel COPY workers");
}

/*
 * tcopy_xact_streams_close without the ERROR: false when the session
 * failed, its client's error for tcopy_session_fail to raise (or for
 * tcopy_connection_close to drop).
 */
bool
tcopy_xact_streams_end(TcopyConnection *conn, uint64 chunks)
{
	int			rc;

	conn->busy = true;
	rc = tc_client_streams_close(conn->client, chunks, conn->rows_sent, NULL);
	conn->busy = false;
	conn->streaming = false;
	return rc >= 0;
}

/*
 * A direct modify (request: its table, kind, range, assignments) as the
 * session's next batch; the rows it changed.  They commit with the
 * transaction, as rows sent do.  A sum out of its column's range is
 * Postgres' 22003, with range_message.
 */
uint64
tcopy_xact_modify(TcopyConnection *conn, Tcopy__Modify *request, const char *range_message)
{
	uint64_t	changed = 0;

	if (!conn->in_session || conn->session_lost)
		elog(ERROR, "tcopy write connection has no open session");
	tcopy_xact_note_write(conn, request->table_id);
	if (conn->null_transport)
		return 0;
	conn->busy = true;
	if (tc_client_modify(conn->client, request, &changed) < 0)
	{
		conn->busy = false;
		if (tc_client_error_code(conn->client) == TCOPY__ERROR_CODE__ERROR_OUT_OF_RANGE)
		{
			/* the tserver ended the session with the connection */
			tcopy_connection_close(conn);
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("%s", range_message)));
		}
		tcopy_session_fail(conn, "could not modify rows");
	}
	conn->busy = false;
	conn->next_seq++;
	conn->rows_sent += changed;
	return changed;
}

/*
 * Send a table operation in conn's session (its table opened on conn too).
 */
static void
tcopy_xact_send_table_op(TcopyConnection *conn, Tcopy__TableOpKind op, uint32 table_id,
						 const char *table_name)
{
	tcopy_xact_mark(conn);
	conn->ops_sent++;
	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
	if (!conn->null_transport)
	{
		int			rc;

		conn->busy = true;
		/*
		 * The id was looked up on another connection: open the table on
		 * this one too, as a scoped token's connection may only name the
		 * tables it opened (docs/protocol.md, Scoped credentials).
		 */
		rc = tc_client_open_table(conn->client, table_name, NULL, false, &table_id,
								  NULL, NULL);
		if (rc >= 0)
			rc = tc_client_session_table_op(conn->client, op, table_id);
		conn->busy = false;
		if (rc < 0)
			tcopy_session_fail(conn, psprintf("could not %s table \"%s\" in the write session",
												 op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP ? "drop" : "truncate",
												 table_name));
	}
}

/*
 * Send the TRUNCATEs held back in conn's session, in their order, before
 * anything else uses the session: once sent, a TRUNCATE has made the
 * tserver discard the rows the session holds of the table, which nothing
 * takes back, so a subtransaction's is held back until then (a ROLLBACK TO
 * SAVEPOINT right after it forgets it).  Each is sent as a table operation
 * of the current subtransaction.
 */
void
tcopy_xact_flush_truncates(TcopyConnection *conn)
{
	if (!conn->in_session || conn->session_lost)
		return;
	while (conn->pending_truncates != NIL)
	{
		TcopyPendingTruncate *pending = linitial(conn->pending_truncates);
		uint32		table_id = pending->table_id;
		/* in the statement's memory: an error while sending leaks nothing */
		char	   *table_name = pstrdup(pending->table_name);

		conn->pending_truncates = list_delete_first(conn->pending_truncates);
		pfree(pending->table_name);
		pfree(pending);
		tcopy_xact_send_table_op(conn, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table_id,
								 table_name);
		pfree(table_name);
	}
}

void
tcopy_xact_pending_truncates_end(TcopyConnection *conn, int level, bool aborted)
{
	ListCell   *lc;

	foreach(lc, conn->pending_truncates)
	{
		TcopyPendingTruncate *pending = lfirst(lc);

		if (pending->level < level)
			continue;
		if (aborted || level <= 1)
		{
			pfree(pending->table_name);
			pfree(pending);
			conn->pending_truncates = foreach_delete_current(conn->pending_truncates, lc);
		}
		else
			pending->level = level - 1;
	}
}

/*
 * Stage a table operation (TRUNCATE, DROP) of the tserver table table_id in
 * the transaction's session; track: note the table as truncated (scans of
 * it read the session).  A TRUNCATE in a subtransaction is held back until
 * the session's next use (tcopy_xact_flush_truncates).
 */
void
tcopy_xact_table_op(const TcopyTableOptions *options, Oid userid, bool track,
					Tcopy__TableOpKind op, uint32 table_id)
{
	TcopyConnection *conn = tcopy_xact_write_connection(options, userid);
	int			level = GetCurrentTransactionNestLevel();

	if (track)
		tcopy_xact_note_table(&conn->op_tables, options->table_name);
	if (op == TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE && level > 1 && !conn->null_transport)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);
		TcopyPendingTruncate *pending = palloc(sizeof(TcopyPendingTruncate));

		pending->level = level;
		pending->table_id = table_id;
		pending->table_name = pstrdup(options->table_name);
		conn->pending_truncates = lappend(conn->pending_truncates, pending);
		MemoryContextSwitchTo(oldcontext);
		return;
	}
	tcopy_xact_send_table_op(conn, op, table_id, options->table_name);
}

/*
 * A load label was claimed in conn's session: like a batch, the claim makes
 * the session one to prepare and publish (a labelled COPY of no rows
 * publishes its label), and cannot be taken back one subtransaction at a
 * time.
 */
void
tcopy_xact_note_claim(TcopyConnection *conn)
{
	tcopy_xact_mark(conn);
	conn->ops_sent++;
	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
}

/*
 * The write connection whose list at list_offset names options' tserver
 * table; NULL when none does.  *more is set when another one does too.
 */
static TcopyConnection *
tcopy_connection_listing(size_t list_offset, const TcopyTableOptions *options, bool *more)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	TcopyConnection *found = NULL;

	*more = false;
	if (tcopy_connections == NULL)
		return NULL;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		List	   *names = *(List **) ((char *) conn + list_offset);
		ListCell   *lc;

		if (conn->address == NULL || conn == found)
			continue;
		foreach(lc, names)
		{
			/* the name first: resolving addresses costs system calls */
			if (strcmp((const char *) lfirst(lc), options->table_name) == 0 &&
				tc_address_same_server(conn->address, options->address))
			{
				if (found != NULL)
					*more = true;
				else
					found = conn;
				break;
			}
		}
	}
	return found;
}

/*
 * Whether the list of tserver table names at byte offset list_offset of
 * TcopyConnection holds options->table_name in a connection to
 * options->address (or another spelling of it, tc_address_same_server):
 * the tserver table itself, whichever foreign table, server, user or
 * address spelling reaches it.
 */
static bool
tcopy_any_connection_lists(size_t list_offset, const TcopyTableOptions *options)
{
	bool		more;

	return tcopy_connection_listing(list_offset, options, &more) != NULL;
}

/*
 * Whether this transaction staged a TRUNCATE of the tserver table of
 * options: then reading it must fail, as the TRUNCATE takes effect at the
 * commit.
 */
bool
tcopy_xact_staged_op_on(const TcopyTableOptions *options)
{
	return tcopy_any_connection_lists(offsetof(TcopyConnection, op_tables), options);
}

/*
 * Whether this transaction has sent rows to the tserver table of options:
 * then reading or truncating it must fail, as those rows are not visible
 * before the commit.
 */
bool
tcopy_xact_wrote_table(const TcopyTableOptions *options)
{
	return tcopy_any_connection_lists(offsetof(TcopyConnection, written_tables), options);
}

/*
 * Whether a scan of relname must read this transaction's writes to its tserver
 * table (rows sent, a TRUNCATE staged), and where: *session_id and *key
 * name the write session on the tserver (tc_client_session), once every
 * batch sent to it is acknowledged, so that the scan sees all of them.
 * ERROR where they cannot be read: the data is dropped at commit, the
 * writes went through another user mapping or several, a rolled-back
 * subtransaction wrote to the session (its rows are still there).
 */
bool
tcopy_xact_session_to_read(const char *relname, const TcopyTableOptions *options, Oid userid,
						   uint64 *session_id, const uint8 **key, size_t *keylen)
{
	TcopyConnection *written;
	TcopyConnection *truncated;
	TcopyConnection *conn;
	bool		more_written,
				more_truncated;
	int			rc;

	if (tcopy_xact_drops_table(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that dropped its data",
						relname),
				 errdetail("Another foreign table bound to the same tserver table was dropped in this "
						   "transaction, and its data goes at the commit.")));
	written = tcopy_connection_listing(offsetof(TcopyConnection, written_tables), options,
									   &more_written);
	truncated = tcopy_connection_listing(offsetof(TcopyConnection, op_tables), options,
										 &more_truncated);
	if (written == NULL && truncated == NULL)
		return false;
	conn = written != NULL ? written : truncated;
	if (more_written || more_truncated || (written != NULL && truncated != NULL && written != truncated) ||
		conn->key.serverid != options->serverid || conn->key.userid != userid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that %s it through another foreign server, user mapping or role",
						relname, written != NULL ? "wrote to" : "truncated"),
				 errdetail("A scan reads the writes made through its own server and user mapping, as its own role, only.")));
	tcopy_xact_apply_rollback(conn);
	if (!conn->subxact_lost && !conn->session_lost)
		tcopy_xact_flush_truncates(conn);
	if (conn->subxact_lost)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" after a rolled-back subtransaction wrote to it",
						relname),
				 errdetail("The tserver still holds the rows the subtransaction wrote, and could not take them back; the transaction cannot commit.%s%s",
						   conn->lost_why[0] ? " " : "", conn->lost_why)));
	if (conn->session_lost)
		tcopy_report_session_lost(conn);
	if (conn->null_transport || conn->client == NULL)
		return false;
	conn->busy = true;
	rc = tc_client_wait_acks(conn->client);
	conn->busy = false;
	if (rc < 0)
		tcopy_session_fail(conn, "could not send a write batch");
	if (tc_client_session(conn->client, session_id, key, keylen) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that wrote to it",
						relname),
				 errdetail("The tserver at \"%s\" does not let a scan read a write session.",
						   conn->address)));
	return true;
}
