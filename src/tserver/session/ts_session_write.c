/*
 * ts_session_write.c
 *		A session's write path: a batch's rows checked, encoded into
 *		records and admitted to the staging buffer (ts_session.c describes
 *		the buffer, its spills and what "sorted" means).
 *
 * A batch comes either on the session's own connection (ts_session_write:
 * the rows are encoded straight into the buffer, under the session's lock)
 * or on a stream that joined the session (ts_streams.c): the stream
 * encodes its batch into records of its own first, outside any lock, on
 * its own connection's thread, and the records are then copied into the
 * buffer when its chunk's turn comes (ts_session_stage_records).  Either
 * way each record is admitted as the session's next row: the same
 * sortedness check, the same settling of duplicates, the same row
 * ordinals, so that a session cannot tell its streams' rows from its own.
 */
#include "ts_session_int.h"

#include <stdlib.h>
#include <string.h>

#include "tc_varint.h"
#include "ts_key.h"
#include "ts_record.h"

/*
 * Remember that the session wrote to table_id: its index in the session's
 * tables, or -1 when out of memory.
 */
static ssize_t
session_note_table(TsSession *session, uint32_t table_id)
{
	ssize_t		found = ts_session_table_index(session, table_id);

	if (found >= 0)
		return found;
	if (session->ntables == session->tables_cap)
	{
		size_t		cap = session->tables_cap ? session->tables_cap * 2 : 4;
		uint32_t   *tables = realloc(session->tables, cap * sizeof(uint32_t));
		uint32_t   *lasts;

		if (tables == NULL)
			return -1;
		session->tables = tables;
		lasts = realloc(session->table_last, cap * sizeof(uint32_t));
		if (lasts == NULL)
			return -1;
		session->table_last = lasts;
		session->tables_cap = cap;
	}
	session->table_last[session->ntables] = 0;
	session->tables[session->ntables++] = table_id;
	return (ssize_t) session->ntables - 1;
}

void
ts_session_find_table_lasts(TsSession *session)
{
	size_t		left = 0;

	for (size_t t = 0; t < session->ntables; t++)
		session->table_last[t] = 0;
	/* from the end: each table's first record met is its last */
	for (size_t i = session->noffsets; i > 0 && left < session->ntables; i--)
	{
		const uint8_t *rec = session->staged.data + session->offsets[i - 1];
		ssize_t		t = ts_session_table_index(session, ts_record_table(rec));

		if (t >= 0 && session->table_last[t] == 0)
		{
			session->table_last[t] = session->offsets[i - 1] + 1;
			left++;
		}
	}
}

/* The batch's table, if the session may take the batch; NULL with err. */
static TsTable *
write_table(TsSession *session, const Tcopy__WriteBatch *batch, TsError *err)
{
	TsTable    *table;

	if (session->prepared)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch after the session was prepared");
		return NULL;
	}
	table = ts_store_table(session->store, batch->table_id, err);
	if (table == NULL)
		return NULL;
	if (session->ndrops > 0 && ids_contain(session->drops, session->ndrops, table->id))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch for table \"%s\" after the session dropped it", table->name);
		return NULL;
	}
	if (batch->kind != TCOPY__WRITE_KIND__WRITE_INSERT &&
		batch->kind != TCOPY__WRITE_KIND__WRITE_UPDATE &&
		batch->kind != TCOPY__WRITE_KIND__WRITE_DELETE)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch of unknown kind %d", (int) batch->kind);
		return NULL;
	}
	/* a table's layout is immutable and outlives a drop: no lock needed */
	if (batch->kind != TCOPY__WRITE_KIND__WRITE_INSERT && ts_table_layout(table)->nkey == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table \"%s\" has no key columns: its rows cannot be %s",
					 table->name,
					 batch->kind == TCOPY__WRITE_KIND__WRITE_UPDATE ? "updated" : "deleted");
		return NULL;
	}
	return table;
}

/* A record received in the stored form (tc_record.h), not yet staged. */
typedef struct Received
{
	const uint8_t *key;			/* without the table id */
	size_t		keylen;
	const uint8_t *value;
	size_t		valuelen;
} Received;

/*
 * The next record of a batch's records at *p (before end) into *rec, *p
 * moved past it: false when its lengths run past end.
 */
static bool
received_next(const uint8_t **p, const uint8_t *end, Received *rec)
{
	uint64_t	len;

	if (!tc_varint_get(p, end, &len) || len > (uint64_t) (end - *p))
		return false;
	rec->key = *p;
	rec->keylen = (size_t) len;
	*p += len;
	if (!tc_varint_get(p, end, &len) || len > (uint64_t) (end - *p))
		return false;
	rec->value = *p;
	rec->valuelen = (size_t) len;
	*p += len;
	return true;
}

/* Say which row of batch err is about, after what it says. */
static void
write_error_row(TsError *err, size_t row, const Tcopy__WriteBatch *batch,
				const TsTable *table)
{
	size_t		len = strlen(err->message);

	snprintf(err->message + len, sizeof(err->message) - len,
			 " (row %zu of batch %llu for table \"%s\")", row,
			 (unsigned long long) batch->seq, table->name);
}

/*
 * Check every row of batch against table's schema: its rows, or its
 * records byte for byte (ts_record_check); *nrows: how many, *bound: an
 * upper bound of the bytes of their staged records.  0, or -1 with err.
 */
static int
write_check_rows(const TsTable *table, const TsLayout *layout,
				 const Tcopy__WriteBatch *batch, size_t *nrows, size_t *bound,
				 TsError *err)
{
	const uint8_t *p = batch->records.data;
	const uint8_t *end = p != NULL ? p + batch->records.len : NULL;	/* no NULL + 0 */
	Received	rec;

	*bound = 0;
	*nrows = batch->n_rows;
	for (size_t i = 0; i < batch->n_rows; i++)
	{
		const Tcopy__Row *row = batch->rows[i];

		if (ts_row_check(layout, row, err) != 0)
		{
			write_error_row(err, i + 1, batch, table);
			return -1;
		}
		/* see ts_codec.h for the formats */
		*bound += TS_RECORD_HEADER_SIZE + TS_TABLE_ID_SIZE + TS_ROWID_SIZE + 1 +
			11 * row->n_ints + 9 * row->n_floats + 13 * row->n_blobs + row->n_nulls;
		for (size_t b = 0; b < row->n_blobs; b++)
			*bound += 2 * row->blobs[b].len;
	}
	if (batch->records.len > 0 && batch->n_rows > 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "write batch %llu for table \"%s\" has both rows and records",
					 (unsigned long long) batch->seq, table->name);
		return -1;
	}
	while (p < end)
	{
		const char *why;

		if (!received_next(&p, end, &rec))
			why = "a length past the batch's end";
		else
			why = ts_record_check(layout, rec.key, rec.keylen, rec.value, rec.valuelen,
								  batch->kind != TCOPY__WRITE_KIND__WRITE_DELETE);
		if (why != NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_BAD_ROW,
						 "record not in the stored form: %s", why);
			write_error_row(err, *nrows + 1, batch, table);
			return -1;
		}
		*bound += TS_RECORD_HEADER_SIZE + TS_TABLE_ID_SIZE + TS_ROWID_SIZE + 1 +
			rec.keylen + rec.valuelen;
		(*nrows)++;
	}
	return 0;
}

/*
 * Room in the staging buffer for bound more bytes of nrows records.  Keep
 * the buffer at its first size: spill before a batch that would not fit,
 * rather than let the buffer double.  And while the sessions together
 * stage more than the store's budget, spill once EARLY_SPILL_BYTES are
 * staged: every session's memory then stays near that (the spill waits for
 * the one before, which holds the connection back), however many sessions
 * there are.  0, or -1 with err.
 */
static int
write_make_room(TsSession *session, size_t bound, size_t nrows, TsError *err)
{
	TsStore    *store = session->store;

	if (session->staged.len > 0 &&
		(session->staged.len + bound > session->staged.cap ||
		 (store->opts.memory_bytes > 0 && session->staged.len >= EARLY_SPILL_BYTES &&
		  atomic_load(&store->staged_bytes) + bound > store->opts.memory_bytes)))
	{
		/* a spill checks keys against the stored rows (ts_key_claims.c) */
		if (ts_conflicts_checked(&session->conflicts))
			ts_key_claims_watch(session);
		if (ts_spill_start(session, err) != 0)
			return -1;
	}
	if (session->staged.cap == 0 &&
		!tc_buf_reserve(&session->staged, store->opts.session_memory_bytes / 2 > bound ?
						store->opts.session_memory_bytes / 2 : bound))
		goto oom;
	if (session->noffsets + nrows > session->offsets_cap)
	{
		size_t		cap = session->offsets_cap ? session->offsets_cap : 1024;
		uint32_t   *offsets;

		while (cap < session->noffsets + nrows)
			cap *= 2;
		offsets = realloc(session->offsets, cap * sizeof(uint32_t));
		if (offsets == NULL)
			goto oom;
		session->offsets = offsets;
		session->offsets_cap = cap;
	}
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
				 "out of memory staging a batch of %zu rows", nrows);
	return -1;
}

/*
 * Append the record of row, or of rec when row is NULL (checked: only
 * copied), of kind (its key rowid when the table has no key columns) to
 * out; *key_end: where its key ends.  false when out of memory.
 */
static bool
write_encode_record(const TsTable *table, const TsLayout *layout,
					Tcopy__WriteKind kind, uint64_t rowid,
					const Tcopy__Row *row, const Received *rec, TcBuf *out,
					size_t *key_end)
{
	size_t		start = out->len;
	bool		ok;

	if (start > UINT32_MAX - TS_RECORD_HEADER_SIZE ||
		!tc_buf_reserve(out, TS_RECORD_HEADER_SIZE +
						(rec ? TS_TABLE_ID_SIZE + TS_ROWID_SIZE + 1 +
						 rec->keylen + rec->valuelen : 0)))
		return false;
	out->len += TS_RECORD_HEADER_SIZE;
	if (layout->nkey == 0)
		ok = ts_key_encode_rowid(table->id, rowid, out);
	else if (row != NULL)
		ok = ts_key_encode(layout, table->id, row, out);
	else
	{
		ts_put_be32(out->data + out->len, table->id);
		memcpy(out->data + out->len + TS_TABLE_ID_SIZE, rec->key, rec->keylen);
		out->len += TS_TABLE_ID_SIZE + rec->keylen;
		ok = true;
	}
	*key_end = out->len;
	if (!ok)
		return false;
	if (kind != TCOPY__WRITE_KIND__WRITE_INSERT)
	{
		if (!tc_buf_reserve(out, 1))
			return false;
		out->data[out->len++] =
			kind == TCOPY__WRITE_KIND__WRITE_DELETE ? TS_VALUE_DELETE : TS_VALUE_SET;
	}
	if (kind != TCOPY__WRITE_KIND__WRITE_DELETE)
	{
		if (row != NULL)
		{
			if (!ts_value_encode(layout, row, out))
				return false;
		}
		else if (rec->valuelen > 0)
		{
			memcpy(out->data + out->len, rec->value, rec->valuelen);
			out->len += rec->valuelen;
		}
	}
	ts_record_put_header(out->data + start,
						 (uint32_t) (*key_end - start - TS_RECORD_HEADER_SIZE),
						 (uint32_t) (out->len - *key_end));
	return true;
}

/*
 * Append batch's next record to out: row i, or the record at *p (moved
 * past it).  As write_encode_record.
 */
static bool
write_encode_next(const TsTable *table, const TsLayout *layout,
				  const Tcopy__WriteBatch *batch, size_t i, const uint8_t **p,
				  uint64_t rowid, TcBuf *out, size_t *key_end)
{
	Received	rec;

	if (batch->n_rows > 0)
		return write_encode_record(table, layout, batch->kind, rowid, batch->rows[i],
								   NULL, out, key_end);
	if (!received_next(p, batch->records.data + batch->records.len, &rec))
		return false;			/* cannot happen: checked */
	return write_encode_record(table, layout, batch->kind, rowid, NULL, &rec, out,
							   key_end);
}

/*
 * Admit the record at start, the last in the staging buffer, as the
 * session's row `row` (1-based) of its table tidx (an index in the
 * session's tables): 1 when it is staged, 0 when it is not (a duplicate
 * whose first row stays, IGNORE: the buffer ends at start again), -1 with
 * err (ERROR: a duplicate).
 */
static int
write_admit(TsSession *session, size_t tidx, size_t start, uint64_t row, TsError *err)
{
	const uint8_t *rec = session->staged.data + start;
	uint32_t	keylen = ts_record_keylen(rec);

	/*
	 * One key below its table's key before it, and spills sort into runs
	 * for good.  Tables are compared apart: rows of several tables (the
	 * partitions on one tserver) interleave in a session, each in its
	 * order.
	 */
	if (session->sorted && session->table_last[tidx] != 0)
	{
		const uint8_t *prev = session->staged.data + session->table_last[tidx] - 1;
		int			cmp = ts_key_compare(ts_record_key(prev), ts_record_keylen(prev),
										 ts_record_key(rec), keylen);

		if (cmp > 0)
			session->sorted = false;
		else if (cmp == 0 && ts_conflicts_count(&session->conflicts, NULL) > 0 &&
				 ts_record_mark(prev) == 0 && ts_record_mark(rec) == 0)
		{
			size_t		keep;

			/* while sorted, a duplicate is settled as it arrives */
			if (ts_conflicts_pick(&session->conflicts, ts_record_key(rec), keylen, 2,
								  ts_record_value(rec, keylen), ts_record_valuelen(rec),
								  &keep, err) != 0)
				return -1;
			if (keep == 0)
			{
				session->staged.len = start;	/* the first stays */
				ts_ordinals_skip(&session->ordinals, row);
				return 0;
			}
		}
	}
	session->offsets[session->noffsets++] = (uint32_t) start;
	session->table_last[tidx] = (uint32_t) start + 1;
	return 1;
}

static int	session_write_locked(TsSession *session, const Tcopy__WriteBatch *batch,
								 const TsLayout *layout, TsError *err);

/* Stage a batch under the session's lock, against a scan's copy. */
int
ts_session_write(TsSession *session, const Tcopy__WriteBatch *batch,
				 const TsLayout *layout, TsError *err)
{
	int			result;

	pthread_mutex_lock(&session->lock);
	result = session_write_locked(session, batch, layout, err);
	pthread_mutex_unlock(&session->lock);
	return result;
}

static int
session_write_locked(TsSession *session, const Tcopy__WriteBatch *batch,
					 const TsLayout *layout, TsError *err)
{
	TsTable    *table;
	size_t		saved_len;
	size_t		saved_offsets;
	uint32_t	saved_last = 0;
	ssize_t		tidx;
	uint64_t	rowid = 0;
	size_t		nrows;
	size_t		bound;
	const uint8_t *next = batch->records.data;

	table = write_table(session, batch, err);
	if (table != NULL && layout == NULL)
		layout = ts_table_layout(table);
	if (table == NULL || write_check_rows(table, layout, batch, &nrows, &bound, err) != 0 ||
		write_make_room(session, bound, nrows, err) != 0)
		return -1;
	/* what a failed batch goes back to: after the spill, which swaps buffers */
	saved_len = session->staged.len;
	saved_offsets = session->noffsets;
	if ((tidx = session_note_table(session, table->id)) < 0)
		goto oom;
	saved_last = session->table_last[tidx];
	if (ts_table_layout(table)->nkey == 0)
		rowid = atomic_fetch_add(&table->next_rowid, nrows);

	for (size_t i = 0; i < nrows; i++)
	{
		size_t		start = session->staged.len;
		size_t		key_end;

		if (!write_encode_next(table, layout, batch, i, &next, rowid++,
							   &session->staged, &key_end))
			goto oom;
		/* first updater wins: the row as the snapshot had it, or 40001 */
		if ((batch->kind != TCOPY__WRITE_KIND__WRITE_INSERT && session->snapshot != NULL &&
			 ts_snapshot_check_row(session->store, session->snapshot, table,
								   session->staged.data + start + TS_RECORD_HEADER_SIZE,
								   key_end - start - TS_RECORD_HEADER_SIZE, err) != 0) ||
			write_admit(session, (size_t) tidx, start, session->rows + i + 1, err) < 0)
		{
			session->staged.len = saved_len;
			session->noffsets = saved_offsets;
			session->table_last[tidx] = saved_last;
			return -1;
		}
	}
	session->rows += nrows;
	ts_session_account(session);
	return 0;

oom:
	session->staged.len = saved_len;
	session->noffsets = saved_offsets;
	if (tidx >= 0)
		session->table_last[tidx] = saved_last;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
				 "out of memory staging a batch of %zu rows", nrows);
	return -1;
}

int
ts_session_encode_batch(TsSession *session, const Tcopy__WriteBatch *batch,
						const TsLayout *layout, TcBuf *records, size_t *nrecords,
						TsError *err)
{
	TsTable    *table;
	size_t		bound;
	const uint8_t *next = batch->records.data;

	records->len = 0;
	table = write_table(session, batch, err);
	if (table == NULL)
		return -1;
	if (batch->kind != TCOPY__WRITE_KIND__WRITE_INSERT)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a stream of a session sends inserts only, not a batch of kind %d",
					 (int) batch->kind);
		return -1;
	}
	/* as the stream's connection lays rows out, as ts_session_write */
	if (layout == NULL)
		layout = ts_table_layout(table);
	if (write_check_rows(table, layout, batch, nrecords, &bound, err) != 0)
		return -1;
	if (!tc_buf_reserve(records, bound))
		goto oom;
	for (size_t i = 0; i < *nrecords; i++)
	{
		size_t		key_end;

		/* a rowid is the session's to give, in the order it stages rows */
		if (!write_encode_next(table, layout, batch, i, &next, 0, records, &key_end))
			goto oom;
	}
	return 0;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
				 "out of memory encoding a batch of %zu rows", *nrecords);
	return -1;
}

int
ts_session_stage_records(TsSession *session, uint32_t table_id, const TcBuf *records,
						 size_t nrecords, uint64_t *rows, TsError *err)
{
	TsTable    *table;
	size_t		saved_len;
	size_t		saved_offsets;
	uint32_t	saved_last = 0;
	ssize_t		tidx;
	uint64_t	rowid = 0;
	size_t		off = 0;
	int			result = -1;

	pthread_mutex_lock(&session->lock);
	table = ts_store_table(session->store, table_id, err);
	if (table == NULL || write_make_room(session, records->len, nrecords, err) != 0)
		goto done;
	saved_len = session->staged.len;
	saved_offsets = session->noffsets;
	if ((tidx = session_note_table(session, table->id)) < 0 ||
		!tc_buf_reserve(&session->staged, records->len))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
					 "out of memory staging a batch of %zu rows", nrecords);
		goto done;
	}
	saved_last = session->table_last[tidx];
	if (ts_table_layout(table)->nkey == 0)
		rowid = atomic_fetch_add(&table->next_rowid, nrecords);
	for (size_t i = 0; i < nrecords; i++)
	{
		const uint8_t *rec = records->data + off;
		size_t		size = ts_record_size(ts_record_keylen(rec), ts_record_valuelen(rec));
		size_t		start = session->staged.len;

		memcpy(session->staged.data + start, rec, size);
		session->staged.len += size;
		off += size;
		if (ts_table_layout(table)->nkey == 0)
			ts_put_be64(session->staged.data + start + TS_RECORD_HEADER_SIZE +
						TS_TABLE_ID_SIZE, rowid++);
		if (write_admit(session, (size_t) tidx, start, session->rows + i + 1, err) < 0)
		{
			session->staged.len = saved_len;
			session->noffsets = saved_offsets;
			session->table_last[tidx] = saved_last;
			goto done;
		}
	}
	session->rows += nrecords;
	ts_session_account(session);
	result = 0;
done:
	*rows = session->rows;
	pthread_mutex_unlock(&session->lock);
	return result;
}
