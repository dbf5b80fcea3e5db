/*
 * ts_proto_streams.c
 *		The requests of a write session's streams (docs/protocol.md#streams):
 *		STREAMS opens the session of this connection to streams, or closes
 *		them; JOIN makes this connection a stream of another's session;
 *		CHUNK and WRITE send a stream's chunks.  The session's side is
 *		ts_streams.c.
 */
#include "ts_proto_int.h"

#include <inttypes.h>
#include <pthread.h>

#include "ts_log.h"

/*
 * STREAMS: open the session to streams (the connection then only closes
 * them or aborts), or close them, checking the chunks and rows named;
 * answer STREAMS_OK with the session's rows.
 */
int
ts_proto_on_streams(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Streams *request;
	Tcopy__StreamsOk reply = TCOPY__STREAMS_OK__INIT;

	if (proto->phase != TS_PROTO_IN_SESSION && proto->phase != TS_PROTO_STREAMING)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_STREAMS,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	request = ts_proto_unpack(proto, &tcopy__streams__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->open != (proto->phase == TS_PROTO_IN_SESSION))
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_STREAMS,
								request->open ? "the session's streams are open already" :
								"the session's streams are not open", err);
	if (request->open)
	{
		if (ts_session_streams_open(proto->session, proto->scope, err) != 0)
			return -1;
		proto->phase = TS_PROTO_STREAMING;
	}
	else
	{
		/* closed even when the check fails: the connection ends then */
		proto->phase = TS_PROTO_IN_SESSION;
		if (ts_session_streams_close(proto->session, request->chunks, request->rows,
									 ts_proto_give_up, proto, err) != 0)
			return -1;
	}
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session streams %s", proto->id,
		   request->open ? "open" : "closed");
	reply.rows = ts_session_rows(proto->session);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_STREAMS_OK, &reply.base, err);
}

/* JOIN: become a stream of the session named; answer JOIN_OK. */
int
ts_proto_on_join(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Join *request;
	Tcopy__JoinOk reply = TCOPY__JOIN_OK__INIT;
	char		gid[PROTO_GID_LOG_MAX];

	if (proto->phase != TS_PROTO_READY)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_JOIN,
								proto->phase == TS_PROTO_IN_SESSION ||
								proto->phase == TS_PROTO_STREAMING ?
								"this connection has a write session of its own" : NULL, err);
	request = ts_proto_unpack(proto, &tcopy__join__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (ts_store_prepared_owned(proto->shared->store, proto->id, gid, sizeof(gid)))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unexpected JOIN frame: this connection's session prepared under \"%s\" "
					 "must be resolved first", gid);
		return -1;
	}
	proto->stream = ts_stream_join(proto->shared->store, request->session_id,
								   request->session_key.data, request->session_key.len,
								   proto->scope, err);
	if (proto->stream == NULL)
		return -1;
	proto->phase = TS_PROTO_STREAM;
	proto->last_seq = 0;
	pthread_setname_np(pthread_self(), "ts-stream");
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": joined session %" PRIu64 " as a stream",
		   proto->id, (uint64_t) request->session_id);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_JOIN_OK, &reply.base, err);
}

/*
 * CHUNK: a stream's chunk begins (no answer), or ends in its turn, taking
 * the stream's next seq: answer ACK.  On the session's own connection:
 * chunks no stream sends, skipped (no answer).
 */
int
ts_proto_on_chunk(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Chunk *request;
	Tcopy__Ack	ack = TCOPY__ACK__INIT;

	if (proto->phase != TS_PROTO_STREAM && proto->phase != TS_PROTO_STREAMING)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_CHUNK,
								"the connection is no stream of a write session, and "
								"its session is not open to streams", err);
	request = ts_proto_unpack(proto, &tcopy__chunk__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (proto->phase == TS_PROTO_STREAMING)
		return ts_session_streams_skip(proto->session, request->chunk, request->through,
									   request->last, err);
	if (request->end && ts_proto_check_seq(proto, "chunk end", request->seq, err) != 0)
		return -1;
	if (ts_stream_chunk(proto->stream, request->chunk, request->end, request->last,
						&ack.rows, err) != 0)
		return -1;
	if (!request->end)
		return 0;
	proto->last_seq = request->seq;
	ack.seq = request->seq;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_ACK, &ack.base, err);
}

/*
 * WRITE on a stream: encode the batch, then give back the memory of the
 * decoded frame (and its share of the total decode budget: streams
 * waiting for their turn must not hold what the stream whose turn it is
 * needs to decode), stage it in its chunk's turn; its seq follows the
 * stream's previous batch.  Answer ACK with the session's rows.
 */
int
ts_proto_on_stream_write(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__WriteBatch decoded;
	Tcopy__WriteBatch *batch;
	Tcopy__Ack	ack = TCOPY__ACK__INIT;
	uint64_t	rows = 0;

	batch = ts_proto_decode_write(proto, payload, len, &decoded, err);
	if (batch == NULL)
		return -1;
	if (ts_proto_check_seq(proto, "write batch", batch->seq, err) != 0)
		return -1;
	atomic_fetch_add(&proto->shared->batches_received, 1);
	if (ts_proto_check_table_id(proto, batch->table_id, err) != 0 ||
		ts_stream_encode(proto->stream, batch,
						 ts_proto_opened_layout(proto, batch->table_id), err) != 0)
		return -1;
	/* the decoded frame is done with: free it before waiting for the turn */
	ts_proto_frame_done(proto);
	if (ts_stream_stage(proto->stream, &rows, err) != 0)
		return -1;
	proto->last_seq = batch->seq;
	ack.seq = batch->seq;
	ack.rows = rows;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_ACK, &ack.base, err);
}
