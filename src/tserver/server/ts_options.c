/*
 * ts_options.c
 *		The tserver's command-line options (ts_options.h): the usage
 *		message, the option table, and their parsing and checks.
 */
#include "ts_options.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tc_frame.h"
#include "ts_tenants.h"
#include "ts_proto.h"
#include "ts_raft.h"
#include "ts_store.h"

/* Print the usage message to out, with the store's defaults. */
static void
usage(FILE *out)
{
	TsStoreOptions defaults;

	ts_store_default_options(&defaults);
	fprintf(out,
			"tserver %s: the tcopy tablet server.\n\n"
			"Usage:\n"
			"  tserver --data DIR --listen ADDRESS [--listen ADDRESS ...] [OPTION]...\n\n"
			"Options:\n"
			"  --data DIR                 store data in DIR (created when missing)\n"
			"  --listen ADDRESS           listen on unix:PATH or tcp:HOST:PORT (repeatable;\n"
			"                             HOST * means every local address)\n"
			"  --config FILE              options from FILE, \"name = value\" a line (the\n"
			"                             command line's win); SIGHUP reloads its\n"
			"                             log-level, limits and tokens\n"
			"  --metrics tcp:HOST:PORT    serve the counters to Prometheus (GET /metrics,\n"
			"                             no credential: bind it where only monitoring\n"
			"                             reaches)\n"
			"Authentication (one of the first four is required):\n"
			"  --token-file FILE          clients proving the token in FILE have full access\n"
			"                             (FILE only its owner may access: mode 0600)\n"
			"  --scoped-tokens FILE       lines \"NAMESPACE TOKEN\": a client proving TOKEN\n"
			"                             reaches only tables named NAMESPACE... (mode 0600)\n"
			"  --allow-uid UID[,UID...]   unix socket clients running as these users (uids or\n"
			"                             names; repeatable) have full access without a token\n"
			"  --insecure                 no authentication: every client that reaches a\n"
			"                             listener has full access\n"
			"  --socket-mode MODE         mode of unix socket files (default 0600; 0660 lets\n"
			"                             the group in; world access only with --insecure)\n"
			"TLS:\n"
			"  --tls-cert FILE            speak TLS (only) on every tcp: listener, with this\n"
			"                             PEM certificate (chain); unix: never uses TLS\n"
			"  --tls-key FILE             its private key (mode 0600); with --tls-cert\n"
			"  --tls-ca FILE              require client certificates signed by these CAs\n"
			"Limits:\n"
			"  --max-connections N        connections open at once (default %d)\n"
			"  --max-unauthenticated N    of those, not yet authenticated (default %d)\n"
			"  --handshake-timeout S      seconds from connect to authenticated (default %d)\n"
			"  --idle-timeout S           close an authenticated connection that holds no\n"
			"                             session, scan, snapshot nor prepared session\n"
			"                             after S seconds without a frame (default %d;\n"
			"                             0: never)\n"
			"  --max-namespace-connections N  connections of one scoped token's namespace\n"
			"                             open at once (default %d)\n"
			"  --max-namespace-disk-mb N  disk one scoped token's namespace may fill: its\n"
			"                             tables' files and sessions' staging files\n"
			"                             (default 0: no quota)\n"
			"  --decode-memory-mb N       memory all connections' frames unpack into\n"
			"                             together; a frame waits for it (default %d)\n"
			"Storage:\n"
			"  --session-memory-mb N      memory a write session stages before spilling\n"
			"                             to disk (default %zu)\n"
			"  --memory-mb N              memory all write sessions together stage before\n"
			"                             each spills early, at 1 MB (default %llu; 0: none)\n"
			"  --block-cache-mb N         RocksDB's cache of uncompressed blocks, which\n"
			"                             reads are served from (default %zu; as\n"
			"                             Postgres' shared_buffers for a heap)\n"
			"  --sst-compression C        compression of the stored SST files: none, lz4\n"
			"                             or zstd (default lz4)\n"
			"  --sst-block-kb N           size of their data blocks (default 16)\n"
			"  --merge-threads N          threads of a spilled session's merge at commit\n"
			"                             (default: the cores; at most 16)\n"
			"  --max-frame-mb N           largest frame accepted from a client (default %u)\n"
			"  --in-doubt-wait-ms N       how long a commit waits for a prepared session\n"
			"                             of its tables that recovery has yet to resolve\n"
			"                             before it fails, retryable (default %d; 0: fail\n"
			"                             at once)\n"
			"  --no-sync                  sync nothing: a machine crash may lose committed\n"
			"                             and prepared transactions (measurements only)\n"
			"  --statistics               keep RocksDB's statistics: stats then reports\n"
			"                             the bytes compactions and flushes wrote\n"
			"  --log-level LEVEL          debug, info (default), warning or error\n"
			"  --log-format FORMAT        text (default) or json: one object a line\n"
			"Replica group (docs/replication.md; all but --raft-dir and --raft-bootstrap\n"
			"together):\n"
			"  --raft-id N                this member's id in its group (1, 2, ...)\n"
			"  --raft-listen IP:PORT      where the members reach this one (an IPv4 address)\n"
			"  --raft-secret-file FILE    the secret every member of the group holds (at\n"
			"                             least 32 bytes; mode 0600)\n"
			"  --raft-dir DIR             the group's log and snapshots (default DATA/raft)\n"
			"  --raft-bootstrap LIST      the first start of a new group: its members,\n"
			"                             \"ID@IP:PORT,...\", the same list on each\n"
			"  --raft-log-entries N       a snapshot every N entries, 2 N kept behind it;\n"
			"                             a member further behind fetches another's\n"
			"                             state (default 128; 8 to 100000)\n"
			"  --raft-tls-cert FILE       this member's certificate, from the group's CA\n"
			"  --raft-tls-key FILE        its key (mode 0600)\n"
			"  --raft-tls-ca FILE         the group's CA: every member's certificate,\n"
			"                             both ways, must be of it (docs/security.md)\n"
			"  --raft-insecure-cleartext  no TLS on the raft port: rows travel in the\n"
			"                             clear (a trusted network only)\n"
			"  --version                  show the version and exit\n"
			"  --help                     show this help and exit\n",
			TS_VERSION, TS_DEFAULT_MAX_CONNECTIONS, TS_DEFAULT_MAX_UNAUTHENTICATED,
			TS_DEFAULT_HANDSHAKE_TIMEOUT_S, TS_DEFAULT_IDLE_TIMEOUT_S,
			TS_DEFAULT_MAX_NAMESPACE_CONNECTIONS, TS_DEFAULT_DECODE_MEMORY_MB,
			defaults.session_memory_bytes / TS_MB,
			(unsigned long long) (defaults.memory_bytes / TS_MB),
			defaults.block_cache_bytes / TS_MB,
			(unsigned) (TC_FRAME_MAX_DEFAULT / TS_MB), defaults.in_doubt_wait_ms);
}

/* Where the option being parsed came from ("FILE:LINE"), or NULL. */
static const char *bad_origin;

void
ts_options_bad(const char *fmt,...)
{
	va_list		args;
	char		message[1024];
	const char *text = message;

	va_start(args, fmt);
	vsnprintf(message, sizeof(message), fmt, args);
	va_end(args);
	/* a file's line names its option without dashes */
	if (bad_origin != NULL && strncmp(text, "--", 2) == 0)
		text += 2;
	fprintf(stderr, "tserver: %s%s%s\n", bad_origin != NULL ? bad_origin : "",
			bad_origin != NULL ? ": " : "", text);
	fprintf(stderr, "Try \"tserver --help\" for more information.\n");
	exit(EXIT_USAGE);
}

/* A decimal integer from min to max, or a usage error. */
static unsigned long
parse_number(const char *option, const char *text, unsigned long min, unsigned long max)
{
	char	   *end = NULL;
	unsigned long value = 0;

	errno = 0;
	if (text[0] >= '0' && text[0] <= '9')
		value = strtoul(text, &end, 10);
	if (end == NULL || *end != '\0' || errno != 0 || value < min || value > max)
		ts_options_bad("%s needs an integer from %lu to %lu, not \"%s\"", option, min, max, text);
	return value;
}

/*
 * Add the users of list ("UID[,UID...]", each a uid or a user name) to
 * options->allowed_uids, or exit with a usage error.
 */
static void
parse_allowed_uids(const char *list, TsMainOptions *options)
{
	char	   *copy = strdup(list);
	char	   *saveptr = NULL;
	char	   *item;

	if (copy == NULL)
	{
		fprintf(stderr, "tserver: out of memory\n");
		exit(1);
	}
	for (item = strtok_r(copy, ",", &saveptr); item != NULL;
		 item = strtok_r(NULL, ",", &saveptr))
	{
		uid_t	   *grown;
		uid_t		uid;

		if (item[0] >= '0' && item[0] <= '9')
		{
			char	   *end = NULL;
			unsigned long value;

			errno = 0;
			value = strtoul(item, &end, 10);
			/* (uid_t) -1 means "no uid" to the kernel */
			if (*end != '\0' || errno != 0 || value >= (unsigned long) (uid_t) -1)
				ts_options_bad("--allow-uid: \"%s\" is not a uid", item);
			uid = (uid_t) value;
		}
		else
		{
			struct passwd *pw = getpwnam(item);

			if (pw == NULL)
				ts_options_bad("--allow-uid: no user is called \"%s\"", item);
			uid = pw->pw_uid;
		}
		grown = realloc(options->allowed_uids,
						(options->nallowed_uids + 1) * sizeof(uid_t));
		if (grown == NULL)
		{
			fprintf(stderr, "tserver: out of memory\n");
			exit(1);
		}
		options->allowed_uids = grown;
		options->allowed_uids[options->nallowed_uids++] = uid;
	}
	free(copy);
	if (options->nallowed_uids == 0)
		ts_options_bad("--allow-uid needs at least one uid or user name");
}

/*
 * An octal socket file mode: permission bits only, the owner's read and
 * write included (or the server could not use its own socket).
 */
static mode_t
parse_socket_mode(const char *text)
{
	char	   *end = NULL;
	unsigned long value = 0;

	errno = 0;
	if (text[0] >= '0' && text[0] <= '7')
		value = strtoul(text, &end, 8);
	if (end == NULL || *end != '\0' || errno != 0 || value > 0777 ||
		(value & 0600) != 0600)
		ts_options_bad("--socket-mode needs an octal mode from 0600 to 0777 with the owner's "
					 "read and write (such as 0600 or 0660), not \"%s\"", text);
	return (mode_t) value;
}

/* The options, long only. */
enum
{
	OPT_DATA = 256, OPT_LISTEN, OPT_TOKEN_FILE, OPT_SESSION_MEMORY, OPT_MEMORY,
	OPT_MERGE_THREADS, OPT_MAX_FRAME, OPT_NO_SYNC, OPT_STATISTICS, OPT_LOG_LEVEL, OPT_LOG_FORMAT, OPT_ALLOW_UID, OPT_HELP,
	OPT_SCOPED_TOKENS, OPT_INSECURE, OPT_SOCKET_MODE, OPT_MAX_CONNECTIONS,
	OPT_MAX_UNAUTHENTICATED, OPT_HANDSHAKE_TIMEOUT, OPT_DECODE_MEMORY,
	OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CA, OPT_IN_DOUBT_WAIT,
	OPT_RAFT_ID, OPT_RAFT_LISTEN, OPT_RAFT_DIR, OPT_RAFT_BOOTSTRAP, OPT_RAFT_SECRET,
	OPT_RAFT_LOG_ENTRIES, OPT_METRICS, OPT_CONFIG, OPT_VERSION, OPT_IDLE_TIMEOUT,
	OPT_MAX_NAMESPACE_CONNECTIONS, OPT_MAX_NAMESPACE_DISK, OPT_BLOCK_CACHE,
	OPT_SST_COMPRESSION, OPT_SST_BLOCK,
	OPT_RAFT_TLS_CERT, OPT_RAFT_TLS_KEY, OPT_RAFT_TLS_CA, OPT_RAFT_CLEARTEXT
};
static const struct option long_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"allow-uid", required_argument, NULL, OPT_ALLOW_UID},
	{"scoped-tokens", required_argument, NULL, OPT_SCOPED_TOKENS},
	{"insecure", no_argument, NULL, OPT_INSECURE},
	{"socket-mode", required_argument, NULL, OPT_SOCKET_MODE},
	{"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
	{"max-unauthenticated", required_argument, NULL, OPT_MAX_UNAUTHENTICATED},
	{"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE_TIMEOUT},
	{"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
	{"max-namespace-connections", required_argument, NULL, OPT_MAX_NAMESPACE_CONNECTIONS},
	{"max-namespace-disk-mb", required_argument, NULL, OPT_MAX_NAMESPACE_DISK},
	{"decode-memory-mb", required_argument, NULL, OPT_DECODE_MEMORY},
	{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
	{"tls-key", required_argument, NULL, OPT_TLS_KEY},
	{"tls-ca", required_argument, NULL, OPT_TLS_CA},
	{"session-memory-mb", required_argument, NULL, OPT_SESSION_MEMORY},
	{"block-cache-mb", required_argument, NULL, OPT_BLOCK_CACHE},
	{"sst-compression", required_argument, NULL, OPT_SST_COMPRESSION},
	{"sst-block-kb", required_argument, NULL, OPT_SST_BLOCK},
	{"memory-mb", required_argument, NULL, OPT_MEMORY},
	{"merge-threads", required_argument, NULL, OPT_MERGE_THREADS},
	{"max-frame-mb", required_argument, NULL, OPT_MAX_FRAME},
	{"in-doubt-wait-ms", required_argument, NULL, OPT_IN_DOUBT_WAIT},
	{"no-sync", no_argument, NULL, OPT_NO_SYNC},
	{"statistics", no_argument, NULL, OPT_STATISTICS},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"log-format", required_argument, NULL, OPT_LOG_FORMAT},
	{"help", no_argument, NULL, OPT_HELP},
	{"version", no_argument, NULL, OPT_VERSION},
	{"raft-id", required_argument, NULL, OPT_RAFT_ID},
	{"raft-listen", required_argument, NULL, OPT_RAFT_LISTEN},
	{"raft-dir", required_argument, NULL, OPT_RAFT_DIR},
	{"raft-bootstrap", required_argument, NULL, OPT_RAFT_BOOTSTRAP},
	{"raft-secret-file", required_argument, NULL, OPT_RAFT_SECRET},
	{"raft-log-entries", required_argument, NULL, OPT_RAFT_LOG_ENTRIES},
	{"raft-tls-cert", required_argument, NULL, OPT_RAFT_TLS_CERT},
	{"raft-tls-key", required_argument, NULL, OPT_RAFT_TLS_KEY},
	{"raft-tls-ca", required_argument, NULL, OPT_RAFT_TLS_CA},
	{"raft-insecure-cleartext", no_argument, NULL, OPT_RAFT_CLEARTEXT},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"config", required_argument, NULL, OPT_CONFIG},
	{NULL, 0, NULL, 0}
};

int
ts_options_kind(const char *name)
{
	for (int i = 0; long_options[i].name != NULL; i++)
		if (strcmp(long_options[i].name, name) == 0)
			return long_options[i].has_arg == no_argument ? 1 : 0;
	return -1;
}

/*
 * options's defaults, before the command line; room for every --listen
 * (argc bounds their number).
 */
static void
options_set_defaults(TsMainOptions *options, int argc)
{
	TsStoreOptions store_defaults;

	memset(options, 0, sizeof(*options));
	ts_store_default_options(&store_defaults);
	options->session_memory_mb = store_defaults.session_memory_bytes / TS_MB;
	options->block_cache_mb = store_defaults.block_cache_bytes / TS_MB;
	options->sst_compression = store_defaults.compression;
	options->sst_block_kb = store_defaults.block_bytes / 1024;
	options->memory_mb = (size_t) (store_defaults.memory_bytes / TS_MB);
	options->max_frame_mb = TC_FRAME_MAX_DEFAULT / TS_MB;
	options->in_doubt_wait_ms = store_defaults.in_doubt_wait_ms;
	options->raft_log_entries = 128;
	options->log_level = TS_LOG_INFO;
	options->socket_mode = 0600;
	options->max_connections = TS_DEFAULT_MAX_CONNECTIONS;
	options->max_unauthenticated = TS_DEFAULT_MAX_UNAUTHENTICATED;
	options->handshake_timeout_s = TS_DEFAULT_HANDSHAKE_TIMEOUT_S;
	options->idle_timeout_s = TS_DEFAULT_IDLE_TIMEOUT_S;
	options->max_namespace_connections = TS_DEFAULT_MAX_NAMESPACE_CONNECTIONS;
	options->decode_memory_mb = TS_DEFAULT_DECODE_MEMORY_MB;
	options->listen = calloc((size_t) argc, sizeof(TcAddress));
	if (options->listen == NULL)
	{
		fprintf(stderr, "tserver: out of memory\n");
		exit(1);
	}
}

/*
 * What the options must be together, once all are read: what is required,
 * what goes together, and secure by default (ts_options_bad otherwise).
 */
static void
options_check(TsMainOptions *options)
{
	if (options->data_dir == NULL)
		ts_options_bad("--data is required");
	if (options->nlisten == 0)
		ts_options_bad("at least one --listen is required");
	if ((options->tls_cert != NULL) != (options->tls_key != NULL))
		ts_options_bad("--tls-cert and --tls-key go together");
	if (options->tls_ca != NULL && options->tls_cert == NULL)
		ts_options_bad("--tls-ca needs --tls-cert and --tls-key");

	/* secure by default: no client gets in unauthenticated unless asked for */
	if (options->token_file == NULL && options->scoped_tokens_file == NULL &&
		options->nallowed_uids == 0 && !options->insecure)
		ts_options_bad("no way to authenticate clients: give --token-file FILE, --scoped-tokens FILE "
					 "or --allow-uid UID (unix sockets), or --insecure to let every client that "
					 "reaches a listener in with full access");
	if ((options->socket_mode & S_IWOTH) && !options->insecure)
		ts_options_bad("--socket-mode %04o lets every local user connect: use a group mode "
					 "(0660), or add --insecure", (unsigned) options->socket_mode);
	if ((options->raft_id != 0) != (options->raft_listen != NULL) ||
		(options->raft_id != 0) != (options->raft_secret_file != NULL))
		ts_options_bad("a replica group's member needs --raft-id, --raft-listen and "
					 "--raft-secret-file together");
	if (options->raft_id == 0 && (options->raft_dir != NULL || options->raft_bootstrap != NULL))
		ts_options_bad("--raft-dir and --raft-bootstrap need --raft-id");
	/* secure by default: the raft port speaks TLS unless told not to */
	if (options->raft_id != 0 && !options->raft_cleartext &&
		(options->raft_tls_cert == NULL || options->raft_tls_key == NULL ||
		 options->raft_tls_ca == NULL))
		ts_options_bad("a replica group's member needs --raft-tls-cert, --raft-tls-key and "
					 "--raft-tls-ca (its raft port's TLS), or --raft-insecure-cleartext");
	if (options->raft_cleartext &&
		(options->raft_tls_cert != NULL || options->raft_tls_key != NULL ||
		 options->raft_tls_ca != NULL))
		ts_options_bad("--raft-insecure-cleartext and --raft-tls-* exclude each other");
	if (options->raft_id == 0 && (options->raft_cleartext || options->raft_tls_cert != NULL ||
								  options->raft_tls_key != NULL || options->raft_tls_ca != NULL))
		ts_options_bad("--raft-tls-* and --raft-insecure-cleartext need --raft-id");
	if (options->max_unauthenticated > options->max_connections)
		options->max_unauthenticated = options->max_connections;

	/* a tcp client has no uid to check: it would get in unchecked */
	if (options->nallowed_uids > 0 && options->token_file == NULL &&
		options->scoped_tokens_file == NULL)
	{
		for (int i = 0; i < options->nlisten; i++)
		{
			if (options->listen[i].kind == TC_ADDRESS_TCP)
				ts_options_bad("--allow-uid cannot check tcp clients: use --token-file too, or listen on unix sockets only");
		}
	}
}

void
ts_options_parse(int argc, char **argv, char *const *origins, TsMainOptions *options)
{
	int			opt;

	options_set_defaults(options, argc);

	/*
	 * "+": no reordering, so origins[] stays argv's (an argument that is no
	 * option stops the loop, and is refused below); ":": a missing value
	 * told apart.  The errors are ours.
	 */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:", long_options, NULL)) != -1)
	{
		char		err[256];

		/* a file's option is one argument, "--name=value" */
		bad_origin = origins != NULL && optind > 1 ? origins[optind - 1] : NULL;
		switch (opt)
		{
			case OPT_DATA:
				if (optarg[0] == '\0')
					ts_options_bad("--data needs a directory");
				options->data_dir = optarg;
				break;
			case OPT_LISTEN:
				if (tc_address_is_null(optarg))
					ts_options_bad("cannot listen on \"%s\": null: is a client-side transport", optarg);
				if (!tc_address_parse(optarg, &options->listen[options->nlisten],
									  err, sizeof(err)))
					ts_options_bad("%s", err);
				options->nlisten++;
				break;
			case OPT_TOKEN_FILE:
				options->token_file = optarg;
				break;
			case OPT_ALLOW_UID:
				parse_allowed_uids(optarg, options);
				break;
			case OPT_SCOPED_TOKENS:
				options->scoped_tokens_file = optarg;
				break;
			case OPT_INSECURE:
				options->insecure = true;
				break;
			case OPT_SOCKET_MODE:
				options->socket_mode = parse_socket_mode(optarg);
				break;
			case OPT_MAX_CONNECTIONS:
				options->max_connections =
					(int) parse_number("--max-connections", optarg, 1, 1000000);
				break;
			case OPT_MAX_UNAUTHENTICATED:
				options->max_unauthenticated =
					(int) parse_number("--max-unauthenticated", optarg, 1, 1000000);
				break;
			case OPT_HANDSHAKE_TIMEOUT:
				options->handshake_timeout_s =
					(int) parse_number("--handshake-timeout", optarg, 1, 3600);
				break;
			case OPT_IDLE_TIMEOUT:
				options->idle_timeout_s = (int) parse_number("--idle-timeout", optarg, 0, 86400);
				break;
			case OPT_MAX_NAMESPACE_CONNECTIONS:
				options->max_namespace_connections =
					(int) parse_number("--max-namespace-connections", optarg, 1, 1000000);
				break;
			case OPT_MAX_NAMESPACE_DISK:
				options->max_namespace_disk_mb =
					parse_number("--max-namespace-disk-mb", optarg, 0, 1024L * 1024 * 1024);
				break;
			case OPT_DECODE_MEMORY:
				options->decode_memory_mb = parse_number("--decode-memory-mb", optarg, 1, 1024 * 1024);
				break;
			case OPT_TLS_CERT:
				options->tls_cert = optarg;
				break;
			case OPT_TLS_KEY:
				options->tls_key = optarg;
				break;
			case OPT_TLS_CA:
				options->tls_ca = optarg;
				break;
			case OPT_SESSION_MEMORY:
				/* up to 1 TiB: far beyond any machine, well within size_t */
				options->session_memory_mb =
					parse_number("--session-memory-mb", optarg, 1, 1024 * 1024);
				break;
			case OPT_MEMORY:
				options->memory_mb = parse_number("--memory-mb", optarg, 0, 1024 * 1024);
				break;
			case OPT_BLOCK_CACHE:
				options->block_cache_mb = parse_number("--block-cache-mb", optarg, 1, 1024 * 1024);
				break;
			case OPT_SST_COMPRESSION:
				if (strcmp(optarg, "none") == 0)
					options->sst_compression = TS_COMPRESSION_NONE;
				else if (strcmp(optarg, "lz4") == 0)
					options->sst_compression = TS_COMPRESSION_LZ4;
				else if (strcmp(optarg, "zstd") == 0)
					options->sst_compression = TS_COMPRESSION_ZSTD;
				else
					ts_options_bad("--sst-compression must be none, lz4 or zstd, not \"%s\"", optarg);
				break;
			case OPT_SST_BLOCK:
				options->sst_block_kb = parse_number("--sst-block-kb", optarg, 1, 1024);
				break;
			case OPT_MERGE_THREADS:
				options->merge_threads =
					(int) parse_number("--merge-threads", optarg, 1, TS_MERGE_THREADS_MAX);
				break;
			case OPT_MAX_FRAME:
				/* a frame's length is a 32-bit field */
				options->max_frame_mb =
					(uint32_t) parse_number("--max-frame-mb", optarg, 1, 4095);
				break;
			case OPT_IN_DOUBT_WAIT:
				options->in_doubt_wait_ms =
					(int) parse_number("--in-doubt-wait-ms", optarg, 0, TS_IN_DOUBT_WAIT_MS_MAX);
				break;
			case OPT_NO_SYNC:
				options->no_sync = true;
				break;
			case OPT_STATISTICS:
				options->statistics = true;
				break;
			case OPT_LOG_FORMAT:
				if (strcmp(optarg, "json") == 0)
					ts_log_json = true;
				else if (strcmp(optarg, "text") == 0)
					ts_log_json = false;
				else
					ts_options_bad("--log-format must be text or json, not \"%s\"", optarg);
				break;
			case OPT_LOG_LEVEL:
				if (strcmp(optarg, "debug") == 0)
					options->log_level = TS_LOG_DEBUG;
				else if (strcmp(optarg, "info") == 0)
					options->log_level = TS_LOG_INFO;
				else if (strcmp(optarg, "warning") == 0)
					options->log_level = TS_LOG_WARNING;
				else if (strcmp(optarg, "error") == 0)
					options->log_level = TS_LOG_ERROR;
				else
					ts_options_bad("--log-level must be debug, info, warning or error, not \"%s\"",
								 optarg);
				break;
			case OPT_RAFT_ID:
				options->raft_id = parse_number("--raft-id", optarg, 1, 1000000);
				break;
			case OPT_RAFT_LISTEN:
				if (strlen(optarg) >= TS_RAFT_ADDRESS_MAX || strchr(optarg, ':') == NULL)
					ts_options_bad("--raft-listen needs IP:PORT, not \"%s\"", optarg);
				options->raft_listen = optarg;
				break;
			case OPT_RAFT_DIR:
				options->raft_dir = optarg;
				break;
			case OPT_RAFT_BOOTSTRAP:
				options->raft_bootstrap = optarg;
				break;
			case OPT_RAFT_SECRET:
				options->raft_secret_file = optarg;
				break;
			case OPT_RAFT_TLS_CERT:
				options->raft_tls_cert = optarg;
				break;
			case OPT_RAFT_TLS_KEY:
				options->raft_tls_key = optarg;
				break;
			case OPT_RAFT_TLS_CA:
				options->raft_tls_ca = optarg;
				break;
			case OPT_RAFT_CLEARTEXT:
				options->raft_cleartext = true;
				break;
			case OPT_METRICS:
				if (!tc_address_parse(optarg, &options->metrics, err, sizeof(err)))
					ts_options_bad("%s", err);
				if (options->metrics.kind != TC_ADDRESS_TCP)
					ts_options_bad("--metrics takes tcp:HOST:PORT, not \"%s\"", optarg);
				options->has_metrics = true;
				break;
			case OPT_RAFT_LOG_ENTRIES:
				options->raft_log_entries =
					(unsigned) parse_number("--raft-log-entries", optarg, 8, 100000);
				break;
			case OPT_CONFIG:
				options->config_path = optarg;
				break;
			case OPT_HELP:
				usage(stdout);
				exit(0);
			case OPT_VERSION:
				printf("tserver %s\n", TS_VERSION);
				exit(0);
			case ':':
				ts_options_bad("option \"%s\" needs a value", argv[optind - 1]);
			default:
				if (optopt >= OPT_DATA)
					ts_options_bad("option \"%.*s\" takes no value",
								   (int) strcspn(argv[optind - 1], "="), argv[optind - 1]);
				if (optopt != 0)
					ts_options_bad("invalid option \"-%c\"", optopt);
				ts_options_bad("unrecognized option \"%s\"", argv[optind - 1]);
		}
	}
	bad_origin = NULL;
	if (optind < argc)
		ts_options_bad("unexpected argument \"%s\"", argv[optind]);
	options_check(options);
}

