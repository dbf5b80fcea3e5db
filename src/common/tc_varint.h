/*
 * tc_varint.h
 *		Base-128 varints and zigzag, as protobuf writes them: shared by the
 *		client's wire encoder (tc_wire.c), the tserver's WriteBatch decoder
 *		(ts_batch_decode.c) and its stored-value codec (ts_codec.c).
 *
 * The readers differ on purpose: the WriteBatch decoder accepts what
 * protobuf-c accepts (bits past the 64th dropped); tc_varint_get, which the
 * stored-value codec and the readers of packed scan rows use, refuses
 * anything tc_varint_put cannot have written past the 64th bit.
 */
#ifndef TC_VARINT_H
#define TC_VARINT_H

#include <stdbool.h>
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

/*
 * Read a varint at *p (before end) into *v and move *p past it: false when
 * it runs past end or holds more than 64 bits.
 */
static inline bool
tc_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t	result = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		if (*p >= end)
			return false;
		/* the tenth byte may only hold the 64th bit */
		if (shift == 63 && **p > 1)
			return false;
		result |= (uint64_t) (**p & 0x7F) << shift;
		if ((*(*p)++ & 0x80) == 0)
		{
			*v = result;
			return true;
		}
	}
	return false;
}

#endif							/* TC_VARINT_H */
