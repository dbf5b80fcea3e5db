/*
 * copy_parallel_safe.c
 *		Whether a COPY may be parsed by parallel workers: the "workers"
 *		option, and what the workers would do that they may not (volatile or
 *		parallel-unsafe WHERE clauses, defaults, input functions, domain
 *		CHECKs, partition keys and constraints) or what the chunks cannot
 *		carry (client-only encodings).  docs/parallel.md lists where a COPY
 *		stays serial.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/copyfrom_internal.h"
#include "commands/defrem.h"
#include "mb/pg_wchar.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "tcopy/codec.h"
#include "tcopy/transaction.h"
#include "tcopy/copy.h"

#include "copy_parallel.h"

/* The most workers one COPY may ask for. */
#define TCOPY_COPY_WORKERS_MAX 64

/* The COPY's "workers" option: a number of workers, 0 for none. */
int
tcopy_copy_workers_of(DefElem *def)
{
	int			workers = defGetInt32(def);

	if (workers < 0 || workers > TCOPY_COPY_WORKERS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("COPY option \"workers\" must be between 0 and %d",
						TCOPY_COPY_WORKERS_MAX)));
	return workers;
}

/* check_functions_in_node's test: a function a worker may not run. */
static bool
function_not_parallel_safe(Oid func_id, void *context)
{
	return func_parallel(func_id) != PROPARALLEL_SAFE;
}

static bool
expr_not_parallel_safe_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, function_not_parallel_safe, context))
		return true;
	/* an identity column's default: nextval() by another name */
	if (IsA(node, NextValueExpr) || IsA(node, SubLink) || IsA(node, SubPlan) ||
		IsA(node, Param))
		return true;
	return expression_tree_walker(node, expr_not_parallel_safe_walker, context);
}

/* Whether workers may evaluate node: parallel safe and not volatile. */
static bool
expr_parallel_safe(Node *node)
{
	return !contain_volatile_functions(node) &&
		!expr_not_parallel_safe_walker(node, NULL);
}

/*
 * Whether a worker may convert a value of type typid: a domain's CHECK
 * constraints (of its base domains too) run in its input function.
 */
static bool
type_parallel_safe(Oid typid)
{
	Oid			elem = get_element_type(typid);
	DomainConstraintRef *ref;
	ListCell   *lc;

	if (OidIsValid(elem))
		typid = elem;			/* an array's elements go through theirs */
	if (get_typtype(typid) != TYPTYPE_DOMAIN)
		return true;
	/* in palloc'd memory: the context's reset callback it registers is in it */
	ref = palloc(sizeof(DomainConstraintRef));
	InitDomainConstraintRef(typid, ref, CurrentMemoryContext, false);
	foreach(lc, ref->constraints)
	{
		DomainConstraintState *c = (DomainConstraintState *) lfirst(lc);

		if (c->check_expr != NULL && !expr_parallel_safe((Node *) c->check_expr))
			return false;
	}
	return true;
}

/*
 * Why src's COPY must be parsed by the backend alone, or NULL: what the
 * workers would do that they may not, or what the chunks cannot carry.
 */
const char *
tcopy_parallel_refusal(CopyFromState src, List *where)
{
	ListCell   *lc;
	int			i;

	if (tcopy_encoder != TCOPY_ENCODER_WIRE)
		return "tcopy.encoder is not wire";
	if (!src->opts.binary && PG_ENCODING_IS_CLIENT_ONLY(src->file_encoding))
		return psprintf("encoding %s may hold ASCII bytes in its characters",
						pg_encoding_to_char(src->file_encoding));
	if (!expr_parallel_safe((Node *) where))
		return "the WHERE clause is not parallel safe";
	for (i = 0; i < src->num_defaults; i++)
		if (!expr_parallel_safe((Node *) src->defexprs[i]->expr))
			return "a default of a column not copied is volatile or not parallel safe";
	foreach(lc, src->attnumlist)
	{
		FmgrInfo   *input = &src->in_functions[lfirst_int(lc) - 1];

		if (func_parallel(input->fn_oid) != PROPARALLEL_SAFE)
			return "a column's input function is not parallel safe";
	}
	for (i = 0; i < RelationGetDescr(src->rel)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(src->rel), i);

		if (!att->attisdropped && !type_parallel_safe(att->atttypid))
			return psprintf("the CHECK of column \"%s\"'s domain is not parallel safe",
							NameStr(att->attname));
	}
	if (src->rel->rd_rel->relispartition &&
		!expr_parallel_safe((Node *) RelationGetPartitionQual(src->rel)))
		return "the partition constraint is not parallel safe";
	if (src->rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		foreach(lc, find_all_inheritors(RelationGetRelid(src->rel), NoLock, NULL))
		{
			Relation	r;
			bool		safe = true;

			if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
				continue;
			r = table_open(lfirst_oid(lc), NoLock);
			safe = expr_parallel_safe((Node *) RelationGetPartitionKey(r)->partexprs);
			table_close(r, NoLock);
			if (!safe)
				return "a partition key expression is not parallel safe";
		}
	}
	return NULL;
}
