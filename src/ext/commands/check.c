/*
 * check.c
 *		A consistency check of the database's tcopy tables against their
 *		tservers (README "Checking tables against their tservers"), as
 *		amcheck is for a heap:
 *
 *		tcopy.check_tables(): each foreign table whose tserver table is
 *		absent, and each tserver table that no foreign table of this
 *		database names (an orphan: a DROP while its tserver was down, a
 *		failed restore), on every tserver of the database's tcopy servers
 *		(within a server's namespace, when it has one).
 *
 *		tcopy.drop_orphan(server, table_name): drop such an orphan, checked
 *		again to be one.
 *
 * Superusers only: a tserver's list of tables needs its full-access
 * credential, and an orphan's rows are nobody's until it is dropped.  A
 * tserver shared by several databases holds the others' tables too: they
 * look like orphans here unless each database's servers have their own
 * namespace.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_foreign_table.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

PG_FUNCTION_INFO_V1(tcopy_check_tables);
PG_FUNCTION_INFO_V1(tcopy_drop_orphan);

/* A tcopy foreign table of the database: its server and tserver name. */
typedef struct NamedTable
{
	Oid			relid;
	Oid			serverid;
	char	   *table_name;
} NamedTable;

static void
check_superuser(const char *what)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s", what),
				 errhint("Only superusers may check or drop tserver tables.")));
}

/* Every tcopy foreign table of the database, with its tserver table's name. */
static List *
named_tables(void)
{
	Relation	rel = table_open(ForeignTableRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple;
	List	   *tables = NIL;

	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Form_pg_foreign_table ft = (Form_pg_foreign_table) GETSTRUCT(tuple);
		NamedTable *t;
		Relation	frel;

		if (!tcopy_server_is_tcopy(ft->ftserver))
			continue;
		t = palloc0(sizeof(NamedTable));
		t->relid = ft->ftrelid;
		t->serverid = ft->ftserver;
		frel = relation_open(ft->ftrelid, AccessShareLock);
		t->table_name = tcopy_table_name(frel, true);
		if (t->table_name == NULL)
			t->table_name = tcopy_legacy_table_name(frel);
		relation_close(frel, AccessShareLock);
		tables = lappend(tables, t);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return tables;
}

static bool
named_here(List *tables, const char *name)
{
	ListCell   *lc;

	foreach(lc, tables)
		if (strcmp(((NamedTable *) lfirst(lc))->table_name, name) == 0)
			return true;
	return false;
}

/* A client for serverid with the caller's mapping (else any), and its options. */
static TcClient *
server_client(Oid serverid, TcopyTableOptions *options)
{
	List	   *mapping = NIL;

	if (!tcopy_find_user_mapping(GetUserId(), serverid, &mapping))
		(void) tcopy_any_user_mapping(serverid, &mapping);
	tcopy_get_server_options(serverid, mapping, options);
	if (options->address == NULL || tcopy_address_is_null(options->address))
		return NULL;
	return tcopy_connect(options->address, options->token, &options->tls);
}

/* The tserver's tables within the server's namespace, or an ERROR. */
static Tcopy__TableList *
server_tables(Oid serverid, TcClient *client, const TcopyTableOptions *options)
{
	char	   *nsp = tcopy_server_namespace(serverid);
	Tcopy__TableList *list;

	if (tc_client_list_tables(client, nsp, &list) < 0)
		tcopy_report_client_error(client, options->address,
								  psprintf("could not list the tables of server \"%s\"",
										   GetForeignServer(serverid)->servername));
	return list;
}

static void
put_row(ReturnSetInfo *rsinfo, const char *server, Oid relid, const char *table_name,
		const char *problem)
{
	Datum		values[4];
	bool		nulls[4] = {false, !OidIsValid(relid), false, false};

	values[0] = CStringGetTextDatum(server);
	values[1] = ObjectIdGetDatum(relid);
	values[2] = CStringGetTextDatum(table_name);
	values[3] = CStringGetTextDatum(problem);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
tcopy_check_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *tables;
	List	   *seen = NIL;		/* addresses listed already */
	ListCell   *lc;

	check_superuser("check tserver tables");
	InitMaterializedSRF(fcinfo, 0);
	tables = named_tables();
	foreach(lc, tcopy_list_servers())
	{
		Oid			serverid = lfirst_oid(lc);
		const char *servername = GetForeignServer(serverid)->servername;
		TcopyTableOptions options;
		TcClient   *client = server_client(serverid, &options);
		Tcopy__TableList *list;
		ListCell   *tc;
		bool		listed_before = false;

		if (client == NULL)
			continue;			/* the null address keeps nothing */
		list = server_tables(serverid, client, &options);
		foreach(tc, tables)
		{
			NamedTable *t = lfirst(tc);
			bool		found = false;

			if (t->serverid != serverid)
				continue;
			for (size_t i = 0; i < list->n_tables && !found; i++)
				found = strcmp(list->tables[i]->name, t->table_name) == 0;
			if (!found)
				put_row(rsinfo, servername, t->relid, t->table_name,
						"absent: never written to, or lost with its tserver's data");
		}
		/* orphans once per tserver, however many servers name it */
		foreach(tc, seen)
			listed_before |= strcmp(lfirst(tc), options.address) == 0;
		if (!listed_before)
		{
			seen = lappend(seen, pstrdup(options.address));
			for (size_t i = 0; i < list->n_tables; i++)
				if (!named_here(tables, list->tables[i]->name))
					put_row(rsinfo, servername, InvalidOid, list->tables[i]->name,
							"orphan: no foreign table of this database names it");
		}
		tcopy__table_list__free_unpacked(list, NULL);
		tcopy_disconnect(client);
	}
	PG_RETURN_VOID();
}

Datum
tcopy_drop_orphan(PG_FUNCTION_ARGS)
{
	char	   *servername = NameStr(*PG_GETARG_NAME(0));
	char	   *table_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ForeignServer *server;
	TcopyTableOptions options;
	TcClient   *client;
	uint32_t	table_id;

	check_superuser("drop a tserver table");
	server = GetForeignServerByName(servername, false);
	if (!tcopy_server_is_tcopy(server->serverid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a tcopy server", servername)));
	if (named_here(named_tables(), table_name))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("tserver table \"%s\" is not an orphan: a foreign table of this "
						"database names it", table_name),
				 errhint("DROP FOREIGN TABLE drops it with its foreign table.")));
	client = server_client(server->serverid, &options);
	if (client == NULL)
		PG_RETURN_BOOL(false);
	if (tc_client_open_table(client, table_name, NULL, false, &table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			tcopy_report_client_error(client, options.address,
									  psprintf("could not open table \"%s\"", table_name));
		tcopy_disconnect(client);
		PG_RETURN_BOOL(false);	/* gone already */
	}
	if (tc_client_table_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, table_id) < 0)
		tcopy_report_client_error(client, options.address,
								  psprintf("could not drop table \"%s\"", table_name));
	tcopy_disconnect(client);
	ereport(LOG,
			(errmsg("tcopy: dropped orphan tserver table \"%s\" of server \"%s\"",
					table_name, servername)));
	PG_RETURN_BOOL(true);
}
