/*
 * ts_server.h
 *		The tserver's network side: listeners, the accept loop, one thread
 *		per connection (ts_conn.h), clean shutdown.
 *
 * The main thread only accepts: every connection runs in a thread of its
 * own.  Shutdown is asynchronous-signal-safe to request
 * (ts_server_request_shutdown) and is carried out by the main thread:
 * listeners closed, every connection socket shut down so that blocked
 * reads and writes return, every thread joined.
 */
#ifndef TS_SERVER_H
#define TS_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tc_address.h"
#include "ts_auth.h"
#include "ts_proto.h"
#include "ts_store.h"

typedef struct TsServer TsServer;

typedef struct TsServerConfig
{
	TsCredentials *credentials; /* tokens accepted, taken over (emptied) */
	uint32_t	max_frame_bytes;	/* largest payload accepted from a client */
	const uid_t *allowed_uids;	/* unix clients running as one of these */
	size_t		nallowed_uids;	/* need no token (copied) */
	mode_t		socket_mode;	/* of unix socket files; 0: 0600 */
	int			max_connections;	/* open at once; more are refused */
	int			max_unauthenticated;	/* of those, before READY */
	int			handshake_timeout_ms;	/* from accept to READY */
	int			idle_timeout_ms;	/* authenticated, holding nothing; 0: none */
	int			max_namespace_connections;	/* of one scoped namespace */
	size_t		decode_total_bytes; /* all frames being decoded together */
	struct ssl_ctx_st *tls_ctx; /* TLS on tcp: listeners (ts_tls.h); NULL:
								 * none; the caller's, kept until freed */
} TsServerConfig;

/* A server with no listeners yet; NULL with a message in err on failure. */
TsServer   *ts_server_create(const TsServerConfig *config, char *err, size_t errlen);

/*
 * Listen on addr (unix or tcp).  A unix socket file left by a crashed
 * server is removed; one a live server answers on is an error.  A tcp
 * address listens on every address its host resolves to.  Returns 0, or
 * -1 with a message in err.
 */
int			ts_server_listen(TsServer *server, const TcAddress *addr,
							 char *err, size_t errlen);

/*
 * Serve the metrics (ts_metrics.h) of server and store on addr,
 * tcp:HOST:PORT (its first address), from now on: 0, or -1 with a message
 * in err.
 */
int			ts_server_metrics_listen(TsServer *server, TsStore *store, const TcAddress *addr,
									 char *err, size_t errlen);

/*
 * Serve as a member of group (ts_group.h), before ts_server_run: clients
 * of a member that does not lead are told who does.
 */
void		ts_server_set_group(TsServer *server, TsGroup *group);

/*
 * What a reload (SIGHUP) runs, on the accept loop's thread, between
 * accepts: it may call the setters below.  Ask for one with
 * ts_server_request_reload (async-signal-safe).
 */
void		ts_server_set_reload(TsServer *server, void (*reload) (void *arg), void *arg);
void		ts_server_request_reload(TsServer *server);

/* New connection limits, for connections accepted from now on. */
void		ts_server_set_limits(TsServer *server, int max_connections,
								 int max_unauthenticated, int handshake_timeout_ms,
								 int idle_timeout_ms, int max_namespace_connections);

/*
 * Accept creds (taken over) from now on; connections proven with the old
 * ones keep theirs.  0, or -1 (out of memory: the old ones stay).
 */
int			ts_server_set_credentials(TsServer *server, TsCredentials *creds);

/*
 * Ask the accept loop to shut the server down.  Async-signal-safe: this is
 * what the SIGTERM and SIGINT handlers call.
 */
void		ts_server_request_shutdown(TsServer *server);

/*
 * Accept connections for store until shutdown is requested, then close
 * the listeners, cut every connection and join its thread.  Returns 0, or
 * -1 when the accept loop itself failed (the shutdown is done either way).
 * The store stays open: the caller closes it.
 */
int			ts_server_run(TsServer *server, TsStore *store);

/* Free a server that is not running (after ts_server_run, or instead of it). */
void		ts_server_free(TsServer *server);

#endif							/* TS_SERVER_H */
