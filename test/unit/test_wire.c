/*
 * test_wire.c
 *		Unit tests of tc_wire: a WriteBatch written by tc_wire is byte for
 *		byte what protobuf-c packs for the same Tcopy__WriteBatch (the
 *		reference), on edge values and on random rows; and protobuf-c reads
 *		it back.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "tc_wire.h"
#include "tcopy.pb-c.h"

#define MAX_COLS 40
#define MAX_ROWS 64

/* A row held both ways: tc_wire's description and protobuf-c's message. */
typedef struct TestRow
{
	int64_t		ints[MAX_COLS];
	double		floats[MAX_COLS];
	TcWireBlob	blobs[MAX_COLS];
	uint32_t	nulls[MAX_COLS];
	uint8_t		bytes[MAX_COLS][300];	/* blob data, padding included */
	ProtobufCBinaryData pb_blobs[MAX_COLS];
	TcWireRow	wire;
	Tcopy__Row	pb;
} TestRow;

/* Fill row with random columns: each a null, an int, a float or a blob. */
static void
random_row(TestRow *row)
{
	int			ncols = (int) (tc_test_rng() % MAX_COLS);

	memset(&row->wire, 0, sizeof(row->wire));
	tcopy__row__init(&row->pb);
	row->wire.ints = row->ints;
	row->wire.floats = row->floats;
	row->wire.blobs = row->blobs;
	row->wire.nulls = row->nulls;
	for (int c = 0; c < ncols; c++)
	{
		switch (tc_test_rng() % 4)
		{
			case 0:
				row->nulls[row->wire.n_nulls++] = (uint32_t) c;
				break;
			case 1:
				row->ints[row->wire.n_ints++] = tc_test_random_int64();
				break;
			case 2:
				row->floats[row->wire.n_floats++] = tc_test_random_double();
				break;
			default:
				{
					uint32_t	i = row->wire.n_blobs++;
					uint32_t	len = (uint32_t) (tc_test_rng() % 3 == 0 ? tc_test_rng() % 200 : tc_test_rng() % 8);
					uint32_t	pad = (uint32_t) (tc_test_rng() % 3 == 0 ? tc_test_rng() % 90 : 0);

					for (uint32_t b = 0; b < len; b++)
						row->bytes[i][b] = (uint8_t) tc_test_rng();
					memset(row->bytes[i] + len, ' ', pad);
					row->blobs[i].data = row->bytes[i];
					row->blobs[i].len = len;
					row->blobs[i].pad = pad;
					row->pb_blobs[i].data = row->bytes[i];
					row->pb_blobs[i].len = len + pad;
					break;
				}
		}
	}
	row->pb.ints = row->ints;
	row->pb.n_ints = row->wire.n_ints;
	row->pb.floats = row->floats;
	row->pb.n_floats = row->wire.n_floats;
	row->pb.blobs = row->pb_blobs;
	row->pb.n_blobs = row->wire.n_blobs;
	row->pb.nulls = row->nulls;
	row->pb.n_nulls = row->wire.n_nulls;
}

/* Write rows[n] with tc_wire into buf; returns the batch's start. */
static uint8_t *
wire_batch(TestRow *rows, size_t n, uint64_t seq, uint32_t table_id,
		   uint8_t *buf, size_t *len)
{
	uint8_t    *start = buf + TC_WIRE_BATCH_HEADER_MAX;
	uint8_t    *out = start;
	uint8_t    *head;
	int			bound_ok = 1;

	for (size_t i = 0; i < n; i++)
	{
		uint8_t    *end = tc_wire_put_row(out, &rows[i].wire);

		if ((size_t) (end - out) > tc_wire_row_bound(&rows[i].wire))
			bound_ok = 0;
		out = end;
	}
	CHECK(bound_ok);
	head = tc_wire_put_batch_header(start, seq, table_id, 0);
	CHECK(head >= buf);
	*len = (size_t) (out - head);
	return head;
}

static void
check_same_bytes(TestRow *rows, size_t n, uint64_t seq, uint32_t table_id)
{
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	Tcopy__Row *pb_rows[MAX_ROWS];
	size_t		pb_len,
				wire_len;
	uint8_t    *pb_buf,
			   *wire_buf,
			   *wire;
	Tcopy__WriteBatch *back;

	for (size_t i = 0; i < n; i++)
		pb_rows[i] = &rows[i].pb;
	batch.seq = seq;
	batch.table_id = table_id;
	batch.rows = pb_rows;
	batch.n_rows = n;
	pb_len = tcopy__write_batch__get_packed_size(&batch);
	pb_buf = malloc(pb_len + 1);
	wire_buf = malloc(pb_len + 1024 + TC_WIRE_BATCH_HEADER_MAX + MAX_ROWS * 64 * 1024);
	REQUIRE(pb_buf != NULL && wire_buf != NULL);
	CHECK_EQ_UINT(tcopy__write_batch__pack(&batch, pb_buf), pb_len);
	wire = wire_batch(rows, n, seq, table_id, wire_buf, &wire_len);
	CHECK_MEM(wire, wire_len, pb_buf, pb_len);

	back = tcopy__write_batch__unpack(NULL, wire_len, wire);
	CHECK(back != NULL);
	if (back != NULL)
	{
		CHECK_EQ_UINT(back->n_rows, n);
		CHECK_EQ_UINT(back->seq, seq);
		tcopy__write_batch__free_unpacked(back, NULL);
	}
	free(pb_buf);
	free(wire_buf);
}

/* an empty batch, and header values around varint boundaries */
static void
test_headers(void)
{
	static const uint64_t seqs[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX};
	static const uint32_t ids[] = {0, 1, 127, 128, UINT32_MAX};
	TestRow    *row = calloc(1, sizeof(TestRow));

	REQUIRE(row != NULL);
	for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++)
		for (size_t t = 0; t < sizeof(ids) / sizeof(ids[0]); t++)
			check_same_bytes(row, 0, seqs[s], ids[t]);
	/* a row with no column at all is an empty Row message */
	memset(&row->wire, 0, sizeof(row->wire));
	tcopy__row__init(&row->pb);
	check_same_bytes(row, 1, 7, 3);
	free(row);
}

/* a long blob: its length varint takes several bytes, as does the row's */
static void
test_long_blob(void)
{
	TestRow    *row = calloc(1, sizeof(TestRow));
	static uint8_t big[70000];

	REQUIRE(row != NULL);
	memset(big, 'x', sizeof(big));
	tcopy__row__init(&row->pb);
	row->wire.blobs = row->blobs;
	row->blobs[0].data = big;
	row->blobs[0].len = sizeof(big) - 100;
	row->blobs[0].pad = 100;	/* big ends in 100 'x', the pb side in blanks */
	memset(big + sizeof(big) - 100, ' ', 100);
	row->wire.n_blobs = 1;
	row->pb_blobs[0].data = big;
	row->pb_blobs[0].len = sizeof(big);
	row->pb.blobs = row->pb_blobs;
	row->pb.n_blobs = 1;
	check_same_bytes(row, 1, 1, 1);
	free(row);
}

/* random batches of random rows */
static void
test_random_batches(void)
{
	TestRow    *rows = calloc(MAX_ROWS, sizeof(TestRow));

	REQUIRE(rows != NULL);
	for (int round = 0; round < 500; round++)
	{
		size_t		n = (size_t) (tc_test_rng() % MAX_ROWS) + 1;

		for (size_t i = 0; i < n; i++)
			random_row(&rows[i]);
		check_same_bytes(rows, n, tc_test_rng() % 100000, (uint32_t) (tc_test_rng() % 70000));
	}
	free(rows);
}

int
main(void)
{
	TC_RUN(test_headers);
	TC_RUN(test_long_blob);
	TC_RUN(test_random_batches);
	return tc_test_summary();
}
