/*
 * hook.c
 *		The utility hook and the object access hook: the places tcopy sees
 *		utility statements and the objects they drop.
 *
 * The utility hook dispatches, as Citus' multi_utility.c does: a COPY FROM
 * into a tcopy table goes to copy.c, which runs it in place of Postgres'
 * DoCopy; a rename or a schema change goes to rename.c first, then on to
 * Postgres.  Everything else, and whatever those decline, goes to the
 * previous hook or standard_ProcessUtility.  Handling of further DDL
 * belongs here too.
 *
 * The object access hook sees every object a DROP deletes, DROP ... CASCADE
 * included, just before its catalog rows go.  A tcopy table's data goes with
 * it: what it takes to reach the table's tserver table (server, address,
 * the user mapping's token, table_name) is read then and handed to xact.c,
 * which stages the tserver's DROP in the transaction's write session at
 * pre-commit, so that it commits and rolls back with the transaction.  A
 * DROP SERVER ... CASCADE may delete the user mappings before the tables:
 * the mappings of tcopy servers dropped in the transaction are kept for
 * that.
 */
#include "tcopy.h"

#include "access/relation.h"
#include "access/reloptions.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_user_mapping.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

/* A user mapping of a tcopy server dropped in the current transaction. */
typedef struct TcopyDroppedMapping
{
	Oid			serverid;
	Oid			userid;			/* InvalidOid: PUBLIC */
	List	   *options;
} TcopyDroppedMapping;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/* TcopyDroppedMapping *, in TopTransactionContext; NIL between transactions */
static List *tcopy_dropped_mappings = NIL;

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

/* The end of a transaction: its dropped mappings go with its memory. */
static void
tcopy_hook_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			tcopy_dropped_mappings = NIL;
			break;
		default:
			break;
	}
}

/* Keep user mapping umid, about to be dropped, if it is a tcopy server's. */
static void
tcopy_keep_dropped_mapping(Oid umid)
{
	HeapTuple	tuple = SearchSysCache1(USERMAPPINGOID, ObjectIdGetDatum(umid));
	Form_pg_user_mapping form;
	TcopyDroppedMapping *mapping;
	MemoryContext oldcontext;
	Datum		datum;
	bool		isnull;

	if (!HeapTupleIsValid(tuple))
		return;
	form = (Form_pg_user_mapping) GETSTRUCT(tuple);
	if (tcopy_server_is_tcopy(form->umserver))
	{
		oldcontext = MemoryContextSwitchTo(TopTransactionContext);
		mapping = palloc(sizeof(TcopyDroppedMapping));
		mapping->serverid = form->umserver;
		mapping->userid = form->umuser;
		datum = SysCacheGetAttr(USERMAPPINGOID, tuple, Anum_pg_user_mapping_umoptions, &isnull);
		mapping->options = isnull ? NIL : untransformRelOptions(datum);
		tcopy_dropped_mappings = lappend(tcopy_dropped_mappings, mapping);
		MemoryContextSwitchTo(oldcontext);
	}
	ReleaseSysCache(tuple);
}

/*
 * The options of the user mapping that reaches serverid for userid: from
 * the catalogs, else among those dropped in this transaction (the user's,
 * then PUBLIC's); false when there is none.
 */
static bool
tcopy_mapping_for_drop(Oid userid, Oid serverid, List **options)
{
	Oid			users[2] = {userid, InvalidOid};
	ListCell   *lc;

	if (tcopy_find_user_mapping(userid, serverid, options))
		return true;
	for (int i = 0; i < lengthof(users); i++)
	{
		foreach(lc, tcopy_dropped_mappings)
		{
			TcopyDroppedMapping *mapping = (TcopyDroppedMapping *) lfirst(lc);

			if (mapping->serverid == serverid && mapping->userid == users[i])
			{
				*options = mapping->options;
				return true;
			}
		}
	}
	return false;
}

/*
 * Tcopy table relid is about to be dropped: have its tserver table dropped
 * when the transaction commits.  Nothing here fails for want of a mapping:
 * xact.c says so at pre-commit, unless the extension was dropped too.
 */
static void
tcopy_drop_table_data(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);	/* locked by the DROP */
	Oid			serverid = GetForeignTable(relid)->serverid;
	Oid			userid = GetUserId();
	List	   *mapping = NIL;
	bool		has_mapping = tcopy_mapping_for_drop(userid, serverid, &mapping);
	TcopyTableOptions options;

	tcopy_get_server_options(serverid, mapping, &options);
	options.table_name = tcopy_table_name(rel);
	if (!tcopy_address_is_null(options.address))
		tcopy_xact_drop_at_commit(&options, userid, has_mapping,
								  RelationGetRelationName(rel));
	relation_close(rel, NoLock);
}

/* The object access hook: see the tcopy tables and mappings a DROP deletes. */
static void
tcopy_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access != OAT_DROP)
		return;
	if (classId == UserMappingRelationId)
		tcopy_keep_dropped_mapping(objectId);
	else if (classId == RelationRelationId && subId == 0 &&
			 tcopy_relation_is_tcopy_table(objectId))
		tcopy_drop_table_data(objectId);
}

/* Install the hooks, keeping the ones installed before. */
void
TcopyHookInit(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = tcopy_ProcessUtility;
	prev_object_access_hook = object_access_hook;
	object_access_hook = tcopy_object_access;
	RegisterXactCallback(tcopy_hook_xact_callback, NULL);
}
