/*-------------------------------------------------------------------------
 *
 * templates.c
 *	  Index templates in the cluster state (see templates.h): validation
 *	  and normalization of a put, the state mutations, and the merge that
 *	  makes a new index's create body.
 *
 * Validation follows ES's MetadataIndexTemplateService: names and index
 * patterns (invalid_index_template_exception listing every failure),
 * settings and mappings parsed as an index's would be, composable
 * templates of equal priority whose patterns overlap refused (two '*'
 * patterns overlap when some name matches both: a small intersection of
 * the two globs), a composable template naming a missing component
 * refused, a component in use not removable.  The state mutation checks
 * against the state it changes (on the master), so two racing puts cannot
 * both pass.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "cluster/state_int.h"
#include "cluster/templates.h"
#include "mapping/mapping.h"
#include "util/match.h"

static const char *const kind_keys[] = {"index_templates", "component_templates", "templates"};
static const char *const kind_ops[] = {"index_template", "component_template", "legacy_template"};

/* ---------- small JSON helpers ---------- */

static SeJson *
parse_text(const char *s, SeError *err)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};

	return se_json_parse(s, strlen(s), &opts, err);
}

static SeJson *
empty_object(void)
{
	SeJson	   *o = palloc0(sizeof(SeJson));

	o->type = SE_JSON_OBJECT;
	return o;
}

/*
 * A copy of object o with key set to v (v NULL: removed): in its place when
 * o has it, else before the first greater key (objects built here stay
 * sorted).
 */
static SeJson *
obj_with(const SeJson *o, const char *key, SeJson *v)
{
	SeJson	   *n = empty_object();
	int			i;
	int			at = -1;
	bool		done = false;

	for (i = 0; i < o->u.o.count; i++)
		if (strcmp(o->u.o.members[i].key, key) == 0)
			at = i;
	n->u.o.members = palloc0(sizeof(SeJsonMember) * (o->u.o.count + 1));
	for (i = 0; i < o->u.o.count; i++)
	{
		const SeJsonMember *m = &o->u.o.members[i];

		if (at < 0 && !done && strcmp(m->key, key) > 0)
		{
			done = true;
			if (v)
				n->u.o.members[n->u.o.count++] = (SeJsonMember) {pstrdup(key), strlen(key), v};
		}
		if (i == at)
		{
			if (v)
				n->u.o.members[n->u.o.count++] = (SeJsonMember) {m->key, m->keylen, v};
			continue;
		}
		n->u.o.members[n->u.o.count++] = *m;
	}
	if (at < 0 && !done && v)
		n->u.o.members[n->u.o.count++] = (SeJsonMember) {pstrdup(key), strlen(key), v};
	return n;
}

static void
list_names(StringInfo out, List *names)
{
	ListCell   *lc;

	appendStringInfoChar(out, '[');
	foreach(lc, names)
		appendStringInfo(out, "%s%s", lc == list_head(names) ? "" : ", ", (char *) lfirst(lc));
	appendStringInfoChar(out, ']');
}

/* ES's text of a list of strings: [a, b] */
static char *
patterns_text(const SeJson *arr)
{
	StringInfoData s;
	List	   *l = NIL;
	int			i;

	for (i = 0; arr && i < arr->u.a.count; i++)
		l = lappend(l, (char *) arr->u.a.items[i]->u.s.str);
	initStringInfo(&s);
	list_names(&s, l);
	return s.data;
}

/* ---------- settings: flat, "index."-prefixed strings ---------- */

static bool
flatten_settings(const SeJson *v, const char *prefix, SeSettingsLayer *l, SeError *err)
{
	int			i;

	for (i = 0; i < v->u.o.count; i++)
	{
		const SeJsonMember *m = &v->u.o.members[i];
		char	   *key = prefix ? psprintf("%s.%s", prefix, m->key) : pstrdup(m->key);
		const SeJson *x = m->value;
		StringInfoData s;
		int			k;

		initStringInfo(&s);
		switch (x->type)
		{
			case SE_JSON_OBJECT:
				if (!flatten_settings(x, key, l, err))
					return false;
				continue;
			case SE_JSON_NULL:
				continue;
			case SE_JSON_STRING:
				appendStringInfoString(&s, x->u.s.str);
				break;
			case SE_JSON_NUMBER:
				appendBinaryStringInfo(&s, x->u.n.text, x->u.n.len);
				break;
			case SE_JSON_TRUE:
			case SE_JSON_FALSE:
				appendStringInfoString(&s, x->type == SE_JSON_TRUE ? "true" : "false");
				break;
			case SE_JSON_ARRAY:
				for (k = 0; k < x->u.a.count; k++)
				{
					if (x->u.a.items[k]->type != SE_JSON_STRING)
					{
						se_error_set(err, 400, "illegal_argument_exception",
									 "setting [%s] must be a list of strings", key);
						return false;
					}
					appendStringInfo(&s, "%s%s", k ? "," : "", x->u.a.items[k]->u.s.str);
				}
				break;
		}
		if (strncmp(key, "index.", 6) != 0)
			key = psprintf("index.%s", key);
		se_csettings_layer_put(l, key, s.data);
	}
	return true;
}

static SeJson *
layer_json(const SeSettingsLayer *l)
{
	StringInfoData s;
	SeError		ignored;

	initStringInfo(&s);
	se_csettings_layer_to_json(l, &s);
	se_error_init(&ignored);
	return parse_text(s.data, &ignored);
}

/* ---------- mappings and aliases: later ones over earlier ones ---------- */

static SeJson *merge_mappings(const SeJson *base, const SeJson *over);

/* properties by field; an object field's own properties merged in turn */
static SeJson *
merge_properties(const SeJson *base, const SeJson *over)
{
	SeJson	   *out = (SeJson *) base;
	int			i;

	for (i = 0; i < over->u.o.count; i++)
	{
		const SeJsonMember *m = &over->u.o.members[i];
		SeJson	   *was = se_json_get(out, m->key);
		SeJson	   *now = m->value;

		if (was && was->type == SE_JSON_OBJECT && now->type == SE_JSON_OBJECT &&
			se_json_get(was, "properties") && se_json_get(now, "properties"))
			now = merge_mappings(was, now);
		out = obj_with(out, m->key, now);
	}
	return out;
}

static SeJson *
merge_mappings(const SeJson *base, const SeJson *over)
{
	SeJson	   *out = (SeJson *) base;
	int			i;

	if (base == NULL || base->type != SE_JSON_OBJECT)
		return (SeJson *) over;
	for (i = 0; over && over->type == SE_JSON_OBJECT && i < over->u.o.count; i++)
	{
		const SeJsonMember *m = &over->u.o.members[i];
		SeJson	   *was = se_json_get(out, m->key);

		if (strcmp(m->key, "properties") == 0 && was && was->type == SE_JSON_OBJECT &&
			m->value->type == SE_JSON_OBJECT)
			out = obj_with(out, m->key, merge_properties(was, m->value));
		else
			out = obj_with(out, m->key, m->value);
	}
	return out;
}

/* Mappings as a template holds them: a single "_doc" wrapper taken off. */
static const SeJson *
unwrap_doc(const SeJson *mappings)
{
	if (mappings && mappings->type == SE_JSON_OBJECT && mappings->u.o.count == 1 &&
		strcmp(mappings->u.o.members[0].key, "_doc") == 0 &&
		mappings->u.o.members[0].value->type == SE_JSON_OBJECT)
		return mappings->u.o.members[0].value;
	return mappings;
}

/* ---------- validation ---------- */

typedef struct Failures
{
	StringInfoData text;
	int			n;
} Failures;

/* one more "N: why;" of ES's validation message (fmt: one %s for arg, or none) */
static void
fail(Failures *f, const char *fmt, const char *arg)
{
	if (f->n == 0)
		initStringInfo(&f->text);
	appendStringInfo(&f->text, "%d: ", ++f->n);
	appendStringInfo(&f->text, fmt, arg);
	appendStringInfoChar(&f->text, ';');
}

/* ES's checks of a template name and its index patterns */
static void
check_name_and_patterns(const char *name, const SeJson *patterns, Failures *f)
{
	const char *p;
	int			i;

	if (strchr(name, ' '))
		fail(f, "name must not contain a space", NULL);
	if (strchr(name, ','))
		fail(f, "name must not contain a ','", NULL);
	if (strchr(name, '#'))
		fail(f, "name must not contain a '#'", NULL);
	if (strchr(name, '*'))
		fail(f, "name must not contain a '*'", NULL);
	if (name[0] == '_')
		fail(f, "name must not start with '_'", NULL);
	for (p = name; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
		{
			fail(f, "name must be lower cased", NULL);
			break;
		}
	for (i = 0; patterns && i < patterns->u.a.count; i++)
	{
		const char *pat = patterns->u.a.items[i]->u.s.str;

		if (strchr(pat, ' '))
			fail(f, "index_patterns [%s] must not contain a space", pat);
		if (strchr(pat, ','))
			fail(f, "index_pattern [%s] must not contain a ','", pat);
		if (strchr(pat, '#'))
			fail(f, "index_pattern [%s] must not contain a '#'", pat);
		if (strchr(pat, ':'))
			fail(f, "index_pattern [%s] must not contain a ':'", pat);
		if (pat[0] == '_')
			fail(f, "index_pattern [%s] must not start with '_'", pat);
		if (strpbrk(pat, "\\/?\"<>|"))
			fail(f, "index_pattern [%s] must not contain the following characters [ , \", /, <, >, ?, \\, |]", pat);
	}
}

/* index_patterns as a non-empty array of strings (a lone string taken) */
static SeJson *
patterns_of(const SeJson *v, SeError *err)
{
	SeJson	   *arr;
	int			i;

	if (v && v->type == SE_JSON_STRING)
	{
		arr = palloc0(sizeof(SeJson));
		arr->type = SE_JSON_ARRAY;
		arr->u.a.count = 1;
		arr->u.a.items = palloc(sizeof(SeJson *));
		arr->u.a.items[0] = (SeJson *) v;
		return arr;
	}
	if (v == NULL || v->type != SE_JSON_ARRAY || v->u.a.count == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception", "Required [index_patterns]");
		return NULL;
	}
	for (i = 0; i < v->u.a.count; i++)
		if (v->u.a.items[i]->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[index_patterns] must be a list of strings");
			return NULL;
		}
	return (SeJson *) v;
}

/*
 * A template's settings, mappings and aliases ({"settings","mappings",
 * "aliases"} of the section) checked as an index's would be and written
 * normalized to out as members (",\"settings\":..").
 */
static bool
section_normalize(const char *what, const SeJson *sec, StringInfo out, SeError *err)
{
	const SeJson *settings = se_json_get(sec, "settings");
	const SeJson *mappings = unwrap_doc(se_json_get(sec, "mappings"));
	const SeJson *aliases = se_json_get(sec, "aliases");

	if (settings && settings->type != SE_JSON_NULL)
	{
		SeSettingsLayer l = {0};
		SeIndexSettings s;

		if (settings->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "x_content_parse_exception", "[%s] settings must be an object", what);
			return false;
		}
		if (!flatten_settings(settings, NULL, &l, err) ||
			!se_settings_parse(layer_json(&l), &s, false, err))
			return false;
		appendStringInfoString(out, ",\"settings\":");
		se_csettings_layer_to_json(&l, out);
	}
	if (mappings && mappings->type != SE_JSON_NULL)
	{
		if (mappings->type != SE_JSON_OBJECT || se_mapping_from_json(mappings, NULL, err) == NULL)
		{
			if (!se_error_is_set(err))
				se_error_set(err, 400, "mapper_parsing_exception", "mappings must be an object");
			return false;
		}
		appendStringInfoString(out, ",\"mappings\":");
		se_json_write(out, mappings);
	}
	if (aliases && aliases->type != SE_JSON_NULL)
	{
		int			i;

		if (aliases->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "x_content_parse_exception", "[%s] aliases must be an object", what);
			return false;
		}
		for (i = 0; i < aliases->u.o.count; i++)
			if (aliases->u.o.members[i].value->type != SE_JSON_OBJECT)
			{
				se_error_set(err, 400, "x_content_parse_exception",
							 "[%s] alias [%s] must be an object", what, aliases->u.o.members[i].key);
				return false;
			}
		appendStringInfoString(out, ",\"aliases\":");
		se_json_write(out, aliases);
	}
	return true;
}

/*
 * "template":{..} of a composable or component template, normalized, after
 * a comma when out already holds members (not right after its '{').
 */
static bool
template_section(const char *what, const SeJson *sec, StringInfo out, SeError *err)
{
	StringInfoData members;

	initStringInfo(&members);
	if (!section_normalize(what, sec, &members, err))
		return false;
	appendStringInfo(out, "%s\"template\":{%s}", out->data[out->len - 1] == '{' ? "" : ",",
					 members.len > 0 ? members.data + 1 : "");
	return true;
}

static bool
check_keys(const SeJson *body, const char *what, const char *const *known, SeError *err)
{
	int			i,
				k;

	if (body == NULL || body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parse_exception", "request body is required");
		return false;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		for (k = 0; known[k]; k++)
			if (strcmp(body->u.o.members[i].key, known[k]) == 0)
				break;
		if (known[k] == NULL)
		{
			se_error_set(err, 400, "x_content_parse_exception", "[%s] unknown field [%s]", what,
						 body->u.o.members[i].key);
			return false;
		}
	}
	return true;
}

static bool
int_member(const SeJson *body, const char *key, bool *present, int64 *v, SeError *err)
{
	const SeJson *x = se_json_get(body, key);

	*present = false;
	if (x == NULL || x->type == SE_JSON_NULL)
		return true;
	if (x->type == SE_JSON_STRING)
	{
		char	   *end;

		errno = 0;
		*v = strtoll(x->u.s.str, &end, 10);
		if (errno == 0 && end != x->u.s.str && *end == '\0')
		{
			*present = true;
			return true;
		}
	}
	else if (x->type == SE_JSON_NUMBER && x->u.n.is_int)
	{
		*v = x->u.n.i;
		*present = true;
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception", "[%s] must be an integer", key);
	return false;
}

static bool
invalid(const char *name, Failures *f, SeError *err)
{
	if (f->n == 0)
		return false;
	se_error_set(err, 400, "invalid_index_template_exception",
				 "index_template [%s] invalid, cause [Validation Failed: %s]", name, f->text.data);
	return true;
}

/* A put's body normalized as the state stores it; NULL (err set) if refused. */
static SeJson *
normalize(SeTemplateKind kind, const char *name, const SeJson *body, SeError *err)
{
	static const char *const index_keys[] = {"index_patterns", "template", "composed_of",
		"priority", "version", "_meta", "data_stream", "allow_auto_create",
	"ignore_missing_component_templates", "deprecated", NULL};
	static const char *const component_keys[] = {"template", "version", "_meta", "deprecated", NULL};
	static const char *const legacy_keys[] = {"index_patterns", "order", "settings", "mappings",
	"aliases", "version", NULL};
	StringInfoData out;
	Failures	f = {0};
	SeJson	   *patterns = NULL;
	const SeJson *x;
	bool		present;
	int64		v;

	initStringInfo(&out);
	if (kind == SE_TEMPLATE_INDEX)
	{
		if (!check_keys(body, "index_template", index_keys, err))
			return NULL;
		if ((x = se_json_get(body, "data_stream")) != NULL && x->type != SE_JSON_NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "index template [%s]: data streams are not supported by search_engine", name);
			return NULL;
		}
		if ((patterns = patterns_of(se_json_get(body, "index_patterns"), err)) == NULL)
			return NULL;
		check_name_and_patterns(name, patterns, &f);
		if (!int_member(body, "priority", &present, &v, err))
			return NULL;
		if (present && v < 0)
			fail(&f, "index template priority must be >= 0", NULL);
		if (invalid(name, &f, err))
			return NULL;
		appendStringInfoString(&out, "{\"index_patterns\":");
		se_json_write(&out, patterns);
		if ((x = se_json_get(body, "template")) != NULL && x->type == SE_JSON_OBJECT &&
			!template_section("index_template", x, &out, err))
			return NULL;
		if ((x = se_json_get(body, "composed_of")) != NULL && x->type != SE_JSON_NULL)
		{
			int			i;

			if (x->type != SE_JSON_ARRAY)
			{
				se_error_set(err, 400, "x_content_parse_exception", "[composed_of] must be a list of strings");
				return NULL;
			}
			for (i = 0; i < x->u.a.count; i++)
				if (x->u.a.items[i]->type != SE_JSON_STRING)
				{
					se_error_set(err, 400, "x_content_parse_exception", "[composed_of] must be a list of strings");
					return NULL;
				}
			appendStringInfoString(&out, ",\"composed_of\":");
			se_json_write(&out, x);
		}
		if (present)
			appendStringInfo(&out, ",\"priority\":" INT64_FORMAT, v);
		if ((x = se_json_get(body, "allow_auto_create")) != NULL &&
			(x->type == SE_JSON_TRUE || x->type == SE_JSON_FALSE))
			appendStringInfo(&out, ",\"allow_auto_create\":%s", x->type == SE_JSON_TRUE ? "true" : "false");
	}
	else if (kind == SE_TEMPLATE_COMPONENT)
	{
		if (!check_keys(body, "component_template", component_keys, err))
			return NULL;
		check_name_and_patterns(name, NULL, &f);
		if (invalid(name, &f, err))
			return NULL;
		x = se_json_get(body, "template");
		if (x == NULL || x->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "illegal_argument_exception", "Required [template]");
			return NULL;
		}
		appendStringInfoChar(&out, '{');
		if (!template_section("component_template", x, &out, err))
			return NULL;
	}
	else
	{
		if (!check_keys(body, "template", legacy_keys, err))
			return NULL;
		x = se_json_get(body, "index_patterns");
		if (x == NULL || (x->type == SE_JSON_ARRAY && x->u.a.count == 0))
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: index patterns are missing;");
			return NULL;
		}
		if ((patterns = patterns_of(x, err)) == NULL)
			return NULL;
		check_name_and_patterns(name, patterns, &f);
		if (invalid(name, &f, err) || !int_member(body, "order", &present, &v, err))
			return NULL;
		appendStringInfo(&out, "{\"order\":" INT64_FORMAT ",\"index_patterns\":", present ? v : 0);
		se_json_write(&out, patterns);
		if (!section_normalize("template", body, &out, err))
			return NULL;
	}
	if (!int_member(body, "version", &present, &v, err))
		return NULL;
	if (present)
		appendStringInfo(&out, ",\"version\":" INT64_FORMAT, v);
	if ((x = se_json_get(body, "_meta")) != NULL && x->type == SE_JSON_OBJECT)
	{
		appendStringInfoString(&out, ",\"_meta\":");
		se_json_write(&out, x);
	}
	appendStringInfoChar(&out, '}');
	return parse_text(out.data, err);
}

SeJson *
se_state_json_with(const SeJson *o, const char *key, SeJson *v)
{
	return obj_with(o, key, v);
}

/* ---------- the templates of a state ---------- */

static SeJson *
templates_root(const SeClusterState *st)
{
	SeError		err;
	SeJson	   *root = NULL;

	se_error_init(&err);
	if (st->templates_json)
		root = parse_text(st->templates_json, &err);
	if (root == NULL || root->type != SE_JSON_OBJECT)
		root = empty_object();
	return root;
}

const SeJson *
se_templates_of(const SeClusterState *st, SeTemplateKind kind)
{
	SeJson	   *o = se_json_get(templates_root(st), kind_keys[kind]);

	return o && o->type == SE_JSON_OBJECT ? o : empty_object();
}

static int64
priority_of(const SeJson *t)
{
	const SeJson *p = se_json_get(t, "priority");

	return p && p->type == SE_JSON_NUMBER ? p->u.n.i : 0;
}

/* Can one name match glob a and glob b ('*' only)?  DP over both. */
static bool
globs_overlap(const char *a, const char *b)
{
	int			la = strlen(a),
				lb = strlen(b);
	bool	   *ok = palloc0(sizeof(bool) * (la + 1) * (lb + 1));
	int			i,
				j;
	bool		r;

#define OK(i, j) ok[(i) * (lb + 1) + (j)]
	for (i = la; i >= 0; i--)
		for (j = lb; j >= 0; j--)
		{
			if (i == la && j == lb)
				OK(i, j) = true;
			else if (i < la && a[i] == '*')
				OK(i, j) = OK(i + 1, j) || (j < lb && OK(i, j + 1));
			else if (j < lb && b[j] == '*')
				OK(i, j) = OK(i, j + 1) || (i < la && OK(i + 1, j));
			else
				OK(i, j) = i < la && j < lb && a[i] == b[j] && OK(i + 1, j + 1);
		}
	r = OK(0, 0);
#undef OK
	pfree(ok);
	return r;
}

static bool
patterns_overlap(const SeJson *a, const SeJson *b)
{
	int			i,
				j;

	for (i = 0; i < a->u.a.count; i++)
		for (j = 0; j < b->u.a.count; j++)
			if (globs_overlap(a->u.a.items[i]->u.s.str, b->u.a.items[j]->u.s.str))
				return true;
	return false;
}

static bool
matches(const SeJson *t, const char *index)
{
	const SeJson *p = se_json_get(t, "index_patterns");
	int			i;

	for (i = 0; p && i < p->u.a.count; i++)
		if (se_wildcard_match(p->u.a.items[i]->u.s.str, index))
			return true;
	return false;
}

/* ---------- mutations ---------- */

typedef struct TemplateArgs
{
	SeTemplateKind kind;
	const char *name;
	const SeJson *body;			/* normalized; NULL: delete */
	bool		create;
} TemplateArgs;

/* The checks a put makes against the other templates of the state. */
static bool
check_against(const SeJson *root, const TemplateArgs *a, SeError *err)
{
	const SeJson *t = a->body;

	if (a->kind == SE_TEMPLATE_INDEX)
	{
		const SeJson *all = se_json_get(root, kind_keys[SE_TEMPLATE_INDEX]);
		const SeJson *comps = se_json_get(root, kind_keys[SE_TEMPLATE_COMPONENT]);
		const SeJson *co = se_json_get(t, "composed_of");
		List	   *missing = NIL,
				   *clash = NIL;
		StringInfoData with;
		int			i;

		for (i = 0; co && i < co->u.a.count; i++)
			if (se_json_get(comps, co->u.a.items[i]->u.s.str) == NULL)
				missing = lappend(missing, (char *) co->u.a.items[i]->u.s.str);
		if (missing)
		{
			StringInfoData m;

			initStringInfo(&m);
			list_names(&m, missing);
			se_error_set(err, 400, "invalid_index_template_exception",
						 "index_template [%s] invalid, cause [index template [%s] specifies component templates %s that do not exist]",
						 a->name, a->name, m.data);
			return false;
		}
		initStringInfo(&with);
		for (i = 0; all && i < all->u.o.count; i++)
		{
			const SeJsonMember *m = &all->u.o.members[i];

			if (strcmp(m->key, a->name) == 0 || priority_of(m->value) != priority_of(t) ||
				!patterns_overlap(se_json_get(t, "index_patterns"), se_json_get(m->value, "index_patterns")))
				continue;
			clash = lappend(clash, (char *) m->key);
			appendStringInfo(&with, "%s%s => %s", with.len ? "," : "", m->key,
							 patterns_text(se_json_get(m->value, "index_patterns")));
		}
		if (clash)
		{
			StringInfoData names;
			ListCell   *lc;

			initStringInfo(&names);
			foreach(lc, clash)
				appendStringInfo(&names, "%s%s", names.len ? "," : "", (char *) lfirst(lc));
			se_error_set(err, 400, "illegal_argument_exception",
						 "index template [%s] has index patterns %s matching patterns from existing templates [%s] with patterns (%s) that have the same priority [" INT64_FORMAT "], multiple index templates may not match during index creation, please use a different priority",
						 a->name, patterns_text(se_json_get(t, "index_patterns")), names.data,
						 with.data, priority_of(t));
			return false;
		}
	}
	return true;
}

/* Which templates of kind name (a comma list, or one wildcard) removes. */
static List *
to_remove(const SeJson *all, SeTemplateKind kind, const char *name, SeError *err)
{
	List	   *out = NIL;
	char	   *copy = pstrdup(name);
	char	   *tok;
	char	   *save;
	int			i;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		bool		any = false;

		for (i = 0; all && i < all->u.o.count; i++)
			if (se_wildcard_match(tok, all->u.o.members[i].key))
			{
				out = list_append_unique_ptr(out, (char *) all->u.o.members[i].key);
				any = true;
			}
		if (!any && strcmp(tok, "*") != 0)
		{
			if (kind == SE_TEMPLATE_COMPONENT)
				se_error_set(err, 404, "resource_not_found_exception", "%s", tok);
			else
				se_error_set(err, 404, "index_template_missing_exception", "index_template [%s] missing", tok);
			return NULL;
		}
	}
	return out;
}

static bool
mutate_template(SeClusterState *st, void *arg, SeError *err)
{
	TemplateArgs *a = arg;
	SeJson	   *root = templates_root(st);
	SeJson	   *all = se_json_get(root, kind_keys[a->kind]);

	if (all == NULL || all->type != SE_JSON_OBJECT)
		all = empty_object();
	if (a->body)
	{
		if (a->create && se_json_get(all, a->name))
		{
			se_error_set(err, 400, "illegal_argument_exception", "%s [%s] already exists",
						 a->kind == SE_TEMPLATE_COMPONENT ? "component template" : "index template",
						 a->name);
			return false;
		}
		if (!check_against(root, a, err))
			return false;
		all = obj_with(all, a->name, (SeJson *) a->body);
	}
	else
	{
		List	   *names = to_remove(all, a->kind, a->name, err);
		ListCell   *lc;

		if (names == NIL && se_error_is_set(err))
			return false;
		if (a->kind == SE_TEMPLATE_COMPONENT)
		{
			const SeJson *idx = se_json_get(root, kind_keys[SE_TEMPLATE_INDEX]);
			List	   *used = NIL,
					   *users = NIL;
			int			i,
						k;

			for (i = 0; idx && i < idx->u.o.count; i++)
			{
				const SeJson *co = se_json_get(idx->u.o.members[i].value, "composed_of");

				for (k = 0; co && k < co->u.a.count; k++)
					foreach(lc, names)
						if (strcmp(co->u.a.items[k]->u.s.str, lfirst(lc)) == 0)
						{
							used = list_append_unique_ptr(used, lfirst(lc));
							users = list_append_unique_ptr(users, (char *) idx->u.o.members[i].key);
						}
			}
			if (used)
			{
				StringInfoData u,
							t;

				initStringInfo(&u);
				initStringInfo(&t);
				list_names(&u, used);
				list_names(&t, users);
				se_error_set(err, 400, "illegal_argument_exception",
							 "component templates %s cannot be removed as they are still in use by index templates %s",
							 u.data, t.data);
				return false;
			}
		}
		foreach(lc, names)
			all = obj_with(all, lfirst(lc), NULL);
	}
	root = obj_with(root, kind_keys[a->kind], all);
	st->templates_json = se_json_to_string(root);
	return true;
}

static bool
template_mutation(TemplateArgs *a, SeError *err)
{
	bool		ok;
	StateOp		op = {kind_ops[a->kind], a->name, NULL, a->create, a->body};

	if (a->body == NULL)
		op.op = psprintf("%s_delete", kind_ops[a->kind]);
	if (se_state_forwarded(&op, &ok, err))
		return ok;
	return se_state_mutate(mutate_template, a, err);
}

bool
se_state_put_template(SeTemplateKind kind, const char *name, const SeJson *body, bool create,
					  SeError *err)
{
	TemplateArgs a = {kind, name, NULL, create};
	SeJson	   *root;

	if ((a.body = normalize(kind, name, body, err)) == NULL)
		return false;
	/* refuse here what the current state refuses: the master checks again */
	root = templates_root(se_state_current());
	if (!check_against(root, &a, err))
		return false;
	return template_mutation(&a, err);
}

bool
se_state_delete_template(SeTemplateKind kind, const char *name, SeError *err)
{
	TemplateArgs a = {kind, name, NULL, false};

	return template_mutation(&a, err);
}

bool
se_state_template_op(const char *op, const char *name, const SeJson *body, bool flag,
					 SeError *err)
{
	int			k;

	for (k = 0; k < lengthof(kind_ops); k++)
	{
		TemplateArgs a = {(SeTemplateKind) k, name, body, flag};

		if (strcmp(op, kind_ops[k]) == 0 && body)
			return se_state_mutate(mutate_template, &a, err);
		if (strncmp(op, kind_ops[k], strlen(kind_ops[k])) == 0 &&
			strcmp(op + strlen(kind_ops[k]), "_delete") == 0)
		{
			a.body = NULL;
			return se_state_mutate(mutate_template, &a, err);
		}
	}
	se_error_set(err, 400, "illegal_argument_exception", "unknown cluster state operation [%s]", op);
	return false;
}

/* ---------- output ---------- */

/* settings, mappings, aliases of a section, settings nested as ES shows them */
static void
write_section(const SeJson *sec, StringInfo out)
{
	int			i;
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (i = 0; sec && i < sec->u.o.count; i++)
	{
		const SeJsonMember *m = &sec->u.o.members[i];

		if (strcmp(m->key, "settings") != 0 && strcmp(m->key, "mappings") != 0 &&
			strcmp(m->key, "aliases") != 0)
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		se_json_write_string(out, m->key, m->keylen);
		appendStringInfoChar(out, ':');
		if (strcmp(m->key, "settings") == 0)
		{
			SeSettingsLayer l = {0};
			SeError		ignored;

			se_error_init(&ignored);
			(void) se_csettings_layer_from_json(m->value, &l, &ignored);
			se_csettings_layer_nested(&l, out);
		}
		else
			se_json_write(out, m->value);
	}
	appendStringInfoChar(out, '}');
}

void
se_template_write(SeTemplateKind kind, const SeJson *t, StringInfo out)
{
	int			i;

	if (kind == SE_TEMPLATE_LEGACY)
	{
		/* ES's legacy GET: every section present, even empty */
		appendStringInfoString(out, "{\"order\":");
		se_json_write(out, se_json_get(t, "order"));
		if (se_json_get(t, "version"))
		{
			appendStringInfoString(out, ",\"version\":");
			se_json_write(out, se_json_get(t, "version"));
		}
		appendStringInfoString(out, ",\"index_patterns\":");
		se_json_write(out, se_json_get(t, "index_patterns"));
		appendStringInfoString(out, ",\"settings\":");
		if (se_json_get(t, "settings"))
		{
			SeSettingsLayer l = {0};
			SeError		ignored;

			se_error_init(&ignored);
			(void) se_csettings_layer_from_json(se_json_get(t, "settings"), &l, &ignored);
			se_csettings_layer_nested(&l, out);
		}
		else
			appendStringInfoString(out, "{}");
		appendStringInfoString(out, ",\"mappings\":");
		se_json_write(out, se_json_get(t, "mappings") ? se_json_get(t, "mappings") : empty_object());
		appendStringInfoString(out, ",\"aliases\":");
		se_json_write(out, se_json_get(t, "aliases") ? se_json_get(t, "aliases") : empty_object());
		appendStringInfoChar(out, '}');
		return;
	}
	appendStringInfoChar(out, '{');
	for (i = 0; i < t->u.o.count; i++)
	{
		const SeJsonMember *m = &t->u.o.members[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, m->key, m->keylen);
		appendStringInfoChar(out, ':');
		if (strcmp(m->key, "template") == 0)
			write_section(m->value, out);
		else
			se_json_write(out, m->value);
	}
	/* ES shows composed_of even when empty */
	if (kind == SE_TEMPLATE_INDEX && se_json_get(t, "composed_of") == NULL)
		appendStringInfoString(out, ",\"composed_of\":[]");
	appendStringInfoChar(out, '}');
}

/* ---------- applying them ---------- */

typedef struct Composed
{
	SeSettingsLayer settings;
	SeJson	   *mappings;
	SeJson	   *aliases;
} Composed;

static void
compose(Composed *c, const SeJson *sec)
{
	const SeJson *s = se_json_get(sec, "settings");
	const SeJson *m = unwrap_doc(se_json_get(sec, "mappings"));
	const SeJson *a = se_json_get(sec, "aliases");
	SeError		ignored;
	int			i;

	se_error_init(&ignored);
	if (s && s->type == SE_JSON_OBJECT)
		(void) flatten_settings(s, NULL, &c->settings, &ignored);
	if (m && m->type == SE_JSON_OBJECT)
		c->mappings = merge_mappings(c->mappings, m);
	for (i = 0; a && a->type == SE_JSON_OBJECT && i < a->u.o.count; i++)
		c->aliases = obj_with(c->aliases ? c->aliases : empty_object(), a->u.o.members[i].key,
							  a->u.o.members[i].value);
}

static int
cmp_order(const ListCell *a, const ListCell *b)
{
	int64		oa = se_json_get(lfirst(a), "order")->u.n.i;
	int64		ob = se_json_get(lfirst(b), "order")->u.n.i;

	return oa < ob ? -1 : (oa > ob ? 1 : 0);
}

const SeJson *
se_templates_apply(const SeClusterState *st, const char *index, const SeJson *body,
				   const char **matched, List **overlapping, SeError *err)
{
	const SeJson *idx = se_templates_of(st, SE_TEMPLATE_INDEX);
	const SeJson *best = NULL;
	const char *best_name = NULL;
	Composed	c = {{0}};
	StringInfoData out;
	int			i;

	if (matched)
		*matched = NULL;
	if (overlapping)
		*overlapping = NIL;
	/* the highest priority composable template that matches wins */
	for (i = 0; i < idx->u.o.count; i++)
	{
		const SeJson *t = idx->u.o.members[i].value;

		if (!matches(t, index))
			continue;
		if (best == NULL || priority_of(t) > priority_of(best))
		{
			if (best && overlapping)
				*overlapping = lappend(*overlapping, (char *) best_name);
			best = t;
			best_name = idx->u.o.members[i].key;
		}
		else if (overlapping)
			*overlapping = lappend(*overlapping, (char *) idx->u.o.members[i].key);
	}
	if (best)
	{
		const SeJson *comps = se_templates_of(st, SE_TEMPLATE_COMPONENT);
		const SeJson *co = se_json_get(best, "composed_of");

		if (matched)
			*matched = best_name;
		for (i = 0; co && i < co->u.a.count; i++)
		{
			const SeJson *ct = se_json_get(comps, co->u.a.items[i]->u.s.str);

			/* a component removed since cannot be: removal is refused while in use */
			if (ct)
				compose(&c, se_json_get(ct, "template"));
		}
		compose(&c, se_json_get(best, "template"));
	}
	else
	{
		const SeJson *leg = se_templates_of(st, SE_TEMPLATE_LEGACY);
		List	   *hits = NIL;
		ListCell   *lc;

		for (i = 0; i < leg->u.o.count; i++)
			if (matches(leg->u.o.members[i].value, index))
				hits = lappend(hits, leg->u.o.members[i].value);
		if (hits == NIL)
			return body;
		list_sort(hits, cmp_order);
		foreach(lc, hits)
			compose(&c, lfirst(lc));
	}
	if (body && body->type != SE_JSON_OBJECT && body->type != SE_JSON_NULL)
		return body;			/* the create refuses it */
	/* the request's own body last: it wins */
	if (body && body->type == SE_JSON_OBJECT)
	{
		const SeJson *s = se_json_get(body, "settings");

		if (s && s->type != SE_JSON_OBJECT && s->type != SE_JSON_NULL)
			return body;
		if (s && s->type == SE_JSON_OBJECT && !flatten_settings(s, NULL, &c.settings, err))
			return NULL;
		compose(&c, obj_with(body, "settings", NULL));
	}
	initStringInfo(&out);
	appendStringInfoString(&out, "{\"settings\":");
	se_csettings_layer_to_json(&c.settings, &out);
	if (c.mappings)
	{
		appendStringInfoString(&out, ",\"mappings\":");
		se_json_write(&out, c.mappings);
	}
	if (c.aliases)
	{
		appendStringInfoString(&out, ",\"aliases\":");
		se_json_write(&out, c.aliases);
	}
	/* anything else the request sent: the create names what it does not know */
	for (i = 0; body && body->type == SE_JSON_OBJECT && i < body->u.o.count; i++)
	{
		const SeJsonMember *m = &body->u.o.members[i];

		if (strcmp(m->key, "settings") == 0 || strcmp(m->key, "mappings") == 0 ||
			strcmp(m->key, "aliases") == 0)
			continue;
		appendStringInfoChar(&out, ',');
		se_json_write_string(&out, m->key, m->keylen);
		appendStringInfoChar(&out, ':');
		se_json_write(&out, m->value);
	}
	appendStringInfoChar(&out, '}');
	return parse_text(out.data, err);
}
