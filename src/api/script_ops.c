/*-------------------------------------------------------------------------
 *
 * script_ops.c
 *	  ES's stored script API (PUT/POST/GET/DELETE /_scripts/{id}) over
 *	  cluster/scripts.c, and what makes {"script": {"id": ..}} run the
 *	  stored script's source wherever a script is accepted.
 *
 * Putting, reading and deleting stored scripts is cluster administration
 * (ES's cluster:admin/script/put, get and delete, granted by its "manage"
 * cluster privilege): the search_engine_admin role or a superuser.  Running one by its id needs no
 * more than the request that names it.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "api/api.h"
#include "cluster/scripts.h"
#include "script/mustache.h"
#include "script/script.h"
#include "security/acl.h"

static bool
acknowledged(SeResponse *r)
{
	r->status = 200;
	appendStringInfoString(&r->body, "{\"acknowledged\":true}");
	return true;
}

bool
se_op_script_put(const char *id, const SeJson *body, SeResponse *r, SeError *err)
{
	const SeJson *script = se_json_get(body, "script");
	const SeJson *source = se_json_get(script, "source");
	const SeJson *lang = se_json_get(script, "lang");
	SeError		e1;

	se_require_started();
	if (!se_acl_cluster_manage_check("cluster:admin/script/put", err))
		return false;
	/* a search template: refuse one that does not compile */
	if (lang != NULL && lang->type == SE_JSON_STRING && strcmp(lang->u.s.str, "mustache") == 0)
	{
		const char *text = source == NULL ? NULL :
			source->type == SE_JSON_STRING ? source->u.s.str :
			source->type == SE_JSON_OBJECT ? se_json_to_string(source) : NULL;

		if (text != NULL && se_mustache_compile(text, strlen(text), err) == NULL)
			return false;
		return se_state_put_script(id, body, err) && acknowledged(r);
	}
	/* an update script or a score script may use it: refuse what neither compiles */
	se_error_init(&e1);
	if (source != NULL && source->type == SE_JSON_STRING &&
		se_script_compile(source->u.s.str, NULL, &e1) == NULL &&
		se_script_compile_score(source->u.s.str, NULL, err) == NULL)
		return false;
	return se_state_put_script(id, body, err) && acknowledged(r);
}

bool
se_op_script_delete(const char *id, SeResponse *r, SeError *err)
{
	se_require_started();
	return se_acl_cluster_manage_check("cluster:admin/script/delete", err) &&
		se_state_delete_script(id, err) && acknowledged(r);
}

/* {"_id", "found", "script": {"lang", "source"}}; not found: 404 */
bool
se_op_script_get(const char *id, SeResponse *r, SeError *err)
{
	const SeJson *s;

	se_require_started();
	if (!se_acl_cluster_manage_check("cluster:admin/script/get", err))
		return false;
	s = se_stored_script(se_state_current(), id);
	r->status = s ? 200 : 404;
	appendStringInfoString(&r->body, "{\"_id\":");
	se_json_write_string(&r->body, id, -1);
	appendStringInfo(&r->body, ",\"found\":%s", s ? "true" : "false");
	if (s)
	{
		appendStringInfoString(&r->body, ",\"script\":");
		se_json_write(&r->body, s);
	}
	appendStringInfoChar(&r->body, '}');
	return true;
}
