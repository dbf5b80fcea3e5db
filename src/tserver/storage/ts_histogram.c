/*
 * ts_histogram.c
 *		Durations counted into fixed buckets (ts_histogram.h).
 *
 * An observation adds to its own bucket's counter and to the sum, two
 * atomic additions and no lock: merges and publishes run on many
 * connections' threads at once, and a scrape must never hold them up.
 * The count is not a counter of its own but the buckets' total, as a
 * scrape reads them, so that +Inf's bucket and _count always agree,
 * whatever observations the reading overlaps.  The sum is added before
 * the bucket and read after the buckets (both sequentially consistent),
 * so that it includes at least every observation the count does.
 */
#include "ts_histogram.h"

const uint64_t ts_histogram_bounds_us[TS_HISTOGRAM_BOUNDS] = {
	1000, 5000, 10000, 50000, 100000,		/* 1 ms .. 100 ms */
	500000, 1000000, 5000000, 10000000, 60000000	/* 0.5 s .. 1 min */
};

void
ts_histogram_observe(TsHistogram *hist, uint64_t us)
{
	int			b = 0;

	while (b < TS_HISTOGRAM_BOUNDS && us > ts_histogram_bounds_us[b])
		b++;
	atomic_fetch_add(&hist->sum_us, us);
	atomic_fetch_add(&hist->buckets[b], 1);
}

void
ts_histogram_read(TsHistogram *hist, TsHistogramRead *out)
{
	uint64_t	total = 0;

	for (int b = 0; b <= TS_HISTOGRAM_BOUNDS; b++)
	{
		total += atomic_load(&hist->buckets[b]);
		out->cumulative[b] = total;
	}
	out->count = total;
	out->sum_us = atomic_load(&hist->sum_us);
}
