/*
 * ts_error.h
 *		How the tserver's modules report failure: a return code, and the
 *		caller's TsError filled with a protocol error code and a message for
 *		the Error frame.  A module of its own so that the codec, the runs and
 *		the sort can report errors without the store (and RocksDB).
 */
#ifndef TS_ERROR_H
#define TS_ERROR_H

#include "tcopy.pb-c.h"

/* What failed: a protocol error code and a message for the Error frame. */
typedef struct TsError
{
	Tcopy__ErrorCode code;
	char		message[512];
	uint32_t	table_id;		/* ERROR_DUPLICATE_KEY: the key's table */
} TsError;

/* Set err to code and the printf-formatted message (cut to fit). */
void		ts_error_set(TsError *err, Tcopy__ErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

#endif							/* TS_ERROR_H */
