/*-------------------------------------------------------------------------
 *
 * aggregate.c
 *	  A pushed-down GROUP BY / aggregate query as an aggregations request.
 *
 * There is one aggregation implementation, the search module's
 * (src/search/aggs.c): this file only translates.  One GROUP BY column
 * becomes a "terms" aggregation holding every key plus a "missing" bucket
 * for its NULL group; several become the sources of a "composite"
 * (missing_bucket, one page as large as the groups).  The aggregates are
 * sub-aggregations -- "stats" of a numeric or date column gives count(col),
 * min, max, sum and avg (an integer column's min and max exact from its
 * "min_exact"/"max_exact"); a keyword column's min / max is a one-bucket
 * "terms" ordered by key, its count a "value_count", as a text column's
 * on its keyword sub-field -- and the body runs
 * through the search path of search_engine.search (se_engine_aggregations):
 * per shard over doc values, remote shards over the transport, one reduce.
 * No _source is read.  The buckets then become tuples.  count(*) alone
 * stays the count API.
 *
 * Results follow PostgreSQL's aggregate definitions: sum(int2/int4) is
 * bigint, sum(int8) and avg of integers numeric (numeric_div of the exact
 * sum by the count, as int8_avg and numeric_poly_avg do), sum(real) real.
 * The engine sums in double, which is exact for integers while every
 * partial sum stays below 2^53: a group whose count times largest
 * magnitude could pass it is an error rather than a rounded answer.  Float
 * sums add in the engine's order (per shard, then across shards), which
 * PostgreSQL does not define either.
 *
 * Where doc values cannot stand for what a row would read, the query fails
 * rather than answer differently from the plan without pushdown:
 *  - a scalar column meeting several values in a document: its values
 *    (counted by the groups' stats, or a top-level value_count) outnumber
 *    the matching documents having the field (a top-level "missing"); for
 *    GROUP BY columns, the groups hold more documents than matched;
 *  - a text column grouped on its keyword sub-field when a matching
 *    document's value is longer than the sub-field's ignore_above (it has
 *    no keyword value and would land in the NULL group): a count of such
 *    documents with the query.  The planner already declines such a GROUP
 *    BY when the index holds those documents at planning time (fdw.c), so
 *    this is for plans made before.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "fdw/fdw_int.h"

#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/* integers up to this add exactly in a double */
#define EXACT_DOUBLE_INT	9007199254740992.0	/* 2^53 */

/* One scan tlist entry: a GROUP BY column or an aggregate. */
typedef struct AggOut
{
	SeAggKind	kind;
	AttrNumber	attno;			/* 0 for count(*) */
	SeFdwColumn *col;
	const SeMappedField *field; /* the column's mapped field */
	const char *dv_field;		/* the doc values aggregated */
	bool		keyword;		/* dv_field holds keyword bytes */
	bool		doc_values;		/* dv_field has doc values */
	int			key;			/* GROUP BY: index of its composite source */
} AggOut;

typedef struct AggPlan
{
	int			n;
	AggOut	   *outs;
	int			nkeys;
	bool		counts_only;
} AggPlan;

static void
unmapped(SeFdwColumn *col, SeScanState *ss)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_ERROR),
			 errmsg("field \"%s\" of foreign table \"%s\" is no longer mapped in index \"%s\"",
					col->field, ss->tbl->relname, ss->tbl->index),
			 errhint("Run the statement again.")));
}

/* The plan's (kind, attno) list resolved against the mapping m. */
static void
agg_plan(SeScanState *ss, const SeMapping *m, AggPlan *p)
{
	ListCell   *lc;
	int			i = 0;

	memset(p, 0, sizeof(*p));
	p->n = list_length(ss->plan.aggs);
	p->outs = palloc0(sizeof(AggOut) * Max(1, p->n));
	p->counts_only = true;
	foreach(lc, ss->plan.aggs)
	{
		List	   *l = lfirst(lc);
		AggOut	   *o = &p->outs[i++];
		SeColSearch cs;

		o->kind = linitial_int(l);
		o->attno = lsecond_int(l);
		if (o->kind != SE_AGG_COUNT_STAR)
			p->counts_only = false;
		if (o->attno <= 0)
			continue;
		o->col = &ss->tbl->cols[o->attno - 1];
		if (m == NULL)
		{
			/* EXPLAIN of a missing index: show the column's field */
			o->dv_field = o->col->field;
			continue;
		}
		se_fdw_col_search(o->col, m, o->col->collation, &cs);
		o->field = cs.field;
		if (o->field == NULL)
			unmapped(o->col, ss);
		o->keyword = o->field->type == SE_FT_KEYWORD || o->field->type == SE_FT_TEXT;
		o->doc_values = cs.agg_field != NULL;
		o->dv_field = cs.agg_field ? cs.agg_field : o->field->path;
		if (o->kind == SE_AGG_GROUP_KEY)
		{
			if (cs.agg_field == NULL)
				unmapped(o->col, ss);
			o->key = p->nkeys++;
		}
	}
}

/* Names of the request's aggregations (one per column and job). */
static char *
agg_name(char job, AttrNumber attno)
{
	return psprintf("%c%d", job, (int) attno);
}

/* Append ,"name":{json} unless an aggregation of that name is there. */
static void
add_agg(StringInfo b, List **seen, char *name, const char *fmt, const char *field)
{
	ListCell   *lc;

	foreach(lc, *seen)
		if (strcmp(lfirst(lc), name) == 0)
			return;
	*seen = lappend(*seen, name);
	if (list_length(*seen) > 1)
		appendStringInfoChar(b, ',');
	se_json_write_string(b, name, -1);
	appendStringInfoChar(b, ':');
	/* fmt holds %s where the (JSON-quoted) field goes */
	{
		StringInfoData q;
		const char *pct = strstr(fmt, "%s");

		initStringInfo(&q);
		se_json_write_string(&q, field, -1);
		if (pct)
		{
			appendBinaryStringInfo(b, fmt, pct - fmt);
			appendStringInfoString(b, q.data);
			appendStringInfoString(b, pct + 2);
			pct = strstr(pct + 2, "%s");
			if (pct)
				elog(ERROR, "one field per aggregation template");
		}
		else
			appendStringInfoString(b, fmt);
	}
}

static bool integral_field(const AggOut *o);

/*
 * The "stats" of a numeric column; of an integer column with the engine's
 * exact sum ("sum_exact": a decimal string) besides its double "sum".
 */
static const char *
stats_agg(const AggOut *o)
{
	return integral_field(o) ? "{\"stats\":{\"field\":%s,\"exact_sum\":true}}"
		: "{\"stats\":{\"field\":%s}}";
}

/* The metric sub-aggregations of one aggregate. */
static void
metric_aggs(StringInfo b, List **seen, AggOut *o)
{
	switch (o->kind)
	{
		case SE_AGG_COUNT_STAR:
		case SE_AGG_GROUP_KEY:
			break;
		case SE_AGG_COUNT:
			if (!o->doc_values)
				add_agg(b, seen, agg_name('e', o->attno), "{\"filter\":{\"exists\":{\"field\":%s}}}",
						o->dv_field);
			else if (o->keyword)
				add_agg(b, seen, agg_name('c', o->attno), "{\"value_count\":{\"field\":%s}}",
						o->dv_field);
			else
				add_agg(b, seen, agg_name('s', o->attno), stats_agg(o), o->dv_field);
			break;
		case SE_AGG_MIN:
		case SE_AGG_MAX:
			if (o->keyword)
				add_agg(b, seen, agg_name(o->kind == SE_AGG_MIN ? 'n' : 'x', o->attno),
						o->kind == SE_AGG_MIN
						? "{\"terms\":{\"field\":%s,\"size\":1,\"order\":{\"_key\":\"asc\"}}}"
						: "{\"terms\":{\"field\":%s,\"size\":1,\"order\":{\"_key\":\"desc\"}}}",
						o->dv_field);
			else
				add_agg(b, seen, agg_name('s', o->attno), stats_agg(o), o->dv_field);
			break;
		case SE_AGG_SUM:
		case SE_AGG_AVG:
			add_agg(b, seen, agg_name('s', o->attno), stats_agg(o), o->dv_field);
			break;
	}
}

/*
 * The sub-aggregation of the groups that counts column attno's values
 * ('s' stats, 'c' value_count), or 0 when none does.
 */
static char
value_counter(AggPlan *p, AttrNumber attno)
{
	int			i;

	for (i = 0; i < p->n; i++)
	{
		AggOut	   *o = &p->outs[i];

		if (o->attno != attno || o->kind == SE_AGG_GROUP_KEY || !o->doc_values)
			continue;
		if (!o->keyword)
			return 's';
		if (o->kind == SE_AGG_COUNT)
			return 'c';
	}
	return 0;
}

/*
 * The aggregations of a pushed-down aggregate query, appended to a body
 * holding its "query" (nothing for count(*) alone: the count API).
 */
void
se_fdw_agg_request(SeScanState *ss, const SeMapping *m, StringInfo b)
{
	AggPlan		p;
	List	   *seen = NIL;
	StringInfoData sb = {0};
	int			i;

	agg_plan(ss, m, &p);
	if (p.counts_only)
		return;
	appendStringInfoString(b, ",\"size\":0,\"track_total_hits\":true,\"aggs\":{");
	if (p.n > p.nkeys)
	{
		List	   *subs = NIL;

		initStringInfo(&sb);
		for (i = 0; i < p.n; i++)
			metric_aggs(&sb, &subs, &p.outs[i]);
	}
	if (p.nkeys == 1)
	{
		AggOut	   *k = NULL;

		/*
		 * One column: a terms aggregation holding every key (cheaper than
		 * a composite), and the documents without one as a missing bucket.
		 */
		for (i = 0; i < p.n; i++)
			if (p.outs[i].kind == SE_AGG_GROUP_KEY)
				k = &p.outs[i];
		appendStringInfoString(b, "\"groups\":{\"terms\":{\"field\":");
		se_json_write_string(b, k->dv_field, -1);
		appendStringInfoString(b, ",\"size\":2147483647,\"shard_size\":2147483647}");
		if (sb.len > 0)
			appendStringInfo(b, ",\"aggs\":{%s}", sb.data);
		appendStringInfoString(b, "},\"nulls\":{\"missing\":{\"field\":");
		se_json_write_string(b, k->dv_field, -1);
		appendStringInfoChar(b, '}');
		if (sb.len > 0)
			appendStringInfo(b, ",\"aggs\":{%s}", sb.data);
		appendStringInfoChar(b, '}');
		seen = list_make2("groups", "nulls");
	}
	else if (p.nkeys > 1)
	{
		bool		first = true;

		appendStringInfoString(b, "\"groups\":{\"composite\":{\"size\":2147483647,\"sources\":[");
		for (i = 0; i < p.n; i++)
		{
			if (p.outs[i].kind != SE_AGG_GROUP_KEY)
				continue;
			appendStringInfo(b, "%s{\"k%d\":{\"terms\":{\"field\":", first ? "" : ",", p.outs[i].key);
			se_json_write_string(b, p.outs[i].dv_field, -1);
			appendStringInfoString(b, ",\"missing_bucket\":true}}}");
			first = false;
		}
		appendStringInfoString(b, "]}");
		if (sb.len > 0)
			appendStringInfo(b, ",\"aggs\":{%s}", sb.data);
		appendStringInfoChar(b, '}');
		seen = lappend(seen, "groups");
	}
	else
		for (i = 0; i < p.n; i++)
			metric_aggs(b, &seen, &p.outs[i]);

	/*
	 * The check for several values per document (see check_answer): the
	 * documents without the column's field, and its values when no
	 * aggregation of the groups counts them already.
	 */
	for (i = 0; i < p.n; i++)
	{
		AggOut	   *o = &p.outs[i];

		if (o->col == NULL || !o->doc_values || o->field == NULL || o->kind == SE_AGG_GROUP_KEY)
			continue;
		add_agg(b, &seen, agg_name('m', o->attno), "{\"missing\":{\"field\":%s}}", o->dv_field);
		if (value_counter(&p, o->attno) == 0)
			add_agg(b, &seen, agg_name('v', o->attno), "{\"value_count\":{\"field\":%s}}", o->dv_field);
	}
	appendStringInfoChar(b, '}');
}

/*
 * Matching documents whose text column o has a value but no keyword
 * sub-field value (longer than its ignore_above): a count with the
 * request's query.
 */
static int64
long_values(AggOut *o, const SeJson *query, SeSearchShard *shards, int nshards)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":{\"bool\":{\"filter\":[");
	se_json_write(&b, query);
	appendStringInfoString(&b, ",{\"exists\":{\"field\":");
	se_json_write_string(&b, o->field->path, -1);
	appendStringInfoString(&b, "}}],\"must_not\":[{\"exists\":{\"field\":");
	se_json_write_string(&b, o->dv_field, -1);
	appendStringInfoString(&b, "}}]}}}");
	return se_engine_count(b.data, shards, nshards);
}

/* ---------------------------------------------------------------------
 * Buckets into tuples
 * ---------------------------------------------------------------------
 */

static const SeJson *
sub(const SeJson *obj, char job, AttrNumber attno)
{
	const SeJson *v = se_json_get(obj, agg_name(job, attno));

	if (v == NULL || v->type != SE_JSON_OBJECT)
		elog(ERROR, "aggregation \"%c%d\" missing from the engine's answer", job, (int) attno);
	return v;
}

static double
num(const SeJson *obj, const char *key, bool *isnull)
{
	const SeJson *v = se_json_get(obj, key);

	*isnull = v == NULL || v->type != SE_JSON_NUMBER;
	return *isnull ? 0 : v->u.n.d;
}

static int64
count_of(const SeJson *obj, const char *key)
{
	bool		isnull;
	double		d = num(obj, key, &isnull);

	return isnull ? 0 : (int64) d;
}

static void
out_of_range(AggOut *o, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s of field \"%s\" is out of range for column \"%s\" of type %s",
					what, o->col->field, o->col->name, format_type_be(o->col->typid))));
}

static bool
integral_field(const AggOut *o)
{
	return o->field->type == SE_FT_LONG || o->field->type == SE_FT_INTEGER ||
		o->field->type == SE_FT_SHORT || o->field->type == SE_FT_BYTE;
}

/* A number the engine computed (a doc value, a min or max) as a Datum of o's column. */
static Datum
number_datum(AggOut *o, double d)
{
	switch (o->col->typid)
	{
		case INT2OID:
			if (d < PG_INT16_MIN || d > PG_INT16_MAX || d != rint(d))
				out_of_range(o, "a value");
			return Int16GetDatum((int16) d);
		case INT4OID:
			if (d < PG_INT32_MIN || d > PG_INT32_MAX || d != rint(d))
				out_of_range(o, "a value");
			return Int32GetDatum((int32) d);
		case INT8OID:
			if (fabs(d) >= EXACT_DOUBLE_INT || d != rint(d))
				out_of_range(o, "a value beyond 2^53 (not exact in the engine)");
			return Int64GetDatum((int64) d);
		case FLOAT4OID:
			return Float4GetDatum((float) d);
		case FLOAT8OID:
			return Float8GetDatum(d);
		case NUMERICOID:
			if (integral_field(o))
			{
				if (fabs(d) >= EXACT_DOUBLE_INT)
					out_of_range(o, "a value beyond 2^53 (not exact in the engine)");
				return NumericGetDatum(int64_to_numeric((int64) d));
			}
			return DirectFunctionCall1(float8_numeric, Float8GetDatum(d));
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			return TimestampTzGetDatum((int64) d * 1000 - UNIX_EPOCH_USECS);
	}
	elog(ERROR, "unexpected column type %u for an aggregated field", o->col->typid);
	return (Datum) 0;
}

/* A composite key or terms key (JSON) as a Datum of o's column. */
static Datum
key_datum(AggOut *o, const SeJson *v, bool *isnull)
{
	Oid			t = o->col->typid;
	Oid			typinput,
				typioparam;
	char	   *text;

	*isnull = false;
	switch (v->type)
	{
		case SE_JSON_NULL:
			*isnull = true;
			return (Datum) 0;
		case SE_JSON_NUMBER:
			if (t == BOOLOID)
				return BoolGetDatum(v->u.n.d != 0);	/* a terms key: 1 or 0 */
			if (o->field->type == SE_FT_DATE || t == FLOAT4OID || t == FLOAT8OID)
				return number_datum(o, v->u.n.d);
			/* integers: the exact digits */
			text = pnstrdup(v->u.n.text, v->u.n.len);
			break;
		case SE_JSON_TRUE:
		case SE_JSON_FALSE:
			if (t != BOOLOID)
				elog(ERROR, "boolean key for column \"%s\" of type %s", o->col->name, format_type_be(t));
			return BoolGetDatum(v->type == SE_JSON_TRUE);
		case SE_JSON_STRING:
			if (t == TEXTOID || t == VARCHAROID)
				return PointerGetDatum(cstring_to_text_with_len(v->u.s.str, v->u.s.len));
			text = pnstrdup(v->u.s.str, v->u.s.len);
			break;
		default:
			elog(ERROR, "unexpected key in the engine's answer");
			return (Datum) 0;
	}
	getTypeInputInfo(t, &typinput, &typioparam);
	return OidInputFunctionCall(typinput, text, typioparam, o->col->typmod);
}

/*
 * The integer sum of stats st exactly, as numeric.  Of an integer field the
 * engine adds the values in 128 bits when asked ("exact_sum", its
 * "sum_exact" string), so no sum is rounded past 2^53.  An integer column
 * over a floating-point field has only the double sum: exact while every
 * partial sum stays below 2^53, an error when it might not.
 */
static Numeric
exact_sum(AggOut *o, const SeJson *st, int64 count)
{
	const SeJson *v = se_json_get(st, "sum_exact");
	bool		n1,
				n2,
				n3;
	double		mn,
				mx,
				sum;

	if (v != NULL && v->type == SE_JSON_STRING)
		return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(v->u.s.str),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
	mn = num(st, "min", &n1);
	mx = num(st, "max", &n2);
	sum = num(st, "sum", &n3);
	if (n1 || n2 || n3 || Max(fabs(mn), fabs(mx)) * (double) count >= EXACT_DOUBLE_INT)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the sum of field \"%s\" may pass 2^53, beyond what the engine adds exactly in double",
						o->col->field),
				 errhint("Aggregate an expression of column \"%s\" (e.g. %s::numeric) to compute it in PostgreSQL.",
						 o->col->name, o->col->name)));
	return int64_to_numeric((int64) sum);
}

/* One aggregate's value from its group's aggregations obj. */
static Datum
agg_datum(AggOut *o, const SeJson *obj, int64 doc_count, bool *isnull)
{
	Oid			t = o->col ? o->col->typid : InvalidOid;
	const SeJson *st;
	int64		count;
	bool		nn;

	*isnull = false;
	if (o->kind == SE_AGG_COUNT_STAR)
		return Int64GetDatum(doc_count);
	if (o->kind == SE_AGG_COUNT)
	{
		if (!o->doc_values)
			return Int64GetDatum(count_of(sub(obj, 'e', o->attno), "doc_count"));
		if (o->keyword)
			return Int64GetDatum(count_of(sub(obj, 'c', o->attno), "value"));
		return Int64GetDatum(count_of(sub(obj, 's', o->attno), "count"));
	}
	if (o->keyword)
	{
		/* min / max of a keyword: the first bucket of a terms by key */
		const SeJson *bk = se_json_get(sub(obj, o->kind == SE_AGG_MIN ? 'n' : 'x', o->attno), "buckets");

		if (bk == NULL || bk->type != SE_JSON_ARRAY || bk->u.a.count == 0)
		{
			*isnull = true;
			return (Datum) 0;
		}
		return key_datum(o, se_json_get(bk->u.a.items[0], "key"), isnull);
	}
	st = sub(obj, 's', o->attno);
	count = count_of(st, "count");
	if (count == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (o->kind)
	{
		case SE_AGG_MIN:
		case SE_AGG_MAX:
			{
				/* an integer column's exact bound (the doubles stop at 2^53) */
				const SeJson *x = se_json_get(st, o->kind == SE_AGG_MIN ? "min_exact" : "max_exact");

				if (x != NULL && x->type == SE_JSON_STRING && integral_field(o) &&
					(t == INT8OID || t == NUMERICOID))
				{
					int64		v = pg_strtoint64(pnstrdup(x->u.s.str, x->u.s.len));

					return t == INT8OID ? Int64GetDatum(v) : NumericGetDatum(int64_to_numeric(v));
				}
				return number_datum(o, num(st, o->kind == SE_AGG_MIN ? "min" : "max", &nn));
			}
		case SE_AGG_SUM:
			if (t == FLOAT4OID)
				return Float4GetDatum((float) num(st, "sum", &nn));
			if (t == FLOAT8OID)
				return Float8GetDatum(num(st, "sum", &nn));
			if (t == INT8OID)
				return NumericGetDatum(exact_sum(o, st, count));
			/* sum(int2/int4) is bigint: out of its range is PostgreSQL's error */
			return DirectFunctionCall1(numeric_int8, NumericGetDatum(exact_sum(o, st, count)));
		case SE_AGG_AVG:
			if (t == FLOAT4OID || t == FLOAT8OID)
				return Float8GetDatum(num(st, "sum", &nn) / (double) count);
			return DirectFunctionCall2(numeric_div,
									   NumericGetDatum(exact_sum(o, st, count)),
									   NumericGetDatum(int64_to_numeric(count)));
		default:
			break;
	}
	elog(ERROR, "unexpected aggregate kind %d", (int) o->kind);
	return (Datum) 0;
}

static void
several_values(SeScanState *ss, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("%s of foreign table \"%s\" meets a document holding several values",
					what, ss->tbl->relname),
			 errhint("Declare the column as an array or as jsonb.")));
}

/*
 * What doc values cannot say as rows would: several values of a scalar
 * column in a document, a text value without its keyword (see the top).
 */
static void
check_answer(SeScanState *ss, AggPlan *p, const SeJson *aggs, int64 total,
			 const SeJson **groups, int ngroups)
{
	int64		grouped_docs = 0;
	int			i,
				g;

	for (g = 0; g < ngroups && p->nkeys > 0; g++)
		grouped_docs += count_of(groups[g], "doc_count");

	for (i = 0; i < p->n; i++)
	{
		AggOut	   *o = &p->outs[i];

		if (o->col == NULL || !o->doc_values)
			continue;
		if (o->kind != SE_AGG_GROUP_KEY)
		{
			int64		missing = count_of(sub(aggs, 'm', o->attno), "doc_count");
			char		job = value_counter(p, o->attno);
			int64		values = 0;

			if (job == 0)
				values = count_of(sub(aggs, 'v', o->attno), "value");
			for (g = 0; g < ngroups && job != 0; g++)
				values += count_of(sub(groups[g], job, o->attno), job == 's' ? "count" : "value");

			if (values > total - missing)
				several_values(ss, psprintf("column \"%s\"", o->col->name));
		}
	}
	if (p->nkeys > 0 && grouped_docs > total)
		several_values(ss, "a GROUP BY column");
}

/* One group's row: its key(s) (NULL key: the missing bucket), then the aggregates. */
static void
emit_group(SeScanState *ss, AggPlan *p, TupleDesc desc, const SeJson *g, const SeJson *key,
		   Datum *values, bool *nulls)
{
	int64		dc = count_of(g, "doc_count");
	int			i;

	CHECK_FOR_INTERRUPTS();
	for (i = 0; i < p->n; i++)
	{
		AggOut	   *o = &p->outs[i];

		if (o->kind != SE_AGG_GROUP_KEY)
			values[i] = agg_datum(o, g, dc, &nulls[i]);
		else if (key == NULL)
			nulls[i] = true;
		else if (p->nkeys == 1)
			values[i] = key_datum(o, key, &nulls[i]);
		else
		{
			char		name[16];
			const SeJson *kv;

			snprintf(name, sizeof(name), "k%d", o->key);
			kv = se_json_get(key, name);
			if (kv == NULL)
				elog(ERROR, "group key \"%s\" missing from the engine's answer", name);
			values[i] = key_datum(o, kv, &nulls[i]);
		}
	}
	tuplestore_putvalues(ss->store, desc, values, nulls);
}

/* Run the aggregation of a pushed-down GROUP BY / aggregate query. */
void
se_fdw_aggregate(ForeignScanState *node, SeScanState *ss, const char *body,
				 SeEngineIndex *ei, SeSearchShard *shards, int nshards)
{
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	AggPlan		p;
	Datum	   *values;
	bool	   *nulls;
	char	   *text;
	const SeJson *aggs;
	int64		total;
	int			i;

	agg_plan(ss, ei->mapping, &p);
	values = palloc0(sizeof(Datum) * Max(1, desc->natts));
	nulls = palloc0(sizeof(bool) * Max(1, desc->natts));

	if (p.counts_only)
	{
		int64		c = se_engine_count(body, shards, nshards);

		for (i = 0; i < p.n; i++)
			values[i] = Int64GetDatum(c);
		ss->total_hits = c;
		tuplestore_putvalues(ss->store, desc, values, nulls);
		return;
	}

	/*
	 * Text values past a keyword sub-field's ignore_above, counted first
	 * (a count before a search on the same shards, as foreign_scan.c does).
	 */
	for (i = 0; i < p.n; i++)
	{
		AggOut	   *o = &p.outs[i];
		SeError		err;
		SeJson	   *j;
		int64		n;

		if (o->kind == SE_AGG_COUNT_STAR || o->field->type != SE_FT_TEXT ||
			strcmp(o->dv_field, o->field->path) == 0)
			continue;
		se_error_init(&err);
		j = se_json_parse(body, strlen(body), NULL, &err);
		if (j == NULL)
			se_raise(&err);
		n = long_values(o, se_json_get(j, "query"), shards, nshards);
		if (n > 0)
		{
			if (o->kind == SE_AGG_GROUP_KEY)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_ERROR),
						 errmsg("cannot group foreign table \"%s\" by column \"%s\": %lld matching documents hold a value longer than the ignore_above of field \"%s\"",
								ss->tbl->relname, o->col->name, (long long) n, o->dv_field),
						 errhint("Group by an expression (e.g. %s || '') to group in PostgreSQL, or map the sub-field with a larger ignore_above.",
								 o->col->name)));
			ereport(ERROR,
					(errcode(ERRCODE_FDW_ERROR),
					 errmsg("cannot aggregate column \"%s\" of foreign table \"%s\": %lld matching documents hold a value longer than the ignore_above of field \"%s\"",
							o->col->name, ss->tbl->relname, (long long) n, o->dv_field),
					 errhint("Aggregate an expression (e.g. %s || '') to aggregate in PostgreSQL, or map the sub-field with a larger ignore_above.",
							 o->col->name)));
		}
	}

	text = se_engine_aggregations(ei, body, shards, nshards, &total);
	{
		SeError		err;
		SeJsonParseOptions opts = {0};

		se_error_init(&err);
		aggs = se_json_parse(text, strlen(text), &opts, &err);
		if (aggs == NULL)
			se_raise(&err);
	}

	if (p.nkeys == 0)
	{
		check_answer(ss, &p, aggs, total, &aggs, 1);
		for (i = 0; i < p.n; i++)
			values[i] = agg_datum(&p.outs[i], aggs, total, &nulls[i]);
		tuplestore_putvalues(ss->store, desc, values, nulls);
		ss->total_hits = 1;
	}
	else
	{
		const SeJson *bk = se_json_get(se_json_get(aggs, "groups"), "buckets");
		const SeJson *nullg = se_json_get(aggs, "nulls");
		const SeJson **groups;
		int			b;

		if (bk == NULL || bk->type != SE_JSON_ARRAY)
			elog(ERROR, "no groups in the engine's answer");
		groups = palloc(sizeof(SeJson *) * (bk->u.a.count + 1));
		for (b = 0; b < bk->u.a.count; b++)
			groups[b] = bk->u.a.items[b];
		if (nullg != NULL)
			groups[b++] = nullg;
		check_answer(ss, &p, aggs, total, groups, b);
		for (b = 0; b < bk->u.a.count; b++)
			emit_group(ss, &p, desc, bk->u.a.items[b], se_json_get(bk->u.a.items[b], "key"),
					   values, nulls);
		ss->total_hits = bk->u.a.count;
		/* one column: its NULL group is the missing bucket */
		if (nullg != NULL && count_of(nullg, "doc_count") > 0)
		{
			emit_group(ss, &p, desc, nullg, NULL, values, nulls);
			ss->total_hits++;
		}
	}
}
