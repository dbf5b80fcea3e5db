/*
 * alter.c
 *		ALTER of a tcopy table's columns or key, checked before it runs.
 *
 * The tserver stores a table's rows under the columns and key they were
 * written with (their number, kinds and key images; protocol.md).  Once
 * it holds the table:
 *	- ADD COLUMN is instant: old rows end early and read the column's
 *	  missing value (a constant default, kept in attmissingval);
 *	- DROP COLUMN is instant: the column keeps its place among the wire
 *	  columns (option dropped_positions);
 *	- ALTER COLUMN TYPE, a change of option key or key_form, and ADD
 *	  COLUMN of a serial or identity column or with a volatile default
 *	  rewrite the rows into a new tserver table inside the transaction
 *	  (alter_rewrite.c), as a heap rewrite does;
 *	- ADD COLUMN of a generated column, of a domain with constraints, or
 *	  NOT NULL without a default is refused before anything changes.
 * Before the tserver has it (no row ever written), every ALTER runs, and
 * the table is made on the tserver as it is then.  A key column is never
 * dropped, as Postgres never drops a partition key column.  Renames keep
 * the stored names (rename.c); the key named after any ALTER is checked by
 * the hook (tcopy_check_key).
 */

#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parse_type.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
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

/* Whether cmd, an ALTER ... OPTIONS, changes rel's key or key_form. */
static bool
key_options_change(Relation rel, AlterTableCmd *cmd)
{
	ListCell   *lc;

	if (cmd->subtype != AT_GenericOptions)
		return false;
	foreach(lc, (List *) cmd->def)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if ((strcmp(def->defname, "key") == 0 || strcmp(def->defname, "key_form") == 0) &&
			key_option_changes(rel, def))
			return true;
	}
	return false;
}

/* Whether column name of rel is among the columns of its key option. */
static bool
is_key_column(Relation rel, const char *name)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), name);
	const char *key = table_option(rel, "key");

	return attnum != InvalidAttrNumber && key != NULL &&
		list_member_int(tcopy_key_attnums(rel, key), attnum);
}

/* Whether typename names a serial type, as transformColumnDefinition tells. */
static bool
is_serial(TypeName *typename)
{
	const char *name;

	if (typename == NULL || list_length(typename->names) != 1 || typename->pct_type ||
		typename->arrayBounds != NIL)
		return false;
	name = strVal(linitial(typename->names));
	return strcmp(name, "smallserial") == 0 || strcmp(name, "serial2") == 0 ||
		strcmp(name, "serial") == 0 || strcmp(name, "serial4") == 0 ||
		strcmp(name, "bigserial") == 0 || strcmp(name, "serial8") == 0;
}

/*
 * Why ADD COLUMN def, on a table the tserver holds, cannot be done: worded
 * for errdetail, or NULL.  *rewrite: the stored rows are rewritten for it
 * (alter_rewrite.c), as a heap table's are: a serial or identity column
 * or a volatile default takes a value per row; otherwise old rows read the
 * column's missing value, with no rewrite.
 */
static const char *
add_column_refusal(ColumnDef *def, bool *rewrite)
{
	Node	   *raw_default = def->raw_default;
	bool		notnull = def->is_not_null;
	bool		identity = def->identity != '\0';
	ListCell   *lc;
	Oid			typid;
	int32		typmod;
	ParseState *pstate;
	Node	   *expr;

	*rewrite = false;
	if (is_serial(def->typeName))
	{
		*rewrite = true;
		return NULL;
	}
	foreach(lc, def->constraints)
	{
		Constraint *con = (Constraint *) lfirst(lc);

		if (!IsA(con, Constraint))
			continue;
		if (con->contype == CONSTR_DEFAULT)
			raw_default = con->raw_expr;
		else if (con->contype == CONSTR_NOTNULL)
			notnull = true;
		else if (con->contype == CONSTR_GENERATED)
			return "A generated column is computed from each row's other columns.";
		else if (con->contype == CONSTR_IDENTITY)
			identity = true;
	}
	if (identity)
	{
		*rewrite = true;		/* the next value of its sequence for each row */
		return NULL;
	}
	pstate = make_parsestate(NULL);
	typenameTypeIdAndMod(pstate, def->typeName, &typid, &typmod);
	if (DomainHasConstraints(typid))
		return "The constraints of its domain are checked against each row.";
	if (raw_default == NULL || (IsA(raw_default, A_Const) && ((A_Const *) raw_default)->isnull))
		return notnull ? "Each row would hold NULL in a NOT NULL column." : NULL;
	expr = cookDefault(pstate, copyObject(raw_default), typid, typmod, def->colname, '\0');
	*rewrite = contain_volatile_functions(expr);
	return NULL;
}

/*
 * A column dropped from a table the tserver holds keeps its place among the
 * wire columns (option dropped_positions): stored rows hold its values
 * there.  Noted before the ALTER runs, while the codec still has the
 * column; recorded after it (tcopy_after_alter), in the same transaction.
 */
typedef struct PendingDrop
{
	Oid			relid;
	int			position;
} PendingDrop;

/* Note the places of the columns stmt drops from rel, which the tserver holds. */
static void
note_dropped_columns(TcopyAlterPending *pending, Relation rel, AlterTableStmt *stmt)
{
	TcopyRelCodec *codec = tcopy_rel_codec(rel, GetUserId());
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
		AttrNumber	attnum;
		PendingDrop *drop;
		MemoryContext oldcontext;

		if (cmd->subtype != AT_DropColumn)
			continue;
		attnum = get_attnum(RelationGetRelid(rel), cmd->name);
		if (attnum <= 0 || codec->column_of_att[attnum - 1] < 0)
			continue;			/* Postgres says it does not exist */
		oldcontext = MemoryContextSwitchTo(pending->cxt);
		drop = palloc(sizeof(PendingDrop));
		drop->relid = RelationGetRelid(rel);
		drop->position = codec->column_of_att[attnum - 1];
		pending->drops = lappend(pending->drops, drop);
		MemoryContextSwitchTo(oldcontext);
	}
}

/* Add position to option dropped_positions of foreign table relid. */
static void
record_dropped_position(Oid relid, int position)
{
	List	   *positions = NIL;
	StringInfoData buf;
	ListCell   *lc;

	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "dropped_positions") == 0)
			positions = tcopy_parse_dropped_positions(defGetString(def));
	}
	positions = list_append_unique_int(positions, position);
	list_sort(positions, list_int_cmp);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "dropped_positions=");
	foreach(lc, positions)
		appendStringInfo(&buf, "%s%d", foreach_current_index(lc) > 0 ? "," : "", lfirst_int(lc));
	tcopy_replace_table_options(relid, list_make1("dropped_positions"), list_make1(buf.data));
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
					 errhint("Set option key to other columns first.")));
}

/* The statement's pending state, made when first needed. */
static TcopyAlterPending *
alter_pending(TcopyAlterPending **pending)
{
	if (*pending == NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(CurTransactionContext, "tcopy alter",
												  ALLOCSET_DEFAULT_SIZES);

		*pending = MemoryContextAllocZero(cxt, sizeof(TcopyAlterPending));
		(*pending)->cxt = cxt;
	}
	return *pending;
}

/*
 * The USING expression of ALTER COLUMN ... TYPE cmd on rel, which Postgres
 * takes for a table with storage only ("is not a table"): transformed
 * against rel's row as it is before the ALTER, and coerced to the new
 * type, as transformAlterTableStmt and ATPrepAlterColumnType do for a
 * heap.  A target entry of the column's number, for the rewrite.
 */
static TargetEntry *
transform_using(Relation rel, AlterTableCmd *cmd, const char *queryString)
{
	ColumnDef  *def = castNode(ColumnDef, cmd->def);
	ParseState *pstate = make_parsestate(NULL);
	ParseNamespaceItem *nsitem;
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), cmd->name);
	Node	   *expr;
	Oid			typid;
	int32		typmod;

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						cmd->name, RelationGetRelationName(rel))));
	pstate->p_sourcetext = queryString;	/* for errors' positions */
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, NULL, false, true);
	addNSItemToQuery(pstate, nsitem, false, true, true);
	expr = transformExpr(pstate, def->raw_default, EXPR_KIND_ALTER_COL_TRANSFORM);
	typenameTypeIdAndMod(pstate, def->typeName, &typid, &typmod);
	expr = coerce_to_target_type(pstate, expr, exprType(expr), typid, typmod,
								 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
	if (expr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("result of USING clause for column \"%s\""
						" cannot be cast automatically to type %s",
						cmd->name, format_type_be(typid)),
				 errhint("You might need to add an explicit cast.")));
	assign_expr_collations(pstate, expr);
	return makeTargetEntry((Expr *) expr, attnum, NULL, false);
}

/*
 * Before an ALTER TABLE or ALTER FOREIGN TABLE runs: refuse what would
 * leave a tcopy table among its targets (the table and, unless ONLY, its
 * inheritors and partitions) unusable; note what it drops and read what it
 * rewrites, for tcopy_after_alter (the result: NULL when nothing), with
 * the USING expressions of its ALTER COLUMN TYPEs, which it takes off stmt
 * (the caller's to change; queryString, the statement's text, places their
 * errors).
 *
 * The table is locked as the statement locks it, first (Postgres' lookup
 * with its permission checks, AlterTableLookupRelation), and a tcopy table
 * among its inheritors with that lock too when a command that recurses
 * there may need its rows: a weaker lock taken first, then raised, would
 * deadlock two such ALTERs, or one against a transaction that read the
 * table and then ALTERs it, where the heap's wait in turn.
 */
TcopyAlterPending *
tcopy_check_alter(AlterTableStmt *stmt, const char *queryString)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	TcopyAlterPending *pending = NULL;
	LOCKMODE	lockmode;
	LOCKMODE	tablemode = AccessShareLock;
	List	   *relids;
	ListCell   *lc;

	/*
	 * the statement reports a missing table; the extension's update scripts
	 * describe stored tables as they are (key_form, 1.3)
	 */
	if (!OidIsValid(relid) || creating_extension)
		return NULL;
	lockmode = AlterTableGetLockLevel(stmt->cmds);
	foreach(lc, stmt->cmds)
	{
		AlterTableType subtype = ((AlterTableCmd *) lfirst(lc))->subtype;

		if (subtype == AT_AddColumn || subtype == AT_DropColumn ||
			subtype == AT_AlterColumnType || subtype == AT_GenericOptions)
			tablemode = lockmode;
	}
	relid = AlterTableLookupRelation(stmt, lockmode);
	if (!OidIsValid(relid))
		return NULL;
	relids = stmt->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach(lc, relids)
	{
		Oid			tableid = lfirst_oid(lc);
		Relation	rel;
		TcopyTableOptions options;
		const char *add_refusal = NULL;
		ColumnDef  *added = NULL;
		bool		drops = false;
		bool		rewrite = false;
		bool		key_changes = false;
		List	   *usings = NIL;
		bool		retypes = false;
		bool		held = false;
		uint32		table_id;
		ListCell   *cell;

		/*
		 * Postgres refuses a user who does not own the table before it
		 * locks it: nothing here for one (no lock, no read of the rows)
		 */
		if (!tcopy_relation_is_tcopy_table(tableid) || !pg_class_ownercheck(tableid, GetUserId()))
			continue;
		rel = relation_open(tableid, tablemode);
		/* a table made before 1.2 has none: the statement says so */
		if (tcopy_table_name(rel, true) == NULL)
		{
			relation_close(rel, NoLock);
			continue;
		}
		foreach(cell, stmt->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(cell);
			bool		add_rewrites = false;

			if (cmd->subtype == AT_DropColumn)
			{
				check_key_column_drop(rel, cmd->name);
				drops = true;
			}
			if (cmd->subtype == AT_AddColumn && add_refusal == NULL)
			{
				added = (ColumnDef *) cmd->def;
				add_refusal = add_column_refusal(added, &add_rewrites);
				rewrite |= add_rewrites;
			}
			if (cmd->subtype == AT_AlterColumnType)
			{
				rewrite = retypes = true;
				key_changes |= is_key_column(rel, cmd->name);
				/* a partition's USING is Postgres' to refuse, as for any foreign table */
				if (castNode(ColumnDef, cmd->def)->raw_default != NULL && tableid == relid)
					usings = lappend(usings, cmd);
			}
			if (key_options_change(rel, cmd))
				rewrite = key_changes = true;
		}
		if (rewrite || add_refusal != NULL || drops)
		{
			tcopy_get_table_options(rel, GetUserId(), &options);
			held = !tcopy_address_is_null(options.address) &&
				tcopy_lookup_table_id(&options, NULL, "to alter it", &table_id);
		}
		if (held && add_refusal != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot add column \"%s\" to foreign table \"%s\" as defined, as the tserver holds its rows",
							added->colname, RelationGetRelationName(rel)),
					 errdetail("%s", add_refusal),
					 errhint("Add the column without it (or with a constant default), then UPDATE the rows.")));
		if (held && drops)
			note_dropped_columns(alter_pending(&pending), rel, stmt);
		if (usings != NIL)
		{
			List	   *transforms = NIL;

			/* the rewrite applies them; Postgres, left with none, alters the catalog */
			foreach(cell, usings)
			{
				AlterTableCmd *cmd = (AlterTableCmd *) lfirst(cell);

				/* checked as a heap's is, even with no rows to apply it to */
				TargetEntry *te = transform_using(rel, cmd, queryString);

				if (held)
					transforms = lappend(transforms, te);
				castNode(ColumnDef, cmd->def)->raw_default = NULL;
			}
			usings = transforms;
		}
		if (held && rewrite)
			tcopy_rewrite_read(alter_pending(&pending), rel, key_changes, usings);

		/*
		 * Postgres takes a foreign table's ALTER COLUMN TYPE for one without
		 * a rewrite, which keeps the column's missing value (which
		 * tcopy_after_alter stores) and only relabels it with the new type:
		 * an int's Datum read as a text's crashed the backend.  The rows
		 * need none now: read above, they go to storage holding every
		 * column, or there are none.
		 */
		if (retypes)
		{
			RelationClearMissing(rel);
			CommandCounterIncrement();
		}
		relation_close(rel, NoLock);
	}
	return pending;
}

/*
 * Keep in attmissingval the value rows of rel stored before ADD COLUMN
 * attnum read: its default, evaluated now, as StoreAttrDefault does for a
 * relation with storage (not for a foreign table).  Nothing when the
 * column has no default, a NULL one, a volatile one, or a missing value
 * already.
 */
static void
store_missing_value(Relation rel, AttrNumber attnum)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Node	   *expr;
	EState	   *estate;
	ExprState  *exprstate;
	Datum		value;
	bool		isnull;
	Relation	attrel;
	HeapTuple	tuple;
	HeapTuple	newtuple;
	Datum		values[Natts_pg_attribute] = {0};
	bool		nulls[Natts_pg_attribute] = {0};
	bool		replace[Natts_pg_attribute] = {0};

	if (!att->atthasdef || att->atthasmissing || att->attgenerated)
		return;
	expr = build_column_default(rel, attnum);
	if (expr == NULL)
		return;
	expr = (Node *) expression_planner((Expr *) expr);
	if (contain_volatile_functions(expr))
		return;
	estate = CreateExecutorState();
	exprstate = ExecPrepareExpr((Expr *) expr, estate);
	value = ExecEvalExpr(exprstate, GetPerTupleExprContext(estate), &isnull);
	if (!isnull)
	{
		/* as StoreAttrDefault: a one-element array of the column's type */
		value = PointerGetDatum(construct_array(&value, 1, att->atttypid, att->attlen,
												att->attbyval, att->attalign));
		attrel = table_open(AttributeRelationId, RowExclusiveLock);
		tuple = SearchSysCacheCopy2(ATTNUM, ObjectIdGetDatum(RelationGetRelid(rel)),
									Int16GetDatum(attnum));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for attribute %d of relation %u",
				 attnum, RelationGetRelid(rel));
		values[Anum_pg_attribute_atthasmissing - 1] = BoolGetDatum(true);
		replace[Anum_pg_attribute_atthasmissing - 1] = true;
		values[Anum_pg_attribute_attmissingval - 1] = value;
		replace[Anum_pg_attribute_attmissingval - 1] = true;
		newtuple = heap_modify_tuple(tuple, RelationGetDescr(attrel), values, nulls, replace);
		CatalogTupleUpdate(attrel, &newtuple->t_self, newtuple);
		heap_freetuple(newtuple);
		heap_freetuple(tuple);
		table_close(attrel, RowExclusiveLock);
	}
	FreeExecutorState(estate);
}

/*
 * After an ALTER TABLE or ALTER FOREIGN TABLE ran: the places of the
 * columns it dropped and the rows read before it (pending, of
 * tcopy_check_alter), then the missing values of the columns it added to
 * tcopy tables among its targets.
 */
void
tcopy_after_alter(AlterTableStmt *stmt, TcopyAlterPending *pending)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	List	   *relids;
	ListCell   *lc;
	bool		adds = false;

	if (pending != NULL)
	{
		/* the places the dropped columns keep (the statement may have set options) */
		if (pending->drops != NIL)
			CommandCounterIncrement();
		foreach(lc, pending->drops)
		{
			PendingDrop *drop = (PendingDrop *) lfirst(lc);

			record_dropped_position(drop->relid, drop->position);
			CommandCounterIncrement();
		}
		/* the rows read before it, in the new definition and storage */
		tcopy_rewrite_write(pending);
		MemoryContextDelete(pending->cxt);
	}

	foreach(lc, stmt->cmds)
		if (((AlterTableCmd *) lfirst(lc))->subtype == AT_AddColumn)
			adds = true;
	if (!adds || !OidIsValid(relid) || creating_extension)
		return;
	CommandCounterIncrement();
	relids = stmt->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach(lc, relids)
	{
		Oid			tableid = lfirst_oid(lc);
		Relation	rel;
		ListCell   *cell;

		if (!tcopy_relation_is_tcopy_table(tableid))
			continue;
		rel = relation_open(tableid, NoLock);	/* locked by the statement */
		foreach(cell, stmt->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(cell);
			AttrNumber	attnum;

			if (cmd->subtype != AT_AddColumn)
				continue;
			attnum = get_attnum(tableid, ((ColumnDef *) cmd->def)->colname);
			if (attnum > 0)
				store_missing_value(rel, attnum);
		}
		relation_close(rel, NoLock);
	}
	CommandCounterIncrement();
}
