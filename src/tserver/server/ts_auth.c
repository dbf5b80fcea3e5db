/*
 * ts_auth.c
 *		The tserver's credentials: adding them, reading a scoped tokens
 *		file, finding which one a client's proof was made with, and the
 *		namespace check of a table name.
 */
#include "ts_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "ts_storage_int.h"

int
ts_auth_add(TsCredentials *creds, const char *namespace, const uint8_t *token,
			size_t token_len, char *err, size_t errlen)
{
	TsCredential *grown;
	TsCredential *cred;

	if (token_len == 0 || token_len > TC_TOKEN_MAX)
	{
		snprintf(err, errlen, "a token must be 1 to %d bytes long", TC_TOKEN_MAX);
		return -1;
	}
	if (creds->n >= TS_AUTH_MAX_CREDENTIALS)
	{
		snprintf(err, errlen, "more than %d tokens", TS_AUTH_MAX_CREDENTIALS);
		return -1;
	}
	for (size_t i = 0; i < creds->n; i++)
	{
		if (creds->items[i].token_len == token_len &&
			CRYPTO_memcmp(creds->items[i].token, token, token_len) == 0)
		{
			snprintf(err, errlen, "the same token is given twice (%s and %s): "
					 "each token must open one scope",
					 creds->items[i].namespace ? "a scoped token" : "the --token-file token",
					 namespace ? "a scoped token" : "the --token-file token");
			return -1;
		}
	}
	grown = realloc(creds->items, (creds->n + 1) * sizeof(TsCredential));
	if (grown == NULL)
		goto oom;
	creds->items = grown;
	cred = &creds->items[creds->n];
	memset(cred, 0, sizeof(*cred));
	cred->token = malloc(token_len);
	if (cred->token == NULL)
		goto oom;
	if (namespace != NULL)
	{
		cred->namespace = strdup(namespace);
		if (cred->namespace == NULL)
		{
			free(cred->token);
			goto oom;
		}
		cred->namespace_len = strlen(namespace);
	}
	memcpy(cred->token, token, token_len);
	cred->token_len = token_len;
	creds->n++;
	return 0;

oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/*
 * Read the whole of path (at most TS_AUTH_SCOPED_FILE_MAX bytes, owner-only
 * access) into a malloc'ed, NUL-terminated buffer; NULL with err.
 */
static char *
auth_read_private_file(const char *path, size_t *lenp, char *err, size_t errlen)
{
	struct stat st;
	char	   *text = NULL;
	size_t		len = 0;
	int			fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		snprintf(err, errlen, "could not open scoped tokens file \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		snprintf(err, errlen, "could not stat scoped tokens file \"%s\": %s", path, strerror(errno));
		goto err;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO))
	{
		snprintf(err, errlen,
				 "scoped tokens file \"%s\" has group or world access (mode %04o): it must be accessible to its owner only (chmod 0600)",
				 path, (unsigned) (st.st_mode & 07777));
		goto err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > TS_AUTH_SCOPED_FILE_MAX)
	{
		snprintf(err, errlen, "scoped tokens file \"%s\" is not a regular file of at most %d bytes",
				 path, TS_AUTH_SCOPED_FILE_MAX);
		goto err;
	}
	text = malloc((size_t) st.st_size + 1);
	if (text == NULL)
	{
		snprintf(err, errlen, "out of memory");
		goto err;
	}
	while (len < (size_t) st.st_size)
	{
		ssize_t		n = read(fd, text + len, (size_t) st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			snprintf(err, errlen, "could not read scoped tokens file \"%s\": %s", path, strerror(errno));
			goto err;
		}
		if (n == 0)
			break;
		len += (size_t) n;
	}
	close(fd);
	text[len] = '\0';
	*lenp = len;
	return text;

err:
	if (text != NULL)
	{
		tc_auth_forget(text, len);
		free(text);
	}
	close(fd);
	return NULL;
}

/*
 * Add the credential of one line of a scoped tokens file (without its line
 * end; comments and blank lines are skipped).  0, or -1 with err.
 */
static int
auth_parse_scoped_line(TsCredentials *creds, char *line, size_t len, const char *path,
					   int lineno, char *err, size_t errlen)
{
	char	   *end = line + len;
	char	   *ns;
	char	   *token;
	char		adderr[256];

	while (line < end && (*line == ' ' || *line == '\t'))
		line++;
	while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (line == end || *line == '#')
		return 0;
	ns = line;
	while (line < end && *line != ' ' && *line != '\t')
	{
		if (*line < 0x21 || *line > 0x7e)
		{
			snprintf(err, errlen, "%s:%d: the namespace may only hold printable ASCII characters",
					 path, lineno);
			return -1;
		}
		line++;
	}
	if (line == end)
	{
		snprintf(err, errlen, "%s:%d: expected NAMESPACE TOKEN, found no token", path, lineno);
		return -1;
	}
	*line++ = '\0';
	if ((size_t) (line - 1 - ns) > TS_MAX_TABLE_NAME)
	{
		snprintf(err, errlen, "%s:%d: the namespace is longer than a table name may be (%d bytes)",
				 path, lineno, TS_MAX_TABLE_NAME);
		return -1;
	}
	while (line < end && (*line == ' ' || *line == '\t'))
		line++;
	token = line;
	if (memchr(token, '\0', (size_t) (end - token)) != NULL)
	{
		snprintf(err, errlen, "%s:%d: the token contains a NUL byte, which no client can send",
				 path, lineno);
		return -1;
	}
	if (ts_auth_add(creds, ns, (const uint8_t *) token, (size_t) (end - token),
					adderr, sizeof(adderr)) != 0)
	{
		snprintf(err, errlen, "%s:%d: %s", path, lineno, adderr);
		return -1;
	}
	return 0;
}

int
ts_auth_read_scoped_tokens(TsCredentials *creds, const char *path, char *err, size_t errlen)
{
	size_t		len = 0;
	size_t		added = creds->n;
	char	   *text = auth_read_private_file(path, &len, err, errlen);
	char	   *line;
	int			lineno = 0;
	int			result = 0;

	if (text == NULL)
		return -1;
	for (line = text; result == 0 && line < text + len;)
	{
		char	   *nl = memchr(line, '\n', (size_t) (text + len - line));
		size_t		linelen = nl != NULL ? (size_t) (nl - line) : (size_t) (text + len - line);

		lineno++;
		result = auth_parse_scoped_line(creds, line, linelen, path, lineno, err, errlen);
		line += linelen + 1;
	}
	if (result == 0 && creds->n == added)
	{
		snprintf(err, errlen, "scoped tokens file \"%s\" holds no token", path);
		result = -1;
	}
	tc_auth_forget(text, len);
	free(text);
	return result;
}

const TsCredential *
ts_auth_find(const TsCredentials *creds, const uint8_t server_nonce[TC_NONCE_SIZE],
			 const uint8_t client_nonce[TC_NONCE_SIZE], const uint8_t *binding,
			 const uint8_t *proof, size_t proof_len)
{
	const TsCredential *found = NULL;

	/* no early exit: the time taken does not depend on which token matched */
	for (size_t i = 0; i < creds->n; i++)
	{
		const TsCredential *cred = &creds->items[i];
		uint8_t		expected[TC_AUTH_SIZE];

		if (tc_auth_prove(cred->token, cred->token_len, TC_AUTH_CLIENT, server_nonce,
						  client_nonce, binding, expected) &&
			tc_auth_matches(proof, proof_len, expected) && found == NULL)
			found = cred;
		tc_auth_forget(expected, sizeof(expected));
	}
	return found;
}

bool
ts_auth_scope_allows(const char *scope, size_t scope_len, const char *name)
{
	return scope == NULL || strncmp(name, scope, scope_len) == 0;
}

void
ts_auth_free(TsCredentials *creds)
{
	for (size_t i = 0; i < creds->n; i++)
	{
		tc_auth_forget(creds->items[i].token, creds->items[i].token_len);
		free(creds->items[i].token);
		free(creds->items[i].namespace);
	}
	free(creds->items);
	creds->items = NULL;
	creds->n = 0;
}
