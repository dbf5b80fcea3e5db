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
 * unpacked by protobuf-c, whose result is NULL for anything malformed.  Any
 * error ends the connection the same way: an Error frame (best effort), a
 * warning in the log, the open session aborted, the open scan closed, the
 * socket closed.
 *
 * The hot path (WRITE -> ACK) allocates nothing once warmed up: bytes are
 * read into one buffer reused for every frame, with as much read ahead per
 * recv() as the socket has; a payload is unpacked into an arena that is
 * reset after each frame; replies are packed into one reused buffer.
 */
#include "ts_server.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "tc_arena.h"
#include "ts_log.h"

#define CONN_ARENA_BLOCK (256 * 1024)	/* holds a typical WriteBatch */
#define CONN_READ_AHEAD (64 * 1024) /* room offered to each recv() at least */
#define CONN_DRAIN_MS 100		/* after an Error frame, see below */
#define CONN_DRAIN_BYTES (1024 * 1024)
#define CONN_LOG_NAME_MAX 64	/* bytes of a client-supplied name in logs */

typedef enum ConnState
{
	CONN_AWAIT_HELLO,			/* SERVER_HELLO sent */
	CONN_READY,					/* handshake done, no write session */
	CONN_IN_SESSION				/* a write session is open */
} ConnState;

static const char *const conn_state_names[] = {
	"awaiting hello", "ready", "in write session"
};

typedef struct Conn
{
	TsConn	   *reg;			/* registry entry: id, fd, peer */
	TsServer   *server;
	int			fd;
	ConnState	state;
	TsSession  *session;		/* open in CONN_IN_SESSION only */
	uint64_t	last_seq;		/* the session's last WriteBatch; 0: none */
	TsScan	   *scan;			/* open while a scan is streamed */
	uint8_t		nonce[TC_NONCE_SIZE];
	uint8_t		expected_auth[TC_AUTH_SIZE];	/* HMAC(token, nonce) */
	TcBuf		in;				/* bytes received; unparsed from in_pos */
	size_t		in_pos;
	TcBuf		out;			/* replies packed, not yet sent */
	TcArena		frame_arena;	/* the current frame's message; reset per frame */
	TcArena		scan_arena;		/* the current ScanBatch's rows */
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
 * Make at least need bytes available at in.data + in_pos, offering each
 * recv() all the free room of the buffer (at least CONN_READ_AHEAD) so that
 * small frames arrive many to a syscall.  at_boundary says that nothing of
 * the next frame has been consumed, so an EOF there is a clean close.
 * Returns 0, or -1 with err.
 */
static int
conn_fill(Conn *conn, size_t need, bool at_boundary, TsError *err)
{
	size_t		have = conn->in.len - conn->in_pos;
	size_t		want;

	if (have >= need)
		return 0;

	/* keep the frame contiguous: slide the unread tail to the front */
	if (have == 0)
		conn->in.len = conn->in_pos = 0;
	else if (conn->in_pos > 0 &&
			 conn->in.cap - conn->in_pos < need + CONN_READ_AHEAD)
	{
		memmove(conn->in.data, conn->in.data + conn->in_pos, have);
		conn->in.len = have;
		conn->in_pos = 0;
	}
	want = conn->in_pos + need + CONN_READ_AHEAD;
	if (want > conn->in.cap && !tc_buf_reserve(&conn->in, want - conn->in.len))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory reading a frame of %zu bytes", need);
		return -1;
	}

	while (conn->in.len - conn->in_pos < need)
	{
		ssize_t		n = recv(conn->fd, conn->in.data + conn->in.len,
							 conn->in.cap - conn->in.len, 0);

		if (n > 0)
		{
			conn->in.len += (size_t) n;
			continue;
		}
		if (n == 0)
		{
			if (at_boundary && conn->in.len == conn->in_pos)
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
		conn_lost(conn, err, "could not receive from the client", errno);
		return -1;
	}
	return 0;
}

/*
 * Read the next frame.  The header is checked against the size limit
 * before any of the payload is waited for.  *payload stays valid until the
 * next read.  Returns 0, or -1 with err.
 */
static int
conn_read_frame(Conn *conn, Tcopy__FrameType *type, const uint8_t **payload,
				uint32_t *len, TsError *err)
{
	uint32_t	max = conn->server->max_frame_bytes;
	const uint8_t *header;
	const char *why;

	if (conn_fill(conn, TC_FRAME_HEADER_SIZE, true, err) != 0)
		return -1;
	header = conn->in.data + conn->in_pos;
	if (!tc_frame_get_header(header, max, type, len, &why))
	{
		uint32_t	claimed = ((uint32_t) header[0] << 24) | ((uint32_t) header[1] << 16) |
			((uint32_t) header[2] << 8) | (uint32_t) header[3];

		if (header[4] > TCOPY__FRAME_TYPE__FRAME_NONE &&
			header[4] <= TCOPY__FRAME_TYPE__FRAME_ERROR && claimed > max)
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
						 "%s frame of %" PRIu32 " bytes exceeds the limit of %" PRIu32 " bytes",
						 tc_frame_type_name((Tcopy__FrameType) header[4]), claimed, max);
		else
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "invalid frame header (type %u, length %" PRIu32 "): %s",
						 (unsigned) header[4], claimed, why);
		return -1;
	}
	if (conn_fill(conn, TC_FRAME_HEADER_SIZE + (size_t) *len, false, err) != 0)
		return -1;
	*payload = conn->in.data + conn->in_pos + TC_FRAME_HEADER_SIZE;
	conn->in_pos += TC_FRAME_HEADER_SIZE + (size_t) *len;
	atomic_fetch_add(&conn->server->bytes_received,
					 TC_FRAME_HEADER_SIZE + (uint64_t) *len);
	return 0;
}

/* Send everything in conn->out, then empty it.  Returns 0, or -1 with err. */
static int
conn_flush(Conn *conn, TsError *err)
{
	size_t		sent = 0;

	while (sent < conn->out.len)
	{
		ssize_t		n = send(conn->fd, conn->out.data + sent, conn->out.len - sent,
							 MSG_NOSIGNAL);

		if (n >= 0)
		{
			sent += (size_t) n;
			continue;
		}
		if (errno == EINTR)
			continue;
		conn->out.len = 0;
		conn_lost(conn, err, "could not send to the client", errno);
		return -1;
	}
	conn->out.len = 0;
	return 0;
}

/* Pack msg as a frame of type and send it.  Returns 0, or -1 with err. */
static int
conn_reply(Conn *conn, Tcopy__FrameType type, const ProtobufCMessage *msg,
		   TsError *err)
{
	if (!tc_frame_append(&conn->out, type, msg))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory packing a %s frame", tc_frame_type_name(type));
		return -1;
	}
	return conn_flush(conn, err);
}

/* Unpack a payload into the frame arena; NULL with err when malformed. */
static void *
conn_unpack(Conn *conn, const ProtobufCMessageDescriptor *descriptor,
			const uint8_t *payload, uint32_t len, TsError *err)
{
	ProtobufCMessage *msg;

	msg = protobuf_c_message_unpack(descriptor, tc_arena_allocator(&conn->frame_arena),
									len, payload);
	if (msg == NULL)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "malformed %s message", descriptor->short_name);
	return msg;
}

/* A frame that is not allowed now: always a protocol error. */
static int
conn_unexpected(Conn *conn, Tcopy__FrameType type, const char *why, TsError *err)
{
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "unexpected %s frame in state \"%s\"%s%s",
				 tc_frame_type_name(type), conn_state_names[conn->state],
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

/* Fill buf with len bytes from the kernel's random source. */
static int
conn_random(uint8_t *buf, size_t len)
{
	size_t		got = 0;

	while (got < len)
	{
		ssize_t		n = getrandom(buf + got, len - got, 0);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t) n;
	}
	return 0;
}

/* Send SERVER_HELLO with a fresh nonce.  Returns 0, or -1 with err. */
static int
conn_send_server_hello(Conn *conn, TsError *err)
{
	TsServer   *server = conn->server;
	Tcopy__ServerHello hello = TCOPY__SERVER_HELLO__INIT;

	if (conn_random(conn->nonce, sizeof(conn->nonce)) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not generate a nonce: %s", strerror(errno));
		return -1;
	}
	if (server->token_len > 0)
	{
		unsigned int mdlen = 0;

		if (HMAC(EVP_sha256(), server->token, (int) server->token_len,
				 conn->nonce, sizeof(conn->nonce), conn->expected_auth, &mdlen) == NULL ||
			mdlen != TC_AUTH_SIZE)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
						 "could not compute the expected authentication code");
			return -1;
		}
	}
	hello.version = TC_PROTOCOL_VERSION;
	hello.server = (char *) "tserver " TS_VERSION;
	hello.nonce.data = conn->nonce;
	hello.nonce.len = sizeof(conn->nonce);
	hello.auth_required = server->token_len > 0;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO, &hello.base, err);
}

/*
 * HELLO: check the version and, when a token is configured, the client's
 * proof of it; answer READY.
 */
static int
conn_on_hello(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Hello *hello;
	Tcopy__Ready ready = TCOPY__READY__INIT;
	char		client[CONN_LOG_NAME_MAX];

	if (conn->state != CONN_AWAIT_HELLO)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_HELLO, NULL, err);
	hello = conn_unpack(conn, &tcopy__hello__descriptor, payload, len, err);
	if (hello == NULL)
		return -1;
	if (hello->version != TC_PROTOCOL_VERSION)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unsupported protocol version %u (this server speaks version %d)",
					 hello->version, TC_PROTOCOL_VERSION);
		return -1;
	}
	if (conn->server->token_len > 0 &&
		(hello->auth.len != TC_AUTH_SIZE ||
		 CRYPTO_memcmp(hello->auth.data, conn->expected_auth, TC_AUTH_SIZE) != 0))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH, "authentication failed");
		return -1;
	}

	conn_printable(hello->client, client, sizeof(client));
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": client \"%s\" ready",
		   conn->reg->id, client);
	conn->state = CONN_READY;
	ready.connection_id = conn->reg->id;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_READY, &ready.base, err);
}

/* OPEN_TABLE: look up (or create) a table; answer TABLE_INFO. */
static int
conn_on_open_table(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__OpenTable *request;
	Tcopy__TableInfo info = TCOPY__TABLE_INFO__INIT;
	const Tcopy__Schema *schema = NULL;
	uint32_t	table_id = 0;
	bool		created = false;

	if (conn->state == CONN_AWAIT_HELLO)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE, NULL, err);
	request = conn_unpack(conn, &tcopy__open_table__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->table == NULL || request->table[0] == '\0')
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "OpenTable names no table");
		return -1;
	}
	if (ts_store_open_table(conn->server->store, request->table, request->schema,
							request->create, &table_id, &created, &schema, err) != 0)
		return -1;

	info.table_id = table_id;
	info.schema = (Tcopy__Schema *) schema;
	info.created = created;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_TABLE_INFO, &info.base, err);
}

/* BEGIN: open a write session (one at a time); answer BEGIN_OK. */
static int
conn_on_begin(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__BeginOk reply = TCOPY__BEGIN_OK__INIT;
	uint64_t	session_id = 0;

	if (conn->state != CONN_READY)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_BEGIN,
							   conn->state == CONN_IN_SESSION ?
							   "a write session is already open" : NULL, err);
	if (conn_unpack(conn, &tcopy__begin__descriptor, payload, len, err) == NULL)
		return -1;
	conn->session = ts_session_begin(conn->server->store, &session_id, err);
	if (conn->session == NULL)
		return -1;
	conn->state = CONN_IN_SESSION;
	conn->last_seq = 0;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session %" PRIu64 " begun",
		   conn->reg->id, session_id);
	reply.session_id = session_id;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_BEGIN_OK, &reply.base, err);
}

/*
 * WRITE: stage one batch, whose seq must follow the previous one; answer
 * ACK with the rows staged so far.
 */
static int
conn_on_write(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__WriteBatch *batch;
	Tcopy__Ack	ack = TCOPY__ACK__INIT;

	if (conn->state != CONN_IN_SESSION)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_WRITE,
							   conn->state == CONN_READY ? "no write session is open" : NULL,
							   err);
	batch = conn_unpack(conn, &tcopy__write_batch__descriptor, payload, len, err);
	if (batch == NULL)
		return -1;
	if (batch->seq != conn->last_seq + 1)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch out of order: expected seq %" PRIu64 ", got %" PRIu64,
					 conn->last_seq + 1, (uint64_t) batch->seq);
		return -1;
	}
	atomic_fetch_add(&conn->server->batches_received, 1);
	if (ts_session_write(conn->session, batch, err) != 0)
		return -1;
	conn->last_seq = batch->seq;

	ack.seq = batch->seq;
	ack.rows = ts_session_rows(conn->session);
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_ACK, &ack.base, err);
}

/*
 * COMMIT: check that the client and we agree on what was sent, publish the
 * session; answer COMMIT_OK.
 */
static int
conn_on_commit(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Commit *commit;
	Tcopy__CommitOk reply = TCOPY__COMMIT_OK__INIT;
	TsSession  *session;
	uint64_t	staged;
	uint64_t	rows = 0;

	if (conn->state != CONN_IN_SESSION)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_COMMIT,
							   conn->state == CONN_READY ? "no write session is open" : NULL,
							   err);
	commit = conn_unpack(conn, &tcopy__commit__descriptor, payload, len, err);
	if (commit == NULL)
		return -1;
	if (commit->last_seq != conn->last_seq)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "commit names last seq %" PRIu64 ", but the last write batch received was seq %" PRIu64,
					 (uint64_t) commit->last_seq, conn->last_seq);
		return -1;
	}
	staged = ts_session_rows(conn->session);
	if (commit->rows != staged)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "commit names %" PRIu64 " rows, but the session received %" PRIu64,
					 (uint64_t) commit->rows, staged);
		return -1;
	}

	/* commit frees the session, also when it fails */
	session = conn->session;
	conn->session = NULL;
	conn->state = CONN_READY;
	if (ts_session_commit(session, &rows, err) != 0)
		return -1;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session committed, %" PRIu64 " rows",
		   conn->reg->id, rows);
	reply.rows = rows;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK, &reply.base, err);
}

/* ABORT: discard the session; answer ABORT_OK. */
static int
conn_on_abort(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__AbortOk reply = TCOPY__ABORT_OK__INIT;

	if (conn->state != CONN_IN_SESSION)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_ABORT,
							   conn->state == CONN_READY ? "no write session is open" : NULL,
							   err);
	if (conn_unpack(conn, &tcopy__abort__descriptor, payload, len, err) == NULL)
		return -1;
	ts_session_abort(conn->session);
	conn->session = NULL;
	conn->state = CONN_READY;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session aborted by the client",
		   conn->reg->id);
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_ABORT_OK, &reply.base, err);
}

/*
 * Stream a scan to the end.  The request stays in the frame arena until
 * the scan is closed; each batch's rows live in the scan arena, reset
 * before the next one.
 */
static int
conn_on_scan(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Scan *request;
	bool		done = false;

	if (conn->state == CONN_AWAIT_HELLO)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_SCAN, NULL, err);
	request = conn_unpack(conn, &tcopy__scan__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	conn->scan = ts_scan_open(conn->server->store, request, err);
	if (conn->scan == NULL)
		return -1;
	while (!done)
	{
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;

		tc_arena_reset(&conn->scan_arena);
		if (ts_scan_next(conn->scan, &conn->scan_arena, &batch, err) != 0)
			return -1;
		done = batch.done;
		if (conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH, &batch.base, err) != 0)
			return -1;
	}
	ts_scan_close(conn->scan);
	conn->scan = NULL;
	tc_arena_reset(&conn->scan_arena);
	return 0;
}

/* TABLE_OP: truncate or drop a table, outside any session; answer TABLE_OP_OK. */
static int
conn_on_table_op(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__TableOp *request;
	Tcopy__TableOpOk reply = TCOPY__TABLE_OP_OK__INIT;

	if (conn->state != CONN_READY)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_TABLE_OP,
							   conn->state == CONN_IN_SESSION ?
							   "not allowed while a write session is open" : NULL, err);
	request = conn_unpack(conn, &tcopy__table_op__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE &&
		request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unknown table operation %d", (int) request->op);
		return -1;
	}
	if (ts_store_table_op(conn->server->store, request->op, request->table_id, err) != 0)
		return -1;
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK, &reply.base, err);
}

/* STATS_REQUEST: answer STATS. */
static int
conn_on_stats_request(Conn *conn, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	if (conn->state == CONN_AWAIT_HELLO)
		return conn_unexpected(conn, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, NULL, err);
	if (conn_unpack(conn, &tcopy__stats_request__descriptor, payload, len, err) == NULL)
		return -1;
	ts_server_fill_stats(conn->server, &stats);
	return conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_STATS, &stats.base, err);
}

/* Act on one frame.  Returns 0, or -1 with err (the connection ends). */
static int
conn_handle_frame(Conn *conn, Tcopy__FrameType type, const uint8_t *payload,
				  uint32_t len, TsError *err)
{
	/* before the handshake, nothing but HELLO is even looked at */
	if (conn->state == CONN_AWAIT_HELLO && type != TCOPY__FRAME_TYPE__FRAME_HELLO)
		return conn_unexpected(conn, type, "the client must send HELLO first", err);

	switch (type)
	{
		case TCOPY__FRAME_TYPE__FRAME_HELLO:
			return conn_on_hello(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE:
			return conn_on_open_table(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_BEGIN:
			return conn_on_begin(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_WRITE:
			return conn_on_write(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_COMMIT:
			return conn_on_commit(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_ABORT:
			return conn_on_abort(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_SCAN:
			return conn_on_scan(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_TABLE_OP:
			return conn_on_table_op(conn, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST:
			return conn_on_stats_request(conn, payload, len, err);
		default:
			break;
	}
	return conn_unexpected(conn, type, "only a server sends it", err);
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
	TsError		ignored;
	struct timespec start;
	size_t		drained = 0;

	if (conn->socket_broken || atomic_load(&conn->server->shutdown_requested))
		return;
	conn->out.len = 0;
	error.code = err->code;
	error.message = (char *) err->message;
	if (conn_reply(conn, TCOPY__FRAME_TYPE__FRAME_ERROR, &error.base, &ignored) != 0)
		return;
	if (shutdown(conn->fd, SHUT_WR) != 0)
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
	bool		had_session = conn->session != NULL;

	if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		ts_log(TS_LOG_WARNING, "connection %" PRIu64 " from %s: %s",
			   id, conn->reg->peer, err->message);
	else if (atomic_load(&conn->server->shutdown_requested))
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by server shutdown", id);
	else if (conn->clean_eof)
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by the client", id);
	else
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " from %s lost: %s",
			   id, conn->reg->peer, err->message);

	/* abort first, so that the session is gone when the client sees why */
	if (conn->scan != NULL)
	{
		ts_scan_close(conn->scan);
		conn->scan = NULL;
	}
	if (conn->session != NULL)
	{
		ts_session_abort(conn->session);
		conn->session = NULL;
	}
	if (had_session)
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " closed with an open session: aborted", id);

	if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		conn_send_error(conn, err);

	tc_buf_free(&conn->in);
	tc_buf_free(&conn->out);
	tc_arena_free(&conn->frame_arena);
	tc_arena_free(&conn->scan_arena);
	OPENSSL_cleanse(conn->expected_auth, sizeof(conn->expected_auth));
}

/*
 * Thread body: greet, serve frames until an error or the end of the
 * connection, clean up, and hand the registry entry back for joining.
 */
void *
ts_conn_main(void *arg)
{
	TsConn	   *reg = arg;
	Conn		conn;
	TsError		err;

	memset(&conn, 0, sizeof(conn));
	conn.reg = reg;
	conn.server = reg->server;
	conn.fd = reg->fd;
	conn.state = CONN_AWAIT_HELLO;
	tc_arena_init(&conn.frame_arena, CONN_ARENA_BLOCK);
	tc_arena_init(&conn.scan_arena, CONN_ARENA_BLOCK);
	memset(&err, 0, sizeof(err));

	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " from %s opened", reg->id, reg->peer);

	if (conn_send_server_hello(&conn, &err) == 0)
	{
		for (;;)
		{
			Tcopy__FrameType type;
			const uint8_t *payload;
			uint32_t	len;
			int			rc;

			if (conn_read_frame(&conn, &type, &payload, &len, &err) != 0)
				break;
			rc = conn_handle_frame(&conn, type, payload, len, &err);
			tc_arena_reset(&conn.frame_arena);
			if (rc != 0)
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
