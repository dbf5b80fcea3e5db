/*
 * tc_frame_reader.c
 *		The buffered frame reader of both ends of a connection.
 */
#include "tc_frame_reader.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "tc_frame.h"

void
tc_frame_reader_init(TcFrameReader *reader)
{
	memset(reader, 0, sizeof(*reader));
	reader->need = TC_FRAME_HEADER_SIZE;
}

void
tc_frame_reader_free(TcFrameReader *reader)
{
	tc_buf_free(&reader->buf);
	tc_frame_reader_init(reader);
}

TcFrameNext
tc_frame_reader_next(TcFrameReader *reader, uint32_t max_payload,
					 Tcopy__FrameType *type, const uint8_t **payload,
					 uint32_t *len, const char **why)
{
	size_t		have = reader->buf.len - reader->pos;
	const uint8_t *header;

	if (have < TC_FRAME_HEADER_SIZE)
	{
		reader->need = TC_FRAME_HEADER_SIZE;
		return TC_FRAME_NEXT_MORE;
	}
	header = reader->buf.data + reader->pos;
	/* checked every time: cheaper than remembering, and a header is 5 bytes */
	if (!tc_frame_get_header(header, max_payload, type, len, why))
		return TC_FRAME_NEXT_BAD;
	reader->need = TC_FRAME_HEADER_SIZE + (size_t) *len;
	if (have < reader->need)
		return TC_FRAME_NEXT_MORE;
	*payload = header + TC_FRAME_HEADER_SIZE;
	reader->pos += reader->need;
	reader->need = TC_FRAME_HEADER_SIZE;
	return TC_FRAME_NEXT_READY;
}

/* TcReadFn of a plain socket (arg points to its fd). */
static ssize_t
frame_reader_read_fd(void *arg, void *buf, size_t len)
{
	return read(*(const int *) arg, buf, len);
}

ssize_t
tc_frame_reader_read(TcFrameReader *reader, int fd)
{
	return tc_frame_reader_read_via(reader, frame_reader_read_fd, &fd);
}

ssize_t
tc_frame_reader_read_via(TcFrameReader *reader, TcReadFn read_fn, void *arg)
{
	TcBuf	   *buf = &reader->buf;
	size_t		have = buf->len - reader->pos;
	size_t		need = reader->need > have ? reader->need : have;
	size_t		want;
	ssize_t		n;

	/*
	 * Keep the pending frame contiguous: start over when nothing is
	 * pending, and slide the pending bytes to the front only when the room
	 * after them is short of the frame and the read-ahead, so that a
	 * buffer full of small frames is not moved for every one.
	 */
	if (have == 0)
		buf->len = reader->pos = 0;
	else if (reader->pos > 0 && buf->cap - reader->pos < need + TC_FRAME_READ_AHEAD)
	{
		memmove(buf->data, buf->data + reader->pos, have);
		buf->len = have;
		reader->pos = 0;
	}
	want = reader->pos + need + TC_FRAME_READ_AHEAD;
	if (want > buf->cap && !tc_buf_reserve(buf, want - buf->len))
	{
		errno = ENOMEM;
		return -1;
	}

	n = read_fn(arg, buf->data + buf->len, buf->cap - buf->len);
	if (n > 0)
		buf->len += (size_t) n;
	return n;
}

size_t
tc_frame_reader_buffered(const TcFrameReader *reader)
{
	return reader->buf.len - reader->pos;
}

size_t
tc_frame_reader_pending(const TcFrameReader *reader)
{
	return reader->need;
}

const uint8_t *
tc_frame_reader_header(const TcFrameReader *reader)
{
	return reader->buf.data + reader->pos;
}
