/*
 * copy_file_map.c
 *		A parallel COPY's input file, mapped by its leader to find the row
 *		ends (docs/parallel.md, "Files").
 *
 * The leader of a COPY from a regular file does not read the file: it maps
 * it a window at a time, scans the window for row ends (copy_chunks.c),
 * and names each piece by its offset in the file, which the piece's worker
 * pread()s.  A window is mapped up to the file's size at that moment, so a
 * file that grows is read on as by read().  A file truncated under the
 * scan would kill the backend with SIGBUS on the first page past its new
 * end: while the COPY runs, SIGBUS's handler jumps out of the scan, which
 * then raises an error; the handler before is put back when the COPY's
 * memory goes, error or not, and a SIGBUS outside a scan does what it did.
 */
#include "postgres.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy_parallel.h"

#include "utils/memutils.h"

#include "tcopy/copy.h"

/* What the leader maps of a file at a time. */
#define FILE_MAP_BYTES (8 * 1024 * 1024)

struct TcopyFileMap
{
	CopyFromState src;
	char	   *map;			/* the window mapped, or NULL */
	size_t		len;
	bool		bus_set;		/* file_map_fault is SIGBUS's handler */
	pqsigfunc	bus_before;		/* the one to put back */
	MemoryContextCallback end;
};

/* Where the scan of a mapped file jumps if the file shrank under it. */
static sigjmp_buf *file_map_jmp = NULL;

static void
file_map_fault(SIGNAL_ARGS)
{
	if (file_map_jmp != NULL)
		siglongjmp(*file_map_jmp, 1);
	/* not ours: what SIGBUS does by default */
	pqsignal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

static void
file_map_unmap(TcopyFileMap *map)
{
	if (map->map != NULL)
		(void) munmap(map->map, map->len);
	map->map = NULL;
}

/* The map's end (a MemoryContextCallback): unmapped, SIGBUS's handler back. */
static void
file_map_end(void *arg)
{
	TcopyFileMap *map = arg;

	file_map_unmap(map);
	if (map->bus_set)
		pqsignal(SIGBUS, map->bus_before);
	map->bus_set = false;
}

bool
tcopy_file_mappable(CopyFromState src, size_t read_so_far)
{
	struct stat st;
	void	   *probe;

	if (src->copy_src != COPY_FILE || src->is_program || src->opts.binary ||
		src->filename == NULL || strlen(src->filename) >= MAXPGPATH ||
		src->raw_buf_index < src->raw_buf_len ||
		src->bytes_processed != read_so_far ||
		fstat(fileno(src->copy_file), &st) != 0 || !S_ISREG(st.st_mode) ||
		(uint64) st.st_size < (uint64) read_so_far || st.st_size == 0)
		return false;
	probe = mmap(NULL, 1, PROT_READ, MAP_SHARED, fileno(src->copy_file), 0);
	if (probe == MAP_FAILED)
		return false;
	(void) munmap(probe, 1);
	return true;
}

TcopyFileMap *
tcopy_file_map_begin(CopyFromState src)
{
	TcopyFileMap *map = palloc0(sizeof(TcopyFileMap));

	map->src = src;
	map->end.func = file_map_end;
	map->end.arg = map;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &map->end);
	map->bus_before = pqsignal(SIGBUS, file_map_fault);
	map->bus_set = true;
	return map;
}

bool
tcopy_file_map_window(TcopyFileMap *map, uint64 pos, char **buf, size_t *len)
{
	uint64		start = pos - pos % (uint64) sysconf(_SC_PAGESIZE);
	uint64		end;
	struct stat st;
	void	   *window;

	file_map_unmap(map);
	if (fstat(fileno(map->src->copy_file), &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", map->src->filename)));
	if ((uint64) st.st_size <= pos)
		return false;
	end = Min((uint64) st.st_size, pos + FILE_MAP_BYTES);
	window = mmap(NULL, end - start, PROT_READ, MAP_SHARED, fileno(map->src->copy_file),
				  (off_t) start);
	if (window == MAP_FAILED)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not map COPY file \"%s\": %m", map->src->filename)));
	map->map = window;
	map->len = end - start;
	*buf = (char *) window + (pos - start);
	*len = end - pos;
	return true;
}

size_t
tcopy_file_map_scan(TcopyFileMap *map, TcopyChunkScan *scan, const char *buf, size_t len,
					size_t min, bool *cut)
{
	sigjmp_buf	jmp;
	size_t		n;

	if (sigsetjmp(jmp, 0) != 0)
	{
		sigset_t	bus;

		file_map_jmp = NULL;
		sigemptyset(&bus);
		sigaddset(&bus, SIGBUS);
		sigprocmask(SIG_UNBLOCK, &bus, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("COPY file \"%s\" was truncated while it was read",
						map->src->filename)));
	}
	file_map_jmp = &jmp;
	n = tcopy_chunk_scan(scan, buf, len, min, cut);
	file_map_jmp = NULL;
	return n;
}

void
tcopy_file_map_end(TcopyFileMap *map)
{
	file_map_end(map);
}
