/*
 * ts_tls.c
 *		The tserver's TLS context and the start of TLS on a connection.
 *		The transport itself (read, writev) is tc_tls's, shared with the
 *		client library.
 */
#include "ts_tls.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tc_net.h"

#define TLS_HANDSHAKE_RECORD 0x16	/* first byte of a ClientHello */

/* Fill err with what failed and OpenSSL's reason; clear its queue. */
static void
tls_context_error(const char *what, const char *file, char *err, size_t errlen)
{
	const char *why = ERR_reason_error_string(ERR_peek_last_error());

	snprintf(err, errlen, "%s \"%s\": %s", what, file, why != NULL ? why : "unknown error");
	ERR_clear_error();
}

struct ssl_ctx_st *
ts_tls_context_new(const char *cert_file, const char *key_file, const char *ca_file,
				   char *err, size_t errlen)
{
	SSL_CTX    *ctx;

	if (tc_tls_check_key_file(key_file, "TLS key file (--tls-key)", err, errlen) != 0)
		return NULL;
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL)
	{
		tls_context_error("could not create a TLS context for", cert_file, err, errlen);
		return NULL;
	}
	tc_tls_context_defaults(ctx);
	/* no resumption: connections are long-lived, and no ticket key to keep */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);

	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
	{
		tls_context_error("could not load the TLS certificate", cert_file, err, errlen);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1)
	{
		tls_context_error("could not load the TLS key", key_file, err, errlen);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1)
	{
		tls_context_error("the TLS key does not match the certificate", cert_file, err, errlen);
		goto fail;
	}
	if (ca_file != NULL)
	{
		STACK_OF(X509_NAME) * names;

		if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1 ||
			(names = SSL_load_client_CA_file(ca_file)) == NULL)
		{
			tls_context_error("could not load the client CA certificates", ca_file, err, errlen);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;

fail:
	SSL_CTX_free(ctx);
	return NULL;
}

void
ts_tls_context_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

/*
 * Whether the client speaks TLS: its first byte, once one arrives within
 * TS_TLS_PROBE_MS, opens a TLS handshake record.  A plaintext client of
 * ours sends nothing before ServerHello.
 */
static bool
tls_peer_speaks_tls(int fd)
{
	struct pollfd pfd = {.fd = fd,.events = POLLIN};
	unsigned char first;
	int			n;

	do
		n = poll(&pfd, 1, TS_TLS_PROBE_MS);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	do
		n = (int) recv(fd, &first, 1, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	/* EOF or an error: let the handshake report it */
	return n != 1 || first == TLS_HANDSHAKE_RECORD;
}

TsTlsStart
ts_tls_start(struct ssl_ctx_st *ctx, int fd, TcTls **tlsp, char *err, size_t errlen)
{
	TcTls	   *tls;
	int			rc;

	*tlsp = NULL;
	if (!tls_peer_speaks_tls(fd))
	{
		snprintf(err, errlen,
				 "this tserver accepts only TLS on tcp: connect with sslmode require, verify-ca or verify-full");
		return TS_TLS_PLAINTEXT_PEER;
	}
	tls = tc_tls_server_new(ctx, fd, err, errlen);
	if (tls == NULL)
		return TS_TLS_FAILED;
	rc = tc_tls_handshake(tls, err, errlen);
	if (rc == TC_NET_OK)
	{
		*tlsp = tls;
		return TS_TLS_STARTED;
	}
	tc_tls_free(tls);
	if (rc == TC_NET_AGAIN)
	{
		snprintf(err, errlen, "no TLS handshake within the handshake timeout");
		return TS_TLS_TIMED_OUT;
	}
	return TS_TLS_FAILED;
}
