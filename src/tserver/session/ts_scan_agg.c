/*
 * ts_scan_agg.c
 *		Aggregates of a scan (docs/scans.md#aggregates): the request's
 *		group_by and aggregates checked against the table, every row the
 *		scan reads (through its one iterator of visible rows and its
 *		filter, ts_scan_next_visible) put in its group and aggregated
 *		(ts_scan_agg_groups.c), in one pass or in parts of the key range
 *		read by threads of their own, then the groups streamed, in the
 *		order they were first met, as ScanBatch.groups.
 */
#include "ts_scan_agg_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "ts_log.h"

#define AGG_MAX_GROUP_BY 32		/* as Postgres' INDEX_MAX_KEYS */
#define AGG_MAX_AGGREGATES 1600
#define AGG_BATCH_BYTES (1024 * 1024)
#define AGG_BATCH_GROUPS 10000
#define AGG_MAX_THREADS 8

bool
ts_scan_agg_requested(const Tcopy__Scan *request)
{
	return request->n_aggregates > 0 || request->n_group_by > 0;
}

/* Check one aggregate against the table's layout. */
static bool
agg_check(const TsLayout *layout, const Tcopy__Aggregate *a)
{
	Tcopy__Kind kind;

	if (a == NULL)
		return false;
	if (a->op == TCOPY__AGG_OP__AGG_COUNT_ROWS)
		return true;
	if (a->column >= layout->ncolumns)
		return false;
	kind = layout->kinds[a->column];
	switch (a->op)
	{
		case TCOPY__AGG_OP__AGG_COUNT:
			return true;
		case TCOPY__AGG_OP__AGG_SUM_INT:
			return a->type == TCOPY__VALUE_TYPE__VALUE_INT &&
				(kind == TCOPY__KIND__KIND_INT || kind == TCOPY__KIND__KIND_BOOL);
		case TCOPY__AGG_OP__AGG_SUM_FLOAT:
		case TCOPY__AGG_OP__AGG_SUM_FLOAT4:
		case TCOPY__AGG_OP__AGG_AVG_FLOAT:
			return a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT && kind == TCOPY__KIND__KIND_FLOAT;
		case TCOPY__AGG_OP__AGG_MIN:
		case TCOPY__AGG_OP__AGG_MAX:
			return (a->type == TCOPY__VALUE_TYPE__VALUE_INT &&
					(kind == TCOPY__KIND__KIND_INT || kind == TCOPY__KIND__KIND_BOOL)) ||
				(a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT && kind == TCOPY__KIND__KIND_FLOAT) ||
				(a->type == TCOPY__VALUE_TYPE__VALUE_BE_INT && kind == TCOPY__KIND__KIND_BYTES);
		default:
			return false;
	}
}

TsScanAgg *
ts_scan_agg_open(TsScan *scan, const Tcopy__Scan *request, TsError *err)
{
	const TsTable *table = ts_scan_table(scan);
	const TsLayout *layout = ts_scan_layout(scan);
	TsScanAgg  *agg = calloc(1, sizeof(TsScanAgg));

	if (agg == NULL)
		goto oom;
	tc_arena_init(&agg->groups_arena, 256 * 1024);
	agg->scan = scan;
	agg->table = table;
	agg->layout = layout;
	agg->limit = request->limit;
	if (request->n_group_by > AGG_MAX_GROUP_BY || request->n_aggregates > AGG_MAX_AGGREGATES)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "scan groups by %zu columns with %zu aggregates",
					 request->n_group_by, request->n_aggregates);
		goto err;
	}
	agg->ngroup_by = request->n_group_by;
	agg->group_by = request->group_by;
	for (size_t i = 0; i < agg->ngroup_by; i++)
	{
		uint32_t	col = agg->group_by[i];

		if (col >= layout->ncolumns || layout->kinds[col] == TCOPY__KIND__KIND_FLOAT)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "scan groups table \"%s\" by column %u, which is no integer, "
						 "bool or bytes column", table->name, col);
			goto err;
		}
		if (layout->kinds[col] == TCOPY__KIND__KIND_BYTES)
			agg->group_blobs++;
		else
			agg->group_ints++;
	}
	agg->naggs = request->n_aggregates;
	agg->aggs = request->aggregates;
	for (size_t i = 0; i < agg->naggs; i++)
	{
		const Tcopy__Aggregate *a = agg->aggs[i];

		if (!agg_check(layout, a))
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "aggregate %zu of the scan of table \"%s\" does not fit its columns",
						 i, table->name);
			goto err;
		}
		switch (a->op)
		{
			case TCOPY__AGG_OP__AGG_SUM_INT:
				agg->ints_per_group += 2;
				break;
			case TCOPY__AGG_OP__AGG_SUM_FLOAT:
			case TCOPY__AGG_OP__AGG_SUM_FLOAT4:
				agg->floats_per_group++;
				break;
			case TCOPY__AGG_OP__AGG_AVG_FLOAT:
				agg->floats_per_group += 2;
				break;
			case TCOPY__AGG_OP__AGG_MIN:
			case TCOPY__AGG_OP__AGG_MAX:
				if (a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT)
					agg->floats_per_group++;
				else
					agg->ints_per_group++;
				break;
			default:
				break;
		}
	}
	if (!ts_agg_init_groups(agg, err))
		goto err;
	return agg;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
err:
	ts_scan_agg_close(agg);
	return NULL;
}

/*
 * Parallel aggregation: the scan's range cut into parts (ts_scan_parts),
 * each aggregated by a thread of its own into groups of its own, then
 * combined in key order (the first part's groups first).  Only aggregates
 * whose combination is exactly what one pass in key order gives: counts,
 * integer sums, and min and max (of equal values, float8larger and
 * float8smaller keep the later one, as one pass does); float sums and
 * averages would round differently, so a scan with them reads in one pass.
 */
typedef struct AggPart
{
	TsScanAgg  *agg;
	pthread_t	thread;
	bool		started;
	int			rc;
	TsError		err;
} AggPart;

static bool
agg_combinable(const TsScanAgg *agg)
{
	for (size_t i = 0; i < agg->naggs; i++)
	{
		switch (agg->aggs[i]->op)
		{
			case TCOPY__AGG_OP__AGG_COUNT_ROWS:
			case TCOPY__AGG_OP__AGG_COUNT:
			case TCOPY__AGG_OP__AGG_SUM_INT:
			case TCOPY__AGG_OP__AGG_MIN:
			case TCOPY__AGG_OP__AGG_MAX:
				break;
			default:
				return false;
		}
	}
	return true;
}

/* An aggregation of part like agg's, with groups of its own; NULL: out of memory. */
static TsScanAgg *
agg_part_new(const TsScanAgg *agg, TsScan *part)
{
	TsScanAgg  *p = calloc(1, sizeof(TsScanAgg));
	TsError		err;

	if (p == NULL)
		return NULL;
	tc_arena_init(&p->groups_arena, 256 * 1024);
	p->scan = part;
	p->table = agg->table;
	p->layout = agg->layout;
	p->group_by = agg->group_by;
	p->ngroup_by = agg->ngroup_by;
	p->group_ints = agg->group_ints;
	p->group_blobs = agg->group_blobs;
	p->aggs = agg->aggs;
	p->naggs = agg->naggs;
	p->ints_per_group = agg->ints_per_group;
	p->floats_per_group = agg->floats_per_group;
	if (ts_agg_init_groups(p, &err))
		return p;
	ts_agg_free(p);
	return NULL;
}

static void *
agg_part_main(void *arg)
{
	AggPart    *part = (AggPart *) arg;

	part->rc = ts_agg_read_all(part->agg, &part->err);
	return NULL;
}

/*
 * Aggregate the scan in parts, a thread each, when it cuts: *done, or not
 * (then read it in one pass).  0, or -1 with err.
 */
static int
agg_read_parallel(TsScanAgg *agg, bool *done, TsError *err)
{
	long		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	TsScan	  **scans = NULL;
	size_t		n = 0;
	AggPart    *parts;
	int			result = 0;

	*done = false;
	if (cpus < 2 || !agg_combinable(agg) || agg->limit > 0)
		return 0;
	if (ts_scan_parts(agg->scan, (uint32_t) (cpus < AGG_MAX_THREADS ? cpus : AGG_MAX_THREADS),
					  &scans, &n, err) != 0)
		return -1;
	if (n == 0)
		return 0;
	ts_log(TS_LOG_DEBUG, "aggregating table \"%s\" in %zu parts", agg->table->name, n);
	parts = calloc(n, sizeof(AggPart));
	for (size_t i = 0; parts != NULL && i < n; i++)
	{
		parts[i].agg = agg_part_new(agg, scans[i]);
		if (parts[i].agg == NULL ||
			pthread_create(&parts[i].thread, NULL, agg_part_main, &parts[i]) != 0)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
						 "could not start an aggregation thread");
			result = -1;
			break;
		}
		parts[i].started = true;
	}
	if (parts == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		result = -1;
	}
	for (size_t i = 0; parts != NULL && i < n; i++)
	{
		if (parts[i].started)
			pthread_join(parts[i].thread, NULL);
		if (result == 0 && parts[i].started && parts[i].rc < 0)
		{
			*err = parts[i].err;
			result = -1;
		}
	}
	for (size_t i = 0; result == 0 && i < n; i++)
		result = ts_agg_merge(agg, parts[i].agg, err);
	for (size_t i = 0; i < n; i++)
	{
		if (parts != NULL)
			ts_agg_free(parts[i].agg);
		ts_scan_close(scans[i]);
	}
	free(parts);
	free(scans);
	*done = result == 0;
	return result;
}

int
ts_scan_agg_next(TsScanAgg *agg, TcArena *arena, Tcopy__ScanBatch *batch, TsError *err)
{
	size_t		bytes = 0;
	size_t		capacity = AGG_BATCH_GROUPS;

	batch->n_rows = 0;
	batch->n_groups = 0;
	batch->done = false;
	if (!agg->aggregated)
	{
		bool		parallel;

		if (agg_read_parallel(agg, &parallel, err) != 0 ||
			(!parallel && ts_agg_read_all(agg, err) != 0))
			return -1;
		agg->aggregated = true;
		agg->emit = agg->first;
	}
	if (agg->limit > 0 && agg->limit - agg->returned < capacity)
		capacity = (size_t) (agg->limit - agg->returned);
	batch->groups = tc_arena_alloc(arena, (capacity + 1) * sizeof(Tcopy__AggRow *));
	if (batch->groups == NULL)
		goto oom;
	while (agg->emit != NULL && batch->n_groups < capacity && bytes < AGG_BATCH_BYTES)
	{
		Tcopy__AggRow *r = ts_agg_row(agg, agg->emit, arena, &bytes);

		if (r == NULL)
			goto oom;
		batch->groups[batch->n_groups++] = r;
		agg->returned++;
		agg->emit = agg->emit->order_next;
	}
	batch->done = agg->emit == NULL || (agg->limit > 0 && agg->returned >= agg->limit);
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

void
ts_scan_agg_close(TsScanAgg *agg)
{
	ts_agg_free(agg);
}
