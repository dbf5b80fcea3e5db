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
 *   - while encoding, each key is compared with the one staged before it:
 *     the session stays "sorted" as long as no key is below its
 *     predecessor (an equal key is an upsert of it, adjacent to it);
 *   - when the next batch would not fit, the buffer is spilled by a
 *     background thread while the session goes on filling the other half,
 *     so that the connection keeps reading its socket; one spill at a
 *     time, so files are written in arrival order;
 *   - a sorted session's spill writes the buffer as it stands,
 *     deduplicated (of equal keys the last), straight into SST files, kept
 *     open across spills and cut at sst_target_bytes.  The buffer's last
 *     record is carried over into the next buffer instead, so that a key
 *     repeated across the spill boundary ends up once, with its later
 *     value, and no two files share a key (it is also what the next key is
 *     compared with);
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
 *   - commit of an unsorted spilled session spills what is left, merges
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
 *     no merge opens more files (or read buffers) than that.
 *
 * Staging files are never synced: they are worthless after a crash, and
 * ts_store_open removes them.  SstFileWriter syncs the files it finishes
 * and ingestion syncs the manifest, so a commit is durable once it returns.
 * Memory is bounded by the limit (or two batches, if larger, plus the one
 * record a sorted session carries over; and, while the store's sessions
 * together stage more than its memory budget, by about twice
 * EARLY_SPILL_BYTES and a batch), plus at most RUN_FAN_IN read
 * buffers and an SstFileWriter for each merge thread during a merge, or
 * one open SstFileWriter while sorted, plus the runs' sparse indexes (a
 * key every 256 kB of run), plus the record offsets (4 bytes a record)
 * and, while a run is sorted, ts_sort_records' entries (24 bytes a record
 * of the half being spilled).
 */
#include "ts_storage_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ts_key.h"
#include "ts_log.h"
#include "ts_record.h"
#include "ts_run.h"
#include "ts_sort.h"

#define RUN_FAN_IN 64			/* runs merged at once, at most */
#define EARLY_SPILL_BYTES (1024 * 1024)	/* staged before a spill forced by
										 * the store's memory budget */

/*
 * A spill in the background (session_spill_start): one at a time, so that
 * runs and SST files are written in arrival order.
 */
typedef struct SpillJob
{
	TcBuf		staged;			/* records being spilled; else the spare buffer */
	uint32_t   *offsets;		/* [noffsets] record offsets in staged */
	size_t		noffsets;
	size_t		offsets_cap;
	bool		sorted;			/* to SST files, all but the last record */
	bool		running;		/* thread started and not yet joined */
	pthread_t	thread;
	int			result;			/* 0, or -1 with err: the session failed */
	TsError		err;
} SpillJob;

struct TsSession
{
	TsStore    *store;
	uint64_t	id;
	TcBuf		staged;			/* records, see above */
	uint32_t   *offsets;		/* [noffsets] record offsets in staged */
	size_t		noffsets;
	size_t		offsets_cap;
	uint64_t	rows;			/* rows accepted, duplicates included */
	uint64_t	staged_accounted;	/* bytes of staged counted in the store */
	uint32_t	nruns;			/* run files written */
	TsRunIndex *run_indexes;	/* [nruns] their sparse indexes */
	uint32_t	run_indexes_cap;
	uint64_t	spilled_bytes;	/* runs and direct SST files, as counted in the store */
	uint64_t	direct_bytes;	/* of spilled_bytes, the direct SST files' */
	bool		sorted;			/* no staged key was below the one before it */
	bool		dir_made;
	char		dir[4096];		/* staging directory of this session */
	uint32_t   *tables;			/* ids of the tables written to */
	size_t		ntables;
	size_t		tables_cap;
	bool		prepared;		/* ts_session_prepare done: only publish left */
	struct SstSink *sst;		/* SST files to ingest, in precedence order */
	SpillJob	spill;			/* runs, nruns, sst and spilled_bytes are its
								 * own while it runs */
};

typedef struct SstSink SstSink;
static void sst_sink_free(SstSink *sink);
static int	sst_sink_finish_file(SstSink *sink, TsError *err);
static int	sst_sink_put_record(SstSink *sink, const uint8_t *rec, TsError *err);
static uint64_t sst_sink_bytes(SstSink *sink);
static int	session_spill_wait(TsSession *session, TsError *err);

/* Milliseconds on the monotonic clock, for the log. */
static double
monotonic_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

/* Do the staged records at offsets a and b hold the same key? */
static inline bool
record_same_key(const TcBuf *staged, uint32_t a, uint32_t b)
{
	const uint8_t *rec_a = staged->data + a;
	const uint8_t *rec_b = staged->data + b;
	uint32_t	len_a = ts_record_keylen(rec_a);

	return len_a == ts_record_keylen(rec_b) &&
		memcmp(ts_record_key(rec_a), ts_record_key(rec_b), len_a) == 0;
}

/* Set the session's count of bytes in staging files, and the store's. */
static void
session_account_spilled(TsSession *session, uint64_t now)
{
	if (now >= session->spilled_bytes)
		atomic_fetch_add(&session->store->spilled_bytes, now - session->spilled_bytes);
	else
		atomic_fetch_sub(&session->store->spilled_bytes, session->spilled_bytes - now);
	session->spilled_bytes = now;
}

/*
 * Keep the store's count of staged bytes equal to what this session's
 * receiving buffer holds.  A buffer handed to a background spill takes its
 * bytes along, and the spill drops them from the count when it is done.
 */
static void
session_account(TsSession *session)
{
	uint64_t	now = session->staged.len;

	if (now >= session->staged_accounted)
		atomic_fetch_add(&session->store->staged_bytes, now - session->staged_accounted);
	else
		atomic_fetch_sub(&session->store->staged_bytes, session->staged_accounted - now);
	session->staged_accounted = now;
}

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
	session->id = atomic_fetch_add(&store->next_session_id, 1);
	snprintf(session->dir, sizeof(session->dir), "%s/session-%llu",
			 store->staging_dir, (unsigned long long) session->id);
	atomic_fetch_add(&store->sessions_open, 1);
	*session_id = session->id;
	return session;
}

uint64_t
ts_session_rows(const TsSession *session)
{
	return session->rows;
}

bool
ts_session_is_prepared(const TsSession *session)
{
	return session->prepared;
}

static void
session_free(TsSession *session)
{
	TsStore    *store = session->store;
	TsError		ignored;

	(void) session_spill_wait(session, &ignored);
	if (session->dir_made && ts_remove_tree(session->dir) != 0)
		ts_log(TS_LOG_WARNING, "could not remove staging directory \"%s\": %s",
			   session->dir, strerror(errno));
	tc_buf_free(&session->staged);
	tc_buf_free(&session->spill.staged);
	session_account(session);
	atomic_fetch_sub(&store->spilled_bytes, session->spilled_bytes);
	atomic_fetch_sub(&store->sessions_open, 1);
	if (session->sst != NULL)
	{
		sst_sink_free(session->sst);
		free(session->sst);
	}
	for (uint32_t r = 0; r < session->nruns; r++)
		ts_run_index_free(&session->run_indexes[r]);
	free(session->run_indexes);
	free(session->offsets);
	free(session->spill.offsets);
	free(session->tables);
	free(session);
}

/* Remember that the session wrote to table_id. */
static int
session_note_table(TsSession *session, uint32_t table_id)
{
	for (size_t i = 0; i < session->ntables; i++)
		if (session->tables[i] == table_id)
			return 0;
	if (session->ntables == session->tables_cap)
	{
		size_t		cap = session->tables_cap ? session->tables_cap * 2 : 4;
		uint32_t   *tables = realloc(session->tables, cap * sizeof(uint32_t));

		if (tables == NULL)
			return -1;
		session->tables = tables;
		session->tables_cap = cap;
	}
	session->tables[session->ntables++] = table_id;
	return 0;
}

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

static int	session_compact_runs(TsSession *session, TsError *err);
static void run_path(const TsSession *session, uint32_t r, char *path, size_t size);
static int	session_add_run(TsSession *session, TsRunIndex *index);
static SstSink *session_sst_sink(TsSession *session, TsError *err);

/* Create the session's staging directory, once; 0 or -1 with errno. */
static int
session_make_dir(TsSession *session)
{
	if (session->dir_made)
		return 0;
	if (mkdir(session->dir, 0700) != 0 && errno != EEXIST)
		return -1;
	session->dir_made = true;
	return 0;
}

/*
 * Write records [0, upto) of the n at offsets of a sorted session straight
 * to its SST files, in arrival order, which is key order.  Of equal keys
 * (adjacent, as the session is sorted) only the last is written, also when
 * that last one is at or after upto.
 */
static int
spill_sorted_records(TsSession *session, const TcBuf *staged, const uint32_t *offsets,
					 size_t n, size_t upto, TsError *err)
{
	SstSink    *sink = session_sst_sink(session, err);
	size_t		written = 0;

	if (sink == NULL)
		return -1;
	for (size_t i = 0; i < upto; i++)
	{
		if (i + 1 < n && record_same_key(staged, offsets[i], offsets[i + 1]))
			continue;
		if (sst_sink_put_record(sink, staged->data + offsets[i], err) != 0)
			return -1;
		written++;
	}
	session_account_spilled(session, session->spilled_bytes - session->direct_bytes +
							sst_sink_bytes(sink));
	session->direct_bytes = sst_sink_bytes(sink);
	ts_log(TS_LOG_DEBUG, "session %llu: wrote %zu sorted records to SST files (%llu bytes so far)",
		   (unsigned long long) session->id, written,
		   (unsigned long long) session->direct_bytes);
	return 0;
}

/* Sort n records by key and write them, deduplicated, as the next run. */
static int
spill_run(TsSession *session, const TcBuf *staged, uint32_t *offsets, size_t n,
		  TsError *err)
{
	char		path[4200];
	TsRunWriter writer;

	/* runs follow the direct SST files, which are complete */
	if (session->sst != NULL && sst_sink_finish_file(session->sst, err) != 0)
		return -1;
	/* without memory for ts_sort_records' entries: slower, the same order */
	if (ts_sort_records(staged->data, offsets, n) != 0)
		qsort_r(offsets, n, sizeof(uint32_t), record_compare, (void *) staged);

	if (session_make_dir(session) != 0)
		goto io_err;
	run_path(session, session->nruns, path, sizeof(path));
	if (ts_run_writer_open(&writer, path) != 0)
		goto io_err;
	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = staged->data + offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);

		/* of equal keys, only the last written survives */
		if (i + 1 < n && record_same_key(staged, offsets[i], offsets[i + 1]))
			continue;
		if (ts_run_writer_put(&writer, ts_record_key(rec), keylen,
							  ts_record_value(rec, keylen), ts_record_valuelen(rec)) != 0)
		{
			int			save = errno;

			(void) ts_run_writer_close(&writer);
			ts_run_index_free(&writer.index);
			errno = save;
			goto io_err;
		}
	}
	if (ts_run_writer_close(&writer) != 0 ||
		session_add_run(session, &writer.index) != 0)
	{
		ts_run_index_free(&writer.index);
		goto io_err;
	}
	session_account_spilled(session, session->spilled_bytes + writer.written);
	ts_log(TS_LOG_DEBUG, "session %llu: spilled run %u (%zu records, %llu bytes)",
		   (unsigned long long) session->id, session->nruns - 1, n,
		   (unsigned long long) writer.written);
	if (session->nruns >= RUN_FAN_IN)
		return session_compact_runs(session, err);
	return 0;

io_err:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not write staging file in \"%s\": %s", session->dir, strerror(errno));
	return -1;
}

/* The background spill: write the handed-over buffer out. */
static void *
spill_job_main(void *arg)
{
	TsSession  *session = arg;
	SpillJob   *job = &session->spill;

	if (job->sorted)
		job->result = spill_sorted_records(session, &job->staged, job->offsets,
										   job->noffsets, job->noffsets - 1, &job->err);
	else
		job->result = spill_run(session, &job->staged, job->offsets, job->noffsets,
								&job->err);
	atomic_fetch_sub(&session->store->staged_bytes, job->staged.len);
	return NULL;
}

/*
 * Wait for the background spill, if one runs; its buffer becomes the spare.
 * A spill that failed fails the session: its records are gone.
 */
static int
session_spill_wait(TsSession *session, TsError *err)
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

/*
 * Hand the full buffer to a background spill and go on filling the spare,
 * so that the connection keeps reading while the records are written: to
 * SST files while the session is sorted, else to a run.  A sorted
 * session's last record is carried over into the new buffer, not written:
 * the next record may repeat its key, and the later write must win without
 * two files holding that key.
 */
static int
session_spill_start(TsSession *session, TsError *err)
{
	TsStore    *store = session->store;
	SpillJob   *job = &session->spill;
	size_t		buffer_size = store->opts.session_memory_bytes / 2;
	TcBuf		full = session->staged;
	uint32_t   *full_offsets = session->offsets;
	size_t		full_offsets_cap = session->offsets_cap;
	size_t		carry = 0;		/* bytes of the record carried over */

	if (session->noffsets == 0)
		return 0;
	if (session_spill_wait(session, err) != 0)
		return -1;
	if (session->sorted)
	{
		const uint8_t *last = full.data + full_offsets[session->noffsets - 1];

		carry = ts_record_size(ts_record_keylen(last), ts_record_valuelen(last));
	}
	/* the spare must take the carried record: nothing can fail after the swap */
	if (!tc_buf_reserve(&job->staged, buffer_size > carry ? buffer_size : carry))
		goto oom;
	if (job->offsets_cap == 0)
	{
		job->offsets = malloc(1024 * sizeof(uint32_t));
		if (job->offsets == NULL)
			goto oom;
		job->offsets_cap = 1024;
	}

	session_account(session);	/* the full buffer's bytes, counted */
	session->staged = job->staged;
	session->offsets = job->offsets;
	session->offsets_cap = job->offsets_cap;
	job->staged = full;
	job->offsets = full_offsets;
	job->offsets_cap = full_offsets_cap;
	job->noffsets = session->noffsets;
	job->sorted = session->sorted;
	session->noffsets = 0;
	session->staged_accounted -= job->staged.len;	/* the job's to drop now */
	if (job->sorted)
	{
		memcpy(session->staged.data,
			   job->staged.data + job->offsets[job->noffsets - 1], carry);
		session->staged.len = carry;
		session->offsets[0] = 0;
		session->noffsets = 1;
	}

	session_account(session);
	job->running = true;
	if (pthread_create(&job->thread, NULL, spill_job_main, session) == 0)
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

int
ts_session_write(TsSession *session, const Tcopy__WriteBatch *batch, TsError *err)
{
	TsStore    *store = session->store;
	TsTable    *table;
	const TsLayout *layout;
	size_t		saved_len;
	size_t		saved_offsets;
	uint64_t	rowid = 0;
	size_t		bound = 0;

	if (session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch after the session was prepared");
		return -1;
	}
	table = ts_store_table(store, batch->table_id, err);
	if (table == NULL)
		return -1;
	/* a table's layout is immutable and outlives a drop: no lock needed */
	layout = &table->layout;

	for (size_t i = 0; i < batch->n_rows; i++)
	{
		const Tcopy__Row *row = batch->rows[i];

		if (ts_row_check(layout, row, err) != 0)
		{
			size_t		len = strlen(err->message);

			snprintf(err->message + len, sizeof(err->message) - len,
					 " (row %zu of batch %llu for table \"%s\")", i + 1,
					 (unsigned long long) batch->seq, table->name);
			return -1;
		}
		/* an upper bound of the row's record; see ts_codec.h for the formats */
		bound += TS_RECORD_HEADER_SIZE + TS_TABLE_ID_SIZE + TS_ROWID_SIZE +
			11 * row->n_ints + 9 * row->n_floats + 13 * row->n_blobs + row->n_nulls;
		for (size_t b = 0; b < row->n_blobs; b++)
			bound += 2 * row->blobs[b].len;
	}

	/*
	 * Keep the staging buffer at its first size: spill before a batch that
	 * would not fit, rather than let the buffer double.  And while the
	 * sessions together stage more than the store's budget, spill once
	 * EARLY_SPILL_BYTES are staged: every session's memory then stays near
	 * that (the spill waits for the one before, which holds the
	 * connection back), however many sessions there are.
	 */
	if (session->staged.len > 0 &&
		(session->staged.len + bound > session->staged.cap ||
		 (store->opts.memory_bytes > 0 && session->staged.len >= EARLY_SPILL_BYTES &&
		  atomic_load(&store->staged_bytes) + bound > store->opts.memory_bytes)) &&
		session_spill_start(session, err) != 0)
		return -1;
	/* what a failed batch goes back to: after the spill, which swaps buffers */
	saved_len = session->staged.len;
	saved_offsets = session->noffsets;
	if (session->staged.cap == 0 &&
		!tc_buf_reserve(&session->staged, store->opts.session_memory_bytes / 2 > bound ?
						store->opts.session_memory_bytes / 2 : bound))
		goto oom;
	if (session->noffsets + batch->n_rows > session->offsets_cap)
	{
		size_t		cap = session->offsets_cap ? session->offsets_cap : 1024;
		uint32_t   *offsets;

		while (cap < session->noffsets + batch->n_rows)
			cap *= 2;
		offsets = realloc(session->offsets, cap * sizeof(uint32_t));
		if (offsets == NULL)
			goto oom;
		session->offsets = offsets;
		session->offsets_cap = cap;
	}
	if (session_note_table(session, table->id) != 0)
		goto oom;
	if (layout->nkey == 0)
		rowid = atomic_fetch_add(&table->next_rowid, batch->n_rows);

	for (size_t i = 0; i < batch->n_rows; i++)
	{
		const Tcopy__Row *row = batch->rows[i];
		size_t		start = session->staged.len;
		size_t		key_end;
		uint32_t	keylen,
					valuelen;
		bool		ok;

		if (start > UINT32_MAX - TS_RECORD_HEADER_SIZE ||
			!tc_buf_reserve(&session->staged, TS_RECORD_HEADER_SIZE))
			goto oom;
		session->staged.len += TS_RECORD_HEADER_SIZE;
		if (layout->nkey == 0)
			ok = ts_key_encode_rowid(table->id, rowid++, &session->staged);
		else
			ok = ts_key_encode(layout, table->id, row, &session->staged);
		key_end = session->staged.len;
		if (!ok || !ts_value_encode(layout, row, &session->staged))
			goto oom;
		keylen = (uint32_t) (key_end - start - TS_RECORD_HEADER_SIZE);
		valuelen = (uint32_t) (session->staged.len - key_end);
		ts_record_put_header(session->staged.data + start, keylen, valuelen);

		/* one key below its predecessor, and spills sort into runs for good */
		if (session->sorted && session->noffsets > 0)
		{
			const uint8_t *prev = session->staged.data +
				session->offsets[session->noffsets - 1];

			if (ts_key_compare(ts_record_key(prev), ts_record_keylen(prev),
							   ts_record_key(session->staged.data + start), keylen) > 0)
				session->sorted = false;
		}
		session->offsets[session->noffsets++] = (uint32_t) start;
	}
	session->rows += batch->n_rows;
	session_account(session);
	return 0;

oom:
	session->staged.len = saved_len;
	session->noffsets = saved_offsets;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
				 "out of memory staging a batch of %zu rows", batch->n_rows);
	return -1;
}

/* Publish the staged buffer as one synced WriteBatch. */
static int
commit_write_batch(TsSession *session, TsError *err)
{
	TsStore    *store = session->store;
	rocksdb_writebatch_t *wb;
	char	   *errptr = NULL;

	if (ts_store_check_space(store, session->staged.len, err) != 0)
		return -1;
	wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < session->noffsets; i++)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);

		rocksdb_writebatch_put_cf(wb, store->cf_data,
								  (const char *) ts_record_key(rec), keylen,
								  (const char *) ts_record_value(rec, keylen),
								  ts_record_valuelen(rec));
	}
	rocksdb_write(store->db, store->write_sync, wb, &errptr);
	rocksdb_writebatch_destroy(wb);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not commit the session", errptr);
		return -1;
	}
	return 0;
}

/*
 * A session's SST files: first those written straight from sorted spills,
 * then those merged from runs, part after part of the key space.  The
 * direct files are in key order and do not overlap, nor do the merged
 * ones; where the two overlap, the later file must win.  A merge part
 * writes files of its own (part >= 0), appended to the session's after.
 */
struct SstSink
{
	TsSession  *session;
	int			part;			/* merge part, or -1 for the direct files */
	rocksdb_sstfilewriter_t *writer;	/* file being written, or NULL */
	char	  **files;			/* [nfiles] paths, in precedence order */
	size_t		nfiles;
	uint64_t	entries_in_file;
	uint64_t	finished_bytes; /* size of the files finished */
};

/* Finish the SST file being written, if any. */
static int
sst_sink_finish_file(SstSink *sink, TsError *err)
{
	char	   *errptr = NULL;
	uint64_t	size = 0;

	if (sink->writer == NULL)
		return 0;
	rocksdb_sstfilewriter_finish(sink->writer, &errptr);
	rocksdb_sstfilewriter_file_size(sink->writer, &size);
	sink->finished_bytes += size;
	rocksdb_sstfilewriter_destroy(sink->writer);
	sink->writer = NULL;
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not write SST file", errptr);
		return -1;
	}
	return 0;
}

/* Add a record to the current SST file, starting a new one as needed. */
static int
sst_sink_put(void *arg, const uint8_t *key, uint32_t keylen,
			 const uint8_t *value, uint32_t valuelen, TsError *err)
{
	SstSink    *sink = arg;
	TsStore    *store = sink->session->store;
	char	   *errptr = NULL;

	if (sink->writer == NULL)
	{
		char	  **grown = realloc(sink->files, (sink->nfiles + 1) * sizeof(char *));
		char		path[4200];

		if (grown == NULL)
			goto oom;
		sink->files = grown;
		if (sink->part < 0)
			snprintf(path, sizeof(path), "%s/ingest-%06zu.sst", sink->session->dir, sink->nfiles);
		else
			snprintf(path, sizeof(path), "%s/merge-%02d-%06zu.sst", sink->session->dir,
					 sink->part, sink->nfiles);
		if ((sink->files[sink->nfiles] = strdup(path)) == NULL)
			goto oom;
		sink->nfiles++;
		sink->writer = rocksdb_sstfilewriter_create(store->env_options, store->options);
		rocksdb_sstfilewriter_open(sink->writer, path, &errptr);
		if (errptr != NULL)
			goto rocks_err;
		sink->entries_in_file = 0;
	}
	rocksdb_sstfilewriter_put(sink->writer, (const char *) key, keylen,
							  (const char *) value, valuelen, &errptr);
	if (errptr != NULL)
		goto rocks_err;
	if (++sink->entries_in_file % 4096 == 0)
	{
		uint64_t	size = 0;

		rocksdb_sstfilewriter_file_size(sink->writer, &size);
		if (size >= store->opts.sst_target_bytes)
			return sst_sink_finish_file(sink, err);
	}
	return 0;

rocks_err:
	ts_error_rocksdb(err, "could not write SST file", errptr);
	return -1;
oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory merging staged runs");
	return -1;
}

static void
sst_sink_free(SstSink *sink)
{
	if (sink->writer != NULL)
		rocksdb_sstfilewriter_destroy(sink->writer);
	for (size_t i = 0; i < sink->nfiles; i++)
		free(sink->files[i]);
	free(sink->files);
}

/* Add a staged record (ts_record.h). */
static int
sst_sink_put_record(SstSink *sink, const uint8_t *rec, TsError *err)
{
	uint32_t	keylen = ts_record_keylen(rec);

	return sst_sink_put(sink, ts_record_key(rec), keylen,
						ts_record_value(rec, keylen), ts_record_valuelen(rec), err);
}

/* Bytes in the sink's files so far, the one being written included. */
static uint64_t
sst_sink_bytes(SstSink *sink)
{
	uint64_t	size = 0;

	if (sink->writer != NULL)
		rocksdb_sstfilewriter_file_size(sink->writer, &size);
	return sink->finished_bytes + size;
}

/* The session's SST sink, made on first use (with the staging directory). */
static SstSink *
session_sst_sink(TsSession *session, TsError *err)
{
	SstSink    *sink;

	if (session->sst != NULL)
		return session->sst;
	if (session_make_dir(session) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create staging directory \"%s\": %s", session->dir,
					 strerror(errno));
		return NULL;
	}
	sink = calloc(1, sizeof(SstSink));
	if (sink == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	sink->session = session;
	sink->part = -1;
	session->sst = sink;
	return sink;
}

/* Path of run r of the session. */
static void
run_path(const TsSession *session, uint32_t r, char *path, size_t size)
{
	snprintf(path, size, "%s/run-%06u", session->dir, r);
}

/* Paths of the session's runs, [nruns] strings to free with free_paths. */
static char **
run_paths(const TsSession *session)
{
	char	  **paths = calloc(session->nruns, sizeof(char *));
	char		path[4200];

	for (uint32_t r = 0; paths != NULL && r < session->nruns; r++)
	{
		run_path(session, r, path, sizeof(path));
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

static void
free_paths(char **paths, uint32_t n)
{
	for (uint32_t i = 0; paths != NULL && i < n; i++)
		free(paths[i]);
	free(paths);
}

/* Keep the index of the run just written, as run session->nruns. */
static int
session_add_run(TsSession *session, TsRunIndex *index)
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
 * Merge all runs into one, so that no merge ever opens more than
 * RUN_FAN_IN files however large the session grows: files and read
 * buffers stay bounded, at the cost of writing the merged data once more.
 */
static int
session_compact_runs(TsSession *session, TsError *err)
{
	TsRunWriter writer;
	char		merged[4200];
	char		path[4200];
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
	result = ts_run_merge(paths, session->run_indexes, session->nruns, NULL, NULL,
						  run_writer_put, &writer, err);
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
		run_path(session, r, path, sizeof(path));
		unlink(path);
		ts_run_index_free(&session->run_indexes[r]);
	}
	ts_log(TS_LOG_DEBUG, "session %llu: merged %u runs into one (%llu bytes)",
		   (unsigned long long) session->id, session->nruns,
		   (unsigned long long) writer.written);
	session->nruns = 0;
	(void) session_add_run(session, &writer.index);	/* has room */
	run_path(session, 0, path, sizeof(path));
	if (rename(merged, path) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not rename \"%s\": %s", merged, strerror(errno));
		return -1;
	}
	session_account_spilled(session, session->direct_bytes + writer.written);
	return 0;
}

/* One part of a commit's merge: the runs' keys in [lo, hi), into SST files. */
typedef struct MergePart
{
	TsSession  *session;
	char	  **paths;
	const TcBuf *lo;
	const TcBuf *hi;
	SstSink		sink;
	bool		started;		/* its thread */
	pthread_t	thread;
	int			result;
	TsError		err;
} MergePart;

static void *
merge_part_main(void *arg)
{
	MergePart  *part = arg;
	TsSession  *session = part->session;

	part->result = ts_run_merge(part->paths, session->run_indexes, session->nruns,
								part->lo, part->hi, sst_sink_put, &part->sink, &part->err);
	if (part->result == 0)
		part->result = sst_sink_finish_file(&part->sink, &part->err);
	return NULL;
}

/*
 * Merge the session's runs into SST files appended to sink's.  With runs
 * large enough and more than one merge thread, the key space is split
 * into parts of about equal size (from the runs' indexes), each merged by
 * a thread of its own into files of its own: the parts do not overlap
 * and come in key order, so their files follow each other in the sink as
 * one merge's would.
 */
static int
session_merge_runs(TsSession *session, SstSink *sink, TsError *err)
{
	TsStore    *store = session->store;
	uint64_t	part_bytes = store->opts.merge_part_bytes ? store->opts.merge_part_bytes : 1;
	uint64_t	run_bytes = session->spilled_bytes - session->direct_bytes;
	uint64_t	fit = run_bytes / part_bytes + 1;
	int			nparts = fit < (uint64_t) store->opts.merge_threads ?
		(int) fit : store->opts.merge_threads;
	TcBuf		splits[TS_MERGE_THREADS_MAX] = {{0}};
	MergePart	parts[TS_MERGE_THREADS_MAX];
	char	  **paths = run_paths(session);
	int			nsplits;
	int			result = 0;

	nsplits = paths == NULL ? -1 : ts_run_split_keys(session->run_indexes, session->nruns,
												   nparts, splits);
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
		parts[p].lo = p > 0 ? &splits[p - 1] : NULL;
		parts[p].hi = p < nsplits ? &splits[p] : NULL;
		parts[p].sink.session = session;
		parts[p].sink.part = p;
	}
	/* parts 1.. in threads of their own, part 0 in this one */
	for (int p = 1; p < nparts; p++)
		parts[p].started = pthread_create(&parts[p].thread, NULL, merge_part_main, &parts[p]) == 0;
	for (int p = 1; p < nparts; p++)
		if (!parts[p].started)
			merge_part_main(&parts[p]);
	merge_part_main(&parts[0]);
	for (int p = 1; p < nparts; p++)
		if (parts[p].started)
			pthread_join(parts[p].thread, NULL);
	ts_log(TS_LOG_DEBUG, "session %llu: merged %u runs (%llu bytes) in %d part%s",
		   (unsigned long long) session->id, session->nruns,
		   (unsigned long long) run_bytes, nparts, nparts == 1 ? "" : "s");

	for (int p = 0; p < nparts; p++)
	{
		SstSink    *from = &parts[p].sink;

		if (result == 0 && parts[p].result != 0)
		{
			*err = parts[p].err;
			result = -1;
		}
		if (result == 0 && from->nfiles > 0)
		{
			char	  **grown = realloc(sink->files, (sink->nfiles + from->nfiles) * sizeof(char *));

			if (grown == NULL)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
				result = -1;
			}
			else
			{
				sink->files = grown;
				memcpy(sink->files + sink->nfiles, from->files, from->nfiles * sizeof(char *));
				sink->nfiles += from->nfiles;
				sink->finished_bytes += from->finished_bytes;
				from->nfiles = 0;
			}
		}
		sst_sink_free(from);
	}
	for (int i = 0; i < nsplits; i++)
		tc_buf_free(&splits[i]);
	free_paths(paths, session->nruns);
	return result;
}

/* Publish the SST files of a merged session in one ingestion. */
static int
commit_ingest(TsSession *session, char **files, size_t nfiles, TsError *err)
{
	TsStore    *store = session->store;
	rocksdb_ingestexternalfileoptions_t *options;
	char	   *errptr = NULL;

	if (nfiles == 0)
		return 0;
	options = rocksdb_ingestexternalfileoptions_create();
	rocksdb_ingestexternalfileoptions_set_move_files(options, 1);
	rocksdb_ingestexternalfileoptions_set_allow_global_seqno(options, 1);
	rocksdb_ingestexternalfileoptions_set_allow_blocking_flush(options, 1);
	rocksdb_ingest_external_file_cf(store->db, store->cf_data,
									(const char *const *) files, nfiles,
									options, &errptr);
	rocksdb_ingestexternalfileoptions_destroy(options);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not ingest the session's files", errptr);
		return -1;
	}
	return 0;
}

int
ts_session_prepare(TsSession *session, TsError *err)
{
	if (session->prepared)
		return 0;
	if (session_spill_wait(session, err) != 0)
		return -1;
	if (session->sorted && session->sst != NULL)
	{
		/* every spill went to SST files: the rest is the last of them */
		if (spill_sorted_records(session, &session->staged, session->offsets,
								 session->noffsets, session->noffsets, err) != 0 ||
			sst_sink_finish_file(session->sst, err) != 0)
			return -1;
		session->staged.len = 0;
		session->noffsets = 0;
		session_account(session);
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
		SstSink    *sst = session_sst_sink(session, err);

		if (sst == NULL ||
			(session->noffsets > 0 &&
			 spill_run(session, &session->staged, session->offsets, session->noffsets,
					   err) != 0) ||
			sst_sink_finish_file(sst, err) != 0 ||
			session_merge_runs(session, sst, err) != 0 ||
			sst_sink_finish_file(sst, err) != 0)
			return -1;
	}
	session->prepared = true;
	return 0;
}

int
ts_session_commit(TsSession *session, uint64_t *rows, TsError *err)
{
	TsStore    *store = session->store;
	int			result;
	double		start_ms,
				prepared_ms;

	*rows = session->rows;
	start_ms = monotonic_ms();

	/*
	 * The slow part of a spilled session (the last spill, the merge into
	 * SST files) runs before taking the tables lock, so that creating,
	 * truncating or dropping tables does not wait for it.
	 */
	result = ts_session_prepare(session, err);
	prepared_ms = monotonic_ms();

	/* shared: tables cannot be dropped or truncated while we publish */
	pthread_rwlock_rdlock(&store->tables_lock);
	for (size_t i = 0; result == 0 && i < session->ntables; i++)
	{
		if (ts_store_table_locked(store, session->tables[i], NULL) == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE,
						 "table with id %u was dropped while the session wrote to it",
						 session->tables[i]);
			result = -1;
		}
	}
	if (result == 0 && session->rows > 0)
	{
		if (session->sst == NULL)
			result = commit_write_batch(session, err);
		else
			result = commit_ingest(session, session->sst->files, session->sst->nfiles, err);
	}
	pthread_rwlock_unlock(&store->tables_lock);

	if (result == 0)
	{
		atomic_fetch_add(&store->sessions_committed, 1);
		atomic_fetch_add(&store->rows_committed, session->rows);
		ts_log(TS_LOG_DEBUG, "session %llu committed %llu rows (%u runs): "
			   "prepare %.0f ms, publish %.0f ms",
			   (unsigned long long) session->id, (unsigned long long) session->rows,
			   session->nruns, prepared_ms - start_ms, monotonic_ms() - prepared_ms);
	}
	else
		atomic_fetch_add(&store->sessions_aborted, 1);
	session_free(session);
	return result;
}

void
ts_session_abort(TsSession *session)
{
	atomic_fetch_add(&session->store->sessions_aborted, 1);
	session_free(session);
}
