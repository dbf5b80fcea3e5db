/*
 * copy_parallel.c
 *		A COPY FROM into a tcopy table parsed by parallel workers: the
 *		leader's side.
 *
 * The leader reads the input (copy_source.c) into the input ring in shared
 * memory (copy_ring.c), cuts it into chunks at row ends (copy_chunks.c),
 * and hands chunk k to worker k % n through that worker's input queue, as
 * pieces of the ring the worker copies out; the worker (copy_worker.c)
 * parses it with Postgres' COPY reader and encodes its rows into
 * batches.  With streams (the default) the worker sends them on its own
 * connections, joined to the write sessions of the leader's transaction,
 * and only each batch's row count and lines come back through its output
 * queue; the tables and their sessions are copy_targets.c's.  Relaying,
 * the batches come back whole, and the leader sends each on the write
 * session as its own.  Either way the leader reads the output queues in
 * chunk order, and the tserver stages the rows in input order, as from a
 * serial COPY, so the rule for equal keys, the lines of a duplicate's
 * CONTEXT, a sorted load's direct path and the transaction are unchanged.
 * An error a worker met is raised when its chunk's turn comes, so the
 * first error in the input is the one reported.  The design, and where a
 * COPY stays serial, is in docs/parallel.md.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "copy_parallel.h"

#include "access/parallel.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/defrem.h"
#include "commands/progress.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

/* settings, registered in tcopy.c */
int			tcopy_copy_parallel_threshold_kb = 4 * 1024;	/* tcopy.copy_parallel_threshold */
int			tcopy_copy_chunk_bytes = 1024 * 1024;	/* tcopy.copy_chunk_bytes */
bool		tcopy_copy_streams = true;	/* tcopy.copy_streams */
bool		tcopy_copy_map_files = true;	/* tcopy.copy_map_files */

/* What the leader reads at a time once the COPY is parallel. */
#define LEADER_READ_BYTES (256 * 1024)

/*
 * The threshold must come within this time for workers to start: a slower
 * input (a program writing slowly, a client far away) comes slower than
 * the backend parses it alone.
 */
#define LEADER_FIRST_READ_MS 50


/* A message to a worker that shm_mq has not taken whole yet. */
typedef struct PendingSend
{
	bool		active;
	int			worker;
	shm_mq_iovec iov[2];
	int			iovcnt;
	bool		flush;
	char		type;			/* the header's storage */
	TcopyChunkBegin begin;
	TcopyDataPiece piece;
} PendingSend;

/* The leader of a parallel COPY. */
typedef struct CopyLeader
{
	ParallelContext *pcxt;
	int			nworkers;		/* launched */
	shm_mq_handle **in;
	shm_mq_handle **out;
	CopyFromState src;
	CopyTargets *targets;		/* the tables written, their sessions */
	bool		streams;		/* the workers send the batches themselves */

	/*
	 * the input: rbuf[rpos..rlen) read, not yet sent; once the workers are
	 * launched rbuf is the ring's last region
	 */
	TcopyRingLeader *ring;
	char	   *rbuf;
	size_t		rcap;
	size_t		rlen;
	size_t		rpos;

	/*
	 * a regular file, which the workers read themselves: rbuf is the window
	 * of it mapped, at offset rbuf_pos in the file
	 */
	bool		file;
	TcopyFileMap *map;
	uint64		rbuf_pos;
	bool		input_eof;
	bool		input_wait;		/* the file or pipe has nothing to read now */
	TcopyChunkScan scan;

	/* sending: chunk next_chunk is open or next */
	uint64		next_chunk;
	bool		chunk_open;
	bool		chunk_cut;		/* its last data ended a row past the size */
	size_t		chunk_bytes;
	uint64		lines;			/* before the chunk being sent */
	bool		all_sent;
	PendingSend pending;

	/* the leader's own errors (the source's): "COPY t, line N" */
	ErrorContextCallback errcallback;

	/* receiving: chunk next_done is the next whose rows go out */
	uint64		next_done;
	bool		end_marker;
	uint64		processed;
	uint64		excluded;
	TcopyLineRun *runs;
	int			runs_cap;
} CopyLeader;

typedef enum LeaderRefill
{
	REFILL_DATA,				/* the buffer holds more input */
	REFILL_EOF,					/* the input's end */
	REFILL_WAIT					/* none yet: wait for it with the workers */
} LeaderRefill;

/* A file's next window (all of the last one was sent): copy_file_map.c. */
static LeaderRefill
leader_map_next(CopyLeader *leader)
{
	uint64		pos = leader->rbuf_pos + leader->rlen;

	leader->rbuf_pos = pos;
	leader->rpos = leader->rlen = 0;
	if (!tcopy_file_map_window(leader->map, pos, &leader->rbuf, &leader->rlen))
	{
		leader->input_eof = true;
		return REFILL_EOF;
	}
	leader->src->bytes_processed = pos + leader->rlen;
	pgstat_progress_update_param(PROGRESS_COPY_BYTES_PROCESSED, pos + leader->rlen);
	return REFILL_DATA;
}

/* tcopy_chunk_scan of the input; of a mapped file, guarded (copy_file_map.c). */
static size_t
leader_scan(CopyLeader *leader, size_t len, size_t min, bool *cut)
{
	const char *buf = leader->rbuf + leader->rpos;

	if (leader->file)
		return tcopy_file_map_scan(leader->map, &leader->scan, buf, len, min, cut);
	return tcopy_chunk_scan(&leader->scan, buf, len, min, cut);
}

/*
 * Read more input into the next region of the ring (all of the last one
 * was sent).  A file or pipe with nothing to read now, or a ring with no
 * room yet, is waited for with the workers' queues (leader_run), so that
 * what they parsed is shipped, and counted, while a program pauses.
 */
static LeaderRefill
leader_refill(CopyLeader *leader)
{
	char	   *region;
	int			n;

	Assert(leader->rpos == leader->rlen);
	if (leader->file)
		return leader->input_eof ? REFILL_EOF : leader_map_next(leader);
	leader->rpos = leader->rlen = 0;
	if (leader->input_eof)
		return REFILL_EOF;
	if (!tcopy_source_ready(leader->src))
	{
		leader->input_wait = true;
		return REFILL_WAIT;
	}
	region = tcopy_ring_region(leader->ring, LEADER_READ_BYTES);
	if (region == NULL)
		return REFILL_WAIT;		/* a worker sets the latch when it frees some */
	leader->rbuf = region;
	/* the line an error of the source's is in, as the serial reader counts */
	leader->src->cur_lineno = leader->lines + leader->scan.lines + 1;
	n = tcopy_source_read(leader->src, leader->rbuf, LEADER_READ_BYTES);
	tcopy_ring_filled(leader->ring, n);
	pgstat_progress_update_param(PROGRESS_COPY_BYTES_PROCESSED,
								 leader->src->bytes_processed);
	if (n == 0)
	{
		leader->input_eof = true;
		return REFILL_EOF;
	}
	leader->rlen = n;
	return REFILL_DATA;
}

/* Try the pending message again; true once it is sent (or cannot be). */
static bool
leader_try_send(CopyLeader *leader)
{
	PendingSend *p = &leader->pending;
	shm_mq_result res;

	res = shm_mq_sendv(leader->in[p->worker], p->iov, p->iovcnt, true, p->flush);
	if (res == SHM_MQ_WOULD_BLOCK)
		return false;
	/* a worker that detached failed: its chunk's turn will say how */
	p->active = false;
	return true;
}

/* No more chunks: each worker ends once its queue is empty. */
static void
leader_end_input(CopyLeader *leader)
{
	for (int i = 0; i < leader->nworkers; i++)
		shm_mq_detach(leader->in[i]);
	leader->all_sent = true;
}

/* Make the next message to a worker pending; false when none is left. */
static bool
leader_next_message(CopyLeader *leader)
{
	PendingSend *p = &leader->pending;
	LeaderRefill refill = REFILL_DATA;

	if (leader->all_sent)
		return false;
	if (!leader->chunk_open && leader->scan.marker)
	{
		/* a client's "\.": the input ends, the rest is drained at the end */
		leader_end_input(leader);
		return false;
	}
	p->worker = leader->next_chunk % leader->nworkers;
	p->flush = false;
	p->iovcnt = 1;
	if (leader->rpos == leader->rlen && !(leader->chunk_open && leader->chunk_cut))
	{
		refill = leader_refill(leader);
		if (refill == REFILL_WAIT)
			return false;
	}
	if (!leader->chunk_open)
	{
		if (refill == REFILL_EOF)
		{
			leader_end_input(leader);
			return false;
		}
		p->begin.type = TCOPY_MSG_CHUNK;
		p->begin.first = leader->next_chunk == 0;
		p->begin.chunk = leader->next_chunk + 1;
		p->begin.lines_before = leader->lines;
		p->iov[0].data = (const char *) &p->begin;
		p->iov[0].len = sizeof(p->begin);
		leader->chunk_open = true;
		leader->chunk_cut = false;
		leader->chunk_bytes = 0;
	}
	else if (!leader->chunk_cut && refill != REFILL_EOF)
	{
		size_t		avail = Min(leader->rlen - leader->rpos, (size_t) TCOPY_PARALLEL_PIECE_BYTES);
		size_t		want = (size_t) tcopy_copy_chunk_bytes;
		size_t		n;

		/* a file's bytes are not held: only so many are in flight */
		if (leader->file && !tcopy_ring_reserve(leader->ring, avail))
			return false;
		n = leader_scan(leader, avail,
						leader->chunk_bytes < want ? want - leader->chunk_bytes : 0,
						&leader->chunk_cut);
		/*
		 * the piece's place in the ring, or in the file; flushed, so that
		 * the worker copies it out (and frees its room) while the chunk is
		 * still being sent
		 */
		p->piece.type = TCOPY_MSG_DATA;
		p->piece.len = (uint32) n;
		if (leader->file)
		{
			p->piece.offset = leader->rbuf_pos + leader->rpos;
			tcopy_ring_piece_at(leader->ring, p->piece.offset, n, p->worker);
		}
		else
			p->piece.offset = tcopy_ring_piece(leader->ring, leader->rbuf + leader->rpos,
											   n, p->worker);
		p->iov[0].data = (const char *) &p->piece;
		p->iov[0].len = sizeof(p->piece);
		p->flush = true;
		leader->rpos += n;
		leader->chunk_bytes += n;
	}
	else
	{
		/* cut past the size, or the input's end */
		p->type = TCOPY_MSG_CHUNK_END;
		p->iov[0].data = &p->type;
		p->iov[0].len = 1;
		p->flush = true;
		leader->lines += leader->scan.lines;
		leader->scan.lines = 0;
		leader->chunk_open = false;
		leader->next_chunk++;
	}
	p->active = true;
	return true;
}

/* A worker's queue detached: a worker that died says why on its error queue. */
static void pg_attribute_noreturn()
leader_lost_worker(void)
{
	HandleParallelMessages();
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("lost connection to parallel worker")));
}

/*
 * A batch of a worker's: its rows on the session, as the writer's, or
 * (sent) what the worker sent on its own stream, counted as the session's
 * next rows, with their lines.
 */
static void
leader_take_batch(CopyLeader *leader, const char *data, size_t len, bool sent)
{
	TcopyBatchHeader header;
	const TcopyParallelRun *runs;
	size_t		runs_len;
	int			i;

	if (len < sizeof(header))
		elog(ERROR, "truncated batch from a parallel COPY worker");
	memcpy(&header, data, sizeof(header));
	runs_len = (size_t) header.nruns * sizeof(TcopyParallelRun);
	if (len < sizeof(header) + runs_len || (sent && len != sizeof(header) + runs_len))
		elog(ERROR, "truncated batch from a parallel COPY worker");
	runs = (const TcopyParallelRun *) (data + sizeof(header));
	if (leader->runs_cap < (int) header.nruns)
	{
		leader->runs = leader->runs == NULL ?
			palloc(header.nruns * sizeof(TcopyLineRun)) :
			repalloc(leader->runs, header.nruns * sizeof(TcopyLineRun));
		leader->runs_cap = header.nruns;
	}
	for (i = 0; i < (int) header.nruns; i++)
	{
		TcopyParallelRun run;

		memcpy(&run, &runs[i], sizeof(run));
		leader->runs[i].row = run.row;
		leader->runs[i].line = run.line;
		leader->runs[i].relname = NULL;
	}
	/* no runs: more than a batch keeps, so not known */
	if (sent)
		copy_targets_streamed(leader->targets, leader->next_done + 1, header.relid,
							  header.nruns > 0 ? leader->runs : NULL, header.nruns,
							  header.nrows);
	else
		tcopy_writer_send_encoded(copy_targets_writer(leader->targets, header.relid),
								  data + sizeof(header) + runs_len,
								  len - sizeof(header) - runs_len, header.nrows,
								  header.nruns > 0 ? leader->runs : NULL, header.nruns);
	leader->processed += header.nrows;
	pgstat_progress_update_param(PROGRESS_COPY_TUPLES_PROCESSED, leader->processed);
}

/* A worker's stream failed (TcopyStreamFailed, why): raise why. */
static void pg_attribute_noreturn()
leader_stream_failed(CopyLeader *leader, const char *data, size_t len)
{
	TcopyStreamFailed failed;

	if (!leader->streams || len < sizeof(failed))
		elog(ERROR, "unexpected stream failure from a parallel COPY worker");
	memcpy(&failed, data, sizeof(failed));
	copy_targets_stream_failed(leader->targets, failed.session, leader->next_done,
							   pnstrdup(data + sizeof(failed), len - sizeof(failed)));
}

/*
 * Take the workers' messages in chunk order, as long as some are there;
 * true when any was taken.
 */
static bool
leader_receive(CopyLeader *leader)
{
	bool		progress = false;

	while (!leader->end_marker &&
		   (leader->next_done < leader->next_chunk ||
			(leader->chunk_open && leader->next_done == leader->next_chunk)))
	{
		int			w = leader->next_done % leader->nworkers;
		shm_mq_result res;
		Size		nbytes;
		void	   *data;
		TcopyChunkDone done;

		res = shm_mq_receive(leader->out[w], &nbytes, &data, true);
		if (res == SHM_MQ_WOULD_BLOCK)
			break;
		if (res == SHM_MQ_DETACHED)
			leader_lost_worker();
		progress = true;
		if (nbytes < 1)
			elog(ERROR, "empty message from a parallel COPY worker");
		switch (*(char *) data)
		{
			case TCOPY_MSG_BATCH:
			case TCOPY_MSG_ROWS:
				if (*(char *) data == TCOPY_MSG_ROWS && !leader->streams)
					elog(ERROR, "unexpected batch from a parallel COPY worker");
				leader_take_batch(leader, data, nbytes, *(char *) data == TCOPY_MSG_ROWS);
				break;
			case TCOPY_MSG_OPEN:
				{
					TcopyOpenRequest open;

					if (!leader->streams || nbytes != sizeof(open))
						elog(ERROR, "unexpected request from a parallel COPY worker");
					memcpy(&open, data, sizeof(open));
					/* an error opening it names the row's line, as serially */
					if (open.line > 0)
						leader->src->cur_lineno = open.line;
					copy_targets_open(leader->targets, open.relid);
				}
				break;
			case TCOPY_MSG_STREAM_FAILED:
				leader_stream_failed(leader, data, nbytes);
				break;
			case TCOPY_MSG_DONE:
				if (nbytes != sizeof(done))
					elog(ERROR, "bad chunk end from a parallel COPY worker");
				memcpy(&done, data, sizeof(done));
				leader->excluded += done.excluded;
				if (done.excluded > 0)
					pgstat_progress_update_param(PROGRESS_COPY_TUPLES_EXCLUDED,
												 leader->excluded);
				leader->end_marker = done.end_marker;
				leader->next_done++;
				break;
			case TCOPY_MSG_ERROR:
				tcopy_parallel_raise(data, nbytes, leader->errcallback.previous);
				break;
			default:
				elog(ERROR, "unexpected message \"%c\" from a parallel COPY worker",
					 *(char *) data);
		}
	}
	return progress;
}

/*
 * With streams, after the last chunk: wait until every worker's stream has
 * had everything it sent acknowledged (or failed), so that the chunks are
 * all staged when the streams close.
 */
static void
leader_wait_streams(CopyLeader *leader)
{
	for (int w = 0; w < leader->nworkers; w++)
	{
		shm_mq_result res;
		Size		nbytes;
		void	   *data;

		res = shm_mq_receive(leader->out[w], &nbytes, &data, false);
		if (res == SHM_MQ_DETACHED)
			leader_lost_worker();
		if (nbytes >= 1 && *(char *) data == TCOPY_MSG_STREAM_FAILED)
			leader_stream_failed(leader, data, nbytes);
		if (nbytes != 1 || *(char *) data != TCOPY_MSG_FINISHED)
			elog(ERROR, "unexpected message from a parallel COPY worker after its last chunk");
	}
}

/* Send chunks and forward batches until every chunk's rows are out. */
static void
leader_run(CopyLeader *leader)
{
	for (;;)
	{
		bool		progress;

		CHECK_FOR_INTERRUPTS();
		progress = leader_receive(leader);
		if (leader->end_marker ||
			(leader->all_sent && leader->next_done == leader->next_chunk))
			return;
		/* as much input as the queues take */
		while (!leader->end_marker)
		{
			if (!leader->pending.active && !leader_next_message(leader))
				break;
			if (!leader_try_send(leader))
				break;
			progress = true;
		}
		if (!progress)
		{
			/*
			 * WaitLatch, when there is no socket to wait for, uses the
			 * backend's one wait set; WaitLatchOrSocket makes an epoll set
			 * and closes it each time
			 */
			if (leader->input_wait)
				(void) WaitLatchOrSocket(MyLatch,
										 WL_LATCH_SET | WL_SOCKET_READABLE | WL_EXIT_ON_PM_DEATH,
										 tcopy_source_socket(leader->src), -1,
										 WAIT_EVENT_MQ_RECEIVE);
			else
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1,
								 WAIT_EVENT_MQ_RECEIVE);
			ResetLatch(MyLatch);
		}
		leader->input_wait = false;
	}
}

/*
 * Read the input's start into the buffer: the threshold, or less if the
 * input ends or does not come within LEADER_FIRST_READ_MS (an input slower
 * than one backend parses gains nothing from workers).
 */
static void
leader_read_start(CopyLeader *leader, size_t threshold)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   LEADER_FIRST_READ_MS);

	while (leader->rlen < Max(threshold, 1))
	{
		int			n;

		while (leader->rlen > 0 && !tcopy_source_ready(leader->src))
		{
			long		ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

			if (ms <= 0)
				return;
			(void) WaitLatchOrSocket(MyLatch,
									 WL_LATCH_SET | WL_SOCKET_READABLE | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
									 tcopy_source_socket(leader->src), ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
		n = tcopy_source_read(leader->src, leader->rbuf + leader->rlen,
							  (int) Min(leader->rcap - leader->rlen, (size_t) LEADER_READ_BYTES));
		if (n == 0)
		{
			leader->input_eof = true;
			return;
		}
		/* the line an error of the source's is in: about the reader's */
		for (const char *c = leader->rbuf + leader->rlen;
			 (c = memchr(c, '\n', leader->rbuf + leader->rlen + n - c)) != NULL; c++)
			leader->src->cur_lineno++;
		leader->rlen += n;
		if (GetCurrentTimestamp() >= deadline)
			return;
	}
}

/*
 * The input ring's size: the chunks in flight, two a worker, and the
 * input's start, which is copied into it once.
 */
static Size
leader_ring_size(CopyLeader *leader, int nworkers)
{
	Size		chunks = (Size) 2 * nworkers * tcopy_copy_chunk_bytes + LEADER_READ_BYTES;

	return MAXALIGN(Max(Max((Size) 8 * 1024 * 1024, Min(chunks, (Size) 64 * 1024 * 1024)),
						leader->rcap + 2 * LEADER_READ_BYTES));
}

/* Lay out the shared memory: what the workers open, their queues, the ring. */
static void
leader_setup_dsm(CopyLeader *leader, List *options, List *attlist, List *where,
				 const TcopyOnConflict *on_conflict)
{
	ParallelContext *pcxt = leader->pcxt;
	StringInfoData strings;
	TcopyParallelShared *shared;
	TcopyStreamSlot *slots;
	char	   *queues;
	Size		queues_len = (Size) 2 * pcxt->nworkers * TCOPY_PARALLEL_QUEUE_BYTES;
	int			nslots = copy_targets_nslots(leader->targets);
	Size		slots_len = sizeof(TcopyStreamSlot) * Max(nslots, 1);
	Size		ring_size = leader_ring_size(leader, pcxt->nworkers);
	Size		ring_len = tcopy_ring_shmem_size(pcxt->nworkers,
												 leader->file ? 0 : ring_size);
	void	   *ring;
	char	   *s;
	int			i;

	initStringInfo(&strings);
	appendStringInfoString(&strings, nodeToString(options));
	appendStringInfoChar(&strings, '\0');
	appendStringInfoString(&strings, nodeToString(attlist));
	appendStringInfoChar(&strings, '\0');
	appendStringInfoString(&strings, nodeToString(where));
	appendStringInfoChar(&strings, '\0');

	shm_toc_estimate_chunk(&pcxt->estimator, sizeof(TcopyParallelShared));
	shm_toc_estimate_chunk(&pcxt->estimator, strings.len);
	shm_toc_estimate_chunk(&pcxt->estimator, queues_len);
	shm_toc_estimate_chunk(&pcxt->estimator, slots_len);
	shm_toc_estimate_chunk(&pcxt->estimator, ring_len);
	shm_toc_estimate_keys(&pcxt->estimator, 5);
	InitializeParallelDSM(pcxt);

	shared = shm_toc_allocate(pcxt->toc, sizeof(TcopyParallelShared));
	shared->relid = RelationGetRelid(leader->src->rel);
	shared->userid = GetUserId();
	shared->has_on_conflict = on_conflict != NULL;
	if (on_conflict != NULL)
		shared->on_conflict = *on_conflict;
	shared->binary = leader->src->opts.binary;
	shared->eol_type = leader->src->eol_type;
	if (leader->file)
	{
		struct stat st;

		if (fstat(fileno(leader->src->copy_file), &st) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat file \"%s\": %m", leader->src->filename)));
		shared->file = true;
		shared->file_dev = st.st_dev;
		shared->file_ino = st.st_ino;
		shared->file_pid = MyProcPid;
		shared->file_fd = fileno(leader->src->copy_file);
		strlcpy(shared->file_name, leader->src->filename, MAXPGPATH);
	}
	shared->streams = leader->streams;
	shared->nslots = nslots;
	slots = shm_toc_allocate(pcxt->toc, slots_len);
	if (leader->streams)
		copy_targets_set_slots(leader->targets, slots, &shared->slot_ready);
	shm_toc_insert(pcxt->toc, TCOPY_PARALLEL_KEY_SLOTS, slots);
	shm_toc_insert(pcxt->toc, TCOPY_PARALLEL_KEY_SHARED, shared);
	s = shm_toc_allocate(pcxt->toc, strings.len);
	memcpy(s, strings.data, strings.len);
	shm_toc_insert(pcxt->toc, TCOPY_PARALLEL_KEY_OPTIONS, s);
	queues = shm_toc_allocate(pcxt->toc, queues_len);
	shm_toc_insert(pcxt->toc, TCOPY_PARALLEL_KEY_QUEUES, queues);
	ring = shm_toc_allocate(pcxt->toc, ring_len);
	leader->ring = tcopy_ring_create(ring, pcxt->nworkers, ring_size, !leader->file);
	shm_toc_insert(pcxt->toc, TCOPY_PARALLEL_KEY_RING, ring);

	leader->in = palloc0(sizeof(shm_mq_handle *) * pcxt->nworkers);
	leader->out = palloc0(sizeof(shm_mq_handle *) * pcxt->nworkers);
	for (i = 0; i < pcxt->nworkers; i++)
	{
		char	   *base = queues + (Size) 2 * i * TCOPY_PARALLEL_QUEUE_BYTES;
		shm_mq	   *in = shm_mq_create(base, TCOPY_PARALLEL_QUEUE_BYTES);
		shm_mq	   *out = shm_mq_create(base + TCOPY_PARALLEL_QUEUE_BYTES,
										TCOPY_PARALLEL_QUEUE_BYTES);

		shm_mq_set_sender(in, MyProc);
		leader->in[i] = shm_mq_attach(in, pcxt->seg, NULL);
		shm_mq_set_receiver(out, MyProc);
		leader->out[i] = shm_mq_attach(out, pcxt->seg, NULL);
	}
}

/*
 * The options the workers' readers get: src's, with the encoding src
 * reads in (a worker's client encoding need not be the leader's).
 */
static List *
worker_options(CopyFromState src, List *options)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst_node(DefElem, lc);

		if (strcmp(def->defname, "encoding") != 0)
			result = lappend(result, def);
	}
	return lappend(result,
				   makeDefElem("encoding",
							   (Node *) makeString(pstrdup(pg_encoding_to_char(src->file_encoding))),
							   -1));
}

TcopyParallelResult
tcopy_copy_parallel(ParseState *pstate, Relation rel, CopyFromState src,
					List *options, List *attlist, List *where, TcopyWriter *writer,
					const TcopyOnConflict *on_conflict, int workers,
					CopyFromState *replay, uint64 *processed)
{
	const char *relname = RelationGetRelationName(rel);
	const char *refusal = workers == 0 ? "workers is 0" : tcopy_parallel_refusal(src, where);
	size_t		threshold = (size_t) tcopy_copy_parallel_threshold_kb * 1024;
	CopyLeader	leader = {0};
	char	   *prefix;
	size_t		header = src->opts.binary ? TCOPY_BINARY_HEADER_LEN : 0;

	if (refusal != NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("tcopy: COPY %s parsed by the backend alone: %s",
								 relname, refusal)));
		return TCOPY_PARALLEL_NOT_TRIED;
	}

	/* the input's start: is it worth workers, where do its lines end */
	leader.src = src;
	leader.rcap = Max(threshold, (size_t) LEADER_READ_BYTES);
	leader.errcallback.callback = CopyFromErrorCallback;
	leader.errcallback.arg = (void *) src;
	leader.errcallback.previous = error_context_stack;
	error_context_stack = &leader.errcallback;
	src->cur_lineno = 1;
	prefix = palloc(header + leader.rcap);
	memcpy(prefix, TCOPY_BINARY_HEADER, header);
	leader.rbuf = prefix + header;
	leader_read_start(&leader, threshold);
	pgstat_progress_update_param(PROGRESS_COPY_BYTES_PROCESSED, src->bytes_processed);
	if (leader.input_eof && leader.rlen < threshold)
		refusal = "the input is below tcopy.copy_parallel_threshold";
	else if (leader.rlen < threshold)
		refusal = psprintf("less than tcopy.copy_parallel_threshold came in the first %d ms",
						   LEADER_FIRST_READ_MS);
	else if (!src->opts.binary)
	{
		src->eol_type = tcopy_first_line_end(src, leader.rbuf, leader.rlen);
		if (src->eol_type == EOL_UNKNOWN)
			refusal = "no line end in the input's first part";
		else if (src->eol_type == EOL_CR)
			refusal = "lines end in \"\\r\" alone";
	}
	if (refusal == NULL)
	{
		/* the workers send the rows themselves, on streams of the sessions */
		leader.streams = tcopy_copy_streams &&
			(writer == NULL || !writer->conn->null_transport);
		leader.targets = copy_targets_begin(rel, writer, on_conflict, leader.streams);
		leader.file = tcopy_copy_map_files && tcopy_file_mappable(src, leader.rlen);
		EnterParallelMode();
		leader.pcxt = CreateParallelContext("tcopy", "tcopy_copy_worker_main", workers);
		leader_setup_dsm(&leader, worker_options(src, options), attlist, where, on_conflict);
		LaunchParallelWorkers(leader.pcxt);
		leader.nworkers = leader.pcxt->nworkers_launched;
		if (leader.nworkers == 0)
		{
			DestroyParallelContext(leader.pcxt);
			ExitParallelMode();
			copy_targets_close_streams(leader.targets, 0);
			refusal = "no parallel worker could be launched";
		}
	}
	if (refusal != NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("tcopy: COPY %s parsed by the backend alone: %s",
								 relname, refusal)));
		src->eol_type = EOL_UNKNOWN;
		error_context_stack = leader.errcallback.previous;
		*replay = tcopy_source_replay(pstate, rel, src, attlist, options, prefix,
									  header + leader.rlen);
		return TCOPY_PARALLEL_SERIAL;
	}

	ereport(DEBUG1,
			(errmsg_internal("tcopy: COPY %s parsed by %d parallel workers%s%s",
							 relname, leader.nworkers,
							 leader.file ? ", which read the file themselves" : "",
							 leader.streams ? ", which send the rows themselves" : "")));
	for (int i = 0; i < leader.nworkers; i++)
	{
		shm_mq_set_handle(leader.in[i], leader.pcxt->worker[i].bgwhandle);
		shm_mq_set_handle(leader.out[i], leader.pcxt->worker[i].bgwhandle);
	}
	if (leader.file)
	{
		/* the file is mapped and sent from its start */
		leader.rbuf = NULL;
		leader.rlen = leader.rpos = 0;
		leader.input_eof = false;
		leader.map = tcopy_file_map_begin(src);
	}
	else
	{
		/* the input's start becomes the ring's first region: sent from there */
		leader.rbuf = tcopy_ring_region(leader.ring, leader.rlen);
		memcpy(leader.rbuf, prefix + header, leader.rlen);
		tcopy_ring_filled(leader.ring, leader.rlen);
	}
	pfree(prefix);
	tcopy_chunk_scan_init(&leader.scan,
						  src->opts.binary ? 'b' : src->opts.csv_mode ? 'c' : 't',
						  src->opts.csv_mode ? src->opts.quote[0] : '\0',
						  src->opts.csv_mode ? src->opts.escape[0] : '\0',
						  src->eol_type == EOL_CRNL);
	leader.scan.stop_at_marker = src->copy_src == COPY_FRONTEND;
	leader_run(&leader);
	if (leader.file)
		tcopy_file_map_end(leader.map);
	/* a cancel that ended the input is the error (see copy_rows, copy.c) */
	CHECK_FOR_INTERRUPTS();

	/* the chunks with no rows for a session, from its last with rows on */
	copy_targets_end_streams(leader.targets, leader.next_done, leader.end_marker);
	if (leader.end_marker)
	{
		/*
		 * "\.": the rest is not loaded.  The sessions wait for the chunks
		 * up to the marker's, which their workers sent, before the workers
		 * are stopped (the later chunks' rows are dropped).
		 */
		copy_targets_close_streams(leader.targets, leader.next_done);
		DestroyParallelContext(leader.pcxt);
	}
	else
	{
		if (leader.streams)
			leader_wait_streams(&leader);
		WaitForParallelWorkersToFinish(leader.pcxt);
		DestroyParallelContext(leader.pcxt);
		/* every chunk was staged: the workers waited for their acks */
		copy_targets_close_streams(leader.targets, leader.next_done);
	}
	ExitParallelMode();
	/* the client's data to its end, after a "\.": it is read to it else */
	tcopy_source_drain(src);
	error_context_stack = leader.errcallback.previous;
	copy_targets_finish(leader.targets);
	ereport(DEBUG2,
			(errmsg_internal("tcopy: COPY %s: " UINT64_FORMAT " rows parsed by %d parallel workers in " UINT64_FORMAT " chunks",
							 relname, leader.processed, leader.nworkers, leader.next_done)));
	*processed = leader.processed;
	return TCOPY_PARALLEL_DONE;
}
