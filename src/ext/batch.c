/*
 * batch.c
 *		Write batches: the protobuf-c messages of a batch of rows, and the
 *		buffer they are packed into.
 *
 * In arena mode (the default) every message and array of a batch comes
 * from one arena that is reset, not freed, when the batch has been sent,
 * and the row-pointer array and the output buffer keep their capacity: once
 * the first batches have grown them, a load allocates nothing per row or
 * per batch.  Malloc mode builds the same messages the way a naive
 * protobuf-c client does, one malloc per object and a fresh output buffer
 * per batch, all freed after the batch is sent; it exists so that the
 * benchmark can show what the arena buys.  Both produce the same bytes.
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
tcopy_batch_init(TcopyBatch *batch, TcopyAllocMode mode)
{
	memset(batch, 0, sizeof(*batch));
	batch->mode = mode;
	tc_arena_init(&batch->arena, BATCH_ARENA_BLOCK);
	tcopy__write_batch__init(&batch->msg);
}

void *
tcopy_batch_alloc(TcopyBatch *batch, size_t size)
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

Tcopy__Row *
tcopy_batch_add_row(TcopyBatch *batch)
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
	row = tcopy_batch_alloc(batch, sizeof(Tcopy__Row));
	tcopy__row__init(row);
	batch->msg.rows[batch->msg.n_rows++] = row;
	return row;
}

void
tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id)
{
	size_t		size;

	batch->msg.seq = seq;
	batch->msg.table_id = table_id;
	size = tcopy__write_batch__get_packed_size(&batch->msg);
	if (size > TC_FRAME_MAX_DEFAULT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("tcopy write batch of %zu bytes exceeds the limit of %u bytes",
						size, TC_FRAME_MAX_DEFAULT),
				 errhint("Lower tcopy.batch_rows or tcopy.batch_size.")));
	batch->packed.len = 0;
	if (!tc_buf_reserve(&batch->packed, size))
		batch_out_of_memory();
	batch->packed.len = tcopy__write_batch__pack(&batch->msg, batch->packed.data);
}

void
tcopy_batch_reset(TcopyBatch *batch)
{
	batch->msg.n_rows = 0;
	batch->payload_bytes = 0;
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
