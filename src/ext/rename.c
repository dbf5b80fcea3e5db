/*
 * rename.c
 *		Renames keep a table's rows.
 *
 * A tcopy table without a table_name option is stored on the tserver
 * under a name made of its database, schema and table names.  Renaming the
 * table, moving it to another schema or renaming its schema would point it
 * at another, empty tserver table, the rows left behind under the old
 * name.  So, before such a statement runs, the utility hook (hook.c)
 * sets table_name to the name the table has been using, by an ALTER
 * FOREIGN TABLE ... OPTIONS (ADD table_name ...) in the same transaction,
 * undone with the rename if it fails.  Only a table's owner may set its
 * options: a rename by anyone else fails with Postgres' own error, and a
 * schema rename that would move another role's table without the option
 * is refused, saying so.  The hook is there from a session's first statement
 * when tcopy is in shared_preload_libraries, as the README asks.
 * Renaming a database cannot be handled so (its tables are not reachable
 * from another database): the README says to set table_name first.
 *
 * Columns are matched by name too: renaming a column first sets its
 * column_name option to the name its values are stored under, and renames
 * it in the table's key option, which names Postgres columns.
 */
#include "tcopy.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "commands/defrem.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* Run one utility statement through SPI. */
static void
run_utility(const char *sql)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not run: %s", sql);
	SPI_finish();
}

/*
 * Set the table_name option of tcopy table relid, if it has none; schema
 * names the schema being renamed, else NULL (the table is).
 */
static void
pin_table_name(Oid relid, const char *schema)
{
	ForeignTable *table = GetForeignTable(relid);
	Relation	rel;
	char	   *name;
	char	   *sql;
	ListCell   *lc;

	foreach(lc, table->options)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "table_name") == 0)
			return;
	}
	rel = table_open(relid, AccessShareLock);
	name = tcopy_default_table_name(rel);
	sql = psprintf("ALTER FOREIGN TABLE %s OPTIONS (ADD table_name %s)",
				   quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											  RelationGetRelationName(rel)),
				   quote_literal_cstr(name));
	table_close(rel, NoLock);

	if (!pg_class_ownercheck(relid, GetUserId()))
	{
		/* renaming the table itself: Postgres refuses it, in its words */
		if (schema == NULL)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot rename schema \"%s\": its tcopy table \"%s\" has no table_name option",
						schema, get_rel_name(relid)),
				 errdetail("Its rows are stored on the tserver under \"%s\", a name made of the schema's.",
						   name),
				 errhint("The table's owner can keep that name with: %s.", sql)));
	}

	run_utility(sql);
}

/*
 * Before column oldname of tcopy table relid is renamed to newname: set
 * its column_name option, and rename it in the key option.  Nothing for
 * anyone but the owner, or a column that is not there: Postgres refuses
 * the rename in its words.
 */
static void
pin_column_name(Oid relid, const char *oldname, const char *newname)
{
	AttrNumber	attnum = get_attnum(relid, oldname);
	ForeignTable *table;
	char	   *qualified;
	bool		pinned = false;
	ListCell   *lc;

	if (attnum <= 0 || !pg_class_ownercheck(relid, GetUserId()))
		return;
	qualified = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
										   get_rel_name(relid));
	foreach(lc, GetForeignColumnOptions(relid, attnum))
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "column_name") == 0)
			pinned = true;
	}
	if (!pinned)
		run_utility(psprintf("ALTER FOREIGN TABLE %s ALTER COLUMN %s OPTIONS (ADD column_name %s)",
							 qualified, quote_identifier(oldname),
							 quote_literal_cstr(oldname)));

	table = GetForeignTable(relid);
	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		StringInfoData key;
		ListCell   *name;
		bool		renamed = false;

		if (strcmp(def->defname, "key") != 0)
			continue;
		initStringInfo(&key);
		foreach(name, tcopy_parse_key(defGetString(def)))
		{
			const char *column = (const char *) lfirst(name);

			if (strcmp(column, oldname) == 0)
			{
				column = newname;
				renamed = true;
			}
			appendStringInfo(&key, "%s%s", key.len > 0 ? "," : "", quote_identifier(column));
		}
		if (renamed)
			run_utility(psprintf("ALTER FOREIGN TABLE %s OPTIONS (SET key %s)",
								 qualified, quote_literal_cstr(key.data)));
	}
}

/* Pin every tcopy table in schema nspid, named schema. */
static void
pin_schema(Oid nspid, const char *schema)
{
	List	   *relids = NIL;
	ListCell   *lc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT oid FROM pg_catalog.pg_class "
							  "WHERE relnamespace = $1 AND relkind = 'f' ORDER BY oid",
							  1, (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(nspid)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the foreign tables of schema %u", nspid);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		relid = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
										  &isnull);

		relids = lappend_oid(relids, DatumGetObjectId(relid));
	}
	SPI_finish();

	foreach(lc, relids)
	{
		if (tcopy_relation_is_tcopy_table(lfirst_oid(lc)))
			pin_table_name(lfirst_oid(lc), schema);
	}
}

/* Whether a rename or schema change of objtype moves a relation. */
static bool
moves_relation(ObjectType objtype)
{
	return objtype == OBJECT_FOREIGN_TABLE || objtype == OBJECT_TABLE;
}

void
tcopy_pin_before_rename(Node *parsetree)
{
	RangeVar   *relation = NULL;

	if (IsA(parsetree, RenameStmt))
	{
		RenameStmt *stmt = (RenameStmt *) parsetree;

		if (stmt->renameType == OBJECT_COLUMN && moves_relation(stmt->relationType))
		{
			Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);

			if (tcopy_relation_is_tcopy_table(relid))
				pin_column_name(relid, stmt->subname, stmt->newname);
			return;
		}
		if (stmt->renameType == OBJECT_SCHEMA)
		{
			Oid			nspid = get_namespace_oid(stmt->subname, true);

			if (OidIsValid(nspid))
				pin_schema(nspid, stmt->subname);
			return;
		}
		if (moves_relation(stmt->renameType))
			relation = stmt->relation;
	}
	else if (IsA(parsetree, AlterObjectSchemaStmt))
	{
		AlterObjectSchemaStmt *stmt = (AlterObjectSchemaStmt *) parsetree;

		if (moves_relation(stmt->objectType))
			relation = stmt->relation;
	}
	if (relation != NULL)
	{
		/* the statement itself reports a missing relation */
		Oid			relid = RangeVarGetRelid(relation, NoLock, true);

		if (tcopy_relation_is_tcopy_table(relid))
			pin_table_name(relid, NULL);
	}
}
