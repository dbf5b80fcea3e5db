/*
 * ts_scan_parts.c
 *		A scan's key range cut into parts (docs/scans.md, "Parallel
 *		scans"): SPLIT, the keys that a client's parallel scan then names
 *		as Scan.raw_lower and raw_upper (ts_scan_narrow); and a scan's own
 *		parts, each read by a thread of the tserver (ts_scan_parts).
 */
#include "ts_scan_int.h"

#include <stdlib.h>
#include <string.h>

int
ts_store_split(TsStore *store, const Tcopy__Split *request, TcBuf **keys, size_t *nkeys,
			   TsError *err)
{
	TsTable    *table;
	TcBuf		lower = {0};
	TcBuf		upper = {0};
	bool		empty;
	uint32_t	max_parts = request->max_parts;
	int			rc = -1;

	*keys = NULL;
	*nkeys = 0;
	if (max_parts == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "split asks for no parts");
		return -1;
	}
	/* ts_scan_split answers at most SPLIT_MAX_PARTS, whatever is asked */
	table = ts_store_table(store, request->table_id, err);
	if (table == NULL)
		return -1;
	if (ts_scan_key_range(table, request->lower, request->upper, &lower, &upper, &empty,
						  err) != 0)
		goto done;
	/* an empty range, or one part asked for: no boundary */
	rc = 0;
	if (!empty && max_parts > 1)
		rc = ts_scan_split(store, table, &lower, &upper, max_parts, keys, nkeys, err);
done:
	tc_buf_free(&lower);
	tc_buf_free(&upper);
	return rc;
}

/* A copy of key into buf: false when out of memory. */
static bool
part_bound(TcBuf *buf, const TcBuf *key)
{
	if (key->len > 0 && !tc_buf_reserve(buf, key->len))
		return false;
	if (key->len > 0)
		memcpy(buf->data, key->data, key->len);
	buf->len = key->len;
	return true;
}

/* A scan of [lower, upper) of scan's table as of snap, sharing scan's projection. */
static TsScan *
part_open(TsScan *scan, const TcBuf *lower, const TcBuf *upper,
		  const rocksdb_snapshot_t *snap)
{
	TsScan	   *part = calloc(1, sizeof(TsScan));
	const TsLayout *layout = scan->layout;

	if (part == NULL)
		return NULL;
	part->store = scan->store;
	part->table = scan->table;
	part->layout = scan->layout;
	part->is_part = true;
	part->filter = scan->filter;
	part->need = scan->need;
	part->columns = scan->columns;
	part->ncolumns = scan->ncolumns;
	memcpy(part->counts, scan->counts, sizeof(part->counts));
	part->batch_rows = scan->batch_rows;
	tc_arena_init(&part->scratch, 16 * 1024);
	part->values = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(TsValue));
	if (part->values == NULL || !part_bound(&part->lower, lower) ||
		!part_bound(&part->upper, upper))
	{
		ts_scan_close(part);
		return NULL;
	}
	part->read_options = rocksdb_readoptions_create();
	if (part->upper.len > 0)
		rocksdb_readoptions_set_iterate_upper_bound(part->read_options,
													(const char *) part->upper.data,
													part->upper.len);
	rocksdb_readoptions_set_fill_cache(part->read_options, 0);
	rocksdb_readoptions_set_snapshot(part->read_options, snap);
	part->iter = rocksdb_create_iterator_cf(scan->store->db, part->read_options,
											scan->store->cf_data);
	rocksdb_iter_seek(part->iter, (const char *) part->lower.data, part->lower.len);
	return part;
}

int
ts_scan_parts(TsScan *scan, uint32_t max_parts, TsScan ***parts, size_t *nparts, TsError *err)
{
	TcBuf	   *keys = NULL;
	size_t		nkeys = 0;
	TsScan	  **out = NULL;
	const rocksdb_snapshot_t *snap;
	int			result = 0;

	*parts = NULL;
	*nparts = 0;
	if (max_parts < 2 || scan->is_part || scan->done || scan->advance || scan->limit > 0 ||
		scan->reverse || scan->overlay.n > 0 || scan->overlay.hides_stored)
		return 0;
	if (ts_scan_split(scan->store, scan->table, &scan->lower, &scan->upper, max_parts, &keys,
					  &nkeys, err) != 0)
		return -1;
	if (nkeys == 0)
		goto done;
	out = calloc(nkeys + 1, sizeof(TsScan *));
	if (out == NULL)
		goto oom;
	/* one view for every part: the scan's snapshot, or one taken now, never mid-publish */
	if (scan->snapshot != NULL)
		snap = ts_snapshot_rocksdb(scan->snapshot);
	else
	{
		pthread_rwlock_rdlock(&scan->store->reg->publish_lock);
		scan->parts_snapshot = rocksdb_create_snapshot(scan->store->db);
		pthread_rwlock_unlock(&scan->store->reg->publish_lock);
		snap = scan->parts_snapshot;
	}
	for (size_t i = 0; i <= nkeys; i++)
	{
		out[i] = part_open(scan, i == 0 ? &scan->lower : &keys[i - 1],
						   i == nkeys ? &scan->upper : &keys[i], snap);
		if (out[i] == NULL)
		{
			for (size_t j = 0; j < i; j++)
				ts_scan_close(out[j]);
			free(out);
			goto oom;
		}
	}
	*parts = out;
	*nparts = nkeys + 1;
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	result = -1;
done:
	for (size_t i = 0; i < nkeys; i++)
		tc_buf_free(&keys[i]);
	free(keys);
	return result;
}
