/*
 * powerloss.c
 *		An LD_PRELOAD layer that records what a process does to the files
 *		under the directories it watches, so that the state a power loss
 *		would leave can be rebuilt from it (test/tools/powerloss_rebuild.pl),
 *		and that can stop the process dead at a chosen point: the power-loss
 *		test (test/ext/191_power_loss.pl) runs the tserver under it.
 *
 *		The model is the pessimistic one Postgres codes against (and
 *		RocksDB's own fault-injection tests use): a file's data is on disk
 *		as it was at its last fsync/fdatasync, a directory's entries as they
 *		were at the directory's last fsync; nothing else survives (the
 *		rebuild also makes ext4's data=ordered outcome, and everything
 *		written, for the self-check).  So the layer logs, in the order they
 *		happened, every change of a file's contents (write, pwrite, writev,
 *		pwritev, pwritev2, io_submit, fwrite, ftruncate, truncate, fallocate,
 *		O_TRUNC), of a directory's entries (a file created by open, creat,
 *		mkstemp, mkdir, mkdtemp, link, rename, renameat2, unlink, rmdir and
 *		their *at forms) and every sync, naming files by inode and entries
 *		by their directory's inode and name.  A write to a file open with
 *		O_DSYNC or O_SYNC, or with RWF_DSYNC, is a write and a sync of its
 *		bytes (for io_submit: when io_getevents reports it done).  These
 *		calls made through syscall() (libuv's pwritev, libraft's io_submit)
 *		are seen too; a call that would change a watched file in a way the
 *		layer cannot log (copy_file_range, sendfile into it, a rename that
 *		exchanges) aborts the process.  Reads are not logged.
 *
 *		Environment (nothing is logged without PL_LOG and PL_ROOT):
 *		  PL_LOG		the log file (appended to)
 *		  PL_ROOT		the directories whose trees are recorded, separated
 *						by ':' (each must exist, none under another; each
 *						stands for a directory made durable before)
 *		  PL_CUT_OP		lose power just before the Nth logged change
 *		  PL_CUT_SYNC	lose power just after the Nth sync returned
 *		  PL_CUT_CHUNK	lose power just before the first pwrite at a nonzero
 *						offset into a file opened by a path containing this
 *						(a replica's staged file between two chunks)
 *		  PL_CUT_FILE	a file holding one of "op N", "sync N" or "chunk S",
 *						read once it is there (looked for every 16 changes):
 *						a cut chosen after the process started
 *		  PL_KILL_ALSO	a file of process ids (a group's other members) sent
 *						SIGKILL at the same instant as the power goes
 *		"Losing power" logs a K record and sends the process SIGKILL: the
 *		changes logged before it are all that happened.
 *
 *		Every logged change holds one mutex from before the change until
 *		it is logged, so the log's order is the order of the changes; a
 *		sync is logged before it starts and runs outside the mutex (a write
 *		logged after it is not covered by it, which is the pessimistic
 *		reading of a write racing a sync).  Log records are a text line,
 *		and for W the bytes written after it:
 *		  C <parent-ino> <name> <ino> <f|d>	a file or directory made
 *		  W <ino> <offset> <length>			data written
 *		  T <ino> <size>					the file's size set
 *		  S <ino>							a file synced
 *		  Y <ino> <offset> <length>			bytes written through (O_DSYNC)
 *		  D <ino>							a directory synced
 *		  L <ino> <parent-ino> <name>		a new link to a file
 *		  R <parent> <name> <parent> <name>	a rename
 *		  U <parent-ino> <name>				an entry removed
 *		  K									the power lost
 *		The log begins with a B <root-ino> for each watched directory, in
 *		PL_ROOT's order, each followed by an E <parent-ino> <name> <ino>
 *		<f|d> for each entry its tree had already (durable: the test copies
 *		the tree before it starts the process, and the rebuild starts from
 *		that copy).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "powerloss.h"

#define MAX_FDS 65536

static int	(*real_open) (const char *, int, ...);
static int	(*real_openat) (int, const char *, int, ...);
static ssize_t (*real_write) (int, const void *, size_t);
static ssize_t (*real_pwrite) (int, const void *, size_t, off_t);
static int	(*real_fsync) (int);
static int	(*real_fdatasync) (int);
static int	(*real_ftruncate) (int, off_t);
static int	(*real_fallocate) (int, int, off_t, off_t);
static int	(*real_posix_fallocate) (int, off_t, off_t);
static int	(*real_close) (int);
static int	(*real_mkdirat) (int, const char *, mode_t);
static int	(*real_unlinkat) (int, const char *, int);
static int	(*real_linkat) (int, const char *, int, const char *, int);

#define MAX_ROOTS 8

bool		pl_active;
static int	log_fd = -1;
static char roots[MAX_ROOTS][PATH_MAX];
static size_t root_lens[MAX_ROOTS];
static int	nroots;
static unsigned long cut_op;
static unsigned long cut_sync;
static const char *cut_chunk;
static const char *cut_file;	/* until read */

pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long changes;	/* under lock */
static unsigned long syncs;		/* under lock */

/* the inode each tracked descriptor was opened on; 0: not tracked */
static _Atomic ino_t fd_ino[MAX_FDS];

/* opened by a path containing PL_CUT_CHUNK */
static _Atomic bool fd_chunked[MAX_FDS];

static void
resolve(void)
{
	real_open = dlsym(RTLD_NEXT, "open");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_write = dlsym(RTLD_NEXT, "write");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
	real_fallocate = dlsym(RTLD_NEXT, "fallocate");
	real_posix_fallocate = dlsym(RTLD_NEXT, "posix_fallocate");
	real_close = dlsym(RTLD_NEXT, "close");
	real_mkdirat = dlsym(RTLD_NEXT, "mkdirat");
	real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
	real_linkat = dlsym(RTLD_NEXT, "linkat");
}

/* Every wrapper: the real functions, even before the constructor ran. */
void
pl_ready(void)
{
	if (real_linkat == NULL)
		resolve();
}

/* The layer cannot do its job: say so and stop, never carry on unrecorded. */
void
pl_fail(const char *what)
{
	char		msg[512];
	int			n = snprintf(msg, sizeof(msg), "powerloss: %s: %s\n", what, strerror(errno));

	if (real_write)
		(void) !real_write(2, msg, n > 0 ? (size_t) n : 0);
	abort();
}

void
pl_log_bytes(const void *data, size_t len)
{
	const char *p = data;

	while (len > 0)
	{
		ssize_t		n = real_write(log_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			pl_fail("writing the log");
		p += n;
		len -= (size_t) n;
	}
}

void
pl_log_line(const char *fmt,...)
{
	char		line[2 * PATH_MAX + 128];
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t) n >= sizeof(line))
	{
		errno = ENAMETOOLONG;
		pl_fail("a log line");
	}
	pl_log_bytes(line, (size_t) n);
}

static void
pl_power_loss(void)
{
	const char *also = getenv("PL_KILL_ALSO");

	pl_log_line("K\n");
	if (also != NULL)
	{
		char		pids[512];
		int			fd = real_open(also, O_RDONLY | O_CLOEXEC);
		ssize_t		n = fd >= 0 ? read(fd, pids, sizeof(pids) - 1) : -1;
		char	   *p = pids;

		pids[n > 0 ? n : 0] = '\0';
		for (;;)
		{
			char	   *end;
			long		pid = strtol(p, &end, 10);

			if (end == p)
				break;
			if (pid > 0)
				kill((pid_t) pid, SIGKILL);
			p = end;
		}
	}
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

/* Call with lock held: PL_CUT_FILE's cut, if it is there now. */
static void
read_cut_file(void)
{
	static char chunk[300];
	char		text[300];
	int			fd = real_open(cut_file, O_RDONLY | O_CLOEXEC);
	ssize_t		n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

	if (fd >= 0)
		real_close(fd);
	if (n <= 0)
		return;
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	if (strncmp(text, "op ", 3) == 0)
		cut_op = strtoul(text + 3, NULL, 10);
	else if (strncmp(text, "sync ", 5) == 0)
		cut_sync = strtoul(text + 5, NULL, 10);
	else if (strncmp(text, "chunk ", 6) == 0)
	{
		snprintf(chunk, sizeof(chunk), "%s", text + 6);
		cut_chunk = chunk;
	}
	else
	{
		errno = EINVAL;
		pl_fail("PL_CUT_FILE");
	}
	cut_file = NULL;
}

/* Call with lock held, before a change: the power may go now. */
void
pl_before_change(void)
{
	if (cut_file && (changes & 15) == 0)
		read_cut_file();
	if (++changes == cut_op)
		pl_power_loss();
}

/* Call with lock held, once a sync returned: the power may go now. */
void
pl_after_sync(void)
{
	if (++syncs == cut_sync)
		pl_power_loss();
}

/* Log the entries under dir (inode ino) as they are: the durable start. */
static void
log_existing(const char *dir, ino_t ino)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		pl_fail("opendir");
	while ((de = readdir(d)) != NULL)
	{
		char		path[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0)
			pl_fail("lstat");
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			continue;
		pl_log_line("E %lu %s %lu %c\n", (unsigned long) ino, de->d_name,
				 (unsigned long) st.st_ino, S_ISDIR(st.st_mode) ? 'd' : 'f');
		if (S_ISDIR(st.st_mode))
			log_existing(path, st.st_ino);
	}
	closedir(d);
}

__attribute__((constructor))
static void
powerloss_init(void)
{
	const char *log_path = getenv("PL_LOG");
	const char *root_path = getenv("PL_ROOT");
	char		list[8 * PATH_MAX];
	char	   *save = NULL;

	resolve();
	if (log_path == NULL || root_path == NULL)
		return;
	snprintf(list, sizeof(list), "%s", root_path);
	for (char *one = strtok_r(list, ":", &save); one; one = strtok_r(NULL, ":", &save))
	{
		if (nroots == MAX_ROOTS)
		{
			errno = E2BIG;
			pl_fail("PL_ROOT");
		}
		if (realpath(one, roots[nroots]) == NULL)
			pl_fail("PL_ROOT");
		root_lens[nroots] = strlen(roots[nroots]);
		nroots++;
	}
	/* a tree under another would be logged twice */
	for (int i = 0; i < nroots; i++)
		for (int j = 0; j < nroots; j++)
			if (i != j && strncmp(roots[i], roots[j], root_lens[j]) == 0 &&
				(roots[i][root_lens[j]] == '/' || roots[i][root_lens[j]] == '\0'))
			{
				errno = EINVAL;
				pl_fail("PL_ROOT: a directory under another");
			}
	log_fd = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0)
		pl_fail("PL_LOG");
	for (int i = 0; i < nroots; i++)
	{
		struct stat st;

		if (stat(roots[i], &st) != 0)
			pl_fail("stat PL_ROOT");
		pl_log_line("B %lu\n", (unsigned long) st.st_ino);
		log_existing(roots[i], st.st_ino);
	}
	cut_op = getenv("PL_CUT_OP") ? strtoul(getenv("PL_CUT_OP"), NULL, 10) : 0;
	cut_sync = getenv("PL_CUT_SYNC") ? strtoul(getenv("PL_CUT_SYNC"), NULL, 10) : 0;
	cut_chunk = getenv("PL_CUT_CHUNK");
	cut_file = getenv("PL_CUT_FILE");
	pl_active = true;
}

/* Is the resolved path a watched directory or under one? */
bool
pl_under_root(const char *real)
{
	for (int i = 0; i < nroots; i++)
		if (strncmp(real, roots[i], root_lens[i]) == 0 &&
			(real[root_lens[i]] == '\0' || real[root_lens[i]] == '/'))
			return true;
	return false;
}

/*
 * The directory entry path names, for a path whose directory exists: its
 * directory's inode and its last component; false when it is not under
 * root (or cannot be resolved: then it is none of ours either).
 */
bool
pl_entry_of(int dirfd, const char *path, ino_t *parent, char *name, size_t size)
{
	char		dir[PATH_MAX];
	char		at[PATH_MAX + 32];
	char		real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	struct stat st;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
	/* relative to a directory descriptor: through its /proc link */
	if (dirfd != AT_FDCWD && path[0] != '/')
		snprintf(at, sizeof(at), "/proc/self/fd/%d/%s", dirfd, dir);
	else
		snprintf(at, sizeof(at), "%s", dir);
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
		strchr(base, ' ') != NULL || strchr(base, '\n') != NULL)
		return false;
	if (realpath(at, real) == NULL || !pl_under_root(real) || stat(real, &st) != 0)
		return false;
	*parent = st.st_ino;
	snprintf(name, size, "%s", base);
	return true;
}

/* The inode fd is tracked under, if it still is that file; else 0. */
ino_t
pl_tracked(int fd, bool *is_dir)
{
	ino_t		ino;
	struct stat st;

	pl_ready();
	if (!pl_active || fd < 0 || fd >= MAX_FDS)
		return 0;
	ino = atomic_load(&fd_ino[fd]);
	if (ino == 0)
		return 0;
	/* a descriptor closed behind the layer's back (fclose) and reused */
	if (fstat(fd, &st) != 0 || st.st_ino != ino)
	{
		atomic_store(&fd_ino[fd], 0);
		return 0;
	}
	if (is_dir)
		*is_dir = S_ISDIR(st.st_mode);
	return ino;
}

static int
open_common(int dirfd, const char *path, int flags, mode_t mode)
{
	ino_t		parent = 0;
	char		name[NAME_MAX + 1];
	bool		ours;
	bool		existed = true;
	struct stat st;
	int			fd;

	pl_ready();
	if (!pl_active)
		return real_openat(dirfd, path, flags, mode);
	pthread_mutex_lock(&pl_lock);
	ours = pl_entry_of(dirfd, path, &parent, name, sizeof(name));
	if (ours && (flags & O_CREAT))
		existed = fstatat(dirfd, path, &st, 0) == 0;
	if (ours && (!existed || (flags & O_TRUNC)))
		pl_before_change();
	fd = real_openat(dirfd, path, flags, mode);
	if (fd >= 0 && fstat(fd, &st) == 0)
	{
		char		real[PATH_MAX];

		if (ours)
		{
			if (!existed)
				pl_log_line("C %lu %s %lu %c\n", (unsigned long) parent, name,
						 (unsigned long) st.st_ino, S_ISDIR(st.st_mode) ? 'd' : 'f');
			else if ((flags & O_TRUNC) && S_ISREG(st.st_mode))
				pl_log_line("T %lu 0\n", (unsigned long) st.st_ino);
		}
		/* root itself, opened to be synced, has no entry of ours */
		if (fd < MAX_FDS &&
			(ours || (realpath(path, real) != NULL && pl_under_root(real))))
		{
			atomic_store(&fd_ino[fd], st.st_ino);
			atomic_store(&fd_chunked[fd], ours && cut_chunk && strstr(path, cut_chunk));
		}
	}
	pthread_mutex_unlock(&pl_lock);
	return fd;
}

static mode_t
mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t) va_arg(ap, int) : 0;
}

int
open(const char *path, int flags,...)
{
	va_list		ap;
	mode_t		mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, mode);
}

/* the same function under glibc's large-file name */
int			open64(const char *path, int flags,...) __attribute__((alias("open")));

int
openat(int dirfd, const char *path, int flags,...)
{
	va_list		ap;
	mode_t		mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return open_common(dirfd, path, flags, mode);
}

int			openat64(int dirfd, const char *path, int flags,...) __attribute__((alias("openat")));

int
creat(const char *path, mode_t mode)
{
	return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int			creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

/* open or openat made through syscall() */
int
pl_open(int dirfd, const char *path, int flags, mode_t mode)
{
	return open_common(dirfd, path, flags, mode);
}

void
pl_track(int fd, ino_t ino)
{
	if (fd >= 0 && fd < MAX_FDS)
	{
		atomic_store(&fd_ino[fd], ino);
		atomic_store(&fd_chunked[fd], false);
	}
}

int
close(int fd)
{
	pl_ready();
	pl_track(fd, 0);
	return real_close(fd);
}

bool
pl_fd_dsync(int fd)
{
	int			flags = fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_DSYNC) != 0;
}

void
pl_log_write(ino_t ino, off_t offset, const struct iovec *iov, int cnt, ssize_t n)
{
	size_t		left = (size_t) n;

	pl_log_line("W %lu %lld %zd\n", (unsigned long) ino, (long long) offset, n);
	for (int i = 0; i < cnt && left > 0; i++)
	{
		size_t		part = iov[i].iov_len < left ? iov[i].iov_len : left;

		pl_log_bytes(iov[i].iov_base, part);
		left -= part;
	}
	if (left > 0)
	{
		errno = EINVAL;
		pl_fail("a write longer than its buffers");
	}
}

void
pl_wrote(int fd, ino_t ino, off_t offset, const struct iovec *iov, int cnt,
		 ssize_t n, bool dsync)
{
	if (ino == 0 || n <= 0)
		return;
	pl_log_write(ino, offset, iov, cnt, n);
	if (dsync || pl_fd_dsync(fd))
	{
		pl_log_line("Y %lu %lld %zd\n", (unsigned long) ino, (long long) offset, n);
		pl_after_sync();
	}
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	ino_t		ino;
	ssize_t		n;

	pl_ready();
	if (!pl_active || fd < 0 || fd >= MAX_FDS || atomic_load(&fd_ino[fd]) == 0)
		return real_write(fd, buf, len);
	pthread_mutex_lock(&pl_lock);
	ino = pl_tracked(fd, NULL);
	if (ino != 0)
		pl_before_change();
	n = real_write(fd, buf, len);
	if (ino != 0 && n > 0)
	{
		/* where it went, O_APPEND or not: just before the new position */
		off_t		end = lseek(fd, 0, SEEK_CUR);
		struct iovec iov = {(void *) buf, (size_t) n};

		if (end < 0)
			pl_fail("lseek after a write");
		pl_wrote(fd, ino, end - n, &iov, 1, n, false);
	}
	pthread_mutex_unlock(&pl_lock);
	return n;
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t offset)
{
	ino_t		ino;
	ssize_t		n;

	pl_ready();
	if (!pl_active || fd < 0 || fd >= MAX_FDS || atomic_load(&fd_ino[fd]) == 0)
		return real_pwrite(fd, buf, len, offset);
	pthread_mutex_lock(&pl_lock);
	ino = pl_tracked(fd, NULL);
	if (ino != 0)
		pl_before_change();
	if (ino != 0 && offset > 0 && atomic_load(&fd_chunked[fd]))
		pl_power_loss();
	n = real_pwrite(fd, buf, len, offset);
	if (ino != 0 && n > 0)
	{
		struct iovec iov = {(void *) buf, (size_t) n};

		pl_wrote(fd, ino, offset, &iov, 1, n, false);
	}
	pthread_mutex_unlock(&pl_lock);
	return n;
}

ssize_t
pwrite64(int fd, const void *buf, size_t len, off_t offset)
{
	return pwrite(fd, buf, len, offset);
}

/* After a call that may have changed fd's size: log the size it has now. */
static int
sized(int fd, int result)
{
	struct stat st;
	ino_t		ino = pl_tracked(fd, NULL);

	if (ino != 0 && result == 0)
	{
		if (fstat(fd, &st) != 0)
			pl_fail("fstat after a size change");
		pl_log_line("T %lu %lld\n", (unsigned long) ino, (long long) st.st_size);
	}
	return result;
}

int
ftruncate(int fd, off_t length)
{
	int			r;

	pl_ready();
	if (!pl_active || pl_tracked(fd, NULL) == 0)
		return real_ftruncate(fd, length);
	pthread_mutex_lock(&pl_lock);
	pl_before_change();
	r = sized(fd, real_ftruncate(fd, length));
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int
ftruncate64(int fd, off_t length)
{
	return ftruncate(fd, length);
}

int
fallocate(int fd, int mode, off_t offset, off_t len)
{
	int			r;

	/* FALLOC_FL_KEEP_SIZE (1): the file's contents do not change */
	pl_ready();
	if (!pl_active || (mode & 1) || pl_tracked(fd, NULL) == 0)
		return real_fallocate(fd, mode, offset, len);
	pthread_mutex_lock(&pl_lock);
	pl_before_change();
	r = sized(fd, real_fallocate(fd, mode, offset, len));
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int			fallocate64(int fd, int mode, off_t offset, off_t len) __attribute__((alias("fallocate")));

int
posix_fallocate(int fd, off_t offset, off_t len)
{
	int			r;

	pl_ready();
	if (!pl_active || pl_tracked(fd, NULL) == 0)
		return real_posix_fallocate(fd, offset, len);
	pthread_mutex_lock(&pl_lock);
	pl_before_change();
	r = real_posix_fallocate(fd, offset, len);
	sized(fd, r);
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int			posix_fallocate64(int fd, off_t offset, off_t len) __attribute__((alias("posix_fallocate")));

static int
sync_common(int fd, int (*real) (int))
{
	bool		is_dir = false;
	ino_t		ino;
	int			r;

	pl_ready();
	if (!pl_active || pl_tracked(fd, NULL) == 0)
		return real(fd);
	pthread_mutex_lock(&pl_lock);
	ino = pl_tracked(fd, &is_dir);
	if (ino != 0)
	{
		pl_before_change();
		pl_log_line("%c %lu\n", is_dir ? 'D' : 'S', (unsigned long) ino);
	}
	pthread_mutex_unlock(&pl_lock);
	r = real(fd);
	if (ino != 0)
	{
		pthread_mutex_lock(&pl_lock);
		pl_after_sync();
		pthread_mutex_unlock(&pl_lock);
	}
	return r;
}

int
fsync(int fd)
{
	return sync_common(fd, real_fsync);
}

int
fdatasync(int fd)
{
	return sync_common(fd, real_fdatasync);
}

/* mkdirat and linkat: an entry made at path (from dirfd), logged once it is there */
static int
make_entry(int dirfd, const char *path, int (*make) (int, const char *, const void *),
		   const void *arg, bool is_link)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	struct stat st;
	int			r;

	pl_ready();
	if (!pl_active)
		return make(dirfd, path, arg);
	pthread_mutex_lock(&pl_lock);
	if (!pl_entry_of(dirfd, path, &parent, name, sizeof(name)))
	{
		pthread_mutex_unlock(&pl_lock);
		return make(dirfd, path, arg);
	}
	pl_before_change();
	r = make(dirfd, path, arg);
	if (r == 0)
	{
		if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
			pl_fail("stat of a new entry");
		if (is_link)
			pl_log_line("L %lu %lu %s\n", (unsigned long) st.st_ino, (unsigned long) parent, name);
		else
			pl_log_line("C %lu %s %lu d\n", (unsigned long) parent, name, (unsigned long) st.st_ino);
	}
	pthread_mutex_unlock(&pl_lock);
	return r;
}

static int
make_dir(int dirfd, const char *path, const void *mode)
{
	return real_mkdirat(dirfd, path, *(const mode_t *) mode);
}

/* linkat's source, its directory and flags */
struct link_from
{
	int			dirfd;
	const char *path;
	int			flags;
};

static int
make_link(int dirfd, const char *path, const void *arg)
{
	const struct link_from *from = arg;

	return real_linkat(from->dirfd, from->path, dirfd, path, from->flags);
}

int
mkdirat(int dirfd, const char *path, mode_t mode)
{
	return make_entry(dirfd, path, make_dir, &mode, false);
}

int
mkdir(const char *path, mode_t mode)
{
	return make_entry(AT_FDCWD, path, make_dir, &mode, false);
}

int
linkat(int fromfd, const char *from, int dirfd, const char *to, int flags)
{
	struct link_from f = {fromfd, from, flags};

	return make_entry(dirfd, to, make_link, &f, true);
}

int
link(const char *from, const char *to)
{
	return linkat(AT_FDCWD, from, AT_FDCWD, to, 0);
}

/* unlinkat (unlink, rmdir): the entry goes */
int
unlinkat(int dirfd, const char *path, int flags)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	int			r;

	pl_ready();
	if (!pl_active)
		return real_unlinkat(dirfd, path, flags);
	pthread_mutex_lock(&pl_lock);
	if (!pl_entry_of(dirfd, path, &parent, name, sizeof(name)))
	{
		pthread_mutex_unlock(&pl_lock);
		return real_unlinkat(dirfd, path, flags);
	}
	pl_before_change();
	r = real_unlinkat(dirfd, path, flags);
	if (r == 0)
		pl_log_line("U %lu %s\n", (unsigned long) parent, name);
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int
unlink(const char *path)
{
	return unlinkat(AT_FDCWD, path, 0);
}

int
rmdir(const char *path)
{
	return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}
