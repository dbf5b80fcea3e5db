/*
 * records.c
 *		Prepared write sessions' global ids (gids), and their records in
 *		tcopy.prepared_session_records: making and parsing gids, inserting,
 *		reading and forgetting records.  xact.c records the sessions it
 *		prepares; recovery.c reads the records to resolve the sessions.
 */

#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "tcopy/catalog.h"
#include "tcopy/transaction.h"

/* The columns of tcopy.prepared_session_records, in order. */
enum TcopyRecordColumn
{
	TCOPY_RECORD_GID = 1,
	TCOPY_RECORD_SERVER_ID,
	TCOPY_RECORD_USER_ID,
	TCOPY_RECORD_XID,
	TCOPY_RECORD_PREPARED_AT,
	TCOPY_RECORD_NATTS = TCOPY_RECORD_PREPARED_AT
};

/* The "tcopy:<system identifier>:<database oid>:" every gid here begins with. */
void
tcopy_gid_prefix(char *buf, size_t len)
{
	snprintf(buf, len, "tcopy:" UINT64_FORMAT ":%u:",
			 GetSystemIdentifier(), MyDatabaseId);
}

/*
 * The gid of the session of transaction fxid on serverid for userid:
 * tcopy:<system identifier>:<database oid>:<xid>:<server oid>:<user oid>.
 * One write session per server and user in a transaction: unique.
 */
void
tcopy_gid_make(char *buf, size_t len, FullTransactionId fxid,
			   Oid serverid, Oid userid)
{
	char		prefix[TC_GID_MAX + 1];

	tcopy_gid_prefix(prefix, sizeof(prefix));
	snprintf(buf, len, "%s" UINT64_FORMAT ":%u:%u", prefix,
			 U64FromFullTransactionId(fxid), serverid, userid);
}

/*
 * Read the xid and the user out of a gid of this database (one that begins
 * with tcopy_gid_prefix); false when it is not one tcopy made.
 */
bool
tcopy_gid_parse(const char *gid, FullTransactionId *fxid, Oid *userid)
{
	char		prefix[TC_GID_MAX + 1];
	uint64		xid;
	unsigned int serverid;
	unsigned int user;
	int			end = 0;

	tcopy_gid_prefix(prefix, sizeof(prefix));
	if (strncmp(gid, prefix, strlen(prefix)) != 0)
		return false;
	if (sscanf(gid + strlen(prefix), UINT64_FORMAT ":%u:%u%n",
			   &xid, &serverid, &user, &end) != 3 ||
		gid[strlen(prefix) + end] != '\0')
		return false;
	*fxid = FullTransactionIdFromU64(xid);
	*userid = (Oid) user;
	return true;
}

/*
 * The Oid of the extension's prepared_session_records (extension.c finds
 * it by membership, never by name); InvalidOid when it is missing and
 * missing_ok, else an ERROR: extension version 1.0 has no such table, and
 * writes cannot commit without it.
 */
Oid
tcopy_records_relid(bool missing_ok)
{
	Oid			relid = tcopy_extension_table(TCOPY_TABLE_PREPARED_SESSION_RECORDS);

	if (!OidIsValid(relid) && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s.%s does not exist", TCOPY_SCHEMA,
						tcopy_extension_table_name(TCOPY_TABLE_PREPARED_SESSION_RECORDS)),
				 errdetail("A transaction that writes to tcopy tables records there which "
						   "tserver sessions it prepared; version 1.1 of extension tcopy creates it."),
				 errhint("Update the extension with ALTER EXTENSION tcopy UPDATE.")));
	return relid;
}

/* Check that rel has the columns this file writes and reads. */
static void
tcopy_records_check(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (desc->natts != TCOPY_RECORD_NATTS ||
		TupleDescAttr(desc, TCOPY_RECORD_GID - 1)->atttypid != TEXTOID ||
		TupleDescAttr(desc, TCOPY_RECORD_SERVER_ID - 1)->atttypid != OIDOID ||
		TupleDescAttr(desc, TCOPY_RECORD_USER_ID - 1)->atttypid != OIDOID ||
		TupleDescAttr(desc, TCOPY_RECORD_XID - 1)->atttypid != XID8OID ||
		TupleDescAttr(desc, TCOPY_RECORD_PREPARED_AT - 1)->atttypid != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s.%s does not have the columns of extension tcopy's",
						TCOPY_SCHEMA,
						tcopy_extension_table_name(TCOPY_TABLE_PREPARED_SESSION_RECORDS))));
}

/*
 * Record, in the current transaction, that the session of transaction fxid
 * on serverid for userid is prepared under gid.  rel is the records table,
 * opened RowExclusiveLock.  Inserted as Citus' LogTransactionRecord does,
 * below the executor: no permission is checked, no trigger fires.
 */
void
tcopy_records_insert(Relation rel, const char *gid, Oid serverid, Oid userid,
					 FullTransactionId fxid)
{
	Datum		values[TCOPY_RECORD_NATTS];
	bool		nulls[TCOPY_RECORD_NATTS] = {false};
	HeapTuple	tuple;

	tcopy_records_check(rel);
	values[TCOPY_RECORD_GID - 1] = CStringGetTextDatum(gid);
	values[TCOPY_RECORD_SERVER_ID - 1] = ObjectIdGetDatum(serverid);
	values[TCOPY_RECORD_USER_ID - 1] = ObjectIdGetDatum(userid);
	values[TCOPY_RECORD_XID - 1] = FullTransactionIdGetDatum(fxid);
	values[TCOPY_RECORD_PREPARED_AT - 1] = TimestampTzGetDatum(GetCurrentTimestamp());
	tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
	CatalogTupleInsert(rel, tuple);
	heap_freetuple(tuple);
}

/* The records visible to snapshot, by gid, in CurrentMemoryContext. */
static HTAB *
tcopy_records_read(Relation rel, Snapshot snapshot)
{
	HASHCTL		ctl;
	HTAB	   *records;
	SysScanDesc scan;
	HeapTuple	tuple;

	tcopy_records_check(rel);
	ctl.keysize = TC_GID_MAX + 1;
	ctl.entrysize = sizeof(TcopyRecord);
	ctl.hcxt = CurrentMemoryContext;
	records = hash_create("tcopy prepared session records", 64, &ctl,
						  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	while ((tuple = systable_getnext(scan)) != NULL)
	{
		Datum		values[TCOPY_RECORD_NATTS];
		bool		nulls[TCOPY_RECORD_NATTS];
		char	   *gid;
		TcopyRecord *record;

		heap_deform_tuple(tuple, RelationGetDescr(rel), values, nulls);
		if (nulls[TCOPY_RECORD_GID - 1])
			continue;
		gid = TextDatumGetCString(values[TCOPY_RECORD_GID - 1]);
		if (strlen(gid) > TC_GID_MAX)
			continue;			/* no session can be prepared under it */
		record = hash_search(records, gid, HASH_ENTER, NULL);
		record->server_id = DatumGetObjectId(values[TCOPY_RECORD_SERVER_ID - 1]);
		record->user_id = DatumGetObjectId(values[TCOPY_RECORD_USER_ID - 1]);
		record->tid = tuple->t_self;
		record->deleted = false;
	}
	systable_endscan(scan);
	return records;
}

/* Read the records with a snapshot taken now. */
HTAB *
tcopy_records_read_now(Relation rel)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	HTAB	   *records = tcopy_records_read(rel, snapshot);

	UnregisterSnapshot(snapshot);
	return records;
}

/*
 * Read the records with a dirty snapshot: those of transactions still in
 * progress too, a prepared transaction's among them, whose records are
 * visible to nobody until it commits.
 */
HTAB *
tcopy_records_read_uncommitted(Relation rel)
{
	SnapshotData dirty;

	InitDirtySnapshot(dirty);
	return tcopy_records_read(rel, &dirty);
}

/* Delete the record of gid read before the listing, if any. */
void
tcopy_records_forget(Relation rel, HTAB *records, const char *gid)
{
	TcopyRecord *record = hash_search(records, gid, HASH_FIND, NULL);

	if (record != NULL && !record->deleted)
	{
		CatalogTupleDelete(rel, &record->tid);
		record->deleted = true;
	}
}
