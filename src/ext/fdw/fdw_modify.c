/*
 * fdw_modify.c
 *		The write callbacks of the tcopy foreign-data wrapper: INSERT (and
 *		COPY through the insert path, and tuple routing), UPDATE, DELETE and
 *		TRUNCATE.
 *
 * Every write goes through the writer shared with the COPY hook: rows are
 * sent in batches on the transaction's write session and become visible to
 * others when the transaction commits (to itself at once: a scan reads the
 * session's writes, fdw_scan.c).  A TRUNCATE is staged in that session too.
 *
 * UPDATE and DELETE identify rows by the table's key, as postgres_fdw does
 * by ctid: the scan below them fetches the whole row ("wholerow", which
 * Postgres asks of every foreign table's UPDATE and tcopy asks for DELETE),
 * whose key says which row; a keyless table refuses both when planned.  An
 * UPDATE that keeps the key sends the new row as WRITE_UPDATE (it replaces
 * the row whatever on_conflict says); one that changes it moves the row:
 * WRITE_DELETE of the old key, then an insert of the new row, to which
 * on_conflict applies as to any insert: under 'error' at once, so that
 * moving onto a key that still holds a row is a duplicate, as a primary
 * key finds it; under 'replace' and 'ignore' at the statement's end, once
 * every old key is deleted, so that rows moving onto each other's keys
 * (k = k + 1) all survive, none replaced by another's move.  A DELETE sends the old row as
 * WRITE_DELETE.  The scan locked the rows first (row_locks.c).
 */

#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/appendinfo.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"

/*
 * Largest ri_BatchSize asked of the executor: it holds that many slot copies
 * before calling ExecForeignBatchInsert, and the writer batches rows for
 * the wire by itself, so a larger executor batch only costs memory.
 */
#define TCOPY_MAX_INSERT_BATCH	1000

const TcopyOnConflict *tcopy_insert_on_conflict = NULL;

typedef struct TcopyModifyState
{
	TcopyRelCodec *codec;
	TcopyWriter *writer;
	MemoryContext temp_cxt;		/* reset after each row handed to the writer */
	TupleTableSlot *old_slot;	/* UPDATE: the row being replaced */
	Tuplestorestate *moved;		/* UPDATE: new rows of keys that changed,
								 * inserted after every old key is deleted */
	ModifyTableState *mtstate;	/* routes a row that leaves its partition */
	bool		may_leave;		/* UPDATE of a partition that assigns a
								 * column its partition constraint reads */
	int			users;			/* BeginForeignModify and, for a partition
								 * this UPDATE routes rows to, BeginForeignInsert */
	Relation	rel;
	bool		wrote;			/* a row went: SSI told of the write of every part */
	AttrNumber	ssi_key;		/* the key column whose part a row writes, or 0 */
	Oid			ssi_key_type;
	uint64		ssi_parts;		/* the parts SSI was told of */
	TcopyUpsert *upsert;		/* INSERT ... ON CONFLICT, or NULL */
}			TcopyModifyState;

/*
 * The range table entry of a result relation; a partition that tuple
 * routing opened has none of its own, and takes its root's.
 */
static Index
tcopy_result_rti(ResultRelInfo *resultRelInfo)
{
	if (resultRelInfo->ri_RangeTableIndex == 0 && resultRelInfo->ri_RootResultRelInfo != NULL)
		return resultRelInfo->ri_RootResultRelInfo->ri_RangeTableIndex;
	return resultRelInfo->ri_RangeTableIndex;
}

/* Rows can be inserted, updated and deleted: a keyless table refuses the last two when planned. */
int
tcopyIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT) | (1 << CMD_UPDATE) | (1 << CMD_DELETE);
}

/*
 * Whether the foreign table has the key option (its rows can be named), as
 * the backend keeps it (codec_cache.c).
 */
static bool
tcopy_rel_has_key(Relation rel)
{
	bool		key_bytes;

	return tcopy_rel_key_attnums(rel, &key_bytes) != NIL;
}

/*
 * UPDATE and DELETE name rows by their key, which the whole row carries:
 * Postgres asks for it for an UPDATE, tcopy for a DELETE.  A keyless table
 * has no way to name a row: refused here, with Postgres' words.
 */
void
tcopyAddForeignUpdateTargets(PlannerInfo *root, Index rtindex, RangeTblEntry *target_rte,
							 Relation target_relation)
{
	CmdType		operation = root->parse->commandType;

	if (!tcopy_rel_has_key(target_relation))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg(operation == CMD_DELETE ? "cannot delete from foreign table \"%s\"" :
						"cannot update foreign table \"%s\"",
						RelationGetRelationName(target_relation)),
				 errdetail("The tcopy table has no key, and tcopy identifies the rows it updates and deletes by their key."),
				 errhint("Create the table with a key, OPTIONS (key 'column'), to update and delete its rows; "
						 "a keyless tcopy table takes INSERT, COPY and TRUNCATE.")));
	/*
	 * as Postgres makes an UPDATE's: of type record, so that the children
	 * of one DELETE (partitions, inheritance) share the row identity
	 */
	if (operation == CMD_DELETE)
		add_row_identity_var(root, makeVar(rtindex, InvalidAttrNumber, RECORDOID, -1, InvalidOid, 0),
							 rtindex, "wholerow");
}

/* Start writing rows to the table: its codec and a writer. */
static TcopyModifyState *
tcopy_modify_begin(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo)
{
	EState	   *estate = mtstate->ps.state;
	TcopyModifyState *fmstate = palloc0(sizeof(TcopyModifyState));

	ResultRelInfo *root = resultRelInfo->ri_RootResultRelInfo;

	fmstate->users = 1;
	fmstate->rel = resultRelInfo->ri_RelationDesc;
	fmstate->mtstate = mtstate;
	fmstate->may_leave = mtstate->operation == CMD_UPDATE &&
		tcopy_update_reads_partition_qual(resultRelInfo->ri_RelationDesc,
										  ExecGetUpdatedCols(resultRelInfo, estate));

	fmstate->codec = tcopy_rel_codec_writable(resultRelInfo->ri_RelationDesc,
											  tcopy_rte_user(estate, tcopy_result_rti(resultRelInfo)));
	if (tcopy_insert_on_conflict != NULL)
		fmstate->codec->options.on_conflict = *tcopy_insert_on_conflict;
	/* as ExecConstraints describes a failing row */
	if (root != NULL)
		tcopy_codec_set_inserted_cols(fmstate->codec, RelationGetRelid(root->ri_RelationDesc),
									  ExecGetInsertedCols(root, estate));
	else
		tcopy_codec_set_inserted_cols(fmstate->codec, InvalidOid,
									  ExecGetInsertedCols(resultRelInfo, estate));
	/* a key of one integer column: SSI sees a row's write as its part's */
	if (list_length(fmstate->codec->options.key_attnums) == 1)
	{
		AttrNumber	attnum = linitial_int(fmstate->codec->options.key_attnums);
		Oid			type = TupleDescAttr(RelationGetDescr(fmstate->rel), attnum - 1)->atttypid;

		if (type == INT2OID || type == INT4OID || type == INT8OID)
		{
			fmstate->ssi_key = attnum;
			fmstate->ssi_key_type = type;
		}
	}
	/* a parallel COPY's worker routing rows: its batches go to the leader */
	fmstate->writer = tcopy_parallel_sink != NULL ?
		tcopy_writer_begin_detached(fmstate->codec, tcopy_parallel_sink) :
		tcopy_writer_begin(fmstate->codec);
	fmstate->temp_cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "tcopy insert temporary data",
											  ALLOCSET_SMALL_SIZES);
	return fmstate;
}

/*
 * The old row of an UPDATE or DELETE, from the plan's "wholerow", into
 * slot; the values point into planSlot's memory.
 */
static void
tcopy_modify_old_row(ResultRelInfo *resultRelInfo, TupleTableSlot *planSlot,
					 TupleTableSlot *slot)
{
	HeapTupleData tuple;
	HeapTupleHeader header;
	bool		isnull;
	Datum		datum;

	if (!AttributeNumberIsValid(resultRelInfo->ri_RowIdAttNo))
		elog(ERROR, "could not find junk wholerow column");
	datum = ExecGetJunkAttribute(planSlot, resultRelInfo->ri_RowIdAttNo, &isnull);
	if (isnull)
		elog(ERROR, "wholerow is NULL");
	header = DatumGetHeapTupleHeader(datum);
	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = RelationGetRelid(resultRelInfo->ri_RelationDesc);
	tuple.t_data = header;
	ExecForceStoreHeapTuple(&tuple, slot, false);
	slot_getallattrs(slot);
}

/*
 * SERIALIZABLE: the write of slot, to Postgres' SSI: of its key's part (once
 * a statement a part), or of the table.  Other transactions' writes SSI
 * does not see.
 */
static void
tcopy_modify_ssi_write(TcopyModifyState *fmstate, TupleTableSlot *slot)
{
	if (fmstate->ssi_key != 0 && !slot->tts_isnull[fmstate->ssi_key - 1])
	{
		uint64		part = tcopy_ssi_part(tcopy_int64_of(fmstate->ssi_key_type,
														 slot->tts_values[fmstate->ssi_key - 1]));

		if ((fmstate->ssi_parts & part) == 0)
		{
			tcopy_ssi_write_parts(fmstate->rel, part);
			fmstate->ssi_parts |= part;
		}
	}
	else if (!fmstate->wrote)
	{
		tcopy_ssi_write(fmstate->rel);
		fmstate->wrote = true;
	}
}

/* Hand one row to the writer; what encoding it allocates is freed after. */
static void
tcopy_modify_add(TcopyModifyState *fmstate, TupleTableSlot *slot)
{
	MemoryContext oldcxt;

	slot_getallattrs(slot);
	if (IsolationIsSerializable())
		tcopy_modify_ssi_write(fmstate, slot);
	oldcxt = MemoryContextSwitchTo(fmstate->temp_cxt);
	tcopy_writer_add(fmstate->writer, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(fmstate->temp_cxt);
}

/* Send the rows still batched; they commit with the transaction. */
static void
tcopy_modify_end(TcopyModifyState *fmstate)
{
	if (fmstate == NULL || --fmstate->users > 0)
		return;
	if (fmstate->moved != NULL)
	{
		TupleTableSlot *slot = MakeSingleTupleTableSlot(fmstate->old_slot->tts_tupleDescriptor,
														&TTSOpsMinimalTuple);

		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_INSERT);
		while (tuplestore_gettupleslot(fmstate->moved, true, false, slot))
			tcopy_modify_add(fmstate, slot);
		ExecDropSingleTupleTableSlot(slot);
		tuplestore_end(fmstate->moved);
	}
	if (fmstate->upsert != NULL)
		tcopy_upsert_end(fmstate->upsert);
	tcopy_writer_finish(fmstate->writer);
	tcopy_writer_free(fmstate->writer);
	if (fmstate->old_slot != NULL)
		ExecDropSingleTupleTableSlot(fmstate->old_slot);
	MemoryContextDelete(fmstate->temp_cxt);
}

/*
 * INSERT, UPDATE and DELETE need no plan-time state; an ON CONFLICT DO
 * UPDATE is checked (fdw_upsert.c).
 */
List *
tcopyPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
					   Index resultRelation, int subplan_index)
{
	tcopy_upsert_check_plan(root, plan, resultRelation);
	return NIL;
}

/* Begin an INSERT, UPDATE or DELETE; nothing is set up for EXPLAIN without ANALYZE. */
void
tcopyBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo,
						List *fdw_private, int subplan_index, int eflags)
{
	TcopyModifyState *fmstate;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	resultRelInfo->ri_FdwState = fmstate = tcopy_modify_begin(mtstate, resultRelInfo);
	fmstate->upsert = tcopy_upsert_begin(fmstate->codec, mtstate);
	/* SERIALIZABLE: an upsert reads the key it writes */
	if (fmstate->upsert != NULL)
		tcopy_ssi_read(fmstate->rel, mtstate->ps.state->es_snapshot);
}

/*
 * Begin a COPY through the insert path, or inserts routed to a partition:
 * by an INSERT, or by an UPDATE that moves rows into a partition it also
 * updates, whose writer then takes both (and ends after both ended).
 */
void
tcopyBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo)
{
	if (resultRelInfo->ri_FdwState != NULL)
		((TcopyModifyState *) resultRelInfo->ri_FdwState)->users++;
	else
		resultRelInfo->ri_FdwState = tcopy_modify_begin(mtstate, resultRelInfo);
}

TcopyWriter *
tcopy_insert_writer(ResultRelInfo *resultRelInfo)
{
	return ((TcopyModifyState *) resultRelInfo->ri_FdwState)->writer;
}

/*
 * Insert one row: the slot comes back as is, for RETURNING.  Under ON
 * CONFLICT the stored row of its key is skipped, or updated (its new
 * version comes back), or the row is inserted (fdw_upsert.c).
 */
TupleTableSlot *
tcopyExecForeignInsert(EState *estate, ResultRelInfo *resultRelInfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;
	bool		insert = true;

	if (fmstate->upsert != NULL)
	{
		slot = tcopy_upsert_row(fmstate->upsert, resultRelInfo, fmstate->mtstate, slot, &insert);
		if (slot == NULL)
			return NULL;
	}
	/* the writer of a partition an UPDATE moves rows into updates it too */
	tcopy_writer_set_kind(fmstate->writer, insert ? TCOPY__WRITE_KIND__WRITE_INSERT :
						  TCOPY__WRITE_KIND__WRITE_UPDATE);
	tcopy_modify_add(fmstate, slot);
	return slot;
}

/*
 * Update one row: the new row replaces it, or, when the key changed,
 * moves it (the old key deleted, the new row inserted).  The slot comes
 * back as is, for RETURNING.
 */
TupleTableSlot *
tcopyExecForeignUpdate(EState *estate, ResultRelInfo *resultRelInfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;
	TupleDesc	desc = RelationGetDescr(resultRelInfo->ri_RelationDesc);
	TupleTableSlot *old = fmstate->old_slot;
	ListCell   *lc;
	bool		moved = false;

	if (old == NULL)
		old = fmstate->old_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	tcopy_modify_old_row(resultRelInfo, planSlot, old);
	slot_getallattrs(slot);
	if (fmstate->may_leave && !ExecPartitionCheck(resultRelInfo, slot, estate, false))
	{
		/*
		 * The row leaves the partition: inserted where the root routes it
		 * (or the partition constraint's error: partition_move.c), then
		 * deleted here
		 */
		tcopy_move_row(fmstate->mtstate, resultRelInfo, slot);
		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_DELETE);
		tcopy_modify_add(fmstate, old);
		return slot;
	}
	foreach(lc, fmstate->codec->options.key_attnums)
	{
		int			i = lfirst_int(lc) - 1;
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (old->tts_isnull[i] != slot->tts_isnull[i] ||
			(!slot->tts_isnull[i] &&
			 !datumIsEqual(old->tts_values[i], slot->tts_values[i], att->attbyval, att->attlen)))
			moved = true;
	}
	if (moved && fmstate->codec->options.on_conflict == TCOPY_ON_CONFLICT_ERROR)
	{
		/*
		 * As a primary key checks a moved row at once: moving onto a key
		 * that still holds a row is a duplicate, even if that row moves
		 * later in the statement (k = k + 1 fails on a heap table too)
		 */
		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_DELETE);
		tcopy_modify_add(fmstate, old);
		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_INSERT);
	}
	else if (moved)
	{
		/*
		 * The old key goes now, the new row at the statement's end, after
		 * every old key: rows moving onto each other's keys (k = k + 1)
		 * then all survive, none replaced or deleted by another's move
		 */
		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_DELETE);
		tcopy_modify_add(fmstate, old);
		if (fmstate->moved == NULL)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(fmstate));

			fmstate->moved = tuplestore_begin_heap(false, false, work_mem);
			MemoryContextSwitchTo(oldcxt);
		}
		tuplestore_puttupleslot(fmstate->moved, slot);
		return slot;
	}
	else
		tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_UPDATE);
	tcopy_modify_add(fmstate, slot);
	return slot;
}

/* Delete one row, by its key; the deleted row comes back in slot, for RETURNING. */
TupleTableSlot *
tcopyExecForeignDelete(EState *estate, ResultRelInfo *resultRelInfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;

	tcopy_modify_old_row(resultRelInfo, planSlot, slot);
	tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_DELETE);
	tcopy_modify_add(fmstate, slot);
	return slot;
}

/* Insert *numSlots rows, all of which succeed or the statement fails. */
TupleTableSlot **
tcopyExecForeignBatchInsert(EState *estate, ResultRelInfo *resultRelInfo,
							TupleTableSlot **slots, TupleTableSlot **planSlots,
							int *numSlots)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;

	tcopy_writer_set_kind(fmstate->writer, TCOPY__WRITE_KIND__WRITE_INSERT);
	for (int i = 0; i < *numSlots; i++)
		tcopy_modify_add(fmstate, slots[i]);
	return slots;
}

/*
 * Rows the executor may collect per ExecForeignBatchInsert: the table's
 * batch size, capped, and 1 where postgres_fdw disables batching
 * (RETURNING, WITH CHECK OPTION, row INSERT triggers, which may look at
 * the rows inserted so far).  In EXPLAIN without ANALYZE there is no state
 * and the value is never used: the default batch size stands in.
 */
int
tcopyGetForeignModifyBatchSize(ResultRelInfo *resultRelInfo)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;
	int			batch_size;

	if (resultRelInfo->ri_projectReturning != NULL ||
		(fmstate != NULL && fmstate->upsert != NULL) ||
		resultRelInfo->ri_WithCheckOptions != NIL ||
		(resultRelInfo->ri_TrigDesc &&
		 (resultRelInfo->ri_TrigDesc->trig_insert_before_row ||
		  resultRelInfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;

	batch_size = fmstate != NULL ? fmstate->codec->options.batch_rows : tcopy_batch_rows;
	return Max(1, Min(batch_size, TCOPY_MAX_INSERT_BATCH));
}

/* End an INSERT, UPDATE or DELETE. */
void
tcopyEndForeignModify(EState *estate, ResultRelInfo *resultRelInfo)
{
	tcopy_modify_end((TcopyModifyState *) resultRelInfo->ri_FdwState);
}

/* End a COPY through the insert path or routing to a partition. */
void
tcopyEndForeignInsert(EState *estate, ResultRelInfo *resultRelInfo)
{
	tcopy_modify_end((TcopyModifyState *) resultRelInfo->ri_FdwState);
}

/*
 * TRUNCATE foreign tables.  Each becomes a TRUNCATE in the transaction's
 * write session for its server and user, applied when the session is
 * published, before the session's rows: it commits and rolls back with
 * the transaction, in a transaction block or not, atomically with the
 * transaction's other writes on that tserver.  A table the transaction
 * already wrote rows to is refused, as those rows would be applied after
 * the truncation and survive it.  Every table is looked up on its tserver
 * (a table the tserver does not know holds nothing) before any truncation
 * is staged.
 */
void
tcopyExecForeignTruncate(List *rels, DropBehavior behavior, bool restart_seqs)
{
	int			nrels = list_length(rels);
	TcopyRelCodec **codecs = palloc0(sizeof(TcopyRelCodec *) * Max(nrels, 1));
	TcopyRelCodec **targets = palloc0(sizeof(TcopyRelCodec *) * Max(nrels, 1));
	uint32	   *table_ids = palloc0(sizeof(uint32) * Max(nrels, 1));
	int			ntargets = 0;

	/*
	 * Rows the transaction wrote to a table before its TRUNCATE are
	 * discarded by the tserver when it stages the TRUNCATE in the session
	 * (ts_session_truncate.c): only the rows written after it are published.
	 */
	for (int r = 0; r < nrels; r++)
		codecs[r] = tcopy_rel_codec((Relation) list_nth(rels, r), GetUserId());

	for (int r = 0; r < nrels; r++)
	{
		/* empty for the rest of the (sub)transaction: COPY FREEZE may load it */
		tcopy_note_truncated(RelationGetRelid((Relation) list_nth(rels, r)));
		if (tcopy_lookup_table_id(&codecs[r]->options, codecs[r]->schema, "to truncate it",
								  &table_ids[ntargets]))
			targets[ntargets++] = codecs[r];
	}

	for (int t = 0; t < ntargets; t++)
	{
		CHECK_FOR_INTERRUPTS();
		tcopy_xact_table_op(&targets[t]->options, targets[t]->userid, true,
							TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, table_ids[t]);
	}
}
