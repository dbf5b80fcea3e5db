/*
 * copy.c
 *		COPY ... FROM into a tcopy foreign table, in place of DoCopy (the
 *		utility hook, hook.c, hands it over): read by Postgres' own COPY
 *		reader and shipped to the tserver in batches.
 *
 * The hook takes a COPY FROM only when its target is a tcopy foreign table
 * (or a partitioned table of them, below) without triggers or stored
 * generated columns (those need the executor's
 * per-row machinery); everything else, and everything when tcopy.copy_hook
 * is off, goes to Postgres, whose COPY then writes through the FDW insert
 * path: slower, never different.  Since the hook replaces DoCopy, it repeats
 * DoCopy's checks for a COPY FROM a relation, in the same order and words:
 * server file and program roles, INSERT privilege on the copied columns,
 * row-level security, read-only transactions.  Rows then come from
 * BeginCopyFrom / NextCopyFrom, so formats, options, defaults, encoding
 * conversion, input functions (typmods, domains) and every error message
 * with its "COPY t, line N" context are Postgres'; the WHERE clause is
 * prepared as DoCopy prepares it.  Without a WHERE clause, when
 * tcopy.raw_fields is on, rows come from NextCopyFromRawFields instead and
 * copy_fields.c converts the fields as NextCopyFrom would.  Progress goes to pg_stat_progress_copy
 * as Postgres' COPY reports it.  Postgres 17/18's ON_ERROR, LOG_VERBOSITY
 * and REJECT_LIMIT, and tcopy's reject_table, are copy_bad_rows.c's: taken
 * out of the options before BeginCopyFrom, and with ON_ERROR ignore each
 * row is read under PG_TRY (copy_read_row_or_skip); FREEZE gets CopyFrom's
 * checks (check_copy_freeze).
 *
 * A COPY straight into a partition checks every row against the partition
 * constraint, as CopyFrom does for a target that is a partition itself
 * (foreign or not): with Postgres' own ExecPartitionCheck, after the WHERE
 * clause, so that the error, its DETAIL (which follows column privileges)
 * and its CONTEXT are Postgres'.  The check needs the row's Datums: such a
 * COPY reads through NextCopyFrom, not the raw fields.  A COPY into a
 * partitioned table whose leaves are all tcopy tables is taken too, and
 * each row routed to its partition's writer by copy_route.c.
 *
 * An input larger than tcopy.copy_parallel_threshold is parsed by parallel
 * workers (copy_parallel.c, docs/parallel.md), with the same rows, errors
 * and progress: copy_rows hands the opened COPY over before reading it, and
 * reads it itself only when the workers cannot take it (then through a
 * replay of what the leader read, when it read some to decide).
 */

#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/portal.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

/* settings, registered in tcopy.c */
bool		tcopy_raw_fields = true;	/* tcopy.raw_fields */
int			tcopy_copy_workers = 2;	/* tcopy.copy_workers */

/* DoCopy's role checks for COPY FROM a server file or program. */
static void
check_copy_source_privileges(const CopyStmt *stmt)
{
	if (stmt->filename == NULL)
		return;
	if (stmt->is_program)
	{
		if (!has_privs_of_role(GetUserId(), ROLE_PG_EXECUTE_SERVER_PROGRAM))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program"),
					 errhint("Anyone can COPY to stdout or from stdin. "
							 "psql's \\copy command also works for anyone.")));
	}
	else if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser or have privileges of the pg_read_server_files role to COPY from a file"),
				 errhint("Anyone can COPY to stdout or from stdin. "
						 "psql's \\copy command also works for anyone.")));
}

/*
 * Check INSERT on the copied columns and row-level security, and prepare
 * the WHERE clause, as DoCopy does.  Returns the implicit-AND qual list.
 */
static List *
prepare_copy_from(ParseState *pstate, const CopyStmt *stmt, Relation rel)
{
	ParseNamespaceItem *nsitem;
	RangeTblEntry *rte;
	Node	   *where = NULL;
	List	   *attnums;
	ListCell   *cur;

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock,
										   NULL, false, false);
	rte = nsitem->p_rte;
	rte->requiredPerms = ACL_INSERT;

	if (stmt->whereClause)
	{
		addNSItemToQuery(pstate, nsitem, false, true, true);
		where = transformExpr(pstate, stmt->whereClause, EXPR_KIND_COPY_WHERE);
		where = coerce_to_boolean(pstate, where, "WHERE");
		assign_expr_collations(pstate, where);
		where = eval_const_expressions(NULL, where);
		where = (Node *) canonicalize_qual((Expr *) where, false);
		where = (Node *) make_ands_implicit((Expr *) where);
	}

	attnums = CopyGetAttnums(RelationGetDescr(rel), rel, stmt->attlist);
	foreach(cur, attnums)
	{
		int			attno = lfirst_int(cur) - FirstLowInvalidHeapAttributeNumber;

		rte->insertedCols = bms_add_member(rte->insertedCols, attno);
	}
	ExecCheckRTPerms(pstate->p_rtable, true);

	if (check_enable_rls(rte->relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("COPY FROM not supported with row-level security"),
				 errhint("Use INSERT statements instead.")));

	if (XactReadOnly)
		PreventCommandIfReadOnly("COPY FROM");
	return (List *) where;
}

/*
 * Take tcopy's COPY option name (load_id, on_conflict) out of *options,
 * which are left for Postgres' reader: the option, or NULL when it is not
 * given.  Given twice, Postgres' own error.
 */
static DefElem *
copy_take_option(ParseState *pstate, List **options, const char *name)
{
	List	   *rest = NIL;
	DefElem    *found = NULL;
	ListCell   *lc;

	foreach(lc, *options)
	{
		DefElem    *def = lfirst_node(DefElem, lc);

		if (strcmp(def->defname, name) != 0)
			rest = lappend(rest, def);
		else if (found != NULL)
			errorConflictingDefElem(def, pstate);
		else
			found = def;
	}
	*options = rest;
	return found;
}

/*
 * CopyFrom's FREEZE checks, in its order and words.  Postgres 15 accepts
 * FREEZE for a foreign table that passes them (and 18 refuses every foreign
 * table); a tcopy table has no heap to freeze, so FREEZE changes nothing.
 * A tcopy table truncated in the current subtransaction passes too
 * (truncated.c): the load goes into an empty table, as after a heap
 * table's TRUNCATE.
 */
static void
check_copy_freeze(Relation rel)
{
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot perform COPY FREEZE on a partitioned table")));
	InvalidateCatalogSnapshot();
	if (!ThereAreNoPriorRegisteredSnapshots() || !ThereAreNoReadyPortals())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot perform COPY FREEZE because of prior transaction activity")));
	if (rel->rd_createSubid != GetCurrentSubTransactionId() &&
		rel->rd_newRelfilenodeSubid != GetCurrentSubTransactionId() &&
		!tcopy_truncated_in_subxact(RelationGetRelid(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot perform COPY FREEZE because the table was not created or truncated in the current subtransaction")));
}

/* What copy_read_row made of the next line. */
typedef enum CopyRowResult
{
	COPY_ROW_END,				/* no more input */
	COPY_ROW_READY,				/* in writer->row, to add */
	COPY_ROW_EXCLUDED			/* by the WHERE clause */
} CopyRowResult;

/* The state copy_read_row needs, set up by copy_rows. */
typedef struct CopyRowState
{
	CopyFromState cstate;
	TcopyFieldPlan *plan;		/* raw fields, or NULL: NextCopyFrom */
	TcopyRelCodec *codec;
	TupleTableSlot *slot;
	EState	   *estate;
	ExprState  *qual;
	ResultRelInfo *partition;	/* the target, when a partition */
	TcopyRoute *route;			/* the partitions, when partitioned */
	TcopyWriter *writer;		/* of the row read last, when routed */
	TcopyReader *reader;		/* tcopy's reader of plan's rows, or NULL */
} CopyRowState;

/* Read, convert and encode the next row into the writer's row. */
static inline CopyRowResult
copy_read_row(CopyRowState *state)
{
	ExprContext *econtext = GetPerTupleExprContext(state->estate);
	TupleTableSlot *slot = state->slot;

	if (state->route != NULL && state->plan != NULL)
	{
		/* fields to the wire row of the row's partition (copy_route.c) */
		if (!tcopy_read_fields(state->cstate, state->plan))
			return COPY_ROW_END;
		state->writer = tcopy_route_row(state->route, state->cstate, slot);
		return COPY_ROW_READY;
	}
	if (state->plan != NULL)
	{
		/* fields straight to the wire row (copy_fields.c) */
		if (!tcopy_next_row_fields(state->cstate, state->plan, &state->writer->row))
			return COPY_ROW_END;
		return COPY_ROW_READY;
	}
	ExecClearTuple(slot);
	if (!NextCopyFrom(state->cstate, econtext, slot->tts_values, slot->tts_isnull))
		return COPY_ROW_END;
	ExecStoreVirtualTuple(slot);
	if (state->qual != NULL)
	{
		econtext->ecxt_scantuple = slot;
		if (!ExecQual(state->qual, econtext))
			return COPY_ROW_EXCLUDED;
	}
	if (state->partition != NULL)
		ExecPartitionCheck(state->partition, slot, state->estate, true);
	if (state->route != NULL)
	{
		state->writer = tcopy_route_row(state->route, state->cstate, slot);
		return COPY_ROW_READY;
	}
	/* encoding may call send functions: per-tuple memory */
	tcopy_encode_row(state->codec, slot->tts_values, slot->tts_isnull,
					 &state->writer->row);
	return COPY_ROW_READY;
}

/*
 * copy_read_row under ON_ERROR ignore: a row whose error
 * tcopy_bad_row_skippable accepts is counted and skipped (*skipped set),
 * any other error goes on.  The per-tuple memory context holds the row and
 * the error's copy, and is reset by the caller for the next row.
 */
static pg_noinline CopyRowResult
copy_read_row_or_skip(CopyRowState *state, TcopyBadRows *bad_rows, bool *skipped)
{
	MemoryContext rowcontext = CurrentMemoryContext;
	CopyFromState cstate = state->cstate;
	ErrorData  *volatile edata = NULL;
	volatile CopyRowResult result = COPY_ROW_END;
	const char *attname;
	const char *attval;

	*skipped = false;
	PG_TRY();
	{
		result = copy_read_row(state);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(rowcontext);
		edata = CopyErrorData();
		if (!tcopy_bad_row_skippable(bad_rows, cstate, edata))
			PG_RE_THROW();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata == NULL)
		return result;

	/* a field's error names its column; the row's NOT NULL, the codec's */
	attname = cstate->cur_attname ? cstate->cur_attname : edata->column_name;
	attval = cstate->cur_attname ? cstate->cur_attval : NULL;
	*skipped = true;
	if (state->reader != NULL)
		tcopy_reader_line_buf(state->reader);	/* reject_table's raw_line */
	/* with the field still named: REJECT_LIMIT's CONTEXT is Postgres 18's */
	tcopy_bad_row_skip(bad_rows, cstate, attname, attval, edata);
	cstate->cur_attname = NULL;
	cstate->cur_attval = NULL;
	return COPY_ROW_EXCLUDED;
}

/*
 * The writer of a COPY into rel, not partitioned (a partition's comes with
 * routing), in state->writer, and its codec.
 */
static TcopyRelCodec *
copy_begin_writer(ParseState *pstate, Relation rel, const TcopyOnConflict *on_conflict,
				  CopyRowState *state)
{
	TcopyRelCodec *codec = tcopy_rel_codec(rel, GetUserId());

	if (on_conflict != NULL)
		codec->options.on_conflict = *on_conflict;
	/* prepare_copy_from's entry: the columns copied */
	tcopy_codec_set_inserted_cols(codec, InvalidOid,
								  linitial_node(RangeTblEntry, pstate->p_rtable)->insertedCols);
	state->writer = tcopy_writer_begin(codec);
	/* SERIALIZABLE: the write, to Postgres' SSI (partitions: their writers) */
	tcopy_ssi_write(rel);
	return codec;
}

/*
 * Set up state to read the rows of a serial COPY into rel: routing for a
 * partitioned table, the partition's ResultRelInfo for a partition, raw
 * fields where no WHERE clause needs the whole row, the WHERE clause, the
 * slot.
 */
static void
copy_prepare_rows(CopyRowState *state, Relation rel, EState *estate, List *where,
				  const TcopyOnConflict *on_conflict, TcopyRelCodec *codec)
{
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/* the partitions' codecs and writers come with routing */
		state->route = tcopy_route_begin(rel, estate, state->cstate,
										 where == NIL && tcopy_raw_fields, on_conflict);
		state->plan = tcopy_route_field_plan(state->route);
	}
	else if (rel->rd_rel->relispartition)
	{
		state->partition = makeNode(ResultRelInfo);
		InitResultRelInfo(state->partition, rel, 1, NULL, 0);
	}
	else if (where == NIL && tcopy_raw_fields)
		state->plan = tcopy_field_plan(state->cstate, codec);
	if (where != NIL)
		state->qual = ExecPrepareQual(where, estate);
	state->codec = codec;
	state->estate = estate;
	state->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
}

/*
 * Read every row of state's COPY and add it to its writer, with the
 * progress counters.  Returns the rows added.
 */
static uint64
copy_read_rows(CopyRowState *state, TcopyBadRows *bad_rows)
{
	EState	   *estate = state->estate;
	ErrorContextCallback errcallback;
	MemoryContext oldcontext = CurrentMemoryContext;
	uint64		processed = 0;
	uint64		excluded = 0;	/* by the WHERE clause or skipped */

	/* errors while reading a row carry "COPY t, line N" */
	errcallback.callback = CopyFromErrorCallback;
	errcallback.arg = (void *) state->cstate;
	if (state->reader != NULL)
	{
		errcallback.callback = tcopy_reader_error_callback;
		errcallback.arg = (void *) state->reader;
	}
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	for (;;)
	{
		CopyRowResult result;
		bool		skipped = false;

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
		/* PG_TRY only when asked for: other COPYs pay nothing */
		if (unlikely(bad_rows->ignore))
			result = copy_read_row_or_skip(state, bad_rows, &skipped);
		else
			result = copy_read_row(state);
		if (result == COPY_ROW_END)
			break;
		if (result == COPY_ROW_EXCLUDED)
		{
			/* pg_stat_progress_copy has no tuples_skipped before 17 */
			pgstat_progress_update_param(PROGRESS_COPY_TUPLES_EXCLUDED, ++excluded);
			continue;
		}
		/* the tserver's errors are never skipped: outside PG_TRY */
		state->writer->line = state->cstate->cur_lineno;	/* a duplicate's CONTEXT */
		tcopy_writer_add_row(state->writer);
		pgstat_progress_update_param(PROGRESS_COPY_TUPLES_PROCESSED, ++processed);
	}
	MemoryContextSwitchTo(oldcontext);
	error_context_stack = errcallback.previous;
	/*
	 * A cancel can end the input: pg_cancel_backend signals the backend's
	 * process group, so a COPY FROM PROGRAM's program dies of the same
	 * SIGINT, and its EOF comes before the next row's check.  Report the
	 * cancel, not the program's failure, and ship nothing more.
	 */
	CHECK_FOR_INTERRUPTS();
	return processed;
}

/*
 * Read every row with Postgres' COPY reader and hand it to a writer.
 * Returns the number of rows loaded (those the WHERE clause kept, not
 * skipped by ON_ERROR ignore).
 */
static uint64
copy_rows(ParseState *pstate, const CopyStmt *stmt, Relation rel, List *where,
		  const TcopyOnConflict *on_conflict, int workers)
{
	CopyFromState source = NULL;	/* read by state.cstate's replay */
	TcopyRelCodec *codec = NULL;
	CopyRowState state = {0};
	TcopyBadRows bad_rows;
	List	   *options;
	EState	   *estate = CreateExecutorState();
	uint64		processed = 0;

	/* options Postgres 15 does not know leave the list (copy_bad_rows.c) */
	options = tcopy_bad_rows_options(pstate, stmt->options, &bad_rows);
	state.cstate = BeginCopyFrom(pstate, rel, (Node *) where, stmt->filename,
								 stmt->is_program, NULL, stmt->attlist, options);
	if (state.cstate->opts.freeze)
		check_copy_freeze(rel);
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE || rel->rd_rel->relispartition)
		/* the partitions' writers, the check's DETAIL: the range table */
		ExecInitRangeTable(estate, pstate->p_rtable);
	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		codec = copy_begin_writer(pstate, rel, on_conflict, &state);
	if (!bad_rows.ignore)
	{
		CopyFromState replay = NULL;

		/* a partitioned table's partitions get writers there */
		switch (tcopy_copy_parallel(pstate, rel, state.cstate, options, stmt->attlist,
									where, state.writer, on_conflict, workers,
									&replay, &processed))
		{
			case TCOPY_PARALLEL_DONE:
				if (state.writer != NULL)
				{
					tcopy_writer_finish(state.writer);
					tcopy_writer_free(state.writer);
				}
				EndCopyFrom(state.cstate);
				FreeExecutorState(estate);
				return processed;
			case TCOPY_PARALLEL_SERIAL:
				source = state.cstate;
				state.cstate = replay;
				break;
			case TCOPY_PARALLEL_NOT_TRIED:
				break;
		}
	}
	else
		ereport(DEBUG1,
				(errmsg_internal("tcopy: COPY %s parsed by the backend alone: ON_ERROR ignore",
								 RelationGetRelationName(rel))));
	if (where == NIL && tcopy_raw_fields && tcopy_fast_reader &&
		!state.cstate->opts.binary && state.cstate->copy_src != COPY_CALLBACK)
	{
		/* tcopy's reader reads a data source callback: the replay's */
		source = state.cstate;
		state.cstate = tcopy_source_replay(pstate, rel, source, stmt->attlist, options,
										   NULL, 0);
	}
	copy_prepare_rows(&state, rel, estate, where, on_conflict, codec);
	if (state.plan != NULL)
		state.reader = tcopy_field_plan_reader(state.plan, state.cstate, tcopy_source_unread);
	if (bad_rows.ignore)
		tcopy_bad_rows_begin(&bad_rows, rel);
	processed = copy_read_rows(&state, &bad_rows);

	if (state.route != NULL)
		tcopy_route_end(state.route);
	else
	{
		tcopy_writer_finish(state.writer);
		tcopy_writer_free(state.writer);
	}
	tcopy_bad_rows_end(&bad_rows);
	ExecDropSingleTupleTableSlot(state.slot);
	EndCopyFrom(state.cstate);
	if (source != NULL)
	{
		/* after "\.", the client's data to its end, as Postgres' reader */
		tcopy_source_drain(source);
		EndCopyFrom(source);
	}
	FreeExecutorState(estate);
	return processed;
}

/*
 * Read the COPY's input to its end and load nothing: a labelled load that
 * was published already.  A COPY FROM STDIN must consume what the client
 * sends; a file or a program is not even opened.
 */
static void
skip_rows(ParseState *pstate, const CopyStmt *stmt, Relation rel)
{
	CopyFromState cstate;
	TupleDesc	desc = RelationGetDescr(rel);
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	ExprContext *econtext;
	EState	   *estate;

	if (stmt->filename != NULL)
		return;
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, NULL, stmt->attlist, stmt->options);
	for (;;)
	{
		char	  **fields;
		int			nfields;

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		if (cstate->opts.binary ?
			!NextCopyFrom(cstate, econtext, values, nulls) :
			!NextCopyFromRawFields(cstate, &fields, &nfields))
			break;
	}
	EndCopyFrom(cstate);
	FreeExecutorState(estate);
}

/*
 * COPY FROM into a tcopy table, in place of DoCopy; false when the
 * statement is not one the hook takes (see the file comment).
 */
bool
tcopy_copy_from(const CopyStmt *stmt, const char *query_string,
				QueryEnvironment *query_env, uint64 *processed)
{
	Oid			relid;
	Relation	rel;
	ParseState *pstate;
	List	   *where;
	CopyStmt	copy;
	DefElem    *load_id_def;
	DefElem    *on_conflict_def;
	DefElem    *workers_def;
	int			workers;
	char	   *load_id = NULL;
	TcopyOnConflict on_conflict = TCOPY_ON_CONFLICT_ERROR;	/* when given */

	if (!stmt->is_from || stmt->relation == NULL)
		return false;
	/* resolve and lock once, so that the relation checked is the one loaded */
	relid = RangeVarGetRelid(stmt->relation, RowExclusiveLock, true);
	if (!tcopy_relation_is_tcopy_table(relid) &&
		!(get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE && tcopy_route_takes(relid)))
	{
		if (OidIsValid(relid))
			UnlockRelationOid(relid, RowExclusiveLock);
		return false;
	}

	/* what standard_ProcessUtility checks before DoCopy */
	if (XactReadOnly || IsInParallelMode())
	{
		PreventCommandIfParallelMode("COPY FROM");
		PreventCommandDuringRecovery("COPY FROM");
	}
	check_copy_source_privileges(stmt);
	rel = table_open(relid, NoLock);
	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = query_string;
	pstate->p_queryEnv = query_env;
	/* tcopy's own options, which Postgres' COPY reader does not know */
	copy = *stmt;
	load_id_def = copy_take_option(pstate, &copy.options, "load_id");
	on_conflict_def = copy_take_option(pstate, &copy.options, "on_conflict");
	workers_def = copy_take_option(pstate, &copy.options, "workers");
	workers = workers_def != NULL ? tcopy_copy_workers_of(workers_def) : tcopy_copy_workers;
	if (load_id_def != NULL)
	{
		load_id = defGetString(load_id_def);
		tcopy_check_label(load_id);
	}
	if (on_conflict_def != NULL)
		on_conflict = tcopy_parse_on_conflict(defGetString(on_conflict_def));
	if (load_id != NULL && rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("COPY option load_id is not supported for partitioned table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("A load label is recorded per tcopy table."),
				 errhint("Load each partition with a label of its own.")));
	if (!tcopy_relation_is_accelerable(rel))
	{
		if (load_id != NULL || on_conflict_def != NULL || workers_def != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("COPY option %s is not supported for foreign table \"%s\"",
							load_id != NULL ? "load_id" :
							on_conflict_def != NULL ? "on_conflict" : "workers",
							RelationGetRelationName(rel)),
					 errdetail("A tcopy table with triggers or stored generated columns is loaded by Postgres' COPY, row by row.")));
		free_parsestate(pstate);
		table_close(rel, RowExclusiveLock);
		return false;
	}
	where = prepare_copy_from(pstate, &copy, rel);
	if (load_id != NULL && !tcopy_load_id_claim(rel, load_id))
	{
		skip_rows(pstate, &copy, rel);
		*processed = 0;
	}
	else
		*processed = copy_rows(pstate, &copy, rel, where,
							   on_conflict_def != NULL ? &on_conflict : NULL, workers);
	free_parsestate(pstate);
	table_close(rel, NoLock);
	return true;
}
