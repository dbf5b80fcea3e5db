/*
 * tc_record.h
 *		Rows written in the tserver's stored form (src/tserver/storage/
 *		ts_codec.h gives the format), by the client, so that the tserver
 *		stores a row as it is received: it checks the bytes and copies them,
 *		with no decode and re-encode.  The column encoders here are also the
 *		tserver's own (ts_codec.c), so the two cannot drift apart.
 *
 * A WriteBatch's field records holds its rows one after another, each as
 *   varint keylen, key   the key columns in key order, ordered encoding,
 *                        without the table id (empty when the table has no
 *                        key columns: the tserver gives row ids);
 *   varint valuelen, value  each non-key column in schema order (empty in
 *                        a batch of deletes).
 * Both in exactly the bytes ts_codec.c writes for the same row: the tserver
 * refuses any other (ts_record_check), so that equal rows are equal bytes.
 *
 * No Postgres header reaches this file.
 */
#ifndef TC_RECORD_H
#define TC_RECORD_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tc_varint.h"
#include "tc_wire.h"
#include "tcopy.pb-c.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tc_record.h writes doubles in memory order: port it to big-endian machines"
#endif

#define TC_RECORD_MAX_KEY 32		/* key columns, as the tserver's */

/* What a record's encoding needs of a table's schema. */
typedef struct TcRecordLayout
{
	uint32_t	ncolumns;
	const Tcopy__Kind *kinds;	/* [ncolumns] */
	const bool *is_key;			/* [ncolumns] */
	uint32_t	nkey;			/* at most TC_RECORD_MAX_KEY */
	const uint32_t *key_columns;	/* [nkey], in key order */
	/* derived (tc_record_layout_derive) */
	const uint32_t *key_slots;	/* [nkey]: index in its kind's array when
								 * no column before it is NULL */
	uint32_t	key_last;		/* the highest key column */
	size_t		key_fixed;		/* the key's bytes, when no key column is
								 * BYTES; else 0 */
} TcRecordLayout;

/*
 * Derive layout's key_slots (into slots[nkey], the caller's) and key_last
 * from its kinds and key columns.
 */
void		tc_record_layout_derive(TcRecordLayout *layout, uint32_t *slots);

#define TC_RECORD_FLOAT_NAN_KEY UINT64_C(0x7FF8000000000000)

/*
 * A float key column's bits: all NaNs one canonical value above +Infinity
 * (they are one value to Postgres), positives with the sign bit set,
 * negatives all flipped, so that unsigned order is numeric order.
 */
static inline uint64_t
tc_record_float_key_bits(double f)
{
	uint64_t	bits;

	if (isnan(f))
		bits = TC_RECORD_FLOAT_NAN_KEY;
	else
		memcpy(&bits, &f, sizeof(bits));
	if (bits & UINT64_C(0x8000000000000000))
		return ~bits;
	return bits | UINT64_C(0x8000000000000000);
}

static inline uint8_t *
tc_record_put_be64(uint8_t *out, uint64_t v)
{
	for (int shift = 56; shift >= 0; shift -= 8)
		*out++ = (uint8_t) (v >> shift);
	return out;
}

/* Bytes of a BYTES key column of len bytes and pad blanks, escaped. */
static inline size_t
tc_record_key_bytes_size(const uint8_t *data, size_t len, size_t pad)
{
	size_t		n = len + pad + 2;
	const uint8_t *zero = len > 0 ? memchr(data, 0, len) : NULL;

	while (zero != NULL)
	{
		n++;
		zero++;
		zero = memchr(zero, 0, len - (size_t) (zero - data));
	}
	return n;
}

/*
 * Write a key column at out; returns the end.  i: BOOL (0 or 1) and INT;
 * f: FLOAT; data, len, pad: BYTES, each zero byte escaped as 0x00 0xFF
 * and ended by 0x00 0x01 (at most 2 * (len + pad) + 2 bytes).
 */
static inline __attribute__((always_inline)) uint8_t *
tc_record_put_key_column(uint8_t *out, Tcopy__Kind kind, int64_t i, double f,
						 const uint8_t *data, size_t len, size_t pad)
{
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			*out++ = (uint8_t) i;
			return out;
		case TCOPY__KIND__KIND_INT:
			return tc_record_put_be64(out, (uint64_t) i ^ UINT64_C(0x8000000000000000));
		case TCOPY__KIND__KIND_FLOAT:
			return tc_record_put_be64(out, tc_record_float_key_bits(f));
		default:
			for (size_t k = 0; k < len; k++)
			{
				*out++ = data[k];
				if (data[k] == 0x00)
					*out++ = 0xFF;
			}
			if (pad > 0)
				memset(out, ' ', pad);
			out += pad;
			*out++ = 0x00;
			*out++ = 0x01;
			return out;
	}
}

/*
 * Write a present non-key column (its tag byte 1 first) at out; returns
 * the end.  At most 11 bytes, or 6 + len + pad for BYTES.
 */
static inline __attribute__((always_inline)) uint8_t *
tc_record_put_value_column(uint8_t *out, Tcopy__Kind kind, int64_t i, double f,
						   const uint8_t *data, size_t len, size_t pad)
{
	*out++ = 1;
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			*out++ = (uint8_t) i;
			return out;
		case TCOPY__KIND__KIND_INT:
			return tc_varint_put(out, tc_zigzag64(i));
		case TCOPY__KIND__KIND_FLOAT:
			memcpy(out, &f, 8);
			return out + 8;
		default:
			out = tc_varint_put(out, len + pad);
			if (len > 0)
				memcpy(out, data, len);
			if (pad > 0)
				memset(out + len, ' ', pad);
			return out + len + pad;
	}
}

/*
 * At least the bytes tc_record_put writes for row, cheap to compute (every
 * blob counted as a key column's, escaped).
 */
static inline size_t
tc_record_bound(const TcWireRow *row)
{
	size_t		bound = 2 * TC_VARINT_MAX + row->n_nulls +
		(size_t) (1 + TC_VARINT_MAX) * row->n_ints + (size_t) 9 * row->n_floats;

	for (uint32_t i = 0; i < row->n_blobs; i++)
		bound += 2 * ((size_t) row->blobs[i].len + row->blobs[i].pad) + 1 + TC_VARINT_MAX;
	return bound;
}

/*
 * The exact bytes tc_record_put writes for row (with its value unless
 * with_value is false), or 0 when the row does not fit layout.  For the
 * rare row whose bound is near a limit.
 */
size_t		tc_record_size(const TcRecordLayout *layout, const TcWireRow *row,
						   bool with_value);

/*
 * Write row's record (with its value unless with_value is false) at out,
 * which has room for tc_record_bound(row) bytes; returns the end, or NULL
 * when the row does not fit layout (a key column NULL, the arrays not
 * holding what the columns want): the caller's bug.
 */
uint8_t    *tc_record_put(uint8_t *out, const TcRecordLayout *layout,
						  const TcWireRow *row, bool with_value);

#endif							/* TC_RECORD_H */
