/*
 * test_sort.c
 *		Unit tests of ts_sort_records: staged records sorted by key (bytes
 *		unsigned, a prefix first), equal keys by arrival, exactly as the
 *		reference order (qsort of the offsets with a comparison reading the
 *		keys), on keys around the 16-byte prefix it compares inline: empty,
 *		short, zero bytes where the padding is, long keys equal in their
 *		first 16 bytes, duplicates; and on sizes around its small-sort cut and
 *		its radix sorts' (accounts-like keys of a few varying bytes: entries
 *		packed into integers; five varying bytes: whole entries; seven: the
 *		introsort).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "ts_staging.h"

static const uint8_t *ref_base;

static int
ref_compare(const void *pa, const void *pb)
{
	uint32_t	a = *(const uint32_t *) pa,
				b = *(const uint32_t *) pb,
				la,
				lb;
	int			cmp;

	memcpy(&la, ref_base + a, 4);
	memcpy(&lb, ref_base + b, 4);
	cmp = memcmp(ref_base + a + 8, ref_base + b + 8, la < lb ? la : lb);
	if (cmp != 0)
		return cmp;
	if (la != lb)
		return la < lb ? -1 : 1;
	return a < b ? -1 : (a > b);
}

/* n records of random keys in buf; their offsets in offsets. */
static void
make_records(uint8_t *buf, uint32_t *offsets, size_t n, int shape)
{
	size_t		pos = 0;

	for (size_t i = 0; i < n; i++)
	{
		uint32_t	keylen,
					valuelen = (uint32_t) (tc_test_rng() % 4);

		switch (shape)
		{
			case 0:				/* short keys of few distinct bytes, 0 among them */
				keylen = (uint32_t) (tc_test_rng() % 20);
				break;
			case 1:				/* table id + int: 12 bytes */
				keylen = 12;
				break;
			case 3:				/* accounts: one table, an int key below 2^20, repeated */
				keylen = 12;
				break;
			case 4:				/* one byte varying in each of seven places: not radix */
				keylen = 14;
				break;
			case 5:				/* five places: the radix sort of whole entries */
				keylen = 10;
				break;
			default:			/* long keys sharing their first 16 bytes */
				keylen = 16 + (uint32_t) (tc_test_rng() % 12);
				break;
		}
		offsets[i] = (uint32_t) pos;
		memcpy(buf + pos, &keylen, 4);
		memcpy(buf + pos + 4, &valuelen, 4);
		for (uint32_t b = 0; b < keylen; b++)
		{
			uint8_t		byte;

			if (shape == 0)
				byte = (uint8_t) (tc_test_rng() % 3);	/* 0, 1, 2 */
			else if (shape == 1)
				byte = b < 4 ? (uint8_t) (tc_test_rng() % 2) : (uint8_t) tc_test_rng();
			else if (shape == 3)
				byte = 0;		/* set below */
			else if (shape == 4)
				byte = b % 2 ? (uint8_t) (tc_test_rng() % 3) : 'k';
			else if (shape == 5)
				byte = b % 2 == 0 ? (uint8_t) (tc_test_rng() % 3) : 'k';
			else
				byte = b < 16 ? 'k' : (uint8_t) (tc_test_rng() % 3);
			buf[pos + 8 + b] = byte;
		}
		if (shape == 3)
		{
			uint64_t	aid = (tc_test_rng() % (n / 2 + 1)) ^ (UINT64_C(1) << 63);

			buf[pos + 8 + 3] = 7;
			for (int b = 0; b < 8; b++)
				buf[pos + 8 + 4 + b] = (uint8_t) (aid >> (56 - 8 * b));
		}
		memset(buf + pos + 8 + keylen, 'v', valuelen);
		pos += 8 + keylen + valuelen;
	}
}

/*
 * ts_sort_records orders offsets[n] of the records in buf as the reference
 * does (want is scratch space for the reference's order).
 */
static void
check_sorted(const uint8_t *buf, uint32_t *offsets, uint32_t *want, size_t n)
{
	memcpy(want, offsets, n * sizeof(uint32_t));
	ref_base = buf;
	qsort(want, n, sizeof(uint32_t), ref_compare);
	CHECK_EQ_INT(ts_sort_records(buf, offsets, n), 0);
	CHECK_MEM(offsets, n * sizeof(uint32_t), want, n * sizeof(uint32_t));
}

static void
check_shape(int shape, size_t n)
{
	uint8_t    *buf = malloc(n * 48 + 1);
	uint32_t   *got = malloc((n + 1) * sizeof(uint32_t));
	uint32_t   *want = malloc((n + 1) * sizeof(uint32_t));

	REQUIRE(buf != NULL && got != NULL && want != NULL);
	make_records(buf, got, n, shape);
	check_sorted(buf, got, want, n);
	free(buf);
	free(got);
	free(want);
}

static void
test_small_sizes(void)
{
	for (size_t n = 0; n <= 70; n++)
		for (int shape = 0; shape < 6; shape++)
			check_shape(shape, n);
}

static void
test_large(void)
{
	for (int shape = 0; shape < 6; shape++)
	{
		check_shape(shape, 1000);
		check_shape(shape, 1023);	/* around the radix sort's cut */
		check_shape(shape, 1024);
		check_shape(shape, 100000);
	}
}

/* presorted, reversed and all-equal inputs: no quadratic blow-up, right order */
static void
test_patterns(void)
{
	size_t		n = 50000;
	uint8_t    *buf = malloc(n * 20);
	uint32_t   *got = malloc(n * sizeof(uint32_t));
	uint32_t   *want = malloc(n * sizeof(uint32_t));

	REQUIRE(buf != NULL && got != NULL && want != NULL);
	for (int pattern = 0; pattern < 3; pattern++)
	{
		for (size_t i = 0; i < n; i++)
		{
			uint32_t	keylen = 8,
						valuelen = 0;
			uint64_t	k = pattern == 0 ? i : pattern == 1 ? n - i : 7;

			got[i] = (uint32_t) (i * 16);
			memcpy(buf + i * 16, &keylen, 4);
			memcpy(buf + i * 16 + 4, &valuelen, 4);
			for (int b = 0; b < 8; b++)
				buf[i * 16 + 8 + b] = (uint8_t) (k >> (56 - 8 * b));
		}
		check_sorted(buf, got, want, n);
	}
	free(buf);
	free(got);
	free(want);
}

int
main(void)
{
	TC_RUN(test_small_sizes);
	TC_RUN(test_large);
	TC_RUN(test_patterns);
	return tc_test_summary();
}
