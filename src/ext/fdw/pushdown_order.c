/*
 * pushdown_order.c
 *		ORDER BY the key and LIMIT, pushed down (docs/scans.md#order-by-and-limit).
 *
 * A tserver returns a table's rows in the order of their stored keys, or
 * backward (Scan.reverse).  For integer key columns that order is
 * Postgres' ascending order of the columns (keys are never NULL, and are
 * unique), so a scan path may declare the query's ORDER BY as its
 * pathkeys when they are a prefix of the key, or start with all of it,
 * every one ascending or every one descending (then read backward):
 * Postgres then sorts nothing.  So ORDER BY aid DESC LIMIT 10, and max()
 * (which Postgres plans as that), read ten rows, not the table.
 *
 * LIMIT is pushed as a bound on the rows the tserver returns, when the
 * scan's rows are the query's rows: one base relation (or a member of an
 * append relation, each of whose members then returns at most the bound),
 * every qual evaluated by the tserver, nothing that adds, removes or
 * reorders rows above the scan but the LIMIT itself (and a sort the path
 * already satisfies).  The Limit node stays in the plan; the bound only
 * stops the tserver early, so that a LIMIT query reads a batch of the
 * rows it returns rather than a thousand, and leaves the connection idle
 * for the next scan.
 */

#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/fdw.h"

/* Whether an equivalence class holds column attnum of rel relid. */
static bool
tcopy_ec_has_column(EquivalenceClass *ec, Index relid, AttrNumber attnum)
{
	ListCell   *lc;

	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = (EquivalenceMember *) lfirst(lc);
		Expr	   *expr = em->em_expr;

		while (IsA(expr, RelabelType))
			expr = ((RelabelType *) expr)->arg;
		if (IsA(expr, Var) &&
			((Var *) expr)->varno == relid &&
			((Var *) expr)->varattno == attnum &&
			((Var *) expr)->varlevelsup == 0)
			return true;
	}
	return false;
}

List *
tcopy_key_order_pathkeys(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Relation	rel;
	List	   *key_attnums;
	bool		key_bytes;
	int			matched = 0;
	int			strategy;
	ListCell   *lc;

	if (root->query_pathkeys == NIL)
		return NIL;
	rel = table_open(foreigntableid, NoLock);
	key_attnums = tcopy_rel_key_attnums(rel, &key_bytes);
	foreach(lc, key_attnums)
	{
		Oid			type = TupleDescAttr(RelationGetDescr(rel), lfirst_int(lc) - 1)->atttypid;

		if (type != INT2OID && type != INT4OID && type != INT8OID)
			key_bytes = true;	/* not stored in Postgres' order */
	}
	table_close(rel, NoLock);
	if (key_attnums == NIL || key_bytes)
		return NIL;

	strategy = linitial_node(PathKey, root->query_pathkeys)->pk_strategy;
	foreach(lc, root->query_pathkeys)
	{
		PathKey    *pathkey = (PathKey *) lfirst(lc);

		/* past every key column: the key is unique, so any order holds */
		if (matched == list_length(key_attnums))
			break;

		/*
		 * all one way; NULLS FIRST or LAST alike, as no key is NULL (the
		 * default is LAST ascending, FIRST descending)
		 */
		if ((strategy != BTLessStrategyNumber && strategy != BTGreaterStrategyNumber) ||
			pathkey->pk_strategy != strategy ||
			pathkey->pk_opfamily != INTEGER_BTREE_FAM_OID ||
			!tcopy_ec_has_column(pathkey->pk_eclass, baserel->relid,
								 (AttrNumber) list_nth_int(key_attnums, matched)))
			return NIL;
		matched++;
	}
	return root->query_pathkeys;
}

bool
tcopy_pathkeys_reverse(List *pathkeys)
{
	return pathkeys != NIL &&
		linitial_node(PathKey, pathkeys)->pk_strategy == BTGreaterStrategyNumber;
}

int64
tcopy_scan_limit(PlannerInfo *root, RelOptInfo *baserel, List *pathkeys)
{
	Query	   *parse = root->parse;
	ListCell   *lc;

	if (root->limit_tuples <= 0 || root->limit_tuples > (double) PG_INT32_MAX)
		return 0;
	if (bms_membership(root->all_baserels) != BMS_SINGLETON ||
		parse->hasAggs || parse->groupClause != NIL || parse->groupingSets != NIL ||
		parse->havingQual != NULL || parse->hasWindowFuncs || parse->distinctClause != NIL ||
		parse->hasTargetSRFs || parse->rowMarks != NIL || parse->setOperations != NULL)
		return 0;
	if (root->sort_pathkeys != NIL && !pathkeys_contained_in(root->sort_pathkeys, pathkeys))
		return 0;
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (!rinfo->pseudoconstant && !tcopy_qual_is_shippable(root, baserel, rinfo->clause))
			return 0;
	}
	return (int64) root->limit_tuples;
}
