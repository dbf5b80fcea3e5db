/*
 * ts_conn.c
 *		One client connection's thread: read frames from the socket with
 *		the shared frame reader, feed them to the connection's protocol
 *		(ts_proto.c), send its replies; at the end report the error and
 *		hand the connection back to the server.
 *
 * Every connection thread does blocking I/O on its own socket, so a slow
 * or dead client stalls nobody but itself.  Frames are read ahead into one
 * reused buffer (tc_frame_reader.h), each header checked against the
 * protocol's limit of the moment before its payload is waited for.  The
 * whole handshake must be done within the context's handshake timeout of
 * the accept (each read waits only for what is left of it), so that a
 * client trickling bytes cannot hold a thread; a unix peer whose uid is
 * allowed is admitted without a token, and with no token configured any
 * other is refused before it is even greeted.  Any error ends the
 * connection the same way: an Error frame (best effort, then a short
 * drain), a line in the log, the open session aborted, the open scan
 * closed, the socket closed.
 */
#include "ts_conn.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_clock.h"
#include "ts_log.h"
#include "ts_tls.h"

#define CONN_DRAIN_MS 100		/* after an Error frame, see conn_send_error */
#define CONN_DRAIN_BYTES (1024 * 1024)

/*
 * Errors that end a connection are TsErrors.  Those with code ERROR_NONE
 * are not the client's fault nor ours to report to it (the peer hung up,
 * the server is shutting down): they are logged but get no Error frame.
 */
static void
conn_lost(TsConn *conn, TsError *err, const char *what, int errnum)
{
	conn->socket_broken = true;
	if (errnum != 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NONE, "%s: %s", what, strerror(errnum));
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NONE, "%s", what);
}

/* Milliseconds since the connection was accepted. */
static long
conn_elapsed_ms(const TsConn *conn)
{
	return (long) ((ts_monotonic_us() - conn->accepted_us) / 1000);
}

/* The handshake's deadline has passed: say so in err (ERROR_AUTH). */
static int
conn_handshake_timed_out(TsConn *conn, TsError *err)
{
	int			limit_ms = atomic_load(&conn->ctx->handshake_timeout_ms);

	if (limit_ms % 1000 == 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "no handshake within %d s of connecting", limit_ms / 1000);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "no handshake within %d ms of connecting", limit_ms);
	return -1;
}

/*
 * Seconds left of the handshake's deadline, rounded up, at least 1: the
 * receive timeout of the blocking reads a TLS record may take.
 */
static int
conn_handshake_seconds_left(const TsConn *conn)
{
	long		left_ms = atomic_load(&conn->ctx->handshake_timeout_ms) - conn_elapsed_ms(conn);

	return left_ms > 1000 ? (int) ((left_ms + 999) / 1000) : 1;
}

/*
 * Wait up to timeout_ms for the client's input: 1 when there is some, 0
 * when there is none yet (the time is up, or a signal cut the wait: the
 * caller weighs its deadline again), -1 with err when the socket fails.
 */
static int
conn_poll(TsConn *conn, long timeout_ms, TsError *err)
{
	struct pollfd pfd = {.fd = conn->fd,.events = POLLIN};
	int			n = poll(&pfd, 1, (int) timeout_ms);

	if (n >= 0)
		return n > 0;
	if (errno == EINTR)
		return 0;
	conn_lost(conn, err, "could not wait for the client", errno);
	return -1;
}

/*
 * Before the handshake is done, wait for input only as long as is left of
 * the handshake's deadline, counted from the accept: a client sending a
 * byte now and then gets no more time than a silent one.  Through TLS, a
 * read may block for the rest of a record whatever poll said, so the
 * socket's receive timeout is set to what is left as well (and taken off
 * once authenticated, conn_handshake_done), and bytes TLS has decrypted
 * already need no wait.  0 when there is input, -1 with err (ERROR_AUTH)
 * when the time is up.
 */
static int
conn_wait_handshake(TsConn *conn, TsError *err)
{
	if (conn->tls != NULL)
	{
		if (tc_net_set_recv_timeout(conn->fd, conn_handshake_seconds_left(conn), NULL, 0) == TC_NET_OK)
			conn->recv_timeout_set = true;
		if (tc_tls_has_pending(conn->tls))
			return 0;
	}
	for (;;)
	{
		long		left_ms = atomic_load(&conn->ctx->handshake_timeout_ms) - conn_elapsed_ms(conn);
		int			n;

		if (left_ms <= 0)
			return conn_handshake_timed_out(conn, err);
		if ((n = conn_poll(conn, left_ms, err)) != 0)
			return n > 0 ? 0 : -1;
	}
}

/*
 * An authenticated connection that holds nothing (ts_proto_idle) waits at
 * most --idle-timeout for its next frame, then it is closed, as Postgres'
 * idle_session_timeout closes a session: an idle client does not keep a
 * connection slot from others.  Its Error frame (SHUTTING_DOWN) says why to
 * a client that reads it at its next request.  0, or -1 with err.
 */
static int
conn_wait_idle(TsConn *conn, TsError *err)
{
	int			limit_ms = atomic_load(&conn->ctx->idle_timeout_ms);
	int64_t		since_ms;

	if (limit_ms <= 0 || tc_frame_reader_buffered(&conn->reader) > 0 ||
		(conn->tls != NULL && tc_tls_has_pending(conn->tls)) || !ts_proto_idle(&conn->proto))
		return 0;
	since_ms = ts_monotonic_ms();
	for (;;)
	{
		long		left_ms = limit_ms - (ts_monotonic_ms() - since_ms);
		int			n;

		if (left_ms <= 0)
			break;
		if ((n = conn_poll(conn, left_ms, err)) != 0)
			return n > 0 ? 0 : -1;
	}
	ts_log(TS_LOG_INFO, "connection %" PRIu64 " from %s: idle for %d s, closed (--idle-timeout)",
		   conn->id, conn->peer, limit_ms / 1000);
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SHUTTING_DOWN,
				 "closing the connection: idle for %d s (--idle-timeout)", limit_ms / 1000);
	return -1;
}

/* The handshake is done: its receive timeout, if any, comes off. */
static void
conn_handshake_done(TsConn *conn)
{
	if (conn->recv_timeout_set)
	{
		tc_net_set_recv_timeout(conn->fd, 0, NULL, 0);
		conn->recv_timeout_set = false;
	}
}

/* TcReadFn of a TLS connection (arg is its TsConn). */
static ssize_t
conn_tls_read(void *arg, void *buf, size_t len)
{
	TsConn	   *conn = arg;

	return tc_tls_read(conn->tls, buf, len);
}

/*
 * Read the next frame with the shared reader, whose header check uses the
 * limit of the connection's phase; a header that fails it is reported in
 * the protocol's words (ts_proto_check_header).  *payload stays valid until
 * the next read.  Returns 0, or -1 with err.
 */
static int
conn_read_frame(TsConn *conn, Tcopy__FrameType *type, const uint8_t **payload,
				uint32_t *len, TsError *err)
{
	for (;;)
	{
		const char *why;
		ssize_t		n;

		switch (tc_frame_reader_next(&conn->reader, ts_proto_frame_limit(&conn->proto),
									 type, payload, len, &why))
		{
			case TC_FRAME_NEXT_READY:
				atomic_fetch_add(&conn->ctx->shared->bytes_received,
								 TC_FRAME_HEADER_SIZE + (uint64_t) *len);
				return 0;
			case TC_FRAME_NEXT_BAD:
				return ts_proto_check_header(&conn->proto, tc_frame_reader_header(&conn->reader),
											 type, len, err);
			case TC_FRAME_NEXT_MORE:
				break;
		}

		if (!ts_proto_authenticated(&conn->proto) ? conn_wait_handshake(conn, err) != 0 :
			conn_wait_idle(conn, err) != 0)
			return -1;
		if (conn->tls != NULL)
			n = tc_frame_reader_read_via(&conn->reader, conn_tls_read, conn);
		else
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
		if (errno == EPROTO && conn->tls != NULL)
		{
			conn_lost(conn, err, tc_tls_error(conn->tls), 0);
			return -1;
		}
		/* a TLS record cut short by the handshake's receive timeout */
		if ((errno == EAGAIN || errno == EWOULDBLOCK) && !ts_proto_authenticated(&conn->proto))
			return conn_handshake_timed_out(conn, err);
		if (errno == ENOMEM)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
						 "out of memory reading a frame of %zu bytes",
						 tc_frame_reader_pending(&conn->reader));
			return -1;
		}
		conn_lost(conn, err, "could not receive from the client", errno);
		return -1;
	}
}

/* TsProtoSendFn of a connection (arg is its TsConn). */
static int
conn_send_socket(void *arg, const uint8_t *bytes, size_t len, TsError *err)
{
	TsConn	   *conn = arg;
	size_t		sent = 0;

	while (sent < len)
	{
		ssize_t		n;

		if (conn->tls != NULL)
		{
			struct iovec iov = {.iov_base = (void *) (bytes + sent),.iov_len = len - sent};

			n = tc_tls_writev(conn->tls, &iov, 1);
		}
		else
			n = send(conn->fd, bytes + sent, len - sent, MSG_NOSIGNAL);
		if (n >= 0)
		{
			sent += (size_t) n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EPROTO && conn->tls != NULL)
		{
			conn_lost(conn, err, tc_tls_error(conn->tls), 0);
			return -1;
		}
		conn_lost(conn, err, "could not send to the client", errno);
		return -1;
	}
	return 0;
}

/*
 * Send err as an Error frame, as far as the socket allows, then give the
 * client a moment to read it: closing a TCP socket with unread input makes
 * the kernel reset the connection, which can destroy the Error frame in
 * flight.  So stop sending, and discard input for a short, bounded while.
 */
static void
conn_send_error(TsConn *conn, const TsError *err)
{
	Tcopy__Error error = TCOPY__ERROR__INIT;
	Tcopy__Row *duplicate = NULL;
	bool		appended;
	TcBuf		frame = {0};
	TsError		ignored;
	int64_t		start_ms;
	size_t		drained = 0;
	int			rc;

	if (conn->socket_broken || atomic_load(conn->ctx->shutdown_requested))
		return;
	error.code = err->code;
	error.message = (char *) err->message;
	error.table_id = err->table_id;
	if (err->code == TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY)
		error.duplicate_ordinal = err->row_ordinal;
	if (err->code == TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY && err->ncolumns > 0)
	{
		/* packed into the TsError; unpacked again to go into the message */
		duplicate = tcopy__row__unpack(NULL, err->row_len, err->row);
		if (duplicate != NULL)
		{
			error.duplicate = duplicate;
			error.n_duplicate_columns = err->ncolumns;
			error.duplicate_columns = (uint32_t *) err->columns;
		}
	}
	appended = tc_frame_append(&frame, TCOPY__FRAME_TYPE__FRAME_ERROR, &error.base);
	if (duplicate != NULL)
		tcopy__row__free_unpacked(duplicate, NULL);
	if (!appended)
	{
		tc_buf_free(&frame);
		return;
	}
	rc = conn_send_socket(conn, frame.data, frame.len, &ignored);
	tc_buf_free(&frame);
	if (rc != 0 || shutdown(conn->fd, SHUT_WR) != 0)
		return;

	start_ms = ts_monotonic_ms();
	while (drained < CONN_DRAIN_BYTES)
	{
		struct pollfd pfd = {.fd = conn->fd,.events = POLLIN};
		long		elapsed_ms = ts_monotonic_ms() - start_ms;
		char		scratch[16384];
		ssize_t		n;

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
 * everything.  The socket itself is closed by the exit function.
 */
static void
conn_finish(TsConn *conn, const TsError *err)
{
	uint64_t	id = conn->id;

	/* a replica group's client asks every member in turn: that is no news */
	if (err->code == TCOPY__ERROR_CODE__ERROR_NOT_LEADER)
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " from %s: %s",
			   id, conn->peer, err->message);
	else if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		ts_log(TS_LOG_WARNING, "connection %" PRIu64 " from %s: %s",
			   id, conn->peer, err->message);
	else if (atomic_load(conn->ctx->shutdown_requested))
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by server shutdown", id);
	else if (conn->clean_eof)
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " closed by the client", id);
	else
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " from %s lost: %s",
			   id, conn->peer, err->message);

	/* abort first, so that the session is gone when the client sees why */
	ts_proto_release(&conn->proto);
	if (err->code != TCOPY__ERROR_CODE__ERROR_NONE)
		conn_send_error(conn, err);
	tc_frame_reader_free(&conn->reader);
	tc_tls_free(conn->tls);
	conn->tls = NULL;
}

bool
ts_conn_uid_admitted(const TsConnContext *ctx, const TsConn *conn)
{
	if (!conn->is_unix || !conn->peer_uid_known)
		return false;
	for (size_t i = 0; i < ctx->nallowed_uids; i++)
		if (ctx->allowed_uids[i] == conn->peer_uid)
			return true;
	return false;
}

/*
 * Who may skip the token: a unix peer whose uid is allowed (SO_PEERCRED,
 * read at accept; one that cannot be read is not), and anyone when the
 * server has neither tokens nor allowed uids (--insecure).  A peer that is
 * not admitted must prove a token, and is refused before it is even
 * greeted when the server holds none.  TCP peers have no uid: the token is
 * their check (ts_main refuses --allow-uid with a tcp listener and no
 * token).  Returns 0 with *admitted, or -1 with err.
 */
static int
conn_check_peer(const TsConn *conn, bool *admitted, TsError *err)
{
	const TsConnContext *ctx = conn->ctx;
	bool		tokens = atomic_load(&ctx->shared->credentials)->n > 0;

	*admitted = false;
	if (ctx->nallowed_uids == 0 && !tokens)
	{
		*admitted = true;
		return 0;
	}
	if (ts_conn_uid_admitted(ctx, conn))
	{
		*admitted = true;
		return 0;
	}
	if (tokens)
		return 0;
	if (!conn->is_unix || !conn->peer_uid_known)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "the peer's uid could not be read, and only listed uids may connect");
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "uid %u is not allowed to connect", (unsigned) conn->peer_uid);
	return -1;
}

/* The connection is no longer unauthenticated (READY sent, or it ends). */
static void
conn_done_unauthenticated(TsConn *conn)
{
	if (atomic_exchange(&conn->unauthenticated, false))
		atomic_fetch_sub(conn->ctx->unauthenticated, 1);
}

/*
 * With a TLS context, start TLS on a tcp: connection, before the first
 * frame, within what is left of the handshake's deadline.  A client that
 * does not speak TLS gets a plaintext Error frame naming sslmode; one whose
 * TLS handshake failed gets none (it could not read it), only the log line.
 */
static int
conn_start_tls(TsConn *conn, TsError *err)
{
	char		why[256];

	if (conn->ctx->tls_ctx == NULL || conn->is_unix)
		return 0;
	/* the TLS handshake is part of the handshake's deadline */
	if (tc_net_set_recv_timeout(conn->fd, conn_handshake_seconds_left(conn), NULL, 0) == TC_NET_OK)
		conn->recv_timeout_set = true;
	switch (ts_tls_start(conn->ctx->tls_ctx, conn->fd, &conn->tls, why, sizeof(why)))
	{
		case TS_TLS_STARTED:
			{
				uint8_t		binding[TC_BINDING_SIZE];

				if (!tc_tls_server_end_point(conn->tls, binding))
				{
					ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
								 "could not hash this server's certificate for the proofs");
					return -1;
				}
				ts_proto_set_binding(&conn->proto, binding);
			}
			if (ts_log_min_level <= TS_LOG_DEBUG)
			{
				tc_tls_describe(conn->tls, why, sizeof(why));
				ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": %s", conn->id, why);
			}
			return 0;
		case TS_TLS_PLAINTEXT_PEER:
			/* a mismatch of transports, not of credentials: no 28000 */
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "%s", why);
			return -1;
		case TS_TLS_TIMED_OUT:
		case TS_TLS_FAILED:
			break;
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH, "TLS handshake failed: %s", why);
	conn->socket_broken = true;
	return -1;
}

/*
 * Thread body: check the peer, greet, serve frames until an error or the
 * end of the connection, clean up, and hand the connection back through
 * the context's exit function.
 */
void *
ts_conn_main(void *arg)
{
	TsConn	   *conn = arg;
	TsError		err;
	bool		admitted = false;

	/* named, for per-thread profiles (bench/threads.sh) */
	pthread_setname_np(pthread_self(), "ts-conn");
	tc_frame_reader_init(&conn->reader);
	conn->clean_eof = conn->socket_broken = conn->recv_timeout_set = false;
	conn->tls = NULL;
	ts_proto_init(&conn->proto, conn->ctx->shared, conn->id, conn_send_socket, conn);
	conn->proto.peer_fd = conn->fd;
	memset(&err, 0, sizeof(err));

	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " from %s opened", conn->id, conn->peer);

	if (conn_check_peer(conn, &admitted, &err) == 0 && conn_start_tls(conn, &err) == 0 &&
		ts_proto_greet(&conn->proto, admitted, &err) == 0)
	{
		for (;;)
		{
			Tcopy__FrameType type;
			const uint8_t *payload;
			uint32_t	len;

			if (atomic_load(&conn->unauthenticated) && ts_proto_authenticated(&conn->proto))
			{
				conn_done_unauthenticated(conn);
				conn_handshake_done(conn);
			}
			if (conn_read_frame(conn, &type, &payload, &len, &err) != 0)
				break;
			if (ts_proto_handle_frame(&conn->proto, type, payload, len, &err) != 0)
			{
				/* a failure the store left without a code is still one */
				if (err.code == TCOPY__ERROR_CODE__ERROR_NONE && !conn->socket_broken)
				{
					err.code = TCOPY__ERROR_CODE__ERROR_INTERNAL;
					if (err.message[0] == '\0')
						strcpy(err.message, "internal error");
				}
				break;
			}
		}
	}

	conn_done_unauthenticated(conn);
	conn_finish(conn, &err);
	conn->ctx->exit(conn, conn->ctx->exit_arg);
	return NULL;
}
