/*
 * ts_wal_sync.c
 *		Writes left unsynced because something already durable stands for
 *		them, and the background sync that bounds how long they stay so.
 *
 * A prepared session's publish is such a write (ts_publish.c,
 * docs/commit.md#one-sync-per-commit): its record, synced at PREPARE,
 * holds every row, and Postgres' commit record holds the decision, so a
 * publish lost to a power cut comes back as the session prepared and in
 * doubt, which reads and recovery publish again.  RocksDB's write-ahead
 * log is one file appended in order, and recovered up to its first
 * damaged record: a lost write loses every later one too, and any later
 * synced write (the next PREPARE's, from any connection) makes every
 * earlier write durable.  So two counts are all there is to track: the
 * lazy writes made (lazy_writes), and how many of them a sync covered
 * (lazy_covered: a synced write covers those made before it began), and a
 * thread syncs the log when one made over TS_WAL_SYNC_INTERVAL_MS ago is
 * not yet covered, as Postgres' WAL writer does for asynchronous commits.
 *
 * A replica group's member never writes lazily: its writes go through the
 * group's log, which syncs every entry (ts_storage_write.c).
 */
#include "ts_storage_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ts_log.h"

/* how long a lazy write may wait for a sync that covers it */
#define TS_WAL_SYNC_INTERVAL_MS 50

void
ts_storage_lazy_covered(TsStore *store, uint64_t written)
{
	uint64_t	covered = atomic_load(&store->lazy_covered);

	while (covered < written &&
		   !atomic_compare_exchange_weak(&store->lazy_covered, &covered, written))
		;
}

/* Sync the log for the lazy writes so far: 0, or -1 with errptr (malloc'ed). */
static int
sync_lazy(TsStore *store, char **errptr)
{
	uint64_t	written = atomic_load(&store->lazy_writes);

	if (atomic_load(&store->lazy_covered) >= written)
		return 0;
	rocksdb_flush_wal(store->db, 1, errptr);
	if (*errptr != NULL)
		return -1;
	ts_storage_lazy_covered(store, written);
	return 1;
}

int
ts_storage_sync_lazy(TsStore *store, TsError *err)
{
	char	   *errptr = NULL;

	if (sync_lazy(store, &errptr) < 0)
	{
		ts_error_rocksdb(err, "could not sync the write-ahead log", errptr);
		return -1;
	}
	return 0;
}

/*
 * The syncer: every TS_WAL_SYNC_INTERVAL_MS, sync the log if a lazy write
 * made before the previous round is not yet covered (a PREPARE's sync
 * usually covers it first), until stopped.
 */
static void *
wal_syncer_main(void *arg)
{
	TsStore    *store = arg;
	uint64_t	mark = 0;		/* the lazy writes made by the previous round */

	pthread_mutex_lock(&store->wal_syncer_mutex);
	while (!store->wal_syncer_stop)
	{
		struct timespec until;
		char	   *errptr = NULL;
		int			rc;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TS_WAL_SYNC_INTERVAL_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		(void) pthread_cond_timedwait(&store->wal_syncer_cond, &store->wal_syncer_mutex, &until);
		if (store->wal_syncer_stop)
			break;
		if (atomic_load(&store->lazy_covered) >= mark)
		{
			mark = atomic_load(&store->lazy_writes);
			continue;
		}
		pthread_mutex_unlock(&store->wal_syncer_mutex);
		mark = atomic_load(&store->lazy_writes);
		rc = sync_lazy(store, &errptr);
		if (rc < 0)
		{
			/* still not covered: the next round, or a synced write, retries */
			ts_log(TS_LOG_WARNING, "could not sync the write-ahead log: %s", errptr);
			free(errptr);
		}
		else if (rc > 0)
			atomic_fetch_add(&store->wal_background_syncs, 1);
		pthread_mutex_lock(&store->wal_syncer_mutex);
	}
	pthread_mutex_unlock(&store->wal_syncer_mutex);
	return NULL;
}

int
ts_storage_wal_syncer_start(TsStore *store, TsError *err)
{
	int			rc;

	store->write_lazy = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(store->write_lazy, 0);
	pthread_mutex_init(&store->wal_syncer_mutex, NULL);
	pthread_cond_init(&store->wal_syncer_cond, NULL);
	store->wal_syncer_stop = false;
	if (!store->opts.sync_commits)
		return 0;				/* nothing is synced: nothing to wait for */
	/* tests: lazy writes wait for a synced write, which they then count */
	if (getenv("TSERVER_TEST_NO_WAL_SYNCER") != NULL)
	{
		ts_log(TS_LOG_WARNING, "TSERVER_TEST_NO_WAL_SYNCER: no background sync of lazy writes");
		return 0;
	}
	rc = pthread_create(&store->wal_syncer, NULL, wal_syncer_main, store);
	if (rc != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "could not start the write-ahead log's syncer: %s", strerror(rc));
		return -1;
	}
	store->wal_syncer_started = true;
	return 0;
}

void
ts_storage_wal_syncer_stop(TsStore *store)
{
	if (store->write_lazy == NULL)
		return;
	if (store->wal_syncer_started)
	{
		pthread_mutex_lock(&store->wal_syncer_mutex);
		store->wal_syncer_stop = true;
		pthread_cond_signal(&store->wal_syncer_cond);
		pthread_mutex_unlock(&store->wal_syncer_mutex);
		pthread_join(store->wal_syncer, NULL);
		store->wal_syncer_started = false;
	}
	pthread_mutex_destroy(&store->wal_syncer_mutex);
	pthread_cond_destroy(&store->wal_syncer_cond);
	rocksdb_writeoptions_destroy(store->write_lazy);
	store->write_lazy = NULL;
}
