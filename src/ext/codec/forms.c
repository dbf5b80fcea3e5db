/*
 * forms.c
 *		The stored forms of the types codec.c does not carry as a scalar:
 *		text output under fixed settings, enum labels, and tcopy's own
 *		forms of records, arrays, ranges and multiranges whose parts need
 *		one of these.
 *
 * docs/values.md says which form each type gets and why.  In short:
 *
 * - Text forms (TCOPY_FORM_IO: jsonb, tsvector, reg*, path, ranges of
 *   built-in types, text arrays, types of extensions...) are the type's
 *   output, read by its input function, both under the settings
 *   tcopy_settings_fix installs: DateStyle ISO, IntervalStyle postgres,
 *   extra_float_digits 3, TimeZone UTC, bytea_output hex and, for reg*
 *   types, a search path of pg_catalog alone (so that names come out
 *   qualified).  postgres_fdw converts values under the same settings for
 *   the same reason: these outputs read back exactly, whatever the writing
 *   and the reading sessions have set.
 * - An enum is stored as a label: the one a value had when tcopy first
 *   stored it.  enum_labels.c keeps the renames since, per type, and the
 *   codec maps labels through them both ways.
 * - A reg* value is stored with the identity of the database that wrote it
 *   (system identifier, database OID), its OID and its qualified name: the
 *   OID in that database, the name anywhere else.
 * - A record is stored by attribute number and name.  In the database that
 *   wrote it, numbers are read, so that attributes added, dropped or
 *   renamed since leave stored rows readable (as on heap: added ones read
 *   as NULL); anywhere else (a restore renumbers around dropped ones),
 *   names.  Arrays, ranges and multiranges get a form of their
 *   own only when what they hold needs one (an array of enums, a range over
 *   a composite); otherwise they are text or send forms.
 *
 * These versioned forms start with a byte (TCOPY_FORM_VERSION) that no text
 * output starts with, so that values stored by tcopy 1.2 as text (records,
 * enum arrays, reg*) are still read, part by part (legacy_get):
 *
 *   value      = 0x01, 8 bytes system identifier and 4 bytes OID of the
 *                database that wrote it, then the form below
 *   reg        = 4 bytes OID, the qualified name
 *   record     = varint count, then per live attribute: varint attnum,
 *                varint name length, name, varint tag, slot
 *   array      = byte ndim, per dimension varint length and zigzag varint
 *                lower bound, then a slot per element
 *   range      = byte flags (range_get_flags'), then a slot per finite bound
 *   multirange = varint count, then a slot per range (its range form)
 *   slot       = 0x00 (NULL) | 0x01, varint length, the part's form
 *
 * A tag is the OID of a built-in type, or a TcopyFormKind for others: an
 * attribute whose type was changed since (ALTER TYPE ... ALTER ATTRIBUTE
 * ... TYPE does not check foreign tables) is an error, never a misread.
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

/* settings, registered in tcopy.c */
bool		tcopy_test_legacy_forms = false;	/* tcopy.test_legacy_forms */

/* Settings saved by tcopy_settings_fix. */
typedef struct TcopySettings
{
	int			date_style;
	int			date_order;
	int			interval_style;
	int			float_digits;
	int			bytea_output;
	pg_tz	   *timezone;
	bool		search_path;
} TcopySettings;

static pg_tz *utc_timezone = NULL;

/*
 * Install the settings text forms are written and read under.  The
 * variables are set directly, not through the GUC machinery (which costs
 * more than the conversion): nothing but the conversion runs before
 * tcopy_settings_restore puts them back.
 */
static void
tcopy_settings_fix(TcopySettings *saved, bool search_path)
{
	if (utc_timezone == NULL)
		utc_timezone = pg_tzset("UTC");
	saved->date_style = DateStyle;
	saved->date_order = DateOrder;
	saved->interval_style = IntervalStyle;
	saved->float_digits = extra_float_digits;
	saved->bytea_output = bytea_output;
	saved->timezone = session_timezone;
	saved->search_path = search_path;
	DateStyle = USE_ISO_DATES;
	DateOrder = DATEORDER_MDY;
	IntervalStyle = INTSTYLE_POSTGRES;
	extra_float_digits = 3;
	bytea_output = BYTEA_OUTPUT_HEX;
	session_timezone = utc_timezone;
	if (search_path)
	{
		OverrideSearchPath path = {NIL, true, false, 0};

		PushOverrideSearchPath(&path);
	}
}

static void
tcopy_settings_restore(const TcopySettings *saved)
{
	if (saved->search_path)
		PopOverrideSearchPath();
	DateStyle = saved->date_style;
	DateOrder = saved->date_order;
	IntervalStyle = saved->interval_style;
	extra_float_digits = saved->float_digits;
	bytea_output = saved->bytea_output;
	session_timezone = saved->timezone;
}

char *
tcopy_fixed_output(FmgrInfo *out_fn, Datum value, bool search_path)
{
	TcopySettings saved;
	char	   *volatile text = NULL;

	tcopy_settings_fix(&saved, search_path);
	PG_TRY();
	{
		text = OutputFunctionCall(out_fn, value);
	}
	PG_FINALLY();
	{
		tcopy_settings_restore(&saved);
	}
	PG_END_TRY();
	return text;
}

Datum
tcopy_fixed_input(FmgrInfo *in_fn, char *text, Oid typioparam, int32 typmod,
				  bool search_path)
{
	TcopySettings saved;
	volatile Datum value = (Datum) 0;

	tcopy_settings_fix(&saved, search_path);
	PG_TRY();
	{
		value = InputFunctionCall(in_fn, text, typioparam, typmod);
	}
	PG_FINALLY();
	{
		tcopy_settings_restore(&saved);
	}
	PG_END_TRY();
	return value;
}

/*
 * A value from its binary send format (data, len) by its receive function;
 * *whole is false when the function did not read every byte.
 */
Datum
tcopy_receive(FmgrInfo *in_fn, Oid typioparam, int32 typmod,
			  const uint8 *data, size_t len, bool *whole)
{
	StringInfoData buf;
	Datum		value;

	buf.data = palloc(len + 1);
	memcpy(buf.data, data, len);
	buf.data[len] = '\0';
	buf.len = (int) len;
	buf.maxlen = (int) len + 1;
	buf.cursor = 0;
	value = ReceiveFunctionCall(in_fn, &buf, typioparam, typmod);
	*whole = buf.cursor == buf.len;
	return value;
}

/* Whether a type's text form names objects: read under pg_catalog alone. */
bool
tcopy_type_is_reg(Oid typid)
{
	Oid			element = get_element_type(typid);

	if (OidIsValid(element))
		typid = getBaseType(element);
	switch (typid)
	{
		case REGCLASSOID:
		case REGTYPEOID:
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGNAMESPACEOID:
		case REGROLEOID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case REGCOLLATIONOID:
			return true;
		default:
			return false;
	}
}

/*
 * Whether a built-in type's binary send format can be stored: its send
 * function never converts text to the client's encoding (pq_sendtext
 * does, for jsonb, text arrays, enums and records) and writes no OID local
 * to a database (arrays hold their element type's: stable only for
 * built-in types).
 */
bool
tcopy_type_send_is_portable(Oid typid)
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
		tcopy_type_send_is_portable(element);
}

/* Whether a type is a text-like varlena stored as its bytes. */
bool
tcopy_type_is_text(Oid typid)
{
	switch (typid)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case BYTEAOID:
		case JSONOID:
		case XMLOID:
			return true;
		default:
			return false;
	}
}

/*
 * Whether values of type typid (a base type) need a form of this file's
 * other than text output: enums, records, and the containers holding them.
 */
bool
tcopy_type_needs_form(Oid typid)
{
	char		typtype = get_typtype(typid);
	Oid			part;

	if (typtype == TYPTYPE_ENUM || typtype == TYPTYPE_COMPOSITE)
		return true;
	if (tcopy_type_is_reg(typid) && !OidIsValid(get_element_type(typid)))
		return true;
	/* money's text output follows lc_monetary, which is not fixed: send it */
	if (typtype == TYPTYPE_RANGE)
		return tcopy_type_needs_form(getBaseType(get_range_subtype(typid))) ||
			getBaseType(get_range_subtype(typid)) == CASHOID;
	if (typtype == TYPTYPE_MULTIRANGE)
		return tcopy_type_needs_form(get_multirange_range(typid));
	part = get_element_type(typid);
	if (OidIsValid(part))
		return tcopy_type_needs_form(getBaseType(part));
	return false;
}

/* The form of a type (a domain's is its base type's), in CurrentMemoryContext. */
TcopyForm *
tcopy_form_build(Oid typid, int32 typmod)
{
	TcopyForm  *form = palloc0(sizeof(TcopyForm));
	int32		basetypmod = typmod;
	Oid			base = getBaseTypeAndTypmod(typid, &basetypmod);
	char		typtype = get_typtype(base);
	Oid			func;
	bool		isvarlena;

	form->typid = base;
	form->typmod = basetypmod;
	initStringInfo(&form->scratch);
	if (typtype == TYPTYPE_ENUM)
		form->kind = TCOPY_FORM_ENUM;
	else if (tcopy_type_is_reg(base) && !OidIsValid(get_element_type(base)))
		form->kind = TCOPY_FORM_REG;
	else if (typtype == TYPTYPE_COMPOSITE)
		form->kind = TCOPY_FORM_RECORD;
	else if (typtype == TYPTYPE_RANGE && tcopy_type_needs_form(base))
		form->kind = TCOPY_FORM_RANGE;
	else if (typtype == TYPTYPE_MULTIRANGE && tcopy_type_needs_form(base))
		form->kind = TCOPY_FORM_MULTIRANGE;
	else if (OidIsValid(get_element_type(base)) && tcopy_type_needs_form(base))
		form->kind = TCOPY_FORM_ARRAY;
	else if (tcopy_type_is_text(base))
		form->kind = TCOPY_FORM_TEXT;
	else if (tcopy_type_send_is_portable(base) || base == BOOLOID)
		form->kind = TCOPY_FORM_SEND;
	else
		form->kind = TCOPY_FORM_IO;
	form->tag = base < FirstNormalObjectId ? base : (uint32) form->kind;
	getTypeInputInfo(base, &func, &form->text_typioparam);
	fmgr_info(func, &form->text_in_fn);

	switch (form->kind)
	{
		case TCOPY_FORM_SEND:
			getTypeBinaryOutputInfo(base, &func, &isvarlena);
			fmgr_info(func, &form->out_fn);
			getTypeBinaryInputInfo(base, &func, &form->typioparam);
			fmgr_info(func, &form->in_fn);
			return form;
		case TCOPY_FORM_TEXT:
			return form;
		case TCOPY_FORM_ENUM:
			form->labels = tcopy_enum_labels_load(base);
			break;
		case TCOPY_FORM_RECORD:
			form->tupdesc = lookup_rowtype_tupdesc_copy(base, -1);
			form->attrs = palloc0(sizeof(TcopyForm *) * Max(form->tupdesc->natts, 1));
			for (int i = 0; i < form->tupdesc->natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(form->tupdesc, i);

				if (!att->attisdropped)
					form->attrs[i] = tcopy_form_build(att->atttypid, att->atttypmod);
			}
			break;
		case TCOPY_FORM_ARRAY:
			{
				Oid			element = get_element_type(base);

				form->part = tcopy_form_build(element, typmod);
				get_typlenbyvalalign(element, &form->elmlen, &form->elmbyval,
									 &form->elmalign);
				break;
			}
		case TCOPY_FORM_RANGE:
			form->typcache = lookup_type_cache(base, TYPECACHE_RANGE_INFO);
			form->part = tcopy_form_build(form->typcache->rngelemtype->type_id, -1);
			break;
		case TCOPY_FORM_MULTIRANGE:
			form->typcache = lookup_type_cache(base, TYPECACHE_MULTIRANGE_INFO);
			form->part = tcopy_form_build(form->typcache->rngtype->type_id, -1);
			break;
		case TCOPY_FORM_IO:
		case TCOPY_FORM_REG:
			form->search_path = tcopy_type_is_reg(base);
			break;
	}
	/* text input and output: the IO form, and old values of containers */
	getTypeOutputInfo(base, &func, &isvarlena);
	fmgr_info(func, &form->out_fn);
	getTypeInputInfo(base, &func, &form->typioparam);
	fmgr_info(func, &form->in_fn);
	return form;
}

/*
 * Encoding.
 */

static void
put_varint(StringInfo buf, uint64 v)
{
	enlargeStringInfo(buf, TC_VARINT_MAX);
	buf->len = (int) ((char *) tc_varint_put((uint8_t *) buf->data + buf->len, v) - buf->data);
	buf->data[buf->len] = '\0';
}

static void form_put(TcopyForm *form, Datum value, StringInfo out);

/* A slot: a part's form behind its length, or NULL. */
static void
put_slot(TcopyForm *part, Datum value, bool isnull, StringInfo out)
{
	StringInfoData *scratch = &part->scratch;

	if (isnull)
	{
		appendStringInfoChar(out, 0);
		return;
	}
	appendStringInfoChar(out, 1);
	/* a form node is never inside itself: its scratch is free */
	form_put(part, value, scratch);
	put_varint(out, (uint64) scratch->len);
	appendBinaryStringInfo(out, scratch->data, scratch->len);
	resetStringInfo(scratch);
}

/*
 * A reg* value: the database it was written in (the cluster's system
 * identifier and the database's OID), its OID, and its qualified name.  Read
 * in that same database, the OID is the value, as on heap (it follows
 * renames); read anywhere else (a restored copy, another database on the
 * same tserver table), the name is looked up, as pg_dump restores reg*
 * values.
 */
static void
put_reg(TcopyForm *form, Datum value, StringInfo out)
{
	uint32		oid = pg_hton32(DatumGetObjectId(value));

	appendBinaryStringInfo(out, (char *) &oid, 4);
	appendStringInfoString(out, tcopy_fixed_output(&form->out_fn, value, true));
}

static void
put_record(TcopyForm *form, Datum value, StringInfo out)
{
	HeapTupleHeader th = DatumGetHeapTupleHeader(value);
	TupleDesc	desc = form->tupdesc;
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;
	int			live = 0;

	if (HeapTupleHeaderGetNatts(th) > desc->natts)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("type %s changed during the statement", format_type_be(form->typid))));
	tuple.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = th;
	values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	heap_deform_tuple(&tuple, desc, values, nulls);
	for (int i = 0; i < desc->natts; i++)
		live += form->attrs[i] != NULL;
	put_varint(out, (uint64) live);
	for (int i = 0; i < desc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(desc, i)->attname);
		size_t		namelen = strlen(name);

		if (form->attrs[i] == NULL)
			continue;
		put_varint(out, (uint64) (i + 1));
		put_varint(out, (uint64) namelen);
		appendBinaryStringInfo(out, name, (int) namelen);
		put_varint(out, form->attrs[i]->tag);
		put_slot(form->attrs[i], values[i], nulls[i], out);
	}
	pfree(values);
	pfree(nulls);
}

static void
put_array(TcopyForm *form, Datum value, StringInfo out)
{
	ArrayType  *array = DatumGetArrayTypeP(value);
	int			ndim = ARR_NDIM(array);
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	appendStringInfoChar(out, (char) ndim);
	for (int d = 0; d < ndim; d++)
	{
		put_varint(out, (uint64) ARR_DIMS(array)[d]);
		put_varint(out, tc_zigzag64(ARR_LBOUND(array)[d]));
	}
	deconstruct_array(array, ARR_ELEMTYPE(array), form->elmlen, form->elmbyval,
					  form->elmalign, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		put_slot(form->part, elems[i], nulls[i], out);
}

static void
put_range(TcopyForm *form, Datum value, StringInfo out)
{
	RangeType  *range = DatumGetRangeTypeP(value);
	RangeBound	lower,
				upper;
	bool		empty;

	range_deserialize(form->typcache, range, &lower, &upper, &empty);
	appendStringInfoChar(out, range_get_flags(range));
	if (empty)
		return;
	if (!lower.infinite)
		put_slot(form->part, lower.val, false, out);
	if (!upper.infinite)
		put_slot(form->part, upper.val, false, out);
}

static void
put_multirange(TcopyForm *form, Datum value, StringInfo out)
{
	MultirangeType *multirange = DatumGetMultirangeTypeP(value);
	RangeType **ranges;
	int32		n;

	multirange_deserialize(form->typcache->rngtype, multirange, &n, &ranges);
	put_varint(out, (uint64) n);
	for (int i = 0; i < n; i++)
		put_slot(form->part, RangeTypePGetDatum(ranges[i]), false, out);
}

static void
form_put(TcopyForm *form, Datum value, StringInfo out)
{
	switch (form->kind)
	{
		case TCOPY_FORM_SEND:
			{
				bytea	   *sent = SendFunctionCall(&form->out_fn, value);

				appendBinaryStringInfo(out, VARDATA(sent), VARSIZE(sent) - VARHDRSZ);
				break;
			}
		case TCOPY_FORM_TEXT:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

				appendBinaryStringInfo(out, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
				break;
			}
		case TCOPY_FORM_IO:
			appendStringInfoString(out, tcopy_fixed_output(&form->out_fn, value,
														   form->search_path));
			break;
		case TCOPY_FORM_ENUM:
			{
				const char *label = OutputFunctionCall(&form->out_fn, value);

				if (form->labels != NULL)
					label = tcopy_enum_stored_label(form->labels, label);
				appendStringInfoString(out, label);
				break;
			}
		case TCOPY_FORM_REG:
			put_reg(form, value, out);
			break;
		case TCOPY_FORM_RECORD:
			put_record(form, value, out);
			break;
		case TCOPY_FORM_ARRAY:
			put_array(form, value, out);
			break;
		case TCOPY_FORM_RANGE:
			put_range(form, value, out);
			break;
		case TCOPY_FORM_MULTIRANGE:
			put_multirange(form, value, out);
			break;
	}
}

void
tcopy_form_encode(TcopyForm *form, Datum value, StringInfo out)
{
	if (unlikely(tcopy_test_legacy_forms) && tcopy_form_is_versioned(form))
	{
		/* what 1.2 wrote: the text output, under the session's settings */
		appendStringInfoString(out, OutputFunctionCall(&form->out_fn, value));
		return;
	}
	if (tcopy_form_is_versioned(form))
	{
		uint64		sysid = pg_hton64(GetSystemIdentifier());
		uint32		dbid = pg_hton32(MyDatabaseId);

		appendStringInfoChar(out, TCOPY_FORM_VERSION);
		appendBinaryStringInfo(out, (char *) &sysid, 8);
		appendBinaryStringInfo(out, (char *) &dbid, 4);
	}
	form_put(form, value, out);
}

/*
 * The description of a type's stored form on the wire (Column.form): a
 * built-in type's name, or the structure of a user type (enum, record, a
 * range, multirange or array of ...), never a user type's name, so that a
 * type rename changes nothing the tserver compares.  Only a base type of
 * an extension (stored as its text output) is named.
 */
char *
tcopy_type_form_name(Oid typid)
{
	Oid			base = getBaseType(typid);
	char		typtype = get_typtype(base);
	Oid			element;

	if (base < FirstNormalObjectId)
		return format_type_extended(base, -1, FORMAT_TYPE_FORCE_QUALIFY);
	if (typtype == TYPTYPE_ENUM)
		return pstrdup("enum");
	if (typtype == TYPTYPE_COMPOSITE)
		return pstrdup("record");
	if (typtype == TYPTYPE_RANGE)
		return psprintf("range(%s)", tcopy_type_form_name(get_range_subtype(base)));
	if (typtype == TYPTYPE_MULTIRANGE)
		return psprintf("multirange(%s)", tcopy_type_form_name(get_multirange_range(base)));
	element = get_element_type(base);
	if (OidIsValid(element))
		return psprintf("array(%s)", tcopy_type_form_name(element));
	return psprintf("text(%s)", format_type_extended(base, -1, FORMAT_TYPE_FORCE_QUALIFY));
}
