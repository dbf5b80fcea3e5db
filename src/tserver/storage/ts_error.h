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

/*
 * The largest duplicate row an Error frame carries (Error.duplicate, packed),
 * and its most columns (the key's: TS_MAX_KEY_COLUMNS).  Held in the
 * TsError itself, so that an error needs no memory of its own and copies
 * as a struct; a key whose values take more goes with its message alone.
 */
#define TS_ERROR_ROW_MAX		4096
#define TS_ERROR_ROW_COLUMNS	32

/* What failed: a protocol error code and a message for the Error frame. */
typedef struct TsError
{
	Tcopy__ErrorCode code;
	char		message[512];
	uint32_t	table_id;		/* ERROR_DUPLICATE_KEY: the key's table */
	uint64_t	row_ordinal;	/* ERROR_DUPLICATE_KEY: the later row's
								 * 1-based position in its session; 0 when
								 * not known */

	/*
	 * ERROR_DUPLICATE_KEY: the later row's key values (Error.duplicate,
	 * packed) and the columns they are of; ncolumns 0 when not sent.
	 */
	uint32_t	ncolumns;
	uint32_t	columns[TS_ERROR_ROW_COLUMNS];
	uint32_t	row_len;
	uint8_t		row[TS_ERROR_ROW_MAX];
} TsError;

/* Set err to code and the printf-formatted message (cut to fit). */
void		ts_error_set(TsError *err, Tcopy__ErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Put "what: " before err's message (cut to fit), its code kept. */
void		ts_error_prefix(TsError *err, const char *what);

/* A RocksDB error string as a TsError (frees errptr, as RocksDB's C API asks). */
void		ts_error_rocksdb(TsError *err, const char *what, char *errptr);

#endif							/* TS_ERROR_H */
