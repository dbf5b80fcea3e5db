/*
 * codec.c
 *		Postgres values to wire rows and back.
 *
 * Each live column of a tcopy table travels as one wire column of a kind
 * (proto/tcopy.proto), in one stored form, the same whatever the settings
 * of the session that wrote it (docs/values.md gives the form of each
 * type and why): bool as BOOL, int2/4/8 as INT, float4/8 as FLOAT (a
 * float4 widened to double and back is exact), text-like varlenas (text,
 * varchar, char(n), bytea, json, xml) as BYTES holding the datum's bytes
 * verbatim.  Every other type travels as BYTES: built-in types whose
 * binary send format is free of the client's encoding and of OIDs local
 * to a database, and arrays of them, in that format; enums, records and
 * what holds them in forms.c's forms; anything else as its text output
 * written and read under fixed settings (forms.c).
 *
 * Key columns whose stored form tells equal values apart (numeric 1.0 and
 * 1.00) are keyed on an image, a hidden column after the live ones that
 * keys.c computes from the row's values.
 *
 * Text travels as the writing database's bytes, and another database,
 * of another encoding, may read it: text read back (text-like columns but
 * bytea, and every text output) is verified against the database
 * encoding, as Postgres verifies what a client sends, so that invalid
 * bytes raise Postgres' own error instead of reaching a query's result or
 * a heap table.  pg_verify_mbstr has a fast path for ASCII; nothing is
 * allocated for it.
 *
 * Domains travel as their base type.  Their constraints are checked by
 * Postgres' input functions when rows come in; on the way out, values are
 * decoded by the base type, as Postgres reads stored values without
 * checking them again.
 */

#include "postgres.h"

#include "access/relation.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "access/tupdesc_details.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "tc_varint.h"
#include "tcopy/catalog.h"
#include "tcopy/codec.h"

/* Pick how a type travels. */
static void
column_choose_conv(TcopyColumnCodec *col)
{
	Oid			base = getBaseType(col->typid);
	Oid			func;
	bool		isvarlena;

	switch (base)
	{
		case BOOLOID:
			col->conv = TCOPY_CONV_BOOL;
			col->kind = TCOPY__KIND__KIND_BOOL;
			return;
		case INT2OID:
			col->conv = TCOPY_CONV_INT2;
			col->kind = TCOPY__KIND__KIND_INT;
			return;
		case INT4OID:
			col->conv = TCOPY_CONV_INT4;
			col->kind = TCOPY__KIND__KIND_INT;
			return;
		case INT8OID:
			col->conv = TCOPY_CONV_INT8;
			col->kind = TCOPY__KIND__KIND_INT;
			return;
		case FLOAT4OID:
			col->conv = TCOPY_CONV_FLOAT4;
			col->kind = TCOPY__KIND__KIND_FLOAT;
			return;
		case FLOAT8OID:
			col->conv = TCOPY_CONV_FLOAT8;
			col->kind = TCOPY__KIND__KIND_FLOAT;
			return;
		default:
			break;
	}
	col->kind = TCOPY__KIND__KIND_BYTES;
	if (tcopy_type_is_text(base))
	{
		col->conv = TCOPY_CONV_TEXT;
		col->is_text = base != BYTEAOID;
	}
	else if (tcopy_type_needs_form(base))
	{
		col->conv = TCOPY_CONV_FORM;
		col->form = tcopy_form_build(col->typid, col->typmod);
	}
	else if (tcopy_type_send_is_portable(base))
	{
		/*
		 * The send functions of these write the datum as a big-endian
		 * integer (date_send, time_send, timestamp_send, timestamptz_send):
		 * tcopy_encode_datum writes the same bytes without the call and its
		 * StringInfo.
		 */
		if (base == DATEOID)
			col->send_width = 4;
		else if (base == TIMEOID || base == TIMESTAMPOID || base == TIMESTAMPTZOID)
			col->send_width = 8;
		getTypeBinaryOutputInfo(base, &func, &isvarlena);
		fmgr_info(func, &col->out_fn);
		getTypeBinaryInputInfo(base, &func, &col->typioparam);
		fmgr_info(func, &col->in_fn);
		col->conv = TCOPY_CONV_SEND;
	}
	else
	{
		getTypeOutputInfo(base, &func, &isvarlena);
		fmgr_info(func, &col->out_fn);
		getTypeInputInfo(base, &func, &col->typioparam);
		fmgr_info(func, &col->in_fn);
		col->conv = TCOPY_CONV_IO;
		col->is_text = true;
		col->search_path = tcopy_type_is_reg(base);
	}
}

/* Append a wire column to schema. */
static Tcopy__Column *
schema_add_column(Tcopy__Schema *schema, char *name, Tcopy__Kind kind,
				  char *type_name, int32 typmod, char *form)
{
	Tcopy__Column *wire = palloc(sizeof(Tcopy__Column));

	tcopy__column__init(wire);
	wire->name = name;
	wire->kind = kind;
	wire->type_name = type_name;
	wire->typmod = typmod;
	wire->form = form;
	schema->columns[schema->n_columns++] = wire;
	return wire;
}

/*
 * The hidden column keying column c on its image: after the live columns,
 * named so that no live column can have its name.
 */
static void
codec_add_image(TcopyRelCodec *codec, Tcopy__Schema *schema, int c)
{
	TcopyColumnCodec *col = &codec->columns[c];
	const char *of = schema->columns[c]->name;
	char	   *name = psprintf("tcopy:key_image(%s)", of);

	for (int i = 0; i < codec->ncolumns; i++)
		if (strcmp(schema->columns[i]->name, name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column \"%s\" of foreign table \"%s\" has the name tcopy gives the key image of column \"%s\"",
							codec->columns[i].attname, codec->relname, col->attname),
					 errhint("Rename the column, or give it another column_name.")));
	schema_add_column(schema, name, TCOPY__KIND__KIND_BYTES,
					  psprintf("key image of %s", schema->columns[c]->type_name), -1,
					  psprintf("image(%s)", schema->columns[c]->form));
	codec->image_columns[codec->nimages++] = c;
}

/*
 * Column c's missing value (attmissingval: what rows stored before ALTER
 * TABLE ... ADD COLUMN added it read) as the tserver keeps it: a wire row of
 * that one value (Column.missing, protocol.md).
 */
static Tcopy__Row *
codec_missing_row(TcopyRelCodec *codec, int c, Datum value)
{
	TcopyRowBuf buf;
	Tcopy__Row *row = palloc(sizeof(Tcopy__Row));

	tcopy__row__init(row);
	tcopy_row_buf_init(&buf, c + 1);
	tcopy_encode_datum(codec, c, value, &buf);
	if (buf.wire.n_ints > 0)
	{
		row->n_ints = 1;
		row->ints = palloc(sizeof(int64_t));
		row->ints[0] = buf.ints[0];
	}
	else if (buf.wire.n_floats > 0)
	{
		row->n_floats = 1;
		row->floats = palloc(sizeof(double));
		row->floats[0] = buf.floats[0];
	}
	else
	{
		row->n_blobs = 1;
		row->blobs = palloc(sizeof(ProtobufCBinaryData));
		row->blobs[0].len = buf.blobs[0].len;
		row->blobs[0].data = palloc(Max(buf.blobs[0].len, 1));
		memcpy(row->blobs[0].data, buf.blobs[0].data, buf.blobs[0].len);
	}
	return row;
}

/*
 * Append to codec and schema a dropped column keeping its place: NULL in
 * every row written, matching whatever the tserver stores there.
 */
static void
codec_add_dropped(TcopyRelCodec *codec, Tcopy__Schema *schema, int *nblobs)
{
	TcopyColumnCodec *col = &codec->columns[codec->ncolumns];
	Tcopy__Column *wire;

	col->attnum = 0;
	col->attname = "(dropped)";
	col->typid = InvalidOid;
	col->typmod = -1;
	col->conv = TCOPY_CONV_DROPPED;
	col->kind = TCOPY__KIND__KIND_BYTES;
	col->slot = (*nblobs)++;
	wire = schema_add_column(schema, psprintf("tcopy:dropped(%d)", codec->ncolumns),
							 TCOPY__KIND__KIND_BYTES, "", -1, "");
	wire->dropped = true;
	codec->ncolumns++;
}

TcopyRelCodec *
tcopy_rel_codec(Relation rel, Oid userid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TcopyRelCodec *codec = palloc0(sizeof(TcopyRelCodec));
	Tcopy__Schema *schema = palloc(sizeof(Tcopy__Schema));
	int			nslots[4] = {0};	/* ints, floats, blobs, unused */
	int			nkey;
	int			ndropped;
	ListCell   *lc;

	codec->relid = RelationGetRelid(rel);
	codec->relname = pstrdup(RelationGetRelationName(rel));
	codec->natts = desc->natts;
	codec->userid = userid;
	codec->encoding = GetDatabaseEncoding();
	initStringInfo(&codec->image_buf);
	tcopy_get_table_options(rel, userid, &codec->options);
	nkey = list_length(codec->options.key_attnums);
	ndropped = list_length(codec->options.dropped_positions);
	codec->columns = palloc0(sizeof(TcopyColumnCodec) * Max(desc->natts + ndropped, 1));
	codec->column_of_att = palloc(sizeof(int) * Max(desc->natts, 1));
	codec->image_columns = palloc(sizeof(int) * Max(nkey, 1));

	tcopy__schema__init(schema);
	schema->columns = palloc(sizeof(Tcopy__Column *) * Max(desc->natts + ndropped + nkey, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		TcopyColumnCodec *col;
		Tcopy__Column *wire;

		codec->column_of_att[i] = -1;
		if (att->attisdropped)
			continue;
		/* dropped columns before this one keep their places */
		while (list_member_int(codec->options.dropped_positions, codec->ncolumns))
			codec_add_dropped(codec, schema, &nslots[2]);
		col = &codec->columns[codec->ncolumns];
		col->attnum = att->attnum;
		col->attname = pstrdup(NameStr(att->attname));
		col->typid = att->atttypid;
		col->typmod = att->atttypmod;
		col->notnull = att->attnotnull;
		column_choose_conv(col);
		col->slot = col->kind == TCOPY__KIND__KIND_FLOAT ? nslots[1]++ :
			col->kind == TCOPY__KIND__KIND_BYTES ? nslots[2]++ : nslots[0]++;
		wire = schema_add_column(schema, tcopy_column_name(codec->relid, att), col->kind,
								 format_type_extended(att->atttypid, -1, FORMAT_TYPE_FORCE_QUALIFY),
								 att->atttypmod, tcopy_type_form_name(att->atttypid));
		/* added with a default after rows were stored: what they read */
		if (att->atthasmissing && desc->constr != NULL && desc->constr->missing != NULL &&
			desc->constr->missing[i].am_present)
			wire->missing = codec_missing_row(codec, codec->ncolumns,
											  desc->constr->missing[i].am_value);
		codec->column_of_att[i] = codec->ncolumns++;
	}
	/* and after the last live one */
	foreach(lc, codec->options.dropped_positions)
		if (lfirst_int(lc) >= codec->ncolumns)
			codec_add_dropped(codec, schema, &nslots[2]);

	schema->key = palloc(sizeof(uint32) * Max(nkey, 1));
	foreach(lc, codec->options.key_attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);
		int			column = codec->column_of_att[attnum - 1];
		TcopyColumnCodec *col = &codec->columns[column];

		/* a key column cannot be NULL: say so as Postgres would, per row */
		col->notnull = true;
		if (!codec->options.key_bytes)
			col->image = tcopy_key_image_of(codec->relname, TupleDescAttr(desc, attnum - 1));
		if (col->image == TCOPY_KEY_IMAGE_NONE)
			schema->key[schema->n_key++] = (uint32) column;
		else
		{
			schema->key[schema->n_key++] = (uint32) schema->n_columns;
			codec_add_image(codec, schema, column);
		}
	}
	codec->schema = schema;
	return codec;
}

/*
 * What a failing row's description may show: the columns the statement
 * gave values for (insertedCols of root_relid, the partitioned table rows
 * are routed through, or of the table itself when InvalidOid).
 */
void
tcopy_codec_set_inserted_cols(TcopyRelCodec *codec, Oid root_relid,
							  Bitmapset *inserted_cols)
{
	codec->root_relid = root_relid;
	codec->inserted_cols = bms_copy(inserted_cols);
}

/*
 * Postgres' description of a failing row, as ExecBuildSlotValueDescription
 * (execMain.c, static there) writes it for ExecConstraints: the columns of
 * the table, or of the partitioned table the row was routed through,
 * that the user may SELECT or gave a value for, each output cut at 64
 * bytes, prefixed by their names when that is not every column; NULL
 * (no DETAIL) when none, or under row-level security.  values and nulls
 * are the table's, by attnum - 1.
 */
static char *
describe_row(TcopyRelCodec *codec, Datum *values, bool *nulls)
{
	Oid			reloid = OidIsValid(codec->root_relid) ? codec->root_relid : codec->relid;
	Relation	rel;
	TupleDesc	desc;
	StringInfoData buf;
	StringInfoData collist;
	bool		table_perm = false;
	bool		any_perm = false;
	bool		write_comma = false;
	bool		write_comma_collist = false;

	if (check_enable_rls(reloid, InvalidOid, true) == RLS_ENABLED)
		return NULL;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	if (pg_class_aclcheck(reloid, GetUserId(), ACL_SELECT) == ACLCHECK_OK)
		table_perm = any_perm = true;
	else
	{
		initStringInfo(&collist);
		appendStringInfoChar(&collist, '(');
	}

	rel = relation_open(reloid, NoLock);	/* locked by the statement */
	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		column_perm = false;
		AttrNumber	attnum;
		char	   *val;
		int			vallen;

		if (att->attisdropped)
			continue;
		if (!table_perm &&
			(bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
						   codec->inserted_cols) ||
			 pg_attribute_aclcheck(reloid, att->attnum, GetUserId(),
								   ACL_SELECT) == ACLCHECK_OK))
		{
			column_perm = any_perm = true;
			if (write_comma_collist)
				appendStringInfoString(&collist, ", ");
			else
				write_comma_collist = true;
			appendStringInfoString(&collist, NameStr(att->attname));
		}
		if (!table_perm && !column_perm)
			continue;

		/* a partition has the root's columns, by name */
		attnum = reloid == codec->relid ? att->attnum :
			get_attnum(codec->relid, NameStr(att->attname));
		if (attnum <= 0 || nulls[attnum - 1])
			val = "null";
		else
		{
			Oid			foutoid;
			bool		typisvarlena;

			getTypeOutputInfo(att->atttypid, &foutoid, &typisvarlena);
			val = OidOutputFunctionCall(foutoid, values[attnum - 1]);
		}
		if (write_comma)
			appendStringInfoString(&buf, ", ");
		else
			write_comma = true;
		vallen = strlen(val);
		if (vallen <= 64)
			appendBinaryStringInfo(&buf, val, vallen);
		else
		{
			vallen = pg_mbcliplen(val, vallen, 64);
			appendBinaryStringInfo(&buf, val, vallen);
			appendStringInfoString(&buf, "...");
		}
	}
	relation_close(rel, NoLock);

	if (!any_perm)
		return NULL;
	appendStringInfoChar(&buf, ')');
	if (table_perm)
		return buf.data;
	appendStringInfoString(&collist, ") = ");
	appendBinaryStringInfo(&collist, buf.data, buf.len);
	return collist.data;
}

void
tcopy_row_buf_init(TcopyRowBuf *row, int ncolumns)
{
	int			n = Max(ncolumns, 1);

	row->ints = palloc(sizeof(int64_t) * n);
	row->floats = palloc(sizeof(double) * n);
	row->blobs = palloc(sizeof(TcWireBlob) * n);
	row->nulls = palloc(sizeof(uint32_t) * n);
	row->scratch = palloc(8 * n);
	row->wire.ints = row->ints;
	row->wire.floats = row->floats;
	row->wire.blobs = row->blobs;
	row->wire.nulls = row->nulls;
	tcopy_row_buf_clear(row);
}

/*
 * ExecConstraints' error for a NULL in NOT NULL column c: its words, its
 * DETAIL (describe_row), its schema, table and column fields.  COPY's
 * ON_ERROR ignore recognises it by this function's name (copy_bad_rows.c).
 */
void
tcopy_report_null_violation(TcopyRelCodec *codec, int c, Datum *values, bool *nulls)
{
	char	   *val_desc = describe_row(codec, values, nulls);
	char	   *nspname = get_namespace_name(get_rel_namespace(codec->relid));

	/*
	 * errtablecol's fields, without holding the relation open: COPY's
	 * ON_ERROR ignore swallows this error without a subtransaction to close
	 * it (copy_bad_rows.c).
	 */
	ereport(ERROR,
			(errcode(ERRCODE_NOT_NULL_VIOLATION),
			 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
					codec->columns[c].attname, codec->relname),
			 val_desc ? errdetail("Failing row contains %s.", val_desc) : 0,
			 err_generic_string(PG_DIAG_SCHEMA_NAME, nspname),
			 err_generic_string(PG_DIAG_TABLE_NAME, codec->relname),
			 err_generic_string(PG_DIAG_COLUMN_NAME, codec->columns[c].attname)));
}

static inline void
row_add_blob(TcopyRowBuf *row, const void *data, size_t len)
{
	TcWireBlob *blob = &row->blobs[row->wire.n_blobs++];

	blob->data = data;
	blob->len = (uint32_t) len;
	blob->pad = 0;
}

/*
 * Blobs point into value (or what its send or output function returned, in
 * CurrentMemoryContext): they stay valid until the row is added to a batch.
 */
void
tcopy_encode_datum(TcopyRelCodec *codec, int c, Datum value, TcopyRowBuf *row)
{
	TcopyColumnCodec *col = &codec->columns[c];

	switch (col->conv)
	{
		case TCOPY_CONV_BOOL:
			row->ints[row->wire.n_ints++] = DatumGetBool(value) ? 1 : 0;
			break;
		case TCOPY_CONV_INT2:
			row->ints[row->wire.n_ints++] = DatumGetInt16(value);
			break;
		case TCOPY_CONV_INT4:
			row->ints[row->wire.n_ints++] = DatumGetInt32(value);
			break;
		case TCOPY_CONV_INT8:
			row->ints[row->wire.n_ints++] = DatumGetInt64(value);
			break;
		case TCOPY_CONV_FLOAT4:
			row->floats[row->wire.n_floats++] = (double) DatumGetFloat4(value);
			break;
		case TCOPY_CONV_FLOAT8:
			row->floats[row->wire.n_floats++] = DatumGetFloat8(value);
			break;
		case TCOPY_CONV_TEXT:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

				row_add_blob(row, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
				break;
			}
		case TCOPY_CONV_SEND:
			if (col->send_width == 8)
			{
				uint64		be = pg_hton64((uint64) DatumGetInt64(value));

				memcpy(row->scratch + 8 * c, &be, 8);
				row_add_blob(row, row->scratch + 8 * c, 8);
			}
			else if (col->send_width == 4)
			{
				uint32		be = pg_hton32((uint32) DatumGetInt32(value));

				memcpy(row->scratch + 8 * c, &be, 4);
				row_add_blob(row, row->scratch + 8 * c, 4);
			}
			else
			{
				bytea	   *sent = SendFunctionCall(&col->out_fn, value);

				row_add_blob(row, VARDATA(sent), VARSIZE(sent) - VARHDRSZ);
			}
			break;
		case TCOPY_CONV_IO:
			{
				char	   *text = tcopy_fixed_output(&col->out_fn, value,
													  col->search_path);

				row_add_blob(row, text, strlen(text));
				break;
			}
		case TCOPY_CONV_FORM:
			{
				StringInfoData buf;

				initStringInfo(&buf);
				tcopy_form_encode(col->form, value, &buf);
				row_add_blob(row, buf.data, buf.len);
				break;
			}
		case TCOPY_CONV_DROPPED:
			elog(ERROR, "a dropped column of foreign table \"%s\" has no value to send",
				 codec->relname);
	}
}

void
tcopy_encode_row(TcopyRelCodec *codec, Datum *values, bool *nulls, TcopyRowBuf *row)
{
	tcopy_row_buf_clear(row);
	for (int c = 0; c < codec->ncolumns; c++)
	{
		int			att = codec->columns[c].attnum - 1;

		if (codec->columns[c].conv == TCOPY_CONV_DROPPED || nulls[att])
		{
			if (codec->columns[c].notnull)
				tcopy_report_null_violation(codec, c, values, nulls);
			row->nulls[row->wire.n_nulls++] = (uint32_t) c;
			continue;
		}
		tcopy_encode_datum(codec, c, values[att], row);
	}
}

/* A stored integer does not fit its column: written by another client. */
static void
decode_out_of_range(TcopyRelCodec *codec, int column)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("value from tserver is out of range for column \"%s\" of foreign table \"%s\"",
					codec->columns[column].attname, codec->relname)));
}

/* Check that stored text is valid in the database encoding. */
static inline void
decode_verify_text(TcopyRelCodec *codec, TcopyColumnCodec *col, const uint8 *data, size_t len)
{
	if (unlikely(!pg_verify_mbstr(codec->encoding, (const char *) data, (int) len, true)))
		tcopy_report_invalid_text(col->attname, codec->relname, codec->encoding, data, len);
}

/* The row does not have the layout of the projection: never stored so. */
static void
decode_mismatch(TcopyRelCodec *codec)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("row from tserver does not match foreign table \"%s\"",
					codec->relname)));
}

/* The datum of wire column column's stored integer v (KIND_BOOL or KIND_INT). */
static inline Datum
decode_int(TcopyRelCodec *codec, int column, int64 v)
{
	switch (codec->columns[column].conv)
	{
		case TCOPY_CONV_BOOL:
			return BoolGetDatum(v != 0);
		case TCOPY_CONV_INT2:
			if (v < PG_INT16_MIN || v > PG_INT16_MAX)
				decode_out_of_range(codec, column);
			return Int16GetDatum((int16) v);
		case TCOPY_CONV_INT4:
			if (v < PG_INT32_MIN || v > PG_INT32_MAX)
				decode_out_of_range(codec, column);
			return Int32GetDatum((int32) v);
		default:
			return Int64GetDatum(v);
	}
}

/* The datum of wire column column's stored float v (KIND_FLOAT). */
static inline Datum
decode_float(TcopyRelCodec *codec, int column, double v)
{
	if (codec->columns[column].conv == TCOPY_CONV_FLOAT4)
		return Float4GetDatum((float4) v);
	return Float8GetDatum(v);
}

/*
 * The datum of wire column column's stored bytes (KIND_BYTES), in
 * CurrentMemoryContext.
 */
static Datum
decode_bytes(TcopyRelCodec *codec, int column, const uint8 *data, size_t len)
{
	TcopyColumnCodec *col = &codec->columns[column];

	switch (col->conv)
	{
		case TCOPY_CONV_TEXT:
			{
				struct varlena *v;

				if (col->is_text)
					decode_verify_text(codec, col, data, len);
				v = palloc(VARHDRSZ + len);
				SET_VARSIZE(v, VARHDRSZ + len);
				memcpy(VARDATA(v), data, len);
				return PointerGetDatum(v);
			}
		case TCOPY_CONV_SEND:
			{
				bool		whole;
				Datum		value;

				/*
				 * timestamp and timestamptz: the stored datum, as a heap
				 * tuple gives it back.  Their receive functions refuse a
				 * value past the end of the range, which Postgres' typmod
				 * rounding makes and stores ('294276-12-31 23:59:59.999'
				 * as timestamp(2) is 294277-01-01 00:00:00): a row the
				 * table took and could not return.
				 */
				if (len == 8 && col->send_width == 8 &&
					(col->in_fn.fn_oid == F_TIMESTAMP_RECV ||
					 col->in_fn.fn_oid == F_TIMESTAMPTZ_RECV))
				{
					uint64		be;

					memcpy(&be, data, 8);
					return Int64GetDatum((int64) pg_ntoh64(be));
				}
				value = tcopy_receive(&col->in_fn, col->typioparam, col->typmod,
									  data, len, &whole);
				if (!whole)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
							 errmsg("incorrect binary data format in column \"%s\" of foreign table \"%s\"",
									col->attname, codec->relname)));
				return value;
			}
		case TCOPY_CONV_IO:
			decode_verify_text(codec, col, data, len);
			return tcopy_fixed_input(&col->in_fn, pnstrdup((const char *) data, len),
									 col->typioparam, col->typmod, col->search_path);
		case TCOPY_CONV_FORM:
			return tcopy_form_decode(col->form, data, len, codec->encoding, col->attname,
									 codec->relname);
		default:
			decode_mismatch(codec);
			return (Datum) 0;
	}
}

void
tcopy_decode_row(TcopyRelCodec *codec, const int *proj, int nproj,
				 const Tcopy__Row *row, Datum *values, bool *nulls)
{
	size_t		ints = 0,
				floats = 0,
				blobs = 0,
				next_null = 0;

	for (int i = 0; i < codec->natts; i++)
	{
		values[i] = (Datum) 0;
		nulls[i] = true;
	}
	for (int p = 0; p < nproj; p++)
	{
		TcopyColumnCodec *col = &codec->columns[proj[p]];
		int			att = col->attnum - 1;

		if (next_null < row->n_nulls && row->nulls[next_null] == (uint32_t) p)
		{
			next_null++;
			continue;
		}
		nulls[att] = false;
		/* the tserver checked the layout when it stored the row; check again */
		switch (col->kind)
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (ints >= row->n_ints)
					decode_mismatch(codec);
				values[att] = decode_int(codec, proj[p], row->ints[ints++]);
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (floats >= row->n_floats)
					decode_mismatch(codec);
				values[att] = decode_float(codec, proj[p], row->floats[floats++]);
				break;
			default:
				if (blobs >= row->n_blobs)
					decode_mismatch(codec);
				values[att] = decode_bytes(codec, proj[p], row->blobs[blobs].data,
										   row->blobs[blobs].len);
				blobs++;
				break;
		}
	}
}

/* Read a varint at *p, before end; a cut or overlong one is a mismatch. */
static inline uint64
decode_varint(TcopyRelCodec *codec, const uint8 **p, const uint8 *end)
{
	uint64		v;

	if (likely(*p < end && **p < 0x80))
		return *(*p)++;
	if (!tc_varint_get(p, end, &v))
		decode_mismatch(codec);
	return v;
}

void
tcopy_decode_packed_row(TcopyRelCodec *codec, const int *proj, int nproj,
						uint8 **pos, const uint8 *end, Datum *values, bool *nulls)
{
	const uint8 *bitmap = *pos;
	const uint8 *p = bitmap + (nproj + 7) / 8;

	if (p > end)
		decode_mismatch(codec);
	for (int i = 0; i < codec->natts; i++)
	{
		values[i] = (Datum) 0;
		nulls[i] = true;
	}
	for (int c = 0; c < nproj; c++)
	{
		TcopyColumnCodec *col = &codec->columns[proj[c]];
		int			att = col->attnum - 1;

		if (bitmap[c / 8] & (1 << (c % 8)))
			continue;
		nulls[att] = false;
		switch (col->kind)
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				values[att] = decode_int(codec, proj[c],
										 tc_unzigzag64(decode_varint(codec, &p, end)));
				break;
			case TCOPY__KIND__KIND_FLOAT:
				{
					uint64		bits;
					double		f;

					if (end - p < 8)
						decode_mismatch(codec);
					memcpy(&bits, p, 8);
					bits = pg_bswap64(pg_hton64(bits));	/* little-endian to host */
					memcpy(&f, &bits, 8);
					p += 8;
					values[att] = decode_float(codec, proj[c], f);
					break;
				}
			default:
				{
					uint8	   *start = (uint8 *) p;
					uint64		len = decode_varint(codec, &p, end);

					if (len > (uint64) (end - p))
						decode_mismatch(codec);
					if (col->conv == TCOPY_CONV_TEXT && len <= VARATT_SHORT_MAX - VARHDRSZ_SHORT &&
						p == start + 1)
					{
						/*
						 * A short varlena in place: its one-byte header over
						 * the one-byte length, no copy
						 */
						if (col->is_text)
							decode_verify_text(codec, col, p, (size_t) len);
						SET_VARSIZE_1B(start, VARHDRSZ_SHORT + len);
						values[att] = PointerGetDatum(start);
					}
					else
						values[att] = decode_bytes(codec, proj[c], p, (size_t) len);
					p += len;
					break;
				}
		}
	}
	*pos = (uint8 *) p;
}
