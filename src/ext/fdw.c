/*
 * fdw.c
 *		The callbacks of the tcopy foreign-data wrapper: scans, inserts and
 *		TRUNCATE of tables whose rows live on a tserver.
 *
 * Scans open a connection of their own (tcopy_connect), fetch only the
 * columns the query needs and evaluate every qual locally.  When the table
 * has a single integer key column, comparisons of that column with
 * constants also bound the scan's key range on the tserver; the quals are
 * still checked locally, so a bound only ever saves work.  The key columns
 * are known only from the table's options, which are resolved at execution
 * (they need the user mapping), so the planner passes every candidate
 * comparison down and BeginForeignScan keeps those on the key.
 *
 * Inserts go through the writer shared with the COPY hook: rows are sent in
 * batches on the transaction's write session and become visible when the
 * transaction commits.  Until then a scan of the table would silently miss
 * them, so reading a table the transaction wrote to is an error.
 *
 * A connection is malloc'ed by the client library; a reset callback on the
 * scan's memory context closes it when a query fails, as EndForeignScan is
 * then not called.
 */
#include "tcopy.h"

#include "access/xact.h"

#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* rows assumed for a table never analyzed */
#define TCOPY_DEFAULT_ROWS		1000.0
/* planner costs: a scan's fixed cost (connecting), then per row fetched */
#define TCOPY_STARTUP_COST		10.0
#define TCOPY_PER_ROW_COST		0.01

/*
 * Largest ri_BatchSize asked of the executor: it holds that many slot copies
 * before calling ExecForeignBatchInsert, and the writer batches rows for
 * the wire by itself, so a larger executor batch only costs memory.
 */
#define TCOPY_MAX_INSERT_BATCH	1000

/* Indexes in ForeignScan.fdw_private. */
enum TcopyScanPrivate
{
	TCOPY_PRIV_ALL_COLUMNS,		/* Boolean: every column is needed */
	TCOPY_PRIV_ATTNUMS,			/* IntList: attnums needed, ascending */
	TCOPY_PRIV_BOUNDS			/* List of (Integer attnum, Integer btree
								 * strategy, Const int2/4/8): the quals
								 * "attnum strategy const" */
};

/* Indexes in one TCOPY_PRIV_BOUNDS item. */
enum TcopyBoundPrivate
{
	TCOPY_BOUND_ATTNUM,
	TCOPY_BOUND_STRATEGY,
	TCOPY_BOUND_VALUE
};

/* One end of a key range on the sole integer key column. */
typedef struct TcopyKeyBound
{
	bool		present;
	bool		inclusive;
	int64		value;
} TcopyKeyBound;

typedef struct TcopyScanState
{
	TcopyRelCodec *codec;
	TcClient   *client;			/* NULL: the scan returns no rows */
	uint32		table_id;
	int		   *proj;			/* [nproj] wire columns fetched, ascending */
	int			nproj;
	AttrNumber	key_attnum;		/* bounded column; 0 when no bound */
	TcopyKeyBound lower;
	TcopyKeyBound upper;
	bool		empty_range;	/* bounds contradict: no rows */
	bool		started;		/* Scan request sent */
	bool		done;			/* the batch marked done has been fetched */
	Tcopy__ScanBatch *batch;	/* in the client's arena until the next fetch */
	size_t		next_row;		/* index in batch->rows */
	MemoryContext batch_cxt;	/* decoded values of the current batch */
	MemoryContextCallback close_callback;
} TcopyScanState;

typedef struct TcopyModifyState
{
	TcopyRelCodec *codec;
	TcopyWriter *writer;
	MemoryContext temp_cxt;		/* reset after each row handed to the writer */
} TcopyModifyState;

PG_FUNCTION_INFO_V1(tcopy_fdw_handler);

/*
 * Estimate the size of the scan's result without asking the tserver: the
 * row count ANALYZE left, else a default, times the quals' selectivity.
 */
static void
tcopyGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	double		ntuples;
	Selectivity sel;

	ntuples = baserel->tuples > 0 ? baserel->tuples : TCOPY_DEFAULT_ROWS;
	sel = clauselist_selectivity(root, baserel->baserestrictinfo, 0,
								 JOIN_INNER, NULL);
	baserel->rows = clamp_row_est(ntuples * sel);
}

/* Offer the one way to scan: a full, unparameterized scan. */
static void
tcopyGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Cost		startup_cost = TCOPY_STARTUP_COST;
	Cost		total_cost = startup_cost + baserel->rows * TCOPY_PER_ROW_COST;

	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup_cost, total_cost,
									 NIL, NULL, NULL, NIL));
}

/*
 * If clause compares a column of baserel of an integer type with a non-null
 * integer constant by a btree operator, append (attnum, strategy, const) to
 * *bounds, the strategy read as "column strategy constant".
 */
static void
tcopy_collect_bound(RelOptInfo *baserel, Expr *clause, List **bounds)
{
	OpExpr	   *op;
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Const	   *value;
	int			strategy;

	if (!IsA(clause, OpExpr))
		return;
	op = (OpExpr *) clause;
	if (list_length(op->args) != 2)
		return;
	left = linitial(op->args);
	right = lsecond(op->args);

	/* membership in integer_ops makes both operands int2, int4 or int8 */
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (strategy == InvalidStrategy)
		return;
	if (IsA(left, Var) && IsA(right, Const))
	{
		var = (Var *) left;
		value = (Const *) right;
	}
	else if (IsA(left, Const) && IsA(right, Var))
	{
		var = (Var *) right;
		value = (Const *) left;
		/* "const < column" is "column > const" */
		strategy = BTMaxStrategyNumber + 1 - strategy;
	}
	else
		return;

	if (var->varno != baserel->relid || var->varlevelsup != 0 ||
		var->varattno <= 0 || value->constisnull)
		return;
	if (value->consttype != INT2OID && value->consttype != INT4OID &&
		value->consttype != INT8OID)
		return;

	*bounds = lappend(*bounds, list_make3(makeInteger(var->varattno),
										  makeInteger(strategy),
										  copyObject(value)));
}

/*
 * Build the ForeignScan: every qual is evaluated locally; fdw_private says
 * which columns to fetch and which comparisons may bound the key range.
 */
static ForeignScan *
tcopyGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
					ForeignPath *best_path, List *tlist, List *scan_clauses,
					Plan *outer_plan)
{
	Bitmapset  *attrs = NULL;
	bool		all_columns = false;
	List	   *attnums = NIL;
	List	   *bounds = NIL;
	List	   *fdw_private;
	ListCell   *lc;
	int			member;

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		pull_varattnos((Node *) rinfo->clause, baserel->relid, &attrs);
		if (!rinfo->pseudoconstant)
			tcopy_collect_bound(baserel, rinfo->clause, &bounds);
	}

	/* a whole-row reference or a system column: fetch every column */
	member = -1;
	while ((member = bms_next_member(attrs, member)) >= 0)
	{
		AttrNumber	attnum = member + FirstLowInvalidHeapAttributeNumber;

		if (attnum <= 0)
		{
			all_columns = true;
			break;
		}
		attnums = lappend_int(attnums, attnum);
	}
	if (all_columns)
	{
		list_free(attnums);
		attnums = NIL;
	}

	fdw_private = list_make3(makeBoolean(all_columns), attnums, bounds);
	scan_clauses = extract_actual_clauses(scan_clauses, false);
	return make_foreignscan(tlist, scan_clauses, baserel->relid,
							NIL, fdw_private, NIL, NIL, outer_plan);
}

/*
 * Choose the wire columns to fetch.  A scan always projects at least one
 * column, as an empty projection asks for all of them: for count(*), the
 * first key column, else the first fixed-size one.
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
		for (int c = 0; c < codec->ncolumns; c++)
			state->proj[state->nproj++] = c;
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

		if (codec->schema->n_key > 0)
			column = (int) codec->schema->key[0];
		else
		{
			for (int c = 0; c < codec->ncolumns; c++)
			{
				if (codec->columns[c].kind != TCOPY__KIND__KIND_BYTES)
				{
					column = c;
					break;
				}
			}
		}
		state->proj[state->nproj++] = column;
	}
}

/* Whether bound (value, inclusive) is tighter than the current one. */
static bool
tcopy_bound_tighter(const TcopyKeyBound *current, int64 value, bool inclusive,
					bool is_lower)
{
	if (!current->present)
		return true;
	if (value != current->value)
		return is_lower ? value > current->value : value < current->value;
	return !inclusive && current->inclusive;
}

/* Tighten one end of the range to (value, inclusive). */
static void
tcopy_bound_apply(TcopyKeyBound *bound, int64 value, bool inclusive, bool is_lower)
{
	if (tcopy_bound_tighter(bound, value, inclusive, is_lower))
	{
		bound->present = true;
		bound->value = value;
		bound->inclusive = inclusive;
	}
}

/* The int64 value of an int2, int4 or int8 constant. */
static int64
tcopy_const_int64(const Const *value)
{
	switch (value->consttype)
	{
		case INT2OID:
			return DatumGetInt16(value->constvalue);
		case INT4OID:
			return DatumGetInt32(value->constvalue);
		case INT8OID:
			return DatumGetInt64(value->constvalue);
	}
	elog(ERROR, "unexpected type %u of a key bound", value->consttype);
	return 0;					/* keep compiler quiet */
}

/*
 * Keep the planner's candidate bounds that fall on the table's key, when it
 * is a single column stored as an integer, and combine them into a range.
 */
static void
tcopy_scan_choose_range(TcopyScanState *state, List *bounds)
{
	TcopyRelCodec *codec = state->codec;
	AttrNumber	key_attnum;
	int			column;
	ListCell   *lc;

	if (list_length(codec->options.key_attnums) != 1 || bounds == NIL)
		return;
	key_attnum = (AttrNumber) linitial_int(codec->options.key_attnums);
	column = codec->column_of_att[key_attnum - 1];
	if (column < 0 || codec->columns[column].kind != TCOPY__KIND__KIND_INT ||
		(codec->columns[column].conv != TCOPY_CONV_INT2 &&
		 codec->columns[column].conv != TCOPY_CONV_INT4 &&
		 codec->columns[column].conv != TCOPY_CONV_INT8))
		return;

	foreach(lc, bounds)
	{
		List	   *bound = lfirst_node(List, lc);
		int64		value;

		if (intVal(list_nth(bound, TCOPY_BOUND_ATTNUM)) != key_attnum)
			continue;
		value = tcopy_const_int64(list_nth_node(Const, bound, TCOPY_BOUND_VALUE));
		switch (intVal(list_nth(bound, TCOPY_BOUND_STRATEGY)))
		{
			case BTLessStrategyNumber:
				tcopy_bound_apply(&state->upper, value, false, false);
				break;
			case BTLessEqualStrategyNumber:
				tcopy_bound_apply(&state->upper, value, true, false);
				break;
			case BTEqualStrategyNumber:
				tcopy_bound_apply(&state->lower, value, true, true);
				tcopy_bound_apply(&state->upper, value, true, false);
				break;
			case BTGreaterEqualStrategyNumber:
				tcopy_bound_apply(&state->lower, value, true, true);
				break;
			case BTGreaterStrategyNumber:
				tcopy_bound_apply(&state->lower, value, false, true);
				break;
		}
	}
	if (state->lower.present || state->upper.present)
		state->key_attnum = key_attnum;
	if (state->lower.present && state->upper.present &&
		(state->lower.value > state->upper.value ||
		 (state->lower.value == state->upper.value &&
		  (!state->lower.inclusive || !state->upper.inclusive))))
		state->empty_range = true;
}

/* Close the scan's connection, if any; also run when a query fails. */
static void
tcopy_scan_close(void *arg)
{
	TcopyScanState *state = (TcopyScanState *) arg;
	TcClient   *client = state->client;

	state->client = NULL;
	state->batch = NULL;
	if (client != NULL)
		tcopy_disconnect(client);
}

/*
 * Connect and open the table for reading.  A table the tserver does not
 * know was never written to: the scan then returns no rows.
 */
static void
tcopy_scan_connect(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;
	TcClient   *client;

	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	if (tcopy_address_is_null(codec->options.address) || state->empty_range)
		return;

	client = tcopy_connect(codec);
	if (client == NULL)
		return;
	state->client = client;
	if (tc_client_open_table(client, codec->options.table_name, codec->schema,
							 false, &state->table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
		{
			tcopy_scan_close(state);
			return;
		}
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not open table \"%s\" for reading",
										   codec->options.table_name));
	}
}

/*
 * The user whose mapping reaches the tserver for range table entry rti:
 * the one the executor checks permissions as (a view's owner, for a table
 * read or written through the view), else the current user; as
 * postgres_fdw does.
 */
static Oid
tcopy_rte_user(EState *estate, Index rti)
{
	RangeTblEntry *rte;

	if (rti == 0)
		return GetUserId();
	rte = exec_rt_fetch(rti, estate);
	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

/*
 * The range table entry of a result relation; a partition that tuple
 * routing opened has none of its own, and takes its root's.
 */
static Index
tcopy_result_rti(ResultRelInfo *resultRelInfo)
{
	if (resultRelInfo->ri_RangeTableIndex == 0 && resultRelInfo->ri_RootResultRelInfo != NULL)
		return resultRelInfo->ri_RootResultRelInfo->ri_RangeTableIndex;
	return resultRelInfo->ri_RangeTableIndex;
}

/*
 * Set up the scan; a SELECT in the transaction that wrote to the table is
 * refused, as those rows are not visible before the commit.
 */
static void
tcopyBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	TcopyScanState *state;

	state = palloc0(sizeof(TcopyScanState));
	node->fdw_state = state;
	state->codec = tcopy_rel_codec(rel, tcopy_rte_user(node->ss.ps.state, fsplan->scan.scanrelid));
	tcopy_scan_choose_columns(state,
							  boolVal(list_nth(fsplan->fdw_private, TCOPY_PRIV_ALL_COLUMNS)),
							  (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_ATTNUMS));
	tcopy_scan_choose_range(state,
							(List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_BOUNDS));

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	if (tcopy_xact_wrote_relation(RelationGetRelid(rel)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that wrote to it",
						RelationGetRelationName(rel)),
				 errdetail("Rows written by tcopy become visible when the transaction commits.")));

	state->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "tcopy scan batch",
											 ALLOCSET_DEFAULT_SIZES);
	state->close_callback.func = tcopy_scan_close;
	state->close_callback.arg = state;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &state->close_callback);

	tcopy_scan_connect(state);
}

/* A key bound as the wire carries it: the key column's value. */
static Tcopy__KeyBound *
tcopy_make_key_bound(const TcopyKeyBound *bound)
{
	Tcopy__KeyBound *msg = palloc(sizeof(Tcopy__KeyBound));
	Tcopy__Row *key = palloc(sizeof(Tcopy__Row));

	tcopy__key_bound__init(msg);
	tcopy__row__init(key);
	key->n_ints = 1;
	key->ints = palloc(sizeof(int64_t));
	key->ints[0] = bound->value;
	msg->key = key;
	msg->inclusive = bound->inclusive;
	return msg;
}

/* Send the Scan request: the projection and the key range. */
static void
tcopy_scan_start(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	uint32_t   *columns;

	columns = palloc(sizeof(uint32_t) * Max(state->nproj, 1));
	for (int p = 0; p < state->nproj; p++)
		columns[p] = (uint32_t) state->proj[p];
	request.table_id = state->table_id;
	request.n_columns = state->nproj;
	request.columns = columns;
	if (state->lower.present)
		request.lower = tcopy_make_key_bound(&state->lower);
	if (state->upper.present)
		request.upper = tcopy_make_key_bound(&state->upper);

	if (tc_client_scan_start(state->client, &request) < 0)
		tcopy_report_client_error(state->client, codec->options.address,
								  psprintf("could not scan table \"%s\"",
										   codec->options.table_name));
	state->started = true;
}

/*
 * Return the next row in the slot, or an empty slot at the end.  The values
 * of a batch's rows live in batch_cxt, reset only when the next batch is
 * fetched, so the row returned last stays valid until the next call.
 */
static TupleTableSlot *
tcopyIterateForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	TcopyRelCodec *codec = state->codec;
	MemoryContext oldcxt;

	ExecClearTuple(slot);
	if (state->client == NULL)
		return slot;
	if (!state->started)
		tcopy_scan_start(state);

	while (state->batch == NULL || state->next_row >= state->batch->n_rows)
	{
		CHECK_FOR_INTERRUPTS();
		if (state->done)
			return slot;
		MemoryContextReset(state->batch_cxt);
		state->batch = NULL;
		state->next_row = 0;
		if (tc_client_scan_next(state->client, &state->batch) < 0)
			tcopy_report_client_error(state->client, codec->options.address,
									  psprintf("could not scan table \"%s\"",
											   codec->options.table_name));
		state->done = state->batch->done;
	}

	oldcxt = MemoryContextSwitchTo(state->batch_cxt);
	tcopy_decode_row(codec, state->proj, state->nproj,
					 state->batch->rows[state->next_row++],
					 slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(oldcxt);
	return ExecStoreVirtualTuple(slot);
}

/*
 * Restart the scan.  A scan read to its end leaves the connection idle and
 * is simply sent again; one stopped midway still has batches coming, so
 * its connection is replaced.
 */
static void
tcopyReScanForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if (state->client != NULL && state->started && !state->done)
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

/* Close the scan's connection. */
static void
tcopyEndForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if (state != NULL)
		tcopy_scan_close(state);
}

/*
 * Show the remote table, the key range sent to the tserver and, in
 * VERBOSE, the tserver's address (kept out of plain EXPLAIN as it differs
 * between installations).
 */
static void
tcopyExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TcopyRelCodec *codec = state->codec;

	ExplainPropertyText("Remote Table", codec->options.table_name, es);
	if (state->key_attnum != 0)
	{
		Relation	rel = node->ss.ss_currentRelation;
		const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel),
												 state->key_attnum - 1)->attname);
		StringInfoData range;

		initStringInfo(&range);
		if (state->lower.present)
			appendStringInfo(&range, "%s %s " INT64_FORMAT, quote_identifier(name),
							 state->lower.inclusive ? ">=" : ">", state->lower.value);
		if (state->upper.present)
			appendStringInfo(&range, "%s%s %s " INT64_FORMAT,
							 state->lower.present ? " AND " : "",
							 quote_identifier(name),
							 state->upper.inclusive ? "<=" : "<", state->upper.value);
		ExplainPropertyText("Key Range", range.data, es);
	}
	if (es->verbose)
		ExplainPropertyText("tserver", codec->options.address, es);
}

/* ANALYZE is not supported: the planner assumes a default row count. */
static bool
tcopyAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						 BlockNumber *totalpages)
{
	return false;
}

/* Rows can be inserted; UPDATE and DELETE Postgres refuses itself. */
static int
tcopyIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT);
}

/* Start writing rows to the table: its codec and a writer. */
static TcopyModifyState *
tcopy_modify_begin(EState *estate, ResultRelInfo *resultRelInfo)
{
	TcopyModifyState *fmstate = palloc0(sizeof(TcopyModifyState));

	fmstate->codec = tcopy_rel_codec(resultRelInfo->ri_RelationDesc,
									 tcopy_rte_user(estate, tcopy_result_rti(resultRelInfo)));
	fmstate->writer = tcopy_writer_begin(fmstate->codec);
	fmstate->temp_cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "tcopy insert temporary data",
											  ALLOCSET_SMALL_SIZES);
	return fmstate;
}

/* Hand one row to the writer; what encoding it allocates is freed after. */
static void
tcopy_modify_add(TcopyModifyState *fmstate, TupleTableSlot *slot)
{
	MemoryContext oldcxt;

	slot_getallattrs(slot);
	oldcxt = MemoryContextSwitchTo(fmstate->temp_cxt);
	tcopy_writer_add(fmstate->writer, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(fmstate->temp_cxt);
}

/* Send the rows still batched; they commit with the transaction. */
static void
tcopy_modify_end(TcopyModifyState *fmstate)
{
	if (fmstate == NULL)
		return;
	tcopy_writer_finish(fmstate->writer);
	tcopy_writer_free(fmstate->writer);
	MemoryContextDelete(fmstate->temp_cxt);
}

/* INSERT needs no plan-time state. */
static List *
tcopyPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
					   Index resultRelation, int subplan_index)
{
	/* rows with equal keys overwrite on the tserver: nothing can be skipped */
	if (plan->onConflictAction != ONCONFLICT_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT is not supported on tcopy foreign tables"),
				 errdetail("A row whose key is already stored replaces it.")));
	return NIL;
}

/* Begin an INSERT; nothing is set up for EXPLAIN without ANALYZE. */
static void
tcopyBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo,
						List *fdw_private, int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	resultRelInfo->ri_FdwState = tcopy_modify_begin(mtstate->ps.state, resultRelInfo);
}

/* Begin a COPY through the insert path, or inserts routed to a partition. */
static void
tcopyBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo)
{
	resultRelInfo->ri_FdwState = tcopy_modify_begin(mtstate->ps.state, resultRelInfo);
}

/* Insert one row: the slot comes back as is, for RETURNING. */
static TupleTableSlot *
tcopyExecForeignInsert(EState *estate, ResultRelInfo *resultRelInfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	tcopy_modify_add((TcopyModifyState *) resultRelInfo->ri_FdwState, slot);
	return slot;
}

/* Insert *numSlots rows, all of which succeed or the statement fails. */
static TupleTableSlot **
tcopyExecForeignBatchInsert(EState *estate, ResultRelInfo *resultRelInfo,
							TupleTableSlot **slots, TupleTableSlot **planSlots,
							int *numSlots)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;

	for (int i = 0; i < *numSlots; i++)
		tcopy_modify_add(fmstate, slots[i]);
	return slots;
}

/*
 * Rows the executor may collect per ExecForeignBatchInsert: the table's
 * batch size, capped, and 1 where postgres_fdw disables batching
 * (RETURNING, WITH CHECK OPTION, row INSERT triggers, which may look at
 * the rows inserted so far).  In EXPLAIN without ANALYZE there is no state
 * and the value is never used: the default batch size stands in.
 */
static int
tcopyGetForeignModifyBatchSize(ResultRelInfo *resultRelInfo)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;
	int			batch_size;

	if (resultRelInfo->ri_projectReturning != NULL ||
		resultRelInfo->ri_WithCheckOptions != NIL ||
		(resultRelInfo->ri_TrigDesc &&
		 (resultRelInfo->ri_TrigDesc->trig_insert_before_row ||
		  resultRelInfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;

	batch_size = fmstate != NULL ? fmstate->codec->options.batch_rows : tcopy_batch_rows;
	return Max(1, Min(batch_size, TCOPY_MAX_INSERT_BATCH));
}

/* End an INSERT. */
static void
tcopyEndForeignModify(EState *estate, ResultRelInfo *resultRelInfo)
{
	tcopy_modify_end((TcopyModifyState *) resultRelInfo->ri_FdwState);
}

/* End a COPY through the insert path or routing to a partition. */
static void
tcopyEndForeignInsert(EState *estate, ResultRelInfo *resultRelInfo)
{
	tcopy_modify_end((TcopyModifyState *) resultRelInfo->ri_FdwState);
}

/* A table to truncate: its codec and the connection it was opened on. */
typedef struct TcopyTruncateTarget
{
	TcopyRelCodec *codec;
	TcClient   *client;			/* NULL: nothing stored, nothing to do */
	uint32		table_id;
} TcopyTruncateTarget;

/*
 * TRUNCATE foreign tables.  The tserver truncates at once and durably, not
 * when the Postgres transaction commits: a ROLLBACK after TRUNCATE does not
 * bring the rows back (Postgres offers an FDW no way to refuse TRUNCATE in
 * a transaction block).  Rows this transaction wrote would be committed
 * after the truncation and so survive it; that case is refused.  Every
 * table is opened before any is truncated, so that a table that cannot be
 * opened leaves all of them as they were.
 */
static void
tcopyExecForeignTruncate(List *rels, DropBehavior behavior, bool restart_seqs)
{
	TcopyTruncateTarget *targets;
	volatile int ntargets = 0;	/* set in PG_TRY, read in PG_FINALLY */
	ListCell   *lc;

	/*
	 * The tserver truncates at once and durably, outside any write session:
	 * inside a transaction block a rollback could not bring the rows back,
	 * and rows the transaction wrote would be committed after it.
	 */
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("TRUNCATE of a tcopy foreign table cannot run inside a transaction block"),
				 errdetail("The tserver truncates at once; a rollback could not bring the rows back.")));

	foreach(lc, rels)
	{
		Relation	rel = (Relation) lfirst(lc);

		/* outside a block too: a DO block or function may have written */
		if (tcopy_xact_wrote_relation(RelationGetRelid(rel)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot truncate foreign table \"%s\" in the transaction that wrote to it",
							RelationGetRelationName(rel)),
					 errdetail("Rows written by tcopy are committed after the truncation, which takes effect at once.")));
	}

	targets = palloc0(sizeof(TcopyTruncateTarget) * Max(list_length(rels), 1));
	PG_TRY();
	{
		foreach(lc, rels)
		{
			TcopyTruncateTarget *target = &targets[ntargets++];
			TcopyRelCodec *codec;

			target->codec = codec = tcopy_rel_codec((Relation) lfirst(lc), GetUserId());
			if (tcopy_address_is_null(codec->options.address))
				continue;
			target->client = tcopy_connect(codec);
			if (target->client == NULL)
				continue;
			if (tc_client_open_table(target->client, codec->options.table_name,
									 codec->schema, false, &target->table_id,
									 NULL, NULL) < 0)
			{
				if (tc_client_error_code(target->client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
					tcopy_report_client_error(target->client, codec->options.address,
											  psprintf("could not open table \"%s\" to truncate it",
													   codec->options.table_name));
				tcopy_disconnect(target->client);
				target->client = NULL;
			}
		}

		for (int t = 0; t < ntargets; t++)
		{
			TcopyTruncateTarget *target = &targets[t];

			CHECK_FOR_INTERRUPTS();
			if (target->client == NULL)
				continue;
			if (tc_client_table_op(target->client, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE,
								   target->table_id) < 0)
				tcopy_report_client_error(target->client,
										  target->codec->options.address,
										  psprintf("could not truncate table \"%s\"",
												   target->codec->options.table_name));
		}
	}
	PG_FINALLY();
	{
		for (int t = 0; t < ntargets; t++)
		{
			if (targets[t].client != NULL)
			{
				tcopy_disconnect(targets[t].client);
				targets[t].client = NULL;
			}
		}
	}
	PG_END_TRY();
}

/*
 * Whether relid is a foreign table of a server whose wrapper's handler is
 * this one: what makes a table a tcopy table.
 */
bool
tcopy_relation_is_tcopy_table(Oid relid)
{
	ForeignTable *table;
	ForeignServer *server;
	ForeignDataWrapper *fdw;
	FmgrInfo	handler;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	table = GetForeignTable(relid);
	server = GetForeignServer(table->serverid);
	fdw = GetForeignDataWrapper(server->fdwid);
	if (!OidIsValid(fdw->fdwhandler))
		return false;
	fmgr_info(fdw->fdwhandler, &handler);
	return handler.fn_addr == tcopy_fdw_handler;
}

/* The FDW's callbacks. */
Datum
tcopy_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = tcopyGetForeignRelSize;
	routine->GetForeignPaths = tcopyGetForeignPaths;
	routine->GetForeignPlan = tcopyGetForeignPlan;
	routine->BeginForeignScan = tcopyBeginForeignScan;
	routine->IterateForeignScan = tcopyIterateForeignScan;
	routine->ReScanForeignScan = tcopyReScanForeignScan;
	routine->EndForeignScan = tcopyEndForeignScan;
	routine->ExplainForeignScan = tcopyExplainForeignScan;
	routine->AnalyzeForeignTable = tcopyAnalyzeForeignTable;

	routine->IsForeignRelUpdatable = tcopyIsForeignRelUpdatable;
	routine->PlanForeignModify = tcopyPlanForeignModify;
	routine->BeginForeignModify = tcopyBeginForeignModify;
	routine->ExecForeignInsert = tcopyExecForeignInsert;
	routine->ExecForeignBatchInsert = tcopyExecForeignBatchInsert;
	routine->GetForeignModifyBatchSize = tcopyGetForeignModifyBatchSize;
	routine->EndForeignModify = tcopyEndForeignModify;
	routine->BeginForeignInsert = tcopyBeginForeignInsert;
	routine->EndForeignInsert = tcopyEndForeignInsert;

	routine->ExecForeignTruncate = tcopyExecForeignTruncate;

	PG_RETURN_POINTER(routine);
}
