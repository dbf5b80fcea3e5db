/*
 * packed_scan.c
 *		What storing many rows per RocksDB entry would save tcopy's scans
 *		(issue 45's remaining gap; docs/packed_rows.md is the design it
 *		measures for).  Not part of the tserver: it builds, in a fresh
 *		directory, one RocksDB per layout holding the same N pgbench_accounts
 *		rows, written as a bulk load writes them (SstFileWriter, then
 *		IngestExternalFile, with the tserver's options from ts_storage.c),
 *		and times on one thread (CLOCK_THREAD_CPUTIME_ID, medians of
 *		several rounds, the layouts alternating within each round):
 *
 *		full       every entry of the table, every column decoded by the
 *		           tserver's own ts_row_decode, abalance summed;
 *		count_sum  count(*) and sum(abalance), decoding only abalance;
 *		get        point reads of random keys by Get (layout "row" only:
 *		           today's path, ts_scan_is_point);
 *		seek_new   the same keys, each by a new iterator's Seek, and the
 *		           row found in the entry (what a lookup in a packed block
 *		           has to do: a block's key is its last row's);
 *		seek_reuse the same, one iterator for all the lookups (a lower
 *		           bound: the tserver makes an iterator per scan); only
 *		           with --seek-reuse, which adds a third of the run.
 *
 *		Layouts: "row", one entry per row (today's: key = table id and the
 *		key columns, value = the non-key columns); "packB", one entry per B
 *		consecutive rows: key = table id and the block's last row key,
 *		value = the B records one after another as a WriteBatch's records
 *		field holds them (varint keylen, key, varint valuelen, value:
 *		tc_record.h), so the bytes are the real stored form; "colB", the
 *		same blocks with their columns one after another (ColumnarBlock).
 *		The columnar full scan decodes with its own code, not
 *		ts_row_decode (a row's columns are not together).
 *
 *	make -C bench packed_scan && bench/packed_scan [--rows N] [--rounds R]
 *		[--lookups L] [--lookup-rounds R] [--blocks 64,128,256,1024]
 *		[--columnar 128] [--seek-reuse] [--no-compression] [--dir DIR] [--keep]
 *
 * 10M rows with the defaults take about 6.5 minutes of one core (more wall
 * time on a busy machine).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "tc_arena.h"
#include "tc_record.h"
#include "tc_varint.h"
#include "ts_codec.h"

#define TABLE_ID 5
#define FILLER_BLANKS 84
#define SST_TARGET_BYTES (256u * 1024 * 1024)	/* the tserver's sst_target_bytes */
#define BLOCK_CACHE_BYTES (128u * 1024 * 1024)	/* its block_cache_bytes */
#define SST_BLOCK_BYTES (16 * 1024)	/* its block_bytes */
#define MAX_LAYOUTS 12
#define MAX_ROUNDS 31
#define NMEASURES 5

enum
{
	M_FULL,
	M_COUNT_SUM,
	M_GET,
	M_SEEK_NEW,
	M_SEEK_REUSE
};

static const char *const measure_names[NMEASURES] = {
	"full", "count_sum", "get", "seek_new", "seek_reuse"
};

/* One database: the rows in one layout. */
typedef struct PackedDb
{
	char		name[16];
	uint32_t	block_rows;		/* 0: one entry per row */
	bool		columnar;		/* a block's columns one after another */
	char		dir[512];
	rocksdb_options_t *options;
	rocksdb_block_based_table_options_t *table_options;
	rocksdb_cache_t *cache;
	rocksdb_envoptions_t *env_options;
	rocksdb_t  *db;
	uint64_t	entries;
	uint64_t	sst_bytes;		/* the .sst files' sizes after ingest */
	uint64_t	value_bytes;	/* keys and values as put, uncompressed */
	double		load_ns;		/* CPU of encoding and SST writing */
	double		encode_ns;		/* CPU of encoding alone (tc_record_put) */
	double		ingest_ns;		/* CPU of IngestExternalFile */
	double		ns[NMEASURES][MAX_ROUNDS];	/* per row or per lookup */
	int			nrounds[NMEASURES];
} PackedDb;

/* pgbench_accounts (aid int4 key, bid int4, abalance int4, filler char(84)) */
static const Tcopy__Kind account_kinds[4] = {
	TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT, TCOPY__KIND__KIND_INT,
	TCOPY__KIND__KIND_BYTES
};
static const bool account_is_key[4] = {true, false, false, false};
static uint32_t account_key_columns[1] = {0};
static TcRecordLayout record_layout;
static TsLayout decode_layout;
static TsValue decode_missing[4];
static bool compress_lz4 = true;	/* the tserver's default; --no-compression */

static void
die(const char *what, char *errptr)
{
	fprintf(stderr, "packed_scan: %s: %s\n", what, errptr != NULL ? errptr : strerror(errno));
	exit(1);
}

static double
thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t
mix64(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * aid's abalance: 0 for most rows, as after pgbench -i, a small amount for
 * one in eight, as after some transactions; a function of aid so that a
 * lookup's result can be checked.
 */
static int64_t
account_abalance(int64_t aid)
{
	uint64_t	h = mix64((uint64_t) aid);

	if ((h & 7) != 0)
		return 0;
	return (int64_t) ((h >> 8) % 10001) - 5000;
}

/* The table's key prefix, or (end) the first key past its rows. */
static void
table_prefix(uint8_t out[TS_TABLE_ID_SIZE], uint32_t table_id)
{
	out[0] = (uint8_t) (table_id >> 24);
	out[1] = (uint8_t) (table_id >> 16);
	out[2] = (uint8_t) (table_id >> 8);
	out[3] = (uint8_t) table_id;
}

/* Write aid's record (tc_record.h) at out; returns its end. */
static uint8_t *
account_record(uint8_t *out, int64_t aid)
{
	int64_t		ints[3] = {aid, (aid - 1) / 100000 + 1, account_abalance(aid)};
	TcWireBlob	filler = {(const uint8_t *) "", 0, FILLER_BLANKS};
	TcWireRow	row = {ints, NULL, &filler, NULL, 3, 0, 1, 0};
	uint8_t    *end = tc_record_put(out, &record_layout, &row, true);

	if (end == NULL)
		die("tc_record_put refused a row", "layout");
	return end;
}

/* The key, value and end of the record at p (well formed: our own). */
static const uint8_t *
record_next(const uint8_t *p, const uint8_t *end, const uint8_t **key, size_t *keylen,
			const uint8_t **value, size_t *valuelen)
{
	uint64_t	n;

	if (!tc_varint_get(&p, end, &n) || n > (uint64_t) (end - p))
		die("bad record key", "block");
	*key = p;
	*keylen = (size_t) n;
	p += n;
	if (!tc_varint_get(&p, end, &n) || n > (uint64_t) (end - p))
		die("bad record value", "block");
	*value = p;
	*valuelen = (size_t) n;
	return p + n;
}

/*
 * abalance of a stored value, decoding nothing else: bid's tag and varint
 * skipped, abalance's read.  What a count(*), sum(abalance) needs.
 */
static inline int64_t
value_abalance(const uint8_t *p, const uint8_t *end)
{
	uint64_t	u;

	if (p < end && *p++ == 1 && !tc_varint_get(&p, end, &u))
		die("bad bid", "value");
	if (p >= end || *p++ != 1 || !tc_varint_get(&p, end, &u))
		die("bad abalance", "value");
	return tc_unzigzag64(u);
}

/*
 * A columnar block (layout "colB"): varint nrows, then sections, each a
 * varint length and its bytes: the keys (varint keylen and key, row after
 * row), then each non-key column's stored bytes (tag, then the value as
 * in a row's value), row after row.  Only what a count or a sum reads is
 * walked: the other sections are skipped by their lengths.
 */
typedef struct ColumnarBlock
{
	uint64_t	nrows;
	const uint8_t *section[4];	/* keys, bid, abalance, filler */
	const uint8_t *section_end[4];
} ColumnarBlock;

/* Past one stored non-key column of kind at p (tag included). */
static inline const uint8_t *
column_skip(Tcopy__Kind kind, const uint8_t *p, const uint8_t *end)
{
	uint64_t	u;

	if (p >= end || *p > 1)
		die("bad column tag", "columnar");
	if (*p++ == 0)
		return p;
	if (!tc_varint_get(&p, end, &u))
		die("bad column", "columnar");
	if (kind == TCOPY__KIND__KIND_BYTES)
	{
		if (u > (uint64_t) (end - p))
			die("bad column length", "columnar");
		p += u;
	}
	return p;
}

/*
 * Write the columnar form of the n records in [records, end) at out;
 * returns its end.  A row's value holds bid, abalance, filler in order.
 */
static uint8_t *
columnar_build(const uint8_t *records, const uint8_t *end, uint32_t n, uint8_t *out,
			   uint8_t *section)
{
	out = tc_varint_put(out, n);
	for (int c = 0; c < 4; c++)
	{
		uint8_t    *fill = section;

		for (const uint8_t *p = records; p < end;)
		{
			const uint8_t *k,
					   *v,
					   *col;
			size_t		klen,
						vlen;

			p = record_next(p, end, &k, &klen, &v, &vlen);
			if (c == 0)
			{
				fill = tc_varint_put(fill, klen);
				memcpy(fill, k, klen);
				fill += klen;
				continue;
			}
			col = v;
			for (int skip = 1; skip < c; skip++)
				col = column_skip(account_kinds[skip], col, v + vlen);
			memcpy(fill, col, (size_t) (column_skip(account_kinds[c], col, v + vlen) - col));
			fill += column_skip(account_kinds[c], col, v + vlen) - col;
		}
		out = tc_varint_put(out, (uint64_t) (fill - section));
		memcpy(out, section, (size_t) (fill - section));
		out += fill - section;
	}
	return out;
}

/* The sections of the columnar block in [p, end). */
static void
columnar_open(ColumnarBlock *b, const uint8_t *p, const uint8_t *end)
{
	if (!tc_varint_get(&p, end, &b->nrows))
		die("bad row count", "columnar");
	for (int c = 0; c < 4; c++)
	{
		uint64_t	len;

		if (!tc_varint_get(&p, end, &len) || len > (uint64_t) (end - p))
			die("bad section", "columnar");
		b->section[c] = p;
		b->section_end[c] = p + len;
		p += len;
	}
}

/* An INT column's value at *p (moved past it); NULL reads 0. */
static inline int64_t
column_int(const uint8_t **p, const uint8_t *end)
{
	uint64_t	u;

	if (*p >= end || **p > 1)
		die("bad int tag", "columnar");
	if (*(*p)++ == 0)
		return 0;
	if (!tc_varint_get(p, end, &u))
		die("bad int", "columnar");
	return tc_unzigzag64(u);
}

/*
 * Decode row i of a columnar block into values, walking each section from
 * *pos[] (the cursors of row i; moved past it).
 */
static inline void
columnar_row(const ColumnarBlock *b, const uint8_t **pos, TsValue *values)
{
	uint64_t	u;
	const uint8_t *k;

	if (!tc_varint_get(&pos[0], b->section_end[0], &u) || u != 8 ||
		b->section_end[0] - pos[0] < 8)
		die("bad key", "columnar");
	k = pos[0];
	pos[0] += 8;
	values[0].i = 0;
	for (int j = 0; j < 8; j++)
		values[0].i = (values[0].i << 8) | k[j];
	values[0].i ^= INT64_MIN;
	values[0].isnull = false;
	values[1].i = column_int(&pos[1], b->section_end[1]);
	values[2].i = column_int(&pos[2], b->section_end[2]);
	if (pos[3] >= b->section_end[3] || *pos[3]++ != 1 ||
		!tc_varint_get(&pos[3], b->section_end[3], &u) ||
		u > (uint64_t) (b->section_end[3] - pos[3]))
		die("bad filler", "columnar");
	values[3].p = pos[3];
	values[3].len = (size_t) u;
	pos[3] += u;
}

static void
put_file(PackedDb *pdb, rocksdb_sstfilewriter_t *w, const uint8_t *key, size_t keylen,
		 const uint8_t *value, size_t valuelen)
{
	char	   *errptr = NULL;

	rocksdb_sstfilewriter_put(w, (const char *) key, keylen, (const char *) value,
							  valuelen, &errptr);
	if (errptr != NULL)
		die("sstfilewriter_put", errptr);
	pdb->entries++;
	pdb->value_bytes += keylen + valuelen;
}

/* Open the database of pdb, with the tserver's options (ts_storage_open). */
static void
open_db(PackedDb *pdb)
{
	char	   *errptr = NULL;

	pdb->options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(pdb->options, 1);
	rocksdb_options_increase_parallelism(pdb->options, 2);
	rocksdb_options_set_max_background_jobs(pdb->options, 2);
	rocksdb_options_set_write_buffer_size(pdb->options, 64 * 1024 * 1024);
	rocksdb_options_set_compression(pdb->options, compress_lz4 ? rocksdb_lz4_compression :
									rocksdb_no_compression);
	rocksdb_options_set_info_log_level(pdb->options, 2);	/* WARN */
	pdb->cache = rocksdb_cache_create_lru(BLOCK_CACHE_BYTES);
	pdb->table_options = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(pdb->table_options, pdb->cache);
	rocksdb_block_based_options_set_block_size(pdb->table_options, SST_BLOCK_BYTES);
	rocksdb_options_set_block_based_table_factory(pdb->options, pdb->table_options);
	pdb->env_options = rocksdb_envoptions_create();
	pdb->db = rocksdb_open(pdb->options, pdb->dir, &errptr);
	if (errptr != NULL)
		die("rocksdb_open", errptr);
}

/* Sum of the sizes of pdb's .sst files. */
static uint64_t
sst_bytes(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	uint64_t	total = 0;

	if (d == NULL)
		die("opendir", NULL);
	while ((e = readdir(d)) != NULL)
	{
		char		path[1024];
		struct stat st;
		size_t		len = strlen(e->d_name);

		if (len < 4 || strcmp(e->d_name + len - 4, ".sst") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0)
			total += (uint64_t) st.st_size;
	}
	closedir(d);
	return total;
}

/*
 * Write rows 1..nrows in pdb's layout into SST files of at most the
 * tserver's target size, as a load's merge does (ts_sst_sink.c), and
 * ingest them as a publish does (ts_storage_ingest).
 */
static void
load_db(PackedDb *pdb, int64_t nrows)
{
	uint8_t		prefix[TS_TABLE_ID_SIZE];
	size_t		rec_room = 256;
	size_t		block_room = (size_t) (pdb->block_rows > 0 ? pdb->block_rows : 1) * rec_room;
	uint8_t    *block = malloc(block_room);	/* a block's records, or one */
	uint8_t    *columns = malloc(block_room + 64);	/* ... columnar */
	uint8_t    *columns_section = malloc(block_room);
	uint8_t		key[TS_TABLE_ID_SIZE + 64];
	rocksdb_sstfilewriter_t *w = NULL;
	char	  **files = NULL;
	size_t		nfiles = 0;
	uint8_t    *fill = block;
	uint32_t	in_block = 0;
	uint32_t	unchecked_rows = 0;
	double		t0;
	char	   *errptr = NULL;
	rocksdb_ingestexternalfileoptions_t *ingest;

	if (block == NULL || columns == NULL || columns_section == NULL)
		die("out of memory", NULL);
	table_prefix(prefix, TABLE_ID);
	memcpy(key, prefix, TS_TABLE_ID_SIZE);
	open_db(pdb);
	t0 = thread_ns();
	for (int64_t aid = 1; aid <= nrows; aid++)
	{
		uint8_t    *rec = fill;
		const uint8_t *k,
				   *v;
		size_t		klen,
					vlen;
		uint64_t	size = 0;

		if (w == NULL)
		{
			files = realloc(files, (nfiles + 1) * sizeof(char *));
			if (files == NULL ||
				asprintf(&files[nfiles], "%s/load-%zu.sst", pdb->dir, nfiles) < 0)
				die("out of memory", NULL);
			w = rocksdb_sstfilewriter_create(pdb->env_options, pdb->options);
			rocksdb_sstfilewriter_open(w, files[nfiles++], &errptr);
			if (errptr != NULL)
				die("sstfilewriter_open", errptr);
		}
		fill = account_record(fill, aid);
		record_next(rec, fill, &k, &klen, &v, &vlen);
		if (pdb->block_rows == 0)
		{
			memcpy(key + TS_TABLE_ID_SIZE, k, klen);
			put_file(pdb, w, key, TS_TABLE_ID_SIZE + klen, v, vlen);
			fill = block;
		}
		else if (++in_block == pdb->block_rows || aid == nrows)
		{
			/* the block's key is its last row's, so a Seek lands on it */
			memcpy(key + TS_TABLE_ID_SIZE, k, klen);
			if (pdb->columnar)
			{
				uint8_t    *cend = columnar_build(block, fill, in_block, columns,
												  columns_section);

				put_file(pdb, w, key, TS_TABLE_ID_SIZE + klen, columns,
						 (size_t) (cend - columns));
			}
			else
				put_file(pdb, w, key, TS_TABLE_ID_SIZE + klen, block,
						 (size_t) (fill - block));
			fill = block;
			in_block = 0;
		}
		if (fill != block)
			continue;
		/* the file's size looked at about as often as ts_sst_sink.c does */
		if ((unchecked_rows += pdb->block_rows > 0 ? pdb->block_rows : 1) >= 4096)
		{
			rocksdb_sstfilewriter_file_size(w, &size);
			unchecked_rows = 0;
		}
		if (size >= SST_TARGET_BYTES || aid == nrows)
		{
			rocksdb_sstfilewriter_finish(w, &errptr);
			if (errptr != NULL)
				die("sstfilewriter_finish", errptr);
			rocksdb_sstfilewriter_destroy(w);
			w = NULL;
		}
	}
	pdb->load_ns = thread_ns() - t0;

	/* the rows encoded again, written nowhere: what of load_ns is not SST */
	t0 = thread_ns();
	for (int64_t aid = 1; aid <= nrows; aid++)
	{
		const uint8_t *k,
				   *v;
		size_t		klen,
					vlen;

		fill = account_record(block, aid);
		record_next(block, fill, &k, &klen, &v, &vlen);
		memcpy(key + TS_TABLE_ID_SIZE, k, klen);
		__asm__ volatile("" : : "r"(key), "r"(v) : "memory");
	}
	pdb->encode_ns = thread_ns() - t0;

	t0 = thread_ns();
	ingest = rocksdb_ingestexternalfileoptions_create();
	rocksdb_ingestexternalfileoptions_set_move_files(ingest, 1);
	rocksdb_ingestexternalfileoptions_set_allow_global_seqno(ingest, 1);
	rocksdb_ingestexternalfileoptions_set_allow_blocking_flush(ingest, 1);
	rocksdb_ingest_external_file(pdb->db, (const char *const *) files, nfiles, ingest, &errptr);
	if (errptr != NULL)
		die("ingest_external_file", errptr);
	rocksdb_ingestexternalfileoptions_destroy(ingest);
	pdb->ingest_ns = thread_ns() - t0;
	pdb->sst_bytes = sst_bytes(pdb->dir);
	for (size_t i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(block);
	free(columns);
	free(columns_section);
}

/* An iterator over the table's rows, as a full scan's (ts_scan_open). */
static rocksdb_iterator_t *
table_iterator(PackedDb *pdb, rocksdb_readoptions_t **ro, uint8_t *upper)
{
	rocksdb_iterator_t *it;
	uint8_t		lower[TS_TABLE_ID_SIZE];

	*ro = rocksdb_readoptions_create();
	table_prefix(upper, TABLE_ID + 1);
	table_prefix(lower, TABLE_ID);
	rocksdb_readoptions_set_iterate_upper_bound(*ro, (const char *) upper, TS_TABLE_ID_SIZE);
	rocksdb_readoptions_set_fill_cache(*ro, 0);	/* a bulk read's, as the tserver's */
	it = rocksdb_create_iterator(pdb->db, *ro);
	rocksdb_iter_seek(it, (const char *) lower, TS_TABLE_ID_SIZE);
	return it;
}

/* Decode one row with the tserver's decoder; key without the table id. */
static inline void
decode_row(const uint8_t *key, size_t keylen, const uint8_t *value, size_t valuelen,
		   uint8_t *keybuf, TsValue *values, TcArena *scratch)
{
	memcpy(keybuf + TS_TABLE_ID_SIZE, key, keylen);
	if (!ts_row_decode(&decode_layout, keybuf, TS_TABLE_ID_SIZE + keylen, value, valuelen,
					   values, scratch))
		die("ts_row_decode refused a row", "decode");
}

/*
 * One full scan (every column decoded) or count_sum (abalance alone) of
 * pdb; the row count and sums are checked against what was loaded
 * (expect_other: the sum of every row's aid, bid and filler length).
 */
static void
scan_db(PackedDb *pdb, int measure, int64_t nrows, int64_t expect_sum,
		int64_t expect_other, int round)
{
	rocksdb_readoptions_t *ro;
	uint8_t		upper[TS_TABLE_ID_SIZE];
	uint8_t		keybuf[TS_TABLE_ID_SIZE + 64] = {0};
	TsValue		values[4];
	TcArena		scratch;
	int64_t		count = 0,
				sum = 0,
				filler = 0;
	double		t0 = thread_ns();
	rocksdb_iterator_t *it = table_iterator(pdb, &ro, upper);

	tc_arena_init(&scratch, 4096);
	for (; rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		keylen,
					valuelen;
		const uint8_t *key = (const uint8_t *) rocksdb_iter_key(it, &keylen);
		const uint8_t *value = (const uint8_t *) rocksdb_iter_value(it, &valuelen);
		const uint8_t *p,
				   *end;

		if (pdb->block_rows == 0 && measure == M_COUNT_SUM)
		{
			count++;
			sum += value_abalance(value, value + valuelen);
			continue;
		}
		if (pdb->block_rows == 0)
		{
			decode_row(key + TS_TABLE_ID_SIZE, keylen - TS_TABLE_ID_SIZE, value, valuelen,
					   keybuf, values, &scratch);
			count++;
			sum += values[2].i;
			filler += (int64_t) values[3].len + values[0].i + values[1].i;
			continue;
		}
		if (pdb->columnar)
		{
			ColumnarBlock cb;
			const uint8_t *pos[4];

			columnar_open(&cb, value, value + valuelen);
			count += (int64_t) cb.nrows;
			if (measure == M_COUNT_SUM)
			{
				/* the abalance section alone */
				p = cb.section[2];
				for (uint64_t i = 0; i < cb.nrows; i++)
					sum += column_int(&p, cb.section_end[2]);
				continue;
			}
			memcpy(pos, cb.section, sizeof(pos));
			for (uint64_t i = 0; i < cb.nrows; i++)
			{
				columnar_row(&cb, pos, values);
				sum += values[2].i;
				filler += (int64_t) values[3].len + values[0].i + values[1].i;
			}
			continue;
		}
		/* a packed block: walk its records */
		for (p = value, end = value + valuelen; p < end;)
		{
			const uint8_t *k,
					   *v;
			size_t		klen,
						vlen;

			p = record_next(p, end, &k, &klen, &v, &vlen);
			count++;
			if (measure == M_COUNT_SUM)
			{
				sum += value_abalance(v, v + vlen);
				continue;
			}
			decode_row(k, klen, v, vlen, keybuf, values, &scratch);
			sum += values[2].i;
			filler += (int64_t) values[3].len + values[0].i + values[1].i;
		}
	}
	pdb->ns[measure][round] = (thread_ns() - t0) / (double) nrows;
	pdb->nrounds[measure] = round + 1;
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	tc_arena_free(&scratch);
	if (count != nrows || sum != expect_sum || (measure == M_FULL && filler != expect_other))
	{
		fprintf(stderr, "packed_scan: %s %s read %" PRId64 " rows, sum %" PRId64
				", expected %" PRId64 " and %" PRId64 "\n", pdb->name,
				measure_names[measure], count, sum, nrows, expect_sum);
		exit(1);
	}
}

/*
 * The row of key in the entry it found (a packed block holds it if any
 * does): its abalance added to *sum; false when not there.
 */
static bool
lookup_in_entry(PackedDb *pdb, rocksdb_iterator_t *it, const uint8_t *key, size_t keylen,
				uint8_t *keybuf, TsValue *values, TcArena *scratch, int64_t *sum)
{
	size_t		ek,
				valuelen;
	const uint8_t *entry_key,
			   *value,
			   *p,
			   *end;

	if (!rocksdb_iter_valid(it))
		return false;
	entry_key = (const uint8_t *) rocksdb_iter_key(it, &ek);
	value = (const uint8_t *) rocksdb_iter_value(it, &valuelen);
	if (pdb->block_rows == 0)
	{
		if (ek != TS_TABLE_ID_SIZE + keylen ||
			memcmp(entry_key + TS_TABLE_ID_SIZE, key, keylen) != 0)
			return false;
		decode_row(key, keylen, value, valuelen, keybuf, values, scratch);
		*sum += values[2].i;
		return true;
	}
	if (pdb->columnar)
	{
		ColumnarBlock cb;
		const uint8_t *pos[4];

		/* the keys' section to the row's index, then each column's to it */
		columnar_open(&cb, value, value + valuelen);
		memcpy(pos, cb.section, sizeof(pos));
		for (uint64_t i = 0; i < cb.nrows; i++)
		{
			const uint8_t *k = pos[0];
			uint64_t	klen;
			int			cmp;

			if (!tc_varint_get(&k, cb.section_end[0], &klen) ||
				klen > (uint64_t) (cb.section_end[0] - k))
				die("bad key", "columnar");
			cmp = memcmp(k, key, klen < keylen ? klen : keylen);
			if (cmp == 0)
				cmp = (klen > keylen) - (klen < keylen);
			if (cmp > 0)
				return false;
			if (cmp == 0)
			{
				columnar_row(&cb, pos, values);
				*sum += values[2].i;
				return true;
			}
			pos[0] = k + klen;
			for (int c = 1; c < 4; c++)
				pos[c] = column_skip(account_kinds[c], pos[c], cb.section_end[c]);
		}
		return false;
	}
	/* the records are in key order: walk to the first not below key */
	for (p = value, end = value + valuelen; p < end;)
	{
		const uint8_t *k,
				   *v;
		size_t		klen,
					vlen;
		int			cmp;

		p = record_next(p, end, &k, &klen, &v, &vlen);
		cmp = memcmp(k, key, klen < keylen ? klen : keylen);
		if (cmp == 0)
			cmp = (klen > keylen) - (klen < keylen);
		if (cmp < 0)
			continue;
		if (cmp > 0)
			return false;
		decode_row(k, klen, v, vlen, keybuf, values, scratch);
		*sum += values[2].i;
		return true;
	}
	return false;
}

/* nkeys point reads of aids by one method; every one must find its row. */
static void
lookup_db(PackedDb *pdb, int measure, const int64_t *aids, size_t nkeys, int round)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();	/* fill_cache, as a
																 * lookup's */
	rocksdb_iterator_t *reused = NULL;
	uint8_t		keybuf[TS_TABLE_ID_SIZE + 64] = {0};
	TsValue		values[4];
	TcArena		scratch;
	int64_t		sum = 0,
				expect = 0;
	size_t		found = 0;
	double		t0;

	tc_arena_init(&scratch, 4096);
	table_prefix(keybuf, TABLE_ID);
	t0 = thread_ns();
	if (measure == M_SEEK_REUSE)
		reused = rocksdb_create_iterator(pdb->db, ro);
	for (size_t i = 0; i < nkeys; i++)
	{
		uint8_t		key[TS_TABLE_ID_SIZE + 8];
		uint8_t    *kend;
		size_t		keylen;

		table_prefix(key, TABLE_ID);
		kend = tc_record_put_key_column(key + TS_TABLE_ID_SIZE, TCOPY__KIND__KIND_INT,
										aids[i], 0, NULL, 0, 0);
		keylen = (size_t) (kend - key);
		if (measure == M_GET)
		{
			char	   *errptr = NULL;
			size_t		valuelen;
			const uint8_t *value;
			rocksdb_pinnableslice_t *ps = rocksdb_get_pinned(pdb->db, ro, (const char *) key,
															 keylen, &errptr);

			if (errptr != NULL)
				die("get", errptr);
			if (ps == NULL)
				continue;
			value = (const uint8_t *) rocksdb_pinnableslice_value(ps, &valuelen);
			decode_row(key + TS_TABLE_ID_SIZE, keylen - TS_TABLE_ID_SIZE, value, valuelen,
					   keybuf, values, &scratch);
			sum += values[2].i;
			found++;
			rocksdb_pinnableslice_destroy(ps);
		}
		else
		{
			rocksdb_iterator_t *it = reused != NULL ? reused : rocksdb_create_iterator(pdb->db, ro);

			rocksdb_iter_seek(it, (const char *) key, keylen);
			found += lookup_in_entry(pdb, it, key + TS_TABLE_ID_SIZE, keylen - TS_TABLE_ID_SIZE,
									 keybuf, values, &scratch, &sum);
			if (reused == NULL)
				rocksdb_iter_destroy(it);
		}
		tc_arena_reset(&scratch);
	}
	if (reused != NULL)
		rocksdb_iter_destroy(reused);
	pdb->ns[measure][round] = (thread_ns() - t0) / (double) nkeys;
	pdb->nrounds[measure] = round + 1;
	rocksdb_readoptions_destroy(ro);
	tc_arena_free(&scratch);
	for (size_t i = 0; i < nkeys; i++)
		expect += account_abalance(aids[i]);
	if (found != nkeys || sum != expect)
	{
		fprintf(stderr, "packed_scan: %s %s found %zu of %zu keys\n", pdb->name,
				measure_names[measure], found, nkeys);
		exit(1);
	}
}

static int
compare_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
median(const double *v, int n)
{
	double		s[MAX_ROUNDS];

	if (n == 0)
		return 0;
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), compare_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Remove dir and the files in it (one level: a RocksDB's). */
static void
remove_dir(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
	{
		char		path[1024];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void
usage(void)
{
	fprintf(stderr, "usage: packed_scan [--rows N] [--rounds R] [--lookups L] "
			"[--lookup-rounds R] [--blocks B,B,...] [--columnar B,B,...] [--seek-reuse] "
			"[--no-compression] [--dir DIR] [--keep]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	int64_t		nrows = 10000000;
	int			rounds = 5,
				lookup_rounds = 3;
	size_t		nlookups = 1000000;
	const char *blocks = "64,128,256,1024";
	const char *columnar = "128";
	const char *parent = "/var/tmp";
	bool		keep = false,
				seek_reuse = false;
	char		top[512];
	PackedDb	dbs[MAX_LAYOUTS];
	int			ndbs = 0;
	int64_t		expect_sum = 0,
				expect_other = 0;
	int64_t    *aids;
	uint32_t	slots[1];
	double		t_start = thread_ns();

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--keep") == 0)
			keep = true;
		else if (strcmp(argv[i], "--seek-reuse") == 0)
			seek_reuse = true;
		else if (strcmp(argv[i], "--no-compression") == 0)
			compress_lz4 = false;
		else if (i + 1 >= argc)
			usage();
		else if (strcmp(argv[i], "--rows") == 0)
			nrows = strtoll(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rounds") == 0)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--lookup-rounds") == 0)
			lookup_rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--lookups") == 0)
			nlookups = (size_t) strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--blocks") == 0)
			blocks = argv[++i];
		else if (strcmp(argv[i], "--columnar") == 0)
			columnar = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0)
			parent = argv[++i];
		else
			usage();
	}
	if (nrows < 1 || rounds < 1 || rounds > MAX_ROUNDS || lookup_rounds < 0 ||
		lookup_rounds > MAX_ROUNDS || nlookups < 1)
		usage();

	record_layout = (TcRecordLayout) {
		.ncolumns = 4, .kinds = account_kinds, .is_key = account_is_key, .nkey = 1,
		.key_columns = account_key_columns
	};
	tc_record_layout_derive(&record_layout, slots);
	for (int c = 0; c < 4; c++)
		decode_missing[c].isnull = true;
	decode_layout = (TsLayout) {
		.ncolumns = 4, .kinds = (Tcopy__Kind *) account_kinds,
		.is_key = (bool *) account_is_key, .nkey = 1, .key_columns = account_key_columns,
		.missing = decode_missing
	};

	snprintf(top, sizeof(top), "%s/packed_scan.XXXXXX", parent);
	if (mkdtemp(top) == NULL)
		die("mkdtemp", NULL);
	memset(dbs, 0, sizeof(dbs));
	for (const char *b = blocks; ndbs == 0 || *b != '\0' || *columnar != '\0'; ndbs++)
	{
		PackedDb   *pdb = &dbs[ndbs];

		if (ndbs >= MAX_LAYOUTS)
			usage();
		if (ndbs == 0)
			snprintf(pdb->name, sizeof(pdb->name), "row");
		else
		{
			char	   *next;

			/* the packed layouts, then the columnar ones */
			pdb->columnar = *b == '\0';
			if (pdb->columnar)
				b = columnar;
			pdb->block_rows = (uint32_t) strtoul(b, &next, 10);
			if (next == b || pdb->block_rows < 1 || pdb->block_rows > 65536)
				usage();
			b = *next == ',' ? next + 1 : next;
			if (pdb->columnar)
			{
				columnar = b;
				b = "";
			}
			snprintf(pdb->name, sizeof(pdb->name), "%s%u", pdb->columnar ? "col" : "pack",
					 pdb->block_rows);
		}
		if (snprintf(pdb->dir, sizeof(pdb->dir), "%s/%s", top, pdb->name) >=
			(int) sizeof(pdb->dir))
			usage();
		load_db(pdb, nrows);
		fprintf(stderr, "loaded %s: %" PRIu64 " entries, %.1f MB of SST\n", pdb->name,
				pdb->entries, pdb->sst_bytes / 1e6);
	}
	for (int64_t aid = 1; aid <= nrows; aid++)
	{
		expect_sum += account_abalance(aid);
		expect_other += aid + (aid - 1) / 100000 + 1 + FILLER_BLANKS;
	}

	aids = malloc(nlookups * sizeof(int64_t));
	if (aids == NULL)
		die("out of memory", NULL);
	for (size_t i = 0; i < nlookups; i++)
		aids[i] = (int64_t) (mix64(i ^ 0xABCDEF) % (uint64_t) nrows) + 1;

	/* the layouts alternate within each round, starting one later each time */
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < ndbs; j++)
		{
			PackedDb   *pdb = &dbs[(r + j) % ndbs];

			scan_db(pdb, M_FULL, nrows, expect_sum, expect_other, r);
			scan_db(pdb, M_COUNT_SUM, nrows, expect_sum, expect_other, r);
			fprintf(stderr, "scans: round %d of %d, %d of %d layouts\n", r + 1, rounds,
					j + 1, ndbs);
		}
	for (int r = 0; r < lookup_rounds; r++)
		for (int j = 0; j < ndbs; j++)
		{
			PackedDb   *pdb = &dbs[(r + j) % ndbs];

			if (pdb->block_rows == 0)
				lookup_db(pdb, M_GET, aids, nlookups, r);
			lookup_db(pdb, M_SEEK_NEW, aids, nlookups, r);
			if (seek_reuse)
				lookup_db(pdb, M_SEEK_REUSE, aids, nlookups, r);
			fprintf(stderr, "lookups: round %d of %d, %d of %d layouts\n", r + 1,
					lookup_rounds, j + 1, ndbs);
		}

	printf("# packed_scan: %" PRId64 " rows, %d rounds of scans, %d of %zu lookups, %s; "
		   "medians of thread CPU time\n", nrows, rounds, lookup_rounds, nlookups,
		   compress_lz4 ? "LZ4" : "no compression");
	printf("| layout | entries | bytes/entry | SST MB | bytes/row on disk | load ns/row "
		   "| of which encode | ingest ms | full ns/row | count_sum ns/row | get ns | seek_new ns "
		   "| seek_reuse ns |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < ndbs; i++)
	{
		PackedDb   *pdb = &dbs[i];

		printf("| %s | %" PRIu64 " | %.0f | %.1f | %.1f | %.0f | %.0f | %.1f", pdb->name,
			   pdb->entries, (double) pdb->value_bytes / (double) pdb->entries,
			   pdb->sst_bytes / 1e6, (double) pdb->sst_bytes / (double) nrows,
			   pdb->load_ns / (double) nrows, pdb->encode_ns / (double) nrows,
			   pdb->ingest_ns / 1e6);
		for (int m = 0; m < NMEASURES; m++)
		{
			if (pdb->nrounds[m] == 0)
				printf(" | -");
			else
				printf(" | %.1f", median(pdb->ns[m], pdb->nrounds[m]));
		}
		printf(" |\n");
	}
	printf("\nEvery round (ns per row or lookup):\n");
	for (int i = 0; i < ndbs; i++)
		for (int m = 0; m < NMEASURES; m++)
		{
			if (dbs[i].nrounds[m] == 0)
				continue;
			printf("%s %s:", dbs[i].name, measure_names[m]);
			for (int r = 0; r < dbs[i].nrounds[m]; r++)
				printf(" %.1f", dbs[i].ns[m][r]);
			printf("\n");
		}
	printf("\nthe program's own CPU time: %.1f s\n", (thread_ns() - t_start) / 1e9);

	for (int i = 0; i < ndbs; i++)
	{
		rocksdb_close(dbs[i].db);
		rocksdb_options_destroy(dbs[i].options);
		rocksdb_block_based_options_destroy(dbs[i].table_options);
		rocksdb_cache_destroy(dbs[i].cache);
		rocksdb_envoptions_destroy(dbs[i].env_options);
		if (!keep)
			remove_dir(dbs[i].dir);
	}
	if (!keep)
		rmdir(top);
	else
		printf("kept %s\n", top);
	free(aids);
	return 0;
}
