/*
 * ts_proto.h
 *		The tserver's protocol for one connection, apart from any socket:
 *		what ts_conn.c feeds the frames it reads from a socket, and what
 *		the fuzzer (test/fuzz/fuzz_frames.c) feeds frames from a buffer.
 *
 * A caller makes a TsProto for a connection, greets (SERVER_HELLO), then
 * for each frame checks its header (ts_proto_frame_limit or
 * ts_proto_check_header) before reading its payload, and hands the frame
 * to ts_proto_handle_frame.  Replies go out through the send function.
 * The first error ends the connection: the caller reports it (an Error
 * frame when its code is not ERROR_NONE) and releases the TsProto, which
 * aborts what is open.
 */
#ifndef TS_PROTO_H
#define TS_PROTO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tc_arena.h"
#include "tc_auth.h"
#include "tc_buf.h"
#include "tc_frame.h"
#include "ts_auth.h"
#include "ts_codec.h"
#include "ts_group.h"
#include "ts_store.h"
#include "ts_tenants.h"

#ifndef TS_VERSION
#define TS_VERSION "0.1.0"
#endif

/*
 * What the protocol of every connection shares: set before serving
 * starts, but for the counters, which are atomic.
 */
typedef struct TsProtoShared
{
	TsStore    *store;
	TsGroup    *group;			/* a replica group member's; NULL: alone */
	TsCredentials *_Atomic credentials; /* tokens accepted (never NULL; none:
										 * no token auth); replaced whole at a
										 * reload (ts_proto_set_credentials) */
	TsCredentials **retired;	/* replaced ones, [nretired]: a connection
								 * proven with one keeps pointing into it */
	size_t		nretired;
	uint32_t	max_frame_bytes;	/* largest payload accepted from a client */
	size_t		decode_total_bytes; /* all connections' frames unpack into at
									 * most this together; 0: no total */
	int			decode_wait_ms; /* a frame waits this long for the total */
	const atomic_bool *stopping;	/* set on shutdown: stop waiting; may be
									 * NULL */
	uint64_t	start_us;		/* ts_monotonic_us, for uptime */
	const char *backup_root;	/* BACKUP's directories must be under it;
								 * NULL: anywhere (the fuzzer sets it) */
	atomic_size_t decode_in_use;	/* bytes unpacked by frames being handled */
	const atomic_int *unauthenticated;	/* the server's count of connections
										 * before READY; may be NULL */
	TsTenants	tenants;		/* each namespace's connections (zeroed: no
								 * limit) */

	/* counters reported by Stats */
	atomic_uint_fast64_t connections_open;
	atomic_uint_fast64_t connections_total; /* also hands out connection ids */
	atomic_uint_fast64_t batches_received;
	atomic_uint_fast64_t bytes_received;	/* frame bytes, headers included */
} TsProtoShared;

/* Where a connection is in the protocol. */
typedef enum TsProtoPhase
{
	TS_PROTO_AWAIT_HELLO,		/* SERVER_HELLO sent */
	TS_PROTO_READY,				/* handshake done, no write session */
	TS_PROTO_IN_SESSION,		/* a write session is open */
	TS_PROTO_STREAMING,			/* ... and open to streams: only they write */
	TS_PROTO_STREAM				/* joined another connection's session */
} TsProtoPhase;

/*
 * Deliver len bytes of packed reply frames, all of them; -1 with err
 * otherwise (code ERROR_NONE when the peer is gone).
 */
typedef int (*TsProtoSendFn) (void *arg, const uint8_t *bytes, size_t len,
							  TsError *err);

/* The protocol state of one connection; its fields are ts_proto.c's. */
/*
 * A table this connection opened with a schema, and that schema's layout
 * (its own, built without missing values: only writes use it).  A table
 * another connection altered since (ADD or DROP COLUMN, or their ROLLBACK)
 * is still written as this client lays its rows out.
 */
typedef struct TsProtoOpened
{
	uint32_t	table_id;
	TsLayout	layout;
} TsProtoOpened;

typedef struct TsProto
{
	TsProtoShared *shared;
	uint64_t	id;				/* connection_id sent in Ready, and in logs */
	TsProtoPhase phase;
	TsSession  *session;		/* open in TS_PROTO_IN_SESSION, STREAMING */
	TsStream   *stream;			/* in TS_PROTO_STREAM: the session joined */
	uint64_t	last_seq;		/* the session's last WriteBatch; 0: none */
	TsScan	   *scan;			/* open while a scan is streamed */
	TsSnapshot *snapshot;		/* taken by SNAPSHOT, until the connection ends */
	uint8_t		nonce[TC_NONCE_SIZE];	/* the server's, in SERVER_HELLO */
	bool		auth_required;	/* HELLO must carry a proof */
	TsTenant   *tenant;			/* a scoped connection's namespace, counted
								 * in shared->tenants; NULL: full access */
	bool		bound;			/* TLS: proofs carry binding (tc_auth.h) */
	uint64_t	quota_unweighed;	/* bytes received since the namespace's
									 * disk was last weighed */
	uint8_t		binding[TC_BINDING_SIZE];
	const char *scope;			/* the namespace the credential reaches;
								 * NULL: full access */
	size_t		scope_len;
	uint32_t   *scope_tables;	/* scoped: ids of the tables OPEN_TABLE */
	size_t		nscope_tables;	/* allowed, the only ones other frames */
	size_t		scope_tables_cap;	/* may name */
	TsProtoOpened *opened;		/* the layouts of the schemas tables were
								 * last opened with: this client's rows */
	size_t		nopened;
	size_t		opened_cap;
	TcBuf		out;			/* replies packed, not yet sent */
	TcArena		frame_arena;	/* the current frame's message; reset per frame */
	ProtobufCAllocator decode_allocator;	/* frame_arena, within decode_budget */
	size_t		decode_budget;	/* bytes one frame may unpack into */
	bool		decode_over_budget; /* the current frame needed more */
	bool		decode_over_total;	/* ... than all connections have left */
	bool		decode_over_share;	/* ... than its namespace may hold: the
									 * needed and others below are its */
	size_t		decode_charged; /* bytes of decode_in_use the frame holds */
	size_t		decode_charged_share;	/* of them, charged to tenant (its
										 * HELLO's are not: no tenant yet) */
	size_t		decode_needed;	/* over the total: bytes it needs at least */
	size_t		decode_others;	/* over the total: bytes others held */
	TcArena		scan_arena;		/* the current ScanBatch's rows */
	TsProtoSendFn send;
	void	   *send_arg;
	int			peer_fd;		/* the client's socket, -1: none (a fuzzer):
								 * a long wait gives up when it closes */
	uint64_t	group_epoch;	/* a group member's serving epoch at READY */
} TsProto;

/*
 * Zero the counters and start the uptime clock; no store, no credentials
 * (ts_auth_add to shared->credentials), no total decode budget yet.
 */
void		ts_proto_shared_init(TsProtoShared *shared, uint32_t max_frame_bytes);

/*
 * Accept creds (taken over, emptied) from now on, instead of the current
 * ones, which are kept until ts_proto_shared_free.  0, or -1 (out of
 * memory: nothing changed).  One thread at a time.
 */
int			ts_proto_set_credentials(TsProtoShared *shared, TsCredentials *creds);

/* Forget the credentials. */
void		ts_proto_shared_free(TsProtoShared *shared);

/*
 * Prepare proto for connection id, awaiting HELLO, with a decode budget
 * derived from the frame limit.
 */
/* Fill stats with the server-wide counters, then the store's. */
void		ts_proto_fill_stats(TsProtoShared *shared, Tcopy__Stats *stats);

void		ts_proto_init(TsProto *proto, TsProtoShared *shared, uint64_t id,
						  TsProtoSendFn send, void *send_arg);

/* Replace the decode budget (the fuzzer makes it small). */
void		ts_proto_set_decode_budget(TsProto *proto, size_t bytes);

/*
 * Send SERVER_HELLO with a fresh nonce.  admitted: the peer has full access
 * without a proof (its uid is allowed, or the server is --insecure);
 * otherwise HELLO must prove a token.  Returns 0, or -1 with err.
 */
int			ts_proto_greet(TsProto *proto, bool admitted, TsError *err);

/* Whether the handshake is done. */
bool		ts_proto_authenticated(const TsProto *proto);

/* The connection is TLS: bind the proofs to its certificate's hash. */
void		ts_proto_set_binding(TsProto *proto, const uint8_t binding[TC_BINDING_SIZE]);

/*
 * Whether the connection holds nothing the client may come back for: no
 * write session, stream, scan, snapshot, nor a prepared session of its own
 * (what --idle-timeout may close).
 */
bool		ts_proto_idle(const TsProto *proto);

/* The largest payload a frame may have now: small until the handshake. */
uint32_t	ts_proto_frame_limit(const TsProto *proto);

/*
 * Decode a frame header[TC_FRAME_HEADER_SIZE] and check it against
 * ts_proto_frame_limit, before any payload is read.  Returns 0, or -1 with
 * err saying what is wrong in the protocol's words.
 */
int			ts_proto_check_header(const TsProto *proto, const uint8_t *header,
								  Tcopy__FrameType *type, uint32_t *len,
								  TsError *err);

/*
 * Act on one frame whose header passed the check, replying through send.
 * Returns 0, or -1 with err: the connection must then end.
 */
int			ts_proto_handle_frame(TsProto *proto, Tcopy__FrameType type,
								  const uint8_t *payload, uint32_t len,
								  TsError *err);

/* Close the open scan, abort the open session (logged), free everything. */
void		ts_proto_release(TsProto *proto);

#endif							/* TS_PROTO_H */
