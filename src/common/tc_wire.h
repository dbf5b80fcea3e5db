/*
 * tc_wire.h
 *		A row as the client builds it (TcWireRow), and a WriteBatch's header
 *		written straight in protobuf's wire format, without building
 *		protobuf-c messages (no Postgres headers).
 *
 * The header's bytes are those protobuf-c packs for the same
 * Tcopy__WriteBatch (test/unit/test_wire.c checks it), so the tserver
 * decodes the batch like any other.  Its rows go in the field records, in
 * the stored form (tc_record.h).  A row is described by a TcWireRow whose
 * arrays the caller owns and reuses; its blobs point at the caller's bytes
 * (a field in Postgres' COPY buffer, a datum), which are copied once, into
 * the output buffer.  A blob may ask for trailing blanks: char(n) values
 * are padded on the way out instead of in a copy.
 */
#ifndef TC_WIRE_H
#define TC_WIRE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The longest WriteBatch header: tags and varints of seq, table_id and
 * kind, the tag and length of records.
 */
#define TC_WIRE_BATCH_HEADER_MAX (1 + 10 + 1 + 5 + 1 + 1 + 1 + 5)

typedef struct TcWireBlob
{
	const uint8_t *data;
	uint32_t	len;
	uint32_t	pad;			/* blanks (0x20) after data */
} TcWireBlob;

/* One row, as Tcopy__Row: each array in column order. */
typedef struct TcWireRow
{
	int64_t    *ints;
	double	   *floats;
	TcWireBlob *blobs;
	uint32_t   *nulls;
	uint32_t	n_ints;
	uint32_t	n_floats;
	uint32_t	n_blobs;
	uint32_t	n_nulls;
} TcWireRow;

/*
 * At least as many bytes as protobuf-c packs for row as one of a
 * WriteBatch's rows (tag, length, the Row message), cheap to compute: the
 * protobuf encoder's measure of a batch's size.
 */
size_t		tc_wire_row_bound(const TcWireRow *row);

/*
 * Write a WriteBatch's header (seq, table_id, kind unless 0, an insert,
 * and the tag and length of its records, records_len bytes, unless 0) so
 * that it ends at end, just before the records; returns where it starts
 * (at most TC_WIRE_BATCH_HEADER_MAX bytes before end).
 */
uint8_t    *tc_wire_put_batch_header(uint8_t *end, uint64_t seq, uint32_t table_id,
									  int kind, size_t records_len);

#endif							/* TC_WIRE_H */
