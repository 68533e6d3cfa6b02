/*-------------------------------------------------------------------------
 *
 * acl.c
 *	  Index-level privileges: group roles, grants on index patterns, and
 *	  the checks every face of the engine makes.
 *
 * The grants live in search_engine._index_grants (role, index_pattern,
 * privilege), written by search_engine.grant()/revoke().  Each process
 * keeps a copy, loaded on first use; a statement trigger on the table sends
 * a relcache invalidation for it, which drops the copy everywhere at the
 * writer's commit (the pattern TimescaleDB uses for its catalog caches).
 * Role membership is PostgreSQL's own (has_privs_of_role, with its cache),
 * so GRANT/REVOKE of roles and DROP ROLE take effect at once.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "cluster/state.h"
#include "security/acl.h"

#define SE_SCHEMA		"search_engine"
#define SE_GRANTS_TABLE "_index_grants"

typedef struct AclGrant
{
	Oid			role;
	char	   *pattern;
	int			privs;
} AclGrant;

static MemoryContext grants_cxt = NULL;
static AclGrant *grants = NULL;
static int	ngrants = 0;
static bool grants_valid = false;
static Oid	grants_relid = InvalidOid;
static bool callback_registered = false;

/* The privileges an action needs: any of any_of, and all of all_of. */
static const struct
{
	const char *es_action;		/* the ES action name, for messages */
	int			any_of;
	int			all_of;
	const char *granted_by;		/* ES's "granted by the index privileges [..]" */
}			actions[] = {
	[SE_ACL_READ] = {"indices:data/read/search", SE_PRIV_READ, 0, "read,all"},
	[SE_ACL_VIEW] = {"indices:admin/get", SE_PRIV_READ | SE_PRIV_MANAGE, 0, "read,manage,all"},
	[SE_ACL_WRITE] = {"indices:data/write/bulk", SE_PRIV_WRITE, 0, "write,all"},
	[SE_ACL_BY_QUERY] = {"indices:data/write/byquery", SE_PRIV_WRITE, SE_PRIV_READ | SE_PRIV_WRITE,
	"read and write,all"},
	[SE_ACL_REFRESH] = {"indices:admin/refresh", SE_PRIV_WRITE | SE_PRIV_MANAGE, 0, "write,manage,all"},
	[SE_ACL_MANAGE] = {"indices:admin/manage", SE_PRIV_MANAGE, 0, "manage,all"},
};

static void
grants_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == grants_relid)
		grants_valid = false;
}

static int
privilege_bits(const char *name)
{
	if (strcmp(name, "read") == 0)
		return SE_PRIV_READ;
	if (strcmp(name, "write") == 0)
		return SE_PRIV_WRITE;
	if (strcmp(name, "manage") == 0)
		return SE_PRIV_MANAGE;
	if (strcmp(name, "all") == 0)
		return SE_PRIV_ALL;
	return 0;
}

/* (Re)load this process's copy of the grants table. */
static void
grants_load(void)
{
	Oid			nsp;
	Relation	rel;
	Snapshot	snap;
	TableScanDesc scan;
	HeapTuple	tup;
	int			cap = 16;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(grants_invalidate, (Datum) 0);
		callback_registered = true;
	}
	if (grants_cxt == NULL)
		grants_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine grants",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(grants_cxt);
	grants = NULL;
	ngrants = 0;
	/* valid first: an invalidation taken while loading forces a reload */
	grants_valid = true;
	nsp = get_namespace_oid(SE_SCHEMA, true);
	grants_relid = OidIsValid(nsp) ? get_relname_relid(SE_GRANTS_TABLE, nsp) : InvalidOid;
	if (!OidIsValid(grants_relid))
		return;
	rel = table_open(grants_relid, AccessShareLock);
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snap, 0, NULL);
	grants = MemoryContextAlloc(grants_cxt, sizeof(AclGrant) * cap);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Datum		values[3];
		bool		nulls[3];

		if (RelationGetDescr(rel)->natts < 3)
			break;
		heap_deform_tuple(tup, RelationGetDescr(rel), values, nulls);
		if (nulls[0] || nulls[1] || nulls[2])
			continue;
		if (ngrants == cap)
		{
			cap *= 2;
			grants = repalloc(grants, sizeof(AclGrant) * cap);
		}
		grants[ngrants].role = DatumGetObjectId(values[0]);
		grants[ngrants].pattern = MemoryContextStrdup(grants_cxt, TextDatumGetCString(values[1]));
		grants[ngrants].privs = privilege_bits(TextDatumGetCString(values[2]));
		ngrants++;
	}
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
}

static bool
member_of(Oid role, const char *group)
{
	Oid			g = get_role_oid(group, true);

	return OidIsValid(g) && has_privs_of_role(role, g);
}

bool
se_acl_is_admin(Oid role)
{
	return superuser_arg(role) || member_of(role, "search_engine_admin");
}

/* The privileges role holds on index (an index name). */
int
se_acl_privileges(Oid role, const char *index)
{
	int			privs = 0;
	int			i;

	if (!IsTransactionState())
		elog(ERROR, "search_engine privileges checked outside a transaction");
	if (se_acl_is_admin(role))
		return SE_PRIV_ALL;
	if (member_of(role, "search_engine_write"))
		privs |= SE_PRIV_READ | SE_PRIV_WRITE;
	else if (member_of(role, "search_engine_read"))
		privs |= SE_PRIV_READ;
	if (!grants_valid)
		grants_load();
	for (i = 0; i < ngrants && privs != SE_PRIV_ALL; i++)
	{
		const AclGrant *g = &grants[i];

		if ((g->privs & ~privs) != 0 && se_wildcard_match(g->pattern, index) &&
			has_privs_of_role(role, g->role))
			privs |= g->privs;
	}
	return privs;
}

static bool
privs_allow(int privs, SeAclAction action)
{
	return (privs & actions[action].any_of) != 0 &&
		(privs & actions[action].all_of) == actions[action].all_of;
}

bool
se_acl_role_allowed(Oid role, const char *index, SeAclAction action)
{
	return privs_allow(se_acl_privileges(role, index), action);
}

/* May the current role do action on index? */
bool
se_acl_allowed(const char *index, SeAclAction action)
{
	return se_acl_role_allowed(GetUserId(), index, action);
}

/* ES's 403 for action on index. */
static void
forbidden(Oid role, const char *index, SeAclAction action, SeError *err)
{
	char	   *user = GetUserNameFromId(role, true);

	se_error_set(err, 403, "security_exception",
				 "action [%s] is unauthorized for user [%s] on indices [%s], "
				 "this action is granted by the index privileges [%s]",
				 actions[action].es_action, user ? user : "?", index,
				 actions[action].granted_by);
}

/*
 * Cluster-wide administration (cluster settings, reroute): the
 * search_engine_admin role or a superuser, as ES's "manage" cluster
 * privilege; ES's 403 otherwise.
 */
bool
se_acl_cluster_manage_check(const char *es_action, SeError *err)
{
	char	   *user;

	if (se_acl_is_admin(GetUserId()))
		return true;
	user = GetUserNameFromId(GetUserId(), true);
	se_error_set(err, 403, "security_exception",
				 "action [%s] is unauthorized for user [%s], this action is granted by "
				 "the cluster privileges [manage,all] (role search_engine_admin)",
				 es_action, user ? user : "?");
	return false;
}

bool
se_acl_role_check(Oid role, const char *index, SeAclAction action, SeError *err)
{
	if (se_acl_role_allowed(role, index, action))
		return true;
	forbidden(role, index, action, err);
	return false;
}

bool
se_acl_check(const char *index, SeAclAction action, SeError *err)
{
	return se_acl_role_check(GetUserId(), index, action, err);
}

static bool
resolve_filter(const char *name, bool named, void *arg, SeError *err)
{
	SeAclAction action = *(SeAclAction *) arg;

	if (!named)
		return se_acl_allowed(name, action);
	return se_acl_check(name, action, err);
}

/*
 * An index expression resolved for action: wildcards expand to the indices
 * the role may use; a name written out that it may not use is a 403.
 */
List *
se_acl_resolve(const char *expr, SeAclAction action, int expand, SeError *err)
{
	if (se_indices_options != NULL)
		return se_state_resolve_with_options(se_state_current(), expr, expand,
											 resolve_filter, &action,
											 se_indices_options, err);
	return se_state_resolve_filtered(se_state_current(), expr, expand,
									 resolve_filter, &action, err);
}

/* May the current role see and steer a task that owner submitted? */
bool
se_acl_may_steer(Oid owner)
{
	Oid			me = GetUserId();

	return owner == me || has_privs_of_role(me, owner) || se_acl_is_admin(me);
}

/* Statement trigger on the grants table: every process reloads its copy. */
PG_FUNCTION_INFO_V1(se_acl_grants_changed);
Datum
se_acl_grants_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "se_acl_grants_changed: not called as a trigger");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(td->tg_relation));
	return PointerGetDatum(NULL);
}

/* Validate a grant's privilege and index pattern (grant(), revoke()). */
PG_FUNCTION_INFO_V1(se_sql_acl_validate);
Datum
se_sql_acl_validate(PG_FUNCTION_ARGS)
{
	char	   *priv = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *pattern = text_to_cstring(PG_GETARG_TEXT_PP(1));
	const char *p;

	if (privilege_bits(priv) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown index privilege \"%s\"", priv),
				 errdetail("illegal_argument_exception"),
				 errhint("Index privileges are read, write, manage and all.")));
	if (pattern[0] == '\0' || strlen(pattern) > 255)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an index pattern must be 1 to 255 bytes long"),
				 errdetail("illegal_argument_exception")));
	for (p = pattern; *p; p++)
	{
		if (strchr("\\/?\"<>| ,#", *p) != NULL || (*p >= 'A' && *p <= 'Z'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid index pattern \"%s\"", pattern),
					 errdetail("illegal_argument_exception"),
					 errhint("A pattern is a lower-case index name in which * matches any run of characters.")));
	}
	PG_RETURN_VOID();
}
