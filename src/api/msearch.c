/*-------------------------------------------------------------------------
 *
 * msearch.c
 *	  _msearch: several searches in one NDJSON request.
 *
 * The body is pairs of lines, a header ({"index", "search_type",
 * "preference", "routing", ...}; an empty line or {} takes the URL's
 * index) and a search body.  As ES's MultiSearchRequest, the whole request
 * is parsed first -- a malformed line, an unknown header key or a missing
 * final newline fail it all -- then each search runs as a _search would
 * and answers in "responses", in order, with its status: its hits, or its
 * own error, which does not fail the others.  _msearch/template is the
 * same with search template requests as bodies (search_template.c).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "utils/timestamp.h"

#include "api/api.h"

typedef struct MsearchItem
{
	char	   *index;			/* NULL: the URL's, else _all */
	const char *search_type;
	const char *preference;
	const char *routing;
	/* the header's indices options, as URL parameter text (NULL: not given) */
	const char *ignore_unavailable;
	const char *allow_no_indices;
	const char *expand_wildcards;
	SeJson	   *body;
} MsearchItem;

/* A header's boolean or list option as the URL would carry it. */
static const char *
option_text(const SeJson *v)
{
	StringInfoData s;
	int			i;

	if (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
		return v->type == SE_JSON_TRUE ? "true" : "false";
	if (v->type == SE_JSON_STRING)
		return v->u.s.str;
	initStringInfo(&s);
	for (i = 0; v->type == SE_JSON_ARRAY && i < v->u.a.count; i++)
		if (v->u.a.items[i]->type == SE_JSON_STRING)
			appendStringInfo(&s, "%s%s", s.len ? "," : "", v->u.a.items[i]->u.s.str);
	return s.data;
}

/* "index": "a" or ["a", "b"] as one comma-separated expression */
static char *
header_index(const SeJson *v, SeError *err)
{
	StringInfoData b;
	int			i;

	if (v->type == SE_JSON_STRING)
		return pstrdup(v->u.s.str);
	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Expected [index] to be a string or an array of strings");
		return NULL;
	}
	initStringInfo(&b);
	for (i = 0; i < v->u.a.count; i++)
	{
		if (v->u.a.items[i]->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Expected [index] to be a string or an array of strings");
			return NULL;
		}
		appendStringInfo(&b, "%s%s", i ? "," : "", v->u.a.items[i]->u.s.str);
	}
	return b.data;
}

static bool
parse_header(const SeJson *h, MsearchItem *it, SeError *err)
{
	int			i;

	if (h->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "msearch header must be an object");
		return false;
	}
	for (i = 0; i < h->u.o.count; i++)
	{
		const char *k = h->u.o.members[i].key;
		const SeJson *v = h->u.o.members[i].value;

		if (strcmp(k, "index") == 0 || strcmp(k, "indices") == 0)
		{
			if ((it->index = header_index(v, err)) == NULL)
				return false;
		}
		else if (strcmp(k, "search_type") == 0 && v->type == SE_JSON_STRING)
			it->search_type = v->u.s.str;
		else if (strcmp(k, "preference") == 0 && v->type == SE_JSON_STRING)
			it->preference = v->u.s.str;
		else if (strcmp(k, "routing") == 0 && v->type == SE_JSON_STRING)
			it->routing = v->u.s.str;
		else if (strcmp(k, "ignore_unavailable") == 0)
			it->ignore_unavailable = option_text(v);
		else if (strcmp(k, "allow_no_indices") == 0)
			it->allow_no_indices = option_text(v);
		else if (strcmp(k, "expand_wildcards") == 0)
			it->expand_wildcards = option_text(v);
		else if (strcmp(k, "request_cache") == 0 ||
				 strcmp(k, "ccs_minimize_roundtrips") == 0 ||
				 strcmp(k, "allow_partial_search_results") == 0)
			 /* accepted: they do not change what is searched here */ ;
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "key [%s] is not supported in the metadata section", k);
			return false;
		}
	}
	return true;
}

/* Is the line only whitespace (an empty header)? */
static bool
blank(const char *s, size_t len)
{
	size_t		i;

	for (i = 0; i < len; i++)
		if (!isspace((unsigned char) s[i]))
			return false;
	return true;
}

/*
 * The searches of an _msearch body; templates: each body line is a search
 * template request (_msearch/template), rendered when its search runs so
 * that a bad template fails its own response only.
 */
static bool
msearch(const char *default_index, const char *body, size_t len, bool templates,
		const SeSearchParams *p, SeResponse *r, SeError *err)
{
	TimestampTz start = GetCurrentTimestamp();
	List	   *items = NIL;
	MsearchItem *cur = NULL;
	size_t		pos = 0;
	ListCell   *lc;
	bool		first = true;
	long		secs;
	int			usecs;

	se_require_started();
	if (len > 0 && body[len - 1] != '\n')
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "The msearch request must be terminated by a newline [\\n]");
		return false;
	}
	while (pos < len)
	{
		const char *nl = memchr(body + pos, '\n', len - pos);
		size_t		llen = (size_t) (nl - (body + pos));
		const char *line = body + pos;
		SeJsonParseOptions opts = {0};
		SeJson	   *j = NULL;

		pos += llen + 1;
		if (!blank(line, llen))
		{
			opts.reject_duplicate_keys = true;
			j = se_json_parse(line, llen, &opts, err);
			if (j == NULL)
				return false;
		}
		if (cur == NULL)
		{
			/* a header: empty takes the URL's index */
			cur = palloc0(sizeof(MsearchItem));
			if (j != NULL && !parse_header(j, cur, err))
				return false;
		}
		else
		{
			cur->body = j;
			items = lappend(items, cur);
			cur = NULL;
		}
	}
	if (cur != NULL || items == NIL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no requests added;");
		return false;
	}

	appendStringInfoString(&r->body, "{\"responses\":[");
	foreach(lc, items)
	{
		MsearchItem *it = lfirst(lc);
		SeSearchParams sp = *p;
		SeResponse	one;
		SeError		e;
		bool		own_options = it->ignore_unavailable || it->allow_no_indices ||
			it->expand_wildcards;
		bool		had = se_indices_options != NULL;
		SeIndicesOptions url_options;
		bool		ok;

		sp.search_type = it->search_type ? it->search_type : p->search_type;
		sp.preference = it->preference;
		sp.routing = it->routing;
		se_response_init(&one);
		se_error_init(&e);
		if (!first)
			appendStringInfoChar(&r->body, ',');
		first = false;
		/* a header's indices options hold for its search */
		if (had)
			url_options = *se_indices_options;
		ok = !own_options ||
			se_indices_options_set(it->ignore_unavailable, it->allow_no_indices,
								   it->expand_wildcards, &e);
		if (ok && templates && (it->body = se_search_template_body(it->body, &e)) == NULL)
			ok = false;
		ok = ok && se_op_search(it->index ? it->index : default_index ? default_index : "_all",
								it->body, &sp, &one, &e);
		if (own_options)
			se_indices_options_restore(had ? &url_options : NULL);
		if (ok && one.body.len > 1)
		{
			/* the search's body, with its status as ES adds it */
			appendBinaryStringInfo(&r->body, one.body.data, one.body.len - 1);
			appendStringInfo(&r->body, ",\"status\":%d}", one.status ? one.status : 200);
		}
		else
		{
			if (!se_error_is_set(&e))
				se_error_set(&e, 500, "exception", "search failed");
			se_error_body(&e, &r->body);
		}
	}
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	appendStringInfo(&r->body, "],\"took\":%ld}", secs * 1000 + usecs / 1000);
	r->status = 200;
	return true;
}

bool
se_op_msearch(const char *default_index, const char *body, size_t len,
			  const SeSearchParams *p, SeResponse *r, SeError *err)
{
	return msearch(default_index, body, len, false, p, r, err);
}

/* _msearch/template: as _msearch, each body a search template request */
bool
se_op_msearch_template(const char *default_index, const char *body, size_t len,
					   const SeSearchParams *p, SeResponse *r, SeError *err)
{
	return msearch(default_index, body, len, true, p, r, err);
}
