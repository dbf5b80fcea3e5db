/*
 * ts_storage_write.c
 *		The one way a WriteBatch reaches the store's RocksDB, and the way a
 *		replica group's entries are applied to it.
 *
 * A tserver alone writes a batch straight to RocksDB (synced unless
 * --no-sync).  A member of a replica group hands the batch's bytes to its
 * replicator instead (ts_group.c, the session layer, sets it): the batch is
 * appended to the group's log, and every member, this one included, writes
 * it when the log has committed it, through ts_storage_apply.  Each applied
 * batch carries the log index it came from, written in the same WriteBatch
 * (META_APPLIED_INDEX), so that a member replaying its log after a restart
 * skips what it already holds.  Docs: docs/replication.md.
 */
#include "ts_storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ts_key.h"
#include "ts_log.h"

#define META_APPLIED_INDEX "raft:applied"

void
ts_storage_set_replicator(TsStore *store, TsStorageReplicator replicator, void *arg)
{
	store->replicator = replicator;
	store->replicator_arg = arg;
}

bool
ts_storage_replicated(const TsStore *store)
{
	return store->replicator != NULL;
}

int
ts_storage_write(TsStore *store, rocksdb_writebatch_t *wb, const char *what, TsError *err)
{
	char	   *errptr = NULL;
	uint64_t	written;	/* lazy writes made before this one began */

	if (store->replicator != NULL)
	{
		size_t		len;
		const char *data = rocksdb_writebatch_data(wb, &len);

		if (store->replicator(store->replicator_arg, data, len, err) != 0)
		{
			ts_error_prefix(err, what);
			return -1;
		}
		return 0;
	}
	/* lazy writes finished before this synced one began are durable with it */
	written = atomic_load(&store->lazy_writes);
	rocksdb_write(store->db, store->write_sync, wb, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, what, errptr);
		return -1;
	}
	if (store->opts.sync_commits)
		ts_storage_lazy_covered(store, written);
	return 0;
}

/* docs: ts_wal_sync.c */
int
ts_storage_write_lazy(TsStore *store, rocksdb_writebatch_t *wb, const char *what, TsError *err)
{
	char	   *errptr = NULL;

	if (store->replicator != NULL || !store->opts.sync_commits || store->write_lazy == NULL)
		return ts_storage_write(store, wb, what, err);
	rocksdb_write(store->db, store->write_lazy, wb, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, what, errptr);
		return -1;
	}
	atomic_fetch_add(&store->lazy_writes, 1);
	return 0;
}

int
ts_storage_load_applied(TsStore *store, TsError *err)
{
	char	   *errptr = NULL;
	size_t		len;
	char	   *value;

	value = rocksdb_get_cf(store->db, store->read_default, store->cf_meta,
						   META_APPLIED_INDEX, strlen(META_APPLIED_INDEX), &len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read the replica group's applied index", errptr);
		return -1;
	}
	store->applied_index = (value != NULL && len == 8) ? ts_get_be64((uint8_t *) value) : 0;
	store->applied_durable = store->applied_index;
	free(value);
	return 0;
}

uint64_t
ts_storage_applied(const TsStore *store)
{
	return store->applied_index;
}

uint64_t
ts_storage_applied_durable(const TsStore *store)
{
	return store->applied_durable;
}

int
ts_storage_forget_applied(TsStore *store, TsError *err)
{
	char	   *errptr = NULL;

	rocksdb_delete_cf(store->db, store->write_sync, store->cf_meta, META_APPLIED_INDEX,
					  strlen(META_APPLIED_INDEX), &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not reset the replica group's applied index", errptr);
		return -1;
	}
	store->applied_index = 0;
	store->applied_durable = 0;
	return 0;
}

/*
 * Write wb with index as the applied index beside it, synced (unless the
 * tserver runs --no-sync); wb is freed.  Never unsynced on purpose: an
 * unsynced write reaches the disk whenever the kernel writes it back,
 * before or after what the entries up to index wrote elsewhere.
 */
static int
apply_batch(TsStore *store, uint64_t index, rocksdb_writebatch_t *wb, TsError *err)
{
	uint8_t		applied[8];
	char	   *errptr = NULL;

	ts_put_be64(applied, index);
	rocksdb_writebatch_put_cf(wb, store->cf_meta, META_APPLIED_INDEX,
							  strlen(META_APPLIED_INDEX), (const char *) applied, 8);
	rocksdb_write(store->db, store->write_sync, wb, &errptr);
	rocksdb_writebatch_destroy(wb);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not apply an entry of the replica group's log", errptr);
		return -1;
	}
	store->applied_index = index;
	store->applied_durable = index;
	return 0;
}

int
ts_storage_apply(TsStore *store, uint64_t index, const char *data, size_t len, TsError *err)
{
	rocksdb_writebatch_t *wb;

	if (index <= store->applied_index)
		return 0;				/* replayed: already in RocksDB */
	wb = rocksdb_writebatch_create_from(data, len);
	if (wb == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "entry %llu of the replica group's log is not a WriteBatch",
					 (unsigned long long) index);
		return -1;
	}
	return apply_batch(store, index, wb, err);
}

int
ts_storage_ingest(TsStore *store, char *const *files, size_t nfiles, TsError *err)
{
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
ts_storage_mark_applied(TsStore *store, uint64_t index, bool sync, TsError *err)
{
	if (!sync)
	{
		if (index > store->applied_index)
			store->applied_index = index;
		return 0;
	}
	if (index <= store->applied_durable)
		return 0;
	return apply_batch(store, index, rocksdb_writebatch_create(), err);
}

int
ts_storage_files_live(TsStore *store, char *const *files, size_t nfiles, size_t *live,
					  TsError *err)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(store->db);
	int			nlive = lf != NULL ? rocksdb_livefiles_count(lf) : 0;
	struct stat *staged = calloc(nfiles > 0 ? nfiles : 1, sizeof(struct stat));
	bool	   *seen = calloc(nfiles > 0 ? nfiles : 1, sizeof(bool));

	*live = 0;
	if (lf == NULL || staged == NULL || seen == NULL)
	{
		if (lf != NULL)
			rocksdb_livefiles_destroy(lf);
		free(staged);
		free(seen);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nfiles; i++)
		seen[i] = stat(files[i], &staged[i]) != 0;	/* absent: not counted */
	for (int j = 0; j < nlive; j++)
	{
		char		path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s%s", store->dir, rocksdb_livefiles_name(lf, j));
		if (stat(path, &st) != 0)
			continue;
		for (size_t i = 0; i < nfiles; i++)
		{
			if (!seen[i] && staged[i].st_dev == st.st_dev && staged[i].st_ino == st.st_ino)
			{
				seen[i] = true;
				(*live)++;
			}
		}
	}
	rocksdb_livefiles_destroy(lf);
	free(staged);
	free(seen);
	return 0;
}
