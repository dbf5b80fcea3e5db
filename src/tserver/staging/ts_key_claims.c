/*
 * ts_key_claims.c
 *		Duplicate keys across concurrent sessions (docs/storage.md,
 *		"Concurrent sessions").
 *
 * A session checks its keys against the stored rows (ts_stored_check):
 * during the load for the keys it spills, at prepare for the others.  What
 * that cannot see is a session that prepared and is not yet published, or
 * one published after the check looked.  So each session with a policy
 * claims, at prepare, the range of keys it wrote of each policy table, and
 * checks the claims already there:
 *
 *   - a prepared (unpublished) session's claim, always: with both sessions
 *     never spilled, key by key (the claim keeps the keys); a common key
 *     fails the later session, under 'error' as a duplicate, under 'ignore'
 *     as a serialization failure (the first may still be discarded, so
 *     neither keeping nor dropping the row is right);
 *   - a published session's claim, only if this session spilled and it
 *     was published after this session began to (ts_key_claims_watch: its
 *     first check against the stored rows): a never-spilled session
 *     checks the stored rows at prepare, under this file's lock, which the
 *     publisher takes after its rows are stored, so it saw them.
 *
 * Where the keys of either side are in SST files, which RocksDB's C API
 * cannot read back, overlapping ranges are a serialization failure: the
 * transaction that commits second fails, and a retry checks the stored
 * rows.  So a load into a range no concurrent load touches, the bulk
 * loader's case, pays two key copies per row (its range) and nothing else.
 *
 * A claim lives from prepare until the session is discarded, or, once
 * published, until every session that was watching before the publish is
 * gone.  A session watches from its first check against the stored rows
 * before its prepare (its first spill, or the merge at prepare), and the
 * watching sessions are kept in the order they began to, so the first
 * one's start is the horizon; with no session spilling, a published claim
 * goes at once.  A prepared session restored at startup claims
 * every key of its policy tables (its record lists them, not its keys).
 *
 * key_claims_lock is taken before tables_lock (a duplicate's report reads
 * the table), never while holding any other lock of the store.
 */
#include "ts_staging.h"

#include <stdlib.h>
#include <string.h>

#include "tc_array.h"
#include "ts_key.h"
#include "ts_record.h"

struct TsKeyClaim
{
	uint64_t	session_id;
	bool		published;
	uint64_t	published_seq;	/* store->publish_seq once published */
	bool		whole;			/* restored: every key of the ranges' tables */
	TsKeyRanges ranges;
	bool		has_keys;		/* never spilled: its keys, while prepared */
	TcBuf		keys;			/* in key order, each be32 length then bytes */
};

/* ---- ranges ---- */

static bool
buf_set(TcBuf *buf, const uint8_t *data, uint32_t len)
{
	buf->len = 0;
	if (!tc_buf_reserve(buf, len > 0 ? len : 1))
		return false;
	memcpy(buf->data, data, len);
	buf->len = len;
	return true;
}

static int
buf_compare(const TcBuf *a, const uint8_t *b, uint32_t blen)
{
	return ts_key_compare(a->data, (uint32_t) a->len, b, blen);
}

/* table_id's range in ranges, made (empty) when missing; NULL: memory. */
static TsKeyRange *
range_get(TsKeyRanges *ranges, uint32_t table_id)
{
	TsKeyRange *r;

	for (uint32_t i = ranges->n; i > 0; i--)
		if (ranges->ranges[i - 1].table_id == table_id)
			return &ranges->ranges[i - 1];
	if (ranges->n == ranges->cap)
	{
		uint32_t	cap = ranges->cap ? ranges->cap * 2 : 2;
		TsKeyRange *grown = realloc(ranges->ranges, cap * sizeof(TsKeyRange));

		if (grown == NULL)
			return NULL;
		ranges->ranges = grown;
		ranges->cap = cap;
	}
	r = &ranges->ranges[ranges->n++];
	memset(r, 0, sizeof(*r));
	r->table_id = table_id;
	return r;
}

static int
range_widen(TsKeyRange *r, const uint8_t *first, uint32_t first_len,
			const uint8_t *last, uint32_t last_len)
{
	if (r->first.len == 0 || buf_compare(&r->first, first, first_len) > 0)
	{
		if (!buf_set(&r->first, first, first_len))
			return -1;
	}
	if (r->last.len == 0 || buf_compare(&r->last, last, last_len) < 0)
	{
		if (!buf_set(&r->last, last, last_len))
			return -1;
	}
	return 0;
}

int
ts_key_ranges_add(TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen)
{
	TsKeyRange *r;

	if (keylen < TS_TABLE_ID_SIZE)
		return 0;
	r = range_get(ranges, ts_get_be32(key));
	if (r == NULL)
		return -1;
	return range_widen(r, key, keylen, key, keylen);
}

bool
ts_key_ranges_contain(const TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen)
{
	uint32_t	table_id;

	if (keylen < TS_TABLE_ID_SIZE)
		return false;
	table_id = ts_get_be32(key);
	for (uint32_t i = 0; i < ranges->n; i++)
	{
		const TsKeyRange *r = &ranges->ranges[i];

		if (r->table_id == table_id)
			return r->first.len > 0 && buf_compare(&r->first, key, keylen) <= 0 &&
				buf_compare(&r->last, key, keylen) >= 0;
	}
	return false;
}

int
ts_key_ranges_merge(TsKeyRanges *into, const TsKeyRanges *from)
{
	for (uint32_t i = 0; i < from->n; i++)
	{
		const TsKeyRange *f = &from->ranges[i];
		TsKeyRange *r;

		if (f->first.len == 0)
			continue;
		r = range_get(into, f->table_id);
		if (r == NULL ||
			range_widen(r, f->first.data, (uint32_t) f->first.len,
						f->last.data, (uint32_t) f->last.len) != 0)
			return -1;
	}
	return 0;
}

void
ts_key_ranges_free(TsKeyRanges *ranges)
{
	for (uint32_t i = 0; i < ranges->n; i++)
	{
		tc_buf_free(&ranges->ranges[i].first);
		tc_buf_free(&ranges->ranges[i].last);
	}
	free(ranges->ranges);
	memset(ranges, 0, sizeof(*ranges));
}

void
ts_key_ranges_drop_table(TsKeyRanges *ranges, uint32_t table_id)
{
	uint32_t	out = 0;

	for (uint32_t i = 0; i < ranges->n; i++)
	{
		if (ranges->ranges[i].table_id == table_id)
		{
			tc_buf_free(&ranges->ranges[i].first);
			tc_buf_free(&ranges->ranges[i].last);
		}
		else
			ranges->ranges[out++] = ranges->ranges[i];
	}
	ranges->n = out;
}

/* Whether a and b (of one table) may hold a common key. */
static bool
ranges_overlap(const TsKeyRange *a, const TsKeyRange *b)
{
	return !(ts_key_compare(a->last.data, (uint32_t) a->last.len,
							b->first.data, (uint32_t) b->first.len) < 0 ||
			 ts_key_compare(b->last.data, (uint32_t) b->last.len,
							a->first.data, (uint32_t) a->first.len) < 0);
}

/* ---- the registry ---- */

void
ts_key_claims_init(TsStore *store)
{
	pthread_mutex_init(&store->staging->key_claims_lock, NULL);
}

static void
claim_free(TsKeyClaim *claim)
{
	ts_key_ranges_free(&claim->ranges);
	tc_buf_free(&claim->keys);
	free(claim);
}

void
ts_key_claims_free_all(TsStore *store)
{
	for (size_t i = 0; i < store->staging->nkey_claims; i++)
		claim_free(store->staging->key_claims[i]);
	free(store->staging->key_claims);
	store->staging->key_claims = NULL;
	store->staging->nkey_claims = 0;
	store->staging->key_claims_cap = 0;
	pthread_mutex_destroy(&store->staging->key_claims_lock);
}

static TsKeyClaim *
claim_find_locked(TsStore *store, uint64_t session_id, size_t *index)
{
	for (size_t i = 0; i < store->staging->nkey_claims; i++)
		if (store->staging->key_claims[i]->session_id == session_id)
		{
			if (index != NULL)
				*index = i;
			return store->staging->key_claims[i];
		}
	return NULL;
}

static void
claim_remove_locked(TsStore *store, size_t i)
{
	claim_free(store->staging->key_claims[i]);
	store->staging->key_claims[i] = store->staging->key_claims[--store->staging->nkey_claims];
}

static int
claim_add_locked(TsStore *store, TsKeyClaim *claim)
{
	if (!tc_array_reserve((void **) &store->staging->key_claims, store->staging->nkey_claims,
						  &store->staging->key_claims_cap, sizeof(TsKeyClaim *), 8))
		return -1;
	store->staging->key_claims[store->staging->nkey_claims++] = claim;
	return 0;
}

/* Drop the published claims that no watching session began before. */
static void
prune_locked(TsStore *store)
{
	uint64_t	horizon = store->staging->live_first != NULL ?
		store->staging->live_first->claims_seq : UINT64_MAX;

	for (size_t i = store->staging->nkey_claims; i > 0; i--)
	{
		TsKeyClaim *claim = store->staging->key_claims[i - 1];

		if (claim->published && claim->published_seq <= horizon)
			claim_remove_locked(store, i - 1);
	}
}

void
ts_key_claims_watch(TsSession *session)
{
	TsStore    *store = session->store;

	if (session->watching)
		return;
	pthread_mutex_lock(&store->staging->key_claims_lock);
	session->watching = true;
	session->claims_seq = store->staging->publish_seq;
	session->live_prev = store->staging->live_last;
	session->live_next = NULL;
	if (store->staging->live_last != NULL)
		store->staging->live_last->live_next = session;
	else
		store->staging->live_first = session;
	store->staging->live_last = session;
	pthread_mutex_unlock(&store->staging->key_claims_lock);
}

void
ts_key_claims_session_end(TsSession *session)
{
	TsStore    *store = session->store;
	TsKeyClaim *claim;
	size_t		i;

	if (!session->watching && !session->claimed)
		return;
	pthread_mutex_lock(&store->staging->key_claims_lock);
	if (session->watching)
	{
		if (session->live_prev != NULL)
			session->live_prev->live_next = session->live_next;
		else
			store->staging->live_first = session->live_next;
		if (session->live_next != NULL)
			session->live_next->live_prev = session->live_prev;
		else
			store->staging->live_last = session->live_prev;
		session->watching = false;
	}
	if (session->claimed && !session->claim_kept &&
		(claim = claim_find_locked(store, session->id, &i)) != NULL && !claim->published)
		claim_remove_locked(store, i);
	prune_locked(store);
	pthread_mutex_unlock(&store->staging->key_claims_lock);
}

void
ts_key_claims_keep(TsSession *session)
{
	session->claim_kept = true;
}

void
ts_key_claims_published(TsStore *store, uint64_t session_id)
{
	TsKeyClaim *claim;

	pthread_mutex_lock(&store->staging->key_claims_lock);
	claim = claim_find_locked(store, session_id, NULL);
	if (claim != NULL)
	{
		claim->published = true;
		claim->published_seq = ++store->staging->publish_seq;
		/* its keys are stored now: never-spilled sessions see them there */
		claim->has_keys = false;
		tc_buf_free(&claim->keys);
	}
	prune_locked(store);
	pthread_mutex_unlock(&store->staging->key_claims_lock);
}

void
ts_key_claims_release(TsStore *store, uint64_t session_id)
{
	size_t		i;

	pthread_mutex_lock(&store->staging->key_claims_lock);
	if (claim_find_locked(store, session_id, &i) != NULL)
		claim_remove_locked(store, i);
	pthread_mutex_unlock(&store->staging->key_claims_lock);
}

int
ts_key_claims_restore(TsStore *store, uint64_t session_id, const uint32_t *tables,
					  size_t n, TsError *err)
{
	TsKeyClaim *claim;

	if (n == 0)
		return 0;
	claim = calloc(1, sizeof(TsKeyClaim));
	if (claim == NULL)
		goto oom;
	claim->session_id = session_id;
	claim->whole = true;
	for (size_t i = 0; i < n; i++)
		if (range_get(&claim->ranges, tables[i]) == NULL)
			goto oom;
	pthread_mutex_lock(&store->staging->key_claims_lock);
	if (claim_add_locked(store, claim) != 0)
	{
		pthread_mutex_unlock(&store->staging->key_claims_lock);
		goto oom;
	}
	pthread_mutex_unlock(&store->staging->key_claims_lock);
	return 0;

oom:
	if (claim != NULL)
		claim_free(claim);
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory restoring key claims");
	return -1;
}

/* ---- prepare ---- */

/* Whether key's table has a policy that meets other sessions' keys. */
static bool
key_has_policy(const TsSession *session, const uint8_t *key, uint32_t keylen)
{
	return ts_conflicts_policy(&session->conflicts, key, keylen) !=
		TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE;
}

/*
 * A never-spilled session's keys of its policy tables, and their ranges
 * (its offsets are in key order).
 */
static int
memory_keys(TsSession *session, TsKeyRanges *ranges, TcBuf *keys)
{
	size_t		bytes = 0;

	for (size_t i = 0; i < session->noffsets; i++)
		bytes += 4 + ts_record_keylen(session->staged.data + session->offsets[i]);
	if (!tc_buf_reserve(keys, bytes))
		return -1;
	for (size_t i = 0; i < session->noffsets; i++)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		const uint8_t *key = ts_record_key(rec);

		/* an UPDATE or DELETE claims nothing: Postgres' locks order them */
		if (!key_has_policy(session, key, keylen) || ts_record_mark(rec) != 0)
			continue;
		if (ts_key_ranges_add_ascending(ranges, key, keylen) != 0)
			return -1;
		ts_put_be32(keys->data + keys->len, keylen);
		memcpy(keys->data + keys->len + 4, key, keylen);
		keys->len += 4 + keylen;
	}
	return 0;
}

/*
 * The first of the never-spilled session's staged records (in key order)
 * whose key claim's keys hold, or NULL.
 */
static const uint8_t *
common_key(const TsSession *session, const TsKeyClaim *claim)
{
	size_t		at = 0;
	size_t		i = 0;

	while (i < session->noffsets && at < claim->keys.len)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i];
		uint32_t	keylen = ts_record_keylen(rec);
		uint32_t	theirs_len = ts_get_be32(claim->keys.data + at);
		int			cmp = ts_key_compare(ts_record_key(rec), keylen,
										 claim->keys.data + at + 4, theirs_len);

		if (cmp == 0 && ts_record_mark(rec) == 0)
			return rec;
		if (cmp <= 0)
			i++;
		else
			at += 4 + theirs_len;
	}
	return NULL;
}

/*
 * The table of mine whose range overlaps one of claim's, or 0 (table ids
 * start at 1).
 */
static uint32_t
overlapping_table(const TsKeyRanges *mine, const TsKeyClaim *claim)
{
	for (uint32_t i = 0; i < mine->n; i++)
	{
		const TsKeyRange *a = &mine->ranges[i];

		if (a->first.len == 0)
			continue;
		for (uint32_t j = 0; j < claim->ranges.n; j++)
		{
			const TsKeyRange *b = &claim->ranges.ranges[j];

			if (b->table_id == a->table_id &&
				(claim->whole || (b->first.len > 0 && ranges_overlap(a, b))))
				return a->table_id;
		}
	}
	return 0;
}

/*
 * Check the session (ranges mine) against one other claim; 0, or -1 with
 * err.
 */
static int
check_claim(TsSession *session, bool in_memory, const TsKeyRanges *mine,
			const TsKeyClaim *claim, TsError *err)
{
	uint32_t	table_id;

	if (claim->session_id == session->id)
		return 0;
	if (claim->published &&
		(in_memory || !session->watching || claim->published_seq <= session->claims_seq))
		return 0;
	table_id = overlapping_table(mine, claim);
	if (table_id == 0)
		return 0;
	if (in_memory && claim->has_keys && !claim->published)
	{
		/* both key lists at hand: the ranges overlap, do the keys? */
		const uint8_t *rec = common_key(session, claim);
		uint32_t	keylen;

		if (rec == NULL)
			return 0;
		keylen = ts_record_keylen(rec);
		if (ts_conflicts_policy(&session->conflicts, ts_record_key(rec), keylen) ==
			TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR)
			return session->conflicts.report(session->conflicts.report_arg,
											 ts_record_key(rec), keylen,
											 ts_record_value(rec, keylen),
											 ts_record_valuelen(rec), err);
		table_id = ts_get_be32(ts_record_key(rec));
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SERIALIZATION,
				 "a concurrent session, %s, wrote keys of the table in the same range",
				 claim->published ? "published since this one began to spill" :
				 "prepared and not yet resolved");
	err->table_id = table_id;
	return -1;
}

int
ts_key_claims_prepare(TsSession *session,
					  int (*check_stored) (TsSession *session, TsError *err),
					  TsError *err)
{
	TsStore    *store = session->store;
	bool		in_memory = session->sst == NULL && session->nruns == 0;
	TsKeyClaim *claim = calloc(1, sizeof(TsKeyClaim));
	int			result = -1;

	if (claim == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory claiming keys");
		return -1;
	}
	claim->session_id = session->id;
	pthread_mutex_lock(&store->staging->key_claims_lock);
	if (in_memory)
	{
		if (check_stored(session, err) != 0)
			goto done;
		if (memory_keys(session, &claim->ranges, &claim->keys) != 0)
			goto oom;
		claim->has_keys = true;
	}
	else if (session->sst != NULL &&
			 ts_key_ranges_merge(&claim->ranges, &session->sst->ranges) != 0)
		goto oom;
	for (size_t i = 0; i < store->staging->nkey_claims; i++)
		if (check_claim(session, in_memory, &claim->ranges, store->staging->key_claims[i], err) != 0)
			goto done;
	if (claim->ranges.n > 0)
	{
		if (claim_add_locked(store, claim) != 0)
			goto oom;
		session->claimed = true;
		claim = NULL;
	}
	result = 0;
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory claiming keys");
done:
	pthread_mutex_unlock(&store->staging->key_claims_lock);
	if (claim != NULL)
		claim_free(claim);
	return result;
}
