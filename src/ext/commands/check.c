/*
 * check.c
 *		A consistency check of the database's tcopy tables against their
 *		tservers (README "Checking tables against their tservers"), as
 *		amcheck is for a heap:
 *
 *		tcopy.check_tables(): each foreign table whose tserver table is
 *		absent, each tserver table this database generated and no longer
 *		names (an orphan: a DROP while its tserver was down, a table_name
 *		set to another table), each tserver table of no known database that
 *		no foreign table of this one names (owner unknown), and each server
 *		whose tserver cannot be reached (unreachable), on every tserver of
 *		the database's tcopy servers (within a server's namespace, when it
 *		has one).
 *
 *		tcopy.drop_orphan(server, table_name, force): drop such an orphan,
 *		checked again to be one.
 *
 * Superusers only: a tserver's list of tables needs its full-access
 * credential, and an orphan's rows are nobody's until it is dropped.
 *
 * A tserver shared by several databases (of one cluster or several) holds
 * the others' tables too, and this database cannot see which of them the
 * others name.  So a table is this database's own only when its name says
 * so: a generated table_name carries the database's owner tag (the
 * cluster's system identifier and the database's oid, option.c).  Only
 * those are ever called orphans, and drop_orphan drops nothing else: it
 * finishes what this database's own DROP FOREIGN TABLE would have done.
 * A table another database generated is never listed; one of no known
 * owner (made before tcopy 1.11, or named by hand) is listed as such and
 * dropped only with force, once the DBA has checked that no database
 * names it.
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
#include "tcopy/commands.h"
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

/*
 * A client of serverid's tserver, connected as the caller's user mapping
 * says, and the options it was reached with (*options); with any mapping
 * of the server instead when any_mapping and the caller has none (the
 * superusers' checks), else an ERROR.  NULL for the null address, which
 * keeps nothing.  An unreachable tserver is an ERROR, unless err is given:
 * then NULL with the reason there.
 */
TcClient *
tcopy_server_client(Oid serverid, bool any_mapping, TcopyTableOptions *options,
					char *err, size_t errlen)
{
	List	   *mapping = NIL;

	if (!tcopy_find_user_mapping(GetUserId(), serverid, &mapping))
	{
		if (!any_mapping)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("user mapping not found for \"%s\"",
							GetUserNameFromId(GetUserId(), false))));
		(void) tcopy_any_user_mapping(serverid, &mapping);
	}
	tcopy_get_server_options(serverid, mapping, options);
	if (options->address == NULL || tcopy_address_is_null(options->address))
		return NULL;
	if (err == NULL)
		return tcopy_connect(options->address, options->token, &options->tls);
	return tcopy_try_connect(options->address, options->token, &options->tls, err, errlen);
}

/* One row of check_tables: relid InvalidOid and table_name NULL show as NULL. */
static void
put_row(ReturnSetInfo *rsinfo, const char *server, Oid relid, const char *table_name,
		const char *problem)
{
	Datum		values[4];
	bool		nulls[4] = {false, !OidIsValid(relid), table_name == NULL, false};

	values[0] = CStringGetTextDatum(server);
	values[1] = ObjectIdGetDatum(relid);
	values[2] = table_name != NULL ? CStringGetTextDatum(table_name) : (Datum) 0;
	values[3] = CStringGetTextDatum(problem);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The foreign tables of serverid whose tserver table list does not hold. */
static void
put_absent(ReturnSetInfo *rsinfo, const char *servername, Oid serverid, List *tables,
		   const Tcopy__TableList *list)
{
	ListCell   *tc;

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
}

/*
 * The tables of list (within namespace nspname) that no foreign table of
 * this database names: this database's own as orphans, those of no known
 * owner as such; never another database's.
 */
static void
put_orphans(ReturnSetInfo *rsinfo, const char *servername, const char *nspname,
			List *tables, const Tcopy__TableList *list)
{
	for (size_t i = 0; i < list->n_tables; i++)
	{
		const char *name = list->tables[i]->name;

		if (named_here(tables, name))
			continue;
		switch (tcopy_table_owner(name, nspname))
		{
			case TCOPY_OWNER_SELF:
				put_row(rsinfo, servername, InvalidOid, name,
						"orphan: made by this database, no foreign table of it names it now");
				break;
			case TCOPY_OWNER_UNKNOWN:
				put_row(rsinfo, servername, InvalidOid, name,
						"owner unknown: no foreign table of this database names it, and its name "
						"(from before tcopy 1.11, or given by hand) does not say which database "
						"made it: another database may use it");
				break;
			case TCOPY_OWNER_TAGGED:
				break;			/* another database's: not ours to judge */
		}
	}
}

Datum
tcopy_check_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *tables;
	List	   *seen = NIL;		/* tservers and namespaces listed already */
	ListCell   *lc;

	check_superuser("check tserver tables");
	InitMaterializedSRF(fcinfo, 0);
	tables = named_tables();
	foreach(lc, tcopy_list_servers())
	{
		Oid			serverid = lfirst_oid(lc);
		const char *servername = GetForeignServer(serverid)->servername;
		char	   *nspname = tcopy_server_namespace(serverid);
		TcopyTableOptions options;
		char		err[512];
		TcClient   *client;
		Tcopy__TableList *list;
		char	   *where;
		ListCell   *sc;
		bool		listed_before = false;

		err[0] = '\0';
		client = tcopy_server_client(serverid, true, &options, err, sizeof(err));
		if (client == NULL)
		{
			/* a server down is a finding, and the others are still checked */
			if (err[0] != '\0')
				put_row(rsinfo, servername, InvalidOid, NULL,
						psprintf("unreachable: could not connect to tserver at \"%s\": %s",
								 options.address, err));
			continue;
		}
		if (tc_client_list_tables(client, nspname != NULL ? nspname : "", &list) < 0)
		{
			put_row(rsinfo, servername, InvalidOid, NULL,
					psprintf("unreachable: could not list the tables of tserver at \"%s\": %s",
							 options.address, tc_client_error(client)));
			tcopy_disconnect(client);
			continue;
		}
		put_absent(rsinfo, servername, serverid, tables, list);
		/* orphans once per tserver and namespace, however many servers name it */
		where = psprintf("%s\n%s", options.address, nspname != NULL ? nspname : "");
		foreach(sc, seen)
			listed_before |= strcmp(lfirst(sc), where) == 0;
		if (!listed_before)
		{
			seen = lappend(seen, where);
			put_orphans(rsinfo, servername, nspname, tables, list);
		}
		tcopy__table_list__free_unpacked(list, NULL);
		tcopy_disconnect(client);
	}
	PG_RETURN_VOID();
}

/*
 * Refuse to drop table_name of a server of namespace nspname unless this
 * database made it, or force says the DBA checked that no database names
 * it.
 */
static void
check_owner(const char *table_name, const char *nspname, bool force)
{
	TcopyTableOwner owner = tcopy_table_owner(table_name, nspname);

	if (owner == TCOPY_OWNER_SELF || force)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("tserver table \"%s\" may be in use by another database", table_name),
			 owner == TCOPY_OWNER_TAGGED ?
			 errdetail("Its name carries the owner tag of another database, or of another "
					   "namespace; this database's tables of this server begin with \"%s%s\".",
					   nspname != NULL ? nspname : "", tcopy_owner_tag()) :
			 errdetail("Its name (from before tcopy 1.11, or given by hand) does not say which "
					   "database made it, and several databases may share a tserver."),
			 errhint("Make sure that no foreign table of any database using this tserver names it, "
					 "then call tcopy.drop_orphan(server, table_name, force => true).")));
}

Datum
tcopy_drop_orphan(PG_FUNCTION_ARGS)
{
	char	   *servername = NameStr(*PG_GETARG_NAME(0));
	char	   *table_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	bool		force = PG_NARGS() > 2 && PG_GETARG_BOOL(2);	/* 1.10's has two */
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
	check_owner(table_name, tcopy_server_namespace(server->serverid), force);
	client = tcopy_server_client(server->serverid, true, &options, NULL, 0);
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
