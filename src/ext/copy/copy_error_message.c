/*
 * copy_error_message.c
 *		A parallel COPY worker's error as a message to its leader
 *		(TCOPY_MSG_ERROR), and raised again by the leader in the chunk's
 *		turn, so that the first error in the input is the one reported, as
 *		a serial COPY reports it (docs/parallel.md).
 */
#include "postgres.h"

#include "copy_parallel.h"

void
tcopy_parallel_error_message(const ErrorData *edata, StringInfo buf)
{
	const char *fields[TCOPY_ERROR_NFIELDS] = {
		edata->message, edata->detail, edata->detail_log, edata->hint,
		edata->context, edata->schema_name, edata->table_name,
		edata->column_name, edata->datatype_name, edata->constraint_name
	};
	TcopyErrorHeader header = {TCOPY_MSG_ERROR, edata->sqlerrcode, edata->cursorpos};

	appendBinaryStringInfo(buf, (const char *) &header, sizeof(header));
	for (int i = 0; i < TCOPY_ERROR_NFIELDS; i++)
		appendBinaryStringInfo(buf, fields[i] ? fields[i] : "",
							   fields[i] ? strlen(fields[i]) + 1 : 1);
}

void
tcopy_parallel_raise(const char *data, size_t len, ErrorContextCallback *context)
{
	TcopyErrorHeader header;
	ErrorData	edata = {0};
	char	   *fields[TCOPY_ERROR_NFIELDS];
	const char *s = data + sizeof(header);
	const char *end = data + len;
	int			i;

	if (len < sizeof(header))
		elog(ERROR, "truncated error message from a parallel COPY worker");
	memcpy(&header, data, sizeof(header));
	for (i = 0; i < TCOPY_ERROR_NFIELDS; i++)
	{
		size_t		n = strnlen(s, end - s);

		if (s + n >= end)
			elog(ERROR, "truncated error message from a parallel COPY worker");
		fields[i] = n > 0 ? pstrdup(s) : NULL;
		s += n + 1;
	}
	edata.elevel = ERROR;
	edata.sqlerrcode = header.sqlerrcode;
	edata.cursorpos = header.cursorpos;
	edata.message = fields[0];
	edata.detail = fields[1];
	edata.detail_log = fields[2];
	edata.hint = fields[3];
	edata.context = fields[4];
	edata.schema_name = fields[5];
	edata.table_name = fields[6];
	edata.column_name = fields[7];
	edata.datatype_name = fields[8];
	edata.constraint_name = fields[9];
	edata.filename = __FILE__;
	edata.lineno = __LINE__;
	edata.funcname = PG_FUNCNAME_MACRO;
	/* the worker's CONTEXT is the COPY's; callers' contexts go after it */
	error_context_stack = context;
	ThrowErrorData(&edata);
	pg_unreachable();
}
