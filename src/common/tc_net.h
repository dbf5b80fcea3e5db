/*
 * tc_net.h
 *		Sockets for both halves of tcopy, in the spirit of Redis' anet.c:
 *		connecting (the client library), listening and accepting (the
 *		tserver), socket options and address formatting (no Postgres
 *		headers).
 *
 * Functions return a descriptor or TC_NET_OK on success, TC_NET_ERR with a
 * message in the caller's err buffer on failure (err may be NULL where the
 * caller ignores the failure), and the other codes below where they say so.
 * Messages name what failed by the caller's `name` for it (an address as
 * the user spelled it), so that a user recognises it.
 */
#ifndef TC_NET_H
#define TC_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define TC_NET_OK 0
#define TC_NET_ERR (-1)
#define TC_NET_ABANDONED (-2)	/* the wait function gave up; err untouched */
#define TC_NET_AGAIN (-3)		/* nothing to do now: try again later */

struct addrinfo;

/*
 * Wait until fd is writable (want_write) or readable; fd -1: there is
 * nothing to wait on, pause a little (milliseconds) before the caller
 * tries again.  Return 0 to go on, -1 to give up.  It may also not return
 * at all (a longjmp): see tc_net_tcp_connect.
 */
typedef int (*TcNetWaitFn) (void *arg, int fd, bool want_write);

/* ---- connecting ---- */

/*
 * Connect to the unix socket at path, non-blocking, so that a server that
 * stops accepting cannot hold the caller: when its backlog is full, Linux
 * fails the connect with EAGAIN and leaves nothing to wait on, so wait is
 * called with fd -1 (a pause) and the connect tried again, until wait gives
 * up.  *fdp as in tc_net_tcp_connect.  Returns TC_NET_OK with *fdp
 * connected (non-blocking, close-on-exec), TC_NET_ERR (*fdp -1), or
 * TC_NET_ABANDONED (*fdp still open, for the caller to close).
 */
int			tc_net_unix_connect(const char *path, int *fdp, TcNetWaitFn wait,
								void *wait_arg, const char *name,
								char *err, size_t errlen);

/*
 * Resolve host and port (passive: for listening, host NULL meaning every
 * local address).  *addrs is freed by the caller with freeaddrinfo.
 */
int			tc_net_resolve(const char *host, const char *port, bool passive,
						   const char *name, struct addrinfo **addrs,
						   char *err, size_t errlen);

/*
 * Connect to the first of addrs that accepts, non-blocking, waiting
 * through wait while a connect is in progress; then set TCP_NODELAY.
 * *fdp is the socket being connected from before the first wait, so that
 * a caller whose wait function does not return can close it (and free
 * addrs).  Returns TC_NET_OK with *fdp connected and non-blocking,
 * TC_NET_ERR (*fdp -1), or TC_NET_ABANDONED when wait gave up (*fdp still
 * open, for the caller to close).
 */
int			tc_net_tcp_connect(const struct addrinfo *addrs, int *fdp,
							   TcNetWaitFn wait, void *wait_arg,
							   const char *name, char *err, size_t errlen);

/* ---- socket options ---- */

int			tc_net_set_nonblock(int fd, bool nonblock, char *err, size_t errlen);

/* Send small writes at once: acks and replies are latency-bound. */
int			tc_net_set_nodelay(int fd, char *err, size_t errlen);

/* Let TCP find a vanished peer, so that a thread blocked on it ends. */
int			tc_net_set_keepalive(int fd, char *err, size_t errlen);

/*
 * Make reads on a blocking fd fail with EAGAIN after seconds without data
 * (0: never).
 */
int			tc_net_set_recv_timeout(int fd, int seconds, char *err, size_t errlen);

/*
 * Make writes on a blocking fd fail with EAGAIN after seconds without
 * progress (0: never).
 */
int			tc_net_set_send_timeout(int fd, int seconds, char *err, size_t errlen);

/*
 * Write or read exactly len bytes on a blocking fd (a socket or a file),
 * retrying on EINTR: true, or false with errno (ECONNRESET for an end of
 * file before len bytes).  Writing to a socket whose peer is gone raises
 * SIGPIPE unless it is ignored, as the tserver and Postgres' backends do.
 */
bool		tc_net_write_all(int fd, const void *buf, size_t len);
bool		tc_net_read_all(int fd, void *buf, size_t len);

/* ---- listening and accepting ---- */

/*
 * Whether a server answers on the unix socket file at path: 1 (a live
 * server), 0 (stale or gone: safe to bind), or TC_NET_ERR.
 */
int			tc_net_unix_in_use(const char *path, char *err, size_t errlen);

/*
 * Listen on a new unix socket file at path with the given mode (the file
 * is created 0600, then set to mode before listen), non-blocking.  Returns
 * the descriptor; on failure the file, if bound, is removed.
 */
int			tc_net_unix_listen(const char *path, mode_t mode, int backlog,
							   char *err, size_t errlen);

/*
 * Listen on one resolved address, non-blocking, with SO_REUSEADDR and,
 * for IPv6, IPV6_V6ONLY (so that :: and 0.0.0.0 can share a port).
 */
int			tc_net_tcp_listen(const struct addrinfo *ai, int backlog,
							  const char *name, char *err, size_t errlen);

/*
 * Accept a connection on the listener lfd, as a blocking close-on-exec
 * socket, its peer's address in *ss.  Returns the descriptor, TC_NET_AGAIN
 * when none is waiting (or it vanished before it was accepted), or
 * TC_NET_ERR (out of descriptors, say: the caller should pause).
 */
int			tc_net_accept(int lfd, struct sockaddr_storage *ss, socklen_t *sslen,
						  const char *name, char *err, size_t errlen);

/*
 * The credentials the unix socket peer on fd had when it connected
 * (SO_PEERCRED: it cannot forge them).  False when they cannot be read.
 */
bool		tc_net_peer_cred(int fd, pid_t *pid, uid_t *uid);

/* ---- addresses ---- */

/* "tcp:HOST:PORT" of a socket address, numeric, IPv6 in brackets. */
void		tc_net_format_address(const struct sockaddr *sa, socklen_t salen,
								  char *out, size_t outlen);

/* The address fd is bound to, formatted; false (out untouched) on failure. */
bool		tc_net_local_address(int fd, char *out, size_t outlen);

#endif							/* TC_NET_H */
