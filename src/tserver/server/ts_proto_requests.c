/*
 * ts_proto_requests.c
 *		The handlers of the requests a connection's protocol dispatches
 *		(ts_proto.c): tables, write sessions (BEGIN, WRITE, MODIFY,
 *		ROLLBACK_TO, COMMIT, PREPARE, RESOLVE, ABORT), scans, load labels
 *		and table operations (stats: ts_proto_stats.c).  Each checks what the connection's
 *		phase and scope allow, then calls the store; ts_proto.c's file
 *		comment says what the protocol trusts.
 */
#include "ts_proto_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_array.h"
#include "tc_client.h"
#include "ts_filter.h"
#include "ts_log.h"
#include "ts_scan_agg.h"

/*
 * A scoped connection may name a table only within its namespace: checked
 * on the name before any lookup, so that a refusal never tells whether
 * the table exists.  0, or -1 with err (ERROR_PERMISSION).
 */
static int
proto_check_table_name(TsProto *proto, const char *name, TsError *err)
{
	char		printable[PROTO_LOG_NAME_MAX];

	if (ts_auth_scope_allows(proto->scope, proto->scope_len, name))
		return 0;
	ts_proto_printable(name, printable, sizeof(printable));
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PERMISSION,
				 "permission denied for tserver table \"%s\"", printable);
	return -1;
}

/* Note that a scoped connection opened table_id.  0, or -1 with err. */
static int
proto_allow_table_id(TsProto *proto, uint32_t table_id, TsError *err)
{
	if (proto->scope == NULL || ts_proto_scope_has_table(proto, table_id))
		return 0;
	if (!tc_array_reserve((void **) &proto->scope_tables, proto->nscope_tables,
						  &proto->scope_tables_cap, sizeof(uint32_t), 8))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	proto->scope_tables[proto->nscope_tables++] = table_id;
	return 0;
}

/*
 * Remember that the client opened table_id with schema (which OPEN_TABLE
 * matched with the table's): its rows are laid out so.  0, or -1 with err.
 */
static int
proto_note_opened(TsProto *proto, uint32_t table_id, const Tcopy__Schema *schema, TsError *err)
{
	TsProtoOpened *opened = NULL;
	TsLayout	layout;

	if (ts_layout_init(&layout, schema, err) != 0)
		return -1;
	/* only writes use it: nothing may point into the request's schema */
	for (uint32_t i = 0; i < layout.ncolumns; i++)
		layout.missing[i].isnull = true;
	for (size_t i = 0; i < proto->nopened; i++)
		if (proto->opened[i].table_id == table_id)
			opened = &proto->opened[i];
	if (opened != NULL)
		ts_layout_free(&opened->layout);
	else if (!tc_array_reserve((void **) &proto->opened, proto->nopened, &proto->opened_cap,
							   sizeof(TsProtoOpened), 8))
	{
		ts_layout_free(&layout);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	else
		opened = &proto->opened[proto->nopened++];
	opened->table_id = table_id;
	opened->layout = layout;
	return 0;
}

/* OPEN_TABLE: look up (or create) a table; answer TABLE_INFO. */
int
ts_proto_on_open_table(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__OpenTable *request;
	Tcopy__TableInfo info = TCOPY__TABLE_INFO__INIT;
	const Tcopy__Schema *schema = NULL;
	uint32_t	table_id = 0;
	bool		created = false;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__open_table__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (request->table == NULL || request->table[0] == '\0')
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "OpenTable names no table");
		return -1;
	}
	if (proto_check_table_name(proto, request->table, err) != 0 ||
		ts_store_open_table(proto->shared->store, request->table, request->schema,
							request->create, &table_id, &created, &schema, err) != 0 ||
		proto_allow_table_id(proto, table_id, err) != 0 ||
		(request->schema != NULL && proto_note_opened(proto, table_id, request->schema, err) != 0))
		return -1;

	info.table_id = table_id;
	info.schema = (Tcopy__Schema *) schema;
	info.created = created;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_INFO, &info.base, err);
}

/* BEGIN: open a write session (one at a time); answer BEGIN_OK. */
int
ts_proto_on_begin(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__BeginOk reply = TCOPY__BEGIN_OK__INIT;
	uint64_t	session_id = 0;
	char		gid[PROTO_GID_LOG_MAX];

	Tcopy__Begin *request;
	TsSnapshot *snapshot = NULL;

	if (proto->phase != TS_PROTO_READY)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_BEGIN,
								proto->phase == TS_PROTO_IN_SESSION ?
								"a write session is already open" : NULL, err);
	request = ts_proto_unpack(proto, &tcopy__begin__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (ts_store_prepared_owned(proto->shared->store, proto->id, gid, sizeof(gid)))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unexpected BEGIN frame: this connection's session prepared under \"%s\" "
					 "must be resolved first", gid);
		return -1;
	}
	if (request->snapshot_id != 0 &&
		(snapshot = ts_snapshot_find(proto->shared->store, request->snapshot_id,
									 request->snapshot_key.data, request->snapshot_key.len,
									 err)) == NULL)
		return -1;
	proto->session = ts_session_begin(proto->shared->store, &session_id, err);
	if (proto->session != NULL &&
		ts_session_set_client(proto->session, request->client_system, request->client_database,
							  request->client_pid, proto->scope, proto->scope_len) != 0)
	{
		ts_session_abort(proto->session);
		proto->session = NULL;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	}
	if (proto->session == NULL)
	{
		ts_snapshot_unref(proto->shared->store, snapshot);
		return -1;
	}
	ts_session_set_snapshot(proto->session, snapshot);
	/* its prepare or commit may wait for an in-doubt session: not for a client gone */
	ts_session_set_give_up(proto->session, ts_proto_give_up, proto);
	proto->phase = TS_PROTO_IN_SESSION;
	proto->last_seq = 0;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session %" PRIu64 " begun",
		   proto->id, session_id);
	reply.session_id = session_id;
	reply.session_key.data = (uint8_t *) ts_session_key(proto->session, &reply.session_key.len);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_BEGIN_OK, &reply.base, err);
}

/*
 * WRITE: stage one batch, whose seq must follow the previous one; answer
 * ACK with the rows staged so far.
 */
int
ts_proto_on_write(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__WriteBatch decoded;
	Tcopy__WriteBatch *batch;
	Tcopy__Ack	ack = TCOPY__ACK__INIT;

	if (ts_proto_quota_check(proto, len, false, err) != 0)
		return -1;
	if (proto->phase == TS_PROTO_STREAM)
		return ts_proto_on_stream_write(proto, payload, len, err);
	if (proto->phase != TS_PROTO_IN_SESSION)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_WRITE,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	batch = ts_proto_decode_write(proto, payload, len, &decoded, err);
	if (batch == NULL)
		return -1;
	if (ts_proto_check_seq(proto, "write batch", batch->seq, err) != 0)
		return -1;
	atomic_fetch_add(&proto->shared->batches_received, 1);
	if (ts_proto_check_table_id(proto, batch->table_id, err) != 0 ||
		ts_session_write(proto->session, batch, ts_proto_opened_layout(proto, batch->table_id),
						 err) != 0)
		return -1;
	proto->last_seq = batch->seq;

	ack.seq = batch->seq;
	ack.rows = ts_session_rows(proto->session);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_ACK, &ack.base, err);
}

/*
 * MODIFY: update or delete rows in the session (a direct modify), taking
 * the next seq as a batch does; answer MODIFY_OK with the rows changed.
 */
int
ts_proto_on_modify(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Modify *request;
	Tcopy__ModifyOk reply = TCOPY__MODIFY_OK__INIT;
	uint64_t	changed = 0;

	if (proto->phase != TS_PROTO_IN_SESSION)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_MODIFY,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	request = ts_proto_unpack(proto, &tcopy__modify__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (ts_proto_check_seq(proto, "modify", request->seq, err) != 0)
		return -1;
	if (ts_proto_check_table_id(proto, request->table_id, err) != 0 ||
		ts_session_modify(proto->session, request, &changed, err) != 0)
		return -1;
	proto->last_seq = request->seq;
	reply.seq = request->seq;
	reply.rows = changed;
	reply.session_rows = ts_session_rows(proto->session);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_MODIFY_OK, &reply.base, err);
}

/*
 * ROLLBACK_TO: take back the batches after last_seq (a savepoint's
 * rollback); answer ROLLBACK_TO_OK, done or not.
 */
int
ts_proto_on_rollback_to(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__RollbackTo *request;
	Tcopy__RollbackToOk reply = TCOPY__ROLLBACK_TO_OK__INIT;
	char		reason[256] = "";
	bool		done = false;

	if (proto->phase != TS_PROTO_IN_SESSION && proto->phase != TS_PROTO_STREAMING)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	request = ts_proto_unpack(proto, &tcopy__rollback_to__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (proto->phase == TS_PROTO_STREAMING)
	{
		/*
		 * A parallel COPY that failed in a subtransaction left its streams
		 * open: they end (what they send from now on fails), and the rollback
		 * takes back their rows with the rest.
		 */
		ts_session_streams_end(proto->session);
		proto->phase = TS_PROTO_IN_SESSION;
		ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session streams ended by a rollback",
			   proto->id);
	}
	if (request->last_seq > proto->last_seq)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "rollback to seq %" PRIu64 ", past the last batch received, %" PRIu64,
					 (uint64_t) request->last_seq, proto->last_seq);
		return -1;
	}
	if (ts_session_rollback_to(proto->session, request->rows, &done, reason, sizeof(reason),
							   err) != 0)
		return -1;
	if (done)
		proto->last_seq = request->last_seq;
	reply.done = done;
	reply.reason = reason;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO_OK, &reply.base, err);
}

/*
 * COMMIT and PREPARE name the last batch and the rows sent: they must be
 * what the session received, so that a batch lost in between cannot go
 * unnoticed.  0, or -1 with err.
 */
static int
proto_check_sent(TsProto *proto, const char *what, uint64_t last_seq, uint64_t rows,
				 TsError *err)
{
	uint64_t	staged = ts_session_rows(proto->session);

	if (last_seq != proto->last_seq)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "%s names last seq %" PRIu64 ", but the last write batch received was seq %" PRIu64,
					 what, last_seq, proto->last_seq);
		return -1;
	}
	if (rows != staged)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "%s names %" PRIu64 " rows, but the session received %" PRIu64,
					 what, rows, staged);
		return -1;
	}
	return 0;
}

/* COMMIT: publish the session in one step; answer COMMIT_OK. */
int
ts_proto_on_commit(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Commit *commit;
	Tcopy__CommitOk reply = TCOPY__COMMIT_OK__INIT;
	TsSession  *session;
	uint64_t	rows = 0;

	if (proto->phase != TS_PROTO_IN_SESSION)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_COMMIT,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	if (ts_proto_quota_check(proto, len, true, err) != 0)
		return -1;
	commit = ts_proto_unpack(proto, &tcopy__commit__descriptor, payload, len, err);
	if (commit == NULL ||
		proto_check_sent(proto, "commit", commit->last_seq, commit->rows, err) != 0)
		return -1;

	/* commit frees the session, also when it fails */
	session = proto->session;
	proto->session = NULL;
	proto->phase = TS_PROTO_READY;
	if (ts_session_commit(session, &rows, err) != 0)
		return -1;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session committed, %" PRIu64 " rows",
		   proto->id, rows);
	reply.rows = rows;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK, &reply.base, err);
}

/*
 * PREPARE: do everything of the commit but publishing, record the session
 * durably under the client's gid, and go back to ready, owning the
 * prepared session; answer PREPARE_OK.
 */
int
ts_proto_on_prepare(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Prepare *prepare;
	Tcopy__PrepareOk reply = TCOPY__PREPARE_OK__INIT;
	TsSession  *session;
	uint64_t	rows = 0;

	if (proto->phase != TS_PROTO_IN_SESSION)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_PREPARE,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	if (ts_proto_quota_check(proto, len, true, err) != 0)
		return -1;
	prepare = ts_proto_unpack(proto, &tcopy__prepare__descriptor, payload, len, err);
	if (prepare == NULL ||
		proto_check_sent(proto, "prepare", prepare->last_seq, prepare->rows, err) != 0)
		return -1;

	/* prepare frees the session, also when it fails */
	session = proto->session;
	proto->session = NULL;
	proto->phase = TS_PROTO_READY;
	if (ts_session_prepare_gid(session, prepare->gid, proto->id, proto->scope, &rows, err) != 0)
		return -1;
	reply.rows = rows;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_PREPARE_OK, &reply.base, err);
}

/*
 * RESOLVE: publish or discard a prepared session, this connection's own or
 * an orphaned one; answer RESOLVE_OK with the outcome.
 */
int
ts_proto_on_resolve(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Resolve *request;
	Tcopy__ResolveOk reply = TCOPY__RESOLVE_OK__INIT;
	Tcopy__ResolveOutcome outcome = TCOPY__RESOLVE_OUTCOME__RESOLVE_NONE;
	uint64_t	rows = 0;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_RESOLVE, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__resolve__descriptor, payload, len, err);
	if (request == NULL ||
		ts_store_resolve(proto->shared->store, request->gid, request->commit, proto->id,
						 proto->scope, &outcome, &rows, err) != 0)
		return -1;
	reply.outcome = outcome;
	reply.rows = rows;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_RESOLVE_OK, &reply.base, err);
}

/* LIST_PREPARED: answer PREPARED_LIST. */
int
ts_proto_on_list_prepared(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__ListPrepared *request;
	Tcopy__PreparedList reply = TCOPY__PREPARED_LIST__INIT;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_LIST_PREPARED, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__list_prepared__descriptor, payload, len, err);
	/*
	 * Recovery forgets the record of a session not listed: the publishes
	 * that took sessions off the list must be durable first (lazy writes,
	 * ts_wal_sync.c), so the sync comes after the listing.
	 */
	if (request == NULL ||
		ts_store_list_prepared(proto->shared->store, request->gid_prefix, proto->scope,
							   &proto->frame_arena, &reply, err) != 0 ||
		ts_storage_sync_lazy(proto->shared->store, err) != 0)
		return -1;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_PREPARED_LIST, &reply.base, err);
}

/*
 * BACKUP: an online, consistent backup into a directory of the tserver's
 * machine (ts_backup.c).  Full access only: a backup holds every
 * namespace's tables, and writes where the tserver's user may.
 */
int
ts_proto_on_backup(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Backup *request;
	Tcopy__BackupOk reply = TCOPY__BACKUP_OK__INIT;
	TsBackupInfo info;

	if (proto->phase != TS_PROTO_READY)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_BACKUP,
								   proto->phase == TS_PROTO_AWAIT_HELLO ? NULL :
								   "a backup is taken outside a write session", err);
	request = ts_proto_unpack(proto, &tcopy__backup__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (proto->scope != NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PERMISSION,
					 "permission denied for tserver backup: it needs full access, "
					 "not a scoped token");
		return -1;
	}
	if (ts_store_backup(proto->shared->store, (const char *) request->dir.data,
						request->dir.len, proto->shared->backup_root, &proto->frame_arena,
						&info, err) != 0)
		return -1;
	ts_log(TS_LOG_INFO, "connection %" PRIu64 ": backup taken, %u tables, %zu prepared "
		   "sessions", proto->id, info.tables, info.nprepared);
	reply.tables = info.tables;
	reply.prepared = info.prepared;
	reply.n_prepared = info.nprepared;
	reply.bytes = info.bytes;
	reply.sequence = info.sequence;
	reply.locked_us = info.locked_us;
	reply.took_ms = info.took_ms;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_BACKUP_OK, &reply.base, err);
}

/*
 * GROUP: the replica group's status, after a change of its membership when
 * one is asked (full access only); answer GROUP_STATUS.
 */
int
ts_proto_on_group(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Group *request;
	Tcopy__GroupStatus reply = TCOPY__GROUP_STATUS__INIT;
	Tcopy__GroupMember members[TS_RAFT_MEMBERS_MAX];
	Tcopy__GroupMember *member_ptrs[TS_RAFT_MEMBERS_MAX];
	TsRaftStatus status;
	static const int changes[] = {TS_GROUP_STATUS, TS_RAFT_ADD, TS_RAFT_PROMOTE, TS_RAFT_REMOVE};

	if (proto->phase != TS_PROTO_READY)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_GROUP,
								   proto->phase == TS_PROTO_AWAIT_HELLO ? NULL :
								   "a group's membership changes outside a write session", err);
	request = ts_proto_unpack(proto, &tcopy__group__descriptor, payload, len, err);
	if (request == NULL)
		return -1;
	if (proto->scope != NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PERMISSION,
					 "permission denied for a replica group's membership: it needs full "
					 "access, not a scoped token");
		return -1;
	}
	if (proto->shared->group == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "this tserver is not a member of a replica group (no --raft-id)");
		return -1;
	}
	if ((unsigned) request->change >= sizeof(changes) / sizeof(changes[0]) ||
		(request->change == TCOPY__GROUP_CHANGE__GROUP_ADD &&
		 (request->address[0] == '\0' || strlen(request->address) >= TS_RAFT_ADDRESS_MAX)) ||
		(request->change != TCOPY__GROUP_CHANGE__GROUP_STATUS && request->id == 0))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "GROUP needs a known change, a member id above 0 and, to add one, "
					 "its raft address");
		return -1;
	}
	if (ts_group_change(proto->shared->group, changes[request->change], request->id,
						request->address, &status, err) != 0)
		return -1;
	reply.id = status.leader_id;
	reply.term = status.term;
	reply.applied = status.applied;
	for (unsigned i = 0; i < status.nmembers; i++)
	{
		tcopy__group_member__init(&members[i]);
		members[i].id = status.members[i].id;
		members[i].address = status.members[i].address;
		members[i].voter = status.members[i].voter;
		member_ptrs[i] = &members[i];
	}
	reply.members = member_ptrs;
	reply.n_members = status.nmembers;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_GROUP_STATUS, &reply.base, err);
}

/* ABORT: discard the session; answer ABORT_OK. */
int
ts_proto_on_abort(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__AbortOk reply = TCOPY__ABORT_OK__INIT;

	if (proto->phase != TS_PROTO_IN_SESSION && proto->phase != TS_PROTO_STREAMING)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_ABORT,
								proto->phase == TS_PROTO_READY ? "no write session is open" : NULL,
								err);
	if (ts_proto_unpack(proto, &tcopy__abort__descriptor, payload, len, err) == NULL)
		return -1;
	ts_session_abort(proto->session);
	proto->session = NULL;
	proto->phase = TS_PROTO_READY;
	ts_log(TS_LOG_DEBUG, "connection %" PRIu64 ": session aborted by the client",
		   proto->id);
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_ABORT_OK, &reply.base, err);
}

/*
 * Stream a scan to the end.  The request stays in the frame arena until
 * the scan is closed; each batch's rows live in the scan arena, reset
 * before the next one.
 */
int
ts_proto_on_scan(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Scan *request;
	TsScanAgg  *agg = NULL;
	bool		done = false;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_SCAN, NULL, err);
	/* an Expr is unpacked by recursion: its depth is bounded first */
	if (!ts_filter_wire_check(payload, len))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "malformed Scan, or its filter nested deeper than %d",
					 TS_FILTER_MAX_DEPTH);
		return -1;
	}
	request = ts_proto_unpack(proto, &tcopy__scan__descriptor, payload, len, err);
	if (request == NULL || ts_proto_check_table_id(proto, request->table_id, err) != 0)
		return -1;
	/* a group's leader reads only once it knows it still leads (ts_group.h) */
	if (request->snapshot_id == 0 && proto->shared->group != NULL &&
		ts_group_barrier(proto->shared->group, err) != 0)
		return -1;
	proto->scan = ts_scan_open(proto->shared->store, request, err);
	if (proto->scan == NULL)
		return -1;
	/* aggregates: groups instead of rows (ts_scan_agg.c) */
	if (ts_scan_agg_requested(request) &&
		(agg = ts_scan_agg_open(proto->scan, request, err)) == NULL)
		goto fail;
	while (!done)
	{
		Tcopy__ScanBatch batch = TCOPY__SCAN_BATCH__INIT;

		tc_arena_reset(&proto->scan_arena);
		if ((agg != NULL ? ts_scan_agg_next(agg, &proto->scan_arena, &batch, err) :
			 ts_scan_next(proto->scan, &proto->scan_arena, &batch, err)) != 0)
			goto fail;
		done = batch.done;
		if (ts_proto_reply_scan_batch(proto, &batch, agg == NULL && request->packed, err) != 0)
			goto fail;
	}
	ts_scan_agg_close(agg);
	ts_scan_close(proto->scan);
	proto->scan = NULL;
	tc_arena_reset(&proto->scan_arena);
	return 0;

fail:
	ts_scan_agg_close(agg);
	return -1;
}

/*
 * SPLIT: the keys that cut a table's key range into parts of about the
 * same size, for a parallel scan; answer SPLIT_OK.  The table id is
 * checked as a SCAN's.
 */
int
ts_proto_on_split(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Split *request;
	Tcopy__SplitOk reply = TCOPY__SPLIT_OK__INIT;
	TcBuf	   *keys;
	size_t		nkeys;
	int			rc = -1;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_SPLIT, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__split__descriptor, payload, len, err);
	if (request == NULL || ts_proto_check_table_id(proto, request->table_id, err) != 0 ||
		ts_store_split(proto->shared->store, request, &keys, &nkeys, err) != 0)
		return -1;
	reply.keys = tc_arena_alloc(&proto->frame_arena, (nkeys + 1) * sizeof(ProtobufCBinaryData));
	if (reply.keys == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < nkeys; i++)
	{
		reply.keys[i].data = keys[i].data;
		reply.keys[i].len = keys[i].len;
	}
	reply.n_keys = nkeys;
	rc = ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_SPLIT_OK, &reply.base, err);
done:
	for (size_t i = 0; i < nkeys; i++)
		tc_buf_free(&keys[i]);
	free(keys);
	return rc;
}

/*
 * SNAPSHOT: take a snapshot of the committed rows for the connection, in
 * place of the one it held, and answer its id and key, and the prepared
 * sessions asked for.
 */
int
ts_proto_on_snapshot(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__Snapshot *request;
	Tcopy__SnapshotOk reply = TCOPY__SNAPSHOT_OK__INIT;
	TsSnapshot *snapshot;
	const uint8_t *key;

	request = ts_proto_unpack(proto, &tcopy__snapshot__descriptor, payload, len, err);
	if (request == NULL ||
		(proto->shared->group != NULL && ts_group_barrier(proto->shared->group, err) != 0))
		return -1;
	snapshot = ts_snapshot_take(proto->shared->store, request->prepared_prefix, proto->scope,
								&proto->frame_arena, &reply.prepared, &reply.n_prepared, err);
	if (snapshot == NULL)
		return -1;
	ts_snapshot_unref(proto->shared->store, proto->snapshot);
	proto->snapshot = snapshot;
	reply.snapshot_id = ts_snapshot_id(snapshot, &key, &reply.snapshot_key.len);
	reply.snapshot_key.data = (uint8_t *) key;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_SNAPSHOT_OK, &reply.base, err);
}

/*
 * TABLE_OP LOAD_LABEL (in the session) or FORGET_LABEL (at once): answer
 * TABLE_OP_OK with the label's state.  The table id is checked already.
 */
static int
proto_on_label_op(TsProto *proto, const Tcopy__TableOp *request, TsError *err)
{
	Tcopy__TableOpOk reply = TCOPY__TABLE_OP_OK__INIT;
	char		holder[TC_GID_MAX + 1];

	if (request->op == TCOPY__TABLE_OP_KIND__TABLE_OP_LOAD_LABEL)
	{
		if (!request->in_session)
			return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP,
									"a load label is claimed in a write session", err);
		if (ts_session_claim_label(proto->session, request->table_id, request->label,
								   &reply.label_state, &reply.published_at_ms,
								   holder, sizeof(holder), err) != 0)
			return -1;
		reply.holder_gid = holder;
	}
	else
	{
		bool		found;

		if (request->in_session)
			return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP,
									"a load label is forgotten at once, not in a session", err);
		if (ts_store_forget_label(proto->shared->store, request->table_id, request->label,
								  &found, err) != 0)
			return -1;
		reply.label_state = found ? TCOPY__LABEL_STATE__LABEL_PUBLISHED :
			TCOPY__LABEL_STATE__LABEL_NONE;
	}
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK, &reply.base, err);
}

/* LIST_LABELS: answer LABEL_LIST, the table's published load labels. */
int
ts_proto_on_list_labels(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__ListLabels *request;
	Tcopy__LabelList reply = TCOPY__LABEL_LIST__INIT;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_LIST_LABELS, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__list_labels__descriptor, payload, len, err);
	if (request == NULL || ts_proto_check_table_id(proto, request->table_id, err) != 0 ||
		ts_store_list_labels(proto->shared->store, request->table_id, &proto->frame_arena,
							 &reply, err) != 0)
		return -1;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_LABEL_LIST, &reply.base, err);
}

/*
 * LIST_TABLES: answer TABLE_LIST, the tables whose names begin with the
 * prefix, of the connection's namespace if it is scoped.
 */
int
ts_proto_on_list_tables(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__ListTables *request;
	Tcopy__TableList reply = TCOPY__TABLE_LIST__INIT;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_LIST_TABLES, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__list_tables__descriptor, payload, len, err);
	if (request == NULL ||
		ts_store_list_tables(proto->shared->store, request->prefix, proto->scope,
							 proto->scope_len, &proto->frame_arena, &reply, err) != 0)
		return -1;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_LIST, &reply.base, err);
}

/*
 * TABLE_OP: truncate or drop a table at once, outside any session, or with
 * in_session as part of the open session; answer TABLE_OP_OK.
 */
int
ts_proto_on_table_op(TsProto *proto, const uint8_t *payload, uint32_t len, TsError *err)
{
	Tcopy__TableOp *request;
	Tcopy__TableOpOk reply = TCOPY__TABLE_OP_OK__INIT;

	if (proto->phase == TS_PROTO_AWAIT_HELLO)
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, NULL, err);
	request = ts_proto_unpack(proto, &tcopy__table_op__descriptor, payload, len, err);
	if (request == NULL || ts_proto_check_table_id(proto, request->table_id, err) != 0)
		return -1;
	/*
	 * A session open to streams may still set a table's on_conflict (a
	 * partition a parallel COPY's routing reaches late), nothing else.
	 */
	if (proto->phase == TS_PROTO_STREAM ||
		(proto->phase == TS_PROTO_STREAMING &&
		 request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_ON_CONFLICT))
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, NULL, err);
	if (request->in_session != (proto->phase == TS_PROTO_IN_SESSION ||
								proto->phase == TS_PROTO_STREAMING))
		return ts_proto_unexpected(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP,
								request->in_session ? "in_session, but no write session is open" :
								"not in_session, but a write session is open", err);
	if (request->op == TCOPY__TABLE_OP_KIND__TABLE_OP_ON_CONFLICT)
	{
		if (!request->in_session)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "on_conflict is set in a write session only");
			return -1;
		}
		if (ts_session_set_on_conflict(proto->session, request->table_id,
									   request->on_conflict, err) != 0)
			return -1;
		return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK, &reply.base, err);
	}
	if (request->op == TCOPY__TABLE_OP_KIND__TABLE_OP_LOAD_LABEL ||
		request->op == TCOPY__TABLE_OP_KIND__TABLE_OP_FORGET_LABEL)
		return proto_on_label_op(proto, request, err);
	if (request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE &&
		request->op != TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "unknown table operation %d", (int) request->op);
		return -1;
	}
	if (request->in_session)
	{
		if (ts_session_table_op(proto->session, request->op, request->table_id, err) != 0)
			return -1;
	}
	else if (ts_store_table_op(proto->shared->store, request->op, request->table_id,
							   ts_proto_give_up, proto, err) != 0)
		return -1;
	return ts_proto_reply(proto, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK, &reply.base, err);
}
