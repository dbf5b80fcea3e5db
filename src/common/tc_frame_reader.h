/*
 * tc_frame_reader.h
 *		The buffered frame reader both ends of a connection use: the
 *		tserver's connection threads (blocking sockets) and the client
 *		library (non-blocking, waiting through its hook).
 *
 * Bytes are read into one buffer that keeps its capacity, offering each
 * read all its free room and at least TC_FRAME_READ_AHEAD bytes, so that
 * small frames (WRITE batches one way, ACKs the other) arrive many to a
 * syscall.  A frame's header is checked against the reader's limit as
 * soon as its 5 bytes are in, before a byte of its payload is waited for,
 * so that a peer cannot make the reader buffer more than that limit.  A
 * payload is handed out in place: valid until the next read.
 *
 * The reader does no waiting and knows no error policy: tc_frame_reader_next
 * says whether a frame is ready, tc_frame_reader_read reads once, and the
 * caller's loop decides what EOF, EAGAIN or a bad header mean to it.
 */
#ifndef TC_FRAME_READER_H
#define TC_FRAME_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tc_buf.h"
#include "tcopy.pb-c.h"

#define TC_FRAME_READ_AHEAD (64 * 1024)	/* least free room offered to a read */

typedef struct TcFrameReader
{
	TcBuf		buf;			/* bytes received; unreturned ones from pos */
	size_t		pos;			/* first byte not yet returned in a frame */
	size_t		need;			/* bytes from pos the pending frame takes, as
								 * far as its header is known */
} TcFrameReader;

/* What tc_frame_reader_next found. */
typedef enum TcFrameNext
{
	TC_FRAME_NEXT_READY,		/* a whole frame, now consumed */
	TC_FRAME_NEXT_MORE,			/* read more first */
	TC_FRAME_NEXT_BAD			/* the header failed its check */
} TcFrameNext;

/* An empty reader (a zeroed one is too). */
void		tc_frame_reader_init(TcFrameReader *reader);

/* Free the buffer; the reader is empty and reusable afterwards. */
void		tc_frame_reader_free(TcFrameReader *reader);

/*
 * The next frame, if all of it is buffered: READY with *type, *payload
 * (valid until the next tc_frame_reader_read) and *len; MORE when it is
 * not; BAD when its header has an unknown type or a length beyond
 * max_payload, with *why (static) and the header left at
 * tc_frame_reader_header for the caller's own message.
 */
TcFrameNext tc_frame_reader_next(TcFrameReader *reader, uint32_t max_payload,
								 Tcopy__FrameType *type, const uint8_t **payload,
								 uint32_t *len, const char **why);

/*
 * Read once from fd, with room for the rest of the pending frame and the
 * read-ahead.  Returns the bytes read, 0 at end of file, or -1 with errno
 * (EAGAIN, EINTR and ENOMEM, when the buffer cannot grow, included).
 */
ssize_t		tc_frame_reader_read(TcFrameReader *reader, int fd);

/*
 * A transport's read(2): a TLS connection's (tc_tls_read).  Same returns
 * as read(2).
 */
typedef ssize_t (*TcReadFn) (void *arg, void *buf, size_t len);

/* tc_frame_reader_read through read_fn(arg, ...) instead of read(fd). */
ssize_t		tc_frame_reader_read_via(TcFrameReader *reader, TcReadFn read_fn, void *arg);

/* Bytes received but not yet returned: 0 between frames. */
size_t		tc_frame_reader_buffered(const TcFrameReader *reader);

/* Bytes of the pending frame, as far as known (for messages). */
size_t		tc_frame_reader_pending(const TcFrameReader *reader);

/* The first byte not yet returned: after BAD, the offending header. */
const uint8_t *tc_frame_reader_header(const TcFrameReader *reader);

#endif							/* TC_FRAME_READER_H */
