/*
 * ts_group.c
 *		A tserver as one member of a replica group: the store's writes as
 *		entries of the group's log, applied on every member; whether this
 *		member serves clients.  See ts_group.h and docs/replication.md.
 *
 * An entry is one byte of kind, then its body: ENTRY_NOOP (a new leader's
 * barrier) or ENTRY_BATCH (a WriteBatch's bytes, applied with the entry's
 * index by ts_storage_apply).  The snapshot libraft keeps is the applied
 * index alone: the state is in RocksDB, synced with each entry, so that a
 * restart finds it there and skips what the log replays.
 */
#include "ts_group.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ts_key.h"
#include "ts_log.h"
#include "ts_store_int.h"

#define ENTRY_NOOP 0
#define ENTRY_BATCH 1
#define WATCH_INTERVAL_MS 20

struct TsGroup
{
	TsStore    *store;
	TsRaft	   *raft;
	uint64_t	id;
	void		(*on_demoted) (void *arg);
	void	   *on_demoted_arg;
	pthread_t	watcher;
	bool		watcher_started;
	atomic_bool stopping;
	atomic_bool served;			/* led and served since the process began */
	_Atomic uint64_t epoch;		/* nonzero while serving */
	uint64_t	epochs;			/* how many times it began to serve */
};

/* TsRaftMachine.apply: on the raft thread, every member, in log order. */
static int
group_apply(void *arg, uint64_t index, const void *data, size_t len)
{
	TsGroup    *group = arg;
	const char *bytes = data;
	TsError		err;

	if (len < 1 || (bytes[0] != ENTRY_NOOP && bytes[0] != ENTRY_BATCH))
	{
		ts_log(TS_LOG_ERROR, "replica group: entry %llu is of no known kind",
			   (unsigned long long) index);
		return -1;
	}
	if (bytes[0] == ENTRY_NOOP)
		return 0;
	if (ts_storage_apply(group->store, index, bytes + 1, len - 1, &err) != 0)
	{
		ts_log(TS_LOG_ERROR, "replica group: %s", err.message);
		return -1;
	}
	return 0;
}

/* TsRaftMachine.snapshot: the index the store holds every entry up to. */
static int
group_snapshot(void *arg, uint64_t index, TcBuf *out)
{
	TsGroup    *group = arg;
	uint8_t		applied[8];

	ts_put_be64(applied, ts_storage_applied(group->store));
	if (!tc_buf_reserve(out, sizeof(applied)))
		return -1;
	memcpy(out->data + out->len, applied, sizeof(applied));
	out->len += sizeof(applied);
	return 0;
}

/*
 * TsRaftMachine.restore: at every start (the last snapshot), and when the
 * leader sends one to a member that its log no longer covers.  The store
 * must already hold what the snapshot describes: fetching another member's
 * checkpoint is not built yet (docs/replication.md).
 */
static int
group_restore(void *arg, const void *data, size_t len)
{
	TsGroup    *group = arg;
	uint64_t	index = len == 8 ? ts_get_be64(data) : 0;
	uint64_t	applied = ts_storage_applied(group->store);

	if (len != 8)
	{
		ts_log(TS_LOG_ERROR, "replica group: a snapshot of %zu bytes is not this tserver's", len);
		return -1;
	}
	if (index <= applied)
		return 0;
	ts_log(TS_LOG_ERROR, "replica group: this member holds the group's log up to entry %llu, "
		   "and the group has dropped the entries after it (its snapshot is at %llu): "
		   "restore this member from a backup of another (tserver-cli backup) and start it again",
		   (unsigned long long) applied, (unsigned long long) index);
	return -1;
}

/* TsStorageReplicator: a WriteBatch through the log, applied here on return. */
static int
group_replicate(void *arg, const char *data, size_t len, TsError *err)
{
	TsGroup    *group = arg;
	TsRaftOutcome outcome;
	TsRaftStatus status;
	uint64_t	index;
	char	   *entry = malloc(len + 1);

	if (entry == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	entry[0] = ENTRY_BATCH;
	memcpy(entry + 1, data, len);
	outcome = ts_raft_submit(group->raft, entry, len + 1, &index);
	free(entry);
	switch (outcome)
	{
		case TS_RAFT_APPLIED:
			return 0;
		case TS_RAFT_NOT_LEADER:
		case TS_RAFT_UNKNOWN:
			ts_raft_status(group->raft, &status);
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
						 "this tserver lost the lead of its replica group%s (member %llu "
						 "leads)", outcome == TS_RAFT_UNKNOWN ?
						 " while the write was being replicated: it may be applied or not" : "",
						 (unsigned long long) status.leader_id);
			return -1;
		case TS_RAFT_FAILED:
			break;
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "the replica group's log refused the write (the member is stopping, "
				 "or its disk failed)");
	return -1;
}

/*
 * The member has just become leader: commit a no-op (every entry of an
 * earlier term is then applied here), reload the state the store keeps in
 * memory, serve.
 */
static void
group_begin_serving(TsGroup *group)
{
	TsStore    *store = group->store;
	char		noop = ENTRY_NOOP;
	uint64_t	index;
	TsError		err;

	if (ts_raft_submit(group->raft, &noop, 1, &index) != TS_RAFT_APPLIED)
		return;					/* lost it already: the next round retries */
	if (atomic_load(&group->served))
		return;					/* cannot happen: a demoted leader restarts */
	ts_prepared_free_all(store);
	ts_labels_free_all(store);
	if (ts_storage_reload_tables(store, &err) != 0 || ts_prepared_load(store, &err) != 0)
	{
		ts_log(TS_LOG_ERROR, "replica group: cannot lead: %s", err.message);
		return;
	}
	group->epochs++;
	atomic_store(&group->served, true);
	atomic_store(&group->epoch, group->epochs);
	ts_log(TS_LOG_INFO, "replica group: member %llu leads, from entry %llu on: "
		   "%llu tables, %zu prepared sessions", (unsigned long long) group->id,
		   (unsigned long long) index, (unsigned long long) atomic_load(&store->tables_live),
		   store->nprepared);
}

/* The watcher: follow the member's role. */
static void *
group_watch(void *arg)
{
	TsGroup    *group = arg;
	struct timespec pause = {0, WATCH_INTERVAL_MS * 1000000L};

	while (!atomic_load(&group->stopping))
	{
		TsRaftStatus status;

		ts_raft_status(group->raft, &status);
		if (status.role == TS_RAFT_LEADER && atomic_load(&group->epoch) == 0)
			group_begin_serving(group);
		else if (status.role != TS_RAFT_LEADER && atomic_load(&group->epoch) != 0)
		{
			atomic_store(&group->epoch, 0);
			ts_log(TS_LOG_WARNING, "replica group: member %llu no longer leads (member %llu "
				   "does): it stops serving", (unsigned long long) group->id,
				   (unsigned long long) status.leader_id);
			if (group->on_demoted != NULL)
				group->on_demoted(group->on_demoted_arg);
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

TsGroup *
ts_group_start(TsStore *store, const TsGroupConfig *config, TsError *err)
{
	TsGroup    *group = calloc(1, sizeof(TsGroup));
	TsRaftConfig raft_config = config->raft;

	if (group == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	group->store = store;
	group->id = raft_config.id;
	group->on_demoted = config->on_demoted;
	group->on_demoted_arg = config->on_demoted_arg;
	raft_config.machine.apply = group_apply;
	raft_config.machine.snapshot = group_snapshot;
	raft_config.machine.restore = group_restore;
	raft_config.machine.arg = group;
	ts_storage_set_replicator(store, group_replicate, group);
	group->raft = ts_raft_start(&raft_config, err);
	if (group->raft == NULL)
		goto err;
	if (pthread_create(&group->watcher, NULL, group_watch, group) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not start the replica group's watcher: %s", strerror(errno));
		goto err;
	}
	group->watcher_started = true;
	return group;

err:
	ts_group_stop(group);
	return NULL;
}

bool
ts_group_serving(TsGroup *group, uint64_t epoch, TsError *err)
{
	uint64_t	now = atomic_load(&group->epoch);
	TsRaftStatus status;

	if (now != 0 && (epoch == 0 || epoch == now))
		return true;
	ts_raft_status(group->raft, &status);
	if (status.leader_id != 0 && status.leader_id != group->id)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
					 "tserver member %llu of a replica group does not lead it: member %llu "
					 "(raft address %s) does", (unsigned long long) group->id,
					 (unsigned long long) status.leader_id, status.leader_address);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
					 "tserver member %llu of a replica group does not lead it, and no member "
					 "leads it yet (an election, or too few members reachable)",
					 (unsigned long long) group->id);
	return false;
}

uint64_t
ts_group_epoch(TsGroup *group)
{
	return atomic_load(&group->epoch);
}

void
ts_group_stop(TsGroup *group)
{
	if (group == NULL)
		return;
	atomic_store(&group->stopping, true);
	if (group->watcher_started)
		pthread_join(group->watcher, NULL);
	atomic_store(&group->epoch, 0);
	if (group->raft != NULL)
		ts_raft_stop(group->raft);
	free(group);
}
