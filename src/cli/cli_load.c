/*
 * cli_load.c
 *		tserver-cli load: pgbench_accounts-shaped rows in one write session,
 *		built the way the extension builds them: one batch's Row structs and
 *		value arrays are allocated once and refilled for every batch, and
 *		each batch is packed into the client's reused output buffer, so that
 *		loading allocates nothing per row or per batch.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_FILLER_WIDTH 84		/* pgbench_accounts.filler is char(84) */
#define CLI_ROWS_PER_BRANCH 100000	/* as pgbench's naccounts */

/* splitmix64: a small seeded generator, so that --shuffle is repeatable. */
static uint64_t
cli_random(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * The rows' order as sent, aid - start (--shuffle, a Fisher-Yates shuffle
 * of opts->seed): malloc'ed, or NULL in aid order, and NULL with *failed
 * when out of memory.
 */
static uint32_t *
load_order(const CliOptions *opts, bool *failed)
{
	uint64_t	state = opts->seed;
	uint32_t   *order;

	*failed = false;
	if (!opts->shuffle)
		return NULL;
	order = malloc(opts->rows * sizeof(uint32_t));
	if (order == NULL && opts->rows > 0)
	{
		*failed = true;
		return NULL;
	}
	for (uint64_t i = 0; i < opts->rows; i++)
		order[i] = (uint32_t) i;
	for (uint64_t i = opts->rows; i > 1; i--)
	{
		uint64_t	j = cli_random(&state) % i;
		uint32_t	swap = order[i - 1];

		order[i - 1] = order[j];
		order[j] = swap;
	}
	return order;
}

/* One batch's rows, reused: aid, bid and abalance each, and the filler. */
typedef struct LoadBatch
{
	Tcopy__WriteBatch batch;
	Tcopy__Row *rows;
	Tcopy__Row **row_ptrs;
	int64_t    *values;			/* aid, bid, abalance of each row */
	uint8_t		filler_bytes[CLI_FILLER_WIDTH];
	ProtobufCBinaryData filler;
} LoadBatch;

/* Make b's rows for batches of opts->batch_rows; false when out of memory. */
static bool
load_batch_init(LoadBatch *b, const CliOptions *opts)
{
	tcopy__write_batch__init(&b->batch);
	memset(b->filler_bytes, ' ', sizeof(b->filler_bytes));
	b->filler.len = CLI_FILLER_WIDTH;
	b->filler.data = b->filler_bytes;
	b->rows = malloc(opts->batch_rows * sizeof(Tcopy__Row));
	b->row_ptrs = malloc(opts->batch_rows * sizeof(Tcopy__Row *));
	b->values = malloc(opts->batch_rows * 3 * sizeof(int64_t));
	if (b->rows == NULL || b->row_ptrs == NULL || b->values == NULL)
		return false;
	for (uint32_t i = 0; i < opts->batch_rows; i++)
	{
		tcopy__row__init(&b->rows[i]);
		b->rows[i].n_ints = 3;
		b->rows[i].ints = &b->values[3 * i];
		b->rows[i].n_blobs = 1;
		b->rows[i].blobs = &b->filler;
		b->row_ptrs[i] = &b->rows[i];
	}
	b->batch.rows = b->row_ptrs;
	return true;
}

static void
load_batch_free(LoadBatch *b)
{
	free(b->values);
	free(b->row_ptrs);
	free(b->rows);
}

/*
 * Open opts->table (created as pgbench_accounts when missing) and begin
 * its session: truncated first, its on_conflict set, when asked.  The
 * table's id into *table_id; 0, or -1 (the client's error).
 */
static int
load_begin(TcClient *client, const CliOptions *opts, uint32_t *table_id)
{
	/* no forms: the table is matched by type names, as before forms */
	static Tcopy__Column columns[] = {
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "aid", TCOPY__KIND__KIND_INT, "int4", -1, "", NULL, false},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "bid", TCOPY__KIND__KIND_INT, "int4", -1, "", NULL, false},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "abalance", TCOPY__KIND__KIND_INT, "int4", -1, "", NULL, false},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "filler", TCOPY__KIND__KIND_BYTES, "bpchar", CLI_FILLER_WIDTH + 4, "", NULL, false},
	};
	static Tcopy__Column *column_ptrs[] = {&columns[0], &columns[1], &columns[2], &columns[3]};
	static uint32_t key[] = {0};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;

	schema.n_columns = 4;
	schema.columns = column_ptrs;
	schema.n_key = opts->keyless ? 0 : 1;
	schema.key = opts->keyless ? NULL : key;
	if (tc_client_open_table(client, opts->table, &schema, true, table_id, NULL, NULL) < 0 ||
		tc_client_begin(client, NULL) < 0)
		return -1;
	if (opts->truncate &&
		tc_client_session_table_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, *table_id) < 0)
		return -1;
	if (opts->on_conflict != NULL &&
		tc_client_session_on_conflict(client, *table_id,
									  strcmp(opts->on_conflict, "error") == 0 ?
									  TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR :
									  strcmp(opts->on_conflict, "ignore") == 0 ?
									  TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE :
									  TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE) < 0)
		return -1;
	return 0;
}

/*
 * Send the rows in batches (in order's order, when shuffled), and the row
 * of --again.  The rows sent into *sent; 0, or -1 (the client's error).
 */
static int
load_send(TcClient *client, const CliOptions *opts, const uint32_t *order, LoadBatch *b,
		  uint64_t *sent)
{
	int64_t    *values = b->values;

	*sent = 0;
	while (*sent < opts->rows)
	{
		uint64_t	n = opts->rows - *sent;

		if (n > opts->batch_rows)
			n = opts->batch_rows;
		for (uint64_t i = 0; i < n; i++)
		{
			int64_t		aid = opts->start + (int64_t) (order ? order[*sent + i] : *sent + i);

			values[3 * i] = aid;
			values[3 * i + 1] = (aid - 1) / CLI_ROWS_PER_BRANCH + 1;
			values[3 * i + 2] = opts->value;
		}
		b->batch.seq++;
		b->batch.n_rows = n;
		if (tc_client_write_batch(client, &b->batch) < 0)
			return -1;
		*sent += n;
	}
	if (opts->has_again)
	{
		values[0] = opts->again;
		values[1] = (opts->again - 1) / CLI_ROWS_PER_BRANCH + 1;
		values[2] = opts->value + 1;
		b->batch.seq++;
		b->batch.n_rows = 1;
		if (tc_client_write_batch(client, &b->batch) < 0)
			return -1;
		(*sent)++;
	}
	return 0;
}

/*
 * End the session of sent rows as asked (held until a line on stdin
 * first, with --hold): abort, prepare, or commit, saying so with the time
 * since started, the hold left out.  0, or -1 (the client's error).
 */
static int
load_end(TcClient *client, const CliOptions *opts, uint64_t sent, double started)
{
	double		held = 0;
	uint64_t	committed = 0;
	double		elapsed;

	if (opts->hold)
	{
		double		hold_started;
		int			c;

		if (tc_client_wait_acks(client) < 0)
			return -1;
		printf("staged %" PRIu64 " rows\n", sent);
		fflush(stdout);
		hold_started = cli_now();
		while ((c = getchar()) != EOF && c != '\n')
			;
		held = cli_now() - hold_started;
	}
	if (opts->abort)
	{
		if (tc_client_abort(client) < 0)
			return -1;
		printf("aborted %" PRIu64 " rows\n", sent);
	}
	else if (opts->prepare_gid != NULL)
	{
		if (tc_client_prepare(client, sent, opts->prepare_gid) < 0)
			return -1;
		elapsed = cli_now() - started - held;
		printf("prepared %" PRIu64 " rows under \"%s\" in %.3f s\n", sent,
			   opts->prepare_gid, elapsed);
	}
	else
	{
		if (tc_client_commit(client, sent, &committed) < 0)
			return -1;
		elapsed = cli_now() - started - held;
		printf("committed %" PRIu64 " rows in %.3f s (%.0f rows/s)\n",
			   committed, elapsed, elapsed > 0 ? (double) committed / elapsed : 0.0);
	}
	return 0;
}

/*
 * load: pgbench_accounts rows aid = start .. start+rows-1 (shuffled with
 * --shuffle) in one write session (truncating the table first with
 * --truncate), committed, aborted (--abort) or prepared (--prepare GID,
 * then left so: the connection's end orphans it).  One batch's rows and
 * values are allocated up front and refilled for every batch.
 */
int
cli_load(const CliOptions *opts)
{
	LoadBatch	b = {0};
	TcClient   *client = NULL;
	uint32_t   *order;
	uint32_t	table_id;
	uint64_t	sent = 0;
	double		started;
	bool		failed;
	int			status = 1;

	order = load_order(opts, &failed);
	if (failed)
		return cli_fail("out of memory for the order of %" PRIu64 " rows", opts->rows);
	if (!load_batch_init(&b, opts))
	{
		cli_fail("out of memory for a batch of %u rows", opts->batch_rows);
		goto done;
	}
	client = cli_connect(opts);
	if (client == NULL)
		goto done;
	tc_client_set_window(client, opts->window);
	started = cli_now();
	if (load_begin(client, opts, &table_id) != 0)
		goto client_err;
	b.batch.table_id = table_id;
	if (load_send(client, opts, order, &b, &sent) != 0 ||
		load_end(client, opts, sent, started) != 0)
		goto client_err;
	status = 0;
	goto done;

client_err:
	cli_client_fail(client);
done:
	tc_client_close(client);
	load_batch_free(&b);
	free(order);
	return status;
}
