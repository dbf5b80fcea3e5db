/*
 * backup.c
 *		tcopy.backup(label, directory): a backup of every tserver of the
 *		database at one point, which Postgres' point-in-time recovery can
 *		be brought to (docs/commit.md#backups).
 *
 * The point: the commit gates of every database closed (ShareLock, as a
 * snapshot taker holds its own database's; snapshot.c), so that no
 * transaction is between the PREPARE of its sessions and its leaving the
 * gate, which comes after its commit record; then each tserver backed up
 * (BACKUP: its published rows and its prepared sessions at one instant,
 * docs/storage.md#backups); then a restore point written
 * (XLogRestorePoint, as pg_create_restore_point), and the gates opened.
 *
 * A transaction whose commit record precedes the restore point passed the
 * gate before it closed: it had prepared its sessions, so each backup
 * holds them, published or prepared.  One that prepared but had not
 * passed the gate writes its commit record after the restore point: its
 * sessions are prepared in the backups, and a Postgres recovered to the
 * point finds it never committed.  So with Postgres recovered to
 * recovery_target_name = label and each tserver started on its backup,
 * recovery publishes or discards every prepared session as Postgres
 * decided at the point, and every tcopy table holds exactly the
 * transactions committed there.
 */

#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_database.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/tuplestore.h"

#include "tcopy/catalog.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

PG_FUNCTION_INFO_V1(tcopy_backup);

/* One tserver to back up: its address, the servers naming it, a client. */
typedef struct BackupTarget
{
	char	   *address;
	char	   *servers;		/* their names, comma-separated */
	char	   *directory;		/* on the tserver's machine */
	TcClient   *client;
	Tcopy__BackupOk *ok;		/* what its backup holds, once taken */
} BackupTarget;

/* A server name fit to name a directory: no path separator, no dot-name. */
static void
backup_check_name(const char *name)
{
	for (const char *p = name; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_' || *p == '-' || *p == '.'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("server name \"%s\" cannot name a backup directory", name),
					 errdetail("A tserver's backup goes into a directory named after its server, "
							   "which may hold letters, digits, \"_\", \"-\" and \".\" only.")));
	if (name[0] == '.')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("server name \"%s\" cannot name a backup directory", name)));
}

/*
 * The tservers of the database's tcopy servers, each once (two servers may
 * name one tserver), connected with the current user's mapping or else
 * any of the server's (a backup needs the tserver's full-access token).
 */
static List *
backup_targets(const char *directory)
{
	List	   *targets = NIL;
	ListCell   *lc;

	foreach(lc, tcopy_list_servers())
	{
		Oid			serverid = lfirst_oid(lc);
		ForeignServer *server = GetForeignServer(serverid);
		List	   *mapping = NIL;
		TcopyTableOptions options;
		BackupTarget *target = NULL;
		ListCell   *tc;
		char		err[512];

		if (!tcopy_find_user_mapping(GetUserId(), serverid, &mapping))
			(void) tcopy_any_user_mapping(serverid, &mapping);
		tcopy_get_server_options(serverid, mapping, &options);
		if (options.address == NULL || tcopy_address_is_null(options.address))
			continue;
		backup_check_name(server->servername);
		foreach(tc, targets)
		{
			BackupTarget *t = lfirst(tc);

			if (strcmp(t->address, options.address) == 0)
				target = t;
		}
		if (target != NULL)
		{
			target->servers = psprintf("%s, %s", target->servers, server->servername);
			continue;
		}
		target = palloc0(sizeof(BackupTarget));
		target->address = pstrdup(options.address);
		target->servers = pstrdup(server->servername);
		target->directory = psprintf("%s/%s", directory, server->servername);
		target->client = tcopy_try_connect(options.address, options.token, &options.tls,
										   err, sizeof(err));
		targets = lappend(targets, target);
		if (target->client == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not reach tserver at \"%s\" of server \"%s\" to back it up",
							options.address, server->servername),
					 errdetail_internal("%s", err)));
	}
	return targets;
}

/*
 * Free what the backups answered and, with disconnect, close the clients
 * (after an ERROR they are closed with the transaction).
 */
static void
backup_release(List *targets, bool disconnect)
{
	ListCell   *lc;

	foreach(lc, targets)
	{
		BackupTarget *target = lfirst(lc);

		if (disconnect && target->client != NULL)
			tcopy_disconnect(target->client);
		if (disconnect)
			target->client = NULL;
		if (target->ok != NULL)
			tcopy__backup_ok__free_unpacked(target->ok, NULL);
		target->ok = NULL;
	}
}

/* Back each target up, then write the restore point; under the gates. */
static XLogRecPtr
backup_at_one_point(List *targets, const char *label)
{
	ListCell   *lc;

	foreach(lc, targets)
	{
		BackupTarget *target = lfirst(lc);

		if (tc_client_backup(target->client, target->directory, &target->ok) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not back up tserver at \"%s\" of server \"%s\" into \"%s\": %s",
							target->address, target->servers, target->directory,
							tc_client_error(target->client)),
					 errdetail("No restore point was written.  The backups taken before "
							   "this one are left on their tservers' machines.")));
	}
	return XLogRestorePoint(label);
}

Datum
tcopy_backup(PG_FUNCTION_ARGS)
{
	char	   *label = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *directory = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *volatile targets = NIL;
	List	   *volatile gates = NIL;
	XLogRecPtr	point = InvalidXLogRecPtr;
	ListCell   *lc;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to back up tservers"),
				 errhint("Only superusers may run tcopy.backup().")));
	/* pg_create_restore_point's checks, in its words */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("WAL control functions cannot be executed during recovery.")));
	if (!XLogIsNeeded())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("WAL level not sufficient for creating a restore point"),
				 errhint("wal_level must be set to \"replica\" or \"logical\" at server start.")));
	if (strlen(label) >= MAXFNAMELEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value too long for restore point (maximum %d characters)",
						MAXFNAMELEN - 1)));
	if (directory[0] != '/')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("backup directory \"%s\" is not an absolute path", directory),
				 errhint("It names a directory on each tserver's machine.")));
	InitMaterializedSRF(fcinfo, 0);

	/* connected first: the gates stay closed only for the backups */
	targets = backup_targets(directory);
	PG_TRY();
	{
		gates = tcopy_commit_gates_close();
		point = backup_at_one_point(targets, label);
	}
	PG_CATCH();
	{
		tcopy_commit_gates_open(gates);
		backup_release(targets, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	tcopy_commit_gates_open(gates);

	foreach(lc, targets)
	{
		BackupTarget *target = lfirst(lc);
		Datum		values[7];
		bool		nulls[7] = {false};

		values[0] = CStringGetTextDatum(target->servers);
		values[1] = CStringGetTextDatum(target->address);
		values[2] = CStringGetTextDatum(target->directory);
		values[3] = Int64GetDatum((int64) target->ok->tables);
		values[4] = Int64GetDatum((int64) target->ok->n_prepared);
		values[5] = Int64GetDatum((int64) target->ok->bytes);
		values[6] = LSNGetDatum(point);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	backup_release(targets, true);
	PG_RETURN_VOID();
}
