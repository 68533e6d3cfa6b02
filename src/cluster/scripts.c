/*-------------------------------------------------------------------------
 *
 * scripts.c
 *	  Stored scripts in the cluster state: put, delete, look up.
 *
 * The scripts are one JSON object of the state, id -> {"lang", "source"},
 * changed by a mutation committed through the master (forwarded as the
 * state operations "script" and "script_delete", as index templates are),
 * so in a cluster every node sees a script once its put is acknowledged.
 * A script is checked when it is put: ES's messages for a missing lang or
 * source, Painless (what the search and update paths run) or mustache
 * (search templates: a source given as an object is kept as its JSON text
 * with ES's content_type option); that it compiles is the API's check
 * (api/script_ops.c).  A script of one language asked for as the other
 * is ES's 400 of the engine that cannot run it.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "cluster/scripts.h"
#include "cluster/state_int.h"

typedef struct ScriptArgs
{
	const char *id;
	SeJson	   *script;			/* NULL: delete */
} ScriptArgs;

/* The stored scripts of st as an object (never NULL). */
static SeJson *
scripts_root(const SeClusterState *st)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeError		err;
	SeJson	   *root = NULL;

	se_error_init(&err);
	if (st->scripts_json)
		root = se_json_parse(st->scripts_json, strlen(st->scripts_json), &opts, &err);
	if (root == NULL || root->type != SE_JSON_OBJECT)
	{
		root = palloc0(sizeof(SeJson));
		root->type = SE_JSON_OBJECT;
	}
	return root;
}

const SeJson *
se_stored_script(const SeClusterState *st, const char *id)
{
	const SeJson *s = se_json_get(scripts_root(st), id);

	return s && s->type == SE_JSON_OBJECT ? s : NULL;
}

/*
 * The source of stored script id of language lang; NULL with ES's 404 when
 * there is none, or ES's 400 when it is of another language (what its
 * engine answers for a context it cannot run).
 */
static const char *
stored_source(const char *id, const char *lang, const char *context, SeError *err)
{
	const SeJson *s = se_stored_script(se_state_current(), id);
	const SeJson *src = se_json_get(s, "source");
	const SeJson *l = se_json_get(s, "lang");
	const char *have = l && l->type == SE_JSON_STRING ? l->u.s.str : "painless";

	if (src == NULL || src->type != SE_JSON_STRING)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "unable to find script [%s] in cluster state", id);
		return NULL;
	}
	if (strcmp(have, lang) != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "%s%s does not know how to handle context [%s]", have,
					 strcmp(have, "mustache") == 0 ? " engine" : "", context);
		return NULL;
	}
	return src->u.s.str;
}

/* A painless script's source, as a request's {"script": {"id": ..}} runs it. */
const char *
se_stored_script_source(const char *id, SeError *err)
{
	return stored_source(id, "painless", "script", err);
}

/* A search template's source ({"id": ..} of _search/template). */
const char *
se_stored_template_source(const char *id, SeError *err)
{
	return stored_source(id, "mustache", "template", err);
}

/* ES's checks of PUT /_scripts/{id}; the script as stored, or NULL. */
static SeJson *
normalize(const char *id, const SeJson *body, SeError *err)
{
	const SeJson *script = se_json_get(body, "script");
	const SeJson *lang;
	const SeJson *source;
	const SeJson *options = NULL;
	bool		mustache;
	SeJson	   *out;

	if (id == NULL || id[0] == '\0' || strchr(id, '#') != NULL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: id cannot be empty or contain a '#' for stored script;");
		return NULL;
	}
	if (script == NULL || script->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parse_exception", "unable to parse stored script: [script] is missing");
		return NULL;
	}
	lang = se_json_get(script, "lang");
	source = se_json_get(script, "source");
	if (lang == NULL || lang->type != SE_JSON_STRING || lang->u.s.len == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception", "must specify lang for stored script");
		return NULL;
	}
	mustache = strcmp(lang->u.s.str, "mustache") == 0;
	if (mustache && source != NULL && source->type == SE_JSON_OBJECT)
	{
		/* ES keeps a template given as an object as its JSON text */
		source = se_json_make_string(se_json_to_string(source), -1);
		options = se_json_make_string("application/json;charset=utf-8", -1);
	}
	if (source == NULL || source->type != SE_JSON_STRING || source->u.s.len == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception", "must specify source for stored script");
		return NULL;
	}
	if (!mustache && strcmp(lang->u.s.str, "painless") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "script_lang not supported [%s]", lang->u.s.str);
		return NULL;
	}
	out = palloc0(sizeof(SeJson));
	out->type = SE_JSON_OBJECT;
	out->u.o.members = palloc(sizeof(SeJsonMember) * 3);
	out->u.o.members[0] = (SeJsonMember) {"lang", 4, (SeJson *) lang};
	out->u.o.members[1] = (SeJsonMember) {"source", 6, (SeJson *) source};
	out->u.o.count = 2;
	if (options != NULL)
	{
		SeJson	   *o = palloc0(sizeof(SeJson));

		o->type = SE_JSON_OBJECT;
		o->u.o.members = palloc(sizeof(SeJsonMember));
		o->u.o.members[0] = (SeJsonMember) {"content_type", 12, (SeJson *) options};
		o->u.o.count = 1;
		out->u.o.members[out->u.o.count++] = (SeJsonMember) {"options", 7, o};
	}
	return out;
}

static bool
mutate_scripts(SeClusterState *st, void *arg, SeError *err)
{
	ScriptArgs *a = arg;
	SeJson	   *root = scripts_root(st);

	if (a->script == NULL && se_json_get(root, a->id) == NULL)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "stored script [%s] does not exist", a->id);
		return false;
	}
	root = se_state_json_with(root, a->id, a->script);
	st->scripts_json = se_json_to_string(root);
	return true;
}

/* Forwarded to the master in a cluster, else changed here. */
static bool
script_mutation(ScriptArgs *a, SeError *err)
{
	bool		ok;
	StateOp		op = {a->script ? "script" : "script_delete", a->id, NULL, false, a->script};

	if (se_state_forwarded(&op, &ok, err))
		return ok;
	return se_state_mutate(mutate_scripts, a, err);
}

bool
se_state_put_script(const char *id, const SeJson *body, SeError *err)
{
	ScriptArgs	a = {id, NULL};

	if ((a.script = normalize(id, body, err)) == NULL)
		return false;
	return script_mutation(&a, err);
}

bool
se_state_delete_script(const char *id, SeError *err)
{
	ScriptArgs	a = {id, NULL};

	return script_mutation(&a, err);
}

bool
se_state_script_op(const char *op, const char *id, const SeJson *script, SeError *err)
{
	ScriptArgs	a = {id, NULL};

	if (strcmp(op, "script") == 0)
	{
		if (script == NULL || script->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "illegal_argument_exception", "a stored script is an object");
			return false;
		}
		a.script = (SeJson *) script;
	}
	return se_state_mutate(mutate_scripts, &a, err);
}
