/*
 * copy_parallel.h
 *		What the leader of a parallel COPY (copy_parallel.c) and its workers
 *		(copy_worker.c) share: the dynamic shared memory's contents and the
 *		messages of their queues.
 *
 * Each worker has two shm_mq queues: chunks of input from the leader, and
 * batches of encoded rows back, or, when the workers send their batches to
 * the tserver themselves (streams of the write session), each batch's row
 * count and lines.  Chunk k goes to worker k % nworkers; the leader reads
 * the workers' queues in chunk order, so that the session's rows and lines
 * are in input order (docs/parallel.md).
 */
#ifndef TCOPY_COPY_PARALLEL_H
#define TCOPY_COPY_PARALLEL_H

#include "commands/copyfrom_internal.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/copy.h"
#include "tcopy/transaction.h"

/* shm_toc keys */
#define TCOPY_PARALLEL_KEY_SHARED	UINT64CONST(0x7C0B0001)
#define TCOPY_PARALLEL_KEY_OPTIONS	UINT64CONST(0x7C0B0002)
#define TCOPY_PARALLEL_KEY_QUEUES	UINT64CONST(0x7C0B0003)
#define TCOPY_PARALLEL_KEY_SLOTS	UINT64CONST(0x7C0B0004)
#define TCOPY_PARALLEL_KEY_RING		UINT64CONST(0x7C0B0005)

/* Each queue's size: a chunk's pieces or batches in flight. */
#define TCOPY_PARALLEL_QUEUE_BYTES	(1024 * 1024)

/*
 * The leader's data messages name at most this much input, a read's worth:
 * a piece is not copied to be sent, and fewer messages wake the workers
 * fewer times (64 kB pieces cost the leader about 0.02 s more CPU in 4M
 * rows).
 */
#define TCOPY_PARALLEL_PIECE_BYTES	(256 * 1024)

/*
 * The input ring, at KEY_RING (copy_ring.c): the leader read()s the input
 * straight into its data, in regions that never wrap, and each data
 * message names a piece of one (TcopyDataPiece) instead of carrying its
 * bytes.  Worker w copies its pieces out into its reader's buffer in its
 * queue's order and publishes how many bytes it has copied (consumed[w]);
 * the leader reuses a piece's space once its worker copied it, in ring
 * order, and waits on its latch for room, which a worker sets when the
 * leader says it waits.
 */
typedef struct TcopyRing
{
	Size		size;			/* of the data; 0: the input is a file */
	Size		data_offset;	/* where the data begins, from the ring */
	int			leader_pgprocno;	/* whose latch a worker sets */
	pg_atomic_uint32 leader_waiting;	/* the leader waits for room: */
	int			wake_worker;	/* until this worker's consumed */
	pg_atomic_uint64 wake_at;	/* reaches this */
	pg_atomic_uint64 consumed[FLEXIBLE_ARRAY_MEMBER];	/* [worker]: bytes of
														 * its pieces copied */
} TcopyRing;

/* The leader's side of the ring (copy_ring.c). */
typedef struct TcopyRingLeader TcopyRingLeader;

extern Size tcopy_ring_shmem_size(int nworkers, Size size);
extern TcopyRingLeader *tcopy_ring_create(void *space, int nworkers, Size size,
										  bool holds_data);
extern char *tcopy_ring_region(TcopyRingLeader *ring, Size len);
extern void tcopy_ring_filled(TcopyRingLeader *ring, Size n);
extern uint64 tcopy_ring_piece(TcopyRingLeader *ring, const char *piece, Size len,
							   int worker);
extern bool tcopy_ring_reserve(TcopyRingLeader *ring, Size len);
extern void tcopy_ring_piece_at(TcopyRingLeader *ring, uint64 start, Size len,
								int worker);
extern void tcopy_ring_consumed(TcopyRing *ring, int worker, uint64 bytes);

/*
 * A COPY's input file mapped by the leader (copy_file_map.c).  Mappable: a
 * regular file, text or csv, of which only the first read_so_far bytes
 * were read (from offset 0), whose size is true (not a /proc file's 0) and
 * which can be mapped.  Begun: SIGBUS is caught until the map ends, or the
 * current memory context goes.  A window: the bytes from pos, at most
 * 8 MB, mapped until the next; false at the file's end.  A scan: a
 * window's tcopy_chunk_scan, a page past a truncated file's end an error.
 */
typedef struct TcopyFileMap TcopyFileMap;

extern bool tcopy_file_mappable(CopyFromState src, size_t read_so_far);
extern TcopyFileMap *tcopy_file_map_begin(CopyFromState src);
extern bool tcopy_file_map_window(TcopyFileMap *map, uint64 pos, char **buf, size_t *len);
extern size_t tcopy_file_map_scan(TcopyFileMap *map, TcopyChunkScan *scan, const char *buf,
								  size_t len, size_t min, bool *cut);
extern void tcopy_file_map_end(TcopyFileMap *map);

/*
 * The line ends of a text or csv input, from its first line as the reader
 * finds them: EOL_NL, EOL_CRNL, EOL_CR, or EOL_UNKNOWN when buf has none
 * (copy_chunks.c).
 */
extern EolType tcopy_first_line_end(CopyFromState src, const char *buf, size_t len);

/*
 * A worker's error as a TCOPY_MSG_ERROR, appended to buf; and the leader's
 * side: raised as the worker's error, its CONTEXT the COPY's, context (the
 * leader's callers') after it (copy_error_message.c).
 */
extern void tcopy_parallel_error_message(const ErrorData *edata, StringInfo buf);
extern void tcopy_parallel_raise(const char *data, size_t len,
								 ErrorContextCallback *context) pg_attribute_noreturn();

/*
 * The header a binary COPY's reader expects (signature, no flags, no
 * extension): what a worker's reader, or a serial replay, is given first,
 * the leader having read and checked the input's own.
 */
#define TCOPY_BINARY_HEADER "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0"
#define TCOPY_BINARY_HEADER_LEN 19

/* The COPY, as the workers open it. */
typedef struct TcopyParallelShared
{
	Oid			relid;
	Oid			userid;			/* whose user mapping: the codec's */
	bool		binary;			/* FORMAT binary: the reader wants a header */
	bool		has_on_conflict;	/* the COPY's on_conflict option: */
	TcopyOnConflict on_conflict;	/* for the partitions routing opens */
	int			eol_type;		/* the reader's EolType, known from the
								 * first line; text and csv */
	/* a regular file, which the workers pread(): the ring holds no data */
	bool		file;
	dev_t		file_dev;		/* the file the leader opened */
	ino_t		file_ino;
	int			file_pid;		/* the leader's pid and descriptor of it */
	int			file_fd;
	char		file_name[MAXPGPATH];
	/* streams: the workers send the rows to the tserver themselves */
	bool		streams;
	int			nslots;			/* TcopyStreamSlot[nslots] at KEY_SLOTS */
	ConditionVariable slot_ready;	/* a slot became ready */
} TcopyParallelShared;

/*
 * With streams, a table whose rows the workers may send: the COPY's, or
 * each partition of a partitioned table's, sorted by relid.  A partition's
 * slot is made ready by the leader when a worker first routes a row to it
 * (TCOPY_MSG_OPEN, in chunk order), as its write session is begun.
 */
typedef enum TcopySlotState
{
	TCOPY_SLOT_UNKNOWN = 0,		/* no row routed to it yet */
	TCOPY_SLOT_STREAM,			/* send its rows on a stream of the session */
	TCOPY_SLOT_RELAY			/* send them to the leader (no tserver to
								 * stream to: the null transport) */
} TcopySlotState;

typedef struct TcopyStreamSlot
{
	Oid			relid;
	pg_atomic_uint32 state;		/* TcopySlotState; the fields below are set
								 * before it */
	uint32		session;		/* which of the COPY's write sessions: a
								 * worker's stream for each */
	uint32		table_id;		/* the table's id on the tserver */
	uint64		session_id;		/* the write session to join */
	uint8		session_key[16];
	uint32		session_key_len;
} TcopyStreamSlot;

/*
 * At KEY_OPTIONS, three nodeToString()s one after the other, each with its
 * terminating NUL: the COPY options for BeginCopyFrom (with the source's
 * encoding), the column list, the WHERE clause's implicit-AND list.
 */

/* Message types, the first byte of each message. */
typedef enum TcopyParallelMessage
{
	/* leader to worker */
	TCOPY_MSG_CHUNK = 'C',		/* a chunk begins: TcopyChunkBegin */
	TCOPY_MSG_DATA = 'D',		/* the chunk's next bytes: TcopyDataPiece */
	TCOPY_MSG_CHUNK_END = 'E',	/* the chunk ends */
	/* worker to leader */
	TCOPY_MSG_BATCH = 'B',		/* TcopyBatchHeader, runs, rows */
	TCOPY_MSG_ROWS = 'R',		/* TcopyBatchHeader, runs: a batch the worker
								 * sent on its stream */
	TCOPY_MSG_OPEN = 'O',		/* TcopyOpenRequest: make a slot ready */
	TCOPY_MSG_STREAM_FAILED = 'S',	/* TcopyStreamFailed, then why,
									 * NUL-terminated */
	TCOPY_MSG_FINISHED = 'Z',	/* after the last chunk: the stream's every
								 * batch and chunk end was acknowledged */
	TCOPY_MSG_DONE = 'F',		/* the chunk's rows are all sent: TcopyChunkDone */
	TCOPY_MSG_ERROR = 'X'		/* the chunk's error: TcopyErrorHeader, strings */
} TcopyParallelMessage;

typedef struct TcopyChunkBegin
{
	char		type;
	bool		first;			/* the input's first chunk: its reader finds
								 * how lines end, as a serial one */
	uint64		chunk;			/* 1, 2, ...: its number on the streams */
	uint64		lines_before;	/* the reader's cur_lineno at its start */
} TcopyChunkBegin;

/*
 * A piece of the ring: data[offset, offset + len), never across its end;
 * or, for a file, its bytes [offset, offset + len).
 */
typedef struct TcopyDataPiece
{
	char		type;
	uint32		len;
	uint64		offset;
} TcopyDataPiece;

typedef struct TcopyBatchHeader
{
	char		type;
	Oid			relid;			/* its table: the COPY's, or a partition */
	uint32		nrows;
	uint32		nruns;			/* TcopyParallelRun[nruns] follow, then the
								 * rows in the wire encoding */
} TcopyBatchHeader;

typedef struct TcopyParallelRun
{
	uint64		row;			/* 0-based in the batch */
	uint64		line;
} TcopyParallelRun;

typedef struct TcopyOpenRequest
{
	char		type;
	Oid			relid;			/* a partition a row was routed to */
	uint64		line;			/* the first such row's line, or 0 */
} TcopyOpenRequest;

typedef struct TcopyStreamFailed
{
	char		type;
	uint32		session;		/* the stream's session (TcopyStreamSlot's) */
} TcopyStreamFailed;

typedef struct TcopyChunkDone
{
	char		type;
	bool		end_marker;		/* the reader met "\." in it: the input ends */
	uint64		excluded;		/* rows the WHERE clause left out */
} TcopyChunkDone;

/*
 * An error, raised while the chunk was read: its fields, then
 * TCOPY_ERROR_NFIELDS strings, each NUL-terminated, "" for none.
 */
typedef struct TcopyErrorHeader
{
	char		type;
	int			sqlerrcode;
	int			cursorpos;
} TcopyErrorHeader;

#define TCOPY_ERROR_NFIELDS 10

extern PGDLLEXPORT void tcopy_copy_worker_main(dsm_segment *seg, shm_toc *toc);

/*
 * The tables a parallel COPY's leader writes (copy_targets.c): the COPY's
 * table, or the partitions the workers route rows to, each with its writer
 * (relaying: the workers' batches sent as the writer's) and, with streams,
 * the write sessions the workers join, whose chunks the leader skips where
 * a chunk has no rows for a session.
 */
typedef struct CopyTargets CopyTargets;

extern CopyTargets *copy_targets_begin(Relation rel, TcopyWriter *writer,
									   const TcopyOnConflict *on_conflict, bool streams);
extern int	copy_targets_nslots(CopyTargets *targets);
extern void copy_targets_set_slots(CopyTargets *targets, TcopyStreamSlot *slots,
								   ConditionVariable *slot_ready);
extern TcopyWriter *copy_targets_writer(CopyTargets *targets, Oid relid);
extern void copy_targets_open(CopyTargets *targets, Oid relid);
extern void copy_targets_streamed(CopyTargets *targets, uint64 chunk, Oid relid,
								  const TcopyLineRun *runs, int nruns, uint64 nrows);
extern void copy_targets_end_streams(CopyTargets *targets, uint64 chunks, bool last);
extern void copy_targets_close_streams(CopyTargets *targets, uint64 chunks);
extern void copy_targets_stream_failed(CopyTargets *targets, uint32 session, uint64 chunks,
									   const char *why) pg_attribute_noreturn();
extern void copy_targets_finish(CopyTargets *targets);

/* The slot of relid in slots[nslots], or NULL. */
extern TcopyStreamSlot *copy_targets_slot(TcopyStreamSlot *slots, int nslots, Oid relid);

/*
 * Why src's COPY (with WHERE clause where) must be parsed by the backend
 * alone, or NULL (copy_parallel_safe.c).
 */
extern const char *tcopy_parallel_refusal(CopyFromState src, List *where);

#endif							/* TCOPY_COPY_PARALLEL_H */
