/*
 * fdw_row_marks.c
 *		SELECT ... FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE and FOR KEY
 *		SHARE of a tcopy table: each row Postgres' LockRows node asks for is
 *		locked in Postgres' lock manager (row_locks.c), then read again, as
 *		heap_lock_tuple locks a tuple and follows it to its latest version.
 *
 * The planner gives a locked table with a key the rowmark of its strength
 * (tcopyGetForeignRowMarkType), and so asks its scan for a ctid.  A tcopy
 * row has none: the scan numbers the rows it returns instead, the number
 * in the slot's tts_tid, and keeps each one's key and a hash of its bytes
 * (a locking scan's memory grows by a key a row).  LockRows hands the
 * number back to RefetchForeignRow, which:
 *
 * - locks the key in the mode of the strength, as the wait policy says:
 *   waits (lock_timeout and the deadlock detector apply), fails with
 *   NOWAIT's error, or skips the row (SKIP LOCKED);
 * - reads the row again by its key, as committed now with the
 *   transaction's own writes over it, on a connection of its own (the
 *   scan's may still be streaming):
 *   - unchanged: locked, as read;
 *   - changed or gone while the transaction's snapshot holds
 *     (REPEATABLE READ, SERIALIZABLE): 40001, "could not serialize access
 *     due to concurrent update", the heap's words;
 *   - changed under READ COMMITTED: the new version goes back to LockRows
 *     as updated, which rechecks it against the query's quals
 *     (EvalPlanQual; every qual is evaluated locally, fdw.c); gone: the
 *     row is skipped.
 *   FOR KEY SHARE does not conflict with an update that kept the key: the
 *   row as read is locked, whatever its other columns became, as
 *   heap_lock_tuple does.  An update of the key is a delete and an insert
 *   here: a locker of the old key finds it gone, where a heap's follows
 *   the row to its new key.
 *
 * So a locked row is always its latest committed version, as on a heap,
 * and costs one round trip more than it was read in.  A transaction that
 * has locked 256 keys of a table one by one locks the table's rows
 * instead (row_locks.c), as the lock manager's table is small; other
 * lockers and writers of the table then wait for the transaction's end.  A table without a
 * key cannot name a row: its rowmark is ROW_MARK_COPY, and its scan locks
 * the table's rows at its start.
 */

#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tcopy/fdw.h"

/* A number of a row in a tts_tid: offsets run 1..65535. */
#define TID_ROWS_PER_BLOCK	65535

struct TcopyRowMarks
{
	TcopyRelCodec *codec;
	Relation	rel;
	LOCKMODE	mode;
	LockWaitPolicy policy;
	MemoryContext cxt;			/* the keys, for the scan's life */
	MemoryContext row_cxt;		/* the row read again, until the next */
	TcopyRowBuf rowbuf;
	Tcopy__Row **keys;			/* [nrows] the scan returned, by number */
	uint64	   *hashes;			/* [nrows] of their packed bytes */
	uint64		nrows;
	uint64		capacity;
	int		   *proj;			/* every live column */
	int			nproj;
	TcopyPointReader reader;	/* reads again */
};

RowMarkType
tcopyGetForeignRowMarkType(RangeTblEntry *rte, LockClauseStrength strength)
{
	Relation	rel;
	bool		key_bytes;
	bool		has_key;

	if (strength == LCS_NONE)
		return ROW_MARK_COPY;
	rel = table_open(rte->relid, NoLock);
	has_key = tcopy_rel_key_attnums(rel, &key_bytes) != NIL;
	table_close(rel, NoLock);
	if (!has_key)
		return ROW_MARK_COPY;
	switch (strength)
	{
		case LCS_FORKEYSHARE:
			return ROW_MARK_KEYSHARE;
		case LCS_FORSHARE:
			return ROW_MARK_SHARE;
		case LCS_FORNOKEYUPDATE:
			return ROW_MARK_NOKEYEXCLUSIVE;
		default:
			return ROW_MARK_EXCLUSIVE;
	}
}

TcopyRowMarks *
tcopy_row_marks_begin(TcopyRelCodec *codec, Relation rel, EState *estate, Index rti,
					  bool *skip_all)
{
	ExecRowMark *erm = ExecFindRowMark(estate, rti, true);
	TcopyRowMarks *marks;

	*skip_all = false;
	/* an EvalPlanQual recheck's scan returns the row LockRows gave it */
	if (erm == NULL || erm->strength == LCS_NONE || estate->es_epq_active != NULL)
		return NULL;
	if (erm->markType == ROW_MARK_COPY)
	{
		/* no key: every row of the table */
		*skip_all = !tcopy_lock_table_rows(rel, erm->strength >= LCS_FORNOKEYUPDATE ?
										   ExclusiveLock : ShareLock,
										   erm->waitPolicy);
		return NULL;
	}
	if (!RowMarkRequiresRowShareLock(erm->markType) || erm->ermExtra != NULL)
		return NULL;

	marks = palloc0(sizeof(TcopyRowMarks));
	marks->codec = codec;
	marks->rel = rel;
	marks->mode = tcopy_row_lock_mode(erm->strength);
	marks->policy = erm->waitPolicy;
	marks->cxt = AllocSetContextCreate(CurrentMemoryContext, "tcopy row marks",
									   ALLOCSET_DEFAULT_SIZES);
	marks->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "tcopy row marks row",
										   ALLOCSET_SMALL_SIZES);
	tcopy_row_buf_init(&marks->rowbuf, codec->ncolumns + codec->nimages);
	marks->capacity = 64;
	marks->keys = MemoryContextAlloc(marks->cxt, sizeof(Tcopy__Row *) * marks->capacity);
	marks->hashes = MemoryContextAlloc(marks->cxt, sizeof(uint64) * marks->capacity);
	marks->proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	marks->nproj = tcopy_live_columns(codec, marks->proj);
	tcopy_point_reader_init(&marks->reader, codec);
	erm->ermExtra = marks;
	return marks;
}

/* A copy of key in cxt. */
static Tcopy__Row *
copy_key(MemoryContext cxt, const Tcopy__Row *key)
{
	Tcopy__Row *copy = MemoryContextAlloc(cxt, sizeof(Tcopy__Row));

	tcopy__row__init(copy);
	copy->n_ints = key->n_ints;
	copy->n_floats = key->n_floats;
	copy->n_blobs = key->n_blobs;
	copy->ints = MemoryContextAlloc(cxt, sizeof(int64_t) * Max(key->n_ints, 1));
	copy->floats = MemoryContextAlloc(cxt, sizeof(double) * Max(key->n_floats, 1));
	copy->blobs = MemoryContextAlloc(cxt, sizeof(ProtobufCBinaryData) * Max(key->n_blobs, 1));
	memcpy(copy->ints, key->ints, sizeof(int64_t) * key->n_ints);
	memcpy(copy->floats, key->floats, sizeof(double) * key->n_floats);
	for (size_t i = 0; i < key->n_blobs; i++)
	{
		copy->blobs[i].len = key->blobs[i].len;
		copy->blobs[i].data = MemoryContextAlloc(cxt, Max(key->blobs[i].len, 1));
		memcpy(copy->blobs[i].data, key->blobs[i].data, key->blobs[i].len);
	}
	return copy;
}

void
tcopy_row_marks_note(TcopyRowMarks *marks, TupleTableSlot *slot, const uint8 *row, size_t len)
{
	TcopyRelCodec *codec = marks->codec;
	uint64		n = marks->nrows;

	if (n == marks->capacity)
	{
		marks->capacity *= 2;
		marks->keys = repalloc_huge(marks->keys, sizeof(Tcopy__Row *) * marks->capacity);
		marks->hashes = repalloc_huge(marks->hashes, sizeof(uint64) * marks->capacity);
	}
	slot_getallattrs(slot);
	tcopy_encode_row(codec, slot->tts_values, slot->tts_isnull, &marks->rowbuf);
	tcopy_encode_images(codec, &marks->rowbuf);
	marks->keys[n] = copy_key(marks->cxt, tcopy_key_of_row(codec, &marks->rowbuf));
	marks->hashes[n] = hash_bytes_extended(row, (int) len, 0);
	marks->nrows++;
	ItemPointerSet(&slot->tts_tid, (BlockNumber) (n / TID_ROWS_PER_BLOCK),
				   (OffsetNumber) (n % TID_ROWS_PER_BLOCK + 1));
}

/* The number of the row whose ctid LockRows gives, checked. */
static uint64
row_number(TcopyRowMarks *marks, Datum rowid)
{
	ItemPointer tid = (ItemPointer) DatumGetPointer(rowid);
	uint64		n;

	if (!ItemPointerIsValid(tid))
		elog(ERROR, "invalid row identity for foreign table \"%s\"", marks->codec->relname);
	n = (uint64) ItemPointerGetBlockNumberNoCheck(tid) * TID_ROWS_PER_BLOCK +
		ItemPointerGetOffsetNumberNoCheck(tid) - 1;
	if (n >= marks->nrows)
		elog(ERROR, "row " UINT64_FORMAT " of foreign table \"%s\" was not returned by its scan",
			 n, marks->codec->relname);
	return n;
}

void
tcopyRefetchForeignRow(EState *estate, ExecRowMark *erm, Datum rowid,
					   TupleTableSlot *slot, bool *updated)
{
	TcopyRowMarks *marks = (TcopyRowMarks *) erm->ermExtra;
	TcopyRelCodec *codec;
	Tcopy__Row *key;
	uint64		n;
	uint8	   *packed;
	size_t		packed_len;
	uint8	   *row;
	size_t		len;
	uint8	   *pos;
	bool		found;
	bool		changed;
	MemoryContext oldcxt;

	ExecClearTuple(slot);
	if (marks == NULL)
		elog(ERROR, "no scan of foreign table \"%s\" returned the row to lock",
			 RelationGetRelationName(erm->relation));
	codec = marks->codec;
	n = row_number(marks, rowid);
	key = marks->keys[n];

	MemoryContextReset(marks->row_cxt);
	oldcxt = MemoryContextSwitchTo(marks->row_cxt);
	packed_len = tcopy__row__get_packed_size(key);
	packed = palloc(Max(packed_len, 1));
	tcopy__row__pack(key, packed);
	if (!tcopy_lock_row(marks->rel, key, packed, packed_len, marks->mode, marks->policy))
	{
		MemoryContextSwitchTo(oldcxt);
		return;					/* SKIP LOCKED */
	}

	found = tcopy_point_read(&marks->reader, key, &row, &len);
	if (found)
	{
		/*
		 * in place in the reader's copy, as a scan's rows in its batch:
		 * valid until the next read.  Decoding rewrites short text's
		 * lengths in place, as it did the scan's bytes: the hashes are of
		 * decoded rows both.
		 */
		pos = row;
		tcopy_decode_packed_row(codec, marks->proj, marks->nproj, &pos, row + len,
								slot->tts_values, slot->tts_isnull);
	}
	/* a key share lock is not in conflict with an update that kept the key */
	changed = !found || (marks->mode != AccessShareLock &&
						 hash_bytes_extended(row, (int) len, 0) != marks->hashes[n]);
	if (changed && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
	if (found)
	{
		ExecStoreVirtualTuple(slot);
		slot->tts_tid = *(ItemPointer) DatumGetPointer(rowid);
		*updated = changed;
	}
	/* else deleted since it was read: skipped, as LockRows skips a heap's */
	MemoryContextSwitchTo(oldcxt);
}

void
tcopy_row_marks_end(TcopyRowMarks *marks)
{
	tcopy_point_reader_end(&marks->reader);
}
