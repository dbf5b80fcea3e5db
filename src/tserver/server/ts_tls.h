/*
 * ts_tls.h
 *		The tserver's side of TLS on tcp: listeners: its context, from
 *		--tls-cert, --tls-key and --tls-ca, and the start of TLS on an
 *		accepted connection, before the first frame.
 *
 * With a certificate, every tcp: connection is TLS; unix: connections
 * never are.  A client that does not speak TLS sends nothing (it waits for
 * ServerHello), so a connection that stays silent for TS_TLS_PROBE_MS is
 * taken as a plaintext client and answered with a plaintext Error frame
 * naming sslmode, rather than left to time out.
 */
#ifndef TS_TLS_H
#define TS_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "tc_tls.h"

/*
 * How long a TLS client may take to send its ClientHello: it sends it
 * right after connecting, so this only has to cover a lost packet.
 */
#define TS_TLS_PROBE_MS 1500

/*
 * A server context: certificate chain and key (the key file owner-only),
 * and with ca_file, client certificates required and verified against it.
 * NULL with err.
 */
struct ssl_ctx_st *ts_tls_context_new(const char *cert_file, const char *key_file,
									  const char *ca_file, char *err, size_t errlen);
void		ts_tls_context_free(struct ssl_ctx_st *ctx);

/* What ts_tls_start found. */
typedef enum TsTlsStart
{
	TS_TLS_STARTED,				/* *tls is the connection's transport */
	TS_TLS_PLAINTEXT_PEER,		/* the client does not speak TLS */
	TS_TLS_TIMED_OUT,			/* no handshake within the receive timeout */
	TS_TLS_FAILED				/* err says why */
} TsTlsStart;

/*
 * Start TLS on fd, a blocking socket whose receive timeout bounds the
 * handshake.  err is set for every outcome but TS_TLS_STARTED.
 */
TsTlsStart	ts_tls_start(struct ssl_ctx_st *ctx, int fd, TcTls **tls,
						 char *err, size_t errlen);

#endif							/* TS_TLS_H */
