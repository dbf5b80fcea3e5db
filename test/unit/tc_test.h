/*
 * tc_test.h
 *		A tiny assertion harness for tcopy's C unit tests.
 *
 * Every CHECK counts as one passed or one failed check; a failure prints
 * file:line and the expression (with the values, for the typed checks) and
 * the test goes on, so that one run shows every failure.  REQUIRE is a
 * CHECK that returns from the (void) test function when it fails, for
 * conditions the rest of the function depends on (a NULL pointer, say).
 *
 * A test program is a main that calls TC_RUN(test_fn) for each test and
 * ends with "return tc_test_summary();", which prints "N passed, N failed"
 * alone on a line and returns the exit status: non-zero on any failure.
 *
 * One translation unit per test program: the counters are file-static.
 */
#ifndef TC_TEST_H
#define TC_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int	tc_test_passed;
static int	tc_test_failed;
static const char *tc_test_current = "(none)";	/* test function running */

/* Record one check's outcome; print where and what when it failed. */
static inline int
tc_test_record(int ok, const char *file, int line, const char *what)
{
	if (ok)
	{
		tc_test_passed++;
		return 1;
	}
	tc_test_failed++;
	fflush(stdout);
	fprintf(stderr, "%s:%d: [%s] FAILED: %s\n", file, line, tc_test_current, what);
	fflush(stderr);
	return 0;
}

/* Print up to 64 bytes of buf in hex, for CHECK_MEM's failure message. */
static inline void
tc_test_hexdump(const char *label, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t		shown = len < 64 ? len : 64;

	fprintf(stderr, "    %s (%zu bytes):", label, len);
	for (size_t i = 0; i < shown; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "%s\n", shown < len ? " ..." : "");
}

#define CHECK(cond) \
	tc_test_record((cond) ? 1 : 0, __FILE__, __LINE__, "CHECK(" #cond ")")

/* A CHECK whose failure ends the current (void) test function. */
#define REQUIRE(cond) \
	do { \
		if (!tc_test_record((cond) ? 1 : 0, __FILE__, __LINE__, "REQUIRE(" #cond ")")) \
			return; \
	} while (0)

#define CHECK_EQ_INT(a, b) \
	do { \
		intmax_t	tc_a_ = (intmax_t) (a); \
		intmax_t	tc_b_ = (intmax_t) (b); \
		if (!tc_test_record(tc_a_ == tc_b_, __FILE__, __LINE__, \
							"CHECK_EQ_INT(" #a ", " #b ")")) \
			fprintf(stderr, "    %jd != %jd\n", tc_a_, tc_b_); \
	} while (0)

#define CHECK_EQ_UINT(a, b) \
	do { \
		uintmax_t	tc_a_ = (uintmax_t) (a); \
		uintmax_t	tc_b_ = (uintmax_t) (b); \
		if (!tc_test_record(tc_a_ == tc_b_, __FILE__, __LINE__, \
							"CHECK_EQ_UINT(" #a ", " #b ")")) \
			fprintf(stderr, "    %ju (0x%jx) != %ju (0x%jx)\n", tc_a_, tc_a_, tc_b_, tc_b_); \
	} while (0)

#define CHECK_EQ_STR(a, b) \
	do { \
		const char *tc_a_ = (a); \
		const char *tc_b_ = (b); \
		int			tc_ok_ = tc_a_ != NULL && tc_b_ != NULL && strcmp(tc_a_, tc_b_) == 0; \
		if (!tc_test_record(tc_ok_, __FILE__, __LINE__, "CHECK_EQ_STR(" #a ", " #b ")")) \
			fprintf(stderr, "    \"%s\" != \"%s\"\n", tc_a_ ? tc_a_ : "(null)", \
					tc_b_ ? tc_b_ : "(null)"); \
	} while (0)

/* Equal lengths and equal bytes. */
#define CHECK_MEM(a, alen, b, blen) \
	do { \
		const void *tc_a_ = (a); \
		const void *tc_b_ = (b); \
		size_t		tc_al_ = (size_t) (alen); \
		size_t		tc_bl_ = (size_t) (blen); \
		int			tc_ok_ = tc_al_ == tc_bl_ && \
			(tc_al_ == 0 || memcmp(tc_a_, tc_b_, tc_al_) == 0); \
		if (!tc_test_record(tc_ok_, __FILE__, __LINE__, \
							"CHECK_MEM(" #a ", " #alen ", " #b ", " #blen ")")) \
		{ \
			tc_test_hexdump(#a, tc_a_, tc_al_); \
			tc_test_hexdump(#b, tc_b_, tc_bl_); \
		} \
	} while (0)

/* Run one test function, naming it in failure messages. */
#define TC_RUN(fn) \
	do { \
		int			tc_failed_before_ = tc_test_failed; \
		tc_test_current = #fn; \
		fn(); \
		printf("%s %s\n", tc_test_failed == tc_failed_before_ ? "ok  " : "FAIL", #fn); \
		fflush(stdout); \
	} while (0)

/* Print the summary line; the exit status for main. */
static inline int
tc_test_summary(void)
{
	fflush(stderr);
	printf("%d passed, %d failed\n", tc_test_passed, tc_test_failed);
	fflush(stdout);
	return tc_test_failed == 0 ? 0 : 1;
}

/*
 * Reproducible random values for the tests (xorshift64*: no libc state, the
 * same sequence on every run), and int64 and double values that favour the
 * edges of their encodings.
 */
static uint64_t tc_test_rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t
tc_test_rng(void)
{
	tc_test_rng_state ^= tc_test_rng_state >> 12;
	tc_test_rng_state ^= tc_test_rng_state << 25;
	tc_test_rng_state ^= tc_test_rng_state >> 27;
	return tc_test_rng_state * 0x2545f4914f6cdd1dull;
}

static inline int64_t
tc_test_random_int64(void)
{
	static const int64_t edges[] = {0, 1, -1, 63, 64, -64, -65, 127, 128,
		INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1};

	switch (tc_test_rng() % 4)
	{
		case 0:
			return edges[tc_test_rng() % (sizeof(edges) / sizeof(edges[0]))];
		case 1:
			return (int64_t) (tc_test_rng() % 1000) - 500;
		case 2:
			return (int64_t) tc_test_rng() >> (tc_test_rng() % 63);
		default:
			return (int64_t) tc_test_rng();
	}
}

/* Finite edges, infinities, NaN, or any 64 bits (denormals, NaN payloads). */
static inline double
tc_test_random_double(void)
{
	static const double edges[] = {0.0, -0.0, 1.5, -2.25, 1e308, -1e-308, 5e-324};
	uint64_t	bits;
	double		d;

	switch (tc_test_rng() % 3)
	{
		case 0:
			return edges[tc_test_rng() % (sizeof(edges) / sizeof(edges[0]))];
		case 1:
			return tc_test_rng() % 2 ? (double) INFINITY : (double) NAN;
		default:
			bits = tc_test_rng();
			memcpy(&d, &bits, 8);
			return d;
	}
}

#endif							/* TC_TEST_H */
