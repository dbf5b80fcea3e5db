/*
 * cli_scan.c
 *		tserver-cli scan: a table's committed rows as CSV, a count or a
 *		checksum, with a projection and bounds on the first key column.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append len bytes to buf; false when out of memory. */
static bool
cli_append(TcBuf *buf, const void *bytes, size_t len)
{
	if (!tc_buf_reserve(buf, len))
		return false;
	memcpy(buf->data + buf->len, bytes, len);
	buf->len += len;
	return true;
}

/*
 * Append row's CSV line (no newline) to line, its values laid out by
 * kinds[ncolumns]; add its INT values to *sum (wrapping).  Returns 0, or -1
 * with a message on stderr when the row does not fit the kinds or memory
 * runs out.
 */
static int
cli_format_row(const Tcopy__Row *row, const Tcopy__Kind *kinds, size_t ncolumns,
			   TcBuf *line, uint64_t *sum)
{
	size_t		next_int = 0;
	size_t		next_float = 0;
	size_t		next_blob = 0;
	size_t		next_null = 0;

	for (size_t c = 0; c < ncolumns; c++)
	{
		char		number[32];
		int			numlen = 0;

		if (c > 0 && !cli_append(line, ",", 1))
			goto oom;
		if (next_null < row->n_nulls && row->nulls[next_null] == c)
		{
			next_null++;
			continue;
		}
		switch (kinds[c])
		{
			case TCOPY__KIND__KIND_BOOL:
			case TCOPY__KIND__KIND_INT:
				if (next_int >= row->n_ints)
					goto misfit;
				if (kinds[c] == TCOPY__KIND__KIND_BOOL)
					numlen = snprintf(number, sizeof(number), "%s",
									  row->ints[next_int] ? "t" : "f");
				else
				{
					numlen = snprintf(number, sizeof(number), "%" PRId64, row->ints[next_int]);
					*sum += (uint64_t) row->ints[next_int];
				}
				next_int++;
				break;
			case TCOPY__KIND__KIND_FLOAT:
				if (next_float >= row->n_floats)
					goto misfit;
				numlen = snprintf(number, sizeof(number), "%.17g", row->floats[next_float++]);
				break;
			case TCOPY__KIND__KIND_BYTES:
				{
					const ProtobufCBinaryData *blob;

					if (next_blob >= row->n_blobs)
						goto misfit;
					blob = &row->blobs[next_blob++];

					/* quote like Postgres' CSV, so that "" differs from NULL */
					if (blob->len > 0 && memchr(blob->data, ',', blob->len) == NULL &&
						memchr(blob->data, '"', blob->len) == NULL &&
						memchr(blob->data, '\n', blob->len) == NULL &&
						memchr(blob->data, '\r', blob->len) == NULL)
					{
						if (!cli_append(line, blob->data, blob->len))
							goto oom;
						break;
					}
					if (!cli_append(line, "\"", 1))
						goto oom;
					for (size_t i = 0; i < blob->len; i++)
					{
						if (blob->data[i] == '"' && !cli_append(line, "\"", 1))
							goto oom;
						if (!cli_append(line, &blob->data[i], 1))
							goto oom;
					}
					if (!cli_append(line, "\"", 1))
						goto oom;
				}
				break;
			default:
				goto misfit;
		}
		if (numlen > 0 && !cli_append(line, number, (size_t) numlen))
			goto oom;
	}
	if (next_int != row->n_ints || next_float != row->n_floats ||
		next_blob != row->n_blobs || next_null != row->n_nulls)
		goto misfit;
	return 0;

misfit:
	cli_fail("tserver sent a row that does not fit the table's columns");
	return -1;
oom:
	cli_fail("out of memory");
	return -1;
}

/*
 * scan: open the table to learn its schema, then print its rows as CSV, or
 * their count, or a checksum (row count, sum of INT values, FNV-1a 64 of
 * the CSV lines).
 */
int
cli_scan(const CliOptions *opts)
{
	Tcopy__Scan request = TCOPY__SCAN__INIT;
	Tcopy__KeyBound lower = TCOPY__KEY_BOUND__INIT;
	Tcopy__KeyBound upper = TCOPY__KEY_BOUND__INIT;
	Tcopy__Row lower_key = TCOPY__ROW__INIT;
	Tcopy__Row upper_key = TCOPY__ROW__INIT;
	int64_t		lower_int = opts->lower;
	int64_t		upper_int = opts->upper;
	double		lower_float = (double) opts->lower;
	double		upper_float = (double) opts->upper;
	bool		count_only = strcmp(opts->format, "count") == 0;
	bool		checksum = strcmp(opts->format, "checksum") == 0;
	TcClient   *client;
	Tcopy__Schema *schema = NULL;
	uint32_t   *projection = NULL;
	Tcopy__Kind *kinds = NULL;
	size_t		ncolumns;
	uint32_t	table_id;
	TcBuf		line = {0};
	uint64_t	nrows = 0;
	uint64_t	sum = 0;
	uint64_t	hash = UINT64_C(0xcbf29ce484222325);
	int			status = 1;

	client = cli_connect(opts);
	if (client == NULL)
		return 1;
	if (tc_client_open_table(client, opts->table, NULL, false, &table_id, NULL, &schema) < 0)
		goto client_err;

	if (opts->columns != NULL)
	{
		int			n = cli_column_indexes(schema, opts->table, opts->columns, &projection);

		if (n < 0)
			goto err;
		ncolumns = (size_t) n;
		request.n_columns = ncolumns;
		request.columns = projection;
	}
	else
		ncolumns = schema->n_columns;
	kinds = malloc((ncolumns > 0 ? ncolumns : 1) * sizeof(Tcopy__Kind));
	if (kinds == NULL)
	{
		cli_fail("out of memory");
		goto err;
	}
	for (size_t i = 0; i < ncolumns; i++)
		kinds[i] = schema->columns[projection ? projection[i] : i]->kind;

	if (opts->has_lower || opts->has_upper)
	{
		Tcopy__Kind key_kind;

		if (schema->n_key == 0 || schema->key[0] >= schema->n_columns)
		{
			cli_fail("table \"%s\" has no key to bound", opts->table);
			goto err;
		}
		key_kind = schema->columns[schema->key[0]]->kind;
		if (key_kind == TCOPY__KIND__KIND_FLOAT)
		{
			lower_key.n_floats = upper_key.n_floats = 1;
			lower_key.floats = &lower_float;
			upper_key.floats = &upper_float;
		}
		else if (key_kind == TCOPY__KIND__KIND_INT || key_kind == TCOPY__KIND__KIND_BOOL)
		{
			lower_key.n_ints = upper_key.n_ints = 1;
			lower_key.ints = &lower_int;
			upper_key.ints = &upper_int;
		}
		else
		{
			cli_fail("--lower and --upper need a numeric first key column, but \"%s\" is not",
					 schema->columns[schema->key[0]]->name);
			goto err;
		}
		lower.key = &lower_key;
		upper.key = &upper_key;
		lower.inclusive = upper.inclusive = !opts->exclusive;
		if (opts->has_lower)
			request.lower = &lower;
		if (opts->has_upper)
			request.upper = &upper;
	}
	request.table_id = table_id;
	request.batch_rows = opts->batch_rows;
	request.limit = opts->limit;
	request.packed = count_only;	/* counted, not read: the extension's layout */

	if (tc_client_scan_start(client, &request) < 0)
		goto client_err;
	for (;;)
	{
		Tcopy__ScanBatch *batch;

		if (tc_client_scan_next(client, &batch) < 0)
			goto client_err;
		nrows += batch->n_rows + batch->n_packed;
		for (size_t r = 0; r < batch->n_rows && !count_only; r++)
		{
			line.len = 0;
			if (cli_format_row(batch->rows[r], kinds, ncolumns, &line, &sum) < 0 ||
				!cli_append(&line, "\n", 1))
				goto err;
			if (checksum)
			{
				for (size_t i = 0; i < line.len; i++)
					hash = (hash ^ line.data[i]) * UINT64_C(0x100000001b3);
			}
			else
				fwrite(line.data, 1, line.len, stdout);
		}
		if (batch->done)
			break;
	}
	if (count_only)
		printf("%" PRIu64 "\n", nrows);
	else if (checksum)
		printf("rows %" PRIu64 " sum %" PRId64 " hash %016" PRIx64 "\n",
			   nrows, (int64_t) sum, hash);
	if (fflush(stdout) != 0)
	{
		cli_fail("could not write to stdout: %s", strerror(errno));
		goto err;
	}
	status = 0;
	goto err;

client_err:
	cli_client_fail(client);
err:
	tc_buf_free(&line);
	free(kinds);
	free(projection);
	if (schema != NULL)
		tcopy__schema__free_unpacked(schema, NULL);
	tc_client_close(client);
	return status;
}
