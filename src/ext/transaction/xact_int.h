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

#endif							/* TCOPY_XACT_INT_H */
