/*
 * alter_rewrite.c
 *		The rewrite of a tcopy table's rows into new storage, for an ALTER
 *		that changes how they are stored: ALTER COLUMN TYPE, a change of
 *		option key or key_form, ADD COLUMN of a serial or identity column
 *		or with a volatile default.
 *
 * As a heap rewrite makes a new relfilenode, the rows go to a new tserver
 * table, inside the transaction:
 *	- before the ALTER runs (tcopy_rewrite_read), the table is locked as the
 *	  ALTER would lock it and its rows, as the transaction sees them (its
 *	  own writes included, through its write session), are read with the
 *	  old definition into a tuplestore (memory bounded by work_mem, then
 *	  temp files);
 *	- after it ran (tcopy_rewrite_write), the table's option table_name
 *	  names a new generated tserver table (its dropped_positions go: the new
 *	  storage has only the live columns), each row is converted to the new
 *	  definition as a heap's ALTER COLUMN TYPE converts it (the column's
 *	  USING expression, which alter.c takes off the statement, else its
 *	  assignment cast; an added column's default, evaluated per row) and
 *	  written through the transaction's write session, and the old tserver
 *	  table is dropped at the commit, after the rows.
 * So the commit publishes the new rows and drops the old table at once;
 * a rollback, or a crash before the commit, leaves the old table and its
 * definition, and the new tserver table an orphan for tcopy.check_tables.
 * The rows are written with the table's on_conflict policy, the one the
 * transaction's later writes to the new tserver table must have too; keys
 * that collide under a new key fail the ALTER, as under a primary key:
 * under 'error' as the rows go, under 'ignore' or 'replace' by a count of
 * the rows the new table kept.  What an ALTER reads is kept in its
 * statement's TcopyAlterPending (commands.h), apart from an ALTER run
 * inside it (an event trigger's).
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/commands.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* A table read before the ALTER, to be written after it. */
typedef struct PendingRewrite
{
	Oid			relid;
	TupleDesc	old_desc;		/* the definition the rows were read with */
	Tuplestorestate *rows;		/* its rows, as old_desc */
	TcopyTableOptions old;		/* for the drop of the old tserver table */
	bool		key_changes;	/* the new key may make keys collide */
	List	   *usings;			/* TargetEntry: a column's USING, over the old row */
	double		nrows;
} PendingRewrite;

/* The scan of the old table, in the statement's snapshot of the tserver. */
typedef struct RewriteScan
{
	TcopyRelCodec *codec;
	EState	   *estate;			/* what snapshot.c keys the statement's reads on */
	TcopyScanClient conn;
	int		   *proj;
	int			nproj;
	bool		one_column;		/* the first live column only: to count the rows */
	bool		in_doubt_read;	/* sessions in doubt were published, once */
} RewriteScan;

/*
 * Start the scan of every live column; false when the tserver does not
 * know the table (no row was ever written).  A table the transaction
 * wrote is read through its write session, as fdw_scan.c reads it (an
 * earlier rewrite in the transaction wrote it, or an INSERT did).  A session in doubt that wrote
 * the table makes the tserver refuse a scan without a snapshot; the caller
 * then publishes what committed (tcopy_read_snapshot_in_doubt) and starts
 * again, as fdw_scan.c does.
 */
static bool
rewrite_scan_start(RewriteScan *scan)
{
	TcopyRelCodec *codec = scan->codec;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	TcClient   *client;
	uint32_t   *columns;
	uint32		table_id;
	const uint8 *key;
	size_t		keylen;

	(void) tcopy_scan_client_open(&scan->conn, codec->options.address, codec->options.token,
								  &codec->options.tls, false);
	client = scan->conn.client;
	if (tc_client_open_table(client, codec->options.table_name, codec->schema,
							 false, &table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			return false;
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not read foreign table \"%s\" to rewrite it",
										   codec->relname));
	}
	/* the rows as this transaction sees them: its own writes, then a snapshot */
	if (tcopy_xact_session_to_read(codec->relname, &codec->options, codec->userid,
								   &request.session_id, &key, &keylen))
	{
		request.session_key.data = (uint8_t *) key;
		request.session_key.len = keylen;
	}
	if (tcopy_read_snapshot(scan->estate, &codec->options, &request.snapshot_id, &key, &keylen))
	{
		request.snapshot_key.data = (uint8_t *) key;
		request.snapshot_key.len = keylen;
	}
	else
		request.refuse_in_doubt = true;
	columns = palloc(sizeof(uint32_t) * Max(codec->ncolumns, 1));
	scan->nproj = 0;
	for (int c = 0; c < codec->ncolumns; c++)
		if (codec->columns[c].conv != TCOPY_CONV_DROPPED)
		{
			columns[scan->nproj] = (uint32_t) c;
			scan->proj[scan->nproj++] = c;
			if (scan->one_column)
				break;
		}
	request.table_id = table_id;
	request.n_columns = scan->nproj;
	request.columns = columns;
	if (tc_client_scan_start(client, &request) < 0)
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not scan table \"%s\"", codec->options.table_name));
	pfree(columns);
	return true;
}

/*
 * Before an ALTER that changes how rel's rows are stored (key_changes: it
 * changes their key; usings: the target entries of the columns' USING
 * expressions, over the row as it is now): lock rel as the ALTER will,
 * and read its rows with the definition they were written with, into
 * statement's pending.
 */
void
tcopy_rewrite_read(TcopyAlterPending *statement, Relation rel, bool key_changes, List *usings)
{
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext oldcontext;
	MemoryContext row_cxt;
	PendingRewrite *pending;
	RewriteScan scan = {0};
	TupleTableSlot *slot;
	Datum	   *values;
	bool	   *nulls;
	bool		done = false;
	bool		started;

	/* tcopy_check_alter took the ALTER's own lock first: no commit slips in */
	Assert(CheckRelationLockedByMe(rel, AccessExclusiveLock, false));
	scan.codec = tcopy_rel_codec(rel, GetUserId());
	oldcontext = MemoryContextSwitchTo(statement->cxt);
	pending = palloc0(sizeof(PendingRewrite));
	pending->relid = RelationGetRelid(rel);
	pending->old_desc = CreateTupleDescCopy(desc);
	pending->rows = tuplestore_begin_heap(false, false, work_mem);
	pending->old = scan.codec->options;
	pending->old.address = pstrdup(scan.codec->options.address);
	pending->old.token = scan.codec->options.token ? pstrdup(scan.codec->options.token) : NULL;
	pending->old.tls.sslrootcert = scan.codec->options.tls.sslrootcert ?
		pstrdup(scan.codec->options.tls.sslrootcert) : NULL;
	pending->old.tls.sslcert = scan.codec->options.tls.sslcert ?
		pstrdup(scan.codec->options.tls.sslcert) : NULL;
	pending->old.tls.sslkey = scan.codec->options.tls.sslkey ?
		pstrdup(scan.codec->options.tls.sslkey) : NULL;
	pending->old.table_name = pstrdup(scan.codec->options.table_name);
	pending->old.key_attnums = NIL;
	pending->old.dropped_positions = NIL;
	pending->key_changes = key_changes;
	pending->usings = copyObject(usings);
	statement->rewrites = lappend(statement->rewrites, pending);
	MemoryContextSwitchTo(oldcontext);

	scan.estate = CreateExecutorState();
	scan.proj = palloc(sizeof(int) * Max(scan.codec->ncolumns, 1));
	values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	slot = MakeSingleTupleTableSlot(pending->old_desc, &TTSOpsVirtual);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "tcopy rewrite row",
									ALLOCSET_DEFAULT_SIZES);
	tcopy_scan_client_init(&scan.conn);
	started = rewrite_scan_start(&scan);
	done = !started;
	while (!done)
	{
		Tcopy__ScanBatch *batch;

		CHECK_FOR_INTERRUPTS();
		if (tc_client_scan_next(scan.conn.client, &batch) < 0)
		{
			if (tc_client_error_code(scan.conn.client) == TCOPY__ERROR_CODE__ERROR_IN_DOUBT &&
				!scan.in_doubt_read && pending->nrows == 0)
			{
				scan.in_doubt_read = true;
				tcopy_read_snapshot_in_doubt(scan.estate, &scan.codec->options);
				tcopy_scan_client_close(&scan.conn);
				done = !rewrite_scan_start(&scan);
				continue;
			}
			tcopy_report_client_error(scan.conn.client, scan.codec->options.address,
									  psprintf("could not scan table \"%s\"",
											   scan.codec->options.table_name));
		}
		done = batch->done;
		for (size_t r = 0; r < batch->n_rows; r++)
		{
			MemoryContextSwitchTo(row_cxt);
			tcopy_decode_row(scan.codec, scan.proj, scan.nproj, batch->rows[r], values, nulls);
			ExecClearTuple(slot);
			memcpy(slot->tts_values, values, sizeof(Datum) * desc->natts);
			memcpy(slot->tts_isnull, nulls, sizeof(bool) * desc->natts);
			ExecStoreVirtualTuple(slot);
			MemoryContextSwitchTo(statement->cxt);
			tuplestore_puttupleslot(pending->rows, slot);
			MemoryContextSwitchTo(oldcontext);
			MemoryContextReset(row_cxt);
			pending->nrows++;
		}
	}
	tcopy_scan_client_close(&scan.conn);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(row_cxt);
	FreeExecutorState(scan.estate);
}

/*
 * How attribute a of the new definition gets its value for a stored row:
 * NULL (a dropped column), the old attribute of that number unchanged,
 * or an expression over the old row (a cast, an added column's default).
 */
static ExprState *
column_expr(Relation rel, PendingRewrite *pending, int a, EState *estate, bool *same)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), a);
	TupleDesc	old_desc = pending->old_desc;
	Node	   *expr = NULL;
	ListCell   *lc;

	*same = false;
	if (att->attisdropped)
		return NULL;
	foreach(lc, pending->usings)
		if (((TargetEntry *) lfirst(lc))->resno == a + 1)
			expr = (Node *) ((TargetEntry *) lfirst(lc))->expr;
	if (expr != NULL)
		;						/* its USING, coerced to the new type already */
	else if (a < old_desc->natts && !TupleDescAttr(old_desc, a)->attisdropped)
	{
		Form_pg_attribute old = TupleDescAttr(old_desc, a);

		if (old->atttypid == att->atttypid && old->atttypmod == att->atttypmod)
		{
			*same = true;
			return NULL;
		}
		/* as ATPrepAlterColumnType without USING: the assignment cast */
		expr = (Node *) makeVar(1, a + 1, old->atttypid, old->atttypmod, old->attcollation, 0);
		expr = coerce_to_target_type(NULL, expr, old->atttypid, att->atttypid, att->atttypmod,
									 COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
		if (expr == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" cannot be cast automatically to type %s",
							NameStr(att->attname), format_type_be(att->atttypid)),
			/* translator: USING is SQL, don't translate it */
					 errhint("You might need to specify \"USING %s::%s\".",
							 quote_identifier(NameStr(att->attname)),
							 format_type_with_typemod(att->atttypid, att->atttypmod))));
	}
	else
	{
		/* added by the ALTER: its default, per row (volatile ones too) */
		expr = build_column_default(rel, a + 1);
		if (expr == NULL)
			return NULL;
	}
	return ExecPrepareExpr((Expr *) expression_planner((Expr *) expr), estate);
}

/*
 * The value of attribute a of the new definition for the stored row in
 * econtext's scan tuple (exprs, same: column_expr's).
 */
static Datum
column_value(int a, ExprState **exprs, const bool *same, ExprContext *econtext, bool *isnull)
{
	TupleTableSlot *old = econtext->ecxt_scantuple;

	if (same[a])
	{
		*isnull = old->tts_isnull[a];
		return old->tts_values[a];
	}
	if (exprs[a] != NULL)
		return ExecEvalExpr(exprs[a], econtext, isnull);
	*isnull = true;
	return (Datum) 0;
}

/* Refuse a NULL in column att of rel (in_key: of its key), as a heap's ALTER does. */
static void
refuse_null(Relation rel, Form_pg_attribute att, bool in_key)
{
	ereport(ERROR,
			(errcode(ERRCODE_NOT_NULL_VIOLATION),
			 errmsg("column \"%s\" of relation \"%s\" contains null values",
					NameStr(att->attname), RelationGetRelationName(rel)),
			 in_key ? errdetail("The column is in the key of the foreign table.") : 0,
			 errtablecol(rel, att->attnum)));
}

/*
 * Convert every row without writing it, before the new tserver table is
 * made: a value the new type refuses, or a NULL in a key or NOT NULL
 * column, fails the ALTER as it fails a heap's, with nothing left on the
 * tserver.  An added column's default is left to the write (a sequence
 * must not be called twice).
 */
static void
rewrite_check(Relation rel, PendingRewrite *pending, ExprState **exprs, const bool *same,
			  const bool *added, ExprContext *econtext, List *key_attnums)
{
	TupleDesc	desc = RelationGetDescr(rel);

	while (tuplestore_gettupleslot(pending->rows, true, false, econtext->ecxt_scantuple))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(econtext->ecxt_scantuple);
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);
			bool		isnull;

			if (att->attisdropped || added[a])
				continue;
			(void) column_value(a, exprs, same, econtext, &isnull);
			if (isnull && (att->attnotnull || list_member_int(key_attnums, a + 1)))
				refuse_null(rel, att, list_member_int(key_attnums, a + 1));
		}
		ResetExprContext(econtext);
	}
	tuplestore_rescan(pending->rows);
}

/*
 * How many rows codec's table holds as the transaction sees them (its
 * write session's rows too).
 */
static double
rewrite_count(TcopyRelCodec *codec)
{
	RewriteScan scan = {0};
	double		nrows = 0;
	bool		done;

	scan.codec = codec;
	scan.estate = CreateExecutorState();
	scan.proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	scan.one_column = true;
	tcopy_scan_client_init(&scan.conn);
	done = !rewrite_scan_start(&scan);
	while (!done)
	{
		Tcopy__ScanBatch *batch;

		CHECK_FOR_INTERRUPTS();
		if (tc_client_scan_next(scan.conn.client, &batch) < 0)
			tcopy_report_client_error(scan.conn.client, codec->options.address,
									  psprintf("could not scan table \"%s\"",
											   codec->options.table_name));
		nrows += batch->n_rows;
		done = batch->done;
	}
	tcopy_scan_client_close(&scan.conn);
	FreeExecutorState(scan.estate);
	return nrows;
}

/* Write one table's rows, read before the ALTER, in its new definition. */
static void
rewrite_one(PendingRewrite *pending)
{
	Relation	rel = relation_open(pending->relid, NoLock);	/* the ALTER's lock */
	TupleDesc	desc = RelationGetDescr(rel);
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *oldslot = MakeSingleTupleTableSlot(pending->old_desc, &TTSOpsMinimalTuple);
	ExprState **exprs = palloc0(sizeof(ExprState *) * Max(desc->natts, 1));
	bool	   *same = palloc0(sizeof(bool) * Max(desc->natts, 1));
	bool	   *added = palloc0(sizeof(bool) * Max(desc->natts, 1));
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	TcopyRelCodec *codec;
	TcopyWriter *writer;

	for (int a = 0; a < desc->natts; a++)
	{
		exprs[a] = column_expr(rel, pending, a, estate, &same[a]);
		added[a] = a >= pending->old_desc->natts;
	}
	econtext->ecxt_scantuple = oldslot;
	rewrite_check(rel, pending, exprs, same, added, econtext,
				  tcopy_rel_codec(rel, GetUserId())->options.key_attnums);

	/* the new storage holds the live columns only: no dropped_positions */
	tcopy_replace_table_options(pending->relid, list_make2("table_name", "dropped_positions"),
								list_make1(psprintf("table_name=%s",
													tcopy_generate_table_name(tcopy_server_namespace(pending->old.serverid)))));
	CommandCounterIncrement();
	/*
	 * With the table's own policy: the transaction's writes to the new
	 * tserver table after the ALTER can have no other (xact.c)
	 */
	codec = tcopy_rel_codec(rel, GetUserId());
	writer = tcopy_writer_begin(codec);
	while (tuplestore_gettupleslot(pending->rows, true, false, oldslot))
	{
		MemoryContext oldcontext;

		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(oldslot);
		oldcontext = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		for (int a = 0; a < desc->natts; a++)
		{
			values[a] = column_value(a, exprs, same, econtext, &nulls[a]);
			/* an added column's default, not checked before: as a heap's */
			if (added[a] && nulls[a] && TupleDescAttr(desc, a)->attnotnull)
				refuse_null(rel, TupleDescAttr(desc, a),
							list_member_int(codec->options.key_attnums, a + 1));
		}
		tcopy_writer_add(writer, values, nulls);
		MemoryContextSwitchTo(oldcontext);
		ResetExprContext(econtext);
	}
	tcopy_writer_finish(writer);
	tcopy_writer_free(writer);
	ExecDropSingleTupleTableSlot(oldslot);
	FreeExecutorState(estate);

	/*
	 * Keys that collide under the new key fail the ALTER, as under a primary
	 * key: on_conflict 'error' said so as the rows went; 'ignore' and
	 * 'replace' kept one row of a key, which the count tells.
	 */
	if (pending->key_changes && codec->options.on_conflict != TCOPY_ON_CONFLICT_ERROR)
	{
		double		kept = rewrite_count(codec);

		if (kept != pending->nrows)
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate key value violates unique constraint \"%s_key\"",
							RelationGetRelationName(rel)),
					 errdetail("Under the new key, the %.0f rows have %.0f distinct keys.",
							   pending->nrows, kept),
					 errtableconstraint(rel, psprintf("%s_key", RelationGetRelationName(rel)))));
	}

	/* the old storage goes at the commit, after the new rows */
	tcopy_xact_drop_at_commit(&pending->old, GetUserId(), true, RelationGetRelationName(rel));
	ereport(DEBUG1,
			(errmsg_internal("tcopy: rewrote %.0f rows of \"%s\" into tserver table \"%s\"",
							 pending->nrows, RelationGetRelationName(rel),
							 codec->options.table_name)));
	relation_close(rel, NoLock);
}

/*
 * After the ALTER ran: write what tcopy_rewrite_read read into statement,
 * in the new definition.
 */
void
tcopy_rewrite_write(TcopyAlterPending *statement)
{
	ListCell   *lc;

	if (statement->rewrites == NIL)
		return;
	CommandCounterIncrement();
	foreach(lc, statement->rewrites)
	{
		PendingRewrite *pending = (PendingRewrite *) lfirst(lc);

		rewrite_one(pending);
		/* its temp files now (a failed ALTER's go with its resource owner) */
		tuplestore_end(pending->rows);
		pending->rows = NULL;
	}
	statement->rewrites = NIL;
	CommandCounterIncrement();
}
