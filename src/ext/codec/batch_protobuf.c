/*
 * batch_protobuf.c
 *		The protobuf encoder of write batches: protobuf-c Row messages
 *		built, then packed, which the tserver decodes and encodes (the wire
 *		encoder sends the stored form instead): the benchmark's measure of
 *		allocation.
 *
 * In arena mode every message and array of a batch comes from one arena
 * that is reset, not freed, when the batch has been sent, and the
 * row-pointer array and the output buffer keep their capacity.  Malloc
 * mode builds the same messages the way a naive protobuf-c client does,
 * one malloc per object and a fresh output buffer per batch, all freed
 * after the batch is sent.  Both produce the same bytes.  No Postgres
 * error is raised here: batch.c reports failures.
 */

#include "postgres.h"

#include <stdlib.h>

#include "tcopy/codec.h"

#define BATCH_ARENA_BLOCK (256 * 1024)

void
tcopy_protobuf_batch_init(TcopyBatch *batch, TcopyAllocMode mode)
{
	batch->mode = mode;
	tc_arena_init(&batch->arena, BATCH_ARENA_BLOCK);
	tcopy__write_batch__init(&batch->msg);
}

/* size bytes in the batch's memory; NULL when out of memory. */
static void *
batch_alloc(TcopyBatch *batch, size_t size)
{
	void	   *ptr;

	if (batch->mode == TCOPY_ALLOC_ARENA)
		return tc_arena_alloc(&batch->arena, size);
	if (batch->nmallocs == batch->mallocs_cap)
	{
		size_t		cap = batch->mallocs_cap ? batch->mallocs_cap * 2 : 1024;
		void	  **grown = realloc(batch->mallocs, cap * sizeof(void *));

		if (grown == NULL)
			return NULL;
		batch->mallocs = grown;
		batch->mallocs_cap = cap;
	}
	ptr = malloc(size);
	if (ptr == NULL)
		return NULL;
	batch->mallocs[batch->nmallocs++] = ptr;
	return ptr;
}

/*
 * Copy n elements of size bytes into the batch's memory at *dst (NULL if n
 * is 0); false when out of memory.
 */
static bool
batch_copy(TcopyBatch *batch, void **dst, const void *src, size_t n, size_t size)
{
	*dst = NULL;
	if (n == 0)
		return true;
	*dst = batch_alloc(batch, n * size);
	if (*dst == NULL)
		return false;
	memcpy(*dst, src, n * size);
	return true;
}

/* Append row as a Tcopy__Row in the batch's memory; false when out of memory. */
bool
tcopy_protobuf_batch_add(TcopyBatch *batch, const TcWireRow *wire, size_t bound)
{
	Tcopy__Row *row;

	if (batch->msg.n_rows == batch->rows_cap)
	{
		size_t		cap = batch->rows_cap ? batch->rows_cap * 2 : 256;
		Tcopy__Row **grown = realloc(batch->msg.rows, cap * sizeof(Tcopy__Row *));

		if (grown == NULL)
			return false;
		batch->msg.rows = grown;
		batch->rows_cap = cap;
	}
	row = batch_alloc(batch, sizeof(Tcopy__Row));
	if (row == NULL)
		return false;
	tcopy__row__init(row);
	batch->msg.rows[batch->msg.n_rows++] = row;

	row->n_ints = wire->n_ints;
	row->n_floats = wire->n_floats;
	row->n_nulls = wire->n_nulls;
	if (!batch_copy(batch, (void **) &row->ints, wire->ints, wire->n_ints, sizeof(int64_t)) ||
		!batch_copy(batch, (void **) &row->floats, wire->floats, wire->n_floats, sizeof(double)) ||
		!batch_copy(batch, (void **) &row->nulls, wire->nulls, wire->n_nulls, sizeof(uint32_t)))
		return false;
	row->n_blobs = wire->n_blobs;
	if (wire->n_blobs > 0)
	{
		row->blobs = batch_alloc(batch, sizeof(ProtobufCBinaryData) * wire->n_blobs);
		if (row->blobs == NULL)
			return false;
	}
	for (uint32_t i = 0; i < wire->n_blobs; i++)
	{
		const TcWireBlob *src = &wire->blobs[i];
		size_t		len = (size_t) src->len + src->pad;
		uint8	   *data = batch_alloc(batch, len > 0 ? len : 1);

		if (data == NULL)
			return false;
		memcpy(data, src->data, src->len);
		memset(data + src->len, ' ', src->pad);
		row->blobs[i].data = data;
		row->blobs[i].len = len;
	}
	/* about what the wire encoder counts, without packing */
	batch->payload_bytes += bound;
	return true;
}

/* Set the batch's seq and table id; the size of the packed batch. */
size_t
tcopy_protobuf_batch_packed_size(TcopyBatch *batch, uint64 seq, uint32 table_id)
{
	batch->msg.seq = seq;
	batch->msg.table_id = table_id;
	batch->msg.kind = batch->kind;
	return tcopy__write_batch__get_packed_size(&batch->msg);
}

/*
 * Pack the batch, of size bytes, into the output buffer: batch->send,
 * batch->send_len.  false when out of memory.
 */
bool
tcopy_protobuf_batch_pack(TcopyBatch *batch, size_t size)
{
	batch->packed.len = 0;
	if (!tc_buf_reserve(&batch->packed, size))
		return false;
	batch->packed.len = tcopy__write_batch__pack(&batch->msg, batch->packed.data);
	batch->send = batch->packed.data;
	batch->send_len = batch->packed.len;
	return true;
}

/* Forget the messages: the arena reset, or every malloc freed. */
void
tcopy_protobuf_batch_reset(TcopyBatch *batch)
{
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

/* Free what the encoder holds, after tcopy_protobuf_batch_reset. */
void
tcopy_protobuf_batch_free(TcopyBatch *batch)
{
	tc_arena_free(&batch->arena);
	free(batch->mallocs);
	batch->mallocs = NULL;
	batch->mallocs_cap = 0;
	free(batch->msg.rows);
	batch->msg.rows = NULL;
	batch->rows_cap = 0;
}
