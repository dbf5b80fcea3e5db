/*
 * cli_util.c
 *		What tserver-cli's commands share: reporting, parsing numbers and
 *		column lists, connecting.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Report a usage error and exit 2. */
void
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
int
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
int64_t
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
int
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
TcClient *
cli_connect(const CliOptions *opts)
{
	char		err[512];
	TcClient   *client;

	client = tc_client_connect(opts->address, opts->token, &opts->tls, CLI_CLIENT_NAME,
							   err, sizeof(err));
	if (client == NULL)
		cli_fail("%s", err);
	return client;
}

/* Report the client's failure; returns the exit status 1. */
int
cli_client_fail(TcClient *client)
{
	return cli_fail("%s", tc_client_error(client));
}

/* Seconds on the monotonic clock. */
double
cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}
