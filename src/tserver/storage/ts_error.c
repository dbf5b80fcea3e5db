/*
 * ts_error.c
 *		Filling a caller's TsError: see ts_error.h.
 */
#include "ts_error.h"

#include <stdarg.h>
#include <stdio.h>

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
