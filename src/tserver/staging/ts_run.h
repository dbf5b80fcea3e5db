/*
 * ts_run.h
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
#ifndef TS_RUN_H
#define TS_RUN_H

#include <stdint.h>
#include <stddef.h>

#include "tc_frame.h"
#include "ts_key.h"
#include "ts_record.h"
#include "ts_conflict.h"
#include "ts_error.h"

#define TS_RUN_INDEX_STRIDE (256 * 1024)
/* A run reader's buffer: the default, and the least a merge gives one */
#define TS_RUN_READ_BUFFER (256 * 1024)
#define TS_RUN_READ_BUFFER_MIN (64 * 1024)

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

/*
 * The same, with mem (unless NULL) as one more run, after the files, and
 * each file read through a buffer of read_buffer bytes (0: the default,
 * TS_RUN_READ_BUFFER; a record longer than it grows it).
 */
int			ts_run_merge_with(char *const *paths, const TsRunIndex *indexes, uint32_t nruns,
							  const TsMemRun *mem, size_t read_buffer, const TcBuf *lo,
							  const TcBuf *hi,
							  const TsConflicts *conflicts, TsRunPut put, void *arg,
							  TsError *err);

#endif							/* TS_RUN_H */
