/*
 * key_range.c
 *		The key range a scan or a direct modify reads: the planner's
 *		candidate bounds (tcopy_clause_key_bound, here) that fall on the
 *		table's key, when it is a single column stored as an integer,
 *		combined into one range, as the wire carries it and as EXPLAIN
 *		shows it.
 */

#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "tcopy/codec.h"
#include "tcopy/fdw.h"

/*
 * A value a key bound may compare with: a non-null integer constant, or a
 * parameter of the statement of an integer type (a prepared statement's
 * $1: evaluated when the scan begins).
 */
static bool
tcopy_bound_value(Node *node)
{
	Oid			type;

	if (IsA(node, Const))
	{
		if (((Const *) node)->constisnull)
			return false;
		type = ((Const *) node)->consttype;
	}
	else if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN)
		type = ((Param *) node)->paramtype;
	else
		return false;
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/*
 * If clause compares a column of relation relid of an integer type with a
 * bound value (tcopy_bound_value) by a btree operator, append (attnum,
 * strategy, value) to *bounds, the strategy read as "column strategy
 * value", and return the attnum; else 0.
 */
AttrNumber
tcopy_clause_key_bound(Index relid, Expr *clause, List **bounds)
{
	OpExpr	   *op;
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Node	   *value;
	int			strategy;

	if (!IsA(clause, OpExpr))
		return 0;
	op = (OpExpr *) clause;
	if (list_length(op->args) != 2)
		return 0;
	left = linitial(op->args);
	right = lsecond(op->args);

	/* membership in integer_ops makes both operands int2, int4 or int8 */
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (strategy == InvalidStrategy)
		return 0;
	if (IsA(left, Var) && tcopy_bound_value(right))
	{
		var = (Var *) left;
		value = right;
	}
	else if (tcopy_bound_value(left) && IsA(right, Var))
	{
		var = (Var *) right;
		value = left;
		/* "const < column" is "column > const" */
		strategy = BTMaxStrategyNumber + 1 - strategy;
	}
	else
		return 0;

	if (var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
		return 0;

	*bounds = lappend(*bounds, list_make3(makeInteger(var->varattno),
										  makeInteger(strategy),
										  copyObject(value)));
	return var->varattno;
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
int64
tcopy_int64_of(Oid type, Datum value)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
	}
	elog(ERROR, "unexpected type %u of a key bound", type);
	return 0;					/* keep compiler quiet */
}

/*
 * The int64 value of a bound's constant or parameter (evaluated in
 * econtext); false for a NULL parameter, which no row's key equals.
 */
static bool
tcopy_bound_int64(Node *node, ExprContext *econtext, int64 *value)
{
	ExprState  *state;
	Datum		datum;
	bool		isnull;

	if (IsA(node, Const))
	{
		*value = tcopy_int64_of(((Const *) node)->consttype, ((Const *) node)->constvalue);
		return true;
	}
	if (econtext == NULL)
		elog(ERROR, "a key bound's parameter has no context to be evaluated in");
	state = ExecInitExpr((Expr *) node, NULL);
	datum = ExecEvalExprSwitchContext(state, econtext, &isnull);
	if (isnull)
		return false;
	*value = tcopy_int64_of(exprType(node), datum);
	return true;
}

/*
 * Keep the planner's candidate bounds that fall on the table's key, when it
 * is a single column stored as an integer, and combine them into a range.
 */
void
tcopy_key_range(TcopyRelCodec *codec, List *bounds, ExprContext *econtext,
				TcopyKeyRange *range)
{
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
		if (!tcopy_bound_int64(list_nth(bound, TCOPY_BOUND_VALUE), econtext, &value))
		{
			/* "key = NULL" holds for no row */
			range->empty = true;
			continue;
		}
		switch (intVal(list_nth(bound, TCOPY_BOUND_STRATEGY)))
		{
			case BTLessStrategyNumber:
				tcopy_bound_apply(&range->upper, value, false, false);
				break;
			case BTLessEqualStrategyNumber:
				tcopy_bound_apply(&range->upper, value, true, false);
				break;
			case BTEqualStrategyNumber:
				tcopy_bound_apply(&range->lower, value, true, true);
				tcopy_bound_apply(&range->upper, value, true, false);
				break;
			case BTGreaterEqualStrategyNumber:
				tcopy_bound_apply(&range->lower, value, true, true);
				break;
			case BTGreaterStrategyNumber:
				tcopy_bound_apply(&range->lower, value, false, true);
				break;
		}
	}
	if (range->lower.present || range->upper.present)
		range->key_attnum = key_attnum;
	if (range->lower.present && range->upper.present &&
		(range->lower.value > range->upper.value ||
		 (range->lower.value == range->upper.value &&
		  (!range->lower.inclusive || !range->upper.inclusive))))
		range->empty = true;
}

/* A key bound as the wire carries it: the key column's value. */
Tcopy__KeyBound *
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

/* EXPLAIN's "Key Range" line, if the range is bounded. */
void
tcopy_explain_key_range(Relation rel, const TcopyKeyRange *range, ExplainState *es)
{
	if (range->key_attnum != 0)
	{
		const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel),
												 range->key_attnum - 1)->attname);
		StringInfoData text;

		initStringInfo(&text);
		if (range->lower.present)
			appendStringInfo(&text, "%s %s " INT64_FORMAT, quote_identifier(name),
							 range->lower.inclusive ? ">=" : ">", range->lower.value);
		if (range->upper.present)
			appendStringInfo(&text, "%s%s %s " INT64_FORMAT,
							 range->lower.present ? " AND " : "",
							 quote_identifier(name),
							 range->upper.inclusive ? "<=" : "<", range->upper.value);
		ExplainPropertyText("Key Range", text.data, es);
	}
}

bool
tcopy_key_range_is_one_key(TcopyRelCodec *codec, const TcopyKeyRange *range)
{
	return list_length(codec->options.key_attnums) == 1 && range->key_attnum != 0 &&
		range->lower.present && range->upper.present && range->lower.inclusive &&
		range->upper.inclusive && range->lower.value == range->upper.value;
}

uint64
tcopy_key_range_ssi_parts(TcopyRelCodec *codec, const TcopyKeyRange *range)
{
	if (range->empty)
		return 0;
	if (tcopy_key_range_is_one_key(codec, range))
		return tcopy_ssi_part(range->lower.value);
	return TCOPY_SSI_ALL;
}
