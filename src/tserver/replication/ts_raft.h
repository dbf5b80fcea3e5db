/*
 * ts_raft.h
 *		One member of a Raft group (Debian's libraft 0.15, its libuv I/O):
 *		entries submitted from any thread, applied in log order by a state
 *		machine the caller gives, on every member.  The design, and what
 *		libraft 0.15 does and does not do, are in docs/replication.md.
 *
 * libraft runs on one libuv loop, on a thread of the member's own; every
 * callback below is called there.  ts_raft_submit hands an entry to that
 * thread and waits until it is committed and applied on this member (the
 * leader), or refused.
 *
 * The raft port is ours (ts_raft_transport.c): a peer is let in only once
 * it has proved, in TLS with the group's certificates, that it holds the
 * group's secret, read from the file the config names
 * (docs/replication.md#security, docs/security.md#the-raft-port).
 */
#ifndef TS_RAFT_H
#define TS_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc_buf.h"
#include "ts_error.h"
#include "ts_raft_transport.h"

#define TS_RAFT_ADDRESS_MAX 64	/* "a.b.c.d:port", as libraft 0.15 takes it */

typedef struct TsRaft TsRaft;

typedef enum TsRaftRole
{
	TS_RAFT_UNAVAILABLE,
	TS_RAFT_FOLLOWER,
	TS_RAFT_CANDIDATE,
	TS_RAFT_LEADER
} TsRaftRole;

/* What ts_raft_submit says of an entry. */
typedef enum TsRaftOutcome
{
	TS_RAFT_APPLIED,			/* committed, and applied on this member */
	TS_RAFT_NOT_LEADER,			/* nothing appended: send it to the leader */
	TS_RAFT_UNKNOWN,			/* leadership lost meanwhile: the next leader
								 * may commit it or not */
	TS_RAFT_FAILED				/* not appended (stopping, out of memory, I/O) */
} TsRaftOutcome;

/*
 * The state machine, called on the member's raft thread:
 *
 * apply: each committed entry, in log order, on every member; again, after
 * a restart, for the entries after the last snapshot, so that an entry at
 * or below the index the state already holds must be skipped.  Anything
 * but 0 stops applying (libraft retries at the next entry): the member is
 * broken.
 *
 * snapshot: a small description of the state applied so far (up to index)
 * into out; libraft keeps it, sends it to a member too far behind for the
 * log, and gives it to restore there and at every start.  0, or -1 (taken
 * later).
 *
 * restore: make the state what the snapshot describes; 0, or -1 (fatal at
 * a start; when the leader sent it, it sends it again later).  raft is the
 * member's (ts_raft_start has not returned yet at a start).
 *
 * bootstrapped (may be NULL): the member has just bootstrapped a new group,
 * before anything is applied: a state it holds from before (a backup's)
 * was made by another group's log, whose indexes mean nothing in this
 * one.  0, or -1 with err (the start fails).
 */
typedef struct TsRaftMachine
{
	int			(*apply) (void *arg, uint64_t index, const void *data, size_t len);
	int			(*snapshot) (void *arg, TsRaft *raft, uint64_t index, TcBuf *out);
	int			(*restore) (void *arg, TsRaft *raft, const void *data, size_t len);
	int			(*bootstrapped) (void *arg, TsError *err);
	void	   *arg;
} TsRaftMachine;

typedef struct TsRaftConfig
{
	uint64_t	id;				/* this member's, above 0 */
	char		address[TS_RAFT_ADDRESS_MAX];	/* "a.b.c.d:port": the raft port
												 * listens there only, and peers
												 * reach it there */
	const char *secret_file;	/* required: the group's secret, the same
								 * file's bytes on every member, read by
								 * ts_raft_start (ts_raft_secret_load: its
								 * owner's only, at least
								 * TS_RAFT_SECRET_MIN bytes) */
	const char *tls_cert;		/* the raft port's TLS (docs/security.md):
								 * this member's certificate, its key (owner
								 * only) and the group's CA, all three */
	const char *tls_key;
	const char *tls_ca;
	bool		cleartext;		/* no TLS at all, as the member was told to
								 * (--raft-insecure-cleartext); without it
								 * and the three files, the start fails */
	unsigned	handshake_ms;	/* a raft connection's deadline to prove
								 * itself; 0: TS_RAFT_HANDSHAKE_MS */
	const char *dir;			/* libraft's files; made if missing */
	const char *bootstrap;		/* the first members, "ID@ADDRESS,...", the
								 * same on each of them; NULL on a member
								 * that joins or restarts */
	unsigned	election_ms;	/* 0: 1000 */
	unsigned	heartbeat_ms;	/* 0: 100 */
	unsigned	snapshot_threshold; /* entries between snapshots; 0: 1024 */
	unsigned	snapshot_trailing;	/* entries kept after a snapshot, for
									 * members behind it; 0: libraft's 2048 */
	TsRaftMachine machine;
	TsRaftFetchCb on_fetch;		/* NULL: this member serves no fetch of
								 * its state (ts_raft_transport.h) */
	void	   *fetch_arg;
} TsRaftConfig;

/* A member of the group as the configuration says. */
#define TS_RAFT_MEMBERS_MAX 9
typedef struct TsRaftMember
{
	uint64_t	id;
	char		address[TS_RAFT_ADDRESS_MAX];
	bool		voter;			/* false: a standby, catching up */
} TsRaftMember;

typedef struct TsRaftStatus
{
	TsRaftRole	role;
	uint64_t	leader_id;		/* 0: none known */
	char		leader_address[TS_RAFT_ADDRESS_MAX];
	uint64_t	applied;		/* the last index applied here */
	uint64_t	term;
	TsRaftTransportStats transport; /* the raft port's handshakes */
	unsigned	nmembers;		/* the configuration this member holds */
	TsRaftMember members[TS_RAFT_MEMBERS_MAX];
} TsRaftStatus;

/* A change of the group's membership (ts_raft_change), on the leader. */
typedef enum TsRaftChange
{
	TS_RAFT_ADD,				/* a new member, as a standby: it catches up */
	TS_RAFT_PROMOTE,			/* a standby made a voter */
	TS_RAFT_REMOVE				/* a member out of the group */
} TsRaftChange;

/*
 * Start the member; NULL with err (ERROR_AUTH: no secret file, or one
 * refused, named in the message).
 */
TsRaft	   *ts_raft_start(const TsRaftConfig *config, TsError *err);

/*
 * Submit an entry (copied) and wait for its outcome; *index: its index
 * when applied.  Any thread but the member's own.
 */
TsRaftOutcome ts_raft_submit(TsRaft *raft, const void *data, size_t len, uint64_t *index);

/*
 * Submit n entries at once, in order, so that libraft appends and sends
 * them together, and wait for them all: TS_RAFT_APPLIED when every one
 * was, else the outcome of the first that was not.
 */
TsRaftOutcome ts_raft_submit_all(TsRaft *raft, const void *const *data, const size_t *lens,
								 size_t n);

/*
 * Change the membership and wait until the new configuration is committed:
 * TS_RAFT_APPLIED, TS_RAFT_NOT_LEADER, or TS_RAFT_FAILED with why (libraft's
 * words: a member unknown, one change at a time, a promotion that gave up
 * because the standby did not catch up).  Any thread but the member's own.
 */
TsRaftOutcome ts_raft_change(TsRaft *raft, TsRaftChange change, uint64_t id,
							 const char *address, char *why, size_t whylen);

/*
 * The members of the configuration this member holds into members (at most
 * max of them), and the leader it knows (0: none); how many members.  On
 * the member's raft thread only: in a machine's callback.
 */
unsigned	ts_raft_members_now(TsRaft *raft, TsRaftMember *members, unsigned max,
								uint64_t *leader_id);

/*
 * A proven connection to member id at address, asking for its state
 * (ts_raft_fetch_connect): a blocking socket, or -1 with err.  Any thread,
 * the machine's callbacks included.
 */
int			ts_raft_fetch_open(TsRaft *raft, uint64_t id, const char *address,
							   unsigned timeout_ms, TsError *err);

/*
 * Take no snapshot for the next seconds (from now: a later call replaces
 * an earlier one's end), so that the log is not truncated: a member that
 * fetches this member's state then finds every entry after that state
 * here (docs/replication.md, Catching up).  Ends early once 1 GB of
 * entries were submitted meanwhile.  Any thread.
 */
void		ts_raft_hold_snapshots(TsRaft *raft, unsigned seconds);

/* What the member last knew, from any thread. */
void		ts_raft_status(TsRaft *raft, TsRaftStatus *status);

/* Stop the member and free it: entries still waiting end TS_RAFT_FAILED. */
void		ts_raft_stop(TsRaft *raft);

#endif							/* TS_RAFT_H */
