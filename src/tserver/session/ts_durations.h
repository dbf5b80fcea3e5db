/*
 * ts_durations.h
 *		How long the session layer's slow steps of a commit take, for the
 *		metrics endpoint (tcopy_merge_seconds, tcopy_publish_seconds): a
 *		session's runs merged into SST files (ts_merge_runs) and a session
 *		made visible in the store (ts_publish), each counted when it
 *		succeeds.
 *
 * Process-wide, as the endpoint reports one tserver, which opens one
 * store: a histogram is lock-free counters that need no setup, so that
 * neither the store nor its open and close need know of them.
 */
#ifndef TS_DURATIONS_H
#define TS_DURATIONS_H

#include "ts_histogram.h"

/* in ts_merge.c: ts_merge_runs, from its first part to its last joined */
extern TsHistogram ts_merge_durations;

/* in ts_publish.c: ts_publish, a one-step commit's or a prepared session's */
extern TsHistogram ts_publish_durations;

#endif							/* TS_DURATIONS_H */
