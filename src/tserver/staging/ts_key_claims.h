/*
 * ts_key_claims.h
 *		Duplicate keys across concurrent sessions: each session with an
 *		on_conflict policy ('error' or 'ignore') claims, when it prepares,
 *		the key range it wrote of each such table, and checks the claims of
 *		the sessions prepared, or published since it spilled.  Design in
 *		docs/storage.md, "Concurrent sessions".
 */
#ifndef TS_KEY_CLAIMS_H
#define TS_KEY_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tc_buf.h"
#include "ts_error.h"

typedef struct TsStore TsStore;
typedef struct TsSession TsSession;
typedef struct TsKeyClaim TsKeyClaim;

/* The lowest and highest key a session wrote of one table. */
typedef struct TsKeyRange
{
	uint32_t	table_id;
	TcBuf		first;
	TcBuf		last;
} TsKeyRange;

/* A session's key ranges, one per table with a policy. */
typedef struct TsKeyRanges
{
	TsKeyRange *ranges;			/* [n] */
	uint32_t	n;
	uint32_t	cap;
} TsKeyRanges;

/* Widen the range of key's table (its first 4 bytes) to key; 0 or -1 (memory). */
int			ts_key_ranges_add(TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen);

/*
 * ts_key_ranges_add for a key above every key added before (an SST sink's
 * keys ascend, as SstFileWriter demands): while its table is the last one
 * added, only the last key is replaced, with no comparison.
 */
static inline int
ts_key_ranges_add_ascending(TsKeyRanges *ranges, const uint8_t *key, uint32_t keylen)
{
	TsKeyRange *r = ranges->n > 0 ? &ranges->ranges[ranges->n - 1] : NULL;

	if (r == NULL || keylen < 4 || r->last.cap < keylen ||
		r->table_id != ((uint32_t) key[0] << 24 | (uint32_t) key[1] << 16 |
						(uint32_t) key[2] << 8 | key[3]))
		return ts_key_ranges_add(ranges, key, keylen);
	memcpy(r->last.data, key, keylen);
	r->last.len = keylen;
	return 0;
}

/* Whether key is within the range of its table (its first 4 bytes). */
bool		ts_key_ranges_contain(const TsKeyRanges *ranges, const uint8_t *key,
								  uint32_t keylen);

/* Widen into's ranges by from's; 0 or -1 (memory). */
int			ts_key_ranges_merge(TsKeyRanges *into, const TsKeyRanges *from);
void		ts_key_ranges_free(TsKeyRanges *ranges);

/* Forget the range of table_id (a TRUNCATE dropped its keys). */
void		ts_key_ranges_drop_table(TsKeyRanges *ranges, uint32_t table_id);

/* The store's registry: set up at open, freed at close. */
void		ts_key_claims_init(TsStore *store);
void		ts_key_claims_free_all(TsStore *store);

/*
 * A session with a policy is about to check keys against the stored rows
 * before its prepare (a spill, or the merge at prepare): from now on it
 * must see the claims published (once; a session that never spills never
 * watches, so the claims of sessions published meanwhile can go at once).
 */
void		ts_key_claims_watch(TsSession *session);

/*
 * A session is freed: it no longer watches, and its claim goes unless the
 * session was prepared durably or published (ts_key_claims_keep).
 */
void		ts_key_claims_session_end(TsSession *session);

/*
 * At prepare, once every key of the session is in key order: check the
 * session's keys of its policy tables against the claims of other sessions
 * and claim them.  A session that never spilled is first checked against
 * the stored rows (check_stored, which drops the rows 'ignore' keeps out),
 * under the registry's lock, so that nothing is published between the two
 * checks.  A common key with a prepared session fails the session under
 * 'error' (DUPLICATE_KEY); any overlap that cannot be checked key by key
 * (a spilled session on either side, a prepared session restored at
 * startup, 'ignore' meeting a prepared key) fails it with SERIALIZATION.
 */
int			ts_key_claims_prepare(TsSession *session,
								  int (*check_stored) (TsSession *session, TsError *err),
								  TsError *err);

/* The session's claim outlives it: prepared durably, or published. */
void		ts_key_claims_keep(TsSession *session);

/*
 * The claimed session with id was published (its rows are stored): its
 * claim now matters only to the sessions that were watching before.
 */
void		ts_key_claims_published(TsStore *store, uint64_t session_id);

/* The claimed session with id was discarded: its claim goes. */
void		ts_key_claims_release(TsStore *store, uint64_t session_id);

/*
 * At startup, a recorded prepared session: it claims every key of its
 * policy tables, tables[n] (its keys are not read back).
 */
int			ts_key_claims_restore(TsStore *store, uint64_t session_id,
								  const uint32_t *tables, size_t n, TsError *err);

#endif							/* TS_KEY_CLAIMS_H */
