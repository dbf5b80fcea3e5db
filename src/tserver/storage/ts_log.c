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
bool		ts_log_json = false;

static const char *const level_names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
static const char *const json_levels[] = {"debug", "info", "warning", "error"};

/* msg as a JSON string's contents into out (NUL-terminated, cut to fit). */
static size_t
json_escape(const char *msg, char *out, size_t size)
{
	size_t		n = 0;

	for (const unsigned char *p = (const unsigned char *) msg; *p != '\0' && n + 7 < size; p++)
	{
		if (*p == '"' || *p == '\\')
		{
			out[n++] = '\\';
			out[n++] = (char) *p;
		}
		else if (*p < 0x20)
			n += (size_t) snprintf(out + n, size - n, "\\u%04x", *p);
		else
			out[n++] = (char) *p;
	}
	out[n] = '\0';
	return n;
}

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
	if (ts_log_json)
	{
		char		msg[1024];
		char		escaped[2048];	/* 6 bytes a control character at most,
									 * cut to fit */
		char		object[2048 + 128];

		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		va_start(args, fmt);
		vsnprintf(msg, sizeof(msg), fmt, args);
		va_end(args);
		json_escape(msg, escaped, sizeof(escaped));
		len = (size_t) snprintf(object, sizeof(object),
								"{\"time\":\"%s.%03dZ\",\"level\":\"%s\",\"message\":\"%s\"}\n",
								stamp, (int) (now.tv_usec / 1000), json_levels[level], escaped);
		fwrite(object, 1, len, stderr);
		return;
	}
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
