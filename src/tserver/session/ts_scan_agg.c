/*
 * ts_scan_agg.c
 *		Aggregates of a scan (docs/scans.md#aggregates): every row the scan
 *		reads, through its one iterator of visible rows and its filter
 *		(ts_scan_next_visible), goes into the group of its Scan.group_by
 *		values (a hash table on those values, NULL a value of its own),
 *		whose aggregates are advanced as Postgres' transition functions
 *		would advance them, in the rows' key order; then the groups are
 *		streamed, in the order they were first met, as ScanBatch.groups.
 *
 * The arithmetic is Postgres' own (float.c, numeric.c): integer sums in
 * 128 bits, float8pl's and float4pl's sums with their overflow rule
 * (infinite from finite inputs: Postgres raises "value out of range:
 * overflow", so the aggregate is flagged and the client raises it),
 * float8_accum's N, Sx and Sxx, and float8larger's and float8smaller's
 * choice among equal values (NaN above every number, -0 equal to 0).
 */
#include "ts_store_int.h"
#include "ts_scan_agg.h"
#include "ts_log.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define AGG_MAX_GROUP_BY 32		/* as Postgres' INDEX_MAX_KEYS */
#define AGG_MAX_AGGREGATES 1600
#define AGG_BATCH_BYTES (1024 * 1024)
#define AGG_BATCH_GROUPS 10000
#define AGG_MAX_THREADS 8

/* One aggregate's state in one group. */
typedef struct AggState
{
	int64_t		count;			/* rows, or non-NULL values taken */
	int64_t		hi;				/* AGG_SUM_INT: the int128's high 64 bits */
	uint64_t	lo;				/* ... and low ones */
	double		f;				/* float sums, Sx; float min and max */
	double		sxx;			/* AGG_AVG_FLOAT */
	int64_t		i;				/* int min and max */
	bool		overflow;		/* a float sum went infinite from finite inputs */
} AggState;

typedef struct AggGroup
{
	struct AggGroup *next;		/* in its hash bucket */
	struct AggGroup *order_next;	/* in the order groups were met */
	uint64_t	hash;
	uint32_t	keylen;
	uint8_t    *key;			/* the group_by values, serialized */
	AggState	states[];
} AggGroup;

struct TsScanAgg
{
	TsScan	   *scan;
	const TsTable *table;
	uint32_t   *group_by;		/* [ngroup_by] wire columns */
	size_t		ngroup_by;
	size_t		group_ints;		/* group_by columns per kind in AggRow.group */
	size_t		group_blobs;
	Tcopy__Aggregate **aggs;	/* [naggs], the request's */
	size_t		naggs;
	size_t		ints_per_group;	/* AggRow.ints and floats per group */
	size_t		floats_per_group;
	uint64_t	limit;			/* groups to return, 0: all */
	uint64_t	returned;
	TcArena		groups_arena;	/* groups and their keys */
	AggGroup  **buckets;		/* [nbuckets], a power of 2 */
	size_t		nbuckets;
	size_t		ngroups;
	AggGroup   *first;
	AggGroup   *last;
	AggGroup   *emit;			/* the next group to return */
	bool		aggregated;
	uint8_t    *keybuf;			/* a row's group key */
	size_t		keycap;
};

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

/* A new group of the key key[keylen]; NULL with err. */
static AggGroup *
agg_group_new(TsScanAgg *agg, uint64_t hash, const uint8_t *key, size_t keylen, TsError *err)
{
	AggGroup   *g;

	if (agg->ngroups >= TS_AGG_MAX_GROUPS ||
		agg->groups_arena.reserved_bytes + agg->nbuckets * sizeof(AggGroup *) > TS_AGG_MAX_BYTES)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "the aggregate of table \"%s\" has more groups than the tserver holds "
					 "(%d groups, %zu MB)", agg->table->name, TS_AGG_MAX_GROUPS,
					 TS_AGG_MAX_BYTES / (1024 * 1024));
		return NULL;
	}
	g = tc_arena_alloc(&agg->groups_arena, offsetof(AggGroup, states) +
					   agg->naggs * sizeof(AggState));
	if (g == NULL || (keylen > 0 && (g->key = tc_arena_memdup(&agg->groups_arena, key,
															 keylen)) == NULL))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	if (keylen == 0)
		g->key = NULL;
	memset(g->states, 0, agg->naggs * sizeof(AggState));
	g->hash = hash;
	g->keylen = (uint32_t) keylen;
	g->next = NULL;
	g->order_next = NULL;
	if (agg->last != NULL)
		agg->last->order_next = g;
	else
		agg->first = g;
	agg->last = g;
	agg->ngroups++;
	return g;
}

TsScanAgg *
ts_scan_agg_open(TsScan *scan, const Tcopy__Scan *request, TsError *err)
{
	const TsTable *table = ts_scan_table(scan);
	const TsLayout *layout = &table->layout;
	TsScanAgg  *agg = calloc(1, sizeof(TsScanAgg));

	if (agg == NULL)
		goto oom;
	tc_arena_init(&agg->groups_arena, 256 * 1024);
	agg->scan = scan;
	agg->table = table;
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
	if (agg->ngroup_by == 0)
	{
		/* one group, even of no rows */
		if (agg_group_new(agg, 0, NULL, 0, err) == NULL)
			goto err;
	}
	else
	{
		agg->nbuckets = 1024;
		agg->buckets = calloc(agg->nbuckets, sizeof(AggGroup *));
		agg->keycap = 256;
		agg->keybuf = malloc(agg->keycap);
		if (agg->buckets == NULL || agg->keybuf == NULL)
			goto oom;
	}
	return agg;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
err:
	ts_scan_agg_close(agg);
	return NULL;
}

/* Room for extra more bytes of key; false when out of memory. */
static bool
key_reserve(TsScanAgg *agg, size_t used, size_t extra)
{
	uint8_t    *p;
	size_t		cap = agg->keycap;

	if (used + extra <= cap)
		return true;
	while (cap < used + extra)
		cap *= 2;
	p = realloc(agg->keybuf, cap);
	if (p == NULL)
		return false;
	agg->keybuf = p;
	agg->keycap = cap;
	return true;
}

/*
 * Serialize the row's group_by values into agg->keybuf: per column a tag
 * (0 NULL, 1 a value), then an INT's 8 bytes or a BYTES value's length (4
 * bytes) and bytes.  Two rows are of one group iff their keys are equal.
 */
static bool
key_build(TsScanAgg *agg, const TsValue *values, size_t *keylen)
{
	const TsLayout *layout = &agg->table->layout;
	size_t		n = 0;

	for (size_t i = 0; i < agg->ngroup_by; i++)
	{
		const TsValue *v = &values[agg->group_by[i]];

		if (!key_reserve(agg, n, 1 + 8))
			return false;
		if (v->isnull)
		{
			agg->keybuf[n++] = 0;
			continue;
		}
		agg->keybuf[n++] = 1;
		if (layout->kinds[agg->group_by[i]] == TCOPY__KIND__KIND_BYTES)
		{
			uint32_t	len = (uint32_t) v->len;

			if (!key_reserve(agg, n, 4 + v->len))
				return false;
			memcpy(agg->keybuf + n, &len, 4);
			n += 4;
			if (v->len > 0)
				memcpy(agg->keybuf + n, v->p, v->len);
			n += v->len;
		}
		else
		{
			memcpy(agg->keybuf + n, &v->i, 8);
			n += 8;
		}
	}
	*keylen = n;
	return true;
}

static uint64_t
key_hash(const uint8_t *p, size_t len)
{
	uint64_t	h = 0x9E3779B97F4A7C15ULL ^ len;

	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		h = (h ^ (w * 0xBF58476D1CE4E5B9ULL)) * 0x94D049BB133111EBULL;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		h = (h ^ *p++) * 0x100000001B3ULL;
	h ^= h >> 32;
	return h * 0x9E3779B97F4A7C15ULL;
}

/* Double the buckets when the groups outnumber them. */
static bool
buckets_grow(TsScanAgg *agg)
{
	size_t		n = agg->nbuckets * 2;
	AggGroup  **b = calloc(n, sizeof(AggGroup *));

	if (b == NULL)
		return false;
	for (AggGroup *g = agg->first; g != NULL; g = g->order_next)
	{
		size_t		slot = g->hash & (n - 1);

		g->next = b[slot];
		b[slot] = g;
	}
	free(agg->buckets);
	agg->buckets = b;
	agg->nbuckets = n;
	return true;
}

/* The group of key[keylen] (of that hash), added if new; NULL with err. */
static AggGroup *
agg_group_find(TsScanAgg *agg, uint64_t hash, const uint8_t *key, size_t keylen, TsError *err)
{
	AggGroup   *g;

	for (g = agg->buckets[hash & (agg->nbuckets - 1)]; g != NULL; g = g->next)
	{
		if (g->hash == hash && g->keylen == keylen && memcmp(g->key, key, keylen) == 0)
			return g;
	}
	if (agg->ngroups >= agg->nbuckets && !buckets_grow(agg))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	g = agg_group_new(agg, hash, key, keylen, err);
	if (g != NULL)
	{
		size_t		slot = hash & (agg->nbuckets - 1);

		g->next = agg->buckets[slot];
		agg->buckets[slot] = g;
	}
	return g;
}

/* The group of the row's values; NULL with err. */
static AggGroup *
agg_group_of(TsScanAgg *agg, const TsValue *values, TsError *err)
{
	size_t		keylen;

	if (agg->ngroup_by == 0)
		return agg->first;
	if (!key_build(agg, values, &keylen))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	return agg_group_find(agg, key_hash(agg->keybuf, keylen), agg->keybuf, keylen, err);
}

/* float8_gt and float8_lt: every NaN equal, and above every number */
static inline bool
float8_gt(double a, double b)
{
	if (isnan(a))
		return !isnan(b);
	if (isnan(b))
		return false;
	return a > b;
}

static inline bool
float8_lt(double a, double b)
{
	if (isnan(a))
		return false;
	if (isnan(b))
		return true;
	return a < b;
}

/* A VALUE_BE_INT: the big-endian signed integer of 2, 4 or 8 bytes. */
static bool
be_int(const TsValue *v, int64_t *out)
{
	uint64_t	u = 0;

	if (v->len != 2 && v->len != 4 && v->len != 8)
		return false;
	for (size_t b = 0; b < v->len; b++)
		u = (u << 8) | v->p[b];
	if (v->len == 2)
		*out = (int16_t) (uint16_t) u;
	else if (v->len == 4)
		*out = (int32_t) (uint32_t) u;
	else
		*out = (int64_t) u;
	return true;
}

/* Advance one aggregate's state by one row: Postgres' transition function. */
static int
agg_advance(TsScanAgg *agg, const Tcopy__Aggregate *a, AggState *s, const TsValue *values,
			TsError *err)
{
	const TsValue *v;

	if (a->op == TCOPY__AGG_OP__AGG_COUNT_ROWS)
	{
		s->count++;
		return 0;
	}
	v = &values[a->column];
	if (v->isnull)
		return 0;
	switch (a->op)
	{
		case TCOPY__AGG_OP__AGG_SUM_INT:
			{
				unsigned __int128 u = ((unsigned __int128) (uint64_t) s->hi << 64) | s->lo;

				u += (unsigned __int128) (__int128) v->i;
				s->hi = (int64_t) (uint64_t) (u >> 64);
				s->lo = (uint64_t) u;
				break;
			}
		case TCOPY__AGG_OP__AGG_SUM_FLOAT:
			/* float8pl; the first value is the state */
			if (s->count == 0)
				s->f = v->f;
			else
			{
				double		r = s->f + v->f;

				if (isinf(r) && !isinf(s->f) && !isinf(v->f))
					s->overflow = true;
				s->f = r;
			}
			break;
		case TCOPY__AGG_OP__AGG_SUM_FLOAT4:
			/* float4pl, in float */
			if (s->count == 0)
				s->f = (float) v->f;
			else
			{
				float		x = (float) s->f;
				float		y = (float) v->f;
				float		r = x + y;

				if (isinf(r) && !isinf(x) && !isinf(y))
					s->overflow = true;
				s->f = r;
			}
			break;
		case TCOPY__AGG_OP__AGG_AVG_FLOAT:
			{
				/* float8_accum: N, Sx, Sxx */
				double		n0 = (double) s->count;
				double		n = n0 + 1.0;
				double		sx0 = s->f;
				double		x = v->f;
				double		sx = sx0 + x;
				double		sxx = s->sxx;

				if (n0 > 0.0)
				{
					double		tmp = x * n - sx;

					sxx += tmp * tmp / (n * n0);
					if (isinf(sx) || isinf(sxx))
					{
						if (!isinf(sx0) && !isinf(x))
							s->overflow = true;
						sxx = NAN;
					}
				}
				else if (isnan(x) || isinf(x))
					sxx = NAN;
				s->f = sx;
				s->sxx = sxx;
				break;
			}
		case TCOPY__AGG_OP__AGG_MIN:
		case TCOPY__AGG_OP__AGG_MAX:
			{
				bool		max = a->op == TCOPY__AGG_OP__AGG_MAX;

				if (a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT)
				{
					/* float8larger keeps the state only if greater, float8smaller if less */
					if (s->count == 0 ||
						!(max ? float8_gt(s->f, v->f) : float8_lt(s->f, v->f)))
						s->f = v->f;
					break;
				}
				else
				{
					int64_t		x = v->i;

					if (a->type == TCOPY__VALUE_TYPE__VALUE_BE_INT && !be_int(v, &x))
					{
						ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
									 "stored value of column %u of table \"%s\" is no "
									 "big-endian integer", a->column, agg->table->name);
						return -1;
					}
					if (s->count == 0 || (max ? x > s->i : x < s->i))
						s->i = x;
				}
				break;
			}
		default:
			break;
	}
	s->count++;
	return 0;
}

/* Read and aggregate every row of the scan. */
static int
agg_read_all(TsScanAgg *agg, TsError *err)
{
	const TsValue *values;
	int			rc;

	while ((rc = ts_scan_next_visible(agg->scan, &values, err)) > 0)
	{
		AggGroup   *g = agg_group_of(agg, values, err);

		if (g == NULL)
			return -1;
		for (size_t i = 0; i < agg->naggs; i++)
			if (agg_advance(agg, agg->aggs[i], &g->states[i], values, err) != 0)
				return -1;
	}
	return rc;
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
	p->group_by = agg->group_by;
	p->ngroup_by = agg->ngroup_by;
	p->group_ints = agg->group_ints;
	p->group_blobs = agg->group_blobs;
	p->aggs = agg->aggs;
	p->naggs = agg->naggs;
	p->ints_per_group = agg->ints_per_group;
	p->floats_per_group = agg->floats_per_group;
	if (p->ngroup_by == 0)
	{
		if (agg_group_new(p, 0, NULL, 0, &err) == NULL)
			goto fail;
		return p;
	}
	p->nbuckets = 1024;
	p->buckets = calloc(p->nbuckets, sizeof(AggGroup *));
	p->keycap = 256;
	p->keybuf = malloc(p->keycap);
	if (p->buckets != NULL && p->keybuf != NULL)
		return p;
fail:
	ts_scan_agg_close(p);
	return NULL;
}

static void *
agg_part_main(void *arg)
{
	AggPart    *part = (AggPart *) arg;

	part->rc = agg_read_all(part->agg, &part->err);
	return NULL;
}

/* Combine state c, of a later part, into s: as one pass would have left it. */
static void
agg_combine(const Tcopy__Aggregate *a, AggState *s, const AggState *c)
{
	if (c->count == 0)
		return;
	switch (a->op)
	{
		case TCOPY__AGG_OP__AGG_SUM_INT:
			{
				unsigned __int128 u = ((unsigned __int128) (uint64_t) s->hi << 64) | s->lo;

				u += ((unsigned __int128) (uint64_t) c->hi << 64) | c->lo;
				s->hi = (int64_t) (uint64_t) (u >> 64);
				s->lo = (uint64_t) u;
				break;
			}
		case TCOPY__AGG_OP__AGG_MIN:
		case TCOPY__AGG_OP__AGG_MAX:
			{
				bool		max = a->op == TCOPY__AGG_OP__AGG_MAX;

				if (a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT)
				{
					if (s->count == 0 ||
						!(max ? float8_gt(s->f, c->f) : float8_lt(s->f, c->f)))
						s->f = c->f;
				}
				else if (s->count == 0 || (max ? c->i > s->i : c->i < s->i))
					s->i = c->i;
				break;
			}
		default:
			break;
	}
	s->count += c->count;
}

/* Combine part's groups into agg's; 0, or -1 with err. */
static int
agg_merge(TsScanAgg *agg, const TsScanAgg *part, TsError *err)
{
	for (const AggGroup *pg = part->first; pg != NULL; pg = pg->order_next)
	{
		AggGroup   *g = agg->ngroup_by == 0 ? agg->first :
			agg_group_find(agg, pg->hash, pg->key, pg->keylen, err);

		if (g == NULL)
			return -1;
		for (size_t i = 0; i < agg->naggs; i++)
			agg_combine(agg->aggs[i], &g->states[i], &pg->states[i]);
	}
	return 0;
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
		result = agg_merge(agg, parts[i].agg, err);
	for (size_t i = 0; i < n; i++)
	{
		if (parts != NULL)
			ts_scan_agg_close(parts[i].agg);
		ts_scan_close(scans[i]);
	}
	free(parts);
	free(scans);
	*done = result == 0;
	return result;
}

/* The group's values as a Row laid out by kinds, in arena; NULL: out of memory. */
static Tcopy__Row *
group_row(TsScanAgg *agg, const AggGroup *g, TcArena *arena, size_t *bytes)
{
	const TsLayout *layout = &agg->table->layout;
	Tcopy__Row *row = tc_arena_alloc(arena, sizeof(Tcopy__Row));
	const uint8_t *p = g->key;

	if (row == NULL)
		return NULL;
	tcopy__row__init(row);
	row->ints = tc_arena_alloc(arena, (agg->group_ints + 1) * sizeof(int64_t));
	row->blobs = tc_arena_alloc(arena, (agg->group_blobs + 1) * sizeof(ProtobufCBinaryData));
	row->nulls = tc_arena_alloc(arena, (agg->ngroup_by + 1) * sizeof(uint32_t));
	if (!row->ints || !row->blobs || !row->nulls)
		return NULL;
	for (size_t i = 0; i < agg->ngroup_by; i++)
	{
		if (*p++ == 0)
		{
			row->nulls[row->n_nulls++] = (uint32_t) i;
			continue;
		}
		if (layout->kinds[agg->group_by[i]] == TCOPY__KIND__KIND_BYTES)
		{
			uint32_t	len;

			memcpy(&len, p, 4);
			p += 4;
			row->blobs[row->n_blobs].data = (uint8_t *) p;
			row->blobs[row->n_blobs++].len = len;
			p += len;
			*bytes += len;
		}
		else
		{
			memcpy(&row->ints[row->n_ints++], p, 8);
			p += 8;
		}
	}
	return row;
}

/* One group as an AggRow, in arena; NULL: out of memory. */
static Tcopy__AggRow *
agg_row(TsScanAgg *agg, const AggGroup *g, TcArena *arena, size_t *bytes)
{
	Tcopy__AggRow *r = tc_arena_alloc(arena, sizeof(Tcopy__AggRow));

	if (r == NULL)
		return NULL;
	tcopy__agg_row__init(r);
	if (agg->ngroup_by > 0 && (r->group = group_row(agg, g, arena, bytes)) == NULL)
		return NULL;
	r->counts = tc_arena_alloc(arena, (agg->naggs + 1) * sizeof(int64_t));
	r->ints = tc_arena_alloc(arena, (agg->ints_per_group + 1) * sizeof(int64_t));
	r->floats = tc_arena_alloc(arena, (agg->floats_per_group + 1) * sizeof(double));
	r->overflow = tc_arena_alloc(arena, (agg->naggs + 1) * sizeof(uint32_t));
	if (!r->counts || !r->ints || !r->floats || !r->overflow)
		return NULL;
	r->n_counts = agg->naggs;
	for (size_t i = 0; i < agg->naggs; i++)
	{
		const Tcopy__Aggregate *a = agg->aggs[i];
		const AggState *s = &g->states[i];

		r->counts[i] = s->count;
		if (s->overflow)
			r->overflow[r->n_overflow++] = (uint32_t) i;
		switch (a->op)
		{
			case TCOPY__AGG_OP__AGG_SUM_INT:
				r->ints[r->n_ints++] = s->hi;
				r->ints[r->n_ints++] = (int64_t) s->lo;
				break;
			case TCOPY__AGG_OP__AGG_SUM_FLOAT:
			case TCOPY__AGG_OP__AGG_SUM_FLOAT4:
				r->floats[r->n_floats++] = s->f;
				break;
			case TCOPY__AGG_OP__AGG_AVG_FLOAT:
				r->floats[r->n_floats++] = s->f;
				r->floats[r->n_floats++] = s->sxx;
				break;
			case TCOPY__AGG_OP__AGG_MIN:
			case TCOPY__AGG_OP__AGG_MAX:
				if (a->type == TCOPY__VALUE_TYPE__VALUE_FLOAT)
					r->floats[r->n_floats++] = s->f;
				else
					r->ints[r->n_ints++] = s->i;
				break;
			default:
				break;
		}
	}
	*bytes += 32 + agg->naggs * 12 + r->n_ints * 10 + r->n_floats * 8;
	return r;
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
			(!parallel && agg_read_all(agg, err) != 0))
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
		Tcopy__AggRow *r = agg_row(agg, agg->emit, arena, &bytes);

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
	if (agg == NULL)
		return;
	tc_arena_free(&agg->groups_arena);
	free(agg->buckets);
	free(agg->keybuf);
	free(agg);
}
