/*
 * monitor.c
 *		What the tservers store and do, seen from SQL (README "Seeing a
 *		tserver from SQL"):
 *
 *		tcopy.table_size(regclass): the rows and stored bytes of a tcopy
 *		table (or of a partitioned table's tcopy partitions, summed), as its
 *		tservers estimate them: pg_total_relation_size knows nothing of
 *		them.  Whoever may SELECT from the table may ask.
 *
 *		tcopy.server_stats(server): a tserver's counters (uptime,
 *		connections, sessions by state, rows and bytes received, staged and
 *		spilled bytes, peak memory, RocksDB's compaction and flush bytes),
 *		through the caller's user mapping.  Whoever has USAGE on the server
 *		may ask, as for the others below.
 *
 *		tcopy.table_files(regclass): a tcopy table's SST files on its
 *		tservers, by level of RocksDB's tree (whoever may SELECT from it).
 *
 *		tcopy.server_sessions(server): the tserver's open write sessions
 *		(begun, not yet prepared), with the backend, database and
 *		transaction of those this cluster began.  As pg_stat_progress_copy
 *		does, a session of a backend whose role the caller has no
 *		privileges of (without pg_read_all_stats) shows its backend only,
 *		not what it holds.
 *
 *		tcopy.server_version(server): the tserver's version.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/dbcommands.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "tcopy/catalog.h"
#include "tcopy/commands.h"
#include "tcopy/connection.h"

PG_FUNCTION_INFO_V1(tcopy_table_size);
PG_FUNCTION_INFO_V1(tcopy_table_files);
PG_FUNCTION_INFO_V1(tcopy_server_stats);
PG_FUNCTION_INFO_V1(tcopy_server_sessions);
PG_FUNCTION_INFO_V1(tcopy_server_version);
PG_FUNCTION_INFO_V1(tcopy_round_trips);

/*
 * The tservers' Stats for tcopy table relid (locked by the caller), with
 * its estimate and files by level; NULL when it keeps nothing (the null
 * address, or never written to).  Freed with tcopy__stats__free_unpacked.
 */
static Tcopy__Stats *
table_stats(Oid relid)
{
	Relation	rel = relation_open(relid, NoLock);
	TcopyTableOptions options;
	TcClient   *client;
	uint32_t	table_id;
	Tcopy__Stats *stats = NULL;

	tcopy_get_table_options(rel, GetUserId(), &options);
	relation_close(rel, NoLock);
	client = tcopy_connect(options.address, options.token, &options.tls);
	if (client == NULL)
		return NULL;			/* the null address keeps nothing */
	if (tc_client_open_table(client, options.table_name, NULL, false, &table_id,
							 NULL, NULL) < 0)
	{
		/* never written to: nothing stored */
		if (tc_client_error_code(client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			tcopy_report_client_error(client, options.address,
									  psprintf("could not open table \"%s\"",
											   options.table_name));
	}
	else if (tc_client_stats_request(client, table_id, false, &stats) < 0)
		tcopy_report_client_error(client, options.address,
								  psprintf("could not estimate the size of table \"%s\"",
										   options.table_name));
	tcopy_disconnect(client);
	if (stats != NULL && stats->table == NULL)
	{
		/* a tserver that predates estimates */
		tcopy__stats__free_unpacked(stats, NULL);
		stats = NULL;
	}
	return stats;
}

/*
 * The tcopy tables that relid names (itself, or a partitioned table's tcopy
 * partitions at every level), locked, once the caller is checked to have
 * SELECT on relid; fname (the SQL function) says what it takes otherwise.
 */
static List *
tcopy_tables_of(Oid relid, const char *fname)
{
	char		relkind = get_rel_relkind(relid);
	AclResult	aclresult;
	List	   *tables = NIL;

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(relkind), get_rel_name(relid));
	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		ListCell   *lc;

		/* every partition, at every level: those that are tcopy tables */
		foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
		{
			Oid			child = lfirst_oid(lc);

			if (get_rel_relkind(child) == RELKIND_FOREIGN_TABLE &&
				tcopy_relation_is_tcopy_table(child))
				tables = lappend_oid(tables, child);
		}
	}
	else if (relkind == RELKIND_FOREIGN_TABLE && tcopy_relation_is_tcopy_table(relid))
	{
		LockRelationOid(relid, AccessShareLock);
		tables = list_make1_oid(relid);
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a tcopy table", get_rel_name(relid)),
				 errhint("%s takes a foreign table of a tcopy server, or a partitioned "
						 "table with such partitions; pg_total_relation_size() measures "
						 "the others.", fname)));
	return tables;
}

Datum
tcopy_table_size(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	uint64		rows = 0;
	uint64		bytes = 0;
	ListCell   *lc;

	foreach(lc, tcopy_tables_of(PG_GETARG_OID(0), "tcopy.table_size()"))
	{
		Tcopy__Stats *stats = table_stats(lfirst_oid(lc));

		if (stats == NULL)
			continue;
		rows += stats->table->rows;
		bytes += stats->table->bytes;
		tcopy__stats__free_unpacked(stats, NULL);
	}
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum((int64) rows);
	values[1] = Int64GetDatum((int64) bytes);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

Datum
tcopy_table_files(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *tables = tcopy_tables_of(PG_GETARG_OID(0), "tcopy.table_files()");
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, tables)
	{
		Tcopy__Stats *stats = table_stats(lfirst_oid(lc));

		if (stats == NULL)
			continue;
		for (size_t i = 0; i < stats->table->n_levels; i++)
		{
			Tcopy__LevelFiles *level = stats->table->levels[i];
			Datum		values[4];
			bool		nulls[4] = {false, false, false, false};

			values[0] = ObjectIdGetDatum(lfirst_oid(lc));
			values[1] = Int32GetDatum((int32) level->level);
			values[2] = Int64GetDatum((int64) level->files);
			values[3] = Int64GetDatum((int64) level->bytes);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		tcopy__stats__free_unpacked(stats, NULL);
	}
	PG_RETURN_VOID();
}

/*
 * A client of tcopy server name, through the caller's user mapping, once
 * the caller is checked to have USAGE on it; NULL for the null address.
 * Its address into *address.
 */
static TcClient *
server_client(const char *name, char **address)
{
	ForeignServer *server = GetForeignServerByName(name, false);
	AclResult	aclresult;
	TcopyTableOptions options;
	TcClient   *client;

	if (!tcopy_server_is_tcopy(server->serverid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a tcopy server", name)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, name);
	client = tcopy_server_client(server->serverid, false, &options, NULL, 0);
	*address = options.address;
	return client;
}

/* The Stats of server name (see server_client), or NULL for the null address. */
static Tcopy__Stats *
server_stats(const char *name, bool sessions)
{
	char	   *address;
	TcClient   *client = server_client(name, &address);
	Tcopy__Stats *stats = NULL;

	if (client == NULL)
		return NULL;			/* the null address: no tserver */
	if (tc_client_stats_request(client, 0, sessions, &stats) < 0)
		tcopy_report_client_error(client, address, "could not read its counters");
	tcopy_disconnect(client);
	return stats;
}

/* One row of tcopy.server_stats(). */
static void
stat_row(ReturnSetInfo *rsinfo, const char *name, uint64 value)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum((int64) value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
tcopy_server_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Tcopy__Stats *stats = server_stats(NameStr(*PG_GETARG_NAME(0)), false);

	InitMaterializedSRF(fcinfo, 0);
	if (stats == NULL)
		PG_RETURN_VOID();
	stat_row(rsinfo, "uptime_ms", stats->uptime_ms);
	stat_row(rsinfo, "connections_open", stats->connections_open);
	stat_row(rsinfo, "connections_total", stats->connections_total);
	stat_row(rsinfo, "connections_unauthenticated", stats->connections_unauthenticated);
	stat_row(rsinfo, "sessions_open", stats->sessions_open);
	stat_row(rsinfo, "sessions_prepared", stats->sessions_prepared);
	stat_row(rsinfo, "sessions_committed", stats->sessions_committed);
	stat_row(rsinfo, "sessions_aborted", stats->sessions_aborted);
	stat_row(rsinfo, "rows_committed", stats->rows_committed);
	stat_row(rsinfo, "batches_received", stats->batches_received);
	stat_row(rsinfo, "bytes_received", stats->bytes_received);
	stat_row(rsinfo, "tables", stats->tables);
	stat_row(rsinfo, "staged_bytes", stats->staged_bytes);
	stat_row(rsinfo, "spilled_bytes", stats->spilled_bytes);
	stat_row(rsinfo, "peak_rss_kb", stats->peak_rss_kb);
	stat_row(rsinfo, "compaction_read_bytes", stats->compaction_read_bytes);
	stat_row(rsinfo, "compaction_write_bytes", stats->compaction_write_bytes);
	stat_row(rsinfo, "flush_write_bytes", stats->flush_write_bytes);
	stat_row(rsinfo, "wal_syncs", stats->wal_syncs);
	stat_row(rsinfo, "sst_bytes", stats->sst_bytes);
	stat_row(rsinfo, "disk_free_bytes", stats->disk_free_bytes);
	stat_row(rsinfo, "memory_budget_bytes", stats->memory_budget_bytes);
	stat_row(rsinfo, "l0_files", stats->l0_files);
	stat_row(rsinfo, "stall_micros", stats->stall_micros);
	stat_row(rsinfo, "lazy_writes", stats->lazy_writes);
	stat_row(rsinfo, "wal_background_syncs", stats->wal_background_syncs);
	tcopy__stats__free_unpacked(stats, NULL);
	PG_RETURN_VOID();
}

/*
 * This cluster's backend of pid, if it runs now: its status, and whether
 * the caller may see what it does (as pg_stat_progress_copy decides).
 */
static LocalPgBackendStatus *
backend_of(int pid, bool *visible)
{
	int			n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);

		if (local != NULL && local->backendStatus.st_procpid == pid)
		{
			*visible = has_privs_of_role(GetUserId(), local->backendStatus.st_userid) ||
				has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
			return local;
		}
	}
	*visible = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	return NULL;
}

Datum
tcopy_server_sessions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Tcopy__Stats *stats = server_stats(NameStr(*PG_GETARG_NAME(0)), true);
	TimestampTz now = GetCurrentTimestamp();
	uint64		system = GetSystemIdentifier();

	InitMaterializedSRF(fcinfo, 0);
	if (stats == NULL)
		PG_RETURN_VOID();
	for (size_t i = 0; i < stats->n_sessions; i++)
	{
		Tcopy__SessionInfo *info = stats->sessions[i];
		Datum		values[11];
		bool		nulls[11];
		bool		ours = info->client_system == system && info->client_pid != 0;
		bool		visible = false;
		LocalPgBackendStatus *backend = ours ? backend_of((int) info->client_pid, &visible) : NULL;
		char	   *datname = ours ? get_database_name(info->client_database) : NULL;

		if (!ours)
			visible = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
		memset(nulls, !visible, sizeof(nulls));
		values[0] = Int64GetDatum((int64) info->id);
		values[1] = CStringGetTextDatum(info->state);
		values[2] = TimestampTzGetDatum(now - (TimestampTz) info->age_ms * 1000);
		values[3] = Int64GetDatum((int64) info->rows);
		values[4] = Int64GetDatum((int64) info->staged_bytes);
		values[5] = Int64GetDatum((int64) info->spilled_bytes);
		values[6] = Int32GetDatum((int32) info->tables);
		values[7] = Int32GetDatum((int32) info->client_pid);
		values[8] = datname != NULL ? CStringGetTextDatum(datname) : (Datum) 0;
		values[9] = backend != NULL ?
			ObjectIdGetDatum(backend->backendStatus.st_userid) : (Datum) 0;
		values[10] = backend != NULL ?
			TransactionIdGetDatum(backend->backend_xid) : (Datum) 0;
		/* who: as pg_stat_activity, to all; what: to whom may see it */
		nulls[0] = nulls[1] = nulls[2] = false;
		nulls[7] = !ours;
		nulls[8] = datname == NULL;
		nulls[9] = backend == NULL;
		nulls[10] = !visible || backend == NULL ||
			!TransactionIdIsValid(backend->backend_xid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	tcopy__stats__free_unpacked(stats, NULL);
	PG_RETURN_VOID();
}

Datum
tcopy_server_version(PG_FUNCTION_ARGS)
{
	Tcopy__Stats *stats = server_stats(NameStr(*PG_GETARG_NAME(0)), false);
	text	   *version;

	if (stats == NULL)
		PG_RETURN_NULL();		/* the null address: no tserver */
	version = cstring_to_text(stats->version);
	tcopy__stats__free_unpacked(stats, NULL);
	PG_RETURN_TEXT_P(version);
}

/*
 * The round trips this backend made to tservers since it started (issue
 * 46): what a statement costs beyond its CPU, the difference of two calls.
 */
Datum
tcopy_round_trips(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((int64) tc_client_round_trips());
}
