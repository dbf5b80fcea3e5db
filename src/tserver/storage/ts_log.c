/*
 * ts_log.c
 *		The tserver's log on stderr.
 */
#include "ts_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

TsLogLevel	ts_log_min_level = TS_LOG_INFO;

static const char *const level_names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};

void
ts_log(TsLogLevel level, const char *fmt,...)
{
	char		line[1024];
	char		stamp[32];
	struct timeval now;
	struct tm	tm;
	size_t		len;
	va_list		args;

	if (level < ts_log_min_level)
		return;
	gettimeofday(&now, NULL);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	len = (size_t) snprintf(line, sizeof(line), "%s.%03d UTC %s: ",
							stamp, (int) (now.tv_usec / 1000), level_names[level]);
	va_start(args, fmt);
	vsnprintf(line + len, sizeof(line) - len, fmt, args);
	va_end(args);
	len = strlen(line);
	if (len == sizeof(line) - 1)
		line[len - 1] = '\n';
	else
	{
		line[len++] = '\n';
		line[len] = '\0';
	}
	/* one write, so that lines of concurrent threads do not interleave */
	fwrite(line, 1, len, stderr);
}
