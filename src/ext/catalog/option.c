/*
 * option.c
 *		The options of tcopy servers, user mappings and foreign tables: the
 *		FDW validator, and their resolution for one foreign table.
 *
 * The validator checks what it can see: option names per object, and each
 * value on its own.  The key option names columns, which the validator
 * cannot check because it is not shown the relation; those names are
 * resolved (and rejected) when the table is used.
 *
 * Every tcopy foreign table has a table_name option, the name of the
 * tserver table holding its rows.  The utility hook (hook.c) gives a
 * CREATE FOREIGN TABLE without one a generated name, unique and never
 * reused, and lets only superusers and the server's owner set one
 * (attach existing data).  The validator is not shown the table, the
 * server or the statement, so the hook tells it which table_name it
 * generated or checked (tcopy_approve_table_name): the validator refuses
 * a foreign table without table_name, and, to anyone but a superuser, a
 * table_name the hook did not approve, which is what happens when tcopy
 * was not loaded before the statement began (the validator's own call
 * loads it).
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/xlog.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "tc_address.h"
#include "tc_client.h"
#include "tcopy/catalog.h"

/* settings, registered in tcopy.c */
int			tcopy_batch_rows = TC_BATCH_ROWS_DEFAULT;	/* tcopy.batch_rows */
int			tcopy_batch_kb = TC_BATCH_KB_DEFAULT;	/* tcopy.batch_size */

/* Limits of the batch options, the same as those of the GUCs. */

/* One valid option: its name and the catalog of the object it applies to. */
typedef struct TcopyOption
{
	const char *keyword;
	Oid			optcontext;		/* ForeignServerRelationId, ... */
} TcopyOption;

static const TcopyOption tcopy_options[] = {
	{"address", ForeignServerRelationId},
	{"namespace", ForeignServerRelationId},
	{"batch_rows", ForeignServerRelationId},
	{"batch_size", ForeignServerRelationId},
	{"sslmode", ForeignServerRelationId},
	{"sslrootcert", ForeignServerRelationId},
	{"token", UserMappingRelationId},
	{"sslcert", UserMappingRelationId},
	{"sslkey", UserMappingRelationId},
	{"key", ForeignTableRelationId},
	{"key_form", ForeignTableRelationId},
	{"on_conflict", ForeignTableRelationId},
	{"table_name", ForeignTableRelationId},
	{"batch_rows", ForeignTableRelationId},
	{"batch_size", ForeignTableRelationId},
	{"dropped_positions", ForeignTableRelationId},
	{"column_name", AttributeRelationId},
	{NULL, InvalidOid}
};

/*
 * What the utility hook says of the statement it is running: that it saw
 * it (statement_checked), and the table_name it generated or checked for
 * it (TopMemoryContext), if any.
 */
static TcopyApproval tcopy_approval = {false, NULL};

PG_FUNCTION_INFO_V1(tcopy_fdw_validator);

/* Whether keyword is a valid option for an object of catalog context. */
static bool
tcopy_is_valid_option(const char *keyword, Oid context)
{
	const TcopyOption *opt;

	for (opt = tcopy_options; opt->keyword != NULL; opt++)
	{
		if (context == opt->optcontext && strcmp(opt->keyword, keyword) == 0)
			return true;
	}
	return false;
}

/* Raise the error for an option that does not apply to this object. */
static void
tcopy_report_invalid_option(const char *keyword, Oid context)
{
	const TcopyOption *opt;
	StringInfoData buf;

	initStringInfo(&buf);
	for (opt = tcopy_options; opt->keyword != NULL; opt++)
	{
		if (context == opt->optcontext)
			appendStringInfo(&buf, "%s%s", (buf.len > 0) ? ", " : "",
							 opt->keyword);
	}

	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
			 errmsg("invalid option \"%s\"", keyword),
			 buf.len > 0
			 ? errhint("Valid options in this context are: %s", buf.data)
			 : errhint("There are no valid options in this context.")));
}

/* Check a server address (or a group's); tc_address_list_parse says what is wrong. */
static void
tcopy_check_address(const char *address)
{
	TcAddress	addrs[TC_ADDRESS_LIST_MAX];
	int			n;
	char		err[256];

	if (!tc_address_list_parse(address, addrs, &n, err, sizeof(err)))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"address\": \"%s\"", address),
				 errdetail_internal("%s", err),
				 errhint("An address is unix:PATH, tcp:HOST:PORT or null:, or the members "
						 "of a replica group separated by commas.")));
}

/*
 * Whether address is null:, the transport that discards every write and
 * so has nothing to read or truncate.  The one test of it in tcopy.
 */
bool
tcopy_address_is_null(const char *address)
{
	return tc_address_is_null(address);
}

/*
 * The value of option batch_rows (rows) or batch_size (KB, or with a unit
 * such as '4MB'), checked against the limits of the matching GUC.
 */
static int
tcopy_parse_batch_option(const char *name, const char *value)
{
	bool		is_size = strcmp(name, "batch_size") == 0;
	int			max = is_size ? TC_BATCH_KB_MAX : TC_BATCH_ROWS_MAX;
	const char *hintmsg = NULL;
	int			result;

	if (!parse_int(value, &result, is_size ? GUC_UNIT_KB : 0, &hintmsg))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"", name, value),
				 hintmsg ? errhint("%s", _(hintmsg)) : 0));
	if (result < 1 || result > max)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("value for option \"%s\" is out of range: \"%s\"", name, value),
				 errdetail("Valid values are between 1%s and %d%s.",
						   is_size ? "kB" : "", max, is_size ? "kB" : "")));
	return result;
}

/*
 * The column names of option key, in key order: a comma-separated list of
 * identifiers (unquoted ones folded to lower case, as in SQL), at least one,
 * none twice.
 */
List *
tcopy_parse_key(const char *value)
{
	List	   *names;
	ListCell   *lc;

	if (!SplitIdentifierString(pstrdup(value), ',', &names) || names == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"key\": \"%s\"", value),
				 errhint("The key is a comma-separated list of column names.")));
	foreach(lc, names)
	{
		ListCell   *other;

		for_each_cell(other, names, lnext(names, lc))
		{
			if (strcmp((char *) lfirst(lc), (char *) lfirst(other)) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears more than once in option key",
								(char *) lfirst(lc))));
		}
	}
	return names;
}

/*
 * The value of option key_form: true for 'bytes', the form of the keys of
 * tables made before 1.3 (the 1.2--1.3 update sets it on them), false for
 * 'image', the form of new tables' keys; an ERROR naming the valid ones
 * otherwise.
 */
static bool
tcopy_parse_key_form(const char *value)
{
	if (strcmp(value, "image") == 0)
		return false;
	if (strcmp(value, "bytes") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for option \"key_form\": \"%s\"", value),
			 errhint("Valid values are: image, bytes.")));
	return false;				/* keep the compiler quiet */
}

/*
 * The value of option dropped_positions: the wire positions (0-based,
 * among the table's columns before its key images) of columns dropped
 * once the tserver held rows, ascending, as "1,4" ('' for none); an
 * ERROR when malformed.  Set by ALTER TABLE ... DROP COLUMN (alter.c).
 */
List *
tcopy_parse_dropped_positions(const char *value)
{
	List	   *positions = NIL;
	const char *p = value;
	long		last = -1;

	while (*p != '\0')
	{
		char	   *end;
		long		pos;

		errno = 0;
		pos = strtol(p, &end, 10);
		if (end == p || errno != 0 || pos <= last || pos >= MaxHeapAttributeNumber ||
			(*end != '\0' && *end != ','))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"dropped_positions\": \"%s\"", value),
					 errhint("It lists column positions, ascending, separated by commas.")));
		positions = lappend_int(positions, (int) pos);
		last = pos;
		p = *end == ',' ? end + 1 : end;
	}
	return positions;
}

TcopyOnConflict
tcopy_parse_on_conflict(const char *value)
{
	if (strcmp(value, "error") == 0)
		return TCOPY_ON_CONFLICT_ERROR;
	if (strcmp(value, "ignore") == 0)
		return TCOPY_ON_CONFLICT_IGNORE;
	if (strcmp(value, "replace") == 0)
		return TCOPY_ON_CONFLICT_REPLACE;
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for option \"on_conflict\": \"%s\"", value),
			 errhint("Valid values are: error, ignore, replace.")));
	return TCOPY_ON_CONFLICT_ERROR; /* keep the compiler quiet */
}

const char *
tcopy_on_conflict_name(TcopyOnConflict policy)
{
	switch (policy)
	{
		case TCOPY_ON_CONFLICT_IGNORE:
			return "ignore";
		case TCOPY_ON_CONFLICT_REPLACE:
			return "replace";
		default:
			return "error";
	}
}

/* The value of option sslmode; an ERROR naming the valid ones otherwise. */
static TcSslMode
tcopy_parse_sslmode(const char *value)
{
	TcSslMode	mode;

	if (!tc_tls_parse_sslmode(value, &mode))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("invalid value for option \"sslmode\": \"%s\"", value),
				 errhint("Valid values are: %s.", TC_SSLMODE_NAMES)));
	return mode;
}

/*
 * A certificate or key file option: an absolute path, as the backend's
 * working directory (the data directory) is no place to look for them.
 */
static void
tcopy_check_tls_file(const char *name, const char *value)
{
	if (!is_absolute_path(value))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
				 errmsg("option \"%s\" must be an absolute path: \"%s\"", name, value)));
}

/* Check the value of one option already known to be valid for its object. */
static void
tcopy_check_option_value(DefElem *def)
{
	const char *value = defGetString(def);

	if (strcmp(def->defname, "address") == 0)
		tcopy_check_address(value);
	else if (strcmp(def->defname, "batch_rows") == 0 ||
			 strcmp(def->defname, "batch_size") == 0)
		(void) tcopy_parse_batch_option(def->defname, value);
	else if (strcmp(def->defname, "key") == 0)
		(void) tcopy_parse_key(value);
	else if (strcmp(def->defname, "key_form") == 0)
		(void) tcopy_parse_key_form(value);
	else if (strcmp(def->defname, "dropped_positions") == 0)
		(void) tcopy_parse_dropped_positions(value);
	else if (strcmp(def->defname, "on_conflict") == 0)
		(void) tcopy_parse_on_conflict(value);
	else if (strcmp(def->defname, "sslmode") == 0)
		(void) tcopy_parse_sslmode(value);
	else if (strcmp(def->defname, "sslrootcert") == 0)
		tcopy_check_tls_file(def->defname, value);
	else if (strcmp(def->defname, "sslcert") == 0 ||
			 strcmp(def->defname, "sslkey") == 0)
	{
		/*
		 * The backend reads these files as the server's operating system
		 * user and presents them to a tserver the mapping's author may
		 * choose: a key of the server's own would be used for them.
		 */
		if (!superuser())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to set option \"%s\"", def->defname),
					 errdetail("Only superusers may name the certificate and key files the server presents to a tserver.")));
		tcopy_check_tls_file(def->defname, value);
	}
	else if (strcmp(def->defname, "table_name") == 0 ||
			 strcmp(def->defname, "column_name") == 0)
	{
		if (value[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("option \"%s\" must not be empty", def->defname)));
		if (strlen(value) > TCOPY_TABLE_NAME_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("option \"%s\" is longer than %d bytes", def->defname,
							TCOPY_TABLE_NAME_MAX)));
	}
	else if (strcmp(def->defname, "namespace") == 0)
	{
		int			max = TCOPY_TABLE_NAME_MAX - 2 * TCOPY_GENERATED_NAME_BYTES -
			TCOPY_OWNER_TAG_MAX;

		if (strlen(value) > max)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("option \"namespace\" is longer than %d bytes", max)));
	}
}

/*
 * Approve name as the table_name of the foreign table the current
 * statement creates or alters (NULL: none), for the validator; returns
 * the approval it replaces, which the caller restores when the statement
 * ends, however it ends.
 */
TcopyApproval
tcopy_approve_table_name(const char *name)
{
	TcopyApproval previous = tcopy_approval;

	tcopy_approval.statement_checked = true;
	tcopy_approval.table_name = name != NULL ?
		MemoryContextStrdup(TopMemoryContext, name) : NULL;
	return previous;
}

/* Put back an approval tcopy_approve_table_name returned. */
void
tcopy_restore_approval(TcopyApproval previous)
{
	if (tcopy_approval.table_name != NULL)
		pfree(tcopy_approval.table_name);
	tcopy_approval = previous;
}

/*
 * The options of a foreign table must name its tserver table; anyone but
 * a superuser must use the name the hook approved (see the file comment).
 */
static void
tcopy_check_table_binding(List *options_list)
{
	const char *table_name = NULL;
	ListCell   *lc;

	foreach(lc, options_list)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "table_name") == 0)
			table_name = defGetString(def);
	}

	if (table_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				 errmsg("a tcopy foreign table needs option \"table_name\""),
				 errdetail("It names the tserver table holding the foreign table's rows."),
				 !tcopy_approval.statement_checked ?
				 errhint("tcopy gives each new table a tserver table of its own, but was not loaded "
						 "when the statement began: put tcopy in shared_preload_libraries "
						 "(or LOAD 'tcopy' first), then retry the statement.") :
				 errhint("A table made before tcopy 1.2 gets it from ALTER EXTENSION tcopy UPDATE.")));

	if ((tcopy_approval.table_name != NULL &&
		 strcmp(table_name, tcopy_approval.table_name) == 0) || superuser())
		return;

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to set option \"table_name\" of a tcopy foreign table"),
			 errdetail("Only superusers and the owner of the foreign server may bind a foreign table "
					   "to existing tserver data."),
			 !tcopy_approval.statement_checked ?
			 errhint("tcopy checks who sets table_name before the statement runs, but was not loaded "
					 "when it began: put tcopy in shared_preload_libraries (or LOAD 'tcopy' first), "
					 "then retry the statement.") :
			 errhint("Leave out table_name: a new tcopy table gets a tserver table of its own.")));
}

/*
 * Validate the options of a CREATE or ALTER of a tcopy FDW, server, user
 * mapping or foreign table: the whole resulting list, given as text[], and
 * the catalog of the object.
 */
Datum
tcopy_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options_list = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	bool		have_address = false;
	bool		have_sslcert = false;
	bool		have_sslkey = false;
	ListCell   *lc;

	foreach(lc, options_list)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (!tcopy_is_valid_option(def->defname, catalog))
			tcopy_report_invalid_option(def->defname, catalog);
		tcopy_check_option_value(def);
		if (strcmp(def->defname, "address") == 0)
			have_address = true;
		else if (strcmp(def->defname, "sslcert") == 0)
			have_sslcert = true;
		else if (strcmp(def->defname, "sslkey") == 0)
			have_sslkey = true;
	}
	if (catalog == ForeignTableRelationId)
		tcopy_check_table_binding(options_list);

	if (have_sslcert != have_sslkey)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				 errmsg("options \"sslcert\" and \"sslkey\" go together"),
				 errhint("Give both the client certificate and its key, or neither.")));

	if (catalog == ForeignServerRelationId && !have_address)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				 errmsg("option \"address\" is required for a tcopy server"),
				 errhint("Give the tserver's address, such as OPTIONS (address 'unix:/tmp/tcopy.sock'), "
						 "or address 'null:' to discard every write.")));

	PG_RETURN_VOID();
}

/*
 * The AttrNumbers of the columns named by option key of rel, in key order.
 * Dropped and system columns do not count as columns: naming one is an
 * error.
 */
List *
tcopy_key_attnums(Relation rel, const char *value)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	List	   *attnums = NIL;
	ListCell   *lc;

	foreach(lc, tcopy_parse_key(value))
	{
		const char *name = (const char *) lfirst(lc);
		AttrNumber	attnum = InvalidAttrNumber;

		for (int i = 0; i < tupdesc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tupdesc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			{
				attnum = att->attnum;
				break;
			}
		}
		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" named in option key of foreign table \"%s\" does not exist",
							name, RelationGetRelationName(rel))));
		attnums = lappend_int(attnums, attnum);
	}
	return attnums;
}

char *
tcopy_column_name(Oid relid, Form_pg_attribute att)
{
	ListCell   *lc;

	foreach(lc, GetForeignColumnOptions(relid, att->attnum))
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "column_name") == 0)
			return pstrdup(defGetString(def));
	}
	return pstrdup(NameStr(att->attname));
}

/*
 * The name tables made before tcopy 1.2 were stored under when they had no
 * table_name option: database, schema and table, quoted where needed so
 * that a dot within a name cannot make two names collide.  The 1.1--1.2
 * update script pins it as their table_name; only a DROP of a table it
 * missed (in a database not updated yet) still uses it.
 */
char *
tcopy_legacy_table_name(Relation rel)
{
	char	   *dbname = get_database_name(MyDatabaseId);
	char	   *nspname = get_namespace_name(RelationGetNamespace(rel));

	return psprintf("%s.%s.%s",
					quote_identifier(dbname),
					quote_identifier(nspname),
					quote_identifier(RelationGetRelationName(rel)));
}

/*
 * The name of foreign table rel on the tserver, its table_name option; NULL
 * when it has none, if missing_ok, else an ERROR.
 */
char *
tcopy_table_name(Relation rel, bool missing_ok)
{
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));
	ListCell   *lc;

	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "table_name") == 0)
			return pstrdup(defGetString(def));
	}
	if (missing_ok)
		return NULL;
	ereport(ERROR,
			(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
			 errmsg("foreign table \"%s\" has no option \"table_name\"",
					RelationGetRelationName(rel)),
			 errdetail("It was made before tcopy 1.2, which binds every table to its tserver data by that option."),
			 errhint("Run ALTER EXTENSION tcopy UPDATE in this database: it sets the option on such tables.")));
	return NULL;				/* keep the compiler quiet */
}

/* Option namespace of server serverid, or NULL. */
char *
tcopy_server_namespace(Oid serverid)
{
	ListCell   *lc;

	foreach(lc, GetForeignServer(serverid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "namespace") == 0)
			return pstrdup(defGetString(def));
	}
	return NULL;
}

/*
 * The options of the user mapping of userid for server serverid, else of
 * its PUBLIC mapping, as GetUserMapping finds them; false when there is
 * neither.  For the callers that must not fail on a missing mapping
 * (recovery, DROP), where GetUserMapping would raise an ERROR.
 */
bool
tcopy_find_user_mapping(Oid userid, Oid serverid, List **options)
{
	Oid			users[2] = {userid, InvalidOid};

	for (int i = 0; i < lengthof(users); i++)
	{
		HeapTuple	tuple;
		Datum		datum;
		bool		isnull;

		tuple = SearchSysCache2(USERMAPPINGUSERSERVER,
								ObjectIdGetDatum(users[i]),
								ObjectIdGetDatum(serverid));
		if (!HeapTupleIsValid(tuple))
			continue;
		datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tuple,
								Anum_pg_user_mapping_umoptions, &isnull);
		*options = isnull ? NIL : untransformRelOptions(datum);
		ReleaseSysCache(tuple);
		return true;
	}
	return false;
}

/*
 * The options of server serverid reached with a user mapping of options
 * mapping_options: address (required) and token, the batch options the
 * server sets over the GUCs.  What a table adds is left unset.
 */
void
tcopy_get_server_options(Oid serverid, List *mapping_options,
						 TcopyTableOptions *options)
{
	ForeignServer *server = GetForeignServer(serverid);
	List	   *lists[2];

	memset(options, 0, sizeof(*options));
	options->serverid = serverid;
	options->batch_rows = tcopy_batch_rows;
	options->batch_bytes = tcopy_batch_kb * 1024;
	options->tls.sslmode = TC_SSLMODE_DEFAULT;

	/* in order of precedence, lowest first */
	lists[0] = server->options;
	lists[1] = mapping_options;
	for (int i = 0; i < lengthof(lists); i++)
	{
		ListCell   *lc;

		foreach(lc, lists[i])
		{
			DefElem    *def = (DefElem *) lfirst(lc);
			const char *value = defGetString(def);

			if (strcmp(def->defname, "address") == 0)
				options->address = pstrdup(value);
			else if (strcmp(def->defname, "token") == 0)
				options->token = pstrdup(value);
			else if (strcmp(def->defname, "sslmode") == 0)
				options->tls.sslmode = tcopy_parse_sslmode(value);
			else if (strcmp(def->defname, "sslrootcert") == 0)
				options->tls.sslrootcert = pstrdup(value);
			else if (strcmp(def->defname, "sslcert") == 0)
				options->tls.sslcert = pstrdup(value);
			else if (strcmp(def->defname, "sslkey") == 0)
				options->tls.sslkey = pstrdup(value);
			else if (strcmp(def->defname, "batch_rows") == 0)
				options->batch_rows = tcopy_parse_batch_option(def->defname, value);
			else if (strcmp(def->defname, "batch_size") == 0)
				options->batch_bytes = tcopy_parse_batch_option(def->defname, value) * 1024;
		}
	}

	if (options->address == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				 errmsg("server \"%s\" has no option \"address\"", server->servername)));
	tcopy_check_address(options->address);
}

/*
 * Resolve every option of foreign table rel reached with a user mapping of
 * options mapping_options: the server's and the mapping's
 * (tcopy_get_server_options), then the table's, whose batch options
 * override the server's.  Without option key_form, keys are 'image';
 * without on_conflict, a duplicate key is an error (1.4 gave tables made
 * before it on_conflict 'replace').
 */
void
tcopy_get_table_options_with(Relation rel, List *mapping_options,
							 TcopyTableOptions *options)
{
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));
	const char *key = NULL;
	ListCell   *lc;

	tcopy_get_server_options(table->serverid, mapping_options, options);
	options->table_name = tcopy_table_name(rel, false);
	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		const char *value = defGetString(def);

		if (strcmp(def->defname, "key") == 0)
			key = value;
		else if (strcmp(def->defname, "key_form") == 0)
			options->key_bytes = tcopy_parse_key_form(value);
		else if (strcmp(def->defname, "dropped_positions") == 0)
			options->dropped_positions = tcopy_parse_dropped_positions(value);
		else if (strcmp(def->defname, "on_conflict") == 0)
			options->on_conflict = tcopy_parse_on_conflict(value);
		else if (strcmp(def->defname, "batch_rows") == 0)
			options->batch_rows = tcopy_parse_batch_option(def->defname, value);
		else if (strcmp(def->defname, "batch_size") == 0)
			options->batch_bytes = tcopy_parse_batch_option(def->defname, value) * 1024;
	}

	if (key != NULL)
		options->key_attnums = tcopy_key_attnums(rel, key);
}

/*
 * The key columns of foreign table rel from its own options alone (no user
 * mapping: for the planner), NIL without a key; *key_bytes as key_form says.
 */
List *
tcopy_table_key_attnums(Relation rel, bool *key_bytes)
{
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));
	const char *key = NULL;
	ListCell   *lc;

	*key_bytes = false;
	foreach(lc, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "key") == 0)
			key = defGetString(def);
		else if (strcmp(def->defname, "key_form") == 0)
			*key_bytes = tcopy_parse_key_form(defGetString(def));
	}
	return key != NULL ? tcopy_key_attnums(rel, key) : NIL;
}

/*
 * Resolve every option of foreign table rel for user userid: the user
 * mapping is required (a missing one is an error, as in postgres_fdw).
 */
void
tcopy_get_table_options(Relation rel, Oid userid, TcopyTableOptions *options)
{
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));
	UserMapping *user = GetUserMapping(userid, table->serverid);

	tcopy_get_table_options_with(rel, user->options, options);
}

/*
 * The user whose mapping reaches the tserver for range table entry rti:
 * the one the executor checks permissions as (a view's owner, for a table
 * read or written through the view), else the current user; as
 * postgres_fdw does.
 */
Oid
tcopy_rte_user(EState *estate, Index rti)
{
	RangeTblEntry *rte;

	if (rti == 0)
		return GetUserId();
	rte = exec_rt_fetch(rti, estate);
	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}
