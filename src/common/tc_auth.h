/*
 * tc_auth.h
 *		Token authentication, both sides of it (no Postgres headers).
 *
 * Mutual authentication (protocol version 3, docs/protocol.md#handshake):
 * the tserver greets every connection with a fresh random nonce, a client
 * with a token adds one of its own and proves it knows the token; the
 * server answers with its proof, which the client checks before it sends
 * anything else.  Each proof is HMAC-SHA256 under the token of
 *
 *     label || server nonce (32 bytes) || client nonce (32 bytes)
 *
 * where label is TC_AUTH_CLIENT_LABEL or TC_AUTH_SERVER_LABEL, with its
 * NUL: both labels are the same length and the nonces fixed-length, so no
 * two different transcripts are the same bytes, a proof made for one
 * direction is never the other's, and one seen on a connection is
 * worthless on another (whose server nonce differs) or to a fake server
 * (whose client nonce differs).  The token itself never crosses the wire.
 *
 * Over TLS the transcript goes on with the channel binding (TC_BINDING_SIZE
 * bytes): the SHA-256 of the certificate the tserver presented, in DER,
 * as SCRAM-SHA-256-PLUS binds to tls-server-end-point (RFC 5929).  The
 * client hashes the certificate it received, the tserver its own: a proxy
 * that relays the connection under a certificate of its own, which
 * sslmode=require does not check, makes the two differ, and neither proof
 * holds.  A connection without TLS (a unix socket) binds nothing.
 * Tokens are held as C strings by clients (a user mapping option, a file
 * read by tserver-cli), so a token is 1 to TC_TOKEN_MAX bytes without a
 * NUL.
 */
#ifndef TC_AUTH_H
#define TC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_NONCE_SIZE 32		/* bytes of each side's nonce */
#define TC_AUTH_SIZE 32			/* bytes of a proof: HMAC-SHA256 */
#define TC_TOKEN_MAX 4096		/* bytes of a token */
#define TC_BINDING_SIZE 32		/* bytes of a TLS channel binding */

/* the proofs' labels: equal lengths, so the transcript is unambiguous */
#define TC_AUTH_CLIENT_LABEL "tcopy v3 client proof"
#define TC_AUTH_SERVER_LABEL "tcopy v3 server proof"

/* Whose proof a transcript is for. */
typedef enum TcAuthRole
{
	TC_AUTH_CLIENT,				/* HELLO.auth */
	TC_AUTH_SERVER				/* READY.auth */
} TcAuthRole;

/* Fill nonce with bytes from the kernel's random source; -1 with errno. */
int			tc_auth_make_nonce(uint8_t nonce[TC_NONCE_SIZE]);

/*
 * code = HMAC-SHA256(token, data): the primitive under tc_auth_prove.
 * Returns false when OpenSSL fails (code is then undefined).
 */
bool		tc_auth_compute(const void *token, size_t token_len,
							const uint8_t *data, size_t data_len,
							uint8_t code[TC_AUTH_SIZE]);

/*
 * proof = HMAC-SHA256(token, label of role || server_nonce || client_nonce
 * [|| binding]), the transcript above; binding NULL without TLS.  Returns
 * false when OpenSSL fails.
 */
bool		tc_auth_prove(const void *token, size_t token_len, TcAuthRole role,
						  const uint8_t server_nonce[TC_NONCE_SIZE],
						  const uint8_t client_nonce[TC_NONCE_SIZE],
						  const uint8_t *binding, uint8_t proof[TC_AUTH_SIZE]);

/*
 * Whether the peer's answer (code_len bytes) is expected, in time that
 * does not depend on where they differ.
 */
bool		tc_auth_matches(const uint8_t *code, size_t code_len,
							const uint8_t expected[TC_AUTH_SIZE]);

/* Overwrite a secret (a token, an expected answer) before it is freed. */
void		tc_auth_forget(void *secret, size_t len);

/*
 * Read a token file: its bytes without trailing line ends, into token as a
 * C string of *token_len bytes.  With owner_only, a file its group or
 * others may access is refused, as ssh refuses such keys: its token would
 * be no secret (the tserver asks for this; a client reading its own file
 * does not).  An empty token, one longer than TC_TOKEN_MAX or one with a
 * NUL byte is refused: no client could present it.  Returns 0, or -1 with
 * a message in err.
 */
int			tc_auth_read_token_file(const char *path, bool owner_only,
									char token[TC_TOKEN_MAX + 1],
									size_t *token_len, char *err, size_t errlen);

#endif							/* TC_AUTH_H */
