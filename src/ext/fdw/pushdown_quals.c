/*
 * pushdown_quals.c
 *		Filters pushed down to the tserver (docs/scans.md#filters): which
 *		quals ship, and the Expr tree the tserver evaluates.
 *
 * Not written yet: nothing ships.
 */

#include "postgres.h"

#include "tcopy/fdw.h"

bool
tcopy_qual_is_shippable(PlannerInfo *root, RelOptInfo *baserel, Expr *clause)
{
	return false;
}

Tcopy__Expr *
tcopy_filter_build(TcopyRelCodec *codec, List *quals, PlanState *ps)
{
	return NULL;
}

void
tcopy_explain_filter(List *quals, PlanState *ps, List *ancestors, struct ExplainState *es)
{
}
