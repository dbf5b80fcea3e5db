/*
 * ts_snapshot.c
 *		Snapshots of the committed rows (docs/snapshots.md): a RocksDB
 *		snapshot registered under an id and a random 16-byte key, owned by
 *		the connection that took it and named by scans, which read it, and
 *		by write sessions, whose updates and deletes are checked against it,
 *		on any connection.  Each holder has a reference; the last one gone
 *		releases the RocksDB snapshot.
 *
 * A snapshot is not taken while a session's publish is between its steps
 * (ts_publish.c: truncates, then an ingestion): publish_lock, shared here
 * and in ts_scan_open, exclusive around the steps.  With it come the
 * sessions prepared and not yet published, read while no prepared session
 * is being published (resolve_lock, exclusive here, shared by
 * ts_store_resolve): a client that reads several tservers resolves those
 * its transaction manager calls committed and takes the snapshot again
 * (docs/snapshots.md#several-tservers).
 */
#include "ts_registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct TsSnapshot
{
	uint64_t	id;
	uint8_t		key[TS_SNAPSHOT_KEY_SIZE];
	const rocksdb_snapshot_t *snap;
	rocksdb_readoptions_t *read_options;	/* reads as of the snapshot */
	int			refs;			/* under snapshots_lock */
	TsSnapshot *next;
};

void
ts_snapshots_init(TsStore *store)
{
	pthread_rwlockattr_t attr;

	pthread_mutex_init(&store->reg->snapshots_lock, NULL);
	pthread_rwlock_init(&store->reg->publish_lock, NULL);
	/* a steady stream of publishes must not keep a snapshot waiting */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&store->reg->resolve_lock, &attr);
	pthread_rwlock_init(&store->reg->backup_lock, &attr);
	pthread_rwlock_init(&store->reg->write_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
}

/* At close every connection is gone: release what is left. */
void
ts_snapshots_destroy(TsStore *store)
{
	while (store->reg->snapshots != NULL)
	{
		TsSnapshot *snapshot = store->reg->snapshots;

		store->reg->snapshots = snapshot->next;
		rocksdb_readoptions_destroy(snapshot->read_options);
		rocksdb_release_snapshot(store->db, snapshot->snap);
		free(snapshot);
	}
	pthread_mutex_destroy(&store->reg->snapshots_lock);
	pthread_rwlock_destroy(&store->reg->publish_lock);
	pthread_rwlock_destroy(&store->reg->resolve_lock);
	pthread_rwlock_destroy(&store->reg->backup_lock);
	pthread_rwlock_destroy(&store->reg->write_lock);
}

TsSnapshot *
ts_snapshot_take(TsStore *store, const char *prepared_prefix, const char *scope,
				 TcArena *arena, char ***prepared, size_t *nprepared, TsError *err)
{
	TsSnapshot *snapshot = calloc(1, sizeof(TsSnapshot));
	int			listed;

	if (snapshot == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	if (ts_random_key(snapshot->key, sizeof(snapshot->key)) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not draw a snapshot key: %s", strerror(errno));
		free(snapshot);
		return NULL;
	}
	snapshot->read_options = rocksdb_readoptions_create();
	pthread_rwlock_wrlock(&store->reg->resolve_lock);
	pthread_rwlock_rdlock(&store->reg->publish_lock);
	snapshot->snap = rocksdb_create_snapshot(store->db);
	pthread_rwlock_unlock(&store->reg->publish_lock);
	listed = registry_gids(store, prepared_prefix, scope, arena, prepared, nprepared);
	pthread_rwlock_unlock(&store->reg->resolve_lock);
	if (listed != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory listing prepared sessions");
		rocksdb_readoptions_destroy(snapshot->read_options);
		rocksdb_release_snapshot(store->db, snapshot->snap);
		free(snapshot);
		return NULL;
	}
	rocksdb_readoptions_set_snapshot(snapshot->read_options, snapshot->snap);
	snapshot->refs = 1;
	pthread_mutex_lock(&store->reg->snapshots_lock);
	snapshot->id = ++store->reg->next_snapshot_id;
	snapshot->next = store->reg->snapshots;
	store->reg->snapshots = snapshot;
	pthread_mutex_unlock(&store->reg->snapshots_lock);
	return snapshot;
}

TsSnapshot *
ts_snapshot_find(TsStore *store, uint64_t id, const uint8_t *key, size_t keylen, TsError *err)
{
	TsSnapshot *snapshot;

	pthread_mutex_lock(&store->reg->snapshots_lock);
	for (snapshot = store->reg->snapshots; snapshot != NULL; snapshot = snapshot->next)
		if (snapshot->id == id)
			break;
	if (snapshot == NULL || keylen != sizeof(snapshot->key) ||
		memcmp(snapshot->key, key, keylen) != 0)
	{
		pthread_mutex_unlock(&store->reg->snapshots_lock);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "no snapshot of this id and key: it ended with its connection, or the tserver restarted");
		return NULL;
	}
	snapshot->refs++;
	pthread_mutex_unlock(&store->reg->snapshots_lock);
	return snapshot;
}

void
ts_snapshot_unref(TsStore *store, TsSnapshot *snapshot)
{
	TsSnapshot **link;

	if (snapshot == NULL)
		return;
	pthread_mutex_lock(&store->reg->snapshots_lock);
	if (--snapshot->refs > 0)
	{
		pthread_mutex_unlock(&store->reg->snapshots_lock);
		return;
	}
	for (link = &store->reg->snapshots; *link != NULL; link = &(*link)->next)
		if (*link == snapshot)
		{
			*link = snapshot->next;
			break;
		}
	pthread_mutex_unlock(&store->reg->snapshots_lock);
	rocksdb_readoptions_destroy(snapshot->read_options);
	rocksdb_release_snapshot(store->db, snapshot->snap);
	free(snapshot);
}

uint64_t
ts_snapshot_id(const TsSnapshot *snapshot, const uint8_t **key, size_t *keylen)
{
	*key = snapshot->key;
	*keylen = sizeof(snapshot->key);
	return snapshot->id;
}

size_t
ts_snapshots_held(TsStore *store)
{
	size_t		n = 0;

	pthread_mutex_lock(&store->reg->snapshots_lock);
	for (TsSnapshot *snapshot = store->reg->snapshots; snapshot != NULL; snapshot = snapshot->next)
		n++;
	pthread_mutex_unlock(&store->reg->snapshots_lock);
	return n;
}

const rocksdb_snapshot_t *
ts_snapshot_rocksdb(const TsSnapshot *snapshot)
{
	return snapshot->snap;
}

/*
 * An update or delete of key (a stored key of table) by a session whose
 * snapshot is this one: the row's committed value must be what it was in
 * the snapshot, or another transaction changed it since (first updater
 * wins, as Postgres' heap decides under REPEATABLE READ).  0, or -1 with
 * ERROR_CONCURRENT_UPDATE in err.
 */
int
ts_snapshot_check_row(TsStore *store, const TsSnapshot *snapshot, const TsTable *table,
					  const uint8_t *key, size_t keylen, TsError *err)
{
	char	   *errptr = NULL;
	size_t		then_len = 0,
				now_len = 0;
	char	   *then = rocksdb_get_cf(store->db, snapshot->read_options, store->cf_data,
									  (const char *) key, keylen, &then_len, &errptr);
	char	   *now = NULL;
	bool		changed;

	if (errptr == NULL)
		now = rocksdb_get_cf(store->db, store->read_default, store->cf_data,
							 (const char *) key, keylen, &now_len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read a row to update", errptr);
		rocksdb_free(then);
		return -1;
	}
	changed = (then == NULL) != (now == NULL) ||
		(then != NULL && (then_len != now_len || memcmp(then, now, now_len) != 0));
	if (changed)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_CONCURRENT_UPDATE,
					 now == NULL ? "could not serialize access due to concurrent delete" :
					 "could not serialize access due to concurrent update");
		err->table_id = table->id;
	}
	rocksdb_free(then);
	rocksdb_free(now);
	return changed ? -1 : 0;
}
