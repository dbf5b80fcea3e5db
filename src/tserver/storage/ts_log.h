/*
 * ts_log.h
 *		The tserver's log: one line per event on stderr, with a timestamp,
 *		the level and (where there is one) the connection id.
 */
#ifndef TS_LOG_H
#define TS_LOG_H

#include <stdbool.h>

typedef enum TsLogLevel
{
	TS_LOG_DEBUG,
	TS_LOG_INFO,
	TS_LOG_WARNING,
	TS_LOG_ERROR
} TsLogLevel;

extern TsLogLevel ts_log_min_level;
/*
 * One JSON object a line instead of text: {"time":"2026-12-05T19:13:32.957Z",
 * "level":"info","message":"..."} (tserver --log-format json).
 */
extern bool ts_log_json;

void		ts_log(TsLogLevel level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

#endif							/* TS_LOG_H */
