/*
 * test_client.c
 *		Unit tests of the client library's connect when its wait hook does
 *		not return, as the extension's does when CHECK_FOR_INTERRUPTS
 *		serves a cancel (a longjmp): the half-open client the caller was
 *		handed closes without leaking what connect was holding, here the
 *		getaddrinfo result of a TCP connect still in progress.  The
 *		sanitizer build's leak checker (test/run_tests.sh) is what fails
 *		when it leaks.  The connect is kept in progress by a listener whose
 *		backlog is full, so that the kernel drops the SYN.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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
		(void) tc_client_connect_hooked(address, NULL, "test", cancelling_hook, NULL,
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

int
main(void)
{
	TC_RUN(test_cancel_during_tcp_connect);
	return tc_test_summary();
}
