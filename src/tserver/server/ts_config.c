/*
 * ts_config.c
 *		The configuration file (ts_config.h): read into command-line
 *		arguments, which the command line's own override.
 */
#include "ts_config.h"

#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tc_auth.h"
#include "ts_auth.h"
#include "ts_log.h"
#include "ts_server.h"

#define LINE_MAX_LEN 4096

const char *
ts_config_path(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			return argv[i + 1];
		if (strncmp(argv[i], "--config=", 9) == 0)
			return argv[i] + 9;
	}
	return NULL;
}

/* Whether argv sets option name (--name, --name=...). */
static bool
argv_sets(int argc, char **argv, const char *name)
{
	size_t		len = strlen(name);

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, len) == 0 &&
			(argv[i][2 + len] == '\0' || argv[i][2 + len] == '='))
			return true;
	return false;
}

static char *
trim(char *s)
{
	char	   *end;

	while (isspace((unsigned char) *s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char) end[-1]))
		*--end = '\0';
	return s;
}

/*
 * Call fn for each "name = value" line of the file (value "" for a line of
 * a name alone); stop at fn's nonzero.  0, or -1 with err.
 */
static int
config_each(const char *path, int (*fn) (void *arg, const char *name, const char *value,
										 int lineno, char *err, size_t errlen),
			void *arg, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "r");
	char		line[LINE_MAX_LEN];
	struct stat st;
	int			lineno = 0;
	int			rc = 0;

	if (f == NULL)
	{
		snprintf(err, errlen, "could not read configuration file \"%s\": %s", path,
				 strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IWOTH) != 0)
	{
		snprintf(err, errlen, "configuration file \"%s\" may be written by anyone: "
				 "chmod o-w it", path);
		fclose(f);
		return -1;
	}
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL)
	{
		char	   *s;
		char	   *eq;
		char	   *name;
		const char *value = "";

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f))
		{
			snprintf(err, errlen, "%s:%d: a line longer than %d bytes", path, lineno,
					 LINE_MAX_LEN - 2);
			rc = -1;
			break;
		}
		s = trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq != NULL)
		{
			*eq = '\0';
			value = trim(eq + 1);
		}
		name = trim(s);
		if (*name == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name))
		{
			snprintf(err, errlen, "%s:%d: \"%s\" is not an option's name (such as listen, "
					 "without dashes)", path, lineno, name);
			rc = -1;
			break;
		}
		rc = fn(arg, name, value, lineno, err, errlen);
	}
	fclose(f);
	return rc;
}

typedef struct MergeState
{
	const char *path;
	int			argc;
	char	  **argv;
	int			(*kind) (const char *name);
	char	  **out;
	int			nout;
	int			cap;
} MergeState;

static int
merge_line(void *arg, const char *name, const char *value, int lineno, char *err,
		   size_t errlen)
{
	MergeState *m = arg;
	char	   *opt;
	int			kind = m->kind(name);

	if (strcmp(name, "config") == 0)
	{
		snprintf(err, errlen, "%s:%d: a configuration file cannot name another", m->path,
				 lineno);
		return -1;
	}
	if (kind < 0)
	{
		snprintf(err, errlen, "%s:%d: unknown option \"%s\"", m->path, lineno, name);
		return -1;
	}
	if (argv_sets(m->argc, m->argv, name))
		return 0;				/* the command line wins */
	if (kind == 1)
	{
		if (strcmp(value, "false") == 0)
			return 0;
		if (value[0] != '\0' && strcmp(value, "true") != 0)
		{
			snprintf(err, errlen, "%s:%d: %s takes true or false, not \"%s\"", m->path,
					 lineno, name, value);
			return -1;
		}
		opt = malloc(strlen(name) + 3);
		if (opt != NULL)
			sprintf(opt, "--%s", name);
	}
	else
	{
		opt = malloc(strlen(name) + strlen(value) + 4);
		if (opt != NULL)
			sprintf(opt, "--%s=%s", name, value);
	}
	if (opt == NULL || (m->nout == m->cap &&
						(m->out = realloc(m->out, (size_t) (m->cap = m->cap * 2 + 8) *
										  sizeof(char *))) == NULL))
	{
		snprintf(err, errlen, "out of memory reading \"%s\"", m->path);
		return -1;
	}
	m->out[m->nout++] = opt;
	return 0;
}

int
ts_config_merge(const char *path, int argc, char **argv, int (*kind) (const char *name),
				int *out_argc, char ***out_argv, char *err, size_t errlen)
{
	MergeState	m = {path, argc, argv, kind, NULL, 0, 0};
	char	  **merged;

	if (config_each(path, merge_line, &m, err, errlen) != 0)
		return -1;
	merged = malloc((size_t) (argc + m.nout + 1) * sizeof(char *));
	if (merged == NULL)
	{
		snprintf(err, errlen, "out of memory reading \"%s\"", path);
		return -1;
	}
	merged[0] = argv[0];
	for (int i = 0; i < m.nout; i++)
		merged[1 + i] = m.out[i];
	for (int i = 1; i < argc; i++)
		merged[m.nout + i] = argv[i];
	merged[argc + m.nout] = NULL;
	free(m.out);
	*out_argc = argc + m.nout;
	*out_argv = merged;
	return 0;
}

typedef struct ValueState
{
	const char *name;
	char	   *value;
} ValueState;

static int
value_line(void *arg, const char *name, const char *value, int lineno, char *err,
		   size_t errlen)
{
	ValueState *v = arg;

	(void) lineno;
	if (strcmp(name, v->name) != 0)
		return 0;
	free(v->value);
	if ((v->value = strdup(value)) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int
ts_config_value(const char *path, const char *name, char **value, char *err, size_t errlen)
{
	ValueState	v = {name, NULL};

	if (config_each(path, value_line, &v, err, errlen) != 0)
	{
		free(v.value);
		return -1;
	}
	*value = v.value;
	return 0;
}

/* ---- a reload ---- */

/*
 * The file's value for name into *value, unless the command line sets it
 * or the file does not: false then (and on an error, logged).
 */
static bool
reload_value(const char *path, int argc, char **argv, const char *name, char **value)
{
	char		err[512];

	*value = NULL;
	if (path == NULL || argv_sets(argc, argv, name))
		return false;
	if (ts_config_value(path, name, value, err, sizeof(err)) != 0)
	{
		ts_log(TS_LOG_ERROR, "reload: %s", err);
		return false;
	}
	return *value != NULL;
}

/* A number option's new value into *out, if the file gives a valid one. */
static void
reload_number(const char *path, int argc, char **argv, const char *name, long min, long max,
			  int *out)
{
	char	   *value;
	char	   *end;
	long		n;

	if (!reload_value(path, argc, argv, name, &value))
		return;
	errno = 0;
	n = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || n < min || n > max)
		ts_log(TS_LOG_ERROR, "reload: %s must be a number from %ld to %ld, not \"%s\": "
			   "kept at %d", name, min, max, value, *out);
	else if (n != *out)
	{
		ts_log(TS_LOG_INFO, "reload: %s %d -> %ld", name, *out, n);
		*out = (int) n;
	}
	free(value);
}

static void
reload_log_level(const char *path, int argc, char **argv, TsReloadable *now)
{
	static const char *const names[] = {"debug", "info", "warning", "error"};
	char	   *value;

	if (!reload_value(path, argc, argv, "log-level", &value))
		return;
	for (int i = 0; i < 4; i++)
	{
		if (strcmp(value, names[i]) == 0)
		{
			if (i != now->log_level)
				ts_log(TS_LOG_INFO, "reload: log-level %s -> %s", names[now->log_level], value);
			now->log_level = i;
			ts_log_min_level = (TsLogLevel) i;
			free(value);
			return;
		}
	}
	ts_log(TS_LOG_ERROR, "reload: log-level must be debug, info, warning or error, not "
		   "\"%s\": kept", value);
	free(value);
}

/* Read the tokens again; replace them when they read whole. */
static void
reload_tokens(const char *path, int argc, char **argv, struct TsServer *server,
			  TsReloadable *now)
{
	char	   *token_file = NULL;
	char	   *scoped_file = NULL;
	const char *tf;
	const char *sf;
	TsCredentials creds = {0};
	char		token[TC_TOKEN_MAX + 1];
	size_t		token_len = 0;
	char		err[512];

	(void) reload_value(path, argc, argv, "token-file", &token_file);
	(void) reload_value(path, argc, argv, "scoped-tokens", &scoped_file);
	tf = token_file != NULL ? token_file : now->token_file;
	sf = scoped_file != NULL ? scoped_file : now->scoped_tokens_file;
	if (tf == NULL && sf == NULL)
		goto done;				/* no tokens then, none now */
	if (tf != NULL &&
		(tc_auth_read_token_file(tf, true, token, &token_len, err, sizeof(err)) != 0 ||
		 ts_auth_add(&creds, NULL, (const uint8_t *) token, token_len, err, sizeof(err)) != 0))
		goto failed;
	if (sf != NULL && ts_auth_read_scoped_tokens(&creds, sf, err, sizeof(err)) != 0)
		goto failed;
	if (creds.n == 0 && !now->uids_admit && !now->insecure)
	{
		snprintf(err, sizeof(err), "no token left, and no --allow-uid: nobody could connect");
		goto failed;
	}
	if (ts_server_set_credentials(server, &creds) != 0)
	{
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	ts_log(TS_LOG_INFO, "reload: tokens read again (%s%s%s): new connections prove "
		   "themselves with them", tf != NULL ? tf : "", tf != NULL && sf != NULL ? ", " : "",
		   sf != NULL ? sf : "");
	/* the paths now in force */
	if (token_file != NULL)
	{
		free(now->owned_token_file);
		now->token_file = now->owned_token_file = token_file;
		token_file = NULL;
	}
	if (scoped_file != NULL)
	{
		free(now->owned_scoped_file);
		now->scoped_tokens_file = now->owned_scoped_file = scoped_file;
		scoped_file = NULL;
	}
	goto done;

failed:
	ts_log(TS_LOG_ERROR, "reload: the tokens are kept as they were: %s", err);
done:
	tc_auth_forget(token, sizeof(token));
	ts_auth_free(&creds);
	free(token_file);
	free(scoped_file);
}

void
ts_config_reload(const char *path, int argc, char **argv, struct TsServer *server,
				 TsReloadable *now)
{
	if (path != NULL)
		ts_log(TS_LOG_INFO, "reload: reading \"%s\" (SIGHUP)", path);
	else
		ts_log(TS_LOG_INFO, "reload: no --config file: the token files only (SIGHUP)");
	reload_log_level(path, argc, argv, now);
	reload_number(path, argc, argv, "max-connections", 1, 1000000, &now->max_connections);
	reload_number(path, argc, argv, "max-unauthenticated", 1, 1000000,
				  &now->max_unauthenticated);
	reload_number(path, argc, argv, "handshake-timeout", 1, 3600, &now->handshake_timeout_s);
	reload_number(path, argc, argv, "idle-timeout", 0, 86400, &now->idle_timeout_s);
	reload_number(path, argc, argv, "max-namespace-connections", 1, 1000000,
				  &now->max_namespace_connections);
	ts_server_set_limits(server, now->max_connections,
						 now->max_unauthenticated < now->max_connections ?
						 now->max_unauthenticated : now->max_connections,
						 now->handshake_timeout_s * 1000, now->idle_timeout_s * 1000,
						 now->max_namespace_connections);
	reload_tokens(path, argc, argv, server, now);
}
