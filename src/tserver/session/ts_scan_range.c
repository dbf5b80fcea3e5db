/*
 * ts_scan_range.c
 *		The key range a scan reads: its bounds encoded and checked against
 *		the table's key (ts_scan_key_range), narrowed to a part of a SPLIT
 *		(ts_scan_narrow), and whether it is one whole key, which is read
 *		with a Get (ts_scan_is_point).  Split out of ts_scan.c, which
 *		reads the range.
 */
#include "ts_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "ts_key.h"

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
	const TsLayout *layout = ts_table_layout(table);
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

int
ts_scan_key_range(const TsTable *table, const Tcopy__KeyBound *lower,
				  const Tcopy__KeyBound *upper, TcBuf *lo, TcBuf *hi, bool *empty,
				  TsError *err)
{
	static const Tcopy__Row no_key = TCOPY__ROW__INIT;
	const TsLayout *layout = ts_table_layout(table);

	*empty = false;
	lo->len = 0;
	hi->len = 0;
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
	 * [lower, upper) within the table's prefix.  A missing bound is the
	 * prefix of no key columns, the table id alone: every key of the table
	 * starts with it, and its successor is above them all.
	 */
	if (!ts_key_encode_prefix(layout, table->id, lower ? lower->key : &no_key, lo) ||
		!ts_key_encode_prefix(layout, table->id, upper ? upper->key : &no_key, hi))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	if (lower != NULL && !lower->inclusive && !prefix_successor(lo))
		*empty = true;
	if ((upper == NULL || upper->inclusive) && !prefix_successor(hi))
		hi->len = 0;			/* no upper bound within the key space */
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

/*
 * Whether request reads one whole key, lower (encoded): both bounds
 * inclusive, equal, and of every key column, and no part's narrowing.
 */
bool
ts_scan_is_point(const TsTable *table, const Tcopy__Scan *request, const TcBuf *lower)
{
	const Tcopy__Row *lo;
	const Tcopy__Row *hi;
	TcBuf		upper = {0};
	bool		point;

	if (request->lower == NULL || request->upper == NULL ||
		!request->lower->inclusive || !request->upper->inclusive ||
		request->raw_lower.len > 0 || request->raw_upper.len > 0)
		return false;
	lo = request->lower->key;
	hi = request->upper->key;
	if (lo->n_ints + lo->n_floats + lo->n_blobs != ts_table_layout(table)->nkey ||
		hi->n_ints + hi->n_floats + hi->n_blobs != ts_table_layout(table)->nkey)
		return false;
	point = ts_key_encode_prefix(ts_table_layout(table), table->id, hi, &upper) &&
		upper.len == lower->len && memcmp(upper.data, lower->data, lower->len) == 0;
	tc_buf_free(&upper);
	return point;
}
