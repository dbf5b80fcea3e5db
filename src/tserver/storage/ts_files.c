/*
 * ts_files.c
 *		Files written and copied whole and synced, for what must be on
 *		disk before it is named (a backup's manifest and the files it
 *		copies across file systems).
 */
#include "ts_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int
ts_file_write_synced(const char *path, const char *buf, size_t len)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t		done = 0;
	int			saved;

	if (fd < 0)
		return -1;
	while (done < len)
	{
		ssize_t		n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		done += (size_t) n;
	}
	if (fsync(fd) != 0)
		goto fail;
	return close(fd);

fail:
	saved = errno != 0 ? errno : EIO;
	close(fd);
	errno = saved;
	return -1;
}

int
ts_file_copy_synced(const char *src, const char *dst)
{
	int			in = open(src, O_RDONLY | O_CLOEXEC);
	int			out = -1;
	char	   *buf = malloc(1024 * 1024);
	int			result = -1;
	int			saved;

	if (in < 0 || buf == NULL ||
		(out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		goto done;
	for (;;)
	{
		ssize_t		n = read(in, buf, 1024 * 1024);
		ssize_t		w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto done;
		if (n == 0)
			break;
		while (w < n)
		{
			ssize_t		k = write(out, buf + w, (size_t) (n - w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				goto done;
			w += k;
		}
	}
	if (fsync(out) == 0)
		result = 0;
done:
	saved = errno;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0 && result == 0)
		result = -1, saved = errno;
	free(buf);
	errno = saved;
	return result;
}
