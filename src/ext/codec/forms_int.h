/*
 * forms_int.h
 *		What forms.c, which builds and writes the stored forms, and
 *		forms_decode.c, which reads them, share: a form's kinds and struct.
 *		Private to the codec layer; forms.c's file comment says what the
 *		forms are.
 */
#ifndef TCOPY_FORMS_INT_H
#define TCOPY_FORMS_INT_H

#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/typcache.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"

#define TCOPY_FORM_VERSION	0x01

typedef enum TcopyFormKind
{
	TCOPY_FORM_SEND = 1,		/* built-in, portable send format */
	TCOPY_FORM_TEXT,			/* text-like varlena: its bytes */
	TCOPY_FORM_IO,				/* text output under fixed settings */
	TCOPY_FORM_ENUM,
	TCOPY_FORM_REG,				/* versioned from here on */
	TCOPY_FORM_RECORD,
	TCOPY_FORM_ARRAY,
	TCOPY_FORM_RANGE,
	TCOPY_FORM_MULTIRANGE
} TcopyFormKind;

struct TcopyForm
{
	TcopyFormKind kind;
	Oid			typid;			/* the base type */
	int32		typmod;
	uint32		tag;			/* a built-in OID, or kind */
	FmgrInfo	out_fn;			/* SEND: typsend; IO, ENUM: typoutput */
	FmgrInfo	in_fn;			/* SEND: typreceive; IO, containers: typinput */
	Oid			typioparam;
	FmgrInfo	text_in_fn;		/* typinput, for values written by 1.2 */
	Oid			text_typioparam;
	bool		search_path;	/* IO of a reg* type */
	TcopyEnumLabels *labels;	/* ENUM: the renames, or NULL */

	/* RECORD */
	TupleDesc	tupdesc;		/* the type's, when the codec was built */
	TcopyForm **attrs;			/* [natts], NULL for dropped ones */

	/* ARRAY: element; RANGE: subtype; MULTIRANGE: the range */
	TcopyForm  *part;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	TypeCacheEntry *typcache;	/* RANGE: the range's; MULTIRANGE: the
								 * multirange's */

	StringInfoData scratch;		/* a part's form, before its length */
};

/* Whether a form starts with TCOPY_FORM_VERSION at the top of a value. */
static inline bool
tcopy_form_is_versioned(const TcopyForm *form)
{
	return form->kind >= TCOPY_FORM_REG;
}

#endif							/* TCOPY_FORMS_INT_H */
