/*
 * tc_client.c
 *		Client side of the tserver's wire protocol.
 *
 * One connection, used by one thread at a time.  What the server sends is
 * read by the frame reader the tserver uses too (tc_frame_reader.h): one
 * buffer that keeps its capacity, each header checked against max_frame
 * before its payload is waited for, so that a server cannot make the
 * client buffer more than that.  Replies are
 * unpacked into an arena reset before the next reply is read, which is why
 * a scan batch lives until the next call and why reading acks allocates
 * nothing once the arena has warmed up.  Heap copies are made only where
 * the header promises them (stats, the schema of an opened table).
 *
 * Writes are pipelined.  tc_client_write first collects the acks that have
 * already arrived, without waiting, then waits for the oldest ack only
 * while `window` batches are unacknowledged.  The server acknowledges
 * batches in order, so every ack must carry the next sequence number.
 *
 * The socket is non-blocking and every wait goes through the wait hook, so
 * that the extension can wait on its latch instead.  Sends use MSG_NOSIGNAL:
 * a server that hangs up makes the call fail instead of raising SIGPIPE in
 * the caller's process, and when it hung up after an Error frame, the call
 * reports that frame's message.
 */
#include "tc_client.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tc_arena.h"
#include "tc_auth.h"
#include "tc_frame.h"
#include "tc_frame_reader.h"
#include "tc_net.h"

#define TC_CLIENT_ARENA_BLOCK (64 * 1024)

struct TcClient
{
	int			fd;
	char	   *server_name;	/* ServerHello.server, malloc'ed */
	TcWaitHook	wait_hook;
	void	   *wait_arg;
	unsigned	window;			/* batches in flight before a write waits */
	uint32_t	max_frame;		/* largest payload accepted, in bytes */
	TcFrameReader reader;		/* bytes received, frames not yet returned */
	TcBuf		out;			/* the outgoing frame being packed, reused */
	TcArena		arena;			/* the last reply, unpacked */
	uint64_t	seq_sent;		/* last batch sent in this session */
	uint64_t	seq_acked;		/* last batch acknowledged */
	bool		prepared;		/* the session was prepared: only commit or abort */
	bool		scanning;		/* a scan's batches are still to come */
	bool		broken;			/* a call failed: every later call fails */
	bool		hook_set_error; /* the wait hook called tc_client_set_error */
	struct addrinfo *addrs;		/* while connecting over TCP: freed by close
								 * too, should the wait hook not return */
	Tcopy__ErrorCode error_code;	/* of the server's Error frame, if any */
	char		error[512];
};

/* What each frame type carries, for unpacking replies. */
static const ProtobufCMessageDescriptor *const frame_descriptors[] = {
	[TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO] = &tcopy__server_hello__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_HELLO] = &tcopy__hello__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_READY] = &tcopy__ready__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE] = &tcopy__open_table__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_TABLE_INFO] = &tcopy__table_info__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_BEGIN] = &tcopy__begin__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_BEGIN_OK] = &tcopy__begin_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_WRITE] = &tcopy__write_batch__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ACK] = &tcopy__ack__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_COMMIT] = &tcopy__commit__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_COMMIT_OK] = &tcopy__commit_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ABORT] = &tcopy__abort__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ABORT_OK] = &tcopy__abort_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_SCAN] = &tcopy__scan__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH] = &tcopy__scan_batch__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_TABLE_OP] = &tcopy__table_op__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK] = &tcopy__table_op_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST] = &tcopy__stats_request__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_STATS] = &tcopy__stats__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ERROR] = &tcopy__error__descriptor,
};

/* Record why the call fails and mark the client broken; returns -1. */
static int	client_fail(TcClient *client, Tcopy__ErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
client_fail(TcClient *client, Tcopy__ErrorCode code, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(client->error, sizeof(client->error), fmt, args);
	va_end(args);
	client->error_code = code;
	client->broken = true;
	return -1;
}

/* The default wait hook: poll without a timeout. */
static int
client_poll(void *arg, TcClient *client, int fd, bool want_write)
{
	struct pollfd pfd;

	pfd.fd = fd;
	pfd.events = want_write ? POLLOUT : POLLIN;
	pfd.revents = 0;
	while (poll(&pfd, 1, -1) < 0)
	{
		if (errno != EINTR)
		{
			tc_client_set_error(client, "could not wait for tserver: %s",
								strerror(errno));
			return -1;
		}
	}
	/* on POLLHUP or POLLERR the next read or write reports what happened */
	return 0;
}

/* Wait through the hook until the socket is ready; -1 when it gives up. */
static int
client_wait(TcClient *client, bool want_write)
{
	client->hook_set_error = false;
	if (client->wait_hook(client->wait_arg, client, client->fd, want_write) == 0)
		return 0;
	if (!client->hook_set_error)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "wait abandoned");
	client->error_code = TCOPY__ERROR_CODE__ERROR_NONE;
	client->broken = true;
	return -1;
}

/*
 * The next frame from the server.  Returns 1 with the frame (its payload
 * valid until the next read), 0 when nowait and no whole frame has arrived
 * yet, -1 on failure.
 */
static int
client_next_frame(TcClient *client, bool nowait, Tcopy__FrameType *type,
				  const uint8_t **payload, uint32_t *len)
{
	for (;;)
	{
		const char *why;
		ssize_t		n;

		switch (tc_frame_reader_next(&client->reader, client->max_frame, type,
									 payload, len, &why))
		{
			case TC_FRAME_NEXT_READY:
				return 1;
			case TC_FRAME_NEXT_BAD:
				return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
								   "protocol error: tserver sent a bad frame header: %s",
								   why);
			case TC_FRAME_NEXT_MORE:
				break;
		}

		n = tc_frame_reader_read(&client->reader, client->fd);
		if (n > 0)
			continue;
		if (n == 0)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "tserver closed the connection");
		if (errno == EAGAIN || errno == EWOULDBLOCK)
		{
			if (nowait)
				return 0;
			if (client_wait(client, false) < 0)
				return -1;
		}
		else if (errno == ENOMEM)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "out of memory for a frame of %zu bytes",
							   tc_frame_reader_pending(&client->reader));
		else if (errno != EINTR)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "could not receive from tserver: %s", strerror(errno));
	}
}

/* Fail the call with the message of the server's Error frame. */
static int
client_server_error(TcClient *client, const uint8_t *payload, uint32_t len)
{
	Tcopy__Error *error;

	error = tcopy__error__unpack(tc_arena_allocator(&client->arena), len, payload);
	if (error == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver sent a malformed FRAME_ERROR frame");
	return client_fail(client, error->code, "tserver: %s", error->message);
}

/* Fail the call because the server sent got where expected belonged. */
static int
client_unexpected(TcClient *client, Tcopy__FrameType got, Tcopy__FrameType expected)
{
	return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					   "protocol error: tserver sent %s, expected %s",
					   tc_frame_type_name(got), tc_frame_type_name(expected));
}

/*
 * Read the next frame, which must be of type expected, and unpack it with
 * allocator (the arena, or NULL for the heap); the arena is reset first.
 * An Error frame fails the call with the server's message.  Returns 1 with
 * *msg, 0 when nowait and no whole frame has arrived, -1 on failure.
 */
static int
client_read_reply(TcClient *client, bool nowait, Tcopy__FrameType expected,
				  ProtobufCAllocator *allocator, ProtobufCMessage **msg)
{
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;
	int			found;

	tc_arena_reset(&client->arena);
	found = client_next_frame(client, nowait, &type, &payload, &len);
	if (found <= 0)
		return found;
	if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
		return client_server_error(client, payload, len);
	if (type != expected)
		return client_unexpected(client, type, expected);
	*msg = protobuf_c_message_unpack(frame_descriptors[type], allocator, len, payload);
	if (*msg == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver sent a malformed %s frame",
						   tc_frame_type_name(type));
	return 1;
}

/*
 * A send failed with error.  A server that hangs up after an Error frame
 * makes the send fail with EPIPE or ECONNRESET: report that frame instead,
 * when it already arrived, and a plain hang-up as such.
 */
static int
client_send_failed(TcClient *client, int error)
{
	if (error == EPIPE || error == ECONNRESET)
	{
		Tcopy__FrameType type;
		const uint8_t *payload;
		uint32_t	len;

		while (client_next_frame(client, true, &type, &payload, &len) == 1)
		{
			if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
				return client_server_error(client, payload, len);
		}
	}
	if (error == EPIPE)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "tserver closed the connection");
	return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
					   "could not send to tserver: %s", strerror(error));
}

/* Send every byte of iov[iovcnt] (which this modifies), waiting as needed. */
static int
client_send_iov(TcClient *client, struct iovec *iov, int iovcnt)
{
	struct msghdr msg;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t) iovcnt;
	while (msg.msg_iovlen > 0)
	{
		ssize_t		n = sendmsg(client->fd, &msg, MSG_NOSIGNAL);
		size_t		sent;

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return client_send_failed(client, errno);
			if (client_wait(client, true) < 0)
				return -1;
			continue;
		}

		/* skip what went out; a partial write resumes mid-buffer */
		sent = (size_t) n;
		while (msg.msg_iovlen > 0 && sent >= msg.msg_iov->iov_len)
		{
			sent -= msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen > 0)
		{
			msg.msg_iov->iov_base = (char *) msg.msg_iov->iov_base + sent;
			msg.msg_iov->iov_len -= sent;
		}
	}
	return 0;
}

/* Pack msg into a frame of type in the output buffer and send it. */
static int
client_send_message(TcClient *client, Tcopy__FrameType type,
					const ProtobufCMessage *msg)
{
	struct iovec iov;

	client->out.len = 0;
	if (!tc_frame_append(&client->out, type, msg))
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "could not pack a %s frame: out of memory or too large",
						   tc_frame_type_name(type));
	iov.iov_base = client->out.data;
	iov.iov_len = client->out.len;
	return client_send_iov(client, &iov, 1);
}

/* Take an ack: it must be for the oldest batch in flight. */
static int
client_take_ack(TcClient *client, const Tcopy__Ack *ack)
{
	if (ack->seq != client->seq_acked + 1 || ack->seq > client->seq_sent)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver acknowledged batch %" PRIu64
						   ", expected %" PRIu64 " (last sent %" PRIu64 ")",
						   ack->seq, client->seq_acked + 1, client->seq_sent);
	client->seq_acked = ack->seq;
	return 0;
}

/* TcNetWaitFn of a TCP connect: the client's wait hook. */
static int
client_net_wait(void *arg, int fd, bool want_write)
{
	TcClient   *client = arg;

	(void) fd;					/* it is client->fd */
	return client_wait(client, want_write);
}

/*
 * Connect the socket to addr and make it non-blocking.  A unix socket
 * connects blocking (see tc_net_unix_connect); a TCP connect is
 * non-blocking and waits through the wait hook, holding the resolved
 * addresses in the client so that close frees them should the hook not
 * return.
 */
static int
client_open_socket(TcClient *client, const TcAddress *addr, const char *address)
{
	char		err[sizeof(client->error)];
	int			rc;

	if (addr->kind == TC_ADDRESS_UNIX)
	{
		client->fd = tc_net_unix_connect(addr->path, address, err, sizeof(err));
		if (client->fd < 0 ||
			tc_net_set_nonblock(client->fd, true, err, sizeof(err)) != TC_NET_OK)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
		return 0;
	}

	if (tc_net_resolve(addr->host, addr->port, false, address, &client->addrs,
					   err, sizeof(err)) != TC_NET_OK)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
	rc = tc_net_tcp_connect(client->addrs, &client->fd, client_net_wait, client,
							address, err, sizeof(err));
	if (rc == TC_NET_ABANDONED)
		return -1;				/* client_wait said why; close frees addrs */
	freeaddrinfo(client->addrs);
	client->addrs = NULL;
	if (rc != TC_NET_OK)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
	return 0;
}

/*
 * Read the ServerHello, answer Hello (with the HMAC of the nonce under
 * token when the server asks for one) and wait for Ready.
 */
static int
client_handshake(TcClient *client, const char *token, const char *client_name)
{
	ProtobufCAllocator *arena = tc_arena_allocator(&client->arena);
	ProtobufCMessage *msg;
	Tcopy__ServerHello *server_hello;
	Tcopy__Hello hello = TCOPY__HELLO__INIT;
	uint8_t		auth[TC_AUTH_SIZE];

	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO,
						  arena, &msg) < 0)
		return -1;
	server_hello = (Tcopy__ServerHello *) msg;
	if (server_hello->version != TC_PROTOCOL_VERSION)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "tserver speaks protocol version %u, this client version %d",
						   server_hello->version, TC_PROTOCOL_VERSION);
	client->server_name = strdup(server_hello->server);
	if (client->server_name == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
	if (server_hello->auth_required)
	{
		if (token == NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "server requires a token");
		if (!tc_auth_compute(token, strlen(token), server_hello->nonce.data,
							 server_hello->nonce.len, auth))
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "could not compute the authentication code");
		hello.auth.data = auth;
		hello.auth.len = sizeof(auth);
	}
	hello.version = TC_PROTOCOL_VERSION;
	hello.client = (char *) (client_name != NULL ? client_name : "tcopy");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_HELLO, &hello.base) < 0)
		return -1;
	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_READY, arena, &msg) < 0)
		return -1;
	return 0;
}

int
tc_client_connect_hooked(const char *address, const char *token,
						 const char *client_name, TcWaitHook hook, void *arg,
						 TcClient **clientp, char *err, size_t errlen)
{
	TcClient   *client;
	TcAddress	addr;

	*clientp = NULL;
	if (tc_address_is_null(address))
	{
		snprintf(err, errlen, "address \"%s\" names no tserver", address);
		return -1;
	}
	if (!tc_address_parse(address, &addr, err, errlen))
		return -1;
	client = calloc(1, sizeof(TcClient));
	if (client == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	client->fd = -1;
	client->wait_hook = hook != NULL ? hook : client_poll;
	client->wait_arg = hook != NULL ? arg : NULL;
	client->window = TC_CLIENT_WINDOW_DEFAULT;
	client->max_frame = TC_FRAME_MAX_DEFAULT;
	tc_frame_reader_init(&client->reader);
	tc_arena_init(&client->arena, TC_CLIENT_ARENA_BLOCK);
	/* from here on the caller can close it, should the hook not return */
	*clientp = client;

	if (client_open_socket(client, &addr, address) < 0 ||
		client_handshake(client, token, client_name) < 0)
	{
		snprintf(err, errlen, "%s", client->error);
		*clientp = NULL;
		tc_client_close(client);
		return -1;
	}
	return 0;
}

TcClient *
tc_client_connect(const char *address, const char *token,
				  const char *client_name, char *err, size_t errlen)
{
	TcClient   *client;

	if (tc_client_connect_hooked(address, token, client_name, NULL, NULL,
								 &client, err, errlen) < 0)
		return NULL;
	return client;
}

/* Close the connection and free everything; client may be NULL. */
void
tc_client_close(TcClient *client)
{
	if (client == NULL)
		return;
	if (client->fd >= 0)
		close(client->fd);
	if (client->addrs != NULL)
		freeaddrinfo(client->addrs);
	tc_frame_reader_free(&client->reader);
	tc_buf_free(&client->out);
	tc_arena_free(&client->arena);
	free(client->server_name);
	free(client);
}

/* Replace the wait hook; NULL restores the default poll(). */
void
tc_client_set_wait_hook(TcClient *client, TcWaitHook hook, void *arg)
{
	client->wait_hook = hook != NULL ? hook : client_poll;
	client->wait_arg = hook != NULL ? arg : NULL;
}

/* Set the window; 0 is taken as 1 (each write waits for the last ack). */
void
tc_client_set_window(TcClient *client, unsigned window)
{
	client->window = window > 0 ? window : 1;
}

/* Why the last call failed ("" when none has). */
const char *
tc_client_error(const TcClient *client)
{
	return client->error;
}

/* The server's code for the last failure, ERROR_NONE when it was local. */
Tcopy__ErrorCode
tc_client_error_code(const TcClient *client)
{
	return client->error_code;
}

/* Set the message of the failing call (for wait hooks). */
void
tc_client_set_error(TcClient *client, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(client->error, sizeof(client->error), fmt, args);
	va_end(args);
	client->hook_set_error = true;
}

/* The name the server gave in its ServerHello. */
const char *
tc_client_server_name(const TcClient *client)
{
	return client->server_name;
}

/*
 * Open a table; see tc_client.h.  The stored schema is copied to the heap
 * by packing it and unpacking it with the default allocator.
 */
int
tc_client_open_table(TcClient *client, const char *name,
					 const Tcopy__Schema *schema, bool create,
					 uint32_t *table_id, bool *created,
					 Tcopy__Schema **schema_out)
{
	Tcopy__OpenTable open = TCOPY__OPEN_TABLE__INIT;
	ProtobufCMessage *msg;
	Tcopy__TableInfo *info;

	/* in a session, acks of earlier batches come before the reply */
	if (tc_client_wait_acks(client) < 0)
		return -1;
	open.table = (char *) name;
	open.schema = (Tcopy__Schema *) schema;
	open.create = create;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE, &open.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_INFO,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	info = (Tcopy__TableInfo *) msg;
	if (table_id != NULL)
		*table_id = info->table_id;
	if (created != NULL)
		*created = info->created;
	if (schema_out != NULL)
	{
		size_t		size;

		if (info->schema == NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
							   "protocol error: tserver sent FRAME_TABLE_INFO without a schema");
		size = tcopy__schema__get_packed_size(info->schema);
		client->out.len = 0;
		if (!tc_buf_reserve(&client->out, size))
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
		tcopy__schema__pack(info->schema, client->out.data);
		*schema_out = tcopy__schema__unpack(NULL, size, client->out.data);
		if (*schema_out == NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
	}
	return 0;
}

/* Begin a write session; batch sequence numbers start again at 1. */
int
tc_client_begin(TcClient *client, uint64_t *session_id)
{
	Tcopy__Begin begin = TCOPY__BEGIN__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	client->seq_sent = client->seq_acked = 0;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_BEGIN, &begin.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_BEGIN_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	if (session_id != NULL)
		*session_id = ((Tcopy__BeginOk *) msg)->session_id;
	return 0;
}

/*
 * Send a packed WriteBatch; see tc_client.h.  The header goes out from the
 * stack and the payload from the caller's buffer, in one sendmsg.
 */
int
tc_client_write(TcClient *client, uint64_t seq, const uint8_t *payload, size_t len)
{
	ProtobufCAllocator *arena = tc_arena_allocator(&client->arena);
	uint8_t		header[TC_FRAME_HEADER_SIZE];
	struct iovec iov[2];
	ProtobufCMessage *msg;
	int			found;

	if (client->broken)
		return -1;
	if (seq != client->seq_sent + 1)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "write batch has seq %" PRIu64 ", expected %" PRIu64,
						   seq, client->seq_sent + 1);
	if (len > UINT32_MAX)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "write batch of %zu bytes does not fit in a frame", len);

	/* take the acks that have arrived; then wait only while the window is full */
	while ((found = client_read_reply(client, true, TCOPY__FRAME_TYPE__FRAME_ACK,
									  arena, &msg)) > 0)
	{
		if (client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}
	if (found < 0)
		return -1;
	while (client->seq_sent - client->seq_acked >= client->window)
	{
		if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_ACK, arena, &msg) < 0 ||
			client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}

	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, (uint32_t) len);
	iov[0].iov_base = header;
	iov[0].iov_len = sizeof(header);
	iov[1].iov_base = (void *) payload;
	iov[1].iov_len = len;
	if (client_send_iov(client, iov, 2) < 0)
		return -1;
	client->seq_sent = seq;
	return 0;
}

/*
 * Pack batch into the output buffer and send it.  tc_client_write only
 * reads while it waits, so the output buffer stays intact until sent.
 */
int
tc_client_write_batch(TcClient *client, const Tcopy__WriteBatch *batch)
{
	size_t		size;

	if (client->broken)
		return -1;
	size = tcopy__write_batch__get_packed_size(batch);
	client->out.len = 0;
	if (!tc_buf_reserve(&client->out, size))
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "out of memory for a write batch of %zu bytes", size);
	tcopy__write_batch__pack(batch, client->out.data);
	return tc_client_write(client, batch->seq, client->out.data, size);
}

/* Wait until every batch sent has been acknowledged. */
int
tc_client_wait_acks(TcClient *client)
{
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	while (client->seq_acked < client->seq_sent)
	{
		if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_ACK,
							  tc_arena_allocator(&client->arena), &msg) < 0 ||
			client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}
	return 0;
}

/* Commit the session; see tc_client.h. */
int
tc_client_commit(TcClient *client, uint64_t rows_sent, uint64_t *rows_committed)
{
	Tcopy__Commit commit = TCOPY__COMMIT__INIT;
	ProtobufCMessage *msg;

	if (!client->prepared && tc_client_wait_acks(client) < 0)
		return -1;
	commit.last_seq = client->seq_sent;
	commit.rows = rows_sent;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_COMMIT, &commit.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	if (rows_committed != NULL)
		*rows_committed = ((Tcopy__CommitOk *) msg)->rows;
	client->seq_sent = client->seq_acked = 0;
	client->prepared = false;
	return 0;
}

/* Prepare the session: see tc_client.h. */
int
tc_client_prepare(TcClient *client, uint64_t rows_sent)
{
	Tcopy__Commit commit = TCOPY__COMMIT__INIT;
	ProtobufCMessage *msg;

	if (tc_client_wait_acks(client) < 0)
		return -1;
	commit.last_seq = client->seq_sent;
	commit.rows = rows_sent;
	commit.prepare = true;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_COMMIT, &commit.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	if (!((Tcopy__CommitOk *) msg)->prepared)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "tserver published a session it was asked to prepare");
	client->prepared = true;
	return 0;
}

/*
 * Abort the session.  Acks of batches still in flight may arrive before
 * AbortOk; they are skipped.
 */
int
tc_client_abort(TcClient *client)
{
	Tcopy__Abort abort_msg = TCOPY__ABORT__INIT;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;

	if (client->broken)
		return -1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_ABORT, &abort_msg.base) < 0)
		return -1;
	tc_arena_reset(&client->arena);
	do
	{
		if (client_next_frame(client, false, &type, &payload, &len) < 0)
			return -1;
	} while (type == TCOPY__FRAME_TYPE__FRAME_ACK);
	if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
		return client_server_error(client, payload, len);
	if (type != TCOPY__FRAME_TYPE__FRAME_ABORT_OK)
		return client_unexpected(client, type, TCOPY__FRAME_TYPE__FRAME_ABORT_OK);
	client->seq_sent = client->seq_acked = 0;
	client->prepared = false;
	return 0;
}

/* Truncate or drop a table. */
int
tc_client_table_op(TcClient *client, Tcopy__TableOpKind op, uint32_t table_id)
{
	Tcopy__TableOp table_op = TCOPY__TABLE_OP__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	table_op.op = op;
	table_op.table_id = table_id;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, &table_op.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	return 0;
}

/* Ask for the server's counters; *stats is a heap copy. */
int
tc_client_stats(TcClient *client, Tcopy__Stats **stats)
{
	Tcopy__StatsRequest request = TCOPY__STATS_REQUEST__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_STATS, NULL, &msg) < 0)
		return -1;
	*stats = (Tcopy__Stats *) msg;
	return 0;
}

/* Send a Scan; its batches are then read with tc_client_scan_next. */
int
tc_client_scan_start(TcClient *client, const Tcopy__Scan *request)
{
	if (client->broken)
		return -1;
	if (client->scanning)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "a scan is already in progress on this connection");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_SCAN, &request->base) < 0)
		return -1;
	client->scanning = true;
	return 0;
}

/* The next batch of the scan, in the arena until the next call. */
int
tc_client_scan_next(TcClient *client, Tcopy__ScanBatch **batch)
{
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	if (!client->scanning)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "no scan in progress on this connection");
	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	*batch = (Tcopy__ScanBatch *) msg;
	if ((*batch)->done)
		client->scanning = false;
	return 0;
}

/* Send bytes as they are (tests feed the server malformed input this way). */
int
tc_client_send_raw(TcClient *client, const void *bytes, size_t len)
{
	struct iovec iov;

	if (client->broken)
		return -1;
	iov.iov_base = (void *) bytes;
	iov.iov_len = len;
	return client_send_iov(client, &iov, 1);
}

/*
 * Read one frame whatever its type, an Error frame included (it does not
 * fail the call); the payload is valid until the next call.
 */
int
tc_client_read_frame(TcClient *client, Tcopy__FrameType *type,
					 const uint8_t **payload, uint32_t *len)
{
	if (client->broken)
		return -1;
	return client_next_frame(client, false, type, payload, len) < 0 ? -1 : 0;
}
