/*
 * ts_backup.c
 *		An online, consistent backup of the store into a directory of the
 *		tserver's machine, which is a data directory a tserver starts on
 *		(docs/storage.md#backups), and the check a starting store makes of
 *		a backup's manifest.
 *
 * What must be consistent is RocksDB's contents and the staging files of
 * the prepared sessions whose records are in them.  RocksDB's checkpoint
 * gives a point-in-time copy of the database (hard links of its SST files,
 * copies of its WAL); a prepared session's SST files live outside it, in
 * staging/session-N, so they are hard-linked beside the checkpoint.  Both
 * are taken under backup_lock held exclusive: a Prepare holds it shared
 * while it writes its record (its files are written and synced before),
 * and a Resolve, publish or discard, from before it touches the session
 * until its record is deleted and its directory removed.  So the records
 * in the checkpoint are exactly the records in the live store while the
 * lock is held, and their directories are whole.  publish_lock is held
 * shared beside it, as a snapshot holds it, so that no one-step publish
 * in steps (a spilled session with staged truncates) is caught between
 * them.  Open sessions, their staging and spills, scans, small commits,
 * truncates and drops do not wait: RocksDB's checkpoint is atomic with
 * respect to every write and ingestion of the store.
 *
 * Hard links do not cross file systems.  A backup into a directory on
 * another file system than the data directory's is taken, under the lock,
 * into a scratch directory in the store's staging directory (links: a few
 * milliseconds), and copied from there once the lock is released; a crash
 * leaves the scratch directory to the startup's cleanup of staging.
 *
 * The directory appears under its name with a manifest, BACKUP, saying
 * "incomplete" (it is made under a temporary name and renamed, never
 * replacing anything), and BACKUP is replaced by the complete manifest
 * last, once everything is synced.  A tserver refuses to start on a
 * directory whose BACKUP is incomplete; on a complete one it renames it
 * BACKUP.old and starts (as Postgres does with backup_label).
 */
#include "ts_session_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ts_clock.h"
#include "ts_files.h"
#include "ts_log.h"
#include "ts_store.pb-c.h"

#define BACKUP_MANIFEST_OLD "BACKUP.old"
#define BACKUP_CHECKPOINT ".checkpoint"	/* RocksDB's, moved up when made */
#define BACKUP_END_LINE "end\n"
#define BACKUP_MANIFEST_MAX (4 * 1024 * 1024)

/* The manifest's text as it is made. */
typedef struct BackupText
{
	TcBuf		buf;
	bool		oom;
} BackupText;

static void
text_put(BackupText *text, const void *bytes, size_t len)
{
	if (len == 0)				/* bytes may then be NULL: an empty buffer's */
		return;
	if (text->oom || !tc_buf_reserve(&text->buf, len))
	{
		text->oom = true;
		return;
	}
	memcpy(text->buf.data + text->buf.len, bytes, len);
	text->buf.len += len;
}

/*
 * Hard-link (or copy) the files of the prepared session rec into the
 * backup's staging directory.  A file missing from the store's is one a
 * publish ingested already (its sentinel is then in the checkpoint, and a
 * Resolve skips the ingestion): the backup mirrors the store.
 */
static int
backup_link_session(TsStore *store, const Tstore__PreparedRecord *rec, const char *dir,
					TsError *err)
{
	char		want[64];
	char		to_dir[SESSION_DIR_SIZE + 128];	/* under the backup, or its scratch */

	snprintf(want, sizeof(want), "session-%llu", (unsigned long long) rec->session_id);
	if (strcmp(rec->sst->dir, want) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "stored prepared session \"%s\" is corrupt", rec->gid);
		return -1;
	}
	snprintf(to_dir, sizeof(to_dir), "%s/staging/%s", dir, rec->sst->dir);
	if (mkdir(to_dir, 0700) != 0)
		goto fail;
	for (size_t i = 0; i <= rec->sst->n_files; i++)
	{
		const char *name = i == 0 ? rec->sst->sentinel : rec->sst->files[i - 1];
		char		from[SESSION_PATH_SIZE];
		char		to[SESSION_DIR_SIZE + 384];

		if (strchr(name, '/') != NULL || name[0] == '.' || name[0] == '\0')
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "stored prepared session \"%s\" is corrupt", rec->gid);
			return -1;
		}
		snprintf(from, sizeof(from), "%s/%s/%s", store->staging_dir, rec->sst->dir, name);
		snprintf(to, sizeof(to), "%s/%s", to_dir, name);
		if (link(from, to) == 0)
			continue;
		if (errno == ENOENT)
			continue;
		if (errno != EXDEV || ts_file_copy_synced(from, to) != 0)
			goto fail;
	}
	ts_sync_dir(to_dir);
	return 0;

fail:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not back up the files of the session prepared under \"%s\" into "
				 "\"%s\": %s", rec->gid, to_dir, strerror(errno));
	return -1;
}

/*
 * Under backup_lock, for every prepared record (ts_prepared_each): its
 * staging files, which are exactly the checkpoint's records' files, since
 * no Prepare writes a record and no Resolve deletes one meanwhile.
 */
static int
backup_link_record(TsStore *store, const Tstore__PreparedRecord *rec, void *dir, TsError *err)
{
	return rec->sst != NULL ? backup_link_session(store, rec, dir, err) : 0;
}

/*
 * Copy the regular files of from into the existing directory to, each
 * synced, then to; with depth, from's subdirectories too, each made in to.
 * 0, or -1 with err.
 */
static int
backup_copy_tree(const char *from, const char *to, int depth, TsError *err)
{
	DIR		   *d = opendir(from);
	struct dirent *entry;
	int			result = 0;

	if (d == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not open \"%s\": %s", from, strerror(errno));
		return -1;
	}
	while (result == 0 && (entry = readdir(d)) != NULL)
	{
		char		src[TS_BACKUP_PATH_MAX + 384];
		char		dst[TS_BACKUP_PATH_MAX + 384];
		struct stat st;

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		snprintf(src, sizeof(src), "%s/%s", from, entry->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", to, entry->d_name);
		if (lstat(src, &st) != 0)
			result = -1;
		else if (S_ISDIR(st.st_mode) && depth > 0)
		{
			if (mkdir(dst, 0700) != 0 && errno != EEXIST)
				result = -1;
			else if (backup_copy_tree(src, dst, depth - 1, err) != 0)
			{
				closedir(d);
				return -1;
			}
		}
		else if (S_ISREG(st.st_mode) && ts_file_copy_synced(src, dst) != 0)
			result = -1;
		if (result != 0)
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not copy \"%s\" into \"%s\": %s", src, to, strerror(errno));
	}
	closedir(d);
	if (result == 0)
		ts_sync_dir(to);
	return result;
}

/* Make dir/staging, for the prepared sessions' files; 0, or -1 with err. */
static int
backup_make_staging(const char *dir, TsError *err)
{
	char		sub[SESSION_DIR_SIZE + 64];

	snprintf(sub, sizeof(sub), "%s/staging", dir);
	if (mkdir(sub, 0700) == 0)
		return 0;
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not create \"%s\": %s", sub, strerror(errno));
	return -1;
}

/*
 * Whether dir's parent is on another file system than the store's data
 * directory (a failed stat counts as another: the copy works either way).
 */
static bool
backup_other_fs(TsStore *store, const char *parent)
{
	struct stat p,
				d;

	return stat(parent, &p) != 0 || stat(store->dir, &d) != 0 || p.st_dev != d.st_dev;
}

/* Move the files of RocksDB's checkpoint up into the backup's directory. */
static int
backup_move_up(const char *dir, TsError *err)
{
	char		from_dir[TS_BACKUP_PATH_MAX + 64];
	DIR		   *d;
	struct dirent *entry;
	int			result = 0;

	snprintf(from_dir, sizeof(from_dir), "%s/%s", dir, BACKUP_CHECKPOINT);
	if ((d = opendir(from_dir)) == NULL)
		goto fail;
	while ((entry = readdir(d)) != NULL)
	{
		char		from[TS_BACKUP_PATH_MAX + 384];
		char		to[TS_BACKUP_PATH_MAX + 320];

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		snprintf(from, sizeof(from), "%s/%s", from_dir, entry->d_name);
		snprintf(to, sizeof(to), "%s/%s", dir, entry->d_name);
		if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0)
		{
			result = -1;
			break;
		}
	}
	closedir(d);
	if (result == 0 && rmdir(from_dir) == 0)
	{
		ts_sync_dir(dir);
		return 0;
	}
fail:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
				 "could not move the checkpoint into \"%s\": %s", dir, strerror(errno));
	return -1;
}

/* The bytes of the regular files in dir and, with depth, its subdirectories. */
static uint64_t
tree_bytes(const char *dir, int depth)
{
	DIR		   *d = opendir(dir);
	struct dirent *entry;
	uint64_t	bytes = 0;

	if (d == NULL)
		return 0;
	while ((entry = readdir(d)) != NULL)
	{
		char		path[TS_BACKUP_PATH_MAX + 600];
		struct stat st;

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISREG(st.st_mode))
			bytes += (uint64_t) st.st_size;
		else if (S_ISDIR(st.st_mode) && depth > 0)
			bytes += tree_bytes(path, depth - 1);
	}
	closedir(d);
	return bytes;
}

/* Append gid to buf, its bytes outside printable ASCII and '\\' as \xHH. */
static void
append_escaped(BackupText *buf, const char *gid)
{
	for (const unsigned char *c = (const unsigned char *) gid; *c != '\0'; c++)
	{
		char		hex[5];

		if (*c < 0x20 || *c >= 0x7f || *c == '\\')
		{
			snprintf(hex, sizeof(hex), "\\x%02x", *c);
			text_put(buf, hex, 4);
		}
		else
			text_put(buf, c, 1);
	}
}

/*
 * Open the backup read-only, as a tserver will: its tables, its prepared
 * sessions (each with its staging directory, if it spilled) and its
 * sequence number, into info and the manifest's lines.
 */
static int
backup_read_back(TsStore *store, const char *dir, TcArena *arena, TsBackupInfo *info,
				 BackupText *lines, TsError *err)
{
	const char *cf_names[2] = {"default", "meta"};
	const rocksdb_options_t *cf_options[2] = {store->options, store->options};
	rocksdb_column_family_handle_t *handles[2] = {NULL, NULL};
	size_t		plen = strlen(TS_META_PREPARED_PREFIX);
	size_t		tlen = strlen(TS_META_TABLE_PREFIX);
	size_t		cap = 0;
	char	   *errptr = NULL;
	rocksdb_t  *db;
	rocksdb_iterator_t *it;
	int			result = 0;

	db = rocksdb_open_for_read_only_column_families(store->options, dir, 2, cf_names,
													cf_options, handles, 0, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not open the backup to check it", errptr);
		return -1;
	}
	info->sequence = rocksdb_get_latest_sequence_number(db);
	it = rocksdb_create_iterator_cf(db, store->read_default, handles[1]);
	for (rocksdb_iter_seek_to_first(it); result == 0 && rocksdb_iter_valid(it);
		 rocksdb_iter_next(it))
	{
		size_t		keylen,
					vallen;
		const char *key = rocksdb_iter_key(it, &keylen);
		const char *val = rocksdb_iter_value(it, &vallen);
		Tstore__PreparedRecord *rec;

		if (keylen > tlen && memcmp(key, TS_META_TABLE_PREFIX, tlen) == 0)
			info->tables++;
		if (keylen <= plen || memcmp(key, TS_META_PREPARED_PREFIX, plen) != 0)
			continue;
		rec = tstore__prepared_record__unpack(NULL, vallen, (const uint8_t *) val);
		if (rec == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE, "a prepared record in the backup is corrupt");
			result = -1;
			break;
		}
		if (rec->sst != NULL)
		{
			char		sdir[TS_BACKUP_PATH_MAX + 128];
			struct stat st;

			snprintf(sdir, sizeof(sdir), "%s/staging/%s", dir, rec->sst->dir);
			if (stat(sdir, &st) != 0)
			{
				ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL,
							 "the backup holds the session prepared under \"%s\" without its "
							 "files", rec->gid);
				result = -1;
			}
		}
		if (result == 0 && info->nprepared == cap)
		{
			char	  **grown = tc_arena_alloc(arena, (cap = cap ? cap * 2 : 16) * sizeof(char *));

			if (grown == NULL)
				result = -1;
			else if (info->nprepared > 0)
				memcpy(grown, info->prepared, info->nprepared * sizeof(char *));
			info->prepared = grown;
		}
		if (result == 0 &&
			(info->prepared[info->nprepared] = tc_arena_memdup(arena, rec->gid,
															   strlen(rec->gid) + 1)) == NULL)
			result = -1;
		if (result == 0)
		{
			info->nprepared++;
			text_put(lines, "prepared: ", 10);
			append_escaped(lines, rec->gid);
			text_put(lines, "\n", 1);
		}
		else if (err->code == TCOPY__ERROR_CODE__ERROR_NONE)
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		tstore__prepared_record__free_unpacked(rec, NULL);
	}
	rocksdb_iter_destroy(it);
	for (int i = 0; i < 2; i++)
		if (handles[i] != NULL)
			rocksdb_column_family_handle_destroy(handles[i]);
	rocksdb_close(db);
	return result;
}

/* Replace the incomplete manifest by the complete one, synced: the last step. */
static int
backup_write_manifest(TsStore *store, const char *dir, const TsBackupInfo *info,
					  const BackupText *prepared_lines, TsError *err)
{
	char		path[TS_BACKUP_PATH_MAX + 32];
	char		tmp[TS_BACKUP_PATH_MAX + 32];
	char		head[PATH_MAX + 512];
	time_t		now = time(NULL);
	struct tm	tm;
	char		stamp[32];
	BackupText	text;
	int			n;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(head, sizeof(head),
				 "tserver backup\n"
				 "taken at: %s\n"
				 "from: %s\n"
				 "sequence: %llu\n"
				 "tables: %u\n"
				 "prepared sessions: %zu\n",
				 stamp, store->dir, (unsigned long long) info->sequence, info->tables,
				 info->nprepared);
	memset(&text, 0, sizeof(text));
	text.oom = prepared_lines->oom;
	text_put(&text, head, (size_t) n);
	text_put(&text, prepared_lines->buf.data, prepared_lines->buf.len);
	n = snprintf(head, sizeof(head), "bytes: %llu\n" BACKUP_END_LINE,
				 (unsigned long long) info->bytes);
	text_put(&text, head, (size_t) n);
	snprintf(path, sizeof(path), "%s/%s", dir, TS_BACKUP_MANIFEST);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, TS_BACKUP_MANIFEST);
	if (text.oom || ts_file_write_synced(tmp, (const char *) text.buf.data, text.buf.len) != 0 ||
		rename(tmp, path) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not write \"%s\": %s", path, text.oom ? "out of memory" : strerror(errno));
		tc_buf_free(&text.buf);
		return -1;
	}
	tc_buf_free(&text.buf);
	ts_sync_dir(dir);
	return 0;
}

int
ts_store_backup(TsStore *store, const char *path, size_t pathlen, const char *root,
				TcArena *arena, TsBackupInfo *info, TsError *err)
{
	char		dir[TS_BACKUP_PATH_MAX + 1];
	char		parent[TS_BACKUP_PATH_MAX + 1];
	char		sub[SESSION_DIR_SIZE + 64];	/* under dir, or under scratch */
	char		scratch[SESSION_DIR_SIZE] = "";
	const char *take;			/* where the checkpoint and links go */
	uint64_t	start = ts_monotonic_us();
	uint64_t	locked;
	rocksdb_checkpoint_t *checkpoint = NULL;
	char	   *errptr = NULL;
	BackupText	lines;
	int			result;

	memset(info, 0, sizeof(*info));
	if (ts_backup_make_dir(store, path, pathlen, root, dir, parent, err) != 0)
		return -1;
	memset(&lines, 0, sizeof(lines));
	if (backup_make_staging(dir, err) != 0)
		goto fail;
	/* on another file system: links into a scratch directory, copied after */
	take = dir;
	if (backup_other_fs(store, parent))
	{
		snprintf(scratch, sizeof(scratch), "%s/backup-XXXXXX", store->staging_dir);
		if (mkdtemp(scratch) == NULL)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not create a directory in \"%s\": %s", store->staging_dir,
						 strerror(errno));
			scratch[0] = '\0';
			goto fail;
		}
		if (backup_make_staging(scratch, err) != 0)
			goto fail;
		take = scratch;
	}

	if ((checkpoint = ts_storage_checkpoint_begin(store, err)) == NULL)
		goto fail;

	/* the consistent point: no prepared record comes or goes meanwhile */
	snprintf(sub, sizeof(sub), "%s/%s", take, BACKUP_CHECKPOINT);
	locked = ts_monotonic_us();
	pthread_rwlock_wrlock(&store->reg->backup_lock);
	pthread_rwlock_rdlock(&store->reg->publish_lock);
	/* no flush: the WAL written since the flush above is copied */
	rocksdb_checkpoint_create(checkpoint, sub, UINT64_MAX, &errptr);
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not take a checkpoint", errptr);
		result = -1;
	}
	else
		result = ts_prepared_each(store, backup_link_record, (void *) take, err);
	pthread_rwlock_unlock(&store->reg->publish_lock);
	pthread_rwlock_unlock(&store->reg->backup_lock);
	info->locked_us = ts_monotonic_us() - locked;
	rocksdb_checkpoint_object_destroy(checkpoint);
	if (result != 0)
		goto fail;

	snprintf(sub, sizeof(sub), "%s/staging", take);
	ts_sync_dir(sub);
	if (take == scratch)
	{
		/* the copy, holding nothing; the checkpoint's files straight up */
		char		to[TS_BACKUP_PATH_MAX + 64];

		snprintf(to, sizeof(to), "%s/staging", dir);
		if (backup_copy_tree(sub, to, 1, err) != 0)
			goto fail;
		snprintf(sub, sizeof(sub), "%s/%s", scratch, BACKUP_CHECKPOINT);
		if (backup_copy_tree(sub, dir, 0, err) != 0)
			goto fail;
		ts_remove_tree(scratch);
		scratch[0] = '\0';
		ts_log(TS_LOG_INFO, "backup into \"%s\": on another file system, taken into %s/backup-* "
			   "under the lock and copied after it", dir, store->staging_dir);
	}
	else if (backup_move_up(dir, err) != 0)
		goto fail;
	if (backup_read_back(store, dir, arena, info, &lines, err) != 0)
		goto fail;
	info->bytes = tree_bytes(dir, 2);
	if (backup_write_manifest(store, dir, info, &lines, err) != 0)
		goto fail;
	tc_buf_free(&lines.buf);
	info->took_ms = (ts_monotonic_us() - start) / 1000;
	ts_log(TS_LOG_INFO, "backup into \"%s\": %u tables, %zu prepared sessions, %llu bytes, "
		   "sequence %llu; prepares and resolves waited %.3f ms, %.3f s in all", dir,
		   info->tables, info->nprepared, (unsigned long long) info->bytes,
		   (unsigned long long) info->sequence, info->locked_us / 1000.0,
		   (ts_monotonic_us() - start) / 1e6);
	return 0;

fail:
	tc_buf_free(&lines.buf);
	if (scratch[0] != '\0')
		ts_remove_tree(scratch);
	ts_log(TS_LOG_WARNING, "backup into \"%s\" failed: %s", dir, err->message);
	/* its manifest says incomplete, should the removal not finish */
	if (ts_remove_tree(dir) != 0)
		ts_log(TS_LOG_WARNING, "could not remove the failed backup \"%s\": %s", dir,
			   strerror(errno));
	return -1;
}

int
ts_backup_check_start(const char *dir, TsError *err)
{
	char		path[PATH_MAX];
	char		old[PATH_MAX];
	char	   *text;
	FILE	   *f;
	size_t		len;
	size_t		elen = strlen(BACKUP_END_LINE);

	snprintf(path, sizeof(path), "%s/%s", dir, TS_BACKUP_MANIFEST);
	if ((f = fopen(path, "re")) == NULL)
	{
		if (errno == ENOENT)
			return 0;
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not read \"%s\": %s", path, strerror(errno));
		return -1;
	}
	text = malloc(BACKUP_MANIFEST_MAX + 1);
	len = text != NULL ? fread(text, 1, BACKUP_MANIFEST_MAX, f) : 0;
	fclose(f);
	if (text == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	text[len] = '\0';
	if (len < elen + 1 || strcmp(text + len - elen, BACKUP_END_LINE) != 0 ||
		text[len - elen - 1] != '\n')
	{
		free(text);
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "\"%s\" is an incomplete backup: the backup into it did not finish "
					 "(its %s file has no end line); take another", dir, TS_BACKUP_MANIFEST);
		return -1;
	}
	ts_log(TS_LOG_INFO, "starting on a backup (%s renamed %s):\n%.*s", TS_BACKUP_MANIFEST,
		   BACKUP_MANIFEST_OLD, (int) (len - elen), text);
	free(text);
	snprintf(old, sizeof(old), "%s/%s", dir, BACKUP_MANIFEST_OLD);
	if (rename(path, old) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not rename \"%s\": %s", path, strerror(errno));
		return -1;
	}
	ts_sync_dir(dir);
	return 0;
}
