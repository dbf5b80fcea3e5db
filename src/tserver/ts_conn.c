/*
 * ts_conn.c
 *		One client connection, run in its own thread: handshake,
 *		authentication and the protocol's state machine.
 *
 * The connection speaks first (SERVER_HELLO with a fresh nonce), expects
 * HELLO, then serves requests one at a time in the order they come.  There
 * are three states: awaiting HELLO, ready, and in a write session; each
 * frame type is allowed in some of them, and anything else (including the
 * types only a server sends) is a protocol error.
 *
 * Nothing a client sends is trusted.  A frame's header is checked against
 * the size limit before a byte of its payload is read, and every payload is
 * unpacked by protobuf-c, whose result is NULL for anything malformed.  The
 * memory a payload unpacks into is bounded too (CONN_DECODE_FACTOR times
 * the frame limit, plus CONN_DECODE_SLACK): protobuf-c allocates a message
 * struct, a pointer and scan state for every repeated element, so a WRITE
 * of empty rows, two bytes each, would otherwise take some 70 times its
 * size.  WRITE, the frame of the hot path, is decoded by ts_batch_decode
 * instead (the same result as protobuf-c, from fewer allocations, blobs
 * left in the frame buffer; see ts_batch_decode.h), within the same budget.
 * Any error ends the connection the same way: an Error frame (best
 * effort), a warning in the log, the open session aborted, the open scan
 * closed, the socket closed.
 *
 * The hot path (WRITE -> ACK) allocates nothing once warmed up: bytes are
 * read into one buffer reused for every frame, with as much read ahead per
 * recv() as the socket has; a payload is unpacked into an arena that is
 * reset after each frame; replies are packed into one reused buffer.
 *
 * The protocol itself (TsConnState, ts_conn_handle_frame) knows no socket:
 * it takes one frame at a time and hands its replies to a send function.
 * ts_conn_main is its socket loop; the fuzzer (test/fuzz/fuzz_frames.c)
 * drives the very same code from a buffer.  Until the handshake is done,
 * frames are limited to CONN_HELLO_MAX bytes, so that a client that has
 * not proven anything cannot make the server reserve a large buffer; with
 * --allow-uid a unix peer running as another user is refused before it is
 * even greeted.
 */
#include "ts_server.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tc_arena.h"
#include "tc_frame_reader.h"
#include "tc_auth.h"
#include "ts_batch_decode.h"
#include "ts_log.h"

#define CONN_ARENA_BLOCK (256 * 1024)	/* holds a typical WriteBatch */
#define CONN_DRAIN_MS 100		/* after an Error frame, see below */
#define CONN_DRAIN_BYTES (1024 * 1024)
#define CONN_LOG_NAME_MAX 64	/* bytes of a client-supplied name in logs */
#define CONN_HELLO_MAX (64 * 1024)	/* largest frame before the handshake */
#define CONN_HANDSHAKE_TIMEOUT_S 10	/* seconds a client has to authenticate */
#define CONN_DECODE_FACTOR 16	/* unpacked bytes per byte of frame limit */
#define CONN_DECODE_SLACK (16 * 1024 * 1024)

static const char *const conn_phase_names[] = {
	"awaiting hello", "ready", "in write session"
};

/* A connection over a socket: the protocol state plus the socket's side. */
typedef struct Conn
{
	TsConnState state;
	TsConn	   *reg;			/* registry entry: id, fd, peer */
	int			fd;
	TcFrameReader reader;		/* bytes received, frames not yet handled */
	bool		clean_eof;		/* the client closed between frames */
	bool		socket_broken;	/* no Error frame can be sent any more */
} Conn;

/*
 * Errors that end a connection are TsErrors.  Those with code ERROR_NONE
 * are not the client's fault nor ours to report to it (the peer hung up,
 * the server is shutting down): they are logged but get no Error frame.
 */
static void
conn_lost(Conn *conn, TsError *err, const char *what, int errnum)
{
	conn->socket_broken = true;
	if (errnum != 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NONE, "%s: %s", what, strerror(errnum));
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NONE, "%s", what);
}

/*
 * Read the next frame with the shared reader, whose header check uses the
 * limit of the connection's phase; a header that fails it is reported in
 * the protocol's words (ts_conn_check_header).  *payload stays valid until
 * the next read.  Returns 0, or -1 with err.
 */
static int
conn_read_frame(Conn *conn, Tcopy__FrameType *type, const uint8_t **payload,
				uint32_t *len, TsError *err)
{
	for (;;)
	{
		const char *why;
		ssize_t		n;

		switch (tc_frame_reader_next(&conn->reader, ts_conn_frame_limit(&conn->state),
									 type, payload, len, &why))
		{
			case TC_FRAME_NEXT_READY:
				atomic_fetch_add(&conn->state.server->bytes_received,
								 TC_FRAME_HEADER_SIZE + (uint64_t) *len);
				return 0;
			case TC_FRAME_NEXT_BAD:
				return ts_conn_check_header(&conn->state, tc_frame_reader_header(&conn->reader),
											type, len, err);
			case TC_FRAME_NEXT_MORE:
				break;
		}

		n = tc_frame_reader_read(&conn->reader, conn->fd);
		if (n > 0)
			continue;
		if (n == 0)
		{
			if (tc_frame_reader_buffered(&conn->reader) == 0)
			{
				conn->clean_eof = true;
				conn_lost(conn, err, "closed by the client", 0);
			}
			else
				conn_lost(conn, err, "the client closed the connection in the middle of a frame", 0);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == ENOMEM)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
						 "out of memory reading a frame of %zu bytes",
						 tc_frame_reader_pending(&conn->reader));
			return -1;
		}
		if ((errno == EAGAIN || errno == EWOULDBLOCK) &&
			conn->state.phase == TS_CONN_AWAIT_HELLO)
		{
			/* the receive timeout set until the handshake is done */
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
						 "no handshake within %d s", CONN_HANDSHAKE_TIMEOUT_S);
			return -1;
		}
		conn_lost(conn, err, "could not receive from the client", errno);
		return -1;
	}
}

/* TsConnSendFn of a socket connection (arg is its Conn). */
static int
conn_send_socket(void *arg, const uint8_t *bytes, size_t len, TsError *err)
{
	Conn	   *conn = arg;
	size_t		sent = 0;

	while (sent < len)
	{
		ssize_t		n = send(conn->fd, bytes + sent, len - sent, MSG_NOSIGNAL);

		if (n >= 0)
		{
			sent += (size_t) n;
			continue;
		}
		if (errno == EINTR)
			continue;
		conn_lost(conn, err, "could not send to the client", errno);
		return -1;
	}
	return 0;
}

uint32_t
ts_conn_frame_limit(const TsConnState *state)
{
	uint32_t	max = state->server->max_frame_bytes;

	if (state->phase == TS_CONN_AWAIT_HELLO && max > CONN_HELLO_MAX)
		max = CONN_HELLO_MAX;
	return max;
}

int
ts_conn_check_header(const TsConnState *state, const uint8_t *header,
					 Tcopy__FrameType *type, uint32_t *len, TsError *err)
{
	uint32_t	max = ts_conn_frame_limit(state);
	const char *why;

	if (!tc_frame_get_header(header, max, type, len, &why))
	{
		uint32_t	claimed = ((uint32_t) header[0] << 24) | ((uint32_t) header[1] << 16) |
			((uint32_t) header[2] << 8) | (uint32_t) header[3];

		if (header[4] > TCOPY__FRAME_TYPE__FRAME_NONE &&
			header[4] <= TCOPY__FRAME_TYPE__FRAME_ERROR && claimed > max)
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
						 "%s frame of %" PRIu32 " bytes exceeds the limit of %" PRIu32 " bytes%s",
						 tc_frame_type_name((Tcopy__FrameType) header[4]), claimed, max,
						 state->phase == TS_CONN_AWAIT_HELLO ? " before the handshake" : "");
		else
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "invalid frame header (type %u, length %" PRIu32 "): %s",
						 (unsigned) header[4], claimed, why);
		return -1;
	}
	return 0;
}

/* Pack msg as a frame of type and send it.  Returns 0, or -1 with err. */
static int
conn_reply(TsConnState *state, Tcopy__FrameType type, const ProtobufCMessage *msg,
		   TsError *err)
{
	int			rc;

	if (!tc_frame_append(&state->out, type, msg))
	{
		state->out.len = 0;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory packing a %s frame", tc_frame_type_name(type));
		return -1;
	}
	rc = state->send(state->send_arg, state->out.data, state->out.len, err);
	state->out.len = 0;
	return rc;
}

/* ProtobufCAllocator of the frame arena that refuses to pass the budget. */
static void *
conn_decode_alloc(void *ctx, size_t size)
{
	TsConnState *state = ctx;

	if (size > state->decode_budget ||
		state->frame_arena.used_bytes > state->decode_budget - size)
	{
		state->decode_over_budget = true;
		return NULL;
	}
	return tc_arena_alloc(&state->frame_arena, size);
}

/* Arena memory is freed by the reset after each frame. */
static void
conn_decode_free(void *ctx, void *ptr)
{
	(void) ctx;
	(void) ptr;
}

/*
 * Unpack a payload into the frame arena; NULL with err when malformed
 * (ERROR_PROTOCOL) or when it would take more than the decode budget
 * (ERROR_TOO_LARGE).
 */
static void *
conn_unpack(TsConnState *state, const ProtobufCMessageDescriptor *descriptor,
			const uint8_t *payload, uint32_t len, TsError *err)
{
	ProtobufCMessage *msg;

	state->decode_over_budget = false;
	msg = protobuf_c_message_unpack(descriptor, &state->decode_allocator, len, payload);
	if (msg != NULL)
		return msg;
	if (state->decode_over_budget)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "a %s message of %" PRIu32 " bytes unpacks into more than %zu bytes of memory",
					 descriptor->short_name, len, state->decode_budget);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "malformed %s message", descriptor->short_name);
	return NULL;
}

/*
 * Decode a WRITE payload into *batch, as conn_unpack would, with
 * ts_batch_decode: its arrays in the frame arena, within the decode budget,
 * its blobs pointing into payload (valid until the next frame is read, and
 * the batch is done with before).  Returns batch, or NULL with err.
 */
static Tcopy__WriteBatch *
conn_decode_write(TsConnState *state, const uint8_t *payload, uint32_t len,
				  Tcopy__WriteBatch *batch, TsError *err)
{
	state->decode_over_budget = false;
	switch (ts_batch_decode(payload, len, &state->decode_allocator, batch))
	{
		case TS_BATCH_DECODE_OK:
			return batch;
		case TS_BATCH_DECODE_MALFORMED:
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "malformed %s message", tcopy__write_batch__descriptor.short_name);
			return NULL;
		case TS_BATCH_DECODE_NO_MEMORY:
			break;
	}
	if (state->decode_over_budget)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "a %s message of %" PRIu32 " bytes unpacks into more than %zu bytes of memory",
					 tcopy__write_batch__descriptor.short_name, len, state->decode_budget);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory decoding a %s message of %" PRIu32 " bytes",
					 tcopy__write_batch__descriptor.short_name, len);
	return NULL;
}

/* A frame that is not allowed now: always a protocol error. */
static int
conn_unexpected(TsConnState *state, Tcopy__FrameType type, const char *why, TsError *err)
{
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "unexpected %s frame in state \"%s\"%s%s",
				 tc_frame_type_name(type), conn_phase_names[state->phase],
				 why ? ": " : "", why ? why : "");
	return -1;
}

/* Copy a client-supplied string for a log line: bounded, printable. */
static void
conn_printable(const char *src, char *dst, size_t dstlen)
{
	size_t		i;

	for (i = 0; src[i] != '\0' && i + 1 < dstlen; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* See ts_server.h for the contracts of the exported functions. */

int
ts_conn_greet(TsConnState *state, TsError *err)
{
	TsServer   *server = state->server;
	Tcopy__ServerHello hello = TCOPY__SERVER_HELLO__INIT;

	if (tc_auth_make_nonce(state->nonce) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not generate a nonce: %s", strerror(errno));
		return -1;
	}
	if (server->token_len > 0 &&
		!tc_auth_compute(server->token, server->token_len, state->nonce,
						 sizeof(state->nonce), state->expected_auth))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not compute the expected authentication code");
		return -1;
	}
	hello.version = TC_PROTOCOL_VERSION;
	hello.server = (char *) "tserver " TS_VERSION;
	hello.nonce.data = state->nonce;
	hello.nonce.len = sizeof(state->nonce);
	hello.auth_required = server->token_len > 0;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO, &hello.base, err);
}

/*
 * HELLO: check the version and, when a token is configured, the client's
 * proof of it; answer READY.
 */
static int
conn_on_hello(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Hello *hello;
	Tcopy__Ready ready = TCOPY__READY__INIT;
	char		client[CONN_LOG_NAME_MAX];

	if (state->phase != TS_CONN_AWAIT_HELLO)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_HELLO, NULL, err);
	hello = conn_unpack(state, &tcopy__hello__descriptor, payload, len, err);
	if (hello == NULL)
		return -1;
	if (hello->version != TC_PROTOCOL_VERSION)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unsupported protocol version %u (this server speaks version %d)",
					 hello->version, TC_PROTOCOL_VERSION);
		return -1;
	}
	if (state->server->token_len > 0 && hello->auth.len == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "authentication failed: the server requires a token and HELLO carries no authentication code");
		return -1;
	}
	/* the code is bound to this connection's nonce: one seen elsewhere fails */
	if (state->server->token_len > 0 &&
		!tc_auth_matches(hello->auth.data, hello->auth.len, state->expected_auth))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "authentication failed: wrong authentication code for this connection");
		return -1;
	}

	conn_printable(hello->client, client, sizeof(client));
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": client \"%s\" ready",
		   state->id, client);
	state->phase = TS_CONN_READY;
	ready.connection_id = state->id;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_READY, &ready.base, err);
}

/* OPEN_TABLE: look up (or create) a table; answer TABLE_INFO. */
static int
conn_on_open_table(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__OpenTable *request;
	Tcopy__TableInfo info = TCOPY__TABLE_INFO__INIT;
	const Tcopy__Schema *schema = NULL;
	uint32_t	table_id = 0;
	bool		created = false;

	if (state->phase == TS_CONN_AWAIT_HELLO)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE, NULL, err);
	request = conn_unpack(state, &tcopy__open_table__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->table == NULL || request->table[0] == '\0')
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "OpenTable names no table");
		return -1;
	}
	if (ts_store_open_table(state->server->store, request->table, request->schema,
							request->create, &table_id, &created, &schema, err) != 0)
		return -1;

	info.table_id = table_id;
	info.schema = (Tcopy__Schema *) schema;
	info.created = created;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_TABLE_INFO, &info.base, err);
}

/* BEGIN: open a write session (one at a time); answer BEGIN_OK. */
static int
conn_on_begin(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__BeginOk reply = TCOPY__BEGIN_OK__INIT;
	uint64_t	session_id = 0;

	if (state->phase != TS_CONN_READY)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_BEGIN,
							   state->phase == TS_CONN_IN_SESSION ?
							   "a write session is already open" : NULL, err);
	if (conn_unpack(state, &tcopy__begin__descriptor, payload, len, err) == NULL)
		return -1;
	state->session = ts_session_begin(state->server->store, &session_id, err);
	if (state->session == NULL)
		return -1;
	state->phase = TS_CONN_IN_SESSION;
	state->last_seq = 0;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session %" PRIu64 " begun",
		   state->id, session_id);
	reply.session_id = session_id;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_BEGIN_OK, &reply.base, err);
}

/*
 * WRITE: stage one batch, whose seq must follow the previous one; answer
 * ACK with the rows staged so far.
 */
static int
conn_on_write(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__WriteBatch decoded;
	Tcopy__WriteBatch *batch;
	Tcopy__Ack	ack = TCOPY__ACK__INIT;

	if (state->phase != TS_CONN_IN_SESSION)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_WRITE,
							   state->phase == TS_CONN_READY ? "no write session is open" : NULL,
							   err);
	batch = conn_decode_write(state, payload, len, &decoded, err);
	if (batch == NULL)
		return -1;
	if (batch->seq != state->last_seq + 1)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch out of order: expected seq %" PRIu64 ", got %" PRIu64,
					 state->last_seq + 1, (uint64_t) batch->seq);
		return -1;
	}
	atomic_fetch_add(&state->server->batches_received, 1);
	if (ts_session_write(state->session, batch, err) != 0)
		return -1;
	state->last_seq = batch->seq;

	ack.seq = batch->seq;
	ack.rows = ts_session_rows(state->session);
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_ACK, &ack.base, err);
}

/*
 * COMMIT: check that the client and we agree on what was sent, publish the
 * session; answer COMMIT_OK.
 */
static int
conn_on_commit(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Commit *commit;
	Tcopy__CommitOk reply = TCOPY__COMMIT_OK__INIT;
	TsSession  *session;
	uint64_t	staged;
	uint64_t	rows = 0;

	if (state->phase != TS_CONN_IN_SESSION)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_COMMIT,
							   state->phase == TS_CONN_READY ? "no write session is open" : NULL,
							   err);
	commit = conn_unpack(state, &tcopy__commit__descriptor, payload, len, err);
	if (commit == NULL)
		return -1;
	/* a prepared session was checked when it was prepared */
	if (ts_session_is_prepared(state->session))
		goto checked;
	if (commit->last_seq != state->last_seq)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "commit names last seq %" PRIu64 ", but the last write batch received was seq %" PRIu64,
					 (uint64_t) commit->last_seq, state->last_seq);
		return -1;
	}
	staged = ts_session_rows(state->session);
	if (commit->rows != staged)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "commit names %" PRIu64 " rows, but the session received %" PRIu64,
					 (uint64_t) commit->rows, staged);
		return -1;
	}

checked:
	if (commit->prepare)
	{
		/* the slow part only: the session stays, and takes only COMMIT or ABORT */
		if (ts_session_prepare(state->session, err) != 0)
			return -1;
		reply.rows = ts_session_rows(state->session);
		reply.prepared = true;
		return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK, &reply.base, err);
	}

	/* commit frees the session, also when it fails */
	session = state->session;
	state->session = NULL;
	state->phase = TS_CONN_READY;
	if (ts_session_commit(session, &rows, err) != 0)
		return -1;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session committed, %" PRIu64 " rows",
		   state->id, rows);
	reply.rows = rows;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK, &reply.base, err);
}

/* ABORT: discard the session; answer ABORT_OK. */
static int
conn_on_abort(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__AbortOk reply = TCOPY__ABORT_OK__INIT;

	if (state->phase != TS_CONN_IN_SESSION)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_ABORT,
							   state->phase == TS_CONN_READY ? "no write session is open" : NULL,
							   err);
	if (conn_unpack(state, &tcopy__abort__descriptor, payload, len, err) == NULL)
		return -1;
	ts_session_abort(state->session);
	state->session = NULL;
	state->phase = TS_CONN_READY;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session aborted by the client",
		   state->id);
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_ABORT_OK, &reply.base, err);
}

/*
 * Stream a scan to the end.  The request stays in the frame arena until
 * the scan is closed; each batch's rows live in the scan arena, reset
 * before the next one.
 */
static int
conn_on_scan(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Scan *request;
	bool		done = false;

	if (state->phase == TS_CONN_AWAIT_HELLO)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_SCAN, NULL, err);
	request = conn_unpack(state, &tcopy__scan__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	state->scan = ts_scan_open(state->server->store, request, err);
	if (state->scan == NULL)
		return -1;
	while (!done)
	{
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;

		tc_arena_reset(&state->scan_arena);
		if (ts_scan_next(state->scan, &state->scan_arena, &batch, err) != 0)
			return -1;
		done = batch.done;
		if (conn_reply(state, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH, &batch.base, err) != 0)
			return -1;
	}
	ts_scan_close(state->scan);
	state->scan = NULL;
	tc_arena_reset(&state->scan_arena);
	return 0;
}

/* TABLE_OP: truncate or drop a table, outside any session; answer TABLE_OP_OK. */
static int
conn_on_table_op(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__TableOp *request;
	Tcopy__TableOpOk reply = TCOPY__TABLE_OP_OK__INIT;

	if (state->phase != TS_CONN_READY)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_TABLE_OP,
							   state->phase == TS_CONN_IN_SESSION ?
							   "not allowed while a write session is open" : NULL, err);
	request = conn_unpack(state, &tcopy__table_op__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE &&
		request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unknown table operation %d", (int) request->op);
		return -1;
	}
	if (ts_store_table_op(state->server->store, request->op, request->table_id, err) != 0)
		return -1;
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK, &reply.base, err);
}

/* STATS_REQUEST: answer STATS. */
static int
conn_on_stats_request(TsConnState *state, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	if (state->phase == TS_CONN_AWAIT_HELLO)
		return conn_unexpected(state, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, NULL, err);
	if (conn_unpack(state, &tcopy__stats_request__descriptor, payload, len, err) == NULL)
		return -1;
	ts_server_fill_stats(state->server, &stats);
	return conn_reply(state, TCOPY__FRAME_TYPE__FRAME_STATS, &stats.base, err);
}

/* Act on one frame.  Returns 0, or -1 with err (the connection ends). */
static int
conn_dispatch(TsConnState *state, Tcopy__FrameType type, const uint8_t *payload,
			  uint32_t len, TsError *err)
{
	/* before the handshake, nothing but HELLO is even looked at */
	if (state->phase == TS_CONN_AWAIT_HELLO && type != TCOPY__FRAME_TYPE__FRAME_HELLO)
		return conn_unexpected(state, type, "the client must send HELLO first", err);

	switch (type)
	{
		case TCOPY__FRAME_TYPE__FRAME_HELLO:
			return conn_on_hello(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE:
			return conn_on_open_table(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_BEGIN:
			return conn_on_begin(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_WRITE:
			return conn_on_write(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_COMMIT:
			return conn_on_commit(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_ABORT:
			return conn_on_abort(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_SCAN:
			return conn_on_scan(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_TABLE_OP:
			return conn_on_table_op(state, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST:
			return conn_on_stats_request(state, payload, len, err);
		default:
			break;
	}
	return conn_unexpected(state, type, "only a server sends it", err);
}

int
ts_conn_handle_frame(TsConnState *state, Tcopy__FrameType type,
					 const uint8_t *payload, uint32_t len, TsError *err)
{
	int			rc = conn_dispatch(state, type, payload, len, err);

	tc_arena_reset(&state->frame_arena);
	return rc;
}

void
ts_conn_state_init(TsConnState *state, TsServer *server, uint64_t id,
				   TsConnSendFn send, void *send_arg)
{
	memset(state, 0, sizeof(*state));
	state->server = server;
	state->id = id;
	state->phase = TS_CONN_AWAIT_HELLO;
	state->send = send;
	state->send_arg = send_arg;
	tc_arena_init(&state->frame_arena, CONN_ARENA_BLOCK);
	tc_arena_init(&state->scan_arena, CONN_ARENA_BLOCK);
	state->decode_allocator.alloc = conn_decode_alloc;
	state->decode_allocator.free = conn_decode_free;
	state->decode_allocator.allocator_data = state;
	state->decode_budget = (size_t) server->max_frame_bytes * CONN_DECODE_FACTOR +
		CONN_DECODE_SLACK;
}

void
ts_conn_state_release(TsConnState *state)
{
	if (state->scan != NULL)
	{
		ts_scan_close(state->scan);
		state->scan = NULL;
	}
	if (state->session != NULL)
	{
		ts_session_abort(state->session);
		state->session = NULL;
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " closed with an open session: aborted",
			   state->id);
	}
	state->phase = TS_CONN_AWAIT_HELLO;
	tc_buf_free(&state->out);
	tc_arena_free(&state->frame_arena);
	tc_arena_free(&state->scan_arena);
	tc_auth_forget(state->expected_auth, sizeof(state->expected_auth));
}

/*
 * Send err as an Error frame, as far as the socket allows, then give the
 * client a moment to read it: closing a TCP socket with unread input makes
 * the kernel reset the connection, which can destroy the Error frame in
 * flight.  So stop sending, and discard input for a short, bounded while.
 */
static void
conn_send_error(Conn *conn, const TsError *err)
{
	Tcopy__Error error = TCOPY__ERROR__INIT;
	TcBuf		frame = {0};
	TsError		ignored;
	struct timespec start;
	size_t		drained = 0;
	int			rc;

	if (conn->socket_broken || atomic_load(&conn->state.server->shutdown_requested))
		return;
	error.code = err->code;
	error.message = (char *) err->message;
	if (!tc_frame_append(&frame, TCOPY__FRAME_TYPE__FRAME_ERROR, &error.base))
	{
		tc_buf_free(&frame);
		return;
	}
	rc = conn_send_socket(conn, frame.data, frame.len, &ignored);
	tc_buf_free(&frame);
	if (rc != 0 || shutdown(conn->fd, SHUT_WR) != 0)
		return;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (drained < CONN_DRAIN_BYTES)
	{
		struct pollfd pfd = {.fd = conn->fd,.events = POLLIN};
		struct timespec now;
		long		elapsed_ms;
		char		scratch[16384];
		ssize_t		n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 +
			(now.tv_nsec - start.tv_nsec) / 1000000;
		if (elapsed_ms >= CONN_DRAIN_MS)
			break;
		n = poll(&pfd, 1, (int) (CONN_DRAIN_MS - elapsed_ms));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		n = recv(conn->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		drained += (size_t) n;
	}
}

/*
 * End the connection after err: report it, abort what is open, free
 * everything.  The socket itself is closed by ts_server_conn_exit.
 */
static void
conn_finish(Conn *conn, const TsError *err)
{
	uint64_t	id = conn->reg->id;

	if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		ts_log(TS_LOG_WARNING, "connection %" PRIu64 " from %s: %s",
			   id, conn->reg->peer, err->message);
	else if (atomic_load(&conn->state.server->shutdown_requested))
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by server shutdown", id);
	else if (conn->clean_eof)
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by the client", id);
	else
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " from %s lost: %s",
			   id, conn->reg->peer, err->message);

	/* abort first, so that the session is gone when the client sees why */
	ts_conn_state_release(&conn->state);
	if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		conn_send_error(conn, err);
	tc_frame_reader_free(&conn->reader);
}

/*
 * With --allow-uid, a unix socket peer must run as one of the allowed
 * uids (SO_PEERCRED, read at accept); one that cannot be identified is
 * refused too.  TCP peers have no uid: the token is their check (ts_main
 * refuses --allow-uid with a tcp listener and no token).
 */
static int
conn_check_peer(const Conn *conn, TsError *err)
{
	const TsServer *server = conn->state.server;

	if (server->nallowed_uids == 0 || !conn->reg->is_unix)
		return 0;
	if (!conn->reg->peer_uid_known)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the peer's uid could not be read, and only listed uids may connect");
		return -1;
	}
	for (size_t i = 0; i < server->nallowed_uids; i++)
	{
		if (server->allowed_uids[i] == conn->reg->peer_uid)
			return 0;
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
				 "uid %u is not allowed to connect", (unsigned) conn->reg->peer_uid);
	return -1;
}

/*
 * Thread body: check the peer, greet, serve frames until an error or the
 * end of the connection, clean up, and hand the registry entry back for
 * joining.
 */
void *
ts_conn_main(void *arg)
{
	TsConn	   *reg = arg;
	Conn		conn;
	TsError		err;

	memset(&conn, 0, sizeof(conn));
	conn.reg = reg;
	conn.fd = reg->fd;
	ts_conn_state_init(&conn.state, reg->server, reg->id, conn_send_socket, &conn);
	memset(&err, 0, sizeof(err));

	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " from %s opened", reg->id, reg->peer);

	if (conn_check_peer(&conn, &err) == 0 && ts_conn_greet(&conn.state, &err) == 0)
	{
		/*
		 * Until the handshake is done, reads time out: a client that never
		 * authenticates must not hold a thread forever.
		 */
		struct timeval handshake_timeout = {CONN_HANDSHAKE_TIMEOUT_S, 0};
		bool		timeout_set =
			setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &handshake_timeout,
					   sizeof(handshake_timeout)) == 0;

		for (;;)
		{
			Tcopy__FrameType type;
			const uint8_t *payload;
			uint32_t	len;

			if (timeout_set && conn.state.phase != TS_CONN_AWAIT_HELLO)
			{
				struct timeval none = {0, 0};

				setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
				timeout_set = false;
			}
			if (conn_read_frame(&conn, &type, &payload, &len, &err) != 0)
				break;
			if (ts_conn_handle_frame(&conn.state, type, payload, len, &err) != 0)
			{
				/* a failure the store left without a code is still one */
				if (err.code == TCOPY__ERROR_CODE__ERROR_NONE && !conn.socket_broken)
				{
					err.code = TCOPY__ERROR_CODE__ERROR_INTERNAL;
					if (err.message[0] == '\0')
						strcpy(err.message, "internal error");
				}
				break;
			}
		}
	}

	conn_finish(&conn, &err);
	ts_server_conn_exit(reg);
	return NULL;
}
