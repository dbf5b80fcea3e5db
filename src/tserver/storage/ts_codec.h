/*
 * ts_codec.h
 *		How rows are laid out in RocksDB: keys in an order-preserving
 *		encoding, values in a compact one, both driven by the table's schema.
 *
 * Key:   table id (4 bytes, big-endian), then each key column in key order:
 *          BOOL  1 byte (0 or 1)
 *          INT   8 bytes big-endian with the sign bit flipped
 *          FLOAT 8 bytes: IEEE bits, sign bit flipped for positives, all
 *                bits flipped for negatives (so -0 sorts just below +0 and
 *                NaN after +Infinity)
 *          BYTES each 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01
 *        or, for a table without key columns, an 8-byte big-endian row id.
 *        memcmp order of two keys is the order of their column values (ints
 *        numerically, floats numerically, bytes as unsigned strings), and
 *        no key is a prefix of another key of the same table.
 * Value: each non-key column in schema order: one tag byte (0 NULL, 1
 *        present), then BOOL 1 byte, INT a zigzag varint, FLOAT 8 bytes
 *        little-endian, BYTES a varint length and the bytes.  A value may
 *        end before the last non-key columns: those were added to the
 *        schema after the row was written, and read as their missing
 *        values (Column.missing, else NULL).
 *
 * Decoding never trusts the stored bytes: every length is checked.
 */
#ifndef TS_CODEC_H
#define TS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_arena.h"
#include "tc_frame.h"
#include "ts_error.h"

#define TS_TABLE_ID_SIZE 4
#define TS_ROWID_SIZE 8
#define TS_MAX_COLUMNS 1600		/* as Postgres' MaxHeapAttributeNumber */
#define TS_MAX_KEY_COLUMNS 32	/* as Postgres' INDEX_MAX_KEYS */

/* A table's schema digested for encoding; built once per table. */
typedef struct TsLayout
{
	uint32_t	ncolumns;
	Tcopy__Kind *kinds;			/* [ncolumns] */
	bool	   *is_key;			/* [ncolumns] */
	uint32_t	nkey;			/* 0: generated row ids */
	uint32_t   *key_columns;	/* [nkey] column indexes, in key order */
	uint32_t	nvalue;			/* ncolumns - nkey */
	uint32_t   *value_columns;	/* [nvalue] the others, in schema order: a
								 * stored value's */
	struct TsValue *missing;	/* [ncolumns] what a stored value too short
								 * to hold the column reads (Column.missing,
								 * pointing into the schema; else NULL) */
} TsLayout;

/* One column's value, decoded; p points into the decoded bytes. */
struct TsValue
{
	bool		isnull;
	int64_t		i;				/* BOOL and INT */
	double		f;				/* FLOAT */
	const uint8_t *p;			/* BYTES */
	size_t		len;
};
typedef struct TsValue TsValue;

/*
 * Validate schema (ERROR_PROTOCOL when malformed) and digest it.  A schema
 * may have no columns (then no key either): its rows are empty.  The
 * layout points into schema's missing values: schema must outlive it.
 */
int			ts_layout_init(TsLayout *layout, const Tcopy__Schema *schema,
						   TsError *err);
void		ts_layout_free(TsLayout *layout);

/*
 * Check that row fits layout (ERROR_BAD_ROW): as many ints, floats and blobs
 * as its non-NULL columns of each kind, nulls ascending and in range, no
 * NULL key column, BOOL values 0 or 1.
 */
int			ts_row_check(const TsLayout *layout, const Tcopy__Row *row,
						 TsError *err);

/* Append the row's key (table id first) to out; false when out of memory. */
bool		ts_key_encode(const TsLayout *layout, uint32_t table_id,
						  const Tcopy__Row *row, TcBuf *out);
/* Append table id and row id. */
bool		ts_key_encode_rowid(uint32_t table_id, uint64_t rowid, TcBuf *out);
/* Append the encoding of the first nvalues key columns given in prefix. */
bool		ts_key_encode_prefix(const TsLayout *layout, uint32_t table_id,
								 const Tcopy__Row *prefix, TcBuf *out);
/* Append the row's non-key columns. */
bool		ts_value_encode(const TsLayout *layout, const Tcopy__Row *row,
							TcBuf *out);

/*
 * Check a record a client wrote in the stored form (tc_record.h): key
 * without the table id, value without a kind marker, empty when
 * with_value is false (a delete).  NULL when they are exactly the bytes
 * ts_key_encode and ts_value_encode write for some row ts_row_check
 * accepts (every non-key column present, shortest varints, NaN keys
 * canonical), so that a row stored as received is stored as if encoded
 * here; else what is wrong.
 */
const char *ts_record_check(const TsLayout *layout, const uint8_t *key, size_t keylen,
							const uint8_t *value, size_t valuelen, bool with_value);

/*
 * Decode a stored key and value into values[ncolumns]; false when the bytes
 * do not fit the layout (a corrupt or foreign entry).  A value that ends
 * before a non-key column (written before the column was added) reads that
 * column and the later ones as their missing values, as Postgres reads a
 * heap tuple of fewer attributes (t_natts).  BYTES values point
 * into key or value, except key strings holding a zero byte, which are
 * unescaped into memory from scratch.
 */
bool		ts_row_decode(const TsLayout *layout, const uint8_t *key, size_t keylen,
						  const uint8_t *value, size_t valuelen, TsValue *values,
						  TcArena *scratch);

/*
 * Which columns a reader of decoded rows needs (ts_row_need_init): the key's,
 * and how far into the value.  Decoding only those is what Postgres does
 * with a heap tuple (slot_getsomeattrs: attributes up to the last one the
 * plan reads).
 */
typedef struct TsRowNeed
{
	bool		keys;			/* decode the key: some key column is needed */
	uint32_t	nvalue;			/* decode the first nvalue of the value's
								 * columns (layout->value_columns), no further */
} TsRowNeed;

/* The TsRowNeed of columns[c] (for each of layout's columns): c is read. */
void		ts_row_need_init(TsRowNeed *need, const TsLayout *layout,
							 const bool *columns);

/*
 * ts_row_decode of the columns need names (at least those; the others in
 * values are left unset or stale): the key only when need->keys, the
 * value's first need->nvalue columns.  What is decoded is checked
 * as ts_row_decode checks it (false: not the layout's), but the bytes past
 * the last needed value column, and a key not needed, are not read, so a
 * malformed byte there goes unnoticed, as a heap tuple's attributes past
 * the last one a plan reads are not deformed.  Stored rows are checked on
 * their way in (ts_row_check, ts_record_check) and by RocksDB's block
 * checksums on their way out.
 */
bool		ts_row_decode_some(const TsLayout *layout, const TsRowNeed *need,
							   const uint8_t *key, size_t keylen,
							   const uint8_t *value, size_t valuelen,
							   TsValue *values, TcArena *scratch);

#endif							/* TS_CODEC_H */
