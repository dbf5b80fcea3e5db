/*
 * test_raft.c
 *		A Raft group of three members (ts_raft.c over libraft) in one
 *		process, each on its own loop thread and directory, over TCP on
 *		127.0.0.1: a leader is elected, entries submitted to it are applied
 *		on every member in the same order, a follower refuses them, the
 *		leader stopped is replaced by a new one, and the old leader started
 *		again on its directory catches up (from a snapshot and the log).
 *		The state machine is a count and a hash of the entries applied.
 *
 *		The raft port (ts_raft_transport.c): strangers on the leader's port
 *		(garbage, libraft's own preamble, silent clients, more of them than
 *		the port takes at once) are closed, at once or at the deadline,
 *		and never reach libraft; a member started with another secret is
 *		kept out of the group; a secret file missing, open to others or
 *		too short stops a member from starting.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_raft.h"

#define MEMBERS 3
#define HANDSHAKE_MS 1000		/* the raft port's deadline, short for the test */
#define SECRET "0123456789abcdef0123456789abcdef0123456789abcdef\n"
#define OTHER_SECRET "another group's secret, 32 bytes or more\n"
#define FLOOD (TS_RAFT_HANDSHAKES_MAX + 8)	/* silent clients at once */

/* A member's state: what it applied, in order. */
typedef struct Machine
{
	pthread_mutex_t lock;
	uint64_t	count;
	uint64_t	hash;			/* FNV-1a over every entry applied, in order */
	uint64_t	index;			/* the last applied */
} Machine;

static char base_dir[256];
static char secret_file[300];	/* the group's, mode 0600 */
static char other_secret_file[300]; /* another group's, mode 0600 */
static char addresses[MEMBERS][TS_RAFT_ADDRESS_MAX];
static char bootstrap[MEMBERS * (TS_RAFT_ADDRESS_MAX + 24)];
static Machine machines[MEMBERS];
static TsRaft *members[MEMBERS];

static int
machine_apply(void *arg, uint64_t index, const void *data, size_t len)
{
	Machine    *m = arg;
	const unsigned char *p = data;

	pthread_mutex_lock(&m->lock);
	if (index > m->index)
	{
		for (size_t i = 0; i < len; i++)
			m->hash = (m->hash ^ p[i]) * 1099511628211ULL;
		m->count++;
		m->index = index;
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
machine_snapshot(void *arg, TsRaft *raft, uint64_t index, TcBuf *out)
{
	Machine    *m = arg;

	if (!tc_buf_reserve(out, 24))
		return -1;
	pthread_mutex_lock(&m->lock);
	memcpy(out->data, &m->count, 8);
	memcpy(out->data + 8, &m->hash, 8);
	memcpy(out->data + 16, &m->index, 8);
	pthread_mutex_unlock(&m->lock);
	out->len = 24;
	return 0;
}

static int
machine_restore(void *arg, TsRaft *raft, const void *data, size_t len)
{
	Machine    *m = arg;

	if (len != 24)
	{
		fprintf(stderr, "a snapshot of %zu bytes, not 24\n", len);
		return -1;
	}
	pthread_mutex_lock(&m->lock);
	memcpy(&m->count, data, 8);
	memcpy(&m->hash, (const char *) data + 8, 8);
	memcpy(&m->index, (const char *) data + 16, 8);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static void
machine_read(int k, uint64_t *count, uint64_t *hash)
{
	pthread_mutex_lock(&machines[k].lock);
	*count = machines[k].count;
	*hash = machines[k].hash;
	pthread_mutex_unlock(&machines[k].lock);
}

/* A TCP port on 127.0.0.1 nobody listens on now. */
static int
free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t	len = sizeof(sa);
	int			fd = socket(AF_INET, SOCK_STREAM, 0);
	int			port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 ||
		getsockname(fd, (struct sockaddr *) &sa, &len) != 0)
		return -1;
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* Write a secret file of the given text and mode; 0, or -1. */
static int
write_secret(const char *path, const char *text, mode_t mode)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t		len = strlen(text);
	bool		ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t) len && fchmod(fd, mode) == 0;
	return close(fd) == 0 && ok ? 0 : -1;
}

static TsRaft *
start_member(int k, bool first, const char *secret_file)
{
	TsRaftConfig config = {0};
	char		dir[300];
	TsError		err;
	TsRaft	   *raft;

	snprintf(dir, sizeof(dir), "%s/m%d", base_dir, k + 1);
	config.id = (uint64_t) k + 1;
	snprintf(config.address, sizeof(config.address), "%s", addresses[k]);
	config.dir = dir;
	config.secret_file = secret_file;
	config.cleartext = true;	/* TLS is the TAP tests' (032_raft_tls.pl) */
	config.handshake_ms = HANDSHAKE_MS;
	config.bootstrap = first ? bootstrap : NULL;
	config.election_ms = 300;
	config.heartbeat_ms = 50;
	config.snapshot_threshold = getenv("T_SNAP") ? atoi(getenv("T_SNAP")) : 64;
	config.machine.apply = machine_apply;
	config.machine.snapshot = machine_snapshot;
	config.machine.restore = machine_restore;
	config.machine.arg = &machines[k];
	raft = ts_raft_start(&config, &err);
	if (raft == NULL)
		fprintf(stderr, "member %d: %s\n", k + 1, err.message);
	return raft;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,.tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The member (index) all running members agree leads, within 10 s; -1. */
static int
wait_leader(void)
{
	for (int tries = 0; tries < 200; tries++)
	{
		for (int k = 0; k < MEMBERS; k++)
		{
			TsRaftStatus st;

			if (members[k] == NULL)
				continue;
			ts_raft_status(members[k], &st);
			if (st.role == TS_RAFT_LEADER)
				return k;
		}
		sleep_ms(50);
	}
	return -1;
}

/* Submit n entries "tag-i" through whichever member leads; the applied count. */
static int
submit_entries(const char *tag, int n)
{
	int			applied = 0;
	uint64_t	last_index = 0;

	for (int i = 0; i < n; i++)
	{
		char		entry[64];
		int			len = snprintf(entry, sizeof(entry), "%s-%d", tag, i);
		int			tries;

		for (tries = 0; tries < 100; tries++)
		{
			int			leader = wait_leader();
			uint64_t	index = 0;
			TsRaftOutcome outcome;

			if (leader < 0)
				break;
			outcome = ts_raft_submit(members[leader], entry, (size_t) len, &index);
			if (outcome == TS_RAFT_APPLIED)
			{
				if (index <= last_index)
					fprintf(stderr, "index %llu after %llu\n", (unsigned long long) index,
							(unsigned long long) last_index);
				CHECK(index > last_index);
				last_index = index;
				applied++;
				break;
			}
			/* not the leader any more: ask again */
			sleep_ms(20);
		}
	}
	return applied;
}

/* Whether every running member applied count entries, all with one hash, within 10 s. */
static bool
wait_converged(uint64_t count)
{
	for (int tries = 0; tries < 200; tries++)
	{
		uint64_t	c0 = 0,
					h0 = 0;
		bool		same = true;
		bool		first = true;

		for (int k = 0; k < MEMBERS; k++)
		{
			uint64_t	c,
						h;

			if (members[k] == NULL)
				continue;
			machine_read(k, &c, &h);
			if (first)
				c0 = c, h0 = h, first = false;
			else if (c != c0 || h != h0)
				same = false;
		}
		if (same && c0 == count)
			return true;
		sleep_ms(50);
	}
	return false;
}

/* Milliseconds on the monotonic clock. */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A TCP connection to the raft port at address, as a stranger makes one; -1. */
static int
raw_connect(const char *address)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int			fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t) atoi(strchr(address, ':') + 1));
	if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0)
	{
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Read what the member sends on fd until it closes the connection, for at
 * most limit_ms: the milliseconds that took, or -1 if fd is still open.
 * The first bytes read go into got (at most cap), their count into
 * *got_len.
 */
static int64_t
wait_closed(int fd, int64_t limit_ms, unsigned char *got, size_t cap, size_t *got_len)
{
	int64_t		start = now_ms();

	*got_len = 0;
	for (;;)
	{
		struct pollfd pfd = {.fd = fd,.events = POLLIN};
		int64_t		left = limit_ms - (now_ms() - start);
		unsigned char buf[256];
		ssize_t		n;

		if (left <= 0 || poll(&pfd, 1, (int) left) == 0)
			return -1;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)				/* closed: EOF, or a reset */
			return now_ms() - start;
		for (ssize_t i = 0; i < n && *got_len < cap; i++)
			got[(*got_len)++] = buf[i];
	}
}

/* A counter of member's raft port (at offset in its stats), once at least at_least or after 5 s. */
static uint64_t
wait_counter(TsRaft *member, size_t offset, uint64_t at_least)
{
	uint64_t	value = 0;

	for (int tries = 0; tries < 100; tries++)
	{
		TsRaftStatus st;

		ts_raft_status(member, &st);
		memcpy(&value, (const char *) &st.transport + offset, sizeof(value));
		if (value >= at_least)
			break;
		sleep_ms(50);
	}
	return value;
}

/*
 * Strangers on member k's raft port: each is closed, the first two at
 * their first bytes, the silent ones at the deadline or, past
 * TS_RAFT_HANDSHAKES_MAX of them, at once; none gets a proof, and none
 * reaches libraft.
 */
static void
check_strangers(int k)
{
	TsRaftStatus before;
	TsRaftStatus after;
	unsigned char got[128];
	size_t		got_len;
	unsigned char preamble[40] = {0};
	int			flood[FLOOD];
	int			connected = 0;
	int			closed = 0;
	int64_t		took;
	int			fd;

	ts_raft_status(members[k], &before);

	/* garbage: refused at its first 8 bytes, long before the deadline */
	REQUIRE((fd = raw_connect(addresses[k])) >= 0);
	CHECK(send(fd, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL) == 18);
	took = wait_closed(fd, 3 * HANDSHAKE_MS, got, sizeof(got), &got_len);
	CHECK(took >= 0 && took < HANDSHAKE_MS / 2);
	close(fd);

	/*
	 * libraft's own preamble (protocol 1, raft id 9, an address of 16
	 * bytes), as a stock libraft member sends it: refused at once.
	 */
	preamble[0] = 1;
	preamble[8] = 9;
	preamble[16] = 16;
	memcpy(preamble + 24, "127.0.0.1:9", 11);
	REQUIRE((fd = raw_connect(addresses[k])) >= 0);
	CHECK(send(fd, preamble, sizeof(preamble), MSG_NOSIGNAL) == (ssize_t) sizeof(preamble));
	took = wait_closed(fd, 3 * HANDSHAKE_MS, got, sizeof(got), &got_len);
	CHECK(took >= 0 && took < HANDSHAKE_MS / 2);
	close(fd);

	/*
	 * silent: the member's hello alone (its magic, its id, a nonce: 48
	 * bytes), never a proof, then closed at the deadline
	 */
	REQUIRE((fd = raw_connect(addresses[k])) >= 0);
	took = wait_closed(fd, 3 * HANDSHAKE_MS, got, sizeof(got), &got_len);
	if (took < HANDSHAKE_MS * 9 / 10 || took >= 3 * HANDSHAKE_MS)
		fprintf(stderr, "a silent client closed after %lld ms\n", (long long) took);
	CHECK(took >= HANDSHAKE_MS * 9 / 10 && took < 3 * HANDSHAKE_MS);
	CHECK_EQ_UINT(got_len, 48);
	CHECK(got_len >= 16 && memcmp(got, "tcRAFTa1", 8) == 0 && got[8] == k + 1);
	close(fd);

	/*
	 * More silent ones than the port takes at once, all closed in time.
	 * They connect 8 at a time, each 8 accepted before the next: a burst
	 * would overflow the kernel's listen backlog, whose dropped connects
	 * come back a second later, when the first have timed out.
	 */
	for (int i = 0; i < FLOOD; i++)
	{
		flood[i] = raw_connect(addresses[k]);
		connected += flood[i] >= 0;
		for (int tries = 0; tries < 1000 && i % 8 == 7 && i < TS_RAFT_HANDSHAKES_MAX; tries++)
		{
			ts_raft_status(members[k], &after);
			if (after.transport.pending >= (uint32_t) i + 1)
				break;
			sleep_ms(1);
		}
	}
	for (int i = 0; i < FLOOD; i++)
	{
		if (flood[i] < 0)
			continue;
		closed += wait_closed(flood[i], 3 * HANDSHAKE_MS, got, sizeof(got), &got_len) >= 0;
		close(flood[i]);
	}
	CHECK_EQ_INT(connected, FLOOD);
	CHECK_EQ_INT(closed, FLOOD);
	CHECK(wait_counter(members[k], offsetof(TsRaftTransportStats, in_busy),
					   before.transport.in_busy + FLOOD - TS_RAFT_HANDSHAKES_MAX) >=
		  before.transport.in_busy + FLOOD - TS_RAFT_HANDSHAKES_MAX);
	CHECK(wait_counter(members[k], offsetof(TsRaftTransportStats, in_timeout),
					   before.transport.in_timeout + 1) >= before.transport.in_timeout + 1);
	CHECK(wait_counter(members[k], offsetof(TsRaftTransportStats, in_failed),
					   before.transport.in_failed + 3) >= before.transport.in_failed + 3);

	/* none of them was handed to libraft, and none is left (freed after its close) */
	for (int tries = 0; tries < 100; tries++)
	{
		ts_raft_status(members[k], &after);
		if (after.transport.pending == 0)
			break;
		sleep_ms(10);
	}
	CHECK_EQ_UINT(after.transport.in_ok, before.transport.in_ok);
	CHECK_EQ_UINT(after.transport.pending, 0);
}

/* The running members' refusals of a wrong proof, together. */
static uint64_t
bad_proofs(void)
{
	uint64_t	sum = 0;

	for (int k = 0; k < MEMBERS; k++)
	{
		TsRaftStatus st;

		if (members[k] == NULL)
			continue;
		ts_raft_status(members[k], &st);
		sum += st.transport.in_bad_proof;
	}
	return sum;
}

/*
 * A member without its secret, or with one open to others or too short,
 * does not start: the error names the file, and nothing is made.
 */
static void
test_secret_refused(void)
{
	TsRaftConfig config = {0};
	TsError		err;
	char		dir[300];
	char		path[300];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/refused", base_dir);
	config.id = 1;
	snprintf(config.address, sizeof(config.address), "127.0.0.1:%d", free_port());
	config.dir = dir;
	config.machine.apply = machine_apply;
	config.machine.snapshot = machine_snapshot;
	config.machine.restore = machine_restore;
	config.machine.arg = &machines[0];

	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	CHECK(strstr(err.message, "no secret file") != NULL);

	/* readable by others, then by the group: both refused */
	snprintf(path, sizeof(path), "%s/open-secret", base_dir);
	REQUIRE(write_secret(path, SECRET, 0644) == 0);
	config.secret_file = path;
	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	CHECK(strstr(err.message, path) != NULL);
	CHECK(strstr(err.message, "group or world access") != NULL);
	REQUIRE(chmod(path, 0640) == 0);
	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK(strstr(err.message, path) != NULL);

	snprintf(path, sizeof(path), "%s/short-secret", base_dir);
	REQUIRE(write_secret(path, "sixteen bytes!!\n", 0600) == 0);
	config.secret_file = path;
	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	CHECK(strstr(err.message, path) != NULL);
	CHECK(strstr(err.message, "fewer than 32") != NULL);

	/* a good secret, but neither TLS files nor the clear text asked for */
	snprintf(path, sizeof(path), "%s/good-secret", base_dir);
	REQUIRE(write_secret(path, SECRET, 0600) == 0);
	config.secret_file = path;
	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK_EQ_INT(err.code, TCOPY__ERROR_CODE__ERROR_AUTH);
	CHECK(strstr(err.message, "--raft-insecure-cleartext") != NULL);
	/* a key file open to others is refused, naming it */
	snprintf(path, sizeof(path), "%s/open-secret", base_dir);	/* mode 0640 */
	config.tls_cert = path;
	config.tls_key = path;
	config.tls_ca = path;
	config.secret_file = secret_file;
	CHECK(ts_raft_start(&config, &err) == NULL);
	CHECK(strstr(err.message, path) != NULL);
	CHECK(strstr(err.message, "--raft-tls-key") != NULL);

	CHECK(stat(dir, &st) != 0);
}

static void
test_group(void)
{
	size_t		at = 0;
	int			leader,
				follower,
				next;
	uint64_t	index;
	uint64_t	refused;
	uint64_t	count;
	uint64_t	hash;
	TsRaft	   *outsider;
	TsRaftStatus st;

	for (int k = 0; k < MEMBERS; k++)
	{
		int			port = free_port();

		REQUIRE(port > 0);
		snprintf(addresses[k], sizeof(addresses[k]), "127.0.0.1:%d", port);
		at += (size_t) snprintf(bootstrap + at, sizeof(bootstrap) - at, "%s%d@%s",
								k ? "," : "", k + 1, addresses[k]);
		pthread_mutex_init(&machines[k].lock, NULL);
	}
	for (int k = 0; k < MEMBERS; k++)
		REQUIRE((members[k] = start_member(k, true, secret_file)) != NULL);

	leader = wait_leader();
	REQUIRE(leader >= 0);
	CHECK_EQ_INT(submit_entries("a", 100), 100);
	CHECK(wait_converged(100));

	/* a follower appends nothing, and knows the leader */
	follower = (leader + 1) % MEMBERS;
	CHECK_EQ_INT(ts_raft_submit(members[follower], "x", 1, &index), TS_RAFT_NOT_LEADER);
	ts_raft_status(members[follower], &st);
	CHECK_EQ_UINT(st.leader_id, (uint64_t) leader + 1);
	CHECK_EQ_STR(st.leader_address, addresses[leader]);
	CHECK(wait_converged(100));

	/* strangers on the leader's raft port are closed; the group goes on */
	check_strangers(leader);
	CHECK_EQ_INT(submit_entries("s", 20), 20);
	CHECK(wait_converged(120));

	/* the leader goes: another is elected, and the group goes on */
	ts_raft_stop(members[leader]);
	members[leader] = NULL;
	next = wait_leader();
	CHECK(next >= 0 && next != leader);
	CHECK_EQ_INT(submit_entries("b", 100), 100);
	CHECK(wait_converged(220));

	/*
	 * The old leader, started again on its directory with another group's
	 * secret, is kept out: each side refuses the other's proof, it learns
	 * none of the entries since it stopped, and the group goes on.
	 */
	pthread_mutex_lock(&machines[leader].lock);
	machines[leader].count = machines[leader].hash = machines[leader].index = 0;
	pthread_mutex_unlock(&machines[leader].lock);
	refused = bad_proofs();
	REQUIRE((outsider = start_member(leader, false, other_secret_file)) != NULL);
	CHECK_EQ_INT(submit_entries("w", 20), 20);
	CHECK(wait_converged(240));
	for (int tries = 0; tries < 100 && bad_proofs() == refused; tries++)
		sleep_ms(50);
	CHECK(bad_proofs() > refused);	/* its connections to the group */
	CHECK(wait_counter(outsider, offsetof(TsRaftTransportStats, in_bad_proof), 1) >= 1);
	machine_read(leader, &count, &hash);
	CHECK(count <= 120);
	ts_raft_status(outsider, &st);
	CHECK(st.role != TS_RAFT_LEADER && st.leader_id == 0);
	ts_raft_stop(outsider);

	/* started again with the group's secret, it catches up */
	pthread_mutex_lock(&machines[leader].lock);
	machines[leader].count = machines[leader].hash = machines[leader].index = 0;
	pthread_mutex_unlock(&machines[leader].lock);
	REQUIRE((members[leader] = start_member(leader, false, secret_file)) != NULL);
	CHECK(wait_converged(240));
	CHECK_EQ_INT(submit_entries("c", 10), 10);
	CHECK(wait_converged(250));

	for (int k = 0; k < MEMBERS; k++)
		if (members[k] != NULL)
			ts_raft_stop(members[k]);
}

int
main(void)
{
	char		cmd[300];

	signal(SIGPIPE, SIG_IGN);	/* a peer gone must not kill the process */
	snprintf(base_dir, sizeof(base_dir), "/tmp/tcopy-test-raft-XXXXXX");
	if (mkdtemp(base_dir) == NULL)
		return 1;
	snprintf(secret_file, sizeof(secret_file), "%s/secret", base_dir);
	snprintf(other_secret_file, sizeof(other_secret_file), "%s/other-secret", base_dir);
	if (write_secret(secret_file, SECRET, 0600) != 0 ||
		write_secret(other_secret_file, OTHER_SECRET, 0600) != 0)
		return 1;
	TC_RUN(test_secret_refused);
	TC_RUN(test_group);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base_dir);
	return tc_test_summary();
}
