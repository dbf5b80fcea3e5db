/*
 * test_prepared.c
 *		Prepared sessions (two-phase commit) driven through the store:
 *		prepare, close and reopen, list, resolve by commit and by abort,
 *		for a session that never spilled, a sorted spilled one and a
 *		shuffled spilled one; staged TRUNCATE and DROP applied when
 *		published and not when discarded; a stop at every step of
 *		publishing and discarding (TsStore.test_stop_at, which leaves the
 *		disk as a crash would), then a reopen and a second resolve that
 *		finishes without applying anything twice; the registry (duplicate
 *		gids, BUSY, NOT_FOUND, owners); keyless row ids and session ids
 *		across a restart; rows for a table dropped in the meantime; load
 *		labels claimed, published, freed and kept by prepared sessions.
 *		Writes to the tables of a session in doubt after a restart are
 *		refused at once here (in_doubt_wait_ms 0; test_in_doubt.c has the
 *		wait).
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_client.h"
#include "tc_test.h"
#include "ts_key.h"
#include "ts_session_int.h"

static char data_dir[256];

typedef enum Kind
{
	KIND_SMALL,					/* never spills: a WriteBatch */
	KIND_SORTED,				/* spills straight to SST files */
	KIND_SHUFFLED				/* spills to runs, merged at prepare */
} Kind;

static const char *const kind_names[] = {"small", "sorted", "shuffled"};

#define SMALL_MEMORY (64 * 1024 * 1024)
#define SPILL_MEMORY (64 * 1024)

/* ---- helpers ---- */

/* Schema: id int (key unless keyless), val int. */
static Tcopy__Schema *
make_schema(bool keyed)
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
	schema.n_key = keyed ? 1 : 0;
	schema.key = key;
	return &schema;
}

static TsStore *
open_store(size_t session_memory)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;

	ts_store_default_options(&options);
	options.session_memory_bytes = session_memory;
	options.sst_target_bytes = 64 * 1024;	/* several files per session */
	options.merge_threads = 2;
	options.merge_part_bytes = 1;
	/* a write held back behind an in-doubt session fails at once (test_in_doubt.c waits) */
	options.in_doubt_wait_ms = 0;
	store = ts_store_open(data_dir, &options, &err);
	if (store == NULL)
		fprintf(stderr, "open failed: %s\n", err.message);
	return store;
}

static TsStore *
reopen(TsStore *store, size_t session_memory)
{
	ts_store_close(store);
	return open_store(session_memory);
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

/* Does table name exist? */
static bool
table_exists(TsStore *store, const char *name)
{
	TsError		err;
	uint32_t	id;
	bool		created;

	return ts_store_open_table(store, name, NULL, false, &id, &created, NULL, &err) == 0;
}

/* ids first .. first+n-1, ascending or shuffled. */
static int64_t *
make_ids(size_t n, int64_t first, bool shuffled)
{
	int64_t    *ids = malloc(n * sizeof(int64_t));

	for (size_t i = 0; i < n; i++)
		ids[i] = first + (int64_t) i;
	srand(11);
	for (size_t i = n - 1; shuffled && i > 0; i--)
	{
		size_t		j = (size_t) rand() % (i + 1);
		int64_t		t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
	}
	return ids;
}

/* Write rows (id, val) for ids to the session, 500 to a batch. */
static int
write_ids(TsSession *session, uint32_t table, const int64_t *ids, size_t n, int64_t val)
{
	TsError		err;

	for (size_t off = 0; off < n; off += 500)
	{
		size_t		count = n - off < 500 ? n - off : 500;
		Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
		Tcopy__Row *rows = calloc(count, sizeof(Tcopy__Row));
		Tcopy__Row **ptrs = calloc(count, sizeof(Tcopy__Row *));
		int64_t    *ints = calloc(count * 2, sizeof(int64_t));
		int			rc;

		for (size_t i = 0; i < count; i++)
		{
			tcopy__row__init(&rows[i]);
			ints[2 * i] = ids[off + i];
			ints[2 * i + 1] = val;
			rows[i].ints = &ints[2 * i];
			rows[i].n_ints = 2;
			ptrs[i] = &rows[i];
		}
		batch.seq = off / 500 + 1;
		batch.table_id = table;
		batch.rows = ptrs;
		batch.n_rows = count;
		rc = ts_session_write(session, &batch, NULL, &err);
		free(rows);
		free(ptrs);
		free(ints);
		if (rc != 0)
		{
			fprintf(stderr, "write failed: %s\n", err.message);
			return -1;
		}
	}
	return 0;
}

/* One session of ids with val, committed in one step. */
static int
commit_ids(TsStore *store, uint32_t table, const int64_t *ids, size_t n, int64_t val)
{
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session = ts_session_begin(store, &sid, &err);

	if (session == NULL || write_ids(session, table, ids, n, val) != 0)
	{
		if (session != NULL)
			ts_session_abort(session);
		return -1;
	}
	if (ts_session_commit(session, &rows, &err) != 0)
	{
		fprintf(stderr, "commit failed: %s\n", err.message);
		return -1;
	}
	return 0;
}

/* A session of the kind's n rows (ids from first, val), not yet prepared. */
static TsSession *
kind_session(TsStore *store, Kind kind, uint32_t table, size_t n, int64_t first,
			 int64_t val, uint64_t *sid)
{
	TsError		err;
	TsSession  *session = ts_session_begin(store, sid, &err);
	int64_t    *ids = make_ids(n, first, kind == KIND_SHUFFLED);

	if (session != NULL && write_ids(session, table, ids, n, val) != 0)
	{
		ts_session_abort(session);
		session = NULL;
	}
	free(ids);
	return session;
}

/* Rows of the table for kind: small sessions stay in memory. */
static size_t
kind_rows(Kind kind)
{
	return kind == KIND_SMALL ? 2000 : 20000;
}

static size_t
kind_memory(Kind kind)
{
	return kind == KIND_SMALL ? SMALL_MEMORY : SPILL_MEMORY;
}

typedef struct TableScan
{
	uint64_t	rows;
	int64_t		sum_ids;
	int64_t		sum_vals;
	int64_t		val_of_first;	/* val of the row with id == probe */
	bool		probe_found;
} TableScan;

/* Scan a table whole; probe: an id whose val to report. */
static int
scan_table(TsStore *store, uint32_t table, int64_t probe, TableScan *res)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
	TsError		err;
	TsScan	   *sc;
	TcArena		arena;

	memset(res, 0, sizeof(*res));
	request.table_id = table;
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
			ts_scan_close(sc);
			tc_arena_free(&arena);
			return -1;
		}
		for (size_t i = 0; i < batch.n_rows; i++)
		{
			res->rows++;
			res->sum_ids += batch.rows[i]->ints[0];
			res->sum_vals += batch.rows[i]->ints[1];
			if (batch.rows[i]->ints[0] == probe)
			{
				res->probe_found = true;
				res->val_of_first = batch.rows[i]->ints[1];
			}
		}
	} while (!batch.done);
	ts_scan_close(sc);
	tc_arena_free(&arena);
	return 0;
}

/* Keys in the data family under table id (dropped tables included). */
static uint64_t
keys_of_table(TsStore *store, uint32_t table)
{
	uint8_t		prefix[TS_TABLE_ID_SIZE];
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(store->db, store->read_default,
														store->cf_data);
	uint64_t	n = 0;

	ts_put_be32(prefix, table);
	for (rocksdb_iter_seek(it, (const char *) prefix, sizeof(prefix)); rocksdb_iter_valid(it);
		 rocksdb_iter_next(it))
	{
		size_t		len;
		const char *key = rocksdb_iter_key(it, &len);

		if (len < sizeof(prefix) || memcmp(key, prefix, sizeof(prefix)) != 0)
			break;
		n++;
	}
	rocksdb_iter_destroy(it);
	return n;
}

/* Entries of DIR/staging. */
static int
staging_entries(void)
{
	char		dir[512];
	DIR		   *d;
	struct dirent *entry;
	int			n = 0;

	snprintf(dir, sizeof(dir), "%s/staging", data_dir);
	d = opendir(dir);
	if (d == NULL)
		return -1;
	while ((entry = readdir(d)) != NULL)
		n += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* The prepared sessions as listed, into arena. */
static Tcopy__PreparedList
list_prepared(TsStore *store, const char *prefix, TcArena *arena)
{
	Tcopy__PreparedList list = TCOPY__PREPARED_LIST__INIT;
	TsError		err;

	if (ts_store_list_prepared(store, prefix, NULL, arena, &list, &err) != 0)
		fprintf(stderr, "list failed: %s\n", err.message);
	return list;
}

static Tcopy__ResolveOutcome
resolve(TsStore *store, const char *gid, bool commit, uint64_t owner, uint64_t *rows)
{
	Tcopy__ResolveOutcome outcome = TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE;
	uint64_t	ignored;
	TsError		err;

	if (ts_store_resolve(store, gid, commit, owner, NULL, &outcome, rows ? rows : &ignored, &err) != 0)
	{
		fprintf(stderr, "resolve of \"%s\" failed: %s\n", gid, err.message);
		return TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE;
	}
	return outcome;
}

static void
check_stats(TsStore *store, uint64_t prepared)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	ts_store_stats(store, &stats);
	CHECK_EQ_UINT(stats.sessions_prepared, prepared);
	CHECK_EQ_UINT(stats.sessions_open, 0);
	CHECK_EQ_UINT(stats.staged_bytes, 0);
	CHECK_EQ_UINT(stats.spilled_bytes, 0);
}

/* ---- tests ---- */

/*
 * Two sessions prepared, the store closed and reopened: both listed as
 * orphaned; one published (its rows exact), one discarded (nothing), each
 * staging directory gone, and resolving again finds nothing.
 */
static void
test_reopen_resolve(Kind kind)
{
	TsStore    *store = open_store(kind_memory(kind));
	size_t		n = kind_rows(kind);
	char		name[32],
				gid_a[32],
				gid_b[32];
	uint32_t	table;
	uint64_t	sid,
				rows = 0;
	TsError		err;
	TsSession  *session;
	TableScan	res;
	TcArena		arena;
	Tcopy__PreparedList list;

	REQUIRE(store != NULL);
	snprintf(name, sizeof(name), "t_%s", kind_names[kind]);
	snprintf(gid_a, sizeof(gid_a), "a:%s", kind_names[kind]);
	snprintf(gid_b, sizeof(gid_b), "b:%s", kind_names[kind]);
	table = open_table(store, name, true);
	REQUIRE(table > 0);

	session = kind_session(store, kind, table, n, 1, 1, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, gid_a, 1, NULL, &rows, &err), 0);
	CHECK_EQ_UINT(rows, n);
	session = kind_session(store, kind, table, n, (int64_t) n + 1, 2, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, gid_b, 1, NULL, &rows, &err), 0);
	check_stats(store, 2);
	CHECK_EQ_INT(staging_entries(), kind == KIND_SMALL ? 0 : 2);

	tc_arena_init(&arena, 4096);
	list = list_prepared(store, "", &arena);
	REQUIRE(list.n_sessions == 2);
	CHECK_EQ_STR(list.sessions[0]->gid, gid_a);
	CHECK_EQ_STR(list.sessions[1]->gid, gid_b);
	CHECK(list.sessions[0]->attached);
	CHECK_EQ_UINT(list.sessions[0]->rows, n);
	CHECK(list.sessions[0]->bytes > 0);
	CHECK(list.sessions[0]->prepared_at_ms > 1700000000000ULL);
	REQUIRE(scan_table(store, table, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 0);

	store = reopen(store, kind_memory(kind));
	REQUIRE(store != NULL);
	check_stats(store, 2);
	CHECK_EQ_INT(staging_entries(), kind == KIND_SMALL ? 0 : 2);
	tc_arena_reset(&arena);
	list = list_prepared(store, "a:", &arena);
	REQUIRE(list.n_sessions == 1);
	CHECK_EQ_STR(list.sessions[0]->gid, gid_a);
	CHECK(!list.sessions[0]->attached);
	CHECK_EQ_UINT(list.sessions[0]->rows, n);

	CHECK_EQ_INT(resolve(store, gid_a, true, 7, &rows), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_UINT(rows, n);
	REQUIRE(scan_table(store, table, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK_EQ_INT(res.sum_ids, (int64_t) (n * (n + 1) / 2));
	CHECK_EQ_INT(res.sum_vals, (int64_t) n);
	CHECK_EQ_INT(resolve(store, gid_b, false, 7, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	REQUIRE(scan_table(store, table, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK_EQ_INT(staging_entries(), 0);
	CHECK_EQ_INT(resolve(store, gid_a, true, 7, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	CHECK_EQ_INT(resolve(store, gid_b, false, 7, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	check_stats(store, 0);

	/* and after another restart, the published rows are there, once */
	store = reopen(store, kind_memory(kind));
	REQUIRE(store != NULL);
	tc_arena_reset(&arena);
	list = list_prepared(store, "", &arena);
	CHECK_EQ_UINT(list.n_sessions, 0);
	REQUIRE(scan_table(store, table, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	tc_arena_free(&arena);
	ts_store_close(store);
}

static void
test_reopen_resolve_small(void)
{
	test_reopen_resolve(KIND_SMALL);
}

static void
test_reopen_resolve_sorted(void)
{
	test_reopen_resolve(KIND_SORTED);
}

static void
test_reopen_resolve_shuffled(void)
{
	test_reopen_resolve(KIND_SHUFFLED);
}

/*
 * The setup of the table-op tests: table "old" with rows 1..100 (val 9),
 * table "gone" with rows 1..50, and a prepared session of the kind that
 * writes n ids from 1000 + n / 2 (val 5) to "old", truncates it (which
 * discards them, spilled or not: issue 48), writes ids 1000.. (val 3) to
 * it, and drops "gone".
 */
typedef struct OpsCase
{
	TsStore    *store;
	uint32_t	old;
	uint32_t	gone;
	size_t		n;
} OpsCase;

static void
ops_setup(OpsCase *c, Kind kind, const char *suffix, const char *gid)
{
	int64_t    *ids = make_ids(100, 1, false);
	char		name[64];
	TsSession  *session;
	TsError		err;
	uint64_t	sid,
				rows;

	c->store = open_store(kind_memory(kind));
	REQUIRE(c->store != NULL);
	c->n = kind_rows(kind);
	snprintf(name, sizeof(name), "old_%s", suffix);
	c->old = open_table(c->store, name, true);
	snprintf(name, sizeof(name), "gone_%s", suffix);
	c->gone = open_table(c->store, name, true);
	REQUIRE(c->old > 0 && c->gone > 0);
	CHECK_EQ_INT(commit_ids(c->store, c->old, ids, 100, 9), 0);
	CHECK_EQ_INT(commit_ids(c->store, c->gone, ids, 50, 9), 0);
	free(ids);

	session = ts_session_begin(c->store, &sid, &err);
	REQUIRE(session != NULL);
	ids = make_ids(c->n, 1000 + (int64_t) c->n / 2, kind == KIND_SHUFFLED);
	CHECK_EQ_INT(write_ids(session, c->old, ids, c->n, 5), 0);
	free(ids);
	/* the spilled kinds spilled them (direct SST files, or runs) */
	CHECK(kind == KIND_SMALL || ts_session_bytes(session) > session->staged.len);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, c->old, &err), 0);
	ids = make_ids(c->n, 1000, kind == KIND_SHUFFLED);
	CHECK_EQ_INT(write_ids(session, c->old, ids, c->n, 3), 0);
	free(ids);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, c->gone, &err), 0);
	/* a second time: staged once */
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, c->gone, &err), 0);
	CHECK_EQ_INT(ts_session_prepare_gid(session, gid, 1, NULL, &rows, &err), 0);
}

/* "old" holds exactly the session's rows, and "gone" is gone. */
static void
ops_check_published(OpsCase *c, const char *suffix)
{
	TableScan	res;
	char		name[64];

	REQUIRE(scan_table(c->store, c->old, 1000, &res) == 0);
	CHECK_EQ_UINT(res.rows, c->n);
	CHECK_EQ_INT(res.sum_vals, 3 * (int64_t) c->n);
	CHECK_EQ_INT(res.sum_ids, (int64_t) c->n * 1000 + (int64_t) (c->n * (c->n - 1) / 2));
	snprintf(name, sizeof(name), "gone_%s", suffix);
	CHECK(!table_exists(c->store, name));
	CHECK_EQ_UINT(keys_of_table(c->store, c->gone), 0);
}

/* "old" and "gone" as they were before the session. */
static void
ops_check_untouched(OpsCase *c, const char *suffix)
{
	TableScan	res;
	char		name[64];

	REQUIRE(scan_table(c->store, c->old, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 100);
	CHECK_EQ_INT(res.sum_vals, 900);
	snprintf(name, sizeof(name), "gone_%s", suffix);
	CHECK(table_exists(c->store, name));
	REQUIRE(scan_table(c->store, c->gone, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 50);
}

/*
 * A session's TRUNCATE and DROP apply when it is published, before and
 * after its rows, survive a restart and a compaction; a discarded session
 * applies neither.  Refused: writes after DROP.
 */
static void
test_table_ops(Kind kind)
{
	OpsCase		c;
	char		suffix[32],
				gid[48];
	TsSession  *session;
	TsError		err;
	uint64_t	sid,
				rows;
	int64_t		one = 1;

	/* published */
	snprintf(suffix, sizeof(suffix), "%s_c", kind_names[kind]);
	snprintf(gid, sizeof(gid), "ops:%s", suffix);
	ops_setup(&c, kind, suffix, gid);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	ops_check_untouched(&c, suffix);
	CHECK_EQ_INT(resolve(c.store, gid, true, 3, &rows), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	ops_check_published(&c, suffix);
	rocksdb_compact_range_cf(c.store->db, c.store->cf_data, NULL, 0, NULL, 0);
	ops_check_published(&c, suffix);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	ops_check_published(&c, suffix);
	CHECK_EQ_INT(staging_entries(), 0);

	/* refusals (a TRUNCATE after writing is not one: it discards them) */
	session = ts_session_begin(c.store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(write_ids(session, c.old, &one, 1, 1), 0);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, c.old, &err), 0);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, c.gone, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, c.old, &err), 0);
	CHECK_EQ_INT(write_ids(session, c.old, &one, 1, 1), -1);
	CHECK_EQ_INT(ts_session_table_op(session, (Tcopy__TableOpKind) 7, c.old, &err), -1);
	ts_session_abort(session);
	ops_check_published(&c, suffix);
	ts_store_close(c.store);

	/* discarded */
	snprintf(suffix, sizeof(suffix), "%s_a", kind_names[kind]);
	snprintf(gid, sizeof(gid), "ops:%s", suffix);
	ops_setup(&c, kind, suffix, gid);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	CHECK_EQ_INT(resolve(c.store, gid, false, 3, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	ops_check_untouched(&c, suffix);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	ops_check_untouched(&c, suffix);
	CHECK_EQ_INT(staging_entries(), 0);
	check_stats(c.store, 0);
	ts_store_close(c.store);
}

static void
test_table_ops_small(void)
{
	test_table_ops(KIND_SMALL);
}

static void
test_table_ops_sorted(void)
{
	test_table_ops(KIND_SORTED);
}

static void
test_table_ops_shuffled(void)
{
	test_table_ops(KIND_SHUFFLED);
}

/* The one-step commit applies a session's table operations too. */
static void
test_commit_table_ops(Kind kind)
{
	TsStore    *store = open_store(kind_memory(kind));
	char		name[64];
	uint32_t	old,
				gone;
	int64_t    *ids = make_ids(100, 1, false);
	TsSession  *session;
	TsError		err;
	uint64_t	sid,
				rows;
	TableScan	res;
	size_t		n = kind_rows(kind);

	REQUIRE(store != NULL);
	snprintf(name, sizeof(name), "cold_%s", kind_names[kind]);
	old = open_table(store, name, true);
	snprintf(name, sizeof(name), "cgone_%s", kind_names[kind]);
	gone = open_table(store, name, true);
	CHECK_EQ_INT(commit_ids(store, old, ids, 100, 9), 0);
	CHECK_EQ_INT(commit_ids(store, gone, ids, 100, 9), 0);
	free(ids);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, old, &err), 0);
	ids = make_ids(n, 1000, kind == KIND_SHUFFLED);
	CHECK_EQ_INT(write_ids(session, old, ids, n, 3), 0);
	free(ids);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, gone, &err), 0);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	REQUIRE(scan_table(store, old, 1000, &res) == 0);
	CHECK_EQ_UINT(res.rows, n);
	CHECK_EQ_INT(res.sum_vals, 3 * (int64_t) n);
	CHECK(!table_exists(store, name));
	CHECK_EQ_UINT(keys_of_table(store, gone), 0);
	check_stats(store, 0);
	ts_store_close(store);
}

static void
test_commit_table_ops_all(void)
{
	test_commit_table_ops(KIND_SMALL);
	test_commit_table_ops(KIND_SORTED);
	test_commit_table_ops(KIND_SHUFFLED);
}

/*
 * Stopped at a step of publishing (as by a crash there), the store
 * reopened: resolving again finishes, and nothing is applied twice.  After
 * a stop past the ingestion, a later session overwrites one of the
 * session's keys and writes into the truncated range: a second ingestion
 * would put the old value back, a second truncation remove the new row.
 */
static void
test_publish_stops(Kind kind, const char *point)
{
	OpsCase		c;
	char		suffix[64],
				gid[80];
	TableScan	res;
	Tcopy__ResolveOutcome outcome;
	TsError		err;
	uint64_t	rows;
	bool		later = strcmp(point, "after-ingest") == 0 ||
		(kind == KIND_SMALL && strcmp(point, "after-record-delete") == 0);
	int64_t		later_ids[2] = {1000, 5};

	snprintf(suffix, sizeof(suffix), "%s_%s", kind_names[kind], point);
	for (char *p = suffix; *p; p++)
		if (*p == '-')
			*p = '_';
	snprintf(gid, sizeof(gid), "stop:%s", suffix);
	ops_setup(&c, kind, suffix, gid);

	c.store->test_stop_at = point;
	CHECK_EQ_INT(ts_store_resolve(c.store, gid, true, 1, NULL, &outcome, &rows, &err), -1);
	CHECK(strstr(err.message, point) != NULL);
	c.store->test_stop_at = NULL;

	/*
	 * A later session's rows, which publishing the session again must not
	 * undo: written while connection 1 still owns it after the failure,
	 * before it is in doubt (after the restart, the write would be held
	 * back until it is resolved)
	 */
	if (later)
		CHECK_EQ_INT(commit_ids(c.store, c.old, later_ids, 2, 77), 0);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	if (strcmp(point, "after-record-delete") != 0)
	{
		char		holder[80];

		CHECK_EQ_INT(commit_ids(c.store, c.old, later_ids, 2, 78), -1);
		CHECK(ts_store_table_in_doubt(c.store, c.old, holder, sizeof(holder)));
		CHECK_EQ_STR(holder, gid);
	}

	if (strcmp(point, "after-truncates") == 0 || strcmp(point, "after-ingest") == 0)
	{
		/* partly published: only a commit may resolve it */
		CHECK_EQ_INT(ts_store_resolve(c.store, gid, false, 1, NULL, &outcome, &rows, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_PROTOCOL);
		/* still owner 1's, until its connection ends (after any error) */
		CHECK_EQ_INT(resolve(c.store, gid, true, 2, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY);
		ts_store_prepared_detach(c.store, 1);
	}
	outcome = resolve(c.store, gid, true, 2, &rows);
	if (strcmp(point, "after-record-delete") == 0)
		CHECK_EQ_INT(outcome, TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	else
		CHECK_EQ_INT(outcome, TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);

	if (!later)
		ops_check_published(&c, suffix);
	else
	{
		REQUIRE(scan_table(c.store, c.old, 1000, &res) == 0);
		CHECK_EQ_UINT(res.rows, c.n + 1);
		CHECK(res.probe_found);
		CHECK_EQ_INT(res.val_of_first, 77);
		CHECK_EQ_INT(res.sum_vals, 3 * (int64_t) (c.n - 1) + 2 * 77);
	}
	CHECK_EQ_INT(staging_entries(), 0);
	check_stats(c.store, 0);
	c.store = reopen(c.store, kind_memory(kind));
	REQUIRE(c.store != NULL);
	if (!later)
		ops_check_published(&c, suffix);
	CHECK_EQ_INT(resolve(c.store, gid, true, 2, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	ts_store_close(c.store);
}

static void
test_publish_stops_all(void)
{
	static const char *const spilled_points[] = {
		"after-truncates", "after-ingest", "before-record-delete", "after-record-delete"
	};

	for (size_t i = 0; i < 4; i++)
	{
		test_publish_stops(KIND_SORTED, spilled_points[i]);
		test_publish_stops(KIND_SHUFFLED, spilled_points[i]);
	}
	test_publish_stops(KIND_SMALL, "before-record-delete");
	test_publish_stops(KIND_SMALL, "after-record-delete");
}

/*
 * Stopped while discarding: before the record's deletion the session is
 * still prepared after a restart; after it, it is gone and so is its
 * staging directory.  Stopped after the record of a Prepare: the session
 * is prepared after a restart.
 */
static void
test_other_stops(void)
{
	static const char *const points[] = {"before-record-delete", "after-record-delete"};
	Tcopy__ResolveOutcome outcome;
	TsError		err;
	uint64_t	rows;

	for (int kind = KIND_SMALL; kind <= KIND_SHUFFLED; kind++)
	{
		for (int p = 0; p < 2; p++)
		{
			OpsCase		c;
			char		suffix[64],
						gid[80];

			snprintf(suffix, sizeof(suffix), "d%d_%s", p, kind_names[kind]);
			snprintf(gid, sizeof(gid), "discard:%s", suffix);
			ops_setup(&c, (Kind) kind, suffix, gid);
			c.store->test_stop_at = points[p];
			CHECK_EQ_INT(ts_store_resolve(c.store, gid, false, 1, NULL, &outcome, &rows, &err), -1);
			c.store->test_stop_at = NULL;
			c.store = reopen(c.store, kind_memory((Kind) kind));
			REQUIRE(c.store != NULL);
			CHECK_EQ_INT(staging_entries(), p == 0 && kind != KIND_SMALL ? 1 : 0);
			CHECK_EQ_INT(resolve(c.store, gid, false, 2, NULL),
						 p == 0 ? TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE :
						 TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
			ops_check_untouched(&c, suffix);
			CHECK_EQ_INT(staging_entries(), 0);
			check_stats(c.store, 0);
			ts_store_close(c.store);
		}

		/* a Prepare stopped after its record */
		{
			TsStore    *store = open_store(kind_memory((Kind) kind));
			char		name[32];
			uint32_t	table;
			uint64_t	sid;
			TsSession  *session;
			TableScan	res;

			REQUIRE(store != NULL);
			snprintf(name, sizeof(name), "pstop_%s", kind_names[kind]);
			table = open_table(store, name, true);
			session = kind_session(store, (Kind) kind, table, kind_rows((Kind) kind), 1, 4, &sid);
			REQUIRE(session != NULL);
			store->test_stop_at = "after-prepare-record";
			CHECK_EQ_INT(ts_session_prepare_gid(session, "pstop", 1, NULL, &rows, &err), -1);
			store->test_stop_at = NULL;
			store = reopen(store, kind_memory((Kind) kind));
			REQUIRE(store != NULL);
			check_stats(store, 1);
			CHECK_EQ_INT(resolve(store, "pstop", true, 2, &rows), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
			CHECK_EQ_UINT(rows, kind_rows((Kind) kind));
			REQUIRE(scan_table(store, table, 1, &res) == 0);
			CHECK_EQ_UINT(res.rows, kind_rows((Kind) kind));
			CHECK_EQ_INT(res.sum_vals, 4 * (int64_t) kind_rows((Kind) kind));
			CHECK_EQ_INT(staging_entries(), 0);
			ts_store_close(store);
		}
	}
}

/*
 * The registry: a gid prepared once; the owner's session BUSY for others
 * until the owner is gone; NOT_FOUND; bad gids; the owner may not resolve
 * it twice at once; prefixes.
 */
static void
test_registry(void)
{
	TsStore    *store = open_store(SPILL_MEMORY);
	uint32_t	table;
	uint64_t	sid,
				rows;
	TsSession  *session;
	TsError		err;
	char		gid[TC_GID_MAX + 2];
	char		owned[64];
	TcArena		arena;
	Tcopy__PreparedList list;
	Tcopy__ResolveOutcome outcome;

	REQUIRE(store != NULL);
	table = open_table(store, "reg", true);

	session = kind_session(store, KIND_SHUFFLED, table, 5000, 1, 1, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "tcopy:1:2:3", 11, NULL, &rows, &err), 0);
	CHECK(ts_store_prepared_owned(store, 11, owned, sizeof(owned)));
	CHECK_EQ_STR(owned, "tcopy:1:2:3");
	CHECK(!ts_store_prepared_owned(store, 12, NULL, 0));

	/* the same gid again: refused, and that session's staging is gone */
	session = kind_session(store, KIND_SHUFFLED, table, 5000, 10000, 1, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "tcopy:1:2:3", 12, NULL, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_PROTOCOL);
	CHECK(strstr(err.message, "already prepared") != NULL);
	CHECK_EQ_INT(staging_entries(), 1);
	check_stats(store, 1);

	/* gids of 0 and TC_GID_MAX + 1 bytes: refused; TC_GID_MAX: fine */
	memset(gid, 'g', sizeof(gid));
	gid[TC_GID_MAX + 1] = '\0';
	session = kind_session(store, KIND_SMALL, table, 10, 20000, 1, &sid);
	CHECK_EQ_INT(ts_session_prepare_gid(session, gid, 12, NULL, &rows, &err), -1);
	session = kind_session(store, KIND_SMALL, table, 10, 20000, 1, &sid);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "", 12, NULL, &rows, &err), -1);
	CHECK_EQ_INT(ts_store_resolve(store, gid, true, 12, NULL, &outcome, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_PROTOCOL);
	gid[TC_GID_MAX] = '\0';
	session = kind_session(store, KIND_SMALL, table, 10, 20000, 1, &sid);
	CHECK_EQ_INT(ts_session_prepare_gid(session, gid, 12, NULL, &rows, &err), 0);

	tc_arena_init(&arena, 4096);
	list = list_prepared(store, "tcopy:", &arena);
	CHECK_EQ_UINT(list.n_sessions, 1);
	list = list_prepared(store, "", &arena);
	CHECK_EQ_UINT(list.n_sessions, 2);
	list = list_prepared(store, "tcopy:1:3", &arena);
	CHECK_EQ_UINT(list.n_sessions, 0);
	tc_arena_free(&arena);

	/* owned by 11: busy for 12, until 11 is gone */
	CHECK_EQ_INT(resolve(store, "tcopy:1:2:3", true, 12, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY);
	CHECK_EQ_INT(resolve(store, "tcopy:9", true, 12, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	ts_store_prepared_detach(store, 11);
	CHECK(!ts_store_prepared_owned(store, 11, NULL, 0));
	CHECK_EQ_INT(resolve(store, "tcopy:1:2:3", false, 12, &rows), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_UINT(rows, 5000);
	/* its own, by its owner */
	CHECK_EQ_INT(resolve(store, gid, true, 12, &rows), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_UINT(rows, 10);
	check_stats(store, 0);
	CHECK_EQ_INT(staging_entries(), 0);

	/* a resolved gid may be prepared again */
	session = kind_session(store, KIND_SMALL, table, 10, 30000, 1, &sid);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "tcopy:1:2:3", 13, NULL, &rows, &err), 0);
	CHECK_EQ_INT(resolve(store, "tcopy:1:2:3", true, 13, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	ts_store_close(store);
}

/*
 * A restart with a prepared session: a new session's id is above the
 * prepared one's (its staging directory is not reused), and a keyless
 * table's new rows do not take the prepared session's row ids.
 */
static void
test_ids_across_restart(void)
{
	TsStore    *store = open_store(SPILL_MEMORY);
	uint32_t	keyless,
				keyed;
	uint64_t	sid,
				prepared_sid,
				rows;
	int64_t    *ids = make_ids(20000, 1, true);
	TsSession  *session;
	TsError		err;
	TableScan	res;

	REQUIRE(store != NULL);
	keyless = open_table(store, "rowids", false);
	keyed = open_table(store, "sids", true);

	session = ts_session_begin(store, &prepared_sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(write_ids(session, keyless, ids, 300, 1), 0);
	CHECK_EQ_INT(write_ids(session, keyed, ids, 20000, 1), 0);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "ids", 1, NULL, &rows, &err), 0);
	store = reopen(store, SPILL_MEMORY);
	REQUIRE(store != NULL);

	/* a new spilled session, aborted: the prepared one's directory stays */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK(sid > prepared_sid);
	CHECK_EQ_INT(write_ids(session, keyed, ids, 20000, 2), 0);
	ts_session_abort(session);
	CHECK_EQ_INT(staging_entries(), 1);

	/*
	 * Row ids taken while the prepared session is in doubt; its commit is
	 * held back until it is resolved
	 */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(write_ids(session, keyless, ids, 100, 2), 0);
	CHECK_EQ_INT(resolve(store, "ids", true, 1, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	REQUIRE(scan_table(store, keyless, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 400);
	CHECK_EQ_INT(res.sum_vals, 300 + 200);
	REQUIRE(scan_table(store, keyed, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 20000);
	CHECK_EQ_INT(res.sum_vals, 20000);
	free(ids);
	ts_store_close(store);
}

/*
 * A table a prepared session wrote to is dropped before it is published:
 * publishing succeeds, and the rows go with the table (nothing under its
 * id); the one-step commit of such a session fails, as it always did.
 */
static void
test_dropped_meanwhile(void)
{
	for (int kind = KIND_SMALL; kind <= KIND_SHUFFLED; kind++)
	{
		TsStore    *store = open_store(kind_memory((Kind) kind));
		char		name[32];
		uint32_t	table,
					other;
		uint64_t	sid,
					rows;
		TsSession  *session;
		TsError		err;
		TableScan	res;

		REQUIRE(store != NULL);
		snprintf(name, sizeof(name), "dm_%s", kind_names[kind]);
		table = open_table(store, name, true);
		snprintf(name, sizeof(name), "dmo_%s", kind_names[kind]);
		other = open_table(store, name, true);
		session = kind_session(store, (Kind) kind, table, kind_rows((Kind) kind), 1, 1, &sid);
		REQUIRE(session != NULL);
		CHECK_EQ_INT(write_ids(session, other, (int64_t[]) {5}, 1, 6), 0);
		CHECK_EQ_INT(ts_session_prepare_gid(session, "dm", 1, NULL, &rows, &err), 0);
		CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, table, NULL, NULL, &err), 0);
		CHECK_EQ_INT(resolve(store, "dm", true, 1, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
		CHECK_EQ_UINT(keys_of_table(store, table), 0);
		REQUIRE(scan_table(store, other, 5, &res) == 0);
		CHECK_EQ_UINT(res.rows, 1);
		CHECK_EQ_INT(res.val_of_first, 6);

		snprintf(name, sizeof(name), "dm2_%s", kind_names[kind]);
		table = open_table(store, name, true);
		session = kind_session(store, (Kind) kind, table, kind_rows((Kind) kind), 1, 1, &sid);
		REQUIRE(session != NULL);
		CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, table, NULL, NULL, &err), 0);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
		CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE);
		CHECK_EQ_UINT(keys_of_table(store, table), 0);
		check_stats(store, 0);
		CHECK_EQ_INT(staging_entries(), 0);
		ts_store_close(store);
	}
}

/*
 * A staged DROP of a table someone dropped and someone else created again
 * under the same name meanwhile leaves the new table alone.
 */
static void
test_drop_recreated(void)
{
	TsStore    *store = open_store(SMALL_MEMORY);
	uint32_t	first,
				second;
	uint64_t	sid,
				rows;
	TsSession  *session;
	TsError		err;
	TableScan	res;

	REQUIRE(store != NULL);
	first = open_table(store, "again", true);
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, first, &err), 0);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "again", 1, NULL, &rows, &err), 0);
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, first, NULL, NULL, &err), 0);
	second = open_table(store, "again", true);
	CHECK(second != first);
	CHECK_EQ_INT(commit_ids(store, second, (int64_t[]) {1, 2}, 2, 1), 0);
	CHECK_EQ_INT(resolve(store, "again", true, 1, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	store = reopen(store, SMALL_MEMORY);
	REQUIRE(store != NULL);
	CHECK(table_exists(store, "again"));
	REQUIRE(scan_table(store, second, 1, &res) == 0);
	CHECK_EQ_UINT(res.rows, 2);
	ts_store_close(store);
}

/* ---- load labels ---- */

/* Claim label on table in session: its state; holder gets a PREPARED's gid. */
static Tcopy__LabelState
claim(TsSession *session, uint32_t table, const char *label, char *holder)
{
	Tcopy__LabelState state = TCOPY__LABEL_STATE__LABEL_NONE;
	uint64_t	at;
	char		gid[TS_GID_MAX + 1];
	TsError		err;

	if (ts_session_claim_label(session, table, label, &state, &at, gid, sizeof(gid), &err) != 0)
		fprintf(stderr, "claim failed: %s\n", err.message);
	if (holder != NULL)
		strcpy(holder, gid);
	return state;
}

/* The labels published for table, or -1. */
static long
count_labels(TsStore *store, uint32_t table)
{
	TcArena		arena;
	Tcopy__LabelList list = TCOPY__LABEL_LIST__INIT;
	TsError		err;
	long		n = -1;

	tc_arena_init(&arena, 4096);
	if (ts_store_list_labels(store, table, &arena, &list, &err) == 0)
		n = (long) list.n_labels;
	else
		fprintf(stderr, "list labels failed: %s\n", err.message);
	tc_arena_free(&arena);
	return n;
}

/*
 * Labels: claimed exclusively (OWN, BUSY), published with a one-step
 * commit and with a prepared session (PUBLISHED), freed by an abort and a
 * discard, held by a prepared session across a reopen (BUSY while its
 * connection owns it, PREPARED once orphaned), forgotten, truncated.
 */
static void
labels_case(Kind kind)
{
	TsStore    *store = open_store(kind_memory(kind));
	TsSession  *a,
			   *b;
	TsError		err;
	uint64_t	sid,
				rows;
	uint32_t	table;
	char		name[64],
				gid[64],
				holder[TS_GID_MAX + 1];
	Tcopy__ResolveOutcome outcome;
	bool		found;
	TableScan	res;

	REQUIRE(store != NULL);
	snprintf(name, sizeof(name), "labels_%s", kind_names[kind]);
	table = open_table(store, name, true);

	a = kind_session(store, kind, table, kind_rows(kind), 1, 1, &sid);
	REQUIRE(a != NULL);
	CHECK(claim(a, table, "l1", NULL) == TCOPY__LABEL_STATE__LABEL_CLAIMED);
	CHECK(claim(a, table, "l1", NULL) == TCOPY__LABEL_STATE__LABEL_OWN);
	b = ts_session_begin(store, &sid, &err);
	CHECK(claim(b, table, "l1", NULL) == TCOPY__LABEL_STATE__LABEL_BUSY);
	CHECK(ts_session_commit(a, &rows, &err) == 0);
	CHECK(claim(b, table, "l1", NULL) == TCOPY__LABEL_STATE__LABEL_PUBLISHED);

	/* an aborted session's label is free again */
	CHECK(claim(b, table, "l2", NULL) == TCOPY__LABEL_STATE__LABEL_CLAIMED);
	ts_session_abort(b);
	b = kind_session(store, kind, table, kind_rows(kind), 100000, 2, &sid);
	REQUIRE(b != NULL);
	CHECK(claim(b, table, "l2", NULL) == TCOPY__LABEL_STATE__LABEL_CLAIMED);

	/* prepared: busy while its connection owns it, then prepared, across a reopen */
	snprintf(gid, sizeof(gid), "labels:%s", kind_names[kind]);
	CHECK(ts_session_prepare_gid(b, gid, 7, NULL, &rows, &err) == 0);
	a = ts_session_begin(store, &sid, &err);
	CHECK(claim(a, table, "l2", NULL) == TCOPY__LABEL_STATE__LABEL_BUSY);
	ts_store_prepared_detach(store, 7);
	CHECK(claim(a, table, "l2", holder) == TCOPY__LABEL_STATE__LABEL_PREPARED);
	CHECK(strcmp(holder, gid) == 0);
	ts_session_abort(a);
	store = reopen(store, kind_memory(kind));
	REQUIRE(store != NULL);
	a = ts_session_begin(store, &sid, &err);
	CHECK(claim(a, table, "l2", holder) == TCOPY__LABEL_STATE__LABEL_PREPARED);
	CHECK(ts_store_resolve(store, gid, true, 9, NULL, &outcome, &rows, &err) == 0);
	CHECK(outcome == TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK(claim(a, table, "l2", NULL) == TCOPY__LABEL_STATE__LABEL_PUBLISHED);
	ts_session_abort(a);
	CHECK(count_labels(store, table) == 2);
	CHECK(scan_table(store, table, 1, &res) == 0);
	CHECK(res.rows == 2 * kind_rows(kind));

	/* a discarded session's label is free again */
	b = kind_session(store, kind, table, 10, 500000, 3, &sid);
	REQUIRE(b != NULL);
	CHECK(claim(b, table, "l3", NULL) == TCOPY__LABEL_STATE__LABEL_CLAIMED);
	snprintf(gid, sizeof(gid), "labels:%s:discard", kind_names[kind]);
	CHECK(ts_session_prepare_gid(b, gid, 7, NULL, &rows, &err) == 0);
	CHECK(ts_store_resolve(store, gid, false, 7, NULL, &outcome, &rows, &err) == 0);
	a = ts_session_begin(store, &sid, &err);
	CHECK(claim(a, table, "l3", NULL) == TCOPY__LABEL_STATE__LABEL_CLAIMED);
	ts_session_abort(a);
	CHECK(count_labels(store, table) == 2);

	/* forgotten at once; a truncate forgets them all */
	CHECK(ts_store_forget_label(store, table, "l1", &found, &err) == 0 && found);
	CHECK(ts_store_forget_label(store, table, "l1", &found, &err) == 0 && !found);
	CHECK(count_labels(store, table) == 1);
	CHECK(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table, NULL, NULL, &err) == 0);
	CHECK(count_labels(store, table) == 0);
	ts_store_close(store);
}

static void
test_labels_small(void)
{
	labels_case(KIND_SMALL);
}

static void
test_labels_shuffled(void)
{
	labels_case(KIND_SHUFFLED);
}

/*
 * A session with on_conflict 'error' on table that wrote ids[n] (val), not
 * yet prepared; NULL on failure.
 */
static TsSession *
error_session(TsStore *store, uint32_t table, const int64_t *ids, size_t n, int64_t val)
{
	TsError		err;
	uint64_t	sid;
	TsSession  *session = ts_session_begin(store, &sid, &err);

	if (session == NULL)
		return NULL;
	if (ts_session_set_on_conflict(session, table, TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR,
								   &err) != 0 ||
		write_ids(session, table, ids, n, val) != 0)
	{
		ts_session_abort(session);
		return NULL;
	}
	return session;
}

/*
 * A session prepared with on_conflict 'error' claims its keys; across a
 * restart (its keys not read back) it claims every key of the table: a
 * concurrent session with a policy on the table fails with a
 * serialization failure, even with other keys, until the prepared one is
 * resolved; one without a policy does not check.
 */
static void
test_key_claims_restart(void)
{
	TsStore    *store = open_store(SMALL_MEMORY);
	TsError		err;
	uint64_t	sid,
				rows;
	TsSession  *session;
	uint32_t	table;
	int64_t		ids[3] = {1, 2, 3};
	int64_t		other[1] = {1000};

	REQUIRE(store != NULL);
	table = open_table(store, "claims", true);
	session = error_session(store, table, ids, 3, 1);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "claims-1", 1, NULL, &rows, &err), 0);

	/* before the restart: its range, key by key */
	session = error_session(store, table, other, 1, 2);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);

	store = reopen(store, SMALL_MEMORY);
	REQUIRE(store != NULL);
	other[0] = 2000;
	session = error_session(store, table, other, 1, 2);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK_EQ_UINT(err.table_id, table);

	/*
	 * replace claims no keys, but the session in doubt holds its table
	 * back all the same (which answers the error session first, too)
	 */
	session = kind_session(store, KIND_SMALL, table, 1, 5000, 3, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK(strstr(err.message, "claims-1") != NULL);

	/* published: its keys are stored, the claim is gone */
	CHECK_EQ_INT(resolve(store, "claims-1", true, 2, NULL), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	session = kind_session(store, KIND_SMALL, table, 1, 5000, 3, &sid);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	session = error_session(store, table, other, 1, 2);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	session = error_session(store, table, ids + 1, 1, 2);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY);
	check_stats(store, 0);
	ts_store_close(store);
}

int
main(void)
{
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-prepared-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_reopen_resolve_small);
	TC_RUN(test_reopen_resolve_sorted);
	TC_RUN(test_reopen_resolve_shuffled);
	TC_RUN(test_table_ops_small);
	TC_RUN(test_table_ops_sorted);
	TC_RUN(test_table_ops_shuffled);
	TC_RUN(test_commit_table_ops_all);
	TC_RUN(test_publish_stops_all);
	TC_RUN(test_other_stops);
	TC_RUN(test_registry);
	TC_RUN(test_ids_across_restart);
	TC_RUN(test_dropped_meanwhile);
	TC_RUN(test_drop_recreated);
	TC_RUN(test_labels_small);
	TC_RUN(test_labels_shuffled);
	TC_RUN(test_key_claims_restart);
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", data_dir);
	}
	return tc_test_summary();
}
