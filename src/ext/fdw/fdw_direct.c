/*
 * fdw_direct.c
 *		UPDATE and DELETE done whole by the tserver, as postgres_fdw's direct
 *		modify does them by the remote server: no scan comes back, one
 *		round trip (MODIFY, docs/protocol.md#direct-modify) stages the
 *		changed rows in the transaction's write session, where they commit
 *		and roll back with it like rows sent.
 *
 * Pushed down when the statement allows it:
 * - UPDATE or DELETE of one tcopy table, without RETURNING, row triggers
 *   or WITH CHECK OPTION;
 * - every qual is a key bound the scan carries (tcopy_clause_key_bound on
 *   the table's single integer key: WHERE key = const, key ranges), or
 *   there is none;
 * - each assignment of an UPDATE sets a non-key column to a constant (not
 *   NULL for a NOT NULL column), or adds an integer constant to an integer
 *   column, "col = col + const" or "col - const": pgbench's updates; a
 *   parameter of the statement ($1 of a prepared statement) stands for a
 *   constant where the column may be NULL (its value is known only when
 *   the statement runs, when a NULL could no longer fall back).
 * Anything else goes through the scan and the modify callbacks
 * (fdw_modify.c), as before.  The rows are locked first (row_locks.c), as
 * the scan of an UPDATE locks them; the tserver reads them as the
 * session reads them and refuses, as for such a scan, a table an orphaned
 * prepared session wrote.
 */

#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"

typedef struct TcopyDirectState
{
	TcopyRelCodec *codec;
	TcopyKeyRange range;
	Tcopy__Modify request;		/* but the table id and seq */
	const char *range_message;	/* an integer sum out of range */
	bool		done;
} TcopyDirectState;

/* The range error of an integer type, as its + operator words it. */
static const char *
tcopy_int_range_message(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return "smallint out of range";
		case INT8OID:
			return "bigint out of range";
		default:
			return "integer out of range";
	}
}

/*
 * A subtraction of a parameter: its value is negated when it is known
 * (an AssignOp of the plan only, never sent).
 */
#define TCOPY_ASSIGN_SUBTRACT 100

/* Whether expr is a parameter of the statement that may stand for a value of att. */
static bool
tcopy_direct_param(Expr *expr, Form_pg_attribute att)
{
	return IsA(expr, Param) && ((Param *) expr)->paramkind == PARAM_EXTERN &&
		((Param *) expr)->paramtype == att->atttypid && !att->attnotnull;
}

/*
 * What an addition adds, as the tserver takes it: an int8 constant, the
 * operand's value negated for a subtraction; NULL when that overflows.
 */
static Const *
tcopy_direct_delta(Oid type, Datum operand, bool negate)
{
	int64		delta = tcopy_int64_of(type, operand);

	if (negate)
	{
		if (delta == PG_INT64_MIN)
			return NULL;
		delta = -delta;
	}
	return makeConst(INT8OID, -1, InvalidOid, 8, Int64GetDatum(delta), false, FLOAT8PASSBYVAL);
}

/*
 * An UPDATE's new value for column attno of rel (relid rti), as an
 * assignment (Integer attnum, Integer op, Const value); NIL when it cannot
 * be pushed down.
 */
static List *
tcopy_direct_assignment(Relation rel, Index rti, AttrNumber attno, Expr *expr)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attno - 1);
	OpExpr	   *op;
	Node	   *left,
			   *right;
	Node	   *operand;
	Var		   *var;
	Const	   *value;
	bool		negate;

	if (IsA(expr, Const) || tcopy_direct_param(expr, att))
	{
		if (IsA(expr, Const) && ((Const *) expr)->constisnull && att->attnotnull)
			return NIL;
		return list_make3(makeInteger(attno), makeInteger(TCOPY__ASSIGN_OP__ASSIGN_VALUE),
						  copyObject(expr));
	}
	if (!IsA(expr, OpExpr) || list_length(((OpExpr *) expr)->args) != 2)
		return NIL;
	op = (OpExpr *) expr;
	switch (op->opfuncid)
	{
		case F_INT2PL:
		case F_INT4PL:
		case F_INT8PL:
			negate = false;
			break;
		case F_INT2MI:
		case F_INT4MI:
		case F_INT8MI:
			negate = true;
			break;
		default:
			return NIL;
	}
	left = linitial(op->args);
	right = lsecond(op->args);
	if (IsA(left, Var) && (IsA(right, Const) || tcopy_direct_param((Expr *) right, att)))
	{
		var = (Var *) left;
		operand = right;
	}
	else if (!negate && (IsA(left, Const) || tcopy_direct_param((Expr *) left, att)) &&
			 IsA(right, Var))
	{
		var = (Var *) right;
		operand = left;
	}
	else
		return NIL;
	if (var->varno != rti || var->varattno != attno || var->varlevelsup != 0 ||
		exprType(operand) != att->atttypid || op->opresulttype != att->atttypid)
		return NIL;
	if (IsA(operand, Param))
		return list_make3(makeInteger(attno),
						  makeInteger(negate ? TCOPY_ASSIGN_SUBTRACT : TCOPY__ASSIGN_OP__ASSIGN_ADD),
						  copyObject(operand));
	if (((Const *) operand)->constisnull ||
		(value = tcopy_direct_delta(att->atttypid, ((Const *) operand)->constvalue, negate)) == NULL)
		return NIL;
	return list_make3(makeInteger(attno), makeInteger(TCOPY__ASSIGN_OP__ASSIGN_ADD), value);
}

/*
 * The ForeignScan of resultRelation that subplan, a ModifyTable's, is or
 * holds: itself, or the subplan_index'th child of an Append below it
 * (perhaps under a Result), where Postgres puts the children of a
 * partitioned or inherited table, as postgres_fdw finds it.  Deeper down
 * there are joins, done by Postgres.  NULL if none.
 */
static ForeignScan *
modified_scan(Plan *subplan, Index resultRelation, int subplan_index)
{
	if (IsA(subplan, Result) && outerPlan(subplan) != NULL && IsA(outerPlan(subplan), Append))
		subplan = outerPlan(subplan);
	if (IsA(subplan, Append))
	{
		Append	   *append = (Append *) subplan;

		if (subplan_index >= list_length(append->appendplans))
			return NULL;
		subplan = list_nth(append->appendplans, subplan_index);
	}
	if (!IsA(subplan, ForeignScan) || ((ForeignScan *) subplan)->scan.scanrelid != resultRelation)
		return NULL;
	return (ForeignScan *) subplan;
}

bool
tcopyPlanDirectModify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
					  int subplan_index)
{
	CmdType		operation = plan->operation;
	RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
	Plan	   *subplan = outerPlan(plan);
	ForeignScan *fscan;
	Relation	rel;
	List	   *key_attnums = NIL;
	bool		key_bytes;
	List	   *assignments = NIL;
	bool		ok = true;
	AttrNumber	key_attnum = InvalidAttrNumber;
	ListCell   *lc;

	if ((operation != CMD_UPDATE && operation != CMD_DELETE) || subplan == NULL ||
		plan->returningLists != NIL || plan->withCheckOptionLists != NIL)
		return false;
	fscan = modified_scan(subplan, resultRelation, subplan_index);
	if (fscan == NULL || fscan->operation != CMD_SELECT)
		return false;

	rel = table_open(rte->relid, NoLock);
	if (rel->trigdesc &&
		(operation == CMD_UPDATE ?
		 (rel->trigdesc->trig_update_before_row || rel->trigdesc->trig_update_after_row) :
		 (rel->trigdesc->trig_delete_before_row || rel->trigdesc->trig_delete_after_row)))
		ok = false;
	if (ok)
	{
		/* the key, from the table's options (the user mapping is the scan's) */
		key_attnums = tcopy_rel_key_attnums(rel, &key_bytes);
		if (list_length(key_attnums) == 1)
			key_attnum = linitial_int(key_attnums);
		else if (key_attnums == NIL)
			ok = false;
	}
	/* every qual is a bound on the key the range carries */
	foreach(lc, fscan->scan.plan.qual)
	{
		List	   *bounds = NIL;

		if (!ok)
			break;
		if (key_attnum == InvalidAttrNumber ||
			tcopy_clause_key_bound(resultRelation, lfirst(lc), &bounds) != key_attnum)
			ok = false;
	}
	if (ok && operation == CMD_UPDATE)
	{
		List	   *tlist;
		List	   *attnos;
		ListCell   *lc2;

		get_translated_update_targetlist(root, resultRelation, &tlist, &attnos);
		forboth(lc, tlist, lc2, attnos)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			AttrNumber	attno = lfirst_int(lc2);
			List	   *assignment;

			/* nor a column the partition constraint reads: the row may move */
			if (attno <= 0 || list_member_int(key_attnums, attno) ||
				tcopy_update_reads_partition_qual(rel, bms_make_singleton(attno - FirstLowInvalidHeapAttributeNumber)) ||
				(assignment = tcopy_direct_assignment(rel, resultRelation, attno,
													  tle->expr)) == NIL)
			{
				ok = false;
				break;
			}
			assignments = lappend(assignments, assignment);
		}
		if (assignments == NIL)
			ok = false;
	}
	table_close(rel, NoLock);
	if (!ok)
		return false;

	fscan->operation = operation;
	fscan->resultRelation = resultRelation;
	fscan->scan.plan.qual = NIL;
	fscan->fdw_private = lappend(list_copy(fscan->fdw_private), assignments);
	return true;
}

/*
 * The assignments with their parameters' values as constants (a subtracted
 * parameter's negated), as the statement begins.
 */
static List *
tcopy_direct_evaluate(List *assignments, ExprContext *econtext)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, assignments)
	{
		List	   *assignment = lfirst_node(List, lc);
		Node	   *value = lthird(assignment);
		int			op = intVal(lsecond(assignment));
		ExprState  *state;
		Datum		datum;
		bool		isnull;
		Oid			type;

		if (!IsA(value, Param))
		{
			result = lappend(result, assignment);
			continue;
		}
		type = ((Param *) value)->paramtype;
		state = ExecInitExpr((Expr *) value, NULL);
		datum = ExecEvalExprSwitchContext(state, econtext, &isnull);
		if (op != TCOPY__ASSIGN_OP__ASSIGN_VALUE)
		{
			/* an addition: NULL stays NULL, as col + NULL is */
			value = (Node *) (isnull ?
							  makeConst(INT8OID, -1, InvalidOid, 8, (Datum) 0, true, FLOAT8PASSBYVAL) :
							  tcopy_direct_delta(type, datum, op == TCOPY_ASSIGN_SUBTRACT));
			if (value == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			op = TCOPY__ASSIGN_OP__ASSIGN_ADD;
		}
		else
		{
			int16		typlen;
			bool		typbyval;

			get_typlenbyval(type, &typlen, &typbyval);
			value = (Node *) makeConst(type, -1, InvalidOid, typlen,
									   isnull ? (Datum) 0 : datumCopy(datum, typbyval, typlen),
									   isnull, typbyval);
		}
		result = lappend(result, list_make3(linitial(assignment), makeInteger(op), value));
	}
	return result;
}

/* The assignments' values, as the tserver reads them (Modify.values). */
static Tcopy__Row *
tcopy_direct_values(TcopyRelCodec *codec, List *assignments)
{
	TcopyRowBuf buf;
	Tcopy__Row *row = palloc(sizeof(Tcopy__Row));
	int			i = 0;
	ListCell   *lc;

	tcopy_row_buf_init(&buf, codec->ncolumns);
	tcopy_row_buf_clear(&buf);
	foreach(lc, assignments)
	{
		List	   *assignment = lfirst_node(List, lc);
		AttrNumber	attno = intVal(linitial(assignment));
		Const	   *value = lthird(assignment);
		int			c = codec->column_of_att[attno - 1];

		if (value->constisnull)
			buf.nulls[buf.wire.n_nulls++] = i;
		else if (intVal(lsecond(assignment)) == TCOPY__ASSIGN_OP__ASSIGN_ADD)
			buf.ints[buf.wire.n_ints++] = DatumGetInt64(value->constvalue);	/* int8: tcopy_direct_delta */
		else
			tcopy_encode_datum(codec, c, value->constvalue, &buf);
		i++;
	}
	tcopy__row__init(row);
	row->n_ints = buf.wire.n_ints;
	row->ints = buf.ints;
	row->n_floats = buf.wire.n_floats;
	row->floats = buf.floats;
	row->n_nulls = buf.wire.n_nulls;
	row->nulls = buf.nulls;
	row->n_blobs = buf.wire.n_blobs;
	row->blobs = palloc(sizeof(ProtobufCBinaryData) * Max(buf.wire.n_blobs, 1));
	for (uint32 b = 0; b < buf.wire.n_blobs; b++)
	{
		row->blobs[b].data = (uint8_t *) buf.blobs[b].data;
		row->blobs[b].len = buf.blobs[b].len;
	}
	return row;
}

void
tcopyBeginDirectModify(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	Relation	rel = node->ss.ss_currentRelation;
	TcopyDirectState *state = palloc0(sizeof(TcopyDirectState));
	List	   *assignments = list_nth(fsplan->fdw_private, TCOPY_PRIV_ASSIGNMENTS);
	Oid			add_type = InvalidOid;
	int			i = 0;
	ListCell   *lc;

	node->fdw_state = state;
	state->codec = tcopy_rel_codec_shared(rel, tcopy_rte_user(estate, fsplan->scan.scanrelid));
	assignments = tcopy_direct_evaluate(assignments, node->ss.ps.ps_ExprContext);
	tcopy_key_range(state->codec, (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_BOUNDS),
					node->ss.ps.ps_ExprContext, &state->range);
	tcopy__modify__init(&state->request);
	state->request.kind = fsplan->operation == CMD_DELETE ? TCOPY__WRITE_KIND__WRITE_DELETE :
		TCOPY__WRITE_KIND__WRITE_UPDATE;
	if (state->range.lower.present)
		state->request.lower = tcopy_make_key_bound(&state->range.lower);
	if (state->range.upper.present)
		state->request.upper = tcopy_make_key_bound(&state->range.upper);
	state->request.n_set = list_length(assignments);
	state->request.set = palloc(sizeof(Tcopy__Assignment *) * Max(state->request.n_set, 1));
	foreach(lc, assignments)
	{
		List	   *assignment = lfirst_node(List, lc);
		AttrNumber	attno = intVal(linitial(assignment));
		Tcopy__Assignment *a = palloc(sizeof(Tcopy__Assignment));
		Oid			type = TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid;

		tcopy__assignment__init(a);
		a->column = (uint32_t) state->codec->column_of_att[attno - 1];
		a->op = (Tcopy__AssignOp) intVal(lsecond(assignment));
		if (a->op == TCOPY__ASSIGN_OP__ASSIGN_ADD)
		{
			a->min = type == INT2OID ? PG_INT16_MIN : type == INT4OID ? PG_INT32_MIN : PG_INT64_MIN;
			a->max = type == INT2OID ? PG_INT16_MAX : type == INT4OID ? PG_INT32_MAX : PG_INT64_MAX;
			add_type = OidIsValid(add_type) && add_type != type ? INT4OID : type;
		}
		state->request.set[i++] = a;
	}
	if (state->request.n_set > 0)
		state->request.values = tcopy_direct_values(state->codec, assignments);
	state->range_message = tcopy_int_range_message(add_type);

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (tcopy_xact_drops_table(&state->codec->options))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot write to foreign table \"%s\": its tserver table \"%s\" is dropped in this transaction",
						state->codec->relname, state->codec->options.table_name)));
	tcopy_lock_range(state->codec, &state->range,
					 tcopy_modify_lock_mode(state->codec, fsplan->operation,
											exec_rt_fetch(fsplan->scan.scanrelid, estate)->updatedCols));
}

/* Do the whole statement at the first call: no row comes back. */
TupleTableSlot *
tcopyIterateDirectModify(ForeignScanState *node)
{
	TcopyDirectState *state = (TcopyDirectState *) node->fdw_state;
	TcopyRelCodec *codec = state->codec;
	EState	   *estate = node->ss.ps.state;

	if (!state->done && !state->range.empty &&
		!tcopy_address_is_null(codec->options.address))
	{
		TcopyConnection *conn;
		uint64		parts = tcopy_key_range_ssi_parts(codec, &state->range);

		/* SERIALIZABLE: a read and a write, to Postgres' SSI, of the range's parts */
		tcopy_ssi_read_parts(node->ss.ss_currentRelation, estate->es_snapshot, parts);
		tcopy_ssi_write_parts(node->ss.ss_currentRelation, parts);
		conn = tcopy_xact_write_connection(&codec->options, codec->userid);
		state->request.table_id = tcopy_connection_table_id(conn, codec);
		/* before the session's first row of the table, as a writer sets it */
		tcopy_xact_set_on_conflict(conn, state->request.table_id, codec->options.on_conflict,
								   codec->relname);
		estate->es_processed += tcopy_xact_modify(conn, &state->request, state->range_message);
	}
	state->done = true;
	return ExecClearTuple(node->ss.ss_ScanTupleSlot);
}

void
tcopyEndDirectModify(ForeignScanState *node)
{
}

void
tcopyExplainDirectModify(ForeignScanState *node, ExplainState *es)
{
	TcopyDirectState *state = (TcopyDirectState *) node->fdw_state;
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	StringInfoData set;
	ListCell   *lc;

	ExplainPropertyText("Remote Table", state->codec->options.table_name, es);
	tcopy_explain_key_range(rel, &state->range, es);
	initStringInfo(&set);
	foreach(lc, (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_ASSIGNMENTS))
	{
		List	   *assignment = lfirst_node(List, lc);
		AttrNumber	attno = intVal(linitial(assignment));
		Const	   *value = (Const *) lthird(assignment);
		const char *name = quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(rel),
																  attno - 1)->attname));
		Oid			output;
		bool		varlena;

		appendStringInfo(&set, "%s%s = ", set.len > 0 ? ", " : "", name);
		if (intVal(lsecond(assignment)) == TCOPY__ASSIGN_OP__ASSIGN_ADD)
			appendStringInfo(&set, "%s + ", name);
		else if (intVal(lsecond(assignment)) == TCOPY_ASSIGN_SUBTRACT)
			appendStringInfo(&set, "%s - ", name);
		if (IsA(value, Param))
			appendStringInfo(&set, "$%d", ((Param *) value)->paramid);
		else if (value->constisnull)
			appendStringInfoString(&set, "NULL");
		else
		{
			getTypeOutputInfo(value->consttype, &output, &varlena);
			appendStringInfoString(&set, quote_literal_cstr(OidOutputFunctionCall(output, value->constvalue)));
		}
	}
	ExplainPropertyText("tserver Modify",
						state->request.kind == TCOPY__WRITE_KIND__WRITE_DELETE ? "DELETE" :
						psprintf("UPDATE SET %s", set.data), es);
	if (es->verbose)
		ExplainPropertyText("tserver", state->codec->options.address, es);
}
