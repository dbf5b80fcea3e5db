/*
 * ts_group_int.h
 *		What ts_group.c (the log's entries, who serves) and
 *		ts_group_catchup.c (a member's state sent to a member too far behind
 *		the log) share.  Private to the replica group.
 */
#ifndef TS_GROUP_INT_H
#define TS_GROUP_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "ts_group.h"
#include "ts_storage_int.h"

#define PATH_MAX_LEN 256		/* of a path under the staging directory */

/* An entry's first byte: its kind (ts_group.c) */
#define ENTRY_NOOP 0
#define ENTRY_BATCH 1
#define ENTRY_FILE 2
#define ENTRY_INGEST 3
#define ENTRY_CLEAN 4
#define ENTRY_DROP_DIR 5
#define FILE_HEADER (1 + 8 + 8 + 1 + 2)	/* kind, proposer, offset, last, path length */
#define FILE_CHUNK (1024 * 1024)	/* of an SST file per entry */
#define STAGED_UNSYNCED_MAX 4	/* files with unsynced chunks at once */

struct TsGroup
{
	TsStore    *store;
	TsRaft	   *raft;
	uint64_t	id;
	void		(*restart) (void *arg);
	void	   *restart_arg;
	int			(*reload) (TsStore *store, TsError *err);	/* TsGroupConfig's */
	int			(*clean_staging) (TsStore *store, TsError *err);
	pthread_t	watcher;
	bool		watcher_started;
	atomic_bool stopping;
	_Atomic uint64_t epoch;		/* nonzero while serving */
	uint64_t	epochs;			/* how many times it began to serve (the
								 * watcher's): at most once, a demoted
								 * leader restarts */

	/*
	 * Held by every entry's application, and by a checkpoint sent to
	 * another member, so that what it sends is the state after one entry
	 * exactly: RocksDB and the staging directory alike.
	 */
	pthread_mutex_t apply_lock;

	/*
	 * The staged files FILE entries wrote since their last sync (their last
	 * chunk still to come), under the apply lock: synced before the index
	 * of any later entry is recorded (ts_group_sync_applied).
	 */
	char	   *unsynced[STAGED_UNSYNCED_MAX];
	unsigned	nunsynced;

	/* files shipped in the background (ts_group_ship_async), in order */
	pthread_t	shipper;
	bool		shipper_started;
	pthread_mutex_t ship_lock;
	pthread_cond_t ship_cond;	/* a job queued, or stopping */
	struct ShipJob *ship_head;
	struct ShipJob *ship_tail;

	/* the member's state being sent to another (ts_group_catchup.c) */
	pthread_t	sender;
	bool		sender_started; /* joined before the next, and at stop */
	atomic_bool sending;
	atomic_int	sender_fd;		/* -1: none; shut down at stop */
	uint64_t	sender_peer;
};

/*
 * TsRaftMachine.apply: the entry at index of the group's log applied here
 * (on the raft thread; unit tests call it).  0, or -1, logged.
 */
int			ts_group_apply(void *arg, uint64_t index, const void *data, size_t len);

/* in ts_group_staged.c: the staged files with unsynced chunks, under the apply lock */

/*
 * Everything applied here made durable and recorded: the staged files with
 * unsynced chunks synced, then the applied index recorded, synced, so that
 * ts_storage_applied_durable is ts_storage_applied.  0, or -1 with err.
 */
int			ts_group_sync_applied(TsGroup *group, TsError *err);

/* Sync the staged files with unsynced chunks, and their directories; 0, or -1 with err. */
int			ts_group_sync_staged(TsGroup *group, TsError *err);

/*
 * path's chunk was just written: its file is synced (its last chunk), or
 * is to be synced before any later entry's index is recorded.  0, or -1
 * with err.
 */
int			ts_group_note_unsynced(TsGroup *group, const char *path, bool synced,
								   TsError *err);

/* Forget the list (the group stopping). */
void		ts_group_forget_unsynced(TsGroup *group);

/* in ts_group_log.c: what the entries and submits share */

/* 0 for an entry applied here, or -1 with err saying why it was not. */
int			ts_group_outcome(TsGroup *group, TsRaftOutcome outcome, TsError *err);

/* Whether path (len bytes) is "DIR/NAME" under the staging directory. */
bool		ts_group_path_valid(const char *path, size_t len);

/* in ts_group_ship.c: a spilled session's files through the log */

/* path's part under the staging directory, or NULL with err. */
const char *ts_group_staged_name(TsGroup *group, const char *path, TsError *err);

/*
 * Start the shipping thread (its lock and condition made by
 * ts_group_start); 0, or -1 with err.  Stop it, failing what is queued,
 * and destroy them.
 */
int			ts_group_shipper_start(TsGroup *group, TsError *err);
void		ts_group_shipper_stop(TsGroup *group);

/*
 * TsRaftConfig.on_fetch: send this member's state to member peer on fd,
 * from a thread of its own (one at a time; another is closed at once).
 */
void		ts_group_send_state(void *arg, int fd, uint64_t peer);

/* Wait for a sender still running, its socket shut down first. */
void		ts_group_sender_stop(TsGroup *group);

/*
 * This member's store holds the log up to applied only, and the group's
 * log goes on from index: fetch the state of a member that holds index
 * (the leader first, then members, the last known of them in members),
 * then restart to use it.  Returns only on failure: -1, logged.  start:
 * the member's start (restore before ts_raft_start returns), when every
 * member may be starting too: keep trying for longer.
 */
int			ts_group_catch_up(TsGroup *group, TsRaft *raft, uint64_t index,
							  const TsRaftMember *members, unsigned nmembers, bool start);

#endif							/* TS_GROUP_INT_H */
