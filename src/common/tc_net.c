/*
 * tc_net.c
 *		Sockets: connect, listen, accept, options, address formatting.
 */
#include "tc_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* Set err (when the caller has one) and return TC_NET_ERR. */
static int	net_error(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
net_error(char *err, size_t errlen, const char *fmt,...)
{
	va_list		args;

	if (err != NULL && errlen > 0)
	{
		va_start(args, fmt);
		vsnprintf(err, errlen, fmt, args);
		va_end(args);
	}
	return TC_NET_ERR;
}

/* Fill *sun for path; TC_NET_ERR when it does not fit sun_path. */
static int
net_unix_sockaddr(const char *path, struct sockaddr_un *sun, char *err, size_t errlen)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return net_error(err, errlen, "unix socket path \"%s\" is too long", path);
	strcpy(sun->sun_path, path);
	return TC_NET_OK;
}

int
tc_net_unix_connect(const char *path, int *fdp, TcNetWaitFn wait, void *wait_arg,
					const char *name, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int			error = 0;

	*fdp = -1;
	if (net_unix_sockaddr(path, &sun, err, errlen) != TC_NET_OK)
		return TC_NET_ERR;
	*fdp = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (*fdp < 0)
		return net_error(err, errlen, "could not create a socket: %s", strerror(errno));
	for (;;)
	{
		socklen_t	optlen = sizeof(error);

		if (connect(*fdp, (struct sockaddr *) &sun, sizeof(sun)) == 0)
			return TC_NET_OK;
		error = errno;
		if (error == EAGAIN || error == EINTR)
		{
			/* the backlog is full: nothing to wait on but time */
			if (wait(wait_arg, -1, true) != 0)
				return TC_NET_ABANDONED;
			continue;
		}
		if (error != EINPROGRESS)
			break;
		if (wait(wait_arg, *fdp, true) != 0)
			return TC_NET_ABANDONED;
		if (getsockopt(*fdp, SOL_SOCKET, SO_ERROR, &error, &optlen) < 0)
			error = errno;
		if (error == 0)
			return TC_NET_OK;
		break;
	}
	close(*fdp);
	*fdp = -1;
	return net_error(err, errlen, "could not connect to %s: %s", name, strerror(error));
}

int
tc_net_resolve(const char *host, const char *port, bool passive, const char *name,
			   struct addrinfo **addrs, char *err, size_t errlen)
{
	struct addrinfo hints;
	int			rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(host, port, &hints, addrs);
	if (rc != 0)
	{
		*addrs = NULL;
		return net_error(err, errlen, "could not resolve \"%s\" for %s: %s",
						 host != NULL ? host : "*", name,
						 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
	}
	return TC_NET_OK;
}

int
tc_net_tcp_connect(const struct addrinfo *addrs, int *fdp, TcNetWaitFn wait,
				   void *wait_arg, const char *name, char *err, size_t errlen)
{
	const struct addrinfo *ai;
	int			error = 0;

	*fdp = -1;
	for (ai = addrs; ai != NULL; ai = ai->ai_next)
	{
		socklen_t	optlen = sizeof(error);

		*fdp = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
					  ai->ai_protocol);
		if (*fdp < 0)
		{
			error = errno;
			continue;
		}
		if (connect(*fdp, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		error = errno;
		if (error == EINPROGRESS || error == EINTR)
		{
			if (wait(wait_arg, *fdp, true) != 0)
				return TC_NET_ABANDONED;	/* the caller closes *fdp */
			if (getsockopt(*fdp, SOL_SOCKET, SO_ERROR, &error, &optlen) < 0)
				error = errno;
			if (error == 0)
				break;
		}
		close(*fdp);
		*fdp = -1;
	}
	if (*fdp < 0)
		return net_error(err, errlen, "could not connect to %s: %s", name,
						 strerror(error ? error : EADDRNOTAVAIL));
	if (tc_net_set_nodelay(*fdp, err, errlen) != TC_NET_OK)
	{
		close(*fdp);
		*fdp = -1;
		return TC_NET_ERR;
	}
	return TC_NET_OK;
}

int
tc_net_set_nonblock(int fd, bool nonblock, char *err, size_t errlen)
{
	int			flags = fcntl(fd, F_GETFL);

	if (flags >= 0)
		flags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	if (flags < 0 || fcntl(fd, F_SETFL, flags) < 0)
		return net_error(err, errlen, "could not make the socket %s: %s",
						 nonblock ? "non-blocking" : "blocking", strerror(errno));
	return TC_NET_OK;
}

int
tc_net_set_nodelay(int fd, char *err, size_t errlen)
{
	int			one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return net_error(err, errlen, "could not set TCP_NODELAY: %s", strerror(errno));
	return TC_NET_OK;
}

int
tc_net_set_keepalive(int fd, char *err, size_t errlen)
{
	int			one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0)
		return net_error(err, errlen, "could not set SO_KEEPALIVE: %s", strerror(errno));
	return TC_NET_OK;
}

int
tc_net_set_recv_timeout(int fd, int seconds, char *err, size_t errlen)
{
	struct timeval timeout = {seconds, 0};

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0)
		return net_error(err, errlen, "could not set SO_RCVTIMEO: %s", strerror(errno));
	return TC_NET_OK;
}

int
tc_net_set_send_timeout(int fd, int seconds, char *err, size_t errlen)
{
	struct timeval timeout = {seconds, 0};

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) < 0)
		return net_error(err, errlen, "could not set SO_SNDTIMEO: %s", strerror(errno));
	return TC_NET_OK;
}

bool
tc_net_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0)
	{
		ssize_t		n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t) n;
	}
	return true;
}

bool
tc_net_read_all(int fd, void *buf, size_t len)
{
	char	   *p = buf;

	while (len > 0)
	{
		ssize_t		n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0)
				errno = ECONNRESET;
			return false;
		}
		p += n;
		len -= (size_t) n;
	}
	return true;
}

int
tc_net_unix_in_use(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int			probe;
	int			saved_errno;

	if (net_unix_sockaddr(path, &sun, err, errlen) != TC_NET_OK)
		return TC_NET_ERR;
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return net_error(err, errlen, "could not create a socket: %s", strerror(errno));
	if (connect(probe, (const struct sockaddr *) &sun, sizeof(sun)) == 0)
	{
		close(probe);
		return 1;
	}
	saved_errno = errno;
	close(probe);
	if (saved_errno == ECONNREFUSED || saved_errno == ENOENT)
		return 0;
	if (saved_errno == EAGAIN)
		return 1;				/* its backlog is full: it is alive */
	return net_error(err, errlen, "could not check whether a server listens on \"%s\": %s",
					 path, strerror(saved_errno));
}

int
tc_net_unix_listen(const char *path, mode_t mode, int backlog, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int			fd;

	if (net_unix_sockaddr(path, &sun, err, errlen) != TC_NET_OK)
		return TC_NET_ERR;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return net_error(err, errlen, "could not create a unix socket: %s", strerror(errno));

	/*
	 * The file bind creates takes the socket's mode (less the umask): owner
	 * only from the start, so that it is never wider than mode, not even
	 * for a moment; and nobody can connect before listen, after the chmod.
	 */
	if (fchmod(fd, 0600) != 0)
	{
		net_error(err, errlen, "could not set permissions of a unix socket: %s", strerror(errno));
		close(fd);
		return TC_NET_ERR;
	}
	if (bind(fd, (struct sockaddr *) &sun, sizeof(sun)) != 0)
	{
		net_error(err, errlen, "could not bind unix socket \"%s\": %s", path, strerror(errno));
		close(fd);
		return TC_NET_ERR;
	}
	if (chmod(path, mode) != 0)
	{
		net_error(err, errlen, "could not set permissions of \"%s\": %s", path, strerror(errno));
		goto err;
	}
	if (listen(fd, backlog) != 0)
	{
		net_error(err, errlen, "could not listen on \"%s\": %s", path, strerror(errno));
		goto err;
	}
	return fd;

err:
	unlink(path);
	close(fd);
	return TC_NET_ERR;
}

int
tc_net_tcp_listen(const struct addrinfo *ai, int backlog, const char *name,
				  char *err, size_t errlen)
{
	int			one = 1;
	int			fd;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
	if (fd < 0)
		return net_error(err, errlen, "could not create a socket for %s: %s", name,
						 strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0)
	{
		net_error(err, errlen, "could not listen on %s: %s", name, strerror(errno));
		close(fd);
		return TC_NET_ERR;
	}
	return fd;
}

int
tc_net_accept(int lfd, struct sockaddr_storage *ss, socklen_t *sslen,
			  const char *name, char *err, size_t errlen)
{
	int			fd;

	*sslen = sizeof(*ss);
	/* no SOCK_NONBLOCK: whoever serves the connection may block on it */
	fd = accept4(lfd, (struct sockaddr *) ss, sslen, SOCK_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		errno == ECONNABORTED || errno == EPROTO)
		return TC_NET_AGAIN;
	return net_error(err, errlen, "could not accept a connection on %s: %s", name,
					 strerror(errno));
}

bool
tc_net_peer_cred(int fd, pid_t *pid, uid_t *uid)
{
	struct ucred cred;
	socklen_t	credlen = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) != 0 ||
		credlen != sizeof(cred))
		return false;
	*pid = cred.pid;
	*uid = cred.uid;
	return true;
}

void
tc_net_format_address(const struct sockaddr *sa, socklen_t salen, char *out, size_t outlen)
{
	char		host[64];		/* numeric: an IPv6 address and a scope */
	char		port[16];

	if (getnameinfo(sa, salen, host, sizeof(host), port, sizeof(port),
					NI_NUMERICHOST | NI_NUMERICSERV) != 0)
	{
		snprintf(out, outlen, "tcp:?");
		return;
	}
	if (sa->sa_family == AF_INET6)
		snprintf(out, outlen, "tcp:[%s]:%s", host, port);
	else
		snprintf(out, outlen, "tcp:%s:%s", host, port);
}

bool
tc_net_local_address(int fd, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t	sslen = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *) &ss, &sslen) != 0)
		return false;
	tc_net_format_address((struct sockaddr *) &ss, sslen, out, outlen);
	return true;
}
