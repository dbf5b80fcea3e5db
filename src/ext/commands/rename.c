/*
 * rename.c
 *		Renaming a column keeps its values.
 *
 * A tcopy table is bound to its tserver table by its table_name option,
 * which no rename of the table, its schema or its database touches: those
 * need nothing.  Columns are matched by name, though: renaming a column
 * first sets its column_name option to the name its values are stored
 * under, and renames it in the table's key option, which names Postgres
 * columns.  A rename through a parent (ALTER TABLE parent RENAME COLUMN,
 * which Postgres carries to every inheritor and partition) does the same
 * in each tcopy table below it.  Only a table's owner may set its options;
 * Postgres refuses a rename by anyone else, in its words.  The utility
 * hook (hook.c) calls this before the statement runs, in the same
 * transaction, so that a rename that fails takes the options back with
 * it; it is there from a session's first statement when tcopy is in
 * shared_preload_libraries, as the README asks.
 */

#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
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

#include "tcopy/catalog.h"
#include "tcopy/commands.h"

/* a rename's own ALTER runs: the hook checks nothing of it (alter.c) */
bool		tcopy_pinning_rename = false;

/* Run one utility statement of a rename's through SPI. */
static void
run_utility(const char *sql)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	tcopy_pinning_rename = true;
	PG_TRY();
	{
		if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not run: %s", sql);
	}
	PG_FINALLY();
	{
		tcopy_pinning_rename = false;
	}
	PG_END_TRY();
	SPI_finish();
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

/*
 * Before a statement runs that renames a column of a table (and, unless
 * ONLY, of its inheritors and partitions): pin the column in each tcopy
 * table among them.  Anything else is left alone.
 */
void
tcopy_pin_before_rename(Node *parsetree)
{
	RenameStmt *stmt = (RenameStmt *) parsetree;
	Oid			relid;
	List	   *relids;
	ListCell   *lc;

	if (!IsA(parsetree, RenameStmt) || stmt->renameType != OBJECT_COLUMN ||
		(stmt->relationType != OBJECT_FOREIGN_TABLE && stmt->relationType != OBJECT_TABLE))
		return;
	/* the statement itself reports a missing relation */
	relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(relid))
		return;
	/* as renameatt does: the inheritors too, unless ONLY */
	relids = stmt->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach(lc, relids)
	{
		if (tcopy_relation_is_tcopy_table(lfirst_oid(lc)))
			pin_column_name(lfirst_oid(lc), stmt->subname, stmt->newname);
	}
}
