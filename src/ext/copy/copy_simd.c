/*
 * copy_simd.c
 *		The COPY reader's vector kernels: a 64-byte block's special bytes as
 *		a bit mask (the first stage of simdjson's and simdcsv's two-stage
 *		design: the reader then walks the set bits), and the ASCII prefix of
 *		a buffer (most input is ASCII; the rest goes to Postgres' own
 *		encoding verifier).
 *
 * AVX2 is chosen at run time (__builtin_cpu_supports), so that the
 * extension built on one x86-64 runs on any; SSE2 is x86-64's baseline;
 * other CPUs get the scalar loop.  tcopy.simd caps the choice, so that the
 * tests run every kernel on any machine (test/ext/210_reader_diff.pl).  The kernels read whole blocks: the
 * reader keeps TCOPY_SIMD_BLOCK readable bytes after its data and ignores
 * the bits past it.
 */
#include "postgres.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "port/pg_bitutils.h"

#include "tcopy/copy.h"
#include "copy_simd.h"

static uint64
mask_scalar(const char *p, const TcopySimdSet *set)
{
	uint64		m = 0;

	for (int i = 0; i < TCOPY_SIMD_BLOCK; i++)
	{
		uint8		b = (uint8) p[i];

		if (b == set->c[0] || b == set->c[1] || b == set->c[2] ||
			b == set->c[3] || b == set->c[4])
			m |= UINT64CONST(1) << i;
	}
	return m;
}

#if defined(__x86_64__)

static inline uint32
mask16_sse2(const char *p, __m128i c0, __m128i c1, __m128i c2, __m128i c3, __m128i c4)
{
	__m128i		v = _mm_loadu_si128((const __m128i *) p);
	__m128i		eq = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, c0), _mm_cmpeq_epi8(v, c1)),
								  _mm_or_si128(_mm_cmpeq_epi8(v, c2), _mm_cmpeq_epi8(v, c3)));

	return (uint32) _mm_movemask_epi8(_mm_or_si128(eq, _mm_cmpeq_epi8(v, c4)));
}

static uint64
mask_sse2(const char *p, const TcopySimdSet *set)
{
	__m128i		c0 = _mm_set1_epi8((char) set->c[0]);
	__m128i		c1 = _mm_set1_epi8((char) set->c[1]);
	__m128i		c2 = _mm_set1_epi8((char) set->c[2]);
	__m128i		c3 = _mm_set1_epi8((char) set->c[3]);
	__m128i		c4 = _mm_set1_epi8((char) set->c[4]);

	return (uint64) mask16_sse2(p, c0, c1, c2, c3, c4) |
		((uint64) mask16_sse2(p + 16, c0, c1, c2, c3, c4) << 16) |
		((uint64) mask16_sse2(p + 32, c0, c1, c2, c3, c4) << 32) |
		((uint64) mask16_sse2(p + 48, c0, c1, c2, c3, c4) << 48);
}

__attribute__((target("avx2")))
static inline uint32
mask32_avx2(const char *p, __m256i c0, __m256i c1, __m256i c2, __m256i c3, __m256i c4)
{
	__m256i		v = _mm256_loadu_si256((const __m256i *) p);
	__m256i		eq = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, c0),
													 _mm256_cmpeq_epi8(v, c1)),
									 _mm256_or_si256(_mm256_cmpeq_epi8(v, c2),
													 _mm256_cmpeq_epi8(v, c3)));

	return (uint32) _mm256_movemask_epi8(_mm256_or_si256(eq, _mm256_cmpeq_epi8(v, c4)));
}

__attribute__((target("avx2")))
static uint64
mask_avx2(const char *p, const TcopySimdSet *set)
{
	__m256i		c0 = _mm256_set1_epi8((char) set->c[0]);
	__m256i		c1 = _mm256_set1_epi8((char) set->c[1]);
	__m256i		c2 = _mm256_set1_epi8((char) set->c[2]);
	__m256i		c3 = _mm256_set1_epi8((char) set->c[3]);
	__m256i		c4 = _mm256_set1_epi8((char) set->c[4]);

	return (uint64) mask32_avx2(p, c0, c1, c2, c3, c4) |
		((uint64) mask32_avx2(p + 32, c0, c1, c2, c3, c4) << 32);
}

/* The whole 32-byte blocks of p's prefix of bytes 0x01-0x7f. */
__attribute__((target("avx2")))
static size_t
ascii_prefix_avx2(const char *p, size_t len)
{
	const __m256i zero = _mm256_setzero_si256();
	size_t		i = 0;

	for (; i + 32 <= len; i += 32)
	{
		__m256i		v = _mm256_loadu_si256((const __m256i *) (p + i));

		/* a high bit, or a NUL */
		if (_mm256_movemask_epi8(_mm256_or_si256(v, _mm256_cmpeq_epi8(v, zero))) != 0)
			break;
	}
	return i;
}

static size_t
ascii_prefix_sse2(const char *p, size_t len)
{
	const __m128i zero = _mm_setzero_si128();
	size_t		i = 0;

	for (; i + 16 <= len; i += 16)
	{
		__m128i		v = _mm_loadu_si128((const __m128i *) (p + i));

		if (_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, zero))) != 0)
			break;
	}
	return i;
}

/* plain_blocks' kernel: two compares a vector, the newlines counted by block */
__attribute__((target("avx2,popcnt")))
static size_t
plain_blocks_avx2(const char *p, size_t nblocks, char special, uint64 *newlines)
{
	const __m256i sp = _mm256_set1_epi8(special);
	const __m256i nl = _mm256_set1_epi8('\n');
	uint64		lines = 0;
	size_t		b;

	for (b = 0; b < nblocks; b++, p += TCOPY_SIMD_BLOCK)
	{
		__m256i		lo = _mm256_loadu_si256((const __m256i *) p);
		__m256i		hi = _mm256_loadu_si256((const __m256i *) (p + 32));

		if (!_mm256_testz_si256(_mm256_or_si256(_mm256_cmpeq_epi8(lo, sp),
												_mm256_cmpeq_epi8(hi, sp)),
								_mm256_set1_epi8(-1)))
			break;
		lines += __builtin_popcount((uint32) _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, nl))) +
			__builtin_popcount((uint32) _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, nl)));
	}
	*newlines += lines;
	return b;
}

static size_t
plain_blocks_sse2(const char *p, size_t nblocks, char special, uint64 *newlines)
{
	const __m128i sp = _mm_set1_epi8(special);
	const __m128i nl = _mm_set1_epi8('\n');
	uint64		lines = 0;
	size_t		b;

	for (b = 0; b < nblocks; b++, p += TCOPY_SIMD_BLOCK)
	{
		__m128i		v0 = _mm_loadu_si128((const __m128i *) p);
		__m128i		v1 = _mm_loadu_si128((const __m128i *) (p + 16));
		__m128i		v2 = _mm_loadu_si128((const __m128i *) (p + 32));
		__m128i		v3 = _mm_loadu_si128((const __m128i *) (p + 48));
		__m128i		any = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, sp), _mm_cmpeq_epi8(v1, sp)),
									   _mm_or_si128(_mm_cmpeq_epi8(v2, sp), _mm_cmpeq_epi8(v3, sp)));
		uint64		m;

		if (_mm_movemask_epi8(any) != 0)
			break;
		m = (uint64) _mm_movemask_epi8(_mm_cmpeq_epi8(v0, nl)) |
			((uint64) _mm_movemask_epi8(_mm_cmpeq_epi8(v1, nl)) << 16) |
			((uint64) _mm_movemask_epi8(_mm_cmpeq_epi8(v2, nl)) << 32) |
			((uint64) _mm_movemask_epi8(_mm_cmpeq_epi8(v3, nl)) << 48);
		lines += pg_popcount64(m);
	}
	*newlines += lines;
	return b;
}
#endif							/* __x86_64__ */

/* settings (registered in tcopy.c) */
int			tcopy_simd = TCOPY_SIMD_AUTO;	/* tcopy.simd */

typedef enum SimdLevel
{
	SIMD_UNKNOWN,
	SIMD_SCALAR,
	SIMD_SSE2,
	SIMD_AVX2
} SimdLevel;

static SimdLevel simd_cpu = SIMD_UNKNOWN;

/* The CPU's best, capped by tcopy.simd. */
static SimdLevel
simd_choose(void)
{
	SimdLevel	cap;

	if (simd_cpu == SIMD_UNKNOWN)
	{
#if defined(__x86_64__)
		__builtin_cpu_init();
		simd_cpu = __builtin_cpu_supports("avx2") ? SIMD_AVX2 : SIMD_SSE2;
#else
		simd_cpu = SIMD_SCALAR;
#endif
	}
	cap = tcopy_simd == TCOPY_SIMD_SCALAR ? SIMD_SCALAR :
		tcopy_simd == TCOPY_SIMD_SSE2 ? SIMD_SSE2 : SIMD_AVX2;
	return Min(simd_cpu, cap);
}

TcopySimdMaskFn
tcopy_simd_mask_fn(const char **name)
{
	switch (simd_choose())
	{
#if defined(__x86_64__)
		case SIMD_AVX2:
			*name = "avx2";
			return mask_avx2;
		case SIMD_SSE2:
			*name = "sse2";
			return mask_sse2;
#endif
		default:
			*name = "scalar";
			return mask_scalar;
	}
}

size_t
tcopy_simd_ascii_prefix(const char *p, size_t len)
{
	size_t		i = 0;

#if defined(__x86_64__)
	switch (simd_choose())
	{
		case SIMD_AVX2:
			i = ascii_prefix_avx2(p, len);
			break;
		case SIMD_SSE2:
			i = ascii_prefix_sse2(p, len);
			break;
		default:
			break;
	}
#endif
	for (; i < len; i++)
		if ((uint8) (p[i] - 1) >= 0x7f)	/* 0x00, or 0x80 and above */
			break;
	return i;
}

size_t
tcopy_simd_plain_blocks(const char *p, size_t nblocks, char special, uint64 *newlines)
{
	size_t		b;

#if defined(__x86_64__)
	switch (simd_choose())
	{
		case SIMD_AVX2:
			return plain_blocks_avx2(p, nblocks, special, newlines);
		case SIMD_SSE2:
			return plain_blocks_sse2(p, nblocks, special, newlines);
		default:
			break;
	}
#endif
	for (b = 0; b < nblocks; b++, p += TCOPY_SIMD_BLOCK)
	{
		uint64		lines = 0;
		int			i;

		for (i = 0; i < TCOPY_SIMD_BLOCK && p[i] != special; i++)
			lines += p[i] == '\n';
		if (i < TCOPY_SIMD_BLOCK)
			break;
		*newlines += lines;
	}
	return b;
}
