/*
 * enum_labels.h
 *		The labels tcopy stored for enum values since renamed: per database
 *		and enum type, in table tcopy.enum_label (extension version 1.3).
 *
 * tcopy stores an enum value as its label.  After ALTER TYPE ... RENAME
 * VALUE, stored rows still hold the old label: the utility hook records
 * each rename here, and the codec maps labels through what it recorded.
 */
#ifndef TCOPY_ENUM_LABELS_H
#define TCOPY_ENUM_LABELS_H

#include "postgres.h"

#include "nodes/parsenodes.h"

/* The renames recorded for one enum type: stored label <-> current label. */
typedef struct TcopyEnumLabels TcopyEnumLabels;

/*
 * The renames recorded for enum type enumtypid, in CurrentMemoryContext;
 * NULL when there are none or the extension is older than 1.3.  At most
 * one index/catalog lookup when there are none: it runs each time a
 * table's codec is built.  Visible: rows of the current transaction too.
 */
extern TcopyEnumLabels *tcopy_enum_labels_load(Oid enumtypid);

/*
 * The label to store for a value whose current label is label (label
 * itself when unmapped).
 */
extern const char *tcopy_enum_stored_label(const TcopyEnumLabels *map,
										   const char *label);

/* The current label of a stored label (stored itself when unmapped). */
extern const char *tcopy_enum_current_label(const TcopyEnumLabels *map,
											const char *stored);

/* for hook.c: around ALTER TYPE ... ADD VALUE | RENAME VALUE, and DROP */

/*
 * Before stmt runs: refuse a label tcopy stores for another value; the
 * enum type to pass to tcopy_enum_labels_after_alter, or InvalidOid.
 */
extern Oid	tcopy_enum_labels_before_alter(AlterEnumStmt *stmt);

/* After stmt ran: record the rename it made of a value of enumtypid. */
extern void tcopy_enum_labels_after_alter(Oid enumtypid, AlterEnumStmt *stmt);

/* Type typid is about to be dropped: forget its renames, if an enum. */
extern void tcopy_enum_labels_forget_type(Oid typid);

#endif							/* TCOPY_ENUM_LABELS_H */
