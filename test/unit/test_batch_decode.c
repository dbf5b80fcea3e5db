/*
 * test_batch_decode.c
 *		Unit tests of ts_batch_decode: on batches protobuf-c packs (random
 *		rows, edge values, empty rows and blobs) and on hand-made encodings
 *		a proto3 parser accepts (unpacked repeated numbers, fields out of
 *		order, unknown fields, repeated scalars), it decodes what
 *		tcopy__write_batch__unpack decodes, field by field; it refuses what
 *		protobuf-c refuses; it keeps blobs in the input; and it asks for
 *		memory only after checking the input, in bounded amounts.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_arena.h"
#include "tc_test.h"
#include "ts_batch_decode.h"

#define MAX_COLS 40
#define MAX_ROWS 64

static TcArena arena;

/* Storage of one random row as protobuf-c's message. */
typedef struct TestRow
{
	int64_t		ints[MAX_COLS];
	double		floats[MAX_COLS];
	uint32_t	nulls[MAX_COLS];
	uint8_t		bytes[MAX_COLS][200];
	ProtobufCBinaryData blobs[MAX_COLS];
	Tcopy__Row	pb;
} TestRow;

/* Fill row with random columns, a fifth of rows empty; blobs often empty. */
static void
random_row(TestRow *row)
{
	int			ncols = tc_test_rng() % 5 == 0 ? 0 : (int) (tc_test_rng() % MAX_COLS);

	tcopy__row__init(&row->pb);
	row->pb.ints = row->ints;
	row->pb.floats = row->floats;
	row->pb.blobs = row->blobs;
	row->pb.nulls = row->nulls;
	for (int c = 0; c < ncols; c++)
	{
		switch (tc_test_rng() % 4)
		{
			case 0:
				row->nulls[row->pb.n_nulls++] = tc_test_rng() % 8 == 0 ? UINT32_MAX : (uint32_t) c;
				break;
			case 1:
				row->ints[row->pb.n_ints++] = tc_test_random_int64();
				break;
			case 2:
				row->floats[row->pb.n_floats++] = tc_test_random_double();
				break;
			default:
				{
					size_t		i = row->pb.n_blobs++;
					size_t		len = tc_test_rng() % 3 == 0 ? 0 : (size_t) (tc_test_rng() % 200);

					for (size_t b = 0; b < len; b++)
						row->bytes[i][b] = (uint8_t) tc_test_rng();
					row->blobs[i].data = len > 0 ? row->bytes[i] : NULL;
					row->blobs[i].len = len;
					break;
				}
		}
	}
}

/* Check that ours holds, field by field, what protobuf-c's ref holds. */
static void
check_same_batch(const Tcopy__WriteBatch *ref, const Tcopy__WriteBatch *ours)
{
	CHECK_EQ_UINT(ours->base.descriptor == &tcopy__write_batch__descriptor, 1);
	CHECK_EQ_UINT(ours->seq, ref->seq);
	CHECK_EQ_UINT(ours->table_id, ref->table_id);
	CHECK_EQ_UINT(ours->kind, ref->kind);
	CHECK_EQ_UINT(ours->records.data == NULL, ref->records.data == NULL);
	CHECK_MEM(ours->records.data, ours->records.len, ref->records.data, ref->records.len);
	REQUIRE(ours->n_rows == ref->n_rows);
	CHECK_EQ_UINT(ours->rows == NULL, ref->rows == NULL);
	for (size_t i = 0; i < ref->n_rows; i++)
	{
		const Tcopy__Row *a = ref->rows[i];
		const Tcopy__Row *b = ours->rows[i];

		CHECK(b->base.descriptor == &tcopy__row__descriptor);
		CHECK_EQ_UINT(b->base.n_unknown_fields, 0);
		CHECK_EQ_UINT(b->n_ints, a->n_ints);
		CHECK_EQ_UINT(b->n_floats, a->n_floats);
		CHECK_EQ_UINT(b->n_blobs, a->n_blobs);
		CHECK_EQ_UINT(b->n_nulls, a->n_nulls);
		if (b->n_ints != a->n_ints || b->n_floats != a->n_floats ||
			b->n_blobs != a->n_blobs || b->n_nulls != a->n_nulls)
			return;
		CHECK_EQ_UINT(b->ints == NULL, a->ints == NULL);
		CHECK_EQ_UINT(b->floats == NULL, a->floats == NULL);
		CHECK_EQ_UINT(b->blobs == NULL, a->blobs == NULL);
		CHECK_EQ_UINT(b->nulls == NULL, a->nulls == NULL);
		CHECK_MEM(b->ints, b->n_ints * 8, a->ints, a->n_ints * 8);
		/* bit for bit: NaN payloads and -0 included */
		CHECK_MEM(b->floats, b->n_floats * 8, a->floats, a->n_floats * 8);
		CHECK_MEM(b->nulls, b->n_nulls * 4, a->nulls, a->n_nulls * 4);
		for (size_t j = 0; j < a->n_blobs; j++)
		{
			CHECK_EQ_UINT(b->blobs[j].data == NULL, a->blobs[j].data == NULL);
			CHECK_MEM(b->blobs[j].data, b->blobs[j].len, a->blobs[j].data, a->blobs[j].len);
		}
	}
}

/*
 * Decode bytes[len] with both decoders and compare; returns whether they
 * accepted it (after checking that they agree).  The batch stays in the
 * arena until the next reset.
 */
static int
decode_both(const uint8_t *bytes, size_t len, Tcopy__WriteBatch *ours)
{
	Tcopy__WriteBatch *ref = tcopy__write_batch__unpack(NULL, len, bytes);
	TsBatchDecodeResult rc = ts_batch_decode(bytes, len, tc_arena_allocator(&arena), ours);

	CHECK_EQ_INT(rc == TS_BATCH_DECODE_OK, ref != NULL);
	CHECK(rc != TS_BATCH_DECODE_NO_MEMORY);
	if (ref == NULL || rc != TS_BATCH_DECODE_OK)
	{
		if (ref != NULL)
			tcopy__write_batch__free_unpacked(ref, NULL);
		return 0;
	}
	check_same_batch(ref, ours);
	tcopy__write_batch__free_unpacked(ref, NULL);
	return 1;
}

/* random batches packed by protobuf-c */
static void
test_random_batches(void)
{
	TestRow    *rows = calloc(MAX_ROWS, sizeof(TestRow));
	Tcopy__Row *pointers[MAX_ROWS];
	uint8_t		records[300];

	REQUIRE(rows != NULL);
	for (int round = 0; round < 1000; round++)
	{
		Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
		Tcopy__WriteBatch ours;
		size_t		n = (size_t) (tc_test_rng() % MAX_ROWS);
		size_t		len;
		uint8_t    *buf;

		for (size_t i = 0; i < n; i++)
		{
			random_row(&rows[i]);
			pointers[i] = &rows[i].pb;
		}
		batch.seq = tc_test_rng() % 4 == 0 ? UINT64_MAX - tc_test_rng() % 3 : tc_test_rng() % 100000;
		batch.table_id = tc_test_rng() % 4 == 0 ? UINT32_MAX : (uint32_t) (tc_test_rng() % 70000);
		batch.rows = n > 0 ? pointers : NULL;
		batch.n_rows = n;
		/* records: bytes of any value, as the decoder does not look in */
		if (tc_test_rng() % 3 == 0)
		{
			batch.records.len = (size_t) (tc_test_rng() % sizeof(records));
			for (size_t i = 0; i < batch.records.len; i++)
				records[i] = (uint8_t) tc_test_rng();
			batch.records.data = batch.records.len > 0 ? records : NULL;
		}
		len = tcopy__write_batch__get_packed_size(&batch);
		buf = malloc(len + 1);
		REQUIRE(buf != NULL);
		CHECK_EQ_UINT(tcopy__write_batch__pack(&batch, buf), len);
		CHECK(decode_both(buf, len, &ours));
		CHECK_EQ_UINT(ours.n_rows, n);
		free(buf);
		tc_arena_reset(&arena);
	}
	free(rows);
}

/* Append a varint; returns the end. */
static uint8_t *
put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80)
	{
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

static uint8_t *
put_tag(uint8_t *p, uint32_t field, unsigned wire)
{
	return put_varint(p, ((uint64_t) field << 3) | wire);
}

static uint8_t *
put_bytes(uint8_t *p, uint32_t field, const void *data, size_t len)
{
	p = put_tag(p, field, 2);
	p = put_varint(p, len);
	memcpy(p, data, len);
	return p + len;
}

static uint64_t
zigzag(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

/*
 * A hand-made batch in the encodings protobuf-c never writes but accepts:
 * unpacked and packed ints, floats and nulls mixed, fields out of order,
 * unknown fields of each wire type at both levels, seq and table_id twice.
 */
static void
test_hand_made(void)
{
	uint8_t		buf[512];
	uint8_t		row[256];
	uint8_t    *p = buf;
	uint8_t    *r = row;
	uint8_t		packed[32];
	uint8_t    *q = packed;
	double		f = 2.5,
				g = -0.0;
	Tcopy__WriteBatch ours;
	const Tcopy__Row *out;

	/* row: int -5 unpacked, float 2.5 unpacked, nulls 3 then packed {1, 300} */
	r = put_tag(r, 1, 0);
	r = put_varint(r, zigzag(-5));
	r = put_tag(r, 9, 5);		/* unknown 32-bit */
	memcpy(r, "abcd", 4);
	r += 4;
	r = put_tag(r, 2, 1);
	memcpy(r, &f, 8);
	r += 8;
	r = put_bytes(r, 3, "blob", 4);
	r = put_tag(r, 4, 0);
	r = put_varint(r, 3);
	q = put_varint(q, 1);
	q = put_varint(q, 300);
	r = put_bytes(r, 4, packed, (size_t) (q - packed));
	q = packed;
	q = put_varint(q, zigzag(INT64_MIN));
	q = put_varint(q, zigzag(7));
	r = put_bytes(r, 1, packed, (size_t) (q - packed));	/* packed after unpacked */
	r = put_tag(r, 10, 1);		/* unknown 64-bit */
	memcpy(r, "12345678", 8);
	r += 8;
	r = put_bytes(r, 2, &g, 8);	/* packed float after an unpacked one */
	r = put_bytes(r, 3, "", 0);
	r = put_tag(r, 11, 0);		/* unknown varint */
	r = put_varint(r, UINT64_MAX);
	r = put_bytes(r, 12, "unknown", 7);

	/* batch: a row before seq, seq twice, table_id twice, unknown fields */
	p = put_bytes(p, 3, row, (size_t) (r - row));
	p = put_tag(p, 2, 0);
	p = put_varint(p, 77);
	p = put_tag(p, 1, 0);
	p = put_varint(p, 1);
	p = put_bytes(p, 15, "skip me", 7);
	p = put_tag(p, 100, 5);
	memcpy(p, "wxyz", 4);
	p += 4;
	p = put_bytes(p, 3, "", 0);	/* an empty row */
	p = put_tag(p, 1, 0);
	p = put_varint(p, 42);		/* the later seq wins */
	p = put_tag(p, 2, 0);
	p = put_varint(p, 0x100000003ull);	/* uint32: the low 32 bits */
	p = put_tag(p, 1000, 1);
	memcpy(p, "87654321", 8);
	p += 8;

	REQUIRE(decode_both(buf, (size_t) (p - buf), &ours));
	CHECK_EQ_UINT(ours.seq, 42);
	CHECK_EQ_UINT(ours.table_id, 3);
	REQUIRE(ours.n_rows == 2);
	out = ours.rows[0];
	REQUIRE(out->n_ints == 3 && out->n_floats == 2 && out->n_blobs == 2 && out->n_nulls == 3);
	CHECK_EQ_INT(out->ints[0], -5);
	CHECK_EQ_INT(out->ints[1], INT64_MIN);
	CHECK_EQ_INT(out->ints[2], 7);
	CHECK(out->floats[0] == 2.5);
	CHECK(out->floats[1] == 0.0 && signbit(out->floats[1]));
	CHECK_MEM(out->blobs[0].data, out->blobs[0].len, "blob", 4);
	CHECK(out->blobs[1].len == 0 && out->blobs[1].data == NULL);
	CHECK_EQ_UINT(out->nulls[0], 3);
	CHECK_EQ_UINT(out->nulls[1], 1);
	CHECK_EQ_UINT(out->nulls[2], 300);
	/* zero copy: the blob is the input's bytes */
	CHECK(out->blobs[0].data > buf && out->blobs[0].data < p);
	out = ours.rows[1];
	CHECK(out->n_ints == 0 && out->ints == NULL && out->n_blobs == 0 && out->blobs == NULL);
	tc_arena_reset(&arena);
}

/* varints and tags at their limits, as protobuf-c reads them */
static void
test_long_encodings(void)
{
	static const uint8_t accepted[][16] = {
		/* length, bytes... */
		{11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},	/* 10-byte seq */
		{11, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},	/* 10-byte table_id */
		{6, 0x88, 0x80, 0x80, 0x80, 0x00, 0x05},	/* seq under a 5-byte tag */
		{3, 0x80, 0x00, 0x05},	/* a tag of 0, but not in one byte: unknown */
		{6, 0xf8, 0xff, 0xff, 0xff, 0x7f, 0x05},	/* the largest tag: unknown */
		{6, 0x1a, 0x80, 0x80, 0x80, 0x80, 0x00},	/* an empty row under a 5-byte length */
		{9, 0x1a, 0x07, 0x22, 0x05, 0xff, 0xff, 0xff, 0xff, 0x7f},	/* null past 32 bits */
		{15, 0x1a, 0x0d, 0x0a, 0x0b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x02},
	};
	static const uint8_t refused[][16] = {
		{2, 0x00, 0x00},		/* tag 0 in one byte */
		{7, 0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x05},	/* a 6-byte tag */
		{12, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},	/* 11-byte varint */
		{6, 0x1a, 0x80, 0x80, 0x80, 0x80, 0x10},	/* length 2^32 */
		{7, 0x1a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},	/* a 6-byte length */
		{3, 0x1a, 0x05, 0x00},	/* a row longer than what is left */
		{1, 0x2b},				/* start group */
		{1, 0x2c},				/* end group */
		{1, 0x2e},				/* wire type 6 */
		{1, 0x2f},				/* wire type 7 */
		{4, 0x2d, 1, 2, 3},		/* 32-bit field cut short */
		{8, 0x29, 1, 2, 3, 4, 5, 6, 7},	/* 64-bit field cut short */
		{2, 0x0a, 0x00},		/* seq, length-delimited */
		{5, 0x0d, 0, 0, 0, 0},	/* seq, 32-bit */
		{2, 0x18, 0x00},		/* rows, varint */
		{11, 0x1a, 0x09, 0x12, 0x07, 1, 2, 3, 4, 5, 6, 7},	/* packed floats, 7 bytes */
		{7, 0x1a, 0x05, 0x15, 1, 2, 3, 4},	/* a float, 32-bit */
		{6, 0x1a, 0x04, 0x0a, 0x02, 0x01, 0x81},	/* packed ints cut in a varint */
		{15, 0x1a, 0x0d, 0x0a, 0x0b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
		{4, 0x1a, 0x02, 0x18, 0x00},	/* a blob, varint */
		{4, 0x1a, 0x02, 0x00, 0x00},	/* tag 0 in a row */
		{4, 0x1a, 0x02, 0x09, 0x00},	/* an int, 64-bit */
		{4, 0x1a, 0x02, 0x21, 0x00},	/* a null, 64-bit, cut short */
	};
	Tcopy__WriteBatch ours;

	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++)
		CHECK_EQ_INT(decode_both(accepted[i] + 1, accepted[i][0], &ours), 1);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
	{
		CHECK_EQ_INT(decode_both(refused[i] + 1, refused[i][0], &ours), 0);
		CHECK(ours.n_rows == 0 && ours.rows == NULL && ours.seq == 0);
	}
	tc_arena_reset(&arena);
}

/* An allocator that counts requests and grants up to limit bytes. */
typedef struct CountingAllocator
{
	size_t		limit;
	size_t		granted;
	int			calls;
} CountingAllocator;

static void *
counting_alloc(void *ctx, size_t size)
{
	CountingAllocator *counter = ctx;

	counter->calls++;
	if (size > counter->limit - counter->granted)
		return NULL;
	counter->granted += size;
	return tc_arena_alloc(&arena, size);
}

static void
counting_free(void *ctx, void *ptr)
{
	(void) ctx;
	(void) ptr;
}

/*
 * Memory: nothing is asked for before the input is known to be good, a
 * refusal leaves an empty batch, and the arrays of the worst input (empty
 * rows, 2 bytes each) stay within 48 bytes per input byte.
 */
static void
test_memory(void)
{
	size_t		nrows = 100000;
	uint8_t    *buf = malloc(2 * nrows + 16);
	CountingAllocator counter = {SIZE_MAX, 0, 0};
	ProtobufCAllocator allocator = {counting_alloc, counting_free, &counter};
	Tcopy__WriteBatch ours;
	size_t		len;

	REQUIRE(buf != NULL);
	for (size_t i = 0; i < nrows; i++)
	{
		buf[2 * i] = 0x1a;
		buf[2 * i + 1] = 0x00;
	}
	len = 2 * nrows;
	CHECK_EQ_INT(ts_batch_decode(buf, len, &allocator, &ours), TS_BATCH_DECODE_OK);
	CHECK_EQ_UINT(ours.n_rows, nrows);
	CHECK_EQ_INT(counter.calls, 2);	/* the row pointers and the Row structs */
	CHECK(counter.granted <= 48 * len);
	tc_arena_reset(&arena);

	/* the same rows, then a truncated one: refused before any allocation */
	buf[len] = 0x1a;
	buf[len + 1] = 0x7f;
	counter = (CountingAllocator) {SIZE_MAX, 0, 0};
	CHECK_EQ_INT(ts_batch_decode(buf, len + 2, &allocator, &ours), TS_BATCH_DECODE_MALFORMED);
	CHECK_EQ_INT(counter.calls, 0);

	/* too little memory: refused, and nothing is left in the batch */
	counter = (CountingAllocator) {len, 0, 0};
	CHECK_EQ_INT(ts_batch_decode(buf, len, &allocator, &ours), TS_BATCH_DECODE_NO_MEMORY);
	CHECK(ours.n_rows == 0 && ours.rows == NULL);
	tc_arena_reset(&arena);
	free(buf);
}

int
main(void)
{
	tc_arena_init(&arena, 256 * 1024);
	TC_RUN(test_random_batches);
	TC_RUN(test_hand_made);
	TC_RUN(test_long_encodings);
	TC_RUN(test_memory);
	tc_arena_free(&arena);
	return tc_test_summary();
}
