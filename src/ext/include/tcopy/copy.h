/*
 * tcopy/copy.h
 *		The COPY layer (src/ext/copy/): COPY FROM a tcopy table in place of
 *		Postgres' DoCopy (copy.c), its raw fields (copy_fields.c), bad rows
 *		(copy_bad_rows.c), partition routing (copy_route.c), the parallel
 *		COPY's leader and workers (copy_parallel.c, copy_worker.c,
 *		copy_source.c, copy_chunks.c) and load labels (load_id.c).  Below
 *		it: the FDW, transaction, connection, codec and catalog layers.
 */
#ifndef TCOPY_COPY_H
#define TCOPY_COPY_H

#include "postgres.h"

#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "port.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/transaction.h"

/* settings (registered in tcopy.c) */
extern bool tcopy_raw_fields;	/* tcopy.raw_fields */
extern int	tcopy_copy_batch_memory_kb; /* tcopy.copy_batch_memory: a routed
										 * COPY's batches together */

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

/* in copy.c: COPY FROM a tcopy table in place of DoCopy */
struct CopyStmt;
struct QueryEnvironment;
/* false when the statement is not one tcopy takes: Postgres runs it */
extern bool tcopy_copy_from(const struct CopyStmt *stmt, const char *query_string,
							struct QueryEnvironment *query_env, uint64 *processed);

/* in copy_source.c: a COPY's input as bytes, for a parallel COPY's leader */
struct ParseState;
struct CopyFromStateData;
extern int	tcopy_source_read(struct CopyFromStateData *src, char *buf, int maxread);
extern bool tcopy_source_ready(struct CopyFromStateData *src);
extern pgsocket tcopy_source_socket(struct CopyFromStateData *src);
extern void tcopy_source_drain(struct CopyFromStateData *src);
/* the replay's TcopyReaderUnread */
extern void tcopy_source_unread(const char *data, size_t len);
extern struct CopyFromStateData *tcopy_source_replay(struct ParseState *pstate, Relation rel,
													 struct CopyFromStateData *src,
													 List *attlist, List *options,
													 const char *prefix, size_t len);

/* in copy_reader.c: tcopy's COPY reader for text and csv */
extern bool tcopy_fast_reader;	/* tcopy.fast_reader */
/* in copy_simd.c: tcopy.simd, the best vector instructions to use */
typedef enum TcopySimd
{
	TCOPY_SIMD_AUTO,
	TCOPY_SIMD_AVX2,
	TCOPY_SIMD_SSE2,
	TCOPY_SIMD_SCALAR
} TcopySimd;
extern int	tcopy_simd;
typedef struct TcopyReader TcopyReader;
/* give bytes read back to the data source, to be read again first */
typedef void (*TcopyReaderUnread) (const char *data, size_t len);
/* NULL: Postgres' reader reads the COPY (why at DEBUG1) */
extern TcopyReader *tcopy_reader_begin(struct CopyFromStateData *cstate,
									   TcopyReaderUnread unread);
/* a worker's next chunk, after its cur_lineno and eol_type are set */
extern void tcopy_reader_chunk(TcopyReader *r);
/* NextCopyFromRawFields, by tcopy's reader (or Postgres', once it declined) */
extern bool tcopy_reader_next(TcopyReader *r, char ***fields, int *nfields);
/* the lengths of the fields returned last and whether their line is ASCII, or NULL (Postgres' reader's) */
extern const uint32 *tcopy_reader_lengths(TcopyReader *r, bool *ascii);
/* cstate->line_buf made the row read last, for reject_table */
extern void tcopy_reader_line_buf(TcopyReader *r);
/* the error context callback of a COPY read by arg, a TcopyReader */
extern void tcopy_reader_error_callback(void *arg);

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
extern bool tcopy_copy_streams;	/* tcopy.copy_streams */
extern bool tcopy_copy_map_files;	/* tcopy.copy_map_files */

typedef enum TcopyParallelResult
{
	TCOPY_PARALLEL_NOT_TRIED,	/* serial: src untouched */
	TCOPY_PARALLEL_SERIAL,		/* serial after all: *replay reads the input */
	TCOPY_PARALLEL_DONE			/* loaded: *processed rows */
} TcopyParallelResult;


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

/*
 * in copy_typed.c: a field of len bytes in the common spelling of its type,
 * to the Datum the input function would return; false: call that function
 */
struct pg_uuid_t;
extern bool tcopy_typed_bool(const char *s, int64 len, Datum *value);
extern bool tcopy_typed_date(const char *s, int64 len, Datum *value);
extern bool tcopy_typed_timestamp(const char *s, int64 len, Datum *value);
extern bool tcopy_typed_timestamptz(const char *s, int64 len, Datum *value);
extern bool tcopy_typed_uuid(const char *s, int64 len, struct pg_uuid_t *uuid);
extern bool tcopy_typed_float8(const char *s, int64 len, double *value);
extern bool tcopy_typed_float4(const char *s, int64 len, float *value);
/* numeric: numeric_send's bytes into buf, at most TCOPY_TYPED_NUMERIC_MAX */
#define TCOPY_TYPED_NUMERIC_MAX 48
extern bool tcopy_typed_numeric(const char *s, int64 len, int32 typmod, uint8 *buf,
								uint32 *buflen);

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
 * Read plan's rows with tcopy's reader (copy_reader.c), which reads cstate's
 * data source callback and gives bytes back through unread; returns it, or
 * NULL when Postgres' reader is to read them.
 */
extern TcopyReader *tcopy_field_plan_reader(TcopyFieldPlan *plan,
											struct CopyFromStateData *cstate,
											TcopyReaderUnread unread);

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

/* Whether rel has nothing that needs Postgres' COPY: triggers, generated columns. */
extern bool tcopy_relation_is_accelerable(Relation rel);

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

#endif							/* TCOPY_COPY_H */
