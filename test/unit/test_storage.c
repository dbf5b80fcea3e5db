/*
 * test_storage.c
 *		The store driven directly (no sockets): sessions that stay in memory
 *		and sessions that spill to runs, upserts within and across sessions
 *		and runs, abort, scans with bounds, projection and limits, keyless
 *		tables, reopening, schema mismatch, truncate and drop.
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_storage.h"

static char data_dir[256];

/* Schema: id int (key), val int, note bytes. */
static Tcopy__Schema *
make_schema(bool keyed)
{
	static Tcopy__Column columns[3];
	static Tcopy__Column *column_ptrs[3];
	static uint32_t key[1] = {0};
	static Tcopy__Schema schema;
	const char *names[3] = {"id", "val", "note"};
	Tcopy__Kind kinds[3] = {TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES};

	tcopy__schema__init(&schema);
	for (int i = 0; i < 3; i++)
	{
		tcopy__column__init(&columns[i]);
		columns[i].name = (char *) names[i];
		columns[i].kind = kinds[i];
		columns[i].type_name = (char *) (i == 2 ? "text" : "int8");
		column_ptrs[i] = &columns[i];
	}
	schema.n_columns = 3;
	schema.columns = column_ptrs;
	schema.n_key = keyed ? 1 : 0;
	schema.key = key;
	return &schema;
}

/* A batch of rows (id, val, note = "n<id>"); note NULL when id % 7 == 0. */
typedef struct TestBatch
{
	Tcopy__WriteBatch batch;
	Tcopy__Row *rows;
	Tcopy__Row **row_ptrs;
	int64_t    *ints;
	ProtobufCBinaryData *blobs;
	uint32_t   *nulls;
	char	   *notes;
} TestBatch;

static void
batch_build(TestBatch *tb, uint32_t table_id, uint64_t seq, const int64_t *ids,
			size_t n, int64_t val)
{
	tcopy__write_batch__init(&tb->batch);
	tb->rows = calloc(n, sizeof(Tcopy__Row));
	tb->row_ptrs = calloc(n, sizeof(Tcopy__Row *));
	tb->ints = calloc(n * 2, sizeof(int64_t));
	tb->blobs = calloc(n, sizeof(ProtobufCBinaryData));
	tb->nulls = calloc(n, sizeof(uint32_t));
	tb->notes = calloc(n, 24);
	for (size_t i = 0; i < n; i++)
	{
		Tcopy__Row *row = &tb->rows[i];

		tcopy__row__init(row);
		tb->ints[2 * i] = ids[i];
		tb->ints[2 * i + 1] = val;
		row->ints = &tb->ints[2 * i];
		row->n_ints = 2;
		if (ids[i] % 7 == 0)
		{
			tb->nulls[i] = 2;
			row->nulls = &tb->nulls[i];
			row->n_nulls = 1;
		}
		else
		{
			int			len = snprintf(tb->notes + 24 * i, 24, "n%lld", (long long) ids[i]);

			tb->blobs[i].data = (uint8_t *) tb->notes + 24 * i;
			tb->blobs[i].len = (size_t) len;
			row->blobs = &tb->blobs[i];
			row->n_blobs = 1;
		}
		tb->row_ptrs[i] = row;
	}
	tb->batch.seq = seq;
	tb->batch.table_id = table_id;
	tb->batch.rows = tb->row_ptrs;
	tb->batch.n_rows = n;
}

static void
batch_free(TestBatch *tb)
{
	free(tb->rows);
	free(tb->row_ptrs);
	free(tb->ints);
	free(tb->blobs);
	free(tb->nulls);
	free(tb->notes);
}

/* Write ids (in batches of 500) with val in one session; commit or abort. */
static int
load(TsStore *store, uint32_t table_id, const int64_t *ids, size_t n, int64_t val,
	 bool commit)
{
	TsError		err;
	uint64_t	sid,
				rows = 0;
	TsSession  *session = ts_session_begin(store, &sid, &err);
	uint64_t	seq = 1;

	if (session == NULL)
		return -1;
	for (size_t off = 0; off < n; off += 500)
	{
		TestBatch	tb;
		size_t		count = n - off < 500 ? n - off : 500;
		int			rc;

		batch_build(&tb, table_id, seq++, ids + off, count, val);
		rc = ts_session_write(session, &tb.batch, &err);
		batch_free(&tb);
		if (rc != 0)
		{
			fprintf(stderr, "write failed: %s\n", err.message);
			ts_session_abort(session);
			return -1;
		}
	}
	if (!commit)
	{
		ts_session_abort(session);
		return 0;
	}
	if (ts_session_commit(session, &rows, &err) != 0)
	{
		fprintf(stderr, "commit failed: %s\n", err.message);
		return -1;
	}
	return rows == n ? 0 : -1;
}

typedef struct ScanResult
{
	uint64_t	rows;
	int64_t		first_id;
	int64_t		last_id;
	bool		ascending;
	bool		values_match;	/* every val equals expect_val */
	bool		notes_match;	/* note is "n<id>" or NULL for id % 7 == 0 */
	int64_t		sum_ids;
} ScanResult;

static int
scan(TsStore *store, uint32_t table_id, Tcopy__Scan *request, int64_t expect_val,
	 ScanResult *res)
{
	TsError		err;
	TsScan	   *sc;
	TcArena		arena;
	Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
	int64_t		prev = INT64_MIN;

	memset(res, 0, sizeof(*res));
	res->ascending = res->values_match = res->notes_match = true;
	request->table_id = table_id;
	sc = ts_scan_open(store, request, &err);
	if (sc == NULL)
	{
		fprintf(stderr, "scan failed: %s\n", err.message);
		return -1;
	}
	tc_arena_init(&arena, 64 * 1024);
	do
	{
		tc_arena_reset(&arena);
		if (ts_scan_next(sc, &arena, &batch, &err) != 0)
		{
			ts_scan_close(sc);
			tc_arena_free(&arena);
			return -1;
		}
		for (size_t i = 0; i < batch.n_rows; i++)
		{
			Tcopy__Row *row = batch.rows[i];
			int64_t		id = row->ints[0];
			char		note[24];

			if (res->rows == 0)
				res->first_id = id;
			res->last_id = id;
			res->sum_ids += id;
			if (id <= prev)
				res->ascending = false;
			prev = id;
			if (request->n_columns == 0)
			{
				if (row->n_ints != 2 || row->ints[1] != expect_val)
					res->values_match = false;
				snprintf(note, sizeof(note), "n%lld", (long long) id);
				if (id % 7 == 0 ? (row->n_nulls != 1 || row->nulls[0] != 2 || row->n_blobs != 0)
					: (row->n_blobs != 1 || row->blobs[0].len != strlen(note) ||
					   memcmp(row->blobs[0].data, note, strlen(note)) != 0))
					res->notes_match = false;
			}
			res->rows++;
		}
	} while (!batch.done);
	ts_scan_close(sc);
	tc_arena_free(&arena);
	return 0;
}

static int64_t *
shuffled_ids(size_t n, int64_t first, unsigned seed)
{
	int64_t    *ids = malloc(n * sizeof(int64_t));

	for (size_t i = 0; i < n; i++)
		ids[i] = first + (int64_t) i;
	srand(seed);
	for (size_t i = n - 1; i > 0; i--)
	{
		size_t		j = (size_t) rand() % (i + 1);
		int64_t		t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
	}
	return ids;
}

static TsStore *
open_store(size_t session_memory)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;

	ts_store_default_options(&options);
	options.session_memory_bytes = session_memory;
	options.sst_target_bytes = 256 * 1024;	/* several SST files per commit */
	store = ts_store_open(data_dir, &options, &err);
	if (store == NULL)
		fprintf(stderr, "open failed: %s\n", err.message);
	return store;
}

static uint32_t
open_table(TsStore *store, const char *name, bool keyed)
{
	TsError		err;
	uint32_t	id = 0;
	bool		created;

	if (ts_store_open_table(store, name, make_schema(keyed), true, &id, &created, NULL, &err) != 0)
		fprintf(stderr, "open table failed: %s\n", err.message);
	return id;
}

/* A spilled session: many runs, shuffled keys, upserts across runs. */
static void
test_spilled_session(void)
{
	TsStore    *store = open_store(64 * 1024);
	size_t		n = 20000;
	int64_t    *ids = shuffled_ids(n, 1, 42);
	int64_t    *again = shuffled_ids(n / 2, 1, 43);
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	uint32_t	table;
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	REQUIRE(store != NULL);
	table = open_table(store, "spill", true);
	REQUIRE(table > 0);
	CHECK_EQ_INT(load(store, table, ids, n, 1, true), 0);
	REQUIRE(scan(store, table, &request, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK(res.ascending);
	CHECK(res.values_match);
	CHECK(res.notes_match);
	CHECK_EQ_INT(res.first_id, 1);
	CHECK_EQ_INT(res.last_id, (int64_t) n);

	/* a later session overwrites half of the keys */
	CHECK_EQ_INT(load(store, table, again, n / 2, 2, true), 0);
	request.upper = &(Tcopy__KeyBound) TCOPY__KEY_BOUND__INIT;
	request.upper->key = &(Tcopy__Row) TCOPY__ROW__INIT;
	request.upper->key->ints = (int64_t[]) {(int64_t) n / 2};
	request.upper->key->n_ints = 1;
	request.upper->inclusive = true;
	REQUIRE(scan(store, table, &request, 2, &res) == 0);
	CHECK_EQ_UINT(res.rows, n / 2);
	CHECK(res.values_match);
	CHECK(res.ascending);

	/* one session writing the same key in several runs: the last wins */
	{
		int64_t    *twice = malloc(2 * n * sizeof(int64_t));
		TsError		err;
		uint64_t	sid,
					rows;
		TsSession  *session;
		TestBatch	tb;

		for (size_t i = 0; i < n; i++)
			twice[i] = twice[n + i] = ids[i];
		session = ts_session_begin(store, &sid, &err);
		REQUIRE(session != NULL);
		for (size_t off = 0; off < 2 * n; off += 1000)
		{
			batch_build(&tb, table, off / 1000 + 1, twice + off, 1000, off < n ? 3 : 4);
			CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), 0);
			batch_free(&tb);
		}
		ts_store_stats(store, &stats);
		CHECK(stats.spilled_bytes > 0);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		CHECK_EQ_UINT(rows, 2 * n);
		free(twice);
	}
	request.upper = NULL;
	REQUIRE(scan(store, table, &request, 4, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK(res.values_match);

	ts_store_stats(store, &stats);
	CHECK_EQ_UINT(stats.spilled_bytes, 0);
	CHECK_EQ_UINT(stats.staged_bytes, 0);
	CHECK_EQ_UINT(stats.sessions_open, 0);
	free(ids);
	free(again);
	ts_store_close(store);
}

/* In-memory sessions: upsert inside one batch, abort, bounds, projection. */
static void
test_memory_session(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	int64_t		ids[6] = {5, 3, 9, 3, 1, 5};
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__KeyBound lower = TCOPY__KEY_BOUND__INIT,
				upper = TCOPY__KEY_BOUND__INIT;
	Tcopy__Row lower_key = TCOPY__ROW__INIT,
				upper_key = TCOPY__ROW__INIT;
	int64_t		lo = 3,
				hi = 9;
	ScanResult	res;
	uint32_t	table;
	TsError		err;
	uint64_t	sid;
	TsSession  *session;
	TestBatch	tb;

	REQUIRE(store != NULL);
	table = open_table(store, "mem", true);
	REQUIRE(table > 0);
	CHECK_EQ_INT(load(store, table, ids, 6, 7, true), 0);
	REQUIRE(scan(store, table, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 4);
	CHECK(res.ascending);
	CHECK(res.values_match);
	CHECK_EQ_INT(res.sum_ids, 1 + 3 + 5 + 9);

	/* aborted: nothing */
	{
		int64_t		more[2] = {100, 101};

		CHECK_EQ_INT(load(store, table, more, 2, 7, false), 0);
		REQUIRE(scan(store, table, &request, 7, &res) == 0);
		CHECK_EQ_UINT(res.rows, 4);
	}

	/* bounds: [3, 9) -> 3, 5; (3, 9] -> 5, 9 */
	lower_key.ints = &lo;
	lower_key.n_ints = 1;
	upper_key.ints = &hi;
	upper_key.n_ints = 1;
	lower.key = &lower_key;
	upper.key = &upper_key;
	request.lower = &lower;
	request.upper = &upper;
	lower.inclusive = true;
	upper.inclusive = false;
	REQUIRE(scan(store, table, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 2);
	CHECK_EQ_INT(res.sum_ids, 3 + 5);
	lower.inclusive = false;
	upper.inclusive = true;
	REQUIRE(scan(store, table, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 2);
	CHECK_EQ_INT(res.sum_ids, 5 + 9);

	/* limit and projection (id only) */
	request.lower = request.upper = NULL;
	request.limit = 3;
	request.n_columns = 1;
	request.columns = (uint32_t[]) {0};
	REQUIRE(scan(store, table, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 3);
	CHECK_EQ_INT(res.sum_ids, 1 + 3 + 5);

	/* a bad row fails the batch and stages nothing of it */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	batch_build(&tb, table, 1, ids, 2, 8);
	tb.rows[1].n_ints = 1;		/* missing val */
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_BAD_ROW);
	CHECK_EQ_UINT(ts_session_rows(session), 0);
	tb.rows[1].n_ints = 2;
	tb.batch.table_id = 999;
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
	batch_free(&tb);
	ts_session_abort(session);
	ts_store_close(store);
}

/* Keyless tables keep every row, across reopen; definitions persist. */
static void
test_keyless_and_reopen(void)
{
	TsStore    *store = open_store(64 * 1024);
	int64_t		ids[1000];
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	uint32_t	table,
				mem;
	TsError		err;
	bool		created;
	Tcopy__Schema *other;

	for (int i = 0; i < 1000; i++)
		ids[i] = i % 10;		/* duplicates on purpose */
	REQUIRE(store != NULL);
	table = open_table(store, "heap", false);
	REQUIRE(table > 0);
	CHECK_EQ_INT(load(store, table, ids, 1000, 1, true), 0);
	ts_store_close(store);

	/* reopen: rows are there, new row ids do not overwrite old ones */
	store = open_store(64 * 1024 * 1024);
	REQUIRE(store != NULL);
	CHECK_EQ_INT(open_table(store, "heap", false), table);
	CHECK_EQ_INT(load(store, table, ids, 1000, 1, true), 0);
	REQUIRE(scan(store, table, &request, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 2000);

	/* the keyed table from the previous test is still there */
	mem = open_table(store, "mem", true);
	CHECK(mem > 0);
	REQUIRE(scan(store, mem, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 4);

	/* schema mismatch: the keyed schema against the keyless table */
	other = make_schema(true);
	CHECK_EQ_INT(ts_store_open_table(store, "heap", other, false, &table, &created, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
	CHECK_EQ_INT(ts_store_open_table(store, "nope", NULL, false, &table, &created, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);

	/* truncate empties, drop forgets */
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, mem, &err), 0);
	REQUIRE(scan(store, mem, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, mem, &err), 0);
	request.table_id = mem;
	CHECK(ts_scan_open(store, &request, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
	ts_store_close(store);

	/* leftover staging from a "crash" is removed at open */
	{
		char		path[512];
		FILE	   *f;

		snprintf(path, sizeof(path), "%s/staging/session-77", data_dir);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/staging/session-77/run-000000", data_dir);
		f = fopen(path, "w");
		if (f)
			fclose(f);
		store = open_store(64 * 1024);
		REQUIRE(store != NULL);
		CHECK(access(path, F_OK) != 0);
		mem = 0;
		CHECK_EQ_INT(ts_store_open_table(store, "mem", NULL, false, &mem, &created, NULL, &err), -1);
		ts_store_close(store);
	}
}

/* More runs than one merge opens: runs are merged early, the last write wins. */
static void
test_many_runs(void)
{
	TsStore    *store = open_store(1024);	/* every batch spills alone */
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	uint32_t	table;
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;
	int64_t		ids[100];

	REQUIRE(store != NULL);
	table = open_table(store, "runs", true);
	REQUIRE(table > 0);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);

	/* 150 batches over the same 1000 keys: batch b writes val b */
	for (int b = 1; b <= 150; b++)
	{
		TestBatch	tb;

		for (int i = 0; i < 100; i++)
			ids[i] = ((b - 1) % 10) * 100 + i + 1;
		batch_build(&tb, table, (uint64_t) b, ids, 100, b);
		CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), 0);
		batch_free(&tb);
	}
	/* 149 spills, but never more than 64 run files at once */
	{
		char		dir[512];
		DIR		   *d;
		struct dirent *entry;
		int			files = 0;

		snprintf(dir, sizeof(dir), "%s/staging/session-%llu", data_dir,
				 (unsigned long long) sid);
		d = opendir(dir);
		REQUIRE(d != NULL);
		while ((entry = readdir(d)) != NULL)
			files += strncmp(entry->d_name, "run-", 4) == 0;
		closedir(d);
		CHECK(files >= 1 && files <= 64);
	}
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_UINT(rows, 15000);

	/* keys 1..100 were last written by batch 141, 901..1000 by batch 150 */
	request.n_columns = 0;
	REQUIRE(scan(store, table, &request, 0, &res) == 0);
	CHECK_EQ_UINT(res.rows, 1000);
	CHECK(res.ascending);
	{
		Tcopy__KeyBound upper = TCOPY__KEY_BOUND__INIT;
		Tcopy__Row upper_key = TCOPY__ROW__INIT;
		int64_t		hi = 100;

		upper_key.ints = &hi;
		upper_key.n_ints = 1;
		upper.key = &upper_key;
		upper.inclusive = true;
		request.upper = &upper;
		REQUIRE(scan(store, table, &request, 141, &res) == 0);
		CHECK_EQ_UINT(res.rows, 100);
		CHECK(res.values_match);
	}
	ts_store_close(store);
}

/* Prepare does everything but publish: nothing visible, no more writes. */
static void
test_prepare(void)
{
	TsStore    *store = open_store(4096);	/* spills: prepare writes SSTs */
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	uint32_t	table;
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;
	int64_t    *ids = shuffled_ids(3000, 1, 7);
	TestBatch	tb;

	REQUIRE(store != NULL);
	table = open_table(store, "prep", true);
	REQUIRE(table > 0);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	for (int b = 0; b < 3; b++)
	{
		batch_build(&tb, table, (uint64_t) b + 1, ids + 1000 * b, 1000, 5);
		CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), 0);
		batch_free(&tb);
	}
	CHECK_EQ_INT(ts_session_prepare(session, &err), 0);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);
	batch_build(&tb, table, 4, ids, 10, 5);
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), -1);
	batch_free(&tb);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK_EQ_UINT(res.rows, 3000);
	CHECK(res.values_match);

	/* a prepared session that aborts leaves nothing */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	batch_build(&tb, table, 1, ids, 1000, 6);
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, &err), 0);
	batch_free(&tb);
	CHECK_EQ_INT(ts_session_prepare(session, &err), 0);
	ts_session_abort(session);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK(res.values_match);
	free(ids);
	ts_store_close(store);
}

int
main(void)
{
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-storage-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_spilled_session);
	TC_RUN(test_memory_session);
	TC_RUN(test_keyless_and_reopen);
	TC_RUN(test_many_runs);
	TC_RUN(test_prepare);
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", data_dir);
	}
	return tc_test_summary();
}
