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
	char	  **origins;		/* [nout]: "FILE:LINE" of each of out */
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
						((m->out = realloc(m->out, (size_t) (m->cap * 2 + 8) *
										   sizeof(char *))) == NULL ||
						 (m->origins = realloc(m->origins, (size_t) (m->cap * 2 + 8) *
											   sizeof(char *))) == NULL)))
	{
		snprintf(err, errlen, "out of memory reading \"%s\"", m->path);
		return -1;
	}
	if (m->nout == m->cap)
		m->cap = m->cap * 2 + 8;
	if (asprintf(&m->origins[m->nout], "%s:%d", m->path, lineno) < 0)
	{
		snprintf(err, errlen, "out of memory reading \"%s\"", m->path);
		return -1;
	}
	m->out[m->nout++] = opt;
	return 0;
}

int
ts_config_merge(const char *path, int argc, char **argv, int (*kind) (const char *name),
				int *out_argc, char ***out_argv, char ***out_origins, char *err,
				size_t errlen)
{
	MergeState	m = {path, argc, argv, kind, NULL, NULL, 0, 0};
	char	  **merged;
	char	  **origins;

	if (config_each(path, merge_line, &m, err, errlen) != 0)
		return -1;
	merged = malloc((size_t) (argc + m.nout + 1) * sizeof(char *));
	origins = calloc((size_t) (argc + m.nout + 1), sizeof(char *));
	if (merged == NULL || origins == NULL)
	{
		snprintf(err, errlen, "out of memory reading \"%s\"", path);
		return -1;
	}
	merged[0] = argv[0];
	for (int i = 0; i < m.nout; i++)
	{
		merged[1 + i] = m.out[i];
		origins[1 + i] = m.origins[i];
	}
	for (int i = 1; i < argc; i++)
		merged[m.nout + i] = argv[i];
	merged[argc + m.nout] = NULL;
	free(m.out);
	free(m.origins);
	*out_argc = argc + m.nout;
	*out_argv = merged;
	*out_origins = origins;
	return 0;
}

/* ---- a reload ---- */

/* The file's lines, as a reload reads them once. */
typedef struct ConfigEntries
{
	const char *path;
	char	  **names;			/* [n] */
	char	  **values;			/* [n]; "" for a name alone */
	int		   *linenos;		/* [n] */
	int			n;
	int			cap;
} ConfigEntries;

static int
entries_line(void *arg, const char *name, const char *value, int lineno, char *err,
			 size_t errlen)
{
	ConfigEntries *e = arg;

	if (e->n == e->cap)
	{
		int			cap = e->cap * 2 + 16;
		char	  **names = realloc(e->names, (size_t) cap * sizeof(char *));
		char	  **values = names == NULL ? NULL :
			realloc(e->values, (size_t) cap * sizeof(char *));
		int		   *linenos = values == NULL ? NULL :
			realloc(e->linenos, (size_t) cap * sizeof(int));

		if (names != NULL)
			e->names = names;
		if (values != NULL)
			e->values = values;
		if (linenos == NULL)
		{
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		e->linenos = linenos;
		e->cap = cap;
	}
	e->names[e->n] = strdup(name);
	e->values[e->n] = strdup(value);
	e->linenos[e->n] = lineno;
	if (e->names[e->n] == NULL || e->values[e->n] == NULL)
	{
		free(e->names[e->n]);
		free(e->values[e->n]);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	e->n++;
	return 0;
}

static void
entries_free(ConfigEntries *e)
{
	for (int i = 0; i < e->n; i++)
	{
		free(e->names[i]);
		free(e->values[i]);
	}
	free(e->names);
	free(e->values);
	free(e->linenos);
	memset(e, 0, sizeof(*e));
}

/* The index of the file's last line for name, or -1. */
static int
entries_last(const ConfigEntries *e, const char *name)
{
	for (int i = e->n - 1; i >= 0; i--)
		if (strcmp(e->names[i], name) == 0)
			return i;
	return -1;
}

/*
 * The file's value for name into *value and its line into *lineno, unless
 * the command line sets it or the file does not: false then.  The value is
 * the entries'.
 */
static bool
reload_value(const ConfigEntries *e, int argc, char **argv, const char *name,
			 const char **value, int *lineno)
{
	int			i;

	*value = NULL;
	if (e->path == NULL || argv_sets(argc, argv, name) || (i = entries_last(e, name)) < 0)
		return false;
	*value = e->values[i];
	*lineno = e->linenos[i];
	return true;
}

/* A number option's new value into *out, if the file gives a valid one. */
static void
reload_number(const ConfigEntries *e, int argc, char **argv, const char *name, long min,
			  long max, int *out)
{
	const char *value;
	char	   *end;
	int			lineno;
	long		n;

	if (!reload_value(e, argc, argv, name, &value, &lineno))
		return;
	errno = 0;
	n = strtol(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || n < min || n > max)
		ts_log(TS_LOG_ERROR, "reload: %s:%d: %s must be a number from %ld to %ld, not \"%s\": "
			   "kept at %d", e->path, lineno, name, min, max, value, *out);
	else if (n != *out)
	{
		ts_log(TS_LOG_INFO, "reload: %s %d -> %ld", name, *out, n);
		*out = (int) n;
	}
}

static void
reload_log_level(const ConfigEntries *e, int argc, char **argv, TsReloadable *now)
{
	static const char *const names[] = {"debug", "info", "warning", "error"};
	const char *value;
	int			lineno;

	if (!reload_value(e, argc, argv, "log-level", &value, &lineno))
		return;
	for (int i = 0; i < 4; i++)
	{
		if (strcmp(value, names[i]) == 0)
		{
			if (i != now->log_level)
				ts_log(TS_LOG_INFO, "reload: log-level %s -> %s", names[now->log_level], value);
			now->log_level = i;
			ts_log_min_level = (TsLogLevel) i;
			return;
		}
	}
	ts_log(TS_LOG_ERROR, "reload: %s:%d: log-level must be debug, info, warning or error, "
		   "not \"%s\": kept", e->path, lineno, value);
}

/* Read the tokens again; replace them when they read whole. */
static void
reload_tokens(const ConfigEntries *e, int argc, char **argv, struct TsServer *server,
			  TsReloadable *now)
{
	const char *token_file = NULL;
	const char *scoped_file = NULL;
	const char *tf;
	const char *sf;
	TsCredentials creds = {0};
	char		token[TC_TOKEN_MAX + 1];
	size_t		token_len = 0;
	int			lineno;
	char		err[512];

	(void) reload_value(e, argc, argv, "token-file", &token_file, &lineno);
	(void) reload_value(e, argc, argv, "scoped-tokens", &scoped_file, &lineno);
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
	if (token_file != NULL && (now->token_file == NULL || strcmp(token_file, now->token_file) != 0))
	{
		char	   *copy = strdup(token_file);

		if (copy != NULL)
		{
			free(now->owned_token_file);
			now->token_file = now->owned_token_file = copy;
		}
	}
	if (scoped_file != NULL &&
		(now->scoped_tokens_file == NULL || strcmp(scoped_file, now->scoped_tokens_file) != 0))
	{
		char	   *copy = strdup(scoped_file);

		if (copy != NULL)
		{
			free(now->owned_scoped_file);
			now->scoped_tokens_file = now->owned_scoped_file = copy;
		}
	}
	goto done;

failed:
	ts_log(TS_LOG_ERROR, "reload: the tokens are kept as they were: %s", err);
done:
	tc_auth_forget(token, sizeof(token));
	ts_auth_free(&creds);
}

/* The options a reload applies: the others need a restart. */
static const char *const reloadable_names[] = {
	"log-level", "max-connections", "max-unauthenticated", "handshake-timeout",
	"idle-timeout", "max-namespace-connections", "token-file", "scoped-tokens", NULL
};

static bool
is_reloadable(const char *name)
{
	for (int i = 0; reloadable_names[i] != NULL; i++)
		if (strcmp(reloadable_names[i], name) == 0)
			return true;
	return false;
}

/* Options that may be given more than once, each adding to the others. */
static bool
is_repeatable(const char *name)
{
	return strcmp(name, "listen") == 0 || strcmp(name, "allow-uid") == 0;
}

/*
 * Append to buf what the arguments from..to of args set option name to:
 * each "--name=value" (or "--name VALUE", or "--name": true) of them, in
 * order, joined by ", " (the last only, for an option given once).
 */
static void
args_value(int from, int to, char **args, const char *name, int kind, char *buf,
		   size_t buflen)
{
	size_t		len = strlen(name);

	buf[0] = '\0';
	for (int i = from; i < to; i++)
	{
		const char *a = args[i];
		const char *v;

		if (a == NULL || strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0)
			continue;
		if (a[2 + len] == '=')
			v = a + 3 + len;
		else if (a[2 + len] != '\0')
			continue;
		else if (kind == 1)
			v = "true";
		else if (i + 1 < to && args[i + 1] != NULL)
			v = args[++i];
		else
			continue;
		if (buf[0] != '\0' && is_repeatable(name))
			strncat(buf, ", ", buflen - strlen(buf) - 1);
		else
			buf[0] = '\0';
		strncat(buf, v, buflen - strlen(buf) - 1);
	}
}

/* The same, of the file's lines: an option's false leaves it out. */
static int
entries_value(const ConfigEntries *e, const char *name, int kind, char *buf, size_t buflen)
{
	int			lineno = 0;

	buf[0] = '\0';
	for (int i = 0; i < e->n; i++)
	{
		const char *v = e->values[i];

		if (strcmp(e->names[i], name) != 0)
			continue;
		lineno = e->linenos[i];
		if (kind == 1)
		{
			if (strcmp(v, "false") == 0)
			{
				buf[0] = '\0';
				continue;
			}
			v = "true";
		}
		if (buf[0] != '\0' && is_repeatable(name))
			strncat(buf, ", ", buflen - strlen(buf) - 1);
		else
			buf[0] = '\0';
		strncat(buf, v, buflen - strlen(buf) - 1);
	}
	return lineno;
}

/*
 * Log each setting of the file that this reload does not apply, and why:
 * an unknown option; one the command line sets otherwise (it wins); one
 * that needs a restart, set, changed or dropped since the start (the
 * start's file lines are now->start_args with an origin).  A line that
 * says what the tserver runs with already is not news.
 */
static void
reload_report_unapplied(const ConfigEntries *e, int argc, char **argv, const TsReloadable *now)
{
	char		wanted[1024];
	char		running[1024];

	for (int i = 0; i < e->n; i++)
	{
		const char *name = e->names[i];
		int			kind;
		int			lineno;

		if (entries_last(e, name) != i)
			continue;			/* each option once, at its last line */
		kind = now->kind != NULL ? now->kind(name) : 0;
		if (strcmp(name, "config") == 0)
		{
			ts_log(TS_LOG_WARNING, "reload: %s:%d: a configuration file cannot name another: "
				   "not applied", e->path, e->linenos[i]);
			continue;
		}
		if (kind < 0)
		{
			ts_log(TS_LOG_WARNING, "reload: %s:%d: unknown option \"%s\": not applied", e->path,
				   e->linenos[i], name);
			continue;
		}
		lineno = entries_value(e, name, kind, wanted, sizeof(wanted));
		if (argv_sets(argc, argv, name))
		{
			args_value(1, argc, argv, name, kind, running, sizeof(running));
			if (strcmp(wanted, running) != 0)
				ts_log(TS_LOG_WARNING, "reload: %s:%d: %s not applied: the command line's "
					   "--%s (%s) wins", e->path, lineno, name, name, running);
			continue;
		}
		if (is_reloadable(name))
			continue;			/* applied, or its error logged */
		args_value(1, now->start_argc, now->start_args, name, kind, running, sizeof(running));
		if (strcmp(wanted, running) != 0)
			ts_log(TS_LOG_WARNING, "reload: %s:%d: %s = %s not applied: it needs a restart "
				   "(the tserver runs with %s)", e->path, lineno, name,
				   wanted[0] != '\0' || kind != 1 ? wanted : "false",
				   running[0] != '\0' ? running : "its default");
	}

	/* what the file set at the start and sets no more */
	for (int i = 1; i < now->start_argc; i++)
	{
		const char *a = now->start_args[i];
		char		name[128];
		size_t		len;

		if (now->start_origins == NULL || now->start_origins[i] == NULL ||
			strncmp(a, "--", 2) != 0)
			continue;
		len = strcspn(a + 2, "=");
		if (len >= sizeof(name))
			continue;
		memcpy(name, a + 2, len);
		name[len] = '\0';
		if (entries_last(e, name) >= 0 || argv_sets(argc, argv, name))
			continue;
		/* each option once: at its first argument */
		args_value(1, i, now->start_args, name, 0, running, sizeof(running));
		if (running[0] != '\0')
			continue;
		args_value(1, now->start_argc, now->start_args, name,
				   now->kind != NULL ? now->kind(name) : 0, running, sizeof(running));
		if (is_reloadable(name))
			ts_log(TS_LOG_WARNING, "reload: %s sets %s no more: not applied, it keeps its "
				   "value until a restart", e->path, name);
		else
			ts_log(TS_LOG_WARNING, "reload: %s sets %s no more: not applied, it needs a "
				   "restart (the tserver runs with %s)", e->path, name, running);
	}
}

void
ts_config_reload(const char *path, int argc, char **argv, struct TsServer *server,
				 TsReloadable *now)
{
	ConfigEntries e = {0};
	char		err[512];

	if (path != NULL)
	{
		ts_log(TS_LOG_INFO, "reload: reading \"%s\" (SIGHUP)", path);
		if (config_each(path, entries_line, &e, err, sizeof(err)) != 0)
		{
			ts_log(TS_LOG_ERROR, "reload: %s: nothing of the file applied, the token files "
				   "read again", err);
			entries_free(&e);
		}
		else
			e.path = path;
	}
	else
		ts_log(TS_LOG_INFO, "reload: no --config file: the token files only (SIGHUP)");
	reload_log_level(&e, argc, argv, now);
	reload_number(&e, argc, argv, "max-connections", 1, 1000000, &now->max_connections);
	reload_number(&e, argc, argv, "max-unauthenticated", 1, 1000000,
				  &now->max_unauthenticated);
	reload_number(&e, argc, argv, "handshake-timeout", 1, 3600, &now->handshake_timeout_s);
	reload_number(&e, argc, argv, "idle-timeout", 0, 86400, &now->idle_timeout_s);
	reload_number(&e, argc, argv, "max-namespace-connections", 1, 1000000,
				  &now->max_namespace_connections);
	ts_server_set_limits(server, now->max_connections,
						 now->max_unauthenticated < now->max_connections ?
						 now->max_unauthenticated : now->max_connections,
						 now->handshake_timeout_s * 1000, now->idle_timeout_s * 1000,
						 now->max_namespace_connections);
	reload_tokens(&e, argc, argv, server, now);
	if (e.path != NULL)
		reload_report_unapplied(&e, argc, argv, now);
	entries_free(&e);
}
