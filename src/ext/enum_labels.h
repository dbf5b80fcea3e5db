/*
 * enum_labels.h
 *		Placeholder until branch enum-labels lands: no renames recorded.
 */
#ifndef TCOPY_ENUM_LABELS_H
#define TCOPY_ENUM_LABELS_H

typedef struct TcopyEnumLabels TcopyEnumLabels;

static inline TcopyEnumLabels *
tcopy_enum_labels_load(Oid enumtypid)
{
	return NULL;
}

static inline const char *
tcopy_enum_stored_label(const TcopyEnumLabels *map, const char *label)
{
	return label;
}

static inline const char *
tcopy_enum_current_label(const TcopyEnumLabels *map, const char *stored)
{
	return stored;
}

#endif
