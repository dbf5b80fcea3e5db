/*
 * tcopy.h
 *		The tcopy extension's private interface: options, connections to
 *		tservers, the mapping of Postgres rows to wire rows, write batches,
 *		the FDW callbacks and the COPY hook.
 */
#ifndef TCOPY_H
#define TCOPY_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "tc_arena.h"
#include "tc_client.h"
#include "tc_frame.h"

/* tcopy.alloc_mode */
typedef enum TcopyAllocMode
{
	TCOPY_ALLOC_ARENA,			/* batch messages from one arena, reset per batch */
	TCOPY_ALLOC_MALLOC			/* malloc per object, free per batch (naive) */
} TcopyAllocMode;

/* in tcopy.c: GUCs */
extern bool tcopy_copy_hook_enabled;	/* tcopy.copy_hook */
extern int	tcopy_alloc_mode;	/* tcopy.alloc_mode */
extern int	tcopy_batch_rows;	/* tcopy.batch_rows: default rows per batch */
extern int	tcopy_batch_kb;		/* tcopy.batch_size: default KB per batch */
extern int	tcopy_window;		/* tcopy.batches_in_flight ("window" is an SQL keyword) */

/* in option.c */
typedef struct TcopyTableOptions
{
	char	   *address;		/* server: unix:PATH | tcp:HOST:PORT | null: */
	char	   *token;			/* user mapping; NULL when none */
	char	   *table_name;		/* the table's name on the tserver */
	List	   *key_attnums;	/* AttrNumbers of the key columns, in key order */
	int			batch_rows;		/* rows per batch */
	int			batch_bytes;	/* bytes per batch (approximate) */
} TcopyTableOptions;

/* All options of foreign table rel, resolved for the current user. */
extern void tcopy_get_table_options(Relation rel, TcopyTableOptions *options);

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
	TCOPY_CONV_SEND,			/* any other type: binary send / receive */
	TCOPY_CONV_IO				/* a type without them: text output / input */
} TcopyConv;

typedef struct TcopyColumnCodec
{
	AttrNumber	attnum;			/* in the relation (1-based) */
	Oid			typid;
	int32		typmod;
	TcopyConv	conv;
	Tcopy__Kind kind;
	bool		notnull;		/* NOT NULL: enforced before sending */
	FmgrInfo	out_fn;			/* SEND: typsend; IO: typoutput */
	FmgrInfo	in_fn;			/* SEND: typreceive; IO: typinput */
	Oid			typioparam;		/* for in_fn */
} TcopyColumnCodec;

typedef struct TcopyRelCodec
{
	Oid			relid;
	char	   *relname;		/* for messages */
	int			natts;			/* relation's attributes, dropped included */
	int			ncolumns;		/* live columns = wire columns */
	TcopyColumnCodec *columns;	/* [ncolumns], in attnum order */
	int		   *column_of_att;	/* [natts]: wire column of attnum-1, or -1 */
	Tcopy__Schema *schema;		/* the table's schema as sent to the tserver */
	TcopyTableOptions options;
} TcopyRelCodec;

/* Build the codec of a tcopy foreign table (in CurrentMemoryContext). */
extern TcopyRelCodec *tcopy_rel_codec(Relation rel);

/*
 * Fill row (its arrays allocated with alloc from batch) with the values of
 * one tuple (values/nulls indexed by attnum - 1).  Raises Postgres' NOT NULL
 * error for a NULL in a NOT NULL column.
 */
struct TcopyBatch;
extern void tcopy_encode_row(TcopyRelCodec *codec, Datum *values, bool *nulls,
							 Tcopy__Row *row, struct TcopyBatch *batch);

/*
 * Turn a wire row of a scan projecting the wire columns proj[nproj] into
 * values/nulls indexed by attnum - 1 (other attributes are set NULL).
 * Memory comes from CurrentMemoryContext.
 */
extern void tcopy_decode_row(TcopyRelCodec *codec, const int *proj, int nproj,
							 const Tcopy__Row *row, Datum *values, bool *nulls);

/* in batch.c: write batches */
typedef struct TcopyBatch
{
	TcopyAllocMode mode;
	TcArena		arena;			/* TCOPY_ALLOC_ARENA */
	void	  **mallocs;		/* TCOPY_ALLOC_MALLOC: what to free */
	size_t		nmallocs;
	size_t		mallocs_cap;
	Tcopy__WriteBatch msg;		/* rows point into the arena or mallocs */
	size_t		rows_cap;		/* capacity of msg.rows (pooled in arena mode) */
	size_t		payload_bytes;	/* approximate bytes of row data so far */
	TcBuf		packed;			/* reused output buffer */
} TcopyBatch;

extern void tcopy_batch_init(TcopyBatch *batch, TcopyAllocMode mode);
extern void *tcopy_batch_alloc(TcopyBatch *batch, size_t size);
/* A new, initialised row appended to the batch. */
extern Tcopy__Row *tcopy_batch_add_row(TcopyBatch *batch);
/* Pack the batch (seq, table id set) into batch->packed. */
extern void tcopy_batch_pack(TcopyBatch *batch, uint64 seq, uint32 table_id);
/* Forget the rows (arena reset, or every malloc freed). */
extern void tcopy_batch_reset(TcopyBatch *batch);
extern void tcopy_batch_free(TcopyBatch *batch);

/* in connection.c: connections, write sessions and transactions */
typedef struct TcopyConnection TcopyConnection;

extern void TcopyConnectionInit(void);

/*
 * The cached write connection for the table's server and the current user,
 * connected (and reconnected after a failure) as needed, with a write
 * session begun in the current transaction; the session commits at
 * pre-commit and aborts with the transaction.  NULL client for null:.
 */
extern TcopyConnection *tcopy_get_write_connection(TcopyRelCodec *codec);
/* The remote table id on this connection (opened with create and schema). */
extern uint32 tcopy_connection_table_id(TcopyConnection *conn, TcopyRelCodec *codec);
/* Send a packed batch; the connection numbers it (seq) in its session. */
extern void tcopy_connection_send(TcopyConnection *conn, TcopyBatch *batch,
								  uint32 table_id, uint64 nrows);
/* Whether this transaction has written to relid (reads then must fail). */
extern bool tcopy_xact_wrote_relation(Oid relid);

/* A fresh connection for a scan or a table operation; close it after. */
extern TcClient *tcopy_connect(TcopyRelCodec *codec);
extern void tcopy_disconnect(TcClient *client);

/* Raise a client failure as a Postgres ERROR (SQLSTATE from the code). */
extern void tcopy_report_client_error(TcClient *client, const char *address,
									  const char *what) pg_attribute_noreturn();

/* in writer.c: rows -> batches -> connection, shared by COPY and INSERT */
typedef struct TcopyWriter
{
	TcopyRelCodec *codec;
	TcopyConnection *conn;
	uint32		table_id;
	TcopyBatch	batch;
	int			batch_rows;
	int			batch_bytes;
} TcopyWriter;

extern TcopyWriter *tcopy_writer_begin(TcopyRelCodec *codec);
extern void tcopy_writer_add(TcopyWriter *writer, Datum *values, bool *nulls);
/* Send what is left; the rows commit with the transaction. */
extern void tcopy_writer_finish(TcopyWriter *writer);
extern void tcopy_writer_free(TcopyWriter *writer);

/* in fdw.c */
extern Datum tcopy_fdw_handler(PG_FUNCTION_ARGS);

/* in copy.c */
extern void TcopyCopyInit(void);

#endif							/* TCOPY_H */
