/*
 * ts_codec.c
 *		Keys in an order-preserving encoding, values in a compact one; the
 *		formats are described in ts_codec.h.
 */
#include "ts_codec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tc_record.h"
#include "tc_varint.h"
#include "ts_key.h"

/*
 * Digest column i's missing value into *v (NULL when it has none): one
 * value of its kind; else -1 with err.
 */
static int
layout_missing(TsValue *v, const Tcopy__Column *column, uint32_t i, TsError *err)
{
	const Tcopy__Row *m = column->missing;
	size_t		want_ints = 0,
				want_floats = 0,
				want_blobs = 0;

	v->isnull = true;
	if (m == NULL)
		return 0;
	if (column->kind == TCOPY__KIND__KIND_FLOAT)
		want_floats = 1;
	else if (column->kind == TCOPY__KIND__KIND_BYTES)
		want_blobs = 1;
	else
		want_ints = 1;
	if (m->n_nulls != 0 || m->n_ints != want_ints || m->n_floats != want_floats ||
		m->n_blobs != want_blobs ||
		(column->kind == TCOPY__KIND__KIND_BOOL && m->ints[0] != 0 && m->ints[0] != 1))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "column %u (\"%s\") has a missing value that is not one value of its kind",
					 i, column->name);
		return -1;
	}
	v->isnull = false;
	if (want_ints)
		v->i = m->ints[0];
	else if (want_floats)
		v->f = m->floats[0];
	else
	{
		v->p = m->blobs[0].data;
		v->len = m->blobs[0].len;
	}
	return 0;
}

int
ts_layout_init(TsLayout *layout, const Tcopy__Schema *schema, TsError *err)
{
	memset(layout, 0, sizeof(*layout));

	/*
	 * No columns is a table as Postgres allows it: its rows have no values
	 * (and no key, so generated row ids) and are only counted.
	 */
	if (schema->n_columns > TS_MAX_COLUMNS)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "schema has %zu columns (at most %d allowed)",
					 schema->n_columns, TS_MAX_COLUMNS);
		return -1;
	}
	if (schema->n_key > TS_MAX_KEY_COLUMNS)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "schema has %zu key columns (at most %d allowed)",
					 schema->n_key, TS_MAX_KEY_COLUMNS);
		return -1;
	}
	layout->ncolumns = (uint32_t) schema->n_columns;
	layout->nkey = (uint32_t) schema->n_key;
	/* never calloc(0), which may return NULL */
	layout->kinds = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(Tcopy__Kind));
	layout->is_key = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(bool));
	layout->key_columns = calloc(layout->nkey ? layout->nkey : 1, sizeof(uint32_t));
	layout->missing = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(TsValue));
	layout->value_columns = calloc(layout->ncolumns ? layout->ncolumns : 1, sizeof(uint32_t));
	if (!layout->kinds || !layout->is_key || !layout->key_columns || !layout->missing ||
		!layout->value_columns)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}
	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		const Tcopy__Column *column = schema->columns[i];

		if (column->kind < TCOPY__KIND__KIND_BOOL || column->kind > TCOPY__KIND__KIND_BYTES)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "column %u (\"%s\") has no valid kind", i, column->name);
			goto err;
		}
		layout->kinds[i] = column->kind;
		if (layout_missing(&layout->missing[i], column, i, err) != 0)
			goto err;
	}
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	col = schema->key[k];

		if (col >= layout->ncolumns || layout->is_key[col])
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "key column index %u is out of range or repeated", col);
			goto err;
		}
		layout->is_key[col] = true;
		layout->key_columns[k] = col;
	}
	for (uint32_t i = 0; i < layout->ncolumns; i++)
		if (!layout->is_key[i])
			layout->value_columns[layout->nvalue++] = i;
	return 0;

err:
	ts_layout_free(layout);
	return -1;
}

void
ts_layout_free(TsLayout *layout)
{
	free(layout->kinds);
	free(layout->is_key);
	free(layout->key_columns);
	free(layout->missing);
	free(layout->value_columns);
	memset(layout, 0, sizeof(*layout));
}

int
ts_row_check(const TsLayout *layout, const Tcopy__Row *row, TsError *err)
{
	size_t		want[TCOPY__KIND__KIND_BYTES + 1] = {0};
	size_t		next_null = 0;
	size_t		ints_seen = 0;

	/*
	 * Walk the columns once, matching them against the ascending null list,
	 * and count what each kind's array must hold.
	 */
	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		if (next_null < row->n_nulls && row->nulls[next_null] == i)
		{
			if (layout->is_key[i])
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
							 "key column %u is NULL", i);
				return -1;
			}
			next_null++;
			continue;
		}
		if (layout->kinds[i] == TCOPY__KIND__KIND_BOOL)
		{
			if (ints_seen < row->n_ints &&
				row->ints[ints_seen] != 0 && row->ints[ints_seen] != 1)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
							 "bool column %u holds %lld", i,
							 (long long) row->ints[ints_seen]);
				return -1;
			}
			ints_seen++;
		}
		else if (layout->kinds[i] == TCOPY__KIND__KIND_INT)
			ints_seen++;
		want[layout->kinds[i]]++;
	}
	if (next_null != row->n_nulls)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
					 "row's null column indexes are not ascending or not below %u",
					 layout->ncolumns);
		return -1;
	}
	if (row->n_ints != want[TCOPY__KIND__KIND_BOOL] + want[TCOPY__KIND__KIND_INT] ||
		row->n_floats != want[TCOPY__KIND__KIND_FLOAT] ||
		row->n_blobs != want[TCOPY__KIND__KIND_BYTES])
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
					 "row has %zu ints, %zu floats and %zu blobs where the schema wants %zu, %zu and %zu",
					 row->n_ints, row->n_floats, row->n_blobs,
					 want[TCOPY__KIND__KIND_BOOL] + want[TCOPY__KIND__KIND_INT],
					 want[TCOPY__KIND__KIND_FLOAT], want[TCOPY__KIND__KIND_BYTES]);
		return -1;
	}
	return 0;
}

/*
 * Where each column's value sits in a checked row: index into its kind's
 * array, or -1 for NULL.  Filled for all columns in one pass.
 */
static void
row_positions(const TsLayout *layout, const Tcopy__Row *row, int32_t *pos)
{
	size_t		next_null = 0;
	int32_t		counters[TCOPY__KIND__KIND_BYTES + 1] = {0};

	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		Tcopy__Kind kind = layout->kinds[i];

		if (next_null < row->n_nulls && row->nulls[next_null] == i)
		{
			pos[i] = -1;
			next_null++;
			continue;
		}
		/* bools and ints share one array */
		if (kind == TCOPY__KIND__KIND_BOOL)
			kind = TCOPY__KIND__KIND_INT;
		pos[i] = counters[kind]++;
	}
}

static double
float_from_key_bits(uint64_t bits)
{
	double		f;

	if (bits & UINT64_C(0x8000000000000000))
		bits &= ~UINT64_C(0x8000000000000000);
	else
		bits = ~bits;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Append one key column's ordered encoding. */
static bool
key_put_column(TcBuf *out, Tcopy__Kind kind, const Tcopy__Row *row, int32_t pos)
{
	const ProtobufCBinaryData *blob = NULL;
	size_t		room = 8;

	if (kind == TCOPY__KIND__KIND_BYTES)
	{
		blob = &row->blobs[pos];
		/* worst case: every byte escaped, plus the terminator */
		if (blob->len > (SIZE_MAX - 2) / 2)
			return false;
		room = blob->len * 2 + 2;
	}
	else if (kind < TCOPY__KIND__KIND_BOOL || kind > TCOPY__KIND__KIND_BYTES)
		return false;
	if (!tc_buf_reserve(out, room))
		return false;
	out->len = (size_t) (tc_record_put_key_column(out->data + out->len, kind,
												  kind == TCOPY__KIND__KIND_FLOAT || blob ? 0 : row->ints[pos],
												  kind == TCOPY__KIND__KIND_FLOAT ? row->floats[pos] : 0,
												  blob ? blob->data : NULL,
												  blob ? blob->len : 0, 0) - out->data);
	return true;
}

static bool
put_table_id(uint32_t table_id, TcBuf *out)
{
	if (!tc_buf_reserve(out, TS_TABLE_ID_SIZE))
		return false;
	ts_put_be32(out->data + out->len, table_id);
	out->len += TS_TABLE_ID_SIZE;
	return true;
}

bool
ts_key_encode(const TsLayout *layout, uint32_t table_id, const Tcopy__Row *row,
			  TcBuf *out)
{
	int32_t		pos[TS_MAX_COLUMNS];

	if (!put_table_id(table_id, out))
		return false;
	row_positions(layout, row, pos);
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	col = layout->key_columns[k];

		if (!key_put_column(out, layout->kinds[col], row, pos[col]))
			return false;
	}
	return true;
}

bool
ts_key_encode_rowid(uint32_t table_id, uint64_t rowid, TcBuf *out)
{
	if (!put_table_id(table_id, out) || !tc_buf_reserve(out, TS_ROWID_SIZE))
		return false;
	ts_put_be64(out->data + out->len, rowid);
	out->len += TS_ROWID_SIZE;
	return true;
}

bool
ts_key_encode_prefix(const TsLayout *layout, uint32_t table_id,
					 const Tcopy__Row *prefix, TcBuf *out)
{
	size_t		ints = 0,
				floats = 0,
				blobs = 0;

	if (!put_table_id(table_id, out))
		return false;
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		Tcopy__Kind kind = layout->kinds[layout->key_columns[k]];
		size_t	   *used;
		size_t		have;

		switch (kind)
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				used = &ints;
				have = prefix->n_ints;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				used = &floats;
				have = prefix->n_floats;
				break;
			default:
				used = &blobs;
				have = prefix->n_blobs;
				break;
		}
		if (*used >= have)
			break;				/* the prefix ends here */
		if (!key_put_column(out, kind, prefix, (int32_t) (*used)++))
			return false;
	}
	return true;
}

bool
ts_value_encode(const TsLayout *layout, const Tcopy__Row *row, TcBuf *out)
{
	int32_t		pos[TS_MAX_COLUMNS];

	row_positions(layout, row, pos);
	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		Tcopy__Kind kind = layout->kinds[i];
		const ProtobufCBinaryData *blob = NULL;

		if (layout->is_key[i])
			continue;
		if (kind < TCOPY__KIND__KIND_BOOL || kind > TCOPY__KIND__KIND_BYTES)
			return false;
		if (kind == TCOPY__KIND__KIND_BYTES && pos[i] >= 0)
			blob = &row->blobs[pos[i]];
		if (!tc_buf_reserve(out, blob ? 6 + blob->len : 11))
			return false;
		if (pos[i] < 0)
			out->data[out->len++] = 0;
		else
			out->len = (size_t) (tc_record_put_value_column(out->data + out->len, kind,
															kind == TCOPY__KIND__KIND_FLOAT || blob ? 0 : row->ints[pos[i]],
															kind == TCOPY__KIND__KIND_FLOAT ? row->floats[pos[i]] : 0,
															blob ? blob->data : NULL,
															blob ? blob->len : 0, 0) - out->data);
	}
	return true;
}

/* Decode one key column from [*p, end) into *value. */
static bool
key_get_column(Tcopy__Kind kind, const uint8_t **p, const uint8_t *end,
			   TsValue *value, TcArena *scratch)
{
	value->isnull = false;
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			if (end - *p < 1 || **p > 1)
				return false;
			value->i = *(*p)++;
			return true;
		case TCOPY__KIND__KIND_INT:
			if (end - *p < 8)
				return false;
			value->i = (int64_t) (ts_get_be64(*p) ^ UINT64_C(0x8000000000000000));
			*p += 8;
			return true;
		case TCOPY__KIND__KIND_FLOAT:
			if (end - *p < 8)
				return false;
			value->f = float_from_key_bits(ts_get_be64(*p));
			*p += 8;
			return true;
		case TCOPY__KIND__KIND_BYTES:
			{
				const uint8_t *start = *p;
				size_t		escapes = 0;
				uint8_t    *copy;
				size_t		n = 0;

				/* find the terminator, counting escaped zero bytes */
				for (;;)
				{
					if (end - *p < 2)
						return false;
					if ((*p)[0] != 0x00)
						(*p)++;
					else if ((*p)[1] == 0xFF)
					{
						escapes++;
						*p += 2;
					}
					else if ((*p)[1] == 0x01)
						break;
					else
						return false;
				}
				value->len = (size_t) (*p - start) - escapes;
				*p += 2;
				if (escapes == 0)
				{
					value->p = start;
					return true;
				}
				/* rare: a zero byte in a key string needs an unescaped copy */
				copy = tc_arena_alloc(scratch, value->len);
				if (copy == NULL)
					return false;
				for (const uint8_t *q = start; n < value->len; q++)
				{
					copy[n++] = *q;
					if (*q == 0x00)
						q++;
				}
				value->p = copy;
				return true;
			}
		default:
			return false;
	}
}

/*
 * A value's varint: most hold small numbers (a short string's length, an
 * integer below 64), one byte, read without tc_varint_get's loop.
 */
static inline bool
value_varint(const uint8_t **p, const uint8_t *end, uint64_t *u)
{
	if (*p < end && **p < 0x80)
	{
		*u = *(*p)++;
		return true;
	}
	return tc_varint_get(p, end, u);
}

/*
 * ts_row_decode and ts_row_decode_some: the key's columns when keys, and
 * the value's first nvalue columns.
 */
static inline __attribute__((always_inline)) bool
row_decode(const TsLayout *layout, bool keys, uint32_t nvalue,
		   const uint8_t *key, size_t keylen, const uint8_t *value, size_t valuelen,
		   TsValue *values, TcArena *scratch)
{
	const uint8_t *p;
	const uint8_t *end;

	if (keys)
	{
		p = key + TS_TABLE_ID_SIZE;
		end = key + keylen;
		if (keylen < TS_TABLE_ID_SIZE)
			return false;
		for (uint32_t k = 0; k < layout->nkey; k++)
		{
			uint32_t	col = layout->key_columns[k];

			if (!key_get_column(layout->kinds[col], &p, end, &values[col], scratch))
				return false;
		}
		if (layout->nkey == 0 ? (end - p != TS_ROWID_SIZE) : (p != end))
			return false;
	}

	p = value;
	end = value + valuelen;
	for (uint32_t j = 0; j < nvalue; j++)
	{
		uint32_t	i = layout->value_columns[j];
		TsValue    *v = &values[i];
		uint64_t	u;

		/* written before the column was added (t_natts) */
		if (p == end)
		{
			*v = layout->missing[i];
			continue;
		}
		if (*p > 1)
			return false;
		v->isnull = (*p++ == 0);
		if (v->isnull)
			continue;
		switch (layout->kinds[i])
		{
			case TCOPY__KIND__KIND_BOOL:
				if (p >= end || *p > 1)
					return false;
				v->i = *p++;
				break;
			case TCOPY__KIND__KIND_INT:
				if (!value_varint(&p, end, &u))
					return false;
				v->i = tc_unzigzag64(u);
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (end - p < 8)
					return false;
				memcpy(&v->f, p, 8);
				p += 8;
				break;
			case TCOPY__KIND__KIND_BYTES:
				if (!value_varint(&p, end, &u) || u > (uint64_t) (end - p))
					return false;
				v->p = p;
				v->len = (size_t) u;
				p += u;
				break;
			default:
				return false;
		}
	}
	/* the whole value read: it ends with its last column */
	return nvalue < layout->nvalue || p == end;
}

bool
ts_row_decode(const TsLayout *layout, const uint8_t *key, size_t keylen,
			  const uint8_t *value, size_t valuelen, TsValue *values,
			  TcArena *scratch)
{
	return row_decode(layout, true, layout->nvalue, key, keylen, value, valuelen,
					  values, scratch);
}

void
ts_row_need_init(TsRowNeed *need, const TsLayout *layout, const bool *columns)
{
	need->keys = false;
	need->nvalue = 0;
	for (uint32_t k = 0; k < layout->nkey; k++)
		if (columns[layout->key_columns[k]])
			need->keys = true;
	for (uint32_t j = 0; j < layout->nvalue; j++)
		if (columns[layout->value_columns[j]])
			need->nvalue = j + 1;
}

bool
ts_row_decode_some(const TsLayout *layout, const TsRowNeed *need,
				   const uint8_t *key, size_t keylen, const uint8_t *value,
				   size_t valuelen, TsValue *values, TcArena *scratch)
{
	return row_decode(layout, need->keys, need->nvalue, key, keylen, value, valuelen,
					  values, scratch);
}

/* A varint at *p as tc_varint_put writes it (the shortest form). */
static bool
check_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *start = *p;

	return tc_varint_get(p, end, v) && (size_t) (*p - start) == tc_varint_size(*v);
}

const char *
ts_record_check(const TsLayout *layout, const uint8_t *key, size_t keylen,
				const uint8_t *value, size_t valuelen, bool with_value)
{
	const uint8_t *p = key;
	/* an empty key or value may be NULL: no NULL + 0, no memchr(NULL) */
	const uint8_t *end = keylen > 0 ? key + keylen : key;

	if (layout->nkey == 0 && keylen != 0)
		return "a key for a table without key columns";
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	col = layout->key_columns[k];
		Tcopy__Kind kind = layout->kinds[col];

		if (kind == TCOPY__KIND__KIND_BYTES)
		{
			/* zero bytes escaped as 0x00 0xFF, then 0x00 0x01 */
			for (;;)
			{
				const uint8_t *zero = p < end ? memchr(p, 0, (size_t) (end - p)) : NULL;

				if (zero == NULL || end - zero < 2 || (zero[1] != 0xFF && zero[1] != 0x01))
					return "a key string not escaped and ended as stored";
				p = zero + 2;
				if (zero[1] == 0x01)
					break;
			}
		}
		else if (kind == TCOPY__KIND__KIND_BOOL)
		{
			if (p == end || *p > 1)
				return "a bool key column neither 0 nor 1";
			p++;
		}
		else
		{
			if (end - p < 8)
				return "a key shorter than its columns";
			/* one NaN: Postgres has one, and the key is what is equal */
			if (kind == TCOPY__KIND__KIND_FLOAT &&
				isnan(float_from_key_bits(ts_get_be64(p))) &&
				ts_get_be64(p) != tc_record_float_key_bits(NAN))
				return "a float key column holding a NaN other than the canonical one";
			p += 8;
		}
	}
	if (p != end)
		return "a key longer than its columns";

	p = value;
	end = valuelen > 0 ? value + valuelen : value;
	if (!with_value)
		return valuelen == 0 ? NULL : "a value in a delete";
	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		uint64_t	u;

		if (layout->is_key[i])
			continue;
		if (p == end)
			return "a value without all its columns";
		if (*p > 1)
			return "a value column tag neither 0 (NULL) nor 1";
		if (*p++ == 0)
			continue;
		switch (layout->kinds[i])
		{
			case TCOPY__KIND__KIND_BOOL:
				if (p == end || *p > 1)
					return "a bool value neither 0 nor 1";
				p++;
				break;
			case TCOPY__KIND__KIND_INT:
				if (!check_varint(&p, end, &u))
					return "an integer value not a shortest varint";
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (end - p < 8)
					return "a value shorter than its columns";
				p += 8;
				break;
			default:
				if (!check_varint(&p, end, &u) || u > (uint64_t) (end - p))
					return "a string value whose length is not a shortest varint within the value";
				p += u;
				break;
		}
	}
	return p == end ? NULL : "a value longer than its columns";
}
