/*-------------------------------------------------------------------------
 *
 * alias_ops.c
 *	  The aliases API: PUT/DELETE /{index}/_alias/{name}, POST /_aliases,
 *	  GET /_alias, and what a search through an alias adds to its body.
 *
 * Every request is turned into concrete actions -- one index, one alias
 * each, wildcards expanded against this node's state, manage checked on
 * each index, filters parsed as queries -- and handed to the state as one
 * change (cluster/alias.c), so it applies whole or not at all.  Reads of
 * aliases need the view privilege on the index, as GET /{index} does.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api/api.h"
#include "cluster/state.h"
#include "search/search.h"
#include "security/acl.h"

/* A filter must parse as a query ({"query": filter}), as ES validates it. */
static bool
filter_valid(const char *alias, const SeJson *filter, SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};
	SeJson	   *q;

	if (filter == NULL || filter->type == SE_JSON_NULL)
		return true;
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":");
	se_json_write(&b, filter);
	appendStringInfoChar(&b, '}');
	q = se_json_parse(b.data, b.len, &opts, err);
	if (q == NULL)
		return false;
	if (filter->type == SE_JSON_OBJECT && se_search_parse_count(q, err) != NULL)
		return true;
	if (!se_error_is_set(err))
		se_error_set(err, 400, "illegal_argument_exception",
					 "failed to parse filter for alias [%s]", alias);
	else
		err->reason = psprintf("failed to parse filter for alias [%s]: %s", alias, err->reason);
	return false;
}

/* The filters of a create body's "aliases" parse (see filter_valid). */
bool
se_alias_body_filters_valid(const SeJson *aliases, SeError *err)
{
	int			i;

	if (aliases == NULL || aliases->type != SE_JSON_OBJECT)
		return true;
	for (i = 0; i < aliases->u.o.count; i++)
	{
		const SeJson *a = aliases->u.o.members[i].value;

		if (a && a->type == SE_JSON_OBJECT &&
			!filter_valid(aliases->u.o.members[i].key, se_json_get(a, "filter"), err))
			return false;
	}
	return true;
}

/* ,"k":v for each member of obj (an object, or not: nothing) not in skip */
static void
members_except(StringInfo out, const SeJson *obj, const char *const *skip)
{
	int			i;

	for (i = 0; obj && obj->type == SE_JSON_OBJECT && i < obj->u.o.count; i++)
	{
		const char *k = obj->u.o.members[i].key;
		const char *const *sk;

		for (sk = skip; *sk && strcmp(*sk, k) != 0; sk++)
			;
		if (*sk)
			continue;
		appendStringInfoChar(out, ',');
		se_json_write_string(out, k, strlen(k));
		appendStringInfoChar(out, ':');
		se_json_write(out, obj->u.o.members[i].value);
	}
}

/* "x" or ["x", "y"] of key in an action, as a comma list; absent: ES's error */
static char *
names_of(const SeJson *body, const char *one, const char *many, SeError *err)
{
	const SeJson *v = se_json_get(body, one);
	const SeJson *l = se_json_get(body, many);
	StringInfoData b;
	int			i;

	if (v && l)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "aliases action may not have both [%s] and [%s]", one, many);
		return NULL;
	}
	if (v && v->type == SE_JSON_STRING)
		return se_name_check_json(v, SE_NAME_INDEX, err) ? pstrdup(v->u.s.str) : NULL;
	if (l == NULL || l->type != SE_JSON_ARRAY || l->u.a.count == 0)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: One of [%s] or [%s] is required;", one, many);
		return NULL;
	}
	initStringInfo(&b);
	for (i = 0; i < l->u.a.count; i++)
	{
		if (l->u.a.items[i]->type != SE_JSON_STRING ||
			!se_name_check_json(l->u.a.items[i], SE_NAME_INDEX, err))
		{
			if (!se_error_is_set(err))
				se_error_set(err, 400, "illegal_argument_exception",
							 "[%s] must be an array of strings", many);
			return NULL;
		}
		appendStringInfo(&b, "%s%s", i ? "," : "", l->u.a.items[i]->u.s.str);
	}
	return b.data;
}

/* Append {"<kind>":{"index":index,"alias":alias,<props>}} to out. */
static void
concrete_action(StringInfo out, const char *kind, const char *index, const char *alias,
				const SeJson *props)
{

	if (out->len > 1)
		appendStringInfoChar(out, ',');
	appendStringInfo(out, "{\"%s\":{\"index\":", kind);
	se_json_write_string(out, index, strlen(index));
	if (alias)
	{
		appendStringInfoString(out, ",\"alias\":");
		se_json_write_string(out, alias, strlen(alias));
	}
	members_except(out, props, (const char *const[]) {"index", "indices", "alias", "aliases", NULL});
	appendStringInfoString(out, "}}");
}

/* The indices of expr the caller may manage (names written out: 403). */
static List *
manage_targets(const char *expr, SeError *err)
{
	List	   *l = se_acl_resolve(expr, SE_ACL_MANAGE, true, err);

	if (!se_error_is_set(err) && l == NIL)
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", expr);
	return se_error_is_set(err) ? NIL : l;
}

/*
 * One action of a request made concrete into out: its indices resolved,
 * its alias names checked (add) or matched (remove).  removed collects
 * the indices a remove_index drops (SeIndexMeta *).
 */
static bool
expand_action(const char *kind, const SeJson *body, StringInfo out, List **removed,
			  SeError *err)
{
	char	   *indices;
	char	   *aliases = NULL;
	List	   *targets;
	ListCell   *lc;

	if (body == NULL || body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "x_content_parse_exception", "[%s] must be an object", kind);
		return false;
	}
	indices = names_of(body, "index", "indices", err);
	if (indices == NULL)
		return false;
	if (strcmp(kind, "remove_index") != 0 &&
		(aliases = names_of(body, "alias", "aliases", err)) == NULL)
		return false;
	/* remove_index: an index, never an alias's indices */
	if (strcmp(kind, "remove_index") == 0 &&
		se_alias_refused_as_index(se_state_current(), indices, err))
		return false;
	targets = manage_targets(indices, err);
	if (se_error_is_set(err))
		return false;
	if (strcmp(kind, "add") == 0 && !filter_valid(aliases, se_json_get(body, "filter"), err))
		return false;
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);

		if (strcmp(kind, "remove_index") == 0)
		{
			concrete_action(out, kind, im->name, NULL, NULL);
			*removed = lappend(*removed, im);
		}
		else if (strcmp(kind, "add") == 0)
		{
			char	   *copy = pstrdup(aliases);
			char	   *save = NULL;
			char	   *tok;

			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				concrete_action(out, kind, im->name, tok, body);
		}
		else
		{
			bool		any = false;
			int			k;

			for (k = 0; k < im->naliases; k++)
				if (se_alias_pattern_match(aliases, im->aliases[k].name))
				{
					concrete_action(out, kind, im->name, im->aliases[k].name, body);
					any = true;
				}
			/* a name that is no alias: the state says it is missing */
			if (!any && !strchr(aliases, '*') && strcmp(aliases, "_all") != 0)
				concrete_action(out, kind, im->name, aliases, body);
			else if (!any)
			{
				const SeJson *me = se_json_get(body, "must_exist");

				if (!(me && me->type == SE_JSON_FALSE))
				{
					se_error_set(err, 404, "aliases_not_found_exception",
								 "aliases [%s] missing", aliases);
					return false;
				}
			}
		}
	}
	return true;
}

/* Apply out's concrete actions; then drop the shards of removed indices. */
static bool
apply_actions(StringInfo out, List *removed, SeResponse *r, SeError *err)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeJson	   *actions;
	List	   *dropped = NIL;
	ListCell   *lc;

	appendStringInfoChar(out, ']');
	actions = se_json_parse(out->data, out->len, &opts, err);
	if (actions == NULL)
		return false;
	/* the index's uuid and shard count, before the state forgets them */
	foreach(lc, removed)
	{
		SeIndexMeta *im = lfirst(lc);

		dropped = lappend(dropped, psprintf("%d:%s", im->settings.number_of_shards, im->uuid));
	}
	if (!se_state_update_aliases(actions, err))
		return false;
	foreach(lc, dropped)
	{
		char	   *s = lfirst(lc);
		char	   *colon = strchr(s, ':');

		se_index_dropped(colon + 1, atoi(s));
	}
	r->status = 200;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

/* POST /_aliases {"actions":[{"add"|"remove"|"remove_index":{..}},..]} */
bool
se_op_update_aliases(const SeJson *body, SeResponse *r, SeError *err)
{
	const SeJson *actions;
	StringInfoData out;
	List	   *removed = NIL;
	int			i;

	se_require_started();
	actions = body && body->type == SE_JSON_OBJECT ? se_json_get(body, "actions") : NULL;
	if (actions == NULL || actions->type != SE_JSON_ARRAY || actions->u.a.count == 0)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no actions specified;");
		return false;
	}
	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	for (i = 0; i < actions->u.a.count; i++)
	{
		const SeJson *a = actions->u.a.items[i];
		const char *kind;

		if (a->type != SE_JSON_OBJECT || a->u.o.count != 1)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[aliases] each action must be an object with one of [add], [remove], [remove_index]");
			return false;
		}
		kind = a->u.o.members[0].key;
		if (strcmp(kind, "add") != 0 && strcmp(kind, "remove") != 0 &&
			strcmp(kind, "remove_index") != 0)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[aliases] unknown field [%s]", kind);
			return false;
		}
		if (!expand_action(kind, a->u.o.members[0].value, &out, &removed, err))
			return false;
	}
	return apply_actions(&out, removed, r, err);
}

/*
 * One action of kind on the path's index expression and alias name, with
 * the properties of body (an object, or NULL), as POST /_aliases runs it.
 */
static bool
path_action(const char *kind, const char *expr, const char *name, const SeJson *body,
			SeResponse *r, SeError *err)
{
	StringInfoData out;
	StringInfoData b;
	List	   *removed = NIL;
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeJson	   *props;

	se_require_started();
	if (body != NULL && body->type != SE_JSON_NULL && body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parse_exception", "request body must be an object");
		return false;
	}
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"index\":");
	se_json_write_string(&b, expr, strlen(expr));
	appendStringInfoString(&b, ",\"alias\":");
	se_json_write_string(&b, name, strlen(name));
	members_except(&b, body, (const char *const[]) {"index", "alias", NULL});
	appendStringInfoChar(&b, '}');
	props = se_json_parse(b.data, b.len, &opts, err);
	if (props == NULL)
		return false;
	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	return expand_action(kind, props, &out, &removed, err) &&
		apply_actions(&out, removed, r, err);
}

/* PUT|POST /{index}/_alias/{name} with an optional body of properties. */
bool
se_op_put_alias(const char *expr, const char *name, const SeJson *body, SeResponse *r,
				SeError *err)
{
	return path_action("add", expr, name, body, r, err);
}

/* DELETE /{index}/_alias/{name}: name may be a list with wildcards. */
bool
se_op_delete_alias(const char *expr, const char *name, SeResponse *r, SeError *err)
{
	return path_action("remove", expr, name, NULL, r, err);
}

/*
 * GET /_alias[/{name}], GET /{index}/_alias[/{name}]: per index the
 * aliases name matches (no name: all, and every index, with or without).
 * A name written out that no index has is ES's 404 body, listing the
 * found ones too.  head: only whether every name exists (a wildcard: any).
 */
bool
se_op_get_alias(const char *expr, const char *name, bool head, SeResponse *r, SeError *err)
{
	List	   *targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, true, err);
	ListCell   *lc;
	StringInfoData body;
	StringInfoData missing;
	bool		first = true;

	se_require_started();
	if (se_error_is_set(err))
		return false;
	initStringInfo(&body);
	initStringInfo(&missing);
	/* names written out (not wildcards) that none of the targets has */
	if (name)
	{
		char	   *copy = pstrdup(name);
		char	   *save = NULL;
		char	   *tok;

		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			bool		found = strchr(tok, '*') != NULL || strcmp(tok, "_all") == 0 ||
				tok[0] == '-';

			foreach(lc, targets)
				found = found || se_alias_on(lfirst(lc), tok) != NULL;
			if (!found)
				appendStringInfo(&missing, "%s%s", missing.len ? "," : "", tok);
		}
	}
	appendStringInfoChar(&body, '{');
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			k;
		bool		any = false;

		for (k = 0; name && k < im->naliases && !any; k++)
			any = se_alias_pattern_match(name, im->aliases[k].name);
		if (name && !any)
			continue;
		if (!first)
			appendStringInfoChar(&body, ',');
		first = false;
		se_json_write_string(&body, im->name, strlen(im->name));
		appendStringInfoString(&body, ":{\"aliases\":");
		se_aliases_to_json(im, name, &body);
		appendStringInfoChar(&body, '}');
	}
	if (missing.len > 0)
	{
		appendStringInfo(&body, "%s\"error\":", first ? "" : ",");
		{
			char	   *msg = psprintf(strchr(missing.data, ',') ? "aliases [%s] missing" :
									   "alias [%s] missing", missing.data);

			se_json_write_string(&body, msg, strlen(msg));
		}
		appendStringInfoString(&body, ",\"status\":404");
	}
	appendStringInfoChar(&body, '}');
	/* a wildcard that matches nothing is an empty answer; HEAD says none */
	r->status = missing.len > 0 || (head && name && first) ? 404 : 200;
	if (!head)
		appendBinaryStringInfo(&r->body, body.data, body.len);
	return true;
}

/*
 * The filter clause of the aliases through which expr reaches indices
 * (NULL: none).  When the indices differ (one reached directly, another
 * through a filtered alias; different filters), each index's filter is
 * tied to it with a term query on _index, so one clause serves them all.
 */
char *
se_alias_filter_clause(const char *expr, List *indices)
{
	List	   *filters = NIL;	/* distinct filters (char *); NULL: none */
	List	   *groups = NIL;	/* per filter, its indices' names as JSON */
	bool		any_filter = false;
	ListCell   *lc;
	StringInfoData b;

	if (expr == NULL || indices == NIL)
		return NULL;
	foreach(lc, indices)
	{
		const SeIndexMeta *im = lfirst(lc);
		char	   *f;
		char	   *rt;
		ListCell   *fc;
		int			g = -1;

		se_alias_search_extras(expr, im, &f, &rt);
		any_filter = any_filter || f != NULL;
		foreach(fc, filters)
			if ((lfirst(fc) == NULL && f == NULL) ||
				(lfirst(fc) && f && strcmp(lfirst(fc), f) == 0))
				g = foreach_current_index(fc);
		if (g < 0)
		{
			filters = lappend(filters, f);
			groups = lappend(groups, makeStringInfo());
			g = list_length(filters) - 1;
		}
		{
			StringInfo	names = list_nth(groups, g);

			if (names->len > 0)
				appendStringInfoChar(names, ',');
			se_json_write_string(names, im->name, strlen(im->name));
		}
	}
	if (!any_filter)
		return NULL;
	if (list_length(filters) == 1)
		return linitial(filters);
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"bool\":{\"minimum_should_match\":1,\"should\":[");
	foreach(lc, filters)
	{
		StringInfo	names = list_nth(groups, foreach_current_index(lc));

		appendStringInfo(&b, "%s{\"bool\":{\"filter\":[{\"terms\":{\"_index\":[%s]}}%s%s]}}",
						 foreach_current_index(lc) ? "," : "", names->data,
						 lfirst(lc) ? "," : "", lfirst(lc) ? (char *) lfirst(lc) : "");
	}
	appendStringInfoString(&b, "]}}");
	return b.data;
}

/*
 * A search body with clause (NULL: none) as a filter beside its query; no
 * query is match_all, so hits keep ES's score of 1.
 */
const SeJson *
se_body_with_filter(const SeJson *body, const char *clause, SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};
	const SeJson *query;

	if (clause == NULL)
		return body;
	if (body && body->type != SE_JSON_OBJECT && body->type != SE_JSON_NULL)
		return body;
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":{\"bool\":{\"must\":[");
	query = body && body->type == SE_JSON_OBJECT ? se_json_get(body, "query") : NULL;
	if (query)
		se_json_write(&b, query);
	else
		appendStringInfoString(&b, "{\"match_all\":{}}");
	appendStringInfo(&b, "],\"filter\":[%s]}}", clause);
	members_except(&b, body, (const char *const[]) {"query", NULL});
	appendStringInfoChar(&b, '}');
	return se_json_parse(b.data, b.len, &opts, err);
}

/* A search over expr: its body with its aliases' filter clause. */
const SeJson *
se_alias_search_body(const char *expr, List *indices, const SeJson *body, SeError *err)
{
	return se_body_with_filter(body, se_alias_filter_clause(expr, indices), err);
}

/* Is v one of the values of the comma list list? */
static bool
routing_list_has(const char *list, const char *v)
{
	size_t		vl = strlen(v);

	for (;;)
	{
		size_t		len = strcspn(list, ",");

		if (len == vl && strncmp(list, v, vl) == 0)
			return true;
		if (list[len] == '\0')
			return false;
		list += len + 1;
	}
}

/*
 * The routing a search over expr uses on index im, ES's per index: the
 * search routing of the aliases through which expr reaches it, those of
 * them the request's routing (NULL: none) also names when both are given
 * (none in common: every shard, as ES), else the request's.
 */
const char *
se_alias_index_routing(const char *expr, const SeIndexMeta *im, const char *routing)
{
	char	   *f;
	char	   *rt;
	char	   *save = NULL;
	char	   *tok;
	StringInfoData b;

	if (expr == NULL)
		return routing;
	se_alias_search_extras(expr, im, &f, &rt);
	if (rt == NULL)
		return routing;
	if (routing == NULL)
		return rt;
	initStringInfo(&b);
	for (tok = strtok_r(rt, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (routing_list_has(routing, tok))
			appendStringInfo(&b, "%s%s", b.len ? "," : "", tok);
	return b.len ? b.data : NULL;
}

/*
 * The aliases view (_cat/aliases in SQL): one row per alias and index of
 * the indices the caller may view, filter as jsonb.
 */
PG_FUNCTION_INFO_V1(se_sql_cat_aliases);
Datum
se_sql_cat_aliases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SeError		err;
	List	   *targets;
	ListCell   *lc;

	se_require_started();
	se_error_init(&err);
	targets = se_acl_resolve("_all", SE_ACL_VIEW, true, &err);
	if (se_error_is_set(&err))
		se_raise(&err);
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, targets)
	{
		const SeIndexMeta *im = lfirst(lc);
		int			k;

		for (k = 0; k < im->naliases; k++)
		{
			const SeAlias *a = &im->aliases[k];
			Datum		values[7];
			bool		nulls[7] = {0};

			values[0] = CStringGetTextDatum(a->name);
			values[1] = CStringGetTextDatum(im->name);
			nulls[2] = a->filter == NULL;
			if (a->filter)
				values[2] = DirectFunctionCall1(jsonb_in, CStringGetDatum(a->filter));
			nulls[3] = a->index_routing == NULL;
			if (a->index_routing)
				values[3] = CStringGetTextDatum(a->index_routing);
			nulls[4] = a->search_routing == NULL;
			if (a->search_routing)
				values[4] = CStringGetTextDatum(a->search_routing);
			nulls[5] = a->is_write_index < 0;
			values[5] = BoolGetDatum(a->is_write_index == 1);
			values[6] = BoolGetDatum(a->is_hidden);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
