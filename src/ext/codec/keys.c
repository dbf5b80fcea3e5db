/*
 * keys.c
 *		Which columns can be a tcopy table's key, and the key images of
 *		those whose stored form tells equal values apart.
 *
 * A tserver keys rows on bytes: two keys are one row exactly when their
 * encoded bytes are equal.  A key column must therefore store values that
 * Postgres' btree calls equal (the type's default operator class, under the
 * column's collation) as the same bytes.  docs/values.md, "Keys":
 *
 * - bool and integers travel as INT: their value is their identity;
 * - reg* values are keyed on their OID and database, not their name;
 * - numeric, float4/8, interval and bpchar store what was written (1.00,
 *   -0, '24 hours', 'a  '), as a heap table does, so the key is a hidden
 *   BYTES column after the table's own, holding an image of the value
 *   (src/common/tc_keyimage.c) equal exactly when the values are equal;
 * - any other type whose default btree class has an equal-image function
 *   that says yes for the column's collation (Postgres' own test for
 *   deduplicating btree entries: text under a deterministic collation,
 *   dates, timestamps, uuid, enums...) stores equal values as equal bytes;
 * - the rest cannot be a key: a nondeterministic collation, a type without
 *   a default btree class (point, json) or whose class does not promise
 *   equal images (jsonb, arrays, records, ranges).  The utility hook checks
 *   after CREATE and ALTER, so that such a key is refused where it is set.
 *
 * Tables made before 1.3 key on their columns' bytes (option key_form
 * 'bytes', set by the update script): nothing here applies to them.
 */

#include "postgres.h"

#include "access/nbtree.h"
#include "access/relation.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "tc_keyimage.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"

static void
key_refuse(const char *relname, Form_pg_attribute att, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("column \"%s\" of type %s cannot be in the key of foreign table \"%s\"",
					NameStr(att->attname), format_type_be(att->atttypid), relname),
			 errdetail_internal("%s", detail),
			 errhint("Leave the column out of option key%s.",
					 OidIsValid(att->attcollation) ?
					 ", or give it a deterministic collation" : "")));
}

TcopyKeyImage
tcopy_key_image_of(const char *relname, Form_pg_attribute att)
{
	Oid			base = getBaseType(att->atttypid);
	Oid			collation = att->attcollation;
	TypeCacheEntry *typentry;
	Oid			opcintype;
	Oid			proc;

	if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
		key_refuse(relname, att,
				   psprintf("Collation \"%s\" is nondeterministic: values it calls equal have different bytes.",
							get_collation_name(collation)));
	switch (base)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return TCOPY_KEY_IMAGE_NONE;
		case FLOAT4OID:
		case FLOAT8OID:
			return TCOPY_KEY_IMAGE_FLOAT;
		case NUMERICOID:
			return TCOPY_KEY_IMAGE_NUMERIC;
		case INTERVALOID:
			return TCOPY_KEY_IMAGE_INTERVAL;
		case BPCHAROID:
			return TCOPY_KEY_IMAGE_BPCHAR;
		default:
			if (tcopy_type_is_reg(base) && !OidIsValid(get_element_type(base)))
				return TCOPY_KEY_IMAGE_REG;
			break;
	}
	/* the default btree operator class, as the type cache keeps it */
	typentry = lookup_type_cache(base, TYPECACHE_BTREE_OPFAMILY);
	if (!OidIsValid(typentry->btree_opf))
		key_refuse(relname, att,
				   psprintf("Type %s has no default btree operator class: nothing says which of its values are equal.",
							format_type_be(base)));
	opcintype = typentry->btree_opintype;
	proc = get_opfamily_proc(typentry->btree_opf, opcintype, opcintype,
							 BTEQUALIMAGE_PROC);
	if (!OidIsValid(proc) ||
		!DatumGetBool(OidFunctionCall1Coll(proc, collation, ObjectIdGetDatum(opcintype))))
		key_refuse(relname, att,
				   psprintf("Values of type %s that its btree operator class calls equal can be stored as different bytes.",
							format_type_be(base)));
	return TCOPY_KEY_IMAGE_NONE;
}

/*
 * Check the key of foreign table relid as it is now (the utility hook calls
 * this after CREATE FOREIGN TABLE and ALTER FOREIGN TABLE of a tcopy table,
 * but for the ALTER a column rename runs first, rename.c): every name a
 * column, every column's values with one stored form.
 */
void
tcopy_check_key(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	ListCell   *lc;
	const char *key = NULL;
	bool		key_bytes = false;

	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "key") == 0)
			key = defGetString(def);
		else if (strcmp(def->defname, "key_form") == 0)
			key_bytes = strcmp(defGetString(def), "bytes") == 0;
	}
	/* a column that does not exist is refused here, not at the first use */
	if (key != NULL)
		foreach(lc, tcopy_key_attnums(rel, key))
		{
			if (!key_bytes)
				tcopy_key_image_of(RelationGetRelationName(rel),
								   TupleDescAttr(RelationGetDescr(rel), lfirst_int(lc) - 1));
		}
	relation_close(rel, AccessShareLock);
}

/* Where column c's value is in a row: its index in ints, floats or blobs. */
static int
value_index(TcopyRelCodec *codec, const TcopyRowBuf *row, int c)
{
	TcopyColumnCodec *col = &codec->columns[c];
	int			index = col->slot;

	for (size_t i = 0; i < row->wire.n_nulls && row->nulls[i] < (uint32) c; i++)
		index -= codec->columns[row->nulls[i]].kind == col->kind ||
			(col->kind == TCOPY__KIND__KIND_INT &&
			 codec->columns[row->nulls[i]].kind == TCOPY__KIND__KIND_BOOL);
	return index;
}

static pg_noinline void
image_fail(TcopyRelCodec *codec, int c)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("could not make the key image of column \"%s\" of foreign table \"%s\"",
					codec->columns[c].attname, codec->relname)));
}

void
tcopy_encode_images(TcopyRelCodec *codec, TcopyRowBuf *row)
{
	StringInfo	buf = &codec->image_buf;
	int			first = (int) row->wire.n_blobs;

	resetStringInfo(buf);
	for (int i = 0; i < codec->nimages; i++)
	{
		int			c = codec->image_columns[i];
		TcopyColumnCodec *col = &codec->columns[c];
		int			index = value_index(codec, row, c);
		TcWireBlob *image = &row->blobs[row->wire.n_blobs++];
		const TcWireBlob *blob = &row->blobs[index];
		size_t		len;

		image->pad = 0;
		switch (col->image)
		{
			case TCOPY_KEY_IMAGE_FLOAT:
				enlargeStringInfo(buf, TC_KEYIMAGE_FLOAT8_SIZE);
				tc_keyimage_float8(row->floats[index], (uint8_t *) buf->data + buf->len);
				len = TC_KEYIMAGE_FLOAT8_SIZE;
				break;
			case TCOPY_KEY_IMAGE_NUMERIC:
				len = TC_KEYIMAGE_NUMERIC_MAX(blob->len / 2);
				enlargeStringInfo(buf, (int) len);
				if (tc_keyimage_numeric(blob->data, blob->len,
										(uint8_t *) buf->data + buf->len, len, &len) != 0)
					image_fail(codec, c);
				break;
			case TCOPY_KEY_IMAGE_INTERVAL:
				enlargeStringInfo(buf, TC_KEYIMAGE_INTERVAL_SIZE);
				if (tc_keyimage_interval(blob->data, blob->len,
										 (uint8_t *) buf->data + buf->len) != 0)
					image_fail(codec, c);
				len = TC_KEYIMAGE_INTERVAL_SIZE;
				break;
			case TCOPY_KEY_IMAGE_BPCHAR:
				/* the value's own bytes, without the blanks bpcharcmp ignores */
				image->data = blob->data;
				image->len = (uint32_t) tc_keyimage_bpchar_len(blob->data, blob->len);
				continue;
			case TCOPY_KEY_IMAGE_REG:
				/* the form's database and OID, not the name, which renames change */
				if (blob->len < 1 + TCOPY_REG_IDENTITY_SIZE)
					image_fail(codec, c);
				image->data = blob->data + 1;
				image->len = TCOPY_REG_IDENTITY_SIZE;
				continue;
			default:
				image_fail(codec, c);
		}
		/* an offset for now: buf may move while later images are added */
		image->data = (const uint8_t *) (uintptr_t) buf->len;
		image->len = (uint32_t) len;
		buf->len += (int) len;
	}
	for (int i = 0; i < codec->nimages; i++)
		if (codec->columns[codec->image_columns[i]].image != TCOPY_KEY_IMAGE_BPCHAR &&
			codec->columns[codec->image_columns[i]].image != TCOPY_KEY_IMAGE_REG)
			row->blobs[first + i].data = (const uint8_t *) buf->data +
				(uintptr_t) row->blobs[first + i].data;
}

/* Append blob to key's blobs, its blanks written out (a palloc'd copy then). */
static void
key_blob(Tcopy__Row *key, const TcWireBlob *blob)
{
	ProtobufCBinaryData *out = &key->blobs[key->n_blobs++];

	out->len = blob->len + blob->pad;
	out->data = (uint8_t *) blob->data;
	if (blob->pad > 0)
	{
		out->data = palloc(out->len);
		memcpy(out->data, blob->data, blob->len);
		memset(out->data + blob->len, ' ', blob->pad);
	}
}

Tcopy__Row *
tcopy_key_of_row(TcopyRelCodec *codec, const TcopyRowBuf *row)
{
	Tcopy__Row *key = palloc(sizeof(Tcopy__Row));
	size_t		nkey = codec->schema->n_key;
	int			first_image = (int) row->wire.n_blobs - codec->nimages;

	tcopy__row__init(key);
	key->ints = palloc(sizeof(int64_t) * Max(nkey, 1));
	key->floats = palloc(sizeof(double) * Max(nkey, 1));
	key->blobs = palloc(sizeof(ProtobufCBinaryData) * Max(nkey, 1));
	for (size_t i = 0; i < nkey; i++)
	{
		int			c = (int) codec->schema->key[i];

		if (c >= codec->ncolumns)
		{
			key_blob(key, &row->blobs[first_image + (c - codec->ncolumns)]);
			continue;
		}
		switch (codec->columns[c].kind)
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				key->ints[key->n_ints++] = row->ints[value_index(codec, row, c)];
				break;
			case TCOPY__KIND__KIND_FLOAT:
				key->floats[key->n_floats++] = row->floats[value_index(codec, row, c)];
				break;
			default:
				key_blob(key, &row->blobs[value_index(codec, row, c)]);
				break;
		}
	}
	return key;
}
