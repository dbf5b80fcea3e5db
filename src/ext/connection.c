/*
 * connection.c
 *		Connections to tservers: the cache of write connections, their write
 *		sessions and how those follow the Postgres transaction, the
 *		connections of scans, waits and error reporting.
 *
 * Writes go through one cached connection per (server, user), kept across
 * transactions like postgres_fdw's.  The first write of a transaction
 * begins a write session on it; every batch of the transaction, whatever
 * the table, goes into that session, numbered 1, 2, ... by the connection.
 * At pre-commit the session commits on the tserver (atomically: all of its
 * rows, or none, become visible), before Postgres commits, in two steps:
 * a prepare that does the slow work and can be cancelled, then a short
 * publish with interrupts held, so that a cancel cannot roll Postgres back
 * after the tserver published.  What remains is the window every commit
 * across two systems without two-phase commit has: a failure after the
 * publish and before Postgres' commit record (a crash, or an error of a
 * later pre-commit step) leaves the rows published; a connection lost
 * during the publish is reported as an unknown outcome.  When the
 * transaction aborts, its sessions' connections are closed, which makes
 * the tservers discard them.  A server with address null: has no client:
 * batches are packed and then discarded.
 *
 * A client call may be interrupted by an ERROR raised while it waits (a
 * cancel, statement_timeout): the wait hook runs CHECK_FOR_INTERRUPTS().
 * The connection's state is then unknown, so every client call is
 * bracketed by a busy flag, and a connection found busy at (sub)transaction
 * abort is closed.  A call that fails also closes the connection (the
 * tserver closes it after any error).  Before a session has sent anything
 * that is invisible: the next statement connects again; a cached
 * connection whose tserver went away in between is noticed when beginning
 * the session, which is then retried once on a new connection.  Once a
 * session has sent batches, losing it loses rows, and the transaction
 * cannot commit.
 *
 * Rows cannot be taken back one subtransaction at a time, so a rolled-back
 * subtransaction that sent batches leaves its session uncommittable:
 * pre-commit then raises an error instead of committing rows that Postgres
 * rolled back.
 *
 * Scans and table operations use fresh clients of their own (tcopy_connect),
 * so that a scan can run while a write session is open.  They are tracked
 * here so that the ones a failed query leaves behind are closed when its
 * (sub)transaction ends.
 */
#include "postgres.h"

#include "access/xact.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "tcopy.h"

/* How long abort cleanup waits for a tserver before closing the connection. */
#define TCOPY_CLEANUP_TIMEOUT_MS	30000

typedef struct TcopyConnKey
{
	Oid			serverid;
	Oid			userid;
} TcopyConnKey;

/* A table opened on a write connection; valid while its name and schema are. */
typedef struct TcopyRemoteTable
{
	Oid			relid;
	uint32		table_id;		/* the tserver's id for it */
	char	   *name;			/* its name on the tserver */
	uint8	   *schema;			/* the schema it was opened with, packed */
	size_t		schema_len;
} TcopyRemoteTable;

struct TcopyConnection
{
	TcopyConnKey key;			/* hash key: must be first */
	TcClient   *client;			/* NULL: not connected, or null transport */
	char	   *address;		/* server option address (TopMemoryContext) */
	char	   *token;			/* user mapping option token, or NULL */
	bool		null_transport; /* address null:: batches are packed, never sent */
	bool		busy;			/* inside a client call; true after a longjmp */
	bool		in_session;		/* a write session is open in this transaction */
	bool		sent_any;		/* a batch was (or was being) sent in it */
	bool		session_lost;	/* closed after sending: the session is gone */
	bool		subxact_lost;	/* a rolled-back subtransaction sent batches */
	int			write_level;	/* deepest nest level with batches sent whose
								 * subtransaction has not ended; 0: none */
	uint64		next_seq;		/* seq of the session's next batch */
	uint64		rows_sent;		/* rows in the session's batches */
	uint32		null_next_table_id; /* null transport: ids handed out */
	List	   *tables;			/* TcopyRemoteTable *, for the client's life */
	List	   *written_relids; /* Oids of tables sent to in this transaction */
};

/* A client of tcopy_connect, not yet given back to tcopy_disconnect. */
typedef struct TcopyScanClient
{
	TcClient   *client;
	int			nest_level;		/* transaction nest level that opened it */
} TcopyScanClient;

/* Write connections by (server, user); NULL until the first write. */
static HTAB *tcopy_connections = NULL;

/* TcopyScanClient *, in TopMemoryContext */
static List *tcopy_scan_clients = NIL;

/* Nonzero while cleaning up after an abort: waits end at this time. */
static TimestampTz tcopy_cleanup_deadline = 0;

static void tcopy_raise_error(Tcopy__ErrorCode code, const char *message,
							  const char *address, const char *what) pg_attribute_noreturn();
static void tcopy_conn_fail(TcopyConnection *conn, const char *what) pg_attribute_noreturn();
static void tcopy_xact_callback(XactEvent event, void *arg);
static void tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
								   SubTransactionId parentSubid, void *arg);

void
TcopyConnectionInit(void)
{
	RegisterXactCallback(tcopy_xact_callback, NULL);
	RegisterSubXactCallback(tcopy_subxact_callback, NULL);
}

/*
 * The clients' wait hook: wait on the latch too, so that a cancel or a
 * timeout is served (CHECK_FOR_INTERRUPTS may not return), and give up at
 * the cleanup deadline when cleaning up after an abort, where interrupts
 * are held.
 */
static int
tcopy_wait(void *arg, TcClient *client, int fd, bool want_write)
{
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
		(want_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE);
	long		timeout = -1L;
	int			rc;

	if (tcopy_cleanup_deadline != 0)
	{
		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
												  tcopy_cleanup_deadline);
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
 * a tserver that accepts and never answers can be cancelled; or raise an
 * ERROR.  A cancel mid-handshake closes the half-open client.
 */
static TcClient *
tcopy_client_connect(const char *address, const char *token)
{
	static TcClient *connecting = NULL;
	TcClient   *client;
	char		name[64];
	char		err[512];
	int			rc;

	snprintf(name, sizeof(name), "tcopy %d", MyProcPid);
	PG_TRY();
	{
		rc = tc_client_connect_hooked(address, token, name, tcopy_wait, NULL,
									  &connecting, err, sizeof(err));
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
	if (rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to tserver at \"%s\"", address),
				 errdetail_internal("%s", err)));
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
static void
tcopy_conn_close(TcopyConnection *conn)
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

/* A call on conn's client failed: close it and raise the failure. */
static void
tcopy_conn_fail(TcopyConnection *conn, const char *what)
{
	Tcopy__ErrorCode code = tc_client_error_code(conn->client);
	char	   *message = pstrdup(tc_client_error(conn->client));

	tcopy_conn_close(conn);
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

	tcopy_conn_close(conn);
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

TcopyConnection *
tcopy_get_write_connection(TcopyRelCodec *codec)
{
	ForeignTable *table = GetForeignTable(codec->relid);
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
	key.serverid = table->serverid;
	key.userid = codec->userid;
	conn = hash_search(tcopy_connections, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) conn + sizeof(TcopyConnKey), 0,
			   sizeof(TcopyConnection) - sizeof(TcopyConnKey));
		conn->tables = NIL;
		conn->written_relids = NIL;
	}

	/* an interrupted call the (sub)transaction callbacks did not see */
	if (conn->busy)
		tcopy_conn_close(conn);

	if (conn->in_session && conn->session_lost)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("lost the connection to tserver at \"%s\" in this transaction",
						conn->address),
				 errdetail("Rows this transaction wrote through it are gone; the transaction cannot commit.")));

	tcopy_conn_set_options(conn, &codec->options);

	if (conn->in_session)
	{
		if (conn->client != NULL)
			tc_client_set_window(conn->client, (unsigned) tcopy_window);
		return conn;
	}

	/*
	 * Begin the session.  A cached client may be dead (its tserver may have
	 * restarted since the last transaction): then retry once on a new one.
	 */
	if (!conn->null_transport)
	{
		for (;;)
		{
			bool		reused = conn->client != NULL;
			int			rc;

			if (conn->client == NULL)
				conn->client = tcopy_client_connect(conn->address, conn->token);
			tc_client_set_window(conn->client, (unsigned) tcopy_window);

			conn->busy = true;
			rc = tc_client_begin(conn->client, NULL);
			conn->busy = false;
			if (rc == 0)
				break;
			if (!reused)
				tcopy_conn_fail(conn, "could not begin a write session");
			tcopy_conn_close(conn);
		}
	}

	conn->in_session = true;
	conn->sent_any = false;
	conn->session_lost = false;
	conn->next_seq = 1;
	conn->rows_sent = 0;
	return conn;
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
			tcopy_conn_fail(conn, psprintf("could not open table \"%s\"", name));
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
 * Remember that the session holds rows for table_id, at this nest level:
 * for tcopy_xact_wrote_relation (every relation bound to that table) and
 * for subtransaction aborts.
 */
static void
tcopy_conn_note_write(TcopyConnection *conn, uint32 table_id)
{
	ListCell   *lc;

	conn->sent_any = true;
	conn->write_level = Max(conn->write_level, GetCurrentTransactionNestLevel());
	foreach(lc, conn->tables)
	{
		TcopyRemoteTable *table = (TcopyRemoteTable *) lfirst(lc);

		if (table->table_id == table_id &&
			!list_member_oid(conn->written_relids, table->relid))
		{
			MemoryContext oldcontext = MemoryContextSwitchTo(TopMemoryContext);

			conn->written_relids = lappend_oid(conn->written_relids, table->relid);
			MemoryContextSwitchTo(oldcontext);
		}
	}
}

void
tcopy_connection_send(TcopyConnection *conn, TcopyBatch *batch,
					  uint32 table_id, uint64 nrows)
{
	if (!conn->in_session || conn->session_lost)
		elog(ERROR, "tcopy write connection has no open session");

	tcopy_batch_pack(batch, conn->next_seq, table_id);
	tcopy_conn_note_write(conn, table_id);
	if (!conn->null_transport)
	{
		int			rc;

		conn->busy = true;
		rc = tc_client_write(conn->client, conn->next_seq,
							 batch->send, batch->send_len);
		conn->busy = false;
		if (rc < 0)
			tcopy_conn_fail(conn, "could not send a write batch");
	}
	conn->next_seq++;
	conn->rows_sent += nrows;
}

bool
tcopy_xact_wrote_relation(Oid relid)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	if (tcopy_connections == NULL)
		return false;
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (list_member_oid(conn->written_relids, relid))
		{
			hash_seq_term(&scan);
			return true;
		}
	}
	return false;
}

/*
 * A fresh client for a scan or a table operation, or NULL for a null:
 * server, which has no tserver.  Give it back with tcopy_disconnect; if the
 * query fails first, it is closed when its (sub)transaction ends.
 */
TcClient *
tcopy_connect(TcopyRelCodec *codec)
{
	TcopyScanClient *entry;
	MemoryContext oldcontext;

	if (tcopy_address_is_null(codec->options.address))
		return NULL;

	/* tracked before connecting, so that nothing leaks if connecting fails */
	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	entry = palloc(sizeof(TcopyScanClient));
	entry->client = NULL;
	entry->nest_level = GetCurrentTransactionNestLevel();
	tcopy_scan_clients = lappend(tcopy_scan_clients, entry);
	MemoryContextSwitchTo(oldcontext);

	entry->client = tcopy_client_connect(codec->options.address,
										 codec->options.token);
	return entry->client;
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
static void
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

/*
 * Pre-commit: commit every session on its tserver.  Refuse first, before
 * anything is published, if any session cannot commit; then prepare every
 * session, then publish each.  Sessions on different servers publish one
 * after the other: if a later one fails, the earlier ones stay committed.
 */
static void
tcopy_commit_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;
	bool		committed_any = false;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (!conn->in_session)
			continue;
		if (conn->subxact_lost)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot commit a transaction whose rolled-back subtransaction wrote to a tcopy table"),
					 errdetail("Rows sent to a tserver cannot be taken back one subtransaction at a time.")));
		if (conn->session_lost)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("lost the connection to tserver at \"%s\" in this transaction",
							conn->address),
					 errdetail("Rows this transaction wrote through it are gone; the transaction cannot commit.")));
	}

	/*
	 * Phase one, cancellable: every tserver does the slow part of its commit
	 * (merging, writing files) and publishes nothing.  A failure or a cancel
	 * here aborts the transaction and every session with it.
	 */
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;

		if (!conn->in_session || conn->null_transport)
			continue;
		conn->busy = true;
		rc = tc_client_prepare(conn->client, conn->rows_sent);
		conn->busy = false;
		if (rc < 0)
			tcopy_conn_fail(conn, "could not prepare the write session for commit");
	}

	/*
	 * Phase two, not cancellable: publishing is quick and atomic on each
	 * tserver.  A cancel now would roll back the Postgres transaction after
	 * a tserver had published, so interrupts are held; a tserver that does
	 * not answer within the cleanup deadline leaves the outcome unknown.
	 */
	HOLD_INTERRUPTS();
	tcopy_cleanup_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 TCOPY_CLEANUP_TIMEOUT_MS);
	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;
		char	   *message;

		if (!conn->in_session)
			continue;
		if (conn->null_transport)
		{
			conn->in_session = false;
			continue;
		}
		conn->busy = true;
		rc = tc_client_commit(conn->client, conn->rows_sent, NULL);
		conn->busy = false;
		if (rc == 0)
		{
			conn->in_session = false;
			committed_any = true;
			continue;
		}
		message = pstrdup(tc_client_error(conn->client));
		tcopy_conn_close(conn);
		hash_seq_term(&scan);
		tcopy_cleanup_deadline = 0;
		RESUME_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_TRANSACTION_RESOLUTION_UNKNOWN),
				 errmsg("could not learn whether tserver at \"%s\" committed the write session",
						conn->address),
				 errdetail_internal("%s", message),
				 committed_any ?
				 errhint("Rows written through other tcopy servers in this transaction are committed.") : 0));
	}
	tcopy_cleanup_deadline = 0;
	RESUME_INTERRUPTS();
}

/*
 * Pre-prepare: a session cannot outlive the backend's transaction, so a
 * transaction that wrote cannot be prepared.  Sessions that sent nothing
 * are just ended.
 */
static void
tcopy_prepare_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->in_session && (conn->sent_any || conn->session_lost))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that has written to a tcopy foreign table")));
	}

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		int			rc;

		if (!conn->in_session || conn->null_transport)
			continue;
		conn->busy = true;
		rc = tc_client_abort(conn->client);
		conn->busy = false;
		if (rc < 0)
			tcopy_conn_close(conn);
		conn->in_session = false;
	}
}

/*
 * Abort: close every connection with an open session (or in an unknown
 * state).  The tserver discards a session when its connection closes, so
 * nothing needs an answer: an unresponsive tserver cannot hold up a
 * rollback.  Runs with interrupts held, and must not raise an ERROR.
 */
static void
tcopy_abort_sessions(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		if (conn->busy || (conn->in_session && conn->client != NULL))
			tcopy_conn_close(conn);
	}
}

/* The end of a transaction, whichever way it went: no session survives it. */
static void
tcopy_end_xact(void)
{
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	hash_seq_init(&scan, tcopy_connections);
	while ((conn = hash_seq_search(&scan)) != NULL)
	{
		/* only a failed commit or abort callback of another module gets here busy */
		if (conn->busy)
			tcopy_conn_close(conn);
		conn->in_session = false;
		conn->sent_any = false;
		conn->session_lost = false;
		conn->subxact_lost = false;
		conn->write_level = 0;
		list_free(conn->written_relids);
		conn->written_relids = NIL;
	}
}

static void
tcopy_xact_callback(XactEvent event, void *arg)
{
	if (tcopy_connections != NULL)
	{
		switch (event)
		{
			case XACT_EVENT_PARALLEL_PRE_COMMIT:
			case XACT_EVENT_PRE_COMMIT:
				tcopy_commit_sessions();
				return;
			case XACT_EVENT_PRE_PREPARE:
				tcopy_prepare_sessions();
				return;
			case XACT_EVENT_PARALLEL_ABORT:
			case XACT_EVENT_ABORT:
				tcopy_abort_sessions();
				tcopy_end_xact();
				break;
			case XACT_EVENT_PARALLEL_COMMIT:
			case XACT_EVENT_COMMIT:
			case XACT_EVENT_PREPARE:
				tcopy_end_xact();
				break;
		}
	}

	switch (event)
	{
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			tcopy_close_scan_clients(0);
			break;
		default:
			break;
	}
}

/*
 * Subtransaction end: a committed one hands its writes to its parent; an
 * aborted one that sent batches makes its session uncommittable, and its
 * interrupted calls and leftover scan clients are closed.
 */
static void
tcopy_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	HASH_SEQ_STATUS scan;
	TcopyConnection *conn;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;

	if (tcopy_connections != NULL)
	{
		hash_seq_init(&scan, tcopy_connections);
		while ((conn = hash_seq_search(&scan)) != NULL)
		{
			if (event == SUBXACT_EVENT_ABORT_SUB)
			{
				if (conn->busy)
					tcopy_conn_close(conn);
				if (conn->write_level >= level)
					conn->subxact_lost = true;
			}
			if (conn->write_level >= level)
				conn->write_level = level - 1;
		}
	}

	if (event == SUBXACT_EVENT_ABORT_SUB)
		tcopy_close_scan_clients(level);
}
