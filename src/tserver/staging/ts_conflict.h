/*
 * ts_conflict.h
 *		What a session does with rows of equal keys (on_conflict): each table
 *		the session set a policy for, and the duplicate's report.  A table
 *		without one replaces (the last row wins), and a session with none
 *		pays nothing: ts_conflicts_policy is called only where two records
 *		of one key meet, which is rare.  Design in docs/storage.md, "Duplicate
 *		keys".
 */
#ifndef TS_CONFLICT_H
#define TS_CONFLICT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ts_error.h"
#include "ts_key.h"

/*
 * Fill err with ERROR_DUPLICATE_KEY for the record (key, value) whose key
 * another record of the session has; returns -1.
 */
typedef int (*TsConflictReport) (void *arg, const uint8_t *key, uint32_t keylen,
								 const uint8_t *value, uint32_t valuelen, TsError *err);

/* A table's policy. */
typedef struct TsConflictPolicy
{
	uint32_t	table_id;
	Tcopy__OnConflict policy;
} TsConflictPolicy;

/*
 * The policies of a session's tables.  Only the session's connection sets
 * them, but threads that stage or spill the session's rows read them at
 * the same time (a partition's policy is set while the streams of the
 * session stage other partitions' rows): the entries are appended, and an
 * array outgrown is kept until the session ends, so that a reader loads n,
 * then the array, and reads n entries without a lock.
 */
typedef struct TsConflicts
{
	_Atomic uint32_t n;
	_Atomic(TsConflictPolicy *) entries;
	uint32_t	cap;
	void	   *blocks;			/* the arrays, newest first, freed at the end */
	TsConflictReport report;	/* for ON_CONFLICT_ERROR */
	void	   *report_arg;
} TsConflicts;

/* How many tables have a policy; *entries (if given) their policies. */
static inline uint32_t
ts_conflicts_count(const TsConflicts *conflicts, const TsConflictPolicy **entries)
{
	uint32_t	n = atomic_load_explicit(&conflicts->n, memory_order_acquire);

	if (entries != NULL)
		*entries = atomic_load_explicit(&conflicts->entries, memory_order_acquire);
	return n;
}

/* The policy for key's table (its first 4 bytes); REPLACE without one. */
static inline Tcopy__OnConflict
ts_conflicts_policy(const TsConflicts *conflicts, const uint8_t *key, uint32_t keylen)
{
	const TsConflictPolicy *entries;
	uint32_t	n;
	uint32_t	table_id;

	if (conflicts == NULL || keylen < 4 ||
		(n = ts_conflicts_count(conflicts, &entries)) == 0)
		return TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE;
	table_id = ts_get_be32(key);
	for (uint32_t i = 0; i < n; i++)
		if (entries[i].table_id == table_id)
			return entries[i].policy;
	return TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE;
}

/* Whether any table has a policy other than REPLACE (what is checked). */
static inline bool
ts_conflicts_checked(const TsConflicts *conflicts)
{
	const TsConflictPolicy *entries;
	uint32_t	n = ts_conflicts_count(conflicts, &entries);

	for (uint32_t i = 0; i < n; i++)
		if (entries[i].policy != TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
			return true;
	return false;
}

/*
 * Of n >= 2 records of one key, in arrival order, which to keep: the last
 * (REPLACE), the first (IGNORE); -1 after reporting the second (ERROR).
 */
static inline int
ts_conflicts_pick(const TsConflicts *conflicts, const uint8_t *key, uint32_t keylen,
				  size_t n, const uint8_t *second_value, uint32_t second_valuelen,
				  size_t *keep, TsError *err)
{
	*keep = n - 1;
	switch (ts_conflicts_policy(conflicts, key, keylen))
	{
		case TCOPY__ON_CONFLICT__ON_CONFLICT_IGNORE:
			*keep = 0;
			return 0;
		case TCOPY__ON_CONFLICT__ON_CONFLICT_ERROR:
			return conflicts->report(conflicts->report_arg, key, keylen,
									 second_value, second_valuelen, err);
		default:
			return 0;
	}
}

/*
 * The TsConflictReport of sessions, arg their TsStore: the message names the
 * key columns and the record's values, the table travels in err->table_id.
 */
int			ts_conflict_report_duplicate(void *arg, const uint8_t *key, uint32_t keylen,
										 const uint8_t *value, uint32_t valuelen,
										 TsError *err);

/*
 * Keys of a session checked against the rows stored (committed) already,
 * in increasing key order, through one iterator: a key is looked up with a
 * Seek only when the iterator is below it, so keys in a range that holds
 * no stored row (a load into an empty or disjoint range) cost a memcmp.
 * The iterator reads the store as it was when made: end the check (or let
 * a new SST file start) to see rows committed since.
 */
typedef struct TsStoredCheck
{
	void	   *iter;			/* rocksdb_iterator_t, or NULL before the first */
	bool		exhausted;		/* no stored key at or after the last sought */
} TsStoredCheck;

/*
 * Check a key of the session's (in increasing order from the previous
 * one) against the stored rows, under its table's policy: *skip is set
 * for a stored key under IGNORE; a stored key under ERROR is reported
 * (-1).  0 otherwise.  store is the TsStore; the tables truncated[ntruncated]
 * (by the session, before its rows) have no stored rows to check.
 */
int			ts_stored_check(void *store, const TsConflicts *conflicts,
							const uint32_t *truncated, size_t ntruncated, TsStoredCheck *check,
							const uint8_t *key, uint32_t keylen, const uint8_t *value,
							uint32_t valuelen, bool *skip, TsError *err);
/* The same, given the policy of key's table (ts_conflicts_policy). */
int			ts_stored_check_policy(void *store, Tcopy__OnConflict policy,
								   const TsConflicts *conflicts, const uint32_t *truncated,
								   size_t ntruncated, TsStoredCheck *check, const uint8_t *key,
								   uint32_t keylen, const uint8_t *value, uint32_t valuelen,
								   bool *skip, TsError *err);
void		ts_stored_check_end(TsStoredCheck *check);

/* Set table_id's policy, once (PROTOCOL when set to another); 0 or -1. */
int			ts_conflicts_set(TsConflicts *conflicts, uint32_t table_id,
							 Tcopy__OnConflict policy, TsError *err);
void		ts_conflicts_free(TsConflicts *conflicts);

#endif							/* TS_CONFLICT_H */
