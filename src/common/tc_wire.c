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

#include "tc_varint.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tc_wire.c writes doubles in memory order: port it to big-endian machines"
#endif

/* wire tags: field number << 3 | wire type (0 varint, 2 length-delimited) */
#define TAG_BATCH_SEQ		((1 << 3) | 0)
#define TAG_BATCH_TABLE_ID	((2 << 3) | 0)
#define TAG_BATCH_KIND		((4 << 3) | 0)
#define TAG_BATCH_ROWS		((3 << 3) | 2)
#define TAG_ROW_INTS		((1 << 3) | 2)
#define TAG_ROW_FLOATS		((2 << 3) | 2)
#define TAG_ROW_BLOBS		((3 << 3) | 2)
#define TAG_ROW_NULLS		((4 << 3) | 2)

#define LEN_MAX 5				/* a varint of a 32-bit length */

size_t
tc_wire_row_bound(const TcWireRow *row)
{
	size_t		bound = 1 + LEN_MAX;

	if (row->n_ints > 0)
		bound += 1 + LEN_MAX + (size_t) TC_VARINT_MAX * row->n_ints;
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
		ints_len += tc_varint_size(tc_zigzag64(row->ints[i]));
	for (uint32_t i = 0; i < row->n_nulls; i++)
		nulls_len += tc_varint_size(row->nulls[i]);
	if (row->n_ints > 0)
		row_len += 1 + tc_varint_size(ints_len) + ints_len;
	if (row->n_floats > 0)
		row_len += 1 + tc_varint_size(8 * (size_t) row->n_floats) + 8 * (size_t) row->n_floats;
	for (uint32_t i = 0; i < row->n_blobs; i++)
	{
		size_t		len = (size_t) row->blobs[i].len + row->blobs[i].pad;

		row_len += 1 + tc_varint_size(len) + len;
	}
	if (row->n_nulls > 0)
		row_len += 1 + tc_varint_size(nulls_len) + nulls_len;

	*out++ = TAG_BATCH_ROWS;
	out = tc_varint_put(out, row_len);
	if (row->n_ints > 0)
	{
		*out++ = TAG_ROW_INTS;
		out = tc_varint_put(out, ints_len);
		for (uint32_t i = 0; i < row->n_ints; i++)
			out = tc_varint_put(out, tc_zigzag64(row->ints[i]));
	}
	if (row->n_floats > 0)
	{
		*out++ = TAG_ROW_FLOATS;
		out = tc_varint_put(out, 8 * (size_t) row->n_floats);
		/* little-endian doubles: this machine's order (x86-64, arm64) */
		memcpy(out, row->floats, 8 * (size_t) row->n_floats);
		out += 8 * (size_t) row->n_floats;
	}
	for (uint32_t i = 0; i < row->n_blobs; i++)
	{
		const TcWireBlob *blob = &row->blobs[i];

		*out++ = TAG_ROW_BLOBS;
		out = tc_varint_put(out, (size_t) blob->len + blob->pad);
		memcpy(out, blob->data, blob->len);
		out += blob->len;
		memset(out, ' ', blob->pad);
		out += blob->pad;
	}
	if (row->n_nulls > 0)
	{
		*out++ = TAG_ROW_NULLS;
		out = tc_varint_put(out, nulls_len);
		for (uint32_t i = 0; i < row->n_nulls; i++)
			out = tc_varint_put(out, row->nulls[i]);
	}
	return out;
}

uint8_t *
tc_wire_put_batch_header(uint8_t *end, uint64_t seq, uint32_t table_id, int kind)
{
	uint8_t		header[TC_WIRE_BATCH_HEADER_MAX];
	uint8_t    *p = header;
	size_t		len;

	if (seq != 0)
	{
		*p++ = TAG_BATCH_SEQ;
		p = tc_varint_put(p, seq);
	}
	if (table_id != 0)
	{
		*p++ = TAG_BATCH_TABLE_ID;
		p = tc_varint_put(p, table_id);
	}
	if (kind != 0)
	{
		*p++ = TAG_BATCH_KIND;
		*p++ = (uint8_t) kind;	/* WriteKind: a one-byte varint */
	}
	len = (size_t) (p - header);
	memcpy(end - len, header, len);
	return end - len;
}
