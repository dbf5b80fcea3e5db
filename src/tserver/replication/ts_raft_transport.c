/*
 * ts_raft_transport.c
 *		The raft port's transport (ts_raft_transport.h): what libraft 0.15
 *		calls (init, listen, connect, close), the TCP under it, and a
 *		handshake's life, from the accept or the connect to the stream
 *		handed to libraft or closed.  The handshake's messages and proofs
 *		are ts_raft_handshake.c's.
 *
 * Every handshake has a deadline, from the accept or from the start of the
 * TCP connect, and at most TS_RAFT_HANDSHAKES_MAX incoming ones are in
 * progress: an unproven peer costs a descriptor and a few KB for a few
 * seconds at most.  libraft 0.15's contracts for a transport, which the
 * functions below keep, are in docs/replication.md#the-raft-transport.
 */
#include "ts_raft_transport_int.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "ts_log.h"

#define LISTEN_BACKLOG 64		/* libraft's own transport has 1 */

/* Say why in raft_transport->errmsg, which libraft reports. */
static void
set_errmsg(struct raft_uv_transport *raft_transport, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
static void
set_errmsg(struct raft_uv_transport *raft_transport, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(raft_transport->errmsg, sizeof(raft_transport->errmsg), fmt, args);
	va_end(args);
}

/* The TCP peer of tcp as "ip:port", for the log. */
static void
peer_ip_of(uv_tcp_t *tcp, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	int			len = sizeof(ss);
	char		ip[INET6_ADDRSTRLEN];

	snprintf(out, outlen, "?");
	if (uv_tcp_getpeername(tcp, (struct sockaddr *) &ss, &len) != 0 ||
		ss.ss_family != AF_INET ||
		uv_ip4_name((struct sockaddr_in *) &ss, ip, sizeof(ip)) != 0)
		return;
	snprintf(out, outlen, "%s:%d", ip, ntohs(((struct sockaddr_in *) &ss)->sin_port));
}

/* ---- closing and freeing ---- */

/* Once closing, and every handshake and the listener are gone: tell libraft. */
static void
maybe_fire_close(TsRaftTransport *t)
{
	if (!t->closing || t->close_fired || t->handshakes != NULL ||
		(t->listener_made && !t->listener_closed))
		return;
	t->close_fired = true;
	t->close_cb(t->raft_transport);
}

/*
 * Once all of a handshake's handles are closed: unlink and free it, then
 * fail libraft's connect request if it has one.  The request's callback
 * comes last, as the stock transport's does: libraft may free the request
 * in it, and it must find the handles closed.
 */
static void
handshake_maybe_free(TsRaftHandshake *hs)
{
	TsRaftTransport *t = hs->transport;
	struct raft_uv_connect *request = NULL;
	int			status = hs->status;

	if (hs->handles_open > 0)
		return;
	if (hs->prev != NULL)
		hs->prev->next = hs->next;
	else
		t->handshakes = hs->next;
	if (hs->next != NULL)
		hs->next->prev = hs->prev;
	if (!hs->connector)
		t->incoming--;
	t->stats.pending--;
	if (hs->phase == TS_HS_FAILED && hs->connector)
		request = hs->request;
	tc_auth_forget(hs, sizeof(TsRaftHandshake));
	free(hs);
	if (request != NULL)
		request->cb(request, NULL, status);
	maybe_fire_close(t);
}

/* One of a handshake's handles closed (its tcp is raft_malloc'd). */
static void
handshake_handle_closed(uv_handle_t *handle)
{
	TsRaftHandshake *hs = handle->data;

	if (handle == (uv_handle_t *) hs->stream)
	{
		raft_free(handle);
		hs->stream = NULL;
	}
	hs->handles_open--;
	handshake_maybe_free(hs);
}

/* A connection refused at accept, of no handshake's: raft_malloc'd. */
static void
free_handle(uv_handle_t *handle)
{
	raft_free(handle);
}

/*
 * End the handshake: count and log why, close its handles (a connect
 * request's callback fires once they are closed).  Once only.
 */
static void
ts_raft_handshake_fail(TsRaftHandshake *hs, TsHsFailure failure, const char *why)
{
	TsRaftTransport *t = hs->transport;

	if (hs->phase == TS_HS_HANDED_OVER || hs->phase == TS_HS_FAILED)
		return;
	hs->phase = TS_HS_FAILED;
	hs->status = failure == TS_HS_FAIL_CANCELED ? RAFT_CANCELED : RAFT_NOCONNECTION;
	if (failure != TS_HS_FAIL_CANCELED)
	{
		TsRaftTransportStats *s = &t->stats;

		if (hs->connector)
		{
			s->out_failed++;
			s->out_bad_proof += failure == TS_HS_FAIL_BAD_PROOF;
			s->out_timeout += failure == TS_HS_FAIL_TIMEOUT;
		}
		else
		{
			s->in_failed++;
			s->in_bad_proof += failure == TS_HS_FAIL_BAD_PROOF;
			s->in_timeout += failure == TS_HS_FAIL_TIMEOUT;
		}

		/*
		 * A peer that is down is retried every connect retry delay: that
		 * is a debug line.  Anything else is a warning: a wrong proof is
		 * another secret, or an attack.
		 */
		ts_log(hs->connector && failure == TS_HS_FAIL_OTHER ? TS_LOG_DEBUG : TS_LOG_WARNING,
			   "raft member %llu: %s raft connection %s id %llu at %s (TCP %s) %s: %s",
			   (unsigned long long) t->id, hs->connector ? "outgoing" : "incoming",
			   hs->connector ? "to" : "from", (unsigned long long) hs->peer_id,
			   hs->peer_address[0] != '\0' ? hs->peer_address : "?", hs->peer_ip,
			   failure == TS_HS_FAIL_BAD_PROOF ? "refused" : "failed", why);
	}
	uv_close((uv_handle_t *) &hs->deadline, handshake_handle_closed);
	if (hs->stream != NULL)
	{
		hs->stream->data = hs;
		uv_close((uv_handle_t *) hs->stream, handshake_handle_closed);
	}
}

/* ---- success ---- */

/*
 * A proven peer that asked for this member's state (its claimed address
 * TS_RAFT_FETCH_PREFIX...): its socket, blocking, to the fetch callback,
 * which owns it; the stream itself closed.
 */
static void
hand_over_fetch(TsRaftTransport *t, uint64_t peer_id, uv_stream_t *stream)
{
	uv_os_fd_t	fd = -1;
	int			copy = -1;

	if (t->fetch_cb != NULL && uv_fileno((uv_handle_t *) stream, &fd) == 0)
		copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy >= 0 && fcntl(copy, F_SETFL, fcntl(copy, F_GETFL) & ~O_NONBLOCK) != 0)
	{
		close(copy);
		copy = -1;
	}
	uv_close((uv_handle_t *) stream, free_handle);
	if (copy < 0)
	{
		ts_log(TS_LOG_WARNING, "raft member %llu: member %llu asked for this member's state, "
			   "which it cannot serve", (unsigned long long) t->id, (unsigned long long) peer_id);
		return;
	}
	t->stats.in_ok++;
	t->fetch_cb(t->fetch_arg, copy, peer_id);
}

/*
 * Both proofs are right and our writes are done: hand the stream to
 * libraft.  It must be idle (no read active, no write of ours pointing
 * into hs) and hold no pointer of ours: libraft sets its data, reads or
 * writes at once, and closes and frees it itself.
 */
static void
handshake_hand_over(TsRaftHandshake *hs)
{
	TsRaftTransport *t = hs->transport;
	uv_stream_t *stream = (uv_stream_t *) hs->stream;

	assert(hs->phase == TS_HS_PROVEN && hs->writes_pending == 0);
	assert(!t->closing);		/* closing fails every handshake not handed over */
	hs->phase = TS_HS_HANDED_OVER;
	uv_read_stop(stream);		/* stopped already, by the last read */
	stream->data = NULL;
	hs->stream = NULL;
	hs->handles_open--;
	/* hs is freed once its deadline is closed, on a later iteration */
	uv_close((uv_handle_t *) &hs->deadline, handshake_handle_closed);
	ts_log(TS_LOG_INFO, "raft member %llu: %s raft connection %s id %llu at %s (TCP %s) proven",
		   (unsigned long long) t->id, hs->connector ? "outgoing" : "incoming",
		   hs->connector ? "to" : "from", (unsigned long long) hs->peer_id,
		   hs->peer_address, hs->peer_ip);
	if (hs->connector)
	{
		struct raft_uv_connect *request = hs->request;

		hs->request = NULL;
		t->stats.out_ok++;
		request->cb(request, stream, 0);
	}
	else if (strncmp(hs->peer_address, TS_RAFT_FETCH_PREFIX, strlen(TS_RAFT_FETCH_PREFIX)) == 0)
		hand_over_fetch(t, hs->peer_id, stream);
	else
	{
		t->stats.in_ok++;
		/* libraft copies the address */
		t->accept_cb(t->raft_transport, hs->peer_id, hs->peer_address, stream);
	}
}

/*
 * The peer's last message can come before our last write's callback has
 * run: hand over only when both are done, or libuv would later call that
 * callback on a freed handshake.
 */
static void
ts_raft_handshake_maybe_hand_over(TsRaftHandshake *hs)
{
	if (hs->phase == TS_HS_PROVEN && hs->writes_pending == 0)
		handshake_hand_over(hs);
}

static void
deadline_passed(uv_timer_t *timer)
{
	ts_raft_handshake_fail(timer->data, TS_HS_FAIL_TIMEOUT, "no handshake within the deadline");
}

/* ---- accepting and connecting ---- */

/* A new handshake, its deadline made but not started; NULL if out of memory. */
static TsRaftHandshake *
handshake_new(TsRaftTransport *t, bool connector)
{
	TsRaftHandshake *hs = calloc(1, sizeof(TsRaftHandshake));

	if (hs == NULL || tc_auth_make_nonce(hs->own_nonce) != 0)
	{
		free(hs);
		return NULL;
	}
	hs->transport = t;
	hs->connector = connector;
	snprintf(hs->peer_ip, sizeof(hs->peer_ip), "?");
	uv_timer_init(t->loop, &hs->deadline);
	hs->deadline.data = hs;
	hs->handles_open = 1;
	hs->next = t->handshakes;
	if (t->handshakes != NULL)
		t->handshakes->prev = hs;
	t->handshakes = hs;
	if (!connector)
		t->incoming++;
	t->stats.pending++;
	return hs;
}

/* The TCP handle a TLS relay took the place of, closed: raft_malloc'd. */
static void
replaced_tcp_closed(uv_handle_t *handle)
{
	TsRaftHandshake *hs = handle->data;

	raft_free(handle);
	hs->handles_open--;
	handshake_maybe_free(hs);
}

/*
 * With TLS, TCP up: hand the socket to a relay (ts_raft_tls.c) and go on
 * on the clear end of its pair, a pipe of the same raft_malloc'd kind, in
 * the TCP handle's place.  Without TLS, nothing to do.  false if the
 * handshake failed.
 */
static bool
handshake_start_tls(TsRaftHandshake *hs)
{
	TsRaftTransport *t = hs->transport;
	uv_handle_t *tcp = (uv_handle_t *) hs->stream;
	uv_pipe_t  *pipe;
	uv_os_fd_t	fd;
	int			copy = -1;
	int			plain;

	if (t->tls == NULL)
		return true;
	if ((pipe = raft_malloc(sizeof(uv_pipe_t))) == NULL ||
		uv_fileno(tcp, &fd) != 0 || (copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
	{
		raft_free(pipe);
		ts_raft_handshake_fail(hs, TS_HS_FAIL_OTHER, "could not start TLS");
		return false;
	}
	/* the socket lives on in copy, the relay's */
	tcp->data = hs;
	uv_close(tcp, replaced_tcp_closed);
	uv_pipe_init(t->loop, pipe, 0);
	pipe->data = hs;
	hs->handles_open++;
	hs->stream = (uv_stream_t *) pipe;
	plain = ts_raft_tls_relay(t->tls, copy, hs->connector, t->handshake_ms, t->id, hs->peer_ip,
							  true);
	if (plain < 0 || uv_pipe_open(pipe, plain) != 0)
	{
		if (plain >= 0)
			close(plain);
		ts_raft_handshake_fail(hs, TS_HS_FAIL_OTHER, "could not start TLS");
		return false;
	}
	return true;
}

static void
listener_accept(uv_stream_t *listener, int status)
{
	TsRaftTransport *t = listener->data;
	TsRaftHandshake *hs;
	uv_tcp_t   *tcp;

	if (status < 0)
	{
		ts_log(TS_LOG_WARNING, "raft member %llu: could not accept on %s: %s",
			   (unsigned long long) t->id, t->address, uv_strerror(status));
		return;
	}
	if (t->closing)
		return;
	/* libraft frees the stream with raft_free: it must be raft_malloc's */
	if ((tcp = raft_malloc(sizeof(uv_tcp_t))) == NULL)
		return;
	uv_tcp_init(t->loop, tcp);
	if (uv_accept(listener, (uv_stream_t *) tcp) != 0)
	{
		uv_close((uv_handle_t *) tcp, free_handle);
		return;
	}

	/*
	 * Unproven connections cost memory and a descriptor until their
	 * deadline: past the cap, they are closed at once.
	 */
	if (t->incoming >= TS_RAFT_HANDSHAKES_MAX || (hs = handshake_new(t, false)) == NULL)
	{
		char		ip[64];

		peer_ip_of(tcp, ip, sizeof(ip));
		t->stats.in_busy += t->incoming >= TS_RAFT_HANDSHAKES_MAX;
		ts_log(TS_LOG_WARNING, "raft member %llu: raft connection from %s closed: %s",
			   (unsigned long long) t->id, ip, t->incoming >= TS_RAFT_HANDSHAKES_MAX ?
			   "too many handshakes in progress" : "out of memory");
		uv_close((uv_handle_t *) tcp, free_handle);
		return;
	}
	hs->stream = (uv_stream_t *) tcp;
	tcp->data = hs;
	hs->handles_open++;
	uv_timer_start(&hs->deadline, deadline_passed, t->handshake_ms, 0);
	peer_ip_of(tcp, hs->peer_ip, sizeof(hs->peer_ip));
	if (handshake_start_tls(hs))
		ts_raft_handshake_start(hs);
}

static void
tcp_connected(uv_connect_t *req, int status)
{
	TsRaftHandshake *hs = req->data;

	if (hs->phase == TS_HS_FAILED)
		return;					/* UV_ECANCELED: closed by a deadline or close */
	if (status < 0)
	{
		ts_raft_handshake_fail(hs, TS_HS_FAIL_OTHER, uv_strerror(status));
		return;
	}
	peer_ip_of((uv_tcp_t *) hs->stream, hs->peer_ip, sizeof(hs->peer_ip));
	if (handshake_start_tls(hs))
		ts_raft_handshake_start(hs);
}

static void
listener_closed(uv_handle_t *handle)
{
	TsRaftTransport *t = handle->data;

	t->listener_closed = true;
	maybe_fire_close(t);
}

/* ---- libraft's interface ---- */

/*
 * The member's id and address, from raft_init.  libraft calls close only
 * if this succeeds, so nothing may be left open on failure: the listener
 * is made last.
 */
static int
transport_init(struct raft_uv_transport *raft_transport, raft_id id, const char *address)
{
	TsRaftTransport *t = raft_transport->impl;
	int			rc;

	if (strlen(address) >= TS_HS_ADDRESS_MAX || ts_raft_parse_address(address, &t->listen_addr) != 0)
	{
		set_errmsg(raft_transport, "the raft address \"%s\" is not \"a.b.c.d:port\"", address);
		return RAFT_INVALID;
	}
	/* the member listens where its peers reach it, never on every interface */
	if (t->listen_addr.sin_addr.s_addr == htonl(INADDR_ANY))
	{
		set_errmsg(raft_transport, "the raft address \"%s\" is every interface's, not one member's",
				   address);
		return RAFT_INVALID;
	}
	t->id = id;
	strcpy(t->address, address);	/* ours: the proofs and the log use it */
	rc = uv_tcp_init(t->loop, &t->listener);
	if (rc != 0)
	{
		set_errmsg(raft_transport, "uv_tcp_init: %s", uv_strerror(rc));
		return RAFT_IOERR;
	}
	t->listener.data = t;
	t->listener_made = true;
	return 0;
}

/* Listen on the member's own address (raft_start). */
static int
transport_listen(struct raft_uv_transport *raft_transport, raft_uv_accept_cb cb)
{
	TsRaftTransport *t = raft_transport->impl;
	int			rc;

	t->accept_cb = cb;
	rc = uv_tcp_bind(&t->listener, (struct sockaddr *) &t->listen_addr, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *) &t->listener, LISTEN_BACKLOG, listener_accept);
	if (rc != 0)
	{
		set_errmsg(raft_transport, "could not listen on %s: %s", t->address, uv_strerror(rc));
		return RAFT_IOERR;
	}
	return 0;
}

/*
 * Connect to a peer for libraft.  A failure returned here is retried by
 * libraft after its connect retry delay, and cb must then never be
 * called; after 0, cb is called once, with the proven stream or with a
 * failure (RAFT_CANCELED when the transport closes first).
 */
static int
transport_connect(struct raft_uv_transport *raft_transport, struct raft_uv_connect *request,
				  raft_id id, const char *address, raft_uv_connect_cb cb)
{
	TsRaftTransport *t = raft_transport->impl;
	struct sockaddr_in sa;
	TsRaftHandshake *hs;
	uv_tcp_t   *tcp;
	int			rc;

	if (t->closing)
	{
		set_errmsg(raft_transport, "closing");
		return RAFT_CANCELED;
	}
	if (strlen(address) >= TS_HS_ADDRESS_MAX || ts_raft_parse_address(address, &sa) != 0)
	{
		set_errmsg(raft_transport, "the raft address \"%s\" is not \"a.b.c.d:port\"", address);
		return RAFT_NOCONNECTION;
	}
	if ((hs = handshake_new(t, true)) == NULL)
	{
		set_errmsg(raft_transport, "out of memory");
		return RAFT_NOMEM;
	}
	hs->peer_id = id;
	strcpy(hs->peer_address, address);
	hs->phase = TS_HS_CONNECTING;
	request->cb = cb;
	/* handed to libraft, which frees it with raft_free */
	if ((tcp = raft_malloc(sizeof(uv_tcp_t))) == NULL)
		rc = UV_ENOMEM;
	else
	{
		uv_tcp_init(t->loop, tcp);
		hs->stream = (uv_stream_t *) tcp;
		tcp->data = hs;
		hs->handles_open++;
		hs->connect_req.data = hs;
		rc = uv_tcp_connect(&hs->connect_req, tcp, (struct sockaddr *) &sa, tcp_connected);
	}
	if (rc != 0)
	{
		/* hs->request is not set: cb is not called */
		ts_raft_handshake_fail(hs, TS_HS_FAIL_CANCELED, uv_strerror(rc));
		set_errmsg(raft_transport, "could not connect to %s: %s", address, uv_strerror(rc));
		return rc == UV_ENOMEM ? RAFT_NOMEM : RAFT_NOCONNECTION;
	}
	hs->request = request;
	/* the deadline covers the TCP connect: a peer dropping packets too */
	uv_timer_start(&hs->deadline, deadline_passed, t->handshake_ms, 0);
	return 0;
}

/*
 * Close (raft_close, after libraft closed its own streams): no accept_cb
 * from now on, every handshake in progress fails (a connect request's
 * callback gets RAFT_CANCELED), and cb fires once the last handle is
 * closed.
 */
static void
transport_close(struct raft_uv_transport *raft_transport, raft_uv_transport_close_cb cb)
{
	TsRaftTransport *t = raft_transport->impl;

	assert(!t->closing);
	t->closing = true;
	t->close_cb = cb;
	for (TsRaftHandshake *hs = t->handshakes; hs != NULL; hs = hs->next)
		ts_raft_handshake_fail(hs, TS_HS_FAIL_CANCELED, "closing");
	if (t->listener_made)
		uv_close((uv_handle_t *) &t->listener, listener_closed);
	maybe_fire_close(t);		/* fires here only if nothing was open */
}

/* ---- the module's interface ---- */

int
ts_raft_transport_init(struct raft_uv_transport *raft_transport, uv_loop_t *loop,
					   const void *secret, size_t secret_len, struct ssl_ctx_st *tls,
					   unsigned handshake_ms)
{
	TsRaftTransport *t;

	/* data is raft_uv_init's to set; the rest is ours */
	memset(raft_transport, 0, sizeof(*raft_transport));
#ifdef RAFT_VERSION_NUMBER
	/* 0.17.1 added both, and wants 1 (untested: Debian 12 has 0.15) */
	raft_transport->version = 1;
#endif
	if (secret == NULL || secret_len < TS_RAFT_SECRET_MIN || secret_len > TS_RAFT_SECRET_MAX)
	{
		set_errmsg(raft_transport, "the raft secret must be %d to %d bytes",
				   TS_RAFT_SECRET_MIN, TS_RAFT_SECRET_MAX);
		return RAFT_INVALID;
	}
	if ((t = calloc(1, sizeof(TsRaftTransport))) == NULL)
	{
		set_errmsg(raft_transport, "out of memory");
		return RAFT_NOMEM;
	}
	t->raft_transport = raft_transport;
	t->loop = loop;
	t->handshake_fail = ts_raft_handshake_fail;
	t->handshake_proven = ts_raft_handshake_maybe_hand_over;
	memcpy(t->secret, secret, secret_len);
	t->secret_len = secret_len;
	if (tls != NULL && SSL_CTX_up_ref(tls) == 1)
		t->tls = tls;
	else if (tls != NULL)
	{
		free(t);
		set_errmsg(raft_transport, "could not take the TLS context");
		return RAFT_NOMEM;
	}
	t->handshake_ms = handshake_ms != 0 ? handshake_ms : TS_RAFT_HANDSHAKE_MS;

	/*
	 * State hangs off impl: raft_uv_init takes data for itself, and takes
	 * it being set for the transport being initialised.
	 */
	raft_transport->impl = t;
	raft_transport->init = transport_init;
	raft_transport->listen = transport_listen;
	raft_transport->connect = transport_connect;
	raft_transport->close = transport_close;
	return 0;
}

void
ts_raft_transport_close(struct raft_uv_transport *raft_transport)
{
	TsRaftTransport *t = raft_transport->impl;

	if (t == NULL)
		return;
	assert(t->handshakes == NULL);
	SSL_CTX_free(t->tls);		/* relays still running hold their own */
	tc_auth_forget(t, sizeof(TsRaftTransport));
	free(t);
	raft_transport->impl = NULL;
}

void
ts_raft_transport_stats(struct raft_uv_transport *raft_transport, TsRaftTransportStats *stats)
{
	TsRaftTransport *t = raft_transport->impl;

	*stats = t->stats;
}

int
ts_raft_secret_load(const char *path, char secret[TS_RAFT_SECRET_MAX + 1], size_t *secret_len,
					char *err, size_t errlen)
{
	size_t		len = 0;

	if (tc_auth_read_token_file(path, true, secret, &len, err, errlen) != 0)
		return -1;
	if (len < TS_RAFT_SECRET_MIN)
	{
		tc_auth_forget(secret, len);
		snprintf(err, errlen, "the raft secret in \"%s\" is %zu bytes, fewer than %d",
				 path, len, TS_RAFT_SECRET_MIN);
		return -1;
	}
	*secret_len = len;
	return 0;
}

void
ts_raft_transport_on_fetch(struct raft_uv_transport *transport, TsRaftFetchCb cb, void *arg)
{
	TsRaftTransport *t = transport->impl;

	t->fetch_cb = cb;
	t->fetch_arg = arg;
}
