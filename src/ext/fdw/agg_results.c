/*
 * agg_results.c
 *		The execution of a ForeignScan whose groups and aggregates the
 *		tserver computes (pushdown_agg.c, docs/scans.md#aggregates): the
 *		Scan request's group_by and aggregates, and each AggRow turned into
 *		the scan's output (fdw_scan_tlist: grouping columns and Aggrefs),
 *		exactly as Postgres' final functions would give them, or, for a
 *		partial aggregate, as its transition states.
 *
 * The tserver sends what the transition functions computed: counts,
 * 128-bit integer sums, float sums (flagged when they overflowed, where
 * Postgres raises an error), float8_accum's N, Sx and Sxx, minimums and
 * maximums.  The conversions are the final functions': count is an int8;
 * sum of int2 or int4 an int8 ("bigint out of range" past it); sum of
 * int8 a numeric; avg of integers numeric_div(sum, count); avg of floats
 * Sx / N; NULL for a group without values, but count's 0.
 */

#include "postgres.h"

#include "catalog/pg_collation_d.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "lib/stringinfo.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "tcopy/fdw.h"

/* One output column of the scan (an entry of fdw_scan_tlist). */
typedef struct AggColumn
{
	int			group;			/* its index in group_by, or -1: an aggregate */
	AttrNumber	attnum;			/* the grouping column */
	int			agg;			/* its index in the aggregates */
	TcopyAggFn	fn;
	Oid			argtype;		/* the aggregated column's type */
	int			ints;			/* where its values start in AggRow.ints */
	int			floats;			/* ... and floats */
} AggColumn;

struct TcopyAggScan
{
	TcopyRelCodec *codec;
	bool		partial;		/* transition states instead of results */
	int			ncolumns;
	AggColumn  *columns;		/* [ncolumns] */
	int			ngroup;
	int		   *group_proj;		/* [ngroup] wire columns grouped by */
	int			naggs;
	Tcopy__Aggregate **aggs;	/* [naggs] */
	Tcopy__Aggregate *agg_buf;
	int			nints;			/* AggRow.ints and floats of a group */
	int			nfloats;
	Datum	   *gvalues;		/* [natts] a group's decoded values */
	bool	   *gnulls;
	StringInfoData explain_aggs;	/* "count(*), sum(abalance)" */
	StringInfoData explain_group;	/* "bid" */
};

TcopyAggFn
tcopy_agg_classify(Oid aggfnoid)
{
	switch (aggfnoid)
	{
		case F_COUNT_:
			return TCOPY_AGGFN_COUNT_STAR;
		case F_COUNT_ANY:
			return TCOPY_AGGFN_COUNT;
		case F_SUM_INT2:
		case F_SUM_INT4:
			return TCOPY_AGGFN_SUM_INT;
		case F_SUM_INT8:
			return TCOPY_AGGFN_SUM_INT8;
		case F_AVG_INT2:
		case F_AVG_INT4:
			return TCOPY_AGGFN_AVG_INT;
		case F_AVG_INT8:
			return TCOPY_AGGFN_AVG_INT8;
		case F_SUM_FLOAT4:
			return TCOPY_AGGFN_SUM_FLOAT4;
		case F_SUM_FLOAT8:
			return TCOPY_AGGFN_SUM_FLOAT8;
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
			return TCOPY_AGGFN_AVG_FLOAT;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_DATE:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
			return TCOPY_AGGFN_MIN;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_DATE:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
			return TCOPY_AGGFN_MAX;
		default:
			return TCOPY_AGGFN_NONE;
	}
}

bool
tcopy_agg_group_type_ok(Oid type, Oid collation)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case BOOLOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
			/* equal under a deterministic collation: equal bytes */
			return OidIsValid(collation) && get_collation_isdeterministic(collation);
		default:
			return false;
	}
}

/* The codec's column does not hold what the plan expects: never, unless the table changed. */
static void
agg_column_mismatch(TcopyRelCodec *codec, AttrNumber attnum)
{
	elog(ERROR, "column %d of foreign table \"%s\" is not stored as its pushed-down aggregate reads it",
		 attnum, codec->relname);
}

/* The wire column of attnum, checked to be stored in the form conv (send_width for SEND). */
static int
agg_wire_column(TcopyRelCodec *codec, AttrNumber attnum, Oid type)
{
	int			column = attnum >= 1 && attnum <= codec->natts ? codec->column_of_att[attnum - 1] : -1;
	TcopyColumnCodec *col;
	bool		ok;

	if (column < 0)
		agg_column_mismatch(codec, attnum);
	col = &codec->columns[column];
	switch (type)
	{
		case INT2OID:
			ok = col->conv == TCOPY_CONV_INT2;
			break;
		case INT4OID:
			ok = col->conv == TCOPY_CONV_INT4;
			break;
		case INT8OID:
			ok = col->conv == TCOPY_CONV_INT8;
			break;
		case BOOLOID:
			ok = col->conv == TCOPY_CONV_BOOL;
			break;
		case FLOAT4OID:
			ok = col->conv == TCOPY_CONV_FLOAT4;
			break;
		case FLOAT8OID:
			ok = col->conv == TCOPY_CONV_FLOAT8;
			break;
		case DATEOID:
			ok = col->conv == TCOPY_CONV_SEND && col->send_width == 4;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			ok = col->conv == TCOPY_CONV_SEND && col->send_width == 8;
			break;
		case TEXTOID:
		case VARCHAROID:
			ok = col->conv == TCOPY_CONV_TEXT;
			break;
		default:
			ok = true;			/* count(column): any */
			break;
	}
	if (!ok)
		agg_column_mismatch(codec, attnum);
	return column;
}

/* The Aggregate the tserver computes for column c (an Aggref of fn over argtype). */
static void
agg_request_one(TcopyAggScan *agg, AggColumn *c, int column, Tcopy__Aggregate *a)
{
	tcopy__aggregate__init(a);
	a->column = column >= 0 ? (uint32_t) column : 0;
	c->ints = agg->nints;
	c->floats = agg->nfloats;
	switch (c->fn)
	{
		case TCOPY_AGGFN_COUNT_STAR:
			a->op = TCOPY__AGG_OP__AGG_COUNT_ROWS;
			break;
		case TCOPY_AGGFN_COUNT:
			a->op = TCOPY__AGG_OP__AGG_COUNT;
			break;
		case TCOPY_AGGFN_SUM_INT:
		case TCOPY_AGGFN_SUM_INT8:
		case TCOPY_AGGFN_AVG_INT:
		case TCOPY_AGGFN_AVG_INT8:
			a->op = TCOPY__AGG_OP__AGG_SUM_INT;
			a->type = TCOPY__VALUE_TYPE__VALUE_INT;
			agg->nints += 2;
			break;
		case TCOPY_AGGFN_SUM_FLOAT4:
			a->op = TCOPY__AGG_OP__AGG_SUM_FLOAT4;
			a->type = TCOPY__VALUE_TYPE__VALUE_FLOAT;
			agg->nfloats++;
			break;
		case TCOPY_AGGFN_SUM_FLOAT8:
			a->op = TCOPY__AGG_OP__AGG_SUM_FLOAT;
			a->type = TCOPY__VALUE_TYPE__VALUE_FLOAT;
			agg->nfloats++;
			break;
		case TCOPY_AGGFN_AVG_FLOAT:
			a->op = TCOPY__AGG_OP__AGG_AVG_FLOAT;
			a->type = TCOPY__VALUE_TYPE__VALUE_FLOAT;
			agg->nfloats += 2;
			break;
		case TCOPY_AGGFN_MIN:
		case TCOPY_AGGFN_MAX:
			a->op = c->fn == TCOPY_AGGFN_MIN ? TCOPY__AGG_OP__AGG_MIN : TCOPY__AGG_OP__AGG_MAX;
			if (c->argtype == FLOAT4OID || c->argtype == FLOAT8OID)
			{
				a->type = TCOPY__VALUE_TYPE__VALUE_FLOAT;
				agg->nfloats++;
			}
			else
			{
				a->type = c->argtype == DATEOID || c->argtype == TIMESTAMPOID ||
					c->argtype == TIMESTAMPTZOID ?
					TCOPY__VALUE_TYPE__VALUE_BE_INT : TCOPY__VALUE_TYPE__VALUE_INT;
				agg->nints++;
			}
			break;
		case TCOPY_AGGFN_NONE:
			elog(ERROR, "unexpected aggregate in a tcopy aggregate scan");
	}
}

TcopyAggScan *
tcopy_agg_scan_begin(ForeignScan *fsplan, TcopyRelCodec *codec)
{
	List	   *upper = (List *) list_nth(fsplan->fdw_private, TCOPY_PRIV_UPPER);
	TcopyAggScan *agg = palloc0(sizeof(TcopyAggScan));
	int			n = list_length(fsplan->fdw_scan_tlist);
	ListCell   *lc;
	int			i = 0;

	agg->codec = codec;
	agg->ncolumns = n;
	agg->partial = boolVal(lsecond(upper));
	agg->columns = palloc0(sizeof(AggColumn) * Max(n, 1));
	agg->group_proj = palloc(sizeof(int) * Max(n, 1));
	agg->aggs = palloc(sizeof(Tcopy__Aggregate *) * Max(n, 1));
	agg->agg_buf = palloc(sizeof(Tcopy__Aggregate) * Max(n, 1));
	agg->gvalues = palloc(sizeof(Datum) * Max(codec->natts, 1));
	agg->gnulls = palloc(sizeof(bool) * Max(codec->natts, 1));
	initStringInfo(&agg->explain_aggs);
	initStringInfo(&agg->explain_group);
	foreach(lc, fsplan->fdw_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		AggColumn  *c = &agg->columns[i++];

		c->group = -1;
		if (IsA(tle->expr, Var))
		{
			Var		   *var = (Var *) tle->expr;
			int			column = agg_wire_column(codec, var->varattno, var->vartype);
			int			g;

			c->attnum = var->varattno;
			/* a column grouped by twice is sent once */
			for (g = 0; g < agg->ngroup; g++)
				if (agg->group_proj[g] == column)
					break;
			if (g == agg->ngroup)
			{
				agg->group_proj[agg->ngroup++] = column;
				appendStringInfo(&agg->explain_group, "%s%s", g > 0 ? ", " : "",
								 quote_identifier(codec->columns[column].attname));
			}
			c->group = g;
		}
		else if (IsA(tle->expr, Aggref))
		{
			Aggref	   *aggref = (Aggref *) tle->expr;
			int			column = -1;

			c->fn = tcopy_agg_classify(aggref->aggfnoid);
			c->agg = agg->naggs;
			if (c->fn != TCOPY_AGGFN_COUNT_STAR)
			{
				Var		   *var = (Var *) linitial_node(TargetEntry, aggref->args)->expr;

				c->argtype = var->vartype;
				column = agg_wire_column(codec, var->varattno, var->vartype);
			}
			agg_request_one(agg, c, column, &agg->agg_buf[agg->naggs]);
			agg->aggs[agg->naggs] = &agg->agg_buf[agg->naggs];
			agg->naggs++;
			appendStringInfo(&agg->explain_aggs, "%s%s(%s)", c->agg > 0 ? ", " : "",
							 get_func_name(aggref->aggfnoid),
							 column < 0 ? "*" : quote_identifier(codec->columns[column].attname));
		}
		else
			elog(ERROR, "unexpected expression in a tcopy aggregate scan's target list");
	}
	return agg;
}

void
tcopy_agg_scan_request(TcopyAggScan *agg, Tcopy__Scan *request)
{
	uint32_t   *group_by = palloc(sizeof(uint32_t) * Max(agg->ngroup, 1));

	for (int g = 0; g < agg->ngroup; g++)
		group_by[g] = (uint32_t) agg->group_proj[g];
	request->n_group_by = agg->ngroup;
	request->group_by = group_by;
	request->n_aggregates = agg->naggs;
	request->aggregates = agg->aggs;
}

/* float_overflow_error's */
static void
agg_float_overflow(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value out of range: overflow")));
}

/* An int128 sum as an int8, or int8pl's error. */
static int64
agg_int64(int128 sum)
{
	if (sum < PG_INT64_MIN || sum > PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	return (int64) sum;
}

/* An int128 as a numeric, exactly. */
static Datum
agg_int128_numeric(int128 value)
{
	char		buf[48];
	char	   *p = buf + sizeof(buf);
	uint128		u = value < 0 ? -(uint128) value : (uint128) value;

	*--p = '\0';
	do
	{
		*--p = (char) ('0' + (int) (u % 10));
		u /= 10;
	} while (u != 0);
	if (value < 0)
		*--p = '-';
	return DirectFunctionCall3(numeric_in, CStringGetDatum(p),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* A min or max as its column's type. */
static Datum
agg_extreme(const AggColumn *c, const Tcopy__AggRow *row)
{
	switch (c->argtype)
	{
		case INT2OID:
			return Int16GetDatum((int16) row->ints[c->ints]);
		case INT4OID:
			return Int32GetDatum((int32) row->ints[c->ints]);
		case DATEOID:
			return DateADTGetDatum((DateADT) row->ints[c->ints]);
		case FLOAT4OID:
			return Float4GetDatum((float4) row->floats[c->floats]);
		case FLOAT8OID:
			return Float8GetDatum(row->floats[c->floats]);
		default:
			/* int8, timestamp, timestamptz */
			return Int64GetDatum(row->ints[c->ints]);
	}
}

/* One aggregate's result (or, partial, its transition state) in *value, *isnull. */
static void
agg_value(TcopyAggScan *agg, const AggColumn *c, const Tcopy__AggRow *row, bool overflow,
		  Datum *value, bool *isnull)
{
	int64		count = row->counts[c->agg];
	int128		sum = 0;

	*isnull = false;
	if (c->fn == TCOPY_AGGFN_SUM_INT || c->fn == TCOPY_AGGFN_SUM_INT8 ||
		c->fn == TCOPY_AGGFN_AVG_INT || c->fn == TCOPY_AGGFN_AVG_INT8)
		sum = (int128) ((uint128) (uint64) row->ints[c->ints] << 64 |
						(uint64) row->ints[c->ints + 1]);
	if (overflow)
		agg_float_overflow();
	switch (c->fn)
	{
		case TCOPY_AGGFN_COUNT_STAR:
		case TCOPY_AGGFN_COUNT:
			*value = Int64GetDatum(count);
			return;
		case TCOPY_AGGFN_AVG_INT:
			if (agg->partial)
			{
				/* int4_avg_accum's {count, sum} */
				Datum		elems[2];

				elems[0] = Int64GetDatum(count);
				elems[1] = Int64GetDatum(agg_int64(sum));
				*value = PointerGetDatum(construct_array(elems, 2, INT8OID, 8, FLOAT8PASSBYVAL,
														 TYPALIGN_DOUBLE));
				return;
			}
			/* fall through */
		case TCOPY_AGGFN_AVG_INT8:
			/* int8_avg, numeric_poly_avg */
			if (count == 0)
				break;
			*value = DirectFunctionCall2(numeric_div, agg_int128_numeric(sum),
										 NumericGetDatum(int64_to_numeric(count)));
			return;
		case TCOPY_AGGFN_AVG_FLOAT:
			if (agg->partial)
			{
				/* float8_accum's {N, Sx, Sxx} */
				Datum		elems[3];

				elems[0] = Float8GetDatum((float8) count);
				elems[1] = Float8GetDatum(row->floats[c->floats]);
				elems[2] = Float8GetDatum(row->floats[c->floats + 1]);
				*value = PointerGetDatum(construct_array(elems, 3, FLOAT8OID, 8, FLOAT8PASSBYVAL,
														 TYPALIGN_DOUBLE));
				return;
			}
			/* float8_avg */
			if (count == 0)
				break;
			*value = Float8GetDatum(row->floats[c->floats] / (float8) count);
			return;
		default:
			break;
	}
	if (count == 0)
	{
		*isnull = true;
		*value = (Datum) 0;
		return;
	}
	switch (c->fn)
	{
		case TCOPY_AGGFN_SUM_INT:
			*value = Int64GetDatum(agg_int64(sum));
			return;
		case TCOPY_AGGFN_SUM_INT8:
			*value = agg_int128_numeric(sum);
			return;
		case TCOPY_AGGFN_SUM_FLOAT4:
			*value = Float4GetDatum((float4) row->floats[c->floats]);
			return;
		case TCOPY_AGGFN_SUM_FLOAT8:
			*value = Float8GetDatum(row->floats[c->floats]);
			return;
		case TCOPY_AGGFN_MIN:
		case TCOPY_AGGFN_MAX:
			*value = agg_extreme(c, row);
			return;
		default:
			*isnull = true;
			*value = (Datum) 0;
			return;
	}
}

void
tcopy_agg_scan_store(TcopyAggScan *agg, const Tcopy__AggRow *row, Datum *values, bool *isnull)
{
	TcopyRelCodec *codec = agg->codec;
	bool	   *overflow = palloc0(sizeof(bool) * Max(agg->naggs, 1));

	/* the tserver checked nothing of ours: check its answer's shape */
	if (row->n_counts != (size_t) agg->naggs || row->n_ints != (size_t) agg->nints ||
		row->n_floats != (size_t) agg->nfloats || (agg->ngroup > 0) != (row->group != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
				 errmsg("aggregate row from tserver does not match the scan of foreign table \"%s\"",
						codec->relname)));
	for (size_t o = 0; o < row->n_overflow; o++)
		if (row->overflow[o] < (uint32) agg->naggs)
			overflow[row->overflow[o]] = true;
	if (agg->ngroup > 0)
		tcopy_decode_row(codec, agg->group_proj, agg->ngroup, row->group, agg->gvalues,
						 agg->gnulls);
	for (int i = 0; i < agg->ncolumns; i++)
	{
		const AggColumn *c = &agg->columns[i];

		if (c->group >= 0)
		{
			values[i] = agg->gvalues[c->attnum - 1];
			isnull[i] = agg->gnulls[c->attnum - 1];
		}
		else
			agg_value(agg, c, row, overflow[c->agg], &values[i], &isnull[i]);
	}
}

bool
tcopy_agg_scan_store_empty(TcopyAggScan *agg, Datum *values, bool *isnull)
{
	Tcopy__AggRow row = TCOPY__AGG_ROW__INIT;

	if (agg->ngroup > 0)
		return false;
	row.n_counts = agg->naggs;
	row.counts = palloc0(sizeof(int64_t) * Max(agg->naggs, 1));
	row.n_ints = agg->nints;
	row.ints = palloc0(sizeof(int64_t) * Max(agg->nints, 1));
	row.n_floats = agg->nfloats;
	row.floats = palloc0(sizeof(double) * Max(agg->nfloats, 1));
	tcopy_agg_scan_store(agg, &row, values, isnull);
	return true;
}

void
tcopy_agg_scan_explain(TcopyAggScan *agg, ExplainState *es)
{
	if (agg->naggs > 0)
		ExplainPropertyText(agg->partial ? "Remote Partial Aggregate" : "Remote Aggregate",
							agg->explain_aggs.data, es);
	if (agg->ngroup > 0)
		ExplainPropertyText("Remote Group By", agg->explain_group.data, es);
}
