/*
 * tcopy.h
 *		The tcopy extension's private interface: options, connections to
 *		tservers, the mapping of Postgres rows to wire rows, write batches,
 *		the FDW callbacks, the utility hook and what it dispatches to.
 */
#ifndef TCOPY_H
#define TCOPY_H

#include "postgres.h"

#include "access/transam.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/hsearch.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

#include "tc_address.h"
#include "tc_arena.h"
#include "tc_buf.h"
#include "tc_client.h"
#include "tc_frame.h"
#include "tc_tls.h"
#include "tc_wire.h"

/* tcopy.encoder */
typedef enum TcopyEncoder
{
	TCOPY_ENCODER_WIRE,			/* tc_wire straight into the output buffer */
	TCOPY_ENCODER_PROTOBUF		/* protobuf-c messages, then packed */
} TcopyEncoder;

/* tcopy.alloc_mode */
typedef enum TcopyAllocMode
{
	TCOPY_ALLOC_ARENA,			/* batch messages from one arena, reset per batch */
	TCOPY_ALLOC_MALLOC			/* malloc per object, free per batch (naive) */
} TcopyAllocMode;

/* in tcopy.c: GUCs */
extern bool tcopy_copy_hook_enabled;	/* tcopy.copy_hook */
extern int	tcopy_encoder;		/* tcopy.encoder */
extern int	tcopy_alloc_mode;	/* tcopy.alloc_mode */
extern bool tcopy_raw_fields;	/* tcopy.raw_fields */
extern int	tcopy_batch_rows;	/* tcopy.batch_rows: default rows per batch */
extern int	tcopy_batch_kb;		/* tcopy.batch_size: default KB per batch */
extern int	tcopy_copy_batch_memory_kb; /* tcopy.copy_batch_memory: a routed
										 * COPY's batches together */
extern int	tcopy_max_frame_mb;	/* tcopy.max_frame_mb: a frame's payload */
extern bool tcopy_test_legacy_forms;	/* tcopy.test_legacy_forms */
extern int	tcopy_window;		/* tcopy.batches_in_flight ("window" is an SQL keyword) */
extern int	tcopy_connect_timeout;	/* tcopy.connect_timeout, s; 0: none */

extern int	tcopy_recovery_interval;	/* tcopy.recovery_interval, ms; 0: off */

/* tcopy.test_pause_at: where a commit stops for the crash tests */
typedef enum TcopyPausePoint
{
	TCOPY_PAUSE_NONE,
	TCOPY_PAUSE_AFTER_PREPARE,	/* pre-commit, after the records */
	TCOPY_PAUSE_BEFORE_PUBLISH	/* commit, after the commit record */
} TcopyPausePoint;

extern int	tcopy_test_pause_point;	/* TcopyPausePoint */

/* in option.c */

/* Option on_conflict: what rows of equal keys do (docs/storage.md). */
typedef enum TcopyOnConflict
{
	TCOPY_ON_CONFLICT_ERROR,	/* unique_violation, as a primary key */
	TCOPY_ON_CONFLICT_IGNORE,	/* the first row of a key stays */
	TCOPY_ON_CONFLICT_REPLACE	/* the last row wins (tables made before 1.4) */
} TcopyOnConflict;

typedef struct TcopyTableOptions
{
	Oid			serverid;		/* the foreign server */
	char	   *address;		/* server: unix:PATH | tcp:HOST:PORT | null: */
	char	   *token;			/* user mapping; NULL when none */
	TcTlsOptions tls;			/* tcp: only; server: sslmode, sslrootcert;
								 * user mapping: sslcert, sslkey */
	char	   *table_name;		/* the table's name on the tserver */
	List	   *key_attnums;	/* AttrNumbers of the key columns, in key order */
	bool		key_bytes;		/* key_form 'bytes' (tables made before 1.3);
								 * false: 'image', the default */
	int			batch_rows;		/* rows per batch */
	int			batch_bytes;	/* bytes per batch (approximate) */
	TcopyOnConflict on_conflict;	/* table option; a COPY's overrides it */
} TcopyTableOptions;

/* The value of option on_conflict (table or COPY); an ERROR when invalid. */
extern TcopyOnConflict tcopy_parse_on_conflict(const char *value);
/* The option's spelling of policy. */
extern const char *tcopy_on_conflict_name(TcopyOnConflict policy);

/* Whether address is null:, the transport that discards every write. */
extern bool tcopy_address_is_null(const char *address);

/* The column names of a key option's value; an ERROR when malformed. */
extern List *tcopy_parse_key(const char *value);

/* The column's name on the tserver: its column_name option, else its name. */
extern char *tcopy_column_name(Oid relid, Form_pg_attribute att);

/* The longest tserver table name (the tserver's TS_MAX_TABLE_NAME). */
#define TCOPY_TABLE_NAME_MAX	1024

/* The tserver table name of rel, made before 1.2 without table_name. */
extern char *tcopy_legacy_table_name(Relation rel);
/* The tserver table name of rel: its table_name option (NULL or an ERROR). */
extern char *tcopy_table_name(Relation rel, bool missing_ok);
/* Option namespace of a tcopy server, or NULL. */
extern char *tcopy_server_namespace(Oid serverid);
/* A new, unique table_name: the namespace and 32 random hex digits. */
extern char *tcopy_generate_table_name(const char *nspname);
/* What the utility hook tells the validator of the statement it runs. */
typedef struct TcopyApproval
{
	bool		statement_checked;	/* the hook saw the statement */
	char	   *table_name;		/* the table_name it generated or checked */
} TcopyApproval;

/* Approve a table_name for the validator; returns the previous approval. */
extern TcopyApproval tcopy_approve_table_name(const char *name);
/* Restore the approval tcopy_approve_table_name returned. */
extern void tcopy_restore_approval(TcopyApproval previous);

/* All options of foreign table rel, resolved for user userid. */
extern void tcopy_get_table_options(Relation rel, Oid userid, TcopyTableOptions *options);

/* The same, with the options of a user mapping found by the caller. */
extern void tcopy_get_table_options_with(Relation rel, List *mapping_options,
										 TcopyTableOptions *options);

/* The options of a server (address, token, batches), without a table's. */
extern void tcopy_get_server_options(Oid serverid, List *mapping_options,
									 TcopyTableOptions *options);

/*
 * The options of userid's user mapping for serverid, else of the PUBLIC
 * one; false when there is none (GetUserMapping would raise an ERROR).
 */
extern bool tcopy_find_user_mapping(Oid userid, Oid serverid, List **options);

/* Whose user mapping reaches the tserver for range table entry rti. */
extern Oid	tcopy_rte_user(EState *estate, Index rti);

/* in codec.c: Postgres values <-> wire rows */
typedef enum TcopyConv
{
	TCOPY_CONV_BOOL,
	TCOPY_CONV_INT2,
	TCOPY_CONV_INT4,
	TCOPY_CONV_INT8,
	TCOPY_CONV_FLOAT4,
	TCOPY_CONV_FLOAT8,
	TCOPY_CONV_TEXT,			/* varlena text-like: bytes verbatim */
	TCOPY_CONV_SEND,			/* a built-in type whose send format is
								 * portable, or an array of one
								 * (type_send_is_portable): send / receive */
	TCOPY_CONV_IO,				/* every other type, send function or not
								 * (jsonb, ranges, text[], reg*, types of
								 * extensions): text output / input under
								 * fixed settings (forms.c) */
	TCOPY_CONV_FORM				/* enums, records and what holds them:
								 * forms.c */
} TcopyConv;

/* in forms.c: the stored forms of enums, records and their containers */
typedef struct TcopyForm TcopyForm;

extern bool tcopy_type_send_is_portable(Oid typid);
extern bool tcopy_type_is_text(Oid typid);
extern bool tcopy_type_is_reg(Oid typid);
extern bool tcopy_type_needs_form(Oid typid);
extern TcopyForm *tcopy_form_build(Oid typid, int32 typmod);
extern void tcopy_form_encode(TcopyForm *form, Datum value, StringInfo out);
extern Datum tcopy_form_decode(TcopyForm *form, const uint8 *data, size_t len,
							   int encoding, const char *attname,
							   const char *relname);
extern char *tcopy_type_form_name(Oid typid);
/* Bytes of a reg* form after its version byte naming the value: system
 * identifier, database OID, OID */
#define TCOPY_REG_IDENTITY_SIZE 16
/* A value from its send format; *whole: every byte was read. */
extern Datum tcopy_receive(FmgrInfo *in_fn, Oid typioparam, int32 typmod,
						   const uint8 *data, size_t len, bool *whole);
/* A type's text output and input, under the settings of docs/values.md. */
extern char *tcopy_fixed_output(FmgrInfo *out_fn, Datum value, bool search_path);
extern Datum tcopy_fixed_input(FmgrInfo *in_fn, char *text, Oid typioparam,
							   int32 typmod, bool search_path);

/* in keys.c: what a key column's bytes are keyed on */
typedef enum TcopyKeyImage
{
	TCOPY_KEY_IMAGE_NONE,		/* the value's own form */
	TCOPY_KEY_IMAGE_FLOAT,
	TCOPY_KEY_IMAGE_NUMERIC,
	TCOPY_KEY_IMAGE_INTERVAL,
	TCOPY_KEY_IMAGE_BPCHAR,
	TCOPY_KEY_IMAGE_REG			/* reg*: the OID and its database, not the name */
} TcopyKeyImage;

/* The image a key column needs; an ERROR when it cannot be a key. */
extern TcopyKeyImage tcopy_key_image_of(const char *relname, Form_pg_attribute att);
/* Refuse a key of foreign table relid that cannot be one. */
extern void tcopy_check_key(Oid relid);

typedef struct TcopyColumnCodec
{
	AttrNumber	attnum;			/* in the relation (1-based) */
	char	   *attname;		/* its Postgres name: the one messages give */
	Oid			typid;
	int32		typmod;
	TcopyConv	conv;
	Tcopy__Kind kind;
	bool		notnull;		/* NOT NULL: enforced before sending */
	int			send_width;		/* SEND: 4 or 8 when the send format is the
								 * datum as a big-endian integer, else 0 */
	FmgrInfo	out_fn;			/* SEND: typsend; IO: typoutput */
	FmgrInfo	in_fn;			/* SEND: typreceive; IO: typinput */
	Oid			typioparam;		/* for in_fn */
	bool		is_text;		/* stored bytes are text in the writer's
								 * database encoding (TEXT but bytea, IO):
								 * verified against ours when read back */
	bool		search_path;	/* IO of a reg* type: names qualified */
	TcopyForm  *form;			/* FORM */
	TcopyKeyImage image;		/* a key column keyed on an image */
	int			slot;			/* its index in the row's ints, floats or
								 * blobs when no column before it is NULL */
} TcopyColumnCodec;

typedef struct TcopyRelCodec
{
	Oid			relid;
	char	   *relname;		/* for messages */
	int			natts;			/* relation's attributes, dropped included */
	int			ncolumns;		/* live columns = wire columns */
	TcopyColumnCodec *columns;	/* [ncolumns], in attnum order */
	int		   *column_of_att;	/* [natts]: wire column of attnum-1, or -1 */
	Tcopy__Schema *schema;		/* the table's schema as sent to the tserver;
								 * its column names are the tserver's, for the
								 * wire only (messages give attname) */
	int			nimages;		/* hidden key image columns, after the
								 * live ones on the wire */
	int		   *image_columns;	/* [nimages]: the column each images */
	StringInfoData image_buf;	/* a row's images */
	Oid			userid;			/* whose user mapping: the tserver is reached as */
	int			encoding;		/* the database encoding text is verified in */
	TcopyTableOptions options;

	/* what a failing row's description may show (tcopy_report_null_violation) */
	Oid			root_relid;		/* the partitioned table rows were routed
								 * through, whose columns it shows; or
								 * InvalidOid: the table's own */
	Bitmapset  *inserted_cols;	/* columns the statement gave values for, as
								 * RangeTblEntry.insertedCols, in the root's
								 * attnums when routed */
} TcopyRelCodec;

/*
 * Build the codec of a tcopy foreign table (in CurrentMemoryContext), to
 * reach its tserver with the user mapping of userid.
 */
extern TcopyRelCodec *tcopy_rel_codec(Relation rel, Oid userid);

/*
 * Tell the codec which columns the statement gave values for (insertedCols,
 * of root_relid when rows are routed through that partitioned table): a
 * failing row's description shows those and the columns the user may
 * read, as Postgres' own does.
 */
extern void tcopy_codec_set_inserted_cols(TcopyRelCodec *codec, Oid root_relid,
										  Bitmapset *inserted_cols);

/*
 * A row being encoded: a TcWireRow and the arrays it points to, sized for
 * the table's columns and reused row after row.  Blobs point at memory of
 * the caller's (datums, COPY's fields), valid until the row is added to a
 * batch, which copies them.
 */
typedef struct TcopyRowBuf
{
	TcWireRow	wire;
	int64_t    *ints;
	double	   *floats;
	TcWireBlob *blobs;
	uint32_t   *nulls;
	uint8	   *scratch;		/* 8 bytes a column: send formats built here */
} TcopyRowBuf;

extern void tcopy_row_buf_init(TcopyRowBuf *row, int ncolumns);

static inline void
tcopy_row_buf_clear(TcopyRowBuf *row)
{
	row->wire.n_ints = row->wire.n_floats = row->wire.n_blobs = row->wire.n_nulls = 0;
}

/* Append column c's non-NULL value to row. */
extern void tcopy_encode_datum(TcopyRelCodec *codec, int c, Datum value,
							   TcopyRowBuf *row);

/* Append the key images of the row's values (keys.c). */
extern void tcopy_encode_images(TcopyRelCodec *codec, TcopyRowBuf *row);

/*
 * Raise Postgres' error for stored text not valid in the database encoding,
 * with a context naming the column.
 */
extern void tcopy_report_invalid_text(const char *attname, const char *relname,
									  int encoding, const uint8 *data,
									  size_t len) pg_attribute_noreturn();

/*
 * Fill row with the values of one tuple (values/nulls indexed by attnum -
 * 1).  Raises Postgres' NOT NULL error for a NULL in a NOT NULL column.
 */
extern void tcopy_encode_row(TcopyRelCodec *codec, Datum *values, bool *nulls,
							 TcopyRowBuf *row);

/* Raise Postgres' NOT NULL error for column c of the tuple values/nulls. */
extern void tcopy_report_null_violation(TcopyRelCodec *codec, int c,
										Datum *values, bool *nulls) pg_attribute_noreturn();

/*
 * Turn a wire row of a scan projecting the wire columns proj[nproj] into
 * values/nulls indexed by attnum - 1 (other attributes are set NULL).
 * Memory comes from CurrentMemoryContext.
 */
extern void tcopy_decode_row(TcopyRelCodec *codec, const int *proj, int nproj,
							 const Tcopy__Row *row, Datum *values, bool *nulls);

/* in batch.c: write batches, encoded by batch_wire.c or batch_protobuf.c */

/* Bytes of a frame kept for a batch's header and the rows' framing. */
#define TCOPY_BATCH_HEADER_ROOM	64
typedef struct TcopyBatch
{
	TcopyEncoder encoder;
	Tcopy__WriteKind kind;		/* what its rows do: insert, update, delete */
	size_t		nrows;
	size_t		payload_bytes;	/* approximate bytes of row data so far */
	TcBuf		packed;			/* reused output buffer */
	const uint8 *send;			/* after tcopy_batch_pack: the bytes to send */
	size_t		send_len;

	/* TCOPY_ENCODER_PROTOBUF (batch_protobuf.c) */
	TcopyAllocMode mode;
	TcArena		arena;			/* TCOPY_ALLOC_ARENA */
	void	  **mallocs;		/* TCOPY_ALLOC_MALLOC: what to free */
	size_t		nmallocs;
	size_t		mallocs_cap;
	Tcopy__WriteBatch msg;		/* rows point into the arena or mallocs */
	size_t		rows_cap;		/* capacity of msg.rows (pooled in arena mode) */
} TcopyBatch;

extern void tcopy_batch_init(TcopyBatch *batch, TcopyEncoder encoder, TcopyAllocMode mode);
/* Pack the batch (seq, table id set): batch->send, batch->send_len. */
extern void tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id);
/* Forget the rows (arena reset, or every malloc freed). */
extern void tcopy_batch_reset(TcopyBatch *batch);
extern void tcopy_batch_free(TcopyBatch *batch);
extern void tcopy_batch_out_of_memory(void) pg_attribute_noreturn();

/* in batch_wire.c: the wire encoder; false when out of memory */
extern bool tcopy_wire_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound);
extern void tcopy_wire_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id);

/* in batch_protobuf.c: the protobuf encoder; false when out of memory */
extern void tcopy_protobuf_batch_init(TcopyBatch *batch, TcopyAllocMode mode);
extern bool tcopy_protobuf_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound);
extern size_t tcopy_protobuf_batch_packed_size(TcopyBatch *batch, uint64 seq,
											   uint32 table_id);
extern bool tcopy_protobuf_batch_pack(TcopyBatch *batch, size_t size);
extern void tcopy_protobuf_batch_reset(TcopyBatch *batch);
extern void tcopy_protobuf_batch_free(TcopyBatch *batch);

/*
 * Append row (its blobs copied) to the batch; bound is tc_wire_row_bound's
 * for it.  Called per row, so inline: the encoder is chosen by a branch,
 * not a call through a pointer.
 */
static inline void
tcopy_batch_add(TcopyBatch *batch, const TcWireRow *row, size_t bound)
{
	bool		added;

	if (likely(batch->encoder == TCOPY_ENCODER_WIRE))
		added = tcopy_wire_batch_add(batch, row, bound);
	else
		added = tcopy_protobuf_batch_add(batch, row, bound);
	if (unlikely(!added))
		tcopy_batch_out_of_memory();
	batch->nrows++;
}

/* in row_lines.c: which COPY line each row of a write session came from */

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
	List	   *written_tables; /* names (char *) of the tserver tables sent
								 * rows in this transaction */
	List	   *op_tables;		/* names of those truncated in it */
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
/* Close conn's client (a session that had sent batches is then lost). */
extern void tcopy_connection_close(TcopyConnection *conn);
/* A call on conn's client failed: close it and raise the failure. */
extern void tcopy_connection_fail(TcopyConnection *conn,
								  const char *what) pg_attribute_noreturn();

/* in row_lines.c (TcopyLineRun is above) */

/* Forget the session's lines: a session begins. */
extern void tcopy_lines_reset(TcopyConnection *conn);
/*
 * Before a batch of relname's nrows rows is sent: its runs (rows 0-based in
 * the batch), or NULL when they are not known.
 */
extern void tcopy_lines_add_batch(TcopyConnection *conn, const char *relname,
								  const TcopyLineRun *runs, int nruns, uint64 nrows);
/* The COPY and line of the session's row (1-based); false when not known. */
extern bool tcopy_lines_find(const TcopyConnection *conn, uint64 row,
							 const char **relname, uint64 *line);

/* in duplicate_key.c: a duplicate key under on_conflict 'error' */

/*
 * conn's client failed with ERROR_DUPLICATE_KEY (message its text): close
 * it and raise Postgres' unique_violation.
 */
extern void tcopy_report_duplicate_key(TcopyConnection *conn,
									   const char *message) pg_attribute_noreturn();
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

/* Raise a client failure as a Postgres ERROR (SQLSTATE from the code). */
extern void tcopy_report_client_error(TcClient *client, const char *address,
									  const char *what) pg_attribute_noreturn();

/* in records.c: prepared sessions' global ids and their records */
#define TCOPY_SCHEMA		"tcopy"

/* One record, as read with one snapshot. */
typedef struct TcopyRecord
{
	char		gid[TC_GID_MAX + 1];	/* hash key */
	Oid			server_id;
	Oid			user_id;
	ItemPointerData tid;
	bool		deleted;		/* deleted by this recovery */
} TcopyRecord;

/* The prefix of every gid of this database: tcopy:<sysid>:<database oid>: */
extern void tcopy_gid_prefix(char *buf, size_t len);
/* The gid of the session of transaction fxid on serverid for userid. */
extern void tcopy_gid_make(char *buf, size_t len, FullTransactionId fxid,
						   Oid serverid, Oid userid);
/* The xid and the user of a gid of this database; false: not one of tcopy's. */
extern bool tcopy_gid_parse(const char *gid, FullTransactionId *fxid, Oid *userid);
/* tcopy.prepared_session_records; an ERROR when missing unless missing_ok. */
extern Oid	tcopy_records_relid(bool missing_ok);
/* Record a prepared session in the current transaction. */
extern void tcopy_records_insert(Relation rel, const char *gid, Oid serverid,
								 Oid userid, FullTransactionId fxid);
/* The records visible to a snapshot taken now, by gid (TcopyRecord). */
extern HTAB *tcopy_records_read_now(Relation rel);
/* Delete the record of gid in records (as read before), if any. */
extern void tcopy_records_forget(Relation rel, HTAB *records, const char *gid);

/* in recovery.c: resolving the prepared sessions nobody finished */

/* How long a resolve (or recovery's other calls) waits for a tserver. */
#define TCOPY_RESOLVE_TIMEOUT_MS	30000

/* Resolve the database's prepared sessions nobody finished; how many. */
extern int	tcopy_recover_database(int elevel);

/* in recovery_worker.c: the background worker that runs recovery */
extern void TcopyRecoveryWorkerInit(void);

/* in xact.c: write sessions, committed and aborted with the transaction */
extern void TcopyXactInit(void);

/*
 * The cached write connection for (options->serverid, userid), connected
 * (and reconnected after a failure) as needed, with a write session begun
 * in the current transaction; the session commits and aborts with the
 * transaction.  NULL client for null:.
 */
extern TcopyConnection *tcopy_xact_write_connection(const TcopyTableOptions *options,
													Oid userid);
/* Send a packed batch; the session numbers it (seq). */
/* One table's on_conflict in a write session (xact.c). */
typedef struct TcopyTablePolicy
{
	uint32		table_id;
	TcopyOnConflict policy;
} TcopyTablePolicy;

/*
 * Set the session's on_conflict for table_id (of relname, for messages)
 * before its first rows; an ERROR if the transaction wrote to it with
 * another.
 */
extern void tcopy_xact_set_on_conflict(TcopyConnection *conn, uint32 table_id,
									   TcopyOnConflict policy, const char *relname);
extern void tcopy_xact_send(TcopyConnection *conn, TcopyBatch *batch,
							uint32 table_id, uint64 nrows);
/*
 * Whether this transaction has written rows to the tserver table of
 * options (address and table_name), whichever foreign table it wrote
 * through: reads then must fail.
 */
extern bool tcopy_xact_wrote_table(const TcopyTableOptions *options);
extern uint64 tcopy_xact_modify(TcopyConnection *conn, Tcopy__Modify *request,
								const char *range_message);
extern bool tcopy_xact_session_to_read(const char *relname, const TcopyTableOptions *options,
									   Oid userid, uint64 *session_id, const uint8 **key,
									   size_t *keylen);
/* Stage a TRUNCATE or DROP of a table in the transaction's write session. */
extern void tcopy_xact_table_op(const TcopyTableOptions *options, Oid userid,
								bool track, Tcopy__TableOpKind op, uint32 table_id);
/* Whether this transaction staged a TRUNCATE of the tserver table of options. */
extern bool tcopy_xact_staged_op_on(const TcopyTableOptions *options);

/* A load label was claimed in conn's session: it has something to publish. */
extern void tcopy_xact_note_claim(TcopyConnection *conn);

/* in load_id.c: COPY ... (load_id 'label'), loads that can be re-run */

/* A label must have 1 to TC_LABEL_MAX bytes; ERROR otherwise. */
extern void tcopy_check_label(const char *label);
/*
 * Claim load_id for rel in the transaction's write session: true when the
 * COPY is to load its rows; false (after a NOTICE) when the label was
 * published, or claimed in this transaction, already.  Waits while another
 * transaction holds it; an ERROR while a prepared session left by a crash
 * does.
 */
extern bool tcopy_load_id_claim(Relation rel, const char *load_id);

/* in xact_drop.c: DROPs of tcopy tables, staged at pre-commit */

/* Drop the tserver's table when the transaction commits (a DROP of it). */
extern void tcopy_xact_drop_at_commit(const TcopyTableOptions *options, Oid userid,
									  bool has_mapping, const char *relname);
/* Whether the transaction drops the tserver table of options (address, name). */
extern bool tcopy_xact_drops_table(const TcopyTableOptions *options);
/* How xact.c stages a table operation: tcopy_xact_table_op's signature. */
typedef void (*TcopyTableOpFn) (const TcopyTableOptions *options, Oid userid, bool track,
								Tcopy__TableOpKind op, uint32 table_id);
/* Pre-commit: stage the pending DROPs in the write sessions through stage. */
extern void tcopy_stage_pending_drops(TcopyTableOpFn stage);
/* Whether the transaction has DROPs not yet staged. */
extern bool tcopy_xact_drops_pending(void);
/* The end of the transaction: forget its DROPs. */
extern void tcopy_xact_drops_reset(void);
/* A subtransaction ends: forget its DROPs if aborted, else pass them up. */
extern void tcopy_xact_drops_at_subxact_end(int level, bool aborted);

/* in writer.c: rows -> batches -> connection, shared by COPY and INSERT */
typedef struct TcopyWriter
{
	TcopyRelCodec *codec;
	TcopyConnection *conn;
	uint32		table_id;
	TcopyBatch	batch;
	TcopyRowBuf row;			/* the row being encoded */
	int			batch_rows;
	int			batch_bytes;

	/* COPY lines (row_lines.c): set line before each row is added */
	const char *line_relname;	/* the COPY's table, for a CONTEXT */
	uint64		line;			/* the row's COPY line; 0: none (INSERT) */
	uint64		next_line;		/* the line that goes on the batch's last run */
	TcopyLineRun *runs;			/* [nruns] the batch's, rows 0-based in it */
	int			nruns;
	int			runs_cap;
	bool		runs_lost;		/* more than TCOPY_LINE_RUNS_MAX in the batch */

	/* a partition a COPY routes rows to (copy_route.c) */
	bool		routed;			/* the COPY has seen it */
	struct TcopyFieldTarget *route_target;	/* the raw fields' target, or NULL */

	/* a parallel COPY's worker: batches go here, not to a tserver */
	void		(*sink) (struct TcopyWriter *writer);
} TcopyWriter;

extern TcopyWriter *tcopy_writer_begin(TcopyRelCodec *codec);
extern TcopyWriter *tcopy_writer_begin_detached(TcopyRelCodec *codec,
												void (*sink) (TcopyWriter *writer));
/* Send the batch built so far. */
extern void tcopy_writer_flush(TcopyWriter *writer);
/* Send a batch of rows a parallel COPY's worker encoded. */
extern void tcopy_writer_send_encoded(TcopyWriter *writer, const char *rows, size_t len,
									  uint32 nrows, const TcopyLineRun *runs, int nruns);
extern void tcopy_writer_add(TcopyWriter *writer, Datum *values, bool *nulls);
extern void tcopy_writer_set_kind(TcopyWriter *writer, Tcopy__WriteKind kind);
/* Add writer->row, filled by the caller. */
extern void tcopy_writer_add_row(TcopyWriter *writer);
/* Send what is left; the rows commit with the transaction. */
extern void tcopy_writer_finish(TcopyWriter *writer);
extern void tcopy_writer_free(TcopyWriter *writer);

/* in fdw.c: the handler, and planning */
extern Datum tcopy_fdw_handler(PG_FUNCTION_ARGS);
/* Whether relid is a foreign table served by tcopy's handler. */
extern bool tcopy_relation_is_tcopy_table(Oid relid);
/* Whether serverid is a server of a wrapper with tcopy's handler. */
extern bool tcopy_server_is_tcopy(Oid serverid);

/* Indexes in ForeignScan.fdw_private. */
enum TcopyScanPrivate
{
	TCOPY_PRIV_ALL_COLUMNS,		/* Boolean: every column is needed */
	TCOPY_PRIV_ATTNUMS,			/* IntList: attnums needed, ascending */
	TCOPY_PRIV_BOUNDS,			/* List of (Integer attnum, Integer btree
								 * strategy, Const or PARAM_EXTERN Param of
								 * int2/4/8): the quals "attnum strategy
								 * value" */
	TCOPY_PRIV_ASSIGNMENTS		/* a direct modify's only (fdw_direct.c):
								 * List of (Integer attnum, Integer
								 * AssignOp, Const value) */
};

/* Indexes in one TCOPY_PRIV_BOUNDS item. */
enum TcopyBoundPrivate
{
	TCOPY_BOUND_ATTNUM,
	TCOPY_BOUND_STRATEGY,
	TCOPY_BOUND_VALUE
};

/* in fdw_scan.c: the scan callbacks */
extern void tcopyBeginForeignScan(ForeignScanState *node, int eflags);
extern TupleTableSlot *tcopyIterateForeignScan(ForeignScanState *node);
extern void tcopyReScanForeignScan(ForeignScanState *node);
extern void tcopyEndForeignScan(ForeignScanState *node);
extern void tcopyExplainForeignScan(ForeignScanState *node, struct ExplainState *es);
/* Refuse to read rel in the transaction that wrote, truncated or dropped it. */
extern void tcopy_scan_check_visible(Relation rel, const TcopyTableOptions *options);

/*
 * in fdw_estimate.c: the tserver's estimate of rel's rows and stored bytes,
 * asked as userid once per transaction; false when it gives none
 */
extern bool tcopy_table_estimate(Relation rel, Oid userid, double *rows,
								 double *bytes);

/* in fdw_analyze.c: ANALYZE, a sample of the rows of a scan */
extern bool tcopyAnalyzeForeignTable(Relation relation,
									 AcquireSampleRowsFunc *func,
									 BlockNumber *totalpages);

/* in fdw_modify.c: the insert and truncate callbacks */
extern int	tcopyIsForeignRelUpdatable(Relation rel);
extern void tcopyAddForeignUpdateTargets(PlannerInfo *root, Index rtindex,
										 RangeTblEntry *target_rte,
										 Relation target_relation);
extern TupleTableSlot *tcopyExecForeignUpdate(EState *estate, ResultRelInfo *resultRelInfo,
											  TupleTableSlot *slot, TupleTableSlot *planSlot);
extern TupleTableSlot *tcopyExecForeignDelete(EState *estate, ResultRelInfo *resultRelInfo,
											  TupleTableSlot *slot, TupleTableSlot *planSlot);
/* The writer of a partition that tuple routing opened (BeginForeignInsert). */
extern TcopyWriter *tcopy_insert_writer(ResultRelInfo *resultRelInfo);
/* COPY's on_conflict option, for the partitions copy_route.c opens; else NULL */
extern const TcopyOnConflict *tcopy_insert_on_conflict;

/* in key_range.c: one end of a key range on the sole integer key column */
typedef struct TcopyKeyBound
{
	bool		present;
	bool		inclusive;
	int64		value;
} TcopyKeyBound;

/* The key range a scan or a direct modify reads. */
typedef struct TcopyKeyRange
{
	AttrNumber	key_attnum;		/* bounded column; 0 when no bound */
	TcopyKeyBound lower;
	TcopyKeyBound upper;
	bool		empty;			/* bounds contradict: no rows */
} TcopyKeyRange;

/* in fdw_direct.c: UPDATE and DELETE done by the tserver */
extern bool tcopyPlanDirectModify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
								  int subplan_index);
extern void tcopyBeginDirectModify(ForeignScanState *node, int eflags);
extern TupleTableSlot *tcopyIterateDirectModify(ForeignScanState *node);
extern void tcopyEndDirectModify(ForeignScanState *node);
extern void tcopyExplainDirectModify(ForeignScanState *node, struct ExplainState *es);

/* in fdw.c: a clause that bounds a column by a constant */
extern AttrNumber tcopy_clause_key_bound(Index relid, Expr *clause, List **bounds);
/* The range of the planner's bounds (TCOPY_PRIV_BOUNDS) on codec's table. */
extern void tcopy_key_range(TcopyRelCodec *codec, List *bounds, ExprContext *econtext,
							TcopyKeyRange *range);
/* The int64 value of an int2, int4 or int8 datum. */
extern int64 tcopy_int64_of(Oid type, Datum value);
/* A bound as the wire carries it. */
extern Tcopy__KeyBound *tcopy_make_key_bound(const TcopyKeyBound *bound);
extern void tcopy_explain_key_range(Relation rel, const TcopyKeyRange *range,
									struct ExplainState *es);

/* in row_locks.c: what an UPDATE or DELETE locks before it reads */
extern void tcopy_lock_key(Oid relid, int64 key);
extern void tcopy_lock_table_rows(Oid relid);
extern void tcopy_lock_range(TcopyRelCodec *codec, const TcopyKeyRange *range);
extern List *tcopyPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
									Index resultRelation, int subplan_index);
extern void tcopyBeginForeignModify(ModifyTableState *mtstate,
									ResultRelInfo *resultRelInfo,
									List *fdw_private, int subplan_index,
									int eflags);
extern void tcopyBeginForeignInsert(ModifyTableState *mtstate,
									ResultRelInfo *resultRelInfo);
extern TupleTableSlot *tcopyExecForeignInsert(EState *estate,
											  ResultRelInfo *resultRelInfo,
											  TupleTableSlot *slot,
											  TupleTableSlot *planSlot);
extern TupleTableSlot **tcopyExecForeignBatchInsert(EState *estate,
													ResultRelInfo *resultRelInfo,
													TupleTableSlot **slots,
													TupleTableSlot **planSlots,
													int *numSlots);
extern int	tcopyGetForeignModifyBatchSize(ResultRelInfo *resultRelInfo);
extern void tcopyEndForeignModify(EState *estate, ResultRelInfo *resultRelInfo);
extern void tcopyEndForeignInsert(EState *estate, ResultRelInfo *resultRelInfo);
extern void tcopyExecForeignTruncate(List *rels, DropBehavior behavior,
									 bool restart_seqs);

/* in hook.c: the utility hook, dispatching to copy.c and rename.c */
extern void TcopyHookInit(void);

/* in truncated.c: tables truncated in the transaction, for COPY FREEZE */
extern void TcopyTruncatedInit(void);
extern void tcopy_note_truncated(Oid relid);
extern bool tcopy_truncated_in_subxact(Oid relid);

/* in copy.c: COPY FROM a tcopy table in place of DoCopy */
struct CopyStmt;
struct QueryEnvironment;
/* false when the statement is not one tcopy takes: Postgres runs it */
extern bool tcopy_copy_from(const struct CopyStmt *stmt, const char *query_string,
							struct QueryEnvironment *query_env, uint64 *processed);
/* Whether rel has nothing that needs Postgres' COPY: triggers, generated columns. */
extern bool tcopy_relation_is_accelerable(Relation rel);

/* in copy_source.c: a COPY's input as bytes, for a parallel COPY's leader */
struct ParseState;
struct CopyFromStateData;
extern int	tcopy_source_read(struct CopyFromStateData *src, char *buf, int maxread);
extern bool tcopy_source_ready(struct CopyFromStateData *src);
extern pgsocket tcopy_source_socket(struct CopyFromStateData *src);
extern void tcopy_source_drain(struct CopyFromStateData *src);
extern struct CopyFromStateData *tcopy_source_replay(struct ParseState *pstate, Relation rel,
													 struct CopyFromStateData *src,
													 List *attlist, List *options,
													 const char *prefix, size_t len);

/* in copy_chunks.c: where a parallel COPY's input may be cut */
typedef struct TcopyChunkScan
{
	char		format;			/* 't' text, 'c' csv, 'b' binary */
	char		quote;			/* csv */
	char		escape;			/* csv; '\0' when it is the quote */
	bool		crnl;			/* lines end in "\r\n" */
	bool		stop_at_marker; /* text from a client: "\." ends the input */
	uint64		lines;			/* the reader's lines in what was scanned */
	bool		marker;			/* a row held "\.": the cut is the last */

	/* between calls */
	bool		backslash;		/* text: a backslash quotes the next byte */
	bool		in_quote;		/* csv */
	bool		past_first_row; /* csv: the line ends are known */
	bool		last_was_esc;	/* csv */
	bool		bin_done;		/* binary: past the trailer, or garbage */
	int			bin_need;		/* binary: 2 (a count) or 4 (a length) */
	int			bin_have;		/* binary: of its bytes in bin_int */
	uint8		bin_int[4];
	int			bin_fields;		/* binary: of the row, still to come */
	uint64		bin_skip;		/* binary: bytes of a field still to come */
} TcopyChunkScan;

extern void tcopy_chunk_scan_init(TcopyChunkScan *scan, char format, char quote,
								  char escape, bool crnl);
extern size_t tcopy_chunk_scan(TcopyChunkScan *scan, const char *buf, size_t len,
							   size_t min, bool *cut);

/* in copy_parallel.c: a COPY parsed by parallel workers */
extern int	tcopy_copy_workers;	/* tcopy.copy_workers */
extern int	tcopy_copy_parallel_threshold_kb;	/* tcopy.copy_parallel_threshold */
extern int	tcopy_copy_chunk_bytes; /* tcopy.copy_chunk_bytes */

typedef enum TcopyParallelResult
{
	TCOPY_PARALLEL_NOT_TRIED,	/* serial: src untouched */
	TCOPY_PARALLEL_SERIAL,		/* serial after all: *replay reads the input */
	TCOPY_PARALLEL_DONE			/* loaded: *processed rows */
} TcopyParallelResult;

/*
 * In a parallel COPY's worker (copy_worker.c): where the writers that
 * routing opens send their batches; NULL elsewhere.
 */
extern void (*tcopy_parallel_sink) (TcopyWriter *writer);

/* The value of the COPY's "workers" option, checked. */
extern int	tcopy_copy_workers_of(DefElem *def);

/*
 * Load src's rows into rel with workers parallel workers (copy.c has
 * checked the statement): through writer, or, rel being partitioned (writer
 * NULL), through writers of its partitions made here; on_conflict is the
 * COPY's option or NULL.  See TcopyParallelResult.
 */
extern TcopyParallelResult tcopy_copy_parallel(struct ParseState *pstate, Relation rel,
											   struct CopyFromStateData *src,
											   List *options, List *attlist, List *where,
											   TcopyWriter *writer,
											   const TcopyOnConflict *on_conflict,
											   int workers,
											   struct CopyFromStateData **replay,
											   uint64 *processed);

/* in copy_bad_rows.c: ON_ERROR, LOG_VERBOSITY, REJECT_LIMIT, reject_table */
typedef enum TcopyLogVerbosity
{
	TCOPY_LOG_VERBOSITY_SILENT = -1,	/* Postgres 18's values */
	TCOPY_LOG_VERBOSITY_DEFAULT = 0,
	TCOPY_LOG_VERBOSITY_VERBOSE
} TcopyLogVerbosity;

typedef struct TcopyBadRows
{
	bool		ignore;			/* ON_ERROR ignore */
	TcopyLogVerbosity verbosity;
	int64		reject_limit;	/* REJECT_LIMIT; 0: none */
	Oid			reject_relid;	/* reject_table; InvalidOid: none */
	Oid			relid;			/* the COPY's target */
	bool	   *skippable;		/* [natts]: a field's error may be skipped */
	uint32		holdoff;		/* InterruptHoldoffCount outside the row */
	uint64		num_skipped;
} TcopyBadRows;

struct ParseState;
struct ErrorData;
struct CopyFromStateData;

/*
 * Take ON_ERROR, LOG_VERBOSITY, REJECT_LIMIT and reject_table out of a COPY's
 * options, checked as Postgres 18 checks them, into bad_rows; returns the
 * other options, for BeginCopyFrom.
 */
extern List *tcopy_bad_rows_options(struct ParseState *pstate, List *options,
									TcopyBadRows *bad_rows);
/* Which of rel's columns may have their conversion errors skipped. */
extern void tcopy_bad_rows_begin(TcopyBadRows *bad_rows, Relation rel);
/* Whether edata, caught while reading a row of cstate, may be swallowed. */
extern bool tcopy_bad_row_skippable(TcopyBadRows *bad_rows,
									struct CopyFromStateData *cstate,
									struct ErrorData *edata);
/*
 * Count a skipped row: its NOTICE when verbose, its reject table row, the
 * REJECT_LIMIT check.  Called with the COPY's CopyFromErrorCallback on top
 * of the error context stack.
 */
extern void tcopy_bad_row_skip(TcopyBadRows *bad_rows,
							   struct CopyFromStateData *cstate,
							   const char *attname, const char *attval,
							   struct ErrorData *edata);
/* The end-of-COPY NOTICE counting the skipped rows. */
extern void tcopy_bad_rows_end(TcopyBadRows *bad_rows);

/* in rename.c: before a statement renames or moves tcopy tables */
extern void tcopy_pin_before_rename(Node *parsetree);

/* in copy_fields.c: COPY's raw text fields straight to wire rows */
struct CopyFromStateData;
typedef struct TcopyFieldPlan TcopyFieldPlan;

/*
 * How to convert the fields of cstate's rows, for codec's table (NULL: only
 * for the targets of tcopy_field_target), or NULL when this COPY must go
 * through NextCopyFrom (binary format, defaults to compute, a column list
 * that leaves columns to defaults).
 */
extern TcopyFieldPlan *tcopy_field_plan(struct CopyFromStateData *cstate,
										TcopyRelCodec *codec);

/*
 * Read the next row into row, as NextCopyFrom would into Datums: the same
 * values, the same errors.  false at the end of the input.
 */
extern bool tcopy_next_row_fields(struct CopyFromStateData *cstate,
								  TcopyFieldPlan *plan, TcopyRowBuf *row);

/*
 * The same in two steps, for a COPY whose rows go to several tables (the
 * partitions of copy_route.c): read and convert the next row's fields (false
 * at the end of the input), then write them into row for one target.
 */
typedef struct TcopyFieldTarget TcopyFieldTarget;
struct AttrMap;
extern bool tcopy_read_fields(struct CopyFromStateData *cstate, TcopyFieldPlan *plan);
extern void tcopy_fields_to_row(struct CopyFromStateData *cstate, TcopyFieldPlan *plan,
								TcopyFieldTarget *target, TcopyRowBuf *row);

/*
 * A target for plan's rows: codec's table, whose attnums map gives (its
 * attnums[target attnum - 1] are the COPY table's; NULL: the same table).
 */
extern TcopyFieldTarget *tcopy_field_target(TcopyFieldPlan *plan, TcopyRelCodec *codec,
											const struct AttrMap *map);

/* The field of column m (attnum - 1 of the COPY's table), or -1: not copied. */
extern int	tcopy_field_of_att(TcopyFieldPlan *plan, int m);

/*
 * The Datum of field f (-1: a column not copied, NULL) in the row read
 * last, as NextCopyFrom gives it: for partition routing.
 */
extern Datum tcopy_field_datum(struct CopyFromStateData *cstate, TcopyFieldPlan *plan,
							   int f, bool *isnull);

/* in copy_route.c: COPY into a partitioned table of tcopy tables */
typedef struct TcopyRoute TcopyRoute;

/* Whether partitioned table relid's COPY is routed by tcopy (locks its tree). */
extern bool tcopy_route_takes(Oid relid);

/*
 * Set up routing of the rows of cstate, a COPY into partitioned table rel,
 * in estate (whose range table is the COPY's); raw_fields: read raw fields
 * where routing allows; on_conflict: COPY's option, or NULL.
 */
extern TcopyRoute *tcopy_route_begin(Relation rel, EState *estate,
									 struct CopyFromStateData *cstate, bool raw_fields,
									 const TcopyOnConflict *on_conflict);
/* The raw fields' plan to read rows with, or NULL: NextCopyFrom into a slot. */
extern TcopyFieldPlan *tcopy_route_field_plan(TcopyRoute *route);

/*
 * Route the row read last (the plan's fields, or slot's values from
 * NextCopyFrom; slot is the root's, and is overwritten) to its partition:
 * its writer, with the row encoded in writer->row.
 */
extern TcopyWriter *tcopy_route_row(TcopyRoute *route, struct CopyFromStateData *cstate,
									TupleTableSlot *slot);
/* Send every partition's batch built so far. */
extern void tcopy_route_flush(TcopyRoute *route);
/* Send every partition's last batch, and close them. */
extern void tcopy_route_end(TcopyRoute *route);

#endif							/* TCOPY_H */
