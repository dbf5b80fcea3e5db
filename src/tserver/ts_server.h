/*
 * ts_server.h
 *		The tserver's network side: listeners, the accept loop, one thread
 *		per connection, clean shutdown and the server-wide counters.
 *
 * ts_server.c owns the sockets and threads; ts_conn.c runs the protocol of
 * one connection inside its thread.  The main thread only accepts: every
 * connection thread does blocking I/O on its own socket, so a slow or dead
 * client stalls nobody but itself.  Shutdown is asynchronous-signal-safe
 * to request (ts_server_request_shutdown) and is carried out by the main
 * thread: listeners closed, every connection socket shut down so that
 * blocked reads and writes return, every thread joined.
 */
#ifndef TS_SERVER_H
#define TS_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "tc_arena.h"
#include "tc_auth.h"
#include "tc_frame.h"
#include "ts_storage.h"

#ifndef TS_VERSION
#define TS_VERSION "0.1.0"
#endif

typedef struct TsServer TsServer;

/* One client connection, as the server's registry knows it. */
typedef struct TsConn
{
	TsServer   *server;
	uint64_t	id;				/* connection_id sent in Ready: 1, 2, ... */
	int			fd;				/* -1 once closed; changes under conns_lock */
	char		peer[360];		/* where the client is, for logs */
	bool		is_unix;		/* came through a unix socket listener */
	bool		peer_uid_known; /* unix: SO_PEERCRED told peer_uid */
	uid_t		peer_uid;
	pthread_t	thread;			/* runs ts_conn_main */
	struct TsConn *prev;		/* links in live or done list, under conns_lock */
	struct TsConn *next;
} TsConn;

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

typedef struct TsServerConfig
{
	const uint8_t *token;		/* NULL: no authentication; else copied */
	size_t		token_len;		/* bytes of token, 1..TC_TOKEN_MAX */
	uint32_t	max_frame_bytes;	/* largest payload accepted from a client */
	const uid_t *allowed_uids;	/* unix clients must run as one of these; */
	size_t		nallowed_uids;	/* 0: any uid (copied) */
} TsServerConfig;

struct TsServer
{
	/* fixed once ts_server_run starts */
	TsStore    *store;
	uint8_t		token[TC_TOKEN_MAX];
	size_t		token_len;		/* 0: no authentication */
	uint32_t	max_frame_bytes;
	uid_t	   *allowed_uids;	/* [nallowed_uids]; 0: unix peers unchecked */
	size_t		nallowed_uids;
	struct timespec start_time; /* CLOCK_MONOTONIC, for uptime */

	TsListener *listeners;
	int			nlisteners;
	int			wakeup_pipe[2]; /* written by signal handler and exiting
								 * threads, read by the accept loop */
	atomic_bool shutdown_requested;

	/* counters reported by Stats */
	atomic_uint_fast64_t connections_open;
	atomic_uint_fast64_t connections_total; /* also hands out connection ids */
	atomic_uint_fast64_t batches_received;
	atomic_uint_fast64_t bytes_received;	/* frame bytes, headers included */

	/* registry of connections, so that shutdown can reach each of them */
	pthread_mutex_t conns_lock;
	pthread_cond_t conns_changed;	/* a thread has moved itself to done */
	TsConn	   *live_conns;		/* threads running */
	TsConn	   *done_conns;		/* threads finished, to be joined */
};

/* in ts_server.c */

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

/* Fill the server-wide fields of stats, then the store's. */
void		ts_server_fill_stats(TsServer *server, Tcopy__Stats *stats);

/*
 * Called by a connection thread as its last act: close its socket and hand
 * itself to the accept loop to be joined and freed.
 */
void		ts_server_conn_exit(TsConn *conn);

/* in ts_conn.c */

/* Where a connection is in the protocol. */
typedef enum TsConnPhase
{
	TS_CONN_AWAIT_HELLO,		/* SERVER_HELLO sent */
	TS_CONN_READY,				/* handshake done, no write session */
	TS_CONN_IN_SESSION			/* a write session is open */
} TsConnPhase;

/*
 * Deliver len bytes of packed reply frames, all of them; -1 with err
 * otherwise (code ERROR_NONE when the peer is gone).
 */
typedef int (*TsConnSendFn) (void *arg, const uint8_t *bytes, size_t len,
							 TsError *err);

/*
 * The protocol side of one connection, apart from its socket: ts_conn_main
 * feeds it the frames read from a socket, the fuzzer (test/fuzz) frames
 * taken from a buffer.  Replies are packed into out and handed to send.
 */
typedef struct TsConnState
{
	TsServer   *server;
	uint64_t	id;				/* connection_id sent in Ready, and in logs */
	TsConnPhase phase;
	TsSession  *session;		/* open in TS_CONN_IN_SESSION only */
	uint64_t	last_seq;		/* the session's last WriteBatch; 0: none */
	TsScan	   *scan;			/* open while a scan is streamed */
	uint8_t		nonce[TC_NONCE_SIZE];
	uint8_t		expected_auth[TC_AUTH_SIZE];	/* HMAC(token, nonce) */
	TcBuf		out;			/* replies packed, not yet sent */
	TcArena		frame_arena;	/* the current frame's message; reset per frame */
	ProtobufCAllocator decode_allocator;	/* frame_arena, within decode_budget */
	size_t		decode_budget;	/* bytes one frame may unpack into */
	bool		decode_over_budget; /* the current frame needed more */
	TcArena		scan_arena;		/* the current ScanBatch's rows */
	TsConnSendFn send;
	void	   *send_arg;
} TsConnState;

/*
 * Prepare state for connection id of server, awaiting HELLO, with a decode
 * budget derived from the server's frame limit.
 */
void		ts_conn_state_init(TsConnState *state, TsServer *server, uint64_t id,
							   TsConnSendFn send, void *send_arg);

/* Send SERVER_HELLO with a fresh nonce.  Returns 0, or -1 with err. */
int			ts_conn_greet(TsConnState *state, TsError *err);

/* The largest payload a frame may have now: small until the handshake. */
uint32_t	ts_conn_frame_limit(const TsConnState *state);

/*
 * Decode a frame header[TC_FRAME_HEADER_SIZE] and check its length against
 * the limit of the connection's phase (small until the handshake is done),
 * before any payload is read.  Returns 0, or -1 with err.
 */
int			ts_conn_check_header(const TsConnState *state, const uint8_t *header,
								 Tcopy__FrameType *type, uint32_t *len,
								 TsError *err);

/*
 * Act on one frame whose header passed ts_conn_check_header, replying
 * through send.  Returns 0, or -1 with err: the connection must then end.
 */
int			ts_conn_handle_frame(TsConnState *state, Tcopy__FrameType type,
								 const uint8_t *payload, uint32_t len,
								 TsError *err);

/* Close the open scan, abort the open session (logged), free everything. */
void		ts_conn_state_release(TsConnState *state);

/* Thread body of one connection (arg is its TsConn); runs it to the end. */
void	   *ts_conn_main(void *arg);

#endif							/* TS_SERVER_H */
