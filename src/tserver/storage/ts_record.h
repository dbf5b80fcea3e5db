/*
 * ts_record.h
 *		The record format of a session's staged rows and of its run files:
 *
 *			[u32 key length][u32 value length][key][value]
 *
 *		the lengths in host order (records never leave the process).  The
 *		staging buffer holds records in this format so that a spill writes
 *		them to a run as they are, and the sort, the runs and the merge
 *		read them with these accessors.  They trust the record: a reader
 *		of untrusted bytes (a run read back) checks the lengths first.
 */
#ifndef TS_RECORD_H
#define TS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TS_RECORD_HEADER_SIZE 8

/* Write a record's header at rec. */
static inline void
ts_record_put_header(uint8_t *rec, uint32_t keylen, uint32_t valuelen)
{
	memcpy(rec, &keylen, 4);
	memcpy(rec + 4, &valuelen, 4);
}

/* A record's key length, value length and key. */
static inline uint32_t
ts_record_keylen(const uint8_t *rec)
{
	uint32_t	keylen;

	memcpy(&keylen, rec, 4);
	return keylen;
}

static inline uint32_t
ts_record_valuelen(const uint8_t *rec)
{
	uint32_t	valuelen;

	memcpy(&valuelen, rec + 4, 4);
	return valuelen;
}

static inline const uint8_t *
ts_record_key(const uint8_t *rec)
{
	return rec + TS_RECORD_HEADER_SIZE;
}

/* The value, after a key of keylen bytes (ts_record_keylen). */
static inline const uint8_t *
ts_record_value(const uint8_t *rec, uint32_t keylen)
{
	return rec + TS_RECORD_HEADER_SIZE + keylen;
}

/* Do records a and b hold the same key? */
static inline bool
ts_record_same_key(const uint8_t *a, const uint8_t *b)
{
	uint32_t	len = ts_record_keylen(a);

	return len == ts_record_keylen(b) &&
		memcmp(ts_record_key(a), ts_record_key(b), len) == 0;
}

/*
 * An UPDATE's or a DELETE's record is marked by the first byte of its
 * value, which no encoded row value has (theirs starts with 0x00 or 0x01,
 * or is empty: ts_codec.h), so that the records travel through the sort,
 * the runs and the merge as they are:
 *
 *		TS_VALUE_SET	then the row's value: it replaces its key's row,
 *						whatever the table's on_conflict says
 *		TS_VALUE_DELETE	alone: its key's row is deleted
 *
 * Unmarked records are inserts, to which on_conflict applies.  Whatever
 * publishes or reads the records strips the mark (ts_value_unmarked).
 */
#define TS_VALUE_SET 0xFE
#define TS_VALUE_DELETE 0xFF

/* The value's mark, or 0 for an insert. */
static inline int
ts_value_mark(const uint8_t *value, uint32_t valuelen)
{
	return valuelen > 0 && value[0] >= TS_VALUE_SET ? value[0] : 0;
}

/* A SET or insert record's row value, without its mark. */
static inline const uint8_t *
ts_value_unmarked(const uint8_t *value, uint32_t *valuelen)
{
	if (ts_value_mark(value, *valuelen) != 0)
	{
		(*valuelen)--;
		return value + 1;
	}
	return value;
}

/* The record's mark (ts_value_mark). */
static inline int
ts_record_mark(const uint8_t *rec)
{
	uint32_t	keylen;
	uint32_t	valuelen;

	memcpy(&keylen, rec, 4);
	memcpy(&valuelen, rec + 4, 4);
	return ts_value_mark(rec + TS_RECORD_HEADER_SIZE + keylen, valuelen);
}

/* Bytes of a record with these lengths, header included. */
static inline size_t
ts_record_size(uint32_t keylen, uint32_t valuelen)
{
	return TS_RECORD_HEADER_SIZE + (size_t) keylen + valuelen;
}

#endif							/* TS_RECORD_H */
