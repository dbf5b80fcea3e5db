/*
 * ts_spill.c
 *		Spilling a session's staging buffer: in the background, to SST files
 *		while the session is sorted, else sorted into a run file.  The design
 *		is described in ts_session.c.
 */
#include "ts_staging.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ts_key.h"
#include "ts_log.h"
#include "ts_record.h"

/* Do the staged records at offsets a and b hold the same key? */
static inline bool
record_same_key(const TcBuf *staged, uint32_t a, uint32_t b)
{
	return ts_record_same_key(staged->data + a, staged->data + b);
}

/* Records ahead of the one being written whose bytes a run's spill fetches. */
#define SPILL_PREFETCH 8

/* Start loading a staged record's first 128 bytes (header, key, value). */
static inline void
prefetch_record(const uint8_t *rec)
{
	__builtin_prefetch(rec);
	__builtin_prefetch(rec + 64);
	__builtin_prefetch(rec + 127);
}

/* qsort_r order of staged records: by key, equal keys by arrival. */
static int
record_compare(const void *a, const void *b, void *arg)
{
	const TcBuf *staged = arg;
	uint32_t	off_a = *(const uint32_t *) a;
	uint32_t	off_b = *(const uint32_t *) b;
	const uint8_t *rec_a = staged->data + off_a;
	const uint8_t *rec_b = staged->data + off_b;
	int			cmp = ts_key_compare(ts_record_key(rec_a), ts_record_keylen(rec_a),
									 ts_record_key(rec_b), ts_record_keylen(rec_b));

	if (cmp != 0)
		return cmp;
	/* equal keys keep their arrival order */
	return off_a < off_b ? -1 : 1;
}

/* Append rec's key to keys as [u32 length][key]; false when out of memory. */
static bool
record_key_append(TcBuf *keys, const uint8_t *rec)
{
	uint32_t	keylen = ts_record_keylen(rec);

	if (!tc_buf_reserve(keys, 4 + (size_t) keylen))
		return false;
	memcpy(keys->data + keys->len, &keylen, 4);
	memcpy(keys->data + keys->len + 4, ts_record_key(rec), keylen);
	keys->len += 4 + keylen;
	return true;
}

/* One table's records among a buffer's (group_by_table). */
typedef struct TableGroup
{
	uint32_t	table_id;
	size_t		at;				/* count, then where its records go */
} TableGroup;

/* qsort order of TableGroups: by table id, as their keys are ordered. */
static int
group_compare(const void *a, const void *b)
{
	uint32_t	ta = ((const TableGroup *) a)->table_id;
	uint32_t	tb = ((const TableGroup *) b)->table_id;

	return ta < tb ? -1 : ta > tb;
}

int
ts_spill_group_by_table(const TcBuf *staged, uint32_t *offsets, size_t n, TsError *err)
{
	TableGroup *groups = NULL;
	size_t		ngroups = 0,
				cap = 0,
				g = 0;
	uint32_t   *scratch = NULL;

	for (size_t i = 0; i < n; i++)
	{
		uint32_t	table_id = ts_record_table(staged->data + offsets[i]);

		/* rows come in batches: the group of the record before, mostly */
		if (ngroups > 0 && groups[g].table_id == table_id)
		{
			groups[g].at++;
			continue;
		}
		for (g = 0; g < ngroups && groups[g].table_id != table_id; g++)
			;
		if (g == ngroups)
		{
			if (ngroups == cap)
			{
				TableGroup *grown;

				cap = cap ? cap * 2 : 8;
				if ((grown = realloc(groups, cap * sizeof(TableGroup))) == NULL)
					goto oom;
				groups = grown;
			}
			groups[ngroups++] = (TableGroup) {.table_id = table_id};
		}
		groups[g].at++;
	}
	if (ngroups <= 1)
	{
		free(groups);
		return 0;
	}
	qsort(groups, ngroups, sizeof(TableGroup), group_compare);
	for (size_t k = 0, at = 0; k < ngroups; k++)
	{
		size_t		count = groups[k].at;

		groups[k].at = at;
		at += count;
	}
	if ((scratch = malloc(n * sizeof(uint32_t))) == NULL)
		goto oom;
	g = 0;
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	table_id = ts_record_table(staged->data + offsets[i]);

		if (groups[g].table_id != table_id)
		{
			TableGroup	key = {.table_id = table_id};

			g = (TableGroup *) bsearch(&key, groups, ngroups, sizeof(TableGroup),
									   group_compare) - groups;
		}
		scratch[groups[g].at++] = offsets[i];
	}
	memcpy(offsets, scratch, n * sizeof(uint32_t));
	free(scratch);
	free(groups);
	return 0;

oom:
	free(groups);
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory spilling a session");
	return -1;
}

/*
 * Write the n records at offsets of a sorted session straight to its SST
 * files: of one table, or grouped by table (ts_spill_group_by_table, by
 * the caller), they are in key order.
 * Of equal keys (adjacent, as each table's keys ascend) only the last is
 * written.  With carry, the last record of each table is not written: it
 * is carried over into the next buffer (ts_spill_start), where its key may
 * come again.
 */
int
ts_spill_sorted_records(TsSession *session, const TcBuf *staged,
						uint32_t *offsets, size_t n, bool carry, TsError *err)
{
	SstSink    *sink = ts_sst_sink_get(session, err);
	bool		ranges = ts_conflicts_count(&session->conflicts, NULL) > 0;
	size_t		written = 0;
	size_t		first = SIZE_MAX,	/* of the table's records written */
				last = 0;
	bool		after_mark = false;

	if (sink == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = staged->data + offsets[i];
		bool		table_ends = i + 1 == n ||
			ts_record_table(rec) != ts_record_table(staged->data + offsets[i + 1]);

		if (!table_ends && record_same_key(staged, offsets[i], offsets[i + 1]))
		{
			after_mark = ts_record_mark(rec) == TS_VALUE_DELETE;
			continue;
		}
		if (!(carry && table_ends))
		{
			/* an insert right after a DELETE of its key is not checked */
			sink->unchecked = after_mark;
			if (ts_sst_sink_put_record(sink, rec, err) != 0)
				return -1;
			/* a scan of the session reads the files through a DB that hides them */
			if (ts_record_mark(rec) == TS_VALUE_DELETE &&
				!record_key_append(&session->direct_deletes, rec))
				goto oom;
			written++;
			if (first == SIZE_MAX)
				first = i;
			last = i;
		}
		after_mark = false;
		/* the table's range in the direct files, which runs cannot be checked against */
		if (table_ends && first != SIZE_MAX)
		{
			if (ranges &&
				(ts_key_ranges_add(&session->direct_ranges, ts_record_key(staged->data + offsets[first]),
								   ts_record_keylen(staged->data + offsets[first])) != 0 ||
				 ts_key_ranges_add(&session->direct_ranges, ts_record_key(staged->data + offsets[last]),
								   ts_record_keylen(staged->data + offsets[last])) != 0))
				goto oom;
			first = SIZE_MAX;
		}
	}
	sink->unchecked = false;
	ts_session_account_spilled(session, session->spilled_bytes - session->direct_bytes +
							   ts_sst_sink_bytes(sink));
	session->direct_bytes = ts_sst_sink_bytes(sink);
	ts_log(TS_LOG_DEBUG, "session %llu: wrote %zu sorted records to SST files (%llu bytes so far)",
		   (unsigned long long) session->id, written,
		   (unsigned long long) session->direct_bytes);
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

/* Where spill_sorted puts the records it keeps; 0, or -1 with err. */
typedef int (*SpillPut) (void *arg, const uint8_t *rec, int mark, TsError *err);

/*
 * Sort n staged records by key and put them, of equal keys only the one
 * the publish keeps (the last, or as on_conflict says; with a SET mark
 * where an insert follows a DELETE of its key), in key order.
 */
static int
spill_sorted(TsSession *session, const TcBuf *staged, uint32_t *offsets, size_t n,
			 SpillPut put, void *arg, TsError *err)
{
	/* without memory for ts_sort_records' entries: slower, the same order */
	if (ts_sort_records(staged->data, offsets, n) != 0)
		qsort_r(offsets, n, sizeof(uint32_t), record_compare, (void *) staged);

	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = staged->data + offsets[i];
		uint32_t	keylen;
		int			mark = 0;
		bool		marked = false;

		/*
		 * Sorted, the records are read in random order from tens of
		 * megabytes: without this, a shuffled load's spills spent most of
		 * their time waiting for each record's first cache line.
		 */
		if (i + SPILL_PREFETCH < n)
			prefetch_record(staged->data + offsets[i + SPILL_PREFETCH]);
		keylen = ts_record_keylen(rec);

		/* of equal keys, the last written survives, or as on_conflict says */
		if (i + 1 < n && record_same_key(staged, offsets[i], offsets[i + 1]))
		{
			size_t		j = i + 1;
			size_t		keep;
			const uint8_t *second = staged->data + offsets[i + 1];

			while (j < n && record_same_key(staged, offsets[i], offsets[j]))
				j++;
			/* with an UPDATE or DELETE among them, the last wins */
			for (size_t m = i; m < j && !marked; m++)
				marked = ts_record_mark(staged->data + offsets[m]) != 0;
			keep = j - i - 1;
			if (!marked &&
				ts_conflicts_pick(&session->conflicts, ts_record_key(rec), keylen, j - i,
								  ts_record_value(second, keylen), ts_record_valuelen(second),
								  &keep, err) != 0)
				return -1;
			rec = staged->data + offsets[i + keep];
			/* an insert right after a DELETE of its key is not checked: SET */
			if (marked && ts_record_mark(rec) == 0 && i + keep > i &&
				ts_record_mark(staged->data + offsets[i + keep - 1]) == TS_VALUE_DELETE)
				mark = TS_VALUE_SET;
			i = j - 1;
		}
		if (put(arg, rec, mark, err) != 0)
			return -1;
	}
	return 0;
}

/* A run being written by a spill. */
typedef struct SpillRun
{
	TsSession  *session;
	TsRunWriter writer;
} SpillRun;

/* A SpillPut into a run file. */
static int
spill_run_put(void *arg, const uint8_t *rec, int mark, TsError *err)
{
	SpillRun   *run = arg;
	uint32_t	keylen = ts_record_keylen(rec);

	if ((mark == 0 ? ts_run_writer_put_record(&run->writer, rec) :
		 ts_run_writer_put_marked(&run->writer, ts_record_key(rec), keylen, mark,
								  ts_record_value(rec, keylen), ts_record_valuelen(rec))) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not write staging file in \"%s\": %s", run->session->dir, strerror(errno));
	return -1;
}

/* Sort n records by key and write them, deduplicated, as the next run. */
int
ts_spill_run(TsSession *session, const TcBuf *staged, uint32_t *offsets, size_t n,
			 TsError *err)
{
	char		path[SESSION_PATH_SIZE];
	SpillRun	run = {.session = session};

	/* runs follow the direct SST files, which are complete */
	if (session->sst != NULL && ts_sst_sink_finish_file(session->sst, err) != 0)
		return -1;
	if (ts_session_make_dir(session) != 0)
		goto io_err;
	ts_session_run_path(session, session->nruns, path, sizeof(path));
	if (ts_run_writer_open(&run.writer, path) != 0)
		goto io_err;
	if (spill_sorted(session, staged, offsets, n, spill_run_put, &run, err) != 0)
	{
		(void) ts_run_writer_close(&run.writer);
		ts_run_index_free(&run.writer.index);
		return -1;
	}
	if (ts_run_writer_close(&run.writer) != 0 ||
		ts_merge_add_run(session, &run.writer.index) != 0)
	{
		ts_run_index_free(&run.writer.index);
		goto io_err;
	}
	ts_session_account_spilled(session, session->spilled_bytes + run.writer.written);
	ts_log(TS_LOG_DEBUG, "session %llu: spilled run %u (%zu records, %llu bytes)",
		   (unsigned long long) session->id, session->nruns - 1, n,
		   (unsigned long long) run.writer.written);
	if (session->nruns >= RUN_FAN_IN)
		return ts_merge_compact_runs(session, err);
	return 0;

io_err:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not write staging file in \"%s\": %s", session->dir, strerror(errno));
	return -1;
}

/* A SpillPut into a memory run. */
static int
spill_mem_put(void *arg, const uint8_t *rec, int mark, TsError *err)
{
	if (ts_mem_run_add(arg, rec, mark) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory sorting staged rows");
	return -1;
}

/*
 * Sort the session's last n records (at commit) by key into mem,
 * deduplicated as a run's spill would write them, but left in staged,
 * which must outlive mem: the merge reads them as the latest run, and
 * they are never written to a file.
 */
int
ts_spill_mem_run(TsSession *session, const TcBuf *staged, uint32_t *offsets, size_t n,
				 TsMemRun *mem, TsError *err)
{
	if (ts_mem_run_init(mem, n) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory sorting staged rows");
		return -1;
	}
	if (spill_sorted(session, staged, offsets, n, spill_mem_put, mem, err) != 0)
		return -1;
	ts_mem_run_finish(mem);
	ts_log(TS_LOG_DEBUG, "session %llu: sorted its last %zu records in memory (%zu kept)",
		   (unsigned long long) session->id, n, mem->n);
	return 0;
}

/* Set while the thread runs spill_job_main. */
static __thread bool in_spill_job = false;

bool
ts_spill_in_job(void)
{
	return in_spill_job;
}

/* The background spill: write the handed-over buffer out. */
static void *
spill_job_main(void *arg)
{
	TsSession  *session = arg;
	SpillJob   *job = &session->spill;

	in_spill_job = true;
	/* a buffer of several tables' records (partitions) in key order first */
	if (job->sorted)
		job->result = (job->ntables > 1 &&
					   ts_spill_group_by_table(&job->staged, job->offsets, job->noffsets,
											   &job->err) != 0) ? -1 :
			ts_spill_sorted_records(session, &job->staged, job->offsets, job->noffsets, true,
									&job->err);
	else
		job->result = ts_spill_run(session, &job->staged, job->offsets, job->noffsets,
								   &job->err);
	atomic_fetch_sub(&session->store->staged_bytes, job->staged.len);
	in_spill_job = false;
	return NULL;
}

/* A spill's thread: named, for per-thread profiles (bench/threads.sh). */
static void *
spill_thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "ts-spill");
	return spill_job_main(arg);
}

/*
 * Wait for the background spill, if one runs; its buffer becomes the spare.
 * A spill that failed fails the session: its records are gone.
 */
int
ts_spill_wait(TsSession *session, TsError *err)
{
	SpillJob   *job = &session->spill;

	if (job->running)
	{
		pthread_join(job->thread, NULL);
		job->running = false;
		job->staged.len = 0;
		job->noffsets = 0;
	}
	if (job->result != 0)
	{
		*err = job->err;
		return -1;
	}
	return 0;
}

/* The index of the record at offset among offsets[0, n), which ascend. */
static size_t
offset_index(const uint32_t *offsets, size_t n, uint32_t offset)
{
	size_t		lo = 0,
				hi = n;

	while (hi - lo > 1)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (offsets[mid] <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Hand the full buffer to a background spill and go on filling the spare,
 * so that the connection keeps reading while the records are written: to
 * SST files while the session is sorted, else to a run.  A sorted
 * session's last record of each table is carried over into the new buffer,
 * not written: the table's next record may repeat its key, and the later
 * write must win without two files holding that key.
 */
int
ts_spill_start(TsSession *session, TsError *err)
{
	TsStore    *store = session->store;
	SpillJob   *job = &session->spill;
	size_t		buffer_size = store->opts.session_memory_bytes / 2;
	TcBuf		full = session->staged;
	uint32_t   *full_offsets = session->offsets;
	size_t		full_offsets_cap = session->offsets_cap;
	uint64_t   *full_carried = session->carried;
	size_t		full_carried_cap = session->carried_cap;
	size_t		carry = 0;		/* bytes of the records carried over */
	size_t		ncarry = 0;

	if (session->noffsets == 0)
		return 0;
	if (ts_spill_wait(session, err) != 0)
		return -1;
	for (size_t t = 0; session->sorted && t < session->ntables; t++)
	{
		const uint8_t *last;

		if (session->table_last[t] == 0)
			continue;
		last = full.data + session->table_last[t] - 1;
		carry += ts_record_size(ts_record_keylen(last), ts_record_valuelen(last));
		ncarry++;
	}
	/* the spares must take the carried records: nothing can fail after the swap */
	if (!tc_buf_reserve(&job->staged, buffer_size > carry ? buffer_size : carry))
		goto oom;
	if (job->offsets_cap < (ncarry > 1024 ? ncarry : 1024))
	{
		size_t		cap = ncarry > 1024 ? ncarry : 1024;
		uint32_t   *grown = realloc(job->offsets, cap * sizeof(uint32_t));

		if (grown == NULL)
			goto oom;
		job->offsets = grown;
		job->offsets_cap = cap;
	}
	if (job->carried_cap < ncarry)
	{
		uint64_t   *grown = realloc(job->carried, session->ntables * sizeof(uint64_t));

		if (grown == NULL)
			goto oom;
		job->carried = grown;
		job->carried_cap = session->ntables;
	}

	ts_session_account(session);	/* the full buffer's bytes, counted */
	session->staged = job->staged;
	session->offsets = job->offsets;
	session->offsets_cap = job->offsets_cap;
	session->carried = job->carried;
	session->carried_cap = job->carried_cap;
	job->staged = full;
	job->offsets = full_offsets;
	job->offsets_cap = full_offsets_cap;
	job->carried = full_carried;
	job->carried_cap = full_carried_cap;
	job->noffsets = session->noffsets;
	job->sorted = session->sorted;
	job->ntables = ncarry;		/* while sorted: the tables in the buffer */
	job->ordinals = session->ordinals;
	session->noffsets = 0;
	session->staged.len = 0;
	/* the next batch's rows follow, after the carried records if any */
	session->ordinals.rows_before = session->rows;
	session->ordinals.skipped = 0;
	session->ordinals.ncarried = ncarry;
	session->ordinals.carried = session->carried;
	session->staged_accounted -= job->staged.len;	/* the job's to drop now */
	for (size_t t = 0; t < session->ntables; t++)
	{
		uint32_t	at = session->table_last[t];
		const uint8_t *last;
		size_t		size;

		session->table_last[t] = 0;
		if (!job->sorted || at == 0)
			continue;
		last = job->staged.data + at - 1;
		size = ts_record_size(ts_record_keylen(last), ts_record_valuelen(last));
		memcpy(session->staged.data + session->staged.len, last, size);
		session->carried[session->noffsets] =
			ts_ordinals_row(&job->ordinals, offset_index(job->offsets, job->noffsets, at - 1));
		session->offsets[session->noffsets++] = (uint32_t) session->staged.len;
		session->table_last[t] = (uint32_t) session->staged.len + 1;
		session->staged.len += size;
	}

	ts_session_account(session);
	job->running = true;
	if (pthread_create(&job->thread, NULL, spill_thread_main, session) == 0)
		return 0;

	/* no thread: spill here */
	job->running = false;
	spill_job_main(session);
	job->staged.len = 0;
	job->noffsets = 0;
	if (job->result != 0)
	{
		*err = job->err;
		return -1;
	}
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory spilling a session");
	return -1;
}
