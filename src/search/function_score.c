/*-------------------------------------------------------------------------
 *
 * function_score.c
 *	  The function_score and terms_set queries: parsing and their scorers.
 *
 * function_score rescores the docs of its query with functions of their
 * doc values, each optionally behind a filter: weight, field_value_factor
 * (with ES's modifiers; a doc without the value and no "missing" fails
 * the search, as ES's), the decays gauss, exp and linear on numeric and
 * date fields (ES DecayFunctionBuilder's formulas: distance past offset,
 * scale and decay shaping it; a doc without a value scores 1), and
 * random_score (a hash of seed and the field's value, or of the doc's
 * place in the shard, in [0, 1)).  The functions that match combine by
 * score_mode (multiply, sum, avg weighted by the weights, first, max,
 * min; 1 when none matched), are capped by max_boost, and combine with the
 * query's score by boost_mode; min_score then drops docs.  Function
 * scores have no per-block bound, so the scorer offers none: enclosing
 * queries do not skip over it.
 *
 * terms_set matches docs having at least a per-doc number of its terms:
 * the number is the doc's value of minimum_should_match_field (a doc
 * without one does not match), fixed by minimum_should_match, or what
 * minimum_should_match_script (Painless over doc values and
 * params.num_terms; "params.num_terms" alone is a constant) returns for
 * the doc; the score is the matching terms' sum, as Lucene's CoveringQuery.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>

#include "script/script.h"
#include "search/search_int.h"

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */
static bool
fs_error(SeError *err, const char *fmt, const char *arg)
{
	se_error_set(err, 400, "parsing_exception", fmt, arg);
	return false;
}

static bool
parse_combine(const char *key, const SeJson *v, bool boost_mode, SeCombine *out,
			  SeError *err)
{
	static const struct
	{
		const char *name;
		SeCombine	c;
		bool		score;		/* a score_mode */
		bool		boost;		/* a boost_mode */
	}			modes[] = {
		{"multiply", SE_COMB_MULTIPLY, true, true}, {"sum", SE_COMB_SUM, true, true},
		{"avg", SE_COMB_AVG, true, true}, {"first", SE_COMB_FIRST, true, false},
		{"max", SE_COMB_MAX, true, true}, {"min", SE_COMB_MIN, true, true},
		{"replace", SE_COMB_REPLACE, false, true},
	};
	int			i;

	if (v->type == SE_JSON_STRING)
		for (i = 0; i < lengthof(modes); i++)
			if (strcmp(v->u.s.str, modes[i].name) == 0 &&
				(boost_mode ? modes[i].boost : modes[i].score))
			{
				*out = modes[i].c;
				return true;
			}
	se_error_set(err, 400, "parsing_exception",
				 "[function_score] illegal %s [%s]", key,
				 v->type == SE_JSON_STRING ? v->u.s.str : "?");
	return false;
}

static bool
parse_fvf(const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	static const char *const mods[] = {"none", "log", "log1p", "log2p", "ln", "ln1p",
	"ln2p", "square", "sqrt", "reciprocal"};
	int			i,
				j;

	if (v->type != SE_JSON_OBJECT)
		return fs_error(err, "[%s] must be an object", "field_value_factor");
	fn->kind = SE_FN_FIELD_VALUE_FACTOR;
	fn->factor = 1.0;
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;

		if (strcmp(k, "field") == 0 && x->type == SE_JSON_STRING)
			fn->field = pstrdup(x->u.s.str);
		else if (strcmp(k, "factor") == 0 && se_json_as_double(x, &fn->factor))
			 /* set */ ;
		else if (strcmp(k, "missing") == 0 && se_json_as_double(x, &fn->missing))
			fn->has_missing = true;
		else if (strcmp(k, "modifier") == 0 && x->type == SE_JSON_STRING)
		{
			for (j = 0; j < lengthof(mods); j++)
				if (pg_strcasecmp(x->u.s.str, mods[j]) == 0)
					break;
			if (j == lengthof(mods))
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Illegal modifier: %s", x->u.s.str);
				return false;
			}
			fn->modifier = (SeFvfModifier) j;
		}
		else
			return fs_error(err, "[field_value_factor] unknown field [%s]", k);
	}
	if (fn->field == NULL)
		return fs_error(err, "[%s] required field [field] missing", "field_value_factor");
	return true;
}

static bool
parse_decay(const char *name, const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	int			i,
				j;
	bool		have_field = false;

	if (v->type != SE_JSON_OBJECT)
		return fs_error(err, "[%s] must be an object", name);
	fn->kind = strcmp(name, "gauss") == 0 ? SE_FN_GAUSS :
		strcmp(name, "exp") == 0 ? SE_FN_EXP : SE_FN_LINEAR;
	fn->decay = 0.5;
	fn->multi_value_mode = SE_COMB_MIN;
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;

		if (strcmp(k, "multi_value_mode") == 0 && x->type == SE_JSON_STRING)
		{
			if (pg_strcasecmp(x->u.s.str, "min") == 0)
				fn->multi_value_mode = SE_COMB_MIN;
			else if (pg_strcasecmp(x->u.s.str, "max") == 0)
				fn->multi_value_mode = SE_COMB_MAX;
			else if (pg_strcasecmp(x->u.s.str, "avg") == 0)
				fn->multi_value_mode = SE_COMB_AVG;
			else if (pg_strcasecmp(x->u.s.str, "sum") == 0)
				fn->multi_value_mode = SE_COMB_SUM;
			else
				return fs_error(err, "Illegal multi_value_mode [%s]", x->u.s.str);
			continue;
		}
		if (x->type != SE_JSON_OBJECT || have_field)
		{
			se_error_set(err, 400, "parsing_exception", "[%s] unknown field [%s]", name, k);
			return false;
		}
		have_field = true;
		fn->field = pstrdup(k);
		for (j = 0; j < x->u.o.count; j++)
		{
			const char *pk = x->u.o.members[j].key;
			const SeJson *pv = x->u.o.members[j].value;

			if (strcmp(pk, "origin") == 0)
				fn->origin = pv;
			else if (strcmp(pk, "scale") == 0)
				fn->scale = pv;
			else if (strcmp(pk, "offset") == 0)
				fn->offset = pv;
			else if (strcmp(pk, "decay") == 0)
			{
				if (!se_json_as_double(pv, &fn->decay) || fn->decay <= 0 || fn->decay >= 1)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "decay must be in the range [0..1].");
					return false;
				}
			}
			else
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] unknown parameter [%s]", name, pk);
				return false;
			}
		}
	}
	if (!have_field)
		return fs_error(err, "[%s] must name a field", name);
	if (fn->scale == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] must be set for distance functions", "scale");
		return false;
	}
	return true;
}

static bool
parse_random(const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_OBJECT)
		return fs_error(err, "[%s] must be an object", "random_score");
	fn->kind = SE_FN_RANDOM;
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;
		double		d;

		if (strcmp(k, "seed") == 0 && se_json_as_double(x, &d))
		{
			fn->has_seed = true;
			fn->seed = (int64) d;
		}
		else if (strcmp(k, "field") == 0 && x->type == SE_JSON_STRING)
			fn->field = pstrdup(x->u.s.str);
		else
			return fs_error(err, "[random_score] unknown field [%s]", k);
	}
	return true;
}

/*
 * One function from the members of obj (a "functions" entry, or the
 * function_score body itself when single): true with *found when it names
 * one; unknown keys are left to the caller when top_level.
 */
static bool
parse_function_member(const char *k, const SeJson *v, SeScoreFunction *fn,
					  int depth, bool *known, SeError *err)
{
	*known = true;
	if (strcmp(k, "weight") == 0)
	{
		double		d;

		if (!se_json_as_double(v, &d))
			return fs_error(err, "[function_score] failed to parse [%s]", k);
		fn->weight = (float) d;
		return true;
	}
	if (strcmp(k, "field_value_factor") == 0)
		return parse_fvf(v, fn, err);
	if (strcmp(k, "gauss") == 0 || strcmp(k, "exp") == 0 || strcmp(k, "linear") == 0)
		return parse_decay(k, v, fn, err);
	if (strcmp(k, "random_score") == 0)
		return parse_random(v, fn, err);
	if (strcmp(k, "script_score") == 0)
		return se_script_score_fn_parse(v, fn, err);
	*known = false;
	return true;
}

SeQuery *
se_function_score_parse(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	SeScoreFunction top;
	bool		top_used = false;
	int			i,
				j;

	if (body->type != SE_JSON_OBJECT)
	{
		fs_error(err, "[%s] query malformed, no start_object after query name",
				 "function_score");
		return NULL;
	}
	q = se_query_new(SE_Q_FUNCTION_SCORE);
	q->score_mode = SE_COMB_MULTIPLY;
	q->boost_mode = SE_COMB_MULTIPLY;
	q->max_boost = FLT_MAX;
	memset(&top, 0, sizeof(top));
	top.kind = SE_FN_WEIGHT;
	top.weight = 1.0f;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		known;
		double		d;

		if (strcmp(k, "query") == 0)
		{
			if ((q->inner = se_query_parse(v, depth + 1, err)) == NULL)
				return NULL;
		}
		else if (strcmp(k, "functions") == 0)
		{
			if (v->type != SE_JSON_ARRAY)
				{
				fs_error(err, "[function_score] malformed query, expected a [%s] array", k);
				return NULL;
			}
			q->functions = palloc0(sizeof(SeScoreFunction) * (v->u.a.count + 1));
			for (j = 0; j < v->u.a.count; j++)
			{
				const SeJson *f = v->u.a.items[j];
				SeScoreFunction *fn = &q->functions[q->nfunctions++];
				int			m;
				bool		any = false;

				fn->kind = SE_FN_WEIGHT;
				fn->weight = 1.0f;
				if (f->type != SE_JSON_OBJECT)
					{
				fs_error(err, "[function_score] malformed query, expected a [%s] object", "functions");
				return NULL;
			}
				for (m = 0; m < f->u.o.count; m++)
				{
					const char *fk = f->u.o.members[m].key;
					const SeJson *fv = f->u.o.members[m].value;

					if (strcmp(fk, "filter") == 0)
					{
						if ((fn->filter = se_query_parse(fv, depth + 1, err)) == NULL)
							return NULL;
						continue;
					}
					if (!parse_function_member(fk, fv, fn, depth, &known, err))
						return NULL;
					if (!known)
						{
				fs_error(err, "failed to parse [function_score] query: unknown function [%s]", fk);
				return NULL;
			}
					any = true;
				}
				if (!any)
					{
				fs_error(err, "failed to parse [function_score] query. %s", "an entry in functions list is missing a function.");
				return NULL;
			}
			}
		}
		else if (strcmp(k, "score_mode") == 0)
		{
			if (!parse_combine(k, v, false, &q->score_mode, err))
				return NULL;
		}
		else if (strcmp(k, "boost_mode") == 0)
		{
			if (!parse_combine(k, v, true, &q->boost_mode, err))
				return NULL;
		}
		else if (strcmp(k, "max_boost") == 0 && se_json_as_double(v, &d))
			q->max_boost = (float) d;
		else if (strcmp(k, "min_score") == 0 && se_json_as_double(v, &d))
		{
			q->has_min_score = true;
			q->min_score = (float) d;
		}
		else if (strcmp(k, "boost") == 0 && se_json_as_double(v, &d))
			q->boost = (float) d;
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			if (!parse_function_member(k, v, &top, depth, &known, err))
				return NULL;
			if (!known)
				{
				fs_error(err, "[function_score] query does not support [%s]", k);
				return NULL;
			}
			top_used = true;
		}
	}
	if (top_used)
	{
		if (q->nfunctions > 0)
		{
			fs_error(err, "failed to parse [function_score] query. %s",
					 "already found [functions] array, now encountering [function].");
			return NULL;
		}
		q->functions = palloc(sizeof(SeScoreFunction));
		q->functions[0] = top;
		q->nfunctions = 1;
	}
	if (q->inner == NULL)
		q->inner = se_query_new(SE_Q_MATCH_ALL);
	return q;
}

/*
 * terms_set: {"field": {"terms": [..], "minimum_should_match_field": f |
 * "minimum_should_match": spec | "minimum_should_match_script": script}}
 */
SeQuery *
se_terms_set_parse(const SeJson *body, SeError *err)
{
	const SeJson *spec;
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT || body->u.o.count != 1 ||
		body->u.o.members[0].value->type != SE_JSON_OBJECT)
	{
		fs_error(err, "[%s] query malformed, no start_object after query name", "terms_set");
		return NULL;
	}
	q = se_query_new(SE_Q_TERMS_SET);
	q->field = pstrdup(body->u.o.members[0].key);
	spec = body->u.o.members[0].value;
	for (i = 0; i < spec->u.o.count; i++)
	{
		const char *k = spec->u.o.members[i].key;
		const SeJson *v = spec->u.o.members[i].value;
		double		d;

		if (strcmp(k, "terms") == 0 && v->type == SE_JSON_ARRAY)
		{
			q->nvalues = v->u.a.count;
			q->values = (const SeJson **) v->u.a.items;
		}
		else if (strcmp(k, "minimum_should_match_field") == 0 && v->type == SE_JSON_STRING)
			q->msm_field = pstrdup(v->u.s.str);
		else if (strcmp(k, "minimum_should_match") == 0 &&
				 (v->type == SE_JSON_STRING || v->type == SE_JSON_NUMBER))
			q->msm = v->type == SE_JSON_STRING ? pstrdup(v->u.s.str)
				: pnstrdup(v->u.n.text, v->u.n.len);
		else if (strcmp(k, "minimum_should_match_script") == 0)
		{
			SeScoreFunction fn = {0};

			/* Painless over doc values and params.num_terms */
			if (!se_script_spec_parse("terms_set", v, &fn, err))
				return NULL;
			q->msm_script = fn.script;
			q->msm_script_params = fn.script_params;
		}
		else if (strcmp(k, "boost") == 0 && se_json_as_double(v, &d))
			q->boost = (float) d;
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			fs_error(err, "[terms_set] query does not support [%s]", k);
			return NULL;
		}
	}
	if (q->msm_field == NULL && q->msm == NULL && q->msm_script == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[terms_set] requires one of [minimum_should_match_field], [minimum_should_match_script] or [minimum_should_match]");
		return NULL;
	}
	return q;
}

/* ---------------------------------------------------------------------
 * The function_score scorer
 * ---------------------------------------------------------------------
 */
typedef struct FnScorer
{
	SeFilteredScorer f;			/* f.inner: the query's scorer */
	SeWeight   *w;
	SeSegmentReader *reader;
	int			seg_ord;
	SeScorer  **filters;		/* per function, NULL: none / nothing here */
	SeScriptLeaf **scripts;		/* per function: script_score's, or NULL */
	int		   *fields;			/* per function: field number, -1 none */
	float		score;			/* of the current doc */
} FnScorer;

static double
value_of(const SeFnWeight *f, int64 v)
{
	return f->is_double ? se_sortable_to_double(v) : (double) v;
}

static double
fvf_score(const SeFnWeight *f, SeSegmentReader *r, int field, int32 doc)
{
	const int64 *vals;
	int			n = field >= 0 ? se_segment_numeric_values(r, field, doc, &vals) : 0;
	double		x;

	if (n > 0)
		x = value_of(f, vals[0]);
	else if (f->has_missing)
		x = f->missing;
	else
	{
		SeError		e;

		/* ES's FieldValueFactorFunction fails the shard's search */
		se_error_init(&e);
		se_error_set(&e, 500, "exception", "Missing value for field [%s]",
					 f->field ? f->field : "");
		se_search_fail(&e);
		return 1.0;
	}
	x *= f->factor;
	switch (f->modifier)
	{
		case SE_FVF_NONE:
			break;
		case SE_FVF_LOG:
			x = log10(x);
			break;
		case SE_FVF_LOG1P:
			x = log10(x + 1);
			break;
		case SE_FVF_LOG2P:
			x = log10(x + 2);
			break;
		case SE_FVF_LN:
			x = log(x);
			break;
		case SE_FVF_LN1P:
			x = log1p(x);
			break;
		case SE_FVF_LN2P:
			x = log(x + 2);
			break;
		case SE_FVF_SQUARE:
			x = x * x;
			break;
		case SE_FVF_SQRT:
			x = sqrt(x);
			break;
		case SE_FVF_RECIPROCAL:
			x = 1.0 / x;
			break;
	}
	if (isnan(x) || isinf(x) || x < 0)
		return 0.0;
	return x;
}

/* ES DecayFunctionBuilder: gauss, exp and linear of a distance */
static double
decay_of(const SeFnWeight *f, double distance)
{
	double		d = Max(0.0, distance - f->offset);

	switch (f->kind)
	{
		case SE_FN_GAUSS:
			{
				double		sigma2 = -(f->scale * f->scale) / (2.0 * log(f->decay));

				return exp(-(d * d) / (2.0 * sigma2));
			}
		case SE_FN_EXP:
			return exp(log(f->decay) / f->scale * d);
		default:
			{
				double		s = f->scale / (1.0 - f->decay);

				return Max(0.0, (s - d) / s);
			}
	}
}

static double
decay_score(const SeFnWeight *f, SeSegmentReader *r, int field, int32 doc)
{
	const int64 *vals;
	int			n = field >= 0 ? se_segment_numeric_values(r, field, doc, &vals) : 0;
	double		acc = 0;
	int			i;

	if (n == 0)
		return 1.0;
	for (i = 0; i < n; i++)
	{
		double		dist;

		if (f->geo)
		{
			double		lat,
						lon;

			/* a geo_point: the arc distance of the point in metres */
			se_geo_decode(vals[i], &lat, &lon);
			dist = se_geo_arc_meters(f->origin_lat, f->origin_lon, lat, lon);
		}
		else
			dist = fabs(value_of(f, vals[i]) - f->origin);

		if (i == 0)
			acc = dist;
		else if (f->multi_value_mode == SE_COMB_MIN)
			acc = Min(acc, dist);
		else if (f->multi_value_mode == SE_COMB_MAX)
			acc = Max(acc, dist);
		else
			acc += dist;
	}
	if (f->multi_value_mode == SE_COMB_AVG)
		acc /= n;
	return decay_of(f, acc);
}

/* Java's Double.toString of d (ES prints its doubles so) */
static void
append_jdouble(StringInfo out, double d)
{
	char		buf[64];

	se_script_java_double(buf, d, false);
	appendStringInfoString(out, buf);
}

/*
 * A decay function's description in doc's explanation, as ES's
 * DecayFunctionBuilder writes it: its multi_value_mode over each value's
 * distance (a doc without one: 0.0), inside the function's formula with
 * the scale as processed (gauss: 0.5*scale^2/ln(decay), exp:
 * ln(decay)/scale, linear: scale/(1-decay)); numbers as Java's doubles.
 */
void
se_function_decay_text(const SeFnWeight *f, SeSegmentReader *r, int32 doc, StringInfo out)
{
	const int64 *vals;
	int			field = f->field ? se_segment_field(r, f->field) : -1;
	int			n = field >= 0 ? se_segment_numeric_values(r, field, doc, &vals) : 0;
	StringInfoData dist;
	double		ps;
	int			i;

	initStringInfo(&dist);
	appendStringInfoString(&dist, f->multi_value_mode == SE_COMB_MAX ? "MAX" :
						   f->multi_value_mode == SE_COMB_AVG ? "AVG" :
						   f->multi_value_mode == SE_COMB_SUM ? "SUM" : "MIN");
	appendStringInfoChar(&dist, '[');
	for (i = 0; i < n; i++)
	{
		appendStringInfoString(&dist, i > 0 ? ", Math.max(Math.abs(" : "Math.max(Math.abs(");
		append_jdouble(&dist, value_of(f, vals[i]));
		appendStringInfoString(&dist, "(=doc value) - ");
		append_jdouble(&dist, f->origin);
		appendStringInfoString(&dist, "(=origin))) - ");
		append_jdouble(&dist, f->offset);
		appendStringInfoString(&dist, "(=offset), 0)");
	}
	if (n == 0)
		appendStringInfoString(&dist, "0.0");
	appendStringInfoChar(&dist, ']');
	switch (f->kind)
	{
		case SE_FN_GAUSS:
			ps = 0.5 * pow(f->scale, 2.0) / log(f->decay);
			appendStringInfo(out, "exp(-0.5*pow(%s,2.0)/", dist.data);
			append_jdouble(out, -1 * ps);
			appendStringInfoChar(out, ')');
			break;
		case SE_FN_EXP:
			ps = log(f->decay) / f->scale;
			appendStringInfo(out, "exp(- %s * ", dist.data);
			append_jdouble(out, -1 * ps);
			appendStringInfoChar(out, ')');
			break;
		default:
			ps = f->scale / (1.0 - f->decay);
			appendStringInfoString(out, "max(0.0, ((");
			append_jdouble(out, ps);
			appendStringInfo(out, " - %s)/", dist.data);
			append_jdouble(out, ps);
			appendStringInfoChar(out, ')');
			break;
	}
}

/* splitmix64's finalizer: a well-mixed hash of x */
static uint64
mix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

static double
random_score(const SeFnWeight *f, SeSegmentReader *r, int field, int seg_ord,
			 int32 doc)
{
	uint64		key;
	const int64 *vals;

	if (field >= 0 && se_segment_numeric_values(r, field, doc, &vals) > 0)
		key = (uint64) vals[0];
	else
		key = ((uint64) seg_ord << 32) | (uint32) doc;
	/* 24 bits, as ES's random score: in [0, 1) */
	return (double) (mix64(key ^ mix64((uint64) f->seed)) >> 40) / (double) (1 << 24);
}

static bool
filter_matches(FnScorer *s, int i, int32 doc)
{
	SeScorer   *fs = s->filters[i];

	if (s->w->fns[i].filter == NULL)
		return true;
	if (fs == NULL)
		return false;
	if (fs->doc < doc)
		fs->advance(fs, doc);
	return fs->doc == doc;
}

/* Function i's value for doc (its weight not applied). */
static double
fn_value(FnScorer *s, int i, int32 doc, double qscore)
{
	const SeFnWeight *f = &s->w->fns[i];

	switch (f->kind)
	{
		case SE_FN_WEIGHT:
			return 1.0;
		case SE_FN_FIELD_VALUE_FACTOR:
			return fvf_score(f, s->reader, s->fields[i], doc);
		case SE_FN_RANDOM:
			return random_score(f, s->reader, s->fields[i], s->seg_ord, doc);
		case SE_FN_DISTANCE_FEATURE:
			return se_distance_feature_score(f, s->reader, s->fields[i], doc);
		case SE_FN_SCRIPT:
			return se_script_leaf_score(s->scripts[i], doc, (float) qscore);
		default:
			return decay_score(f, s->reader, s->fields[i], doc);
	}
}

/*
 * The functions' factor for doc by score_mode (max_boost not applied);
 * values, when given, gets each function's value (NaN: its filter does not
 * match, or score_mode first stopped before it).
 */
static double
fn_factor(FnScorer *s, int32 doc, double qscore, double *values)
{
	SeWeight   *w = s->w;
	double		factor = 1.0;
	double		wsum = 0;
	double		sum = 0;
	bool		any = false;
	int			i;

	for (i = 0; values != NULL && i < w->nfns; i++)
		values[i] = NAN;
	for (i = 0; i < w->nfns; i++)
	{
		const SeFnWeight *f = &w->fns[i];
		double		v;

		if (!filter_matches(s, i, doc))
			continue;
		v = fn_value(s, i, doc, qscore);
		if (values != NULL)
			values[i] = v;
		v *= f->weight;
		if (!any)
		{
			factor = v;
			sum = v;
			wsum = f->weight;
			any = true;
			if (w->score_mode == SE_COMB_FIRST)
				break;
			continue;
		}
		switch (w->score_mode)
		{
			case SE_COMB_MULTIPLY:
				factor *= v;
				break;
			case SE_COMB_MAX:
				factor = Max(factor, v);
				break;
			case SE_COMB_MIN:
				factor = Min(factor, v);
				break;
			default:			/* sum, avg */
				sum += v;
				wsum += f->weight;
				break;
		}
	}
	if (any && w->score_mode == SE_COMB_SUM)
		factor = sum;
	else if (any && w->score_mode == SE_COMB_AVG)
		factor = wsum != 0 ? sum / wsum : 0;
	return factor;
}

/* The function_score of the inner scorer's current doc */
static float
fn_compute(FnScorer *s)
{
	SeWeight   *w = s->w;
	int32		doc = s->f.inner->doc;
	double		qscore = s->f.inner->score(s->f.inner);
	double		factor = fn_factor(s, doc, qscore, NULL);
	double		out;

	factor = Min(factor, (double) w->max_boost);
	switch (w->boost_mode)
	{
		case SE_COMB_REPLACE:
			out = factor;
			break;
		case SE_COMB_SUM:
			out = qscore + factor;
			break;
		case SE_COMB_AVG:
			out = (qscore + factor) / 2.0;
			break;
		case SE_COMB_MAX:
			out = Max(qscore, factor);
			break;
		case SE_COMB_MIN:
			out = Min(qscore, factor);
			break;
		default:
			out = qscore * factor;
			break;
	}
	return (float) (out * w->fn_boost);
}

/* A doc of the query passing min_score (its score computed on the way). */
static bool
fn_accept(SeFilteredScorer *f, int32 doc)
{
	FnScorer   *s = (FnScorer *) f;

	s->score = fn_compute(s);
	return !s->w->has_min_score || s->score >= s->w->min_score;
}

static float
fn_score(SeScorer *b)
{
	return ((FnScorer *) b)->score;
}

static void
fn_close(SeScorer *b)
{
	FnScorer   *s = (FnScorer *) b;
	int			i;

	se_scorer_free(s->f.inner);
	for (i = 0; i < s->w->nfns; i++)
		if (s->filters[i])
			se_scorer_free(s->filters[i]);
}

SeScorer *
se_function_scorer_create(SeWeight *w, SeSegmentCtx *seg)
{
	SeScorer   *inner = se_scorer_create(w->inner, seg);
	FnScorer   *s;
	int			i;

	if (inner == NULL)
		return NULL;
	s = palloc0(sizeof(FnScorer));
	se_filtered_scorer_init(&s->f, inner, fn_accept);
	s->f.base.score = fn_score;
	s->f.base.close = fn_close;
	s->f.base.max_score = FLT_MAX;
	s->w = w;
	s->reader = seg->reader;
	s->seg_ord = seg->ord;
	s->filters = palloc0(sizeof(SeScorer *) * Max(1, w->nfns));
	s->fields = palloc(sizeof(int) * Max(1, w->nfns));
	s->scripts = palloc0(sizeof(SeScriptLeaf *) * Max(1, w->nfns));
	for (i = 0; i < w->nfns; i++)
	{
		if (w->fns[i].script != NULL)
			s->scripts[i] = se_script_leaf_open(w->fns[i].script, seg->reader);
		s->fields[i] = w->fns[i].field ? se_segment_field(seg->reader, w->fns[i].field) : -1;
		if (w->fns[i].filter)
			s->filters[i] = se_scorer_create(w->fns[i].filter, seg);
	}
	return &s->f.base;
}

/*
 * For explanations (explain.c): doc's function values (values[i] NaN when
 * function i does not apply to it) and their factor by score_mode before
 * max_boost, from the same code as the scorer.  False when w's query does
 * not match doc.
 */
bool
se_function_score_values(SeWeight *w, SeSegmentCtx *seg, int32 doc, double *values,
						 double *factor)
{
	SeScorer   *b = se_function_scorer_create(w, seg);
	FnScorer   *s = (FnScorer *) b;
	bool		hit;

	if (b == NULL)
		return false;
	hit = s->f.inner->advance(s->f.inner, doc) == doc;
	if (hit)
		*factor = fn_factor(s, doc, s->f.inner->score(s->f.inner), values);
	se_scorer_free(b);
	return hit;
}

/* ---------------------------------------------------------------------
 * The terms_set scorer
 * ---------------------------------------------------------------------
 */
typedef struct TsScorer
{
	SeScorer	base;
	SeWeight   *w;
	SeScorer  **subs;			/* one per term present in the segment */
	int			nsubs;
	SeSegmentReader *reader;
	int			field;			/* msm_field here, -1: absent */
	SeScriptLeaf *script;		/* minimum_should_match_script, or NULL */
	float		score;
} TsScorer;

/* The docs from doc on where enough terms match (subs all at >= doc). */
static int32
ts_settle(TsScorer *s)
{
	for (;;)
	{
		int32		doc = SE_NO_MORE_DOCS;
		int			count = 0;
		double		sum = 0;
		int64		need;
		int			i;

		for (i = 0; i < s->nsubs; i++)
			doc = Min(doc, s->subs[i]->doc);
		s->base.doc = doc;
		if (doc == SE_NO_MORE_DOCS)
			return doc;
		SE_SEARCH_TICK(s->nsubs);
		for (i = 0; i < s->nsubs; i++)
			if (s->subs[i]->doc == doc)
			{
				count++;
				sum += s->subs[i]->score(s->subs[i]);
			}
		if (s->w->msm_field != NULL)
		{
			const int64 *vals;

			need = s->field >= 0 &&
				se_segment_numeric_values(s->reader, s->field, doc, &vals) > 0 ?
				vals[0] : PG_INT64_MAX;
		}
		else if (s->script != NULL)
		{
			if (!se_script_leaf_number(s->script, doc, &need))
				need = PG_INT64_MAX;
		}
		else
			need = s->w->msm_const;
		if (count >= Max(need, 1))
		{
			s->score = (float) sum;
			return doc;
		}
		for (i = 0; i < s->nsubs; i++)
			if (s->subs[i]->doc == doc)
				s->subs[i]->next(s->subs[i]);
	}
}

static int32
ts_next(SeScorer *b)
{
	TsScorer   *s = (TsScorer *) b;
	int32		cur = s->base.doc;
	int			i;

	for (i = 0; i < s->nsubs; i++)
		if (s->subs[i]->doc <= cur)
			s->subs[i]->next(s->subs[i]);
	return ts_settle(s);
}

static int32
ts_advance(SeScorer *b, int32 target)
{
	TsScorer   *s = (TsScorer *) b;
	int			i;

	for (i = 0; i < s->nsubs; i++)
		if (s->subs[i]->doc < target)
			s->subs[i]->advance(s->subs[i], target);
	return ts_settle(s);
}

static float
ts_score(SeScorer *b)
{
	return ((TsScorer *) b)->score;
}

static void
ts_close(SeScorer *b)
{
	TsScorer   *s = (TsScorer *) b;
	int			i;

	for (i = 0; i < s->nsubs; i++)
		se_scorer_free(s->subs[i]);
}

SeScorer *
se_terms_set_scorer_create(SeWeight *w, SeSegmentCtx *seg)
{
	TsScorer   *s = palloc0(sizeof(TsScorer));
	int			i;

	s->subs = palloc(sizeof(SeScorer *) * Max(1, w->nshould));
	for (i = 0; i < w->nshould; i++)
	{
		SeScorer   *sub = se_scorer_create(w->should[i], seg);

		if (sub == NULL)
			continue;
		sub->next(sub);
		s->subs[s->nsubs++] = sub;
		s->base.cost += sub->cost;
	}
	if (s->nsubs == 0)
		return NULL;
	s->w = w;
	s->reader = seg->reader;
	s->field = w->msm_field ? se_segment_field(seg->reader, w->msm_field) : -1;
	s->script = w->msm_script ? se_script_leaf_open(w->msm_script, seg->reader) : NULL;
	s->base.doc = -1;
	s->base.next = ts_next;
	s->base.advance = ts_advance;
	s->base.score = ts_score;
	s->base.close = ts_close;
	s->base.max_score = FLT_MAX;
	return &s->base;
}
