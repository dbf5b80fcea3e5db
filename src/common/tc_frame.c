/*
 * tc_frame.c
 *		Framing of the tcopy wire protocol.
 */
#include "tc_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc_varint.h"

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

uint8_t *
tc_frame_around_packed(const Tcopy__ScanBatch *batch, size_t *len)
{
	Tcopy__ScanBatch front = *batch;
	size_t		front_size;
	size_t		head;
	size_t		tail;
	size_t		size;
	uint8_t    *start;
	uint8_t    *p;

	if (batch->n_rows != 0 || batch->n_groups != 0 || batch->packed.len == 0 ||
		batch->packed.len > UINT32_MAX)
		return NULL;
	/* the fields before packed (6), then packed's tag and length */
	front.packed.len = 0;
	front.packed.data = NULL;
	front.n_packed = 0;
	front_size = protobuf_c_message_get_packed_size(&front.base);
	head = TC_FRAME_HEADER_SIZE + front_size + 1 + tc_varint_size(batch->packed.len);
	/* n_packed (7) after it, when not 0 */
	tail = batch->n_packed == 0 ? 0 : 1 + tc_varint_size(batch->n_packed);
	size = head - TC_FRAME_HEADER_SIZE + batch->packed.len + tail;
	if (head > TC_FRAME_PACKED_HEADROOM || tail > TC_FRAME_PACKED_TAILROOM || size > UINT32_MAX)
		return NULL;
	start = batch->packed.data - head;
	tc_frame_put_header(start, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH, (uint32_t) size);
	p = start + TC_FRAME_HEADER_SIZE;
	p += protobuf_c_message_pack(&front.base, p);
	*p++ = (6 << 3) | 2;		/* field 6, length-delimited */
	p = tc_varint_put(p, batch->packed.len);
	p += batch->packed.len;
	if (batch->n_packed != 0)
	{
		*p++ = (7 << 3) | 0;	/* field 7, varint */
		p = tc_varint_put(p, batch->n_packed);
	}
	*len = (size_t) (p - start);
	return start;
}

const char *
tc_frame_type_name(Tcopy__FrameType type)
{
	const ProtobufCEnumValue *value =
		protobuf_c_enum_descriptor_get_value(&tcopy__frame_type__descriptor, type);

	return value ? value->name : "unknown";
}
