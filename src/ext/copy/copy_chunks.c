/*
 * copy_chunks.c
 *		Where a parallel COPY's input may be cut into chunks: the ends of its
 *		rows, found as Postgres' COPY reader finds them, and the lines it
 *		counts up to there.
 *
 * The leader (copy_parallel.c) scans the raw input as it reads it, and
 * cuts a chunk at the first row end past the chunk size.  A worker's
 * reader starts each chunk with cur_lineno set to the lines before it, so
 * the count must be the reader's own (CopyReadLineText, NextCopyFrom):
 *
 * - text: a row ends at a newline that no backslash escapes (a backslash
 *   quotes the next byte, a newline too); one line a row;
 * - csv: a row ends at a newline outside quotes, the quote state kept with
 *   the reader's own rules (the escape counts inside quotes only, before a
 *   quote or itself); one line a row, and one more for each end-of-line
 *   byte inside quotes ("\n", or "\r" when lines end in "\r\n"; "\r" in
 *   the first row, before the reader knows how lines end);
 * - binary: a row is a field count and its fields, each a length and that
 *   many bytes; one line a row.  After the trailer (a count of -1), or a
 *   count or length the reader refuses, nothing is cut any more: the rest
 *   goes to the chunk that will report it.
 *
 * Reading the client's data, Postgres' reader ends the input at a text
 * row holding "\." anywhere (it reads the rest of the client's data and
 * drops it; from a file or a program it goes on after a "\." that ends no
 * line): with stop_at_marker, such a row is cut after, and marker set.
 *
 * Stretches of whole 64-byte blocks without a quote (csv) or backslash
 * (text) are counted by their newlines at once (skip_plain_blocks).
 *
 * Lines ending in "\r" alone are not scanned (the reader looks past a
 * "\r" for a "\n", so a chunk cannot end there): such a COPY is serial.
 * Text and csv are scanned as raw bytes, before any encoding conversion,
 * which is right for encodings whose multibyte characters never hold an
 * ASCII byte; the others (PG_ENCODING_IS_CLIENT_ONLY) are serial too.
 * Rows that the reader refuses cut where the scan says; the first error
 * comes from the first chunk holding one, with the lines before it right.
 */

#include "postgres.h"

#include "port/pg_bswap.h"

#include "copy_parallel.h"
#include "copy_simd.h"

/*
 * From pos, whole 64-byte blocks that hold no byte of set (a quote, a
 * backslash) and end before min: outside quotes and escapes, each of their
 * newlines ends a row, so they are counted by the block (copy_simd.c's
 * masks) and skipped.  Returns where the row-by-row scan goes on.
 */
static size_t
skip_plain_blocks(TcopyChunkScan *scan, const char *buf, size_t pos, size_t len,
				  size_t min, char special)
{
	size_t		end = Min(len, min > 0 ? min - 1 : 0);
	uint64		lines = 0;

	if (end < pos + TCOPY_SIMD_BLOCK)
		return pos;
	pos += TCOPY_SIMD_BLOCK *
		tcopy_simd_plain_blocks(buf + pos, (end - pos) / TCOPY_SIMD_BLOCK, special, &lines);
	scan->lines += lines;
	return pos;
}

void
tcopy_chunk_scan_init(TcopyChunkScan *scan, char format, char quote, char escape,
					  bool crnl)
{
	memset(scan, 0, sizeof(*scan));
	scan->format = format;
	scan->quote = quote;
	/* as the reader: an escape that is the quote is no escape */
	scan->escape = escape == quote ? '\0' : escape;
	scan->crnl = crnl;
	scan->bin_need = 2;
}

/* Whether the newline at buf[nl] ends a text row: no odd run of backslashes before it. */
static inline bool
text_newline_ends_row(TcopyChunkScan *scan, const char *buf, size_t start, size_t nl)
{
	size_t		run = 0;

	while (nl - run > start && buf[nl - run - 1] == '\\')
		run++;
	if (nl - run == start && scan->backslash)
		run++;					/* a backslash left by the previous call */
	return run % 2 == 0;
}

/*
 * Whether buf[from..to) holds the end-of-data marker: a backslash no other
 * quotes, then a period.  At the call's first byte a backslash left by the
 * previous call may quote it; one at to - 1 is left to the next segment.
 */
static bool
text_has_marker(TcopyChunkScan *scan, const char *buf, size_t from, size_t to)
{
	const char *b;

	if (from == 0 && scan->backslash && to > 0)
	{
		if (buf[0] == '.')
			return true;
		from = 1;
	}
	while (from < to && (b = memchr(buf + from, '\\', to - from)) != NULL)
	{
		size_t		i = b - buf;

		if (i + 1 < to && buf[i + 1] == '.')
			return true;
		from = i + 2;
	}
	return false;
}

/* The text scan; see tcopy_chunk_scan. */
static size_t
scan_text(TcopyChunkScan *scan, const char *buf, size_t len, size_t min, bool *cut)
{
	size_t		pos = 0;

	while (pos < len)
	{
		const char *nl;
		size_t		at;

		if (!scan->backslash)
			pos = skip_plain_blocks(scan, buf, pos, len, min, '\\');
		nl = memchr(buf + pos, '\n', len - pos);
		at = nl ? (size_t) (nl - buf) : len;
		if (scan->stop_at_marker && !scan->marker && text_has_marker(scan, buf, pos, at))
			scan->marker = true;
		if (nl == NULL)
		{
			size_t		run = 0;

			/* a backslash at the end quotes the first byte of the next call */
			while (run < len - pos && buf[len - run - 1] == '\\')
				run++;
			scan->backslash = run == len - pos ? (scan->backslash ^ (run % 2 == 1)) : run % 2 == 1;
			return len;
		}
		if (text_newline_ends_row(scan, buf, pos, at))
		{
			scan->lines++;
			scan->backslash = false;
			/* the marker's row is the input's last */
			if (at + 1 >= min || scan->marker)
			{
				*cut = true;
				return at + 1;
			}
		}
		else
			scan->backslash = false;	/* the escaped newline took it */
		pos = at + 1;
	}
	return len;
}

/*
 * The csv scan; see tcopy_chunk_scan.  A stretch up to a newline with no
 * quote, outside quotes, is one row whatever else it holds; a stretch with
 * quotes goes byte by byte, as CopyReadLineText goes.
 */
static size_t
scan_csv(TcopyChunkScan *scan, const char *buf, size_t len, size_t min, bool *cut)
{
	size_t		pos = 0;

	while (pos < len)
	{
		const char *nl;
		size_t		end;
		size_t		i;

		if (!scan->in_quote && scan->past_first_row)
			pos = skip_plain_blocks(scan, buf, pos, len, min, scan->quote);
		nl = memchr(buf + pos, '\n', len - pos);
		end = nl ? (size_t) (nl - buf) : len;

		/* outside quotes, a stretch with no quote changes no state */
		if (scan->in_quote || memchr(buf + pos, scan->quote, end - pos) != NULL)
		{
			for (i = pos; i < end; i++)
			{
				char		c = buf[i];
				/* the reader compares with "\r" until it knows the line ends */
				char		eol_count = scan->crnl || !scan->past_first_row ? '\r' : '\n';

				if (scan->in_quote && c == scan->escape)
					scan->last_was_esc = !scan->last_was_esc;
				if (c == scan->quote && !scan->last_was_esc)
					scan->in_quote = !scan->in_quote;
				if (c != scan->escape)
					scan->last_was_esc = false;
				if (scan->in_quote && c == eol_count)
					scan->lines++;
			}
		}
		if (nl == NULL)
			return len;
		/* the newline itself */
		scan->last_was_esc = false;
		pos = end + 1;
		if (scan->in_quote)
		{
			if (!scan->crnl && scan->past_first_row)
				scan->lines++;
			continue;
		}
		scan->lines++;
		scan->past_first_row = true;
		if (pos >= min)
		{
			*cut = true;
			return pos;
		}
	}
	return len;
}

/* The binary scan; see tcopy_chunk_scan. */
static size_t
scan_binary(TcopyChunkScan *scan, const char *buf, size_t len, size_t min, bool *cut)
{
	size_t		pos = 0;

	if (scan->bin_done)
		return len;
	while (pos < len)
	{
		size_t		n;

		if (scan->bin_skip > 0)
		{
			n = Min((uint64) (len - pos), scan->bin_skip);
			scan->bin_skip -= n;
			pos += n;
			if (scan->bin_skip > 0)
				return len;
		}
		else
		{
			/* a count (2 bytes) or a length (4), perhaps over two calls */
			n = Min(len - pos, (size_t) (scan->bin_need - scan->bin_have));
			memcpy(scan->bin_int + scan->bin_have, buf + pos, n);
			scan->bin_have += n;
			pos += n;
			if (scan->bin_have < scan->bin_need)
				return len;
			scan->bin_have = 0;
			if (scan->bin_need == 2)
			{
				int16		count;

				memcpy(&count, scan->bin_int, 2);
				count = (int16) pg_ntoh16(count);
				if (count < 0)
				{
					/* the trailer, or a count the reader refuses */
					scan->bin_done = true;
					return len;
				}
				scan->bin_fields = count;
			}
			else
			{
				int32		flen;

				memcpy(&flen, scan->bin_int, 4);
				flen = (int32) pg_ntoh32(flen);
				if (flen < -1)
				{
					scan->bin_done = true;
					return len;
				}
				scan->bin_fields--;
				if (flen > 0)
				{
					scan->bin_skip = flen;
					scan->bin_need = 4;
					continue;
				}
			}
		}
		if (scan->bin_fields > 0)
		{
			scan->bin_need = 4;
			continue;
		}
		/* the row's last field, or a row of none */
		scan->bin_need = 2;
		scan->lines++;
		if (pos >= min)
		{
			*cut = true;
			return pos;
		}
	}
	return len;
}

/*
 * Scan buf[0..len), which follows what earlier calls scanned: stop just
 * past the first row end at an offset of at least min and set *cut, or
 * scan it all.  Returns the bytes scanned; scan->lines has counted the
 * lines in them.
 */
size_t
tcopy_chunk_scan(TcopyChunkScan *scan, const char *buf, size_t len, size_t min, bool *cut)
{
	*cut = false;
	switch (scan->format)
	{
		case 't':
			return scan_text(scan, buf, len, min, cut);
		case 'c':
			return scan_csv(scan, buf, len, min, cut);
		default:
			return scan_binary(scan, buf, len, min, cut);
	}
}

EolType
tcopy_first_line_end(CopyFromState src, const char *buf, size_t len)
{
	bool		csv = src->opts.csv_mode;
	char		quote = csv ? src->opts.quote[0] : '\0';
	char		escape = csv ? src->opts.escape[0] : '\0';
	bool		in_quote = false;
	bool		last_was_esc = false;
	size_t		i;

	if (escape == quote)
		escape = '\0';
	for (i = 0; i < len; i++)
	{
		char		c = buf[i];

		if (csv)
		{
			if (in_quote && c == escape)
				last_was_esc = !last_was_esc;
			if (c == quote && !last_was_esc)
				in_quote = !in_quote;
			if (c != escape)
				last_was_esc = false;
			if (in_quote)
				continue;
		}
		else if (c == '\\')
		{
			i++;				/* a backslash quotes the next byte */
			continue;
		}
		if (c == '\n')
			return EOL_NL;
		if (c == '\r')
			return i + 1 == len ? EOL_UNKNOWN : buf[i + 1] == '\n' ? EOL_CRNL : EOL_CR;
	}
	return EOL_UNKNOWN;
}
