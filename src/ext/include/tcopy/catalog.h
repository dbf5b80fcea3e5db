/*
 * tcopy/catalog.h
 *		The catalog layer (src/ext/catalog/), the extension's lowest: the
 *		options of tcopy servers, tables and user mappings (option.c;
 *		those tcopy sets itself, table_options.c; generated table names,
 *		table_names.c), which servers and tables are tcopy's (tables.c), the extension's
 *		own objects found by membership (extension.c), and the labels tcopy
 *		stored for enum values since renamed (enum_labels.c).  It calls no
 *		other layer of the extension.
 */
#ifndef TCOPY_CATALOG_H
#define TCOPY_CATALOG_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"
#include "tc_tls.h"

/* settings (registered in tcopy.c) */
extern int	tcopy_batch_rows;	/* tcopy.batch_rows: default rows per batch */
extern int	tcopy_batch_kb;		/* tcopy.batch_size: default KB per batch */

/* in option.c */

/* Option on_conflict: what rows of equal keys do (docs/storage.md). */
typedef enum TcopyOnConflict
{
	TCOPY_ON_CONFLICT_ERROR,	/* unique_violation, as a primary key */
	TCOPY_ON_CONFLICT_IGNORE,	/* the first row of a key stays */
	TCOPY_ON_CONFLICT_REPLACE	/* the last row wins (tables made before 1.4) */
} TcopyOnConflict;

typedef struct TcopyTableOptions
{
	Oid			serverid;		/* the foreign server */
	char	   *address;		/* server: unix:PATH | tcp:HOST:PORT | null: */
	char	   *token;			/* user mapping; NULL when none */
	TcTlsOptions tls;			/* tcp: only; server: sslmode, sslrootcert;
								 * user mapping: sslcert, sslkey */
	char	   *table_name;		/* the table's name on the tserver */
	List	   *key_attnums;	/* AttrNumbers of the key columns, in key order */
	bool		key_bytes;		/* key_form 'bytes' (tables made before 1.3);
								 * false: 'image', the default */
	int			batch_rows;		/* rows per batch */
	int			batch_bytes;	/* bytes per batch (approximate) */
	TcopyOnConflict on_conflict;	/* table option; a COPY's overrides it */
	List	   *dropped_positions;	/* ints: wire positions of columns dropped
									 * once the tserver held rows (codec.c) */
} TcopyTableOptions;

/* The value of option on_conflict (table or COPY); an ERROR when invalid. */
extern TcopyOnConflict tcopy_parse_on_conflict(const char *value);
/* The option's spelling of policy. */
extern const char *tcopy_on_conflict_name(TcopyOnConflict policy);

/* Whether address is null:, the transport that discards every write. */
extern bool tcopy_address_is_null(const char *address);

/* The positions of option dropped_positions; an ERROR when malformed. */
extern List *tcopy_parse_dropped_positions(const char *value);

/* The column names of a key option's value; an ERROR when malformed. */
extern List *tcopy_parse_key(const char *value);
extern List *tcopy_key_attnums(Relation rel, const char *value);
/* rel's key columns from its own options (no user mapping), NIL: none. */
extern List *tcopy_table_key_attnums(Relation rel, bool *key_bytes);

/* The column's name on the tserver: its column_name option, else its name. */
extern char *tcopy_column_name(Oid relid, Form_pg_attribute att);

/* The longest tserver table name (the tserver's TS_MAX_TABLE_NAME). */
#define TCOPY_TABLE_NAME_MAX	1024

/* The shape of a generated table_name (table_names.c): random bytes, as hex digits. */
#define TCOPY_GENERATED_NAME_BYTES	16

/*
 * The longest owner tag of a generated table_name: the cluster's system
 * identifier (20 digits at most), a dot, the database's oid (10), a dot.
 */
#define TCOPY_OWNER_TAG_MAX			32

/*
 * Fewest digits of a system identifier (initdb's time in seconds shifted
 * left 32 bits: 19 digits since 1970), for telling a tag from a namespace
 * that happens to end in digits and dots.
 */
#define TCOPY_OWNER_SYSTEM_DIGITS	16

/* The tserver table name of rel, made before 1.2 without table_name. */
extern char *tcopy_legacy_table_name(Relation rel);
/* The tserver table name of rel: its table_name option (NULL or an ERROR). */
extern char *tcopy_table_name(Relation rel, bool missing_ok);
/* Option namespace of a tcopy server, or NULL. */
extern char *tcopy_server_namespace(Oid serverid);
/* This database's owner tag in generated table_names: "<system>.<oid>.". */
extern char *tcopy_owner_tag(void);
/* A new, unique table_name: the namespace, the owner tag, 32 hex digits. */
extern char *tcopy_generate_table_name(const char *nspname);

/* Whose a tserver table is, by its name (tcopy_table_owner). */
typedef enum TcopyTableOwner
{
	TCOPY_OWNER_SELF,			/* generated in this database, this namespace */
	TCOPY_OWNER_TAGGED,			/* generated with another owner tag or namespace */
	TCOPY_OWNER_UNKNOWN			/* made before 1.11, or named by hand */
} TcopyTableOwner;

/* Whose tserver table name is, seen from a server of namespace nspname. */
extern TcopyTableOwner tcopy_table_owner(const char *name, const char *nspname);
/* What the utility hook tells the validator of the statement it runs. */
typedef struct TcopyApproval
{
	bool		statement_checked;	/* the hook saw the statement */
	char	   *table_name;		/* the table_name it generated or checked */
} TcopyApproval;

/* Approve a table_name for the validator; returns the previous approval. */
extern TcopyApproval tcopy_approve_table_name(const char *name);
/* Restore the approval tcopy_approve_table_name returned. */
extern void tcopy_restore_approval(TcopyApproval previous);

/* All options of foreign table rel, resolved for user userid. */
extern void tcopy_get_table_options(Relation rel, Oid userid, TcopyTableOptions *options);

/* The same, with the options of a user mapping found by the caller. */
extern void tcopy_get_table_options_with(Relation rel, List *mapping_options,
										 TcopyTableOptions *options);

/* The options of a server (address, token, batches), without a table's. */
extern void tcopy_get_server_options(Oid serverid, List *mapping_options,
									 TcopyTableOptions *options);

/*
 * The options of userid's user mapping for serverid, else of the PUBLIC
 * one; false when there is none (GetUserMapping would raise an ERROR).
 */
extern bool tcopy_find_user_mapping(Oid userid, Oid serverid, List **options);

/* Whose user mapping reaches the tserver for range table entry rti. */
extern Oid	tcopy_rte_user(EState *estate, Index rti);

/*
 * in table_options.c: set foreign table relid's options, those named in
 * drop left out and add's "name=value" strings appended (no validator)
 */
extern void tcopy_replace_table_options(Oid relid, List *drop, List *add);

/* in tables.c: which servers and tables are tcopy's */

/* The FDW handler that makes a server a tcopy server (from _PG_init). */
extern void tcopy_set_fdw_handler(PGFunction handler);
/* Whether relid is a foreign table served by tcopy's handler. */
extern bool tcopy_relation_is_tcopy_table(Oid relid);
/* Whether serverid is a server of a wrapper with tcopy's handler. */
extern bool tcopy_server_is_tcopy(Oid serverid);

/* The tables the extension's scripts make and the C code reads and writes. */
typedef enum TcopyExtensionTable
{
	TCOPY_TABLE_PREPARED_SESSION_RECORDS,	/* version 1.1 on */
	TCOPY_TABLE_ENUM_LABEL,		/* version 1.3 on */
	TCOPY_NUM_EXTENSION_TABLES
} TcopyExtensionTable;

/* The schema the extension's scripts name (tcopy.control), for messages. */
#define TCOPY_SCHEMA		"tcopy"

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

#endif							/* TCOPY_CATALOG_H */
