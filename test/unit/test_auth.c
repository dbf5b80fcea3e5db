/*
 * test_auth.c
 *		Unit tests of tc_auth: the HMAC against RFC 4231's vector, the
 *		handshake's proofs against a vector made independently (Perl's
 *		Digest::SHA over the transcript of tc_auth.h), the constant-time
 *		comparison's length check, nonces, and token files (the checks the
 *		tserver's startup depends on: mode, size, NUL, line ends); and the
 *		tserver's credentials (ts_auth): the scoped tokens file, finding
 *		the credential of a proof, the namespace check.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_auth.h"
#include "tc_test.h"
#include "ts_auth.h"

static char test_dir[] = "/tmp/test_auth.XXXXXX";

/* RFC 4231, test case 2. */
static void
test_compute_rfc4231(void)
{
	static const uint8_t expected[TC_AUTH_SIZE] = {
		0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26,
		0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83,
		0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43
	};
	const char *data = "what do ya want for nothing?";
	uint8_t		code[TC_AUTH_SIZE];

	REQUIRE(tc_auth_compute("Jefe", 4, (const uint8_t *) data, strlen(data), code));
	CHECK(memcmp(code, expected, TC_AUTH_SIZE) == 0);
	CHECK(tc_auth_matches(code, sizeof(code), expected));
	/* a prefix of the right answer, or a longer one, is wrong */
	CHECK(!tc_auth_matches(code, TC_AUTH_SIZE - 1, expected));
	CHECK(!tc_auth_matches(code, 0, expected));
	code[TC_AUTH_SIZE - 1] ^= 1;
	CHECK(!tc_auth_matches(code, sizeof(code), expected));
}

/*
 * The transcript: label with its NUL, server nonce, client nonce.  The
 * expected proofs were computed by Perl's Digest::SHA:
 *   hmac_sha256("tcopy v3 client proof\0" . $sn . $cn, $token)
 */
static void
test_prove_vector(void)
{
	static const uint8_t client_expected[TC_AUTH_SIZE] = {
		0x12, 0x45, 0x03, 0x5f, 0x45, 0x54, 0x40, 0xe8, 0x1f, 0x16, 0xc7, 0xd1,
		0xa4, 0xf9, 0xfd, 0x10, 0x6c, 0x4d, 0x3a, 0x8b, 0x9f, 0x90, 0xb3, 0x9e,
		0xe4, 0xd7, 0x84, 0x59, 0x75, 0x74, 0x6b, 0xbf
	};
	static const uint8_t server_expected[TC_AUTH_SIZE] = {
		0x3e, 0xae, 0x1e, 0x18, 0x02, 0x43, 0xc9, 0xd0, 0xab, 0xe9, 0xfa, 0x2a,
		0xa5, 0x05, 0xce, 0x95, 0x38, 0x8d, 0x63, 0xff, 0xd4, 0xed, 0x3d, 0xe2,
		0x46, 0xb8, 0x74, 0x1a, 0xa1, 0xf5, 0x9f, 0x8a
	};
	const char *token = "correct horse battery staple";
	uint8_t		server_nonce[TC_NONCE_SIZE];
	uint8_t		client_nonce[TC_NONCE_SIZE];
	uint8_t		proof[TC_AUTH_SIZE];
	uint8_t		other[TC_AUTH_SIZE];

	for (int i = 0; i < TC_NONCE_SIZE; i++)
	{
		server_nonce[i] = (uint8_t) i;
		client_nonce[i] = (uint8_t) (0x80 + i);
	}
	REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_CLIENT, server_nonce, client_nonce, NULL, proof));
	CHECK(memcmp(proof, client_expected, TC_AUTH_SIZE) == 0);
	REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_nonce, client_nonce, NULL, proof));
	CHECK(memcmp(proof, server_expected, TC_AUTH_SIZE) == 0);

	/* every input matters: the token, either nonce, the order of the nonces */
	REQUIRE(tc_auth_prove("correct horse battery stapler", 29, TC_AUTH_SERVER, server_nonce,
						  client_nonce, NULL, other));
	CHECK(memcmp(other, proof, TC_AUTH_SIZE) != 0);
	REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, client_nonce, server_nonce, NULL, other));
	CHECK(memcmp(other, proof, TC_AUTH_SIZE) != 0);
	client_nonce[TC_NONCE_SIZE - 1] ^= 1;
	REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_nonce, client_nonce, NULL, other));
	CHECK(memcmp(other, proof, TC_AUTH_SIZE) != 0);
	client_nonce[TC_NONCE_SIZE - 1] ^= 1;
	server_nonce[0] ^= 1;
	REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_nonce, client_nonce, NULL, other));
	CHECK(memcmp(other, proof, TC_AUTH_SIZE) != 0);

	/* bound to a TLS channel: another proof, and another for another certificate */
	{
		uint8_t		binding[TC_BINDING_SIZE];
		uint8_t		bound[TC_AUTH_SIZE];

		memset(binding, 0x42, sizeof(binding));
		REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_nonce, client_nonce,
							  binding, bound));
		CHECK(memcmp(bound, other, TC_AUTH_SIZE) != 0);
		binding[TC_BINDING_SIZE - 1] ^= 1;
		REQUIRE(tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_nonce, client_nonce,
							  binding, other));
		CHECK(memcmp(bound, other, TC_AUTH_SIZE) != 0);
	}
}

static void
test_nonces_differ(void)
{
	uint8_t		a[TC_NONCE_SIZE];
	uint8_t		b[TC_NONCE_SIZE];

	REQUIRE(tc_auth_make_nonce(a) == 0);
	REQUIRE(tc_auth_make_nonce(b) == 0);
	CHECK(memcmp(a, b, TC_NONCE_SIZE) != 0);
}

/* Write content (len bytes) to a file of mode; returns its path (static). */
static const char *
write_token(const void *content, size_t len, mode_t mode)
{
	static char path[256];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/token", test_dir);
	unlink(path);
	f = fopen(path, "w");
	if (f == NULL || fwrite(content, 1, len, f) != len || fclose(f) != 0 ||
		chmod(path, mode) != 0)
	{
		perror(path);
		exit(1);
	}
	return path;
}

/* Expect path refused (with owner_only) with a message containing want. */
static void
check_refused(const char *path, bool owner_only, const char *want, int line)
{
	char		token[TC_TOKEN_MAX + 1];
	size_t		len = 0;
	char		err[512] = "";

	tc_test_record(tc_auth_read_token_file(path, owner_only, token, &len, err, sizeof(err)) != 0,
				   __FILE__, line, "token file refused");
	if (!tc_test_record(strstr(err, want) != NULL, __FILE__, line, "refusal says why"))
		fprintf(stderr, "    \"%s\" lacks \"%s\"\n", err, want);
}

static void
test_token_file(void)
{
	char		token[TC_TOKEN_MAX + 1];
	char	   *big = malloc(TC_TOKEN_MAX + 2);
	size_t		len = 0;
	char		err[512];
	const char *path;

	REQUIRE(big != NULL);
	path = write_token("secret\r\n\n", 9, 0600);
	REQUIRE(tc_auth_read_token_file(path, true, token, &len, err, sizeof(err)) == 0);
	CHECK_EQ_UINT(len, 6);
	CHECK_EQ_STR(token, "secret");

	/* group or world access: refused when owner_only, taken otherwise */
	path = write_token("secret\n", 7, 0640);
	check_refused(path, true, "has group or world access (mode 0640)", __LINE__);
	CHECK(tc_auth_read_token_file(path, false, token, &len, err, sizeof(err)) == 0);
	CHECK_EQ_STR(token, "secret");

	path = write_token("\n", 1, 0600);
	check_refused(path, true, "is empty", __LINE__);
	path = write_token("ab\0cd", 5, 0600);
	check_refused(path, true, "contains a NUL byte", __LINE__);

	/* exactly TC_TOKEN_MAX bytes fit; one more does not */
	memset(big, 'x', TC_TOKEN_MAX + 1);
	path = write_token(big, TC_TOKEN_MAX, 0600);
	CHECK(tc_auth_read_token_file(path, true, token, &len, err, sizeof(err)) == 0);
	CHECK_EQ_UINT(len, TC_TOKEN_MAX);
	path = write_token(big, TC_TOKEN_MAX + 1, 0600);
	check_refused(path, true, "is longer than 4096 bytes", __LINE__);

	check_refused("/nonexistent/token", false, "could not open token file", __LINE__);
	unlink(path);
	free(big);
}

/* Write a scoped tokens file of mode; returns its path (static). */
static const char *
write_scoped(const char *content, mode_t mode)
{
	static char path[256];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/scoped", test_dir);
	unlink(path);
	f = fopen(path, "w");
	if (f == NULL || fputs(content, f) < 0 || fclose(f) != 0 || chmod(path, mode) != 0)
	{
		perror(path);
		exit(1);
	}
	return path;
}

/* Expect a scoped tokens file refused with a message containing want. */
static void
check_scoped_refused(const char *content, mode_t mode, const char *want, int line)
{
	TsCredentials creds = {0};
	char		err[512] = "";

	tc_test_record(ts_auth_read_scoped_tokens(&creds, write_scoped(content, mode), err,
											  sizeof(err)) != 0,
				   __FILE__, line, "scoped tokens file refused");
	if (!tc_test_record(strstr(err, want) != NULL, __FILE__, line, "refusal says why"))
		fprintf(stderr, "    \"%s\" lacks \"%s\"\n", err, want);
	ts_auth_free(&creds);
}

static void
test_scoped_tokens(void)
{
	TsCredentials creds = {0};
	uint8_t		server_nonce[TC_NONCE_SIZE];
	uint8_t		client_nonce[TC_NONCE_SIZE];
	uint8_t		proof[TC_AUTH_SIZE];
	const TsCredential *found;
	char		err[512];

	REQUIRE(ts_auth_add(&creds, NULL, (const uint8_t *) "admin", 5, err, sizeof(err)) == 0);
	REQUIRE(ts_auth_read_scoped_tokens(&creds,
									   write_scoped("# comment\n\n  db1.  token one  \r\n"
													"db2.\ttwo\n  # indented comment\nlast x", 0600),
									   err, sizeof(err)) == 0);
	REQUIRE(creds.n == 4);
	CHECK_EQ_STR(creds.items[1].namespace, "db1.");
	CHECK_EQ_UINT(creds.items[1].token_len, 9);
	CHECK(memcmp(creds.items[1].token, "token one", 9) == 0);
	CHECK_EQ_STR(creds.items[2].namespace, "db2.");
	CHECK(memcmp(creds.items[2].token, "two", 3) == 0 && creds.items[2].token_len == 3);
	CHECK_EQ_STR(creds.items[3].namespace, "last");

	/* the proof names its credential; a proof of no token names none */
	memset(server_nonce, 1, sizeof(server_nonce));
	memset(client_nonce, 2, sizeof(client_nonce));
	REQUIRE(tc_auth_prove("two", 3, TC_AUTH_CLIENT, server_nonce, client_nonce, NULL, proof));
	found = ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof));
	CHECK(found == &creds.items[2]);
	CHECK(ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof) - 1) == NULL);
	REQUIRE(tc_auth_prove("admin", 5, TC_AUTH_CLIENT, server_nonce, client_nonce, NULL, proof));
	found = ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof));
	CHECK(found == &creds.items[0] && found->namespace == NULL);
	/* the server's proof is no client's */
	REQUIRE(tc_auth_prove("admin", 5, TC_AUTH_SERVER, server_nonce, client_nonce, NULL, proof));
	CHECK(ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof)) == NULL);
	REQUIRE(tc_auth_prove("nobody's", 8, TC_AUTH_CLIENT, server_nonce, client_nonce, NULL, proof));
	CHECK(ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof)) == NULL);
	/* a proof bound to another channel (or to none) finds nothing */
	{
		uint8_t		binding[TC_BINDING_SIZE];
		uint8_t		elsewhere[TC_BINDING_SIZE];

		memset(binding, 1, sizeof(binding));
		memset(elsewhere, 2, sizeof(elsewhere));
		REQUIRE(tc_auth_prove("two", 3, TC_AUTH_CLIENT, server_nonce, client_nonce, binding, proof));
		CHECK(ts_auth_find(&creds, server_nonce, client_nonce, binding, proof, sizeof(proof)) != NULL);
		CHECK(ts_auth_find(&creds, server_nonce, client_nonce, elsewhere, proof, sizeof(proof)) == NULL);
		CHECK(ts_auth_find(&creds, server_nonce, client_nonce, NULL, proof, sizeof(proof)) == NULL);
	}

	/* a token given twice, here the admin's, is refused */
	CHECK(ts_auth_add(&creds, "db3.", (const uint8_t *) "admin", 5, err, sizeof(err)) != 0);
	CHECK(strstr(err, "the same token is given twice") != NULL);
	ts_auth_free(&creds);
	CHECK(creds.n == 0 && creds.items == NULL);

	check_scoped_refused("db1. t\n", 0640, "has group or world access (mode 0640)", __LINE__);
	check_scoped_refused("db1. t\n", 0604, "has group or world access", __LINE__);
	check_scoped_refused("ok t\ndb1.\n", 0600, ":2: expected NAMESPACE TOKEN, found no token", __LINE__);
	check_scoped_refused("a t\nb t\n", 0600, ":2: the same token is given twice", __LINE__);
	check_scoped_refused("# none\n", 0600, "holds no token", __LINE__);
	check_scoped_refused("d\xc3\xa9j\xc3\xa0 t\n", 0600, ":1: the namespace may only hold printable ASCII",
						 __LINE__);

	/* the namespace check is a prefix check of the table name */
	CHECK(ts_auth_scope_allows(NULL, 0, "anything"));
	CHECK(ts_auth_scope_allows("db1.", 4, "db1.public.t"));
	CHECK(ts_auth_scope_allows("db1.", 4, "db1."));
	CHECK(!ts_auth_scope_allows("db1.", 4, "db1"));
	CHECK(!ts_auth_scope_allows("db1.", 4, "db10.public.t"));
	CHECK(!ts_auth_scope_allows("db1.", 4, ""));
}

int
main(void)
{
	if (mkdtemp(test_dir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	TC_RUN(test_compute_rfc4231);
	TC_RUN(test_prove_vector);
	TC_RUN(test_nonces_differ);
	TC_RUN(test_token_file);
	TC_RUN(test_scoped_tokens);
	unlink(write_scoped("", 0600));
	rmdir(test_dir);
	return tc_test_summary();
}
