/*
 * pushdown_agg.c
 *		Aggregates pushed down to the tserver (docs/scans.md#aggregates):
 *		GetForeignUpperPaths offers a ForeignScan of the grouped relation
 *		that the tserver groups and aggregates, as postgres_fdw's
 *		add_foreign_grouping_paths does, and GetForeignPlan builds it.
 *
 * A grouping ships only when the tserver computes exactly what Postgres
 * would: every qual of the scanned table ships too (tcopy_qual_is_shippable:
 * the tserver filters before it aggregates), every GROUP BY expression is a
 * plain column of a type whose equality is the stored bytes' or integers'
 * (tcopy_agg_group_type_ok), and every aggregate is one the tserver
 * computes as Postgres' transition function does (tcopy_agg_classify).
 * HAVING stays in Postgres, evaluated on the groups the scan returns.
 *
 * Two stages: UPPERREL_GROUP_AGG, the whole aggregate (a table, or a
 * partition when the grouping includes the partition key), and
 * UPPERREL_PARTIAL_GROUP_AGG, under partitionwise aggregation, where each
 * partition's scan returns the aggregates' transition states and Postgres
 * combines them above the Append.
 */

#include "postgres.h"

#include "catalog/pg_aggregate_d.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "tcopy/fdw.h"

/*
 * costs of a pushed aggregate: starting the scan, a group returned; the
 * rows are read as a scan's (TCOPY_READ_ROW_COST), in parts on the
 * tserver's threads (taken to be two) when the aggregates combine exactly
 */
#define TCOPY_AGG_STARTUP_COST	10.0
#define TCOPY_AGG_GROUP_COST	0.01
#define TCOPY_AGG_THREADS		2.0

bool		tcopy_pushdown_aggregates = true;

/* What the planner found of a grouped relation (RelOptInfo.fdw_private). */
typedef struct TcopyUpperInfo
{
	RelOptInfo *input_rel;		/* the foreign table's (or partition's) */
	bool		partial;		/* transition states, for partitionwise */
	List	   *tlist;			/* fdw_scan_tlist: grouping Vars, Aggrefs */
	List	   *local_conds;	/* HAVING, evaluated on the groups */
} TcopyUpperInfo;

static bool
contain_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, contain_param_walker, context);
}

/* Whether the clause holds a Param. */
static bool
contain_param(Node *clause)
{
	return contain_param_walker(clause, NULL);
}

/*
 * Whether an Aggref is one the tserver computes: a known aggregate of one
 * plain column of rel (or count(*)), with no DISTINCT, ORDER BY or FILTER,
 * as a whole aggregate or, when partial, as a transition state Postgres
 * can combine (not sum or avg of int8, whose state is internal).
 */
static bool
agg_shippable(Aggref *aggref, RelOptInfo *rel, bool partial)
{
	TcopyAggFn	fn = tcopy_agg_classify(aggref->aggfnoid);
	TargetEntry *tle;
	Var		   *var;

	if (fn == TCOPY_AGGFN_NONE || aggref->agglevelsup != 0 || aggref->aggkind != AGGKIND_NORMAL ||
		aggref->aggdistinct != NIL || aggref->aggorder != NIL || aggref->aggfilter != NULL ||
		aggref->aggvariadic)
		return false;
	if (aggref->aggsplit != (partial ? AGGSPLIT_INITIAL_SERIAL : AGGSPLIT_SIMPLE))
		return false;
	if (partial && (fn == TCOPY_AGGFN_SUM_INT8 || fn == TCOPY_AGGFN_AVG_INT8))
		return false;
	if (fn == TCOPY_AGGFN_COUNT_STAR)
		return aggref->aggstar && aggref->args == NIL;
	if (aggref->aggstar || list_length(aggref->args) != 1)
		return false;
	tle = linitial_node(TargetEntry, aggref->args);
	if (!IsA(tle->expr, Var))
		return false;
	var = (Var *) tle->expr;
	return var->varno == rel->relid && var->varlevelsup == 0 && var->varattno > 0;
}

/* A GROUP BY expression the tserver groups by: a column of a type it can. */
static bool
group_var_shippable(Expr *expr, RelOptInfo *rel)
{
	Var		   *var = (Var *) expr;

	if (!IsA(expr, Var) || var->varno != rel->relid || var->varlevelsup != 0 ||
		var->varattno <= 0)
		return false;
	return tcopy_agg_group_type_ok(var->vartype, var->varcollid);
}

/*
 * Add the Aggrefs of expr to *tlist, once each; false if expr holds one
 * the tserver does not compute, or anything but Aggrefs and Vars outside
 * them.
 */
static bool
add_aggregates(Node *expr, RelOptInfo *rel, bool partial, List **tlist)
{
	List	   *aggvars = pull_var_clause(expr, PVC_INCLUDE_AGGREGATES);
	ListCell   *lc;

	foreach(lc, aggvars)
	{
		Node	   *node = (Node *) lfirst(lc);

		if (IsA(node, Aggref))
		{
			if (!agg_shippable((Aggref *) node, rel, partial))
				return false;
			*tlist = add_to_flat_tlist(*tlist, list_make1(node));
		}
		else if (!IsA(node, Var))
			return false;
	}
	return true;
}

/*
 * foreign_grouping_ok: whether the grouping of input_rel into grouped_rel
 * can be done by the tserver; if so, fill info's tlist and local_conds.
 */
static bool
grouping_ok(PlannerInfo *root, RelOptInfo *grouped_rel, TcopyUpperInfo *info,
			Node *havingQual)
{
	Query	   *query = root->parse;
	RelOptInfo *rel = info->input_rel;
	PathTarget *target = grouped_rel->reltarget;
	List	   *tlist = NIL;
	ListCell   *lc;
	int			i;

	if (query->groupingSets)
		return false;

	/* every qual of the table must be evaluated before the grouping: by the tserver */
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		/*
		 * a parameter's value is known at execution only, and one the filter
		 * cannot hold (NULL) would leave the qual to Postgres: not here
		 */
		if (rinfo->pseudoconstant || contain_param((Node *) rinfo->clause) ||
			!tcopy_qual_is_shippable(root, rel, rinfo->clause))
			return false;
	}

	/* the GROUP BY columns, then the aggregates of the other expressions */
	i = 0;
	foreach(lc, target->exprs)
	{
		Expr	   *expr = (Expr *) lfirst(lc);
		Index		sgref = get_pathtarget_sortgroupref(target, i);

		if (sgref && get_sortgroupref_clause_noerr(sgref, query->groupClause))
		{
			TargetEntry *tle;

			if (!group_var_shippable(expr, rel))
				return false;
			tle = makeTargetEntry(expr, list_length(tlist) + 1, NULL, false);
			tle->ressortgroupref = sgref;
			tlist = lappend(tlist, tle);
		}
		else if (!add_aggregates((Node *) expr, rel, info->partial, &tlist))
			return false;
		i++;
	}

	/* HAVING: evaluated by Postgres on the groups, over aggregates the tserver computes */
	if (havingQual != NULL && !info->partial)
	{
		foreach(lc, (List *) havingQual)
		{
			Node	   *clause = (Node *) lfirst(lc);

			if (contain_subplans(clause) || !add_aggregates(clause, rel, false, &tlist))
				return false;
			info->local_conds = lappend(info->local_conds, clause);
		}
	}
	/* no columns at all (SELECT 1 ... GROUP BY ()): left to Postgres */
	info->tlist = tlist;
	if (list_length(query->groupClause) > TCOPY_AGG_MAX_GROUP_BY)
		return false;
	return tlist != NIL;
}

/* The groups' expected count. */
static double
grouping_rows(PlannerInfo *root, TcopyUpperInfo *info)
{
	List	   *group_exprs = NIL;
	ListCell   *lc;

	foreach(lc, info->tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (tle->ressortgroupref != 0)
			group_exprs = lappend(group_exprs, tle->expr);
	}
	if (group_exprs == NIL)
		return 1.0;

	/*
	 * A grouping column ANALYZE has not counted is guessed at 200 values:
	 * when the rows could hold more groups than the tserver does, take
	 * them all to be groups, rather than fail at run time
	 */
	if (info->input_rel->rows > TCOPY_AGG_MAX_GROUPS / 2)
	{
		RangeTblEntry *rte = planner_rt_fetch(info->input_rel->relid, root);

		foreach(lc, group_exprs)
		{
			Var		   *var = (Var *) lfirst(lc);

			if (!IsA(var, Var) ||
				!SearchSysCacheExists3(STATRELATTINH, ObjectIdGetDatum(rte->relid),
									   Int16GetDatum(var->varattno), BoolGetDatum(false)))
				return info->input_rel->rows;
		}
	}
	return estimate_num_groups(root, group_exprs, info->input_rel->rows, NULL, NULL);
}

/*
 * add_foreign_grouping_paths: offer the tserver's grouping of input_rel
 * as a path of grouped_rel, costed below reading the rows into Postgres:
 * the rows are read by the tserver and only the groups are sent.
 */
static void
add_grouping_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
				  GroupPathExtraData *extra, bool partial)
{
	Query	   *parse = root->parse;
	TcopyUpperInfo *info;
	ForeignPath *path;
	double		groups;
	Cost		startup_cost;
	Cost		total_cost;

	if (!parse->groupClause && !parse->groupingSets && !parse->hasAggs && !root->hasHavingQual)
		return;
	/* partial states only under partitionwise aggregation (not a parallel one) */
	if (partial ? extra->patype != PARTITIONWISE_AGGREGATE_PARTIAL :
		extra->patype == PARTITIONWISE_AGGREGATE_PARTIAL)
		return;
	info = palloc0(sizeof(TcopyUpperInfo));
	info->input_rel = input_rel;
	info->partial = partial;
	grouped_rel->fdw_private = info;
	if (!grouping_ok(root, grouped_rel, info, extra->havingQual))
		return;

	groups = grouping_rows(root, info);
	/* the tserver holds at most TS_AGG_MAX_GROUPS: leave many groups to Postgres */
	if (groups > TCOPY_AGG_MAX_GROUPS / 2)
		return;
	startup_cost = TCOPY_AGG_STARTUP_COST +
		tcopy_rel_read_rows(input_rel) * TCOPY_READ_ROW_COST / TCOPY_AGG_THREADS;
	total_cost = startup_cost + groups * (TCOPY_AGG_GROUP_COST + cpu_tuple_cost);
	path = create_foreign_upper_path(root, grouped_rel, grouped_rel->reltarget, groups,
									 startup_cost, total_cost, NIL, NULL, NIL);
	/* never in a worker: only a parallel scan's parts carry the leader's view (fdw_parallel.c) */
	path->path.parallel_safe = false;
	add_path(grouped_rel, (Path *) path);
}

void
tcopyGetForeignUpperPaths(PlannerInfo *root, UpperRelationKind stage,
						  RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if ((stage != UPPERREL_GROUP_AGG && stage != UPPERREL_PARTIAL_GROUP_AGG) ||
		output_rel->fdw_private != NULL || extra == NULL || !tcopy_pushdown_aggregates)
		return;
	/* one foreign table or partition, read without parameters */
	if ((input_rel->reloptkind != RELOPT_BASEREL &&
		 input_rel->reloptkind != RELOPT_OTHER_MEMBER_REL) ||
		input_rel->rtekind != RTE_RELATION || input_rel->relid == 0 ||
		!bms_is_empty(input_rel->lateral_relids))
		return;
	add_grouping_path(root, input_rel, output_rel, (GroupPathExtraData *) extra,
					  stage == UPPERREL_PARTIAL_GROUP_AGG);
}

/*
 * The ForeignScan of a grouped relation: no scan relation (scanrelid 0;
 * fs_relids name the table), its output the grouping columns and the
 * aggregates (fdw_scan_tlist), HAVING as its qual, and in fdw_private the
 * table's columns, key bounds and quals, which all ship (the filter), as
 * a plain scan's, with TCOPY_PRIV_UPPER saying the tserver aggregates.
 */
ForeignScan *
tcopy_agg_plan(PlannerInfo *root, RelOptInfo *grouped_rel, List *tlist, Plan *outer_plan)
{
	TcopyUpperInfo *info = (TcopyUpperInfo *) grouped_rel->fdw_private;
	RelOptInfo *rel = info->input_rel;
	List	   *bounds = NIL;
	List	   *filter = NIL;
	List	   *upper;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		(void) tcopy_clause_key_bound(rel->relid, rinfo->clause, &bounds);
		filter = lappend(filter, copyObject(rinfo->clause));
	}
	upper = list_make2(makeInteger(TCOPY_UPPER_AGGREGATE), makeBoolean(info->partial));
	return make_foreignscan(tlist, info->local_conds, 0, NIL,
							lappend(lappend(list_make5(makeBoolean(false), NIL, bounds,
													   filter, upper),
											makeInteger(0)),
									makeBoolean(false)),
							info->tlist, NIL, outer_plan);
}
