/*
 * ts_merge.c
 *		A session's runs: keeping their sparse indexes, compacting them into
 *		one when there are RUN_FAN_IN of them, and merging them into SST
 *		files at commit, in parts of the key space merged at the same time
 *		(ts_run.c does the merging itself).  The design is described in
 *		ts_session.c.
 */
#include "ts_staging.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_clock.h"
#include "ts_log.h"

/* The run readers' buffers of one commit's merge, all parts together */
#define MERGE_READ_BYTES ((uint64_t) 128 * 1024 * 1024)

TsHistogram ts_merge_durations;

/*
 * Paths of the session's runs, [nruns] strings to free with free_paths;
 * none (but not NULL) when the last buffer alone is merged.
 */
static char **
run_paths(const TsSession *session)
{
	char	  **paths = calloc(session->nruns > 0 ? session->nruns : 1, sizeof(char *));
	char		path[SESSION_PATH_SIZE];

	for (uint32_t r = 0; paths != NULL && r < session->nruns; r++)
	{
		ts_session_run_path(session, r, path, sizeof(path));
		if ((paths[r] = strdup(path)) == NULL)
		{
			while (r-- > 0)
				free(paths[r]);
			free(paths);
			return NULL;
		}
	}
	return paths;
}

/* Free paths[n] of run_paths. */
static void
free_paths(char **paths, uint32_t n)
{
	for (uint32_t i = 0; paths != NULL && i < n; i++)
		free(paths[i]);
	free(paths);
}

/*
 * Keep the index of the run just written, as run session->nruns; 0, or -1
 * when out of memory (index is then still the caller's).
 */
int
ts_merge_add_run(TsSession *session, TsRunIndex *index)
{
	if (session->nruns == session->run_indexes_cap)
	{
		uint32_t	cap = session->run_indexes_cap ? session->run_indexes_cap * 2 : 8;
		TsRunIndex *grown = realloc(session->run_indexes, cap * sizeof(TsRunIndex));

		if (grown == NULL)
			return -1;
		session->run_indexes = grown;
		session->run_indexes_cap = cap;
	}
	session->run_indexes[session->nruns++] = *index;
	memset(index, 0, sizeof(*index));
	return 0;
}

/* A TsRunPut into a run being written: the compaction's output. */
static int
run_writer_put(void *arg, const uint8_t *key, uint32_t keylen,
			   const uint8_t *value, uint32_t valuelen, TsError *err)
{
	if (ts_run_writer_put(arg, key, keylen, value, valuelen) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not write a merged staging run: %s", strerror(errno));
	return -1;
}

/*
 * Merge all runs into one; drop: none of the records of table drop_id (the
 * runs' keys outside the table's range, merged in two ranges).
 */
static int
merge_into_one(TsSession *session, bool drop, uint32_t drop_id, TsError *err)
{
	TsRunWriter writer;
	TcBuf		table_lo = {0};
	TcBuf		table_hi = {0};
	char		merged[SESSION_PATH_SIZE];
	char		path[SESSION_PATH_SIZE];
	char	  **paths = run_paths(session);
	int			result;

	if (paths == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	snprintf(merged, sizeof(merged), "%s/run-merged", session->dir);
	if (ts_run_writer_open(&writer, merged) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create \"%s\": %s", merged, strerror(errno));
		free_paths(paths, session->nruns);
		return -1;
	}
	if (!drop)
		result = ts_run_merge(paths, session->run_indexes, session->nruns, NULL, NULL,
							  &session->conflicts, run_writer_put, &writer, err);
	else if (!tc_buf_reserve(&table_lo, TS_TABLE_ID_SIZE) ||
			 !tc_buf_reserve(&table_hi, TS_TABLE_ID_SIZE))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		result = -1;
	}
	else
	{
		/* [first, table) and [table + 1, last]: keys begin with the table id */
		ts_put_be32(table_lo.data, drop_id);
		table_lo.len = TS_TABLE_ID_SIZE;
		result = ts_run_merge(paths, session->run_indexes, session->nruns, NULL, &table_lo,
							  &session->conflicts, run_writer_put, &writer, err);
		if (result == 0 && drop_id != UINT32_MAX)
		{
			ts_put_be32(table_hi.data, drop_id + 1);
			table_hi.len = TS_TABLE_ID_SIZE;
			result = ts_run_merge(paths, session->run_indexes, session->nruns, &table_hi, NULL,
								  &session->conflicts, run_writer_put, &writer, err);
		}
	}
	tc_buf_free(&table_lo);
	tc_buf_free(&table_hi);
	free_paths(paths, session->nruns);
	if (ts_run_writer_close(&writer) != 0 && result == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not write \"%s\": %s", merged, strerror(errno));
		result = -1;
	}
	if (result != 0)
	{
		ts_run_index_free(&writer.index);
		return -1;
	}

	/* the merged run replaces them all, as the oldest */
	for (uint32_t r = 0; r < session->nruns; r++)
	{
		ts_session_run_path(session, r, path, sizeof(path));
		unlink(path);
		ts_run_index_free(&session->run_indexes[r]);
	}
	ts_log(TS_LOG_DEBUG, "session %llu: merged %u runs into one (%llu bytes)",
		   (unsigned long long) session->id, session->nruns,
		   (unsigned long long) writer.written);
	session->nruns = 0;
	(void) ts_merge_add_run(session, &writer.index);	/* has room */
	ts_session_run_path(session, 0, path, sizeof(path));
	if (rename(merged, path) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not rename \"%s\": %s", merged, strerror(errno));
		return -1;
	}
	ts_session_account_spilled(session, session->direct_bytes + writer.written);
	return 0;
}

/*
 * Merge all runs into one, so that no merge ever opens more than
 * RUN_FAN_IN files however large the session grows: files and read
 * buffers stay bounded, at the cost of writing the merged data once more.
 */
int
ts_merge_compact_runs(TsSession *session, TsError *err)
{
	return merge_into_one(session, false, 0, err);
}

/*
 * A TRUNCATE staged after the session wrote table_id: its runs merged into
 * one without the table's records (none when there are no runs).
 */
int
ts_merge_drop_table(TsSession *session, uint32_t table_id, TsError *err)
{
	if (session->nruns == 0)
		return 0;
	return merge_into_one(session, true, table_id, err);
}

/* One part of a commit's merge: the runs' keys in [lo, hi), into SST files. */
typedef struct MergePart
{
	TsSession  *session;
	char	  **paths;
	const TsMemRun *last;		/* the last buffer, in memory, or NULL */
	const TcBuf *lo;
	const TcBuf *hi;
	size_t		read_buffer;	/* bytes, of each run's reader */
	SstSink		sink;
	bool		started;		/* its thread */
	pthread_t	thread;
	int			result;
	TsError		err;
} MergePart;

/*
 * A TsRunPut into a part's SST files that refuses the keys of tables with
 * an on_conflict policy which fall in the range of the direct SST files:
 * those are not read back, so a duplicate between them and the runs could
 * not be settled by the policy (docs/storage.md, Duplicate keys).  An
 * UPDATE's or DELETE's record passes: no policy applies to it.
 */
static int
merge_put_outside_direct(void *arg, const uint8_t *key, uint32_t keylen,
						 const uint8_t *value, uint32_t valuelen, TsError *err)
{
	MergePart  *part = arg;
	TsSession  *session = part->session;

	/* an UPDATE or DELETE is not checked */
	if (ts_value_mark(value, valuelen) == 0 &&
		ts_key_ranges_contain(&session->direct_ranges, key, keylen) &&
		ts_conflicts_policy(&session->conflicts, key, keylen) !=
		TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
					 "on_conflict 'error' and 'ignore' cannot check keys that arrive out of order "
					 "within the range of keys the session already wrote in order past its "
					 "staging memory");
		return -1;
	}
	return ts_sst_sink_put(&part->sink, key, keylen, value, valuelen, err);
}

/* Merge one part's key range into SST files of its own (a thread's main). */
static void *
merge_part_main(void *arg)
{
	MergePart  *part = arg;
	TsSession  *session = part->session;

	if (session->direct_ranges.n > 0)
		part->result = ts_run_merge_with(part->paths, session->run_indexes, session->nruns,
										 part->last, part->read_buffer, part->lo, part->hi,
										 &session->conflicts, merge_put_outside_direct, part,
										 &part->err);
	else
		part->result = ts_run_merge_with(part->paths, session->run_indexes, session->nruns,
										 part->last, part->read_buffer, part->lo, part->hi,
										 &session->conflicts, ts_sst_sink_put, &part->sink,
										 &part->err);
	if (part->result == 0)
		part->result = ts_sst_sink_finish_file(&part->sink, &part->err);
	return NULL;
}

/*
 * Each run reader's buffer in a merge of nparts parts of nruns runs: what
 * keeps the merge's buffers within MERGE_READ_BYTES, between
 * TS_RUN_READ_BUFFER_MIN and TS_RUN_READ_BUFFER.  Up to 8 parts of the
 * most runs a session keeps (64: RUN_FAN_IN) that is the default 256 KiB;
 * 16 parts read 64 runs through 128 KiB each.
 */
static size_t
merge_read_buffer(int nparts, uint32_t nruns)
{
	uint64_t	readers = (uint64_t) (nparts > 0 ? nparts : 1) * (nruns > 0 ? nruns : 1);
	uint64_t	each = MERGE_READ_BYTES / readers;

	if (each > TS_RUN_READ_BUFFER)
		return TS_RUN_READ_BUFFER;
	if (each < TS_RUN_READ_BUFFER_MIN)
		return TS_RUN_READ_BUFFER_MIN;
	return (size_t) each;
}

/* A merge part's thread: named, for per-thread profiles (bench/threads.sh). */
static void *
merge_thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "ts-merge");
	return merge_part_main(arg);
}

/*
 * Merge the session's runs, and last (the last staging buffer, sorted in
 * memory; NULL: none) after them, into SST files appended to sink's.
 * With runs large enough and more than one merge thread, the key space is
 * split into parts of about equal size (from the runs' indexes), each
 * merged by a thread of its own into files of its own: the parts do not
 * overlap and come in key order, so their files follow each other in the
 * sink as one merge's would.
 *
 * Its time, from before the split to the last part taken into sink, is
 * what tcopy_merge_seconds counts (ts_durations.h): the whole merge a
 * commit waits for, whatever number of threads ran it.
 */
int
ts_merge_runs(TsSession *session, const TsMemRun *last, SstSink *sink, TsError *err)
{
	uint64_t	start_us = ts_monotonic_us();
	TsStore    *store = session->store;
	uint64_t	part_bytes = store->opts.merge_part_bytes ? store->opts.merge_part_bytes : 1;
	uint64_t	run_bytes = session->spilled_bytes - session->direct_bytes +
		(last != NULL ? last->bytes : 0);
	uint64_t	fit = run_bytes / part_bytes + 1;
	int			nparts = fit < (uint64_t) store->opts.merge_threads ?
		(int) fit : store->opts.merge_threads;
	TcBuf		splits[TS_MERGE_THREADS_MAX] = {{0}};
	MergePart	parts[TS_MERGE_THREADS_MAX];
	char	  **paths = run_paths(session);
	uint32_t	nindexes = session->nruns + (last != NULL);
	TsRunIndex *indexes = malloc((nindexes > 0 ? nindexes : 1) * sizeof(TsRunIndex));
	int			nsplits = -1;
	int			result = 0;

	/* the split sees the last buffer's keys as a run's */
	if (paths != NULL && indexes != NULL)
	{
		if (session->nruns > 0)
			memcpy(indexes, session->run_indexes, session->nruns * sizeof(TsRunIndex));
		if (last != NULL)
			indexes[session->nruns] = last->index;
		nsplits = ts_run_split_keys(indexes, nindexes, nparts, splits);
	}
	free(indexes);
	if (nsplits < 0)
	{
		free_paths(paths, session->nruns);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	nparts = nsplits + 1;
	memset(parts, 0, sizeof(parts));
	for (int p = 0; p < nparts; p++)
	{
		parts[p].session = session;
		parts[p].paths = paths;
		parts[p].last = last;
		parts[p].lo = p > 0 ? &splits[p - 1] : NULL;
		parts[p].hi = p < nsplits ? &splits[p] : NULL;
		parts[p].read_buffer = merge_read_buffer(nparts, session->nruns);
		ts_sst_sink_init(&parts[p].sink, session, p);
	}
	/* parts 1.. in threads of their own, part 0 in this one */
	for (int p = 1; p < nparts; p++)
		parts[p].started = pthread_create(&parts[p].thread, NULL, merge_thread_main, &parts[p]) == 0;
	for (int p = 1; p < nparts; p++)
		if (!parts[p].started)
			merge_part_main(&parts[p]);
	merge_part_main(&parts[0]);
	for (int p = 1; p < nparts; p++)
		if (parts[p].started)
			pthread_join(parts[p].thread, NULL);
	ts_log(TS_LOG_DEBUG, "session %llu: merged %u runs%s (%llu bytes) in %d part%s",
		   (unsigned long long) session->id, session->nruns,
		   last != NULL ? " and the last buffer" : "",
		   (unsigned long long) run_bytes, nparts, nparts == 1 ? "" : "s");

	for (int p = 0; p < nparts; p++)
	{
		if (result == 0 && parts[p].result != 0)
		{
			*err = parts[p].err;
			result = -1;
		}
		if (result == 0 && ts_sst_sink_take(sink, &parts[p].sink, err) != 0)
			result = -1;
		ts_sst_sink_free(&parts[p].sink);
	}
	for (int i = 0; i < nsplits; i++)
		tc_buf_free(&splits[i]);
	free_paths(paths, session->nruns);
	if (result == 0)
		ts_histogram_observe(&ts_merge_durations, ts_monotonic_us() - start_us);
	return result;
}
