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
 * load: pgbench_accounts rows aid = start .. start+rows-1 (shuffled with
 * --shuffle) in one write session (truncating the table first with
 * --truncate), committed, aborted (--abort) or prepared (--prepare GID,
 * then left so: the connection's end orphans it).  One batch's rows and
 * values are allocated up front and refilled for every batch.
 */
int
cli_load(const CliOptions *opts)
{
	/* no forms: the table is matched by type names, as before forms */
	static Tcopy__Column columns[] = {
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "aid", TCOPY__KIND__KIND_INT, "int4", -1, ""},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "bid", TCOPY__KIND__KIND_INT, "int4", -1, ""},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "abalance", TCOPY__KIND__KIND_INT, "int4", -1, ""},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "filler", TCOPY__KIND__KIND_BYTES, "bpchar", CLI_FILLER_WIDTH + 4, ""},
	};
	static Tcopy__Column *column_ptrs[] = {&columns[0], &columns[1], &columns[2], &columns[3]};
	static uint32_t key[] = {0};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	uint8_t		filler_bytes[CLI_FILLER_WIDTH];
	ProtobufCBinaryData filler = {CLI_FILLER_WIDTH, filler_bytes};
	TcClient   *client = NULL;
	uint32_t   *order = NULL;	/* aid - start, in sending order (--shuffle) */
	Tcopy__Row *rows = NULL;
	Tcopy__Row **row_ptrs = NULL;
	int64_t    *values = NULL;	/* aid, bid, abalance of each row */
	uint32_t	table_id;
	uint64_t	sent = 0;
	uint64_t	committed = 0;
	double		started;
	double		held = 0;
	int			status = 1;

	schema.n_columns = 4;
	schema.columns = column_ptrs;
	schema.n_key = opts->keyless ? 0 : 1;
	schema.key = opts->keyless ? NULL : key;
	memset(filler_bytes, ' ', sizeof(filler_bytes));

	if (opts->shuffle)
	{
		uint64_t	state = opts->seed;

		order = malloc(opts->rows * sizeof(uint32_t));
		if (order == NULL && opts->rows > 0)
			return cli_fail("out of memory for the order of %" PRIu64 " rows", opts->rows);
		for (uint64_t i = 0; i < opts->rows; i++)
			order[i] = (uint32_t) i;
		/* Fisher-Yates */
		for (uint64_t i = opts->rows; i > 1; i--)
		{
			uint64_t	j = cli_random(&state) % i;
			uint32_t	swap = order[i - 1];

			order[i - 1] = order[j];
			order[j] = swap;
		}
	}
	rows = malloc(opts->batch_rows * sizeof(Tcopy__Row));
	row_ptrs = malloc(opts->batch_rows * sizeof(Tcopy__Row *));
	values = malloc(opts->batch_rows * 3 * sizeof(int64_t));
	if (rows == NULL || row_ptrs == NULL || values == NULL)
	{
		cli_fail("out of memory for a batch of %u rows", opts->batch_rows);
		goto err;
	}
	for (uint32_t i = 0; i < opts->batch_rows; i++)
	{
		tcopy__row__init(&rows[i]);
		rows[i].n_ints = 3;
		rows[i].ints = &values[3 * i];
		rows[i].n_blobs = 1;
		rows[i].blobs = &filler;
		row_ptrs[i] = &rows[i];
	}

	client = cli_connect(opts);
	if (client == NULL)
		goto err;
	tc_client_set_window(client, opts->window);
	started = cli_now();
	if (tc_client_open_table(client, opts->table, &schema, true, &table_id, NULL, NULL) < 0 ||
		tc_client_begin(client, NULL) < 0)
		goto client_err;
	if (opts->truncate &&
		tc_client_session_table_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table_id) < 0)
		goto client_err;
	if (opts->on_conflict != NULL &&
		tc_client_session_on_conflict(client, table_id,
									  strcmp(opts->on_conflict, "error") == 0 ?
									  TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR :
									  strcmp(opts->on_conflict, "ignore") == 0 ?
									  TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE :
									  TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE) < 0)
		goto client_err;

	batch.table_id = table_id;
	batch.rows = row_ptrs;
	while (sent < opts->rows)
	{
		uint64_t	n = opts->rows - sent;

		if (n > opts->batch_rows)
			n = opts->batch_rows;
		for (uint64_t i = 0; i < n; i++)
		{
			int64_t		aid = opts->start + (int64_t) (order ? order[sent + i] : sent + i);

			values[3 * i] = aid;
			values[3 * i + 1] = (aid - 1) / CLI_ROWS_PER_BRANCH + 1;
			values[3 * i + 2] = opts->value;
		}
		batch.seq++;
		batch.n_rows = n;
		if (tc_client_write_batch(client, &batch) < 0)
			goto client_err;
		sent += n;
	}
	if (opts->has_again)
	{
		values[0] = opts->again;
		values[1] = (opts->again - 1) / CLI_ROWS_PER_BRANCH + 1;
		values[2] = opts->value + 1;
		batch.seq++;
		batch.n_rows = 1;
		if (tc_client_write_batch(client, &batch) < 0)
			goto client_err;
		sent++;
	}

	if (opts->hold)
	{
		double		hold_started;
		int			c;

		if (tc_client_wait_acks(client) < 0)
			goto client_err;
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
			goto client_err;
		printf("aborted %" PRIu64 " rows\n", sent);
	}
	else if (opts->prepare_gid != NULL)
	{
		double		elapsed;

		if (tc_client_prepare(client, sent, opts->prepare_gid) < 0)
			goto client_err;
		elapsed = cli_now() - started - held;
		printf("prepared %" PRIu64 " rows under \"%s\" in %.3f s\n", sent,
			   opts->prepare_gid, elapsed);
	}
	else
	{
		double		elapsed;

		if (tc_client_commit(client, sent, &committed) < 0)
			goto client_err;
		elapsed = cli_now() - started - held;
		printf("committed %" PRIu64 " rows in %.3f s (%.0f rows/s)\n",
			   committed, elapsed, elapsed > 0 ? (double) committed / elapsed : 0.0);
	}
	status = 0;
	goto err;

client_err:
	cli_client_fail(client);
err:
	tc_client_close(client);
	free(values);
	free(row_ptrs);
	free(rows);
	free(order);
	return status;
}
