/*
 * copy_simd.h
 *		The vector kernels of the COPY reader (copy_reader.c): where a
 *		block's special bytes are, and how much of a buffer is plain ASCII.
 *		Chosen once per process: AVX2 when the CPU has it, SSE2 otherwise
 *		(every x86-64 has it), scalar code elsewhere.
 */
#ifndef TCOPY_COPY_SIMD_H
#define TCOPY_COPY_SIMD_H

#include "c.h"

/* bytes a block mask covers; the caller keeps that many readable past its data */
#define TCOPY_SIMD_BLOCK 64

/* The bytes a reader looks for outside and inside quotes (up to five). */
typedef struct TcopySimdSet
{
	uint8		c[5];
} TcopySimdSet;

/* Bit i set when p[i] is one of set's bytes, for i in [0, 64). */
typedef uint64 (*TcopySimdMaskFn) (const char *p, const TcopySimdSet *set);

/* The mask function for this CPU, and its name (for DEBUG and the bench). */
extern TcopySimdMaskFn tcopy_simd_mask_fn(const char **name);

/*
 * Of p's first nblocks 64-byte blocks, how many come before the first that
 * holds special; their newlines are added to *newlines.
 */
extern size_t tcopy_simd_plain_blocks(const char *p, size_t nblocks, char special,
									  uint64 *newlines);

/* The length of p's longest prefix of bytes 0x01-0x7f (ASCII without NUL). */
extern size_t tcopy_simd_ascii_prefix(const char *p, size_t len);

#endif							/* TCOPY_COPY_SIMD_H */
