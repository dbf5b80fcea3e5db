/*
 * ts_store_int.h
 *		The session layer's private structures and functions, shared by its
 *		files: the sessions' overlays (ts_session_read.c), the sentinel and
 *		publishing (ts_publish.c), backups (ts_backup.c, ts_backup_dir.c),
 *		loading prepared sessions (ts_prepared.c); over the registries
 *		(ts_registry.h) and the store's private struct (ts_storage_int.h).
 */
#ifndef TS_STORE_INT_H
#define TS_STORE_INT_H

#include "tc_arena.h"
#include "tc_buf.h"
#include "ts_registry.h"
#include "ts_storage_int.h"
#include "ts_store.h"

/*
 * A scan's view of an open session's writes to one table, within the
 * scan's key range (ts_session_read.c): each key once, in key order, as
 * the session left it (value NULL: deleted).  Copied when the scan opens,
 * so that the session goes on while the scan is read.
 */
typedef struct TsOverlayRow
{
	const uint8_t *key;
	uint32_t	keylen;
	uint32_t	valuelen;
	const uint8_t *value;		/* unmarked; NULL: the key is deleted */
	bool		yields;			/* a stored row of the key wins (on_conflict ignore) */
} TsOverlayRow;

typedef struct TsOverlay
{
	TsOverlayRow *rows;			/* [n], in key order */
	size_t		n;
	bool		hides_stored;	/* the session truncated the table */
	TcArena		arena;			/* the rows' keys and values */
} TsOverlay;

/* The session registry's lock: ts_store_open and ts_store_close. */
void		ts_sessions_init(TsStore *store);
void		ts_sessions_destroy(TsStore *store);

/*
 * Fill overlay with session_id's writes to table in [lower, upper) (upper
 * empty: no bound), when key is the session's: 0, or -1 with err.
 */
int			ts_session_overlay(TsStore *store, uint64_t session_id, const uint8_t *key,
							   size_t keylen, const TsTable *table, const TcBuf *lower,
							   const TcBuf *upper, TsOverlay *overlay, TsError *err);
void		ts_overlay_free(TsOverlay *overlay);

/*
 * in ts_scan_range.c: narrow [*lower, *upper) (upper empty: unbounded) to a
 * part of a SPLIT, [raw_lower, raw_upper) (each empty: no narrowing),
 * *empty when nothing is left: 0, or -1 with err (ERROR_PROTOCOL: a raw
 * key outside the table)
 */
int			ts_scan_narrow(const TsTable *table, const ProtobufCBinaryData *raw_lower,
						   const ProtobufCBinaryData *raw_upper, TcBuf *lower, TcBuf *upper,
						   bool *empty, TsError *err);

/*
 * in ts_scan_range.c: whether request reads one whole key, lower (its
 * encoded lower bound): both bounds inclusive, equal and of every key
 * column, and no part's narrowing
 */
bool		ts_scan_is_point(const TsTable *table, const Tcopy__Scan *request,
							 const TcBuf *lower);

/* A prepared session's sentinel key (TS_SENTINEL_KEY_MAX bytes at most) of gid. */
size_t		ts_sentinel_key(const char *gid, char *key);

/* in ts_backup_dir.c */

#define TS_BACKUP_MANIFEST "BACKUP"	/* a backup's manifest, in its directory */

/*
 * Check the backup directory path[pathlen] a client sent (under root when
 * there is one) and make it, with its missing parents, holding a manifest
 * that says it is incomplete: its path into dir, its parent's into parent,
 * each of TS_BACKUP_PATH_MAX + 1 bytes.  0, or -1 with err.
 */
int			ts_backup_make_dir(TsStore *store, const char *path, size_t pathlen,
							   const char *root, char *dir, char *parent, TsError *err);

/* in ts_backup.c */

/*
 * Before the store opens on dir: refuse a backup whose manifest is
 * incomplete (-1 with err); rename a complete one's BACKUP.old.
 */
int			ts_backup_check_start(const char *dir, TsError *err);

/* in ts_prepared.c */

/*
 * At open, once the tables are loaded: load every prepared record as an
 * orphaned session, raise next_session_id and keyless tables' row id
 * counters above whatever they hold, and empty the staging directory but
 * for the prepared sessions' directories.
 */
int			ts_prepared_load(TsStore *store, TsError *err);

/* in ts_publish.c */

/*
 * What publishing a session takes: a prepared session's from its record,
 * a one-step commit's from the session itself.  See ts_publish.c.
 */
typedef struct TsPublish
{
	const char *gid;			/* a prepared session's; NULL: one-step commit */
	const uint8_t *record_truncated;	/* gid and truncates: the record with */
	size_t		record_truncated_len;	/* truncates_applied set */
	uint64_t	rows;
	rocksdb_writebatch_t *batch;	/* never spilled: its truncates, then its
									 * rows; NULL: spilled */
	char	  **files;			/* spilled: SST files in precedence order, a */
	size_t		nfiles;			/* prepared session's sentinel file first */
	const uint32_t *tables;		/* written to */
	size_t		ntables;
	const uint32_t *truncates;	/* truncated tables; spilled: applied first, */
	size_t		ntruncates;		/* in a step of their own */
	bool		truncates_applied;
	const uint32_t *drops;
	size_t		ndrops;
	const TsLabelRef *labels;	/* load labels published with it */
	size_t		nlabels;
} TsPublish;

/*
 * Publish: make the session's truncates, rows and drops visible, durably,
 * and, for a prepared session, delete its record.  0, or -1 with err; a
 * prepared session is then either wholly published or still prepared, and
 * publishing it again finishes the job (see ts_publish.c).
 */
int			ts_publish(TsStore *store, const TsPublish *pub, TsError *err);

/* Add to wb the deletion of every row of table_id (its key range). */
void		ts_batch_delete_table_rows(TsStore *store, rocksdb_writebatch_t *wb,
									   uint32_t table_id);

/*
 * Write wb synced, which truncates or drops tables[n] (every row), holding
 * write_lock exclusive, and let their old rows go with their files (and,
 * with compact, compact what is left of their ranges to the bottom level),
 * unless a snapshot is held (ts_publish.c).  0, or -1 with err ("what: why").
 */
int			ts_store_write_emptying(TsStore *store, rocksdb_writebatch_t *wb,
									const uint32_t *tables, size_t ntables, bool compact,
									const char *what, TsError *err);

/* Is gid's sentinel in the data family?  1 yes, 0 no, -1 with err. */
int			ts_sentinel_present(TsStore *store, const char *gid, TsError *err);

/*
 * ts_scan_next_values for the rows that pass the scan's filter (all of
 * them without one): 1, 0 at the end, -1 with err.
 */
int			ts_scan_next_visible(TsScan *scan, const TsValue **values, TsError *err);

/* The table a scan reads (ts_scan.c). */
const TsTable *ts_scan_table(const TsScan *scan);
/* The table's layout the scan reads under (ts_table_layout when it began). */
const TsLayout *ts_scan_layout(const TsScan *scan);

/*
 * Cut a scan not yet read into up to max_parts parts (ts_scan_split), read
 * as of one RocksDB snapshot, each a scan of its own that a thread reads
 * through ts_scan_next_visible while others read the other parts; *nparts
 * 0 when the scan reads an open session's writes, has a limit, or its
 * range does not cut.  The parts share scan's projection: close them
 * (ts_scan_close) before it.  0, or -1 with err.
 */
int			ts_scan_parts(TsScan *scan, uint32_t max_parts, TsScan ***parts, size_t *nparts,
						  TsError *err);

#endif							/* TS_STORE_INT_H */
