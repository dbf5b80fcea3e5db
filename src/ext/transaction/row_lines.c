/*
 * row_lines.c
 *		Which COPY line each row of a write session came from, so that a
 *		duplicate key the tserver names by its row in the session
 *		(Error.duplicate_ordinal) gets the CONTEXT a heap table's COPY gives
 *		it: "COPY t, line N".
 *
 * Nothing is kept per row.  Rows are numbered as the tserver numbers them:
 * 1, 2, ... in the order of the session's batches, every table's rows.  A
 * run of rows whose lines follow each other (line N, N+1, ...) of one
 * COPY, or of rows of no line (an INSERT's), is one TcopyLineRun: a COPY
 * that loads every line of its input is one run however long.  A run
 * starts only where a row's line is not the previous row's plus one: rows
 * skipped by ON_ERROR ignore or excluded by WHERE, a CSV value spanning
 * lines, another statement.  The writer collects its batch's runs as rows
 * are added (a comparison per row, tcopy_writer_add_row), and hands them
 * to the session's map when it sends the batch; the map merges a batch's
 * first run into the last one when it goes on from it.  Past
 * TCOPY_LINE_RUNS_MAX runs the map stops growing, and rows after those it
 * holds get no CONTEXT: memory stays bounded (24 bytes a run) whatever
 * the input.
 */

#include "postgres.h"

#include "utils/memutils.h"

#include "tcopy/connection.h"
#include "tcopy/transaction.h"

/* Forget the session's lines (a session begins). */
void
tcopy_lines_reset(TcopyConnection *conn)
{
	ListCell   *lc;

	if (conn->line_runs != NULL)
		pfree(conn->line_runs);
	conn->line_runs = NULL;
	conn->nline_runs = 0;
	conn->line_runs_cap = 0;
	conn->lines_upto = 0;
	conn->lines_complete = true;
	foreach(lc, conn->line_relnames)
		pfree(lfirst(lc));
	list_free(conn->line_relnames);
	conn->line_relnames = NIL;
}

/* relname as kept for the session's runs (one copy per name). */
static const char *
tcopy_lines_relname(TcopyConnection *conn, const char *relname)
{
	MemoryContext old;
	char	   *copy;

	if (conn->line_relnames != NIL && strcmp(llast(conn->line_relnames), relname) == 0)
		return llast(conn->line_relnames);
	old = MemoryContextSwitchTo(TopMemoryContext);
	copy = pstrdup(relname);
	conn->line_relnames = lappend(conn->line_relnames, copy);
	MemoryContextSwitchTo(old);
	return copy;
}

/* Append run to the session's map; false when the map is full. */
static bool
tcopy_lines_append(TcopyConnection *conn, const TcopyLineRun *run)
{
	if (conn->nline_runs > 0)
	{
		TcopyLineRun *last = &conn->line_runs[conn->nline_runs - 1];
		uint64		gap = run->row - last->row;

		/* the same COPY going on line after line, or rows of no line */
		if (last->relname == run->relname &&
			(last->line == 0 ? run->line == 0 : run->line == last->line + gap))
			return true;
	}
	if (conn->nline_runs == conn->line_runs_cap)
	{
		int			cap = conn->line_runs_cap ? conn->line_runs_cap * 2 : 16;

		if (conn->line_runs_cap >= TCOPY_LINE_RUNS_MAX)
			return false;
		cap = Min(cap, TCOPY_LINE_RUNS_MAX);
		conn->line_runs = conn->line_runs == NULL ?
			MemoryContextAlloc(TopMemoryContext, cap * sizeof(TcopyLineRun)) :
			repalloc(conn->line_runs, cap * sizeof(TcopyLineRun));
		conn->line_runs_cap = cap;
	}
	conn->line_runs[conn->nline_runs++] = *run;
	return true;
}

/*
 * A batch of nrows rows of relname is about to be sent as the session's
 * rows after conn->rows_sent: add its runs (rows numbered from 0 in the
 * batch) to the session's map.  runs NULL: the batch's lines are not known.
 */
void
tcopy_lines_add_batch(TcopyConnection *conn, const char *relname,
					  const TcopyLineRun *runs, int nruns, uint64 nrows)
{
	const char *name;

	if (!conn->lines_complete || nrows == 0)
		return;
	if (runs == NULL || conn->lines_upto != conn->rows_sent)
	{
		conn->lines_complete = false;
		return;
	}
	name = tcopy_lines_relname(conn, relname);
	for (int i = 0; i < nruns; i++)
	{
		TcopyLineRun run = runs[i];

		run.row += conn->rows_sent + 1;
		run.relname = name;
		if (!tcopy_lines_append(conn, &run))
		{
			/* rows from here on have no line; those before keep theirs */
			conn->lines_upto = run.row - 1;
			conn->lines_complete = false;
			return;
		}
	}
	conn->lines_upto = conn->rows_sent + nrows;
}

/*
 * The COPY line of the session's row (1-based): true with *relname and
 * *line, false when it is not known or the row was not a COPY's.
 */
bool
tcopy_lines_find(const TcopyConnection *conn, uint64 row, const char **relname,
				 uint64 *line)
{
	int			lo = 0,
				hi = conn->nline_runs - 1;
	const TcopyLineRun *run;

	if (row == 0 || row > conn->lines_upto || conn->nline_runs == 0 ||
		row < conn->line_runs[0].row)
		return false;
	/* the last run starting at or before row */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo + 1) / 2;

		if (conn->line_runs[mid].row <= row)
			lo = mid;
		else
			hi = mid - 1;
	}
	run = &conn->line_runs[lo];
	if (run->line == 0)
		return false;
	*relname = run->relname;
	*line = run->line + (row - run->row);
	return true;
}
