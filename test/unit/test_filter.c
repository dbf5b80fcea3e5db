/*
 * test_filter.c
 *		Unit tests of ts_filter: the check of untrusted Expr trees, and the
 *		three-valued evaluation against what Postgres answers (NULLs, NaN
 *		and -0 in float8 order, big-endian integers, IN, bytes).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_test.h"
#include "tc_varint.h"
#include "ts_filter.h"

/* The test table: INT, FLOAT, BYTES (text), BYTES (a big-endian datum), BOOL. */
enum
{
	COL_INT, COL_FLOAT, COL_TEXT, COL_BE, COL_BOOL, NCOLS
};

static Tcopy__Kind kinds[NCOLS] = {
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BOOL
};
static bool is_key[NCOLS];
static TsLayout layout = {.ncolumns = NCOLS, .kinds = kinds, .is_key = is_key};

/* The trees' memory, freed at the end (the sanitizer build checks leaks). */
static void **allocations;
static size_t nallocations;

static void *
test_alloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size);

	allocations = realloc(allocations, (nallocations + 1) * sizeof(void *));
	allocations[nallocations++] = p;
	return p;
}

static void
test_free_all(void)
{
	for (size_t i = 0; i < nallocations; i++)
		free(allocations[i]);
	free(allocations);
}

static Tcopy__Expr *
node(Tcopy__ExprOp op)
{
	Tcopy__Expr *e = test_alloc(1, sizeof(Tcopy__Expr));

	tcopy__expr__init(e);
	e->op = op;
	return e;
}

static Tcopy__Expr *
bool_node(Tcopy__ExprOp op, Tcopy__Expr *a, Tcopy__Expr *b)
{
	Tcopy__Expr *e = node(op);

	e->args = test_alloc(2, sizeof(Tcopy__Expr *));
	e->args[e->n_args++] = a;
	if (b != NULL)
		e->args[e->n_args++] = b;
	return e;
}

static Tcopy__Expr *
int_leaf(Tcopy__ExprOp op, uint32_t column, Tcopy__ValueType type, size_t n, const int64_t *c)
{
	Tcopy__Expr *e = node(op);

	e->column = column;
	e->type = type;
	e->n_ints = n;
	e->ints = (int64_t *) c;
	return e;
}

static Tcopy__Expr *
float_leaf(Tcopy__ExprOp op, size_t n, const double *c)
{
	Tcopy__Expr *e = node(op);

	e->column = COL_FLOAT;
	e->type = TCOPY__VALUE_TYPE__VALUE_FLOAT;
	e->n_floats = n;
	e->floats = (double *) c;
	return e;
}

static Tcopy__Expr *
text_leaf(Tcopy__ExprOp op, const char *s1, const char *s2)
{
	Tcopy__Expr *e = node(op);

	e->column = COL_TEXT;
	e->type = TCOPY__VALUE_TYPE__VALUE_BYTES;
	e->blobs = test_alloc(2, sizeof(ProtobufCBinaryData));
	e->blobs[e->n_blobs].data = (uint8_t *) s1;
	e->blobs[e->n_blobs++].len = strlen(s1);
	if (s2 != NULL)
	{
		e->blobs[e->n_blobs].data = (uint8_t *) s2;
		e->blobs[e->n_blobs++].len = strlen(s2);
	}
	return e;
}

static Tcopy__Expr *
null_test(Tcopy__ExprOp op, uint32_t column)
{
	Tcopy__Expr *e = node(op);

	e->column = column;
	return e;
}

/* The filter's value on values, after a successful check; -1 on error. */
static int
eval(const Tcopy__Expr *e, const TsValue *values)
{
	TsError		err;

	if (ts_filter_check(&layout, e, &err) != 0)
	{
		fprintf(stderr, "    check: %s\n", err.message);
		return -2;
	}
	return ts_filter_eval(e, values, &err);
}

/* Whether the check refuses e with ERROR_PROTOCOL. */
static bool
refused(const Tcopy__Expr *e)
{
	TsError		err;

	memset(&err, 0, sizeof(err));
	return ts_filter_check(&layout, e, &err) != 0 &&
		err.code == TCOPY__ERROR_CODE__ERROR_PROTOCOL;
}

static void
row_set(TsValue *values, int64_t i, double f, const char *text, const uint8_t *be, size_t belen)
{
	memset(values, 0, sizeof(TsValue) * NCOLS);
	values[COL_INT].i = i;
	values[COL_FLOAT].f = f;
	values[COL_TEXT].p = (const uint8_t *) text;
	values[COL_TEXT].len = text ? strlen(text) : 0;
	values[COL_TEXT].isnull = text == NULL;
	values[COL_BE].p = be;
	values[COL_BE].len = belen;
	values[COL_BE].isnull = be == NULL;
	values[COL_BOOL].i = 1;
}

/* Comparisons of integers, NULL compared, and IS [NOT] NULL. */
static void
test_int_and_null(void)
{
	static const int64_t c37[] = {37};
	TsValue		v[NCOLS];

	row_set(v, 37, 0, "a", NULL, 0);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_NE, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_LT, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_LE, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_GE, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_TRUE);
	v[COL_INT].i = INT64_MIN;
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_LT, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_GT, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_FALSE);

	/* a NULL compared is NULL, whatever the operator; IS NULL is not */
	v[COL_INT].isnull = true;
	for (int op = TCOPY__EXPR_OP__EXPR_EQ; op <= TCOPY__EXPR_OP__EXPR_IN; op++)
		CHECK_EQ_INT(eval(int_leaf(op, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c37), v), TS_FILTER_NULL);
	CHECK_EQ_INT(eval(null_test(TCOPY__EXPR_OP__EXPR_IS_NULL, COL_INT), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(null_test(TCOPY__EXPR_OP__EXPR_IS_NOT_NULL, COL_INT), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(null_test(TCOPY__EXPR_OP__EXPR_IS_NULL, COL_TEXT), v), TS_FILTER_FALSE);

	/* bool: false < true, as ints */
	{
		static const int64_t one[] = {1};

		CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BOOL, TCOPY__VALUE_TYPE__VALUE_INT, 1, one), v), TS_FILTER_TRUE);
		v[COL_BOOL].i = 0;
		CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_LT, COL_BOOL, TCOPY__VALUE_TYPE__VALUE_INT, 1, one), v), TS_FILTER_TRUE);
	}
}

/* AND, OR and NOT with SQL's truth tables, NULL included. */
static void
test_three_valued(void)
{
	static const int64_t c1[] = {1};
	static const int64_t c2[] = {2};
	/* (int = 1) gives TRUE, (int = 2) FALSE, (text IS NULL) compared: NULL leaf below */
	TsValue		v[NCOLS];
	Tcopy__Expr *t,
			   *f,
			   *n;

	row_set(v, 1, 0, NULL, NULL, 0);
	t = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1);
	f = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c2);
	n = text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "x", NULL);	/* text is NULL */
	CHECK_EQ_INT(eval(n, v), TS_FILTER_NULL);

	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_AND, t, t), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_AND, t, f), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_AND, t, n), v), TS_FILTER_NULL);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_AND, n, f), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_AND, n, n), v), TS_FILTER_NULL);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_OR, f, f), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_OR, f, t), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_OR, n, t), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_OR, f, n), v), TS_FILTER_NULL);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_NOT, t, NULL), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_NOT, f, NULL), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_NOT, n, NULL), v), TS_FILTER_NULL);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_NOT,
								bool_node(TCOPY__EXPR_OP__EXPR_OR, f, n), NULL), v), TS_FILTER_NULL);
}

/* float8_cmp_internal's order: every NaN equal and greatest, -0 = 0. */
static void
test_float_order(void)
{
	static const double nan1[] = {NAN};
	static const double zero[] = {0.0};
	static const double inf[] = {INFINITY};
	static const double in[] = {1.5, NAN};
	TsValue		v[NCOLS];

	row_set(v, 0, -NAN, "", NULL, 0);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_EQ, 1, nan1), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_GT, 1, inf), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_LE, 1, inf), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_NE, 1, nan1), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_IN, 2, in), v), TS_FILTER_TRUE);
	v[COL_FLOAT].f = INFINITY;
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_LT, 1, nan1), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_EQ, 1, nan1), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_IN, 2, in), v), TS_FILTER_FALSE);
	v[COL_FLOAT].f = -0.0;
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_EQ, 1, zero), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_LT, 1, zero), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_GE, 1, zero), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_LT, 1, nan1), v), TS_FILTER_TRUE);
	v[COL_FLOAT].f = -INFINITY;
	CHECK_EQ_INT(eval(float_leaf(TCOPY__EXPR_OP__EXPR_LT, 1, zero), v), TS_FILTER_TRUE);
}

/* Big-endian signed integers of 2, 4 and 8 bytes; another length fails. */
static void
test_be_int(void)
{
	static const uint8_t be2[] = {0xFF, 0xFE};	/* -2 */
	static const uint8_t be4[] = {0x80, 0x00, 0x00, 0x01};	/* INT32_MIN + 1 */
	static const uint8_t be8[] = {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};	/* 2^32 */
	static const int64_t m2[] = {-2};
	static const int64_t zero[] = {0};
	static const int64_t i32[] = {(int64_t) INT32_MIN + 1};
	static const int64_t big[] = {INT64_C(1) << 32};
	static const int64_t in[] = {7, INT64_C(1) << 32};
	TsValue		v[NCOLS];
	TsError		err;
	Tcopy__Expr *e;

	row_set(v, 0, 0, "", be2, 2);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, m2), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_LT, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, zero), v), TS_FILTER_TRUE);
	row_set(v, 0, 0, "", be4, 4);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, i32), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_GT, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, zero), v), TS_FILTER_FALSE);
	row_set(v, 0, 0, "", be8, 8);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, big), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_IN, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 2, in), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_GT, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, zero), v), TS_FILTER_TRUE);

	/* a stored value of another length: ERROR_STORAGE, not a guess */
	row_set(v, 0, 0, "", be8, 3);
	e = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BE, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, zero);
	CHECK(ts_filter_check(&layout, e, &err) == 0);
	CHECK_EQ_INT(ts_filter_eval(e, v, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_STORAGE);
	/* ... but NULL is NULL, whatever its length */
	v[COL_BE].isnull = true;
	CHECK_EQ_INT(ts_filter_eval(e, v, &err), TS_FILTER_NULL);
}

/* IN lists and byte equality (text: no collation, no trailing blanks). */
static void
test_in_and_bytes(void)
{
	static const int64_t in[] = {3, 5, 37};
	TsValue		v[NCOLS];

	row_set(v, 37, 0, "caf\xc3\xa9", NULL, 0);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_IN, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 3, in), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(int_leaf(TCOPY__EXPR_OP__EXPR_IN, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 2, in), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(bool_node(TCOPY__EXPR_OP__EXPR_NOT,
								int_leaf(TCOPY__EXPR_OP__EXPR_IN, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 2, in),
								NULL), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "caf\xc3\xa9", NULL), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "caf\xc3\xa9 ", NULL), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "caf", NULL), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_NE, "caf", NULL), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_NE, "caf\xc3\xa9", NULL), v), TS_FILTER_FALSE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_IN, "x", "caf\xc3\xa9"), v), TS_FILTER_TRUE);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_IN, "x", "y"), v), TS_FILTER_FALSE);
	/* the empty string is a value, not NULL */
	row_set(v, 0, 0, "", NULL, 0);
	CHECK_EQ_INT(eval(text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "", NULL), v), TS_FILTER_TRUE);
}

/* Malformed trees: ERROR_PROTOCOL, never a crash. */
static void
test_bad_exprs(void)
{
	static const int64_t c1[] = {1};
	static const double f1[] = {1.0};
	Tcopy__Expr *e;
	Tcopy__Expr *t = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1);
	Tcopy__Expr *deep;

	CHECK(refused(node(TCOPY__EXPR_OP__EXPR_NONE)));
	CHECK(refused(node((Tcopy__ExprOp) 99)));
	/* a column out of range */
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, NCOLS, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1)));
	CHECK(refused(null_test(TCOPY__EXPR_OP__EXPR_IS_NULL, NCOLS)));
	/* a type that does not fit the column */
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_FLOAT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1)));
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_BE_INT, 1, c1)));
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_NONE, 1, c1)));
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, (Tcopy__ValueType) 42, 1, c1)));
	/* constants: none, too many, of another type */
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 0, c1)));
	CHECK(refused(int_leaf(TCOPY__EXPR_OP__EXPR_IN, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 0, c1)));
	CHECK(refused(float_leaf(TCOPY__EXPR_OP__EXPR_LT, 0, f1)));
	e = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1);
	e->n_floats = 1;
	e->floats = (double *) f1;
	CHECK(refused(e));
	/* bytes are not ordered */
	CHECK(refused(text_leaf(TCOPY__EXPR_OP__EXPR_LT, "a", NULL)));
	CHECK(refused(text_leaf(TCOPY__EXPR_OP__EXPR_EQ, "a", "b")));
	/* AND of one, NOT of two, a leaf with arguments, IS NULL with a type */
	CHECK(refused(bool_node(TCOPY__EXPR_OP__EXPR_AND, t, NULL)));
	CHECK(refused(bool_node(TCOPY__EXPR_OP__EXPR_NOT, t, t)));
	e = bool_node(TCOPY__EXPR_OP__EXPR_AND, t, t);
	e->column = 1;
	CHECK(refused(e));
	e = bool_node(TCOPY__EXPR_OP__EXPR_OR, t, t);
	e->args[1] = NULL;
	CHECK(refused(e));
	e = null_test(TCOPY__EXPR_OP__EXPR_IS_NULL, COL_INT);
	e->type = TCOPY__VALUE_TYPE__VALUE_INT;
	CHECK(refused(e));
	e = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1);
	e->args = test_alloc(1, sizeof(Tcopy__Expr *));
	e->args[0] = t;
	e->n_args = 1;
	CHECK(refused(e));

	/* depth: 64 levels pass, 65 do not */
	deep = t;
	for (int d = 1; d < TS_FILTER_MAX_DEPTH; d++)
		deep = bool_node(TCOPY__EXPR_OP__EXPR_NOT, deep, NULL);
	CHECK(!refused(deep));
	CHECK(refused(bool_node(TCOPY__EXPR_OP__EXPR_NOT, deep, NULL)));

	/* nodes: an AND of too many leaves, shallow */
	e = node(TCOPY__EXPR_OP__EXPR_AND);
	e->n_args = TS_FILTER_MAX_NODES;
	e->args = test_alloc(e->n_args, sizeof(Tcopy__Expr *));
	for (size_t a = 0; a < e->n_args; a++)
		e->args[a] = t;
	CHECK(refused(e));
	e->n_args = TS_FILTER_MAX_NODES - 1;
	CHECK(!refused(e));
}

/* The columns a filter reads: its leaves', none of the others. */
static void
test_columns(void)
{
	static const int64_t c1[] = {1};
	bool		columns[NCOLS] = {false};
	Tcopy__Expr *e;

	e = bool_node(TCOPY__EXPR_OP__EXPR_OR,
				  bool_node(TCOPY__EXPR_OP__EXPR_NOT, null_test(TCOPY__EXPR_OP__EXPR_IS_NULL, COL_TEXT), NULL),
				  int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_BOOL, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1));
	REQUIRE(!refused(e));
	ts_filter_columns(e, columns);
	CHECK(!columns[COL_INT] && !columns[COL_FLOAT] && columns[COL_TEXT] && !columns[COL_BE] &&
		  columns[COL_BOOL]);
}

/* Pack a Scan whose filter is expr into a malloc'ed buffer. */
static uint8_t *
scan_packed(Tcopy__Expr *expr, size_t *len)
{
	Tcopy__Scan scan = TCOPY__SCAN__INIT;
	uint8_t    *buf;

	scan.table_id = 7;
	scan.filter = expr;
	*len = tcopy__scan__get_packed_size(&scan);
	buf = malloc(*len ? *len : 1);
	tcopy__scan__pack(&scan, buf);
	return buf;
}

/*
 * The check of a Scan's bytes before protobuf-c unpacks them by recursion:
 * 64 levels pass, 65 do not, nor a million levels of raw bytes, nor
 * malformed bytes; other fields are skipped whatever their wire type.
 */
static void
test_wire_depth(void)
{
	static const int64_t c1[] = {1};
	Tcopy__Expr *deep = int_leaf(TCOPY__EXPR_OP__EXPR_EQ, COL_INT, TCOPY__VALUE_TYPE__VALUE_INT, 1, c1);
	Tcopy__Scan scan = TCOPY__SCAN__INIT;
	uint32_t	columns[] = {1, 2};
	uint8_t    *buf;
	size_t		len;
	size_t		levels = 100000;
	uint8_t    *raw;

	for (int d = 1; d < TS_FILTER_MAX_DEPTH; d++)
		deep = bool_node(TCOPY__EXPR_OP__EXPR_NOT, deep, NULL);
	buf = scan_packed(deep, &len);
	CHECK(ts_filter_wire_check(buf, len));
	free(buf);
	buf = scan_packed(bool_node(TCOPY__EXPR_OP__EXPR_NOT, deep, NULL), &len);
	CHECK(!ts_filter_wire_check(buf, len));
	CHECK(!ts_filter_wire_check(buf, len - 1));
	free(buf);

	/* a Scan with every kind of other field, and no filter */
	scan.table_id = 3;
	scan.n_columns = 2;
	scan.columns = columns;
	scan.limit = UINT64_MAX;
	scan.session_key.data = (uint8_t *) "key";
	scan.session_key.len = 3;
	len = tcopy__scan__get_packed_size(&scan);
	buf = malloc(len);
	tcopy__scan__pack(&scan, buf);
	CHECK(ts_filter_wire_check(buf, len));
	CHECK(ts_filter_wire_check(buf, 0));
	free(buf);

	/*
	 * 100000 levels of args, well formed: each level a tag and the length
	 * of the rest, computed from the innermost (empty) level out
	 */
	{
		size_t	   *lengths = malloc(sizeof(size_t) * (levels + 1));
		uint8_t    *p;

		lengths[levels] = 0;
		for (size_t i = levels; i > 0; i--)
			lengths[i - 1] = 1 + tc_varint_size(lengths[i]) + lengths[i];
		raw = malloc(lengths[0]);
		p = raw;
		for (size_t i = 0; i < levels; i++)
		{
			*p++ = i == 0 ? 0x6A : 0x12;	/* Scan.filter, then Expr.args */
			p = tc_varint_put(p, lengths[i + 1]);
		}
		CHECK(!ts_filter_wire_check(raw, lengths[0]));
		free(raw);
		free(lengths);
	}
	/* a group wire type, a truncated varint */
	CHECK(!ts_filter_wire_check((const uint8_t *) "\x0B", 1));
	CHECK(!ts_filter_wire_check((const uint8_t *) "\x08\x80", 2));
}

int
main(void)
{
	TC_RUN(test_int_and_null);
	TC_RUN(test_three_valued);
	TC_RUN(test_float_order);
	TC_RUN(test_be_int);
	TC_RUN(test_in_and_bytes);
	TC_RUN(test_bad_exprs);
	TC_RUN(test_wire_depth);
	TC_RUN(test_columns);
	test_free_all();
	return tc_test_summary();
}
