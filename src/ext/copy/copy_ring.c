/*
 * copy_ring.c
 *		The input ring of a parallel COPY: the leader reads the input into
 *		shared memory once, and its workers copy their pieces out of it.
 *
 * The leader used to read the input into its own buffer and copy every
 * byte again into the workers' queues; now it read()s into a region of
 * the ring (contiguous: a region that would cross the ring's end starts
 * at its beginning instead), cuts it into pieces as before, and each data
 * message names a piece (copy_parallel.h, TcopyDataPiece).  Positions are
 * counted as a stream (uint64, never wrapping), the bytes skipped at the
 * ring's end included, so that the used space is [tail, head).  The
 * pieces sent are remembered in ring order with their worker and where
 * they end in that worker's share of the stream; the tail moves past a
 * piece once its worker's consumed count reaches that end.  A worker's
 * pieces reach it in ring order, and a worker copies out all of a chunk
 * before its end, so the oldest piece is always copied eventually (or the
 * worker stopped at an error or "\.", which the leader raises or stops at
 * in that chunk's turn, without waiting for room).
 *
 * A regular file is not read into the ring at all (docs/parallel.md,
 * "Files"): the leader maps it to find the row ends, and each worker
 * pread()s its pieces, named by their offsets in the file.  The ring then
 * holds no data, only its bound on the bytes sent and not yet read: the
 * same positions and pieces, stream positions being file offsets
 * (tcopy_ring_reserve, tcopy_ring_piece_at).
 */
#include "postgres.h"

#include "copy_parallel.h"

#include "storage/latch.h"
#include "storage/proc.h"

/* A piece sent, not yet known to be copied out. */
typedef struct RingPiece
{
	uint64		start;			/* in the stream */
	int			worker;
	uint64		worker_end;		/* its worker's consumed count once copied */
} RingPiece;

struct TcopyRingLeader
{
	TcopyRing  *shared;
	char	   *data;
	Size		size;			/* of the data, or (no data) the bound */
	uint64		head;			/* the stream position after the last region */
	Size		head_off;		/* its offset in data */
	uint64		region;			/* the region given out: its stream position */
	Size		region_off;		/* and offset */
	uint64	   *sent;			/* [worker]: bytes of pieces sent to it */
	RingPiece  *pieces;			/* circular, [first, first + count) */
	int			cap;
	int			first;
	int			count;
};

/* The shared memory a ring of size bytes takes for nworkers. */
Size
tcopy_ring_shmem_size(int nworkers, Size size)
{
	return TYPEALIGN(PG_CACHE_LINE_SIZE,
					 offsetof(TcopyRing, consumed) + sizeof(pg_atomic_uint64) * nworkers) +
		size;
}

/*
 * Lay the ring out in space (tcopy_ring_shmem_size bytes, of size bytes of
 * data, or of none when !holds_data), the caller its leader; size must
 * hold the largest region asked for, twice for a region asked for again
 * and again.  Without data, size bounds the bytes in flight.
 */
TcopyRingLeader *
tcopy_ring_create(void *space, int nworkers, Size size, bool holds_data)
{
	TcopyRing  *shared = space;
	TcopyRingLeader *ring = palloc0(sizeof(TcopyRingLeader));

	shared->size = holds_data ? size : 0;
	shared->data_offset = tcopy_ring_shmem_size(nworkers, 0);
	shared->leader_pgprocno = MyProc->pgprocno;
	pg_atomic_init_u32(&shared->leader_waiting, 0);
	shared->wake_worker = -1;
	pg_atomic_init_u64(&shared->wake_at, 0);
	for (int i = 0; i < nworkers; i++)
		pg_atomic_init_u64(&shared->consumed[i], 0);
	ring->shared = shared;
	ring->data = holds_data ? (char *) space + shared->data_offset : NULL;
	ring->size = size;
	ring->sent = palloc0(sizeof(uint64) * nworkers);
	ring->cap = 64;
	ring->pieces = palloc(sizeof(RingPiece) * ring->cap);
	return ring;
}

/* Forget the pieces their workers copied out; the used space's start. */
static uint64
ring_tail(TcopyRingLeader *ring)
{
	while (ring->count > 0)
	{
		RingPiece  *p = &ring->pieces[ring->first];

		if (pg_atomic_read_u64(&ring->shared->consumed[p->worker]) < p->worker_end)
			break;
		ring->first = (ring->first + 1) % ring->cap;
		ring->count--;
	}
	/* the workers' reads of what we overwrite next came before their counts */
	pg_memory_barrier();
	return ring->count > 0 ? ring->pieces[ring->first].start : ring->head;
}

/*
 * Whether the used space may reach stream position end; when not, the
 * leader is to wait on its latch, which the worker of a piece sets once it
 * copied that piece out.  Which piece: the last of those whose copying
 * frees a quarter of the ring more than needed, so that the leader, woken,
 * has room for many regions, not one (it was woken for every piece, about
 * 1,500 times in 4M rows); the oldest piece not copied out when that one
 * already is.  The worker and count are written before the flag, and the
 * count is read again after it, so that a worker that copied the piece
 * out before it could see the flag is not waited for.
 */
static bool
ring_room(TcopyRingLeader *ring, uint64 end)
{
	TcopyRing  *shared = ring->shared;

	for (;;)
	{
		uint64		want;
		RingPiece  *target = NULL;

		if (end - ring_tail(ring) <= ring->size)
		{
			if (pg_atomic_read_u32(&shared->leader_waiting) != 0)
				pg_atomic_write_u32(&shared->leader_waiting, 0);
			return true;
		}
		/* ring_tail left at least one piece, not copied out */
		want = end - ring->size + ring->size / 4;
		for (int i = ring->count - 1; i >= 0; i--)
		{
			RingPiece  *p = &ring->pieces[(ring->first + i) % ring->cap];

			if (p->start < want)
			{
				target = p;
				break;
			}
		}
		if (target == NULL ||
			pg_atomic_read_u64(&shared->consumed[target->worker]) >= target->worker_end)
			target = &ring->pieces[ring->first];
		shared->wake_worker = target->worker;
		pg_atomic_write_u64(&shared->wake_at, target->worker_end);
		pg_memory_barrier();
		pg_atomic_write_u32(&shared->leader_waiting, 1);
		pg_memory_barrier();
		if (pg_atomic_read_u64(&shared->consumed[target->worker]) < target->worker_end)
			return false;
	}
}

/*
 * len contiguous bytes after the last region, to read into, or NULL when
 * the workers have not copied enough out yet: then a worker sets the
 * leader's latch when it copies a piece out.
 */
char *
tcopy_ring_region(TcopyRingLeader *ring, Size len)
{
	uint64		pos = ring->head;
	Size		off = ring->head_off;

	Assert(len <= ring->size);
	if (ring->size - off < len)
	{
		pos += ring->size - off;	/* skip the end */
		off = 0;
	}
	if (!ring_room(ring, pos + len))
		return NULL;
	ring->region = pos;
	ring->region_off = off;
	return ring->data + off;
}

/* The region's first n bytes were read into: they are the head's. */
void
tcopy_ring_filled(TcopyRingLeader *ring, Size n)
{
	if (n == 0)
		return;
	ring->head = ring->region + n;
	ring->head_off = ring->region_off + n;
}

/*
 * Send piece (len bytes of the last region) to worker: its offset in the
 * ring, for the data message.  Its space is used until the worker copied
 * it out.
 */
uint64
tcopy_ring_piece(TcopyRingLeader *ring, const char *piece, Size len, int worker)
{
	Size		off = piece - ring->data;

	Assert(off + len <= ring->head_off);
	tcopy_ring_piece_at(ring, ring->head - (ring->head_off - off), len, worker);
	return off;
}

/*
 * Without data: whether len more bytes may be sent now; when not, a worker
 * sets the leader's latch as it reads a piece, as for tcopy_ring_region.
 */
bool
tcopy_ring_reserve(TcopyRingLeader *ring, Size len)
{
	Assert(ring->shared->size == 0);
	return ring_room(ring, ring->head + len);
}

/*
 * The piece at stream position start, of len bytes, is sent to worker: it
 * is in flight until the worker's consumed count covers it.  Without
 * data, pieces come in stream order and move the head.
 */
void
tcopy_ring_piece_at(TcopyRingLeader *ring, uint64 start, Size len, int worker)
{
	RingPiece  *p;

	if (len == 0)
		return;
	if (ring->count == ring->cap)
	{
		RingPiece  *pieces = palloc(sizeof(RingPiece) * ring->cap * 2);

		for (int i = 0; i < ring->count; i++)
			pieces[i] = ring->pieces[(ring->first + i) % ring->cap];
		pfree(ring->pieces);
		ring->pieces = pieces;
		ring->first = 0;
		ring->cap *= 2;
	}
	ring->sent[worker] += len;
	p = &ring->pieces[(ring->first + ring->count) % ring->cap];
	p->start = start;
	p->worker = worker;
	p->worker_end = ring->sent[worker];
	ring->count++;
	if (ring->shared->size == 0)
		ring->head = start + len;
}

/*
 * A worker's side: it has copied bytes of its pieces out in all (they may
 * be overwritten); the leader's latch is set if it waits for room, for
 * this worker's copying up to there (ring_room).
 */
void
tcopy_ring_consumed(TcopyRing *ring, int worker, uint64 bytes)
{
	/* the copies are done before the leader may see the count */
	pg_memory_barrier();
	pg_atomic_write_u64(&ring->consumed[worker], bytes);
	pg_memory_barrier();
	if (pg_atomic_read_u32(&ring->leader_waiting) != 0)
	{
		pg_memory_barrier();
		if (ring->wake_worker == worker &&
			bytes >= pg_atomic_read_u64(&ring->wake_at) &&
			pg_atomic_exchange_u32(&ring->leader_waiting, 0) != 0)
			SetLatch(&ProcGlobal->allProcs[ring->leader_pgprocno].procLatch);
	}
}
