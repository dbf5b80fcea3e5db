/*
 * fuzz_frames.c
 *		libFuzzer harness for the tserver's frame handling and everything
 *		behind it: header checks, protobuf decoding, the protocol's state
 *		machine, row validation, session staging, spills, commits, scans,
 *		table operations (at once and in a session), and prepared sessions:
 *		prepare, list, resolve (publish and discard).
 *
 * It drives the code a connection runs (ts_proto_check_header and
 * ts_proto_handle_frame, ts_proto.h) on a real store, without a socket:
 * replies go to a send function that checks each of them, so that the
 * server never sends what a client could not decode.
 *
 * An input is one connection:
 *
 *   [flags: 1 byte] then frames [type: 1 byte][length: 2 bytes BE][payload]
 *
 *   flags bit 0  the input's own frames do the handshake (they must start
 *                with HELLO); without it the harness sends a valid HELLO
 *   flags bit 1  the server requires a token: the peer is not admitted by
 *                its uid (the harness's HELLO carries the right proof over
 *                both nonces, and the server's proof in READY is checked;
 *                an input's HELLO cannot prove anything)
 *   flags bit 2  the harness's HELLO proves the scoped token of namespace
 *                "k" instead of the full-access one: table "kv" is in it,
 *                "log", "txt" and the ids an input did not open are not
 *   flags bit 3  all frames share a total decode budget (32 KiB) smaller
 *                than a frame's own, which must be given back after every
 *                frame
 *
 * A length running past the end of the input takes what is left.  Each
 * payload is copied to a buffer of exactly its size, so that a read past
 * it is caught.  As on a socket, the first error ends the connection.
 * The server's frame limit (16 KiB) and decode budget (64 KiB) are small,
 * so that inputs reach both.
 *
 * The store is opened once, in a fresh temporary directory, with 4 KiB of
 * session memory so that sessions spill, and holds three tables (ids 1-3,
 * see fuzz_create_tables).  An input that changed what is stored (created,
 * truncated or dropped a table, replaced a stored schema by one with forms,
 * committed or prepared a session) or took a snapshot is
 * followed by a fresh store, so that every input starts from the same state
 * and any crash reproduces from its input alone: a session an input
 * prepared and left orphaned is gone with its store, and the first snapshot
 * an input takes is id 1.  The keys of sessions and snapshots are not
 * random here (__wrap_getrandom: sixteen 0x5a bytes), so that an input can
 * name them.  When the connection ends, no snapshot may be left held.
 *
 * Build: make -C test fuzz (clang, ASan + UBSan; build-fuzz/).
 * Seeds: test/fuzz/corpus, made by test/fuzz/make_corpus.pl.
 */
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_auth.h"
#include "ts_log.h"
#include "ts_proto.h"

#define FUZZ_FLAG_OWN_HELLO 0x01
#define FUZZ_FLAG_TOKEN 0x02
#define FUZZ_FLAG_SCOPED 0x04
#define FUZZ_FLAG_DECODE_TOTAL 0x08
#define FUZZ_BACKUP_ROOT "/nonexistent/tcopy-fuzz-backups"
#define FUZZ_MAX_FRAME (16 * 1024)	/* the server's limit: inputs can exceed it */
#define FUZZ_SESSION_MEMORY 4096	/* spill early and often */
#define FUZZ_TOKEN "fuzz-token"
#define FUZZ_SCOPED_TOKEN "fuzz-scoped-token"
#define FUZZ_NAMESPACE "k"
#define FUZZ_DECODE_TOTAL (32 * 1024)
#define FUZZ_DECODE_BUDGET (64 * 1024)	/* small enough for inputs to exceed */

static TsProtoShared fuzz_shared;	/* as a server's; no server around it */
static bool fuzz_initialized;
static char fuzz_dir[4096];
static bool fuzz_store_dirty;	/* the last input changed what is stored */
static uint8_t fuzz_nonce[TC_NONCE_SIZE];	/* from the last SERVER_HELLO */
static uint8_t fuzz_server_proof[TC_AUTH_SIZE]; /* what READY must carry */
static bool fuzz_expect_proof;	/* the harness's HELLO carried a proof */
static bool fuzz_trace;			/* FUZZ_FRAMES_LOG set: say what happens */

/* Which message each frame type a server may send carries. */
/* A frame type added to the protocol: teach fuzz_reply_descriptor its reply. */
_Static_assert(TC_FRAME_TYPE_LAST == TCOPY__FRAME_TYPE__FRAME_SPLIT_OK,
			   "fuzz_reply_descriptor knows the frame types up to SPLIT_OK");

static const ProtobufCMessageDescriptor *
fuzz_reply_descriptor(Tcopy__FrameType type)
{
	switch (type)
	{
		case TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO:
			return &tcopy__server_hello__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_READY:
			return &tcopy__ready__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_TABLE_INFO:
			return &tcopy__table_info__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_BEGIN_OK:
			return &tcopy__begin_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_ACK:
			return &tcopy__ack__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_COMMIT_OK:
			return &tcopy__commit_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_ABORT_OK:
			return &tcopy__abort_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_SCAN_BATCH:
			return &tcopy__scan_batch__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK:
			return &tcopy__table_op_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_STATS:
			return &tcopy__stats__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_PREPARE_OK:
			return &tcopy__prepare_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_RESOLVE_OK:
			return &tcopy__resolve_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_PREPARED_LIST:
			return &tcopy__prepared_list__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_LABEL_LIST:
			return &tcopy__label_list__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_MODIFY_OK:
			return &tcopy__modify_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_ROLLBACK_TO_OK:
			return &tcopy__rollback_to_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_SNAPSHOT_OK:
			return &tcopy__snapshot_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_STREAMS_OK:
			return &tcopy__streams_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_JOIN_OK:
			return &tcopy__join_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_BACKUP_OK:
			return &tcopy__backup_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_SPLIT_OK:
			return &tcopy__split_ok__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_GROUP_STATUS:
			return &tcopy__group_status__descriptor;
		case TCOPY__FRAME_TYPE__FRAME_TABLE_LIST:
			return &tcopy__table_list__descriptor;
		default:
			return NULL;
	}
}

static void fuzz_fail(const char *what) __attribute__((noreturn));

static void
fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_frames: %s\n", what);
	abort();
}

/*
 * The tserver's getrandom (keys of sessions and snapshots), linked with
 * -Wl,--wrap=getrandom: sixteen 0x5a bytes, which an input can name.
 */
ssize_t		__wrap_getrandom(void *buf, size_t len, unsigned int flags);

ssize_t
__wrap_getrandom(void *buf, size_t len, unsigned int flags)
{
	(void) flags;
	memset(buf, 0x5a, len);
	return (ssize_t) len;
}

/*
 * TsProtoSendFn: every reply must be whole frames of a type a server sends,
 * each decoding as its message.  Notes the nonce, and whether the store
 * changed.
 */
static int
fuzz_send(void *arg, const uint8_t *bytes, size_t len, TsError *err)
{
	size_t		pos = 0;

	(void) arg;
	(void) err;
	while (pos < len)
	{
		const ProtobufCMessageDescriptor *descriptor;
		ProtobufCMessage *msg;
		Tcopy__FrameType type;
		uint32_t	payload_len;
		const char *why;

		if (len - pos < TC_FRAME_HEADER_SIZE ||
			!tc_frame_get_header(bytes + pos, TC_FRAME_MAX_DEFAULT, &type, &payload_len, &why) ||
			len - pos - TC_FRAME_HEADER_SIZE < payload_len)
			fuzz_fail("the server sent a broken frame");
		descriptor = fuzz_reply_descriptor(type);
		if (descriptor == NULL)
			fuzz_fail("the server sent a frame type only a client sends");
		msg = protobuf_c_message_unpack(descriptor, NULL, payload_len,
										bytes + pos + TC_FRAME_HEADER_SIZE);
		if (msg == NULL)
			fuzz_fail("the server sent a reply that does not decode");

		if (type == TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO)
		{
			Tcopy__ServerHello *hello = (Tcopy__ServerHello *) msg;

			if (hello->nonce.len != TC_NONCE_SIZE)
				fuzz_fail("SERVER_HELLO without a 32-byte nonce");
			memcpy(fuzz_nonce, hello->nonce.data, TC_NONCE_SIZE);
			if (!hello->auth_offered)
				fuzz_fail("SERVER_HELLO of a server with tokens does not offer its proof");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_READY)
		{
			Tcopy__Ready *ready = (Tcopy__Ready *) msg;

			/* mutual authentication: the server proves the same token */
			if (fuzz_expect_proof &&
				!tc_auth_matches(ready->auth.data, ready->auth.len, fuzz_server_proof))
				fuzz_fail("READY without the server's proof of the client's token");
			if (!fuzz_expect_proof && ready->auth.len != 0)
				fuzz_fail("READY with a proof to a HELLO without one");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_TABLE_INFO)
		{
			Tcopy__TableInfo *info = (Tcopy__TableInfo *) msg;

			/*
			 * The base tables have no forms: a stored schema with one was
			 * created or replaced (ts_store_open_table) by this input.
			 */
			fuzz_store_dirty |= info->created;
			for (size_t i = 0; info->schema != NULL && i < info->schema->n_columns; i++)
				fuzz_store_dirty |= info->schema->columns[i]->form[0] != '\0';
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_SNAPSHOT_OK)
		{
			Tcopy__SnapshotOk *ok = (Tcopy__SnapshotOk *) msg;

			if (ok->snapshot_id == 0 || ok->snapshot_key.len != TS_SNAPSHOT_KEY_SIZE)
				fuzz_fail("SNAPSHOT_OK without an id and a 16-byte key");
			fuzz_store_dirty = true;	/* the next input's first is id 1 again */
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_COMMIT_OK ||
				 type == TCOPY__FRAME_TYPE__FRAME_TABLE_OP_OK ||
				 type == TCOPY__FRAME_TYPE__FRAME_PREPARE_OK)
			fuzz_store_dirty = true;
		else if (type == TCOPY__FRAME_TYPE__FRAME_RESOLVE_OK)
		{
			Tcopy__ResolveOk *ok = (Tcopy__ResolveOk *) msg;

			if (ok->outcome < TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE ||
				ok->outcome > TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY)
				fuzz_fail("RESOLVE_OK without an outcome");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_PREPARED_LIST)
		{
			Tcopy__PreparedList *list = (Tcopy__PreparedList *) msg;

			for (size_t i = 0; i < list->n_sessions; i++)
				if (list->sessions[i]->gid[0] == '\0')
					fuzz_fail("PREPARED_LIST with an empty gid");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_TABLE_LIST)
		{
			Tcopy__TableList *list = (Tcopy__TableList *) msg;

			for (size_t i = 0; i < list->n_tables; i++)
				if (list->tables[i]->name[0] == '\0' || list->tables[i]->id == 0)
					fuzz_fail("TABLE_LIST with an empty name or id 0");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_SPLIT_OK)
		{
			Tcopy__SplitOk *ok = (Tcopy__SplitOk *) msg;

			/* boundaries strictly inside a table's range: never empty */
			for (size_t i = 0; i < ok->n_keys; i++)
				if (ok->keys[i].len == 0)
					fuzz_fail("SPLIT_OK with an empty key");
		}
		else if (type == TCOPY__FRAME_TYPE__FRAME_LABEL_LIST)
		{
			Tcopy__LabelList *list = (Tcopy__LabelList *) msg;

			for (size_t i = 0; i < list->n_labels; i++)
				if (list->labels[i]->label[0] == '\0')
					fuzz_fail("LABEL_LIST with an empty label");
		}
		if (fuzz_trace)
			fprintf(stderr, "fuzz_frames: <- %s (%u bytes)\n",
					tc_frame_type_name(type), (unsigned) payload_len);
		protobuf_c_message_free_unpacked(msg, NULL);
		pos += TC_FRAME_HEADER_SIZE + payload_len;
	}
	return 0;
}

static Tcopy__Column *
fuzz_column(Tcopy__Column *column, const char *name, Tcopy__Kind kind,
			const char *type_name)
{
	tcopy__column__init(column);
	column->name = (char *) name;
	column->kind = kind;
	column->type_name = (char *) type_name;
	return column;
}

/* Create a table through the store, as the seeds expect it. */
static void
fuzz_create_table(TsStore *store, const char *name, Tcopy__Column *columns,
				  size_t ncolumns, uint32_t *key, size_t nkey, uint32_t want_id)
{
	Tcopy__Column *pointers[8];
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	TsError		err;
	uint32_t	id = 0;
	bool		created = false;

	for (size_t i = 0; i < ncolumns; i++)
		pointers[i] = &columns[i];
	schema.columns = pointers;
	schema.n_columns = ncolumns;
	schema.key = key;
	schema.n_key = nkey;
	if (ts_store_open_table(store, name, &schema, true, &id, &created, NULL, &err) != 0 ||
		id != want_id)
	{
		fprintf(stderr, "fuzz_frames: could not create table %s: %s\n", name, err.message);
		exit(1);
	}
}

/*
 * The tables every input starts with:
 *   1 kv:  id int (key), b bool, f float, s bytes (text), n int
 *   2 log: i int, s bytes (bytea); no key, generated row ids
 *   3 txt: k bytes (text), i int, v float; key (k, i)
 */
static void
fuzz_create_tables(TsStore *store)
{
	Tcopy__Column kv[5];
	Tcopy__Column log[2];
	Tcopy__Column txt[3];
	uint32_t	kv_key[] = {0};
	uint32_t	txt_key[] = {0, 1};

	fuzz_column(&kv[0], "id", TCOPY__KIND__KIND_INT, "int4");
	fuzz_column(&kv[1], "b", TCOPY__KIND__KIND_BOOL, "bool");
	fuzz_column(&kv[2], "f", TCOPY__KIND__KIND_FLOAT, "float8");
	fuzz_column(&kv[3], "s", TCOPY__KIND__KIND_BYTES, "text");
	fuzz_column(&kv[4], "n", TCOPY__KIND__KIND_INT, "int8");
	fuzz_create_table(store, "kv", kv, 5, kv_key, 1, 1);

	fuzz_column(&log[0], "i", TCOPY__KIND__KIND_INT, "int4");
	fuzz_column(&log[1], "s", TCOPY__KIND__KIND_BYTES, "bytea");
	fuzz_create_table(store, "log", log, 2, NULL, 0, 2);

	fuzz_column(&txt[0], "k", TCOPY__KIND__KIND_BYTES, "text");
	fuzz_column(&txt[1], "i", TCOPY__KIND__KIND_INT, "int4");
	fuzz_column(&txt[2], "v", TCOPY__KIND__KIND_FLOAT, "float8");
	fuzz_create_table(store, "txt", txt, 3, txt_key, 2, 3);
}

/* nftw callback: remove one entry, the directories after their contents. */
static int
fuzz_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

/* rm -rf dir; 0 when it is gone (or never was). */
static int
fuzz_remove_tree(const char *dir)
{
	if (access(dir, F_OK) != 0)
		return 0;
	return nftw(dir, fuzz_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh store in fuzz_dir, with the base tables, for the protocol. */
static void
fuzz_open_store(void)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;

	if (fuzz_remove_tree(fuzz_dir) != 0)
	{
		perror("fuzz_frames: could not empty the store directory");
		exit(1);
	}
	ts_store_default_options(&options);
	options.session_memory_bytes = FUZZ_SESSION_MEMORY;
	options.sst_target_bytes = 64 * 1024;
	options.block_cache_bytes = 1024 * 1024;
	options.sync_commits = false;
	store = ts_store_open(fuzz_dir, &options, &err);
	if (store == NULL)
	{
		fprintf(stderr, "fuzz_frames: could not open a store in %s: %s\n", fuzz_dir, err.message);
		exit(1);
	}
	fuzz_create_tables(store);
	fuzz_shared.store = store;
	fuzz_store_dirty = false;
}

static void
fuzz_cleanup(void)
{
	if (!fuzz_initialized)
		return;
	ts_store_close(fuzz_shared.store);
	fuzz_initialized = false;
	fuzz_remove_tree(fuzz_dir);
}

/*
 * LeakSanitizer's built-in suppressions: leaks are looked for after each
 * input, while RocksDB's own threads (started as stores open, and living
 * on) hold memory in thread_local caches, in glibc's records of their
 * destructors and in the middle of periodic statistics dumps.  RocksDB is
 * C++ and tcopy is C, so what comes from operator new is RocksDB's and is
 * left out; every allocation of tcopy's own is still checked.  (RocksDB
 * objects tcopy would fail to destroy are the ASan tserver tests' to find:
 * their leak check runs once, after the store is closed.)
 */
const char *__lsan_default_suppressions(void);

const char *
__lsan_default_suppressions(void)
{
	return "leak:__cxa_thread_atexit_impl\n"
		"leak:librocksdb.so\n"
		"leak:libstdc++.so\n";
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char		err[256];
	TsCredentials creds = {0};
	const char *tmp = getenv("TMPDIR");

	(void) argc;
	(void) argv;
	fuzz_trace = getenv("FUZZ_FRAMES_LOG") != NULL;
	ts_log_min_level = fuzz_trace ? TS_LOG_DEBUG : TS_LOG_ERROR;

	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/fuzz_frames.XXXXXX",
			 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(fuzz_dir) == NULL)
	{
		perror("fuzz_frames: mkdtemp");
		exit(1);
	}
	ts_proto_shared_init(&fuzz_shared, FUZZ_MAX_FRAME);
	if (ts_auth_add(&creds, NULL, (const uint8_t *) FUZZ_TOKEN,
					strlen(FUZZ_TOKEN), err, sizeof(err)) != 0 ||
		ts_auth_add(&creds, FUZZ_NAMESPACE,
					(const uint8_t *) FUZZ_SCOPED_TOKEN, strlen(FUZZ_SCOPED_TOKEN),
					err, sizeof(err)) != 0)
		fuzz_fail(err);
	if (ts_proto_set_credentials(&fuzz_shared, &creds) != 0)
		fuzz_fail("out of memory");
	/* one connection at a time: a frame over the total never waits */
	fuzz_shared.decode_wait_ms = 0;
	/*
	 * BACKUP writes where its input says: allowed only under a directory
	 * that does not exist, so that every backup is refused once its path
	 * passed the checks (backups are test/tserver/020_backup.pl's).
	 */
	fuzz_shared.backup_root = FUZZ_BACKUP_ROOT;
	fuzz_open_store();
	fuzz_initialized = true;
	atexit(fuzz_cleanup);
	return 0;
}

/*
 * The harness's own HELLO: with a proof of the full-access or the scoped
 * token when the flags ask for one, and then the server's proof expected.
 */
static int
fuzz_hello(TsProto *proto, uint8_t flags, TsError *err)
{
	Tcopy__Hello hello = TCOPY__HELLO__INIT;
	const char *token = (flags & FUZZ_FLAG_SCOPED) ? FUZZ_SCOPED_TOKEN : FUZZ_TOKEN;
	uint8_t		client_nonce[TC_NONCE_SIZE];
	uint8_t		auth[TC_AUTH_SIZE];
	uint8_t		packed[256];
	size_t		len;

	hello.version = TC_PROTOCOL_VERSION;
	hello.client = (char *) "fuzz_frames";
	fuzz_expect_proof = (flags & (FUZZ_FLAG_TOKEN | FUZZ_FLAG_SCOPED)) != 0;
	if (fuzz_expect_proof)
	{
		memset(client_nonce, 0x5a, sizeof(client_nonce));
		if (!tc_auth_prove(token, strlen(token), TC_AUTH_CLIENT, fuzz_nonce, client_nonce, NULL,
						   auth) ||
			!tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, fuzz_nonce, client_nonce, NULL,
						   fuzz_server_proof))
			fuzz_fail("HMAC failed");
		hello.auth.data = auth;
		hello.auth.len = sizeof(auth);
		hello.nonce.data = client_nonce;
		hello.nonce.len = sizeof(client_nonce);
	}
	len = tcopy__hello__pack(&hello, packed);
	return ts_proto_handle_frame(proto, TCOPY__FRAME_TYPE__FRAME_HELLO, packed,
								 (uint32_t) len, err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TsProto		proto;
	TsError		err;
	uint8_t		flags;
	size_t		pos = 1;
	static uint64_t connection_id;

	if (size < 1)
		return 0;
	flags = data[0];
	fuzz_shared.decode_total_bytes = (flags & FUZZ_FLAG_DECODE_TOTAL) ? FUZZ_DECODE_TOTAL : 0;

	memset(&err, 0, sizeof(err));
	fuzz_expect_proof = false;
	ts_proto_init(&proto, &fuzz_shared, ++connection_id, fuzz_send, NULL);
	ts_proto_set_decode_budget(&proto, FUZZ_DECODE_BUDGET);
	if (ts_proto_greet(&proto, !(flags & FUZZ_FLAG_TOKEN), &err) != 0)
		fuzz_fail("greeting failed");
	if (!(flags & FUZZ_FLAG_OWN_HELLO) && fuzz_hello(&proto, flags, &err) != 0)
		fuzz_fail(err.message);

	while (pos + 3 <= size)
	{
		uint8_t		header[TC_FRAME_HEADER_SIZE];
		Tcopy__FrameType type;
		uint32_t	len = ((uint32_t) data[pos + 1] << 8) | data[pos + 2];
		uint32_t	checked_len;
		uint8_t    *payload;
		int			rc;

		if (len > size - pos - 3)
			len = (uint32_t) (size - pos - 3);
		tc_frame_put_header(header, (Tcopy__FrameType) data[pos], len);
		header[4] = data[pos];	/* any byte, as a client could send */
		if (fuzz_trace)
			fprintf(stderr, "fuzz_frames: -> type %u, %u bytes\n",
					(unsigned) data[pos], (unsigned) len);
		if (ts_proto_check_header(&proto, header, &type, &checked_len, &err) != 0)
			break;
		if (checked_len != len)
			fuzz_fail("the header check changed the length");

		/* exactly len bytes: a read beyond the payload is an ASan report */
		payload = malloc(len > 0 ? len : 1);
		if (payload == NULL)
			fuzz_fail("out of memory");
		memcpy(payload, data + pos + 3, len);
		rc = ts_proto_handle_frame(&proto, type, payload, len, &err);
		free(payload);
		if (atomic_load(&fuzz_shared.decode_in_use) != 0)
			fuzz_fail("a frame kept some of the total decode budget");
		if (rc != 0 && err.code == TCOPY__ERROR_CODE__ERROR_PERMISSION &&
			!(flags & FUZZ_FLAG_SCOPED))
			fuzz_fail("a full-access connection was denied permission");
		if (rc != 0)
			break;
		pos += 3 + (size_t) len;
	}

	if (fuzz_trace && err.message[0] != '\0')
		fprintf(stderr, "fuzz_frames: connection ends: %s\n", err.message);
	ts_proto_release(&proto);
	if (ts_snapshots_held(fuzz_shared.store) != 0)
		fuzz_fail("a snapshot is still held after its connection ended");
	if (fuzz_store_dirty)
	{
		ts_store_close(fuzz_shared.store);
		fuzz_open_store();
	}
	return 0;
}
