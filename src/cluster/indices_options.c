/*-------------------------------------------------------------------------
 *
 * indices_options.c
 *	  ES's multi-target options: ignore_unavailable, allow_no_indices and
 *	  expand_wildcards (open, closed, hidden, all, none).
 *
 * The REST router parses them from a request's URL (se_indices_options_set)
 * and every index expression the request resolves through se_acl_resolve
 * honours them; with none given, resolution is each API's own default as
 * before (wildcards over open indices, or open and closed where the API
 * says so; a missing name is index_not_found_exception; no match is
 * fine).  ignore_unavailable drops names that are missing, not
 * authorized, or closed where the API takes open indices only;
 * allow_no_indices=false makes an empty resolution ES's 404.  "hidden"
 * (or "all") lets wildcards match indices with index.hidden.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "cluster/state.h"
#include "util/units.h"

const SeIndicesOptions *se_indices_options = NULL;
static SeIndicesOptions current;

static bool
parse_flag(const char *v, bool *out, SeError *err)
{
	return v == NULL || se_parse_es_boolean(v, out, err);
}

bool
se_indices_options_set(const char *ignore_unavailable, const char *allow_no_indices,
					   const char *expand_wildcards, SeError *err)
{
	SeIndicesOptions o;

	se_indices_options = NULL;
	if (ignore_unavailable == NULL && allow_no_indices == NULL && expand_wildcards == NULL)
		return true;
	memset(&o, 0, sizeof(o));
	o.allow_no_indices = true;
	if (!parse_flag(ignore_unavailable, &o.ignore_unavailable, err) ||
		!parse_flag(allow_no_indices, &o.allow_no_indices, err))
		return false;
	if (expand_wildcards != NULL)
	{
		char	   *copy = pstrdup(expand_wildcards);
		char	   *save = NULL;
		char	   *tok;

		o.expand_given = true;
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			if (pg_strcasecmp(tok, "open") == 0)
				o.expand_open = true;
			else if (pg_strcasecmp(tok, "closed") == 0)
				o.expand_closed = true;
			else if (pg_strcasecmp(tok, "all") == 0)
				o.expand_open = o.expand_closed = o.expand_hidden = true;
			else if (pg_strcasecmp(tok, "hidden") == 0)
				o.expand_hidden = true;
			else if (pg_strcasecmp(tok, "none") == 0)
				 /* none adds nothing */ ;
			else
			{
				char	   *up = pstrdup(tok);
				char	   *p;

				for (p = up; *p; p++)
					*p = pg_toupper((unsigned char) *p);
				se_error_set(err, 400, "illegal_argument_exception",
							 "No enum constant org.elasticsearch.action.support.IndicesOptions.WildcardStates.%s",
							 up);
				return false;
			}
		}
	}
	current = o;
	se_indices_options = &current;
	return true;
}

void
se_indices_options_reset(void)
{
	se_indices_options = NULL;
}

/* Make o (NULL: none) the current options again (after an _msearch item). */
void
se_indices_options_restore(const SeIndicesOptions *o)
{
	if (o == NULL)
	{
		se_indices_options = NULL;
		return;
	}
	current = *o;
	se_indices_options = &current;
}

static bool
is_wildcard(const char *name)
{
	return strcmp(name, "_all") == 0 || strchr(name, '*') != NULL;
}

List *
se_state_resolve_with_options(const SeClusterState *st, const char *expr,
							  int expand, SeIndexFilter filter,
							  void *arg, const SeIndicesOptions *o, SeError *err)
{
	bool		include_closed = (expand & SE_EXPAND_CLOSED) != 0;
	bool		open = o->expand_given ? o->expand_open : true;
	bool		closed = o->expand_given ? o->expand_closed : include_closed;
	bool		hidden = o->expand_given ? o->expand_hidden : (expand & SE_EXPAND_HIDDEN) != 0;
	char	   *copy = pstrdup(expr ? expr : "_all");
	char	   *save = NULL;
	char	   *tok;
	StringInfoData kept;
	List	   *named = NIL;
	List	   *result = NIL;
	ListCell   *lc;

	initStringInfo(&kept);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		bool		exclude;
		const char *name;

		while (*tok == ' ')
			tok++;
		exclude = tok[0] == '-' && kept.len > 0;
		name = exclude ? tok + 1 : tok;
		if (!exclude && is_wildcard(name) && !open && !closed)
			continue;			/* expand_wildcards=none */
		if (!exclude && !is_wildcard(name))
		{
			if (o->ignore_unavailable)
			{
				SeError		ignored;
				SeIndexMeta *im;

				se_error_init(&ignored);
				if (filter != NULL && !filter(name, true, arg, &ignored))
					continue;
				im = se_state_find(st, name);
				/* an alias is available as its indices are */
				if (im == NULL && !se_alias_exists(st, name))
					continue;
				if (im != NULL && im->closed && !include_closed)
					continue;
			}
			named = lappend(named, (void *) name);
		}
		if (kept.len > 0)
			appendStringInfoChar(&kept, ',');
		appendStringInfoString(&kept, tok);
	}
	if (kept.len > 0)
	{
		List	   *all = se_state_resolve_filtered(st, kept.data,
												(closed ? SE_EXPAND_CLOSED : 0) |
												(hidden ? SE_EXPAND_HIDDEN : 0),
												filter, arg, err);

		if (se_error_is_set(err))
			return NIL;
		/* wildcard matches of a state expand_wildcards leaves out */
		foreach(lc, all)
		{
			SeIndexMeta *im = lfirst(lc);
			bool		is_named = false;
			ListCell   *nc;

			foreach(nc, named)
				if (strcmp(lfirst(nc), im->name) == 0)
					is_named = true;
			if (is_named || (im->closed ? closed : open))
				result = lappend(result, im);
		}
	}
	if (result == NIL && !o->allow_no_indices)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]",
					 expr ? expr : "_all");
		return NIL;
	}
	return result;
}
