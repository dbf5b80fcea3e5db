/*
 * ts_session_read.c
 *		Reading an open session's writes: the registry of open sessions,
 *		and the overlay a scan merges over the committed rows, so that a
 *		transaction reads its own inserts, updates, deletes and truncates.
 *
 * A session is registered from its BEGIN until its prepare (or its end),
 * under the store's sessions_lock, with a 16-byte random key that BEGIN_OK
 * gives its client: a scan must name both, so no one but the client that
 * began it reads it.  A scan (on another connection, in another thread)
 * copies the session's records of its table and key range under the
 * session's lock, which ts_session_write and ts_session_table_op hold
 * while they change what is staged, and which an unregistering thread
 * takes once to wait out a copy in progress.  The copy is sorted by key,
 * ties by arrival, and of each key only the last record is kept, as the
 * publish would keep it.
 *
 * Where the line is: only what is staged in memory can be read.  A session
 * that spilled (its writes outgrew half of --session-memory-mb, or the
 * sessions together outgrew --memory-mb) has records in SST files and runs,
 * which no iterator of RocksDB's C API reads; a scan of a table it wrote is
 * then refused with ERROR_UNREADABLE, never answered with stale rows.
 */
#include "ts_session_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ts_record.h"

void
ts_sessions_init(TsStore *store)
{
	pthread_mutex_init(&store->sessions_lock, NULL);
}

void
ts_sessions_destroy(TsStore *store)
{
	pthread_mutex_destroy(&store->sessions_lock);
}

int
ts_session_register(TsSession *session)
{
	TsStore    *store = session->store;
	size_t		got = 0;

	while (got < sizeof(session->key))
	{
		ssize_t		n = getrandom(session->key + got, sizeof(session->key) - got, 0);

		if (n < 0)
			return -1;
		got += (size_t) n;
	}
	pthread_mutex_lock(&store->sessions_lock);
	session->reg_next = store->sessions;
	if (store->sessions != NULL)
		store->sessions->reg_prev = session;
	store->sessions = session;
	session->registered = true;
	pthread_mutex_unlock(&store->sessions_lock);
	return 0;
}

void
ts_session_unregister(TsSession *session)
{
	TsStore    *store = session->store;

	if (!session->registered)
		return;
	pthread_mutex_lock(&store->sessions_lock);
	if (session->reg_prev != NULL)
		session->reg_prev->reg_next = session->reg_next;
	else
		store->sessions = session->reg_next;
	if (session->reg_next != NULL)
		session->reg_next->reg_prev = session->reg_prev;
	session->registered = false;
	pthread_mutex_unlock(&store->sessions_lock);
	/* a scan that found it before may still be copying: wait for it */
	pthread_mutex_lock(&session->lock);
	pthread_mutex_unlock(&session->lock);
}

static bool
ids_contain(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Order of overlay rows: by key, ties by arrival (the index in seq). */
typedef struct OverlaySort
{
	TsOverlayRow row;
	size_t		seq;
	bool		marked;			/* an UPDATE or DELETE */
} OverlaySort;

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

/* Copy the records of buf[offsets[0..n)] in [lower, upper) into rows. */
static int
overlay_collect(TsOverlay *overlay, OverlaySort **rows, size_t *nrows, size_t *cap,
				const TcBuf *buf, const uint32_t *offsets, size_t n,
				const TcBuf *lower, const TcBuf *upper)
{
	for (size_t i = 0; i < n; i++)
	{
		const uint8_t *rec = buf->data + offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		uint32_t	valuelen = ts_record_valuelen(rec);
		const uint8_t *key = ts_record_key(rec);
		const uint8_t *value = ts_record_value(rec, keylen);
		OverlaySort *out;

		if (ts_key_compare(key, keylen, lower->data, (uint32_t) lower->len) < 0 ||
			(upper->len > 0 && ts_key_compare(key, keylen, upper->data, (uint32_t) upper->len) >= 0))
			continue;
		if (*nrows == *cap)
		{
			size_t		grown = *cap ? *cap * 2 : 64;
			OverlaySort *more = realloc(*rows, grown * sizeof(OverlaySort));

			if (more == NULL)
				return -1;
			*rows = more;
			*cap = grown;
		}
		out = &(*rows)[*nrows];
		out->seq = *nrows;
		(*nrows)++;
		out->row.keylen = keylen;
		out->row.key = tc_arena_memdup(&overlay->arena, key, keylen);
		out->row.yields = false;
		out->marked = ts_value_mark(value, valuelen) != 0;
		if (out->row.key == NULL)
			return -1;
		if (ts_value_mark(value, valuelen) == TS_VALUE_DELETE)
		{
			out->row.value = NULL;
			out->row.valuelen = 0;
			continue;
		}
		value = ts_value_unmarked(value, &valuelen);
		out->row.valuelen = valuelen;
		out->row.value = tc_arena_memdup(&overlay->arena, valuelen > 0 ? value : (const uint8_t *) "", valuelen > 0 ? valuelen : 1);
		if (out->row.value == NULL)
			return -1;
	}
	return 0;
}

int
ts_session_overlay(TsStore *store, uint64_t session_id, const uint8_t *key, size_t keylen,
				   const TsTable *table, const TcBuf *lower, const TcBuf *upper,
				   TsOverlay *overlay, TsError *err)
{
	TsSession  *session;
	OverlaySort *rows = NULL;
	size_t		nrows = 0,
				cap = 0;
	int			result = -1;

	memset(overlay, 0, sizeof(*overlay));
	tc_arena_init(&overlay->arena, 16 * 1024);
	pthread_mutex_lock(&store->sessions_lock);
	for (session = store->sessions; session != NULL; session = session->reg_next)
		if (session->id == session_id)
			break;
	if (session == NULL || keylen != sizeof(session->key) ||
		memcmp(session->key, key, keylen) != 0)
	{
		pthread_mutex_unlock(&store->sessions_lock);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "scan names no open write session of this id and key");
		return -1;
	}
	pthread_mutex_lock(&session->lock);
	pthread_mutex_unlock(&store->sessions_lock);

	overlay->hides_stored = ids_contain(session->truncates, session->ntruncates, table->id);
	if (!ids_contain(session->tables, session->ntables, table->id))
	{
		result = 0;
		goto done;
	}
	if (session->spill.running || session->nruns > 0 || session->sst != NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_UNREADABLE,
					 "the write session spilled to disk: more than %llu MB staged",
					 (unsigned long long) (store->opts.session_memory_bytes / 2 / (1024 * 1024)));
		err->table_id = table->id;
		goto done;
	}
	if (overlay_collect(overlay, &rows, &nrows, &cap, &session->staged, session->offsets,
						session->noffsets, lower, upper) != 0)
		goto oom;
	qsort(rows, nrows, sizeof(OverlaySort), overlay_compare);
	overlay->rows = malloc((nrows ? nrows : 1) * sizeof(TsOverlayRow));
	if (overlay->rows == NULL)
		goto oom;
	for (size_t i = 0; i < nrows;)
	{
		size_t		j = i + 1;
		bool		marked = rows[i].marked;
		Tcopy__OnConflict policy = ts_conflicts_policy(&session->conflicts, rows[i].row.key,
													   rows[i].row.keylen);
		TsOverlayRow *row;

		while (j < nrows && rows[j].row.keylen == rows[i].row.keylen &&
			   memcmp(rows[j].row.key, rows[i].row.key, rows[i].row.keylen) == 0)
			marked |= rows[j++].marked;
		/*
		 * What the publish keeps: with an UPDATE or DELETE among them the
		 * last, else as on_conflict says; under ignore, an insert yields to
		 * a stored row of its key (ts_stored_check)
		 */
		if (!marked && policy == TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE)
		{
			row = &overlay->rows[overlay->n++];
			*row = rows[i].row;
			row->yields = !overlay->hides_stored;
		}
		else
			overlay->rows[overlay->n++] = rows[j - 1].row;
		i = j;
	}
	result = 0;
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory reading a session");
done:
	pthread_mutex_unlock(&session->lock);
	free(rows);
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
