/*
 * ts_proto_frame.c
 *		What every handler of a connection's frames uses (ts_proto.c's
 *		dispatch, ts_proto_requests.c, ts_proto_stats.c,
 *		ts_proto_streams.c): replies, unpacking within the decoding budget
 *		(ts_proto.c's file comment says why it is bounded), protocol errors,
 *		and the checks of a request against the connection (its seq, its
 *		scope's tables).  It calls none of them.
 */
#include "ts_proto_int.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tc_client.h"
#include "ts_batch_decode.h"

#define PROTO_DECODE_POLL_MS 5	/* how often a waiting frame looks again */

static const char *const proto_phase_names[] = {
	"awaiting hello", "ready", "in write session", "in write session with streams",
	"in a stream of a write session"
};

/* Pack msg as a frame of type and send it.  Returns 0, or -1 with err. */
int
ts_proto_reply(TsProto *proto, Tcopy__FrameType type, const ProtobufCMessage *msg,
			TsError *err)
{
	int			rc;

	if (!tc_frame_append(&proto->out, type, msg))
	{
		proto->out.len = 0;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory packing a %s frame", tc_frame_type_name(type));
		return -1;
	}
	rc = proto->send(proto->send_arg, proto->out.data, proto->out.len, err);
	proto->out.len = 0;
	return rc;
}

/*
 * Send a SCAN_BATCH: a batch of packed rows that ts_scan_next made (packed,
 * with room around its rows) as a frame built around them, without copying
 * them; any other as ts_proto_reply.  0, or -1 with err.
 */
int
ts_proto_reply_scan_batch(TsProto *proto, const Tcopy__ScanBatch *batch, bool packed,
						  TsError *err)
{
	size_t		len;
	uint8_t    *frame = packed ? tc_frame_around_packed(batch, &len) : NULL;

	if (frame == NULL)
		return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH, &batch->base, err);
	return proto->send(proto->send_arg, frame, len, err);
}

/*
 * ProtobufCAllocator of the frame arena that refuses to pass the frame's
 * budget, or the total that all connections' frames share (charged here,
 * given back after the frame, proto_decode_uncharge).
 */
static void *
proto_decode_alloc(void *ctx, size_t size)
{
	TsProto    *proto = ctx;
	TsProtoShared *shared = proto->shared;

	if (size > proto->decode_budget ||
		proto->frame_arena.used_bytes > proto->decode_budget - size)
	{
		proto->decode_over_budget = true;
		return NULL;
	}
	if (shared->decode_total_bytes > 0)
	{
		size_t		before = atomic_fetch_add(&shared->decode_in_use, size);

		if (before + size > shared->decode_total_bytes || before + size < before)
		{
			atomic_fetch_sub(&shared->decode_in_use, size);
			proto->decode_over_total = true;
			/* what it needs at least, and what others hold */
			proto->decode_needed = proto->decode_charged + size;
			proto->decode_others = before - proto->decode_charged;
			return NULL;
		}
		if (proto->tenant != NULL)
		{
			/* a namespace may hold half of it: no tenant starves the others */
			size_t		mine = atomic_fetch_add(&proto->tenant->decode_in_use, size);

			if (mine + size > shared->decode_total_bytes / 2 || mine + size < mine)
			{
				atomic_fetch_sub(&proto->tenant->decode_in_use, size);
				atomic_fetch_sub(&shared->decode_in_use, size);
				proto->decode_over_total = proto->decode_over_share = true;
				proto->decode_needed = proto->decode_charged_share + size;
				proto->decode_others = mine - proto->decode_charged_share;
				return NULL;
			}
			proto->decode_charged_share += size;
		}
		proto->decode_charged += size;
	}
	return tc_arena_alloc(&proto->frame_arena, size);
}

/* Give back what the current frame holds of the total decode budget. */
static void
proto_decode_uncharge(TsProto *proto)
{
	if (proto->decode_charged > 0)
	{
		atomic_fetch_sub(&proto->shared->decode_in_use, proto->decode_charged);
		if (proto->tenant != NULL)
			atomic_fetch_sub(&proto->tenant->decode_in_use, proto->decode_charged_share);
		proto->decode_charged = proto->decode_charged_share = 0;
	}
}

/*
 * proto_decode_wait for a frame that ran out of its namespace's half of
 * the decoding memory: wait, as long, for the namespace's other
 * connections to give back enough.
 */
static bool
proto_decode_wait_share(TsProto *proto, const char *what, uint32_t len, int *waited_ms,
						TsError *err)
{
	TsProtoShared *shared = proto->shared;
	size_t		share = shared->decode_total_bytes / 2;
	char		ns[PROTO_LOG_NAME_MAX];

	while (proto->decode_others > 0 && proto->decode_needed <= share)
	{
		struct timespec pause = {0, PROTO_DECODE_POLL_MS * 1000000L};

		if (atomic_load(&proto->tenant->decode_in_use) + proto->decode_needed <= share)
			return true;
		if (*waited_ms >= shared->decode_wait_ms ||
			(shared->stopping != NULL && atomic_load(shared->stopping)))
			break;
		nanosleep(&pause, NULL);
		*waited_ms += PROTO_DECODE_POLL_MS;
	}
	ts_proto_printable(proto->tenant->ns, ns, sizeof(ns));
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
				 "a %s message of %" PRIu32 " bytes %s: namespace \"%s\" may hold %zu bytes "
				 "of decoding memory at once (half of --decode-memory-mb)", what, len,
				 proto->decode_others > 0 && proto->decode_needed <= share ?
				 "waited for decoding memory its namespace's other connections hold" :
				 "unpacks into more than its namespace may hold", ns, share);
	return false;
}

/*
 * After a decode that ran out of the total budget: give back what the
 * frame got, and wait for other connections to give back enough of theirs
 * for it.  Returns true to try again; false with err (ERROR_TOO_LARGE) when
 * the frame alone needs more than the total, when the wait is over, or
 * when the server is stopping.  Waiting, not failing at once, is what
 * keeps a normal COPY going beside a burst of large frames; the wait is
 * bounded so that a flood cannot hold connections forever.
 */
static bool
proto_decode_wait(TsProto *proto, const char *what, uint32_t len, int *waited_ms,
				  TsError *err)
{
	TsProtoShared *shared = proto->shared;

	proto_decode_uncharge(proto);
	tc_arena_reset(&proto->frame_arena);
	if (proto->decode_over_share)
		return proto_decode_wait_share(proto, what, len, waited_ms, err);
	if (proto->decode_others == 0 || proto->decode_needed > shared->decode_total_bytes)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "a %s message of %" PRIu32 " bytes unpacks into more than the %zu bytes "
					 "of memory all connections share for decoding (--decode-memory-mb)",
					 what, len, shared->decode_total_bytes);
		return false;
	}
	for (;;)
	{
		struct timespec pause = {0, PROTO_DECODE_POLL_MS * 1000000L};

		if (atomic_load(&shared->decode_in_use) + proto->decode_needed <= shared->decode_total_bytes)
			return true;
		if (*waited_ms >= shared->decode_wait_ms ||
			(shared->stopping != NULL && atomic_load(shared->stopping)))
			break;
		nanosleep(&pause, NULL);
		*waited_ms += PROTO_DECODE_POLL_MS;
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
				 "the tserver is overloaded: a %s message of %" PRIu32 " bytes waited %d ms "
				 "for decoding memory, all %zu bytes of which other connections hold "
				 "(--decode-memory-mb)", what, len, *waited_ms, shared->decode_total_bytes);
	return false;
}

/* Arena memory is freed by the reset after each frame. */
static void
proto_decode_free(void *ctx, void *ptr)
{
	(void) ctx;
	(void) ptr;
}

/*
 * Unpack a payload into the frame arena; NULL with err when malformed
 * (ERROR_PROTOCOL) or when it would take more than the decode budget
 * (ERROR_TOO_LARGE).
 */
void *
ts_proto_unpack(TsProto *proto, const ProtobufCMessageDescriptor *descriptor,
			 const uint8_t *payload, uint32_t len, TsError *err)
{
	ProtobufCMessage *msg;
	int			waited_ms = 0;

	for (;;)
	{
		proto->decode_over_budget = proto->decode_over_total = proto->decode_over_share = false;
		msg = protobuf_c_message_unpack(descriptor, &proto->decode_allocator, len, payload);
		if (msg != NULL)
			return msg;
		if (!proto->decode_over_total)
			break;
		if (!proto_decode_wait(proto, descriptor->short_name, len, &waited_ms, err))
			return NULL;
	}
	if (proto->decode_over_budget)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "a %s message of %" PRIu32 " bytes unpacks into more than %zu bytes of memory",
					 descriptor->short_name, len, proto->decode_budget);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "malformed %s message", descriptor->short_name);
	return NULL;
}

/*
 * Decode a WRITE payload into *batch, as ts_proto_unpack would, with
 * ts_batch_decode: its arrays in the frame arena, within the decode budget,
 * its blobs pointing into payload (valid until the next frame is read, and
 * the batch is done with before).  Returns batch, or NULL with err.
 */
Tcopy__WriteBatch *
ts_proto_decode_write(TsProto *proto, const uint8_t *payload, uint32_t len,
				   Tcopy__WriteBatch *batch, TsError *err)
{
	int			waited_ms = 0;

	for (;;)
	{
		proto->decode_over_budget = proto->decode_over_total = proto->decode_over_share = false;
		switch (ts_batch_decode(payload, len, &proto->decode_allocator, batch))
		{
			case TS_BATCH_DECODE_OK:
				return batch;
			case TS_BATCH_DECODE_MALFORMED:
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
							 "malformed %s message", tcopy__write_batch__descriptor.short_name);
				return NULL;
			case TS_BATCH_DECODE_NO_MEMORY:
				break;
		}
		if (!proto->decode_over_total)
			break;
		if (!proto_decode_wait(proto, tcopy__write_batch__descriptor.short_name, len,
							   &waited_ms, err))
			return NULL;
	}
	if (proto->decode_over_budget)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_TOO_LARGE,
					 "a %s message of %" PRIu32 " bytes unpacks into more than %zu bytes of memory",
					 tcopy__write_batch__descriptor.short_name, len, proto->decode_budget);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory decoding a %s message of %" PRIu32 " bytes",
					 tcopy__write_batch__descriptor.short_name, len);
	return NULL;
}

/* A frame that is not allowed now: always a protocol error. */
int
ts_proto_unexpected(TsProto *proto, Tcopy__FrameType type, const char *why, TsError *err)
{
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "unexpected %s frame in proto \"%s\"%s%s",
				 tc_frame_type_name(type), proto_phase_names[proto->phase],
				 why ? ": " : "", why ? why : "");
	return -1;
}

/* Copy a client-supplied string for a log line: bounded, printable. */
void
ts_proto_printable(const char *src, char *dst, size_t dstlen)
{
	size_t		i;

	for (i = 0; src[i] != '\0' && i + 1 < dstlen; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

/* Set proto's ProtobufCAllocator to the frame arena, within its budgets. */
void
ts_proto_decode_allocator_init(TsProto *proto)
{
	proto->decode_allocator.alloc = proto_decode_alloc;
	proto->decode_allocator.free = proto_decode_free;
	proto->decode_allocator.allocator_data = proto;
}

/*
 * Whether a request's long wait should stop (a close waiting for the
 * streams' chunks, a prepare or commit held back behind an in-doubt
 * session): the server is stopping, or the client closed its connection.
 * Nothing else would wake the waiting thread (and, for the streams, those
 * waiting for their turn with it).
 */
bool
ts_proto_give_up(void *arg)
{
	TsProto    *proto = arg;
	struct pollfd pfd = {.fd = proto->peer_fd, .events = POLLRDHUP};

	if (proto->shared->stopping != NULL && atomic_load(proto->shared->stopping))
		return true;
	return proto->peer_fd >= 0 && poll(&pfd, 1, 0) > 0 &&
		(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* The current frame's message is done with: free it, give back its budget. */
void
ts_proto_frame_done(TsProto *proto)
{
	tc_arena_reset(&proto->frame_arena);
	proto_decode_uncharge(proto);
}

/* Whether a scoped connection opened table_id. */
bool
ts_proto_scope_has_table(const TsProto *proto, uint32_t table_id)
{
	for (size_t i = 0; i < proto->nscope_tables; i++)
	{
		if (proto->scope_tables[i] == table_id)
			return true;
	}
	return false;
}

/*
 * A scoped connection may name a table id only when it opened that table
 * (its name checked then): an id it did not open is refused whether or not
 * a table has it.  0, or -1 with err (ERROR_PERMISSION).
 */
int
ts_proto_check_table_id(TsProto *proto, uint32_t table_id, TsError *err)
{
	if (proto->scope == NULL || ts_proto_scope_has_table(proto, table_id))
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PERMISSION,
				 "permission denied for tserver table id %" PRIu32 ": this connection did not open it",
				 table_id);
	return -1;
}

const TsLayout *
ts_proto_opened_layout(TsProto *proto, uint32_t table_id)
{
	for (size_t i = 0; i < proto->nopened; i++)
		if (proto->opened[i].table_id == table_id)
			return &proto->opened[i].layout;
	return NULL;
}

/* A batch (or modify, or a stream's chunk end) must be next: 0, or -1 with err. */
int
ts_proto_check_seq(TsProto *proto, const char *what, uint64_t seq, TsError *err)
{
	if (seq == proto->last_seq + 1)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "%s out of order: expected seq %" PRIu64 ", got %" PRIu64,
				 what, proto->last_seq + 1, seq);
	return -1;
}
