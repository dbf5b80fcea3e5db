/*
 * tc_client.c
 *		Client side of the tserver's wire protocol: connecting, the
 *		handshake, and the connection's settings.  The requests are in
 *		tc_client_requests.c, the frame I/O under both in tc_client_io.c.
 *
 * One connection, used by one thread at a time; see tc_client.h.
 */
#include "tc_client_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tc_address.h"
#include "tc_auth.h"
#include "tc_frame.h"
#include "tc_net.h"

_Static_assert(TC_BATCH_KB_MAX * 1024 == TC_FRAME_MAX_DEFAULT / 2,
			   "a batch may pass its size by one row and must still fit a frame");

/*
 * TcNetWaitFn of a connect: the client's wait hook, on the socket being
 * connected (client->fd) or, fd -1, for a pause before a retry.
 */
static int
client_net_wait(void *arg, int fd, bool want_write)
{
	return client_wait_on((TcClient *) arg, fd, want_write);
}

/*
 * Start TLS on the connected TCP socket as options say (nothing under
 * sslmode disable), before the first frame: every wait of the handshake
 * goes through the wait hook, and the TcTls is the client's from the
 * start, so that close frees it should the hook not return.
 */
static int
client_start_tls(TcClient *client, const TcTlsOptions *options, const char *host)
{
	char		err[sizeof(client->error)];

	if (options->sslmode == TC_SSLMODE_DISABLE)
		return 0;
	client->tls = tc_tls_client_new(client->fd, options, host, err, sizeof(err));
	if (client->tls == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
	for (;;)
	{
		int			rc = tc_tls_handshake(client->tls, err, sizeof(err));

		if (rc == TC_NET_OK)
			return 0;
		if (rc == TC_NET_ERR)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s (sslmode %s)",
							   err, tc_tls_sslmode_name(options->sslmode));
		if (client_wait(client, tc_tls_wants_write(client->tls)) < 0)
			return -1;
	}
}

/*
 * Connect the socket to addr, non-blocking, every wait through the wait
 * hook (a unix socket whose backlog is full too: see tc_net_unix_connect);
 * the socket is client->fd from the start, and a TCP connect holds the
 * resolved addresses in the client, so that close frees both should the
 * hook not return; then, over TCP, TLS starts as tls says.
 */
static int
client_open_socket(TcClient *client, const TcAddress *addr, const char *address,
				   const TcTlsOptions *tls)
{
	char		err[sizeof(client->error)];
	int			rc;

	if (addr->kind == TC_ADDRESS_UNIX)
	{
		rc = tc_net_unix_connect(addr->path, &client->fd, client_net_wait, client,
								 address, err, sizeof(err));
		if (rc == TC_NET_ABANDONED)
			return -1;			/* client_wait_on said why */
		if (rc != TC_NET_OK)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
		return 0;
	}

	if (tc_net_resolve(addr->host, addr->port, false, address, &client->addrs,
					   err, sizeof(err)) != TC_NET_OK)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
	rc = tc_net_tcp_connect(client->addrs, &client->fd, client_net_wait, client,
							address, err, sizeof(err));
	if (rc == TC_NET_ABANDONED)
		return -1;				/* client_wait said why; close frees addrs */
	freeaddrinfo(client->addrs);
	client->addrs = NULL;
	if (rc != TC_NET_OK)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "%s", err);
	return client_start_tls(client, tls, addr->host);
}

/*
 * Check the server's proof in READY against the one expected of a server
 * that knows the token; nothing may be sent before it passes.
 */
static int
client_check_server_proof(TcClient *client, const Tcopy__Ready *ready,
						  const uint8_t expected[TC_AUTH_SIZE])
{
	if (!tc_auth_matches(ready->auth.data, ready->auth.len, expected))
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_AUTH,
						   "tserver did not prove it knows the token: %s",
						   ready->auth.len == 0 ? "its READY carries no proof" :
						   "its proof is wrong (a server that is not the one configured, or another token)");
	return 0;
}

/*
 * Read the ServerHello, answer Hello and wait for Ready.  With a token:
 * prove it (tc_auth_prove over both nonces) and require the server's proof
 * in Ready before returning, so that nothing is sent to a server that does
 * not know the token.  Without one: refuse a server that requires it.
 */
static int
client_handshake(TcClient *client, const char *token, const char *client_name)
{
	ProtobufCAllocator *arena = tc_arena_allocator(&client->arena);
	ProtobufCMessage *msg;
	Tcopy__ServerHello *server_hello;
	Tcopy__Hello hello = TCOPY__HELLO__INIT;
	uint8_t		client_nonce[TC_NONCE_SIZE];
	uint8_t		proof[TC_AUTH_SIZE];
	uint8_t		server_proof[TC_AUTH_SIZE];
	uint8_t		binding[TC_BINDING_SIZE];
	int			rc;

	if (client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_SERVER_HELLO,
						  arena, &msg) < 0)
		return -1;
	server_hello = (Tcopy__ServerHello *) msg;
	if (server_hello->version != TC_PROTOCOL_VERSION)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "tserver speaks protocol version %u, this client version %d: "
						   "use a tserver and a client of the same release",
						   server_hello->version, TC_PROTOCOL_VERSION);
	/* a proof over anything but a fresh 32-byte nonce proves nothing */
	if (server_hello->nonce.len != TC_NONCE_SIZE)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						   "tserver sent a nonce of %zu bytes instead of %d",
						   server_hello->nonce.len, TC_NONCE_SIZE);
	client->server_name = strdup(server_hello->server);
	if (client->server_name == NULL)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE, "out of memory");
	if (token != NULL)
	{
		if (!server_hello->auth_offered)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_AUTH,
							   "tserver did not prove it knows the token: it holds no tokens "
							   "(a client with a token talks only to a tserver started with "
							   "--token-file or --scoped-tokens)");
		if (tc_auth_make_nonce(client_nonce) != 0)
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "could not generate a nonce: %s", strerror(errno));
		/* over TLS, bound to the certificate this client was shown */
		if (client->tls != NULL && !tc_tls_server_end_point(client->tls, binding))
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_AUTH,
							   "the tserver presented no certificate to bind the proof to");
		if (!tc_auth_prove(token, strlen(token), TC_AUTH_CLIENT, server_hello->nonce.data,
						   client_nonce, client->tls != NULL ? binding : NULL, proof) ||
			!tc_auth_prove(token, strlen(token), TC_AUTH_SERVER, server_hello->nonce.data,
						   client_nonce, client->tls != NULL ? binding : NULL, server_proof))
			return client_fail(client, TCOPY__ERROR_CODE__ERROR_NONE,
							   "could not compute the authentication proofs");
		hello.auth.data = proof;
		hello.auth.len = sizeof(proof);
		hello.nonce.data = client_nonce;
		hello.nonce.len = sizeof(client_nonce);
	}
	else if (server_hello->auth_required)
		return client_fail(client, TCOPY__ERROR_CODE__ERROR_AUTH,
						   "server requires a token");
	hello.version = TC_PROTOCOL_VERSION;
	hello.client = (char *) (client_name != NULL ? client_name : "tcopy");
	rc = client_send_message(client, TCOPY__FRAME_TYPE__FRAME_HELLO, &hello.base);
	if (rc == 0 &&
		client_read_reply(client, false, TCOPY__FRAME_TYPE__FRAME_READY, arena, &msg) < 0)
		rc = -1;
	if (rc == 0 && token != NULL)
		rc = client_check_server_proof(client, (Tcopy__Ready *) msg, server_proof);
	tc_auth_forget(proof, sizeof(proof));
	tc_auth_forget(server_proof, sizeof(server_proof));
	client->ready = rc == 0;
	return rc < 0 ? -1 : 0;
}

/* Connect to one tserver, at addr (address: its text, for messages). */
static int
client_connect_one(const TcAddress *addr, const char *address, const char *token,
				   const TcTlsOptions *tls,
				   const char *client_name, TcWaitHook hook, void *arg,
				   TcClient **clientp, Tcopy__ErrorCode *codep,
				   char *err, size_t errlen)
{
	static const TcTlsOptions default_tls = {.sslmode = TC_SSLMODE_DEFAULT};
	TcClient   *client;

	*clientp = NULL;
	if (codep != NULL)
		*codep = TCOPY__ERROR_CODE__ERROR_NONE;
	client = calloc(1, sizeof(TcClient));
	if (client == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	client->fd = -1;
	client->wait_hook = hook != NULL ? hook : client_poll;
	client->wait_arg = hook != NULL ? arg : NULL;
	client->window = TC_CLIENT_WINDOW_DEFAULT;
	client->max_frame = TC_FRAME_MAX_DEFAULT;
	tc_frame_reader_init(&client->reader);
	tc_arena_init(&client->arena, TC_CLIENT_ARENA_BLOCK);
	/* from here on the caller can close it, should the hook not return */
	*clientp = client;

	if (client_open_socket(client, addr, address,
						   tls != NULL ? tls : &default_tls) < 0 ||
		client_handshake(client, token, client_name) < 0)
	{
		snprintf(err, errlen, "%s", client->error);
		if (codep != NULL)
			*codep = client->error_code;
		*clientp = NULL;
		tc_client_close(client);
		return -1;
	}
	return 0;
}

/* The wait hook of a connect to one of a group's members. */
typedef struct GroupWait
{
	TcWaitHook	hook;			/* the caller's, or client_poll */
	void	   *arg;
	struct timespec deadline;	/* CLOCK_MONOTONIC: the member gives up */
	const char *member;
} GroupWait;

/*
 * TcWaitHook of a connect to a group's member: the caller's hook, but a
 * member that does not answer within TC_CLIENT_GROUP_MEMBER_MS (a host
 * gone, a process stopped) is given up, so that the next is tried.  The
 * socket is polled without waiting, between pauses of the caller's hook
 * (which cancels and deadlines still go through).
 */
static int
client_group_wait(void *arg, TcClient *client, int fd, bool want_write)
{
	GroupWait  *wait = arg;

	for (;;)
	{
		struct pollfd pfd = {.fd = fd, .events = want_write ? POLLOUT : POLLIN};
		struct timespec now;

		if (fd >= 0 && poll(&pfd, 1, 0) > 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > wait->deadline.tv_sec ||
			(now.tv_sec == wait->deadline.tv_sec && now.tv_nsec >= wait->deadline.tv_nsec))
		{
			tc_client_set_error(client, "replica group member \"%s\" did not answer within %d ms",
								wait->member, TC_CLIENT_GROUP_MEMBER_MS);
			return -1;
		}
		if (wait->hook(wait->arg, client, -1, false) != 0)
			return -1;
		if (fd < 0)
			return 0;
	}
}

/*
 * A pause of the wait hook's between two rounds over a group's members;
 * false when the hook gives up (a cancel, a deadline), with its reason
 * in err.
 */
static bool
client_group_pause(TcWaitHook hook, void *arg, char *err, size_t errlen)
{
	TcClient   *pauser = calloc(1, sizeof(TcClient));
	bool		go_on;

	if (pauser == NULL)
		return false;
	go_on = (hook != NULL ? hook : client_poll) (arg, pauser, -1, false) == 0;
	if (!go_on && pauser->hook_set_error)
		snprintf(err, errlen, "%s", pauser->error);
	free(pauser);
	return go_on;
}

int
tc_client_connect_hooked(const char *address, const char *token,
						 const TcTlsOptions *tls,
						 const char *client_name, TcWaitHook hook, void *arg,
						 TcClient **clientp, Tcopy__ErrorCode *codep,
						 char *err, size_t errlen)
{
	TcAddress	addrs[TC_ADDRESS_LIST_MAX];
	int			n;
	int			pauses = 0;

	*clientp = NULL;
	if (codep != NULL)
		*codep = TCOPY__ERROR_CODE__ERROR_NONE;
	if (tc_address_is_null(address))
	{
		snprintf(err, errlen, "address \"%s\" names no tserver", address);
		return -1;
	}
	if (!tc_address_list_parse(address, addrs, &n, err, errlen))
		return -1;
	if (n == 1)
		return client_connect_one(&addrs[0], address, token, tls, client_name, hook, arg,
								  clientp, codep, err, errlen);

	/*
	 * A replica group: the members in turn until one leads, round after
	 * round while an election may be under way.  A refusal that another
	 * member would repeat (authentication, protocol) ends it at once.
	 */
	for (;;)
	{
		Tcopy__ErrorCode code = TCOPY__ERROR_CODE__ERROR_NONE;
		char		last[512] = "";

		for (int i = 0; i < n; i++)
		{
			char		member[512];
			GroupWait	wait = {hook != NULL ? hook : client_poll, arg, {0, 0}, member};

			if (addrs[i].kind == TC_ADDRESS_UNIX)
				snprintf(member, sizeof(member), "unix:%s", addrs[i].path);
			else
				snprintf(member, sizeof(member), "tcp:%s:%s", addrs[i].host, addrs[i].port);
			clock_gettime(CLOCK_MONOTONIC, &wait.deadline);
			wait.deadline.tv_sec += TC_CLIENT_GROUP_MEMBER_MS / 1000;
			if (client_connect_one(&addrs[i], member, token, tls, client_name,
								   client_group_wait, &wait, clientp, &code,
								   last, sizeof(last)) == 0)
			{
				tc_client_set_wait_hook(*clientp, hook != NULL ? hook : client_poll,
										hook != NULL ? arg : NULL);
				return 0;
			}
			if (code != TCOPY__ERROR_CODE__ERROR_NONE &&
				code != TCOPY__ERROR_CODE__ERROR_NOT_LEADER &&
				code != TCOPY__ERROR_CODE__ERROR_SHUTTING_DOWN)
			{
				if (codep != NULL)
					*codep = code;
				snprintf(err, errlen, "%s", last);
				return -1;
			}
		}
		snprintf(err, errlen, "no member of the replica group \"%s\" leads it: %s",
				 address, last);
		if (codep != NULL)
			*codep = code;
		if (pauses >= TC_CLIENT_GROUP_WAIT_MS / TC_CLIENT_PAUSE_MS)
			return -1;
		/* a few pauses of the hook's between rounds */
		for (int p = 0; p < TC_CLIENT_GROUP_ROUND_MS / TC_CLIENT_PAUSE_MS; p++, pauses++)
		{
			if (!client_group_pause(hook, arg, err, errlen))
				return -1;
		}
	}
}

TcClient *
tc_client_connect(const char *address, const char *token,
				  const TcTlsOptions *tls, const char *client_name,
				  char *err, size_t errlen)
{
	TcClient   *client;

	if (tc_client_connect_hooked(address, token, tls, client_name, NULL, NULL,
								 &client, NULL, err, errlen) < 0)
		return NULL;
	return client;
}

/* tc_client_close's calls that closed a socket, in this process */
static uint64_t client_closes;

uint64_t
tc_client_closes(void)
{
	return client_closes;
}

bool
tc_client_ready(const TcClient *client)
{
	return client->ready;
}

/* Close the connection and free everything; client may be NULL. */
void
tc_client_close(TcClient *client)
{
	if (client == NULL)
		return;
	if (client->fd >= 0)
		client_closes++;
	tc_tls_free(client->tls);
	if (client->fd >= 0)
		close(client->fd);
	if (client->addrs != NULL)
		freeaddrinfo(client->addrs);
	while (client->tables != NULL)
	{
		TcClientTable *next = client->tables->next;

		free(client->tables);
		client->tables = next;
	}
	tc_frame_reader_free(&client->reader);
	tc_buf_free(&client->out);
	tc_arena_free(&client->arena);
	free(client->server_name);
	free(client);
}

/* Replace the wait hook; NULL restores the default poll(). */
void
tc_client_set_wait_hook(TcClient *client, TcWaitHook hook, void *arg)
{
	client->wait_hook = hook != NULL ? hook : client_poll;
	client->wait_arg = hook != NULL ? arg : NULL;
}

/* Set the window; 0 is taken as 1 (each write waits for the last ack). */
void
tc_client_set_window(TcClient *client, unsigned window)
{
	client->window = window > 0 ? window : 1;
}

/* Why the last call failed ("" when none has). */
const char *
tc_client_error(const TcClient *client)
{
	return client->error;
}

/* The server's code for the last failure, ERROR_NONE when it was local. */
Tcopy__ErrorCode
tc_client_error_code(const TcClient *client)
{
	return client->error_code;
}

uint32_t
tc_client_error_table_id(const TcClient *client)
{
	return client->error_table_id;
}

const Tcopy__Error *
tc_client_error_frame(const TcClient *client)
{
	return client->error_frame;
}

/* The TLS version and cipher of the connection, "" without TLS. */
void
tc_client_tls_describe(const TcClient *client, char *out, size_t outlen)
{
	if (client->tls == NULL)
	{
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	tc_tls_describe(client->tls, out, outlen);
}

/* The name the server gave in its ServerHello. */
const char *
tc_client_server_name(const TcClient *client)
{
	return client->server_name;
}

void
tc_client_set_max_frame(TcClient *client, uint32_t max_frame)
{
	client->max_frame = max_frame;
}
