/*
 * ts_conflict.c
 *		A session's on_conflict policies, and the report of a duplicate key
 *		(ERROR_DUPLICATE_KEY): the duplicate record's key values, for the
 *		extension to print with its types' output functions as Postgres
 *		does, and a message in Postgres' words, "Key (a, b)=(1, x) already
 *		exists.", from the stored forms, for other clients (and older
 *		extensions), which print it as it is.
 */
#include "ts_staging.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


_Static_assert(TS_ERROR_ROW_COLUMNS == TS_MAX_KEY_COLUMNS,
			   "a duplicate's row in a TsError holds every key column");

/* An array of policies, in the chain of those a TsConflicts made. */
typedef struct ConflictBlock
{
	struct ConflictBlock *next;	/* the one it outgrew */
	TsConflictPolicy entries[];
} ConflictBlock;

int
ts_conflicts_set(TsConflicts *conflicts, uint32_t table_id, Tcopy__OnConflict policy,
				 TsError *err)
{
	const TsConflictPolicy *entries;
	uint32_t	n = ts_conflicts_count(conflicts, &entries);
	TsConflictPolicy *last;

	if (policy != TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE &&
		policy != TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE &&
		policy != TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL, "unknown on_conflict %d", (int) policy);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		if (entries[i].table_id != table_id)
			continue;
		if (entries[i].policy == policy)
			return 0;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "on_conflict of table id %u set to another policy in the same session",
					 table_id);
		return -1;
	}
	if (n == conflicts->cap)
	{
		/* a reader may still read the old array: it is kept, not freed */
		uint32_t	cap = conflicts->cap ? conflicts->cap * 2 : 4;
		ConflictBlock *block = malloc(offsetof(ConflictBlock, entries) +
									  cap * sizeof(TsConflictPolicy));

		if (block == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
			return -1;
		}
		if (n > 0)
			memcpy(block->entries, entries, n * sizeof(TsConflictPolicy));
		block->next = conflicts->blocks;
		conflicts->blocks = block;
		conflicts->cap = cap;
		atomic_store_explicit(&conflicts->entries, block->entries, memory_order_release);
	}
	/* readers see the entry once the count says so */
	last = atomic_load_explicit(&conflicts->entries, memory_order_relaxed) + n;
	last->table_id = table_id;
	last->policy = policy;
	atomic_store_explicit(&conflicts->n, n + 1, memory_order_release);
	return 0;
}

void
ts_conflicts_free(TsConflicts *conflicts)
{
	ConflictBlock *block = conflicts->blocks;

	while (block != NULL)
	{
		ConflictBlock *next = block->next;

		free(block);
		block = next;
	}
	atomic_store(&conflicts->n, 0);
	atomic_store(&conflicts->entries, NULL);
	conflicts->cap = 0;
	conflicts->blocks = NULL;
}

/* Append s to buf[size] at *len, cut to fit. */
static void
append(char *buf, size_t size, size_t *len, const char *s, size_t n)
{
	if (*len + 1 >= size)
		return;
	if (n > size - 1 - *len)
		n = size - 1 - *len;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

/*
 * Append a value as the extension's stored form spells it: integers and
 * floats in decimal, booleans as Postgres prints them, bytes as they are
 * when printable (the text forms of docs/values.md), else in hex.
 */
static void
append_value(char *buf, size_t size, size_t *len, Tcopy__Kind kind, const TsValue *v)
{
	char		num[64];
	bool		printable = true;

	switch (kind)
	{
		case TCOPY__KIND__KIND_BOOL:
			append(buf, size, len, v->i ? "t" : "f", 1);
			return;
		case TCOPY__KIND__KIND_INT:
			snprintf(num, sizeof(num), "%lld", (long long) v->i);
			append(buf, size, len, num, strlen(num));
			return;
		case TCOPY__KIND__KIND_FLOAT:
			snprintf(num, sizeof(num), "%.17g", v->f);
			append(buf, size, len, num, strlen(num));
			return;
		default:
			break;
	}
	for (size_t i = 0; i < v->len; i++)
		if (v->p[i] < 0x20 || v->p[i] == 0x7f)
			printable = false;
	if (printable)
	{
		append(buf, size, len, (const char *) v->p, v->len);
		return;
	}
	append(buf, size, len, "\\x", 2);
	for (size_t i = 0; i < v->len; i++)
	{
		snprintf(num, sizeof(num), "%02x", v->p[i]);
		append(buf, size, len, num, 2);
	}
}

/*
 * The column whose value a key column stands for: a hidden image column
 * "tcopy:key_image(c)" (docs/values.md, Keys) stands for column c, as
 * written; any other column for itself.
 */
static uint32_t
key_shown_column(const Tcopy__Schema *schema, uint32_t k)
{
	static const char prefix[] = "tcopy:key_image(";
	const char *name = schema->columns[k]->name;
	size_t		len = strlen(name);

	if (len <= sizeof(prefix) || strncmp(name, prefix, sizeof(prefix) - 1) != 0 ||
		name[len - 1] != ')')
		return k;
	for (uint32_t c = 0; c < schema->n_columns; c++)
	{
		const char *other = schema->columns[c]->name;

		if (strlen(other) == len - sizeof(prefix) &&
			strncmp(other, name + sizeof(prefix) - 1, len - sizeof(prefix)) == 0)
			return c;
	}
	return k;
}

/*
 * Put the shown key values of a duplicate (column shown[i] of values, in key
 * order) into err as Error.duplicate, packed, when they fit: a Row laid out
 * as a scan projecting those columns lays it out.
 */
static void
set_duplicate_row(TsError *err, const TsLayout *layout, const uint32_t *shown,
				  uint32_t nshown, const TsValue *values)
{
	Tcopy__Row	row = TCOPY__ROW__INIT;
	int64_t		ints[TS_ERROR_ROW_COLUMNS];
	double		floats[TS_ERROR_ROW_COLUMNS];
	ProtobufCBinaryData blobs[TS_ERROR_ROW_COLUMNS];
	uint32_t	nulls[TS_ERROR_ROW_COLUMNS];

	row.ints = ints;
	row.floats = floats;
	row.blobs = blobs;
	row.nulls = nulls;
	for (uint32_t i = 0; i < nshown; i++)
	{
		const TsValue *v = &values[shown[i]];

		if (v->isnull)
		{
			nulls[row.n_nulls++] = i;
			continue;
		}
		switch (layout->kinds[shown[i]])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				ints[row.n_ints++] = v->i;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				floats[row.n_floats++] = v->f;
				break;
			default:
				blobs[row.n_blobs].data = (uint8_t *) v->p;
				blobs[row.n_blobs++].len = v->len;
				break;
		}
	}
	if (tcopy__row__get_packed_size(&row) > TS_ERROR_ROW_MAX)
		return;
	err->row_len = (uint32_t) tcopy__row__pack(&row, err->row);
	memcpy(err->columns, shown, nshown * sizeof(uint32_t));
	err->ncolumns = nshown;
}

int
ts_conflict_report_duplicate(void *arg, const uint8_t *key, uint32_t keylen,
							 const uint8_t *value, uint32_t valuelen, TsError *err)
{
	TsStore    *store = arg;
	TsTable    *table;
	TsValue    *values = NULL;
	TcArena		scratch;
	char		columns[256] = "",
				shown[256] = "";
	size_t		clen = 0,
				slen = 0;
	uint32_t	table_id = keylen >= TS_TABLE_ID_SIZE ? ts_get_be32(key) : 0;
	uint32_t	shown_columns[TS_ERROR_ROW_COLUMNS];
	uint32_t	nshown = 0;

	tc_arena_init(&scratch, 1024);
	pthread_rwlock_rdlock(&store->tables_lock);
	table = ts_store_table_locked(store, table_id, err);
	if (table != NULL && ts_table_layout(table)->nkey > 0 &&
		(values = calloc(ts_table_layout(table)->ncolumns, sizeof(TsValue))) != NULL &&
		ts_row_decode(ts_table_layout(table), key, keylen, value, valuelen, values, &scratch))
	{
		for (uint32_t i = 0; i < ts_table_layout(table)->nkey; i++)
		{
			uint32_t	c = key_shown_column(table->schema, ts_table_layout(table)->key_columns[i]);
			const char *name = table->schema->columns[c]->name;

			if (i > 0)
			{
				append(columns, sizeof(columns), &clen, ", ", 2);
				append(shown, sizeof(shown), &slen, ", ", 2);
			}
			append(columns, sizeof(columns), &clen, name, strlen(name));
			if (values[c].isnull)
				append(shown, sizeof(shown), &slen, "null", 4);
			else
				append_value(shown, sizeof(shown), &slen, ts_table_layout(table)->kinds[c], &values[c]);
			shown_columns[nshown++] = c;
		}
	}
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_DUPLICATE_KEY,
				 "Key (%s)=(%s) already exists.", columns, shown);
	err->table_id = table_id;
	if (nshown > 0)
		set_duplicate_row(err, ts_table_layout(table), shown_columns, nshown, values);
	pthread_rwlock_unlock(&store->tables_lock);
	free(values);
	tc_arena_free(&scratch);
	return -1;
}

int
ts_stored_check(void *arg, const TsConflicts *conflicts,
				const uint32_t *truncated, size_t ntruncated, TsStoredCheck *check,
				const uint8_t *key, uint32_t keylen, const uint8_t *value,
				uint32_t valuelen, bool *skip, TsError *err)
{
	return ts_stored_check_policy(arg, ts_conflicts_policy(conflicts, key, keylen), conflicts,
								  truncated, ntruncated, check, key, keylen, value, valuelen,
								  skip, err);
}

int
ts_stored_check_policy(void *arg, Tcopy__OnConflict policy, const TsConflicts *conflicts,
					   const uint32_t *truncated, size_t ntruncated, TsStoredCheck *check,
					   const uint8_t *key, uint32_t keylen, const uint8_t *value,
					   uint32_t valuelen, bool *skip, TsError *err)
{
	TsStore    *store = arg;
	rocksdb_iterator_t *it = check->iter;
	const char *found;
	size_t		found_len;

	*skip = false;
	if (policy == TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
		return 0;
	for (size_t i = 0; i < ntruncated; i++)
		if (truncated[i] == ts_get_be32(key))
			return 0;
	if (it == NULL)
	{
		it = rocksdb_create_iterator_cf(store->db, store->read_default, store->cf_data);
		check->iter = it;
		check->exhausted = false;
		rocksdb_iter_seek(it, (const char *) key, keylen);
	}
	else if (check->exhausted)
		return 0;
	else if (rocksdb_iter_valid(it))
	{
		found = rocksdb_iter_key(it, &found_len);
		if (ts_key_compare((const uint8_t *) found, (uint32_t) found_len, key, keylen) < 0)
			rocksdb_iter_seek(it, (const char *) key, keylen);
	}
	if (!rocksdb_iter_valid(it))
	{
		check->exhausted = true;
		return 0;
	}
	found = rocksdb_iter_key(it, &found_len);
	if (found_len != keylen || memcmp(found, key, keylen) != 0)
		return 0;
	if (policy == TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE)
	{
		*skip = true;
		return 0;
	}
	return conflicts->report(conflicts->report_arg, key, keylen, value, valuelen, err);
}

void
ts_stored_check_end(TsStoredCheck *check)
{
	if (check->iter != NULL)
		rocksdb_iter_destroy(check->iter);
	check->iter = NULL;
	check->exhausted = false;
}
