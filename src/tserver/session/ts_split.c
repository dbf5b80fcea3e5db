/*
 * ts_split.c
 *		Split a table's key range into parts of about equal size, for a
 *		parallel scan (docs/scans.md#parallel-scans).
 *
 * The range is first narrowed to the keys it holds: its first and last
 * stored keys, found with two seeks.  Between them, SPLIT_PROBES
 * candidate boundaries are spaced evenly by interpolating the eight bytes
 * after the two keys' common prefix as a big-endian number, and RocksDB's
 * approximate size of each slice (from the SST files' indexes, no row
 * read) places the boundaries at equal shares of the bytes.  Slices that
 * RocksDB gives no size for (rows still in the memtable) count as
 * equal.  The boundaries only need to be ascending keys inside the range:
 * a bad guess makes parts uneven, never wrong.
 */
#include "ts_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "ts_key.h"

#define SPLIT_PROBES 64
#define SPLIT_MAX_PARTS 1024

/* Append n bytes to buf: false when out of memory. */
static bool
split_append(TcBuf *buf, const void *data, size_t n)
{
	if (!tc_buf_reserve(buf, n))
		return false;
	memcpy(buf->data + buf->len, data, n);
	buf->len += n;
	return true;
}

/* The big-endian number of the 8 bytes of key from offset on, zero-padded. */
static uint64_t
split_digits(const TcBuf *key, size_t offset)
{
	uint64_t	v = 0;

	for (size_t i = 0; i < 8; i++)
		v = (v << 8) | (offset + i < key->len ? key->data[offset + i] : 0);
	return v;
}

/* Set key to prefix[0..plen) followed by the 8 big-endian bytes of v. */
static bool
split_key(TcBuf *key, const TcBuf *prefix, size_t plen, uint64_t v)
{
	uint8_t		digits[8];

	for (int i = 7; i >= 0; i--)
	{
		digits[i] = (uint8_t) v;
		v >>= 8;
	}
	key->len = 0;
	return split_append(key, prefix->data, plen) && split_append(key, digits, 8);
}

/*
 * The first and last keys of the table in [lower, upper) (upper empty: to
 * the table's end, which the caller passes as its prefix successor): 1,
 * 0 when the range holds no stored key (or memory ran out copying them:
 * the range is then not cut), -1 with err.
 */
static int
split_ends(TsStore *store, const TcBuf *lower, const TcBuf *upper, TcBuf *first,
		   TcBuf *last, TsError *err)
{
	rocksdb_readoptions_t *options = rocksdb_readoptions_create();
	rocksdb_iterator_t *iter;
	const char *key;
	size_t		keylen;
	bool		found = false;
	char	   *errptr = NULL;

	rocksdb_readoptions_set_fill_cache(options, 0);
	if (upper->len > 0)
		rocksdb_readoptions_set_iterate_upper_bound(options, (const char *) upper->data,
													upper->len);
	rocksdb_readoptions_set_iterate_lower_bound(options, (const char *) lower->data, lower->len);
	iter = rocksdb_create_iterator_cf(store->db, options, store->cf_data);
	rocksdb_iter_seek(iter, (const char *) lower->data, lower->len);
	if (rocksdb_iter_valid(iter))
	{
		key = rocksdb_iter_key(iter, &keylen);
		first->len = 0;
		if (!split_append(first, key, keylen))
			goto done;
		if (upper->len > 0)
			rocksdb_iter_seek_for_prev(iter, (const char *) upper->data, upper->len);
		else
			rocksdb_iter_seek_to_last(iter);
		/* the upper bound is exclusive: a key equal to it is not the range's */
		if (rocksdb_iter_valid(iter))
		{
			key = rocksdb_iter_key(iter, &keylen);
			if (upper->len > 0 && ts_key_compare((const uint8_t *) key, (uint32_t) keylen,
												 upper->data, (uint32_t) upper->len) >= 0)
				rocksdb_iter_prev(iter);
		}
		if (rocksdb_iter_valid(iter))
		{
			key = rocksdb_iter_key(iter, &keylen);
			last->len = 0;
			found = split_append(last, key, keylen);
		}
	}
done:
	rocksdb_iter_get_error(iter, &errptr);
	rocksdb_iter_destroy(iter);
	rocksdb_readoptions_destroy(options);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not split table", errptr);
		return -1;
	}
	return found ? 1 : 0;
}

int
ts_scan_split(TsStore *store, const TsTable *table, const TcBuf *lower, const TcBuf *upper,
			  uint32_t max_parts, TcBuf **keys, size_t *nkeys, TsError *err)
{
	TcBuf		first = {0},
				last = {0};
	TcBuf		probes[SPLIT_PROBES + 1];
	const char *starts[SPLIT_PROBES];
	const char *limits[SPLIT_PROBES];
	size_t		start_lens[SPLIT_PROBES];
	size_t		limit_lens[SPLIT_PROBES];
	uint64_t	sizes[SPLIT_PROBES];
	uint64_t	total = 0;
	uint64_t	a,
				b;
	size_t		plen = 0;
	size_t		n = 0;
	char	   *errptr = NULL;
	int			rc = -1;

	(void) table;
	*keys = NULL;
	*nkeys = 0;
	memset(probes, 0, sizeof(probes));
	if (max_parts > SPLIT_MAX_PARTS)
		max_parts = SPLIT_MAX_PARTS;
	if (max_parts <= 1)
		return 0;
	rc = split_ends(store, lower, upper, &first, &last, err);
	if (rc <= 0)
		goto out;
	rc = -1;
	while (plen < first.len && plen < last.len && first.data[plen] == last.data[plen])
		plen++;
	a = split_digits(&first, plen);
	b = split_digits(&last, plen);
	if (b <= a + SPLIT_PROBES)
	{
		/* too close to cut by these digits: one part */
		rc = 0;
		goto out;
	}

	/* probes[0] = first, probes[SPLIT_PROBES] = just past last, evenly between */
	for (int i = 0; i <= SPLIT_PROBES; i++)
	{
		uint64_t	v = a + (uint64_t) (((unsigned __int128) (b - a) * (unsigned) i) / SPLIT_PROBES);

		if (i == SPLIT_PROBES)
			v = b;
		if (!split_key(&probes[i], &first, plen, v))
			goto oom;
	}
	for (int i = 0; i < SPLIT_PROBES; i++)
	{
		starts[i] = (const char *) probes[i].data;
		start_lens[i] = probes[i].len;
		limits[i] = (const char *) probes[i + 1].data;
		limit_lens[i] = probes[i + 1].len;
	}
	rocksdb_approximate_sizes_cf(store->db, store->cf_data, SPLIT_PROBES, starts, start_lens,
								 limits, limit_lens, sizes, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not split table", errptr);
		goto out;
	}
	for (int i = 0; i < SPLIT_PROBES; i++)
		total += sizes[i];
	if (total == 0)
	{
		for (int i = 0; i < SPLIT_PROBES; i++)
			sizes[i] = 1;
		total = SPLIT_PROBES;
	}

	*keys = calloc(max_parts - 1, sizeof(TcBuf));
	if (*keys == NULL)
		goto oom;
	{
		uint64_t	seen = 0;
		uint32_t	part = 1;

		/* a boundary where the bytes before it pass part/max_parts of them */
		for (int i = 0; i < SPLIT_PROBES - 1 && part < max_parts; i++)
		{
			seen += sizes[i];
			if ((unsigned __int128) seen * max_parts >= (unsigned __int128) total * part)
			{
				TcBuf	   *key = &(*keys)[n];

				if (!split_append(key, probes[i + 1].data, probes[i + 1].len))
					goto oom;
				n++;
				while (part < max_parts &&
					   (unsigned __int128) seen * max_parts >= (unsigned __int128) total * part)
					part++;
			}
		}
	}
	*nkeys = n;
	rc = 0;
	goto out;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
out:
	if (rc != 0 && *keys != NULL)
	{
		for (size_t i = 0; i < n; i++)
			tc_buf_free(&(*keys)[i]);
		free(*keys);
		*keys = NULL;
		*nkeys = 0;
	}
	for (int i = 0; i <= SPLIT_PROBES; i++)
		tc_buf_free(&probes[i]);
	tc_buf_free(&first);
	tc_buf_free(&last);
	return rc;
}
