/*
 * copy_bad_rows.c
 *		ON_ERROR, LOG_VERBOSITY, REJECT_LIMIT and reject_table for the COPY
 *		hook: Postgres 17/18's bad-row options on Postgres 15.
 *
 * Postgres 17 skips a row whose field an input function refuses through a
 * soft error (an ErrorSaveContext); Postgres 15's input functions have no
 * soft errors, they throw.  copy.c therefore reads a row inside PG_TRY when
 * ON_ERROR ignore is set (only then: a COPY without it pays nothing), and
 * hands what it caught to tcopy_bad_row_skippable, which swallows only an
 * error that no subtransaction is needed to clean up after:
 *
 *   - raised while a field was being converted (cstate->cur_attname set),
 *     with SQLSTATE class 22 (data exception), or 23502/23514 raised by a
 *     domain's NOT NULL or CHECK, and only for a column whose conversion is
 *     known to hold nothing when it throws: a base type with a built-in input
 *     function, not a composite (record_in keeps a TupleDesc reference), not
 *     an array or domain over one, and domains whose CHECK expressions call
 *     built-in functions only (a user function may have written, taken
 *     locks or opened SPI: only a subtransaction could undo that);
 *   - the NOT NULL violation (23502) of the row (tcopy's codec raises it),
 *     which Postgres 17 does not skip;
 *   - and nothing when the error left interrupts held.
 *
 * Everything else (line structure errors, encoding errors of the input,
 * errors of the WHERE clause, of defaults, of the tserver) is re-thrown and
 * fails the COPY as it does in Postgres 17.  docs/architecture.md has the
 * reasoning; README.md the user's view.
 */

#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_node.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

#include "tcopy/codec.h"
#include "tcopy/copy.h"

/* CopyLimitPrintoutLength's limit (copyfromparse.c) */
#define TCOPY_MAX_COPY_DATA_DISPLAY 100

static int64
bad_rows_reject_limit(DefElem *def)
{
	int64		reject_limit;

	/* Postgres 18's defGetCopyRejectLimitOption */
	if (def->arg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s requires a numeric value", def->defname)));
	else if (nodeTag(def->arg) == T_String)
		reject_limit = pg_strtoint64(strVal(def->arg));
	else
		reject_limit = defGetInt64(def);
	if (reject_limit <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("REJECT_LIMIT (%lld) must be greater than zero",
						(long long) reject_limit)));
	return reject_limit;
}

/* The reject table: a table the user may insert into. */
static Oid
bad_rows_reject_table(DefElem *def)
{
	List	   *names = stringToQualifiedNameList(defGetString(def));
	RangeVar   *rv = makeRangeVarFromNameList(names);
	Oid			relid = RangeVarGetRelid(rv, RowExclusiveLock, false);
	char		relkind = get_rel_relkind(relid);
	AclResult	aclresult;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("reject table \"%s\" is not a table", get_rel_name(relid)),
				 errdetail("Skipped rows go to a table of this database, in the COPY's transaction.")));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_INSERT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(relid));
	return relid;
}

/* Whether the COPY's other options ask for the binary format. */
static bool
bad_rows_format_is_binary(List *options)
{
	ListCell   *cur;

	foreach(cur, options)
	{
		DefElem    *def = lfirst_node(DefElem, cur);

		if (strcmp(def->defname, "format") == 0 && def->arg != NULL &&
			strcmp(defGetString(def), "binary") == 0)
			return true;
	}
	return false;
}

List *
tcopy_bad_rows_options(ParseState *pstate, List *options, TcopyBadRows *bad_rows)
{
	List	   *rest = NIL;
	ListCell   *cur;
	bool		on_error_specified = false;
	bool		log_verbosity_specified = false;
	DefElem    *reject_table = NULL;

	memset(bad_rows, 0, sizeof(TcopyBadRows));
	bad_rows->verbosity = TCOPY_LOG_VERBOSITY_DEFAULT;
	foreach(cur, options)
	{
		DefElem    *def = lfirst_node(DefElem, cur);

		/* in Postgres 18's words (ProcessCopyOptions) */
		if (strcmp(def->defname, "on_error") == 0)
		{
			char	   *sval;

			if (on_error_specified)
				errorConflictingDefElem(def, pstate);
			on_error_specified = true;
			sval = defGetString(def);
			if (pg_strcasecmp(sval, "stop") == 0)
				bad_rows->ignore = false;
			else if (pg_strcasecmp(sval, "ignore") == 0)
				bad_rows->ignore = true;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("COPY %s \"%s\" not recognized", "ON_ERROR", sval),
						 parser_errposition(pstate, def->location)));
		}
		else if (strcmp(def->defname, "log_verbosity") == 0)
		{
			char	   *sval;

			if (log_verbosity_specified)
				errorConflictingDefElem(def, pstate);
			log_verbosity_specified = true;
			sval = defGetString(def);
			if (pg_strcasecmp(sval, "silent") == 0)
				bad_rows->verbosity = TCOPY_LOG_VERBOSITY_SILENT;
			else if (pg_strcasecmp(sval, "default") == 0)
				bad_rows->verbosity = TCOPY_LOG_VERBOSITY_DEFAULT;
			else if (pg_strcasecmp(sval, "verbose") == 0)
				bad_rows->verbosity = TCOPY_LOG_VERBOSITY_VERBOSE;
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("COPY %s \"%s\" not recognized", "LOG_VERBOSITY", sval),
						 parser_errposition(pstate, def->location)));
		}
		else if (strcmp(def->defname, "reject_limit") == 0)
		{
			if (bad_rows->reject_limit > 0)
				errorConflictingDefElem(def, pstate);
			bad_rows->reject_limit = bad_rows_reject_limit(def);
		}
		else if (strcmp(def->defname, "reject_table") == 0)
		{
			if (reject_table != NULL)
				errorConflictingDefElem(def, pstate);
			reject_table = def;
		}
		else
			rest = lappend(rest, def);
	}

	if (bad_rows->ignore && bad_rows_format_is_binary(rest))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("only ON_ERROR STOP is allowed in BINARY mode")));
	if (bad_rows->reject_limit > 0 && !bad_rows->ignore)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("COPY %s requires %s to be set to %s",
						"REJECT_LIMIT", "ON_ERROR", "IGNORE")));
	if (reject_table != NULL)
	{
		if (!bad_rows->ignore)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("COPY %s requires %s to be set to %s",
							"REJECT_TABLE", "ON_ERROR", "IGNORE")));
		bad_rows->reject_relid = bad_rows_reject_table(reject_table);
	}
	return rest;
}

static bool
bad_rows_user_function(Oid funcid, void *context)
{
	return funcid >= FirstGenbkiObjectId;
}

/* Whether converting a field of type typid can throw without a subtransaction. */
static bool
bad_rows_type_skippable(Oid typid)
{
	Oid			base = getBaseType(typid);
	Oid			elem;
	Oid			input;
	Oid			ioparam;

	if (base != typid)
	{
		/* its reset callback points to it: it lives as long as the context */
		DomainConstraintRef *ref = palloc(sizeof(DomainConstraintRef));
		ListCell   *cur;

		/* the domain's constraints and its base domains' */
		InitDomainConstraintRef(typid, ref, CurrentMemoryContext, false);
		foreach(cur, ref->constraints)
		{
			DomainConstraintState *con = lfirst(cur);

			if (con->check_expr != NULL &&
				check_functions_in_node((Node *) con->check_expr,
										bad_rows_user_function, NULL))
				return false;
		}
	}
	if (type_is_rowtype(base))
		return false;
	elem = get_element_type(base);
	if (OidIsValid(elem) && !bad_rows_type_skippable(elem))
		return false;
	getTypeInputInfo(base, &input, &ioparam);
	return input < FirstGenbkiObjectId;
}

void
tcopy_bad_rows_begin(TcopyBadRows *bad_rows, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	bad_rows->relid = RelationGetRelid(rel);
	bad_rows->skippable = palloc0(sizeof(bool) * Max(desc->natts, 1));
	for (int m = 0; m < desc->natts; m++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, m);

		if (!att->attisdropped)
			bad_rows->skippable[m] = bad_rows_type_skippable(att->atttypid);
	}
	bad_rows->holdoff = InterruptHoldoffCount;
}

/* The attribute number (0-based) of the column named attname, or -1. */
static int
bad_rows_column(CopyFromState cstate, const char *attname)
{
	TupleDesc	desc = RelationGetDescr(cstate->rel);

	for (int m = 0; m < desc->natts; m++)
		if (strcmp(NameStr(TupleDescAttr(desc, m)->attname), attname) == 0)
			return m;
	return -1;
}

bool
tcopy_bad_row_skippable(TcopyBadRows *bad_rows, CopyFromState cstate,
						ErrorData *edata)
{
	int			sqlstate = edata->sqlerrcode;

	if (edata->elevel != ERROR || InterruptHoldoffCount != bad_rows->holdoff ||
		CritSectionCount != 0)
		return false;
	if (cstate->cur_attname != NULL)
	{
		int			m = bad_rows_column(cstate, cstate->cur_attname);

		if (m < 0 || !bad_rows->skippable[m])
			return false;
		return ERRCODE_TO_CATEGORY(sqlstate) == ERRCODE_DATA_EXCEPTION ||
			sqlstate == ERRCODE_NOT_NULL_VIOLATION ||
			sqlstate == ERRCODE_CHECK_VIOLATION;
	}
	/*
	 * The row's NOT NULL, raised by the codec (codec.c) and by nothing else:
	 * not a user function of the WHERE clause that borrowed its SQLSTATE.
	 */
	return sqlstate == ERRCODE_NOT_NULL_VIOLATION && edata->column_name != NULL &&
		edata->funcname != NULL &&
		strcmp(edata->funcname, "tcopy_report_null_violation") == 0;
}

/* CopyLimitPrintoutLength: a value cut to 100 characters for a message. */
static char *
bad_rows_printout(const char *str)
{
	int			slen = strlen(str);
	int			len;
	char	   *res;

	if (slen <= TCOPY_MAX_COPY_DATA_DISPLAY)
		return pstrdup(str);
	len = pg_mbcliplen(str, slen, TCOPY_MAX_COPY_DATA_DISPLAY);
	res = palloc(len + 4);
	memcpy(res, str, len);
	strcpy(res + len, "...");
	return res;
}

/* Postgres 17's context of the NOTICE: the relation only (relname_only). */
static void
bad_rows_relname_callback(void *arg)
{
	errcontext("COPY %s", (const char *) arg);
}

static void
bad_rows_insert_reject(TcopyBadRows *bad_rows, CopyFromState cstate,
					   const char *attname, ErrorData *edata)
{
	StringInfoData sql;
	Oid			argtypes[6] = {TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[6];
	char		nulls[6] = "      ";
	char	   *target;
	int			ret;

	target = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(cstate->rel)),
										RelationGetRelationName(cstate->rel));
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (copy_table, line_number, raw_line, column_name, sqlstate, message) "
					 "VALUES ($1, $2, $3, $4, $5, $6)",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(bad_rows->reject_relid)),
												get_rel_name(bad_rows->reject_relid)));
	args[0] = CStringGetTextDatum(target);
	args[1] = Int64GetDatum((int64) cstate->cur_lineno);
	if (cstate->line_buf_valid)
		args[2] = CStringGetTextDatum(cstate->line_buf.data);
	else
		nulls[2] = 'n';
	if (attname != NULL)
		args[3] = CStringGetTextDatum(attname);
	else
		nulls[3] = 'n';
	args[4] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	args[5] = CStringGetTextDatum(edata->message ? edata->message : "");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args(sql.data, 6, argtypes, args, nulls, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "insert into reject table failed: %s", SPI_result_code_string(ret));
	SPI_finish();
}

void
tcopy_bad_row_skip(TcopyBadRows *bad_rows, CopyFromState cstate,
				   const char *attname, const char *attval, ErrorData *edata)
{
	bad_rows->num_skipped++;
	if (bad_rows->verbosity == TCOPY_LOG_VERBOSITY_VERBOSE)
	{
		ErrorContextCallback *saved = error_context_stack;
		ErrorContextCallback relname;

		/* the line and column are in the message: the context names the table */
		relname.callback = bad_rows_relname_callback;
		relname.arg = (void *) cstate->cur_relname;
		relname.previous = saved ? saved->previous : NULL;
		error_context_stack = &relname;
		if (attval != NULL)
			ereport(NOTICE,
					errmsg("skipping row due to data type incompatibility at line %llu for column \"%s\": \"%s\"",
						   (unsigned long long) cstate->cur_lineno, attname,
						   bad_rows_printout(attval)));
		else
			ereport(NOTICE,
					errmsg("skipping row due to data type incompatibility at line %llu for column \"%s\": null input",
						   (unsigned long long) cstate->cur_lineno, attname));
		error_context_stack = saved;
	}
	if (OidIsValid(bad_rows->reject_relid))
		bad_rows_insert_reject(bad_rows, cstate, attname, edata);
	if (bad_rows->reject_limit > 0 && bad_rows->num_skipped > (uint64) bad_rows->reject_limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("skipped more than REJECT_LIMIT (%lld) rows due to data type incompatibility",
						(long long) bad_rows->reject_limit)));
}

void
tcopy_bad_rows_end(TcopyBadRows *bad_rows)
{
	if (bad_rows->ignore && bad_rows->num_skipped > 0 &&
		bad_rows->verbosity >= TCOPY_LOG_VERBOSITY_DEFAULT)
		ereport(NOTICE,
				errmsg_plural("%llu row was skipped due to data type incompatibility",
							  "%llu rows were skipped due to data type incompatibility",
							  (unsigned long long) bad_rows->num_skipped,
							  (unsigned long long) bad_rows->num_skipped));
}
