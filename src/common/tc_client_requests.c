/*
 * tc_client_requests.c
 *		The client library's requests: tables, write sessions, scans,
 *		stats, and raw frames for tests.
 *
 * Writes are pipelined.  tc_client_write first collects the acks that have
 * already arrived, without waiting, then waits for the oldest ack only
 * while `window` batches are unacknowledged.  The server acknowledges
 * batches in order, so every ack must carry the next sequence number.
 * Heap copies of replies are made only where tc_client.h promises them
 * (stats, the schema of an opened table); every other reply lives in the
 * client's arena until the next call.
 */
#include "tc_client_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tc_frame.h"

/*
 * Open a table; see tc_client.h.  The stored schema is copied to the heap
 * by packing it and unpacking it with the default allocator.
 */
int
tc_client_open_table(TcClient *client, const char *name,
					 const Tcopy__Schema *schema, bool create,
					 uint32_t *table_id, bool *created,
					 Tcopy__Schema **schema_out)
{
	Tcopy__OpenTable open = TCOPY__OPEN_TABLE__INIT;
	ProtobufCMessage *msg;
	Tcopy__TableInfo *info;

	/* in a session, acks of earlier batches come before the reply */
	if (tc_client_wait_acks(client) < 0)
		return -1;
	open.table = (char *) name;
	open.schema = (Tcopy__Schema *) schema;
	open.create = create;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_OPEN_TABLE, &open.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_INFO,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	info = (Tcopy__TableInfo *) msg;
	if (table_id != NULL)
		*table_id = info->table_id;
	if (created != NULL)
		*created = info->created;
	if (schema_out != NULL)
	{
		size_t		size;

		if (info->schema == NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
							   "protocol error: tserver sent FRAME_TABLE_INFO without a schema");
		size = tcopy__schema__get_packed_size(info->schema);
		client->out.len = 0;
		if (!tc_buf_reserve(&client->out, size))
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
		tcopy__schema__pack(info->schema, client->out.data);
		*schema_out = tcopy__schema__unpack(NULL, size, client->out.data);
		if (*schema_out == NULL)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
	}
	return 0;
}

int
tc_client_open_table_cached(TcClient *client, const char *name, const Tcopy__Schema *schema,
							uint32_t *table_id, bool *cached)
{
	size_t		name_len = strlen(name);
	size_t		schema_len = schema != NULL ? tcopy__schema__get_packed_size(schema) : 0;
	TcClientTable *table = malloc(offsetof(TcClientTable, bytes) + name_len + schema_len);

	*cached = false;
	if (table == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
	memcpy(table->bytes, name, name_len);
	if (schema != NULL)
		tcopy__schema__pack(schema, table->bytes + name_len);
	table->name_len = name_len;
	table->schema_len = schema_len;
	for (TcClientTable *t = client->tables; t != NULL; t = t->next)
	{
		if (t->name_len == name_len && t->schema_len == schema_len &&
			memcmp(t->bytes, table->bytes, name_len + schema_len) == 0)
		{
			free(table);
			*table_id = t->table_id;
			*cached = true;
			return 0;
		}
	}
	if (tc_client_open_table(client, name, schema, false, table_id, NULL, NULL) < 0)
	{
		free(table);
		return -1;
	}
	if (client->ntables == TC_CLIENT_TABLES_MAX)
	{
		free(table);			/* enough: the others are opened each time */
		return 0;
	}
	table->table_id = *table_id;
	table->next = client->tables;
	client->tables = table;
	client->ntables++;
	return 0;
}

/* Begin a write session; batch sequence numbers start again at 1. */
int
tc_client_begin(TcClient *client, uint64_t *session_id)
{
	return tc_client_begin_at(client, 0, NULL, 0, session_id);
}

void
tc_client_set_identity(TcClient *client, uint64_t system, uint32_t database, uint32_t pid)
{
	client->identity_system = system;
	client->identity_database = database;
	client->identity_pid = pid;
}

/* The Begin of a session for tc_client_begin_at and tc_client_begin_deferred. */
static void
client_fill_begin(TcClient *client, Tcopy__Begin *begin, uint64_t snapshot_id,
				  const uint8_t *snapshot_key, size_t snapshot_keylen)
{
	begin->snapshot_id = snapshot_id;
	begin->client_system = client->identity_system;
	begin->client_database = client->identity_database;
	begin->client_pid = client->identity_pid;
	begin->snapshot_key.data = (uint8_t *) snapshot_key;
	begin->snapshot_key.len = snapshot_keylen;
	client->seq_sent = client->seq_acked = 0;
	client->session_id = 0;
	client->session_key_len = 0;
}

int
tc_client_begin_at(TcClient *client, uint64_t snapshot_id, const uint8_t *snapshot_key,
				   size_t snapshot_keylen, uint64_t *session_id)
{
	Tcopy__Begin begin = TCOPY__BEGIN__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	client_fill_begin(client, &begin, snapshot_id, snapshot_key, snapshot_keylen);
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_BEGIN, &begin.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_BEGIN_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	client_keep_session(client, (Tcopy__BeginOk *) msg);
	if (session_id != NULL)
		*session_id = client->session_id;
	return 0;
}

int
tc_client_begin_deferred(TcClient *client, uint64_t snapshot_id, const uint8_t *snapshot_key,
						 size_t snapshot_keylen)
{
	Tcopy__Begin begin = TCOPY__BEGIN__INIT;

	if (client->broken)
		return -1;
	client_fill_begin(client, &begin, snapshot_id, snapshot_key, snapshot_keylen);
	return client_send_deferred(client, TCOPY__FRAME_TYPE__FRAME_BEGIN, &begin.base,
								TCOPY__FRAME_TYPE__FRAME_BEGIN_OK);
}

int
tc_client_settle(TcClient *client)
{
	if (client->broken)
		return -1;
	return client_take_deferred(client, false) < 0 ? -1 : 0;
}

int
tc_client_snapshot(TcClient *client, const char *prepared_prefix, uint64_t *snapshot_id,
				   uint8_t *key, size_t *keylen, char ***prepared, size_t *nprepared)
{
	Tcopy__Snapshot request = TCOPY__SNAPSHOT__INIT;
	Tcopy__SnapshotOk *ok;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.prepared_prefix = (char *) (prepared_prefix != NULL ? prepared_prefix : "");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_SNAPSHOT, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SNAPSHOT_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	ok = (Tcopy__SnapshotOk *) msg;
	if (ok->snapshot_key.len > TC_SNAPSHOT_KEY_MAX)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "the tserver's snapshot key has %zu bytes", ok->snapshot_key.len);
	*snapshot_id = ok->snapshot_id;
	memcpy(key, ok->snapshot_key.data, ok->snapshot_key.len);
	*keylen = ok->snapshot_key.len;
	*prepared = ok->prepared;
	*nprepared = ok->n_prepared;
	return 0;
}

int
tc_client_session(TcClient *client, uint64_t *session_id, const uint8_t **key, size_t *keylen)
{
	if (tc_client_settle(client) < 0 || client->session_key_len == 0)
		return -1;
	*session_id = client->session_id;
	*key = client->session_key;
	*keylen = client->session_key_len;
	return 0;
}

/*
 * Send a packed WriteBatch; see tc_client.h.  The header goes out from the
 * stack and the payload from the caller's buffer, in one sendmsg.
 */
/*
 * Room in the window for one more batch: take the acks that have arrived,
 * then wait only while the window is full.  0, or -1.
 */
int
client_make_room(TcClient *client)
{
	ProtobufCAllocator *arena = tc_arena_allocator(&client->arena);
	ProtobufCMessage *msg;
	int			found;

	while ((found = client_read_reply(client, true, TCOPY__FRAME_TYPE__FRAME_ACK,
									  arena, &msg)) > 0)
	{
		if (client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}
	if (found < 0)
		return -1;
	while (client->seq_sent - client->seq_acked >= client->window)
	{
		if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_ACK, arena, &msg) < 0 ||
			client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}
	return 0;
}

int
tc_client_write(TcClient *client, uint64_t seq, const uint8_t *payload, size_t len)
{
	uint8_t		header[TC_FRAME_HEADER_SIZE];
	struct iovec iov[2];

	if (client->broken)
		return -1;
	if (seq != client->seq_sent + 1)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "write batch has seq %" PRIu64 ", expected %" PRIu64,
						   seq, client->seq_sent + 1);
	if (len > UINT32_MAX)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "write batch of %zu bytes does not fit in a frame", len);

	if (client_make_room(client) < 0)
		return -1;
	tc_frame_put_header(header, TCOPY__FRAME_TYPE__FRAME_WRITE, (uint32_t) len);
	iov[0].iov_base = header;
	iov[0].iov_len = sizeof(header);
	iov[1].iov_base = (void *) payload;
	iov[1].iov_len = len;
	if (client_send_iov(client, iov, 2) < 0)
		return -1;
	client->seq_sent = seq;
	return 0;
}

/*
 * Pack batch into the output buffer and send it.  tc_client_write only
 * reads while it waits, so the output buffer stays intact until sent.
 */
int
tc_client_write_batch(TcClient *client, const Tcopy__WriteBatch *batch)
{
	size_t		size;

	if (client->broken)
		return -1;
	size = tcopy__write_batch__get_packed_size(batch);
	client->out.len = 0;
	if (!tc_buf_reserve(&client->out, size))
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "out of memory for a write batch of %zu bytes", size);
	tcopy__write_batch__pack(batch, client->out.data);
	return tc_client_write(client, batch->seq, client->out.data, size);
}

/* Wait until every batch sent has been acknowledged. */
int
tc_client_wait_acks(TcClient *client)
{
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	while (client->seq_acked < client->seq_sent)
	{
		if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_ACK,
							  tc_arena_allocator(&client->arena), &msg) < 0 ||
			client_take_ack(client, (Tcopy__Ack *) msg) < 0)
			return -1;
	}
	return 0;
}

/* Commit the session; see tc_client.h. */
int
tc_client_commit(TcClient *client, uint64_t rows_sent, uint64_t *rows_committed)
{
	Tcopy__Commit commit = TCOPY__COMMIT__INIT;
	ProtobufCMessage *msg;

	if (tc_client_wait_acks(client) < 0)
		return -1;
	commit.last_seq = client->seq_sent;
	commit.rows = rows_sent;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_COMMIT, &commit.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_COMMIT_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	if (rows_committed != NULL)
		*rows_committed = ((Tcopy__CommitOk *) msg)->rows;
	client->seq_sent = client->seq_acked = 0;
	return 0;
}

/* Prepare the session under gid: see tc_client.h. */
int
tc_client_prepare(TcClient *client, uint64_t rows_sent, const char *gid)
{
	if (tc_client_prepare_send(client, rows_sent, gid) < 0)
		return -1;
	return tc_client_prepare_wait(client);
}

/* The first step of tc_client_prepare: see tc_client.h. */
int
tc_client_prepare_send(TcClient *client, uint64_t rows_sent, const char *gid)
{
	Tcopy__Prepare prepare = TCOPY__PREPARE__INIT;

	if (strlen(gid) > TC_GID_MAX)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "global id of %zu bytes exceeds the limit of %d bytes",
						   strlen(gid), TC_GID_MAX);
	/* behind the batches in flight: their acks come first (tc_client_prepare_wait) */
	if (client->broken)
		return -1;
	prepare.last_seq = client->seq_sent;
	prepare.rows = rows_sent;
	prepare.gid = (char *) gid;
	return client_send_message(client, TCOPY__FRAME_TYPE__FRAME_PREPARE, &prepare.base);
}

/* The second step of tc_client_prepare: see tc_client.h. */
int
tc_client_prepare_wait(TcClient *client)
{
	ProtobufCMessage *msg;

	if (tc_client_wait_acks(client) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_PREPARE_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	/* the session is the tserver's now: this connection may begin another */
	client->seq_sent = client->seq_acked = 0;
	return 0;
}

/* Publish or discard a prepared session: see tc_client.h. */
int
tc_client_resolve(TcClient *client, const char *gid, bool commit,
				  Tcopy__ResolveOutcome *outcome, uint64_t *rows)
{
	if (tc_client_resolve_send(client, gid, commit) < 0)
		return -1;
	return tc_client_resolve_wait(client, outcome, rows);
}

/* The first step of tc_client_resolve: see tc_client.h. */
int
tc_client_resolve_send(TcClient *client, const char *gid, bool commit)
{
	Tcopy__Resolve resolve = TCOPY__RESOLVE__INIT;

	if (client->broken)
		return -1;
	resolve.gid = (char *) gid;
	resolve.commit = commit;
	return client_send_message(client, TCOPY__FRAME_TYPE__FRAME_RESOLVE, &resolve.base);
}

/* The second step of tc_client_resolve: see tc_client.h. */
int
tc_client_resolve_wait(TcClient *client, Tcopy__ResolveOutcome *outcome, uint64_t *rows)
{
	ProtobufCMessage *msg;
	Tcopy__ResolveOk *ok;

	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_RESOLVE_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	ok = (Tcopy__ResolveOk *) msg;
	if (ok->outcome != TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE &&
		ok->outcome != TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND &&
		ok->outcome != TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver answered a resolve with outcome %d",
						   (int) ok->outcome);
	*outcome = ok->outcome;
	if (rows != NULL)
		*rows = ok->rows;
	return 0;
}

/* List prepared sessions; *list is a heap copy. */
int
tc_client_list_prepared(TcClient *client, const char *gid_prefix,
						Tcopy__PreparedList **list)
{
	Tcopy__ListPrepared request = TCOPY__LIST_PREPARED__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.gid_prefix = (char *) (gid_prefix != NULL ? gid_prefix : "");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_LIST_PREPARED, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_PREPARED_LIST, NULL, &msg) < 0)
		return -1;
	*list = (Tcopy__PreparedList *) msg;
	return 0;
}

/*
 * Back the tserver up into dir, a path on its machine; *ok is a heap copy.
 * The tserver answers once the backup is complete and synced.
 */
int
tc_client_backup(TcClient *client, const char *dir, Tcopy__BackupOk **ok)
{
	Tcopy__Backup request = TCOPY__BACKUP__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.dir.data = (uint8_t *) dir;
	request.dir.len = strlen(dir);
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_BACKUP, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_BACKUP_OK, NULL, &msg) < 0)
		return -1;
	*ok = (Tcopy__BackupOk *) msg;
	return 0;
}

int
tc_client_group(TcClient *client, Tcopy__GroupChange change, uint64_t id,
				const char *address, Tcopy__GroupStatus **status)
{
	Tcopy__Group request = TCOPY__GROUP__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.change = change;
	request.id = id;
	request.address = (char *) (address != NULL ? address : "");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_GROUP, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_GROUP_STATUS, NULL, &msg) < 0)
		return -1;
	*status = (Tcopy__GroupStatus *) msg;
	return 0;
}

/*
 * Abort the session.  Acks of batches still in flight may arrive before
 * AbortOk; they are skipped.
 */
int
tc_client_abort(TcClient *client)
{
	Tcopy__Abort abort_msg = TCOPY__ABORT__INIT;
	Tcopy__FrameType type;
	const uint8_t *payload;
	uint32_t	len;

	if (client->broken)
		return -1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_ABORT, &abort_msg.base) < 0)
		return -1;
	tc_arena_reset(&client->arena);
	if (client_take_deferred(client, false) < 0)
		return -1;
	do
	{
		if (client_next_frame(client, false, &type, &payload, &len) < 0)
			return -1;
	} while (type == TCOPY__FRAME_TYPE__FRAME_ACK);
	if (type == TCOPY__FRAME_TYPE__FRAME_ERROR)
		return client_server_error(client, payload, len);
	if (type != TCOPY__FRAME_TYPE__FRAME_ABORT_OK)
		return client_unexpected(client, type, TCOPY__FRAME_TYPE__FRAME_ABORT_OK);
	client->seq_sent = client->seq_acked = 0;
	return 0;
}

/*
 * Send a TableOp, at once or in the session, and wait for its answer; or,
 * deferred, not (its answer is taken by a later read).
 */
static int
client_table_op(TcClient *client, Tcopy__TableOpKind op, uint32_t table_id,
				bool in_session, Tcopy__OnConflict on_conflict, bool deferred)
{
	Tcopy__TableOp table_op = TCOPY__TABLE_OP__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	/*
	 * in a session, acks of earlier batches come before the reply; and a
	 * deferred answer must come before any ack (client_take_deferred)
	 */
	if (in_session && tc_client_wait_acks(client) < 0)
		return -1;
	table_op.op = op;
	table_op.table_id = table_id;
	table_op.in_session = in_session;
	table_op.on_conflict = on_conflict;
	if (deferred)
		return client_send_deferred(client, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, &table_op.base,
									TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK);
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, &table_op.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	return 0;
}

/*
 * Send a TableOp about a load label and wait for its answer: the label's
 * state, and when it was published or by which prepared session it is held.
 */
static int
client_label_op(TcClient *client, Tcopy__TableOpKind op, uint32_t table_id,
				const char *label, bool in_session, TcLabelAnswer *answer)
{
	Tcopy__TableOp table_op = TCOPY__TABLE_OP__INIT;
	Tcopy__TableOpOk *ok;
	ProtobufCMessage *msg;

	memset(answer, 0, sizeof(*answer));
	if (client->broken)
		return -1;
	if (in_session && tc_client_wait_acks(client) < 0)
		return -1;
	table_op.op = op;
	table_op.table_id = table_id;
	table_op.in_session = in_session;
	table_op.label = (char *) label;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_TABLE_OP, &table_op.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	ok = (Tcopy__TableOpOk *) msg;
	if (ok->label_state < TCOPY__LABEL_STATE__LABEL_NONE ||
		ok->label_state > TCOPY__LABEL_STATE__LABEL_PREPARED ||
		(op == TCOPY__TABLE_OP_KIND__TABLE_OP_LOAD_LABEL &&
		 ok->label_state == TCOPY__LABEL_STATE__LABEL_NONE))
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "protocol error: tserver answered a label operation with state %d",
						   (int) ok->label_state);
	answer->state = ok->label_state;
	answer->published_at_ms = ok->published_at_ms;
	snprintf(answer->holder_gid, sizeof(answer->holder_gid), "%s",
			 ok->holder_gid != NULL ? ok->holder_gid : "");
	return 0;
}

/* Claim a load label for the open session. */
int
tc_client_session_claim_label(TcClient *client, uint32_t table_id, const char *label,
							  TcLabelAnswer *answer)
{
	return client_label_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_LOAD_LABEL, table_id,
						   label, true, answer);
}

/* Forget a published load label at once. */
int
tc_client_forget_label(TcClient *client, uint32_t table_id, const char *label,
					   TcLabelAnswer *answer)
{
	return client_label_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_FORGET_LABEL, table_id,
						   label, false, answer);
}

/* The labels published for a table; *list is a heap copy. */
int
tc_client_list_labels(TcClient *client, uint32_t table_id, Tcopy__LabelList **list)
{
	Tcopy__ListLabels request = TCOPY__LIST_LABELS__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.table_id = table_id;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_LIST_LABELS, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_LABEL_LIST, NULL, &msg) < 0)
		return -1;
	*list = (Tcopy__LabelList *) msg;
	return 0;
}

int
tc_client_list_tables(TcClient *client, const char *prefix, Tcopy__TableList **list)
{
	Tcopy__ListTables request = TCOPY__LIST_TABLES__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.prefix = (char *) (prefix != NULL ? prefix : "");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_LIST_TABLES, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_TABLE_LIST, NULL, &msg) < 0)
		return -1;
	*list = (Tcopy__TableList *) msg;
	return 0;
}

/*
 * A direct modify in the session: request->seq is set here, the session's
 * next.  Waits for every batch in flight to be acknowledged first.
 * *changed: the rows updated or deleted.
 */
int
tc_client_modify(TcClient *client, Tcopy__Modify *request, uint64_t *changed)
{
	ProtobufCMessage *msg;
	Tcopy__ModifyOk *ok;

	if (client->broken || tc_client_wait_acks(client) < 0)
		return -1;
	request->seq = client->seq_sent + 1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_MODIFY, &request->base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_MODIFY_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	ok = (Tcopy__ModifyOk *) msg;
	if (ok->seq != request->seq)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "protocol error: tserver answered modify %llu for %llu",
						   (unsigned long long) ok->seq, (unsigned long long) request->seq);
	client->seq_sent = client->seq_acked = request->seq;
	*changed = ok->rows;
	return 0;
}

/*
 * Take back the session's batches after last_seq, rows rows in all then (a
 * savepoint's rollback): 0 with *done, or not and why in reason[size] (the
 * session goes on as it was); -1 when the call failed.
 */
int
tc_client_rollback_to(TcClient *client, uint64_t last_seq, uint64_t rows, bool *done,
					  char *reason, size_t size)
{
	Tcopy__RollbackTo request = TCOPY__ROLLBACK_TO__INIT;
	ProtobufCMessage *msg;
	Tcopy__RollbackToOk *ok;

	if (client->broken || tc_client_wait_acks(client) < 0)
		return -1;
	request.last_seq = last_seq;
	request.rows = rows;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO_OK,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	ok = (Tcopy__RollbackToOk *) msg;
	*done = ok->done;
	snprintf(reason, size, "%s", ok->reason ? ok->reason : "");
	if (ok->done)
		client->seq_sent = client->seq_acked = last_seq;
	return 0;
}

/* Truncate or drop a table at once. */
int
tc_client_table_op(TcClient *client, Tcopy__TableOpKind op, uint32_t table_id)
{
	return client_table_op(client, op, table_id, false,
						   TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE, false);
}

/* Truncate or drop a table when the open session is published. */
int
tc_client_session_table_op(TcClient *client, Tcopy__TableOpKind op, uint32_t table_id)
{
	return client_table_op(client, op, table_id, true,
						   TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE, false);
}

/* What the open session does with a table's rows of equal keys. */
int
tc_client_session_on_conflict(TcClient *client, uint32_t table_id,
							  Tcopy__OnConflict on_conflict)
{
	return client_table_op(client, TCOPY__TABLE_OP_KIND__TABLE_OP_ON_CONFLICT,
						   table_id, true, on_conflict, true);
}

/* Send STATS_REQUEST; *stats is a heap copy. */
int
tc_client_stats_request(TcClient *client, uint32_t table_id, bool sessions,
						Tcopy__Stats **stats)
{
	Tcopy__StatsRequest request = TCOPY__STATS_REQUEST__INIT;
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	request.table_id = table_id;
	request.sessions = sessions;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_STATS_REQUEST, &request.base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_STATS, NULL, &msg) < 0)
		return -1;
	*stats = (Tcopy__Stats *) msg;
	return 0;
}

/*
 * Ask for the server's estimate of table_id's size.  1 when the server
 * answered without one (it predates estimates).
 */
int
tc_client_table_estimate(TcClient *client, uint32_t table_id, uint64_t *rows,
						 uint64_t *bytes)
{
	Tcopy__Stats *stats;
	int			rc = 1;

	if (tc_client_stats_request(client, table_id, false, &stats) < 0)
		return -1;
	if (stats->table != NULL)
	{
		*rows = stats->table->rows;
		*bytes = stats->table->bytes;
		rc = 0;
	}
	tcopy__stats__free_unpacked(stats, NULL);
	return rc;
}

/* Ask for the keys that cut a table's key range into parts: a heap copy. */
int
tc_client_split(TcClient *client, const Tcopy__Split *request, Tcopy__SplitOk **ok)
{
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_SPLIT, &request->base) < 0 ||
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SPLIT_OK, NULL, &msg) < 0)
		return -1;
	*ok = (Tcopy__SplitOk *) msg;
	return 0;
}

/* Send a Scan; its batches are then read with tc_client_scan_next. */
int
tc_client_scan_start(TcClient *client, const Tcopy__Scan *request)
{
	if (client->broken)
		return -1;
	if (client->scanning)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "a scan is already in progress on this connection");
	if (client_send_message(client, TCOPY__FRAME_TYPE__FRAME_SCAN, &request->base) < 0)
		return -1;
	client->scanning = true;
	return 0;
}

/* The next batch of the scan, in the arena until the next call. */
int
tc_client_scan_next(TcClient *client, Tcopy__ScanBatch **batch)
{
	ProtobufCMessage *msg;

	if (client->broken)
		return -1;
	if (!client->scanning)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
						   "no scan in progress on this connection");
	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH,
						  tc_arena_allocator(&client->arena), &msg) < 0)
		return -1;
	*batch = (Tcopy__ScanBatch *) msg;
	if ((*batch)->done)
		client->scanning = false;
	return 0;
}

/* Send bytes as they are (tests feed the server malformed input this way). */
int
tc_client_send_raw(TcClient *client, const void *bytes, size_t len)
{
	struct iovec iov;

	if (client->broken)
		return -1;
	iov.iov_base = (void *) bytes;
	iov.iov_len = len;
	return client_send_iov(client, &iov, 1);
}

/*
 * Read one frame whatever its type, an Error frame included (it does not
 * fail the call); the payload is valid until the next call.
 */
int
tc_client_read_frame(TcClient *client, Tcopy__FrameType *type,
					 const uint8_t **payload, uint32_t *len)
{
	if (client->broken)
		return -1;
	return client_next_frame(client, false, type, payload, len) < 0 ? -1 : 0;
}
