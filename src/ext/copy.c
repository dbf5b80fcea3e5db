/*
 * copy.c
 *		COPY ... FROM into a tcopy foreign table, in place of DoCopy (the
 *		utility hook, hook.c, hands it over): read by Postgres' own COPY
 *		reader and shipped to the tserver in batches.
 *
 * The hook takes a COPY FROM only when its target is a tcopy foreign table
 * without triggers or stored generated columns (those need the executor's
 * per-row machinery); everything else, and everything when tcopy.copy_hook
 * is off, goes to Postgres, whose COPY then writes through the FDW insert
 * path: slower, never different.  Since the hook replaces DoCopy, it repeats
 * DoCopy's checks for a COPY FROM a relation, in the same order and words:
 * server file and program roles, INSERT privilege on the copied columns,
 * row-level security, read-only transactions.  Rows then come from
 * BeginCopyFrom / NextCopyFrom, so formats, options, defaults, encoding
 * conversion, input functions (typmods, domains) and every error message
 * with its "COPY t, line N" context are Postgres'; the WHERE clause is
 * prepared as DoCopy prepares it.  Without a WHERE clause, when
 * tcopy.raw_fields is on, rows come from NextCopyFromRawFields instead and
 * copy_fields.c converts the fields as NextCopyFrom would.  Progress goes to pg_stat_progress_copy
 * as Postgres' COPY reports it.
 *
 * A COPY straight into a partition checks every row against the partition
 * constraint, as CopyFrom does for a target that is a partition itself
 * (foreign or not): with Postgres' own ExecPartitionCheck, after the WHERE
 * clause, so that the error, its DETAIL (which follows column privileges)
 * and its CONTEXT are Postgres'.  The check needs the row's Datums: such a
 * COPY reads through NextCopyFrom, not the raw fields.  A COPY into the
 * parent is Postgres', which routes each row to its partition.
 */
#include "tcopy.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/progress.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"

/* Whether the hook can load rel itself (see the file comment). */
static bool
relation_is_accelerable(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->trigdesc != NULL)
		return false;
	if (desc->constr != NULL && desc->constr->has_generated_stored)
		return false;
	return true;
}

/* DoCopy's role checks for COPY FROM a server file or program. */
static void
check_copy_source_privileges(const CopyStmt *stmt)
{
	if (stmt->filename == NULL)
		return;
	if (stmt->is_program)
	{
		if (!has_privs_of_role(GetUserId(), ROLE_PG_EXECUTE_SERVER_PROGRAM))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program"),
					 errhint("Anyone can COPY to stdout or from stdin. "
							 "psql's \\copy command also works for anyone.")));
	}
	else if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser or have privileges of the pg_read_server_files role to COPY from a file"),
				 errhint("Anyone can COPY to stdout or from stdin. "
						 "psql's \\copy command also works for anyone.")));
}

/*
 * Check INSERT on the copied columns and row-level security, and prepare
 * the WHERE clause, as DoCopy does.  Returns the implicit-AND qual list.
 */
static List *
prepare_copy_from(ParseState *pstate, const CopyStmt *stmt, Relation rel)
{
	ParseNamespaceItem *nsitem;
	RangeTblEntry *rte;
	Node	   *where = NULL;
	List	   *attnums;
	ListCell   *cur;

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock,
										   NULL, false, false);
	rte = nsitem->p_rte;
	rte->requiredPerms = ACL_INSERT;

	if (stmt->whereClause)
	{
		addNSItemToQuery(pstate, nsitem, false, true, true);
		where = transformExpr(pstate, stmt->whereClause, EXPR_KIND_COPY_WHERE);
		where = coerce_to_boolean(pstate, where, "WHERE");
		assign_expr_collations(pstate, where);
		where = eval_const_expressions(NULL, where);
		where = (Node *) canonicalize_qual((Expr *) where, false);
		where = (Node *) make_ands_implicit((Expr *) where);
	}

	attnums = CopyGetAttnums(RelationGetDescr(rel), rel, stmt->attlist);
	foreach(cur, attnums)
	{
		int			attno = lfirst_int(cur) - FirstLowInvalidHeapAttributeNumber;

		rte->insertedCols = bms_add_member(rte->insertedCols, attno);
	}
	ExecCheckRTPerms(pstate->p_rtable, true);

	if (check_enable_rls(rte->relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("COPY FROM not supported with row-level security"),
				 errhint("Use INSERT statements instead.")));

	if (XactReadOnly)
		PreventCommandIfReadOnly("COPY FROM");
	return (List *) where;
}

/*
 * Read every row with Postgres' COPY reader and hand it to a writer.
 * Returns the number of rows loaded (those the WHERE clause kept).
 */
static uint64
copy_rows(ParseState *pstate, const CopyStmt *stmt, Relation rel, List *where)
{
	TcopyRelCodec *codec = tcopy_rel_codec(rel, GetUserId());
	CopyFromState cstate;
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	ExprState  *qual = NULL;
	TupleTableSlot *slot;
	ErrorContextCallback errcallback;
	MemoryContext oldcontext = CurrentMemoryContext;
	TcopyWriter *writer;
	TcopyFieldPlan *plan = NULL;
	ResultRelInfo *partition = NULL;
	uint64		processed = 0;
	uint64		excluded = 0;

	cstate = BeginCopyFrom(pstate, rel, (Node *) where, stmt->filename,
						   stmt->is_program, NULL, stmt->attlist, stmt->options);
	if (cstate->opts.freeze)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot perform COPY FREEZE on a foreign table")));
	if (rel->rd_rel->relispartition)
	{
		/* what the check's DETAIL needs: the range table, the inserted columns */
		ExecInitRangeTable(estate, pstate->p_rtable);
		partition = makeNode(ResultRelInfo);
		InitResultRelInfo(partition, rel, 1, NULL, 0);
	}
	if (where != NIL)
		qual = ExecPrepareQual(where, estate);
	else if (tcopy_raw_fields && partition == NULL)
		plan = tcopy_field_plan(cstate, codec);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	/* prepare_copy_from's entry: the columns copied */
	tcopy_codec_set_inserted_cols(codec, InvalidOid,
								  linitial_node(RangeTblEntry, pstate->p_rtable)->insertedCols);
	writer = tcopy_writer_begin(codec);

	/* errors while reading a row carry "COPY t, line N" */
	errcallback.callback = CopyFromErrorCallback;
	errcallback.arg = (void *) cstate;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
		if (plan != NULL)
		{
			/* fields straight to the wire row (copy_fields.c) */
			if (!tcopy_next_row_fields(cstate, plan, &writer->row))
				break;
			tcopy_writer_add_row(writer);
			pgstat_progress_update_param(PROGRESS_COPY_TUPLES_PROCESSED, ++processed);
			continue;
		}
		ExecClearTuple(slot);
		if (!NextCopyFrom(cstate, econtext, slot->tts_values, slot->tts_isnull))
			break;
		ExecStoreVirtualTuple(slot);
		if (qual != NULL)
		{
			econtext->ecxt_scantuple = slot;
			if (!ExecQual(qual, econtext))
			{
				pgstat_progress_update_param(PROGRESS_COPY_TUPLES_EXCLUDED, ++excluded);
				continue;
			}
		}
		if (partition != NULL)
			ExecPartitionCheck(partition, slot, estate, true);
		/* encoding may call send functions: per-tuple memory */
		tcopy_writer_add(writer, slot->tts_values, slot->tts_isnull);
		pgstat_progress_update_param(PROGRESS_COPY_TUPLES_PROCESSED, ++processed);
	}
	MemoryContextSwitchTo(oldcontext);
	error_context_stack = errcallback.previous;

	tcopy_writer_finish(writer);
	tcopy_writer_free(writer);
	ExecDropSingleTupleTableSlot(slot);
	EndCopyFrom(cstate);
	FreeExecutorState(estate);
	return processed;
}

/*
 * Read the COPY's input to its end and load nothing: a labelled load that
 * was published already.  A COPY FROM STDIN must consume what the client
 * sends; a file or a program is not even opened.
 */
static void
skip_rows(ParseState *pstate, const CopyStmt *stmt, Relation rel)
{
	CopyFromState cstate;
	TupleDesc	desc = RelationGetDescr(rel);
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	ExprContext *econtext;
	EState	   *estate;

	if (stmt->filename != NULL)
		return;
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, NULL, stmt->attlist, stmt->options);
	for (;;)
	{
		char	  **fields;
		int			nfields;

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		if (cstate->opts.binary ?
			!NextCopyFrom(cstate, econtext, values, nulls) :
			!NextCopyFromRawFields(cstate, &fields, &nfields))
			break;
	}
	EndCopyFrom(cstate);
	FreeExecutorState(estate);
}

/*
 * COPY FROM into a tcopy table, in place of DoCopy; false when the
 * statement is not one the hook takes (see the file comment).
 */
bool
tcopy_copy_from(const CopyStmt *stmt, const char *query_string,
				QueryEnvironment *query_env, uint64 *processed)
{
	Oid			relid;
	Relation	rel;
	ParseState *pstate;
	List	   *where;
	CopyStmt	copy;
	char	   *load_id;

	if (!stmt->is_from || stmt->relation == NULL)
		return false;
	/* resolve and lock once, so that the relation checked is the one loaded */
	relid = RangeVarGetRelid(stmt->relation, RowExclusiveLock, true);
	if (!tcopy_relation_is_tcopy_table(relid))
	{
		if (OidIsValid(relid))
			UnlockRelationOid(relid, RowExclusiveLock);
		return false;
	}

	/* what standard_ProcessUtility checks before DoCopy */
	if (XactReadOnly || IsInParallelMode())
	{
		PreventCommandIfParallelMode("COPY FROM");
		PreventCommandDuringRecovery("COPY FROM");
	}
	check_copy_source_privileges(stmt);
	rel = table_open(relid, NoLock);
	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = query_string;
	pstate->p_queryEnv = query_env;
	/* tcopy's own options, which Postgres' COPY reader does not know */
	copy = *stmt;
	copy.options = tcopy_copy_take_load_id(pstate, stmt->options, &load_id);
	if (!relation_is_accelerable(rel))
	{
		if (load_id != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("COPY option load_id is not supported for foreign table \"%s\"",
							RelationGetRelationName(rel)),
					 errdetail("A tcopy table with triggers or stored generated columns is loaded by Postgres' COPY, row by row.")));
		free_parsestate(pstate);
		table_close(rel, RowExclusiveLock);
		return false;
	}
	where = prepare_copy_from(pstate, &copy, rel);
	if (load_id != NULL && !tcopy_load_id_claim(rel, load_id))
	{
		skip_rows(pstate, &copy, rel);
		*processed = 0;
	}
	else
		*processed = copy_rows(pstate, &copy, rel, where);
	free_parsestate(pstate);
	table_close(rel, NoLock);
	return true;
}
