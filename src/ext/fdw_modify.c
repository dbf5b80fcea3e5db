/*
 * fdw_modify.c
 *		The write callbacks of the tcopy foreign-data wrapper: INSERT (and
 *		COPY through the insert path, and tuple routing) and TRUNCATE.
 *
 * Inserts go through the writer shared with the COPY hook: rows are sent in
 * batches on the transaction's write session and become visible when the
 * transaction commits.  UPDATE and DELETE are not offered
 * (tcopyIsForeignRelUpdatable), so Postgres refuses them.
 */
#include "tcopy.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

/*
 * Largest ri_BatchSize asked of the executor: it holds that many slot copies
 * before calling ExecForeignBatchInsert, and the writer batches rows for
 * the wire by itself, so a larger executor batch only costs memory.
 */
#define TCOPY_MAX_INSERT_BATCH	1000

typedef struct TcopyModifyState
{
	TcopyRelCodec *codec;
	TcopyWriter *writer;
	MemoryContext temp_cxt;		/* reset after each row handed to the writer */
} TcopyModifyState;

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

/* Rows can be inserted; UPDATE and DELETE Postgres refuses itself. */
int
tcopyIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT);
}

/* Start writing rows to the table: its codec and a writer. */
static TcopyModifyState *
tcopy_modify_begin(EState *estate, ResultRelInfo *resultRelInfo)
{
	TcopyModifyState *fmstate = palloc0(sizeof(TcopyModifyState));

	fmstate->codec = tcopy_rel_codec(resultRelInfo->ri_RelationDesc,
									 tcopy_rte_user(estate, tcopy_result_rti(resultRelInfo)));
	fmstate->writer = tcopy_writer_begin(fmstate->codec);
	fmstate->temp_cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "tcopy insert temporary data",
											  ALLOCSET_SMALL_SIZES);
	return fmstate;
}

/* Hand one row to the writer; what encoding it allocates is freed after. */
static void
tcopy_modify_add(TcopyModifyState *fmstate, TupleTableSlot *slot)
{
	MemoryContext oldcxt;

	slot_getallattrs(slot);
	oldcxt = MemoryContextSwitchTo(fmstate->temp_cxt);
	tcopy_writer_add(fmstate->writer, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(fmstate->temp_cxt);
}

/* Send the rows still batched; they commit with the transaction. */
static void
tcopy_modify_end(TcopyModifyState *fmstate)
{
	if (fmstate == NULL)
		return;
	tcopy_writer_finish(fmstate->writer);
	tcopy_writer_free(fmstate->writer);
	MemoryContextDelete(fmstate->temp_cxt);
}

/* INSERT needs no plan-time state. */
List *
tcopyPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
					   Index resultRelation, int subplan_index)
{
	/* rows with equal keys overwrite on the tserver: nothing can be skipped */
	if (plan->onConflictAction != ONCONFLICT_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT is not supported on tcopy foreign tables"),
				 errdetail("A row whose key is already stored replaces it.")));
	return NIL;
}

/* Begin an INSERT; nothing is set up for EXPLAIN without ANALYZE. */
void
tcopyBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo,
						List *fdw_private, int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	resultRelInfo->ri_FdwState = tcopy_modify_begin(mtstate->ps.state, resultRelInfo);
}

/* Begin a COPY through the insert path, or inserts routed to a partition. */
void
tcopyBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo)
{
	resultRelInfo->ri_FdwState = tcopy_modify_begin(mtstate->ps.state, resultRelInfo);
}

/* Insert one row: the slot comes back as is, for RETURNING. */
TupleTableSlot *
tcopyExecForeignInsert(EState *estate, ResultRelInfo *resultRelInfo,
					   TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	tcopy_modify_add((TcopyModifyState *) resultRelInfo->ri_FdwState, slot);
	return slot;
}

/* Insert *numSlots rows, all of which succeed or the statement fails. */
TupleTableSlot **
tcopyExecForeignBatchInsert(EState *estate, ResultRelInfo *resultRelInfo,
							TupleTableSlot **slots, TupleTableSlot **planSlots,
							int *numSlots)
{
	TcopyModifyState *fmstate = (TcopyModifyState *) resultRelInfo->ri_FdwState;

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
		resultRelInfo->ri_WithCheckOptions != NIL ||
		(resultRelInfo->ri_TrigDesc &&
		 (resultRelInfo->ri_TrigDesc->trig_insert_before_row ||
		  resultRelInfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;

	batch_size = fmstate != NULL ? fmstate->codec->options.batch_rows : tcopy_batch_rows;
	return Max(1, Min(batch_size, TCOPY_MAX_INSERT_BATCH));
}

/* End an INSERT. */
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

/* A table to truncate: its codec and the connection it was opened on. */
typedef struct TcopyTruncateTarget
{
	TcopyRelCodec *codec;
	TcClient   *client;			/* NULL: nothing stored, nothing to do */
	uint32		table_id;
} TcopyTruncateTarget;

/*
 * TRUNCATE foreign tables.  The tserver truncates at once and durably, not
 * when the Postgres transaction commits: a ROLLBACK after TRUNCATE does not
 * bring the rows back (Postgres offers an FDW no way to refuse TRUNCATE in
 * a transaction block).  Rows this transaction wrote would be committed
 * after the truncation and so survive it; that case is refused.  Every
 * table is opened before any is truncated, so that a table that cannot be
 * opened leaves all of them as they were.
 */
void
tcopyExecForeignTruncate(List *rels, DropBehavior behavior, bool restart_seqs)
{
	TcopyTruncateTarget *targets;
	volatile int ntargets = 0;	/* set in PG_TRY, read in PG_FINALLY */
	ListCell   *lc;

	/*
	 * The tserver truncates at once and durably, outside any write session:
	 * inside a transaction block a rollback could not bring the rows back,
	 * and rows the transaction wrote would be committed after it.
	 */
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("TRUNCATE of a tcopy foreign table cannot run inside a transaction block"),
				 errdetail("The tserver truncates at once; a rollback could not bring the rows back.")));

	foreach(lc, rels)
	{
		Relation	rel = (Relation) lfirst(lc);

		/* outside a block too: a DO block or function may have written */
		if (tcopy_xact_wrote_relation(RelationGetRelid(rel)))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot truncate foreign table \"%s\" in the transaction that wrote to it",
							RelationGetRelationName(rel)),
					 errdetail("Rows written by tcopy are committed after the truncation, which takes effect at once.")));
	}

	targets = palloc0(sizeof(TcopyTruncateTarget) * Max(list_length(rels), 1));
	PG_TRY();
	{
		foreach(lc, rels)
		{
			TcopyTruncateTarget *target = &targets[ntargets++];
			TcopyRelCodec *codec;

			target->codec = codec = tcopy_rel_codec((Relation) lfirst(lc), GetUserId());
			if (tcopy_address_is_null(codec->options.address))
				continue;
			target->client = tcopy_connect(codec);
			if (target->client == NULL)
				continue;
			if (tc_client_open_table(target->client, codec->options.table_name,
									 codec->schema, false, &target->table_id,
									 NULL, NULL) < 0)
			{
				if (tc_client_error_code(target->client) != TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
					tcopy_report_client_error(target->client, codec->options.address,
											  psprintf("could not open table \"%s\" to truncate it",
													   codec->options.table_name));
				tcopy_disconnect(target->client);
				target->client = NULL;
			}
		}

		for (int t = 0; t < ntargets; t++)
		{
			TcopyTruncateTarget *target = &targets[t];

			CHECK_FOR_INTERRUPTS();
			if (target->client == NULL)
				continue;
			if (tc_client_table_op(target->client, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE,
								   target->table_id) < 0)
				tcopy_report_client_error(target->client,
										  target->codec->options.address,
										  psprintf("could not truncate table \"%s\"",
												   target->codec->options.table_name));
		}
	}
	PG_FINALLY();
	{
		for (int t = 0; t < ntargets; t++)
		{
			if (targets[t].client != NULL)
			{
				tcopy_disconnect(targets[t].client);
				targets[t].client = NULL;
			}
		}
	}
	PG_END_TRY();
}
