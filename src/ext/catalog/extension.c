/*
 * extension.c
 *		The extension's own catalog objects, found by membership: whether
 *		extension tcopy is installed in this database, and its tables.
 *
 * The library is preloaded into every database, with or without the
 * extension, and its hooks run in all of them.  A schema named tcopy may
 * have been made, before CREATE EXTENSION, by any role with CREATE on the
 * database, which then owns it and may rename it and put tables or views
 * of its own under the extension's table names.  So no table is found by
 * schema and name: a table is the extension's when pg_depend records it
 * as a member of extension tcopy (deptype 'e', which only the extension's
 * scripts and the extension's owner, a superuser, can make) and it is an
 * ordinary table.  Anything else of that name, in any schema, is ignored.
 *
 * The tables are looked up at every commit of a transaction that wrote to
 * a tcopy table and whenever a codec is built, so a table found is cached
 * until its relcache entry is invalidated: any ALTER, rename or DROP of it
 * (DROP EXTENSION included), here or in another backend, and a rollback of
 * the transaction that made it.  An absence is not cached: another backend
 * may create the extension at any time, and nothing tells this one.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "tcopy/catalog.h"

#define TCOPY_EXTENSION_NAME "tcopy"

static const char *const tcopy_table_names[TCOPY_NUM_EXTENSION_TABLES] = {
	[TCOPY_TABLE_PREPARED_SESSION_RECORDS] = "prepared_session_records",
	[TCOPY_TABLE_ENUM_LABEL] = "enum_label",
};

/* the tables found, InvalidOid until found or once invalidated */
static Oid	tcopy_table_cache[TCOPY_NUM_EXTENSION_TABLES];

Oid
tcopy_extension_oid(void)
{
	return get_extension_oid(TCOPY_EXTENSION_NAME, true);
}

const char *
tcopy_extension_table_name(TcopyExtensionTable table)
{
	return tcopy_table_names[table];
}

/*
 * The ordinary table named relname among the members of extension extoid;
 * InvalidOid when there is none.  One scan of pg_depend's reference index
 * over the extension's members (a few dozen rows), names and kinds from
 * the syscache.
 */
static Oid
tcopy_find_member_table(Oid extoid, const char *relname)
{
	Relation	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			found = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tuple);
		char	   *name;

		if (dep->deptype != DEPENDENCY_EXTENSION ||
			dep->classid != RelationRelationId || dep->objsubid != 0 ||
			get_rel_relkind(dep->objid) != RELKIND_RELATION)
			continue;
		name = get_rel_name(dep->objid);
		if (name != NULL && strcmp(name, relname) == 0)
		{
			found = dep->objid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

Oid
tcopy_extension_table(TcopyExtensionTable table)
{
	Oid			extoid;

	Assert(table >= 0 && table < TCOPY_NUM_EXTENSION_TABLES);
	if (OidIsValid(tcopy_table_cache[table]))
		return tcopy_table_cache[table];
	extoid = tcopy_extension_oid();
	if (!OidIsValid(extoid))
		return InvalidOid;
	tcopy_table_cache[table] = tcopy_find_member_table(extoid, tcopy_table_names[table]);
	return tcopy_table_cache[table];
}

/* Forget a table found once its relcache entry goes (all of them on a reset). */
static void
tcopy_extension_relcache_callback(Datum arg, Oid relid)
{
	for (int i = 0; i < TCOPY_NUM_EXTENSION_TABLES; i++)
	{
		if (!OidIsValid(relid) || tcopy_table_cache[i] == relid)
			tcopy_table_cache[i] = InvalidOid;
	}
}

void
TcopyExtensionInit(void)
{
	CacheRegisterRelcacheCallback(tcopy_extension_relcache_callback, (Datum) 0);
}
