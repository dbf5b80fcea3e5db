/*
 * tc_tls.h
 *		TLS under the framing of tcp: connections, for both halves of tcopy
 *		(OpenSSL; no Postgres headers, no OpenSSL headers for callers).
 *
 * A TcTls is one TLS connection over a connected socket.  It is a thin
 * transport: tc_tls_read and tc_tls_writev stand in for read(2) and
 * writev(2), with the same return conventions, so that the frame reader
 * and the senders of both ends keep their buffers and loops.  On a
 * non-blocking socket they fail with errno EAGAIN, and tc_tls_wants_write
 * says which way to wait: TLS may need to write to read (a key update) or
 * to read to write.  Other failures set errno (EPROTO for a TLS error, the
 * message in tc_tls_error).  Where the TLS handshake sits in the protocol
 * is in docs/protocol.md.
 */
#ifndef TC_TLS_H
#define TC_TLS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* What a client demands of a tcp: connection, as libpq's sslmode. */
typedef enum TcSslMode
{
	TC_SSLMODE_DISABLE,			/* plain text */
	TC_SSLMODE_REQUIRE,			/* TLS, server certificate not checked */
	TC_SSLMODE_VERIFY_CA,		/* TLS, certificate signed by a trusted CA */
	TC_SSLMODE_VERIFY_FULL		/* and naming the host connected to */
} TcSslMode;

/*
 * The default: TLS without verification, as a tserver without a
 * certificate fails the connection with a message naming sslmode (no
 * plaintext fallback, no extra round trip).
 */
#define TC_SSLMODE_DEFAULT TC_SSLMODE_REQUIRE
#define TC_SSLMODE_NAMES "disable, require, verify-ca, verify-full"

/* A client's TLS settings; unix: connections ignore them. */
typedef struct TcTlsOptions
{
	TcSslMode	sslmode;
	const char *sslrootcert;	/* PEM CAs to verify the tserver with; NULL:
								 * the system's trusted CAs */
	const char *sslcert;		/* PEM client certificate (chain), or NULL */
	const char *sslkey;			/* its private key, owner-only; with sslcert */
} TcTlsOptions;

typedef struct TcTls TcTls;
struct ssl_ctx_st;				/* OpenSSL's SSL_CTX */

/* Parse "disable" ... "verify-full"; false when text is none of them. */
bool		tc_tls_parse_sslmode(const char *text, TcSslMode *mode);
const char *tc_tls_sslmode_name(TcSslMode mode);

/*
 * Check that a private key file exists and that neither group nor others
 * may access it (as libpq and the token file).  0, or -1 with err.
 */
int			tc_tls_check_key_file(const char *path, const char *what,
								  char *err, size_t errlen);

/*
 * A client's TLS connection over fd (connected) to host (the name the
 * user gave, checked against the certificate under verify-full), ready
 * for tc_tls_handshake.  NULL with err when the options or their files
 * are wrong.
 */
TcTls	   *tc_tls_client_new(int fd, const TcTlsOptions *options, const char *host,
							  char *err, size_t errlen);

/*
 * The settings of every context of tcopy's, client's or server's: TLS 1.2
 * at least, no renegotiation or compression, partial writes, read-ahead.
 */
void		tc_tls_context_defaults(struct ssl_ctx_st *ctx);

/* A server's TLS connection over fd (accepted) in ctx. */
TcTls	   *tc_tls_server_new(struct ssl_ctx_st *ctx, int fd, char *err, size_t errlen);

/*
 * Advance the handshake: TC_NET_OK when done, TC_NET_AGAIN when it must
 * wait (tc_tls_wants_write says for what), TC_NET_ERR with err.
 */
int			tc_tls_handshake(TcTls *tls, char *err, size_t errlen);

/* read(2) and writev(2) through TLS; see the file comment. */
ssize_t		tc_tls_read(TcTls *tls, void *buf, size_t len);
ssize_t		tc_tls_writev(TcTls *tls, const struct iovec *iov, int iovcnt);

/*
 * Whether OpenSSL holds bytes received already (a record, decrypted or
 * not), which the next tc_tls_read returns without waiting for the socket.
 */
bool		tc_tls_has_pending(const TcTls *tls);

/* After EAGAIN: wait for writability (true) or readability. */
bool		tc_tls_wants_write(const TcTls *tls);

/*
 * The channel binding of a connection whose handshake is done (tc_auth.h):
 * the SHA-256 of the server's certificate in DER, the one it presented (on
 * the server, its own).  false when there is none (no certificate).
 */
bool		tc_tls_server_end_point(const TcTls *tls, uint8_t out[32]);

/* Why the last call failed with EPROTO. */
const char *tc_tls_error(const TcTls *tls);

/* "TLSv1.3 TLS_AES_256_GCM_SHA384", for logs. */
void		tc_tls_describe(const TcTls *tls, char *out, size_t outlen);

/* Free tls (NULL is fine); the socket is the caller's to close. */
void		tc_tls_free(TcTls *tls);

#endif							/* TC_TLS_H */
