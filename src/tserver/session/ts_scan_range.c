/*
 * ts_scan_range.c
 *		The key range a scan reads: the client's key bounds as stored-key
 *		strings, narrowed by the opaque keys of a SPLIT (Scan.raw_lower,
 *		raw_upper); and SPLIT itself over that range (docs/scans.md,
 *		"Parallel scans").
 */
#include "ts_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "ts_key.h"

/* The most parts a SPLIT answers, whatever it asks for. */
#define TS_SPLIT_MAX_PARTS 1024

/*
 * Turn buf into the smallest string greater than every string it prefixes:
 * drop trailing 0xFF bytes and increment the last byte.  false when buf is
 * all 0xFF (no such string).
 */
static bool
prefix_successor(TcBuf *buf)
{
	while (buf->len > 0 && buf->data[buf->len - 1] == 0xFF)
		buf->len--;
	if (buf->len == 0)
		return false;
	buf->data[buf->len - 1]++;
	return true;
}

/* Check that bound holds values for a prefix of the key columns only. */
static int
bound_check(const TsTable *table, const Tcopy__KeyBound *bound, TsError *err)
{
	const TsLayout *layout = &table->layout;
	const Tcopy__Row *key = bound->key;
	size_t		ints = 0,
				floats = 0,
				blobs = 0;

	if (key == NULL || key->n_nulls > 0)
		goto bad;
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		Tcopy__Kind kind = layout->kinds[layout->key_columns[k]];

		if ((kind == TCOPY__KIND__KIND_BOOL || kind == TCOPY__KIND__KIND_INT) && ints < key->n_ints)
			ints++;
		else if (kind == TCOPY__KIND__KIND_FLOAT && floats < key->n_floats)
			floats++;
		else if (kind == TCOPY__KIND__KIND_BYTES && blobs < key->n_blobs)
			blobs++;
		else
			break;
	}
	if (ints == key->n_ints && floats == key->n_floats && blobs == key->n_blobs)
		return 0;
bad:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "scan bound does not match the key columns of table \"%s\"",
				 table->name);
	return -1;
}

/*
 * The stored keys [*lower, *upper) of table between the client's bounds
 * (NULL: none); upper left empty when no key of the table space is above
 * them.  *empty when the range holds no key.  0, or -1 with err.
 */
int
ts_scan_key_range(const TsTable *table, const Tcopy__KeyBound *lower,
				  const Tcopy__KeyBound *upper, TcBuf *lower_key, TcBuf *upper_key,
				  bool *empty, TsError *err)
{
	static const Tcopy__Row no_key = TCOPY__ROW__INIT;
	const TsLayout *layout = &table->layout;

	*empty = false;
	if (layout->nkey == 0 && (lower != NULL || upper != NULL))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table \"%s\" has no key columns to bound a scan by", table->name);
		return -1;
	}
	if ((lower && bound_check(table, lower, err) != 0) ||
		(upper && bound_check(table, upper, err) != 0))
		return -1;

	/*
	 * A missing bound is the prefix of no key columns, the table id alone:
	 * every key of the table starts with it, and its successor is above
	 * them all.
	 */
	if (!ts_key_encode_prefix(layout, table->id, lower ? lower->key : &no_key, lower_key) ||
		!ts_key_encode_prefix(layout, table->id, upper ? upper->key : &no_key, upper_key))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	if (lower != NULL && !lower->inclusive && !prefix_successor(lower_key))
		*empty = true;
	if ((upper == NULL || upper->inclusive) && !prefix_successor(upper_key))
		upper_key->len = 0;		/* no upper bound within the key space */
	return 0;
}

/* Copy len bytes at data into buf, in place of what it held. */
static bool
buf_set(TcBuf *buf, const uint8_t *data, size_t len)
{
	buf->len = 0;
	if (!tc_buf_reserve(buf, len))
		return false;
	memcpy(buf->data, data, len);
	buf->len = len;
	return true;
}

/* A raw key names a place among the table's keys: it starts with the table id. */
static int
raw_key_check(const TsTable *table, const ProtobufCBinaryData *raw, const char *which,
			  TsError *err)
{
	uint8_t		prefix[TS_TABLE_ID_SIZE];

	ts_put_be32(prefix, table->id);
	if (raw->len >= TS_TABLE_ID_SIZE && memcmp(raw->data, prefix, TS_TABLE_ID_SIZE) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "scan %s is not a key of table \"%s\"", which, table->name);
	return -1;
}

/*
 * Narrow [*lower, *upper) (upper empty: unbounded) to [raw_lower,
 * raw_upper), each empty for no narrowing; *empty when nothing is left.
 * A raw key outside the table is refused.  0, or -1 with err.
 */
int
ts_scan_narrow(const TsTable *table, const ProtobufCBinaryData *raw_lower,
			   const ProtobufCBinaryData *raw_upper, TcBuf *lower, TcBuf *upper,
			   bool *empty, TsError *err)
{
	if ((raw_lower->len > 0 && raw_key_check(table, raw_lower, "raw_lower", err) != 0) ||
		(raw_upper->len > 0 && raw_key_check(table, raw_upper, "raw_upper", err) != 0))
		return -1;
	if (raw_lower->len > 0 &&
		ts_key_compare(raw_lower->data, (uint32_t) raw_lower->len,
					   lower->data, (uint32_t) lower->len) > 0 &&
		!buf_set(lower, raw_lower->data, raw_lower->len))
		goto oom;
	if (raw_upper->len > 0 &&
		(upper->len == 0 ||
		 ts_key_compare(raw_upper->data, (uint32_t) raw_upper->len,
						upper->data, (uint32_t) upper->len) < 0) &&
		!buf_set(upper, raw_upper->data, raw_upper->len))
		goto oom;
	if (upper->len > 0 &&
		ts_key_compare(lower->data, (uint32_t) lower->len, upper->data, (uint32_t) upper->len) >= 0)
		*empty = true;
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

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
	if (max_parts > TS_SPLIT_MAX_PARTS)
		max_parts = TS_SPLIT_MAX_PARTS;
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
