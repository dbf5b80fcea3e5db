/*
 * ts_raft_tls.c
 *		TLS on the raft port (ts_raft_transport.h): the group's context,
 *		and the relay that carries one connection's bytes between its TCP
 *		socket, in TLS, and a socket pair whose other end the transport
 *		(libuv, libraft, the state fetch) uses as if it were the TCP
 *		socket itself, in the clear.
 *
 * A relay is a thread of its own, blocked in poll: the handshake with the
 * group's secret, libraft's messages and a fetched state all go through
 * it unchanged, so that nothing above it knows TLS is there.  It ends when
 * either side closes, once what the other side still has to receive is
 * written: the end of a fetched state is never cut.  What a member
 * accepts as a peer (a certificate of the group's CA, then the group's
 * secret inside TLS) is in docs/security.md#the-raft-port.
 */
#include "ts_raft_transport_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tc_tls.h"
#include "ts_clock.h"
#include "ts_log.h"

#define RELAY_BUF 16384			/* a TLS record's payload */
#define RELAY_STACK (256 * 1024)

/* One connection's relay; the thread's own. */
typedef struct TsRaftRelay
{
	SSL_CTX    *ctx;			/* a reference of the relay's */
	int			tcp;			/* the peer's socket, in TLS */
	int			plain;			/* our end of the pair, in the clear */
	bool		connector;
	unsigned	handshake_ms;
	uint64_t	member_id;		/* this member's, for the log */
	char		peer[64];		/* the TCP peer, for the log */
} TsRaftRelay;

/* Relays still running: ts_raft_tls_wait waits for them at a stop. */
static atomic_int relays_running;

/* Say what failed to load, and OpenSSL's reason; clear its queue. */
static void
context_error(const char *what, const char *file, char *err, size_t errlen)
{
	const char *why = ERR_reason_error_string(ERR_peek_last_error());

	snprintf(err, errlen, "%s \"%s\": %s", what, file, why != NULL ? why : "unknown error");
	ERR_clear_error();
}

struct ssl_ctx_st *
ts_raft_tls_context(const char *cert_file, const char *key_file, const char *ca_file,
					char *err, size_t errlen)
{
	SSL_CTX    *ctx;

	if (tc_tls_check_key_file(key_file, "raft TLS key file (--raft-tls-key)", err, errlen) != 0)
		return NULL;
	ERR_clear_error();
	/* both roles: a member connects to its peers and accepts them */
	if ((ctx = SSL_CTX_new(TLS_method())) == NULL)
	{
		context_error("could not create a TLS context for", cert_file, err, errlen);
		return NULL;
	}
	tc_tls_context_defaults(ctx);	/* TLS 1.2 at least */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
		context_error("could not load the raft TLS certificate", cert_file, err, errlen);
	else if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
		context_error("could not load the raft TLS key", key_file, err, errlen);
	else if (SSL_CTX_check_private_key(ctx) != 1)
		context_error("the raft TLS key does not match the certificate", cert_file, err, errlen);
	else if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
		context_error("could not load the group's CA certificates", ca_file, err, errlen);
	else
	{
		STACK_OF(X509_NAME) * names = SSL_load_client_CA_file(ca_file);

		if (names != NULL)
			SSL_CTX_set_client_CA_list(ctx, names);
		ERR_clear_error();
		/* mutual: either side's certificate must chain to the group's CA */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
		return ctx;
	}
	SSL_CTX_free(ctx);
	return NULL;
}

void
ts_raft_tls_context_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

/* Why the handshake of ssl failed (SSL_get_error's e), in a user's words. */
static void
describe_failure(SSL *ssl, int e, char *why, size_t len)
{
	unsigned long code = ERR_peek_last_error();
	int			reason = ERR_GET_REASON(code);
	long		verify = SSL_get_verify_result(ssl);

	if (code != 0 && reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verify != X509_V_OK)
		snprintf(why, len, "its certificate is not of this group's CA (--raft-tls-ca): %s",
				 X509_verify_cert_error_string(verify));
	else if (code != 0 && (reason == SSL_R_WRONG_VERSION_NUMBER ||
						   reason == SSL_R_UNKNOWN_PROTOCOL ||
						   reason == SSL_R_HTTP_REQUEST ||
						   reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
						   reason == SSL_R_RECORD_LENGTH_MISMATCH))
		snprintf(why, len, "it does not speak TLS (a member started with "
				 "--raft-insecure-cleartext?): %s", ERR_reason_error_string(code));
	else if (code != 0)
		snprintf(why, len, "%s%s", ERR_reason_error_string(code) != NULL ?
				 ERR_reason_error_string(code) : "TLS error",
				 reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ?
				 " (it does not take this member's certificate as its group's)" : "");
	else if (e == SSL_ERROR_SYSCALL && errno != 0)
		snprintf(why, len, "%s", strerror(errno));
	else
		snprintf(why, len, "closed by the peer");
	ERR_clear_error();
}

/*
 * The TLS handshake, within the relay's deadline; false with why (empty
 * when the transport gave up on the connection first: nothing to log).
 */
static bool
relay_handshake(TsRaftRelay *r, SSL *ssl, char *why, size_t len)
{
	int64_t		deadline = ts_monotonic_ms() + r->handshake_ms;

	for (;;)
	{
		int			rc;
		int			e;
		int64_t		left;
		struct pollfd p[2];

		ERR_clear_error();
		errno = 0;
		rc = SSL_do_handshake(ssl);
		if (rc == 1)
			return true;
		e = SSL_get_error(ssl, rc);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
		{
			describe_failure(ssl, e, why, len);
			return false;
		}
		if ((left = deadline - ts_monotonic_ms()) <= 0)
		{
			snprintf(why, len, "no TLS handshake within the deadline");
			return false;
		}
		p[0] = (struct pollfd) {
			.fd = r->tcp, .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT
		};
		p[1] = (struct pollfd) {.fd = r->plain, .events = 0};	/* a hang-up only */
		if (poll(p, 2, (int) left) < 0 && errno != EINTR)
		{
			snprintf(why, len, "poll: %s", strerror(errno));
			return false;
		}
		if (p[1].revents & (POLLHUP | POLLERR))
		{
			why[0] = '\0';
			return false;
		}
	}
}

/*
 * Carry bytes both ways until a side closes; then write what the other
 * side still has to receive (a TLS close_notify after the last) and
 * return.  Both sockets are non-blocking; a buffer each way, refilled
 * only once written out, holds a peer that does not read.  In TLS 1.3 a
 * client's handshake ends before the server has checked its certificate:
 * a server that refuses it answers the first read with an alert, which
 * goes into why (empty otherwise).
 */
static void
relay_pump(TsRaftRelay *r, SSL *ssl, char *why, size_t len)
{
	bool		read_any = false;

	uint8_t		up[RELAY_BUF];	/* plain to TLS */
	uint8_t		down[RELAY_BUF];	/* TLS to plain */
	size_t		up_len = 0,
				up_off = 0,
				down_len = 0,
				down_off = 0;
	bool		plain_eof = false;
	bool		tls_eof = false;

	for (;;)
	{
		short		tcp_ev = 0;
		short		plain_ev = 0;
		bool		progress = false;
		struct pollfd p[2];

		if (!tls_eof && down_len == 0)
		{
			int			n = SSL_read(ssl, down, sizeof(down));

			if (n > 0)
			{
				down_len = (size_t) n;
				down_off = 0;
				read_any = true;
				progress = true;
			}
			else
			{
				int			e = SSL_get_error(ssl, n);

				if (e == SSL_ERROR_WANT_READ)
					tcp_ev |= POLLIN;
				else if (e == SSL_ERROR_WANT_WRITE)
					tcp_ev |= POLLOUT;
				else
				{
					/* close_notify, a reset, or an error */
					if (e == SSL_ERROR_SSL && !read_any)
						describe_failure(ssl, e, why, len);
					tls_eof = true;
					progress = true;
				}
			}
		}
		if (down_len > 0)
		{
			ssize_t		n = send(r->plain, down + down_off, down_len - down_off, MSG_NOSIGNAL);

			if (n > 0)
			{
				down_off += (size_t) n;
				if (down_off == down_len)
					down_len = 0;
				progress = true;
			}
			else if (n < 0 && (errno == EAGAIN || errno == EINTR))
				plain_ev |= POLLOUT;
			else
				return;			/* the transport closed its end */
		}
		if (tls_eof && down_len == 0)
			return;
		if (!plain_eof && up_len == 0)
		{
			ssize_t		n = recv(r->plain, up, sizeof(up), 0);

			if (n > 0)
			{
				up_len = (size_t) n;
				up_off = 0;
				progress = true;
			}
			else if (n == 0)
			{
				plain_eof = true;
				progress = true;
			}
			else if (errno == EAGAIN || errno == EINTR)
				plain_ev |= POLLIN;
			else
				return;
		}
		if (up_len > 0)
		{
			int			n = SSL_write(ssl, up + up_off, (int) (up_len - up_off));

			if (n > 0)
			{
				up_off += (size_t) n;
				if (up_off == up_len)
					up_len = 0;
				progress = true;
			}
			else
			{
				int			e = SSL_get_error(ssl, n);

				if (e == SSL_ERROR_WANT_READ)
					tcp_ev |= POLLIN;
				else if (e == SSL_ERROR_WANT_WRITE)
					tcp_ev |= POLLOUT;
				else
					return;
			}
		}
		if (plain_eof && up_len == 0)
		{
			(void) SSL_shutdown(ssl);	/* close_notify, if it fits */
			return;
		}
		if (progress)
			continue;
		/* a side with nothing to wait for is left out: its hang-up waits */
		p[0] = (struct pollfd) {.fd = tcp_ev != 0 ? r->tcp : -1, .events = tcp_ev};
		p[1] = (struct pollfd) {.fd = plain_ev != 0 ? r->plain : -1, .events = plain_ev};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return;
	}
}

static void *
relay_main(void *arg)
{
	TsRaftRelay *r = arg;
	SSL		   *ssl = SSL_new(r->ctx);
	char		why[512];

	if (ssl == NULL || SSL_set_fd(ssl, r->tcp) != 1)
		snprintf(why, sizeof(why), "could not start TLS");
	else
	{
		if (r->connector)
			SSL_set_connect_state(ssl);
		else
			SSL_set_accept_state(ssl);
		if (relay_handshake(r, ssl, why, sizeof(why)))
		{
			why[0] = '\0';
			relay_pump(r, ssl, why, sizeof(why));
		}
	}
	if (why[0] != '\0')
		ts_log(TS_LOG_WARNING, "raft member %llu: %s raft connection %s %s refused: %s",
			   (unsigned long long) r->member_id, r->connector ? "outgoing" : "incoming",
			   r->connector ? "to" : "from", r->peer, why);
	ERR_clear_error();
	SSL_free(ssl);
	close(r->tcp);
	close(r->plain);
	SSL_CTX_free(r->ctx);
	free(r);
	atomic_fetch_sub(&relays_running, 1);
	return NULL;
}

int
ts_raft_tls_relay(struct ssl_ctx_st *ctx, int tcp_fd, bool connector, unsigned handshake_ms,
				  uint64_t member_id, const char *peer, bool nonblocking)
{
	TsRaftRelay *r = calloc(1, sizeof(TsRaftRelay));
	int			pair[2] = {-1, -1};
	int			one = 1;
	pthread_attr_t attr;
	pthread_t	thread;
	int			rc;

	if (r == NULL ||
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0),
				   0, pair) != 0 ||
		fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK) != 0 ||
		fcntl(tcp_fd, F_SETFL, fcntl(tcp_fd, F_GETFL) | O_NONBLOCK) != 0)
		goto fail;
	(void) setsockopt(tcp_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	SSL_CTX_up_ref(ctx);
	r->ctx = ctx;
	r->tcp = tcp_fd;
	r->plain = pair[1];
	r->connector = connector;
	r->handshake_ms = handshake_ms;
	r->member_id = member_id;
	snprintf(r->peer, sizeof(r->peer), "%s", peer);
	atomic_fetch_add(&relays_running, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, RELAY_STACK);
	rc = pthread_create(&thread, &attr, relay_main, r);
	pthread_attr_destroy(&attr);
	if (rc == 0)
		return pair[0];
	atomic_fetch_sub(&relays_running, 1);
	SSL_CTX_free(ctx);

fail:
	free(r);
	if (pair[0] >= 0)
	{
		close(pair[0]);
		close(pair[1]);
	}
	close(tcp_fd);
	return -1;
}

void
ts_raft_tls_wait(unsigned timeout_ms)
{
	int64_t		deadline = ts_monotonic_ms() + timeout_ms;

	while (atomic_load(&relays_running) > 0 && ts_monotonic_ms() < deadline)
		usleep(10000);
}
