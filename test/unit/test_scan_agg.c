/*
 * test_scan_agg.c
 *		Aggregates of a scan (ts_scan_agg.c) on a store of its own: one
 *		group of no rows, groups by an integer and a bytes column with NULL
 *		a group of its own, integer sums past 64 bits, float sums that
 *		overflow (flagged) or meet infinities (not), float8_accum's Sxx,
 *		min and max in Postgres' float order (NaN greatest, of -0 and 0 the
 *		one float8larger keeps), big-endian integers, the writes of an open
 *		session read through the scan's iterator, a limit on groups, and
 *		requests refused with ERROR_PROTOCOL.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_scan_agg.h"
#include "ts_session_int.h"
#include "ts_store_int.h"

static char data_dir[256];

/* Schema: id int (key), g int, f float, d bytes (a big-endian date), s bytes. */
static Tcopy__Schema *
make_schema(void)
{
	static Tcopy__Column columns[5];
	static Tcopy__Column *column_ptrs[5];
	static uint32_t key[1] = {0};
	static Tcopy__Schema schema;
	const char *names[5] = {"id", "g", "f", "d", "s"};
	Tcopy__Kind kinds[5] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT,
	TCOPY__KIND__KIND_FLOAT, TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BYTES};

	tcopy__schema__init(&schema);
	for (int i = 0; i < 5; i++)
	{
		tcopy__column__init(&columns[i]);
		columns[i].name = (char *) names[i];
		columns[i].kind = kinds[i];
		columns[i].type_name = (char *) "x";
		column_ptrs[i] = &columns[i];
	}
	schema.n_columns = 5;
	schema.columns = column_ptrs;
	schema.n_key = 1;
	schema.key = key;
	return &schema;
}

typedef struct TestRow
{
	int64_t		id;
	bool		g_null;
	int64_t		g;
	double		f;				/* NAN with f_null false: a NaN */
	bool		f_null;
	int32_t		d;
	const char *s;				/* NULL: NULL */
} TestRow;

/* Write rows in session; 0 or -1. */
static int
write_rows(TsSession *session, uint32_t table_id, const TestRow *in, size_t n)
{
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	Tcopy__Row *rows = calloc(n, sizeof(Tcopy__Row));
	Tcopy__Row **ptrs = calloc(n, sizeof(Tcopy__Row *));
	int64_t    *ints = calloc(2 * n, sizeof(int64_t));
	double	   *floats = calloc(n, sizeof(double));
	ProtobufCBinaryData *blobs = calloc(2 * n, sizeof(ProtobufCBinaryData));
	uint8_t    *dates = calloc(4 * n, 1);
	uint32_t   *nulls = calloc(3 * n, sizeof(uint32_t));
	TsError		err;
	int			result;

	for (size_t i = 0; i < n; i++)
	{
		Tcopy__Row *r = &rows[i];
		uint32_t	d = (uint32_t) in[i].d;

		tcopy__row__init(r);
		r->ints = &ints[2 * i];
		r->floats = &floats[i];
		r->blobs = &blobs[2 * i];
		r->nulls = &nulls[3 * i];
		r->ints[r->n_ints++] = in[i].id;
		if (in[i].g_null)
			r->nulls[r->n_nulls++] = 1;
		else
			r->ints[r->n_ints++] = in[i].g;
		if (in[i].f_null)
			r->nulls[r->n_nulls++] = 2;
		else
			r->floats[r->n_floats++] = in[i].f;
		dates[4 * i] = (uint8_t) (d >> 24);
		dates[4 * i + 1] = (uint8_t) (d >> 16);
		dates[4 * i + 2] = (uint8_t) (d >> 8);
		dates[4 * i + 3] = (uint8_t) d;
		r->blobs[r->n_blobs].data = &dates[4 * i];
		r->blobs[r->n_blobs++].len = 4;
		if (in[i].s == NULL)
			r->nulls[r->n_nulls++] = 4;
		else
		{
			r->blobs[r->n_blobs].data = (uint8_t *) in[i].s;
			r->blobs[r->n_blobs++].len = strlen(in[i].s);
		}
		ptrs[i] = r;
	}
	batch.table_id = table_id;
	batch.kind = TCOPY__WRITE_KIND__WRITE_INSERT;
	batch.rows = ptrs;
	batch.n_rows = n;
	result = ts_session_write(session, &batch, NULL, &err);
	if (result != 0)
		fprintf(stderr, "write failed: %s\n", err.message);
	free(rows);
	free(ptrs);
	free(ints);
	free(floats);
	free(blobs);
	free(dates);
	free(nulls);
	return result;
}

/*
 * Run a scan of aggs grouped by group_by[ngroup] (reading session's
 * writes when sid is not 0): its groups in *out[*n], in arena; 0, or -1
 * with err.
 */
static int
run_agg(TsStore *store, uint32_t table_id, uint32_t *group_by, size_t ngroup,
		Tcopy__Aggregate **aggs, size_t naggs, uint64_t limit, TsSession *session,
		TcArena *arena, Tcopy__AggRow ***out, size_t *n, TsError *err)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	TsScan	   *scan;
	TsScanAgg  *agg;
	size_t		cap = 16;
	bool		done = false;

	request.table_id = table_id;
	request.group_by = group_by;
	request.n_group_by = ngroup;
	request.aggregates = aggs;
	request.n_aggregates = naggs;
	request.limit = limit;
	if (session != NULL)
	{
		request.session_id = session->id;
		request.session_key.data = session->key;
		request.session_key.len = 16;
	}
	scan = ts_scan_open(store, &request, err);
	if (scan == NULL)
		return -1;
	agg = ts_scan_agg_open(scan, &request, err);
	if (agg == NULL)
	{
		ts_scan_close(scan);
		return -1;
	}
	*out = malloc(cap * sizeof(Tcopy__AggRow *));
	*n = 0;
	while (!done)
	{
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;

		if (ts_scan_agg_next(agg, arena, &batch, err) != 0)
		{
			ts_scan_agg_close(agg);
			ts_scan_close(scan);
			return -1;
		}
		for (size_t i = 0; i < batch.n_groups; i++)
		{
			if (*n == cap)
				*out = realloc(*out, (cap *= 2) * sizeof(Tcopy__AggRow *));
			(*out)[(*n)++] = batch.groups[i];
		}
		done = batch.done;
	}
	ts_scan_agg_close(agg);
	ts_scan_close(scan);
	return 0;
}

static Tcopy__Aggregate *
make_agg(Tcopy__AggOp op, uint32_t column, Tcopy__ValueType type)
{
	Tcopy__Aggregate *a = calloc(1, sizeof(Tcopy__Aggregate));

	tcopy__aggregate__init(a);
	a->op = op;
	a->column = column;
	a->type = type;
	return a;
}

/* The group of out whose g (the first group_by value) is g, or NULL g. */
static Tcopy__AggRow *
group_of(Tcopy__AggRow **out, size_t n, bool null, int64_t g)
{
	for (size_t i = 0; i < n; i++)
	{
		Tcopy__Row *k = out[i]->group;

		if (k == NULL)
			continue;
		if (null ? (k->n_nulls > 0 && k->nulls[0] == 0) : (k->n_ints > 0 && k->ints[0] == g))
			return out[i];
	}
	return NULL;
}

static void
test_aggregates(void)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	TsSession  *session;
	uint32_t	table_id;
	uint64_t	sid,
				rows;
	bool		created;
	TcArena		arena;
	Tcopy__AggRow **out = NULL;
	Tcopy__AggRow *r;
	size_t		n;
	uint32_t	by_g[1] = {1};
	uint32_t	by_s[1] = {4};
	Tcopy__Aggregate *aggs[8];
	const TestRow data[] = {
		{1, false, 1, 1e308, false, -10, "a"},
		{2, false, 1, 1e308, false, 20, "a"},
		{3, false, 2, -0.0, false, 5, NULL},
		{4, false, 2, 0.0, false, 5, "b"},
		{5, false, 3, INFINITY, false, 1, "b"},
		{6, false, 3, 1.0, false, 2, "\xc3\xbc"},
		{7, true, 0, NAN, false, -20000, "\xc3\xbc"},
		{8, true, 0, 0.0, true, 0, ""},
		{9, false, 4, -1e200, false, 0, ""},
		{10, false, 4, 1e200, false, 0, ""},
	};

	ts_store_default_options(&options);
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL);
	REQUIRE(ts_store_open_table(store, "agg", make_schema(), true, &table_id, &created, NULL,
								&err) == 0);
	tc_arena_init(&arena, 64 * 1024);
	aggs[0] = make_agg(TCOPY__AGG_OP__AGG_COUNT_ROWS, 0, 0);
	aggs[1] = make_agg(TCOPY__AGG_OP__AGG_COUNT, 2, 0);
	aggs[2] = make_agg(TCOPY__AGG_OP__AGG_SUM_INT, 0, TCOPY__VALUE_TYPE__VALUE_INT);
	aggs[3] = make_agg(TCOPY__AGG_OP__AGG_SUM_FLOAT, 2, TCOPY__VALUE_TYPE__VALUE_FLOAT);
	aggs[4] = make_agg(TCOPY__AGG_OP__AGG_MIN, 2, TCOPY__VALUE_TYPE__VALUE_FLOAT);
	aggs[5] = make_agg(TCOPY__AGG_OP__AGG_MAX, 2, TCOPY__VALUE_TYPE__VALUE_FLOAT);
	aggs[6] = make_agg(TCOPY__AGG_OP__AGG_MIN, 3, TCOPY__VALUE_TYPE__VALUE_BE_INT);
	aggs[7] = make_agg(TCOPY__AGG_OP__AGG_AVG_FLOAT, 2, TCOPY__VALUE_TYPE__VALUE_FLOAT);

	/* no rows: one group of count 0, none when grouped */
	REQUIRE(run_agg(store, table_id, NULL, 0, aggs, 8, 0, NULL, &arena, &out, &n, &err) == 0);
	CHECK_EQ_UINT(n, 1);
	CHECK(out[0]->group == NULL && out[0]->n_counts == 8 && out[0]->counts[0] == 0 &&
		  out[0]->n_ints == 3 && out[0]->n_floats == 5 && out[0]->n_overflow == 0);
	free(out);
	REQUIRE(run_agg(store, table_id, by_g, 1, aggs, 8, 0, NULL, &arena, &out, &n, &err) == 0);
	CHECK_EQ_UINT(n, 0);
	free(out);

	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	REQUIRE(write_rows(session, table_id, data, 8) == 0);
	/* the open session's rows, read through the scan's iterator */
	REQUIRE(run_agg(store, table_id, NULL, 0, aggs, 1, 0, session, &arena, &out, &n, &err) == 0);
	CHECK(n == 1 && out[0]->counts[0] == 8);
	free(out);
	REQUIRE(run_agg(store, table_id, NULL, 0, aggs, 1, 0, NULL, &arena, &out, &n, &err) == 0);
	CHECK(n == 1 && out[0]->counts[0] == 0);
	free(out);
	REQUIRE(write_rows(session, table_id, data + 8, 2) == 0);
	REQUIRE(ts_session_commit(session, &rows, &err) == 0);

	REQUIRE(run_agg(store, table_id, by_g, 1, aggs, 8, 0, NULL, &arena, &out, &n, &err) == 0);
	CHECK_EQ_UINT(n, 5);
	/* groups in the order met */
	CHECK(n == 5 && out[0]->group->ints[0] == 1 && out[3]->group->n_nulls == 1);
	r = group_of(out, n, false, 1);
	REQUIRE(r != NULL);
	CHECK(r->counts[0] == 2 && r->counts[1] == 2);
	CHECK(r->ints[0] == 0 && r->ints[1] == 3);	/* sum of ids */
	CHECK(isinf(r->floats[0]));
	CHECK(r->n_overflow == 2 && r->overflow[0] == 3 && r->overflow[1] == 7);
	CHECK(r->ints[2] == -10);	/* min of big-endian ints, negative */
	r = group_of(out, n, false, 2);
	REQUIRE(r != NULL);
	/* float8smaller(-0, 0) and float8larger(-0, 0) both keep the 0 read last */
	CHECK(r->floats[1] == 0.0 && !signbit(r->floats[1]));
	CHECK(r->floats[2] == 0.0 && !signbit(r->floats[2]));
	CHECK(r->n_overflow == 0);
	r = group_of(out, n, false, 3);
	REQUIRE(r != NULL);
	/* an infinite input is no overflow; Sxx is NaN */
	CHECK(isinf(r->floats[0]) && r->n_overflow == 0 && isnan(r->floats[4]));
	r = group_of(out, n, true, 0);
	REQUIRE(r != NULL);
	/* NULL keys: one group; NaN is the greatest; count of values skips NULL */
	CHECK(r->counts[0] == 2 && r->counts[1] == 1 && isnan(r->floats[2]) && isnan(r->floats[1]));
	CHECK(r->ints[2] == -20000);
	r = group_of(out, n, false, 4);
	REQUIRE(r != NULL);
	/* finite sum, Sxx overflowing from finite inputs: float8_accum's error */
	CHECK(r->floats[0] == 0.0 && r->n_overflow == 1 && r->overflow[0] == 7);
	free(out);

	/* grouped by bytes: "" and NULL are different groups */
	REQUIRE(run_agg(store, table_id, by_s, 1, aggs, 1, 0, NULL, &arena, &out, &n, &err) == 0);
	CHECK_EQ_UINT(n, 5);
	for (size_t i = 0; i < n; i++)
	{
		Tcopy__Row *k = out[i]->group;

		if (k->n_nulls == 1)
			CHECK_EQ_INT(out[i]->counts[0], 1);
		else if (k->blobs[0].len == 0)
			CHECK_EQ_INT(out[i]->counts[0], 3);
		else
			CHECK_EQ_INT(out[i]->counts[0], 2);
	}
	free(out);

	/* the sum of ints past 64 bits */
	{
		TestRow		big[3] = {{INT64_MAX, false, 9, 0, false, 0, "x"},
		{INT64_MAX - 1, false, 9, 0, false, 0, "x"},
		{INT64_MAX - 2, false, 9, 0, false, 0, "x"}};
		__int128	sum;

		session = ts_session_begin(store, &sid, &err);
		REQUIRE(session != NULL);
		REQUIRE(write_rows(session, table_id, big, 3) == 0);
		REQUIRE(ts_session_commit(session, &rows, &err) == 0);
		REQUIRE(run_agg(store, table_id, by_g, 1, aggs, 3, 0, NULL, &arena, &out, &n, &err) == 0);
		r = group_of(out, n, false, 9);
		REQUIRE(r != NULL);
		sum = (__int128) ((unsigned __int128) (uint64_t) r->ints[0] << 64 | (uint64_t) r->ints[1]);
		CHECK(sum == (__int128) INT64_MAX * 3 - 3);
		free(out);
	}

	/*
	 * in parts, a thread each (counts, integer sums, min and max combine
	 * exactly), over many rows: the same as in one pass
	 */
	{
		TestRow    *many = calloc(20000, sizeof(TestRow));
		Tcopy__Aggregate *exact[5] = {aggs[0], aggs[2], aggs[4], aggs[5], aggs[6]};
		Tcopy__AggRow **one;
		size_t		none;
		Tcopy__Scan request = TCOPY__SCAN__INIT;
		TsScan	   *scan;
		TsScan	  **parts;
		size_t		nparts = 0;

		for (int i = 0; i < 20000; i++)
		{
			many[i].id = 1000 + i;
			many[i].g = i % 7;
			many[i].f = (i % 3 == 0) ? -0.0 : (i % 3 == 1 ? 0.0 : (double) (i % 11));
			many[i].d = i * 13 % 1000 - 500;
			many[i].s = "m";
		}
		session = ts_session_begin(store, &sid, &err);
		REQUIRE(session != NULL);
		REQUIRE(write_rows(session, table_id, many, 20000) == 0);
		REQUIRE(ts_session_commit(session, &rows, &err) == 0);
		request.table_id = table_id;
		scan = ts_scan_open(store, &request, &err);
		REQUIRE(scan != NULL);
		CHECK(ts_scan_parts(scan, 2, &parts, &nparts, &err) == 0 && nparts == 2);
		for (size_t i = 0; i < nparts; i++)
			ts_scan_close(parts[i]);
		free(parts);
		ts_scan_close(scan);
		/* in parts (the aggregates combine), then in one pass (a float sum among them) */
		REQUIRE(run_agg(store, table_id, by_g, 1, exact, 5, 0, NULL, &arena, &out, &n, &err) == 0);
		aggs[7]->op = TCOPY__AGG_OP__AGG_SUM_FLOAT;
		{
			Tcopy__Aggregate *serial[6] = {aggs[0], aggs[2], aggs[4], aggs[5], aggs[6], aggs[7]};

			REQUIRE(run_agg(store, table_id, by_g, 1, serial, 6, 0, NULL, &arena, &one, &none,
							&err) == 0);
		}
		aggs[7]->op = TCOPY__AGG_OP__AGG_AVG_FLOAT;
		CHECK_EQ_UINT(n, none);
		for (size_t i = 0; i < n && i < none; i++)
		{
			CHECK(out[i]->group->n_nulls == one[i]->group->n_nulls &&
				  (out[i]->group->n_ints == 0 || out[i]->group->ints[0] == one[i]->group->ints[0]));
			for (int k = 0; k < 5; k++)
				CHECK(out[i]->counts[k] == one[i]->counts[k]);
			CHECK(out[i]->ints[0] == one[i]->ints[0] && out[i]->ints[1] == one[i]->ints[1] &&
				  out[i]->ints[2] == one[i]->ints[2]);
			/* min and max of floats, -0 and 0 included: the same bits */
			CHECK(memcmp(&out[i]->floats[0], &one[i]->floats[0], sizeof(double)) == 0);
			CHECK(memcmp(&out[i]->floats[1], &one[i]->floats[1], sizeof(double)) == 0);
		}
		free(out);
		free(one);
		free(many);
	}

	/* a limit counts groups */
	REQUIRE(run_agg(store, table_id, by_g, 1, aggs, 1, 2, NULL, &arena, &out, &n, &err) == 0);
	CHECK_EQ_UINT(n, 2);
	free(out);

	/* refused: a float column grouped by, a sum of bytes, a bad column, no op */
	{
		uint32_t	by_f[1] = {2};
		uint32_t	by_bad[1] = {5};
		Tcopy__Aggregate *bad[3] = {
			make_agg(TCOPY__AGG_OP__AGG_SUM_INT, 3, TCOPY__VALUE_TYPE__VALUE_INT),
			make_agg(TCOPY__AGG_OP__AGG_MAX, 9, TCOPY__VALUE_TYPE__VALUE_INT),
			make_agg(TCOPY__AGG_OP__AGG_NONE, 0, 0)};

		CHECK(run_agg(store, table_id, by_f, 1, aggs, 1, 0, NULL, &arena, &out, &n, &err) != 0 &&
			  err.code == TCOPY__ERROR_CODE__ERROR_PROTOCOL);
		CHECK(run_agg(store, table_id, by_bad, 1, aggs, 1, 0, NULL, &arena, &out, &n, &err) != 0 &&
			  err.code == TCOPY__ERROR_CODE__ERROR_PROTOCOL);
		for (int i = 0; i < 3; i++)
		{
			CHECK(run_agg(store, table_id, NULL, 0, &bad[i], 1, 0, NULL, &arena, &out, &n,
						  &err) != 0 && err.code == TCOPY__ERROR_CODE__ERROR_PROTOCOL);
			free(bad[i]);
		}
	}
	for (int i = 0; i < 8; i++)
		free(aggs[i]);
	tc_arena_free(&arena);
	ts_store_close(store);
}

int
main(void)
{
	char		cmd[600];

	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-scan-agg-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_aggregates);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", data_dir);
	return tc_test_summary();
}
