/*
 * truncated.c
 *		The tcopy tables the transaction truncated, by subtransaction: what
 *		COPY ... (FREEZE) asks of a table besides having been created in the
 *		current subtransaction.
 *
 * Postgres accepts FREEZE into a heap table truncated in the current
 * subtransaction because the TRUNCATE gave it a new relfilenode
 * (rd_newRelfilenodeSubid); a foreign table's TRUNCATE gives it none.  A
 * tcopy TRUNCATE is staged in the transaction's write session and applied
 * before the session's rows, so a COPY after it loads into an empty table
 * just the same: pgbench -i (client-side generation) relies on it.  Each
 * truncated table is noted with the subtransaction that truncated it; a
 * subtransaction's commit hands its notes to its parent, its abort drops
 * them, and the transaction's end drops them all, as Postgres does for a
 * relation's rd_newRelfilenodeSubid.
 */

#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "tcopy/transaction.h"

typedef struct TcopyTruncated
{
	Oid			relid;
	SubTransactionId subid;
} TcopyTruncated;

/* In TopMemoryContext, for the current transaction only. */
static List *tcopy_truncated = NIL;

static void
tcopy_truncated_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
	{
		list_free_deep(tcopy_truncated);
		tcopy_truncated = NIL;
	}
}

static void
tcopy_truncated_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, tcopy_truncated)
	{
		TcopyTruncated *t = lfirst(lc);

		if (t->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			t->subid = parentSubid;
		else
		{
			tcopy_truncated = foreach_delete_current(tcopy_truncated, lc);
			pfree(t);
		}
	}
}

void
TcopyTruncatedInit(void)
{
	RegisterXactCallback(tcopy_truncated_xact_callback, NULL);
	RegisterSubXactCallback(tcopy_truncated_subxact_callback, NULL);
}

void
tcopy_note_truncated(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	TcopyTruncated *t = palloc(sizeof(TcopyTruncated));

	t->relid = relid;
	t->subid = GetCurrentSubTransactionId();
	tcopy_truncated = lappend(tcopy_truncated, t);
	MemoryContextSwitchTo(old);
}

bool
tcopy_truncated_in_subxact(Oid relid)
{
	SubTransactionId current = GetCurrentSubTransactionId();
	ListCell   *lc;

	foreach(lc, tcopy_truncated)
	{
		TcopyTruncated *t = lfirst(lc);

		if (t->relid == relid && t->subid == current)
			return true;
	}
	return false;
}
