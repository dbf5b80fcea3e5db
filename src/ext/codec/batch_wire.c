/*
 * batch_wire.c
 *		The wire encoder of write batches (the default): rows written
 *		straight into the output buffer in the tserver's stored form
 *		(tc_record.h), which the tserver checks and stores as received.
 *
 * Each row is written as it comes, after room for the batch header, which
 * is written when the batch is packed (tc_wire.h: protobuf's wire format,
 * the rows its field records): a batch allocates nothing once the buffer
 * has grown to its size, and the rows' strings are copied once.  No
 * Postgres error is raised here: batch.c reports failures.
 */
#include "postgres.h"

#include "tcopy/codec.h"

/*
 * Append row, of at most bound bytes, after the header's room: 1; 0 when
 * out of memory, -1 when the row does not fit the batch's layout.  The
 * caller raises the errors (batch.c's): this file calls none of batch.c's
 * functions, which call it (no circle of calls, check_layers.pl).
 */
int
tcopy_wire_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound)
{
	uint8	   *end;

	if (batch->packed.len == 0)
		batch->packed.len = TC_WIRE_BATCH_HEADER_MAX;	/* the header's room */
	if (!tc_buf_reserve(&batch->packed, bound))
		return 0;
	end = tc_record_put(batch->packed.data + batch->packed.len, &batch->layout, row,
						batch->kind != TCOPY__WRITE_KIND__WRITE_DELETE);
	if (unlikely(end == NULL))
		return -1;
	batch->packed.len = end - batch->packed.data;
	batch->payload_bytes = batch->packed.len;
	return 1;
}

/* Write the header just before the rows: batch->send, batch->send_len. */
void
tcopy_wire_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id)
{
	uint8	   *rows = batch->packed.data + TC_WIRE_BATCH_HEADER_MAX;
	uint8	   *start;

	Assert(batch->packed.len >= TC_WIRE_BATCH_HEADER_MAX);
	start = tc_wire_put_batch_header(rows, seq, table_id, batch->kind,
									 batch->packed.len - TC_WIRE_BATCH_HEADER_MAX);
	batch->send = start;
	batch->send_len = batch->packed.data + batch->packed.len - start;
}
