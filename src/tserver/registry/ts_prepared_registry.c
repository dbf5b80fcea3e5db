/*
 * ts_prepared_registry.c
 *		The registry of prepared sessions (TsStore.prepared, under
 *		prepared_lock): adding, finding and removing entries, their owners,
 *		and listing them; and the staging directories that are not theirs
 *		removed.  ts_prepared.c prepares, resolves and loads the sessions
 *		the entries stand for; see there for the design.
 */
#include "ts_registry.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tc_array.h"
#include "ts_log.h"
#include "ts_store.pb-c.h"

/* ---- the registry; every function here takes prepared_lock itself ---- */

/* The entry of gid, or NULL; call with prepared_lock held. */
TsPrepared *
registry_find_locked(TsStore *store, const char *gid, size_t *index)
{
	for (size_t i = 0; i < store->reg->nprepared; i++)
	{
		if (strcmp(store->reg->prepared[i]->gid, gid) == 0)
		{
			if (index != NULL)
				*index = i;
			return store->reg->prepared[i];
		}
	}
	return NULL;
}

/*
 * Add an entry for gid in state, owned by owner; -1 with err when gid has
 * one already (ERROR_PROTOCOL) or out of memory.
 */
int
registry_add(TsStore *store, const char *gid, TsPreparedState state, uint64_t owner,
			 TsError *err)
{
	TsPrepared *entry;

	pthread_mutex_lock(&store->reg->prepared_lock);
	if (registry_find_locked(store, gid, NULL) != NULL)
	{
		pthread_mutex_unlock(&store->reg->prepared_lock);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a session with this global id is already prepared: \"%.*s\"",
					 TS_GID_MAX, gid);
		return -1;
	}
	if (!tc_array_reserve((void **) &store->reg->prepared, store->reg->nprepared, &store->reg->prepared_cap,
						  sizeof(TsPrepared *), 16))
		goto oom;
	entry = calloc(1, sizeof(TsPrepared));
	if (entry == NULL || (entry->gid = strdup(gid)) == NULL)
	{
		free(entry);
		goto oom;
	}
	entry->state = state;
	entry->owner = owner;
	store->reg->prepared[store->reg->nprepared++] = entry;
	if (state != PREPARED_PREPARING)
		atomic_fetch_add(&store->sessions_prepared, 1);
	pthread_mutex_unlock(&store->reg->prepared_lock);
	return 0;

oom:
	pthread_mutex_unlock(&store->reg->prepared_lock);
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
	return -1;
}

/* Remove gid's entry, if any (an in-doubt one wakes in_doubt_resolved). */
void
registry_remove(TsStore *store, const char *gid)
{
	size_t		i;
	TsPrepared *entry;

	pthread_mutex_lock(&store->reg->prepared_lock);
	entry = registry_find_locked(store, gid, &i);
	if (entry != NULL)
	{
		store->reg->prepared[i] = store->reg->prepared[--store->reg->nprepared];
		if (entry->state != PREPARED_PREPARING)
			atomic_fetch_sub(&store->sessions_prepared, 1);
		/* resolved: the writes held back behind it look again */
		if (entry->in_doubt)
			pthread_cond_broadcast(&store->reg->in_doubt_resolved);
		free(entry->gid);
		free(entry->scope_prefix);
		free(entry->tables);
		free(entry);
	}
	pthread_mutex_unlock(&store->reg->prepared_lock);
}

/*
 * A Prepare is done: gid's entry is a prepared session.  Its tables are
 * those it wrote, truncates and drops: a later write to a table it drops
 * would go with the table when it is published, as much as one its rows
 * or its truncate would undo.
 */
void
registry_set_prepared(TsStore *store, const char *gid, const char *scope_prefix,
					  uint64_t rows, uint64_t bytes, uint64_t prepared_at_ms,
					  const uint32_t *written, size_t nwritten,
					  const uint32_t *truncates, size_t ntruncates,
					  const uint32_t *drops, size_t ndrops)
{
	TsPrepared *entry;
	char	   *prefix = strdup(scope_prefix != NULL ? scope_prefix : "");
	size_t		ntables = nwritten + ntruncates + ndrops;
	uint32_t   *tables = malloc((ntables ? ntables : 1) * sizeof(uint32_t));

	/* without memory for them, the tables are not known to be in doubt */
	if (tables == NULL)
		ntables = 0;
	else
	{
		if (nwritten > 0)
			memcpy(tables, written, nwritten * sizeof(uint32_t));
		if (ntruncates > 0)
			memcpy(tables + nwritten, truncates, ntruncates * sizeof(uint32_t));
		if (ndrops > 0)
			memcpy(tables + nwritten + ntruncates, drops, ndrops * sizeof(uint32_t));
	}

	pthread_mutex_lock(&store->reg->prepared_lock);
	entry = registry_find_locked(store, gid, NULL);
	if (entry != NULL)
	{
		if (entry->state == PREPARED_PREPARING)
			atomic_fetch_add(&store->sessions_prepared, 1);
		entry->state = PREPARED_READY;
		/* no connection owns it (a record restored at startup): in doubt */
		if (entry->owner == 0)
			entry->in_doubt = true;
		entry->rows = rows;
		entry->bytes = bytes;
		entry->prepared_at_ms = prepared_at_ms;
		free(entry->scope_prefix);
		entry->scope_prefix = prefix;
		prefix = NULL;
		free(entry->tables);
		entry->tables = tables;
		entry->ntables = ntables;
		tables = NULL;
	}
	pthread_mutex_unlock(&store->reg->prepared_lock);
	free(prefix);
	free(tables);
}

const TsPrepared *
registry_in_doubt_locked(TsStore *store, const uint32_t *const *lists, const size_t *counts,
						 int nlists, uint32_t *table_id)
{
	for (size_t i = 0; i < store->reg->nprepared; i++)
	{
		const TsPrepared *entry = store->reg->prepared[i];

		/*
		 * Still in doubt while a Resolve claimed it (it may yet publish
		 * after a write that passed), or after one failed
		 */
		if (!entry->in_doubt)
			continue;
		for (size_t t = 0; t < entry->ntables; t++)
			for (int l = 0; l < nlists; l++)
				for (size_t k = 0; k < counts[l]; k++)
					if (lists[l][k] == entry->tables[t])
					{
						*table_id = entry->tables[t];
						return entry;
					}
	}
	return NULL;
}

bool
ts_store_table_in_doubt(TsStore *store, uint32_t table_id, char *gid, size_t size)
{
	const uint32_t *lists[] = {&table_id};
	const size_t counts[] = {1};
	const TsPrepared *entry;
	uint32_t	held;

	pthread_mutex_lock(&store->reg->prepared_lock);
	entry = registry_in_doubt_locked(store, lists, counts, 1, &held);
	if (entry != NULL)
		snprintf(gid, size, "%s", entry->gid);
	pthread_mutex_unlock(&store->reg->prepared_lock);
	return entry != NULL;
}

bool
ts_store_prepared_owned(TsStore *store, uint64_t owner, char *gid, size_t gid_size)
{
	bool		owned = false;

	pthread_mutex_lock(&store->reg->prepared_lock);
	for (size_t i = 0; i < store->reg->nprepared && !owned; i++)
	{
		TsPrepared *entry = store->reg->prepared[i];

		if (entry->owner == owner && entry->state == PREPARED_READY)
		{
			owned = true;
			if (gid != NULL && gid_size > 0)
				snprintf(gid, gid_size, "%s", entry->gid);
		}
	}
	pthread_mutex_unlock(&store->reg->prepared_lock);
	return owned;
}

void
ts_store_prepared_detach(TsStore *store, uint64_t owner)
{
	pthread_mutex_lock(&store->reg->prepared_lock);
	for (size_t i = 0; i < store->reg->nprepared; i++)
	{
		TsPrepared *entry = store->reg->prepared[i];

		if (entry->owner == owner && entry->state == PREPARED_READY)
		{
			entry->owner = 0;
			/* no one resolves it but recovery now: its tables are held */
			entry->in_doubt = true;
			ts_log(TS_LOG_INFO, "connection %llu ended: the session prepared under \"%s\" "
				   "stays prepared, orphaned", (unsigned long long) owner, entry->gid);
		}
	}
	pthread_mutex_unlock(&store->reg->prepared_lock);
}

int
registry_gids(TsStore *store, const char *prefix, const char *scope, TcArena *arena,
			  char ***gids, size_t *ngids)
{
	size_t		prefixlen = strlen(prefix);
	size_t		n = 0;

	*gids = NULL;
	*ngids = 0;
	if (prefixlen == 0)
		return 0;
	pthread_mutex_lock(&store->reg->prepared_lock);
	if (store->reg->nprepared > 0 &&
		(*gids = tc_arena_alloc(arena, store->reg->nprepared * sizeof(char *))) == NULL)
	{
		pthread_mutex_unlock(&store->reg->prepared_lock);
		return -1;
	}
	for (size_t i = 0; i < store->reg->nprepared; i++)
	{
		TsPrepared *entry = store->reg->prepared[i];
		const char *shown = ts_gid_shown(entry, scope);

		if (entry->state == PREPARED_PREPARING || shown == NULL ||
			strncmp(shown, prefix, prefixlen) != 0)
			continue;
		if (((*gids)[n] = tc_arena_alloc(arena, strlen(shown) + 1)) == NULL)
		{
			pthread_mutex_unlock(&store->reg->prepared_lock);
			return -1;
		}
		strcpy((*gids)[n++], shown);
	}
	pthread_mutex_unlock(&store->reg->prepared_lock);
	*ngids = n;
	return 0;
}

static int
compare_entries(const void *a, const void *b)
{
	return strcmp((*(TsPrepared *const *) a)->gid, (*(TsPrepared *const *) b)->gid);
}

int
ts_store_list_prepared(TsStore *store, const char *prefix, const char *scope, TcArena *arena,
					   Tcopy__PreparedList *list, TsError *err)
{
	size_t		prefixlen = prefix != NULL ? strlen(prefix) : 0;
	size_t		n = 0;
	int			result = 0;

	pthread_mutex_lock(&store->reg->prepared_lock);
	if (store->reg->nprepared > 1)
		qsort(store->reg->prepared, store->reg->nprepared, sizeof(TsPrepared *), compare_entries);
	list->sessions = tc_arena_alloc(arena, (store->reg->nprepared + 1) * sizeof(Tcopy__PreparedSession *));
	for (size_t i = 0; list->sessions != NULL && i < store->reg->nprepared; i++)
	{
		TsPrepared *entry = store->reg->prepared[i];
		const char *shown = ts_gid_shown(entry, scope);
		Tcopy__PreparedSession *s;
		char	   *gid;

		if (entry->state == PREPARED_PREPARING || shown == NULL ||
			strncmp(shown, prefix != NULL ? prefix : "", prefixlen) != 0)
			continue;
		s = tc_arena_alloc(arena, sizeof(Tcopy__PreparedSession));
		gid = tc_arena_alloc(arena, strlen(shown) + 1);
		if (s == NULL || gid == NULL)
		{
			list->sessions = NULL;
			break;
		}
		tcopy__prepared_session__init(s);
		s->gid = strcpy(gid, shown);
		s->rows = entry->rows;
		s->bytes = entry->bytes;
		s->prepared_at_ms = entry->prepared_at_ms;
		s->attached = entry->owner != 0;
		list->sessions[n++] = s;
	}
	if (list->sessions == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory listing prepared sessions");
		result = -1;
		n = 0;
	}
	list->n_sessions = n;
	pthread_mutex_unlock(&store->reg->prepared_lock);
	/* a session left out was resolved, synced (ts_publish.c): forgettable */
	return result;
}

void
ts_prepared_free_all(TsStore *store)
{
	for (size_t i = 0; i < store->reg->nprepared; i++)
	{
		free(store->reg->prepared[i]->gid);
		free(store->reg->prepared[i]->scope_prefix);
		free(store->reg->prepared[i]->tables);
		free(store->reg->prepared[i]);
	}
	free(store->reg->prepared);
	store->reg->prepared = NULL;
	store->reg->nprepared = store->reg->prepared_cap = 0;
}

/* ---- staging directories ---- */

/* Is name one of names[n]? */
static bool
names_contain(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* The staging directories of the prepared sessions, which stay. */
typedef struct KeptDirs
{
	char	  **names;
	size_t		n;
} KeptDirs;

/* ts_prepared_clean_staging's step per record: its directory kept. */
static int
keep_dir(TsStore *store, const Tstore__PreparedRecord *rec, void *arg, TsError *err)
{
	KeptDirs   *kept = arg;
	char	  **grown;

	if (rec->sst == NULL)
		return 0;
	grown = realloc(kept->names, (kept->n + 1) * sizeof(char *));
	if (grown == NULL || (grown[kept->n] = strdup(rec->sst->dir)) == NULL)
	{
		kept->names = grown != NULL ? grown : kept->names;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	kept->names = grown;
	kept->n++;
	return 0;
}

int
ts_prepared_clean_staging(TsStore *store, TsError *err)
{
	KeptDirs	kept = {NULL, 0};
	DIR		   *d;
	struct dirent *entry;
	int			result;

	result = ts_prepared_each(store, keep_dir, &kept, err);
	if (result == 0 && (d = opendir(store->staging_dir)) != NULL)
	{
		while ((entry = readdir(d)) != NULL)
		{
			char		path[SESSION_DIR_SIZE];

			if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0 ||
				names_contain(kept.names, kept.n, entry->d_name))
				continue;
			snprintf(path, sizeof(path), "%s/%s", store->staging_dir, entry->d_name);
			if (ts_remove_tree(path) != 0 && unlink(path) != 0 && errno != ENOENT)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
							 "could not remove \"%s\": %s", path, strerror(errno));
				result = -1;
				break;
			}
		}
		closedir(d);
	}
	for (size_t i = 0; i < kept.n; i++)
		free(kept.names[i]);
	free(kept.names);
	return result;
}
