/*
 * ts_split.c
 *		A stand-in for the split of a key range into parts (the lead's, on
 *		main): no keys, one part.
 */
#include "ts_store_int.h"

int
ts_scan_split(TsStore *store, TsTable *table, const TcBuf *lower, const TcBuf *upper,
			  uint32_t max_parts, TcBuf **keys, size_t *nkeys, TsError *err)
{
	(void) store;
	(void) table;
	(void) lower;
	(void) upper;
	(void) max_parts;
	(void) err;
	*keys = NULL;
	*nkeys = 0;
	return 0;
}
