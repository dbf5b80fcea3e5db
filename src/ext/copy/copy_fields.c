/*
 * copy_fields.c
 *		COPY's raw text fields straight to wire values: what NextCopyFrom
 *		does, without a Datum in between for the common types.
 *
 * Rows come from tcopy's reader (copy_reader.c) when the caller gave the
 * plan one, or from Postgres' (NextCopyFromRawFields); what is skipped is the per-field detour through an input function
 * and a palloc'd Datum that the wire row then copies again.  For these
 * types the field's string is converted by the very function the type's
 * input function calls, or is itself the value:
 *
 *   int2, int4, int8	pg_strtoint16/32/64 (int2in, int4in, int8in call them);
 *						a field of digits too few to overflow (with tcopy's
 *						reader, which knows its length) without them
 *   float8				float8in_internal, as float8in calls it
 *   text				the field's bytes (textin copies them)
 *   varchar(n)			the field's bytes, when they are no more than n
 *   char(n)			the field's bytes and blanks up to n characters, when
 *						there are no more than n bytes (characters counted
 *						without a multibyte walk when the field is ASCII)
 *   bool, date,		copy_typed.c's converters, for the common spelling of
 *   timestamp[tz], uuid each (its Datum, as the input function returns it);
 *						the input function for any other
 *
 * A field that does not meet the condition, a column of any other type and
 * a domain go through the column's input function exactly as NextCopyFrom
 * calls it (a domain's also for a NULL), and the Datum through the codec.
 * Fields are converted in the order of the COPY's column list, with
 * cur_attname/cur_attval set for CopyFromErrorCallback, and the column
 * count checks come where NextCopyFrom makes them, so that the first error
 * of a bad line and its CONTEXT are Postgres'.  tcopy_field_plan declines
 * (the caller then uses NextCopyFrom) the binary format, columns filled by
 * defaults, and file_fdw's selective conversion.  sql/tcopy_fields.sql
 * loads the same input with tcopy.raw_fields on and off and into a heap
 * table, and compares values and errors.
 */

#include "postgres.h"

#include "access/attmap.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "tcopy/codec.h"
#include "tcopy/copy.h"

typedef enum FieldConv
{
	FIELD_INPUT,				/* the input function, then the codec */
	FIELD_INT2,
	FIELD_INT4,
	FIELD_INT8,
	FIELD_FLOAT8,
	FIELD_FLOAT4,				/* copy_typed.c's, or the input function */
	FIELD_TEXT,					/* verbatim */
	FIELD_VARCHAR,				/* verbatim when short enough */
	FIELD_BPCHAR,				/* verbatim and blanks when short enough */
	FIELD_TYPED,				/* FieldPlan.typed, or the input function */
	FIELD_UUID,
	FIELD_NUMERIC				/* copy_typed.c's send bytes, or the input function */
} FieldConv;

/* A value converted, waiting for the row to be assembled in column order. */
typedef struct FieldValue
{
	bool		isnull;
	bool		is_datum;		/* FIELD_INPUT's or copy_typed.c's result */
	union
	{
		int64		i;
		double		f;
		TcWireBlob	blob;
		Datum		datum;
	}			v;
	pg_uuid_t	uuid;			/* a FIELD_UUID's Datum points here */
	uint8		numeric[TCOPY_TYPED_NUMERIC_MAX];	/* a FIELD_NUMERIC's blob */
} FieldValue;

/* One field of the COPY's column list. */
typedef struct FieldPlan
{
	int			m;				/* attnum - 1, in the COPY's table */
	FieldConv	conv;
	int32		maxlen;			/* FIELD_VARCHAR, FIELD_BPCHAR: characters */
	int32		typmod;
	/* FIELD_TYPED: copy_typed.c's converter of the column's type */
	bool		(*typed) (const char *s, int64 len, Datum *value);
	bool		is_domain;		/* input function called for NULL too */
	const char *attname;
} FieldPlan;

/*
 * Where a row's fields go: the wire columns of one tcopy table, the COPY's
 * own or a partition rows are routed to.
 */
struct TcopyFieldTarget
{
	TcopyRelCodec *codec;
	int		   *field_of_column;	/* [codec->ncolumns]: its field, or -1:
									 * NULL (left out of the column list) */
	int		   *att_of_field;	/* [nfields]: the field's attnum - 1 in the
								 * target */
};

struct TcopyFieldPlan
{
	int			nfields;		/* fields a line must have */
	FieldPlan  *fields;			/* [nfields], in the column list's order */
	FieldValue *values;			/* [nfields]: the row read last */
	char	  **strings;		/* [nfields]: its fields, NULL for a NULL */
	TcopyFieldTarget *target;	/* the COPY's own table */
	TcopyReader *reader;		/* tcopy's reader, or NULL: Postgres' */
};

static FieldConv
field_conv(Oid typid, int32 typmod, int32 *maxlen,
		   bool (**typed) (const char *s, int64 len, Datum *value))
{
	*maxlen = typmod >= (int32) VARHDRSZ ? typmod - VARHDRSZ : -1;
	switch (typid)
	{
		case INT2OID:
			return FIELD_INT2;
		case INT4OID:
			return FIELD_INT4;
		case INT8OID:
			return FIELD_INT8;
		case FLOAT8OID:
			return FIELD_FLOAT8;
		case FLOAT4OID:
			return FIELD_FLOAT4;
		case TEXTOID:
			return FIELD_TEXT;
		case VARCHAROID:
			return *maxlen < 0 ? FIELD_TEXT : FIELD_VARCHAR;
		case BPCHAROID:
			return *maxlen < 0 ? FIELD_TEXT : FIELD_BPCHAR;
		case BOOLOID:
			*typed = tcopy_typed_bool;
			return FIELD_TYPED;
		case DATEOID:
			*typed = tcopy_typed_date;
			return FIELD_TYPED;
		case TIMESTAMPOID:		/* timestamp(p) rounds: its input function */
			*typed = tcopy_typed_timestamp;
			return typmod < 0 ? FIELD_TYPED : FIELD_INPUT;
		case TIMESTAMPTZOID:
			*typed = tcopy_typed_timestamptz;
			return typmod < 0 ? FIELD_TYPED : FIELD_INPUT;
		case UUIDOID:
			return FIELD_UUID;
		case NUMERICOID:
			return FIELD_NUMERIC;
		default:
			return FIELD_INPUT;
	}
}

TcopyFieldPlan *
tcopy_field_plan(CopyFromState cstate, TcopyRelCodec *codec)
{
	TupleDesc	desc = RelationGetDescr(cstate->rel);
	TcopyFieldPlan *plan;
	ListCell   *cur;
	int			f = 0;

	if (cstate->opts.binary || cstate->num_defaults > 0 ||
		cstate->convert_select_flags != NULL ||
		list_length(cstate->attnumlist) == 0)
		return NULL;

	plan = palloc0(sizeof(TcopyFieldPlan));
	plan->nfields = list_length(cstate->attnumlist);
	plan->fields = palloc0(sizeof(FieldPlan) * plan->nfields);
	plan->values = palloc0(sizeof(FieldValue) * plan->nfields);
	foreach(cur, cstate->attnumlist)
	{
		int			m = lfirst_int(cur) - 1;
		Form_pg_attribute att = TupleDescAttr(desc, m);
		FieldPlan  *field = &plan->fields[f++];

		field->m = m;
		field->attname = NameStr(att->attname);
		/* a partition's column has its root's type and typmod */
		field->is_domain = getBaseType(att->atttypid) != att->atttypid;
		field->conv = field->is_domain ? FIELD_INPUT :
			field_conv(att->atttypid, att->atttypmod, &field->maxlen, &field->typed);
		field->typmod = att->atttypmod;
	}
	if (codec != NULL)
		plan->target = tcopy_field_target(plan, codec, NULL);
	return plan;
}

TcopyReader *
tcopy_field_plan_reader(TcopyFieldPlan *plan, CopyFromState cstate, TcopyReaderUnread unread)
{
	plan->reader = tcopy_reader_begin(cstate, unread);
	return plan->reader;
}

TcopyFieldTarget *
tcopy_field_target(TcopyFieldPlan *plan, TcopyRelCodec *codec, const AttrMap *map)
{
	TcopyFieldTarget *target = palloc0(sizeof(TcopyFieldTarget));

	target->codec = codec;
	target->field_of_column = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	target->att_of_field = palloc(sizeof(int) * plan->nfields);
	/* columns left out of the column list stay NULL (no defaults here) */
	for (int c = 0; c < codec->ncolumns; c++)
		target->field_of_column[c] = -1;
	for (int f = 0; f < plan->nfields; f++)
	{
		int			m = plan->fields[f].m;

		/* map->attnums[target attnum - 1] is the COPY table's attnum */
		if (map != NULL)
		{
			int			att;

			for (att = 0; att < map->maplen; att++)
				if (map->attnums[att] == m + 1)
					break;
			if (att == map->maplen)
				elog(ERROR, "column %d of the COPY has no column in foreign table \"%s\"",
					 m + 1, codec->relname);
			m = att;
		}
		target->att_of_field[f] = m;
		target->field_of_column[codec->column_of_att[m]] = f;
	}
	return target;
}

/* Whether s[0..len) is ASCII, a word at a time. */
static inline bool
field_is_ascii(const char *s, size_t len)
{
	uint64		acc = 0;
	size_t		i = 0;

	for (; i + 8 <= len; i += 8)
	{
		uint64		word;

		memcpy(&word, s + i, 8);
		acc |= word;
	}
	for (; i < len; i++)
		acc |= (unsigned char) s[i];
	return (acc & UINT64CONST(0x8080808080808080)) == 0;
}

/*
 * A field of len bytes that is only an optional '-' and 1 to max_digits
 * decimal digits, into *value: true.  Such a field cannot overflow the
 * type whose max_digits it is given, and pg_strtoint16/32/64 would return
 * the same value; anything else (blanks, '+', too many digits, an error) is
 * left to them.
 */
static inline bool
plain_integer(const char *s, int64 len, int max_digits, int64 *value)
{
	bool		neg = s[0] == '-';
	int64		v = 0;

	if (len - neg < 1 || len - neg > max_digits)
		return false;
	for (int64 i = neg; i < len; i++)
	{
		uint32		d = (uint32) ((unsigned char) s[i] - '0');

		if (d > 9)
			return false;
		v = v * 10 + d;
	}
	*value = neg ? -v : v;
	return true;
}

/*
 * Convert one field; string NULL for a NULL, known_len its length or -1.
 * See the file comment.
 */
static inline void
convert_field(CopyFromState cstate, const FieldPlan *field, char *string,
			  int64 known_len, bool ascii, FieldValue *value)
{
	TupleDesc	desc = RelationGetDescr(cstate->rel);
	size_t		len = 0;

	value->isnull = (string == NULL);
	value->is_datum = false;
	if (string == NULL)
	{
		if (field->is_domain)	/* its NOT NULL and CHECKs see the NULL */
			(void) InputFunctionCall(&cstate->in_functions[field->m], NULL,
									 cstate->typioparams[field->m],
									 TupleDescAttr(desc, field->m)->atttypmod);
		return;
	}
	switch (field->conv)
	{
		case FIELD_INT2:
			if (!plain_integer(string, known_len, 4, &value->v.i))
				value->v.i = pg_strtoint16(string);
			return;
		case FIELD_INT4:
			if (!plain_integer(string, known_len, 9, &value->v.i))
				value->v.i = pg_strtoint32(string);
			return;
		case FIELD_INT8:
			if (!plain_integer(string, known_len, 18, &value->v.i))
				value->v.i = pg_strtoint64(string);
			return;
		case FIELD_FLOAT8:
			if (known_len < 0 || !tcopy_typed_float8(string, known_len, &value->v.f))
				value->v.f = float8in_internal(string, NULL, "double precision", string);
			return;
		case FIELD_FLOAT4:
			{
				float		f;

				if (known_len < 0 || !tcopy_typed_float4(string, known_len, &f))
					goto input;
				value->v.f = f;
				return;
			}
		case FIELD_NUMERIC:
			if (known_len >= 0 &&
				tcopy_typed_numeric(string, known_len, field->typmod, value->numeric,
									&value->v.blob.len))
			{
				value->v.blob.data = value->numeric;
				value->v.blob.pad = 0;
				return;
			}
			goto input;
		case FIELD_TEXT:
			len = known_len >= 0 ? (size_t) known_len : strlen(string);
			break;
		case FIELD_VARCHAR:
			len = known_len >= 0 ? (size_t) known_len : strlen(string);
			if (len > (size_t) field->maxlen)
				goto input;		/* varchar_input clips blanks or fails */
			break;
		case FIELD_BPCHAR:
			len = known_len >= 0 ? (size_t) known_len : strlen(string);
			if (len > (size_t) field->maxlen)
				goto input;		/* bpchar_input clips blanks or fails */
			value->v.blob.data = (const uint8 *) string;
			value->v.blob.len = (uint32) len;
			value->v.blob.pad = field->maxlen -
				(ascii || field_is_ascii(string, len) ? (int) len :
				 pg_mbstrlen_with_len(string, (int) len));
			return;
		case FIELD_TYPED:
			if (known_len >= 0 && field->typed(string, known_len, &value->v.datum))
				goto typed;
			goto input;
		case FIELD_UUID:
			if (known_len >= 0 && tcopy_typed_uuid(string, known_len, &value->uuid))
			{
				value->v.datum = UUIDPGetDatum(&value->uuid);
				goto typed;
			}
			goto input;
		case FIELD_INPUT:
			goto input;
	}
	value->v.blob.data = (const uint8 *) string;
	value->v.blob.len = (uint32) len;
	value->v.blob.pad = 0;
	return;

typed:
	value->is_datum = true;
	return;

input:
	value->is_datum = true;
	value->v.datum = InputFunctionCall(&cstate->in_functions[field->m], string,
									   cstate->typioparams[field->m],
									   TupleDescAttr(desc, field->m)->atttypmod);
}

/*
 * A NULL in a NOT NULL column of target: Postgres' message wants the whole
 * row as Datums, so convert the fields again, through their input functions.
 */
static void
report_null(CopyFromState cstate, TcopyFieldPlan *plan, TcopyFieldTarget *target,
			int column)
{
	TupleDesc	desc = RelationGetDescr(cstate->rel);
	int			natts = Max(target->codec->natts, 1);
	Datum	   *values = palloc0(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);

	memset(nulls, true, sizeof(bool) * natts);
	for (int f = 0; f < plan->nfields; f++)
	{
		const FieldPlan *field = &plan->fields[f];
		int			att = target->att_of_field[f];

		if (plan->strings[f] == NULL)
			continue;
		values[att] = InputFunctionCall(&cstate->in_functions[field->m], plan->strings[f],
										cstate->typioparams[field->m],
										TupleDescAttr(desc, field->m)->atttypmod);
		nulls[att] = false;
	}
	tcopy_report_null_violation(target->codec, column, values, nulls);
}

bool
tcopy_read_fields(CopyFromState cstate, TcopyFieldPlan *plan)
{
	char	  **strings;
	int			nstrings;
	const uint32 *lengths = NULL;	/* the fields' lengths, when known */
	bool		ascii = false;	/* the line is ASCII, known so */
	bool		csv = cstate->opts.csv_mode;

	if (plan->reader != NULL)
	{
		if (!tcopy_reader_next(plan->reader, &strings, &nstrings))
			return false;
		lengths = tcopy_reader_lengths(plan->reader, &ascii);
	}
	else if (!NextCopyFromRawFields(cstate, &strings, &nstrings))
		return false;
	/* NextCopyFrom's checks, in its order and words */
	if (nstrings > plan->nfields)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("extra data after last expected column")));
	for (int f = 0; f < plan->nfields; f++)
	{
		const FieldPlan *field = &plan->fields[f];
		char	   *string;
		int64		len;

		if (f >= nstrings)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("missing data for column \"%s\"", field->attname)));
		string = strings[f];
		len = lengths != NULL ? (int64) lengths[f] : -1;
		if (csv)
		{
			if (string == NULL && cstate->opts.force_notnull_flags[field->m])
				string = cstate->opts.null_print, len = -1;
			else if (string != NULL && cstate->opts.force_null_flags[field->m] &&
					 strcmp(string, cstate->opts.null_print) == 0)
				string = NULL;
		}
		strings[f] = string;
		cstate->cur_attname = field->attname;
		cstate->cur_attval = string;
		convert_field(cstate, field, string, len, ascii && len >= 0, &plan->values[f]);
		cstate->cur_attname = NULL;
		cstate->cur_attval = NULL;
	}
	plan->strings = strings;
	return true;
}

void
tcopy_fields_to_row(CopyFromState cstate, TcopyFieldPlan *plan,
					TcopyFieldTarget *target, TcopyRowBuf *row)
{
	TcopyRelCodec *codec = target->codec;

	/* the wire row, in column order */
	tcopy_row_buf_clear(row);
	for (int c = 0; c < codec->ncolumns; c++)
	{
		int			f = target->field_of_column[c];
		FieldValue *value = f >= 0 ? &plan->values[f] : NULL;

		if (value == NULL || value->isnull)
		{
			if (codec->columns[c].notnull)
				report_null(cstate, plan, target, c);
			row->nulls[row->wire.n_nulls++] = (uint32) c;
		}
		else if (value->is_datum)
			tcopy_encode_datum(codec, c, value->v.datum, row);
		else
			switch (codec->columns[c].kind)
			{
				case TCOPY__KIND__KIND_INT:
					row->ints[row->wire.n_ints++] = value->v.i;
					break;
				case TCOPY__KIND__KIND_FLOAT:
					row->floats[row->wire.n_floats++] = value->v.f;
					break;
				default:
					row->blobs[row->wire.n_blobs++] = value->v.blob;
					break;
			}
	}
}

bool
tcopy_next_row_fields(CopyFromState cstate, TcopyFieldPlan *plan, TcopyRowBuf *row)
{
	if (!tcopy_read_fields(cstate, plan))
		return false;
	tcopy_fields_to_row(cstate, plan, plan->target, row);
	return true;
}

int
tcopy_field_of_att(TcopyFieldPlan *plan, int m)
{
	for (int f = 0; f < plan->nfields; f++)
		if (plan->fields[f].m == m)
			return f;
	return -1;
}

Datum
tcopy_field_datum(CopyFromState cstate, TcopyFieldPlan *plan, int f, bool *isnull)
{
	const FieldPlan *field;
	const FieldValue *value;

	*isnull = f < 0 || plan->values[f].isnull;
	if (*isnull)
		return (Datum) 0;
	field = &plan->fields[f];
	value = &plan->values[f];
	if (value->is_datum)
		return value->v.datum;
	switch (field->conv)
	{
		case FIELD_INT2:
			return Int16GetDatum((int16) value->v.i);
		case FIELD_INT4:
			return Int32GetDatum((int32) value->v.i);
		case FIELD_INT8:
			return Int64GetDatum(value->v.i);
		case FIELD_FLOAT8:
			return Float8GetDatum(value->v.f);
		case FIELD_FLOAT4:
			return Float4GetDatum((float4) value->v.f);
		default:
			/* text, numeric: converted already, without error; the same Datum again */
			return InputFunctionCall(&cstate->in_functions[field->m], plan->strings[f],
									 cstate->typioparams[field->m],
									 TupleDescAttr(RelationGetDescr(cstate->rel),
												   field->m)->atttypmod);
	}
}
