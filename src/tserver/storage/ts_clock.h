/*
 * ts_clock.h
 *		The clocks the tserver reads: the monotonic one for durations and
 *		waits, the real one for times that outlive the process (a prepared
 *		session's or a load label's, in its record).
 */
#ifndef TS_CLOCK_H
#define TS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds on the monotonic clock. */
static inline uint64_t
ts_monotonic_us(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000;
}

/* Milliseconds on the monotonic clock. */
static inline int64_t
ts_monotonic_ms(void)
{
	return (int64_t) (ts_monotonic_us() / 1000);
}

/* Unix time in milliseconds. */
static inline uint64_t
ts_realtime_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000;
}

#endif							/* TS_CLOCK_H */
