/*
 * test_codec.c
 *		Unit tests of ts_codec: schema validation, row checks, the order of
 *		encoded keys, round trips, and decoding of untrusted bytes.
 *
 * The key tests compare every pair of a set of values: the memcmp order of
 * two encoded keys (a shorter key first when one is a prefix of the other,
 * as RocksDB's bytewise comparator does) must be the order of the values:
 * ints and floats numerically (-0 just below +0, NaN above everything and
 * equal to itself), bytes as unsigned strings with a prefix first, and
 * multi-column keys column by column in key order.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tc_arena.h"
#include "tc_test.h"
#include "ts_codec.h"

#define MAX_TEST_COLUMNS 16

/* Deterministic pseudo-random numbers (xorshift64). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t
rnd(void)
{
	uint64_t	x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

/* ---- schemas ---- */

/* A heap-allocated schema of ncolumns columns and nkey key columns. */
static Tcopy__Schema *
schema_make(size_t ncolumns, const Tcopy__Kind *kinds, size_t nkey, const uint32_t *key)
{
	Tcopy__Schema *schema = malloc(sizeof(*schema));

	tcopy__schema__init(schema);
	schema->n_columns = ncolumns;
	schema->columns = calloc(ncolumns ? ncolumns : 1, sizeof(Tcopy__Column *));
	for (size_t i = 0; i < ncolumns; i++)
	{
		Tcopy__Column *column = malloc(sizeof(*column));

		tcopy__column__init(column);
		column->name = "c";
		column->kind = kinds[i];
		column->type_name = "t";
		schema->columns[i] = column;
	}
	schema->n_key = nkey;
	schema->key = calloc(nkey ? nkey : 1, sizeof(uint32_t));
	if (nkey)
		memcpy(schema->key, key, nkey * sizeof(uint32_t));
	return schema;
}

static void
schema_free(Tcopy__Schema *schema)
{
	for (size_t i = 0; i < schema->n_columns; i++)
		free(schema->columns[i]);
	free(schema->columns);
	free(schema->key);
	free(schema);
}

/* Initialise layout from kinds and key; false (a failed check) if refused. */
static bool
layout_make(TsLayout *layout, size_t ncolumns, const Tcopy__Kind *kinds,
			size_t nkey, const uint32_t *key)
{
	Tcopy__Schema *schema = schema_make(ncolumns, kinds, nkey, key);
	TsError		err;
	int			rc;

	memset(&err, 0, sizeof(err));
	rc = ts_layout_init(layout, schema, &err);
	schema_free(schema);
	if (rc != 0)
		fprintf(stderr, "    ts_layout_init refused a valid schema: %s\n", err.message);
	return rc == 0;
}

/* ---- rows ---- */

/* A Tcopy__Row with room for MAX_TEST_COLUMNS values of each kind. */
typedef struct RowBuf
{
	Tcopy__Row	row;
	int64_t		ints[MAX_TEST_COLUMNS];
	double		floats[MAX_TEST_COLUMNS];
	ProtobufCBinaryData blobs[MAX_TEST_COLUMNS];
	uint32_t	nulls[MAX_TEST_COLUMNS];
} RowBuf;

/* Lay vals[ncolumns] out as a compact Row of layout's kinds. */
static void
row_build(RowBuf *rb, const TsLayout *layout, const TsValue *vals)
{
	tcopy__row__init(&rb->row);
	rb->row.ints = rb->ints;
	rb->row.floats = rb->floats;
	rb->row.blobs = rb->blobs;
	rb->row.nulls = rb->nulls;
	for (uint32_t i = 0; i < layout->ncolumns; i++)
	{
		if (vals[i].isnull)
		{
			rb->nulls[rb->row.n_nulls++] = i;
			continue;
		}
		switch (layout->kinds[i])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				rb->ints[rb->row.n_ints++] = vals[i].i;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				rb->floats[rb->row.n_floats++] = vals[i].f;
				break;
			default:
				rb->blobs[rb->row.n_blobs].data = (uint8_t *) vals[i].p;
				rb->blobs[rb->row.n_blobs].len = vals[i].len;
				rb->row.n_blobs++;
				break;
		}
	}
}

/* A row given directly by its arrays, for the row checks. */
static Tcopy__Row
row_of(size_t n_ints, int64_t *ints, size_t n_floats, double *floats,
	   size_t n_blobs, ProtobufCBinaryData *blobs, size_t n_nulls, uint32_t *nulls)
{
	Tcopy__Row	row = TCOPY__ROW__INIT;

	row.n_ints = n_ints;
	row.ints = ints;
	row.n_floats = n_floats;
	row.floats = floats;
	row.n_blobs = n_blobs;
	row.blobs = blobs;
	row.n_nulls = n_nulls;
	row.nulls = nulls;
	return row;
}

/* ---- comparisons ---- */

static int
sign_of(int v)
{
	return (v > 0) - (v < 0);
}

/* Bytewise comparison of two keys, a prefix first (RocksDB's order). */
static int
key_cmp(const TcBuf *a, const TcBuf *b)
{
	size_t		n = a->len < b->len ? a->len : b->len;
	int			c = n ? memcmp(a->data, b->data, n) : 0;

	if (c != 0)
		return sign_of(c);
	return (a->len > b->len) - (a->len < b->len);
}

static int
float_cmp(double a, double b)
{
	bool		na = isnan(a);
	bool		nb = isnan(b);

	if (na || nb)
		return na == nb ? 0 : (na ? 1 : -1);
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	if (a == 0)
		return (signbit(b) != 0) - (signbit(a) != 0);	/* -0 < +0 */
	return 0;
}

static int
bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t		n = alen < blen ? alen : blen;
	int			c = n ? memcmp(a, b, n) : 0;

	if (c != 0)
		return sign_of(c);
	return (alen > blen) - (alen < blen);
}

static int
value_cmp(Tcopy__Kind kind, const TsValue *a, const TsValue *b)
{
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
		case TCOPY__KIND__KIND_INT:
			return (a->i > b->i) - (a->i < b->i);
		case TCOPY__KIND__KIND_FLOAT:
			return float_cmp(a->f, b->f);
		default:
			return bytes_cmp(a->p, a->len, b->p, b->len);
	}
}

/* Order of two rows' keys: column by column in key order. */
static int
tuple_cmp(const TsLayout *layout, const TsValue *a, const TsValue *b)
{
	for (uint32_t k = 0; k < layout->nkey; k++)
	{
		uint32_t	col = layout->key_columns[k];
		int			c = value_cmp(layout->kinds[col], &a[col], &b[col]);

		if (c != 0)
			return c;
	}
	return 0;
}

static double
double_from_bits(uint64_t bits)
{
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static uint64_t
bits_of_double(double d)
{
	uint64_t	bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

static void
describe_value(Tcopy__Kind kind, const TsValue *v)
{
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
		case TCOPY__KIND__KIND_INT:
			fprintf(stderr, "%lld", (long long) v->i);
			break;
		case TCOPY__KIND__KIND_FLOAT:
			fprintf(stderr, "%g (bits %016llx)", v->f,
					(unsigned long long) bits_of_double(v->f));
			break;
		default:
			fprintf(stderr, "'");
			for (size_t i = 0; i < v->len; i++)
				fprintf(stderr, "\\x%02x", v->p[i]);
			fprintf(stderr, "'");
			break;
	}
}

/*
 * Encode one key per row of values (rows[n][ncolumns]) and check that every
 * pair's key order is the pair's value order; also that no key is a proper
 * prefix of another.  Reports the first few mismatches.
 */
static void
check_key_order(const TsLayout *layout, uint32_t table_id, TsValue (*rows)[MAX_TEST_COLUMNS],
				size_t n, const char *what)
{
	TcBuf	   *keys = calloc(n, sizeof(TcBuf));
	int			mismatches = 0;
	int			prefixes = 0;
	int			failed_encodes = 0;

	for (size_t i = 0; i < n; i++)
	{
		RowBuf		rb;
		TsError		err;

		row_build(&rb, layout, rows[i]);
		if (ts_row_check(layout, &rb.row, &err) != 0 ||
			!ts_key_encode(layout, table_id, &rb.row, &keys[i]))
			failed_encodes++;
	}
	CHECK_EQ_INT(failed_encodes, 0);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
		{
			int			want = tuple_cmp(layout, rows[i], rows[j]);
			int			got = key_cmp(&keys[i], &keys[j]);

			if (want != got)
			{
				if (mismatches++ < 5)
				{
					fprintf(stderr, "    %s: values compare %d, keys %d:", what, want, got);
					for (uint32_t k = 0; k < layout->nkey; k++)
					{
						uint32_t	col = layout->key_columns[k];

						fprintf(stderr, " ");
						describe_value(layout->kinds[col], &rows[i][col]);
					}
					fprintf(stderr, " vs");
					for (uint32_t k = 0; k < layout->nkey; k++)
					{
						uint32_t	col = layout->key_columns[k];

						fprintf(stderr, " ");
						describe_value(layout->kinds[col], &rows[j][col]);
					}
					fprintf(stderr, "\n");
				}
			}
			if (want != 0 && keys[i].len < keys[j].len &&
				memcmp(keys[i].data, keys[j].data, keys[i].len) == 0)
				prefixes++;
		}
	if (!tc_test_record(mismatches == 0, __FILE__, __LINE__, "key order is value order"))
		fprintf(stderr, "    %s: %d of %zu pairs out of order\n", what, mismatches, n * n);
	if (!tc_test_record(prefixes == 0, __FILE__, __LINE__, "no key is a prefix of another"))
		fprintf(stderr, "    %s: %d keys are prefixes of others\n", what, prefixes);

	for (size_t i = 0; i < n; i++)
		tc_buf_free(&keys[i]);
	free(keys);
}

/* The key of a one-column layout holding v; into a fresh buf. */
static void
encode_single(const TsLayout *layout, uint32_t table_id, TsValue v, TcBuf *out)
{
	TsValue		vals[MAX_TEST_COLUMNS];
	RowBuf		rb;

	memset(vals, 0, sizeof(vals));
	vals[0] = v;
	row_build(&rb, layout, vals);
	out->len = 0;
	CHECK(ts_key_encode(layout, table_id, &rb.row, out));
}

/* ---- layouts ---- */

static void
test_layout_valid(void)
{
	TsLayout	layout;
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL};
	const uint32_t key[] = {1, 0};

	REQUIRE(layout_make(&layout, 4, kinds, 2, key));
	CHECK_EQ_UINT(layout.ncolumns, 4);
	CHECK_EQ_UINT(layout.nkey, 2);
	CHECK_EQ_UINT(layout.key_columns[0], 1);
	CHECK_EQ_UINT(layout.key_columns[1], 0);
	CHECK(layout.is_key[0] && layout.is_key[1] && !layout.is_key[2] && !layout.is_key[3]);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(layout.kinds[i], kinds[i]);
	ts_layout_free(&layout);

	/* keyless */
	REQUIRE(layout_make(&layout, 4, kinds, 0, NULL));
	CHECK_EQ_UINT(layout.nkey, 0);
	CHECK(!layout.is_key[0] && !layout.is_key[1] && !layout.is_key[2] && !layout.is_key[3]);
	ts_layout_free(&layout);

	/* the largest allowed: TS_MAX_COLUMNS columns, TS_MAX_KEY_COLUMNS keys */
	{
		Tcopy__Kind *many = malloc(sizeof(Tcopy__Kind) * TS_MAX_COLUMNS);
		uint32_t	keys[TS_MAX_KEY_COLUMNS];

		for (int i = 0; i < TS_MAX_COLUMNS; i++)
			many[i] = (Tcopy__Kind) (1 + i % 4);
		for (int k = 0; k < TS_MAX_KEY_COLUMNS; k++)
			keys[k] = (uint32_t) (TS_MAX_COLUMNS - 1 - k * 3);
		if (layout_make(&layout, TS_MAX_COLUMNS, many, TS_MAX_KEY_COLUMNS, keys))
		{
			CHECK_EQ_UINT(layout.ncolumns, TS_MAX_COLUMNS);
			CHECK_EQ_UINT(layout.nkey, TS_MAX_KEY_COLUMNS);
			CHECK_EQ_UINT(layout.key_columns[5], TS_MAX_COLUMNS - 1 - 15);
			ts_layout_free(&layout);
		}
		else
			CHECK(!"layout of TS_MAX_COLUMNS columns accepted");
		free(many);
	}
}

/* Expect ts_layout_init to refuse with ERROR_PROTOCOL. */
static void
check_layout_refused(size_t ncolumns, const Tcopy__Kind *kinds, size_t nkey,
					 const uint32_t *key, const char *what, int line)
{
	Tcopy__Schema *schema = schema_make(ncolumns, kinds, nkey, key);
	TsLayout	layout;
	TsError		err;
	int			rc;

	memset(&err, 0, sizeof(err));
	rc = ts_layout_init(&layout, schema, &err);
	if (!tc_test_record(rc != 0, __FILE__, line, what))
	{
		fprintf(stderr, "    schema was accepted\n");
		ts_layout_free(&layout);
	}
	else
	{
		if (!tc_test_record(err.code == TCOPY__ERROR_CODE__ERROR_PROTOCOL, __FILE__, line,
							"refused with ERROR_PROTOCOL"))
			fprintf(stderr, "    %s: code %d\n", what, err.code);
		tc_test_record(err.message[0] != '\0', __FILE__, line, "refusal has a message");
	}
	schema_free(schema);
}

static void
test_layout_malformed(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL};
	const Tcopy__Kind with_none[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_NONE};
	const Tcopy__Kind with_bogus[] = {TCOPY__KIND__KIND_INT, (Tcopy__Kind) 99};
	const Tcopy__Kind with_negative[] = {(Tcopy__Kind) - 1, TCOPY__KIND__KIND_INT};
	const uint32_t key_out_of_range[] = {4};
	const uint32_t key_far_out[] = {UINT32_MAX};
	const uint32_t key_dup[] = {0, 2, 0};
	const uint32_t key_ok[] = {0};

	check_layout_refused(4, kinds, 1, key_out_of_range, "key index == ncolumns", __LINE__);
	check_layout_refused(4, kinds, 1, key_far_out, "key index UINT32_MAX", __LINE__);
	check_layout_refused(4, kinds, 3, key_dup, "duplicate key column", __LINE__);
	check_layout_refused(2, with_none, 1, key_ok, "KIND_NONE column", __LINE__);
	check_layout_refused(2, with_none, 0, NULL, "KIND_NONE column, keyless", __LINE__);
	check_layout_refused(2, with_bogus, 1, key_ok, "kind 99", __LINE__);
	check_layout_refused(2, with_negative, 0, NULL, "kind -1", __LINE__);

	{
		Tcopy__Kind *many = malloc(sizeof(Tcopy__Kind) * (TS_MAX_COLUMNS + 1));
		uint32_t	keys[TS_MAX_KEY_COLUMNS + 1];

		for (int i = 0; i <= TS_MAX_COLUMNS; i++)
			many[i] = TCOPY__KIND__KIND_INT;
		for (int k = 0; k <= TS_MAX_KEY_COLUMNS; k++)
			keys[k] = (uint32_t) k;
		check_layout_refused(TS_MAX_COLUMNS + 1, many, 1, key_ok,
							 "more than TS_MAX_COLUMNS columns", __LINE__);
		check_layout_refused(TS_MAX_COLUMNS + 1, many, 0, NULL,
							 "more than TS_MAX_COLUMNS columns, keyless", __LINE__);
		check_layout_refused(TS_MAX_KEY_COLUMNS + 8, many, TS_MAX_KEY_COLUMNS + 1, keys,
							 "more than TS_MAX_KEY_COLUMNS key columns", __LINE__);
		free(many);
	}
}

/* ---- row checks ---- */

/* Expect ts_row_check to refuse row with ERROR_BAD_ROW. */
static void
check_row_refused(const TsLayout *layout, const Tcopy__Row *row, const char *what, int line)
{
	TsError		err;

	memset(&err, 0, sizeof(err));
	if (!tc_test_record(ts_row_check(layout, row, &err) != 0, __FILE__, line, what))
		fprintf(stderr, "    row was accepted\n");
	else
	{
		if (!tc_test_record(err.code == TCOPY__ERROR_CODE__ERROR_BAD_ROW, __FILE__, line,
							"refused with ERROR_BAD_ROW"))
			fprintf(stderr, "    %s: code %d\n", what, err.code);
		tc_test_record(err.message[0] != '\0', __FILE__, line, "refusal has a message");
	}
}

static void
check_row_accepted(const TsLayout *layout, const Tcopy__Row *row, const char *what, int line)
{
	TsError		err;

	memset(&err, 0, sizeof(err));
	if (!tc_test_record(ts_row_check(layout, row, &err) == 0, __FILE__, line, what))
		fprintf(stderr, "    refused: %s\n", err.message);
}

/*
 * Layout (a INT key, b BOOL, c FLOAT, d BYTES, e INT): a full row has ints
 * [a, b, e], floats [c], blobs [d].
 */
static void
test_row_check(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BOOL,
		TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_INT};
	const uint32_t key[] = {0};
	TsLayout	layout;
	int64_t		ints[8];
	double		floats[4] = {1.5, 2.5};
	ProtobufCBinaryData blobs[4] = {{3, (uint8_t *) "abc"}, {1, (uint8_t *) "x"}};
	uint32_t	nulls[8];
	Tcopy__Row	row;

	REQUIRE(layout_make(&layout, 5, kinds, 1, key));

#define INTS(...) do { int64_t v_[] = {__VA_ARGS__}; memcpy(ints, v_, sizeof(v_)); } while (0)
#define NULLS(...) do { uint32_t v_[] = {__VA_ARGS__}; memcpy(nulls, v_, sizeof(v_)); } while (0)

	INTS(7, 1, 9);
	row = row_of(3, ints, 1, floats, 1, blobs, 0, nulls);
	check_row_accepted(&layout, &row, "full row", __LINE__);
	INTS(7, 0, INT64_MIN);
	check_row_accepted(&layout, &row, "bool 0", __LINE__);

	/* wrong counts */
	row = row_of(2, ints, 1, floats, 1, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too few ints", __LINE__);
	INTS(7, 1, 9, 10);
	row = row_of(4, ints, 1, floats, 1, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too many ints", __LINE__);
	INTS(7, 1, 9);
	row = row_of(3, ints, 0, floats, 1, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too few floats", __LINE__);
	row = row_of(3, ints, 2, floats, 1, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too many floats", __LINE__);
	row = row_of(3, ints, 1, floats, 0, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too few blobs", __LINE__);
	row = row_of(3, ints, 1, floats, 2, blobs, 0, nulls);
	check_row_refused(&layout, &row, "too many blobs", __LINE__);
	row = row_of(0, ints, 0, floats, 0, blobs, 0, nulls);
	check_row_refused(&layout, &row, "empty row", __LINE__);

	/* NULLs take a column's value out of its array */
	NULLS(2);
	row = row_of(3, ints, 0, floats, 1, blobs, 1, nulls);
	check_row_accepted(&layout, &row, "c NULL", __LINE__);
	row = row_of(3, ints, 1, floats, 1, blobs, 1, nulls);
	check_row_refused(&layout, &row, "c NULL but a float given", __LINE__);
	NULLS(3, 4);
	INTS(7, 1);
	row = row_of(2, ints, 1, floats, 0, blobs, 2, nulls);
	check_row_accepted(&layout, &row, "d, e NULL", __LINE__);
	NULLS(1, 2, 3, 4);
	INTS(7);
	row = row_of(1, ints, 0, floats, 0, blobs, 4, nulls);
	check_row_accepted(&layout, &row, "all but the key NULL", __LINE__);

	/* a NULL bool moves e into the bool's place: 5 is no bool there */
	NULLS(1);
	INTS(7, 5);
	row = row_of(2, ints, 1, floats, 1, blobs, 1, nulls);
	check_row_accepted(&layout, &row, "b NULL, e = 5", __LINE__);

	/* nulls out of order, repeated, out of range */
	NULLS(4, 3);
	INTS(7, 1);
	row = row_of(2, ints, 1, floats, 0, blobs, 2, nulls);
	check_row_refused(&layout, &row, "nulls descending", __LINE__);
	NULLS(3, 3);
	INTS(7, 1, 9);
	row = row_of(3, ints, 1, floats, 0, blobs, 2, nulls);
	check_row_refused(&layout, &row, "null repeated", __LINE__);
	NULLS(5);
	row = row_of(3, ints, 1, floats, 1, blobs, 1, nulls);
	check_row_refused(&layout, &row, "null index == ncolumns", __LINE__);
	NULLS(UINT32_MAX);
	check_row_refused(&layout, &row, "null index UINT32_MAX", __LINE__);
	NULLS(3, 9);
	row = row_of(3, ints, 1, floats, 0, blobs, 2, nulls);
	check_row_refused(&layout, &row, "second null out of range", __LINE__);

	/* NULL key */
	NULLS(0);
	INTS(1, 9);
	row = row_of(2, ints, 1, floats, 1, blobs, 1, nulls);
	check_row_refused(&layout, &row, "NULL key column", __LINE__);

	/* bools are 0 or 1 */
	INTS(7, 2, 9);
	row = row_of(3, ints, 1, floats, 1, blobs, 0, nulls);
	check_row_refused(&layout, &row, "bool 2", __LINE__);
	INTS(7, -1, 9);
	check_row_refused(&layout, &row, "bool -1", __LINE__);
	INTS(7, INT64_MIN, 9);
	check_row_refused(&layout, &row, "bool INT64_MIN", __LINE__);

	ts_layout_free(&layout);

	/* keyless: any column may be NULL, bool keys too */
	{
		const Tcopy__Kind bool_kinds[] = {TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_BOOL};
		const uint32_t bool_key[] = {1};

		REQUIRE(layout_make(&layout, 5, kinds, 0, NULL));
		NULLS(0, 1, 2, 3, 4);
		row = row_of(0, ints, 0, floats, 0, blobs, 5, nulls);
		check_row_accepted(&layout, &row, "keyless, all NULL", __LINE__);
		ts_layout_free(&layout);

		REQUIRE(layout_make(&layout, 2, bool_kinds, 1, bool_key));
		INTS(0, 1);
		row = row_of(2, ints, 0, floats, 0, blobs, 0, nulls);
		check_row_accepted(&layout, &row, "two bools", __LINE__);
		INTS(1, 3);
		check_row_refused(&layout, &row, "bool key 3", __LINE__);
		ts_layout_free(&layout);
	}
#undef INTS
#undef NULLS
}

/* ---- key order ---- */

static const uint8_t table_id_bytes[] = {0x01, 0x02, 0x03, 0x04};
#define TEST_TABLE_ID 0x01020304u

static void
test_key_int(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT};
	const uint32_t key[] = {0};
	static const int64_t specials[] = {INT64_MIN, INT64_MIN + 1, -4294967296LL,
		-2147483649LL, -2147483648LL, -65536, -256, -255, -2, -1, 0, 1, 2, 127, 128,
	255, 256, 65535, 2147483647LL, 4294967296LL, INT64_MAX - 1, INT64_MAX};
	size_t		nspecial = sizeof(specials) / sizeof(specials[0]);
	size_t		n = nspecial + 250;
	TsValue		(*rows)[MAX_TEST_COLUMNS] = calloc(n, sizeof(*rows));
	TsLayout	layout;
	TcBuf		buf = {0};

	REQUIRE(layout_make(&layout, 2, kinds, 1, key));
	for (size_t i = 0; i < n; i++)
	{
		if (i < nspecial)
			rows[i][0].i = specials[i];
		else if (i % 3 == 0)
			rows[i][0].i = (int64_t) (rnd() % 2001) - 1000;	/* close values, repeats */
		else
			rows[i][0].i = (int64_t) rnd();
		rows[i][1].isnull = true;
	}
	check_key_order(&layout, TEST_TABLE_ID, rows, n, "int keys");

	/* the documented bytes: table id, then big-endian with the sign flipped */
	{
		TsValue		v = {0};
		static const uint8_t zero[] = {1, 2, 3, 4, 0x80, 0, 0, 0, 0, 0, 0, 0};
		static const uint8_t minus_one[] = {1, 2, 3, 4, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
		static const uint8_t min[] = {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0};
		static const uint8_t some[] = {1, 2, 3, 4, 0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};

		v.i = 0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, zero, sizeof(zero));
		v.i = -1;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, minus_one, sizeof(minus_one));
		v.i = INT64_MIN;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, min, sizeof(min));
		v.i = 0x0102030405060708LL;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, some, sizeof(some));
	}

	/* keys append: what the buffer held stays in front */
	{
		TcBuf		fresh = {0};
		TsValue		vals[MAX_TEST_COLUMNS] = {{0}};
		RowBuf		rb;

		vals[0].i = 42;
		vals[1].isnull = true;
		row_build(&rb, &layout, vals);
		REQUIRE(ts_key_encode(&layout, 9, &rb.row, &fresh));
		buf.len = 0;
		REQUIRE(tc_buf_reserve(&buf, 3));
		memcpy(buf.data, "xyz", 3);
		buf.len = 3;
		REQUIRE(ts_key_encode(&layout, 9, &rb.row, &buf));
		CHECK_MEM(buf.data, 3, "xyz", 3);
		CHECK_MEM(buf.data + 3, buf.len - 3, fresh.data, fresh.len);
		tc_buf_free(&fresh);
	}

	/* every key of a table sorts inside that table's range */
	{
		TcBuf		a = {0},
					b = {0};
		TsValue		vals[MAX_TEST_COLUMNS] = {{0}};
		RowBuf		rb;

		vals[1].isnull = true;
		vals[0].i = INT64_MAX;
		row_build(&rb, &layout, vals);
		REQUIRE(ts_key_encode(&layout, 1, &rb.row, &a));
		vals[0].i = INT64_MIN;
		row_build(&rb, &layout, vals);
		REQUIRE(ts_key_encode(&layout, 2, &rb.row, &b));
		CHECK(key_cmp(&a, &b) < 0);
		vals[0].i = 0;
		row_build(&rb, &layout, vals);
		b.len = 0;
		REQUIRE(ts_key_encode(&layout, 0x100, &rb.row, &b));
		CHECK(key_cmp(&a, &b) < 0);
		CHECK(b.len >= 4 && b.data[0] == 0 && b.data[1] == 0 && b.data[2] == 1 && b.data[3] == 0);
		tc_buf_free(&a);
		tc_buf_free(&b);
	}
	tc_buf_free(&buf);
	ts_layout_free(&layout);
	free(rows);
}

static void
test_key_float(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_FLOAT};
	const uint32_t key[] = {0};
	const double specials[] = {-INFINITY, -DBL_MAX, -1e300, -1.0, -DBL_MIN,
		-DBL_TRUE_MIN, -0.0, 0.0, DBL_TRUE_MIN, DBL_MIN, 1e-300, 0.1, 1.0, 1.0 + DBL_EPSILON,
	2.0, 1e300, DBL_MAX, INFINITY, NAN};
	size_t		nspecial = sizeof(specials) / sizeof(specials[0]);
	size_t		n = nspecial + 250;
	TsValue		(*rows)[MAX_TEST_COLUMNS] = calloc(n, sizeof(*rows));
	TsLayout	layout;
	TcBuf		buf = {0};

	REQUIRE(layout_make(&layout, 1, kinds, 1, key));
	for (size_t i = 0; i < n; i++)
	{
		double		f;

		if (i < nspecial)
			f = specials[i];
		else if (i % 2 == 0)
		{
			/* any bit pattern but NaNs (tested apart) */
			do
				f = double_from_bits(rnd());
			while (isnan(f));
		}
		else
			f = ((double) (int64_t) (rnd() % 2001) - 1000) / 8;	/* repeats, exact */
		rows[i][0].f = f;
	}
	check_key_order(&layout, TEST_TABLE_ID, rows, n, "float keys");

	/* the documented bytes */
	{
		TsValue		v = {0};
		static const uint8_t one[] = {1, 2, 3, 4, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0};
		static const uint8_t minus_one[] = {1, 2, 3, 4, 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
		static const uint8_t plus_zero[] = {1, 2, 3, 4, 0x80, 0, 0, 0, 0, 0, 0, 0};
		static const uint8_t minus_zero[] = {1, 2, 3, 4, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

		v.f = 1.0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, one, sizeof(one));
		v.f = -1.0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, minus_one, sizeof(minus_one));
		v.f = 0.0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, plus_zero, sizeof(plus_zero));
		v.f = -0.0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, minus_zero, sizeof(minus_zero));
	}
	tc_buf_free(&buf);
	ts_layout_free(&layout);
	free(rows);
}

/*
 * NaNs other than the canonical one: a NaN with its sign bit set is what
 * x86 arithmetic produces (Infinity - Infinity in Postgres, say) and float8
 * send passes its bits on.  The header promises NaN after +Infinity, and
 * Postgres holds all NaNs equal, so every NaN must encode to the same key,
 * above +Infinity.
 */
static void
test_key_float_nan_variants(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_FLOAT};
	const uint32_t key[] = {0};
	TsLayout	layout;
	TcBuf		canonical = {0},
				inf = {0},
				other = {0};
	TsValue		v = {0};
	static const uint64_t nan_bits[] = {
		0xFFF8000000000000ull,	/* -NaN, as 0.0/0.0 gives on x86 */
		0x7FF0000000000001ull,	/* signalling NaN */
		0x7FFFFFFFFFFFFFFFull,	/* NaN with every payload bit */
		0xFFFFFFFFFFFFFFFFull,	/* negative, every payload bit */
	};

	REQUIRE(layout_make(&layout, 1, kinds, 1, key));
	v.f = NAN;
	encode_single(&layout, TEST_TABLE_ID, v, &canonical);
	v.f = INFINITY;
	encode_single(&layout, TEST_TABLE_ID, v, &inf);
	CHECK(key_cmp(&inf, &canonical) < 0);
	for (size_t i = 0; i < sizeof(nan_bits) / sizeof(nan_bits[0]); i++)
	{
		v.f = double_from_bits(nan_bits[i]);
		encode_single(&layout, TEST_TABLE_ID, v, &other);
		if (!tc_test_record(key_cmp(&inf, &other) < 0, __FILE__, __LINE__,
							"NaN variant sorts after +Infinity"))
			fprintf(stderr, "    NaN bits %016llx\n", (unsigned long long) nan_bits[i]);
		if (!tc_test_record(key_cmp(&canonical, &other) == 0, __FILE__, __LINE__,
							"NaN variant has the canonical NaN's key"))
			fprintf(stderr, "    NaN bits %016llx\n", (unsigned long long) nan_bits[i]);
	}
	tc_buf_free(&canonical);
	tc_buf_free(&inf);
	tc_buf_free(&other);
	ts_layout_free(&layout);
}

static void
test_key_bytes(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_BYTES};
	const uint32_t key[] = {0};
	static const struct
	{
		const char *s;
		size_t		len;
	}			specials[] =
	{
		{"", 0}, {"\0", 1}, {"\0\0", 2}, {"\0\0\0", 3}, {"\0\1", 2}, {"\0\xff", 2},
		{"\1", 1}, {"\1\0", 2}, {"\xff", 1}, {"\xff\0", 2}, {"\xff\xff", 2},
		{"\xff\xff\xff", 3}, {"\xfe", 1}, {"a", 1}, {"a\0", 2}, {"a\0\0", 3},
		{"a\0\1", 3}, {"a\0b", 3}, {"a\1", 2}, {"a\xff", 2}, {"ab", 2}, {"abc", 3},
		{"b", 1}, {"\x80", 1}, {"\x7f", 1},
	};
	static const uint8_t alphabet[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF, 'a'};
	size_t		nspecial = sizeof(specials) / sizeof(specials[0]);
	size_t		n = nspecial + 300;
	TsValue		(*rows)[MAX_TEST_COLUMNS] = calloc(n, sizeof(*rows));
	uint8_t    *pool = malloc(n * 8);
	TsLayout	layout;
	TcBuf		buf = {0};

	REQUIRE(layout_make(&layout, 1, kinds, 1, key));
	for (size_t i = 0; i < n; i++)
	{
		if (i < nspecial)
		{
			rows[i][0].p = (const uint8_t *) specials[i].s;
			rows[i][0].len = specials[i].len;
			continue;
		}
		rows[i][0].p = pool + i * 8;
		rows[i][0].len = rnd() % 9;
		for (size_t j = 0; j < rows[i][0].len; j++)
			pool[i * 8 + j] = alphabet[rnd() % sizeof(alphabet)];
	}
	check_key_order(&layout, TEST_TABLE_ID, rows, n, "bytes keys");

	/* the documented bytes: zero escaped as 00 FF, terminator 00 01 */
	{
		TsValue		v = {0};
		static const uint8_t a0b[] = {1, 2, 3, 4, 'a', 0x00, 0xFF, 'b', 0x00, 0x01};
		static const uint8_t empty[] = {1, 2, 3, 4, 0x00, 0x01};

		v.p = (const uint8_t *) "a\0b";
		v.len = 3;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, a0b, sizeof(a0b));
		v.len = 0;
		encode_single(&layout, TEST_TABLE_ID, v, &buf);
		CHECK_MEM(buf.data, buf.len, empty, sizeof(empty));
		CHECK_MEM(buf.data, 4, table_id_bytes, 4);
	}
	tc_buf_free(&buf);
	ts_layout_free(&layout);
	free(rows);
	free(pool);
}

static void
test_key_bool(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_BOOL};
	const uint32_t key[] = {0};
	TsLayout	layout;
	TcBuf		f = {0},
				t = {0};
	TsValue		v = {0};

	REQUIRE(layout_make(&layout, 1, kinds, 1, key));
	v.i = 0;
	encode_single(&layout, TEST_TABLE_ID, v, &f);
	v.i = 1;
	encode_single(&layout, TEST_TABLE_ID, v, &t);
	CHECK_EQ_UINT(f.len, 5);
	CHECK_EQ_UINT(t.len, 5);
	CHECK(f.len == 5 && f.data[4] == 0);
	CHECK(t.len == 5 && t.data[4] == 1);
	CHECK(key_cmp(&f, &t) < 0);
	tc_buf_free(&f);
	tc_buf_free(&t);
	ts_layout_free(&layout);
}

/* Fill one value of kind from small value sets, so that ties happen. */
static void
random_small_value(Tcopy__Kind kind, TsValue *v, uint8_t *space)
{
	static const uint8_t alphabet[] = {0x00, 0x01, 0xFF, 'a'};

	v->isnull = false;
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			v->i = (int64_t) (rnd() % 2);
			break;
		case TCOPY__KIND__KIND_INT:
			{
				static const int64_t ints[] = {INT64_MIN, -1, 0, 1, 255, 256, INT64_MAX};

				v->i = ints[rnd() % 7];
				break;
			}
		case TCOPY__KIND__KIND_FLOAT:
			{
				static const double floats[] = {-INFINITY, -1.5, -0.0, 0.0, 2.5, INFINITY, NAN};

				v->f = floats[rnd() % 7];
				break;
			}
		default:
			v->p = space;
			v->len = rnd() % 4;
			for (size_t j = 0; j < v->len; j++)
				space[j] = alphabet[rnd() % sizeof(alphabet)];
			break;
	}
}

/*
 * Multi-column keys, key order unlike column order: (x INT, s BYTES,
 * f FLOAT, b BOOL, z INT) keyed by (s, z, f, x); then (BYTES, BYTES), where
 * an unterminated first string would run into the second.
 */
static void
test_key_multi(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_INT};
	const uint32_t key[] = {1, 4, 2, 0};
	const Tcopy__Kind two_bytes[] = {TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_BOOL};
	const uint32_t key2[] = {0, 1, 2};
	size_t		n = 400;
	TsValue		(*rows)[MAX_TEST_COLUMNS] = calloc(n, sizeof(*rows));
	uint8_t    *space = malloc(n * MAX_TEST_COLUMNS * 4);
	TsLayout	layout;

	REQUIRE(layout_make(&layout, 5, kinds, 4, key));
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < 5; c++)
		{
			random_small_value(kinds[c], &rows[i][c], space + (i * MAX_TEST_COLUMNS + c) * 4);
			/* the non-key bool may be NULL */
			if (c == 3 && rnd() % 3 == 0)
				rows[i][c].isnull = true;
		}
	check_key_order(&layout, TEST_TABLE_ID, rows, n, "(s, z, f, x) keys");
	ts_layout_free(&layout);

	REQUIRE(layout_make(&layout, 3, two_bytes, 3, key2));
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < 3; c++)
			random_small_value(two_bytes[c], &rows[i][c], space + (i * MAX_TEST_COLUMNS + c) * 4);
	check_key_order(&layout, TEST_TABLE_ID, rows, n, "(bytes, bytes, bool) keys");
	ts_layout_free(&layout);
	free(rows);
	free(space);
}

/* A prefix of the key columns encodes as the start of the full key. */
static void
test_key_prefix(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_INT};
	const uint32_t key[] = {2, 1};	/* (INT, BYTES) */
	TsLayout	layout;
	TcBuf		full = {0},
				prefix = {0};
	TsValue		vals[MAX_TEST_COLUMNS] = {{0}};
	RowBuf		rb;
	int64_t		one_int[1] = {-77};
	ProtobufCBinaryData one_blob[1] = {{4, (uint8_t *) "k\0ey"}};
	Tcopy__Row	pre;

	REQUIRE(layout_make(&layout, 3, kinds, 2, key));
	vals[0].f = 3.25;
	vals[1].p = (const uint8_t *) "k\0ey";
	vals[1].len = 4;
	vals[2].i = -77;
	row_build(&rb, &layout, vals);
	REQUIRE(ts_key_encode(&layout, 5, &rb.row, &full));

	pre = row_of(0, NULL, 0, NULL, 0, NULL, 0, NULL);
	REQUIRE(ts_key_encode_prefix(&layout, 5, &pre, &prefix));
	CHECK_MEM(prefix.data, prefix.len, full.data, 4);

	prefix.len = 0;
	pre = row_of(1, one_int, 0, NULL, 0, NULL, 0, NULL);
	REQUIRE(ts_key_encode_prefix(&layout, 5, &pre, &prefix));
	CHECK_MEM(prefix.data, prefix.len, full.data, 4 + 8);

	prefix.len = 0;
	pre = row_of(1, one_int, 0, NULL, 1, one_blob, 0, NULL);
	REQUIRE(ts_key_encode_prefix(&layout, 5, &pre, &prefix));
	CHECK_MEM(prefix.data, prefix.len, full.data, full.len);

	tc_buf_free(&full);
	tc_buf_free(&prefix);
	ts_layout_free(&layout);
}

/* ---- round trips ---- */

static bool
values_equal(Tcopy__Kind kind, const TsValue *want, const TsValue *got)
{
	if (want->isnull != got->isnull)
		return false;
	if (want->isnull)
		return true;
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
		case TCOPY__KIND__KIND_INT:
			return want->i == got->i;
		case TCOPY__KIND__KIND_FLOAT:
			if (isnan(want->f))
				return isnan(got->f);
			return bits_of_double(want->f) == bits_of_double(got->f);
		default:
			return want->len == got->len &&
				(want->len == 0 || memcmp(want->p, got->p, want->len) == 0);
	}
}

/* Random value of kind; bytes from bytes_space (which holds max_len). */
static void
random_value(Tcopy__Kind kind, TsValue *v, uint8_t *bytes_space, size_t max_len)
{
	v->isnull = false;
	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			v->i = (int64_t) (rnd() & 1);
			break;
		case TCOPY__KIND__KIND_INT:
			switch (rnd() % 4)
			{
				case 0:
					v->i = (int64_t) rnd();
					break;
				case 1:
					v->i = (int64_t) (rnd() % 200) - 100;
					break;
				case 2:
					v->i = rnd() & 1 ? INT64_MIN : INT64_MAX;
					break;
				default:
					v->i = (int64_t) (rnd() >> (rnd() % 64));
					break;
			}
			break;
		case TCOPY__KIND__KIND_FLOAT:
			{
				static const double specials[] = {-INFINITY, -0.0, 0.0, DBL_TRUE_MIN,
				DBL_MAX, INFINITY, NAN};

				if (rnd() % 4 == 0)
					v->f = specials[rnd() % 7];
				else
					do
						v->f = double_from_bits(rnd());
					while (isnan(v->f));
				break;
			}
		default:
			{
				size_t		len = rnd() % 5 == 0 ? 0 : rnd() % 40;

				if (len > max_len)
					len = max_len;
				for (size_t j = 0; j < len; j++)
					bytes_space[j] = rnd() % 3 == 0 ? 0 : (uint8_t) rnd();
				v->p = bytes_space;
				v->len = len;
				break;
			}
	}
}

/*
 * Encode rows[i] (key and value), decode, compare.  Returns the number of
 * rows that did not come back equal.
 */
static int
round_trip(const TsLayout *layout, uint32_t table_id, TsValue *vals, uint64_t rowid,
		   TcArena *scratch)
{
	RowBuf		rb;
	TsError		err;
	TcBuf		key = {0},
				value = {0};
	TsValue    *got = malloc(sizeof(TsValue) * layout->ncolumns);
	int			wrong = 0;

	row_build(&rb, layout, vals);
	if (ts_row_check(layout, &rb.row, &err) != 0)
	{
		fprintf(stderr, "    a valid row was refused: %s\n", err.message);
		wrong = 1;
		goto done;
	}
	if (!(layout->nkey ? ts_key_encode(layout, table_id, &rb.row, &key)
		  : ts_key_encode_rowid(table_id, rowid, &key)) ||
		!ts_value_encode(layout, &rb.row, &value))
	{
		wrong = 1;
		goto done;
	}
	memset(got, 0xA5, sizeof(TsValue) * layout->ncolumns);
	if (!ts_row_decode(layout, key.data, key.len, value.data, value.len, got, scratch))
	{
		fprintf(stderr, "    ts_row_decode refused what ts_*_encode made\n");
		wrong = 1;
		goto done;
	}
	for (uint32_t c = 0; c < layout->ncolumns; c++)
	{
		if (!values_equal(layout->kinds[c], &vals[c], &got[c]))
		{
			if (wrong++ < 3)
			{
				fprintf(stderr, "    column %u: want %s", c, vals[c].isnull ? "NULL " : "");
				if (!vals[c].isnull)
					describe_value(layout->kinds[c], &vals[c]);
				fprintf(stderr, ", got %s", got[c].isnull ? "NULL " : "");
				if (!got[c].isnull && (layout->kinds[c] != TCOPY__KIND__KIND_BYTES ||
									   got[c].len < 100))
					describe_value(layout->kinds[c], &got[c]);
				fprintf(stderr, "\n");
			}
		}
		/* non-key strings are not copied: they point into the value */
		else if (!got[c].isnull && !layout->is_key[c] &&
				 layout->kinds[c] == TCOPY__KIND__KIND_BYTES && got[c].len > 0 &&
				 (got[c].p < value.data || got[c].p + got[c].len > value.data + value.len))
			wrong++;
	}
done:
	tc_buf_free(&key);
	tc_buf_free(&value);
	free(got);
	return wrong;
}

/*
 * (k1 INT, a BOOL, b INT, c FLOAT, d BYTES, k2 BYTES, e BYTES, f FLOAT,
 * g INT) keyed by (k2, k1, f): random rows, NULLs in non-key columns.
 */
static void
test_round_trip(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BOOL,
		TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES,
		TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_FLOAT,
	TCOPY__KIND__KIND_INT};
	const uint32_t key[] = {5, 0, 7};
	const uint32_t ncolumns = 9;
	TsLayout	layout;
	TcArena		scratch;
	uint8_t		space[MAX_TEST_COLUMNS][64];
	int			wrong = 0;
	int			rows_wrong = 0;

	REQUIRE(layout_make(&layout, ncolumns, kinds, 3, key));
	tc_arena_init(&scratch, 4096);
	for (int r = 0; r < 3000; r++)
	{
		TsValue		vals[MAX_TEST_COLUMNS];

		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < ncolumns; c++)
		{
			random_value(kinds[c], &vals[c], space[c], sizeof(space[c]));
			if (!layout.is_key[c] && rnd() % 4 == 0)
				vals[c].isnull = true;
		}
		if (r == 0)
			for (uint32_t c = 0; c < ncolumns; c++)
				vals[c].isnull = !layout.is_key[c];
		wrong = round_trip(&layout, 77, vals, 0, &scratch);
		if (wrong)
			rows_wrong++;
		tc_arena_reset(&scratch);
	}
	CHECK_EQ_INT(rows_wrong, 0);

	/* large and empty strings, in key and value */
	{
		size_t		big = 1024 * 1024 + 17;
		uint8_t    *large = malloc(big);
		uint8_t    *large_key = malloc(big);
		TsValue		vals[MAX_TEST_COLUMNS];

		for (size_t j = 0; j < big; j++)
		{
			large[j] = (uint8_t) (j * 131 + 1);
			large_key[j] = (uint8_t) (j % 5 == 0 ? 0 : j);
		}
		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < ncolumns; c++)
			random_value(kinds[c], &vals[c], space[c], sizeof(space[c]));
		vals[4].p = large;
		vals[4].len = big;
		vals[5].p = large_key;
		vals[5].len = big;
		vals[6].p = (const uint8_t *) "";
		vals[6].len = 0;
		CHECK_EQ_INT(round_trip(&layout, 77, vals, 0, &scratch), 0);
		tc_arena_reset(&scratch);
		vals[4].len = 0;
		vals[5].len = 0;
		vals[6].p = large;
		vals[6].len = big;
		CHECK_EQ_INT(round_trip(&layout, 77, vals, 0, &scratch), 0);
		free(large);
		free(large_key);
	}
	tc_arena_free(&scratch);
	ts_layout_free(&layout);
}

/* Exact value bytes for one row, as the header specifies them. */
static void
test_value_format(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT,
		TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL,
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_FLOAT};
	const uint32_t key[] = {0};
	static const uint8_t want[] = {
		0x01, 0x01,				/* v = -1: zigzag 1 */
		0x01, 0x02, 'h', 'i',	/* s = "hi" */
		0x00,					/* f NULL */
		0x01, 0x01,				/* b = true */
		0x01, 0xD8, 0x04,		/* w = 300: zigzag 600 */
		0x01, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F	/* g = 1.0, little-endian */
	};
	TsLayout	layout;
	TsValue		vals[MAX_TEST_COLUMNS] = {{0}};
	RowBuf		rb;
	TcBuf		value = {0};

	REQUIRE(layout_make(&layout, 7, kinds, 1, key));
	vals[0].i = 5;
	vals[1].i = -1;
	vals[2].p = (const uint8_t *) "hi";
	vals[2].len = 2;
	vals[3].isnull = true;
	vals[4].i = 1;
	vals[5].i = 300;
	vals[6].f = 1.0;
	row_build(&rb, &layout, vals);
	REQUIRE(ts_value_encode(&layout, &rb.row, &value));
	CHECK_MEM(value.data, value.len, want, sizeof(want));
	tc_buf_free(&value);
	ts_layout_free(&layout);
}

/* A table without key columns: row ids, every column in the value. */
static void
test_round_trip_keyless(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL};
	static const uint64_t rowids[] = {0, 1, 2, 255, 256, 65536, 0x0102030405060708ull,
	INT64_MAX, (uint64_t) INT64_MAX + 1, UINT64_MAX - 1, UINT64_MAX};
	size_t		nrowids = sizeof(rowids) / sizeof(rowids[0]);
	TsLayout	layout;
	TcArena		scratch;
	uint8_t		space[MAX_TEST_COLUMNS][64];
	TcBuf		keys[sizeof(rowids) / sizeof(rowids[0])];
	int			rows_wrong = 0;
	int			order_wrong = 0;

	REQUIRE(layout_make(&layout, 4, kinds, 0, NULL));
	tc_arena_init(&scratch, 4096);

	memset(keys, 0, sizeof(keys));
	for (size_t i = 0; i < nrowids; i++)
	{
		REQUIRE(ts_key_encode_rowid(0x0A0B0C0D, rowids[i], &keys[i]));
		CHECK_EQ_UINT(keys[i].len, TS_TABLE_ID_SIZE + TS_ROWID_SIZE);
	}
	{
		static const uint8_t want[] = {0x0A, 0x0B, 0x0C, 0x0D, 1, 2, 3, 4, 5, 6, 7, 8};

		CHECK_MEM(keys[6].data, keys[6].len, want, sizeof(want));
	}
	for (size_t i = 0; i < nrowids; i++)
		for (size_t j = 0; j < nrowids; j++)
			if (key_cmp(&keys[i], &keys[j]) != (i > j) - (i < j))
				order_wrong++;
	CHECK_EQ_INT(order_wrong, 0);
	for (size_t i = 0; i < nrowids; i++)
		tc_buf_free(&keys[i]);

	for (int r = 0; r < 1000; r++)
	{
		TsValue		vals[MAX_TEST_COLUMNS];

		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < 4; c++)
		{
			random_value(kinds[c], &vals[c], space[c], sizeof(space[c]));
			if (rnd() % 3 == 0)
				vals[c].isnull = true;
		}
		if (round_trip(&layout, 3, vals, rowids[r % nrowids], &scratch))
			rows_wrong++;
		tc_arena_reset(&scratch);
	}
	CHECK_EQ_INT(rows_wrong, 0);
	tc_arena_free(&scratch);
	ts_layout_free(&layout);
}

/* ---- untrusted bytes ---- */

/* Decode from exact-size heap copies, so that ASan sees any overread. */
static bool
decode_copy(const TsLayout *layout, const uint8_t *key, size_t keylen,
			const uint8_t *value, size_t valuelen, TcArena *scratch)
{
	uint8_t    *k = malloc(keylen ? keylen : 1);
	uint8_t    *v = malloc(valuelen ? valuelen : 1);
	TsValue    *vals = malloc(sizeof(TsValue) * layout->ncolumns);
	bool		ok;

	if (keylen)
		memcpy(k, key, keylen);
	if (valuelen)
		memcpy(v, value, valuelen);
	ok = ts_row_decode(layout, keylen ? k : k + 1, keylen, valuelen ? v : v + 1,
					   valuelen, vals, scratch);
	if (ok)
	{
		/* touch every string handed back */
		unsigned	sum = 0;

		for (uint32_t c = 0; c < layout->ncolumns; c++)
			if (!vals[c].isnull && layout->kinds[c] == TCOPY__KIND__KIND_BYTES)
				for (size_t j = 0; j < vals[c].len; j++)
					sum += vals[c].p[j];
		(void) sum;
	}
	free(k);
	free(v);
	free(vals);
	tc_arena_reset(scratch);
	return ok;
}

/*
 * A table of no columns (as Postgres allows): rows without values, keyed by
 * row id, stored with an empty value, and decoded back to nothing; a row
 * with any value or NULL does not fit, and a key column cannot be named.
 */
static void
test_zero_columns(void)
{
	const uint32_t key_ok[] = {0};
	TsLayout	layout;
	Tcopy__Row	row = TCOPY__ROW__INIT;
	int64_t		one = 1;
	uint32_t	null0 = 0;
	TcBuf		key = {0};
	TcBuf		value = {0};
	TcArena		scratch;
	TsValue		unused;
	static const uint8_t want_key[] = {0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 42};
	static const uint8_t junk[] = {0};

	check_layout_refused(0, NULL, 1, key_ok, "a key column of a table of no columns", __LINE__);
	REQUIRE(layout_make(&layout, 0, NULL, 0, NULL));
	CHECK_EQ_UINT(layout.ncolumns, 0);
	CHECK_EQ_UINT(layout.nkey, 0);

	check_row_accepted(&layout, &row, "empty row, no columns", __LINE__);
	row.ints = &one;
	row.n_ints = 1;
	check_row_refused(&layout, &row, "an int in a row of no columns", __LINE__);
	row.n_ints = 0;
	row.nulls = &null0;
	row.n_nulls = 1;
	check_row_refused(&layout, &row, "a NULL in a row of no columns", __LINE__);
	row.n_nulls = 0;

	REQUIRE(ts_key_encode_rowid(7, 42, &key));
	CHECK_MEM(key.data, key.len, want_key, sizeof(want_key));
	REQUIRE(ts_value_encode(&layout, &row, &value));
	CHECK_EQ_UINT(value.len, 0);

	tc_arena_init(&scratch, 1024);
	CHECK(decode_copy(&layout, key.data, key.len, value.data, 0, &scratch));
	CHECK(ts_row_decode(&layout, key.data, key.len, junk, 0, &unused, &scratch));
	CHECK(!decode_copy(&layout, key.data, key.len, junk, 1, &scratch));
	CHECK(!decode_copy(&layout, key.data, key.len - 1, NULL, 0, &scratch));
	CHECK(!decode_copy(&layout, key.data, TS_TABLE_ID_SIZE, NULL, 0, &scratch));
	tc_arena_free(&scratch);
	tc_buf_free(&key);
	tc_buf_free(&value);
	ts_layout_free(&layout);
}

/*
 * Every truncation and extension of a valid key or value is refused, but a
 * value cut where a non-key column starts: a row stored before the column
 * was added (t_natts), 4 a row here.
 */
static void
test_decode_truncated(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BOOL,
		TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_FLOAT};
	const uint32_t key[] = {5, 0, 6, 7};
	TsLayout	layout;
	TcArena		scratch;
	uint8_t		space[MAX_TEST_COLUMNS][64];
	int			accepted_short_key = 0;
	int			accepted_short_value = 0;
	int			accepted_long = 0;
	int			refused_valid = 0;

	REQUIRE(layout_make(&layout, 8, kinds, 4, key));
	tc_arena_init(&scratch, 4096);
	for (int r = 0; r < 200; r++)
	{
		TsValue		vals[MAX_TEST_COLUMNS];
		RowBuf		rb;
		TcBuf		k = {0},
					v = {0};

		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < 8; c++)
		{
			random_value(kinds[c], &vals[c], space[c], sizeof(space[c]));
			if (!layout.is_key[c] && rnd() % 4 == 0)
				vals[c].isnull = true;
		}
		row_build(&rb, &layout, vals);
		if (!ts_key_encode(&layout, 1, &rb.row, &k) || !ts_value_encode(&layout, &rb.row, &v) ||
			!tc_buf_reserve(&k, 1) || !tc_buf_reserve(&v, 1))
		{
			CHECK(!"encoded");
			break;
		}
		if (!decode_copy(&layout, k.data, k.len, v.data, v.len, &scratch))
			refused_valid++;
		for (size_t len = 0; len < k.len; len++)
			if (decode_copy(&layout, k.data, len, v.data, v.len, &scratch))
				accepted_short_key++;
		for (size_t len = 0; len < v.len; len++)
			if (decode_copy(&layout, k.data, k.len, v.data, len, &scratch))
				accepted_short_value++;
		/* one byte more, of any value, does not fit either */
		k.data[k.len] = (uint8_t) rnd();
		v.data[v.len] = (uint8_t) rnd();
		if (decode_copy(&layout, k.data, k.len + 1, v.data, v.len, &scratch))
			accepted_long++;
		if (decode_copy(&layout, k.data, k.len, v.data, v.len + 1, &scratch))
			accepted_long++;
		tc_buf_free(&k);
		tc_buf_free(&v);
	}
	CHECK_EQ_INT(refused_valid, 0);
	CHECK_EQ_INT(accepted_short_key, 0);
	CHECK_EQ_INT(accepted_short_value, 200 * 4);
	CHECK_EQ_INT(accepted_long, 0);
	tc_arena_free(&scratch);
	ts_layout_free(&layout);
}

/* Hand-made corrupt entries for (k BYTES key, b BOOL key, v INT, s BYTES, t BOOL). */
static void
test_decode_corrupt(void)
{
	const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BOOL,
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BOOL};
	const uint32_t key[] = {0, 1};
	TsLayout	layout;
	TcArena		scratch;

	/* a valid entry: k = "a\0", b = true, v = -1, s = "xy", t = false */
	static const uint8_t good_key[] = {0, 0, 0, 1, 'a', 0x00, 0xFF, 0x00, 0x01, 0x01};
	static const uint8_t good_value[] = {0x01, 0x01, 0x01, 0x02, 'x', 'y', 0x01, 0x00};

	REQUIRE(layout_make(&layout, 5, kinds, 2, key));
	tc_arena_init(&scratch, 4096);

	{
		TsValue		vals[5];

		REQUIRE(ts_row_decode(&layout, good_key, sizeof(good_key), good_value,
							  sizeof(good_value), vals, &scratch));
		CHECK_MEM(vals[0].p, vals[0].len, "a\0", 2);
		CHECK_EQ_INT(vals[1].i, 1);
		CHECK_EQ_INT(vals[2].i, -1);
		CHECK_MEM(vals[3].p, vals[3].len, "xy", 2);
		CHECK(!vals[4].isnull && vals[4].i == 0);
		tc_arena_reset(&scratch);
	}

#define BAD_KEY(...) \
	do { \
		static const uint8_t k_[] = {__VA_ARGS__}; \
		tc_test_record(!decode_copy(&layout, k_, sizeof(k_), good_value, \
									sizeof(good_value), &scratch), \
					   __FILE__, __LINE__, "corrupt key refused: " #__VA_ARGS__); \
	} while (0)
#define BAD_VALUE(...) \
	do { \
		static const uint8_t v_[] = {__VA_ARGS__}; \
		tc_test_record(!decode_copy(&layout, good_key, sizeof(good_key), v_, sizeof(v_), \
									&scratch), \
					   __FILE__, __LINE__, "corrupt value refused: " #__VA_ARGS__); \
	} while (0)

	BAD_KEY(0, 0, 0);			/* shorter than a table id */
	BAD_KEY(0, 0, 0, 1);		/* no key columns */
	BAD_KEY(0, 0, 0, 1, 'a', 0x00, 0x02, 0x00, 0x01, 0x01);	/* 00 02: no escape */
	BAD_KEY(0, 0, 0, 1, 'a', 0x00);	/* cut in an escape */
	BAD_KEY(0, 0, 0, 1, 'a', 0x01, 0x01);	/* no terminator */
	BAD_KEY(0, 0, 0, 1, 'a', 0x00, 0x01, 0x02);	/* bool 2 */
	BAD_KEY(0, 0, 0, 1, 'a', 0x00, 0x01, 0xFF);	/* bool 255 */
	BAD_KEY(0, 0, 0, 1, 'a', 0x00, 0x01);	/* bool missing */

	BAD_VALUE(0x02, 0x01, 0x01, 0x02, 'x', 'y', 0x01, 0x00);	/* tag 2 */
	BAD_VALUE(0xFF);
	BAD_VALUE(0x01, 0x01, 0x01, 0x05, 'x', 'y', 0x01, 0x00);	/* string overruns */
	BAD_VALUE(0x01, 0x01, 0x01, 0x7F, 'x', 'y', 0x01, 0x00);
	BAD_VALUE(0x01, 0x01, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
			  'x', 'y', 0x01, 0x00);	/* length 2^64 - 1 */
	BAD_VALUE(0x01, 0x01, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			  0x80, 0x00, 0x01, 0x00);	/* a varint of 12 bytes */
	BAD_VALUE(0x01, 0x80);		/* varint cut short */
	BAD_VALUE(0x01, 0x01, 0x01, 0x02, 'x', 'y', 0x01, 0x02);	/* bool 2 */
	BAD_VALUE(0x01, 0x01, 0x01, 0x02, 'x', 'y', 0x01);	/* bool missing */
	BAD_VALUE(0x01, 0x01, 0x01, 0x02, 'x', 'y', 0x01);	/* cut in a column */
	BAD_VALUE(0x01, 0x01, 0x01, 0x02, 'x', 'y', 0x00, 0x00);	/* NULL, then a stray byte */
	/* an int varint of 10 bytes whose value needs more than 64 bits */
	BAD_VALUE(0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F,
			  0x01, 0x02, 'x', 'y', 0x01, 0x00);
#undef BAD_KEY
#undef BAD_VALUE

	/* a value without its last columns: they read as their missing values */
	{
		static const uint8_t short_value[] = {0x01, 0x01, 0x01, 0x02, 'x', 'y'};
		TsValue		vals[5];

		CHECK(ts_row_decode(&layout, good_key, sizeof(good_key), short_value,
							sizeof(short_value), vals, &scratch));
		CHECK(vals[4].isnull);
		layout.missing[4].isnull = false;
		layout.missing[4].i = 1;
		CHECK(ts_row_decode(&layout, good_key, sizeof(good_key), short_value,
							sizeof(short_value), vals, &scratch));
		CHECK(!vals[4].isnull && vals[4].i == 1);
		CHECK_EQ_INT(vals[2].i, -1);
		CHECK(ts_row_decode(&layout, good_key, sizeof(good_key), short_value, 0, vals,
							&scratch));
		CHECK(vals[2].isnull && vals[3].isnull && vals[4].i == 1);
		tc_arena_reset(&scratch);
	}

	tc_arena_free(&scratch);
	ts_layout_free(&layout);
}

/*
 * Random bytes, and valid entries with random damage, against several
 * layouts: whatever the answer, no read outside the buffers (ASan) and no
 * crash.
 */
static void
test_decode_fuzz(void)
{
	static const Tcopy__Kind k1[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
		TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_INT,
	TCOPY__KIND__KIND_BYTES};
	static const uint32_t key1[] = {1, 0};
	static const Tcopy__Kind k2[] = {TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BYTES};
	static const uint32_t key2[] = {0};
	static const Tcopy__Kind k3[] = {TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_INT,
	TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_FLOAT};
	TsLayout	layouts[3];
	TcArena		scratch;
	uint8_t		kbuf[96],
				vbuf[96];
	uint8_t		space[MAX_TEST_COLUMNS][64];
	int			accepted = 0;

	REQUIRE(layout_make(&layouts[0], 6, k1, 2, key1));
	REQUIRE(layout_make(&layouts[1], 2, k2, 1, key2));
	REQUIRE(layout_make(&layouts[2], 4, k3, 0, NULL));
	tc_arena_init(&scratch, 4096);

	/* pure random bytes, biased to the small values tags and lengths use */
	for (int iter = 0; iter < 30000; iter++)
	{
		TsLayout   *layout = &layouts[iter % 3];
		size_t		klen = rnd() % sizeof(kbuf);
		size_t		vlen = rnd() % sizeof(vbuf);

		for (size_t j = 0; j < klen; j++)
			kbuf[j] = rnd() % 2 ? (uint8_t) (rnd() % 3) : (uint8_t) rnd();
		for (size_t j = 0; j < vlen; j++)
			vbuf[j] = rnd() % 2 ? (uint8_t) (rnd() % 3) : (uint8_t) rnd();
		if (decode_copy(layout, kbuf, klen, vbuf, vlen, &scratch))
			accepted++;
	}

	/* valid entries, damaged */
	for (int iter = 0; iter < 30000; iter++)
	{
		TsLayout   *layout = &layouts[iter % 3];
		TsValue		vals[MAX_TEST_COLUMNS];
		RowBuf		rb;
		TcBuf		k = {0},
					v = {0};
		int			damage = (int) (rnd() % 4);

		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < layout->ncolumns; c++)
		{
			random_value(layout->kinds[c], &vals[c], space[c], 20);
			if (!layout->is_key[c] && rnd() % 4 == 0)
				vals[c].isnull = true;
		}
		row_build(&rb, layout, vals);
		if (!(layout->nkey ? ts_key_encode(layout, 1, &rb.row, &k)
			  : ts_key_encode_rowid(1, rnd(), &k)) ||
			!ts_value_encode(layout, &rb.row, &v) ||
			!tc_buf_reserve(&k, 8) || !tc_buf_reserve(&v, 8))
		{
			CHECK(!"encoded");
			break;
		}
		if (damage == 0 || k.len == 0 || v.len == 0)
		{
			/* flip a few bytes */
			for (int f = 0; f < 3; f++)
			{
				if (v.len)
					v.data[rnd() % v.len] ^= (uint8_t) (1 + rnd() % 255);
				if (k.len && rnd() % 2)
					k.data[rnd() % k.len] ^= (uint8_t) (1 + rnd() % 255);
			}
		}
		else if (damage == 1)
			v.len = rnd() % v.len;
		else if (damage == 2)
			k.len = rnd() % k.len;
		else
		{
			/* grow by a few random bytes */
			size_t		extra = 1 + rnd() % 8;

			for (size_t j = 0; j < extra; j++)
				v.data[v.len + j] = (uint8_t) rnd();
			v.len += extra;
		}
		if (decode_copy(layout, k.data, k.len, v.data, v.len, &scratch))
			accepted++;
		tc_buf_free(&k);
		tc_buf_free(&v);
	}
	printf("    fuzz: %d of 60000 damaged or random entries decoded\n", accepted);
	CHECK(accepted < 60000);
	tc_arena_free(&scratch);
	for (int i = 0; i < 3; i++)
		ts_layout_free(&layouts[i]);
}

/*
 * ts_row_decode_some of need (copies of exact size, for ASan) into got:
 * whether it decoded.
 */
static bool
decode_some_copy(const TsLayout *layout, const TsRowNeed *need, const uint8_t *key,
				 size_t keylen, const uint8_t *value, size_t valuelen, TsValue *got,
				 TcArena *scratch)
{
	uint8_t    *k = malloc(keylen ? keylen : 1);
	uint8_t    *v = malloc(valuelen ? valuelen : 1);
	bool		ok;

	if (keylen)
		memcpy(k, key, keylen);
	if (valuelen)
		memcpy(v, value, valuelen);
	/* the columns not needed stay as they are: zeroed */
	memset(got, 0, layout->ncolumns * sizeof(TsValue));
	ok = ts_row_decode_some(layout, need, keylen ? k : k + 1, keylen,
							valuelen ? v : v + 1, valuelen, got, scratch);
	/* strings that point into the copies point into key and value instead */
	for (uint32_t c = 0; ok && c < layout->ncolumns; c++)
		if (!got[c].isnull && layout->kinds[c] == TCOPY__KIND__KIND_BYTES &&
			got[c].p >= k && got[c].p < k + keylen)
			got[c].p = key + (got[c].p - k);
		else if (!got[c].isnull && layout->kinds[c] == TCOPY__KIND__KIND_BYTES &&
				 got[c].p >= v && got[c].p < v + valuelen)
			got[c].p = value + (got[c].p - v);
	free(k);
	free(v);
	return ok;
}

/*
 * ts_row_decode_some against ts_row_decode: TsRowNeed as the columns say;
 * on valid rows, every needed column as the full decode has it; on random
 * damage, never accepting what the full decode refuses within the part it
 * reads (all columns needed: exactly the full decode's answer), never
 * refusing what the full decode accepts; a malformed needed column refused,
 * one past the last needed column not read.
 */
static void
test_decode_some(void)
{
	/* columns 0 and 1 the key (1 first), 2..5 the value */
	static const Tcopy__Kind kinds[] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES,
		TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BOOL, TCOPY__KIND__KIND_INT,
	TCOPY__KIND__KIND_BYTES};
	static const uint32_t key[] = {1, 0};
	TsLayout	layout;
	TcArena		scratch;
	uint8_t		space[MAX_TEST_COLUMNS][64];
	int			need_wrong = 0;
	int			values_wrong = 0;
	int			all_differs = 0;
	int			refused_good = 0;
	int			accepted_past = 0;

	REQUIRE(layout_make(&layout, 6, kinds, 2, key));
	REQUIRE(layout.nvalue == 4);
	tc_arena_init(&scratch, 4096);
	for (int iter = 0; iter < 20000; iter++)
	{
		TsValue		vals[MAX_TEST_COLUMNS];
		TsValue		full[MAX_TEST_COLUMNS];
		TsValue		got[MAX_TEST_COLUMNS];
		bool		columns[6];
		bool		all = iter % 8 == 0;
		uint32_t	last_value = 0;
		TsRowNeed	need;
		RowBuf		rb;
		TcBuf		k = {0},
					v = {0};
		bool		full_ok;
		bool		some_ok;

		for (uint32_t c = 0; c < 6; c++)
		{
			columns[c] = all || rnd() % 3 == 0;
			/* value columns 2..5 are the value's 1st..4th */
			if (columns[c] && c >= 2)
				last_value = c - 1;
		}
		ts_row_need_init(&need, &layout, columns);
		if (need.keys != (columns[0] || columns[1]) || need.nvalue != last_value)
			need_wrong++;

		memset(vals, 0, sizeof(vals));
		for (uint32_t c = 0; c < 6; c++)
		{
			random_value(kinds[c], &vals[c], space[c], 20);
			if (!layout.is_key[c] && rnd() % 4 == 0)
				vals[c].isnull = true;
		}
		row_build(&rb, &layout, vals);
		if (!ts_key_encode(&layout, 1, &rb.row, &k) || !ts_value_encode(&layout, &rb.row, &v) ||
			!tc_buf_reserve(&k, 8) || !tc_buf_reserve(&v, 8))
		{
			CHECK(!"encoded");
			break;
		}
		/* half of them damaged: bytes flipped, cut short, or grown */
		if (iter % 2 == 1)
		{
			switch (rnd() % 3)
			{
				case 0:
					v.data[rnd() % v.len] ^= (uint8_t) (1 + rnd() % 255);
					if (rnd() % 2)
						k.data[rnd() % k.len] ^= (uint8_t) (1 + rnd() % 255);
					break;
				case 1:
					v.len = rnd() % v.len;
					break;
				default:
					v.data[v.len++] = (uint8_t) rnd();
					break;
			}
		}
		full_ok = ts_row_decode(&layout, k.data, k.len, v.data, v.len, full, &scratch);
		some_ok = decode_some_copy(&layout, &need, k.data, k.len, v.data, v.len, got,
								   &scratch);
		if (all && some_ok != full_ok)
			all_differs++;
		if (full_ok && !some_ok)
			refused_good++;
		if (some_ok && !full_ok)
			accepted_past++;
		for (uint32_t c = 0; full_ok && some_ok && c < 6; c++)
			if (columns[c] && !values_equal(kinds[c], &full[c], &got[c]))
				values_wrong++;
		tc_arena_reset(&scratch);
		tc_buf_free(&k);
		tc_buf_free(&v);
	}
	CHECK_EQ_INT(need_wrong, 0);
	CHECK_EQ_INT(values_wrong, 0);
	CHECK_EQ_INT(all_differs, 0);
	CHECK_EQ_INT(refused_good, 0);
	/* damage past the needed columns goes unread */
	CHECK(accepted_past > 0);

	/* by hand: key (b "a", a 5), value (f NULL, t true, i 3, s "xy") */
	{
		static const uint8_t k[] = {0, 0, 0, 1, 'a', 0x00, 0x01,
		0x80, 0, 0, 0, 0, 0, 0, 5};
		uint8_t		v[] = {0x00, 0x01, 0x01, 0x01, 0x06, 0x01, 0x02, 'x', 'y'};
		bool		columns[6] = {false, false, false, false, true, false};
		TsValue		got[MAX_TEST_COLUMNS];
		TsRowNeed	need;

		ts_row_need_init(&need, &layout, columns);
		CHECK(!need.keys);
		CHECK_EQ_INT((int) need.nvalue, 3);
		CHECK(decode_some_copy(&layout, &need, k, sizeof(k), v, sizeof(v), got, &scratch));
		CHECK(!got[4].isnull && got[4].i == 3);
		/* a bad tag in s, past i: not read */
		v[5] = 0x07;
		CHECK(decode_some_copy(&layout, &need, k, sizeof(k), v, sizeof(v), got, &scratch));
		CHECK(!ts_row_decode(&layout, k, sizeof(k), v, sizeof(v), got, &scratch));
		v[5] = 0x01;
		/* a bad tag or bool in a column read before i: refused */
		v[2] = 0x02;
		CHECK(!decode_some_copy(&layout, &need, k, sizeof(k), v, sizeof(v), got, &scratch));
		v[2] = 0x01;
		v[1] = 0x02;
		CHECK(!decode_some_copy(&layout, &need, k, sizeof(k), v, sizeof(v), got, &scratch));
		v[1] = 0x01;
		/* i's varint cut short: refused */
		v[4] = 0x86;
		CHECK(!decode_some_copy(&layout, &need, k, sizeof(k), v, 5, got, &scratch));
		v[4] = 0x06;
		/* the key needed: a key one byte short is refused */
		columns[0] = true;
		ts_row_need_init(&need, &layout, columns);
		CHECK(need.keys);
		CHECK(decode_some_copy(&layout, &need, k, sizeof(k), v, sizeof(v), got, &scratch));
		CHECK(got[0].i == 5 && got[1].len == 1 && got[1].p[0] == 'a');
		CHECK(!decode_some_copy(&layout, &need, k, sizeof(k) - 1, v, sizeof(v), got, &scratch));
		/* a value written before i was added: i reads its missing value (NULL) */
		CHECK(decode_some_copy(&layout, &need, k, sizeof(k), v, 3, got, &scratch));
		CHECK(got[4].isnull);
	}
	tc_arena_free(&scratch);
	ts_layout_free(&layout);
}

int
main(void)
{
	TC_RUN(test_layout_valid);
	TC_RUN(test_layout_malformed);
	TC_RUN(test_row_check);
	TC_RUN(test_key_int);
	TC_RUN(test_key_float);
	TC_RUN(test_key_float_nan_variants);
	TC_RUN(test_key_bytes);
	TC_RUN(test_key_bool);
	TC_RUN(test_key_multi);
	TC_RUN(test_key_prefix);
	TC_RUN(test_value_format);
	TC_RUN(test_round_trip);
	TC_RUN(test_round_trip_keyless);
	TC_RUN(test_decode_truncated);
	TC_RUN(test_decode_corrupt);
	TC_RUN(test_decode_fuzz);
	TC_RUN(test_decode_some);
	TC_RUN(test_zero_columns);
	return tc_test_summary();
}
