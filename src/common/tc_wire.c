/*
 * tc_wire.c
 *		A WriteBatch's header in protobuf's wire format, and the size of a
 *		Row message; see tc_wire.h.
 *
 * What protobuf-c writes for tcopy.proto's messages, field by field in
 * field-number order: proto3 scalars and bytes only when not zero or
 * empty, repeated numbers packed (tag, byte length, values) and left out
 * when empty, each repeated bytes value as its own field even when empty.
 */
#include "tc_wire.h"

#include <string.h>

#include "tc_varint.h"

/* wire tags: field number << 3 | wire type (0 varint, 2 length-delimited) */
#define TAG_BATCH_SEQ		((1 << 3) | 0)
#define TAG_BATCH_TABLE_ID	((2 << 3) | 0)
#define TAG_BATCH_KIND		((4 << 3) | 0)
#define TAG_BATCH_RECORDS	((5 << 3) | 2)

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
tc_wire_put_batch_header(uint8_t *end, uint64_t seq, uint32_t table_id, int kind,
						 size_t records_len)
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
	if (records_len != 0)
	{
		*p++ = TAG_BATCH_RECORDS;
		p = tc_varint_put(p, records_len);
	}
	len = (size_t) (p - header);
	memcpy(end - len, header, len);
	return end - len;
}
