/*
 * recovery.c
 *		Prepared write sessions: their global ids, their records in
 *		tcopy.prepared_session_records, and recovery, which resolves the
 *		ones nobody finished.
 *
 * A transaction prepares each of its write sessions under a global id
 * (gid) naming the Postgres cluster, database, transaction, server and
 * user, and records the gid in the extension's table in the same
 * transaction (xact.c): the record commits exactly when the transaction
 * does, so it is the decision.  Recovery asks each tserver of the database
 * for the sessions prepared under the database's gid prefix and resolves
 * the ones no live connection holds and whose transaction has ended:
 * publish when the record is there, discard when it is not.  Then it
 * forgets the records of sessions that are no longer prepared.
 *
 * Two snapshots make that safe against transactions committing while it
 * runs.  The records that may be forgotten are read before the tserver is
 * asked (a record visible then belongs to a session prepared before, which
 * the tserver lists until it is resolved); the records that decide are read
 * after the transactions were found ended (a transaction that committed
 * before is visible then).  docs/commit.md has the whole argument.
 */

#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type_d.h"
#include "catalog/pg_user_mapping.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/procarray.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* A prepared session a tserver listed, and what Postgres knows of it. */
typedef struct TcopyListedSession
{
	char	   *gid;
	uint64		rows;
	TimestampTz prepared_at;
	bool		attached;		/* a live connection holds it */
	bool		parsed;			/* the gid is one of ours: the fields below are set */
	FullTransactionId fxid;
	Oid			user_id;
	bool		in_progress;	/* its transaction had not ended when looked at */
	bool		committed;		/* its record was visible after that */
} TcopyListedSession;

/*
 * A client of a server's tserver, for one token and client certificate
 * (one user mapping's).
 */
typedef struct TcopyRecoveryClient
{
	char	   *token;			/* NULL: no token */
	char	   *sslcert;		/* NULL: no client certificate */
	TcClient   *client;			/* NULL: could not connect */
} TcopyRecoveryClient;

/* One tcopy server, while recovery or the listing looks at it. */
typedef struct TcopyServerState
{
	ForeignServer *server;
	char	   *address;
	List	   *clients;		/* TcopyRecoveryClient *, by token */
	TcClient   *lister;			/* the one the sessions were listed with */
	TcopyListedSession *sessions;
	int			nsessions;
} TcopyServerState;

PG_FUNCTION_INFO_V1(tcopy_prepared_sessions);
PG_FUNCTION_INFO_V1(tcopy_recover_prepared_sessions);

/*
 * Whether transaction fxid may still be running.  One that was never
 * assigned here (a gid of a timeline this cluster no longer has), or more
 * than 2^31 transactions old, is not; otherwise the procarray says.
 */
static bool
tcopy_fxid_in_progress(FullTransactionId fxid)
{
	FullTransactionId next = ReadNextFullTransactionId();

	if (!FullTransactionIdPrecedes(fxid, next))
		return false;
	if (U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) > (uint64) MaxTransactionId / 2)
		return false;
	return TransactionIdIsInProgress(XidFromFullTransactionId(fxid));
}

/* Every tcopy server of the database, by Oid. */
List *
tcopy_list_servers(void)
{
	Relation	rel = table_open(ForeignServerRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	List	   *servers = NIL;

	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Oid			serverid = ((Form_pg_foreign_server) GETSTRUCT(tuple))->oid;

		if (tcopy_server_is_tcopy(serverid))
			servers = lappend_oid(servers, serverid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	list_sort(servers, list_oid_cmp);
	return servers;
}

bool
tcopy_any_user_mapping(Oid serverid, List **options)
{
	Relation	rel = table_open(UserMappingRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	ScanKeyInit(&key, Anum_pg_user_mapping_umserver, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(serverid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		datum = heap_getattr(tuple, Anum_pg_user_mapping_umoptions,
										 RelationGetDescr(rel), &isnull);

		*options = isnull ? NIL : untransformRelOptions(datum);
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* What a user mapping's options give to connect with: token and TLS. */
static TcopyTableOptions *
tcopy_mapping_options(Oid serverid, List *mapping_options)
{
	TcopyTableOptions *options = palloc(sizeof(TcopyTableOptions));

	tcopy_get_server_options(serverid, mapping_options, options);
	return options;
}

/* Whether a and b, either NULL, are the same string. */
static bool
tcopy_recovery_same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Make the next client call give up after the resolve timeout. */
static void
tcopy_recovery_deadline(void)
{
	tcopy_set_wait_deadline(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 TCOPY_RESOLVE_TIMEOUT_MS));
}

/*
 * A client of srv's tserver that authenticates with the token and client
 * certificate of options (connected on first use, then kept); NULL,
 * reported at elevel, when the tserver cannot be reached.
 */
static TcClient *
tcopy_recovery_client(TcopyServerState *srv, const TcopyTableOptions *options,
					  int elevel)
{
	const char *token = options->token;
	TcopyRecoveryClient *entry;
	ListCell   *lc;
	char		err[512];

	foreach(lc, srv->clients)
	{
		entry = (TcopyRecoveryClient *) lfirst(lc);
		if (tcopy_recovery_same(entry->token, token) &&
			tcopy_recovery_same(entry->sslcert, options->tls.sslcert))
			return entry->client;
	}

	entry = palloc0(sizeof(TcopyRecoveryClient));
	entry->token = token != NULL ? pstrdup(token) : NULL;
	entry->sslcert = options->tls.sslcert != NULL ? pstrdup(options->tls.sslcert) : NULL;
	tcopy_recovery_deadline();
	entry->client = tcopy_try_connect(srv->address, token, &options->tls, err, sizeof(err));
	tcopy_set_wait_deadline(0);
	if (entry->client == NULL)
		ereport(elevel,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not reach tserver at \"%s\" of server \"%s\" to look for prepared sessions",
						srv->address, srv->server->servername),
				 errdetail_internal("%s", err)));
	srv->clients = lappend(srv->clients, entry);
	return entry->client;
}

/*
 * A call on client failed: report it at elevel and close the client, which
 * the server state then offers as unreachable.
 */
static void
tcopy_recovery_client_failed(TcopyServerState *srv, TcClient *client,
							 const char *what, int elevel)
{
	ListCell   *lc;

	ereport(elevel,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("%s: %s", what, tc_client_error(client)),
			 errcontext("tserver at \"%s\" of server \"%s\"",
						srv->address, srv->server->servername)));
	foreach(lc, srv->clients)
	{
		TcopyRecoveryClient *entry = (TcopyRecoveryClient *) lfirst(lc);

		if (entry->client == client)
			entry->client = NULL;
	}
	if (srv->lister == client)
		srv->lister = NULL;
	tcopy_disconnect(client);
}

/* Close srv's clients. */
static void
tcopy_recovery_disconnect(TcopyServerState *srv)
{
	ListCell   *lc;

	foreach(lc, srv->clients)
	{
		TcopyRecoveryClient *entry = (TcopyRecoveryClient *) lfirst(lc);

		if (entry->client != NULL)
			tcopy_disconnect(entry->client);
		entry->client = NULL;
	}
	srv->lister = NULL;
}

/*
 * Connect to srv's tserver to list its sessions, with the user mapping of
 * the current user (or PUBLIC), else of a user whose records name the
 * server, else any of the server's: the tserver's token is one for all
 * mappings, normally.
 */
static TcClient *
tcopy_recovery_lister(TcopyServerState *srv, HTAB *records, int elevel)
{
	Oid			serverid = srv->server->serverid;
	List	   *mapping = NIL;
	bool		found = tcopy_find_user_mapping(GetUserId(), serverid, &mapping);

	if (!found && records != NULL)
	{
		HASH_SEQ_STATUS scan;
		TcopyRecord *record;

		hash_seq_init(&scan, records);
		while (!found && (record = hash_seq_search(&scan)) != NULL)
		{
			if (record->server_id == serverid &&
				tcopy_find_user_mapping(record->user_id, serverid, &mapping))
			{
				found = true;
				hash_seq_term(&scan);
			}
		}
	}
	if (!found)
		found = tcopy_any_user_mapping(serverid, &mapping);
	if (!found)
		return NULL;			/* nobody can write through it */
	return tcopy_recovery_client(srv, tcopy_mapping_options(serverid, mapping), elevel);
}

/*
 * The client to resolve a session of userid with: one with the token of
 * userid's user mapping (or PUBLIC's), else the lister.
 */
static TcClient *
tcopy_recovery_client_for_user(TcopyServerState *srv, Oid userid, int elevel)
{
	Oid			serverid = srv->server->serverid;
	List	   *mapping = NIL;

	if (!tcopy_find_user_mapping(userid, serverid, &mapping))
		return srv->lister;
	return tcopy_recovery_client(srv, tcopy_mapping_options(serverid, mapping), elevel);
}

/* Unix milliseconds as a timestamptz. */
static TimestampTz
tcopy_unix_ms_to_timestamptz(uint64 ms)
{
	return (TimestampTz) (ms * 1000) -
		(TimestampTz) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

/*
 * The clients to list srv's sessions with: the lister, and the client of
 * each user whose records name srv.  A scoped token sees only its
 * namespace's sessions (docs/security.md), so a session missing from the
 * lister's list is not known to be resolved until its own user's
 * credential was asked too.  NIL when one of them cannot be reached.
 */
static List *
tcopy_recovery_listers(TcopyServerState *srv, HTAB *records, int elevel)
{
	List	   *listers;
	HASH_SEQ_STATUS scan;
	TcopyRecord *record;

	srv->lister = tcopy_recovery_lister(srv, records, elevel);
	if (srv->lister == NULL)
		return NIL;
	listers = list_make1(srv->lister);
	if (records == NULL)
		return listers;
	hash_seq_init(&scan, records);
	while ((record = hash_seq_search(&scan)) != NULL)
	{
		TcClient   *client;

		if (record->server_id != srv->server->serverid)
			continue;
		client = tcopy_recovery_client_for_user(srv, record->user_id, elevel);
		if (client == NULL)
		{
			hash_seq_term(&scan);
			return NIL;
		}
		listers = list_append_unique_ptr(listers, client);
	}
	return listers;
}

/* Append to sessions (of *nsessions) those of list not in it yet. */
static TcopyListedSession *
tcopy_add_listed_sessions(TcopyListedSession *sessions, int *nsessions,
						  const Tcopy__PreparedList *list)
{
	sessions = repalloc(sessions, sizeof(TcopyListedSession) *
						(*nsessions + list->n_sessions + 1));
	for (size_t i = 0; i < list->n_sessions; i++)
	{
		Tcopy__PreparedSession *listed = list->sessions[i];
		TcopyListedSession *session;
		bool		known = false;

		for (int j = 0; j < *nsessions && !known; j++)
			known = strcmp(sessions[j].gid, listed->gid) == 0;
		if (known)
			continue;
		session = &sessions[(*nsessions)++];
		memset(session, 0, sizeof(*session));
		session->gid = pstrdup(listed->gid);
		session->rows = listed->rows;
		session->prepared_at = tcopy_unix_ms_to_timestamptz(listed->prepared_at_ms);
		session->attached = listed->attached;
		session->parsed = tcopy_gid_parse(session->gid, &session->fxid,
										  &session->user_id);
	}
	return sessions;
}

/*
 * List srv's prepared sessions of this database into srv->sessions, with
 * what Postgres knows of each: whether its transaction is in progress,
 * then (after all of them were looked at) whether its record is visible.
 * false, reported at elevel, when the tserver could not be asked with
 * every credential the records need (tcopy_recovery_listers).
 */
static bool
tcopy_list_server_sessions(TcopyServerState *srv, Relation records_rel,
						   HTAB *records, int elevel)
{
	char		prefix[TC_GID_MAX + 1];
	List	   *listers = tcopy_recovery_listers(srv, records, elevel);
	HTAB	   *decided;
	ListCell   *lc;

	if (listers == NIL)
		return false;

	tcopy_gid_prefix(prefix, sizeof(prefix));
	srv->nsessions = 0;
	srv->sessions = palloc0(sizeof(TcopyListedSession));
	foreach(lc, listers)
	{
		TcClient   *client = (TcClient *) lfirst(lc);
		Tcopy__PreparedList *list;
		int			rc;

		tcopy_recovery_deadline();
		rc = tc_client_list_prepared(client, prefix, &list);
		tcopy_set_wait_deadline(0);
		if (rc < 0)
		{
			tcopy_recovery_client_failed(srv, client,
										 "could not list the prepared sessions", elevel);
			return false;
		}
		/* copied, so that nothing malloc'ed is left behind by an ERROR */
		srv->sessions = tcopy_add_listed_sessions(srv->sessions, &srv->nsessions, list);
		tcopy__prepared_list__free_unpacked(list, NULL);
	}

	/* first whether each transaction ended, then (a later snapshot) its record */
	for (int i = 0; i < srv->nsessions; i++)
	{
		TcopyListedSession *session = &srv->sessions[i];

		if (session->parsed)
			session->in_progress = tcopy_fxid_in_progress(session->fxid);
	}
	decided = tcopy_records_read_now(records_rel);
	for (int i = 0; i < srv->nsessions; i++)
	{
		TcopyListedSession *session = &srv->sessions[i];

		session->committed = session->parsed &&
			hash_search(decided, session->gid, HASH_FIND, NULL) != NULL;
	}
	hash_destroy(decided);
	return true;
}

/*
 * What recovery will do with a session: "commit" when its transaction
 * committed, "in progress" while it may still run or a live connection
 * holds the session, "abort" when it ended without committing.
 */
static const char *
tcopy_session_decision(const TcopyListedSession *session)
{
	if (!session->parsed)
		return NULL;
	if (session->committed)
		return "commit";
	if (session->in_progress || session->attached)
		return "in progress";
	return "abort";
}

/* A state for server serverid; NULL for a null: server (no tserver). */
static TcopyServerState *
tcopy_server_state(Oid serverid)
{
	TcopyServerState *srv;
	TcopyTableOptions options;

	tcopy_get_server_options(serverid, NIL, &options);
	if (tcopy_address_is_null(options.address))
		return NULL;
	srv = palloc0(sizeof(TcopyServerState));
	srv->server = GetForeignServer(serverid);
	srv->address = options.address;
	return srv;
}

/* Whether gid was seen on an earlier server (two servers, one tserver). */
static bool
tcopy_gid_seen(HTAB *seen, const char *gid)
{
	bool		found;

	hash_search(seen, gid, HASH_ENTER, &found);
	return found;
}

static HTAB *
tcopy_gid_set(void)
{
	HASHCTL		ctl;

	ctl.keysize = TC_GID_MAX + 1;
	ctl.entrysize = TC_GID_MAX + 1;
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("tcopy gids", 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

/*
 * Resolve srv's prepared sessions that nobody holds and whose transaction
 * ended, then forget the records (read before the listing) of srv's
 * sessions the tserver no longer holds.  The number resolved.
 */
static int
tcopy_recover_server(TcopyServerState *srv, Relation rel, HTAB *records,
					 HTAB *seen, int elevel)
{
	HTAB	   *listed = tcopy_gid_set();
	HASH_SEQ_STATUS scan;
	TcopyRecord *record;
	int			resolved = 0;

	if (!tcopy_list_server_sessions(srv, rel, records, elevel))
		return 0;

	for (int i = 0; i < srv->nsessions; i++)
	{
		TcopyListedSession *session = &srv->sessions[i];
		bool		commit = session->committed;
		Tcopy__ResolveOutcome outcome;
		TcClient   *client;
		int			rc;

		(void) tcopy_gid_seen(listed, session->gid);
		if (tcopy_gid_seen(seen, session->gid) || !session->parsed ||
			session->attached || session->in_progress)
			continue;

		client = tcopy_recovery_client_for_user(srv, session->user_id, elevel);
		if (client == NULL)
			continue;
		CHECK_FOR_INTERRUPTS();
		tcopy_recovery_deadline();
		rc = tc_client_resolve(client, session->gid, commit, &outcome, NULL);
		tcopy_set_wait_deadline(0);
		if (rc < 0)
		{
			tcopy_recovery_client_failed(srv, client,
										 psprintf("could not %s prepared session \"%s\"",
												  commit ? "publish" : "discard",
												  session->gid),
										 elevel);
			continue;
		}
		if (outcome == TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
			continue;			/* a connection took it since the listing */
		if (outcome == TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE)
		{
			resolved++;
			ereport(DEBUG1,
					(errmsg_internal("tcopy: %s prepared session \"%s\" on tserver at \"%s\"",
									 commit ? "published" : "discarded",
									 session->gid, srv->address)));
		}
		/* done, or done by someone else: the record has served */
		tcopy_records_forget(rel, records, session->gid);
	}

	/* a record read before the listing whose session was not listed: resolved */
	hash_seq_init(&scan, records);
	while ((record = hash_seq_search(&scan)) != NULL)
	{
		if (record->server_id == srv->server->serverid &&
			hash_search(listed, record->gid, HASH_FIND, NULL) == NULL)
			tcopy_records_forget(rel, records, record->gid);
	}
	hash_destroy(listed);
	return resolved;
}

/* Recover on each server of servers; the number resolved. */
static int
tcopy_recover_servers(List *servers, Relation rel, HTAB *records, int elevel)
{
	HTAB	   *seen = tcopy_gid_set();
	ListCell   *lc;
	int			resolved = 0;

	foreach(lc, servers)
	{
		TcopyServerState *srv = tcopy_server_state(lfirst_oid(lc));

		if (srv == NULL)
			continue;
		resolved += tcopy_recover_server(srv, rel, records, seen, elevel);
		tcopy_recovery_disconnect(srv);
	}
	return resolved;
}

/*
 * Recover the current database's prepared sessions on every tcopy server:
 * the number resolved.  A tserver that cannot be reached is reported at
 * elevel and left for the next run.  Runs in the caller's transaction.
 */
int
tcopy_recover_database(int elevel)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "tcopy recovery",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcontext = MemoryContextSwitchTo(cxt);
	Relation	rel;
	HTAB	   *records;
	List	   *servers;
	volatile int resolved = 0;

	/* one recovery at a time: ShareUpdateExclusiveLock conflicts with itself */
	rel = table_open(tcopy_records_relid(false), ShareUpdateExclusiveLock);

	/* the records that may be forgotten: read before any tserver is asked */
	records = tcopy_records_read_now(rel);
	servers = tcopy_list_servers();

	PG_TRY();
	{
		resolved = tcopy_recover_servers(servers, rel, records, elevel);
	}
	PG_FINALLY();
	{
		tcopy_set_wait_deadline(0);
	}
	PG_END_TRY();

	/* a second recovery in this transaction sees the records deleted */
	CommandCounterIncrement();
	table_close(rel, NoLock);
	MemoryContextSwitchTo(oldcontext);
	MemoryContextDelete(cxt);
	return resolved;
}

/*
 * tcopy.prepared_sessions(): every session prepared under this database's
 * gid prefix on the tservers of its tcopy servers, with the decision
 * recovery would take now.  A tserver that cannot be reached gives a
 * WARNING and no rows.
 */
Datum
tcopy_prepared_sessions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	HTAB	   *records;
	HTAB	   *seen;
	List	   *servers;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	rel = table_open(tcopy_records_relid(false), AccessShareLock);
	records = tcopy_records_read_now(rel);	/* whose credentials to list with */
	seen = tcopy_gid_set();
	servers = tcopy_list_servers();

	PG_TRY();
	{
		foreach(lc, servers)
		{
			TcopyServerState *srv = tcopy_server_state(lfirst_oid(lc));

			if (srv == NULL || !tcopy_list_server_sessions(srv, rel, records, WARNING))
				continue;
			tcopy_recovery_disconnect(srv);
			for (int i = 0; i < srv->nsessions; i++)
			{
				TcopyListedSession *session = &srv->sessions[i];
				const char *decision = tcopy_session_decision(session);
				Datum		values[7];
				bool		nulls[7] = {false};

				if (tcopy_gid_seen(seen, session->gid))
					continue;
				values[0] = CStringGetTextDatum(srv->server->servername);
				/* any client may prepare: its gid may not be our encoding's */
				(void) pg_verifymbstr(session->gid, strlen(session->gid), false);
				values[1] = CStringGetTextDatum(session->gid);
				if (session->parsed)
					values[2] = FullTransactionIdGetDatum(session->fxid);
				else
					nulls[2] = true;
				values[3] = Int64GetDatum((int64) session->rows);
				values[4] = TimestampTzGetDatum(session->prepared_at);
				values[5] = BoolGetDatum(session->attached);
				if (decision != NULL)
					values[6] = CStringGetTextDatum(decision);
				else
					nulls[6] = true;
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
		}
	}
	PG_FINALLY();
	{
		tcopy_set_wait_deadline(0);
	}
	PG_END_TRY();

	table_close(rel, AccessShareLock);
	return (Datum) 0;
}

/*
 * tcopy.recover_prepared_sessions(): recover now, as the background worker
 * does; the number of sessions resolved.
 */
Datum
tcopy_recover_prepared_sessions(PG_FUNCTION_ARGS)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot recover prepared sessions during recovery"),
				 errdetail("A standby's records may lag behind the primary's decisions."),
				 errhint("Run it on the primary.")));
	PreventCommandIfReadOnly("tcopy.recover_prepared_sessions()");
	PG_RETURN_INT32(tcopy_recover_database(WARNING));
}
