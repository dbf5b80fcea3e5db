/*
 * extension.h
 *		The extension's own catalog objects, found by membership: whether
 *		extension tcopy is installed in this database, and its tables.
 *
 * The library is preloaded into every database, with or without the
 * extension, and a schema named tcopy may be anyone's.  Nothing of the
 * extension is found by schema and name: see extension.c.
 */
#ifndef TCOPY_EXTENSION_H
#define TCOPY_EXTENSION_H

#include "postgres.h"

/* The tables the extension's scripts make and the C code reads and writes. */
typedef enum TcopyExtensionTable
{
	TCOPY_TABLE_PREPARED_SESSION_RECORDS,	/* version 1.1 on */
	TCOPY_TABLE_ENUM_LABEL,		/* version 1.3 on */
	TCOPY_NUM_EXTENSION_TABLES
} TcopyExtensionTable;

/* The OID of extension tcopy in this database; InvalidOid when absent. */
extern Oid	tcopy_extension_oid(void);

/*
 * The OID of one of the extension's tables: an ordinary table that
 * pg_depend records as a member of extension tcopy, by its name in the
 * scripts; InvalidOid when the extension is absent or too old to have it.
 * A table of that name that is not a member, or a member that is not an
 * ordinary table, is never returned.
 */
extern Oid	tcopy_extension_table(TcopyExtensionTable table);

/* The table's name in the extension's scripts, for messages. */
extern const char *tcopy_extension_table_name(TcopyExtensionTable table);

/* Register the cache's invalidation callback (from _PG_init). */
extern void TcopyExtensionInit(void);

#endif							/* TCOPY_EXTENSION_H */
