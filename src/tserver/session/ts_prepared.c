/*
 * ts_prepared.c
 *		Prepared sessions, the tserver's half of two-phase commit: prepare
 *		under a global id (gid), the durable record, the registry of
 *		prepared sessions and their owners, resolving (publish or discard),
 *		listing, and loading them all again at startup.
 *
 * Prepare does every slow step of a commit (ts_session_prepare: the last
 * spill, the merge, the SST files, which SstFileWriter syncs), then writes
 * the session's record (proto/ts_store.proto, PreparedRecord) to the meta
 * family under "prepared:" gid, synced.  A never-spilled session's record
 * holds its WriteBatch (its truncates, then its rows); a spilled session's
 * names its staging directory, its SST files in precedence order and a
 * sentinel file written at prepare time (one key: ts_sentinel_key).  Both
 * hold the tables written to, the staged truncates and drops, and each
 * keyless table's row id counter.  Then the session's memory is freed: a
 * prepared session holds none, only its registry entry (gid, owner, rows,
 * bytes, time) and, if it spilled, its staging directory.
 *
 * The registry (TsStore.prepared, under prepared_lock) has one entry per
 * record, and one per Prepare in progress (so that two cannot take the
 * same gid).  Each entry is owned by a connection (the one that prepared
 * it, or the one resolving it) or by none (orphaned): a connection that
 * ends detaches its sessions, and the store never resolves one on its own.
 * A Resolve claims an entry that is orphaned or its own, reads the record
 * back and publishes it (ts_publish.c) or discards it (the record deleted,
 * synced, then the staging directory), and drops the entry once done.
 *
 * At startup (ts_prepared_load) every record becomes an orphaned entry;
 * the staging directories the records name are kept and every other entry
 * of DIR/staging is removed; next_session_id goes above every recorded
 * session's id, so that no new session takes a kept directory's name, and
 * each keyless table's row id counter above what the record noted, so that
 * no new session takes the row ids of a prepared one.
 */
#include "ts_session_int.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tc_client.h"
#include "ts_clock.h"
#include "ts_group.h"
#include "ts_log.h"
#include "ts_store.pb-c.h"

#define PREPARED_SENTINEL_FILE "sentinel.sst"

/* ---- prepare ---- */

/* Write the spilled session's sentinel file into its staging directory. */
static int
write_sentinel_file(TsSession *session, const char *gid, TsError *err)
{
	TsStore    *store = session->store;
	rocksdb_sstfilewriter_t *writer;
	char		path[SESSION_PATH_SIZE];
	char		key[TS_SENTINEL_KEY_MAX];
	size_t		keylen = ts_sentinel_key(gid, key);
	char	   *errptr = NULL;

	snprintf(path, sizeof(path), "%s/%s", session->dir, PREPARED_SENTINEL_FILE);
	writer = rocksdb_sstfilewriter_create(store->env_options, store->options);
	rocksdb_sstfilewriter_open(writer, path, &errptr);
	if (errptr == NULL)
		rocksdb_sstfilewriter_put(writer, key, keylen, "", 0, &errptr);
	if (errptr == NULL)
		rocksdb_sstfilewriter_finish(writer, &errptr);
	rocksdb_sstfilewriter_destroy(writer);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not write a prepared session's sentinel file", errptr);
		return -1;
	}
	return 0;
}

/* The base name of a path. */
static char *
base_name(char *path)
{
	char	   *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* Narrow *prefix_len to what name shares with prefix. */
static void
common_prefix(const char *prefix, size_t *prefix_len, const char *name)
{
	size_t		i = 0;

	while (i < *prefix_len && name[i] == prefix[i])
		i++;
	*prefix_len = i;
}

/*
 * The session's PreparedRecord.scope_prefix, malloc'ed: the longest common
 * prefix of the names of the tables it wrote to, truncates or drops, or
 * scope (the preparing connection's namespace; NULL: "") when there are
 * none.  A scoped connection only ever names tables of its namespace, so
 * what it prepares starts with its namespace either way.  NULL when out
 * of memory.
 */
static char *
prepared_scope_prefix(TsStore *store, const TsSession *session, const char *scope)
{
	const uint32_t *lists[] = {session->tables, session->truncates, session->drops};
	const size_t counts[] = {session->ntables, session->ntruncates, session->ndrops};
	const char *first = NULL;
	size_t		len = 0;
	char	   *prefix;

	pthread_rwlock_rdlock(&store->tables_lock);
	for (int l = 0; l < 3; l++)
	{
		for (size_t i = 0; i < counts[l]; i++)
		{
			uint32_t	id = lists[l][i];
			/* a table dropped since keeps its name until the store closes */
			const TsTable *table = id < store->tables_cap ? store->tables[id] : NULL;

			if (table == NULL)
				continue;
			if (first == NULL)
			{
				first = table->name;
				len = strlen(first);
			}
			else
				common_prefix(first, &len, table->name);
		}
	}
	if (first == NULL)
		prefix = strdup(scope != NULL ? scope : "");
	else
		prefix = strndup(first, len);
	pthread_rwlock_unlock(&store->tables_lock);
	return prefix;
}

/*
 * What a PreparedRecord being built points to, malloc'ed: freed together
 * (prepared_build_free) whether the record was written or not.
 */
typedef struct PreparedBuild
{
	Tstore__PreparedRecord rec;
	Tstore__SstFiles sst;
	char		sst_dir[64];
	Tstore__RowIdMark *marks;
	Tstore__RowIdMark **mark_ptrs;
	Tstore__SessionLabel *labels;
	Tstore__SessionLabel **label_ptrs;
	uint32_t   *conflict_tables;
	char	  **names;
	char	   *scope_prefix;
	rocksdb_writebatch_t *wb;	/* the batch rec.write_batch points into */
} PreparedBuild;

static void
prepared_build_free(PreparedBuild *b)
{
	if (b->wb != NULL)
		rocksdb_writebatch_destroy(b->wb);
	free(b->names);
	free(b->marks);
	free(b->mark_ptrs);
	free(b->labels);
	free(b->label_ptrs);
	free(b->conflict_tables);
	free(b->scope_prefix);
}

/*
 * The keyless tables' counters, past every row id the session took: a
 * restart resumes them there.  false when out of memory.
 */
static bool
prepared_fill_rowids(TsSession *session, PreparedBuild *b)
{
	Tstore__PreparedRecord *rec = &b->rec;

	b->marks = calloc(session->ntables + 1, sizeof(Tstore__RowIdMark));
	b->mark_ptrs = calloc(session->ntables + 1, sizeof(Tstore__RowIdMark *));
	if (b->marks == NULL || b->mark_ptrs == NULL)
		return false;
	for (size_t i = 0; i < session->ntables; i++)
	{
		TsTable    *table = ts_store_table(session->store, session->tables[i], NULL);

		if (table == NULL || ts_table_layout(table)->nkey > 0)
			continue;
		tstore__row_id_mark__init(&b->marks[rec->n_rowids]);
		b->marks[rec->n_rowids].table_id = table->id;
		b->marks[rec->n_rowids].next_rowid = atomic_load(&table->next_rowid);
		b->mark_ptrs[rec->n_rowids] = &b->marks[rec->n_rowids];
		rec->n_rowids++;
	}
	rec->rowids = b->mark_ptrs;
	return true;
}

/*
 * The tables whose keys concurrent sessions check (claimed whole after a
 * restart), and the load labels, published with the session (a tserver
 * without labels refuses record version 2).  false when out of memory.
 */
static bool
prepared_fill_claims(TsSession *session, PreparedBuild *b)
{
	Tstore__PreparedRecord *rec = &b->rec;
	const TsConflictPolicy *conflicts;
	uint32_t	nconflicts;

	if ((nconflicts = ts_conflicts_count(&session->conflicts, &conflicts)) > 0)
	{
		b->conflict_tables = calloc(nconflicts, sizeof(uint32_t));
		if (b->conflict_tables == NULL)
			return false;
		for (uint32_t i = 0; i < nconflicts; i++)
			if (conflicts[i].policy != TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
				b->conflict_tables[rec->n_conflict_tables++] = conflicts[i].table_id;
		rec->conflict_tables = b->conflict_tables;
	}
	if (session->nlabels > 0)
	{
		b->labels = calloc(session->nlabels, sizeof(Tstore__SessionLabel));
		b->label_ptrs = calloc(session->nlabels, sizeof(Tstore__SessionLabel *));
		if (b->labels == NULL || b->label_ptrs == NULL)
			return false;
		for (size_t i = 0; i < session->nlabels; i++)
		{
			tstore__session_label__init(&b->labels[i]);
			b->labels[i].table_id = session->labels[i].table_id;
			b->labels[i].label = session->labels[i].label;
			b->label_ptrs[i] = &b->labels[i];
		}
		rec->labels = b->label_ptrs;
		rec->n_labels = session->nlabels;
		rec->version = PREPARED_RECORD_VERSION_LABELS;
	}
	return true;
}

/*
 * The session's rows in the record: its WriteBatch inline, or, spilled,
 * the names of its SST files, made durable (with the sentinel file, and
 * on every member of a replica group) before the record that names them.
 * 0, or -1 with err.
 */
static int
prepared_fill_rows(TsSession *session, const char *gid, PreparedBuild *b, TsError *err)
{
	TsStore    *store = session->store;
	Tstore__PreparedRecord *rec = &b->rec;

	if (session->sst == NULL)
	{
		size_t		len;

		/* the batch, then the record packed from it: one copy at a time */
		b->wb = ts_session_build_batch(session);
		tc_buf_free(&session->staged);
		session->noffsets = 0;
		ts_session_account(session);
		rec->write_batch.data = (uint8_t *) rocksdb_writebatch_data(b->wb, &len);
		rec->write_batch.len = len;
		rec->bytes = len;
		return 0;
	}
	if (write_sentinel_file(session, gid, err) != 0)
		return -1;
	/*
	 * SstFileWriter synced the files; their entries in the session's
	 * directory, and its own in the staging directory, must be durable
	 * before the record that names them: here, and on every member of a
	 * replica group.
	 */
	ts_sync_dir(session->dir);
	ts_sync_dir(store->staging_dir);
	if (store->group != NULL)
	{
		char		sentinel[SESSION_PATH_SIZE];
		char	   *paths[1] = {sentinel};

		/* its SST files went as each was finished (ts_sst_sink.c) */
		snprintf(sentinel, sizeof(sentinel), "%s/%s", session->dir, PREPARED_SENTINEL_FILE);
		if (ts_group_ship_files(store->group, paths, 1, err) != 0)
			return -1;
	}
	b->names = calloc(session->sst->nfiles + 1, sizeof(char *));
	if (b->names == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory preparing a session");
		return -1;
	}
	for (size_t i = 0; i < session->sst->nfiles; i++)
		b->names[i] = base_name(session->sst->files[i]);
	snprintf(b->sst_dir, sizeof(b->sst_dir), "session-%llu", (unsigned long long) session->id);
	tstore__sst_files__init(&b->sst);
	b->sst.dir = b->sst_dir;
	b->sst.sentinel = (char *) PREPARED_SENTINEL_FILE;
	b->sst.files = b->names;
	b->sst.n_files = session->sst->nfiles;
	rec->sst = &b->sst;
	rec->bytes = session->sst->finished_bytes;
	return 0;
}

/*
 * Build the session's PreparedRecord under gid (as stored) in b.  0, or -1
 * with err.
 */
static int
prepared_build(TsSession *session, const char *gid, const char *scope, PreparedBuild *b,
			   TsError *err)
{
	Tstore__PreparedRecord *rec = &b->rec;

	tstore__prepared_record__init(rec);
	rec->version = PREPARED_RECORD_VERSION;
	rec->gid = (char *) gid;
	rec->session_id = session->id;
	rec->rows = session->rows;
	rec->prepared_at_ms = ts_realtime_ms();
	rec->tables = session->tables;
	rec->n_tables = session->ntables;
	rec->truncates = session->truncates;
	rec->n_truncates = session->ntruncates;
	rec->drops = session->drops;
	rec->n_drops = session->ndrops;
	b->scope_prefix = prepared_scope_prefix(session->store, session, scope);
	rec->scope_prefix = b->scope_prefix;
	if (b->scope_prefix == NULL || !prepared_fill_rowids(session, b) ||
		!prepared_fill_claims(session, b))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory preparing a session");
		return -1;
	}
	return prepared_fill_rows(session, gid, b, err);
}

/*
 * Write rec, the prepared record of gid, to the store, synced: the moment
 * the session is prepared.  Frees the inline WriteBatch first (b->wb), one
 * copy at a time.  0, or -1 with err.
 */
static int
prepared_write_record(TsStore *store, const char *gid, PreparedBuild *b, TsError *err)
{
	char		key[sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX];
	rocksdb_writebatch_t *wb;
	uint8_t    *packed;
	size_t		packed_len;
	int			rc;

	packed = ts_prepared_record_pack(&b->rec, &packed_len);
	if (b->wb != NULL)
	{
		rocksdb_writebatch_destroy(b->wb);
		b->wb = NULL;
		b->rec.write_batch.data = NULL;
	}
	if (packed == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory preparing a session");
		return -1;
	}
	if (ts_store_check_space(store, packed_len, err) != 0)
	{
		free(packed);
		return -1;
	}
	wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put_cf(wb, store->cf_meta, key, ts_prepared_record_key(gid, key, sizeof(key)),
							  (const char *) packed, packed_len);
	free(packed);
	/* a backup's checkpoint has the record, files and all, or not at all */
	pthread_rwlock_rdlock(&store->reg->backup_lock);
	rc = ts_storage_write(store, wb, "could not record the prepared session", err);
	pthread_rwlock_unlock(&store->reg->backup_lock);
	rocksdb_writebatch_destroy(wb);
	return rc;
}

int
ts_session_prepare_gid(TsSession *session, const char *client_gid, uint64_t owner,
					   const char *scope, uint64_t *rows, TsError *err)
{
	TsStore    *store = session->store;
	PreparedBuild build = {0};
	Tstore__PreparedRecord *rec = &build.rec;
	bool		recorded = false;
	int			waited_ms = 0;
	char		gid[TS_GID_MAX + 1];	/* as stored: its namespace's (ts_gid.c) */

	*rows = session->rows;
	if (ts_gid_store(scope, client_gid, gid, sizeof(gid), err) != 0 ||
		registry_add(store, gid, PREPARED_PREPARING, owner, err) != 0)
	{
		ts_session_free(session, true);
		return -1;
	}

	/*
	 * Held back behind in-doubt sessions of its tables (ts_in_doubt.c):
	 * before the slow steps, so that a restored session's key claims are
	 * gone once it is resolved, and again after them, for a session
	 * orphaned meanwhile.  Our own entry is being prepared: never in doubt.
	 */
	if (ts_session_wait_in_doubt(session, &waited_ms, err) != 0 ||
		ts_session_prepare(session, err) != 0 ||
		ts_session_wait_in_doubt(session, &waited_ms, err) != 0 ||
		prepared_build(session, gid, scope, &build, err) != 0 ||
		prepared_write_record(store, gid, &build, err) != 0)
		goto fail;
	recorded = true;
	if (ts_store_crash_point(store, "after-prepare-record", err) != 0)
		goto fail;
	/* the labels stay claimed, now by the prepared session */
	if (ts_labels_move_to_gid(store, session->id, gid, err) != 0)
		goto fail;

	registry_set_prepared(store, gid, build.scope_prefix, rec->rows, rec->bytes,
						  rec->prepared_at_ms, rec->tables, rec->n_tables, rec->truncates,
						  rec->n_truncates, rec->drops, rec->n_drops);
	ts_log(TS_LOG_DEBUG, "session %llu prepared under \"%s\": %llu rows, %llu bytes%s",
		   (unsigned long long) session->id, gid, (unsigned long long) rec->rows,
		   (unsigned long long) rec->bytes, rec->sst != NULL ? " in SST files" : "");
	prepared_build_free(&build);
	session->keep_dir = true;
	ts_key_claims_keep(session);
	ts_session_free(session, false);
	return 0;

fail:
	prepared_build_free(&build);
	registry_remove(store, gid);
	/* only a test stop comes after the record: leave the disk as a crash would */
	session->keep_dir = recorded;
	ts_session_free(session, true);
	return -1;
}

/* ---- resolve ---- */

/* The path of file name in rec's staging directory into path. */
static void
staging_path(TsStore *store, const Tstore__PreparedRecord *rec, const char *name,
			 char *path, size_t size)
{
	snprintf(path, size, "%s/%s/%s", store->staging_dir, rec->sst->dir, name);
}

/* Remove rec's staging directory, if it has one. */
static void
remove_staging(TsStore *store, const Tstore__PreparedRecord *rec)
{
	char		dir[SESSION_DIR_SIZE];

	if (rec->sst == NULL)
		return;
	snprintf(dir, sizeof(dir), "%s/%s", store->staging_dir, rec->sst->dir);
	if (ts_remove_tree(dir) != 0)
		ts_log(TS_LOG_WARNING, "could not remove staging directory \"%s\": %s",
			   dir, strerror(errno));
	if (store->group != NULL)
		ts_group_drop_dir(store->group, rec->sst->dir);
}

/*
 * Publish a prepared session from its record (which this may change),
 * every write synced (ts_publish.c).
 */
static int
prepared_publish(TsStore *store, Tstore__PreparedRecord *rec, TsError *err)
{
	TsPublish	pub;
	uint8_t    *truncated = NULL;
	char	  **files = NULL;
	TsLabelRef *labels = NULL;
	int			result = -1;

	memset(&pub, 0, sizeof(pub));
	if (rec->n_labels > 0)
	{
		if ((labels = calloc(rec->n_labels, sizeof(TsLabelRef))) == NULL)
			goto oom;
		for (size_t i = 0; i < rec->n_labels; i++)
		{
			labels[i].table_id = rec->labels[i]->table_id;
			labels[i].label = rec->labels[i]->label;
		}
		pub.labels = labels;
		pub.nlabels = rec->n_labels;
	}
	pub.gid = rec->gid;
	pub.truncates = rec->truncates;
	pub.ntruncates = rec->n_truncates;
	pub.rows = rec->rows;
	pub.tables = rec->tables;
	pub.ntables = rec->n_tables;
	pub.drops = rec->drops;
	pub.ndrops = rec->n_drops;
	if (rec->sst == NULL)
	{
		pub.batch = rocksdb_writebatch_create_from((const char *) rec->write_batch.data,
												   rec->write_batch.len);
		/* the batch has a copy: the record's need not stay */
		free(rec->write_batch.data);
		rec->write_batch.data = NULL;
		rec->write_batch.len = 0;
	}
	else
	{
		files = calloc(rec->sst->n_files + 1, sizeof(char *));
		if (files == NULL)
			goto oom;
		for (size_t i = 0; i <= rec->sst->n_files; i++)
		{
			char		path[SESSION_PATH_SIZE];

			staging_path(store, rec, i == 0 ? rec->sst->sentinel : rec->sst->files[i - 1],
						 path, sizeof(path));
			if ((files[i] = strdup(path)) == NULL)
				goto oom;
		}
		pub.files = files;
		pub.nfiles = rec->sst->n_files + 1;
		pub.truncates_applied = rec->truncates_applied;
		if (rec->n_truncates > 0 && !rec->truncates_applied)
		{
			rec->truncates_applied = true;
			truncated = ts_prepared_record_pack(rec, &pub.record_truncated_len);
			rec->truncates_applied = false;
			if (truncated == NULL)
				goto oom;
			pub.record_truncated = truncated;
		}
	}
	result = ts_publish(store, &pub, err);
	if (result == 0)
		remove_staging(store, rec);
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory publishing a prepared session");
done:
	if (pub.batch != NULL)
		rocksdb_writebatch_destroy(pub.batch);
	for (size_t i = 0; files != NULL && rec->sst != NULL && i <= rec->sst->n_files; i++)
		free(files[i]);
	free(files);
	free(truncated);
	free(labels);
	return result;
}

/* Discard a prepared session: its record, then its staging directory. */
static int
prepared_discard(TsStore *store, const Tstore__PreparedRecord *rec, TsError *err)
{
	rocksdb_writebatch_t *wb;
	char		key[sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX];
	int			rc;
	int			ingested = 0;

	if (rec->sst != NULL && (ingested = ts_sentinel_present(store, rec->gid, err)) < 0)
		return -1;
	if (ingested || rec->truncates_applied)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "the session prepared under \"%s\" is being published (%s): "
					 "only a commit can resolve it", rec->gid,
					 ingested ? "its rows are in" : "its truncates are applied");
		return -1;
	}
	if (ts_store_crash_point(store, "before-record-delete", err) != 0)
		return -1;
	wb = rocksdb_writebatch_create();
	rocksdb_writebatch_delete_cf(wb, store->cf_meta, key, ts_prepared_record_key(rec->gid, key, sizeof(key)));
	rc = ts_storage_write(store, wb, "could not delete a prepared session's record", err);
	rocksdb_writebatch_destroy(wb);
	if (rc != 0)
		return -1;
	if (ts_store_crash_point(store, "after-record-delete", err) != 0)
		return -1;
	remove_staging(store, rec);
	return 0;
}

int
ts_store_resolve(TsStore *store, const char *client_gid, bool commit, uint64_t owner,
				 const char *scope, Tcopy__ResolveOutcome *outcome, uint64_t *rows,
				 TsError *err)
{
	TsPrepared *entry;
	Tstore__PreparedRecord *rec;
	int			result;
	char		gid[TS_GID_MAX + 1];	/* as stored: its namespace's (ts_gid.c) */

	*rows = 0;
	if (ts_gid_store(scope, client_gid, gid, sizeof(gid), err) != 0)
		return -1;
	pthread_mutex_lock(&store->reg->prepared_lock);
	entry = registry_find_locked(store, gid, NULL);
	if (entry == NULL && scope != NULL)
	{
		/* one prepared before the tags, untagged, if this connection sees it */
		entry = registry_find_locked(store, client_gid, NULL);
		if (entry != NULL &&
			(entry->state == PREPARED_PREPARING || ts_gid_shown(entry, scope) != entry->gid))
			entry = NULL;
		else if (entry != NULL)
			snprintf(gid, sizeof(gid), "%s", client_gid);
	}
	if (entry == NULL || entry->state != PREPARED_READY ||
		(entry->owner != 0 && entry->owner != owner))
	{
		*outcome = entry == NULL ? TCOPY__RESOLVE_OUTCOME__RESOLVE_NOT_FOUND :
			TCOPY__RESOLVE_OUTCOME__RESOLVE_BUSY;
		pthread_mutex_unlock(&store->reg->prepared_lock);
		/*
		 * NOT_FOUND: resolved already, and the client then forgets its
		 * record: a publish's lazy write must be durable first
		 */
		return entry == NULL ? ts_storage_sync_lazy(store, err) : 0;
	}
	/* claimed: ours until resolved, or until this connection ends */
	entry->state = PREPARED_RESOLVING;
	entry->owner = owner;
	*rows = entry->rows;
	pthread_mutex_unlock(&store->reg->prepared_lock);

	/*
	 * A backup sees the session prepared with its files, or resolved; a
	 * snapshot sees the rows published, or the session still prepared.
	 */
	pthread_rwlock_rdlock(&store->reg->backup_lock);
	if (commit)
		pthread_rwlock_rdlock(&store->reg->resolve_lock);
	rec = ts_prepared_record_read(store, gid, err);
	if (rec == NULL)
		result = -1;
	else if (commit)
		result = prepared_publish(store, rec, err);
	else
		result = prepared_discard(store, rec, err);

	if (result == 0)
	{
		/* published (the labels with it) or discarded: the claims may go */
		ts_labels_release_gid(store, gid);
		if (commit)
			ts_key_claims_published(store, rec->session_id);
		else
			ts_key_claims_release(store, rec->session_id);
		registry_remove(store, gid);
		if (commit)
		{
			atomic_fetch_add(&store->sessions_committed, 1);
			atomic_fetch_add(&store->rows_committed, rec->rows);
		}
		else
			atomic_fetch_add(&store->sessions_aborted, 1);
		ts_log(TS_LOG_DEBUG, "session prepared under \"%s\" %s: %llu rows", gid,
			   commit ? "published" : "discarded", (unsigned long long) rec->rows);
		*outcome = TCOPY__RESOLVE_OUTCOME__RESOLVE_DONE;
	}
	else
	{
		pthread_mutex_lock(&store->reg->prepared_lock);
		entry = registry_find_locked(store, gid, NULL);
		if (entry != NULL)
			entry->state = PREPARED_READY;
		pthread_mutex_unlock(&store->reg->prepared_lock);
	}
	if (commit)
		pthread_rwlock_unlock(&store->reg->resolve_lock);
	pthread_rwlock_unlock(&store->reg->backup_lock);
	if (result != 0)
		ts_log(TS_LOG_WARNING, "could not %s the session prepared under \"%s\": %s",
			   commit ? "publish" : "discard", gid, err->message);
	if (rec != NULL)
		tstore__prepared_record__free_unpacked(rec, NULL);
	return result;
}

/* ---- startup ---- */

/* Take one loaded record into the registry and the store's counters. */
static int
load_one(TsStore *store, const Tstore__PreparedRecord *rec, TsError *err)
{
	if (registry_add(store, rec->gid, PREPARED_READY, 0, err) != 0)
		return -1;
	for (size_t i = 0; i < rec->n_labels; i++)
	{
		TsLabelRef	label = {rec->labels[i]->table_id, rec->labels[i]->label};

		if (ts_labels_claim_for_gid(store, rec->gid, &label, 1, err) != 0)
			return -1;
	}
	/* its keys are not read back: it claims every key of its policy tables */
	if (ts_key_claims_restore(store, rec->session_id, rec->conflict_tables,
							  rec->n_conflict_tables, err) != 0)
		return -1;
	registry_set_prepared(store, rec->gid, rec->scope_prefix, rec->rows, rec->bytes,
						  rec->prepared_at_ms, rec->tables, rec->n_tables, rec->truncates,
						  rec->n_truncates, rec->drops, rec->n_drops);
	if (atomic_load(&store->next_session_id) <= rec->session_id)
		atomic_store(&store->next_session_id, rec->session_id + 1);
	for (size_t i = 0; i < rec->n_rowids; i++)
	{
		TsTable    *table = ts_store_table_locked(store, rec->rowids[i]->table_id, NULL);

		if (table != NULL && ts_table_layout(table)->nkey == 0 &&
			atomic_load(&table->next_rowid) < rec->rowids[i]->next_rowid)
			atomic_store(&table->next_rowid, rec->rowids[i]->next_rowid);
	}
	return 0;
}

/* ts_prepared_load's step per record: an orphaned entry. */
static int
load_record(TsStore *store, const Tstore__PreparedRecord *rec, void *arg, TsError *err)
{
	char		dir[SESSION_DIR_SIZE];
	struct stat st;

	if (load_one(store, rec, err) != 0)
		return -1;
	if (rec->sst == NULL)
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", store->staging_dir, rec->sst->dir);
	if (stat(dir, &st) != 0)
		ts_log(TS_LOG_WARNING, "the staging directory \"%s\" of the session prepared "
			   "under \"%s\" is missing: unless its files were ingested already, "
			   "it can only be discarded", dir, rec->gid);
	return 0;
}

int
ts_prepared_load(TsStore *store, TsError *err)
{
	int			result = ts_prepared_each(store, load_record, NULL, err);

	/*
	 * Whatever else is staged belongs to sessions that died with the
	 * previous process unprepared: none of it may survive.  Except on a
	 * replica group's member, whose staging holds the files of sessions
	 * that the group's log is shipping (ts_group.c): the log's CLEAN
	 * entries remove what is left.
	 */
	if (result == 0 && !store->opts.replica_group)
		result = ts_prepared_clean_staging(store, err);
	if (result == 0 && store->reg->nprepared > 0)
		ts_log(TS_LOG_INFO, "%zu prepared session%s kept, orphaned until resolved",
			   store->reg->nprepared, store->reg->nprepared == 1 ? "" : "s");
	return result;
}
