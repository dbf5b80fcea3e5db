/*
 * fdw_scan.c
 *		The scan callbacks of the tcopy foreign-data wrapper: a scan of a
 *		table on its tserver, projected and key-bounded as fdw.c planned.
 *
 * A scan opens a connection of its own (tcopy_scan_client_open), so that
 * it can run while the transaction's write session is open, and fetches
 * the rows in batches.  Rows written by the transaction are not visible
 * before it commits: a scan would silently miss them, so reading a table
 * the transaction wrote to is an error.
 *
 * The connection belongs to the (sub)transaction that began the scan (a
 * cursor's: the one that declared it), and follows it as Postgres'
 * portals do: to the parent when it commits, closed when it aborts
 * (connection.c).  A connection is malloc'ed by the client library; a
 * reset callback on the scan's memory context closes it when a query
 * fails, as EndForeignScan is then not called.
 */
#include "tcopy.h"

#include "access/stratnum.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/* One end of a key range on the sole integer key column. */
typedef struct TcopyKeyBound
{
	bool		present;
	bool		inclusive;
	int64		value;
} TcopyKeyBound;

typedef struct TcopyScanState
{
	TcopyRelCodec *codec;
	TcopyScanClient conn;		/* conn.client NULL: the scan returns no rows */
	uint32		table_id;
	int		   *proj;			/* [nproj] wire columns fetched, ascending */
	int			nproj;
	AttrNumber	key_attnum;		/* bounded column; 0 when no bound */
	TcopyKeyBound lower;
	TcopyKeyBound upper;
	bool		empty_range;	/* bounds contradict: no rows */
	bool		started;		/* Scan request sent */
	bool		done;			/* the batch marked done has been fetched */
	Tcopy__ScanBatch *batch;	/* in the client's arena until the next fetch */
	size_t		next_row;		/* index in batch->rows */
	MemoryContext batch_cxt;	/* decoded values of the current batch */
	MemoryContextCallback close_callback;
} TcopyScanState;

/*
 * Lock what a scan for UPDATE or DELETE reads, before it reads it
 * (row_locks.c): the key, when the scan reads one key of a table of one
 * key column, else the table's rows.
 */
static void
tcopy_scan_lock_rows(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;

	if (list_length(codec->options.key_attnums) == 1 && state->key_attnum != 0 &&
		state->lower.present && state->upper.present && state->lower.inclusive &&
		state->upper.inclusive && state->lower.value == state->upper.value)
		tcopy_lock_key(codec->relid, state->lower.value);
	else if (!state->empty_range)
		tcopy_lock_table_rows(codec->relid);
}

/*
 * Choose the wire columns to fetch.  A scan always projects at least one
 * column, as an empty projection asks for all of them: for count(*), the
 * first key column that is one of the table's own (not a key image, which
 * the codec does not decode), else the first fixed-size one.
 */
static void
tcopy_scan_choose_columns(TcopyScanState *state, bool all_columns, List *attnums)
{
	TcopyRelCodec *codec = state->codec;
	ListCell   *lc;

	state->proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	state->nproj = 0;
	if (all_columns)
	{
		for (int c = 0; c < codec->ncolumns; c++)
			state->proj[state->nproj++] = c;
		return;
	}
	foreach(lc, attnums)
	{
		AttrNumber	attnum = (AttrNumber) lfirst_int(lc);
		int			column = codec->column_of_att[attnum - 1];

		if (column >= 0)
			state->proj[state->nproj++] = column;
	}
	if (state->nproj == 0 && codec->ncolumns > 0)
	{
		int			column = 0;

		if (codec->schema->n_key > 0 && codec->schema->key[0] < (uint32) codec->ncolumns)
			column = (int) codec->schema->key[0];
		else
		{
			for (int c = 0; c < codec->ncolumns; c++)
			{
				if (codec->columns[c].kind != TCOPY__KIND__KIND_BYTES)
				{
					column = c;
					break;
				}
			}
		}
		state->proj[state->nproj++] = column;
	}
}

/* Whether bound (value, inclusive) is tighter than the current one. */
static bool
tcopy_bound_tighter(const TcopyKeyBound *current, int64 value, bool inclusive,
					bool is_lower)
{
	if (!current->present)
		return true;
	if (value != current->value)
		return is_lower ? value > current->value : value < current->value;
	return !inclusive && current->inclusive;
}

/* Tighten one end of the range to (value, inclusive). */
static void
tcopy_bound_apply(TcopyKeyBound *bound, int64 value, bool inclusive, bool is_lower)
{
	if (tcopy_bound_tighter(bound, value, inclusive, is_lower))
	{
		bound->present = true;
		bound->value = value;
		bound->inclusive = inclusive;
	}
}

/* The int64 value of an int2, int4 or int8 constant. */
static int64
tcopy_const_int64(const Const *value)
{
	switch (value->consttype)
	{
		case INT2OID:
			return DatumGetInt16(value->constvalue);
		case INT4OID:
			return DatumGetInt32(value->constvalue);
		case INT8OID:
			return DatumGetInt64(value->constvalue);
	}
	elog(ERROR, "unexpected type %u of a key bound", value->consttype);
	return 0;					/* keep compiler quiet */
}

/*
 * Keep the planner's candidate bounds that fall on the table's key, when it
 * is a single column stored as an integer, and combine them into a range.
 */
static void
tcopy_scan_choose_range(TcopyScanState *state, List *bounds)
{
	TcopyRelCodec *codec = state->codec;
	AttrNumber	key_attnum;
	int			column;
	ListCell   *lc;

	if (list_length(codec->options.key_attnums) != 1 || bounds == NIL)
		return;
	key_attnum = (AttrNumber) linitial_int(codec->options.key_attnums);
	column = codec->column_of_att[key_attnum - 1];
	if (column < 0 || codec->columns[column].kind != TCOPY__KIND__KIND_INT ||
		(codec->columns[column].conv != TCOPY_CONV_INT2 &&
		 codec->columns[column].conv != TCOPY_CONV_INT4 &&
		 codec->columns[column].conv != TCOPY_CONV_INT8))
		return;

	foreach(lc, bounds)
	{
		List	   *bound = lfirst_node(List, lc);
		int64		value;

		if (intVal(list_nth(bound, TCOPY_BOUND_ATTNUM)) != key_attnum)
			continue;
		value = tcopy_const_int64(list_nth_node(Const, bound, TCOPY_BOUND_VALUE));
		switch (intVal(list_nth(bound, TCOPY_BOUND_STRATEGY)))
		{
			case BTLessStrategyNumber:
				tcopy_bound_apply(&state->upper, value, false, false);
				break;
			case BTLessEqualStrategyNumber:
				tcopy_bound_apply(&state->upper, value, true, false);
				break;
			case BTEqualStrategyNumber:
				tcopy_bound_apply(&state->lower, value, true, true);
				tcopy_bound_apply(&state->upper, value, true, false);
				break;
			case BTGreaterEqualStrategyNumber:
				tcopy_bound_apply(&state->lower, value, true, true);
				break;
			case BTGreaterStrategyNumber:
				tcopy_bound_apply(&state->lower, value, false, true);
				break;
		}
	}
	if (state->lower.present || state->upper.present)
		state->key_attnum = key_attnum;
	if (state->lower.present && state->upper.present &&
		(state->lower.value > state->upper.value ||
		 (state->lower.value == state->upper.value &&
		  (!state->lower.inclusive || !state->upper.inclusive))))
		state->empty_range = true;
}

/* Close the scan's connection, if any; also run when a query fails. */
static void
tcopy_scan_close(void *arg)
{
	TcopyScanState *state = (TcopyScanState *) arg;

	state->batch = NULL;
	tcopy_scan_client_close(&state->conn);
}

/*
 * Connect and open the table for reading.  A table the tserver does not
 * know was never written to: the scan then returns no rows.
 */
static void
tcopy_scan_connect(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;
	TcClient   *client;

	state->conn.lost = false;
	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	if (tcopy_address_is_null(codec->options.address) || state->empty_range)
		return;

	tcopy_scan_client_open(&state->conn, codec->options.address, codec->options.token,
						   &codec->options.tls);
	client = state->conn.client;
	if (tc_client_open_table(client, codec->options.table_name, codec->schema,
							 false, &state->table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
		{
			tcopy_scan_close(state);
			return;
		}
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not open table \"%s\" for reading",
										   codec->options.table_name));
	}
}

/*
 * Refuse to read rel in a transaction that changed its rows on the tserver
 * (wrote, truncated or dropped them): those changes are not visible before
 * the commit, so a scan would silently return stale rows.  Scans and
 * ANALYZE share this.
 */
void
tcopy_scan_check_visible(Relation rel, const TcopyTableOptions *options)
{
	if (tcopy_xact_wrote_table(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that wrote to it",
						RelationGetRelationName(rel)),
				 errdetail("Rows written by tcopy become visible when the transaction commits.")));
	if (tcopy_xact_staged_op_on(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that truncated it",
						RelationGetRelationName(rel)),
				 errdetail("A TRUNCATE of a tcopy table takes effect when the transaction commits.")));
	if (tcopy_xact_drops_table(options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" in the transaction that dropped its data",
						RelationGetRelationName(rel)),
				 errdetail("Another foreign table bound to the same tserver table was dropped in this "
						   "transaction, and its data goes at the commit.")));
}

/*
 * Set up the scan.  The scan of an UPDATE's or DELETE's target locks the
 * rows it will read first.
 */
void
tcopyBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	EState	   *estate = node->ss.ps.state;
	TcopyScanState *state;

	state = palloc0(sizeof(TcopyScanState));
	node->fdw_state = state;
	state->codec = tcopy_rel_codec(rel, tcopy_rte_user(node->ss.ps.state, fsplan->scan.scanrelid));
	tcopy_scan_choose_columns(state,
							  boolVal(list_nth(fsplan->fdw_private, TCOPY_PRIV_ALL_COLUMNS)),
							  (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_ATTNUMS));
	tcopy_scan_choose_range(state,
							(List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_BOUNDS));

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	if ((estate->es_plannedstmt->commandType == CMD_UPDATE ||
		 estate->es_plannedstmt->commandType == CMD_DELETE) &&
		ExecRelationIsTargetRelation(estate, fsplan->scan.scanrelid))
		tcopy_scan_lock_rows(state);

	state->batch_cxt = AllocSetContextCreate(CurrentMemoryContext,
											 "tcopy scan batch",
											 ALLOCSET_DEFAULT_SIZES);
	tcopy_scan_client_init(&state->conn);
	state->close_callback.func = tcopy_scan_close;
	state->close_callback.arg = state;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &state->close_callback);

	tcopy_scan_connect(state);
}

/* A key bound as the wire carries it: the key column's value. */
static Tcopy__KeyBound *
tcopy_make_key_bound(const TcopyKeyBound *bound)
{
	Tcopy__KeyBound *msg = palloc(sizeof(Tcopy__KeyBound));
	Tcopy__Row *key = palloc(sizeof(Tcopy__Row));

	tcopy__key_bound__init(msg);
	tcopy__row__init(key);
	key->n_ints = 1;
	key->ints = palloc(sizeof(int64_t));
	key->ints[0] = bound->value;
	msg->key = key;
	msg->inclusive = bound->inclusive;
	return msg;
}

/* The scan failed: say why. */
static void
tcopy_scan_report_error(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;

	if (tc_client_error_code(state->conn.client) == TCOPY__ERROR_CODE__ERROR_UNREADABLE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot read foreign table \"%s\" in this transaction: its writes spilled to the tserver's disk",
						codec->relname),
				 errdetail("tserver at \"%s\": %s.", codec->options.address,
						   tc_client_error(state->conn.client)),
				 errhint("A transaction reads its own writes to a tcopy table while the tserver holds them in memory "
						 "(half of its --session-memory-mb); read the table after the commit, or raise --session-memory-mb.")));
	tcopy_report_client_error(state->conn.client, codec->options.address,
							  psprintf("could not scan table \"%s\"", codec->options.table_name));
}

/*
 * Send the Scan request: the projection, the key range, and the write
 * session of this transaction whose changes to the table it reads, if any
 * (acknowledged up to every batch sent, so as of now).
 */
static void
tcopy_scan_start(TcopyScanState *state)
{
	TcopyRelCodec *codec = state->codec;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	uint32_t   *columns;
	const uint8 *key;
	size_t		keylen;

	if (tcopy_xact_session_to_read(codec->relname, &codec->options, codec->userid,
								   &request.session_id, &key, &keylen))
	{
		request.session_key.data = (uint8_t *) key;
		request.session_key.len = keylen;
	}

	columns = palloc(sizeof(uint32_t) * Max(state->nproj, 1));
	for (int p = 0; p < state->nproj; p++)
		columns[p] = (uint32_t) state->proj[p];
	request.table_id = state->table_id;
	request.n_columns = state->nproj;
	request.columns = columns;
	if (state->lower.present)
		request.lower = tcopy_make_key_bound(&state->lower);
	if (state->upper.present)
		request.upper = tcopy_make_key_bound(&state->upper);

	if (tc_client_scan_start(state->conn.client, &request) < 0)
		tcopy_scan_report_error(state);
	state->started = true;
}

/*
 * The scan's connection was closed by the rollback of the (sub)transaction
 * that owns it: Postgres ends the portals of that subtransaction, so this
 * cannot happen, but should it, say so rather than return fewer rows.
 */
static void
tcopy_scan_report_lost(TcopyScanState *state)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_CURSOR_STATE),
			 errmsg("cannot continue the scan of foreign table \"%s\"",
					state->codec->relname),
			 errdetail("Its connection to the tserver was closed when the subtransaction that began the scan rolled back.")));
}

/*
 * Return the next row in the slot, or an empty slot at the end.  The values
 * of a batch's rows live in batch_cxt, reset only when the next batch is
 * fetched, so the row returned last stays valid until the next call.
 */
TupleTableSlot *
tcopyIterateForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	TcopyRelCodec *codec = state->codec;
	MemoryContext oldcxt;

	ExecClearTuple(slot);
	if (state->conn.lost)
		tcopy_scan_report_lost(state);
	if (state->conn.client == NULL)
		return slot;
	if (!state->started)
		tcopy_scan_start(state);

	while (state->batch == NULL || state->next_row >= state->batch->n_rows)
	{
		CHECK_FOR_INTERRUPTS();
		if (state->done)
			return slot;
		MemoryContextReset(state->batch_cxt);
		state->batch = NULL;
		state->next_row = 0;
		if (tc_client_scan_next(state->conn.client, &state->batch) < 0)
			tcopy_scan_report_error(state);
		state->done = state->batch->done;
	}

	oldcxt = MemoryContextSwitchTo(state->batch_cxt);
	tcopy_decode_row(codec, state->proj, state->nproj,
					 state->batch->rows[state->next_row++],
					 slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(oldcxt);
	return ExecStoreVirtualTuple(slot);
}

/*
 * Restart the scan.  A scan read to its end leaves the connection idle and
 * is simply sent again; one stopped midway still has batches coming, so
 * its connection is replaced.
 */
void
tcopyReScanForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if ((state->conn.client != NULL && state->started && !state->done) ||
		state->conn.lost)
	{
		tcopy_scan_close(state);
		tcopy_scan_connect(state);
		return;
	}
	state->started = false;
	state->done = false;
	state->batch = NULL;
	state->next_row = 0;
	if (state->batch_cxt != NULL)
		MemoryContextReset(state->batch_cxt);
}

/* Close the scan's connection. */
void
tcopyEndForeignScan(ForeignScanState *node)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;

	if (state != NULL)
		tcopy_scan_close(state);
}

/*
 * Show the remote table, the key range sent to the tserver and, in
 * VERBOSE, the tserver's address (kept out of plain EXPLAIN as it differs
 * between installations).
 */
void
tcopyExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	TcopyScanState *state = (TcopyScanState *) node->fdw_state;
	TcopyRelCodec *codec = state->codec;

	ExplainPropertyText("Remote Table", codec->options.table_name, es);
	if (state->key_attnum != 0)
	{
		Relation	rel = node->ss.ss_currentRelation;
		const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel),
												 state->key_attnum - 1)->attname);
		StringInfoData range;

		initStringInfo(&range);
		if (state->lower.present)
			appendStringInfo(&range, "%s %s " INT64_FORMAT, quote_identifier(name),
							 state->lower.inclusive ? ">=" : ">", state->lower.value);
		if (state->upper.present)
			appendStringInfo(&range, "%s%s %s " INT64_FORMAT,
							 state->lower.present ? " AND " : "",
							 quote_identifier(name),
							 state->upper.inclusive ? "<=" : "<", state->upper.value);
		ExplainPropertyText("Key Range", range.data, es);
	}
	if (es->verbose)
		ExplainPropertyText("tserver", codec->options.address, es);
}
