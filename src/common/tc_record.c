/*
 * tc_record.c
 *		Rows written in the tserver's stored form; see tc_record.h.
 *
 * tc_record_put is on a load's path once per row, so it writes in one
 * walk of the columns where it can: the key columns are found by their
 * slots when no NULL comes before them (the common case), the value is
 * written as the columns come, after a one-byte length that is widened
 * (the value moved) only for a value of 128 bytes or more.
 */
#include "tc_record.h"

#define record_noinline __attribute__((noinline))

/* The array a column's values are in: ints (BOOL, INT), floats or blobs. */
static inline int
record_array(Tcopy__Kind kind)
{
	return kind == TCOPY__KIND__KIND_BOOL || kind == TCOPY__KIND__KIND_INT ? 0 :
		kind == TCOPY__KIND__KIND_FLOAT ? 1 : 2;
}

void
tc_record_layout_derive(TcRecordLayout *layout, uint32_t *slots)
{
	layout->key_last = 0;
	layout->key_fixed = 0;
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	c = layout->key_columns[k];
		int			array = record_array(layout->kinds[c]);

		if (layout->key_fixed != SIZE_MAX)
			layout->key_fixed = layout->kinds[c] == TCOPY__KIND__KIND_BYTES ? SIZE_MAX :
				layout->key_fixed + (layout->kinds[c] == TCOPY__KIND__KIND_BOOL ? 1 : 8);

		slots[k] = 0;
		for (uint32_t before = 0; before < c; before++)
			slots[k] += record_array(layout->kinds[before]) == array;
		if (c > layout->key_last)
			layout->key_last = c;
	}
	if (layout->key_fixed == SIZE_MAX)
		layout->key_fixed = 0;
	layout->key_slots = slots;
}

/* record_key_positions when a NULL comes before a key column. */
static record_noinline bool
record_key_positions_walk(const TcRecordLayout *layout, const TcWireRow *row, uint32_t *pos)
{
	uint32_t	next[3] = {0, 0, 0};
	const uint32_t have[3] = {row->n_ints, row->n_floats, row->n_blobs};
	uint32_t	next_null = 0;
	uint32_t	found = 0;

	/* walk the columns up to the last key one */
	for (uint32_t c = 0; c <= layout->key_last && found < layout->nkey; c++)
	{
		int			array = record_array(layout->kinds[c]);

		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			if (layout->is_key[c])
				return false;
			next_null++;
			continue;
		}
		if (layout->is_key[c])
		{
			for (uint32_t k = 0; k < layout->nkey; k++)
				if (layout->key_columns[k] == c)
					pos[k] = next[array];
			if (next[array] >= have[array])
				return false;
			found++;
		}
		next[array]++;
	}
	return true;
}

/*
 * Where each key column's value lies in row (pos[k]: its index in its
 * kind's array): false when a key column is NULL or beyond the arrays.
 */
static inline bool
record_key_positions(const TcRecordLayout *layout, const TcWireRow *row, uint32_t *pos)
{
	const uint32_t have[3] = {row->n_ints, row->n_floats, row->n_blobs};

	if (row->n_nulls > 0 && row->nulls[0] <= layout->key_last)
		return record_key_positions_walk(layout, row, pos);
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		pos[k] = layout->key_slots[k];
		if (pos[k] >= have[record_array(layout->kinds[layout->key_columns[k]])])
			return false;
	}
	return true;
}

/* Key column k's bytes, at pos in its kind's array. */
static inline size_t
record_key_size(Tcopy__Kind kind, const TcWireRow *row, uint32_t pos)
{
	if (kind == TCOPY__KIND__KIND_BOOL)
		return 1;
	if (kind != TCOPY__KIND__KIND_BYTES)
		return 8;
	return tc_record_key_bytes_size(row->blobs[pos].data, row->blobs[pos].len,
									row->blobs[pos].pad);
}

static inline __attribute__((always_inline)) uint8_t *
record_put_key(uint8_t *out, Tcopy__Kind kind, const TcWireRow *row, uint32_t pos)
{
	if (kind == TCOPY__KIND__KIND_BYTES)
		return tc_record_put_key_column(out, kind, 0, 0, row->blobs[pos].data,
										row->blobs[pos].len, row->blobs[pos].pad);
	if (kind == TCOPY__KIND__KIND_FLOAT)
		return tc_record_put_key_column(out, kind, 0, row->floats[pos], NULL, 0, 0);
	return tc_record_put_key_column(out, kind, row->ints[pos], 0, NULL, 0, 0);
}

/*
 * Write the non-key columns' value at out, as the columns come; returns
 * the end, or NULL when the row's arrays do not hold what they want.
 */
static uint8_t *
record_put_value(uint8_t *out, const TcRecordLayout *layout, const TcWireRow *row)
{
	uint32_t	ints = 0,
				floats = 0,
				blobs = 0,
				next_null = 0;

	for (uint32_t c = 0; c < layout->ncolumns; c++)
	{
		Tcopy__Kind kind = layout->kinds[c];
		bool		key = layout->is_key[c];

		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			next_null++;
			if (key)
				return NULL;
			*out++ = 0;
			continue;
		}
		switch (kind)
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (ints >= row->n_ints)
					return NULL;
				if (!key)
					out = tc_record_put_value_column(out, kind, row->ints[ints], 0, NULL, 0, 0);
				ints++;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (floats >= row->n_floats)
					return NULL;
				if (!key)
					out = tc_record_put_value_column(out, kind, 0, row->floats[floats], NULL, 0, 0);
				floats++;
				break;
			default:
				if (blobs >= row->n_blobs)
					return NULL;
				if (!key)
					out = tc_record_put_value_column(out, kind, 0, 0, row->blobs[blobs].data,
													 row->blobs[blobs].len,
													 row->blobs[blobs].pad);
				blobs++;
				break;
		}
	}
	if (next_null != row->n_nulls || ints != row->n_ints || floats != row->n_floats ||
		blobs != row->n_blobs)
		return NULL;
	return out;
}

uint8_t *
tc_record_put(uint8_t *out, const TcRecordLayout *layout, const TcWireRow *row,
			  bool with_value)
{
	uint32_t	pos[TC_RECORD_MAX_KEY];
	size_t		keylen = 0;
	size_t		valuelen;
	uint8_t    *value;
	uint8_t    *end;

	if (layout->nkey > TC_RECORD_MAX_KEY ||
		(layout->nkey > 0 && !record_key_positions(layout, row, pos)))
		return NULL;
	if (layout->key_fixed > 0)
		keylen = layout->key_fixed;
	else
		for (uint32_t k = 0; k < layout->nkey; k++)
			keylen += record_key_size(layout->kinds[layout->key_columns[k]], row, pos[k]);
	out = tc_varint_put(out, keylen);
	for (uint32_t k = 0; k < layout->nkey; k++)
		out = record_put_key(out, layout->kinds[layout->key_columns[k]], row, pos[k]);

	/* the value after a one-byte length, moved if it needs more */
	value = out + 1;
	end = value;
	if (with_value && (end = record_put_value(value, layout, row)) == NULL)
		return NULL;
	valuelen = (size_t) (end - value);
	if (valuelen >= 0x80)
	{
		memmove(value + tc_varint_size(valuelen) - 1, value, valuelen);
		value += tc_varint_size(valuelen) - 1;
	}
	tc_varint_put(out, valuelen);
	return value + valuelen;
}

size_t
tc_record_size(const TcRecordLayout *layout, const TcWireRow *row, bool with_value)
{
	uint32_t	pos[TC_RECORD_MAX_KEY];
	size_t		key = 0;
	size_t		value = 0;
	uint32_t	ints = 0,
				floats = 0,
				blobs = 0,
				next_null = 0;

	if (layout->nkey > TC_RECORD_MAX_KEY ||
		(layout->nkey > 0 && !record_key_positions(layout, row, pos)))
		return 0;
	for (uint32_t k = 0; k < layout->nkey; k++)
		key += record_key_size(layout->kinds[layout->key_columns[k]], row, pos[k]);
	for (uint32_t c = 0; with_value && c < layout->ncolumns; c++)
	{
		bool		key_column = layout->is_key[c];

		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			next_null++;
			value += 1;
			continue;
		}
		switch (layout->kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (ints >= row->n_ints)
					return 0;
				if (!key_column)
					value += 1 + tc_varint_size(tc_zigzag64(row->ints[ints]));
				ints++;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (floats++ >= row->n_floats)
					return 0;
				value += key_column ? 0 : 9;
				break;
			default:
				if (blobs >= row->n_blobs)
					return 0;
				if (!key_column)
				{
					size_t		len = (size_t) row->blobs[blobs].len + row->blobs[blobs].pad;

					value += 1 + tc_varint_size(len) + len;
				}
				blobs++;
				break;
		}
	}
	return tc_varint_size(key) + key + tc_varint_size(value) + value;
}
