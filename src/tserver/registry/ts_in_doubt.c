/*
 * ts_in_doubt.c
 *		Writes held back behind in-doubt prepared sessions (issue 30).
 *
 * A prepared session is in doubt once no live connection will resolve it:
 * its record was restored at startup (ts_prepared_load), or the connection
 * that prepared it ended before resolving it (ts_store_prepared_detach).
 * Postgres' recovery publishes or discards it later, up to
 * tcopy.recovery_interval later.  Meanwhile a later transaction may commit
 * to the same table; when recovery then publishes the older session, its
 * rows overwrite the newer ones (on_conflict 'replace', an UPDATE) and its
 * staged TRUNCATE deletes them, or its DROP takes them with the table:
 * rows Postgres committed later are lost.
 *
 * So a session that writes to or truncates a table held by an in-doubt
 * session (one it wrote to, truncates or drops: TsPrepared.tables) waits,
 * at its prepare or one-step commit, and so does a truncate outside any
 * session, for every such session to be resolved: up to the store's
 * in_doubt_wait_ms, then it fails with ERROR_SERIALIZATION, which Postgres
 * reports as 40001, to be retried once recovery has run.  A drop is not
 * held: a publish whose table was dropped since deletes its rows there, as
 * if the drop came after it (ts_publish.c).
 *
 * The wait is on in_doubt_resolved, broadcast when an in-doubt entry leaves
 * the registry, with prepared_lock, which pthread_cond_timedwait releases
 * while it sleeps; the waiter holds no other lock of the store, so the
 * Resolve it waits for (prepared_lock, resolve_lock, tables_lock,
 * write_lock, the key claims' and labels' locks) proceeds.  It sleeps in
 * slices, between which it asks give_up whether the client went away or
 * the server is stopping: nothing else would wake it then.
 */
#include "ts_registry.h"

#include <string.h>
#include <time.h>

#include "ts_clock.h"
#include "ts_log.h"

#define IN_DOUBT_SLICE_MS 200	/* between two questions to give_up */

/* The monotonic time ms milliseconds from now, for pthread_cond_timedwait. */
static struct timespec
monotonic_after(int64_t ms)
{
	struct timespec at;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += ms / 1000;
	at.tv_nsec += (ms % 1000) * 1000000L;
	if (at.tv_nsec >= 1000000000L)
	{
		at.tv_sec++;
		at.tv_nsec -= 1000000000L;
	}
	return at;
}

/* How to name table_id, dropped or not, into name[size]: "its name". */
static void
table_name(TsStore *store, uint32_t table_id, char *name, size_t size)
{
	const TsTable *table;

	pthread_rwlock_rdlock(&store->tables_lock);
	/* a dropped table keeps its name until the store closes */
	table = table_id < store->tables_cap ? store->tables[table_id] : NULL;
	if (table != NULL)
		snprintf(name, size, "\"%s\"", table->name);
	else
		snprintf(name, size, "with id %u", table_id);
	pthread_rwlock_unlock(&store->tables_lock);
}

int
ts_in_doubt_wait(TsStore *store, const uint32_t *const *lists, const size_t *counts,
				 int nlists, const char *what, bool (*give_up) (void *arg), void *arg,
				 int *waited_ms, TsError *err)
{
	int64_t		limit_ms = store->opts.in_doubt_wait_ms;
	int64_t		start_ms = ts_monotonic_ms();
	int64_t		asked_ms = start_ms;
	int64_t		elapsed_ms = 0;
	const TsPrepared *holder;
	char		gid[TS_GID_MAX + 1] = "";
	char		name[TS_MAX_TABLE_NAME + 3];
	uint32_t	table_id = 0;
	bool		gave_up = false;

	/*
	 * Nothing prepared, nothing in doubt: the commits of a store without
	 * prepared sessions do not take prepared_lock for this.  An entry is
	 * counted from before it can be in doubt; one that turns so after
	 * this look is the window docs/commit.md leaves uncovered either way.
	 */
	if (atomic_load(&store->sessions_prepared) == 0)
		return 0;
	pthread_mutex_lock(&store->reg->prepared_lock);
	for (;;)
	{
		int64_t		now_ms;
		int64_t		left_ms;
		struct timespec until;

		holder = registry_in_doubt_locked(store, lists, counts, nlists, &table_id);
		if (holder == NULL)
			break;
		now_ms = ts_monotonic_ms();
		elapsed_ms = now_ms - start_ms;
		if (gid[0] == '\0' || strcmp(gid, holder->gid) != 0)
		{
			/* logged once per session waited for */
			snprintf(gid, sizeof(gid), "%s", holder->gid);
			if (*waited_ms + elapsed_ms < limit_ms)
				ts_log(TS_LOG_INFO, "holding back %s: the session prepared under \"%s\", "
					   "which changes table id %u, is in doubt; waiting up to %lld ms "
					   "for it to be resolved", what, gid, table_id,
					   (long long) (limit_ms - *waited_ms - elapsed_ms));
		}
		if (gave_up || *waited_ms + elapsed_ms >= limit_ms)
			break;
		/* give_up polls the client's socket: not under prepared_lock */
		if (give_up != NULL && now_ms - asked_ms >= IN_DOUBT_SLICE_MS)
		{
			pthread_mutex_unlock(&store->reg->prepared_lock);
			gave_up = give_up(arg);
			asked_ms = ts_monotonic_ms();
			pthread_mutex_lock(&store->reg->prepared_lock);
			continue;
		}
		left_ms = limit_ms - *waited_ms - elapsed_ms;
		until = monotonic_after(left_ms < IN_DOUBT_SLICE_MS ? left_ms : IN_DOUBT_SLICE_MS);
		/* a timeout, a wakeup or a spurious one: look again */
		(void) pthread_cond_timedwait(&store->reg->in_doubt_resolved, &store->reg->prepared_lock, &until);
	}
	if (holder != NULL)
		snprintf(gid, sizeof(gid), "%s", holder->gid);
	pthread_mutex_unlock(&store->reg->prepared_lock);

	elapsed_ms = ts_monotonic_ms() - start_ms;
	*waited_ms += (int) elapsed_ms;
	if (holder == NULL)
	{
		if (gid[0] != '\0')
			ts_log(TS_LOG_INFO, "held back %s for %lld ms, until the in-doubt sessions "
				   "of its tables were resolved", what, (long long) elapsed_ms);
		return 0;
	}
	table_name(store, table_id, name, sizeof(name));
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SERIALIZATION,
				 "the prepared session \"%s\", which changes table %s, is not yet resolved "
				 "(waited %d ms%s): %s could be overwritten when it is",
				 gid, name, *waited_ms,
				 gave_up ? ", then the client or the server went away" : "", what);
	err->table_id = table_id;
	return -1;
}

int
ts_session_wait_in_doubt(TsSession *session, int *waited_ms, TsError *err)
{
	const uint32_t *lists[] = {session->tables, session->truncates};
	const size_t counts[] = {session->ntables, session->ntruncates};

	/* a drop is not held: see the head of this file */
	if (session->ntables == 0 && session->ntruncates == 0)
		return 0;
	return ts_in_doubt_wait(session->store, lists, counts, 2, "this session's writes",
							session->give_up, session->give_up_arg, waited_ms, err);
}
