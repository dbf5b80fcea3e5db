/*
 * ts_filter.h
 *		A scan's filter (Scan.filter): a predicate over one decoded row,
 *		evaluated with SQL's three values exactly as Postgres would
 *		(docs/scans.md#filters).
 *
 * The Expr is the request's own protobuf-c tree, checked once by
 * ts_filter_check and then read in place, row after row: evaluating it
 * allocates nothing.  It sits on the row ts_row_decode gave, whatever
 * iterator produced it.
 */
#ifndef TS_FILTER_H
#define TS_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcopy.pb-c.h"
#include "ts_codec.h"
#include "ts_error.h"

/* Bounds on a filter, so that its check and each row's cost stay small. */
#define TS_FILTER_MAX_DEPTH		64
#define TS_FILTER_MAX_NODES		10000
#define TS_FILTER_MAX_CONSTANTS	100000	/* of all its leaves together */

/* A filter's value on one row. */
typedef enum TsFilterResult
{
	TS_FILTER_FALSE = 0,
	TS_FILTER_TRUE = 1,
	TS_FILTER_NULL = 2
} TsFilterResult;

/*
 * Check that expr is a filter the tserver can evaluate on rows of layout:
 * known operators with the arguments they take, columns in range, each
 * leaf's ValueType one its column's kind is read as, constants of that
 * type and as many as the operator takes, within the bounds above.
 * ERROR_PROTOCOL otherwise.
 */
int			ts_filter_check(const TsLayout *layout, const Tcopy__Expr *expr,
							TsError *err);

/*
 * Check a Scan message's bytes, before they are unpacked (protobuf-c
 * unpacks nested messages by recursion, so depth must be bounded first):
 * false when its filter nests deeper than TS_FILTER_MAX_DEPTH, or when the
 * bytes are not a protobuf message at all.
 */
bool		ts_filter_wire_check(const uint8_t *scan, size_t len);

/*
 * Set columns[c] for every column c a checked filter reads: a decoder that
 * decodes only some columns must decode these before ts_filter_eval.
 */
void		ts_filter_columns(const Tcopy__Expr *expr, bool *columns);

/*
 * The value of a checked filter on a decoded row (values[column]): a
 * TsFilterResult, or -1 with ERROR_STORAGE when a stored value cannot be
 * read as its leaf's type says (a VALUE_BE_INT of another length).
 */
int			ts_filter_eval(const Tcopy__Expr *expr, const TsValue *values,
						   TsError *err);

#endif							/* TS_FILTER_H */
