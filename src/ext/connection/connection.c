/*
 * connection.c
 *		Connections to tservers: the cache of write connections, the tables
 *		opened on them, the connections of scans, connecting and waiting
 *		(the tserver's errors in Postgres' words: errors.c).
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
 * (tcopy_connect, tcopy_scan_client_open), so that they can run while a
 * write session is open.  They are tracked here so that the ones a failed
 * query leaves behind are closed when its (sub)transaction ends.  A client
 * belongs to a (sub)transaction, as a resource owner's resources do: a
 * scan's to the one that began the scan (a cursor's: the one that declared
 * it), however deep the FETCH that connects it; a subtransaction that
 * commits hands its clients to its parent (tcopy_scan_clients_to_parent),
 * and only the abort of the one that owns a client closes it
 * (tcopy_close_scan_clients), both called by xact.c.  A scan's client is
 * tracked in the scan's own memory (TcopyScanClient), which marks it lost
 * when an abort closes it, so that the scan can never use a freed client.
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"

/* settings, registered in tcopy.c */
int			tcopy_connect_timeout = 10;	/* tcopy.connect_timeout */

/* Write connections by (server, user); NULL until the first write. */
HTAB	   *tcopy_connections = NULL;

/*
 * TcopyScanClient *, the list in TopMemoryContext; the entries of
 * tcopy_connect there too, a scan's in the scan's memory.
 */
static List *tcopy_scan_clients = NIL;

/* Nonzero while resolving a prepared session: waits end at this time. */
static TimestampTz tcopy_wait_deadline = 0;

/* Nonzero while connecting: tcopy.connect_timeout ends waits at this time. */
static TimestampTz tcopy_connect_deadline = 0;

/*
 * The wait of a connected client's socket, as WaitLatchOrSocket, on one
 * WaitEventSet kept across waits: WaitLatchOrSocket makes one per wait (an
 * epoll set, its three registrations and its close: 5 system calls more
 * than the wait itself, on every round trip; issue 46).  It is made again
 * for another client or socket, or once any client closed a socket (an fd
 * number may then be another socket's).
 */
static int
tcopy_wait_socket(TcClient *client, int fd, int events, long timeout)
{
	static WaitEventSet *set = NULL;
	static TcClient *set_client = NULL;
	static int	set_fd = -1;
	static uint64 set_closes = 0;
	static int	set_events = 0;
	int			socket_events = events & WL_SOCKET_MASK;
	WaitEvent	event;

	if (set == NULL || set_client != client || set_fd != fd || set_closes != tc_client_closes())
	{
		if (set != NULL)
			FreeWaitEventSet(set);
		set = NULL;
		set = CreateWaitEventSet(TopMemoryContext, 3);
		AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		AddWaitEventToSet(set, socket_events, fd, NULL, NULL);
		set_client = client;
		set_fd = fd;
		set_closes = tc_client_closes();
		set_events = socket_events;
	}
	else if (set_events != socket_events)
	{
		ModifyWaitEvent(set, 2, socket_events, NULL);
		set_events = socket_events;
	}
	if (WaitEventSetWait(set, (events & WL_TIMEOUT) ? timeout : -1L, &event, 1,
						 PG_WAIT_EXTENSION) == 0)
		return WL_TIMEOUT;
	return event.events;
}

/*
 * The clients' wait hook: wait on the latch too, so that a cancel or a
 * timeout is served (CHECK_FOR_INTERRUPTS may not return), and give up at
 * the deadline tcopy_set_wait_deadline set: where a wait must be bounded
 * (resolving prepared sessions after the commit or abort, where interrupts
 * are held, xact.c; recovery, recovery.c); while connecting, at
 * tcopy.connect_timeout too.  fd -1 (a unix connect retried while the
 * tserver's backlog is full) waits on the latch alone, for a short pause.
 */
static int
tcopy_wait(void *arg, TcClient *client, int fd, bool want_write)
{
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;
	TimestampTz deadline = tcopy_wait_deadline;
	long		timeout = -1L;
	int			rc;

	if (tcopy_connect_deadline != 0 &&
		(deadline == 0 || tcopy_connect_deadline < deadline))
		deadline = tcopy_connect_deadline;
	if (deadline != 0)
	{
		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (timeout <= 0)
		{
			if (deadline == tcopy_connect_deadline)
				tc_client_set_error(client, "timed out connecting to tserver after %d s (tcopy.connect_timeout)",
									tcopy_connect_timeout);
			else
				tc_client_set_error(client, "timed out waiting for tserver");
			return -1;
		}
		events |= WL_TIMEOUT;
	}
	if (fd < 0)
	{
		timeout = timeout < 0 ? TC_CLIENT_PAUSE_MS : Min(timeout, TC_CLIENT_PAUSE_MS);
		events |= WL_TIMEOUT;
	}
	else
		events |= want_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE;

	if (fd >= 0 && tc_client_ready(client))
		rc = tcopy_wait_socket(client, fd, events, timeout);
	else
		rc = WaitLatchOrSocket(MyLatch, events, fd < 0 ? PGINVALID_SOCKET : fd, timeout,
							   PG_WAIT_EXTENSION);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	/* a socket not ready at the deadline: the call again reports it */
	if (fd >= 0 && (rc & WL_TIMEOUT) && !(rc & WL_SOCKET_MASK))
		return tcopy_wait(arg, client, fd, want_write);
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
						 const TcTlsOptions *tls, Tcopy__ErrorCode *code,
						 char *err, size_t errlen)
{
	static TcClient *connecting = NULL;
	TcClient   *client;
	char		name[64];
	int			rc;

	snprintf(name, sizeof(name), "tcopy %d", MyProcPid);
	if (tcopy_connect_timeout > 0)
		tcopy_connect_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															 tcopy_connect_timeout * 1000);
	PG_TRY();
	{
		rc = tc_client_connect_hooked(address, token, tls, name, tcopy_wait, NULL,
									  &connecting, code, err, errlen);
	}
	PG_CATCH();
	{
		tcopy_connect_deadline = 0;
		tc_client_close(connecting);
		connecting = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	tcopy_connect_deadline = 0;
	client = connecting;
	connecting = NULL;
	if (rc < 0)
		return NULL;
	tc_client_set_max_frame(client, (uint32) tcopy_max_frame_mb * 1024 * 1024);
	/* the tserver's list of open sessions says whose they are */
	tc_client_set_identity(client, GetSystemIdentifier(), MyDatabaseId, (uint32) MyProcPid);
	return client;
}

/* Connect to a tserver (see tcopy_client_try_connect), or raise an ERROR. */
TcClient *
tcopy_client_connect(const char *address, const char *token, const TcTlsOptions *tls)
{
	char		err[512];
	Tcopy__ErrorCode code;
	TcClient   *client = tcopy_client_try_connect(address, token, tls, &code, err, sizeof(err));

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
 * The name of the foreign table through which conn reached tserver table
 * table_id (the tserver's name if it is gone), or NULL.
 */
static const char *
tcopy_conn_relname(TcopyConnection *conn, uint32 table_id)
{
	ListCell   *lc;

	foreach(lc, conn->tables)
	{
		TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);
		char	   *relname;

		if (table->table_id != table_id)
			continue;
		relname = get_rel_name(table->relid);
		return relname != NULL ? relname : pstrdup(table->name);
	}
	return NULL;
}

/*
 * Postgres' serialization_failure, which a client retries, for one of two
 * reasons.  A session with on_conflict 'error' or 'ignore' may share keys
 * with a concurrent transaction's that the tserver cannot compare key by
 * key (docs/storage.md, Concurrent sessions).  Or a table the session
 * writes is held back behind a prepared session of an earlier transaction
 * that recovery has yet to resolve (docs/commit.md, "Writes held back
 * behind an in-doubt session"; the tserver's ts_in_doubt.c says "is not
 * yet resolved"): the retry succeeds once recovery has run.
 */
static void
tcopy_report_serialization(TcopyConnection *conn, const char *message)
{
	const char *relname = tcopy_conn_relname(conn, tc_client_error_table_id(conn->client));
	const char *detail = message;
	bool		in_doubt = tcopy_held_in_doubt(conn->client);

	if (strncmp(detail, "tserver: ", 9) == 0)
		detail += 9;
	tcopy_connection_close(conn);
	if (in_doubt)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to foreign table \"%s\": a write session of an earlier transaction is not yet resolved",
						relname ? relname : "tcopy"),
				 errdetail_internal("%s", detail),
				 errhint("Recovery resolves it (tcopy.recover_prepared_sessions(), or the recovery worker "
						 "every tcopy.recovery_interval); retry the transaction then.")));
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent load into table \"%s\"",
					relname ? relname : "tcopy"),
			 errdetail_internal("%s", detail),
			 errhint("The transaction might succeed if retried.")));
}

/*
 * Whether client's last call was refused (SERIALIZATION) because a table
 * it writes or reads for update is held by a prepared session in doubt
 * (the tserver's ts_in_doubt.c and ts_scan.c say "is not yet resolved").
 */
bool
tcopy_held_in_doubt(TcClient *client)
{
	return tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_SERIALIZATION &&
		strstr(tc_client_error(client), "is not yet resolved") != NULL;
}

/*
 * A call on conn's client failed: close it and raise the failure (the
 * tserver closes the connection after any error).  A duplicate key needs
 * the codec and the session's lines to be worded: the transaction layer's
 * tcopy_session_fail words it, and calls this for every other failure.
 */
void
tcopy_connection_fail(TcopyConnection *conn, const char *what)
{
	Tcopy__ErrorCode code = tc_client_error_code(conn->client);
	char	   *message = pstrdup(tc_client_error(conn->client));

	if (code == TCOPY__ERROR_CODE__ERROR_SERIALIZATION)
		tcopy_report_serialization(conn, message);

	tcopy_connection_close(conn);
	tcopy_raise_error(code, message, conn->address, what);
}

/* Whether a and b, either NULL, are the same string. */
static bool
tcopy_same_string(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* A copy of s (NULL stays NULL) in TopMemoryContext. */
static char *
tcopy_strdup_top(const char *s)
{
	return s != NULL ? MemoryContextStrdup(TopMemoryContext, s) : NULL;
}

/* Free the file names of tls (as tcopy_strdup_top made them). */
static void
tcopy_tls_free_top(TcTlsOptions *tls)
{
	if (tls->sslrootcert != NULL)
		pfree((char *) tls->sslrootcert);
	if (tls->sslcert != NULL)
		pfree((char *) tls->sslcert);
	if (tls->sslkey != NULL)
		pfree((char *) tls->sslkey);
	memset(tls, 0, sizeof(*tls));
}

/*
 * Take on the address, token and TLS settings the table's options give now.  A changed
 * server or user mapping takes effect on a new client, though not in the
 * middle of a session, which cannot move.
 */
static void
tcopy_conn_set_options(TcopyConnection *conn, const TcopyTableOptions *options)
{
	bool		same;

	same = conn->address != NULL &&
		strcmp(conn->address, options->address) == 0 &&
		tcopy_same_string(conn->token, options->token) &&
		conn->tls.sslmode == options->tls.sslmode &&
		tcopy_same_string(conn->tls.sslrootcert, options->tls.sslrootcert) &&
		tcopy_same_string(conn->tls.sslcert, options->tls.sslcert) &&
		tcopy_same_string(conn->tls.sslkey, options->tls.sslkey);
	if (same || conn->in_session)
		return;

	tcopy_connection_close(conn);
	tcopy_conn_forget_tables(conn);
	if (conn->address != NULL)
		pfree(conn->address);
	if (conn->token != NULL)
		pfree(conn->token);
	conn->address = MemoryContextStrdup(TopMemoryContext, options->address);
	conn->token = tcopy_strdup_top(options->token);
	tcopy_tls_free_top(&conn->tls);
	conn->tls.sslmode = options->tls.sslmode;
	conn->tls.sslrootcert = tcopy_strdup_top(options->tls.sslrootcert);
	conn->tls.sslcert = tcopy_strdup_top(options->tls.sslcert);
	conn->tls.sslkey = tcopy_strdup_top(options->tls.sslkey);
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
		conn->written_tables = NIL;
		conn->op_tables = NIL;
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
	TcClient   *client = tcopy_connect(options->address, options->token, &options->tls);
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
	uint32		table_id;

	if (!tcopy_connection_try_table_id(conn, codec, &table_id))
		tcopy_connection_fail(conn, psprintf("could not write to foreign table \"%s\"",
											 codec->relname));
	return table_id;
}

/*
 * tcopy_connection_table_id, but false when the tserver refused the open,
 * the client's error left for the caller to raise (a write session's may
 * be the session's failure: tcopy_session_fail words it).
 */
bool
tcopy_connection_try_table_id(TcopyConnection *conn, TcopyRelCodec *codec, uint32 *table_id_out)
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
			*table_id_out = table->table_id;
			return true;
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
		{
			pfree(schema);
			return false;
		}
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
	*table_id_out = table_id;
	return true;
}

/*
 * Track a client of tcopy_connect or tcopy_try_connect from before it
 * connects, so that nothing leaks if connecting fails or is cancelled; it
 * belongs to the current (sub)transaction.
 */
static TcopyScanClient *
tcopy_track_client(void)
{
	TcopyScanClient *entry;
	MemoryContext oldcontext;

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc0(sizeof(TcopyScanClient));
	entry->nest_level = GetCurrentTransactionNestLevel();
	entry->tracker_owned = true;
	tcopy_scan_clients = lappend(tcopy_scan_clients, entry);
	MemoryContextSwitchTo(oldcontext);
	return entry;
}

/* Stop tracking entry and close its client; free it if it is ours. */
static void
tcopy_untrack_client(TcopyScanClient *entry)
{
	TcClient   *client = entry->client;

	tcopy_scan_clients = list_delete_ptr(tcopy_scan_clients, entry);
	entry->client = NULL;
	tc_client_close(client);
	if (entry->tracker_owned)
		pfree(entry);
}

/*
 * A fresh client for a table lookup or recovery, or NULL for a null:
 * server, which has no tserver.  Give it back with tcopy_disconnect; if
 * the query fails first, it is closed when its (sub)transaction ends.
 */
TcClient *
tcopy_connect(const char *address, const char *token, const TcTlsOptions *tls)
{
	TcopyScanClient *entry;

	if (tcopy_address_is_null(address))
		return NULL;
	entry = tcopy_track_client();
	entry->client = tcopy_client_connect(address, token, tls);
	return entry->client;
}

/*
 * tcopy_connect, but NULL with the reason in err when the tserver cannot
 * be reached (a cancel still raises its ERROR).  Not for null: servers.
 */
TcClient *
tcopy_try_connect(const char *address, const char *token, const TcTlsOptions *tls,
				  char *err, size_t errlen)
{
	TcopyScanClient *entry = tcopy_track_client();
	TcClient   *client = tcopy_client_try_connect(address, token, tls, NULL, err, errlen);

	entry->client = client;
	if (client == NULL)
		tcopy_untrack_client(entry);
	return client;
}

/*
 * Make a client of tcopy_connect the top transaction's, closed at its end
 * only: one that holds the transaction's snapshot, taken in a
 * subtransaction that may roll back.
 */
void
tcopy_client_to_top(TcClient *client)
{
	ListCell   *lc;

	foreach(lc, tcopy_scan_clients)
	{
		TcopyScanClient *entry = (TcopyScanClient *) lfirst(lc);

		if (entry->client == client && entry->tracker_owned)
			entry->nest_level = 1;
	}
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

		if (entry->client == client && entry->tracker_owned)
		{
			tcopy_untrack_client(entry);
			return;
		}
	}
}

/*
 * Idle scan connections, kept for the next scan of the same tserver with
 * the same credential (address, token and TLS files equal): a scan read to
 * its end leaves its connection idle, and connecting (a socket, the
 * handshake, a thread on the tserver) costs more than a short scan.  At
 * most TCOPY_IDLE_SCAN_CLIENTS, the oldest closed first (two: a scan's,
 * and the one a row lock or an upsert reads its row again on beside it,
 * fdw_point_read.c; each holds a thread and a connection slot of the
 * tserver's); in TopMemoryContext, owned by no transaction.
 */
#define TCOPY_IDLE_SCAN_CLIENTS 2

typedef struct TcopyIdleClient
{
	char	   *address;
	char	   *token;
	TcTlsOptions tls;
	TcClient   *client;
} TcopyIdleClient;

static List *tcopy_idle_clients = NIL;

static bool
tcopy_idle_client_matches(const TcopyIdleClient *idle, const char *address, const char *token,
						  const TcTlsOptions *tls)
{
	return strcmp(idle->address, address) == 0 && tcopy_same_string(idle->token, token) &&
		idle->tls.sslmode == tls->sslmode &&
		tcopy_same_string(idle->tls.sslrootcert, tls->sslrootcert) &&
		tcopy_same_string(idle->tls.sslcert, tls->sslcert) &&
		tcopy_same_string(idle->tls.sslkey, tls->sslkey);
}

static void
tcopy_idle_client_free(TcopyIdleClient *idle)
{
	tc_client_close(idle->client);
	pfree(idle->address);
	if (idle->token)
		pfree(idle->token);
	if (idle->tls.sslrootcert)
		pfree((char *) idle->tls.sslrootcert);
	if (idle->tls.sslcert)
		pfree((char *) idle->tls.sslcert);
	if (idle->tls.sslkey)
		pfree((char *) idle->tls.sslkey);
	pfree(idle);
}

/* An idle client for the same tserver and credential, taken out; or NULL. */
static TcClient *
tcopy_idle_client_take(const char *address, const char *token, const TcTlsOptions *tls)
{
	ListCell   *lc;

	foreach(lc, tcopy_idle_clients)
	{
		TcopyIdleClient *idle = (TcopyIdleClient *) lfirst(lc);
		TcClient   *client = idle->client;

		if (!tcopy_idle_client_matches(idle, address, token, tls))
			continue;
		tcopy_idle_clients = foreach_delete_current(tcopy_idle_clients, lc);
		idle->client = NULL;
		tcopy_idle_client_free(idle);
		return client;
	}
	return NULL;
}

/*
 * A scan read to its end: keep entry's client, idle, for the next scan of
 * the same tserver and credential, instead of closing it.
 */
void
tcopy_scan_client_release(TcopyScanClient *entry, const char *address, const char *token,
						  const TcTlsOptions *tls)
{
	TcopyIdleClient *idle;
	TcClient   *client = entry->client;
	MemoryContext oldcontext;

	if (client == NULL || !list_member_ptr(tcopy_scan_clients, entry))
		return;
	tcopy_scan_clients = list_delete_ptr(tcopy_scan_clients, entry);
	entry->client = NULL;
	if (list_length(tcopy_idle_clients) >= TCOPY_IDLE_SCAN_CLIENTS)
	{
		tcopy_idle_client_free(linitial(tcopy_idle_clients));
		tcopy_idle_clients = list_delete_first(tcopy_idle_clients);
	}
	idle = MemoryContextAllocZero(TopMemoryContext, sizeof(TcopyIdleClient));
	idle->address = tcopy_strdup_top(address);
	idle->token = tcopy_strdup_top(token);
	idle->tls.sslmode = tls->sslmode;
	idle->tls.sslrootcert = tcopy_strdup_top(tls->sslrootcert);
	idle->tls.sslcert = tcopy_strdup_top(tls->sslcert);
	idle->tls.sslkey = tcopy_strdup_top(tls->sslkey);
	idle->client = client;
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	tcopy_idle_clients = lappend(tcopy_idle_clients, idle);
	MemoryContextSwitchTo(oldcontext);
}

/*
 * Make entry, in the memory of a scan about to begin, belong to the
 * current (sub)transaction: the one whose abort ends the scan.
 */
void
tcopy_scan_client_init(TcopyScanClient *entry)
{
	memset(entry, 0, sizeof(*entry));
	entry->nest_level = GetCurrentTransactionNestLevel();
}

/*
 * Connect entry's scan to a tserver.  The client belongs to the
 * (sub)transaction entry belongs to, not the one running now: a FETCH in a
 * savepoint may connect the scan of a cursor declared before it.
 */
bool
tcopy_scan_client_open(TcopyScanClient *entry, const char *address, const char *token,
					   const TcTlsOptions *tls, bool reuse)
{
	MemoryContext oldcontext;
	TcClient   *idle = reuse ? tcopy_idle_client_take(address, token, tls) : NULL;

	Assert(entry->client == NULL);
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	tcopy_scan_clients = list_append_unique_ptr(tcopy_scan_clients, entry);
	MemoryContextSwitchTo(oldcontext);
	entry->lost = false;
	entry->client = idle;
	if (idle == NULL)
		entry->client = tcopy_client_connect(address, token, tls);
	return idle != NULL;
}

/* Close entry's client, if it has one; entry may be opened again. */
void
tcopy_scan_client_close(TcopyScanClient *entry)
{
	if (list_member_ptr(tcopy_scan_clients, entry))
		tcopy_untrack_client(entry);
}

/*
 * The abort of the (sub)transaction at nest level min_level (0: the
 * transaction's end): close the clients it owns, and those of the
 * subtransactions below it.  A scan's entry is kept, marked lost.
 */
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
			entry->client = NULL;
			if (entry->tracker_owned)
				pfree(entry);
			else
				entry->lost = true;
		}
	}
}

/*
 * The subtransaction at nest level level commits: its clients now belong
 * to its parent, whose abort closes them.
 */
void
tcopy_scan_clients_to_parent(int level)
{
	ListCell   *lc;

	foreach(lc, tcopy_scan_clients)
	{
		TcopyScanClient *entry = (TcopyScanClient *) lfirst(lc);

		if (entry->nest_level >= level)
			entry->nest_level = level - 1;
	}
}
