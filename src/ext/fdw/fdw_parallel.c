/*
 * fdw_parallel.c
 *		Parallel scans of tcopy tables (docs/scans.md, "Parallel scans"):
 *		the partial path the planner may gather, and the parts of the key
 *		range that the leader and the workers of a Parallel Foreign Scan
 *		take one at a time from dynamic shared memory.
 *
 * The leader asks its tserver for the keys that cut the scan's key range
 * into parts of about the same size (SPLIT), takes the snapshot every
 * participant then reads as of, and lays both out in the DSM beside a
 * counter of the next part.  Each participant (the leader, each worker on
 * a connection of its own) takes the next part, scans it (Scan.raw_lower,
 * raw_upper), and takes another, until none is left: a part is read once,
 * by whoever takes it.  A transaction that wrote the table reads its write
 * session over the stored rows, and such a scan is not split: the whole
 * range is one part, which names the session.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "port/atomics.h"

#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"

/*
 * The planner sizes a heap's parallel scan by its pages: a tcopy table's
 * rows count as heap pages of about this many rows each.
 */
#define TCOPY_ROWS_PER_PAGE 100.0

/* Parts asked of the tserver per participant: the fast take more. */
#define TCOPY_PARTS_PER_PARTICIPANT 4

/* What the participants share, in the DSM. */
struct TcopyParallelScan
{
	pg_atomic_uint32 next_part;	/* the next part to take */
	uint32		nparts;			/* 0: no rows to read */
	uint64		snapshot_id;	/* what every part reads as of; 0: none */
	uint8		snapshot_key[TC_SNAPSHOT_KEY_MAX];
	uint32		snapshot_keylen;
	uint64		session_id;		/* the transaction's write session; 0: none */
	uint32		session_keylen; /* its key: the first bytes of data */
	Size		size;			/* of the whole struct */
	/* the session's key, then the nparts - 1 keys between the parts: uint32 length, bytes */
	char		data[FLEXIBLE_ARRAY_MEMBER];
};

/* A tcopy table's scan is as safe in a worker as in the leader. */
bool
tcopyIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	return true;
}

/*
 * Offer a partial scan of baserel, of tuples rows before its quals, whose
 * serial scan costs startup_cost then run_cost: the workers a heap of as
 * many pages of TCOPY_ROWS_PER_PAGE rows would get (compute_parallel_worker),
 * the run cost and rows shared out as a parallel seq scan's are.  With
 * pathkeys (the key's order), the same scan declared in that order too:
 * each participant takes its parts in ascending order, so its rows come in
 * key order, and a Gather Merge merges them.
 *
 * The serial paths offered before are made parallel unsafe: run whole in a
 * worker (the inner side of a join in a parallel plan), a scan would read
 * neither the leader's snapshot nor the transaction's writes, which only
 * the parts of a parallel scan carry to the workers.
 */
void
tcopy_add_partial_path(PlannerInfo *root, RelOptInfo *baserel, double tuples,
					   Cost startup_cost, Cost run_cost, List *pathkeys)
{
	ListCell   *lc;
	double		divisor;
	int			workers;

	foreach(lc, baserel->pathlist)
		((Path *) lfirst(lc))->parallel_safe = false;
	if (!baserel->consider_parallel || baserel->lateral_relids != NULL)
		return;
	workers = compute_parallel_worker(baserel, tuples / TCOPY_ROWS_PER_PAGE, -1,
									  max_parallel_workers_per_gather);
	if (workers <= 0)
		return;
	/* costsize.c's get_parallel_divisor */
	divisor = workers;
	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	for (int sorted = 0; sorted <= (pathkeys != NIL ? 1 : 0); sorted++)
	{
		ForeignPath *path;

		path = create_foreignscan_path(root, baserel, NULL,
									   clamp_row_est(baserel->rows / divisor),
									   startup_cost, startup_cost + run_cost / divisor,
									   sorted ? pathkeys : NIL, NULL, NULL, NIL);
		path->path.parallel_aware = true;
		path->path.parallel_safe = true;
		path->path.parallel_workers = workers;
		add_partial_path(baserel, (Path *) path);
	}
}

/* Append len bytes at data to buf. */
static void
tcopy_parallel_append(StringInfo buf, const void *data, uint32 len)
{
	appendBinaryStringInfo(buf, (const char *) &len, sizeof(len));
	appendBinaryStringInfo(buf, (const char *) data, len);
}

/*
 * The leader's plan of a parallel scan, in the current memory context, for
 * the DSM: the parts of the key range of table_id (opened on client; NULL:
 * the scan reads no rows) that codec's scan reads, about
 * TCOPY_PARTS_PER_PARTICIPANT for each of nworkers and the leader, and the
 * snapshot they all read as of.  A transaction that wrote the table reads
 * one part, naming its session.
 */
TcopyParallelScan *
tcopy_parallel_prepare(TcopyRelCodec *codec, EState *estate, TcClient *client,
					   uint32 table_id, const TcopyKeyRange *range, int nworkers)
{
	StringInfoData data;
	TcopyParallelScan *scan;
	const uint8 *key;
	size_t		keylen;
	uint64		session_id = 0;
	uint64		snapshot_id = 0;
	const uint8 *session_key = NULL;
	size_t		session_keylen = 0;
	const uint8 *snapshot_key = NULL;
	size_t		snapshot_keylen = 0;
	uint32		nparts = 0;

	initStringInfo(&data);
	if (client != NULL)
	{
		nparts = 1;
		if (tcopy_xact_session_to_read(codec->relname, &codec->options, codec->userid,
									   &session_id, &session_key, &session_keylen))
			appendBinaryStringInfo(&data, (const char *) session_key, session_keylen);
		if (tcopy_read_snapshot_shared(estate, &codec->options, &snapshot_id, &key, &keylen))
		{
			snapshot_key = key;
			snapshot_keylen = keylen;
		}

		/*
		 * Split only what every participant reads alike: the committed rows
		 * as of one snapshot.
		 */
		if (session_id == 0 && snapshot_id != 0)
		{
			Tcopy__Split request = TCOPY__SPLIT__INIT;
			Tcopy__SplitOk *ok;

			request.table_id = table_id;
			if (range->lower.present)
				request.lower = tcopy_make_key_bound(&range->lower);
			if (range->upper.present)
				request.upper = tcopy_make_key_bound(&range->upper);
			request.max_parts = (uint32) (TCOPY_PARTS_PER_PARTICIPANT * (nworkers + 1));
			if (tc_client_split(client, &request, &ok) < 0)
				tcopy_report_client_error(client, codec->options.address,
										  psprintf("could not split the scan of foreign table \"%s\"",
												   codec->relname));
			for (size_t i = 0; i < ok->n_keys; i++)
				tcopy_parallel_append(&data, ok->keys[i].data, (uint32) ok->keys[i].len);
			nparts += (uint32) ok->n_keys;
			tcopy__split_ok__free_unpacked(ok, NULL);
		}
	}

	scan = palloc0(offsetof(TcopyParallelScan, data) + data.len);
	scan->size = offsetof(TcopyParallelScan, data) + data.len;
	scan->nparts = nparts;
	scan->snapshot_id = snapshot_id;
	if (snapshot_keylen > sizeof(scan->snapshot_key))
		elog(ERROR, "snapshot key of %zu bytes", snapshot_keylen);
	memcpy(scan->snapshot_key, snapshot_key, snapshot_keylen);
	scan->snapshot_keylen = (uint32) snapshot_keylen;
	scan->session_id = session_id;
	scan->session_keylen = (uint32) session_keylen;
	memcpy(scan->data, data.data, data.len);
	pfree(data.data);
	return scan;
}

/* The bytes of the DSM that plan fills. */
Size
tcopy_parallel_size(const TcopyParallelScan *plan)
{
	return plan->size;
}

/* Lay plan out in the DSM at shared, no part taken yet. */
void
tcopy_parallel_publish(TcopyParallelScan *shared, const TcopyParallelScan *plan)
{
	memcpy(shared, plan, plan->size);
	pg_atomic_init_u32(&shared->next_part, 0);
}

/* A rescan: every part is to be read again. */
void
tcopy_parallel_restart(TcopyParallelScan *shared)
{
	pg_atomic_write_u32(&shared->next_part, 0);
}

/* Whether the scan has rows to read, in parts. */
bool
tcopy_parallel_has_parts(const TcopyParallelScan *shared)
{
	return shared->nparts > 0;
}

/* The next part for this participant to read: its index, or -1 when none is left. */
int
tcopy_parallel_take_part(TcopyParallelScan *shared)
{
	uint32		part;

	if (pg_atomic_read_u32(&shared->next_part) >= shared->nparts)
		return -1;
	part = pg_atomic_fetch_add_u32(&shared->next_part, 1);
	return part < shared->nparts ? (int) part : -1;
}

/*
 * Set request to read part: its raw bounds, the snapshot, the session; true
 * when it names the session.  The bytes stay in the DSM.
 */
bool
tcopy_parallel_part_request(const TcopyParallelScan *shared, int part, Tcopy__Scan *request)
{
	const char *p = shared->data + shared->session_keylen;

	Assert(part >= 0 && (uint32) part < shared->nparts);
	request->snapshot_id = shared->snapshot_id;
	request->snapshot_key.data = (uint8_t *) shared->snapshot_key;
	request->snapshot_key.len = shared->snapshot_keylen;
	request->session_id = shared->session_id;
	request->session_key.data = (uint8_t *) shared->data;
	request->session_key.len = shared->session_keylen;
	/* part k lies between keys k - 1 and k */
	for (int k = 0; k <= part && k < (int) shared->nparts - 1; k++)
	{
		uint32		len;

		memcpy(&len, p, sizeof(len));
		if (k == part - 1)
		{
			request->raw_lower.data = (uint8_t *) p + sizeof(len);
			request->raw_lower.len = len;
		}
		if (k == part)
		{
			request->raw_upper.data = (uint8_t *) p + sizeof(len);
			request->raw_upper.len = len;
		}
		p += sizeof(len) + len;
	}
	return shared->session_id != 0;
}
