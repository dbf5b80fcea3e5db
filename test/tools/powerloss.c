/*
 * powerloss.c
 *		An LD_PRELOAD layer that records what a process does to the files
 *		under one directory, so that the state a power loss would leave can
 *		be rebuilt from it (test/tools/powerloss_rebuild.pl), and that can
 *		stop the process dead at a chosen point: the power-loss test
 *		(test/ext/191_power_loss.pl) runs the tserver under it.
 *
 *		The model is the pessimistic one Postgres codes against (and
 *		RocksDB's own fault-injection tests use): a file's data is on disk
 *		as it was at its last fsync/fdatasync, a directory's entries as they
 *		were at the directory's last fsync; nothing else survives.  So the
 *		layer logs, in the order they happened, every change of a file's
 *		contents (write, pwrite, ftruncate, fallocate, O_TRUNC), of a
 *		directory's entries (a file created by open, mkdir, link, rename,
 *		unlink, rmdir) and every sync, naming files by inode and entries by
 *		their directory's inode and name.  Reads are not logged.
 *
 *		Environment (nothing is logged without PL_LOG and PL_ROOT):
 *		  PL_LOG		the log file (appended to)
 *		  PL_ROOT		the directory whose tree is recorded (it must exist;
 *						it stands for a directory made durable before)
 *		  PL_CUT_OP		lose power just before the Nth logged change
 *		  PL_CUT_SYNC	lose power just after the Nth sync returned
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
 *		  D <ino>							a directory synced
 *		  L <ino> <parent-ino> <name>		a new link to a file
 *		  R <parent> <name> <parent> <name>	a rename
 *		  U <parent-ino> <name>				an entry removed
 *		  K									the power lost
 *		The log begins with B <root-ino>, then an E <parent-ino> <name> <ino>
 *		<f|d> for each entry the tree had already (durable: the test copies
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
static int	(*real_mkdir) (const char *, mode_t);
static int	(*real_rmdir) (const char *);
static int	(*real_unlink) (const char *);
static int	(*real_rename) (const char *, const char *);
static int	(*real_link) (const char *, const char *);

static bool active;
static int	log_fd = -1;
static char root[PATH_MAX];
static size_t root_len;
static unsigned long cut_op;
static unsigned long cut_sync;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long changes;	/* under lock */
static unsigned long syncs;		/* under lock */

/* the inode each tracked descriptor was opened on; 0: not tracked */
static _Atomic ino_t fd_ino[MAX_FDS];

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
	real_mkdir = dlsym(RTLD_NEXT, "mkdir");
	real_rmdir = dlsym(RTLD_NEXT, "rmdir");
	real_unlink = dlsym(RTLD_NEXT, "unlink");
	real_rename = dlsym(RTLD_NEXT, "rename");
	real_link = dlsym(RTLD_NEXT, "link");
}

/* Every wrapper: the real functions, even before the constructor ran. */
static inline void
ready(void)
{
	if (real_link == NULL)
		resolve();
}

/* The layer cannot do its job: say so and stop, never carry on unrecorded. */
static void
fail(const char *what)
{
	char		msg[512];
	int			n = snprintf(msg, sizeof(msg), "powerloss: %s: %s\n", what, strerror(errno));

	if (real_write)
		(void) !real_write(2, msg, n > 0 ? (size_t) n : 0);
	abort();
}

static void
log_bytes(const void *data, size_t len)
{
	const char *p = data;

	while (len > 0)
	{
		ssize_t		n = real_write(log_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("writing the log");
		p += n;
		len -= (size_t) n;
	}
}

static void
log_line(const char *fmt,...)
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
		fail("a log line");
	}
	log_bytes(line, (size_t) n);
}

static void
power_loss(void)
{
	log_line("K\n");
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

/* Call with lock held, before a change: the power may go now. */
static void
before_change(void)
{
	if (++changes == cut_op)
		power_loss();
}

/* Log the entries under dir (inode ino) as they are: the durable start. */
static void
log_existing(const char *dir, ino_t ino)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		fail("opendir");
	while ((de = readdir(d)) != NULL)
	{
		char		path[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0)
			fail("lstat");
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			continue;
		log_line("E %lu %s %lu %c\n", (unsigned long) ino, de->d_name,
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

	resolve();
	if (log_path == NULL || root_path == NULL)
		return;
	if (realpath(root_path, root) == NULL)
		fail("PL_ROOT");
	root_len = strlen(root);
	log_fd = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0)
		fail("PL_LOG");
	{
		struct stat st;

		if (stat(root, &st) != 0)
			fail("stat PL_ROOT");
		log_line("B %lu\n", (unsigned long) st.st_ino);
		log_existing(root, st.st_ino);
	}
	cut_op = getenv("PL_CUT_OP") ? strtoul(getenv("PL_CUT_OP"), NULL, 10) : 0;
	cut_sync = getenv("PL_CUT_SYNC") ? strtoul(getenv("PL_CUT_SYNC"), NULL, 10) : 0;
	active = true;
}

/* Is the resolved path root or under it? */
static bool
under_root(const char *real)
{
	return strncmp(real, root, root_len) == 0 &&
		(real[root_len] == '\0' || real[root_len] == '/');
}

/*
 * The directory entry path names, for a path whose directory exists: its
 * directory's inode and its last component; false when it is not under
 * root (or cannot be resolved: then it is none of ours either).
 */
static bool
entry_of(int dirfd, const char *path, ino_t *parent, char *name, size_t size)
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
	if (realpath(at, real) == NULL || !under_root(real) || stat(real, &st) != 0)
		return false;
	*parent = st.st_ino;
	snprintf(name, size, "%s", base);
	return true;
}

/* The inode fd is tracked under, if it still is that file; else 0. */
static ino_t
tracked(int fd, bool *is_dir)
{
	ino_t		ino;
	struct stat st;

	ready();
	if (!active || fd < 0 || fd >= MAX_FDS)
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

	ready();
	if (!active)
		return real_openat(dirfd, path, flags, mode);
	pthread_mutex_lock(&lock);
	ours = entry_of(dirfd, path, &parent, name, sizeof(name));
	if (ours && (flags & O_CREAT))
		existed = fstatat(dirfd, path, &st, 0) == 0;
	if (ours && (!existed || (flags & O_TRUNC)))
		before_change();
	fd = real_openat(dirfd, path, flags, mode);
	if (fd >= 0 && fstat(fd, &st) == 0)
	{
		char		real[PATH_MAX];

		if (ours)
		{
			if (!existed)
				log_line("C %lu %s %lu %c\n", (unsigned long) parent, name,
						 (unsigned long) st.st_ino, S_ISDIR(st.st_mode) ? 'd' : 'f');
			else if ((flags & O_TRUNC) && S_ISREG(st.st_mode))
				log_line("T %lu 0\n", (unsigned long) st.st_ino);
		}
		/* root itself, opened to be synced, has no entry of ours */
		if (fd < MAX_FDS &&
			(ours || (realpath(path, real) != NULL && under_root(real))))
			atomic_store(&fd_ino[fd], st.st_ino);
	}
	pthread_mutex_unlock(&lock);
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

int
creat(const char *path, mode_t mode)
{
	return open_common(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int
close(int fd)
{
	ready();
	if (fd >= 0 && fd < MAX_FDS)
		atomic_store(&fd_ino[fd], 0);
	return real_close(fd);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	ino_t		ino;
	ssize_t		n;

	ready();
	if (!active || fd < 0 || fd >= MAX_FDS || atomic_load(&fd_ino[fd]) == 0)
		return real_write(fd, buf, len);
	pthread_mutex_lock(&lock);
	ino = tracked(fd, NULL);
	if (ino != 0)
		before_change();
	n = real_write(fd, buf, len);
	if (ino != 0 && n > 0)
	{
		/* where it went, O_APPEND or not: just before the new position */
		off_t		end = lseek(fd, 0, SEEK_CUR);

		if (end < 0)
			fail("lseek after a write");
		log_line("W %lu %lld %zd\n", (unsigned long) ino, (long long) (end - n), n);
		log_bytes(buf, (size_t) n);
	}
	pthread_mutex_unlock(&lock);
	return n;
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t offset)
{
	ino_t		ino;
	ssize_t		n;

	ready();
	if (!active || fd < 0 || fd >= MAX_FDS || atomic_load(&fd_ino[fd]) == 0)
		return real_pwrite(fd, buf, len, offset);
	pthread_mutex_lock(&lock);
	ino = tracked(fd, NULL);
	if (ino != 0)
		before_change();
	n = real_pwrite(fd, buf, len, offset);
	if (ino != 0 && n > 0)
	{
		log_line("W %lu %lld %zd\n", (unsigned long) ino, (long long) offset, n);
		log_bytes(buf, (size_t) n);
	}
	pthread_mutex_unlock(&lock);
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
	ino_t		ino = tracked(fd, NULL);

	if (ino != 0 && result == 0)
	{
		if (fstat(fd, &st) != 0)
			fail("fstat after a size change");
		log_line("T %lu %lld\n", (unsigned long) ino, (long long) st.st_size);
	}
	return result;
}

int
ftruncate(int fd, off_t length)
{
	int			r;

	ready();
	if (!active || tracked(fd, NULL) == 0)
		return real_ftruncate(fd, length);
	pthread_mutex_lock(&lock);
	before_change();
	r = sized(fd, real_ftruncate(fd, length));
	pthread_mutex_unlock(&lock);
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
	ready();
	if (!active || (mode & 1) || tracked(fd, NULL) == 0)
		return real_fallocate(fd, mode, offset, len);
	pthread_mutex_lock(&lock);
	before_change();
	r = sized(fd, real_fallocate(fd, mode, offset, len));
	pthread_mutex_unlock(&lock);
	return r;
}

int
posix_fallocate(int fd, off_t offset, off_t len)
{
	int			r;

	ready();
	if (!active || tracked(fd, NULL) == 0)
		return real_posix_fallocate(fd, offset, len);
	pthread_mutex_lock(&lock);
	before_change();
	r = real_posix_fallocate(fd, offset, len);
	sized(fd, r);
	pthread_mutex_unlock(&lock);
	return r;
}

static int
sync_common(int fd, int (*real) (int))
{
	bool		is_dir = false;
	ino_t		ino;
	int			r;

	ready();
	if (!active || tracked(fd, NULL) == 0)
		return real(fd);
	pthread_mutex_lock(&lock);
	ino = tracked(fd, &is_dir);
	if (ino != 0)
	{
		before_change();
		log_line("%c %lu\n", is_dir ? 'D' : 'S', (unsigned long) ino);
	}
	pthread_mutex_unlock(&lock);
	r = real(fd);
	if (ino != 0)
	{
		pthread_mutex_lock(&lock);
		if (++syncs == cut_sync)
			power_loss();
		pthread_mutex_unlock(&lock);
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

/* mkdir and link: an entry made at path, logged once it is there */
static int
make_entry(const char *path, int (*make) (const char *, const void *),
		   const void *arg, bool is_link)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	struct stat st;
	int			r;

	ready();
	if (!active)
		return make(path, arg);
	pthread_mutex_lock(&lock);
	if (!entry_of(AT_FDCWD, path, &parent, name, sizeof(name)))
	{
		pthread_mutex_unlock(&lock);
		return make(path, arg);
	}
	before_change();
	r = make(path, arg);
	if (r == 0)
	{
		if (stat(path, &st) != 0)
			fail("stat of a new entry");
		if (is_link)
			log_line("L %lu %lu %s\n", (unsigned long) st.st_ino, (unsigned long) parent, name);
		else
			log_line("C %lu %s %lu d\n", (unsigned long) parent, name, (unsigned long) st.st_ino);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

static int
make_dir(const char *path, const void *mode)
{
	return real_mkdir(path, *(const mode_t *) mode);
}

static int
make_link(const char *path, const void *from)
{
	return real_link((const char *) from, path);
}

int
mkdir(const char *path, mode_t mode)
{
	return make_entry(path, make_dir, &mode, false);
}

/* unlink and rmdir: the entry goes */
static int
remove_common(const char *path, int (*real) (const char *))
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	int			r;

	ready();
	if (!active)
		return real(path);
	pthread_mutex_lock(&lock);
	if (!entry_of(AT_FDCWD, path, &parent, name, sizeof(name)))
	{
		pthread_mutex_unlock(&lock);
		return real(path);
	}
	before_change();
	r = real(path);
	if (r == 0)
		log_line("U %lu %s\n", (unsigned long) parent, name);
	pthread_mutex_unlock(&lock);
	return r;
}

int
unlink(const char *path)
{
	return remove_common(path, real_unlink);
}

int
rmdir(const char *path)
{
	return remove_common(path, real_rmdir);
}

int
rename(const char *from, const char *to)
{
	ino_t		from_parent,
				to_parent;
	char		from_name[NAME_MAX + 1],
				to_name[NAME_MAX + 1];
	bool		from_ours,
				to_ours;
	int			r;

	ready();
	if (!active)
		return real_rename(from, to);
	pthread_mutex_lock(&lock);
	from_ours = entry_of(AT_FDCWD, from, &from_parent, from_name, sizeof(from_name));
	to_ours = entry_of(AT_FDCWD, to, &to_parent, to_name, sizeof(to_name));
	if (from_ours || to_ours)
		before_change();
	r = real_rename(from, to);
	if (r == 0 && from_ours && to_ours)
		log_line("R %lu %s %lu %s\n", (unsigned long) from_parent, from_name,
				 (unsigned long) to_parent, to_name);
	else if (r == 0 && from_ours)
		log_line("U %lu %s\n", (unsigned long) from_parent, from_name);
	else if (r == 0 && to_ours)
	{
		errno = EXDEV;
		fail("a file renamed into the recorded tree from outside it");
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int
link(const char *from, const char *to)
{
	return make_entry(to, make_link, from, true);
}
