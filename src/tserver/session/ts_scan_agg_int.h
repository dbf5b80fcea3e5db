/*
 * ts_scan_agg_int.h
 *		The groups of a scan's aggregates (ts_scan_agg_groups.c: the hash
 *		table, the transition functions, combining and the AggRows), which
 *		ts_scan_agg.c fills from the scan, in one pass or in parts.
 */
#ifndef TS_SCAN_AGG_INT_H
#define TS_SCAN_AGG_INT_H

#include "ts_store_int.h"
#include "ts_scan_agg.h"

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
	const TsLayout *layout;		/* the scan's */
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
	AggGroup   *recent;			/* the last row's group */
	bool		aggregated;
	uint8_t    *keybuf;			/* a row's group key */
	size_t		keycap;
};

/*
 * Set up agg's groups, its configuration set (the one group of a scan
 * without group_by, or the hash table): false with err.
 */
bool		ts_agg_init_groups(TsScanAgg *agg, TsError *err);
/* Free agg and its groups. */
void		ts_agg_free(TsScanAgg *agg);
/* Read and aggregate every row of agg's scan: 0, or -1 with err. */
int			ts_agg_read_all(TsScanAgg *agg, TsError *err);
/* Combine the groups of part (of a later key range) into agg's: 0, or -1 with err. */
int			ts_agg_merge(TsScanAgg *agg, const TsScanAgg *part, TsError *err);
/* One group as an AggRow in arena, *bytes grown by its size; NULL: out of memory. */
Tcopy__AggRow *ts_agg_row(TsScanAgg *agg, const AggGroup *g, TcArena *arena, size_t *bytes);

#endif							/* TS_SCAN_AGG_INT_H */
