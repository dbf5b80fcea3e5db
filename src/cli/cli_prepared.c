/*
 * cli_prepared.c
 *		tserver-cli's commands about prepared sessions (two-phase commit):
 *		prepared (list them) and resolve (publish or discard one).  A
 *		session is prepared by "load ... --prepare GID".
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unix time ms as ISO 8601 in UTC, with milliseconds. */
void
cli_format_ms(uint64_t ms, char *out, size_t size)
{
	time_t		seconds = (time_t) (ms / 1000);
	struct tm	tm;
	char		stamp[32];

	gmtime_r(&seconds, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%s.%03uZ", stamp, (unsigned) (ms % 1000));
}

/*
 * prepared: a header line, then one line per prepared session, sorted by
 * gid, fields separated by tabs (a gid may hold spaces).
 */
int
cli_prepared(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__PreparedList *list;

	if (client == NULL)
		return 1;
	if (tc_client_list_prepared(client, opts->prefix, &list) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	printf("# gid\trows\tbytes\tprepared_at\tattached\n");
	for (size_t i = 0; i < list->n_sessions; i++)
	{
		const Tcopy__PreparedSession *s = list->sessions[i];
		char		at[48];

		cli_format_ms(s->prepared_at_ms, at, sizeof(at));
		printf("%s\t%" PRIu64 "\t%" PRIu64 "\t%s\t%s\n", s->gid, (uint64_t) s->rows,
			   (uint64_t) s->bytes, at, s->attached ? "yes" : "no");
	}
	tcopy__prepared_list__free_unpacked(list, NULL);
	tc_client_close(client);
	return 0;
}

/* resolve: exit 0 when done or nothing is prepared under the gid, 1 if busy. */
int
cli_resolve(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__ResolveOutcome outcome;
	uint64_t	rows = 0;
	int			status = 0;

	if (client == NULL)
		return 1;
	if (tc_client_resolve(client, opts->gid, opts->commit, &outcome, &rows) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	switch (outcome)
	{
		case TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE:
			printf("%s %" PRIu64 " rows prepared under \"%s\"\n",
				   opts->commit ? "committed" : "discarded", rows, opts->gid);
			break;
		case TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND:
			printf("not found: nothing is prepared under \"%s\"\n", opts->gid);
			break;
		default:
			printf("busy: another connection owns the session prepared under \"%s\"\n",
				   opts->gid);
			status = 1;
			break;
	}
	tc_client_close(client);
	return status;
}
