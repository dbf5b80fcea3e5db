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
#include "storage/dsm.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"

#include "tcopy/catalog.h"

/* shm_toc keys */
#define TCOPY_PARALLEL_KEY_SHARED	UINT64CONST(0x7C0B0001)
#define TCOPY_PARALLEL_KEY_OPTIONS	UINT64CONST(0x7C0B0002)
#define TCOPY_PARALLEL_KEY_QUEUES	UINT64CONST(0x7C0B0003)

/* Each queue's size: a chunk's bytes or batches in flight. */
#define TCOPY_PARALLEL_QUEUE_BYTES	(1024 * 1024)

/* The leader's data messages carry at most this much input. */
#define TCOPY_PARALLEL_PIECE_BYTES	(64 * 1024)

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
	/* streams: the workers send the rows to the tserver themselves */
	bool		streams;
	uint64		session_id;		/* the write session they join */
	uint8		session_key[16];
	uint32		session_key_len;
	uint32		table_id;		/* the table's id on the tserver */
} TcopyParallelShared;

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
	TCOPY_MSG_DATA = 'D',		/* the chunk's next bytes */
	TCOPY_MSG_CHUNK_END = 'E',	/* the chunk ends */
	/* worker to leader */
	TCOPY_MSG_BATCH = 'B',		/* TcopyBatchHeader, runs, rows */
	TCOPY_MSG_ROWS = 'R',		/* TcopyBatchHeader, runs: a batch the worker
								 * sent on its stream */
	TCOPY_MSG_STREAM_FAILED = 'S',	/* the stream failed: why, NUL-terminated */
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
 * Why src's COPY (with WHERE clause where) must be parsed by the backend
 * alone, or NULL (copy_parallel_safe.c).
 */
extern const char *tcopy_parallel_refusal(CopyFromState src, List *where);

#endif							/* TCOPY_COPY_PARALLEL_H */
