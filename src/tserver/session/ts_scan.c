/*
 * ts_scan.c
 *		Scans of committed rows: a RocksDB iterator (a consistent snapshot)
 *		over one table's key range, decoded and projected into ScanBatch
 *		rows in the compact layout; and, for the client of an open write
 *		session that names it, that session's writes merged over them
 *		(ts_session_read.c's overlay).
 */
#include "ts_scan_int.h"

#include <stdlib.h>
#include <string.h>

#include "tc_varint.h"
#include "ts_filter.h"
#include "ts_key.h"

#define SCAN_DEFAULT_BATCH_ROWS 1000
#define SCAN_MAX_BATCH_ROWS 100000
/*
 * A batch closes near this size, and never takes a row that would carry it
 * past it: a batch is at most this size, or one row.  A row the tserver
 * accepted in a write frame then fits a scan frame of the same limit,
 * whatever came before it.
 */
#define SCAN_BATCH_BYTES (1024 * 1024)
/*
 * A batch also closes, empty if need be, once the filter has passed over
 * this many rows in it, so that a client waiting for rows a selective
 * filter rarely lets through hears from the scan (and can cancel it)
 * every few milliseconds.
 */
#define SCAN_BATCH_FILTERED 65536

/*
 * The stored rows of the range: an iterator's, or the one row a point read
 * found (a range of one whole key is read with a Get, which does not build
 * an iterator over every level: issue 46).
 */
static bool
stored_valid(TsScan *scan)
{
	return scan->iter != NULL ? rocksdb_iter_valid(scan->iter) : scan->point != NULL;
}

static const uint8_t *
stored_key(TsScan *scan, size_t *len)
{
	if (scan->iter != NULL)
		return (const uint8_t *) rocksdb_iter_key(scan->iter, len);
	*len = scan->lower.len;
	return scan->lower.data;
}

static const uint8_t *
stored_value(TsScan *scan, size_t *len)
{
	if (scan->iter != NULL)
		return (const uint8_t *) rocksdb_iter_value(scan->iter, len);
	return (const uint8_t *) rocksdb_pinnableslice_value(scan->point, len);
}

static void
stored_next(TsScan *scan)
{
	if (scan->iter != NULL && scan->reverse)
		rocksdb_iter_prev(scan->iter);
	else if (scan->iter != NULL)
		rocksdb_iter_next(scan->iter);
	else if (scan->point != NULL)
	{
		rocksdb_pinnableslice_destroy(scan->point);
		scan->point = NULL;
	}
}

/* The stored rows' read error, if any: 0, or -1 with err. */
static int
stored_error(TsScan *scan, TsError *err)
{
	char	   *errptr = NULL;

	if (scan->iter != NULL)
		rocksdb_iter_get_error(scan->iter, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read table", errptr);
		return -1;
	}
	return 0;
}

/*
 * The scan's next row, stored or the session's, whichever key comes first
 * (last, reversed; of an equal key, the session's, unless it yields),
 * skipping the keys the session deleted: false at the end.  The session's
 * rows are in key order: a reversed scan takes them from the end.
 */
static bool
scan_current_merged(TsScan *scan, const uint8_t **key, size_t *keylen,
					const uint8_t **value, size_t *valuelen)
{
	for (;;)
	{
		bool		stored = !scan->overlay.hides_stored && stored_valid(scan);
		const TsOverlayRow *o = scan->overlay_pos >= scan->overlay.n ? NULL :
			&scan->overlay.rows[scan->reverse ? scan->overlay.n - 1 - scan->overlay_pos :
								scan->overlay_pos];
		const uint8_t *skey = NULL;
		size_t		skeylen = 0;
		int			cmp;

		if (stored)
			skey = stored_key(scan, &skeylen);
		if (o == NULL && !stored)
			return false;
		/* < 0: the session's row comes first */
		cmp = o == NULL ? 1 : !stored ? -1 :
			ts_key_compare(o->key, o->keylen, skey, (uint32_t) skeylen);
		if (scan->reverse && o != NULL && stored)
			cmp = -cmp;
		scan->from_iter = cmp >= 0;
		scan->from_overlay = cmp <= 0;
		if (cmp > 0 || (cmp == 0 && o->yields))
		{
			*key = skey;
			*keylen = skeylen;
			*value = stored_value(scan, valuelen);
			return true;
		}
		if (o->value == NULL)
		{
			/* deleted by the session */
			scan->overlay_pos++;
			if (cmp == 0)
				stored_next(scan);
			continue;
		}
		*key = o->key;
		*keylen = o->keylen;
		*value = o->value;
		*valuelen = o->valuelen;
		return true;
	}
}

/* scan_current_merged, and first its common case: the iterator's rows alone. */
static inline bool
scan_current(TsScan *scan, const uint8_t **key, size_t *keylen,
			 const uint8_t **value, size_t *valuelen)
{
	if (scan->iter != NULL && scan->overlay_pos >= scan->overlay.n &&
		!scan->overlay.hides_stored)
	{
		if (!rocksdb_iter_valid(scan->iter))
			return false;
		scan->from_iter = true;
		scan->from_overlay = false;
		*key = (const uint8_t *) rocksdb_iter_key(scan->iter, keylen);
		*value = (const uint8_t *) rocksdb_iter_value(scan->iter, valuelen);
		return true;
	}
	return scan_current_merged(scan, key, keylen, value, valuelen);
}

/* Past the row scan_current gave. */
static inline void
scan_advance(TsScan *scan)
{
	if (scan->from_iter)
		stored_next(scan);
	if (scan->from_overlay)
		scan->overlay_pos++;
}

/*
 * Forget the last row's unescaped key strings before the next row is
 * decoded.  Most rows have none: then the arena holds no block, and there
 * is nothing to reset.
 */
static inline void
scan_scratch_reset(TsScan *scan)
{
	if (scan->scratch.head != NULL)
		tc_arena_reset(&scan->scratch);
}

/*
 * Whether the decoded row (scan->values) passes the scan's filter: 1 when
 * the filter is TRUE, 0 when FALSE or NULL, -1 on a stored value it cannot
 * read.
 */
static int
scan_filter(TsScan *scan, TsError *err)
{
	int			r = ts_filter_eval(scan->filter, scan->values, err);

	if (r < 0)
	{
		char		what[256];

		snprintf(what, sizeof(what), "table \"%.200s\"", scan->table->name);
		ts_error_prefix(err, what);
		return -1;
	}
	return r == TS_FILTER_TRUE;
}

/*
 * The columns of each row the scan reads, into scan->need: the
 * projection's, or, with aggregates (which ignore the projection), the
 * aggregated and grouping columns; and the filter's.  A row's other
 * columns are not decoded.  Columns out of range are left to the checks
 * that refuse them (ts_scan_agg_open).  False when out of memory.
 */
static bool
scan_need(TsScan *scan, const Tcopy__Scan *request)
{
	const TsLayout *layout = scan->layout;
	bool	   *columns = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(bool));

	if (columns == NULL)
		return false;
	if (request->n_aggregates > 0 || request->n_group_by > 0)
	{
		for (size_t i = 0; i < request->n_aggregates; i++)
		{
			const Tcopy__Aggregate *a = request->aggregates[i];

			if (a != NULL && a->op != TCOPY__AGG_OP__AGG_COUNT_ROWS &&
				a->column < layout->ncolumns)
				columns[a->column] = true;
		}
		for (size_t i = 0; i < request->n_group_by; i++)
			if (request->group_by[i] < layout->ncolumns)
				columns[request->group_by[i]] = true;
	}
	else
	{
		for (uint32_t i = 0; i < scan->ncolumns; i++)
			columns[scan->columns[i]] = true;
	}
	if (scan->filter != NULL)
		ts_filter_columns(scan->filter, columns);
	ts_row_need_init(&scan->need, layout, columns);
	free(columns);
	return true;
}

TsScan *
ts_scan_open(TsStore *store, const Tcopy__Scan *request, TsError *err)
{
	TsScan	   *scan = calloc(1, sizeof(TsScan));
	TsTable    *table;
	const TsLayout *layout;

	if (scan == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	scan->store = store;
	tc_arena_init(&scan->scratch, 16 * 1024);
	table = ts_store_table(store, request->table_id, err);
	if (table == NULL)
		goto err;
	scan->table = table;
	layout = scan->layout = ts_table_layout(table);
	if (request->for_update || (request->refuse_in_doubt && request->snapshot_id == 0))
	{
		char		gid[TS_GID_MAX + 1];

		if (ts_store_table_in_doubt(store, table->id, gid, sizeof(gid)))
		{
			/* a client that can take a snapshot is told so first */
			ts_error_set(err, request->refuse_in_doubt && request->snapshot_id == 0 ?
						 TCOPY__ERROR_CODE__ERROR_IN_DOUBT :
						 TCOPY__ERROR_CODE__ERROR_SERIALIZATION,
						 "the prepared session \"%s\", which wrote to table \"%s\", "
						 "is not yet resolved: its rows may yet change what is read",
						 gid, table->name);
			err->table_id = table->id;
			goto err;
		}
	}

	/* projection */
	scan->ncolumns = request->n_columns ? (uint32_t) request->n_columns : layout->ncolumns;
	if (request->n_columns > TS_MAX_COLUMNS)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "scan projects %zu columns", request->n_columns);
		goto err;
	}
	/* a table of no columns projects none: its rows come back empty */
	scan->columns = malloc((scan->ncolumns ? scan->ncolumns : 1) * sizeof(uint32_t));
	scan->values = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(TsValue));
	if (scan->columns == NULL || scan->values == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}
	for (uint32_t i = 0; i < scan->ncolumns; i++)
	{
		uint32_t	col = request->n_columns ? request->columns[i] : i;
		Tcopy__Kind kind;

		if (col >= layout->ncolumns)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "scan projects column %u, but table \"%s\" has %u columns",
						 col, table->name, layout->ncolumns);
			goto err;
		}
		scan->columns[i] = col;
		kind = layout->kinds[col];
		scan->counts[kind == TCOPY__KIND__KIND_BOOL ? TCOPY__KIND__KIND_INT : kind]++;
	}
	scan->batch_rows = request->batch_rows ? request->batch_rows : SCAN_DEFAULT_BATCH_ROWS;
	if (scan->batch_rows > SCAN_MAX_BATCH_ROWS)
		scan->batch_rows = SCAN_MAX_BATCH_ROWS;
	scan->limit = request->limit;
	scan->packed = request->packed;
	scan->reverse = request->reverse;
	if (request->filter != NULL)
	{
		if (ts_filter_check(layout, request->filter, err) != 0)
			goto err;
		scan->filter = request->filter;
	}
	if (!scan_need(scan, request))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}

	/* narrowed to a part of a SPLIT */
	if (ts_scan_key_range(table, request->lower, request->upper, &scan->lower, &scan->upper,
						  &scan->done, err) != 0 ||
		ts_scan_narrow(table, &request->raw_lower, &request->raw_upper, &scan->lower,
					   &scan->upper, &scan->done, err) != 0)
		goto err;

	scan->read_options = rocksdb_readoptions_create();
	if (scan->upper.len > 0)
		rocksdb_readoptions_set_iterate_upper_bound(scan->read_options,
													(const char *) scan->upper.data,
													scan->upper.len);
	/* backward, the iterator stops at the lower bound itself */
	if (scan->reverse)
		rocksdb_readoptions_set_iterate_lower_bound(scan->read_options,
													(const char *) scan->lower.data,
													scan->lower.len);
	/*
	 * A bulk read should not push hot blocks out of the cache; a read of a
	 * key range (a lookup) keeps what it reads there, as an index scan
	 * keeps its pages in shared_buffers and a seq scan of a big table
	 * reads through a ring.  Issue 46: select-only pgbench read and
	 * decompressed a block from the file for every lookup.
	 */
	rocksdb_readoptions_set_fill_cache(scan->read_options,
									   request->lower != NULL || request->upper != NULL);
	if (request->snapshot_id != 0)
	{
		scan->snapshot = ts_snapshot_find(store, request->snapshot_id, request->snapshot_key.data,
										  request->snapshot_key.len, err);
		if (scan->snapshot == NULL)
			goto err;
		rocksdb_readoptions_set_snapshot(scan->read_options, ts_snapshot_rocksdb(scan->snapshot));
	}
	/* never between the steps of a publish (ts_snapshot.c) */
	pthread_rwlock_rdlock(&store->reg->publish_lock);
	if (ts_scan_is_point(table, request, &scan->lower))
	{
		char	   *errptr = NULL;

		scan->point = rocksdb_get_pinned_cf(store->db, scan->read_options, store->cf_data,
											(const char *) scan->lower.data, scan->lower.len,
											&errptr);
		pthread_rwlock_unlock(&store->reg->publish_lock);
		if (errptr != NULL)
		{
			ts_error_rocksdb(err, "could not read table", errptr);
			goto err;
		}
	}
	else
	{
		scan->iter = rocksdb_create_iterator_cf(store->db, scan->read_options, store->cf_data);
		pthread_rwlock_unlock(&store->reg->publish_lock);
		if (scan->reverse)
			rocksdb_iter_seek_to_last(scan->iter);	/* below the upper bound */
		else
			rocksdb_iter_seek(scan->iter, (const char *) scan->lower.data, scan->lower.len);
	}
	/* the session's writes, read as of now (the iterator's snapshot is too) */
	if (request->session_id != 0 &&
		ts_session_overlay(store, request->session_id, request->session_key.data,
						   request->session_key.len, table, &scan->lower, &scan->upper,
						   &scan->overlay, err) != 0)
		goto err;
	return scan;

err:
	ts_scan_close(scan);
	return NULL;
}

/*
 * Append the current row's projected values to scan->pack, in the packed
 * layout of ScanBatch.packed: false when out of memory.
 */
static bool
scan_pack_row(TsScan *scan)
{
	const TsLayout *layout = scan->layout;
	size_t		bitmap = (scan->ncolumns + 7) / 8;
	size_t		room = bitmap;
	uint8_t    *nulls;
	uint8_t    *p;

	for (uint32_t i = 0; i < scan->ncolumns; i++)
	{
		const TsValue *v = &scan->values[scan->columns[i]];

		if (!v->isnull)
			room += layout->kinds[scan->columns[i]] == TCOPY__KIND__KIND_BYTES ?
				TC_VARINT_MAX + v->len : TC_VARINT_MAX;
	}
	/* a byte more: a row of no columns still has a buffer to point into */
	if (!tc_buf_reserve(&scan->pack, room + 1))
		return false;
	nulls = scan->pack.data + scan->pack.len;
	memset(nulls, 0, bitmap);
	p = nulls + bitmap;
	for (uint32_t i = 0; i < scan->ncolumns; i++)
	{
		const TsValue *v = &scan->values[scan->columns[i]];

		if (v->isnull)
		{
			nulls[i / 8] |= (uint8_t) (1 << (i % 8));
			continue;
		}
		switch (layout->kinds[scan->columns[i]])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				p = tc_varint_put(p, tc_zigzag64(v->i));
				break;
			case TCOPY__KIND__KIND_FLOAT:
				{
					uint64_t	bits;

					memcpy(&bits, &v->f, 8);
					bits = htole64(bits);
					memcpy(p, &bits, 8);
					p += 8;
					break;
				}
			default:
				p = tc_varint_put(p, v->len);
				memcpy(p, v->p, v->len);
				p += v->len;
				break;
		}
	}
	scan->pack.len = (size_t) (p - scan->pack.data);
	return true;
}

/*
 * A batch's next row: the next visible row the filter lets through, decoded
 * into scan->values, when it fits the batch's room (a stored row bigger
 * than room waits for the next batch, unless it comes first).  1: a row,
 * 0: the batch ends here (*end when the scan has no more rows), -1 with
 * err.  Rows the filter removed are counted in *filtered, and close the
 * batch at SCAN_BATCH_FILTERED.
 */
static int
scan_batch_row(TsScan *scan, bool first, size_t room, size_t *filtered, bool *end,
			   TsError *err)
{
	for (;;)
	{
		size_t		keylen,
					valuelen;
		const uint8_t *key;
		const uint8_t *value;

		if (!scan_current(scan, &key, &keylen, &value, &valuelen))
		{
			*end = true;
			return 0;
		}
		/* the stored key and value bound the row's bytes */
		if (!first && keylen + valuelen > room)
			return 0;
		scan_scratch_reset(scan);
		if (!ts_row_decode_some(scan->layout, &scan->need, key, keylen, value, valuelen,
								scan->values, &scan->scratch))
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "stored row of table \"%s\" does not match its schema",
						 scan->table->name);
			return -1;
		}
		if (scan->filter == NULL)
			return 1;
		switch (scan_filter(scan, err))
		{
			case 1:
				return 1;
			case 0:
				scan_advance(scan);
				if (++*filtered >= SCAN_BATCH_FILTERED)
					return 0;
				break;
			default:
				return -1;
		}
	}
}

/*
 * A batch ends: at the scan's end (end), check the iterator's error; at
 * the limit, the scan is done.  0, or -1 with err.
 */
static int
scan_batch_end(TsScan *scan, bool end, TsError *err)
{
	if (!scan->done && end)
	{
		if (stored_error(scan, err) != 0)
			return -1;
		scan->done = true;
	}
	if (scan->limit > 0 && scan->returned >= scan->limit)
		scan->done = true;
	return 0;
}

/* The rows the next batch may take: batch_rows, and what the limit leaves. */
static size_t
scan_batch_capacity(const TsScan *scan)
{
	if (scan->limit > 0 && scan->limit - scan->returned < scan->batch_rows)
		return (size_t) (scan->limit - scan->returned);
	return scan->batch_rows;
}

/*
 * ts_scan_next for a scan of packed rows: the batch's rows go one after
 * another into scan->pack, which batch->packed points into until the next
 * call, with the room tc_frame_around_packed needs before and after them.
 */
static int
scan_next_packed(TsScan *scan, Tcopy__ScanBatch *batch, TsError *err)
{
	size_t		capacity = scan_batch_capacity(scan);
	size_t		filtered = 0;	/* rows the filter removed from this batch */
	bool		end = false;

	batch->n_packed = 0;
	/* room for the frame around the rows (tc_frame_around_packed) */
	if (!tc_buf_reserve(&scan->pack, TC_FRAME_PACKED_HEADROOM))
		goto oom;
	scan->pack.len = TC_FRAME_PACKED_HEADROOM;
	while (!scan->done && batch->n_packed < capacity &&
		   scan->pack.len - TC_FRAME_PACKED_HEADROOM < SCAN_BATCH_BYTES)
	{
		int			rc = scan_batch_row(scan, batch->n_packed == 0,
										SCAN_BATCH_BYTES - (scan->pack.len - TC_FRAME_PACKED_HEADROOM),
										&filtered, &end, err);

		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		if (!scan_pack_row(scan))
			goto oom;
		batch->n_packed++;
		scan->returned++;
		scan_advance(scan);
	}
	if (scan_batch_end(scan, end, err) != 0)
		return -1;
	if (!tc_buf_reserve(&scan->pack, TC_FRAME_PACKED_TAILROOM))
		goto oom;
	batch->packed.data = scan->pack.data + TC_FRAME_PACKED_HEADROOM;
	batch->packed.len = scan->pack.len - TC_FRAME_PACKED_HEADROOM;
	batch->filtered = filtered;
	batch->done = scan->done;
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

/* Set *row to the projection of scan->values, in arena: false when out of memory. */
static bool
scan_build_row(TsScan *scan, TcArena *arena, Tcopy__Row **rowp, size_t *bytes)
{
	const TsLayout *layout = scan->layout;
	Tcopy__Row *row = tc_arena_alloc(arena, sizeof(Tcopy__Row));
	size_t		ints = 0,
				floats = 0,
				blobs = 0,
				nulls = 0;

	if (row == NULL)
		return false;
	tcopy__row__init(row);
	row->ints = tc_arena_alloc(arena, (scan->counts[TCOPY__KIND__KIND_INT] + 1) * sizeof(int64_t));
	row->floats = tc_arena_alloc(arena, (scan->counts[TCOPY__KIND__KIND_FLOAT] + 1) * sizeof(double));
	row->blobs = tc_arena_alloc(arena, (scan->counts[TCOPY__KIND__KIND_BYTES] + 1) * sizeof(ProtobufCBinaryData));
	row->nulls = tc_arena_alloc(arena, (scan->ncolumns + 1) * sizeof(uint32_t));
	if (!row->ints || !row->floats || !row->blobs || !row->nulls)
		return false;
	for (uint32_t i = 0; i < scan->ncolumns; i++)
	{
		const TsValue *v = &scan->values[scan->columns[i]];

		if (v->isnull)
		{
			row->nulls[nulls++] = i;
			continue;
		}
		switch (layout->kinds[scan->columns[i]])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				row->ints[ints++] = v->i;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				row->floats[floats++] = v->f;
				break;
			default:
				/* the iterator's memory moves on: copy */
				row->blobs[blobs].data = tc_arena_memdup(arena, v->p, v->len);
				if (row->blobs[blobs].data == NULL)
					return false;
				row->blobs[blobs++].len = v->len;
				*bytes += v->len;
				break;
		}
	}
	row->n_ints = ints;
	row->n_floats = floats;
	row->n_blobs = blobs;
	row->n_nulls = nulls;
	*bytes += 16 + ints * 8 + floats * 8;
	*rowp = row;
	return true;
}

int
ts_scan_next(TsScan *scan, TcArena *arena, Tcopy__ScanBatch *batch, TsError *err)
{
	size_t		capacity = scan_batch_capacity(scan);
	size_t		bytes = 0;
	size_t		filtered = 0;	/* rows the filter removed from this batch */
	bool		end = false;

	batch->done = false;
	if (scan->packed)
		return scan_next_packed(scan, batch, err);
	batch->n_rows = 0;
	batch->rows = tc_arena_alloc(arena, (capacity ? capacity : 1) * sizeof(Tcopy__Row *));
	if (batch->rows == NULL)
		goto oom;
	while (!scan->done && batch->n_rows < capacity && bytes < SCAN_BATCH_BYTES)
	{
		int			rc = scan_batch_row(scan, batch->n_rows == 0, SCAN_BATCH_BYTES - bytes,
										&filtered, &end, err);

		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		if (!scan_build_row(scan, arena, &batch->rows[batch->n_rows], &bytes))
			goto oom;
		batch->n_rows++;
		scan->returned++;
		scan_advance(scan);
	}
	if (scan_batch_end(scan, end, err) != 0)
		return -1;
	batch->done = scan->done;
	batch->filtered = filtered;
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

/* ts_scan_next_values, inlined into ts_scan_next_visible's loop. */
static inline __attribute__((always_inline)) int
scan_next_values(TsScan *scan, const TsValue **values, TsError *err)
{
	const uint8_t *key;
	const uint8_t *value;
	size_t		keylen,
				valuelen;

	if (scan->advance)
		scan_advance(scan);
	scan->advance = false;
	if (scan->done || !scan_current(scan, &key, &keylen, &value, &valuelen))
	{
		if (stored_error(scan, err) != 0)
			return -1;
		scan->done = true;
		return 0;
	}
	scan_scratch_reset(scan);
	if (!ts_row_decode_some(scan->layout, &scan->need, key, keylen, value, valuelen,
							scan->values, &scan->scratch))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "stored row of table \"%s\" does not match its schema", scan->table->name);
		return -1;
	}
	scan->advance = true;
	*values = scan->values;
	return 1;
}

int
ts_scan_next_values(TsScan *scan, const TsValue **values, TsError *err)
{
	return scan_next_values(scan, values, err);
}

int
ts_scan_next_visible(TsScan *scan, const TsValue **values, TsError *err)
{
	for (;;)
	{
		int			rc = scan_next_values(scan, values, err);

		if (rc <= 0 || scan->filter == NULL)
			return rc;
		rc = scan_filter(scan, err);
		if (rc != 0)
			return rc;
	}
}

const TsLayout *
ts_scan_layout(const TsScan *scan)
{
	return scan->layout;
}

const TsTable *
ts_scan_table(const TsScan *scan)
{
	return scan->table;
}

void
ts_scan_close(TsScan *scan)
{
	if (scan == NULL)
		return;
	if (scan->iter != NULL)
		rocksdb_iter_destroy(scan->iter);
	if (scan->point != NULL)
		rocksdb_pinnableslice_destroy(scan->point);
	if (scan->read_options != NULL)
		rocksdb_readoptions_destroy(scan->read_options);
	ts_snapshot_unref(scan->store, scan->snapshot);
	if (scan->parts_snapshot != NULL)
		rocksdb_release_snapshot(scan->store->db, scan->parts_snapshot);
	tc_buf_free(&scan->lower);
	tc_buf_free(&scan->upper);
	tc_buf_free(&scan->pack);
	tc_arena_free(&scan->scratch);
	ts_overlay_free(&scan->overlay);
	if (!scan->is_part)
		free(scan->columns);
	free(scan->values);
	free(scan);
}
