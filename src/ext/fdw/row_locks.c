/*
 * row_locks.c
 *		Postgres' lock manager orders the writers of a tcopy table's rows, as
 *		row locks order a heap table's: an UPDATE or DELETE locks what it
 *		reads before it reads it, and holds the lock to the end of the
 *		transaction, after tcopy has published the transaction's session
 *		(XACT_EVENT_COMMIT runs before the locks are released).  So the
 *		next writer of those rows waits, and then reads what the first one
 *		wrote: no update is lost, deadlocks are found by Postgres' detector,
 *		and a wait can be cancelled or timed out (lock_timeout).
 *
 *		- A scan for UPDATE or DELETE of one key (WHERE key = const on a
 *		  table of one key column) takes an ExclusiveLock on that key: an
 *		  advisory-type lock tag of the database, a 64-bit hash of (table,
 *		  key) and TCOPY_LOCK_FIELD4, which no SQL advisory lock function
 *		  uses (they use 1 and 2).  A hash collision costs a needless wait,
 *		  never a missed one.  First it takes the table's rows tag (the
 *		  database, the table's OID, TCOPY_LOCK_FIELD4 + 1) in
 *		  RowExclusiveLock, which such writers share.
 *		- Any other scan for UPDATE or DELETE takes the table's rows tag in
 *		  ExclusiveLock, which waits for every writer of single keys and of
 *		  ranges, and lets readers and inserts be.  Not Postgres' own lock
 *		  on the table: the executor holds RowExclusiveLock on it already,
 *		  and two writers upgrading it at once would deadlock.
 */

#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"

#include "tcopy/codec.h"
#include "tcopy/fdw.h"
#include "tcopy/transaction.h"


/* The table's rows tag, in mode. */
static void
tcopy_lock_rows_tag(Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, relid, 0, TCOPY_LOCK_FIELD4 + 1);
	(void) LockAcquire(&tag, mode, false, false);
}

void
tcopy_lock_key(Oid relid, int64 key)
{
	LOCKTAG		tag;
	struct
	{
		Oid			relid;
		int64		key;
	}			id;
	uint64		hash;

	tcopy_lock_rows_tag(relid, RowExclusiveLock);
	memset(&id, 0, sizeof(id));
	id.relid = relid;
	id.key = key;
	hash = DatumGetUInt64(hash_any_extended((const unsigned char *) &id, sizeof(id), 0));
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (hash >> 32), (uint32) hash,
						 TCOPY_LOCK_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

void
tcopy_lock_table_rows(Oid relid)
{
	tcopy_lock_rows_tag(relid, ExclusiveLock);
}

/*
 * Lock what an UPDATE or DELETE of range reads, before it reads it: the key,
 * when the range is one key of a table of one key column, else the table's
 * rows (nothing for an empty range).
 */
void
tcopy_lock_range(TcopyRelCodec *codec, const TcopyKeyRange *range)
{
	if (list_length(codec->options.key_attnums) == 1 && range->key_attnum != 0 &&
		range->lower.present && range->upper.present && range->lower.inclusive &&
		range->upper.inclusive && range->lower.value == range->upper.value)
		tcopy_lock_key(codec->relid, range->lower.value);
	else if (!range->empty)
		tcopy_lock_table_rows(codec->relid);
}
