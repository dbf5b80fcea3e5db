/*
 * test_auth.c
 *		Unit tests of tc_auth: the HMAC against RFC 4231's vector, the
 *		constant-time comparison's length check, nonces, and token files
 *		(the checks the tserver's startup depends on: mode, size, NUL,
 *		line ends).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_auth.h"
#include "tc_test.h"

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

int
main(void)
{
	if (mkdtemp(test_dir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	TC_RUN(test_compute_rfc4231);
	TC_RUN(test_nonces_differ);
	TC_RUN(test_token_file);
	rmdir(test_dir);
	return tc_test_summary();
}
