/*
 * test_address.c
 *		Unit tests of tc_address: parsing tserver addresses, the one
 *		test for the null: transport, and whether two addresses reach the
 *		same tserver.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_address.h"
#include "tc_test.h"

static void
test_address_parse_good(void)
{
	TcAddress	addr;
	char		err[256];

	REQUIRE(tc_address_parse("unix:/tmp/tcopy.sock", &addr, err, sizeof(err)));
	CHECK_EQ_INT(addr.kind, TC_ADDRESS_UNIX);
	CHECK_EQ_STR(addr.path, "/tmp/tcopy.sock");

	REQUIRE(tc_address_parse("unix:relative/s", &addr, err, sizeof(err)));
	CHECK_EQ_STR(addr.path, "relative/s");

	REQUIRE(tc_address_parse("tcp:localhost:5433", &addr, err, sizeof(err)));
	CHECK_EQ_INT(addr.kind, TC_ADDRESS_TCP);
	CHECK_EQ_STR(addr.host, "localhost");
	CHECK_EQ_STR(addr.port, "5433");

	REQUIRE(tc_address_parse("tcp:127.0.0.1:1", &addr, err, sizeof(err)));
	CHECK_EQ_STR(addr.host, "127.0.0.1");
	CHECK_EQ_STR(addr.port, "1");

	REQUIRE(tc_address_parse("tcp:[::1]:5433", &addr, err, sizeof(err)));
	CHECK_EQ_INT(addr.kind, TC_ADDRESS_TCP);
	CHECK_EQ_STR(addr.host, "::1");
	CHECK_EQ_STR(addr.port, "5433");

	REQUIRE(tc_address_parse("tcp:[fe80::1:2]:65535", &addr, err, sizeof(err)));
	CHECK_EQ_STR(addr.host, "fe80::1:2");
	CHECK_EQ_STR(addr.port, "65535");

	REQUIRE(tc_address_parse("null:", &addr, err, sizeof(err)));
	CHECK_EQ_INT(addr.kind, TC_ADDRESS_NULL);

	/* the longest path sun_path holds (107 bytes and its terminator) */
	{
		char		text[5 + 107 + 1];

		memcpy(text, "unix:", 5);
		memset(text + 5, 'p', 107);
		text[5 + 107] = '\0';
		REQUIRE(tc_address_parse(text, &addr, err, sizeof(err)));
		CHECK_EQ_UINT(strlen(addr.path), 107);
	}
}

/* Expect text to be refused with a message. */
static void
check_address_bad(const char *text, int line)
{
	TcAddress	addr;
	char		err[256];

	err[0] = '\0';
	if (!tc_test_record(!tc_address_parse(text, &addr, err, sizeof(err)),
						__FILE__, line, "address refused"))
		fprintf(stderr, "    \"%s\" was accepted\n", text);
	else
		tc_test_record(err[0] != '\0', __FILE__, line, "refusal has a message");
}

static void
test_address_parse_bad(void)
{
	char		long_path[5 + 108 + 1];
	char		long_host[4 + 300 + 6];

	memcpy(long_path, "unix:", 5);
	memset(long_path + 5, 'p', 108);
	long_path[5 + 108] = '\0';
	memcpy(long_host, "tcp:", 4);
	memset(long_host + 4, 'h', 300);
	strcpy(long_host + 304, ":5433");

	check_address_bad("", __LINE__);
	check_address_bad("unix:", __LINE__);
	check_address_bad(long_path, __LINE__);
	check_address_bad(long_host, __LINE__);
	check_address_bad("tcp:", __LINE__);
	check_address_bad("tcp:localhost", __LINE__);
	check_address_bad("tcp:localhost:", __LINE__);
	check_address_bad("tcp::5433", __LINE__);
	check_address_bad("tcp:[]:5433", __LINE__);
	check_address_bad("tcp:localhost:54x3", __LINE__);
	check_address_bad("tcp:localhost:-1", __LINE__);
	check_address_bad("tcp:localhost:65536", __LINE__);
	check_address_bad("tcp:localhost:99999", __LINE__);
	check_address_bad("tcp:localhost:12345678901234567890", __LINE__);
	check_address_bad("tcp:[::1]", __LINE__);
	check_address_bad("tcp:[::1:5433", __LINE__);
	check_address_bad("null:x", __LINE__);
	check_address_bad("null", __LINE__);
	check_address_bad("/tmp/tcopy.sock", __LINE__);
	check_address_bad("http://host:80", __LINE__);
}

/* tc_address_is_null agrees with what tc_address_parse calls null:. */
static void
test_address_is_null(void)
{
	const char *const texts[] = {
		"null:", "null", "null:x", "NULL:", " null:", "", "unix:null:",
		"tcp:null:1", "unix:/tmp/s"
	};

	CHECK(tc_address_is_null("null:"));
	CHECK(!tc_address_is_null(NULL));
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
	{
		TcAddress	addr;
		char		err[256];
		bool		parsed_null = tc_address_parse(texts[i], &addr, err, sizeof(err)) &&
			addr.kind == TC_ADDRESS_NULL;

		if (!tc_test_record(tc_address_is_null(texts[i]) == parsed_null,
							__FILE__, __LINE__, "is_null agrees with parse"))
			fprintf(stderr, "    \"%s\"\n", texts[i]);
	}
}

static void
test_address_same_server(void)
{
	char		dir[] = "/tmp/test_address.XXXXXX";
	char		sock[160];
	char		link_path[160];
	char		a[200];
	char		b[200];
	FILE	   *f;

	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(sock, sizeof(sock), "%s/ts.sock", dir);
	f = fopen(sock, "w");		/* a file stands in for the socket */
	REQUIRE(f != NULL);
	fclose(f);
	snprintf(link_path, sizeof(link_path), "%s/link.sock", dir);
	REQUIRE(symlink(sock, link_path) == 0);

	snprintf(a, sizeof(a), "unix:%s", sock);
	CHECK(tc_address_same_server(a, a));
	snprintf(b, sizeof(b), "unix:%s/./ts.sock", dir);
	CHECK(tc_address_same_server(a, b));
	snprintf(b, sizeof(b), "unix:%s", link_path);
	CHECK(tc_address_same_server(a, b));
	snprintf(b, sizeof(b), "unix:%s/other.sock", dir);
	CHECK(!tc_address_same_server(a, b));	/* not there: only the same text */

	CHECK(tc_address_same_server("tcp:127.0.0.1:5480", "tcp:127.0.0.1:5480"));
	CHECK(tc_address_same_server("tcp:localhost:5480", "tcp:127.0.0.1:5480"));
	CHECK(!tc_address_same_server("tcp:127.0.0.1:5480", "tcp:127.0.0.1:5481"));
	CHECK(!tc_address_same_server("tcp:127.0.0.1:5480", "tcp:127.0.0.2:5480"));
	CHECK(!tc_address_same_server("tcp:127.0.0.1:5480", a));
	CHECK(!tc_address_same_server("null:", a));

	unlink(link_path);
	unlink(sock);
	rmdir(dir);
}

int
main(void)
{
	TC_RUN(test_address_parse_good);
	TC_RUN(test_address_parse_bad);
	TC_RUN(test_address_is_null);
	TC_RUN(test_address_same_server);
	return tc_test_summary();
}
