/*
 * tcopy/fdw.h
 *		The FDW layer (src/ext/fdw/): the handler, planning, scans,
 *		ANALYZE, row estimates, INSERT, UPDATE, DELETE and TRUNCATE, the
 *		direct modifies, key ranges and row locks.  Below it: the
 *		transaction, connection, codec and catalog layers.
 */
#ifndef TCOPY_FDW_H
#define TCOPY_FDW_H

#include "postgres.h"

#include "foreign/fdwapi.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "storage/lockdefs.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* in fdw.c: the handler, and planning */
/* in fdw_scan.c: the ExecutorStart hook that starts a statement's scans */
extern void TcopyScanInit(void);

extern Datum tcopy_fdw_handler(PG_FUNCTION_ARGS);

/*
 * What the planner found of a tcopy table's base rel (RelOptInfo.fdw_private,
 * fdw.c): the rows the tserver reads, those in the key range its quals
 * bound, whatever its filter then keeps.
 */
typedef struct TcopyRelInfo
{
	double		read_rows;
} TcopyRelInfo;

/*
 * The planner's cost of a row the tserver reads: about three times a
 * heap's cpu_tuple_cost, as a RocksDB iterator's step and the row's decode
 * take about three times a heap tuple's visit (docs/scans.md).
 */
#define TCOPY_READ_ROW_COST		0.03
/* in fdw_estimate.c: the rows the tserver reads for a scan of rel (TcopyRelInfo) */
extern double tcopy_rel_read_rows(RelOptInfo *rel);
/* The selectivity of the quals that bound the key range of a scan of baserel. */
extern Selectivity tcopy_key_range_selectivity(PlannerInfo *root, RelOptInfo *baserel,
											   Oid foreigntableid);

/* Indexes in ForeignScan.fdw_private. */
enum TcopyScanPrivate
{
	TCOPY_PRIV_ALL_COLUMNS,		/* Boolean: every column is needed */
	TCOPY_PRIV_ATTNUMS,			/* IntList: attnums needed, ascending */
	TCOPY_PRIV_BOUNDS,			/* List of (Integer attnum, Integer btree
								 * strategy, Const or PARAM_EXTERN Param of
								 * int2/4/8): the quals "attnum strategy
								 * value" */
	TCOPY_PRIV_FILTER,			/* List of the quals the tserver evaluates
								 * (pushdown_quals.c), NIL: none */
	TCOPY_PRIV_UPPER,			/* what an upper rel's scan pushes down
								 * (aggregates, sort, limit), NIL: a plain
								 * scan */
	TCOPY_PRIV_LIMIT,			/* Integer: the rows the tserver may stop
								 * after (pushdown_order.c), 0: all */
	TCOPY_PRIV_REVERSE,			/* Boolean: read the key range backward
								 * (ORDER BY the key DESC) */
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

/* in fdw_scan.c: a parallel scan's DSM (fdw_parallel.c) */
extern Size tcopyEstimateDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt);
extern void tcopyInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
										  void *coordinate);
extern void tcopyReInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
											void *coordinate);
extern void tcopyInitializeWorkerForeignScan(ForeignScanState *node, shm_toc *toc,
											 void *coordinate);

/*
 * in fdw_parallel.c: parallel scans (docs/scans.md, "Parallel scans"): the
 * partial path, and the parts of the key range that the participants take
 * from the DSM, one at a time
 */
typedef struct TcopyParallelScan TcopyParallelScan;
struct TcopyKeyRange;
extern bool tcopyIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
										   RangeTblEntry *rte);
extern void tcopy_add_partial_path(PlannerInfo *root, RelOptInfo *baserel, double tuples,
								   Cost startup_cost, Cost run_cost, List *pathkeys);
extern TcopyParallelScan *tcopy_parallel_prepare(TcopyRelCodec *codec, EState *estate,
												 TcClient *client, uint32 table_id,
												 const struct TcopyKeyRange *range,
												 int nworkers);
extern Size tcopy_parallel_size(const TcopyParallelScan *plan);
extern void tcopy_parallel_publish(TcopyParallelScan *shared, const TcopyParallelScan *plan);
extern void tcopy_parallel_restart(TcopyParallelScan *shared);
extern bool tcopy_parallel_has_parts(const TcopyParallelScan *shared);
extern int	tcopy_parallel_take_part(TcopyParallelScan *shared);
extern bool tcopy_parallel_part_request(const TcopyParallelScan *shared, int part,
										Tcopy__Scan *request);

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

/* in partition_move.c: an UPDATE whose row leaves its partition */
extern bool tcopy_update_reads_partition_qual(Relation rel, Bitmapset *attnums);
extern void tcopy_move_row(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo,
						   TupleTableSlot *slot);

/*
 * in pushdown_quals.c: the quals the tserver evaluates exactly as Postgres
 * would (docs/scans.md#filters).  Planning decides, from the clause and
 * the column's type alone, what ships; at execution the shipped quals'
 * constants and parameters are evaluated and the filter built on the
 * codec's wire columns (palloc'ed in the current context; NULL: no quals).
 */
extern bool tcopy_qual_is_shippable(PlannerInfo *root, RelOptInfo *baserel, Expr *clause);
extern Tcopy__Expr *tcopy_filter_build(TcopyRelCodec *codec, List *quals, PlanState *ps);
/* The same, *shipped set to the quals the filter holds (those it could build). */
extern Tcopy__Expr *tcopy_filter_build_shipped(TcopyRelCodec *codec, List *quals,
											   PlanState *ps, List **shipped);
/* The quals less those a key range on key_attnum holds exactly. */
extern List *tcopy_filter_without_key_bounds(List *quals, AttrNumber key_attnum);
extern void tcopy_explain_filter(List *quals, PlanState *ps, List *ancestors,
								 struct ExplainState *es);

/*
 * in pushdown_order.c: the query's pathkeys when the tserver's key order
 * gives them, else NIL; the LIMIT a scan of baserel whose path has
 * pathkeys may push to the tserver, 0: none
 */
extern List *tcopy_key_order_pathkeys(PlannerInfo *root, RelOptInfo *baserel,
									  Oid foreigntableid);
/* Whether a path of these pathkeys (tcopy_key_order_pathkeys') reads backward. */
extern bool tcopy_pathkeys_reverse(List *pathkeys);
extern int64 tcopy_scan_limit(PlannerInfo *root, RelOptInfo *baserel, List *pathkeys);

/*
 * in pushdown_agg.c and agg_results.c: aggregates the tserver computes
 * (docs/scans.md#aggregates).  TCOPY_PRIV_UPPER of such a scan is
 * (Integer TCOPY_UPPER_AGGREGATE, Boolean partial); its fdw_scan_tlist
 * holds the grouping columns (Vars) and the Aggrefs.
 */
#define TCOPY_UPPER_AGGREGATE 1
/* a tserver's most groups, and columns to group by (ts_scan_agg.[ch]) */
#define TCOPY_AGG_MAX_GROUPS 1000000
#define TCOPY_AGG_MAX_GROUP_BY 32

/* The aggregates that ship, by what the tserver computes for them. */
typedef enum TcopyAggFn
{
	TCOPY_AGGFN_NONE,			/* does not ship */
	TCOPY_AGGFN_COUNT_STAR,
	TCOPY_AGGFN_COUNT,			/* count(column) */
	TCOPY_AGGFN_SUM_INT,		/* sum of int2 or int4: int8 */
	TCOPY_AGGFN_SUM_INT8,		/* numeric; its state is internal */
	TCOPY_AGGFN_AVG_INT,		/* avg of int2 or int4: numeric */
	TCOPY_AGGFN_AVG_INT8,		/* numeric; its state is internal */
	TCOPY_AGGFN_SUM_FLOAT4,
	TCOPY_AGGFN_SUM_FLOAT8,
	TCOPY_AGGFN_AVG_FLOAT,		/* of float4 or float8: float8 */
	TCOPY_AGGFN_MIN,			/* of int2/4/8, float4/8, date, timestamp(tz) */
	TCOPY_AGGFN_MAX
} TcopyAggFn;

typedef struct TcopyAggScan TcopyAggScan;

/* tcopy.pushdown_aggregates (registered in tcopy.c) */
extern bool tcopy_pushdown_aggregates;

extern void tcopyGetForeignUpperPaths(PlannerInfo *root, UpperRelationKind stage,
									  RelOptInfo *input_rel, RelOptInfo *output_rel,
									  void *extra);
/* The ForeignScan of a grouped relation whose path pushdown_agg.c offered. */
extern ForeignScan *tcopy_agg_plan(PlannerInfo *root, RelOptInfo *grouped_rel, List *tlist,
								   Plan *outer_plan);
/* What the tserver computes for aggregate function aggfnoid. */
extern TcopyAggFn tcopy_agg_classify(Oid aggfnoid);
/* Whether the tserver groups a column of type (and collation) exactly as Postgres. */
extern bool tcopy_agg_group_type_ok(Oid type, Oid collation);
/* Execution: the plan's aggregates, the request's fields, each group's output, EXPLAIN. */
extern TcopyAggScan *tcopy_agg_scan_begin(ForeignScan *fsplan, TcopyRelCodec *codec);
extern void tcopy_agg_scan_request(TcopyAggScan *agg, Tcopy__Scan *request);
extern void tcopy_agg_scan_store(TcopyAggScan *agg, const Tcopy__AggRow *row, Datum *values,
								 bool *isnull);
/* The one group of a scan without GROUP BY that read no table (false: grouped). */
extern bool tcopy_agg_scan_store_empty(TcopyAggScan *agg, Datum *values, bool *isnull);
extern void tcopy_agg_scan_explain(TcopyAggScan *agg, struct ExplainState *es);

/* in fdw.c: a clause that bounds a column by a constant */
extern AttrNumber tcopy_clause_key_bound(Index relid, Expr *clause, List **bounds);
/* The range of the planner's bounds (TCOPY_PRIV_BOUNDS) on codec's table. */
extern void tcopy_key_range(TcopyRelCodec *codec, List *bounds, ExprContext *econtext,
							TcopyKeyRange *range);
/* The int64 value of an int2, int4 or int8 datum. */
extern int64 tcopy_int64_of(Oid type, Datum value);
/* Whether range is one key of a table keyed on that one integer column. */
extern bool tcopy_key_range_is_one_key(TcopyRelCodec *codec, const TcopyKeyRange *range);
/*
 * The parts of the table (ssi.c) a scan of range reads: one key's part, none
 * for an empty range, else every part.
 */
extern uint64 tcopy_key_range_ssi_parts(TcopyRelCodec *codec, const TcopyKeyRange *range);
/* A bound as the wire carries it. */
extern Tcopy__KeyBound *tcopy_make_key_bound(const TcopyKeyBound *bound);
extern void tcopy_explain_key_range(Relation rel, const TcopyKeyRange *range,
									struct ExplainState *es);

/*
 * in fdw_point_read.c: a row read by its key, as committed now with the
 * transaction's writes over it, on a connection of the reader's own.
 */
typedef struct TcopyPointReader
{
	TcopyRelCodec *codec;
	TcopyScanClient conn;		/* not connected yet: client NULL */
	uint32		table_id;
	StringInfoData row;			/* the row read last, a copy */
	MemoryContextCallback close_callback;
} TcopyPointReader;

/*
 * The wire columns of codec's table but dropped ones (a scan's "every
 * column", in which a point read reads a row) into proj[ncolumns]: how many.
 */
extern int	tcopy_live_columns(TcopyRelCodec *codec, int *proj);
/* A reader of codec's table; closed when CurrentMemoryContext goes. */
extern void tcopy_point_reader_init(TcopyPointReader *reader, TcopyRelCodec *codec);
/*
 * Read the row of key (every live column, tcopy_live_columns): false when there is none.  Its packed
 * bytes at *row, *len (ScanBatch.packed), valid until the next read.
 */
extern bool tcopy_point_read(TcopyPointReader *reader, Tcopy__Row *key, uint8 **row,
							 size_t *len);
/* The same as of the snapshot the transaction of estate reads (REPEATABLE READ). */
extern bool tcopy_point_read_as_of(TcopyPointReader *reader, EState *estate, Tcopy__Row *key,
								   uint8 **row, size_t *len);
/* Done: the connection is kept idle for the next reader. */
extern void tcopy_point_reader_end(TcopyPointReader *reader);

/* in fdw_upsert.c: INSERT ... ON CONFLICT (key) DO NOTHING and DO UPDATE */
typedef struct TcopyUpsert TcopyUpsert;
/* The planner hook that lets an ON CONFLICT on the key through. */
extern void TcopyUpsertInit(void);
/* Refuse what an ON CONFLICT DO UPDATE of the result rti cannot do. */
extern void tcopy_upsert_check_plan(PlannerInfo *root, ModifyTable *plan, Index rti);
/* An INSERT's upsert state for codec's table, or NULL: no ON CONFLICT, or no key. */
extern TcopyUpsert *tcopy_upsert_begin(TcopyRelCodec *codec, ModifyTableState *mtstate);
extern void tcopy_upsert_end(TcopyUpsert *upsert);
/*
 * The row to write for slot, proposed: slot itself (*insert), the stored
 * row's new version (DO UPDATE), or NULL (skipped).
 */
extern TupleTableSlot *tcopy_upsert_row(TcopyUpsert *upsert, ResultRelInfo *resultRelInfo,
										ModifyTableState *mtstate, TupleTableSlot *slot,
										bool *insert);

/*
 * in fdw_row_marks.c: SELECT ... FOR UPDATE and the other strengths.  A
 * locking scan's rows, numbered for LockRows.
 */
typedef struct TcopyRowMarks TcopyRowMarks;
extern RowMarkType tcopyGetForeignRowMarkType(RangeTblEntry *rte, LockClauseStrength strength);
extern void tcopyRefetchForeignRow(EState *estate, ExecRowMark *erm, Datum rowid,
								   TupleTableSlot *slot, bool *updated);
/*
 * The rows of the scan of rti that LockRows locks, or NULL.  A table
 * without a key is locked whole here; *skip_all: it was locked (SKIP
 * LOCKED), the scan returns no rows.
 */
extern TcopyRowMarks *tcopy_row_marks_begin(TcopyRelCodec *codec, Relation rel, EState *estate,
											Index rti, bool *skip_all);
/* The scan returns slot (every live column), its packed bytes row[len]: number it. */
extern void tcopy_row_marks_note(TcopyRowMarks *marks, TupleTableSlot *slot, const uint8 *row,
								 size_t len);
/* The scan ends: its connection is kept idle. */
extern void tcopy_row_marks_end(TcopyRowMarks *marks);

/*
 * in row_locks.c: row locks in Postgres' lock manager.  The lock manager's
 * mode of a row lock of strength, as heapam.c takes it.
 */
extern LOCKMODE tcopy_row_lock_mode(LockClauseStrength strength);
/* The mode an UPDATE (of updated_cols, RTE offsets) or a DELETE locks its rows in. */
extern LOCKMODE tcopy_modify_lock_mode(TcopyRelCodec *codec, CmdType operation,
									   const Bitmapset *updated_cols);
/* Lock one key of an integer, waiting. */
extern void tcopy_lock_key(Oid relid, int64 key, LOCKMODE mode);
/* Lock every row of rel in mode, as policy says; false: skipped (SKIP LOCKED). */
extern bool tcopy_lock_table_rows(Relation rel, LOCKMODE mode, LockWaitPolicy policy);
/*
 * Lock the row of key (packed: its protobuf bytes) in mode, as policy says:
 * wait, fail with Postgres' NOWAIT error, or return false (SKIP LOCKED).
 */
extern bool tcopy_lock_row(Relation rel, const Tcopy__Row *key, const uint8 *packed,
						   size_t len, LOCKMODE mode, LockWaitPolicy policy);
/* What an UPDATE or DELETE of range locks before it reads, in mode. */
extern void tcopy_lock_range(TcopyRelCodec *codec, const TcopyKeyRange *range, LOCKMODE mode);
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

#endif							/* TCOPY_FDW_H */
