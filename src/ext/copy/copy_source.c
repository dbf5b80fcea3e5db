/*
 * copy_source.c
 *		A COPY's input as bytes, for the leader of a parallel COPY
 *		(copy_parallel.c), which cuts it into chunks instead of parsing it.
 *
 * BeginCopyFrom opens the source (a server file, a program's pipe, or the
 * client's CopyData messages, after sending CopyInResponse) and, in binary
 * format, reads and checks the header; its reader functions are static, so
 * the bytes after that are read here as Postgres' CopyGetData reads them,
 * with its messages.  Bytes BeginCopyFrom buffered already come first.
 *
 * When the leader decides, having read the start of the input, that the
 * COPY is to be parsed serially after all (a small input, "\r" line ends,
 * no worker launched), the bytes it read are replayed to a second
 * CopyFromState that reads through a callback (tcopy_source_replay_cb):
 * first those bytes, then the rest of the source.
 */

#include "postgres.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "commands/progress.h"
#include "libpq/libpq.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"

#include "tcopy/copy.h"

/*
 * Take the client's next message into src->fe_msgbuf, as CopyGetData does:
 * true for CopyData, false for CopyDone (the input's end), an ERROR for
 * CopyFail or another message.  Flush and Sync are skipped.  nowait: take
 * a message only if its first byte is there, false otherwise (*waits set).
 * Cancel is held while a message is part read, which would break the
 * protocol.
 */
static bool
source_take_message(CopyFromState src, bool nowait, bool *waits)
{
	for (;;)
	{
		int			mtype;
		int			maxmsglen;

		HOLD_CANCEL_INTERRUPTS();
		pq_startmsgread();
		if (nowait)
		{
			unsigned char c;
			int			r = pq_getbyte_if_available(&c);

			if (r == 0)
			{
				pq_endmsgread();
				RESUME_CANCEL_INTERRUPTS();
				*waits = true;
				return false;
			}
			mtype = r < 0 ? EOF : c;
		}
		else
			mtype = pq_getbyte();
		if (mtype == EOF)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("unexpected EOF on client connection with an open transaction")));
		switch (mtype)
		{
			case 'd':			/* CopyData */
				maxmsglen = PQ_LARGE_MESSAGE_LIMIT;
				break;
			case 'c':			/* CopyDone */
			case 'f':			/* CopyFail */
			case 'H':			/* Flush */
			case 'S':			/* Sync */
				maxmsglen = PQ_SMALL_MESSAGE_LIMIT;
				break;
			default:
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("unexpected message type 0x%02X during COPY from stdin",
								mtype)));
				maxmsglen = 0;	/* keep compiler quiet */
				break;
		}
		if (pq_getmessage(src->fe_msgbuf, maxmsglen))
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("unexpected EOF on client connection with an open transaction")));
		RESUME_CANCEL_INTERRUPTS();
		switch (mtype)
		{
			case 'd':
				return true;
			case 'c':
				src->raw_reached_eof = true;
				return false;
			case 'f':
				ereport(ERROR,
						(errcode(ERRCODE_QUERY_CANCELED),
						 errmsg("COPY from stdin failed: %s",
								pq_getmsgstring(src->fe_msgbuf))));
				break;
			default:
				/* Flush, Sync: libpq may send them without noticing the COPY */
				break;
		}
	}
}

/* What CopyGetData does for COPY_FRONTEND: bytes of CopyData messages. */
static int
source_read_frontend(CopyFromState src, char *buf, int maxread)
{
	StringInfo	msg = src->fe_msgbuf;
	int			avail;

	while (msg->cursor >= msg->len)
	{
		if (src->raw_reached_eof || !source_take_message(src, false, NULL))
			return 0;
	}
	avail = Min(msg->len - msg->cursor, maxread);
	pq_copymsgbytes(msg, buf, avail);
	return avail;
}

/* The bytes a stdio stream has read ahead and not handed out yet. */
static size_t
source_stdio_buffered(FILE *file)
{
#ifdef __GLIBC__
	return file->_IO_read_end - file->_IO_read_ptr;
#else
#error "copy_source.c needs the bytes a FILE buffered (glibc's _IO_read_ptr)"
#endif
}

/*
 * Read up to maxread bytes of src's input into buf: at least one, or 0 at
 * its end.  src->bytes_processed counts them; the caller reports progress.
 */
int
tcopy_source_read(CopyFromState src, char *buf, int maxread)
{
	int			nread;

	/* what BeginCopyFrom read past a binary header */
	if (src->raw_buf_index < src->raw_buf_len)
	{
		nread = Min(maxread, src->raw_buf_len - src->raw_buf_index);
		memcpy(buf, src->raw_buf + src->raw_buf_index, nread);
		src->raw_buf_index += nread;
		return nread;			/* counted when BeginCopyFrom read them */
	}
	if (src->copy_src == COPY_FRONTEND)
		nread = source_read_frontend(src, buf, maxread);
	else
	{
		size_t		buffered;

		Assert(src->copy_src == COPY_FILE);
		if (src->raw_reached_eof)
			return 0;

		/*
		 * read(), not fread(): what the file or pipe has now, so that a
		 * program that writes slowly is loaded as it writes; but first what
		 * the stream buffered (BeginCopyFrom's fread() of a binary header
		 * from a pipe that gave it less than it asked for).
		 */
		buffered = source_stdio_buffered(src->copy_file);
		if (buffered > 0)
			nread = fread(buf, 1, Min((size_t) maxread, buffered), src->copy_file);
		else
			do
			{
				CHECK_FOR_INTERRUPTS();
				nread = read(fileno(src->copy_file), buf, maxread);
			} while (nread < 0 && errno == EINTR);
		if (nread < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read from COPY file: %m")));
		if (nread == 0)
			src->raw_reached_eof = true;
	}
	src->bytes_processed += nread;
	return nread;
}

/*
 * Whether tcopy_source_read would return at once: bytes buffered, a file or
 * pipe with something to read (or its end), a client's message come (which
 * is then taken).  When not, tcopy_source_socket is what to wait on.
 */
bool
tcopy_source_ready(CopyFromState src)
{
	struct pollfd pfd;
	bool		waits = false;

	if (src->raw_buf_index < src->raw_buf_len || src->raw_reached_eof)
		return true;
	if (src->copy_src == COPY_FRONTEND)
	{
		if (src->fe_msgbuf->cursor < src->fe_msgbuf->len)
			return true;
		(void) source_take_message(src, true, &waits);
		return !waits;
	}
	if (source_stdio_buffered(src->copy_file) > 0)
		return true;
	pfd.fd = fileno(src->copy_file);
	pfd.events = POLLIN;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) != 0;	/* an error: let read() report it */
}

/* The socket or descriptor that becomes readable when src has more input. */
pgsocket
tcopy_source_socket(CopyFromState src)
{
	return src->copy_src == COPY_FRONTEND ? MyProcPort->sock : fileno(src->copy_file);
}

/*
 * Read the client's data to its CopyDone after the end-of-data marker "\.",
 * as Postgres' reader does; a file or a program is left unread.
 */
void
tcopy_source_drain(CopyFromState src)
{
	char		buf[8192];

	if (src->copy_src != COPY_FRONTEND)
		return;
	while (tcopy_source_read(src, buf, sizeof(buf)) > 0)
		CHECK_FOR_INTERRUPTS();
}

/* The replay of tcopy_source_replay: the bytes read, then the source. */
static struct
{
	CopyFromState src;
	const char *prefix;
	size_t		prefix_len;
	size_t		prefix_pos;
	const char *unread;			/* given back, read before the rest */
	size_t		unread_len;
	bool		marker_scan;	/* text from a client: stop after "\." */
	TcopyChunkScan scan;
	bool		ended;			/* at the "\." row's end */
} replay;

static int
tcopy_source_replay_cb(void *outbuf, int minread, int maxread)
{
	char	   *out = outbuf;
	int			total = 0;

	/* bytes given back were served and scanned for "\." before */
	if (replay.unread_len > 0)
	{
		total = Min((size_t) maxread, replay.unread_len);
		memcpy(out, replay.unread, total);
		replay.unread += total;
		replay.unread_len -= total;
		return total;
	}
	while (total < minread && total < maxread && !replay.ended)
	{
		int			n;
		bool		cut;

		if (replay.prefix_pos < replay.prefix_len)
		{
			n = Min((size_t) (maxread - total), replay.prefix_len - replay.prefix_pos);
			memcpy(out + total, replay.prefix + replay.prefix_pos, n);
			replay.prefix_pos += n;
		}
		else
		{
			n = tcopy_source_read(replay.src, out + total, maxread - total);
			if (n == 0)
				break;
		}
		/* as Postgres' reader of the client's data, nothing after "\." */
		if (replay.marker_scan)
		{
			n = tcopy_chunk_scan(&replay.scan, out + total, n, SIZE_MAX, &cut);
			replay.ended = cut;
		}
		total += n;
	}
	return total;
}

/*
 * Give data (len bytes the replay served) back, to be served again first:
 * tcopy's reader (copy_reader.c) leaves the rest of a COPY to Postgres'
 * reader so.  data must stay until it is read.
 */
void
tcopy_source_unread(const char *data, size_t len)
{
	Assert(replay.unread_len == 0);
	replay.unread = data;
	replay.unread_len = len;
}

/*
 * A CopyFromState that reads prefix (len bytes: what the leader read of
 * src, after a binary header of its own) and then the rest of src, for a
 * serial COPY after all.  BeginCopyFrom starts pg_stat_progress_copy again:
 * it keeps src's type and total.
 */
CopyFromState
tcopy_source_replay(ParseState *pstate, Relation rel, CopyFromState src,
					List *attlist, List *options, const char *prefix, size_t len)
{
	CopyFromState cstate;
	const int	cols[] = {PROGRESS_COPY_TYPE, PROGRESS_COPY_BYTES_TOTAL};
	int64		vals[2] = {0, 0};
	struct stat st;

	replay.src = src;
	replay.prefix = prefix;
	replay.prefix_len = len;
	replay.prefix_pos = 0;
	replay.unread_len = 0;
	replay.ended = false;
	replay.marker_scan = src->copy_src == COPY_FRONTEND && !src->opts.binary &&
		!src->opts.csv_mode;
	tcopy_chunk_scan_init(&replay.scan, 't', '\0', '\0', false);
	replay.scan.stop_at_marker = true;
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, tcopy_source_replay_cb,
						   attlist, options);
	vals[0] = src->is_program ? PROGRESS_COPY_TYPE_PROGRAM :
		src->filename != NULL ? PROGRESS_COPY_TYPE_FILE : PROGRESS_COPY_TYPE_PIPE;
	if (vals[0] == PROGRESS_COPY_TYPE_FILE && fstat(fileno(src->copy_file), &st) == 0)
		vals[1] = st.st_size;
	pgstat_progress_update_multi_param(2, cols, vals);
	return cstate;
}
