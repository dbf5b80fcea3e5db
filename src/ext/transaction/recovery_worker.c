/*
 * recovery_worker.c
 *		The background worker that runs recovery (recovery.c) in every
 *		database: at startup, then every tcopy.recovery_interval.
 *
 * Registered by _PG_init when tcopy is in shared_preload_libraries.  A
 * launcher, connected to no database, reads pg_database and starts one
 * worker per connectable database, one after the other; each recovers if
 * the extension (version 1.1 or later) is installed in its database, and
 * exits.  Templates are left alone: a connection to template1 would make
 * CREATE DATABASE fail.  Only a primary runs them (a standby's records lag
 * behind the primary's decisions).
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "tcopy/transaction.h"

/* settings, registered in tcopy.c */
int			tcopy_recovery_interval = 10000;	/* tcopy.recovery_interval */

/* seconds before the postmaster restarts a launcher that died */
#define TCOPY_LAUNCHER_RESTART_S	10

PGDLLEXPORT void tcopy_recovery_launcher_main(Datum arg);
PGDLLEXPORT void tcopy_recovery_worker_main(Datum arg);

/* Fill in what the launcher and the workers have in common. */
static void
tcopy_worker_init(BackgroundWorker *worker, const char *function)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "tcopy");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function);
}

/* Register the launcher, when loaded through shared_preload_libraries. */
void
TcopyRecoveryWorkerInit(void)
{
	BackgroundWorker worker;

	if (!process_shared_preload_libraries_in_progress)
		return;
	tcopy_worker_init(&worker, "tcopy_recovery_launcher_main");
	worker.bgw_restart_time = TCOPY_LAUNCHER_RESTART_S;
	snprintf(worker.bgw_name, BGW_MAXLEN, "tcopy recovery launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "tcopy recovery launcher");
	RegisterBackgroundWorker(&worker);
}

/* The Oids of the databases a worker can connect to, in cxt. */
static List *
tcopy_recovery_databases(MemoryContext cxt)
{
	List	   *databases = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext oldcontext;

		if (!db->datallowconn || db->datistemplate)
			continue;
#ifdef DATCONNLIMIT_INVALID_DB
		if (db->datconnlimit == DATCONNLIMIT_INVALID_DB)
			continue;			/* a DROP DATABASE was interrupted */
#endif
		oldcontext = MemoryContextSwitchTo(cxt);
		databases = lappend_oid(databases, db->oid);
		MemoryContextSwitchTo(oldcontext);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return databases;
}

/*
 * Run a worker in database dboid and wait for it to exit; false when none
 * could be started (no free background worker slot).
 */
static bool
tcopy_recovery_run_worker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	BgwHandleStatus status;
	pid_t		pid;

	tcopy_worker_init(&worker, "tcopy_recovery_worker_main");
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_name, BGW_MAXLEN, "tcopy recovery worker for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "tcopy recovery worker");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a tcopy recovery worker"),
				 errhint("Raise max_worker_processes.")));
		return false;
	}
	status = WaitForBackgroundWorkerStartup(handle, &pid);
	if (status == BGWH_STARTED)
		status = WaitForBackgroundWorkerShutdown(handle);
	if (status == BGWH_POSTMASTER_DIED)
		proc_exit(1);
	pfree(handle);
	return true;
}

/* One round: a worker for each database, one after the other. */
static void
tcopy_recovery_round(MemoryContext cxt)
{
	List	   *databases = tcopy_recovery_databases(cxt);
	ListCell   *lc;

	foreach(lc, databases)
	{
		CHECK_FOR_INTERRUPTS();
		if (!tcopy_recovery_run_worker(lfirst_oid(lc)))
			break;
	}
	MemoryContextReset(cxt);
}

/*
 * The launcher: a round at startup, then every tcopy.recovery_interval
 * (counted from the start of the last round); none while it is 0.  SIGHUP
 * rereads the configuration, SIGTERM ends it.
 */
void
tcopy_recovery_launcher_main(Datum arg)
{
	MemoryContext round_cxt;
	TimestampTz last_round = 0;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "tcopy recovery launcher",
									  ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		timeout = -1L;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		if (tcopy_recovery_interval > 0)
		{
			TimestampTz now = GetCurrentTimestamp();
			TimestampTz due = last_round == 0 ? now :
				TimestampTzPlusMilliseconds(last_round, tcopy_recovery_interval);

			if (now >= due)
			{
				last_round = now;
				tcopy_recovery_round(round_cxt);
				due = TimestampTzPlusMilliseconds(last_round, tcopy_recovery_interval);
			}
			timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), due);
		}
		else
			last_round = 0;		/* turned on again: a round at once */

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | (timeout >= 0 ? WL_TIMEOUT : 0),
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * A worker: recover in database arg, as the bootstrap superuser, in one
 * transaction, if the extension is there; then exit.  What it resolved is
 * logged; a tserver it cannot reach too (at LOG: it will try again).
 */
void
tcopy_recovery_worker_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	char	   *dbname = NULL;
	int			resolved = 0;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("tcopy recovery");

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "tcopy recovery");
	if (OidIsValid(tcopy_records_relid(true)))
	{
		dbname = MemoryContextStrdup(TopMemoryContext, get_database_name(dboid));
		resolved = tcopy_recover_database(LOG);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	if (resolved > 0)
		ereport(LOG,
				(errmsg_plural("tcopy: recovery resolved %d prepared session in database \"%s\"",
							   "tcopy: recovery resolved %d prepared sessions in database \"%s\"",
							   resolved, resolved, dbname)));
	proc_exit(0);
}
