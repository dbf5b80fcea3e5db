/*
 * test_in_doubt.c
 *		Writes held back behind in-doubt prepared sessions (ts_in_doubt.c),
 *		driven through the store: a session prepared, the store reopened
 *		(restored in doubt) or its connection detached (orphaned); then
 *		another session's one-step commit or prepare of a table it wrote,
 *		truncates or drops waits for it, up to in_doubt_wait_ms, and fails
 *		with ERROR_SERIALIZATION naming it and the table, leaving nothing
 *		prepared or staged; a Resolve by another thread during the wait
 *		lets the waiting commit through at once; give_up ends the wait
 *		early; another table is not held, nor a drop, nor a session whose
 *		prepared owner is still connected.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_session_int.h"

static char data_dir[256];

#define WAIT_MS 1500			/* the store's in_doubt_wait_ms here */

/* ---- helpers ---- */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static TsStore *
open_store(int wait_ms)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;

	ts_store_default_options(&options);
	options.in_doubt_wait_ms = wait_ms;
	store = ts_store_open(data_dir, &options, &err);
	if (store == NULL)
		fprintf(stderr, "open failed: %s\n", err.message);
	return store;
}

/* Table name of (id int8 key, val int8). */
static uint32_t
open_table(TsStore *store, const char *name)
{
	Tcopy__Column columns[2];
	Tcopy__Column *column_ptrs[2] = {&columns[0], &columns[1]};
	uint32_t	key[1] = {0};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	const char *names[2] = {"id", "val"};
	TsError		err;
	uint32_t	id = 0;
	bool		created;

	for (int i = 0; i < 2; i++)
	{
		tcopy__column__init(&columns[i]);
		columns[i].name = (char *) names[i];
		columns[i].kind = TCOPY__KIND__KIND_INT;
		columns[i].type_name = (char *) "int8";
	}
	schema.n_columns = 2;
	schema.columns = column_ptrs;
	schema.n_key = 1;
	schema.key = key;
	if (ts_store_open_table(store, name, &schema, true, &id, &created, NULL, &err) != 0)
		fprintf(stderr, "open table failed: %s\n", err.message);
	return id;
}

/* A session that wrote row (id, val) to table. */
static TsSession *
row_session(TsStore *store, uint32_t table, int64_t id, int64_t val)
{
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	Tcopy__Row row = TCOPY__ROW__INIT;
	Tcopy__Row *rows[1] = {&row};
	int64_t		ints[2] = {id, val};
	uint64_t	sid;
	TsError		err;
	TsSession  *session = ts_session_begin(store, &sid, &err);

	if (session == NULL)
		return NULL;
	row.ints = ints;
	row.n_ints = 2;
	batch.seq = 1;
	batch.table_id = table;
	batch.rows = rows;
	batch.n_rows = 1;
	if (ts_session_write(session, &batch, NULL, &err) != 0)
	{
		fprintf(stderr, "write failed: %s\n", err.message);
		ts_session_abort(session);
		return NULL;
	}
	return session;
}

/* Prepare row (id, val) of table under gid, owned by owner. */
static int
prepare_row(TsStore *store, uint32_t table, int64_t id, int64_t val, const char *gid,
			uint64_t owner)
{
	TsSession  *session = row_session(store, table, id, val);
	uint64_t	rows;
	TsError		err;

	if (session == NULL)
		return -1;
	if (ts_session_prepare_gid(session, gid, owner, NULL, &rows, &err) != 0)
	{
		fprintf(stderr, "prepare failed: %s\n", err.message);
		return -1;
	}
	return 0;
}

/* val of id in table, -1 when absent. */
static int64_t
val_of(TsStore *store, uint32_t table, int64_t id)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;
	TsError		err;
	TsScan	   *sc;
	TcArena		arena;
	int64_t		val = -1;

	request.table_id = table;
	sc = ts_scan_open(store, &request, &err);
	if (sc == NULL)
		return -2;
	tc_arena_init(&arena, 64 * 1024);
	do
	{
		tc_arena_reset(&arena);
		if (ts_scan_next(sc, &arena, &batch, &err) != 0)
			break;
		for (size_t i = 0; i < batch.n_rows; i++)
			if (batch.rows[i]->ints[0] == id)
				val = batch.rows[i]->ints[1];
	} while (!batch.done);
	ts_scan_close(sc);
	tc_arena_free(&arena);
	return val;
}

/* Open a scan of table (refuse_in_doubt as given); its error code, 0 if opened. */
static int
scan_refused(TsStore *store, uint32_t table, bool refuse_in_doubt)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	TsError		err;
	TsScan	   *sc;

	memset(&err, 0, sizeof(err));
	request.table_id = table;
	request.refuse_in_doubt = refuse_in_doubt;
	sc = ts_scan_open(store, &request, &err);
	if (sc == NULL)
		return err.code;
	ts_scan_close(sc);
	return 0;
}

static Tcopy__ResolveOutcome
resolve(TsStore *store, const char *gid, bool commit, uint64_t owner)
{
	Tcopy__ResolveOutcome outcome = TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE;
	uint64_t	rows;
	TsError		err;

	if (ts_store_resolve(store, gid, commit, owner, NULL, &outcome, &rows, &err) != 0)
		fprintf(stderr, "resolve of \"%s\" failed: %s\n", gid, err.message);
	return outcome;
}

static void
check_nothing_left(TsStore *store, uint64_t prepared)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;

	ts_store_stats(store, &stats);
	CHECK_EQ_UINT(stats.sessions_prepared, prepared);
	CHECK_EQ_UINT(stats.sessions_open, 0);
	CHECK_EQ_UINT(stats.staged_bytes, 0);
}

/* A thread that resolves gid (commit) after delay_ms, as recovery would. */
typedef struct Resolver
{
	TsStore    *store;
	const char *gid;
	int			delay_ms;
	Tcopy__ResolveOutcome outcome;
} Resolver;

static void *
resolver_main(void *arg)
{
	Resolver   *r = arg;

	usleep((useconds_t) r->delay_ms * 1000);
	r->outcome = resolve(r->store, r->gid, true, 99);
	return NULL;
}

/* give_up that says yes from its second question on. */
static bool
give_up_second(void *arg)
{
	int		   *asked = arg;

	return ++*asked >= 2;
}

/* ---- tests ---- */

/*
 * Restored in doubt: a commit and a prepare of its table wait the bound,
 * then fail; another table, and a drop of the held one, go through.
 */
static void
test_restored_held(void)
{
	TsStore    *store = open_store(WAIT_MS);
	uint32_t	held,
				free_table;
	TsSession  *session;
	uint64_t	rows;
	TsError		err;
	int64_t		start;

	REQUIRE(store != NULL);
	held = open_table(store, "held");
	free_table = open_table(store, "free");
	REQUIRE(prepare_row(store, held, 1, 10, "older", 1) == 0);
	ts_store_close(store);
	store = open_store(WAIT_MS);
	REQUIRE(store != NULL);

	session = row_session(store, held, 1, 20);
	REQUIRE(session != NULL);
	start = now_ms();
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK(now_ms() - start >= WAIT_MS - 50);
	CHECK(now_ms() - start < WAIT_MS + 1500);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK_EQ_UINT(err.table_id, held);
	CHECK(strstr(err.message, "\"older\"") != NULL);
	CHECK(strstr(err.message, "\"held\"") != NULL);
	CHECK(strstr(err.message, "overwritten") != NULL);

	session = row_session(store, held, 1, 30);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_prepare_gid(session, "newer", 2, NULL, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	/* a refused prepare leaves nothing prepared under its gid */
	CHECK_EQ_INT(resolve(store, "newer", false, 2), TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND);
	check_nothing_left(store, 1);

	/* another table is not held */
	session = row_session(store, free_table, 1, 40);
	REQUIRE(session != NULL);
	start = now_ms();
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK(now_ms() - start < 500);
	CHECK_EQ_INT(val_of(store, free_table, 1), 40);

	/* a scan that asks is refused on the held table only, before any row */
	CHECK_EQ_INT(scan_refused(store, held, true), TCOPY__ERROR_CODE__ERROR_IN_DOUBT);
	CHECK_EQ_INT(scan_refused(store, held, false), 0);
	CHECK_EQ_INT(scan_refused(store, free_table, true), 0);

	/* the older session is published, its row the older one's */
	CHECK_EQ_INT(resolve(store, "older", true, 3), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_INT(scan_refused(store, held, true), 0);
	CHECK_EQ_INT(val_of(store, held, 1), 10);
	session = row_session(store, held, 1, 50);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_INT(val_of(store, held, 1), 50);
	check_nothing_left(store, 0);
	ts_store_close(store);
}

/*
 * Resolves during the wait (two sessions hold the table) let the waiting
 * commit through once both are done, its row on top; then a prepare.
 */
static void
test_resolved_during_wait(void)
{
	TsStore    *store = open_store(10000);
	uint32_t	table;
	TsSession  *session;
	pthread_t	threads[2];
	Resolver	r[2];
	uint64_t	rows;
	TsError		err;
	int64_t		start,
				took;

	REQUIRE(store != NULL);
	table = open_table(store, "during");
	REQUIRE(prepare_row(store, table, 1, 10, "during-1", 1) == 0);
	REQUIRE(prepare_row(store, table, 2, 10, "during-2", 2) == 0);
	ts_store_close(store);
	store = open_store(10000);
	REQUIRE(store != NULL);

	session = row_session(store, table, 1, 20);
	REQUIRE(session != NULL);
	r[0] = (Resolver) {store, "during-1", 300, TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE};
	r[1] = (Resolver) {store, "during-2", 600, TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE};
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&threads[i], NULL, resolver_main, &r[i]) == 0);
	start = now_ms();
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	took = now_ms() - start;
	for (int i = 0; i < 2; i++)
	{
		pthread_join(threads[i], NULL);
		CHECK_EQ_INT(r[i].outcome, TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	}
	CHECK(took >= 550);
	CHECK(took < 3000);
	CHECK_EQ_INT(val_of(store, table, 1), 20);
	CHECK_EQ_INT(val_of(store, table, 2), 10);

	/* orphaned, no restart: a prepare waits for it */
	REQUIRE(prepare_row(store, table, 2, 30, "during-3", 3) == 0);
	ts_store_prepared_detach(store, 3);
	session = row_session(store, table, 2, 40);
	REQUIRE(session != NULL);
	r[0] = (Resolver) {store, "during-3", 300, TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE};
	REQUIRE(pthread_create(&threads[0], NULL, resolver_main, &r[0]) == 0);
	start = now_ms();
	CHECK_EQ_INT(ts_session_prepare_gid(session, "during-4", 4, NULL, &rows, &err), 0);
	took = now_ms() - start;
	pthread_join(threads[0], NULL);
	CHECK_EQ_INT(r[0].outcome, TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK(took >= 250);
	CHECK(took < 3000);
	CHECK_EQ_INT(resolve(store, "during-4", true, 4), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_INT(val_of(store, table, 2), 40);
	check_nothing_left(store, 0);
	ts_store_close(store);
}

/*
 * Orphaned by its connection's end, no restart: held the same way, and
 * so are a staged TRUNCATE and one outside a session; a drop is not.  A
 * prepared session whose owner is connected holds nothing.
 */
static void
test_orphaned_held(void)
{
	TsStore    *store = open_store(0);
	uint32_t	table,
				other;
	TsSession  *session;
	uint64_t	sid,
				rows;
	TsError		err;

	REQUIRE(store != NULL);
	table = open_table(store, "orphan");
	other = open_table(store, "orphan_other");
	REQUIRE(prepare_row(store, table, 1, 10, "owned", 7) == 0);
	session = row_session(store, table, 1, 20);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);

	ts_store_prepared_detach(store, 7);
	session = row_session(store, table, 2, 20);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK(strstr(err.message, "\"owned\"") != NULL);

	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table, &err), 0);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK_EQ_INT(ts_store_table_op(store, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table,
								   NULL, NULL, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK(strstr(err.message, "this truncate") != NULL);
	CHECK_EQ_INT(val_of(store, table, 1), 20);

	/* a Resolve that failed leaves it in doubt, now its connection's */
	store->test_stop_at = "before-record-delete";
	CHECK_EQ_INT(resolve(store, "owned", true, 8), TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE);
	store->test_stop_at = NULL;
	session = row_session(store, table, 2, 20);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_SERIALIZATION);
	CHECK_EQ_INT(resolve(store, "owned", true, 8), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	CHECK_EQ_INT(val_of(store, table, 1), 10);
	ts_store_close(store);

	/* give_up stops a long wait */

	store = open_store(60000);
	REQUIRE(store != NULL);
	REQUIRE(prepare_row(store, other, 1, 10, "gives-up", 7) == 0);
	ts_store_prepared_detach(store, 7);
	session = row_session(store, other, 1, 20);
	REQUIRE(session != NULL);
	{
		int			asked = 0;
		int64_t		start = now_ms();

		ts_session_set_give_up(session, give_up_second, &asked);
		CHECK_EQ_INT(ts_session_commit(session, &rows, &err), -1);
		CHECK(now_ms() - start < 2000);
		CHECK_EQ_INT(asked, 2);
		CHECK(strstr(err.message, "went away") != NULL);
	}

	/* a drop goes through: the publish deletes the older rows with it */
	session = ts_session_begin(store, &sid, &err);
	REQUIRE(session != NULL);
	CHECK_EQ_INT(ts_session_table_op(session, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, other, &err), 0);
	CHECK_EQ_INT(ts_session_commit(session, &rows, &err), 0);
	CHECK_EQ_INT(resolve(store, "gives-up", true, 8), TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE);
	check_nothing_left(store, 0);
	ts_store_close(store);
}

int
main(void)
{
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-in-doubt-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_restored_held);
	TC_RUN(test_resolved_during_wait);
	TC_RUN(test_orphaned_held);
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", data_dir);
	}
	return tc_test_summary();
}
