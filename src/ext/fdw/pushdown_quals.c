/*
 * pushdown_quals.c
 *		Filters pushed down to the tserver (docs/scans.md#filters): which
 *		quals ship, the Expr tree the tserver evaluates, and EXPLAIN's
 *		"Remote Filter".
 *
 * A qual ships only when the tserver computes it exactly as Postgres
 * would, for every row: it is decided as postgres_fdw's is_foreign_expr
 * does, by walking the clause, and only these nodes pass:
 *	- a built-in btree comparison operator of the column's type's default
 *	  operator family (its negator's, for <>) between a column of the
 *	  relation and a constant or an external parameter, of one class of
 *	  types: integers (int2/4/8, mixed), bool, floats (float4/8, mixed),
 *	  date, time, timestamp and timestamptz each with itself, and, by
 *	  = and <> alone, text (or varchar) under a deterministic collation
 *	  and bytea: what the tserver compares as int64, as double in
 *	  float8_cmp_internal's order, as a big-endian integer, or as bytes;
 *	- col = ANY (array) (IN) and col <> ALL (array) (NOT IN) of these;
 *	- IS [NOT] NULL of a column not of a row type;
 *	- a bool column alone (col = true);
 *	- AND, OR and NOT of these.
 * The column may be under a RelabelType (varchar as text, a domain as its
 * base type).  Shipped quals also stay in the scan's local quals, so the
 * filter can only save work; still, it must never drop a row Postgres
 * keeps.
 *
 * Planning decides from the clause and the column's type; the scan's
 * start (tcopy_filter_build_shipped) evaluates the constants and
 * parameters and builds the Expr on the codec's wire columns, checking
 * that each column is stored as planning assumed.  A qual it cannot build
 * (a NULL parameter, an array holding a NULL, an empty array, a column
 * stored otherwise) is left to Postgres alone.
 */

#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "tcopy/fdw.h"

/*
 * Bounds on what one scan's filter carries, below the tserver's
 * (TS_FILTER_MAX_DEPTH 64, _NODES 10000, _CONSTANTS 100000): a clause
 * nested deeper does not ship, and the quals past the others do not.
 */
#define FILTER_MAX_DEPTH		32	/* BoolExprs in one clause */
#define FILTER_MAX_NODES		9000
#define FILTER_MAX_CONSTANTS	90000
#define FILTER_MAX_IN			10000	/* constants of one IN list */
#define FILTER_MAX_BYTES		(1024 * 1024)	/* of all the constants */

/* The classes of types whose values the tserver compares as Postgres does. */
typedef enum FilterClass
{
	CLASS_NONE,
	CLASS_INT,					/* int2, int4, int8: as int64 */
	CLASS_BOOL,					/* as 0 and 1 */
	CLASS_FLOAT,				/* float4, float8: as double */
	CLASS_DATE,					/* big-endian int32 */
	CLASS_TIME,					/* big-endian int64, as the next two */
	CLASS_TIMESTAMP,
	CLASS_TIMESTAMPTZ,
	CLASS_TEXT,					/* text, varchar: bytes, = and <> alone */
	CLASS_BYTEA					/* bytes, = and <> alone */
} FilterClass;

/* A walk over a clause: at planning (codec NULL) or building the Expr. */
typedef struct FilterWalk
{
	Index		relid;			/* planning: the relation's Vars' varno */
	TcopyRelCodec *codec;		/* building: the table's wire columns */
	ExprContext *econtext;		/* building: parameters are evaluated in */
	size_t		bytes;			/* building: the constants so far */
} FilterWalk;

static bool filter_clause(Node *node, FilterWalk *walk, Tcopy__Expr **out);

/* The class of a type (a domain's: its base type's). */
static FilterClass
filter_class_of(Oid type)
{
	switch (getBaseType(type))
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return CLASS_INT;
		case BOOLOID:
			return CLASS_BOOL;
		case FLOAT4OID:
		case FLOAT8OID:
			return CLASS_FLOAT;
		case DATEOID:
			return CLASS_DATE;
		case TIMEOID:
			return CLASS_TIME;
		case TIMESTAMPOID:
			return CLASS_TIMESTAMP;
		case TIMESTAMPTZOID:
			return CLASS_TIMESTAMPTZ;
		case TEXTOID:
		case VARCHAROID:
			return CLASS_TEXT;
		case BYTEAOID:
			return CLASS_BYTEA;
		default:
			return CLASS_NONE;
	}
}

/* How the tserver reads the values of a class. */
static Tcopy__ValueType
filter_value_type(FilterClass cls)
{
	switch (cls)
	{
		case CLASS_INT:
		case CLASS_BOOL:
			return TCOPY__VALUE_TYPE__VALUE_INT;
		case CLASS_FLOAT:
			return TCOPY__VALUE_TYPE__VALUE_FLOAT;
		case CLASS_TEXT:
		case CLASS_BYTEA:
			return TCOPY__VALUE_TYPE__VALUE_BYTES;
		default:
			return TCOPY__VALUE_TYPE__VALUE_BE_INT;
	}
}

/* The Var of the relation that node is, under RelabelTypes; else NULL. */
static Var *
filter_column(Node *node, FilterWalk *walk)
{
	Var		   *var;

	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL || !IsA(node, Var))
		return NULL;
	var = (Var *) node;
	if (var->varlevelsup != 0 || var->varattno <= 0 ||
		(walk->codec == NULL && var->varno != walk->relid))
		return NULL;
	return var;
}

/* Whether node is a value known when the scan starts: a constant or $n. */
static bool
filter_is_value(Node *node)
{
	while (IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (IsA(node, Const))
		return !((Const *) node)->constisnull;
	return IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN;
}

/*
 * Building: the wire column of var, if it is stored as class cls says
 * (planning assumed it from the type alone); -1 otherwise.
 */
static int
filter_wire_column(FilterWalk *walk, Var *var, FilterClass cls)
{
	TcopyRelCodec *codec = walk->codec;
	TcopyColumnCodec *col;
	int			column;

	if (var->varattno > codec->natts)
		return -1;
	column = codec->column_of_att[var->varattno - 1];
	if (column < 0)
		return -1;
	col = &codec->columns[column];
	if (cls == CLASS_NONE)
		return column;			/* IS [NOT] NULL: any column */
	if (filter_class_of(col->typid) != cls)
		return -1;
	switch (cls)
	{
		case CLASS_INT:
			return col->conv == TCOPY_CONV_INT2 || col->conv == TCOPY_CONV_INT4 ||
				col->conv == TCOPY_CONV_INT8 ? column : -1;
		case CLASS_BOOL:
			return col->conv == TCOPY_CONV_BOOL ? column : -1;
		case CLASS_FLOAT:
			return col->conv == TCOPY_CONV_FLOAT4 || col->conv == TCOPY_CONV_FLOAT8 ?
				column : -1;
		case CLASS_DATE:
			return col->conv == TCOPY_CONV_SEND && col->send_width == 4 ? column : -1;
		case CLASS_TIME:
		case CLASS_TIMESTAMP:
		case CLASS_TIMESTAMPTZ:
			return col->conv == TCOPY_CONV_SEND && col->send_width == 8 ? column : -1;
		case CLASS_TEXT:
			return col->conv == TCOPY_CONV_TEXT && col->is_text ? column : -1;
		case CLASS_BYTEA:
			return col->conv == TCOPY_CONV_TEXT && !col->is_text ? column : -1;
		default:
			return -1;
	}
}

/* A leaf on column, of class cls, to hold n constants. */
static Tcopy__Expr *
filter_make_leaf(Tcopy__ExprOp op, int column, FilterClass cls, int n)
{
	Tcopy__Expr *leaf = palloc(sizeof(Tcopy__Expr));

	tcopy__expr__init(leaf);
	leaf->op = op;
	leaf->column = (uint32_t) column;
	leaf->type = filter_value_type(cls);
	switch (leaf->type)
	{
		case TCOPY__VALUE_TYPE__VALUE_FLOAT:
			leaf->floats = palloc(sizeof(double) * n);
			break;
		case TCOPY__VALUE_TYPE__VALUE_BYTES:
			leaf->blobs = palloc(sizeof(ProtobufCBinaryData) * n);
			break;
		default:
			leaf->ints = palloc(sizeof(int64_t) * n);
			break;
	}
	return leaf;
}

/*
 * Append a non-NULL value of type (of class cls) to leaf's constants; false
 * when the filter's constants would grow past their bound.
 */
static bool
filter_add_constant(FilterWalk *walk, Tcopy__Expr *leaf, FilterClass cls, Oid type, Datum value)
{
	Oid			base = getBaseType(type);

	switch (cls)
	{
		case CLASS_INT:
			leaf->ints[leaf->n_ints++] = tcopy_int64_of(base, value);
			break;
		case CLASS_BOOL:
			leaf->ints[leaf->n_ints++] = DatumGetBool(value) ? 1 : 0;
			break;
		case CLASS_FLOAT:
			leaf->floats[leaf->n_floats++] = base == FLOAT4OID ?
				(double) DatumGetFloat4(value) : DatumGetFloat8(value);
			break;
		case CLASS_DATE:
			leaf->ints[leaf->n_ints++] = DatumGetDateADT(value);
			break;
		case CLASS_TIME:
		case CLASS_TIMESTAMP:
		case CLASS_TIMESTAMPTZ:
			leaf->ints[leaf->n_ints++] = DatumGetInt64(value);
			break;
		case CLASS_TEXT:
		case CLASS_BYTEA:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
				size_t		len = VARSIZE_ANY_EXHDR(v);
				ProtobufCBinaryData *blob = &leaf->blobs[leaf->n_blobs++];

				/* copied: the value may live in per-tuple memory */
				blob->data = palloc(Max(len, 1));
				memcpy(blob->data, VARDATA_ANY(v), len);
				blob->len = len;
				walk->bytes += len;
				break;
			}
		default:
			return false;
	}
	walk->bytes += 8;
	return walk->bytes <= FILTER_MAX_BYTES;
}

/* Evaluate a value node (a constant, a parameter, an array of them). */
static Datum
filter_eval(Node *node, FilterWalk *walk, bool *isnull)
{
	ExprState  *state;

	if (IsA(node, Const))
	{
		*isnull = ((Const *) node)->constisnull;
		return ((Const *) node)->constvalue;
	}
	state = ExecInitExpr((Expr *) node, NULL);
	return ExecEvalExprSwitchContext(state, walk->econtext, isnull);
}

/*
 * The comparison op of node's operator, read with its column on the left
 * (var_left), and the class of its operands: CLASS_NONE when it is not a
 * comparison the tserver makes as Postgres does.
 */
static FilterClass
filter_operator(Oid opno, Oid inputcollid, bool var_left, Tcopy__ExprOp *op)
{
	Oid			lefttype,
				righttype;
	FilterClass cls;
	Oid			family;
	int			strategy;

	if (opno >= FirstGenbkiObjectId)
		return CLASS_NONE;
	op_input_types(opno, &lefttype, &righttype);
	cls = filter_class_of(lefttype);
	if (cls == CLASS_NONE || filter_class_of(righttype) != cls)
		return CLASS_NONE;

	/*
	 * The family of the column's type's default btree operator class, as
	 * GetDefaultOpClass finds it; the type cache keeps it (and forgets it
	 * when pg_opclass changes), where GetDefaultOpClass scans pg_opclass at
	 * each call, which cost more than the rest of the planning of a
	 * key-point query.
	 */
	family = lookup_type_cache(var_left ? lefttype : righttype,
							   TYPECACHE_BTREE_OPFAMILY)->btree_opf;
	if (!OidIsValid(family))
		return CLASS_NONE;
	strategy = get_op_opfamily_strategy(opno, family);
	if (strategy == InvalidStrategy)
	{
		Oid			negator = get_negator(opno);

		if (!OidIsValid(negator) || negator >= FirstGenbkiObjectId ||
			get_op_opfamily_strategy(negator, family) != BTEqualStrategyNumber)
			return CLASS_NONE;
		*op = TCOPY__EXPR_OP__EXPR_NE;
	}
	else
	{
		/* "value < column" is "column > value" */
		if (!var_left)
			strategy = BTMaxStrategyNumber + 1 - strategy;
		switch (strategy)
		{
			case BTLessStrategyNumber:
				*op = TCOPY__EXPR_OP__EXPR_LT;
				break;
			case BTLessEqualStrategyNumber:
				*op = TCOPY__EXPR_OP__EXPR_LE;
				break;
			case BTEqualStrategyNumber:
				*op = TCOPY__EXPR_OP__EXPR_EQ;
				break;
			case BTGreaterEqualStrategyNumber:
				*op = TCOPY__EXPR_OP__EXPR_GE;
				break;
			default:
				*op = TCOPY__EXPR_OP__EXPR_GT;
				break;
		}
	}
	/* bytes: equality alone, and text's only under a collation that is bytes' */
	if (cls == CLASS_TEXT || cls == CLASS_BYTEA)
	{
		if (*op != TCOPY__EXPR_OP__EXPR_EQ && *op != TCOPY__EXPR_OP__EXPR_NE)
			return CLASS_NONE;
		if (cls == CLASS_TEXT &&
			(!OidIsValid(inputcollid) || !get_collation_isdeterministic(inputcollid)))
			return CLASS_NONE;
	}
	return cls;
}

/* column op value, or value op column. */
static bool
filter_opexpr(OpExpr *expr, FilterWalk *walk, Tcopy__Expr **out)
{
	Node	   *left;
	Node	   *right;
	Var		   *var;
	Node	   *value;
	bool		var_left;
	FilterClass cls;
	Tcopy__ExprOp op;
	int			column;
	Datum		datum;
	bool		isnull;

	if (list_length(expr->args) != 2)
		return false;
	left = linitial(expr->args);
	right = lsecond(expr->args);
	if ((var = filter_column(left, walk)) != NULL && filter_is_value(right))
	{
		var_left = true;
		value = right;
	}
	else if ((var = filter_column(right, walk)) != NULL && filter_is_value(left))
	{
		var_left = false;
		value = left;
	}
	else
		return false;
	cls = filter_operator(expr->opno, expr->inputcollid, var_left, &op);
	if (cls == CLASS_NONE || filter_class_of(var->vartype) != cls)
		return false;
	if (out == NULL)
		return true;

	column = filter_wire_column(walk, var, cls);
	if (column < 0)
		return false;
	datum = filter_eval(value, walk, &isnull);
	if (isnull)
		return false;			/* NULL, never TRUE: left to Postgres */
	*out = filter_make_leaf(op, column, cls, 1);
	return filter_add_constant(walk, *out, cls, exprType(value), datum);
}

/* column = ANY (array) (IN), column <> ALL (array) (NOT IN). */
static bool
filter_in(ScalarArrayOpExpr *expr, FilterWalk *walk, Tcopy__Expr **out)
{
	Node	   *array;
	Var		   *var;
	FilterClass cls;
	Tcopy__ExprOp op;
	Oid			elemtype;
	int			column;
	Datum		datum;
	bool		isnull;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Tcopy__Expr *leaf;

	if (list_length(expr->args) != 2 ||
		(var = filter_column(linitial(expr->args), walk)) == NULL)
		return false;
	array = lsecond(expr->args);
	cls = filter_operator(expr->opno, expr->inputcollid, true, &op);
	if (cls == CLASS_NONE || filter_class_of(var->vartype) != cls ||
		op != (expr->useOr ? TCOPY__EXPR_OP__EXPR_EQ : TCOPY__EXPR_OP__EXPR_NE))
		return false;
	elemtype = get_element_type(exprType(array));
	if (!OidIsValid(elemtype) || filter_class_of(elemtype) != cls)
		return false;
	if (IsA(array, ArrayExpr))
	{
		ListCell   *lc;

		if (((ArrayExpr *) array)->multidims)
			return false;
		foreach(lc, ((ArrayExpr *) array)->elements)
		{
			if (!filter_is_value(lfirst(lc)))
				return false;
		}
	}
	else if (IsA(array, Const))
	{
		if (((Const *) array)->constisnull ||
			array_contains_nulls(DatumGetArrayTypeP(((Const *) array)->constvalue)))
			return false;
	}
	else if (!filter_is_value(array))
		return false;
	if (out == NULL)
		return true;

	column = filter_wire_column(walk, var, cls);
	if (column < 0)
		return false;
	datum = filter_eval(array, walk, &isnull);
	if (isnull)
		return false;
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(DatumGetArrayTypeP(datum), elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	/* an empty list, a NULL in it: never TRUE for IN, nor for NOT IN; too long */
	if (n == 0 || n > FILTER_MAX_IN)
		return false;
	leaf = filter_make_leaf(TCOPY__EXPR_OP__EXPR_IN, column, cls, n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i] || !filter_add_constant(walk, leaf, cls, elemtype, elems[i]))
			return false;
	}
	if (expr->useOr)
		*out = leaf;
	else
	{
		*out = palloc(sizeof(Tcopy__Expr));
		tcopy__expr__init(*out);
		(*out)->op = TCOPY__EXPR_OP__EXPR_NOT;
		(*out)->n_args = 1;
		(*out)->args = palloc(sizeof(Tcopy__Expr *));
		(*out)->args[0] = leaf;
	}
	return true;
}

/* column IS [NOT] NULL, of a column not of a row type. */
static bool
filter_null_test(NullTest *test, FilterWalk *walk, Tcopy__Expr **out)
{
	Var		   *var = filter_column((Node *) test->arg, walk);
	int			column;

	if (var == NULL || test->argisrow || type_is_rowtype(var->vartype))
		return false;
	if (out == NULL)
		return true;
	column = filter_wire_column(walk, var, CLASS_NONE);
	if (column < 0)
		return false;
	*out = palloc(sizeof(Tcopy__Expr));
	tcopy__expr__init(*out);
	(*out)->op = test->nulltesttype == IS_NULL ?
		TCOPY__EXPR_OP__EXPR_IS_NULL : TCOPY__EXPR_OP__EXPR_IS_NOT_NULL;
	(*out)->column = (uint32_t) column;
	return true;
}

/* A bool column alone: column = true. */
static bool
filter_bool_column(Var *var, FilterWalk *walk, Tcopy__Expr **out)
{
	int			column;

	if (filter_column((Node *) var, walk) == NULL || filter_class_of(var->vartype) != CLASS_BOOL)
		return false;
	if (out == NULL)
		return true;
	column = filter_wire_column(walk, var, CLASS_BOOL);
	if (column < 0)
		return false;
	*out = filter_make_leaf(TCOPY__EXPR_OP__EXPR_EQ, column, CLASS_BOOL, 1);
	(*out)->ints[(*out)->n_ints++] = 1;
	return true;
}

/* AND, OR, NOT of clauses that ship. */
static bool
filter_bool_expr(BoolExpr *expr, FilterWalk *walk, Tcopy__Expr **out)
{
	int			nargs = list_length(expr->args);
	ListCell   *lc;

	if (expr->boolop == NOT_EXPR ? nargs != 1 : nargs < 2)
		return false;
	if (out != NULL)
	{
		*out = palloc(sizeof(Tcopy__Expr));
		tcopy__expr__init(*out);
		(*out)->op = expr->boolop == AND_EXPR ? TCOPY__EXPR_OP__EXPR_AND :
			expr->boolop == OR_EXPR ? TCOPY__EXPR_OP__EXPR_OR : TCOPY__EXPR_OP__EXPR_NOT;
		(*out)->args = palloc(sizeof(Tcopy__Expr *) * nargs);
	}
	foreach(lc, expr->args)
	{
		Tcopy__Expr *arg = NULL;

		if (!filter_clause(lfirst(lc), walk, out != NULL ? &arg : NULL))
			return false;
		if (out != NULL)
			(*out)->args[(*out)->n_args++] = arg;
	}
	return true;
}

/*
 * Whether clause ships (out NULL), or its Expr in *out (false: it cannot be
 * built, and is left to Postgres).
 */
static bool
filter_clause(Node *node, FilterWalk *walk, Tcopy__Expr **out)
{
	check_stack_depth();
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_OpExpr:
			return filter_opexpr((OpExpr *) node, walk, out);
		case T_ScalarArrayOpExpr:
			return filter_in((ScalarArrayOpExpr *) node, walk, out);
		case T_NullTest:
			return filter_null_test((NullTest *) node, walk, out);
		case T_Var:
			return filter_bool_column((Var *) node, walk, out);
		case T_BoolExpr:
			return filter_bool_expr((BoolExpr *) node, walk, out);
		default:
			return false;
	}
}

/* The BoolExprs nested in a clause. */
static int
filter_depth(Node *node)
{
	int			depth = 0;

	if (IsA(node, BoolExpr))
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) node)->args)
			depth = Max(depth, filter_depth(lfirst(lc)));
		depth++;
	}
	return depth;
}

/* Add the nodes and the constants of a built Expr to the counts. */
static void
filter_count(const Tcopy__Expr *expr, int *nodes, size_t *constants)
{
	(*nodes)++;
	*constants += expr->n_ints + expr->n_floats + expr->n_blobs;
	for (size_t a = 0; a < expr->n_args; a++)
		filter_count(expr->args[a], nodes, constants);
}

/*
 * Whether the restriction clause of baserel ships to the tserver, from the
 * clause and the column's type alone (the table's wire columns are known
 * at execution).
 */
bool
tcopy_qual_is_shippable(PlannerInfo *root, RelOptInfo *baserel, Expr *clause)
{
	FilterWalk	walk = {0};

	walk.relid = baserel->relid;
	return filter_depth((Node *) clause) <= FILTER_MAX_DEPTH &&
		filter_clause((Node *) clause, &walk, NULL);
}

/*
 * The filter of the quals that tcopy_qual_is_shippable passed, built on
 * codec's wire columns, their constants and parameters evaluated in ps's
 * expression context; NULL when none can be built.  *shipped (if not NULL)
 * gets the quals it holds.
 */
Tcopy__Expr *
tcopy_filter_build_shipped(TcopyRelCodec *codec, List *quals, PlanState *ps, List **shipped)
{
	FilterWalk	walk = {0};
	Tcopy__Expr **args;
	int			nargs = 0;
	Tcopy__Expr *and;
	int			nodes = 1;		/* the AND */
	size_t		constants = 0;
	ListCell   *lc;

	if (shipped != NULL)
		*shipped = NIL;
	if (quals == NIL)
		return NULL;
	walk.codec = codec;
	walk.econtext = ps->ps_ExprContext;
	args = palloc(sizeof(Tcopy__Expr *) * list_length(quals));
	foreach(lc, quals)
	{
		Tcopy__Expr *expr = NULL;
		size_t		bytes = walk.bytes;
		int			qual_nodes = 0;
		size_t		qual_constants = 0;

		if (!filter_clause(lfirst(lc), &walk, &expr))
		{
			walk.bytes = bytes;
			continue;
		}
		filter_count(expr, &qual_nodes, &qual_constants);
		if (nodes + qual_nodes > FILTER_MAX_NODES ||
			constants + qual_constants > FILTER_MAX_CONSTANTS)
		{
			walk.bytes = bytes;
			continue;
		}
		nodes += qual_nodes;
		constants += qual_constants;
		args[nargs++] = expr;
		if (shipped != NULL)
			*shipped = lappend(*shipped, lfirst(lc));
	}
	if (nargs == 0)
		return NULL;
	if (nargs == 1)
		return args[0];
	and = palloc(sizeof(Tcopy__Expr));
	tcopy__expr__init(and);
	and->op = TCOPY__EXPR_OP__EXPR_AND;
	and->n_args = nargs;
	and->args = args;
	return and;
}

Tcopy__Expr *
tcopy_filter_build(TcopyRelCodec *codec, List *quals, PlanState *ps)
{
	return tcopy_filter_build_shipped(codec, quals, ps, NULL);
}

/*
 * The quals less those the scan's key range holds exactly: the comparisons
 * of its key column key_attnum with a value that tcopy_key_range applied
 * (every one, when it bounded the range at all).
 */
List *
tcopy_filter_without_key_bounds(List *quals, AttrNumber key_attnum)
{
	List	   *kept = NIL;
	ListCell   *lc;

	if (key_attnum == 0)
		return quals;
	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);
		List	   *bounds = NIL;
		Var		   *var = NULL;

		if (IsA(qual, OpExpr) && list_length(((OpExpr *) qual)->args) == 2)
		{
			Node	   *left = linitial(((OpExpr *) qual)->args);
			Node	   *right = lsecond(((OpExpr *) qual)->args);

			var = (Var *) (IsA(left, Var) ? left : IsA(right, Var) ? right : NULL);
		}
		if (var == NULL ||
			tcopy_clause_key_bound(var->varno, (Expr *) qual, &bounds) != key_attnum)
			kept = lappend(kept, qual);
		list_free_deep(bounds);
	}
	return kept;
}

/* A Var of the quals, pointed at the scan's range table entry. */
static Node *
filter_varno_mutator(Node *node, void *context)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) copyObject(node);

		var->varno = *(Index *) context;
		return (Node *) var;
	}
	return expression_tree_mutator(node, filter_varno_mutator, context);
}

/*
 * EXPLAIN's "Remote Filter": the quals the tserver evaluates, as Postgres'
 * "Filter" shows quals.  The plan's quals keep the planner's varno, which
 * the final range table may have moved (setrefs.c): their Vars are
 * pointed at the scan's relation (a scan of an upper rel, scanrelid 0: at
 * the one base relation of ForeignScan.fs_relids).
 */
void
tcopy_explain_filter(List *quals, PlanState *ps, List *ancestors, struct ExplainState *es)
{
	Index		scanrelid = ((Scan *) ps->plan)->scanrelid;
	List	   *context;
	Node	   *expr;
	bool		useprefix;
	int			relid;

	if (quals == NIL)
		return;
	if (scanrelid == 0 && IsA(ps->plan, ForeignScan) &&
		bms_get_singleton_member(((ForeignScan *) ps->plan)->fs_relids, &relid))
		scanrelid = (Index) relid;
	expr = (Node *) make_ands_explicit(quals);
	if (scanrelid != 0)
		expr = filter_varno_mutator(expr, &scanrelid);
	context = set_deparse_context_plan(es->deparse_cxt, ps->plan, ancestors);
	/* as explain.c's show_scan_qual */
	useprefix = es->verbose;
	ExplainPropertyText("Remote Filter",
						deparse_expression(expr, context, useprefix, false), es);
}
