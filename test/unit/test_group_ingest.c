/*
 * test_group_ingest.c
 *		What a replica group's member checks before it applies an INGEST
 *		entry of its log again after a crash (ts_group.c): whether the
 *		files it finds are the store's live files already, the same inode
 *		(ts_storage_files_live).  RocksDB moves a file in as a hard link,
 *		commits, then unlinks the original: a crash between the last two
 *		leaves the original, which must not be ingested a second time.
 *
 *		And what a power cut leaves of a staged file's chunks (FILE
 *		entries): the test links with --wrap=pwrite,fsync,fdatasync
 *		(test/Makefile), notes which files were written since their last
 *		sync, and at a "cut" zeroes those, as a machine that lost its page
 *		cache would find them; the entries are then replayed as libraft
 *		would, and the INGEST must find the whole file.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_group_int.h"
#include "ts_key.h"
#include "ts_store_int.h"

static char data_dir[256];

/* ---- the files written since their last sync, by inode ---- */

#define TRACKED_MAX 64

static ino_t unsynced_inodes[TRACKED_MAX];
static int	nunsynced_inodes;

ssize_t		__real_pwrite(int fd, const void *buf, size_t n, off_t offset);
int			__real_fsync(int fd);
int			__real_fdatasync(int fd);
ssize_t		__wrap_pwrite(int fd, const void *buf, size_t n, off_t offset);
int			__wrap_fsync(int fd);
int			__wrap_fdatasync(int fd);

static void
note_inode(int fd, bool written)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	for (int i = 0; i < nunsynced_inodes; i++)
		if (unsynced_inodes[i] == st.st_ino)
		{
			if (!written)
				unsynced_inodes[i] = unsynced_inodes[--nunsynced_inodes];
			return;
		}
	if (written && nunsynced_inodes < TRACKED_MAX)
		unsynced_inodes[nunsynced_inodes++] = st.st_ino;
}

ssize_t
__wrap_pwrite(int fd, const void *buf, size_t n, off_t offset)
{
	note_inode(fd, true);
	return __real_pwrite(fd, buf, n, offset);
}

int
__wrap_fsync(int fd)
{
	int			rc = __real_fsync(fd);

	if (rc == 0)
		note_inode(fd, false);
	return rc;
}

int
__wrap_fdatasync(int fd)
{
	int			rc = __real_fdatasync(fd);

	if (rc == 0)
		note_inode(fd, false);
	return rc;
}

/* The power cut, for path: its bytes zeroed if written since its last sync. */
static void
cut_power(const char *path)
{
	struct stat st;
	int			fd;
	char		zeros[4096] = {0};

	if (stat(path, &st) != 0)
		return;
	for (int i = 0; i < nunsynced_inodes; i++)
		if (unsynced_inodes[i] == st.st_ino && (fd = open(path, O_WRONLY)) >= 0)
		{
			for (off_t at = 0; at < st.st_size; at += sizeof(zeros))
				CHECK(__real_pwrite(fd, zeros, (size_t) (st.st_size - at) < sizeof(zeros) ?
									(size_t) (st.st_size - at) : sizeof(zeros), at) > 0);
			close(fd);
		}
	nunsynced_inodes = 0;
}

/* An SST file at path with one row of table 1. */
static void
write_sst(const char *path, const char *value)
{
	rocksdb_options_t *options = rocksdb_options_create();
	rocksdb_envoptions_t *env = rocksdb_envoptions_create();
	rocksdb_sstfilewriter_t *writer = rocksdb_sstfilewriter_create(env, options);
	uint8_t		key[5];
	char	   *errptr = NULL;

	ts_put_be32(key, 1);
	key[4] = 'k';
	rocksdb_sstfilewriter_open(writer, path, &errptr);
	if (errptr == NULL)
		rocksdb_sstfilewriter_put(writer, (const char *) key, sizeof(key), value,
								  strlen(value), &errptr);
	if (errptr == NULL)
		rocksdb_sstfilewriter_finish(writer, &errptr);
	CHECK(errptr == NULL);
	free(errptr);
	rocksdb_sstfilewriter_destroy(writer);
	rocksdb_envoptions_destroy(env);
	rocksdb_options_destroy(options);
}

static void
test_files_live(void)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	char		staged[512],
				kept[512],
				other[512];
	char	   *files[1];
	size_t		live = 99;

	ts_store_default_options(&options);
	options.sync_commits = false;
	store = ts_store_open(data_dir, &options, &err);
	CHECK(store != NULL);
	if (store == NULL)
		return;
	snprintf(staged, sizeof(staged), "%s/staging/a.sst", data_dir);
	snprintf(kept, sizeof(kept), "%s/staging/a-left.sst", data_dir);
	snprintf(other, sizeof(other), "%s/staging/b.sst", data_dir);
	write_sst(staged, "one");
	write_sst(other, "two");
	/* what a cut ingestion leaves: another name of the same inode */
	CHECK_EQ_INT(link(staged, kept), 0);

	files[0] = kept;
	CHECK_EQ_INT(ts_storage_files_live(store, files, 1, &live, &err), 0);
	CHECK_EQ_INT((int) live, 0);

	files[0] = staged;
	CHECK_EQ_INT(ts_storage_ingest(store, files, 1, &err), 0);
	CHECK(access(staged, F_OK) != 0);	/* moved */

	files[0] = kept;
	CHECK_EQ_INT(ts_storage_files_live(store, files, 1, &live, &err), 0);
	CHECK_EQ_INT((int) live, 1);
	files[0] = other;
	CHECK_EQ_INT(ts_storage_files_live(store, files, 1, &live, &err), 0);
	CHECK_EQ_INT((int) live, 0);
	files[0] = staged;			/* gone: not counted */
	CHECK_EQ_INT(ts_storage_files_live(store, files, 1, &live, &err), 0);
	CHECK_EQ_INT((int) live, 0);
	ts_store_close(store);

	/* a lone tserver clears its staging at open: a member keeps it */
	options.replica_group = true;
	store = ts_store_open(data_dir, &options, &err);
	CHECK(store != NULL);
	if (store == NULL)
		return;
	files[0] = kept;
	CHECK_EQ_INT(ts_storage_files_live(store, files, 1, &live, &err), 0);
	CHECK_EQ_INT((int) live, 1);
	ts_store_close(store);
}

/* ---- a member's entries ---- */

typedef struct Entry
{
	uint64_t	index;
	uint8_t    *bytes;
	size_t		len;
} Entry;

/* A FILE entry of proposer 2: bytes at offset of staged name. */
static Entry
file_entry(uint64_t index, const char *name, uint64_t offset, bool last,
		   const char *bytes, size_t len)
{
	size_t		namelen = strlen(name);
	Entry		e = {index, malloc(FILE_HEADER + namelen + len), FILE_HEADER + namelen + len};

	e.bytes[0] = ENTRY_FILE;
	ts_put_be64(e.bytes + 1, 2);
	ts_put_be64(e.bytes + 9, offset);
	e.bytes[17] = last;
	e.bytes[18] = (uint8_t) (namelen >> 8);
	e.bytes[19] = (uint8_t) namelen;
	memcpy(e.bytes + FILE_HEADER, name, namelen);
	memcpy(e.bytes + FILE_HEADER + namelen, bytes, len);
	return e;
}

/* An INGEST entry of staged name. */
static Entry
ingest_entry(uint64_t index, const char *name)
{
	size_t		namelen = strlen(name);
	Entry		e = {index, malloc(7 + namelen), 7 + namelen};

	e.bytes[0] = ENTRY_INGEST;
	ts_put_be32(e.bytes + 1, 1);
	e.bytes[5] = (uint8_t) (namelen >> 8);
	e.bytes[6] = (uint8_t) namelen;
	memcpy(e.bytes + 7, name, namelen);
	return e;
}

/* A BATCH entry: one row of table 2 (another session's). */
static Entry
batch_entry(TsStore *store, uint64_t index)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	uint8_t		key[5];
	size_t		len;
	const char *data;
	Entry		e = {index, NULL, 0};

	ts_put_be32(key, 2);
	key[4] = 'b';
	rocksdb_writebatch_put_cf(wb, store->cf_data, (const char *) key, sizeof(key), "v", 1);
	data = rocksdb_writebatch_data(wb, &len);
	e.bytes = malloc(len + 1);
	e.bytes[0] = ENTRY_BATCH;
	memcpy(e.bytes + 1, data, len);
	e.len = len + 1;
	rocksdb_writebatch_destroy(wb);
	return e;
}

/* A member on store, as ts_group_start makes it, without its log. */
static TsGroup *
member_open(TsStore *store)
{
	TsGroup    *group = calloc(1, sizeof(TsGroup));

	group->store = store;
	group->id = 1;
	pthread_mutex_init(&group->apply_lock, NULL);
	return group;
}

static void
member_close(TsGroup *group)
{
	for (unsigned i = 0; i < group->nunsynced; i++)
		free(group->unsynced[i]);
	pthread_mutex_destroy(&group->apply_lock);
	free(group);
}

/* Table 1's row "k" in store: its value, or NULL. */
static char *
row_value(TsStore *store)
{
	uint8_t		key[5];
	char	   *errptr = NULL;
	size_t		len;
	char	   *value;

	ts_put_be32(key, 1);
	key[4] = 'k';
	value = rocksdb_get_cf(store->db, store->read_default, store->cf_data, (const char *) key,
						   sizeof(key), &len, &errptr);
	free(errptr);
	if (value != NULL)
		value = realloc(value, len + 1);
	if (value != NULL)
		value[len] = '\0';
	return value;
}

/*
 * A staged file's first chunk applied, then another session's batch (its
 * index recorded, synced), then the power cut: the chunk's bytes must have
 * been synced before that index was recorded, or the replay skips the
 * chunk and the INGEST finds a file zeroed where it was (issue 43).
 */
static void
test_chunks_power_cut(void)
{
	TsStoreOptions options;
	TsError		err;
	TsStore    *store;
	TsGroup    *group;
	char		src[512],
				staged[512];
	char	   *sst = NULL;
	size_t		size = 0;
	char	   *value;
	Entry		log[4];
	FILE	   *f;

	ts_store_default_options(&options);
	options.replica_group = true;
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL);
	snprintf(src, sizeof(src), "%s/chunked.sst", data_dir);
	write_sst(src, "chunked");
	f = fopen(src, "r");
	REQUIRE(f != NULL);
	sst = malloc(1 << 20);
	size = fread(sst, 1, 1 << 20, f);
	fclose(f);
	REQUIRE(size > 64);
	snprintf(staged, sizeof(staged), "%s/session-9/000001.sst", store->staging_dir);

	/* all but the last 8 bytes (the footer's end), then the rest */
	log[0] = file_entry(100, "session-9/000001.sst", 0, false, sst, size - 8);
	log[1] = batch_entry(store, 101);
	log[2] = file_entry(102, "session-9/000001.sst", size - 8, true, sst + size - 8, 8);
	log[3] = ingest_entry(103, "session-9/000001.sst");

	group = member_open(store);
	CHECK_EQ_INT(ts_group_apply(group, log[0].index, log[0].bytes, log[0].len), 0);
	CHECK_EQ_INT(ts_group_apply(group, log[1].index, log[1].bytes, log[1].len), 0);
	CHECK_EQ_UINT(ts_storage_applied_durable(store), 101);
	member_close(group);
	ts_store_close(store);
	cut_power(staged);

	/* the restart: libraft replays the log after its snapshot */
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL);
	group = member_open(store);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(ts_group_apply(group, log[i].index, log[i].bytes, log[i].len), 0);
	value = row_value(store);
	CHECK(value != NULL && strcmp(value, "chunked") == 0);
	free(value);
	CHECK_EQ_UINT(ts_storage_applied_durable(store), 103);

	/*
	 * A chunk alone: its index in memory only, replayed after a cut; a
	 * snapshot's ts_group_sync_applied syncs the file and records it.
	 */
	free(log[0].bytes);
	log[0] = file_entry(104, "session-9/000002.sst", 0, false, sst, size - 8);
	CHECK_EQ_INT(ts_group_apply(group, log[0].index, log[0].bytes, log[0].len), 0);
	CHECK_EQ_UINT(ts_storage_applied(store), 104);
	CHECK_EQ_UINT(ts_storage_applied_durable(store), 103);
	CHECK_EQ_INT(ts_group_sync_applied(group, &err), 0);
	CHECK_EQ_UINT(ts_storage_applied_durable(store), 104);
	CHECK_EQ_INT(nunsynced_inodes, 0);
	member_close(group);
	ts_store_close(store);
	store = ts_store_open(data_dir, &options, &err);
	REQUIRE(store != NULL);
	CHECK_EQ_UINT(ts_storage_applied(store), 104);
	ts_store_close(store);

	for (int i = 0; i < 4; i++)
		free(log[i].bytes);
	free(sst);
}

int
main(void)
{
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-group-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_files_live);
	TC_RUN(test_chunks_power_cut);
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", data_dir);
	}
	return tc_test_summary();
}
