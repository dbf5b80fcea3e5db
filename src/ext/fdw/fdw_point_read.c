/*
 * fdw_point_read.c
 *		Reading one row of a tcopy table by its key, as committed now with
 *		the transaction's own writes over it, on a connection of the
 *		reader's own (a scan of the same table may be streaming on its):
 *		what a row lock reads once it holds the lock (fdw_row_marks.c), and
 *		an INSERT ... ON CONFLICT reads of the key it inserts
 *		(fdw_upsert.c).  One round trip a row.
 */

#include "postgres.h"

#include "tcopy/connection.h"
#include "tcopy/fdw.h"

/* Close the reader's connection; also run when a query fails. */
static void
point_reader_close(void *arg)
{
	TcopyPointReader *reader = (TcopyPointReader *) arg;

	tcopy_scan_client_close(&reader->conn);
}

int
tcopy_live_columns(TcopyRelCodec *codec, int *proj)
{
	int			n = 0;

	for (int c = 0; c < codec->ncolumns; c++)
		if (codec->columns[c].conv != TCOPY_CONV_DROPPED)
			proj[n++] = c;
	return n;
}

void
tcopy_point_reader_init(TcopyPointReader *reader, TcopyRelCodec *codec)
{
	memset(reader, 0, sizeof(*reader));
	reader->codec = codec;
	initStringInfo(&reader->row);
	tcopy_scan_client_init(&reader->conn);
	reader->close_callback.func = point_reader_close;
	reader->close_callback.arg = reader;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &reader->close_callback);
}

/* Connect, and open the table: once per reader. */
static void
point_reader_connect(TcopyPointReader *reader)
{
	TcopyRelCodec *codec = reader->codec;
	bool		cached;
	bool		reused;
	int			rc;

	reused = tcopy_scan_client_open(&reader->conn, codec->options.address, codec->options.token,
									&codec->options.tls, true);
	rc = reused && !tc_client_idle_ok(reader->conn.client) ? -1 :
		tc_client_open_table_cached(reader->conn.client, codec->options.table_name,
									codec->schema, &reader->table_id, &cached);
	if (rc < 0 && reused)
	{
		/* an idle connection the tserver closed meanwhile: once more, fresh */
		tcopy_scan_client_close(&reader->conn);
		(void) tcopy_scan_client_open(&reader->conn, codec->options.address,
									  codec->options.token, &codec->options.tls, false);
		rc = tc_client_open_table_cached(reader->conn.client, codec->options.table_name,
										 codec->schema, &reader->table_id, &cached);
	}
	if (rc < 0)
		tcopy_report_client_error(reader->conn.client, codec->options.address,
								  psprintf("could not read a row of foreign table \"%s\"",
										   codec->relname));
}

/* tcopy_point_read, as of the snapshot estate's transaction reads, if any */
static bool
point_read(TcopyPointReader *reader, EState *estate, Tcopy__Row *key, uint8 **row, size_t *len)
{
	TcopyRelCodec *codec = reader->codec;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__KeyBound bound = TCOPY__KEY_BOUND__INIT;
	uint32_t   *columns = palloc(sizeof(uint32_t) * Max(codec->ncolumns, 1));
	const uint8 *session_key;
	size_t		session_keylen;
	Tcopy__ScanBatch *batch = NULL;
	bool		found = false;

	if (reader->conn.client == NULL)
		point_reader_connect(reader);
	for (int c = 0; c < codec->ncolumns; c++)
		if (codec->columns[c].conv != TCOPY_CONV_DROPPED)
			columns[request.n_columns++] = (uint32_t) c;
	bound.key = key;
	bound.inclusive = true;
	request.table_id = reader->table_id;
	request.columns = columns;
	request.lower = &bound;
	request.upper = &bound;
	request.packed = true;
	/* refused while a prepared session nobody holds wrote to the table */
	request.for_update = true;
	if (tcopy_xact_session_to_read(codec->relname, &codec->options, codec->userid,
								   &request.session_id, &session_key, &session_keylen))
	{
		request.session_key.data = (uint8_t *) session_key;
		request.session_key.len = session_keylen;
	}
	if (estate != NULL &&
		tcopy_read_snapshot(estate, &codec->options, &request.snapshot_id, &session_key,
							&session_keylen))
	{
		request.snapshot_key.data = (uint8_t *) session_key;
		request.snapshot_key.len = session_keylen;
	}
	if (tc_client_scan_start(reader->conn.client, &request) < 0)
		goto fail;
	do
	{
		if (tc_client_scan_next(reader->conn.client, &batch) < 0)
			goto fail;
		/* copied: the next batch (an empty one after a row over a batch's bytes) reuses the client's memory */
		if (batch->n_packed > 0)
		{
			resetStringInfo(&reader->row);
			appendBinaryStringInfo(&reader->row, (const char *) batch->packed.data,
								   (int) batch->packed.len);
			found = true;
		}
	} while (!batch->done);
	*row = (uint8 *) reader->row.data;
	*len = found ? (size_t) reader->row.len : 0;
	return found;

fail:
	if (tc_client_error_code(reader->conn.client) == TCOPY__ERROR_CODE__ERROR_SERIALIZATION)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to foreign table \"%s\" for update",
						codec->relname),
				 errdetail("tserver at \"%s\": %s.", codec->options.address,
						   tc_client_error(reader->conn.client)),
				 errhint("Recovery resolves it (tcopy.recover_prepared_sessions(), or the recovery worker "
						 "every tcopy.recovery_interval); retry the transaction then.")));
	tcopy_report_client_error(reader->conn.client, codec->options.address,
							  psprintf("could not read a row of foreign table \"%s\"",
									   codec->relname));
}

bool
tcopy_point_read(TcopyPointReader *reader, Tcopy__Row *key, uint8 **row, size_t *len)
{
	return point_read(reader, NULL, key, row, len);
}

bool
tcopy_point_read_as_of(TcopyPointReader *reader, EState *estate, Tcopy__Row *key, uint8 **row,
					   size_t *len)
{
	return point_read(reader, estate, key, row, len);
}

void
tcopy_point_reader_end(TcopyPointReader *reader)
{
	TcopyRelCodec *codec = reader->codec;

	if (reader->conn.client != NULL && !reader->conn.lost)
		tcopy_scan_client_release(&reader->conn, codec->options.address, codec->options.token,
								  &codec->options.tls);
	tcopy_scan_client_close(&reader->conn);
}
