/*
 * test_session_read.c
 *		A session's updates, deletes, direct modifies and rollbacks to a
 *		savepoint, and scans that read the open session, checked against a
 *		model (an array of the rows each key should have) over random
 *		sequences of operations: in sessions that stay in memory and in
 *		sessions that spill, to SST files (loads in key order) and to runs
 *		(in any order); the published rows too.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_session_int.h"
#include "ts_store_int.h"

#define NKEYS 3000

static char data_dir[256];

typedef struct Model
{
	bool		present[NKEYS];
	int64_t		val[NKEYS];
} Model;

/* Schema: id int (key), val int. */
static Tcopy__Schema *
make_schema(void)
{
	static Tcopy__Column columns[2];
	static Tcopy__Column *column_ptrs[2];
	static uint32_t key[1] = {0};
	static Tcopy__Schema schema;
	const char *names[2] = {"id", "val"};

	tcopy__schema__init(&schema);
	for (int i = 0; i < 2; i++)
	{
		tcopy__column__init(&columns[i]);
		columns[i].name = (char *) names[i];
		columns[i].kind = TCOPY__KIND__KIND_INT;
		columns[i].type_name = (char *) "int8";
		column_ptrs[i] = &columns[i];
	}
	schema.n_columns = 2;
	schema.columns = column_ptrs;
	schema.n_key = 1;
	schema.key = key;
	return &schema;
}

/* Stage rows (ids[i], val) of kind; 0 or -1. */
static int
write_rows(TsSession *session, uint32_t table_id, Tcopy__WriteKind kind, const int64_t *ids,
		   size_t n, int64_t val)
{
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	Tcopy__Row *rows = calloc(n, sizeof(Tcopy__Row));
	Tcopy__Row **ptrs = calloc(n, sizeof(Tcopy__Row *));
	int64_t    *ints = calloc(2 * n, sizeof(int64_t));
	TsError		err;
	int			result;

	for (size_t i = 0; i < n; i++)
	{
		tcopy__row__init(&rows[i]);
		ints[2 * i] = ids[i];
		ints[2 * i + 1] = val;
		rows[i].ints = &ints[2 * i];
		rows[i].n_ints = 2;
		ptrs[i] = &rows[i];
	}
	batch.table_id = table_id;
	batch.kind = kind;
	batch.rows = ptrs;
	batch.n_rows = n;
	result = ts_session_write(session, &batch, NULL, &err);
	if (result != 0)
		fprintf(stderr, "write failed: %s\n", err.message);
	free(rows);
	free(ptrs);
	free(ints);
	return result;
}

/*
 * Scan [lo, hi] of the table (reading session's writes when session_id is
 * not 0) and compare with model; the rows compared, or -1.
 */
static long
check_scan(TsStore *store, uint32_t table_id, uint64_t session_id, const uint8_t *key,
		   int64_t lo, int64_t hi, const Model *model)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__KeyBound lower = TCOPY__KEY_BOUND__INIT;
	Tcopy__KeyBound upper = TCOPY__KEY_BOUND__INIT;
	Tcopy__Row lower_row = TCOPY__ROW__INIT;
	Tcopy__Row upper_row = TCOPY__ROW__INIT;
	TsError		err;
	TsScan	   *scan;
	TcArena		arena;
	int64_t		expect = lo;
	long		seen = 0;
	bool		ok = true;
	bool		done = false;

	lower_row.n_ints = 1;
	lower_row.ints = &lo;
	upper_row.n_ints = 1;
	upper_row.ints = &hi;
	lower.key = &lower_row;
	lower.inclusive = true;
	upper.key = &upper_row;
	upper.inclusive = true;
	request.table_id = table_id;
	request.lower = &lower;
	request.upper = &upper;
	request.session_id = session_id;
	request.session_key.data = (uint8_t *) key;
	request.session_key.len = session_id ? 16 : 0;
	scan = ts_scan_open(store, &request, &err);
	if (scan == NULL)
	{
		fprintf(stderr, "scan failed: %s\n", err.message);
		return -1;
	}
	tc_arena_init(&arena, 64 * 1024);
	while (!done && ok)
	{
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;

		tc_arena_reset(&arena);
		if (ts_scan_next(scan, &arena, &batch, &err) != 0)
		{
			fprintf(stderr, "scan next failed: %s\n", err.message);
			ok = false;
			break;
		}
		for (size_t i = 0; i < batch.n_rows && ok; i++)
		{
			int64_t		id = batch.rows[i]->ints[0];

			while (expect < id && expect <= hi && !model->present[expect])
				expect++;
			if (id != expect || !model->present[id] || batch.rows[i]->ints[1] != model->val[id])
			{
				fprintf(stderr, "key %lld: got val %lld, expected key %lld present %d val %lld\n",
						(long long) id, (long long) batch.rows[i]->ints[1], (long long) expect,
						expect <= hi ? model->present[expect] : -1,
						expect <= hi ? (long long) model->val[expect] : 0LL);
				ok = false;
			}
			expect = id + 1;
			seen++;
		}
		done = batch.done;
	}
	while (ok && expect <= hi)
		if (model->present[expect++])
		{
			fprintf(stderr, "key %lld missing\n", (long long) expect - 1);
			ok = false;
		}
	tc_arena_free(&arena);
	ts_scan_close(scan);
	return ok ? seen : -1;
}

/* A direct modify adding delta to val of [lo, hi]; the rows changed, or -1. */
static long
modify_add(TsSession *session, uint32_t table_id, int64_t lo, int64_t hi, int64_t delta,
		   bool delete)
{
	Tcopy__Modify request = TCOPY__MODIFY__INIT;
	Tcopy__Assignment assignment = TCOPY__ASSIGNMENT__INIT;
	Tcopy__Assignment *set[1] = {&assignment};
	Tcopy__Row values = TCOPY__ROW__INIT;
	Tcopy__KeyBound lower = TCOPY__KEY_BOUND__INIT;
	Tcopy__KeyBound upper = TCOPY__KEY_BOUND__INIT;
	Tcopy__Row lower_row = TCOPY__ROW__INIT;
	Tcopy__Row upper_row = TCOPY__ROW__INIT;
	uint64_t	changed;
	TsError		err;

	lower_row.n_ints = upper_row.n_ints = 1;
	lower_row.ints = &lo;
	upper_row.ints = &hi;
	lower.key = &lower_row;
	upper.key = &upper_row;
	lower.inclusive = upper.inclusive = true;
	request.table_id = table_id;
	request.lower = &lower;
	request.upper = &upper;
	if (delete)
		request.kind = TCOPY__WRITE_KIND__WRITE_DELETE;
	else
	{
		request.kind = TCOPY__WRITE_KIND__WRITE_UPDATE;
		assignment.column = 1;
		assignment.op = TCOPY__ASSIGN_OP__ASSIGN_ADD;
		assignment.min = INT64_MIN;
		assignment.max = INT64_MAX;
		values.n_ints = 1;
		values.ints = &delta;
		request.n_set = 1;
		request.set = set;
		request.values = &values;
	}
	if (ts_session_modify(session, &request, &changed, &err) != 0)
	{
		fprintf(stderr, "modify failed: %s\n", err.message);
		return -1;
	}
	return (long) changed;
}

/*
 * One random session over ntables tables against their models: nops
 * operations, each on a table drawn at random (so that their rows
 * interleave in the session, as partitions on one tserver do), each
 * checked, then committed (and the store checked) or aborted.  Ascending,
 * each table's inserted keys go up from 0, wrapping round at NKEYS.
 */
static void
random_session(TsStore *store, const uint32_t *table_ids, Model *committed, size_t ntables,
			   bool ascending, int nops)
{
	Model	   *model = malloc(ntables * sizeof(Model));
	Model	   *saved = malloc(ntables * sizeof(Model));
	uint64_t	saved_rows = 0;
	bool		have_savepoint = false;
	uint64_t	sid;
	TsError		err;
	TsSession  *session = ts_session_begin(store, &sid, &err);
	int64_t    *next_ascending = calloc(ntables, sizeof(int64_t));
	int64_t    *ids = malloc(NKEYS * sizeof(int64_t));

	REQUIRE(session != NULL);
	memcpy(model, committed, ntables * sizeof(Model));
	for (int op = 0; op < nops; op++)
	{
		int			what = (int) (tc_test_rng() % 10);
		size_t		n = 1 + tc_test_rng() % 400;
		int64_t		val = (int64_t) (tc_test_rng() % 100000);
		size_t		t = tc_test_rng() % ntables;
		uint32_t	table_id = table_ids[t];
		Model	   *m = &model[t];

		if (what <= 3)
		{
			/* inserts (upserts: the table replaces) or updates */
			Tcopy__WriteKind kind = what == 3 ? TCOPY__WRITE_KIND__WRITE_UPDATE :
				TCOPY__WRITE_KIND__WRITE_INSERT;

			for (size_t i = 0; i < n; i++)
			{
				/* ascending, now and then the batch's first key is the last one again */
				if (ascending && i == 0 && next_ascending[t] > 0 && tc_test_rng() % 4 == 0)
					next_ascending[t]--;
				ids[i] = ascending ? next_ascending[t]++ % NKEYS : (int64_t) (tc_test_rng() % NKEYS);
				m->present[ids[i]] = true;
				m->val[ids[i]] = val;
			}
			CHECK_EQ_INT(write_rows(session, table_id, kind, ids, n, val), 0);
		}
		else if (what == 4)
		{
			for (size_t i = 0; i < n; i++)
			{
				ids[i] = ascending ? next_ascending[t]++ % NKEYS : (int64_t) (tc_test_rng() % NKEYS);
				m->present[ids[i]] = false;
			}
			CHECK_EQ_INT(write_rows(session, table_id, TCOPY__WRITE_KIND__WRITE_DELETE, ids, n, 0), 0);
		}
		else if (what == 5 || what == 6)
		{
			int64_t		lo = (int64_t) (tc_test_rng() % NKEYS);
			int64_t		hi = lo + (int64_t) (tc_test_rng() % 50);
			long		expect = 0;

			if (hi >= NKEYS)
				hi = NKEYS - 1;
			for (int64_t k = lo; k <= hi; k++)
				if (m->present[k])
				{
					expect++;
					if (what == 5)
						m->val[k] += 7;
					else
						m->present[k] = false;
				}
			CHECK_EQ_INT(modify_add(session, table_id, lo, hi, 7, what == 6), expect);
		}
		else if (what == 7)
		{
			/* a savepoint, or back to it */
			if (!have_savepoint || tc_test_rng() % 2)
			{
				memcpy(saved, model, ntables * sizeof(Model));
				saved_rows = ts_session_rows(session);
				have_savepoint = true;
			}
			else
			{
				bool		done = false;
				char		reason[128];

				CHECK_EQ_INT(ts_session_rollback_to(session, saved_rows, &done, reason,
													sizeof(reason), &err), 0);
				if (done)
					memcpy(model, saved, ntables * sizeof(Model));
				have_savepoint = false;
			}
		}
		else
		{
			int64_t		lo = (int64_t) (tc_test_rng() % NKEYS);
			int64_t		hi = lo + (int64_t) (tc_test_rng() % 300);

			if (hi >= NKEYS)
				hi = NKEYS - 1;
			CHECK(check_scan(store, table_id, sid, session->key, lo, hi, m) >= 0);
			/* others see the committed rows only */
			CHECK(check_scan(store, table_id, 0, NULL, lo, hi, &committed[t]) >= 0);
		}
	}
	/* the whole tables, in ranges a spilled session may read */
	for (size_t t = 0; t < ntables; t++)
		for (int64_t lo = 0; lo < NKEYS; lo += 250)
			CHECK(check_scan(store, table_ids[t], sid, session->key, lo, lo + 249, &model[t]) >= 0);
	if (tc_test_rng() % 4 == 0)
		ts_session_abort(session);
	else
	{
		uint64_t	rows;

		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
		memcpy(committed, model, ntables * sizeof(Model));
	}
	for (size_t t = 0; t < ntables; t++)
		CHECK(check_scan(store, table_ids[t], 0, NULL, 0, NKEYS - 1, &committed[t]) >= 0);
	free(model);
	free(saved);
	free(ids);
	free(next_ascending);
}

static void
run_sessions(size_t session_memory, bool ascending, size_t ntables, int nsessions)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	uint32_t	table_ids[4];
	bool		created;
	Model	   *committed = calloc(ntables, sizeof(Model));

	REQUIRE(ntables <= 4);
	ts_store_default_options(&options);
	options.session_memory_bytes = session_memory;
	options.sst_target_bytes = 64 * 1024;
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL);
	for (size_t t = 0; t < ntables; t++)
	{
		char		name[32];

		snprintf(name, sizeof(name), "%s%zu", ascending ? "asc" : "any", t);
		REQUIRE(ts_store_open_table(store, name, make_schema(), true, &table_ids[t],
									&created, NULL, &err) == 0);
		REQUIRE(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table_ids[t],
								  NULL, NULL, &err) == 0);
	}
	for (int s = 0; s < nsessions; s++)
		random_session(store, table_ids, committed, ntables, ascending, 60);
	ts_store_close(store);
	free(committed);
}

/* Sessions that stay in memory (64 MiB). */
static void
test_in_memory(void)
{
	run_sessions(64 * 1024 * 1024, false, 1, 6);
}

/* Sessions spilling to runs every few batches (64 KiB). */
static void
test_spilled_runs(void)
{
	run_sessions(64 * 1024, false, 1, 6);
}

/* Loads in key order spilling to SST files, read through the read DB. */
static void
test_spilled_sorted(void)
{
	run_sessions(64 * 1024, true, 1, 6);
}

/*
 * The same over three tables whose rows interleave in each session, as
 * partitions on one tserver: in memory, spilled to runs, and in key order
 * per table, spilled to SST files per table.
 */
static void
test_tables_interleaved(void)
{
	run_sessions(64 * 1024 * 1024, false, 3, 4);
	run_sessions(64 * 1024, false, 3, 4);
	run_sessions(64 * 1024, true, 3, 6);
}

/*
 * Two tables whose batches alternate in one session, each table's keys
 * ascending (a batch now and then starting with its table's last key
 * again, with a new value): the session stays sorted, spills only to SST
 * files, none holding two tables' keys, and the later value of a repeated
 * key wins; the files are ingested at the bottom of the tree, not in L0.
 */
static void
test_tables_sorted_direct(void)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	uint32_t	table_ids[2];
	Model	   *model = calloc(2, sizeof(Model));
	int64_t		ids[100];
	int64_t		next[2] = {0, 0};
	uint64_t	sid,
				rows;
	bool		created;
	TsSession  *session;
	char	   *level0;

	char		dir[300];

	/* a store of its own: no other test's files in its L0 */
	snprintf(dir, sizeof(dir), "%s-direct", data_dir);
	ts_store_default_options(&options);
	options.session_memory_bytes = 64 * 1024;
	options.sst_target_bytes = 64 * 1024;
	store = ts_store_open(dir, &options, &err);
	REQUIRE(store != NULL);
	for (int t = 0; t < 2; t++)
	{
		char		name[32];

		snprintf(name, sizeof(name), "direct%d", t);
		REQUIRE(ts_store_open_table(store, name, make_schema(), true, &table_ids[t],
									&created, NULL, &err) == 0);
	}
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	for (int b = 0; b < 2 * (NKEYS / 100 - 2); b++)
	{
		int			t = b % 2;
		int64_t		val = b;

		for (int i = 0; i < 100; i++)
		{
			/* every third batch of a table begins with its last key again */
			ids[i] = i == 0 && next[t] > 0 && b % 3 == 0 ? next[t] - 1 : next[t]++;
			model[t].present[ids[i]] = true;
			model[t].val[ids[i]] = val;
		}
		CHECK_EQ_INT(write_rows(session, table_ids[t], TCOPY__WRITE_KIND__WRITE_INSERT, ids, 100,
								val), 0);
	}
	CHECK_EQ_INT(ts_spill_wait(session, &err), 0);
	CHECK(session->sorted);
	CHECK_EQ_INT(session->nruns, 0);
	CHECK(session->sst != NULL && session->sst->nfiles >= 4);
	for (int t = 0; t < 2; t++)
		for (int64_t lo = 0; lo < NKEYS; lo += 250)
			CHECK(check_scan(store, table_ids[t], sid, session->key, lo, lo + 249, &model[t]) >= 0);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	for (int t = 0; t < 2; t++)
		CHECK(check_scan(store, table_ids[t], 0, NULL, 0, NKEYS - 1, &model[t]) >= 0);
	level0 = rocksdb_property_value(store->db, "rocksdb.num-files-at-level0");
	CHECK(level0 != NULL && strcmp(level0, "0") == 0);
	if (level0 != NULL && strcmp(level0, "0") != 0)
		fprintf(stderr, "files in L0: %s\n", level0);
	rocksdb_free(level0);
	ts_store_close(store);
	free(model);
}

int
main(void)
{
	char		cmd[600];

	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-session-read-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_in_memory);
	TC_RUN(test_spilled_runs);
	TC_RUN(test_spilled_sorted);
	TC_RUN(test_tables_interleaved);
	TC_RUN(test_tables_sorted_direct);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s-direct", data_dir, data_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", data_dir);
	return tc_test_summary();
}
