/*
 * ts_raft_transport.h
 *		The raft port's transport (ts_raft_transport.c, its handshake in
 *		ts_raft_handshake.c): libraft 0.15's struct raft_uv_transport over
 *		TCP with libuv, every connection in TLS with the group's
 *		certificates (ts_raft_tls.c; or in the clear, if the member says
 *		so) and authenticated with the group's shared secret (HMAC-SHA256
 *		challenge and response, both ways) before libraft sees its stream.
 *
 * What the handshake proves, and what it does not, is in
 * docs/replication.md#security: the secret is the group's, so a peer that
 * passes is a member, not a particular member.  TLS (docs/security.md)
 * encrypts and authenticates everything, the handshake included; in the
 * clear, nothing after the handshake is.
 *
 * Like everything of libraft's, the transport is used on its loop's thread
 * only.  Its life follows the stock transport's (raft_uv_tcp_init and
 * raft_uv_tcp_close):
 *
 *	ts_raft_transport_init(&transport, loop, secret, len, tls, 0);
 *	raft_uv_init(&io, loop, dir, &transport); raft_init(...); raft_start(...);
 *	...
 *	raft_close(&raft, cb); in cb: raft_uv_close(&io);
 *								  ts_raft_transport_close(&transport);
 */
#ifndef TS_RAFT_TRANSPORT_H
#define TS_RAFT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tc_auth.h"

/* libraft's, libuv's and OpenSSL's types, named without their headers */
struct raft_uv_transport;
struct uv_loop_s;
struct ssl_ctx_st;

#define TS_RAFT_SECRET_MIN 32	/* bytes: 256 bits, HMAC-SHA256's key size */
#define TS_RAFT_SECRET_MAX TC_TOKEN_MAX	/* bytes; read as a token file */
#define TS_RAFT_HANDSHAKE_MS 5000	/* default deadline of a handshake */
#define TS_RAFT_HANDSHAKES_MAX 64	/* incoming handshakes at once; more are
									 * closed at once */

/* What the transport has done, since it started; copied on the loop thread. */
typedef struct TsRaftTransportStats
{
	uint64_t	in_ok;			/* incoming connections proven and passed on */
	uint64_t	in_failed;		/* incoming handshakes that failed, of which: */
	uint64_t	in_bad_proof;	/* the peer's proof was wrong (another secret) */
	uint64_t	in_timeout;		/* the deadline passed */
	uint64_t	in_busy;		/* closed at once: TS_RAFT_HANDSHAKES_MAX were
								 * in progress */
	uint64_t	out_ok;			/* outgoing connections proven */
	uint64_t	out_failed;		/* outgoing connections that failed, of which: */
	uint64_t	out_bad_proof;	/* the acceptor's proof was wrong */
	uint64_t	out_timeout;	/* the deadline (TCP connect included) passed */
	uint32_t	pending;		/* handshakes in progress now, both ways */
} TsRaftTransportStats;

/*
 * Fill transport with ours, keyed by a copy of secret (TS_RAFT_SECRET_MIN to
 * TS_RAFT_SECRET_MAX bytes), and with tls (ts_raft_tls_context; the
 * transport takes a reference) every connection in TLS, the handshake
 * inside it; tls NULL: in the clear.  handshake_ms bounds every
 * handshake, from the TCP connect or the accept to the stream handed to
 * libraft, TLS's included; 0: TS_RAFT_HANDSHAKE_MS.  The transport
 * listens on the member's own raft address, the one given to raft_init
 * ("a.b.c.d:port", never 0.0.0.0).  Returns 0, or a RAFT_* code with
 * transport->errmsg saying why.
 */
int			ts_raft_transport_init(struct raft_uv_transport *transport,
								   struct uv_loop_s *loop,
								   const void *secret, size_t secret_len,
								   struct ssl_ctx_st *tls, unsigned handshake_ms);

/*
 * Free what ts_raft_transport_init made, and wipe the secret: once libraft
 * has closed the transport (in raft_close's callback, after
 * raft_uv_close), or when raft_uv_init or raft_init failed.
 */
void		ts_raft_transport_close(struct raft_uv_transport *transport);

/* The counters so far; on the loop's thread. */
void		ts_raft_transport_stats(struct raft_uv_transport *transport,
									TsRaftTransportStats *stats);

/*
 * A member asks another for its state (a member too far behind the log
 * does, docs/replication.md#catching-up) over a connection to its raft
 * port, proven as any other, whose claimed address is this prefix and the
 * member's own: the acceptor hands such a connection to its fetch
 * callback instead of libraft.
 */
#define TS_RAFT_FETCH_PREFIX "fetch/"

/*
 * Called on the loop's thread with a proven fetch connection: fd is a
 * blocking socket, the callee's to close; peer_id the member that asked.
 */
typedef void (*TsRaftFetchCb) (void *arg, int fd, uint64_t peer_id);

/* Serve fetches with cb (NULL: close them); on the loop's thread, or before it runs. */
void		ts_raft_transport_on_fetch(struct raft_uv_transport *transport, TsRaftFetchCb cb,
									   void *arg);

/*
 * Connect to member peer_id at peer_address ("a.b.c.d:port") for its state,
 * and run the handshake, blocking, within timeout_ms: the proven socket
 * (blocking, close-on-exec), or -1 with errmsg.  Any thread, once the
 * transport is initialised; it only reads what init set.
 */
int			ts_raft_fetch_connect(struct raft_uv_transport *transport, uint64_t peer_id,
								  const char *peer_address, unsigned timeout_ms,
								  char *errmsg, size_t errlen);

/*
 * Read the group's secret from path, by the rules of the tserver's token
 * file (tc_auth_read_token_file): its owner's only (a file its group or
 * others may access is refused), trailing line ends dropped, no NUL byte;
 * and at least TS_RAFT_SECRET_MIN bytes.  Returns 0, or -1 with a message
 * naming the file in err.  The caller wipes secret (tc_auth_forget) once
 * the transport has its copy.
 */
int			ts_raft_secret_load(const char *path, char secret[TS_RAFT_SECRET_MAX + 1],
								size_t *secret_len, char *err, size_t errlen);

/*
 * The raft port's TLS context (ts_raft_tls.c): this member's certificate
 * chain and key (the key file its owner's only), and the group's CA, to
 * which every peer's certificate must chain, both ways (TLS 1.2 at
 * least); NULL with err naming the file.
 */
struct ssl_ctx_st *ts_raft_tls_context(const char *cert_file, const char *key_file,
									   const char *ca_file, char *err, size_t errlen);
void		ts_raft_tls_context_free(struct ssl_ctx_st *ctx);

/*
 * Wait up to timeout_ms for the TLS relays still running to end (they end
 * once the transport closed its side): before the process exits.
 */
void		ts_raft_tls_wait(unsigned timeout_ms);

#endif							/* TS_RAFT_TRANSPORT_H */
