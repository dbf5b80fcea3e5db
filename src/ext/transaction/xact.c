/*
 * xact.c
 *		Write sessions, and how they follow the Postgres transaction: a
 *		two-phase commit whose decision is Postgres' commit record.
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

#include "tcopy.h"

static void tcopy_xact_callback(XactEvent event, void *arg);
static void tcopy_resolve_send(TcopyConnection *conn, bool commit);
static void tcopy_resolve_finish(TcopyConnection *conn, bool commit);
static void tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);

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
static void
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
	if (conn->next_seq - 1 != to->seq && !conn->null_transport && conn->client != NULL)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_rollback_to(conn->client, to->seq, to->rows, &done, reason,
								   sizeof(reason));
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_fail(conn, "could not roll back the write session to a savepoint");
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

			if (conn->client == NULL)
				conn->client = tcopy_client_connect(conn->address, conn->token, &conn->tls);
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
			tcopy_connection_fail(conn, psprintf("could not set on_conflict of foreign table \"%s\"",
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
		tcopy_connection_fail(conn, "could not modify rows");
	}
	conn->busy = false;
	conn->next_seq++;
	conn->rows_sent += changed;
	return changed;
}

/*
 * Stage table operation op on the tserver's table table_id (named
 * options->table_name; track: remember it, for tcopy_xact_staged_op_on)
 * in the transaction's write session for (options->serverid,
 * userid): it is applied when the session is published, atomically with
 * its rows (a TRUNCATE before them, a DROP after them), and not at all
 * when the session is discarded.  Like a batch, it cannot be taken back
 * one subtransaction at a time.
 */
void
tcopy_xact_table_op(const TcopyTableOptions *options, Oid userid, bool track,
					Tcopy__TableOpKind op, uint32 table_id)
{
	TcopyConnection *conn = tcopy_xact_write_connection(options, userid);

	tcopy_xact_mark(conn);
	conn->ops_sent++;
	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
	if (track)
		tcopy_xact_note_table(&conn->op_tables, options->table_name);
	if (!conn->null_transport)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_session_table_op(conn->client, op, table_id);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_fail(conn, psprintf("could not %s table \"%s\" in the write session",
												 op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP ? "drop" : "truncate",
												 options->table_name));
	}
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
		tcopy_connection_fail(conn, "could not send a write batch");
	if (tc_client_session(conn->client, session_id, key, keylen) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that wrote to it",
						relname),
				 errdetail("The tserver at \"%s\" does not let a scan read a write session.",
						   conn->address)));
	return true;
}

/*
 * Test pause point point (tcopy.test_pause_at): say so in the server log,
 * then sleep until the process is killed; cancellable where the caller
 * may be cancelled.
 */
static void
tcopy_test_pause(TcopyPausePoint point, bool cancellable)
{
	if (tcopy_test_pause_point != point)
		return;
	ereport(LOG,
			(errmsg("tcopy: paused at %s",
					point == TCOPY_PAUSE_AFTER_PREPARE ? "after-prepare" : "before-publish")));
	for (;;)
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
 * (one whose answer cannot be read is left to recovery), then fail.
 */
static void
tcopy_prepare_failed(TcopyConnection *failed)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	failed->request_sent = false;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn == failed || !conn->request_sent)
			continue;
		conn->request_sent = false;
		if (tc_client_prepare_wait(conn->client) < 0)
			continue;			/* busy: the abort closes the connection */
		conn->busy = false;
		conn->prepared = true;
	}
	tcopy_connection_fail(failed, "could not prepare the write session");
}

/*
 * Pre-commit: the first phase.  Refuse first, before anything is
 * prepared, if any session cannot commit; then prepare every session that
 * sent something, then record each in tcopy.prepared_session_records.
 * Cancellable: a cancel or a failure aborts the transaction, and the abort
 * discards what was prepared.
 */
static void
tcopy_prepare_sessions_for_commit(void)
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
		if (conn->subxact_lost)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
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

	tcopy_test_pause(TCOPY_PAUSE_AFTER_PREPARE, true);
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
 * Pre-prepare (PREPARE TRANSACTION): a session is tied to this backend's
 * connection, so a transaction that wrote cannot be prepared.  Sessions
 * that sent nothing are just ended.
 */
static void
tcopy_refuse_prepare_transaction(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	bool		wrote = tcopy_xact_drops_pending();

	if (tcopy_connections != NULL)
	{
		hash_seq_init(&scan, tcopy_connections);
		while ((conn = hash_seq_search(&scan)) != NULL)
			wrote |= conn->in_session && (conn->sent_any || conn->session_lost);
	}
	if (wrote)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot PREPARE a transaction that has written to a tcopy foreign table"),
				 errdetail("Its rows, TRUNCATEs and DROPs of tcopy tables are in a tserver write session "
						   "tied to this backend's connection, which cannot be handed over to "
						   "the backend that runs COMMIT PREPARED.")));
	if (tcopy_connections == NULL)
		return;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->in_session)
			tcopy_end_unused_session(conn);
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
			tcopy_prepare_sessions_for_commit();
			return;
		case XACT_EVENT_PRE_PREPARE:
			tcopy_refuse_prepare_transaction();
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
