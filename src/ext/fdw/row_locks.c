/*
 * row_locks.c
 *		Postgres' lock manager orders the writers and lockers of a tcopy
 *		table's rows, as row locks order a heap table's.  A row's lock is a
 *		lock tag of its key, taken in the lock manager's mode that heapam.c
 *		takes for the same tuple lock (tupleLockExtraInfo), so that the four
 *		strengths conflict exactly as a heap's do:
 *
 *		  FOR KEY SHARE      AccessShareLock
 *		  FOR SHARE          RowShareLock
 *		  FOR NO KEY UPDATE  ExclusiveLock (and an UPDATE that keeps the key)
 *		  FOR UPDATE         AccessExclusiveLock (and a DELETE, an UPDATE of
 *		                     the key)
 *
 *		A lock is held to the end of the transaction, after tcopy has
 *		published the transaction's session (XACT_EVENT_COMMIT runs before
 *		the locks are released), and goes with a prepared transaction.  So
 *		the next writer of those rows waits, and then reads what the first
 *		one wrote: no update is lost, deadlocks are found by Postgres'
 *		detector, a wait can be cancelled or timed out (lock_timeout), and
 *		pg_locks shows the locks (locktype advisory, objsubid 29795 for a
 *		key, 29796 for a table's rows).
 *
 *		- A key's tag: an advisory-type lock tag of the database, a 64-bit
 *		  hash of (table, key) and TCOPY_LOCK_FIELD4, which no SQL advisory
 *		  lock function uses (they use 1 and 2).  A hash collision costs a
 *		  needless wait, never a missed one.  Whoever takes it first takes
 *		  the table's rows tag (the database, the table's OID,
 *		  TCOPY_LOCK_FIELD4 + 1) in RowExclusiveLock, which such lockers
 *		  share.
 *		- An UPDATE or DELETE that does not name one key (WHERE key = const
 *		  on a table of one key column) takes the table's rows tag in
 *		  ExclusiveLock, which waits for every locker of single keys and of
 *		  ranges, and lets readers and inserts be.  Not Postgres' own lock
 *		  on the table: the executor holds RowExclusiveLock on it already,
 *		  and two writers upgrading it at once would deadlock.  So such a
 *		  statement also waits for FOR KEY SHARE and FOR SHARE lockers,
 *		  where a heap's non-key UPDATE would not.
 *		- SELECT ... FOR UPDATE (and the other strengths) of a table with a
 *		  key locks each row the LockRows node asks for (fdw_row_marks.c),
 *		  with its NOWAIT or SKIP LOCKED; of a table without a key, the
 *		  table's rows tag, in ExclusiveLock for the updating strengths and
 *		  ShareLock for the sharing ones.
 *		- A transaction that has locked KEY_LOCKS_BEFORE_TABLE keys of a
 *		  table locks its rows tag instead, in those modes, waiting: the
 *		  lock manager's shared table would otherwise fill.
 */

#include "postgres.h"

#include "access/sysattr.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "tcopy/codec.h"
#include "tcopy/fdw.h"
#include "tcopy/transaction.h"


LOCKMODE
tcopy_row_lock_mode(LockClauseStrength strength)
{
	switch (strength)
	{
		case LCS_FORKEYSHARE:
			return AccessShareLock;
		case LCS_FORSHARE:
			return RowShareLock;
		case LCS_FORNOKEYUPDATE:
			return ExclusiveLock;
		case LCS_FORUPDATE:
		case LCS_NONE:
			break;
	}
	return AccessExclusiveLock;
}

/*
 * Keys of one table a transaction locks one by one before it locks the
 * table's rows instead: the lock manager's table is shared and small
 * (max_locks_per_transaction a backend), where a heap's row locks take
 * no room in it.
 */
#define KEY_LOCKS_BEFORE_TABLE	256

typedef struct KeyLockCount
{
	Oid			relid;
	int			count;
} KeyLockCount;

/* The table's rows tag. */
static void
rows_tag(LOCKTAG *tag, Oid relid)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, relid, 0, TCOPY_LOCK_FIELD4 + 1);
}

/* The tag of a key, a hash of its bytes with the table's OID. */
static void
key_tag(LOCKTAG *tag, Oid relid, const void *key, size_t len)
{
	uint64		hash;

	hash = DatumGetUInt64(hash_any_extended((const unsigned char *) key, (int) len, relid));
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash >> 32), (uint32) hash,
						 TCOPY_LOCK_FIELD4);
}

/* The tag of a key of one integer column (the key ranges' and the rowmarks' alike). */
static void
int_key_tag(LOCKTAG *tag, Oid relid, int64 key)
{
	struct
	{
		Oid			relid;
		int64		key;
	}			id;

	memset(&id, 0, sizeof(id));
	id.relid = relid;
	id.key = key;
	key_tag(tag, relid, &id, sizeof(id));
}

/*
 * Take tag in mode as policy says: wait (lock_timeout and the deadlock
 * detector apply), fail with Postgres' NOWAIT error, or return false
 * (SKIP LOCKED).  *taken: newly taken, not held before.
 */
static bool
lock_tag(const LOCKTAG *tag, LOCKMODE mode, LockWaitPolicy policy, Relation rel, bool *taken)
{
	LockAcquireResult res;

	res = LockAcquireExtended(tag, mode, false, policy != LockWaitBlock, true, NULL);
	if (res == LOCKACQUIRE_NOT_AVAIL)
	{
		if (policy == LockWaitError)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not obtain lock on row in relation \"%s\"",
							RelationGetRelationName(rel))));
		return false;
	}
	if (taken != NULL)
		*taken = res == LOCKACQUIRE_OK;
	return true;
}

/*
 * The keys of relid this transaction locked one by one (a count that a
 * rolled-back subtransaction's locks leave high: the table is then locked
 * sooner, never later).
 */
static int *
key_locks_of(Oid relid)
{
	static HTAB *counts = NULL;
	static LocalTransactionId counts_lxid = InvalidLocalTransactionId;
	KeyLockCount *entry;
	bool		found;

	if (counts == NULL || counts_lxid != MyProc->lxid)
	{
		HASHCTL		ctl;

		if (counts != NULL)
			hash_destroy(counts);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(KeyLockCount);
		ctl.hcxt = TopMemoryContext;
		counts = hash_create("tcopy key locks", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		counts_lxid = MyProc->lxid;
	}
	entry = hash_search(counts, &relid, HASH_ENTER, &found);
	if (!found)
		entry->count = 0;
	return &entry->count;
}

/*
 * Take a key's tag in mode, the table's rows tag first; false: skipped.
 * Past KEY_LOCKS_BEFORE_TABLE keys of the table in the transaction, the
 * table's rows are locked instead, in ExclusiveLock (ShareLock for the
 * sharing modes), which holds off every locker of its keys: waiting, but
 * under NOWAIT or SKIP LOCKED only if free, else key by key still.
 */
static bool
lock_key_tag(Oid relid, const LOCKTAG *tag, LOCKMODE mode, LockWaitPolicy policy, Relation rel)
{
	LOCKTAG		rows;
	bool		taken = false;
	LOCKMODE	table_mode = mode >= ExclusiveLock ? ExclusiveLock : ShareLock;
	int		   *nkeys;

	rows_tag(&rows, relid);
	if (LockHeldByMe(&rows, ExclusiveLock) ||
		(table_mode == ShareLock && LockHeldByMe(&rows, ShareLock)))
		return true;
	nkeys = key_locks_of(relid);
	if (*nkeys >= KEY_LOCKS_BEFORE_TABLE &&
		lock_tag(&rows, table_mode, policy == LockWaitBlock ? LockWaitBlock : LockWaitSkip,
				 rel, NULL))
		return true;
	if (!lock_tag(&rows, RowExclusiveLock, policy, rel, &taken))
		return false;
	if (lock_tag(tag, mode, policy, rel, NULL))
	{
		(*nkeys)++;
		return true;
	}
	/* skipped: a locker that locks nothing holds off no table-wide writer */
	if (taken)
		LockRelease(&rows, RowExclusiveLock, false);
	return false;
}

void
tcopy_lock_key(Oid relid, int64 key, LOCKMODE mode)
{
	LOCKTAG		tag;

	int_key_tag(&tag, relid, key);
	(void) lock_key_tag(relid, &tag, mode, LockWaitBlock, NULL);
}

bool
tcopy_lock_table_rows(Relation rel, LOCKMODE mode, LockWaitPolicy policy)
{
	LOCKTAG		tag;

	rows_tag(&tag, RelationGetRelid(rel));
	return lock_tag(&tag, mode, policy, rel, NULL);
}

bool
tcopy_lock_row(Relation rel, const Tcopy__Row *key, const uint8 *packed, size_t len,
			   LOCKMODE mode, LockWaitPolicy policy)
{
	LOCKTAG		tag;
	Oid			relid = RelationGetRelid(rel);

	/* a key of one integer: the tag an UPDATE of WHERE key = const takes */
	if (key->n_ints == 1 && key->n_floats == 0 && key->n_blobs == 0)
		int_key_tag(&tag, relid, key->ints[0]);
	else
		key_tag(&tag, relid, packed, len);
	return lock_key_tag(relid, &tag, mode, policy, rel);
}

LOCKMODE
tcopy_modify_lock_mode(TcopyRelCodec *codec, CmdType operation, const Bitmapset *updated_cols)
{
	ListCell   *lc;

	if (operation != CMD_UPDATE)
		return AccessExclusiveLock;
	foreach(lc, codec->options.key_attnums)
	{
		if (bms_is_member(lfirst_int(lc) - FirstLowInvalidHeapAttributeNumber, updated_cols))
			return AccessExclusiveLock;
	}
	return ExclusiveLock;
}

/*
 * Lock what an UPDATE or DELETE of range reads, before it reads it, in
 * mode: the key, when the range is one key of a table of one key column,
 * else the table's rows in ExclusiveLock (nothing for an empty range).
 */
void
tcopy_lock_range(TcopyRelCodec *codec, const TcopyKeyRange *range, LOCKMODE mode)
{
	if (tcopy_key_range_is_one_key(codec, range))
		tcopy_lock_key(codec->relid, range->lower.value, mode);
	else if (!range->empty)
	{
		LOCKTAG		tag;

		rows_tag(&tag, codec->relid);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}
}
