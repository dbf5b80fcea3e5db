/*
 * ts_storage.c
 *		The store: RocksDB opened with a data and a meta column family, and
 *		the table catalogue (create, look up, truncate, drop).
 *
 * Table definitions are small and few, so all of them are loaded at open
 * and kept in an array indexed by table id; the meta column family holds
 * "table:NAME" -> TableInfo (id and schema) and "next_table_id".  Every
 * change to it is one synced WriteBatch, so a table's definition and its
 * id counter move together.
 */
#include "ts_storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <signal.h>
#include <unistd.h>

#include "ts_key.h"
#include "ts_log.h"

#define META_NEXT_TABLE_ID "next_table_id"

/*
 * Room kept free on the data directory's file system beyond what a write
 * needs: RocksDB's manifest, a memtable flush's file, the OPTIONS file.
 */
#define TS_ROCKSDB_LOG_LEVEL_WARN 2	/* rocksdb::InfoLogLevel::WARN_LEVEL */
#define SPACE_MARGIN (4 * 1024 * 1024)

/*
 * Refuse, with the file system's words, a write of `bytes` to RocksDB's WAL
 * when the data directory's file system has not room for it twice (the WAL
 * record, then the memtable flushed to an SST file) plus SPACE_MARGIN.
 * RocksDB 7.8 does not survive a WAL write that fails for want of space:
 * it stops on an assertion, or else refuses every later write until it is
 * reopened.  This is a check, not a reservation: space taken by others
 * between the check and the write still reaches RocksDB; what it covers is
 * the common case, a disk that filled up while a session was open.
 */
int
ts_store_check_space(TsStore *store, uint64_t bytes, TsError *err)
{
	struct statvfs fs;
	uint64_t	avail;
	uint64_t	need = 2 * bytes + SPACE_MARGIN;

	if (statvfs(store->dir, &fs) != 0)
		return 0;				/* cannot tell: the write will say */
	avail = (uint64_t) fs.f_bavail * fs.f_frsize;
	if (avail >= need)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not write to the store in \"%s\": %s (%llu bytes free, %llu needed)",
				 store->dir, strerror(ENOSPC), (unsigned long long) avail,
				 (unsigned long long) need);
	ts_log(TS_LOG_WARNING, "%s", err->message);
	return -1;
}

void
ts_store_default_options(TsStoreOptions *options)
{
	memset(options, 0, sizeof(*options));	/* what is not set here: off */
	options->session_memory_bytes = 64 * 1024 * 1024;
	options->memory_bytes = 256 * 1024 * 1024;
	options->sst_target_bytes = 256 * 1024 * 1024;
	/* a commit's merge runs while its client waits: every core helps */
	options->merge_threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (options->merge_threads < 1)
		options->merge_threads = 1;
	if (options->merge_threads > TS_MERGE_THREADS_MAX)
		options->merge_threads = TS_MERGE_THREADS_MAX;
	options->merge_part_bytes = 32 * 1024 * 1024;
	options->block_cache_bytes = 128 * 1024 * 1024;	/* as shared_buffers' default */
	options->compression = TS_COMPRESSION_LZ4;
	options->block_bytes = 16 * 1024;
	options->sync_commits = true;
	options->in_doubt_wait_ms = TS_IN_DOUBT_WAIT_MS_DEFAULT;
}

void
ts_sync_dir(const char *dir)
{
	int			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && fsync(fd) == 0)
	{
		close(fd);
		return;
	}
	/* a file system that cannot sync a directory's entries: nothing to do */
	if (fd >= 0 && (errno == EINVAL || errno == EBADF))
	{
		close(fd);
		return;
	}
	ts_log(TS_LOG_ERROR, "could not sync directory \"%s\": %s; stopping", dir, strerror(errno));
	abort();
}

int
ts_remove_tree(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *entry;
	char		path[4096];
	int			result = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((entry = readdir(d)) != NULL)
	{
		struct stat st;

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		{
			if (ts_remove_tree(path) != 0)
				result = -1;
		}
		else if (unlink(path) != 0 && errno != ENOENT)
			result = -1;
	}
	closedir(d);
	if (rmdir(dir) != 0 && errno != ENOENT)
		result = -1;
	return result;
}

/* Make room in the id-indexed table array for id. */
static int
tables_make_room(TsStore *store, uint32_t id)
{
	uint32_t	cap = store->tables_cap ? store->tables_cap : 16;
	TsTable   **tables;

	if (id < store->tables_cap)
		return 0;
	while (cap <= id)
		cap *= 2;
	tables = realloc(store->tables, cap * sizeof(TsTable *));
	if (tables == NULL)
		return -1;
	memset(tables + store->tables_cap, 0, (cap - store->tables_cap) * sizeof(TsTable *));
	store->tables = tables;
	store->tables_cap = cap;
	return 0;
}

static void
table_free(TsTable *table)
{
	if (table == NULL)
		return;
	if (table->layout != NULL)
		ts_layout_free(table->layout);
	free(table->layout);
	if (table->schema)
		tcopy__schema__free_unpacked(table->schema, NULL);
	for (size_t i = 0; i < table->nold_schemas; i++)
	{
		tcopy__schema__free_unpacked(table->old_schemas[i], NULL);
		ts_layout_free(table->old_layouts[i]);
		free(table->old_layouts[i]);
	}
	free(table->old_schemas);
	free(table->old_layouts);
	free(table->name);
	free(table);
}

/*
 * A keyless table's next row id: one past the largest stored, so that ids
 * survive restarts without a counter written on every commit.
 */
static uint64_t
table_find_next_rowid(TsStore *store, uint32_t table_id)
{
	uint8_t		upper[TS_TABLE_ID_SIZE];
	rocksdb_iterator_t *it;
	uint64_t	next = 1;

	ts_put_be32(upper, table_id + 1);
	it = rocksdb_create_iterator_cf(store->db, store->read_default, store->cf_data);
	rocksdb_iter_seek_for_prev(it, (const char *) upper, sizeof(upper));
	/* seek_for_prev lands on upper itself only if such a key exists: skip it */
	if (rocksdb_iter_valid(it))
	{
		size_t		keylen;
		const uint8_t *key = (const uint8_t *) rocksdb_iter_key(it, &keylen);

		if (keylen == sizeof(upper) && memcmp(key, upper, sizeof(upper)) == 0)
		{
			rocksdb_iter_prev(it);
			key = rocksdb_iter_valid(it) ? (const uint8_t *) rocksdb_iter_key(it, &keylen) : NULL;
		}
		if (key != NULL && keylen == TS_TABLE_ID_SIZE + TS_ROWID_SIZE &&
			ts_get_be32(key) == table_id)
			next = ts_get_be64(key + TS_TABLE_ID_SIZE) + 1;
	}
	rocksdb_iter_destroy(it);
	return next;
}

/* Build a TsTable from a stored TableInfo; NULL when it is not valid. */
static TsTable *
table_from_info(TsStore *store, const char *name, size_t namelen,
				const uint8_t *packed, size_t packedlen, TsError *err)
{
	Tcopy__TableInfo *info = tcopy__table_info__unpack(NULL, packedlen, packed);
	TsTable    *table = NULL;

	if (info == NULL || info->schema == NULL || info->table_id == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "stored definition of table \"%.*s\" is corrupt", (int) namelen, name);
		goto err;
	}
	table = calloc(1, sizeof(TsTable));
	if (table == NULL || (table->name = strndup(name, namelen)) == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}
	table->id = info->table_id;
	table->schema = info->schema;
	info->schema = NULL;
	table->layout = calloc(1, sizeof(TsLayout));
	if (table->layout == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}
	if (ts_layout_init(table->layout, table->schema, err) != 0)
		goto err;
	if (table->layout->nkey == 0)
		atomic_store(&table->next_rowid, table_find_next_rowid(store, table->id));
	tcopy__table_info__free_unpacked(info, NULL);
	return table;

err:
	if (info)
		tcopy__table_info__free_unpacked(info, NULL);
	table_free(table);
	return NULL;
}

/* Load every table definition and the id counter from the meta family. */
static int
store_load_tables(TsStore *store, TsError *err)
{
	rocksdb_iterator_t *it;
	size_t		len;
	char	   *errptr = NULL;
	char	   *value;
	int			result = 0;

	value = rocksdb_get_cf(store->db, store->read_default, store->cf_meta,
						   META_NEXT_TABLE_ID, strlen(META_NEXT_TABLE_ID), &len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read the table id counter", errptr);
		return -1;
	}
	store->next_table_id = (value != NULL && len == 4) ? ts_get_be32((uint8_t *) value) : 1;
	free(value);

	it = rocksdb_create_iterator_cf(store->db, store->read_default, store->cf_meta);
	for (rocksdb_iter_seek(it, TS_META_TABLE_PREFIX, strlen(TS_META_TABLE_PREFIX));
		 rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		keylen,
					vallen;
		const char *key = rocksdb_iter_key(it, &keylen);
		const char *val = rocksdb_iter_value(it, &vallen);
		TsTable    *table;
		size_t		plen = strlen(TS_META_TABLE_PREFIX);

		if (keylen < plen || memcmp(key, TS_META_TABLE_PREFIX, plen) != 0)
			break;
		table = table_from_info(store, key + plen, keylen - plen,
								(const uint8_t *) val, vallen, err);
		if (table == NULL || tables_make_room(store, table->id) != 0 ||
			store->tables[table->id] != NULL || table->id >= store->next_table_id)
		{
			if (table != NULL)
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
							 "stored definition of table \"%s\" has a bad id %u",
							 table->name, table->id);
			table_free(table);
			result = -1;
			break;
		}
		store->tables[table->id] = table;
		atomic_fetch_add(&store->tables_live, 1);
	}
	rocksdb_iter_destroy(it);
	return result;
}

int
ts_storage_reload_tables(TsStore *store, TsError *err)
{
	int			rc;

	pthread_rwlock_wrlock(&store->tables_lock);
	for (uint32_t id = 0; id < store->tables_cap; id++)
	{
		table_free(store->tables[id]);
		store->tables[id] = NULL;
	}
	atomic_store(&store->tables_live, 0);
	rc = store_load_tables(store, err);
	pthread_rwlock_unlock(&store->tables_lock);
	return rc;
}

/*
 * The storage half of ts_store_open: the data directory and its staging
 * directory (made when missing), RocksDB opened on it, and the table
 * catalogue loaded.  0, or -1 with err; ts_storage_close frees what was
 * made either way.
 */
int
ts_storage_open(TsStore *store, const char *dir, TsError *err)
{
	const char *cf_names[2] = {"default", "meta"};
	const rocksdb_options_t *cf_options[2];
	rocksdb_column_family_handle_t *handles[2];
	char	   *errptr = NULL;
	size_t		dirlen = strlen(dir);

	store->dir = strdup(dir);
	store->staging_dir = malloc(dirlen + sizeof("/staging"));
	if (store->dir == NULL || store->staging_dir == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	sprintf(store->staging_dir, "%s/staging", dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create data directory \"%s\": %s", dir, strerror(errno));
		return -1;
	}

	/* emptied but for prepared sessions' directories once RocksDB is open */
	if (mkdir(store->staging_dir, 0700) != 0 && errno != EEXIST)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create staging directory \"%s\": %s",
					 store->staging_dir, strerror(errno));
		return -1;
	}
	/* prepared sessions' directories live in it: its entry must last */
	ts_sync_dir(dir);

	store->options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(store->options, 1);
	rocksdb_options_set_create_missing_column_families(store->options, 1);
	rocksdb_options_increase_parallelism(store->options, 2);
	rocksdb_options_set_max_background_jobs(store->options, 2);
	rocksdb_options_set_write_buffer_size(store->options, 64 * 1024 * 1024);
	/* bench/sst_options.sh measured the choices (--sst-compression) */
	rocksdb_options_set_compression(store->options,
									store->opts.compression == TS_COMPRESSION_NONE ? rocksdb_no_compression :
									store->opts.compression == TS_COMPRESSION_ZSTD ? rocksdb_zstd_compression :
									rocksdb_lz4_compression);

	/*
	 * RocksDB's own LOG file lives in the data directory.  On a full disk a
	 * write to it fails, and Debian's RocksDB 7.8 (built with assertions)
	 * then aborts the process at the logger's next write: its
	 * WritableFileWriter asserts on any use after an error.  Informational
	 * lines (the periodic stats dump, file deletions, shutdown) would make
	 * that next write certain, so only warnings and errors are logged.
	 */
	rocksdb_options_set_info_log_level(store->options, TS_ROCKSDB_LOG_LEVEL_WARN);
	/*
	 * The log is recovered up to its first damaged record, never past a
	 * lost one: lazy writes rely on it (ts_wal_sync.c).  RocksDB's
	 * default, said here.
	 */
	rocksdb_options_set_wal_recovery_mode(store->options, rocksdb_point_in_time_recovery);
	if (store->opts.statistics)
		rocksdb_options_enable_statistics(store->options);
	store->block_cache = rocksdb_cache_create_lru(store->opts.block_cache_bytes);
	store->table_options = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(store->table_options, store->block_cache);
	rocksdb_block_based_options_set_block_size(store->table_options, store->opts.block_bytes);
	rocksdb_options_set_block_based_table_factory(store->options, store->table_options);
	store->env_options = rocksdb_envoptions_create();

	cf_options[0] = cf_options[1] = store->options;
	store->db = rocksdb_open_column_families(store->options, dir, 2, cf_names,
											 cf_options, handles, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not open RocksDB", errptr);
		return -1;
	}
	store->cf_data = handles[0];
	store->cf_meta = handles[1];
	store->write_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(store->write_sync, store->opts.sync_commits);
	store->read_default = rocksdb_readoptions_create();
	atomic_store(&store->next_session_id, 1);

	return ts_storage_wal_syncer_start(store, err) == 0 &&
		ts_storage_load_applied(store, err) == 0 ? store_load_tables(store, err) : -1;
}

rocksdb_checkpoint_t *
ts_storage_checkpoint_begin(TsStore *store, TsError *err)
{
	rocksdb_flushoptions_t *flush = rocksdb_flushoptions_create();
	rocksdb_checkpoint_t *checkpoint = NULL;
	char	   *errptr = NULL;

	rocksdb_flushoptions_set_wait(flush, 1);
	rocksdb_flush_cf(store->db, flush, store->cf_meta, &errptr);
	if (errptr == NULL)
		rocksdb_flush_cf(store->db, flush, store->cf_data, &errptr);
	rocksdb_flushoptions_destroy(flush);
	if (errptr == NULL)
		checkpoint = rocksdb_checkpoint_object_create(store->db, &errptr);
	if (errptr != NULL)
		ts_error_rocksdb(err, "could not start a checkpoint of the store", errptr);
	return checkpoint;
}

/* Close RocksDB and free the table catalogue (ts_store_close's first step). */
void
ts_storage_close(TsStore *store)
{
	ts_storage_wal_syncer_stop(store);
	if (store->db != NULL)
	{
		char	   *errptr = NULL;

		/* a clean close leaves nothing for WAL recovery to do */
		rocksdb_flush_wal(store->db, 1, &errptr);
		free(errptr);
		rocksdb_column_family_handle_destroy(store->cf_data);
		rocksdb_column_family_handle_destroy(store->cf_meta);
		rocksdb_close(store->db);
	}
	for (uint32_t i = 0; i < store->tables_cap; i++)
		table_free(store->tables[i]);
	free(store->tables);
	if (store->write_sync)
		rocksdb_writeoptions_destroy(store->write_sync);
	if (store->read_default)
		rocksdb_readoptions_destroy(store->read_default);
	if (store->env_options)
		rocksdb_envoptions_destroy(store->env_options);
	if (store->options)
		rocksdb_options_destroy(store->options);
	if (store->table_options)
		rocksdb_block_based_options_destroy(store->table_options);
	if (store->block_cache)
		rocksdb_cache_destroy(store->block_cache);
	free(store->staging_dir);
	free(store->dir);
}

/* A test-only point of failure (ts_storage_int.h says which there are). */
int
ts_store_crash_point(TsStore *store, const char *point, TsError *err)
{
	if (store->crash_at != NULL && strcmp(store->crash_at, point) == 0)
	{
		ts_log(TS_LOG_WARNING, "TSERVER_TEST_CRASH_AT=%s: the tserver kills itself here", point);
		raise(SIGKILL);
	}
	if (store->test_stop_at != NULL && strcmp(store->test_stop_at, point) == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "stopped at test point \"%s\"", point);
		return -1;
	}
	return 0;
}

TsTable *
ts_store_table_locked(TsStore *store, uint32_t table_id, TsError *err)
{
	TsTable    *table = table_id < store->tables_cap ? store->tables[table_id] : NULL;

	if (table != NULL && !table->dropped)
		return table;
	if (err != NULL)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE,
					 "table with id %u does not exist on the tserver", table_id);
	return NULL;
}

TsTable *
ts_store_table(TsStore *store, uint32_t table_id, TsError *err)
{
	TsTable    *table;

	pthread_rwlock_rdlock(&store->tables_lock);
	table = ts_store_table_locked(store, table_id, err);
	pthread_rwlock_unlock(&store->tables_lock);
	return table;
}

/* The live table called name, or NULL; call with tables_lock held. */
static TsTable *
table_by_name(TsStore *store, const char *name)
{
	for (uint32_t i = 0; i < store->tables_cap; i++)
	{
		TsTable    *table = store->tables[i];

		if (table != NULL && !table->dropped && strcmp(table->name, name) == 0)
			return table;
	}
	return NULL;
}

/*
 * Pack table_id and schema as a "table:" entry's value, into memory of
 * malloc's; NULL when out of memory.
 */
static uint8_t *
table_info_pack(uint32_t table_id, const Tcopy__Schema *schema, size_t *packedlen)
{
	Tcopy__TableInfo info = TCOPY__TABLE_INFO__INIT;
	uint8_t    *packed;

	info.table_id = table_id;
	info.schema = (Tcopy__Schema *) schema;
	*packedlen = tcopy__table_info__get_packed_size(&info);
	packed = malloc(*packedlen ? *packedlen : 1);
	if (packed != NULL)
		tcopy__table_info__pack(&info, packed);
	return packed;
}

static int	table_replace_merged_locked(TsStore *store, TsTable *table,
										const Tcopy__Schema *schema, TsError *err);

/*
 * Replace table's schema by schema, which ts_schema_compare matched with it and
 * found to say more: in the meta family, by one synced write, then in
 * memory, from the stored bytes as at startup.  Call with tables_lock held
 * exclusively.
 *
 * Only the pointer table->schema changes, under the lock held exclusively;
 * it is read under the lock held shared (ts_store_open_table).  The
 * replaced schema is not freed but kept in old_schemas until the store
 * closes, because a reader may still use it after it released the lock: a
 * connection packing its TABLE_INFO from the schema_out it was given.  A
 * schema is replaced once per type rename or ALTER of columns on the
 * client, so what is kept stays small.  The layout is rebuilt with it and
 * swapped likewise (ts_table_layout): a request under way keeps the one
 * it read.  The key columns and the kinds of the non-key columns that both
 * schemas have do not change (ts_schema_compare), so every stored row reads
 * under either layout.
 */
static int
table_replace_schema_locked(TsStore *store, TsTable *table, const Tcopy__Schema *given,
							TsError *err)
{
	Tcopy__Schema merged = *given;
	const Tcopy__Schema *schema = &merged;
	size_t		si = 0;
	int			rc;

	/*
	 * A column dropped on the client keeps the stored one at its place (the
	 * non-key columns in order, as ts_schema_compare matched them)
	 */
	merged.columns = malloc((given->n_columns ? given->n_columns : 1) * sizeof(Tcopy__Column *));
	if (merged.columns == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	for (size_t gi = 0; gi < given->n_columns; gi++)
	{
		merged.columns[gi] = given->columns[gi];
		if (ts_schema_is_key(given, gi))
			continue;
		while (si < table->schema->n_columns && ts_schema_is_key(table->schema, si))
			si++;
		if (si < table->schema->n_columns && given->columns[gi]->dropped)
			merged.columns[gi] = table->schema->columns[si];
		si++;
	}
	rc = table_replace_merged_locked(store, table, schema, err);
	free(merged.columns);
	return rc;
}

/* table_replace_schema_locked's work, with the schema to store. */
static int
table_replace_merged_locked(TsStore *store, TsTable *table, const Tcopy__Schema *schema,
							TsError *err)
{
	Tcopy__Schema *stored = NULL;
	Tcopy__Schema **old_schemas;
	TsLayout  **old_layouts;
	TsLayout   *layout = calloc(1, sizeof(TsLayout));
	Tcopy__TableInfo *info;
	uint8_t    *packed;
	size_t		packedlen;
	char		key[sizeof(TS_META_TABLE_PREFIX) + TS_MAX_TABLE_NAME];
	rocksdb_writebatch_t *batch;
	int			rc;

	packed = table_info_pack(table->id, schema, &packedlen);
	old_schemas = realloc(table->old_schemas,
						  (table->nold_schemas + 1) * sizeof(Tcopy__Schema *));
	if (old_schemas != NULL)
		table->old_schemas = old_schemas;
	old_layouts = realloc(table->old_layouts,
						  (table->nold_schemas + 1) * sizeof(TsLayout *));
	if (old_layouts != NULL)
		table->old_layouts = old_layouts;
	info = packed != NULL ? tcopy__table_info__unpack(NULL, packedlen, packed) : NULL;
	if (info != NULL)
	{
		stored = info->schema;
		info->schema = NULL;
		tcopy__table_info__free_unpacked(info, NULL);
	}
	if (old_schemas == NULL || old_layouts == NULL || stored == NULL || layout == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		goto err;
	}
	if (ts_layout_init(layout, stored, err) != 0)
		goto err;

	if (ts_store_check_space(store, packedlen + sizeof(key), err) != 0)
		goto err;
	snprintf(key, sizeof(key), "%s%s", TS_META_TABLE_PREFIX, table->name);
	batch = rocksdb_writebatch_create();
	rocksdb_writebatch_put_cf(batch, store->cf_meta, key, strlen(key),
							  (const char *) packed, packedlen);
	rc = ts_storage_write(store, batch, "could not store the table definition", err);
	rocksdb_writebatch_destroy(batch);
	if (rc != 0)
		goto err;
	free(packed);
	table->old_layouts[table->nold_schemas] = table->layout;
	table->old_schemas[table->nold_schemas++] = table->schema;
	table->schema = stored;
	atomic_store_explicit(&table->layout, layout, memory_order_release);
	ts_log(TS_LOG_INFO, "replaced the schema of table \"%s\" (id %u, now %zu columns) by the client's, "
		   "which adds or takes back columns, adds forms or renames types",
		   table->name, table->id, stored->n_columns);
	return 0;

err:
	free(packed);
	free(layout);
	if (stored != NULL)
		tcopy__schema__free_unpacked(stored, NULL);
	return -1;
}

/* Create table name with schema; call with tables_lock held exclusively. */
static TsTable *
table_create_locked(TsStore *store, const char *name, const Tcopy__Schema *schema,
					TsError *err)
{
	uint32_t	table_id = store->next_table_id;
	TsTable    *table;
	rocksdb_writebatch_t *batch;
	uint8_t    *packed;
	size_t		packedlen;
	uint8_t		next_id[4];
	char		key[sizeof(TS_META_TABLE_PREFIX) + TS_MAX_TABLE_NAME];
	int			rc;

	if (table_id == UINT32_MAX)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "table ids are exhausted");
		return NULL;
	}
	packed = table_info_pack(table_id, schema, &packedlen);
	if (packed == NULL || tables_make_room(store, table_id) != 0)
	{
		free(packed);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}

	/* the in-memory table is built from the stored bytes, as at startup */
	table = table_from_info(store, name, strlen(name), packed, packedlen, err);
	if (table == NULL)
	{
		free(packed);
		return NULL;
	}

	if (ts_store_check_space(store, packedlen + sizeof(key), err) != 0)
	{
		free(packed);
		table_free(table);
		return NULL;
	}
	snprintf(key, sizeof(key), "%s%s", TS_META_TABLE_PREFIX, name);
	ts_put_be32(next_id, table_id + 1);
	batch = rocksdb_writebatch_create();
	rocksdb_writebatch_put_cf(batch, store->cf_meta, key, strlen(key),
							  (const char *) packed, packedlen);
	rocksdb_writebatch_put_cf(batch, store->cf_meta, META_NEXT_TABLE_ID,
							  strlen(META_NEXT_TABLE_ID), (const char *) next_id, 4);
	rc = ts_storage_write(store, batch, "could not store the table definition", err);
	rocksdb_writebatch_destroy(batch);
	free(packed);
	if (rc != 0)
	{
		table_free(table);
		return NULL;
	}
	store->next_table_id++;
	store->tables[table->id] = table;
	atomic_fetch_add(&store->tables_live, 1);
	ts_log(TS_LOG_INFO, "created table \"%s\" (id %u, %zu columns, %zu key columns)",
		   name, table->id, schema->n_columns, schema->n_key);
	return table;
}

int
ts_store_open_table(TsStore *store, const char *name, const Tcopy__Schema *schema,
					bool create, uint32_t *table_id, bool *created,
					const Tcopy__Schema **schema_out, TsError *err)
{
	TsTable    *table;

	*created = false;
	if (name[0] == '\0' || strlen(name) > TS_MAX_TABLE_NAME)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table name is empty or longer than %d bytes", TS_MAX_TABLE_NAME);
		return -1;
	}
	if (schema != NULL)
	{
		TsLayout	check;

		/* refuse a malformed schema before taking any lock */
		if (ts_layout_init(&check, schema, err) != 0)
			return -1;
		ts_layout_free(&check);
	}

	pthread_rwlock_rdlock(&store->tables_lock);
	table = table_by_name(store, name);
	pthread_rwlock_unlock(&store->tables_lock);
	if (table == NULL && create)
	{
		if (schema == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "creating table \"%s\" needs a schema", name);
			return -1;
		}
		pthread_rwlock_wrlock(&store->tables_lock);
		table = table_by_name(store, name); /* someone may have won the race */
		if (table == NULL)
		{
			table = table_create_locked(store, name, schema, err);
			if (table == NULL)
			{
				pthread_rwlock_unlock(&store->tables_lock);
				return -1;
			}
			*created = true;
		}
		pthread_rwlock_unlock(&store->tables_lock);
	}
	if (table == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE,
					 "table \"%s\" does not exist on the tserver", name);
		return -1;
	}
	if (schema != NULL)
	{
		bool		upgrade;
		int			rc;

		pthread_rwlock_rdlock(&store->tables_lock);
		rc = ts_schema_compare(name, table->schema, schema, &upgrade, err);
		pthread_rwlock_unlock(&store->tables_lock);
		if (rc != 0)
			return -1;

		/*
		 * A schema that adds forms to the stored one, or renames types of
		 * the same forms, replaces it: old tables get forms from the first
		 * client that has them, and the stored type names follow renames
		 * for the messages.  Compare again under the exclusive lock, as
		 * another connection may have replaced it meanwhile; a table
		 * dropped meanwhile is left alone, as if opened before the drop.
		 */
		if (upgrade)
		{
			pthread_rwlock_wrlock(&store->tables_lock);
			if (!table->dropped)
			{
				rc = ts_schema_compare(name, table->schema, schema, &upgrade, err);
				if (rc == 0 && upgrade)
					rc = table_replace_schema_locked(store, table, schema, err);
			}
			pthread_rwlock_unlock(&store->tables_lock);
			if (rc != 0)
				return -1;
		}
	}
	*table_id = table->id;
	if (schema_out != NULL)
	{
		pthread_rwlock_rdlock(&store->tables_lock);
		*schema_out = table->schema;
		pthread_rwlock_unlock(&store->tables_lock);
	}
	return 0;
}

int
ts_random_key(uint8_t *key, size_t len)
{
	size_t		got = 0;

	while (got < len)
	{
		ssize_t		n = getrandom(key + got, len - got, 0);

		if (n < 0)
			return -1;
		got += (size_t) n;
	}
	return 0;
}
