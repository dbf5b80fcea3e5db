/*
 * ts_session.c
 *		Atomic write sessions of any size in bounded memory.
 *
 * A session's rows must stay invisible until commit and then appear all at
 * once, durably; an abort, a dropped connection or a crash must leave
 * nothing.  RocksDB offers two atomic publishing steps: a WriteBatch, which
 * must be built in memory, and IngestExternalFile, which links a set of
 * SST files into the database in one manifest write.  A session therefore
 * stages its rows outside RocksDB:
 *
 *   - rows are encoded (ts_codec.h) straight into a staging buffer of half
 *     the session memory limit as records [u32 key length][u32 value
 *     length][key][value] (ts_record.h), with an array of record offsets
 *     beside it; no allocation per row;
 *   - while encoding, each key is compared with the last one staged of
 *     its table: the session stays "sorted" as long as no key is below
 *     its table's predecessor (an equal key is an upsert of it, adjacent
 *     to it in its table); tables apart, because the rows of several
 *     tables (partitions on this tserver) may interleave in a session,
 *     each table's in its order;
 *   - when the next batch would not fit, the buffer is spilled by a
 *     background thread while the session goes on filling the other half,
 *     so that the connection keeps reading its socket; one spill at a
 *     time, so files are written in arrival order;
 *   - a sorted session's spill groups the buffer's records by table
 *     (tables in id order, which is key order, each table's in arrival
 *     order) and writes them, deduplicated (of equal keys the last),
 *     straight into SST files, kept open across spills, cut at
 *     sst_target_bytes and wherever the table changes: a file holds one
 *     table's keys, and no two files overlap.  Each table's last record
 *     in the buffer is carried over into the next buffer instead, so that
 *     a key repeated across the spill boundary ends up once, with its
 *     later value, and no two files share a key (it is also what the
 *     table's next key is compared with);
 *   - once a key arrives out of order, the session is unsorted for good:
 *     spills sort the offsets by key (ties by arrival, so the last write
 *     of a key wins) and write the records in that order, deduplicated, to
 *     a run file in the session's staging directory;
 *   - commit of a session that never spilled writes its buffer as one
 *     synced WriteBatch, in arrival order (the last put of a key wins);
 *   - commit of a session still sorted writes the rest of the buffer as
 *     its last SST file and ingests them all in one call: no run, no
 *     merge, the data written once.  The files do not overlap each other,
 *     so RocksDB can place them low in the tree when they do not overlap
 *     existing data either;
 *   - commit of an unsorted spilled session sorts what is left in memory
 *     (a TsMemRun, never written) and merges it, as the latest run, with
 *     the runs (ts_run.c: a heap; for equal keys the latest run wins) into
 *     SST files of strictly increasing keys, in parts of the key space
 *     merged at the same time by merge_threads threads (its client waits
 *     for the commit: the cores are free), and ingests, in one call, the
 *     direct SST files written before sortedness broke (if any) followed
 *     by the merged ones.  Every run record arrived after every direct
 *     record, so where the two overlap the merged files must win: an
 *     ingestion of files that overlap each other puts them all in L0 and
 *     gives each a newer sequence number than the file before it in the
 *     list (RocksDB 7.8, ExternalSstFileIngestionJob::Run; test_storage.c
 *     checks it), which is exactly that precedence, and one ingestion is
 *     atomic;
 *   - a session that reaches RUN_FAN_IN runs merges them into one, so that
 *     no merge opens more files (or read buffers) than that;
 *   - a session may also stage TRUNCATEs and DROPs of tables, applied when
 *     it is published: truncates before its rows (a DeleteRange at the
 *     head of the WriteBatch, or a step of their own before the
 *     ingestion), drops after them (ts_publish.c);
 *   - prepared under a global id (ts_prepared.c), a session is written out
 *     as for a commit and recorded durably instead of published: a
 *     never-spilled session's WriteBatch in the record itself, a spilled
 *     session's SST files in its staging directory, which stays.
 *
 * Staging files are never synced: they are worthless after a crash, and
 * ts_store_open removes them.  SstFileWriter syncs the files it finishes
 * and ingestion syncs the manifest, so a commit is durable once it returns.
 * Memory is bounded by the limit (or two batches, if larger, plus the
 * record of each table a sorted session carries over; and, while the store's sessions
 * together stage more than its memory budget, by about twice
 * EARLY_SPILL_BYTES and a batch), plus at most RUN_FAN_IN read
 * buffers and an SstFileWriter for each merge thread during a merge, or
 * one open SstFileWriter while sorted, plus the runs' sparse indexes (a
 * key every 256 kB of run), plus the record offsets (4 bytes a record)
 * and, while a run is sorted, ts_sort_records' entries (24 bytes a record
 * of the half being spilled, 16 or 24 more during a radix sort), and at
 * commit a pointer a record of the last half (TsMemRun); while a sorted
 * spill of several tables' records groups them, 4 bytes a record of the
 * half being spilled.
 *
 * The phases are in files of their own, in staging/ (ts_staging.h):
 * spilling in ts_spill.c, SST files in ts_sst_sink.c, runs and the merge in
 * ts_merge.c.  This one holds the write path and the commit.
 */
#include "ts_session_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ts_clock.h"
#include "ts_key.h"
#include "ts_group.h"
#include "ts_log.h"
#include "ts_record.h"


TsSession *
ts_session_begin(TsStore *store, uint64_t *session_id, TsError *err)
{
	TsSession  *session = calloc(1, sizeof(TsSession));

	if (session == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	session->store = store;
	session->sorted = true;
	session->conflicts.report = ts_session_report_duplicate;
	session->conflicts.report_arg = session;
	session->id = atomic_fetch_add(&store->next_session_id, 1);
	snprintf(session->dir, sizeof(session->dir), "%s/session-%llu",
			 store->staging_dir, (unsigned long long) session->id);
	session->began_us = ts_monotonic_us();
	pthread_mutex_init(&session->lock, NULL);
	ts_group_shipping_init(&session->shipping);
	if (ts_session_register(session) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not draw a session key: %s", strerror(errno));
		ts_group_shipping_destroy(&session->shipping);
		pthread_mutex_destroy(&session->lock);
		free(session);
		return NULL;
	}
	atomic_fetch_add(&store->sessions_open, 1);
	*session_id = session->id;
	return session;
}

void
ts_session_set_snapshot(TsSession *session, TsSnapshot *snapshot)
{
	session->snapshot = snapshot;
}

void
ts_session_set_give_up(TsSession *session, bool (*give_up) (void *arg), void *arg)
{
	session->give_up = give_up;
	session->give_up_arg = arg;
}

const uint8_t *
ts_session_key(const TsSession *session, size_t *len)
{
	*len = sizeof(session->key);
	return session->key;
}

uint64_t
ts_session_rows(const TsSession *session)
{
	return session->rows;
}

uint64_t
ts_session_bytes(const TsSession *session)
{
	return session->staged.len + atomic_load(&session->spilled_now);
}

/*
 * Free the session and everything it staged: wait for its spill, remove its
 * staging directory (unless it was prepared: keep_dir), and give back its
 * share of the store's counts.
 */
void
ts_session_free(TsSession *session, bool aborted)
{
	TsStore    *store = session->store;
	TsError		ignored;

	ts_session_streams_end(session);
	ts_session_unregister(session);
	(void) ts_spill_wait(session, &ignored);
	/* nothing reads its files once they are removed */
	(void) ts_group_ship_wait(&session->shipping, &ignored);
	ts_key_claims_session_end(session);
	/* the other members' copies of the files it shipped (ts_sst_sink.c) */
	if (aborted && store->group != NULL && session->sst != NULL && session->sst->nfiles > 0 &&
		!session->keep_dir)
		ts_group_drop_dir(store->group, strrchr(session->dir, '/') + 1);
	if (session->dir_made && !session->keep_dir && ts_remove_tree(session->dir) != 0)
		ts_log(TS_LOG_WARNING, "could not remove staging directory \"%s\": %s",
			   session->dir, strerror(errno));
	tc_buf_free(&session->staged);
	tc_buf_free(&session->spill.staged);
	ts_session_account(session);
	atomic_fetch_sub(&store->spilled_bytes, session->spilled_bytes);
	atomic_fetch_sub(&store->sessions_open, 1);
	if (aborted)
		atomic_fetch_add(&store->sessions_aborted, 1);
	if (session->sst != NULL)
	{
		ts_sst_sink_free(session->sst);
		free(session->sst);
	}
	for (uint32_t r = 0; r < session->nruns; r++)
		ts_run_index_free(&session->run_indexes[r]);
	free(session->run_indexes);
	free(session->offsets);
	free(session->spill.offsets);
	free(session->tables);
	free(session->truncates);
	free(session->drops);
	free(session->scope);
	ts_conflicts_free(&session->conflicts);
	free(session->table_last);
	free(session->carried);
	free(session->spill.carried);
	ts_key_ranges_free(&session->direct_ranges);
	tc_buf_free(&session->direct_deletes);
	/* a published session's labels were written before: the claims may go */
	ts_labels_release_session(store, session->id);
	for (size_t i = 0; i < session->nlabels; i++)
		free(session->labels[i].label);
	free(session->labels);
	ts_snapshot_unref(store, session->snapshot);
	ts_group_shipping_destroy(&session->shipping);
	pthread_mutex_destroy(&session->lock);
	free(session);
}

static int	session_table_op_locked(TsSession *session, Tcopy__TableOpKind op,
									uint32_t table_id, TsError *err);

/* Stage a table operation under the session's lock, as a batch. */
/*
 * The rows after rows_mark are the staging buffer's records from the index
 * where ts_ordinals_row passes rows_mark on: truncate the buffer there.
 * Not when some of them left memory (a spill since: rows_before is past
 * the mark) or the buffer's rows are not known (a duplicate ignored as it
 * arrived).
 */
static int
session_rollback_locked(TsSession *session, uint64_t rows_mark, bool *done, char *reason,
						size_t size, TsError *err)
{
	const TsOrdinals *ord = &session->ordinals;
	size_t		index;

	*done = false;
	if (session->prepared || rows_mark > session->rows)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "rollback to row %llu of a session of %llu rows",
					 (unsigned long long) rows_mark, (unsigned long long) session->rows);
		return -1;
	}
	if (ts_spill_wait(session, err) != 0)
		return -1;
	if (rows_mark < ord->rows_before)
	{
		snprintf(reason, size, "rows written since the savepoint spilled to disk");
		return 0;
	}
	if (ord->skipped != 0)
	{
		snprintf(reason, size, "a duplicate key was ignored since the rows were staged");
		return 0;
	}
	index = (size_t) (rows_mark - ord->rows_before) + ord->ncarried;
	if (index > session->noffsets)
	{
		snprintf(reason, size, "the session's rows are not where the savepoint left them");
		return 0;
	}
	if (index < session->noffsets)
	{
		session->staged.len = session->offsets[index];
		session->noffsets = index;
		ts_session_find_table_lasts(session);
	}
	session->rows = rows_mark;
	ts_session_account(session);
	*done = true;
	return 0;
}

int
ts_session_rollback_to(TsSession *session, uint64_t rows_mark, bool *done, char *reason,
					   size_t size, TsError *err)
{
	int			result;

	pthread_mutex_lock(&session->lock);
	result = session_rollback_locked(session, rows_mark, done, reason, size, err);
	pthread_mutex_unlock(&session->lock);
	return result;
}

int
ts_session_table_op(TsSession *session, Tcopy__TableOpKind op, uint32_t table_id,
					TsError *err)
{
	int			result;

	pthread_mutex_lock(&session->lock);
	result = session_table_op_locked(session, op, table_id, err);
	pthread_mutex_unlock(&session->lock);
	return result;
}

static int
session_table_op_locked(TsSession *session, Tcopy__TableOpKind op, uint32_t table_id,
						TsError *err)
{
	TsTable    *table;
	uint32_t  **ids;
	size_t	   *n;
	uint32_t   *grown;

	if (session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table operation after the session was prepared");
		return -1;
	}
	if (op != TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE &&
		op != TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "unknown table operation %d", (int) op);
		return -1;
	}
	table = ts_store_table(session->store, table_id, err);
	if (table == NULL)
		return -1;
	if (op == TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE)
	{
		if (ids_contain(session->drops, session->ndrops, table_id))
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "TRUNCATE of table \"%s\" after the session dropped it", table->name);
			return -1;
		}
		/*
		 * A staged truncate is applied before all of the session's rows: the
		 * rows of the table staged so far go now (ts_session_truncate.c)
		 */
		if (ids_contain(session->tables, session->ntables, table_id) &&
			ts_session_discard_table(session, table_id, err) != 0)
			return -1;
		ids = &session->truncates;
		n = &session->ntruncates;
	}
	else
	{
		ids = &session->drops;
		n = &session->ndrops;
	}
	if (ids_contain(*ids, *n, table_id))
		return 0;
	grown = realloc(*ids, (*n + 1) * sizeof(uint32_t));
	if (grown == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	grown[(*n)++] = table_id;
	*ids = grown;
	ts_log(TS_LOG_DEBUG, "session %llu: %s of table \"%s\" (id %u) staged",
		   (unsigned long long) session->id,
		   op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP ? "drop" : "truncate",
		   table->name, table_id);
	return 0;
}

int
ts_session_set_on_conflict(TsSession *session, uint32_t table_id,
						   Tcopy__OnConflict policy, TsError *err)
{
	TsTable    *table;
	int			result;

	if (session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table operation after the session was prepared");
		return -1;
	}
	table = ts_store_table(session->store, table_id, err);
	if (table == NULL)
		return -1;
	/* streams may be staging other tables' rows: the lock they stage under */
	pthread_mutex_lock(&session->lock);
	/* rows already staged were settled under the default */
	if (ids_contain(session->tables, session->ntables, table_id))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "on_conflict of table \"%s\" set after the session wrote to it",
					 table->name);
		result = -1;
	}
	else if (ts_table_layout(table)->nkey == 0)
		result = 0;				/* generated row ids never repeat */
	else
		result = ts_conflicts_set(&session->conflicts, table_id, policy, err);
	pthread_mutex_unlock(&session->lock);
	return result;
}

/*
 * Settle the duplicates of a session that never spilled and is not sorted,
 * when some table has a policy: sort its offsets (ties by arrival) and
 * keep one record of each key, as its table's policy says.  The WriteBatch
 * is then written in key order, each key once.
 */
static int
session_settle_staged(TsSession *session, TsError *err)
{
	const uint8_t *data = session->staged.data;
	size_t		n = session->noffsets;
	size_t		out = 0;

	if (ts_sort_records(session->staged.data, session->offsets, n) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory sorting a session");
		return -1;
	}
	for (size_t i = 0; i < n;)
	{
		const uint8_t *rec = data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		size_t		j = i + 1;
		size_t		keep = 0;

		while (j < n && ts_record_same_key(data + session->offsets[j], rec))
			j++;
		if (j - i > 1)
		{
			const uint8_t *second = data + session->offsets[i + 1];
			size_t		marked = j;

			for (size_t m = i; m < j; m++)
				if (ts_record_mark(data + session->offsets[m]) != 0)
					marked = m;
			if (marked < j)
			{
				/*
				 * An UPDATE or DELETE among them: the last record wins.  An
				 * insert after the last marked record keeps that record
				 * before it, which exempts it from the stored check (a row
				 * deleted, then inserted again).
				 */
				keep = j - i - 1;
				if (marked < j - 1)
					session->offsets[out++] = session->offsets[marked];
			}
			else if (ts_conflicts_pick(&session->conflicts, ts_record_key(rec), keylen, j - i,
									   ts_record_value(second, keylen),
									   ts_record_valuelen(second), &keep, err) != 0)
				return -1;
		}
		session->offsets[out++] = session->offsets[i + keep];
		i = j;
	}
	session->noffsets = out;
	return 0;
}

/*
 * Check the records of a session that never spilled, in key order (sorted,
 * or settled), against the stored rows: under ignore a stored key's record
 * is dropped, under error it fails the session.
 */
static int
session_check_stored(TsSession *session, TsError *err)
{
	TsStoredCheck check = {0};
	size_t		out = 0;

	for (size_t i = 0; i < session->noffsets; i++)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		bool		skip;

		/*
		 * An UPDATE or DELETE is not checked, nor an insert right after a
		 * DELETE of its key (see the settle); one after an UPDATE is (its
		 * key holds a row: a duplicate under error)
		 */
		if (ts_record_mark(rec) != 0 ||
			(out > 0 &&
			 ts_record_mark(session->staged.data + session->offsets[out - 1]) == TS_VALUE_DELETE &&
			 ts_record_same_key(session->staged.data + session->offsets[out - 1], rec)))
		{
			session->offsets[out++] = session->offsets[i];
			continue;
		}
		if (ts_stored_check(session->store, &session->conflicts, session->truncates,
							session->ntruncates, &check,
							ts_record_key(rec), keylen, ts_record_value(rec, keylen),
							ts_record_valuelen(rec), &skip, err) != 0)
		{
			ts_stored_check_end(&check);
			return -1;
		}
		if (!skip)
			session->offsets[out++] = session->offsets[i];
	}
	ts_stored_check_end(&check);
	session->noffsets = out;
	return 0;
}

int
ts_session_prepare(TsSession *session, TsError *err)
{
	if (session->prepared)
		return 0;
	/* no scan reads a session from now on: its transaction is committing */
	ts_session_unregister(session);
	if (ts_spill_wait(session, err) != 0)
		return -1;
	/* a sorted session's tables one after the other: its records in key order */
	if (session->sorted && ts_session_buffer_tables(session) > 1 &&
		ts_spill_group_by_table(&session->staged, session->offsets, session->noffsets, err) != 0)
		return -1;

	/*
	 * A large session that never spilled goes the SST way too: its records
	 * sorted in memory into files that are ingested (issue 27).  As a
	 * WriteBatch it would be written whole into its prepared record, then
	 * again through the WAL and the memtable, then flushed and compacted.
	 */
	if (session->sst == NULL && session->nruns == 0 &&
		session->staged.len >= TS_PREPARE_SST_BYTES && ts_sst_sink_get(session, err) == NULL)
		return -1;
	if (!session->sorted && session->sst == NULL && session->nruns == 0 &&
		ts_conflicts_checked(&session->conflicts) && session_settle_staged(session, err) != 0)
		return -1;
	/*
	 * In key order now: against the stored rows, unless written to SST, and
	 * against concurrent sessions' keys (ts_key_claims.c)
	 */
	if (session->sst == NULL && session->nruns == 0 && ts_conflicts_checked(&session->conflicts) &&
		ts_key_claims_prepare(session, session_check_stored, err) != 0)
		return -1;
	/* the last spill and the merge check keys against the stored rows */
	if ((session->sst != NULL || session->nruns > 0) && ts_conflicts_checked(&session->conflicts))
		ts_key_claims_watch(session);
	if (session->sorted && session->sst != NULL)
	{
		/* every spill went to SST files: the rest is the last of them */
		if (ts_spill_sorted_records(session, &session->staged, session->offsets,
									session->noffsets, false, err) != 0 ||
			ts_sst_sink_finish_file(session->sst, err) != 0)
			return -1;
		session->staged.len = 0;
		session->noffsets = 0;
		ts_session_account(session);
	}
	else if (session->nruns > 0 || session->sst != NULL)
	{
		/*
		 * The merged runs' files come after the direct SST files, if any:
		 * every record of a run arrived after every record of those, so
		 * where their keys overlap, the later files must win, and one
		 * ingestion gives later files precedence (they get newer sequence
		 * numbers, in L0).
		 */
		SstSink    *sst = ts_sst_sink_get(session, err);
		TsMemRun	last = {0};
		bool		has_last = session->noffsets > 0;
		int			result;

		/*
		 * The rest of the buffer is sorted in memory and merged with the
		 * runs as the latest of them: never written as a run, nor read back.
		 */
		result = sst == NULL ||
			(has_last &&
			 ts_spill_mem_run(session, &session->staged, session->offsets, session->noffsets,
							  &last, err) != 0) ||
			ts_sst_sink_finish_file(sst, err) != 0 ||
			ts_merge_runs(session, has_last ? &last : NULL, sst, err) != 0 ||
			ts_sst_sink_finish_file(sst, err) != 0 ? -1 : 0;
		ts_mem_run_free(&last);
		if (result != 0)
			return -1;
	}
	/* spilled: the keys were checked as written, their ranges are known */
	if (session->sst != NULL && ts_conflicts_checked(&session->conflicts) &&
		ts_key_claims_prepare(session, NULL, err) != 0)
		return -1;
	/* its files on every member before the entry that records or publishes them */
	if (session->sst != NULL && session->store->group != NULL &&
		ts_group_ship_wait(&session->shipping, err) != 0)
		return -1;
	session->prepared = true;
	return 0;
}

int
ts_session_commit(TsSession *session, uint64_t *rows, TsError *err)
{
	TsStore    *store = session->store;
	TsPublish	pub;
	int			result;
	int			waited_ms = 0;
	double		start_ms,
				prepared_ms;

	*rows = session->rows;
	start_ms = ts_monotonic_us() / 1e3;

	/*
	 * The slow part of a spilled session (the last spill, the merge into
	 * SST files) runs before publishing takes the tables lock, so that
	 * creating, truncating or dropping tables does not wait for it.  Held
	 * back behind in-doubt sessions of its tables before it and after it,
	 * as a prepare is (ts_session_prepare_gid).
	 */
	result = ts_session_wait_in_doubt(session, &waited_ms, err);
	if (result == 0)
		result = ts_session_prepare(session, err);
	if (result == 0)
		result = ts_session_wait_in_doubt(session, &waited_ms, err);
	prepared_ms = ts_monotonic_us() / 1e3;

	memset(&pub, 0, sizeof(pub));
	pub.rows = session->rows;
	pub.tables = session->tables;
	pub.ntables = session->ntables;
	pub.drops = session->drops;
	pub.ndrops = session->ndrops;
	pub.labels = session->labels;
	pub.nlabels = session->nlabels;
	if (result == 0 && session->sst == NULL)
	{
		/* nothing at all to write: no batch */
		if (session->rows > 0 || session->ntruncates > 0 || session->ndrops > 0 ||
			session->nlabels > 0)
			pub.batch = ts_session_build_batch(session);
	}
	else if (result == 0)
	{
		pub.files = session->sst->files;
		pub.nfiles = session->sst->nfiles;
	}
	pub.truncates = session->truncates;
	pub.ntruncates = session->ntruncates;
	if (result == 0)
		result = ts_publish(store, &pub, err);
	if (pub.batch != NULL)
		rocksdb_writebatch_destroy(pub.batch);

	/* the other members' copies of its files go too (ts_group.c) */
	if (result == 0 && session->sst != NULL && store->group != NULL)
		ts_group_drop_dir(store->group, strrchr(session->dir, '/') + 1);
	if (result == 0)
	{
		ts_key_claims_published(store, session->id);
		atomic_fetch_add(&store->sessions_committed, 1);
		atomic_fetch_add(&store->rows_committed, session->rows);
		ts_log(TS_LOG_DEBUG, "session %llu committed %llu rows (%u runs): "
			   "prepare %.0f ms, publish %.0f ms",
			   (unsigned long long) session->id, (unsigned long long) session->rows,
			   session->nruns, prepared_ms - start_ms, ts_monotonic_us() / 1e3 - prepared_ms);
	}
	ts_session_free(session, result != 0);
	return result;
}

void
ts_session_abort(TsSession *session)
{
	ts_session_free(session, true);
}
