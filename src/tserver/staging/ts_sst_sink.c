/*
 * ts_sst_sink.c
 *		Writing a session's SST files (SstSink, ts_staging.h): the direct
 *		files of its sorted spills and the files of each part of its merge,
 *		cut at sst_target_bytes, in the staging directory, to be ingested
 *		together at commit; on a replica group's member, each shipped to
 *		the other members as it is finished.
 */
#include "ts_staging.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ts_group.h"
#include "ts_key.h"
#include "ts_record.h"

/* An empty sink of session: of merge part part, or -1 for the direct files. */
void
ts_sst_sink_init(SstSink *sink, TsSession *session, int part)
{
	memset(sink, 0, sizeof(*sink));
	sink->session = session;
	sink->part = part;
}

/* The session's SST sink, made on first use (with the staging directory). */
SstSink *
ts_sst_sink_get(TsSession *session, TsError *err)
{
	SstSink    *sink;

	if (session->sst != NULL)
		return session->sst;
	if (ts_session_make_dir(session) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
					 "could not create staging directory \"%s\": %s", session->dir,
					 strerror(errno));
		return NULL;
	}
	sink = malloc(sizeof(SstSink));
	if (sink == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return NULL;
	}
	ts_sst_sink_init(sink, session, -1);
	session->sst = sink;
	return sink;
}

/*
 * Add a record to the current SST file, starting a new one as needed; keys
 * must come in increasing order.  A TsRunPut, for the merge.
 */
int
ts_sst_sink_put(void *arg, const uint8_t *key, uint32_t keylen,
				const uint8_t *value, uint32_t valuelen, TsError *err)
{
	SstSink    *sink = arg;
	TsStore    *store = sink->session->store;
	char	   *errptr = NULL;
	int			mark = ts_value_mark(value, valuelen);
	uint32_t	table_id = keylen < TS_TABLE_ID_SIZE ? 0 : ts_get_be32(key);

	/*
	 * A file holds one table's keys: the rows of tables that interleave in
	 * a session (partitions on one tserver) go to files that do not
	 * overlap, and a truncate drops whole files
	 */
	if (sink->writer != NULL && table_id != sink->table_id &&
		ts_sst_sink_finish_file(sink, err) != 0)
		return -1;

	/* an UPDATE or DELETE is not checked against anything */
	if (ts_conflicts_count(&sink->session->conflicts, NULL) > 0 && mark == 0 && !sink->unchecked)
	{
		const TsConflicts *conflicts = &sink->session->conflicts;
		Tcopy__OnConflict policy = ts_conflicts_policy(conflicts, key, keylen);
		bool		skip;

		if (policy != TCOPY__ON_CONFLICT__ON_CONFLICT_REPLACE)
		{
			/* a stored key: kept (ignore) or an error, as the table says */
			if (ts_stored_check_policy(store, policy, conflicts, sink->session->truncates,
									   sink->session->ntruncates, &sink->stored, key, keylen,
									   value, valuelen, &skip, err) != 0)
				return -1;
			if (skip)
				return 0;
			/* the range that concurrent sessions check (ts_key_claims.c) */
			if (ts_key_ranges_add_ascending(&sink->ranges, key, keylen) != 0)
				goto oom;
		}
	}
	if (sink->writer == NULL)
	{
		char	  **grown = realloc(sink->files, (sink->nfiles + 1) * sizeof(char *));
		uint32_t   *tables;
		char		path[SESSION_PATH_SIZE];

		if (grown == NULL)
			goto oom;
		sink->files = grown;
		tables = realloc(sink->file_tables, (sink->nfiles + 1) * sizeof(uint32_t));
		if (tables == NULL)
			goto oom;
		sink->file_tables = tables;
		if (sink->part < 0)
			snprintf(path, sizeof(path), "%s/ingest-%06zu.sst", sink->session->dir, sink->named);
		else
			snprintf(path, sizeof(path), "%s/merge-%02d-%06zu.sst", sink->session->dir,
					 sink->part, sink->named);
		if ((sink->files[sink->nfiles] = strdup(path)) == NULL)
			goto oom;
		sink->file_tables[sink->nfiles] = table_id;
		sink->nfiles++;
		sink->named++;
		sink->writer = rocksdb_sstfilewriter_create(store->env_options, store->options);
		rocksdb_sstfilewriter_open(sink->writer, path, &errptr);
		if (errptr != NULL)
			goto rocks_err;
		sink->entries_in_file = 0;
		sink->table_id = table_id;
	}
	if (mark == TS_VALUE_DELETE)
		rocksdb_sstfilewriter_delete(sink->writer, (const char *) key, keylen, &errptr);
	else
	{
		value = ts_value_unmarked(value, &valuelen);
		rocksdb_sstfilewriter_put(sink->writer, (const char *) key, keylen,
								  (const char *) value, valuelen, &errptr);
	}
	if (errptr != NULL)
		goto rocks_err;
	if (++sink->entries_in_file % 4096 == 0)
	{
		uint64_t	size = 0;

		rocksdb_sstfilewriter_file_size(sink->writer, &size);
		if (size >= store->opts.sst_target_bytes)
			return ts_sst_sink_finish_file(sink, err);
	}
	return 0;

rocks_err:
	ts_error_rocksdb(err, "could not write SST file", errptr);
	return -1;
oom:
	ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory merging staged runs");
	return -1;
}

/* Add a staged record (ts_record.h). */
int
ts_sst_sink_put_record(SstSink *sink, const uint8_t *rec, TsError *err)
{
	uint32_t	keylen = ts_record_keylen(rec);

	return ts_sst_sink_put(sink, ts_record_key(rec), keylen,
						   ts_record_value(rec, keylen), ts_record_valuelen(rec), err);
}

/* Finish the SST file being written, if any. */
int
ts_sst_sink_finish_file(SstSink *sink, TsError *err)
{
	char	   *errptr = NULL;
	uint64_t	size = 0;

	ts_stored_check_end(&sink->stored);
	if (sink->writer == NULL)
		return 0;
	rocksdb_sstfilewriter_finish(sink->writer, &errptr);
	rocksdb_sstfilewriter_file_size(sink->writer, &size);
	sink->finished_bytes += size;
	rocksdb_sstfilewriter_destroy(sink->writer);
	sink->writer = NULL;
	if (errptr != NULL)
	{
		ts_error_rocksdb(err, "could not write SST file", errptr);
		return -1;
	}
	/*
	 * A replica group's other members get each file as soon as it is
	 * finished, in the background while the session goes on loading
	 * (ts_group_ship.c), not all at its prepare
	 */
	if (sink->session->store->group != NULL)
		ts_group_ship_async(sink->session->store->group, sink->files[sink->nfiles - 1],
							&sink->session->shipping);
	return 0;
}

/* Bytes in the sink's files so far, the one being written included. */
uint64_t
ts_sst_sink_bytes(SstSink *sink)
{
	uint64_t	size = 0;

	if (sink->writer != NULL)
		rocksdb_sstfilewriter_file_size(sink->writer, &size);
	return sink->finished_bytes + size;
}

/*
 * Append the files of from, finished, to those of sink, after them in
 * precedence; from keeps none of them.  0, or -1 with err when out of
 * memory (from keeps its files).
 */
int
ts_sst_sink_take(SstSink *sink, SstSink *from, TsError *err)
{
	char	  **grown;
	uint32_t   *tables;

	if (ts_key_ranges_merge(&sink->ranges, &from->ranges) != 0)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	if (from->nfiles == 0)
		return 0;
	grown = realloc(sink->files, (sink->nfiles + from->nfiles) * sizeof(char *));
	if (grown == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	sink->files = grown;
	tables = realloc(sink->file_tables, (sink->nfiles + from->nfiles) * sizeof(uint32_t));
	if (tables == NULL)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_INTERNAL, "out of memory");
		return -1;
	}
	sink->file_tables = tables;
	memcpy(sink->files + sink->nfiles, from->files, from->nfiles * sizeof(char *));
	memcpy(sink->file_tables + sink->nfiles, from->file_tables, from->nfiles * sizeof(uint32_t));
	sink->nfiles += from->nfiles;
	sink->finished_bytes += from->finished_bytes;
	from->nfiles = 0;
	return 0;
}

/* Release the sink's writer and file names (not the files, nor sink). */
void
ts_sst_sink_free(SstSink *sink)
{
	ts_stored_check_end(&sink->stored);
	if (sink->writer != NULL)
		rocksdb_sstfilewriter_destroy(sink->writer);
	for (size_t i = 0; i < sink->nfiles; i++)
		free(sink->files[i]);
	free(sink->files);
	free(sink->file_tables);
	ts_key_ranges_free(&sink->ranges);
}

/*
 * A TRUNCATE staged after the session wrote table_id: remove the table's
 * files (a file holds one table's keys), the one being written finished
 * first, once every file queued for the replica group's members is
 * shipped (a member's copy of a removed file is never named to it, and
 * goes with the session's directory).  0, or -1 with err.
 */
int
ts_sst_sink_drop_table(SstSink *sink, uint32_t table_id, TsError *err)
{
	size_t		out = 0;

	if (sink->writer != NULL && sink->table_id == table_id &&
		ts_sst_sink_finish_file(sink, err) != 0)
		return -1;
	if (sink->session->store->group != NULL &&
		ts_group_ship_wait(&sink->session->shipping, err) != 0)
		return -1;
	for (size_t i = 0; i < sink->nfiles; i++)
	{
		struct stat st;

		/* the file being written is the last, and of another table */
		if (sink->file_tables[i] != table_id)
		{
			sink->files[out] = sink->files[i];
			sink->file_tables[out++] = sink->file_tables[i];
			continue;
		}
		if (stat(sink->files[i], &st) == 0 && (uint64_t) st.st_size <= sink->finished_bytes)
			sink->finished_bytes -= (uint64_t) st.st_size;
		if (unlink(sink->files[i]) != 0 && errno != ENOENT)
		{
			ts_error_set(err, TCOPY__ERROR_CODE__ERROR_STORAGE,
						 "could not remove \"%s\": %s", sink->files[i], strerror(errno));
			/* what is left of the list is still right */
			for (size_t j = i; j < sink->nfiles; j++)
			{
				sink->files[out] = sink->files[j];
				sink->file_tables[out++] = sink->file_tables[j];
			}
			sink->nfiles = out;
			return -1;
		}
		free(sink->files[i]);
	}
	sink->nfiles = out;
	return 0;
}
