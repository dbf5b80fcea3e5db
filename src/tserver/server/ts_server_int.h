/*
 * ts_server_int.h
 *		The server's state, shared by ts_server.c (listeners, the accept
 *		loop, connections' registry, limits) and ts_server_admin.c (what
 *		it is told and tells while it runs: reloads, metrics).  Private to
 *		the server.
 */
#ifndef TS_SERVER_INT_H
#define TS_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#include "ts_conn.h"
#include "ts_metrics.h"
#include "ts_proto.h"
#include "ts_server.h"

/* A listening socket. */
typedef struct TsListener
{
	int			fd;
	char		name[300];		/* "unix:PATH" or "tcp:HOST:PORT", for logs */
	bool		is_unix;
	char		path[108];		/* unix: the socket file, unlinked at close */
	dev_t		dev;			/* unix: the file we bound, so that we never */
	ino_t		ino;			/* unlink a later server's socket */
} TsListener;

struct TsServer
{
	/* fixed once ts_server_run starts */
	TsProtoShared shared;		/* what every connection's protocol reads */
	TsConnContext conn_ctx;		/* what every connection's thread reads */
	uid_t	   *allowed_uids;	/* [nallowed_uids]: admitted without a token */
	size_t		nallowed_uids;
	mode_t		socket_mode;	/* of the unix socket files */
	int			max_connections;
	int			max_unauthenticated;
	atomic_int	unauthenticated;	/* connections before READY */

	/* refusals at accept, logged at most once per TS_REFUSAL_LOG_MS */
	int64_t		refusal_logged_ms;	/* ts_monotonic_ms; 0: never */
	uint64_t	refusals_unlogged;

	/* unauthenticated connections shut down for newer ones (accept loop's) */
	_Atomic uint64_t evictions;
	uint64_t	evictions_logged;
	int64_t		eviction_logged_ms;	/* ts_monotonic_ms; 0: never */

	/* refusals at accept by reason, for the metrics */
	_Atomic uint64_t refused_connections;	/* --max-connections */
	_Atomic uint64_t refused_unauthenticated;	/* --max-unauthenticated */
	TsMetrics  *metrics;		/* NULL: no --metrics */

	/* SIGHUP: the reload asked for, run by the accept loop */
	atomic_bool reload_requested;
	void		(*reload) (void *arg);
	void	   *reload_arg;

	TsListener *listeners;
	int			nlisteners;
	int			wakeup_pipe[2]; /* written by signal handler and exiting
								 * threads, read by the accept loop */
	atomic_bool shutdown_requested;

	/* registry of connections, so that shutdown can reach each of them */
	pthread_mutex_t conns_lock;
	pthread_cond_t conns_changed;	/* a thread has moved itself to done */
	TsConn	   *live_conns;		/* threads running */
	TsConn	   *done_conns;		/* threads finished, to be joined */
};

#endif							/* TS_SERVER_INT_H */
