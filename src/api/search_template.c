/*-------------------------------------------------------------------------
 *
 * search_template.c
 *	  ES's search templates: _search/template, _msearch/template (see
 *	  msearch.c) and _render/template[/{id}].
 *
 * A template request ({"source" | "id", "params", "explain", "profile"})
 * is rendered with script/mustache.c -- an inline source (a string, or an
 * object taken as its JSON text, as ES does) or a stored script of lang
 * mustache (cluster/scripts.c, so the same on every node) -- and the
 * rendered text is parsed as a search body.  From there it is a plain
 * search: the caller runs it through se_op_search, so privileges, URL
 * options, remote shards and every search feature are _search's.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/api.h"
#include "cluster/scripts.h"
#include "script/mustache.h"
#include "util/units.h"

typedef struct TemplateRequest
{
	const char *source;			/* inline template text */
	int			source_len;
	const char *id;				/* stored template id */
	const SeJson *params;
	const SeJson *explain;
	const SeJson *profile;
} TemplateRequest;

static bool
bad_field(const char *field, const SeJson *v, SeError *err)
{
	se_error_set(err, 400, "x_content_parse_exception",
				 "[search_template] %s doesn't support values of type: %s", field,
				 se_json_type_name(v->type));
	return false;
}

/* ES's SearchTemplateRequest parser: strict about fields and their types */
static bool
parse_request(const SeJson *body, const char *path_id, TemplateRequest *t, SeError *err)
{
	int			i;

	memset(t, 0, sizeof(*t));
	if (body != NULL && body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[search_template] Expected START_OBJECT but was: %s",
					 se_json_type_name(body->type));
		return false;
	}
	for (i = 0; body != NULL && i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "source") == 0 || strcmp(k, "inline") == 0 || strcmp(k, "template") == 0)
		{
			t->id = NULL;		/* the last of id and source wins, as in ES */
			if (v->type == SE_JSON_STRING)
			{
				t->source = v->u.s.str;
				t->source_len = v->u.s.len;
			}
			else if (v->type == SE_JSON_OBJECT)
			{
				t->source = se_json_to_string(v);
				t->source_len = strlen(t->source);
			}
			else
				return bad_field(k, v, err);
		}
		else if (strcmp(k, "id") == 0)
		{
			if (v->type != SE_JSON_STRING)
				return bad_field(k, v, err);
			t->id = v->u.s.str;
			t->source = NULL;
		}
		else if (strcmp(k, "params") == 0)
		{
			if (v->type != SE_JSON_OBJECT && v->type != SE_JSON_NULL)
				return bad_field(k, v, err);
			t->params = v;
		}
		else if (strcmp(k, "explain") == 0 || strcmp(k, "profile") == 0)
		{
			bool		b;

			if (v->type != SE_JSON_TRUE && v->type != SE_JSON_FALSE &&
				!(v->type == SE_JSON_STRING && se_parse_es_boolean(v->u.s.str, &b, err)))
				return se_error_is_set(err) ? false : bad_field(k, v, err);
			if (k[0] == 'e')
				t->explain = v;
			else
				t->profile = v;
		}
		else
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[search_template] unknown field [%s]", k);
			return false;
		}
	}
	if (path_id != NULL)
	{
		t->id = path_id;
		t->source = NULL;
	}
	if ((t->source != NULL && t->source_len == 0) || (t->id != NULL && t->id[0] == '\0'))
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: template is missing;");
		return false;
	}
	if (t->source == NULL && t->id == NULL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: template is missing;2: template's script type is missing;");
		return false;
	}
	return true;
}

/* The template rendered with its params: a search body's text. */
static char *
render(const TemplateRequest *t, size_t *len, SeError *err)
{
	const char *src = t->source;
	size_t		srclen = t->source_len;
	SeMustache *m;
	StringInfoData out;

	if (src == NULL)
	{
		if ((src = se_stored_template_source(t->id, err)) == NULL)
			return NULL;
		srclen = strlen(src);
	}
	if ((m = se_mustache_compile(src, srclen, err)) == NULL)
		return NULL;
	initStringInfo(&out);
	if (!se_mustache_render(m, t->params && t->params->type == SE_JSON_OBJECT ? t->params : NULL,
							SE_JSON_MAX_INPUT, &out, err))
		return NULL;
	*len = out.len;
	return out.data;
}

/* body with key set to v (replacing one already there; NULL: removed) */
static SeJson *
with_member(SeJson *body, const char *key, const SeJson *v)
{
	SeJsonMember *m = palloc(sizeof(SeJsonMember) * (body->u.o.count + 1));
	int			n = 0;
	int			i;

	for (i = 0; i < body->u.o.count; i++)
		if (strcmp(body->u.o.members[i].key, key) != 0)
			m[n++] = body->u.o.members[i];
	if (v != NULL)
		m[n++] = (SeJsonMember) {key, (int) strlen(key), (SeJson *) v};
	body->u.o.members = m;
	body->u.o.count = n;
	return body;
}

/* "true"/"false" strings as ES's boolean fields read them */
static const SeJson *
as_bool(const SeJson *v)
{
	bool		b = v->type == SE_JSON_TRUE;
	SeError		e;

	se_error_init(&e);
	if (v->type == SE_JSON_STRING)
		se_parse_es_boolean(v->u.s.str, &b, &e);
	return se_json_make_bool(b);
}

/*
 * The search body a template request renders to, with the request's
 * explain and profile on it (ES sets both from the template request,
 * whatever the template says);
 * NULL with ES's error: a template that does not compile, an unknown
 * stored id, a rendered text that is not JSON.
 */
SeJson *
se_search_template_body(const SeJson *req, SeError *err)
{
	TemplateRequest t;
	SeJsonParseOptions opts = {0};
	SeJson	   *body;
	char	   *text;
	size_t		len;

	if (!parse_request(req, NULL, &t, err) || (text = render(&t, &len, err)) == NULL)
		return NULL;
	opts.reject_duplicate_keys = true;
	if ((body = se_json_parse(text, len, &opts, err)) == NULL)
		return NULL;
	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Unexpected token [%s] found, expected [START_OBJECT]",
					 se_json_type_name(body->type));
		return NULL;
	}
	/* as ES: the request's explain (default false) replaces the body's */
	body = with_member(body, "explain", t.explain ? as_bool(t.explain) : se_json_make_bool(false));
	/*
	 * profile too; the search has no profile output, so true gets its
	 * refusal and false is no key
	 */
	body = with_member(body, "profile",
					   t.profile && as_bool(t.profile)->type == SE_JSON_TRUE ? as_bool(t.profile) : NULL);
	return body;
}

/* _render/template[/{id}]: {"template_output": the rendered body} */
bool
se_op_render_template(const SeJson *req, const char *path_id, SeResponse *r, SeError *err)
{
	TemplateRequest t;
	SeJsonParseOptions opts = {0};
	SeJson	   *out;
	char	   *text;
	size_t		len;

	se_require_started();
	if (!parse_request(req, path_id, &t, err) || (text = render(&t, &len, err)) == NULL)
		return false;
	opts.reject_duplicate_keys = true;
	if ((out = se_json_parse(text, len, &opts, err)) == NULL)
		return false;
	r->status = 200;
	appendStringInfoString(&r->body, "{\"template_output\":");
	se_json_write(&r->body, out);
	appendStringInfoChar(&r->body, '}');
	return true;
}
