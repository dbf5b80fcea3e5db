/*
 * ts_prefetch_bench.c
 *		A model of a run's spill (spill_sorted in src/tserver/session/ts_spill.c):
 *		the records of a 32 MiB staging half (116-byte accounts records) read
 *		in key order, that is at random, each compared with the next one's
 *		key and copied into a 1 MiB buffer, with the record some distance
 *		ahead prefetched (1 to 3 cache lines), to choose the distance
 *		(issue 17).  Run:
 *
 *	cc -O2 -o /tmp/ts_prefetch_bench bench/ts_prefetch_bench.c && /tmp/ts_prefetch_bench
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECORD 116
#define OUT_SIZE (1 << 20)
#define REPEAT 9

static uint8_t *out;
static size_t outlen;

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static inline void
put(const uint8_t *rec)
{
	uint32_t	keylen,
				valuelen;
	size_t		size;

	memcpy(&keylen, rec, 4);
	memcpy(&valuelen, rec + 4, 4);
	size = 8 + keylen + valuelen;
	if (outlen + size > OUT_SIZE)
		outlen = 0;				/* a write of the buffer */
	memcpy(out + outlen, rec, size);
	outlen += size;
}

static double
spill(const uint8_t *base, const uint32_t *offsets, size_t n, int distance, int lines,
	  size_t *same)
{
	double		start = now_ms();

	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = base + offsets[i];

		if (distance > 0 && i + distance < n)
		{
			const uint8_t *ahead = base + offsets[i + distance];

			__builtin_prefetch(ahead);
			if (lines > 1)
				__builtin_prefetch(ahead + 64);
			if (lines > 2)
				__builtin_prefetch(ahead + 127);
		}
		if (i + 1 < n)
		{
			const uint8_t *next = base + offsets[i + 1];
			uint32_t	a,
						b;

			memcpy(&a, rec, 4);
			memcpy(&b, next, 4);
			if (a == b && memcmp(rec + 8, next + 8, a) == 0)
				(*same)++;
		}
		put(rec);
	}
	return now_ms() - start;
}

int
main(void)
{
	static const int distances[] = {0, 4, 8, 8, 8, 12, 16, 24, 32};
	static const int lines[] = {1, 2, 3, 2, 1, 2, 2, 2, 2};
	size_t		n = (32u << 20) / RECORD;
	uint8_t    *base = malloc(n * RECORD);
	uint32_t   *offsets = malloc(n * sizeof(uint32_t));
	size_t		same = 0;

	out = malloc(OUT_SIZE);
	if (base == NULL || offsets == NULL || out == NULL)
		return 1;
	for (size_t i = 0; i < n; i++)
	{
		uint8_t    *rec = base + i * RECORD;
		uint32_t	keylen = 12,
					valuelen = RECORD - 20;

		memcpy(rec, &keylen, 4);
		memcpy(rec + 4, &valuelen, 4);
		for (int b = 0; b < 12; b++)
			rec[8 + b] = (uint8_t) rand();
		memset(rec + 20, ' ', valuelen);
		offsets[i] = (uint32_t) (i * RECORD);
	}
	for (size_t i = n - 1; i > 0; i--)
	{
		size_t		j = (size_t) rand() % (i + 1);
		uint32_t	t = offsets[i];

		offsets[i] = offsets[j];
		offsets[j] = t;
	}
	for (size_t c = 0; c < sizeof(distances) / sizeof(distances[0]); c++)
	{
		double		best = 1e9;

		for (int r = 0; r < REPEAT; r++)
		{
			double		ms = spill(base, offsets, n, distances[c], lines[c], &same);

			if (ms < best)
				best = ms;
		}
		printf("distance %2d, %d line%s: min %.1f ms (%zu records)\n", distances[c], lines[c],
			   lines[c] > 1 ? "s" : "", best, n);
	}
	return same == 1 ? 2 : 0;	/* keeps the comparisons */
}
