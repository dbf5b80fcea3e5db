/*
 * ts_scan_agg.h
 *		Aggregates of a scan (docs/scans.md#aggregates): the rows the scan
 *		reads, grouped by Scan.group_by and aggregated as Postgres'
 *		transition functions would, streamed as ScanBatch.groups.
 */
#ifndef TS_SCAN_AGG_H
#define TS_SCAN_AGG_H

#include "tc_arena.h"
#include "tc_frame.h"
#include "ts_error.h"
#include "ts_store.h"

/* Most groups one scan holds, and most bytes of group keys and states. */
#define TS_AGG_MAX_GROUPS 1000000
#define TS_AGG_MAX_BYTES ((size_t) 256 * 1024 * 1024)

typedef struct TsScanAgg TsScanAgg;

/* Whether request asks for aggregates or groups (then ts_scan_agg_open). */
bool		ts_scan_agg_requested(const Tcopy__Scan *request);

/*
 * Check request's group_by and aggregates against the table scan reads
 * (ERROR_PROTOCOL when they do not fit it) and set up the groups.
 */
TsScanAgg  *ts_scan_agg_open(TsScan *scan, const Tcopy__Scan *request, TsError *err);

/*
 * Fill batch with the next groups, their memory from arena (batch->done
 * with the last).  The first call reads every row of the scan (through
 * ts_scan_next_visible, the scan's iterator of visible rows and its
 * filter) and aggregates them; ERROR_TOO_LARGE past TS_AGG_MAX_GROUPS
 * groups or TS_AGG_MAX_BYTES.
 */
int			ts_scan_agg_next(TsScanAgg *agg, TcArena *arena, Tcopy__ScanBatch *batch,
							 TsError *err);

/* Free agg (not its scan). */
void		ts_scan_agg_close(TsScanAgg *agg);

#endif							/* TS_SCAN_AGG_H */
