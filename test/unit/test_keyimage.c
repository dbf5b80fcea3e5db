/*
 * test_keyimage.c
 *		Unit tests of tc_keyimage: for every pair of a set of values, the
 *		memcmp order of their images (a prefix first, as the tserver
 *		compares keys) must be the order of a reference comparator written
 *		the way Postgres compares: float8_cmp_internal (NaN equal to itself
 *		and above everything, -0 equal to +0), numeric's cmp_var (digits
 *		aligned by weight, display scale ignored, NaN above +Inf) and
 *		interval_cmp_value (30-day months).  Equal values spelled
 *		differently (1.0 and 1.00, 0 and -0, '1 mon' and '30 days') must
 *		have one image; malformed send bytes must be refused.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_keyimage.h"
#include "tc_test.h"

#define MAX_DIGITS 8
#define IMAGE_MAX TC_KEYIMAGE_NUMERIC_MAX(MAX_DIGITS)

/* Deterministic pseudo-random numbers (xorshift64). */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t
rnd(void)
{
	uint64_t	x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static int
sign_of(int v)
{
	return (v > 0) - (v < 0);
}

/* memcmp order of two byte strings, a prefix first */
static int
image_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int			cmp = memcmp(a, b, alen < blen ? alen : blen);

	if (cmp != 0)
		return sign_of(cmp);
	return alen == blen ? 0 : (alen < blen ? -1 : 1);
}

/* ---- float8 ---- */

static int
float8_reference_compare(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

static void
test_float8(void)
{
	double		values[64] = {
		0.0, -0.0, 1.0, -1.0, 0.5, -0.5, DBL_MIN, -DBL_MIN, DBL_MAX, -DBL_MAX,
		DBL_TRUE_MIN, -DBL_TRUE_MIN, INFINITY, -INFINITY, NAN, -NAN,
		1e-300, -1e-300, 3.0, 3.0000000000000004, (double) FLT_MAX, 1e300
	};
	int			n = 22;
	int			bad = 0;
	uint64_t	nan_bits = UINT64_C(0x7FF0000000000001);	/* a signalling NaN */

	memcpy(&values[n++], &nan_bits, sizeof(double));
	nan_bits = UINT64_C(0xFFFFFFFFFFFFFFFF);
	memcpy(&values[n++], &nan_bits, sizeof(double));
	while (n < 64)
	{
		uint64_t	bits = rnd();

		memcpy(&values[n++], &bits, sizeof(double));
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			uint8_t		a[TC_KEYIMAGE_FLOAT8_SIZE],
						b[TC_KEYIMAGE_FLOAT8_SIZE];

			tc_keyimage_float8(values[i], a);
			tc_keyimage_float8(values[j], b);
			if (image_compare(a, sizeof(a), b, sizeof(b)) !=
				float8_reference_compare(values[i], values[j]))
				bad++;
		}
	CHECK_EQ_INT(bad, 0);
}

/* ---- numeric ---- */

#define SIGN_POS 0x0000
#define SIGN_NEG 0x4000
#define SIGN_NAN 0xC000
#define SIGN_PINF 0xD000
#define SIGN_NINF 0xF000

typedef struct TestNumeric
{
	uint16_t	sign;
	int			weight;
	int			dscale;
	int			ndigits;
	int			digits[MAX_DIGITS];
} TestNumeric;

/* numeric_send's bytes of v; returns their length */
static size_t
numeric_send_bytes(const TestNumeric *v, uint8_t *out)
{
	uint16_t	fields[4] = {(uint16_t) v->ndigits, (uint16_t) (int16_t) v->weight,
	v->sign, (uint16_t) v->dscale};
	size_t		n = 0;

	for (int i = 0; i < 4; i++, n += 2)
	{
		out[n] = (uint8_t) (fields[i] >> 8);
		out[n + 1] = (uint8_t) fields[i];
	}
	for (int i = 0; i < v->ndigits; i++, n += 2)
	{
		out[n] = (uint8_t) (v->digits[i] >> 8);
		out[n + 1] = (uint8_t) v->digits[i];
	}
	return n;
}

/* v's base-10000 digit at position p (the weight of the first is v->weight) */
static int
numeric_digit_at(const TestNumeric *v, int p)
{
	int			i = v->weight - p;

	return i >= 0 && i < v->ndigits ? v->digits[i] : 0;
}

static bool
numeric_is_zero(const TestNumeric *v)
{
	for (int i = 0; i < v->ndigits; i++)
		if (v->digits[i] != 0)
			return false;
	return true;
}

/* numeric_cmp: NaN above +Inf, equal to NaN; magnitudes aligned digit by digit */
static int
numeric_reference_compare(const TestNumeric *a, const TestNumeric *b)
{
	int			rank_a,
				rank_b;
	int			hi,
				lo,
				cmp = 0;

	/* -Inf, negative, zero, positive, +Inf, NaN */
	rank_a = a->sign == SIGN_NAN ? 5 : a->sign == SIGN_PINF ? 4 : a->sign == SIGN_NINF ? 0 :
		numeric_is_zero(a) ? 2 : a->sign == SIGN_NEG ? 1 : 3;
	rank_b = b->sign == SIGN_NAN ? 5 : b->sign == SIGN_PINF ? 4 : b->sign == SIGN_NINF ? 0 :
		numeric_is_zero(b) ? 2 : b->sign == SIGN_NEG ? 1 : 3;
	if (rank_a != rank_b)
		return rank_a < rank_b ? -1 : 1;
	if (rank_a != 1 && rank_a != 3)
		return 0;
	hi = a->weight > b->weight ? a->weight : b->weight;
	lo = a->weight - a->ndigits < b->weight - b->ndigits ?
		a->weight - a->ndigits : b->weight - b->ndigits;
	for (int p = hi; p > lo && cmp == 0; p--)
		cmp = sign_of(numeric_digit_at(a, p) - numeric_digit_at(b, p));
	return rank_a == 1 ? -cmp : cmp;
}

static void
numeric_image(const TestNumeric *v, uint8_t *image, size_t *len)
{
	uint8_t		send[8 + 2 * MAX_DIGITS];
	size_t		sendlen = numeric_send_bytes(v, send);

	if (tc_keyimage_numeric(send, sendlen, image, IMAGE_MAX, len) != 0)
	{
		CHECK(!"tc_keyimage_numeric refused a well-formed value");
		*len = 0;
	}
}

static int
random_digit(void)
{
	static const int picks[] = {0, 1, 2, 9998, 9999, 5000, 10, 100};

	return rnd() % 3 == 0 ? (int) (rnd() % 10000) : picks[rnd() % 8];
}

/* a random numeric, often with leading or trailing zero digits */
static void
numeric_random(TestNumeric *v)
{
	uint64_t	kind = rnd() % 20;

	memset(v, 0, sizeof(*v));
	v->dscale = (int) (rnd() % 20);
	if (kind == 0)
	{
		static const uint16_t specials[] = {SIGN_NAN, SIGN_PINF, SIGN_NINF};

		v->sign = specials[rnd() % 3];
		return;
	}
	v->sign = rnd() % 2 ? SIGN_NEG : SIGN_POS;
	v->weight = (int) (rnd() % 7) - 3;
	if (rnd() % 50 == 0)
		v->weight = rnd() % 2 ? 32767 - MAX_DIGITS : -32768 + MAX_DIGITS;
	v->ndigits = (int) (rnd() % (MAX_DIGITS + 1));
	for (int i = 0; i < v->ndigits; i++)
		v->digits[i] = random_digit();
}

static void
test_numeric_order(void)
{
	enum
	{
		NVALUES = 600
	};
	static TestNumeric values[NVALUES];
	static uint8_t images[NVALUES][IMAGE_MAX];
	static size_t lens[NVALUES];
	int			bad = 0,
				equal_pairs = 0;

	for (int i = 0; i < NVALUES; i++)
	{
		numeric_random(&values[i]);
		/* every fourth value: an earlier one respelled, equal to it */
		if (i % 4 == 3 && values[i - 1].ndigits < MAX_DIGITS - 1)
		{
			TestNumeric *v = &values[i];

			*v = values[i - 1];
			v->dscale += 2;
			if (rnd() % 2 && v->weight < 32767)
			{
				/* a leading zero digit: the weight goes up by one */
				memmove(v->digits + 1, v->digits, sizeof(int) * v->ndigits);
				v->digits[0] = 0;
				v->ndigits++;
				v->weight++;
			}
			else
				v->digits[v->ndigits++] = 0;	/* a trailing zero digit */
		}
		numeric_image(&values[i], images[i], &lens[i]);
	}
	for (int i = 0; i < NVALUES; i++)
		for (int j = 0; j < NVALUES; j++)
		{
			int			want = numeric_reference_compare(&values[i], &values[j]);

			if (image_compare(images[i], lens[i], images[j], lens[j]) != want)
			{
				if (bad++ < 5)
					fprintf(stderr, "    numeric %d vs %d: reference %d\n", i, j, want);
			}
			if (want == 0 && i != j)
				equal_pairs++;
		}
	CHECK_EQ_INT(bad, 0);
	CHECK(equal_pairs >= NVALUES / 4);	/* the respelled values were met */
}

/* 1, 1.0, 1.00 and 0001: one image; 0 and -0 and 0.000: one image */
static void
test_numeric_spellings(void)
{
	TestNumeric one = {SIGN_POS, 0, 0, 1, {1}};
	TestNumeric one_scaled = {SIGN_POS, 0, 2, 2, {1, 0}};
	TestNumeric one_leading = {SIGN_POS, 1, 4, 3, {0, 1, 0}};
	TestNumeric zero = {SIGN_POS, 0, 0, 0, {0}};
	TestNumeric zero_neg = {SIGN_NEG, 3, 5, 2, {0, 0}};
	TestNumeric minus_one = {SIGN_NEG, 0, 0, 1, {1}};
	TestNumeric minus_one_tiny = {SIGN_NEG, 0, 8, 3, {1, 0, 1}};	/* -1.00000001 */
	uint8_t		a[IMAGE_MAX],
				b[IMAGE_MAX];
	size_t		alen,
				blen;

	numeric_image(&one, a, &alen);
	numeric_image(&one_scaled, b, &blen);
	CHECK_MEM(a, alen, b, blen);
	numeric_image(&one_leading, b, &blen);
	CHECK_MEM(a, alen, b, blen);
	numeric_image(&zero, a, &alen);
	numeric_image(&zero_neg, b, &blen);
	CHECK_MEM(a, alen, b, blen);
	/* a digit of 0 inside a negative's digits is not its terminator */
	numeric_image(&minus_one, a, &alen);
	numeric_image(&minus_one_tiny, b, &blen);
	CHECK(image_compare(b, blen, a, alen) < 0);
}

static void
test_numeric_malformed(void)
{
	TestNumeric v = {SIGN_POS, 0, 0, 2, {1, 2}};
	uint8_t		send[8 + 2 * MAX_DIGITS];
	uint8_t		image[IMAGE_MAX];
	size_t		len = numeric_send_bytes(&v, send);
	size_t		outlen;

	CHECK_EQ_INT(tc_keyimage_numeric(send, len, image, sizeof(image), &outlen), 0);
	CHECK_EQ_INT(tc_keyimage_numeric(send, len - 1, image, sizeof(image), &outlen), -1);
	CHECK_EQ_INT(tc_keyimage_numeric(send, 7, image, sizeof(image), &outlen), -1);
	CHECK_EQ_INT(tc_keyimage_numeric(send, len, image, TC_KEYIMAGE_NUMERIC_MAX(2) - 1, &outlen), -1);
	/* a digit above 9999 */
	v.digits[1] = 10000;
	len = numeric_send_bytes(&v, send);
	CHECK_EQ_INT(tc_keyimage_numeric(send, len, image, sizeof(image), &outlen), -1);
	/* an unknown sign */
	v.digits[1] = 2;
	v.sign = 0x8000;
	len = numeric_send_bytes(&v, send);
	CHECK_EQ_INT(tc_keyimage_numeric(send, len, image, sizeof(image), &outlen), -1);
	/* a negative digit count */
	v.sign = SIGN_POS;
	v.ndigits = -1;
	len = numeric_send_bytes(&v, send);
	CHECK_EQ_INT(tc_keyimage_numeric(send, 8, image, sizeof(image), &outlen), -1);
	/* leading zero digits that push the weight below int16 */
	{
		TestNumeric low = {SIGN_POS, -32768, 0, 2, {0, 1}};

		len = numeric_send_bytes(&low, send);
		CHECK_EQ_INT(tc_keyimage_numeric(send, len, image, sizeof(image), &outlen), -1);
	}
}

/* ---- interval ---- */

typedef struct TestInterval
{
	int64_t		time;			/* microseconds */
	int32_t		day;
	int32_t		month;
} TestInterval;

/* interval_cmp_value, as Postgres writes it */
static __int128
interval_reference_span(const TestInterval *v)
{
	const int64_t usecs_per_day = INT64_C(86400000000);
	int64_t		dayfraction = v->time % usecs_per_day;
	int64_t		days = v->time / usecs_per_day;

	days += (int64_t) v->month * 30;
	days += v->day;
	return (__int128) dayfraction + (__int128) days * usecs_per_day;
}

static void
interval_image(const TestInterval *v, uint8_t *image)
{
	uint8_t		send[TC_KEYIMAGE_INTERVAL_SEND_SIZE];
	uint64_t	time = (uint64_t) v->time;

	for (int i = 7; i >= 0; i--, time >>= 8)
		send[i] = (uint8_t) time;
	for (int i = 0; i < 4; i++)
	{
		send[8 + i] = (uint8_t) ((uint32_t) v->day >> (24 - 8 * i));
		send[12 + i] = (uint8_t) ((uint32_t) v->month >> (24 - 8 * i));
	}
	CHECK_EQ_INT(tc_keyimage_interval(send, sizeof(send), image), 0);
}

static void
test_interval(void)
{
	enum
	{
		NVALUES = 300
	};
	static TestInterval values[NVALUES] = {
		{0, 0, 0},
		{INT64_C(86400000000), 0, 0},	/* 24 hours */
		{0, 1, 0},				/* 1 day */
		{0, 30, 0},				/* 30 days */
		{0, 0, 1},				/* 1 mon */
		{INT64_C(720) * 3600000000, 0, 0},	/* 720 hours */
		{INT64_C(86400000000), -1, 0},	/* 1 day -24 hours: zero */
		{INT64_MAX, INT32_MAX, INT32_MAX},
		{INT64_MIN, INT32_MIN, INT32_MIN},
		{-1, 0, 0},
		{1, 0, 0},
	};
	uint8_t		images[NVALUES][TC_KEYIMAGE_INTERVAL_SIZE];
	int			n = 11,
				bad = 0;

	while (n < NVALUES)
	{
		TestInterval *v = &values[n++];

		v->time = (int64_t) (rnd() % 5) * INT64_C(43200000000) - INT64_C(86400000000);
		if (rnd() % 4 == 0)
			v->time = (int64_t) rnd();
		v->day = (int32_t) (rnd() % 61) - 30;
		v->month = (int32_t) (rnd() % 5) - 2;
		if (rnd() % 10 == 0)
			v->month = (int32_t) rnd();
	}
	for (int i = 0; i < NVALUES; i++)
		interval_image(&values[i], images[i]);
	for (int i = 0; i < NVALUES; i++)
		for (int j = 0; j < NVALUES; j++)
		{
			__int128	a = interval_reference_span(&values[i]);
			__int128	b = interval_reference_span(&values[j]);
			int			want = a < b ? -1 : (a > b ? 1 : 0);

			if (image_compare(images[i], TC_KEYIMAGE_INTERVAL_SIZE,
							  images[j], TC_KEYIMAGE_INTERVAL_SIZE) != want)
				bad++;
		}
	CHECK_EQ_INT(bad, 0);
	/* '24 hours' = '1 day'; '1 mon' = '30 days' = '720 hours'; '1 day -24 hours' = 0 */
	CHECK_MEM(images[1], TC_KEYIMAGE_INTERVAL_SIZE, images[2], TC_KEYIMAGE_INTERVAL_SIZE);
	CHECK_MEM(images[3], TC_KEYIMAGE_INTERVAL_SIZE, images[4], TC_KEYIMAGE_INTERVAL_SIZE);
	CHECK_MEM(images[4], TC_KEYIMAGE_INTERVAL_SIZE, images[5], TC_KEYIMAGE_INTERVAL_SIZE);
	CHECK_MEM(images[6], TC_KEYIMAGE_INTERVAL_SIZE, images[0], TC_KEYIMAGE_INTERVAL_SIZE);
	{
		uint8_t		send[TC_KEYIMAGE_INTERVAL_SEND_SIZE] = {0};

		CHECK_EQ_INT(tc_keyimage_interval(send, sizeof(send) - 1, images[0]), -1);
	}
}

/* ---- bpchar ---- */

static void
test_bpchar(void)
{
	CHECK_EQ_UINT(tc_keyimage_bpchar_len((const uint8_t *) "a  ", 3), 1);
	CHECK_EQ_UINT(tc_keyimage_bpchar_len((const uint8_t *) "a", 1), 1);
	CHECK_EQ_UINT(tc_keyimage_bpchar_len((const uint8_t *) "   ", 3), 0);
	CHECK_EQ_UINT(tc_keyimage_bpchar_len((const uint8_t *) " a\t ", 4), 3);	/* only blanks */
	CHECK_EQ_UINT(tc_keyimage_bpchar_len((const uint8_t *) "", 0), 0);
}

int
main(void)
{
	TC_RUN(test_float8);
	TC_RUN(test_numeric_order);
	TC_RUN(test_numeric_spellings);
	TC_RUN(test_numeric_malformed);
	TC_RUN(test_interval);
	TC_RUN(test_bpchar);
	return tc_test_summary();
}
