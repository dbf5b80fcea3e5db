/*
 * ts_files.h
 *		Files written and copied whole and synced (ts_files.c).
 */
#ifndef TS_FILES_H
#define TS_FILES_H

#include <stddef.h>

/* Write len bytes of buf into a new file at path, synced.  0, or -1 with errno. */
int			ts_file_write_synced(const char *path, const char *buf, size_t len);

/*
 * Copy src into a new file dst, synced (hard links cannot cross file
 * systems).  0, or -1 with errno.
 */
int			ts_file_copy_synced(const char *src, const char *dst);

#endif							/* TS_FILES_H */
