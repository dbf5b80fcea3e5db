/*
 * ts_staging.h
 *		One session's write path (src/tserver/staging/), the one header of
 *		its folder: on_conflict policies and the duplicate's report
 *		(ts_conflict.c), sorted runs (ts_run.c), sorting staged records
 *		(ts_sort.c), key claims across concurrent sessions
 *		(ts_key_claims.c), the session's private struct and what its
 *		phases share, spills of the staging buffer (ts_spill.c), the SST
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

/*
 * on_conflict (ts_conflict.c)
 *		What a session does with rows of equal keys (on_conflict): each table
 *		the session set a policy for, and the duplicate's report.  A table
 *		without one replaces (the last row wins), and a session with none
 *		pays nothing: ts_conflicts_policy is called only where two records
 *		of one key meet, which is rare.  Design in docs/storage.md, "Duplicate
 *		keys".
 */

/*
 * Fill err with ERROR_DUPLICATE_KEY for the record (key, value) whose key
 * another record of the session has; returns -1.
 */
typedef int (*TsConflictReport) (void *arg, const uint8_t *key, uint32_t keylen,
								 const uint8_t *value, uint32_t valuelen, TsError *err);

/* A table's policy. */
typedef struct TsConflictPolicy
{
	uint32_t	table_id;
	Tcopy__OnConflict policy;
} TsConflictPolicy;

/*
 * The policies of a session's tables.  Only the session's connection sets
 * them, but threads that stage or spill the session's rows read them at
 * the same time (a partition's policy is set while the streams of the
 * session stage other partitions' rows): the entries are appended, and an
 * array outgrown is kept until the session ends, so that a reader loads n,
 * then the array, and reads n entries without a lock.
 */
typedef struct TsConflicts
{
	_Atomic uint32_t n;
	_Atomic(TsConflictPolicy *) entries;
	uint32_t	cap;
	void	   *blocks;			/* the arrays, newest first, freed at the end */
	TsConflictReport report;	/* for ON_CONFLICT_ERROR */
	void	   *report_arg;
} TsConflicts;

/* How many tables have a policy; *entries (if given) their policies. */
static inline uint32_t
ts_conflicts_count(const TsConflicts *conflicts, const TsConflictPolicy **entries)
{
	uint32_t	n = atomic_load_explicit(&conflicts->n, memory_order_acquire);

	if (entries != NULL)
		*entries = atomic_load_explicit(&conflicts->entries, memory_order_acquire);
	return n;
}

/* The policy for key's table (its first 4 bytes); REPLACE without one. */
static inline Tcopy__OnConflict
ts_conflicts_policy(const TsConflicts *conflicts, const uint8_t *key, uint32_t keylen)
{
	const TsConflictPolicy *entries;
	uint32_t	n;
	uint32_t	table_id;

	if (conflicts == NULL || keylen < 4 ||
		(n = ts_conflicts_count(conflicts, &entries)) == 0)
		return TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE;
	table_id = ts_get_be32(key);
	for (uint32_t i = 0; i < n; i++)
		if (entries[i].table_id == table_id)
			return entries[i].policy;
	return TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE;
}

/* Whether any table has a policy other than REPLACE (what is checked). */
static inline bool
ts_conflicts_checked(const TsConflicts *conflicts)
{
	const TsConflictPolicy *entries;
	uint32_t	n = ts_conflicts_count(conflicts, &entries);

	for (uint32_t i = 0; i < n; i++)
		if (entries[i].policy != TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
			return true;
	return false;
}

/*
 * Of n >= 2 records of one key, in arrival order, which to keep: the last
 * (REPLACE), the first (IGNORE); -1 after reporting the second (ERROR).
 */
static inline int
ts_conflicts_pick(const TsConflicts *conflicts, const uint8_t *key, uint32_t keylen,
				  size_t n, const uint8_t *second_value, uint32_t second_valuelen,
				  size_t *keep, TsError *err)
{
	*keep = n - 1;
	switch (ts_conflicts_policy(conflicts, key, keylen))
	{
		case TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE:
			*keep = 0;
			return 0;
		case TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR:
			return conflicts->report(conflicts->report_arg, key, keylen,
									 second_value, second_valuelen, err);
		default:
			return 0;
	}
}

/*
 * The TsConflictReport of sessions, arg their TsStore: the message names the
 * key columns and the record's values, the table travels in err->table_id.
 */
int			ts_conflict_report_duplicate(void *arg, const uint8_t *key, uint32_t keylen,
										 const uint8_t *value, uint32_t valuelen,
										 TsError *err);

/*
 * Keys of a session checked against the rows stored (committed) already,
 * in increasing key order, through one iterator: a key is looked up with a
 * Seek only when the iterator is below it, so keys in a range that holds
 * no stored row (a load into an empty or disjoint range) cost a memcmp.
 * The iterator reads the store as it was when made: end the check (or let
 * a new SST file start) to see rows committed since.
 */
typedef struct TsStoredCheck
{
	void	   *iter;			/* rocksdb_iterator_t, or NULL before the first */
	bool		exhausted;		/* no stored key at or after the last sought */
} TsStoredCheck;

/*
 * Check a key of the session's (in increasing order from the previous
 * one) against the stored rows, under its table's policy: *skip is set
 * for a stored key under IGNORE; a stored key under ERROR is reported
 * (-1).  0 otherwise.  store is the TsStore; the tables truncated[ntruncated]
 * (by the session, before its rows) have no stored rows to check.
 */
int			ts_stored_check(void *store, const TsConflicts *conflicts,
							const uint32_t *truncated, size_t ntruncated, TsStoredCheck *check,
							const uint8_t *key, uint32_t keylen, const uint8_t *value,
							uint32_t valuelen, bool *skip, TsError *err);
/* The same, given the policy of key's table (ts_conflicts_policy). */
int			ts_stored_check_policy(void *store, Tcopy__OnConflict policy,
								   const TsConflicts *conflicts, const uint32_t *truncated,
								   size_t ntruncated, TsStoredCheck *check, const uint8_t *key,
								   uint32_t keylen, const uint8_t *value, uint32_t valuelen,
								   bool *skip, TsError *err);
void		ts_stored_check_end(TsStoredCheck *check);

/* Set table_id's policy, once (PROTOCOL when set to another); 0 or -1. */
int			ts_conflicts_set(TsConflicts *conflicts, uint32_t table_id,
							 Tcopy__OnConflict policy, TsError *err);
void		ts_conflicts_free(TsConflicts *conflicts);

/*
 * runs (ts_run.c)
 *		A session's sorted runs: staging files of records in key order,
 *		each key once, written by its spills and merged at commit.
 *
 * A run file is a sequence of records in the staging format (ts_record.h),
 * so that a spill writes staged records as they are.  The last staging
 * buffer of a session at commit is merged with them from memory
 * (TsMemRun), never written.  While a
 * run is written, its writer keeps a sparse index (the offset and key of
 * a record every TS_RUN_INDEX_STRIDE bytes, and of the first), from which
 * a merge splits the session's key space into parts of about equal size
 * and finds where each part starts in each run, so that the parts can be
 * merged at the same time.
 */

#define TS_RUN_INDEX_STRIDE (256 * 1024)

/* A run's sparse index: keys in key order, with their records' offsets. */
typedef struct TsRunIndex
{
	uint64_t   *offsets;		/* [n] record offsets in the file */
	uint32_t   *key_starts;		/* [n + 1] key i is keys[key_starts[i], key_starts[i + 1]) */
	size_t		n;
	size_t		cap;
	TcBuf		keys;
} TsRunIndex;

void		ts_run_index_free(TsRunIndex *index);

/* A run file being written, through a buffer of its own. */
typedef struct TsRunWriter
{
	int			fd;
	uint8_t    *buffer;
	size_t		buffered;		/* bytes in buffer */
	uint64_t	written;		/* bytes */
	uint64_t	next_indexed;	/* offset from which the next record is indexed */
	uint64_t	stride;			/* TS_RUN_INDEX_STRIDE; tests make it smaller */
	TsRunIndex	index;
} TsRunWriter;

/* Create path for writing; 0, or -1 with errno. */
int			ts_run_writer_open(TsRunWriter *writer, const char *path);

/* Append a record; 0, or -1 with errno. */
int			ts_run_writer_put(TsRunWriter *writer, const uint8_t *key, uint32_t keylen,
							  const uint8_t *value, uint32_t valuelen);
/* The same, with a mark (ts_record.h) before the value unless mark is 0. */
int			ts_run_writer_put_marked(TsRunWriter *writer, const uint8_t *key,
									 uint32_t keylen, int mark, const uint8_t *value,
									 uint32_t valuelen);

/*
 * Append a record in the staging format (ts_record.h) as it is, header
 * included: one copy where ts_run_writer_put makes one a field.
 */
int			ts_run_writer_put_record(TsRunWriter *writer, const uint8_t *rec);

/*
 * Flush and close the file (also after a failure, to release it); 0, or
 * -1 with errno.  The index stays in writer->index, the caller's to keep
 * or free.
 */
int			ts_run_writer_close(TsRunWriter *writer);

/*
 * The last staging buffer of a session at commit, sorted and deduplicated
 * as a run would be, but kept in memory: the merge reads it as the latest
 * run, and it is never written to a file.  Its records stay where they are
 * in the buffer (recs points at them), but for the few a spill rewrites
 * with a mark (an insert after a DELETE of its key, ts_record.h), which
 * are copied into marked.
 */
typedef struct TsMemRun
{
	const uint8_t **recs;		/* [n] records, keys ascending, each once */
	size_t		n;
	size_t		cap;
	TcBuf		marked;			/* records rewritten with a mark */
	size_t	   *marked_at;		/* [nmarked] their places in recs, until finished */
	size_t		nmarked;
	uint64_t	bytes;			/* what they would take in a run file */
	uint64_t	next_indexed;
	uint64_t	stride;			/* TS_RUN_INDEX_STRIDE; tests make it smaller */
	TsRunIndex	index;			/* as a run's, for ts_run_split_keys */
} TsMemRun;

/* Room for n records; 0, or -1 when out of memory. */
int			ts_mem_run_init(TsMemRun *mem, size_t n);

/*
 * Append the record rec (of a buffer that outlives mem), with a mark
 * before its value unless mark is 0; keys must ascend.  0, or -1 when out
 * of memory.
 */
int			ts_mem_run_add(TsMemRun *mem, const uint8_t *rec, int mark);

/* Done adding: every recs[i] points at its record. */
void		ts_mem_run_finish(TsMemRun *mem);
void		ts_mem_run_free(TsMemRun *mem);

/* Where merged records go; 0, or -1 with err. */
typedef int (*TsRunPut) (void *arg, const uint8_t *key, uint32_t keylen,
						 const uint8_t *value, uint32_t valuelen, TsError *err);

/*
 * Keys that split the records of runs[nruns] (by their indexes) into
 * nparts parts of about equal size: splits[0 .. nparts - 2], in key order,
 * distinct.  Fewer when the indexes have too few keys; returns how many,
 * or -1 when out of memory.  Each split is the caller's to free.
 */
int			ts_run_split_keys(const TsRunIndex *indexes, uint32_t nruns, int nparts,
							  TcBuf *splits);

/*
 * Merge the records with keys in [lo, hi) (an empty lo: from the first;
 * an empty hi: to the last) of the run files paths[nruns] into put, in key
 * order, each key once: of equal keys, the record of the latest run (the
 * highest index), or as conflicts (NULL: none) says for the key's table:
 * that of the earliest run (IGNORE), none and an error (ERROR).  0, or -1
 * with err.
 */
int			ts_run_merge(char *const *paths, const TsRunIndex *indexes, uint32_t nruns,
						 const TcBuf *lo, const TcBuf *hi, const TsConflicts *conflicts,
						 TsRunPut put, void *arg, TsError *err);

/* The same, with mem (unless NULL) as one more run, after the files. */
int			ts_run_merge_with(char *const *paths, const TsRunIndex *indexes, uint32_t nruns,
							  const TsMemRun *mem, const TcBuf *lo, const TcBuf *hi,
							  const TsConflicts *conflicts, TsRunPut put, void *arg,
							  TsError *err);

/*
 * sorting (ts_sort.c)
 *		Sorting a session's staged records by key, for its spills.
 */

/*
 * Sort offsets[n], each the offset in base of a staged record
 * (ts_record.h), by key as unsigned byte strings (a prefix first), equal
 * keys by offset, that is by arrival.  0, or -1 when out of memory
 * (offsets untouched).
 */
int			ts_sort_records(const uint8_t *base, uint32_t *offsets, size_t n);

/*
 * key claims (ts_key_claims.c)
 *		Duplicate keys across concurrent sessions: each session with an
 *		on_conflict policy ('error' or 'ignore') claims, when it prepares,
 *		the key range it wrote of each such table, and checks the claims of
 *		the sessions prepared, or published since it spilled.  Design in
 *		docs/storage.md, "Concurrent sessions".
 */

typedef struct TsStore TsStore;
typedef struct TsSession TsSession;
typedef struct TsKeyClaim TsKeyClaim;

/* The lowest and highest key a session wrote of one table. */
typedef struct TsKeyRange
{
	uint32_t	table_id;
	TcBuf		first;
	TcBuf		last;
} TsKeyRange;

/* A session's key ranges, one per table with a policy. */
typedef struct TsKeyRanges
{
	TsKeyRange *ranges;			/* [n] */
	uint32_t	n;
	uint32_t	cap;
} TsKeyRanges;

/* Widen the range of key's table (its first 4 bytes) to key; 0 or -1 (memory). */
int			ts_key_ranges_add(TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen);

/*
 * ts_key_ranges_add for a key above every key added before (an SST sink's
 * keys ascend, as SstFileWriter demands): while its table is the last one
 * added, only the last key is replaced, with no comparison.
 */
static inline int
ts_key_ranges_add_ascending(TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen)
{
	TsKeyRange *r = ranges->n > 0 ? &ranges->ranges[ranges->n - 1] : NULL;

	if (r == NULL || keylen < 4 || r->last.cap < keylen ||
		r->table_id != ((uint32_t) key[0] << 24 | (uint32_t) key[1] << 16 |
						(uint32_t) key[2] << 8 | key[3]))
		return ts_key_ranges_add(ranges, key, keylen);
	memcpy(r->last.data, key, keylen);
	r->last.len = keylen;
	return 0;
}

/* Whether key is within the range of its table (its first 4 bytes). */
bool		ts_key_ranges_contain(const TsKeyRanges *ranges, const uint8_t *key,
								  uint32_t keylen);

/* Widen into's ranges by from's; 0 or -1 (memory). */
int			ts_key_ranges_merge(TsKeyRanges *into, const TsKeyRanges *from);
void		ts_key_ranges_free(TsKeyRanges *ranges);

/* The store's registry: set up at open, freed at close. */
void		ts_key_claims_init(TsStore *store);
void		ts_key_claims_free_all(TsStore *store);

/*
 * A session with a policy is about to check keys against the stored rows
 * before its prepare (a spill, or the merge at prepare): from now on it
 * must see the claims published (once; a session that never spills never
 * watches, so the claims of sessions published meanwhile can go at once).
 */
void		ts_key_claims_watch(TsSession *session);

/*
 * A session is freed: it no longer watches, and its claim goes unless the
 * session was prepared durably or published (ts_key_claims_keep).
 */
void		ts_key_claims_session_end(TsSession *session);

/*
 * At prepare, once every key of the session is in key order: check the
 * session's keys of its policy tables against the claims of other sessions
 * and claim them.  A session that never spilled is first checked against
 * the stored rows (check_stored, which drops the rows 'ignore' keeps out),
 * under the registry's lock, so that nothing is published between the two
 * checks.  A common key with a prepared session fails the session under
 * 'error' (DUPLICATE_KEY); any overlap that cannot be checked key by key
 * (a spilled session on either side, a prepared session restored at
 * startup, 'ignore' meeting a prepared key) fails it with SERIALIZATION.
 */
int			ts_key_claims_prepare(TsSession *session,
								  int (*check_stored) (TsSession *session, TsError *err),
								  TsError *err);

/* The session's claim outlives it: prepared durably, or published. */
void		ts_key_claims_keep(TsSession *session);

/*
 * The claimed session with id was published (its rows are stored): its
 * claim now matters only to the sessions that were watching before.
 */
void		ts_key_claims_published(TsStore *store, uint64_t session_id);

/* The claimed session with id was discarded: its claim goes. */
void		ts_key_claims_release(TsStore *store, uint64_t session_id);

/*
 * At startup, a recorded prepared session: it claims every key of its
 * policy tables, tables[n] (its keys are not read back).
 */
int			ts_key_claims_restore(TsStore *store, uint64_t session_id,
								  const uint32_t *tables, size_t n, TsError *err);

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
	size_t		nfiles;
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
void		ts_sst_sink_free(SstSink *sink);

/* in ts_merge.c */
int			ts_merge_add_run(TsSession *session, TsRunIndex *index);
int			ts_merge_compact_runs(TsSession *session, TsError *err);
int			ts_merge_runs(TsSession *session, const TsMemRun *last, SstSink *sink,
						  TsError *err);

/* in ts_merge.c: ts_merge_runs, from its first part to its last joined (ts_durations.h) */
extern TsHistogram ts_merge_durations;

#endif							/* TS_STAGING_H */
