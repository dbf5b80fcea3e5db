/*
 * hook.c
 *		The utility hook and the object access hook: the places tcopy sees
 *		utility statements and the objects they drop.
 *
 * The utility hook dispatches, as Citus' multi_utility.c does: a COPY FROM
 * into a tcopy table goes to copy.c, which runs it in place of Postgres'
 * DoCopy; a column rename goes to rename.c first, then on to Postgres.
 * Everything else, and whatever those decline, goes to the previous hook
 * or standard_ProcessUtility.  ALTER TYPE ... ADD VALUE and RENAME VALUE
 * of an enum are checked by enum_labels.c before they run, and a rename
 * recorded there after it ran.  COMMIT PREPARED and ROLLBACK PREPARED,
 * which Postgres finishes with no transaction callback, are wrapped by
 * xact_prepared.c's steps, before and after.
 *
 * It also binds each tcopy table to its own data.  A CREATE FOREIGN TABLE
 * of a tcopy server without option table_name gets one appended before
 * Postgres runs it: generated, unique, never reused (option.c).  Setting
 * table_name explicitly, in CREATE or in ALTER ... OPTIONS (ADD / SET),
 * binds the table to whatever tserver data has that name, which is for
 * superusers and the server's owner only; dropping the option is refused.
 * What the hook generated or checked is approved for the validator, which
 * refuses anything else to non-superusers (option.c says why).
 *
 * The object access hook sees every object a DROP deletes, DROP ... CASCADE
 * included, just before its catalog rows go.  A tcopy table's data goes with
 * it: what it takes to reach the table's tserver table (server, address,
 * the user mapping's token, table_name) is read then and handed to xact.c,
 * which stages the tserver's DROP in the transaction's write session at
 * pre-commit, so that it commits and rolls back with the transaction.  A
 * DROP SERVER ... CASCADE may delete the user mappings before the tables:
 * the mappings of tcopy servers dropped in the transaction are kept for
 * that.  An enum type's recorded renames go with it (enum_labels.c).
 *
 * The library is preloaded into every database: in one without the
 * extension, the utility hook passes every statement through untouched,
 * and the object access hook finds nothing of tcopy's to act on
 * (extension.c).
 */

#include "postgres.h"

#include "access/relation.h"
#include "access/reloptions.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"
#include "tcopy/commands.h"

/* settings, registered in tcopy.c */
bool		tcopy_copy_hook_enabled = true;	/* tcopy.copy_hook */

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
 * Refuse, unless the user is a superuser or owns server serverid, a
 * table_name set explicitly on foreign table relname: it would bind the
 * table to whatever data the tserver holds under that name.  The message
 * says nothing of that data, not even whether there is any.
 */
static void
tcopy_check_attach(Oid serverid, const char *relname)
{
	ForeignServer *server = GetForeignServer(serverid);

	if (superuser() || pg_foreign_server_ownercheck(serverid, GetUserId()))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to set option \"table_name\" of foreign table \"%s\"",
					relname),
			 errdetail("Option table_name binds a foreign table to existing tserver data: "
					   "only superusers and the owner of server \"%s\" may set it.",
					   server->servername),
			 errhint("Leave out table_name: a new tcopy table gets a tserver table of its own.")));
}

/*
 * Refuse key_form 'bytes' where it would make a new table: it is the form of
 * tables made before 1.3, which the update script (or a restore attaching
 * such a table by table_name) gives them, and it keys on stored bytes,
 * without the checks and images of docs/values.md.
 */
static void
tcopy_check_key_form(DefElem *def, const char *relname)
{
	if (creating_extension || def->defaction == DEFELEM_DROP ||
		strcmp(defGetString(def), "bytes") != 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("option key_form 'bytes' cannot be set on foreign table \"%s\"", relname),
			 errdetail("It is the key form of tables made before tcopy 1.3, set by ALTER EXTENSION tcopy UPDATE."),
			 errhint("Leave out key_form: keys are then equal as Postgres compares them.")));
}

/*
 * The table_name to approve for a CREATE FOREIGN TABLE (stmt, a copy the
 * hook may change): the one given, if the user may attach, else one
 * generated and appended to the statement's options; NULL for a table of
 * another wrapper's server.
 */
static char *
tcopy_bind_created_table(CreateForeignTableStmt *stmt)
{
	ForeignServer *server = GetForeignServerByName(stmt->servername, true);
	ListCell   *lc;
	char	   *name;
	bool		keyed = false;
	DefElem    *key_form = NULL;
	bool		on_conflict = false;

	if (server == NULL || !tcopy_server_is_tcopy(server->serverid))
		return NULL;			/* Postgres reports a missing server */
	foreach(lc, stmt->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "table_name") == 0)
		{
			/* attaching data: its key_form is what the data was written in */
			tcopy_check_attach(server->serverid, stmt->base.relation->relname);
			return defGetString(def);
		}
		keyed |= strcmp(def->defname, "key") == 0;
		if (strcmp(def->defname, "key_form") == 0)
			key_form = def;
		on_conflict |= strcmp(def->defname, "on_conflict") == 0;
	}
	if (key_form != NULL)
		tcopy_check_key_form(key_form, stmt->base.relation->relname);
	name = tcopy_generate_table_name(tcopy_server_namespace(server->serverid));
	stmt->options = lappend(stmt->options,
							makeDefElem("table_name", (Node *) makeString(name), -1));

	/*
	 * A new keyed table says how its keys are stored, so that the update to
	 * 1.3, which marks keyed tables without key_form as made by 1.2, leaves
	 * it alone when it was made by this library before the update ran.
	 */
	if (keyed && key_form == NULL)
		stmt->options = lappend(stmt->options,
								makeDefElem("key_form", (Node *) makeString("image"), -1));
	/* likewise for 1.4, which gives keyed tables on_conflict 'replace' */
	if (keyed && !on_conflict)
		stmt->options = lappend(stmt->options,
								makeDefElem("on_conflict", (Node *) makeString("error"), -1));
	return name;
}

/*
 * The table_name to approve for an ALTER of a tcopy table's options: one
 * set by ADD or SET, if the user may attach; the table's own otherwise.
 * Dropping it is refused: the table would lose its data.  NULL for
 * anything but a tcopy table.
 */
static char *
tcopy_bind_altered_table(AlterTableStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	char	   *name = NULL;
	ListCell   *cell;

	if (!tcopy_relation_is_tcopy_table(relid))
		return NULL;
	foreach(cell, stmt->cmds)
	{
		AlterTableCmd *cmd = (AlterTableCmd *) lfirst(cell);
		ListCell   *lc;

		if (cmd->subtype != AT_GenericOptions)
			continue;
		foreach(lc, (List *) cmd->def)
		{
			DefElem    *def = (DefElem *) lfirst(lc);

			if (strcmp(def->defname, "key_form") == 0)
				tcopy_check_key_form(def, stmt->relation->relname);
			if (strcmp(def->defname, "table_name") != 0)
				continue;
			if (def->defaction == DEFELEM_DROP)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot drop option \"table_name\" of tcopy foreign table \"%s\"",
								stmt->relation->relname),
						 errdetail("It names the tserver table holding the foreign table's rows.")));
			tcopy_check_attach(GetForeignTable(relid)->serverid, stmt->relation->relname);
			name = defGetString(def);
		}
	}
	if (name != NULL)
		return name;
	/* read without a lock: the statement takes its own, stronger one */
	foreach(cell, GetForeignTable(relid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "table_name") == 0)
			name = defGetString(def);
	}
	return name;
}

/*
 * Run a statement with table_name approved for the validator (NULL: none),
 * the approval lasting as long as the statement, however it ends.
 */
static void
tcopy_run_approved(const char *approved, PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	TcopyApproval previous = tcopy_approve_table_name(approved);

	PG_TRY();
	{
		tcopy_run_utility(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		tcopy_restore_approval(previous);
	}
	PG_END_TRY();
}

/*
 * Whether a utility statement is none of the hook's business in any
 * database: transaction control, prepared statements and cursors,
 * settings.  They run no validator and drop nothing; what they run (an
 * EXECUTE's query, a cursor's) is no utility statement.
 */
static bool
tcopy_utility_passes_through(Node *parsetree)
{
	switch (nodeTag(parsetree))
	{
		case T_TransactionStmt:
		case T_PrepareStmt:
		case T_ExecuteStmt:
		case T_DeallocateStmt:
		case T_DeclareCursorStmt:
		case T_FetchStmt:
		case T_ClosePortalStmt:
		case T_VariableSetStmt:
		case T_VariableShowStmt:
			return true;
		default:
			return false;
	}
}

/*
 * COMMIT PREPARED or ROLLBACK PREPARED (stmt) of a transaction that wrote
 * tcopy tables, which Postgres finishes with no transaction callback: its
 * sessions are found before, the commit record is written inside the
 * commit gate, and they are published or discarded after
 * (xact_prepared.c).
 */
static void
tcopy_finish_prepared(TransactionStmt *stmt, PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	bool		commit = stmt->kind == TRANS_STMT_COMMIT_PREPARED;
	List	   *sessions = tcopy_prepared_xact_sessions(stmt->gid);

	if (sessions != NIL && commit)
		tcopy_commit_gate_enter();
	tcopy_run_utility(pstmt, queryString, readOnlyTree, context, params,
					  queryEnv, dest, qc);
	if (sessions != NIL)
		tcopy_finish_prepared_sessions(sessions, commit);
}

/*
 * The hook: a COPY that copy.c takes is complete when it returns; column
 * renames are prepared for, CREATE and ALTER of tcopy tables bound to
 * their data (see the file comment), enum labels checked, then run, and
 * an enum value's rename recorded; the rest passes through.
 */
static void
tcopy_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	uint64		processed;
	char	   *approved = NULL;
	Oid			enumtypid = InvalidOid;
	TcopyAlterPending *alter_pending = NULL;

	/* before the pass-through: transaction control, but tcopy's business */
	if (IsA(parsetree, TransactionStmt) &&
		(((TransactionStmt *) parsetree)->kind == TRANS_STMT_COMMIT_PREPARED ||
		 ((TransactionStmt *) parsetree)->kind == TRANS_STMT_ROLLBACK_PREPARED) &&
		OidIsValid(tcopy_extension_oid()))
	{
		tcopy_finish_prepared((TransactionStmt *) parsetree, pstmt, queryString, readOnlyTree,
							  context, params, queryEnv, dest, qc);
		return;
	}

	/*
	 * a database without the extension: none of the above is tcopy's; nor
	 * any statement that creates, alters or drops nothing, which passes
	 * through before the extension is looked up: a scan of pg_extension,
	 * about 15,000 instructions, half what planning a key-point SELECT
	 * costs, for each BEGIN and END of a pgbench TPC-B transaction and
	 * each SQL EXECUTE (issue 46)
	 */
	if (tcopy_utility_passes_through(parsetree) || !OidIsValid(tcopy_extension_oid()))
	{
		tcopy_run_utility(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
		return;
	}

	if (IsA(parsetree, RenameStmt))
		tcopy_pin_before_rename(parsetree);
	else if (tcopy_copy_hook_enabled && IsA(parsetree, CopyStmt) &&
			 tcopy_copy_from((CopyStmt *) parsetree, queryString, queryEnv, &processed))
	{
		if (qc)
			SetQueryCompletion(qc, CMDTAG_COPY, processed);
		return;
	}
	else if (IsA(parsetree, CreateForeignTableStmt))
	{
		/* the statement may be a cached plan's: change a copy */
		if (readOnlyTree)
		{
			pstmt = copyObject(pstmt);
			readOnlyTree = false;
		}
		approved = tcopy_bind_created_table((CreateForeignTableStmt *) pstmt->utilityStmt);
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		/* the statement may be a cached plan's: the check may take a USING off it */
		if (readOnlyTree)
		{
			pstmt = copyObject(pstmt);
			readOnlyTree = false;
			parsetree = pstmt->utilityStmt;
		}
		if (!tcopy_pinning_rename)
			alter_pending = tcopy_check_alter((AlterTableStmt *) parsetree, queryString);
		approved = tcopy_bind_altered_table((AlterTableStmt *) parsetree);
	}
	else if (IsA(parsetree, AlterEnumStmt))
		enumtypid = tcopy_enum_labels_before_alter((AlterEnumStmt *) parsetree);

	tcopy_run_approved(approved, pstmt, queryString, readOnlyTree, context,
					   params, queryEnv, dest, qc);
	if (IsA(pstmt->utilityStmt, AlterTableStmt) && !tcopy_pinning_rename)
		tcopy_after_alter((AlterTableStmt *) pstmt->utilityStmt, alter_pending);

	/*
	 * a tcopy table made or altered: refuse a key that cannot be one (not
	 * yet for a rename's, whose key names the column's new name)
	 */
	if (approved != NULL && !tcopy_pinning_rename)
	{
		RangeVar   *relation = IsA(pstmt->utilityStmt, CreateForeignTableStmt) ?
			((CreateForeignTableStmt *) pstmt->utilityStmt)->base.relation :
			((AlterTableStmt *) pstmt->utilityStmt)->relation;
		Oid			relid;

		CommandCounterIncrement();
		relid = RangeVarGetRelid(relation, NoLock, true);
		if (OidIsValid(relid))
			tcopy_check_key(relid);
	}

	if (OidIsValid(enumtypid))
		tcopy_enum_labels_after_alter(enumtypid, (AlterEnumStmt *) parsetree);
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
	options.table_name = tcopy_table_name(rel, true);
	if (options.table_name == NULL)
		options.table_name = tcopy_legacy_table_name(rel);
	if (!tcopy_address_is_null(options.address))
		tcopy_xact_drop_at_commit(&options, userid, has_mapping,
								  RelationGetRelationName(rel));
	relation_close(rel, NoLock);
}

/*
 * The object access hook: see the tcopy tables, mappings and enum types a
 * DROP deletes.
 */
static void
tcopy_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	/*
	 * Each branch needs a tcopy server or table, or the extension's
	 * enum_label, none of which a database without the extension has: no
	 * look-up of the extension per dropped object.
	 */
	if (access != OAT_DROP)
		return;
	if (classId == UserMappingRelationId)
		tcopy_keep_dropped_mapping(objectId);
	else if (classId == RelationRelationId && subId == 0 &&
			 tcopy_relation_is_tcopy_table(objectId))
		tcopy_drop_table_data(objectId);
	else if (classId == TypeRelationId && subId == 0)
		tcopy_enum_labels_forget_type(objectId);
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
