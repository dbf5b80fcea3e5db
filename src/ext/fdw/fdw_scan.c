/*
 * fdw_scan.c
 *		The scan callbacks of the tcopy foreign-data wrapper: a scan of a
 *		table on its tserver, projected, key-bounded and filtered as fdw.c
 *		planned.
 *
 * A scan opens a connection of its own (tcopy_scan_client_open), so that
 * it can run while the transaction's write session is open, and fetches
 * the rows in batches.  Rows written by the transaction are not visible
 * before it commits: a scan would silently miss them, so reading a table
 * the transaction wrote to is an error.
 *
 * The connection belongs to the (sub)transaction that began the scan (a
 * cursor's: the one that declared it), and follows it as Postgres'
 * portals do: to the parent when it commits, closed when it aborts
 * (connection.c).  A connection is malloc'ed by the client library; a
 * reset callback on the scan's memory context closes it when a query
 * fails, as EndForeignScan is then not called.
 */

#include "postgres.h"

#include "access/parallel.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"

typedef struct TcopyScanState
{
	TcopyRelCodec *codec;
	Relation	rel;			/* the table read (a grouped scan has no scan relation) */
	TcopyAggScan *agg;			/* groups computed by the tserver, or NULL */
	EState	   *estate;			/* the statement's, for its snapshots */
	TcopyScanClient conn;		/* conn.client NULL: the scan returns no rows */
	uint32		table_id;
	int		   *proj;			/* [nproj] wire columns fetched, ascending */
	int			nproj;
	TcopyKeyRange range;		/* of the key, from the planner's bounds */
	int64		limit;			/* rows the tserver may stop after, 0: all */
	bool		reverse;		/* the key range backward (ORDER BY it DESC) */
	Tcopy__Expr *filter;		/* the tserver's filter, or NULL */
	List	   *filter_quals;	/* the quals it holds, for EXPLAIN */
	uint64		remote_filtered;	/* rows the tserver's filter removed, over
									 * every rescan (EXPLAIN ANALYZE) */
	bool		for_update;		/* an UPDATE's or DELETE's target: rows locked */
	TcopyRowMarks *marks;		/* SELECT ... FOR UPDATE: rows numbered, or NULL */
	bool		skip_all;		/* ... SKIP LOCKED of a keyless table locked */
	bool		started;		/* Scan request sent */
	bool		named_session;	/* ... naming the write session, whose loss it reports */
	bool		read_in_doubt;	/* read again as of a snapshot: an in-doubt session */
	bool		table_cached;	/* table_id: opened on this connection before */
	bool		open_uncached;	/* a parallel scan: its participants must agree */
	bool		table_reopened;	/* opened again: the cached id was gone */
	bool		done;			/* the batch marked done has been fetched */
	Tcopy__ScanBatch *batch;	/* in the client's arena until the next fetch */
	size_t		next_row;		/* index in batch->n_packed */
	uint8	   *pack_pos;		/* the next row in batch->packed */
	MemoryContext batch_cxt;	/* decoded values of the current batch */
	MemoryContextCallback close_callback;
	/* a Parallel Foreign Scan's (fdw_parallel.c) */
	TcopyParallelScan *plan;	/* the leader's, for the DSM */
	TcopyParallelScan *shared;	/* in the DSM; NULL: not parallel, or run serially */
	int			part;			/* the part being read */
} TcopyScanState;

static void tcopy_scan_start(TcopyScanState *state);

/* READ COMMITTED: scans begun and not started, until their statement's start */
static List *tcopy_unstarted_scans = NIL;
static ExecutorStart_hook_type prev_executor_start = NULL;

/*
 * Lock what a scan for UPDATE or DELETE reads, before it reads it
 * (row_locks.c): the key, when the scan reads one key of a table of one
 * key column, else the table's rows.
 */
static void
tcopy_scan_lock_rows(TcopyScanState *state, Index rti)
{
	EState	   *estate = state->estate;

	tcopy_lock_range(state->codec, &state->range,
					 tcopy_modify_lock_mode(state->codec, estate->es_plannedstmt->commandType,
											exec_rt_fetch(rti, estate)->updatedCols));
	state->for_update = true;
}

/*
 * Choose the wire columns to fetch.  A scan always projects at least one
 * column, as an empty projection asks for all of them: for count(*), the
 * first key column that is one of the table's own (not a key image, which
 * the codec does not decode), else the first fixed-size one.
 */
static void
tcopy_scan_choose_columns(TcopyScanState *state, bool all_columns, List *attnums)
{
	TcopyRelCodec *codec = state->codec;
	ListCell   *lc;

	state->proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	state->nproj = 0;
	if (all_columns)
	{
		state->nproj = tcopy_live_columns(codec, state->proj);
		return;
	}
	foreach(lc, attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);
		int			column = codec->column_of_att[attnum - 1];

		if (column >= 0)
			state->proj[state->nproj++] = column;
	}
	if (state->nproj == 0 && codec->ncolumns > 0)
	{
		int			column = 0;

		/* never a dropped column: its stored values are not read */
		while (column < codec->ncolumns - 1 &&
			   codec->columns[column].conv == TCOPY_CONV_DROPPED)
			column++;

		if (codec->schema->n_key > 0 && codec->schema->key[0] < (uint32) codec->ncolumns)
			column = (int) codec->schema->key[0];
		else
		{
			for (int c = 0; c < codec->ncolumns; c++)
			{
				if (codec->columns[c].kind != TCOPY__KIND__KIND_BYTES &&
					codec->columns[c].conv != TCOPY_CONV_DROPPED)
				{
					column = c;
					break;
				}
			}
		}
		state->proj[state->nproj++] = column;
	}
}

/* Close the scan's connection, if any; also run when a query fails. */
static void
tcopy_scan_close(void *arg)
{
	TcopyScanState *state = (TcopyScanState *) arg;

	tcopy_unstarted_scans = list_delete_ptr(tcopy_unstarted_scans, state);
	state->batch = NULL;
	tcopy_scan_client_close(&state->conn);
}

/* Open the table on the scan's connection: once per connection, but in parallel scans */
static int
tcopy_scan_open_table(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;

	if (state->open_uncached)
		return tc_client_open_table(state->conn.client, codec->options.table_name,
									codec->schema, false, &state->table_id, NULL, NULL);
	return tc_client_open_table_cached(state->conn.client, codec->options.table_name,
									   codec->schema, &state->table_id, &state->table_cached);
}

/*
 * Connect and open the table for reading.  A table the tserver does not
 * know was never written to: the scan then returns no rows.  An idle
 * connection keeps the ids of the tables it opened: a statement that
 * reads one again costs one round trip, its scan (issue 46).  fresh: a
 * new connection, whose cache is empty.
 */
static void
tcopy_scan_connect_with(TcopyScanState *state, bool fresh)
{
	TcopyRelCodec *codec = state->codec;
	TcClient   *client;
	bool		reused;
	int			rc;

	state->conn.lost = false;
	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	state->table_cached = false;
	if (tcopy_address_is_null(codec->options.address) || state->range.empty)
		return;

	reused = tcopy_scan_client_open(&state->conn, codec->options.address, codec->options.token,
									&codec->options.tls, !fresh);
	/* closed by the tserver meanwhile (a restart, its --idle-timeout): seen at no cost */
	if (reused && !tc_client_idle_ok(state->conn.client))
	{
		tcopy_scan_client_close(&state->conn);
		(void) tcopy_scan_client_open(&state->conn, codec->options.address,
									  codec->options.token, &codec->options.tls, false);
		reused = false;
	}
	rc = tcopy_scan_open_table(state);
	if (rc < 0 && reused &&
		(tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_NONE ||
		 tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_SHUTTING_DOWN))
	{
		/*
		 * an idle connection the tserver closed meanwhile, which the check
		 * above could not see yet: once more, fresh
		 */
		tcopy_scan_client_close(&state->conn);
		(void) tcopy_scan_client_open(&state->conn, codec->options.address,
									  codec->options.token, &codec->options.tls, false);
		rc = tcopy_scan_open_table(state);
	}
	if (rc >= 0)
		return;
	client = state->conn.client;
	if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
	{
		tcopy_scan_close(state);
		return;
	}
	tcopy_report_client_error(client, codec->options.address,
							  psprintf("could not read foreign table \"%s\"", codec->relname));
}

static void
tcopy_scan_connect(TcopyScanState *state)
{
	tcopy_scan_connect_with(state, false);
}

/*
 * ANALYZE's refusal of a table the transaction changed on the tserver
 * (wrote, truncated or dropped its rows): it samples the committed rows
 * only, which would not be the table the transaction sees.  (A scan reads
 * the transaction's changes instead: tcopy_xact_session_to_read.)
 */
void
tcopy_scan_check_visible(Relation rel, const TcopyTableOptions *options)
{
	if (tcopy_xact_wrote_table(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that wrote to it",
						RelationGetRelationName(rel)),
				 errdetail("ANALYZE samples the committed rows of a tcopy table: run it after the commit.")));
	if (tcopy_xact_staged_op_on(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that truncated it",
						RelationGetRelationName(rel)),
				 errdetail("ANALYZE samples the committed rows of a tcopy table: run it after the commit.")));
	if (tcopy_xact_drops_table(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that dropped its data",
						RelationGetRelationName(rel)),
				 errdetail("Another foreign table bound to the same tserver table was dropped in this "
						   "transaction, and its data goes at the commit.")));
}

/*
 * Set up the scan.  The scan of an UPDATE's or DELETE's target locks the
 * rows it will read first.
 */
void
tcopyBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	EState	   *estate = node->ss.ps.state;
	Index		rtindex = fsplan->scan.scanrelid;
	TcopyScanState *state;
	List	   *shipped;

	/* a grouped relation's scan (pushdown_agg.c) reads the one table of fs_relids */
	if (rtindex == 0)
	{
		rtindex = bms_next_member(fsplan->fs_relids, -1);
		rel = ExecGetRangeTableRelation(estate, rtindex);
	}
	state = palloc0(sizeof(TcopyScanState));
	node->fdw_state = state;
	state->rel = rel;
	state->codec = tcopy_rel_codec_shared(rel, tcopy_rte_user(node->ss.ps.state, rtindex));
	if (list_nth(fsplan->fdw_private, TCOPY_PRIV_UPPER) != NIL)
		state->agg = tcopy_agg_scan_begin(fsplan, state->codec);
	/* SELECT ... FOR UPDATE: a ctid is asked for, so every column is read */
	if (fsplan->scan.scanrelid > 0 && !(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		state->marks = tcopy_row_marks_begin(state->codec, rel, estate, rtindex,
											 &state->skip_all);
	tcopy_scan_choose_columns(state,
							  state->marks != NULL ||
							  boolVal(list_nth(fsplan->fdw_private, TCOPY_PRIV_ALL_COLUMNS)),
							  (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_ATTNUMS));
	tcopy_key_range(state->codec, (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_BOUNDS),
					node->ss.ps.ps_ExprContext, &state->range);
	/* what the key range holds is not filtered again */
	shipped = tcopy_filter_without_key_bounds((List *) list_nth(fsplan->fdw_private,
																TCOPY_PRIV_FILTER),
											  state->range.key_attnum);
	state->filter = tcopy_filter_build_shipped(state->codec, shipped, &node->ss.ps,
											   &state->filter_quals);

	/*
	 * The tserver may stop at the LIMIT only if it filters by every qual
	 * the planner counted on: one left out (a NULL parameter, a column
	 * whose stored form is not what the planner saw) is Postgres' alone
	 */
	state->limit = intVal(list_nth(fsplan->fdw_private, TCOPY_PRIV_LIMIT));
	state->reverse = boolVal(list_nth(fsplan->fdw_private, TCOPY_PRIV_REVERSE));
	if (list_length(state->filter_quals) != list_length(shipped))
	{
		state->limit = 0;
		/* the tserver aggregates the rows it filters: every qual must be in the filter */
		if (state->agg != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("cannot aggregate foreign table \"%s\" on its tserver: a condition of the query cannot be sent to it",
							RelationGetRelationName(rel)),
					 errhint("SET tcopy.pushdown_aggregates = off.")));
	}

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	/* a worker reads the parts of a parallel scan only (tcopy_add_partial_path) */
	if (IsParallelWorker() && !fsplan->scan.plan.parallel_aware)
		elog(ERROR, "a scan of foreign table \"%s\" that is not parallel aware runs in a parallel worker",
			 state->codec->relname);

	/* SERIALIZABLE: the read, to Postgres' SSI: of a key's part of the table, or all of it */
	state->estate = estate;
	if (!IsParallelWorker())
	{
		/* a worker reads as of the leader's view (fdw_parallel.c) */
		tcopy_ssi_read_parts(rel, estate->es_snapshot,
							 tcopy_key_range_ssi_parts(state->codec, &state->range));
		tcopy_statement_reads(estate, &state->codec->options);
	}
	if ((estate->es_plannedstmt->commandType == CMD_UPDATE ||
		 estate->es_plannedstmt->commandType == CMD_DELETE) &&
		fsplan->scan.scanrelid > 0 &&
		ExecRelationIsTargetRelation(estate, fsplan->scan.scanrelid))
		tcopy_scan_lock_rows(state, fsplan->scan.scanrelid);

	state->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "tcopy scan batch",
											 ALLOCSET_DEFAULT_SIZES);
	tcopy_scan_client_init(&state->conn);
	state->open_uncached = fsplan->scan.plan.parallel_aware;
	state->close_callback.func = tcopy_scan_close;
	state->close_callback.arg = state;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &state->close_callback);

	tcopy_scan_connect(state);

	/*
	 * The scan's view is taken at the executor's start, as a heap scan's
	 * snapshot (a cursor's at DECLARE): now under REPEATABLE READ, else
	 * once every scan of the statement has begun (tcopy_executor_start),
	 * so that a statement that reads several tservers takes their
	 * snapshots together (tcopy_read_snapshot).  A parallel scan starts at
	 * its first row, when its parts are known.
	 */
	if (state->conn.client != NULL && !fsplan->scan.plan.parallel_aware)
	{
		if (IsolationUsesXactSnapshot())
			tcopy_scan_start(state);
		else
		{
			MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);

			tcopy_unstarted_scans = lappend(tcopy_unstarted_scans, state);
			MemoryContextSwitchTo(oldcontext);
		}
	}
}

/*
 * ExecutorStart: every scan of the statement has begun; start those not
 * started yet (a scan the hook does not see, in an executor state made
 * otherwise, starts at its first row).
 */
static void
tcopy_executor_start(QueryDesc *queryDesc, int eflags)
{
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	foreach(lc, tcopy_unstarted_scans)
	{
		TcopyScanState *state = (TcopyScanState *) lfirst(lc);

		if (state->estate != queryDesc->estate)
			continue;
		tcopy_unstarted_scans = foreach_delete_current(tcopy_unstarted_scans, lc);
		if (!state->started && state->conn.client != NULL)
			tcopy_scan_start(state);
	}
}

void
TcopyScanInit(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = tcopy_executor_start;
}

/* The scan failed: say why. */
static void
tcopy_scan_report_error(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;

	/* more groups than the tserver holds: the planner's estimate was low */
	if (state->agg != NULL &&
		tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_TOO_LARGE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not aggregate foreign table \"%s\" on the tserver", codec->relname),
				 errdetail("tserver at \"%s\": %s.", codec->options.address,
						   tc_client_error(state->conn.client)),
				 errhint("ANALYZE the table so that the planner counts its groups, or "
						 "SET tcopy.pushdown_aggregates = off to aggregate in Postgres.")));
	if (tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_UNREADABLE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot read foreign table \"%s\" in this transaction: too many of its writes to it spilled to the tserver's disk",
						codec->relname),
				 errdetail("tserver at \"%s\": %s.", codec->options.address,
						   tc_client_error(state->conn.client)),
				 errhint("A scan reads at most the tserver's --session-memory-mb of the transaction's spilled writes in its key range: "
						 "narrow the range (WHERE key ...), read after the commit, or raise --session-memory-mb.")));
	if (tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_SERIALIZATION ||
		tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_IN_DOUBT)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to foreign table \"%s\" for update",
						codec->relname),
				 errdetail("tserver at \"%s\": %s.", codec->options.address,
						   tc_client_error(state->conn.client)),
				 errhint("Recovery resolves it (tcopy.recover_prepared_sessions(), or the recovery worker "
						 "every tcopy.recovery_interval); retry the transaction then.")));
	/* the write session the scan named, else its snapshot, is gone */
	if (tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_SESSION_LOST)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read foreign table \"%s\": this transaction's %s on the tserver was lost",
						codec->relname, state->named_session ? "write session" : "snapshot"),
				 state->named_session ?
				 errdetail("The tserver restarted, or closed the session's connection, after the transaction wrote to it: "
						   "its writes are gone, and the transaction cannot commit.") :
				 errdetail("The tserver restarted after the transaction's first read of it, "
						   "and the rows it read then cannot be read again."),
				 errhint("Roll the transaction back and run it again."),
				 errcontext("tserver at \"%s\"", codec->options.address)));
	tcopy_report_client_error(state->conn.client, codec->options.address,
							  psprintf("could not scan foreign table \"%s\"", codec->relname));
}

/*
 * Set what request reads as of: the write session of this transaction
 * whose changes to the table it reads, if any (acknowledged up to every
 * batch sent, so as of now), and the snapshot; a part of a parallel scan
 * reads the leader's.
 */
static void
tcopy_scan_set_view(TcopyScanState *state, Tcopy__Scan *request)
{
	TcopyRelCodec *codec = state->codec;
	const uint8 *key;
	size_t		keylen;

	if (state->shared != NULL)
	{
		state->named_session = tcopy_parallel_part_request(state->shared, state->part, request);
		return;
	}
	if (tcopy_xact_session_to_read(codec->relname, &codec->options, codec->userid,
								   &request->session_id, &key, &keylen))
	{
		request->session_key.data = (uint8_t *) key;
		request->session_key.len = keylen;
	}
	/* the transaction's snapshot, or the statement's of several tservers */
	if (tcopy_read_snapshot(state->estate, &codec->options, &request->snapshot_id, &key, &keylen))
	{
		request->snapshot_key.data = (uint8_t *) key;
		request->snapshot_key.len = keylen;
	}
	else
		request->refuse_in_doubt = true;	/* tcopy_scan_read_in_doubt */
	state->named_session = request->session_id != 0;
}

/*
 * Send the Scan request: the projection, the key range, and what it reads
 * as of (tcopy_scan_set_view).
 */
static void
tcopy_scan_start(TcopyScanState *state)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	uint32_t   *columns;

	tcopy_unstarted_scans = list_delete_ptr(tcopy_unstarted_scans, state);
	request.for_update = state->for_update;
	tcopy_scan_set_view(state, &request);

	columns = palloc(sizeof(uint32_t) * Max(state->nproj, 1));
	for (int p = 0; p < state->nproj; p++)
		columns[p] = (uint32_t) state->proj[p];
	request.table_id = state->table_id;
	request.packed = true;
	request.limit = (uint64_t) state->limit;
	request.reverse = state->reverse;
	request.n_columns = state->nproj;
	request.columns = columns;
	if (state->range.lower.present)
		request.lower = tcopy_make_key_bound(&state->range.lower);
	if (state->range.upper.present)
		request.upper = tcopy_make_key_bound(&state->range.upper);
	request.filter = state->filter;
	if (state->agg != NULL)
		tcopy_agg_scan_request(state->agg, &request);

	if (tc_client_scan_start(state->conn.client, &request) < 0)
		tcopy_scan_report_error(state);
	state->started = true;
}

/*
 * The tserver refused a scan that named no snapshot: a prepared session
 * nobody holds wrote to the table.  Its transaction may have committed
 * with its publish cut off (the backend lost its connection at the
 * commit; the tserver restarted, or its replica group changed leader,
 * since): this statement must then read its rows.  The statement takes
 * its snapshot of the tserver, which publishes the sessions of committed
 * transactions first (snapshot.c), and the scan is sent again, as of it.
 * false: not that refusal, or not the first.
 */
static bool
tcopy_scan_read_in_doubt(TcopyScanState *state)
{
	if (tc_client_error_code(state->conn.client) != TCOPY__ERROR_CODE__ERROR_IN_DOUBT ||
		state->read_in_doubt)
		return false;
	state->read_in_doubt = true;
	tcopy_read_snapshot_in_doubt(state->estate, &state->codec->options);
	tcopy_scan_close(state);
	tcopy_scan_connect(state);
	if (state->conn.client != NULL)
		tcopy_scan_start(state);
	return true;
}

/*
 * The tserver knows no table of the id the connection's cache gave: the
 * table was dropped since (and perhaps made again, under a new id).  Open
 * it by name on a new connection, and send the scan again.  false: not
 * that error, or not the first.
 */
static bool
tcopy_scan_reopen_table(TcopyScanState *state)
{
	if (tc_client_error_code(state->conn.client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE ||
		!state->table_cached || state->table_reopened || state->shared != NULL)
		return false;
	state->table_reopened = true;
	tcopy_scan_close(state);
	tcopy_scan_connect_with(state, true);
	if (state->conn.client != NULL)
		tcopy_scan_start(state);
	return true;
}

/*
 * The scan's connection was closed by the rollback of the (sub)transaction
 * that owns it: Postgres ends the portals of that subtransaction, so this
 * cannot happen, but should it, say so rather than return fewer rows.
 */
static void
tcopy_scan_report_lost(TcopyScanState *state)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_CURSOR_STATE),
			 errmsg("cannot continue the scan of foreign table \"%s\"",
					state->codec->relname),
			 errdetail("Its connection to the tserver was closed when the subtransaction that began the scan rolled back.")));
}

/*
 * A participant of a parallel scan whose connection found no such table on
 * the tserver, while the leader's did: the scan would miss the rows of the
 * parts it takes.
 */
static void
tcopy_scan_report_unknown(TcopyScanState *state)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("could not read foreign table \"%s\": the tserver table \"%s\" is gone",
					state->codec->relname, state->codec->options.table_name),
			 errdetail("A parallel worker found no such table on the tserver, where the leader of the scan found it.")));
}

/*
 * Take the next part of a parallel scan and start its scan: false when
 * none is left.  The connection is idle: the previous part was read to its
 * end.
 */
static bool
tcopy_scan_next_part(TcopyScanState *state)
{
	int			part = tcopy_parallel_take_part(state->shared);

	if (part < 0)
		return false;
	state->part = part;
	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	tcopy_scan_start(state);
	return true;
}

/*
 * The end of a scan that reads no table on the tserver (never written to,
 * or an empty key range): no rows, but an aggregate without GROUP BY has
 * its one group.
 */
static TupleTableSlot *
tcopy_scan_no_table(TcopyScanState *state, TupleTableSlot *slot)
{
	if (state->agg != NULL && !state->done &&
		tcopy_agg_scan_store_empty(state->agg, slot->tts_values, slot->tts_isnull))
	{
		state->done = true;
		return ExecStoreVirtualTuple(slot);
	}
	return slot;
}

/*
 * Return the next row in the slot, or an empty slot at the end.  The rows
 * come packed (ScanBatch.packed) and are decoded straight into the slot:
 * short text in place in the batch, which the client keeps until the next
 * fetch, other values that need memory in batch_cxt, reset only when the
 * next batch is fetched; so the row returned last stays valid until the
 * next call.  A scan whose aggregates the tserver computes gets groups
 * instead (ScanBatch.groups, agg_results.c).
 */
TupleTableSlot *
tcopyIterateForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	TcopyRelCodec *codec = state->codec;
	MemoryContext oldcxt;

	ExecClearTuple(slot);
	if (state->skip_all)
		return slot;
	if (state->conn.lost)
		tcopy_scan_report_lost(state);
	if (state->conn.client == NULL)
	{
		if (state->shared != NULL && tcopy_parallel_has_parts(state->shared))
			tcopy_scan_report_unknown(state);
		return tcopy_scan_no_table(state, slot);
	}
	if (!state->started)
	{
		if (state->shared == NULL)
			tcopy_scan_start(state);
		else if (!tcopy_scan_next_part(state))
			return slot;
	}

	while (state->batch == NULL ||
		   state->next_row >= (state->agg != NULL ? state->batch->n_groups : state->batch->n_packed))
	{
		CHECK_FOR_INTERRUPTS();
		if (state->done)
		{
			/* a parallel scan's participant reads parts until none is left */
			if (state->shared == NULL || !tcopy_scan_next_part(state))
				return slot;
			continue;
		}
		MemoryContextReset(state->batch_cxt);
		state->batch = NULL;
		state->next_row = 0;
		if (tc_client_scan_next(state->conn.client, &state->batch) < 0)
		{
			if (tcopy_scan_read_in_doubt(state) || tcopy_scan_reopen_table(state))
			{
				if (state->conn.client == NULL)
					return tcopy_scan_no_table(state, slot);
				continue;
			}
			tcopy_scan_report_error(state);
		}
		state->done = state->batch->done;
		state->pack_pos = state->batch->packed.data;
		state->remote_filtered += state->batch->filtered;
	}

	oldcxt = MemoryContextSwitchTo(state->batch_cxt);
	if (state->agg != NULL)
		tcopy_agg_scan_store(state->agg, state->batch->groups[state->next_row++],
							 slot->tts_values, slot->tts_isnull);
	else
	{
		uint8	   *row = state->pack_pos;

		tcopy_decode_packed_row(codec, state->proj, state->nproj, &state->pack_pos,
								state->batch->packed.data + state->batch->packed.len,
								slot->tts_values, slot->tts_isnull);
		state->next_row++;
		if (state->marks != NULL)
		{
			ExecStoreVirtualTuple(slot);
			tcopy_row_marks_note(state->marks, slot, row, state->pack_pos - row);
		}
	}
	MemoryContextSwitchTo(oldcxt);
	return state->marks != NULL ? slot : ExecStoreVirtualTuple(slot);
}

/*
 * Restart the scan.  A scan read to its end leaves the connection idle and
 * is simply sent again; one stopped midway still has batches coming, so
 * its connection is replaced.
 */
void
tcopyReScanForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if ((state->conn.client != NULL && state->started && !state->done) ||
		state->conn.lost)
	{
		tcopy_scan_close(state);
		tcopy_scan_connect(state);
		return;
	}
	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	if (state->batch_cxt != NULL)
		MemoryContextReset(state->batch_cxt);
}

/*
 * The leader of a parallel scan: plan its parts, for the DSM, on the
 * scan's connection (fdw_parallel.c).
 */
Size
tcopyEstimateDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	state->plan = tcopy_parallel_prepare(state->codec, state->estate, state->conn.client,
										 state->table_id, &state->range, pcxt->nworkers);
	return tcopy_parallel_size(state->plan);
}

/* The leader lays out the parts in the DSM, and reads them too. */
void
tcopyInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt, void *coordinate)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	tcopy_parallel_publish((TcopyParallelScan *) coordinate, state->plan);
	state->shared = (TcopyParallelScan *) coordinate;
}

/* A rescan: every part is read again (the participants' rescan reset them). */
void
tcopyReInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt, void *coordinate)
{
	tcopy_parallel_restart((TcopyParallelScan *) coordinate);
}

/* A worker reads the parts the leader laid out. */
void
tcopyInitializeWorkerForeignScan(ForeignScanState *node, shm_toc *toc, void *coordinate)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	state->shared = (TcopyParallelScan *) coordinate;
}

/*
 * End the scan: a connection that read the scan to its end (or never
 * started one) is idle, and kept for the next scan; else it is closed.
 */
void
tcopyEndForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if (state == NULL)
		return;
	if (state->marks != NULL)
		tcopy_row_marks_end(state->marks);
	if (state->conn.client != NULL && !state->conn.lost && (!state->started || state->done))
	{
		TcopyRelCodec *codec = state->codec;

		state->batch = NULL;
		tcopy_scan_client_release(&state->conn, codec->options.address, codec->options.token,
								  &codec->options.tls);
	}
	tcopy_scan_close(state);
}

/*
 * Show the remote table, the key range sent to the tserver and, in
 * VERBOSE, the tserver's address (kept out of plain EXPLAIN as it differs
 * between installations).
 */
void
tcopyExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TcopyRelCodec *codec = state->codec;

	ExplainPropertyText("Remote Table", codec->options.table_name, es);
	if (state->agg != NULL)
		tcopy_agg_scan_explain(state->agg, es);
	tcopy_explain_key_range(state->rel, &state->range, es);
	if (state->reverse)
		ExplainPropertyText("Remote Order", "key descending", es);
	if (state->limit > 0)
		ExplainPropertyInteger("Remote Limit", NULL, state->limit, es);
	tcopy_explain_filter(state->filter_quals, &node->ss.ps, NIL, es);
	/* per loop, as explain.c shows "Rows Removed by Filter" */
	if (es->analyze && state->filter != NULL && node->ss.ps.instrument != NULL &&
		(state->remote_filtered > 0 || es->format != EXPLAIN_FORMAT_TEXT))
		ExplainPropertyFloat("Rows Removed by Remote Filter", NULL,
							 node->ss.ps.instrument->nloops > 0 ?
							 state->remote_filtered / node->ss.ps.instrument->nloops : 0.0,
							 0, es);
	if (es->verbose)
	{
		/* the columns read, sent and decoded (a plain scan's projection) */
		if (state->agg == NULL && state->proj != NULL)
		{
			List	   *columns = NIL;

			for (int p = 0; p < state->nproj; p++)
				columns = lappend(columns, codec->columns[state->proj[p]].attname);
			ExplainPropertyList("Remote Columns", columns, es);
		}
		ExplainPropertyText("tserver", codec->options.address, es);
	}
}
