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

/*
 * What an ALTER noted or read before it ran, for after it (alter.c,
 * alter_rewrite.c): one per statement, so that an ALTER run inside another
 * (by an event trigger, or a function of a default) keeps apart from it;
 * in a context under the (sub)transaction's CurTransactionContext, gone
 * with it when the ALTER fails.
 */
typedef struct TcopyAlterPending
{
	MemoryContext cxt;
	List	   *drops;			/* alter.c's PendingDrop *: dropped columns */
	List	   *rewrites;		/* alter_rewrite.c's PendingRewrite * */
} TcopyAlterPending;

/* in alter.c: before an ALTER of tables that may be tcopy's; NULL: nothing pending */
extern TcopyAlterPending *tcopy_check_alter(AlterTableStmt *stmt, const char *queryString);
/* in alter.c: after it, what pending says, and the missing values of columns it added */
extern void tcopy_after_alter(AlterTableStmt *stmt, TcopyAlterPending *pending);
/*
 * in alter_rewrite.c: an ALTER that rewrites a tcopy table's rows into new
 * storage; read before it runs (into pending), written after
 */
extern void tcopy_rewrite_read(TcopyAlterPending *pending, Relation rel, bool key_changes,
							   List *usings);
extern void tcopy_rewrite_write(TcopyAlterPending *pending);

/* in check.c: a client of a server's tserver, as the caller's mapping says */
extern TcClient *tcopy_server_client(Oid serverid, bool any_mapping,
									 TcopyTableOptions *options, char *err,
									 size_t errlen);

#endif							/* TCOPY_COMMANDS_H */
