/*
 * cli.h
 *		tserver-cli's commands and the helpers they share.  main (cli_main.c)
 *		parses the command line into CliOptions and runs one command; each
 *		command returns the exit status: 0 on success, 1 when something
 *		failed (the reason on stderr); a usage error exits 2 at once.
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "tc_auth.h"
#include "tc_client.h"
#include "tc_frame.h"

#define CLI_DEFAULT_ADDRESS "unix:/tmp/tcopy.sock"
#define CLI_CLIENT_NAME "tserver-cli"

/* Command-line settings; which ones apply depends on the command. */
typedef struct CliOptions
{
	const char *address;
	const char *token_file;
	const char *token;			/* token_buf once read; NULL: none */
	char		token_buf[TC_TOKEN_MAX + 1];
	const char *sslmode;		/* NULL: $TCOPY_SSLMODE, else the default */
	TcTlsOptions tls;			/* from --sslmode and its files */
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
	const char *prepare_gid;	/* --prepare: prepare under it, not commit */
	bool		truncate;		/* --truncate: the session truncates first */
	const char *on_conflict;	/* --on-conflict: error, ignore, replace */
	bool		has_again;
	int64_t		again;			/* --again: this aid once more, value + 1 */
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
	/* labels */
	const char *forget;			/* --forget: the label to forget */
	/* backup: the directory, on the tserver's machine */
	const char *dir;
	/* group-add, group-promote, group-remove; group-replace's new member */
	uint64_t	member_id;
	const char *member_address;
	uint64_t	replaced_id;	/* group-replace: the member it replaces */
	/* prepared, resolve */
	const char *prefix;
	const char *gid;
	bool		commit;
} CliOptions;

/* in cli_util.c */
extern void cli_usage_error(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));
extern int	cli_fail(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));
extern int64_t cli_parse_int(const char *option, const char *text, int64_t min, int64_t max);
extern int	cli_column_indexes(const Tcopy__Schema *schema, const char *table,
							   const char *list, uint32_t **indexes);
extern TcClient *cli_connect(const CliOptions *opts);
extern int	cli_client_fail(TcClient *client);
extern double cli_now(void);

/* in cli_server.c */
extern int	cli_ping(const CliOptions *opts);
extern int	cli_stats(const CliOptions *opts);
extern int	cli_sessions(const CliOptions *opts);
extern int	cli_raw(const CliOptions *opts);
extern int	cli_backup(const CliOptions *opts);
extern int	cli_group_status(const CliOptions *opts);
extern int	cli_group_add(const CliOptions *opts);
extern int	cli_group_promote(const CliOptions *opts);
extern int	cli_group_remove(const CliOptions *opts);
extern int	cli_group_replace(const CliOptions *opts);

/* in cli_load.c */
extern int	cli_load(const CliOptions *opts);

/* in cli_scan.c */
extern int	cli_scan(const CliOptions *opts);

/* in cli_prepared.c */
extern int	cli_prepared(const CliOptions *opts);
extern int	cli_resolve(const CliOptions *opts);
/* Unix time ms as ISO 8601 in UTC, with milliseconds, into out. */
extern void cli_format_ms(uint64_t ms, char *out, size_t size);

/* in cli_tables.c */
extern int	cli_create(const CliOptions *opts);
extern int	cli_truncate(const CliOptions *opts);
extern int	cli_drop(const CliOptions *opts);
extern int	cli_labels(const CliOptions *opts);
extern int	cli_tables(const CliOptions *opts);

#endif							/* CLI_H */
