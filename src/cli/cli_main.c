/*
 * cli_main.c
 *		tserver-cli: talk to a tserver from the shell.  Tests, the benchmark
 *		and operators use it to check a server, load and read back
 *		pgbench_accounts-shaped tables, and feed the server raw bytes.  This
 *		file parses the command line and runs one command (cli_*.c).
 *
 * Exit status: 0 on success, 1 when something failed (the reason on
 * stderr), 2 on a usage error.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_STR(x) CLI_STR_(x)		/* a numeric macro as a string literal */
#define CLI_STR_(x) #x

typedef int (*CliCommandFn) (const CliOptions *opts);

typedef struct CliCommand
{
	const char *name;
	CliCommandFn run;
	int			nargs;			/* arguments after the options: */
	const char *args;			/* what they are, for a usage error */
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
	OPT_TOKEN_FILE,
	OPT_PREPARE,
	OPT_TRUNCATE,
	OPT_ON_CONFLICT,
	OPT_AGAIN,
	OPT_PREFIX,
	OPT_FORGET,
	OPT_SSLMODE,
	OPT_SSLROOTCERT,
	OPT_SSLCERT,
	OPT_SSLKEY
};

static const struct option global_options[] = {
	{"address", required_argument, NULL, OPT_ADDRESS},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"sslmode", required_argument, NULL, OPT_SSLMODE},
	{"sslrootcert", required_argument, NULL, OPT_SSLROOTCERT},
	{"sslcert", required_argument, NULL, OPT_SSLCERT},
	{"sslkey", required_argument, NULL, OPT_SSLKEY},
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
	{"prepare", required_argument, NULL, OPT_PREPARE},
	{"truncate", no_argument, NULL, OPT_TRUNCATE},
	{"on-conflict", required_argument, NULL, OPT_ON_CONFLICT},
	{"again", required_argument, NULL, OPT_AGAIN},
	{NULL, 0, NULL, 0}
};

static const struct option prepared_options[] = {
	{"prefix", required_argument, NULL, OPT_PREFIX},
	{NULL, 0, NULL, 0}
};

static const struct option labels_options[] = {
	{"forget", required_argument, NULL, OPT_FORGET},
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
"Usage: tserver-cli [--address ADDR] [--token-file FILE] [TLS options] COMMAND [options]\n"
"\n"
"ADDR is unix:PATH or tcp:HOST:PORT (default: $TCOPY_ADDRESS, else\n"
CLI_DEFAULT_ADDRESS "); FILE holds the token to prove (the tserver's\n"
"--token-file token, or a scoped one): with it, tserver-cli also requires the\n"
"tserver to prove it knows the token before it sends anything else.\n"
"\n"
"TLS options (tcp: only; unix: never uses TLS):\n"
"  --sslmode MODE          disable, require, verify-ca or verify-full (default:\n"
"                          $TCOPY_SSLMODE, else require)\n"
"  --sslrootcert FILE      CA certificates to verify the tserver with (default:\n"
"                          the system's)\n"
"  --sslcert FILE --sslkey FILE  client certificate and its key (mode 0600)\n"
"\n"
"Commands:\n"
"  ping                    print \"ok SERVER-NAME\" (and the TLS version and cipher)\n"
"  sessions                the open write sessions this connection may see:\n"
"                          ID STATE AGE_MS ROWS STAGED SPILLED TABLES PID each,\n"
"                          tab-separated\n"
"  stats                   print the server's counters, \"name: value\" each\n"
"  tables                  the tables this connection may name (a scoped token:\n"
"                          its namespace's), \"ID<TAB>NAME\" each\n"
"  load TABLE --rows N     load pgbench_accounts-shaped rows in one session\n"
"      [--start K]         first aid (default 1)\n"
"      [--shuffle] [--seed S]  send the aids in a shuffled order\n"
"      [--value V]         abalance of every row (default 0)\n"
"      [--batch-rows B]    rows per write batch (default " CLI_STR(TC_BATCH_ROWS_DEFAULT) ")\n"
"      [--window W]        batches in flight (default " CLI_STR(TC_CLIENT_WINDOW_DEFAULT) ")\n"
"      [--keyless]         the table has no key (generated row ids)\n"
"      [--abort]           abort instead of committing\n"
"      [--prepare GID]     prepare under global id GID instead of committing,\n"
"                          and exit leaving it prepared (orphaned)\n"
"      [--truncate]        truncate the table in the same session, before\n"
"                          its rows (applied when the session is published)\n"
"      [--on-conflict P]   error, ignore or replace (the default): what the\n"
"                          session does with rows of one key\n"
"      [--again A]         after the rows, send aid A once more, abalance V+1\n"
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
"  labels TABLE            list the load labels published for the table:\n"
"                          label and published at (UTC), tab-separated\n"
"      [--forget LABEL]    forget one instead (prints \"forgotten\" or\n"
"                          \"not published\")\n"
"  raw --hex HEX           after the handshake, send these bytes and print the\n"
"                          type of the frame that comes back\n"
"  prepared [--prefix P]   list the prepared sessions (whose global id starts\n"
"                          with P): a header line (starting with #), then\n"
"                          gid, rows, bytes, prepared at (UTC) and attached\n"
"                          (yes: a live connection owns it), tab-separated\n"
"  resolve GID commit|abort  publish or discard the session prepared under\n"
"                          GID, an orphaned one or one of this connection's;\n"
"                          prints \"committed N rows ...\" or \"discarded N\n"
"                          rows ...\", or \"not found: ...\" (nothing is\n"
"                          prepared under GID any more: exit 0), or \"busy:\n"
"                          ...\" (another connection owns it: exit 1)\n"
"  backup DIR              take an online, consistent backup of the tserver\n"
"                          into DIR, an absolute path on the tserver's machine\n"
"                          that does not exist yet (full access only); prints\n"
"                          its tables, prepared sessions, bytes, sequence\n"
"                          number and seconds, then \"prepared<TAB>GID\" lines\n"
"Replica groups (ADDR lists the members; the leader answers; full access only):\n"
"  group-status            the group's term, the leader's applied entry, and a\n"
"                          line per member: id, raft address, voter or standby\n"
"  group-add ID@IP:PORT    a new member joins as a standby (start it first, on\n"
"                          a backup of a member: see the README)\n"
"  group-promote ID        the standby ID becomes a voter\n"
"  group-remove ID         member ID leaves the group\n"
"  group-replace OLD NEW@IP:PORT\n"
"                          member NEW (started, empty or on a backup) joins,\n"
"                          catches up and becomes a voter, then OLD leaves:\n"
"                          group-add, group-promote (asked again until NEW has\n"
"                          caught up, up to 10 minutes), group-remove\n"
"\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n";
static const CliCommand commands[] = {
	{"ping", cli_ping, 0, NULL, no_options},
	{"stats", cli_stats, 0, NULL, no_options},
	{"sessions", cli_sessions, 0, NULL, no_options},
	{"tables", cli_tables, 0, NULL, no_options},
	{"load", cli_load, 1, "a table name", load_options},
	{"scan", cli_scan, 1, "a table name", scan_options},
	{"create", cli_create, 1, "a table name", create_options},
	{"truncate", cli_truncate, 1, "a table name", no_options},
	{"drop", cli_drop, 1, "a table name", no_options},
	{"labels", cli_labels, 1, "a table name", labels_options},
	{"raw", cli_raw, 0, NULL, raw_options},
	{"prepared", cli_prepared, 0, NULL, prepared_options},
	{"resolve", cli_resolve, 2, "a global id, then commit or abort", no_options},
	{"backup", cli_backup, 1, "a directory on the tserver's machine", no_options},
	{"group-status", cli_group_status, 0, NULL, no_options},
	{"group-add", cli_group_add, 1, "ID@IP:PORT", no_options},
	{"group-promote", cli_group_promote, 1, "a member id", no_options},
	{"group-remove", cli_group_remove, 1, "a member id", no_options},
	{"group-replace", cli_group_replace, 2, "a member id, then ID@IP:PORT", no_options},
	{NULL, NULL, 0, NULL, NULL}
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
		case OPT_SSLMODE:
			opts->sslmode = arg;
			break;
		case OPT_SSLROOTCERT:
			opts->tls.sslrootcert = arg;
			break;
		case OPT_SSLCERT:
			opts->tls.sslcert = arg;
			break;
		case OPT_SSLKEY:
			opts->tls.sslkey = arg;
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
		case OPT_PREPARE:
			opts->prepare_gid = arg;
			break;
		case OPT_TRUNCATE:
			opts->truncate = true;
			break;
		case OPT_ON_CONFLICT:
			if (strcmp(arg, "error") != 0 && strcmp(arg, "ignore") != 0 &&
				strcmp(arg, "replace") != 0)
				cli_usage_error("invalid value \"%s\" for --on-conflict (expected error, ignore or replace)",
								arg);
			opts->on_conflict = arg;
			break;
		case OPT_AGAIN:
			opts->has_again = true;
			opts->again = cli_parse_int("--again", arg, INT32_MIN, INT32_MAX);
			break;
		case OPT_PREFIX:
			opts->prefix = arg;
			break;
		case OPT_FORGET:
			opts->forget = arg;
			break;
	}
}

int
main(int argc, char **argv)
{
	CliOptions	opts;
	const CliCommand *command;
	const char *args[2] = {NULL, NULL};
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
	for (int i = 0; i < command->nargs; i++)
	{
		if (optind >= command_argc)
			cli_usage_error("%s needs %s", command->name, command->args);
		args[i] = command_argv[optind++];
	}
	if (optind < command_argc)
		cli_usage_error("unexpected argument \"%s\"", command_argv[optind]);

	if (strcmp(command->name, "resolve") == 0)
	{
		opts.gid = args[0];
		if (strcmp(args[1], "commit") != 0 && strcmp(args[1], "abort") != 0)
			cli_usage_error("resolve needs commit or abort, not \"%s\"", args[1]);
		opts.commit = strcmp(args[1], "commit") == 0;
		if (opts.gid[0] == '\0' || strlen(opts.gid) > TC_GID_MAX)
			cli_usage_error("a global id has 1 to %d bytes", TC_GID_MAX);
	}
	else if (strcmp(command->name, "backup") == 0)
		opts.dir = args[0];
	else if (strncmp(command->name, "group-", 6) == 0)
	{
		bool		replace = strcmp(command->name, "group-replace") == 0;
		const char *member = replace ? args[1] : args[0];
		char	   *end = NULL;
		const char *at = strchr(member != NULL ? member : "", '@');

		if (replace)
		{
			errno = 0;
			opts.replaced_id = strtoull(args[0], &end, 10);
			if (errno != 0 || opts.replaced_id == 0 || end == args[0] || *end != '\0')
				cli_usage_error("%s needs %s, not \"%s\"", command->name, command->args, args[0]);
		}
		if (strcmp(command->name, "group-status") != 0)
		{
			errno = 0;
			opts.member_id = strtoull(member, &end, 10);
			if (errno != 0 || opts.member_id == 0 || end == member ||
				(strcmp(command->name, "group-add") == 0 || replace ? end != at : *end != '\0'))
				cli_usage_error("%s needs %s, not \"%s\"", command->name, command->args, member);
			opts.member_address = at != NULL ? at + 1 : NULL;
			if (replace && opts.member_id == opts.replaced_id)
				cli_usage_error("group-replace needs a new member id, not the replaced one's");
		}
	}
	else
		opts.table = args[0];
	if (strcmp(command->name, "load") == 0)
	{
		if (!opts.has_rows)
			cli_usage_error("load needs --rows");
		if (opts.prepare_gid != NULL && opts.abort)
			cli_usage_error("load takes --prepare or --abort, not both");
		if (opts.prepare_gid != NULL &&
			(opts.prepare_gid[0] == '\0' || strlen(opts.prepare_gid) > TC_GID_MAX))
			cli_usage_error("a global id has 1 to %d bytes", TC_GID_MAX);
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
	if (opts.sslmode == NULL)
	{
		opts.sslmode = getenv("TCOPY_SSLMODE");
		if (opts.sslmode != NULL && opts.sslmode[0] == '\0')
			opts.sslmode = NULL;
	}
	opts.tls.sslmode = TC_SSLMODE_DEFAULT;
	if (opts.sslmode != NULL && !tc_tls_parse_sslmode(opts.sslmode, &opts.tls.sslmode))
		cli_usage_error("invalid sslmode \"%s\" (expected " TC_SSLMODE_NAMES ")", opts.sslmode);
	if ((opts.tls.sslcert != NULL) != (opts.tls.sslkey != NULL))
		cli_usage_error("--sslcert and --sslkey go together");
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
