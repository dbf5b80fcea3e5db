/*
 * tc_tls.c
 *		TLS connections for both ends of a tcp: connection: the client's
 *		context from its sslmode and files, the handshake, and read and
 *		writev through OpenSSL.
 *
 * Performance: reads ask OpenSSL for whole records and, with read-ahead
 * and a 64 KiB read buffer, several records arrive per recv(2); a read
 * keeps taking records while OpenSSL holds some already (SSL_has_pending),
 * so that no caller waits on the socket for data that has arrived, and
 * returns before it would touch the socket again (the tserver's sockets
 * block).  Writes encrypt a record at a time (partial writes) straight
 * from the caller's buffer into the connection's out buffer, and send up
 * to TLS_OUT_RECORDS records with one send(2): a 1 MB batch would
 * otherwise cost 64 syscalls.  A small first iovec (a frame header) goes
 * in one record with the start of the next, through a fixed staging
 * buffer, instead of a 5-byte record of its own.  Nothing is allocated
 * per call.
 */
#include "tc_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tc_net.h"

#define TLS_RECORD_MAX 16384	/* plaintext bytes of one TLS record */
#define TLS_READ_BUFFER (64 * 1024) /* OpenSSL's read-ahead buffer */
#define TLS_RECORD_ROOM (TLS_RECORD_MAX + 512)	/* a record's bytes on the wire, at
												 * most: header, tag, padding */
#define TLS_OUT_RECORDS 8		/* records a write sends in one send(2) */

struct TcTls
{
	SSL		   *ssl;
	int			fd;
	SSL_CTX    *own_ctx;		/* a client's context, freed with it */
	bool		is_server;
	bool		want_write;		/* the last EAGAIN waits for writability */
	bool		handshake_done;
	bool		collecting;		/* the BIO appends records to out, see
								 * tc_tls_writev */
	unsigned char *out;			/* records not yet sent: [out_sent, out_len) */
	size_t		out_len;
	size_t		out_sent;
	size_t		out_consumed;	/* plaintext bytes those records carry, for
								 * the writev that sends their last byte */
	char		error[256];
	unsigned char stage[TLS_RECORD_MAX];	/* a small iovec and what follows */
};

static const char *const sslmode_names[] = {
	[TC_SSLMODE_DISABLE] = "disable",
	[TC_SSLMODE_REQUIRE] = "require",
	[TC_SSLMODE_VERIFY_CA] = "verify-ca",
	[TC_SSLMODE_VERIFY_FULL] = "verify-full",
};

bool
tc_tls_parse_sslmode(const char *text, TcSslMode *mode)
{
	for (size_t i = 0; i < sizeof(sslmode_names) / sizeof(sslmode_names[0]); i++)
	{
		if (strcmp(text, sslmode_names[i]) == 0)
		{
			*mode = (TcSslMode) i;
			return true;
		}
	}
	return false;
}

const char *
tc_tls_sslmode_name(TcSslMode mode)
{
	return sslmode_names[mode];
}

int
tc_tls_check_key_file(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) != 0)
	{
		snprintf(err, errlen, "could not access %s \"%s\": %s", what, path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode))
	{
		snprintf(err, errlen, "%s \"%s\" is not a regular file", what, path);
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO))
	{
		snprintf(err, errlen,
				 "%s \"%s\" has group or world access (mode %04o): it must be accessible to its owner only (chmod 600)",
				 what, path, (unsigned) (st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/*
 * Describe OpenSSL's error queue (and the verification result) into err,
 * in the words a user can act on, and clear the queue: the backend's own
 * TLS connection to its client shares this thread's queue.
 */
static void
tls_describe_error(TcTls *tls, int saved_errno, char *err, size_t errlen)
{
	unsigned long code = ERR_peek_last_error();
	int			reason = ERR_GET_REASON(code);
	const char *peer = tls->is_server ? "client" : "tserver";
	long		verify = tls->ssl != NULL ? SSL_get_verify_result(tls->ssl) : X509_V_OK;

	if (code == 0 && !tls->is_server &&
		(saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE))
		snprintf(err, errlen, "the tserver closed the TLS connection without a word: it "
				 "refuses a TLS client that way when too many connections are open "
				 "(--max-connections) or not yet authenticated (--max-unauthenticated); "
				 "its log says which");
	else if (code == 0)
		snprintf(err, errlen, "TLS error with no reason given%s%s",
				 saved_errno > 0 ? ": " : "", saved_errno > 0 ? strerror(saved_errno) : "");
	else if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verify != X509_V_OK)
		snprintf(err, errlen, "%s certificate verification failed: %s",
				 peer, X509_verify_cert_error_string(verify));
	else if (!tls->is_server && !tls->handshake_done &&
			 (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_UNKNOWN_PROTOCOL ||
			  reason == SSL_R_PACKET_LENGTH_TOO_LONG))
		snprintf(err, errlen,
				 "the tserver does not speak TLS (it answered in plain text): use sslmode disable for this tserver, or start it with --tls-cert and --tls-key");
	else if (tls->is_server && !tls->handshake_done &&
			 (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_HTTP_REQUEST ||
			  reason == SSL_R_UNKNOWN_PROTOCOL))
		snprintf(err, errlen, "the client does not speak TLS");
	else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
		snprintf(err, errlen, "the client presented no certificate, and --tls-ca requires one");
	else if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED)
		snprintf(err, errlen,
				 "the tserver requires a client certificate: set sslcert and sslkey");
	else if (reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
			 reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
			 reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR)
		snprintf(err, errlen, "the %s refused the %s certificate (%s)",
				 peer, tls->is_server ? "tserver" : "client", ERR_reason_error_string(code));
	else
	{
		const char *why = ERR_reason_error_string(code);

		snprintf(err, errlen, "TLS error: %s", why != NULL ? why : "unknown");
	}
	ERR_clear_error();
}

/*
 * After an SSL call returned ret: -1 with errno EAGAIN (want_write set),
 * EPROTO (message in tls->error) or the socket's errno; 0 at the end of
 * the stream.  saved_errno is errno as the call left it.
 */
static ssize_t
tls_failed(TcTls *tls, int ret, int saved_errno)
{
	switch (SSL_get_error(tls->ssl, ret))
	{
		case SSL_ERROR_WANT_READ:
			tls->want_write = false;
			errno = EAGAIN;
			return -1;
		case SSL_ERROR_WANT_WRITE:
			tls->want_write = true;
			errno = EAGAIN;
			return -1;
		case SSL_ERROR_ZERO_RETURN:
			ERR_clear_error();
			return 0;
		case SSL_ERROR_SYSCALL:
			ERR_clear_error();
			if (saved_errno == 0)
				return 0;		/* the peer closed without close_notify */
			errno = saved_errno;
			return -1;
		default:
			tls_describe_error(tls, saved_errno, tls->error, sizeof(tls->error));
			errno = EPROTO;
			return -1;
	}
}

static BIO_METHOD *tls_bio_method;
static pthread_once_t tls_bio_once = PTHREAD_ONCE_INIT;

/*
 * Send what out holds, as far as the socket takes it: 0 when all of it is
 * sent, -1 with errno (EAGAIN: the rest later).
 */
static int
tls_flush_out(TcTls *tls, int fd)
{
	while (tls->out_sent < tls->out_len)
	{
		ssize_t		n = send(fd, tls->out + tls->out_sent, tls->out_len - tls->out_sent,
							 MSG_NOSIGNAL);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		tls->out_sent += (size_t) n;
	}
	tls->out_len = tls->out_sent = 0;
	return 0;
}

/*
 * The socket BIO's write, with MSG_NOSIGNAL: a peer that hung up must fail
 * the write, not raise SIGPIPE in the caller's process (as postgres'
 * be-secure-openssl.c does for the same reason).  While tc_tls_writev
 * collects records they are appended to out instead (it leaves room for
 * one before each SSL_write), to go out several to a send(2); records
 * written otherwise (the handshake, alerts, key updates) go after them.
 */
static int
tls_bio_write(BIO *bio, const char *data, int len)
{
	TcTls	   *tls = BIO_get_data(bio);
	int			fd = -1;
	ssize_t		n;

	BIO_get_fd(bio, &fd);
	BIO_clear_retry_flags(bio);
	if (tls->collecting && tls->out_len + (size_t) len <= TLS_OUT_RECORDS * TLS_RECORD_ROOM)
	{
		memcpy(tls->out + tls->out_len, data, (size_t) len);
		tls->out_len += (size_t) len;
		return len;
	}
	if (tls->out_sent < tls->out_len && tls_flush_out(tls, fd) != 0)
	{
		if (BIO_sock_should_retry(-1))
			BIO_set_retry_write(bio);
		return -1;
	}
	n = send(fd, data, (size_t) len, MSG_NOSIGNAL);
	if (n < 0 && BIO_sock_should_retry((int) n))
		BIO_set_retry_write(bio);
	return (int) n;
}

static void
tls_bio_method_init(void)
{
	const BIO_METHOD *socket_method = BIO_s_socket();
	BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK |
									  BIO_TYPE_DESCRIPTOR, "tcopy socket");

	if (method == NULL ||
		!BIO_meth_set_write(method, tls_bio_write) ||
		!BIO_meth_set_read(method, BIO_meth_get_read(socket_method)) ||
		!BIO_meth_set_gets(method, BIO_meth_get_gets(socket_method)) ||
		!BIO_meth_set_puts(method, BIO_meth_get_puts(socket_method)) ||
		!BIO_meth_set_ctrl(method, BIO_meth_get_ctrl(socket_method)) ||
		!BIO_meth_set_create(method, BIO_meth_get_create(socket_method)) ||
		!BIO_meth_set_destroy(method, BIO_meth_get_destroy(socket_method)))
	{
		BIO_meth_free(method);
		method = NULL;
	}
	tls_bio_method = method;
}

/* Attach fd to tls->ssl through the BIO above; false on failure. */
static bool
tls_set_socket(TcTls *tls, int fd)
{
	BIO		   *bio;

	pthread_once(&tls_bio_once, tls_bio_method_init);
	if (tls_bio_method == NULL || (bio = BIO_new(tls_bio_method)) == NULL)
		return false;
	BIO_set_fd(bio, fd, BIO_NOCLOSE);
	BIO_set_data(bio, tls);
	SSL_set_bio(tls->ssl, bio, bio);
	return true;
}

/* A TcTls around a new SSL of ctx on fd; NULL with err. */
static TcTls *
tls_new(SSL_CTX *ctx, int fd, bool is_server, char *err, size_t errlen)
{
	TcTls	   *tls = calloc(1, sizeof(TcTls));

	if (tls == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	tls->is_server = is_server;
	tls->fd = fd;
	tls->out = malloc(TLS_OUT_RECORDS * TLS_RECORD_ROOM);
	tls->ssl = tls->out != NULL ? SSL_new(ctx) : NULL;
	if (tls->ssl == NULL || !tls_set_socket(tls, fd))
	{
		tls_describe_error(tls, -1, err, errlen);
		tc_tls_free(tls);
		return NULL;
	}
	if (is_server)
		SSL_set_accept_state(tls->ssl);
	else
		SSL_set_connect_state(tls->ssl);
	return tls;
}

void
tc_tls_context_defaults(struct ssl_ctx_st *ctx)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION |
						SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
					 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, TLS_READ_BUFFER);
}

/* The client's context for options; NULL with err. */
static SSL_CTX *
tls_client_context(const TcTlsOptions *options, char *err, size_t errlen)
{
	SSL_CTX    *ctx = SSL_CTX_new(TLS_client_method());
	const char *failed = NULL;

	if (ctx == NULL)
	{
		snprintf(err, errlen, "could not create a TLS context: %s",
				 ERR_reason_error_string(ERR_peek_last_error()));
		ERR_clear_error();
		return NULL;
	}
	tc_tls_context_defaults(ctx);
	if (options->sslmode >= TC_SSLMODE_VERIFY_CA)
	{
		if (options->sslrootcert != NULL)
		{
			if (SSL_CTX_load_verify_locations(ctx, options->sslrootcert, NULL) != 1)
				failed = "could not load the root certificates (sslrootcert)";
		}
		else if (SSL_CTX_set_default_verify_paths(ctx) != 1)
			failed = "could not load the system's trusted certificates";
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	if (failed == NULL && (options->sslcert != NULL) != (options->sslkey != NULL))
	{
		snprintf(err, errlen, "sslcert and sslkey go together: set both or neither");
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (failed == NULL && options->sslcert != NULL)
	{
		if (tc_tls_check_key_file(options->sslkey, "client key file (sslkey)",
								  err, errlen) != 0)
		{
			SSL_CTX_free(ctx);
			return NULL;
		}
		if (SSL_CTX_use_certificate_chain_file(ctx, options->sslcert) != 1)
			failed = "could not load the client certificate (sslcert)";
		else if (SSL_CTX_use_PrivateKey_file(ctx, options->sslkey, SSL_FILETYPE_PEM) != 1)
			failed = "could not load the client key (sslkey)";
		else if (SSL_CTX_check_private_key(ctx) != 1)
			failed = "the client key (sslkey) does not match the certificate (sslcert)";
	}
	if (failed != NULL)
	{
		unsigned long code = ERR_peek_last_error();
		const char *why = ERR_reason_error_string(code);

		snprintf(err, errlen, "%s: %s", failed, why != NULL ? why : "unknown error");
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

TcTls *
tc_tls_client_new(int fd, const TcTlsOptions *options, const char *host,
				  char *err, size_t errlen)
{
	SSL_CTX    *ctx;
	TcTls	   *tls;
	unsigned char ip[sizeof(struct in6_addr)];
	bool		is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;

	ERR_clear_error();
	ctx = tls_client_context(options, err, errlen);
	if (ctx == NULL)
		return NULL;
	tls = tls_new(ctx, fd, false, err, errlen);
	if (tls == NULL)
	{
		SSL_CTX_free(ctx);
		return NULL;
	}
	tls->own_ctx = ctx;
	/* SNI only for names (RFC 6066); verify-full checks name or address */
	if (!is_ip)
		SSL_set_tlsext_host_name(tls->ssl, host);
	if (options->sslmode == TC_SSLMODE_VERIFY_FULL)
	{
		X509_VERIFY_PARAM *param = SSL_get0_param(tls->ssl);
		int			ok;

		X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
			: X509_VERIFY_PARAM_set1_host(param, host, 0);
		if (ok != 1)
		{
			snprintf(err, errlen, "could not set the host name \"%s\" to verify", host);
			ERR_clear_error();
			tc_tls_free(tls);
			return NULL;
		}
	}
	return tls;
}

TcTls *
tc_tls_server_new(struct ssl_ctx_st *ctx, int fd, char *err, size_t errlen)
{
	ERR_clear_error();
	return tls_new(ctx, fd, true, err, errlen);
}

int
tc_tls_handshake(TcTls *tls, char *err, size_t errlen)
{
	int			ret;
	int			saved_errno;

	ERR_clear_error();
	errno = 0;
	ret = SSL_do_handshake(tls->ssl);
	saved_errno = errno;
	if (ret == 1)
	{
		tls->handshake_done = true;
		return TC_NET_OK;
	}
	switch (SSL_get_error(tls->ssl, ret))
	{
		case SSL_ERROR_WANT_READ:
			tls->want_write = false;
			return TC_NET_AGAIN;
		case SSL_ERROR_WANT_WRITE:
			tls->want_write = true;
			return TC_NET_AGAIN;
		case SSL_ERROR_SYSCALL:
			if (ERR_peek_last_error() != 0)
				break;
			if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)
			{
				/* a blocking socket's receive timeout */
				tls->want_write = false;
				errno = EAGAIN;
				return TC_NET_AGAIN;
			}
			if (saved_errno == 0 && tls->is_server)
				snprintf(err, errlen, "the client closed the connection during the TLS handshake");
			else if (saved_errno == 0 || saved_errno == ECONNRESET || saved_errno == EPIPE)
				snprintf(err, errlen, "the tserver closed the connection during the TLS "
						 "handshake: it refuses a TLS client that way when too many connections "
						 "are open (--max-connections) or not yet authenticated "
						 "(--max-unauthenticated); its log says which");
			else
				snprintf(err, errlen, "TLS handshake failed: %s", strerror(saved_errno));
			return TC_NET_ERR;
		default:
			break;
	}
	tls_describe_error(tls, saved_errno, err, errlen);
	return TC_NET_ERR;
}

ssize_t
tc_tls_read(TcTls *tls, void *buf, size_t len)
{
	size_t		got = 0;

	ERR_clear_error();
	do
	{
		size_t		n = 0;
		int			ret;
		int			saved_errno;

		errno = 0;
		ret = SSL_read_ex(tls->ssl, (char *) buf + got, len - got, &n);
		saved_errno = errno;
		if (ret != 1)
		{
			ssize_t		rc;

			if (got > 0)
			{
				/* report what came; the next call meets the condition again */
				ERR_clear_error();
				break;
			}
			rc = tls_failed(tls, ret, saved_errno);
			return rc;
		}
		got += n;
	} while (got < len && SSL_has_pending(tls->ssl));
	return (ssize_t) got;
}

/*
 * Encrypt the next record's worth of iov[*i] from *off (with what follows,
 * through the staging buffer, when that is short) into out; advance *i and
 * *off.  Returns the plaintext bytes taken, or -1 (with tls_failed's errno).
 */
static ssize_t
tls_write_record(TcTls *tls, const struct iovec *iov, int iovcnt, int *i, size_t *off)
{
	const void *data;
	size_t		len;
	size_t		written = 0;
	int			ret;
	int			saved_errno;

	if (*i + 1 < iovcnt && iov[*i].iov_len - *off < TLS_RECORD_MAX / 4)
	{
		/* a short piece (a frame header) goes in one record with the next */
		len = 0;
		for (int j = *i; j < iovcnt && len < sizeof(tls->stage); j++)
		{
			size_t		from = j == *i ? *off : 0;
			size_t		take = iov[j].iov_len - from;

			if (take > sizeof(tls->stage) - len)
				take = sizeof(tls->stage) - len;
			memcpy(tls->stage + len, (const char *) iov[j].iov_base + from, take);
			len += take;
		}
		data = tls->stage;
	}
	else
	{
		data = (const char *) iov[*i].iov_base + *off;
		len = iov[*i].iov_len - *off;
	}

	errno = 0;
	ret = SSL_write_ex(tls->ssl, data, len, &written);
	saved_errno = errno;
	if (ret != 1)
	{
		if (SSL_get_error(tls->ssl, ret) == SSL_ERROR_ZERO_RETURN ||
			tls_failed(tls, ret, saved_errno) == 0)
		{
			ERR_clear_error();
			errno = EPIPE;
		}
		return -1;
	}
	/* advance over what the record took, across iovecs */
	for (size_t left = written; left > 0 && *i < iovcnt;)
	{
		size_t		rest = iov[*i].iov_len - *off;

		if (left < rest)
		{
			*off += left;
			break;
		}
		left -= rest;
		(*i)++;
		*off = 0;
	}
	while (*i < iovcnt && iov[*i].iov_len == 0)
		(*i)++;
	return (ssize_t) written;
}

/*
 * Up to TLS_OUT_RECORDS records are encrypted into out, then sent with one
 * send(2) (a large batch would otherwise take a syscall per 16 KiB record).
 * The count returned covers only bytes whose records are all sent: when
 * the socket takes part of them, the call fails with EAGAIN, and the
 * caller's retry, with the same iovecs as it must, sends the rest first
 * and returns the count then, without encrypting anything again.
 */
ssize_t
tc_tls_writev(TcTls *tls, const struct iovec *iov, int iovcnt)
{
	size_t		consumed = 0;
	int			i = 0;
	size_t		off = 0;

	if (tls->out_sent < tls->out_len)
	{
		if (tls_flush_out(tls, tls->fd) != 0)
		{
			tls->want_write = true;
			return -1;
		}
		consumed = tls->out_consumed;
		tls->out_consumed = 0;
		return (ssize_t) consumed;
	}

	while (i < iovcnt && iov[i].iov_len == 0)
		i++;
	ERR_clear_error();
	tls->collecting = true;
	while (i < iovcnt && tls->out_len + TLS_RECORD_ROOM <= TLS_OUT_RECORDS * TLS_RECORD_ROOM)
	{
		ssize_t		n = tls_write_record(tls, iov, iovcnt, &i, &off);

		if (n < 0)
		{
			int			saved_errno = errno;

			tls->collecting = false;
			if (consumed == 0)
			{
				errno = saved_errno;
				return -1;
			}
			break;				/* send what was encrypted; the next call fails */
		}
		consumed += (size_t) n;
	}
	tls->collecting = false;

	if (tls_flush_out(tls, tls->fd) != 0)
	{
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		tls->out_consumed = consumed;
		tls->want_write = true;
		return -1;
	}
	return (ssize_t) consumed;
}

bool
tc_tls_has_pending(const TcTls *tls)
{
	return SSL_has_pending(tls->ssl) == 1;
}

bool
tc_tls_wants_write(const TcTls *tls)
{
	return tls->want_write;
}

bool
tc_tls_server_end_point(const TcTls *tls, uint8_t out[32])
{
	X509	   *cert = tls->is_server ? SSL_get_certificate(tls->ssl) :
		SSL_get0_peer_certificate(tls->ssl);
	unsigned int len = 0;

	return cert != NULL && X509_digest(cert, EVP_sha256(), out, &len) == 1 && len == 32;
}

const char *
tc_tls_error(const TcTls *tls)
{
	return tls->error;
}

void
tc_tls_describe(const TcTls *tls, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s %s", SSL_get_version(tls->ssl),
			 SSL_get_cipher_name(tls->ssl));
}

void
tc_tls_free(TcTls *tls)
{
	if (tls == NULL)
		return;
	if (tls->ssl != NULL)
		SSL_free(tls->ssl);
	if (tls->own_ctx != NULL)
		SSL_CTX_free(tls->own_ctx);
	free(tls->out);
	free(tls);
}
