/*
 * ts_auth.h
 *		The tserver's credentials: the tokens it accepts, each with the
 *		namespace it opens (docs/protocol.md#scoped-credentials).
 *
 * A credential is a token and a scope.  The --token-file token has full
 * access (namespace NULL); each line of --scoped-tokens gives a token that
 * reaches only the tables whose names start with its namespace.  A client
 * names no credential: the server tries its proof against every token, in
 * constant time each and without stopping at a match, so that neither the
 * answer's time nor its content says which tokens exist.
 */
#ifndef TS_AUTH_H
#define TS_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_auth.h"

#define TS_AUTH_MAX_CREDENTIALS 1024	/* each costs an HMAC per handshake */
#define TS_AUTH_SCOPED_FILE_MAX (1024 * 1024)	/* bytes of --scoped-tokens */

typedef struct TsCredential
{
	char	   *namespace;		/* prefix of the table names it reaches;
								 * NULL: full access */
	size_t		namespace_len;
	uint8_t    *token;			/* malloc'ed, token_len bytes, no NUL */
	size_t		token_len;		/* 1..TC_TOKEN_MAX */
} TsCredential;

typedef struct TsCredentials
{
	TsCredential *items;		/* [n] */
	size_t		n;
} TsCredentials;

/*
 * Add a credential (token copied; namespace NULL: full access).  A token
 * that another credential has already is refused: a proof must name one
 * scope.  Returns 0, or -1 with a message in err.
 */
int			ts_auth_add(TsCredentials *creds, const char *namespace,
						const uint8_t *token, size_t token_len,
						char *err, size_t errlen);

/*
 * Add the credentials of a scoped tokens file: see docs/protocol.md for
 * its syntax.  Like the token file, it must be accessible to its owner
 * only.  Returns 0, or -1 with a message in err naming the file and line.
 */
int			ts_auth_read_scoped_tokens(TsCredentials *creds, const char *path,
									   char *err, size_t errlen);

/*
 * The credential whose token made proof (the client's, tc_auth_prove over
 * the two nonces and, over TLS, the channel binding; else NULL), or NULL
 * when none did.  Every token is tried.
 */
const TsCredential *ts_auth_find(const TsCredentials *creds,
								 const uint8_t server_nonce[TC_NONCE_SIZE],
								 const uint8_t client_nonce[TC_NONCE_SIZE],
								 const uint8_t *binding,
								 const uint8_t *proof, size_t proof_len);

/* Whether a connection of scope (NULL: full access) may touch table name. */
bool		ts_auth_scope_allows(const char *scope, size_t scope_len, const char *name);

/* Forget every token and free everything; creds is empty again. */
void		ts_auth_free(TsCredentials *creds);

#endif							/* TS_AUTH_H */
