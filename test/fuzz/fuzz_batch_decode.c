/*
 * fuzz_batch_decode.c
 *		Differential libFuzzer harness: the tserver's WriteBatch decoder
 *		(ts_batch_decode) against protobuf-c's tcopy__write_batch__unpack.
 *
 * An input is a WriteBatch payload, as a WRITE frame carries it.  Both
 * decoders read it from a buffer of exactly its size (a read past it is an
 * ASan report); they must agree on whether it is well-formed and, when it
 * is, on every value: seq, table_id, the rows, each row's ints, floats
 * (bit for bit), blobs and nulls, and which arrays and blobs are NULL.
 * Any disagreement aborts, printing where.
 *
 * The same input is then decoded once more with an allocator that refuses
 * past a few bytes per byte of input, so that the paths where the decode
 * budget runs out are run too: the result must then be a refusal with an
 * empty batch, or the same success as before.
 *
 * Build: make -C src/tserver fuzz (clang, ASan + UBSan; build-fuzz/).
 * Seeds: test/fuzz/corpus_batch, made by test/fuzz/make_corpus.pl --batch.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc_arena.h"
#include "ts_batch_decode.h"

#define FUZZ_REFUSE_FACTOR 6	/* bytes the refusing allocator grants per input byte */

static TcArena fuzz_arena;

/* An allocator over fuzz_arena granting at most limit bytes in all. */
typedef struct FuzzLimit
{
	size_t		limit;
	size_t		used;
} FuzzLimit;

static void *
fuzz_limited_alloc(void *ctx, size_t size)
{
	FuzzLimit  *limit = ctx;

	if (size > limit->limit - limit->used)
		return NULL;
	limit->used += size;
	return tc_arena_alloc(&fuzz_arena, size);
}

static void
fuzz_limited_free(void *ctx, void *ptr)
{
	(void) ctx;
	(void) ptr;
}

static void fuzz_fail(const char *what, size_t row) __attribute__((noreturn));

static void
fuzz_fail(const char *what, size_t row)
{
	fprintf(stderr, "fuzz_batch_decode: decoders disagree: %s (row %zu)\n", what, row);
	abort();
}

/* Both arrays NULL, or both non-NULL with n equal elements of size bytes. */
static bool
fuzz_same_array(const void *a, const void *b, size_t n, size_t size)
{
	if ((a == NULL) != (b == NULL))
		return false;
	return n == 0 || memcmp(a, b, n * size) == 0;
}

/* Abort unless ours holds what protobuf-c's reference holds. */
static void
fuzz_compare(const Tcopy__WriteBatch *ref, const Tcopy__WriteBatch *ours)
{
	if (ref->seq != ours->seq)
		fuzz_fail("seq", 0);
	if (ref->table_id != ours->table_id)
		fuzz_fail("table_id", 0);
	if (ref->kind != ours->kind)
		fuzz_fail("kind", 0);
	if (ref->records.len != ours->records.len ||
		!fuzz_same_array(ref->records.data, ours->records.data, ref->records.len, 1))
		fuzz_fail("records", 0);
	if (ref->n_rows != ours->n_rows || (ref->rows == NULL) != (ours->rows == NULL))
		fuzz_fail("number of rows", 0);
	for (size_t i = 0; i < ref->n_rows; i++)
	{
		const Tcopy__Row *a = ref->rows[i];
		const Tcopy__Row *b = ours->rows[i];

		if (b->base.descriptor != &tcopy__row__descriptor)
			fuzz_fail("row not initialised as a Tcopy__Row", i);
		if (a->n_ints != b->n_ints || !fuzz_same_array(a->ints, b->ints, a->n_ints, sizeof(int64_t)))
			fuzz_fail("ints", i);
		if (a->n_floats != b->n_floats ||
			!fuzz_same_array(a->floats, b->floats, a->n_floats, sizeof(double)))
			fuzz_fail("floats", i);
		if (a->n_nulls != b->n_nulls ||
			!fuzz_same_array(a->nulls, b->nulls, a->n_nulls, sizeof(uint32_t)))
			fuzz_fail("nulls", i);
		if (a->n_blobs != b->n_blobs || (a->blobs == NULL) != (b->blobs == NULL))
			fuzz_fail("number of blobs", i);
		for (size_t j = 0; j < a->n_blobs; j++)
		{
			if (!fuzz_same_array(a->blobs[j].data, b->blobs[j].data, a->blobs[j].len, 1) ||
				a->blobs[j].len != b->blobs[j].len)
				fuzz_fail("blob", i);
		}
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	tc_arena_init(&fuzz_arena, 64 * 1024);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *payload = malloc(size > 0 ? size : 1);
	Tcopy__WriteBatch *ref;
	Tcopy__WriteBatch ours;
	Tcopy__WriteBatch limited;
	TsBatchDecodeResult rc;
	FuzzLimit	limit = {size * FUZZ_REFUSE_FACTOR, 0};
	ProtobufCAllocator limited_allocator = {fuzz_limited_alloc, fuzz_limited_free, &limit};

	if (payload == NULL)
		abort();
	memcpy(payload, data, size);

	ref = tcopy__write_batch__unpack(NULL, size, payload);
	rc = ts_batch_decode(payload, size, tc_arena_allocator(&fuzz_arena), &ours);
	if (rc == TS_BATCH_DECODE_NO_MEMORY)
		fuzz_fail("the unlimited allocator refused", 0);
	if ((ref != NULL) != (rc == TS_BATCH_DECODE_OK))
		fuzz_fail(ref != NULL ? "only protobuf-c accepts the input" :
				  "only ts_batch_decode accepts the input", 0);
	if (ref != NULL)
		fuzz_compare(ref, &ours);

	/* the same, with too little memory for most inputs */
	rc = ts_batch_decode(payload, size, &limited_allocator, &limited);
	if (rc == TS_BATCH_DECODE_OK)
	{
		if (ref == NULL)
			fuzz_fail("a refusing allocator made the input acceptable", 0);
		fuzz_compare(ref, &limited);
	}
	else if (rc == TS_BATCH_DECODE_NO_MEMORY)
	{
		if (ref == NULL)
			fuzz_fail("a malformed input asked for memory", 0);
		if (limited.n_rows != 0 || limited.rows != NULL || limited.seq != 0)
			fuzz_fail("a refused decode left values in the batch", 0);
	}
	else if (ref != NULL)
		fuzz_fail("a refusing allocator made the input malformed", 0);

	if (ref != NULL)
		tcopy__write_batch__free_unpacked(ref, NULL);
	tc_arena_reset(&fuzz_arena);
	free(payload);
	return 0;
}
