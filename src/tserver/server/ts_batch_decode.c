/*
 * ts_batch_decode.c
 *		WriteBatch decoding without protobuf-c's generic unpack; see
 *		ts_batch_decode.h.
 *
 * Two passes over the payload, by one walker.  The first checks everything
 * protobuf-c checks and counts the rows, and the ints, floats, blobs and
 * nulls of all rows together; the second, over bytes now known to be
 * well-formed, fills arrays of exactly those sizes, each row's values a
 * slice of them.  Memory is thus requested before anything is written and
 * in proportion to the payload: a row takes at least 2 of its bytes, an
 * int or a null 1, a float 8 and a blob 2, so the arrays hold at most
 * (sizeof(Tcopy__Row) + a pointer) / 2 bytes per byte of payload, however
 * the counts are made up; the caller's allocator may still refuse (the
 * connection's decode budget).
 *
 * What protobuf-c 1.4 does, and so what this does (probed one case at a
 * time and held to by the differential fuzzer):
 *   - a tag is a varint of at most 5 bytes; a first byte whose field bits
 *     are all zero is malformed, a longer tag worth 0 is an unknown field;
 *   - wire types 3, 4, 6 and 7 are malformed, known field or not; a known
 *     field with another wire type than its own is malformed;
 *   - a varint has at most 10 bytes, bits past the 64th are dropped, and a
 *     uint32 field keeps the low 32 bits;
 *   - a length prefix has at most 5 bytes and must fit in what is left;
 *   - unknown fields of wire types 0, 1, 2 and 5 are skipped;
 *   - a repeated number may come packed or one per field, mixed in any
 *     order, and its values are appended in the order they come; packed
 *     doubles must fill a multiple of 8 bytes, packed varints must each be
 *     complete;
 *   - a later seq, table_id, kind or records replaces an earlier one;
 *     kind (an enum) keeps the low 32 bits, as an int32, whatever their
 *     value;
 *   - an empty blob has data NULL, an empty repeated field a NULL array.
 * Unknown fields are not kept (protobuf-c copies them into the message;
 * nothing in the tserver reads them).
 */
#include "ts_batch_decode.h"

#include <stdbool.h>
#include <string.h>

#include "tc_varint.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ts_batch_decode.c reads doubles in memory order: port it to big-endian machines"
#endif

/* wire types */
#define WIRE_VARINT 0
#define WIRE_64BIT 1
#define WIRE_LENGTH 2
#define WIRE_32BIT 5

#define TAG_MAX_BYTES 5
#define LENGTH_MAX_BYTES 5

/* field numbers, as in proto/tcopy.proto */
#define BATCH_SEQ 1
#define BATCH_TABLE_ID 2
#define BATCH_ROWS 3
#define BATCH_KIND 4
#define BATCH_RECORDS 5
#define ROW_INTS 1
#define ROW_FLOATS 2
#define ROW_BLOBS 3
#define ROW_NULLS 4

/* Elements seen so far: totals in the first pass, next free slots in the second. */
typedef struct BatchCounts
{
	size_t		rows;
	size_t		ints;
	size_t		floats;
	size_t		blobs;
	size_t		nulls;
} BatchCounts;

/* The arrays the second pass fills, sized by the first. */
typedef struct BatchArrays
{
	Tcopy__Row **rows;
	Tcopy__Row *row_structs;
	int64_t    *ints;
	double	   *floats;
	ProtobufCBinaryData *blobs;
	uint32_t   *nulls;
} BatchArrays;

static const Tcopy__Row batch_row_init = TCOPY__ROW__INIT;

static inline size_t
batch_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * Read the tag at *p (before end, and not at it): false when malformed.
 * A one-byte tag, the common case, takes the first branch.
 */
static inline bool
batch_read_tag(const uint8_t **p, const uint8_t *end, uint32_t *field, unsigned *wire)
{
	const uint8_t *q = *p;
	size_t		max = batch_min((size_t) (end - q), TAG_MAX_BYTES);
	uint32_t	tag = (uint32_t) (q[0] & 0x7f) >> 3;
	unsigned	shift = 4;

	if ((q[0] & 0xf8) == 0)
		return false;
	*wire = q[0] & 7;
	if ((q[0] & 0x80) == 0)
	{
		*field = tag;
		*p = q + 1;
		return true;
	}
	for (size_t i = 1; i < max; i++)
	{
		tag |= (uint32_t) (q[i] & 0x7f) << shift;
		if ((q[i] & 0x80) == 0)
		{
			*field = tag;
			*p = q + i + 1;
			return true;
		}
		shift += 7;
	}
	return false;
}

/* Read a varint of at most 10 bytes at *p: false when it does not end in time. */
static inline bool
batch_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *value)
{
	const uint8_t *q = *p;
	size_t		max = batch_min((size_t) (end - q), TC_VARINT_MAX);
	uint64_t	v = 0;

	if (max > 0 && (q[0] & 0x80) == 0)
	{
		*value = q[0];
		*p = q + 1;
		return true;
	}
	for (size_t i = 0; i < max; i++)
	{
		v |= (uint64_t) (q[i] & 0x7f) << (7 * i);
		if ((q[i] & 0x80) == 0)
		{
			*value = v;
			*p = q + i + 1;
			return true;
		}
	}
	return false;
}

/*
 * Read a length prefix of at most 5 bytes at *p: false when it does not end
 * in time or claims more bytes than are left after it.
 */
static inline bool
batch_read_length(const uint8_t **p, const uint8_t *end, size_t *len)
{
	const uint8_t *q = *p;
	size_t		max = batch_min((size_t) (end - q), LENGTH_MAX_BYTES);
	uint64_t	v = 0;

	for (size_t i = 0; i < max; i++)
	{
		v |= (uint64_t) (q[i] & 0x7f) << (7 * i);
		if ((q[i] & 0x80) == 0)
		{
			if (v > (uint64_t) (end - (q + i + 1)))
				return false;
			*len = (size_t) v;
			*p = q + i + 1;
			return true;
		}
	}
	return false;
}

/* Step over an unknown field's value: false when malformed. */
static inline bool
batch_skip_field(unsigned wire, const uint8_t **p, const uint8_t *end)
{
	uint64_t	value;
	size_t		len;

	switch (wire)
	{
		case WIRE_VARINT:
			return batch_read_varint(p, end, &value);
		case WIRE_64BIT:
			if (end - *p < 8)
				return false;
			*p += 8;
			return true;
		case WIRE_LENGTH:
			if (!batch_read_length(p, end, &len))
				return false;
			*p += len;
			return true;
		case WIRE_32BIT:
			if (end - *p < 4)
				return false;
			*p += 4;
			return true;
		default:
			/* groups (3, 4) and the undefined 6 and 7 */
			return false;
	}
}

/*
 * Count the packed varints in [p, end) into *count: false when one does not
 * end before end or takes more than 10 bytes.  Each varint ends in exactly
 * one byte without the continuation bit.
 */
static inline bool
batch_count_packed_varints(const uint8_t *p, const uint8_t *end, size_t *count)
{
	size_t		run = 0;		/* continuation bytes in a row */
	size_t		n = 0;

	for (; p < end; p++)
	{
		if (*p & 0x80)
		{
			if (++run == TC_VARINT_MAX)
				return false;
		}
		else
		{
			run = 0;
			n++;
		}
	}
	if (run != 0)
		return false;
	*count += n;
	return true;
}

/*
 * Walk one Row's fields in [p, end), counting its elements into n and, when
 * fill, storing them at a's arrays from n's positions.  False when
 * malformed (the first pass only: the second walks checked bytes).
 */
static inline __attribute__((always_inline)) bool
batch_walk_row(const uint8_t *p, const uint8_t *end, BatchCounts *n,
			   BatchArrays *a, bool fill)
{
	while (p < end)
	{
		uint32_t	field;
		unsigned	wire;
		uint64_t	value;
		size_t		len;

		if (!batch_read_tag(&p, end, &field, &wire))
			return false;
		switch (field)
		{
			case ROW_INTS:
			case ROW_NULLS:
				if (wire == WIRE_VARINT)
				{
					if (!batch_read_varint(&p, end, &value))
						return false;
					if (fill && field == ROW_INTS)
						a->ints[n->ints] = tc_unzigzag64(value);
					else if (fill)
						a->nulls[n->nulls] = (uint32_t) value;
					if (field == ROW_INTS)
						n->ints++;
					else
						n->nulls++;
				}
				else if (wire == WIRE_LENGTH)
				{
					const uint8_t *packed_end;

					if (!batch_read_length(&p, end, &len))
						return false;
					packed_end = p + len;
					if (!fill)
					{
						if (!batch_count_packed_varints(p, packed_end,
														field == ROW_INTS ? &n->ints : &n->nulls))
							return false;
						p = packed_end;
					}
					else if (field == ROW_INTS)
					{
						while (p < packed_end)
						{
							if (!batch_read_varint(&p, packed_end, &value))
								return false;
							a->ints[n->ints++] = tc_unzigzag64(value);
						}
					}
					else
					{
						while (p < packed_end)
						{
							if (!batch_read_varint(&p, packed_end, &value))
								return false;
							a->nulls[n->nulls++] = (uint32_t) value;
						}
					}
				}
				else
					return false;
				break;
			case ROW_FLOATS:
				if (wire == WIRE_64BIT)
					len = 8;
				else if (wire == WIRE_LENGTH)
				{
					if (!batch_read_length(&p, end, &len) || len % 8 != 0)
						return false;
				}
				else
					return false;
				if ((size_t) (end - p) < len)
					return false;
				if (fill && len > 0)
					memcpy(a->floats + n->floats, p, len);
				n->floats += len / 8;
				p += len;
				break;
			case ROW_BLOBS:
				if (wire != WIRE_LENGTH || !batch_read_length(&p, end, &len))
					return false;
				if (fill)
				{
					a->blobs[n->blobs].data = len > 0 ? (uint8_t *) p : NULL;
					a->blobs[n->blobs].len = len;
				}
				n->blobs++;
				p += len;
				break;
			default:
				if (!batch_skip_field(wire, &p, end))
					return false;
				break;
		}
	}
	return true;
}

/*
 * Walk the WriteBatch in [p, end): seq and table_id into batch, rows as
 * batch_walk_row says.  False when malformed.
 */
static inline __attribute__((always_inline)) bool
batch_walk(const uint8_t *p, const uint8_t *end, Tcopy__WriteBatch *batch,
		   BatchCounts *n, BatchArrays *a, bool fill)
{
	while (p < end)
	{
		uint32_t	field;
		unsigned	wire;
		uint64_t	value;
		size_t		len;

		if (!batch_read_tag(&p, end, &field, &wire))
			return false;
		switch (field)
		{
			case BATCH_SEQ:
			case BATCH_TABLE_ID:
			case BATCH_KIND:
				if (wire != WIRE_VARINT || !batch_read_varint(&p, end, &value))
					return false;
				if (field == BATCH_SEQ)
					batch->seq = value;
				else if (field == BATCH_TABLE_ID)
					batch->table_id = (uint32_t) value;
				else
					batch->kind = (Tcopy__WriteKind) (int32_t) value;
				break;
			case BATCH_RECORDS:
				/* in place, as a blob; a later one replaces an earlier */
				if (wire != WIRE_LENGTH || !batch_read_length(&p, end, &len))
					return false;
				batch->records.data = len > 0 ? (uint8_t *) p : NULL;
				batch->records.len = len;
				p += len;
				break;
			case BATCH_ROWS:
				if (wire != WIRE_LENGTH || !batch_read_length(&p, end, &len))
					return false;
				if (!fill)
				{
					if (!batch_walk_row(p, p + len, n, a, false))
						return false;
				}
				else
				{
					Tcopy__Row *row = &a->row_structs[n->rows];
					BatchCounts start = *n;

					*row = batch_row_init;
					if (!batch_walk_row(p, p + len, n, a, true))
						return false;
					row->n_ints = n->ints - start.ints;
					row->ints = row->n_ints > 0 ? a->ints + start.ints : NULL;
					row->n_floats = n->floats - start.floats;
					row->floats = row->n_floats > 0 ? a->floats + start.floats : NULL;
					row->n_blobs = n->blobs - start.blobs;
					row->blobs = row->n_blobs > 0 ? a->blobs + start.blobs : NULL;
					row->n_nulls = n->nulls - start.nulls;
					row->nulls = row->n_nulls > 0 ? a->nulls + start.nulls : NULL;
					a->rows[n->rows] = row;
				}
				n->rows++;
				p += len;
				break;
			default:
				if (!batch_skip_field(wire, &p, end))
					return false;
				break;
		}
	}
	return true;
}

/* count elements of size bytes from allocator; NULL for none, or when refused */
static void *
batch_alloc(ProtobufCAllocator *allocator, size_t count, size_t size, bool *refused)
{
	void	   *mem;

	if (count == 0 || *refused)
		return NULL;
	mem = allocator->alloc(allocator->allocator_data, count * size);
	if (mem == NULL)
		*refused = true;
	return mem;
}

TsBatchDecodeResult
ts_batch_decode(const uint8_t *data, size_t len, ProtobufCAllocator *allocator,
				Tcopy__WriteBatch *batch)
{
	BatchCounts counts = {0};
	BatchCounts filled = {0};
	BatchArrays arrays = {0};
	bool		refused = false;

	tcopy__write_batch__init(batch);
	if (len == 0)
		return TS_BATCH_DECODE_OK;
	if (!batch_walk(data, data + len, batch, &counts, &arrays, false))
	{
		tcopy__write_batch__init(batch);
		return TS_BATCH_DECODE_MALFORMED;
	}
	if (counts.rows == 0)
		return TS_BATCH_DECODE_OK;

	/* counts are at most len each: no product overflows */
	arrays.rows = batch_alloc(allocator, counts.rows, sizeof(Tcopy__Row *), &refused);
	arrays.row_structs = batch_alloc(allocator, counts.rows, sizeof(Tcopy__Row), &refused);
	arrays.ints = batch_alloc(allocator, counts.ints, sizeof(int64_t), &refused);
	arrays.floats = batch_alloc(allocator, counts.floats, sizeof(double), &refused);
	arrays.blobs = batch_alloc(allocator, counts.blobs, sizeof(ProtobufCBinaryData), &refused);
	arrays.nulls = batch_alloc(allocator, counts.nulls, sizeof(uint32_t), &refused);
	if (refused)
	{
		tcopy__write_batch__init(batch);
		return TS_BATCH_DECODE_NO_MEMORY;
	}

	if (!batch_walk(data, data + len, batch, &filled, &arrays, true) ||
		memcmp(&filled, &counts, sizeof(counts)) != 0)
	{
		/* cannot happen: the first pass checked these very bytes */
		tcopy__write_batch__init(batch);
		return TS_BATCH_DECODE_MALFORMED;
	}
	batch->rows = arrays.rows;
	batch->n_rows = counts.rows;
	return TS_BATCH_DECODE_OK;
}
