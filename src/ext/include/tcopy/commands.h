/*
 * tcopy/commands.h
 *		The commands layer (src/ext/commands/), the extension's highest:
 *		the utility and object access hooks (hook.c), which dispatch COPY
 *		to the COPY layer, column renames (rename.c), and the checks of an
 *		ALTER of a tcopy table's columns or key (alter.c), the tables
 *		checked against their tservers (check.c) and the tservers seen from
 *		SQL (monitor.c).
 */
#ifndef TCOPY_COMMANDS_H
#define TCOPY_COMMANDS_H

#include "postgres.h"

#include "nodes/parsenodes.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"

/* settings (registered in tcopy.c) */
extern bool tcopy_copy_hook_enabled;	/* tcopy.copy_hook */

/* in hook.c: the utility hook, dispatching to copy.c and rename.c */
extern void TcopyHookInit(void);

/* in rename.c: before a statement renames or moves tcopy tables */
extern void tcopy_pin_before_rename(Node *parsetree);
extern bool tcopy_pinning_rename;

/* in alter.c: before an ALTER of tables that may be tcopy's */
extern void tcopy_check_alter(AlterTableStmt *stmt, const char *queryString);
/* in alter.c: after it, the missing values of columns it added */
extern void tcopy_after_alter(AlterTableStmt *stmt);

/*
 * in alter_rewrite.c: an ALTER that rewrites a tcopy table's rows into new
 * storage; read before it runs, written after, forgotten when it failed
 */
extern void tcopy_rewrite_read(Relation rel, bool key_changes, List *usings);
extern void tcopy_rewrite_write(void);
extern void tcopy_rewrite_forget(void);

/* in check.c: a client of a server's tserver, as the caller's mapping says */
extern TcClient *tcopy_server_client(Oid serverid, bool any_mapping,
									 TcopyTableOptions *options, char *err,
									 size_t errlen);

#endif							/* TCOPY_COMMANDS_H */
