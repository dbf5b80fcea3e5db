/*
 * ts_session_int.h
 *		What a write session's files in session/ call in each other: the
 *		registry of open sessions for scans (ts_session_read.c), the
 *		never-spilled session's WriteBatch and the session freed
 *		(ts_session.c), a stream's batch encoded and staged and each
 *		table's last record found again (ts_session_write.c).  The session
 *		struct itself, and its staging, spills, runs and SST files, are
 *		staging/'s (ts_staging.h); what outlives it, registry/'s
 *		(ts_registry.h).
 */
#ifndef TS_SESSION_INT_H
#define TS_SESSION_INT_H

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ts_store_int.h"

/* Register the session for scans of its writes; 0, or -1 with errno. */
int			ts_session_register(TsSession *session);

/* Unregister it, once no scan copies from it. */
void		ts_session_unregister(TsSession *session);

/*
 * Close and remove the read DB of its direct SST files, if open (under the
 * session's lock, or unregistered): the next scan makes it again from the
 * files the session has then.
 */
void		ts_session_read_db_reset(TsSession *session);

/* in ts_session.c */

/*
 * A WriteBatch of the staged records of a session that never spilled:
 * a DeleteRange of each truncated table first, then the records in arrival
 * order (the last put of a key wins).
 */
rocksdb_writebatch_t *ts_session_build_batch(TsSession *session);

/*
 * Free the session and everything it staged, its staging directory too
 * unless session->keep_dir; counted as aborted when aborted.
 */
void		ts_session_free(TsSession *session, bool aborted);

/* in ts_session_write.c: a stream's batch (ts_streams.c) */

/*
 * Check and encode batch's rows or records (inserts only), as laid out by
 * layout (NULL: the table's now), into records[] for the session, outside
 * its lock, *nrecords of them; 0, or -1 with err.
 */
int			ts_session_encode_batch(TsSession *session, const Tcopy__WriteBatch *batch,
									const TsLayout *layout, TcBuf *records,
									size_t *nrecords, TsError *err);

/*
 * Stage nrecords records of table_id (ts_session_encode_batch's) as the
 * session's next rows, all or none; *rows: the session's rows after.  0, or
 * -1 with err.
 */
int			ts_session_stage_records(TsSession *session, uint32_t table_id,
									 const TcBuf *records, size_t nrecords, uint64_t *rows,
									 TsError *err);

/*
 * After the staging buffer lost its records from noffsets on (a batch or
 * a savepoint rolled back): each table's last record is found again.
 */
void		ts_session_find_table_lasts(TsSession *session);

/*
 * A TRUNCATE of table_id staged after the session wrote rows to it: every
 * record of the table staged so far discarded, in memory and spilled (its
 * runs merged into one without them, its direct SST files removed), and
 * its load labels forgotten, so that the session's later rows of the
 * table are all it publishes after the truncate.  Under the session's
 * lock.  0, or -1 with err (the session must then be aborted).
 */
int			ts_session_discard_table(TsSession *session, uint32_t table_id, TsError *err);

#endif							/* TS_SESSION_INT_H */
