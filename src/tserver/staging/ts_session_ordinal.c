/*
 * ts_session_ordinal.c
 *		Which row of a session a duplicate is: the session's TsConflictReport
 *		adds to the report (ts_conflict_report_duplicate) the duplicate's
 *		1-based position among the rows the session received, in the order
 *		of its batches (TsError.row_ordinal, Error.duplicate_ordinal), so
 *		that a client can name the row (a COPY's line).
 *
 * Nothing is kept per row.  A duplicate whose record is in a staging
 * buffer (the buffer being written, or the one a spill writes) is found
 * there by its address, its index by walking the buffer's records from
 * the start, and its row from the buffer's TsOrdinals.  A duplicate met
 * elsewhere (in the merge of runs, which keep no arrival order beyond
 * their own) is reported with row 0: not known.  Which paths know it:
 * docs/storage.md, "Duplicate keys".
 */
#include "ts_staging.h"

#include <stdint.h>

#include "ts_record.h"

/*
 * The index in buf of the record whose value, after a key of keylen bytes,
 * is at value; false when value is not a record's in buf.  (The key given
 * with a duplicate may be its first record's, of the same length.)
 */
static bool
buffer_record_index(const TcBuf *buf, uint32_t keylen, const uint8_t *value,
					size_t *index)
{
	uintptr_t	start = (uintptr_t) buf->data;
	uintptr_t	rec = (uintptr_t) value - keylen - TS_RECORD_HEADER_SIZE;
	size_t		off = 0,
				k = 0;

	if (buf->data == NULL || (uintptr_t) value < start + TS_RECORD_HEADER_SIZE + keylen ||
		(uintptr_t) value > start + buf->len)
		return false;
	while (off < rec - start)
	{
		const uint8_t *r = buf->data + off;

		off += ts_record_size(ts_record_keylen(r), ts_record_valuelen(r));
		k++;
	}
	*index = k;
	return off == rec - start;
}

int
ts_session_report_duplicate(void *arg, const uint8_t *key, uint32_t keylen,
							const uint8_t *value, uint32_t valuelen, TsError *err)
{
	TsSession  *session = arg;
	SpillJob   *job = &session->spill;
	size_t		index;

	(void) ts_conflict_report_duplicate(session->store, key, keylen, value, valuelen, err);

	/*
	 * The spill's buffer is not written while the spill runs, so either
	 * thread may look at it; the session's is the connection thread's,
	 * which a spill thread (compacting runs) must not read.
	 */
	if (buffer_record_index(&job->staged, keylen, value, &index))
		err->row_ordinal = ts_ordinals_row(&job->ordinals, index);
	else if (!ts_spill_in_job() &&
			 buffer_record_index(&session->staged, keylen, value, &index))
		err->row_ordinal = ts_ordinals_row(&session->ordinals, index);
	return -1;
}
