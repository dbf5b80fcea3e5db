/*
 * xact_prepared.c
 *		COMMIT PREPARED and ROLLBACK PREPARED of a transaction that wrote
 *		tcopy tables.
 *
 * PREPARE TRANSACTION prepares the transaction's write sessions and
 * records them as a commit does (xact_commit.c), the records becoming part
 * of the prepared transaction, then closes their connections: the tservers
 * keep the sessions prepared, held by no connection.  COMMIT PREPARED may
 * run in any backend of the database, after a restart of Postgres or of
 * the tservers, and Postgres calls no transaction callback for it; so the
 * utility hook (hook.c) asks here, before the statement runs, for the
 * sessions of its transaction (its records, read with a dirty snapshot as
 * they are not committed), enters the commit gate around the statement
 * (snapshot.c: the commit record is written inside it, as a commit's is),
 * and publishes them after it, as a commit does: bounded, a failure a
 * WARNING, what is left prepared published by recovery, which finds the
 * records committed.  ROLLBACK PREPARED discards them the same way, or
 * leaves them to recovery, which finds no record.  While the transaction
 * is prepared, recovery leaves its sessions alone: TransactionIdIsInProgress
 * is true for a prepared transaction (recovery.c).  docs/commit.md has the
 * argument.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* How long to wait between two RESOLVEs of a session another connection holds. */
#define TCOPY_BUSY_RETRY_MS 1

/*
 * The xid of the prepared transaction gid of this database, from
 * pg_prepared_xacts; false when there is none (Postgres' own statement
 * then says so).
 */
static bool
tcopy_prepared_xact_xid(const char *gid, TransactionId *xid)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(gid)};
	bool		found = false;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT transaction FROM pg_catalog.pg_prepared_xacts"
							  " WHERE gid = $1 AND database = pg_catalog.current_database()",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_prepared_xacts");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										  &isnull);

		found = !isnull;
		if (found)
			*xid = DatumGetTransactionId(value);
	}
	SPI_finish();
	return found;
}

/*
 * The full id of xid, a transaction that has not ended: within 2^31 of the
 * next one to be assigned, and before it.
 */
static FullTransactionId
tcopy_full_xid_of_running(TransactionId xid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		epoch = EpochFromFullTransactionId(next);

	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

List *
tcopy_prepared_xact_sessions(const char *gid)
{
	Oid			relid = tcopy_records_relid(true);
	TransactionId xid;
	FullTransactionId fxid;
	Relation	rel;
	HTAB	   *records;
	HASH_SEQ_STATUS scan;
	TcopyRecord *record;
	List	   *sessions = NIL;

	if (!OidIsValid(relid) || !tcopy_prepared_xact_xid(gid, &xid))
		return NIL;
	fxid = tcopy_full_xid_of_running(xid);

	rel = table_open(relid, AccessShareLock);
	records = tcopy_records_read_uncommitted(rel);
	hash_seq_init(&scan, records);
	while ((record = hash_seq_search(&scan)) != NULL)
	{
		FullTransactionId of;
		Oid			userid;

		if (tcopy_gid_parse(record->gid, &of, &userid) &&
			FullTransactionIdEquals(of, fxid))
		{
			TcopyRecord *copy = palloc(sizeof(TcopyRecord));

			*copy = *record;
			sessions = lappend(sessions, copy);
		}
	}
	hash_destroy(records);
	table_close(rel, AccessShareLock);
	return sessions;
}

/*
 * RESOLVE the session of record on its tserver, with its user's mapping
 * (else any of the server's), until the deadline: a session another
 * connection holds (the preparing backend's, closed but not yet noticed by
 * the tserver; a reader or recovery resolving it now) is asked again.
 * NULL when done (or done by another: NOT_FOUND), else why not.  May raise
 * an ERROR (a catalog lookup): the caller catches it.
 */
static const char *
tcopy_resolve_recorded(const TcopyRecord *record, bool commit, TimestampTz deadline)
{
	TcopyTableOptions options;
	List	   *mapping = NIL;
	TcClient   *client;
	char		err[256];
	const char *why = NULL;

	if (!tcopy_find_user_mapping(record->user_id, record->server_id, &mapping) &&
		!tcopy_any_user_mapping(record->server_id, &mapping))
		return "the server has no user mapping";
	tcopy_get_server_options(record->server_id, mapping, &options);
	if (tcopy_address_is_null(options.address))
		return NULL;			/* nothing was prepared there */

	tcopy_set_wait_deadline(deadline);
	client = tcopy_try_connect(options.address, options.token, &options.tls, err, sizeof(err));
	if (client == NULL)
		why = pstrdup(err);
	while (client != NULL)
	{
		Tcopy__ResolveOutcome outcome;

		if (tc_client_resolve(client, record->gid, commit, &outcome, NULL) < 0)
		{
			why = pstrdup(tc_client_error(client));
			break;
		}
		if (outcome != TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
			break;
		if (GetCurrentTimestamp() >= deadline)
		{
			why = "another connection holds the session";
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 TCOPY_BUSY_RETRY_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	tcopy_set_wait_deadline(0);
	if (client != NULL)
		tcopy_disconnect(client);
	return why;
}

void
tcopy_finish_prepared_sessions(List *sessions, bool commit)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   TCOPY_RESOLVE_TIMEOUT_MS);
	MemoryContext oldcontext = CurrentMemoryContext;
	ListCell   *lc;

	/*
	 * The commit record is on disk (COMMIT PREPARED flushes it, whatever
	 * synchronous_commit says): the decision outlives a crash.
	 */
	if (commit)
		tcopy_commit_gate_leave();
	foreach(lc, sessions)
	{
		TcopyRecord *record = (TcopyRecord *) lfirst(lc);
		const char *volatile why = NULL;

		PG_TRY();
		{
			why = tcopy_resolve_recorded(record, commit, deadline);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcontext);
			edata = CopyErrorData();
			FlushErrorState();
			tcopy_set_wait_deadline(0);
			why = edata->message;
		}
		PG_END_TRY();
		if (why == NULL)
			continue;
		if (commit)
			ereport(WARNING,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not publish the write session \"%s\": %s",
							record->gid, why),
					 errdetail("The prepared transaction is committed; its session stays prepared, and recovery will publish it.")));
		else
			ereport(LOG,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not discard the write session \"%s\": %s",
							record->gid, why),
					 errdetail("Its session stays prepared, and recovery will discard it.")));
	}
}
