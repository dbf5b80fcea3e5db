/*
 * enum_labels.c
 *		Renamed enum values: recording them in tcopy.enum_label from the
 *		utility hook, and the maps the codec reads from it.
 *
 * tcopy stores an enum value as its label.  ALTER TYPE mood RENAME VALUE
 * 'sad' TO 'unhappy' leaves stored rows holding 'sad', which enum_in no
 * longer knows.  So every rename of a value of any enum type is recorded,
 * in the same transaction, as a row (mood, stored 'sad', label 'unhappy'):
 * rows stored as 'sad' are the value now called 'unhappy'.  A chain of
 * renames stays one row (sad -> unhappy -> blue: stored 'sad', label
 * 'blue'); renaming the value back to its stored label deletes the row.
 * Every enum type is recorded, whether a tcopy table uses it or not: the
 * hook cannot see which types stored rows hold.
 *
 * The invariant: a stored label of a type is never one of its current
 * labels, so that a stored label names one value.  Postgres keeps the
 * current labels unique; the hook refuses, before Postgres runs them, an
 * ADD VALUE x or RENAME VALUE y TO x while x is stored for another value
 * (y being that value is renaming it back, which is allowed).  The check
 * takes the lock ADD and RENAME VALUE take themselves (ExclusiveLock on
 * the type, AddEnumLabel and RenameEnumLabel) before looking, so that a
 * concurrent rename of the same type cannot slip in between; what it and
 * the recording read is the latest committed state plus this
 * transaction's, as the catalogs are read.  DROP TYPE deletes the type's
 * rows: type OIDs are reused.
 *
 * The table is readable by everyone and writable by no one but its owner:
 * the hook writes it below the executor, as records.c writes its table,
 * so that no permission is checked and no trigger fires whoever renames.
 * Nothing here does anything when this database's extension is older than
 * 1.3 (the table is missing).
 */

#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "tcopy/catalog.h"

/* The columns of tcopy.enum_label, in order. */
enum TcopyEnumLabelColumn
{
	TCOPY_ENUM_LABEL_ENUMTYPE = 1,
	TCOPY_ENUM_LABEL_STORED,
	TCOPY_ENUM_LABEL_LABEL,
	TCOPY_ENUM_LABEL_NATTS = TCOPY_ENUM_LABEL_LABEL
};

/* One row: values stored as stored are the value now called label. */
typedef struct TcopyEnumLabel
{
	char	   *stored;
	char	   *label;
	ItemPointerData tid;		/* the row's, for the hook's update */
} TcopyEnumLabel;

struct TcopyEnumLabels
{
	int			nlabels;		/* at least 1 */
	int			capacity;		/* allocated entries of labels */
	TcopyEnumLabel *labels;		/* in no order: a type has few renames */
};

/*
 * The OID of the extension's table enum_label (extension.c finds it by
 * membership, never by name); InvalidOid when this database's extension
 * is older than 1.3 or absent.
 */
static Oid
tcopy_enum_label_relid(void)
{
	return tcopy_extension_table(TCOPY_TABLE_ENUM_LABEL);
}

/* Check that rel has the columns this file writes and reads. */
static void
tcopy_enum_label_check(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (desc->natts != TCOPY_ENUM_LABEL_NATTS ||
		TupleDescAttr(desc, TCOPY_ENUM_LABEL_ENUMTYPE - 1)->atttypid != REGTYPEOID ||
		TupleDescAttr(desc, TCOPY_ENUM_LABEL_STORED - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, TCOPY_ENUM_LABEL_LABEL - 1)->atttypid != TEXTOID)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s.%s does not have the columns of extension tcopy's",
						TCOPY_SCHEMA, tcopy_extension_table_name(TCOPY_TABLE_ENUM_LABEL))));
}

/*
 * The rows of enum type typid in rel (tcopy.enum_label), read with a
 * snapshot taken now: the latest committed rows and this transaction's,
 * as the catalogs (pg_enum among them) are read; a parallel COPY's worker,
 * which may take no snapshot, reads its leader's.  One scan of the primary
 * key's index; NULL when there are none.
 */
static TcopyEnumLabels *
tcopy_enum_labels_read(Relation rel, Oid typid)
{
	Oid			indexid = RelationGetPrimaryKeyIndex(rel);
	Snapshot	snapshot;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	TcopyEnumLabels *map = NULL;

	tcopy_enum_label_check(rel);
	ScanKeyInit(&key, TCOPY_ENUM_LABEL_ENUMTYPE, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(typid));
	/* a parallel COPY's worker sees what its leader saw */
	snapshot = RegisterSnapshot(IsInParallelMode() ? GetActiveSnapshot() : GetLatestSnapshot());
	scan = systable_beginscan(rel, indexid, OidIsValid(indexid), snapshot, 1, &key);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Datum		values[TCOPY_ENUM_LABEL_NATTS];
		bool		nulls[TCOPY_ENUM_LABEL_NATTS];
		TcopyEnumLabel *entry;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		if (nulls[TCOPY_ENUM_LABEL_STORED - 1] || nulls[TCOPY_ENUM_LABEL_LABEL - 1])
			continue;			/* NOT NULL columns */
		if (map == NULL)
		{
			map = palloc(sizeof(TcopyEnumLabels));
			map->nlabels = 0;
			map->capacity = 4;
			map->labels = palloc(map->capacity * sizeof(TcopyEnumLabel));
		}
		else if (map->nlabels == map->capacity)
		{
			map->capacity *= 2;
			map->labels = repalloc(map->labels, map->capacity * sizeof(TcopyEnumLabel));
		}
		entry = &map->labels[map->nlabels++];
		entry->stored = TextDatumGetCString(values[TCOPY_ENUM_LABEL_STORED - 1]);
		entry->label = TextDatumGetCString(values[TCOPY_ENUM_LABEL_LABEL - 1]);
		entry->tid = tuple->t_self;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	return map;
}

/* The row of map whose stored (or, if by_label, label) is name; or NULL. */
static const TcopyEnumLabel *
tcopy_enum_labels_find(const TcopyEnumLabels *map, const char *name, bool by_label)
{
	if (map == NULL)
		return NULL;
	for (int i = 0; i < map->nlabels; i++)
	{
		const TcopyEnumLabel *entry = &map->labels[i];

		if (strcmp(by_label ? entry->label : entry->stored, name) == 0)
			return entry;
	}
	return NULL;
}

/*
 * The renames recorded for enum type enumtypid, in CurrentMemoryContext;
 * NULL when there are none or the extension is older than 1.3.
 */
TcopyEnumLabels *
tcopy_enum_labels_load(Oid enumtypid)
{
	Oid			relid = tcopy_enum_label_relid();
	Relation	rel;
	TcopyEnumLabels *map;

	if (!OidIsValid(relid))
		return NULL;
	rel = table_open(relid, AccessShareLock);
	map = tcopy_enum_labels_read(rel, enumtypid);
	table_close(rel, AccessShareLock);
	return map;
}

/* The label to store for a value whose current label is label. */
const char *
tcopy_enum_stored_label(const TcopyEnumLabels *map, const char *label)
{
	const TcopyEnumLabel *entry = tcopy_enum_labels_find(map, label, true);

	return entry != NULL ? entry->stored : label;
}

/* The current label of a stored label. */
const char *
tcopy_enum_current_label(const TcopyEnumLabels *map, const char *stored)
{
	const TcopyEnumLabel *entry = tcopy_enum_labels_find(map, stored, false);

	return entry != NULL ? entry->label : stored;
}

/*
 * Before ALTER TYPE ... ADD VALUE x or RENAME VALUE y TO x (stmt) runs:
 * refuse x while tcopy stores it for a value other than y (see the file
 * comment).  Returns the enum type, for the call after the statement that
 * records a rename; InvalidOid when there is nothing to do: the extension
 * is older than 1.3, or Postgres is about to refuse the statement in its
 * own words (no such type, not an enum, not the type's owner), which it
 * then does before anything here takes a lock.
 *
 * The refusal is 42710 (duplicate_object), as Postgres' own for a label
 * the type has: a type's stored and current labels share one namespace.
 */
Oid
tcopy_enum_labels_before_alter(AlterEnumStmt *stmt)
{
	Oid			relid = tcopy_enum_label_relid();
	Oid			typid;
	Relation	rel;
	const TcopyEnumLabel *taken;

	if (!OidIsValid(relid))
		return InvalidOid;
	typid = LookupTypeNameOid(NULL, makeTypeNameFromNameList(stmt->typeName), true);
	if (!OidIsValid(typid) || get_typtype(typid) != TYPTYPE_ENUM ||
		!pg_type_ownercheck(typid, GetUserId()))
		return InvalidOid;

	/* AddEnumLabel's and RenameEnumLabel's lock, held to commit */
	LockDatabaseObject(TypeRelationId, typid, 0, ExclusiveLock);

	rel = table_open(relid, AccessShareLock);
	taken = tcopy_enum_labels_find(tcopy_enum_labels_read(rel, typid),
								   stmt->newVal, false);
	if (taken != NULL &&
		(stmt->oldVal == NULL || strcmp(taken->label, stmt->oldVal) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("enum label \"%s\" is stored by tcopy for the value now called \"%s\"",
						stmt->newVal, taken->label),
				 errdetail("tcopy reads \"%s\" in stored rows of type %s as \"%s\", which was "
						   "renamed from it.",
						   stmt->newVal, format_type_be(typid), taken->label),
				 errhint("Rename \"%s\" back to \"%s\", or choose another label.",
						 taken->label, stmt->newVal)));
	table_close(rel, AccessShareLock);
	return typid;
}

/*
 * After ALTER TYPE enumtypid RENAME VALUE old TO new (stmt) ran, in the
 * same transaction: record it.  The row whose label was old gets label new,
 * or goes when new is its stored label; without one, values stored as old
 * are now called new.  ADD VALUE records nothing.
 */
void
tcopy_enum_labels_after_alter(Oid enumtypid, AlterEnumStmt *stmt)
{
	Oid			relid = tcopy_enum_label_relid();
	Relation	rel;
	const TcopyEnumLabel *renamed;
	ItemPointerData tid;
	Datum		values[TCOPY_ENUM_LABEL_NATTS];
	bool		nulls[TCOPY_ENUM_LABEL_NATTS] = {false};
	HeapTuple	tuple;

	if (stmt->oldVal == NULL || !OidIsValid(relid))
		return;
	rel = table_open(relid, RowExclusiveLock);
	renamed = tcopy_enum_labels_find(tcopy_enum_labels_read(rel, enumtypid),
									 stmt->oldVal, true);
	if (renamed != NULL)
		tid = renamed->tid;
	if (renamed != NULL && strcmp(renamed->stored, stmt->newVal) == 0)
		CatalogTupleDelete(rel, &tid);
	else
	{
		values[TCOPY_ENUM_LABEL_ENUMTYPE - 1] = ObjectIdGetDatum(enumtypid);
		values[TCOPY_ENUM_LABEL_STORED - 1] =
			CStringGetTextDatum(renamed != NULL ? renamed->stored : stmt->oldVal);
		values[TCOPY_ENUM_LABEL_LABEL - 1] = CStringGetTextDatum(stmt->newVal);
		tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
		if (renamed != NULL)
			CatalogTupleUpdate(rel, &tid, tuple);
		else
			CatalogTupleInsert(rel, tuple);
		heap_freetuple(tuple);
	}
	table_close(rel, RowExclusiveLock);
}

/*
 * Type typid is about to be dropped (the object access hook): delete its
 * rows, if it is an enum, so that a type given its OID later starts with
 * none.  The DROP holds the type's lock.
 */
void
tcopy_enum_labels_forget_type(Oid typid)
{
	Oid			relid;
	Relation	rel;
	TcopyEnumLabels *map;

	if (get_typtype(typid) != TYPTYPE_ENUM)
		return;
	relid = tcopy_enum_label_relid();
	if (!OidIsValid(relid))
		return;
	rel = table_open(relid, RowExclusiveLock);
	map = tcopy_enum_labels_read(rel, typid);
	for (int i = 0; map != NULL && i < map->nlabels; i++)
		CatalogTupleDelete(rel, &map->labels[i].tid);
	table_close(rel, RowExclusiveLock);
}
