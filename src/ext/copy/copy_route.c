/*
 * copy_route.c
 *		COPY FROM into a partitioned table whose leaf partitions are all
 *		tcopy tables: each row routed by Postgres' own tuple routing to its
 *		partition's writer, and every partition's batches pipelined to its
 *		tserver at once.
 *
 * copy.c takes such a COPY when tcopy_route_takes says the whole partition
 * tree qualifies: every leaf a tcopy table, no triggers anywhere a COPY
 * would fire them, no stored generated columns.  A tree with a heap leaf,
 * another wrapper's leaf or a trigger goes to Postgres' COPY, which routes
 * rows to the FDW's insert path, as before.
 *
 * Routing is Postgres': ExecSetupPartitionTupleRouting and ExecFindPartition,
 * with a ModifyTableState set up as CopyFrom sets it up, so that the choice
 * of partition, the partition key's comparison (collations, hash
 * functions), sub-partitions, the default partition and the error for a
 * row without a partition (its words, DETAIL and SQLSTATE) are Postgres'.
 * ExecFindPartition opens a partition the first time a row goes to it,
 * and calls the FDW's BeginForeignInsert, whose writer (fdw_modify.c) is
 * the one the COPY then fills: one writer per partition, each with its own
 * batch, on the transaction's connection to the partition's tserver.  A
 * batch is sent when it closes and acknowledged later (the client keeps a
 * window of batches in flight per connection), so the tservers apply their
 * partitions' rows while the backend parses the next ones.
 *
 * On the raw-field path (copy_fields.c) only the columns routing reads are
 * made Datums: the partition keys of every partitioned table of the tree
 * (plain columns; a key expression, or a COPY into a partition that is
 * itself a partition, whose constraint routing checks first, reads the
 * whole row through NextCopyFrom instead).  The other fields go from their
 * strings to the partition's wire row, through a field target that maps
 * the COPY's columns to the partition's (attached partitions may order or
 * number their columns differently).
 *
 * Memory: a batch per partition adds up.  tcopy.copy_batch_memory caps the
 * row data the partitions' batches hold together: when a COPY has opened n
 * partitions, a batch closes at the table's batch size or at
 * copy_batch_memory / n, whichever is smaller, though never below
 * TCOPY_ROUTE_MIN_BATCH (a batch must carry some rows; a partition count
 * above copy_batch_memory / 64 kB exceeds the cap by that floor).  A batch
 * buffer that outgrew its new share is freed when it is next sent
 * (writer.c), so the buffers come down to the shares as the COPY goes on.
 */

#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/copyfrom_internal.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/transaction.h"
#include "tcopy/fdw.h"
#include "tcopy/copy.h"

/*
 * Whether the hook can load rel itself: no triggers a COPY would fire, no
 * stored generated columns (copy.c's file comment says why); for a plain
 * table (copy.c) and for each table of a partition tree (below).
 */
bool
tcopy_relation_is_accelerable(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->trigdesc != NULL)
		return false;
	if (desc->constr != NULL && desc->constr->has_generated_stored)
		return false;
	return true;
}

/* settings, registered in tcopy.c */
int			tcopy_copy_batch_memory_kb = 64 * 1024;	/* tcopy.copy_batch_memory */

/* The smallest batch a partition's share of tcopy.copy_batch_memory gives. */
#define TCOPY_ROUTE_MIN_BATCH	(64 * 1024)

struct TcopyRoute
{
	EState	   *estate;
	ModifyTableState *mtstate;	/* what ExecFindPartition wants: CopyFrom's */
	ResultRelInfo *root;
	PartitionTupleRouting *proute;
	TcopyFieldPlan *plan;		/* the raw fields, or NULL: NextCopyFrom */
	int		   *key_atts;		/* the raw fields: attnum - 1 of each column
								 * routing reads */
	int		   *key_fields;		/* [nkeys]: its field, or -1 (not copied) */
	int			nkeys;
	const TcopyOnConflict *on_conflict; /* COPY's option, or NULL */
	List	   *writers;		/* TcopyWriter * of the partitions opened */
	MemoryContext context;		/* the COPY's: partitions' state lives here */
};

/*
 * Whether partitioned table relid is loaded by copy.c through routing (see
 * the file comment).  Locks the partitions, as routing would lock each it
 * opens.
 */
bool
tcopy_route_takes(Oid relid)
{
	List	   *tree;
	int			leaves = 0;
	ListCell   *lc;

	/* the kinds first, without locks: a heap partition's COPY pays little */
	foreach(lc, find_all_inheritors(relid, NoLock, NULL))
	{
		Oid			oid = lfirst_oid(lc);
		char		relkind = get_rel_relkind(oid);

		if (relkind == RELKIND_FOREIGN_TABLE && tcopy_relation_is_tcopy_table(oid))
			leaves++;
		else if (relkind != RELKIND_PARTITIONED_TABLE)
			return false;
	}
	if (leaves == 0)
		return false;

	/* then the triggers, locked: a partitioned table's row triggers are its leaves' */
	tree = find_all_inheritors(relid, RowExclusiveLock, NULL);
	foreach(lc, tree)
	{
		Relation	rel = table_open(lfirst_oid(lc), NoLock);
		bool		takes = tcopy_relation_is_accelerable(rel);

		table_close(rel, NoLock);
		if (!takes)
			return false;
	}
	return true;
}

/*
 * A row routed to a partition that is not a tcopy table without triggers:
 * attached (ATTACH PARTITION takes no lock that conflicts with a COPY's)
 * after tcopy_route_takes looked at the tree.
 */
static pg_noinline void
route_refuse_partition(TcopyRoute *route, ResultRelInfo *rri)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot route rows of COPY to partition \"%s\" of table \"%s\"",
					RelationGetRelationName(rri->ri_RelationDesc),
					RelationGetRelationName(route->root->ri_RelationDesc)),
			 errdetail("The partition was attached while the COPY began, and is not a tcopy table without triggers."),
			 errhint("Run the COPY again.")));
}

/*
 * The columns routing reads, as attnums - 1 of root, into route; false when
 * routing needs the whole row (see the file comment).
 */
static bool
route_key_columns(TcopyRoute *route, Relation root)
{
	List	   *tree;
	ListCell   *lc;

	if (root->rd_rel->relispartition)
		return false;
	tree = find_all_inheritors(RelationGetRelid(root), NoLock, NULL);
	route->key_atts = palloc(sizeof(int) * RelationGetDescr(root)->natts);
	route->nkeys = 0;
	foreach(lc, tree)
	{
		Oid			oid = lfirst_oid(lc);
		Relation	rel;
		PartitionKey key;

		if (get_rel_relkind(oid) != RELKIND_PARTITIONED_TABLE)
			continue;
		rel = table_open(oid, NoLock);
		key = RelationGetPartitionKey(rel);
		for (int i = 0; i < key->partnatts; i++)
		{
			AttrNumber	attno = key->partattrs[i];
			int			m;
			bool		seen = false;

			if (attno == 0)
			{
				table_close(rel, NoLock);
				return false;	/* an expression */
			}
			/* a partition's attnum, in the root's numbering */
			m = get_attnum(RelationGetRelid(root),
						   get_attname(oid, attno, false)) - 1;
			for (int k = 0; k < route->nkeys; k++)
				seen |= route->key_atts[k] == m;
			if (!seen)
				route->key_atts[route->nkeys++] = m;
		}
		table_close(rel, NoLock);
	}
	return true;
}

TcopyRoute *
tcopy_route_begin(Relation rel, EState *estate, CopyFromState cstate, bool raw_fields,
				  const TcopyOnConflict *on_conflict)
{
	TcopyRoute *route = palloc0(sizeof(TcopyRoute));

	route->estate = estate;
	route->context = CurrentMemoryContext;
	route->on_conflict = on_conflict;
	/* the COPY's target, whose range table entry says who inserts */
	route->root = makeNode(ResultRelInfo);
	InitResultRelInfo(route->root, rel, 1, NULL, 0);
	/* as CopyFrom sets it up for ExecFindPartition */
	route->mtstate = makeNode(ModifyTableState);
	route->mtstate->ps.plan = NULL;
	route->mtstate->ps.state = estate;
	route->mtstate->operation = CMD_INSERT;
	route->mtstate->mt_nrels = 1;
	route->mtstate->resultRelInfo = route->root;
	route->mtstate->rootResultRelInfo = route->root;
	route->proute = ExecSetupPartitionTupleRouting(estate, rel);
	if (raw_fields && route_key_columns(route, rel))
		route->plan = tcopy_field_plan(cstate, NULL);
	if (route->plan != NULL)
	{
		route->key_fields = palloc(sizeof(int) * Max(route->nkeys, 1));
		for (int k = 0; k < route->nkeys; k++)
			route->key_fields[k] = tcopy_field_of_att(route->plan, route->key_atts[k]);
	}
	return route;
}

/* The raw fields' plan, or NULL: the COPY reads through NextCopyFrom. */
TcopyFieldPlan *
tcopy_route_field_plan(TcopyRoute *route)
{
	return route->plan;
}

/*
 * A partition's writer, the first time a row goes to it: its field target,
 * and every writer's share of tcopy.copy_batch_memory.
 */
static pg_noinline void
route_open_partition(TcopyRoute *route, ResultRelInfo *rri, TcopyWriter *writer)
{
	MemoryContext oldcontext = MemoryContextSwitchTo(route->context);
	TupleConversionMap *map = rri->ri_RootToPartitionMap;
	int64		share;
	ListCell   *lc;

	if (route->plan != NULL)
		writer->route_target = tcopy_field_target(route->plan, writer->codec,
												  map != NULL ? map->attrMap : NULL);
	writer->routed = true;
	/* a duplicate's CONTEXT names the table copied into, as for a heap */
	writer->line_relname = RelationGetRelationName(route->root->ri_RelationDesc);
	route->writers = lappend(route->writers, writer);
	share = (int64) tcopy_copy_batch_memory_kb * 1024 / list_length(route->writers);
	share = Max(share, TCOPY_ROUTE_MIN_BATCH);
	foreach(lc, route->writers)
	{
		TcopyWriter *w = (TcopyWriter *) lfirst(lc);

		w->batch_bytes = (int) Min((int64) w->codec->options.batch_bytes, share);
	}
	MemoryContextSwitchTo(oldcontext);
}

/* ExecFindPartition, with COPY's on_conflict for a partition it opens. */
static ResultRelInfo *
route_find_partition(TcopyRoute *route, TupleTableSlot *slot)
{
	ResultRelInfo *rri;

	if (route->on_conflict == NULL)
		return ExecFindPartition(route->mtstate, route->root, route->proute, slot,
								 route->estate);
	tcopy_insert_on_conflict = route->on_conflict;
	PG_TRY();
	{
		rri = ExecFindPartition(route->mtstate, route->root, route->proute, slot,
								route->estate);
	}
	PG_FINALLY();
	{
		tcopy_insert_on_conflict = NULL;
	}
	PG_END_TRY();
	return rri;
}

TcopyWriter *
tcopy_route_row(TcopyRoute *route, CopyFromState cstate, TupleTableSlot *slot)
{
	ResultRelInfo *rri;
	TcopyWriter *writer;

	if (route->plan != NULL)
	{
		/* the raw fields: the columns routing reads, the rest NULL */
		ExecClearTuple(slot);
		memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
		for (int k = 0; k < route->nkeys; k++)
		{
			int			m = route->key_atts[k];

			slot->tts_values[m] = tcopy_field_datum(cstate, route->plan,
													route->key_fields[k],
													&slot->tts_isnull[m]);
		}
		ExecStoreVirtualTuple(slot);
	}
	rri = route_find_partition(route, slot);
	if (unlikely(rri->ri_FdwRoutine == NULL ||
				 rri->ri_FdwRoutine->BeginForeignInsert != tcopyBeginForeignInsert ||
				 rri->ri_TrigDesc != NULL))
		route_refuse_partition(route, rri);
	writer = tcopy_insert_writer(rri);
	if (unlikely(!writer->routed))
		route_open_partition(route, rri, writer);
	if (route->plan != NULL)
	{
		tcopy_fields_to_row(cstate, route->plan, writer->route_target, &writer->row);
		return writer;
	}
	if (rri->ri_RootToPartitionMap != NULL)
		slot = execute_attr_map_slot(rri->ri_RootToPartitionMap->attrMap, slot,
									 rri->ri_PartitionTupleSlot);
	slot_getallattrs(slot);
	tcopy_encode_row(writer->codec, slot->tts_values, slot->tts_isnull, &writer->row);
	return writer;
}

/* Send every partition's batch built so far: a parallel COPY's chunk ends. */
void
tcopy_route_flush(TcopyRoute *route)
{
	ListCell   *lc;

	foreach(lc, route->writers)
		tcopy_writer_flush((TcopyWriter *) lfirst(lc));
}

/* Send every partition's last batch; close the partitions. */
void
tcopy_route_end(TcopyRoute *route)
{
	/* EndForeignInsert of each partition: its writer's last batch */
	ExecCleanupTupleRouting(route->mtstate, route->proute);
	/* the partitions' slots (of a partition whose columns differ) */
	ExecResetTupleTable(route->estate->es_tupleTable, false);
}
