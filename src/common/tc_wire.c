/*
 * tc_wire.c
 *		WriteBatch rows written in protobuf's wire format; see tc_wire.h.
 *
 * What protobuf-c writes for tcopy.proto's messages, field by field in
 * field-number order: proto3 scalars only when not zero, repeated numbers
 * packed (tag, byte length, values) and left out when empty, each bytes
 * value as its own field even when empty.
 */
#include "tc_wire.h"

#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tc_wire.c writes doubles in memory order: port it to big-endian machines"
#endif

/* wire tags: field number << 3 | wire type (0 varint, 2 length-delimited) */
#define TAG_BATCH_SEQ		((1 << 3) | 0)
#define TAG_BATCH_TABLE_ID	((2 << 3) | 0)
#define TAG_BATCH_ROWS		((3 << 3) | 2)
#define TAG_ROW_INTS		((1 << 3) | 2)
#define TAG_ROW_FLOATS		((2 << 3) | 2)
#define TAG_ROW_BLOBS		((3 << 3) | 2)
#define TAG_ROW_NULLS		((4 << 3) | 2)

#define VARINT_MAX 10
#define LEN_MAX 5				/* a varint of a 32-bit length */

static inline uint64_t
zigzag64(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static inline size_t
varint_size(uint64_t v)
{
	size_t		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint8_t *
put_varint(uint8_t *out, uint64_t v)
{
	while (v >= 0x80)
	{
		*out++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*out++ = (uint8_t) v;
	return out;
}

size_t
tc_wire_row_bound(const TcWireRow *row)
{
	size_t		bound = 1 + LEN_MAX;

	if (row->n_ints > 0)
		bound += 1 + LEN_MAX + (size_t) VARINT_MAX * row->n_ints;
	if (row->n_floats > 0)
		bound += 1 + LEN_MAX + (size_t) 8 * row->n_floats;
	for (uint32_t i = 0; i < row->n_blobs; i++)
		bound += 1 + LEN_MAX + (size_t) row->blobs[i].len + row->blobs[i].pad;
	if (row->n_nulls > 0)
		bound += 1 + LEN_MAX + (size_t) LEN_MAX * row->n_nulls;
	return bound;
}

uint8_t *
tc_wire_put_row(uint8_t *out, const TcWireRow *row)
{
	size_t		ints_len = 0;
	size_t		nulls_len = 0;
	size_t		row_len = 0;

	for (uint32_t i = 0; i < row->n_ints; i++)
		ints_len += varint_size(zigzag64(row->ints[i]));
	for (uint32_t i = 0; i < row->n_nulls; i++)
		nulls_len += varint_size(row->nulls[i]);
	if (row->n_ints > 0)
		row_len += 1 + varint_size(ints_len) + ints_len;
	if (row->n_floats > 0)
		row_len += 1 + varint_size(8 * (size_t) row->n_floats) + 8 * (size_t) row->n_floats;
	for (uint32_t i = 0; i < row->n_blobs; i++)
	{
		size_t		len = (size_t) row->blobs[i].len + row->blobs[i].pad;

		row_len += 1 + varint_size(len) + len;
	}
	if (row->n_nulls > 0)
		row_len += 1 + varint_size(nulls_len) + nulls_len;

	*out++ = TAG_BATCH_ROWS;
	out = put_varint(out, row_len);
	if (row->n_ints > 0)
	{
		*out++ = TAG_ROW_INTS;
		out = put_varint(out, ints_len);
		for (uint32_t i = 0; i < row->n_ints; i++)
			out = put_varint(out, zigzag64(row->ints[i]));
	}
	if (row->n_floats > 0)
	{
		*out++ = TAG_ROW_FLOATS;
		out = put_varint(out, 8 * (size_t) row->n_floats);
		/* little-endian doubles: this machine's order (x86-64, arm64) */
		memcpy(out, row->floats, 8 * (size_t) row->n_floats);
		out += 8 * (size_t) row->n_floats;
	}
	for (uint32_t i = 0; i < row->n_blobs; i++)
	{
		const TcWireBlob *blob = &row->blobs[i];

		*out++ = TAG_ROW_BLOBS;
		out = put_varint(out, (size_t) blob->len + blob->pad);
		memcpy(out, blob->data, blob->len);
		out += blob->len;
		memset(out, ' ', blob->pad);
		out += blob->pad;
	}
	if (row->n_nulls > 0)
	{
		*out++ = TAG_ROW_NULLS;
		out = put_varint(out, nulls_len);
		for (uint32_t i = 0; i < row->n_nulls; i++)
			out = put_varint(out, row->nulls[i]);
	}
	return out;
}

uint8_t *
tc_wire_put_batch_header(uint8_t *end, uint64_t seq, uint32_t table_id)
{
	uint8_t		header[TC_WIRE_BATCH_HEADER_MAX];
	uint8_t    *p = header;
	size_t		len;

	if (seq != 0)
	{
		*p++ = TAG_BATCH_SEQ;
		p = put_varint(p, seq);
	}
	if (table_id != 0)
	{
		*p++ = TAG_BATCH_TABLE_ID;
		p = put_varint(p, table_id);
	}
	len = (size_t) (p - header);
	memcpy(end - len, header, len);
	return end - len;
}
