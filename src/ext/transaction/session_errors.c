/*
 * session_errors.c
 *		A write session's failures that take more than the connection layer
 *		knows to word: a duplicate key of a table with on_conflict 'error',
 *		Postgres' unique_violation worded as a primary key's, needs the
 *		table's codec, the user's privileges and the session's COPY lines.
 *		Every other failure is the connection layer's to raise.
 *
 * The tserver sends the later row's key values (Error.duplicate, for each
 * key column the column it stands for: a key image's column, not the
 * image); they are decoded with the table's codec and printed with the
 * columns' output functions, under the user's settings, as
 * BuildIndexValueDescription prints an index's values: "Key (a, b)=(1, x)
 * already exists.".  As there, the DETAIL is left out when the user may
 * not see the values.  A tserver that sends no row (one that predates it,
 * or a key beyond its limit) has its message, built from the stored forms,
 * shown instead.  The CONTEXT is the duplicate's COPY line, where the
 * tserver named its row in the session (Error.duplicate_ordinal) and the
 * session's map of lines has it (row_lines.c).
 */

#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

static void tcopy_report_duplicate_key(TcopyConnection *conn,
									   const char *message) pg_attribute_noreturn();

/*
 * Whether the user may see the key's values, as BuildIndexValueDescription
 * decides: not under row security; with SELECT on the table, or else on
 * every key column.
 */
static bool
tcopy_may_see_key(Relation rel, List *key_attnums)
{
	Oid			relid = RelationGetRelid(rel);
	ListCell   *lc;

	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return false;
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		return true;
	foreach(lc, key_attnums)
	{
		if (pg_attribute_aclcheck(relid, (AttrNumber) lfirst_int(lc), GetUserId(),
								  ACL_SELECT) != ACLCHECK_OK)
			return false;
	}
	return true;
}

/*
 * "(a, b)=(1, x)" of the duplicate row the tserver sent, or NULL when it
 * sent none, or one that does not hold the key's columns.
 */
static char *
tcopy_describe_key(Relation rel, Oid userid, const Tcopy__Error *frame)
{
	TcopyRelCodec *codec;
	TupleDesc	desc = RelationGetDescr(rel);
	int			nkey;
	int		   *proj;
	Datum	   *values;
	bool	   *nulls;
	StringInfoData names;
	StringInfoData shown;
	ListCell   *lc;
	int			i = 0;

	if (frame == NULL || frame->duplicate == NULL || frame->n_duplicate_columns == 0)
		return NULL;
	codec = tcopy_rel_codec(rel, userid);
	nkey = list_length(codec->options.key_attnums);
	if (frame->n_duplicate_columns != (size_t) nkey)
		return NULL;
	proj = palloc(sizeof(int) * nkey);
	foreach(lc, codec->options.key_attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);

		/* the column itself, never its image, which the codec cannot decode */
		if (codec->column_of_att[attnum - 1] != (int) frame->duplicate_columns[i])
			return NULL;
		proj[i++] = codec->column_of_att[attnum - 1];
	}
	values = palloc(sizeof(Datum) * Max(codec->natts, 1));
	nulls = palloc(sizeof(bool) * Max(codec->natts, 1));
	tcopy_decode_row(codec, proj, nkey, frame->duplicate, values, nulls);

	initStringInfo(&names);
	initStringInfo(&shown);
	i = 0;
	foreach(lc, codec->options.key_attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);
		Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);

		if (i++ > 0)
		{
			appendStringInfoString(&names, ", ");
			appendStringInfoString(&shown, ", ");
		}
		appendStringInfoString(&names, quote_identifier(NameStr(att->attname)));
		if (nulls[attnum - 1])
			appendStringInfoString(&shown, "null");
		else
		{
			Oid			output;
			bool		varlena;

			getTypeOutputInfo(att->atttypid, &output, &varlena);
			appendStringInfoString(&shown, OidOutputFunctionCall(output, values[attnum - 1]));
		}
	}
	return psprintf("(%s)=(%s)", names.data, shown.data);
}

/*
 * conn's client failed with ERROR_DUPLICATE_KEY (message its text): close
 * it and raise Postgres' unique_violation.
 */
static void
tcopy_report_duplicate_key(TcopyConnection *conn, const char *message)
{
	uint32		table_id = tc_client_error_table_id(conn->client);
	const Tcopy__Error *frame = tc_client_error_frame(conn->client);
	Relation	rel = NULL;
	const char *relname = NULL;
	char	   *key = NULL;
	bool		may_see = false;
	uint64		row = frame != NULL ? frame->duplicate_ordinal : 0;
	const char *copy_relname = NULL;
	uint64		line = 0;
	ListCell   *lc;

	/* the frame is the client's: read it before the client is closed */
	PG_TRY();
	{
		foreach(lc, conn->tables)
		{
			TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);

			if (table->table_id != table_id)
				continue;
			relname = pstrdup(table->name);
			if (IsTransactionState())
				rel = try_relation_open(table->relid, AccessShareLock);
			break;
		}
		if (rel != NULL)
		{
			TcopyTableOptions options;

			relname = pstrdup(RelationGetRelationName(rel));
			tcopy_get_table_options(rel, conn->key.userid, &options);
			may_see = tcopy_may_see_key(rel, options.key_attnums);
			if (may_see)
				key = tcopy_describe_key(rel, conn->key.userid, frame);
		}
	}
	PG_FINALLY();
	{
		tcopy_connection_close(conn);
	}
	PG_END_TRY();

	/*
	 * A COPY's context would name the line being read now, which is not the
	 * duplicate's (nor would a COMMIT's be a COPY's): the duplicate's own
	 * line where the tserver named its row and the session's map has it,
	 * as a heap table's COPY gives it, else none.
	 */
	error_context_stack = NULL;
	(void) tcopy_lines_find(conn, row, &copy_relname, &line);
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates unique constraint \"%s_key\"",
					relname ? relname : "tcopy"),
			 key != NULL ? errdetail("Key %s already exists.", key) :
			 may_see ? errdetail_internal("%s", strncmp(message, "tserver: ", 9) == 0 ?
										  message + 9 : message) : 0,
			 copy_relname != NULL ? errcontext("COPY %s, line %llu", copy_relname,
											   (unsigned long long) line) : 0,
			 rel != NULL ? errtableconstraint(rel, psprintf("%s_key", relname)) : 0));
}

/*
 * The input line of the duplicate key conn's client failed on, when the
 * session's map has it; 0 for any other failure.
 */
uint64
tcopy_session_failure_line(TcopyConnection *conn)
{
	const Tcopy__Error *frame = tc_client_error_frame(conn->client);
	const char *relname;
	uint64		line = 0;

	if (tc_client_error_code(conn->client) != TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY ||
		frame == NULL || !tcopy_lines_find(conn, frame->duplicate_ordinal, &relname, &line))
		return 0;
	return line;
}

/*
 * A call on conn's client, in a write session, failed: close it and raise
 * the failure; a duplicate key as Postgres' unique_violation.  A write held
 * back behind an in-doubt session (40001, "is not yet resolved": its
 * publish was cut off, or its backend died) first publishes the sessions
 * of transactions Postgres committed on that tserver, so that a retry
 * goes through at once when Postgres committed that one.
 */
void
tcopy_session_fail(TcopyConnection *conn, const char *what)
{
	if (tc_client_error_code(conn->client) == TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY)
		tcopy_report_duplicate_key(conn, pstrdup(tc_client_error(conn->client)));
	if (tcopy_held_in_doubt(conn->client))
		tcopy_publish_committed(conn->address, conn->token, &conn->tls);
	tcopy_connection_fail(conn, what);
}
