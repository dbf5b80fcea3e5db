/*
 * tc_arena.c
 *		Bump allocator for per-batch memory.
 */
#include "tc_arena.h"

#include <stdlib.h>
#include <string.h>

#define TC_ARENA_ALIGN 16
#define TC_ARENA_MIN_BLOCK 4096

struct TcArenaBlock
{
	TcArenaBlock *next;
	size_t		size;			/* usable bytes after the header */
	/* usable space follows, aligned to TC_ARENA_ALIGN */
};

#define BLOCK_HEADER_SIZE \
	((sizeof(TcArenaBlock) + TC_ARENA_ALIGN - 1) & ~(size_t) (TC_ARENA_ALIGN - 1))
#define BLOCK_DATA(b) ((char *) (b) + BLOCK_HEADER_SIZE)

static void *
arena_pb_alloc(void *ctx, size_t size)
{
	return tc_arena_alloc((TcArena *) ctx, size);
}

static void
arena_pb_free(void *ctx, void *ptr)
{
	(void) ctx;
	(void) ptr;
}

void
tc_arena_init(TcArena *arena, size_t block_size)
{
	memset(arena, 0, sizeof(*arena));
	arena->block_size = block_size < TC_ARENA_MIN_BLOCK ? TC_ARENA_MIN_BLOCK : block_size;
	arena->pb.alloc = arena_pb_alloc;
	arena->pb.free = arena_pb_free;
	arena->pb.allocator_data = arena;
}

/* Chain a new block of at least size usable bytes in front of the others. */
static int
arena_add_block(TcArena *arena, size_t size)
{
	size_t		usable = size > arena->block_size ? size : arena->block_size;
	TcArenaBlock *block;

	if (usable == arena->block_size && arena->spare != NULL)
	{
		block = arena->spare;
		arena->spare = block->next;
	}
	else
	{
		block = malloc(BLOCK_HEADER_SIZE + usable);
		if (block == NULL)
			return -1;
		block->size = usable;
		arena->block_mallocs++;
		arena->reserved_bytes += usable;
		if (arena->reserved_bytes > arena->peak_reserved_bytes)
			arena->peak_reserved_bytes = arena->reserved_bytes;
	}

	/*
	 * An oversized block goes behind the head, so that the head's remaining
	 * space is not abandoned for one large request.
	 */
	if (arena->head != NULL && usable > arena->block_size &&
		(size_t) (arena->end - arena->cur) >= TC_ARENA_ALIGN)
	{
		block->next = arena->head->next;
		arena->head->next = block;
		return 1;
	}
	block->next = arena->head;
	arena->head = block;
	arena->cur = BLOCK_DATA(block);
	arena->end = arena->cur + usable;
	return 0;
}

void *
tc_arena_alloc(TcArena *arena, size_t size)
{
	size_t		rounded;
	char	   *result;

	/* leave room for rounding and the block header without wrapping */
	if (size > SIZE_MAX / 2)
		return NULL;
	rounded = (size + TC_ARENA_ALIGN - 1) & ~(size_t) (TC_ARENA_ALIGN - 1);
	if (rounded == 0)
		rounded = TC_ARENA_ALIGN;
	if ((size_t) (arena->end - arena->cur) < rounded)
	{
		int			placed = arena_add_block(arena, rounded);

		if (placed < 0)
			return NULL;
		if (placed == 1)
		{
			arena->used_bytes += rounded;
			return BLOCK_DATA(arena->head->next);
		}
	}
	result = arena->cur;
	arena->cur += rounded;
	arena->used_bytes += rounded;
	return result;
}

void *
tc_arena_memdup(TcArena *arena, const void *src, size_t len)
{
	void	   *dst = tc_arena_alloc(arena, len);

	if (dst != NULL && len > 0)
		memcpy(dst, src, len);
	return dst;
}

void
tc_arena_reset(TcArena *arena)
{
	TcArenaBlock *block = arena->head;

	while (block != NULL)
	{
		TcArenaBlock *next = block->next;

		if (block->size == arena->block_size)
		{
			block->next = arena->spare;
			arena->spare = block;
		}
		else
		{
			arena->reserved_bytes -= block->size;
			free(block);
		}
		block = next;
	}
	arena->head = NULL;
	arena->cur = arena->end = NULL;
	arena->used_bytes = 0;
}

void
tc_arena_free(TcArena *arena)
{
	tc_arena_reset(arena);
	while (arena->spare != NULL)
	{
		TcArenaBlock *next = arena->spare->next;

		free(arena->spare);
		arena->spare = next;
	}
	arena->head = NULL;
	arena->cur = arena->end = NULL;
	arena->used_bytes = 0;
	arena->reserved_bytes = 0;
}

ProtobufCAllocator *
tc_arena_allocator(TcArena *arena)
{
	return &arena->pb;
}
