/*
 * ts_scan_agg_groups.c
 *		The groups of a scan's aggregates (docs/scans.md#aggregates): a
 *		hash table on the rows' group_by values (NULL a value of its own),
 *		each group's aggregates advanced as Postgres' transition functions
 *		would advance them, the groups of a later part of the key range
 *		combined into an earlier one's, and each group as an AggRow.
 *
 * The arithmetic is Postgres' own (float.c, numeric.c): integer sums in
 * 128 bits, float8pl's and float4pl's sums with their overflow rule
 * (infinite from finite inputs: Postgres raises "value out of range:
 * overflow", so the aggregate is flagged and the client raises it),
 * float8_accum's N, Sx and Sxx, and float8larger's and float8smaller's
 * choice among equal values (NaN above every number, -0 equal to 0).
 */
#include "ts_scan_agg_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

bool
ts_agg_init_groups(TsScanAgg *agg, TsError *err)
{
	if (agg->ngroup_by == 0)
	{
		/* one group, even of no rows */
		return agg_group_new(agg, 0, NULL, 0, err) != NULL;
	}
	agg->nbuckets = 1024;
	agg->buckets = calloc(agg->nbuckets, sizeof(AggGroup *));
	agg->keycap = 256;
	agg->keybuf = malloc(agg->keycap);
	if (agg->buckets != NULL && agg->keybuf != NULL)
		return true;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return false;
}

void
ts_agg_free(TsScanAgg *agg)
{
	if (agg == NULL)
		return;
	tc_arena_free(&agg->groups_arena);
	free(agg->buckets);
	free(agg->keybuf);
	free(agg);
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
	const TsLayout *layout = agg->layout;
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
	/* rows in key order often run in one group: the last row's first */
	if (agg->recent != NULL && agg->recent->keylen == keylen &&
		memcmp(agg->recent->key, agg->keybuf, keylen) == 0)
		return agg->recent;
	agg->recent = agg_group_find(agg, key_hash(agg->keybuf, keylen), agg->keybuf, keylen, err);
	return agg->recent;
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
int
ts_agg_read_all(TsScanAgg *agg, TsError *err)
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
int
ts_agg_merge(TsScanAgg *agg, const TsScanAgg *part, TsError *err)
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

/* The group's values as a Row laid out by kinds, in arena; NULL: out of memory. */
static Tcopy__Row *
group_row(TsScanAgg *agg, const AggGroup *g, TcArena *arena, size_t *bytes)
{
	const TsLayout *layout = agg->layout;
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
Tcopy__AggRow *
ts_agg_row(TsScanAgg *agg, const AggGroup *g, TcArena *arena, size_t *bytes)
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
