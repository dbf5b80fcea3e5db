/*
 * fdw_analyze.c
 *		ANALYZE of a tcopy table: a random sample of its rows, taken from
 *		one full scan on the tserver.
 *
 * The tserver has no pages to sample, so the whole table is scanned, as
 * postgres_fdw does without remote sampling, and a reservoir (Vitter's
 * algorithm Z, utils/sampling.h) keeps targrows of the rows seen.  A row
 * the reservoir skips is never decoded; a kept row is decoded in a
 * per-row memory context and copied, as a tuple, into the caller's
 * context, so memory holds the sample and one batch of the scan whatever
 * the table's size.
 *
 * ANALYZE checks that its user owns the table and runs as the owner
 * (do_analyze_rel), so the scan reaches the tserver with the owner's user
 * mapping, as postgres_fdw's does.  A table the transaction wrote to is
 * refused as a scan refuses it: its new rows are not visible before the
 * commit, and statistics of the old ones would be silently stale.
 */

#include "postgres.h"

#include "access/htup_details.h"
#include "storage/block.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "tcopy/catalog.h"
#include "tcopy/codec.h"
#include "tcopy/connection.h"
#include "tcopy/fdw.h"

/* What the acquisition keeps between batches, in the caller's context. */
typedef struct TcopyAnalyzeState
{
	TcopyRelCodec *codec;
	TcopyScanClient conn;
	MemoryContextCallback close_callback;
	int			nproj;			/* the columns read: the live ones */
} TcopyAnalyzeState;

static int	tcopy_acquire_sample_rows(Relation rel, int elevel,
									  HeapTuple *rows, int targrows,
									  double *totalrows, double *totaldeadrows);

/*
 * Offer ANALYZE the sampling function.  *totalpages only sizes ANALYZE's
 * progress report and pg_class.relpages, which nothing of tcopy's reads:
 * it is the tserver's estimate of the table's size in pages when the
 * tserver answers, else 1.
 */
bool
tcopyAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						 BlockNumber *totalpages)
{
	double		rows;
	double		bytes;

	*func = tcopy_acquire_sample_rows;
	*totalpages = 1;
	if (tcopy_table_estimate(relation, relation->rd_rel->relowner, &rows, &bytes) &&
		bytes > BLCKSZ)
		*totalpages = (BlockNumber) Min(bytes / BLCKSZ, (double) MaxBlockNumber);
	return true;
}

/* Close the connection, if any; also run when ANALYZE fails. */
static void
tcopy_analyze_close(void *arg)
{
	TcopyAnalyzeState *state = (TcopyAnalyzeState *) arg;

	tcopy_scan_client_close(&state->conn);
}

/*
 * Connect and start a scan of every column of the table; false when there
 * is nothing to scan (the null: transport, or a table the tserver does
 * not know, which was never written to).
 */
static bool
tcopy_analyze_start(TcopyAnalyzeState *state, int *proj)
{
	TcopyRelCodec *codec = state->codec;
	TcClient   *client;
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	uint32_t   *columns;
	uint32		table_id;

	if (tcopy_address_is_null(codec->options.address))
		return false;
	(void) tcopy_scan_client_open(&state->conn, codec->options.address, codec->options.token,
						   &codec->options.tls, false);
	client = state->conn.client;
	if (tc_client_open_table(client, codec->options.table_name, codec->schema,
							 false, &table_id, NULL, NULL) < 0)
	{
		if (tc_client_error_code(client) == TCOPY__ERROR_CODE__ERROR_UNKNOWN_TABLE)
			return false;
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not read foreign table \"%s\"", codec->relname));
	}

	/* every column, named: an empty projection would also bring key images */
	columns = palloc(sizeof(uint32_t) * Max(codec->ncolumns, 1));
	state->nproj = 0;
	for (int c = 0; c < codec->ncolumns; c++)
		if (codec->columns[c].conv != TCOPY_CONV_DROPPED)
		{
			columns[state->nproj] = (uint32_t) c;
			proj[state->nproj++] = c;
		}
	request.table_id = table_id;
	request.n_columns = state->nproj;
	request.columns = columns;
	if (tc_client_scan_start(client, &request) < 0)
		tcopy_report_client_error(client, codec->options.address,
								  psprintf("could not scan table \"%s\"",
										   codec->options.table_name));
	pfree(columns);
	return true;
}

/*
 * Scan the whole table and keep a uniform random sample of up to targrows
 * rows in rows[], as tuples in CurrentMemoryContext; *totalrows is the
 * number of rows scanned.  The tserver keeps no dead rows.
 */
static int
tcopy_acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows,
						  int targrows, double *totalrows, double *totaldeadrows)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	MemoryContext caller_cxt = CurrentMemoryContext;
	MemoryContext row_cxt;
	TcopyAnalyzeState *state;
	TcopyRelCodec *codec;
	ReservoirStateData rstate;
	double		rows_seen = 0;
	double		rowstoskip = -1;
	int			numrows = 0;
	int		   *proj;
	Datum	   *values;
	bool	   *nulls;
	bool		done = false;

	state = palloc0(sizeof(TcopyAnalyzeState));
	state->codec = codec = tcopy_rel_codec(rel, rel->rd_rel->relowner);
	tcopy_scan_check_visible(rel, &codec->options);

	proj = palloc(sizeof(int) * Max(codec->ncolumns, 1));
	values = palloc(sizeof(Datum) * Max(tupdesc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(tupdesc->natts, 1));
	row_cxt = AllocSetContextCreate(caller_cxt, "tcopy analyze row",
									ALLOCSET_DEFAULT_SIZES);
	reservoir_init_selection_state(&rstate, targrows);

	tcopy_scan_client_init(&state->conn);
	state->close_callback.func = tcopy_analyze_close;
	state->close_callback.arg = state;
	MemoryContextRegisterResetCallback(caller_cxt, &state->close_callback);

	if (!tcopy_analyze_start(state, proj))
		done = true;
	while (!done)
	{
		Tcopy__ScanBatch *batch;

		CHECK_FOR_INTERRUPTS();
		vacuum_delay_point();
		if (tc_client_scan_next(state->conn.client, &batch) < 0)
			tcopy_report_client_error(state->conn.client, codec->options.address,
									  psprintf("could not scan table \"%s\"",
											   codec->options.table_name));
		done = batch->done;

		for (size_t r = 0; r < batch->n_rows; r++)
		{
			int			pos;

			/* the first targrows rows fill the reservoir */
			if (numrows < targrows)
				pos = numrows++;
			else
			{
				/*
				 * Then each row replaces a random one of the sample with a
				 * probability that falls as rows are seen: Vitter's
				 * algorithm says how many to skip before the next that does.
				 */
				if (rowstoskip < 0)
					rowstoskip = reservoir_get_next_S(&rstate, rows_seen, targrows);
				if (rowstoskip <= 0)
				{
					pos = (int) (targrows * sampler_random_fract(&rstate.randstate));
					Assert(pos >= 0 && pos < targrows);
					heap_freetuple(rows[pos]);
				}
				else
					pos = -1;
				rowstoskip -= 1;
			}
			rows_seen += 1;
			if (pos < 0)
				continue;

			MemoryContextSwitchTo(row_cxt);
			tcopy_decode_row(codec, proj, state->nproj, batch->rows[r],
							 values, nulls);
			MemoryContextSwitchTo(caller_cxt);
			rows[pos] = heap_form_tuple(tupdesc, values, nulls);
			MemoryContextReset(row_cxt);
		}
	}

	tcopy_analyze_close(state);
	MemoryContextDelete(row_cxt);

	*totalrows = rows_seen;
	*totaldeadrows = 0;
	ereport(elevel,
			(errmsg("\"%s\": table contains %.0f rows, %d rows in sample",
					RelationGetRelationName(rel), rows_seen, numrows)));
	return numrows;
}
