/*
 * tc_frame.c
 *		Framing of the tcopy wire protocol.
 */
#include "tc_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
tc_buf_reserve(TcBuf *buf, size_t extra)
{
	size_t		need = buf->len + extra;
	size_t		cap;
	uint8_t    *data;

	if (need <= buf->cap)
		return true;
	if (need < buf->len)
		return false;			/* overflow */
	cap = buf->cap ? buf->cap : 4096;
	while (cap < need)
		cap *= 2;
	data = realloc(buf->data, cap);
	if (data == NULL)
		return false;
	buf->data = data;
	buf->cap = cap;
	return true;
}

void
tc_buf_free(TcBuf *buf)
{
	free(buf->data);
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

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
		header[4] > TCOPY__FRAME_TYPE__FRAME_ERROR)
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

bool
tc_address_parse(const char *text, TcAddress *addr, char *err, size_t errlen)
{
	memset(addr, 0, sizeof(*addr));
	if (strncmp(text, "unix:", 5) == 0)
	{
		const char *path = text + 5;

		if (path[0] == '\0' || strlen(path) >= sizeof(addr->path))
		{
			snprintf(err, errlen, "unix socket path in \"%s\" is empty or longer than %zu bytes",
					 text, sizeof(addr->path) - 1);
			return false;
		}
		addr->kind = TC_ADDRESS_UNIX;
		strcpy(addr->path, path);
		return true;
	}
	if (strncmp(text, "tcp:", 4) == 0)
	{
		const char *hostport = text + 4;
		const char *colon = strrchr(hostport, ':');
		size_t		hostlen;
		const char *host = hostport;

		if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) > 5 ||
			strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
			atoi(colon + 1) > 65535)
		{
			snprintf(err, errlen, "address \"%s\" needs the form tcp:HOST:PORT", text);
			return false;
		}
		hostlen = (size_t) (colon - hostport);
		/* [::1]:5433 */
		if (hostlen >= 2 && host[0] == '[' && host[hostlen - 1] == ']')
		{
			host++;
			hostlen -= 2;
		}
		if (memchr(host, '[', hostlen) != NULL || memchr(host, ']', hostlen) != NULL)
		{
			snprintf(err, errlen, "host in \"%s\" has unbalanced brackets", text);
			return false;
		}
		if (hostlen == 0 || hostlen >= sizeof(addr->host))
		{
			snprintf(err, errlen, "host in \"%s\" is empty or too long", text);
			return false;
		}
		addr->kind = TC_ADDRESS_TCP;
		memcpy(addr->host, host, hostlen);
		addr->host[hostlen] = '\0';
		strcpy(addr->port, colon + 1);
		return true;
	}
	if (strcmp(text, "null:") == 0)
	{
		addr->kind = TC_ADDRESS_NULL;
		return true;
	}
	snprintf(err, errlen, "address \"%s\" has an unknown scheme (expected unix:PATH, tcp:HOST:PORT or null:)", text);
	return false;
}
