/*
 * fdw_upsert.c
 *		INSERT ... ON CONFLICT (key) DO NOTHING and DO UPDATE of a tcopy
 *		table, as on a heap table whose primary key is the key.
 *
 * Postgres infers an ON CONFLICT's arbiter from the table's unique
 * indexes, and a foreign table has none: its planner refuses "there is no
 * unique or exclusion constraint matching the ON CONFLICT specification".
 * So a planner hook takes the inference specification off an INSERT into
 * a tcopy table when it names exactly the table's key columns (a tcopy
 * table's one unique key), with no WHERE, opclass or collation; the
 * planner then plans ON CONFLICT with no arbiter index, and the FDW is the
 * arbiter.  Any other specification is left to Postgres, to refuse in its
 * own words.  ON CONFLICT DO NOTHING with no specification conflicts on the
 * key (none on a table without one).
 *
 * Each row proposed, in ExecForeignInsert (batching is off):
 * - a key whose row the same statement inserted or updated is a conflict
 *   with that row, as on a heap: DO NOTHING skips it, DO UPDATE fails
 *   with Postgres' cardinality violation (21000);
 * - DO NOTHING first reads the stored row, and skips it if there is one,
 *   without waiting for its lockers, as a heap's;
 * - its key is locked as FOR NO KEY UPDATE (row_locks.c), so that
 *   upserts of one key, and UPDATEs, DELETEs and lockers of its row,
 *   take turns; then the stored row is read, as committed now with the
 *   transaction's writes over it (fdw_point_read.c);
 * - under REPEATABLE READ and SERIALIZABLE a row that the transaction's
 *   snapshot does not show (read as of it too) fails with 40001, as
 *   ExecCheckTupleVisible does;
 * - no row: the row is inserted.  A row: DO NOTHING skips it; DO UPDATE
 *   evaluates the SET and WHERE with the stored row as the table's and the
 *   proposed one as EXCLUDED (the executor's own projection,
 *   ri_onConflict), and writes the new row as an update of the key; its
 *   RETURNING is the new row.
 *
 * Not as on a heap: an INSERT without ON CONFLICT takes no lock, so an
 * upsert racing it to a new key may find the row only at COMMIT (23505
 * under on_conflict 'error'); DO UPDATE SET of a key column, and DO UPDATE
 * of a table with row triggers or row security, are refused (they would
 * need the update's own trigger and check paths); ON CONFLICT through a
 * partitioned table is Postgres' refusal (the root has no unique index).
 */

#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tcopy/fdw.h"

struct TcopyUpsert
{
	TcopyRelCodec *codec;
	OnConflictAction action;
	TcopyPointReader reader;	/* the stored row, now */
	TcopyPointReader snapshot_reader;	/* ... as of the transaction's snapshot */
	EState	   *estate;
	TcopyRowBuf rowbuf;
	HTAB	   *proposed;		/* keys proposed by the statement, by hash */
	TupleTableSlot *stored;		/* the stored row, decoded */
	int		   *proj;			/* every live column */
	int			nproj;
};

/* An entry of proposed: the keys of one hash. */
typedef struct ProposedKeys
{
	uint64		hash;
	List	   *keys;			/* of bytea */
} ProposedKeys;

static planner_hook_type prev_planner = NULL;

/*
 * Whether the inference specification of onconflict names exactly the key
 * columns of rel, the INSERT's target at rti.
 */
static bool
spec_is_key(OnConflictExpr *onconflict, Index rti, Relation rel)
{
	bool		key_bytes;
	List	   *key = tcopy_rel_key_attnums(rel, &key_bytes);
	Bitmapset  *named = NULL;
	Bitmapset  *keyset = NULL;
	ListCell   *lc;

	if (key == NIL || onconflict->arbiterWhere != NULL || OidIsValid(onconflict->constraint))
		return false;
	foreach(lc, onconflict->arbiterElems)
	{
		InferenceElem *elem = lfirst_node(InferenceElem, lc);
		Var		   *var = (Var *) elem->expr;

		if (!IsA(var, Var) || var->varno != rti || var->varlevelsup != 0 ||
			var->varattno <= 0 || OidIsValid(elem->infercollid) ||
			OidIsValid(elem->inferopclass))
			return false;
		named = bms_add_member(named, var->varattno);
	}
	foreach(lc, key)
		keyset = bms_add_member(keyset, lfirst_int(lc));
	return bms_equal(named, keyset);
}

/* Take the key's specification off every INSERT into a tcopy table of query. */
static void
strip_key_specs(Query *query)
{
	ListCell   *lc;

	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (IsA(cte->ctequery, Query))
			strip_key_specs((Query *) cte->ctequery);
	}
	if (query->commandType == CMD_INSERT && query->onConflict != NULL &&
		query->onConflict->arbiterElems != NIL)
	{
		RangeTblEntry *rte = rt_fetch(query->resultRelation, query->rtable);
		Relation	rel;

		if (rte->relkind != RELKIND_FOREIGN_TABLE || !tcopy_relation_is_tcopy_table(rte->relid))
			return;
		rel = table_open(rte->relid, NoLock);
		if (spec_is_key(query->onConflict, query->resultRelation, rel))
			query->onConflict->arbiterElems = NIL;
		table_close(rel, NoLock);
	}
}

static PlannedStmt *
tcopy_upsert_planner(Query *parse, const char *query_string, int cursorOptions,
					 ParamListInfo boundParams)
{
	strip_key_specs(parse);
	if (prev_planner)
		return prev_planner(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

void
TcopyUpsertInit(void)
{
	prev_planner = planner_hook;
	planner_hook = tcopy_upsert_planner;
}

void
tcopy_upsert_check_plan(PlannerInfo *root, ModifyTable *plan, Index rti)
{
	RangeTblEntry *rte = planner_rt_fetch(rti, root);
	Relation	rel;
	bool		key_bytes;
	List	   *key;
	ListCell   *lc;

	if (plan->onConflictAction != ONCONFLICT_UPDATE)
		return;
	rel = table_open(rte->relid, NoLock);
	key = tcopy_rel_key_attnums(rel, &key_bytes);
	/* the SET's target columns (its resnos are renumbered by then) */
	foreach(lc, plan->onConflictCols)
	{
		AttrNumber	attno = (AttrNumber) lfirst_int(lc);

		if (list_member_int(key, attno))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("ON CONFLICT DO UPDATE SET of key column \"%s\" of foreign table \"%s\" is not supported",
							NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname),
							RelationGetRelationName(rel))));
	}
	if ((rel->trigdesc != NULL &&
		 (rel->trigdesc->trig_insert_before_row || rel->trigdesc->trig_insert_after_row ||
		  rel->trigdesc->trig_update_before_row || rel->trigdesc->trig_update_after_row)) ||
		rel->rd_rel->relrowsecurity)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT DO UPDATE of foreign table \"%s\" is not supported with row triggers or row security",
						RelationGetRelationName(rel))));
	table_close(rel, NoLock);
}

TcopyUpsert *
tcopy_upsert_begin(TcopyRelCodec *codec, ModifyTableState *mtstate)
{
	TcopyUpsert *upsert;
	HASHCTL		ctl;

	if (mtstate == NULL || mtstate->ps.plan == NULL || !IsA(mtstate->ps.plan, ModifyTable) ||
		((ModifyTable *) mtstate->ps.plan)->onConflictAction == ONCONFLICT_NONE ||
		mtstate->operation != CMD_INSERT || codec->options.key_attnums == NIL)
		return NULL;
	upsert = palloc0(sizeof(TcopyUpsert));
	upsert->codec = codec;
	upsert->action = ((ModifyTable *) mtstate->ps.plan)->onConflictAction;
	upsert->estate = mtstate->ps.state;
	tcopy_point_reader_init(&upsert->reader, codec);
	tcopy_point_reader_init(&upsert->snapshot_reader, codec);
	tcopy_row_buf_init(&upsert->rowbuf, codec->ncolumns + codec->nimages);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(ProposedKeys);
	ctl.hcxt = CurrentMemoryContext;
	upsert->proposed = hash_create("tcopy upsert keys", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	upsert->proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	upsert->nproj = tcopy_live_columns(codec, upsert->proj);
	return upsert;
}

void
tcopy_upsert_end(TcopyUpsert *upsert)
{
	tcopy_point_reader_end(&upsert->reader);
	tcopy_point_reader_end(&upsert->snapshot_reader);
	if (upsert->stored != NULL)
		ExecDropSingleTupleTableSlot(upsert->stored);
}

/*
 * Whether the statement inserted or updated the row of key (packed); with
 * add, it has now.
 */
static bool
affected_before(TcopyUpsert *upsert, const uint8 *packed, size_t len, bool add)
{
	uint64		hash = hash_bytes_extended(packed, (int) len, 0);
	ProposedKeys *entry;
	bool		found;
	ListCell   *lc;
	bytea	   *copy;
	MemoryContext oldcxt;

	entry = hash_search(upsert->proposed, &hash, HASH_ENTER, &found);
	if (!found)
		entry->keys = NIL;
	foreach(lc, entry->keys)
	{
		bytea	   *k = (bytea *) lfirst(lc);

		if (VARSIZE(k) - VARHDRSZ == len && memcmp(VARDATA(k), packed, len) == 0)
			return true;
	}
	if (!add)
		return false;
	oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(upsert));
	copy = palloc(VARHDRSZ + len);
	SET_VARSIZE(copy, VARHDRSZ + len);
	memcpy(VARDATA(copy), packed, len);
	entry->keys = lappend(entry->keys, copy);
	MemoryContextSwitchTo(oldcxt);
	return false;
}

/*
 * REPEATABLE READ: the stored row (row, len) must be the one the
 * transaction's snapshot shows, as ExecCheckTupleVisible requires.
 */
static void
check_visible(TcopyUpsert *upsert, Tcopy__Row *key, const uint8 *row, size_t len)
{
	uint8	   *seen;
	size_t		seen_len;
	uint64		hash = hash_bytes_extended(row, (int) len, 0);

	if (!tcopy_point_read_as_of(&upsert->snapshot_reader, upsert->estate, key, &seen,
								&seen_len) ||
		hash_bytes_extended(seen, (int) seen_len, 0) != hash)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
}

TupleTableSlot *
tcopy_upsert_row(TcopyUpsert *upsert, ResultRelInfo *resultRelInfo, ModifyTableState *mtstate,
				 TupleTableSlot *slot, bool *insert)
{
	TcopyRelCodec *codec = upsert->codec;
	Tcopy__Row *key;
	uint8	   *packed;
	size_t		packed_len;
	uint8	   *row;
	size_t		len;
	uint8	   *pos;
	OnConflictSetState *oc = resultRelInfo->ri_onConflict;
	ExprContext *econtext;

	*insert = false;
	slot_getallattrs(slot);
	tcopy_encode_row(codec, slot->tts_values, slot->tts_isnull, &upsert->rowbuf);
	tcopy_encode_images(codec, &upsert->rowbuf);
	key = tcopy_key_of_row(codec, &upsert->rowbuf);
	packed_len = tcopy__row__get_packed_size(key);
	packed = palloc(Max(packed_len, 1));
	tcopy__row__pack(key, packed);

	/*
	 * a row this statement inserted or updated is the stored one, whose
	 * batch may not have reached the tserver yet
	 */
	if (affected_before(upsert, packed, packed_len, false))
	{
		if (upsert->action == ONCONFLICT_NOTHING)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("ON CONFLICT DO UPDATE command cannot affect row a second time"),
				 errhint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")));
	}

	/* DO NOTHING skips a stored row without waiting for its lockers, as a heap's */
	if (upsert->action == ONCONFLICT_NOTHING &&
		tcopy_point_read(&upsert->reader, key, &row, &len))
	{
		if (IsolationUsesXactSnapshot())
			check_visible(upsert, key, row, len);
		return NULL;
	}
	(void) tcopy_lock_row(resultRelInfo->ri_RelationDesc, key, packed, packed_len,
						  ExclusiveLock, LockWaitBlock);
	if (!tcopy_point_read(&upsert->reader, key, &row, &len))
	{
		(void) affected_before(upsert, packed, packed_len, true);
		*insert = true;
		return slot;
	}
	if (IsolationUsesXactSnapshot())
		check_visible(upsert, key, row, len);
	if (upsert->action == ONCONFLICT_NOTHING)
		return NULL;

	/* DO UPDATE: the SET and WHERE over the stored row and EXCLUDED */
	if (upsert->stored == NULL)
		upsert->stored = MakeSingleTupleTableSlot(RelationGetDescr(resultRelInfo->ri_RelationDesc),
												  &TTSOpsVirtual);
	ExecClearTuple(upsert->stored);
	pos = row;
	tcopy_decode_packed_row(codec, upsert->proj, upsert->nproj, &pos, row + len,
							upsert->stored->tts_values, upsert->stored->tts_isnull);
	ExecStoreVirtualTuple(upsert->stored);
	ExecCopySlot(oc->oc_Existing, upsert->stored);

	econtext = mtstate->ps.ps_ExprContext;
	econtext->ecxt_scantuple = oc->oc_Existing;
	econtext->ecxt_innertuple = slot;
	econtext->ecxt_outertuple = NULL;
	/* not updated: a later proposal of the key may still update it, as on a heap */
	if (oc->oc_WhereClause != NULL && !ExecQual(oc->oc_WhereClause, econtext))
	{
		ExecClearTuple(oc->oc_Existing);
		return NULL;
	}
	(void) affected_before(upsert, packed, packed_len, true);
	return ExecProject(oc->oc_ProjInfo);
}
