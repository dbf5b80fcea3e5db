/*
 * powerloss_io.c
 *		The power-loss layer's other write paths (see powerloss.c): writev,
 *		pwritev and pwritev2; io_submit and io_getevents, which glibc has no
 *		wrapper for (libraft calls them through syscall(), on files open
 *		O_DSYNC with O_DIRECT set by fcntl); syscall() itself, for those and
 *		for libuv's pwritev; fwrite on a stream of a watched file (RocksDB's
 *		info LOG); mkdtemp and the mkstemp family; rename, renameat and
 *		renameat2; truncate; dup, dup2 and dup3.  copy_file_range and sendfile into a watched file abort:
 *		their bytes cannot be logged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "powerloss.h"

static long (*real_syscall) (long,...);
static ssize_t (*real_writev) (int, const struct iovec *, int);
static ssize_t (*real_pwritev) (int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2) (int, const struct iovec *, int, off_t, int);
static size_t (*real_fwrite) (const void *, size_t, size_t, FILE *);
static char *(*real_mkdtemp) (char *);
static int	(*real_mkostemps) (char *, int, int);
static int	(*real_renameat2) (int, const char *, int, const char *, unsigned int);
static ssize_t (*real_copy_file_range) (int, off_t *, int, off_t *, size_t, unsigned int);
static ssize_t (*real_sendfile) (int, int, off_t *, size_t);
static int	(*real_truncate) (const char *, off_t);
static int	(*real_dup) (int);
static int	(*real_dup3) (int, int, int);

/* an io_submit write or sync the layer waits to see done */
typedef struct Pending
{
	uint64_t	cb;				/* the iocb's address; 0: a free slot */
	ino_t		ino;
	off_t		offset;
	ssize_t		len;
	char		kind;			/* 'Y': bytes written through; 'S', 'D': a sync */
} Pending;

#define MAX_PENDING 4096
static Pending pending[MAX_PENDING];	/* under pl_lock */

static void
resolve_io(void)
{
	real_syscall = dlsym(RTLD_NEXT, "syscall");
	real_writev = dlsym(RTLD_NEXT, "writev");
	real_pwritev = dlsym(RTLD_NEXT, "pwritev");
	real_pwritev2 = dlsym(RTLD_NEXT, "pwritev2");
	real_fwrite = dlsym(RTLD_NEXT, "fwrite");
	real_mkdtemp = dlsym(RTLD_NEXT, "mkdtemp");
	real_mkostemps = dlsym(RTLD_NEXT, "mkostemps");
	real_copy_file_range = dlsym(RTLD_NEXT, "copy_file_range");
	real_sendfile = dlsym(RTLD_NEXT, "sendfile");
	real_truncate = dlsym(RTLD_NEXT, "truncate");
	real_dup = dlsym(RTLD_NEXT, "dup");
	real_dup3 = dlsym(RTLD_NEXT, "dup3");
	real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
}

/* Every wrapper here: both halves' real functions. */
static inline void
io_ready(void)
{
	pl_ready();
	if (real_renameat2 == NULL)
		resolve_io();
}

/* writev, pwritev and pwritev2 (offset -1: at the file's position) */
static ssize_t
vector_write(int fd, const struct iovec *iov, int cnt, off_t offset, int flags, int kind)
{
	ino_t		ino;
	ssize_t		n;

	io_ready();
	if (!pl_active || pl_tracked(fd, NULL) == 0)
		return kind == 0 ? real_writev(fd, iov, cnt)
			: kind == 1 ? real_pwritev(fd, iov, cnt, offset)
			: real_pwritev2(fd, iov, cnt, offset, flags);
	pthread_mutex_lock(&pl_lock);
	ino = pl_tracked(fd, NULL);
	if (ino != 0)
		pl_before_change();
	n = kind == 0 ? real_writev(fd, iov, cnt)
		: kind == 1 ? real_pwritev(fd, iov, cnt, offset)
		: real_pwritev2(fd, iov, cnt, offset, flags);
	if (ino != 0 && n > 0)
	{
		if (kind == 0 || offset == -1)
		{
			off_t		end = lseek(fd, 0, SEEK_CUR);

			if (end < 0)
				pl_fail("lseek after a write");
			offset = end - n;
		}
		pl_wrote(fd, ino, offset, iov, cnt, n, (flags & (RWF_DSYNC | RWF_SYNC)) != 0);
	}
	pthread_mutex_unlock(&pl_lock);
	return n;
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
	return vector_write(fd, iov, cnt, -1, 0, 0);
}

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t offset)
{
	return vector_write(fd, iov, cnt, offset, 0, 1);
}

ssize_t		pwritev64(int fd, const struct iovec *iov, int cnt, off_t offset) __attribute__((alias("pwritev")));

ssize_t
pwritev2(int fd, const struct iovec *iov, int cnt, off_t offset, int flags)
{
	return vector_write(fd, iov, cnt, offset, flags, 2);
}

ssize_t		pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t offset, int flags) __attribute__((alias("pwritev2")));

/* a copy of a tracked descriptor writes to the same file */
int
dup(int fd)
{
	int			r;

	io_ready();
	r = real_dup(fd);
	if (r >= 0)
		pl_track(r, pl_tracked(fd, NULL));
	return r;
}

int
dup3(int fd, int to, int flags)
{
	int			r;

	io_ready();
	r = real_dup3(fd, to, flags);
	if (r >= 0)
		pl_track(r, pl_tracked(fd, NULL));
	return r;
}

int
dup2(int fd, int to)
{
	io_ready();
	if (fd == to)
		return fcntl(fd, F_GETFD) < 0 ? -1 : to;
	return dup3(fd, to, 0);
}

int
truncate(const char *path, off_t length)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	struct stat st;
	int			r;

	io_ready();
	if (!pl_active)
		return real_truncate(path, length);
	pthread_mutex_lock(&pl_lock);
	if (!pl_entry_of(AT_FDCWD, path, &parent, name, sizeof(name)))
	{
		pthread_mutex_unlock(&pl_lock);
		return real_truncate(path, length);
	}
	pl_before_change();
	r = real_truncate(path, length);
	if (r == 0)
	{
		if (stat(path, &st) != 0)
			pl_fail("stat after truncate");
		pl_log_line("T %lu %lld\n", (unsigned long) st.st_ino, (long long) st.st_size);
	}
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int			truncate64(const char *path, off_t length) __attribute__((alias("truncate")));

/* With pl_lock held: wait for cb to be done (ino's bytes, or a sync). */
static void
remember(uint64_t cb, ino_t ino, off_t offset, ssize_t len, char kind)
{
	for (int i = 0; i < MAX_PENDING; i++)
		if (pending[i].cb == 0)
		{
			pending[i] = (Pending) {cb, ino, offset, len, kind};
			return;
		}
	errno = EAGAIN;
	pl_fail("too many io_submit writes in flight");
}

/*
 * io_submit: each write to a watched file logged (its bytes are in the
 * caller's buffer until it is done), each written-through write and each
 * sync remembered until io_getevents reports it.
 */
static long
io_submit_logged(long ctx, long nr, struct iocb **cbs)
{
	ino_t		inos[1024];
	long		r;

	if (nr < 0 || nr > 1024)
		return real_syscall(SYS_io_submit, ctx, nr, cbs);
	pthread_mutex_lock(&pl_lock);
	for (long i = 0; i < nr; i++)
	{
		uint16_t	op = cbs[i]->aio_lio_opcode;

		inos[i] = 0;
		if (op == IOCB_CMD_PWRITE || op == IOCB_CMD_PWRITEV ||
			op == IOCB_CMD_FSYNC || op == IOCB_CMD_FDSYNC)
			inos[i] = pl_tracked((int) cbs[i]->aio_fildes, NULL);
		if (inos[i] != 0)
			pl_before_change();
	}
	r = real_syscall(SYS_io_submit, ctx, nr, cbs);
	for (long i = 0; i < r; i++)
	{
		struct iocb *cb = cbs[i];
		int			fd = (int) cb->aio_fildes;
		struct iovec one;
		const struct iovec *iov = &one;
		int			cnt = 1;
		ssize_t		len = 0;

		if (inos[i] == 0)
			continue;
		if (cb->aio_lio_opcode == IOCB_CMD_FSYNC || cb->aio_lio_opcode == IOCB_CMD_FDSYNC)
		{
			bool		is_dir = false;

			pl_tracked(fd, &is_dir);
			remember((uint64_t) (uintptr_t) cb, inos[i], 0, 0, is_dir ? 'D' : 'S');
			continue;
		}
		if (cb->aio_lio_opcode == IOCB_CMD_PWRITE)
			one = (struct iovec) {(void *) (uintptr_t) cb->aio_buf, (size_t) cb->aio_nbytes};
		else
		{
			iov = (const struct iovec *) (uintptr_t) cb->aio_buf;
			cnt = (int) cb->aio_nbytes;
		}
		for (int k = 0; k < cnt; k++)
			len += (ssize_t) iov[k].iov_len;
		if (len == 0)
			continue;
		pl_log_write(inos[i], (off_t) cb->aio_offset, iov, cnt, len);
		if ((cb->aio_rw_flags & (RWF_DSYNC | RWF_SYNC)) != 0 || pl_fd_dsync(fd))
			remember((uint64_t) (uintptr_t) cb, inos[i], (off_t) cb->aio_offset, len, 'Y');
	}
	pthread_mutex_unlock(&pl_lock);
	return r;
}

/* io_getevents and io_pgetevents: what is done is durable once they return. */
static long
io_getevents_logged(long number, const long *a)
{
	long		r = real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	struct io_event *ev = (struct io_event *) (uintptr_t) a[3];

	if (r <= 0)
		return r;
	pthread_mutex_lock(&pl_lock);
	for (long i = 0; i < r; i++)
		for (int k = 0; k < MAX_PENDING; k++)
		{
			Pending    *p = &pending[k];

			if (p->cb != ev[i].obj)
				continue;
			if (p->kind != 'Y')
				pl_log_line("%c %lu\n", p->kind, (unsigned long) p->ino);
			else if (ev[i].res > 0)
				pl_log_line("Y %lu %lld %lld\n", (unsigned long) p->ino, (long long) p->offset,
							(long long) (ev[i].res < p->len ? ev[i].res : p->len));
			p->cb = 0;
			if (p->kind != 'Y' || ev[i].res > 0)
				pl_after_sync();
			break;
		}
	pthread_mutex_unlock(&pl_lock);
	return r;
}

/*
 * fwrite to a stream of a watched file: flushed at once, so that its bytes
 * go to the file now, where the log says.
 */
size_t
fwrite(const void *buf, size_t size, size_t nmemb, FILE *f)
{
	int			fd;
	ino_t		ino;
	off_t		offset;
	size_t		n;

	io_ready();
	if (!pl_active || (fd = fileno(f)) < 0 || pl_tracked(fd, NULL) == 0)
		return real_fwrite(buf, size, nmemb, f);
	pthread_mutex_lock(&pl_lock);
	ino = pl_tracked(fd, NULL);
	fflush(f);
	if (fcntl(fd, F_GETFL) & O_APPEND)
	{
		struct stat st;

		if (fstat(fd, &st) != 0)
			pl_fail("fstat before fwrite");
		offset = st.st_size;
	}
	else
		offset = lseek(fd, 0, SEEK_CUR);
	if (offset < 0)
		pl_fail("lseek before fwrite");
	if (ino != 0)
		pl_before_change();
	n = real_fwrite(buf, size, nmemb, f);
	fflush(f);
	if (ino != 0 && n > 0)
	{
		struct iovec iov = {(void *) buf, n * size};

		pl_wrote(fd, ino, offset, &iov, 1, (ssize_t) (n * size), false);
	}
	pthread_mutex_unlock(&pl_lock);
	return n;
}

/* A name made from a template, once there: its C record. */
static void
made(ino_t parent, const char *path, char kind)
{
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (stat(path, &st) != 0)
		pl_fail("stat of a new entry");
	pl_log_line("C %lu %s %lu %c\n", (unsigned long) parent, slash ? slash + 1 : path,
				(unsigned long) st.st_ino, kind);
}

char *
mkdtemp(char *template)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	bool		ours;
	char	   *r;

	io_ready();
	if (!pl_active)
		return real_mkdtemp(template);
	pthread_mutex_lock(&pl_lock);
	ours = pl_entry_of(AT_FDCWD, template, &parent, name, sizeof(name));
	if (ours)
		pl_before_change();
	r = real_mkdtemp(template);
	if (r != NULL && ours)
		made(parent, r, 'd');
	pthread_mutex_unlock(&pl_lock);
	return r;
}

/* the mkstemp family: a file made and opened */
int
mkostemps(char *template, int suffixlen, int flags)
{
	ino_t		parent;
	char		name[NAME_MAX + 1];
	bool		ours;
	int			fd;

	io_ready();
	if (!pl_active)
		return real_mkostemps(template, suffixlen, flags);
	pthread_mutex_lock(&pl_lock);
	ours = pl_entry_of(AT_FDCWD, template, &parent, name, sizeof(name));
	if (ours)
		pl_before_change();
	fd = real_mkostemps(template, suffixlen, flags);
	if (fd >= 0 && ours)
	{
		struct stat st;

		made(parent, template, 'f');
		if (fstat(fd, &st) != 0)
			pl_fail("fstat of a new file");
		pl_track(fd, st.st_ino);
	}
	pthread_mutex_unlock(&pl_lock);
	return fd;
}

int			mkostemps64(char *template, int suffixlen, int flags) __attribute__((alias("mkostemps")));

int
mkstemp(char *template)
{
	return mkostemps(template, 0, 0);
}

int			mkstemp64(char *template) __attribute__((alias("mkstemp")));

int
mkostemp(char *template, int flags)
{
	return mkostemps(template, 0, flags);
}

int			mkostemp64(char *template, int flags) __attribute__((alias("mkostemp")));

int
mkstemps(char *template, int suffixlen)
{
	return mkostemps(template, suffixlen, 0);
}

int			mkstemps64(char *template, int suffixlen) __attribute__((alias("mkstemps")));

/* rename, renameat and renameat2 (RENAME_NOREPLACE; an exchange aborts) */
int
renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags)
{
	ino_t		from_parent,
				to_parent;
	char		from_name[NAME_MAX + 1],
				to_name[NAME_MAX + 1];
	bool		from_ours,
				to_ours;
	int			r;

	io_ready();
	if (!pl_active)
		return real_renameat2(fromfd, from, tofd, to, flags);
	pthread_mutex_lock(&pl_lock);
	from_ours = pl_entry_of(fromfd, from, &from_parent, from_name, sizeof(from_name));
	to_ours = pl_entry_of(tofd, to, &to_parent, to_name, sizeof(to_name));
	if ((from_ours || to_ours) && (flags & RENAME_EXCHANGE))
	{
		errno = EINVAL;
		pl_fail("renameat2 with RENAME_EXCHANGE in a watched directory");
	}
	if (from_ours || to_ours)
		pl_before_change();
	r = real_renameat2(fromfd, from, tofd, to, flags);
	if (r == 0 && from_ours && to_ours)
		pl_log_line("R %lu %s %lu %s\n", (unsigned long) from_parent, from_name,
					(unsigned long) to_parent, to_name);
	else if (r == 0 && from_ours)
		pl_log_line("U %lu %s\n", (unsigned long) from_parent, from_name);
	else if (r == 0 && to_ours)
	{
		errno = EXDEV;
		pl_fail("a file renamed into a watched directory from outside it");
	}
	pthread_mutex_unlock(&pl_lock);
	return r;
}

int
renameat(int fromfd, const char *from, int tofd, const char *to)
{
	return renameat2(fromfd, from, tofd, to, 0);
}

int
rename(const char *from, const char *to)
{
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, 0);
}

ssize_t
copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned int flags)
{
	io_ready();
	if (pl_active && pl_tracked(out, NULL) != 0)
	{
		errno = ENOTSUP;
		pl_fail("copy_file_range into a watched file");
	}
	return real_copy_file_range(in, in_off, out, out_off, len, flags);
}

ssize_t
sendfile(int out, int in, off_t *offset, size_t count)
{
	io_ready();
	if (pl_active && pl_tracked(out, NULL) != 0)
	{
		errno = ENOTSUP;
		pl_fail("sendfile into a watched file");
	}
	return real_sendfile(out, in, offset, count);
}

ssize_t		sendfile64(int out, int in, off_t *offset, size_t count) __attribute__((alias("sendfile")));

/*
 * syscall(): the calls above and those of powerloss.c made through it
 * (libraft's io_submit, libuv's pwritev) go to their wrappers; any other
 * goes through unchanged.
 */
long
syscall(long number,...)
{
	va_list		ap;
	long		a[6];

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	io_ready();
	if (!pl_active)
		return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (number)
	{
		case SYS_io_submit:
			return io_submit_logged(a[0], a[1], (struct iocb **) a[2]);
		case SYS_io_getevents:
		case SYS_io_pgetevents:
			return io_getevents_logged(number, a);
		case SYS_write:
			return write((int) a[0], (const void *) a[1], (size_t) a[2]);
		case SYS_pwrite64:
			return pwrite((int) a[0], (const void *) a[1], (size_t) a[2], (off_t) a[3]);
		case SYS_writev:
			return writev((int) a[0], (const struct iovec *) a[1], (int) a[2]);
		case SYS_pwritev:
			return pwritev((int) a[0], (const struct iovec *) a[1], (int) a[2], (off_t) a[3]);
		case SYS_pwritev2:
			return pwritev2((int) a[0], (const struct iovec *) a[1], (int) a[2], (off_t) a[3],
							(int) a[5]);
		case SYS_openat:
			return pl_open((int) a[0], (const char *) a[1], (int) a[2], (mode_t) a[3]);
		case SYS_close:
			return close((int) a[0]);
		case SYS_fsync:
			return fsync((int) a[0]);
		case SYS_fdatasync:
			return fdatasync((int) a[0]);
		case SYS_ftruncate:
			return ftruncate((int) a[0], (off_t) a[1]);
		case SYS_truncate:
			return truncate((const char *) a[0], (off_t) a[1]);
		case SYS_fallocate:
			return fallocate((int) a[0], (int) a[1], (off_t) a[2], (off_t) a[3]);
		case SYS_renameat:
			return renameat((int) a[0], (const char *) a[1], (int) a[2], (const char *) a[3]);
		case SYS_renameat2:
			return renameat2((int) a[0], (const char *) a[1], (int) a[2], (const char *) a[3],
							 (unsigned int) a[4]);
		case SYS_mkdirat:
			return mkdirat((int) a[0], (const char *) a[1], (mode_t) a[2]);
		case SYS_unlinkat:
			return unlinkat((int) a[0], (const char *) a[1], (int) a[2]);
		case SYS_linkat:
			return linkat((int) a[0], (const char *) a[1], (int) a[2], (const char *) a[3],
						  (int) a[4]);
		case SYS_dup:
			return dup((int) a[0]);
		case SYS_dup3:
			return dup3((int) a[0], (int) a[1], (int) a[2]);
		case SYS_copy_file_range:
			return copy_file_range((int) a[0], (off_t *) a[1], (int) a[2], (off_t *) a[3],
								   (size_t) a[4], (unsigned int) a[5]);
		case SYS_sendfile:
			return sendfile((int) a[0], (int) a[1], (off_t *) a[2], (size_t) a[3]);
#ifdef SYS_open
		case SYS_open:
			return pl_open(AT_FDCWD, (const char *) a[0], (int) a[1], (mode_t) a[2]);
		case SYS_creat:
			return pl_open(AT_FDCWD, (const char *) a[0], O_CREAT | O_WRONLY | O_TRUNC,
						   (mode_t) a[1]);
		case SYS_rename:
			return rename((const char *) a[0], (const char *) a[1]);
		case SYS_mkdir:
			return mkdir((const char *) a[0], (mode_t) a[1]);
		case SYS_unlink:
			return unlink((const char *) a[0]);
		case SYS_rmdir:
			return rmdir((const char *) a[0]);
		case SYS_link:
			return link((const char *) a[0], (const char *) a[1]);
		case SYS_dup2:
			return dup2((int) a[0], (int) a[1]);
#endif
		default:
			return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}
