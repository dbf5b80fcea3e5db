/*
 * ts_session_truncate.c
 *		A TRUNCATE staged in a session after the session wrote rows to the
 *		table: the table's records staged before it are discarded there and
 *		then, wherever they are (the staging buffer, the runs, the direct
 *		SST files), with its load labels, so that the publish (the truncate,
 *		then the rows) leaves only the rows written after it, as on a heap
 *		table.  Only the staging directory changes, which a crash discards
 *		with an unprepared session.  Why and how: docs/commit.md, TRUNCATE.
 */
#include "ts_session_int.h"

#include <stdlib.h>
#include <string.h>

#include "ts_log.h"
#include "ts_record.h"

/*
 * Cut the staging buffer's records of table_id out; the records kept carry
 * their rows (ordinals.carried).  0, or -1 with err when out of memory
 * (nothing changed).
 */
static int
discard_staged(TsSession *session, uint32_t table_id, TsError *err)
{
	TsOrdinals *ord = &session->ordinals;
	uint8_t    *data = session->staged.data;
	size_t		n = session->noffsets;
	size_t		out = 0;
	size_t		at = 0;
	bool		ascending = true;

	if (n == 0)
		return 0;
	if (session->carried_cap < n)
	{
		uint64_t   *grown = realloc(session->carried, n * sizeof(uint64_t));

		if (grown == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
						 "out of memory truncating a session's rows");
			return -1;
		}
		/* ord->carried is session->carried once anything was carried */
		if (ord->ncarried > 0)
			ord->carried = grown;
		session->carried = grown;
		session->carried_cap = n;
	}
	for (size_t i = 1; i < n; i++)
		if (session->offsets[i] <= session->offsets[i - 1])
			ascending = false;

	for (size_t i = 0; i < n; i++)
	{
		uint32_t	offset = session->offsets[i];
		const uint8_t *rec = data + offset;
		size_t		size = ts_record_size(ts_record_keylen(rec), ts_record_valuelen(rec));
		uint64_t	row;

		if (ts_record_table(rec) == table_id)
			continue;
		/* out <= i: carried[i] is read before anything is written over it */
		row = ts_ordinals_row(ord, i);
		if (ascending)
		{
			/* records lie in their order: each one moves down, or stays */
			memmove(data + at, rec, size);
			offset = (uint32_t) at;
			at += size;
		}
		session->carried[out] = row;
		session->offsets[out++] = offset;
	}
	session->noffsets = out;
	if (ascending)
		session->staged.len = at;
	ord->rows_before = session->rows;
	ord->ncarried = out;
	ord->carried = session->carried;
	ord->skipped = 0;
	ts_session_find_table_lasts(session);
	ts_session_account(session);
	return 0;
}

/* Drop the keys of table_id from the keys the direct SST files delete. */
static void
discard_direct_deletes(TsSession *session, uint32_t table_id)
{
	TcBuf	   *deletes = &session->direct_deletes;
	size_t		at = 0;
	size_t		out = 0;

	while (at < deletes->len)
	{
		uint32_t	keylen;
		size_t		size;
		const uint8_t *key = deletes->data + at + 4;

		memcpy(&keylen, deletes->data + at, 4);
		size = 4 + (size_t) keylen;
		if (keylen < TS_TABLE_ID_SIZE || ts_get_be32(key) != table_id)
		{
			memmove(deletes->data + out, deletes->data + at, size);
			out += size;
		}
		at += size;
	}
	deletes->len = out;
}

/* Forget the session's load labels of table_id. */
static void
discard_labels(TsSession *session, uint32_t table_id)
{
	size_t		out = 0;

	for (size_t i = 0; i < session->nlabels; i++)
	{
		if (session->labels[i].table_id == table_id)
			free(session->labels[i].label);
		else
			session->labels[out++] = session->labels[i];
	}
	session->nlabels = out;
	ts_labels_release_table(session->store, session->id, table_id);
}

int
ts_session_discard_table(TsSession *session, uint32_t table_id, TsError *err)
{
	/* the spill running owns the runs and the SST files */
	if (ts_spill_wait(session, err) != 0)
		return -1;
	if (ts_merge_drop_table(session, table_id, err) != 0)
		return -1;
	if (session->sst != NULL)
	{
		uint64_t	direct;

		if (ts_sst_sink_drop_table(session->sst, table_id, err) != 0)
			return -1;
		direct = ts_sst_sink_bytes(session->sst);
		ts_session_account_spilled(session, session->spilled_bytes - session->direct_bytes +
								   direct);
		session->direct_bytes = direct;
		discard_direct_deletes(session, table_id);
		ts_key_ranges_drop_table(&session->direct_ranges, table_id);
		ts_session_read_db_reset(session);
	}
	if (discard_staged(session, table_id, err) != 0)
		return -1;
	discard_labels(session, table_id);
	ts_log(TS_LOG_DEBUG, "session %llu: its rows of table %u staged before its TRUNCATE discarded",
		   (unsigned long long) session->id, table_id);
	return 0;
}
