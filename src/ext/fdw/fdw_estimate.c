/*
 * fdw_estimate.c
 *		The size of a tcopy table as its tserver estimates it: what the
 *		planner assumes of a table ANALYZE has not counted; and the rows a
 *		scan makes the tserver read (those of its key range).
 *
 * The tserver answers from RocksDB's metadata without reading the rows
 * (STATS_REQUEST with a table id; docs/protocol.md#statistics), so asking
 * costs one connection and a round trip (and a count of the table's keys
 * in the memtables, up to 100000: some milliseconds).  An answer is kept
 * per relation for the rest of the transaction and TCOPY_ESTIMATE_KEEP_MS
 * after it was asked, so that planning a statement that names a table many
 * times, many statements of one transaction, or many short transactions
 * (pgbench's) ask once; a later transaction asks again, and sees the rows
 * committed meanwhile.
 *
 * Asking fails soft: when the tserver cannot be reached, refuses the
 * table, or predates estimates, the planner takes the default, as it did
 * before estimates existed (DEBUG1 says why), so that EXPLAIN and plans
 * that never scan the table (a constant-false qual, a statement prepared
 * ahead) still work; a scan then fails with the tserver's own error.
 * Asking gives up after TCOPY_ESTIMATE_WAIT_MS: the scan that follows
 * waits tcopy.connect_timeout for a tserver that does not answer, and the
 * planning must not wait as long again first.
 * Errors raised before the tserver is asked (a missing user mapping) are
 * raised, as a scan raises them.
 */

#include "postgres.h"

#include "access/table.h"
#include "optimizer/optimizer.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/fdw.h"

typedef struct TcopyEstimateEntry
{
	Oid			relid;			/* hash key */
	LocalTransactionId lxid;	/* the transaction that asked */
	TimestampTz asked_at;
	bool		known;			/* false: the tserver gave none */
	double		rows;
	double		bytes;
} TcopyEstimateEntry;

/* How long asking may take; a tserver on the same host answers in far less. */
#define TCOPY_ESTIMATE_WAIT_MS 250
/* How long an answer serves later transactions. */
#define TCOPY_ESTIMATE_KEEP_MS 1000

/* Estimates by relation, in TopMemoryContext (see above for how long they serve). */
static HTAB *tcopy_estimates = NULL;

/*
 * Ask the tserver of rel, as userid, for its estimate; false when it
 * cannot give one.
 */
static bool
tcopy_fetch_estimate(Relation rel, Oid userid, double *rows, double *bytes)
{
	TcopyTableOptions options;
	TcClient   *client;
	char		err[256];
	uint32_t	table_id;
	uint64_t	nrows;
	uint64_t	nbytes;
	bool		ok = false;

	tcopy_get_table_options(rel, userid, &options);
	if (tcopy_address_is_null(options.address))
	{
		/* null: keeps nothing */
		*rows = *bytes = 0;
		return true;
	}
	client = tcopy_try_connect(options.address, options.token, &options.tls,
							   err, sizeof(err));
	if (client == NULL)
	{
		elog(DEBUG1, "tcopy: no row estimate for \"%s\": %s",
			 RelationGetRelationName(rel), err);
		return false;
	}
	if (tc_client_open_table(client, options.table_name, NULL, false,
							 &table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
		{
			/* never written to */
			*rows = *bytes = 0;
			ok = true;
		}
		else
			elog(DEBUG1, "tcopy: no row estimate for \"%s\": %s",
				 RelationGetRelationName(rel), tc_client_error(client));
	}
	else if (tc_client_table_estimate(client, table_id, &nrows, &nbytes) == 0)
	{
		*rows = (double) nrows;
		*bytes = (double) nbytes;
		ok = true;
	}
	else
		elog(DEBUG1, "tcopy: no row estimate for \"%s\" from the tserver",
			 RelationGetRelationName(rel));
	tcopy_disconnect(client);
	return ok;
}

bool
tcopy_table_estimate(Relation rel, Oid userid, double *rows, double *bytes)
{
	TcopyEstimateEntry *entry;
	Oid			relid = RelationGetRelid(rel);
	bool		found;

	if (tcopy_estimates == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TcopyEstimateEntry);
		ctl.hcxt = TopMemoryContext;
		tcopy_estimates = hash_create("tcopy row estimates", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(tcopy_estimates, &relid, HASH_ENTER, &found);
	if (!found || entry->lxid == InvalidLocalTransactionId ||
		(entry->lxid != MyProc->lxid &&
		 GetCurrentTimestamp() > TimestampTzPlusMilliseconds(entry->asked_at, TCOPY_ESTIMATE_KEEP_MS)))
	{
		/* not valid until it is filled: an ERROR leaves it stale */
		entry->lxid = InvalidLocalTransactionId;
		tcopy_set_wait_deadline(TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															TCOPY_ESTIMATE_WAIT_MS));
		PG_TRY();
		{
			entry->known = tcopy_fetch_estimate(rel, userid, &entry->rows, &entry->bytes);
		}
		PG_FINALLY();
		{
			tcopy_set_wait_deadline(0);
		}
		PG_END_TRY();
		entry->lxid = MyProc->lxid;
		entry->asked_at = GetCurrentTimestamp();
	}
	if (!entry->known)
		return false;
	*rows = entry->rows;
	*bytes = entry->bytes;
	return true;
}

/*
 * The selectivity of the quals that bound the key range the tserver reads
 * (key_range.c: a single integer key column compared with constants).
 */
Selectivity
tcopy_key_range_selectivity(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Relation	rel = table_open(foreigntableid, NoLock);
	bool		key_bytes;
	List	   *key_attnums = tcopy_rel_key_attnums(rel, &key_bytes);
	List	   *bounding = NIL;
	ListCell   *lc;

	table_close(rel, NoLock);
	if (list_length(key_attnums) != 1)
		return 1.0;
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		List	   *bounds = NIL;

		if (!rinfo->pseudoconstant &&
			tcopy_clause_key_bound(baserel->relid, rinfo->clause, &bounds) ==
			linitial_int(key_attnums))
			bounding = lappend(bounding, rinfo);
	}
	return bounding == NIL ? 1.0 :
		clauselist_selectivity(root, bounding, 0, JOIN_INNER, NULL);
}

double
tcopy_rel_read_rows(RelOptInfo *rel)
{
	TcopyRelInfo *info = (TcopyRelInfo *) rel->fdw_private;

	return info != NULL ? info->read_rows : rel->rows;
}
