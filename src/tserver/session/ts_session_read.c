/*
 * ts_session_read.c
 *		Reading an open session's writes: the registry of open sessions,
 *		and the overlay a scan merges over the committed rows, so that a
 *		transaction reads its own inserts, updates, deletes and truncates.
 *
 * A session is registered from its BEGIN until its prepare (or its end),
 * under the store's sessions_lock (which ts_sessions_list walks too, to
 * show the open sessions), with a 16-byte random key that BEGIN_OK
 * gives its client: a scan must name both, so no one but the client that
 * began it reads it.  A scan (on another connection, in another thread)
 * copies the session's records of its table and key range under the
 * session's lock, which ts_session_write and ts_session_table_op hold
 * while they change what is staged, and which an unregistering thread
 * takes once to wait out a copy in progress.  The copy is sorted by key,
 * ties by arrival, and of each key only the last record is kept, as the
 * publish would keep it.
 *
 * A session that spilled is read from its files too, oldest first: the
 * direct SST files of its sorted spills (through a RocksDB instance of the
 * session's own, read_db, as the C API reads no SST file by itself), then
 * its runs (their merge, ts_run_merge), then what is staged.  Where the
 * line is: what a scan reads from disk is held in memory until it ends, at
 * most --session-memory-mb of it; a scan whose range holds more of the
 * session's spilled rows is refused with ERROR_UNREADABLE, never answered
 * with stale rows.  A point or short range read of a large load is cheap:
 * the runs are entered at their sparse indexes, the SST files by a seek.
 */
#include "ts_session_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_clock.h"
#include "ts_log.h"
#include "ts_record.h"

void
ts_sessions_init(TsStore *store)
{
	pthread_mutex_init(&store->reg->sessions_lock, NULL);
}

void
ts_sessions_destroy(TsStore *store)
{
	pthread_mutex_destroy(&store->reg->sessions_lock);
}

int
ts_session_register(TsSession *session)
{
	TsStore    *store = session->store;
	if (ts_random_key(session->key, sizeof(session->key)) != 0)
		return -1;
	pthread_mutex_lock(&store->reg->sessions_lock);
	session->reg_next = store->reg->sessions;
	if (store->reg->sessions != NULL)
		store->reg->sessions->reg_prev = session;
	store->reg->sessions = session;
	session->registered = true;
	pthread_mutex_unlock(&store->reg->sessions_lock);
	return 0;
}

int
ts_session_set_client(TsSession *session, uint64_t system, uint32_t database, uint32_t pid,
					  const char *scope, size_t scope_len)
{
	char	   *copy = NULL;

	if (scope != NULL && (copy = malloc(scope_len + 1)) == NULL)
		return -1;
	if (copy != NULL)
	{
		memcpy(copy, scope, scope_len);
		copy[scope_len] = '\0';
	}
	/* under the lock: ts_sessions_list reads them from another thread */
	pthread_mutex_lock(&session->store->reg->sessions_lock);
	session->client_system = system;
	session->client_database = database;
	session->client_pid = pid;
	free(session->scope);
	session->scope = copy;
	session->scope_len = scope_len;
	pthread_mutex_unlock(&session->store->reg->sessions_lock);
	return 0;
}

/* Whether a connection of namespace scope (NULL: full access) may see session. */
static bool
session_visible(const TsSession *session, const char *scope, size_t scope_len)
{
	return scope == NULL ||
		(session->scope != NULL && session->scope_len == scope_len &&
		 memcmp(session->scope, scope, scope_len) == 0);
}

ssize_t
ts_sessions_list(TsStore *store, const char *scope, size_t scope_len, Tcopy__SessionInfo **out)
{
	uint64_t	now = ts_monotonic_us();
	size_t		n = 0;
	size_t		i = 0;

	pthread_mutex_lock(&store->reg->sessions_lock);
	for (TsSession *s = store->reg->sessions; s != NULL; s = s->reg_next)
		n += session_visible(s, scope, scope_len);
	*out = calloc(n > 0 ? n : 1, sizeof(Tcopy__SessionInfo));
	if (*out == NULL)
	{
		pthread_mutex_unlock(&store->reg->sessions_lock);
		return -1;
	}
	for (TsSession *s = store->reg->sessions; s != NULL && i < n; s = s->reg_next)
	{
		Tcopy__SessionInfo *info = &(*out)[i];

		if (!session_visible(s, scope, scope_len))
			continue;
		tcopy__session_info__init(info);
		info->id = s->id;
		info->age_ms = now > s->began_us ? (now - s->began_us) / 1000 : 0;
		info->client_system = s->client_system;
		info->client_database = s->client_database;
		info->client_pid = s->client_pid;
		info->spilled_bytes = atomic_load(&s->spilled_now);
		/* what is staged changes under its lock (and a spill starts so) */
		pthread_mutex_lock(&s->lock);
		info->state = (char *) (s->spill.running ? "spilling" : "writing");
		info->rows = s->rows;
		info->staged_bytes = s->staged.len;
		info->tables = (uint32_t) s->ntables;
		pthread_mutex_unlock(&s->lock);
		i++;
	}
	pthread_mutex_unlock(&store->reg->sessions_lock);
	return (ssize_t) i;
}

void
ts_session_unregister(TsSession *session)
{
	TsStore    *store = session->store;

	if (!session->registered)
		return;
	pthread_mutex_lock(&store->reg->sessions_lock);
	if (session->reg_prev != NULL)
		session->reg_prev->reg_next = session->reg_next;
	else
		store->reg->sessions = session->reg_next;
	if (session->reg_next != NULL)
		session->reg_next->reg_prev = session->reg_prev;
	session->registered = false;
	pthread_mutex_unlock(&store->reg->sessions_lock);
	/* a scan that found it before may still be copying: wait for it */
	pthread_mutex_lock(&session->lock);
	pthread_mutex_unlock(&session->lock);
	ts_session_read_db_reset(session);
}

void
ts_session_read_db_reset(TsSession *session)
{
	char		path[SESSION_PATH_SIZE];

	if (session->read_db == NULL)
		return;
	rocksdb_close(session->read_db);
	session->read_db = NULL;
	session->read_db_files = 0;
	snprintf(path, sizeof(path), "%s/read-db", session->dir);
	if (ts_remove_tree(path) != 0)
		ts_log(TS_LOG_WARNING, "could not remove \"%s\": %s", path, strerror(errno));
}

/*
 * The session's records in the scan's range, as they are collected: each
 * with its rank (later sources and later records rank higher), to be
 * sorted by key and rank.
 */
typedef struct OverlaySort
{
	TsOverlayRow row;
	size_t		seq;
	bool		marked;			/* an UPDATE or DELETE */
} OverlaySort;

typedef struct OverlayCollect
{
	TsOverlay  *overlay;
	OverlaySort *rows;
	size_t		n;
	size_t		cap;
	const TcBuf *lower;
	const TcBuf *upper;
	uint64_t	spilled_bytes;	/* of the rows read from disk */
	uint64_t	spilled_max;
	bool		too_large;
} OverlayCollect;

static int
overlay_compare(const void *a, const void *b)
{
	const OverlaySort *x = a;
	const OverlaySort *y = b;
	int			cmp = ts_key_compare(x->row.key, x->row.keylen, y->row.key, y->row.keylen);

	if (cmp != 0)
		return cmp;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool
in_range(const OverlayCollect *c, const uint8_t *key, uint32_t keylen)
{
	return ts_key_compare(key, keylen, c->lower->data, (uint32_t) c->lower->len) >= 0 &&
		(c->upper->len == 0 ||
		 ts_key_compare(key, keylen, c->upper->data, (uint32_t) c->upper->len) < 0);
}

/* Copy one record (value marked, or not) into the collection. */
static int
overlay_add(OverlayCollect *c, const uint8_t *key, uint32_t keylen, const uint8_t *value,
			uint32_t valuelen, bool deleted)
{
	OverlaySort *out;

	if (c->n == c->cap)
	{
		size_t		grown = c->cap ? c->cap * 2 : 64;
		OverlaySort *more = realloc(c->rows, grown * sizeof(OverlaySort));

		if (more == NULL)
			return -1;
		c->rows = more;
		c->cap = grown;
	}
	out = &c->rows[c->n];
	out->seq = c->n;
	out->row.keylen = keylen;
	out->row.yields = false;
	out->row.key = tc_arena_memdup(&c->overlay->arena, key, keylen);
	if (out->row.key == NULL)
		return -1;
	out->marked = deleted || ts_value_mark(value, valuelen) != 0;
	if (deleted || ts_value_mark(value, valuelen) == TS_VALUE_DELETE)
	{
		out->row.value = NULL;
		out->row.valuelen = 0;
	}
	else
	{
		value = ts_value_unmarked(value, &valuelen);
		out->row.valuelen = valuelen;
		/* an empty value is not NULL, which means deleted */
		out->row.value = tc_arena_memdup(&c->overlay->arena,
										 valuelen > 0 ? value : (const uint8_t *) "",
										 valuelen > 0 ? valuelen : 1);
		if (out->row.value == NULL)
			return -1;
	}
	c->n++;
	return 0;
}

/* A record read from disk: counted against the limit. */
static int
overlay_add_spilled(OverlayCollect *c, const uint8_t *key, uint32_t keylen,
					const uint8_t *value, uint32_t valuelen, bool deleted)
{
	c->spilled_bytes += (uint64_t) keylen + valuelen + 16;
	if (c->spilled_bytes > c->spilled_max)
	{
		c->too_large = true;
		return -1;
	}
	return overlay_add(c, key, keylen, value, valuelen, deleted);
}

/* A TsRunPut of the runs' merge. */
static int
overlay_put_run(void *arg, const uint8_t *key, uint32_t keylen, const uint8_t *value,
				uint32_t valuelen, TsError *err)
{
	OverlayCollect *c = arg;

	if (overlay_add_spilled(c, key, keylen, value, valuelen, false) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory reading a session");
	return -1;
}

/* Open the session's read DB (in its staging directory), once. */
static int
read_db_open(TsSession *session, TsError *err)
{
	char		path[SESSION_PATH_SIZE];
	char	   *errptr = NULL;
	rocksdb_options_t *options;

	if (session->read_db != NULL)
		return 0;
	snprintf(path, sizeof(path), "%s/read-db", session->dir);
	options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(options, 1);
	rocksdb_options_set_max_open_files(options, 64);
	session->read_db = rocksdb_open(options, path, &errptr);
	rocksdb_options_destroy(options);
	if (errptr != NULL)
	{
		session->read_db = NULL;
		ts_error_rocksdb(err, "could not open a session's read DB", errptr);
		return -1;
	}
	return 0;
}

/*
 * Read the session's direct SST files in the range.  RocksDB's C API reads
 * no SST file by itself, so the files are ingested, as hard links, into a
 * DB of the session's own (files of a sorted session do not overlap, so
 * they go in untouched, at sequence number 0), whose iterator reads them;
 * the file being written is finished first.  That DB hides the keys the
 * files delete: the session keeps those (direct_deletes).
 */
static int
overlay_read_direct(TsSession *session, OverlayCollect *c, TsError *err)
{
	SstSink    *sink = session->sst;
	rocksdb_readoptions_t *read_options;
	rocksdb_iterator_t *it;
	char	   *errptr = NULL;
	size_t		at = 0;
	int			result = 0;

	if (sink->writer != NULL && ts_sst_sink_finish_file(sink, err) != 0)
		return -1;
	if (sink->nfiles > session->read_db_files)
	{
		size_t		n = sink->nfiles - session->read_db_files;
		char	  **links = calloc(n, sizeof(char *));
		rocksdb_ingestexternalfileoptions_t *options;

		if (links == NULL || read_db_open(session, err) != 0)
		{
			free(links);
			if (links == NULL)
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			return -1;
		}
		for (size_t i = 0; i < n && result == 0; i++)
		{
			char		path[SESSION_PATH_SIZE];

			snprintf(path, sizeof(path), "%s/read-%06zu.sst", session->dir,
					 session->read_db_files + i);
			if ((links[i] = strdup(path)) == NULL)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
				result = -1;
			}
			else if (link(sink->files[session->read_db_files + i], path) != 0)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
							 "could not link \"%s\": %s", path, strerror(errno));
				result = -1;
			}
		}
		if (result == 0)
		{
			options = rocksdb_ingestexternalfileoptions_create();
			rocksdb_ingestexternalfileoptions_set_move_files(options, 1);
			rocksdb_ingestexternalfileoptions_set_allow_global_seqno(options, 1);
			rocksdb_ingest_external_file(session->read_db, (const char *const *) links, n,
										 options, &errptr);
			rocksdb_ingestexternalfileoptions_destroy(options);
			if (errptr != NULL)
			{
				ts_error_rocksdb(err, "could not read a session's SST files", errptr);
				result = -1;
			}
			else
				session->read_db_files = sink->nfiles;
		}
		for (size_t i = 0; i < n; i++)
		{
			if (links[i] != NULL && result != 0)
				(void) unlink(links[i]);
			free(links[i]);
		}
		free(links);
		if (result != 0)
			return -1;
	}
	if (session->read_db == NULL)
		return 0;

	read_options = rocksdb_readoptions_create();
	it = rocksdb_create_iterator(session->read_db, read_options);
	rocksdb_iter_seek(it, (const char *) c->lower->data, c->lower->len);
	for (; rocksdb_iter_valid(it) && result == 0; rocksdb_iter_next(it))
	{
		size_t		keylen,
					valuelen;
		const uint8_t *key = (const uint8_t *) rocksdb_iter_key(it, &keylen);
		const uint8_t *value = (const uint8_t *) rocksdb_iter_value(it, &valuelen);

		if (!in_range(c, key, (uint32_t) keylen))
			break;
		if (overlay_add_spilled(c, key, (uint32_t) keylen, value, (uint32_t) valuelen, false) != 0)
			result = -1;
	}
	if (result == 0)
	{
		rocksdb_iter_get_error(it, &errptr);
		if (errptr != NULL)
		{
			ts_error_rocksdb(err, "could not read a session's SST files", errptr);
			result = -2;
		}
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(read_options);
	if (result == -2)
		return -1;

	/* the keys the files delete */
	while (result == 0 && at < session->direct_deletes.len)
	{
		uint32_t	keylen;
		const uint8_t *key = session->direct_deletes.data + at + 4;

		memcpy(&keylen, session->direct_deletes.data + at, 4);
		at += 4 + (size_t) keylen;
		if (in_range(c, key, keylen) &&
			overlay_add_spilled(c, key, keylen, NULL, 0, true) != 0)
			result = -1;
	}
	if (result != 0 && !c->too_large)
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory reading a session");
	return result;
}

/* Read the session's runs in the range: their merge, the latest run winning. */
static int
overlay_read_runs(TsSession *session, OverlayCollect *c, TsError *err)
{
	char	  **paths = calloc(session->nruns, sizeof(char *));
	TcBuf		hi = {0};
	int			result = 0;

	if (paths == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	for (uint32_t r = 0; r < session->nruns && result == 0; r++)
	{
		if ((paths[r] = malloc(SESSION_PATH_SIZE)) == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			result = -1;
		}
		else
			ts_session_run_path(session, r, paths[r], SESSION_PATH_SIZE);
	}
	/* an empty hi is no bound, as the scan's empty upper */
	if (result == 0)
	{
		hi = *c->upper;
		result = ts_run_merge(paths, session->run_indexes, session->nruns, c->lower, &hi,
							  NULL, overlay_put_run, c, err);
	}
	for (uint32_t r = 0; r < session->nruns; r++)
		free(paths[r]);
	free(paths);
	return result;
}

int
ts_session_overlay(TsStore *store, uint64_t session_id, const uint8_t *key, size_t keylen,
				   const TsTable *table, const TcBuf *lower, const TcBuf *upper,
				   TsOverlay *overlay, TsError *err)
{
	TsSession  *session;
	OverlayCollect c;
	int			result = -1;

	memset(overlay, 0, sizeof(*overlay));
	memset(&c, 0, sizeof(c));
	tc_arena_init(&overlay->arena, 16 * 1024);
	c.overlay = overlay;
	c.lower = lower;
	c.upper = upper;
	pthread_mutex_lock(&store->reg->sessions_lock);
	for (session = store->reg->sessions; session != NULL; session = session->reg_next)
		if (session->id == session_id)
			break;
	if (session == NULL || keylen != sizeof(session->key) ||
		memcmp(session->key, key, keylen) != 0)
	{
		pthread_mutex_unlock(&store->reg->sessions_lock);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SESSION_LOST,
					 "the scan names no open write session of this id and key");
		return -1;
	}
	pthread_mutex_lock(&session->lock);
	pthread_mutex_unlock(&store->reg->sessions_lock);

	overlay->hides_stored = ids_contain(session->truncates, session->ntruncates, table->id);
	if (!ids_contain(session->tables, session->ntables, table->id))
	{
		result = 0;
		goto done;
	}

	/*
	 * What spilled, oldest first: the direct SST files, then the runs
	 * (the spill in progress, if any, is waited for: its records are in
	 * one of them then).  What a scan reads from disk is held in memory
	 * until the scan ends: at most the session's memory limit of it.
	 */
	c.spilled_max = store->opts.session_memory_bytes;
	if (ts_spill_wait(session, err) != 0)
		goto done;
	if ((session->sst != NULL && overlay_read_direct(session, &c, err) != 0) ||
		(session->nruns > 0 && overlay_read_runs(session, &c, err) != 0))
	{
		if (c.too_large)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNREADABLE,
						 "the write session's rows in the range read take more than %llu MB "
						 "of its spilled files (--session-memory-mb)",
						 (unsigned long long) (c.spilled_max / (1024 * 1024)));
			err->table_id = table->id;
		}
		goto done;
	}
	/* then what is staged in memory, newest */
	for (size_t i = 0; i < session->noffsets; i++)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	reckeylen = ts_record_keylen(rec);

		if (in_range(&c, ts_record_key(rec), reckeylen) &&
			overlay_add(&c, ts_record_key(rec), reckeylen, ts_record_value(rec, reckeylen),
						ts_record_valuelen(rec), false) != 0)
			goto oom;
	}
	if (c.n > 1)
		qsort(c.rows, c.n, sizeof(OverlaySort), overlay_compare);
	overlay->rows = malloc((c.n ? c.n : 1) * sizeof(TsOverlayRow));
	if (overlay->rows == NULL)
		goto oom;
	for (size_t i = 0; i < c.n;)
	{
		size_t		j = i + 1;
		bool		marked = c.rows[i].marked;
		Tcopy__OnConflict policy = ts_conflicts_policy(&session->conflicts, c.rows[i].row.key,
													   c.rows[i].row.keylen);
		TsOverlayRow *row;

		while (j < c.n && c.rows[j].row.keylen == c.rows[i].row.keylen &&
			   memcmp(c.rows[j].row.key, c.rows[i].row.key, c.rows[i].row.keylen) == 0)
			marked |= c.rows[j++].marked;
		/*
		 * What the publish keeps: with an UPDATE or DELETE among them the
		 * last, else as on_conflict says; under ignore, an insert yields to
		 * a stored row of its key (ts_stored_check)
		 */
		if (!marked && policy == TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE)
		{
			row = &overlay->rows[overlay->n++];
			*row = c.rows[i].row;
			row->yields = !overlay->hides_stored;
		}
		else
			overlay->rows[overlay->n++] = c.rows[j - 1].row;
		i = j;
	}
	result = 0;
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory reading a session");
done:
	pthread_mutex_unlock(&session->lock);
	free(c.rows);
	if (result != 0)
		ts_overlay_free(overlay);
	return result;
}

void
ts_overlay_free(TsOverlay *overlay)
{
	free(overlay->rows);
	overlay->rows = NULL;
	overlay->n = 0;
	tc_arena_free(&overlay->arena);
}
