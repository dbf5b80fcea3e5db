/*
 * ts_error.c
 *		Filling a caller's TsError: see ts_error.h.
 */
#include "ts_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ts_error_set(TsError *err, Tcopy__ErrorCode code, const char *fmt,...)
{
	va_list		args;

	err->code = code;
	err->table_id = 0;
	err->row_ordinal = 0;
	err->ncolumns = 0;
	err->row_len = 0;
	va_start(args, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, args);
	va_end(args);
}

void
ts_error_prefix(TsError *err, const char *what)
{
	char		message[sizeof(err->message)];
	size_t		len = strlen(what);

	/* built by hand: snprintf of a message into its own size warns of cuts */
	memcpy(message, err->message, sizeof(message));
	if (len > sizeof(err->message) - 3)
		len = sizeof(err->message) - 3;
	memcpy(err->message, what, len);
	memcpy(err->message + len, ": ", 2);
	len += 2;
	strncpy(err->message + len, message, sizeof(err->message) - len - 1);
	err->message[sizeof(err->message) - 1] = '\0';
}

void
ts_error_rocksdb(TsError *err, const char *what, char *errptr)
{
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "%s: %s", what,
				 errptr ? errptr : "unknown error");
	free(errptr);
}
