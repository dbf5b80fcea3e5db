/*
 * tc_keyimage.c
 *		Order-preserving, equality-normalising key images of float8,
 *		numeric and interval values, and bpchar's significant length.
 */
#include "tc_keyimage.h"

#include <math.h>
#include <string.h>

/* numeric_send's sign field (numeric.c's NUMERIC_POS ... NUMERIC_NINF) */
#define NUMERIC_SEND_POS 0x0000
#define NUMERIC_SEND_NEG 0x4000
#define NUMERIC_SEND_NAN 0xC000
#define NUMERIC_SEND_PINF 0xD000
#define NUMERIC_SEND_NINF 0xF000
#define NUMERIC_NBASE_MAX_DIGIT 9999
#define NUMERIC_SEND_HEADER 8	/* ndigits, weight, sign, dscale: int16 each */

/* Numeric image classes, in numeric_cmp's order (NaN above everything). */
enum
{
	NUMERIC_IMAGE_NINF = 0x01,
	NUMERIC_IMAGE_NEG = 0x02,
	NUMERIC_IMAGE_ZERO = 0x03,
	NUMERIC_IMAGE_POS = 0x04,
	NUMERIC_IMAGE_PINF = 0x05,
	NUMERIC_IMAGE_NAN = 0x06
};

/* a negative image's terminator: above every complemented digit (<= 9999) */
#define NUMERIC_IMAGE_NEG_END 0xFFFF

static inline uint16_t
get_be16(const uint8_t *p)
{
	return (uint16_t) ((p[0] << 8) | p[1]);
}

static inline void
put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/*
 * float8's image: float8_cmp_internal's order, in which -0 equals +0 and
 * every NaN is one value above +Inf.  A float4 is widened first (exactly).
 */
void
tc_keyimage_float8(double value, uint8_t out[TC_KEYIMAGE_FLOAT8_SIZE])
{
	uint64_t	bits;

	if (isnan(value))
		bits = UINT64_C(0x7FF8000000000000);
	else if (value == 0.0)
		bits = 0;				/* -0 and +0: one key */
	else
		memcpy(&bits, &value, sizeof(bits));
	if (bits & UINT64_C(0x8000000000000000))
		bits = ~bits;
	else
		bits |= UINT64_C(0x8000000000000000);
	for (int i = 7; i >= 0; i--)
	{
		out[i] = (uint8_t) bits;
		bits >>= 8;
	}
}

/*
 * numeric's image, from numeric_send's bytes (send, len): numeric_cmp's
 * order, with display scale, leading and trailing zero digits ignored.
 * Writes at most TC_KEYIMAGE_NUMERIC_MAX(ndigits) bytes to out (capacity
 * outcap) and their count to *outlen.  Returns 0, or -1 when the bytes are
 * not a send format (length, sign, a digit out of 0..9999, a weight out of
 * range once normalised) or out is too small.
 */
int
tc_keyimage_numeric(const uint8_t *send, size_t len,
					uint8_t *out, size_t outcap, size_t *outlen)
{
	int			ndigits;
	int32_t		weight;
	uint16_t	sign;
	const uint8_t *digits;
	int			first,
				last;
	size_t		n = 0;
	uint16_t	weight_bits;

	if (len < NUMERIC_SEND_HEADER)
		return -1;
	ndigits = (int16_t) get_be16(send);
	weight = (int16_t) get_be16(send + 2);
	sign = get_be16(send + 4);
	if (ndigits < 0 || len != NUMERIC_SEND_HEADER + 2 * (size_t) ndigits ||
		outcap < TC_KEYIMAGE_NUMERIC_MAX(ndigits))
		return -1;
	digits = send + NUMERIC_SEND_HEADER;
	for (int i = 0; i < ndigits; i++)
		if (get_be16(digits + 2 * i) > NUMERIC_NBASE_MAX_DIGIT)
			return -1;

	switch (sign)
	{
		case NUMERIC_SEND_NAN:
			out[0] = NUMERIC_IMAGE_NAN;
			*outlen = 1;
			return 0;
		case NUMERIC_SEND_PINF:
			out[0] = NUMERIC_IMAGE_PINF;
			*outlen = 1;
			return 0;
		case NUMERIC_SEND_NINF:
			out[0] = NUMERIC_IMAGE_NINF;
			*outlen = 1;
			return 0;
		case NUMERIC_SEND_POS:
		case NUMERIC_SEND_NEG:
			break;
		default:
			return -1;
	}

	/* the significant digits: [first, last] */
	first = 0;
	while (first < ndigits && get_be16(digits + 2 * first) == 0)
		first++;
	last = ndigits - 1;
	while (last >= first && get_be16(digits + 2 * last) == 0)
		last--;
	if (first > last)
	{
		out[0] = NUMERIC_IMAGE_ZERO;	/* 0, 0.00, -0: one value */
		*outlen = 1;
		return 0;
	}
	weight -= first;
	if (weight < INT16_MIN)
		return -1;
	weight_bits = (uint16_t) (int16_t) weight ^ 0x8000;

	if (sign == NUMERIC_SEND_POS)
	{
		out[n++] = NUMERIC_IMAGE_POS;
		put_be16(out + n, weight_bits);
		n += 2;
		for (int i = first; i <= last; i++, n += 2)
			put_be16(out + n, get_be16(digits + 2 * i));
	}
	else
	{
		/*
		 * Everything reversed: a larger weight, a larger digit, or more
		 * digits make a smaller value, so the weight is complemented, each
		 * digit d written as 9999 - d, and the end marked by a terminator
		 * above every such digit (a prefix must sort after).
		 */
		out[n++] = NUMERIC_IMAGE_NEG;
		put_be16(out + n, (uint16_t) ~weight_bits);
		n += 2;
		for (int i = first; i <= last; i++, n += 2)
			put_be16(out + n, (uint16_t) (NUMERIC_NBASE_MAX_DIGIT - get_be16(digits + 2 * i)));
		put_be16(out + n, NUMERIC_IMAGE_NEG_END);
		n += 2;
	}
	*outlen = n;
	return 0;
}

/*
 * interval's image, from interval_send's bytes: interval_cmp_value's span,
 * time + (month * 30 + day) days in microseconds, as a 128-bit integer,
 * big-endian with the sign bit flipped.  Returns 0, or -1 when len is not
 * interval_send's.
 */
int
tc_keyimage_interval(const uint8_t *send, size_t len,
					 uint8_t out[TC_KEYIMAGE_INTERVAL_SIZE])
{
	const __int128 usecs_per_day = (__int128) 86400 * 1000000;
	int64_t		time;
	int32_t		day,
				month;
	__int128	span;
	unsigned __int128 bits;

	if (len != TC_KEYIMAGE_INTERVAL_SEND_SIZE)
		return -1;
	time = (int64_t) get_be64(send);
	day = (int32_t) ((uint32_t) get_be16(send + 8) << 16 | get_be16(send + 10));
	month = (int32_t) ((uint32_t) get_be16(send + 12) << 16 | get_be16(send + 14));
	span = (__int128) time + ((__int128) month * 30 + day) * usecs_per_day;
	bits = (unsigned __int128) span ^ ((unsigned __int128) 1 << 127);
	for (int i = TC_KEYIMAGE_INTERVAL_SIZE - 1; i >= 0; i--)
	{
		out[i] = (uint8_t) bits;
		bits >>= 8;
	}
	return 0;
}

/*
 * The length of a bpchar value without its trailing blanks, which bpchar's
 * comparisons ignore (bcTruelen): its image is that prefix.
 */
size_t
tc_keyimage_bpchar_len(const uint8_t *bytes, size_t len)
{
	while (len > 0 && bytes[len - 1] == ' ')
		len--;
	return len;
}
