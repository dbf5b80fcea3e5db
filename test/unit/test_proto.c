/*
 * test_proto.c
 *		Unit tests of the server's side of the handshake (ts_proto.c) and of
 *		the decode budget all connections share, on TsProtos without a
 *		socket (and an empty store, which HELLO does not touch):
 *		  - SERVER_HELLO's flags; READY carrying the server's proof of the
 *		    very token the client proved, and the connection getting that
 *		    token's scope; proofs refused when wrong, missing (unless the
 *		    peer is admitted), of another direction, or over a client nonce
 *		    of the wrong length;
 *		  - a frame that alone needs more than the shared budget fails at
 *		    once; one that finds it held by others waits and succeeds once
 *		    they give it back, or fails when they do not in time; nothing
 *		    stays charged after a frame.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tc_auth.h"
#include "tc_test.h"
#include "ts_proto.h"

/* What the server sent: the last frame's type and payload. */
typedef struct Sent
{
	Tcopy__FrameType type;
	uint8_t		payload[4096];
	size_t		len;
} Sent;

/* TsProtoSendFn: keep the (one) frame sent. */
static int
capture_send(void *arg, const uint8_t *bytes, size_t len, TsError *err)
{
	Sent	   *sent = arg;
	uint32_t	payload_len;
	const char *why;

	(void) err;
	if (len < TC_FRAME_HEADER_SIZE || len - TC_FRAME_HEADER_SIZE > sizeof(sent->payload) ||
		!tc_frame_get_header(bytes, TC_FRAME_MAX_DEFAULT, &sent->type, &payload_len, &why) ||
		payload_len != len - TC_FRAME_HEADER_SIZE)
	{
		fprintf(stderr, "capture_send: not one whole frame\n");
		abort();
	}
	memcpy(sent->payload, bytes + TC_FRAME_HEADER_SIZE, payload_len);
	sent->len = payload_len;
	return 0;
}

/* Greet on proto, returning the server's nonce into nonce. */
static Tcopy__ServerHello *
greet(TsProto *proto, Sent *sent, bool admitted)
{
	TsError		err;

	memset(&err, 0, sizeof(err));
	if (ts_proto_greet(proto, admitted, &err) != 0 ||
		sent->type != TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO)
		return NULL;
	return tcopy__server_hello__unpack(NULL, sent->len, sent->payload);
}

/* Send a HELLO with proof (NULL: none) and client nonce of nonce_len bytes. */
static int
hello(TsProto *proto, const uint8_t *proof, size_t proof_len, const uint8_t *client_nonce,
	  size_t nonce_len, TsError *err)
{
	Tcopy__Hello msg = TCOPY__HELLO__INIT;
	uint8_t		packed[256];
	size_t		len;

	msg.version = TC_PROTOCOL_VERSION;
	msg.client = (char *) "test_proto";
	if (proof != NULL)
	{
		msg.auth.data = (uint8_t *) proof;
		msg.auth.len = proof_len;
		msg.nonce.data = (uint8_t *) client_nonce;
		msg.nonce.len = nonce_len;
	}
	len = tcopy__hello__pack(&msg, packed);
	memset(err, 0, sizeof(*err));
	return ts_proto_handle_frame(proto, TCOPY__FRAME_TYPE__FRAME_HELLO, packed, (uint32_t) len, err);
}

static TsProtoShared shared;

static void
test_handshake(void)
{
	uint8_t		client_nonce[TC_NONCE_SIZE];
	uint8_t		proof[TC_AUTH_SIZE];
	uint8_t		expected[TC_AUTH_SIZE];
	Tcopy__ServerHello *server_hello;
	Tcopy__Ready *ready;
	TsProto		proto;
	TsError		err;
	Sent		sent;

	memset(client_nonce, 0x33, sizeof(client_nonce));

	/* the scoped token: READY proves it back, the connection takes its scope */
	ts_proto_init(&proto, &shared, 1, capture_send, &sent);
	server_hello = greet(&proto, &sent, false);
	REQUIRE(server_hello != NULL);
	CHECK(server_hello->auth_required);
	CHECK(server_hello->auth_offered);
	REQUIRE(server_hello->nonce.len == TC_NONCE_SIZE);
	REQUIRE(tc_auth_prove("scoped", 6, TC_AUTH_CLIENT, server_hello->nonce.data, client_nonce, NULL, proof));
	REQUIRE(tc_auth_prove("scoped", 6, TC_AUTH_SERVER, server_hello->nonce.data, client_nonce, NULL, expected));
	CHECK_EQ_INT(hello(&proto, proof, sizeof(proof), client_nonce, sizeof(client_nonce), &err), 0);
	CHECK_EQ_INT(sent.type, TCOPY__FRAME_TYPE__FRAME_READY);
	ready = tcopy__ready__unpack(NULL, sent.len, sent.payload);
	REQUIRE(ready != NULL);
	CHECK_MEM(ready->auth.data, ready->auth.len, expected, sizeof(expected));
	CHECK(ts_proto_authenticated(&proto));
	CHECK_EQ_STR(proto.scope, "ns.");
	tcopy__ready__free_unpacked(ready, NULL);
	ts_proto_release(&proto);

	/* the server's proof offered as the client's; a 31-byte client nonce */
	ts_proto_init(&proto, &shared, 2, capture_send, &sent);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	server_hello = greet(&proto, &sent, false);
	REQUIRE(server_hello != NULL);
	REQUIRE(tc_auth_prove("admin", 5, TC_AUTH_SERVER, server_hello->nonce.data, client_nonce, NULL, proof));
	CHECK_EQ_INT(hello(&proto, proof, sizeof(proof), client_nonce, sizeof(client_nonce), &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	ts_proto_release(&proto);
	ts_proto_init(&proto, &shared, 3, capture_send, &sent);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	server_hello = greet(&proto, &sent, false);
	REQUIRE(server_hello != NULL);
	REQUIRE(tc_auth_prove("admin", 5, TC_AUTH_CLIENT, server_hello->nonce.data, client_nonce, NULL, proof));
	CHECK_EQ_INT(hello(&proto, proof, sizeof(proof), client_nonce, TC_NONCE_SIZE - 1, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	CHECK(strstr(err.message, "nonce is 31 bytes") != NULL);
	ts_proto_release(&proto);

	/* the admin token: full access */
	ts_proto_init(&proto, &shared, 4, capture_send, &sent);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	server_hello = greet(&proto, &sent, false);
	REQUIRE(server_hello != NULL);
	REQUIRE(tc_auth_prove("admin", 5, TC_AUTH_CLIENT, server_hello->nonce.data, client_nonce, NULL, proof));
	CHECK_EQ_INT(hello(&proto, proof, sizeof(proof), client_nonce, sizeof(client_nonce), &err), 0);
	CHECK(proto.scope == NULL);
	ts_proto_release(&proto);

	/* no proof: refused, unless the peer was admitted (then no proof back) */
	ts_proto_init(&proto, &shared, 5, capture_send, &sent);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	server_hello = greet(&proto, &sent, false);
	REQUIRE(server_hello != NULL);
	CHECK_EQ_INT(hello(&proto, NULL, 0, NULL, 0, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	ts_proto_release(&proto);
	ts_proto_init(&proto, &shared, 6, capture_send, &sent);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	server_hello = greet(&proto, &sent, true);
	REQUIRE(server_hello != NULL);
	CHECK(!server_hello->auth_required);
	CHECK_EQ_INT(hello(&proto, NULL, 0, NULL, 0, &err), 0);
	ready = tcopy__ready__unpack(NULL, sent.len, sent.payload);
	REQUIRE(ready != NULL);
	CHECK_EQ_UINT(ready->auth.len, 0);
	CHECK(proto.scope == NULL);
	tcopy__ready__free_unpacked(ready, NULL);
	tcopy__server_hello__free_unpacked(server_hello, NULL);
	ts_proto_release(&proto);
}

/* Give back bytes of the shared budget after a pause (a thread's body). */
static void *
release_later(void *arg)
{
	struct timespec pause = {0, 200 * 1000000L};

	nanosleep(&pause, NULL);
	atomic_fetch_sub(&shared.decode_in_use, (size_t) (uintptr_t) arg);
	return NULL;
}

/* HELLO from an admitted peer, which unpacks into a few hundred bytes. */
static int
admitted_hello(uint64_t id, TsError *err)
{
	TsProto		proto;
	Sent		sent;
	int			rc;

	ts_proto_init(&proto, &shared, id, capture_send, &sent);
	memset(err, 0, sizeof(*err));
	rc = ts_proto_greet(&proto, true, err);
	if (rc == 0)
		rc = hello(&proto, NULL, 0, NULL, 0, err);
	ts_proto_release(&proto);
	return rc;
}

static void
test_shared_decode_budget(void)
{
	const size_t held = 3000;
	pthread_t	thread;
	struct timespec t0;
	struct timespec t1;
	long		waited_ms;
	TsError		err;

	/* too little for any HELLO, even with nothing else held: at once */
	shared.decode_total_bytes = 16;
	CHECK_EQ_INT(admitted_hello(10, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_TOO_LARGE);
	CHECK(strstr(err.message, "all connections share for decoding") != NULL);
	CHECK_EQ_UINT(atomic_load(&shared.decode_in_use), 0);

	/* enough alone; others hold nearly all of it and give it back later */
	shared.decode_total_bytes = held + 32;	/* less than a HELLO needs */
	shared.decode_wait_ms = 5000;
	atomic_store(&shared.decode_in_use, held);
	REQUIRE(pthread_create(&thread, NULL, release_later, (void *) (uintptr_t) held) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ_INT(admitted_hello(11, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(thread, NULL);
	waited_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(waited_ms >= 150);	/* it waited for the others */
	CHECK_EQ_UINT(atomic_load(&shared.decode_in_use), 0);

	/* they never give it back: the wait is bounded */
	shared.decode_wait_ms = 100;
	atomic_store(&shared.decode_in_use, held);
	CHECK_EQ_INT(admitted_hello(12, &err), -1);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_TOO_LARGE);
	CHECK(strstr(err.message, "the tserver is overloaded") != NULL);
	CHECK_EQ_UINT(atomic_load(&shared.decode_in_use), held);
	atomic_store(&shared.decode_in_use, 0);

	/* no total: as before */
	shared.decode_total_bytes = 0;
	CHECK_EQ_INT(admitted_hello(13, &err), 0);
}

int
main(void)
{
	char		data_dir[] = "/tmp/test_proto.XXXXXX";
	char		cmd[64];
	char		err[256];
	TsStoreOptions options;
	TsError		store_err;
	TsCredentials creds = {0};
	int			result;

	if (mkdtemp(data_dir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	ts_proto_shared_init(&shared, 64 * 1024);
	ts_store_default_options(&options);
	memset(&store_err, 0, sizeof(store_err));
	shared.store = ts_store_open(data_dir, &options, &store_err);
	if (shared.store == NULL)
	{
		fprintf(stderr, "%s\n", store_err.message);
		return 1;
	}
	if (ts_auth_add(&creds, NULL, (const uint8_t *) "admin", 5, err, sizeof(err)) != 0 ||
		ts_auth_add(&creds, "ns.", (const uint8_t *) "scoped", 6, err, sizeof(err)) != 0 ||
		ts_proto_set_credentials(&shared, &creds) != 0)
	{
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	TC_RUN(test_handshake);
	TC_RUN(test_shared_decode_budget);
	ts_store_close(shared.store);
	ts_proto_shared_free(&shared);
	result = tc_test_summary();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", data_dir);
	return result;
}
