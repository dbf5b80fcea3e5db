/*
 * ts_run.c
 *		Writing a session's sorted runs, with their sparse indexes, and
 *		merging them back, a key range at a time.
 *
 * The merge is a binary heap of run readers.  A reader reads its file
 * through a buffer of its own and hands out records in place (no copy a
 * record, unlike stdio's fread); it keeps its key's 16-byte prefix
 * (ts_key.h), so that most comparisons of the heap are integer
 * comparisons.
 */
#include "ts_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN_WRITE_BUFFER (1024 * 1024)
#define MAX_RECORD_PART (1u << 30)	/* sanity limit when reading runs back */

/* ---- the sparse index ---- */

void
ts_run_index_free(TsRunIndex *index)
{
	free(index->offsets);
	free(index->key_starts);
	tc_buf_free(&index->keys);
	memset(index, 0, sizeof(*index));
}

static int
index_add(TsRunIndex *index, uint64_t offset, const uint8_t *key, uint32_t keylen)
{
	if (index->n == index->cap)
	{
		size_t		cap = index->cap ? index->cap * 2 : 64;
		uint64_t   *offsets = realloc(index->offsets, cap * sizeof(uint64_t));
		uint32_t   *starts;

		if (offsets == NULL)
			return -1;
		index->offsets = offsets;
		starts = realloc(index->key_starts, (cap + 1) * sizeof(uint32_t));
		if (starts == NULL)
			return -1;
		index->key_starts = starts;
		index->cap = cap;
	}
	if (!tc_buf_reserve(&index->keys, keylen))
		return -1;
	memcpy(index->keys.data + index->keys.len, key, keylen);
	index->keys.len += keylen;
	index->key_starts[0] = 0;
	index->offsets[index->n++] = offset;
	index->key_starts[index->n] = (uint32_t) index->keys.len;
	return 0;
}

static inline const uint8_t *
index_key(const TsRunIndex *index, size_t i, uint32_t *keylen)
{
	*keylen = index->key_starts[i + 1] - index->key_starts[i];
	return index->keys.data + index->key_starts[i];
}

/* Offset of the last indexed record with a key below lo, else 0. */
static uint64_t
index_start(const TsRunIndex *index, const TcBuf *lo)
{
	size_t		below = 0;		/* indexed keys below lo: [0, below) */
	size_t		high = index->n;

	if (lo == NULL || lo->len == 0)
		return 0;
	while (below < high)
	{
		size_t		mid = below + (high - below) / 2;
		uint32_t	keylen;
		const uint8_t *key = index_key(index, mid, &keylen);

		if (ts_key_compare(key, keylen, lo->data, (uint32_t) lo->len) < 0)
			below = mid + 1;
		else
			high = mid;
	}
	return below == 0 ? 0 : index->offsets[below - 1];
}

/* ---- writing ---- */

int
ts_run_writer_open(TsRunWriter *writer, const char *path)
{
	memset(writer, 0, sizeof(*writer));
	writer->fd = -1;
	writer->stride = TS_RUN_INDEX_STRIDE;
	writer->buffer = malloc(RUN_WRITE_BUFFER);
	if (writer->buffer == NULL)
	{
		errno = ENOMEM;
		return -1;
	}
	writer->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (writer->fd < 0)
	{
		free(writer->buffer);
		writer->buffer = NULL;
		return -1;
	}
	return 0;
}

/* Write all of data; 0, or -1 with errno. */
static int
write_all(int fd, const uint8_t *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		done = write(fd, data, len);

		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0)
			return -1;
		data += done;
		len -= (size_t) done;
	}
	return 0;
}

static int
writer_flush(TsRunWriter *writer)
{
	int			result = write_all(writer->fd, writer->buffer, writer->buffered);

	writer->buffered = 0;
	return result;
}

/* Append len bytes to the buffer, flushing it as it fills. */
static int
writer_append(TsRunWriter *writer, const uint8_t *data, size_t len)
{
	if (writer->buffered + len > RUN_WRITE_BUFFER)
	{
		if (writer_flush(writer) != 0)
			return -1;
		if (len > RUN_WRITE_BUFFER)
			return write_all(writer->fd, data, len);
	}
	memcpy(writer->buffer + writer->buffered, data, len);
	writer->buffered += len;
	return 0;
}

int
ts_run_writer_put(TsRunWriter *writer, const uint8_t *key, uint32_t keylen,
				  const uint8_t *value, uint32_t valuelen)
{
	return ts_run_writer_put_marked(writer, key, keylen, 0, value, valuelen);
}

int
ts_run_writer_put_marked(TsRunWriter *writer, const uint8_t *key, uint32_t keylen,
						 int mark, const uint8_t *value, uint32_t valuelen)
{
	uint8_t		header[TS_RECORD_HEADER_SIZE];
	uint8_t		mark_byte = (uint8_t) mark;

	if (writer->written >= writer->next_indexed)
	{
		if (index_add(&writer->index, writer->written, key, keylen) != 0)
		{
			errno = ENOMEM;
			return -1;
		}
		writer->next_indexed = writer->written + writer->stride;
	}
	ts_record_put_header(header, keylen, valuelen + (mark != 0));
	if (writer_append(writer, header, sizeof(header)) != 0 ||
		writer_append(writer, key, keylen) != 0 ||
		(mark != 0 && writer_append(writer, &mark_byte, 1) != 0) ||
		writer_append(writer, value, valuelen) != 0)
		return -1;
	writer->written += ts_record_size(keylen, valuelen + (mark != 0));
	return 0;
}

int
ts_run_writer_put_record(TsRunWriter *writer, const uint8_t *rec)
{
	uint32_t	keylen = ts_record_keylen(rec);
	size_t		size = ts_record_size(keylen, ts_record_valuelen(rec));

	if (writer->written >= writer->next_indexed)
	{
		if (index_add(&writer->index, writer->written, ts_record_key(rec), keylen) != 0)
		{
			errno = ENOMEM;
			return -1;
		}
		writer->next_indexed = writer->written + writer->stride;
	}
	if (writer_append(writer, rec, size) != 0)
		return -1;
	writer->written += size;
	return 0;
}

int
ts_run_writer_close(TsRunWriter *writer)
{
	int			result = 0;

	if (writer->fd >= 0)
	{
		if (writer_flush(writer) != 0)
			result = -1;
		if (close(writer->fd) != 0 && result == 0)
			result = -1;
	}
	writer->fd = -1;
	free(writer->buffer);
	writer->buffer = NULL;
	return result;
}

/* ---- the last buffer, in memory ---- */

int
ts_mem_run_init(TsMemRun *mem, size_t n)
{
	memset(mem, 0, sizeof(*mem));
	mem->stride = TS_RUN_INDEX_STRIDE;
	mem->recs = malloc((n > 0 ? n : 1) * sizeof(const uint8_t *));
	if (mem->recs == NULL)
		return -1;
	mem->cap = n;
	return 0;
}

int
ts_mem_run_add(TsMemRun *mem, const uint8_t *rec, int mark)
{
	uint32_t	keylen = ts_record_keylen(rec);
	uint32_t	valuelen = ts_record_valuelen(rec);

	if (mem->n == mem->cap)
	{
		size_t		cap = mem->cap ? mem->cap * 2 : 64;
		const uint8_t **grown = realloc(mem->recs, cap * sizeof(const uint8_t *));

		if (grown == NULL)
			return -1;
		mem->recs = grown;
		mem->cap = cap;
	}
	if (mem->bytes >= mem->next_indexed)
	{
		if (index_add(&mem->index, mem->bytes, ts_record_key(rec), keylen) != 0)
			return -1;
		mem->next_indexed = mem->bytes + mem->stride;
	}
	if (mark != 0)
	{
		/* copied with its mark: its place in marked, made a pointer at finish */
		size_t		at = mem->marked.len;
		size_t	   *grown = realloc(mem->marked_at, (mem->nmarked + 1) * sizeof(size_t));

		if (grown == NULL)
			return -1;
		mem->marked_at = grown;
		if (!tc_buf_reserve(&mem->marked, ts_record_size(keylen, valuelen + 1)))
			return -1;
		ts_record_put_header(mem->marked.data + at, keylen, valuelen + 1);
		memcpy(mem->marked.data + at + TS_RECORD_HEADER_SIZE, ts_record_key(rec), keylen);
		mem->marked.data[at + TS_RECORD_HEADER_SIZE + keylen] = (uint8_t) mark;
		memcpy(mem->marked.data + at + TS_RECORD_HEADER_SIZE + keylen + 1,
			   ts_record_value(rec, keylen), valuelen);
		mem->marked.len += ts_record_size(keylen, valuelen + 1);
		mem->marked_at[mem->nmarked++] = mem->n;
		mem->recs[mem->n++] = (const uint8_t *) (uintptr_t) at;
		valuelen++;
	}
	else
		mem->recs[mem->n++] = rec;
	mem->bytes += ts_record_size(keylen, valuelen);
	return 0;
}

void
ts_mem_run_finish(TsMemRun *mem)
{
	for (size_t i = 0; i < mem->nmarked; i++)
	{
		size_t		at = mem->marked_at[i];

		mem->recs[at] = mem->marked.data + (uintptr_t) mem->recs[at];
	}
	free(mem->marked_at);
	mem->marked_at = NULL;
	mem->nmarked = 0;
}

void
ts_mem_run_free(TsMemRun *mem)
{
	free(mem->recs);
	free(mem->marked_at);
	tc_buf_free(&mem->marked);
	ts_run_index_free(&mem->index);
	memset(mem, 0, sizeof(*mem));
}

/* ---- splitting ---- */

typedef struct SplitKey
{
	const uint8_t *key;
	uint32_t	keylen;
} SplitKey;

static int
split_key_compare(const void *a, const void *b)
{
	const SplitKey *ka = a;
	const SplitKey *kb = b;

	return ts_key_compare(ka->key, ka->keylen, kb->key, kb->keylen);
}

int
ts_run_split_keys(const TsRunIndex *indexes, uint32_t nruns, int nparts, TcBuf *splits)
{
	size_t		n = 0;
	SplitKey   *keys;
	int			nsplits = 0;

	size_t		first = 1;

	/*
	 * Entry i > 0 of a run says that i strides of the run are below its
	 * key, so that, sorted together, the runs' entries put about j strides
	 * below the j-th.  Each run's entry 0 (its first key, at offset 0)
	 * says nothing of the kind, and is left out unless the runs are too
	 * small to have any other.
	 */
	for (uint32_t r = 0; r < nruns; r++)
		n += indexes[r].n > 0 ? indexes[r].n - 1 : 0;
	if (n == 0)
	{
		first = 0;
		for (uint32_t r = 0; r < nruns; r++)
			n += indexes[r].n;
	}
	if (nparts < 2 || n == 0)
		return 0;
	keys = malloc(n * sizeof(SplitKey));
	if (keys == NULL)
		return -1;
	n = 0;
	for (uint32_t r = 0; r < nruns; r++)
		for (size_t i = first; i < indexes[r].n; i++)
		{
			keys[n].key = index_key(&indexes[r], i, &keys[n].keylen);
			n++;
		}
	qsort(keys, n, sizeof(SplitKey), split_key_compare);
	for (int p = 1; p < nparts; p++)
	{
		const SplitKey *key = &keys[n * p / nparts];
		TcBuf	   *split = &splits[nsplits];

		/* a split must be above the one before; an empty key bounds nothing */
		if (key->keylen == 0 ||
			(nsplits > 0 && ts_key_compare(key->key, key->keylen, splits[nsplits - 1].data,
										(uint32_t) splits[nsplits - 1].len) <= 0))
			continue;
		split->len = 0;
		if (!tc_buf_reserve(split, key->keylen))
		{
			for (int i = 0; i <= nsplits; i++)
				tc_buf_free(&splits[i]);
			free(keys);
			return -1;
		}
		memcpy(split->data, key->key, key->keylen);
		split->len = key->keylen;
		nsplits++;
	}
	free(keys);
	return nsplits;
}

/* ---- merging ---- */

/* One run file being read, from some offset up to a key. */
typedef struct RunReader
{
	int			fd;
	uint8_t    *buf;
	size_t		cap;
	size_t		pos;			/* the current record's offset in buf */
	size_t		end;			/* bytes read into buf */
	size_t		reclen;			/* the current record's size */
	const uint8_t *key;			/* the current record's, in buf */
	uint32_t	keylen;
	uint32_t	valuelen;
	TsKeyPrefix prefix;			/* ts_key_prefix of key */
	uint32_t	run;			/* position in the session: later wins */
	const TcBuf *hi;			/* keys from here on are not the merge's */
	const TsMemRun *mem;		/* a run in memory (fd -1), else NULL */
	size_t		next;			/* mem's next record */
} RunReader;

/* Records ahead of the one being read whose bytes a memory run fetches. */
#define MEM_PREFETCH 8

/*
 * Have at least need bytes from pos on in buf; 1, or 0 when the file ends
 * first, or -1 with errno.
 */
static int
reader_fill(RunReader *reader, size_t need)
{
	if (reader->end - reader->pos >= need)
		return 1;
	if (reader->pos > 0)
	{
		memmove(reader->buf, reader->buf + reader->pos, reader->end - reader->pos);
		reader->end -= reader->pos;
		reader->pos = 0;
	}
	if (need > reader->cap)
	{
		uint8_t    *grown = realloc(reader->buf, need);

		if (grown == NULL)
		{
			errno = ENOMEM;
			return -1;
		}
		reader->buf = grown;
		reader->cap = need;
	}
	while (reader->end < need)
	{
		ssize_t		got = read(reader->fd, reader->buf + reader->end, reader->cap - reader->end);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		if (got == 0)
			return 0;
		reader->end += (size_t) got;
	}
	return 1;
}

/*
 * Move to the reader's next record: 1 when there is one below its hi key,
 * 0 at the end, -1 with errno (0 for a short file).
 */
static int
reader_next(RunReader *reader)
{
	const uint8_t *rec;
	int			more;

	if (reader->mem != NULL)
	{
		/* in key order, the records are scattered over the buffer */
		if (reader->next + MEM_PREFETCH < reader->mem->n)
		{
			__builtin_prefetch(reader->mem->recs[reader->next + MEM_PREFETCH]);
			__builtin_prefetch(reader->mem->recs[reader->next + MEM_PREFETCH] + 64);
			__builtin_prefetch(reader->mem->recs[reader->next + MEM_PREFETCH] + 127);
		}
		if (reader->next >= reader->mem->n)
			return 0;
		rec = reader->mem->recs[reader->next++];
		reader->keylen = ts_record_keylen(rec);
		reader->valuelen = ts_record_valuelen(rec);
		reader->key = ts_record_key(rec);
		reader->prefix = ts_key_prefix(reader->key, reader->keylen);
		return reader->hi == NULL || reader->hi->len == 0 ||
			ts_key_compare(reader->key, reader->keylen, reader->hi->data,
						   (uint32_t) reader->hi->len) < 0;
	}
	reader->pos += reader->reclen;
	reader->reclen = 0;
	more = reader_fill(reader, TS_RECORD_HEADER_SIZE);
	if (more <= 0)
	{
		if (more == 0 && reader->end > reader->pos)
			errno = 0;			/* a torn header */
		return more == 0 && reader->end == reader->pos ? 0 : -1;
	}
	rec = reader->buf + reader->pos;
	reader->keylen = ts_record_keylen(rec);
	reader->valuelen = ts_record_valuelen(rec);
	if (reader->keylen > MAX_RECORD_PART || reader->valuelen > MAX_RECORD_PART)
	{
		errno = 0;
		return -1;
	}
	reader->reclen = ts_record_size(reader->keylen, reader->valuelen);
	more = reader_fill(reader, reader->reclen);
	if (more <= 0)
	{
		if (more == 0)
			errno = 0;			/* a torn record */
		return -1;
	}
	reader->key = ts_record_key(reader->buf + reader->pos);
	reader->prefix = ts_key_prefix(reader->key, reader->keylen);
	if (reader->hi != NULL && reader->hi->len > 0 &&
		ts_key_compare(reader->key, reader->keylen, reader->hi->data,
					   (uint32_t) reader->hi->len) >= 0)
		return 0;
	return 1;
}

/*
 * Heap order: smaller key first; for equal keys, the later run first (a
 * key in several runs is settled by merge_repeated_key, whatever the
 * order).
 */
static inline bool
reader_before(const RunReader *a, const RunReader *b)
{
	int			cmp = ts_key_compare_prefixed(&a->prefix, a->key, a->keylen,
											  &b->prefix, b->key, b->keylen);

	if (cmp != 0)
		return cmp < 0;
	return a->run > b->run;
}

static void
heap_sift_down(RunReader **heap, size_t n, size_t i)
{
	RunReader  *moving = heap[i];

	for (;;)
	{
		size_t		child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && reader_before(heap[child + 1], heap[child]))
			child++;
		if (!reader_before(heap[child], moving))
			break;
		heap[i] = heap[child];
		i = child;
	}
	heap[i] = moving;
}

/* Advance the heap's top reader, dropping it at its end; -1 on error. */
static int
heap_advance_top(RunReader **heap, size_t *n)
{
	int			more = reader_next(heap[0]);

	if (more < 0)
		return -1;
	if (more == 0)
		heap[0] = heap[--(*n)];
	if (*n > 0)
		heap_sift_down(heap, *n, 0);
	return 0;
}

/* Open run r at the last indexed record below lo, and move to lo. */
static int
reader_open(RunReader *reader, const char *path, const TsRunIndex *index, uint32_t run,
			size_t read_buffer, const TcBuf *lo, const TcBuf *hi)
{
	uint64_t	start = index_start(index, lo);
	int			more;

	reader->run = run;
	reader->hi = hi;
	reader->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (reader->fd < 0)
		return -1;
	(void) posix_fadvise(reader->fd, (off_t) start, 0, POSIX_FADV_SEQUENTIAL);
	reader->buf = malloc(read_buffer);
	if (reader->buf == NULL)
	{
		errno = ENOMEM;
		return -1;
	}
	reader->cap = read_buffer;
	if (start > 0 && lseek(reader->fd, (off_t) start, SEEK_SET) < 0)
		return -1;
	while ((more = reader_next(reader)) > 0 && lo != NULL && lo->len > 0 &&
		   ts_key_compare(reader->key, reader->keylen, lo->data, (uint32_t) lo->len) < 0)
		;
	return more;
}

/* Open the memory run as run number run, at its first key at or above lo. */
static int
reader_open_mem(RunReader *reader, const TsMemRun *mem, uint32_t run, const TcBuf *lo,
				const TcBuf *hi)
{
	size_t		below = 0;		/* keys below lo: [0, below) */
	size_t		high = mem->n;

	reader->run = run;
	reader->hi = hi;
	reader->mem = mem;
	while (lo != NULL && lo->len > 0 && below < high)
	{
		size_t		mid = below + (high - below) / 2;
		const uint8_t *rec = mem->recs[mid];

		if (ts_key_compare(ts_record_key(rec), ts_record_keylen(rec), lo->data,
						   (uint32_t) lo->len) < 0)
			below = mid + 1;
		else
			high = mid;
	}
	reader->next = below;
	return reader_next(reader);
}

/*
 * Whether another run holds the heap top's key: then one of the top's
 * children does (every record between the top and another of its key in
 * the heap's order has that key too).
 */
static bool
heap_top_repeats(RunReader **heap, size_t n)
{
	for (size_t c = 1; c <= 2 && c < n; c++)
		if (heap[c]->prefix.hi == heap[0]->prefix.hi && heap[c]->prefix.lo == heap[0]->prefix.lo &&
			heap[c]->keylen == heap[0]->keylen &&
			memcmp(heap[c]->key, heap[0]->key, heap[0]->keylen) == 0)
			return true;
	return false;
}

/*
 * The heap top's key is in several runs: take every record of it (copied
 * into group, [u32 run][u32 value length][value] after the key) and put
 * the one the publish keeps.  With an UPDATE or DELETE among them
 * (ts_record.h), the latest run's, unchecked: an insert after a marked
 * record goes as an update.  Else as on_conflict says: the latest
 * (REPLACE), the earliest (IGNORE), or a duplicate (ERROR).  -1 with err
 * (*failed: the run last read, for an I/O error's message).
 */
static int
merge_repeated_key(RunReader **heap, size_t *nheap, const TsConflicts *conflicts, TsRunPut put,
				   void *arg, TcBuf *group, uint32_t *failed, TsError *err)
{
	uint32_t	keylen = heap[0]->keylen;
	size_t		latest = 0,
				earliest = 0,
				before_latest = 0;
	uint32_t	latest_run = 0,
				earliest_run = UINT32_MAX,
				before_run = 0;
	bool		has_before = false;
	bool		marked = false;
	size_t		at;
	size_t		count = 0;
	const uint8_t *key;
	const uint8_t *value;
	uint32_t	valuelen;
	uint32_t	before_len = 0;

	group->len = 0;
	if (!tc_buf_reserve(group, keylen))
		goto oom;
	memcpy(group->data, heap[0]->key, keylen);
	group->len = keylen;
	while (*nheap > 0 && heap[0]->keylen == keylen &&
		   memcmp(heap[0]->key, group->data, keylen) == 0)
	{
		RunReader  *top = heap[0];
		uint32_t	run = top->run;

		if (!tc_buf_reserve(group, 8 + (size_t) top->valuelen))
			goto oom;
		at = group->len;
		memcpy(group->data + at, &run, 4);
		memcpy(group->data + at + 4, &top->valuelen, 4);
		memcpy(group->data + at + 8, top->key + keylen, top->valuelen);
		group->len += 8 + (size_t) top->valuelen;
		marked |= ts_value_mark(top->key + keylen, top->valuelen) != 0;
		if (count == 0 || run > latest_run)
		{
			if (count > 0)
			{
				before_latest = latest;
				before_run = latest_run;
				has_before = true;
			}
			latest = at;
			latest_run = run;
		}
		else if (!has_before || run > before_run)
		{
			before_latest = at;
			before_run = run;
			has_before = true;
		}
		if (run < earliest_run)
		{
			earliest = at;
			earliest_run = run;
		}
		count++;
		*failed = run;
		if (heap_advance_top(heap, nheap) != 0)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not read a staging run: %s", errno ? strerror(errno) : "short read");
			return -1;
		}
	}
	key = group->data;
	if (!marked)
	{
		switch (ts_conflicts_policy(conflicts, key, keylen))
		{
			case TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR:
				memcpy(&valuelen, group->data + latest + 4, 4);
				(void) conflicts->report(conflicts->report_arg, key, keylen,
										 group->data + latest + 8, valuelen, err);
				return -1;
			case TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE:
				latest = earliest;
				break;
			default:
				break;
		}
	}
	memcpy(&valuelen, group->data + latest + 4, 4);
	value = group->data + latest + 8;
	if (has_before)
		memcpy(&before_len, group->data + before_latest + 4, 4);
	if (marked && ts_value_mark(value, valuelen) == 0 && has_before &&
		ts_value_mark(group->data + before_latest + 8, before_len) == TS_VALUE_DELETE)
	{
		/* an insert right after a DELETE of its key: not checked */
		size_t		where = group->len;

		if (!tc_buf_reserve(group, 1 + (size_t) valuelen))
			goto oom;
		key = group->data;
		value = group->data + latest + 8;
		group->data[where] = TS_VALUE_SET;
		memcpy(group->data + where + 1, value, valuelen);
		value = group->data + where;
		valuelen++;
	}
	return put(arg, key, keylen, value, valuelen, err);

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory merging staged runs");
	return -1;
}

int
ts_run_merge(char *const *paths, const TsRunIndex *indexes, uint32_t nruns,
			 const TcBuf *lo, const TcBuf *hi, const TsConflicts *conflicts,
			 TsRunPut put, void *arg, TsError *err)
{
	return ts_run_merge_with(paths, indexes, nruns, NULL, TS_RUN_READ_BUFFER, lo, hi, conflicts,
							 put, arg, err);
}

int
ts_run_merge_with(char *const *paths, const TsRunIndex *indexes, uint32_t nruns,
				  const TsMemRun *mem, size_t read_buffer, const TcBuf *lo, const TcBuf *hi,
				  const TsConflicts *conflicts, TsRunPut put, void *arg, TsError *err)
{
	RunReader  *readers = calloc(nruns + 1, sizeof(RunReader));
	RunReader **heap = calloc(nruns + 1, sizeof(RunReader *));
	size_t		nheap = 0;
	TcBuf		group = {0};
	uint32_t	failed = 0;
	int			result = -1;

	if (readers == NULL || heap == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory merging staged runs");
		goto done;
	}
	for (uint32_t r = 0; r <= nruns; r++)
		readers[r].fd = -1;
	for (uint32_t r = 0; r < nruns; r++)
	{
		int			more = reader_open(&readers[r], paths[r], &indexes[r], r,
								read_buffer > 0 ? read_buffer : TS_RUN_READ_BUFFER, lo, hi);

		if (more < 0)
		{
			failed = r;
			goto io_err;
		}
		if (more > 0)
			heap[nheap++] = &readers[r];
	}
	/* the memory run is the latest: it wins ties under REPLACE */
	if (mem != NULL && reader_open_mem(&readers[nruns], mem, nruns, lo, hi) > 0)
		heap[nheap++] = &readers[nruns];
	for (size_t i = nheap / 2; i-- > 0;)
		heap_sift_down(heap, nheap, i);

	while (nheap > 0)
	{
		RunReader  *top = heap[0];

		/* a key in one run only, the common case: put as it is */
		if (!heap_top_repeats(heap, nheap))
		{
			if (put(arg, top->key, top->keylen, top->key + top->keylen, top->valuelen, err) != 0)
				goto done;
			failed = top->run;
			if (heap_advance_top(heap, &nheap) != 0)
				goto io_err;
			continue;
		}
		if (merge_repeated_key(heap, &nheap, conflicts, put, arg, &group, &failed, err) != 0)
			goto done;
	}
	result = 0;
	goto done;

io_err:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not read staging file \"%s\": %s",
				 failed < nruns ? paths[failed] : "(memory)",
				 errno ? strerror(errno) : "short read");
done:
	for (uint32_t r = 0; readers != NULL && r <= nruns; r++)
	{
		if (readers[r].fd >= 0)
			close(readers[r].fd);
		free(readers[r].buf);
	}
	free(readers);
	free(heap);
	tc_buf_free(&group);
	return result;
}
