/*
 * tc_auth.h
 *		Token authentication, both sides of it (no Postgres headers).
 *
 * The tserver greets every connection with a fresh random nonce; a client
 * that knows the token answers HMAC-SHA256(token, nonce).  The token
 * itself never crosses the wire, and an answer seen on one connection is
 * worthless on another.  Tokens are held as C strings by clients (a user
 * mapping option, a file read by tserver-cli), so a token is 1 to
 * TC_TOKEN_MAX bytes without a NUL.
 */
#ifndef TC_AUTH_H
#define TC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_NONCE_SIZE 32		/* bytes of the server's nonce */
#define TC_AUTH_SIZE 32			/* bytes of the answer: HMAC-SHA256 */
#define TC_TOKEN_MAX 4096		/* bytes of a token */

/* Fill nonce with bytes from the kernel's random source; -1 with errno. */
int			tc_auth_make_nonce(uint8_t nonce[TC_NONCE_SIZE]);

/*
 * code = HMAC-SHA256(token, nonce).  Returns false when OpenSSL fails
 * (code is then undefined).
 */
bool		tc_auth_compute(const void *token, size_t token_len,
							const uint8_t *nonce, size_t nonce_len,
							uint8_t code[TC_AUTH_SIZE]);

/*
 * Whether the client's answer (code_len bytes) is expected, in time that
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
