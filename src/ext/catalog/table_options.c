/*
 * table_options.c
 *		A tcopy foreign table's options set by tcopy itself, in the
 *		catalog and inside the transaction, where no ALTER FOREIGN TABLE
 *		... OPTIONS and its validator run: the places of dropped columns
 *		(option dropped_positions, alter.c) and the tserver table of a
 *		rewrite (option table_name, alter_rewrite.c).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "tcopy/catalog.h"

/*
 * Set foreign table relid's options: each one's kept unless drop (a List
 * of names) names it, then those of add ("name=value" strings) appended.
 */
void
tcopy_replace_table_options(Oid relid, List *drop, List *add)
{
	Relation	ftrel = table_open(ForeignTableRelationId, RowExclusiveLock);
	HeapTuple	tuple = SearchSysCacheCopy1(FOREIGNTABLEREL, ObjectIdGetDatum(relid));
	Datum		values[Natts_pg_foreign_table] = {0};
	bool		nulls[Natts_pg_foreign_table] = {0};
	bool		replace[Natts_pg_foreign_table] = {0};
	ArrayBuildState *astate = NULL;
	HeapTuple	newtuple;
	Datum		datum;
	bool		isnull;
	ListCell   *lc;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for foreign table %u", relid);
	datum = SysCacheGetAttr(FOREIGNTABLEREL, tuple, Anum_pg_foreign_table_ftoptions, &isnull);
	foreach(lc, isnull ? NIL : untransformRelOptions(datum))
	{
		DefElem    *def = (DefElem *) lfirst(lc);
		ListCell   *dc;
		bool		dropped = false;

		foreach(dc, drop)
			dropped |= strcmp(def->defname, (const char *) lfirst(dc)) == 0;
		if (!dropped)
			astate = accumArrayResult(astate,
									  CStringGetTextDatum(psprintf("%s=%s", def->defname,
																   defGetString(def))),
									  false, TEXTOID, CurrentMemoryContext);
	}
	foreach(lc, add)
		astate = accumArrayResult(astate, CStringGetTextDatum((const char *) lfirst(lc)), false,
								  TEXTOID, CurrentMemoryContext);
	if (astate != NULL)
		values[Anum_pg_foreign_table_ftoptions - 1] = makeArrayResult(astate, CurrentMemoryContext);
	else
		nulls[Anum_pg_foreign_table_ftoptions - 1] = true;
	replace[Anum_pg_foreign_table_ftoptions - 1] = true;
	newtuple = heap_modify_tuple(tuple, RelationGetDescr(ftrel), values, nulls, replace);
	CatalogTupleUpdate(ftrel, &newtuple->t_self, newtuple);
	heap_freetuple(newtuple);
	heap_freetuple(tuple);
	table_close(ftrel, RowExclusiveLock);
	CacheInvalidateRelcacheByRelid(relid);
}
