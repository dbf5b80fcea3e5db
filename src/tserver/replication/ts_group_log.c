/*
 * ts_group_log.c
 *		What the replica group's entries and submits share (ts_group.c
 *		applies them, ts_group_ship.c ships files through them,
 *		ts_group_catchup.c fetches a state): a staged file's path as an
 *		entry may name it, and a submit's outcome as the client's error.
 */
#include "ts_group_int.h"

#include <string.h>

/*
 * Whether path (len bytes) names a file in a directory under the staging
 * directory, "DIR/NAME": nothing else may come from the log.
 */
bool
ts_group_path_valid(const char *path, size_t len)
{
	const char *slash = memchr(path, '/', len);

	return len > 0 && len < PATH_MAX_LEN && memchr(path, '\0', len) == NULL &&
		slash != NULL && slash != path && slash != path + len - 1 &&
		memchr(slash + 1, '/', len - (size_t) (slash + 1 - path)) == NULL &&
		path[0] != '.' && slash[1] != '.';
}

/* See ts_group_int.h. */
int
ts_group_outcome(TsGroup *group, TsRaftOutcome outcome, TsError *err)
{
	TsRaftStatus status;

	switch (outcome)
	{
		case TS_RAFT_APPLIED:
			return 0;
		case TS_RAFT_NOT_LEADER:
		case TS_RAFT_UNKNOWN:
			ts_raft_status(group->raft, &status);
			if (status.leader_id != 0)
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
							 "this tserver lost the lead of its replica group%s (member %llu "
							 "leads)", outcome == TS_RAFT_UNKNOWN ?
							 " while the write was being replicated: it may be applied or not" : "",
							 (unsigned long long) status.leader_id);
			else
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_NOT_LEADER,
							 "this tserver lost the lead of its replica group%s (no member "
							 "leads it yet)", outcome == TS_RAFT_UNKNOWN ?
							 " while the write was being replicated: it may be applied or not" : "");
			return -1;
		case TS_RAFT_FAILED:
			break;
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "the replica group's log refused the write (the member is stopping, "
				 "or its disk failed)");
	return -1;
}
