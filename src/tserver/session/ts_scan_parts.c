/*
 * ts_scan_parts.c
 *		SPLIT (docs/scans.md, "Parallel scans"): the keys that cut a
 *		scan's key range into the parts of a parallel scan, which then
 *		names them as Scan.raw_lower and raw_upper (ts_scan_narrow).
 */
#include "ts_store_int.h"

#include <stdlib.h>

int
ts_store_split(TsStore *store, const Tcopy__Split *request, TcBuf **keys, size_t *nkeys,
			   TsError *err)
{
	TsTable    *table;
	TcBuf		lower = {0};
	TcBuf		upper = {0};
	bool		empty;
	uint32_t	max_parts = request->max_parts;
	int			rc = -1;

	*keys = NULL;
	*nkeys = 0;
	if (max_parts == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "split asks for no parts");
		return -1;
	}
	/* ts_scan_split answers at most SPLIT_MAX_PARTS, whatever is asked */
	table = ts_store_table(store, request->table_id, err);
	if (table == NULL)
		return -1;
	if (ts_scan_key_range(table, request->lower, request->upper, &lower, &upper, &empty,
						  err) != 0)
		goto done;
	/* an empty range, or one part asked for: no boundary */
	rc = 0;
	if (!empty && max_parts > 1)
		rc = ts_scan_split(store, table, &lower, &upper, max_parts, keys, nkeys, err);
done:
	tc_buf_free(&lower);
	tc_buf_free(&upper);
	return rc;
}
