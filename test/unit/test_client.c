/*
 * test_client.c
 *		Unit tests of the client library's connect when its wait hook does
 *		not return, as the extension's does when CHECK_FOR_INTERRUPTS
 *		serves a cancel (a longjmp): the half-open client the caller was
 *		handed closes without leaking what connect was holding, here the
 *		getaddrinfo result of a TCP connect still in progress.  The
 *		sanitizer build's leak checker (test/run_tests.sh) is what fails
 *		when it leaks.  The connect is kept in progress by a listener whose
 *		backlog is full, so that the kernel drops the SYN.  The same for a
 *		TLS handshake (the default sslmode) that a listener which never
 *		accepts leaves unanswered: the hook is left waiting to read, and
 *		close frees the TLS connection with the rest.  And a
 *		unix socket whose backlog is full: the hook is called for a pause
 *		(fd -1) before the connect is tried again, and may cancel there, or
 *		give up, which fails the connect with the hook's message.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tc_client.h"
#include "tc_test.h"

static jmp_buf cancel;
static int	waits;
static bool waited_to_write;
static TcClient *handed;		/* static: set before, read after the longjmp */

/* A wait hook that "serves a cancel" the first time it is called. */
static int
cancelling_hook(void *arg, TcClient *client, int fd, bool want_write)
{
	(void) arg;
	(void) client;
	(void) fd;
	waits++;
	waited_to_write = want_write;
	longjmp(cancel, 1);
}

static void
test_cancel_during_tcp_connect(void)
{
	struct sockaddr_in sin;
	socklen_t	len = sizeof(sin);
	int			listener = socket(AF_INET, SOCK_STREAM, 0);
	int			fillers[4];
	int			nfillers = 0;
	char		address[64];
	char		err[256];

	REQUIRE(listener >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(bind(listener, (struct sockaddr *) &sin, sizeof(sin)) == 0);
	REQUIRE(listen(listener, 0) == 0);
	REQUIRE(getsockname(listener, (struct sockaddr *) &sin, &len) == 0);
	/* fill the backlog: connections the listener never accepts */
	for (int i = 0; i < 4; i++)
	{
		int			fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		REQUIRE(fd >= 0);
		(void) connect(fd, (struct sockaddr *) &sin, sizeof(sin));
		fillers[nfillers++] = fd;
	}
	usleep(100 * 1000);
	snprintf(address, sizeof(address), "tcp:127.0.0.1:%u", (unsigned) ntohs(sin.sin_port));

	if (setjmp(cancel) == 0)
	{
		(void) tc_client_connect_hooked(address, NULL, NULL, "test", cancelling_hook, NULL,
										&handed, NULL, err, sizeof(err));
		CHECK(false);			/* the hook does not return */
	}
	CHECK_EQ_INT(waits, 1);
	CHECK(waited_to_write);		/* the hook ran in connect, not later */
	/* as tcopy_client_connect's PG_CATCH: close the client handed over */
	CHECK(handed != NULL);
	tc_client_close(handed);
	handed = NULL;
	for (int i = 0; i < nfillers; i++)
		close(fillers[i]);
	close(listener);
}

/* A hook that lets the connect through and "cancels" the first read wait. */
static int
cancel_reading_hook(void *arg, TcClient *client, int fd, bool want_write)
{
	(void) arg;
	(void) client;
	(void) fd;
	waits++;
	waited_to_write = want_write;
	if (want_write)
		return 0;
	longjmp(cancel, 1);
}

static void
test_cancel_during_tls_handshake(void)
{
	struct sockaddr_in sin;
	socklen_t	len = sizeof(sin);
	int			listener = socket(AF_INET, SOCK_STREAM, 0);
	char		address[64];
	char		err[256];
	TcTlsOptions tls = {.sslmode = TC_SSLMODE_REQUIRE};

	REQUIRE(listener >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(bind(listener, (struct sockaddr *) &sin, sizeof(sin)) == 0);
	REQUIRE(listen(listener, 4) == 0);
	REQUIRE(getsockname(listener, (struct sockaddr *) &sin, &len) == 0);
	snprintf(address, sizeof(address), "tcp:127.0.0.1:%u", (unsigned) ntohs(sin.sin_port));

	waits = 0;
	handed = NULL;
	if (setjmp(cancel) == 0)
	{
		(void) tc_client_connect_hooked(address, NULL, &tls, "test", cancel_reading_hook,
										NULL, &handed, NULL, err, sizeof(err));
		CHECK(false);			/* the hook does not return */
	}
	CHECK(waits >= 1);
	CHECK(!waited_to_write);	/* left waiting for the ServerHello */
	CHECK(handed != NULL);
	tc_client_close(handed);
	handed = NULL;
	close(listener);
}

static int	pauses;

/* A wait hook that gives up at the third pause, with a message. */
static int
giving_up_hook(void *arg, TcClient *client, int fd, bool want_write)
{
	(void) arg;
	(void) want_write;
	if (fd >= 0)
		return 0;
	if (++pauses < 3)
		return 0;
	tc_client_set_error(client, "gave up after %d pauses", pauses);
	return -1;
}

static void
test_unix_connect_backlog_full(void)
{
	char		dir[] = "/tmp/test_client.XXXXXX";
	char		address[160];
	char		err[512];
	struct sockaddr_un sun;
	int			listener = socket(AF_UNIX, SOCK_STREAM, 0);
	int			fillers[8];
	int			nfillers = 0;
	TcClient   *client;

	REQUIRE(listener >= 0);
	REQUIRE(mkdtemp(dir) != NULL);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/s", dir);
	REQUIRE(bind(listener, (struct sockaddr *) &sun, sizeof(sun)) == 0);
	REQUIRE(listen(listener, 1) == 0);
	/* fill the backlog: connections the listener never accepts */
	while (nfillers < 8)
	{
		int			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		REQUIRE(fd >= 0);
		if (connect(fd, (struct sockaddr *) &sun, sizeof(sun)) != 0)
		{
			close(fd);
			break;
		}
		fillers[nfillers++] = fd;
	}
	CHECK(nfillers < 8);
	snprintf(address, sizeof(address), "unix:%s", sun.sun_path);

	/* a cancel at the first pause: the handed client closes */
	waits = 0;
	if (setjmp(cancel) == 0)
	{
		(void) tc_client_connect_hooked(address, NULL, NULL, "test", cancelling_hook, NULL,
										&handed, NULL, err, sizeof(err));
		CHECK(false);			/* the hook does not return */
	}
	CHECK_EQ_INT(waits, 1);
	CHECK(handed != NULL);
	tc_client_close(handed);
	handed = NULL;

	/* a hook that gives up: the connect fails with its message */
	pauses = 0;
	CHECK_EQ_INT(tc_client_connect_hooked(address, NULL, NULL, "test", giving_up_hook, NULL,
										  &client, NULL, err, sizeof(err)), -1);
	CHECK(client == NULL);
	CHECK_EQ_INT(pauses, 3);
	CHECK(strcmp(err, "gave up after 3 pauses") == 0);

	for (int i = 0; i < nfillers; i++)
		close(fillers[i]);
	close(listener);
	unlink(sun.sun_path);
	rmdir(dir);
}

int
main(void)
{
	TC_RUN(test_cancel_during_tcp_connect);
	TC_RUN(test_cancel_during_tls_handshake);
	TC_RUN(test_unix_connect_backlog_full);
	return tc_test_summary();
}
