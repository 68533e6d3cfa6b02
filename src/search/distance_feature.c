/*-------------------------------------------------------------------------
 *
 * distance_feature.c
 *	  The distance_feature query on date fields.
 *
 * ES 8 (Lucene's LongDistanceFeatureQuery): every doc with a value of
 * the field matches and scores boost * pivot / (pivot + distance), the
 * distance being that of the doc's value closest to origin.  origin takes
 * date math ("now-1h"), pivot a time value ("7d").  It is built as a
 * function_score over an exists query (boost_mode replace) with one
 * function of its own kind, so the function scorer, explain and the
 * weight's binding of origin and pivot (weight.c) serve it unchanged.
 * On a geo_point field (geo_query.c) origin is a point in any of its forms
 * and pivot a distance ("2km"): the field's type decides, when the shard
 * binds the query, which pivot is read, as ES's builder does.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>

#include "search/search_int.h"

/*
 * pivot as ES's TimeValue reads it (nanos, micros, ms, s, m, h, d), in ms
 * as a time value the weight binds (weight.c's decay parameters).
 */
const SeJson *
se_distance_feature_time_pivot(const SeJson *v, SeError *err)
{
	static const struct
	{
		const char *unit;
		double		ms;
	}			units[] = {
		{"nanos", 1e-6}, {"micros", 1e-3}, {"ms", 1}, {"s", 1000}, {"m", 60000},
		{"h", 3600000}, {"d", 86400000},
	};
	char	   *end;
	double		n = strtod(v->u.s.str, &end);
	char		buf[64];
	int			i;

	for (i = 0; i < lengthof(units); i++)
		if (end != v->u.s.str && strcmp(end, units[i].unit) == 0)
		{
			snprintf(buf, sizeof(buf), "%.17gms", n * units[i].ms);
			return se_json_make_string(buf, -1);
		}
	se_error_set(err, 400, "parse_exception",
				 "failed to parse setting [pivot] with value [%s] as a time value: unit is missing or unrecognized",
				 v->u.s.str);
	return NULL;
}

SeQuery *
se_distance_feature_parse(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	SeQuery    *exists;
	SeScoreFunction *fn;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[distance_feature] query malformed, no start_object after query name");
		return NULL;
	}
	q = se_query_new(SE_Q_FUNCTION_SCORE);
	q->score_mode = SE_COMB_MULTIPLY;
	q->boost_mode = SE_COMB_REPLACE;
	q->max_boost = FLT_MAX;
	q->nfunctions = 1;
	q->functions = fn = palloc0(sizeof(SeScoreFunction));
	fn->kind = SE_FN_DISTANCE_FEATURE;
	fn->weight = 1.0f;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "field") == 0 && v->type == SE_JSON_STRING)
			fn->field = pnstrdup(v->u.s.str, v->u.s.len);
		else if (strcmp(k, "origin") == 0 &&
				 (v->type == SE_JSON_STRING || v->type == SE_JSON_NUMBER ||
				  v->type == SE_JSON_OBJECT || v->type == SE_JSON_ARRAY))
			fn->origin = v;
		else if (strcmp(k, "pivot") == 0 && v->type == SE_JSON_STRING)
		{
			SeError		perr;

			/* a time value for dates, a distance for geo_points: kept both ways */
			se_error_init(&perr);
			fn->offset = v;
			fn->scale = se_distance_feature_time_pivot(v, &perr);
			if (perr.reason)
				pfree(perr.reason);
		}
		else if (strcmp(k, "boost") == 0 && v->type == SE_JSON_NUMBER)
		{
			q->boost = (float) v->u.n.d;
			if (q->boost < 0)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "[boost] must be a non-negative number, got [%s]",
							 v->u.n.text);
				return NULL;
			}
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[distance_feature] unknown field [%s]", k);
			return NULL;
		}
	}
	if (fn->field == NULL || fn->origin == NULL || fn->offset == NULL)
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[distance_feature] failed to parse: Required [%s]",
					 fn->field == NULL ? "field" : fn->origin == NULL ? "origin" : "pivot");
		return NULL;
	}
	exists = se_query_new(SE_Q_EXISTS);
	exists->field = fn->field;
	q->inner = exists;
	return q;
}

/*
 * The doc's score factor (before boost): pivot / (pivot + distance) of the
 * value closest to origin, in float as Lucene computes it; 0 when the doc
 * has no value (the exists query keeps such docs out).
 */
double
se_distance_feature_score(const SeFnWeight *f, SeSegmentReader *r, int field, int32 doc)
{
	const int64 *vals;
	int			n = field >= 0 ? se_segment_numeric_values(r, field, doc, &vals) : 0;
	double		best = -1;
	int			i;

	if (f->geo)
		return se_geo_distance_feature_score(f, r, field, doc);
	for (i = 0; i < n; i++)
	{
		double		d = fabs((double) vals[i] - f->origin);

		if (best < 0 || d < best)
			best = d;
	}
	if (best < 0)
		return 0.0;
	return (float) f->scale / ((float) f->scale + (float) best);
}
