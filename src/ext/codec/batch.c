/*
 * batch.c
 *		Write batches: the one interface of the two encoders, and the
 *		errors they report.
 *
 * A batch is encoded either by the wire encoder (batch_wire.c, the
 * default), which writes protobuf's wire format straight into a reused
 * output buffer, or by the protobuf encoder (batch_protobuf.c), which
 * builds protobuf-c messages from an arena or from malloc and packs them:
 * the reference, and the benchmark's measure of allocation.  Both give the
 * same bytes.  The encoders return failures; the Postgres errors are
 * raised here.  tcopy_batch_add, called per row, is inline in tcopy/codec.h, so
 * that choosing the encoder costs a branch and no call.
 */
#include "postgres.h"

#include "tcopy/codec.h"

/* settings, registered in tcopy.c */
int			tcopy_max_frame_mb = TC_FRAME_MAX_DEFAULT / (1024 * 1024);	/* tcopy.max_frame_mb */

void
tcopy_batch_out_of_memory(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory building a tcopy write batch")));
}

/*
 * A batch too large for one frame: the writer sends a batch before a row
 * that would not fit and refuses a row that alone does not
 * (tcopy_writer_add_row), so this is a backstop.
 */
static void
batch_check_size(size_t size)
{
	if (size > (size_t) tcopy_max_frame_mb * 1024 * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tcopy write batch of %zu bytes exceeds the frame limit of %d MB",
						size, tcopy_max_frame_mb),
				 errhint("Raise tcopy.max_frame_mb and the tserver's --max-frame-mb together.")));
}

void
tcopy_batch_init(TcopyBatch *batch, TcopyEncoder encoder, TcopyAllocMode mode)
{
	memset(batch, 0, sizeof(*batch));
	batch->encoder = encoder;
	if (encoder == TCOPY_ENCODER_PROTOBUF)
		tcopy_protobuf_batch_init(batch, mode);
}

void
tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id)
{
	size_t		size;

	if (batch->encoder == TCOPY_ENCODER_WIRE)
	{
		tcopy_wire_batch_pack(batch, seq, table_id);
		batch_check_size(batch->send_len);
		return;
	}
	size = tcopy_protobuf_batch_packed_size(batch, seq, table_id);
	batch_check_size(size);
	if (!tcopy_protobuf_batch_pack(batch, size))
		tcopy_batch_out_of_memory();
}

void
tcopy_batch_reset(TcopyBatch *batch)
{
	batch->nrows = 0;
	batch->payload_bytes = 0;
	batch->packed.len = 0;
	batch->send = NULL;
	batch->send_len = 0;
	if (batch->encoder == TCOPY_ENCODER_PROTOBUF)
		tcopy_protobuf_batch_reset(batch);
}

void
tcopy_batch_free(TcopyBatch *batch)
{
	tcopy_batch_reset(batch);
	if (batch->encoder == TCOPY_ENCODER_PROTOBUF)
		tcopy_protobuf_batch_free(batch);
	tc_buf_free(&batch->packed);
}
