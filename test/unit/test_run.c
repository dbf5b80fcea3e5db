/*
 * test_run.c
 *		Unit tests of ts_run: runs written with their sparse indexes and
 *		merged back.  A merge gives every key of the runs once, in key
 *		order, with the value of the latest run that has it, as a reference
 *		(a sort of every record by key, then by run) says; the parts cut by
 *		ts_run_split_keys, merged one by one, give exactly the whole merge
 *		and are about equal in size; any [lo, hi) gives the reference's
 *		records in that range (records written field by field or whole, as
 *		a spill writes them); a torn run file is an error, not a shorter
 *		merge.  All of it again with the last run in memory (TsMemRun, as a
 *		session's last staging buffer at commit), which must index and merge
 *		exactly as its file does; a record added with a mark keeps it.  The
 *		same merges through smaller read buffers (a merge of many parts'),
 *		down to less than a record.  Keys share their first 8 bytes in groups and go on in a
 *		3-letter alphabet to lengths on both sides of 16, so that the
 *		merge's 16-byte integer prefix ties and the rest decides.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_staging.h"

#define NRUNS 5
#define RECORDS_PER_RUN 20000	/* about 2 MB a run */
#define VALUE_SIZE 90

typedef struct Rec
{
	uint8_t		key[24];
	uint32_t	keylen;
	uint32_t	run;
} Rec;

static char dir[64];
static char *paths[NRUNS];
static TsRunIndex indexes[NRUNS];
static Rec *all;				/* every record written, NRUNS * RECORDS_PER_RUN */
static Rec *expected;			/* the reference merge */
static size_t nexpected;
static uint8_t *mem_buf;		/* the last run's records, staged */
static TsMemRun memrun;			/* the last run, in memory */
static TsRunIndex mem_indexes[NRUNS];	/* the files' but the last, then memrun's */
static bool use_mem;			/* merges read the last run from memrun */
static size_t read_buffer;		/* of each run's reader; 0: the default */

/*
 * ts_run_merge of the runs, the last one from memory when use_mem says,
 * through read_buffer bytes a run when it is set.
 */
static int
merge(const TcBuf *lo, const TcBuf *hi, TsRunPut put, void *arg, TsError *err)
{
	if (use_mem)
		return ts_run_merge_with(paths, indexes, NRUNS - 1, &memrun, read_buffer, lo, hi, NULL,
								 put, arg, err);
	if (read_buffer > 0)
		return ts_run_merge_with(paths, indexes, NRUNS, NULL, read_buffer, lo, hi, NULL, put,
								 arg, err);
	return ts_run_merge(paths, indexes, NRUNS, lo, hi, NULL, put, arg, err);
}

static int
rec_compare(const void *pa, const void *pb)
{
	const Rec  *a = pa,
			   *b = pb;
	int			cmp = memcmp(a->key, b->key, a->keylen < b->keylen ? a->keylen : b->keylen);

	if (cmp != 0)
		return cmp;
	if (a->keylen != b->keylen)
		return a->keylen < b->keylen ? -1 : 1;
	return a->run < b->run ? -1 : (a->run > b->run);
}

static bool
same_key(const Rec *a, const Rec *b)
{
	return a->keylen == b->keylen && memcmp(a->key, b->key, a->keylen) == 0;
}

/*
 * A key: 8 bytes from few values, then 0 to 16 bytes of a 3-letter
 * alphabet, 0 among them: keys tie in the merge's 16-byte prefix, end
 * inside it or beyond it, and some are prefixes of others.
 */
static void
random_key(Rec *rec)
{
	uint64_t	group = tc_test_rng() % 2000;

	memset(rec->key, 0, sizeof(rec->key));
	memcpy(rec->key, "tabl", 4);
	rec->key[4] = (uint8_t) (group >> 8);
	rec->key[7] = (uint8_t) group;
	rec->keylen = 8 + (uint32_t) (tc_test_rng() % 17);
	for (uint32_t i = 8; i < rec->keylen; i++)
		rec->key[i] = (uint8_t) (tc_test_rng() % 3);
}

static void
value_of(const Rec *rec, uint8_t *value)
{
	memset(value, 'a' + (int) rec->run, VALUE_SIZE);
	memcpy(value, rec->key, rec->keylen);
}

/* Write the runs: each sorted and deduplicated, as a spill writes them. */
static void
write_runs(void)
{
	all = malloc(NRUNS * RECORDS_PER_RUN * sizeof(Rec));
	REQUIRE(all != NULL);
	for (uint32_t r = 0; r < NRUNS; r++)
	{
		Rec		   *run = all + (size_t) r * RECORDS_PER_RUN;
		TsRunWriter writer;
		char		path[128];

		for (size_t i = 0; i < RECORDS_PER_RUN; i++)
		{
			random_key(&run[i]);
			run[i].run = r;
		}
		qsort(run, RECORDS_PER_RUN, sizeof(Rec), rec_compare);
		snprintf(path, sizeof(path), "%s/run-%u", dir, r);
		paths[r] = strdup(path);
		REQUIRE(ts_run_writer_open(&writer, path) == 0);
		writer.stride = 16 * 1024;	/* 2 MB runs: 128 entries each */
		for (size_t i = 0; i < RECORDS_PER_RUN; i++)
		{
			uint8_t		value[VALUE_SIZE];

			if (i + 1 < RECORDS_PER_RUN && same_key(&run[i], &run[i + 1]))
			{
				run[i].keylen = 0;	/* not written: marks it for the reference */
				continue;
			}
			value_of(&run[i], value);
			if (i % 2 == 0)
				REQUIRE(ts_run_writer_put(&writer, run[i].key, run[i].keylen, value,
										  VALUE_SIZE) == 0);
			else
			{
				/* as a spill writes a staged record: whole */
				uint8_t		rec[8 + 24 + VALUE_SIZE];
				uint32_t	valuelen = VALUE_SIZE;

				memcpy(rec, &run[i].keylen, 4);
				memcpy(rec + 4, &valuelen, 4);
				memcpy(rec + 8, run[i].key, run[i].keylen);
				memcpy(rec + 8 + run[i].keylen, value, VALUE_SIZE);
				REQUIRE(ts_run_writer_put_record(&writer, rec) == 0);
			}
		}
		CHECK_EQ_INT(ts_run_writer_close(&writer), 0);
		CHECK(writer.index.n >= 100);
		indexes[r] = writer.index;
	}

	/* the last run again, staged in memory, in the order its file has */
	{
		Rec		   *run = all + (size_t) (NRUNS - 1) * RECORDS_PER_RUN;
		size_t		pos = 0;

		mem_buf = malloc(RECORDS_PER_RUN * (8 + 24 + VALUE_SIZE));
		REQUIRE(mem_buf != NULL && ts_mem_run_init(&memrun, RECORDS_PER_RUN / 2) == 0);
		memrun.stride = 16 * 1024;
		for (size_t i = 0; i < RECORDS_PER_RUN; i++)
		{
			uint32_t	valuelen = VALUE_SIZE;

			if (run[i].keylen == 0)
				continue;
			memcpy(mem_buf + pos, &run[i].keylen, 4);
			memcpy(mem_buf + pos + 4, &valuelen, 4);
			memcpy(mem_buf + pos + 8, run[i].key, run[i].keylen);
			value_of(&run[i], mem_buf + pos + 8 + run[i].keylen);
			REQUIRE(ts_mem_run_add(&memrun, mem_buf + pos, 0) == 0);
			pos += 8 + run[i].keylen + VALUE_SIZE;
		}
		ts_mem_run_finish(&memrun);
		for (int r = 0; r < NRUNS - 1; r++)
			mem_indexes[r] = indexes[r];
		mem_indexes[NRUNS - 1] = memrun.index;
	}

	/* the reference: of each key, the record of the latest run */
	expected = malloc(NRUNS * RECORDS_PER_RUN * sizeof(Rec));
	REQUIRE(expected != NULL);
	for (size_t i = 0; i < NRUNS * RECORDS_PER_RUN; i++)
		if (all[i].keylen > 0)
			expected[nexpected++] = all[i];
	qsort(expected, nexpected, sizeof(Rec), rec_compare);
	{
		size_t		kept = 0;

		for (size_t i = 0; i < nexpected; i++)
		{
			if (i + 1 < nexpected && same_key(&expected[i], &expected[i + 1]))
				continue;
			expected[kept++] = expected[i];
		}
		nexpected = kept;
	}
}

/* What a merge put: checked against expected from position next on. */
typedef struct Collect
{
	size_t		next;
	size_t		count;
	size_t		mismatches;
} Collect;

static int
collect_put(void *arg, const uint8_t *key, uint32_t keylen, const uint8_t *value,
			uint32_t valuelen, TsError *err)
{
	Collect    *c = arg;
	uint8_t		want[VALUE_SIZE];

	(void) err;
	if (c->next >= nexpected)
	{
		c->mismatches++;
		return 0;
	}
	value_of(&expected[c->next], want);
	if (keylen != expected[c->next].keylen || memcmp(key, expected[c->next].key, keylen) != 0 ||
		valuelen != VALUE_SIZE || memcmp(value, want, VALUE_SIZE) != 0)
		c->mismatches++;
	c->next++;
	c->count++;
	return 0;
}

/* Position of the first expected record with a key at or above key. */
static size_t
expected_from(const TcBuf *key)
{
	size_t		i = 0;

	if (key == NULL || key->len == 0)
		return 0;
	while (i < nexpected)
	{
		Rec			k = {{0}, (uint32_t) key->len, 0};

		memcpy(k.key, key->data, key->len);
		if (rec_compare(&expected[i], &k) >= 0)
			break;
		i++;
	}
	return i;
}

static void
test_whole_merge(void)
{
	Collect		c = {0};
	TsError		err;

	CHECK_EQ_INT(merge(NULL, NULL, collect_put, &c, &err), 0);
	CHECK_EQ_UINT(c.count, nexpected);
	CHECK_EQ_UINT(c.mismatches, 0);
	/* the runs overlap: fewer keys than records */
	CHECK(nexpected < NRUNS * RECORDS_PER_RUN);
}

static void
test_split_parts(void)
{
	for (int nparts = 2; nparts <= 8; nparts++)
	{
		TcBuf		splits[8] = {{0}};
		int			nsplits = ts_run_split_keys(use_mem ? mem_indexes : indexes, NRUNS,
												nparts, splits);
		size_t		total = 0;

		CHECK_EQ_INT(nsplits, nparts - 1);
		for (int p = 0; p <= nsplits; p++)
		{
			const TcBuf *lo = p > 0 ? &splits[p - 1] : NULL;
			const TcBuf *hi = p < nsplits ? &splits[p] : NULL;
			Collect		c = {expected_from(lo), 0, 0};
			TsError		err;

			CHECK_EQ_INT(merge(lo, hi, collect_put, &c, &err), 0);
			CHECK_EQ_UINT(c.mismatches, 0);
			CHECK_EQ_UINT(c.next, hi ? expected_from(hi) : nexpected);
			/* about equal parts: within half of the fair share */
			CHECK(c.count > nexpected / (size_t) nparts / 2);
			CHECK(c.count < nexpected / (size_t) nparts * 3 / 2);
			total += c.count;
		}
		CHECK_EQ_UINT(total, nexpected);
		for (int i = 0; i < nsplits; i++)
			tc_buf_free(&splits[i]);
	}
	/* one part: no split */
	{
		TcBuf		split = {0};

		CHECK_EQ_INT(ts_run_split_keys(indexes, NRUNS, 1, &split), 0);
	}
}

/* Ranges from random keys, some not in any run, some equal to one. */
static void
test_ranges(void)
{
	for (int i = 0; i < 40; i++)
	{
		Rec			a,
					b;
		TcBuf		lo = {0},
					hi = {0};
		Collect		c;
		TsError		err;

		if (i % 2 == 0)
			random_key(&a);
		else
			a = expected[tc_test_rng() % nexpected];
		random_key(&b);
		if (rec_compare(&a, &b) > 0)
		{
			Rec			t = a;

			a = b;
			b = t;
		}
		REQUIRE(tc_buf_reserve(&lo, 24) && tc_buf_reserve(&hi, 24));
		memcpy(lo.data, a.key, a.keylen);
		lo.len = a.keylen;
		memcpy(hi.data, b.key, b.keylen);
		hi.len = b.keylen;
		c = (Collect) {expected_from(&lo), 0, 0};
		CHECK_EQ_INT(merge(&lo, &hi, collect_put, &c, &err), 0);
		CHECK_EQ_UINT(c.mismatches, 0);
		CHECK_EQ_UINT(c.next, expected_from(&hi));
		tc_buf_free(&lo);
		tc_buf_free(&hi);
	}
}

/*
 * The memory run's sparse index is its file's: the same offsets and keys,
 * so that the parts of a merge are cut as they would be with the file.
 */
static void
test_mem_index(void)
{
	const TsRunIndex *file = &indexes[NRUNS - 1];

	CHECK_EQ_UINT(memrun.index.n, file->n);
	CHECK_EQ_UINT(memrun.index.keys.len, file->keys.len);
	if (memrun.index.n == file->n && memrun.index.keys.len == file->keys.len)
	{
		CHECK_MEM(memrun.index.offsets, file->n * sizeof(uint64_t), file->offsets,
				  file->n * sizeof(uint64_t));
		CHECK_MEM(memrun.index.key_starts, (file->n + 1) * sizeof(uint32_t), file->key_starts,
				  (file->n + 1) * sizeof(uint32_t));
		CHECK_MEM(memrun.index.keys.data, file->keys.len, file->keys.data, file->keys.len);
	}
}

/* What a merge of one record put. */
typedef struct One
{
	int			count;
	uint8_t		value[16];
	uint32_t	valuelen;
} One;

static int
one_put(void *arg, const uint8_t *key, uint32_t keylen, const uint8_t *value,
		uint32_t valuelen, TsError *err)
{
	One		   *one = arg;

	(void) key;
	(void) keylen;
	(void) err;
	one->count++;
	one->valuelen = valuelen;
	memcpy(one->value, value, valuelen < 16 ? valuelen : 16);
	return 0;
}

/*
 * A record added with a mark (an insert after a DELETE of its key, which a
 * spill turns into a SET) is merged with the mark before its value; the
 * staged record is left as it was.
 */
static void
test_mem_marked(void)
{
	uint8_t		rec[8 + 3 + 2];
	uint32_t	keylen = 3,
				valuelen = 2;
	TsMemRun	mem;
	One			one = {0};
	TsError		err;

	memcpy(rec, &keylen, 4);
	memcpy(rec + 4, &valuelen, 4);
	memcpy(rec + 8, "key", 3);
	memcpy(rec + 11, "\x01v", 2);
	REQUIRE(ts_mem_run_init(&mem, 0) == 0);
	REQUIRE(ts_mem_run_add(&mem, rec, TS_VALUE_SET) == 0);
	ts_mem_run_finish(&mem);
	CHECK_EQ_INT(ts_run_merge_with(NULL, NULL, 0, &mem, 0, NULL, NULL, NULL, one_put, &one, &err), 0);
	CHECK_EQ_INT(one.count, 1);
	CHECK_EQ_UINT(one.valuelen, 3);
	CHECK_MEM(one.value, 3, "\xFE\x01v", 3);
	CHECK_MEM(rec + 11, 2, "\x01v", 2);
	ts_mem_run_free(&mem);
}

/* A run cut in the middle of a record: the merge fails, naming the file. */
static void
test_torn_run(void)
{
	Collect		c = {0};
	TsError		err;
	long		size;
	FILE	   *f = fopen(paths[2], "rb");

	REQUIRE(f != NULL);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	REQUIRE(truncate(paths[2], size - 7) == 0);
	CHECK_EQ_INT(ts_run_merge(paths, indexes, NRUNS, NULL, NULL, NULL, collect_put, &c, &err), -1);
	CHECK(strstr(err.message, "run-2") != NULL);
	CHECK(strstr(err.message, "short read") != NULL);
	REQUIRE(truncate(paths[2], size - 7 - TS_RECORD_HEADER_SIZE / 2) == 0);
	CHECK_EQ_INT(ts_run_merge(paths, indexes, NRUNS, NULL, NULL, NULL, collect_put, &c, &err), -1);
}

int
main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tcopy-test-run-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	write_runs();
	TC_RUN(test_whole_merge);
	TC_RUN(test_split_parts);
	TC_RUN(test_ranges);
	/* a merge of many parts reads through smaller buffers (ts_merge.c) */
	read_buffer = TS_RUN_READ_BUFFER_MIN;
	TC_RUN(test_whole_merge);
	TC_RUN(test_ranges);
	/* smaller than a record: grown to hold one, refilled at each */
	read_buffer = 100;
	TC_RUN(test_whole_merge);
	TC_RUN(test_ranges);
	read_buffer = 0;
	use_mem = true;
	TC_RUN(test_mem_index);
	TC_RUN(test_whole_merge);
	TC_RUN(test_split_parts);
	TC_RUN(test_ranges);
	TC_RUN(test_mem_marked);
	use_mem = false;
	TC_RUN(test_torn_run);
	for (int r = 0; r < NRUNS; r++)
	{
		unlink(paths[r]);
		free(paths[r]);
		ts_run_index_free(&indexes[r]);
	}
	rmdir(dir);
	ts_mem_run_free(&memrun);
	free(mem_buf);
	free(all);
	free(expected);
	return tc_test_summary();
}
