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
 * _cat is.  A shard copy's state and allocation id are the master's
 * committed routing (data nodes report started and failed shards to it,
 * cluster/shard_state.c), so every node shows the same table; on a single
 * node, which has no routing, a shard is STARTED once its slot is open.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <time.h>

#include "fmgr.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "security/acl.h"

/*
 * The metrics ES's /_cluster/state/{metrics} takes, in its order; all but
 * customs are filled (customs is accepted and left out).
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

/* A member's attributes "zone:a,box_type:hot" as {"zone":"a","box_type":"hot"} */
void
se_node_attributes_json(const char *attrs, StringInfo out)
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
		se_node_attributes_json(m->attributes, out);
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

/* ms since the epoch as ES writes unassigned_info.at (UTC, ms). */
static char *
epoch_millis_iso(int64 ms)
{
	time_t		secs = (time_t) (ms / 1000);
	struct tm	tm;

	gmtime_r(&secs, &tm);
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
					tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (ms % 1000));
}

/* How many copies shard s of im has (a single node: its one primary). */
static int
ncopies_of(const SeIndexMeta *im, int s)
{
	return im->routing ? im->routing[s].ncopies : 1;
}

/* The state of copy k of shard s (a single node: the local slot's). */
static SeShardState
copy_state(const SeIndexMeta *im, int s, int k)
{
	return im->routing ? im->routing[s].copies[k].state : se_state_shard_state(im, s);
}

/*
 * Copy k of shard s (0: the primary) as ES writes it in routing_table and
 * routing_nodes.
 */
static void
shard_copy_json(const SeClusterView *v, const SeIndexMeta *im, int s, int k, StringInfo out)
{
	const SeShardCopy *c = im->routing ? &im->routing[s].copies[k] : NULL;
	const char *node_id = c ? ephemeral_of(v, c->node) : v->local_ephemeral_id;
	SeShardState state = copy_state(im, s, k);

	if (state == SE_SHARD_UNASSIGNED)
		node_id = NULL;
	appendStringInfo(out, "{\"state\":\"%s\",\"primary\":%s,\"node\":",
					 c && se_routing_relocating(c) ? "RELOCATING" : se_shard_state_name(state),
					 k == 0 ? "true" : "false");
	if (node_id)
		se_json_write_string(out, node_id, -1);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ",\"relocating_node\":");
	if (c && se_routing_relocating(c))
		se_json_write_string(out, ephemeral_of(v, c->relocating_node), -1);
	else
		appendStringInfoString(out, "null");
	appendStringInfo(out, ",\"shard\":%d,\"index\":", s);
	se_json_write_string(out, im->name, -1);
	if (c && state != SE_SHARD_STARTED)
		appendStringInfo(out, ",\"recovery_source\":{\"type\":\"%s\"}",
						 k > 0 ? "PEER"
						 : c->unassigned_reason && strcmp(c->unassigned_reason, "INDEX_CREATED") == 0
						 ? "EMPTY_STORE" : "EXISTING_STORE");
	if (c && c->allocation_id[0] && se_routing_relocating(c))
		appendStringInfo(out, ",\"allocation_id\":{\"id\":\"%s\",\"relocation_id\":\"%s\"}",
						 c->allocation_id, c->relocation_id);
	else if (c && c->allocation_id[0])
		appendStringInfo(out, ",\"allocation_id\":{\"id\":\"%s\"}", c->allocation_id);
	if (c && c->unassigned_reason)
	{
		appendStringInfoString(out, ",\"unassigned_info\":{\"reason\":");
		se_json_write_string(out, c->unassigned_reason, -1);
		appendStringInfoString(out, ",\"at\":");
		se_json_write_string(out, epoch_millis_iso(c->unassigned_at), -1);
		if (c->failed_attempts > 0)
			appendStringInfo(out, ",\"failed_attempts\":%d", c->failed_attempts);
		appendStringInfoString(out, ",\"delayed\":false");
		if (c->unassigned_details)
		{
			appendStringInfoString(out, ",\"details\":");
			se_json_write_string(out, c->unassigned_details, -1);
		}
		appendStringInfo(out, ",\"allocation_status\":\"%s\"}",
						 state == SE_SHARD_UNASSIGNED ? "no_attempt" : "awaiting_info");
	}
	appendStringInfoChar(out, '}');
}

/*
 * routing_nodes: the open indices' shard copies by node (ES's node id),
 * the unassigned ones apart.
 */
/*
 * An index in the routing table: an open one, and a closed one whose
 * copies are allocated in a cluster (ES 7.2+: a closed index keeps its
 * replicated copies, which move and recover like an open one's).
 */
static bool
shown(const SeIndexMeta *im)
{
	return !im->closed || im->routing != NULL;
}

static void
routing_nodes_json(const SeClusterView *v, List *targets, StringInfo out)
{
	ListCell   *lc;
	bool		first = true;
	int			i;

	appendStringInfoString(out, ",\"routing_nodes\":{\"unassigned\":[");
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s,
					k;

		for (s = 0; shown(im) && s < im->settings.number_of_shards; s++)
			for (k = 0; k < ncopies_of(im, s); k++)
				if (copy_state(im, s, k) == SE_SHARD_UNASSIGNED)
				{
					if (!first)
						appendStringInfoChar(out, ',');
					first = false;
					shard_copy_json(v, im, s, k, out);
				}
	}
	appendStringInfoString(out, "],\"nodes\":{");
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, m->ephemeral_id, -1);
		appendStringInfoString(out, ":[");
		first = true;
		foreach(lc, targets)
		{
			SeIndexMeta *im = lfirst(lc);
			int			s,
						k;

			for (s = 0; shown(im) && s < im->settings.number_of_shards; s++)
				for (k = 0; k < ncopies_of(im, s); k++)
				{
					bool		on_m = im->routing
						? strcmp(im->routing[s].copies[k].node, m->name) == 0
						: strcmp(m->ephemeral_id, v->local_ephemeral_id) == 0;

					if (!on_m || copy_state(im, s, k) == SE_SHARD_UNASSIGNED)
						continue;
					if (!first)
						appendStringInfoChar(out, ',');
					first = false;
					shard_copy_json(v, im, s, k, out);
				}
		}
		appendStringInfoChar(out, ']');
	}
	appendStringInfoString(out, "}}");
}

/* metadata and/or routing_table of the indices the caller may see. */
static bool
indices_json(const SeClusterView *v, const char *expr, bool metadata, bool routing,
			 bool routing_nodes, StringInfo out, SeError *err)
{
	List	   *targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, true, err);
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
				appendStringInfo(out, "%s\"%d\":" INT64_FORMAT, s ? "," : "", s,
								 se_state_shard_primary_term(im, s));
			appendStringInfoString(out, "},\"in_sync_allocations\":{");
			for (s = 0; s < im->settings.number_of_shards; s++)
			{
				int			k;

				appendStringInfo(out, "%s\"%d\":[", s ? "," : "", s);
				for (k = 0; im->routing && k < im->routing[s].nin_sync; k++)
				{
					if (k > 0)
						appendStringInfoChar(out, ',');
					se_json_write_string(out, im->routing[s].in_sync[k], -1);
				}
				appendStringInfoChar(out, ']');
			}
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

			if (!shown(im))
				continue;
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			se_json_write_string(out, im->name, -1);
			appendStringInfoString(out, ":{\"shards\":{");
			for (s = 0; s < im->settings.number_of_shards; s++)
			{
				int			k;

				appendStringInfo(out, "%s\"%d\":[", s ? "," : "", s);
				for (k = 0; k < ncopies_of(im, s); k++)
				{
					if (k > 0)
						appendStringInfoChar(out, ',');
					shard_copy_json(v, im, s, k, out);
				}
				appendStringInfoChar(out, ']');
			}
			appendStringInfoString(out, "}}");
		}
		appendStringInfoString(out, "}}");
	}
	if (routing_nodes)
		routing_nodes_json(v, targets, out);
	return true;
}

bool
se_op_cluster_state(const char *metrics, SeResponse *r, SeError *err)
{
	return se_op_cluster_state_of(metrics, NULL, r, err);
}

/*
 * _cluster/state/{metric}/{index}: metadata and routing_table of the
 * indices expr names only (curator reads each index's settings --
 * creation_date -- and state this way).
 */
bool
se_op_cluster_state_of(const char *metrics, const char *expr, SeResponse *r, SeError *err)
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
	if ((mask & (METRIC(4) | METRIC(5) | METRIC(6))) &&
		!indices_json(v, expr, (mask & METRIC(4)) != 0, (mask & METRIC(5)) != 0,
					  (mask & METRIC(6)) != 0, out, err))
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

/*
 * GET /_cluster/allocation/explain: the copy named in the body ({"index",
 * "shard", "primary"}) -- which needs view on the index -- or, without a
 * body, the first unassigned copy (administrators: it may be any index's).
 */
bool
se_op_allocation_explain(const SeJson *body, bool include_yes, SeResponse *r, SeError *err)
{
	const SeJson *ix = body ? se_json_get(body, "index") : NULL;
	const SeJson *sh = body ? se_json_get(body, "shard") : NULL;
	const SeJson *pr = body ? se_json_get(body, "primary") : NULL;

	if (body && body->type == SE_JSON_OBJECT && body->u.o.count > 0)
	{
		if (ix == NULL || ix->type != SE_JSON_STRING || sh == NULL || sh->type != SE_JSON_NUMBER ||
			!sh->u.n.is_int || pr == NULL || (pr->type != SE_JSON_TRUE && pr->type != SE_JSON_FALSE))
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: index must be specified;2: shard must be specified;3: primary must be specified;");
			return false;
		}
		if (!se_acl_check(ix->u.s.str, SE_ACL_VIEW, err))
			return false;
		if (se_state_find(se_state_current(), ix->u.s.str) == NULL)
		{
			se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", ix->u.s.str);
			return false;
		}
		return se_state_allocation_explain(ix->u.s.str, (int) sh->u.n.i, pr->type == SE_JSON_TRUE,
										   include_yes, &r->body, err);
	}
	if (!se_acl_cluster_manage_check("cluster:monitor/allocation/explain", err))
		return false;
	return se_state_allocation_explain(NULL, 0, true, include_yes, &r->body, err);
}

/* POST /_cluster/reroute: administrators only; through the master */
bool
se_op_cluster_reroute(const SeJson *body, bool dry_run, bool explain, bool retry_failed,
					  SeResponse *r, SeError *err)
{
	if (!se_acl_cluster_manage_check("cluster:admin/reroute", err))
		return false;
	return se_state_cluster_reroute(body, dry_run, explain, retry_failed, &r->body, err);
}
