/*
 * test_storage.c
 *		The store driven directly (no sockets): sessions that stay in memory
 *		and sessions that spill to runs, upserts within and across sessions
 *		and runs, abort, scans with bounds, projection and limits, keyless
 *		tables, reopening, schema mismatch, truncate and drop; sorted sessions
 *		that spill straight to SST files, and sorted sessions that stop
 *		being sorted; columns matched by form and stored schemas replaced
 *		by the client's; tables of no columns.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_key.h"
#include "ts_session_int.h"
#include "ts_store_int.h"

static char data_dir[256];

/* When set, scan() expects val scan_expect_vals[id] instead of expect_val. */
static const int64_t *scan_expect_vals;

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
		rc = ts_session_write(session, &tb.batch, NULL, &err);
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
				int64_t		want = scan_expect_vals ? scan_expect_vals[id] : expect_val;

				if (row->n_ints != 2 || row->ints[1] != want)
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

/* Threads of a commit's merge: 1, then the tests of merges again with 3. */
static int merge_threads = 1;

/* The store holds no session, and nothing staged or spilled. */
static void
check_store_idle(TsStore *store)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	ts_store_stats(store, &stats);
	CHECK_EQ_UINT(stats.sessions_open, 0);
	CHECK_EQ_UINT(stats.staged_bytes, 0);
	CHECK_EQ_UINT(stats.spilled_bytes, 0);
	/* nothing prepared, no session watching: no key claim is left */
	CHECK_EQ_UINT(store->staging->nkey_claims, 0);
	CHECK(store->staging->live_first == NULL);
}

static TsStore *open_store_sst(size_t session_memory, uint64_t sst_target);

static TsStore *
open_store(size_t session_memory)
{
	return open_store_sst(session_memory, 256 * 1024);	/* several SSTs per commit */
}

static TsStore *
open_store_sst(size_t session_memory, uint64_t sst_target)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;

	ts_store_default_options(&options);
	options.session_memory_bytes = session_memory;
	options.sst_target_bytes = sst_target;
	options.merge_threads = merge_threads;
	options.merge_part_bytes = 1;	/* as many parts as threads */
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
			CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), 0);
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

	check_store_idle(store);
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
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_BAD_ROW);
	CHECK_EQ_UINT(ts_session_rows(session), 0);
	tb.rows[1].n_ints = 2;
	tb.batch.table_id = 999;
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), -1);
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
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, mem, NULL, NULL, &err), 0);
	REQUIRE(scan(store, mem, &request, 7, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, mem, NULL, NULL, &err), 0);
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
		CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), 0);
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

/*
 * Two sessions load n shuffled rows each, a batch of one after a batch of
 * the other, into a store with the given memory budget; the peak of the
 * store's staged bytes, sampled after every batch, in *peak.  Both commit
 * every row.
 */
static void
two_sessions_peak(uint64_t budget, const char *name, size_t n, uint64_t *peak)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	TsSession  *sessions[2];
	int64_t    *ids[2];
	int64_t    *vals = calloc(2 * n + 1, sizeof(int64_t));
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__Stats stats = TCOPY__STATS__INIT;
	ScanResult	res;
	uint32_t	table;

	*peak = 0;
	ts_store_default_options(&options);
	options.session_memory_bytes = 64 * 1024 * 1024;	/* never the bound here */
	options.memory_bytes = budget;
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL && vals != NULL);
	table = open_table(store, name, true);
	for (int s = 0; s < 2; s++)
	{
		uint64_t	sid;

		ids[s] = shuffled_ids(n, 1 + (int64_t) (s * n), 50 + (unsigned) s);
		sessions[s] = ts_session_begin(store, &sid, &err);
		REQUIRE(sessions[s] != NULL);
		for (size_t i = 0; i < n; i++)
			vals[ids[s][i]] = s + 1;
	}
	for (size_t off = 0; off < n; off += 1000)
	{
		for (int s = 0; s < 2; s++)
		{
			TestBatch	tb;

			batch_build(&tb, table, off / 1000 + 1, ids[s] + off, 1000, s + 1);
			CHECK_EQ_INT(ts_session_write(sessions[s], &tb.batch, NULL, &err), 0);
			batch_free(&tb);
			ts_store_stats(store, &stats);
			if (stats.staged_bytes > *peak)
				*peak = stats.staged_bytes;
		}
	}
	for (int s = 0; s < 2; s++)
	{
		uint64_t	rows;

		CHECK_EQ_INT(ts_session_commit(sessions[s], &rows, &err), 0);
		CHECK_EQ_UINT(rows, n);
		free(ids[s]);
	}
	scan_expect_vals = vals;
	REQUIRE(scan(store, table, &request, 0, &res) == 0);
	scan_expect_vals = NULL;
	CHECK_EQ_UINT(res.rows, 2 * n);
	CHECK(res.values_match);
	check_store_idle(store);
	free(vals);
	ts_store_close(store);
}

/*
 * The store's memory budget: without it two sessions stage everything
 * they are sent (below their own limit); with a budget of 2 MB each spills
 * once it holds 1 MB, and the two together stay near the budget (each at
 * most its spilling half and a filling one of about 1 MB and a batch).
 */
static void
test_memory_budget(void)
{
	size_t		n = 300000;		/* about 9 MB a session, staged */
	uint64_t	unlimited,
				budgeted;

	two_sessions_peak(0, "budget_none", n, &unlimited);
	two_sessions_peak(2 * 1024 * 1024, "budget_2mb", n, &budgeted);

	CHECK(unlimited > 16 * 1024 * 1024);
	CHECK(budgeted > 1024 * 1024);
	CHECK(budgeted < 6 * 1024 * 1024);
	if (budgeted >= 6 * 1024 * 1024 || unlimited <= 16 * 1024 * 1024)
		fprintf(stderr, "staged peaks: %llu bytes without a budget, %llu with 2 MB\n",
				(unsigned long long) unlimited, (unsigned long long) budgeted);
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
		CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), 0);
		batch_free(&tb);
	}
	CHECK_EQ_INT(ts_session_prepare(session, &err), 0);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);
	batch_build(&tb, table, 4, ids, 10, 5);
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), -1);
	batch_free(&tb);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK_EQ_UINT(res.rows, 3000);
	CHECK(res.values_match);

	/* a prepared session that aborts leaves nothing */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	batch_build(&tb, table, 1, ids, 1000, 6);
	CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), 0);
	batch_free(&tb);
	CHECK_EQ_INT(ts_session_prepare(session, &err), 0);
	ts_session_abort(session);
	REQUIRE(scan(store, table, &request, 5, &res) == 0);
	CHECK(res.values_match);
	free(ids);
	ts_store_close(store);
}

/* Files in the staging directory of session sid whose names start with prefix. */
static int
count_staging(uint64_t sid, const char *prefix)
{
	char		dir[512];
	DIR		   *d;
	struct dirent *entry;
	int			files = 0;

	snprintf(dir, sizeof(dir), "%s/staging/session-%llu", data_dir, (unsigned long long) sid);
	d = opendir(dir);
	if (d == NULL)
		return -1;				/* no directory at all */
	while ((entry = readdir(d)) != NULL)
		files += strncmp(entry->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return files;
}

/* What RocksDB holds of a table: its files, their entries, their placement. */
typedef struct TableFiles
{
	int			nfiles;
	uint64_t	entries;		/* summed over the files: a key in two counts twice */
	int			in_l0;
	bool		overlap;		/* two of the files share a key range */
} TableFiles;

static int
key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			cmp = memcmp(a, b, alen < blen ? alen : blen);

	return cmp != 0 ? cmp : (alen < blen ? -1 : alen > blen);
}

static void
table_files(TsStore *store, uint32_t table_id, TableFiles *tf)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(store->db);
	int			n = rocksdb_livefiles_count(lf);
	uint8_t		prefix[TS_TABLE_ID_SIZE];
	int		   *mine = calloc(n + 1, sizeof(int));
	int			nmine = 0;

	memset(tf, 0, sizeof(*tf));
	ts_put_be32(prefix, table_id);
	for (int i = 0; i < n; i++)
	{
		size_t		len;
		const char *smallest = rocksdb_livefiles_smallestkey(lf, i, &len);

		if (strcmp(rocksdb_livefiles_column_family_name(lf, i), "default") != 0 ||
			len < TS_TABLE_ID_SIZE || memcmp(smallest, prefix, TS_TABLE_ID_SIZE) != 0)
			continue;
		mine[nmine++] = i;
		tf->nfiles++;
		tf->entries += rocksdb_livefiles_entries(lf, i);
		tf->in_l0 += rocksdb_livefiles_level(lf, i) == 0;
	}
	for (int a = 0; a < nmine; a++)
		for (int b = a + 1; b < nmine; b++)
		{
			size_t		sa,
						la,
						sb,
						lb;
			const char *small_a = rocksdb_livefiles_smallestkey(lf, mine[a], &sa);
			const char *large_a = rocksdb_livefiles_largestkey(lf, mine[a], &la);
			const char *small_b = rocksdb_livefiles_smallestkey(lf, mine[b], &sb);
			const char *large_b = rocksdb_livefiles_largestkey(lf, mine[b], &lb);

			if (key_cmp(small_a, sa, large_b, lb) <= 0 && key_cmp(small_b, sb, large_a, la) <= 0)
				tf->overlap = true;
		}
	free(mine);
	rocksdb_livefiles_destroy(lf);
}

/* Write ids[0..n) to an open session in batches of batch_rows, with val. */
static void
write_ids(TsSession *session, uint32_t table, const int64_t *ids, size_t n,
		  size_t batch_rows, int64_t val)
{
	TsError		err;

	for (size_t off = 0; off < n; off += batch_rows)
	{
		TestBatch	tb;
		size_t		count = n - off < batch_rows ? n - off : batch_rows;

		batch_build(&tb, table, off / batch_rows + 1, ids + off, count, val);
		if (ts_session_write(session, &tb.batch, NULL, &err) != 0)
		{
			fprintf(stderr, "write failed: %s\n", err.message);
			CHECK(false);
		}
		batch_free(&tb);
	}
}

static int64_t *
ascending_ids(size_t n, int64_t first)
{
	int64_t    *ids = malloc(n * sizeof(int64_t));

	for (size_t i = 0; i < n; i++)
		ids[i] = first + (int64_t) i;
	return ids;
}

/*
 * A sorted session larger than its memory: spills go straight to SST files
 * (no run), which are ingested without overlap, every row exact, and the
 * staging directory is gone after the commit.
 */
static void
test_sorted_direct(void)
{
	TsStore    *store = open_store(64 * 1024);
	size_t		n = 60000;
	int64_t    *ids = ascending_ids(n, 1);
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__Stats stats = TCOPY__STATS__INIT;
	ScanResult	res;
	TableFiles	tf;
	uint32_t	table;
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;

	REQUIRE(store != NULL);
	table = open_table(store, "sorted", true);
	REQUIRE(table > 0);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	write_ids(session, table, ids, n, 500, 1);
	CHECK(count_staging(sid, "ingest-") >= 1);
	CHECK_EQ_INT(count_staging(sid, "run-"), 0);
	ts_store_stats(store, &stats);
	CHECK(stats.spilled_bytes > 0);
	CHECK(stats.staged_bytes <= 64 * 1024);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_UINT(rows, n);
	CHECK_EQ_INT(count_staging(sid, ""), -1);

	REQUIRE(scan(store, table, &request, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK(res.ascending);
	CHECK(res.values_match);
	CHECK(res.notes_match);
	CHECK_EQ_INT(res.sum_ids, (int64_t) (n * (n + 1) / 2));
	table_files(store, table, &tf);
	CHECK(tf.nfiles >= 2);
	CHECK_EQ_UINT(tf.entries, n);
	CHECK(!tf.overlap);
	CHECK_EQ_INT(tf.in_l0, 0);	/* no overlap anywhere: placed below L0 */

	check_store_idle(store);
	free(ids);
	ts_store_close(store);
}

/*
 * A key repeated across a spill boundary: each batch of a sorted session
 * starts with the last key of the one before, and a tiny session memory
 * spills before every batch.  One row per key, the later value, and no key
 * in two files.
 */
static void
test_sorted_boundary_duplicate(void)
{
	TsStore    *store = open_store_sst(1024, 1);	/* a new SST every 4096 puts */
	int			nbatches = 1000;
	int64_t		last_id = (int64_t) (nbatches - 1) * 9 + 10;
	int64_t    *expect = calloc(last_id + 1, sizeof(int64_t));
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	TableFiles	tf;
	uint32_t	table;
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;

	REQUIRE(store != NULL);
	table = open_table(store, "boundary", true);
	REQUIRE(table > 0);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	for (int b = 0; b < nbatches; b++)
	{
		int64_t		ids[10];
		TestBatch	tb;

		/* batch b: b*9+1 .. b*9+10, so b*9+1 was the last of batch b-1 */
		for (int i = 0; i < 10; i++)
		{
			ids[i] = (int64_t) b * 9 + 1 + i;
			expect[ids[i]] = b + 1; /* the later batch overwrites */
		}
		batch_build(&tb, table, (uint64_t) b + 1, ids, 10, b + 1);
		CHECK_EQ_INT(ts_session_write(session, &tb.batch, NULL, &err), 0);
		batch_free(&tb);
	}
	CHECK(count_staging(sid, "ingest-") >= 2);
	CHECK_EQ_INT(count_staging(sid, "run-"), 0);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_UINT(rows, (uint64_t) nbatches * 10);

	scan_expect_vals = expect;
	REQUIRE(scan(store, table, &request, 0, &res) == 0);
	scan_expect_vals = NULL;
	CHECK_EQ_UINT(res.rows, (uint64_t) last_id);
	CHECK(res.ascending);
	CHECK(res.values_match);
	CHECK(res.notes_match);
	table_files(store, table, &tf);
	CHECK(tf.nfiles >= 2);
	CHECK_EQ_UINT(tf.entries, (uint64_t) last_id);	/* no key twice */
	CHECK(!tf.overlap);
	free(expect);
	ts_store_close(store);
}

/*
 * A session that spills sorted, then receives keys below those it has
 * written (two loads of interleaving ranges in one transaction): the
 * direct SST files and the merged runs are ingested together, the runs'
 * rows win; later sessions still win over earlier ones.
 */
static void
test_sorted_then_overlap(void)
{
	TsStore    *store = open_store(64 * 1024);
	size_t		n = 20000;
	int64_t    *first = ascending_ids(n, 1);
	int64_t    *middle = shuffled_ids(10000, 5001, 17);
	int64_t    *third = ascending_ids(1000, 12001);
	int64_t    *expect = calloc(40001, sizeof(int64_t));
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__Stats stats = TCOPY__STATS__INIT;
	ScanResult	res;
	uint32_t	table;
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;

	REQUIRE(store != NULL);
	table = open_table(store, "overlap", true);
	REQUIRE(table > 0);

	/* 1..20000 sorted (val 1), 5001..15000 shuffled (2), 12001..13000 (3) */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	write_ids(session, table, first, n, 500, 1);
	CHECK(count_staging(sid, "ingest-") >= 1);
	write_ids(session, table, middle, 10000, 500, 2);
	write_ids(session, table, third, 1000, 500, 3);
	CHECK(count_staging(sid, "run-") >= 1);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_UINT(rows, n + 11000);
	CHECK_EQ_INT(count_staging(sid, ""), -1);
	for (int64_t id = 1; id <= 20000; id++)
		expect[id] = id >= 12001 && id <= 13000 ? 3 : (id >= 5001 && id <= 15000 ? 2 : 1);
	scan_expect_vals = expect;
	REQUIRE(scan(store, table, &request, 0, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK(res.ascending);
	CHECK(res.values_match);
	CHECK(res.notes_match);

	/* a later sorted, spilled session over 10001..30000 (val 4) wins */
	{
		int64_t    *later = ascending_ids(20000, 10001);

		CHECK_EQ_INT(load(store, table, later, 20000, 4, true), 0);
		for (int64_t id = 10001; id <= 30000; id++)
			expect[id] = 4;
		REQUIRE(scan(store, table, &request, 0, &res) == 0);
		CHECK_EQ_UINT(res.rows, 30000);
		CHECK(res.values_match);
		free(later);
	}

	/*
	 * Sortedness breaks in the last batch, after sorted spills and before
	 * any run: the commit writes the rest as the only run.  Keys 3, 2, 1
	 * (val 6) come after 1..20000 (val 5); 30001..40000 stay disjoint.
	 */
	{
		int64_t    *again = ascending_ids(20000, 1);
		int64_t		tail[3] = {3, 2, 1};
		int64_t    *disjoint = ascending_ids(10000, 30001);

		session = ts_session_begin(store, &sid, &err);
		REQUIRE(session != NULL);
		write_ids(session, table, again, 20000, 500, 5);
		write_ids(session, table, tail, 3, 500, 6);
		CHECK_EQ_INT(count_staging(sid, "run-"), 0);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		for (int64_t id = 1; id <= 20000; id++)
			expect[id] = id <= 3 ? 6 : 5;

		/* shuffled first, then sorted: never direct, runs only */
		session = ts_session_begin(store, &sid, &err);
		REQUIRE(session != NULL);
		write_ids(session, table, tail, 3, 500, 7);
		write_ids(session, table, disjoint, 10000, 500, 7);
		CHECK_EQ_INT(count_staging(sid, "ingest-"), 0);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		for (int64_t id = 1; id <= 3; id++)
			expect[id] = 7;
		for (int64_t id = 30001; id <= 40000; id++)
			expect[id] = 7;
		REQUIRE(scan(store, table, &request, 0, &res) == 0);
		CHECK_EQ_UINT(res.rows, 40000);
		CHECK(res.ascending);
		CHECK(res.values_match);
		free(again);
		free(disjoint);
	}
	scan_expect_vals = NULL;

	/* more runs than one merge opens, after direct files: still exact */
	{
		TsStore    *small;
		int64_t		ids[100];

		ts_store_close(store);
		small = open_store(1024);
		REQUIRE(small != NULL);
		session = ts_session_begin(small, &sid, &err);
		REQUIRE(session != NULL);
		for (int b = 1; b <= 50; b++)	/* sorted: 1..5000, val 1 */
		{
			for (int i = 0; i < 100; i++)
				ids[i] = (b - 1) * 100 + i + 1;
			write_ids(session, table, ids, 100, 100, 1);
		}
		for (int b = 1; b <= 150; b++)	/* batch b rewrites 100 keys, val 100 + b */
		{
			for (int i = 0; i < 100; i++)
				ids[i] = ((b - 1) % 10) * 100 + i + 1;
			write_ids(session, table, ids, 100, 100, 100 + b);
		}
		CHECK(count_staging(sid, "run-") <= 64);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		/* keys 1..1000: batch 141..150, i.e. 241 + (id - 1) / 100; then 1 */
		for (int64_t id = 1; id <= 40000; id++)
			expect[id] = id <= 1000 ? 241 + (id - 1) / 100 : (id <= 5000 ? 1 : expect[id]);
		scan_expect_vals = expect;
		REQUIRE(scan(small, table, &request, 0, &res) == 0);
		scan_expect_vals = NULL;
		CHECK_EQ_UINT(res.rows, 40000);
		CHECK(res.values_match);
		ts_store_stats(small, &stats);
		CHECK_EQ_UINT(stats.spilled_bytes, 0);
		ts_store_close(small);
	}
	free(first);
	free(middle);
	free(third);
	free(expect);
}

/* Aborting a sorted session that spilled SST files leaves nothing behind. */
static void
test_sorted_abort(void)
{
	TsStore    *store = open_store(64 * 1024);
	int64_t    *ids = ascending_ids(30000, 1);
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__Stats stats = TCOPY__STATS__INIT;
	ScanResult	res;
	uint32_t	table;
	TsError		err;
	uint64_t	sid;
	TsSession  *session;

	REQUIRE(store != NULL);
	table = open_table(store, "sorted_abort", true);
	REQUIRE(table > 0);

	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	write_ids(session, table, ids, 30000, 500, 1);
	CHECK(count_staging(sid, "ingest-") >= 1);
	ts_session_abort(session);
	CHECK_EQ_INT(count_staging(sid, ""), -1);

	/* prepared (the last SST written), then aborted */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	write_ids(session, table, ids, 30000, 500, 1);
	CHECK_EQ_INT(ts_session_prepare(session, &err), 0);
	ts_store_stats(store, &stats);
	CHECK_EQ_UINT(stats.staged_bytes, 0);	/* the background spill's bytes too */
	CHECK(stats.spilled_bytes > 0);
	ts_session_abort(session);
	CHECK_EQ_INT(count_staging(sid, ""), -1);

	REQUIRE(scan(store, table, &request, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);
	check_store_idle(store);
	free(ids);
	ts_store_close(store);
}

/* ---- forms ---- */

/*
 * Schema (k int key, m a user type) with m's type_name and form (NULL:
 * none, as from a client before forms); the id column has form "int8"
 * when m has one.
 */
static Tcopy__Schema *
make_form_schema(const char *m_type, const char *m_form)
{
	static Tcopy__Column columns[2];
	static Tcopy__Column *column_ptrs[2];
	static uint32_t key[1] = {0};
	static Tcopy__Schema schema;

	tcopy__schema__init(&schema);
	tcopy__column__init(&columns[0]);
	tcopy__column__init(&columns[1]);
	columns[0].name = "k";
	columns[0].kind = TCOPY__KIND__KIND_INT;
	columns[0].type_name = "int8";
	columns[1].name = "m";
	columns[1].kind = TCOPY__KIND__KIND_BYTES;
	columns[1].type_name = (char *) m_type;
	if (m_form != NULL)
	{
		columns[0].form = "int8";
		columns[1].form = (char *) m_form;
	}
	column_ptrs[0] = &columns[0];
	column_ptrs[1] = &columns[1];
	schema.n_columns = 2;
	schema.columns = column_ptrs;
	schema.n_key = 1;
	schema.key = key;
	return &schema;
}

/*
 * Open table name with schema (create: true); the stored schema's m column
 * into *m (its type_name and form copied to type, form), or -1 with err.
 */
static int
open_form_table(TsStore *store, const char *name, const Tcopy__Schema *schema,
				char *type, char *form, TsError *err)
{
	uint32_t	id;
	bool		created;
	const Tcopy__Schema *stored = NULL;

	if (ts_store_open_table(store, name, schema, true, &id, &created, &stored, err) != 0)
		return -1;
	if (stored == NULL || stored->n_columns != 2)
		return -1;
	snprintf(type, 64, "%s", stored->columns[1]->type_name);
	snprintf(form, 64, "%s", stored->columns[1]->form);
	return 0;
}

/*
 * Columns are matched by form where both sides have one, else by type
 * name; a schema that adds forms or renames the type of a form replaces
 * the stored one, durably.
 */
/*
 * One session on table with policy: ids1 with val 1, then ids2 with val 2,
 * in batches of 500; commit.  0, or -1 with err.
 */
static int
load_with_policy(TsStore *store, uint32_t table, Tcopy__OnConflict policy,
				 const int64_t *ids1, size_t n1, const int64_t *ids2, size_t n2,
				 TsError *err)
{
	uint64_t	sid,
				rows,
				seq = 1;
	TsSession  *session = ts_session_begin(store, &sid, err);

	if (session == NULL ||
		ts_session_set_on_conflict(session, table, policy, err) != 0)
		return -1;
	for (int part = 0; part < 2; part++)
	{
		const int64_t *ids = part == 0 ? ids1 : ids2;
		size_t		n = part == 0 ? n1 : n2;

		for (size_t off = 0; off < n; off += 500)
		{
			TestBatch	tb;
			int			rc;

			batch_build(&tb, table, seq++, ids + off, n - off < 500 ? n - off : 500, part + 1);
			rc = ts_session_write(session, &tb.batch, NULL, err);
			batch_free(&tb);
			if (rc != 0)
			{
				ts_session_abort(session);
				return -1;
			}
		}
	}
	return ts_session_commit(session, &rows, err);
}

/*
 * err reports a duplicate of id in the table of make_schema: its message,
 * the key's values for the client (Error.duplicate: column 0 alone), and
 * the duplicate's row in the session, row; when not known, 0 is right too,
 * any other row never is.
 */
static void
check_duplicate(const TsError *err, int64_t id, uint64_t row, bool known)
{
	char		message[64];
	Tcopy__Row *dup;

	CHECK_EQ_INT(err->code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
	snprintf(message, sizeof(message), "Key (id)=(%lld) already exists.", (long long) id);
	CHECK_EQ_STR(err->message, message);
	REQUIRE(err->ncolumns == 1);
	CHECK_EQ_UINT(err->columns[0], 0);
	dup = tcopy__row__unpack(NULL, err->row_len, err->row);
	REQUIRE(dup != NULL);
	CHECK_EQ_UINT(dup->n_ints, 1);
	CHECK_EQ_UINT(dup->n_floats + dup->n_blobs + dup->n_nulls, 0);
	if (dup->n_ints == 1)
		CHECK_EQ_INT(dup->ints[0], id);
	tcopy__row__free_unpacked(dup, NULL);
	if (known || err->row_ordinal != 0)
		CHECK_EQ_UINT(err->row_ordinal, row);
}

/*
 * on_conflict in each way a session stages: in memory or spilled, in key
 * order or not.  ignore keeps the first row of a key, replace the last,
 * error fails the session with the key in Postgres' words.
 */
static void
test_on_conflict(void)
{
	size_t		n = 6000;
	int64_t    *sorted = shuffled_ids(n, 0, 1);
	int64_t    *shuffled = shuffled_ids(n, 0, 7);
	int64_t    *expect = calloc(n, sizeof(int64_t));
	int64_t		dup_inside[3] = {42, 4242, 5999};	/* out of order after ids1 */
	int64_t		dup_adjacent[1] = {5999};	/* equal to the last of sorted */

	for (size_t i = 0; i < n; i++)
		sorted[i] = (int64_t) i;
	for (int spilled = 0; spilled < 2; spilled++)
		for (int order = 0; order < 2; order++)
		{
			TsStore    *store = open_store(spilled ? 64 * 1024 : 64 * 1024 * 1024);
			const int64_t *ids1 = order == 0 ? sorted : shuffled;
			Tcopy__Scan request = TCOPY__SCAN__INIT;
			ScanResult	res;
			TsError		err;
			uint32_t	t_ignore,
						t_replace,
						t_error,
						t_adjacent;
			char		name[64];

			REQUIRE(store != NULL);
			snprintf(name, sizeof(name), "ignore-%d-%d", spilled, order);
			t_ignore = open_table(store, name, true);
			snprintf(name, sizeof(name), "replace-%d-%d", spilled, order);
			t_replace = open_table(store, name, true);
			snprintf(name, sizeof(name), "error-%d-%d", spilled, order);
			t_error = open_table(store, name, true);
			snprintf(name, sizeof(name), "adjacent-%d-%d", spilled, order);
			t_adjacent = open_table(store, name, true);

			/*
			 * A session that spilled in key order wrote SST files it does
			 * not read back: keys arriving later in their range are refused
			 * under ignore and error (docs/storage.md, Duplicate keys).
			 */
			if (spilled && order == 0)
			{
				CHECK_EQ_INT(load_with_policy(store, t_ignore, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
											  ids1, n, dup_inside, 3, &err), -1);
				CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_BAD_ROW);
				CHECK(strstr(err.message, "cannot check keys that arrive out of order") != NULL);
				/* a duplicate of the last key is still settled as it arrives */
				CHECK_EQ_INT(load_with_policy(store, t_ignore, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
											  ids1, n, dup_adjacent, 1, &err), 0);
			}
			else
				CHECK_EQ_INT(load_with_policy(store, t_ignore, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
											  ids1, n, dup_inside, 3, &err), 0);
			REQUIRE(scan(store, t_ignore, &request, 1, &res) == 0);
			CHECK_EQ_UINT(res.rows, n);
			CHECK(res.values_match);

			/* replace: the last */
			for (size_t i = 0; i < n; i++)
				expect[i] = 1;
			for (int i = 0; i < 3; i++)
				expect[dup_inside[i]] = 2;
			CHECK_EQ_INT(load_with_policy(store, t_replace, TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE,
										  ids1, n, dup_inside, 3, &err), 0);
			scan_expect_vals = expect;
			REQUIRE(scan(store, t_replace, &request, 0, &res) == 0);
			scan_expect_vals = NULL;
			CHECK_EQ_UINT(res.rows, n);
			CHECK(res.values_match);

			/* error: the session fails, naming the first duplicate key */
			CHECK_EQ_INT(load_with_policy(store, t_error, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
										  ids1, n, dup_inside + 1, 1, &err), -1);
			if (!(spilled && order == 0))
			{
				check_duplicate(&err, 4242, n + 1, !spilled);
				CHECK_EQ_UINT(err.table_id, t_error);
			}
			REQUIRE(scan(store, t_error, &request, 0, &res) == 0);
			CHECK_EQ_UINT(res.rows, 0);

			/* a duplicate right after its key, as a sorted load meets it */
			CHECK_EQ_INT(load_with_policy(store, t_adjacent, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
										  ids1, n, dup_adjacent, 1, &err), -1);
			check_duplicate(&err, 5999, n + 1, !spilled || order == 0);
			/* without duplicates, error commits */
			CHECK_EQ_INT(load_with_policy(store, t_adjacent, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
										  ids1, n, NULL, 0, &err), 0);
			REQUIRE(scan(store, t_adjacent, &request, 1, &res) == 0);
			CHECK_EQ_UINT(res.rows, n);
			CHECK(res.values_match);

			/*
			 * Against stored rows: t_adjacent holds ids1 with val 1.  error
			 * fails on the first stored key in key order; ignore keeps the
			 * stored rows and adds the new keys.
			 */
			{
				int64_t    *again = calloc(n + 100, sizeof(int64_t));
				int64_t    *want = calloc(n + 100, sizeof(int64_t));

				for (size_t i = 0; i < n; i++)
					again[i] = ids1[i];
				for (size_t i = 0; i < 100; i++)
					again[n + i] = (int64_t) (n + i);
				CHECK_EQ_INT(load_with_policy(store, t_adjacent, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
											  again + n, 100, again + 17, 1, &err), -1);
				check_duplicate(&err, again[17], 101, true);
				CHECK_EQ_INT(load_with_policy(store, t_adjacent, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
											  again, n + 100, NULL, 0, &err), -1);
				{
					size_t		zero = 0;

					while (again[zero] != 0)
						zero++;
					check_duplicate(&err, 0, zero + 1, !spilled || order == 0);
				}

				/* ignore: everything again with val 2 (the second part) */
				if (!(spilled && order == 0))
				{
					CHECK_EQ_INT(load_with_policy(store, t_adjacent, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
												  NULL, 0, again, n + 100, &err), 0);
					for (size_t i = 0; i < n + 100; i++)
						want[i] = i < n ? 1 : 2;
					scan_expect_vals = want;
					REQUIRE(scan(store, t_adjacent, &request, 0, &res) == 0);
					scan_expect_vals = NULL;
					CHECK_EQ_UINT(res.rows, n + 100);
					CHECK(res.values_match);
				}
				free(again);
				free(want);
			}
			check_store_idle(store);
			ts_store_close(store);
		}
	free(sorted);
	free(shuffled);
	free(expect);
}

/*
 * The last staging buffer at commit is sorted in memory and merged with the
 * runs as the latest of them, never written as a run: duplicates within it
 * and between it and the runs are settled as a run's would be, under each
 * policy.  The session spills ids 0..n-2 (shuffled, val 1) into runs; then,
 * in its last buffer, 42 (val 2), the new key n-1 (val 2), then n-1 again
 * and 43 (val 3).  replace: 42 -> 2, 43 -> 3, n-1 -> 3; ignore: 42 and 43
 * keep 1, n-1 -> 2; error: the duplicate within the buffer (n-1), met when
 * the buffer is sorted, with its row; one only between the buffer and a
 * run (42) when merged, its row 0 or right.
 */
static TsSession *begin_with_policy(TsStore *store, uint32_t table, Tcopy__OnConflict policy,
									const int64_t *ids, size_t n, int64_t val);

static void
test_last_buffer_merge(void)
{
	size_t		n = 3000;
	int64_t    *ids = shuffled_ids(n - 1, 0, 5);
	int64_t    *expect = calloc(n, sizeof(int64_t));
	int64_t		last2[2] = {42, (int64_t) n - 1};
	int64_t		last3[2] = {(int64_t) n - 1, 43};
	static const Tcopy__OnConflict policies[] = {
		TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
		TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR
	};
	TsStore    *store = open_store(64 * 1024);

	REQUIRE(store != NULL && ids != NULL && expect != NULL);
	for (int p = 0; p < 3; p++)
	{
		char		name[32];
		uint32_t	t;
		uint64_t	rows;
		TsError		err;
		TsSession  *session;
		Tcopy__Scan request = TCOPY__SCAN__INIT;
		ScanResult	res;

		snprintf(name, sizeof(name), "last-buffer-%d", p);
		t = open_table(store, name, true);
		session = begin_with_policy(store, t, policies[p], ids, n - 1, 1);
		REQUIRE(session != NULL);
		/* the rest of ids to a run: the last buffer holds the four alone */
		REQUIRE(ts_spill_start(session, &err) == 0);
		write_ids(session, t, last2, 2, 2, 2);
		write_ids(session, t, last3, 2, 2, 3);
		CHECK(session->nruns >= 2);
		CHECK(session->noffsets == 4);
		if (policies[p] == TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR)
		{
			CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
			check_duplicate(&err, (int64_t) n - 1, n + 2, true);
			REQUIRE(scan(store, t, &request, 0, &res) == 0);
			CHECK_EQ_UINT(res.rows, 0);

			/* only a duplicate of a run's key in the buffer: the merge's */
			session = begin_with_policy(store, t, policies[p], ids, n - 1, 1);
			REQUIRE(session != NULL);
			write_ids(session, t, last2, 1, 1, 2);
			CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
			check_duplicate(&err, 42, n, false);
			continue;
		}
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		for (size_t i = 0; i < n; i++)
			expect[i] = 1;
		if (policies[p] == TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
		{
			expect[42] = 2;
			expect[43] = 3;
			expect[n - 1] = 3;
		}
		else
			expect[n - 1] = 2;
		scan_expect_vals = expect;
		REQUIRE(scan(store, t, &request, 0, &res) == 0);
		scan_expect_vals = NULL;
		CHECK_EQ_UINT(res.rows, n);
		CHECK(res.values_match);
	}
	check_store_idle(store);
	ts_store_close(store);
	free(ids);
	free(expect);
}

/*
 * Begin a session on table with policy and write ids (val), in batches of
 * 500; NULL on failure (the session aborted).
 */
static TsSession *
begin_with_policy(TsStore *store, uint32_t table, Tcopy__OnConflict policy,
				  const int64_t *ids, size_t n, int64_t val)
{
	uint64_t	sid;
	TsError		err;
	TsSession  *session = ts_session_begin(store, &sid, &err);

	if (session == NULL ||
		ts_session_set_on_conflict(session, table, policy, &err) != 0)
		return NULL;
	write_ids(session, table, ids, n, 500, val);
	return session;
}

/*
 * Duplicate keys between concurrent sessions (docs/storage.md, Concurrent
 * sessions): a session prepared and not yet published holds its keys; a
 * later session with a common key fails under error (the key named) and
 * with a serialization failure under ignore; disjoint keys commit; the
 * claim goes when the first session aborts.  A spilled session that
 * overlaps a session published since it began fails too, where without
 * the check it would have overwritten the published row.
 */
static void
test_concurrent_keys(void)
{
	int64_t    *a_ids = calloc(3000, sizeof(int64_t));
	int64_t		b_ids[51],
				c_ids[100],
				one[1];
	int64_t    *big = calloc(6000, sizeof(int64_t));
	TsError		err;
	uint64_t	rows;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	ScanResult	res;
	uint32_t	t,
				t2;
	TsSession  *a,
			   *b,
			   *s;

	for (int i = 0; i < 6000; i++)
		big[i] = i;

	for (int spilled = 0; spilled < 2; spilled++)
	{
		/* a spills when it has 3000 rows */
		int			na = spilled ? 3000 : 100;
		TsStore    *store = open_store(spilled ? 64 * 1024 : 64 * 1024 * 1024);
		char		name[64];

		for (int i = 0; i < na; i++)
			a_ids[i] = na - i;	/* 1..na, out of order */
		for (int i = 0; i < 100; i++)
			c_ids[i] = na + 100 + i;
		for (int i = 0; i < 51; i++)
			b_ids[i] = na + 50 - i; /* na..na+50: na in common with a */

		REQUIRE(store != NULL);
		snprintf(name, sizeof(name), "claims-%d", spilled);
		t = open_table(store, name, true);
		REQUIRE(t > 0);

		/* a: prepared, not published */
		a = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, a_ids, na, 1);
		REQUIRE(a != NULL);
		CHECK_EQ_INT(ts_session_prepare(a, &err), 0);

		/* b: one key in common with a */
		b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, b_ids, 51, 2);
		REQUIRE(b != NULL);
		CHECK_EQ_INT(ts_session_commit(b, &rows, &err), -1);
		CHECK_EQ_UINT(err.table_id, t);
		if (!spilled)
		{
			CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
			CHECK_EQ_STR(err.message, "Key (id)=(100) already exists.");
		}
		else
			CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);

		/* ignore cannot know whether a commits */
		b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE, b_ids, 51, 2);
		REQUIRE(b != NULL);
		CHECK_EQ_INT(ts_session_commit(b, &rows, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);

		/* replace does not check */
		b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE, c_ids, 1, 3);
		REQUIRE(b != NULL);
		CHECK_EQ_INT(ts_session_commit(b, &rows, &err), 0);

		/* disjoint keys commit; in memory, keys inside a's range too */
		b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, c_ids + 1, 99, 3);
		REQUIRE(b != NULL);
		CHECK_EQ_INT(ts_session_commit(b, &rows, &err), 0);
		if (!spilled)
		{
			one[0] = 0;
			b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, one, 1, 3);
			REQUIRE(b != NULL);
			CHECK_EQ_INT(ts_session_commit(b, &rows, &err), 0);
		}

		/* no session spilled: the committed ones left no claim, a's is there */
		if (!spilled)
			CHECK_EQ_UINT(store->staging->nkey_claims, 1);

		/* a aborts: its keys are free */
		ts_session_abort(a);
		b = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, b_ids, 51, 2);
		REQUIRE(b != NULL);
		CHECK_EQ_INT(ts_session_commit(b, &rows, &err), 0);

		/* in memory, a key b stored is met at prepare */
		if (!spilled)
		{
			a = begin_with_policy(store, t, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, a_ids, 99, 1);
			REQUIRE(a != NULL); /* 2..100: 100 is b's, stored */
			CHECK_EQ_INT(ts_session_prepare(a, &err), -1);
			CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
			ts_session_abort(a);
		}

		REQUIRE(scan(store, t, &request, 0, &res) == 0);
		CHECK_EQ_UINT(res.rows, spilled ? 151 : 152);
		check_store_idle(store);
		ts_store_close(store);
	}

	/*
	 * A spilled session (sorted: it writes SST files as it goes, checking
	 * each key against the stored rows then) and a session that publishes
	 * a key of its range after that key was checked.
	 */
	{
		TsStore    *store = open_store(64 * 1024);
		TsSession  *p;

		REQUIRE(store != NULL);
		t2 = open_table(store, "claims-published", true);
		s = begin_with_policy(store, t2, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, big, 3000, 1);
		REQUIRE(s != NULL);
		one[0] = 5;
		p = begin_with_policy(store, t2, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, one, 1, 9);
		REQUIRE(p != NULL);
		CHECK_EQ_INT(ts_session_commit(p, &rows, &err), 0);
		/* s watches (it spilled): p's claim stays for it */
		CHECK_EQ_UINT(store->staging->nkey_claims, 1);
		/* outside s's range: no matter */
		one[0] = 100000;
		p = begin_with_policy(store, t2, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, one, 1, 9);
		REQUIRE(p != NULL);
		CHECK_EQ_INT(ts_session_commit(p, &rows, &err), 0);
		write_ids(s, t2, big + 3000, 3000, 500, 1);
		CHECK_EQ_INT(ts_session_commit(s, &rows, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
		CHECK_EQ_UINT(err.table_id, t2);

		/* retried, it meets the stored key as it spills */
		s = begin_with_policy(store, t2, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, big, 0, 1);
		REQUIRE(s != NULL);
		{
			int			rc = 0;

			for (size_t off = 0; off < 6000 && rc == 0; off += 500)
			{
				TestBatch	tb;

				batch_build(&tb, t2, off / 500 + 1, big + off, 500, 1);
				rc = ts_session_write(s, &tb.batch, NULL, &err);
				batch_free(&tb);
			}
			if (rc == 0)
				rc = ts_session_commit(s, &rows, &err);
			else
				ts_session_abort(s);
			CHECK_EQ_INT(rc, -1);
			CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
			CHECK_EQ_STR(err.message, "Key (id)=(5) already exists.");
		}

		/* above the stored keys, a spilled session commits */
		for (int i = 0; i < 6000; i++)
			big[i] = 200000 + i;
		s = begin_with_policy(store, t2, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, big, 6000, 1);
		REQUIRE(s != NULL);
		CHECK_EQ_INT(ts_session_commit(s, &rows, &err), 0);
		REQUIRE(scan(store, t2, &request, 0, &res) == 0);
		CHECK_EQ_UINT(res.rows, 6002);
		check_store_idle(store);
		ts_store_close(store);
	}
	free(a_ids);
	free(big);
}

/*
 * A duplicate of a key with a key image column: the key's values for the
 * client are of the column the image stands for, the later row's, in key
 * order, after the other key columns'.
 */
static void
test_duplicate_image(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	Tcopy__Column columns[4];
	Tcopy__Column *column_ptrs[4];
	const char *names[4] = {"region", "n", "v", "tcopy:key_image(n)"};
	Tcopy__Kind kinds[4] = {TCOPY__KIND__KIND_BYTES, TCOPY__KIND__KIND_BYTES,
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_BYTES};
	uint32_t	key[2] = {0, 3};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	const char *spelled[2] = {"1.00", "1.0"};
	Tcopy__Row rows[2];
	Tcopy__Row *row_ptrs[2];
	ProtobufCBinaryData blobs[2][3];
	int64_t		ints[2] = {1, 2};
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	TsSession  *session;
	TsError		err;
	uint64_t	sid;
	uint32_t	id = 0;
	bool		created;
	Tcopy__Row *dup;

	REQUIRE(store != NULL);
	for (int i = 0; i < 4; i++)
	{
		tcopy__column__init(&columns[i]);
		columns[i].name = (char *) names[i];
		columns[i].kind = kinds[i];
		columns[i].type_name = (char *) "t";
		column_ptrs[i] = &columns[i];
	}
	schema.columns = column_ptrs;
	schema.n_columns = 4;
	schema.key = key;
	schema.n_key = 2;
	REQUIRE(ts_store_open_table(store, "images", &schema, true, &id, &created, NULL, &err) == 0);
	for (int r = 0; r < 2; r++)
	{
		tcopy__row__init(&rows[r]);
		blobs[r][0] = (ProtobufCBinaryData) {5, (uint8_t *) "north"};
		blobs[r][1] = (ProtobufCBinaryData) {strlen(spelled[r]), (uint8_t *) spelled[r]};
		blobs[r][2] = (ProtobufCBinaryData) {2, (uint8_t *) "\x01\x02"};
		rows[r].blobs = blobs[r];
		rows[r].n_blobs = 3;
		rows[r].ints = &ints[r];
		rows[r].n_ints = 1;
		row_ptrs[r] = &rows[r];
	}
	batch.seq = 1;
	batch.table_id = id;
	batch.rows = row_ptrs;
	batch.n_rows = 2;
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	REQUIRE(ts_session_set_on_conflict(session, id, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, &err) == 0);
	CHECK_EQ_INT(ts_session_write(session, &batch, NULL, &err), -1);
	ts_session_abort(session);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
	CHECK_EQ_STR(err.message, "Key (region, n)=(north, 1.0) already exists.");
	REQUIRE(err.ncolumns == 2);
	CHECK_EQ_UINT(err.columns[0], 0);
	CHECK_EQ_UINT(err.columns[1], 1);
	dup = tcopy__row__unpack(NULL, err.row_len, err.row);
	REQUIRE(dup != NULL);
	REQUIRE(dup->n_blobs == 2);
	CHECK_EQ_UINT(dup->n_ints + dup->n_floats + dup->n_nulls, 0);
	CHECK(dup->blobs[0].len == 5 && memcmp(dup->blobs[0].data, "north", 5) == 0);
	CHECK(dup->blobs[1].len == 3 && memcmp(dup->blobs[1].data, "1.0", 3) == 0);
	tcopy__row__free_unpacked(dup, NULL);
	check_store_idle(store);
	ts_store_close(store);
}

/*
 * One session writing with on_conflict: first a batch of table a's ids,
 * then one of table b's; the error of the commit in err (0 or -1).
 */
static int
load_two_tables(TsStore *store, uint32_t a, Tcopy__OnConflict policy_a,
				const int64_t *ids_a, size_t n_a, uint32_t b, const int64_t *ids_b,
				size_t n_b, TsError *err)
{
	uint64_t	sid,
				rows;
	TsSession  *session = ts_session_begin(store, &sid, err);
	TestBatch	tb;
	int			rc;

	if (session == NULL ||
		ts_session_set_on_conflict(session, a, policy_a, err) != 0 ||
		ts_session_set_on_conflict(session, b, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR, err) != 0)
		return -1;
	batch_build(&tb, a, 1, ids_a, n_a, 1);
	rc = ts_session_write(session, &tb.batch, NULL, err);
	batch_free(&tb);
	if (rc == 0)
	{
		batch_build(&tb, b, 2, ids_b, n_b, 1);
		rc = ts_session_write(session, &tb.batch, NULL, err);
		batch_free(&tb);
	}
	if (rc != 0)
	{
		ts_session_abort(session);
		return -1;
	}
	return ts_session_commit(session, &rows, err);
}

/*
 * The row of the session a duplicate is (TsError.row_ordinal), counted
 * over every table's rows: known while the records are in a staging
 * buffer; after a row IGNOREd as it arrived (not staged), the rows after
 * it are not known (0), never a wrong one.
 */
static void
test_duplicate_rows(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	uint64_t	carried[2] = {42, 97};
	TsOrdinals	ordinals = {.rows_before = 100,.ncarried = 1,.carried = carried};
	TsError		err;
	uint32_t	a,
				b;

	/* a buffer's rows: a record carried over, then the new ones */
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 0), 42);
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 1), 101);
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 5), 105);
	/* two carried over (the last of two tables' rows), then the new ones */
	ordinals.ncarried = 2;
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 1), 97);
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 2), 101);
	ordinals.ncarried = 1;
	ts_ordinals_skip(&ordinals, 103);
	ts_ordinals_skip(&ordinals, 104);
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 2), 102);
	CHECK_EQ_UINT(ts_ordinals_row(&ordinals, 3), 0);
	CHECK_EQ_UINT(ts_ordinals_row(&(TsOrdinals) {.rows_before = 7}, 0), 8);

	REQUIRE(store != NULL);
	a = open_table(store, "rows_a", true);
	b = open_table(store, "rows_b", true);
	REQUIRE(a < b);				/* a's keys sort first: the session stays sorted */

	/* in key order, settled as they arrive: row 5 is the duplicate */
	CHECK_EQ_INT(load_two_tables(store, a, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
								 (int64_t[]) {1, 2, 3}, 3, b, (int64_t[]) {5, 5}, 2, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
	CHECK_EQ_UINT(err.table_id, b);
	CHECK_EQ_UINT(err.row_ordinal, 5);
	/* out of order, settled at prepare: row 6 is the later 5 */
	CHECK_EQ_INT(load_two_tables(store, a, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
								 (int64_t[]) {1, 2, 3}, 3, b, (int64_t[]) {5, 4, 6, 5}, 4,
								 &err), -1);
	CHECK_EQ_UINT(err.row_ordinal, 7);
	/* against a stored row: the session's */
	CHECK_EQ_INT(load_two_tables(store, a, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
								 (int64_t[]) {1}, 1, b, (int64_t[]) {8, 9}, 2, &err), 0);
	CHECK_EQ_INT(load_two_tables(store, a, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
								 (int64_t[]) {2}, 1, b, (int64_t[]) {7, 9, 10}, 3, &err), -1);
	CHECK_EQ_UINT(err.row_ordinal, 3);

	/* row 2 ignored as it arrived: row 4, the duplicate, is not known (3 is wrong) */
	CHECK_EQ_INT(load_two_tables(store, a, TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE,
								 (int64_t[]) {11, 11}, 2, b, (int64_t[]) {15, 15}, 2, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
	CHECK(err.row_ordinal == 0 || err.row_ordinal == 4);
	check_store_idle(store);
	ts_store_close(store);
}

static void
test_schema_forms(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	TsError		err;
	char		type[64],
				form[64];
	uint32_t	id;
	bool		created;
	const Tcopy__Schema *stored = NULL;

	REQUIRE(store != NULL);

	/* created with forms; a renamed type of the same form opens */
	CHECK_EQ_INT(open_form_table(store, "moods", make_form_schema("mood", "enum:text"),
								 type, form, &err), 0);
	CHECK_EQ_INT(open_form_table(store, "moods", make_form_schema("feeling", "enum:text"),
								 type, form, &err), 0);
	CHECK_EQ_STR(type, "feeling");	/* the stored type name follows */
	CHECK_EQ_STR(form, "enum:text");

	/* another form does not, whatever the type name */
	CHECK_EQ_INT(open_form_table(store, "moods", make_form_schema("feeling", "enum:oid"),
								 type, form, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
	CHECK(strstr(err.message, "form \"enum:text\" on the tserver") != NULL);
	CHECK(strstr(err.message, "form \"enum:oid\"") != NULL);

	/* a client without forms is matched by type name: the stored, renamed one */
	CHECK_EQ_INT(open_form_table(store, "moods", make_form_schema("feeling", NULL),
								 type, form, &err), 0);
	CHECK_EQ_STR(form, "enum:text");	/* not replaced: it says less */
	CHECK_EQ_INT(open_form_table(store, "moods", make_form_schema("mood", NULL),
								 type, form, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);

	/* names, kinds and typmods count even where forms match */
	{
		Tcopy__Schema *s = make_form_schema("feeling", "enum:text");

		s->columns[1]->typmod = 7;
		CHECK_EQ_INT(open_form_table(store, "moods", s, type, form, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
		s = make_form_schema("feeling", "enum:text");
		s->columns[1]->name = "n";
		CHECK_EQ_INT(open_form_table(store, "moods", s, type, form, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
		s = make_form_schema("feeling", "enum:text");
		s->columns[1]->kind = TCOPY__KIND__KIND_INT;
		CHECK_EQ_INT(open_form_table(store, "moods", s, type, form, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
	}

	/* created without forms: a client with them, same type names, adds them */
	CHECK_EQ_INT(open_form_table(store, "legacy", make_form_schema("mood", NULL),
								 type, form, &err), 0);
	CHECK_EQ_STR(form, "");
	CHECK_EQ_INT(open_form_table(store, "legacy", make_form_schema("colour", "enum:text"),
								 type, form, &err), -1);	/* no forms to match by yet */
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
	CHECK_EQ_INT(open_form_table(store, "legacy", make_form_schema("mood", "enum:text"),
								 type, form, &err), 0);
	CHECK_EQ_STR(type, "mood");
	CHECK_EQ_STR(form, "enum:text");
	ts_store_close(store);

	/* both replacements were stored */
	store = open_store(64 * 1024 * 1024);
	REQUIRE(store != NULL);
	CHECK_EQ_INT(ts_store_open_table(store, "legacy", NULL, false, &id, &created, &stored, &err), 0);
	REQUIRE(stored != NULL && stored->n_columns == 2);
	CHECK_EQ_STR(stored->columns[0]->form, "int8");
	CHECK_EQ_STR(stored->columns[1]->form, "enum:text");
	CHECK_EQ_STR(stored->columns[1]->type_name, "mood");
	CHECK_EQ_INT(ts_store_open_table(store, "moods", NULL, false, &id, &created, &stored, &err), 0);
	REQUIRE(stored != NULL && stored->n_columns == 2);
	CHECK_EQ_STR(stored->columns[1]->type_name, "feeling");

	/* and now a rename opens the old table too; the old pointer stays valid */
	CHECK_EQ_INT(open_form_table(store, "legacy", make_form_schema("colour", "enum:text"),
								 type, form, &err), 0);
	CHECK_EQ_STR(type, "colour");
	CHECK_EQ_STR(stored->columns[1]->type_name, "feeling");
	ts_store_close(store);
}

/* One of test_schema_race's threads: opens that rename m back and forth. */
typedef struct RaceArg
{
	TsStore    *store;
	int			thread;
	int			opened;			/* opens that succeeded */
	int			read_ok;		/* of which the stored schema read back sanely */
} RaceArg;

#define RACE_THREADS 4
#define RACE_OPENS 40

static void *
race_thread(void *arg)
{
	RaceArg    *race = arg;

	for (int i = 0; i < RACE_OPENS; i++)
	{
		/* the schema builder's static storage is not for threads: build here */
		Tcopy__Column k = TCOPY__COLUMN__INIT,
					m = TCOPY__COLUMN__INIT;
		Tcopy__Column *columns[2] = {&k, &m};
		uint32_t	key[1] = {0};
		Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
		const Tcopy__Schema *stored = NULL;
		uint32_t	id;
		bool		created;
		TsError		err;

		k.name = "k";
		k.kind = TCOPY__KIND__KIND_INT;
		k.type_name = "int8";
		k.form = "int8";
		m.name = "m";
		m.kind = TCOPY__KIND__KIND_BYTES;
		m.type_name = (i + race->thread) % 2 ? "mood" : "feeling";
		m.form = "enum:text";
		schema.n_columns = 2;
		schema.columns = columns;
		schema.n_key = 1;
		schema.key = key;
		if (ts_store_open_table(race->store, "race", &schema, false, &id, &created,
								&stored, &err) != 0)
		{
			fprintf(stderr, "open failed: %s\n", err.message);
			continue;
		}
		race->opened++;
		/* a schema_out must stay readable after others replaced it */
		sched_yield();
		if (stored->n_columns == 2 && strcmp(stored->columns[1]->form, "enum:text") == 0 &&
			(strcmp(stored->columns[1]->type_name, "mood") == 0 ||
			 strcmp(stored->columns[1]->type_name, "feeling") == 0))
			race->read_ok++;
	}
	return NULL;
}

/*
 * Connections opening one table at once, renaming its type back and forth:
 * every open succeeds, and every stored schema handed out stays readable
 * while others replace it (ASan would see one freed too early).
 */
static void
test_schema_race(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	pthread_t	threads[RACE_THREADS];
	RaceArg		args[RACE_THREADS];
	char		type[64],
				form[64];
	TsError		err;

	REQUIRE(store != NULL);
	/* created without forms, then given them: renames open from then on */
	CHECK_EQ_INT(open_form_table(store, "race", make_form_schema("mood", NULL),
								 type, form, &err), 0);
	CHECK_EQ_INT(open_form_table(store, "race", make_form_schema("mood", "enum:text"),
								 type, form, &err), 0);
	for (int t = 0; t < RACE_THREADS; t++)
	{
		args[t] = (RaceArg) {store, t, 0, 0};
		REQUIRE(pthread_create(&threads[t], NULL, race_thread, &args[t]) == 0);
	}
	for (int t = 0; t < RACE_THREADS; t++)
	{
		pthread_join(threads[t], NULL);
		CHECK_EQ_INT(args[t].opened, RACE_OPENS);
		CHECK_EQ_INT(args[t].read_ok, RACE_OPENS);
	}
	CHECK_EQ_INT(open_form_table(store, "race", make_form_schema("mood", "enum:text"),
								 type, form, &err), 0);
	CHECK_EQ_STR(type, "mood");
	CHECK_EQ_STR(form, "enum:text");
	ts_store_close(store);
}

/* ---- tables of no columns ---- */

/* A batch of n empty rows. */
static void
empty_batch_build(Tcopy__WriteBatch *batch, Tcopy__Row *rows, Tcopy__Row **row_ptrs,
				  uint32_t table_id, uint64_t seq, size_t n)
{
	tcopy__write_batch__init(batch);
	for (size_t i = 0; i < n; i++)
	{
		tcopy__row__init(&rows[i]);
		row_ptrs[i] = &rows[i];
	}
	batch->seq = seq;
	batch->table_id = table_id;
	batch->rows = row_ptrs;
	batch->n_rows = n;
}

/* Write nbatches batches of n empty rows in one session; commit or abort. */
static int
load_empty(TsStore *store, uint32_t table_id, size_t nbatches, size_t n, bool commit)
{
	Tcopy__WriteBatch batch;
	Tcopy__Row *rows = calloc(n ? n : 1, sizeof(Tcopy__Row));
	Tcopy__Row **row_ptrs = calloc(n ? n : 1, sizeof(Tcopy__Row *));
	TsError		err;
	uint64_t	sid,
				committed = 0;
	TsSession  *session = ts_session_begin(store, &sid, &err);
	int			rc = -1;

	if (session == NULL)
		goto done;
	for (size_t b = 0; b < nbatches; b++)
	{
		empty_batch_build(&batch, rows, row_ptrs, table_id, b + 1, n);
		if (ts_session_write(session, &batch, NULL, &err) != 0)
		{
			fprintf(stderr, "write failed: %s\n", err.message);
			ts_session_abort(session);
			goto done;
		}
	}
	if (!commit)
	{
		ts_session_abort(session);
		rc = 0;
		goto done;
	}
	if (ts_session_commit(session, &committed, &err) != 0)
		fprintf(stderr, "commit failed: %s\n", err.message);
	else if (committed == nbatches * n)
		rc = 0;
done:
	free(rows);
	free(row_ptrs);
	return rc;
}

/*
 * Scan table (all columns) in batches of batch_rows; the rows it returns,
 * or -1 when the scan failed or a row was not empty.
 */
static int64_t
count_empty(TsStore *store, uint32_t table_id, uint32_t batch_rows)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
	TsError		err;
	TsScan	   *sc;
	TcArena		arena;
	int64_t		rows = 0;

	request.table_id = table_id;
	request.batch_rows = batch_rows;
	sc = ts_scan_open(store, &request, &err);
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
			fprintf(stderr, "scan failed: %s\n", err.message);
			rows = -1;
			break;
		}
		for (size_t i = 0; i < batch.n_rows; i++)
		{
			const Tcopy__Row *row = batch.rows[i];

			if (row->n_ints || row->n_floats || row->n_blobs || row->n_nulls)
				rows = INT64_MIN;
			rows++;
		}
	} while (!batch.done);
	ts_scan_close(sc);
	tc_arena_free(&arena);
	return rows < 0 ? -1 : rows;
}

/*
 * Tables of no columns, as Postgres allows: created, written (rows without
 * values, in memory and spilled), committed, scanned (empty rows, to be
 * counted), across a reopen, truncated and dropped.
 */
static void
test_zero_columns(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	const Tcopy__Schema *stored = NULL;
	TsError		err;
	uint32_t	table = 0,
				again = 0;
	bool		created = false;

	REQUIRE(store != NULL);
	CHECK_EQ_INT(ts_store_open_table(store, "nocols", &schema, true, &table, &created,
									 &stored, &err), 0);
	REQUIRE(table > 0);
	CHECK(created);
	REQUIRE(stored != NULL);
	CHECK_EQ_UINT(stored->n_columns, 0);
	CHECK_EQ_INT(ts_store_open_table(store, "nocols", &schema, false, &again, &created,
									 NULL, &err), 0);
	CHECK_EQ_UINT(again, table);
	CHECK(!created);
	/* a key column more is no added column (a keyless one would be) */
	CHECK_EQ_INT(ts_store_open_table(store, "nocols", make_schema(true), false, &again,
									 &created, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH);
	CHECK_EQ_INT(count_empty(store, table, 0), 0);

	/* written, committed, counted; an aborted session counts nothing */
	CHECK_EQ_INT(load_empty(store, table, 1, 3, true), 0);
	CHECK_EQ_INT(count_empty(store, table, 0), 3);
	CHECK_EQ_INT(load_empty(store, table, 4, 1000, true), 0);
	CHECK_EQ_INT(load_empty(store, table, 2, 1000, false), 0);
	CHECK_EQ_INT(count_empty(store, table, 0), 4003);
	CHECK_EQ_INT(count_empty(store, table, 7), 4003);
	CHECK_EQ_INT(load_empty(store, table, 1, 0, true), 0);	/* a batch of no rows */
	CHECK_EQ_INT(count_empty(store, table, 0), 4003);

	/* a row with a value or a NULL does not fit */
	{
		Tcopy__WriteBatch batch;
		Tcopy__Row	rows[2];
		Tcopy__Row *row_ptrs[2];
		int64_t		one = 1;
		uint64_t	sid;
		TsSession  *session = ts_session_begin(store, &sid, &err);

		REQUIRE(session != NULL);
		empty_batch_build(&batch, rows, row_ptrs, table, 1, 2);
		rows[1].ints = &one;
		rows[1].n_ints = 1;
		CHECK_EQ_INT(ts_session_write(session, &batch, NULL, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_BAD_ROW);
		CHECK_EQ_UINT(ts_session_rows(session), 0);
		ts_session_abort(session);
	}

	/* a projection of a column it does not have is refused */
	request.table_id = table;
	request.n_columns = 1;
	request.columns = (uint32_t[]) {0};
	CHECK(ts_scan_open(store, &request, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_PROTOCOL);
	check_store_idle(store);
	ts_store_close(store);

	/* reopened with sessions that spill: the rows and the row ids carry on */
	store = open_store(1024);
	REQUIRE(store != NULL);
	CHECK_EQ_INT(count_empty(store, table, 0), 4003);
	CHECK_EQ_INT(load_empty(store, table, 20, 500, true), 0);
	CHECK_EQ_INT(count_empty(store, table, 0), 14003);

	/* truncate empties, drop forgets */
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table, NULL, NULL, &err), 0);
	CHECK_EQ_INT(count_empty(store, table, 0), 0);
	CHECK_EQ_INT(load_empty(store, table, 1, 5, true), 0);
	CHECK_EQ_INT(count_empty(store, table, 0), 5);
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, table, NULL, NULL, &err), 0);
	request.n_columns = 0;
	CHECK(ts_scan_open(store, &request, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
	check_store_idle(store);
	ts_store_close(store);
}

/*
 * ts_store_table_estimate's rows of table, checked to be within pct % of
 * want; its SST files (all levels) are how many it returns.
 */
static uint64_t
check_estimate(TsStore *store, uint32_t table, uint64_t want, double pct)
{
	TsError		err;
	uint64_t	rows = 0;
	uint64_t	bytes = 0;
	TsLevelFiles levels[TS_STORE_LEVELS];
	uint64_t	files = 0;
	uint64_t	file_bytes = 0;

	memset(levels, 0xAB, sizeof(levels));
	CHECK_EQ_INT(ts_store_table_estimate(store, table, &rows, &bytes, levels, &err), 0);
	for (int i = 0; i < TS_STORE_LEVELS; i++)
	{
		files += levels[i].files;
		file_bytes += levels[i].bytes;
		CHECK(levels[i].files > 0 || levels[i].bytes == 0);
	}
	CHECK(files < 1000 && (files == 0) == (file_bytes == 0));
	if (pct == 0)
		CHECK_EQ_UINT(rows, want);
	else
	{
		if (!((double) rows >= want * (1 - pct / 100) &&
			  (double) rows <= want * (1 + pct / 100)))
			fprintf(stderr, "table %u: estimate %llu rows, want %llu within %.0f%%\n",
					table, (unsigned long long) rows, (unsigned long long) want, pct);
		CHECK((double) rows >= want * (1 - pct / 100) &&
			  (double) rows <= want * (1 + pct / 100));
	}
	CHECK(want == 0 || bytes > 0);
	return files;
}

/*
 * Estimates: exact for rows in memtables, counted from the files' entries
 * for ingested SST files, in proportion for files shared by tables, and
 * unknown tables refused.
 */
static void
test_table_estimate(void)
{
	TsStore    *store = open_store(64 * 1024 * 1024);
	int64_t    *ids = malloc(60000 * sizeof(int64_t));
	uint32_t	a,
				b,
				c,
				d;
	TsError		err;
	uint64_t	rows,
				bytes;

	REQUIRE(store != NULL && ids != NULL);
	for (int i = 0; i < 60000; i++)
		ids[i] = i;
	a = open_table(store, "est_a", true);
	b = open_table(store, "est_b", true);
	c = open_table(store, "est_c", true);
	REQUIRE(a > 0 && b > 0 && c > 0);

	/* small sessions: one WriteBatch each, in the memtable, counted exactly */
	CHECK_EQ_INT(load(store, a, ids, 30000, 1, true), 0);
	CHECK_EQ_INT(load(store, b, ids, 20000, 1, true), 0);
	/* in the memtable only: no files */
	CHECK_EQ_UINT(check_estimate(store, a, 30000, 0), 0);
	CHECK_EQ_UINT(check_estimate(store, b, 20000, 0), 0);
	check_estimate(store, c, 0, 0);
	/* overwriting keys in the memtable adds no rows */
	CHECK_EQ_INT(load(store, a, ids, 1000, 2, true), 0);
	check_estimate(store, a, 30000, 0);
	/* an aborted session leaves none */
	CHECK_EQ_INT(load(store, c, ids, 500, 1, false), 0);
	check_estimate(store, c, 0, 0);
	CHECK_EQ_INT(ts_store_table_estimate(store, 100000, &rows, &bytes, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
	ts_store_close(store);

	/*
	 * Reopened, the WAL's rows are flushed to a file that holds both
	 * tables (and the earlier tests'): each counts its share of the file's
	 * entries by its bytes, which RocksDB knows to a 16 KiB block.
	 */
	store = open_store(64 * 1024);
	REQUIRE(store != NULL);
	CHECK(check_estimate(store, a, 30000, 10) >= 1);	/* flushed at the reopen */
	CHECK(check_estimate(store, b, 20000, 10) >= 1);
	check_estimate(store, c, 0, 0);

	/* a spilled session: ingested SST files of its own, their entries */
	d = open_table(store, "est_d", true);
	REQUIRE(d > 0);
	CHECK_EQ_INT(load(store, d, ids, 60000, 1, true), 0);
	CHECK(check_estimate(store, d, 60000, 2) >= 1);
	check_estimate(store, a, 30000, 10);
	ts_store_close(store);
	free(ids);
}

static void
remove_data_dir(void)
{
	char		cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", data_dir);
}

/* Rows of table_id in [lo, hi) (hi empty: to the end of the table). */
static size_t
count_range(TsStore *store, uint32_t table_id, const uint8_t *lo, size_t lolen,
			const uint8_t *hi, size_t hilen)
{
	rocksdb_readoptions_t *options = rocksdb_readoptions_create();
	rocksdb_iterator_t *iter = rocksdb_create_iterator_cf(store->db, options, store->cf_data);
	size_t		n = 0;

	for (rocksdb_iter_seek(iter, (const char *) lo, lolen); rocksdb_iter_valid(iter);
		 rocksdb_iter_next(iter))
	{
		size_t		keylen;
		const uint8_t *key = (const uint8_t *) rocksdb_iter_key(iter, &keylen);

		if (hilen > 0 && ts_key_compare(key, (uint32_t) keylen, hi, (uint32_t) hilen) >= 0)
			break;
		if (keylen < 4 || ts_get_be32(key) != table_id)
			break;
		n++;
	}
	rocksdb_iter_destroy(iter);
	rocksdb_readoptions_destroy(options);
	return n;
}

/*
 * ts_scan_split: boundaries ascending and strictly inside the range, the
 * parts together hold every row once, and rows loaded evenly come out in
 * parts of about equal size, from the memtable and from SST files; no cut
 * of an empty table, or when one part is asked for.
 */
static void
test_split(void)
{
	TsStore    *store = open_store(1024 * 1024);	/* spilled: several SST files */
	int64_t    *ids = malloc(40000 * sizeof(int64_t));
	uint32_t	t,
				empty_table;
	TsTable    *table;
	TcBuf		lo = {0},
				hi = {0};
	TcBuf	   *keys = NULL;
	size_t		nkeys = 0;
	bool		empty;
	TsError		err;

	REQUIRE(store != NULL && ids != NULL);
	for (int i = 0; i < 40000; i++)
		ids[i] = i;
	t = open_table(store, "split", true);
	empty_table = open_table(store, "split_empty", true);
	REQUIRE(t > 0 && empty_table > 0);
	for (int part = 0; part < 4; part++)
		CHECK_EQ_INT(load(store, t, ids + part * 10000, 10000, part, true), 0);

	for (int round = 0; round < 2; round++)
	{
		size_t		total = 0;

		table = ts_store_table(store, t, &err);
		REQUIRE(table != NULL);
		REQUIRE(ts_scan_key_range(table, NULL, NULL, &lo, &hi, &empty, &err) == 0);
		CHECK_EQ_INT(ts_scan_split(store, table, &lo, &hi, 8, &keys, &nkeys, &err), 0);
		CHECK(nkeys >= 4 && nkeys <= 7);
		for (size_t k = 0; k <= nkeys; k++)
		{
			const TcBuf *from = k == 0 ? &lo : &keys[k - 1];
			const TcBuf *to = k == nkeys ? &hi : &keys[k];
			size_t		n = count_range(store, t, from->data, from->len, to->data, to->len);

			if (k > 0)
				CHECK(ts_key_compare(from->data, (uint32_t) from->len, lo.data,
									 (uint32_t) lo.len) > 0);
			if (k < nkeys)
				CHECK(ts_key_compare(to->data, (uint32_t) to->len, from->data,
									 (uint32_t) from->len) > 0);
			/* about equal: none past three times its share */
			CHECK(n > 0 && n < 3 * 40000 / (nkeys + 1));
			total += n;
		}
		CHECK_EQ_UINT(total, 40000);
		for (size_t k = 0; k < nkeys; k++)
			tc_buf_free(&keys[k]);
		free(keys);

		CHECK_EQ_INT(ts_scan_split(store, table, &lo, &hi, 1, &keys, &nkeys, &err), 0);
		CHECK_EQ_UINT(nkeys, 0);
		table = ts_store_table(store, empty_table, &err);
		REQUIRE(table != NULL);
		REQUIRE(ts_scan_key_range(table, NULL, NULL, &lo, &hi, &empty, &err) == 0);
		CHECK_EQ_INT(ts_scan_split(store, table, &lo, &hi, 8, &keys, &nkeys, &err), 0);
		CHECK_EQ_UINT(nkeys, 0);

		/* again from SST files only */
		ts_store_close(store);
		store = open_store(1024 * 1024);
		REQUIRE(store != NULL);
		{
			char	   *errptr = NULL;
			rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();

			rocksdb_flushoptions_set_wait(fo, 1);
			rocksdb_flush_cf(store->db, fo, store->cf_data, &errptr);
			rocksdb_flushoptions_destroy(fo);
			CHECK(errptr == NULL);
			free(errptr);
		}
	}
	tc_buf_free(&lo);
	tc_buf_free(&hi);
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
	TC_RUN(test_sorted_direct);
	TC_RUN(test_sorted_boundary_duplicate);
	TC_RUN(test_sorted_then_overlap);
	TC_RUN(test_sorted_abort);
	TC_RUN(test_memory_budget);
	TC_RUN(test_schema_forms);
	TC_RUN(test_schema_race);
	TC_RUN(test_zero_columns);
	TC_RUN(test_on_conflict);
	TC_RUN(test_last_buffer_merge);
	TC_RUN(test_concurrent_keys);
	TC_RUN(test_duplicate_image);
	TC_RUN(test_duplicate_rows);
	TC_RUN(test_table_estimate);
	TC_RUN(test_split);

	/* merges in 3 parts at once, in a store of their own */
	remove_data_dir();
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-storage-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	merge_threads = 3;
	TC_RUN(test_spilled_session);
	TC_RUN(test_many_runs);
	TC_RUN(test_sorted_then_overlap);
	TC_RUN(test_last_buffer_merge);
	remove_data_dir();
	return tc_test_summary();
}
