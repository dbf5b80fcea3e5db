/*
 * writer.c
 *		Rows to batches to the tserver: the one write path shared by the COPY
 *		hook and the FDW's inserts.
 *
 * A batch closes at the table's row or byte limit and is sent at once; the
 * client library keeps a window of batches in flight, so the tserver
 * applies one batch while the backend builds the next.  Sending copies the
 * packed batch into the socket, so the batch's memory is reused as soon as
 * the send returns.  The batch's memory is malloc'ed (arena blocks,
 * buffers), so a reset callback on the writer's memory context frees it
 * when a statement fails.
 */

#include "postgres.h"

#include "access/xact.h"

#include "utils/memutils.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* settings, registered in tcopy.c */
int			tcopy_encoder = TCOPY_ENCODER_WIRE;	/* tcopy.encoder */
int			tcopy_alloc_mode = TCOPY_ALLOC_ARENA;	/* tcopy.alloc_mode */

/* a parallel COPY's worker's sink (transaction.h); NULL elsewhere */
void		(*tcopy_parallel_sink) (TcopyWriter *writer) = NULL;

static void
writer_release(void *arg)
{
	TcopyWriter *writer = arg;

	tcopy_batch_free(&writer->batch);
}

/* A writer of codec's rows, its batch freed with the memory context. */
static TcopyWriter *
writer_make(TcopyRelCodec *codec)
{
	TcopyWriter *writer = palloc0(sizeof(TcopyWriter));
	MemoryContextCallback *callback = palloc0(sizeof(MemoryContextCallback));

	writer->codec = codec;
	writer->line_relname = codec->relname;
	writer->batch_rows = codec->options.batch_rows;
	writer->batch_bytes = codec->options.batch_bytes;
	tcopy_batch_init(&writer->batch, (TcopyEncoder) tcopy_encoder,
					 (TcopyAllocMode) tcopy_alloc_mode);
	tcopy_batch_set_layout(&writer->batch, codec->schema);
	tcopy_row_buf_init(&writer->row, codec->schema->n_columns);
	callback->func = writer_release;
	callback->arg = writer;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, callback);
	return writer;
}

/*
 * A writer whose batches go to sink instead of a tserver: a parallel COPY's
 * worker (copy_worker.c) hands them to its leader.  sink sees the batch
 * and its runs of lines before they are reset.
 */
TcopyWriter *
tcopy_writer_begin_detached(TcopyRelCodec *codec, void (*sink) (TcopyWriter *writer))
{
	TcopyWriter *writer = writer_make(codec);

	writer->sink = sink;
	return writer;
}

TcopyWriter *
tcopy_writer_begin(TcopyRelCodec *codec)
{
	TcopyWriter *writer = writer_make(codec);

	if (tcopy_xact_drops_table(&codec->options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot write to foreign table \"%s\": its tserver table \"%s\" is dropped in this transaction",
						codec->relname, codec->options.table_name),
				 errdetail("A DROP of a tcopy table drops its tserver table when the transaction commits, "
						   "after the rows the transaction wrote.")));
	writer->conn = tcopy_xact_write_connection(&codec->options, codec->userid);
	/*
	 * the session may have failed on a batch sent before (a duplicate key,
	 * found as the rows arrive): the open says so, worded as the session's
	 */
	if (!tcopy_connection_try_table_id(writer->conn, codec, &writer->table_id))
		tcopy_session_fail(writer->conn, psprintf("could not write to foreign table \"%s\"",
												  codec->relname));
	if (codec->options.key_attnums != NIL)
		tcopy_xact_set_on_conflict(writer->conn, writer->table_id,
								   codec->options.on_conflict, codec->relname);
	return writer;
}

/* Send the current batch and start the next. */
static void
writer_flush(TcopyWriter *writer)
{
	uint64		nrows = writer->batch.nrows;

	if (nrows == 0)
		return;
	if (writer->sink != NULL)
	{
		writer->sink(writer);
		writer->nruns = 0;
		writer->runs_lost = false;
		tcopy_batch_reset(&writer->batch);
		return;
	}
	/* the rows' lines first: a duplicate may be reported by this send */
	if (!writer->conn->null_transport)
		tcopy_lines_add_batch(writer->conn, writer->line_relname,
							  writer->runs_lost ? NULL : writer->runs, writer->nruns, nrows);
	writer->nruns = 0;
	writer->runs_lost = false;
	tcopy_xact_send(writer->conn, &writer->batch, writer->table_id, nrows);
	tcopy_batch_reset(&writer->batch);
	/* a buffer grown for batches larger than a routed COPY's share now is */
	if (writer->routed && writer->batch.packed.cap > (size_t) writer->batch_bytes * 4)
		tc_buf_free(&writer->batch.packed);
}

/*
 * The row about to be added starts a run of lines in the batch: its line
 * is not the one before's plus one (or it is the batch's first).
 */
static pg_noinline void
writer_start_run(TcopyWriter *writer)
{
	if (writer->runs_lost)
		return;
	if (writer->nruns == writer->runs_cap)
	{
		int			cap = writer->runs_cap ? writer->runs_cap * 2 : 8;

		if (writer->runs_cap >= TCOPY_LINE_RUNS_MAX)
		{
			writer->runs_lost = true;
			return;
		}
		cap = Min(cap, TCOPY_LINE_RUNS_MAX);
		writer->runs = writer->runs == NULL ?
			MemoryContextAlloc(GetMemoryChunkContext(writer), cap * sizeof(TcopyLineRun)) :
			repalloc(writer->runs, cap * sizeof(TcopyLineRun));
		writer->runs_cap = cap;
	}
	writer->runs[writer->nruns].row = writer->batch.nrows;
	writer->runs[writer->nruns].line = writer->line;
	writer->runs[writer->nruns].relname = NULL;
	writer->nruns++;
}

/*
 * A row larger than a frame can carry, with the batch header's room: it
 * cannot be sent, however the batch options are set.
 */
static pg_noinline void
writer_row_too_large(TcopyWriter *writer, size_t bytes)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("row of foreign table \"%s\" is %zu bytes, more than the %d MB a tserver frame carries",
					writer->codec->relname, bytes, tcopy_max_frame_mb),
			 errhint("Raise tcopy.max_frame_mb and the tserver's --max-frame-mb together (at most 4095).")));
}

void
tcopy_writer_add_row(TcopyWriter *writer)
{
	size_t		frame = (size_t) tcopy_max_frame_mb * 1024 * 1024 - TCOPY_BATCH_HEADER_ROOM;
	size_t		bytes;

	if (writer->codec->nimages > 0)
		tcopy_encode_images(writer->codec, &writer->row);
	bytes = tcopy_batch_row_bound(&writer->batch, &writer->row.wire, false);
	if (unlikely(writer->batch.payload_bytes + bytes > frame))
	{
		/* a bound counts strings twice: the row itself may well fit */
		if (bytes > frame &&
			(bytes = tcopy_batch_row_bound(&writer->batch, &writer->row.wire, true)) > frame)
			writer_row_too_large(writer, bytes);
		if (writer->batch.payload_bytes + bytes > frame)
			writer_flush(writer);
	}
	/* a comparison a row: a run starts only where the lines do not follow */
	if (unlikely(writer->batch.nrows == 0 || writer->line != writer->next_line))
		writer_start_run(writer);
	writer->next_line = writer->line != 0 ? writer->line + 1 : 0;
	tcopy_batch_add(&writer->batch, &writer->row.wire, bytes);
	if (writer->batch.nrows >= (size_t) writer->batch_rows ||
		writer->batch.payload_bytes >= (size_t) writer->batch_bytes)
		writer_flush(writer);
}

/*
 * What the rows added from now on do: a batch holds rows of one kind, so a
 * change of kind sends the batch so far, and the tserver applies the
 * session's rows in the order they were added.
 */
void
tcopy_writer_set_kind(TcopyWriter *writer, Tcopy__WriteKind kind)
{
	if (writer->batch.kind == kind)
		return;
	writer_flush(writer);
	writer->batch.kind = kind;
}

void
tcopy_writer_add(TcopyWriter *writer, Datum *values, bool *nulls)
{
	tcopy_encode_row(writer->codec, values, nulls, &writer->row);
	tcopy_writer_add_row(writer);
}

/* Send the batch being built now: a parallel COPY's chunk ends. */
void
tcopy_writer_flush(TcopyWriter *writer)
{
	writer_flush(writer);
}

/*
 * Send a batch a parallel COPY's worker encoded (copy_parallel.c): nrows
 * rows in the wire encoding (rows, len bytes) with their runs of lines
 * (NULL: not known), as the writer's own next batch.
 */
void
tcopy_writer_send_encoded(TcopyWriter *writer, const char *rows, size_t len,
						  uint32 nrows, const TcopyLineRun *runs, int nruns)
{
	TcopyBatch *batch = &writer->batch;

	Assert(batch->nrows == 0 && batch->encoder == TCOPY_ENCODER_WIRE);
	if (!tc_buf_reserve(&batch->packed, TC_WIRE_BATCH_HEADER_MAX + len))
		tcopy_batch_out_of_memory();
	memcpy(batch->packed.data + TC_WIRE_BATCH_HEADER_MAX, rows, len);
	batch->packed.len = TC_WIRE_BATCH_HEADER_MAX + len;
	batch->payload_bytes = batch->packed.len;
	batch->nrows = nrows;
	if (runs == NULL)
		writer->runs_lost = true;
	else
	{
		if (writer->runs_cap < nruns)
		{
			writer->runs = writer->runs == NULL ?
				MemoryContextAlloc(GetMemoryChunkContext(writer), nruns * sizeof(TcopyLineRun)) :
				repalloc(writer->runs, nruns * sizeof(TcopyLineRun));
			writer->runs_cap = nruns;
		}
		memcpy(writer->runs, runs, nruns * sizeof(TcopyLineRun));
		writer->nruns = nruns;
	}
	writer_flush(writer);
}

void
tcopy_writer_finish(TcopyWriter *writer)
{
	writer_flush(writer);
	if (writer->sink != NULL)
		return;					/* the leader waits for the acks */

	/*
	 * Under on_conflict 'error', a duplicate the tserver settles as rows
	 * arrive (a load in key order) fails the statement that sent it, not
	 * the commit; under REPEATABLE READ and SERIALIZABLE, so does an update
	 * of a row changed since the snapshot (snapshot.c): wait for the acks,
	 * one round trip per statement.
	 */
	if (writer->codec->options.key_attnums != NIL &&
		(writer->codec->options.on_conflict == TCOPY_ON_CONFLICT_ERROR ||
		 IsolationUsesXactSnapshot()) &&
		!writer->conn->null_transport)
	{
		int			rc;

		writer->conn->busy = true;
		rc = tc_client_wait_acks(writer->conn->client);
		writer->conn->busy = false;
		if (rc < 0)
			tcopy_session_fail(writer->conn, "could not send a write batch");
	}
}

void
tcopy_writer_free(TcopyWriter *writer)
{
	tcopy_batch_free(&writer->batch);
}
