/*
 * ts_histogram.h
 *		Durations counted into fixed buckets, for the metrics endpoint's
 *		Prometheus histograms: observed from any thread without a lock, read
 *		by a scrape while they go on.
 *
 * The bounds are the same for every histogram, from a millisecond to a
 * minute: what a publish (a synced write, an ingestion) and a merge (a
 * spilled session's runs into SST files) take, from a small load's to a
 * large one's.  Fixed, so that a histogram is a static array of counters
 * that needs no allocation nor initialization (zeroed, it is empty).
 */
#ifndef TS_HISTOGRAM_H
#define TS_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

/* the finite bounds; a last bucket holds what is above the highest */
#define TS_HISTOGRAM_BOUNDS 10

/* the bounds, in microseconds, increasing (Prometheus' "le", inclusive) */
extern const uint64_t ts_histogram_bounds_us[TS_HISTOGRAM_BOUNDS];

typedef struct TsHistogram
{
	/* per bucket, not cumulative: an observation adds to one counter */
	_Atomic uint64_t buckets[TS_HISTOGRAM_BOUNDS + 1];
	_Atomic uint64_t sum_us;
} TsHistogram;

/* What a scrape writes: cumulative counts, [TS_HISTOGRAM_BOUNDS] is +Inf's. */
typedef struct TsHistogramRead
{
	uint64_t	cumulative[TS_HISTOGRAM_BOUNDS + 1];
	uint64_t	count;			/* == cumulative[TS_HISTOGRAM_BOUNDS] */
	uint64_t	sum_us;
} TsHistogramRead;

/* Count one duration of us microseconds (from ts_monotonic_us). */
void		ts_histogram_observe(TsHistogram *hist, uint64_t us);

/* Read hist's counts, cumulated, while observations may go on. */
void		ts_histogram_read(TsHistogram *hist, TsHistogramRead *out);

#endif							/* TS_HISTOGRAM_H */
