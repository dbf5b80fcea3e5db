/*
 * ts_metrics.h
 *		The tserver's counters and gauges in Prometheus' text format, on a
 *		listener of their own (tserver --metrics tcp:HOST:PORT): one thread
 *		answers GET /metrics, one request per connection.
 *
 * The endpoint needs no credential, as Prometheus scrapes: it shows
 * counts, never a table's name or a row.  Bind it where only the
 * monitoring reaches (127.0.0.1, a private network).
 */
#ifndef TS_METRICS_H
#define TS_METRICS_H

#include "tc_buf.h"
#include "ts_histogram.h"

typedef struct TsMetrics TsMetrics;

/* Append the exposition's lines to out: called on the metrics thread. */
typedef void (*TsMetricsCollect) (void *arg, TcBuf *out);

/*
 * Serve on listen_fd (a listening TCP socket, taken over) with collect;
 * NULL with err when the thread could not start.
 */
TsMetrics  *ts_metrics_start(int listen_fd, TsMetricsCollect collect, void *arg,
							 char *err, size_t errlen);

/* Stop serving, close the socket, free. */
void		ts_metrics_stop(TsMetrics *metrics);

/*
 * One metric's HELP and TYPE lines (once per name: labels NULL or the
 * first of its series) and its sample "name{labels} value".
 */
void		ts_metrics_put(TcBuf *out, const char *name, const char *type, const char *help,
						   const char *labels, double value);

/*
 * A histogram of durations in seconds: its HELP and TYPE lines, then
 * name_bucket{le="..."} for each bound and +Inf (cumulative), name_sum and
 * name_count.
 */
void		ts_metrics_put_histogram(TcBuf *out, const char *name, const char *help,
									 TsHistogram *hist);

#endif							/* TS_METRICS_H */
