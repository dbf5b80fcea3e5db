/*
 * test_histogram.c
 *		Unit tests of ts_histogram (durations in fixed buckets) and of its
 *		exposition by ts_metrics_put_histogram: a duration on a bound goes
 *		into that bound's bucket (Prometheus' "le"), one above the highest
 *		into +Inf's only; the counts read are cumulative, +Inf's equals the
 *		count; the text has one HELP and TYPE, a bucket line per bound and
 *		+Inf, the sum in seconds and the count; observations from several
 *		threads at once are all counted.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "ts_histogram.h"
#include "ts_metrics.h"

static void
test_buckets(void)
{
	TsHistogram hist;
	TsHistogramRead read;

	memset(&hist, 0, sizeof(hist));
	ts_histogram_read(&hist, &read);
	CHECK_EQ_UINT(read.count, 0);
	CHECK_EQ_UINT(read.sum_us, 0);

	ts_histogram_observe(&hist, 0);		/* le 0.001 */
	ts_histogram_observe(&hist, 1000);	/* on the bound: le 0.001 */
	ts_histogram_observe(&hist, 1001);	/* le 0.005 */
	ts_histogram_observe(&hist, 60000000);	/* le 60 */
	ts_histogram_observe(&hist, 60000001);	/* +Inf only */
	ts_histogram_read(&hist, &read);
	CHECK_EQ_UINT(read.cumulative[0], 2);
	CHECK_EQ_UINT(read.cumulative[1], 3);
	CHECK_EQ_UINT(read.cumulative[TS_HISTOGRAM_BOUNDS - 2], 3);
	CHECK_EQ_UINT(read.cumulative[TS_HISTOGRAM_BOUNDS - 1], 4);
	CHECK_EQ_UINT(read.cumulative[TS_HISTOGRAM_BOUNDS], 5);
	CHECK_EQ_UINT(read.count, 5);
	CHECK_EQ_UINT(read.sum_us, 0 + 1000 + 1001 + 60000000 + 60000001);
	for (int b = 1; b < TS_HISTOGRAM_BOUNDS; b++)
		CHECK(ts_histogram_bounds_us[b] > ts_histogram_bounds_us[b - 1]);
}

static void
test_exposition(void)
{
	TsHistogram hist;
	TcBuf		out = {0};
	char	   *text;
	const char *head = "# HELP tcopy_x_seconds Some times.\n"
		"# TYPE tcopy_x_seconds histogram\n"
		"tcopy_x_seconds_bucket{le=\"0.001\"} 0\n"
		"tcopy_x_seconds_bucket{le=\"0.005\"} 1\n";

	memset(&hist, 0, sizeof(hist));
	ts_histogram_observe(&hist, 2500);
	ts_histogram_observe(&hist, 700000);
	ts_metrics_put_histogram(&out, "tcopy_x_seconds", "Some times.", &hist);
	REQUIRE(tc_buf_reserve(&out, 1));
	out.data[out.len] = '\0';
	text = (char *) out.data;
	CHECK(strncmp(text, head, strlen(head)) == 0);
	CHECK(strstr(text, "tcopy_x_seconds_bucket{le=\"0.5\"} 1\n") != NULL);
	CHECK(strstr(text, "tcopy_x_seconds_bucket{le=\"1\"} 2\n") != NULL);
	CHECK(strstr(text, "tcopy_x_seconds_bucket{le=\"60\"} 2\n") != NULL);
	CHECK(strstr(text, "tcopy_x_seconds_bucket{le=\"+Inf\"} 2\n"
				 "tcopy_x_seconds_sum 0.7025\n"
				 "tcopy_x_seconds_count 2\n") != NULL);
	CHECK(strstr(strstr(text, "# TYPE") + 1, "# ") == NULL);	/* one HELP, one TYPE */
	tc_buf_free(&out);
}

#define THREADS 4
#define PER_THREAD 100000

static void *
observe_main(void *arg)
{
	TsHistogram *hist = arg;

	for (int i = 0; i < PER_THREAD; i++)
		ts_histogram_observe(hist, (uint64_t) (i % 7) * 20000);
	return NULL;
}

static void
test_threads(void)
{
	static TsHistogram hist;	/* zeroed: empty, as the tserver's are */
	pthread_t	threads[THREADS];
	TsHistogramRead read;
	uint64_t	last = 0;
	int			disagree = 0,
				decreased = 0;

	for (int t = 0; t < THREADS; t++)
		REQUIRE(pthread_create(&threads[t], NULL, observe_main, &hist) == 0);
	/* reads while they go on: +Inf's is the count, and never decreases */
	for (int r = 0; r < 1000; r++)
	{
		ts_histogram_read(&hist, &read);
		disagree += read.cumulative[TS_HISTOGRAM_BOUNDS] != read.count;
		decreased += read.count < last;
		last = read.count;
	}
	CHECK_EQ_INT(disagree, 0);
	CHECK_EQ_INT(decreased, 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	ts_histogram_read(&hist, &read);
	CHECK_EQ_UINT(read.count, (uint64_t) THREADS * PER_THREAD);
	for (int b = 1; b <= TS_HISTOGRAM_BOUNDS; b++)
		CHECK(read.cumulative[b] >= read.cumulative[b - 1]);
}

int
main(void)
{
	TC_RUN(test_buckets);
	TC_RUN(test_exposition);
	TC_RUN(test_threads);
	return tc_test_summary();
}
