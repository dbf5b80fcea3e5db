/*
 * test_arena.c
 *		Unit tests of tc_arena: alignment, large requests, block reuse across
 *		resets, accounting, and use as protobuf-c's allocator.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_arena.h"
#include "tc_test.h"
#include "tcopy.pb-c.h"

/*
 * Let the sanitizer build see malloc fail (return NULL) for impossible
 * sizes instead of aborting, as the arena's contract is written for.
 */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

/* A deterministic generator, so that a pattern can be replayed exactly. */
static uint64_t
next_random(uint64_t *state)
{
	uint64_t	x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static void
test_min_block_size(void)
{
	TcArena		arena;

	tc_arena_init(&arena, 16);
	CHECK(arena.block_size >= 4096);
	CHECK_EQ_UINT(arena.used_bytes, 0);
	CHECK_EQ_UINT(arena.reserved_bytes, 0);
	CHECK_EQ_UINT(arena.block_mallocs, 0);
	tc_arena_free(&arena);

	tc_arena_init(&arena, 1 << 20);
	CHECK_EQ_UINT(arena.block_size, 1 << 20);
	tc_arena_free(&arena);
}

/*
 * Every allocation is 16-byte aligned, writable over its whole size and
 * disjoint from every other: fill each with its own byte, check all at the
 * end (an overlap would overwrite a neighbour's fill).
 */
static void
test_alignment_and_disjointness(void)
{
	enum
	{
		NALLOC = 3000
	};
	TcArena		arena;
	unsigned char *ptrs[NALLOC];
	size_t		sizes[NALLOC];
	uint64_t	seed = 42;
	int			misaligned = 0;
	int			clobbered = 0;

	tc_arena_init(&arena, 4096);
	for (int i = 0; i < NALLOC; i++)
	{
		/* mostly small, some zero, some just over and under a block */
		size_t		size = (size_t) (next_random(&seed) % 200);

		if (i % 97 == 0)
			size = 0;
		if (i % 501 == 0)
			size = 4096 - 16 + (size_t) (i % 3) * 16;
		sizes[i] = size;
		ptrs[i] = tc_arena_alloc(&arena, size);
		REQUIRE(ptrs[i] != NULL);
		if (((uintptr_t) ptrs[i]) % 16 != 0)
			misaligned++;
		memset(ptrs[i], (int) (i & 0xFF), size);
	}
	for (int i = 0; i < NALLOC; i++)
		for (size_t j = 0; j < sizes[i]; j++)
			if (ptrs[i][j] != (unsigned char) (i & 0xFF))
			{
				clobbered++;
				break;
			}
	CHECK_EQ_INT(misaligned, 0);
	CHECK_EQ_INT(clobbered, 0);

	/* distinct non-NULL pointers even for zero-sized requests */
	{
		void	   *a = tc_arena_alloc(&arena, 0);
		void	   *b = tc_arena_alloc(&arena, 0);

		CHECK(a != NULL);
		CHECK(b != NULL);
		CHECK(a != b);
	}
	tc_arena_free(&arena);
}

/*
 * A request larger than a block gets a block of its own, is usable over its
 * whole size and does not waste the current block: the small allocations
 * around it keep coming from the ordinary block.
 */
static void
test_large_allocations(void)
{
	TcArena		arena;
	size_t		big = 3 * 1024 * 1024 + 7;
	unsigned char *small1;
	unsigned char *large;
	unsigned char *small2;
	uint64_t	mallocs_before;
	size_t		reserved_before;

	tc_arena_init(&arena, 8192);
	small1 = tc_arena_alloc(&arena, 100);
	REQUIRE(small1 != NULL);
	mallocs_before = arena.block_mallocs;
	reserved_before = arena.reserved_bytes;

	large = tc_arena_alloc(&arena, big);
	REQUIRE(large != NULL);
	CHECK_EQ_UINT(((uintptr_t) large) % 16, 0);
	memset(large, 0xAB, big);
	CHECK(large[0] == 0xAB && large[big - 1] == 0xAB);
	CHECK_EQ_UINT(arena.block_mallocs, mallocs_before + 1);
	CHECK(arena.reserved_bytes >= reserved_before + big);
	CHECK(arena.used_bytes >= 100 + big);

	/* the next small request still fits in the first block: no new malloc */
	small2 = tc_arena_alloc(&arena, 100);
	REQUIRE(small2 != NULL);
	CHECK_EQ_UINT(arena.block_mallocs, mallocs_before + 1);
	CHECK(small2 < large || small2 >= large + big);
	memset(small2, 0x11, 100);
	CHECK(large[big - 1] == 0xAB && large[0] == 0xAB);

	/* several large ones in a row, each usable */
	for (int i = 0; i < 8; i++)
	{
		size_t		size = (size_t) (i + 1) * 100000;
		unsigned char *p = tc_arena_alloc(&arena, size);

		REQUIRE(p != NULL);
		CHECK_EQ_UINT(((uintptr_t) p) % 16, 0);
		memset(p, i, size);
	}

	/* a reset frees the oversized blocks and keeps only ordinary ones */
	tc_arena_reset(&arena);
	CHECK_EQ_UINT(arena.used_bytes, 0);
	CHECK(arena.reserved_bytes < big);
	CHECK(arena.reserved_bytes >= arena.block_size);
	CHECK(arena.peak_reserved_bytes >= big + 8 * 100000);
	tc_arena_free(&arena);
}

/* Sizes too large to exist are refused (NULL), never wrapped around. */
static void
test_impossible_sizes(void)
{
	TcArena		arena;

	tc_arena_init(&arena, 4096);
	CHECK(tc_arena_alloc(&arena, SIZE_MAX) == NULL);
	CHECK(tc_arena_alloc(&arena, SIZE_MAX - 8) == NULL);
	CHECK(tc_arena_alloc(&arena, SIZE_MAX - 4096) == NULL);
	CHECK(tc_arena_alloc(&arena, SIZE_MAX / 2) == NULL);
	/* the arena is still usable afterwards */
	{
		char	   *p = tc_arena_alloc(&arena, 64);

		CHECK(p != NULL);
		if (p)
			memset(p, 1, 64);
	}
	tc_arena_free(&arena);
}

/* One batch's worth of allocations, always the same for a given seed. */
static int
replay_pattern(TcArena *arena, uint64_t seed, int with_large)
{
	for (int i = 0; i < 5000; i++)
	{
		size_t		size = (size_t) (next_random(&seed) % 300);
		char	   *p;

		if (with_large && i % 1000 == 999)
			size = 100000;
		p = tc_arena_alloc(arena, size);
		if (p == NULL)
			return -1;
		memset(p, 0x5A, size);
	}
	return 0;
}

/*
 * Reset keeps the ordinary blocks: replaying the same pattern after a reset
 * needs no new block, whatever the number of replays.
 */
static void
test_reset_reuses_blocks(void)
{
	TcArena		arena;
	uint64_t	mallocs_after_first;
	size_t		reserved_after_first;
	size_t		used_first;

	tc_arena_init(&arena, 16 * 1024);
	REQUIRE(replay_pattern(&arena, 7, 0) == 0);
	mallocs_after_first = arena.block_mallocs;
	reserved_after_first = arena.reserved_bytes;
	used_first = arena.used_bytes;
	CHECK(mallocs_after_first > 1);

	for (int round = 0; round < 20; round++)
	{
		tc_arena_reset(&arena);
		CHECK_EQ_UINT(arena.used_bytes, 0);
		REQUIRE(replay_pattern(&arena, 7, 0) == 0);
	}
	CHECK_EQ_UINT(arena.block_mallocs, mallocs_after_first);
	CHECK_EQ_UINT(arena.reserved_bytes, reserved_after_first);
	CHECK_EQ_UINT(arena.used_bytes, used_first);
	CHECK_EQ_UINT(arena.peak_reserved_bytes, reserved_after_first);

	/*
	 * With oversized requests in the pattern, only those need malloc again
	 * (their blocks are freed by a reset): exactly 5 per replay.
	 */
	tc_arena_reset(&arena);
	REQUIRE(replay_pattern(&arena, 7, 1) == 0);
	{
		uint64_t	mallocs_one_round = arena.block_mallocs;

		for (int round = 0; round < 10; round++)
		{
			tc_arena_reset(&arena);
			REQUIRE(replay_pattern(&arena, 7, 1) == 0);
		}
		CHECK_EQ_UINT(arena.block_mallocs, mallocs_one_round + 10 * 5);
	}
	tc_arena_free(&arena);
}

/* used_bytes and reserved_bytes say what they claim. */
static void
test_accounting(void)
{
	TcArena		arena;
	size_t		requested = 0;
	size_t		rounded = 0;

	tc_arena_init(&arena, 4096);
	for (size_t size = 1; size <= 1000; size += 37)
	{
		size_t		reserved_before = arena.reserved_bytes;
		uint64_t	mallocs_before = arena.block_mallocs;

		REQUIRE(tc_arena_alloc(&arena, size) != NULL);
		requested += size;
		rounded += (size + 15) & ~(size_t) 15;
		/* reserved grows only when a block is added, by at least a block */
		if (arena.block_mallocs == mallocs_before)
			CHECK_EQ_UINT(arena.reserved_bytes, reserved_before);
		else
			CHECK(arena.reserved_bytes >= reserved_before + arena.block_size);
		CHECK(arena.reserved_bytes >= arena.used_bytes);
		CHECK(arena.peak_reserved_bytes >= arena.reserved_bytes);
	}
	CHECK(arena.used_bytes >= requested);
	CHECK(arena.used_bytes <= rounded);
	CHECK(arena.reserved_bytes >= arena.block_mallocs * arena.block_size);

	/* memdup copies, also zero bytes */
	{
		const char	text[] = "tcopy arena memdup";
		size_t		used_before = arena.used_bytes;
		char	   *copy = tc_arena_memdup(&arena, text, sizeof(text));

		REQUIRE(copy != NULL);
		CHECK(copy != text);
		CHECK_MEM(copy, sizeof(text), text, sizeof(text));
		CHECK(arena.used_bytes >= used_before + sizeof(text));
		CHECK(tc_arena_memdup(&arena, text, 0) != NULL);
	}

	{
		size_t		reserved = arena.reserved_bytes;
		size_t		peak = arena.peak_reserved_bytes;

		tc_arena_reset(&arena);
		CHECK_EQ_UINT(arena.used_bytes, 0);
		CHECK_EQ_UINT(arena.reserved_bytes, reserved);
		tc_arena_free(&arena);
		CHECK_EQ_UINT(arena.used_bytes, 0);
		CHECK_EQ_UINT(arena.reserved_bytes, 0);
		CHECK_EQ_UINT(arena.peak_reserved_bytes, peak);
	}

	/* initialised again after free, it works as new */
	tc_arena_init(&arena, 4096);
	CHECK(tc_arena_alloc(&arena, 10) != NULL);
	CHECK_EQ_UINT(arena.block_mallocs, 1);
	tc_arena_free(&arena);
}

/* Build a WriteBatch of nrows rows on the heap with plain malloc. */
static Tcopy__WriteBatch *
make_batch(int nrows)
{
	Tcopy__WriteBatch *batch = malloc(sizeof(*batch));

	tcopy__write_batch__init(batch);
	batch->seq = 77;
	batch->table_id = 12345;
	batch->n_rows = (size_t) nrows;
	batch->rows = malloc(sizeof(Tcopy__Row *) * (size_t) nrows);
	for (int i = 0; i < nrows; i++)
	{
		Tcopy__Row *row = malloc(sizeof(*row));
		char	   *text = malloc(32);

		tcopy__row__init(row);
		row->n_ints = 3;
		row->ints = malloc(sizeof(int64_t) * 3);
		row->ints[0] = i;
		row->ints[1] = -(int64_t) i * 1000003;
		row->ints[2] = INT64_MIN + i;
		row->n_floats = 1;
		row->floats = malloc(sizeof(double));
		row->floats[0] = i * 0.5;
		snprintf(text, 32, "row %d\n", i);
		row->n_blobs = 1;
		row->blobs = malloc(sizeof(ProtobufCBinaryData));
		row->blobs[0].data = (uint8_t *) text;
		row->blobs[0].len = strlen(text);
		if (i % 3 == 0)
		{
			row->n_nulls = 1;
			row->nulls = malloc(sizeof(uint32_t));
			row->nulls[0] = 4;
		}
		batch->rows[i] = row;
	}
	return batch;
}

/* Freed by hand: tcopy__write_batch__free_unpacked is for unpacked ones. */
static void
free_batch(Tcopy__WriteBatch *batch)
{
	for (size_t i = 0; i < batch->n_rows; i++)
	{
		Tcopy__Row *row = batch->rows[i];

		free(row->ints);
		free(row->floats);
		free(row->blobs[0].data);
		free(row->blobs);
		free(row->nulls);
		free(row);
	}
	free(batch->rows);
	free(batch);
}

/*
 * protobuf-c unpacks a whole message tree into the arena; the tree is right,
 * free_unpacked through the arena allocator is harmless, and a reset makes
 * the next unpack of the same size need no new block.
 */
static void
test_protobuf_allocator(void)
{
	TcArena		arena;
	ProtobufCAllocator *allocator;
	Tcopy__WriteBatch *batch = make_batch(500);
	size_t		packed_len = tcopy__write_batch__get_packed_size(batch);
	uint8_t    *packed = malloc(packed_len);
	uint64_t	mallocs_after_first = 0;

	REQUIRE(packed != NULL);
	CHECK_EQ_UINT(tcopy__write_batch__pack(batch, packed), packed_len);

	tc_arena_init(&arena, 64 * 1024);
	allocator = tc_arena_allocator(&arena);
	REQUIRE(allocator != NULL);
	{
		void	   *p = allocator->alloc(allocator->allocator_data, 24);

		CHECK(p != NULL);
		CHECK_EQ_UINT(((uintptr_t) p) % 16, 0);
		allocator->free(allocator->allocator_data, p);
		tc_arena_reset(&arena);
	}

	for (int round = 0; round < 10; round++)
	{
		Tcopy__WriteBatch *got = tcopy__write_batch__unpack(allocator, packed_len, packed);
		int			wrong = 0;

		REQUIRE(got != NULL);
		CHECK(arena.used_bytes > packed_len / 2);
		CHECK_EQ_UINT(got->seq, 77);
		CHECK_EQ_UINT(got->table_id, 12345);
		REQUIRE(got->n_rows == 500);
		for (size_t i = 0; i < got->n_rows; i++)
		{
			Tcopy__Row *want = batch->rows[i];
			Tcopy__Row *row = got->rows[i];

			if (row->n_ints != 3 || row->ints[0] != want->ints[0] ||
				row->ints[1] != want->ints[1] || row->ints[2] != want->ints[2] ||
				row->n_floats != 1 || row->floats[0] != want->floats[0] ||
				row->n_blobs != 1 || row->blobs[0].len != want->blobs[0].len ||
				memcmp(row->blobs[0].data, want->blobs[0].data, want->blobs[0].len) != 0 ||
				row->n_nulls != want->n_nulls ||
				(row->n_nulls == 1 && row->nulls[0] != 4))
				wrong++;
			/* the unpacked tree lives in the arena's blocks */
			if (((uintptr_t) row) % 16 != 0)
				wrong++;
		}
		CHECK_EQ_INT(wrong, 0);
		tcopy__write_batch__free_unpacked(got, allocator);
		tc_arena_reset(&arena);
		if (round == 0)
			mallocs_after_first = arena.block_mallocs;
	}
	CHECK_EQ_UINT(arena.block_mallocs, mallocs_after_first);

	/* garbage fails cleanly (partial trees go to the arena's no-op free) */
	{
		static const uint8_t garbage[] = {0x1a, 0x7f, 0x0a, 0x05, 0xff, 0xff, 0xff};

		CHECK(tcopy__write_batch__unpack(allocator, sizeof(garbage), garbage) == NULL);
		CHECK(tcopy__write_batch__unpack(allocator, packed_len - 1, packed) == NULL);
		tc_arena_reset(&arena);
	}

	tc_arena_free(&arena);
	free(packed);
	free_batch(batch);
}

int
main(void)
{
	TC_RUN(test_min_block_size);
	TC_RUN(test_alignment_and_disjointness);
	TC_RUN(test_large_allocations);
	TC_RUN(test_impossible_sizes);
	TC_RUN(test_reset_reuses_blocks);
	TC_RUN(test_accounting);
	TC_RUN(test_protobuf_allocator);
	return tc_test_summary();
}
