/*
 * ts_group_catchup.c
 *		A member too far behind the group's log catches up from another
 *		member's state (docs/replication.md#catching-up): the sender's
 *		RocksDB checkpoint and staging directory, streamed over a proven
 *		connection to its raft port; the state put in place of the
 *		member's own at its next start.
 *
 * libraft keeps the log after its last snapshot only (ts_main.c sets how
 * much), and a snapshot here is small: the index the store holds every
 * entry up to, and the members then.  A member whose log ends before the
 * leader's first kept entry (away too long, or new and empty) is sent
 * that snapshot; its restore (ts_group.c) calls ts_group_catch_up, which
 * fetches a member's whole state, taken after some entry N at or past the
 * snapshot's, and restarts.  Entries up to N are then skipped as replayed
 * (the store's applied index says N), the others applied: the member ends
 * where the group is.
 *
 * The state sent is what the entries up to N made, exactly: the sender
 * holds its apply lock while RocksDB takes its checkpoint (hard links of
 * its SST files, a copy of its WAL; the memtables flushed before, holding
 * nothing) and while every file of its staging directory is linked beside
 * it.  The staging directory matters: a spilled session's files arrive in
 * entries before the one that ingests them, and an entry after N may
 * ingest files that entries before N wrote.  A leader's own session files
 * in progress come too; entries after N rewrite their chunks.
 *
 * The stream, after the raft handshake:
 *
 *	"tcCATCH1"
 *	'F' | name length (2) | name | size (8) | the bytes     for each file
 *	'E' | N (8)
 *
 * integers big-endian; a name is a RocksDB file's ("000012.sst") or a
 * staged one ("staging/DIR/NAME").  The receiver writes them into
 * DATA/catchup.tmp, syncs each, writes CATCHUP there saying N, and
 * renames the directory DATA/catchup: complete.  At the next start, before
 * RocksDB opens, ts_group_catchup_finish puts it in place:
 *
 *	CATCHUP        the store's RocksDB files and staging directory removed,
 *	               then CATCHUP renamed CATCHUP.moving
 *	CATCHUP.moving every file moved up into the data directory, then the
 *	               directory removed
 *
 * so that a crash at any point finishes the same way at the next start.
 *
 * The restarted member's libraft still holds the snapshot it was sent, so
 * it asks the leader for the entries after that one, or for its latest
 * snapshot, which the store, at N, covers only if the leader took none
 * since N.  Under a steady load the group goes past a few hundred entries
 * while a state is sent and the member restarts: the member would fetch
 * again, and again.  So the sender takes no snapshot from the moment it
 * takes the state until HOLD_AFTER_S after it sent it (ts_raft_hold_snapshots:
 * the log is not truncated meanwhile, up to 1 GB of entries); it is the
 * leader, asked first, whose log the member then reads.
 */
#include "ts_group_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tc_net.h"
#include "ts_clock.h"
#include "ts_files.h"
#include "ts_key.h"
#include "ts_log.h"

#define STATE_MAGIC "tcCATCH1"
#define STATE_MAGIC_SIZE 8
#define SEND_DIR "catchup-out"	/* the sender's links, under the data dir */
#define FETCH_DIR "catchup.tmp" /* the receiver's, until complete */
#define DONE_DIR "catchup"		/* complete, until in place */
#define MARK "CATCHUP"
#define MARK_MOVING "CATCHUP.moving"
#define NAME_MAX_LEN 300		/* "staging/" and a staged path */
#define HANDSHAKE_MS 5000
#define IO_TIMEOUT_S 60			/* a stalled peer, either way */
#define START_TRIES_S 60		/* at a start, keep trying so long */
#define COPY_BUF (1024 * 1024)
#define HOLD_SENDING_S 3600		/* snapshots held while a state is sent ... */
#define HOLD_AFTER_S 30			/* ... and after, for the peer's restart */

/*
 * A path from fmt into buf: a data directory's name leaves room for ours
 * (PATH_MAX), and a path cut short fails to open.
 */
static void path_of(char *buf, size_t size, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
static void
path_of(char *buf, size_t size, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, size, fmt, args);
	va_end(args);
}

/* ---- the stream's bytes ---- */

static void
set_io_timeout(int fd)
{
	(void) tc_net_set_send_timeout(fd, IO_TIMEOUT_S, NULL, 0);
	(void) tc_net_set_recv_timeout(fd, IO_TIMEOUT_S, NULL, 0);
}

/*
 * Whether name is one the stream may carry: a plain file name of RocksDB's,
 * or "staging/DIR/NAME".
 */
static bool
state_name_valid(const char *name, size_t len)
{
	if (len > 8 && memcmp(name, "staging/", 8) == 0)
		return ts_group_path_valid(name + 8, len - 8);
	return len > 0 && len < 256 && name[0] != '.' && memchr(name, '/', len) == NULL &&
		memchr(name, '\0', len) == NULL;
}

/* ---- the sender ---- */

/* Send the file dir/name as name (prefix, then name); false if it failed. */
static bool
send_file(int fd, const char *dir, const char *prefix, const char *name)
{
	char		path[PATH_MAX];
	uint8_t		head[1 + 2 + NAME_MAX_LEN + 8];
	size_t		len = strlen(prefix) + strlen(name);
	struct stat st;
	off_t		off = 0;
	int			file;
	bool		ok;

	path_of(path, sizeof(path), "%s/%s", dir, name);
	if (len > NAME_MAX_LEN || (file = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (fstat(file, &st) != 0)
	{
		close(file);
		return false;
	}
	head[0] = 'F';
	head[1] = (uint8_t) (len >> 8);
	head[2] = (uint8_t) len;
	snprintf((char *) head + 3, NAME_MAX_LEN + 1, "%s%s", prefix, name);
	ts_put_be64(head + 3 + len, (uint64_t) st.st_size);
	ok = tc_net_write_all(fd, head, 3 + len + 8);
	while (ok && off < st.st_size)
	{
		ssize_t		n = sendfile(fd, file, &off, (size_t) (st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
	}
	close(file);
	return ok;
}

/* Send every regular file of dir, named prefix + its name. */
static bool
send_dir(int fd, const char *dir, const char *prefix)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	bool		ok = d != NULL;

	while (ok && (e = readdir(d)) != NULL)
		if (e->d_type == DT_REG)
			ok = send_file(fd, dir, prefix, e->d_name);
	if (d != NULL)
		closedir(d);
	return ok;
}

/*
 * Link every file of the staging directory (DIR/NAME) under to/staging;
 * 0, or -1.  Under the apply lock.
 */
static int
link_staging(const char *staging, const char *to)
{
	DIR		   *d = opendir(staging);
	struct dirent *e;
	int			rc = d != NULL ? 0 : -1;

	while (rc == 0 && (e = readdir(d)) != NULL)
	{
		char		from_dir[PATH_MAX];
		char		to_dir[PATH_MAX];
		DIR		   *sub;
		struct dirent *f;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		path_of(from_dir, sizeof(from_dir), "%s/%s", staging, e->d_name);
		path_of(to_dir, sizeof(to_dir), "%s/staging/%s", to, e->d_name);
		if (mkdir(to_dir, 0700) != 0 || (sub = opendir(from_dir)) == NULL)
		{
			rc = -1;
			break;
		}
		while (rc == 0 && (f = readdir(sub)) != NULL)
		{
			char		a[PATH_MAX];
			char		b[PATH_MAX];

			if (f->d_type != DT_REG)
				continue;
			path_of(a, sizeof(a), "%s/%s", from_dir, f->d_name);
			path_of(b, sizeof(b), "%s/%s", to_dir, f->d_name);
			/* a file removed meanwhile is no session's any more */
			if (link(a, b) != 0 && errno != ENOENT)
				rc = -1;
		}
		closedir(sub);
	}
	if (d != NULL)
		closedir(d);
	return rc;
}

/*
 * Take the state into out (made here): RocksDB's checkpoint in out/db,
 * links of the staging files in out/staging; the applied index it holds
 * into *applied.  0, or -1 with err.
 */
static int
take_state(TsGroup *group, const char *out, uint64_t *applied, TsError *err)
{
	TsStore    *store = group->store;
	rocksdb_checkpoint_t *checkpoint;
	char	   *errptr = NULL;
	char		path[PATH_MAX];
	int			rc = 0;

	path_of(path, sizeof(path), "%s/staging", out);
	if (mkdir(out, 0700) != 0 || mkdir(path, 0700) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not create \"%s\": %s",
					 path, strerror(errno));
		return -1;
	}
	if ((checkpoint = ts_storage_checkpoint_begin(store, err)) == NULL)
		return -1;
	path_of(path, sizeof(path), "%s/db", out);
	pthread_mutex_lock(&group->apply_lock);
	/* the checkpoint's store records N itself: the staged chunks synced */
	rc = ts_group_sync_applied(group, err);
	*applied = ts_storage_applied_durable(store);
	if (rc == 0)
		rocksdb_checkpoint_create(checkpoint, path, UINT64_MAX, &errptr);
	if (errptr != NULL)
		ts_error_rocksdb(err, "could not take a checkpoint", errptr);
	else if (rc == 0 && (rc = link_staging(store->staging_dir, out)) != 0)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not link the staging directory's files: %s", strerror(errno));
	pthread_mutex_unlock(&group->apply_lock);
	rocksdb_checkpoint_object_destroy(checkpoint);
	return errptr == NULL ? rc : -1;
}

static void *
sender_main(void *arg)
{
	TsGroup    *group = arg;
	int			fd = atomic_load(&group->sender_fd);
	char		out[PATH_MAX];
	char		sub[PATH_MAX];
	uint64_t	applied = 0;
	uint64_t	start = ts_monotonic_us();
	TsError		err;
	bool		ok;

	memset(&err, 0, sizeof(err));
	path_of(out, sizeof(out), "%s/%s", group->store->dir, SEND_DIR);
	(void) ts_remove_tree(out);
	/* the log after the state stays until the peer is back to ask for it */
	ts_raft_hold_snapshots(group->raft, HOLD_SENDING_S);
	ok = take_state(group, out, &applied, &err) == 0;
	if (!ok)
		ts_log(TS_LOG_WARNING, "replica group: could not take this member's state for member "
			   "%llu: %s", (unsigned long long) group->sender_peer, err.message);
	else
	{
		DIR		   *d;
		struct dirent *e;
		uint8_t		end[9];

		set_io_timeout(fd);
		ok = tc_net_write_all(fd, STATE_MAGIC, STATE_MAGIC_SIZE);
		path_of(sub, sizeof(sub), "%s/db", out);
		ok = ok && send_dir(fd, sub, "");
		path_of(sub, sizeof(sub), "%s/staging", out);
		d = ok ? opendir(sub) : NULL;
		while (d != NULL && ok && (e = readdir(d)) != NULL)
		{
			char		dir[PATH_MAX];
			char		prefix[PATH_MAX];

			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			path_of(dir, sizeof(dir), "%s/%s", sub, e->d_name);
			path_of(prefix, sizeof(prefix), "staging/%s/", e->d_name);
			ok = send_dir(fd, dir, prefix);
		}
		if (d != NULL)
			closedir(d);
		end[0] = 'E';
		ts_put_be64(end + 1, applied);
		ok = ok && tc_net_write_all(fd, end, sizeof(end));
		if (ok)
			ts_log(TS_LOG_INFO, "replica group: this member's state up to entry %llu sent to "
				   "member %llu in %.3f s", (unsigned long long) applied,
				   (unsigned long long) group->sender_peer, (ts_monotonic_us() - start) / 1e6);
		else
			ts_log(TS_LOG_WARNING, "replica group: sending this member's state to member %llu "
				   "failed: %s", (unsigned long long) group->sender_peer, strerror(errno));
	}
	(void) ts_remove_tree(out);
	ts_raft_hold_snapshots(group->raft, ok ? HOLD_AFTER_S : 0);
	atomic_store(&group->sender_fd, -1);
	close(fd);
	atomic_store(&group->sending, false);
	return NULL;
}

void
ts_group_send_state(void *arg, int fd, uint64_t peer)
{
	TsGroup    *group = arg;

	if (atomic_load(&group->stopping) || atomic_load(&group->sending))
	{
		ts_log(TS_LOG_INFO, "replica group: member %llu asked for this member's state while "
			   "it sends it already: refused", (unsigned long long) peer);
		close(fd);
		return;
	}
	if (group->sender_started)
		pthread_join(group->sender, NULL);
	group->sender_started = false;
	group->sender_peer = peer;
	atomic_store(&group->sending, true);
	atomic_store(&group->sender_fd, fd);
	ts_log(TS_LOG_INFO, "replica group: member %llu asked for this member's state",
		   (unsigned long long) peer);
	if (pthread_create(&group->sender, NULL, sender_main, group) != 0)
	{
		atomic_store(&group->sender_fd, -1);
		atomic_store(&group->sending, false);
		close(fd);
		return;
	}
	group->sender_started = true;
}

void
ts_group_sender_stop(TsGroup *group)
{
	int			fd = atomic_load(&group->sender_fd);

	if (fd >= 0)
		(void) shutdown(fd, SHUT_RDWR);
	if (group->sender_started)
		pthread_join(group->sender, NULL);
	group->sender_started = false;
}

/* ---- the receiver ---- */

/* Receive one file of size bytes into path, synced; false if it failed. */
static bool
receive_file(int fd, const char *path, uint64_t size, uint8_t *buf)
{
	int			file = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bool		ok = file >= 0;

	while (ok && size > 0)
	{
		size_t		want = size < COPY_BUF ? (size_t) size : COPY_BUF;

		ok = tc_net_read_all(fd, buf, want) && tc_net_write_all(file, buf, want);
		size -= want;
	}
	ok = ok && fsync(file) == 0;
	if (file >= 0)
		close(file);
	return ok;
}

/*
 * Receive a member's state from fd into the directory tmp (made here);
 * the index it holds into *applied.  0, or -1 with err.
 */
static int
receive_state(int fd, const char *tmp, uint64_t *applied, TsError *err)
{
	uint8_t    *buf = malloc(COPY_BUF);
	char		magic[STATE_MAGIC_SIZE];
	char		path[PATH_MAX];
	uint64_t	files = 0,
				bytes = 0;
	int			rc = -1;

	path_of(path, sizeof(path), "%s/staging", tmp);
	if (buf == NULL || mkdir(tmp, 0700) != 0 || mkdir(path, 0700) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not create \"%s\": %s",
					 path, strerror(errno));
		free(buf);
		return -1;
	}
	set_io_timeout(fd);
	if (!tc_net_read_all(fd, magic, sizeof(magic)) || memcmp(magic, STATE_MAGIC, sizeof(magic)) != 0)
		goto broken;
	for (;;)
	{
		uint8_t		head[3];
		char		name[NAME_MAX_LEN + 1];
		uint8_t		size[8];
		size_t		len;

		if (!tc_net_read_all(fd, head, 1))
			goto broken;
		if (head[0] == 'E')
		{
			if (!tc_net_read_all(fd, size, 8))
				goto broken;
			*applied = ts_get_be64(size);
			break;
		}
		if (head[0] != 'F' || !tc_net_read_all(fd, head + 1, 2))
			goto broken;
		len = (size_t) head[1] << 8 | head[2];
		if (len > NAME_MAX_LEN || !tc_net_read_all(fd, name, len) || !state_name_valid(name, len) ||
			!tc_net_read_all(fd, size, 8))
			goto broken;
		name[len] = '\0';
		if (strncmp(name, "staging/", 8) == 0)
		{
			/* its directory, made at its first file */
			path_of(path, sizeof(path), "%s/%s", tmp, name);
			*strrchr(path, '/') = '\0';
			if (mkdir(path, 0700) != 0 && errno != EEXIST)
				goto io_error;
		}
		path_of(path, sizeof(path), "%s/%s", tmp, name);
		if (!receive_file(fd, path, ts_get_be64(size), buf))
			goto io_error;
		files++;
		bytes += ts_get_be64(size);
	}
	ts_log(TS_LOG_INFO, "replica group: received a state up to entry %llu: %llu files, "
		   "%llu bytes", (unsigned long long) *applied, (unsigned long long) files,
		   (unsigned long long) bytes);
	rc = 0;
	goto done;

broken:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "the state's stream broke off or is malformed (after %llu files): %s",
				 (unsigned long long) files, errno != 0 ? strerror(errno) : "bad bytes");
	goto done;
io_error:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not write \"%s\": %s", path,
				 strerror(errno));
done:
	free(buf);
	return rc;
}

/* Sync every directory of a received state, then its own. */
static void
sync_state_dirs(const char *tmp)
{
	char		path[PATH_MAX];
	DIR		   *d;
	struct dirent *e;

	path_of(path, sizeof(path), "%s/staging", tmp);
	if ((d = opendir(path)) != NULL)
	{
		while ((e = readdir(d)) != NULL)
		{
			char		sub[PATH_MAX];

			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			path_of(sub, sizeof(sub), "%s/%s", path, e->d_name);
			ts_sync_dir(sub);
		}
		closedir(d);
	}
	ts_sync_dir(path);
	ts_sync_dir(tmp);
}

/*
 * Fetch the state of member id at address into DATA/catchup, whole: 0, or
 * -1 with err (a state behind index refused).
 */
static int
fetch_from(TsGroup *group, TsRaft *raft, uint64_t id, const char *address, uint64_t index,
		   TsError *err)
{
	const char *data = group->store->dir;
	char		tmp[PATH_MAX];
	char		done[PATH_MAX];
	char		mark[PATH_MAX];
	char		text[32];
	uint64_t	applied = 0;
	int			fd;
	int			rc;

	path_of(tmp, sizeof(tmp), "%s/%s", data, FETCH_DIR);
	path_of(done, sizeof(done), "%s/%s", data, DONE_DIR);
	(void) ts_remove_tree(tmp);
	if ((fd = ts_raft_fetch_open(raft, id, address, HANDSHAKE_MS, err)) < 0)
		return -1;
	rc = receive_state(fd, tmp, &applied, err);
	close(fd);
	if (rc == 0 && applied < index)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "member %llu holds the log up to entry %llu only", (unsigned long long) id,
					 (unsigned long long) applied);
		rc = -1;
	}
	if (rc == 0)
	{
		path_of(mark, sizeof(mark), "%s/%s", tmp, MARK);
		snprintf(text, sizeof(text), "%" PRIu64 "\n", applied);
		sync_state_dirs(tmp);
		if (ts_file_write_synced(mark, text, strlen(text)) != 0 || rename(tmp, done) != 0)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not complete \"%s\": %s", done, strerror(errno));
			rc = -1;
		}
		else
			ts_sync_dir(data);
	}
	if (rc != 0)
		(void) ts_remove_tree(tmp);
	return rc;
}

/* Add member (id, address) to the list unless it is there, or is us. */
static void
candidate_add(TsGroup *group, TsRaftMember *list, unsigned *n, uint64_t id, const char *address)
{
	if (id == 0 || id == group->id || address[0] == '\0' || *n >= TS_RAFT_MEMBERS_MAX * 2)
		return;
	for (unsigned i = 0; i < *n; i++)
		if (list[i].id == id)
			return;
	list[*n].id = id;
	snprintf(list[*n].address, sizeof(list[*n].address), "%s", address);
	(*n)++;
}

int
ts_group_catch_up(TsGroup *group, TsRaft *raft, uint64_t index, const TsRaftMember *members,
				  unsigned nmembers, bool start)
{
	TsRaftMember now[TS_RAFT_MEMBERS_MAX];
	TsRaftMember list[TS_RAFT_MEMBERS_MAX * 2];
	uint64_t	leader = 0;
	unsigned	nnow = ts_raft_members_now(raft, now, TS_RAFT_MEMBERS_MAX, &leader);
	unsigned	n = 0;
	time_t		until = time(NULL) + (start ? START_TRIES_S : 0);
	TsError		err;

	/* the leader first: it holds every committed entry */
	for (unsigned i = 0; i < nnow; i++)
		if (now[i].id == leader)
			candidate_add(group, list, &n, now[i].id, now[i].address);
	for (unsigned i = 0; i < nnow; i++)
		candidate_add(group, list, &n, now[i].id, now[i].address);
	for (unsigned i = 0; i < nmembers; i++)
		candidate_add(group, list, &n, members[i].id, members[i].address);
	ts_log(TS_LOG_WARNING, "replica group: member %llu holds the log up to entry %llu, and the "
		   "group's goes on from entry %llu: fetching another member's state",
		   (unsigned long long) group->id,
		   (unsigned long long) ts_storage_applied(group->store), (unsigned long long) index);
	do
	{
		for (unsigned i = 0; i < n && !atomic_load(&group->stopping); i++)
		{
			memset(&err, 0, sizeof(err));
			if (fetch_from(group, raft, list[i].id, list[i].address, index, &err) == 0)
			{
				ts_log(TS_LOG_WARNING, "replica group: member %llu's state fetched from member "
					   "%llu: restarting to use it", (unsigned long long) group->id,
					   (unsigned long long) list[i].id);
				group->restart(group->restart_arg);
				return -1;		/* not reached: restart does not return */
			}
			ts_log(TS_LOG_WARNING, "replica group: could not fetch the state of member %llu: %s",
				   (unsigned long long) list[i].id, err.message);
		}
		if (time(NULL) < until)
			sleep(1);
	} while (time(NULL) < until && !atomic_load(&group->stopping));
	ts_log(TS_LOG_ERROR, "replica group: no member sent its state to member %llu (%u asked)%s",
		   (unsigned long long) group->id, n,
		   start ? ": start it again once another member runs, or restore it from a backup "
		   "of another (tserver-cli backup)" : "; the leader sends it again later");
	return -1;
}

/* ---- at the next start ---- */

/* Whether name is a file RocksDB keeps in its directory. */
static bool
rocksdb_file(const char *name)
{
	size_t		len = strlen(name);
	size_t		digits = strspn(name, "0123456789");

	if (digits > 0 && (strcmp(name + digits, ".sst") == 0 || strcmp(name + digits, ".log") == 0 ||
					   strcmp(name + digits, ".blob") == 0))
		return true;
	return strcmp(name, "CURRENT") == 0 || strcmp(name, "IDENTITY") == 0 ||
		strcmp(name, "LOCK") == 0 || strcmp(name, "LOG") == 0 ||
		strncmp(name, "LOG.old.", 8) == 0 || strncmp(name, "MANIFEST-", 9) == 0 ||
		strncmp(name, "OPTIONS-", 8) == 0 || (len > 6 && strcmp(name + len - 6, ".dbtmp") == 0);
}

/* Remove the store's own RocksDB files and its staging directory. */
static int
remove_store(const char *data, TsError *err)
{
	DIR		   *d = opendir(data);
	struct dirent *e;
	char		path[PATH_MAX];

	if (d == NULL)
		goto failed;
	while ((e = readdir(d)) != NULL)
	{
		if (!rocksdb_file(e->d_name))
			continue;
		path_of(path, sizeof(path), "%s/%s", data, e->d_name);
		if (unlink(path) != 0 && errno != ENOENT)
		{
			closedir(d);
			goto failed;
		}
	}
	closedir(d);
	path_of(path, sizeof(path), "%s/staging", data);
	if (ts_remove_tree(path) != 0 && errno != ENOENT)
		goto failed;
	ts_sync_dir(data);
	return 0;

failed:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not remove the store's files in \"%s\" to put a fetched state in "
				 "their place: %s", data, strerror(errno));
	return -1;
}

/* Move everything of done but the mark up into data. */
static int
move_up(const char *data, const char *done, TsError *err)
{
	DIR		   *d = opendir(done);
	struct dirent *e;
	char		from[PATH_MAX];
	char		to[PATH_MAX];

	if (d == NULL)
		goto failed;
	while ((e = readdir(d)) != NULL)
	{
		if (e->d_name[0] == '.' || strcmp(e->d_name, MARK_MOVING) == 0)
			continue;
		path_of(from, sizeof(from), "%s/%s", done, e->d_name);
		path_of(to, sizeof(to), "%s/%s", data, e->d_name);
		if (strcmp(e->d_name, "staging") == 0)
			(void) ts_remove_tree(to);	/* made by nothing since, but be sure */
		if (rename(from, to) != 0)
		{
			closedir(d);
			goto failed;
		}
	}
	closedir(d);
	ts_sync_dir(data);
	return 0;

failed:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not move the fetched state \"%s\" into \"%s\": %s", done, data,
				 strerror(errno));
	return -1;
}

int
ts_group_catchup_finish(const char *data, TsError *err)
{
	char		path[PATH_MAX];
	char		done[PATH_MAX];
	char		mark[PATH_MAX];
	char		moving[PATH_MAX];
	struct stat st;

	path_of(path, sizeof(path), "%s/%s", data, FETCH_DIR);
	(void) ts_remove_tree(path);	/* a fetch a crash cut off */
	path_of(path, sizeof(path), "%s/%s", data, SEND_DIR);
	(void) ts_remove_tree(path);
	path_of(done, sizeof(done), "%s/%s", data, DONE_DIR);
	path_of(mark, sizeof(mark), "%s/%s", done, MARK);
	path_of(moving, sizeof(moving), "%s/%s", done, MARK_MOVING);
	if (stat(mark, &st) == 0)
	{
		if (remove_store(data, err) != 0)
			return -1;
		if (rename(mark, moving) != 0)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not rename \"%s\": %s",
						 mark, strerror(errno));
			return -1;
		}
		ts_sync_dir(done);
	}
	if (stat(moving, &st) != 0)
	{
		if (ts_remove_tree(done) != 0 && errno != ENOENT)
			ts_log(TS_LOG_WARNING, "could not remove \"%s\": %s", done, strerror(errno));
		return 0;
	}
	if (move_up(data, done, err) != 0)
		return -1;
	if (unlink(moving) != 0 || rmdir(done) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not remove \"%s\": %s",
					 done, strerror(errno));
		return -1;
	}
	ts_sync_dir(data);
	ts_log(TS_LOG_INFO, "replica group: a state fetched from another member is in place in "
		   "\"%s\"", data);
	return 0;
}
