/*
 * ts_schema.c
 *		Whether a client's schema matches a table's stored one, and whether
 *		it replaces it (docs/protocol.md#requests-and-states): of the same
 *		shape, by names, kinds, typmods, forms and missing values; of
 *		another, as the table after ADD or DROP COLUMN (or before it, the
 *		ALTER rolled back).
 */
#include "ts_storage_int.h"

#include <string.h>

/* Whether a column has a form (clients before forms send none). */
static inline bool
column_has_form(const Tcopy__Column *column)
{
	return column->form != NULL && column->form[0] != '\0';
}

/* Whether column i of schema is a key column. */
bool
ts_schema_is_key(const Tcopy__Schema *schema, size_t i)
{
	for (size_t k = 0; k < schema->n_key; k++)
		if (schema->key[k] == i)
			return true;
	return false;
}

/* Whether two missing values (Column.missing) are the same. */
static bool
missing_equal(const Tcopy__Row *a, const Tcopy__Row *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (a->n_ints != b->n_ints || a->n_floats != b->n_floats || a->n_blobs != b->n_blobs)
		return false;
	if (a->n_ints > 0 && memcmp(a->ints, b->ints, a->n_ints * sizeof(int64_t)) != 0)
		return false;
	if (a->n_floats > 0 && memcmp(a->floats, b->floats, a->n_floats * sizeof(double)) != 0)
		return false;
	for (size_t i = 0; i < a->n_blobs; i++)
		if (a->blobs[i].len != b->blobs[i].len ||
			(a->blobs[i].len > 0 && memcmp(a->blobs[i].data, b->blobs[i].data, a->blobs[i].len) != 0))
			return false;
	return true;
}

/*
 * Compare column b, given, with a, stored at the same place (the i-th,
 * 1-based, for messages): names, kinds and typmods, then forms when both
 * have one, else type names.  A dropped b matches any a, which stays (rows
 * may hold values of its kind there); a dropped a, stored for a column
 * dropped before any row held it, matches any b, which replaces it.  0 when they match, with *more set when b
 * says more (a form a has not, a renamed type of the same form, another
 * missing value) and *less when it says less (no form where a has one);
 * else -1 with the difference in err.
 */
static int
column_compare(const char *table, size_t i, const Tcopy__Column *a,
			   const Tcopy__Column *b, bool *more, bool *less, TsError *err)
{
	Tcopy__ErrorCode code = TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH;
	bool		by_form = column_has_form(a) && column_has_form(b);
	bool		same_type = strcmp(a->type_name, b->type_name) == 0;

	/* a column dropped on the client keeps the stored one (and its values) */
	if (b->dropped)
		return 0;
	/* a placeholder stored for one dropped before any row held it */
	if (a->dropped)
	{
		*more = true;
		return 0;
	}
	if (strcmp(a->name, b->name) != 0 || a->kind != b->kind ||
		a->typmod != b->typmod || (!by_form && !same_type))
	{
		ts_error_set(err, code,
					 "column %zu of table \"%s\" is \"%s\" %s(%d) on the tserver, not \"%s\" %s(%d)",
					 i, table, a->name, a->type_name, a->typmod,
					 b->name, b->type_name, b->typmod);
		return -1;
	}
	if (by_form && strcmp(a->form, b->form) != 0)
	{
		ts_error_set(err, code,
					 "column %zu of table \"%s\" is \"%s\" %s(%d) of form \"%s\" on the tserver, not \"%s\" %s(%d) of form \"%s\"",
					 i, table, a->name, a->type_name, a->typmod, a->form,
					 b->name, b->type_name, b->typmod, b->form);
		return -1;
	}
	if ((!column_has_form(a) && column_has_form(b)) || (by_form && !same_type) ||
		!missing_equal(a->missing, b->missing))
		*more = true;
	if (column_has_form(a) && !column_has_form(b))
		*less = true;
	return 0;
}

/*
 * Compare a given schema with the stored one.  0 when they match, with
 * *upgrade set when the given one is to replace the stored one; else -1
 * with the first difference in err.
 *
 * Of the same shape (columns and key indexes), they match column by column
 * (column_compare), and the given one replaces the stored one when it says
 * more and no less (see ts_store_open_table).
 *
 * Of another shape, the given schema is the table's after ALTER TABLE ...
 * ADD COLUMN (or before it, the ALTER rolled back): the same key columns,
 * in key order, and the same non-key columns in order, as far as both
 * have them; the given one may have more (added) or fewer (an added one
 * rolled back).  It replaces the stored one: stored values are non-key
 * columns in order (ts_codec.h), so a row written under either reads
 * under the other, a column it lacks as its missing value.  The client's
 * catalogue is the authority on which columns the table has: rows holding
 * a column exist only once the client's ALTER committed.
 */
int
ts_schema_compare(const char *table, const Tcopy__Schema *stored,
			   const Tcopy__Schema *given, bool *upgrade, TsError *err)
{
	Tcopy__ErrorCode code = TCOPY__ERROR_CODE__ERROR_SCHEMA_MISMATCH;
	bool		says_more = false;
	bool		says_less = false;
	size_t		si = 0,
				gi = 0;

	*upgrade = false;
	if (stored->n_columns == given->n_columns && stored->n_key == given->n_key &&
		(stored->n_key == 0 ||
		 memcmp(stored->key, given->key, stored->n_key * sizeof(uint32_t)) == 0))
	{
		for (size_t i = 0; i < stored->n_columns; i++)
			if (column_compare(table, i + 1, stored->columns[i], given->columns[i],
							   &says_more, &says_less, err) != 0)
				return -1;
		*upgrade = says_more && !says_less;
		return 0;
	}

	if (stored->n_key != given->n_key)
	{
		ts_error_set(err, code, "table \"%s\" has different key columns on the tserver", table);
		return -1;
	}
	for (size_t k = 0; k < stored->n_key; k++)
		if (column_compare(table, given->key[k] + 1, stored->columns[stored->key[k]],
						   given->columns[given->key[k]], &says_more, &says_less, err) != 0)
			return -1;
	/* the non-key columns in order, as far as both go */
	for (;;)
	{
		while (si < stored->n_columns && ts_schema_is_key(stored, si))
			si++;
		while (gi < given->n_columns && ts_schema_is_key(given, gi))
			gi++;
		if (si == stored->n_columns || gi == given->n_columns)
			break;
		if (column_compare(table, gi + 1, stored->columns[si], given->columns[gi],
						   &says_more, &says_less, err) != 0)
			return -1;
		si++;
		gi++;
	}
	if (says_less)
	{
		ts_error_set(err, code, "table \"%s\" has columns of forms the given schema lacks", table);
		return -1;
	}
	*upgrade = true;
	return 0;
}

