/*
 * tc_client_streams.c
 *		The client library's requests for the streams of a write session
 *		(docs/protocol.md#streams): the session's connection opens and
 *		closes them, other connections join and send chunks of batches with
 *		tc_client_write as a session's own batches are sent.
 */
#include "tc_client_int.h"

#include <string.h>

#include "tc_frame.h"

static int
client_streams(TcClient *client, bool open, uint64_t chunks, uint64_t rows,
			   uint64_t *session_rows)
{
	Tcopy__Streams request = TCOPY__STREAMS__INIT;
	ProtobufCMessage *msg;

	if (tc_client_wait_acks(client) < 0)
		return -1;
	request.open = open;
	request.chunks = chunks;
	request.rows = rows;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_STREAMS, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_STREAMS_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	if (session_rows != NULL)
		*session_rows = ((Tcopy__StreamsOk *) msg)->rows;
	return 0;
}

int
tc_client_streams_open(TcClient *client)
{
	return client_streams(client, true, 0, 0, NULL);
}

int
tc_client_streams_close(TcClient *client, uint64_t chunks, uint64_t rows,
						uint64_t *session_rows)
{
	return client_streams(client, false, chunks, rows, session_rows);
}

int
tc_client_join(TcClient *client, uint64_t session_id, const uint8_t *key, size_t keylen)
{
	Tcopy__Join request = TCOPY__JOIN__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.session_id = session_id;
	request.session_key.data = (uint8_t *) key;
	request.session_key.len = keylen;
	client->seq_sent = client->seq_acked = 0;
	return client_send_message(client, TCOPY__FRAME_TYPE__FRAME_JOIN, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_JOIN_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0 ? -1 : 0;
}

int
tc_client_chunk(TcClient *client, uint64_t chunk, bool end, bool last)
{
	Tcopy__Chunk request = TCOPY__CHUNK__INIT;

	if (client->broken)
		return -1;
	request.chunk = chunk;
	request.end = end;
	request.last = last;
	if (!end)
		return client_send_message(client, TCOPY__FRAME_TYPE__FRAME_CHUNK, &request.base);
	/* an end takes the next seq, and its ACK is awaited as a batch's */
	if (client_make_room(client) < 0)
		return -1;
	request.seq = client->seq_sent + 1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_CHUNK, &request.base) < 0)
		return -1;
	client->seq_sent = request.seq;
	return 0;
}

int
tc_client_skip_chunks(TcClient *client, uint64_t first, uint64_t through, bool last)
{
	Tcopy__Chunk request = TCOPY__CHUNK__INIT;

	if (client->broken)
		return -1;
	request.chunk = first;
	request.through = through;
	request.last = last;
	return client_send_message(client, TCOPY__FRAME_TYPE__FRAME_CHUNK, &request.base);
}
