/*
 * fdw.c
 *		The tcopy foreign-data wrapper's handler and its planning: size
 *		estimates, the one scan path, and the plan's private list.
 *
 * Scans (fdw_scan.c) fetch only the columns the query needs and evaluate
 * every qual locally.  The quals the tserver can evaluate exactly as
 * Postgres does are also sent to it as a filter (pushdown_quals.c), so
 * that fewer rows cross the socket.  When the table has a single integer key column,
 * comparisons of that column with constants also bound the scan's key
 * range on the tserver; the quals are still checked locally, so a bound
 * only ever saves work.  The key columns are known only from the table's
 * options, which are resolved at execution (they need the user mapping),
 * so the planner passes every candidate comparison down and
 * BeginForeignScan keeps those on the key.  Inserts and TRUNCATE are in
 * fdw_modify.c.
 */

#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/rel.h"

#include "tcopy/fdw.h"

/* rows assumed for a table never analyzed, when the tserver gives no estimate */
#define TCOPY_DEFAULT_ROWS		1000.0
/* planner costs: a scan's fixed cost (connecting); per row sent (fdw.h) */
#define TCOPY_STARTUP_COST		10.0
#define TCOPY_PER_ROW_COST		0.01

PG_FUNCTION_INFO_V1(tcopy_fdw_handler);

/*
 * Estimate the size of the scan's result: the row count ANALYZE left, else
 * (never analyzed, or found empty then) the tserver's estimate, else a
 * default, times the quals' selectivity.
 */
static void
tcopyGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	double		ntuples = TCOPY_DEFAULT_ROWS;
	Selectivity sel;
	TcopyRelInfo *info;

	if (baserel->tuples > 0)
		ntuples = baserel->tuples;
	else
	{
		Relation	rel = table_open(foreigntableid, NoLock);
		Oid			userid = OidIsValid(baserel->userid) ? baserel->userid : GetUserId();
		double		rows;
		double		bytes;

		if (tcopy_table_estimate(rel, userid, &rows, &bytes))
			ntuples = rows;
		table_close(rel, NoLock);
	}
	sel = clauselist_selectivity(root, baserel->baserestrictinfo, 0,
								 JOIN_INNER, NULL);
	baserel->rows = clamp_row_est(ntuples * sel);
	baserel->fdw_private = info = palloc0(sizeof(TcopyRelInfo));
	info->read_rows = clamp_row_est(ntuples * tcopy_key_range_selectivity(root, baserel,
																		  foreigntableid));
}


/*
 * Offer a full, unparameterized scan; the same scan declared in the
 * query's order when the tserver's key order is it (pushdown_order.c); and
 * a parallel scan (fdw_parallel.c).
 */
static void
tcopyGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Cost		startup_cost = TCOPY_STARTUP_COST;
	double		read_rows = tcopy_rel_read_rows(baserel);
	Cost		total_cost = startup_cost + read_rows * TCOPY_READ_ROW_COST +
		baserel->rows * TCOPY_PER_ROW_COST;
	List	   *pathkeys;

	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup_cost, total_cost,
									 NIL, NULL, NULL, NIL));
	pathkeys = tcopy_key_order_pathkeys(root, baserel, foreigntableid);
	if (pathkeys != NIL)
		add_path(baserel, (Path *)
				 create_foreignscan_path(root, baserel, NULL, baserel->rows,
										 startup_cost, total_cost,
										 pathkeys, NULL, NULL, NIL));

	/*
	 * The parallel scan, and in the key's order, sized by the rows the
	 * tserver reads (those of the key range).  Last: it marks the paths
	 * above as never to run whole in a worker.
	 */
	tcopy_add_partial_path(root, baserel, read_rows, startup_cost,
						   total_cost - startup_cost,
						   tcopy_pathkeys_reverse(pathkeys) ? NIL : pathkeys);
}

/*
 * Build the ForeignScan: every qual is evaluated locally; fdw_private says
 * which columns to fetch, which comparisons may bound the key range, and
 * which quals the tserver filters the rows by, and the LIMIT it may stop
 * at.
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
	List	   *filter = NIL;
	List	   *fdw_private;
	ListCell   *lc;
	int			member;

	/* a grouped relation whose aggregates the tserver computes */
	if (IS_UPPER_REL(baserel))
		return tcopy_agg_plan(root, baserel, tlist, outer_plan);

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		pull_varattnos((Node *) rinfo->clause, baserel->relid, &attrs);
		if (!rinfo->pseudoconstant)
			(void) tcopy_clause_key_bound(baserel->relid, rinfo->clause, &bounds);
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

	/* the quals the tserver can evaluate: they stay local too */
	foreach(lc, scan_clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (!rinfo->pseudoconstant && tcopy_qual_is_shippable(root, baserel, rinfo->clause))
			filter = lappend(filter, copyObject(rinfo->clause));
	}

	fdw_private = list_make5(makeBoolean(all_columns), attnums, bounds, filter, NIL);
	fdw_private = lappend(fdw_private,
						  makeInteger((int) tcopy_scan_limit(root, baserel,
															 best_path->path.pathkeys)));
	fdw_private = lappend(fdw_private,
						  makeBoolean(tcopy_pathkeys_reverse(best_path->path.pathkeys)));
	scan_clauses = extract_actual_clauses(scan_clauses, false);
	return make_foreignscan(tlist, scan_clauses, baserel->relid,
							NIL, fdw_private, NIL, NIL, outer_plan);
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
	routine->GetForeignRowMarkType = tcopyGetForeignRowMarkType;
	routine->RefetchForeignRow = tcopyRefetchForeignRow;
	routine->GetForeignUpperPaths = tcopyGetForeignUpperPaths;
	routine->AnalyzeForeignTable = tcopyAnalyzeForeignTable;

	routine->IsForeignScanParallelSafe = tcopyIsForeignScanParallelSafe;
	routine->EstimateDSMForeignScan = tcopyEstimateDSMForeignScan;
	routine->InitializeDSMForeignScan = tcopyInitializeDSMForeignScan;
	routine->ReInitializeDSMForeignScan = tcopyReInitializeDSMForeignScan;
	routine->InitializeWorkerForeignScan = tcopyInitializeWorkerForeignScan;

	routine->IsForeignRelUpdatable = tcopyIsForeignRelUpdatable;
	routine->PlanForeignModify = tcopyPlanForeignModify;
	routine->BeginForeignModify = tcopyBeginForeignModify;
	routine->AddForeignUpdateTargets = tcopyAddForeignUpdateTargets;
	routine->ExecForeignInsert = tcopyExecForeignInsert;
	routine->ExecForeignUpdate = tcopyExecForeignUpdate;
	routine->ExecForeignDelete = tcopyExecForeignDelete;
	routine->ExecForeignBatchInsert = tcopyExecForeignBatchInsert;
	routine->GetForeignModifyBatchSize = tcopyGetForeignModifyBatchSize;
	routine->EndForeignModify = tcopyEndForeignModify;
	routine->BeginForeignInsert = tcopyBeginForeignInsert;
	routine->EndForeignInsert = tcopyEndForeignInsert;

	routine->ExecForeignTruncate = tcopyExecForeignTruncate;

	routine->PlanDirectModify = tcopyPlanDirectModify;
	routine->BeginDirectModify = tcopyBeginDirectModify;
	routine->IterateDirectModify = tcopyIterateDirectModify;
	routine->EndDirectModify = tcopyEndDirectModify;
	routine->ExplainDirectModify = tcopyExplainDirectModify;

	PG_RETURN_POINTER(routine);
}
