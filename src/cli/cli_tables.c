/*
 * cli_tables.c
 *		tserver-cli's table commands: create, truncate, drop.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * create: parse NAME:KIND[:TYPE[:TYPMOD]],... and the key names into a
 * schema and open the table with create.  TYPE defaults to the Postgres
 * type a kind stands for, TYPMOD to -1 (none), as Postgres' atttypmod.
 */
int
cli_create(const CliOptions *opts)
{
	static const struct
	{
		const char *name;
		Tcopy__Kind kind;
		const char *default_type;
	}			kind_names[] = {
		{"bool", TCOPY__KIND__KIND_BOOL, "bool"},
		{"int", TCOPY__KIND__KIND_INT, "int8"},
		{"float", TCOPY__KIND__KIND_FLOAT, "float8"},
		{"bytes", TCOPY__KIND__KIND_BYTES, "text"},
	};
	Tcopy__Schema schema = TCOPY__SCHEMA__INIT;
	char	   *spec = strdup(opts->columns);
	Tcopy__Column *columns = NULL;
	Tcopy__Column **column_ptrs = NULL;
	uint32_t   *key = NULL;
	TcClient   *client = NULL;
	size_t		count = 1;
	char	   *save = NULL;
	uint32_t	table_id;
	bool		created;
	int			status = 1;

	if (spec == NULL)
		return cli_fail("out of memory");
	for (const char *p = spec; *p; p++)
		count += (*p == ',');
	columns = calloc(count, sizeof(Tcopy__Column));
	column_ptrs = calloc(count, sizeof(Tcopy__Column *));
	if (columns == NULL || column_ptrs == NULL)
	{
		cli_fail("out of memory");
		goto err;
	}
	for (char *item = strtok_r(spec, ",", &save); item != NULL;
		 item = strtok_r(NULL, ",", &save))
	{
		Tcopy__Column *column = &columns[schema.n_columns];
		char	   *kind = strchr(item, ':');
		char	   *type = NULL;
		char	   *typmod = NULL;
		size_t		k;

		if (kind == NULL || kind == item)
			cli_usage_error("column \"%s\" needs the form NAME:KIND[:TYPE[:TYPMOD]]", item);
		*kind++ = '\0';
		if ((type = strchr(kind, ':')) != NULL)
		{
			*type++ = '\0';
			if ((typmod = strchr(type, ':')) != NULL)
				*typmod++ = '\0';
		}
		for (k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
		{
			if (strcmp(kind, kind_names[k].name) == 0)
				break;
		}
		if (k == sizeof(kind_names) / sizeof(kind_names[0]))
			cli_usage_error("column \"%s\" has unknown kind \"%s\" (expected bool, int, float or bytes)",
							item, kind);
		tcopy__column__init(column);
		column->name = item;
		column->kind = kind_names[k].kind;
		column->type_name = (char *) (type != NULL && *type ? type : kind_names[k].default_type);
		column->typmod = typmod != NULL ?
			(int32_t) cli_parse_int("typmod", typmod, INT32_MIN, INT32_MAX) : -1;
		column_ptrs[schema.n_columns++] = column;
	}
	if (schema.n_columns == 0)
		cli_usage_error("--columns names no column");
	schema.columns = column_ptrs;

	if (opts->key != NULL)
	{
		int			n = cli_column_indexes(&schema, opts->table, opts->key, &key);

		if (n < 0)
		{
			status = 2;
			goto err;
		}
		schema.n_key = (size_t) n;
		schema.key = key;
	}

	client = cli_connect(opts);
	if (client == NULL)
		goto err;
	if (tc_client_open_table(client, opts->table, &schema, true, &table_id, &created, NULL) < 0)
	{
		cli_client_fail(client);
		goto err;
	}
	printf("%s table \"%s\" (id %u)\n", created ? "created" : "found", opts->table, table_id);
	status = 0;

err:
	tc_client_close(client);
	free(key);
	free(column_ptrs);
	free(columns);
	free(spec);
	return status;
}

/* truncate and drop: look the table up, then apply op. */
static int
cli_table_op(const CliOptions *opts, Tcopy__TableOpKind op, const char *done)
{
	TcClient   *client = cli_connect(opts);
	uint32_t	table_id;

	if (client == NULL)
		return 1;
	if (tc_client_open_table(client, opts->table, NULL, false, &table_id, NULL, NULL) < 0 ||
		tc_client_table_op(client, op, table_id) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	printf("%s table \"%s\"\n", done, opts->table);
	tc_client_close(client);
	return 0;
}

/*
 * labels: the table's published load labels, one a line, "label\tpublished
 * at"; with --forget, forget that one.
 */
int
cli_labels(const CliOptions *opts)
{
	TcClient   *client = cli_connect(opts);
	Tcopy__LabelList *list = NULL;
	TcLabelAnswer answer;
	uint32_t	table_id;

	if (client == NULL)
		return 1;
	if (tc_client_open_table(client, opts->table, NULL, false, &table_id, NULL, NULL) < 0 ||
		(opts->forget != NULL ?
		 tc_client_forget_label(client, table_id, opts->forget, &answer) :
		 tc_client_list_labels(client, table_id, &list)) < 0)
	{
		cli_client_fail(client);
		tc_client_close(client);
		return 1;
	}
	if (opts->forget != NULL)
		printf("%s\n", answer.state == TCOPY__LABEL_STATE__LABEL_PUBLISHED ?
			   "forgotten" : "not published");
	else
	{
		for (size_t i = 0; i < list->n_labels; i++)
		{
			char		at[48];

			cli_format_ms(list->labels[i]->published_at_ms, at, sizeof(at));
			printf("%s\t%s\n", list->labels[i]->label, at);
		}
		tcopy__label_list__free_unpacked(list, NULL);
	}
	tc_client_close(client);
	return 0;
}

int
cli_truncate(const CliOptions *opts)
{
	return cli_table_op(opts, TCOPY__TABLE_OP_KIND__TABLE_OP_TRUNCATE, "truncated");
}

int
cli_drop(const CliOptions *opts)
{
	return cli_table_op(opts, TCOPY__TABLE_OP_KIND__TABLE_OP_DROP, "dropped");
}
