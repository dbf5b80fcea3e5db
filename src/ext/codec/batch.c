/*
 * batch.c
 *		Write batches: the one interface of the two encoders, and the
 *		errors they report.
 *
 * A batch is encoded either by the wire encoder (batch_wire.c, the
 * default), which writes its rows in the tserver's stored form straight
 * into a reused output buffer (WriteBatch.records: the tserver checks and
 * stores them as received), or by the protobuf encoder (batch_protobuf.c),
 * which builds protobuf-c Row messages from an arena or from malloc and
 * packs them (WriteBatch.rows: the tserver decodes and encodes them): the
 * benchmark's measure of allocation.  The encoders return failures; the
 * Postgres errors are raised here.  tcopy_batch_add, called per row, is inline in tcopy/codec.h, so
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
tcopy_batch_set_layout(TcopyBatch *batch, const Tcopy__Schema *schema)
{
	uint32		ncolumns = (uint32) schema->n_columns;
	Tcopy__Kind *kinds = palloc(sizeof(Tcopy__Kind) * Max(ncolumns, 1));
	bool	   *is_key = palloc0(sizeof(bool) * Max(ncolumns, 1));
	uint32	   *slots = palloc(sizeof(uint32) * Max(schema->n_key, 1));

	for (uint32 i = 0; i < ncolumns; i++)
		kinds[i] = schema->columns[i]->kind;
	for (size_t k = 0; k < schema->n_key; k++)
		is_key[schema->key[k]] = true;
	batch->layout.ncolumns = ncolumns;
	batch->layout.kinds = kinds;
	batch->layout.is_key = is_key;
	batch->layout.nkey = (uint32) schema->n_key;
	batch->layout.key_columns = schema->key;
	tc_record_layout_derive(&batch->layout, slots);
}

/*
 * A row whose values do not fit its table's columns: the row buffer was
 * filled for another table, a bug.
 */
void
tcopy_batch_bad_row(void)
{
	elog(ERROR, "tcopy row does not fit its table's columns");
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
