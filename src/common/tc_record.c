/*
 * tc_record.c
 *		Rows written in the tserver's stored form; see tc_record.h.
 */
#include "tc_record.h"

/*
 * Fill pos[ncolumns]: each column's index in its kind's array of row, or
 * -1 when it is NULL.  False when row's arrays do not hold what layout's
 * columns want (a client's bug: its rows are built for the layout).
 */
static bool
record_positions(const TcRecordLayout *layout, const TcWireRow *row, int32_t *pos)
{
	uint32_t	next_null = 0;
	uint32_t	ints = 0,
				floats = 0,
				blobs = 0;

	for (uint32_t c = 0; c < layout->ncolumns; c++)
	{
		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			pos[c] = -1;
			next_null++;
			continue;
		}
		switch (layout->kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				pos[c] = (int32_t) ints++;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				pos[c] = (int32_t) floats++;
				break;
			default:
				pos[c] = (int32_t) blobs++;
				break;
		}
	}
	return next_null == row->n_nulls && ints == row->n_ints &&
		floats == row->n_floats && blobs == row->n_blobs;
}

size_t
tc_record_measure(const TcRecordLayout *layout, const TcWireRow *row,
				  bool with_value, TcRecordSize *size)
{
	int32_t    *pos = size->pos;
	size_t		key = 0;
	size_t		value = 0;

	if (!record_positions(layout, row, pos))
		return 0;
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	c = layout->key_columns[k];
		const TcWireBlob *blob;

		if (pos[c] < 0)
			return 0;
		switch (layout->kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
				key += 1;
				break;
			case TCOPY__KIND__KIND_INT:
			case TCOPY__KIND__KIND_FLOAT:
				key += 8;
				break;
			default:
				blob = &row->blobs[pos[c]];
				key += tc_record_key_bytes_size(blob->data, blob->len, blob->pad);
				break;
		}
	}
	for (uint32_t c = 0; with_value && c < layout->ncolumns; c++)
	{
		const TcWireBlob *blob;

		if (layout->is_key[c])
			continue;
		if (pos[c] < 0)
		{
			value += 1;
			continue;
		}
		switch (layout->kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
				value += 2;
				break;
			case TCOPY__KIND__KIND_INT:
				value += 1 + tc_varint_size(tc_zigzag64(row->ints[pos[c]]));
				break;
			case TCOPY__KIND__KIND_FLOAT:
				value += 9;
				break;
			default:
				blob = &row->blobs[pos[c]];
				value += 1 + tc_varint_size((size_t) blob->len + blob->pad) +
					blob->len + blob->pad;
				break;
		}
	}
	size->key = key;
	size->value = value;
	size->with_value = with_value;
	return tc_varint_size(key) + key + tc_varint_size(value) + value;
}

/* Write column c (present, at pos in its kind's array) with put. */
static inline uint8_t *
record_put_column(uint8_t *out, Tcopy__Kind kind, const TcWireRow *row, int32_t pos,
				  bool key)
{
	int64_t		i = 0;
	double		f = 0;
	const TcWireBlob *blob = NULL;

	if (kind == TCOPY__KIND__KIND_BOOL || kind == TCOPY__KIND__KIND_INT)
		i = row->ints[pos];
	else if (kind == TCOPY__KIND__KIND_FLOAT)
		f = row->floats[pos];
	else
		blob = &row->blobs[pos];
	if (key)
		return tc_record_put_key_column(out, kind, i, f, blob ? blob->data : NULL,
										blob ? blob->len : 0, blob ? blob->pad : 0);
	return tc_record_put_value_column(out, kind, i, f, blob ? blob->data : NULL,
									  blob ? blob->len : 0, blob ? blob->pad : 0);
}

uint8_t *
tc_record_put(uint8_t *out, const TcRecordLayout *layout, const TcWireRow *row,
			  const TcRecordSize *size)
{
	const int32_t *pos = size->pos;

	out = tc_varint_put(out, size->key);
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	c = layout->key_columns[k];

		out = record_put_column(out, layout->kinds[c], row, pos[c], true);
	}
	out = tc_varint_put(out, size->value);
	for (uint32_t c = 0; size->with_value && c < layout->ncolumns; c++)
	{
		if (layout->is_key[c])
			continue;
		if (pos[c] < 0)
			*out++ = 0;
		else
			out = record_put_column(out, layout->kinds[c], row, pos[c], false);
	}
	return out;
}
