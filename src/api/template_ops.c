/*-------------------------------------------------------------------------
 *
 * template_ops.c
 *	  ES's index template APIs: _index_template, _component_template,
 *	  legacy _template (put, get, delete, exists) and
 *	  _index_template/_simulate_index, over cluster/templates.c.
 *
 * Putting and deleting a template needs the cluster-level privilege of
 * PUT /_cluster/settings; reading them, like reading the cluster
 * settings, is open to every role that may call the API.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/api.h"
#include "cluster/templates.h"
#include "security/acl.h"
#include "util/match.h"

static const char *const put_actions[] = {
	"indices:admin/index_template/put", "cluster:admin/component_template/put",
	"indices:admin/template/put"
};
static const char *const delete_actions[] = {
	"indices:admin/index_template/delete", "cluster:admin/component_template/delete",
	"indices:admin/template/delete"
};

static void
acknowledged(SeResponse *r)
{
	r->status = 200;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
}

bool
se_op_template_put(SeTemplateKind kind, const char *name, const SeJson *body, bool create,
				   SeResponse *r, SeError *err)
{
	const SeJson *sec = kind == SE_TEMPLATE_LEGACY ? body : se_json_get(body, "template");

	se_require_started();
	/* an alias filter is refused when the template is put, as a create would */
	if (!se_acl_cluster_manage_check(put_actions[kind], err) ||
		!se_alias_body_filters_valid(se_json_get(sec, "aliases"), err) ||
		!se_state_put_template(kind, name, body, create, err))
		return false;
	acknowledged(r);
	return true;
}

bool
se_op_template_delete(SeTemplateKind kind, const char *name, SeResponse *r, SeError *err)
{
	se_require_started();
	if (!se_acl_cluster_manage_check(delete_actions[kind], err) ||
		!se_state_delete_template(kind, name, err))
		return false;
	acknowledged(r);
	return true;
}

/* Does template name (a comma list of names or wildcards) select t's name? */
static bool
selected(const char *name, const char *key)
{
	char	   *copy;
	char	   *tok;
	char	   *save;

	if (name == NULL)
		return true;
	copy = pstrdup(name);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (se_wildcard_match(tok, key))
			return true;
	return false;
}

/*
 * GET of one kind, name NULL for all; HEAD answers the status only.  A
 * name that selects nothing is ES's 404 (legacy: an empty object; a
 * wildcard alone: an empty answer, 200).
 */
bool
se_op_template_get(SeTemplateKind kind, const char *name, SeResponse *r, SeError *err)
{
	const SeJson *all;
	int			i,
				n = 0;

	se_require_started();
	all = se_templates_of(se_state_current(), kind);
	r->status = 200;
	if (kind == SE_TEMPLATE_INDEX)
		appendStringInfoString(&r->body, "{\"index_templates\":[");
	else if (kind == SE_TEMPLATE_COMPONENT)
		appendStringInfoString(&r->body, "{\"component_templates\":[");
	else
		appendStringInfoChar(&r->body, '{');
	for (i = 0; i < all->u.o.count; i++)
	{
		const SeJsonMember *m = &all->u.o.members[i];

		if (!selected(name, m->key))
			continue;
		if (n++ > 0)
			appendStringInfoChar(&r->body, ',');
		if (kind == SE_TEMPLATE_LEGACY)
		{
			se_json_write_string(&r->body, m->key, m->keylen);
			appendStringInfoChar(&r->body, ':');
		}
		else
		{
			appendStringInfoString(&r->body, "{\"name\":");
			se_json_write_string(&r->body, m->key, m->keylen);
			appendStringInfoString(&r->body, kind == SE_TEMPLATE_INDEX ?
								   ",\"index_template\":" : ",\"component_template\":");
		}
		se_template_write(kind, m->value, &r->body);
		if (kind != SE_TEMPLATE_LEGACY)
			appendStringInfoChar(&r->body, '}');
	}
	appendStringInfoString(&r->body, kind == SE_TEMPLATE_LEGACY ? "}" : "]}");
	if (n == 0 && name != NULL && strchr(name, '*') == NULL)
	{
		if (kind == SE_TEMPLATE_LEGACY)
		{
			r->status = 404;
			return true;
		}
		se_error_set(err, 404, "resource_not_found_exception", "%s matching [%s] not found",
					 kind == SE_TEMPLATE_INDEX ? "index template" : "component template", name);
		return false;
	}
	return true;
}

/*
 * POST /_index_template/_simulate_index/{index}: the settings, mappings and
 * aliases the index would be created with, and the other composable
 * templates that match it; {} when none matches.
 */
bool
se_op_simulate_index(const char *index, SeResponse *r, SeError *err)
{
	const SeClusterState *st;
	const SeJson *body;
	const char *matched;
	List	   *overlapping;
	ListCell   *lc;
	const SeJson *all;

	se_require_started();
	st = se_state_current();
	body = se_templates_apply(st, index, NULL, &matched, &overlapping, err);
	if (se_error_is_set(err))
		return false;
	r->status = 200;
	if (matched == NULL)
	{
		appendStringInfoString(&r->body, "{}");
		return true;
	}
	appendStringInfoString(&r->body, "{\"template\":");
	{
		StringInfoData sec;
		SeJson	   *t;
		SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};

		/* as a composable template's section, so settings print nested */
		initStringInfo(&sec);
		appendStringInfoString(&sec, "{\"template\":");
		se_json_write(&sec, body);
		appendStringInfoChar(&sec, '}');
		t = se_json_parse(sec.data, sec.len, &opts, err);
		if (t == NULL)
			return false;
		resetStringInfo(&sec);
		se_template_write(SE_TEMPLATE_COMPONENT, t, &sec);
		/* {"template":{...}} -> {...} */
		appendBinaryStringInfo(&r->body, sec.data + strlen("{\"template\":"),
							   sec.len - strlen("{\"template\":") - 1);
	}
	appendStringInfoString(&r->body, ",\"overlapping\":[");
	all = se_templates_of(st, SE_TEMPLATE_INDEX);
	foreach(lc, overlapping)
	{
		const char *n = lfirst(lc);

		if (lc != list_head(overlapping))
			appendStringInfoChar(&r->body, ',');
		appendStringInfoString(&r->body, "{\"name\":");
		se_json_write_string(&r->body, n, -1);
		appendStringInfoString(&r->body, ",\"index_patterns\":");
		se_json_write(&r->body, se_json_get(se_json_get(all, n), "index_patterns"));
		appendStringInfoChar(&r->body, '}');
	}
	appendStringInfoString(&r->body, "]}");
	return true;
}
