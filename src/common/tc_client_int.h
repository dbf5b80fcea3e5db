/*
 * tc_client_int.h
 *		The client library's private parts: struct TcClient and the frame
 *		I/O (tc_client_io.c) that the connection (tc_client.c) and the
 *		requests (tc_client_requests.c) are built on.  Not for callers of
 *		the library: they use tc_client.h.
 */
#ifndef TC_CLIENT_INT_H
#define TC_CLIENT_INT_H

#include <netdb.h>
#include <sys/uio.h>
#include <stdbool.h>
#include <stdint.h>

#include "tc_arena.h"
#include "tc_buf.h"
#include "tc_client.h"
#include "tc_frame_reader.h"
#include "tc_tls.h"

#define TC_CLIENT_ARENA_BLOCK (64 * 1024)
/* requests sent without waiting for their answers, at most (then: wait) */
#define TC_CLIENT_DEFERRED_MAX 8

/* A table opened on the connection: its name and schema as sent, packed. */
typedef struct TcClientTable
{
	struct TcClientTable *next;
	uint32_t	table_id;
	size_t		name_len;
	size_t		schema_len;
	uint8_t		bytes[];		/* name, then schema */
} TcClientTable;

#define TC_CLIENT_TABLES_MAX 64

struct TcClient
{
	int			fd;
	TcTls	   *tls;			/* tcp: with TLS, else NULL: the transport */
	char	   *server_name;	/* ServerHello.server, malloc'ed */
	TcWaitHook	wait_hook;
	void	   *wait_arg;
	unsigned	window;			/* batches in flight before a write waits */
	uint32_t	max_frame;		/* largest payload accepted, in bytes */
	TcFrameReader reader;		/* bytes received, frames not yet returned */
	TcBuf		out;			/* the outgoing frame being packed, reused */
	TcArena		arena;			/* the last reply, unpacked */
	uint64_t	seq_sent;		/* last batch sent in this session */
	uint64_t	seq_acked;		/* last batch acknowledged */
	uint64_t	session_id;		/* the open session's, as BeginOk gave them */
	uint8_t		session_key[16];
	size_t		session_key_len;
	uint64_t	identity_system; /* Begin's client_* (tc_client_set_identity) */
	uint32_t	identity_database;
	uint32_t	identity_pid;
	/*
	 * The answers owed to requests sent without waiting for them (a
	 * session's BEGIN, its on_conflict), oldest first: the tserver answers
	 * in order, so every later read takes them first (client_read_reply).
	 */
	TcClientTable *tables;		/* tc_client_open_table_cached's, newest first */
	int			ntables;
	Tcopy__FrameType deferred[TC_CLIENT_DEFERRED_MAX];
	int			ndeferred;
	bool		sent_unanswered;	/* sent since the last read that waited */
	bool		ready;			/* the handshake is done (READY) */
	bool		scanning;		/* a scan's batches are still to come */
	bool		broken;			/* a call failed: every later call fails */
	bool		hook_set_error; /* the wait hook called tc_client_set_error */
	struct addrinfo *addrs;		/* while connecting over TCP: freed by close
								 * too, should the wait hook not return */
	Tcopy__ErrorCode error_code;	/* of the server's Error frame, if any */
	uint32_t	error_table_id; /* of the server's Error frame, if any */
	Tcopy__Error *error_frame;	/* the server's Error frame, in arena; or NULL */
	char		error[512];
};

/* in tc_client_io.c */
extern int	client_fail(TcClient *client, Tcopy__ErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
/* The default wait hook: poll without a timeout. */
extern int	client_poll(void *arg, TcClient *client, int fd, bool want_write);
extern int	client_wait(TcClient *client, bool want_write);
extern int	client_wait_on(TcClient *client, int fd, bool want_write);
extern int	client_next_frame(TcClient *client, bool nowait, Tcopy__FrameType *type,
							  const uint8_t **payload, uint32_t *len);
extern int	client_server_error(TcClient *client, const uint8_t *payload, uint32_t len);
extern int	client_unexpected(TcClient *client, Tcopy__FrameType got,
							  Tcopy__FrameType expected);
extern int	client_read_reply(TcClient *client, bool nowait, Tcopy__FrameType expected,
							  ProtobufCAllocator *allocator, ProtobufCMessage **msg);
/*
 * Take the deferred answers that have arrived (nowait) or all of them: 1
 * when none is owed any more, 0 when nowait and one has not arrived, -1 on
 * failure (the server's Error for the deferred request, say).
 */
extern int	client_take_deferred(TcClient *client, bool nowait);
/* Send msg of type, its answer (of type answer) deferred.  0, or -1. */
extern int	client_send_deferred(TcClient *client, Tcopy__FrameType type,
								 const ProtobufCMessage *msg, Tcopy__FrameType answer);
extern int	client_send_iov(TcClient *client, struct iovec *iov, int iovcnt);
extern int	client_send_message(TcClient *client, Tcopy__FrameType type,
								const ProtobufCMessage *msg);
extern int	client_take_ack(TcClient *client, const Tcopy__Ack *ack);
/* Keep a BeginOk's session id and key. */
extern void client_keep_session(TcClient *client, const Tcopy__BeginOk *ok);

/* in tc_client_requests.c: room in the window for one more batch */
extern int	client_make_room(TcClient *client);

#endif							/* TC_CLIENT_INT_H */
