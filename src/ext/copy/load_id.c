/*
 * load_id.c
 *		COPY ... (load_id 'label'): loads that can be re-run.  The label is
 *		published on the tserver atomically with the write session that
 *		carries the COPY's rows, so a COPY retried under the same label after
 *		any failure (an ERROR, a rollback, a crash of Postgres or of the
 *		tserver) loads its rows exactly once.
 *
 * At the start of the COPY, before a row is read, the label is claimed in
 * the transaction's write session for the table's server (TableOp
 * LOAD_LABEL): the tserver answers at once whether it was published for
 * the table already (the COPY then loads nothing: a NOTICE and COPY 0),
 * claimed by this transaction already (the same), held by another
 * transaction's session (wait, as for a row lock, and ask again: that
 * transaction either publishes the label, or gives it up), or held by a
 * session left prepared by a crash (refused: recovery decides whether it
 * was published).  The claim is the authoritative check: it is exclusive
 * on the tserver from the claim until the session is published or
 * discarded, and survives the tserver's restarts with the prepared
 * session's record, so no race can publish a label twice
 * (docs/commit.md, "Load labels").  SQL lists and forgets published labels.
 */

#include "postgres.h"

#include "access/table.h"
#include "commands/defrem.h"
#include "parser/parse_node.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

PG_FUNCTION_INFO_V1(tcopy_load_labels);
PG_FUNCTION_INFO_V1(tcopy_forget_load);

/* How long a COPY waits before asking again for a label another session holds. */
#define TCOPY_LOAD_ID_RETRY_MS 50

/* A label must have 1 to TC_LABEL_MAX bytes; ERROR otherwise. */
void
tcopy_check_label(const char *label)
{
	size_t		len = strlen(label);

	if (len == 0 || len > TC_LABEL_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("load_id must have 1 to %d bytes, not %zu", TC_LABEL_MAX, len)));
}

/* Wait a little for another session to publish or give up a label. */
static void
tcopy_load_id_wait(void)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 TCOPY_LOAD_ID_RETRY_MS, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

bool
tcopy_load_id_claim(Relation rel, const char *load_id)
{
	TcopyRelCodec *codec = tcopy_rel_codec(rel, GetUserId());
	TcopyConnection *conn = tcopy_xact_write_connection(&codec->options, codec->userid);
	uint32		table_id;

	if (conn->null_transport)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("COPY option load_id needs a tserver"),
				 errdetail("Foreign table \"%s\" is on a server whose address is null:.",
						   codec->relname)));
	table_id = tcopy_connection_table_id(conn, codec);

	for (;;)
	{
		TcLabelAnswer answer;
		int			rc;

		conn->busy = true;
		rc = tc_client_session_claim_label(conn->client, table_id, load_id, &answer);
		conn->busy = false;
		if (rc < 0)
			tcopy_session_fail(conn, psprintf("could not claim load \"%s\" of table \"%s\"",
												 load_id, codec->options.table_name));
		switch (answer.state)
		{
			case TCOPY__LABEL_STATE__LABEL_CLAIMED:
				/* the session has something to publish now, rows or not */
				tcopy_xact_note_claim(conn);
				return true;
			case TCOPY__LABEL_STATE__LABEL_PUBLISHED:
				ereport(NOTICE,
						(errmsg("load \"%s\" of foreign table \"%s\" was already published; nothing loaded",
								load_id, codec->relname)));
				return false;
			case TCOPY__LABEL_STATE__LABEL_OWN:
				ereport(NOTICE,
						(errmsg("load \"%s\" of foreign table \"%s\" was already loaded in this transaction; nothing loaded",
								load_id, codec->relname)));
				return false;
			case TCOPY__LABEL_STATE__LABEL_PREPARED:
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("load \"%s\" of foreign table \"%s\" is prepared but not resolved",
								load_id, codec->relname),
						 errdetail("A transaction that loaded it ended between its prepare and its commit; "
								   "its write session is prepared under global id \"%s\" on tserver at \"%s\".",
								   answer.holder_gid, codec->options.address),
						 errhint("Run the COPY again once recovery has resolved the session: "
								 "wait for the recovery worker, or run SELECT tcopy.recover_prepared_sessions().")));
				break;
			case TCOPY__LABEL_STATE__LABEL_BUSY:
			default:
				/* another transaction holds it: wait for its end, as for a row lock */
				pgstat_report_wait_start(PG_WAIT_EXTENSION);
				tcopy_load_id_wait();
				pgstat_report_wait_end();
				break;
		}
	}
}

/*
 * The relation of a load label function, opened AccessShareLock, after the
 * checks: a tcopy table, and the privileges (any of mode) of the caller.
 */
static Relation
tcopy_load_label_relation(Oid relid, AclMode mode, const char *what)
{
	Relation	rel;

	if (!tcopy_relation_is_tcopy_table(relid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a tcopy foreign table",
						get_rel_name(relid) != NULL ? get_rel_name(relid) : "?")));
	rel = table_open(relid, AccessShareLock);
	if (!pg_class_ownercheck(relid, GetUserId()) &&
		pg_class_aclmask(relid, GetUserId(), mode, ACLMASK_ANY) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s of foreign table \"%s\"",
						what, RelationGetRelationName(rel)),
				 errhint("%s", mode == ACL_INSERT ?
						 "Only the table's owner or a role with INSERT on it may forget its loads." :
						 "Only the table's owner or a role with SELECT or INSERT on it may list its loads.")));
	return rel;
}

/* tcopy.load_labels(regclass): the labels published for the table. */
Datum
tcopy_load_labels(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = tcopy_load_label_relation(PG_GETARG_OID(0), ACL_SELECT | ACL_INSERT,
												"list the loads");
	TcopyTableOptions options;
	Tcopy__LabelList *list = NULL;
	TcClient   *client;
	uint32		table_id;

	InitMaterializedSRF(fcinfo, 0);
	tcopy_get_table_options(rel, GetUserId(), &options);
	if (tcopy_address_is_null(options.address) ||
		!tcopy_lookup_table_id(&options, NULL, "to list its loads", &table_id))
	{
		table_close(rel, AccessShareLock);
		return (Datum) 0;
	}
	client = tcopy_connect(options.address, options.token, &options.tls);
	if (tc_client_list_labels(client, table_id, &list) < 0)
		tcopy_report_client_error(client, options.address,
								  psprintf("could not list the loads of table \"%s\"",
										   options.table_name));
	tcopy_disconnect(client);
	for (size_t i = 0; i < list->n_labels; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};
		int64		ms = (int64) list->labels[i]->published_at_ms;

		values[0] = CStringGetTextDatum(list->labels[i]->label);
		/* Unix milliseconds to a Postgres timestamp */
		values[1] = TimestampTzGetDatum((TimestampTz) (ms * 1000) -
										((TimestampTz) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
										 SECS_PER_DAY * USECS_PER_SEC));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	tcopy__label_list__free_unpacked(list, NULL);
	table_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * tcopy.forget_load(regclass, label): forget a published label, at once
 * (not with the transaction), so that a COPY with it loads again; whether
 * it was published.
 */
Datum
tcopy_forget_load(PG_FUNCTION_ARGS)
{
	Relation	rel = tcopy_load_label_relation(PG_GETARG_OID(0), ACL_INSERT, "forget the loads");
	char	   *label = text_to_cstring(PG_GETARG_TEXT_PP(1));
	TcopyTableOptions options;
	TcLabelAnswer answer;
	TcClient   *client;
	uint32		table_id;

	tcopy_check_label(label);
	PreventCommandIfReadOnly("tcopy.forget_load()");
	tcopy_get_table_options(rel, GetUserId(), &options);
	if (tcopy_address_is_null(options.address) ||
		!tcopy_lookup_table_id(&options, NULL, "to forget a load", &table_id))
	{
		table_close(rel, AccessShareLock);
		PG_RETURN_BOOL(false);
	}
	client = tcopy_connect(options.address, options.token, &options.tls);
	if (tc_client_forget_label(client, table_id, label, &answer) < 0)
		tcopy_report_client_error(client, options.address,
								  psprintf("could not forget load \"%s\" of table \"%s\"",
										   label, options.table_name));
	tcopy_disconnect(client);
	table_close(rel, AccessShareLock);
	PG_RETURN_BOOL(answer.state == TCOPY__LABEL_STATE__LABEL_PUBLISHED);
}
