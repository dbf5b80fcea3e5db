/*
 * ts_staging.h
 *		One session's write path (src/tserver/staging/), its folder's
 *		header: the small modules' own headers (on_conflict policies and
 *		the duplicate's report, ts_conflict.h; sorted runs, ts_run.h;
 *		sorting staged records, ts_sort.h; key claims across concurrent
 *		sessions, ts_key_claims.h), the session's private struct and what
 *		its phases share, spills of the staging buffer (ts_spill.c), the SST
 *		files a session writes (ts_sst_sink.c), the runs kept, compacted
 *		and merged (ts_merge.c), and which row a duplicate is
 *		(ts_session_ordinal.c).  The session struct lives here, in the
 *		lowest folder that uses it; the layers above (registry/, session/)
 *		own the snapshot and the streams it points to.
 */
#ifndef TS_STAGING_H
#define TS_STAGING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tc_buf.h"
#include "tc_frame.h"
#include "ts_error.h"
#include "ts_group.h"
#include "ts_histogram.h"
#include "ts_key.h"
#include "ts_record.h"
#include "ts_storage_int.h"

#include "ts_conflict.h"
#include "ts_key_claims.h"
#include "ts_run.h"
#include "ts_sort.h"

/*
 * The staging layer's part of the store, which TsStore.staging points to
 * (allocated by ts_store_open, freed by ts_store_close).
 */
typedef struct TsStaging
{
	/*
	 * Key claims of sessions with on_conflict policies, and the open
	 * sessions in the order they began (ts_key_claims.c), under
	 * key_claims_lock, which is taken before tables_lock and under no
	 * other.
	 */
	pthread_mutex_t key_claims_lock;
	TsKeyClaim **key_claims;	/* [nkey_claims] */
	size_t		nkey_claims;
	size_t		key_claims_cap;
	uint64_t	publish_seq;	/* claims published so far */
	TsSession  *live_first;
	TsSession  *live_last;
} TsStaging;

typedef struct TsSnapshot TsSnapshot;	/* registry/ts_snapshot.c */
typedef struct TsStreams TsStreams;	/* session/ts_streams.c: the streams of one session */

/* A load label of a table, as a session claims it and publishes it. */
typedef struct TsLabelRef
{
	uint32_t	table_id;
	char	   *label;			/* 1 .. TS_LABEL_MAX bytes, NUL-terminated */
} TsLabelRef;

#define RUN_FAN_IN 64			/* runs merged at once, at most */
#define TS_PREPARE_SST_BYTES (4 * 1024 * 1024)	/* a never-spilled session at
												 * least this large is
												 * written as SST files */
#define EARLY_SPILL_BYTES (1024 * 1024)	/* staged before a spill forced by
										 * the store's memory budget */

/*
 * A session's SST files: first those written straight from sorted spills,
 * then those merged from runs, part after part of the key space.  A file
 * holds one table's keys: the direct files of each table are in its key
 * order and do not overlap, nor do the merged ones; where the two overlap,
 * the later file must win.  A merge part writes files of its own (part >=
 * 0), appended to the session's after.
 */
typedef struct SstSink
{
	TsSession  *session;
	int			part;			/* merge part, or -1 for the direct files */
	rocksdb_sstfilewriter_t *writer;	/* file being written, or NULL */
	uint32_t	table_id;		/* whose keys the file being written holds */
	char	  **files;			/* [nfiles] paths, in precedence order */
	uint32_t   *file_tables;	/* [nfiles] whose keys each holds */
	size_t		nfiles;
	size_t		named;			/* files named so far: the next name's number
								 * (a truncate removes files from the list) */
	uint64_t	entries_in_file;
	uint64_t	finished_bytes; /* size of the files finished */
	TsStoredCheck stored;		/* keys against stored rows, per file */
	TsKeyRanges ranges;			/* of the keys of tables with a policy */
	bool		unchecked;		/* the next put is not checked against on_conflict */
} SstSink;

/*
 * Which rows of the session a staging buffer's records are, to name the
 * row of a duplicate (TsError.row_ordinal, ts_session_ordinal.c).  The
 * records are in arrival order: the buffer's k-th new record is row
 * rows_before + k (1-based), after the records carried over from the
 * buffer before (a sorted spill's last of each table), if any, whose rows
 * are carried[].  A row not staged (a duplicate IGNOREd as it arrives)
 * shifts every row after it: from row skipped on, the buffer's rows are
 * not known.  Nothing is kept per record: a record's index is found, on a
 * duplicate only, by walking the buffer.
 */
typedef struct TsOrdinals
{
	uint64_t	rows_before;	/* session rows before the buffer's new records */
	size_t		ncarried;		/* records [0, ncarried) were carried over */
	uint64_t   *carried;		/* [ncarried] their rows (0: not known), in an
								 * array of the buffer's owner */
	uint64_t	skipped;		/* the first row not staged; 0: none */
} TsOrdinals;

/* Row (1-based) of the buffer's index-th record; 0 when not known. */
static inline uint64_t
ts_ordinals_row(const TsOrdinals *ordinals, size_t index)
{
	uint64_t	row;

	if (index < ordinals->ncarried)
		return ordinals->carried[index];
	row = ordinals->rows_before + (index - ordinals->ncarried) + 1;
	if (ordinals->skipped != 0 && row >= ordinals->skipped)
		return 0;
	return row;
}

/* Row row of the session was not staged: the rows after it are not known. */
static inline void
ts_ordinals_skip(TsOrdinals *ordinals, uint64_t row)
{
	if (ordinals->skipped == 0)
		ordinals->skipped = row;
}

/*
 * A spill in the background (ts_spill_start): one at a time, so that
 * runs and SST files are written in arrival order.
 */
typedef struct SpillJob
{
	TcBuf		staged;			/* records being spilled; else the spare buffer */
	uint32_t   *offsets;		/* [noffsets] record offsets in staged */
	size_t		noffsets;
	size_t		offsets_cap;
	uint64_t   *carried;		/* [carried_cap] rows of carried records */
	size_t		carried_cap;	/* (ordinals.carried), else the spare array */
	bool		sorted;			/* to SST files, all but each table's last
								 * record */
	size_t		ntables;		/* tables with records in staged, if sorted */
	bool		running;		/* thread started and not yet joined */
	pthread_t	thread;
	int			result;			/* 0, or -1 with err: the session failed */
	TsError		err;
	TsOrdinals	ordinals;		/* which rows staged's records are */
} SpillJob;

struct TsSession
{
	TsStore    *store;
	uint64_t	id;
	TsGroupShipping shipping;	/* its SST files on their way to the replica
								 * group's members (ts_sst_sink.c) */
	TsSnapshot *snapshot;		/* updates and deletes checked against it, or NULL */
	bool		(*give_up) (void *arg);	/* asked while held back behind an */
	void	   *give_up_arg;	/* in-doubt session; NULL: only time ends it */
	TcBuf		staged;			/* records (ts_record.h): see ts_session.c */
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
	bool		sorted;			/* no staged key was below the one before it
								 * of its table */
	bool		dir_made;
	char		dir[SESSION_DIR_SIZE];	/* staging directory of this session */
	uint32_t   *tables;			/* ids of the tables written to */
	uint32_t   *table_last;		/* [ntables] offset + 1 in staged of each
								 * one's last record; 0: none there */
	size_t		ntables;
	size_t		tables_cap;
	uint64_t   *carried;		/* [carried_cap]: ordinals.carried's array */
	size_t		carried_cap;
	uint32_t   *truncates;		/* staged TRUNCATEs: table ids, each once */
	size_t		ntruncates;
	uint32_t   *drops;			/* staged DROPs: table ids, each once */
	size_t		ndrops;
	TsLabelRef *labels;			/* load labels it claimed (ts_labels.c) */
	size_t		nlabels;
	bool		prepared;		/* ts_session_prepare done: only publish left */
	bool		keep_dir;		/* prepared: the staging directory outlives it */
	SstSink    *sst;			/* SST files to ingest, in precedence order */
	TsStreams  *streams;		/* open to streams (ts_streams.c), or NULL;
								 * set under the store's sessions_lock */
	TsConflicts conflicts;		/* on_conflict of the tables that set one */
	TsKeyRanges direct_ranges;	/* of the keys written to direct SST files,
								 * per table, while conflicts has policies */
	SpillJob	spill;			/* runs, nruns, sst and spilled_bytes are its
								 * own while it runs */
	TsOrdinals	ordinals;		/* which rows staged's records are */
	/* ts_key_claims.c's, under the store's key_claims_lock */
	bool		watching;		/* ts_key_claims_watch was called */
	uint64_t	claims_seq;		/* the store's publish_seq then */
	TsSession  *live_prev;		/* watching sessions, in the order they began to */
	TsSession  *live_next;
	bool		claimed;		/* its keys are claimed */
	bool		claim_kept;		/* prepared durably: the claim outlives it */
	/* ts_session_read.c's: the registry, under the store's sessions_lock */
	bool		registered;
	TsSession  *reg_prev;
	TsSession  *reg_next;
	uint8_t		key[16];		/* a scan of its writes names it */
	/* what the list of open sessions shows (ts_sessions_list) */
	uint64_t	began_us;		/* ts_monotonic_us at its BEGIN */
	uint64_t	client_system;	/* Begin's client_* */
	uint32_t	client_database;
	uint32_t	client_pid;
	char	   *scope;			/* its credential's namespace; NULL: full access */
	size_t		scope_len;
	_Atomic uint64_t spilled_now;	/* spilled_bytes, for other threads */
	pthread_mutex_t lock;		/* what is staged, against a scan's copy */
	rocksdb_t  *read_db;		/* the direct SST files, ingested for scans */
	size_t		read_db_files;	/* how many of them it holds */
	TcBuf		direct_deletes; /* keys deleted in the direct SST files, in
								 * key order: [u32 length][key] each (the
								 * spill's while it runs) */
};

/* Is id one of ids[n]? */
static inline bool
ids_contain(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Set the session's count of bytes in staging files, and the store's. */
static inline void
ts_session_account_spilled(TsSession *session, uint64_t now)
{
	if (now >= session->spilled_bytes)
		atomic_fetch_add(&session->store->spilled_bytes, now - session->spilled_bytes);
	else
		atomic_fetch_sub(&session->store->spilled_bytes, session->spilled_bytes - now);
	session->spilled_bytes = now;
	atomic_store(&session->spilled_now, now);
}

/*
 * Keep the store's count of staged bytes equal to what this session's
 * receiving buffer holds.  A buffer handed to a background spill takes its
 * bytes along, and the spill drops them from the count when it is done.
 */
static inline void
ts_session_account(TsSession *session)
{
	uint64_t	now = session->staged.len;

	if (now >= session->staged_accounted)
		atomic_fetch_add(&session->store->staged_bytes, now - session->staged_accounted);
	else
		atomic_fetch_sub(&session->store->staged_bytes, session->staged_accounted - now);
	session->staged_accounted = now;
}

/* Create the session's staging directory, once; 0 or -1 with errno. */
static inline int
ts_session_make_dir(TsSession *session)
{
	if (session->dir_made)
		return 0;
	if (mkdir(session->dir, 0700) != 0 && errno != EEXIST)
		return -1;
	session->dir_made = true;
	return 0;
}

/* Path of run r of the session. */
static inline void
ts_session_run_path(const TsSession *session, uint32_t r, char *path, size_t size)
{
	snprintf(path, size, "%s/run-%06u", session->dir, r);
}

/* in ts_session_ordinal.c: the session's TsConflictReport, arg the session */
int			ts_session_report_duplicate(void *arg, const uint8_t *key, uint32_t keylen,
										const uint8_t *value, uint32_t valuelen,
										TsError *err);

/* The table id of a record's key (its first 4 bytes, big-endian). */
static inline uint32_t
ts_record_table(const uint8_t *rec)
{
	return ts_record_keylen(rec) < TS_TABLE_ID_SIZE ? 0 : ts_get_be32(ts_record_key(rec));
}

/* Index of table_id in the session's tables, or -1. */
static inline ssize_t
ts_session_table_index(const TsSession *session, uint32_t table_id)
{
	for (size_t i = 0; i < session->ntables; i++)
		if (session->tables[i] == table_id)
			return (ssize_t) i;
	return -1;
}

/* How many of the session's tables have records in its staging buffer. */
static inline size_t
ts_session_buffer_tables(const TsSession *session)
{
	size_t		n = 0;

	for (size_t t = 0; t < session->ntables; t++)
		n += session->table_last[t] != 0;
	return n;
}

/* in ts_spill.c */
/* Whether the calling thread is running a spill (spill_job_main). */
bool		ts_spill_in_job(void);
int			ts_spill_start(TsSession *session, TsError *err);
int			ts_spill_wait(TsSession *session, TsError *err);
/*
 * Order offsets[0, n) by table, tables in id order, each table's records
 * in their order: a sorted session's records are then in key order.
 * 0, or -1 with err (out of memory: offsets unchanged).
 */
int			ts_spill_group_by_table(const TcBuf *staged, uint32_t *offsets, size_t n,
									TsError *err);
int			ts_spill_sorted_records(TsSession *session, const TcBuf *staged,
									uint32_t *offsets, size_t n, bool carry,
									TsError *err);
int			ts_spill_run(TsSession *session, const TcBuf *staged, uint32_t *offsets,
						 size_t n, TsError *err);
int			ts_spill_mem_run(TsSession *session, const TcBuf *staged, uint32_t *offsets,
							 size_t n, TsMemRun *mem, TsError *err);

/* in ts_sst_sink.c */
void		ts_sst_sink_init(SstSink *sink, TsSession *session, int part);
SstSink    *ts_sst_sink_get(TsSession *session, TsError *err);
int			ts_sst_sink_put(void *arg, const uint8_t *key, uint32_t keylen,
							const uint8_t *value, uint32_t valuelen, TsError *err);
int			ts_sst_sink_put_record(SstSink *sink, const uint8_t *rec, TsError *err);
int			ts_sst_sink_finish_file(SstSink *sink, TsError *err);
uint64_t	ts_sst_sink_bytes(SstSink *sink);
int			ts_sst_sink_take(SstSink *sink, SstSink *from, TsError *err);
int			ts_sst_sink_drop_table(SstSink *sink, uint32_t table_id, TsError *err);
void		ts_sst_sink_free(SstSink *sink);

/* in ts_merge.c */
int			ts_merge_add_run(TsSession *session, TsRunIndex *index);
int			ts_merge_compact_runs(TsSession *session, TsError *err);
int			ts_merge_drop_table(TsSession *session, uint32_t table_id, TsError *err);
int			ts_merge_runs(TsSession *session, const TsMemRun *last, SstSink *sink,
						  TsError *err);

/* in ts_merge.c: ts_merge_runs, from its first part to its last joined (ts_durations.h) */
extern TsHistogram ts_merge_durations;

#endif							/* TS_STAGING_H */
