/*-------------------------------------------------------------------------
 *
 * acl.h
 *	  Index-level privileges: read, write and manage on index patterns.
 *
 * A request is authorized for the role in effect (GetUserId(): the session
 * user, SET ROLE, a SECURITY DEFINER owner, or a task's submitter that a
 * task worker switched to).  Names written out in a request are checked
 * before they are looked up, so a forbidden name answers 403 whether or not
 * the index exists; wildcards expand only to indices the role may use, as
 * Elasticsearch's index-level security does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SECURITY_ACL_H
#define SE_SECURITY_ACL_H

#include "util/se_common.h"

#include "nodes/pg_list.h"

/* index privileges (bits) */
#define SE_PRIV_READ	0x01
#define SE_PRIV_WRITE	0x02
#define SE_PRIV_MANAGE	0x04
#define SE_PRIV_ALL		(SE_PRIV_READ | SE_PRIV_WRITE | SE_PRIV_MANAGE)

/* what a request does to an index, and so which privileges it needs */
typedef enum SeAclAction
{
	SE_ACL_READ,				/* search, count, get, mget, FDW scans: read */
	SE_ACL_VIEW,				/* index metadata, _cat, health: read or manage */
	SE_ACL_WRITE,				/* bulk, document writes, FDW writes, auto-create: write */
	SE_ACL_BY_QUERY,			/* update/delete-by-query: read and write */
	SE_ACL_REFRESH,				/* refresh: write or manage */
	SE_ACL_MANAGE				/* create, delete, mappings, settings, open/close,
								 * flush, force merge, verify: manage */
} SeAclAction;

/* in acl.c */
extern int	se_acl_privileges(Oid role, const char *index);
/* for the role in effect (GetUserId()) ... */
extern bool se_acl_allowed(const char *index, SeAclAction action);
extern bool se_acl_check(const char *index, SeAclAction action, SeError *err);
/* ... or for a given one (the FDW's checkAsUser) */
extern bool se_acl_role_allowed(Oid role, const char *index, SeAclAction action);
extern bool se_acl_role_check(Oid role, const char *index, SeAclAction action, SeError *err);
/* expand: SE_EXPAND_* (cluster/state.h), the API's expand_wildcards default */
extern List *se_acl_resolve(const char *expr, SeAclAction action, int expand,
							SeError *err);
extern bool se_acl_is_admin(Oid role);
extern bool se_acl_cluster_manage_check(const char *es_action, SeError *err);
extern bool se_acl_may_steer(Oid owner);

#endif
