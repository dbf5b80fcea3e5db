/*
 * hook.c
 *		The utility hook: the one place tcopy sees utility statements.
 *
 * It dispatches, as Citus' multi_utility.c does: a COPY FROM into a tcopy
 * table goes to copy.c, which runs it in place of Postgres' DoCopy; a
 * rename or a schema change goes to rename.c first, then on to Postgres.
 * Everything else, and whatever those decline, goes to the previous hook
 * or standard_ProcessUtility.  Handling of further DDL belongs here too.
 */
#include "tcopy.h"

#include "tcop/utility.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Run a statement the way it would have run without tcopy. */
static void
tcopy_run_utility(PlannedStmt *pstmt, const char *queryString,
				  bool readOnlyTree, ProcessUtilityContext context,
				  ParamListInfo params, QueryEnvironment *queryEnv,
				  DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/*
 * The hook: a COPY that copy.c takes is complete when it returns; renames
 * are prepared for, then run; the rest passes through.
 */
static void
tcopy_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	uint64		processed;

	if (IsA(parsetree, RenameStmt) || IsA(parsetree, AlterObjectSchemaStmt))
		tcopy_pin_before_rename(parsetree);
	else if (tcopy_copy_hook_enabled && IsA(parsetree, CopyStmt) &&
			 tcopy_copy_from((CopyStmt *) parsetree, queryString, queryEnv, &processed))
	{
		if (qc)
			SetQueryCompletion(qc, CMDTAG_COPY, processed);
		return;
	}
	tcopy_run_utility(pstmt, queryString, readOnlyTree, context, params,
					  queryEnv, dest, qc);
}

/* Install the hook, keeping the one installed before. */
void
TcopyHookInit(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = tcopy_ProcessUtility;
}
