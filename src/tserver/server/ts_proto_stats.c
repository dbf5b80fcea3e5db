/*
 * ts_proto_stats.c
 *		STATS_REQUEST: the server's counters, a table's estimate and files
 *		by level, the open sessions.
 *
 * A connection scoped to a namespace sees its namespace's figures only
 * (issue 32): its tables, its open and prepared sessions and their bytes,
 * its connections; the server-wide counters (rows and bytes received,
 * sessions ended, RocksDB's files and compactions, the disk, memory and
 * other tenants' connections) are 0 for it, as they would tell one
 * tenant of another's activity.  The uptime and version stay.
 */
#include "ts_proto_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_clock.h"

/* Peak resident set size of this process in kB (VmHWM), 0 if unknown. */
static uint64_t
proto_peak_rss_kb(void)
{
	char		buf[4096];
	ssize_t		len;
	int			fd;
	const char *p;

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	p = strstr(buf, "\nVmHWM:");
	if (p == NULL)
		return 0;
	return strtoull(p + strlen("\nVmHWM:"), NULL, 10);
}

void
ts_proto_fill_stats(TsProtoShared *shared, Tcopy__Stats *stats)
{
	stats->uptime_ms = (ts_monotonic_us() - shared->start_us) / 1000;
	stats->version = (char *) TS_VERSION;
	stats->connections_open = atomic_load(&shared->connections_open);
	if (shared->unauthenticated != NULL)
		stats->connections_unauthenticated = (uint64_t) atomic_load(shared->unauthenticated);
	stats->connections_total = atomic_load(&shared->connections_total);
	stats->batches_received = atomic_load(&shared->batches_received);
	stats->bytes_received = atomic_load(&shared->bytes_received);
	ts_store_stats(shared->store, stats);
	stats->peak_rss_kb = proto_peak_rss_kb();
}

/*
 * Replace stats' server-wide figures with the namespace's of a scoped
 * connection (the file comment says which).  sessions[nsessions] are its
 * open sessions if they were listed (NULL: not yet).  0, or -1 with err.
 */
static int
proto_scope_stats(TsProto *proto, Tcopy__Stats *stats, const Tcopy__SessionInfo *sessions,
				  ssize_t nsessions, TsError *err)
{
	TsStore    *store = proto->shared->store;
	Tcopy__SessionInfo *own = NULL;
	Tcopy__TableList tables = TCOPY__TABLE_LIST__INIT;
	Tcopy__PreparedList prepared = TCOPY__PREPARED_LIST__INIT;
	uint64_t	uptime_ms = stats->uptime_ms;
	char	   *version = stats->version;
	Tcopy__TableEstimate *table = stats->table;
	Tcopy__SessionInfo **listed = stats->sessions;
	size_t		nlisted = stats->n_sessions;

	if (sessions == NULL &&
		(nsessions = ts_sessions_list(store, proto->scope, proto->scope_len, &own)) < 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	if (ts_store_list_tables(store, "", proto->scope, proto->scope_len,
							 &proto->frame_arena, &tables, err) != 0 ||
		ts_store_list_prepared(store, NULL, proto->scope, &proto->frame_arena, &prepared,
							   err) != 0)
	{
		free(own);
		return -1;
	}
	tcopy__stats__init(stats);
	stats->uptime_ms = uptime_ms;
	stats->version = version;
	stats->table = table;
	stats->sessions = listed;
	stats->n_sessions = nlisted;
	stats->tables = tables.n_tables;
	stats->sessions_prepared = prepared.n_sessions;
	stats->connections_open = (uint64_t) ts_tenants_connections(&proto->shared->tenants,
																 proto->scope,
																 proto->scope_len);
	stats->sessions_open = (uint64_t) nsessions;
	for (ssize_t i = 0; i < nsessions; i++)
	{
		const Tcopy__SessionInfo *s = sessions != NULL ? &sessions[i] : &own[i];

		stats->staged_bytes += s->staged_bytes;
		stats->spilled_bytes += s->spilled_bytes;
	}
	free(own);
	return 0;
}

/*
 * A scoped connection's namespace must stay within its disk quota
 * (--max-namespace-disk-mb, ts_quota.c): weighed every
 * PROTO_QUOTA_EVERY_BYTES of frames it receives, and at a commit (force)
 * of a session that holds more than PROTO_QUOTA_SMALL_BYTES (a TRUNCATE, a
 * few deletes, which make room, are not refused), before the frame reaches
 * its session.  0, or -1 with err (STORAGE, "disk quota", which the
 * extension reports as 53100).
 */
int
ts_proto_quota_check(TsProto *proto, uint32_t len, bool force, TsError *err)
{
	uint64_t	quota = ts_store_namespace_quota(proto->shared->store);
	uint64_t	stored = 0;
	uint64_t	staging = 0;
	char		ns[PROTO_LOG_NAME_MAX];

	if (quota == 0 || proto->scope == NULL)
		return 0;
	proto->quota_unweighed += len;
	if (force ? proto->session == NULL || ts_session_bytes(proto->session) <= PROTO_QUOTA_SMALL_BYTES :
		proto->quota_unweighed < PROTO_QUOTA_EVERY_BYTES)
		return 0;
	proto->quota_unweighed = 0;
	if (ts_store_namespace_bytes(proto->shared->store, proto->scope, proto->scope_len,
								 &stored, &staging) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	if (stored + staging <= quota)
		return 0;
	ts_proto_printable(proto->scope, ns, sizeof(ns));
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "namespace \"%s\" is over its disk quota: it holds %" PRIu64 " MB (%" PRIu64
				 " MB of rows, %" PRIu64 " MB of sessions' staging files) of the %" PRIu64
				 " MB it may (--max-namespace-disk-mb)", ns, (stored + staging) >> 20,
				 stored >> 20, staging >> 20, quota >> 20);
	return -1;
}

/*
 * STATS_REQUEST: answer STATS, with the estimate of the table asked for
 * (which a scoped connection must have opened, as for a scan) and its files
 * by level, and if asked the open sessions this connection's scope may see.
 */
int
ts_proto_on_stats_request(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Stats stats = TCOPY__STATS__INIT;
	Tcopy__TableEstimate estimate = TCOPY__TABLE_ESTIMATE__INIT;
	TsLevelFiles levels[TS_STORE_LEVELS];
	Tcopy__LevelFiles level_msgs[TS_STORE_LEVELS];
	Tcopy__LevelFiles *level_ptrs[TS_STORE_LEVELS];
	Tcopy__SessionInfo *sessions = NULL;
	Tcopy__SessionInfo **session_ptrs = NULL;
	Tcopy__StatsRequest *request;
	ssize_t		nsessions = 0;
	int			rc;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__stats_request__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->table_id != 0)
	{
		if (ts_proto_check_table_id(proto, request->table_id, err) != 0 ||
			ts_store_table_estimate(proto->shared->store, request->table_id,
									&estimate.rows, &estimate.bytes, levels, err) != 0)
			return -1;
		estimate.levels = level_ptrs;
		for (uint32_t i = 0; i < TS_STORE_LEVELS; i++)
		{
			if (levels[i].files == 0)
				continue;
			tcopy__level_files__init(&level_msgs[estimate.n_levels]);
			level_msgs[estimate.n_levels].level = i;
			level_msgs[estimate.n_levels].files = levels[i].files;
			level_msgs[estimate.n_levels].bytes = levels[i].bytes;
			level_ptrs[estimate.n_levels] = &level_msgs[estimate.n_levels];
			estimate.n_levels++;
		}
		stats.table = &estimate;
	}
	if (request->sessions)
	{
		nsessions = ts_sessions_list(proto->shared->store, proto->scope, proto->scope_len,
									 &sessions);
		if (nsessions < 0 ||
			(session_ptrs = malloc(sizeof(*session_ptrs) * (size_t) (nsessions + 1))) == NULL)
		{
			free(sessions);
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			return -1;
		}
		for (ssize_t i = 0; i < nsessions; i++)
			session_ptrs[i] = &sessions[i];
		stats.sessions = session_ptrs;
		stats.n_sessions = (size_t) nsessions;
	}
	ts_proto_fill_stats(proto->shared, &stats);
	if (proto->scope != NULL && proto_scope_stats(proto, &stats, sessions, nsessions, err) != 0)
		rc = -1;
	else
		rc = ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_STATS, &stats.base, err);
	free(session_ptrs);
	free(sessions);
	return rc;
}
