/*
 * xact_int.h
 *		What xact.c, the write sessions' state, and xact_commit.c, their
 *		transaction callbacks, share.  Private to the transaction layer.
 */
#ifndef TCOPY_XACT_INT_H
#define TCOPY_XACT_INT_H

#include "postgres.h"

#include "tcopy/connection.h"

/* A session that sent batches lost its connection: refuse to go on. */
extern void tcopy_report_session_lost(TcopyConnection *conn) pg_attribute_noreturn();

/*
 * Take back the batches of rolled-back subtransactions, if any, before the
 * session is used again (TcopySavepoint).
 */
extern void tcopy_xact_apply_rollback(TcopyConnection *conn);

/*
 * A TRUNCATE of a subtransaction, held back until the session's next use
 * (TcopyConnection.pending_truncates), so that a rollback of the
 * subtransaction before that forgets it.
 */
typedef struct TcopyPendingTruncate
{
	int			level;			/* nest level of the subtransaction it is in */
	uint32		table_id;
	char	   *table_name;		/* the tserver table's */
} TcopyPendingTruncate;

/*
 * Send conn's held-back TRUNCATEs, in order, before the session's next use
 * (where tcopy_xact_apply_rollback runs, and before a batch or the streams).
 */
extern void tcopy_xact_flush_truncates(TcopyConnection *conn);

/*
 * The subtransaction at level ends: its held-back TRUNCATEs are forgotten
 * (aborted) or become its parent's (committed); level 1 (the transaction's
 * end): all are forgotten.
 */
extern void tcopy_xact_pending_truncates_end(TcopyConnection *conn, int level, bool aborted);

#endif							/* TCOPY_XACT_INT_H */
