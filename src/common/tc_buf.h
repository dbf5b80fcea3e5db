/*
 * tc_buf.h
 *		A growable byte buffer, shared by the extension, the client library
 *		and the tserver (no Postgres headers).
 *
 * Buffers are reused: clearing one (len = 0) keeps its capacity, so that
 * the hot paths (packing batches, reading frames) stop allocating once
 * they have warmed up.
 */
#ifndef TC_BUF_H
#define TC_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TcBuf
{
	uint8_t    *data;
	size_t		len;			/* bytes in use */
	size_t		cap;			/* bytes allocated */
} TcBuf;

/* Make room for extra more bytes after len; false when malloc fails. */
bool		tc_buf_reserve(TcBuf *buf, size_t extra);

/* Free the memory; the buffer is empty and reusable afterwards. */
void		tc_buf_free(TcBuf *buf);

#endif							/* TC_BUF_H */
