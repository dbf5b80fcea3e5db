/*
 * ts_labels.c
 *		Load labels: a client's name for one load into a table, published
 *		atomically with the session that carries the load's rows, so that a
 *		load retried under the same label after any failure is loaded once.
 *
 * A published label is a key of the meta family, "label:" be32(table id)
 * label, whose value is a LabelRecord (proto/ts_store.proto): written in
 * the same WriteBatch as the session's rows (a never-spilled session) or
 * as the last step of its publish (a spilled one, with the deletion of its
 * record), so that it is there exactly when the rows are.  A truncate or a
 * drop of the table deletes its labels in the same batch as its rows.
 *
 * Between the claim (TableOp LOAD_LABEL, at the start of the load) and the
 * publish or the discard, the label is claimed: an entry of the claims
 * registry (TsStore.claims, under labels_lock), held by the open session
 * (its id) or, once prepared, by the prepared session (its gid; its record
 * lists its labels, and a restart claims them again).  A claim is
 * exclusive: a second session asking for the same label is told BUSY (or
 * PREPARED when the holder is an orphaned prepared session, which only a
 * Resolve ends), and asks again later.  So two sessions never both hold a
 * label, and a label is published at most once.  The published key is
 * written before the claim is released, and a claim is checked before the
 * published key under labels_lock, so a claimer never sees neither.
 */
#include "ts_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tc_array.h"
#include "tc_client.h"
#include "ts_clock.h"
#include "ts_log.h"
#include "ts_store.pb-c.h"

_Static_assert(TS_LABEL_MAX == TC_LABEL_MAX, "the tserver's and the client's label limits differ");

struct TsLabelClaim
{
	uint32_t	table_id;
	char	   *label;
	uint64_t	session_id;		/* the open session holding it, or 0 */
	char	   *gid;			/* the prepared session holding it, or NULL */
};

/* A label a client may use: 1 .. TS_LABEL_MAX bytes.  0, or -1 with err. */
static int
label_check(const char *label, TsError *err)
{
	size_t		len = label != NULL ? strlen(label) : 0;

	if (len == 0 || len > TS_LABEL_MAX)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a load label must have 1 to %d bytes, not %zu", TS_LABEL_MAX, len);
		return -1;
	}
	return 0;
}

/* The meta key of table_id's label into key (TS_LABEL_KEY_MAX); its length. */
static size_t
label_key(uint32_t table_id, const char *label, char *key)
{
	size_t		prefix = strlen(TS_META_LABEL_PREFIX);
	size_t		len = label != NULL ? strlen(label) : 0;

	memcpy(key, TS_META_LABEL_PREFIX, prefix);
	ts_put_be32((uint8_t *) key + prefix, table_id);
	if (len > 0)
		memcpy(key + prefix + TS_TABLE_ID_SIZE, label, len);
	return prefix + TS_TABLE_ID_SIZE + len;
}

void
ts_labels_batch_publish(TsStore *store, rocksdb_writebatch_t *wb,
						const TsLabelRef *labels, size_t n, const char *gid)
{
	uint64_t	now = ts_realtime_ms();

	for (size_t i = 0; i < n; i++)
	{
		Tstore__LabelRecord rec = TSTORE__LABEL_RECORD__INIT;
		uint8_t		value[64 + TS_GID_MAX];
		char		key[TS_LABEL_KEY_MAX];
		size_t		keylen = label_key(labels[i].table_id, labels[i].label, key);

		rec.published_at_ms = now;
		rec.gid = (char *) (gid != NULL ? gid : "");
		rocksdb_writebatch_put_cf(wb, store->cf_meta, key, keylen, (const char *) value,
								  tstore__label_record__pack(&rec, value));
	}
}

void
ts_labels_batch_delete_table(TsStore *store, rocksdb_writebatch_t *wb, uint32_t table_id)
{
	char		begin[TS_LABEL_KEY_MAX],
				end[TS_LABEL_KEY_MAX];
	size_t		begin_len = label_key(table_id, NULL, begin);
	size_t		end_len = label_key(table_id + 1, NULL, end);

	rocksdb_writebatch_delete_range_cf(wb, store->cf_meta, begin, begin_len, end, end_len);
}

/* The claim of (table_id, label), or NULL; call with labels_lock held. */
static TsLabelClaim *
claim_find_locked(TsStore *store, uint32_t table_id, const char *label)
{
	for (size_t i = 0; i < store->reg->nclaims; i++)
		if (store->reg->claims[i].table_id == table_id && strcmp(store->reg->claims[i].label, label) == 0)
			return &store->reg->claims[i];
	return NULL;
}

/* Add a claim; call with labels_lock held.  0, or -1 with err. */
static int
claim_add_locked(TsStore *store, uint32_t table_id, const char *label,
				 uint64_t session_id, const char *gid, TsError *err)
{
	TsLabelClaim *claim;

	if (!tc_array_reserve((void **) &store->reg->claims, store->reg->nclaims, &store->reg->claims_cap,
						  sizeof(TsLabelClaim), 16))
		goto oom;
	claim = &store->reg->claims[store->reg->nclaims];
	memset(claim, 0, sizeof(*claim));
	claim->table_id = table_id;
	claim->session_id = session_id;
	if ((claim->label = strdup(label)) == NULL ||
		(gid != NULL && (claim->gid = strdup(gid)) == NULL))
	{
		free(claim->label);
		goto oom;
	}
	store->reg->nclaims++;
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory claiming a load label");
	return -1;
}

/* Remove claim i; call with labels_lock held. */
static void
claim_remove_locked(TsStore *store, size_t i)
{
	free(store->reg->claims[i].label);
	free(store->reg->claims[i].gid);
	store->reg->claims[i] = store->reg->claims[--store->reg->nclaims];
}

/*
 * The published record of (table_id, label): 1 with *published_at_ms, 0
 * when there is none, -1 with err.
 */
static int
label_read(TsStore *store, uint32_t table_id, const char *label, uint64_t *published_at_ms,
		   TsError *err)
{
	char		key[TS_LABEL_KEY_MAX];
	size_t		keylen = label_key(table_id, label, key);
	size_t		len = 0;
	char	   *errptr = NULL;
	char	   *value;
	Tstore__LabelRecord *rec;

	value = rocksdb_get_cf(store->db, store->read_default, store->cf_meta, key, keylen,
						   &len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read a load label", errptr);
		return -1;
	}
	if (value == NULL)
		return 0;
	rec = tstore__label_record__unpack(NULL, len, (const uint8_t *) value);
	free(value);
	*published_at_ms = rec != NULL ? rec->published_at_ms : 0;
	if (rec != NULL)
		tstore__label_record__free_unpacked(rec, NULL);
	return 1;
}

int
ts_session_claim_label(TsSession *session, uint32_t table_id, const char *label,
					   Tcopy__LabelState *state, uint64_t *published_at_ms,
					   char *holder_gid, size_t holder_size, TsError *err)
{
	TsStore    *store = session->store;
	TsLabelClaim *claim;
	TsLabelRef *grown;
	char		gid[TS_GID_MAX + 1] = "";
	int			found;

	*published_at_ms = 0;
	if (holder_size > 0)
		holder_gid[0] = '\0';
	if (session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "load label after the session was prepared");
		return -1;
	}
	if (label_check(label, err) != 0 || ts_store_table(store, table_id, err) == NULL)
		return -1;
	grown = realloc(session->labels, (session->nlabels + 1) * sizeof(TsLabelRef));
	if (grown == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	session->labels = grown;

	pthread_mutex_lock(&store->reg->labels_lock);
	claim = claim_find_locked(store, table_id, label);
	if (claim != NULL)
	{
		bool		held_prepared = claim->gid != NULL;

		if (!held_prepared)
			*state = claim->session_id == session->id ? TCOPY__LABEL_STATE__LABEL_OWN :
				TCOPY__LABEL_STATE__LABEL_BUSY;
		else
			snprintf(gid, sizeof(gid), "%s", claim->gid);
		pthread_mutex_unlock(&store->reg->labels_lock);
		if (!held_prepared)
			return 0;
		/* the prepared registry's lock is not taken under labels_lock */
		pthread_mutex_lock(&store->reg->prepared_lock);
		{
			TsPrepared *entry = registry_find_locked(store, gid, NULL);

			/* being resolved, or its connection about to: ask again */
			*state = entry != NULL && entry->state == PREPARED_READY && entry->owner == 0 ?
				TCOPY__LABEL_STATE__LABEL_PREPARED : TCOPY__LABEL_STATE__LABEL_BUSY;
		}
		pthread_mutex_unlock(&store->reg->prepared_lock);
		if (*state == TCOPY__LABEL_STATE__LABEL_PREPARED && holder_size > 0)
			snprintf(holder_gid, holder_size, "%s", gid);
		return 0;
	}
	found = label_read(store, table_id, label, published_at_ms, err);
	/* a TRUNCATE this session staged deletes the label before it publishes */
	for (size_t i = 0; found == 1 && i < session->ntruncates; i++)
		if (session->truncates[i] == table_id)
			found = 0;
	if (found == 1)
		*state = TCOPY__LABEL_STATE__LABEL_PUBLISHED;
	else if (found == 0)
	{
		if (claim_add_locked(store, table_id, label, session->id, NULL, err) != 0)
			found = -1;
		else if ((session->labels[session->nlabels].label = strdup(label)) == NULL)
		{
			claim_remove_locked(store, store->reg->nclaims - 1);
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			found = -1;
		}
		else
		{
			session->labels[session->nlabels++].table_id = table_id;
			*state = TCOPY__LABEL_STATE__LABEL_CLAIMED;
		}
	}
	pthread_mutex_unlock(&store->reg->labels_lock);
	if (found < 0)
		return -1;
	ts_log(TS_LOG_DEBUG, "session %llu: load label \"%s\" of table id %u: %s",
		   (unsigned long long) session->id, label, table_id,
		   protobuf_c_enum_descriptor_get_value(&tcopy__label_state__descriptor, *state)->name);
	return 0;
}

void
ts_labels_release_session(TsStore *store, uint64_t session_id)
{
	pthread_mutex_lock(&store->reg->labels_lock);
	for (size_t i = store->reg->nclaims; i-- > 0;)
		if (store->reg->claims[i].gid == NULL && store->reg->claims[i].session_id == session_id)
			claim_remove_locked(store, i);
	pthread_mutex_unlock(&store->reg->labels_lock);
}

void
ts_labels_release_table(TsStore *store, uint64_t session_id, uint32_t table_id)
{
	pthread_mutex_lock(&store->reg->labels_lock);
	for (size_t i = store->reg->nclaims; i-- > 0;)
		if (store->reg->claims[i].gid == NULL && store->reg->claims[i].session_id == session_id &&
			store->reg->claims[i].table_id == table_id)
			claim_remove_locked(store, i);
	pthread_mutex_unlock(&store->reg->labels_lock);
}

int
ts_labels_move_to_gid(TsStore *store, uint64_t session_id, const char *gid, TsError *err)
{
	int			result = 0;

	pthread_mutex_lock(&store->reg->labels_lock);
	for (size_t i = 0; i < store->reg->nclaims; i++)
	{
		TsLabelClaim *claim = &store->reg->claims[i];

		if (claim->gid != NULL || claim->session_id != session_id)
			continue;
		if ((claim->gid = strdup(gid)) == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			result = -1;
			break;
		}
		claim->session_id = 0;
	}
	pthread_mutex_unlock(&store->reg->labels_lock);
	return result;
}

void
ts_labels_release_gid(TsStore *store, const char *gid)
{
	pthread_mutex_lock(&store->reg->labels_lock);
	for (size_t i = store->reg->nclaims; i-- > 0;)
		if (store->reg->claims[i].gid != NULL && strcmp(store->reg->claims[i].gid, gid) == 0)
			claim_remove_locked(store, i);
	pthread_mutex_unlock(&store->reg->labels_lock);
}

int
ts_labels_claim_for_gid(TsStore *store, const char *gid, const TsLabelRef *labels, size_t n,
						TsError *err)
{
	int			result = 0;

	pthread_mutex_lock(&store->reg->labels_lock);
	for (size_t i = 0; i < n && result == 0; i++)
	{
		if (label_check(labels[i].label, err) != 0)
			result = -1;
		else if (claim_find_locked(store, labels[i].table_id, labels[i].label) != NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "load label \"%s\" of table id %u is claimed by two prepared sessions",
						 labels[i].label, labels[i].table_id);
			result = -1;
		}
		else
			result = claim_add_locked(store, labels[i].table_id, labels[i].label, 0, gid, err);
	}
	pthread_mutex_unlock(&store->reg->labels_lock);
	return result;
}

void
ts_labels_free_all(TsStore *store)
{
	while (store->reg->nclaims > 0)
		claim_remove_locked(store, store->reg->nclaims - 1);
	free(store->reg->claims);
	store->reg->claims = NULL;
	store->reg->claims_cap = 0;
}

int
ts_store_forget_label(TsStore *store, uint32_t table_id, const char *label, bool *found,
					  TsError *err)
{
	char		key[TS_LABEL_KEY_MAX];
	size_t		keylen;
	uint64_t	published_at_ms;
	rocksdb_writebatch_t *wb;
	int			rc;

	*found = false;
	if (label_check(label, err) != 0 || ts_store_table(store, table_id, err) == NULL)
		return -1;
	keylen = label_key(table_id, label, key);
	/* under labels_lock: a claim checks the key under it too */
	pthread_mutex_lock(&store->reg->labels_lock);
	rc = label_read(store, table_id, label, &published_at_ms, err);
	if (rc == 1)
	{
		wb = rocksdb_writebatch_create();
		rocksdb_writebatch_delete_cf(wb, store->cf_meta, key, keylen);
		if (ts_storage_write(store, wb, "could not forget a load label", err) != 0)
			rc = -1;
		rocksdb_writebatch_destroy(wb);
	}
	pthread_mutex_unlock(&store->reg->labels_lock);
	if (rc < 0)
		return -1;
	*found = rc == 1;
	if (*found)
		ts_log(TS_LOG_INFO, "load label \"%s\" of table id %u forgotten", label, table_id);
	return 0;
}

int
ts_store_list_labels(TsStore *store, uint32_t table_id, TcArena *arena,
					 Tcopy__LabelList *list, TsError *err)
{
	char		begin[TS_LABEL_KEY_MAX];
	size_t		begin_len = label_key(table_id, NULL, begin);
	rocksdb_iterator_t *it;
	size_t		cap = 16;
	size_t		n = 0;
	char	   *errptr = NULL;

	if (ts_store_table(store, table_id, err) == NULL)
		return -1;
	list->labels = tc_arena_alloc(arena, cap * sizeof(Tcopy__PublishedLabel *));
	it = rocksdb_create_iterator_cf(store->db, store->read_default, store->cf_meta);
	for (rocksdb_iter_seek(it, begin, begin_len);
		 list->labels != NULL && rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		keylen,
					vallen;
		const char *key = rocksdb_iter_key(it, &keylen);
		const char *val = rocksdb_iter_value(it, &vallen);
		Tstore__LabelRecord *rec;
		Tcopy__PublishedLabel *label;
		char	   *text;

		if (keylen < begin_len || memcmp(key, begin, begin_len) != 0)
			break;
		if (n == cap)
		{
			Tcopy__PublishedLabel **grown = tc_arena_alloc(arena, 2 * cap * sizeof(*grown));

			if (grown != NULL)
				memcpy(grown, list->labels, n * sizeof(*grown));
			list->labels = grown;
			cap *= 2;
			if (grown == NULL)
				break;
		}
		label = tc_arena_alloc(arena, sizeof(Tcopy__PublishedLabel));
		text = tc_arena_alloc(arena, keylen - begin_len + 1);
		if (label == NULL || text == NULL)
		{
			list->labels = NULL;
			break;
		}
		tcopy__published_label__init(label);
		memcpy(text, key + begin_len, keylen - begin_len);
		text[keylen - begin_len] = '\0';
		label->label = text;
		rec = tstore__label_record__unpack(NULL, vallen, (const uint8_t *) val);
		if (rec != NULL)
		{
			label->published_at_ms = rec->published_at_ms;
			tstore__label_record__free_unpacked(rec, NULL);
		}
		list->labels[n++] = label;
	}
	rocksdb_iter_get_error(it, &errptr);
	rocksdb_iter_destroy(it);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not list load labels", errptr);
		return -1;
	}
	if (list->labels == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory listing load labels");
		return -1;
	}
	list->n_labels = n;
	return 0;
}
