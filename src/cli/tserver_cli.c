/*
 * tserver_cli.c
 *		tserver-cli: talk to a tserver from the shell.  Tests, the benchmark
 *		and operators use it to check a server, load and read back
 *		pgbench_accounts-shaped tables, and feed the server raw bytes.
 *
 * Exit status: 0 on success, 1 when something failed (the reason on
 * stderr), 2 on a usage error.
 *
 * load builds its rows the way the extension does: one batch's Row
 * structs and value arrays are allocated once and refilled for every
 * batch, and each batch is packed into the client's reused output buffer,
 * so that loading allocates nothing per row or per batch.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tc_auth.h"
#include "tc_client.h"
#include "tc_frame.h"

#define CLI_DEFAULT_ADDRESS "unix:/tmp/tcopy.sock"
#define CLI_CLIENT_NAME "tserver-cli"
#define CLI_FILLER_WIDTH 84		/* pgbench_accounts.filler is char(84) */
#define CLI_ROWS_PER_BRANCH 100000	/* as pgbench's naccounts */
#define CLI_STR(x) CLI_STR_(x)		/* a numeric macro as a string literal */
#define CLI_STR_(x) #x

/* Command-line settings; which ones apply depends on the command. */
typedef struct CliOptions
{
	const char *address;
	const char *token_file;
	const char *token;			/* token_buf once read; NULL: none */
	char		token_buf[TC_TOKEN_MAX + 1];
	const char *table;
	/* load */
	uint64_t	rows;
	bool		has_rows;
	int64_t		start;
	bool		shuffle;
	uint64_t	seed;
	int64_t		value;
	uint32_t	batch_rows;		/* load: rows per batch; scan: 0 = server's */
	unsigned	window;
	bool		abort;
	bool		hold;
	bool		keyless;
	/* scan, create */
	const char *columns;
	bool		has_lower;
	int64_t		lower;
	bool		has_upper;
	int64_t		upper;
	bool		exclusive;
	uint64_t	limit;
	const char *format;
	const char *key;
	/* raw */
	const char *hex;
} CliOptions;

typedef int (*CliCommandFn) (const CliOptions *opts);

typedef struct CliCommand
{
	const char *name;
	CliCommandFn run;
	bool		takes_table;
	const struct option *options;
} CliCommand;

enum
{
	OPT_ROWS = 256,
	OPT_START,
	OPT_SHUFFLE,
	OPT_SEED,
	OPT_VALUE,
	OPT_BATCH_ROWS,
	OPT_WINDOW,
	OPT_ABORT,
	OPT_HOLD,
	OPT_KEYLESS,
	OPT_COLUMNS,
	OPT_LOWER,
	OPT_UPPER,
	OPT_EXCLUSIVE,
	OPT_LIMIT,
	OPT_FORMAT,
	OPT_KEY,
	OPT_HEX,
	OPT_ADDRESS,
	OPT_TOKEN_FILE
};

static const struct option global_options[] = {
	{"address", required_argument, NULL, OPT_ADDRESS},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{NULL, 0, NULL, 0}
};

static const struct option no_options[] = {
	{NULL, 0, NULL, 0}
};

static const struct option load_options[] = {
	{"rows", required_argument, NULL, OPT_ROWS},
	{"start", required_argument, NULL, OPT_START},
	{"shuffle", no_argument, NULL, OPT_SHUFFLE},
	{"seed", required_argument, NULL, OPT_SEED},
	{"value", required_argument, NULL, OPT_VALUE},
	{"batch-rows", required_argument, NULL, OPT_BATCH_ROWS},
	{"window", required_argument, NULL, OPT_WINDOW},
	{"abort", no_argument, NULL, OPT_ABORT},
	{"hold", no_argument, NULL, OPT_HOLD},
	{"keyless", no_argument, NULL, OPT_KEYLESS},
	{NULL, 0, NULL, 0}
};

static const struct option scan_options[] = {
	{"columns", required_argument, NULL, OPT_COLUMNS},
	{"lower", required_argument, NULL, OPT_LOWER},
	{"upper", required_argument, NULL, OPT_UPPER},
	{"exclusive", no_argument, NULL, OPT_EXCLUSIVE},
	{"limit", required_argument, NULL, OPT_LIMIT},
	{"batch-rows", required_argument, NULL, OPT_BATCH_ROWS},
	{"format", required_argument, NULL, OPT_FORMAT},
	{NULL, 0, NULL, 0}
};

static const struct option create_options[] = {
	{"columns", required_argument, NULL, OPT_COLUMNS},
	{"key", required_argument, NULL, OPT_KEY},
	{NULL, 0, NULL, 0}
};

static const struct option raw_options[] = {
	{"hex", required_argument, NULL, OPT_HEX},
	{NULL, 0, NULL, 0}
};

static const char usage_text[] =
"Usage: tserver-cli [--address ADDR] [--token-file FILE] COMMAND [options]\n"
"\n"
"ADDR is unix:PATH or tcp:HOST:PORT (default: $TCOPY_ADDRESS, else\n"
CLI_DEFAULT_ADDRESS "); FILE holds the token the server asks for.\n"
"\n"
"Commands:\n"
"  ping                    print \"ok SERVER-NAME\"\n"
"  stats                   print the server's counters, \"name: value\" each\n"
"  load TABLE --rows N     load pgbench_accounts-shaped rows in one session\n"
"      [--start K]         first aid (default 1)\n"
"      [--shuffle] [--seed S]  send the aids in a shuffled order\n"
"      [--value V]         abalance of every row (default 0)\n"
"      [--batch-rows B]    rows per write batch (default " CLI_STR(TC_BATCH_ROWS_DEFAULT) ")\n"
"      [--window W]        batches in flight (default " CLI_STR(TC_CLIENT_WINDOW_DEFAULT) ")\n"
"      [--keyless]         the table has no key (generated row ids)\n"
"      [--abort]           abort instead of committing\n"
"      [--hold]            print \"staged N rows\" and wait for a line on stdin\n"
"                          before committing\n"
"  scan TABLE              print the table's committed rows\n"
"      [--columns C,...]   projection (default: all columns)\n"
"      [--lower V] [--upper V] [--exclusive]\n"
"                          bounds on the first key column (default inclusive)\n"
"      [--limit N] [--batch-rows B]\n"
"      [--format csv|count|checksum]  (default csv)\n"
"  create TABLE --columns NAME:KIND[:TYPE[:TYPMOD]],... [--key C,...]\n"
"                          create a table; KIND is bool, int, float or bytes\n"
"  truncate TABLE          remove every row of a table\n"
"  drop TABLE              drop a table\n"
"  raw --hex HEX           after the handshake, send these bytes and print the\n"
"                          type of the frame that comes back\n"
"\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n";

/* Report a usage error and exit 2. */
static void cli_usage_error(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));

static void
cli_usage_error(const char *fmt,...)
{
	va_list		args;

	fputs("tserver-cli: ", stderr);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputs("\nTry \"tserver-cli --help\" for more information.\n", stderr);
	exit(2);
}

/* Report a failure on stderr; returns the exit status 1. */
static int	cli_fail(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

static int
cli_fail(const char *fmt,...)
{
	va_list		args;

	fputs("tserver-cli: ", stderr);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
	return 1;
}

/* Parse an integer option value in [min, max], or exit with a usage error. */
static int64_t
cli_parse_int(const char *option, const char *text, int64_t min, int64_t max)
{
	char	   *end;
	long long	value;

	errno = 0;
	value = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || value < min || value > max)
		cli_usage_error("invalid value \"%s\" for %s (expected an integer from %" PRId64
						" to %" PRId64 ")", text, option, min, max);
	return (int64_t) value;
}

/* The index of column name in schema, or -1. */
static int
cli_find_column(const Tcopy__Schema *schema, const char *name, size_t namelen)
{
	for (size_t i = 0; i < schema->n_columns; i++)
	{
		if (strlen(schema->columns[i]->name) == namelen &&
			memcmp(schema->columns[i]->name, name, namelen) == 0)
			return (int) i;
	}
	return -1;
}

/*
 * Turn the comma-separated column names in list into indexes of schema
 * columns, in *indexes (malloc'ed).  Returns the count, -1 with a message
 * on stderr when a name is unknown.
 */
static int
cli_column_indexes(const Tcopy__Schema *schema, const char *table, const char *list,
				   uint32_t **indexes)
{
	size_t		count = 1;
	int			n = 0;
	const char *name = list;

	for (const char *p = list; *p; p++)
		count += (*p == ',');
	*indexes = malloc(count * sizeof(uint32_t));
	if (*indexes == NULL)
	{
		cli_fail("out of memory");
		return -1;
	}
	for (;;)
	{
		size_t		len = strcspn(name, ",");
		int			index = cli_find_column(schema, name, len);

		if (index < 0)
		{
			cli_fail("table \"%s\" has no column \"%.*s\"", table, (int) len, name);
			free(*indexes);
			*indexes = NULL;
			return -1;
		}
		(*indexes)[n++] = (uint32_t) index;
		if (name[len] == '\0')
			break;
		name += len + 1;
	}
	return n;
}

/* Connect as opts say; NULL with the reason on stderr. */
static TcClient *
cli_connect(const CliOptions *opts)
{
	char		err[512];
	TcClient   *client;

	client = tc_client_connect(opts->address, opts->token, CLI_CLIENT_NAME,
							   err, sizeof(err));
	if (client == NULL)
		cli_fail("%s", err);
	return client;
}

/* Report the client's failure; returns the exit status 1. */
static int
cli_client_fail(TcClient *client)
{
	return cli_fail("%s", tc_client_error(client));
}

/* Seconds on the monotonic clock. */
static double
cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* ping: the handshake alone proves the server answers. */
static int
cli_ping(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);

	if (client == NULL)
		return 1;
	printf("ok %s\n", tc_client_server_name(client));
	tc_client_close(client);
	return 0;
}

/* stats: every field of Stats, in the order the protocol declares them. */
static int
cli_stats(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__Stats *stats;

	if (client == NULL)
		return 1;
	if (tc_client_stats(client, &stats) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	for (unsigned i = 0; i < tcopy__stats__descriptor.n_fields; i++)
	{
		const ProtobufCFieldDescriptor *field = &tcopy__stats__descriptor.fields[i];

		if (field->type == PROTOBUF_C_TYPE_UINT64)
			printf("%s: %" PRIu64 "\n", field->name,
				   *(const uint64_t *) ((const char *) stats + field->offset));
	}
	tcopy__stats__free_unpacked(stats, NULL);
	tc_client_close(client);
	return 0;
}

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
 * --shuffle) in one write session.  One batch's rows and values are
 * allocated up front and refilled for every batch.
 */
static int
cli_load(const CliOptions *opts)
{
	static Tcopy__Column columns[] = {
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "aid", TCOPY__KIND__KIND_INT, "int4", -1},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "bid", TCOPY__KIND__KIND_INT, "int4", -1},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "abalance", TCOPY__KIND__KIND_INT, "int4", -1},
		{PROTOBUF_C_MESSAGE_INIT(&tcopy__column__descriptor), "filler", TCOPY__KIND__KIND_BYTES, "bpchar", CLI_FILLER_WIDTH + 4},
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

/* Append len bytes to buf; false when out of memory. */
static bool
cli_append(TcBuf *buf, const void *bytes, size_t len)
{
	if (!tc_buf_reserve(buf, len))
		return false;
	memcpy(buf->data + buf->len, bytes, len);
	buf->len += len;
	return true;
}

/*
 * Append row's CSV line (no newline) to line, its values laid out by
 * kinds[ncolumns]; add its INT values to *sum (wrapping).  Returns 0, or -1
 * with a message on stderr when the row does not fit the kinds or memory
 * runs out.
 */
static int
cli_format_row(const Tcopy__Row *row, const Tcopy__Kind *kinds, size_t ncolumns,
			   TcBuf *line, uint64_t *sum)
{
	size_t		next_int = 0;
	size_t		next_float = 0;
	size_t		next_blob = 0;
	size_t		next_null = 0;

	for (size_t c = 0; c < ncolumns; c++)
	{
		char		number[32];
		int			numlen = 0;

		if (c > 0 && !cli_append(line, ",", 1))
			goto oom;
		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			next_null++;
			continue;
		}
		switch (kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (next_int >= row->n_ints)
					goto misfit;
				if (kinds[c] == TCOPY__KIND__KIND_BOOL)
					numlen = snprintf(number, sizeof(number), "%s",
									  row->ints[next_int] ? "t" : "f");
				else
				{
					numlen = snprintf(number, sizeof(number), "%" PRId64, row->ints[next_int]);
					*sum += (uint64_t) row->ints[next_int];
				}
				next_int++;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (next_float >= row->n_floats)
					goto misfit;
				numlen = snprintf(number, sizeof(number), "%.17g", row->floats[next_float++]);
				break;
			case TCOPY__KIND__KIND_BYTES:
				{
					const ProtobufCBinaryData *blob;

					if (next_blob >= row->n_blobs)
						goto misfit;
					blob = &row->blobs[next_blob++];

					/* quote like Postgres' CSV, so that "" differs from NULL */
					if (blob->len > 0 && memchr(blob->data, ',', blob->len) == NULL &&
						memchr(blob->data, '"', blob->len) == NULL &&
						memchr(blob->data, '\n', blob->len) == NULL &&
						memchr(blob->data, '\r', blob->len) == NULL)
					{
						if (!cli_append(line, blob->data, blob->len))
							goto oom;
						break;
					}
					if (!cli_append(line, "\"", 1))
						goto oom;
					for (size_t i = 0; i < blob->len; i++)
					{
						if (blob->data[i] == '"' && !cli_append(line, "\"", 1))
							goto oom;
						if (!cli_append(line, &blob->data[i], 1))
							goto oom;
					}
					if (!cli_append(line, "\"", 1))
						goto oom;
				}
				break;
			default:
				goto misfit;
		}
		if (numlen > 0 && !cli_append(line, number, (size_t) numlen))
			goto oom;
	}
	if (next_int != row->n_ints || next_float != row->n_floats ||
		next_blob != row->n_blobs || next_null != row->n_nulls)
		goto misfit;
	return 0;

misfit:
	cli_fail("tserver sent a row that does not fit the table's columns");
	return -1;
oom:
	cli_fail("out of memory");
	return -1;
}

/*
 * scan: open the table to learn its schema, then print its rows as CSV, or
 * their count, or a checksum (row count, sum of INT values, FNV-1a 64 of
 * the CSV lines).
 */
static int
cli_scan(const CliOptions *opts)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__KeyBound lower = TCOPY__KEY_BOUND__INIT;
	Tcopy__KeyBound upper = TCOPY__KEY_BOUND__INIT;
	Tcopy__Row lower_key = TCOPY__ROW__INIT;
	Tcopy__Row upper_key = TCOPY__ROW__INIT;
	int64_t		lower_int = opts->lower;
	int64_t		upper_int = opts->upper;
	double		lower_float = (double) opts->lower;
	double		upper_float = (double) opts->upper;
	bool		count_only = strcmp(opts->format, "count") == 0;
	bool		checksum = strcmp(opts->format, "checksum") == 0;
	TcClient   *client;
	Tcopy__Schema *schema = NULL;
	uint32_t   *projection = NULL;
	Tcopy__Kind *kinds = NULL;
	size_t		ncolumns;
	uint32_t	table_id;
	TcBuf		line = {0};
	uint64_t	nrows = 0;
	uint64_t	sum = 0;
	uint64_t	hash = UINT64_C(0xcbf29ce484222325);
	int			status = 1;

	client = cli_connect(opts);
	if (client == NULL)
		return 1;
	if (tc_client_open_table(client, opts->table, NULL, false, &table_id, NULL, &schema) < 0)
		goto client_err;

	if (opts->columns != NULL)
	{
		int			n = cli_column_indexes(schema, opts->table, opts->columns, &projection);

		if (n < 0)
			goto err;
		ncolumns = (size_t) n;
		request.n_columns = ncolumns;
		request.columns = projection;
	}
	else
		ncolumns = schema->n_columns;
	kinds = malloc((ncolumns > 0 ? ncolumns : 1) * sizeof(Tcopy__Kind));
	if (kinds == NULL)
	{
		cli_fail("out of memory");
		goto err;
	}
	for (size_t i = 0; i < ncolumns; i++)
		kinds[i] = schema->columns[projection ? projection[i] : i]->kind;

	if (opts->has_lower || opts->has_upper)
	{
		Tcopy__Kind key_kind;

		if (schema->n_key == 0 || schema->key[0] >= schema->n_columns)
		{
			cli_fail("table \"%s\" has no key to bound", opts->table);
			goto err;
		}
		key_kind = schema->columns[schema->key[0]]->kind;
		if (key_kind == TCOPY__KIND__KIND_FLOAT)
		{
			lower_key.n_floats = upper_key.n_floats = 1;
			lower_key.floats = &lower_float;
			upper_key.floats = &upper_float;
		}
		else if (key_kind == TCOPY__KIND__KIND_INT || key_kind == TCOPY__KIND__KIND_BOOL)
		{
			lower_key.n_ints = upper_key.n_ints = 1;
			lower_key.ints = &lower_int;
			upper_key.ints = &upper_int;
		}
		else
		{
			cli_fail("--lower and --upper need a numeric first key column, but \"%s\" is not",
					 schema->columns[schema->key[0]]->name);
			goto err;
		}
		lower.key = &lower_key;
		upper.key = &upper_key;
		lower.inclusive = upper.inclusive = !opts->exclusive;
		if (opts->has_lower)
			request.lower = &lower;
		if (opts->has_upper)
			request.upper = &upper;
	}
	request.table_id = table_id;
	request.batch_rows = opts->batch_rows;
	request.limit = opts->limit;

	if (tc_client_scan_start(client, &request) < 0)
		goto client_err;
	for (;;)
	{
		Tcopy__ScanBatch *batch;

		if (tc_client_scan_next(client, &batch) < 0)
			goto client_err;
		nrows += batch->n_rows;
		for (size_t r = 0; r < batch->n_rows && !count_only; r++)
		{
			line.len = 0;
			if (cli_format_row(batch->rows[r], kinds, ncolumns, &line, &sum) < 0 ||
				!cli_append(&line, "\n", 1))
				goto err;
			if (checksum)
			{
				for (size_t i = 0; i < line.len; i++)
					hash = (hash ^ line.data[i]) * UINT64_C(0x100000001b3);
			}
			else
				fwrite(line.data, 1, line.len, stdout);
		}
		if (batch->done)
			break;
	}
	if (count_only)
		printf("%" PRIu64 "\n", nrows);
	else if (checksum)
		printf("rows %" PRIu64 " sum %" PRId64 " hash %016" PRIx64 "\n",
			   nrows, (int64_t) sum, hash);
	if (fflush(stdout) != 0)
	{
		cli_fail("could not write to stdout: %s", strerror(errno));
		goto err;
	}
	status = 0;
	goto err;

client_err:
	cli_client_fail(client);
err:
	tc_buf_free(&line);
	free(kinds);
	free(projection);
	if (schema != NULL)
		tcopy__schema__free_unpacked(schema, NULL);
	tc_client_close(client);
	return status;
}

/*
 * create: parse NAME:KIND[:TYPE[:TYPMOD]],... and the key names into a
 * schema and open the table with create.  TYPE defaults to the Postgres
 * type a kind stands for, TYPMOD to -1 (none), as Postgres' atttypmod.
 */
static int
cli_create(const CliOptions *opts)
{
	static const struct
	{
		const char *name;
		Tcopy__Kind kind;
		const char *default_type;
	}			kind_names[] = {
		{"bool", TCOPY__KIND__KIND_BOOL, "bool"},
		{"int", TCOPY__KIND__KIND_INT, "int8"},
		{"float", TCOPY__KIND__KIND_FLOAT, "float8"},
		{"bytes", TCOPY__KIND__KIND_BYTES, "text"},
	};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	char	   *spec = strdup(opts->columns);
	Tcopy__Column *columns = NULL;
	Tcopy__Column **column_ptrs = NULL;
	uint32_t   *key = NULL;
	TcClient   *client = NULL;
	size_t		count = 1;
	char	   *save = NULL;
	uint32_t	table_id;
	bool		created;
	int			status = 1;

	if (spec == NULL)
		return cli_fail("out of memory");
	for (const char *p = spec; *p; p++)
		count += (*p == ',');
	columns = calloc(count, sizeof(Tcopy__Column));
	column_ptrs = calloc(count, sizeof(Tcopy__Column *));
	if (columns == NULL || column_ptrs == NULL)
	{
		cli_fail("out of memory");
		goto err;
	}
	for (char *item = strtok_r(spec, ",", &save); item != NULL;
		 item = strtok_r(NULL, ",", &save))
	{
		Tcopy__Column *column = &columns[schema.n_columns];
		char	   *kind = strchr(item, ':');
		char	   *type = NULL;
		char	   *typmod = NULL;
		size_t		k;

		if (kind == NULL || kind == item)
			cli_usage_error("column \"%s\" needs the form NAME:KIND[:TYPE[:TYPMOD]]", item);
		*kind++ = '\0';
		if ((type = strchr(kind, ':')) != NULL)
		{
			*type++ = '\0';
			if ((typmod = strchr(type, ':')) != NULL)
				*typmod++ = '\0';
		}
		for (k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
		{
			if (strcmp(kind, kind_names[k].name) == 0)
				break;
		}
		if (k == sizeof(kind_names) / sizeof(kind_names[0]))
			cli_usage_error("column \"%s\" has unknown kind \"%s\" (expected bool, int, float or bytes)",
							item, kind);
		tcopy__column__init(column);
		column->name = item;
		column->kind = kind_names[k].kind;
		column->type_name = (char *) (type != NULL && *type ? type : kind_names[k].default_type);
		column->typmod = typmod != NULL ?
			(int32_t) cli_parse_int("typmod", typmod, INT32_MIN, INT32_MAX) : -1;
		column_ptrs[schema.n_columns++] = column;
	}
	if (schema.n_columns == 0)
		cli_usage_error("--columns names no column");
	schema.columns = column_ptrs;

	if (opts->key != NULL)
	{
		int			n = cli_column_indexes(&schema, opts->table, opts->key, &key);

		if (n < 0)
		{
			status = 2;
			goto err;
		}
		schema.n_key = (size_t) n;
		schema.key = key;
	}

	client = cli_connect(opts);
	if (client == NULL)
		goto err;
	if (tc_client_open_table(client, opts->table, &schema, true, &table_id, &created, NULL) < 0)
	{
		cli_client_fail(client);
		goto err;
	}
	printf("%s table \"%s\" (id %u)\n", created ? "created" : "found", opts->table, table_id);
	status = 0;

err:
	tc_client_close(client);
	free(key);
	free(column_ptrs);
	free(columns);
	free(spec);
	return status;
}

/* truncate and drop: look the table up, then apply op. */
static int
cli_table_op(const CliOptions *opts, Tcopy__TableOpKind op, const char *done)
{
	TcClient   *client = cli_connect(opts);
	uint32_t	table_id;

	if (client == NULL)
		return 1;
	if (tc_client_open_table(client, opts->table, NULL, false, &table_id, NULL, NULL) < 0 ||
		tc_client_table_op(client, op, table_id) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	printf("%s table \"%s\"\n", done, opts->table);
	tc_client_close(client);
	return 0;
}

static int
cli_truncate(const CliOptions *opts)
{
	return cli_table_op(opts, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, "truncated");
}

static int
cli_drop(const CliOptions *opts)
{
	return cli_table_op(opts, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, "dropped");
}

/* The value of one hex digit, -1 when c is none. */
static int
cli_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * raw: send --hex's bytes after the handshake and print the type of the
 * frame that comes back, with the code and message of an Error frame.
 */
static int
cli_raw(const CliOptions *opts)
{
	size_t		hexlen = strlen(opts->hex);
	uint8_t    *bytes = malloc(hexlen / 2 + 1);
	size_t		len = 0;
	int			high = -1;
	TcClient   *client = NULL;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	payload_len;
	int			status = 1;

	if (bytes == NULL)
		return cli_fail("out of memory");
	/* whitespace and colons between bytes are allowed, for readability */
	for (const char *p = opts->hex; *p; p++)
	{
		int			digit = cli_hex_digit(*p);

		if (digit < 0)
		{
			if (high < 0 && strchr(" \t\n:", *p) != NULL)
				continue;
			free(bytes);
			cli_usage_error("--hex has an invalid digit '%c'", *p);
		}
		if (high < 0)
			high = digit;
		else
		{
			bytes[len++] = (uint8_t) (high << 4 | digit);
			high = -1;
		}
	}
	if (high >= 0)
	{
		free(bytes);
		cli_usage_error("--hex has an odd number of digits");
	}

	client = cli_connect(opts);
	if (client == NULL)
		goto err;
	if (tc_client_send_raw(client, bytes, len) < 0 ||
		tc_client_read_frame(client, &type, &payload, &payload_len) < 0)
	{
		cli_client_fail(client);
		goto err;
	}
	if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
	{
		Tcopy__Error *error = tcopy__error__unpack(NULL, payload_len, payload);
		const ProtobufCEnumValue *code;

		if (error == NULL)
		{
			printf("%s (malformed)\n", tc_frame_type_name(type));
			goto done;
		}
		code = protobuf_c_enum_descriptor_get_value(&tcopy__error_code__descriptor,
													error->code);
		printf("%s %s (%d): %s\n", tc_frame_type_name(type),
			   code ? code->name : "unknown", (int) error->code, error->message);
		tcopy__error__free_unpacked(error, NULL);
	}
	else
		printf("%s\n", tc_frame_type_name(type));
done:
	status = 0;

err:
	tc_client_close(client);
	free(bytes);
	return status;
}

static const CliCommand commands[] = {
	{"ping", cli_ping, false, no_options},
	{"stats", cli_stats, false, no_options},
	{"load", cli_load, true, load_options},
	{"scan", cli_scan, true, scan_options},
	{"create", cli_create, true, create_options},
	{"truncate", cli_truncate, true, no_options},
	{"drop", cli_drop, true, no_options},
	{"raw", cli_raw, false, raw_options},
	{NULL, NULL, false, NULL}
};

/* Take one option (from the global or a command's table) into opts. */
static void
cli_take_option(CliOptions *opts, int option, const char *arg)
{
	switch (option)
	{
		case OPT_ADDRESS:
			opts->address = arg;
			break;
		case OPT_TOKEN_FILE:
			opts->token_file = arg;
			break;
		case OPT_ROWS:
			opts->rows = (uint64_t) cli_parse_int("--rows", arg, 0, INT64_MAX);
			opts->has_rows = true;
			break;
		case OPT_START:
			opts->start = cli_parse_int("--start", arg, INT32_MIN, INT32_MAX);
			break;
		case OPT_SHUFFLE:
			opts->shuffle = true;
			break;
		case OPT_SEED:
			opts->seed = (uint64_t) cli_parse_int("--seed", arg, 0, INT64_MAX);
			break;
		case OPT_VALUE:
			opts->value = cli_parse_int("--value", arg, INT32_MIN, INT32_MAX);
			break;
		case OPT_BATCH_ROWS:
			opts->batch_rows = (uint32_t) cli_parse_int("--batch-rows", arg, 1, TC_BATCH_ROWS_MAX);
			break;
		case OPT_WINDOW:
			opts->window = (unsigned) cli_parse_int("--window", arg, 1, TC_CLIENT_WINDOW_MAX);
			break;
		case OPT_ABORT:
			opts->abort = true;
			break;
		case OPT_HOLD:
			opts->hold = true;
			break;
		case OPT_KEYLESS:
			opts->keyless = true;
			break;
		case OPT_COLUMNS:
			opts->columns = arg;
			break;
		case OPT_LOWER:
			opts->lower = cli_parse_int("--lower", arg, INT64_MIN, INT64_MAX);
			opts->has_lower = true;
			break;
		case OPT_UPPER:
			opts->upper = cli_parse_int("--upper", arg, INT64_MIN, INT64_MAX);
			opts->has_upper = true;
			break;
		case OPT_EXCLUSIVE:
			opts->exclusive = true;
			break;
		case OPT_LIMIT:
			opts->limit = (uint64_t) cli_parse_int("--limit", arg, 0, INT64_MAX);
			break;
		case OPT_FORMAT:
			opts->format = arg;
			break;
		case OPT_KEY:
			opts->key = arg;
			break;
		case OPT_HEX:
			opts->hex = arg;
			break;
	}
}

int
main(int argc, char **argv)
{
	CliOptions	opts;
	const CliCommand *command;
	char	  **command_argv;
	int			command_argc;
	int			option;
	int			status;

	memset(&opts, 0, sizeof(opts));
	opts.start = 1;
	opts.window = TC_CLIENT_WINDOW_DEFAULT;
	opts.format = "csv";

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			fputs(usage_text, stdout);
			return 0;
		}
	}

	/* global options stop at the command ("+") */
	opterr = 0;
	while ((option = getopt_long(argc, argv, "+", global_options, NULL)) != -1)
	{
		if (option == '?')
			cli_usage_error("invalid option \"%s\"", argv[optind - 1]);
		cli_take_option(&opts, option, optarg);
	}
	if (optind >= argc)
		cli_usage_error("no command given");
	for (command = commands; command->name != NULL; command++)
	{
		if (strcmp(command->name, argv[optind]) == 0)
			break;
	}
	if (command->name == NULL)
		cli_usage_error("unknown command \"%s\"", argv[optind]);

	/* the command's own options; optind = 0 makes getopt start afresh */
	command_argc = argc - optind;
	command_argv = argv + optind;
	optind = 0;
	while ((option = getopt_long(command_argc, command_argv, "", command->options, NULL)) != -1)
	{
		if (option == '?')
			cli_usage_error("invalid option \"%s\" for %s", command_argv[optind - 1],
							command->name);
		cli_take_option(&opts, option, optarg);
	}
	if (command->takes_table)
	{
		if (optind >= command_argc)
			cli_usage_error("%s needs a table name", command->name);
		opts.table = command_argv[optind++];
	}
	if (optind < command_argc)
		cli_usage_error("unexpected argument \"%s\"", command_argv[optind]);

	if (strcmp(command->name, "load") == 0)
	{
		if (!opts.has_rows)
			cli_usage_error("load needs --rows");
		if (opts.batch_rows == 0)
			opts.batch_rows = TC_BATCH_ROWS_DEFAULT;
		if (opts.rows > (uint64_t) ((int64_t) INT32_MAX - opts.start + 1))
			cli_usage_error("--start and --rows take aid beyond int4");
	}
	if (strcmp(command->name, "scan") == 0 && strcmp(opts.format, "csv") != 0 &&
		strcmp(opts.format, "count") != 0 && strcmp(opts.format, "checksum") != 0)
		cli_usage_error("unknown --format \"%s\" (expected csv, count or checksum)", opts.format);
	if (strcmp(command->name, "create") == 0 && opts.columns == NULL)
		cli_usage_error("create needs --columns");
	if (strcmp(command->name, "raw") == 0 && opts.hex == NULL)
		cli_usage_error("raw needs --hex");

	if (opts.address == NULL)
	{
		opts.address = getenv("TCOPY_ADDRESS");
		if (opts.address == NULL || opts.address[0] == '\0')
			opts.address = CLI_DEFAULT_ADDRESS;
	}
	if (opts.token_file != NULL)
	{
		size_t		token_len;
		char		err[512];

		/* the user's own file: its mode is the user's business */
		if (tc_auth_read_token_file(opts.token_file, false, opts.token_buf,
									&token_len, err, sizeof(err)) != 0)
			return cli_fail("%s", err);
		opts.token = opts.token_buf;
	}

	status = command->run(&opts);
	tc_auth_forget(opts.token_buf, sizeof(opts.token_buf));
	return status;
}
