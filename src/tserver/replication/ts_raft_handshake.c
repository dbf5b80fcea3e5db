/*
 * ts_raft_handshake.c
 *		The raft transport's handshake (ts_raft_transport_int.h): its
 *		messages, read and written on a TCP stream, and its proofs.
 *
 * Integers are 64-bit little-endian, as in libraft's own preamble, whose
 * first 8 bytes (its protocol, 1) are never our magic: a stock libraft
 * peer and ours refuse each other at once, neither waits.
 *
 *	connector C                                          acceptor A
 *	HELLO_C "tcRAFTc1" | id C | nonce C (32) | length | C's raft address,
 *			NUL-padded to a multiple of 8, at most 256 bytes  -->
 *							<--  HELLO_A "tcRAFTa1" | id A | nonce A (32)
 *	PROOF_C HMAC(K, T('C', id C, id A, nonce C, nonce A, C's address))  -->
 *							<--  PROOF_A HMAC(K, T('A', id A, id C, nonce A, nonce C, C's address))
 *
 *	T(role, sender, receiver, sender's nonce, receiver's nonce, address) =
 *		"tcopy-raft-v1" | role (1 byte) | sender | receiver | the nonces |
 *		the address's length | the address
 *
 * K is the group's secret.  A sends HELLO_A as soon as it accepts; C sends
 * its proof only if A's id is the one it was asked to reach; A sends its
 * proof only once C's is right, so that no one without the secret gets a
 * proof made with it.  The role byte keeps a proof from being reflected
 * to its maker, the fresh nonces keep it from being replayed, and C's raft
 * address is in both because libraft sends its replies to the address
 * accept_cb gives it: it must not be forged.
 *
 * Not a byte of libraft's is read here: every read asks for exactly the
 * bytes still missing from the current message (as libraft's own
 * uv_tcp_listen.c does), and the read callback that completes the last
 * one stops reading, so that what follows stays in the socket for
 * libraft.  An honest peer sends nothing more anyway: C lets libraft write
 * only after PROOF_A, and libraft never writes on an accepted stream.
 */
#include "ts_raft_transport_int.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_clock.h"

#define PROOF_LABEL "tcopy-raft-v1" /* its 13 bytes, without the NUL */
#define TLS_HANDSHAKE_RECORD 0x16	/* a ClientHello's first byte */

static const char magic_connector[TS_HS_MAGIC_SIZE] = {'t', 'c', 'R', 'A', 'F', 'T', 'c', '1'};
static const char magic_acceptor[TS_HS_MAGIC_SIZE] = {'t', 'c', 'R', 'A', 'F', 'T', 'a', '1'};

static void
put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* Whether address is printable ASCII without spaces, as a raft address is. */
static bool
address_printable(const char *address, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (address[i] < 0x21 || address[i] > 0x7e)
			return false;
	return len > 0;
}

/*
 * A proof: HMAC-SHA256, keyed by the group's secret, of the transcript T
 * above, made by role ('C' or 'A') with the nonces and C's address;
 * false if OpenSSL failed.
 */
static bool
proof_of(const TsRaftTransport *t, char role, uint64_t sender, uint64_t receiver,
		 const uint8_t *sender_nonce, const uint8_t *receiver_nonce, const char *address,
		 uint8_t proof[TC_AUTH_SIZE])
{
	size_t		address_len = strlen(address);
	uint8_t		transcript[sizeof(PROOF_LABEL) + 8 + 8 + 2 * TC_NONCE_SIZE + 8 +
						   TS_HS_ADDRESS_MAX];
	size_t		n = sizeof(PROOF_LABEL) - 1;

	assert(address_len < TS_HS_ADDRESS_MAX);
	memcpy(transcript, PROOF_LABEL, n);
	transcript[n++] = (uint8_t) role;
	put_u64(transcript + n, sender);
	put_u64(transcript + n + 8, receiver);
	n += 16;
	memcpy(transcript + n, sender_nonce, TC_NONCE_SIZE);
	memcpy(transcript + n + TC_NONCE_SIZE, receiver_nonce, TC_NONCE_SIZE);
	n += 2 * TC_NONCE_SIZE;
	put_u64(transcript + n, address_len);
	n += 8;
	memcpy(transcript + n, address, address_len);
	n += address_len;
	return tc_auth_compute(t->secret, t->secret_len, transcript, n, proof);
}

/* One of hs's two proofs, ours or the peer's, into proof. */
static bool
compute_proof(TsRaftHandshake *hs, bool ours, uint8_t proof[TC_AUTH_SIZE])
{
	TsRaftTransport *t = hs->transport;

	/* the maker's role: ours is hs's, the peer's the other */
	return proof_of(t, ours == hs->connector ? 'C' : 'A', ours ? t->id : hs->peer_id,
					ours ? hs->peer_id : t->id, ours ? hs->own_nonce : hs->peer_nonce,
					ours ? hs->peer_nonce : hs->own_nonce,
					hs->connector ? t->address : hs->peer_address, proof);
}

static void
write_done(uv_write_t *req, int status)
{
	TsRaftHandshake *hs = req->data;

	hs->writes_pending--;
	if (status < 0)
	{
		hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, uv_strerror(status));
		return;
	}
	hs->transport->handshake_proven(hs);
}

/* Write len bytes at base (in hs, until written) with write slot slot. */
static int
handshake_write(TsRaftHandshake *hs, int slot, uint8_t *base, size_t len)
{
	uv_buf_t	buf = uv_buf_init((char *) base, (unsigned) len);
	int			rc;

	hs->writes[slot].data = hs;
	rc = uv_write(&hs->writes[slot], (uv_stream_t *) hs->stream, &buf, 1, write_done);
	if (rc == 0)
		hs->writes_pending++;
	return rc;
}

/* Exactly the bytes still missing from the current message: never more. */
static void
read_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	TsRaftHandshake *hs = handle->data;

	assert(hs->need > hs->have && hs->need <= sizeof(hs->in));
	buf->base = (char *) hs->in + hs->have;
	buf->len = hs->need - hs->have;
}

/*
 * Whether the peer's proof, the last bytes read, is right (compared in
 * time that does not depend on where it differs); if not, the handshake
 * failed.
 */
static bool
peer_proof_right(TsRaftHandshake *hs)
{
	uint8_t		expected[TC_AUTH_SIZE];
	bool		computed = compute_proof(hs, false, expected);
	bool		right = computed &&
		tc_auth_matches(hs->in + hs->need - TC_AUTH_SIZE, TC_AUTH_SIZE, expected);

	tc_auth_forget(expected, sizeof(expected));
	if (!right)
		hs->transport->handshake_fail(hs, computed ? TS_HS_FAIL_BAD_PROOF : TS_HS_FAIL_OTHER,
							   computed ? "wrong proof (not this group's secret)" :
							   "could not compute the proof");
	return right;
}

/* Send our proof; false if the handshake failed. */
static bool
send_proof(TsRaftHandshake *hs)
{
	if (!compute_proof(hs, true, hs->proof) ||
		handshake_write(hs, 1, hs->proof, TC_AUTH_SIZE) != 0)
	{
		hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, "could not send the proof");
		return false;
	}
	return true;
}

/* A whole message is in: act on it, and say what to read next. */
static void
handshake_step(TsRaftHandshake *hs)
{
	switch (hs->phase)
	{
		case TS_HS_A_HELLO:
			{
				/* C's id, its nonce, and the length of its padded address */
				uint64_t	padded = get_u64(hs->in + TS_HS_MAGIC_SIZE + 8 + TC_NONCE_SIZE);

				hs->peer_id = get_u64(hs->in + TS_HS_MAGIC_SIZE);
				memcpy(hs->peer_nonce, hs->in + TS_HS_MAGIC_SIZE + 8, TC_NONCE_SIZE);
				if (hs->peer_id == 0 || padded < 8 || padded > TS_HS_ADDRESS_MAX ||
					padded % 8 != 0)
				{
					hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, "malformed hello");
					return;
				}
				hs->need += (size_t) padded;
				hs->phase = TS_HS_A_ADDRESS;
				return;
			}
		case TS_HS_A_ADDRESS:
			{
				const char *address = (const char *) hs->in + TS_HS_HELLO_C_FIXED;
				size_t		padded = hs->need - TS_HS_HELLO_C_FIXED;
				size_t		len = strnlen(address, padded);

				if (len == padded || !address_printable(address, len))
				{
					hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, "malformed address");
					return;
				}
				memcpy(hs->peer_address, address, len + 1);
				hs->need += TC_AUTH_SIZE;
				hs->phase = TS_HS_A_PROOF;
				return;
			}
		case TS_HS_A_PROOF:
			if (!peer_proof_right(hs))
				return;

			/*
			 * Stop reading now, inside the read callback: libuv's read loop
			 * checks after each callback, and reads nothing past PROOF_C.
			 */
			uv_read_stop((uv_stream_t *) hs->stream);
			if (send_proof(hs))
				hs->phase = TS_HS_PROVEN;	/* handed over once it is written */
			return;
		case TS_HS_C_HELLO:
			if (get_u64(hs->in + TS_HS_MAGIC_SIZE) != hs->peer_id)
			{
				hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, "the member there has another raft id");
				return;
			}
			memcpy(hs->peer_nonce, hs->in + TS_HS_MAGIC_SIZE + 8, TC_NONCE_SIZE);
			if (!send_proof(hs))
				return;
			hs->need += TC_AUTH_SIZE;
			hs->phase = TS_HS_C_PROOF;
			return;
		case TS_HS_C_PROOF:
			if (!peer_proof_right(hs))
				return;
			uv_read_stop((uv_stream_t *) hs->stream);
			hs->phase = TS_HS_PROVEN;
			/* PROOF_A can come before PROOF_C's write callback */
			hs->transport->handshake_proven(hs);
			return;
		default:
			assert(false);		/* no read is active in the other phases */
	}
}

static void
handshake_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	TsRaftHandshake *hs = stream->data;

	if (hs->phase == TS_HS_FAILED || hs->phase == TS_HS_HANDED_OVER || nread == 0)
		return;
	if (nread < 0)
	{
		hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER,
							   nread == UV_EOF ? "closed by the peer" : uv_strerror((int) nread));
		return;
	}
	hs->have += (size_t) nread;
	assert(hs->have <= hs->need);

	/*
	 * A peer of another protocol goes at its first 8 bytes: a stock
	 * libraft peer's preamble (40 bytes for a short address) is shorter
	 * than HELLO_C, and would otherwise wait for the deadline.
	 */
	if ((hs->phase == TS_HS_A_HELLO || hs->phase == TS_HS_C_HELLO) &&
		hs->have >= TS_HS_MAGIC_SIZE &&
		memcmp(hs->in, hs->connector ? magic_acceptor : magic_connector, TS_HS_MAGIC_SIZE) != 0)
	{
		hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, hs->in[0] == TLS_HANDSHAKE_RECORD ?
							   "it speaks TLS, and this member runs --raft-insecure-cleartext" :
							   "not a tcopy raft peer (wrong magic)");
		return;
	}
	if (hs->have == hs->need)
		handshake_step(hs);
}

/*
 * A hello into out: HELLO_C with address (a connector's), or HELLO_A;
 * its length.
 */
static size_t
hello_put(uint8_t *out, bool connector, uint64_t id, const uint8_t *nonce, const char *address)
{
	size_t		n = 0;

	memcpy(out, connector ? magic_connector : magic_acceptor, TS_HS_MAGIC_SIZE);
	n += TS_HS_MAGIC_SIZE;
	put_u64(out + n, id);
	n += 8;
	memcpy(out + n, nonce, TC_NONCE_SIZE);
	n += TC_NONCE_SIZE;
	if (connector)
	{
		size_t		len = strlen(address);
		size_t		padded = (len + 1 + 7) / 8 * 8;

		put_u64(out + n, padded);
		n += 8;
		memset(out + n, 0, padded);
		memcpy(out + n, address, len);
		n += padded;
	}
	return n;
}

/* See ts_raft_transport_int.h. */
int
ts_raft_parse_address(const char *address, struct sockaddr_in *sa)
{
	const char *colon = strrchr(address, ':');
	char		host[INET_ADDRSTRLEN];
	char	   *end;
	unsigned long port;

	if (colon == NULL || (size_t) (colon - address) >= sizeof(host) ||
		!isdigit((unsigned char) colon[1]))
		return -1;
	memcpy(host, address, (size_t) (colon - address));
	host[colon - address] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
		return -1;
	return uv_ip4_addr(host, (int) port, sa) == 0 ? 0 : -1;
}

void
ts_raft_handshake_start(TsRaftHandshake *hs)
{
	TsRaftTransport *t = hs->transport;
	size_t		n;

	/* four small messages: no Nagle delay (a TLS relay sets it itself) */
	if (hs->stream->type == UV_TCP)
		uv_tcp_nodelay((uv_tcp_t *) hs->stream, 1);
	n = hello_put(hs->hello, hs->connector, t->id, hs->own_nonce,
				  hs->connector ? t->address : NULL);
	if (hs->connector)
	{
		hs->need = TS_HS_HELLO_A_SIZE;
		hs->phase = TS_HS_C_HELLO;
	}
	else
	{
		hs->need = TS_HS_HELLO_C_FIXED;
		hs->phase = TS_HS_A_HELLO;
	}
	hs->have = 0;
	if (handshake_write(hs, 0, hs->hello, n) != 0 ||
		uv_read_start((uv_stream_t *) hs->stream, read_alloc, handshake_read) != 0)
		hs->transport->handshake_fail(hs, TS_HS_FAIL_OTHER, "could not start the handshake's I/O");
}

/* ---- a state fetch's connection: blocking, on any thread ---- */

/* Wait until fd is ready for events, or the deadline (ms, CLOCK_MONOTONIC). */
static bool
wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;)
	{
		struct pollfd pfd = {.fd = fd, .events = events};
		int64_t		left = deadline_ms - ts_monotonic_ms();
		int			rc;

		if (left <= 0)
			return false;
		rc = poll(&pfd, 1, (int) left);
		if (rc > 0)
			return true;
		if (rc < 0 && errno != EINTR)
			return false;
	}
}

int
ts_raft_fetch_connect(struct raft_uv_transport *transport, uint64_t peer_id,
					  const char *peer_address, unsigned timeout_ms, char *errmsg,
					  size_t errlen)
{
	const TsRaftTransport *t = transport->impl;
	int64_t		deadline = ts_monotonic_ms() + timeout_ms;
	char		address[TS_HS_ADDRESS_MAX];
	uint8_t		hello[TS_HS_HELLO_C_FIXED + TS_HS_ADDRESS_MAX];
	uint8_t		in[TS_HS_HELLO_A_SIZE];
	uint8_t		nonce[TC_NONCE_SIZE];
	uint8_t		proof[TC_AUTH_SIZE];
	uint8_t		expected[TC_AUTH_SIZE];
	struct sockaddr_in sa;
	const char *why = "could not connect";
	size_t		n;
	int			fd = -1;
	int			one = 1;

	if (strlen(TS_RAFT_FETCH_PREFIX) + strlen(t->address) >= sizeof(address))
	{
		snprintf(errmsg, errlen, "this member's raft address is too long to fetch with");
		return -1;
	}
	memcpy(address, TS_RAFT_FETCH_PREFIX, strlen(TS_RAFT_FETCH_PREFIX));
	strcpy(address + strlen(TS_RAFT_FETCH_PREFIX), t->address);
	if (ts_raft_parse_address(peer_address, &sa) != 0)
	{
		snprintf(errmsg, errlen, "\"%s\" is not IP:PORT", peer_address);
		return -1;
	}
	if (tc_auth_make_nonce(nonce) != 0 ||
		(fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		goto failed;
	(void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 && errno != EINPROGRESS)
		goto failed;
	if (!wait_fd(fd, POLLOUT, deadline))
		goto failed;
	{
		int			soerr = 0;
		socklen_t	sl = sizeof(soerr);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0)
			goto failed;
	}
	/* with TLS, the handshake goes through a relay (ts_raft_tls.c) */
	if (t->tls != NULL)
	{
		int			plain = ts_raft_tls_relay(t->tls, fd, true, timeout_ms, t->id,
											  peer_address, false);

		fd = plain;				/* the TCP socket is the relay's, even on failure */
		if (fd < 0)
		{
			why = "could not start TLS";
			goto failed;
		}
	}
	/* the handshake blocking, each step within the timeout */
	why = "the handshake failed";
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
		tc_net_set_send_timeout(fd, (int) (timeout_ms + 999) / 1000, NULL, 0) != TC_NET_OK ||
		tc_net_set_recv_timeout(fd, (int) (timeout_ms + 999) / 1000, NULL, 0) != TC_NET_OK)
		goto failed;
	errno = 0;
	n = hello_put(hello, true, t->id, nonce, address);
	if (!tc_net_write_all(fd, hello, n) || !tc_net_read_all(fd, in, sizeof(in)))
		goto failed;
	if (memcmp(in, magic_acceptor, TS_HS_MAGIC_SIZE) != 0 ||
		get_u64(in + TS_HS_MAGIC_SIZE) != peer_id)
	{
		why = "the member there is not the one asked for";
		goto failed;
	}
	if (!proof_of(t, 'C', t->id, peer_id, nonce, in + TS_HS_MAGIC_SIZE + 8, address, proof) ||
		!proof_of(t, 'A', peer_id, t->id, in + TS_HS_MAGIC_SIZE + 8, nonce, address, expected) ||
		!tc_net_write_all(fd, proof, sizeof(proof)) ||
		!tc_net_read_all(fd, proof, sizeof(proof)))
		goto failed;
	if (!tc_auth_matches(proof, sizeof(proof), expected))
	{
		why = "wrong proof (not this group's secret)";
		goto failed;
	}
	tc_auth_forget(expected, sizeof(expected));
	return fd;					/* the caller's, blocking */

failed:
	tc_auth_forget(expected, sizeof(expected));
	snprintf(errmsg, errlen, "member %llu at %s: %s%s%s", (unsigned long long) peer_id,
			 peer_address, why, errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
	if (fd >= 0)
		close(fd);
	return -1;
}
