/*
 * tc_auth.c
 *		Token authentication: nonces, HMAC-SHA256 answers, token files.
 */
#include "tc_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

int
tc_auth_make_nonce(uint8_t nonce[TC_NONCE_SIZE])
{
	size_t		got = 0;

	while (got < TC_NONCE_SIZE)
	{
		ssize_t		n = getrandom(nonce + got, TC_NONCE_SIZE - got, 0);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t) n;
	}
	return 0;
}

bool
tc_auth_compute(const void *token, size_t token_len, const uint8_t *data,
				size_t data_len, uint8_t code[TC_AUTH_SIZE])
{
	uint8_t		md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (token_len > TC_TOKEN_MAX ||
		HMAC(EVP_sha256(), token, (int) token_len, data, data_len, md, &mdlen) == NULL ||
		mdlen != TC_AUTH_SIZE)
		return false;
	memcpy(code, md, TC_AUTH_SIZE);
	OPENSSL_cleanse(md, sizeof(md));
	return true;
}

bool
tc_auth_prove(const void *token, size_t token_len, TcAuthRole role,
			  const uint8_t server_nonce[TC_NONCE_SIZE],
			  const uint8_t client_nonce[TC_NONCE_SIZE], const uint8_t *binding,
			  uint8_t proof[TC_AUTH_SIZE])
{
	_Static_assert(sizeof(TC_AUTH_CLIENT_LABEL) == sizeof(TC_AUTH_SERVER_LABEL),
				   "the labels must be the same length for the transcript to be unambiguous");
	uint8_t		transcript[sizeof(TC_AUTH_CLIENT_LABEL) + 2 * TC_NONCE_SIZE + TC_BINDING_SIZE];
	size_t		len = sizeof(TC_AUTH_CLIENT_LABEL) + 2 * TC_NONCE_SIZE;

	/* each label with its NUL */
	memcpy(transcript, role == TC_AUTH_CLIENT ? TC_AUTH_CLIENT_LABEL : TC_AUTH_SERVER_LABEL,
		   sizeof(TC_AUTH_CLIENT_LABEL));
	memcpy(transcript + sizeof(TC_AUTH_CLIENT_LABEL), server_nonce, TC_NONCE_SIZE);
	memcpy(transcript + sizeof(TC_AUTH_CLIENT_LABEL) + TC_NONCE_SIZE, client_nonce,
		   TC_NONCE_SIZE);
	if (binding != NULL)
	{
		memcpy(transcript + len, binding, TC_BINDING_SIZE);
		len += TC_BINDING_SIZE;
	}
	return tc_auth_compute(token, token_len, transcript, len, proof);
}

bool
tc_auth_matches(const uint8_t *code, size_t code_len, const uint8_t expected[TC_AUTH_SIZE])
{
	/* the length is no secret: every right answer has the same */
	return code_len == TC_AUTH_SIZE &&
		CRYPTO_memcmp(code, expected, TC_AUTH_SIZE) == 0;
}

void
tc_auth_forget(void *secret, size_t len)
{
	/* unlike memset, not optimised away for memory about to be freed */
	OPENSSL_cleanse(secret, len);
}

/*
 * Read all of fd into token[TC_TOKEN_MAX], asking for one byte more than
 * fits so as to tell a token that is too long from one that fills it.
 */
static int
token_read_all(int fd, const char *path, char *token, size_t *len,
			   char *err, size_t errlen)
{
	*len = 0;
	for (;;)
	{
		char		overflow[1];
		char	   *into = *len < TC_TOKEN_MAX ? token + *len : overflow;
		size_t		room = *len < TC_TOKEN_MAX ? TC_TOKEN_MAX - *len : 1;
		ssize_t		n = read(fd, into, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			snprintf(err, errlen, "could not read token file \"%s\": %s", path, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		*len += (size_t) n;
		if (*len > TC_TOKEN_MAX)
		{
			snprintf(err, errlen, "token in \"%s\" is longer than %d bytes", path, TC_TOKEN_MAX);
			return -1;
		}
	}
}

int
tc_auth_read_token_file(const char *path, bool owner_only, char token[TC_TOKEN_MAX + 1],
						size_t *token_len, char *err, size_t errlen)
{
	struct stat st;
	size_t		len = 0;
	int			fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
	{
		snprintf(err, errlen, "could not open token file \"%s\": %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0)
	{
		snprintf(err, errlen, "could not stat token file \"%s\": %s", path, strerror(errno));
		goto err;
	}
	if (owner_only && (st.st_mode & (S_IRWXG | S_IRWXO)))
	{
		snprintf(err, errlen,
				 "token file \"%s\" has group or world access (mode %04o): it must be accessible to its owner only (chmod 0600)",
				 path, (unsigned) (st.st_mode & 07777));
		goto err;
	}
	if (token_read_all(fd, path, token, &len, err, errlen) != 0)
		goto err;
	close(fd);

	while (len > 0 && (token[len - 1] == '\n' || token[len - 1] == '\r'))
		len--;
	token[len] = '\0';
	if (len == 0)
	{
		snprintf(err, errlen, "token file \"%s\" is empty", path);
		return -1;
	}
	/* clients hold the token as a C string (a user mapping option) */
	if (memchr(token, '\0', len) != NULL)
	{
		tc_auth_forget(token, len);
		snprintf(err, errlen, "token in \"%s\" contains a NUL byte, which no client can send", path);
		return -1;
	}
	*token_len = len;
	return 0;

err:
	tc_auth_forget(token, TC_TOKEN_MAX + 1);
	close(fd);
	return -1;
}
