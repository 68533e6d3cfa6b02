/*-------------------------------------------------------------------------
 *
 * dsl.c
 *	  Parse the Elasticsearch query DSL into an SeQuery tree.
 *
 * Parsing is mapping-independent, as in ES where a query is parsed on the
 * coordinating node and bound to fields on each shard.  Errors follow ES:
 * status 400 with type "parsing_exception" and ES's wording, so clients
 * that match on messages keep working.  Nesting depth is bounded so that a
 * hostile body cannot exhaust the stack.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/search_int.h"

static SeQuery *parse_query_body(const char *name, const SeJson *body,
								 int depth, SeError *err);

/* ES's name for the token a JSON value starts with. */
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

static SeQuery *
new_query(SeQueryKind kind)
{
	SeQuery    *q = palloc0(sizeof(SeQuery));

	q->kind = kind;
	q->boost = 1.0f;
	q->tie_breaker = 0.0f;
	q->include_lower = true;
	q->include_upper = true;
	q->max_expansions = SE_FUZZY_MAX_EXPANSIONS_DEFAULT;
	q->transpositions = true;
	return q;
}

SeQuery *
se_query_new(SeQueryKind kind)
{
	return new_query(kind);
}

static bool
is_leaf(const SeJson *v)
{
	return v->type != SE_JSON_OBJECT && v->type != SE_JSON_ARRAY;
}

static bool
json_bool(const SeJson *v, bool *out)
{
	if (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
	{
		*out = v->type == SE_JSON_TRUE;
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		if (strcmp(v->u.s.str, "true") == 0)
		{
			*out = true;
			return true;
		}
		if (strcmp(v->u.s.str, "false") == 0)
		{
			*out = false;
			return true;
		}
	}
	return false;
}

bool
se_query_json_bool(const SeJson *v, bool *out)
{
	return json_bool(v, out);
}

static bool
parse_boost(const char *qname, const SeJson *v, float *boost, SeError *err)
{
	double		d;

	if (!se_json_as_double(v, &d) || isinf(d))
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[%s] failed to parse field [boost]", qname);
		return false;
	}
	if (d < 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "negative [boost] are not allowed in [%s], use a value between 0 and 1 to deboost",
					 qname);
		return false;
	}
	*boost = (float) d;
	return true;
}

static bool
parse_float_param(const char *qname, const char *key, const SeJson *v,
				  float *out, SeError *err)
{
	double		d;

	if (!se_json_as_double(v, &d) || isinf(d))
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[%s] failed to parse field [%s]", qname, key);
		return false;
	}
	*out = (float) d;
	return true;
}

static bool
parse_int_param(const char *qname, const char *key, const SeJson *v,
				int *out, SeError *err)
{
	double		d;

	if (!se_json_as_double(v, &d) || d != floor(d) || d < PG_INT32_MIN || d > PG_INT32_MAX)
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[%s] failed to parse field [%s]", qname, key);
		return false;
	}
	*out = (int) d;
	return true;
}

static bool
parse_bool_param(const char *qname, const char *key, const SeJson *v,
				 bool *out, SeError *err)
{
	if (!json_bool(v, out))
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[%s] failed to parse field [%s]", qname, key);
		return false;
	}
	return true;
}

static bool
parse_string_param(const char *qname, const char *key, const SeJson *v,
				   char **out, SeError *err)
{
	if (v->type != SE_JSON_STRING)
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[%s] failed to parse field [%s]", qname, key);
		return false;
	}
	*out = pstrdup(v->u.s.str);
	return true;
}

/* minimum_should_match accepts integers and strings ("75%", "-1", "3<90%"). */
static bool
parse_msm_param(const char *qname, const SeJson *v, char **out, SeError *err)
{
	if (v->type == SE_JSON_NUMBER)
	{
		*out = pnstrdup(v->u.n.text, v->u.n.len);
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		*out = pstrdup(v->u.s.str);
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[%s] failed to parse field [minimum_should_match]", qname);
	return false;
}

static bool
parse_operator(const char *qname, const SeJson *v, bool *op_and, SeError *err)
{
	if (v->type == SE_JSON_STRING)
	{
		if (pg_strcasecmp(v->u.s.str, "and") == 0)
		{
			*op_and = true;
			return true;
		}
		if (pg_strcasecmp(v->u.s.str, "or") == 0)
		{
			*op_and = false;
			return true;
		}
	}
	se_error_set(err, 400, "parsing_exception",
				 "[%s] query does not support operator [%s], expected [and] or [or]",
				 qname, v->type == SE_JSON_STRING ? v->u.s.str : token_name(v));
	return false;
}

static bool
parse_zero_terms(const char *qname, const SeJson *v, bool *all, SeError *err)
{
	if (v->type == SE_JSON_STRING)
	{
		if (pg_strcasecmp(v->u.s.str, "none") == 0)
		{
			*all = false;
			return true;
		}
		if (pg_strcasecmp(v->u.s.str, "all") == 0)
		{
			*all = true;
			return true;
		}
	}
	se_error_set(err, 400, "parsing_exception",
				 "[%s] Unsupported zero_terms_query value [%s]", qname,
				 v->type == SE_JSON_STRING ? v->u.s.str : token_name(v));
	return false;
}

/*
 * The fuzzy options shared by fuzzy, match and multi_match (key names as
 * the query spells them); true when k is one of them, *ok false (err
 * set) when its value is bad.
 */
static bool
parse_fuzzy_option(const char *qname, const char *k, const SeJson *v,
				   SeQuery *q, bool *ok, SeError *err)
{
	*ok = true;
	if (strcmp(k, "fuzziness") == 0)
		*ok = se_fuzziness_parse(v, &q->fuzziness, err);
	else if (strcmp(k, "prefix_length") == 0)
	{
		*ok = parse_int_param(qname, k, v, &q->prefix_length, err);
		if (*ok && q->prefix_length < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "prefixLength cannot be less than 0");
			*ok = false;
		}
	}
	else if (strcmp(k, "max_expansions") == 0)
	{
		*ok = parse_int_param(qname, k, v, &q->max_expansions, err);
		if (*ok && q->max_expansions <= 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "maxExpansions must be positive.");
			*ok = false;
		}
	}
	else if (strcmp(k, "transpositions") == 0 || strcmp(k, "fuzzy_transpositions") == 0)
		*ok = parse_bool_param(qname, k, v, &q->transpositions, err);
	else if (strcmp(k, "rewrite") == 0 || strcmp(k, "fuzzy_rewrite") == 0)
		 /* accepted: always the top terms blended by frequency */ ;
	else
		return false;
	return true;
}

static void
error_unsupported(SeError *err, const char *qname, const char *key)
{
	se_error_set(err, 400, "parsing_exception",
				 "[%s] query does not support [%s]", qname, key);
}

/*
 * Check that a single-field query body names exactly one field; returns the
 * member or NULL with err set.
 */
static const SeJsonMember *
single_field(const char *qname, const SeJson *body, SeError *err)
{
	const SeJsonMember *field = NULL;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name",
					 qname);
		return NULL;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		const SeJsonMember *m = &body->u.o.members[i];

		/* boost and _name may sit beside the field in some queries */
		if (field != NULL)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] query doesn't support multiple fields, found [%s] and [%s]",
						 qname, field->key, m->key);
			return NULL;
		}
		field = m;
	}
	if (field == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no field specified", qname);
		return NULL;
	}
	return field;
}

/* match and match_phrase share their shape: {"f": text | {"query": ..}} */
static SeQuery *
parse_match(const char *qname, SeQueryKind kind, const SeJson *body,
			SeError *err)
{
	const SeJsonMember *fm = single_field(qname, body, err);
	SeQuery    *q;
	bool		ok;
	int			i;

	if (fm == NULL)
		return NULL;
	q = new_query(kind);
	q->field = pstrdup(fm->key);
	if (fm->value->type == SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] unknown token [START_ARRAY] after [%s]", qname, fm->key);
		return NULL;
	}
	if (fm->value->type != SE_JSON_OBJECT)
	{
		q->value = fm->value;
	}
	else
	{
		const SeJson *obj = fm->value;

		for (i = 0; i < obj->u.o.count; i++)
		{
			const char *k = obj->u.o.members[i].key;
			const SeJson *v = obj->u.o.members[i].value;

			if (!is_leaf(v))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] unknown token [%s] after [%s]", qname,
							 token_name(v), k);
				return NULL;
			}
			if (strcmp(k, "query") == 0)
				q->value = v;
			else if (strcmp(k, "boost") == 0)
			{
				if (!parse_boost(qname, v, &q->boost, err))
					return NULL;
			}
			else if (strcmp(k, "analyzer") == 0)
			{
				if (!parse_string_param(qname, k, v, &q->analyzer, err))
					return NULL;
			}
			else if (strcmp(k, "zero_terms_query") == 0)
			{
				if (!parse_zero_terms(qname, v, &q->zero_terms_all, err))
					return NULL;
			}
			else if (strcmp(k, "_name") == 0)
				 /* named queries are accepted; matched_queries is not reported */ ;
			else if ((kind == SE_Q_MATCH || kind == SE_Q_MATCH_BOOL_PREFIX) &&
					 strcmp(k, "operator") == 0)
			{
				if (!parse_operator(qname, v, &q->op_and, err))
					return NULL;
			}
			else if ((kind == SE_Q_MATCH || kind == SE_Q_MATCH_BOOL_PREFIX) &&
					 strcmp(k, "minimum_should_match") == 0)
			{
				if (!parse_msm_param(qname, v, &q->msm, err))
					return NULL;
			}
			else if (kind == SE_Q_MATCH &&
					 (strcmp(k, "lenient") == 0 ||
					  strcmp(k, "auto_generate_synonyms_phrase_query") == 0))
				 /* no effect without synonyms */ ;
			else if ((kind == SE_Q_MATCH || kind == SE_Q_MATCH_BOOL_PREFIX) &&
					 strcmp(k, "transpositions") != 0 &&
					 strcmp(k, "rewrite") != 0 &&
					 parse_fuzzy_option(qname, k, v, q, &ok, err))
			{
				if (!ok)
					return NULL;
			}
			else if (kind == SE_Q_MATCH_PHRASE_PREFIX &&
					 strcmp(k, "max_expansions") == 0)
			{
				if (!parse_fuzzy_option(qname, k, v, q, &ok, err) || !ok)
					return NULL;
			}
			else if ((kind == SE_Q_MATCH_PHRASE || kind == SE_Q_MATCH_PHRASE_PREFIX) &&
					 strcmp(k, "slop") == 0)
			{
				if (!parse_int_param(qname, k, v, &q->slop, err))
					return NULL;
				if (q->slop < 0)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "No negative slop allowed.");
					return NULL;
				}
			}
			else
			{
				error_unsupported(err, qname, k);
				return NULL;
			}
		}
	}
	if (q->value == NULL || q->value->type == SE_JSON_NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "No text specified for text query");
		return NULL;
	}
	return q;
}

/* "title^2.5" -> field "title", boost 2.5 */
static bool
parse_field_with_boost(const char *spec, char **field, float *boost,
					   SeError *err)
{
	const char *caret = strrchr(spec, '^');

	if (caret == NULL)
	{
		*field = pstrdup(spec);
		*boost = 1.0f;
		return true;
	}
	else
	{
		char	   *end;
		double		d = strtod(caret + 1, &end);

		if (caret[1] == '\0' || *end != '\0' || isnan(d) || isinf(d) || d < 0)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[multi_match] invalid field boost in [%s]", spec);
			return false;
		}
		*field = pnstrdup(spec, caret - spec);
		*boost = (float) d;
	}
	return true;
}

static SeQuery *
parse_multi_match(const SeJson *body, SeError *err)
{
	const char *qname = "multi_match";
	SeQuery    *q;
	bool		has_tie = false;
	bool		ok;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name",
					 qname);
		return NULL;
	}
	q = new_query(SE_Q_MULTI_MATCH);
	q->mm_type = SE_MM_BEST_FIELDS;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "fields") == 0)
		{
			const SeJson *const *items;
			int			n,
						j;
			const SeJson *one[1];

			if (v->type == SE_JSON_STRING)
			{
				one[0] = v;
				items = one;
				n = 1;
			}
			else if (v->type == SE_JSON_ARRAY)
			{
				items = (const SeJson *const *) v->u.a.items;
				n = v->u.a.count;
			}
			else
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] query does not support [%s] with a [%s] value",
							 qname, k, token_name(v));
				return NULL;
			}
			if (q->fields == NULL)
			{
				q->fields = palloc(sizeof(char *) * (n + 1));
				q->field_boosts = palloc(sizeof(float) * (n + 1));
			}
			else
			{
				q->fields = repalloc(q->fields, sizeof(char *) * (q->nfields + n + 1));
				q->field_boosts = repalloc(q->field_boosts,
										   sizeof(float) * (q->nfields + n + 1));
			}
			for (j = 0; j < n; j++)
			{
				if (items[j]->type != SE_JSON_STRING)
				{
					se_error_set(err, 400, "parsing_exception",
								 "[%s] query does not support [%s] with a [%s] value",
								 qname, k, token_name(items[j]));
					return NULL;
				}
				if (!parse_field_with_boost(items[j]->u.s.str,
											&q->fields[q->nfields],
											&q->field_boosts[q->nfields], err))
					return NULL;
				q->nfields++;
			}
			continue;
		}
		if (!is_leaf(v))
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] unknown token [%s] after [%s]", qname,
						 token_name(v), k);
			return NULL;
		}
		if (strcmp(k, "query") == 0)
			q->value = v;
		else if (strcmp(k, "type") == 0)
		{
			if (v->type != SE_JSON_STRING)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] failed to parse field [type]", qname);
				return NULL;
			}
			if (strcmp(v->u.s.str, "best_fields") == 0)
				q->mm_type = SE_MM_BEST_FIELDS;
			else if (strcmp(v->u.s.str, "most_fields") == 0)
				q->mm_type = SE_MM_MOST_FIELDS;
			else if (strcmp(v->u.s.str, "phrase") == 0)
				q->mm_type = SE_MM_PHRASE;
			else if (strcmp(v->u.s.str, "phrase_prefix") == 0)
				q->mm_type = SE_MM_PHRASE_PREFIX;
			else if (strcmp(v->u.s.str, "bool_prefix") == 0)
				q->mm_type = SE_MM_BOOL_PREFIX;
			else if (strcmp(v->u.s.str, "cross_fields") == 0)
				q->mm_type = SE_MM_CROSS_FIELDS;
			else
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] query type [%s] is not supported", qname,
							 v->u.s.str);
				return NULL;
			}
		}
		else if (strcmp(k, "operator") == 0)
		{
			if (!parse_operator(qname, v, &q->op_and, err))
				return NULL;
		}
		else if (strcmp(k, "minimum_should_match") == 0)
		{
			if (!parse_msm_param(qname, v, &q->msm, err))
				return NULL;
		}
		else if (strcmp(k, "tie_breaker") == 0)
		{
			if (!parse_float_param(qname, k, v, &q->tie_breaker, err))
				return NULL;
			has_tie = true;
		}
		else if (strcmp(k, "analyzer") == 0)
		{
			if (!parse_string_param(qname, k, v, &q->analyzer, err))
				return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost(qname, v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "slop") == 0)
		{
			if (!parse_int_param(qname, k, v, &q->slop, err))
				return NULL;
			if (q->slop < 0)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "No negative slop allowed.");
				return NULL;
			}
		}
		else if (strcmp(k, "zero_terms_query") == 0)
		{
			if (!parse_zero_terms(qname, v, &q->zero_terms_all, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0 || strcmp(k, "lenient") == 0 ||
				 strcmp(k, "auto_generate_synonyms_phrase_query") == 0)
			 /* accepted, no effect here */ ;
		else if (strcmp(k, "transpositions") != 0 && strcmp(k, "rewrite") != 0 &&
				 parse_fuzzy_option(qname, k, v, q, &ok, err))
		{
			if (!ok)
				return NULL;
		}
		else
		{
			error_unsupported(err, qname, k);
			return NULL;
		}
	}
	if (q->value == NULL || q->value->type == SE_JSON_NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "No text specified for multi_match query");
		return NULL;
	}
	if (!has_tie && (q->mm_type == SE_MM_MOST_FIELDS || q->mm_type == SE_MM_BOOL_PREFIX))
		q->tie_breaker = 1.0f;
	/* ES MultiMatchQueryBuilder's checks */
	if (q->fuzziness.set && (q->mm_type == SE_MM_CROSS_FIELDS || q->mm_type == SE_MM_PHRASE ||
							 q->mm_type == SE_MM_PHRASE_PREFIX))
	{
		se_error_set(err, 400, "parsing_exception",
					 "Fuzziness not allowed for type [%s]",
					 q->mm_type == SE_MM_CROSS_FIELDS ? "cross_fields" :
					 q->mm_type == SE_MM_PHRASE ? "phrase" : "phrase_prefix");
		return NULL;
	}
	if (q->slop != 0 && q->mm_type == SE_MM_BOOL_PREFIX)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] type [bool_prefix] does not support [slop]", qname);
		return NULL;
	}
	if (q->nfields == 0)
	{
		/* index.query.default_field is "*" */
		q->fields = palloc(sizeof(char *));
		q->field_boosts = palloc(sizeof(float));
		q->fields[0] = pstrdup("*");
		q->field_boosts[0] = 1.0f;
		q->nfields = 1;
	}
	return q;
}

/*
 * term, prefix, regexp, wildcard, fuzzy:
 * {"f": value | {"value": .., "boost": .., ...}}
 */
static SeQuery *
parse_term_like(const char *qname, SeQueryKind kind, const SeJson *body,
				SeError *err)
{
	const SeJsonMember *fm = single_field(qname, body, err);
	SeQuery    *q;
	bool		ok;
	int			i;

	if (fm == NULL)
		return NULL;
	q = new_query(kind);
	q->field = pstrdup(fm->key);
	q->re_flags = SE_RE_ALL;
	if (kind == SE_Q_FUZZY)
	{
		/* ES's default fuzziness */
		q->fuzziness.set = true;
		q->fuzziness.is_auto = true;
		q->fuzziness.low = 3;
		q->fuzziness.high = 6;
	}
	if (fm->value->type == SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query does not support array of values", qname);
		return NULL;
	}
	if (fm->value->type != SE_JSON_OBJECT)
		q->value = fm->value;
	else
	{
		const SeJson *obj = fm->value;

		for (i = 0; i < obj->u.o.count; i++)
		{
			const char *k = obj->u.o.members[i].key;
			const SeJson *v = obj->u.o.members[i].value;

			if (!is_leaf(v))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] query does not support [%s]", qname, k);
				return NULL;
			}
			if (strcmp(k, "value") == 0 ||
				(kind == SE_Q_WILDCARD && strcmp(k, "wildcard") == 0))
				q->value = v;
			else if (strcmp(k, "boost") == 0)
			{
				if (!parse_boost(qname, v, &q->boost, err))
					return NULL;
			}
			else if (kind == SE_Q_FUZZY && strcmp(k, "fuzzy_transpositions") != 0 &&
					 strcmp(k, "fuzzy_rewrite") != 0 &&
					 parse_fuzzy_option(qname, k, v, q, &ok, err))
			{
				if (!ok)
					return NULL;
			}
			else if (kind != SE_Q_FUZZY && strcmp(k, "case_insensitive") == 0)
			{
				if (!parse_bool_param(qname, k, v, &q->case_insensitive, err))
					return NULL;
			}
			else if (kind == SE_Q_REGEXP && strcmp(k, "flags") == 0 &&
					 v->type == SE_JSON_STRING)
			{
				if (!se_regex_flags_parse(v->u.s.str, &q->re_flags, err))
					return NULL;
			}
			else if (kind == SE_Q_REGEXP && strcmp(k, "flags_value") == 0)
			{
				if (!parse_int_param(qname, k, v, &q->re_flags, err))
					return NULL;
			}
			else if (strcmp(k, "_name") == 0 ||
					 (kind != SE_Q_TERM && strcmp(k, "rewrite") == 0) ||
					 (kind == SE_Q_REGEXP && strcmp(k, "max_determinized_states") == 0))
				 /* accepted; rewrite is always constant score, and
				  * regexps are not determinized */ ;
			else
			{
				error_unsupported(err, qname, k);
				return NULL;
			}
		}
	}
	if (q->value == NULL || q->value->type == SE_JSON_NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "value cannot be null");
		return NULL;
	}
	if (kind != SE_Q_TERM && q->value->type != SE_JSON_STRING)
	{
		/* ES stringifies numbers; keep the text as written */
		if (q->value->type == SE_JSON_NUMBER)
			q->value = se_json_make_string(q->value->u.n.text, q->value->u.n.len);
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] query does not support [%s] value", qname,
						 token_name(q->value));
			return NULL;
		}
	}
	return q;
}

static SeQuery *
parse_terms(const SeJson *body, SeError *err)
{
	const char *qname = "terms";
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name",
					 qname);
		return NULL;
	}
	q = new_query(SE_Q_TERMS);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (v->type == SE_JSON_ARRAY)
		{
			int			j;

			if (q->field != NULL)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[%s] query does not support multiple fields", qname);
				return NULL;
			}
			q->field = pstrdup(k);
			q->nvalues = v->u.a.count;
			q->values = palloc(sizeof(SeJson *) * Max(1, v->u.a.count));
			for (j = 0; j < v->u.a.count; j++)
			{
				if (!is_leaf(v->u.a.items[j]) || v->u.a.items[j]->type == SE_JSON_NULL)
				{
					se_error_set(err, 400, "parsing_exception",
								 "[%s] query does not support [%s] values", qname,
								 token_name(v->u.a.items[j]));
					return NULL;
				}
				q->values[j] = v->u.a.items[j];
			}
		}
		else if (v->type == SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] query does not support terms lookup on [%s]",
						 qname, k);
			return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost(qname, v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, qname, k);
			return NULL;
		}
	}
	if (q->field == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query requires a field name, followed by array of terms or a document lookup specification",
					 qname);
		return NULL;
	}
	return q;
}

static SeQuery *
parse_range(const SeJson *body, SeError *err)
{
	const char *qname = "range";
	const SeJsonMember *fm = single_field(qname, body, err);
	const SeJson *obj;
	SeQuery    *q;
	int			i;

	if (fm == NULL)
		return NULL;
	obj = fm->value;
	if (obj->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, after field missing start object",
					 qname);
		return NULL;
	}
	q = new_query(SE_Q_RANGE);
	q->field = pstrdup(fm->key);
	for (i = 0; i < obj->u.o.count; i++)
	{
		const char *k = obj->u.o.members[i].key;
		const SeJson *v = obj->u.o.members[i].value;

		if (!is_leaf(v))
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] query does not support [%s]", qname, k);
			return NULL;
		}
		if (strcmp(k, "gt") == 0)
		{
			q->lower = v;
			q->include_lower = false;
		}
		else if (strcmp(k, "gte") == 0)
		{
			q->lower = v;
			q->include_lower = true;
		}
		else if (strcmp(k, "lt") == 0)
		{
			q->upper = v;
			q->include_upper = false;
		}
		else if (strcmp(k, "lte") == 0)
		{
			q->upper = v;
			q->include_upper = true;
		}
		else if (strcmp(k, "from") == 0)
			q->lower = v;
		else if (strcmp(k, "to") == 0)
			q->upper = v;
		else if (strcmp(k, "include_lower") == 0)
		{
			if (!parse_bool_param(qname, k, v, &q->include_lower, err))
				return NULL;
		}
		else if (strcmp(k, "include_upper") == 0)
		{
			if (!parse_bool_param(qname, k, v, &q->include_upper, err))
				return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost(qname, v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "format") == 0)
		{
			if (!parse_string_param(qname, k, v, &q->format, err))
				return NULL;
		}
		else if (strcmp(k, "time_zone") == 0)
		{
			SeTimeZone	tz;

			if (!parse_string_param(qname, k, v, &q->time_zone, err) ||
				!se_tz_parse(q->time_zone, &tz, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0 || strcmp(k, "relation") == 0)
			 /* relation only matters for range fields */ ;
		else
		{
			error_unsupported(err, qname, k);
			return NULL;
		}
	}
	if (q->lower != NULL && q->lower->type == SE_JSON_NULL)
		q->lower = NULL;
	if (q->upper != NULL && q->upper->type == SE_JSON_NULL)
		q->upper = NULL;
	return q;
}

static SeQuery *
parse_exists(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[exists] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_query(SE_Q_EXISTS);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "field") == 0)
		{
			if (!parse_string_param("exists", k, v, &q->field, err))
				return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost("exists", v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, "exists", k);
			return NULL;
		}
	}
	if (q->field == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[exists] must be provided with a [field]");
		return NULL;
	}
	return q;
}

static SeQuery *
parse_ids(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	int			i;
	bool		seen = false;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[ids] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_query(SE_Q_IDS);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "values") == 0)
		{
			int			j;

			if (v->type != SE_JSON_ARRAY)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[ids] query does not support [values] with a [%s] value",
							 token_name(v));
				return NULL;
			}
			q->nvalues = v->u.a.count;
			q->values = palloc(sizeof(SeJson *) * Max(1, v->u.a.count));
			for (j = 0; j < v->u.a.count; j++)
			{
				const SeJson *it = v->u.a.items[j];

				if (it->type == SE_JSON_NUMBER)
					it = se_json_make_string(it->u.n.text, it->u.n.len);
				else if (it->type != SE_JSON_STRING)
				{
					se_error_set(err, 400, "parsing_exception",
								 "[ids] query does not support [%s] values",
								 token_name(it));
					return NULL;
				}
				q->values[j] = it;
			}
			seen = true;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost("ids", v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0 || strcmp(k, "type") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, "ids", k);
			return NULL;
		}
	}
	if (!seen)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[ids] query, no ids values provided");
		return NULL;
	}
	return q;
}

/* One bool clause list: a query object or an array of them. */
static bool
parse_clauses(const char *key, const SeJson *v, int depth, SeQuery ***list,
			  int *n, SeError *err)
{
	int			i;

	if (v->type == SE_JSON_OBJECT)
	{
		SeQuery    *c = se_query_parse(v, depth + 1, err);

		if (c == NULL)
			return false;
		*list = *list ? repalloc(*list, sizeof(SeQuery *) * (*n + 1))
			: palloc(sizeof(SeQuery *));
		(*list)[(*n)++] = c;
		return true;
	}
	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[bool] query does not support [%s]", key);
		return false;
	}
	*list = *list ? repalloc(*list, sizeof(SeQuery *) * (*n + v->u.a.count + 1))
		: palloc(sizeof(SeQuery *) * (v->u.a.count + 1));
	for (i = 0; i < v->u.a.count; i++)
	{
		SeQuery    *c = se_query_parse(v->u.a.items[i], depth + 1, err);

		if (c == NULL)
			return false;
		(*list)[(*n)++] = c;
	}
	return true;
}

static SeQuery *
parse_bool(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[bool] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_query(SE_Q_BOOL);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		ok = true;

		if (strcmp(k, "must") == 0)
			ok = parse_clauses(k, v, depth, &q->must, &q->nmust, err);
		else if (strcmp(k, "should") == 0)
			ok = parse_clauses(k, v, depth, &q->should, &q->nshould, err);
		else if (strcmp(k, "filter") == 0)
			ok = parse_clauses(k, v, depth, &q->filter, &q->nfilter, err);
		else if (strcmp(k, "must_not") == 0 || strcmp(k, "mustNot") == 0)
			ok = parse_clauses(k, v, depth, &q->must_not, &q->nmust_not, err);
		else if (!is_leaf(v))
		{
			se_error_set(err, 400, "parsing_exception",
						 "[bool] query does not support [%s]", k);
			return NULL;
		}
		else if (strcmp(k, "minimum_should_match") == 0)
			ok = parse_msm_param("bool", v, &q->msm, err);
		else if (strcmp(k, "boost") == 0)
			ok = parse_boost("bool", v, &q->boost, err);
		else if (strcmp(k, "_name") == 0 || strcmp(k, "adjust_pure_negative") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, "bool", k);
			return NULL;
		}
		if (!ok)
			return NULL;
	}
	return q;
}

static SeQuery *
parse_constant_score(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[constant_score] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_query(SE_Q_CONSTANT_SCORE);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "filter") == 0)
		{
			if (q->inner != NULL)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[constant_score] accepts only one 'filter' element.");
				return NULL;
			}
			q->inner = se_query_parse(v, depth + 1, err);
			if (q->inner == NULL)
				return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost("constant_score", v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, "constant_score", k);
			return NULL;
		}
	}
	if (q->inner == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[constant_score] requires a 'filter' element");
		return NULL;
	}
	return q;
}

static SeQuery *
parse_dis_max(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[dis_max] query malformed, no start_object after query name");
		return NULL;
	}
	q = new_query(SE_Q_DIS_MAX);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "queries") == 0)
		{
			if (!parse_clauses(k, v, depth, &q->should, &q->nshould, err))
				return NULL;
		}
		else if (strcmp(k, "tie_breaker") == 0)
		{
			if (!parse_float_param("dis_max", k, v, &q->tie_breaker, err))
				return NULL;
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost("dis_max", v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, "dis_max", k);
			return NULL;
		}
	}
	if (q->nshould == 0)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[dis_max] requires 'queries' field with at least one clause");
		return NULL;
	}
	return q;
}

static SeQuery *
parse_match_all(const char *qname, SeQueryKind kind, const SeJson *body,
				SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name",
					 qname);
		return NULL;
	}
	q = new_query(kind);
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "boost") == 0)
		{
			if (!parse_boost(qname, v, &q->boost, err))
				return NULL;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			error_unsupported(err, qname, k);
			return NULL;
		}
	}
	return q;
}

static SeQuery *
parse_query_body(const char *name, const SeJson *body, int depth,
				 SeError *err)
{
	if (strcmp(name, "match_all") == 0)
		return parse_match_all(name, SE_Q_MATCH_ALL, body, err);
	if (strcmp(name, "match_none") == 0)
		return parse_match_all(name, SE_Q_MATCH_NONE, body, err);
	if (strcmp(name, "match") == 0)
		return parse_match(name, SE_Q_MATCH, body, err);
	if (strcmp(name, "match_phrase") == 0)
		return parse_match(name, SE_Q_MATCH_PHRASE, body, err);
	if (strcmp(name, "match_bool_prefix") == 0)
		return parse_match(name, SE_Q_MATCH_BOOL_PREFIX, body, err);
	if (strcmp(name, "match_phrase_prefix") == 0)
		return parse_match(name, SE_Q_MATCH_PHRASE_PREFIX, body, err);
	if (strcmp(name, "multi_match") == 0)
		return parse_multi_match(body, err);
	if (strcmp(name, "term") == 0)
		return parse_term_like(name, SE_Q_TERM, body, err);
	if (strcmp(name, "terms") == 0)
		return parse_terms(body, err);
	if (strcmp(name, "range") == 0)
		return parse_range(body, err);
	if (strcmp(name, "exists") == 0)
		return parse_exists(body, err);
	if (strcmp(name, "ids") == 0)
		return parse_ids(body, err);
	if (strcmp(name, "prefix") == 0)
		return parse_term_like(name, SE_Q_PREFIX, body, err);
	if (strcmp(name, "regexp") == 0)
		return parse_term_like(name, SE_Q_REGEXP, body, err);
	if (strcmp(name, "wildcard") == 0)
		return parse_term_like(name, SE_Q_WILDCARD, body, err);
	if (strcmp(name, "fuzzy") == 0)
		return parse_term_like(name, SE_Q_FUZZY, body, err);
	if (strcmp(name, "function_score") == 0)
		return se_function_score_parse(body, depth, err);
	if (strcmp(name, "script_score") == 0)
		return se_script_score_parse(body, depth, err);
	if (strcmp(name, "terms_set") == 0)
		return se_terms_set_parse(body, err);
	if (strcmp(name, "more_like_this") == 0)
		return se_mlt_parse(body, err);
	if (strcmp(name, "distance_feature") == 0)
		return se_distance_feature_parse(body, err);
	if (strcmp(name, "geo_distance") == 0)
		return se_geo_distance_parse(body, err);
	if (strcmp(name, "geo_bounding_box") == 0)
		return se_geo_bounding_box_parse(body, err);
	if (strcmp(name, "query_string") == 0)
		return se_query_string_parse(body, false, err);
	if (strcmp(name, "simple_query_string") == 0)
		return se_query_string_parse(body, true, err);
	if (strcmp(name, "bool") == 0)
		return parse_bool(body, depth, err);
	if (strcmp(name, "constant_score") == 0)
		return parse_constant_score(body, depth, err);
	if (strcmp(name, "dis_max") == 0)
		return parse_dis_max(body, depth, err);
	if (strcmp(name, "nested") == 0)
		return se_nested_query_parse(body, depth, err);
	se_error_set(err, 400, "parsing_exception", "unknown query [%s]", name);
	return NULL;
}

SeQuery *
se_query_parse(const SeJson *v, int depth, SeError *err)
{
	if (depth > SE_QUERY_MAX_DEPTH)
	{
		se_error_set(err, 400, "parsing_exception",
					 "The nested depth of the query exceeds the maximum nested depth for queries set in [indices.query.bool.max_nested_depth] (%d)",
					 SE_QUERY_MAX_DEPTH);
		return NULL;
	}
	if (v == NULL || v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[_na] query malformed, must start with start_object");
		return NULL;
	}
	if (v->u.o.count == 0)
	{
		se_error_set(err, 400, "parsing_exception",
					 "query malformed, empty clause found");
		return NULL;
	}
	if (v->u.o.count > 1)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] malformed query, expected [END_OBJECT] but found [FIELD_NAME]",
					 v->u.o.members[0].key);
		return NULL;
	}
	return parse_query_body(v->u.o.members[0].key, v->u.o.members[0].value,
							depth, err);
}

/*
 * ES's minimum_should_match: an integer (negative = all but n), a
 * percentage (negative = all but that share, rounded down), or conditional
 * specs "n<spec n2<spec2" applied when there are more than n clauses.
 */
int
se_query_min_should_match(int optional_clauses, const char *spec, SeError *err)
{
	int			result = optional_clauses;
	const char *s = spec;
	const char *e;
	char	   *buf;
	char	   *endp;
	long		num;
	int			len;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	len = e - s;
	buf = pnstrdup(s, len);

	if (strchr(buf, '<') != NULL)
	{
		/* conditional: "3<90% 5<2" -> space-separated "bound<spec" parts */
		char	   *p = buf;

		for (;;)
		{
			char	   *part;
			char	   *lt;
			long		bound;

			while (*p == ' ')
				p++;
			if (*p == '\0')
				break;
			part = p;
			/* a part may have spaces around '<' */
			lt = strchr(part, '<');
			if (lt == NULL)
				goto bad;
			bound = strtol(part, &endp, 10);
			while (*endp == ' ')
				endp++;
			if (endp != lt || endp == part)
				goto bad;
			p = lt + 1;
			while (*p == ' ')
				p++;
			part = p;
			while (*p != '\0' && *p != ' ')
				p++;
			if (optional_clauses <= bound)
				return result;
			{
				char	   *sub = pnstrdup(part, p - part);

				result = se_query_min_should_match(optional_clauses, sub, err);
				if (result < 0)
					return -1;
			}
		}
		return result;
	}
	if (len > 0 && buf[len - 1] == '%')
	{
		float		calc;

		buf[len - 1] = '\0';
		num = strtol(buf, &endp, 10);
		if (*endp != '\0' || endp == buf || num > 1000000 || num < -1000000)
			goto bad;
		/* float arithmetic as ES does */
		calc = (float) (result * (int) num) * (1 / 100.0f);
		result = calc < 0 ? result + (int) calc : (int) calc;
	}
	else
	{
		num = strtol(buf, &endp, 10);
		if (*endp != '\0' || endp == buf || num > PG_INT32_MAX || num < PG_INT32_MIN)
			goto bad;
		result = num < 0 ? result + (int) num : (int) num;
	}
	return result < 0 ? 0 : result;

bad:
	se_error_set(err, 400, "illegal_argument_exception",
				 "For input string: \"%s\" (minimum_should_match)", spec);
	return -1;
}
