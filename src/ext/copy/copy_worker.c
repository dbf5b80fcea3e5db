/*
 * copy_worker.c
 *		A parallel COPY's worker: Postgres' COPY reader over the chunks the
 *		leader hands it, tcopy's encoder, the batches back to the leader.
 *
 * The worker opens the COPY as the leader did (the same options, column
 * list, WHERE clause and encoding) with BeginCopyFrom reading through a
 * callback: the chunk's bytes, copied from the input ring as the input
 * queue's messages name them, then an end of input
 * at the chunk's end.  Before each chunk its reader's line count is set to
 * the lines before the chunk (copy_chunks.c counts them as the reader
 * does), and after it the end of input is forgotten, so that errors and
 * the lines of a duplicate key's CONTEXT are those of a serial COPY.  Rows
 * become batches by the writer's code (writer.c), which sends them to the
 * leader instead of a tserver.
 *
 * With streams (docs/parallel.md#streams) the worker sends its batches to
 * the tservers itself: for each write session of the leader's it has rows
 * for (the table's, or the sessions of the partitions it routes rows to),
 * it connects as the leader's user mapping says, joins the session, and
 * sends each chunk's batches for it between a CHUNK and its end; the
 * tserver stages the chunks in order.  The leader then gets only each
 * batch's row count and lines.  The worker leaves once the tservers
 * acknowledged everything it sent, so that nothing it sent is in flight
 * when the leader closes the streams.
 *
 * An error while a chunk is read is caught and sent to the leader in its
 * place: the leader raises the first error in input order, as a serial
 * COPY would, with the words and CONTEXT this reader gave it.  The worker
 * then waits to be stopped with the leader's transaction.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "copy_parallel.h"

#include "access/parallel.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

/* The worker's stream of one of the leader's write sessions. */
typedef struct WorkerStream
{
	TcClient   *client;			/* NULL: not joined yet */
	uint64		seq;			/* of its last batch or chunk end */
	uint64		chunk;			/* the chunk open on it; 0: none */
} WorkerStream;

/* The worker's state: the reader's callback has no argument. */
static struct
{
	shm_mq_handle *in;
	shm_mq_handle *out;
	const char *preamble;		/* binary header still to hand out */
	size_t		preamble_len;
	const char *data;			/* the piece of the ring being handed out */
	uint64		file_pos;		/* or of the file, from here */
	size_t		data_len;
	int			file_fd;		/* the file whose pieces are sent, or -1 */
	TcopyRing  *ring;			/* the leader's input */
	const char *ring_data;
	uint64		consumed;		/* bytes of this worker's pieces copied out */
	bool		chunk_ended;	/* the chunk's end reached the reader */
	/* streams: the tables' slots, the worker's own connections to the tservers */
	TcopyParallelShared *shared;
	TcopyStreamSlot *slots;
	bool	   *opened;			/* [slot]: the table is open on its stream */
	WorkerStream *streams;		/* [session] */
	uint64		chunk;			/* the chunk being read */
} worker;

/* The leader's next message (valid until the next); false once it detached. */
static bool
worker_receive(char *type, const char **data, size_t *len)
{
	Size		nbytes;
	void	   *msg;

	if (shm_mq_receive(worker.in, &nbytes, &msg, false) != SHM_MQ_SUCCESS)
		return false;
	if (nbytes < 1)
		elog(ERROR, "empty message from the parallel COPY leader");
	*type = *(char *) msg;
	*data = (char *) msg + 1;
	*len = nbytes - 1;
	return true;
}

/*
 * Read n bytes of the file's piece into out: all of them, since the leader
 * saw them in the file.
 */
static void
worker_pread(char *out, size_t n)
{
	while (n > 0)
	{
		ssize_t		got = pread(worker.file_fd, out, n, (off_t) worker.file_pos);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read from COPY file: %m")));
		if (got == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("COPY file \"%s\" was truncated while it was read",
							worker.shared->file_name)));
		out += got;
		n -= got;
		worker.file_pos += got;
	}
}

/*
 * Open the file the leader opened: through the leader's descriptor
 * (/proc/<pid>/fd/<fd>, the same file even if it was renamed over or
 * removed since, as the serial COPY reads it), else by its name, where a
 * file renamed over it since is not the COPY's.
 */
static int
worker_open_file(const TcopyParallelShared *shared)
{
	char		proc[64];
	int			fd;
	struct stat st;

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", shared->file_pid, shared->file_fd);
	fd = OpenTransientFile(proc, O_RDONLY | PG_BINARY);
	if (fd >= 0 && (fstat(fd, &st) != 0 ||
					st.st_dev != shared->file_dev || st.st_ino != shared->file_ino))
	{
		CloseTransientFile(fd);
		fd = -1;
	}
	if (fd >= 0)
		return fd;
	fd = OpenTransientFile(shared->file_name, O_RDONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\" for reading: %m", shared->file_name)));
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", shared->file_name)));
	if (st.st_dev != shared->file_dev || st.st_ino != shared->file_ino)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("COPY file \"%s\" was replaced while it was read",
						shared->file_name)));
	return fd;
}

/* BeginCopyFrom's data_source_cb: the chunk's bytes, then its end. */
static int
worker_read_cb(void *outbuf, int minread, int maxread)
{
	char	   *out = outbuf;
	int			total = 0;

	if (worker.preamble_len > 0)
	{
		total = Min((size_t) maxread, worker.preamble_len);
		memcpy(out, worker.preamble, total);
		worker.preamble += total;
		worker.preamble_len -= total;
		return total;
	}
	while (total < maxread && !worker.chunk_ended)
	{
		char		type;
		const char *data;
		size_t		len;
		TcopyDataPiece piece;
		int			n;

		if (worker.data_len > 0)
		{
			n = Min((size_t) (maxread - total), worker.data_len);
			if (worker.file_fd >= 0)
				worker_pread(out + total, n);	/* moves file_pos on */
			else
			{
				memcpy(out + total, worker.data, n);
				worker.data += n;
			}
			worker.data_len -= n;
			total += n;
			worker.consumed += n;
			/* the piece is copied: the leader may read into its room */
			if (worker.data_len == 0)
				tcopy_ring_consumed(worker.ring, ParallelWorkerNumber, worker.consumed);
			continue;
		}
		if (total >= minread)
			break;
		if (!worker_receive(&type, &data, &len))
			ereport(ERROR,
					(errcode(ERRCODE_ADMIN_SHUTDOWN),
					 errmsg("parallel COPY leader went away")));
		if (type == TCOPY_MSG_CHUNK_END)
			worker.chunk_ended = true;
		else if (type == TCOPY_MSG_DATA && len == sizeof(piece) - 1)
		{
			memcpy((char *) &piece + 1, data, len);
			if (worker.file_fd >= 0)
				worker.file_pos = piece.offset;
			else if (piece.offset > worker.ring->size ||
					 piece.len > worker.ring->size - piece.offset)
				elog(ERROR, "bad piece from the parallel COPY leader");
			else
				worker.data = worker.ring_data + piece.offset;
			worker.data_len = piece.len;
		}
		else
			elog(ERROR, "unexpected message \"%c\" from the parallel COPY leader", type);
	}
	return total;
}

/* tcopy's reader gives back what Postgres' reader is to read: served first. */
static void
worker_unread(const char *data, size_t len)
{
	Assert(worker.preamble_len == 0);
	worker.preamble = data;
	worker.preamble_len = len;
}

/* Send a message to the leader; the worker ends if the leader is gone. */
static void
worker_send(shm_mq_iovec *iov, int iovcnt, bool flush)
{
	if (shm_mq_sendv(worker.out, iov, iovcnt, false, flush) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("parallel COPY leader went away")));
}

/*
 * After an error: wait for the leader's transaction to end, which stops
 * this worker.  Ending now would look like a crash to the leader (no clean
 * exit on its error queue) before it has raised the error in its turn.
 */
static void pg_attribute_noreturn()
worker_wait_to_be_stopped(void)
{
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The stream of session failed (why): tell the leader, which asks the
 * session why (a duplicate key is reported with its line), and wait to be
 * stopped.
 */
static void pg_attribute_noreturn()
worker_stream_failed(uint32 session, const char *why)
{
	TcopyStreamFailed failed = {TCOPY_MSG_STREAM_FAILED, session};
	shm_mq_iovec iov[2];

	iov[0].data = (const char *) &failed;
	iov[0].len = sizeof(failed);
	iov[1].data = why;
	iov[1].len = strlen(why) + 1;
	worker_send(iov, 2, true);
	worker_wait_to_be_stopped();
}

/* Check a stream's call (rc): a failure is the stream's. */
static void
worker_stream_check(uint32 session, int rc)
{
	if (rc < 0)
		worker_stream_failed(session, tc_client_error(worker.streams[session].client));
}

/* The chunk ends on every stream it has rows on (last: the input's last). */
static void
worker_end_chunk(bool last)
{
	if (worker.streams == NULL)
		return;
	for (uint32 i = 0; i < (uint32) worker.shared->nslots; i++)
	{
		WorkerStream *stream = &worker.streams[i];

		if (stream->client == NULL || stream->chunk != worker.chunk)
			continue;
		worker_stream_check(i, tc_client_chunk(stream->client, worker.chunk, true, last));
		stream->seq++;
		stream->chunk = 0;
	}
}

/* Wait until every stream's batches and chunk ends are acknowledged. */
static void
worker_wait_streams(void)
{
	if (worker.streams == NULL)
		return;
	for (uint32 i = 0; i < (uint32) worker.shared->nslots; i++)
		if (worker.streams[i].client != NULL)
			worker_stream_check(i, tc_client_wait_acks(worker.streams[i].client));
}

/* Disconnect the streams (after worker_wait_streams). */
static void
worker_close_streams(void)
{
	if (worker.streams == NULL)
		return;
	for (uint32 i = 0; i < (uint32) worker.shared->nslots; i++)
		if (worker.streams[i].client != NULL)
		{
			tcopy_disconnect(worker.streams[i].client);
			worker.streams[i].client = NULL;
		}
}

/*
 * The slot of relid's rows, ready: the leader is asked the first time a
 * row is routed to a partition (line: its line, for an error's CONTEXT),
 * and makes it ready in the chunk's turn.
 */
static TcopyStreamSlot *
worker_slot(Oid relid, uint64 line)
{
	TcopyStreamSlot *slot = copy_targets_slot(worker.slots, worker.shared->nslots, relid);
	ConditionVariable *cv = &worker.shared->slot_ready;

	/* the leader listed the partitions before the workers began routing */
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition \"%s\" was attached after the parallel COPY began",
						get_rel_name(relid)),
				 errhint("Run the COPY again.")));
	if (pg_atomic_read_u32(&slot->state) == TCOPY_SLOT_UNKNOWN)
	{
		TcopyOpenRequest open = {TCOPY_MSG_OPEN, relid, line};
		shm_mq_iovec iov = {(const char *) &open, sizeof(open)};

		worker_send(&iov, 1, true);
		ConditionVariablePrepareToSleep(cv);
		while (pg_atomic_read_u32(&slot->state) == TCOPY_SLOT_UNKNOWN)
			ConditionVariableSleep(cv, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
	pg_read_barrier();
	return slot;
}

/*
 * The stream to send a batch of writer's rows on, in the current chunk:
 * joined (a connection of the worker's own, as the user mapping of
 * writer's table says), the table open on it (a token scoped to a
 * namespace names a table before writing it), the chunk begun.
 */
static WorkerStream *
worker_stream_for(TcopyWriter *writer, TcopyStreamSlot *slot)
{
	WorkerStream *stream = &worker.streams[slot->session];
	const TcopyTableOptions *options = &writer->codec->options;
	TcopyConnection *conn;
	uint32		table_id = 0;

	if (stream->client == NULL)
	{
		conn = tcopy_connection_lookup(options, worker.shared->userid);
		stream->client = tcopy_connect(conn->address, conn->token, &conn->tls);
		tc_client_set_window(stream->client, (unsigned) tcopy_window);
		if (tc_client_join(stream->client, slot->session_id, slot->session_key,
						   slot->session_key_len) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("parallel COPY worker could not join the write session on tserver at \"%s\": %s",
							conn->address, tc_client_error(stream->client))));
	}
	if (!worker.opened[slot - worker.slots])
	{
		worker_stream_check(slot->session,
							tc_client_open_table(stream->client, options->table_name, NULL,
												 false, &table_id, NULL, NULL));
		if (table_id != slot->table_id)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("tserver table \"%s\" changed during the COPY", options->table_name)));
		worker.opened[slot - worker.slots] = true;
	}
	if (stream->chunk != worker.chunk)
	{
		worker_stream_check(slot->session,
							tc_client_chunk(stream->client, worker.chunk, false, false));
		stream->chunk = worker.chunk;
	}
	return stream;
}

/*
 * The writer's sink: the batch's rows and lines to the leader, or with
 * streams the rows to the tserver and their count and lines to the leader
 * (first: a duplicate the tserver finds in them is reported with them).
 */
static void
worker_send_batch(TcopyWriter *writer)
{
	TcopyStreamSlot *slot = worker.streams == NULL ? NULL :
		worker_slot(writer->codec->relid,
					!writer->runs_lost && writer->nruns > 0 ? writer->runs[0].line : 0);
	WorkerStream *stream = NULL;
	TcopyBatchHeader header = {TCOPY_MSG_BATCH, writer->codec->relid, writer->batch.nrows, 0};
	TcopyParallelRun *runs = NULL;
	shm_mq_iovec iov[3];
	bool		first = false;
	int			i;

	Assert(writer->batch.encoder == TCOPY_ENCODER_WIRE);
	if (slot != NULL && pg_atomic_read_u32(&slot->state) == TCOPY_SLOT_STREAM)
	{
		first = worker.streams[slot->session].chunk != worker.chunk;
		stream = worker_stream_for(writer, slot);
		header.type = TCOPY_MSG_ROWS;
	}
	if (!writer->runs_lost)
	{
		header.nruns = writer->nruns;
		runs = palloc(sizeof(TcopyParallelRun) * Max(writer->nruns, 1));
		for (i = 0; i < writer->nruns; i++)
		{
			runs[i].row = writer->runs[i].row;
			runs[i].line = writer->runs[i].line;
		}
	}
	iov[0].data = (const char *) &header;
	iov[0].len = sizeof(header);
	iov[1].data = (const char *) runs;
	iov[1].len = sizeof(TcopyParallelRun) * header.nruns;
	iov[2].data = (const char *) writer->batch.packed.data + TC_WIRE_BATCH_HEADER_MAX;
	iov[2].len = writer->batch.packed.len - TC_WIRE_BATCH_HEADER_MAX;
	/*
	 * The chunk's first streamed batch for a session is flushed: the leader
	 * skips the chunks before it that had no rows for the session when it
	 * reads it, and the batch is staged (and acknowledged, which this
	 * worker may wait for) only after them.  The chunk's later batches on
	 * that session need nothing of the leader's: their messages go with
	 * the next flushed one (the chunk's end at the latest), so that the
	 * leader is not woken for each batch (4,000 times in 4M rows).
	 */
	worker_send(iov, stream != NULL ? 2 : 3, first);
	if (runs != NULL)
		pfree(runs);
	if (stream != NULL)
	{
		tcopy_batch_pack(&writer->batch, ++stream->seq, slot->table_id);
		worker_stream_check(slot->session,
							tc_client_write(stream->client, stream->seq, writer->batch.send,
											writer->batch.send_len));
	}
}

/* Send edata, caught while a chunk was read, in the chunk's place. */
static void
worker_send_error(ErrorData *edata)
{
	StringInfoData buf;
	shm_mq_iovec iov;

	initStringInfo(&buf);
	tcopy_parallel_error_message(edata, &buf);
	iov.data = buf.data;
	iov.len = buf.len;
	worker_send(&iov, 1, true);
}

/* The COPY as this worker reads it. */
typedef struct WorkerCopy
{
	CopyFromState cstate;
	TcopyFieldPlan *plan;		/* raw fields, or NULL: NextCopyFrom */
	TcopyRelCodec *codec;
	TcopyWriter *writer;		/* the table's; NULL when routed */
	TcopyRoute *route;			/* a partitioned table's partitions */
	ResultRelInfo *partition;	/* the table, when it is a partition */
	EState	   *estate;
	ExprState  *qual;
	TupleTableSlot *slot;
	EolType		eol_type;		/* how the input's lines end */
	TcopyReader *reader;		/* tcopy's reader of plan's rows, or NULL */
} WorkerCopy;

/*
 * Read one chunk's rows into batches for the leader, then tell it the
 * chunk is done; false when the reader met the end-of-data marker.
 */
static bool
worker_copy_chunk(WorkerCopy *copy, const TcopyChunkBegin *begin)
{
	CopyFromState cstate = copy->cstate;
	ExprContext *econtext = GetPerTupleExprContext(copy->estate);
	TupleTableSlot *slot = copy->slot;
	MemoryContext oldcontext = CurrentMemoryContext;
	TcopyChunkDone done = {TCOPY_MSG_DONE, false, 0};
	shm_mq_iovec iov;

	/* the chunk's start: its lines, how they end, and no end of input yet */
	cstate->cur_lineno = begin->lines_before;
	if (!cstate->opts.binary)
		cstate->eol_type = begin->first ? EOL_UNKNOWN : copy->eol_type;
	cstate->raw_reached_eof = false;
	cstate->input_reached_eof = false;
	worker.chunk_ended = false;
	worker.chunk = begin->chunk;
	if (copy->reader != NULL)
		tcopy_reader_chunk(copy->reader);
	/* as copy.c's copy_read_row */
	for (;;)
	{
		TcopyWriter *writer = copy->writer;

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(copy->estate);
		MemoryContextSwitchTo(GetPerTupleMemoryContext(copy->estate));
		if (copy->plan != NULL && copy->route != NULL)
		{
			if (!tcopy_read_fields(cstate, copy->plan))
				break;
			writer = tcopy_route_row(copy->route, cstate, slot);
		}
		else if (copy->plan != NULL)
		{
			if (!tcopy_next_row_fields(cstate, copy->plan, &writer->row))
				break;
		}
		else
		{
			ExecClearTuple(slot);
			if (!NextCopyFrom(cstate, econtext, slot->tts_values, slot->tts_isnull))
				break;
			ExecStoreVirtualTuple(slot);
			if (copy->qual != NULL)
			{
				econtext->ecxt_scantuple = slot;
				if (!ExecQual(copy->qual, econtext))
				{
					done.excluded++;
					continue;
				}
			}
			if (copy->partition != NULL)
				ExecPartitionCheck(copy->partition, slot, copy->estate, true);
			if (copy->route != NULL)
				writer = tcopy_route_row(copy->route, cstate, slot);
			else
				tcopy_encode_row(copy->codec, slot->tts_values, slot->tts_isnull,
								 &writer->row);
		}
		writer->line = cstate->cur_lineno;
		tcopy_writer_add_row(writer);
	}
	MemoryContextSwitchTo(oldcontext);
	if (copy->route != NULL)
		tcopy_route_flush(copy->route);
	else
		tcopy_writer_flush(copy->writer);
	/* the reader stopped before the chunk's end: "\." ends the input */
	done.end_marker = !worker.chunk_ended;
	worker_end_chunk(done.end_marker);
	iov.data = (const char *) &done;
	iov.len = sizeof(done);
	worker_send(&iov, 1, true);
	return !done.end_marker;
}

/* Chunks until the leader detaches, or the end-of-data marker. */
static void
worker_copy_chunks(WorkerCopy *copy)
{
	char		type;
	const char *data;
	size_t		len;

	while (worker_receive(&type, &data, &len))
	{
		TcopyChunkBegin begin;

		if (type != TCOPY_MSG_CHUNK || len != sizeof(begin) - 1)
			elog(ERROR, "unexpected message \"%c\" from the parallel COPY leader", type);
		memcpy((char *) &begin + 1, data, len);
		if (!worker_copy_chunk(copy, &begin))
			return;
	}
}

/* After an error or the marker: take nothing more until the leader is done. */
static void
worker_wait_for_leader(void)
{
	char		type;
	const char *data;
	size_t		len;

	while (worker_receive(&type, &data, &len))
		CHECK_FOR_INTERRUPTS();
}

/* Read the next NUL-terminated string of the leader's options. */
static Node *
worker_next_node(char **strings)
{
	char	   *s = *strings;

	*strings += strlen(s) + 1;
	return stringToNode(s);
}

/* The parallel worker's entry point (CreateParallelContext's function). */
void
tcopy_copy_worker_main(dsm_segment *seg, shm_toc *toc)
{
	TcopyParallelShared *shared = shm_toc_lookup(toc, TCOPY_PARALLEL_KEY_SHARED, false);
	char	   *strings = shm_toc_lookup(toc, TCOPY_PARALLEL_KEY_OPTIONS, false);
	char	   *queues = shm_toc_lookup(toc, TCOPY_PARALLEL_KEY_QUEUES, false);
	shm_mq	   *in_mq = (shm_mq *) (queues + (Size) 2 * ParallelWorkerNumber * TCOPY_PARALLEL_QUEUE_BYTES);
	shm_mq	   *out_mq = (shm_mq *) ((char *) in_mq + TCOPY_PARALLEL_QUEUE_BYTES);
	List	   *options;
	List	   *attlist;
	List	   *where;
	Relation	rel;
	ParseState *pstate;
	WorkerCopy	copy = {0};
	ErrorContextCallback errcallback;
	MemoryContext workercontext = CurrentMemoryContext;
	ListCell   *lc;
	Bitmapset  *inserted = NULL;
	RangeTblEntry *rte;

	worker.shared = shared;
	worker.ring = shm_toc_lookup(toc, TCOPY_PARALLEL_KEY_RING, false);
	worker.ring_data = (const char *) worker.ring + worker.ring->data_offset;
	worker.file_fd = shared->file ? worker_open_file(shared) : -1;
	if (shared->streams)
	{
		worker.slots = shm_toc_lookup(toc, TCOPY_PARALLEL_KEY_SLOTS, false);
		worker.opened = palloc0(sizeof(bool) * shared->nslots);
		worker.streams = palloc0(sizeof(WorkerStream) * shared->nslots);
	}
	shm_mq_set_receiver(in_mq, MyProc);
	worker.in = shm_mq_attach(in_mq, seg, NULL);
	shm_mq_set_sender(out_mq, MyProc);
	worker.out = shm_mq_attach(out_mq, seg, NULL);

	options = (List *) worker_next_node(&strings);
	attlist = (List *) worker_next_node(&strings);
	where = (List *) worker_next_node(&strings);

	rel = table_open(shared->relid, RowExclusiveLock);
	foreach(lc, CopyGetAttnums(RelationGetDescr(rel), rel, attlist))
		inserted = bms_add_member(inserted,
								  lfirst_int(lc) - FirstLowInvalidHeapAttributeNumber);
	/* the range table entry prepare_copy_from made: who inserts which columns */
	pstate = make_parsestate(NULL);
	rte = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL,
										false, false)->p_rte;
	rte->requiredPerms = ACL_INSERT;
	rte->insertedCols = inserted;
	if (shared->binary)
	{
		worker.preamble = TCOPY_BINARY_HEADER;
		worker.preamble_len = TCOPY_BINARY_HEADER_LEN;
	}
	copy.cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, worker_read_cb,
								attlist, options);
	/* pg_stat_progress_copy: the leader's row counts every worker's */
	pgstat_progress_end_command();
	copy.eol_type = shared->eol_type;
	copy.estate = CreateExecutorState();
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE || rel->rd_rel->relispartition)
		ExecInitRangeTable(copy.estate, pstate->p_rtable);
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/* routing opens the partitions, whose writers send to worker_send_batch */
		tcopy_parallel_sink = worker_send_batch;
		copy.route = tcopy_route_begin(rel, copy.estate, copy.cstate,
									   where == NIL && tcopy_raw_fields,
									   shared->has_on_conflict ? &shared->on_conflict : NULL);
		copy.plan = tcopy_route_field_plan(copy.route);
	}
	else
	{
		copy.codec = tcopy_rel_codec(rel, shared->userid);
		tcopy_codec_set_inserted_cols(copy.codec, InvalidOid, inserted);
		copy.writer = tcopy_writer_begin_detached(copy.codec, worker_send_batch);
		if (rel->rd_rel->relispartition)
		{
			copy.partition = makeNode(ResultRelInfo);
			InitResultRelInfo(copy.partition, rel, 1, NULL, 0);
		}
		else if (where == NIL && tcopy_raw_fields)
			copy.plan = tcopy_field_plan(copy.cstate, copy.codec);
	}
	if (where != NIL)
		copy.qual = ExecPrepareQual(where, copy.estate);
	copy.slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);

	if (copy.plan != NULL)
		copy.reader = tcopy_field_plan_reader(copy.plan, copy.cstate, worker_unread);
	errcallback.callback = CopyFromErrorCallback;
	errcallback.arg = (void *) copy.cstate;
	if (copy.reader != NULL)
	{
		errcallback.callback = tcopy_reader_error_callback;
		errcallback.arg = (void *) copy.reader;
	}
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	PG_TRY();
	{
		worker_copy_chunks(&copy);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		error_context_stack = errcallback.previous;
		MemoryContextSwitchTo(workercontext);
		edata = CopyErrorData();
		FlushErrorState();
		worker_send_error(edata);
		worker_wait_to_be_stopped();
	}
	PG_END_TRY();
	error_context_stack = errcallback.previous;
	/* nothing sent is in flight when the leader closes the streams */
	if (worker.streams != NULL)
	{
		char		type = TCOPY_MSG_FINISHED;
		shm_mq_iovec iov = {&type, 1};

		worker_wait_streams();
		worker_close_streams();
		worker_send(&iov, 1, true);
	}
	worker_wait_for_leader();

	if (copy.route != NULL)
		tcopy_route_end(copy.route);
	else
		tcopy_writer_free(copy.writer);
	ExecDropSingleTupleTableSlot(copy.slot);
	FreeExecutorState(copy.estate);
	EndCopyFrom(copy.cstate);
	if (worker.file_fd >= 0)
		CloseTransientFile(worker.file_fd);
	table_close(rel, NoLock);
}
