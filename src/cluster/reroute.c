/*-------------------------------------------------------------------------
 *
 * reroute.c
 *	  The master's allocation: the cluster state's routing as the
 *	  allocator's model (allocator.c), a reroute, and the result written
 *	  back into the state.
 *
 * se_state_commit() runs se_state_reroute() after every mutation it
 * commits, so a created or reopened index, a failed copy, a changed
 * setting or filter is placed in the same etcd transaction; and the
 * master's shard-state worker commits a reroute of its own when the
 * membership changes and every few seconds (disk figures, delayed
 * allocation).  A reroute that changes nothing commits nothing.
 *
 * What it decides today: where unassigned copies go (ES's balanced
 * allocator with every decider: filters, awareness, disk watermarks,
 * shards per node, enable, throttling, retries, a primary only where its
 * data is, a replica only after its primary started and never beside
 * another copy of its shard), that a departed node's copies are
 * unassigned (NODE_LEFT) and a primary comes back to it when it returns,
 * the number of copies (index.number_of_replicas, changed at runtime),
 * the failover (an unassigned primary is replaced by a STARTED in-sync
 * replica, the shard's primary term + 1) and the flood stage's
 * index.blocks.read_only_allow_delete, and moves (copies that may not
 * remain, rebalancing, the move command): a moved copy becomes RELOCATING
 * with a target under a fresh allocation id, which recovers from the
 * primary and takes the copy's place when it reports started
 * (shard_state.c; a primary hands off first, replication/relocation.c).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "cluster/allocator.h"
#include "cluster/cluster_settings.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/state_int.h"
#include "util/json.h"

static const char *const reason_names[] = {
	"INDEX_CREATED", "NODE_LEFT", "ALLOCATION_FAILED", "REROUTE_CANCELLED",
	"REPLICA_ADDED", "INDEX_REOPENED", "CLUSTER_RECOVERED", NULL
};

static SeUnassignedReason
reason_of(const char *s)
{
	int			i;

	for (i = 0; s && reason_names[i]; i++)
		if (strcmp(reason_names[i], s) == 0)
			return (SeUnassignedReason) i;
	return SE_UNASSIGNED_INDEX_CREATED;
}

/* "k:v,k:v" -> attributes */
static int
parse_attrs(const char *s, SeAllocAttr **out)
{
	char	   *copy = pstrdup(s);
	char	   *tok,
			   *save = NULL;
	int			n = 0;

	*out = palloc0(sizeof(SeAllocAttr) * (strlen(s) / 2 + 1));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *colon = strchr(tok, ':');

		if (colon == NULL)
			continue;
		*colon = '\0';
		(*out)[n].key = tok;
		(*out)[n].value = colon + 1;
		n++;
	}
	return n;
}

typedef struct Model
{
	SeAllocModel m;
	SeIndexMeta **ims;			/* per model index */
	int			nghosts;		/* nodes named by copies, not members */
} Model;

static int
node_id(Model *md, const char *name, int nmembers)
{
	int			i;

	if (name == NULL || name[0] == '\0')
		return -1;
	for (i = 0; i < md->m.nnodes; i++)
		if (strcmp(md->m.nodes[i].name, name) == 0)
			return i;
	/* a node that is not a member (any more): known, holds nothing */
	i = md->m.nnodes++;
	memset(&md->m.nodes[i], 0, sizeof(SeAllocNode));
	md->m.nodes[i].id = pstrdup(name);
	md->m.nodes[i].name = pstrdup(name);
	md->m.nodes[i].host = "";
	md->nghosts++;
	(void) nmembers;
	return i;
}

/*
 * The allocator's model of st (cluster-mode indices only) with the
 * members of v; NULL when no index has routing.  Each model copy's ref is
 * its place in the shard's routing (0: the primary).
 */
static Model *
build_model(SeClusterState *st, const SeClusterView *v)
{
	Model	   *md = palloc0(sizeof(Model));
	SeAllocModel *m = &md->m;
	int			ncopies = 0;
	int			i,
				s,
				k;
	SeError		err;

	for (i = 0; i < st->nindices; i++)
		for (s = 0; st->indices[i]->routing && s < st->indices[i]->settings.number_of_shards; s++)
			ncopies += st->indices[i]->routing[s].ncopies;
	if (ncopies == 0)
		return NULL;
	se_csettings_alloc(&st->persistent, &st->transient, &m->settings);
	m->settings.now_ms = se_state_now_millis();

	/* members, then the nodes copies name that are gone */
	m->nodes = palloc0(sizeof(SeAllocNode) * (v->nmembers + ncopies * 2 + 1));
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *c = &v->members[i];
		SeAllocNode *n = &m->nodes[m->nnodes++];

		n->id = pstrdup(c->ephemeral_id);
		n->name = pstrdup(c->name);
		n->host = pstrdup(se_conninfo_host(c->conninfo));
		n->transport_address = psprintf("%s:%s", n->host, se_conninfo_port(c->conninfo));
		n->nattrs = parse_attrs(c->attributes, &n->attrs);
		n->data = (c->roles & SE_NODE_ROLE_DATA) != 0;
		n->disk_total = c->disk_total_bytes;
		n->disk_used = c->disk_total_bytes > 0 ? c->disk_total_bytes - c->disk_free_bytes : 0;
	}

	md->ims = palloc0(sizeof(SeIndexMeta *) * Max(st->nindices, 1));
	m->indices = palloc0(sizeof(SeAllocIndex) * Max(st->nindices, 1));
	m->copies = palloc0(sizeof(SeAllocCopy) * ncopies);
	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];
		SeAllocIndex *x;
		int			ix;

		if (im->routing == NULL)
			continue;
		ix = m->nindices++;
		md->ims[ix] = im;
		x = &m->indices[ix];
		x->name = im->name;
		x->number_of_shards = im->settings.number_of_shards;
		x->number_of_replicas = im->settings.number_of_replicas;
		x->closed = im->closed;
		x->total_shards_per_node = im->settings.total_shards_per_node;
		x->max_retries = im->settings.max_retries;
		x->enable = (SeAllocEnable) im->settings.allocation_enable;
		x->delayed_timeout_ms = im->settings.delayed_timeout_ms;
		x->read_only_allow_delete = im->settings.blocks_read_only_allow_delete;
		se_csettings_filters(&im->settings.allocation_filters, "", &x->filters);
		for (s = 0; s < im->settings.number_of_shards; s++)
			for (k = 0; k < im->routing[s].ncopies; k++)
			{
				const SeShardCopy *c = &im->routing[s].copies[k];
				SeAllocCopy *a = &m->copies[m->ncopies++];

				a->index = ix;
				a->shard = s;
				a->primary = c->primary;
				a->ref = k;
				a->relocating_node = -1;
				a->node = c->state == SE_SHARD_UNASSIGNED ? -1 : node_id(md, c->node, v->nmembers);
				/*
				 * A closed index's primary on a node is there: nothing
				 * recovers it.  Its replica recovers the primary's files.
				 */
				a->state = c->state == SE_SHARD_STARTED ||
					(c->state == SE_SHARD_INITIALIZING && im->closed && c->primary) ? SE_COPY_STARTED :
					c->state == SE_SHARD_INITIALIZING ? SE_COPY_INITIALIZING : SE_COPY_UNASSIGNED;
				a->data_node = node_id(md, c->data_node, v->nmembers);
				if (se_routing_relocating(c))
				{
					a->state = SE_COPY_RELOCATING;
					a->relocating_node = node_id(md, c->relocating_node, v->nmembers);
				}
				a->reason = reason_of(c->unassigned_reason);
				a->unassigned_at_ms = c->unassigned_at;
				a->failed_attempts = c->failed_attempts;
			}
	}
	se_error_init(&err);
	if (!se_alloc_prepare(m, &err))
		elog(ERROR, "search_engine: cannot model the routing: %s", err.reason);
	return md;
}

/*
 * Assert-enabled builds recount the allocator's incremental bookkeeping
 * from scratch after every reroute and command on the master's model (the
 * per-node initializing, relocating and byte counts the deciders answer
 * from in O(1)); a drift is a bug in set_state's accounting.
 */
static void
check_bookkeeping(const Model *md, const char *after)
{
#ifdef USE_ASSERT_CHECKING
	SeError		err;

	se_error_init(&err);
	if (!se_alloc_check_invariants(&md->m, &err))
		elog(ERROR, "search_engine: allocator bookkeeping drifted after %s: %s", after, err.reason);
#endif
}

/* node is a data member of v */
static bool
data_member(const SeClusterView *v, const char *node)
{
	int			n;

	for (n = 0; n < v->nmembers; n++)
		if (strcmp(v->members[n].name, node) == 0 &&
			(v->members[n].roles & SE_NODE_ROLE_DATA))
			return true;
	return false;
}

/*
 * Copies on a node that is no longer a data member: unassigned, NODE_LEFT,
 * their data remembered where it is (a primary comes back to it), out of
 * the in-sync set.
 */
static bool
unassign_departed(SeClusterState *st, const SeClusterView *v)
{
	bool		changed = false;
	int			i,
				s,
				k;

	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];

		for (s = 0; im->routing && s < im->settings.number_of_shards; s++)
			for (k = 0; k < im->routing[s].ncopies; k++)
			{
				SeShardCopy *c = &im->routing[s].copies[k];
				bool		member = false;
				char	   *node;

				if (c->state == SE_SHARD_UNASSIGNED)
					continue;
				if (se_routing_relocating(c) && !data_member(v, c->relocating_node))
				{
					/* the target's node left: the copy stays where it is */
					se_routing_relocation_cancel(&im->routing[s], k);
					changed = true;
				}
				member = data_member(v, c->node);
				if (member)
					continue;
				node = pstrdup(c->node);
				if (c->state == SE_SHARD_STARTED || c->data_node)
					c->data_node = c->state == SE_SHARD_STARTED ? node : pstrdup(c->data_node);
				se_state_unassign_copy(im, s, k, "NODE_LEFT", psprintf("node_left [%s]", node));
				changed = true;
			}
		se_state_routing_derive(im);
	}
	return changed;
}

/*
 * The failover: every shard whose primary is unassigned gets a STARTED
 * in-sync replica as its primary (se_state_promote).  A closed index's
 * too: its in-sync replica holds every acknowledged write (it took none
 * since), so it keeps the shard when the primary's node leaves for good.
 */
static bool
promote_replicas(SeClusterState *st)
{
	bool		changed = false;
	int			i,
				s;

	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];

		if (im->routing == NULL)
			continue;
		for (s = 0; s < im->settings.number_of_shards; s++)
			changed |= se_state_promote(im, s);
	}
	return changed;
}

/*
 * The model's copies back into the state: a copy placed is INITIALIZING
 * on its node under a fresh allocation id, one unassigned (a cancel) loses
 * its node; a started copy's data is where it runs.  True if any changed.
 */
static bool
write_back(Model *md)
{
	bool		changed = false;
	int			i;

	for (i = 0; i < md->m.ncopies; i++)
	{
		const SeAllocCopy *a = &md->m.copies[i];
		SeIndexMeta *im = md->ims[a->index];
		SeShardCopy *c = &im->routing[a->shard].copies[a->ref];

		if (a->state == SE_COPY_STARTED &&
			(c->data_node == NULL || strcmp(c->data_node, c->node) != 0))
		{
			c->data_node = pstrdup(c->node);
			changed = true;
		}
		/*
		 * A closed index's primary is never opened, so it would never
		 * report started: placed where its data is (or closed while
		 * initializing), it is STARTED -- its node holds it, and reopening
		 * recovers it (INDEX_REOPENED).  A closed replica (or a moving
		 * copy's target) is INITIALIZING until its node copied the
		 * primary's files (replication/recovery_*.c, no shard opened) and
		 * reported it started.
		 */
		if (im->closed && c->primary && c->state == SE_SHARD_INITIALIZING)
		{
			c->state = SE_SHARD_STARTED;
			changed = true;
		}
		/*
		 * A move decided (a reroute's move or rebalance, the move command):
		 * the copy stays STARTED where it is and its target, under a fresh
		 * allocation id, recovers from the primary on the new node.  A move
		 * cancelled (the cancel command) forgets the target.
		 */
		if (a->state == SE_COPY_RELOCATING && c->state == SE_SHARD_STARTED &&
			(!se_routing_relocating(c) ||
			 strcmp(c->relocating_node, md->m.nodes[a->relocating_node].name) != 0))
		{
			char		target_id[SE_UUID_LEN + 1];

			se_make_uuid(target_id);
			se_routing_relocate(&im->routing[a->shard], a->ref,
								md->m.nodes[a->relocating_node].name, target_id);
			changed = true;
			continue;
		}
		if (a->state == SE_COPY_STARTED && se_routing_relocating(c))
		{
			se_routing_relocation_cancel(&im->routing[a->shard], a->ref);
			changed = true;
		}
		if (a->state == SE_COPY_UNASSIGNED && c->failed_attempts != a->failed_attempts)
		{
			c->failed_attempts = a->failed_attempts;	/* retry_failed */
			changed = true;
		}
		if (!a->changed)
			continue;
		if (a->state == SE_COPY_INITIALIZING)
		{
			c->node = pstrdup(md->m.nodes[a->node].name);
			c->state = im->closed && a->primary ? SE_SHARD_STARTED : SE_SHARD_INITIALIZING;
			se_make_uuid(c->allocation_id);
			/* an empty or stale primary forced here: the data is this node's now */
			if (a->primary && a->data_node < 0)
				c->data_node = NULL;
			if (im->closed && a->primary)
				c->data_node = pstrdup(md->m.nodes[a->node].name);
			changed = true;
		}
		else if (a->state == SE_COPY_UNASSIGNED)
		{
			se_state_unassign_copy(im, a->shard, a->ref, se_unassigned_reason_name(a->reason), NULL);
			c->failed_attempts = a->failed_attempts;
			changed = true;
		}
	}
	for (i = 0; i < md->m.nindices; i++)
		se_state_routing_derive(md->ims[i]);
	return changed;
}

/*
 * Every index's copies as many as its number_of_replicas asks for, then
 * the departed nodes' copies unassigned and the failover: what every
 * reroute and every reroute command starts from.
 */
static bool
routing_update(SeClusterState *st, const SeClusterView *v)
{
	bool		changed = false;
	int			i;

	for (i = 0; i < st->nindices; i++)
		changed |= se_state_routing_resize(st->indices[i]);
	changed |= unassign_departed(st, v);
	changed |= promote_replicas(st);
	return changed;
}

/* Reroute st (cluster mode, on the master); true when it changed. */
bool
se_state_reroute(SeClusterState *st)
{
	return se_state_reroute_without(st, NULL);
}

/*
 * The same, with node (NULL: none) out of the members: the master's fault
 * detection removes it in the same commit (its copies NODE_LEFT, its
 * primaries' replicas promoted, nothing placed on it).
 */
bool
se_state_reroute_without(SeClusterState *st, const char *node)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	Model	   *md;
	bool		changed;
	int			i;

	se_cluster_view(v);
	if (v->single_node)
		return false;
	for (i = 0; node && i < v->nmembers; i++)
		if (strcmp(v->members[i].name, node) == 0)
		{
			memmove(&v->members[i], &v->members[i + 1],
					sizeof(SeClusterMember) * (v->nmembers - i - 1));
			v->nmembers--;
			break;
		}
	/* a master that knows no member (etcd just lost) decides nothing */
	if (v->nmembers == 0)
		return false;
	changed = routing_update(st, v);
	md = build_model(st, v);
	if (md == NULL)
		return changed;
	(void) se_alloc_reroute(&md->m);
	check_bookkeeping(md, "a reroute");
	changed |= write_back(md);
	/* the flood stage's block, set and lifted */
	for (i = 0; i < md->m.nindices; i++)
	{
		SeIndexMeta *im = md->ims[i];

		if (md->m.indices[i].read_only_allow_delete != im->settings.blocks_read_only_allow_delete)
		{
			im->settings.blocks_read_only_allow_delete = md->m.indices[i].read_only_allow_delete;
			changed = true;
		}
	}
	return changed;
}

/*
 * An unassigned primary of a shard with replicas: why no replica took its
 * place (ES promotes only a started, in-sync copy), added to the
 * allocator's explanation in out (an object).
 */
static void
failover_explanation(Model *md, const SeAllocCopy *a, StringInfo out)
{
	const SeShardRouting *r = &md->ims[a->index]->routing[a->shard];
	StringInfoData why;
	int			k;

	if (!a->primary || a->state != SE_COPY_UNASSIGNED || r->ncopies < 2)
		return;
	initStringInfo(&why);
	appendStringInfo(&why, "no replica of this shard can be promoted to primary: a replica is promoted only when it is started and in sync (in_sync_allocations [");
	for (k = 0; k < r->nin_sync; k++)
		appendStringInfo(&why, "%s%s", k ? ", " : "", r->in_sync[k]);
	appendStringInfoString(&why, "]); replicas:");
	for (k = 1; k < r->ncopies; k++)
		appendStringInfo(&why, " [%s%s%s%s]", se_shard_state_name(r->copies[k].state),
						 r->copies[k].node[0] ? " on " : "", r->copies[k].node,
						 se_state_in_sync(md->ims[a->index], a->shard, r->copies[k].allocation_id)
						 ? ", in sync" : ", not in sync");
	out->data[--out->len] = '\0';	/* the closing brace */
	appendStringInfoString(out, ",\"failover_explanation\":");
	se_json_write_string(out, why.data, why.len);
	appendStringInfoChar(out, '}');
}

/*
 * GET /_cluster/allocation/explain for [index][shard] (the first
 * unassigned copy when index is NULL) on this node's applied state; false
 * with ES's 400 when there is nothing to explain.
 */
bool
se_state_allocation_explain(const char *index, int shard, bool primary,
							bool include_yes, StringInfo out, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeClusterState *st;
	Model	   *md;
	int			i;

	se_cluster_view(v);
	st = (SeClusterState *) se_state_current();
	md = v->single_node ? NULL : build_model(st, v);
	if (md == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 v->single_node
					 ? "there is no shard to explain: a single node (no search_engine.etcd_endpoints) places every shard on itself"
					 : "unable to find any shards to explain [%s] in the routing table",
					 index ? index : "");
		return false;
	}
	for (i = 0; i < md->m.ncopies; i++)
	{
		const SeAllocCopy *a = &md->m.copies[i];

		if (index ? (strcmp(md->m.indices[a->index].name, index) == 0 && a->shard == shard &&
					 a->primary == primary)
			: a->state == SE_COPY_UNASSIGNED)
		{
			StringInfoData one;

			initStringInfo(&one);
			se_alloc_explain_json(&md->m, i, include_yes, &one);
			failover_explanation(md, a, &one);
			if (index == NULL)
			{
				/* ES's note, first in the object */
				appendStringInfoString(out, "{\"note\":\"No shard was specified in the explain API request, so this response explains a randomly chosen unassigned shard. There may be other unassigned shards in this cluster which cannot be assigned for different reasons. It may not be possible to assign this shard until one of the other shards is assigned correctly. To explain the allocation of other shards (whether assigned or unassigned) you must specify the target shard in the request to this API.\",");
				appendStringInfoString(out, one.data + 1);
			}
			else
				appendStringInfoString(out, one.data);
			return true;
		}
	}
	if (index == NULL)
		se_error_set(err, 400, "illegal_argument_exception",
					 "unable to find any unassigned shards to explain [ClusterAllocationExplainRequest[useAnyUnassignedShard=true,includeYesDecisions?=%s]]",
					 include_yes ? "true" : "false");
	else if (!primary)
		se_error_set(err, 400, "illegal_argument_exception",
					 "unable to find a replica shard assignment for [%s][%d]: the index has [index.number_of_replicas=0]",
					 index, shard);
	else
		se_error_set(err, 400, "illegal_argument_exception",
					 "unable to find any shards to explain [%s][%d] in the routing table", index, shard);
	return false;
}

/* ---------- POST /_cluster/reroute ---------- */

static const char *
cmd_str(const SeJson *o, const char *k)
{
	const SeJson *v = se_json_get(o, k);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

static bool
cmd_bool(const SeJson *o, const char *k)
{
	const SeJson *v = se_json_get(o, k);

	return v && v->type == SE_JSON_TRUE;
}

/* the copy [index][shard] (primary: the primary) of the model, or -1 */
static int
find_copy(Model *md, const char *index, int shard, bool primary)
{
	int			i;

	for (i = 0; i < md->m.ncopies; i++)
	{
		const SeAllocCopy *a = &md->m.copies[i];

		if (a->shard == shard && a->primary == primary &&
			strcmp(md->m.indices[a->index].name, index) == 0)
			return i;
	}
	return -1;
}

/* the assigned copy of [index][shard] on node, or -1 */
static int
find_copy_on(Model *md, const char *index, int shard, int node)
{
	int			i;

	for (i = 0; node >= 0 && i < md->m.ncopies; i++)
	{
		const SeAllocCopy *a = &md->m.copies[i];

		if (a->shard == shard && a->state != SE_COPY_UNASSIGNED &&
			a->node == node &&
			strcmp(md->m.indices[a->index].name, index) == 0)
			return i;
	}
	return -1;
}

/* an unassigned replica copy of [index][shard], or -1 */
static int
find_unassigned_replica(Model *md, const char *index, int shard)
{
	int			i;

	for (i = 0; i < md->m.ncopies; i++)
	{
		const SeAllocCopy *a = &md->m.copies[i];

		if (a->shard == shard && !a->primary && a->state == SE_COPY_UNASSIGNED &&
			strcmp(md->m.indices[a->index].name, index) == 0)
			return i;
	}
	return -1;
}

static int
find_node(Model *md, const char *name)
{
	int			i;

	for (i = 0; name && i < md->m.nnodes; i++)
		if (strcmp(md->m.nodes[i].name, name) == 0 || strcmp(md->m.nodes[i].id, name) == 0)
			return i;
	return -1;
}

/*
 * Apply one command of a reroute body to the model.  false with err set
 * (ES's 400 illegal_argument_exception with the deciders' reasons).
 */
static bool
apply_command(Model *md, const char *name, const SeJson *args, SeError *err)
{
	const char *index = cmd_str(args, "index");
	const SeJson *shard_j = se_json_get(args, "shard");
	int			shard = shard_j && shard_j->type == SE_JSON_NUMBER ? (int) shard_j->u.n.i : -1;
	int			copy;

	if (index == NULL || shard < 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] requires index and shard", name);
		return false;
	}
	if (strcmp(name, "move") == 0)
	{
		const char *from = cmd_str(args, "from_node");
		const char *to = cmd_str(args, "to_node");
		int			from_node = find_node(md, from);
		int			to_node = find_node(md, to);

		copy = find_copy_on(md, index, shard, from_node);
		if (copy < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[move_allocation] can't move [%s][%d], failed to find it on node %s",
						 index, shard, from ? from : "(none)");
			return false;
		}
		if (to_node < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[move_allocation] could not resolve node [%s]", to ? to : "");
			return false;
		}
		return se_alloc_move(&md->m, copy, to_node, err);
	}
	if (strcmp(name, "allocate_replica") == 0)
	{
		int			node = find_node(md, cmd_str(args, "node"));

		copy = find_unassigned_replica(md, index, shard);
		if (copy < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[allocate_replica] all copies of [%s][%d] are already assigned. Use the move allocation command instead",
						 index, shard);
			return false;
		}
		if (node < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[allocate_replica] could not resolve node [%s]",
						 cmd_str(args, "node") ? cmd_str(args, "node") : "");
			return false;
		}
		return se_alloc_allocate_replica(&md->m, copy, node, err);
	}
	copy = find_copy(md, index, shard, true);
	if (copy < 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] failed to find [%s][%d] in the routing table", name, index, shard);
		return false;
	}
	if (strcmp(name, "cancel") == 0)
	{
		int			node = find_node(md, cmd_str(args, "node"));
		int			first,
					n,
					k;

		/*
		 * the copy of the shard on that node, primary or replica, or the
		 * one relocating to it (ES: cancelling the target cancels the move)
		 */
		first = se_alloc_shard_copies(&md->m, md->m.copies[copy].index, shard, &n);
		copy = -1;
		for (k = first; node >= 0 && k < first + n; k++)
			if (md->m.copies[k].node == node ||
				(md->m.copies[k].state == SE_COPY_RELOCATING &&
				 md->m.copies[k].relocating_node == node))
				copy = k;
		if (copy < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[cancel_allocation] can't cancel [%s][%d], failed to find it on node %s",
						 index, shard, cmd_str(args, "node") ? cmd_str(args, "node") : "(none)");
			return false;
		}
		return se_alloc_cancel(&md->m, copy, cmd_bool(args, "allow_primary"), err);
	}
	if (strcmp(name, "allocate_stale_primary") == 0 || strcmp(name, "allocate_empty_primary") == 0)
	{
		int			node = find_node(md, cmd_str(args, "node"));

		if (node < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[%s] could not resolve node [%s]", name,
						 cmd_str(args, "node") ? cmd_str(args, "node") : "");
			return false;
		}
		return se_alloc_allocate_primary(&md->m, copy, node, name[9] == 's',
										 cmd_bool(args, "accept_data_loss"), err);
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "[cluster_reroute] unknown command [%s]", name);
	return false;
}

/*
 * Run a reroute body's commands (and retry_failed) on st; explanations,
 * when not NULL, get ES's {"command", "parameters", "decisions"} entries
 * and a failed command is explained instead of failing the request.
 */
static bool
run_commands(SeClusterState *st, const SeJson *body, bool retry_failed,
			 StringInfo explanations, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	const SeJson *cmds = body ? se_json_get(body, "commands") : NULL;
	Model	   *md;
	int			i;

	se_cluster_view(v);
	(void) routing_update(st, v);
	md = build_model(st, v);
	if (md == NULL)
	{
		if (cmds && cmds->type == SE_JSON_ARRAY && cmds->u.a.count > 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[cluster_reroute] there is no shard copy to route in this cluster");
			return false;
		}
		return true;
	}
	if (retry_failed)
		se_alloc_retry_failed(&md->m);
	for (i = 0; cmds && cmds->type == SE_JSON_ARRAY && i < cmds->u.a.count; i++)
	{
		const SeJson *c = cmds->u.a.items[i];
		const char *name;
		const SeJson *args;
		SeError		cerr;

		if (c->type != SE_JSON_OBJECT || c->u.o.count != 1 ||
			c->u.o.members[0].value->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[cluster_reroute] each command is an object with one command name");
			return false;
		}
		name = c->u.o.members[0].key;
		args = c->u.o.members[0].value;
		se_error_init(&cerr);
		if (!apply_command(md, name, args, &cerr))
		{
			if (explanations == NULL)
			{
				*err = cerr;
				return false;
			}
		}
		if (explanations)
		{
			if (explanations->len > 1)
				appendStringInfoChar(explanations, ',');
			appendStringInfoString(explanations, "{\"command\":");
			se_json_write_string(explanations, name, -1);
			appendStringInfoString(explanations, ",\"parameters\":");
			se_json_write(explanations, args);
			appendStringInfo(explanations, ",\"decisions\":[{\"decider\":\"%s\",\"decision\":\"%s\",\"explanation\":",
							 name, se_error_is_set(&cerr) ? "NO" : "YES");
			se_json_write_string(explanations, se_error_is_set(&cerr) ? cerr.reason : "the command was applied", -1);
			appendStringInfoString(explanations, "}]}");
		}
	}
	check_bookkeeping(md, "reroute commands");
	(void) write_back(md);
	return true;
}

typedef struct RerouteArgs
{
	const SeJson *body;
	bool		retry_failed;
} RerouteArgs;

static bool
mutate_reroute(SeClusterState *st, void *arg, SeError *err)
{
	RerouteArgs *a = arg;

	return run_commands(st, a->body, a->retry_failed, NULL, err);
}

/* The master's side of a forwarded reroute (state.c's op "reroute"). */
bool
se_state_run_reroute(const SeJson *body, bool retry_failed, SeError *err)
{
	RerouteArgs a = {body, retry_failed};

	return se_state_commit(mutate_reroute, &a, err);
}

/*
 * POST /_cluster/reroute: the commands are tried on this node's applied
 * state first (errors, explanations, dry_run), then committed through the
 * master, whose reroute follows them in the same transaction.
 */
bool
se_state_cluster_reroute(const SeJson *body, bool dry_run, bool explain, bool retry_failed,
						 StringInfo answer, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	StringInfoData ex;
	SeClusterState *copy;
	bool		ok;

	se_cluster_view(v);
	if (v->single_node)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[cluster_reroute] a single node (no search_engine.etcd_endpoints) holds every shard itself: there is nothing to reroute");
		return false;
	}
	if (body && body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[cluster_reroute] the body must be an object");
		return false;
	}
	/* a scratch copy of the applied state: the try changes it */
	copy = se_state_copy_current();
	initStringInfo(&ex);
	appendStringInfoChar(&ex, '[');
	if (!run_commands(copy, body, retry_failed, explain ? &ex : NULL, err))
		return false;
	appendStringInfoChar(&ex, ']');
	if (!dry_run)
	{
		if (!se_state_forwarded(&(StateOp) {"reroute", NULL, NULL, retry_failed, body}, &ok, err))
			ok = se_state_run_reroute(body, retry_failed, err);
		if (!ok)
			return false;
	}
	appendStringInfoString(answer, "{\"acknowledged\":true");
	if (explain)
		appendStringInfo(answer, ",\"explanations\":%s", ex.data);
	appendStringInfoChar(answer, '}');
	return true;
}
