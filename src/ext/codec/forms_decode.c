/*
 * forms_decode.c
 *		Reading the stored forms forms.c writes: the versioned forms of
 *		reg*, records, arrays, ranges and multiranges, and the text that
 *		tcopy 1.2 stored for them, part by part (legacy_get).  forms.c's
 *		file comment says what the forms are.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "port/pg_bswap.h"
#include "tc_varint.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/multirangetypes.h"
#include "utils/rangetypes.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"

#include "forms_int.h"

/* Error context of a stored value not valid in the database encoding. */
static void
decode_text_error_callback(void *arg)
{
	const char *const *names = (const char *const *) arg;

	errcontext("column \"%s\" of foreign table \"%s\"", names[0], names[1]);
}

void
tcopy_report_invalid_text(const char *attname, const char *relname, int encoding,
						  const uint8 *data, size_t len)
{
	ErrorContextCallback callback;
	const char *names[2] = {attname, relname};

	callback.callback = decode_text_error_callback;
	callback.arg = (void *) names;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	pg_verify_mbstr(encoding, (const char *) data, (int) len, false);
	error_context_stack = callback.previous;
	elog(ERROR, "text of column \"%s\" failed and passed the encoding check", attname);
}

/*
 * Decoding.  Every read is bounds-checked: stored bytes come from a
 * tserver, and a malformed value is an error naming the column.
 */

typedef struct FormReader
{
	bool		same_database;	/* written in this database: OIDs and
								 * attribute numbers are ours */
	const uint8 *p;
	const uint8 *end;
	const char *attname;
	const char *relname;
	int			encoding;
} FormReader;

static pg_noinline void
reader_fail(FormReader *r)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("incorrect binary data format in column \"%s\" of foreign table \"%s\"",
					r->attname, r->relname)));
}

static uint64
get_varint(FormReader *r)
{
	uint64		v = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8		b;

		if (r->p >= r->end)
			reader_fail(r);
		b = *r->p++;
		v |= (uint64) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	reader_fail(r);
	return 0;
}

static uint8
get_byte(FormReader *r)
{
	if (r->p >= r->end)
		reader_fail(r);
	return *r->p++;
}

static Datum form_get(TcopyForm *form, FormReader *r, size_t len);
static void verify_text(FormReader *r, const uint8 *data, size_t len);

/* A slot's part; false for NULL. */
static bool
get_slot(TcopyForm *part, FormReader *r, Datum *value)
{
	uint64		len;
	FormReader	sub = *r;

	if (get_byte(r) == 0)
		return false;
	len = get_varint(r);
	if (len > (uint64) (r->end - r->p))
		reader_fail(r);
	sub.p = r->p;
	sub.end = r->p + len;
	*value = form_get(part, &sub, (size_t) len);
	r->p += len;
	return true;
}

static void
skip_slot(FormReader *r)
{
	uint64		len;

	if (get_byte(r) == 0)
		return;
	len = get_varint(r);
	if (len > (uint64) (r->end - r->p))
		reader_fail(r);
	r->p += len;
}

static Datum
get_reg(TcopyForm *form, FormReader *r)
{
	uint32		oid;

	if (r->end - r->p < 4)
		reader_fail(r);
	memcpy(&oid, r->p, 4);
	r->p += 4;
	if (r->same_database)
	{
		r->p = r->end;
		return ObjectIdGetDatum(pg_ntoh32(oid));
	}
	{
		const uint8 *name = r->p;
		size_t		len = r->end - r->p;

		verify_text(r, name, len);
		r->p = r->end;
		return tcopy_fixed_input(&form->in_fn, pnstrdup((const char *) name, len),
								 form->typioparam, form->typmod, true);
	}
}

static Datum
get_record(TcopyForm *form, FormReader *r)
{
	TupleDesc	desc = form->tupdesc;
	Datum	   *values = palloc0(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	uint64		n = get_varint(r);
	HeapTuple	tuple;

	for (int i = 0; i < desc->natts; i++)
		nulls[i] = true;
	for (uint64 f = 0; f < n; f++)
	{
		uint64		attnum = get_varint(r);
		uint64		namelen = get_varint(r);
		const char *name = (const char *) r->p;
		uint64		tag;
		int			index = -1;
		TcopyForm  *part;

		if (attnum == 0 || namelen > (uint64) (r->end - r->p))
			reader_fail(r);
		r->p += namelen;
		tag = get_varint(r);

		/*
		 * In the database that wrote it, an attribute is its number, which
		 * renames keep; anywhere else (a restore renumbers what was dropped),
		 * its name.  One not found was dropped since: skipped, as on heap.
		 */
		if (r->same_database)
		{
			if (attnum <= (uint64) desc->natts && form->attrs[attnum - 1] != NULL)
				index = (int) attnum - 1;
		}
		else
		{
			for (int i = 0; i < desc->natts && index < 0; i++)
				if (form->attrs[i] != NULL &&
					strlen(NameStr(TupleDescAttr(desc, i)->attname)) == namelen &&
					memcmp(NameStr(TupleDescAttr(desc, i)->attname), name, namelen) == 0)
					index = i;
		}
		if (index < 0)
		{
			skip_slot(r);
			continue;
		}
		part = form->attrs[index];
		if (tag != part->tag)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("attribute \"%s\" of type %s in column \"%s\" of foreign table \"%s\" changed type since it was stored",
							NameStr(TupleDescAttr(desc, index)->attname),
							format_type_be(form->typid), r->attname, r->relname)));
		nulls[index] = !get_slot(part, r, &values[index]);
	}
	if (r->p != r->end)
		reader_fail(r);
	tuple = heap_form_tuple(desc, values, nulls);
	return HeapTupleGetDatum(tuple);
}

static Datum
get_array(TcopyForm *form, FormReader *r)
{
	int			ndim = get_byte(r);
	int			dims[MAXDIM];
	int			lbs[MAXDIM];
	int			n;
	Datum	   *elems;
	bool	   *nulls;

	if (ndim > MAXDIM)
		reader_fail(r);
	if (ndim == 0)
	{
		if (r->p != r->end)
			reader_fail(r);
		return PointerGetDatum(construct_empty_array(get_element_type(form->typid)));
	}
	for (int d = 0; d < ndim; d++)
	{
		uint64		len = get_varint(r);
		int64		lb = tc_unzigzag64(get_varint(r));

		if (len > (uint64) MaxArraySize || lb < PG_INT32_MIN || lb > PG_INT32_MAX)
			reader_fail(r);
		dims[d] = (int) len;
		lbs[d] = (int) lb;
	}
	n = ArrayGetNItems(ndim, dims);
	ArrayCheckBounds(ndim, dims, lbs);
	/* every element takes at least a byte: do not allocate for a lie */
	if ((size_t) n > (size_t) (r->end - r->p))
		reader_fail(r);
	elems = palloc(sizeof(Datum) * Max(n, 1));
	nulls = palloc(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		elems[i] = (Datum) 0;
		nulls[i] = !get_slot(form->part, r, &elems[i]);
	}
	if (r->p != r->end)
		reader_fail(r);
	return PointerGetDatum(construct_md_array(elems, nulls, ndim, dims, lbs,
											  get_element_type(form->typid),
											  form->elmlen, form->elmbyval,
											  form->elmalign));
}

static Datum
get_range(TcopyForm *form, FormReader *r)
{
	uint8		flags = get_byte(r);
	RangeBound	lower = {0},
				upper = {0};
	bool		empty = (flags & RANGE_EMPTY) != 0;

	lower.lower = true;
	lower.infinite = (flags & RANGE_LB_INF) != 0;
	lower.inclusive = (flags & RANGE_LB_INC) != 0;
	upper.infinite = (flags & RANGE_UB_INF) != 0;
	upper.inclusive = (flags & RANGE_UB_INC) != 0;
	if (!empty && !lower.infinite && !get_slot(form->part, r, &lower.val))
		reader_fail(r);
	if (!empty && !upper.infinite && !get_slot(form->part, r, &upper.val))
		reader_fail(r);
	if (r->p != r->end)
		reader_fail(r);
	return RangeTypePGetDatum(make_range(form->typcache, &lower, &upper, empty));
}

static Datum
get_multirange(TcopyForm *form, FormReader *r)
{
	uint64		n = get_varint(r);
	RangeType **ranges;

	if (n > (uint64) (r->end - r->p))
		reader_fail(r);
	ranges = palloc(sizeof(RangeType *) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		Datum		range;

		if (!get_slot(form->part, r, &range))
			reader_fail(r);
		ranges[i] = DatumGetRangeTypeP(range);
	}
	if (r->p != r->end)
		reader_fail(r);
	return MultirangeTypePGetDatum(make_multirange(form->typid, form->typcache->rngtype,
												   (int32) n, ranges));
}

/* Check that stored text is valid in the database encoding. */
static void
verify_text(FormReader *r, const uint8 *data, size_t len)
{
	if (!pg_verify_mbstr(r->encoding, (const char *) data, (int) len, true))
		tcopy_report_invalid_text(r->attname, r->relname, r->encoding, data, len);
}

static Datum
form_get(TcopyForm *form, FormReader *r, size_t len)
{
	const uint8 *data = r->p;

	switch (form->kind)
	{
		case TCOPY_FORM_SEND:
			{
				bool		whole;
				Datum		value = tcopy_receive(&form->in_fn, form->typioparam,
												  form->typmod, data, len, &whole);

				if (!whole)
					reader_fail(r);
				r->p = r->end;
				return value;
			}
		case TCOPY_FORM_TEXT:
			{
				struct varlena *v;

				if (form->typid != BYTEAOID)
					verify_text(r, data, len);
				v = palloc(VARHDRSZ + len);
				SET_VARSIZE(v, VARHDRSZ + len);
				memcpy(VARDATA(v), data, len);
				r->p = r->end;
				return PointerGetDatum(v);
			}
		case TCOPY_FORM_IO:
			verify_text(r, data, len);
			r->p = r->end;
			return tcopy_fixed_input(&form->in_fn, pnstrdup((const char *) data, len),
									 form->typioparam, form->typmod, form->search_path);
		case TCOPY_FORM_ENUM:
			{
				const char *label;

				verify_text(r, data, len);
				label = pnstrdup((const char *) data, len);
				if (form->labels != NULL)
					label = tcopy_enum_current_label(form->labels, label);
				r->p = r->end;
				return InputFunctionCall(&form->in_fn, (char *) label,
										 form->typioparam, form->typmod);
			}
		case TCOPY_FORM_REG:
			return get_reg(form, r);
		case TCOPY_FORM_RECORD:
			return get_record(form, r);
		case TCOPY_FORM_ARRAY:
			return get_array(form, r);
		case TCOPY_FORM_RANGE:
			return get_range(form, r);
		case TCOPY_FORM_MULTIRANGE:
			return get_multirange(form, r);
	}
	reader_fail(r);
	return (Datum) 0;
}

/*
 * Values written by tcopy 1.2: the type's text output, in a versioned
 * form's place.  They are read part by part, so that what changed since
 * is read as the forms read it: an enum label renamed since is mapped, an
 * attribute added to a composite since reads as NULL (1.2 wrote a record's
 * live attributes in order, and new ones come last).  An attribute
 * dropped since shifts the others: such a record is refused by the type
 * of what no longer matches, or misread as record_in would.
 */
static Datum legacy_get(TcopyForm *form, char *literal, FormReader *r);

static pg_noinline void
legacy_fail(FormReader *r, const char *literal)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("malformed value written by tcopy 1.2 in column \"%s\" of foreign table \"%s\": \"%s\"",
					r->attname, r->relname, literal)));
}

/* A record literal, as record_in parses it, by position. */
static Datum
legacy_record(TcopyForm *form, char *literal, FormReader *r)
{
	TupleDesc	desc = form->tupdesc;
	Datum	   *values = palloc0(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	StringInfoData field;
	char	   *p = literal;
	int			i = 0;

	for (int a = 0; a < desc->natts; a++)
		nulls[a] = true;
	initStringInfo(&field);
	while (isspace((unsigned char) *p))
		p++;
	if (*p++ != '(')
		legacy_fail(r, literal);
	for (;;)
	{
		char		ch;

		while (i < desc->natts && form->attrs[i] == NULL)
			i++;
		if (i >= desc->natts)
		{
			/* "()": a record of no live attributes */
			if (*p == ')' && i == 0)
			{
				p++;
				break;
			}
			legacy_fail(r, literal);
		}
		if (*p != ',' && *p != ')')
		{
			bool		inquote = false;

			resetStringInfo(&field);
			while (inquote || (*p != ',' && *p != ')'))
			{
				ch = *p++;
				if (ch == '\0')
					legacy_fail(r, literal);
				if (ch == '\\')
				{
					if (*p == '\0')
						legacy_fail(r, literal);
					appendStringInfoChar(&field, *p++);
				}
				else if (ch == '"')
				{
					if (!inquote)
						inquote = true;
					else if (*p == '"')
						appendStringInfoChar(&field, *p++);
					else
						inquote = false;
				}
				else
					appendStringInfoChar(&field, ch);
			}
			values[i] = legacy_get(form->attrs[i], pstrdup(field.data), r);
			nulls[i] = false;
		}
		i++;
		ch = *p++;
		if (ch == ')')
			break;
		if (ch != ',')
			legacy_fail(r, literal);
	}
	while (isspace((unsigned char) *p))
		p++;
	if (*p != '\0')
		legacy_fail(r, literal);
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* An array literal: parsed by array_in as literal[], then element by element. */
static Datum
legacy_array(TcopyForm *form, char *literal, FormReader *r)
{
	FmgrInfo	array_in_fn;
	ArrayType  *strings;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	fmgr_info(F_ARRAY_IN, &array_in_fn);
	strings = DatumGetArrayTypeP(InputFunctionCall(&array_in_fn, literal, TEXTOID, -1));
	if (ARR_NDIM(strings) == 0)
		return PointerGetDatum(construct_empty_array(get_element_type(form->typid)));
	deconstruct_array(strings, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int e = 0; e < n; e++)
		if (!nulls[e])
			elems[e] = legacy_get(form->part, TextDatumGetCString(elems[e]), r);
	return PointerGetDatum(construct_md_array(elems, nulls, ARR_NDIM(strings),
											  ARR_DIMS(strings), ARR_LBOUND(strings),
											  get_element_type(form->typid),
											  form->elmlen, form->elmbyval,
											  form->elmalign));
}

static Datum
legacy_get(TcopyForm *form, char *literal, FormReader *r)
{
	switch (form->kind)
	{
		case TCOPY_FORM_ENUM:
			if (form->labels != NULL)
				literal = (char *) tcopy_enum_current_label(form->labels, literal);
			return InputFunctionCall(&form->text_in_fn, literal, form->text_typioparam,
									 form->typmod);
		case TCOPY_FORM_RECORD:
			return legacy_record(form, literal, r);
		case TCOPY_FORM_ARRAY:
			return legacy_array(form, literal, r);
		case TCOPY_FORM_REG:
			/* 1.2 wrote the name as the session's search path showed it */
			return tcopy_fixed_input(&form->text_in_fn, literal, form->text_typioparam,
									 form->typmod, false);
		default:
			return tcopy_fixed_input(&form->text_in_fn, literal, form->text_typioparam,
									 form->typmod, form->search_path);
	}
}

Datum
tcopy_form_decode(TcopyForm *form, const uint8 *data, size_t len, int encoding,
				  const char *attname, const char *relname)
{
	FormReader	r;

	r.p = data;
	r.end = data + len;
	r.attname = attname;
	r.relname = relname;
	r.encoding = encoding;
	r.same_database = true;
	if (!tcopy_form_is_versioned(form))
		return form_get(form, &r, len);
	if (len > 0 && data[0] == TCOPY_FORM_VERSION)
	{
		uint64		sysid;
		uint32		dbid;

		if (len < 1 + TCOPY_REG_IDENTITY_SIZE - 4)
			reader_fail(&r);
		memcpy(&sysid, data + 1, 8);
		memcpy(&dbid, data + 9, 4);
		r.same_database = pg_ntoh64(sysid) == GetSystemIdentifier() &&
			pg_ntoh32(dbid) == MyDatabaseId;
		r.p += 13;
		return form_get(form, &r, len - 13);
	}
	/* written by tcopy 1.2: the type's text output */
	verify_text(&r, data, len);
	return legacy_get(form, pnstrdup((const char *) data, len), &r);
}
