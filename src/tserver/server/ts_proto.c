/*
 * ts_proto.c
 *		The tserver's protocol for one connection: handshake,
 *		authentication and the state machine, apart from any socket.
 *
 * The server speaks first (SERVER_HELLO with a fresh nonce), expects
 * HELLO, then serves requests one at a time in the order they come.  The
 * phases: awaiting HELLO, ready, in a write session (with it open to
 * streams, or not), and joined to another connection's session as one of
 * its streams (ts_proto_streams.c); each
 * frame type is allowed in some of them, and anything else (including the
 * types only a server sends) is a protocol error.  A PREPARE ends the
 * session as a COMMIT does, but leaves the connection owning the prepared
 * session (in the store's registry) until it resolves it or ends: it may
 * not BEGIN before.
 *
 * Nothing a client sends is trusted.  A frame's header is checked against
 * the size limit before a byte of its payload is read (by the caller, with
 * ts_proto_frame_limit and ts_proto_check_header), and every payload is
 * unpacked by protobuf-c, whose result is NULL for anything malformed.
 * The memory a payload unpacks into is bounded too (PROTO_DECODE_FACTOR
 * times the frame limit, plus PROTO_DECODE_SLACK): protobuf-c allocates a
 * message struct, a pointer and scan state for every repeated element, so
 * a WRITE of empty rows, two bytes each, would otherwise take some 70
 * times its size.  WRITE, the frame of the hot path, is decoded by
 * ts_batch_decode instead (the same result as protobuf-c, from fewer
 * allocations, blobs left in the frame buffer; see ts_batch_decode.h),
 * within the same budget.  Until the handshake is done, frames are limited
 * to PROTO_HELLO_MAX bytes, so that a client that has not proven anything
 * cannot make the server reserve a large buffer.
 *
 * The hot path (WRITE -> ACK) allocates nothing once warmed up: a payload
 * is unpacked into an arena that is reset after each frame, and replies
 * are packed into one reused buffer and handed to the send function.
 */
#include "ts_proto_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_client.h"
#include "ts_batch_decode.h"
#include "ts_clock.h"
#include "ts_log.h"

#define PROTO_ARENA_BLOCK (256 * 1024)	/* holds a typical WriteBatch */
#define PROTO_HELLO_MAX (64 * 1024) /* largest frame before the handshake */
#define PROTO_DECODE_FACTOR 16	/* unpacked bytes per byte of frame limit */
#define PROTO_DECODE_SLACK (16 * 1024 * 1024)
#define PROTO_DECODE_WAIT_MS 30000	/* default wait for the total budget */

void
ts_proto_shared_init(TsProtoShared *shared, uint32_t max_frame_bytes)
{
	memset(shared, 0, sizeof(*shared));
	shared->max_frame_bytes = max_frame_bytes;
	shared->start_us = ts_monotonic_us();
	atomic_init(&shared->connections_open, 0);
	atomic_init(&shared->connections_total, 0);
	atomic_init(&shared->batches_received, 0);
	atomic_init(&shared->bytes_received, 0);
	atomic_init(&shared->decode_in_use, 0);
	shared->decode_wait_ms = PROTO_DECODE_WAIT_MS;
	/* none yet, never NULL (calloc failing leaves it NULL: set_credentials then) */
	atomic_init(&shared->credentials, calloc(1, sizeof(TsCredentials)));
}

int
ts_proto_set_credentials(TsProtoShared *shared, TsCredentials *creds)
{
	TsCredentials *fresh = malloc(sizeof(TsCredentials));
	TsCredentials **grown = realloc(shared->retired,
									(shared->nretired + 1) * sizeof(TsCredentials *));
	TsCredentials *old;

	if (grown != NULL)
		shared->retired = grown;
	if (fresh == NULL || grown == NULL)
	{
		free(fresh);
		return -1;
	}
	*fresh = *creds;
	memset(creds, 0, sizeof(*creds));
	old = atomic_exchange(&shared->credentials, fresh);
	if (old != NULL)
		shared->retired[shared->nretired++] = old;
	return 0;
}

void
ts_proto_shared_free(TsProtoShared *shared)
{
	TsCredentials *creds = atomic_load(&shared->credentials);

	if (creds != NULL)
	{
		ts_auth_free(creds);
		free(creds);
	}
	for (size_t i = 0; i < shared->nretired; i++)
	{
		ts_auth_free(shared->retired[i]);
		free(shared->retired[i]);
	}
	free(shared->retired);
}

uint32_t
ts_proto_frame_limit(const TsProto *proto)
{
	uint32_t	max = proto->shared->max_frame_bytes;

	if (proto->phase == TS_PROTO_AWAIT_HELLO && max > PROTO_HELLO_MAX)
		max = PROTO_HELLO_MAX;
	return max;
}

int
ts_proto_check_header(const TsProto *proto, const uint8_t *header,
					  Tcopy__FrameType *type, uint32_t *len, TsError *err)
{
	uint32_t	max = ts_proto_frame_limit(proto);
	const char *why;

	if (!tc_frame_get_header(header, max, type, len, &why))
	{
		uint32_t	claimed = ((uint32_t) header[0] << 24) | ((uint32_t) header[1] << 16) |
			((uint32_t) header[2] << 8) | (uint32_t) header[3];

		if (header[4] > TCOPY__FRAME_TYPE__FRAME_NONE &&
			header[4] <= TC_FRAME_TYPE_LAST && claimed > max)
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
						 "%s frame of %" PRIu32 " bytes exceeds the limit of %" PRIu32 " bytes%s",
						 tc_frame_type_name((Tcopy__FrameType) header[4]), claimed, max,
						 proto->phase == TS_PROTO_AWAIT_HELLO ? " before the handshake" : "");
		else
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "invalid frame header (type %u, length %" PRIu32 "): %s",
						 (unsigned) header[4], claimed, why);
		return -1;
	}
	return 0;
}

/* See ts_proto.h for the contracts of the exported functions. */

int
ts_proto_greet(TsProto *proto, bool admitted, TsError *err)
{
	TsProtoShared *shared = proto->shared;
	Tcopy__ServerHello hello = TCOPY__SERVER_HELLO__INIT;

	if (tc_auth_make_nonce(proto->nonce) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not generate a nonce: %s", strerror(errno));
		return -1;
	}
	proto->auth_required = !admitted;
	hello.version = TC_PROTOCOL_VERSION;
	hello.server = (char *) "tserver " TS_VERSION;
	hello.nonce.data = proto->nonce;
	hello.nonce.len = sizeof(proto->nonce);
	hello.auth_required = proto->auth_required;
	hello.auth_offered = atomic_load(&shared->credentials)->n > 0;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO, &hello.base, err);
}

/*
 * The proof in hello: find the credential it was made with, take its
 * scope, and make the server's proof into server_proof.  0, or -1 with err
 * (ERROR_AUTH).
 */
static int
proto_check_proof(TsProto *proto, const Tcopy__Hello *hello,
				  uint8_t server_proof[TC_AUTH_SIZE], TsError *err)
{
	const TsCredential *cred;
	const TsCredentials *creds = atomic_load(&proto->shared->credentials);

	if (creds->n == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "authentication failed: HELLO carries a proof, but this server holds no tokens");
		return -1;
	}
	if (hello->nonce.len != TC_NONCE_SIZE)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "authentication failed: the client's nonce is %zu bytes instead of %d",
					 hello->nonce.len, TC_NONCE_SIZE);
		return -1;
	}
	/* bound to both nonces: a proof seen elsewhere fails */
	cred = ts_auth_find(creds, proto->nonce, hello->nonce.data,
						proto->bound ? proto->binding : NULL, hello->auth.data, hello->auth.len);
	if (cred == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 proto->bound ?
					 "authentication failed: wrong proof for this connection (no token of this "
					 "server made it over this TLS channel: a client that was shown another "
					 "certificate, by a proxy between, proves nothing here)" :
					 "authentication failed: wrong proof for this connection (no token of this server made it)");
		return -1;
	}
	if (!tc_auth_prove(cred->token, cred->token_len, TC_AUTH_SERVER, proto->nonce,
					   hello->nonce.data, proto->bound ? proto->binding : NULL, server_proof))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not compute the server's proof");
		return -1;
	}
	if (cred->namespace != NULL)
	{
		int			open = 0;
		char		ns[PROTO_LOG_NAME_MAX];

		/* no tenant takes every connection */
		proto->tenant = ts_tenants_enter(&proto->shared->tenants, cred->namespace,
										 cred->namespace_len, &open);
		if (proto->tenant == NULL)
		{
			ts_proto_printable(cred->namespace, ns, sizeof(ns));
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_MANY_CONNECTIONS,
						 "too many connections for namespace \"%s\": %d are open "
						 "(--max-namespace-connections)", ns, open);
			return -1;
		}
	}
	proto->scope = cred->namespace;
	proto->scope_len = cred->namespace_len;
	return 0;
}

/*
 * HELLO: check the version and the client's proof of a token (required
 * unless the peer was admitted without one); answer READY, with the
 * server's proof when the client gave one.
 */
static int
proto_on_hello(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Hello *hello;
	Tcopy__Ready ready = TCOPY__READY__INIT;
	uint8_t		server_proof[TC_AUTH_SIZE];
	char		client[PROTO_LOG_NAME_MAX];
	char		scope[PROTO_LOG_NAME_MAX];
	int			rc;

	if (proto->phase != TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_HELLO, NULL, err);
	hello = ts_proto_unpack(proto, &tcopy__hello__descriptor, payload, len, err);
	if (hello == NULL)
		return -1;
	if (hello->version != TC_PROTOCOL_VERSION)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unsupported protocol version %u (this server speaks version %d): "
					 "use a client of the same release as the tserver",
					 hello->version, TC_PROTOCOL_VERSION);
		return -1;
	}
	if (hello->auth.len > 0)
	{
		if (proto_check_proof(proto, hello, server_proof, err) != 0)
			return -1;
		ready.auth.data = server_proof;
		ready.auth.len = sizeof(server_proof);
	}
	else if (proto->auth_required)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_AUTH,
					 "authentication failed: the server requires a token and HELLO carries no proof");
		return -1;
	}

	ts_proto_printable(hello->client, client, sizeof(client));
	ts_proto_printable(proto->scope ? proto->scope : "", scope, sizeof(scope));
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": client \"%s\" ready, %s%s%s",
		   proto->id, client, proto->scope ? "namespace \"" : "full access", scope,
		   proto->scope ? "\"" : "");
	/* a follower tells the client who leads, and only an authenticated one */
	if (proto->shared->group != NULL)
	{
		if (!ts_group_serving(proto->shared->group, 0, err))
			return -1;
		proto->group_epoch = ts_group_epoch(proto->shared->group);
	}
	proto->phase = TS_PROTO_READY;
	ready.connection_id = proto->id;
	rc = ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_READY, &ready.base, err);
	tc_auth_forget(server_proof, sizeof(server_proof));
	return rc;
}

/* Act on one frame.  Returns 0, or -1 with err (the connection ends). */
static int
proto_dispatch(TsProto *proto, Tcopy__FrameType type, const uint8_t *payload,
			   uint32_t len, TsError *err)
{
	/* before the handshake, nothing but HELLO is even looked at */
	if (proto->phase == TS_PROTO_AWAIT_HELLO && type != TCOPY__FRAME_TYPE__FRAME_HELLO)
		return ts_proto_unexpected(proto, type, "the client must send HELLO first", err);
	/* a member that stopped leading since READY serves the client no more */
	if (proto->phase != TS_PROTO_AWAIT_HELLO && proto->shared->group != NULL &&
		!ts_group_serving(proto->shared->group, proto->group_epoch, err))
		return -1;

	switch (type)
	{
		case TCOPY__FRAME_TYPE__FRAME_HELLO:
			return proto_on_hello(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE:
			return ts_proto_on_open_table(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_BEGIN:
			return ts_proto_on_begin(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_WRITE:
			return ts_proto_on_write(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_MODIFY:
			return ts_proto_on_modify(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO:
			return ts_proto_on_rollback_to(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_COMMIT:
			return ts_proto_on_commit(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_ABORT:
			return ts_proto_on_abort(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_SCAN:
			return ts_proto_on_scan(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_SPLIT:
			return ts_proto_on_split(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_TABLE_OP:
			return ts_proto_on_table_op(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST:
			return ts_proto_on_stats_request(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_PREPARE:
			return ts_proto_on_prepare(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_RESOLVE:
			return ts_proto_on_resolve(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_LIST_PREPARED:
			return ts_proto_on_list_prepared(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_LIST_LABELS:
			return ts_proto_on_list_labels(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_LIST_TABLES:
			return ts_proto_on_list_tables(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_SNAPSHOT:
			return ts_proto_on_snapshot(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_STREAMS:
			return ts_proto_on_streams(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_JOIN:
			return ts_proto_on_join(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_CHUNK:
			return ts_proto_on_chunk(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_BACKUP:
			return ts_proto_on_backup(proto, payload, len, err);
		case TCOPY__FRAME_TYPE__FRAME_GROUP:
			return ts_proto_on_group(proto, payload, len, err);
		default:
			break;
	}
	return ts_proto_unexpected(proto, type, "only a server sends it", err);
}

int
ts_proto_handle_frame(TsProto *proto, Tcopy__FrameType type,
					  const uint8_t *payload, uint32_t len, TsError *err)
{
	int			rc = proto_dispatch(proto, type, payload, len, err);

	ts_proto_frame_done(proto);
	return rc;
}

void
ts_proto_init(TsProto *proto, TsProtoShared *shared, uint64_t id,
			  TsProtoSendFn send, void *send_arg)
{
	memset(proto, 0, sizeof(*proto));
	proto->shared = shared;
	proto->id = id;
	proto->phase = TS_PROTO_AWAIT_HELLO;
	proto->send = send;
	proto->send_arg = send_arg;
	proto->peer_fd = -1;
	tc_arena_init(&proto->frame_arena, PROTO_ARENA_BLOCK);
	tc_arena_init(&proto->scan_arena, PROTO_ARENA_BLOCK);
	ts_proto_decode_allocator_init(proto);
	proto->decode_budget = (size_t) shared->max_frame_bytes * PROTO_DECODE_FACTOR +
		PROTO_DECODE_SLACK;
}

void
ts_proto_set_decode_budget(TsProto *proto, size_t bytes)
{
	proto->decode_budget = bytes;
}

bool
ts_proto_authenticated(const TsProto *proto)
{
	return proto->phase != TS_PROTO_AWAIT_HELLO;
}

void
ts_proto_set_binding(TsProto *proto, const uint8_t binding[TC_BINDING_SIZE])
{
	memcpy(proto->binding, binding, TC_BINDING_SIZE);
	proto->bound = true;
}

bool
ts_proto_idle(const TsProto *proto)
{
	return proto->phase == TS_PROTO_READY && proto->scan == NULL && proto->snapshot == NULL &&
		!ts_store_prepared_owned(proto->shared->store, proto->id, NULL, 0);
}

void
ts_proto_release(TsProto *proto)
{
	if (proto->scan != NULL)
	{
		ts_scan_close(proto->scan);
		proto->scan = NULL;
	}
	ts_snapshot_unref(proto->shared->store, proto->snapshot);
	proto->snapshot = NULL;
	if (proto->stream != NULL)
	{
		ts_stream_leave(proto->stream);
		proto->stream = NULL;
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 " left the streams of a write session",
			   proto->id);
	}
	if (proto->session != NULL)
	{
		ts_session_abort(proto->session);
		proto->session = NULL;
		ts_log(TS_LOG_INFO, "connection %" PRIu64 " closed with an open session: aborted",
			   proto->id);
	}
	/* a prepared session outlives its connection, orphaned */
	if (proto->phase != TS_PROTO_AWAIT_HELLO)
		ts_store_prepared_detach(proto->shared->store, proto->id);
	proto->phase = TS_PROTO_AWAIT_HELLO;
	tc_buf_free(&proto->out);
	ts_proto_frame_done(proto);		/* gives back the budget it holds */
	tc_arena_free(&proto->frame_arena);
	tc_arena_free(&proto->scan_arena);
	free(proto->scope_tables);
	proto->scope_tables = NULL;
	proto->nscope_tables = proto->scope_tables_cap = 0;
	for (size_t i = 0; i < proto->nopened; i++)
		ts_layout_free(&proto->opened[i].layout);
	free(proto->opened);
	proto->opened = NULL;
	proto->nopened = proto->opened_cap = 0;
	if (proto->tenant != NULL)
		ts_tenants_leave(&proto->shared->tenants, proto->tenant);
	proto->tenant = NULL;
	proto->scope = NULL;
}
