/*
 * test_raft.c
 *		A Raft group of three members (ts_raft.c over libraft) in one
 *		process, each on its own loop thread and directory, over TCP on
 *		127.0.0.1: a leader is elected, entries submitted to it are applied
 *		on every member in the same order, a follower refuses them, the
 *		leader stopped is replaced by a new one, and the old leader started
 *		again on its directory catches up (from a snapshot and the log).
 *		The state machine is a count and a hash of the entries applied.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
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
machine_snapshot(void *arg, uint64_t index, TcBuf *out)
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
machine_restore(void *arg, const void *data, size_t len)
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

static void
test_group(void)
{
	size_t		at = 0;
	int			leader,
				follower,
				next;
	uint64_t	index;
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

	/* the leader goes: another is elected, and the group goes on */
	ts_raft_stop(members[leader]);
	members[leader] = NULL;
	next = wait_leader();
	CHECK(next >= 0 && next != leader);
	CHECK_EQ_INT(submit_entries("b", 100), 100);
	CHECK(wait_converged(200));

	/* the old leader, started again on its directory, catches up */
	pthread_mutex_lock(&machines[leader].lock);
	machines[leader].count = machines[leader].hash = machines[leader].index = 0;
	pthread_mutex_unlock(&machines[leader].lock);
	REQUIRE((members[leader] = start_member(leader, false, secret_file)) != NULL);
	CHECK(wait_converged(200));
	CHECK_EQ_INT(submit_entries("c", 10), 10);
	CHECK(wait_converged(210));

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
	if (write_secret(secret_file, "0123456789abcdef0123456789abcdef0123456789abcdef\n", 0600) != 0)
		return 1;
	TC_RUN(test_group);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base_dir);
	return tc_test_summary();
}
