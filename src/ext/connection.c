/*
 * connection.c
 *		Connections to tservers: the cache of write connections, the tables
 *		opened on them, the connections of scans, connecting, waiting, and
 *		the mapping of tserver errors to Postgres errors.
 *
 * Writes go through one cached connection per (server, user), kept across
 * transactions like postgres_fdw's; the write session on it, and how that
 * follows the Postgres transaction, is xact.c's.  A server with address
 * null: has no client: batches are packed and then discarded.
 *
 * A client call may be interrupted by an ERROR raised while it waits (a
 * cancel, statement_timeout): the wait hook runs CHECK_FOR_INTERRUPTS().
 * The connection's state is then unknown, so every client call is
 * bracketed by a busy flag, and a connection found busy is closed (at the
 * next lookup, or at (sub)transaction abort by xact.c).  A call that fails
 * also closes the connection (the tserver closes it after any error).
 * Closing a connection ends its write session: one that had sent nothing
 * is simply gone; one that had sent batches is lost, and its transaction
 * cannot commit.
 *
 * Scans, table lookups and recovery use fresh clients of their own
 * (tcopy_connect), so that they can run while a write session is open.  They are tracked
 * here so that the ones a failed query leaves behind are closed when its
 * (sub)transaction ends (tcopy_close_scan_clients, called by xact.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy.h"

/* A client of tcopy_connect, not yet given back to tcopy_disconnect. */
typedef struct TcopyScanClient
{
	TcClient   *client;
	int			nest_level;		/* transaction nest level that opened it */
} TcopyScanClient;

/* Write connections by (server, user); NULL until the first write. */
HTAB	   *tcopy_connections = NULL;

/* TcopyScanClient *, in TopMemoryContext */
static List *tcopy_scan_clients = NIL;

/* Nonzero while resolving a prepared session: waits end at this time. */
static TimestampTz tcopy_wait_deadline = 0;

static void tcopy_raise_error(Tcopy__ErrorCode code, const char *message,
							  const char *address, const char *what) pg_attribute_noreturn();

/*
 * The clients' wait hook: wait on the latch too, so that a cancel or a
 * timeout is served (CHECK_FOR_INTERRUPTS may not return), and give up at
 * the deadline tcopy_set_wait_deadline set: where a wait must be bounded
 * (resolving prepared sessions after the commit or abort, where interrupts
 * are held, xact.c; recovery, recovery.c).
 */
static int
tcopy_wait(void *arg, TcClient *client, int fd, bool want_write)
{
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
		(want_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE);
	long		timeout = -1L;
	int			rc;

	if (tcopy_wait_deadline != 0)
	{
		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
												  tcopy_wait_deadline);
		if (timeout <= 0)
		{
			tc_client_set_error(client, "timed out waiting for tserver");
			return -1;
		}
		events |= WL_TIMEOUT;
	}

	rc = WaitLatchOrSocket(MyLatch, events, fd, timeout, PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if ((rc & WL_TIMEOUT) && !(rc & WL_SOCKET_MASK))
	{
		tc_client_set_error(client, "timed out waiting for tserver");
		return -1;
	}
	return 0;
}

/*
 * Connect to a tserver with the wait hook installed from the start, so that
 * a tserver that accepts and never answers can be cancelled; NULL with the
 * reason in err when it fails.  A cancel mid-handshake closes the
 * half-open client.
 */
static TcClient *
tcopy_client_try_connect(const char *address, const char *token,
						 Tcopy__ErrorCode *code, char *err, size_t errlen)
{
	static TcClient *connecting = NULL;
	TcClient   *client;
	char		name[64];
	int			rc;

	snprintf(name, sizeof(name), "tcopy %d", MyProcPid);
	PG_TRY();
	{
		rc = tc_client_connect_hooked(address, token, name, tcopy_wait, NULL,
									  &connecting, code, err, errlen);
	}
	PG_CATCH();
	{
		tc_client_close(connecting);
		connecting = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	client = connecting;
	connecting = NULL;
	return rc < 0 ? NULL : client;
}

/* Connect to a tserver (see tcopy_client_try_connect), or raise an ERROR. */
TcClient *
tcopy_client_connect(const char *address, const char *token)
{
	char		err[512];
	Tcopy__ErrorCode code;
	TcClient   *client = tcopy_client_try_connect(address, token, &code, err, sizeof(err));

	if (client == NULL)
	{
		/* a refusal the tserver (or its missing proof) gave has its SQLSTATE */
		if (code == TCOPY__ERROR_CODE__ERROR_AUTH ||
			code == TCOPY__ERROR_CODE__ERROR_TOO_MANY_CONNECTIONS)
			tcopy_raise_error(code, err, address, "could not connect to tserver");
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to tserver at \"%s\"", address),
				 errdetail_internal("%s", err)));
	}
	return client;
}

/*
 * Raise a client failure: the SQLSTATE follows the tserver's error code;
 * no code means the connection itself failed.
 */
static void
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
			hint = gettext_noop("Lower tcopy.batch_size or option batch_size.");
			break;
		case TCOPY__ERROR_CODE__ERROR_STORAGE:
			sqlstate = ERRCODE_IO_ERROR;
			break;
		case TCOPY__ERROR_CODE__ERROR_BAD_ROW:
		case TCOPY__ERROR_CODE__ERROR_PROTOCOL:
		case TCOPY__ERROR_CODE__ERROR_INTERNAL:
			sqlstate = ERRCODE_INTERNAL_ERROR;
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

/* Forget the tables opened on conn's client. */
static void
tcopy_conn_forget_tables(TcopyConnection *conn)
{
	ListCell   *lc;

	foreach(lc, conn->tables)
	{
		TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);

		pfree(table->name);
		pfree(table->schema);
		pfree(table);
	}
	list_free(conn->tables);
	conn->tables = NIL;
}

/*
 * Close conn's client.  A session that had sent nothing is simply gone (the
 * next write begins another); one that had sent batches is lost, and the
 * transaction can no longer commit.
 */
void
tcopy_connection_close(TcopyConnection *conn)
{
	if (conn->null_transport)
		return;
	tc_client_close(conn->client);
	conn->client = NULL;
	conn->busy = false;
	tcopy_conn_forget_tables(conn);
	if (conn->in_session)
	{
		if (conn->sent_any)
			conn->session_lost = true;
		else
			conn->in_session = false;
	}
}

/*
 * A call on conn's client failed: close it and raise the failure (the
 * tserver closes the connection after any error).
 */
void
tcopy_connection_fail(TcopyConnection *conn, const char *what)
{
	Tcopy__ErrorCode code = tc_client_error_code(conn->client);
	char	   *message = pstrdup(tc_client_error(conn->client));

	tcopy_connection_close(conn);
	tcopy_raise_error(code, message, conn->address, what);
}

/*
 * Take on the address and token the table's options give now.  A changed
 * server or user mapping takes effect on a new client, though not in the
 * middle of a session, which cannot move.
 */
static void
tcopy_conn_set_options(TcopyConnection *conn, const TcopyTableOptions *options)
{
	bool		same;

	same = conn->address != NULL &&
		strcmp(conn->address, options->address) == 0 &&
		((conn->token == NULL && options->token == NULL) ||
		 (conn->token != NULL && options->token != NULL &&
		  strcmp(conn->token, options->token) == 0));
	if (same || conn->in_session)
		return;

	tcopy_connection_close(conn);
	tcopy_conn_forget_tables(conn);
	if (conn->address != NULL)
		pfree(conn->address);
	if (conn->token != NULL)
		pfree(conn->token);
	conn->address = MemoryContextStrdup(TopMemoryContext, options->address);
	conn->token = options->token != NULL ?
		MemoryContextStrdup(TopMemoryContext, options->token) : NULL;
	conn->null_transport = tcopy_address_is_null(conn->address);
	conn->null_next_table_id = 0;
}

/*
 * The cached write connection for (options->serverid, userid), with the
 * address and token the options give now (see tcopy_conn_set_options); not
 * necessarily connected.  One left busy by an interrupted call the
 * (sub)transaction callbacks did not see is closed first.
 */
TcopyConnection *
tcopy_connection_lookup(const TcopyTableOptions *options, Oid userid)
{
	TcopyConnKey key;
	TcopyConnection *conn;
	bool		found;

	if (tcopy_connections == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(TcopyConnKey);
		ctl.entrysize = sizeof(TcopyConnection);
		tcopy_connections = hash_create("tcopy write connections", 8, &ctl,
										HASH_ELEM | HASH_BLOBS);
	}

	memset(&key, 0, sizeof(key));
	key.serverid = options->serverid;
	key.userid = userid;
	conn = hash_search(tcopy_connections, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) conn + sizeof(TcopyConnKey), 0,
			   sizeof(TcopyConnection) - sizeof(TcopyConnKey));
		conn->tables = NIL;
		conn->written_relids = NIL;
		conn->op_relids = NIL;
	}

	if (conn->busy)
		tcopy_connection_close(conn);
	tcopy_conn_set_options(conn, options);
	return conn;
}

/*
 * The tserver's id of table options->table_name, looked up on a fresh
 * client: on the write session's connection, the error of a table the
 * tserver does not know would end the session.  false when the tserver
 * does not know the table (or the server is null:).  schema, when given,
 * must equal the stored one; what ("to truncate it") completes messages.
 */
bool
tcopy_lookup_table_id(const TcopyTableOptions *options, const Tcopy__Schema *schema,
					  const char *what, uint32 *table_id)
{
	TcClient   *client = tcopy_connect(options->address, options->token);
	bool		found = true;

	if (client == NULL)
		return false;
	if (tc_client_open_table(client, options->table_name, schema, false,
							 table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			tcopy_report_client_error(client, options->address,
									  psprintf("could not open table \"%s\" %s",
											   options->table_name, what));
		found = false;
	}
	tcopy_disconnect(client);
	return found;
}

/* Make the waits of client calls give up at deadline; 0: never. */
void
tcopy_set_wait_deadline(TimestampTz deadline)
{
	tcopy_wait_deadline = deadline;
}

uint32
tcopy_connection_table_id(TcopyConnection *conn, TcopyRelCodec *codec)
{
	const char *name = codec->options.table_name;
	size_t		schema_len = tcopy__schema__get_packed_size(codec->schema);
	uint8	   *schema = palloc(schema_len);
	TcopyRemoteTable *table;
	ListCell   *lc;
	uint32		table_id;
	MemoryContext oldcontext;

	tcopy__schema__pack(codec->schema, schema);

	/* opened before, and neither renamed nor altered since */
	foreach(lc, conn->tables)
	{
		table = (TcopyRemoteTable *) lfirst(lc);
		if (table->relid != codec->relid)
			continue;
		if (strcmp(table->name, name) == 0 &&
			table->schema_len == schema_len &&
			memcmp(table->schema, schema, schema_len) == 0)
		{
			pfree(schema);
			return table->table_id;
		}
		conn->tables = foreach_delete_current(conn->tables, lc);
		pfree(table->name);
		pfree(table->schema);
		pfree(table);
		break;
	}

	if (conn->null_transport)
		table_id = ++conn->null_next_table_id;
	else
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_open_table(conn->client, name, codec->schema, true,
								  &table_id, NULL, NULL);
		conn->busy = false;
		if (rc < 0)
			tcopy_connection_fail(conn, psprintf("could not open table \"%s\"", name));
	}

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	table = palloc(sizeof(TcopyRemoteTable));
	table->relid = codec->relid;
	table->table_id = table_id;
	table->name = pstrdup(name);
	table->schema = palloc(schema_len);
	memcpy(table->schema, schema, schema_len);
	table->schema_len = schema_len;
	conn->tables = lappend(conn->tables, table);
	MemoryContextSwitchTo(oldcontext);
	pfree(schema);
	return table_id;
}

/*
 * Track a client of tcopy_connect or tcopy_try_connect from before it
 * connects, so that nothing leaks if connecting fails or is cancelled.
 */
static TcopyScanClient *
tcopy_track_client(void)
{
	TcopyScanClient *entry;
	MemoryContext oldcontext;

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc(sizeof(TcopyScanClient));
	entry->client = NULL;
	entry->nest_level = GetCurrentTransactionNestLevel();
	tcopy_scan_clients = lappend(tcopy_scan_clients, entry);
	MemoryContextSwitchTo(oldcontext);
	return entry;
}

/*
 * A fresh client for a scan, a table lookup or recovery, or NULL for a
 * null: server, which has no tserver.  Give it back with tcopy_disconnect;
 * if the query fails first, it is closed when its (sub)transaction ends.
 */
TcClient *
tcopy_connect(const char *address, const char *token)
{
	TcopyScanClient *entry;

	if (tcopy_address_is_null(address))
		return NULL;
	entry = tcopy_track_client();
	entry->client = tcopy_client_connect(address, token);
	return entry->client;
}

/*
 * tcopy_connect, but NULL with the reason in err when the tserver cannot
 * be reached (a cancel still raises its ERROR).  Not for null: servers.
 */
TcClient *
tcopy_try_connect(const char *address, const char *token, char *err, size_t errlen)
{
	TcopyScanClient *entry = tcopy_track_client();
	TcClient   *client = tcopy_client_try_connect(address, token, NULL, err, errlen);

	entry->client = client;
	if (client == NULL)
	{
		tcopy_scan_clients = list_delete_ptr(tcopy_scan_clients, entry);
		pfree(entry);
	}
	return client;
}

/*
 * Close a client of tcopy_connect.  One already closed at the end of its
 * (sub)transaction is not looked at.
 */
void
tcopy_disconnect(TcClient *client)
{
	ListCell   *lc;

	if (client == NULL)
		return;
	foreach(lc, tcopy_scan_clients)
	{
		TcopyScanClient *entry = (TcopyScanClient *) lfirst(lc);

		if (entry->client == client)
		{
			tcopy_scan_clients = foreach_delete_current(tcopy_scan_clients, lc);
			tc_client_close(client);
			pfree(entry);
			return;
		}
	}
}

/* Close the scan clients opened at nest level min_level or deeper. */
void
tcopy_close_scan_clients(int min_level)
{
	ListCell   *lc;

	foreach(lc, tcopy_scan_clients)
	{
		TcopyScanClient *entry = (TcopyScanClient *) lfirst(lc);

		if (entry->nest_level >= min_level)
		{
			tcopy_scan_clients = foreach_delete_current(tcopy_scan_clients, lc);
			tc_client_close(entry->client);
			pfree(entry);
		}
	}
}
