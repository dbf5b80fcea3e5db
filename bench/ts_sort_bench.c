/*
 * ts_sort_bench.c
 *		Time ts_sort_records on one spill of shuffled pgbench_accounts
 *		records (12-byte keys: a table id and an int8 of 10M values, 96-byte
 *		values), as a 32 MiB staging half holds them (issue 17).  Build
 *		against a ts_sort.c and run:
 *
 *	cc -O2 -Isrc/tserver/staging -Isrc/tserver/storage -Isrc/common -o /tmp/ts_sort_bench \
 *		bench/ts_sort_bench.c src/tserver/staging/ts_sort.c && /tmp/ts_sort_bench
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ts_sort.h"

#define VALUE_SIZE 96
#define REPEAT 11

static uint64_t state = 42;

static uint64_t
next_random(void)
{
	uint64_t	z = (state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static int
compare_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

int
main(void)
{
	size_t		record = 8 + 12 + VALUE_SIZE;
	size_t		n = (32u << 20) / record;
	uint8_t    *buf = malloc(n * record);
	uint32_t   *offsets = malloc(n * sizeof(uint32_t));
	double		ms[REPEAT];

	for (int r = 0; r < REPEAT; r++)
	{
		struct timespec t0,
					t1;

		for (size_t i = 0; i < n; i++)
		{
			uint8_t    *rec = buf + i * record;
			uint32_t	keylen = 12,
						valuelen = VALUE_SIZE;
			uint64_t	aid = (next_random() % 10000000) ^ (UINT64_C(1) << 63);

			memcpy(rec, &keylen, 4);
			memcpy(rec + 4, &valuelen, 4);
			memset(rec + 8, 0, 3);
			rec[11] = 1;
			for (int b = 0; b < 8; b++)
				rec[12 + b] = (uint8_t) (aid >> (56 - 8 * b));
			memset(rec + 20, ' ', VALUE_SIZE);
			offsets[i] = (uint32_t) (i * record);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (ts_sort_records(buf, offsets, n) != 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms[r] = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	}
	qsort(ms, REPEAT, sizeof(double), compare_double);
	printf("%zu records: median %.1f ms, min %.1f ms (%d sorts)\n", n, ms[REPEAT / 2], ms[0], REPEAT);
	return 0;
}
