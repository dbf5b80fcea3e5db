/*
 * tc_frame.c
 *		Framing of the tcopy wire protocol.
 */
#include "tc_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
tc_frame_put_header(uint8_t *header, Tcopy__FrameType type, uint32_t payload_len)
{
	header[0] = (uint8_t) (payload_len >> 24);
	header[1] = (uint8_t) (payload_len >> 16);
	header[2] = (uint8_t) (payload_len >> 8);
	header[3] = (uint8_t) payload_len;
	header[4] = (uint8_t) type;
}

bool
tc_frame_get_header(const uint8_t *header, uint32_t max_payload,
					Tcopy__FrameType *type, uint32_t *payload_len,
					const char **why)
{
	uint32_t	len = ((uint32_t) header[0] << 24) | ((uint32_t) header[1] << 16) |
		((uint32_t) header[2] << 8) | (uint32_t) header[3];

	if (header[4] == TCOPY__FRAME_TYPE__FRAME_NONE ||
		header[4] > TC_FRAME_TYPE_LAST)
	{
		*why = "unknown frame type";
		return false;
	}
	if (len > max_payload)
	{
		*why = "frame exceeds the size limit";
		return false;
	}
	*type = (Tcopy__FrameType) header[4];
	*payload_len = len;
	return true;
}

bool
tc_frame_append(TcBuf *buf, Tcopy__FrameType type, const ProtobufCMessage *msg)
{
	size_t		size = protobuf_c_message_get_packed_size(msg);

	if (size > UINT32_MAX || !tc_buf_reserve(buf, TC_FRAME_HEADER_SIZE + size))
		return false;
	tc_frame_put_header(buf->data + buf->len, type, (uint32_t) size);
	protobuf_c_message_pack(msg, buf->data + buf->len + TC_FRAME_HEADER_SIZE);
	buf->len += TC_FRAME_HEADER_SIZE + size;
	return true;
}

const char *
tc_frame_type_name(Tcopy__FrameType type)
{
	const ProtobufCEnumValue *value =
		protobuf_c_enum_descriptor_get_value(&tcopy__frame_type__descriptor, type);

	return value ? value->name : "unknown";
}
