/*-------------------------------------------------------------------------
 *
 * members.c
 *	  Node settings (roles, attributes), the cluster view in shared memory
 *	  and a node's JSON as its membership key holds it.
 *
 * The view is what the coordinator worker applied from etcd; on a node
 * without etcd_endpoints it is built here from this node's own settings
 * (one member, its own master, term 1), so readers take one path either
 * way.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "util/json.h"

SeClusterShared *SeCluster = NULL;

SeClusterStateApplyHook se_cluster_state_apply_hook = NULL;
void		(*se_cluster_state_full_reload_begin) (int64 revision) = NULL;
void		(*se_cluster_state_full_reload_end) (int64 revision) = NULL;

static const struct
{
	const char *name;
	int			bit;
	char		letter;			/* ES's _cat/nodes node.role letter */
}			node_roles[] = {
	{"data", SE_NODE_ROLE_DATA, 'd'}, {"master", SE_NODE_ROLE_MASTER, 'm'},
};

/*
 * Parse a node_roles value ("master,data", "" = coordinating-only) into
 * role bits; false with a palloc'd detail on an unknown or repeated role.
 */
bool
se_node_roles_parse(const char *s, int *roles, char **detail)
{
	char	   *copy = pstrdup(s ? s : "");
	char	   *save = NULL;
	char	   *tok;

	*roles = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			i;
		int			bit = 0;

		while (*tok == ' ')
			tok++;
		tok[strcspn(tok, " ")] = '\0';
		if (*tok == '\0')
			continue;
		for (i = 0; i < lengthof(node_roles); i++)
			if (strcmp(tok, node_roles[i].name) == 0)
				bit = node_roles[i].bit;
		if (bit == 0)
		{
			*detail = psprintf("Unknown node role \"%s\"; the roles are master and data (empty: a coordinating-only node).", tok);
			return false;
		}
		if (*roles & bit)
		{
			*detail = psprintf("Node role \"%s\" is given twice.", tok);
			return false;
		}
		*roles |= bit;
	}
	return true;
}

/*
 * Check a node_attributes value: comma-separated key:value pairs, keys
 * unique, both made of letters, digits, '_', '-' and '.', as ES's
 * node.attr.* names and values in practice are.
 */
bool
se_node_attributes_parse(const char *s, char **detail)
{
	char	   *copy = pstrdup(s ? s : "");
	char	   *save = NULL;
	char	   *tok;
	List	   *keys = NIL;

	if (strlen(copy) >= SE_NODE_ATTRS_LEN)
	{
		*detail = psprintf("Node attributes are limited to %d bytes.", SE_NODE_ATTRS_LEN - 1);
		return false;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *colon = strchr(tok, ':');
		static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
		ListCell   *lc;

		if (colon == NULL || colon == tok || colon[1] == '\0' ||
			strspn(tok, ok) != (size_t) (colon - tok) || strspn(colon + 1, ok) != strlen(colon + 1))
		{
			*detail = psprintf("Node attribute \"%s\" is not key:value (letters, digits, '_', '-', '.').", tok);
			return false;
		}
		*colon = '\0';
		foreach(lc, keys)
			if (strcmp(lfirst(lc), tok) == 0)
		{
			*detail = psprintf("Node attribute \"%s\" is given twice.", tok);
			return false;
		}
		keys = lappend(keys, tok);
	}
	return true;
}

int
se_node_roles_local(void)
{
	int			roles;
	char	   *detail;

	/* the GUC check hook validated it */
	if (!se_node_roles_parse(se_node_roles, &roles, &detail))
		return 0;
	return roles;
}

/* No etcd endpoints: this node is the whole cluster. */
bool
se_cluster_single_node(void)
{
	return se_etcd_endpoints == NULL || se_etcd_endpoints[0] == '\0';
}

/* ES's node.role letters ("dm"; "-" for none), in ES's (alphabetical) order. */
char *
se_node_roles_letters(int roles)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < lengthof(node_roles); i++)
		if (roles & node_roles[i].bit)
			appendStringInfoChar(&s, node_roles[i].letter);
	if (s.len == 0)
		appendStringInfoChar(&s, '-');
	return s.data;
}

/* The roles as a JSON array of names, ES's order. */
void
se_node_roles_json(int roles, StringInfo out)
{
	int			i;
	bool		first = true;

	appendStringInfoChar(out, '[');
	for (i = 0; i < lengthof(node_roles); i++)
		if (roles & node_roles[i].bit)
		{
			appendStringInfo(out, "%s\"%s\"", first ? "" : ",", node_roles[i].name);
			first = false;
		}
	appendStringInfoChar(out, ']');
}

/* Value of keyword kw in a key=value libpq string (NULL if absent). */
static const char *
conninfo_value(const char *conninfo, const char *kw)
{
	size_t		kwlen = strlen(kw);
	const char *p = conninfo;

	while (p && *p)
	{
		const char *end;

		while (*p == ' ')
			p++;
		end = p + strcspn(p, " ");
		if (strncmp(p, kw, kwlen) == 0 && p[kwlen] == '=')
			return pnstrdup(p + kwlen + 1, end - p - kwlen - 1);
		p = end;
	}
	return NULL;
}

/* The host peers reach a node at (hostaddr, else host), "127.0.0.1" if none. */
const char *
se_conninfo_host(const char *conninfo)
{
	const char *h = conninfo_value(conninfo, "hostaddr");

	if (h == NULL)
		h = conninfo_value(conninfo, "host");
	return h ? h : "127.0.0.1";
}

/* The port in a conninfo, NULL if it gives none. */
const char *
se_conninfo_port(const char *conninfo)
{
	return conninfo_value(conninfo, "port");
}

/* ---------- shared memory ---------- */

Size
se_cluster_shmem_size(void)
{
	return MAXALIGN(sizeof(SeClusterShared));
}

/* Create (postmaster) or attach; called under AddinShmemInitLock. */
void
se_cluster_shmem_init(void)
{
	bool		found;
	int			i;

	SeCluster = ShmemInitStruct("search_engine cluster", se_cluster_shmem_size(), &found);
	if (found)
		return;
	memset(SeCluster, 0, se_cluster_shmem_size());
	LWLockInitialize(&SeCluster->lock, LWLockNewTrancheId());
	/* a node start is a new ephemeral id, as ES gives each process one */
	se_make_uuid(SeCluster->ephemeral_id);
	SeCluster->started_at = (int64) time(NULL) * 1000;
	SeCluster->worker_procno = -1;
	SpinLockInit(&SeCluster->commit_mutex);
	ConditionVariableInit(&SeCluster->commit_cv);
	ConditionVariableInit(&SeCluster->applied_cv);
	for (i = 0; i < SE_CLUSTER_COMMIT_SLOTS; i++)
		SeCluster->commits[i].state = SE_COMMIT_FREE;
}

/* This node as its membership key describes it, disk of the data directory now. */
void
se_cluster_local_member(SeClusterMember *m)
{
	struct statvfs sv;

	memset(m, 0, sizeof(*m));
	strlcpy(m->name, se_cluster_node_name(), sizeof(m->name));
	strlcpy(m->ephemeral_id, SeCluster->ephemeral_id, sizeof(m->ephemeral_id));
	m->roles = se_node_roles_local();
	strlcpy(m->attributes, se_node_attributes ? se_node_attributes : "", sizeof(m->attributes));
	strlcpy(m->conninfo, se_publish_conninfo ? se_publish_conninfo : "", sizeof(m->conninfo));
	m->started_at = SeCluster->started_at;
	if (statvfs(se_data_directory(), &sv) == 0 || statvfs(DataDir, &sv) == 0)
	{
		m->disk_total_bytes = (int64) sv.f_blocks * sv.f_frsize;
		m->disk_free_bytes = (int64) sv.f_bavail * sv.f_frsize;
	}
}

/*
 * A consistent copy of the view.  Single-node: this node alone, its own
 * master with term 1 (nothing to elect).
 */
void
se_cluster_view(SeClusterView *v)
{
	memset(v, 0, sizeof(*v));
	v->single_node = se_cluster_single_node();
	strlcpy(v->cluster_name, se_cluster_name, sizeof(v->cluster_name));
	strlcpy(v->local_name, se_cluster_node_name(), sizeof(v->local_name));
	strlcpy(v->local_ephemeral_id, SeCluster->ephemeral_id, sizeof(v->local_ephemeral_id));
	if (v->single_node)
	{
		const SeClusterState *st = se_state_current();

		if (st->cluster_uuid)
			strlcpy(v->cluster_uuid, st->cluster_uuid, sizeof(v->cluster_uuid));
		se_cluster_local_member(&v->members[0]);
		v->members[0].published = true;
		v->nmembers = 1;
		strlcpy(v->master, v->local_name, sizeof(v->master));
		strlcpy(v->master_ephemeral_id, v->local_ephemeral_id, sizeof(v->master_ephemeral_id));
		v->term = 1;
		v->acting_master = true;
		v->applied_revision = (int64) st->version;
		v->joined = true;
		return;
	}
	LWLockAcquire(&SeCluster->lock, LW_SHARED);
	strlcpy(v->cluster_uuid, SeCluster->cluster_uuid, sizeof(v->cluster_uuid));
	strlcpy(v->master, SeCluster->master, sizeof(v->master));
	strlcpy(v->master_ephemeral_id, SeCluster->master_ephemeral_id, sizeof(v->master_ephemeral_id));
	v->term = SeCluster->term;
	v->acting_master = SeCluster->acting_master &&
		GetCurrentTimestamp() < SeCluster->acting_until;
	v->applied_revision = SeCluster->applied_revision;
	v->etcd_reachable_at = SeCluster->etcd_reachable_at;
	v->joined = SeCluster->joined;
	v->nmembers = SeCluster->nmembers;
	memcpy(v->members, SeCluster->members, sizeof(SeClusterMember) * v->nmembers);
	LWLockRelease(&SeCluster->lock);
}

/*
 * Whether this node has been part of the cluster since it started: a master
 * published a membership with this process in it.  Before that its state is
 * the one it persisted before it stopped, which may place copies on nodes
 * that are gone and call copies started that this process has not opened.
 * A single node is its own cluster.  One unlocked read: the flag only ever
 * goes from false to true.
 */
bool
se_cluster_joined_once(void)
{
	return se_cluster_single_node() || SeCluster->joined_once;
}

/* ---------- a member as JSON (its nodes/<name> key) ---------- */

void
se_cluster_member_json(const SeClusterMember *m, StringInfo out)
{
	appendStringInfoString(out, "{\"name\":");
	se_json_write_string(out, m->name, -1);
	appendStringInfoString(out, ",\"ephemeral_id\":");
	se_json_write_string(out, m->ephemeral_id, -1);
	appendStringInfoString(out, ",\"roles\":");
	se_node_roles_json(m->roles, out);
	appendStringInfoString(out, ",\"attributes\":");
	se_json_write_string(out, m->attributes, -1);
	appendStringInfoString(out, ",\"conninfo\":");
	se_json_write_string(out, m->conninfo, -1);
	appendStringInfo(out, ",\"disk\":{\"total_bytes\":" INT64_FORMAT ",\"free_bytes\":" INT64_FORMAT "}"
					 ",\"started_at\":" INT64_FORMAT "}",
					 m->disk_total_bytes, m->disk_free_bytes, m->started_at);
}

static void
copy_string(const SeJson *obj, const char *key, char *dst, size_t size)
{
	const SeJson *v = se_json_get(obj, key);

	dst[0] = '\0';
	if (v && v->type == SE_JSON_STRING)
		strlcpy(dst, v->u.s.str, size);
}

static int64
get_int(const SeJson *obj, const char *key)
{
	const SeJson *v = se_json_get(obj, key);

	return (v && v->type == SE_JSON_NUMBER && v->u.n.is_int) ? v->u.n.i : 0;
}

/* Parse a membership key's value; false if it is not a node's JSON. */
bool
se_cluster_member_parse(const char *json, int len, SeClusterMember *m)
{
	SeError		err;
	SeJson	   *root;
	const SeJson *roles;
	const SeJson *disk;
	int			i;

	se_error_init(&err);
	memset(m, 0, sizeof(*m));
	root = se_json_parse(json, len, NULL, &err);
	if (root == NULL || root->type != SE_JSON_OBJECT)
		return false;
	copy_string(root, "name", m->name, sizeof(m->name));
	copy_string(root, "ephemeral_id", m->ephemeral_id, sizeof(m->ephemeral_id));
	copy_string(root, "attributes", m->attributes, sizeof(m->attributes));
	copy_string(root, "conninfo", m->conninfo, sizeof(m->conninfo));
	roles = se_json_get(root, "roles");
	if (roles && roles->type == SE_JSON_ARRAY)
		for (i = 0; i < roles->u.a.count; i++)
		{
			int			j;

			if (roles->u.a.items[i]->type != SE_JSON_STRING)
				continue;
			for (j = 0; j < lengthof(node_roles); j++)
				if (strcmp(roles->u.a.items[i]->u.s.str, node_roles[j].name) == 0)
					m->roles |= node_roles[j].bit;
		}
	disk = se_json_get(root, "disk");
	if (disk && disk->type == SE_JSON_OBJECT)
	{
		m->disk_total_bytes = get_int(disk, "total_bytes");
		m->disk_free_bytes = get_int(disk, "free_bytes");
	}
	m->started_at = get_int(root, "started_at");
	return m->name[0] != '\0' && m->ephemeral_id[0] != '\0';
}

/* The node's name: node_name, else the host name. */
const char *
se_cluster_node_name(void)
{
	static char host[256];

	if (se_node_name && se_node_name[0])
		return se_node_name;
	if (host[0] == '\0' && gethostname(host, sizeof(host) - 1) != 0)
		strlcpy(host, "node-1", sizeof(host));
	return host;
}

/*
 * The conninfo node publishes, as this node applied the membership ("" when
 * it is not a member: a connection to it then fails).
 */
const SeClusterMember *
se_cluster_view_master(const SeClusterView *v)
{
	int			i;

	if (v->master[0] == '\0')
		return NULL;
	for (i = 0; i < v->nmembers; i++)
		if (strcmp(v->members[i].name, v->master) == 0)
			return &v->members[i];
	return NULL;
}

/*
 * node's attributes ("k:v,k:v") as the cluster view has them, this node's
 * own from its setting (a single node has no view); NULL: not a member.
 */
char *
se_cluster_node_attributes(const char *node)
{
	char	   *attrs = NULL;
	int			i;

	if (strcmp(node, se_cluster_node_name()) == 0)
		return pstrdup(se_node_attributes ? se_node_attributes : "");
	LWLockAcquire(&SeCluster->lock, LW_SHARED);
	for (i = 0; i < SeCluster->nmembers; i++)
		if (strcmp(SeCluster->members[i].name, node) == 0)
			attrs = pstrdup(SeCluster->members[i].attributes);
	LWLockRelease(&SeCluster->lock);
	return attrs;
}

char *
se_cluster_conninfo(const char *node)
{
	char	   *conninfo = NULL;
	int			i;

	LWLockAcquire(&SeCluster->lock, LW_SHARED);
	for (i = 0; i < SeCluster->nmembers; i++)
		if (strcmp(SeCluster->members[i].name, node) == 0)
			conninfo = pstrdup(SeCluster->members[i].conninfo);
	LWLockRelease(&SeCluster->lock);
	return conninfo ? conninfo : pstrdup("");
}
