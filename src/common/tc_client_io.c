/*
 * tc_client_io.c
 *		The client library's frame I/O: waiting through the wait hook,
 *		reading and unpacking replies, sending frames, taking acks, and
 *		failing a call.
 *
 * What the server sends is read by the frame reader the tserver uses too
 * (tc_frame_reader.h): one buffer that keeps its capacity, each header
 * checked against max_frame before its payload is waited for, so that a
 * server cannot make the client buffer more than that.  Replies are
 * unpacked into an arena reset before the next reply is read, which is why
 * a scan batch lives until the next call and why reading acks allocates
 * nothing once the arena has warmed up.
 *
 * The socket is non-blocking and every wait goes through the wait hook, so
 * that the extension can wait on its latch instead.  Sends use MSG_NOSIGNAL:
 * a server that hangs up makes the call fail instead of raising SIGPIPE in
 * the caller's process, and when it hung up after an Error frame, the call
 * reports that frame's message.
 */
#include "tc_client_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tc_frame.h"

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
	[TCOPY__FRAME_TYPE__FRAME_PREPARE] = &tcopy__prepare__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_PREPARE_OK] = &tcopy__prepare_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_RESOLVE] = &tcopy__resolve__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_RESOLVE_OK] = &tcopy__resolve_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_LIST_PREPARED] = &tcopy__list_prepared__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_PREPARED_LIST] = &tcopy__prepared_list__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_LIST_LABELS] = &tcopy__list_labels__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_LABEL_LIST] = &tcopy__label_list__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_TABLE_LIST] = &tcopy__table_list__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_MODIFY] = &tcopy__modify__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_MODIFY_OK] = &tcopy__modify_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO] = &tcopy__rollback_to__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO_OK] = &tcopy__rollback_to_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_SNAPSHOT_OK] = &tcopy__snapshot_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_STREAMS] = &tcopy__streams__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_STREAMS_OK] = &tcopy__streams_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_JOIN] = &tcopy__join__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_JOIN_OK] = &tcopy__join_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_CHUNK] = &tcopy__chunk__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_BACKUP] = &tcopy__backup__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_BACKUP_OK] = &tcopy__backup_ok__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_GROUP] = &tcopy__group__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_GROUP_STATUS] = &tcopy__group_status__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_SPLIT] = &tcopy__split__descriptor,
	[TCOPY__FRAME_TYPE__FRAME_SPLIT_OK] = &tcopy__split_ok__descriptor,
};

/* Record why the call fails and mark the client broken; returns -1. */
int
client_fail(TcClient *client, Tcopy__ErrorCode code, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(client->error, sizeof(client->error), fmt, args);
	va_end(args);
	client->error_code = code;
	client->error_table_id = 0;
	client->error_frame = NULL;
	client->broken = true;
	return -1;
}

/*
 * Set the message of the failing call: for wait hooks, this file's default
 * one among them (tc_client.h).
 */
void
tc_client_set_error(TcClient *client, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(client->error, sizeof(client->error), fmt, args);
	va_end(args);
	client->hook_set_error = true;
}

/* The default wait hook: poll without a timeout (fd -1: a pause). */
int
client_poll(void *arg, TcClient *client, int fd, bool want_write)
{
	struct pollfd pfd;

	if (fd < 0)
	{
		(void) poll(NULL, 0, TC_CLIENT_PAUSE_MS);
		return 0;
	}
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
int
client_wait(TcClient *client, bool want_write)
{
	return client_wait_on(client, client->fd, want_write);
}

/* client_wait on fd, or (fd -1) a pause of the hook's; -1 when it gives up. */
int
client_wait_on(TcClient *client, int fd, bool want_write)
{
	client->hook_set_error = false;
	if (client->wait_hook(client->wait_arg, client, fd, want_write) == 0)
		return 0;
	if (!client->hook_set_error)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "wait abandoned");
	client->error_code = TCOPY__ERROR_CODE__ERROR_NONE;
	client->error_frame = NULL;
	client->broken = true;
	return -1;
}

/* TcReadFn of a TLS connection (arg is the client). */
/*
 * The tserver closed the connection: fail, saying why it may have before
 * the handshake was done (a refusal it could not put in a frame, as to a
 * client still in its TLS handshake, or a flood's eviction).
 */
static int
client_closed(TcClient *client)
{
	if (!client->ready)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "tserver closed the connection before the handshake was done: it "
						   "closes connections not yet authenticated when too many are "
						   "(--max-unauthenticated: a flood from this client's address, or "
						   "--handshake-timeout); its log says which");
	return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "tserver closed the connection");
}

static ssize_t
client_tls_read(void *arg, void *buf, size_t len)
{
	TcClient   *client = arg;

	return tc_tls_read(client->tls, buf, len);
}

/*
 * The next frame from the server.  Returns 1 with the frame (its payload
 * valid until the next read), 0 when nowait and no whole frame has arrived
 * yet, -1 on failure.
 */
int
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

		/*
		 * Through TLS, a read takes what OpenSSL holds first and says
		 * EAGAIN only once that is gone, so that no wait below is for bytes
		 * that have already arrived.
		 */
		if (client->tls != NULL)
			n = tc_frame_reader_read_via(&client->reader, client_tls_read, client);
		else
			n = tc_frame_reader_read(&client->reader, client->fd);
		if (n > 0)
			continue;
		if (n == 0)
			return client_closed(client);
		if (errno == EAGAIN || errno == EWOULDBLOCK)
		{
			if (nowait)
				return 0;
			if (client_wait(client, client->tls != NULL && tc_tls_wants_write(client->tls)) < 0)
				return -1;
		}
		else if (errno == EPROTO && client->tls != NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "could not receive from tserver: %s", tc_tls_error(client->tls));
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
int
client_server_error(TcClient *client, const uint8_t *payload, uint32_t len)
{
	Tcopy__Error *error;

	error = tcopy__error__unpack(tc_arena_allocator(&client->arena), len, payload);
	if (error == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver sent a malformed FRAME_ERROR frame");
	client_fail(client, error->code, "tserver: %s", error->message);
	client->error_table_id = error->table_id;
	client->error_frame = error;
	return -1;
}

/* Fail the call because the server sent got where expected belonged. */
int
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
/* the process's round trips: reads that waited for an answer to a request sent */
static uint64_t client_round_trips;

uint64_t
tc_client_round_trips(void)
{
	return client_round_trips;
}

int
client_read_reply(TcClient *client, bool nowait, Tcopy__FrameType expected,
				  ProtobufCAllocator *allocator, ProtobufCMessage **msg)
{
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;
	int			found;

	tc_arena_reset(&client->arena);
	if (!nowait && client->sent_unanswered)
	{
		client_round_trips++;
		client->sent_unanswered = false;
	}
	if (client->ndeferred > 0 && (found = client_take_deferred(client, nowait)) <= 0)
		return found;
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

void
client_keep_session(TcClient *client, const Tcopy__BeginOk *ok)
{
	client->session_id = ok->session_id;
	client->session_key_len = ok->session_key.len;
	if (client->session_key_len > sizeof(client->session_key))
		client->session_key_len = 0;	/* no scan can name it */
	else if (client->session_key_len > 0)
		memcpy(client->session_key, ok->session_key.data, client->session_key_len);
}

/* A deferred BeginOk: the session's id and key, as tc_client_begin_at keeps them. */
static int
client_take_begin_ok(TcClient *client, const uint8_t *payload, uint32_t len)
{
	Tcopy__BeginOk *ok;

	ok = tcopy__begin_ok__unpack(tc_arena_allocator(&client->arena), len, payload);
	if (ok == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver sent a malformed FRAME_BEGIN_OK frame");
	client_keep_session(client, ok);
	return 0;
}

int
client_take_deferred(TcClient *client, bool nowait)
{
	while (client->ndeferred > 0)
	{
		Tcopy__FrameType type;
		const uint8_t *payload;
		uint32_t	len;
		int			found = client_next_frame(client, nowait, &type, &payload, &len);

		if (found <= 0)
			return found;
		if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
			return client_server_error(client, payload, len);
		if (type != client->deferred[0])
			return client_unexpected(client, type, client->deferred[0]);
		if (type == TCOPY__FRAME_TYPE__FRAME_BEGIN_OK &&
			client_take_begin_ok(client, payload, len) < 0)
			return -1;
		client->ndeferred--;
		memmove(client->deferred, client->deferred + 1,
				client->ndeferred * sizeof(client->deferred[0]));
	}
	return 1;
}

bool
tc_client_idle_ok(TcClient *client)
{
	char		byte;
	ssize_t		n;

	/* bytes received and not yet returned in a frame: nobody asked for them */
	if (client->broken || client->ndeferred > 0 || client->scanning ||
		client->reader.buf.len > client->reader.pos)
		return false;
	n = recv(client->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	/* closed (0), or bytes nobody asked for (an Error before closing) */
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

int
client_send_deferred(TcClient *client, Tcopy__FrameType type, const ProtobufCMessage *msg,
					 Tcopy__FrameType answer)
{
	if (client->ndeferred == TC_CLIENT_DEFERRED_MAX && client_take_deferred(client, false) < 0)
		return -1;
	if (client_send_message(client, type, msg) < 0)
		return -1;
	client->deferred[client->ndeferred++] = answer;
	return 0;
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
		return client_closed(client);
	if (error == EPROTO && client->tls != NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "could not send to tserver: %s", tc_tls_error(client->tls));
	return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
					   "could not send to tserver: %s", strerror(error));
}

/* Send every byte of iov[iovcnt] (which this modifies), waiting as needed. */
int
client_send_iov(TcClient *client, struct iovec *iov, int iovcnt)
{
	struct msghdr msg;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t) iovcnt;
	while (msg.msg_iovlen > 0)
	{
		ssize_t		n;
		size_t		sent;

		if (client->tls != NULL)
			n = tc_tls_writev(client->tls, msg.msg_iov, (int) msg.msg_iovlen);
		else
			n = sendmsg(client->fd, &msg, MSG_NOSIGNAL);
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return client_send_failed(client, errno);
			if (client_wait(client, client->tls == NULL || tc_tls_wants_write(client->tls)) < 0)
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
	client->sent_unanswered = true;
	return 0;
}

/* Pack msg into a frame of type in the output buffer and send it. */
int
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
int
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
