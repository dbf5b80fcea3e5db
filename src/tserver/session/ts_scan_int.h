/*
 * ts_scan_int.h
 *		A scan's state, shared by the files of the scan: ts_scan.c (open,
 *		read, batch, close) and ts_scan_parts.c (its parts, for the
 *		tserver's own threads).  Nothing outside them looks inside.
 */
#ifndef TS_SCAN_INT_H
#define TS_SCAN_INT_H

#include "ts_store_int.h"

struct TsScan
{
	TsStore    *store;
	TsTable    *table;
	const TsLayout *layout;		/* the table's when the scan began */
	TsSnapshot *snapshot;		/* what the iterator reads as of, or NULL: now */
	rocksdb_iterator_t *iter;	/* NULL: a point read */
	rocksdb_pinnableslice_t *point;	/* a point read's row, NULL: none */
	rocksdb_readoptions_t *read_options;
	TcBuf		lower;			/* first key to read */
	TcBuf		upper;			/* first key not to read */
	uint32_t   *columns;		/* [ncolumns] projection */
	uint32_t	ncolumns;
	size_t		counts[TCOPY__KIND__KIND_BYTES + 1];	/* projected columns per kind */
	uint32_t	batch_rows;
	uint64_t	limit;			/* 0: none */
	uint64_t	returned;
	const Tcopy__Expr *filter;	/* the request's, checked; NULL: none */
	TsValue    *values;			/* [table's ncolumns] decode scratch */
	TsRowNeed	need;			/* what of values is decoded (scan_need) */
	bool		packed;			/* rows go in ScanBatch.packed */
	bool		reverse;		/* the last key first (Scan.reverse) */
	TcBuf		pack;			/* ... built here, after TC_FRAME_PACKED_HEADROOM
								 * bytes, reused batch after batch */
	TcArena		scratch;		/* key strings that need unescaping */
	bool		done;
	TsOverlay	overlay;		/* a session's writes over the stored rows */
	size_t		overlay_pos;	/* the next of overlay.rows */
	bool		from_iter;		/* the current row moves the iterator on */
	bool		from_overlay;	/* ... and the overlay */
	bool		advance;		/* ts_scan_next_values: move on first */
	bool		is_part;		/* of another scan (ts_scan_parts): its
								 * columns and snapshot are that scan's */
	const rocksdb_snapshot_t *parts_snapshot;	/* what its parts read as of */
};

#endif							/* TS_SCAN_INT_H */
