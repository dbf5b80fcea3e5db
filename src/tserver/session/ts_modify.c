/*
 * ts_modify.c
 *		A direct modify (MODIFY): an UPDATE or DELETE the tserver does in a
 *		session, so that an UPDATE ... SET col = col + const WHERE key = const
 *		costs the client one round trip instead of a scan and a batch.
 *
 * The rows are read as a scan of the session reads them (the session's
 * writes merged over the committed rows, ts_session_read.c; for update:
 * refused while an orphaned prepared session wrote the table), each
 * changed as the assignments say and staged as the session's own
 * WRITE_UPDATE or WRITE_DELETE batches of MODIFY_BATCH_ROWS rows, through
 * ts_session_write: the same records as a client's.  The scan's view is
 * taken before the first row is staged, so rows the modify writes are not
 * read again (no Halloween problem).
 */
#include "ts_session_int.h"

#include <stdlib.h>
#include <string.h>

#define MODIFY_BATCH_ROWS 1000

/* The assignments' values, one per assignment, from request->values. */
static int
modify_values(const TsLayout *layout, const Tcopy__Modify *request, TsValue *values,
			  TsError *err)
{
	const Tcopy__Row *row = request->values;
	size_t		ints = 0,
				floats = 0,
				blobs = 0,
				next_null = 0;

	if (request->n_set == 0)
		return 0;
	if (row == NULL)
		goto bad;
	for (size_t i = 0; i < request->n_set; i++)
	{
		TsValue    *v = &values[i];

		memset(v, 0, sizeof(*v));
		if (next_null < row->n_nulls && row->nulls[next_null] == i)
		{
			v->isnull = true;
			next_null++;
			continue;
		}
		switch (layout->kinds[request->set[i]->column])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (ints >= row->n_ints)
					goto bad;
				v->i = row->ints[ints++];
				if (layout->kinds[request->set[i]->column] == TCOPY__KIND__KIND_BOOL &&
					v->i != 0 && v->i != 1)
					goto bad;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (floats >= row->n_floats)
					goto bad;
				v->f = row->floats[floats++];
				break;
			default:
				if (blobs >= row->n_blobs)
					goto bad;
				v->p = row->blobs[blobs].data;
				v->len = row->blobs[blobs++].len;
				break;
		}
	}
	if (next_null == row->n_nulls && ints == row->n_ints && floats == row->n_floats &&
		blobs == row->n_blobs)
		return 0;
bad:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
				 "modify values do not match its assignments");
	return -1;
}

/* Check what the request asks of the table's columns. */
static int
modify_check(const TsTable *table, const TsLayout *layout, const Tcopy__Modify *request,
			 TsError *err)
{
	if (layout->nkey == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "table \"%s\" has no key columns: its rows cannot be modified", table->name);
		return -1;
	}
	if (request->kind == TCOPY__WRITE_KIND__WRITE_DELETE ? request->n_set != 0 :
		request->kind != TCOPY__WRITE_KIND__WRITE_UPDATE || request->n_set == 0 ||
		request->n_set > layout->ncolumns)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "modify must update some columns or delete");
		return -1;
	}
	for (size_t i = 0; i < request->n_set; i++)
	{
		const Tcopy__Assignment *a = request->set[i];

		if (a->column >= layout->ncolumns || layout->is_key[a->column] ||
			(a->op != TCOPY__ASSIGN_OP__ASSIGN_VALUE && a->op != TCOPY__ASSIGN_OP__ASSIGN_ADD) ||
			(a->op == TCOPY__ASSIGN_OP__ASSIGN_ADD &&
			 (layout->kinds[a->column] != TCOPY__KIND__KIND_INT || a->min > a->max)))
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "modify assignment %zu is not valid for table \"%s\"", i, table->name);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (request->set[j]->column == a->column)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
							 "modify assigns column %u twice", a->column);
				return -1;
			}
	}
	return 0;
}

/* Add one row of columns (every column of the layout) to batch, copied into arena. */
static int
modify_add_row(const TsLayout *layout, const TsValue *v, Tcopy__WriteBatch *batch,
			   TcArena *arena)
{
	Tcopy__Row *row = tc_arena_alloc(arena, sizeof(Tcopy__Row));
	uint32_t	n = layout->ncolumns;

	if (row == NULL)
		return -1;
	tcopy__row__init(row);
	row->ints = tc_arena_alloc(arena, (n + 1) * sizeof(int64_t));
	row->floats = tc_arena_alloc(arena, (n + 1) * sizeof(double));
	row->blobs = tc_arena_alloc(arena, (n + 1) * sizeof(ProtobufCBinaryData));
	row->nulls = tc_arena_alloc(arena, (n + 1) * sizeof(uint32_t));
	if (!row->ints || !row->floats || !row->blobs || !row->nulls)
		return -1;
	for (uint32_t c = 0; c < n; c++)
	{
		if (v[c].isnull)
		{
			row->nulls[row->n_nulls++] = c;
			continue;
		}
		switch (layout->kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				row->ints[row->n_ints++] = v[c].i;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				row->floats[row->n_floats++] = v[c].f;
				break;
			default:
				row->blobs[row->n_blobs].len = v[c].len;
				row->blobs[row->n_blobs].data = v[c].len > 0 ?
					tc_arena_memdup(arena, v[c].p, v[c].len) : NULL;
				if (v[c].len > 0 && row->blobs[row->n_blobs].data == NULL)
					return -1;
				row->n_blobs++;
				break;
		}
	}
	batch->rows[batch->n_rows++] = row;
	return 0;
}

int
ts_session_modify(TsSession *session, const Tcopy__Modify *request, uint64_t *changed,
				  TsError *err)
{
	TsStore    *store = session->store;
	TsTable    *table = ts_store_table(store, request->table_id, err);
	Tcopy__Scan scan_request = TCOPY__SCAN__INIT;
	Tcopy__WriteBatch batch = TCOPY__WRITE_BATCH__INIT;
	TsValue    *set_values = NULL;
	TsValue    *row = NULL;
	TsScan	   *scan = NULL;
	const TsLayout *layout;
	TcArena		arena;
	int			result = -1;

	*changed = 0;
	if (table == NULL)
		return -1;
	/* checked under this layout, which the scan must read under too */
	layout = ts_table_layout(table);
	if (modify_check(table, layout, request, err) != 0)
		return -1;
	tc_arena_init(&arena, 64 * 1024);
	set_values = calloc(request->n_set + 1, sizeof(TsValue));
	row = calloc(layout->ncolumns, sizeof(TsValue));
	batch.rows = malloc(MODIFY_BATCH_ROWS * sizeof(Tcopy__Row *));
	if (set_values == NULL || row == NULL || batch.rows == NULL)
		goto oom;
	if (modify_values(layout, request, set_values, err) != 0)
		goto done;

	scan_request.table_id = request->table_id;
	scan_request.lower = request->lower;
	scan_request.upper = request->upper;
	scan_request.session_id = session->id;
	scan_request.session_key.data = session->key;
	scan_request.session_key.len = sizeof(session->key);
	scan_request.for_update = true;
	/* the rows as the session's snapshot has them; its writes check them */
	if (session->snapshot != NULL)
	{
		const uint8_t *key;
		size_t		keylen;

		scan_request.snapshot_id = ts_snapshot_id(session->snapshot, &key, &keylen);
		scan_request.snapshot_key.data = (uint8_t *) key;
		scan_request.snapshot_key.len = keylen;
	}
	scan = ts_scan_open(store, &scan_request, err);
	if (scan == NULL)
		goto done;
	if (ts_scan_layout(scan) != layout)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH,
					 "the columns of table \"%s\" changed under the modify", table->name);
		goto done;
	}
	batch.table_id = request->table_id;
	batch.kind = request->kind;
	for (;;)
	{
		const TsValue *values;
		int			got = ts_scan_next_values(scan, &values, err);

		if (got < 0)
			goto done;
		if (got > 0)
		{
			memcpy(row, values, layout->ncolumns * sizeof(TsValue));
			for (size_t i = 0; i < request->n_set; i++)
			{
				const Tcopy__Assignment *a = request->set[i];
				TsValue    *v = &row[a->column];

				if (a->op == TCOPY__ASSIGN_OP__ASSIGN_VALUE)
					*v = set_values[i];
				else if (set_values[i].isnull)
					v->isnull = true;
				else if (!v->isnull)
				{
					int64_t		sum;

					if (__builtin_add_overflow(v->i, set_values[i].i, &sum) ||
						sum < a->min || sum > a->max)
					{
						ts_error_set(err, TCOPY__ERROR_CODE__ERROR_OUT_OF_RANGE,
									 "column %u out of range", a->column);
						err->table_id = table->id;
						goto done;
					}
					v->i = sum;
				}
			}
			if (modify_add_row(layout, row, &batch, &arena) != 0)
				goto oom;
			(*changed)++;
		}
		if (batch.n_rows > 0 && (got == 0 || batch.n_rows == MODIFY_BATCH_ROWS))
		{
			if (ts_session_write(session, &batch, layout, err) != 0)
				goto done;
			batch.n_rows = 0;
			tc_arena_reset(&arena);
		}
		if (got == 0)
			break;
	}
	result = 0;
	goto done;

oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory modifying rows");
done:
	ts_scan_close(scan);
	free(set_values);
	free(row);
	free(batch.rows);
	tc_arena_free(&arena);
	return result;
}
