/*
 * tc_varint.h
 *		Base-128 varints and zigzag, as protobuf writes them: shared by the
 *		client's wire encoder (tc_wire.c), the tserver's WriteBatch decoder
 *		(ts_batch_decode.c) and its stored-value codec (ts_codec.c).
 *
 * Only the writing side and zigzag are here.  The two readers differ on
 * purpose: the WriteBatch decoder accepts what protobuf-c accepts (bits past
 * the 64th dropped), the stored-value codec refuses anything not written by
 * tc_varint_put.
 */
#ifndef TC_VARINT_H
#define TC_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define TC_VARINT_MAX 10		/* bytes of the longest 64-bit varint */

static inline uint64_t
tc_zigzag64(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static inline int64_t
tc_unzigzag64(uint64_t v)
{
	return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

/* Bytes tc_varint_put writes for v. */
static inline size_t
tc_varint_size(uint64_t v)
{
	size_t		n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* Write v at out (at most TC_VARINT_MAX bytes); returns the end. */
static inline uint8_t *
tc_varint_put(uint8_t *out, uint64_t v)
{
	while (v >= 0x80)
	{
		*out++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*out++ = (uint8_t) v;
	return out;
}

#endif							/* TC_VARINT_H */
