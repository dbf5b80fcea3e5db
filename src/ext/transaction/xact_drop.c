/*
 * xact_drop.c
 *		DROPs of tcopy tables pending in the transaction: remembered when
 *		the object access hook sees them, forgotten with a rolled-back
 *		subtransaction, and staged in the write sessions at pre-commit
 *		(xact.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "tc_address.h"
#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/*
 * A DROP of a tcopy table, seen by the object access hook (hook.c): the
 * tserver's table is dropped in the transaction's write session at
 * pre-commit.
 */
typedef struct TcopyPendingDrop
{
	TcopyTableOptions options;	/* serverid, address, token, table_name */
	Oid			userid;			/* whose user mapping reaches the tserver */
	bool		has_mapping;	/* false: none was found at the DROP */
	char	   *relname;		/* the dropped table, for messages */
	int			nest_level;		/* of the (sub)transaction that dropped it */
} TcopyPendingDrop;

/* TcopyPendingDrop *, in TopTransactionContext */
static List *tcopy_pending_drops = NIL;

/*
 * Drop the tserver's table options->table_name when the transaction
 * commits (relname is the foreign table dropped, for messages): the DROP is
 * staged in the write session for (options->serverid, userid) at
 * pre-commit, after everything else the transaction wrote, and forgotten
 * if the subtransaction that dropped the table rolls back.
 */
void
tcopy_xact_drop_at_commit(const TcopyTableOptions *options, Oid userid,
						  bool has_mapping, const char *relname)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(TopTransactionContext);
	TcopyPendingDrop *drop = palloc0(sizeof(TcopyPendingDrop));

	drop->options.serverid = options->serverid;
	drop->options.address = pstrdup(options->address);
	drop->options.token = options->token != NULL ? pstrdup(options->token) : NULL;
	drop->options.tls.sslmode = options->tls.sslmode;
	drop->options.tls.sslrootcert = options->tls.sslrootcert != NULL ?
		pstrdup(options->tls.sslrootcert) : NULL;
	drop->options.tls.sslcert = options->tls.sslcert != NULL ?
		pstrdup(options->tls.sslcert) : NULL;
	drop->options.tls.sslkey = options->tls.sslkey != NULL ?
		pstrdup(options->tls.sslkey) : NULL;
	drop->options.table_name = pstrdup(options->table_name);
	drop->userid = userid;
	drop->has_mapping = has_mapping;
	drop->relname = pstrdup(relname);
	drop->nest_level = GetCurrentTransactionNestLevel();
	tcopy_pending_drops = lappend(tcopy_pending_drops, drop);
	MemoryContextSwitchTo(oldcontext);
}

/*
 * Whether the transaction dropped a foreign table stored in tserver table
 * options->table_name at options->address (through whichever server): its
 * session must not write there any more, or the DROP, applied after the
 * rows, would take the new rows with it; nor read it, as its rows go at
 * the commit.
 */
bool
tcopy_xact_drops_table(const TcopyTableOptions *options)
{
	ListCell   *lc;

	foreach(lc, tcopy_pending_drops)
	{
		TcopyPendingDrop *drop = (TcopyPendingDrop *) lfirst(lc);

		if (strcmp(drop->options.table_name, options->table_name) == 0 &&
			tc_address_same_server(drop->options.address, options->address))
			return true;
	}
	return false;
}

/* errcontext of staging a DROP */
static void
tcopy_drop_error_callback(void *arg)
{
	errcontext("dropping the data of foreign table \"%s\"", (const char *) arg);
}

/*
 * Stage the pending DROPs in the write sessions.  Not when the extension
 * itself was dropped in this transaction (DROP EXTENSION ... CASCADE, or
 * of its schema): its tables' data then stays on the tservers, as it did
 * before the extension dropped data.  A tserver that cannot be reached
 * fails the commit: the transaction rolls back, and the DROP can be tried
 * again.  stage is xact.c's tcopy_xact_table_op, passed in so that this
 * file does not call back into the one that calls it.
 */
void
tcopy_stage_pending_drops(TcopyTableOpFn stage)
{
	ErrorContextCallback errcallback;
	ListCell   *lc;

	if (tcopy_pending_drops == NIL)
		return;
	if (!OidIsValid(tcopy_extension_oid()))
	{
		tcopy_pending_drops = NIL;
		return;
	}

	errcallback.callback = tcopy_drop_error_callback;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;
	foreach(lc, tcopy_pending_drops)
	{
		TcopyPendingDrop *drop = (TcopyPendingDrop *) lfirst(lc);
		uint32		table_id;

		errcallback.arg = drop->relname;
		CHECK_FOR_INTERRUPTS();
		if (!drop->has_mapping)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("user mapping not found for user \"%s\", server \"%s\"",
							MappingUserName(drop->userid),
							GetForeignServer(drop->options.serverid)->servername),
					 errdetail("Dropping a tcopy table drops its data on the tserver, "
							   "which is reached with a user mapping."),
					 errhint("Create a user mapping for the server, or set its address to 'null:' "
							 "to drop its tables without touching the tserver.")));
		if (tcopy_lookup_table_id(&drop->options, NULL, "to drop it", &table_id))
			stage(&drop->options, drop->userid, false,
				  TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, table_id);
	}
	error_context_stack = errcallback.previous;
	tcopy_pending_drops = NIL;
}

/* Whether the transaction has DROPs not yet staged. */
bool
tcopy_xact_drops_pending(void)
{
	return tcopy_pending_drops != NIL;
}

/* The end of the transaction: forget its DROPs. */
void
tcopy_xact_drops_reset(void)
{
	tcopy_pending_drops = NIL;
}

/* The subtransaction at nest level level ends, aborted or committed. */
void
tcopy_xact_drops_at_subxact_end(int level, bool aborted)
{
	ListCell   *lc;

	/* a DROP rolled back keeps its data; a committed one passes to the parent */
	foreach(lc, tcopy_pending_drops)
	{
		TcopyPendingDrop *drop = (TcopyPendingDrop *) lfirst(lc);

		if (drop->nest_level < level)
			continue;
		if (aborted)
			tcopy_pending_drops = foreach_delete_current(tcopy_pending_drops, lc);
		else
			drop->nest_level = level - 1;
	}
}
