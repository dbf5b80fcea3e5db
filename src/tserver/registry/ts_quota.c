/*
 * ts_quota.c
 *		What a namespace holds on disk, against its quota
 *		(--max-namespace-disk-mb; issue 32): one tenant of a tserver must
 *		not fill the disk every other tenant writes to.
 *
 * A namespace's bytes are its tables' rows in SST files (RocksDB's
 * approximate sizes of their key ranges, from index blocks: no row is
 * read; rows still in memtables are bounded by the write buffers and not
 * counted) and its sessions' staging files: the open sessions' spills and
 * the prepared sessions' files.  The server weighs them every so many
 * bytes a connection writes and at its commit, never while a session's
 * lock is held (ts_proto_quota_check).
 */
#include "ts_registry.h"

#include <stdlib.h>
#include <string.h>


int
ts_store_namespace_bytes(TsStore *store, const char *scope, size_t scope_len,
						 uint64_t *stored, uint64_t *staging)
{
	uint32_t   *ids = NULL;
	size_t		n = 0;

	*stored = *staging = 0;
	pthread_rwlock_rdlock(&store->tables_lock);
	if (store->tables_cap > 0 && (ids = malloc(store->tables_cap * sizeof(uint32_t))) == NULL)
	{
		pthread_rwlock_unlock(&store->tables_lock);
		return -1;
	}
	for (uint32_t i = 0; i < store->tables_cap; i++)
	{
		TsTable    *t = store->tables[i];

		if (t != NULL && !t->dropped && strncmp(t->name, scope, scope_len) == 0)
			ids[n++] = t->id;
	}
	pthread_rwlock_unlock(&store->tables_lock);
	*stored = ts_store_tables_bytes(store, ids, n);
	free(ids);

	pthread_mutex_lock(&store->reg->sessions_lock);
	for (TsSession *s = store->reg->sessions; s != NULL; s = s->reg_next)
		if (s->scope != NULL && s->scope_len == scope_len &&
			memcmp(s->scope, scope, scope_len) == 0)
			*staging += atomic_load(&s->spilled_now);
	pthread_mutex_unlock(&store->reg->sessions_lock);

	pthread_mutex_lock(&store->reg->prepared_lock);
	for (size_t i = 0; i < store->reg->nprepared; i++)
		if (ts_gid_shown(store->reg->prepared[i], scope) != NULL)
			*staging += store->reg->prepared[i]->bytes;
	pthread_mutex_unlock(&store->reg->prepared_lock);
	return 0;
}

uint64_t
ts_store_namespace_quota(TsStore *store)
{
	return store->opts.namespace_disk_bytes;
}
