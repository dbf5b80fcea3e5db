/*
 * ts_streams.c
 *		Streams of one write session: other connections that join it and
 *		send its batches chunk by chunk, staged in chunk order
 *		(docs/protocol.md#streams).
 *
 * A parallel COPY's workers each parse a part of the input; for the
 * session to receive the rows in input order (so that of equal keys the
 * later row in the input wins, or is the one reported, and a duplicate's
 * row ordinal names its COPY line), the input is cut into chunks numbered
 * 1, 2, 3, ... and a chunk's rows are staged only when every chunk before
 * it has been.  What a stream does on its own thread, before its turn, is
 * the costly part of a batch: decoding the frame, checking the rows, and
 * encoding them into records (ts_session_encode_batch); its turn only
 * copies the records into the staging buffer (ts_session_stage_records).
 *
 * The streams of a session share a TsStreams, counted by references: the
 * session holds one while it is open to streams, each joined connection
 * one.  The session pointer in it is cleared when the session closes its
 * streams or goes away, and the session is not freed while a stream uses
 * it (users): a stream that finds the pointer cleared, or the group
 * failed, fails its batch.  A stream waiting for its turn is woken by
 * every chunk's end, by a failure and by the session closing.
 */
#include "ts_session_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often a close waiting for chunks asks whether to give up. */
#define STREAMS_CLOSE_POLL_MS 200

/* The most skips the session's connection may send ahead of the turns. */
#define STREAMS_SKIPS_MAX 65536

/* Chunks first .. through that no stream sends (ts_session_streams_skip). */
typedef struct ChunkSkip
{
	uint64_t	first;
	uint64_t	through;
	bool		last;			/* the input ends with through */
} ChunkSkip;

struct TsStreams
{
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* next_chunk, session, failed or users moved */
	unsigned	refs;			/* the session's, while open, and each stream's */
	TsSession  *session;		/* NULL once closed to streams */
	uint64_t	next_chunk;		/* the chunk whose rows are staged next */
	uint64_t	last_chunk;		/* the input ended with it; 0: not yet */
	unsigned	users;			/* streams using the session right now */
	bool		failed;			/* a stream failed: the session may not close them */
	TsError		err;			/* the first failure */
	const char *scope;			/* the namespace of the session's credential;
								 * NULL: full access */
	ChunkSkip  *skips;			/* skips[skip_head .. nskips): not reached yet */
	size_t		skip_head;
	size_t		nskips;
	size_t		skips_cap;
	uint64_t	skipped_through;	/* the last skip's through */
	bool		last_skipped;	/* the last skip had last */
};

struct TsStream
{
	TsStreams  *group;
	uint64_t	chunk;			/* the chunk being sent; 0: none */
	TcBuf		records;		/* the batch being staged, encoded */
	uint32_t	table_id;		/* its table */
	size_t		nrecords;		/* its records */
};

/* Whether a[len] and b[len] are equal, in time that does not tell where not. */
static bool
key_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	uint8_t		diff = 0;

	for (size_t i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

static void
streams_unref(TsStreams *group)
{
	bool		last;

	pthread_mutex_lock(&group->lock);
	last = --group->refs == 0;
	/* a close waits for chunks only while some stream is joined */
	if (!last)
		pthread_cond_broadcast(&group->changed);
	pthread_mutex_unlock(&group->lock);
	if (!last)
		return;
	pthread_cond_destroy(&group->changed);
	pthread_mutex_destroy(&group->lock);
	free(group->skips);
	free(group);
}

/*
 * Pass the turns of the chunks skipped from next_chunk on, under the
 * group's lock (the caller wakes the waiting streams).
 */
static void
streams_pass_skipped(TsStreams *group)
{
	while (group->skip_head < group->nskips &&
		   group->skips[group->skip_head].first == group->next_chunk)
	{
		const ChunkSkip *skip = &group->skips[group->skip_head++];

		group->next_chunk = skip->through + 1;
		if (skip->last)
			group->last_chunk = skip->through;
	}
	if (group->skip_head == group->nskips)
		group->skip_head = group->nskips = 0;
}

/*
 * Fail the group with err, unless it failed already or the session closed
 * its streams (what the close reported stands); under its lock.
 */
static void
streams_fail_locked(TsStreams *group, const TsError *err)
{
	if (!group->failed && group->session != NULL)
	{
		group->failed = true;
		group->err = *err;
	}
	pthread_cond_broadcast(&group->changed);
}

int
ts_session_streams_open(TsSession *session, const char *scope, TsError *err)
{
	TsStreams  *group;

	if (session->streams != NULL || session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "%s",
					 session->prepared ? "the session is prepared: it takes no streams" :
					 "the session's streams are open already");
		return -1;
	}
	group = calloc(1, sizeof(TsStreams));
	if (group == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	pthread_mutex_init(&group->lock, NULL);
	pthread_cond_init(&group->changed, NULL);
	group->refs = 1;
	group->session = session;
	group->next_chunk = 1;
	group->scope = scope;
	/* a JOIN finds it through the registry, under its lock */
	pthread_mutex_lock(&session->store->reg->sessions_lock);
	session->streams = group;
	pthread_mutex_unlock(&session->store->reg->sessions_lock);
	return 0;
}

/*
 * Detach the session's streams: none may use the session any more, and
 * none is using it when this returns.  Whatever they send from now on
 * fails.  Returns the group, still referenced by the session.
 */
static TsStreams *
streams_detach(TsSession *session)
{
	TsStreams  *group = session->streams;

	pthread_mutex_lock(&session->store->reg->sessions_lock);
	session->streams = NULL;
	pthread_mutex_unlock(&session->store->reg->sessions_lock);
	pthread_mutex_lock(&group->lock);
	group->session = NULL;
	pthread_cond_broadcast(&group->changed);
	while (group->users > 0)
		pthread_cond_wait(&group->changed, &group->lock);
	pthread_mutex_unlock(&group->lock);
	return group;
}

/* The session's streams; NULL with err when they are not open. */
static TsStreams *
streams_open(TsSession *session, TsError *err)
{
	if (session->streams == NULL)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "the session's streams are not open");
	return session->streams;
}

int
ts_session_streams_skip(TsSession *session, uint64_t first, uint64_t through, bool last,
						TsError *err)
{
	TsStreams  *group = streams_open(session, err);
	int			result = 0;

	if (group == NULL)
		return -1;
	if (first == 0 || through + 1 < first || (through + 1 == first && !last) ||
		(last && through == 0))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a skip of chunks %llu through %llu names no chunk",
					 (unsigned long long) first, (unsigned long long) through);
		return -1;
	}
	pthread_mutex_lock(&group->lock);
	if (first < group->next_chunk || first <= group->skipped_through || group->last_skipped)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a skip of chunks from %llu after chunk %llu %s",
					 (unsigned long long) first,
					 (unsigned long long) (group->next_chunk - 1 > group->skipped_through ?
											group->next_chunk - 1 : group->skipped_through),
					 group->last_skipped ? "ended the input" : "ended or was skipped");
		result = -1;
	}
	else if (group->nskips - group->skip_head >= STREAMS_SKIPS_MAX)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "more than %d skips of chunks ahead of the session's turn",
					 STREAMS_SKIPS_MAX);
		result = -1;
	}
	else if (group->nskips == group->skips_cap)
	{
		size_t		cap = group->skips_cap ? group->skips_cap * 2 : 16;
		ChunkSkip  *skips = realloc(group->skips, cap * sizeof(ChunkSkip));

		if (skips == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			result = -1;
		}
		else
		{
			group->skips = skips;
			group->skips_cap = cap;
		}
	}
	if (result == 0)
	{
		group->skips[group->nskips].first = first;
		group->skips[group->nskips].through = through;
		group->skips[group->nskips].last = last;
		group->nskips++;
		group->skipped_through = through;
		group->last_skipped = last;
		streams_pass_skipped(group);
		pthread_cond_broadcast(&group->changed);
	}
	pthread_mutex_unlock(&group->lock);
	return result;
}

int
ts_session_streams_close(TsSession *session, uint64_t chunks, uint64_t rows,
						 bool (*give_up) (void *arg), void *arg, TsError *err)
{
	TsStreams  *group = streams_open(session, err);
	int			result = 0;

	if (group == NULL)
		return -1;
	/*
	 * The chunks a stream sent may still be waiting for their turn (a COPY
	 * ended by "\." closes the streams of every session as soon as the
	 * chunk with the marker is read): wait for them while a stream that
	 * could end them is joined.
	 */
	pthread_mutex_lock(&group->lock);
	while (group->session != NULL && !group->failed && group->refs > 1 &&
		   group->next_chunk <= chunks)
	{
		struct timespec deadline;

		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += STREAMS_CLOSE_POLL_MS * 1000000L;
		if (deadline.tv_nsec >= 1000000000L)
		{
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&group->changed, &group->lock, &deadline) == ETIMEDOUT &&
			give_up != NULL && give_up(arg))
			break;
	}
	pthread_mutex_unlock(&group->lock);
	group = streams_detach(session);
	/* no stream runs now: the group's fields are still */
	if (group->failed)
	{
		*err = group->err;
		result = -1;
	}
	else if (group->next_chunk != chunks + 1)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "closing the session's streams names %llu chunks, but %llu were staged",
					 (unsigned long long) chunks,
					 (unsigned long long) (group->next_chunk - 1));
		result = -1;
	}
	else if (rows != session->rows)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "closing the session's streams names %llu rows, but the session received %llu",
					 (unsigned long long) rows, (unsigned long long) session->rows);
		result = -1;
	}
	streams_unref(group);
	return result;
}

void
ts_session_streams_end(TsSession *session)
{
	if (session->streams != NULL)
		streams_unref(streams_detach(session));
}

/*
 * May a connection of scope join streams of scope owner's?  A full-access
 * credential may; a scoped one only its own namespace's.
 */
static bool
scope_may_join(const char *scope, const char *owner)
{
	return scope == NULL || (owner != NULL && strcmp(scope, owner) == 0);
}

TsStream *
ts_stream_join(TsStore *store, uint64_t session_id, const uint8_t *key, size_t keylen,
			   const char *scope, TsError *err)
{
	TsSession  *session;
	TsStreams  *group = NULL;
	TsStream   *stream = calloc(1, sizeof(TsStream));

	if (stream == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&store->reg->sessions_lock);
	for (session = store->reg->sessions; session != NULL; session = session->reg_next)
		if (session->id == session_id)
			break;
	if (session != NULL && keylen == sizeof(session->key) &&
		key_equal(session->key, key, keylen) && session->streams != NULL &&
		scope_may_join(scope, session->streams->scope))
	{
		group = session->streams;
		pthread_mutex_lock(&group->lock);
		group->refs++;
		pthread_mutex_unlock(&group->lock);
	}
	pthread_mutex_unlock(&store->reg->sessions_lock);
	/* another namespace's session is answered as none: nothing is told */
	if (group == NULL)
	{
		free(stream);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "JOIN names no write session of this id and key open to streams");
		return NULL;
	}
	stream->group = group;
	return stream;
}

/* Whether chunk comes after the input's last: its rows are dropped. */
static bool
stream_past_end(const TsStreams *group, uint64_t chunk)
{
	return group->last_chunk != 0 && chunk > group->last_chunk;
}

/*
 * Wait, under the group's lock, until chunk's turn comes (or the input
 * ended before it): 0, or -1 with err when the streams were closed or one
 * failed.
 */
static int
stream_wait_turn(TsStreams *group, uint64_t chunk, TsError *err)
{
	while (group->session != NULL && !group->failed && group->next_chunk < chunk &&
		   !stream_past_end(group, chunk))
		pthread_cond_wait(&group->changed, &group->lock);
	if (group->session == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "the write session's streams were closed");
		return -1;
	}
	if (group->failed)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "another stream of the write session failed: %s", group->err.message);
		return -1;
	}
	if (group->next_chunk > chunk)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "chunk %llu of the write session was staged already",
					 (unsigned long long) chunk);
		return -1;
	}
	return 0;
}

int
ts_stream_chunk(TsStream *stream, uint64_t chunk, bool end, bool last, uint64_t *rows,
				TsError *err)
{
	TsStreams  *group = stream->group;
	int			result;

	if (chunk == 0 || (end ? stream->chunk != chunk : stream->chunk != 0))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "CHUNK %s %llu out of order: the stream's chunk is %llu",
					 end ? "end of" : "start of", (unsigned long long) chunk,
					 (unsigned long long) stream->chunk);
		return -1;
	}
	if (!end)
	{
		stream->chunk = chunk;
		return 0;
	}
	/* a chunk ends in its turn, even one without rows */
	pthread_mutex_lock(&group->lock);
	result = stream_wait_turn(group, chunk, err);
	if (result == 0 && stream_past_end(group, chunk))
	{
		stream->chunk = 0;
		*rows = 0;
	}
	else if (result == 0)
	{
		if (last)
			group->last_chunk = chunk;
		group->next_chunk++;
		streams_pass_skipped(group);
		pthread_cond_broadcast(&group->changed);
		stream->chunk = 0;
		/* no stream stages now: the chunk's turn is over, the next's not begun */
		*rows = group->session->rows;
	}
	else
		streams_fail_locked(group, err);
	pthread_mutex_unlock(&group->lock);
	return result;
}

int
ts_stream_encode(TsStream *stream, const Tcopy__WriteBatch *batch, const TsLayout *layout,
				 TsError *err)
{
	TsStreams  *group = stream->group;
	TsSession  *session;
	size_t		nrecords;
	int			result;

	if (stream->chunk == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a stream's write batch must be inside a chunk (CHUNK first)");
		return -1;
	}
	pthread_mutex_lock(&group->lock);
	session = group->session;
	if (session == NULL || group->failed)
		result = stream_wait_turn(group, stream->chunk, err);	/* says why */
	else
	{
		group->users++;
		result = 0;
	}
	pthread_mutex_unlock(&group->lock);
	if (result != 0)
		return -1;

	/* the costly part, on this stream's thread while the others stage */
	result = ts_session_encode_batch(session, batch, layout, &stream->records, &nrecords, err);
	if (result != 0)
	{
		pthread_mutex_lock(&group->lock);
		group->users--;
		streams_fail_locked(group, err);
		pthread_mutex_unlock(&group->lock);
		return -1;
	}
	stream->table_id = batch->table_id;
	stream->nrecords = nrecords;
	return 0;
}

int
ts_stream_stage(TsStream *stream, uint64_t *rows, TsError *err)
{
	TsStreams  *group = stream->group;
	TsSession  *session;
	bool		past_end;
	int			result;

	pthread_mutex_lock(&group->lock);
	session = group->session;
	result = stream_wait_turn(group, stream->chunk, err);
	past_end = result == 0 && stream_past_end(group, stream->chunk);
	pthread_mutex_unlock(&group->lock);
	if (result == 0 && past_end)
		*rows = 0;				/* acknowledged, not staged */
	else if (result == 0)
		result = ts_session_stage_records(session, stream->table_id, &stream->records,
										  stream->nrecords, rows, err);
	pthread_mutex_lock(&group->lock);
	group->users--;
	if (result != 0)
		streams_fail_locked(group, err);
	/* only a detach waits for users; a turn moves at a chunk's end */
	else if (group->users == 0 && group->session == NULL)
		pthread_cond_broadcast(&group->changed);
	pthread_mutex_unlock(&group->lock);
	/* a stream's batches are a load's: keep no large buffer between them */
	if (stream->records.cap > 4 * 1024 * 1024)
		tc_buf_free(&stream->records);
	return result;
}

void
ts_stream_leave(TsStream *stream)
{
	TsStreams  *group = stream->group;

	if (stream->chunk != 0)
	{
		TsError		err;

		ts_error_set(&err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "a stream of the write session left in the middle of chunk %llu",
					 (unsigned long long) stream->chunk);
		pthread_mutex_lock(&group->lock);
		if (group->session != NULL && !stream_past_end(group, stream->chunk))
			streams_fail_locked(group, &err);
		pthread_mutex_unlock(&group->lock);
	}
	streams_unref(group);
	tc_buf_free(&stream->records);
	free(stream);
}
