/*
 * cli_server.c
 *		tserver-cli's commands about the server itself: ping, stats, backup,
 *		a replica group's membership (group-*),
 *		and raw (feed it bytes after the handshake, for tests of malformed
 *		input).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ping: the handshake alone proves the server answers (and how: TLS). */
int
cli_ping(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	char		tls[128];

	if (client == NULL)
		return 1;
	tc_client_tls_describe(client, tls, sizeof(tls));
	if (tls[0] != '\0')
		printf("ok %s (%s)\n", tc_client_server_name(client), tls);
	else
		printf("ok %s\n", tc_client_server_name(client));
	tc_client_close(client);
	return 0;
}

/* The server's Stats (with its open sessions if asked), or NULL, said why. */
static Tcopy__Stats *
cli_read_stats(const CliOptions *opts, bool sessions)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__Stats *stats = NULL;

	if (client == NULL)
		return NULL;
	if (tc_client_stats_request(client, 0, sessions, &stats) < 0)
	{
		cli_client_fail(client);
		stats = NULL;
	}
	tc_client_close(client);
	return stats;
}

/* stats: every field of Stats, in the order the protocol declares them. */
int
cli_stats(const CliOptions *opts)
{
	Tcopy__Stats *stats = cli_read_stats(opts, false);

	if (stats == NULL)
		return 1;
	for (unsigned i = 0; i < tcopy__stats__descriptor.n_fields; i++)
	{
		const ProtobufCFieldDescriptor *field = &tcopy__stats__descriptor.fields[i];

		if (field->type == PROTOBUF_C_TYPE_UINT64)
			printf("%s: %" PRIu64 "\n", field->name,
				   *(const uint64_t *) ((const char *) stats + field->offset));
	}
	if (stats->version != NULL && stats->version[0] != '\0')
		printf("version: %s\n", stats->version);
	tcopy__stats__free_unpacked(stats, NULL);
	return 0;
}

/*
 * sessions: the open write sessions this connection's credential may see,
 * "ID<TAB>STATE<TAB>AGE_MS<TAB>ROWS<TAB>STAGED_BYTES<TAB>SPILLED_BYTES<TAB>TABLES<TAB>PID"
 * each (PID 0: its client did not say).
 */
int
cli_sessions(const CliOptions *opts)
{
	Tcopy__Stats *stats = cli_read_stats(opts, true);

	if (stats == NULL)
		return 1;
	for (size_t i = 0; i < stats->n_sessions; i++)
	{
		const Tcopy__SessionInfo *s = stats->sessions[i];

		printf("%" PRIu64 "\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu32
			   "\t%" PRIu32 "\n", s->id, s->state, s->age_ms, s->rows, s->staged_bytes,
			   s->spilled_bytes, s->tables, s->client_pid);
	}
	tcopy__stats__free_unpacked(stats, NULL);
	return 0;
}

/* tables: the tables the connection may name, "ID<TAB>NAME" each, by id. */
int
cli_tables(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__TableList *list;

	if (client == NULL)
		return 1;
	if (tc_client_list_tables(client, NULL, &list) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	for (size_t i = 0; i < list->n_tables; i++)
		printf("%" PRIu32 "\t%s\n", list->tables[i]->id, list->tables[i]->name);
	tcopy__table_list__free_unpacked(list, NULL);
	tc_client_close(client);
	return 0;
}

/*
 * backup DIR: the tserver takes the backup into DIR, on its machine; print
 * what it took, one line, then a line per prepared session in it.
 */
int
cli_backup(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__BackupOk *ok;
	double		start = cli_now();

	if (client == NULL)
		return 1;
	if (tc_client_backup(client, opts->dir, &ok) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	printf("backup into %s: %" PRIu32 " tables, %zu prepared sessions, %" PRIu64 " bytes, "
		   "sequence %" PRIu64 ", %.3f s (prepares and resolves waited %.3f ms)\n",
		   opts->dir, ok->tables, ok->n_prepared, (uint64_t) ok->bytes,
		   (uint64_t) ok->sequence, cli_now() - start, ok->locked_us / 1000.0);
	for (size_t i = 0; i < ok->n_prepared; i++)
		printf("prepared\t%s\n", ok->prepared[i]);
	tcopy__backup_ok__free_unpacked(ok, NULL);
	tc_client_close(client);
	return 0;
}

/* The value of one hex digit, -1 when c is none. */
static int
cli_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * raw: send --hex's bytes after the handshake and print the type of the
 * frame that comes back, with the code and message of an Error frame.
 */
int
cli_raw(const CliOptions *opts)
{
	size_t		hexlen = strlen(opts->hex);
	uint8_t    *bytes = malloc(hexlen / 2 + 1);
	size_t		len = 0;
	int			high = -1;
	TcClient   *client = NULL;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	payload_len;
	int			status = 1;

	if (bytes == NULL)
		return cli_fail("out of memory");
	/* whitespace and colons between bytes are allowed, for readability */
	for (const char *p = opts->hex; *p; p++)
	{
		int			digit = cli_hex_digit(*p);

		if (digit < 0)
		{
			if (high < 0 && strchr(" \t\n:", *p) != NULL)
				continue;
			free(bytes);
			cli_usage_error("--hex has an invalid digit '%c'", *p);
		}
		if (high < 0)
			high = digit;
		else
		{
			bytes[len++] = (uint8_t) (high << 4 | digit);
			high = -1;
		}
	}
	if (high >= 0)
	{
		free(bytes);
		cli_usage_error("--hex has an odd number of digits");
	}

	client = cli_connect(opts);
	if (client == NULL)
		goto err;
	if (tc_client_send_raw(client, bytes, len) < 0 ||
		tc_client_read_frame(client, &type, &payload, &payload_len) < 0)
	{
		cli_client_fail(client);
		goto err;
	}
	if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
	{
		Tcopy__Error *error = tcopy__error__unpack(NULL, payload_len, payload);
		const ProtobufCEnumValue *code;

		if (error == NULL)
		{
			printf("%s (malformed)\n", tc_frame_type_name(type));
			goto done;
		}
		code = protobuf_c_enum_descriptor_get_value(&tcopy__error_code__descriptor,
													error->code);
		printf("%s %s (%d): %s\n", tc_frame_type_name(type),
			   code ? code->name : "unknown", (int) error->code, error->message);
		tcopy__error__free_unpacked(error, NULL);
	}
	else
		printf("%s\n", tc_frame_type_name(type));
done:
	status = 0;

err:
	tc_client_close(client);
	free(bytes);
	return status;
}

/* The group's status: the leader's line, then a line per member. */
static void
cli_group_print(const Tcopy__GroupStatus *status)
{
	printf("leader %" PRIu64 ", term %" PRIu64 ", applied %" PRIu64 "\n",
		   (uint64_t) status->id, (uint64_t) status->term, (uint64_t) status->applied);
	for (size_t i = 0; i < status->n_members; i++)
		printf("member\t%" PRIu64 "\t%s\t%s\n", (uint64_t) status->members[i]->id,
			   status->members[i]->address, status->members[i]->voter ? "voter" : "standby");
}

/* Ask the group for change (of opts->member_id) and print its status. */
static int
cli_group(const CliOptions *opts, Tcopy__GroupChange change)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__GroupStatus *status;

	if (client == NULL)
		return 1;
	if (tc_client_group(client, change, opts->member_id, opts->member_address, &status) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	cli_group_print(status);
	tcopy__group_status__free_unpacked(status, NULL);
	tc_client_close(client);
	return 0;
}

/*
 * One change of membership through the group's leader (a new connection:
 * the leader may have changed); the status it answered, or NULL with the
 * error in err.
 */
static Tcopy__GroupStatus *
cli_group_change(const CliOptions *opts, Tcopy__GroupChange change, uint64_t id,
				 const char *address, char *err, size_t errlen)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__GroupStatus *status = NULL;

	if (client == NULL)
	{
		snprintf(err, errlen, "could not connect");
		return NULL;
	}
	if (tc_client_group(client, change, id, address, &status) < 0)
	{
		snprintf(err, errlen, "%s", tc_client_error(client));
		status = NULL;
	}
	tc_client_close(client);
	return status;
}

/* Member id's entry in status, or NULL. */
static const Tcopy__GroupMember *
cli_group_member(const Tcopy__GroupStatus *status, uint64_t id)
{
	for (size_t i = 0; i < status->n_members; i++)
		if (status->members[i]->id == id)
			return status->members[i];
	return NULL;
}

#define REPLACE_PROMOTE_S 600	/* group-replace: how long NEW may take */

/*
 * group-replace OLD NEW@ADDRESS: add NEW as a standby (unless it is a
 * member already), promote it, asking again while libraft gives the
 * promotion up because NEW has not caught up yet (a state to fetch, a log
 * to apply), then remove OLD.  Each step is said as it is done; run again
 * after a failure, it goes on from where the group is.
 */
int
cli_group_replace(const CliOptions *opts)
{
	char		err[512];
	Tcopy__GroupStatus *status;
	const Tcopy__GroupMember *member;
	time_t		until = time(NULL) + REPLACE_PROMOTE_S;
	bool		voter;

	status = cli_group_change(opts, TCOPY__GROUP_CHANGE__GROUP_STATUS, 0, NULL, err, sizeof(err));
	if (status == NULL)
		goto fail;
	if (cli_group_member(status, opts->replaced_id) == NULL)
	{
		snprintf(err, sizeof(err), "member %" PRIu64 " is not in the group", opts->replaced_id);
		goto fail;
	}
	member = cli_group_member(status, opts->member_id);
	voter = member != NULL && member->voter;
	if (member == NULL)
	{
		tcopy__group_status__free_unpacked(status, NULL);
		status = cli_group_change(opts, TCOPY__GROUP_CHANGE__GROUP_ADD, opts->member_id,
								  opts->member_address, err, sizeof(err));
		if (status == NULL)
			goto fail;
		printf("member %" PRIu64 " added as a standby\n", opts->member_id);
		fflush(stdout);
	}
	while (!voter)
	{
		tcopy__group_status__free_unpacked(status, NULL);
		status = cli_group_change(opts, TCOPY__GROUP_CHANGE__GROUP_PROMOTE, opts->member_id,
								  NULL, err, sizeof(err));
		if (status != NULL)
			break;
		if (time(NULL) >= until)
			goto fail;
		sleep(1);
	}
	if (!voter)
	{
		printf("member %" PRIu64 " promoted to a voter\n", opts->member_id);
		fflush(stdout);
	}
	tcopy__group_status__free_unpacked(status, NULL);
	status = cli_group_change(opts, TCOPY__GROUP_CHANGE__GROUP_REMOVE, opts->replaced_id, NULL,
							  err, sizeof(err));
	if (status == NULL)
		goto fail;
	printf("member %" PRIu64 " removed\n", opts->replaced_id);
	cli_group_print(status);
	tcopy__group_status__free_unpacked(status, NULL);
	return 0;

fail:
	if (status != NULL)
		tcopy__group_status__free_unpacked(status, NULL);
	fprintf(stderr, "tserver-cli: group-replace: %s\n", err);
	return 1;
}

int
cli_group_status(const CliOptions *opts)
{
	return cli_group(opts, TCOPY__GROUP_CHANGE__GROUP_STATUS);
}

int
cli_group_add(const CliOptions *opts)
{
	return cli_group(opts, TCOPY__GROUP_CHANGE__GROUP_ADD);
}

int
cli_group_promote(const CliOptions *opts)
{
	return cli_group(opts, TCOPY__GROUP_CHANGE__GROUP_PROMOTE);
}

int
cli_group_remove(const CliOptions *opts)
{
	return cli_group(opts, TCOPY__GROUP_CHANGE__GROUP_REMOVE);
}
