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
 *		may ask.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"

PG_FUNCTION_INFO_V1(tcopy_table_size);
PG_FUNCTION_INFO_V1(tcopy_server_stats);

/* Add the estimate of tcopy table relid (locked by the caller) to rows and bytes. */
static void
add_table_estimate(Oid relid, uint64 *rows, uint64 *bytes)
{
	Relation	rel = relation_open(relid, NoLock);
	TcopyTableOptions options;
	TcClient   *client;
	uint32_t	table_id;

	tcopy_get_table_options(rel, GetUserId(), &options);
	relation_close(rel, NoLock);
	client = tcopy_connect(options.address, options.token, &options.tls);
	if (client == NULL)
		return;					/* the null address keeps nothing */
	if (tc_client_open_table(client, options.table_name, NULL, false, &table_id,
							 NULL, NULL) < 0)
	{
		/* never written to: nothing stored */
		if (tc_client_error_code(client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			tcopy_report_client_error(client, options.address,
									  psprintf("could not open table \"%s\"",
											   options.table_name));
	}
	else
	{
		uint64_t	r = 0,
					b = 0;
		int			rc = tc_client_table_estimate(client, table_id, &r, &b);

		if (rc < 0)
			tcopy_report_client_error(client, options.address,
									  psprintf("could not estimate the size of table \"%s\"",
											   options.table_name));
		*rows += r;
		*bytes += b;
	}
	tcopy_disconnect(client);
}

Datum
tcopy_table_size(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char		relkind = get_rel_relkind(relid);
	AclResult	aclresult;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	uint64		rows = 0;
	uint64		bytes = 0;

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
				add_table_estimate(child, &rows, &bytes);
		}
	}
	else if (relkind == RELKIND_FOREIGN_TABLE && tcopy_relation_is_tcopy_table(relid))
	{
		LockRelationOid(relid, AccessShareLock);
		add_table_estimate(relid, &rows, &bytes);
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a tcopy table", get_rel_name(relid)),
				 errhint("tcopy.table_size() takes a foreign table of a tcopy server, or a "
						 "partitioned table with such partitions; pg_total_relation_size() "
						 "measures the others.")));

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum((int64) rows);
	values[1] = Int64GetDatum((int64) bytes);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
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
	char	   *name = NameStr(*PG_GETARG_NAME(0));
	ForeignServer *server = GetForeignServerByName(name, false);
	AclResult	aclresult;
	List	   *mapping;
	TcopyTableOptions options;
	TcClient   *client;
	Tcopy__Stats *stats = NULL;

	if (!tcopy_server_is_tcopy(server->serverid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a tcopy server", name)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, name);
	if (!tcopy_find_user_mapping(GetUserId(), server->serverid, &mapping))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("user mapping not found for \"%s\"", GetUserNameFromId(GetUserId(), false))));
	tcopy_get_server_options(server->serverid, mapping, &options);

	InitMaterializedSRF(fcinfo, 0);
	client = tcopy_connect(options.address, options.token, &options.tls);
	if (client == NULL)
		PG_RETURN_VOID();		/* the null address: no tserver */
	if (tc_client_stats(client, &stats) < 0)
		tcopy_report_client_error(client, options.address, "could not read its counters");
	stat_row(rsinfo, "uptime_ms", stats->uptime_ms);
	stat_row(rsinfo, "connections_open", stats->connections_open);
	stat_row(rsinfo, "connections_total", stats->connections_total);
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
	tcopy__stats__free_unpacked(stats, NULL);
	tcopy_disconnect(client);
	PG_RETURN_VOID();
}
