/*
 * ts_publish.c
 *		Publishing a session: its staged truncates, its rows and its staged
 *		drops made visible durably, as one atomic step where RocksDB allows
 *		it, and for a prepared session in steps that a crash at any point
 *		leaves resumable, never applied twice.
 *
 * A session that never spilled is one synced WriteBatch: its truncates
 * (DeleteRange of each table's key range) and rows, built at prepare time
 * (ts_session_build_batch, here), then its drops (each table's DeleteRange and
 * the deletion of its "table:" entry) and, for a prepared session, the
 * deletion of its record.  Atomic by construction.
 *
 * A session that spilled has SST files, which only IngestExternalFile can
 * publish, and a WriteBatch cannot go with it.  So, in steps:
 *
 *   1. if it staged truncates and the record does not say they were
 *      applied: one synced WriteBatch of their DeleteRanges and of the
 *      record rewritten with truncates_applied (a one-step commit: the
 *      DeleteRanges alone);
 *   2. if the sentinel is absent: one IngestExternalFile call of the
 *      sentinel's file (a prepared session's: one key of table id 0, which
 *      overlaps nothing) and the session's files, in precedence order;
 *   3. one synced WriteBatch of the deletion of the sentinel, the drops,
 *      and the deletion of the record.
 *
 * A crash after step 1 leaves the record saying so, and the next attempt
 * skips it; a crash after step 2 leaves the sentinel, and the next attempt
 * skips the ingestion, which must not run twice (it would put the rows
 * back over anything written since).  The files cannot tell: with
 * move_files, RocksDB unlinks the staged files only after it wrote its
 * manifest, so a crash in between leaves them in place though ingested.
 * Ingested files get sequence numbers newer than step 1's DeleteRanges
 * (they overlap them), so the truncates do not touch the session's rows.
 *
 * The last write of a prepared session's publish is lazy (ts_wal_sync.c):
 * written unsynced, made durable by the next synced write of the store
 * (any session's PREPARE) or by the background syncer within 100 ms.  Its
 * record, synced at PREPARE and deleted in that same WriteBatch, stands for
 * it until then: a power cut in between brings the session back prepared
 * and in doubt, and RocksDB's log, recovered up to its first lost write,
 * cannot keep a later write while losing this one.  Reads of its tables
 * and writes to them wait for it to be published again (ts_in_doubt.c;
 * docs/commit.md#one-sync-per-commit has the argument), so a commit costs
 * the tserver one sync, its PREPARE's, shared by the PREPAREs that arrive
 * at the same moment (RocksDB's group commit).  Issue 30 synced this
 * write; the in-doubt reads and waits cover the window it closed.  Every
 * other write of a publish is synced: the truncates'
 * and drops', whose files are deleted after them, and a one-step commit's,
 * which no record stands for.
 *
 * Tables: a one-step commit fails (UNKNOWN_TABLE) if a table it wrote to
 * was dropped since, as it always did.  A prepared session cannot fail so
 * (its transaction committed elsewhere, and it would stay prepared for
 * ever): its rows for such a table are published and deleted in the last
 * step, as if the drop had come after it, which is the order of the
 * decisions.  A staged TRUNCATE or DROP of a table dropped since is
 * skipped for the drop (its name may belong to a new table by now) and
 * harmless for the truncate.  The tables lock is held throughout, shared,
 * or exclusive when the session drops tables, which then leave the
 * in-memory catalogue too.
 */
#include "ts_store_int.h"
#include "ts_session_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_clock.h"
#include "ts_durations.h"
#include "ts_group.h"
#include "ts_key.h"
#include "ts_log.h"

TsHistogram ts_publish_durations;

size_t
ts_sentinel_key(const char *gid, char *key)
{
	size_t		prefix = strlen(TS_META_PREPARED_PREFIX);
	size_t		gidlen = strlen(gid);

	ts_put_be32((uint8_t *) key, 0);
	memcpy(key + TS_TABLE_ID_SIZE, TS_META_PREPARED_PREFIX, prefix);
	memcpy(key + TS_TABLE_ID_SIZE + prefix, gid, gidlen);
	return TS_TABLE_ID_SIZE + prefix + gidlen;
}

int
ts_sentinel_present(TsStore *store, const char *gid, TsError *err)
{
	char		key[TS_SENTINEL_KEY_MAX];
	size_t		keylen = ts_sentinel_key(gid, key);
	size_t		len = 0;
	char	   *errptr = NULL;
	char	   *value;

	value = rocksdb_get_cf(store->db, store->read_default, store->cf_data, key, keylen,
						   &len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not look up a prepared session's sentinel", errptr);
		return -1;
	}
	free(value);
	return value != NULL;
}

/* Delete every row of table_id: the range [be32(id), be32(id + 1)). */
void
ts_batch_delete_table_rows(TsStore *store, rocksdb_writebatch_t *wb, uint32_t table_id)
{
	uint8_t		begin[TS_TABLE_ID_SIZE],
				end[TS_TABLE_ID_SIZE];

	ts_put_be32(begin, table_id);
	ts_put_be32(end, table_id + 1);
	rocksdb_writebatch_delete_range_cf(wb, store->cf_data,
									   (const char *) begin, sizeof(begin),
									   (const char *) end, sizeof(end));
}

/*
 * A never-spilled session as one WriteBatch: its truncates (with their
 * labels), then its records in key order (deletes, or puts of the
 * unmarked values).
 */
rocksdb_writebatch_t *
ts_session_build_batch(TsSession *session)
{
	TsStore    *store = session->store;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();

	for (size_t i = 0; i < session->ntruncates; i++)
	{
		ts_batch_delete_table_rows(store, wb, session->truncates[i]);
		ts_labels_batch_delete_table(store, wb, session->truncates[i]);
	}
	for (size_t i = 0; i < session->noffsets; i++)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		uint32_t	valuelen = ts_record_valuelen(rec);
		const uint8_t *value = ts_record_value(rec, keylen);

		if (ts_value_mark(value, valuelen) == TS_VALUE_DELETE)
		{
			rocksdb_writebatch_delete_cf(wb, store->cf_data,
										 (const char *) ts_record_key(rec), keylen);
			continue;
		}
		value = ts_value_unmarked(value, &valuelen);
		rocksdb_writebatch_put_cf(wb, store->cf_data,
								  (const char *) ts_record_key(rec), keylen,
								  (const char *) value, valuelen);
	}
	return wb;
}

/*
 * Drop the files that hold nothing but rows of tables[n] (emptied by the
 * write just made): unless a snapshot is held, which may be older than the
 * write and still read them (none newer can be taken meanwhile from a
 * publish in steps, which holds publish_lock; one taken after a one-step
 * write sees the rows gone).  Scans' iterators keep the files they read.
 * With write_lock held exclusive since before that write, so that no file
 * in the ranges can hold a row written after it.  true: dropped.
 */
static bool
drop_files_locked(TsStore *store, const uint32_t *tables, size_t ntables)
{
	bool		held;

	pthread_mutex_lock(&store->reg->snapshots_lock);
	held = store->reg->snapshots != NULL;
	pthread_mutex_unlock(&store->reg->snapshots_lock);
	if (held)
		return false;
	for (size_t i = 0; i < ntables; i++)
	{
		uint8_t		begin[TS_TABLE_ID_SIZE],
					end[TS_TABLE_ID_SIZE];
		char	   *errptr = NULL;

		ts_put_be32(begin, tables[i]);
		ts_put_be32(end, tables[i] + 1);
		rocksdb_delete_file_in_range_cf(store->db, store->cf_data,
										(const char *) begin, sizeof(begin),
										(const char *) end, sizeof(end), &errptr);
		if (errptr != NULL)
		{
			ts_log(TS_LOG_WARNING, "could not drop the files of table %u's old rows: %s",
				   tables[i], errptr);
			rocksdb_free(errptr);
		}
	}
	return true;
}

/*
 * Compact the ranges of tables[n] to the bottom level, range deletions and
 * all.  Table id 0's range first, the prepared sessions' sentinels: the
 * memtable's flush puts their deletions in one file with the truncates'
 * range deletions, and while the sentinels' own files lie below, that file
 * is not at the bottom, so its range deletions would stay (and a reload's
 * files, which overlap them, would be ingested into level 0).
 */
static void
compact_ranges(TsStore *store, const uint32_t *tables, size_t ntables)
{
	rocksdb_compactoptions_t *options = rocksdb_compactoptions_create();

	rocksdb_compactoptions_set_bottommost_level_compaction(options, 2);	/* kForce */
	for (size_t i = 0; i <= ntables; i++)
	{
		uint32_t	id = i == 0 ? 0 : tables[i - 1];
		uint8_t		begin[TS_TABLE_ID_SIZE],
					end[TS_TABLE_ID_SIZE];

		ts_put_be32(begin, id);
		ts_put_be32(end, id + 1);
		rocksdb_compact_range_cf_opt(store->db, store->cf_data, options,
									 (const char *) begin, sizeof(begin),
									 (const char *) end, sizeof(end));
	}
	rocksdb_compactoptions_destroy(options);
}

int
ts_store_write_emptying(TsStore *store, rocksdb_writebatch_t *wb,
						const uint32_t *tables, size_t ntables, bool compact,
						const char *what, TsError *err)
{
	bool		dropped = false;
	int			rc;

	pthread_rwlock_wrlock(&store->reg->write_lock);
	rc = ts_storage_write(store, wb, what, err);
	if (rc == 0 && ntables > 0)
		dropped = drop_files_locked(store, tables, ntables);
	pthread_rwlock_unlock(&store->reg->write_lock);
	if (dropped && compact)
		compact_ranges(store, tables, ntables);
	return rc;
}

/* Write wb, synced unless lazy; 0, or -1 with err saying what. */
static int
publish_write(TsStore *store, rocksdb_writebatch_t *wb, bool lazy, const char *what,
			  TsError *err)
{
	int			rc;

	pthread_rwlock_rdlock(&store->reg->write_lock);
	if (lazy)
		rc = ts_storage_write_lazy(store, wb, what, err);
	else
		rc = ts_storage_write(store, wb, what, err);
	pthread_rwlock_unlock(&store->reg->write_lock);
	return rc;
}

/*
 * The last write of a publish; a one-step commit's with truncates drops
 * the old rows' files too (the next load lands below nothing).  A prepared
 * session's is lazy: its record, deleted in the same WriteBatch, stands
 * for it until a sync covers it (see the header).
 */
static int
publish_commit_write(TsStore *store, const TsPublish *pub, rocksdb_writebatch_t *wb,
					 TsError *err)
{
	if (pub->batch == NULL || pub->ntruncates == 0)
		return publish_write(store, wb, pub->gid != NULL, "could not commit the session", err);
	return ts_store_write_emptying(store, wb, pub->truncates, pub->ntruncates, true,
								   "could not commit the session", err);
}

/*
 * Ingest files in one call, in their order of precedence: here, or on
 * every member of the store's replica group (their files shipped before).
 */
static int
publish_ingest(TsStore *store, char **files, size_t nfiles, TsError *err)
{
	int			rc;

	if (nfiles == 0)
		return 0;
	pthread_rwlock_rdlock(&store->reg->write_lock);
	if (store->group != NULL)
		rc = ts_group_ingest(store->group, files, nfiles, err);
	else
		rc = ts_storage_ingest(store, files, nfiles, err);
	pthread_rwlock_unlock(&store->reg->write_lock);
	return rc;
}

/* Step 1 of a spilled session: its truncates, and the record saying so. */
static int
publish_truncates(TsStore *store, const TsPublish *pub, TsError *err)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	int			rc;

	for (size_t i = 0; i < pub->ntruncates; i++)
	{
		ts_batch_delete_table_rows(store, wb, pub->truncates[i]);
		ts_labels_batch_delete_table(store, wb, pub->truncates[i]);
	}
	if (pub->gid != NULL)
	{
		char		key[sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX];

		snprintf(key, sizeof(key), "%s%s", TS_META_PREPARED_PREFIX, pub->gid);
		rocksdb_writebatch_put_cf(wb, store->cf_meta, key, strlen(key),
								  (const char *) pub->record_truncated,
								  pub->record_truncated_len);
	}
	/*
	 * synced: an ingestion that outlives a crash must find them applied;
	 * the old rows' files dropped, so that the session's files land below
	 * nothing (issue 27)
	 */
	rc = ts_store_write_emptying(store, wb, pub->truncates, pub->ntruncates, true,
								 "could not truncate the session's tables", err);
	rocksdb_writebatch_destroy(wb);
	return rc;
}

/* ts_publish, untimed */
static int
publish(TsStore *store, const TsPublish *pub, TsError *err)
{
	rocksdb_writebatch_t *wb = pub->batch;
	TsTable   **dropping = NULL;	/* the live tables of pub->drops */
	size_t		ndropping = 0;
	bool		ingested = false;
	int			result = -1;

	if (pub->ndrops > 0 && (dropping = calloc(pub->ndrops, sizeof(TsTable *))) == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	/* exclusive to drop tables; else shared: no table is dropped under us */
	if (pub->ndrops > 0)
		pthread_rwlock_wrlock(&store->tables_lock);
	else
		pthread_rwlock_rdlock(&store->tables_lock);
	/*
	 * in steps: no snapshot nor scan may be made between them (the
	 * truncates applied and not the rows, the rows and not the drops)
	 */
	if (pub->batch == NULL)
		pthread_rwlock_wrlock(&store->reg->publish_lock);

	for (size_t i = 0; pub->gid == NULL && i < pub->ntables; i++)
	{
		if (ts_store_table_locked(store, pub->tables[i], NULL) == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE,
						 "table with id %u was dropped while the session wrote to it",
						 pub->tables[i]);
			goto done;
		}
	}

	if (pub->batch == NULL)
	{
		int			present = pub->gid != NULL ? ts_sentinel_present(store, pub->gid, err) : 0;

		if (present < 0)
			goto done;
		ingested = present == 1;
		if (!ingested && pub->ntruncates > 0 && !pub->truncates_applied)
		{
			if (publish_truncates(store, pub, err) != 0 ||
				ts_store_crash_point(store, "after-truncates", err) != 0)
				goto done;
		}
		if (!ingested)
		{
			if (publish_ingest(store, pub->files, pub->nfiles, err) != 0 ||
				ts_store_crash_point(store, "after-ingest", err) != 0)
				goto done;
		}
		else
			ts_log(TS_LOG_INFO, "prepared session \"%s\": its files were ingested before; "
				   "finishing its publication", pub->gid);
		wb = rocksdb_writebatch_create();
	}

	/* rows of a prepared session for tables dropped since go with them */
	for (size_t i = 0; pub->gid != NULL && i < pub->ntables; i++)
	{
		if (ts_store_table_locked(store, pub->tables[i], NULL) == NULL)
		{
			ts_log(TS_LOG_WARNING, "prepared session \"%s\": table with id %u was dropped "
				   "since the session wrote to it; its rows there are deleted as published",
				   pub->gid, pub->tables[i]);
			ts_batch_delete_table_rows(store, wb, pub->tables[i]);
		}
	}
	/* labels: after the truncates (which delete the old ones), before the drops */
	for (size_t i = 0; i < pub->nlabels; i++)
	{
		if (ts_store_table_locked(store, pub->labels[i].table_id, NULL) != NULL)
			ts_labels_batch_publish(store, wb, &pub->labels[i], 1, pub->gid);
	}
	for (size_t i = 0; i < pub->ndrops; i++)
	{
		TsTable    *table = ts_store_table_locked(store, pub->drops[i], NULL);
		char		key[sizeof(TS_META_TABLE_PREFIX) + TS_MAX_TABLE_NAME];

		if (table == NULL)
			continue;			/* dropped already: its name may be another's */
		ts_batch_delete_table_rows(store, wb, table->id);
		ts_labels_batch_delete_table(store, wb, table->id);
		snprintf(key, sizeof(key), "%s%s", TS_META_TABLE_PREFIX, table->name);
		rocksdb_writebatch_delete_cf(wb, store->cf_meta, key, strlen(key));
		dropping[ndropping++] = table;
	}
	if (pub->gid != NULL)
	{
		char		key[sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX];

		snprintf(key, sizeof(key), "%s%s", TS_META_PREPARED_PREFIX, pub->gid);
		rocksdb_writebatch_delete_cf(wb, store->cf_meta, key, strlen(key));
		if (pub->batch == NULL)
		{
			char		sentinel[TS_SENTINEL_KEY_MAX];
			size_t		len = ts_sentinel_key(pub->gid, sentinel);

			rocksdb_writebatch_delete_cf(wb, store->cf_data, sentinel, len);
		}
	}
	if (rocksdb_writebatch_count(wb) > 0)
	{
		size_t		size;

		(void) rocksdb_writebatch_data(wb, &size);
		if (ts_store_check_space(store, size, err) != 0 ||
			(pub->gid != NULL && ts_store_crash_point(store, "before-record-delete", err) != 0) ||
			publish_commit_write(store, pub, wb, err) != 0 ||
			(pub->gid != NULL && ts_store_crash_point(store, "after-record-delete", err) != 0))
			goto done;
	}

	for (size_t i = 0; i < ndropping; i++)
	{
		dropping[i]->dropped = true;
		atomic_fetch_sub(&store->tables_live, 1);
		ts_log(TS_LOG_INFO, "dropped table \"%s\" (id %u) with %s",
			   dropping[i]->name, dropping[i]->id,
			   pub->gid != NULL ? "a prepared session" : "a session");
	}
	result = 0;

done:
	if (pub->batch == NULL)
		pthread_rwlock_unlock(&store->reg->publish_lock);
	pthread_rwlock_unlock(&store->tables_lock);
	if (wb != pub->batch)
		rocksdb_writebatch_destroy(wb);
	free(dropping);
	return result;
}

/*
 * Publish, timed for tcopy_publish_seconds (ts_durations.h): the locks'
 * waits included, as a COMMIT waits for them too; the time of a commit's
 * merge, spent before (ts_session_prepare), not.
 */
int
ts_publish(TsStore *store, const TsPublish *pub, TsError *err)
{
	uint64_t	start_us = ts_monotonic_us();
	int			result = publish(store, pub, err);

	if (result == 0)
		ts_histogram_observe(&ts_publish_durations, ts_monotonic_us() - start_us);
	return result;
}
