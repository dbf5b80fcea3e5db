/*
 * ts_raft_transport_int.h
 *		What ts_raft_transport.c (the transport libraft calls: listening,
 *		connecting, a handshake's life, the stream handed over) and
 *		ts_raft_handshake.c (the handshake's messages and proofs) share.
 *		Private to the raft transport.
 */
#ifndef TS_RAFT_TRANSPORT_INT_H
#define TS_RAFT_TRANSPORT_INT_H

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <uv.h>

#include "tc_auth.h"
#include "ts_raft_transport.h"

#define TS_HS_MAGIC_SIZE 8
#define TS_HS_ADDRESS_MAX 256	/* bytes of a padded address, its NUL included */
/* HELLO_C up to the address: magic, id, nonce, the address's length */
#define TS_HS_HELLO_C_FIXED (TS_HS_MAGIC_SIZE + 8 + TC_NONCE_SIZE + 8)
#define TS_HS_HELLO_A_SIZE (TS_HS_MAGIC_SIZE + 8 + TC_NONCE_SIZE)
#define TS_HS_READ_MAX (TS_HS_HELLO_C_FIXED + TS_HS_ADDRESS_MAX + TC_AUTH_SIZE)

/* Where a handshake is. */
typedef enum TsHsPhase
{
	TS_HS_CONNECTING,			/* connector: the TCP connect in flight */
	TS_HS_C_HELLO,				/* connector: reading HELLO_A */
	TS_HS_C_PROOF,				/* connector: reading PROOF_A */
	TS_HS_A_HELLO,				/* acceptor: reading HELLO_C up to the address */
	TS_HS_A_ADDRESS,			/* acceptor: reading HELLO_C's address */
	TS_HS_A_PROOF,				/* acceptor: reading PROOF_C */
	TS_HS_PROVEN,				/* both proofs right; our writes still due */
	TS_HS_HANDED_OVER,			/* the stream is libraft's */
	TS_HS_FAILED				/* our handles closing */
} TsHsPhase;

/* Why a handshake failed, for the counters and the connect request. */
typedef enum TsHsFailure
{
	TS_HS_FAIL_OTHER,
	TS_HS_FAIL_TIMEOUT,
	TS_HS_FAIL_BAD_PROOF,		/* another secret, or none */
	TS_HS_FAIL_CANCELED			/* the transport closing: no counter, no log */
} TsHsFailure;

typedef struct TsRaftTransport TsRaftTransport;

/* A connection being proven, either way. */
typedef struct TsRaftHandshake
{
	TsRaftTransport *transport;
	bool		connector;		/* we connected (C), or we accepted (A) */
	TsHsPhase	phase;
	int			status;			/* the RAFT_* code a failed connect reports */
	unsigned	handles_open;	/* of deadline and tcp, not yet closed */
	uv_stream_t *stream;		/* a uv_tcp_t, or with TLS once TCP is up a
								 * uv_pipe_t to its relay (ts_raft_tls.c);
								 * raft_malloc'd on its own: libraft frees it
								 * with raft_free once it is handed over */
	uv_timer_t	deadline;
	uv_connect_t connect_req;
	struct raft_uv_connect *request;	/* libraft's, a connector's; NULL until
										 * connect returned 0 */
	uint64_t	peer_id;		/* C: the one asked for; A: the one claimed */
	char		peer_address[TS_HS_ADDRESS_MAX];	/* C: the one asked for; A:
													 * C's, claimed, then proven */
	char		peer_ip[64];	/* the TCP peer, for the log */
	uint8_t		own_nonce[TC_NONCE_SIZE];
	uint8_t		peer_nonce[TC_NONCE_SIZE];
	uint8_t		in[TS_HS_READ_MAX]; /* messages read; in[have..need) due */
	size_t		need;
	size_t		have;
	uint8_t		hello[TS_HS_HELLO_C_FIXED + TS_HS_ADDRESS_MAX]; /* ours, until
																 * written */
	uint8_t		proof[TC_AUTH_SIZE];	/* ours, until written */
	uv_write_t	writes[2];		/* the hello, the proof */
	unsigned	writes_pending;
	struct TsRaftHandshake *prev;
	struct TsRaftHandshake *next;
} TsRaftHandshake;

/* The transport: libraft's raft_uv_transport.impl. */
struct TsRaftTransport
{
	struct raft_uv_transport *raft_transport;
	uv_loop_t  *loop;
	uint64_t	id;				/* this member's, from init */
	char		address[TS_HS_ADDRESS_MAX]; /* this member's, copied at init */
	struct sockaddr_in listen_addr; /* the same, parsed */
	struct ssl_ctx_st *tls;		/* a reference of ours; NULL: the clear text
								 * of --raft-insecure-cleartext */
	char		secret[TS_RAFT_SECRET_MAX];
	size_t		secret_len;
	unsigned	handshake_ms;
	raft_uv_accept_cb accept_cb;
	TsRaftFetchCb fetch_cb;		/* NULL: no state served */
	void	   *fetch_arg;
	uv_tcp_t	listener;
	bool		listener_made;	/* uv_tcp_init'ed: close must close it */
	bool		listener_closed;
	TsRaftHandshake *handshakes;	/* every one whose memory is still ours */
	unsigned	incoming;		/* of them, accepted ones */
	bool		closing;
	bool		close_fired;
	raft_uv_transport_close_cb close_cb;
	TsRaftTransportStats stats;

	/*
	 * What a handshake (ts_raft_handshake.c) tells the transport, which
	 * started it: its end, either way it goes (once); that it is proven
	 * (the stream is handed to libraft once our writes are done too).
	 */
	void		(*handshake_fail) (TsRaftHandshake *hs, TsHsFailure failure, const char *why);
	void		(*handshake_proven) (TsRaftHandshake *hs);
};

/* in ts_raft_handshake.c: TCP is up, either way: start the messages */
extern void ts_raft_handshake_start(TsRaftHandshake *hs);
/* "a.b.c.d:port" into sa (no name looked up); 0, or -1 */
extern int	ts_raft_parse_address(const char *address, struct sockaddr_in *sa);

/*
 * in ts_raft_tls.c: relay tcp_fd (a connected TCP socket, the relay's from
 * now on, closed on failure too) in TLS with ctx, as its client
 * (connector) or its server, on a thread of its own: the other end of a
 * socket pair, to use in the clear in its place (non-blocking or not), or
 * -1.  The TLS handshake must end within handshake_ms; a failure is
 * logged with member_id and peer, and closes the pair.
 */
extern int	ts_raft_tls_relay(struct ssl_ctx_st *ctx, int tcp_fd, bool connector,
							  unsigned handshake_ms, uint64_t member_id, const char *peer,
							  bool nonblocking);

#endif							/* TS_RAFT_TRANSPORT_INT_H */
