/*
 * ts_filter.c
 *		A scan's filter: the check of an untrusted Expr tree, and its
 *		three-valued evaluation on decoded rows (ts_filter.h).
 *
 * Comparisons are Postgres' own: integers (bool, int2/4/8 and their
 * mixes) as int64; floats as float8_cmp_internal orders them, every NaN
 * equal to every other and above +Infinity, -0 equal to 0; a big-endian
 * integer of 2, 4 or 8 bytes (date, time, timestamp, timestamptz) as
 * that signed integer; bytes by equality alone.
 */
#include "ts_filter.h"

#include <math.h>
#include <string.h>

/* Where the check is in the tree. */
typedef struct FilterCheck
{
	const TsLayout *layout;
	size_t		nodes;			/* nodes seen so far */
	size_t		constants;		/* constants seen so far */
	TsError    *err;
} FilterCheck;

static int
filter_bad(FilterCheck *check, const char *what)
{
	ts_error_set(check->err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "bad scan filter: %s", what);
	return -1;
}

/* The constants of leaf: how many of its type's, and none of the others. */
static int
filter_check_constants(FilterCheck *check, const Tcopy__Expr *leaf, size_t *count)
{
	size_t		ints = leaf->n_ints,
				floats = leaf->n_floats,
				blobs = leaf->n_blobs;

	switch (leaf->type)
	{
		case TCOPY__VALUE_TYPE__VALUE_INT:
		case TCOPY__VALUE_TYPE__VALUE_BE_INT:
			*count = ints;
			ints = 0;
			break;
		case TCOPY__VALUE_TYPE__VALUE_FLOAT:
			*count = floats;
			floats = 0;
			break;
		case TCOPY__VALUE_TYPE__VALUE_BYTES:
			*count = blobs;
			blobs = 0;
			break;
		default:
			*count = 0;
			break;
	}
	if (ints + floats + blobs > 0)
		return filter_bad(check, "a leaf holds constants of another type than its own");
	check->constants += *count;
	if (check->constants > TS_FILTER_MAX_CONSTANTS)
		return filter_bad(check, "too many constants");
	return 0;
}

/* Whether a column of kind is read as type. */
static bool
filter_type_fits(Tcopy__ValueType type, Tcopy__Kind kind)
{
	switch (type)
	{
		case TCOPY__VALUE_TYPE__VALUE_INT:
			return kind == TCOPY__KIND__KIND_INT || kind == TCOPY__KIND__KIND_BOOL;
		case TCOPY__VALUE_TYPE__VALUE_FLOAT:
			return kind == TCOPY__KIND__KIND_FLOAT;
		case TCOPY__VALUE_TYPE__VALUE_BYTES:
		case TCOPY__VALUE_TYPE__VALUE_BE_INT:
			return kind == TCOPY__KIND__KIND_BYTES;
		default:
			return false;
	}
}

static int
filter_check_node(FilterCheck *check, const Tcopy__Expr *expr, int depth)
{
	size_t		count;

	if (expr == NULL)
		return filter_bad(check, "an empty node");
	if (depth > TS_FILTER_MAX_DEPTH)
		return filter_bad(check, "nested too deep");
	if (++check->nodes > TS_FILTER_MAX_NODES)
		return filter_bad(check, "too many nodes");
	switch (expr->op)
	{
		case TCOPY__EXPR_OP__EXPR_AND:
		case TCOPY__EXPR_OP__EXPR_OR:
		case TCOPY__EXPR_OP__EXPR_NOT:
			if (expr->op == TCOPY__EXPR_OP__EXPR_NOT ? expr->n_args != 1 : expr->n_args < 2)
				return filter_bad(check, "AND and OR take two arguments or more, NOT one");
			if (expr->column != 0 || expr->type != TCOPY__VALUE_TYPE__VALUE_NONE ||
				expr->n_ints + expr->n_floats + expr->n_blobs > 0)
				return filter_bad(check, "AND, OR and NOT take no column, type or constant");
			for (size_t a = 0; a < expr->n_args; a++)
			{
				if (filter_check_node(check, expr->args[a], depth + 1) != 0)
					return -1;
			}
			return 0;
		case TCOPY__EXPR_OP__EXPR_IS_NULL:
		case TCOPY__EXPR_OP__EXPR_IS_NOT_NULL:
			if (expr->n_args > 0 || expr->type != TCOPY__VALUE_TYPE__VALUE_NONE ||
				expr->n_ints + expr->n_floats + expr->n_blobs > 0)
				return filter_bad(check, "IS [NOT] NULL takes a column alone");
			if (expr->column >= check->layout->ncolumns)
				return filter_bad(check, "a column out of range");
			return 0;
		case TCOPY__EXPR_OP__EXPR_EQ:
		case TCOPY__EXPR_OP__EXPR_NE:
		case TCOPY__EXPR_OP__EXPR_LT:
		case TCOPY__EXPR_OP__EXPR_LE:
		case TCOPY__EXPR_OP__EXPR_GT:
		case TCOPY__EXPR_OP__EXPR_GE:
		case TCOPY__EXPR_OP__EXPR_IN:
			if (expr->n_args > 0)
				return filter_bad(check, "a comparison takes no arguments");
			if (expr->column >= check->layout->ncolumns)
				return filter_bad(check, "a column out of range");
			if (!filter_type_fits(expr->type, check->layout->kinds[expr->column]))
				return filter_bad(check, "a value type that does not fit its column's kind");
			if (expr->type == TCOPY__VALUE_TYPE__VALUE_BYTES &&
				expr->op != TCOPY__EXPR_OP__EXPR_EQ && expr->op != TCOPY__EXPR_OP__EXPR_NE &&
				expr->op != TCOPY__EXPR_OP__EXPR_IN)
				return filter_bad(check, "bytes are compared for equality only");
			if (filter_check_constants(check, expr, &count) != 0)
				return -1;
			if (expr->op == TCOPY__EXPR_OP__EXPR_IN ? count < 1 : count != 1)
				return filter_bad(check, "a comparison takes one constant, IN one or more");
			return 0;
		default:
			return filter_bad(check, "an unknown operator");
	}
}

int
ts_filter_check(const TsLayout *layout, const Tcopy__Expr *expr, TsError *err)
{
	FilterCheck check = {layout, 0, 0, err};

	return filter_check_node(&check, expr, 1);
}

/* A varint as protobuf-c reads it (at most 10 bytes); false past end. */
static bool
wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *value)
{
	uint64_t	v = 0;

	for (int i = 0; i < 10 && *p < end; i++)
	{
		uint8_t		b = *(*p)++;

		v |= (uint64_t) (b & 0x7F) << (7 * i);
		if ((b & 0x80) == 0)
		{
			*value = v;
			return true;
		}
	}
	return false;
}

/*
 * Walk the fields of a message in [p, end) at depth: a Scan (depth 0),
 * whose field 13 is the filter, or an Expr, whose field 2 holds its
 * arguments.  Recursion is bounded by TS_FILTER_MAX_DEPTH.
 */
static bool
wire_message(const uint8_t *p, const uint8_t *end, int depth)
{
	while (p < end)
	{
		uint64_t	key;
		uint64_t	value;

		if (!wire_varint(&p, end, &key))
			return false;
		switch (key & 7)
		{
			case 0:
				if (!wire_varint(&p, end, &value))
					return false;
				break;
			case 1:
				if (end - p < 8)
					return false;
				p += 8;
				break;
			case 5:
				if (end - p < 4)
					return false;
				p += 4;
				break;
			case 2:
				if (!wire_varint(&p, end, &value) || value > (uint64_t) (end - p))
					return false;
				if ((key >> 3) == (depth == 0 ? 13 : 2) &&
					(depth + 1 > TS_FILTER_MAX_DEPTH ||
					 !wire_message(p, p + value, depth + 1)))
					return false;
				p += value;
				break;
			default:
				return false;
		}
	}
	return true;
}

bool
ts_filter_wire_check(const uint8_t *scan, size_t len)
{
	return wire_message(scan, scan + len, 0);
}

void
ts_filter_columns(const Tcopy__Expr *expr, bool *columns)
{
	if (expr->n_args > 0)
	{
		for (size_t a = 0; a < expr->n_args; a++)
			ts_filter_columns(expr->args[a], columns);
	}
	else
		columns[expr->column] = true;
}

/* Postgres' float8_cmp_internal: NaNs equal and above all, -0 = 0. */
static inline int
filter_float_cmp(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return a > b ? 1 : a < b ? -1 : 0;
}

/* A big-endian signed integer of 2, 4 or 8 bytes; false for another length. */
static inline bool
filter_be_int(const TsValue *v, int64_t *out)
{
	const uint8_t *p = v->p;

	switch (v->len)
	{
		case 2:
			*out = (int16_t) (uint16_t) ((p[0] << 8) | p[1]);
			return true;
		case 4:
			*out = (int32_t) (((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
							  ((uint32_t) p[2] << 8) | p[3]);
			return true;
		case 8:
			{
				uint64_t	u = 0;

				for (int i = 0; i < 8; i++)
					u = (u << 8) | p[i];
				*out = (int64_t) u;
				return true;
			}
		default:
			return false;
	}
}

/* Whether a comparison's outcome cmp (<0, 0, >0) satisfies op. */
static inline bool
filter_cmp_holds(Tcopy__ExprOp op, int cmp)
{
	switch (op)
	{
		case TCOPY__EXPR_OP__EXPR_EQ:
			return cmp == 0;
		case TCOPY__EXPR_OP__EXPR_NE:
			return cmp != 0;
		case TCOPY__EXPR_OP__EXPR_LT:
			return cmp < 0;
		case TCOPY__EXPR_OP__EXPR_LE:
			return cmp <= 0;
		case TCOPY__EXPR_OP__EXPR_GT:
			return cmp > 0;
		default:
			return cmp >= 0;
	}
}

/* A comparison or IN of an integer value i: TRUE or FALSE. */
static inline int
filter_int_leaf(const Tcopy__Expr *leaf, int64_t i)
{
	if (leaf->op == TCOPY__EXPR_OP__EXPR_IN)
	{
		for (size_t k = 0; k < leaf->n_ints; k++)
		{
			if (leaf->ints[k] == i)
				return TS_FILTER_TRUE;
		}
		return TS_FILTER_FALSE;
	}
	return filter_cmp_holds(leaf->op, i < leaf->ints[0] ? -1 : i > leaf->ints[0] ? 1 : 0) ?
		TS_FILTER_TRUE : TS_FILTER_FALSE;
}

/* A comparison or IN on a non-NULL value: TRUE or FALSE, or -1. */
static int
filter_eval_leaf(const Tcopy__Expr *leaf, const TsValue *v, TsError *err)
{
	int64_t		i;

	switch (leaf->type)
	{
		case TCOPY__VALUE_TYPE__VALUE_INT:
			return filter_int_leaf(leaf, v->i);
		case TCOPY__VALUE_TYPE__VALUE_BE_INT:
			if (!filter_be_int(v, &i))
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
							 "stored value of column %u is %zu bytes, not a big-endian integer of 2, 4 or 8",
							 leaf->column, v->len);
				return -1;
			}
			return filter_int_leaf(leaf, i);
		case TCOPY__VALUE_TYPE__VALUE_FLOAT:
			if (leaf->op == TCOPY__EXPR_OP__EXPR_IN)
			{
				for (size_t k = 0; k < leaf->n_floats; k++)
				{
					if (filter_float_cmp(v->f, leaf->floats[k]) == 0)
						return TS_FILTER_TRUE;
				}
				return TS_FILTER_FALSE;
			}
			return filter_cmp_holds(leaf->op, filter_float_cmp(v->f, leaf->floats[0])) ?
				TS_FILTER_TRUE : TS_FILTER_FALSE;
		default:
			/* VALUE_BYTES: EQ, NE or IN */
			for (size_t k = 0; k < leaf->n_blobs; k++)
			{
				const ProtobufCBinaryData *c = &leaf->blobs[k];

				if (c->len == v->len && (v->len == 0 || memcmp(c->data, v->p, v->len) == 0))
					return leaf->op == TCOPY__EXPR_OP__EXPR_NE ? TS_FILTER_FALSE : TS_FILTER_TRUE;
			}
			return leaf->op == TCOPY__EXPR_OP__EXPR_NE ? TS_FILTER_TRUE : TS_FILTER_FALSE;
	}
}

int
ts_filter_eval(const Tcopy__Expr *expr, const TsValue *values, TsError *err)
{
	const TsValue *v;
	int			r;
	bool		saw_null = false;

	switch (expr->op)
	{
		case TCOPY__EXPR_OP__EXPR_AND:
		case TCOPY__EXPR_OP__EXPR_OR:
			{
				/* AND: FALSE wins, then NULL; OR: TRUE wins, then NULL */
				int			wins = expr->op == TCOPY__EXPR_OP__EXPR_AND ?
					TS_FILTER_FALSE : TS_FILTER_TRUE;

				for (size_t a = 0; a < expr->n_args; a++)
				{
					r = ts_filter_eval(expr->args[a], values, err);
					if (r < 0 || r == wins)
						return r;
					if (r == TS_FILTER_NULL)
						saw_null = true;
				}
				return saw_null ? TS_FILTER_NULL :
					wins == TS_FILTER_FALSE ? TS_FILTER_TRUE : TS_FILTER_FALSE;
			}
		case TCOPY__EXPR_OP__EXPR_NOT:
			r = ts_filter_eval(expr->args[0], values, err);
			if (r == TS_FILTER_TRUE)
				return TS_FILTER_FALSE;
			if (r == TS_FILTER_FALSE)
				return TS_FILTER_TRUE;
			return r;
		case TCOPY__EXPR_OP__EXPR_IS_NULL:
			return values[expr->column].isnull ? TS_FILTER_TRUE : TS_FILTER_FALSE;
		case TCOPY__EXPR_OP__EXPR_IS_NOT_NULL:
			return values[expr->column].isnull ? TS_FILTER_FALSE : TS_FILTER_TRUE;
		default:
			v = &values[expr->column];
			if (v->isnull)
				return TS_FILTER_NULL;
			return filter_eval_leaf(expr, v, err);
	}
}
