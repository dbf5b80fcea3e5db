/*
 * ts_store.c
 *		A store opened and closed with its registries (open sessions, key
 *		claims, prepared sessions, load labels), and the table operations
 *		that reach the registries (TRUNCATE and DROP delete a table's
 *		labels): the session layer's side of the store, above the RocksDB
 *		files and table catalogue of ts_storage.c.
 */
#include "ts_store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_key.h"
#include "ts_log.h"

TsStore *
ts_store_open(const char *dir, const TsStoreOptions *options, TsError *err)
{
	TsStore    *store = calloc(1, sizeof(TsStore));
	pthread_condattr_t cond_attr;

	/* the staging layer's part and the registries, which the store points to */
	if (store != NULL && ((store->staging = calloc(1, sizeof(TsStaging))) == NULL ||
						  (store->reg = calloc(1, sizeof(TsRegistries))) == NULL))
	{
		free(store->staging);
		free(store);
		store = NULL;
	}
	if (store == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	store->opts = *options;
	/* staged records are addressed by 32-bit offsets: keep well below */
	if (store->opts.session_memory_bytes > TS_SESSION_MEMORY_MAX)
		store->opts.session_memory_bytes = TS_SESSION_MEMORY_MAX;
	if (store->opts.merge_threads < 1)
		store->opts.merge_threads = 1;
	if (store->opts.merge_threads > TS_MERGE_THREADS_MAX)
		store->opts.merge_threads = TS_MERGE_THREADS_MAX;
	if (store->opts.in_doubt_wait_ms < 0)
		store->opts.in_doubt_wait_ms = 0;
	if (store->opts.in_doubt_wait_ms > TS_IN_DOUBT_WAIT_MS_MAX)
		store->opts.in_doubt_wait_ms = TS_IN_DOUBT_WAIT_MS_MAX;
	pthread_rwlock_init(&store->tables_lock, NULL);
	pthread_mutex_init(&store->reg->prepared_lock, NULL);
	/* waits are bounded in elapsed time, whatever the wall clock does */
	pthread_condattr_init(&cond_attr);
	pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
	pthread_cond_init(&store->reg->in_doubt_resolved, &cond_attr);
	pthread_condattr_destroy(&cond_attr);
	pthread_mutex_init(&store->reg->labels_lock, NULL);
	ts_key_claims_init(store);
	ts_sessions_init(store);
	ts_snapshots_init(store);
	if (getenv("TSERVER_TEST_CRASH_AT") != NULL && getenv("TSERVER_TEST_CRASH_AT")[0] != '\0')
	{
		store->crash_at = strdup(getenv("TSERVER_TEST_CRASH_AT"));
		ts_log(TS_LOG_WARNING, "TSERVER_TEST_CRASH_AT=%s: the tserver kills itself at that point",
			   getenv("TSERVER_TEST_CRASH_AT"));
	}
	if (ts_backup_check_start(dir, err) != 0 ||
		ts_storage_open(store, dir, err) != 0 || ts_prepared_load(store, err) != 0)
		goto err;
	ts_log(TS_LOG_INFO, "store open at \"%s\": %llu tables, %llu prepared sessions", dir,
		   (unsigned long long) atomic_load(&store->tables_live),
		   (unsigned long long) atomic_load(&store->sessions_prepared));
	return store;

err:
	ts_store_close(store);
	return NULL;
}

void
ts_store_close(TsStore *store)
{
	if (store == NULL)
		return;
	ts_snapshots_destroy(store);	/* released before RocksDB closes */
	ts_storage_close(store);
	ts_prepared_free_all(store);
	ts_labels_free_all(store);
	ts_key_claims_free_all(store);
	ts_sessions_destroy(store);
	pthread_rwlock_destroy(&store->tables_lock);
	pthread_mutex_destroy(&store->reg->prepared_lock);
	pthread_cond_destroy(&store->reg->in_doubt_resolved);
	pthread_mutex_destroy(&store->reg->labels_lock);
	free(store->crash_at);
	free(store->reg);
	free(store->staging);
	free(store);
}

int
ts_store_reload_sessions(TsStore *store, TsError *err)
{
	ts_prepared_free_all(store);
	ts_labels_free_all(store);
	ts_key_claims_free_all(store);
	ts_key_claims_init(store);
	atomic_store(&store->sessions_prepared, 0);
	if (ts_storage_reload_tables(store, err) != 0 || ts_prepared_load(store, err) != 0)
		return -1;
	ts_log(TS_LOG_INFO, "store reloaded: %llu tables, %zu prepared sessions",
		   (unsigned long long) atomic_load(&store->tables_live), store->reg->nprepared);
	return 0;
}

int
ts_store_table_op(TsStore *store, Tcopy__TableOpKind op, uint32_t table_id,
				  bool (*give_up) (void *arg), void *arg, TsError *err)
{
	TsTable    *table;
	rocksdb_writebatch_t *batch;

	if (op != TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE &&
		op != TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "unknown table operation %d", (int) op);
		return -1;
	}

	/*
	 * An in-doubt session's rows published after this truncate would come
	 * back, though the truncate came later: wait for it to be resolved.  A
	 * drop needs no wait: the publish of a session whose table was dropped
	 * since deletes its rows there, as if the drop came after it
	 * (ts_publish.c).
	 */
	if (op == TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE)
	{
		const uint32_t *lists[] = {&table_id};
		const size_t counts[] = {1};
		int			waited_ms = 0;

		if (ts_in_doubt_wait(store, lists, counts, 1, "this truncate", give_up, arg,
							 &waited_ms, err) != 0)
			return -1;
	}
	pthread_rwlock_wrlock(&store->tables_lock);
	table = ts_store_table_locked(store, table_id, err);
	if (table == NULL)
	{
		pthread_rwlock_unlock(&store->tables_lock);
		return -1;
	}

	/* every row of the table, and for a drop its definition, in one batch */
	batch = rocksdb_writebatch_create();
	ts_batch_delete_table_rows(store, batch, table_id);
	ts_labels_batch_delete_table(store, batch, table_id);
	if (op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		char		key[sizeof(TS_META_TABLE_PREFIX) + TS_MAX_TABLE_NAME];

		snprintf(key, sizeof(key), "%s%s", TS_META_TABLE_PREFIX, table->name);
		rocksdb_writebatch_delete_cf(batch, store->cf_meta, key, strlen(key));
	}
	if (ts_store_write_emptying(store, batch, &table_id, 1,
								op == TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE,
								"could not remove the table's rows", err) != 0)
	{
		rocksdb_writebatch_destroy(batch);
		pthread_rwlock_unlock(&store->tables_lock);
		return -1;
	}
	rocksdb_writebatch_destroy(batch);
	if (op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP)
	{
		table->dropped = true;
		atomic_fetch_sub(&store->tables_live, 1);
	}
	ts_log(TS_LOG_INFO, "%s table \"%s\" (id %u)",
		   op == TCOPY__TABLE_OP_KIND__TABLE_OP_DROP ? "dropped" : "truncated",
		   table->name, table_id);
	pthread_rwlock_unlock(&store->tables_lock);
	return 0;
}

int
ts_store_list_tables(TsStore *store, const char *prefix, const char *scope, size_t scope_len,
					 TcArena *arena, Tcopy__TableList *reply, TsError *err)
{
	size_t		prefix_len = strlen(prefix);
	size_t		n = 0;
	int			rc = 0;

	pthread_rwlock_rdlock(&store->tables_lock);
	for (uint32_t i = 0; i < store->tables_cap; i++)
	{
		TsTable    *t = store->tables[i];

		n += t != NULL && !t->dropped;
	}
	reply->tables = n > 0 ? tc_arena_alloc(arena, n * sizeof(Tcopy__ListedTable *)) : NULL;
	reply->n_tables = 0;
	for (uint32_t i = 0; i < store->tables_cap && rc == 0 && n > 0; i++)
	{
		TsTable    *t = store->tables[i];
		Tcopy__ListedTable *entry;
		char	   *name;

		if (t == NULL || t->dropped || strncmp(t->name, prefix, prefix_len) != 0 ||
			(scope != NULL && strncmp(t->name, scope, scope_len) != 0))
			continue;
		entry = tc_arena_alloc(arena, sizeof(Tcopy__ListedTable));
		name = tc_arena_alloc(arena, strlen(t->name) + 1);
		if (reply->tables == NULL || entry == NULL || name == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			rc = -1;
			break;
		}
		tcopy__listed_table__init(entry);
		entry->name = strcpy(name, t->name);
		entry->id = t->id;
		reply->tables[reply->n_tables++] = entry;
	}
	pthread_rwlock_unlock(&store->tables_lock);
	return rc;
}
