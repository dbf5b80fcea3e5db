/*
 * ts_group_staged.c
 *		The staged files FILE entries wrote whose chunks are not synced
 *		yet, and their syncs: a chunk's index is recorded only once its
 *		file is durable (ts_group.c's file comment, and
 *		docs/replication.md#durability-a-power-cut-of-every-member).  All
 *		under the group's apply lock.
 */
#include "ts_group_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Sync the staged files FILE entries wrote since their last sync, and
 * their directories; 0, or -1 with err.  Under the apply lock.
 */
int
ts_group_sync_staged(TsGroup *group, TsError *err)
{
	unsigned	n = group->nunsynced;

	for (unsigned i = 0; i < n; i++)
	{
		char	   *path = group->unsynced[i];
		int			fd = open(path, O_WRONLY | O_CLOEXEC);

		/* one removed since is no entry's any more */
		if (fd < 0 && errno != ENOENT)
			goto io_error;
		if (fd >= 0 && fdatasync(fd) != 0)
		{
			int			saved = errno;

			close(fd);
			errno = saved;
			goto io_error;
		}
		if (fd >= 0)
			close(fd);
		*strrchr(path, '/') = '\0';
		ts_sync_dir(path);
		free(path);
		group->unsynced[i] = NULL;
		continue;

io_error:
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "could not sync \"%s\": %s",
					 path, strerror(errno));
		/* the rest stay listed: the next entry tries again */
		memmove(group->unsynced, group->unsynced + i, (n - i) * sizeof(char *));
		group->nunsynced = n - i;
		return -1;
	}
	if (n > 0)
		ts_sync_dir(group->store->staging_dir);
	group->nunsynced = 0;
	return 0;
}

/*
 * path, whose chunk was just written, is synced (its last chunk): or to be
 * synced before any later entry's index is recorded.  0, or -1 with err.
 */
int
ts_group_note_unsynced(TsGroup *group, const char *path, bool synced, TsError *err)
{
	char	   *copy;

	for (unsigned i = 0; i < group->nunsynced; i++)
	{
		if (strcmp(group->unsynced[i], path) != 0)
			continue;
		if (!synced)
			return 0;
		free(group->unsynced[i]);
		group->unsynced[i] = group->unsynced[--group->nunsynced];
		return 0;
	}
	if (synced)
		return 0;
	if (group->nunsynced == STAGED_UNSYNCED_MAX && ts_group_sync_staged(group, err) != 0)
		return -1;
	if ((copy = strdup(path)) == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	group->unsynced[group->nunsynced++] = copy;
	return 0;
}

/* See ts_group_int.h. */
int
ts_group_sync_applied(TsGroup *group, TsError *err)
{
	if (ts_group_sync_staged(group, err) != 0)
		return -1;
	return ts_storage_mark_applied(group->store, ts_storage_applied(group->store), true, err);
}

/* See ts_group_int.h. */
void
ts_group_forget_unsynced(TsGroup *group)
{
	for (unsigned i = 0; i < group->nunsynced; i++)
		free(group->unsynced[i]);
	group->nunsynced = 0;
}
