/*
 * tcopy/codec.h
 *		The codec layer (src/ext/codec/): Postgres values to wire rows and
 *		back (codec.c), the stored forms of types that are no scalar on the
 *		wire (forms.c), key images (keys.c), and write batches with their
 *		two encoders (batch.c, batch_wire.c, batch_protobuf.c).  Below it:
 *		the catalog layer.
 */
#ifndef TCOPY_CODEC_H
#define TCOPY_CODEC_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/bitmapset.h"
#include "utils/relcache.h"
#include "tc_arena.h"
#include "tc_buf.h"
#include "tc_frame.h"
#include "tc_record.h"
#include "tc_wire.h"
#include "tcopy.pb-c.h"

#include "tcopy/catalog.h"

/* settings (registered in tcopy.c) */
extern int	tcopy_max_frame_mb;	/* tcopy.max_frame_mb: a frame's payload */
extern bool tcopy_test_legacy_forms;	/* tcopy.test_legacy_forms */

/* tcopy.encoder */
typedef enum TcopyEncoder
{
	TCOPY_ENCODER_WIRE,			/* tc_wire straight into the output buffer */
	TCOPY_ENCODER_PROTOBUF		/* protobuf-c messages, then packed */
} TcopyEncoder;

/* tcopy.alloc_mode */
typedef enum TcopyAllocMode
{
	TCOPY_ALLOC_ARENA,			/* batch messages from one arena, reset per batch */
	TCOPY_ALLOC_MALLOC			/* malloc per object, free per batch (naive) */
} TcopyAllocMode;

/* in codec.c: Postgres values <-> wire rows */
typedef enum TcopyConv
{
	TCOPY_CONV_BOOL,
	TCOPY_CONV_INT2,
	TCOPY_CONV_INT4,
	TCOPY_CONV_INT8,
	TCOPY_CONV_FLOAT4,
	TCOPY_CONV_FLOAT8,
	TCOPY_CONV_TEXT,			/* varlena text-like: bytes verbatim */
	TCOPY_CONV_SEND,			/* a built-in type whose send format is
								 * portable, or an array of one
								 * (type_send_is_portable): send / receive */
	TCOPY_CONV_IO,				/* every other type, send function or not
								 * (jsonb, ranges, text[], reg*, types of
								 * extensions): text output / input under
								 * fixed settings (forms.c) */
	TCOPY_CONV_FORM,			/* enums, records and what holds them:
								 * forms.c */
	TCOPY_CONV_DROPPED			/* a dropped column keeping its place
								 * (option dropped_positions): always
								 * written NULL, never read */
} TcopyConv;

/* in forms.c: the stored forms of enums, records and their containers */
typedef struct TcopyForm TcopyForm;

extern bool tcopy_type_send_is_portable(Oid typid);
extern bool tcopy_type_is_text(Oid typid);
extern bool tcopy_type_is_reg(Oid typid);
extern bool tcopy_type_needs_form(Oid typid);
extern TcopyForm *tcopy_form_build(Oid typid, int32 typmod);
extern void tcopy_form_encode(TcopyForm *form, Datum value, StringInfo out);
extern Datum tcopy_form_decode(TcopyForm *form, const uint8 *data, size_t len,
							   int encoding, const char *attname,
							   const char *relname);
extern char *tcopy_type_form_name(Oid typid);
/* Bytes of a reg* form after its version byte naming the value: system
 * identifier, database OID, OID */
#define TCOPY_REG_IDENTITY_SIZE 16
/* A value from its send format; *whole: every byte was read. */
extern Datum tcopy_receive(FmgrInfo *in_fn, Oid typioparam, int32 typmod,
						   const uint8 *data, size_t len, bool *whole);
/* A type's text output and input, under the settings of docs/values.md. */
extern char *tcopy_fixed_output(FmgrInfo *out_fn, Datum value, bool search_path);
extern Datum tcopy_fixed_input(FmgrInfo *in_fn, char *text, Oid typioparam,
							   int32 typmod, bool search_path);

/* in keys.c: what a key column's bytes are keyed on */
typedef enum TcopyKeyImage
{
	TCOPY_KEY_IMAGE_NONE,		/* the value's own form */
	TCOPY_KEY_IMAGE_FLOAT,
	TCOPY_KEY_IMAGE_NUMERIC,
	TCOPY_KEY_IMAGE_INTERVAL,
	TCOPY_KEY_IMAGE_BPCHAR,
	TCOPY_KEY_IMAGE_REG			/* reg*: the OID and its database, not the name */
} TcopyKeyImage;

/* The image a key column needs; an ERROR when it cannot be a key. */
extern TcopyKeyImage tcopy_key_image_of(const char *relname, Form_pg_attribute att);
/* Refuse a key of foreign table relid that cannot be one. */
extern void tcopy_check_key(Oid relid);

typedef struct TcopyColumnCodec
{
	AttrNumber	attnum;			/* in the relation (1-based) */
	char	   *attname;		/* its Postgres name: the one messages give */
	Oid			typid;
	int32		typmod;
	TcopyConv	conv;
	Tcopy__Kind kind;
	bool		notnull;		/* NOT NULL: enforced before sending */
	int			send_width;		/* SEND: 4 or 8 when the send format is the
								 * datum as a big-endian integer, else 0 */
	FmgrInfo	out_fn;			/* SEND: typsend; IO: typoutput */
	FmgrInfo	in_fn;			/* SEND: typreceive; IO: typinput */
	Oid			typioparam;		/* for in_fn */
	bool		is_text;		/* stored bytes are text in the writer's
								 * database encoding (TEXT but bytea, IO):
								 * verified against ours when read back */
	bool		search_path;	/* IO of a reg* type: names qualified */
	TcopyForm  *form;			/* FORM */
	TcopyKeyImage image;		/* a key column keyed on an image */
	int			slot;			/* its index in the row's ints, floats or
								 * blobs when no column before it is NULL */
} TcopyColumnCodec;

typedef struct TcopyRelCodec
{
	Oid			relid;
	char	   *relname;		/* for messages */
	int			natts;			/* relation's attributes, dropped included */
	int			ncolumns;		/* wire columns before the key images: the
								 * live ones, and dropped ones keeping their
								 * place (TCOPY_CONV_DROPPED, attnum 0) */
	TcopyColumnCodec *columns;	/* [ncolumns], live ones in attnum order */
	int		   *column_of_att;	/* [natts]: wire column of attnum-1, or -1 */
	Tcopy__Schema *schema;		/* the table's schema as sent to the tserver;
								 * its column names are the tserver's, for the
								 * wire only (messages give attname) */
	int			nimages;		/* hidden key image columns, after the
								 * live ones on the wire */
	int		   *image_columns;	/* [nimages]: the column each images */
	StringInfoData image_buf;	/* a row's images */
	Oid			userid;			/* whose user mapping: the tserver is reached as */
	int			encoding;		/* the database encoding text is verified in */
	TcopyTableOptions options;

	/* what a failing row's description may show (tcopy_report_null_violation) */
	Oid			root_relid;		/* the partitioned table rows were routed
								 * through, whose columns it shows; or
								 * InvalidOid: the table's own */
	Bitmapset  *inserted_cols;	/* columns the statement gave values for, as
								 * RangeTblEntry.insertedCols, in the root's
								 * attnums when routed */
} TcopyRelCodec;

/*
 * Build the codec of a tcopy foreign table (in CurrentMemoryContext), to
 * reach its tserver with the user mapping of userid.
 */
extern TcopyRelCodec *tcopy_rel_codec(Relation rel, Oid userid);

/*
 * in codec_cache.c: the codec of tcopy_rel_codec, shared by the backend's
 * scans and direct modifies of the table as userid and kept until the
 * catalogs it was read from change; held until CurrentMemoryContext is
 * reset or deleted.  Read-only: a writer that changes its codec
 * (tcopy_codec_set_inserted_cols, options.on_conflict, key images) takes
 * tcopy_rel_codec_writable's.
 */
extern TcopyRelCodec *tcopy_rel_codec_shared(Relation rel, Oid userid);
/* A codec of its own whose columns are the shared one's, held the same way. */
extern TcopyRelCodec *tcopy_rel_codec_writable(Relation rel, Oid userid);
/* tcopy_table_key_attnums of rel, kept the same way (for the planner). */
extern List *tcopy_rel_key_attnums(Relation rel, bool *key_bytes);
/* Register the caches' invalidation callbacks (from _PG_init). */
extern void TcopyCodecCacheInit(void);

/*
 * Tell the codec which columns the statement gave values for (insertedCols,
 * of root_relid when rows are routed through that partitioned table): a
 * failing row's description shows those and the columns the user may
 * read, as Postgres' own does.
 */
extern void tcopy_codec_set_inserted_cols(TcopyRelCodec *codec, Oid root_relid,
										  Bitmapset *inserted_cols);

/*
 * A row being encoded: a TcWireRow and the arrays it points to, sized for
 * the table's columns and reused row after row.  Blobs point at memory of
 * the caller's (datums, COPY's fields), valid until the row is added to a
 * batch, which copies them.
 */
typedef struct TcopyRowBuf
{
	TcWireRow	wire;
	int64_t    *ints;
	double	   *floats;
	TcWireBlob *blobs;
	uint32_t   *nulls;
	uint8	   *scratch;		/* 8 bytes a column: send formats built here */
} TcopyRowBuf;

extern void tcopy_row_buf_init(TcopyRowBuf *row, int ncolumns);

static inline void
tcopy_row_buf_clear(TcopyRowBuf *row)
{
	row->wire.n_ints = row->wire.n_floats = row->wire.n_blobs = row->wire.n_nulls = 0;
}

/* Append column c's non-NULL value to row. */
extern void tcopy_encode_datum(TcopyRelCodec *codec, int c, Datum value,
							   TcopyRowBuf *row);

/* Append the key images of the row's values (keys.c). */
extern void tcopy_encode_images(TcopyRelCodec *codec, TcopyRowBuf *row);

/*
 * The key of row (encoded with its images) as a KeyBound's Row: its key
 * columns' values in key order, each in its kind's array.  palloc'd; its
 * blobs point into row.
 */
extern Tcopy__Row *tcopy_key_of_row(TcopyRelCodec *codec, const TcopyRowBuf *row);

/*
 * Raise Postgres' error for stored text not valid in the database encoding,
 * with a context naming the column (forms_decode.c).
 */
extern void tcopy_report_invalid_text(const char *attname, const char *relname,
									  int encoding, const uint8 *data,
									  size_t len) pg_attribute_noreturn();

/*
 * Fill row with the values of one tuple (values/nulls indexed by attnum -
 * 1).  Raises Postgres' NOT NULL error for a NULL in a NOT NULL column.
 */
extern void tcopy_encode_row(TcopyRelCodec *codec, Datum *values, bool *nulls,
							 TcopyRowBuf *row);

/* Raise Postgres' NOT NULL error for column c of the tuple values/nulls. */
extern void tcopy_report_null_violation(TcopyRelCodec *codec, int c,
										Datum *values, bool *nulls) pg_attribute_noreturn();

/*
 * Turn a wire row of a scan projecting the wire columns proj[nproj] into
 * values/nulls indexed by attnum - 1 (other attributes are set NULL).
 * Memory comes from CurrentMemoryContext.
 */
extern void tcopy_decode_row(TcopyRelCodec *codec, const int *proj, int nproj,
							 const Tcopy__Row *row, Datum *values, bool *nulls);

/*
 * The same for the next row of ScanBatch.packed at *pos (before end),
 * moving *pos past it.  Text of up to 126 bytes is not copied: it becomes
 * a short varlena in place, its header over its one-byte length, so the
 * buffer must be writable and outlive the values.
 */
extern void tcopy_decode_packed_row(TcopyRelCodec *codec, const int *proj, int nproj,
									uint8 **pos, const uint8 *end, Datum *values,
									bool *nulls);

/* in batch.c: write batches, encoded by batch_wire.c or batch_protobuf.c */

/* Bytes of a frame kept for a batch's header and the rows' framing. */
#define TCOPY_BATCH_HEADER_ROOM	64
typedef struct TcopyBatch
{
	TcopyEncoder encoder;
	Tcopy__WriteKind kind;		/* what its rows do: insert, update, delete */
	size_t		nrows;
	size_t		payload_bytes;	/* approximate bytes of row data so far */
	TcBuf		packed;			/* reused output buffer */
	const uint8 *send;			/* after tcopy_batch_pack: the bytes to send */
	size_t		send_len;

	/* TCOPY_ENCODER_WIRE: rows in the stored form (tc_record.h) */
	TcRecordLayout layout;		/* tcopy_batch_set_layout's */

	/* TCOPY_ENCODER_PROTOBUF (batch_protobuf.c) */
	TcopyAllocMode mode;
	TcArena		arena;			/* TCOPY_ALLOC_ARENA */
	void	  **mallocs;		/* TCOPY_ALLOC_MALLOC: what to free */
	size_t		nmallocs;
	size_t		mallocs_cap;
	Tcopy__WriteBatch msg;		/* rows point into the arena or mallocs */
	size_t		rows_cap;		/* capacity of msg.rows (pooled in arena mode) */
} TcopyBatch;

extern void tcopy_batch_init(TcopyBatch *batch, TcopyEncoder encoder, TcopyAllocMode mode);
/* Encode rows for schema's table (in CurrentMemoryContext, as long as the batch). */
extern void tcopy_batch_set_layout(TcopyBatch *batch, const Tcopy__Schema *schema);
extern void tcopy_batch_bad_row(void) pg_attribute_noreturn();
/* Pack the batch (seq, table id set): batch->send, batch->send_len. */
extern void tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id);
/* Forget the rows (arena reset, or every malloc freed). */
extern void tcopy_batch_reset(TcopyBatch *batch);
extern void tcopy_batch_free(TcopyBatch *batch);
extern void tcopy_batch_out_of_memory(void) pg_attribute_noreturn();

/*
 * in batch_wire.c: the wire encoder (records); 1 when added, 0 when out of
 * memory, -1 when the row does not fit its table's columns
 */
extern int	tcopy_wire_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound);
extern void tcopy_wire_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id);

/* in batch_protobuf.c: the protobuf encoder; false when out of memory */
extern void tcopy_protobuf_batch_init(TcopyBatch *batch, TcopyAllocMode mode);
extern bool tcopy_protobuf_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound);
extern size_t tcopy_protobuf_batch_packed_size(TcopyBatch *batch, uint64 seq,
											   uint32 table_id);
extern bool tcopy_protobuf_batch_pack(TcopyBatch *batch, size_t size);
extern void tcopy_protobuf_batch_reset(TcopyBatch *batch);
extern void tcopy_protobuf_batch_free(TcopyBatch *batch);

/*
 * At least the bytes row adds to the batch, cheap to compute; exact with
 * exact (the row of a bound near the frame's size).
 */
static inline size_t
tcopy_batch_row_bound(TcopyBatch *batch, const TcWireRow *row, bool exact)
{
	size_t		size;

	if (unlikely(batch->encoder != TCOPY_ENCODER_WIRE))
		return tc_wire_row_bound(row);
	if (likely(!exact))
		return tc_record_bound(row);
	size = tc_record_size(&batch->layout, row, batch->kind != TCOPY__WRITE_KIND__WRITE_DELETE);
	if (unlikely(size == 0))
		tcopy_batch_bad_row();
	return size;
}

/*
 * Append row (its blobs copied) to the batch; bound is tcopy_batch_row_bound's
 * for it.  Called per row, so inline: the encoder is chosen by a branch,
 * not a call through a pointer.
 */
static inline void
tcopy_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound)
{
	int			added;

	if (likely(batch->encoder == TCOPY_ENCODER_WIRE))
		added = tcopy_wire_batch_add(batch, row, bound);
	else
		added = tcopy_protobuf_batch_add(batch, row, bound) ? 1 : 0;
	if (unlikely(added <= 0))
	{
		if (added < 0)
			tcopy_batch_bad_row();
		tcopy_batch_out_of_memory();
	}
	batch->nrows++;
}

#endif							/* TCOPY_CODEC_H */
