/*
 * ts_prepared_record.c
 *		The prepared sessions' records as the meta family stores them
 *		(proto/ts_store.proto, PreparedRecord, under "prepared:" gid): the
 *		key, packing, reading one back checked, and walking them all.
 *		ts_prepared.c's file comment says what a record holds; what
 *		prepares, resolves and loads them (ts_prepared.c), the registry
 *		(ts_prepared_registry.c) and backups (ts_backup.c) read them here.
 */
#include "ts_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_store.pb-c.h"

/* The meta family key of gid's record into key; its length. */
size_t
ts_prepared_record_key(const char *gid, char *key, size_t size)
{
	return (size_t) snprintf(key, size, "%s%s", TS_META_PREPARED_PREFIX, gid);
}

/*
 * Check a record decoded from key: its version, its gid, and that its
 * file names stay in its staging directory.  0, or -1 with err.
 */
static int
record_check(const Tstore__PreparedRecord *rec, const char *key, size_t keylen, TsError *err)
{
	size_t		plen = strlen(TS_META_PREPARED_PREFIX);
	char		dir[64];

	if (rec->version != PREPARED_RECORD_VERSION && rec->version != PREPARED_RECORD_VERSION_LABELS)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "stored prepared session \"%.*s\" has record version %u, not %d or %d",
					 (int) (keylen - plen), key + plen, rec->version, PREPARED_RECORD_VERSION,
					 PREPARED_RECORD_VERSION_LABELS);
		return -1;
	}
	/* a version 1 record has no labels, a version 2 one has */
	if ((rec->n_labels > 0) != (rec->version == PREPARED_RECORD_VERSION_LABELS))
		goto corrupt;
	for (size_t i = 0; i < rec->n_labels; i++)
		if (rec->labels[i]->label == NULL || rec->labels[i]->label[0] == '\0' ||
			strlen(rec->labels[i]->label) > TS_LABEL_MAX)
			goto corrupt;
	if (strlen(rec->gid) != keylen - plen || memcmp(rec->gid, key + plen, keylen - plen) != 0 ||
		rec->gid[0] == '\0' || strlen(rec->gid) > TS_GID_MAX)
		goto corrupt;
	snprintf(dir, sizeof(dir), "session-%llu", (unsigned long long) rec->session_id);
	if (rec->sst != NULL)
	{
		if (strcmp(rec->sst->dir, dir) != 0 || strchr(rec->sst->sentinel, '/') != NULL ||
			rec->sst->sentinel[0] == '\0' || rec->sst->sentinel[0] == '.')
			goto corrupt;
		for (size_t i = 0; i < rec->sst->n_files; i++)
			if (strchr(rec->sst->files[i], '/') != NULL || rec->sst->files[i][0] == '\0' ||
				rec->sst->files[i][0] == '.')
				goto corrupt;
	}
	return 0;

corrupt:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "stored prepared session \"%.*s\" is corrupt", (int) (keylen - plen), key + plen);
	return -1;
}

/* Read and decode gid's record: NULL with err when missing or corrupt. */
Tstore__PreparedRecord *
ts_prepared_record_read(TsStore *store, const char *gid, TsError *err)
{
	char		key[sizeof(TS_META_PREPARED_PREFIX) + TS_GID_MAX];
	size_t		keylen = ts_prepared_record_key(gid, key, sizeof(key));
	size_t		len = 0;
	char	   *errptr = NULL;
	char	   *value;
	Tstore__PreparedRecord *rec;

	value = rocksdb_get_cf(store->db, store->read_default, store->cf_meta, key, keylen,
						   &len, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not read a prepared session's record", errptr);
		return NULL;
	}
	if (value == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "the record of the session prepared under \"%s\" is missing", gid);
		return NULL;
	}
	rec = tstore__prepared_record__unpack(NULL, len, (const uint8_t *) value);
	free(value);
	if (rec == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "stored prepared session \"%s\" is corrupt", gid);
		return NULL;
	}
	if (record_check(rec, key, keylen, err) != 0)
	{
		tstore__prepared_record__free_unpacked(rec, NULL);
		return NULL;
	}
	return rec;
}

/* Pack rec into a new buffer (*len bytes); NULL when out of memory. */
uint8_t *
ts_prepared_record_pack(const Tstore__PreparedRecord *rec, size_t *len)
{
	uint8_t    *packed;

	*len = tstore__prepared_record__get_packed_size(rec);
	packed = malloc(*len > 0 ? *len : 1);
	if (packed != NULL)
		tstore__prepared_record__pack(rec, packed);
	return packed;
}

int
ts_prepared_each(TsStore *store, TsPreparedRecordFn fn, void *arg, TsError *err)
{
	rocksdb_iterator_t *it;
	size_t		plen = strlen(TS_META_PREPARED_PREFIX);
	int			result = 0;

	it = rocksdb_create_iterator_cf(store->db, store->read_default, store->cf_meta);
	for (rocksdb_iter_seek(it, TS_META_PREPARED_PREFIX, plen);
		 result == 0 && rocksdb_iter_valid(it); rocksdb_iter_next(it))
	{
		size_t		keylen,
					vallen;
		const char *key = rocksdb_iter_key(it, &keylen);
		const char *val = rocksdb_iter_value(it, &vallen);
		Tstore__PreparedRecord *rec;

		if (keylen < plen || memcmp(key, TS_META_PREPARED_PREFIX, plen) != 0)
			break;
		rec = tstore__prepared_record__unpack(NULL, vallen, (const uint8_t *) val);
		if (rec == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "stored prepared session \"%.*s\" is corrupt",
						 (int) (keylen - plen), key + plen);
			result = -1;
			break;
		}
		if (record_check(rec, key, keylen, err) != 0 || fn(store, rec, arg, err) != 0)
			result = -1;
		tstore__prepared_record__free_unpacked(rec, NULL);
	}
	rocksdb_iter_destroy(it);
	return result;
}
