/*
 * snapshot.c
 *		A transaction's snapshot on each tserver, under REPEATABLE READ and
 *		SERIALIZABLE (docs/snapshots.md).
 *
 * Where the isolation level keeps one snapshot for the transaction
 * (IsolationUsesXactSnapshot), the transaction's first read or write of a
 * tserver takes a snapshot of its committed rows there, on a connection of
 * its own that holds it until the transaction ends.  Every scan of the
 * transaction on that tserver reads as of it (with the transaction's own
 * writes on top), and its write session is begun on it, so that the
 * tserver refuses an update or delete of a row another transaction changed
 * since (40001, first updater wins).  Under READ COMMITTED nothing is
 * taken: a scan reads what is committed when it starts.
 */

#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

typedef struct TcopySnapshot
{
	char	   *address;		/* the tserver's */
	TcClient   *client;			/* holds the snapshot */
	uint64		id;
	uint8		key[TC_SNAPSHOT_KEY_MAX];
	size_t		keylen;
} TcopySnapshot;

/* this transaction's, in TopTransactionContext */
static List *tcopy_snapshots = NIL;

/*
 * The transaction's snapshot on the tserver of options, taken now when
 * this is the transaction's first use of it: false (nothing set) when the
 * isolation level keeps no snapshot, or the server is null:.
 */
bool
tcopy_xact_snapshot(const TcopyTableOptions *options, uint64 *id, const uint8 **key,
					size_t *keylen)
{
	TcopySnapshot *snapshot = NULL;
	MemoryContext oldcontext;
	ListCell   *lc;

	if (!IsolationUsesXactSnapshot() || tcopy_address_is_null(options->address))
		return false;
	foreach(lc, tcopy_snapshots)
	{
		TcopySnapshot *s = (TcopySnapshot *) lfirst(lc);

		if (strcmp(s->address, options->address) == 0)
		{
			snapshot = s;
			break;
		}
	}
	if (snapshot == NULL)
	{
		TcClient   *client = tcopy_connect(options->address, options->token, &options->tls);
		uint64		sid;
		uint8		skey[TC_SNAPSHOT_KEY_MAX];
		size_t		skeylen;

		if (tc_client_snapshot(client, &sid, skey, &skeylen) < 0)
		{
			PG_TRY();
			{
				tcopy_report_client_error(client, options->address,
										  "could not take a snapshot of the committed rows");
			}
			PG_FINALLY();
			{
				tcopy_disconnect(client);
			}
			PG_END_TRY();
		}
		oldcontext = MemoryContextSwitchTo(TopTransactionContext);
		snapshot = palloc0(sizeof(TcopySnapshot));
		snapshot->address = pstrdup(options->address);
		snapshot->client = client;
		snapshot->id = sid;
		memcpy(snapshot->key, skey, skeylen);
		snapshot->keylen = skeylen;
		tcopy_snapshots = lappend(tcopy_snapshots, snapshot);
		MemoryContextSwitchTo(oldcontext);
	}
	*id = snapshot->id;
	*key = snapshot->key;
	*keylen = snapshot->keylen;
	return true;
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
				tcopy_disconnect(((TcopySnapshot *) lfirst(lc))->client);
			tcopy_snapshots = NIL;	/* the list went with TopTransactionContext */
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
