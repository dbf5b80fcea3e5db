/*
 * ts_config.h
 *		The tserver's configuration file (tserver --config FILE): every
 *		command-line option can be set there, one per line,
 *
 *			# a comment
 *			listen = unix:/run/tcopy/ts.sock
 *			listen = tcp:127.0.0.1:5480
 *			token-file = /etc/tcopy/token
 *			no-sync = false
 *
 *		an option's long name without its dashes, "=", its value (an option
 *		that takes none: true, or false to leave it out).  An option given
 *		on the command line wins: every line of the file for it is ignored
 *		(so a repeatable one, such as listen, is the command line's alone).
 */
#ifndef TS_CONFIG_H
#define TS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* The value of --config FILE (or --config=FILE) in argv, or NULL. */
const char *ts_config_path(int argc, char **argv);

/*
 * Read the file at path into the options it sets, as "--name=value" (or
 * "--name") arguments, those the command line argv also sets left out;
 * kind(name) says whether an option takes a value (0), none (1), or is
 * unknown (-1: an error).  The merged
 * argument vector (argv[0], the file's, then argv's others) into *out_argv,
 * and where each came from into *out_origins (as many: "FILE:LINE" for
 * the file's, NULL for the command line's), both malloc'd, kept for the
 * process's life.  0, or -1 with err naming the file and line.
 */
int			ts_config_merge(const char *path, int argc, char **argv,
							int (*kind) (const char *name),
							int *out_argc, char ***out_argv, char ***out_origins,
							char *err, size_t errlen);

/*
 * What a reload (SIGHUP) may change without a restart, as the tserver runs
 * with it now; the paths are the caller's (or the reload's, kept for the
 * process's life).
 */
typedef struct TsReloadable
{
	int			log_level;		/* a TsLogLevel */
	int			max_connections;
	int			max_unauthenticated;
	int			handshake_timeout_s;
	int			idle_timeout_s;
	int			max_namespace_connections;
	const char *token_file;
	const char *scoped_tokens_file;
	char	   *owned_token_file;	/* a reload's, freed when replaced */
	char	   *owned_scoped_file;
	bool		uids_admit;		/* --allow-uid given: no token may be needed */
	bool		insecure;		/* --insecure: anyone */
	/* what the tserver started with, to tell what a reload leaves out */
	int			start_argc;
	char	  **start_args;		/* [start_argc]: the merged arguments */
	char	  **start_origins;	/* [start_argc]: "FILE:LINE" of the file's */
	int			(*kind) (const char *name); /* ts_config_merge's */
} TsReloadable;

struct TsServer;

/*
 * Reload the file at path (NULL: none, the token files only): each
 * reloadable option it sets and the command
 * line argv does not, validated as at start, applied to server and to
 * *now (an option whose line is gone keeps its value).  Tokens are read
 * again from the token and scoped tokens files; connections proven with
 * the old ones keep them.  Anything wrong is logged, naming the file and
 * line, and leaves that option as it was; the rest applies.  Each setting
 * of the file left unapplied is logged with why: unknown, the command
 * line's wins, or it needs a restart (set, changed or dropped since the
 * start).  On the accept loop's thread.
 */
void		ts_config_reload(const char *path, int argc, char **argv, struct TsServer *server,
							 TsReloadable *now);

#endif							/* TS_CONFIG_H */
