/*
 * tc_frame.h
 *		Framing of the tcopy wire protocol, shared by the extension, the
 *		client library and the tserver (no Postgres headers).
 *
 * A frame is a 5-byte header (payload length as a 4-byte big-endian
 * integer, then one byte of frame type, Tcopy__FrameType) followed by the
 * payload, a packed protobuf message.  The header is decoded and its length
 * checked against the receiver's limit before a single payload byte is read,
 * so a peer cannot make the other side allocate more than that limit.
 */
#ifndef TC_FRAME_H
#define TC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_buf.h"
#include "tcopy.pb-c.h"

#define TC_PROTOCOL_VERSION 7
#define TC_FRAME_HEADER_SIZE 5
#define TC_FRAME_TYPE_LAST TCOPY__FRAME_TYPE__FRAME_SPLIT_OK	/* the highest known */
#define TC_FRAME_MAX_DEFAULT (64u * 1024 * 1024)	/* bytes of payload */

/* Write a header for a payload of payload_len bytes into header[5]. */
void		tc_frame_put_header(uint8_t *header, Tcopy__FrameType type,
								uint32_t payload_len);

/*
 * Decode header[5].  Returns false (with *why set to a static message) when
 * the length exceeds max_payload or the type is unknown.
 */
bool		tc_frame_get_header(const uint8_t *header, uint32_t max_payload,
								Tcopy__FrameType *type, uint32_t *payload_len,
								const char **why);

/*
 * Append a whole frame (header and packed msg) to buf; false when malloc
 * fails or the packed message exceeds the largest frame the protocol has.
 */
bool		tc_frame_append(TcBuf *buf, Tcopy__FrameType type,
							const ProtobufCMessage *msg);

/*
 * Room the packed rows of a ScanBatch need before and after them for
 * tc_frame_around_packed.
 */
#define TC_FRAME_PACKED_HEADROOM 64
#define TC_FRAME_PACKED_TAILROOM 16

/*
 * The SCAN_BATCH frame of batch, built around its packed rows in place
 * rather than copied after them: a batch of a megabyte would otherwise be
 * copied once more for every frame.  batch->packed.data must have
 * TC_FRAME_PACKED_HEADROOM writable bytes before it and
 * TC_FRAME_PACKED_TAILROOM after its packed.len; the frame starts at the
 * pointer returned, *len bytes, byte for byte what tc_frame_append writes
 * (protobuf-c's field order: done, filtered, packed, n_packed).  NULL
 * when batch is not of packed rows alone (rows, groups, or no packed
 * bytes): then tc_frame_append.
 */
uint8_t    *tc_frame_around_packed(const Tcopy__ScanBatch *batch, size_t *len);

/* The name of a frame type, for logs and error messages. */
const char *tc_frame_type_name(Tcopy__FrameType type);

#endif							/* TC_FRAME_H */
