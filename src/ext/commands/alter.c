/*
 * alter.c
 *		ALTER of a tcopy table's columns or key, checked before it runs.
 *
 * The tserver stores a table's rows under the columns and key they were
 * written with (their number, kinds and key images; protocol.md), and has
 * no way to change them in place: a foreign table whose definition no
 * longer matched could not be read or written.  So once the tserver holds
 * the table, ADD COLUMN, DROP COLUMN, ALTER COLUMN TYPE and a change of
 * option key or key_form are refused before anything changes, with the
 * way to get there (a new table, the rows copied into it).  Before the
 * tserver has it (no row ever written), they run, and the table is made
 * on the tserver as it is then.  A key column is never dropped, as Postgres
 * never drops a partition key column.  Renames keep the stored names
 * (rename.c); the key named after any ALTER is checked by the hook
 * (tcopy_check_key).
 */

#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/commands.h"

/* The value of rel's table option name, or NULL. */
static const char *
table_option(Relation rel, const char *name)
{
	ListCell   *lc;

	foreach(lc, GetForeignTable(RelationGetRelid(rel))->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}

/*
 * Whether def, an option of ALTER ... OPTIONS, changes rel's key or
 * key_form: dropped, or set to other columns or another form (setting the
 * same columns, however spelled, changes nothing).
 */
static bool
key_option_changes(Relation rel, DefElem *def)
{
	const char *now = table_option(rel, def->defname);

	if (def->defaction == DEFELEM_DROP || now == NULL)
		return true;
	if (strcmp(def->defname, "key") == 0)
		return !equal(tcopy_key_attnums(rel, now), tcopy_key_attnums(rel, defGetString(def)));
	return strcmp(now, defGetString(def)) != 0;
}

/*
 * What cmd does to rel's stored layout, worded for the refusal ("add
 * column \"x\" to"), or NULL when it leaves the layout alone.
 */
static const char *
layout_change(Relation rel, AlterTableCmd *cmd)
{
	ListCell   *lc;

	switch (cmd->subtype)
	{
		case AT_AddColumn:
			return psprintf("add column \"%s\" to", ((ColumnDef *) cmd->def)->colname);
		case AT_DropColumn:
			return psprintf("drop column \"%s\" of", cmd->name);
		case AT_AlterColumnType:
			return psprintf("change the type of column \"%s\" of", cmd->name);
		case AT_GenericOptions:
			foreach(lc, (List *) cmd->def)
			{
				DefElem    *def = (DefElem *) lfirst(lc);

				if ((strcmp(def->defname, "key") == 0 || strcmp(def->defname, "key_form") == 0) &&
					key_option_changes(rel, def))
					return psprintf("change option \"%s\" of", def->defname);
			}
			return NULL;
		default:
			return NULL;
	}
}

/* Refuse to drop column name of tcopy table rel when its key names it. */
static void
check_key_column_drop(Relation rel, const char *name)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), name);
	const char *key;

	if (attnum == InvalidAttrNumber)
		return;					/* Postgres says it does not exist */
	key = table_option(rel, "key");
	if (key != NULL && list_member_int(tcopy_key_attnums(rel, key), attnum))
		ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("cannot drop column \"%s\" because it is part of the key of foreign table \"%s\"",
							name, RelationGetRelationName(rel)),
					 errhint("Set option key to other columns first, if the tserver does not yet hold the table.")));
}

/*
 * Before an ALTER TABLE or ALTER FOREIGN TABLE runs: refuse what would
 * leave a tcopy table among its targets (the table and, unless ONLY, its
 * inheritors and partitions) unusable.
 */
void
tcopy_check_alter(AlterTableStmt *stmt)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	List	   *relids;
	ListCell   *lc;

	/*
	 * the statement reports a missing table; the extension's update scripts
	 * describe stored tables as they are (key_form, 1.3)
	 */
	if (!OidIsValid(relid) || creating_extension)
		return;
	relids = stmt->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach(lc, relids)
	{
		Oid			tableid = lfirst_oid(lc);
		Relation	rel;
		TcopyTableOptions options;
		const char *change = NULL;
		uint32		table_id;
		ListCell   *cell;

		if (!tcopy_relation_is_tcopy_table(tableid))
			continue;
		rel = relation_open(tableid, AccessShareLock);
		/* a table made before 1.2 has none: the statement says so */
		if (tcopy_table_name(rel, true) == NULL)
		{
			relation_close(rel, AccessShareLock);
			continue;
		}
		foreach(cell, stmt->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(cell);

			if (cmd->subtype == AT_DropColumn)
				check_key_column_drop(rel, cmd->name);
			if (change == NULL)
				change = layout_change(rel, cmd);
		}
		if (change != NULL)
		{
			tcopy_get_table_options(rel, GetUserId(), &options);
			if (!tcopy_address_is_null(options.address) &&
				tcopy_lookup_table_id(&options, NULL, "to alter it", &table_id))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot %s foreign table \"%s\", which the tserver holds",
								change, RelationGetRelationName(rel)),
						 errdetail("The tserver table \"%s\" stores its rows under the present columns and key, "
								   "which tcopy cannot change in place.", options.table_name),
						 errhint("Create a foreign table with the new definition, copy the rows into it "
								 "(INSERT INTO new_table SELECT ... FROM old_table), and drop the old one.")));
		}
		relation_close(rel, AccessShareLock);
	}
}
