/*
 * ts_conn.h
 *		One client connection of the tserver: the one struct the server's
 *		registry, the connection's thread and its protocol share.
 *
 * The server (ts_server.c) accepts the socket, fills in the registry's
 * fields and starts ts_conn_main in a thread of its own.  The thread reads
 * frames with the shared frame reader, feeds them to the connection's
 * TsProto, sends the replies, and at the end reports the error (an Error
 * frame, then a short drain) and calls the context's exit function, which
 * hands the connection back to the server.  ts_conn.c knows nothing of
 * the server but this context: the dependency is one-way.
 */
#ifndef TS_CONN_H
#define TS_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tc_frame_reader.h"
#include "tc_tls.h"
#include "ts_proto.h"

typedef struct TsConn TsConn;

/*
 * The thread's last act: close conn's socket (its fd, under whatever lock
 * guards it) and take conn back for joining and freeing.
 */
typedef void (*TsConnExitFn) (TsConn *conn, void *arg);

/* What a connection's thread needs of its server: fixed while it runs. */
typedef struct TsConnContext
{
	TsProtoShared *shared;		/* store, token, frame limit, counters */
	const uid_t *allowed_uids;	/* unix peers running as one of these are */
	size_t		nallowed_uids;	/* admitted without a token */
	atomic_int	handshake_timeout_ms;	/* from accept to READY, in all (a
										 * reload may change it) */
	atomic_int	idle_timeout_ms;	/* an authenticated connection holding
									 * nothing is closed after so long without a
									 * frame; 0: never (a reload may change it) */
	atomic_int *unauthenticated;	/* connections before READY, the server's */
	const atomic_bool *shutdown_requested;	/* once set: no Error frames */
	struct ssl_ctx_st *tls_ctx; /* TLS on every tcp: connection; NULL: none */
	TsConnExitFn exit;
	void	   *exit_arg;
} TsConnContext;

struct TsConn
{
	/* the registry's: set before the thread starts */
	const TsConnContext *ctx;
	uint64_t	id;				/* connection_id sent in Ready: 1, 2, ... */
	int			fd;				/* -1 once closed (by the exit function) */
	char		peer[360];		/* where the client is, for logs */
	char		source[64];		/* who it is, for the flood's evictions: a unix
								 * peer's pid, a tcp peer's IP address */
	bool		is_unix;		/* came through a unix socket listener */
	bool		peer_uid_known; /* unix: SO_PEERCRED told peer_uid */
	uid_t		peer_uid;
	uint64_t	accepted_us;	/* ts_monotonic_us: the handshake's start */
	atomic_bool unauthenticated;	/* counted in ctx->unauthenticated (the
									 * accept loop reads it to evict) */
	bool		evicted;		/* shut down by the accept loop for a newer
								 * one (the registry's lock) */
	pthread_t	thread;			/* runs ts_conn_main */
	TsConn	   *prev;			/* the server's live or done list, under */
	TsConn	   *next;			/* its lock */

	/* the thread's own */
	TcFrameReader reader;		/* bytes received, frames not yet handled */
	bool		clean_eof;		/* the client closed between frames */
	bool		socket_broken;	/* no Error frame can be sent any more */
	bool		recv_timeout_set;	/* TLS: SO_RCVTIMEO until authenticated */
	TcTls	   *tls;			/* the transport of a TLS connection, or NULL */
	TsProto		proto;
};

/*
 * Whether conn came through a unix socket from a uid --allow-uid admits
 * (it then needs no token); the accept loop asks too, before its thread.
 */
bool		ts_conn_uid_admitted(const TsConnContext *ctx, const TsConn *conn);

/* Thread body of one connection (arg is its TsConn); runs it to the end. */
void	   *ts_conn_main(void *arg);

#endif							/* TS_CONN_H */
