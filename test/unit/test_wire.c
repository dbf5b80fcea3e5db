/*
 * test_wire.c
 *		Unit tests of tc_wire: a WriteBatch's header written by
 *		tc_wire_put_batch_header, followed by its records, is byte for byte
 *		what protobuf-c packs for the same Tcopy__WriteBatch (the
 *		reference), around every varint boundary and on random records;
 *		and protobuf-c reads it back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "tc_wire.h"
#include "tcopy.pb-c.h"

static void
check_same_bytes(uint64_t seq, uint32_t table_id, int kind, const uint8_t *records,
				 size_t records_len)
{
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	size_t		pb_len;
	uint8_t    *pb_buf,
			   *wire_buf,
			   *head;
	Tcopy__WriteBatch *back;

	batch.seq = seq;
	batch.table_id = table_id;
	batch.kind = (Tcopy__WriteKind) kind;
	batch.records.data = (uint8_t *) records;
	batch.records.len = records_len;
	pb_len = tcopy__write_batch__get_packed_size(&batch);
	pb_buf = malloc(pb_len + 1);
	wire_buf = malloc(TC_WIRE_BATCH_HEADER_MAX + records_len + 1);
	REQUIRE(pb_buf != NULL && wire_buf != NULL);
	CHECK_EQ_UINT(tcopy__write_batch__pack(&batch, pb_buf), pb_len);
	if (records_len > 0)
		memcpy(wire_buf + TC_WIRE_BATCH_HEADER_MAX, records, records_len);
	head = tc_wire_put_batch_header(wire_buf + TC_WIRE_BATCH_HEADER_MAX, seq, table_id, kind,
									records_len);
	CHECK(head >= wire_buf);
	CHECK_MEM(head, (size_t) (wire_buf + TC_WIRE_BATCH_HEADER_MAX + records_len - head),
			  pb_buf, pb_len);

	back = tcopy__write_batch__unpack(NULL, pb_len, head);
	CHECK(back != NULL);
	if (back != NULL)
	{
		CHECK_EQ_UINT(back->seq, seq);
		CHECK_EQ_UINT(back->table_id, table_id);
		CHECK_EQ_UINT(back->kind, kind);
		CHECK_MEM(back->records.data, back->records.len, records, records_len);
		tcopy__write_batch__free_unpacked(back, NULL);
	}
	free(pb_buf);
	free(wire_buf);
}

/* header values and record lengths around varint boundaries */
static void
test_headers(void)
{
	static const uint64_t seqs[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX};
	static const uint32_t ids[] = {0, 1, 127, 128, UINT32_MAX};
	static const size_t lens[] = {0, 1, 127, 128, 16383, 16384, 2097152};
	uint8_t    *records = malloc(2097152);

	REQUIRE(records != NULL);
	for (size_t i = 0; i < 2097152; i++)
		records[i] = (uint8_t) (i * 31);
	for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++)
		for (size_t t = 0; t < sizeof(ids) / sizeof(ids[0]); t++)
			for (int kind = 0; kind < 3; kind++)
				check_same_bytes(seqs[s], ids[t], kind, records, 3);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		check_same_bytes(UINT64_MAX, UINT32_MAX, 2, records, lens[l]);
	free(records);
}

/* random headers and records */
static void
test_random(void)
{
	uint8_t		records[4096];

	for (int round = 0; round < 500; round++)
	{
		size_t		len = (size_t) (tc_test_rng() % sizeof(records));

		for (size_t i = 0; i < len; i++)
			records[i] = (uint8_t) tc_test_rng();
		check_same_bytes(tc_test_rng() >> (tc_test_rng() % 64),
						 (uint32_t) (tc_test_rng() % 70000), (int) (tc_test_rng() % 3),
						 records, len);
	}
}

int
main(void)
{
	TC_RUN(test_headers);
	TC_RUN(test_random);
	return tc_test_summary();
}
