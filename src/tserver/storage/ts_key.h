/*
 * ts_key.h
 *		The bytes of stored keys: the big-endian integers they are built of
 *		(table ids, row ids, integer and float columns; big-endian so that
 *		memcmp order is numeric order), and comparing keys as unsigned byte
 *		strings, a prefix first.  The sorts and merges of spilled records
 *		compare keys by their first 16 bytes loaded as two big-endian
 *		integers, kept beside each record, and look at the bytes only when
 *		those tie: a key is a 4-byte table id and its encoded key columns (an
 *		integer column takes 8 bytes, the first 4 of them alike for every
 *		value below 2^31, so 8 bytes of prefix would tie on nearly every key).
 */
#ifndef TS_KEY_H
#define TS_KEY_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define TS_KEY_PREFIX_SIZE 16

/* Store v at p, most significant byte first. */
static inline void
ts_put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
ts_put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

/* The integer stored at p, most significant byte first. */
static inline uint32_t
ts_get_be32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t
ts_get_be64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline int
ts_key_compare(const uint8_t *a, uint32_t len_a, const uint8_t *b, uint32_t len_b)
{
	int			cmp = memcmp(a, b, len_a < len_b ? len_a : len_b);

	if (cmp != 0)
		return cmp;
	return len_a == len_b ? 0 : (len_a < len_b ? -1 : 1);
}

/* The first 16 bytes of a key, zero-padded, as integers of the same order. */
typedef struct TsKeyPrefix
{
	uint64_t	hi;
	uint64_t	lo;
} TsKeyPrefix;

static inline TsKeyPrefix
ts_key_prefix(const uint8_t *key, uint32_t keylen)
{
	uint8_t		bytes[TS_KEY_PREFIX_SIZE] = {0};
	TsKeyPrefix prefix;

	memcpy(bytes, key, keylen < TS_KEY_PREFIX_SIZE ? keylen : TS_KEY_PREFIX_SIZE);
	prefix.hi = ts_get_be64(bytes);
	prefix.lo = ts_get_be64(bytes + 8);
	return prefix;
}

/* ts_key_compare of keys a and b, given their prefixes. */
static inline int
ts_key_compare_prefixed(const TsKeyPrefix *pa, const uint8_t *a, uint32_t len_a,
						const TsKeyPrefix *pb, const uint8_t *b, uint32_t len_b)
{
	if (pa->hi != pb->hi)
		return pa->hi < pb->hi ? -1 : 1;
	if (pa->lo != pb->lo)
		return pa->lo < pb->lo ? -1 : 1;
	if (len_a > TS_KEY_PREFIX_SIZE && len_b > TS_KEY_PREFIX_SIZE)
	{
		uint32_t	common = (len_a < len_b ? len_a : len_b) - TS_KEY_PREFIX_SIZE;
		int			cmp = memcmp(a + TS_KEY_PREFIX_SIZE, b + TS_KEY_PREFIX_SIZE, common);

		if (cmp != 0)
			return cmp;
	}
	/* equal up to the shorter key's end (zero padding included): it is first */
	return len_a == len_b ? 0 : (len_a < len_b ? -1 : 1);
}

#endif							/* TS_KEY_H */
