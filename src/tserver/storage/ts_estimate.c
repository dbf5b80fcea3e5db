/*
 * ts_estimate.c
 *		A table's approximate size, in rows and bytes, from RocksDB's
 *		metadata: what a planner asks before it has statistics.
 *
 * A table's rows are the key range [be32(id), be32(id + 1)).  Rows in SST
 * files are counted from the files' own entry counts (LiveFileMetaData):
 * a file wholly inside the range counts all its entries; the files that
 * straddle the range's ends (flushed memtables, merged SSTs that hold
 * several tables) count in proportion, at their entries per byte, to the
 * range's bytes in them (rocksdb_approximate_sizes_cf, from index blocks)
 * beyond the wholly inside files'.  Rows in memtables, which no metadata
 * counts by range (RocksDB 7.8's C API has no memtable stats), are counted
 * by a memtable-only iterator over the range, up to
 * TS_ESTIMATE_MEMTABLE_ROWS; beyond that the memtables' whole entry count
 * stands for the table's.  Nothing reads a data block, so the cost is one
 * walk of the file list and at most a bounded walk of the memtables.  The
 * same walk counts, by level, the files that hold any of the table's keys.
 *
 * Accuracy: exact for a table whose rows were written once and sit in
 * files of their own or in memtables within the cap.  Over, until
 * compaction merges them, by the old versions of overwritten keys, and by
 * the rows of a TRUNCATE whose range deletion has not been compacted yet
 * (or of a key both in a file and a memtable).  Straddling files make it
 * proportional, typically within a few percent.  Never a scan's count.
 */
#include "ts_storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "ts_key.h"

/* memtable entries of one table counted one by one, at most */
#define TS_ESTIMATE_MEMTABLE_ROWS	100000

/* memcmp order of byte strings a and b, as RocksDB's bytewise comparator */
static int
estimate_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* The entries of the column family's memtables, all tables together. */
static uint64_t
estimate_memtable_entries(TsStore *store)
{
	static const char *const props[] = {
		"rocksdb.num-entries-active-mem-table",
		"rocksdb.num-entries-imm-mem-tables",
	};
	uint64_t	total = 0;

	for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
	{
		uint64_t	value;

		if (rocksdb_property_int_cf(store->db, store->cf_data, props[i], &value) == 0)
			total += value;
	}
	return total;
}

/*
 * Rows and bytes of [lo, hi) in the memtables: counted, up to the cap,
 * with an iterator that reads nothing but the memtables.
 */
static void
estimate_memtables(TsStore *store, const char *lo, size_t lolen,
				   const char *hi, size_t hilen, uint64_t *rows, uint64_t *bytes)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it;
	uint64_t	n = 0;
	uint64_t	b = 0;

	rocksdb_readoptions_set_read_tier(ro, 3);	/* kMemtableTier */
	rocksdb_readoptions_set_iterate_upper_bound(ro, hi, hilen);
	rocksdb_readoptions_set_fill_cache(ro, 0);
	it = rocksdb_create_iterator_cf(store->db, ro, store->cf_data);
	for (rocksdb_iter_seek(it, lo, lolen);
		 rocksdb_iter_valid(it) && n < TS_ESTIMATE_MEMTABLE_ROWS;
		 rocksdb_iter_next(it))
	{
		size_t		klen;
		size_t		vlen;

		(void) rocksdb_iter_key(it, &klen);
		(void) rocksdb_iter_value(it, &vlen);
		n++;
		b += klen + vlen;
	}
	if (n == TS_ESTIMATE_MEMTABLE_ROWS && rocksdb_iter_valid(it))
	{
		uint64_t	all = estimate_memtable_entries(store);

		/* more than the cap: the memtables' count bounds the table's */
		if (all > n)
		{
			b = b / n * all;
			n = all;
		}
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	*rows = n;
	*bytes = b;
}

int
ts_store_table_estimate(TsStore *store, uint32_t table_id, uint64_t *rows,
						uint64_t *bytes, TsLevelFiles *levels, TsError *err)
{
	uint8_t		lo[4];
	uint8_t		hi[5];
	size_t		hilen = 4;
	const rocksdb_livefiles_t *files;
	uint64_t	inside_entries = 0;
	uint64_t	inside_bytes = 0;
	uint64_t	straddle_entries = 0;
	uint64_t	straddle_bytes = 0;
	uint64_t	range_bytes = 0;
	uint64_t	sst_rows;
	uint64_t	mem_rows;
	uint64_t	mem_bytes;
	const char *start;
	const char *limit;
	char	   *errptr = NULL;
	int			nfiles;

	if (ts_store_table(store, table_id, err) == NULL)
		return -1;
	if (levels != NULL)
		memset(levels, 0, sizeof(TsLevelFiles) * TS_STORE_LEVELS);
	ts_put_be32(lo, table_id);
	if (table_id < UINT32_MAX)
		ts_put_be32(hi, table_id + 1);
	else
	{
		/* ids never get here; five 0xFF bytes end every key but the absurd */
		memset(hi, 0xFF, sizeof(hi));
		hilen = sizeof(hi);
	}

	files = rocksdb_livefiles(store->db);
	nfiles = files ? rocksdb_livefiles_count(files) : 0;
	for (int i = 0; i < nfiles; i++)
	{
		const char *cf = rocksdb_livefiles_column_family_name(files, i);
		const char *smallest;
		const char *largest;
		size_t		slen;
		size_t		llen;
		uint64_t	entries;

		if (cf == NULL || strcmp(cf, "default") != 0)
			continue;
		smallest = rocksdb_livefiles_smallestkey(files, i, &slen);
		largest = rocksdb_livefiles_largestkey(files, i, &llen);
		/* outside: ends before lo or starts at or after hi */
		if (estimate_key_cmp(largest, llen, (const char *) lo, 4) < 0 ||
			estimate_key_cmp(smallest, slen, (const char *) hi, hilen) >= 0)
			continue;
		if (levels != NULL)
		{
			int			level = rocksdb_livefiles_level(files, i);

			level = level < 0 ? 0 : level < TS_STORE_LEVELS ? level : TS_STORE_LEVELS - 1;
			levels[level].files++;
			levels[level].bytes += rocksdb_livefiles_size(files, i);
		}
		entries = rocksdb_livefiles_entries(files, i);
		{
			uint64_t	deletions = rocksdb_livefiles_deletions(files, i);

			entries = deletions < entries ? entries - deletions : 0;
		}
		if (estimate_key_cmp(smallest, slen, (const char *) lo, 4) >= 0 &&
			estimate_key_cmp(largest, llen, (const char *) hi, hilen) < 0)
		{
			inside_entries += entries;
			inside_bytes += rocksdb_livefiles_size(files, i);
		}
		else
		{
			straddle_entries += entries;
			straddle_bytes += rocksdb_livefiles_size(files, i);
		}
	}
	if (files)
		rocksdb_livefiles_destroy(files);

	sst_rows = inside_entries;
	if (straddle_bytes > 0)
	{
		size_t		lolen = 4;

		start = (const char *) lo;
		limit = (const char *) hi;
		rocksdb_approximate_sizes_cf(store->db, store->cf_data, 1, &start, &lolen,
									 &limit, &hilen, &range_bytes, &errptr);
		if (errptr != NULL)
		{
			ts_error_rocksdb(err, "could not estimate a table's size", errptr);
			return -1;
		}
		if (range_bytes > inside_bytes)
		{
			double		share = (double) (range_bytes - inside_bytes) / straddle_bytes;

			sst_rows += (uint64_t) (straddle_entries * (share < 1.0 ? share : 1.0) + 0.5);
		}
	}
	else
		range_bytes = inside_bytes;

	estimate_memtables(store, (const char *) lo, 4, (const char *) hi, hilen,
					   &mem_rows, &mem_bytes);
	*rows = sst_rows + mem_rows;
	*bytes = (range_bytes > inside_bytes ? range_bytes : inside_bytes) + mem_bytes;
	return 0;
}

uint64_t
ts_store_tables_bytes(TsStore *store, const uint32_t *ids, size_t n)
{
	uint8_t    *keys = malloc(n * 8);
	const char **starts = malloc(n * sizeof(char *));
	const char **limits = malloc(n * sizeof(char *));
	size_t	   *lens = malloc(n * sizeof(size_t));
	uint64_t   *sizes = malloc(n * sizeof(uint64_t));
	uint64_t	total = 0;
	char	   *errptr = NULL;

	if (n > 0 && keys != NULL && starts != NULL && limits != NULL && lens != NULL &&
		sizes != NULL)
	{
		for (size_t i = 0; i < n; i++)
		{
			/* [be32(id), be32(id + 1)); ids never reach UINT32_MAX */
			ts_put_be32(keys + 8 * i, ids[i]);
			ts_put_be32(keys + 8 * i + 4, ids[i] + 1);
			starts[i] = (const char *) keys + 8 * i;
			limits[i] = (const char *) keys + 8 * i + 4;
			lens[i] = 4;
		}
		rocksdb_approximate_sizes_cf(store->db, store->cf_data, (int) n, starts, lens, limits,
									 lens, sizes, &errptr);
		if (errptr == NULL)
			for (size_t i = 0; i < n; i++)
				total += sizes[i];
		free(errptr);
	}
	free(keys);
	free(starts);
	free(limits);
	free(lens);
	free(sizes);
	return total;
}
