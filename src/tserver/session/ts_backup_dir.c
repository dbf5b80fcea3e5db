/*
 * ts_backup_dir.c
 *		Where a backup goes (ts_backup.c takes it): the directory a client
 *		names, checked (absolute UTF-8, no "." or "..", under the root
 *		when there is one, never inside the data directory, never an
 *		existing one), its missing parents made, and the directory itself
 *		claimed with a manifest that says the backup is incomplete.
 */
#include "ts_session_int.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ts_files.h"
#include "ts_log.h"

/* Whether s[len] is valid UTF-8 (no overlong forms, no surrogates). */
static bool
valid_utf8(const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = s[i];
		size_t		n;
		uint32_t	cp;

		if (c < 0x80)
		{
			i++;
			continue;
		}
		else if ((c & 0xE0) == 0xC0)
			n = 1, cp = c & 0x1F;
		else if ((c & 0xF0) == 0xE0)
			n = 2, cp = c & 0x0F;
		else if ((c & 0xF8) == 0xF0)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++)
		{
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
			cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n + 1;
	}
	return true;
}

/*
 * Check a backup directory's path as a client sent it: 1 to
 * TS_BACKUP_PATH_MAX bytes of UTF-8 without NUL, absolute, without "." or
 * ".." components, within root when there is one.  Copied into out (its
 * trailing slashes dropped).  0, or -1 with err.
 */
static int
backup_check_path(const char *path, size_t len, const char *root, char *out, TsError *err)
{
	const char *c;

	if (len == 0 || len > TS_BACKUP_PATH_MAX)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a backup directory's path must have 1 to %d bytes, not %zu",
					 TS_BACKUP_PATH_MAX, len);
		return -1;
	}
	if (memchr(path, '\0', len) != NULL || !valid_utf8((const unsigned char *) path, len))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a backup directory's path must be UTF-8 without NUL bytes");
		return -1;
	}
	memcpy(out, path, len);
	out[len] = '\0';
	while (len > 1 && out[len - 1] == '/')
		out[--len] = '\0';
	if (out[0] != '/' || len == 1)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a backup directory must be an absolute path on the tserver's machine "
					 "(and not the root), not \"%s\"", out);
		return -1;
	}
	for (c = out; c != NULL; c = strchr(c + 1, '/'))
	{
		if (strncmp(c, "/./", 3) == 0 || strcmp(c, "/.") == 0 ||
			strncmp(c, "/../", 4) == 0 || strcmp(c, "/..") == 0 || strncmp(c, "//", 2) == 0)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
						 "a backup directory's path must not hold \".\", \"..\" or empty "
						 "components: \"%s\"", out);
			return -1;
		}
	}
	if (root != NULL && (strncmp(out, root, strlen(root)) != 0 || out[strlen(root)] != '/'))
	{
		/* not PERMISSION: that is for credentials, and this one has full access */
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a backup directory must be under \"%s\", not \"%s\"", root, out);
		return -1;
	}
	return 0;
}

/*
 * Whether existing, a directory that exists, is outside the data directory
 * (a backup there would be taken for staging, or back itself up); dir is
 * the backup's, for the message.  0, or -1 with err.
 */
static int
backup_check_outside_data(TsStore *store, const char *existing, const char *dir, TsError *err)
{
	char		real_existing[PATH_MAX];
	char		real_data[PATH_MAX];
	size_t		dlen;

	if (realpath(existing, real_existing) == NULL || realpath(store->dir, real_data) == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not resolve \"%s\": %s", existing, strerror(errno));
		return -1;
	}
	dlen = strlen(real_data);
	if (strncmp(real_existing, real_data, dlen) == 0 &&
		(real_existing[dlen] == '\0' || real_existing[dlen] == '/'))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "backup directory \"%s\" must not be inside the tserver's data directory",
					 dir);
		return -1;
	}
	return 0;
}

/*
 * Make parent, a directory that does not exist, and those of its parents
 * that do not (mode 0700, as a data directory's), once its deepest
 * existing one is known to be outside the data directory, and, when there
 * is a root (the fuzzer's), at or under it: nothing is made above it.
 * 0, or -1 with err saying what is needed.
 */
static int
backup_make_parents(TsStore *store, const char *parent, const char *dir, const char *root,
					TsError *err)
{
	char		have[TS_BACKUP_PATH_MAX + 1];
	char		make[TS_BACKUP_PATH_MAX + 1];
	struct stat st;
	char	   *slash;

	/* the deepest ancestor that exists ("" is the root) */
	strcpy(have, parent);
	for (;;)
	{
		slash = strrchr(have, '/');
		*slash = '\0';
		if (stat(have[0] != '\0' ? have : "/", &st) == 0)
			break;
		if (errno != ENOENT && errno != ENOTDIR)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not look up \"%s\": %s", have, strerror(errno));
			return -1;
		}
	}
	if (!S_ISDIR(st.st_mode))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "\"%s\" is not a directory: the backup \"%s\" cannot be made under it",
					 have, dir);
		return -1;
	}
	if (root != NULL && strncmp(have, root, strlen(root)) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "the backup root \"%s\" does not exist: the backup \"%s\" is not made",
					 root, dir);
		return -1;
	}
	if (backup_check_outside_data(store, have[0] != '\0' ? have : "/", dir, err) != 0)
		return -1;

	strcpy(make, parent);		/* each missing one made, top down */
	for (slash = make + strlen(have) + 1;; slash++)
	{
		bool		last;

		slash += strcspn(slash, "/");
		last = *slash == '\0';
		*slash = '\0';
		if (mkdir(make, 0700) != 0 && errno != EEXIST)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not create directory \"%s\" for the backup \"%s\": %s (create "
						 "it, writable by the tserver's user, or back up elsewhere)",
						 make, dir, strerror(errno));
			return -1;
		}
		strcpy(have, make);
		*strrchr(have, '/') = '\0';
		ts_sync_dir(have[0] != '\0' ? have : "/");
		if (last)
			break;
		*slash = '/';
	}
	ts_log(TS_LOG_INFO, "backup: created directory \"%s\"", parent);
	return 0;
}

/*
 * The directory must not exist, outside the data directory; its parent is
 * made when missing.  Its parent into parent.  0, or -1 with err.
 */
static int
backup_check_place(TsStore *store, const char *dir, const char *root, char *parent,
				   TsError *err)
{
	struct stat st;

	if (lstat(dir, &st) == 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "backup directory \"%s\" already exists: back up into a new directory "
					 "(the backup makes it, and its missing parents)", dir);
		return -1;
	}
	if (errno != ENOENT && errno != ENOTDIR)	/* ENOTDIR: a file above, said below */
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "backup directory \"%s\" cannot be looked up: %s", dir, strerror(errno));
		return -1;
	}
	strcpy(parent, dir);
	*strrchr(parent, '/') = '\0';
	if (parent[0] == '\0')
		strcpy(parent, "/");
	if (stat(parent, &st) != 0)
	{
		if (backup_make_parents(store, parent, dir, root, err) != 0)
			return -1;
	}
	else if (!S_ISDIR(st.st_mode))
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "\"%s\" is not a directory: the backup \"%s\" cannot be made under it",
					 parent, dir);
		return -1;
	}
	return backup_check_outside_data(store, parent, dir, err);
}

/*
 * Make dir under its name, with a manifest saying the backup is
 * incomplete, never replacing anything: made as a temporary directory of
 * parent and renamed.  0, or -1 with err.
 */
static int
backup_claim_dir(const char *dir, const char *parent, TsError *err)
{
	static const char incomplete[] =
		"tserver backup\n"
		"incomplete: the backup did not finish; this directory is not a data directory\n";
	char		tmp[TS_BACKUP_PATH_MAX + 64];
	char		path[TS_BACKUP_PATH_MAX + 96];

	snprintf(tmp, sizeof(tmp), "%s/.tserver-backup-XXXXXX", strcmp(parent, "/") == 0 ? "" : parent);
	if (mkdtemp(tmp) == NULL)	/* mode 0700, as a data directory's */
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create a directory in \"%s\": %s", parent, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", tmp, TS_BACKUP_MANIFEST);
	if (ts_file_write_synced(path, incomplete, sizeof(incomplete) - 1) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not write \"%s\": %s", path, strerror(errno));
		ts_remove_tree(tmp);
		return -1;
	}
	ts_sync_dir(tmp);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) != 0)
	{
		ts_error_set(err, errno == EEXIST ? TCOPY__ERROR_CODE__ERROR_PROTOCOL :
					 TCOPY__ERROR_CODE__ERROR_STORAGE,
					 errno == EEXIST ? "backup directory \"%s\" already exists: back up into "
					 "a new directory (the backup makes it, and its missing parents)" :
					 "could not create backup directory \"%s\": %s", dir, strerror(errno));
		ts_remove_tree(tmp);
		return -1;
	}
	ts_sync_dir(parent);
	return 0;
}

int
ts_backup_make_dir(TsStore *store, const char *path, size_t pathlen, const char *root,
				   char *dir, char *parent, TsError *err)
{
	if (backup_check_path(path, pathlen, root, dir, err) != 0 ||
		backup_check_place(store, dir, root, parent, err) != 0 ||
		backup_claim_dir(dir, parent, err) != 0)
		return -1;
	return 0;
}
