/*
 * snapshot.c
 *		A transaction's snapshots on the tservers, under REPEATABLE READ and
 *		SERIALIZABLE (docs/snapshots.md).
 *
 * Where the isolation level keeps one snapshot for the transaction
 * (IsolationUsesXactSnapshot), the transaction's first read or write of a
 * tcopy table takes a snapshot of the committed rows on every tserver of
 * the database at once, each on a connection of its own that holds it
 * until the transaction ends.  Every scan of the transaction reads as of
 * its tserver's snapshot (with the transaction's own writes on top), and
 * its write sessions are begun on them, so that a tserver refuses an
 * update or delete of a row another transaction changed since (40001,
 * first updater wins).  Under READ COMMITTED a statement whose scans read
 * two tservers or more takes a snapshot on each of them, the same way,
 * when its first scan starts, held until its executor state is freed;
 * one that reads one tserver takes none: a scan reads what is committed
 * when it starts.
 *
 * The snapshots agree: a transaction published on several tservers is in
 * all of them or in none.  No tcopy transaction commits while they are
 * taken (the commit gate: committers hold it in RowExclusiveLock from
 * their prepare to their publish, takers in ShareLock), and each tserver
 * lists with its snapshot the sessions prepared and not yet published
 * then: those of transactions that committed are published here (Postgres
 * decided) and that tserver's snapshot taken again, until none is left.
 */

#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

typedef struct TcopySnapshot
{
	char	   *address;		/* the tserver's */
	TcClient   *client;			/* holds the snapshot; NULL: none taken */
	char	   *why;			/* when none: why not */
	uint64		id;
	uint8		key[TC_SNAPSHOT_KEY_MAX];
	size_t		keylen;
	List	   *committed;		/* gids prepared there of committed transactions */
} TcopySnapshot;

/* this transaction's, in TopTransactionContext; taken: they were taken */
static List *tcopy_snapshots = NIL;
static bool tcopy_snapshots_taken = false;

/* this transaction holds the commit gate */
static bool tcopy_in_commit_gate = false;

static void
tcopy_commit_gate_tag(LOCKTAG *tag, Oid dbid)
{
	SET_LOCKTAG_ADVISORY(*tag, dbid, 0, 0, TCOPY_LOCK_FIELD4 + 2);
}

/*
 * A committer's side of the gate: from after its sessions are prepared to
 * before they are published, so that Postgres' commit record falls inside.
 */
void
tcopy_commit_gate_enter(void)
{
	LOCKTAG		tag;

	tcopy_commit_gate_tag(&tag, MyDatabaseId);
	(void) LockAcquire(&tag, RowExclusiveLock, false, false);
	tcopy_in_commit_gate = true;
}

void
tcopy_commit_gate_leave(void)
{
	LOCKTAG		tag;

	if (!tcopy_in_commit_gate)
		return;
	tcopy_commit_gate_tag(&tag, MyDatabaseId);
	(void) LockRelease(&tag, RowExclusiveLock, false);
	tcopy_in_commit_gate = false;
}

/*
 * Close the commit gate of every database, as a snapshot taker closes its
 * own database's (ShareLock): wait for the committers inside to leave and
 * keep new ones out, until tcopy_commit_gates_open.  A backup's consistent
 * point (backup.c): tservers may serve several databases.  Returns the
 * databases' Oids.
 */
List *
tcopy_commit_gates_close(void)
{
	Relation	rel = table_open(DatabaseRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	List	   *dbs = NIL;
	ListCell   *lc;

	while ((tuple = systable_getnext(scan)) != NULL)
		dbs = lappend_oid(dbs, ((Form_pg_database) GETSTRUCT(tuple))->oid);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	/* one order for every taker */
	list_sort(dbs, list_oid_cmp);
	foreach(lc, dbs)
	{
		LOCKTAG		tag;

		tcopy_commit_gate_tag(&tag, lfirst_oid(lc));
		(void) LockAcquire(&tag, ShareLock, false, false);
	}
	return dbs;
}

/* Open the gates tcopy_commit_gates_close closed (a list of Oids). */
void
tcopy_commit_gates_open(List *dbs)
{
	ListCell   *lc;

	foreach(lc, dbs)
	{
		LOCKTAG		tag;

		tcopy_commit_gate_tag(&tag, lfirst_oid(lc));
		(void) LockRelease(&tag, ShareLock, false);
	}
}

/*
 * Whether transaction fxid committed.  One never assigned here, more than
 * 2^31 transactions old, or older than the commit log kept, did not as far
 * as a snapshot is concerned: its sessions stay as they are.
 */
static bool
tcopy_fxid_committed(FullTransactionId fxid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);
	bool		committed = false;

	if (!FullTransactionIdPrecedes(fxid, next) ||
		U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) > (uint64) MaxTransactionId / 2)
		return false;
	/* as pg_xact_status: the commit log is not truncated under us */
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	if (!TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		committed = TransactionIdDidCommit(xid);
	LWLockRelease(XactTruncationLock);
	return committed;
}

/*
 * Take snapshot's snapshot (in place of the one its connection held) and
 * note the sessions prepared there whose transactions committed.
 */
static void
tcopy_snapshot_take(TcopySnapshot *snapshot, const char *prefix)
{
	char	  **prepared;
	size_t		nprepared;

	if (tc_client_snapshot(snapshot->client, prefix, &snapshot->id, snapshot->key,
						   &snapshot->keylen, &prepared, &nprepared) < 0)
		tcopy_report_client_error(snapshot->client, snapshot->address,
								  "could not take a snapshot of the committed rows");
	list_free_deep(snapshot->committed);
	snapshot->committed = NIL;
	for (size_t i = 0; i < nprepared; i++)
	{
		FullTransactionId fxid;
		Oid			userid;

		if (tcopy_gid_parse(prepared[i], &fxid, &userid) && tcopy_fxid_committed(fxid))
			snapshot->committed = lappend(snapshot->committed, pstrdup(prepared[i]));
	}
}

/*
 * Take the snapshots of every tserver in snapshots, inside the commit
 * gate: then publish the sessions of committed transactions that they
 * list and take those tservers' snapshots again, until none lists any.  A
 * session another connection holds (its backend publishing it now) is
 * waited for, up to TCOPY_RESOLVE_TIMEOUT_MS.
 */
static void
tcopy_snapshots_take_all(List *snapshots)
{
	char		prefix[TC_GID_MAX + 1];
	LOCKTAG		tag;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   TCOPY_RESOLVE_TIMEOUT_MS);
	List	   *pending = NIL;
	ListCell   *lc;

	tcopy_gid_prefix(prefix, sizeof(prefix));
	foreach(lc, snapshots)
		if (((TcopySnapshot *) lfirst(lc))->client != NULL)
			pending = lappend(pending, lfirst(lc));

	tcopy_commit_gate_tag(&tag, MyDatabaseId);
	(void) LockAcquire(&tag, ShareLock, false, false);
	while (pending != NIL)
	{
		List	   *again = NIL;
		TcopySnapshot *busy = NULL;
		const char *busy_gid = NULL;

		foreach(lc, pending)
			tcopy_snapshot_take((TcopySnapshot *) lfirst(lc), prefix);
		foreach(lc, pending)
		{
			TcopySnapshot *snapshot = (TcopySnapshot *) lfirst(lc);
			ListCell   *gc;

			if (snapshot->committed == NIL)
				continue;
			again = lappend(again, snapshot);
			foreach(gc, snapshot->committed)
			{
				Tcopy__ResolveOutcome outcome;

				if (tc_client_resolve(snapshot->client, (char *) lfirst(gc), true,
									  &outcome, NULL) < 0)
					tcopy_report_client_error(snapshot->client, snapshot->address,
											  "could not publish a committed transaction's session");
				if (outcome == TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
				{
					busy = snapshot;
					busy_gid = (char *) lfirst(gc);
				}
			}
		}
		list_free(pending);
		pending = again;
		if (busy != NULL)
		{
			if (GetCurrentTimestamp() >= deadline)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not take a consistent snapshot: the session of a committed transaction on tserver at \"%s\" is not published",
								busy->address),
						 errdetail("Its global id is \"%s\"; the connection that holds it did not publish it in %d ms.",
								   busy_gid, TCOPY_RESOLVE_TIMEOUT_MS),
						 errhint("Retry the transaction.")));
			pg_usleep(1000L);
		}
		CHECK_FOR_INTERRUPTS();
	}
	LockRelease(&tag, ShareLock, false);
}

/*
 * The transaction's first use of a tcopy table, the one of options: a
 * connection to every tserver of the database (with the current user's
 * mapping; this table's own for its server), then their snapshots.  A
 * tserver that cannot be reached (other than this table's) gets none, and
 * the reason is kept for its first use.
 */
static void
tcopy_snapshots_begin(const TcopyTableOptions *options)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	List	   *servers = tcopy_list_servers();
	ListCell   *lc;

	/* the table's own tserver first: its failure is the statement's */
	servers = list_delete_oid(servers, options->serverid);
	servers = lcons_oid(options->serverid, servers);
	PG_TRY();
	{
		foreach(lc, servers)
		{
			Oid			serverid = lfirst_oid(lc);
			TcopyTableOptions server_options;
			const TcopyTableOptions *use = options;
			List	   *mapping;
			TcopySnapshot *snapshot;
			ListCell   *sc;
			bool		known = false;
			char		err[256];

			if (serverid != options->serverid)
			{
				if (!tcopy_find_user_mapping(GetUserId(), serverid, &mapping))
					continue;
				tcopy_get_server_options(serverid, mapping, &server_options);
				use = &server_options;
			}
			if (tcopy_address_is_null(use->address))
				continue;
			foreach(sc, tcopy_snapshots)
				known |= strcmp(((TcopySnapshot *) lfirst(sc))->address, use->address) == 0;
			if (known)
				continue;

			snapshot = palloc0(sizeof(TcopySnapshot));
			snapshot->address = pstrdup(use->address);
			if (use == options)
				snapshot->client = tcopy_connect(use->address, use->token, &use->tls);
			else if ((snapshot->client = tcopy_try_connect(use->address, use->token, &use->tls,
														   err, sizeof(err))) == NULL)
				snapshot->why = pstrdup(err);
			/* the transaction's, whatever savepoint rolls back */
			if (snapshot->client != NULL)
				tcopy_client_to_top(snapshot->client);
			tcopy_snapshots = lappend(tcopy_snapshots, snapshot);
		}
		tcopy_snapshots_take_all(tcopy_snapshots);
	}
	PG_CATCH();
	{
		/* none taken: a later use (after ROLLBACK TO) tries again */
		foreach(lc, tcopy_snapshots)
		{
			TcopySnapshot *snapshot = (TcopySnapshot *) lfirst(lc);

			if (snapshot->client != NULL)
				tcopy_disconnect(snapshot->client);
		}
		tcopy_snapshots = NIL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	tcopy_snapshots_taken = true;
	MemoryContextSwitchTo(oldcontext);
}

/*
 * The transaction's snapshot on the tserver of options, all of them taken
 * now when this is the transaction's first use of a tcopy table: false
 * (nothing set) when the isolation level keeps no snapshot, or the server
 * is null:.  A tserver that got no snapshot then (unreachable, or a server
 * or user mapping made since) is a serialization failure: what it holds
 * could not be read as of the others' snapshots.
 */
bool
tcopy_xact_snapshot(const TcopyTableOptions *options, uint64 *id, const uint8 **key,
					size_t *keylen)
{
	TcopySnapshot *snapshot = NULL;
	ListCell   *lc;

	if (!IsolationUsesXactSnapshot() || tcopy_address_is_null(options->address))
		return false;
	if (!tcopy_snapshots_taken)
		tcopy_snapshots_begin(options);
	foreach(lc, tcopy_snapshots)
	{
		TcopySnapshot *s = (TcopySnapshot *) lfirst(lc);

		if (strcmp(s->address, options->address) == 0)
		{
			snapshot = s;
			break;
		}
	}
	if (snapshot == NULL || snapshot->client == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access: tserver at \"%s\" has no snapshot in this transaction",
						options->address),
				 snapshot != NULL ?
				 errdetail("It could not be reached when the transaction took its snapshots: %s",
						   snapshot->why) :
				 errdetail("The transaction took its snapshots before it could reach this tserver (its server, or the user mapping for the current user, is newer, or belongs to another user)."),
				 errhint("Retry the transaction.")));
	*id = snapshot->id;
	*key = snapshot->key;
	*keylen = snapshot->keylen;
	return true;
}

/*
 * READ COMMITTED: the tservers a statement (an executor state) reads, and
 * once its first scan starts, when they are two or more, their snapshots,
 * in the executor state's memory and freed with it.
 */
typedef struct TcopyStatementSnapshots
{
	EState	   *estate;
	List	   *tables;			/* TcopyTableOptions *, one per tserver */
	List	   *snapshots;		/* TcopySnapshot *, once taken */
	bool		taken;
	bool		in_doubt;		/* taken even of one tserver */
	bool		shared;			/* ... as a parallel scan's participants read it */
	MemoryContextCallback freed;
	struct TcopyStatementSnapshots *next;
} TcopyStatementSnapshots;

static TcopyStatementSnapshots *tcopy_statements = NULL;

static TcopyStatementSnapshots *
tcopy_statement_find(EState *estate)
{
	for (TcopyStatementSnapshots *st = tcopy_statements; st != NULL; st = st->next)
		if (st->estate == estate)
			return st;
	return NULL;
}

/* The executor state is freed (the statement ended, or aborted). */
static void
tcopy_statement_freed(void *arg)
{
	TcopyStatementSnapshots *st = (TcopyStatementSnapshots *) arg;
	TcopyStatementSnapshots **link;
	ListCell   *lc;

	for (link = &tcopy_statements; *link != NULL; link = &(*link)->next)
		if (*link == st)
		{
			*link = st->next;
			break;
		}
	foreach(lc, st->snapshots)
	{
		TcopySnapshot *snapshot = (TcopySnapshot *) lfirst(lc);

		if (snapshot->client != NULL)
			tcopy_disconnect(snapshot->client);
	}
}

/*
 * A scan of the table of options begins in estate: under READ COMMITTED,
 * the statement reads its tserver.  options must live as long as estate.
 */
void
tcopy_statement_reads(EState *estate, const TcopyTableOptions *options)
{
	TcopyStatementSnapshots *st;
	MemoryContext oldcontext;
	ListCell   *lc;

	if (IsolationUsesXactSnapshot() || tcopy_address_is_null(options->address))
		return;
	st = tcopy_statement_find(estate);
	oldcontext = MemoryContextSwitchTo(estate->es_query_cxt);
	if (st == NULL)
	{
		st = palloc0(sizeof(TcopyStatementSnapshots));
		st->estate = estate;
		st->freed.func = tcopy_statement_freed;
		st->freed.arg = st;
		MemoryContextRegisterResetCallback(estate->es_query_cxt, &st->freed);
		st->next = tcopy_statements;
		tcopy_statements = st;
	}
	foreach(lc, st->tables)
		if (strcmp(((TcopyTableOptions *) lfirst(lc))->address, options->address) == 0)
			break;
	if (lc == NULL && !st->taken)
		st->tables = lappend(st->tables, (void *) options);
	MemoryContextSwitchTo(oldcontext);
}

/*
 * The snapshot a scan of the table of options in estate reads: the
 * transaction's (REPEATABLE READ, SERIALIZABLE), else the statement's
 * when it reads two tservers or more, all taken when its first scan
 * starts.  false: none (a scan then reads what is committed as it starts).
 */
bool
tcopy_read_snapshot(EState *estate, const TcopyTableOptions *options, uint64 *id,
					const uint8 **key, size_t *keylen)
{
	TcopyStatementSnapshots *st;
	ListCell   *lc;

	if (IsolationUsesXactSnapshot())
		return tcopy_xact_snapshot(options, id, key, keylen);
	st = tcopy_statement_find(estate);
	if (st == NULL || (list_length(st->tables) < 2 && !st->in_doubt && !st->shared))
		return false;
	if (!st->taken)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(estate->es_query_cxt);

		st->taken = true;		/* a failure fails the statement */
		foreach(lc, st->tables)
		{
			const TcopyTableOptions *table = (const TcopyTableOptions *) lfirst(lc);
			TcopySnapshot *snapshot = palloc0(sizeof(TcopySnapshot));

			snapshot->address = table->address;
			st->snapshots = lappend(st->snapshots, snapshot);
			snapshot->client = tcopy_connect(table->address, table->token, &table->tls);
		}
		tcopy_snapshots_take_all(st->snapshots);
		MemoryContextSwitchTo(oldcontext);
	}
	foreach(lc, st->snapshots)
	{
		TcopySnapshot *snapshot = (TcopySnapshot *) lfirst(lc);

		if (strcmp(snapshot->address, options->address) == 0)
		{
			*id = snapshot->id;
			*key = snapshot->key;
			*keylen = snapshot->keylen;
			return true;
		}
	}
	return false;
}

/*
 * The snapshot that every participant of a parallel scan of the table of
 * options in estate reads (fdw_parallel.c): tcopy_read_snapshot's, taken
 * under READ COMMITTED even when the statement reads one tserver, as the
 * participants' scans start apart.  false: none (the statement took its
 * snapshots before it read this tserver, or the server is null:).
 */
bool
tcopy_read_snapshot_shared(EState *estate, const TcopyTableOptions *options, uint64 *id,
						   const uint8 **key, size_t *keylen)
{
	if (!IsolationUsesXactSnapshot())
	{
		TcopyStatementSnapshots *st;

		tcopy_statement_reads(estate, options);
		st = tcopy_statement_find(estate);
		if (st != NULL)
			st->shared = true;
	}
	return tcopy_read_snapshot(estate, options, id, key, keylen);
}

/*
 * A scan of the table of options in estate, reading no snapshot, was
 * refused: a prepared session nobody holds wrote to the table, and its
 * transaction may have committed.  From now on the statement reads
 * snapshots, even of one tserver: taking them publishes the sessions of
 * committed transactions first (tcopy_snapshots_take_all).  A statement
 * whose snapshots are taken already (as it reads several tservers) named
 * one in that scan, and could not have been refused.
 */
void
tcopy_read_snapshot_in_doubt(EState *estate, const TcopyTableOptions *options)
{
	TcopyStatementSnapshots *st = tcopy_statement_find(estate);

	if (st == NULL)
	{
		tcopy_statement_reads(estate, options);
		st = tcopy_statement_find(estate);
	}
	if (st != NULL)
		st->in_doubt = true;
}

/*
 * Publish on the tserver at address the sessions prepared there of
 * transactions Postgres committed, through a snapshot taken for that and
 * dropped: a write refused behind an in-doubt session (40001) then finds
 * the table free when retried, if Postgres committed that session's
 * transaction, without waiting for recovery.  A failure is swallowed: the
 * caller raises its own ERROR right after.
 */
void
tcopy_publish_committed(const char *address, const char *token, const TcTlsOptions *tls)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	TcopySnapshot snapshot;
	char		err[256];

	memset(&snapshot, 0, sizeof(snapshot));
	snapshot.address = (char *) address;
	snapshot.client = tcopy_try_connect(address, token, tls, err, sizeof(err));
	if (snapshot.client == NULL)
		return;
	PG_TRY();
	{
		tcopy_snapshots_take_all(list_make1(&snapshot));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		FlushErrorState();
	}
	PG_END_TRY();
	tcopy_disconnect(snapshot.client);
}

/* The transaction ends: its snapshots go with their connections. */
static void
tcopy_snapshots_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			foreach(lc, tcopy_snapshots)
			{
				TcopySnapshot *snapshot = (TcopySnapshot *) lfirst(lc);

				if (snapshot->client != NULL)
					tcopy_disconnect(snapshot->client);
			}
			tcopy_snapshots = NIL;	/* the list went with TopTransactionContext */
			tcopy_snapshots_taken = false;
			/* a commit leaves the gate before its publish (xact_commit.c) */
			if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT)
				tcopy_in_commit_gate = false;	/* a lock, released with the others */
			break;
		default:
			break;
	}
}

void
TcopySnapshotInit(void)
{
	RegisterXactCallback(tcopy_snapshots_xact_callback, NULL);
}
