/*-------------------------------------------------------------------------
 *
 * alias.c
 *	  Index aliases: index metadata of the cluster state, their changes and
 *	  how a name that is an alias resolves.
 *
 * As in Elasticsearch an alias is a property of each index it points to
 * (IndexMetadata's aliases): an index's JSON in the state (its file, its
 * etcd key) carries "aliases":{"<name>":{filter, index_routing,
 * search_routing, is_write_index, is_hidden}} when it has any, so the
 * cluster path (master, fenced etcd transaction, apply on every node)
 * carries them without a key of their own, and an index without aliases
 * keeps the encoding it had.  A POST /_aliases is one mutation of the
 * state: all its actions apply to a scratch copy, and any failing one
 * leaves the state as it was (ES's atomic alias actions).
 *
 * Filters are kept as JSON text; cluster/ cannot parse queries, so the API
 * validates them (api/alias_ops.c) before they reach the state.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "analysis/analysis.h"
#include "cluster/state.h"
#include "cluster/state_int.h"

/* ---------- names ---------- */

/*
 * ES's validateIndexOrAliasName for an alias: the index-name rules but
 * lowercase, worded with "alias" and its own exception.
 */
bool
se_alias_name_valid(const char *name, SeError *err)
{
	StringInfoData lower;
	const char *prefix = "Invalid index name";

	initStringInfo(&lower);
	if (name)
		se_utf8_lower(name, (int) strlen(name), &lower);
	if (se_index_name_valid(name ? lower.data : NULL, err))
		return true;
	err->type = "invalid_alias_name_exception";
	if (err->reason && strncmp(err->reason, prefix, strlen(prefix)) == 0)
	{
		char	   *rest = err->reason + strlen(prefix);
		char	   *shown = psprintf("[%s]", lower.data);
		char	   *at = strstr(rest, shown);

		/* the name as written, not the lowered copy checked */
		if (at && strcmp(lower.data, name) != 0)
			err->reason = psprintf("Invalid alias name%.*s[%s]%s", (int) (at - rest), rest,
								   name, at + strlen(shown));
		else
			err->reason = psprintf("Invalid alias name%s", rest);
	}
	return false;
}

/* ---------- one index's aliases ---------- */

/* im's alias name, or NULL */
const SeAlias *
se_alias_on(const SeIndexMeta *im, const char *name)
{
	int			i;

	for (i = 0; i < im->naliases; i++)
		if (strcmp(im->aliases[i].name, name) == 0)
			return &im->aliases[i];
	return NULL;
}

static void
put_opt_string(StringInfo out, const char *key, const char *v, const char **sep)
{
	if (v == NULL)
		return;
	appendStringInfo(out, "%s\"%s\":", *sep, key);
	se_json_write_string(out, v, strlen(v));
	*sep = ",";
}

/* One alias as ES shows it in GET /_alias (and as the state keeps it). */
void
se_alias_to_json(const SeAlias *a, StringInfo out)
{
	const char *sep = "";

	appendStringInfoChar(out, '{');
	if (a->filter)
	{
		appendStringInfo(out, "\"filter\":%s", a->filter);
		sep = ",";
	}
	put_opt_string(out, "index_routing", a->index_routing, &sep);
	put_opt_string(out, "search_routing", a->search_routing, &sep);
	if (a->is_write_index >= 0)
	{
		appendStringInfo(out, "%s\"is_write_index\":%s", sep,
						 a->is_write_index ? "true" : "false");
		sep = ",";
	}
	if (a->is_hidden)
		appendStringInfo(out, "%s\"is_hidden\":true", sep);
	appendStringInfoChar(out, '}');
}

/* {"<alias>":{..},..} of im, those whose names match pattern (NULL: all) */
void
se_aliases_to_json(const SeIndexMeta *im, const char *pattern, StringInfo out)
{
	int			i;
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (i = 0; i < im->naliases; i++)
	{
		const SeAlias *a = &im->aliases[i];

		if (pattern && !se_alias_pattern_match(pattern, a->name))
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		se_json_write_string(out, a->name, strlen(a->name));
		appendStringInfoChar(out, ':');
		se_alias_to_json(a, out);
	}
	appendStringInfoChar(out, '}');
}

/* Does an alias name match a comma list of names and wildcards (_all, *)? */
bool
se_alias_pattern_match(const char *patterns, const char *name)
{
	char	   *copy = pstrdup(patterns);
	char	   *save = NULL;
	char	   *tok;
	bool		match = false;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		while (*tok == ' ')
			tok++;
		if (tok[0] == '-' && match)
		{
			if (se_wildcard_match(tok + 1, name))
				match = false;
			continue;
		}
		if (strcmp(tok, "_all") == 0 || se_wildcard_match(tok, name))
			match = true;
	}
	pfree(copy);
	return match;
}

static int
cmp_alias(const void *a, const void *b)
{
	return strcmp(((const SeAlias *) a)->name, ((const SeAlias *) b)->name);
}

static const char *
routing_value(const char *alias, const char *key, const SeJson *v, SeError *err)
{
	if (v->type == SE_JSON_STRING)
		return pstrdup(v->u.s.str);
	if (v->type == SE_JSON_NUMBER)
		return pnstrdup(v->u.n.text, v->u.n.len);
	se_error_set(err, 400, "illegal_argument_exception",
				 "[%s] of alias [%s] must be a string, got %s", key, alias,
				 se_json_type_name(v->type));
	return NULL;
}

/*
 * Read the properties of alias name from obj (an action's, a create body's
 * or the state's own: the same keys); unknown keys are ES's error unless
 * skip names one an action may carry (index, alias, ...).
 */
static bool
alias_props(const char *name, const SeJson *obj, SeAlias *a, bool is_action, SeError *err)
{
	int			i;

	memset(a, 0, sizeof(SeAlias));
	a->name = pstrdup(name);
	a->is_write_index = -1;
	if (obj == NULL || obj->type == SE_JSON_NULL)
		return true;
	if (obj->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parse_exception", "alias [%s] must be an object", name);
		return false;
	}
	for (i = 0; i < obj->u.o.count; i++)
	{
		const char *k = obj->u.o.members[i].key;
		const SeJson *v = obj->u.o.members[i].value;

		if (strcmp(k, "filter") == 0)
		{
			if (v->type == SE_JSON_NULL)
				continue;
			if (v->type != SE_JSON_OBJECT)
			{
				se_error_set(err, 400, "parse_exception",
							 "failed to parse filter for alias [%s]", name);
				return false;
			}
			if (v->u.o.count > 0)
				a->filter = se_json_to_string(v);
		}
		else if (strcmp(k, "routing") == 0 || strcmp(k, "index_routing") == 0 ||
				 strcmp(k, "search_routing") == 0)
		{
			const char *r;

			if (v->type == SE_JSON_NULL)
				continue;
			if ((r = routing_value(name, k, v, err)) == NULL)
				return false;
			if (k[0] != 's')
				a->index_routing = (char *) r;
			if (k[0] != 'i')
				a->search_routing = (char *) r;
		}
		else if (strcmp(k, "is_write_index") == 0 || strcmp(k, "is_hidden") == 0)
		{
			if (v->type == SE_JSON_NULL)
				continue;
			if (v->type != SE_JSON_TRUE && v->type != SE_JSON_FALSE)
			{
				se_error_set(err, 400, "parse_exception",
							 "[%s] of alias [%s] must be a boolean", k, name);
				return false;
			}
			if (k[3] == 'w')
				a->is_write_index = v->type == SE_JSON_TRUE;
			else
				a->is_hidden = v->type == SE_JSON_TRUE;
		}
		else if (is_action && (strcmp(k, "index") == 0 || strcmp(k, "indices") == 0 ||
							   strcmp(k, "alias") == 0 || strcmp(k, "aliases") == 0 ||
							   strcmp(k, "must_exist") == 0))
			continue;
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unknown field [%s] for alias [%s]", k, name);
			return false;
		}
	}
	/* ES: a single index routing value (a write goes to one shard) */
	if (a->index_routing && strchr(a->index_routing, ','))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "alias [%s] has several index routing values associated with it", name);
		return false;
	}
	return true;
}

/* Put (replace) alias a on im; im's array is new, the old may be shared. */
static void
alias_put(SeIndexMeta *im, const SeAlias *a)
{
	SeAlias    *arr = palloc(sizeof(SeAlias) * (im->naliases + 1));
	int			n = 0;
	int			i;

	for (i = 0; i < im->naliases; i++)
		if (strcmp(im->aliases[i].name, a->name) != 0)
			arr[n++] = im->aliases[i];
	arr[n++] = *a;
	qsort(arr, n, sizeof(SeAlias), cmp_alias);
	im->aliases = arr;
	im->naliases = n;
}

static bool
alias_drop(SeIndexMeta *im, const char *name)
{
	SeAlias    *arr = palloc(sizeof(SeAlias) * Max(1, im->naliases));
	int			n = 0;
	int			i;

	for (i = 0; i < im->naliases; i++)
		if (strcmp(im->aliases[i].name, name) != 0)
			arr[n++] = im->aliases[i];
	if (n == im->naliases)
		return false;
	im->aliases = arr;
	im->naliases = n;
	return true;
}

/* im's aliases from the state's JSON object (its file, its etcd key). */
bool
se_aliases_from_state_json(SeIndexMeta *im, const SeJson *obj, SeError *err)
{
	int			i;

	im->naliases = 0;
	im->aliases = NULL;
	if (obj == NULL || obj->type != SE_JSON_OBJECT)
		return true;
	for (i = 0; i < obj->u.o.count; i++)
	{
		SeAlias		a;

		if (!alias_props(obj->u.o.members[i].key, obj->u.o.members[i].value, &a, false, err))
			return false;
		alias_put(im, &a);
	}
	return true;
}

/* ---------- the state's rules ---------- */

/* The indices of st that have alias name (SeIndexMeta *), in name order. */
List *
se_alias_indices(const SeClusterState *st, const char *name)
{
	List	   *l = NIL;
	int			i;

	for (i = 0; i < st->nindices; i++)
		if (se_alias_on(st->indices[i], name) != NULL)
			l = lappend(l, st->indices[i]);
	return l;
}

bool
se_alias_exists(const SeClusterState *st, const char *name)
{
	int			i;

	for (i = 0; i < st->nindices; i++)
		if (se_alias_on(st->indices[i], name) != NULL)
			return true;
	return false;
}

/*
 * After a change to alias name: at most one write index (ES's
 * IndexAbstraction.Alias), and the same is_hidden on every index.
 */
static bool
alias_consistent(const SeClusterState *st, const char *name, SeError *err)
{
	List	   *l = se_alias_indices(st, name);
	ListCell   *lc;
	StringInfoData writers;
	StringInfoData hidden;
	StringInfoData visible;
	int			nwriters = 0;

	initStringInfo(&writers);
	initStringInfo(&hidden);
	initStringInfo(&visible);
	foreach(lc, l)
	{
		const SeIndexMeta *im = lfirst(lc);
		const SeAlias *a = se_alias_on(im, name);
		StringInfo	hv = a->is_hidden ? &hidden : &visible;

		if (a->is_write_index == 1)
			appendStringInfo(&writers, "%s%s", nwriters++ ? ", " : "", im->name);
		appendStringInfo(hv, "%s%s", hv->len ? ", " : "", im->name);
	}
	if (nwriters > 1)
	{
		se_error_set(err, 400, "illegal_state_exception",
					 "alias [%s] has more than one write index [%s]", name, writers.data);
		return false;
	}
	if (hidden.len > 0 && visible.len > 0)
	{
		se_error_set(err, 400, "illegal_state_exception",
					 "alias [%s] has is_hidden set to true on indices [%s] but does not have is_hidden set to true on indices [%s]; alias must have the same is_hidden setting on all indices",
					 name, hidden.data, visible.data);
		return false;
	}
	return true;
}

/* Add alias a to im of st: ES's AliasValidator, then the alias itself. */
static bool
alias_add(SeClusterState *st, SeIndexMeta *im, const SeAlias *a, SeError *err)
{
	if (!se_alias_name_valid(a->name, err))
		return false;
	if (se_state_find(st, a->name) != NULL)
	{
		se_error_set(err, 400, "invalid_alias_name_exception",
					 "Invalid alias name [%s], an index or data stream exists with the same name as the alias",
					 a->name);
		return false;
	}
	alias_put(im, a);
	return alias_consistent(st, a->name, err);
}

/*
 * The "aliases" object of a create-index body (or of a template) applied
 * to the new index im of st, inside the create mutation: {"<name>":
 * {filter, routing, index_routing, search_routing, is_write_index,
 * is_hidden}}.  Filters must have been validated by the caller.
 */
bool
se_alias_add_from_body(SeClusterState *st, SeIndexMeta *im, const SeJson *aliases,
					   SeError *err)
{
	int			i;

	if (aliases == NULL || aliases->type == SE_JSON_NULL)
		return true;
	if (aliases->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parse_exception", "aliases must be an object");
		return false;
	}
	for (i = 0; i < aliases->u.o.count; i++)
	{
		SeAlias		a;

		if (!alias_props(aliases->u.o.members[i].key, aliases->u.o.members[i].value, &a,
						 false, err) ||
			!alias_add(st, im, &a, err))
			return false;
	}
	return true;
}

/*
 * ES's "already exists as alias" for a new index named like an alias
 * (called by the create mutation).
 */
bool
se_alias_index_name_free(const SeClusterState *st, const char *name, SeError *err)
{
	if (!se_alias_exists(st, name))
		return true;
	se_error_set(err, 400, "invalid_index_name_exception",
				 "Invalid index name [%s], already exists as alias", name);
	return false;
}

/*
 * ES's refusal of an alias where only an index will do (deleting an
 * index, remove_index): a name of expr, not a wildcard, that is an alias.
 */
bool
se_alias_refused_as_index(const SeClusterState *st, const char *expr, SeError *err)
{
	char	   *copy = pstrdup(expr);
	char	   *save = NULL;
	char	   *tok;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strchr(tok, '*') && se_state_find(st, tok) == NULL && se_alias_exists(st, tok))
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "The provided expression [%s] matches an alias, specify the corresponding concrete indices instead.",
						 tok);
			return true;
		}
	return false;
}

/* ---------- POST /_aliases, concrete ---------- */

static const char *
action_string(const SeJson *body, const char *key)
{
	const SeJson *v = se_json_get(body, key);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

/*
 * Apply the concrete actions (the API expanded names and wildcards, and
 * checked privileges and filters): [{"add":{"index":i,"alias":a,...}},
 * {"remove":{"index":i,"alias":a,"must_exist":b}}, {"remove_index":
 * {"index":i}}].  All or nothing: the mutation runs on a copy.
 */
static bool
mutate_aliases(SeClusterState *st, void *arg, SeError *err)
{
	const SeJson *actions = arg;
	int			i;

	if (actions == NULL || actions->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed alias actions");
		return false;
	}
	for (i = 0; i < actions->u.a.count; i++)
	{
		const SeJson *act = actions->u.a.items[i];
		const char *kind;
		const SeJson *body;
		const char *index;
		const char *alias;
		SeIndexMeta *im;

		if (act->type != SE_JSON_OBJECT || act->u.o.count != 1)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed alias action");
			return false;
		}
		kind = act->u.o.members[0].key;
		body = act->u.o.members[0].value;
		index = action_string(body, "index");
		alias = action_string(body, "alias");
		im = index ? se_state_find(st, index) : NULL;
		if (im == NULL)
		{
			se_error_set(err, 404, "index_not_found_exception", "no such index [%s]",
						 index ? index : "");
			return false;
		}
		if (strcmp(kind, "remove_index") == 0)
		{
			int			k;

			for (k = 0; k < st->nindices; k++)
				if (st->indices[k] == im)
					st->indices[k] = st->indices[--st->nindices];
			se_state_sort(st);
			continue;
		}
		if (alias == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed alias action");
			return false;
		}
		if (strcmp(kind, "add") == 0)
		{
			SeAlias		a;

			if (!alias_props(alias, body, &a, true, err) || !alias_add(st, im, &a, err))
				return false;
		}
		else if (strcmp(kind, "remove") == 0)
		{
			const SeJson *me = se_json_get(body, "must_exist");

			if (!alias_drop(im, alias) && !(me && me->type == SE_JSON_FALSE))
			{
				se_error_set(err, 404, "aliases_not_found_exception", "aliases [%s] missing",
							 alias);
				return false;
			}
		}
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unknown alias action [%s]", kind);
			return false;
		}
	}
	return true;
}

/* Apply concrete alias actions to the state (through the master). */
bool
se_state_update_aliases(const SeJson *actions, SeError *err)
{
	bool		ok;

	if (se_state_forwarded(&(StateOp) {"aliases", NULL, NULL, false, actions}, &ok, err))
		return ok;
	return se_state_mutate(mutate_aliases, (void *) actions, err);
}

/* ---------- resolution ---------- */

/*
 * The concrete index of a single-index operation on name (get, a write):
 * name itself when no alias has that name; else the alias's only index,
 * or for a write its write index, with the alias's index routing put
 * into *routing (one given too must be the same).  NULL with ES's error when
 * the alias cannot name one index.
 */
const char *
se_alias_single_index(const SeClusterState *st, const char *name, bool write,
					  const char **routing, SeError *err)
{
	List	   *l;
	const SeIndexMeta *target = NULL;
	const SeAlias *a;
	const char *r;

	if (name == NULL || se_state_find(st, name) != NULL ||
		(l = se_alias_indices(st, name)) == NIL)
		return name;
	if (write)
	{
		ListCell   *lc;

		foreach(lc, l)
		{
			const SeIndexMeta *im = lfirst(lc);

			if (se_alias_on(im, name)->is_write_index == 1 ||
				(list_length(l) == 1 && se_alias_on(im, name)->is_write_index != 0))
				target = im;
		}
		if (target == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "no write index is defined for alias [%s]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index",
						 name);
			return NULL;
		}
	}
	else if (list_length(l) > 1)
	{
		StringInfoData names;
		ListCell   *lc;

		initStringInfo(&names);
		foreach(lc, l)
			appendStringInfo(&names, "%s%s", names.len ? ", " : "",
							 ((SeIndexMeta *) lfirst(lc))->name);
		se_error_set(err, 400, "illegal_argument_exception",
					 "alias [%s] has more than one index associated with it [%s], can't execute a single index op",
					 name, names.data);
		return NULL;
	}
	else
		target = linitial(l);
	/* a document's shard is where its write went: index routing (ES too) */
	a = se_alias_on(target, name);
	r = a->index_routing;
	if (r && routing)
	{
		if (*routing && strcmp(*routing, r) != 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Alias [%s] has index routing associated with it [%s], and was provided with routing value [%s], rejecting operation",
						 name, r, *routing);
			return NULL;
		}
		*routing = pstrdup(r);
	}
	/* copies: the state may be reloaded while the caller still uses them */
	return pstrdup(target->name);
}

/*
 * For se_state_resolve_filtered: the indices alias name (or, with
 * pattern, every visible alias it matches) points to, added to result.
 * filter decides as for the indices themselves: named, a refused index
 * ends the resolution (an alias written out is its indices written out);
 * through a wildcard it is skipped, as a closed one is unless expand has
 * SE_EXPAND_CLOSED.  A hidden alias matches a wildcard only with
 * SE_EXPAND_HIDDEN, or a ".pattern" its ".name".  *found: some alias matched.
 */
List *
se_alias_resolve_into(const SeClusterState *st, const char *tok, bool pattern,
					  bool exclude, int expand, List *result,
					  SeIndexFilter filter, void *arg, bool *found, SeError *err)
{
	bool		include_closed = (expand & SE_EXPAND_CLOSED) != 0;
	int			i,
				k;

	*found = false;
	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];

		for (k = 0; k < im->naliases; k++)
		{
			const SeAlias *a = &im->aliases[k];

			if (pattern ? ((a->is_hidden && !(expand & SE_EXPAND_HIDDEN) &&
							!(tok[0] == '.' && a->name[0] == '.')) ||
						   !se_wildcard_match(tok, a->name)) :
				strcmp(a->name, tok) != 0)
				continue;
			*found = true;
			if (exclude)
				result = list_delete_ptr(result, im);
			else if (pattern && im->closed && !include_closed)
				break;
			else if (!list_member_ptr(result, im))
			{
				if (filter && !filter(im->name, !pattern, arg, err))
				{
					if (!pattern)
						return NIL;
					continue;
				}
				result = lappend(result, im);
			}
			break;
		}
	}
	return result;
}

/*
 * How expr reaches im, for a search: the filter (JSON text) and search
 * routing of the aliases through which it does.  Both NULL when expr
 * names im itself or matches it by a wildcard over index names, or an
 * alias without filter (routing) reaches it; several filtered aliases:
 * their filters OR'ed, as ES's AliasFilter.  im's own aliases say it all:
 * no state is read (one read here could reload the process's copy and
 * free the index metadata the caller resolved -- TAP 140 under ASan).
 */
void
se_alias_search_extras(const char *expr, const SeIndexMeta *im,
					   char **filter, char **routing)
{
	char	   *copy = pstrdup(expr ? expr : "_all");
	char	   *save = NULL;
	char	   *tok;
	List	   *filters = NIL;
	List	   *routings = NIL;
	bool		unfiltered = false;
	bool		unrouted = false;
	int			k;

	*filter = NULL;
	*routing = NULL;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		bool		pattern;

		while (*tok == ' ')
			tok++;
		if (tok[0] == '-')
			continue;
		pattern = strcmp(tok, "_all") == 0 || strchr(tok, '*') != NULL;
		if (strcmp(tok, "_all") == 0 || se_wildcard_match(tok, im->name))
		{
			unfiltered = unrouted = true;
			continue;
		}
		for (k = 0; k < im->naliases; k++)
		{
			const SeAlias *a = &im->aliases[k];

			if (pattern ? (a->is_hidden || !se_wildcard_match(tok, a->name)) :
				strcmp(a->name, tok) != 0)
				continue;
			if (a->filter)
				filters = lappend(filters, a->filter);
			else
				unfiltered = true;
			if (a->search_routing)
				routings = lappend(routings, a->search_routing);
			else
				unrouted = true;
		}
	}
	if (!unfiltered && filters != NIL)
	{
		if (list_length(filters) == 1)
			*filter = linitial(filters);
		else
		{
			StringInfoData b;
			ListCell   *lc;

			initStringInfo(&b);
			appendStringInfoString(&b, "{\"bool\":{\"should\":[");
			foreach(lc, filters)
				appendStringInfo(&b, "%s%s", foreach_current_index(lc) ? "," : "",
								 (char *) lfirst(lc));
			appendStringInfoString(&b, "],\"minimum_should_match\":1}}");
			*filter = b.data;
		}
	}
	if (!unrouted && routings != NIL)
	{
		StringInfoData b;
		ListCell   *lc;

		initStringInfo(&b);
		foreach(lc, routings)
			appendStringInfo(&b, "%s%s", b.len ? "," : "", (char *) lfirst(lc));
		*routing = b.data;
	}
	pfree(copy);
}
