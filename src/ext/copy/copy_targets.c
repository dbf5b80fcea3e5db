/*
 * copy_targets.c
 *		The tables a parallel COPY's leader writes: the COPY's table, or the
 *		partitions its workers route rows to, with their writers and, when
 *		the workers send the rows themselves, the write sessions they join.
 *
 * Relaying, a worker's batch of a table's rows is sent as the table's
 * writer's next batch (copy_parallel.c).  With streams
 * (docs/parallel.md#streams) each table has a slot in the shared memory
 * that tells the workers which write session to join and the table's id
 * there.  The COPY's table's is ready at once.  A partition's is made
 * ready the first time a worker routes a row to it: the worker asks
 * (TCOPY_MSG_OPEN) and waits, and the leader, taking the request in chunk
 * order, begins the partition's writer as routing does in a serial COPY
 * (a partition no row reaches opens no session, and its tserver need not
 * be reachable), opens its connection's session to streams if no other
 * partition did, and publishes the session.
 *
 * A session stages its streams' chunks in chunk order, but a worker sends
 * a chunk on a session only when the chunk has rows for it.  The leader
 * takes the workers' batches in chunk order, so it knows which chunks had
 * none: it tells the session to skip them, lazily, when a later chunk
 * brings rows for the session (before its rows can be staged, since the
 * worker tells the leader of a batch before sending it) and at the end.
 */
#include "postgres.h"

#include "copy_parallel.h"

#include "access/table.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

/* A table written: the COPY's, or a partition. */
typedef struct CopyTarget
{
	Oid			relid;
	Relation	rel;			/* a partition's, opened here; NULL: the COPY's */
	TcopyWriter *writer;
} CopyTarget;

/* A write session the workers' streams join: one per tserver connection. */
typedef struct CopySession
{
	TcopyConnection *conn;
	uint64		next_skip;		/* the first chunk not known to have rows or
								 * to be skipped */
} CopySession;

struct CopyTargets
{
	Relation	rel;			/* the COPY's */
	const TcopyOnConflict *on_conflict; /* the COPY's option, or NULL */
	bool		streams;
	CopyTarget *targets;
	int			ntargets;
	int			targets_cap;
	int			last;			/* the target the last batch was of */
	CopySession *sessions;
	int			nsessions;
	List	   *relids;			/* with streams, the tables that may be
								 * written: one slot each */
	TcopyStreamSlot *slots;		/* in the shared memory */
	int			nslots;
	ConditionVariable *slot_ready;
};

static int
oid_cmp(const void *a, const void *b)
{
	Oid			x = *(const Oid *) a;
	Oid			y = *(const Oid *) b;

	return x < y ? -1 : x > y;
}

static int
slot_cmp(const void *key, const void *slot)
{
	return oid_cmp(key, &((const TcopyStreamSlot *) slot)->relid);
}

TcopyStreamSlot *
copy_targets_slot(TcopyStreamSlot *slots, int nslots, Oid relid)
{
	return bsearch(&relid, slots, nslots, sizeof(TcopyStreamSlot), slot_cmp);
}

static CopyTarget *
targets_add(CopyTargets *targets, Oid relid, Relation rel, TcopyWriter *writer)
{
	CopyTarget *target;

	if (targets->ntargets == targets->targets_cap)
	{
		targets->targets_cap = Max(targets->targets_cap * 2, 8);
		targets->targets = targets->targets == NULL ?
			palloc(sizeof(CopyTarget) * targets->targets_cap) :
			repalloc(targets->targets, sizeof(CopyTarget) * targets->targets_cap);
	}
	target = &targets->targets[targets->ntargets];
	target->relid = relid;
	target->rel = rel;
	target->writer = writer;
	targets->last = targets->ntargets++;
	return target;
}

/*
 * writer: the COPY's table's, or NULL for a partitioned table, whose
 * partitions get theirs as rows reach them.
 */
CopyTargets *
copy_targets_begin(Relation rel, TcopyWriter *writer, const TcopyOnConflict *on_conflict,
				   bool streams)
{
	CopyTargets *targets = palloc0(sizeof(CopyTargets));

	targets->rel = rel;
	targets->on_conflict = on_conflict;
	targets->streams = streams;
	if (writer != NULL)
		targets_add(targets, RelationGetRelid(rel), NULL, writer);
	if (streams && writer != NULL)
		targets->relids = list_make1_oid(RelationGetRelid(rel));
	else if (streams)
		targets->relids = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	return targets;
}

/* The slots the shared memory needs: one per table that may be written. */
int
copy_targets_nslots(CopyTargets *targets)
{
	return list_length(targets->relids);
}

/* The session of conn, opened to streams the first time. */
static uint32
targets_session(CopyTargets *targets, TcopyConnection *conn)
{
	int			i;

	for (i = 0; i < targets->nsessions; i++)
		if (targets->sessions[i].conn == conn)
			return i;
	tcopy_xact_streams_open(conn);
	targets->sessions = targets->sessions == NULL ?
		palloc(sizeof(CopySession)) :
		repalloc(targets->sessions, sizeof(CopySession) * (targets->nsessions + 1));
	targets->sessions[i].conn = conn;
	targets->sessions[i].next_skip = 1;
	targets->nsessions++;
	return i;
}

/* Make slot ready for writer's rows: on a stream, or relayed. */
static void
targets_publish(CopyTargets *targets, TcopyStreamSlot *slot, TcopyWriter *writer)
{
	TcopySlotState state = TCOPY_SLOT_RELAY;

	if (!writer->conn->null_transport)
	{
		const uint8 *key;
		size_t		keylen;

		slot->session = targets_session(targets, writer->conn);
		slot->table_id = writer->table_id;
		if (tc_client_session(writer->conn->client, &slot->session_id, &key, &keylen) != 0 ||
			keylen > sizeof(slot->session_key))
			elog(ERROR, "tcopy write session has no key for parallel COPY workers");
		memcpy(slot->session_key, key, keylen);
		slot->session_key_len = keylen;
		state = TCOPY_SLOT_STREAM;
	}
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, state);
	ConditionVariableBroadcast(targets->slot_ready);
}

/*
 * The shared memory's slots (copy_targets_nslots of them), filled: the
 * relids, and the COPY's table's slot ready.
 */
void
copy_targets_set_slots(CopyTargets *targets, TcopyStreamSlot *slots,
					   ConditionVariable *slot_ready)
{
	ListCell   *lc;
	int			i = 0;

	targets->slots = slots;
	targets->nslots = copy_targets_nslots(targets);
	targets->slot_ready = slot_ready;
	ConditionVariableInit(slot_ready);
	foreach(lc, targets->relids)
	{
		memset(&slots[i], 0, sizeof(TcopyStreamSlot));
		slots[i].relid = lfirst_oid(lc);
		pg_atomic_init_u32(&slots[i].state, TCOPY_SLOT_UNKNOWN);
		i++;
	}
	qsort(slots, targets->nslots, sizeof(TcopyStreamSlot), oid_cmp);
	if (targets->ntargets > 0)
		targets_publish(targets, &slots[0], targets->targets[0].writer);
}

/*
 * The writer of relid's rows: the table's, or a partition's, made the
 * first time a worker routes rows to it, as routing makes it in a serial
 * COPY (BeginForeignInsert).  Nothing in making it assigns a transaction
 * id, which parallel mode would refuse.
 */
TcopyWriter *
copy_targets_writer(CopyTargets *targets, Oid relid)
{
	Relation	part;
	TcopyRelCodec *codec;
	TcopyWriter *writer;
	int			i;

	if (targets->ntargets > 0 && targets->targets[targets->last].relid == relid)
		return targets->targets[targets->last].writer;
	for (i = 0; i < targets->ntargets; i++)
		if (targets->targets[i].relid == relid)
		{
			targets->last = i;
			return targets->targets[i].writer;
		}
	if (targets->rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		elog(ERROR, "parallel COPY worker sent rows of relation %u into \"%s\"",
			 relid, RelationGetRelationName(targets->rel));

	/* the worker's routing checked it is a tcopy table (copy_route.c) */
	part = table_open(relid, RowExclusiveLock);
	codec = tcopy_rel_codec(part, GetUserId());
	if (targets->on_conflict != NULL)
		codec->options.on_conflict = *targets->on_conflict;
	writer = tcopy_writer_begin(codec);
	/* SERIALIZABLE: the write, to Postgres' SSI, at the partition's granularity */
	tcopy_ssi_write(part);
	/* a duplicate's CONTEXT names the table copied into, as for a heap */
	writer->line_relname = RelationGetRelationName(targets->rel);
	return targets_add(targets, relid, part, writer)->writer;
}

/* A worker routed a row to relid: make its slot ready (TCOPY_MSG_OPEN). */
void
copy_targets_open(CopyTargets *targets, Oid relid)
{
	TcopyStreamSlot *slot = copy_targets_slot(targets->slots, targets->nslots, relid);

	if (slot == NULL)
		elog(ERROR, "parallel COPY worker routed a row to relation %u, not a partition of \"%s\"",
			 relid, RelationGetRelationName(targets->rel));
	if (pg_atomic_read_u32(&slot->state) != TCOPY_SLOT_UNKNOWN)
		return;					/* another worker asked first */
	targets_publish(targets, slot, copy_targets_writer(targets, relid));
}

/* Skip session's chunks from its next_skip through through. */
static void
targets_skip(CopySession *session, uint64 through, bool last)
{
	if (session->next_skip <= through || last)
		tcopy_xact_streams_skip(session->conn, session->next_skip, through, last);
	session->next_skip = through + 1;
}

/*
 * A worker sent nrows rows of relid, with their lines, on its stream in
 * chunk: they are its session's next rows.  The chunks since the session's
 * last with rows had none for it: skipped.
 */
void
copy_targets_streamed(CopyTargets *targets, uint64 chunk, Oid relid,
					  const TcopyLineRun *runs, int nruns, uint64 nrows)
{
	TcopyWriter *writer = copy_targets_writer(targets, relid);
	TcopyStreamSlot *slot = copy_targets_slot(targets->slots, targets->nslots, relid);
	CopySession *session;

	if (slot == NULL || pg_atomic_read_u32(&slot->state) != TCOPY_SLOT_STREAM)
		elog(ERROR, "parallel COPY worker streamed rows of relation %u, which has no stream",
			 relid);
	session = &targets->sessions[slot->session];
	if (session->next_skip > chunk + 1)
		elog(ERROR, "parallel COPY worker streamed rows of chunk " UINT64_FORMAT " after a later chunk's",
			 chunk);
	if (session->next_skip <= chunk)
		targets_skip(session, chunk - 1, false);
	session->next_skip = chunk + 1;
	tcopy_xact_streamed(writer->conn, writer->table_id, writer->line_relname,
						runs, nruns, nrows);
}

/*
 * After the input's last chunk (chunks of them), or the one with the
 * end-of-data marker (last): the chunks after each session's last with
 * rows are skipped.
 */
void
copy_targets_end_streams(CopyTargets *targets, uint64 chunks, bool last)
{
	for (int i = 0; i < targets->nsessions; i++)
		targets_skip(&targets->sessions[i], chunks, last);
}

/*
 * Close every session's streams: chunks 1 .. chunks all staged (the
 * tserver waits for those still on their way), every row counted.  When
 * several sessions failed (duplicate keys in two partitions), the error
 * raised is the one of the earliest line, as a serial COPY's would be,
 * whatever the order the sessions are closed in; a failure of no known
 * line (a lost connection) before any.
 */
void
copy_targets_close_streams(CopyTargets *targets, uint64 chunks)
{
	TcopyConnection *failed = NULL;
	uint64		failed_line = 0;

	for (int i = 0; i < targets->nsessions; i++)
	{
		TcopyConnection *conn = targets->sessions[i].conn;
		uint64		line;

		if (tcopy_xact_streams_end(conn, chunks))
			continue;
		line = tcopy_session_failure_line(conn);
		if (failed == NULL || line < failed_line)
		{
			if (failed != NULL)
				tcopy_connection_close(failed);
			failed = conn;
			failed_line = line;
		}
		else
			tcopy_connection_close(conn);
	}
	if (failed != NULL)
		tcopy_session_fail(failed, "could not write the rows of parallel COPY workers");
}

/*
 * A worker's stream of session failed (why), in the chunk after chunks:
 * the session says why when one of its streams failed (a duplicate key,
 * with its line), else the worker does.
 */
void
copy_targets_stream_failed(CopyTargets *targets, uint32 session, uint64 chunks,
						   const char *why)
{
	if (session < (uint32) targets->nsessions)
	{
		targets_skip(&targets->sessions[session], chunks, false);
		tcopy_xact_streams_close(targets->sessions[session].conn, chunks);
	}
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("a parallel COPY worker could not send its rows to the tserver: %s", why)));
}

/* Send the partitions' last batches (and wait as the writers wait). */
void
copy_targets_finish(CopyTargets *targets)
{
	for (int i = 0; i < targets->ntargets; i++)
	{
		if (targets->targets[i].rel == NULL)
			continue;			/* the COPY's table's: copy.c finishes it */
		tcopy_writer_finish(targets->targets[i].writer);
		tcopy_writer_free(targets->targets[i].writer);
		table_close(targets->targets[i].rel, NoLock);
	}
}
