/*-------------------------------------------------------------------------
 *
 * request.c
 *	  Parse an ES search body: query, from/size, sort, _source,
 *	  track_total_hits, track_scores, min_score.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/aggs.h"
#include "search/search_int.h"

static const char *
token_name(const SeJson *v)
{
	switch (v->type)
	{
		case SE_JSON_OBJECT:
			return "START_OBJECT";
		case SE_JSON_ARRAY:
			return "START_ARRAY";
		case SE_JSON_STRING:
			return "VALUE_STRING";
		case SE_JSON_NUMBER:
			return "VALUE_NUMBER";
		case SE_JSON_TRUE:
		case SE_JSON_FALSE:
			return "VALUE_BOOLEAN";
		case SE_JSON_NULL:
			return "VALUE_NULL";
	}
	return "VALUE";
}

static SeSearchRequest *
new_request(void)
{
	SeSearchRequest *req = palloc0(sizeof(SeSearchRequest));

	req->from = 0;
	req->size = 10;
	req->max_result_window = 10000;
	req->track_total_hits = SE_TRACK_TOTAL_HITS_DEFAULT;
	req->timeout_ms = -1;
	req->source.fetch = true;
	req->pit_keep_alive_ms = -1;
	req->nsort_visible = -1;
	return req;
}

/* An integer parameter given as a JSON number or numeric string. */
static bool
parse_int(const char *key, const SeJson *v, int64 *out, SeError *err)
{
	double		d;
	char	   *end;

	if (v->type == SE_JSON_NUMBER && v->u.n.is_int)
	{
		*out = v->u.n.i;
		return true;
	}
	if (v->type == SE_JSON_STRING && v->u.s.len > 0)
	{
		d = strtod(v->u.s.str, &end);
		if (*end == '\0' && d == floor(d) && d > -1e15 && d < 1e15)
		{
			*out = (int64) d;
			return true;
		}
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[%s] failed to parse field [%s]: expected an integer", key, key);
	return false;
}

static bool
parse_size_param(const char *key, const SeJson *v, int *out, SeError *err)
{
	int64		n;

	if (!parse_int(key, v, &n, err))
		return false;
	if (n < 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] parameter cannot be negative, found [" INT64_FORMAT "]",
					 key, n);
		return false;
	}
	if (n > PG_INT32_MAX)
		n = PG_INT32_MAX;
	*out = (int) n;
	return true;
}

static char **
string_list(const SeJson *v, int *n, const char *key, SeError *err)
{
	char	  **out;
	int			i;

	if (v->type == SE_JSON_STRING)
	{
		out = palloc(sizeof(char *));
		out[0] = pstrdup(v->u.s.str);
		*n = 1;
		return out;
	}
	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [%s].", token_name(v), key);
		return NULL;
	}
	out = palloc(sizeof(char *) * (v->u.a.count + 1));
	for (i = 0; i < v->u.a.count; i++)
	{
		if (v->u.a.items[i]->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "parsing_exception",
						 "Unknown key for a %s in [%s].",
						 token_name(v->u.a.items[i]), key);
			return NULL;
		}
		out[i] = pstrdup(v->u.a.items[i]->u.s.str);
	}
	*n = v->u.a.count;
	return out;
}

/* _source: true | false | "f" | ["a","b*"] | {"includes":..,"excludes":..} */
static bool
parse_source(const SeJson *v, SeSourceFilter *f, SeError *err)
{
	int			i;

	memset(f, 0, sizeof(*f));
	f->fetch = true;
	switch (v->type)
	{
		case SE_JSON_TRUE:
			return true;
		case SE_JSON_FALSE:
			f->fetch = false;
			return true;
		case SE_JSON_STRING:
		case SE_JSON_ARRAY:
			f->include = string_list(v, &f->ninclude, "_source", err);
			return f->include != NULL;
		case SE_JSON_OBJECT:
			for (i = 0; i < v->u.o.count; i++)
			{
				const char *k = v->u.o.members[i].key;
				const SeJson *iv = v->u.o.members[i].value;

				if (strcmp(k, "includes") == 0 || strcmp(k, "include") == 0)
				{
					f->include = string_list(iv, &f->ninclude, k, err);
					if (f->include == NULL)
						return false;
				}
				else if (strcmp(k, "excludes") == 0 || strcmp(k, "exclude") == 0)
				{
					f->exclude = string_list(iv, &f->nexclude, k, err);
					if (f->exclude == NULL)
						return false;
				}
				else
				{
					se_error_set(err, 400, "parsing_exception",
								 "Unknown key for a %s in [%s].", token_name(iv), k);
					return false;
				}
			}
			return true;
		default:
			break;
	}
	se_error_set(err, 400, "parsing_exception",
				 "Unknown key for a %s in [_source].", token_name(v));
	return false;
}

static bool
parse_order(const SeJson *v, bool *desc, SeError *err)
{
	if (v->type == SE_JSON_STRING)
	{
		if (pg_strcasecmp(v->u.s.str, "asc") == 0)
		{
			*desc = false;
			return true;
		}
		if (pg_strcasecmp(v->u.s.str, "desc") == 0)
		{
			*desc = true;
			return true;
		}
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "Unknown SortOrder [%s]",
				 v->type == SE_JSON_STRING ? v->u.s.str : token_name(v));
	return false;
}

static void
init_sort_spec(SeSortSpec *s, const char *name)
{
	memset(s, 0, sizeof(*s));
	if (strcmp(name, "_score") == 0)
	{
		s->kind = SE_SORT_SCORE;
		s->desc = true;
	}
	else if (strcmp(name, "_doc") == 0)
		s->kind = SE_SORT_DOC;
	else if (strcmp(name, "_shard_doc") == 0)
		s->kind = SE_SORT_SHARD_DOC;
	else
	{
		s->kind = SE_SORT_FIELD;
		s->field = pstrdup(name);
	}
	s->missing = SE_MISSING_LAST;
	s->mode = SE_SORT_MODE_DEFAULT;
}

/* {"field": "desc"} or {"field": {"order":..,"missing":..,"mode":..}} */
static bool
parse_sort_object(const SeJson *v, SeSortSpec *s, SeError *err)
{
	const SeJsonMember *m;
	int			i;

	if (v->u.o.count != 1)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[sort] expects exactly one field per sort object, found [%d]",
					 v->u.o.count);
		return false;
	}
	m = &v->u.o.members[0];
	if (strcmp(m->key, "_geo_distance") == 0)
		return se_geo_sort_parse(m->value, s, err);
	init_sort_spec(s, m->key);
	if (m->value->type == SE_JSON_STRING)
		return parse_order(m->value, &s->desc, err);
	if (m->value->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[sort] unexpected token [%s] for [%s]",
					 token_name(m->value), m->key);
		return false;
	}
	for (i = 0; i < m->value->u.o.count; i++)
	{
		const char *k = m->value->u.o.members[i].key;
		const SeJson *ov = m->value->u.o.members[i].value;

		if (strcmp(k, "order") == 0)
		{
			if (!parse_order(ov, &s->desc, err))
				return false;
		}
		else if (strcmp(k, "missing") == 0 && s->kind == SE_SORT_FIELD)
		{
			if (ov->type == SE_JSON_STRING && strcmp(ov->u.s.str, "_last") == 0)
				s->missing = SE_MISSING_LAST;
			else if (ov->type == SE_JSON_STRING && strcmp(ov->u.s.str, "_first") == 0)
				s->missing = SE_MISSING_FIRST;
			else if (ov->type == SE_JSON_STRING || ov->type == SE_JSON_NUMBER ||
					 ov->type == SE_JSON_TRUE || ov->type == SE_JSON_FALSE)
			{
				s->missing = SE_MISSING_VALUE;
				s->missing_value = ov;
			}
			else if (ov->type != SE_JSON_NULL)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[field_sort] missing doesn't support values of type: %s",
							 token_name(ov));
				return false;
			}
		}
		else if (strcmp(k, "mode") == 0 && s->kind == SE_SORT_FIELD)
		{
			if (ov->type == SE_JSON_STRING && strcmp(ov->u.s.str, "min") == 0)
				s->mode = SE_SORT_MODE_MIN;
			else if (ov->type == SE_JSON_STRING && strcmp(ov->u.s.str, "max") == 0)
				s->mode = SE_SORT_MODE_MAX;
			else
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Unsupported sort mode [%s]: only [min] and [max] are supported",
							 ov->type == SE_JSON_STRING ? ov->u.s.str : token_name(ov));
				return false;
			}
		}
		else if (strcmp(k, "unmapped_type") == 0 && s->kind == SE_SORT_FIELD)
		{
			if (ov->type != SE_JSON_STRING)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[field_sort] unmapped_type doesn't support values of type: %s",
							 token_name(ov));
				return false;
			}
			s->unmapped_type = pstrdup(ov->u.s.str);
		}
		else if (strcmp(k, "numeric_type") == 0 && s->kind == SE_SORT_FIELD)
		{
			if (ov->type != SE_JSON_STRING ||
				(strcmp(ov->u.s.str, "long") != 0 && strcmp(ov->u.s.str, "double") != 0 &&
				 strcmp(ov->u.s.str, "date") != 0 && strcmp(ov->u.s.str, "date_nanos") != 0))
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "invalid value for [numeric_type], must be [long, double, date, date_nanos], got %s",
							 ov->type == SE_JSON_STRING ? ov->u.s.str : token_name(ov));
				return false;
			}
			s->numeric_type = pstrdup(ov->u.s.str);
		}
		else if (strcmp(k, "format") == 0)
			 /* accepted: values are reported in the field's own type */ ;
		else if (strcmp(k, "nested") == 0 && s->kind == SE_SORT_FIELD)
		{
			const SeJson *p = ov->type == SE_JSON_OBJECT ? se_json_get(ov, "path") : NULL;
			const SeJson *f = ov->type == SE_JSON_OBJECT ? se_json_get(ov, "filter") : NULL;

			if (p == NULL || p->type != SE_JSON_STRING)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[nested] failed to parse field [path]");
				return false;
			}
			s->nested_path = pstrdup(p->u.s.str);
			if (f != NULL && (s->nested_filter = se_query_parse(f, 1, err)) == NULL)
				return false;
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] unknown field [%s]",
						 s->kind == SE_SORT_FIELD ? "field_sort" :
						 s->kind == SE_SORT_SCORE ? "_score" : "_doc", k);
			return false;
		}
	}
	return true;
}

static bool
parse_sort(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	const SeJson *const *items;
	const SeJson *one[1];
	int			n,
				i;

	if (v->type == SE_JSON_ARRAY)
	{
		items = (const SeJson *const *) v->u.a.items;
		n = v->u.a.count;
	}
	else
	{
		one[0] = v;
		items = one;
		n = 1;
	}
	req->sort = palloc0(sizeof(SeSortSpec) * (n + 1));
	req->nsort = 0;
	for (i = 0; i < n; i++)
	{
		SeSortSpec *s = &req->sort[req->nsort];

		if (items[i]->type == SE_JSON_STRING)
			init_sort_spec(s, items[i]->u.s.str);
		else if (items[i]->type == SE_JSON_OBJECT)
		{
			if (!parse_sort_object(items[i], s, err))
				return false;
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[sort] unexpected token [%s]", token_name(items[i]));
			return false;
		}
		req->nsort++;
	}

	/* a lone "_score" desc is the default relevance order: no sort values */
	if (req->nsort == 1 && req->sort[0].kind == SE_SORT_SCORE && req->sort[0].desc)
		req->nsort = 0;
	return true;
}

static bool
parse_track_total_hits(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int64		n;

	if (v->type == SE_JSON_TRUE)
		req->track_total_hits = SE_TRACK_TOTAL_ACCURATE;
	else if (v->type == SE_JSON_FALSE)
		req->track_total_hits = SE_TRACK_TOTAL_DISABLED;
	else
	{
		if (!parse_int("track_total_hits", v, &n, err))
			return false;
		if (n < -1)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[track_total_hits] parameter must be positive or equals to -1, got " INT64_FORMAT,
						 n);
			return false;
		}
		req->track_total_hits = n == -1 ? SE_TRACK_TOTAL_DISABLED : n;
	}
	return true;
}

/*
 * "timeout" as ES's TimeValue: -1 (none), 0, or an integer with a unit
 * (nanos, micros, ms, s, m, h, d); in milliseconds, sub-millisecond
 * values rounded up.
 */
static bool
parse_timeout(const SeJson *v, int64 *ms, SeError *err)
{
	static const struct
	{
		const char *unit;
		int64		per_ms_num;	/* value * num / den milliseconds */
		int64		per_ms_den;
	}			units[] = {
		{"nanos", 1, 1000000}, {"micros", 1, 1000}, {"ms", 1, 1},
		{"s", 1000, 1}, {"m", 60000, 1}, {"h", 3600000, 1}, {"d", 86400000, 1},
	};
	char	   *text;
	int			len;
	int			i;

	if (v->type == SE_JSON_STRING)
		text = pnstrdup(v->u.s.str, v->u.s.len);
	else if (v->type == SE_JSON_NUMBER)
		text = pnstrdup(v->u.n.text, v->u.n.len);
	else
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [timeout].", token_name(v));
		return false;
	}
	len = strlen(text);
	if (strcmp(text, "-1") == 0 || strcmp(text, "0") == 0)
	{
		*ms = text[0] == '-' ? -1 : 0;
		return true;
	}
	for (i = 0; i < lengthof(units); i++)
	{
		int			ulen = strlen(units[i].unit);
		char	   *end;
		int64		n;

		if (len <= ulen || pg_strcasecmp(text + len - ulen, units[i].unit) != 0)
			continue;
		/* "ms" also ends in "s": the longer units come first */
		text[len - ulen] = '\0';
		errno = 0;
		n = strtoi64(text, &end, 10);
		if (*end != '\0' || end == text || errno != 0 || n < 0)
		{
			se_error_set(err, 400, "parse_exception",
						 strchr(text, '.') ? "failed to parse [%s%s], fractional time values are not supported" :
						 "failed to parse [%s%s]", text, units[i].unit);
			return false;
		}
		if (n > PG_INT64_MAX / units[i].per_ms_num)
			n = PG_INT64_MAX / units[i].per_ms_num;
		*ms = (n * units[i].per_ms_num + units[i].per_ms_den - 1) / units[i].per_ms_den;
		return true;
	}
	se_error_set(err, 400, "parse_exception",
				 "failed to parse setting [timeout] with value [%s] as a time value: unit is missing or unrecognized",
				 text);
	return false;
}

/* A float parameter given as a JSON number or numeric string. */
static bool
parse_float_param(const char *key, const SeJson *v, float *out, SeError *err)
{
	char	   *end;

	if (v->type == SE_JSON_NUMBER)
	{
		*out = (float) v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING && v->u.s.len > 0)
	{
		*out = strtof(v->u.s.str, &end);
		if (*end == '\0')
			return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[%s] failed to parse field [%s]: expected a number", key, key);
	return false;
}

/* One rescorer: {"window_size", "query": {"rescore_query", weights, score_mode}} */
static bool
parse_one_rescore(const SeJson *v, SeRescore *r, SeError *err)
{
	int			i;
	const SeJson *q = NULL;

	r->window_size = 10;
	r->query_weight = 1.0f;
	r->rescore_query_weight = 1.0f;
	r->mode = SE_RESCORE_TOTAL;
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "Unknown key for a %s in [rescore].",
					 token_name(v));
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;
		int64		n;

		if (strcmp(k, "window_size") == 0)
		{
			if (!parse_int(k, x, &n, err))
				return false;
			if (n < 0 || n > PG_INT32_MAX)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "[window_size] must be greater than or equal to 0");
				return false;
			}
			r->window_size = (int) n;
		}
		else if (strcmp(k, "query") == 0 && x->type == SE_JSON_OBJECT)
			q = x;
		else
		{
			se_error_set(err, 400, "parsing_exception", "rescore doesn't support [%s]", k);
			return false;
		}
	}
	if (q == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "missing rescore type");
		return false;
	}
	for (i = 0; i < q->u.o.count; i++)
	{
		const char *k = q->u.o.members[i].key;
		const SeJson *x = q->u.o.members[i].value;

		if (strcmp(k, "rescore_query") == 0)
		{
			if ((r->query = se_query_parse(x, 0, err)) == NULL)
				return false;
		}
		else if (strcmp(k, "query_weight") == 0)
		{
			if (!parse_float_param(k, x, &r->query_weight, err))
				return false;
		}
		else if (strcmp(k, "rescore_query_weight") == 0)
		{
			if (!parse_float_param(k, x, &r->rescore_query_weight, err))
				return false;
		}
		else if (strcmp(k, "score_mode") == 0 && x->type == SE_JSON_STRING)
		{
			static const char *const modes[] = {"total", "multiply", "avg", "max", "min"};
			int			m;

			for (m = 0; m < lengthof(modes); m++)
				if (pg_strcasecmp(x->u.s.str, modes[m]) == 0)
					break;
			if (m == lengthof(modes))
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "illegal score_mode [%s]", x->u.s.str);
				return false;
			}
			r->mode = (SeRescoreMode) m;
		}
		else
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[query] unknown field [%s]", k);
			return false;
		}
	}
	if (r->query == NULL)
	{
		se_error_set(err, 400, "x_content_parse_exception", "[query] requires [rescore_query]");
		return false;
	}
	return true;
}

/* "rescore": one rescorer or a list, applied in order */
static bool
parse_rescore(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int			n = v->type == SE_JSON_ARRAY ? v->u.a.count : 1;
	int			i;

	req->rescore = palloc0(sizeof(SeRescore) * Max(1, n));
	req->nrescore = n;
	for (i = 0; i < n; i++)
		if (!parse_one_rescore(v->type == SE_JSON_ARRAY ? v->u.a.items[i] : v,
							   &req->rescore[i], err))
			return false;
	return true;
}

/* ES refuses a field sort and windows past index.max_rescore_window (10000) */
static bool
rescore_finish(SeSearchRequest *req, SeError *err)
{
	int			i;

	for (i = 0; i < req->nsort; i++)
		if (req->sort[i].kind != SE_SORT_SCORE)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: Cannot use [sort] option in conjunction with [rescore].;");
			return false;
		}
	for (i = 0; i < req->nrescore; i++)
		if (req->rescore[i].window_size > req->limits.max_rescore_window)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Rescore window [%d] is too large. It must be less than [%d]. This prevents allocating massive heaps for storing the results to be rescored. This limit can be set by changing the [index.max_rescore_window] index level setting.",
						 req->rescore[i].window_size, req->limits.max_rescore_window);
			return false;
		}
	return true;
}

/* "indices_boost": [{"index": boost}, ...] (or the older {"index": boost}) */
static bool
parse_indices_boost(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int			n = 0;
	int			i,
				j;

	if (v->type == SE_JSON_OBJECT)
		n = v->u.o.count;
	else if (v->type == SE_JSON_ARRAY)
	{
		for (i = 0; i < v->u.a.count; i++)
		{
			if (v->u.a.items[i]->type != SE_JSON_OBJECT)
			{
				se_error_set(err, 400, "parsing_exception",
							 "Expected [START_OBJECT] in [indices_boost] but found [%s]",
							 token_name(v->u.a.items[i]));
				return false;
			}
			n += v->u.a.items[i]->u.o.count;
		}
	}
	else
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [indices_boost].", token_name(v));
		return false;
	}
	req->indices_boost = palloc0(sizeof(SeIndexBoost) * Max(1, n));
	for (i = 0; i < (v->type == SE_JSON_ARRAY ? v->u.a.count : 1); i++)
	{
		const SeJson *o = v->type == SE_JSON_ARRAY ? v->u.a.items[i] : v;

		for (j = 0; j < o->u.o.count; j++)
		{
			SeIndexBoost *b = &req->indices_boost[req->nindices_boost++];

			b->index = pstrdup(o->u.o.members[j].key);
			if (!parse_float_param("indices_boost", o->u.o.members[j].value, &b->boost, err))
				return false;
		}
	}
	return true;
}

float
se_search_index_boost(const SeSearchRequest *req, const char *index)
{
	int			i;

	for (i = 0; index != NULL && i < req->nindices_boost; i++)
		if (se_glob_match(req->indices_boost[i].index, index, strlen(index)))
			return req->indices_boost[i].boost;
	return 1.0f;
}

/*
 * "stored_fields": a name or a list.  No field is stored apart from
 * _source here (the mapping has no "store"), so the names ask for nothing
 * but, as in ES, turn off _source unless the body asks for it; "_none_"
 * also leaves out _id.
 */
static bool
parse_stored_fields(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int			n;
	char	  **names = string_list(v, &n, "stored_fields", err);
	int			i;

	if (names == NULL)
		return false;
	for (i = 0; i < n; i++)
		if (strcmp(names[i], "_none_") == 0)
		{
			if (n > 1)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "cannot combine _none_ with other fields");
				return false;
			}
			req->stored_fields_none = true;
		}
	return true;
}

static bool
stored_fields_finish(SeSearchRequest *req, const SeJson *stored, const SeJson *source,
					 SeError *err)
{
	if (stored == NULL)
		return true;
	if (req->stored_fields_none && source != NULL && req->source.fetch)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [stored_fields] cannot be disabled if [_source] is requested;");
		return false;
	}
	if (source == NULL)
		req->source.fetch = false;
	return true;
}

/* A "_source" value as the search body's (for top_hits). */
bool
se_search_parse_source_filter(const SeJson *v, SeSourceFilter *f, SeError *err)
{
	return parse_source(v, f, err);
}

bool
se_search_check_window(const SeSearchRequest *req, SeError *err)
{
	int64		window = (int64) req->from + req->size;

	if (window > req->max_result_window)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Result window is too large, from + size must be less than or equal to: [%d] but was [" INT64_FORMAT "]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.",
					 req->max_result_window, window);
		return false;
	}
	return true;
}


/* ---------------------------------------------------------------------
 * Deep pagination: search_after, pit, slice
 * ---------------------------------------------------------------------
 */
static bool
parse_search_after(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [search_after].", token_name(v));
		return false;
	}
	for (i = 0; i < v->u.a.count; i++)
	{
		const SeJson *x = v->u.a.items[i];

		if (x->type == SE_JSON_OBJECT || x->type == SE_JSON_ARRAY)
		{
			se_error_set(err, 400, "parsing_exception",
						 "Can't handle search_after field value of type [%s]", token_name(x));
			return false;
		}
	}
	req->search_after = v->u.a.count > 0 ? v : NULL;
	return true;
}

/* "pit": {"id": "...", "keep_alive": "1m"} */
static bool
parse_pit(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [pit].", token_name(v));
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;

		if (strcmp(k, "id") == 0 && x->type == SE_JSON_STRING)
			req->pit_id = pnstrdup(x->u.s.str, x->u.s.len);
		else if (strcmp(k, "keep_alive") == 0)
		{
			if (!parse_timeout(x, &req->pit_keep_alive_ms, err))
				return false;
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[point_in_time] unknown field [%s]", k);
			return false;
		}
	}
	if (req->pit_id == NULL || req->pit_id[0] == '\0')
	{
		se_error_set(err, 400, "parsing_exception", "Required [id]");
		return false;
	}
	return true;
}

/* "slice": {"id": 0, "max": 2}, "field" _id or _shard_doc: split by _id */
static bool
parse_slice(const SeJson *v, SeSearchRequest *req, SeError *err)
{
	int64		id = -1,
				max = -1;
	int			i;

	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unknown key for a %s in [slice].", token_name(v));
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;

		if (strcmp(k, "id") == 0)
		{
			if (!parse_int("id", x, &id, err))
				return false;
		}
		else if (strcmp(k, "max") == 0)
		{
			if (!parse_int("max", x, &max, err))
				return false;
		}
		else if (strcmp(k, "field") == 0 && x->type == SE_JSON_STRING &&
				 (strcmp(x->u.s.str, "_shard_doc") == 0 || strcmp(x->u.s.str, "_id") == 0))
			 /* docs are split by murmur3(_id) whichever of the two is named */ ;
		else
		{
			se_error_set(err, 400, "parsing_exception", "[slice] unknown field [%s]", k);
			return false;
		}
	}
	if (max <= 1)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "max must be greater than 1");
		return false;
	}
	if (id < 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "id must be greater than or equal to 0");
		return false;
	}
	if (id >= max)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "max must be greater than id");
		return false;
	}
	if (max > req->limits.max_slices_per_scroll)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "The number of slices [" INT64_FORMAT "] is too large. It must be less than [%d]. This limit can be set by changing the [index.max_slices_per_scroll] index level setting.",
					 max, req->limits.max_slices_per_scroll);
		return false;
	}
	req->slice_id = (int) id;
	req->slice_max = (int) max;
	return true;
}

static bool
sort_has_kind(const SeSearchRequest *req, SeSortKind kind)
{
	int			i;

	for (i = 0; i < req->nsort; i++)
		if (req->sort[i].kind == kind)
			return true;
	return false;
}

/*
 * A point-in-time search sorts, as ES's, with _shard_doc as the last
 * tiebreaker unless the sort names it (relevance order becomes
 * [_score, _shard_doc]), so search_after can resume between equal keys;
 * then search_after's checks, ES's messages.
 */
static bool
pagination_finish(SeSearchRequest *req, SeError *err)
{
	req->nsort_user = req->nsort;
	if (req->pit_id != NULL && !sort_has_kind(req, SE_SORT_SHARD_DOC))
	{
		SeSortSpec *sort = palloc0(sizeof(SeSortSpec) * (req->nsort + 2));
		int			n = 0;

		if (req->nsort == 0)
		{
			init_sort_spec(&sort[n++], "_score");
			req->track_scores = true;	/* max_score, as relevance order has */
		}
		else
			memcpy(sort, req->sort, sizeof(SeSortSpec) * req->nsort);
		n = Max(n, req->nsort);
		init_sort_spec(&sort[n++], "_shard_doc");
		req->sort = sort;
		req->nsort = n;
	}
	if (req->nsort > 0 && sort_has_kind(req, SE_SORT_SHARD_DOC) && req->pit_id == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[_shard_doc] sort field cannot be used without [point in time]");
		return false;
	}
	if (req->search_after != NULL)
	{
		if (req->nsort == 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Sort must contain at least one field.");
			return false;
		}
		if (req->search_after->u.a.count != req->nsort)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "search_after has %d value(s) but sort has %d.",
						 req->search_after->u.a.count, req->nsort);
			return false;
		}
		if (req->from > 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "`from` parameter must be set to 0 when `search_after` is used.");
			return false;
		}
	}
	return true;
}

const char *
se_search_pit_id(const SeSearchRequest *req)
{
	return req->pit_id;
}

int64
se_search_pit_keep_alive(const SeSearchRequest *req)
{
	return req->pit_keep_alive_ms;
}

bool
se_search_has_slice(const SeSearchRequest *req)
{
	return req->slice_max > 0;
}

bool
se_search_has_search_after(const SeSearchRequest *req)
{
	return req->search_after != NULL;
}

void
se_search_set_visible_sort(SeSearchRequest *req, bool user_only)
{
	req->nsort_visible = user_only ? req->nsort_user : -1;
}

bool
se_search_parse_keep_alive(const SeJson *v, int64 *ms, SeError *err)
{
	return parse_timeout(v, ms, err);
}

SeSearchRequest *
se_search_parse(const SeJson *body, int max_result_window, SeError *err)
{
	SeSearchLimits lim;

	memset(&lim, -1, sizeof(lim));
	lim.max_result_window = max_result_window;
	return se_search_parse_limited(body, &lim, err);
}

/* lim's limits, ES's defaults for those not given */
static void
set_limits(SeSearchRequest *req, const SeSearchLimits *lim)
{
	req->limits = *lim;
#define DFLT(f, d) if (req->limits.f < 0) req->limits.f = (d)
	DFLT(max_inner_result_window, 100);
	DFLT(max_docvalue_fields_search, 100);
	DFLT(max_script_fields, 32);
	DFLT(max_rescore_window, 10000);
	DFLT(max_slices_per_scroll, 1024);
#undef DFLT
	if (lim->max_result_window > 0)
		req->max_result_window = lim->max_result_window;
}

/* script_fields and docvalue_fields against their limits */
static bool
check_field_limits(const SeSearchRequest *req, const SeJson *body, SeError *err)
{
	const SeJson *sf = se_json_get(body, "script_fields");
	const SeJson *dv = se_json_get(body, "docvalue_fields");

	if (sf != NULL && sf->type == SE_JSON_OBJECT &&
		sf->u.o.count > req->limits.max_script_fields)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Trying to retrieve too many script_fields. Must be less than or equal to: [%d] but was [%d]. This limit can be set by changing the [index.max_script_fields] index level setting.",
					 req->limits.max_script_fields, sf->u.o.count);
		return false;
	}
	if (dv != NULL && dv->type == SE_JSON_ARRAY &&
		dv->u.a.count > req->limits.max_docvalue_fields_search)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Trying to retrieve too many docvalue_fields. Must be less than or equal to: [%d] but was [%d]. This limit can be set by changing the [index.max_docvalue_fields_search] index level setting.",
					 req->limits.max_docvalue_fields_search, dv->u.a.count);
		return false;
	}
	return true;
}

SeSearchRequest *
se_search_parse_limited(const SeJson *body, const SeSearchLimits *lim, SeError *err)
{
	SeSearchRequest *req = new_request();
	int			i;

	set_limits(req, lim);
	if (body == NULL || body->type == SE_JSON_NULL)
		return req;
	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Expected [START_OBJECT] but found [%s]", token_name(body));
		return NULL;
	}
	if (!check_field_limits(req, body, err))
		return NULL;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		ok = true;

		if (strcmp(k, "query") == 0)
		{
			req->query = se_query_parse(v, 0, err);
			ok = req->query != NULL;
		}
		else if (strcmp(k, "from") == 0)
			ok = parse_size_param("from", v, &req->from, err);
		else if (strcmp(k, "size") == 0)
			ok = parse_size_param("size", v, &req->size, err);
		else if (strcmp(k, "sort") == 0)
			ok = parse_sort(v, req, err);
		else if (strcmp(k, "_source") == 0)
			ok = parse_source(v, &req->source, err);
		else if (strcmp(k, "track_total_hits") == 0)
			ok = parse_track_total_hits(v, req, err);
		else if (strcmp(k, "track_scores") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			req->track_scores = v->type == SE_JSON_TRUE;
		else if (strcmp(k, "min_score") == 0 && v->type == SE_JSON_NUMBER)
		{
			req->has_min_score = true;
			req->min_score = (float) v->u.n.d;
		}
		else if (strcmp(k, "timeout") == 0)
			ok = parse_timeout(v, &req->timeout_ms, err);
		else if (strcmp(k, "aggs") == 0 || strcmp(k, "aggregations") == 0)
		{
			if (req->aggs != NULL)
			{
				se_error_set(err, 400, "parsing_exception",
							 "Found two aggregation definitions in [%s]", k);
				return NULL;
			}
			ok = (req->aggs = se_aggs_parse(v, err)) != NULL &&
				se_aggs_check_inner_window(req->aggs, req->limits.max_inner_result_window, err);
		}
		else if (strcmp(k, "seq_no_primary_term") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			req->seq_no_primary_term = v->type == SE_JSON_TRUE;
		else if (strcmp(k, "search_after") == 0)
			ok = parse_search_after(v, req, err);
		else if (strcmp(k, "pit") == 0)
			ok = parse_pit(v, req, err);
		else if (strcmp(k, "slice") == 0)
			ok = parse_slice(v, req, err);
		else if (strcmp(k, "highlight") == 0)
		{
			req->highlight = se_highlight_parse(v, err);
			ok = req->highlight != NULL;
		}
		else if (strcmp(k, "version") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			req->version = v->type == SE_JSON_TRUE;
		else if (strcmp(k, "rescore") == 0)
			ok = parse_rescore(v, req, err);
		else if (strcmp(k, "indices_boost") == 0)
			ok = parse_indices_boost(v, req, err);
		else if (strcmp(k, "docvalue_fields") == 0 || strcmp(k, "fields") == 0 ||
				 strcmp(k, "script_fields") == 0)
			ok = se_fetch_fields_parse(k, v, &req->fetch_fields, err);
		else if (strcmp(k, "stored_fields") == 0)
			ok = parse_stored_fields(v, req, err);
		else if (strcmp(k, "explain") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			req->explain = v->type == SE_JSON_TRUE;
		else if (strcmp(k, "post_filter") == 0)
		{
			req->post_filter = se_query_parse(v, 0, err);
			ok = req->post_filter != NULL;
		}
		else if (strcmp(k, "collapse") == 0)
			ok = (req->collapse = se_collapse_parse(v, err)) != NULL;
		else if (strcmp(k, "terminate_after") == 0)
		{
			ok = parse_int("terminate_after", v, &req->terminate_after, err);
			if (ok && req->terminate_after < 0)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "terminateAfter must be > 0");
				ok = false;
			}
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "Unknown key for a %s in [%s].", token_name(v), k);
			ok = false;
		}
		if (!ok)
			return NULL;
	}
	if (req->nrescore > 0 && !rescore_finish(req, err))
		return NULL;
	if (req->collapse != NULL && !se_collapse_check_request(req, err))
		return NULL;
	if (!se_search_check_window(req, err) || !pagination_finish(req, err) ||
		!stored_fields_finish(req, se_json_get(body, "stored_fields"),
							  se_json_get(body, "_source"), err))
		return NULL;
	return req;
}

void
se_search_set_from_size(SeSearchRequest *req, int from, int size)
{
	if (from >= 0)
		req->from = from;
	if (size >= 0)
		req->size = size;
}

void
se_search_set_timeout(SeSearchRequest *req, int64 timeout_ms)
{
	req->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
}

void
se_search_set_seq_no_primary_term(SeSearchRequest *req)
{
	req->seq_no_primary_term = true;
}

void
se_search_set_typed_keys(SeSearchRequest *req)
{
	req->typed_keys = true;
}

SeSearchRequest *
se_search_parse_count(const SeJson *body, SeError *err)
{
	SeSearchRequest *req = new_request();
	int			i;

	req->size = 0;
	req->track_total_hits = SE_TRACK_TOTAL_ACCURATE;
	req->source.fetch = false;
	if (body == NULL || body->type == SE_JSON_NULL)
		return req;
	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Expected [START_OBJECT] but found [%s]", token_name(body));
		return NULL;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;

		if (strcmp(k, "query") == 0)
		{
			req->query = se_query_parse(body->u.o.members[i].value, 0, err);
			if (req->query == NULL)
				return NULL;
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "request does not support [%s]", k);
			return NULL;
		}
	}
	return req;
}
