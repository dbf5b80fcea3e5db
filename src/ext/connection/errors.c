/*
 * errors.c
 *		A tserver client's failure in Postgres' words: the SQLSTATE its
 *		error code maps to (docs/protocol.md, Errors), a hint where the fix
 *		is the user's, and the tserver's address as context.
 */
#include "postgres.h"

#include "tcopy/connection.h"

/*
 * Raise a client failure: the SQLSTATE follows the tserver's error code;
 * no code means the connection itself failed.
 */
void
tcopy_raise_error(Tcopy__ErrorCode code, const char *message,
				  const char *address, const char *what)
{
	int			sqlstate;
	const char *hint = NULL;

	switch (code)
	{
		case TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE:
			sqlstate = ERRCODE_UNDEFINED_TABLE;
			break;
		case TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH:
			sqlstate = ERRCODE_DATATYPE_MISMATCH;
			hint = gettext_noop("The foreign table's definition no longer matches the table on the tserver; "
								"recreate one of them or use option table_name.");
			break;
		case TCOPY__ERROR_CODE__ERROR_AUTH:
			sqlstate = ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
			hint = gettext_noop("Check option token of the user mapping.");
			break;
		case TCOPY__ERROR_CODE__ERROR_PERMISSION:
			sqlstate = ERRCODE_INSUFFICIENT_PRIVILEGE;
			hint = gettext_noop("The user mapping's token is scoped to a namespace of the tserver's tables "
								"that does not include this table.");
			break;
		case TCOPY__ERROR_CODE__ERROR_TOO_MANY_CONNECTIONS:
			sqlstate = ERRCODE_TOO_MANY_CONNECTIONS;
			break;
		case TCOPY__ERROR_CODE__ERROR_TOO_LARGE:
			sqlstate = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			/* the writer keeps batches within tcopy.max_frame_mb: the tserver's is lower */
			hint = gettext_noop("Set tcopy.max_frame_mb and the tserver's --max-frame-mb to the same value.");
			break;
		case TCOPY__ERROR_CODE__ERROR_STORAGE:
			/* ENOSPC in the tserver's (or RocksDB's) words, glibc's, or a
			 * namespace's disk quota: Postgres' disk_full */
			sqlstate = strstr(message, "No space left on device") != NULL ||
				strstr(message, "over its disk quota") != NULL ?
				ERRCODE_DISK_FULL : ERRCODE_IO_ERROR;
			break;
		case TCOPY__ERROR_CODE__ERROR_BAD_ROW:
		case TCOPY__ERROR_CODE__ERROR_PROTOCOL:
		case TCOPY__ERROR_CODE__ERROR_INTERNAL:
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
		case TCOPY__ERROR_CODE__ERROR_CONCURRENT_UPDATE:
			/* first updater wins: Postgres' own words, as on a heap table */
			if (strncmp(message, "tserver: ", 9) == 0)
				message += 9;
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("%s", message),
					 errcontext("tserver at \"%s\"", address)));
			break;
		case TCOPY__ERROR_CODE__ERROR_NOT_LEADER:
			/* the write was not applied, or is resolved by recovery (commit.md) */
			sqlstate = ERRCODE_CONNECTION_FAILURE;
			hint = gettext_noop("The tserver's replica group changed its leader: retry the transaction.");
			break;
		case TCOPY__ERROR_CODE__ERROR_SHUTTING_DOWN:
		case TCOPY__ERROR_CODE__ERROR_NONE:
		default:
			sqlstate = ERRCODE_CONNECTION_FAILURE;
			break;
	}

	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("%s: %s", what, message),
			 hint ? errhint("%s", _(hint)) : 0,
			 errcontext("tserver at \"%s\"", address)));
	pg_unreachable();
}

void
tcopy_report_client_error(TcClient *client, const char *address, const char *what)
{
	tcopy_raise_error(tc_client_error_code(client), tc_client_error(client),
					  address, what);
}
