/*
 * codec.c
 *		Postgres values to wire rows and back.
 *
 * Each live column of a tcopy table travels as one wire column of a kind
 * (proto/tcopy.proto): bool as BOOL, int2/4/8 as INT, float4/8 as FLOAT
 * (a float4 widened to double and back is exact), text-like varlenas
 * (text, varchar, char(n), bytea, json, xml) as BYTES holding the datum's
 * bytes verbatim.  Every other type travels as BYTES in one of two
 * encodings, chosen so that what is stored does not depend on the writing
 * session: its binary send format where that is known to be free of the
 * client's encoding (pq_sendtext converts text to it: jsonb, text arrays,
 * enums and records do) and of database-specific OIDs (arrays embed their
 * element type's), else its text output.  Both decode exactly through the
 * receive or input function.
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
#include "tcopy.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/*
 * Whether a type's binary send format can be stored: built-in types whose
 * send function never converts text to the client's encoding, and arrays
 * of them (an array's send format holds its element type's OID, stable
 * only for built-in types).
 */
static bool
type_send_is_portable(Oid typid)
{
	Oid			element;

	switch (typid)
	{
		case BOOLOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case CASHOID:
		case BYTEAOID:
		case DATEOID:
		case TIMEOID:
		case TIMETZOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INTERVALOID:
		case UUIDOID:
		case INETOID:
		case CIDROID:
		case MACADDROID:
		case MACADDR8OID:
		case BITOID:
		case VARBITOID:
		case POINTOID:
		case LSEGOID:
		case BOXOID:
		case CIRCLEOID:
		case LINEOID:
			return true;
		default:
			break;
	}
	element = get_element_type(typid);
	return OidIsValid(element) && element < FirstNormalObjectId &&
		type_send_is_portable(element);
}

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
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case BYTEAOID:
		case JSONOID:
		case XMLOID:
			col->conv = TCOPY_CONV_TEXT;
			col->kind = TCOPY__KIND__KIND_BYTES;
			col->is_text = base != BYTEAOID;
			return;
		default:
			break;
	}
	col->kind = TCOPY__KIND__KIND_BYTES;
	if (type_send_is_portable(base))
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
	}
}

TcopyRelCodec *
tcopy_rel_codec(Relation rel, Oid userid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TcopyRelCodec *codec = palloc0(sizeof(TcopyRelCodec));
	Tcopy__Schema *schema = palloc(sizeof(Tcopy__Schema));
	ListCell   *lc;
	int			nkey = 0;

	codec->relid = RelationGetRelid(rel);
	codec->relname = pstrdup(RelationGetRelationName(rel));
	codec->natts = desc->natts;
	codec->columns = palloc0(sizeof(TcopyColumnCodec) * Max(desc->natts, 1));
	codec->column_of_att = palloc(sizeof(int) * Max(desc->natts, 1));
	codec->userid = userid;
	codec->encoding = GetDatabaseEncoding();
	tcopy_get_table_options(rel, userid, &codec->options);

	tcopy__schema__init(schema);
	schema->columns = palloc(sizeof(Tcopy__Column *) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		TcopyColumnCodec *col;
		Tcopy__Column *wire;

		codec->column_of_att[i] = -1;
		if (att->attisdropped)
			continue;
		col = &codec->columns[codec->ncolumns];
		col->attnum = att->attnum;
		col->attname = pstrdup(NameStr(att->attname));
		col->typid = att->atttypid;
		col->typmod = att->atttypmod;
		col->notnull = att->attnotnull;
		column_choose_conv(col);

		wire = palloc(sizeof(Tcopy__Column));
		tcopy__column__init(wire);
		wire->name = tcopy_column_name(codec->relid, att);
		wire->kind = col->kind;
		wire->type_name = format_type_extended(att->atttypid, -1,
												FORMAT_TYPE_FORCE_QUALIFY);
		wire->typmod = att->atttypmod;
		schema->columns[codec->ncolumns] = wire;
		codec->column_of_att[i] = codec->ncolumns++;
	}
	schema->n_columns = codec->ncolumns;

	schema->key = palloc(sizeof(uint32) * Max(list_length(codec->options.key_attnums), 1));
	foreach(lc, codec->options.key_attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);
		int			column = codec->column_of_att[attnum - 1];

		schema->key[nkey++] = (uint32) column;
		/* a key column cannot be NULL: say so as Postgres would, per row */
		codec->columns[column].notnull = true;
	}
	schema->n_key = nkey;
	codec->schema = schema;
	return codec;
}

/*
 * Postgres' description of a failing row, as ExecBuildSlotValueDescription
 * writes it: every column's output, cut at 64 bytes.
 */
static char *
describe_row(TcopyRelCodec *codec, Datum *values, bool *nulls)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int c = 0; c < codec->ncolumns; c++)
	{
		TcopyColumnCodec *col = &codec->columns[c];
		int			att = col->attnum - 1;
		char	   *val;
		int			vallen;

		if (c > 0)
			appendStringInfoString(&buf, ", ");
		if (nulls[att])
		{
			appendStringInfoString(&buf, "null");
			continue;
		}
		{
			Oid			foutoid;
			bool		typisvarlena;

			getTypeOutputInfo(col->typid, &foutoid, &typisvarlena);
			val = OidOutputFunctionCall(foutoid, values[att]);
		}
		vallen = strlen(val);
		if (vallen <= 64)
			appendStringInfoString(&buf, val);
		else
		{
			vallen = pg_mbcliplen(val, vallen, 64);
			appendBinaryStringInfo(&buf, val, vallen);
			appendStringInfoString(&buf, "...");
		}
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
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

void
tcopy_report_null_violation(TcopyRelCodec *codec, int c, Datum *values, bool *nulls)
{
	ereport(ERROR,
			(errcode(ERRCODE_NOT_NULL_VIOLATION),
			 errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
					codec->columns[c].attname, codec->relname),
			 errdetail("Failing row contains %s.", describe_row(codec, values, nulls))));
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
				char	   *text = OutputFunctionCall(&col->out_fn, value);

				row_add_blob(row, text, strlen(text));
				break;
			}
	}
}

void
tcopy_encode_row(TcopyRelCodec *codec, Datum *values, bool *nulls, TcopyRowBuf *row)
{
	tcopy_row_buf_clear(row);
	for (int c = 0; c < codec->ncolumns; c++)
	{
		int			att = codec->columns[c].attnum - 1;

		if (nulls[att])
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

/* Error context of a stored value not valid in the database encoding. */
static void
decode_text_error_callback(void *arg)
{
	const char *const *names = (const char *const *) arg;

	errcontext("column \"%s\" of foreign table \"%s\"", names[0], names[1]);
}

/*
 * Raise Postgres' error for stored text that is not valid in the database
 * encoding ("invalid byte sequence for encoding ..."), naming the column.
 */
static pg_noinline void
decode_report_invalid_text(TcopyRelCodec *codec, TcopyColumnCodec *col,
						   const ProtobufCBinaryData *blob)
{
	ErrorContextCallback callback;
	const char *names[2] = {col->attname, codec->relname};

	callback.callback = decode_text_error_callback;
	callback.arg = (void *) names;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	pg_verify_mbstr(codec->encoding, (const char *) blob->data, (int) blob->len, false);
	error_context_stack = callback.previous;
	elog(ERROR, "text of column \"%s\" failed and passed the encoding check", col->attname);
}

/* Check that stored text is valid in the database encoding. */
static inline void
decode_verify_text(TcopyRelCodec *codec, TcopyColumnCodec *col,
				   const ProtobufCBinaryData *blob)
{
	if (unlikely(!pg_verify_mbstr(codec->encoding, (const char *) blob->data,
								  (int) blob->len, true)))
		decode_report_invalid_text(codec, col, blob);
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
		const ProtobufCBinaryData *blob;

		if (next_null < row->n_nulls && row->nulls[next_null] == (uint32_t) p)
		{
			next_null++;
			continue;
		}
		/* the tserver checked the layout when it stored the row; check again */
		if ((col->kind == TCOPY__KIND__KIND_BOOL || col->kind == TCOPY__KIND__KIND_INT) ?
			ints >= row->n_ints :
			col->kind == TCOPY__KIND__KIND_FLOAT ? floats >= row->n_floats :
			blobs >= row->n_blobs)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("row from tserver does not match foreign table \"%s\"",
							codec->relname)));
		nulls[att] = false;
		switch (col->conv)
		{
			case TCOPY_CONV_BOOL:
				values[att] = BoolGetDatum(row->ints[ints++] != 0);
				break;
			case TCOPY_CONV_INT2:
				if (row->ints[ints] < PG_INT16_MIN || row->ints[ints] > PG_INT16_MAX)
					decode_out_of_range(codec, proj[p]);
				values[att] = Int16GetDatum((int16) row->ints[ints++]);
				break;
			case TCOPY_CONV_INT4:
				if (row->ints[ints] < PG_INT32_MIN || row->ints[ints] > PG_INT32_MAX)
					decode_out_of_range(codec, proj[p]);
				values[att] = Int32GetDatum((int32) row->ints[ints++]);
				break;
			case TCOPY_CONV_INT8:
				values[att] = Int64GetDatum(row->ints[ints++]);
				break;
			case TCOPY_CONV_FLOAT4:
				values[att] = Float4GetDatum((float4) row->floats[floats++]);
				break;
			case TCOPY_CONV_FLOAT8:
				values[att] = Float8GetDatum(row->floats[floats++]);
				break;
			case TCOPY_CONV_TEXT:
				{
					struct varlena *v;

					blob = &row->blobs[blobs++];
					if (col->is_text)
						decode_verify_text(codec, col, blob);
					v = palloc(VARHDRSZ + blob->len);
					SET_VARSIZE(v, VARHDRSZ + blob->len);
					memcpy(VARDATA(v), blob->data, blob->len);
					values[att] = PointerGetDatum(v);
					break;
				}
			case TCOPY_CONV_SEND:
				{
					StringInfoData buf;

					blob = &row->blobs[blobs++];
					buf.data = palloc(blob->len + 1);
					memcpy(buf.data, blob->data, blob->len);
					buf.data[blob->len] = '\0';
					buf.len = (int) blob->len;
					buf.maxlen = (int) blob->len + 1;
					buf.cursor = 0;
					values[att] = ReceiveFunctionCall(&col->in_fn, &buf,
													  col->typioparam, col->typmod);
					if (buf.cursor != buf.len)
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
								 errmsg("incorrect binary data format in column \"%s\" of foreign table \"%s\"",
										col->attname, codec->relname)));
					break;
				}
			case TCOPY_CONV_IO:
				{
					char	   *text;

					blob = &row->blobs[blobs++];
					decode_verify_text(codec, col, blob);
					text = pnstrdup((const char *) blob->data, blob->len);
					values[att] = InputFunctionCall(&col->in_fn, text,
													col->typioparam, col->typmod);
					break;
				}
		}
	}
}
