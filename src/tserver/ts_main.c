/*
 * ts_main.c
 *		tserver's entry point: arguments, signals, startup and shutdown.
 *
 * Only main and its argument parsing live here: the unit tests link every
 * other tserver module, so nothing they need may be defined in this file.
 */
#include "ts_server.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_auth.h"
#include "ts_log.h"
#include "ts_tls.h"

/* bytes below which a token draws a warning at startup */
#define TS_TOKEN_MIN_ADVISED 16

#define EXIT_USAGE 2
#define TS_MB (1024 * 1024)
#define TS_DEFAULT_MAX_CONNECTIONS 256
#define TS_DEFAULT_MAX_UNAUTHENTICATED 32
#define TS_DEFAULT_HANDSHAKE_TIMEOUT_S 10
#define TS_DEFAULT_DECODE_MEMORY_MB 2048

typedef struct TsMainOptions
{
	const char *data_dir;
	TcAddress  *listen;			/* [nlisten], from repeated --listen */
	int			nlisten;
	TcAddress	metrics;		/* --metrics tcp:HOST:PORT */
	bool		has_metrics;
	const char *token_file;		/* the full-access token; NULL: none */
	const char *scoped_tokens_file; /* NAMESPACE TOKEN lines; NULL: none */
	uid_t	   *allowed_uids;	/* [nallowed_uids], from --allow-uid */
	size_t		nallowed_uids;
	bool		insecure;		/* no authentication is acceptable */
	mode_t		socket_mode;	/* of unix socket files */
	int			max_connections;
	int			max_unauthenticated;
	int			handshake_timeout_s;
	size_t		decode_memory_mb;
	size_t		session_memory_mb;
	size_t		memory_mb;
	int			merge_threads;	/* 0: the store's default */
	int			in_doubt_wait_ms;
	uint32_t	max_frame_mb;
	const char *tls_cert;		/* NULL: tcp: is plain text */
	const char *tls_key;
	const char *tls_ca;			/* NULL: client certificates not asked for */
	bool		no_sync;
	bool		statistics;
	TsLogLevel	log_level;
	/* a replica group's member: all of them, or none */
	uint64_t	raft_id;
	const char *raft_listen;
	const char *raft_dir;		/* NULL: DATA/raft */
	const char *raft_bootstrap;
	const char *raft_secret_file;
	unsigned	raft_log_entries;	/* entries between snapshots */
} TsMainOptions;

/* The running server, for the signal handlers' sake only. */
static TsServer *volatile signal_server;

/* The program and its arguments, for a group member's restart. */
static char main_path[4096];
static char **main_argv;

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
			"  --decode-memory-mb N       memory all connections' frames unpack into\n"
			"                             together; a frame waits for it (default %d)\n"
			"Storage:\n"
			"  --session-memory-mb N      memory a write session stages before spilling\n"
			"                             to disk (default %zu)\n"
			"  --memory-mb N              memory all write sessions together stage before\n"
			"                             each spills early, at 1 MB (default %llu; 0: none)\n"
			"  --merge-threads N          threads of a spilled session's merge at commit\n"
			"                             (default: the cores, at most 4; at most 8)\n"
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
			"  --help                     show this help and exit\n",
			TS_VERSION, TS_DEFAULT_MAX_CONNECTIONS, TS_DEFAULT_MAX_UNAUTHENTICATED,
			TS_DEFAULT_HANDSHAKE_TIMEOUT_S, TS_DEFAULT_DECODE_MEMORY_MB,
			defaults.session_memory_bytes / TS_MB,
			(unsigned long long) (defaults.memory_bytes / TS_MB),
			(unsigned) (TC_FRAME_MAX_DEFAULT / TS_MB), defaults.in_doubt_wait_ms);
}

/* Report a bad argument and exit the way every bad argument does. */
static void
bad_argument(const char *fmt,...)
__attribute__((format(printf, 1, 2), noreturn));

static void
bad_argument(const char *fmt,...)
{
	va_list		args;

	fprintf(stderr, "tserver: ");
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fprintf(stderr, "\n\n");
	usage(stderr);
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
		bad_argument("%s needs an integer from %lu to %lu, not \"%s\"", option, min, max, text);
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
				bad_argument("--allow-uid: \"%s\" is not a uid", item);
			uid = (uid_t) value;
		}
		else
		{
			struct passwd *pw = getpwnam(item);

			if (pw == NULL)
				bad_argument("--allow-uid: no user is called \"%s\"", item);
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
		bad_argument("--allow-uid needs at least one uid or user name");
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
		bad_argument("--socket-mode needs an octal mode from 0600 to 0777 with the owner's "
					 "read and write (such as 0600 or 0660), not \"%s\"", text);
	return (mode_t) value;
}

/* Fill options from argv, or exit with a usage error. */
static void
parse_arguments(int argc, char **argv, TsMainOptions *options)
{
	enum
	{
		OPT_DATA = 256, OPT_LISTEN, OPT_TOKEN_FILE, OPT_SESSION_MEMORY, OPT_MEMORY,
		OPT_MERGE_THREADS, OPT_MAX_FRAME, OPT_NO_SYNC, OPT_STATISTICS, OPT_LOG_LEVEL, OPT_ALLOW_UID, OPT_HELP,
		OPT_SCOPED_TOKENS, OPT_INSECURE, OPT_SOCKET_MODE, OPT_MAX_CONNECTIONS,
		OPT_MAX_UNAUTHENTICATED, OPT_HANDSHAKE_TIMEOUT, OPT_DECODE_MEMORY,
		OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CA, OPT_IN_DOUBT_WAIT,
		OPT_RAFT_ID, OPT_RAFT_LISTEN, OPT_RAFT_DIR, OPT_RAFT_BOOTSTRAP, OPT_RAFT_SECRET,
		OPT_RAFT_LOG_ENTRIES, OPT_METRICS
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
		{"decode-memory-mb", required_argument, NULL, OPT_DECODE_MEMORY},
		{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
		{"tls-key", required_argument, NULL, OPT_TLS_KEY},
		{"tls-ca", required_argument, NULL, OPT_TLS_CA},
		{"session-memory-mb", required_argument, NULL, OPT_SESSION_MEMORY},
		{"memory-mb", required_argument, NULL, OPT_MEMORY},
		{"merge-threads", required_argument, NULL, OPT_MERGE_THREADS},
		{"max-frame-mb", required_argument, NULL, OPT_MAX_FRAME},
		{"in-doubt-wait-ms", required_argument, NULL, OPT_IN_DOUBT_WAIT},
		{"no-sync", no_argument, NULL, OPT_NO_SYNC},
		{"statistics", no_argument, NULL, OPT_STATISTICS},
		{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
		{"help", no_argument, NULL, OPT_HELP},
		{"raft-id", required_argument, NULL, OPT_RAFT_ID},
		{"raft-listen", required_argument, NULL, OPT_RAFT_LISTEN},
		{"raft-dir", required_argument, NULL, OPT_RAFT_DIR},
		{"raft-bootstrap", required_argument, NULL, OPT_RAFT_BOOTSTRAP},
		{"raft-secret-file", required_argument, NULL, OPT_RAFT_SECRET},
		{"raft-log-entries", required_argument, NULL, OPT_RAFT_LOG_ENTRIES},
		{"metrics", required_argument, NULL, OPT_METRICS},
		{NULL, 0, NULL, 0}
	};
	TsStoreOptions store_defaults;
	int			opt;

	memset(options, 0, sizeof(*options));
	ts_store_default_options(&store_defaults);
	options->session_memory_mb = store_defaults.session_memory_bytes / TS_MB;
	options->memory_mb = (size_t) (store_defaults.memory_bytes / TS_MB);
	options->max_frame_mb = TC_FRAME_MAX_DEFAULT / TS_MB;
	options->in_doubt_wait_ms = store_defaults.in_doubt_wait_ms;
	options->raft_log_entries = 128;
	options->log_level = TS_LOG_INFO;
	options->socket_mode = 0600;
	options->max_connections = TS_DEFAULT_MAX_CONNECTIONS;
	options->max_unauthenticated = TS_DEFAULT_MAX_UNAUTHENTICATED;
	options->handshake_timeout_s = TS_DEFAULT_HANDSHAKE_TIMEOUT_S;
	options->decode_memory_mb = TS_DEFAULT_DECODE_MEMORY_MB;
	/* every --listen is an argument, so argc bounds their number */
	options->listen = calloc((size_t) argc, sizeof(TcAddress));
	if (options->listen == NULL)
	{
		fprintf(stderr, "tserver: out of memory\n");
		exit(1);
	}

	while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1)
	{
		char		err[256];

		switch (opt)
		{
			case OPT_DATA:
				if (optarg[0] == '\0')
					bad_argument("--data needs a directory");
				options->data_dir = optarg;
				break;
			case OPT_LISTEN:
				if (tc_address_is_null(optarg))
					bad_argument("cannot listen on \"%s\": null: is a client-side transport", optarg);
				if (!tc_address_parse(optarg, &options->listen[options->nlisten],
									  err, sizeof(err)))
					bad_argument("%s", err);
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
					bad_argument("--log-level must be debug, info, warning or error, not \"%s\"",
								 optarg);
				break;
			case OPT_RAFT_ID:
				options->raft_id = parse_number("--raft-id", optarg, 1, 1000000);
				break;
			case OPT_RAFT_LISTEN:
				if (strlen(optarg) >= TS_RAFT_ADDRESS_MAX || strchr(optarg, ':') == NULL)
					bad_argument("--raft-listen needs IP:PORT, not \"%s\"", optarg);
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
			case OPT_METRICS:
				if (!tc_address_parse(optarg, &options->metrics, err, sizeof(err)))
					bad_argument("%s", err);
				if (options->metrics.kind != TC_ADDRESS_TCP)
					bad_argument("--metrics takes tcp:HOST:PORT, not \"%s\"", optarg);
				options->has_metrics = true;
				break;
			case OPT_RAFT_LOG_ENTRIES:
				options->raft_log_entries =
					(unsigned) parse_number("--raft-log-entries", optarg, 8, 100000);
				break;
			case OPT_HELP:
				usage(stdout);
				exit(0);
			default:
				/* getopt_long has said what is wrong */
				fprintf(stderr, "\n");
				usage(stderr);
				exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		bad_argument("unexpected argument \"%s\"", argv[optind]);
	if (options->data_dir == NULL)
		bad_argument("--data is required");
	if (options->nlisten == 0)
		bad_argument("at least one --listen is required");
	if ((options->tls_cert != NULL) != (options->tls_key != NULL))
		bad_argument("--tls-cert and --tls-key go together");
	if (options->tls_ca != NULL && options->tls_cert == NULL)
		bad_argument("--tls-ca needs --tls-cert and --tls-key");

	/* secure by default: no client gets in unauthenticated unless asked for */
	if (options->token_file == NULL && options->scoped_tokens_file == NULL &&
		options->nallowed_uids == 0 && !options->insecure)
		bad_argument("no way to authenticate clients: give --token-file FILE, --scoped-tokens FILE "
					 "or --allow-uid UID (unix sockets), or --insecure to let every client that "
					 "reaches a listener in with full access");
	if ((options->socket_mode & S_IWOTH) && !options->insecure)
		bad_argument("--socket-mode %04o lets every local user connect: use a group mode "
					 "(0660), or add --insecure", (unsigned) options->socket_mode);
	if ((options->raft_id != 0) != (options->raft_listen != NULL) ||
		(options->raft_id != 0) != (options->raft_secret_file != NULL))
		bad_argument("a replica group's member needs --raft-id, --raft-listen and "
					 "--raft-secret-file together");
	if (options->raft_id == 0 && (options->raft_dir != NULL || options->raft_bootstrap != NULL))
		bad_argument("--raft-dir and --raft-bootstrap need --raft-id");
	if (options->max_unauthenticated > options->max_connections)
		options->max_unauthenticated = options->max_connections;

	/* a tcp client has no uid to check: it would get in unchecked */
	if (options->nallowed_uids > 0 && options->token_file == NULL &&
		options->scoped_tokens_file == NULL)
	{
		for (int i = 0; i < options->nlisten; i++)
		{
			if (options->listen[i].kind == TC_ADDRESS_TCP)
				bad_argument("--allow-uid cannot check tcp clients: use --token-file too, or listen on unix sockets only");
		}
	}
}

/* SIGTERM, SIGINT: ask the server to stop; async-signal-safe. */
static void
shutdown_signal_handler(int signo)
{
	TsServer   *server = signal_server;

	(void) signo;
	if (server != NULL)
		ts_server_request_shutdown(server);
}

/* Route SIGTERM and SIGINT to handler (or SIG_IGN); ignore SIGPIPE. */
static void
set_signal_handlers(void (*handler) (int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/*
 * Whether the data directory, if it exists, is closed to others as a
 * Postgres data directory must be (0700, or 0750 for a group allowed to
 * read it): the rows are in its files.  0, or -1 with err.
 */
static int
check_data_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) != 0)
	{
		if (errno == ENOENT)
			return 0;			/* ts_store_open creates it, 0700 */
		snprintf(err, errlen, "could not stat data directory \"%s\": %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
	{
		snprintf(err, errlen, "data directory \"%s\" is not a directory", dir);
		return -1;
	}
	if ((st.st_mode & (S_IWGRP | S_IRWXO)) != 0)
	{
		snprintf(err, errlen, "data directory \"%s\" has invalid permissions %04o: "
				 "they must be 0700 (or 0750), as its files hold the rows (chmod 700 it)",
				 dir, (unsigned) (st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/*
 * A replica group's member restarts: the same program, the same arguments,
 * the same pid.  A leader that lost the lead does: whatever it held as
 * leader (sessions, claims, the catalogue in memory) goes with the
 * process; everything it acknowledged is in RocksDB, synced, and it comes
 * back a follower.  Its clients see their connection close, as at any
 * crash of a tserver.  A member that fetched another's state does, to put
 * it in place before its store opens (ts_group_catchup_finish).
 */
static void
restart_member(void *arg)
{
	(void) arg;
	ts_log(TS_LOG_WARNING, "restarting, with nothing of this process's memory kept");
	execv(main_path, main_argv);
	ts_log(TS_LOG_ERROR, "could not restart: %s: exiting", strerror(errno));
	_exit(1);
}

/* Make store a member of its replica group; NULL with the reason logged. */
static TsGroup *
start_group(const TsMainOptions *options, TsStore *store)
{
	TsGroupConfig config;
	TsGroup    *group;
	TsError		err;
	char		dir[4096];

	memset(&config, 0, sizeof(config));
	if (options->raft_dir != NULL)
		snprintf(dir, sizeof(dir), "%s", options->raft_dir);
	else
		snprintf(dir, sizeof(dir), "%s/raft", options->data_dir);
	config.raft.id = options->raft_id;
	snprintf(config.raft.address, sizeof(config.raft.address), "%s", options->raft_listen);
	config.raft.dir = dir;
	config.raft.bootstrap = options->raft_bootstrap;
	config.raft.secret_file = options->raft_secret_file;
	/*
	 * libraft 0.15 keeps every entry since the last snapshot in memory, and
	 * a spilled session's files travel in 1 MB entries: snapshots (a few
	 * bytes: docs/replication.md) every 128 entries, 256 kept behind each
	 * for a member that lags, bound that memory to about 400 MB.  A member
	 * further behind fetches another's state (ts_group_catchup.c).
	 */
	config.raft.snapshot_threshold = options->raft_log_entries;
	config.raft.snapshot_trailing = 2 * options->raft_log_entries;
	config.restart = restart_member;
	group = ts_group_start(store, &config, &err);
	if (group == NULL)
		ts_log(TS_LOG_ERROR, "could not join the replica group as member %llu: %s",
			   (unsigned long long) options->raft_id, err.message);
	else
		ts_log(TS_LOG_INFO, "member %llu of a replica group, at %s (log in \"%s\")",
			   (unsigned long long) options->raft_id, options->raft_listen, dir);
	return group;
}

/*
 * Start the store and the listeners, serve until SIGTERM or SIGINT, then
 * stop cleanly.  Exit status: 0 after a clean shutdown, 1 when startup or
 * the server failed, 2 for bad arguments.
 */
int
main(int argc, char **argv)
{
	TsMainOptions options;
	TsServerConfig config;
	TsStoreOptions store_options;
	TsServer   *server = NULL;
	TsStore    *store = NULL;
	TsGroup    *group = NULL;
	struct ssl_ctx_st *tls_ctx = NULL;
	TsError		store_err;
	TsCredentials credentials = {0};
	size_t		nscoped = 0;
	char		token[TC_TOKEN_MAX + 1];
	size_t		token_len = 0;
	char		err[512];
	int			status = 1;
	int			i;

	main_argv = argv;
	/* its path, not /proc/self/exe's name: ps and pkill know it as tserver */
	if (readlink("/proc/self/exe", main_path, sizeof(main_path) - 1) < 0)
		snprintf(main_path, sizeof(main_path), "/proc/self/exe");
	parse_arguments(argc, argv, &options);
	ts_log_min_level = options.log_level;
	set_signal_handlers(SIG_DFL);

	if (options.token_file != NULL)
	{
		int			rc = tc_auth_read_token_file(options.token_file, true, token, &token_len,
												 err, sizeof(err));

		if (rc == 0)
			rc = ts_auth_add(&credentials, NULL, (const uint8_t *) token, token_len,
							 err, sizeof(err));
		tc_auth_forget(token, sizeof(token));
		if (rc != 0)
		{
			ts_log(TS_LOG_ERROR, "%s", err);
			goto done;
		}
	}
	if (options.scoped_tokens_file != NULL)
	{
		if (ts_auth_read_scoped_tokens(&credentials, options.scoped_tokens_file,
									   err, sizeof(err)) != 0)
		{
			ts_log(TS_LOG_ERROR, "%s", err);
			goto done;
		}
		nscoped = credentials.n - (token_len > 0);
	}

	if (options.tls_cert != NULL)
	{
		tls_ctx = ts_tls_context_new(options.tls_cert, options.tls_key, options.tls_ca,
									 err, sizeof(err));
		if (tls_ctx == NULL)
		{
			ts_log(TS_LOG_ERROR, "%s", err);
			goto done;
		}
	}

	memset(&config, 0, sizeof(config));
	for (size_t j = 0; j < credentials.n; j++)
	{
		const TsCredential *cred = &credentials.items[j];

		/* a fake server may try to guess a token from a client's proof */
		if (cred->token_len < TS_TOKEN_MIN_ADVISED)
			ts_log(TS_LOG_WARNING, "the token %s%s%s is %zu bytes long: tokens should be long "
				   "random strings (e.g. openssl rand -base64 32), at least %d bytes",
				   cred->namespace != NULL ? "of namespace \"" : "of --token-file",
				   cred->namespace != NULL ? cred->namespace : "",
				   cred->namespace != NULL ? "\"" : "", cred->token_len, TS_TOKEN_MIN_ADVISED);
	}
	config.credentials = &credentials;
	config.tls_ctx = tls_ctx;
	config.max_frame_bytes = options.max_frame_mb * 1024u * 1024u;
	config.allowed_uids = options.allowed_uids;
	config.nallowed_uids = options.nallowed_uids;
	config.socket_mode = options.socket_mode;
	config.max_connections = options.max_connections;
	config.max_unauthenticated = options.max_unauthenticated;
	config.handshake_timeout_ms = options.handshake_timeout_s * 1000;
	config.decode_total_bytes = options.decode_memory_mb * TS_MB;
	server = ts_server_create(&config, err, sizeof(err));
	if (server == NULL)
	{
		ts_log(TS_LOG_ERROR, "%s", err);
		goto done;
	}

	/* from here a signal is a request to stop, honoured once serving */
	signal_server = server;
	set_signal_handlers(shutdown_signal_handler);

	ts_log(TS_LOG_INFO, "tserver %s starting, data directory \"%s\"",
		   TS_VERSION, options.data_dir);
	if (token_len > 0)
		ts_log(TS_LOG_INFO, "clients proving the --token-file token have full access");
	if (nscoped > 0)
		ts_log(TS_LOG_INFO, "%zu scoped token%s from \"%s\"", nscoped, nscoped == 1 ? "" : "s",
			   options.scoped_tokens_file);
	if (token_len == 0 && nscoped == 0 && options.nallowed_uids == 0)
		ts_log(TS_LOG_WARNING, "--insecure: clients are NOT authenticated: anyone who can "
			   "reach a listener can read, write and drop every table");
	if (options.nallowed_uids > 0)
	{
		char		uids[256] = "";
		size_t		used = 0;

		for (size_t j = 0; j < options.nallowed_uids && used < sizeof(uids); j++)
			used += (size_t) snprintf(uids + used, sizeof(uids) - used, "%s%u",
									  j > 0 ? "," : "", (unsigned) options.allowed_uids[j]);
		ts_log(TS_LOG_INFO, "unix socket clients running as uid %s need no token%s", uids,
			   token_len + nscoped > 0 ? "" : "; other clients are refused");
	}
	if (tls_ctx != NULL)
		ts_log(TS_LOG_INFO, "tcp: listeners speak TLS only%s",
			   options.tls_ca != NULL ? ", client certificates required" : "");
	else
	{
		for (i = 0; i < options.nlisten; i++)
		{
			if (options.listen[i].kind == TC_ADDRESS_TCP)
			{
				ts_log(TS_LOG_WARNING, "no --tls-cert: tcp: traffic, rows included, is plain text");
				break;
			}
		}
	}
	if (options.no_sync)
		ts_log(TS_LOG_WARNING, "--no-sync: nothing is synced; a machine crash may lose committed "
			   "and prepared transactions, which two-phase commit relies on");

	/* every file the store makes is its owner's only (RocksDB's are 0644 less this) */
	umask(S_IRWXG | S_IRWXO);
	if (check_data_dir(options.data_dir, err, sizeof(err)) != 0)
	{
		ts_log(TS_LOG_ERROR, "%s", err);
		goto done;
	}
	ts_store_default_options(&store_options);
	store_options.session_memory_bytes = options.session_memory_mb * 1024 * 1024;
	store_options.memory_bytes = (uint64_t) options.memory_mb * 1024 * 1024;
	store_options.sync_commits = !options.no_sync;
	store_options.statistics = options.statistics;
	store_options.in_doubt_wait_ms = options.in_doubt_wait_ms;
	store_options.replica_group = options.raft_id != 0;
	/* a group's members get a session's SST files as each is finished */
	if (store_options.replica_group)
		store_options.sst_target_bytes = 32 * 1024 * 1024;
	if (options.merge_threads > 0)
		store_options.merge_threads = options.merge_threads;
	memset(&store_err, 0, sizeof(store_err));
	memset(&store_err, 0, sizeof(store_err));
	if (options.raft_id != 0 && ts_group_catchup_finish(options.data_dir, &store_err) != 0)
	{
		ts_log(TS_LOG_ERROR, "%s", store_err.message);
		goto done;
	}
	store = ts_store_open(options.data_dir, &store_options, &store_err);
	if (store == NULL)
	{
		ts_log(TS_LOG_ERROR, "could not open the store in \"%s\": %s",
			   options.data_dir, store_err.message);
		goto done;
	}

	if (options.raft_id != 0)
	{
		if ((group = start_group(&options, store)) == NULL)
			goto done;
		ts_server_set_group(server, group);
	}

	for (i = 0; i < options.nlisten; i++)
	{
		if (ts_server_listen(server, &options.listen[i], err, sizeof(err)) != 0)
		{
			ts_log(TS_LOG_ERROR, "%s", err);
			goto done;
		}
	}

	if (options.has_metrics &&
		ts_server_metrics_listen(server, store, &options.metrics, err, sizeof(err)) != 0)
	{
		ts_log(TS_LOG_ERROR, "%s", err);
		goto done;
	}

	ts_log(TS_LOG_INFO, "tserver ready");
	if (ts_server_run(server, store) == 0)
		status = 0;
	ts_log(TS_LOG_INFO, "closing the store");

done:
	/* further signals must not reach a server being freed */
	set_signal_handlers(SIG_IGN);
	signal_server = NULL;
	ts_group_stop(group);
	if (store != NULL)
		ts_store_close(store);
	ts_server_free(server);
	if (tls_ctx != NULL)
		ts_tls_context_free(tls_ctx);
	free(options.listen);
	free(options.allowed_uids);
	ts_auth_free(&credentials);
	if (status == 0)
		ts_log(TS_LOG_INFO, "tserver stopped");
	return status;
}
