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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tc_auth.h"
#include "ts_config.h"
#include "ts_options.h"
#include "ts_log.h"
#include "ts_tls.h"

/* bytes below which a token draws a warning at startup */
#define TS_TOKEN_MIN_ADVISED 16


/* The running server, for the signal handlers' sake only. */
static TsServer *volatile signal_server;

/* The program and its arguments, for a group member's restart. */
static char main_path[4096];
static char **main_argv;

/* The command line as given, and what a reload may change (ts_config.h). */
static int	given_argc;
static char **given_argv;
static const char *config_path;
static TsReloadable reloadable;
static char **merged_argv;		/* with the file's options: options point into it */
static char **merged_origins;	/* [merged] "FILE:LINE" of the file's options */

/*
 * Tell systemd (Type=notify, $NOTIFY_SOCKET) how the service is: READY=1,
 * RELOADING=1, STOPPING=1.  Nothing without $NOTIFY_SOCKET.
 */
static void
notify_service(const char *state)
{
	const char *where = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t	len;
	int			fd;

	if (where == NULL || (where[0] != '/' && where[0] != '@') ||
		strlen(where) >= sizeof(sun.sun_path))
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, where);
	if (where[0] == '@')
		sun.sun_path[0] = '\0';	/* an abstract socket */
	len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(where));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *) &sun, len) < 0)
		ts_log(TS_LOG_WARNING, "could not tell systemd \"%s\": %s", state, strerror(errno));
	close(fd);
}

/* TsServer's reload (SIGHUP), on the accept loop's thread. */
static void
reload_main(void *arg)
{
	notify_service("RELOADING=1");
	ts_config_reload(config_path, given_argc, given_argv, arg, &reloadable);
	notify_service("READY=1");
}

/* SIGHUP: ask the server to reload; async-signal-safe. */
static void
reload_signal_handler(int signo)
{
	TsServer   *server = signal_server;

	(void) signo;
	if (server != NULL)
		ts_server_request_reload(server);
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
	/* SIGHUP reloads once serving; ignored until then, and after */
	sa.sa_handler = handler == shutdown_signal_handler ? reload_signal_handler : SIG_IGN;
	sigaction(SIGHUP, &sa, NULL);
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
	config.raft.tls_cert = options->raft_tls_cert;
	config.raft.tls_key = options->raft_tls_key;
	config.raft.tls_ca = options->raft_tls_ca;
	config.raft.cleartext = options->raft_cleartext;
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
	config.reload = ts_store_reload_sessions;
	config.clean_staging = ts_prepared_clean_staging;
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
	given_argc = argc;
	given_argv = argv;
	config_path = ts_config_path(argc, argv);
	if (config_path != NULL)
	{
		/* the file's options first: the command line's come after, and win */
		if (ts_config_merge(config_path, argc, argv, ts_options_kind,
							&argc, &merged_argv, &merged_origins, err, sizeof(err)) != 0)
			ts_options_bad("%s", err);
		argv = merged_argv;
	}
	ts_options_parse(argc, argv, merged_origins, &options);
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
	config.idle_timeout_ms = options.idle_timeout_s * 1000;
	config.max_namespace_connections = options.max_namespace_connections;
	config.decode_total_bytes = options.decode_memory_mb * TS_MB;
	server = ts_server_create(&config, err, sizeof(err));
	if (server == NULL)
	{
		ts_log(TS_LOG_ERROR, "%s", err);
		goto done;
	}

	reloadable.log_level = options.log_level;
	reloadable.max_connections = options.max_connections;
	reloadable.max_unauthenticated = options.max_unauthenticated;
	reloadable.handshake_timeout_s = options.handshake_timeout_s;
	reloadable.idle_timeout_s = options.idle_timeout_s;
	reloadable.max_namespace_connections = options.max_namespace_connections;
	reloadable.token_file = options.token_file;
	reloadable.scoped_tokens_file = options.scoped_tokens_file;
	reloadable.uids_admit = options.nallowed_uids > 0;
	reloadable.insecure = options.insecure;
	reloadable.start_argc = argc;
	reloadable.start_args = argv;
	reloadable.start_origins = merged_origins;
	reloadable.kind = ts_options_kind;
	ts_server_set_reload(server, reload_main, server);

	/* from here a signal is a request to stop (or SIGHUP, to reload), honoured once serving */
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
	store_options.block_cache_bytes = options.block_cache_mb * 1024 * 1024;
	store_options.compression = options.sst_compression;
	store_options.block_bytes = options.sst_block_kb * 1024;
	store_options.sync_commits = !options.no_sync;
	store_options.statistics = options.statistics;
	store_options.in_doubt_wait_ms = options.in_doubt_wait_ms;
	store_options.namespace_disk_bytes = (uint64_t) options.max_namespace_disk_mb * TS_MB;
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
	notify_service("READY=1");
	if (ts_server_run(server, store) == 0)
		status = 0;
	notify_service("STOPPING=1");
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
