/*
 * test_group_ingest.c
 *		What a replica group's member checks before it applies an INGEST
 *		entry of its log again after a crash (ts_group.c): whether the
 *		files it finds are the store's live files already, the same inode
 *		(ts_storage_files_live).  RocksDB moves a file in as a hard link,
 *		commits, then unlinks the original: a crash between the last two
 *		leaves the original, which must not be ingested a second time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_test.h"
#include "ts_key.h"
#include "ts_store_int.h"

static char data_dir[256];

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

int
main(void)
{
	snprintf(data_dir, sizeof(data_dir), "/tmp/tcopy-test-group-XXXXXX");
	if (mkdtemp(data_dir) == NULL)
		return 1;
	TC_RUN(test_files_live);
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", data_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", data_dir);
	}
	return tc_test_summary();
}
