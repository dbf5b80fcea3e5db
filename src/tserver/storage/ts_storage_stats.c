/*
 * ts_storage_stats.c
 *		The store's figures for STATS: RocksDB's statistics tickers (with
 *		--statistics), the store's counters, the SST bytes, L0 files and
 *		free space of its disk.
 */
#include "ts_storage_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* A RocksDB integer property of family cf, or 0. */
static uint64_t
property_u64(TsStore *store, rocksdb_column_family_handle_t *cf, const char *name)
{
	char	   *value = rocksdb_property_value_cf(store->db, cf, name);
	uint64_t	n = value != NULL ? strtoull(value, NULL, 10) : 0;

	free(value);
	return n;
}

/*
 * The store's live SST bytes (both families), the room left on the data
 * directory's file system, and the data family's files at level 0.
 */
static void
ts_storage_disk_stats(TsStore *store, uint64_t *sst_bytes, uint64_t *free_bytes,
					  uint64_t *l0_files)
{
	struct statvfs vfs;

	*sst_bytes = property_u64(store, store->cf_data, "rocksdb.live-sst-files-size") +
		property_u64(store, store->cf_meta, "rocksdb.live-sst-files-size");
	*l0_files = property_u64(store, store->cf_data, "rocksdb.num-files-at-level0");
	*free_bytes = statvfs(store->dir, &vfs) == 0 ? (uint64_t) vfs.f_bavail * vfs.f_frsize : 0;
}

/* The count of RocksDB statistics ticker name in text (its dump), or 0. */
static uint64_t
statistics_ticker(const char *text, const char *name)
{
	const char *p = text;
	size_t		len = strlen(name);

	while ((p = strstr(p, name)) != NULL)
	{
		if ((p == text || p[-1] == '\n') && strncmp(p + len, " COUNT : ", 9) == 0)
			return strtoull(p + len + 9, NULL, 10);
		p += len;
	}
	return 0;
}

void
ts_store_stats(TsStore *store, Tcopy__Stats *stats)
{
	if (store->opts.statistics)
	{
		char	   *text = rocksdb_options_statistics_get_string(store->options);

		if (text != NULL)
		{
			stats->compaction_read_bytes = statistics_ticker(text, "rocksdb.compact.read.bytes");
			stats->compaction_write_bytes = statistics_ticker(text, "rocksdb.compact.write.bytes");
			stats->flush_write_bytes = statistics_ticker(text, "rocksdb.flush.write.bytes");
			stats->wal_syncs = statistics_ticker(text, "rocksdb.wal.synced");
			stats->stall_micros = statistics_ticker(text, "rocksdb.stall.micros");
			rocksdb_free(text);
		}
	}
	stats->tables = atomic_load(&store->tables_live);
	stats->lazy_writes = atomic_load(&store->lazy_writes);
	stats->wal_background_syncs = atomic_load(&store->wal_background_syncs);
	stats->sessions_open = atomic_load(&store->sessions_open);
	stats->sessions_committed = atomic_load(&store->sessions_committed);
	stats->sessions_aborted = atomic_load(&store->sessions_aborted);
	stats->sessions_prepared = atomic_load(&store->sessions_prepared);
	stats->rows_committed = atomic_load(&store->rows_committed);
	stats->staged_bytes = atomic_load(&store->staged_bytes);
	stats->spilled_bytes = atomic_load(&store->spilled_bytes);
	stats->memory_budget_bytes = store->opts.memory_bytes;
	ts_storage_disk_stats(store, &stats->sst_bytes, &stats->disk_free_bytes, &stats->l0_files);
}
