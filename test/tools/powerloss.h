/*
 * powerloss.h
 *		What the two halves of the power-loss layer share: powerloss.c (the
 *		log, the watched directories, open, write, sync and the directory
 *		entries) and powerloss_io.c (vectored and O_DSYNC writes, io_submit,
 *		syscall(), stdio streams, mkdtemp, renameat2).  See powerloss.c.
 */
#ifndef POWERLOSS_H
#define POWERLOSS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

extern bool pl_active;
extern pthread_mutex_t pl_lock;

/* Every wrapper first: the real functions resolved, even before the constructor. */
extern void pl_ready(void);

/* The layer cannot do its job: say so and abort, never carry on unrecorded. */
extern void pl_fail(const char *what) __attribute__((noreturn));

/* A log record (a text line), and the bytes after a W. */
extern void pl_log_line(const char *fmt,...) __attribute__((format(printf, 1, 2)));
extern void pl_log_bytes(const void *data, size_t len);

/* With pl_lock held, before a change: the power may go now. */
extern void pl_before_change(void);

/* With pl_lock held, once a sync returned: the power may go now. */
extern void pl_after_sync(void);

/*
 * The directory entry path (relative to dirfd) names: its directory's inode
 * and last component; false when it is not under a watched directory.
 */
extern bool pl_entry_of(int dirfd, const char *path, ino_t *parent, char *name, size_t size);

/* The inode fd is tracked under (0: none); *is_dir when asked. */
extern ino_t pl_tracked(int fd, bool *is_dir);

/* Track fd as the file ino (0: no longer). */
extern void pl_track(int fd, ino_t ino);

/* Is the resolved path a watched directory or under one? */
extern bool pl_under_root(const char *real);

/* With pl_lock held: a W record of n bytes of iov (cnt pieces) at offset. */
extern void pl_log_write(ino_t ino, off_t offset, const struct iovec *iov, int cnt, ssize_t n);

/*
 * With pl_lock held, after n bytes of iov (cnt pieces) went to fd (the
 * file ino) at offset: log them; a file open with O_DSYNC or O_SYNC (or a
 * write with RWF_DSYNC, dsync) makes them durable as the call returns.
 */
extern void pl_wrote(int fd, ino_t ino, off_t offset, const struct iovec *iov, int cnt,
					 ssize_t n, bool dsync);

/* open and openat, as the wrapper of open does them (for syscall()) */
extern int	pl_open(int dirfd, const char *path, int flags, mode_t mode);

/* Does fd write through (O_DSYNC or O_SYNC)? */
extern bool pl_fd_dsync(int fd);

#endif							/* POWERLOSS_H */
