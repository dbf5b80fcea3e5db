/*
 * ts_options.h
 *		The tserver's command-line options (every one also a line of the
 *		configuration file, ts_config.h): parsed into TsMainOptions, with
 *		the usage message.
 */
#ifndef TS_OPTIONS_H
#define TS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tc_address.h"
#include "ts_log.h"

#define EXIT_USAGE 2
#define TS_MB (1024 * 1024)
#define TS_DEFAULT_MAX_CONNECTIONS 256
#define TS_DEFAULT_MAX_UNAUTHENTICATED 32
#define TS_DEFAULT_HANDSHAKE_TIMEOUT_S 10
#define TS_DEFAULT_IDLE_TIMEOUT_S 600
#define TS_DEFAULT_DECODE_MEMORY_MB 2048

typedef struct TsMainOptions
{
	const char *data_dir;
	TcAddress  *listen;			/* [nlisten], from repeated --listen */
	int			nlisten;
	TcAddress	metrics;		/* --metrics tcp:HOST:PORT */
	const char *config_path;	/* --config FILE, merged in before */
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
	int			idle_timeout_s;	/* 0: none */
	int			max_namespace_connections;
	size_t		max_namespace_disk_mb;	/* 0: no quota */
	size_t		decode_memory_mb;
	size_t		session_memory_mb;
	size_t		block_cache_mb;
	int			sst_compression;	/* TS_COMPRESSION_* */
	size_t		sst_block_kb;
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
	const char *raft_tls_cert;	/* the raft port's TLS: all three, or */
	const char *raft_tls_key;
	const char *raft_tls_ca;
	bool		raft_cleartext; /* --raft-insecure-cleartext */
	unsigned	raft_log_entries;	/* entries between snapshots */
} TsMainOptions;

/*
 * Fill options from argv, or exit with a usage error (status EXIT_USAGE):
 * one line saying what is wrong, naming the file and line of a
 * configuration file's option (origins: NULL, or where each of argv came
 * from, ts_config_merge's), and a pointer to --help.
 */
void		ts_options_parse(int argc, char **argv, char *const *origins,
							 TsMainOptions *options);

/* Whether option name takes a value (0), none (1), or is unknown (-1). */
int			ts_options_kind(const char *name);

/* Report a bad argument on stderr, in one line, and exit with EXIT_USAGE. */
void		ts_options_bad(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));

#endif							/* TS_OPTIONS_H */
