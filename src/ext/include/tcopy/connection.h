/*
 * tcopy/connection.h
 *		The connection layer (src/ext/connection/): connections to
 *		tservers, the write connections cached per server and user, the
 *		scans' connections, waits on the latch, tserver errors as Postgres
 *		errors.  The struct of a write connection carries the fields of its
 *		session, which the transaction layer above owns.  Below it: the
 *		codec and catalog layers.
 */
#ifndef TCOPY_CONNECTION_H
#define TCOPY_CONNECTION_H

#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "tc_client.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"

/* settings (registered in tcopy.c) */
extern int	tcopy_connect_timeout;	/* tcopy.connect_timeout, s; 0: none */

/* which COPY line each row of a write session came from (row_lines.c) */

/*
 * Rows whose lines follow each other, from row's on: row N + i is line
 * line + i of relname's COPY; line 0: rows of no COPY line.
 */
typedef struct TcopyLineRun
{
	uint64		row;			/* 1-based in the session; in a writer's
								 * batch, 0-based in the batch */
	uint64		line;
	const char *relname;		/* the COPY's table (NULL in a batch's) */
} TcopyLineRun;

/* The most runs a session's map, or a batch, holds: 1.5 MB of them. */
#define TCOPY_LINE_RUNS_MAX		65536

/* in connection.c: connections to tservers */
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

/*
 * A cached write connection, and the write session on it.  connection.c
 * owns the connection fields; the session fields are xact.c's, but for
 * tcopy_connection_close, which ends a session with its connection.
 */
/*
 * The write session as it was before a subtransaction's first write
 * (xact.c): what a rollback of the subtransaction takes the session back to.
 */
typedef struct TcopySavepoint
{
	int			level;			/* the subtransaction's nest level */
	uint64		seq;			/* last batch sent before it */
	uint64		rows;			/* rows sent before it */
	uint32		ops;			/* table operations and label claims before it */
	int			write_level;	/* TcopyConnection.write_level before it */
} TcopySavepoint;

typedef struct TcopyConnection
{
	TcopyConnKey key;			/* hash key: must be first */
	TcClient   *client;			/* NULL: not connected, or null transport */
	char	   *address;		/* server option address (TopMemoryContext) */
	char	   *token;			/* user mapping option token, or NULL */
	TcTlsOptions tls;			/* its files' names in TopMemoryContext */
	bool		null_transport; /* address null:: batches are packed, never sent */
	bool		busy;			/* inside a client call; true after a longjmp */
	uint32		null_next_table_id; /* null transport: ids handed out */
	List	   *tables;			/* TcopyRemoteTable *, for the client's life */

	/* the write session (xact.c) */
	bool		in_session;		/* a write session is open in this transaction */
	bool		sent_any;		/* a batch was (or was being) sent in it */
	bool		session_lost;	/* closed after sending: the session is gone */
	bool		subxact_lost;	/* a rolled-back subtransaction sent batches
								 * that could not be taken back */
	char		lost_why[256];	/* the tserver's reason, when it said one */
	uint32		ops_sent;		/* table operations and label claims sent */
	List	   *savepoints;		/* TcopySavepoint *, by level ascending, of
								 * the subtransactions that wrote and have
								 * not ended (TopMemoryContext) */
	bool		rollback_pending;	/* a rolled-back subtransaction's batches
									 * are to be taken back, to pending */
	TcopySavepoint pending;
	int			write_level;	/* deepest nest level with batches sent whose
								 * subtransaction has not ended; 0: none */
	uint64		next_seq;		/* seq of the session's next batch */
	uint64		rows_sent;		/* rows in the session's batches */
	bool		streaming;		/* the session is open to a parallel COPY's
								 * streams (its workers send its rows) */
	List	   *written_tables; /* names (char *) of the tserver tables sent
								 * rows in this transaction */
	List	   *op_tables;		/* names of those truncated in it */
	List	   *pending_truncates;	/* TcopyPendingTruncate * (xact_int.h):
									 * TRUNCATEs of subtransactions not sent
									 * yet, in order (TopMemoryContext) */
	List	   *conflict_policies;	/* TcopyTablePolicy *: on_conflict of the
									 * tables written in the session */
	bool		prepared;		/* prepared under gid, not yet resolved */
	bool		request_sent;	/* a PREPARE or RESOLVE sent, its answer not
								 * yet read (busy meanwhile) */
	char		gid[TC_GID_MAX + 1];	/* the session's global id, once prepared */

	/* the COPY lines of the session's rows (row_lines.c), in TopMemoryContext */
	TcopyLineRun *line_runs;	/* [nline_runs], by row */
	int			nline_runs;
	int			line_runs_cap;
	uint64		lines_upto;		/* rows 1..lines_upto are in the map */
	bool		lines_complete; /* no batch was left out: later rows may be */
	List	   *line_relnames;	/* the runs' relnames (char *) */
} TcopyConnection;

/* Write connections by (server, user); NULL until the first write. */
extern HTAB *tcopy_connections;

/*
 * The cached write connection for (options->serverid, userid), with the
 * current address and token; not necessarily connected.
 */
extern TcopyConnection *tcopy_connection_lookup(const TcopyTableOptions *options,
												Oid userid);
/* The remote table id on this connection (opened with create and schema). */
extern uint32 tcopy_connection_table_id(TcopyConnection *conn, TcopyRelCodec *codec);
/* The same, false when the tserver refused (its error left on conn's client). */
extern bool tcopy_connection_try_table_id(TcopyConnection *conn, TcopyRelCodec *codec,
										  uint32 *table_id);
/* Close conn's client (a session that had sent batches is then lost). */
extern void tcopy_connection_close(TcopyConnection *conn);
/*
 * A call on conn's client failed: close it and raise the failure (a write
 * session's: tcopy_session_fail, which words duplicate keys).
 */
extern bool tcopy_held_in_doubt(TcClient *client);
extern void tcopy_connection_fail(TcopyConnection *conn,
								  const char *what) pg_attribute_noreturn();

/* Connect to a tserver, waits served by the latch; an ERROR on failure. */
extern TcClient *tcopy_client_connect(const char *address, const char *token,
									   const TcTlsOptions *tls);
/* Make waits for a tserver give up at deadline; 0: wait as long as needed. */
extern void tcopy_set_wait_deadline(TimestampTz deadline);

/* A fresh connection for a table lookup; close it after. */
extern TcClient *tcopy_connect(const char *address, const char *token,
								const TcTlsOptions *tls);
/* The same, but NULL with the reason in err when the tserver is not there. */
extern TcClient *tcopy_try_connect(const char *address, const char *token,
								   const TcTlsOptions *tls,
								   char *err, size_t errlen);
extern void tcopy_disconnect(TcClient *client);
/* Make a client of tcopy_connect the top transaction's (closed at its end). */
extern void tcopy_client_to_top(TcClient *client);

/*
 * The connection of a scan, in the scan's memory: it belongs to the
 * (sub)transaction that began the scan, passes to the parent when that
 * commits, and is closed when its owner aborts (see connection.c).
 */
typedef struct TcopyScanClient
{
	TcClient   *client;			/* NULL: not connected (or closed) */
	int			nest_level;		/* nest level of the owning (sub)transaction */
	bool		lost;			/* closed by the abort of its owner */
	bool		tracker_owned;	/* tcopy_connect's, in TopMemoryContext */
} TcopyScanClient;

/* Make a scan's entry belong to the current (sub)transaction. */
extern void tcopy_scan_client_init(TcopyScanClient *entry);
/*
 * Connect a scan, with an idle client of the same tserver and credential
 * when reuse says so and there is one (then true); an ERROR on failure.
 */
extern bool tcopy_scan_client_open(TcopyScanClient *entry, const char *address,
								   const char *token, const TcTlsOptions *tls, bool reuse);
/* A scan read to its end: keep its client idle for the next scan. */
extern void tcopy_scan_client_release(TcopyScanClient *entry, const char *address,
									  const char *token, const TcTlsOptions *tls);
/* Close a scan's client, if any. */
extern void tcopy_scan_client_close(TcopyScanClient *entry);
/* An abort at nest level min_level (0: the end): close the clients it owns. */
extern void tcopy_close_scan_clients(int min_level);
/* A commit of the subtransaction at level: its clients pass to its parent. */
extern void tcopy_scan_clients_to_parent(int level);

/* The tserver's id of a table, looked up on a fresh client; false: unknown. */
extern bool tcopy_lookup_table_id(const TcopyTableOptions *options,
								  const Tcopy__Schema *schema, const char *what,
								  uint32 *table_id);

/* in errors.c */

/*
 * Raise a client failure: code's SQLSTATE (ERROR_NONE: the connection
 * failed), "what: message", the tserver at address as context.
 */
extern void tcopy_raise_error(Tcopy__ErrorCode code, const char *message,
							  const char *address, const char *what) pg_attribute_noreturn();

/* Raise a client failure as a Postgres ERROR (SQLSTATE from the code). */
extern void tcopy_report_client_error(TcClient *client, const char *address,
									  const char *what) pg_attribute_noreturn();

#endif							/* TCOPY_CONNECTION_H */
