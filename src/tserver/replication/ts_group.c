/*
 * ts_group.c
 *		A tserver as one member of a replica group: the store's writes as
 *		entries of the group's log, applied on every member; whether this
 *		member serves clients.  See ts_group.h and docs/replication.md.
 *
 * An entry is one byte of kind, then its body:
 *
 *   ENTRY_NOOP    a new leader's barrier
 *   ENTRY_BATCH   a WriteBatch's bytes, applied by ts_storage_apply
 *   ENTRY_FILE    a chunk of a spilled session's SST file: the proposer's
 *                 raft id, the offset, whether it is the last, the file's
 *                 path under the staging directory, the bytes.  Written
 *                 into the same path on every member but the proposer
 *                 (the file is its own), synced with the last chunk, or
 *                 before any later entry's index is recorded
 *   ENTRY_INGEST  the paths of such files, ingested (moved into RocksDB)
 *                 on every member; files already gone were ingested by
 *                 this entry before a restart
 *   ENTRY_CLEAN   a new leader's: every staging directory but the prepared
 *                 sessions' removed, the files of sessions that died with
 *                 an earlier leader
 *   ENTRY_DROP_DIR  the proposer's raft id and a staging directory's name:
 *                 a published or discarded session's, removed on every
 *                 member but the proposer (which removes its own)
 *
 * So a spilled session's files reach every member before the entry that
 * records or publishes it, in the log's order, and a member that was away
 * receives them as it catches up.  Each entry's index is stored with what
 * it wrote (ts_storage_apply, ts_storage_mark_applied), so that a restart
 * replays only what the store lacks.  The snapshot libraft keeps is that
 * index alone: the state is in RocksDB and the staging directory.
 *
 * An index is recorded only once what the entries up to it wrote is
 * durable, so that a power cut (every unsynced write lost, in any order)
 * never leaves an entry skipped at the replay whose effect is gone: a
 * FILE entry's chunk is not synced on its own (a sync per MB would slow
 * a load), so its index stays in memory, and the file is synced before
 * the next entry's index is recorded (ts_group_staged.c), or with its last
 * chunk.  A snapshot names the index recorded, synced first
 * (ts_group_sync_applied), never one a restart could find the store
 * behind.  docs/replication.md#durability-a-power-cut-of-every-member.
 */
#include "ts_group_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ts_key.h"
#include "ts_log.h"

#define WATCH_INTERVAL_MS 20


/*
 * Apply an ENTRY_FILE: the chunk written into its file, synced if the
 * last, else listed to be synced before the next entry's index is recorded.
 */
static int
apply_file(TsGroup *group, const uint8_t *bytes, size_t len, TsError *err)
{
	TsStore    *store = group->store;
	uint64_t	proposer,
				offset;
	bool		last;
	size_t		pathlen;
	char		path[SESSION_PATH_SIZE];
	char		dir[SESSION_PATH_SIZE];
	int			fd;
	const uint8_t *data;
	size_t		datalen;

	if (len < FILE_HEADER)
		goto malformed;
	proposer = ts_get_be64(bytes + 1);
	offset = ts_get_be64(bytes + 9);
	last = bytes[17] != 0;
	pathlen = (size_t) bytes[18] << 8 | bytes[19];
	if (len < FILE_HEADER + pathlen || !ts_group_path_valid((const char *) bytes + FILE_HEADER, pathlen))
		goto malformed;
	if (proposer == group->id)
		return 0;				/* the leader's own file */
	snprintf(path, sizeof(path), "%s/%.*s", store->staging_dir, (int) pathlen,
			 (const char *) bytes + FILE_HEADER);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		goto io_error;
	data = bytes + FILE_HEADER + pathlen;
	datalen = len - FILE_HEADER - pathlen;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (offset == 0 ? O_TRUNC : 0), 0600);
	if (fd < 0)
		goto io_error;
	for (size_t done = 0; done < datalen;)
	{
		ssize_t		n = pwrite(fd, data + done, datalen - done, (off_t) (offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			close(fd);
			goto io_error;
		}
		done += (size_t) n;
	}
	if (last && fsync(fd) != 0)
	{
		close(fd);
		goto io_error;
	}
	close(fd);
	if (last)
	{
		ts_sync_dir(dir);
		ts_sync_dir(store->staging_dir);
	}
	return ts_group_note_unsynced(group, path, last, err);

malformed:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "a file entry is malformed");
	return -1;
io_error:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not write \"%s\": %s",
				 path, strerror(errno));
	return -1;
}

/*
 * Apply an ENTRY_INGEST: its files, here under this member's staging
 * directory, ingested; none there: ingested before a restart.
 */
static int
apply_ingest(TsGroup *group, const uint8_t *bytes, size_t len, TsError *err)
{
	TsStore    *store = group->store;
	uint32_t	n = len >= 5 ? ts_get_be32(bytes + 1) : 0;
	char	  **paths = n > 0 && n <= len ? calloc(n, sizeof(char *)) : NULL;
	size_t		at = 5;
	uint32_t	present = 0;
	size_t		live = 0;
	int			rc = -1;

	if (paths == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "an ingest entry is malformed");
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		size_t		pathlen = at + 2 <= len ? (size_t) bytes[at] << 8 | bytes[at + 1] : 0;
		struct stat st;

		if (at + 2 + pathlen > len ||
			!ts_group_path_valid((const char *) bytes + at + 2, pathlen) ||
			asprintf(&paths[i], "%s/%.*s", store->staging_dir, (int) pathlen,
					 (const char *) bytes + at + 2) < 0)
		{
			paths[i] = NULL;
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "an ingest entry is malformed");
			goto done;
		}
		at += 2 + pathlen;
		present += stat(paths[i], &st) == 0;
	}
	/*
	 * Ingesting moves the files: RocksDB links each into the store, commits,
	 * then unlinks it here.  A crash (or a demoted leader's restart) between
	 * the commit and our applied index replays the entry: the files it
	 * finds here, if any, are then the store's own live files, and must not
	 * be ingested twice (a second ingestion of the same inode rewrites its
	 * sequence number under the first).  One ingestion is atomic: all of
	 * them are live, or none.
	 */
	if (present == 0)
		rc = 0;					/* moved into RocksDB before a restart */
	else if (ts_storage_files_live(store, paths, n, &live, err) != 0)
		rc = -1;
	else if (live == present)
	{
		for (uint32_t i = 0; i < n; i++)
			(void) unlink(paths[i]);
		rc = 0;
	}
	else if (live > 0 || present < n)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "an ingest entry's %u files: %u here, %zu of them in the store", n,
					 present, live);
	else
		rc = ts_storage_ingest(store, paths, n, err);

done:
	for (uint32_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* Apply an ENTRY_DROP_DIR: the directory removed, unless it is the proposer's. */
static int
apply_drop_dir(TsGroup *group, const uint8_t *bytes, size_t len, TsError *err)
{
	char		path[SESSION_PATH_SIZE];

	if (len < 10 || len - 9 >= PATH_MAX_LEN || memchr(bytes + 9, '/', len - 9) != NULL ||
		memchr(bytes + 9, '\0', len - 9) != NULL || bytes[9] == '.')
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "a drop entry is malformed");
		return -1;
	}
	if (ts_get_be64(bytes + 1) == group->id)
		return 0;
	snprintf(path, sizeof(path), "%s/%.*s", group->store->staging_dir, (int) (len - 9),
			 (const char *) bytes + 9);
	if (ts_remove_tree(path) != 0 && errno != ENOENT)
		ts_log(TS_LOG_WARNING, "replica group: could not remove \"%s\": %s", path,
			   strerror(errno));
	return 0;
}

static int	group_apply_locked(TsGroup *group, uint64_t index, const void *data, size_t len);

/* TsRaftMachine.apply: on the raft thread, every member, in log order. */
int
ts_group_apply(void *arg, uint64_t index, const void *data, size_t len)
{
	TsGroup    *group = arg;
	int			rc;

	pthread_mutex_lock(&group->apply_lock);
	rc = group_apply_locked(group, index, data, len);
	pthread_mutex_unlock(&group->apply_lock);
	return rc;
}

static int
group_apply_locked(TsGroup *group, uint64_t index, const void *data, size_t len)
{
	const uint8_t *bytes = data;
	TsError		err;
	int			rc;

	if (len < 1)
		bytes = (const uint8_t *) "\xff";
	if (bytes[0] == ENTRY_NOOP)
		return 0;
	if (index <= ts_storage_applied(group->store))
		return 0;				/* replayed */
	/*
	 * Every entry but a chunk records its index: what the chunks before it
	 * wrote is synced first.  An INGEST records theirs before it begins:
	 * a crash once RocksDB holds the files and before the INGEST's index
	 * is recorded must replay the INGEST alone, not the chunks, which
	 * would write into the files RocksDB now holds (the same inodes).
	 */
	if (bytes[0] == ENTRY_INGEST && ts_group_sync_applied(group, &err) != 0)
		rc = -1;
	else if (bytes[0] != ENTRY_FILE && ts_group_sync_staged(group, &err) != 0)
		rc = -1;
	else if (bytes[0] == ENTRY_BATCH)
		rc = ts_storage_apply(group->store, index, (const char *) bytes + 1, len - 1, &err);
	else if (bytes[0] == ENTRY_FILE)
		rc = apply_file(group, bytes, len, &err);
	else if (bytes[0] == ENTRY_INGEST)
		rc = apply_ingest(group, bytes, len, &err);
	else if (bytes[0] == ENTRY_CLEAN)
		rc = group->clean_staging(group->store, &err);
	else if (bytes[0] == ENTRY_DROP_DIR)
		rc = apply_drop_dir(group, bytes, len, &err);
	else
	{
		ts_error_set(&err, TCOPY__ERROR_CODE__ERROR_STORAGE, "an entry of kind %d is unknown",
					 bytes[0]);
		rc = -1;
	}
	/*
	 * A chunk's index in memory only: a restart replays it, unless a later
	 * entry, once the file is synced, recorded its own index.
	 */
	if (rc == 0 && bytes[0] != ENTRY_BATCH)
		rc = ts_storage_mark_applied(group->store, index, bytes[0] != ENTRY_FILE, &err);
	if (rc != 0)
		ts_log(TS_LOG_ERROR, "replica group: entry %llu: %s", (unsigned long long) index,
			   err.message);
	return rc;
}

/*
 * TsRaftMachine.snapshot: the index the store holds every entry up to,
 * durably (libraft keeps the snapshot, and a restart restores it: a store
 * found behind it would have to fetch another member's state), and the
 * members now, whom a member restored from it at its start may ask for
 * their state (ts_group_catchup.c):
 *
 *	applied (8) | n (1) | n times: id (8) | address length (1) | address
 */
static int
group_snapshot(void *arg, TsRaft *raft, uint64_t index, TcBuf *out)
{
	TsGroup    *group = arg;
	TsRaftMember members[TS_RAFT_MEMBERS_MAX];
	uint64_t	leader;
	unsigned	n = ts_raft_members_now(raft, members, TS_RAFT_MEMBERS_MAX, &leader);
	uint64_t	durable;
	uint8_t    *p;
	TsError		err;
	int			rc;

	(void) index;
	pthread_mutex_lock(&group->apply_lock);
	rc = ts_group_sync_applied(group, &err);
	durable = ts_storage_applied_durable(group->store);
	pthread_mutex_unlock(&group->apply_lock);
	if (rc != 0)
	{
		ts_log(TS_LOG_WARNING, "replica group: no snapshot now: %s", err.message);
		return -1;				/* taken later */
	}
	if (!tc_buf_reserve(out, 9 + n * (9 + TS_RAFT_ADDRESS_MAX)))
		return -1;
	p = (uint8_t *) out->data + out->len;
	ts_put_be64(p, durable);
	p[8] = (uint8_t) n;
	p += 9;
	for (unsigned i = 0; i < n; i++)
	{
		size_t		len = strlen(members[i].address);

		ts_put_be64(p, members[i].id);
		p[8] = (uint8_t) len;
		memcpy(p + 9, members[i].address, len);
		p += 9 + len;
	}
	out->len = (size_t) (p - (uint8_t *) out->data);
	return 0;
}

/*
 * The members a snapshot names into members (at most TS_RAFT_MEMBERS_MAX);
 * how many, or -1 if it is not one of ours.  An 8-byte snapshot names none.
 */
static int
snapshot_members(const uint8_t *p, size_t len, TsRaftMember *members)
{
	unsigned	n;
	size_t		at = 9;

	if (len == 8)
		return 0;
	if (len < 9 || (n = p[8]) > TS_RAFT_MEMBERS_MAX)
		return -1;
	for (unsigned i = 0; i < n; i++)
	{
		size_t		alen = at + 9 <= len ? p[at + 8] : 0;

		if (alen == 0 || alen >= TS_RAFT_ADDRESS_MAX || at + 9 + alen > len)
			return -1;
		members[i].id = ts_get_be64(p + at);
		memcpy(members[i].address, p + at + 9, alen);
		members[i].address[alen] = '\0';
		members[i].voter = true;
		at += 9 + alen;
	}
	return at == len ? (int) n : -1;
}

/*
 * TsRaftMachine.restore: at every start (the last snapshot), and when the
 * leader sends one to a member that its log no longer covers.  A store
 * behind the snapshot fetches another member's state and restarts with
 * it (ts_group_catchup.c).
 */
static int
group_restore(void *arg, TsRaft *raft, const void *data, size_t len)
{
	TsGroup    *group = arg;
	TsRaftMember members[TS_RAFT_MEMBERS_MAX];
	int			n = snapshot_members(data, len, members);
	uint64_t	index;

	if (n < 0)
	{
		ts_log(TS_LOG_ERROR, "replica group: a snapshot of %zu bytes is not this tserver's", len);
		return -1;
	}
	index = ts_get_be64(data);
	if (index <= ts_storage_applied(group->store))
	{
		TsError		err;
		int			rc;

		/* libraft drops its log up to the snapshot: what it covers, durable */
		pthread_mutex_lock(&group->apply_lock);
		rc = ts_group_sync_applied(group, &err);
		pthread_mutex_unlock(&group->apply_lock);
		if (rc != 0)
			ts_log(TS_LOG_ERROR, "replica group: a snapshot refused: %s", err.message);
		return rc;
	}
	/* group->raft is set once ts_raft_start returns: until then, a start */
	return ts_group_catch_up(group, raft, index, members, (unsigned) n, group->raft == NULL);
}

/*
 * TsRaftMachine.bootstrapped: a new group begins, on a store that may hold
 * a backup of another group's member: its applied index counted that
 * group's entries, and would skip this one's.
 */
static int
group_bootstrapped(void *arg, TsError *err)
{
	TsGroup    *group = arg;
	uint64_t	applied = ts_storage_applied(group->store);

	if (applied == 0)
		return 0;
	ts_log(TS_LOG_INFO, "replica group: a new group begins on this store (it held another "
		   "group's log up to entry %llu)", (unsigned long long) applied);
	return ts_storage_forget_applied(group->store, err);
}

/* Submit entry to the group's log; 0 once applied here, or -1 with err. */
static int
group_submit(TsGroup *group, const void *entry, size_t len, TsError *err)
{
	uint64_t	index;

	return ts_group_outcome(group, ts_raft_submit(group->raft, entry, len, &index), err);
}

/* TsStorageReplicator: a WriteBatch through the log, applied here on return. */
static int
group_replicate(void *arg, const char *data, size_t len, TsError *err)
{
	TsGroup    *group = arg;
	char	   *entry = malloc(len + 1);
	int			rc;

	if (entry == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	entry[0] = ENTRY_BATCH;
	memcpy(entry + 1, data, len);
	rc = group_submit(group, entry, len + 1, err);
	free(entry);
	return rc;
}

void
ts_group_drop_dir(TsGroup *group, const char *name)
{
	uint8_t		entry[9 + PATH_MAX_LEN];
	size_t		len = strlen(name);
	TsError		err;

	if (len == 0 || len >= PATH_MAX_LEN)
		return;
	entry[0] = ENTRY_DROP_DIR;
	ts_put_be64(entry + 1, group->id);
	memcpy(entry + 9, name, len);
	if (group_submit(group, entry, 9 + len, &err) != 0)
		ts_log(TS_LOG_WARNING, "replica group: the other members keep \"%s\" until the next "
			   "leader starts: %s", name, err.message);
}

int
ts_group_ingest(TsGroup *group, char *const *paths, size_t n, TsError *err)
{
	TcBuf		entry = {0};
	int			rc = -1;

	if (!tc_buf_reserve(&entry, 5))
		goto oom;
	entry.data[0] = ENTRY_INGEST;
	ts_put_be32(entry.data + 1, (uint32_t) n);
	entry.len = 5;
	for (size_t i = 0; i < n; i++)
	{
		const char *name = ts_group_staged_name(group, paths[i], err);
		size_t		namelen = name != NULL ? strlen(name) : 0;

		if (name == NULL)
			goto done;
		if (!tc_buf_reserve(&entry, 2 + namelen))
			goto oom;
		entry.data[entry.len] = (uint8_t) (namelen >> 8);
		entry.data[entry.len + 1] = (uint8_t) namelen;
		memcpy(entry.data + entry.len + 2, name, namelen);
		entry.len += 2 + namelen;
	}
	rc = group_submit(group, entry.data, entry.len, err);
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
done:
	tc_buf_free(&entry);
	return rc;
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
	char		clean = ENTRY_CLEAN;
	uint64_t	index;
	TsError		err;

	/* lost it already: the next round retries */
	if (ts_raft_submit(group->raft, &noop, 1, &index) != TS_RAFT_APPLIED ||
		ts_raft_submit(group->raft, &clean, 1, &index) != TS_RAFT_APPLIED)
		return;
	if (group->epochs > 0)
		return;					/* cannot happen: a demoted leader restarts */
	/* nothing holds any of it: this member has served no client */
	if (group->reload(store, &err) != 0)
	{
		ts_log(TS_LOG_ERROR, "replica group: cannot lead: %s", err.message);
		return;
	}
	group->epochs++;
	atomic_store(&group->epoch, group->epochs);
	ts_log(TS_LOG_INFO, "replica group: member %llu leads, from entry %llu on: "
		   "%llu tables", (unsigned long long) group->id, (unsigned long long) index,
		   (unsigned long long) atomic_load(&store->tables_live));
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
			if (group->restart != NULL)
				group->restart(group->restart_arg);
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
	group->restart = config->restart;
	group->restart_arg = config->restart_arg;
	group->reload = config->reload;
	group->clean_staging = config->clean_staging;
	pthread_mutex_init(&group->apply_lock, NULL);
	pthread_mutex_init(&group->ship_lock, NULL);
	pthread_cond_init(&group->ship_cond, NULL);
	atomic_store(&group->sender_fd, -1);
	store->group = group;
	raft_config.machine.apply = ts_group_apply;
	raft_config.machine.snapshot = group_snapshot;
	raft_config.machine.restore = group_restore;
	raft_config.machine.bootstrapped = group_bootstrapped;
	raft_config.machine.arg = group;
	raft_config.on_fetch = ts_group_send_state;
	raft_config.fetch_arg = group;
	ts_storage_set_replicator(store, group_replicate, group);
	group->raft = ts_raft_start(&raft_config, err);
	if (group->raft == NULL)
		goto err;
	if (ts_group_shipper_start(group, err) != 0)
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

/* err: ERROR_NOT_LEADER, naming the leader if this member knows it. */
static void
group_not_leader(TsGroup *group, TsError *err)
{
	TsRaftStatus status;

	ts_raft_status(group->raft, &status);
	if (status.leader_id != 0 && status.leader_id != group->id)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
					 "tserver member %llu of a replica group does not lead it: member %llu "
					 "(raft address %s) does; this member has applied entry %llu",
					 (unsigned long long) group->id, (unsigned long long) status.leader_id,
					 status.leader_address, (unsigned long long) status.applied);
	else
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
					 "tserver member %llu of a replica group does not lead it, and no member "
					 "leads it yet (an election, or too few members reachable); this member "
					 "has applied entry %llu",
					 (unsigned long long) group->id, (unsigned long long) status.applied);
}

bool
ts_group_serving(TsGroup *group, uint64_t epoch, TsError *err)
{
	uint64_t	now = atomic_load(&group->epoch);

	if (now != 0 && (epoch == 0 || epoch == now))
		return true;
	group_not_leader(group, err);
	return false;
}

int
ts_group_barrier(TsGroup *group, TsError *err)
{
	char		noop = ENTRY_NOOP;

	return group_submit(group, &noop, 1, err);
}

int
ts_group_change(TsGroup *group, int change, uint64_t id, const char *address,
				TsRaftStatus *status, TsError *err)
{
	char		why[160];
	TsRaftOutcome outcome = TS_RAFT_APPLIED;

	if (change != TS_GROUP_STATUS)
	{
		outcome = ts_raft_change(group->raft, (TsRaftChange) change, id, address,
								 why, sizeof(why));
		if (outcome == TS_RAFT_NOT_LEADER)
		{
			group_not_leader(group, err);
			return -1;
		}
		if (outcome != TS_RAFT_APPLIED)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "the replica group refused the change of member %llu: %s",
						 (unsigned long long) id, why);
			return -1;
		}
		ts_log(TS_LOG_INFO, "replica group: member %llu %s", (unsigned long long) id,
			   change == TS_RAFT_ADD ? "added, as a standby" :
			   change == TS_RAFT_PROMOTE ? "promoted to a voter" : "removed");
	}
	ts_raft_status(group->raft, status);
	return 0;
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
	group->store->group = NULL;
	if (group->watcher_started)
		pthread_join(group->watcher, NULL);
	atomic_store(&group->epoch, 0);
	/* a file being shipped ends (its entries applied or refused) first */
	ts_group_shipper_stop(group);
	if (group->raft != NULL)
		ts_raft_stop(group->raft);
	ts_group_sender_stop(group);
	ts_group_forget_unsynced(group);
	pthread_mutex_destroy(&group->apply_lock);
	free(group);
}
