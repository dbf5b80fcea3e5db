/*
 * copy_reader.c
 *		tcopy's COPY reader for FORMAT text and csv: what
 *		NextCopyFromRawFields returns (a row's fields, de-escaped and
 *		NUL-terminated, NULL for a null), found with vector instructions,
 *		with Postgres' reader as the fallback for what it does not handle.
 *
 * The reader reads the COPY's input through the CopyFromState's own data
 * source callback (a parallel COPY's worker reads its chunks so, and a
 * serial COPY reads through copy_source.c's replay), into a buffer of its
 * own, checked for the database encoding as it comes in: whole blocks of
 * ASCII by copy_simd.c, the rest by Postgres' pg_encoding_verifymbstr.  A
 * row is then read in two passes, as Postgres reads it:
 *
 * 1. the line: the positions of its fields and where it ends, from the
 *    bit masks of its special bytes (the delimiter, "\n", "\r", and the
 *    backslash in text, the quote and the escape in csv), with the line
 *    reader's rules (CopyReadLineText): a backslash takes the next byte as
 *    it is; a quote opens and closes a quoted stretch, in which the escape
 *    takes a quote or an escape after it; a quoted "\n" or "\r" counts a
 *    line as Postgres counts it;
 * 2. the fields, as CopyReadAttributesText and CopyReadAttributesCSV make
 *    them: the null string compared before any de-escaping, a field
 *    without a backslash or quote copied as it is, one with them
 *    de-escaped by the same rules (text's octal and hex escapes checked
 *    for the encoding, with Postgres' error).
 *
 * Whatever is not that common case is declined: the bytes from the start
 * of the row go back to the data source (the unread callback), the
 * CopyFromState is given the line count and line ends the reader had, and
 * from there Postgres' own reader reads (to the end of the COPY, or of a
 * worker's chunk).  A row is declined when it holds the end-of-data marker
 * "\.", a "\r" that is not part of a "\r\n" line end, a "\n" in a COPY
 * whose lines end in "\r\n", a csv quote left open at the input's end, a
 * text backslash at the input's end, a byte the encoding refuses, more
 * than TCOPY_READER_MAX_LINE bytes; and so is a text header line with a
 * backslash.  Postgres' reader then reads the same bytes from the same
 * state, so that what it does with them (the row, the end of the input,
 * or its error on its line) is what Postgres would have done: the reader
 * never words a reader's error itself.  Errors while the fields are
 * converted carry the CONTEXT Postgres gives (tcopy_reader_error_callback
 * shows the row's line, which the reader keeps in its buffer).
 *
 * Encodings that need conversion, binary, a text delimiter that is a hex
 * digit (A-F: "\xA" would take it), and tcopy.fast_reader off leave
 * the whole COPY to Postgres' reader (tcopy_reader_begin says why, at
 * DEBUG1).  bench/reader.sh measures it; test/ext/210_reader_diff.pl is
 * the differential fuzzer that holds it to Postgres' answers.
 */
#include "postgres.h"

#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/progress.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "tcopy/copy.h"
#include "copy_simd.h"

/* settings (registered in tcopy.c) */
bool		tcopy_fast_reader = true;	/* tcopy.fast_reader */

#define READER_START_BYTES	(1024 * 1024)
/* a longer row goes to Postgres' reader (whose limit is 1 GB) */
#define TCOPY_READER_MAX_LINE	(256 * 1024 * 1024)

/* One field of the line read last, as pass 1 found it. */
typedef struct FieldSpan
{
	uint32		start;			/* from the line's start */
	uint32		len;
	bool		special;		/* text: a backslash; csv: a quote */
} FieldSpan;

typedef enum LineScan
{
	LINE_ROW,					/* a whole line */
	LINE_NEED,					/* its end is past the checked bytes */
	LINE_DECLINE,				/* Postgres' reader is to read it */
	LINE_END					/* no more input */
} LineScan;

/* What pass 1 found. */
typedef struct LineFound
{
	int			nfields;
	size_t		line_len;		/* without its end of line */
	size_t		consumed;		/* with it */
	uint64		quoted_lines;	/* csv: line ends in quotes Postgres counts */
	const char *why;			/* LINE_DECLINE */
} LineFound;

struct TcopyReader
{
	MemoryContext mcxt;			/* the COPY's, which holds the reader */
	CopyFromState cstate;
	TcopyReaderUnread unread;
	TcopySimdMaskFn mask;
	TcopySimdSet set;
	bool		csv;
	char		delim;
	char		quote;			/* csv */
	char		escape;			/* csv; may be the quote */
	const char *null_print;
	int			null_len;
	int			encoding;
	int			max_char_len;

	char	   *buf;			/* cap bytes, and TCOPY_SIMD_BLOCK more */
	size_t		cap;
	size_t		pos;			/* the next row's start */
	size_t		len;			/* bytes read */
	size_t		verified;		/* bytes checked for the encoding */
	size_t		ascii_upto;		/* [pos, ascii_upto) is all ASCII */
	bool		eof;

	char	   *attr;			/* the fields, de-escaped: cap + 1 bytes */
	char	  **fields;
	uint32	   *lengths;		/* of the fields, without their NUL */
	FieldSpan  *spans;
	int			max_fields;

	EolType		eol;
	bool		declined;		/* Postgres' reader reads the rest */
	bool		line_valid;		/* the row returned last is at line_start */
	size_t		line_start;
	size_t		line_len;
	int			line_fields;	/* its fields' spans */
	bool		escaped_non_ascii;	/* a text escape made a byte above 0x7f */
};

static void reader_alloc(TcopyReader *r, size_t cap);

/*
 * A reader for cstate's rows, or NULL when Postgres' reader is to read the
 * whole COPY (why at DEBUG1).  cstate must read through a data source
 * callback; unread gives bytes back to it.
 */
TcopyReader *
tcopy_reader_begin(CopyFromState cstate, TcopyReaderUnread unread)
{
	TcopyReader *r;
	const char *why = NULL;
	const char *kernel;

	if (!tcopy_fast_reader)
		why = "tcopy.fast_reader is off";
	else if (cstate->opts.binary)
		why = "FORMAT binary";
	else if (cstate->copy_src != COPY_CALLBACK)
		why = "its input is not read through a callback";
	else if (cstate->need_transcoding)
		why = "its encoding needs conversion";
	else if (cstate->opts.delim == NULL || strlen(cstate->opts.delim) != 1)
		why = "its delimiter is not one byte";
	else if (cstate->opts.csv_mode &&
			 (strchr("\r\n", cstate->opts.quote[0]) != NULL ||
			  strchr("\r\n", cstate->opts.escape[0]) != NULL))
		why = "its quote or escape is a line end";
	else if (!cstate->opts.csv_mode && cstate->opts.delim[0] >= 'A' && cstate->opts.delim[0] <= 'F')
		why = "its delimiter is a hex digit, which a \\x escape takes";
	if (why != NULL)
	{
		ereport(DEBUG1,
				(errmsg_internal("tcopy: COPY %s read by PostgreSQL's reader: %s",
								 RelationGetRelationName(cstate->rel), why)));
		return NULL;
	}
	r = palloc0(sizeof(TcopyReader));
	r->mcxt = CurrentMemoryContext;
	r->cstate = cstate;
	r->unread = unread;
	r->mask = tcopy_simd_mask_fn(&kernel);
	r->csv = cstate->opts.csv_mode;
	r->delim = cstate->opts.delim[0];
	r->null_print = cstate->opts.null_print;
	r->null_len = cstate->opts.null_print_len;
	r->encoding = cstate->file_encoding;
	r->max_char_len = pg_encoding_max_length(r->encoding);
	r->set.c[0] = (uint8) r->delim;
	r->set.c[1] = '\n';
	r->set.c[2] = '\r';
	if (r->csv)
	{
		r->quote = cstate->opts.quote[0];
		r->escape = cstate->opts.escape[0];
		r->set.c[3] = (uint8) r->quote;
		r->set.c[4] = (uint8) r->escape;
	}
	else
	{
		r->set.c[3] = '\\';
		r->set.c[4] = '\\';
	}
	r->eol = cstate->eol_type;
	r->max_fields = 64;
	r->fields = palloc(sizeof(char *) * r->max_fields);
	r->lengths = palloc(sizeof(uint32) * r->max_fields);
	r->spans = palloc(sizeof(FieldSpan) * r->max_fields);
	reader_alloc(r, READER_START_BYTES);
	ereport(DEBUG1,
			(errmsg_internal("tcopy: COPY %s read by tcopy's reader (%s)",
							 RelationGetRelationName(cstate->rel), kernel)));
	return r;
}

/* A worker's next chunk: the reader reads again, from an empty buffer. */
void
tcopy_reader_chunk(TcopyReader *r)
{
	r->pos = r->len = r->verified = r->ascii_upto = 0;
	r->eof = false;
	r->declined = false;
	r->line_valid = false;
	r->eol = r->cstate->eol_type;
}

/*
 * buf and attr at cap bytes, keeping buf's data, in the reader's context
 * (rows are read in a per-row context that is reset under them)
 */
static void
reader_alloc(TcopyReader *r, size_t cap)
{
	if (r->buf == NULL)
		r->buf = MemoryContextAllocExtended(r->mcxt, cap + TCOPY_SIMD_BLOCK, MCXT_ALLOC_HUGE);
	else
		r->buf = repalloc_huge(r->buf, cap + TCOPY_SIMD_BLOCK);
	if (r->attr != NULL)
		pfree(r->attr);
	r->attr = MemoryContextAllocExtended(r->mcxt, cap + 1, MCXT_ALLOC_HUGE);
	r->cap = cap;
}

/* Check the new bytes for the encoding, as far as they are right. */
static void
reader_verify(TcopyReader *r)
{
	while (r->verified < r->len)
	{
		size_t		window;
		int			n;

		size_t		ascii = tcopy_simd_ascii_prefix(r->buf + r->verified,
													r->len - r->verified);

		/* the ASCII stretch from the row's start grows with the new bytes */
		if (r->ascii_upto == r->verified)
			r->ascii_upto += ascii;
		r->verified += ascii;
		if (r->verified == r->len)
			break;
		/* a stretch that is not ASCII: Postgres' verifier, a window at a time */
		window = Min(r->len - r->verified, 256);
		n = pg_encoding_verifymbstr(r->encoding, r->buf + r->verified, (int) window);
		if (n == 0)
			break;				/* a bad byte, or a character still to come */
		r->verified += n;
	}
}

/*
 * Read more of the input after the row that is being read (which moves to
 * the buffer's start).  false when the row cannot be read here: a byte the
 * encoding refuses, or a row longer than TCOPY_READER_MAX_LINE.
 */
static bool
reader_fill(TcopyReader *r, const char **why)
{
	CopyFromState cstate = r->cstate;
	int			n;

	if (r->verified < r->len &&
		(r->eof || r->len - r->verified >= (size_t) r->max_char_len))
	{
		*why = "an invalid byte sequence";
		return false;
	}
	Assert(!r->eof);
	if (r->pos > 0)
	{
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->verified -= r->pos;
		r->ascii_upto -= r->pos;
		r->pos = 0;
	}
	if (r->len == r->cap)
	{
		if (r->cap >= TCOPY_READER_MAX_LINE)
		{
			*why = "a row of more than 256 MB";
			return false;
		}
		reader_alloc(r, r->cap * 2);
	}
	n = cstate->data_source_cb(r->buf + r->len, 1, (int) Min(r->cap - r->len, (size_t) INT_MAX));
	if (n == 0)
		r->eof = true;
	r->len += n;
	/* the kernels read whole blocks: defined bytes after the data */
	memset(r->buf + r->len, 0, TCOPY_SIMD_BLOCK);
	cstate->bytes_processed += n;
	pgstat_progress_update_param(PROGRESS_COPY_BYTES_PROCESSED, cstate->bytes_processed);
	reader_verify(r);
	return true;
}

static pg_noinline void
reader_grow_fields(TcopyReader *r)
{
	r->max_fields *= 2;
	r->fields = repalloc(r->fields, sizeof(char *) * r->max_fields);
	r->lengths = repalloc(r->lengths, sizeof(uint32) * r->max_fields);
	r->spans = repalloc(r->spans, sizeof(FieldSpan) * r->max_fields);
}

static inline void
reader_add_span(TcopyReader *r, int nfields, size_t start, size_t len, bool special)
{
	if (unlikely(nfields >= r->max_fields))
		reader_grow_fields(r);
	r->spans[nfields].start = (uint32) start;
	r->spans[nfields].len = (uint32) len;
	r->spans[nfields].special = special;
}

/*
 * Pass 1: the fields and the end of the line at r->pos, over the bytes
 * checked for the encoding.  See the file comment.
 */
static LineScan
reader_scan_line(TcopyReader *r, LineFound *found)
{
	const char *base = r->buf + r->pos;
	const char *end = r->buf + r->verified;
	const char *blk = base;
	const char *fstart = base;
	const char *skip_to = base; /* a byte an escape took */
	const char *q;
	bool		special = false;
	bool		in_quote = false;
	bool		lookahead = false;	/* at the end for want of the next byte */
	char		quoted_nl = r->eol == EOL_NL ? '\n' : '\r';
	int			nf = 0;
	size_t		eol_len = 1;
	uint64		m;

	found->quoted_lines = 0;
	/* csv: "\." first on a line may be the end-of-data marker */
	if (r->csv && base < end && base[0] == '\\')
	{
		if (base + 1 >= end)
		{
			lookahead = true;
			goto data_end;
		}
		if (base[1] == '.')
			goto decline_marker;
	}
	m = r->mask(blk, &r->set);
	for (;;)
	{
		char		c;

		while (m == 0)
		{
			blk += TCOPY_SIMD_BLOCK;
			if (blk >= end)
				goto data_end;
			m = r->mask(blk, &r->set);
		}
		q = blk + pg_rightmost_one_pos64(m);
		m &= m - 1;
		if (q >= end)
			goto data_end;
		if (q < skip_to)
			continue;
		c = *q;
		if (in_quote)
		{
			if (c == r->escape && (q + 1 >= end || q[1] == r->escape || q[1] == r->quote))
			{
				if (q + 1 >= end)
				{
					lookahead = true;
					goto data_end;
				}
				skip_to = q + 2;	/* an escaped quote or escape */
			}
			else if (c == r->quote)
				in_quote = false;
			else if (c == quoted_nl)
				found->quoted_lines++;
			continue;
		}
		if (c == r->delim)
		{
			reader_add_span(r, nf++, fstart - base, q - fstart, special);
			fstart = q + 1;
			special = false;
			continue;
		}
		if (c == '\n')
		{
			if (r->eol == EOL_CRNL)
			{
				found->why = "a newline in a COPY whose lines end in \"\\r\\n\"";
				return LINE_DECLINE;
			}
			r->eol = EOL_NL;
			break;
		}
		if (c == '\r')
		{
			if (q + 1 >= end)
			{
				lookahead = true;
				goto data_end;
			}
			if (q[1] != '\n' || r->eol == EOL_NL)
			{
				found->why = "a carriage return that does not end a line";
				return LINE_DECLINE;
			}
			r->eol = EOL_CRNL;
			eol_len = 2;
			break;
		}
		if (r->csv)
		{
			if (c == r->quote)
			{
				in_quote = true;
				special = true;
			}
			/* an escape outside quotes is data */
			continue;
		}
		/* text: a backslash takes the next byte as it is */
		if (q + 1 >= end)
		{
			lookahead = true;
			goto data_end;
		}
		if (q[1] == '.')
			goto decline_marker;
		special = true;
		skip_to = q + 2;
	}
	/* the line ends at q */
	reader_add_span(r, nf++, fstart - base, q - fstart, special);
	found->nfields = nf;
	found->line_len = q - base;
	found->consumed = (q - base) + eol_len;
	return LINE_ROW;

data_end:
	if (!r->eof || r->verified < r->len)
		return LINE_NEED;
	/* the input's end ends the line, as a newline would */
	if (in_quote || lookahead)
	{
		found->why = in_quote ? "a quoted field open at the input's end" :
			"an escape or carriage return at the input's end";
		return LINE_DECLINE;
	}
	if (end == base)
		return LINE_END;
	reader_add_span(r, nf++, fstart - base, end - fstart, special);
	found->nfields = nf;
	found->line_len = end - base;
	found->consumed = end - base;
	return LINE_ROW;

decline_marker:
	found->why = "the end-of-data marker";
	return LINE_DECLINE;
}

/* The hex digit's value (GetDecimalFromHex). */
static inline int
hex_value(char hex)
{
	return isdigit((unsigned char) hex) ? hex - '0' : pg_tolower((unsigned char) hex) - 'a' + 10;
}

#define ISOCTAL(c) (((c) >= '0') && ((c) <= '7'))
#define OCTVALUE(c) ((c) - '0')

/* A text field with backslashes, de-escaped as CopyReadAttributesText does. */
static char *
unescape_text(const char *cur, const char *line_end, char *out, bool *saw_non_ascii)
{
	while (cur < line_end)
	{
		char		c = *cur++;

		if (c == '\\')
		{
			if (cur >= line_end)
				break;
			c = *cur++;
			switch (c)
			{
				case '0':
				case '1':
				case '2':
				case '3':
				case '4':
				case '5':
				case '6':
				case '7':
					{
						int			val = OCTVALUE(c);

						if (cur < line_end && ISOCTAL(*cur))
						{
							val = (val << 3) + OCTVALUE(*cur);
							cur++;
							if (cur < line_end && ISOCTAL(*cur))
							{
								val = (val << 3) + OCTVALUE(*cur);
								cur++;
							}
						}
						c = val & 0377;
						if (c == '\0' || IS_HIGHBIT_SET(c))
							*saw_non_ascii = true;
					}
					break;
				case 'x':
					if (cur < line_end && isxdigit((unsigned char) *cur))
					{
						int			val = hex_value(*cur++);

						if (cur < line_end && isxdigit((unsigned char) *cur))
							val = (val << 4) + hex_value(*cur++);
						c = val & 0xff;
						if (c == '\0' || IS_HIGHBIT_SET(c))
							*saw_non_ascii = true;
					}
					break;
				case 'b':
					c = '\b';
					break;
				case 'f':
					c = '\f';
					break;
				case 'n':
					c = '\n';
					break;
				case 'r':
					c = '\r';
					break;
				case 't':
					c = '\t';
					break;
				case 'v':
					c = '\v';
					break;
			}
		}
		*out++ = c;
	}
	return out;
}

/* A csv field with quotes, as CopyReadAttributesCSV makes it. */
static char *
unquote_csv(const TcopyReader *r, const char *cur, const char *line_end, char *out)
{
	bool		in_quote = false;

	while (cur < line_end)
	{
		char		c = *cur++;

		if (!in_quote)
		{
			if (c == r->quote)
				in_quote = true;
			else
				*out++ = c;
			continue;
		}
		if (c == r->escape && cur < line_end && (*cur == r->escape || *cur == r->quote))
		{
			*out++ = *cur++;
			continue;
		}
		if (c == r->quote)
			in_quote = false;
		else
			*out++ = c;
	}
	return out;
}

/*
 * Pass 2: the fields of the line at r->line_start into r->fields.  A field
 * without a backslash or quote stays where it is, its delimiter or line
 * end overwritten with its NUL (tcopy_reader_line_buf puts them back); the
 * others are de-escaped into r->attr.
 */
static void
reader_make_fields(TcopyReader *r, int nfields)
{
	char	   *line = r->buf + r->line_start;
	char	   *out = r->attr;

	r->escaped_non_ascii = false;
	for (int f = 0; f < nfields; f++)
	{
		const FieldSpan *span = &r->spans[f];
		char	   *raw = line + span->start;
		char	   *fld = out;

		/* the null string, compared before de-escaping (csv: unquoted only) */
		if (span->len == (uint32) r->null_len && !(r->csv && span->special) &&
			memcmp(raw, r->null_print, span->len) == 0)
		{
			r->fields[f] = NULL;
			r->lengths[f] = 0;
			continue;
		}
		if (!span->special)
		{
			raw[span->len] = '\0';
			r->fields[f] = raw;
			r->lengths[f] = span->len;
			continue;
		}
		if (r->csv)
			out = unquote_csv(r, raw, raw + span->len, out);
		else
		{
			bool		saw_non_ascii = false;

			out = unescape_text(raw, raw + span->len, out, &saw_non_ascii);
			if (saw_non_ascii)
			{
				pg_verifymbstr(fld, out - fld, false);
				r->escaped_non_ascii = true;
			}
		}
		r->fields[f] = fld;
		r->lengths[f] = out - fld;
		*out++ = '\0';
	}
}

/* HEADER MATCH: the header's fields against the COPY's columns, as Postgres checks them. */
static void
reader_match_header(TcopyReader *r, int nfields)
{
	CopyFromState cstate = r->cstate;
	TupleDesc	desc = RelationGetDescr(cstate->rel);
	ListCell   *cur;
	int			fldnum = 0;

	if (nfields != list_length(cstate->attnumlist))
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("wrong number of fields in header line: got %d, expected %d",
						nfields, list_length(cstate->attnumlist))));
	foreach(cur, cstate->attnumlist)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, lfirst_int(cur) - 1);
		char	   *colName = r->fields[fldnum++];

		if (colName == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("column name mismatch in header line field %d: got null value (\"%s\"), expected \"%s\"",
							fldnum, cstate->opts.null_print, NameStr(attr->attname))));
		if (namestrcmp(&attr->attname, colName) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("column name mismatch in header line field %d: got \"%s\", expected \"%s\"",
							fldnum, colName, NameStr(attr->attname))));
	}
}

/* Hand the rest to Postgres' reader, from the row at r->pos. */
static void
reader_decline(TcopyReader *r, const char *why)
{
	CopyFromState cstate = r->cstate;

	r->declined = true;
	r->line_valid = false;
	if (r->len > r->pos)
		r->unread(r->buf + r->pos, r->len - r->pos);
	r->pos = r->len;
	cstate->eol_type = r->eol;
	ereport(DEBUG1,
			(errmsg_internal("tcopy: COPY %s read by PostgreSQL's reader from line %llu: %s",
							 RelationGetRelationName(cstate->rel),
							 (unsigned long long) cstate->cur_lineno + 1, why)));
}

/*
 * The next row's fields, as NextCopyFromRawFields returns them (and with
 * cur_lineno counted as it counts): false at the input's end.
 */
bool
tcopy_reader_next(TcopyReader *r, char ***fields, int *nfields)
{
	CopyFromState cstate = r->cstate;

	r->line_valid = false;
	while (!r->declined)
	{
		LineFound	found;
		const char *why = NULL;
		EolType		eol_before = r->eol;

		/* past a stretch that is not ASCII: where does the next one end */
		if (r->ascii_upto < r->pos)
			r->ascii_upto = r->pos + tcopy_simd_ascii_prefix(r->buf + r->pos,
															 r->verified - r->pos);

		switch (reader_scan_line(r, &found))
		{
			case LINE_NEED:
				if (!reader_fill(r, &why))
					reader_decline(r, why);
				continue;
			case LINE_DECLINE:
				reader_decline(r, found.why);
				continue;
			case LINE_END:
				/* Postgres matches an empty input's header too, and refuses it */
				if (cstate->cur_lineno == 0 && cstate->opts.header_line == COPY_HEADER_MATCH)
				{
					reader_decline(r, "HEADER MATCH of an empty input");
					continue;
				}
				return false;
			case LINE_ROW:
				break;
		}
		if (cstate->cur_lineno == 0 && cstate->opts.header_line != COPY_HEADER_FALSE)
		{
			/* Postgres reads a skipped header's line only, a matched one's fields */
			if (cstate->opts.header_line == COPY_HEADER_MATCH)
			{
				for (int f = 0; f < found.nfields; f++)
					if (r->spans[f].special && !r->csv)
						goto decline_header;
				cstate->cur_lineno = 1 + found.quoted_lines;
				r->line_start = r->pos;
				r->line_len = found.line_len;
				r->line_fields = found.nfields;
				r->line_valid = true;
				reader_make_fields(r, found.nfields);
				reader_match_header(r, found.nfields);
				r->line_valid = false;
			}
			cstate->cur_lineno = 1 + found.quoted_lines;
			r->pos += found.consumed;
			continue;
		}
		cstate->cur_lineno += 1 + found.quoted_lines;
		r->line_start = r->pos;
		r->line_len = found.line_len;
		r->line_fields = found.nfields;
		r->line_valid = true;
		reader_make_fields(r, found.nfields);
		r->pos += found.consumed;
		*fields = r->fields;
		*nfields = found.nfields;
		return true;

decline_header:
		r->eol = eol_before;	/* as the line found it */
		reader_decline(r, "a backslash in the header line");
	}
	return NextCopyFromRawFields(cstate, fields, nfields);
}

/*
 * The lengths of the fields tcopy_reader_next returned last, and whether
 * its line is all ASCII; NULL when Postgres' reader read it.
 */
const uint32 *
tcopy_reader_lengths(TcopyReader *r, bool *ascii)
{
	*ascii = r->line_start + r->line_len <= r->ascii_upto && !r->escaped_non_ascii;
	return r->declined ? NULL : r->lengths;
}

/*
 * Make cstate->line_buf the row read last, for what reports it (the error
 * callback, reject_table): the reader keeps the row in its buffer only.
 */
void
tcopy_reader_line_buf(TcopyReader *r)
{
	CopyFromState cstate = r->cstate;

	if (r->declined || !r->line_valid)
		return;
	resetStringInfo(&cstate->line_buf);
	appendBinaryStringInfo(&cstate->line_buf, r->buf + r->line_start, (int) r->line_len);
	/* the NULs pass 2 wrote over the delimiters (one after each field but the last) */
	for (int f = 0; f + 1 < r->line_fields; f++)
	{
		const FieldSpan *span = &r->spans[f];

		cstate->line_buf.data[span->start + span->len] = r->delim;
	}
	cstate->line_buf_valid = true;
}

/*
 * The error context callback of a COPY read by r: CopyFromErrorCallback,
 * with the line of the row read last, or while a row is being read the
 * next line's number without its text, as Postgres reports them.
 */
void
tcopy_reader_error_callback(void *arg)
{
	TcopyReader *r = arg;
	CopyFromState cstate = r->cstate;
	uint64		lineno = cstate->cur_lineno;

	if (r->declined || cstate->cur_attname != NULL)
	{
		CopyFromErrorCallback(cstate);
		return;
	}
	if (r->line_valid)
		tcopy_reader_line_buf(r);
	else
	{
		cstate->line_buf_valid = false;
		cstate->cur_lineno++;
	}
	CopyFromErrorCallback(cstate);
	cstate->cur_lineno = lineno;
}
