/*
 * ssi.c
 *		Postgres' serializable snapshot isolation told of the reads and
 *		writes of tcopy tables, at the granularity of a part of the table
 *		(docs/snapshots.md#serializable).
 *
 * A table is split in TCOPY_SSI_PARTS parts by a hash of its key, when it
 * has one key column of an integer type: a read or write of one key (WHERE
 * key = const, a row written) is a read or write of its part, anything
 * else of every part (tcopy_ssi_part, TCOPY_SSI_ALL).  A part is what SSI
 * calls a page of the table: a read of one part takes a predicate lock on
 * the page of that number (PredicateLockPage), which a write of that part
 * meets (CheckForSerializableConflictIn with the number: it checks the
 * page and the relation); a read of every part locks the relation, which
 * every write meets, and a write of every part checks every page.  Two
 * transactions that read and write different keys then conflict only when
 * their keys share a part (one chance in TCOPY_SSI_PARTS), where a heap's
 * row locks never would.
 *
 * SSI finds a rw-conflict (a reader that did not see a concurrent write)
 * in two ways.  A write after the read: the writer meets the reader's
 * predicate lock (CheckForSerializableConflictIn), here one on the whole
 * table (PredicateLockRelation).  A read after the write: the reader meets
 * a row version the writer made that its snapshot does not show
 * (CheckForSerializableConflictOut, given the version's xid), which a
 * tcopy row does not carry.  So each tcopy table has, in shared memory,
 * the xids of the SERIALIZABLE transactions that wrote it lately, and a
 * SERIALIZABLE read of the table meets every one its snapshot does not
 * show, as it would meet their row versions in a heap table.
 *
 * A table keeps TCOPY_SSI_WRITERS writers.  When it needs room, or the
 * shared table room for another table, the entries every snapshot shows
 * are dropped (older than the oldest xmin there is); when that is not
 * enough, the oldest writer is, and remembered as lost: a read whose
 * snapshot may not show a lost writer fails with 40001 rather than miss a
 * conflict.
 */

#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "tcopy/transaction.h"

#define TCOPY_SSI_TABLES 1024	/* tables written under SERIALIZABLE at once */
#define TCOPY_SSI_WRITERS 64	/* writers remembered per table */

typedef struct TcopySsiKey
{
	Oid			dbid;
	Oid			relid;
} TcopySsiKey;

typedef struct TcopySsiTable
{
	TcopySsiKey key;
	int			nwriters;
	TransactionId writers[TCOPY_SSI_WRITERS];
	uint64		parts[TCOPY_SSI_WRITERS];	/* the parts each wrote */
	TransactionId lost;			/* the newest writer dropped while it still
								 * mattered; InvalidTransactionId: none */
} TcopySsiTable;

typedef struct TcopySsiShared
{
	LWLock	   *lock;
	TransactionId lost;			/* the same, for a whole table dropped */
} TcopySsiShared;

static TcopySsiShared *tcopy_ssi;
static HTAB *tcopy_ssi_tables;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
tcopy_ssi_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(TcopySsiShared)) +
						   hash_estimate_size(TCOPY_SSI_TABLES, sizeof(TcopySsiTable)));
	RequestNamedLWLockTranche("tcopy_ssi", 1);
}

static void
tcopy_ssi_shmem_startup(void)
{
	HASHCTL		info;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	tcopy_ssi = ShmemInitStruct("tcopy_ssi", sizeof(TcopySsiShared), &found);
	if (!found)
	{
		tcopy_ssi->lock = &(GetNamedLWLockTranche("tcopy_ssi"))->lock;
		tcopy_ssi->lost = InvalidTransactionId;
	}
	info.keysize = sizeof(TcopySsiKey);
	info.entrysize = sizeof(TcopySsiTable);
	tcopy_ssi_tables = ShmemInitHash("tcopy_ssi tables", TCOPY_SSI_TABLES, TCOPY_SSI_TABLES,
									 &info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init: only a library in shared_preload_libraries has the memory. */
void
TcopySsiInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = tcopy_ssi_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = tcopy_ssi_shmem_startup;
}

static void
tcopy_ssi_require(void)
{
	if (tcopy_ssi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("SERIALIZABLE reads and writes of tcopy tables need tcopy in shared_preload_libraries"),
				 errdetail("The writers of each tcopy table are kept in shared memory for Postgres' serializable snapshot isolation."),
				 errhint("Add tcopy to shared_preload_libraries and restart, or use REPEATABLE READ.")));
}

static void
tcopy_ssi_note_lost(TransactionId *lost, TransactionId xid)
{
	if (!TransactionIdIsValid(*lost) || TransactionIdFollows(xid, *lost))
		*lost = xid;
}

/* Make room in entry for a writer; with the lock held exclusive. */
static void
tcopy_ssi_make_room(TcopySsiTable *entry, TransactionId horizon)
{
	int			kept = 0;
	int			oldest = 0;

	for (int i = 0; i < entry->nwriters; i++)
		if (!TransactionIdPrecedes(entry->writers[i], horizon))
		{
			entry->parts[kept] = entry->parts[i];
			entry->writers[kept++] = entry->writers[i];
		}
	entry->nwriters = kept;
	if (TransactionIdIsValid(entry->lost) && TransactionIdPrecedes(entry->lost, horizon))
		entry->lost = InvalidTransactionId;
	if (entry->nwriters < TCOPY_SSI_WRITERS)
		return;
	for (int i = 1; i < entry->nwriters; i++)
		if (TransactionIdPrecedes(entry->writers[i], entry->writers[oldest]))
			oldest = i;
	tcopy_ssi_note_lost(&entry->lost, entry->writers[oldest]);
	entry->nwriters--;
	entry->writers[oldest] = entry->writers[entry->nwriters];
	entry->parts[oldest] = entry->parts[entry->nwriters];
}

/* Make room for another table; with the lock held exclusive. */
static void
tcopy_ssi_drop_tables(TransactionId horizon)
{
	HASH_SEQ_STATUS scan;
	TcopySsiTable *entry;
	TcopySsiTable *victim = NULL;

	hash_seq_init(&scan, tcopy_ssi_tables);
	while ((entry = hash_seq_search(&scan)) != NULL)
	{
		tcopy_ssi_make_room(entry, horizon);
		if (entry->nwriters == 0 && !TransactionIdIsValid(entry->lost))
			(void) hash_search(tcopy_ssi_tables, &entry->key, HASH_REMOVE, NULL);
		else if (victim == NULL)
			victim = entry;
	}
	if (hash_get_num_entries(tcopy_ssi_tables) < TCOPY_SSI_TABLES || victim == NULL)
		return;
	for (int i = 0; i < victim->nwriters; i++)
		tcopy_ssi_note_lost(&tcopy_ssi->lost, victim->writers[i]);
	if (TransactionIdIsValid(victim->lost))
		tcopy_ssi_note_lost(&tcopy_ssi->lost, victim->lost);
	(void) hash_search(tcopy_ssi_tables, &victim->key, HASH_REMOVE, NULL);
}

uint64
tcopy_ssi_part(int64 key)
{
	return UINT64CONST(1) << (DatumGetUInt64(hash_uint32_extended((uint32) key,
																   (uint64) (key >> 32)))
							  % TCOPY_SSI_PARTS);
}

/* SSI's conflict check of a write of parts of rel: page by page, or the relation. */
static void
tcopy_ssi_conflict_in(Relation rel, uint64 parts)
{
	for (int p = 0; p < TCOPY_SSI_PARTS; p++)
		if (parts & (UINT64CONST(1) << p))
			CheckForSerializableConflictIn(rel, NULL, (BlockNumber) p);
}

/*
 * A write of parts of rel: to SSI, a write of them; under SERIALIZABLE,
 * the transaction is one of the table's writers from now on, of those
 * parts.
 */
void
tcopy_ssi_write_parts(Relation rel, uint64 parts)
{
	TcopySsiKey key;
	TcopySsiTable *entry;
	TransactionId xid;
	bool		found;

	/* SSI sees no write of a transaction that is not serializable */
	if (!IsolationIsSerializable())
		return;
	tcopy_ssi_require();
	xid = GetTopTransactionId();	/* as a heap insert: SSI knows it by it */
	key.dbid = MyDatabaseId;
	key.relid = RelationGetRelid(rel);

	LWLockAcquire(tcopy_ssi->lock, LW_EXCLUSIVE);
	entry = hash_search(tcopy_ssi_tables, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		if (hash_get_num_entries(tcopy_ssi_tables) >= TCOPY_SSI_TABLES)
			tcopy_ssi_drop_tables(GetOldestNonRemovableTransactionId(NULL));
		entry = hash_search(tcopy_ssi_tables, &key, HASH_ENTER, &found);
		entry->nwriters = 0;
		entry->lost = InvalidTransactionId;
	}
	found = false;
	for (int i = 0; i < entry->nwriters && !found; i++)
		if (TransactionIdEquals(entry->writers[i], xid))
		{
			entry->parts[i] |= parts;
			found = true;
		}
	if (!found)
	{
		if (entry->nwriters == TCOPY_SSI_WRITERS)
			tcopy_ssi_make_room(entry, GetOldestNonRemovableTransactionId(NULL));
		entry->parts[entry->nwriters] = parts;
		entry->writers[entry->nwriters++] = xid;
	}
	LWLockRelease(tcopy_ssi->lock);

	/*
	 * Then the readers' predicate locks: a reader that locks after this
	 * check finds the writer in the list (a heap's writer holds the buffer
	 * lock across the same two steps)
	 */
	tcopy_ssi_conflict_in(rel, parts);
}

void
tcopy_ssi_write(Relation rel)
{
	tcopy_ssi_write_parts(rel, TCOPY_SSI_ALL);
}

/* Whether snapshot does not show writer xid: it ran or began after it. */
static bool
tcopy_ssi_unseen(TransactionId xid, Snapshot snapshot)
{
	return TransactionIdIsValid(xid) && XidInMVCCSnapshot(xid, snapshot);
}

/*
 * A read of parts of rel as of snapshot (a scan's start): to SSI, a read
 * of them (of the whole table: a lock on the relation), and under
 * SERIALIZABLE, a read past every write of them its snapshot does not
 * show.
 */
void
tcopy_ssi_read_parts(Relation rel, Snapshot snapshot, uint64 parts)
{
	TcopySsiKey key;
	TcopySsiTable *entry;
	TransactionId unseen[TCOPY_SSI_WRITERS];
	int			nunseen = 0;
	bool		lost;

	if (parts == TCOPY_SSI_ALL)
		PredicateLockRelation(rel, snapshot);
	else
		for (int p = 0; p < TCOPY_SSI_PARTS; p++)
			if (parts & (UINT64CONST(1) << p))
				PredicateLockPage(rel, (BlockNumber) p, snapshot);
	if (!IsolationIsSerializable() || !IsMVCCSnapshot(snapshot))
		return;
	tcopy_ssi_require();
	key.dbid = MyDatabaseId;
	key.relid = RelationGetRelid(rel);

	LWLockAcquire(tcopy_ssi->lock, LW_SHARED);
	lost = tcopy_ssi_unseen(tcopy_ssi->lost, snapshot);
	entry = hash_search(tcopy_ssi_tables, &key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		lost |= tcopy_ssi_unseen(entry->lost, snapshot);
		for (int i = 0; i < entry->nwriters; i++)
			if ((entry->parts[i] & parts) != 0 &&
				!TransactionIdIsCurrentTransactionId(entry->writers[i]) &&
				tcopy_ssi_unseen(entry->writers[i], snapshot))
				unseen[nunseen++] = entry->writers[i];
	}
	LWLockRelease(tcopy_ssi->lock);

	if (lost)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to read/write dependencies among transactions"),
				 errdetail("Reason code: too many concurrent serializable writers of tcopy table \"%s\" to track.",
						   RelationGetRelationName(rel)),
				 errhint("The transaction might succeed if retried.")));
	for (int i = 0; i < nunseen; i++)
		CheckForSerializableConflictOut(rel, unseen[i], snapshot);
}

void
tcopy_ssi_read(Relation rel, Snapshot snapshot)
{
	tcopy_ssi_read_parts(rel, snapshot, TCOPY_SSI_ALL);
}
