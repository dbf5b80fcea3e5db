/*
 * tc_arena.h
 *		Bump allocator for per-batch memory, shared by the extension and the
 *		tserver (no Postgres headers).
 *
 * An arena hands out memory from a chain of blocks and frees nothing until
 * it is reset; a reset keeps its ordinary blocks for reuse (and frees only
 * oversized ones), so that an arena reused batch after batch stops calling
 * malloc once it has grown to the largest batch's size.  tc_arena_allocator()
 * exposes it as a ProtobufCAllocator, so that protobuf-c unpacks a whole
 * message tree into it and the tree is freed by the next reset.
 */
#ifndef TC_ARENA_H
#define TC_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

typedef struct TcArenaBlock TcArenaBlock;

typedef struct TcArena
{
	TcArenaBlock *head;			/* block being carved; used ones chained behind */
	TcArenaBlock *spare;		/* ordinary blocks kept by the last reset */
	char	   *cur;			/* next free byte in head */
	char	   *end;			/* end of head's usable space */
	size_t		block_size;		/* bytes of a new ordinary block */
	size_t		used_bytes;		/* bytes handed out since the last reset */
	size_t		reserved_bytes; /* bytes of all blocks held now */
	size_t		peak_reserved_bytes;	/* high-water mark of reserved_bytes */
	uint64_t	block_mallocs;	/* blocks ever malloc'ed (a measure of churn) */
	ProtobufCAllocator pb;		/* protobuf-c view of this arena */
} TcArena;

/* Prepare an arena whose blocks are block_size bytes (at least 4 KiB). */
void		tc_arena_init(TcArena *arena, size_t block_size);

/*
 * Memory for size bytes, aligned for any type; NULL only when malloc fails.
 * Requests larger than a block get a block of their own.
 */
void	   *tc_arena_alloc(TcArena *arena, size_t size);

/* A copy of len bytes in the arena. */
void	   *tc_arena_memdup(TcArena *arena, const void *src, size_t len);

/* Forget every allocation; keep ordinary blocks for reuse. */
void		tc_arena_reset(TcArena *arena);

/* Free every block; the arena may be initialised again afterwards. */
void		tc_arena_free(TcArena *arena);

/* The arena as a protobuf-c allocator (its free does nothing). */
ProtobufCAllocator *tc_arena_allocator(TcArena *arena);

#endif							/* TC_ARENA_H */
