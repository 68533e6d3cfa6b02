/*-------------------------------------------------------------------------
 *
 * cluster_ops.c
 *	  GET /_cluster/state: the applied cluster view as ES shapes it.
 *
 * The nodes and the master come from the coordinator's applied view
 * (cluster/coordinator.h), the same on a single-node cluster, where the
 * node is its own master.  metadata and routing_table come from this
 * node's applied copy of the index metadata (cluster/state.c, kept from
 * etcd by cluster/state_sync.c), filtered by the caller's privileges as
 * _cat is.  A shard's state is this node's own knowledge: STARTED or
 * INITIALIZING for a shard it holds, INITIALIZING for one placed on
 * another node (data nodes do not report started shards to the master
 * yet), UNASSIGNED for one placed nowhere.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "fmgr.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "security/acl.h"

/*
 * The metrics ES's /_cluster/state/{metrics} takes, in its order; the
 * first six are filled, the others accepted and left out for now.
 */
static const char *const state_metrics[] = {
	"version", "master_node", "blocks", "nodes",
	"metadata", "routing_table", "routing_nodes", "customs",
};

#define METRIC(i) (1 << (i))

/* The metrics a comma list asks for (NULL or _all: every one). */
static bool
parse_metrics(const char *list, int *mask, SeError *err)
{
	char	   *copy;
	char	   *save = NULL;
	char	   *tok;

	*mask = 0;
	if (list == NULL || strcmp(list, "_all") == 0)
	{
		*mask = ~0;
		return true;
	}
	copy = pstrdup(list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			i;

		if (strcmp(tok, "_all") == 0)
		{
			*mask = ~0;
			continue;
		}
		for (i = 0; i < lengthof(state_metrics); i++)
			if (strcmp(tok, state_metrics[i]) == 0)
				break;
		if (i == lengthof(state_metrics))
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "request [/_cluster/state/%s] contains unrecognized metric: [%s]", list, tok);
			return false;
		}
		*mask |= METRIC(i);
	}
	return true;
}

/* "zone:a,box_type:hot" as {"zone":"a","box_type":"hot"} */
static void
attributes_json(const char *attrs, StringInfo out)
{
	char	   *copy = pstrdup(attrs);
	char	   *save = NULL;
	char	   *tok;
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *colon = strchr(tok, ':');

		if (colon == NULL)
			continue;
		*colon = '\0';
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		se_json_write_string(out, tok, -1);
		appendStringInfoChar(out, ':');
		se_json_write_string(out, colon + 1, -1);
	}
	appendStringInfoChar(out, '}');
}

/* The port peers reach m at: its conninfo's; this node's own when it gives none. */
static const char *
node_port(const SeClusterView *v, const SeClusterMember *m)
{
	const char *port = se_conninfo_port(m->conninfo);

	if (port == NULL && strcmp(m->ephemeral_id, v->local_ephemeral_id) == 0)
		return psprintf("%d", PostPortNumber);
	return port ? port : "5432";
}

static void
nodes_json(const SeClusterView *v, StringInfo out)
{
	int			i;

	appendStringInfoString(out, ",\"nodes\":{");
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, m->ephemeral_id, -1);
		appendStringInfoString(out, ":{\"name\":");
		se_json_write_string(out, m->name, -1);
		appendStringInfoString(out, ",\"ephemeral_id\":");
		se_json_write_string(out, m->ephemeral_id, -1);
		appendStringInfoString(out, ",\"transport_address\":");
		se_json_write_string(out, psprintf("%s:%s", se_conninfo_host(m->conninfo),
										   node_port(v, m)), -1);
		appendStringInfoString(out, ",\"external_id\":");
		se_json_write_string(out, m->name, -1);
		appendStringInfoString(out, ",\"attributes\":");
		attributes_json(m->attributes, out);
		appendStringInfoString(out, ",\"roles\":");
		se_node_roles_json(m->roles, out);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, '}');
}

/* The ephemeral id of node name, or NULL when it is not a member. */
static const char *
ephemeral_of(const SeClusterView *v, const char *name)
{
	int			i;

	for (i = 0; i < v->nmembers; i++)
		if (strcmp(v->members[i].name, name) == 0)
			return v->members[i].ephemeral_id;
	return NULL;
}

static const char *
shard_state(const SeIndexMeta *im, int shard, const char *node_id)
{
	int			slot;

	if (node_id == NULL)
		return "UNASSIGNED";
	if (!se_state_shard_local(im, shard))
		return "INITIALIZING";
	slot = se_slot_find(im->uuid, shard);
	if (slot >= 0 && SeSlots[slot].state == SE_SLOT_STARTED)
		return "STARTED";
	return slot >= 0 ? "INITIALIZING" : "UNASSIGNED";
}

/* metadata and/or routing_table of the indices the caller may see. */
static bool
indices_json(const SeClusterView *v, bool metadata, bool routing, StringInfo out, SeError *err)
{
	List	   *targets = se_acl_resolve("_all", SE_ACL_VIEW, true, err);
	ListCell   *lc;
	bool		first;

	if (se_error_is_set(err))
		return false;
	if (metadata)
	{
		appendStringInfoString(out, ",\"metadata\":{\"cluster_uuid\":");
		se_json_write_string(out, v->cluster_uuid, -1);
		appendStringInfoString(out, ",\"indices\":{");
		first = true;
		foreach(lc, targets)
		{
			SeIndexMeta *im = lfirst(lc);
			int			s;

			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			se_json_write_string(out, im->name, -1);
			appendStringInfo(out, ":{\"state\":\"%s\",\"settings\":", im->closed ? "close" : "open");
			se_settings_to_json(im, out);
			appendStringInfoString(out, ",\"mappings\":");
			appendStringInfoString(out, im->mappings_json);
			appendStringInfoString(out, ",\"primary_terms\":{");
			for (s = 0; s < im->settings.number_of_shards; s++)
				appendStringInfo(out, "%s\"%d\":" INT64_FORMAT, s ? "," : "", s, im->primary_term);
			appendStringInfoString(out, "}}");
		}
		appendStringInfoString(out, "}}");
	}
	if (routing)
	{
		appendStringInfoString(out, ",\"routing_table\":{\"indices\":{");
		first = true;
		foreach(lc, targets)
		{
			SeIndexMeta *im = lfirst(lc);
			int			s;

			if (im->closed)
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			se_json_write_string(out, im->name, -1);
			appendStringInfoString(out, ":{\"shards\":{");
			for (s = 0; s < im->settings.number_of_shards; s++)
			{
				const char *node_id = im->shard_nodes
					? ephemeral_of(v, im->shard_nodes[s]) : v->local_ephemeral_id;

				appendStringInfo(out, "%s\"%d\":[{\"state\":\"%s\",\"primary\":true,\"node\":",
								 s ? "," : "", s, shard_state(im, s, node_id));
				if (node_id)
					se_json_write_string(out, node_id, -1);
				else
					appendStringInfoString(out, "null");
				appendStringInfo(out, ",\"relocating_node\":null,\"shard\":%d,\"index\":", s);
				se_json_write_string(out, im->name, -1);
				appendStringInfoString(out, "}]");
			}
			appendStringInfoString(out, "}}");
		}
		appendStringInfoString(out, "}}");
	}
	return true;
}

bool
se_op_cluster_state(const char *metrics, SeResponse *r, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	int			mask;
	StringInfo	out = &r->body;

	se_require_started();
	if (!parse_metrics(metrics, &mask, err))
		return false;
	se_cluster_view(v);
	appendStringInfoString(out, "{\"cluster_name\":");
	se_json_write_string(out, v->cluster_name, -1);
	if (v->cluster_uuid[0])
	{
		appendStringInfoString(out, ",\"cluster_uuid\":");
		se_json_write_string(out, v->cluster_uuid, -1);
	}
	if (mask & METRIC(0))
		appendStringInfo(out, ",\"version\":" INT64_FORMAT, v->applied_revision);
	if (mask & METRIC(1))
	{
		appendStringInfoString(out, ",\"master_node\":");
		if (v->master_ephemeral_id[0])
			se_json_write_string(out, v->master_ephemeral_id, -1);
		else
			appendStringInfoString(out, "null");
	}
	if (mask & METRIC(2))
		appendStringInfoString(out, ",\"blocks\":{}");
	if (mask & METRIC(3))
		nodes_json(v, out);
	if ((mask & (METRIC(4) | METRIC(5))) &&
		!indices_json(v, (mask & METRIC(4)) != 0, (mask & METRIC(5)) != 0, out, err))
		return false;
	appendStringInfoChar(out, '}');
	return true;
}

/*
 * search_engine._cluster_commit(key_suffix, value): one write (value NULL:
 * a delete) of /search_engine/<cluster>/state/<key_suffix> through the
 * master's fenced commit path, as cluster/state.c's changes go; returns
 * the etcd revision this node has applied it at.  Superuser only: it is
 * for operators and tests, the cluster state's own writers call
 * se_cluster_commit directly.
 */
PG_FUNCTION_INFO_V1(se_sql_cluster_commit);
Datum
se_sql_cluster_commit(PG_FUNCTION_ARGS)
{
	SeEtcdOp	op;
	SeError		err;
	int64		revision = 0;
	char	   *suffix;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key_suffix must not be null")));
	suffix = text_to_cstring(PG_GETARG_TEXT_PP(0));
	memset(&op, 0, sizeof(op));
	op.key = se_cluster_key(psprintf("state/%s", suffix));
	if (PG_ARGISNULL(1))
		op.kind = SE_ETCD_OP_DELETE;
	else
	{
		text	   *v = PG_GETARG_TEXT_PP(1);

		op.kind = SE_ETCD_OP_PUT;
		op.value = VARDATA_ANY(v);
		op.value_len = VARSIZE_ANY_EXHDR(v);
	}
	se_error_init(&err);
	if (!se_cluster_commit(&op, 1, &revision, &err))
		se_raise(&err);
	PG_RETURN_INT64(revision);
}

/* GET /_cluster/settings */
bool
se_op_cluster_settings_get(bool flat, bool include_defaults, SeResponse *r, SeError *err)
{
	const SeClusterState *st = se_state_current();

	se_csettings_to_json(&st->persistent, &st->transient, flat, include_defaults, &r->body);
	return true;
}

/* PUT /_cluster/settings: administrators only; through the master */
bool
se_op_cluster_settings_put(const SeJson *body, SeResponse *r, SeError *err)
{
	if (!se_acl_cluster_manage_check("cluster:admin/settings/update", err))
		return false;
	return se_state_put_cluster_settings(body, &r->body, err);
}
