/*
 * batch.c
 *		Write batches: rows encoded into a reused output buffer, either
 *		straight in protobuf's wire format or through protobuf-c messages.
 *
 * The wire encoder (the default, tc_wire.h) writes each row as it comes
 * into the output buffer, after room for the batch header, which is
 * written when the batch is packed: a batch allocates nothing once the
 * buffer has grown to its size, and the rows' strings are copied once.
 *
 * The protobuf encoder is the reference the wire encoder's bytes are tested
 * against, and the benchmark's measure of allocation: it builds a
 * Tcopy__WriteBatch and packs it.  In arena mode every message and array
 * of a batch comes from one arena that is reset, not freed, when the batch
 * has been sent, and the row-pointer array and the output buffer keep their
 * capacity.  Malloc mode builds the same messages the way a naive
 * protobuf-c client does, one malloc per object and a fresh output buffer
 * per batch, all freed after the batch is sent.  All three produce the same
 * bytes.
 */
#include "tcopy.h"

#include <stdlib.h>

#define BATCH_ARENA_BLOCK (256 * 1024)

static void
batch_out_of_memory(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory building a tcopy write batch")));
}

void
tcopy_batch_init(TcopyBatch *batch, TcopyEncoder encoder, TcopyAllocMode mode)
{
	memset(batch, 0, sizeof(*batch));
	batch->encoder = encoder;
	batch->mode = mode;
	tc_arena_init(&batch->arena, BATCH_ARENA_BLOCK);
	tcopy__write_batch__init(&batch->msg);
}

static void *
batch_alloc(TcopyBatch *batch, size_t size)
{
	void	   *ptr;

	if (batch->mode == TCOPY_ALLOC_ARENA)
	{
		ptr = tc_arena_alloc(&batch->arena, size);
		if (ptr == NULL)
			batch_out_of_memory();
		return ptr;
	}
	if (batch->nmallocs == batch->mallocs_cap)
	{
		size_t		cap = batch->mallocs_cap ? batch->mallocs_cap * 2 : 1024;
		void	  **grown = realloc(batch->mallocs, cap * sizeof(void *));

		if (grown == NULL)
			batch_out_of_memory();
		batch->mallocs = grown;
		batch->mallocs_cap = cap;
	}
	ptr = malloc(size);
	if (ptr == NULL)
		batch_out_of_memory();
	batch->mallocs[batch->nmallocs++] = ptr;
	return ptr;
}

/* A copy of n elements of size bytes in the batch's memory; NULL if n is 0. */
static void *
batch_copy(TcopyBatch *batch, const void *src, size_t n, size_t size)
{
	void	   *dst;

	if (n == 0)
		return NULL;
	dst = batch_alloc(batch, n * size);
	memcpy(dst, src, n * size);
	return dst;
}

/* The protobuf encoder: row as a Tcopy__Row in the batch's memory. */
static void
batch_add_message(TcopyBatch *batch, const TcWireRow *wire)
{
	Tcopy__Row *row;

	if (batch->msg.n_rows == batch->rows_cap)
	{
		size_t		cap = batch->rows_cap ? batch->rows_cap * 2 : 256;
		Tcopy__Row **grown = realloc(batch->msg.rows, cap * sizeof(Tcopy__Row *));

		if (grown == NULL)
			batch_out_of_memory();
		batch->msg.rows = grown;
		batch->rows_cap = cap;
	}
	row = batch_alloc(batch, sizeof(Tcopy__Row));
	tcopy__row__init(row);
	batch->msg.rows[batch->msg.n_rows++] = row;

	row->n_ints = wire->n_ints;
	row->ints = batch_copy(batch, wire->ints, wire->n_ints, sizeof(int64_t));
	row->n_floats = wire->n_floats;
	row->floats = batch_copy(batch, wire->floats, wire->n_floats, sizeof(double));
	row->n_nulls = wire->n_nulls;
	row->nulls = batch_copy(batch, wire->nulls, wire->n_nulls, sizeof(uint32_t));
	row->n_blobs = wire->n_blobs;
	if (wire->n_blobs > 0)
		row->blobs = batch_alloc(batch, sizeof(ProtobufCBinaryData) * wire->n_blobs);
	for (uint32_t i = 0; i < wire->n_blobs; i++)
	{
		const TcWireBlob *src = &wire->blobs[i];
		size_t		len = (size_t) src->len + src->pad;
		uint8	   *data = batch_alloc(batch, len > 0 ? len : 1);

		memcpy(data, src->data, src->len);
		memset(data + src->len, ' ', src->pad);
		row->blobs[i].data = data;
		row->blobs[i].len = len;
	}
}

void
tcopy_batch_add(TcopyBatch *batch, const TcWireRow *row)
{
	if (batch->encoder == TCOPY_ENCODER_PROTOBUF)
	{
		batch_add_message(batch, row);
		/* about what the wire encoder counts, without packing */
		batch->payload_bytes += tc_wire_row_bound(row);
	}
	else
	{
		if (batch->packed.len == 0)
			batch->packed.len = TC_WIRE_BATCH_HEADER_MAX;	/* the header's room */
		if (!tc_buf_reserve(&batch->packed, tc_wire_row_bound(row)))
			batch_out_of_memory();
		batch->packed.len = tc_wire_put_row(batch->packed.data + batch->packed.len, row) -
			batch->packed.data;
		batch->payload_bytes = batch->packed.len;
	}
	batch->nrows++;
}

static void
batch_check_size(size_t size)
{
	if (size > TC_FRAME_MAX_DEFAULT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tcopy write batch of %zu bytes exceeds the limit of %u bytes",
						size, TC_FRAME_MAX_DEFAULT),
				 errhint("Lower tcopy.batch_rows or tcopy.batch_size.")));
}

void
tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id)
{
	size_t		size;

	if (batch->encoder == TCOPY_ENCODER_WIRE)
	{
		uint8	   *rows = batch->packed.data + TC_WIRE_BATCH_HEADER_MAX;
		uint8	   *start;

		Assert(batch->packed.len >= TC_WIRE_BATCH_HEADER_MAX);
		start = tc_wire_put_batch_header(rows, seq, table_id);
		batch->send = start;
		batch->send_len = batch->packed.data + batch->packed.len - start;
		batch_check_size(batch->send_len);
		return;
	}
	batch->msg.seq = seq;
	batch->msg.table_id = table_id;
	size = tcopy__write_batch__get_packed_size(&batch->msg);
	batch_check_size(size);
	batch->packed.len = 0;
	if (!tc_buf_reserve(&batch->packed, size))
		batch_out_of_memory();
	batch->packed.len = tcopy__write_batch__pack(&batch->msg, batch->packed.data);
	batch->send = batch->packed.data;
	batch->send_len = batch->packed.len;
}

void
tcopy_batch_reset(TcopyBatch *batch)
{
	batch->nrows = 0;
	batch->payload_bytes = 0;
	batch->packed.len = 0;
	batch->send = NULL;
	batch->send_len = 0;
	if (batch->encoder == TCOPY_ENCODER_WIRE)
		return;
	batch->msg.n_rows = 0;
	if (batch->mode == TCOPY_ALLOC_ARENA)
	{
		tc_arena_reset(&batch->arena);
		return;
	}
	/* the naive way: everything of the batch goes back to malloc */
	for (size_t i = 0; i < batch->nmallocs; i++)
		free(batch->mallocs[i]);
	batch->nmallocs = 0;
	free(batch->msg.rows);
	batch->msg.rows = NULL;
	batch->rows_cap = 0;
	tc_buf_free(&batch->packed);
}

void
tcopy_batch_free(TcopyBatch *batch)
{
	tcopy_batch_reset(batch);
	tc_arena_free(&batch->arena);
	free(batch->mallocs);
	batch->mallocs = NULL;
	batch->mallocs_cap = 0;
	free(batch->msg.rows);
	batch->msg.rows = NULL;
	batch->rows_cap = 0;
	tc_buf_free(&batch->packed);
}
