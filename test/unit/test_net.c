/*
 * test_net.c
 *		Unit tests of tc_net: a unix and a TCP listener, connecting to each
 *		through a wait function, as the client library's hook (a unix
 *		listener whose backlog is full: pauses until the wait gives up),
 *		accepting, the peer's credentials, the stale-socket probe, address
 *		formatting, and the messages of failures.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netdb.h>

#include "tc_net.h"
#include "tc_test.h"

static int	waits;
static int	pauses;

/*
 * TcNetWaitFn: poll, as the client library's default hook does; a pause
 * (fd -1) gives up after *arg pauses when arg is given.
 */
static int
poll_wait(void *arg, int fd, bool want_write)
{
	struct pollfd pfd = {.fd = fd,.events = want_write ? POLLOUT : POLLIN};

	if (fd < 0)
	{
		pauses++;
		if (arg != NULL && pauses >= *(int *) arg)
			return -1;
		(void) poll(NULL, 0, 1);
		return 0;
	}
	waits++;
	return poll(&pfd, 1, 5000) == 1 ? 0 : -1;
}

static void
test_unix(void)
{
	char		dir[] = "/tmp/test_net.XXXXXX";
	char		path[128];
	char		name[160];
	char		err[256];
	struct sockaddr_storage ss;
	socklen_t	sslen;
	pid_t		pid;
	uid_t		uid;
	int			lfd;
	int			cfd;
	int			afd;

	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s", dir);
	snprintf(name, sizeof(name), "unix:%s", path);

	CHECK_EQ_INT(tc_net_unix_in_use(path, err, sizeof(err)), 0);
	CHECK_EQ_INT(tc_net_unix_connect(path, &cfd, poll_wait, NULL, name, err, sizeof(err)),
				 TC_NET_ERR);
	CHECK_EQ_INT(cfd, -1);
	CHECK(strstr(err, "could not connect to unix:/tmp/test_net.") != NULL);
	CHECK(strstr(err, ": No such file or directory") != NULL);

	lfd = tc_net_unix_listen(path, 0777, 4, err, sizeof(err));
	REQUIRE(lfd >= 0);
	CHECK_EQ_INT(tc_net_accept(lfd, &ss, &sslen, name, err, sizeof(err)), TC_NET_AGAIN);
	CHECK_EQ_INT(tc_net_unix_in_use(path, err, sizeof(err)), 1);
	/* the probe's connection is waiting: take it off */
	afd = tc_net_accept(lfd, &ss, &sslen, name, err, sizeof(err));
	CHECK(afd >= 0);
	close(afd);

	REQUIRE(tc_net_unix_connect(path, &cfd, poll_wait, NULL, name, err, sizeof(err)) == TC_NET_OK);
	REQUIRE(cfd >= 0);
	afd = tc_net_accept(lfd, &ss, &sslen, name, err, sizeof(err));
	REQUIRE(afd >= 0);
	REQUIRE(tc_net_peer_cred(afd, &pid, &uid));
	CHECK_EQ_INT(pid, getpid());
	CHECK_EQ_UINT(uid, getuid());
	CHECK(write(cfd, "x", 1) == 1);
	{
		char		c = 0;

		CHECK(read(afd, &c, 1) == 1 && c == 'x');
	}
	close(afd);
	close(cfd);
	close(lfd);
	unlink(path);

	/*
	 * A listener that never accepts, its backlog full: the connect pauses
	 * through the wait function (fd -1) and tries again until it gives up.
	 */
	lfd = tc_net_unix_listen(path, 0777, 1, err, sizeof(err));
	REQUIRE(lfd >= 0);
	{
		int			filler[8];
		int			nfillers = 0;
		int			give_up_after = 5;
		int			rc = TC_NET_OK;

		/* fill the backlog (its length is backlog + 1 on Linux) */
		while (nfillers < 8)
		{
			pauses = 0;
			rc = tc_net_unix_connect(path, &filler[nfillers], poll_wait, &give_up_after,
									 name, err, sizeof(err));
			if (rc != TC_NET_OK)
				break;
			nfillers++;
		}
		CHECK_EQ_INT(rc, TC_NET_ABANDONED);
		CHECK_EQ_INT(pauses, give_up_after);
		CHECK(nfillers >= 1 && nfillers < 8);
		if (rc == TC_NET_ABANDONED)
			close(filler[nfillers]);
		/* once one is accepted, the next connect gets through */
		afd = tc_net_accept(lfd, &ss, &sslen, name, err, sizeof(err));
		CHECK(afd >= 0);
		pauses = 0;
		CHECK_EQ_INT(tc_net_unix_connect(path, &cfd, poll_wait, &give_up_after,
										 name, err, sizeof(err)), TC_NET_OK);
		CHECK_EQ_INT(pauses, 0);
		close(cfd);
		close(afd);
		while (nfillers > 0)
			close(filler[--nfillers]);
	}
	close(lfd);
	unlink(path);

	/* a stale file: no one answers */
	lfd = tc_net_unix_listen(path, 0700, 4, err, sizeof(err));
	REQUIRE(lfd >= 0);
	close(lfd);
	CHECK_EQ_INT(tc_net_unix_in_use(path, err, sizeof(err)), 0);
	unlink(path);
	rmdir(dir);

	{
		char		long_path[200];

		memset(long_path, 'p', sizeof(long_path) - 1);
		long_path[sizeof(long_path) - 1] = '\0';
		CHECK_EQ_INT(tc_net_unix_listen(long_path, 0777, 4, err, sizeof(err)), TC_NET_ERR);
		CHECK(strstr(err, "is too long") != NULL);
	}
}

static void
test_tcp(void)
{
	struct addrinfo *addrs = NULL;
	struct sockaddr_storage ss;
	socklen_t	sslen;
	char		name[128];
	char		peer[128];
	char		err[256];
	int			lfd;
	int			cfd = -1;
	int			afd;
	const char *port;

	REQUIRE(tc_net_resolve("127.0.0.1", "0", true, "tcp:127.0.0.1:0", &addrs,
						   err, sizeof(err)) == TC_NET_OK);
	lfd = tc_net_tcp_listen(addrs, 4, "tcp:127.0.0.1:0", err, sizeof(err));
	freeaddrinfo(addrs);
	REQUIRE(lfd >= 0);
	REQUIRE(tc_net_local_address(lfd, name, sizeof(name)));
	CHECK(strncmp(name, "tcp:127.0.0.1:", 14) == 0);
	port = name + 14;
	CHECK(atoi(port) > 0);

	REQUIRE(tc_net_resolve("127.0.0.1", port, false, name, &addrs, err, sizeof(err)) == TC_NET_OK);
	waits = 0;
	CHECK_EQ_INT(tc_net_tcp_connect(addrs, &cfd, poll_wait, NULL, name, err, sizeof(err)),
				 TC_NET_OK);
	freeaddrinfo(addrs);
	REQUIRE(cfd >= 0);
	CHECK(waits <= 1);
	afd = tc_net_accept(lfd, &ss, &sslen, name, err, sizeof(err));
	REQUIRE(afd >= 0);
	tc_net_format_address((struct sockaddr *) &ss, sslen, peer, sizeof(peer));
	CHECK(strncmp(peer, "tcp:127.0.0.1:", 14) == 0);
	CHECK_EQ_INT(tc_net_set_nodelay(afd, err, sizeof(err)), TC_NET_OK);
	CHECK_EQ_INT(tc_net_set_keepalive(afd, err, sizeof(err)), TC_NET_OK);
	CHECK_EQ_INT(tc_net_set_recv_timeout(afd, 1, err, sizeof(err)), TC_NET_OK);
	close(afd);
	close(cfd);

	/* nothing listens any more: the connect fails, naming the address */
	close(lfd);
	REQUIRE(tc_net_resolve("127.0.0.1", port, false, name, &addrs, err, sizeof(err)) == TC_NET_OK);
	CHECK_EQ_INT(tc_net_tcp_connect(addrs, &cfd, poll_wait, NULL, name, err, sizeof(err)),
				 TC_NET_ERR);
	freeaddrinfo(addrs);
	CHECK_EQ_INT(cfd, -1);
	CHECK(strstr(err, "could not connect to tcp:127.0.0.1:") != NULL);
	CHECK(strstr(err, "Connection refused") != NULL);

	CHECK_EQ_INT(tc_net_resolve("no-such-host.invalid", "1", false, "tcp:no-such-host.invalid:1",
								&addrs, err, sizeof(err)), TC_NET_ERR);
	CHECK(strstr(err, "could not resolve \"no-such-host.invalid\" for tcp:no-such-host.invalid:1") != NULL);
}

int
main(void)
{
	TC_RUN(test_unix);
	TC_RUN(test_tcp);
	return tc_test_summary();
}
