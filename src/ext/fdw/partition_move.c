/*
 * partition_move.c
 *		An UPDATE whose new row leaves its tcopy partition: the row moves to
 *		the partition the root routes it to, as Postgres moves a heap
 *		partition's row (ExecCrossPartitionUpdate), or the UPDATE fails with
 *		Postgres' partition constraint error where Postgres' would.
 *
 * Postgres hands a foreign table's UPDATE to the FDW whole and checks no
 * partition constraint on it, so a tcopy partition checks its own: the
 * write path (fdw_modify.c) calls tcopy_move_row, then deletes the old row
 * from the partition.  tcopy_move_row converts the new row to the root's columns,
 * routes it with Postgres' tuple routing (ExecFindPartition, set up on the
 * ModifyTable as Postgres does for its own moves) and inserts it there:
 * into a foreign partition through its FDW (a tcopy partition: its writer,
 * in the same write session and transaction), into a heap partition as
 * logical replication's apply does (ExecSimpleRelationInsert: BEFORE and
 * AFTER row triggers, constraints, indexes).  A direct modify never moves a
 * row: one that assigns a column the partition constraint reads is not
 * pushed down (tcopy_update_reads_partition_qual).
 */

#include "postgres.h"

#include "access/tableam.h"
#include "commands/trigger.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "optimizer/optimizer.h"
#include "partitioning/partdesc.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "tcopy/fdw.h"

/*
 * Whether attnums (offset by FirstLowInvalidHeapAttributeNumber, as
 * pull_varattnos and ExecGetUpdatedCols give them) hold a column that rel's
 * partition constraint reads, its ancestors' keys included.  False for a
 * table that is not a partition.
 */
bool
tcopy_update_reads_partition_qual(Relation rel, Bitmapset *attnums)
{
	Bitmapset  *qual_cols = NULL;
	List	   *qual;

	if (!rel->rd_rel->relispartition || attnums == NULL)
		return false;
	qual = RelationGetPartitionQual(rel);
	pull_varattnos((Node *) qual, 1, &qual_cols);
	return bms_overlap(qual_cols, attnums);
}

/*
 * The new row of an UPDATE of resultRelInfo, a tcopy partition, fails the
 * partition's constraint: insert it where the root of the UPDATE routes
 * it (the caller deletes the old row).  An UPDATE of the partition itself
 * (no root above it in the statement) fails, as on a heap partition,
 * before anything is written.
 */
void
tcopy_move_row(ModifyTableState *mtstate, ResultRelInfo *resultRelInfo, TupleTableSlot *slot)
{
	EState	   *estate = mtstate->ps.state;
	ResultRelInfo *root = mtstate->rootResultRelInfo;
	TupleConversionMap *map;
	ResultRelInfo *dest;

	if (root == NULL || root == resultRelInfo ||
		root->ri_RelationDesc->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ExecPartitionCheckEmitError(resultRelInfo, slot, estate);

	/* as ExecCrossPartitionUpdate sets it up, for the query's duration */
	if (mtstate->mt_partition_tuple_routing == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);

		mtstate->mt_partition_tuple_routing =
			ExecSetupPartitionTupleRouting(estate, root->ri_RelationDesc);
		if (mtstate->mt_root_tuple_slot == NULL)
			mtstate->mt_root_tuple_slot = table_slot_create(root->ri_RelationDesc, NULL);
		MemoryContextSwitchTo(oldcxt);
	}

	/* the partition's columns to the root's, then to the destination's */
	map = ExecGetChildToRootMap(resultRelInfo);
	if (map != NULL)
		slot = execute_attr_map_slot(map->attrMap, slot, mtstate->mt_root_tuple_slot);
	dest = ExecFindPartition(mtstate, root, mtstate->mt_partition_tuple_routing, slot, estate);
	if (dest->ri_RootToPartitionMap != NULL)
		slot = execute_attr_map_slot(dest->ri_RootToPartitionMap->attrMap, slot,
									 dest->ri_PartitionTupleSlot);

	if (dest->ri_FdwRoutine != NULL)
	{
		Relation	rel = dest->ri_RelationDesc;

		/* a BEFORE ROW trigger may change the row or skip it, as in ExecInsert */
		if (dest->ri_TrigDesc && dest->ri_TrigDesc->trig_insert_before_row &&
			!ExecBRInsertTriggers(estate, dest, slot))
			return;
		if (rel->rd_att->constr && rel->rd_att->constr->has_generated_stored)
			ExecComputeStoredGenerated(dest, estate, slot, CMD_INSERT);
		slot = dest->ri_FdwRoutine->ExecForeignInsert(estate, dest, slot, NULL);
		if (slot != NULL)
			ExecARInsertTriggers(estate, dest, slot, NIL, NULL);
	}
	else
		ExecSimpleRelationInsert(dest, estate, slot);
}
