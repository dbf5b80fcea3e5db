/*
 * tables.c
 *		Which foreign servers and tables are tcopy's: a server of a wrapper
 *		whose handler is tcopy's, and a foreign table of such a server.
 *
 * The handler is the FDW layer's (fdw.c), above this one: _PG_init hands
 * its address down (tcopy_set_fdw_handler), so that this layer calls no
 * layer above it.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "foreign/foreign.h"
#include "utils/lsyscache.h"

#include "tcopy/catalog.h"

/* tcopy_fdw_handler, set by _PG_init before anything here runs */
static PGFunction tcopy_handler = NULL;

void
tcopy_set_fdw_handler(PGFunction handler)
{
	tcopy_handler = handler;
}

/*
 * Whether serverid is a server of a wrapper whose handler is this one:
 * what makes a server a tcopy server.
 */
bool
tcopy_server_is_tcopy(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	FmgrInfo	handler;

	Assert(tcopy_handler != NULL);
	if (!OidIsValid(fdw->fdwhandler))
		return false;
	fmgr_info(fdw->fdwhandler, &handler);
	return handler.fn_addr == tcopy_handler;
}

/* Whether relid is a foreign table of a tcopy server: a tcopy table. */
bool
tcopy_relation_is_tcopy_table(Oid relid)
{
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	return tcopy_server_is_tcopy(GetForeignTable(relid)->serverid);
}
