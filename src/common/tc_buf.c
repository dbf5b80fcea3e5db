/*
 * tc_buf.c
 *		A growable byte buffer.
 */
#include "tc_buf.h"

#include <stdlib.h>

#define TC_BUF_MIN_CAP 4096

/*
 * Capacity doubles, so that appending n bytes a few at a time costs
 * O(n) copying in all.
 */
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
	cap = buf->cap ? buf->cap : TC_BUF_MIN_CAP;
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
