/*
 * ts_server.c
 *		Listeners, the accept loop, connection threads, shutdown and the
 *		server-wide counters.
 *
 * The main thread polls the listening sockets and the read end of a
 * self-pipe.  The pipe is written by the SIGTERM/SIGINT handler (after it
 * sets shutdown_requested) and by every connection thread as it exits, so
 * that the loop wakes to join finished threads promptly and to shut down
 * without races with the handler.
 *
 * Every connection is in a mutex-protected registry from accept until its
 * thread is joined.  A thread closes its own socket, but only under the
 * registry's lock and after which it sets fd to -1: shutdown walks the
 * registry under the same lock and calls shutdown(2) on every fd still
 * open, so it never touches a descriptor number that has been reused.
 */
#include "ts_server_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_clock.h"
#include "ts_conn.h"
#include "ts_log.h"
#include "ts_metrics.h"

#define TS_ACCEPT_BURST 32		/* accepts per listener per wakeup */
#define TS_ACCEPT_PAUSE_MS 100	/* back-off when out of descriptors */
#define TS_REFUSAL_LOG_MS 1000	/* at most one line of refusals per second */


static void server_close_listeners(TsServer *server);
static void server_conn_exit(TsConn *conn, void *arg);

/* See ts_server.h for the contracts of the exported functions. */

TsServer *
ts_server_create(const TsServerConfig *config, char *err, size_t errlen)
{
	TsServer   *server;

	if (config->max_frame_bytes == 0 || config->max_connections <= 0 ||
		config->max_unauthenticated <= 0 || config->handshake_timeout_ms <= 0)
	{
		snprintf(err, errlen, "frame size, connection limits and handshake timeout must be positive");
		return NULL;
	}

	server = calloc(1, sizeof(TsServer));
	if (server == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	server->wakeup_pipe[0] = server->wakeup_pipe[1] = -1;
	pthread_mutex_init(&server->conns_lock, NULL);
	pthread_cond_init(&server->conns_changed, NULL);
	atomic_init(&server->shutdown_requested, false);
	atomic_init(&server->unauthenticated, 0);
	ts_proto_shared_init(&server->shared, config->max_frame_bytes);
	{
		TsCredentials none = {0};

		if (ts_proto_set_credentials(&server->shared,
									 config->credentials != NULL ? config->credentials : &none) != 0)
		{
			snprintf(err, errlen, "out of memory");
			goto err;
		}
	}
	server->shared.decode_total_bytes = config->decode_total_bytes;
	server->shared.stopping = &server->shutdown_requested;
	server->socket_mode = config->socket_mode != 0 ? config->socket_mode : 0600;
	server->max_connections = config->max_connections;
	server->max_unauthenticated = config->max_unauthenticated;
	if (config->nallowed_uids > 0)
	{
		server->allowed_uids = malloc(config->nallowed_uids * sizeof(uid_t));
		if (server->allowed_uids == NULL)
		{
			snprintf(err, errlen, "out of memory");
			goto err;
		}
		memcpy(server->allowed_uids, config->allowed_uids,
			   config->nallowed_uids * sizeof(uid_t));
		server->nallowed_uids = config->nallowed_uids;
	}
	server->conn_ctx.shared = &server->shared;
	server->conn_ctx.allowed_uids = server->allowed_uids;
	server->conn_ctx.nallowed_uids = server->nallowed_uids;
	atomic_init(&server->conn_ctx.handshake_timeout_ms, config->handshake_timeout_ms);
	atomic_init(&server->conn_ctx.idle_timeout_ms, config->idle_timeout_ms);
	ts_tenants_init(&server->shared.tenants, config->max_namespace_connections);
	server->conn_ctx.unauthenticated = &server->unauthenticated;
	server->shared.unauthenticated = &server->unauthenticated;
	server->conn_ctx.shutdown_requested = &server->shutdown_requested;
	server->conn_ctx.tls_ctx = config->tls_ctx;
	server->conn_ctx.exit = server_conn_exit;
	server->conn_ctx.exit_arg = server;

	/* non-blocking both ways: a signal handler must never block writing */
	if (pipe2(server->wakeup_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
	{
		snprintf(err, errlen, "could not create the wakeup pipe: %s", strerror(errno));
		goto err;
	}
	return server;

err:
	ts_server_free(server);
	return NULL;
}

void
ts_server_free(TsServer *server)
{
	if (server == NULL)
		return;
	ts_metrics_stop(server->metrics);
	server_close_listeners(server);
	free(server->listeners);
	if (server->wakeup_pipe[0] >= 0)
		close(server->wakeup_pipe[0]);
	if (server->wakeup_pipe[1] >= 0)
		close(server->wakeup_pipe[1]);
	pthread_cond_destroy(&server->conns_changed);
	pthread_mutex_destroy(&server->conns_lock);
	ts_tenants_destroy(&server->shared.tenants);
	ts_proto_shared_free(&server->shared);
	free(server->allowed_uids);
	free(server);
}

/* Append a listener; -1 (fd left to the caller) when out of memory. */
static int
server_add_listener(TsServer *server, const TsListener *listener)
{
	TsListener *grown;

	grown = realloc(server->listeners,
					(size_t) (server->nlisteners + 1) * sizeof(TsListener));
	if (grown == NULL)
		return -1;
	server->listeners = grown;
	server->listeners[server->nlisteners++] = *listener;
	return 0;
}

/* Listen on the unix socket path; see ts_server_listen. */
static int
server_listen_unix(TsServer *server, const char *path, char *err, size_t errlen)
{
	TsListener	listener;
	struct stat st;
	int			fd;

	if (lstat(path, &st) == 0)
	{
		int			in_use;

		if (!S_ISSOCK(st.st_mode))
		{
			snprintf(err, errlen, "\"%s\" exists and is not a socket", path);
			return -1;
		}
		in_use = tc_net_unix_in_use(path, err, errlen);
		if (in_use < 0)
			return -1;
		if (in_use > 0)
		{
			snprintf(err, errlen, "another server is already listening on \"%s\"", path);
			return -1;
		}
		/* left behind by a server that crashed */
		if (unlink(path) != 0 && errno != ENOENT)
		{
			snprintf(err, errlen, "could not remove stale socket file \"%s\": %s",
					 path, strerror(errno));
			return -1;
		}
		ts_log(TS_LOG_INFO, "removed stale socket file \"%s\"", path);
	}
	else if (errno != ENOENT)
	{
		snprintf(err, errlen, "could not stat \"%s\": %s", path, strerror(errno));
		return -1;
	}

	/* owner only unless widened (--socket-mode); never wider, not even at bind */
	fd = tc_net_unix_listen(path, server->socket_mode, SOMAXCONN, err, errlen);
	if (fd < 0)
		return -1;
	/* the file's identity, so that closing never unlinks a later server's */
	if (stat(path, &st) != 0)
	{
		snprintf(err, errlen, "could not set permissions of \"%s\": %s", path, strerror(errno));
		goto err;
	}

	memset(&listener, 0, sizeof(listener));
	listener.fd = fd;
	listener.is_unix = true;
	snprintf(listener.name, sizeof(listener.name), "unix:%s", path);
	strcpy(listener.path, path);
	listener.dev = st.st_dev;
	listener.ino = st.st_ino;
	if (server_add_listener(server, &listener) != 0)
	{
		snprintf(err, errlen, "out of memory");
		goto err;
	}
	ts_log(TS_LOG_INFO, "listening on %s (mode %04o)", listener.name,
		   (unsigned) server->socket_mode);
	return 0;

err:
	unlink(path);
	close(fd);
	return -1;
}

/*
 * Listen on every address host resolves to ("*": all local addresses).
 * An address that cannot be bound is skipped with a warning, as Postgres
 * does; it is an error only when none can.
 */
static int
server_listen_tcp(TsServer *server, const char *host, const char *port,
				  char *err, size_t errlen)
{
	struct addrinfo *addrs = NULL;
	struct addrinfo *ai;
	char		name[sizeof(((TsListener *) NULL)->name)];
	int			nlistening = 0;

	snprintf(name, sizeof(name), strchr(host, ':') ? "tcp:[%s]:%s" : "tcp:%s:%s", host, port);
	if (tc_net_resolve(strcmp(host, "*") == 0 ? NULL : host, port, true, name, &addrs,
					   err, errlen) != TC_NET_OK)
		return -1;
	snprintf(err, errlen, "no address to listen on for \"%s\"", host);

	for (ai = addrs; ai != NULL; ai = ai->ai_next)
	{
		TsListener	listener;
		int			fd;

		tc_net_format_address(ai->ai_addr, ai->ai_addrlen, name, sizeof(name));
		fd = tc_net_tcp_listen(ai, SOMAXCONN, name, err, errlen);
		if (fd < 0)
		{
			ts_log(TS_LOG_WARNING, "%s", err);
			continue;
		}
		/* name the port actually bound, which matters for port 0 */
		tc_net_local_address(fd, name, sizeof(name));

		memset(&listener, 0, sizeof(listener));
		listener.fd = fd;
		strcpy(listener.name, name);
		if (server_add_listener(server, &listener) != 0)
		{
			snprintf(err, errlen, "out of memory");
			close(fd);
			break;
		}
		ts_log(TS_LOG_INFO, "listening on %s", listener.name);
		nlistening++;
	}
	freeaddrinfo(addrs);
	return nlistening > 0 ? 0 : -1;
}

int
ts_server_listen(TsServer *server, const TcAddress *addr, char *err, size_t errlen)
{
	switch (addr->kind)
	{
		case TC_ADDRESS_UNIX:
			return server_listen_unix(server, addr->path, err, errlen);
		case TC_ADDRESS_TCP:
			return server_listen_tcp(server, addr->host, addr->port, err, errlen);
		case TC_ADDRESS_NULL:
			break;
	}
	snprintf(err, errlen, "null: is not an address a server can listen on");
	return -1;
}

/*
 * Close every listener; unlink a unix socket file only when it is still the
 * one we bound (a new server may have replaced it since).
 */
static void
server_close_listeners(TsServer *server)
{
	int			i;

	for (i = 0; i < server->nlisteners; i++)
	{
		TsListener *listener = &server->listeners[i];
		struct stat st;

		if (listener->fd < 0)
			continue;
		close(listener->fd);
		listener->fd = -1;
		if (listener->is_unix && stat(listener->path, &st) == 0 &&
			st.st_dev == listener->dev && st.st_ino == listener->ino)
			unlink(listener->path);
	}
}

void
ts_server_request_shutdown(TsServer *server)
{
	int			saved_errno = errno;
	ssize_t		rc;

	atomic_store(&server->shutdown_requested, true);
	rc = write(server->wakeup_pipe[1], "s", 1);
	(void) rc;					/* a full pipe wakes the loop all the same */
	errno = saved_errno;
}

/* Push conn onto the list at *head; call with conns_lock held. */
static void
conns_push(TsConn **head, TsConn *conn)
{
	conn->prev = NULL;
	conn->next = *head;
	if (*head != NULL)
		(*head)->prev = conn;
	*head = conn;
}

/* Take conn out of the live list; call with conns_lock held. */
static void
conns_unlink_live(TsServer *server, TsConn *conn)
{
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		server->live_conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
}

/*
 * TsConnExitFn: a connection thread's last act.  Close its socket and hand
 * it to the accept loop to be joined and freed.
 */
static void
server_conn_exit(TsConn *conn, void *arg)
{
	TsServer   *server = arg;
	ssize_t		rc;

	pthread_mutex_lock(&server->conns_lock);
	if (conn->fd >= 0)
	{
		close(conn->fd);
		conn->fd = -1;
	}
	/* move from live to done */
	conns_unlink_live(server, conn);
	conns_push(&server->done_conns, conn);
	atomic_fetch_sub(&server->shared.connections_open, 1);
	pthread_cond_broadcast(&server->conns_changed);
	rc = write(server->wakeup_pipe[1], "c", 1);
	(void) rc;
	pthread_mutex_unlock(&server->conns_lock);
}

/*
 * Join and free the threads that have finished; with wait_all, keep at it
 * until no connection is left at all.
 */
static void
server_reap_conns(TsServer *server, bool wait_all)
{
	for (;;)
	{
		TsConn	   *done;
		bool		more;

		pthread_mutex_lock(&server->conns_lock);
		while (wait_all && server->done_conns == NULL && server->live_conns != NULL)
			pthread_cond_wait(&server->conns_changed, &server->conns_lock);
		done = server->done_conns;
		server->done_conns = NULL;
		more = wait_all && server->live_conns != NULL;
		pthread_mutex_unlock(&server->conns_lock);

		while (done != NULL)
		{
			TsConn	   *next = done->next;

			pthread_join(done->thread, NULL);
			free(done);
			done = next;
		}
		if (!more)
			break;
	}
}

/*
 * Describe the client on fd for logs in conn->peer; for a unix socket, also
 * note its uid (SO_PEERCRED: the credentials it had when it connected,
 * which it cannot forge), which --allow-uid checks.
 */
static void
identify_peer(const TsListener *listener, int fd, const struct sockaddr *sa,
			  socklen_t salen, TsConn *conn)
{
	conn->is_unix = listener->is_unix;
	if (listener->is_unix)
	{
		pid_t		pid;

		conn->peer_uid_known = tc_net_peer_cred(fd, &pid, &conn->peer_uid);
		if (conn->peer_uid_known)
			snprintf(conn->peer, sizeof(conn->peer), "%s (pid %d, uid %u)",
					 listener->name, (int) pid, (unsigned) conn->peer_uid);
		else
			snprintf(conn->peer, sizeof(conn->peer), "%s", listener->name);
		snprintf(conn->source, sizeof(conn->source), "pid %d",
				 conn->peer_uid_known ? (int) pid : -1);
	}
	else
	{
		tc_net_format_address(sa, salen, conn->peer, sizeof(conn->peer));
		if (getnameinfo(sa, salen, conn->source, sizeof(conn->source), NULL, 0,
						NI_NUMERICHOST) != 0)
			snprintf(conn->source, sizeof(conn->source), "%.63s", conn->peer);
	}
}

/* Whether a was accepted before b. */
static bool
conn_older(const TsConn *a, const TsConn *b)
{
	return a->accepted_us < b->accepted_us;
}

/* Whether c is an unauthenticated connection the accept loop may evict. */
static bool
conn_evictable(const TsConn *c)
{
	return c->fd >= 0 && !c->evicted && atomic_load(&c->unauthenticated);
}

/*
 * The unauthenticated connections are at their limit: shut down one (its
 * thread ends, freeing its place), as OpenSSH's MaxStartups drops early,
 * so that a flood of idle connections cannot lock a client with a
 * credential out.  The one shut down is the oldest of the source (a unix
 * peer's process, a tcp peer's address) that holds the most of them: a
 * flood from one source, however fast it reopens what is closed, only
 * ever takes its own places, and a client in the middle of its handshake
 * is not cut for it.  Whether one was shut down.
 */
static bool
server_evict_oldest_unauthenticated(TsServer *server)
{
	TsConn	   *oldest = NULL;
	int			most = 0;

	pthread_mutex_lock(&server->conns_lock);
	for (TsConn *c = server->live_conns; c != NULL; c = c->next)
	{
		TsConn	   *first = c;
		int			n = 0;

		if (!conn_evictable(c))
			continue;
		/* c's source: its count, and its oldest (a few dozen at most) */
		for (TsConn *d = server->live_conns; d != NULL; d = d->next)
		{
			if (!conn_evictable(d) || strcmp(d->source, c->source) != 0)
				continue;
			n++;
			if (conn_older(d, first))
				first = d;
		}
		if (n > most || (n == most && conn_older(first, oldest)))
		{
			most = n;
			oldest = first;
		}
	}
	if (oldest != NULL)
	{
		/* the fd is closed under this lock only (server_conn_exit) */
		shutdown(oldest->fd, SHUT_RDWR);
		oldest->evicted = true;
		atomic_fetch_add(&server->evictions, 1);
	}
	pthread_mutex_unlock(&server->conns_lock);
	return oldest != NULL;
}

/*
 * Why a new connection must be refused now, or NULL: the connection limits
 * are checked at accept, before a thread or a byte of memory is spent.  A
 * connection admitted by its uid needs no handshake to prove itself: the
 * limit on unauthenticated ones does not hold it back; any other, at that
 * limit, takes the place of the oldest (server_evict_oldest_unauthenticated).
 */
static const char *
server_refusal_reason(TsServer *server, const TsConn *conn, char *buf, size_t buflen)
{
	if (atomic_load(&server->shared.connections_open) >= (uint64_t) server->max_connections)
	{
		atomic_fetch_add(&server->refused_connections, 1);
		snprintf(buf, buflen, "too many connections: %d are open (--max-connections)",
				 server->max_connections);
		return buf;
	}
	if (!ts_conn_uid_admitted(&server->conn_ctx, conn) &&
		atomic_load(&server->unauthenticated) >= server->max_unauthenticated &&
		!server_evict_oldest_unauthenticated(server))
	{
		atomic_fetch_add(&server->refused_unauthenticated, 1);
		snprintf(buf, buflen,
				 "too many connections not yet authenticated: %d are (--max-unauthenticated)",
				 server->max_unauthenticated);
		return buf;
	}
	return NULL;
}

/* Say, at most once per TS_REFUSAL_LOG_MS, how many were evicted since. */
static void
server_log_evictions(TsServer *server, const char *peer)
{
	uint64_t	evictions = atomic_load(&server->evictions);
	int64_t		now_ms;

	if (evictions == server->evictions_logged)
		return;
	now_ms = ts_monotonic_ms();
	if (server->eviction_logged_ms != 0 && now_ms - server->eviction_logged_ms < TS_REFUSAL_LOG_MS)
		return;
	ts_log(TS_LOG_WARNING, "closed %" PRIu64 " connection%s not yet authenticated to make room "
		   "for newer ones, the last for %s (--max-unauthenticated %d: a flood, or clients "
		   "slow to authenticate)", evictions - server->evictions_logged,
		   evictions - server->evictions_logged == 1 ? "" : "s", peer,
		   server->max_unauthenticated);
	server->evictions_logged = evictions;
	server->eviction_logged_ms = now_ms;
}

/*
 * Refuse a connection just accepted: an Error frame if the socket takes it
 * at once (the client has sent nothing yet, so closing does not reset the
 * connection and destroy it), then close.  Not to a client expecting TLS
 * (with_frame false), which could not read a plaintext frame.  Logged at most once per
 * TS_REFUSAL_LOG_MS, with the number refused since, so that a flood does
 * not flood the log too.
 */
static void
server_refuse(TsServer *server, int fd, bool with_frame, const char *peer, const char *why)
{
	Tcopy__Error error = TCOPY__ERROR__INIT;
	TcBuf		frame = {0};
	int64_t		now_ms;
	ssize_t		rc;

	error.code = TCOPY__ERROR_CODE__ERROR_TOO_MANY_CONNECTIONS;
	error.message = (char *) why;
	if (with_frame && tc_frame_append(&frame, TCOPY__FRAME_TYPE__FRAME_ERROR, &error.base))
	{
		rc = send(fd, frame.data, frame.len, MSG_DONTWAIT | MSG_NOSIGNAL);
		(void) rc;				/* best effort */
	}
	tc_buf_free(&frame);
	close(fd);

	server->refusals_unlogged++;
	now_ms = ts_monotonic_ms();
	if (server->refusal_logged_ms == 0 || now_ms - server->refusal_logged_ms >= TS_REFUSAL_LOG_MS)
	{
		if (server->refusals_unlogged > 1)
			ts_log(TS_LOG_WARNING, "refused a connection from %s: %s "
				   "(%" PRIu64 " refused since the last such line)",
				   peer, why, server->refusals_unlogged);
		else
			ts_log(TS_LOG_WARNING, "refused a connection from %s: %s", peer, why);
		server->refusal_logged_ms = now_ms;
		server->refusals_unlogged = 0;
	}
}

/*
 * Accept one connection on listener and start its thread.  Returns 1 when
 * one was accepted (or refused for want of memory), 0 when there was none
 * waiting, -1 when accepting must pause (out of descriptors).
 */
static int
server_accept_one(TsServer *server, TsListener *listener)
{
	struct sockaddr_storage ss;
	socklen_t	sslen;
	sigset_t	block;
	sigset_t	saved;
	TsConn	   *conn;
	const char *refusal;
	int			fd;
	int			rc;
	char		err[256];

	fd = tc_net_accept(listener->fd, &ss, &sslen, listener->name, err, sizeof(err));
	if (fd == TC_NET_AGAIN)
		return 0;
	if (fd < 0)
	{
		ts_log(TS_LOG_WARNING, "%s", err);
		return -1;
	}
	if (!listener->is_unix)
	{
		/* acks are small and latency-bound; a vanished client's thread must end */
		tc_net_set_nodelay(fd, NULL, 0);
		tc_net_set_keepalive(fd, NULL, 0);
	}

	conn = calloc(1, sizeof(TsConn));
	if (conn == NULL)
	{
		ts_log(TS_LOG_WARNING, "out of memory accepting a connection on %s", listener->name);
		close(fd);
		return 1;
	}
	identify_peer(listener, fd, (struct sockaddr *) &ss, sslen, conn);
	refusal = server_refusal_reason(server, conn, err, sizeof(err));
	if (refusal != NULL)
	{
		server_refuse(server, fd, listener->is_unix || server->conn_ctx.tls_ctx == NULL,
					  conn->peer, refusal);
		free(conn);
		return 1;
	}
	server_log_evictions(server, conn->peer);
	conn->ctx = &server->conn_ctx;
	conn->fd = fd;
	conn->id = atomic_fetch_add(&server->shared.connections_total, 1) + 1;
	conn->accepted_us = ts_monotonic_us();
	if (!ts_conn_uid_admitted(&server->conn_ctx, conn))
	{
		atomic_store(&conn->unauthenticated, true);
		atomic_fetch_add(&server->unauthenticated, 1);
	}
	atomic_fetch_add(&server->shared.connections_open, 1);

	pthread_mutex_lock(&server->conns_lock);
	conns_push(&server->live_conns, conn);
	pthread_mutex_unlock(&server->conns_lock);

	/* shutdown signals are for the main thread; threads inherit the mask */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &saved);
	rc = pthread_create(&conn->thread, NULL, ts_conn_main, conn);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (rc != 0)
	{
		ts_log(TS_LOG_WARNING, "could not start a thread for connection %" PRIu64 " from %s: %s",
			   conn->id, conn->peer, strerror(rc));
		pthread_mutex_lock(&server->conns_lock);
		conns_unlink_live(server, conn);
		pthread_mutex_unlock(&server->conns_lock);
		atomic_fetch_sub(&server->shared.connections_open, 1);
		if (atomic_load(&conn->unauthenticated))
			atomic_fetch_sub(&server->unauthenticated, 1);
		close(fd);
		free(conn);
	}
	return 1;
}

/* Read whatever is in the wakeup pipe (its bytes carry no information). */
static void
server_drain_wakeups(TsServer *server)
{
	char		buf[256];

	while (read(server->wakeup_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/*
 * Stop listening, cut every connection so that its blocked reads and
 * writes return, and join every thread.  A thread in the middle of a
 * commit finishes it first: only its reply is lost.
 */
static void
server_shutdown(TsServer *server)
{
	TsConn	   *conn;
	int			ncut = 0;

	server_close_listeners(server);
	pthread_mutex_lock(&server->conns_lock);
	for (conn = server->live_conns; conn != NULL; conn = conn->next)
	{
		if (conn->fd >= 0)
		{
			shutdown(conn->fd, SHUT_RDWR);
			ncut++;
		}
	}
	pthread_mutex_unlock(&server->conns_lock);
	if (ncut > 0)
		ts_log(TS_LOG_INFO, "closing %d connection%s", ncut, ncut == 1 ? "" : "s");
	server_reap_conns(server, true);
}

void
ts_server_set_group(TsServer *server, TsGroup *group)
{
	server->shared.group = group;
}

int
ts_server_run(TsServer *server, TsStore *store)
{
	struct pollfd *pfds;
	int			npfds = server->nlisteners + 1;
	bool		paused = false;
	int			result = 0;
	int			i;

	if (server->shared.store == NULL)
		server->shared.store = store;	/* set already with --metrics */
	pfds = calloc((size_t) npfds, sizeof(struct pollfd));
	if (pfds == NULL)
	{
		ts_log(TS_LOG_ERROR, "out of memory starting the accept loop");
		result = -1;
		goto done;
	}
	pfds[0].fd = server->wakeup_pipe[0];
	pfds[0].events = POLLIN;
	for (i = 0; i < server->nlisteners; i++)
	{
		pfds[i + 1].fd = server->listeners[i].fd;
		pfds[i + 1].events = POLLIN;
	}

	while (!atomic_load(&server->shutdown_requested))
	{
		/* while paused, only the wakeup pipe is watched, for a while */
		int			n = poll(pfds, paused ? 1 : (nfds_t) npfds,
							 paused ? TS_ACCEPT_PAUSE_MS : -1);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			ts_log(TS_LOG_ERROR, "poll failed in the accept loop: %s", strerror(errno));
			result = -1;
			break;
		}
		if (pfds[0].revents != 0)
			server_drain_wakeups(server);
		server_reap_conns(server, false);
		if (atomic_load(&server->shutdown_requested))
			break;
		if (atomic_exchange(&server->reload_requested, false) && server->reload != NULL)
			server->reload(server->reload_arg);
		if (paused)
		{
			paused = false;
			continue;
		}
		for (i = 0; i < server->nlisteners && !paused; i++)
		{
			int			burst;

			if ((pfds[i + 1].revents & POLLIN) == 0)
				continue;
			for (burst = 0; burst < TS_ACCEPT_BURST; burst++)
			{
				int			rc = server_accept_one(server, &server->listeners[i]);

				if (rc < 0)
					paused = true;
				if (rc <= 0)
					break;
			}
		}
	}
	ts_log(TS_LOG_INFO, "shutdown requested: closing listeners and connections");

done:
	free(pfds);
	server_shutdown(server);
	return result;
}
