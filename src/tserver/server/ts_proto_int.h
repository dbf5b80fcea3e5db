/*
 * ts_proto_int.h
 *		What ts_proto.c, the protocol's state machine (handshake,
 *		dispatch), the handlers of the requests it dispatches
 *		(ts_proto_requests.c, ts_proto_stats.c, ts_proto_streams.c) and
 *		what they all use (ts_proto_frame.c) share.  Private to the
 *		tserver's protocol.
 */
#ifndef TS_PROTO_INT_H
#define TS_PROTO_INT_H

#include "ts_proto.h"

#define PROTO_LOG_NAME_MAX 64	/* bytes of a client-supplied name in logs */
#define PROTO_GID_LOG_MAX 64	/* bytes of a gid in an error message */

/*
 * in ts_proto_frame.c: replies, unpacking within the decoding budget,
 * errors, the checks of a request against the connection
 */
extern int ts_proto_reply(TsProto *proto, Tcopy__FrameType type, const ProtobufCMessage *msg,
			TsError *err);
extern int ts_proto_reply_scan_batch(TsProto *proto, const Tcopy__ScanBatch *batch, bool packed,
			TsError *err);
extern void *ts_proto_unpack(TsProto *proto, const ProtobufCMessageDescriptor *descriptor,
			 const uint8_t *payload, uint32_t len, TsError *err);
extern Tcopy__WriteBatch *ts_proto_decode_write(TsProto *proto, const uint8_t *payload, uint32_t len,
				   Tcopy__WriteBatch *batch, TsError *err);
extern int ts_proto_unexpected(TsProto *proto, Tcopy__FrameType type, const char *why, TsError *err);
extern void ts_proto_printable(const char *src, char *dst, size_t dstlen);
/* Set proto's decode_allocator: the frame arena, within the budgets. */
extern void ts_proto_decode_allocator_init(TsProto *proto);
/* The current frame's message is done with: free it, give back its budget. */
extern void ts_proto_frame_done(TsProto *proto);
/* A long wait's give_up (arg: the TsProto): the client or the server is going away. */
extern bool ts_proto_give_up(void *arg);
/* seq must follow the connection's last_seq */
extern int ts_proto_check_seq(TsProto *proto, const char *what, uint64_t seq, TsError *err);
/* Whether a scoped connection opened table_id. */
extern bool ts_proto_scope_has_table(const TsProto *proto, uint32_t table_id);
/* may the connection name table_id (its scope)? */
extern int ts_proto_check_table_id(TsProto *proto, uint32_t table_id, TsError *err);
/*
 * The layout of the schema the connection last opened table_id with (its
 * WRITEs are laid out so, a stream's too), or NULL.
 */
extern const TsLayout *ts_proto_opened_layout(TsProto *proto, uint32_t table_id);

/* in ts_proto_stats.c: a scoped namespace's disk quota, weighed every so many bytes */
#define PROTO_QUOTA_EVERY_BYTES (16 * 1024 * 1024)
#define PROTO_QUOTA_SMALL_BYTES (64 * 1024)
extern int	ts_proto_quota_check(TsProto *proto, uint32_t len, bool force, TsError *err);

/* in ts_proto_requests.c: one handler per request frame */
extern int ts_proto_on_abort(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_begin(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_commit(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_list_labels(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_list_tables(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_snapshot(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_list_prepared(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_modify(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_open_table(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_prepare(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_resolve(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_rollback_to(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_scan(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_split(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_stats_request(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_table_op(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_write(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_backup(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_group(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);

/* in ts_proto_streams.c: streams of a write session */
extern int ts_proto_on_streams(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_join(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_chunk(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err);
extern int ts_proto_on_stream_write(TsProto *proto, const uint8_t *payload, uint32_t len,
									TsError *err);
#endif							/* TS_PROTO_INT_H */
