/*-------------------------------------------------------------------------
 *
 * state_sync.c
 *	  The cluster state in etcd: mutations through the master, applied on
 *	  every node from the coordinator's watch.
 *
 * With search_engine.etcd_endpoints set, an index's metadata lives in etcd
 * under /search_engine/<cluster>/state/indices/<name> (the JSON of one
 * index, as the state file holds it, with its shards' nodes).  The local
 * state file becomes this node's applied copy: the coordinator worker
 * calls our hook for every event under state/ in revision order, we write
 * the index into the file, bump the shared version (so every process
 * reloads, as on one node) and start or stop this node's shards to match.
 *
 * Only the master decides.  A node that is not the acting master sends
 * the mutation (the public se_state_* call's arguments) to the master
 * over the transport ("state_update"), which runs the same function; the
 * master loads its applied copy, runs the mutator, and commits the indices
 * that changed as one etcd transaction, each key compared with the
 * revision the master read (a concurrent change makes it read again and
 * retry) and the whole fenced on the master's term by the coordinator.
 * The caller returns once its own node has applied the change.
 *
 * Placement: every committed change is followed by a reroute (reroute.c,
 * ES's balanced allocator and deciders) in the same transaction; a copy it
 * places is INITIALIZING under a fresh allocation id, and its node reports
 * it started or failed (shard_state.c).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/stat.h>

#include "miscadmin.h"
#include "nodes/value.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "common/hashfn.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/state_int.h"
#include "replication/relocation.h"
#include "shard/engine.h"
#include "transport/transport.h"
#include "util/fileio.h"

#define INDEX_KEY_PREFIX	"indices/"
#define SETTINGS_KEY		"settings"
#define TEMPLATES_KEY		"templates"
#define SCRIPTS_KEY			"scripts"
#define COMMIT_TRIES		8
#define COMMIT_MAX_BYTES	(1024 * 1024)	/* per etcd transaction */

char		se_state_forwarded_uuid[SE_UUID_LEN + 1];

/* This process serves a forwarded mutation: never forward it again. */
static bool serving_forward = false;

/* ---------- waiting for this node to apply a revision ---------- */

static int64
applied_revision(void)
{
	int64		r;

	LWLockAcquire(&SeCluster->lock, LW_SHARED);
	r = SeCluster->applied_revision;
	LWLockRelease(&SeCluster->lock);
	return r;
}

/* Wait until this node applied revision; 503 after timeout_ms. */
static bool
wait_applied(int64 revision, int timeout_ms, SeError *err)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);

	ConditionVariablePrepareToSleep(&SeCluster->applied_cv);
	while (applied_revision() < revision)
	{
		long		left = (long) ((deadline - GetCurrentTimestamp()) / 1000);

		if (left <= 0)
		{
			ConditionVariableCancelSleep();
			se_error_set(err, 503, "process_cluster_event_timeout_exception",
						 "failed to apply cluster state revision [" INT64_FORMAT "] on node [%s] "
						 "within [%dms]", revision, se_cluster_node_name(), timeout_ms);
			return false;
		}
		(void) ConditionVariableTimedSleep(&SeCluster->applied_cv, Min(left, 1000),
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	return true;
}

/* ---------- forwarding to the master ---------- */

static void
op_to_json(const StateOp *op, StringInfo out)
{
	appendStringInfoString(out, "{\"op\":");
	se_json_write_string(out, op->op, strlen(op->op));
	if (op->name)
	{
		appendStringInfoString(out, ",\"name\":");
		se_json_write_string(out, op->name, strlen(op->name));
	}
	if (op->uuid)
	{
		appendStringInfoString(out, ",\"uuid\":");
		se_json_write_string(out, op->uuid, strlen(op->uuid));
	}
	appendStringInfo(out, ",\"flag\":%s", op->flag ? "true" : "false");
	if (op->body)
	{
		appendStringInfoString(out, ",\"body\":");
		se_json_write(out, op->body);
	}
	appendStringInfoChar(out, '}');
}

static const char *
json_str(const SeJson *obj, const char *key)
{
	const SeJson *v = se_json_get(obj, key);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

/*
 * When this node is in a cluster and is not the acting master, send op to
 * the master and wait until this node applied the result: true, with *ok
 * the outcome (and se_state_forwarded_uuid a created index's uuid).  False
 * when the caller is to run op itself.
 */
bool
se_state_forwarded(const StateOp *op, bool *ok, SeError *err)
{
	SeClusterView *v;
	SeTransportCall call;
	StringInfoData payload;
	const SeClusterMember *master = NULL;
	SeJson	   *reply;
	SeJsonParseOptions opts = {16, false};
	const SeJson *rev;

	*ok = false;
	if (se_cluster_single_node() || serving_forward)
		return false;
	v = palloc(sizeof(SeClusterView));
	se_cluster_view(v);
	if (v->acting_master)
		return false;
	master = se_cluster_view_master(v);
	if (master == NULL)
	{
		se_error_set(err, 503, "master_not_discovered_exception",
					 "no master is known to node [%s]", v->local_name);
		return true;
	}
	initStringInfo(&payload);
	op_to_json(op, &payload);
	memset(&call, 0, sizeof(call));
	call.node = master->name;
	call.conninfo = master->conninfo;
	call.action = "state_update";
	call.payload = payload.data;
	call.payload_len = payload.len;
	se_transport_call_each(&call, 1, SE_CLUSTER_COMMIT_TIMEOUT_MS + 5000);
	if (!call.ok)
	{
		*err = call.err;
		return true;
	}
	reply = se_json_parse(call.reply.data, call.reply.len, &opts, err);
	rev = reply ? se_json_get(reply, "revision") : NULL;
	if (rev == NULL || rev->type != SE_JSON_NUMBER)
	{
		se_error_set(err, 500, "remote_transport_exception",
					 "[%s][state_update] malformed answer", master->name);
		return true;
	}
	strlcpy(se_state_forwarded_uuid, json_str(reply, "uuid") ? json_str(reply, "uuid") : "",
			sizeof(se_state_forwarded_uuid));
	*ok = wait_applied(rev->u.n.i, SE_CLUSTER_COMMIT_TIMEOUT_MS, err);
	return true;
}

/* Transport action "state_update": run a forwarded mutation (master). */
static bool
state_update_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	StateOp		op;
	char		uuid[SE_UUID_LEN + 1] = "";
	bool		ok;
	const SeJson *flag;

	if (j == NULL || json_str(j, "op") == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed cluster state operation");
		return false;
	}
	op.op = json_str(j, "op");
	op.name = json_str(j, "name");
	op.uuid = json_str(j, "uuid");
	flag = se_json_get(j, "flag");
	op.flag = flag && flag->type == SE_JSON_TRUE;
	op.body = se_json_get(j, "body");
	serving_forward = true;
	PG_TRY();
	{
		ok = se_state_run_op(&op, uuid, err);
	}
	PG_FINALLY();
	{
		serving_forward = false;
	}
	PG_END_TRY();
	if (!ok)
		return false;
	appendStringInfo(reply, "{\"revision\":" INT64_FORMAT ",\"uuid\":\"%s\"}",
					 applied_revision(), uuid);
	return true;
}

void
se_state_register_actions(void)
{
	se_transport_register("state_update", state_update_action);
}

/* ---------- committing on the master ---------- */

typedef struct Before
{
	char	   *name;
	char	   *json;			/* without mod_revision */
	int64		mod_revision;
	bool		seen;			/* still in the state after the mutator */
} Before;

/* Is node a member of the applied view? */
static bool
view_has_member(const char *node)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	bool		found = false;
	int			i;

	se_cluster_view(v);
	for (i = 0; i < v->nmembers && !found; i++)
		found = strcmp(v->members[i].name, node) == 0;
	pfree(v);
	return found;
}

/*
 * A compare-and-put of key's text now when it differs from before (its
 * revision then); 1 if one was added to *cmp and *op, else 0.
 */
static int
blob_put(SeEtcdCmp *cmp, SeEtcdOp *op, const char *key, const char *now,
		 const char *before, int64 revision)
{
	if (now == NULL || (before != NULL && strcmp(now, before) == 0))
		return 0;
	cmp->key = se_cluster_key(key);
	cmp->target = revision > 0 ? SE_ETCD_MOD : SE_ETCD_CREATE;
	cmp->op = SE_ETCD_EQUAL;
	cmp->number = revision;
	op->kind = SE_ETCD_OP_PUT;
	op->key = cmp->key;
	op->value = now;
	op->value_len = strlen(now);
	return 1;
}

/*
 * On the master: run fn over the applied state and commit the indices it
 * changed, each compared with the revision read; retried when another
 * change came first.  remove_node (NULL: none) is a node the master's
 * fault detection removes from the cluster: its membership key is deleted
 * in the same transaction as a reroute that treats it as gone, so its
 * copies are unassigned and its primaries' replicas promoted at the very
 * revision it leaves -- a live node that rejoins at once (its key gone)
 * cannot slip back in between.
 */
static bool
state_commit(StateMutator fn, void *arg, const char *remove_node, SeError *err)
{
	int			try;

	for (try = 0; try < COMMIT_TRIES; try++)
	{
		MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext,
													  "search_engine state commit",
													  ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(scratch);
		SeClusterState *st;
		Before	   *before;
		int			nbefore;
		SeEtcdCmp  *cmps;
		SeEtcdOp   *ops;
		int			n = 0;
		int			i,
					k;
		int64		revision = 0;
		bool		conflict = false;
		bool		ok;
		StringInfoData settings_before;
		int64		settings_revision;
		char	   *templates_before;
		int64		templates_revision;
		char	   *scripts_before;
		int64		scripts_revision;

		st = se_state_copy_current();
		initStringInfo(&settings_before);
		se_state_settings_to_json(st, false, &settings_before);
		settings_revision = st->settings_mod_revision;
		templates_before = st->templates_json ? pstrdup(st->templates_json) : NULL;
		templates_revision = st->templates_mod_revision;
		scripts_before = st->scripts_json ? pstrdup(st->scripts_json) : NULL;
		scripts_revision = st->scripts_mod_revision;
		nbefore = st->nindices;
		before = palloc0(sizeof(Before) * Max(1, nbefore));
		for (i = 0; i < nbefore; i++)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			se_state_index_to_json(st->indices[i], false, &buf);
			before[i].name = st->indices[i]->name;
			before[i].json = buf.data;
			before[i].mod_revision = st->indices[i]->mod_revision;
		}
		ok = fn(st, arg, err);
		/* every change is followed by a reroute, committed with it */
		if (ok)
			(void) se_state_reroute_without(st, remove_node);
		cmps = palloc0(sizeof(SeEtcdCmp) * (st->nindices + nbefore + 5));
		ops = palloc0(sizeof(SeEtcdOp) * (st->nindices + nbefore + 5));
		/*
		 * The removal first (so it is in the first transaction), while the
		 * key exists; once the node is out of the view (its lease ended, or
		 * the retry after a conflict) the reroute alone does the rest.
		 */
		if (ok && remove_node && view_has_member(remove_node))
		{
			cmps[n].key = se_cluster_key(psprintf("nodes/%s", remove_node));
			cmps[n].target = SE_ETCD_VERSION;
			cmps[n].op = SE_ETCD_GREATER;
			cmps[n].number = 0;
			ops[n].kind = SE_ETCD_OP_DELETE;
			ops[n].key = cmps[n].key;
			n++;
		}
		if (ok)
		{
			StringInfoData buf;

			/* the cluster settings: one key of their own */
			initStringInfo(&buf);
			se_state_settings_to_json(st, false, &buf);
			n += blob_put(&cmps[n], &ops[n], "state/" SETTINGS_KEY, buf.data,
						  settings_before.data, settings_revision);
			/* the index templates and stored scripts: keys of their own too */
			n += blob_put(&cmps[n], &ops[n], "state/" TEMPLATES_KEY, st->templates_json,
						  templates_before, templates_revision);
			n += blob_put(&cmps[n], &ops[n], "state/" SCRIPTS_KEY, st->scripts_json,
						  scripts_before, scripts_revision);
		}
		for (i = 0; ok && i < st->nindices; i++)
		{
			SeIndexMeta *im = st->indices[i];
			StringInfoData buf;
			Before	   *b = NULL;

			for (k = 0; k < nbefore; k++)
				if (strcmp(before[k].name, im->name) == 0)
					b = &before[k];
			initStringInfo(&buf);
			se_state_index_to_json(im, false, &buf);
			if (b)
				b->seen = true;
			if (b && strcmp(b->json, buf.data) == 0)
				continue;
			cmps[n].key = se_cluster_key(psprintf("state/" INDEX_KEY_PREFIX "%s", im->name));
			cmps[n].target = b ? SE_ETCD_MOD : SE_ETCD_CREATE;
			cmps[n].op = SE_ETCD_EQUAL;
			cmps[n].number = b ? b->mod_revision : 0;
			ops[n].kind = SE_ETCD_OP_PUT;
			ops[n].key = cmps[n].key;
			ops[n].value = buf.data;
			ops[n].value_len = buf.len;
			n++;
		}
		for (k = 0; ok && k < nbefore; k++)
		{
			if (before[k].seen)
				continue;
			cmps[n].key = se_cluster_key(psprintf("state/" INDEX_KEY_PREFIX "%s", before[k].name));
			cmps[n].target = SE_ETCD_MOD;
			cmps[n].op = SE_ETCD_EQUAL;
			cmps[n].number = before[k].mod_revision;
			ops[n].kind = SE_ETCD_OP_DELETE;
			ops[n].key = cmps[n].key;
			n++;
		}
		/*
		 * etcd refuses a request over --max-request-bytes (1.5 MiB by
		 * default): a reroute that touches every index of a large cluster
		 * (a node's return, an upgrade of the routing's shape) goes in
		 * several transactions, each comparing its own keys.  Each index
		 * key stands on its own, so a later part meeting a conflict leaves
		 * the earlier ones valid, and the mutation runs again over them.
		 */
		for (k = 0; ok && k < n;)
		{
			int			end = k;
			size_t		bytes = 0;

			while (end < n && (end == k || bytes + ops[end].value_len < COMMIT_MAX_BYTES))
				bytes += ops[end++].value_len;
			ok = se_cluster_commit_if(cmps + k, end - k, ops + k, end - k, &revision, &conflict, err);
			k = end;
		}
		MemoryContextSwitchTo(old);
		/* errors may carry strings of the scratch context: copy them out */
		if (!ok && err->reason)
			err->reason = pstrdup(err->reason);
		if (!ok && err->type)
			err->type = pstrdup(err->type);
		MemoryContextDelete(scratch);
		if (!conflict)
			return ok;
		/* another change came first: read the state it made, then again */
		if (!wait_applied(revision, SE_CLUSTER_COMMIT_TIMEOUT_MS, err))
			return false;
	}
	se_error_set(err, 503, "process_cluster_event_timeout_exception",
				 "cluster state update lost %d races in a row", COMMIT_TRIES);
	return false;
}

bool
se_state_commit(StateMutator fn, void *arg, SeError *err)
{
	return state_commit(fn, arg, NULL, err);
}

static bool
mutate_nothing(SeClusterState *st, void *arg, SeError *err)
{
	return true;
}

/* On the master: remove node from the cluster (fault_detection.c). */
bool
se_state_commit_node_removal(const char *node, SeError *err)
{
	return state_commit(mutate_nothing, NULL, node, err);
}

/* ---------- placement ---------- */

/* Copy k of shard s becomes UNASSIGNED (routing.c); shard_nodes follow. */
void
se_state_unassign_copy(SeIndexMeta *im, int s, int k, const char *reason, const char *details)
{
	se_routing_unassign(&im->routing[s], k, reason, details, se_state_now_millis());
	se_state_routing_derive(im);
}

/*
 * A new or reopened primary copy without a node waits UNASSIGNED (reason
 * kept for ES's unassigned_info) for the reroute that ends every commit
 * (reroute.c), which places it -- INITIALIZING under a fresh allocation
 * id -- in the same transaction.
 */
void
se_state_place_shard(const SeClusterState *st, SeIndexMeta *im, int s, const char *reason)
{
	SeShardCopy *c = &im->routing[s].copies[0];
	char	   *data_node = c->data_node;

	se_routing_in_sync_remove(&im->routing[s], c->allocation_id);
	memset(c, 0, sizeof(*c));
	c->state = SE_SHARD_UNASSIGNED;
	c->primary = true;
	c->node = "";
	c->unassigned_reason = pstrdup(reason);
	c->unassigned_at = se_state_now_millis();
	c->data_node = data_node;
	im->shard_nodes[s] = "";
}

/* Place the shards of new index im, each with its replicas (see above). */
void
se_state_allocate_shards(const SeClusterState *st, SeIndexMeta *im)
{
	int			n = im->settings.number_of_shards;
	int			s,
				k;

	im->routing = palloc0(sizeof(SeShardRouting) * n);
	im->shard_nodes = palloc0(sizeof(char *) * n);
	for (s = 0; s < n; s++)
	{
		SeShardRouting *r = &im->routing[s];

		r->ncopies = 1 + im->settings.number_of_replicas;
		r->copies = palloc0(sizeof(SeShardCopy) * r->ncopies);
		r->primary_term = im->primary_term;
		for (k = 1; k < r->ncopies; k++)
			se_routing_init_replica(&r->copies[k], "INDEX_CREATED", se_state_now_millis());
		se_state_place_shard(st, im, s, "INDEX_CREATED");
	}
}

/*
 * Make every shard's copies 1 + number_of_replicas (a changed
 * index.number_of_replicas, or a routing written before replicas; see
 * se_routing_resize).  True when it changed.
 */
bool
se_state_routing_resize(SeIndexMeta *im)
{
	bool		changed = false;
	int			s;

	for (s = 0; im->routing && s < im->settings.number_of_shards; s++)
		changed |= se_routing_resize(&im->routing[s], 1 + im->settings.number_of_replicas,
									 se_state_now_millis());
	return changed;
}

/* The failover of shard s (se_routing_promote); shard_nodes follow. */
bool
se_state_promote(SeIndexMeta *im, int s)
{
	if (!se_routing_promote(&im->routing[s], se_state_now_millis()))
		return false;
	se_state_routing_derive(im);
	return true;
}

/* ---------- the routing, read ---------- */

void
se_state_routing_derive(SeIndexMeta *im)
{
	int			s;

	if (im->routing == NULL)
		return;
	if (im->shard_nodes == NULL)
		im->shard_nodes = palloc0(sizeof(char *) * im->settings.number_of_shards);
	for (s = 0; s < im->settings.number_of_shards; s++)
		im->shard_nodes[s] = im->routing[s].copies[0].node;
}

SeShardCopy *
se_state_primary_copy(const SeIndexMeta *im, int shard)
{
	return im->routing ? &im->routing[shard].copies[0] : NULL;
}

/* Whether the PRIMARY of shard of im lives on this node. */
bool
se_state_shard_local(const SeIndexMeta *im, int shard)
{
	if (im->shard_nodes == NULL)
		return true;
	return strcmp(im->shard_nodes[shard], se_cluster_node_name()) == 0;
}

/*
 * This node's copy of shard: the one placed here, else the target of a
 * relocation to here (an INITIALIZING copy that recovers from the primary
 * like a replica; it lives in a buffer valid until the next call).
 */
const SeShardCopy *
se_state_local_copy(const SeIndexMeta *im, int shard)
{
	static SeShardCopy target;
	const SeShardCopy *c;

	if (im->routing == NULL)
		return NULL;
	c = se_routing_copy_on(&im->routing[shard], se_cluster_node_name());
	if (c == NULL && se_routing_target_on(&im->routing[shard], se_cluster_node_name(), &target))
		c = &target;
	return c;
}

int64
se_state_shard_primary_term(const SeIndexMeta *im, int shard)
{
	return im->routing ? im->routing[shard].primary_term : im->primary_term;
}

bool
se_state_in_sync(const SeIndexMeta *im, int shard, const char *allocation_id)
{
	return im->routing != NULL && se_routing_in_sync(&im->routing[shard], allocation_id);
}

List *
se_state_shard_targets(const SeIndexMeta *im, int shard)
{
	List	   *out = NIL;
	int			k;

	for (k = 1; im->routing && k < im->routing[shard].ncopies; k++)
	{
		SeShardCopy *c = &im->routing[shard].copies[k];

		if (c->state != SE_SHARD_UNASSIGNED && c->node[0])
			out = lappend(out, c);
	}
	return out;
}

/*
 * The node a read of shard goes to: on a single node this one; else a
 * STARTED copy chosen by replica_select.c -- this node's when it has one
 * (no network); otherwise, with cluster.routing.use_adaptive_replica_selection
 * (ES's default true), the copy whose node ranks best by the response
 * times, service times and queue sizes this process saw from it, and
 * before any such statistics (or with ARS off) one chosen by a hash of
 * (index uuid, shard, this node's name): stable, so that a refresh and the
 * search after it reach the same copy, and spread, so that different
 * coordinating nodes read different copies.  No STARTED copy: the
 * primary's node, "" when it is unassigned (the caller answers the shard
 * is unavailable).
 */
const char *
se_state_pick_copy(const SeIndexMeta *im, int shard)
{
	const char *node;
	SeError		err;

	se_error_init(&err);
	node = se_state_pick_copy_pref(im, shard, NULL, &err);
	return node ? node : "";
}

/* cluster.routing.use_adaptive_replica_selection */
static bool
use_ars(void)
{
	const SeClusterState *st = se_state_current();
	const char *v = se_csettings_get(&st->persistent, &st->transient,
									 "cluster.routing.use_adaptive_replica_selection");

	return v == NULL || strcmp(v, "false") != 0;
}

/*
 * se_state_pick_copy under ES's search preference p (NULL: none): NULL
 * when no copy matches it (err set when that is ES's 400, see
 * se_replica_choose).  On a single node every shard is here: only an
 * _only_nodes list not naming this node excludes it.
 */
const char *
se_state_pick_copy_pref(const SeIndexMeta *im, int shard, const SePreference *p, SeError *err)
{
	const char *me = se_cluster_node_name();
	uint32		h;

	if (im->routing == NULL)
	{
		SeShardCopy here;
		SeShardRouting r;

		memset(&here, 0, sizeof(here));
		here.state = SE_SHARD_STARTED;
		here.primary = true;
		here.node = unconstify(char *, me);
		r.ncopies = 1;
		r.copies = &here;
		return se_replica_choose(&r, im->name, shard, me, p, 0, false, err);
	}
	h = hash_bytes((const unsigned char *) im->uuid, strlen(im->uuid));
	h = hash_combine(h, hash_bytes((const unsigned char *) me, strlen(me)));
	h = hash_combine(h, (uint32) shard);
	return se_replica_choose(&im->routing[shard], im->name, shard, me, p, h, use_ars(), err);
}

/*
 * Where a read (search, count, get, FDW scan) of shard goes: true when
 * to this node's copy, else false with *node the chosen copy's node ("":
 * none is assigned).
 */
bool
se_state_read_here(const SeIndexMeta *im, int shard, const char **node)
{
	*node = se_state_pick_copy(im, shard);
	return im->routing == NULL || strcmp(*node, se_cluster_node_name()) == 0;
}

/*
 * The state of shard s of im that describes the cluster: the master's
 * routing of its primary in cluster mode; on a single node (no routing)
 * the local slot's, STARTED once open.
 */
SeShardState
se_state_shard_state(const SeIndexMeta *im, int shard)
{
	int			slot;

	if (im->routing)
		return im->routing[shard].copies[0].state;
	slot = se_slot_find(im->uuid, shard);
	if (slot < 0)
		return SE_SHARD_UNASSIGNED;
	switch (SeSlots[slot].state)
	{
		case SE_SLOT_STARTED:
			return SE_SHARD_STARTED;
		case SE_SLOT_OPENING:
			return SE_SHARD_INITIALIZING;
		default:
			return SE_SHARD_UNASSIGNED;
	}
}

/* The other nodes holding shards of the indices (SeIndexMeta *): names. */
List *
se_state_nodes_elsewhere(List *indices)
{
	List	   *nodes = NIL;
	ListCell   *lc;

	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
			if (!se_state_shard_local(im, s) && im->shard_nodes[s][0] &&
				!list_member(nodes, makeString(im->shard_nodes[s])))
				nodes = lappend(nodes, makeString(im->shard_nodes[s]));
	}
	/* as plain strings for the callers */
	foreach(lc, nodes)
		lfirst(lc) = strVal(lfirst(lc));
	return nodes;
}

/*
 * The other nodes holding any assigned copy (primary or replica) of the
 * indices' shards: names.
 */
List *
se_state_copy_nodes_elsewhere(List *indices)
{
	List	   *nodes = NIL;
	ListCell   *lc;
	const char *me = se_cluster_node_name();

	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s,
					k;

		for (s = 0; im->routing && s < im->settings.number_of_shards; s++)
			for (k = 0; k < im->routing[s].ncopies; k++)
			{
				const char *node = im->routing[s].copies[k].node;

				if (node[0] && strcmp(node, me) != 0 &&
					!list_member(nodes, makeString((char *) node)))
					nodes = lappend(nodes, makeString((char *) node));
			}
	}
	foreach(lc, nodes)
		lfirst(lc) = strVal(lfirst(lc));
	return nodes;
}

/*
 * Give slot the copy of shard s of im this node holds (cluster mode: from
 * the routing; single node: the primary, the index's term).  Returns
 * whether the copy became primary (the owner promotes its engine).
 */
bool
se_state_slot_copy(const SeIndexMeta *im, int s, int slot)
{
	const SeShardCopy *c = se_state_local_copy(im, s);
	const char *primary_node = "";

	if (c && !c->primary && im->routing[s].copies[0].state != SE_SHARD_UNASSIGNED)
		primary_node = im->routing[s].copies[0].node;
	return se_slot_set_copy(slot, im->uuid, s, c ? !c->primary : false,
							c ? c->allocation_id : "", se_state_shard_primary_term(im, s),
							primary_node);
}

/* ---------- applying etcd's events on this node ---------- */

static void
wake_write_workers(void)
{
	int			i;

	for (i = 0; i < SeShmem->nworkers; i++)
		if (SeShmem->workers[i].procno >= 0)
			SetLatch(&ProcGlobal->allProcs[SeShmem->workers[i].procno].procLatch);
}

/* Whether a copy of shard s of im waits unassigned (this node's may be it). */
static bool
has_unassigned_copy(const SeIndexMeta *im, int s)
{
	int			k;

	for (k = 0; k < im->routing[s].ncopies; k++)
		if (im->routing[s].copies[k].state == SE_SHARD_UNASSIGNED)
			return true;
	return false;
}

/*
 * Bring this node's shards of one index in line with its new metadata
 * (NULL: deleted): start the open index's copies placed here (primary or
 * replica, the slot told which), stop the others.  The owners do the
 * work; nobody waits for it here.
 */
static void
reconcile(const SeIndexMeta *was, const SeIndexMeta *now)
{
	int			s;

	if (was && (now == NULL || strcmp(was->uuid, now->uuid) != 0))
	{
		for (s = 0; s < was->settings.number_of_shards; s++)
			(void) se_slot_mark_closing(was->uuid, s, true);
	}
	if (now == NULL)
		return;
	for (s = 0; s < now->settings.number_of_shards; s++)
	{
		const SeShardCopy *c = se_state_local_copy(now, s);
		int			slot;

		/*
		 * A copy moved to another node or removed (fewer replicas) leaves
		 * its files behind to be deleted; one the master unassigned (it
		 * failed here, or this node was gone) keeps them, as ES keeps a
		 * failed shard's store.
		 */
		if (now->closed || c == NULL)
		{
			bool		gone = c == NULL && !has_unassigned_copy(now, s);

			/*
			 * A closed index's copy has no slot and no owner: when it moved
			 * away (its target started elsewhere) or its move here was
			 * cancelled, its files go now.
			 */
			if (se_slot_mark_closing(now->uuid, s, gone) < 0 && gone && now->closed)
			{
				char	   *dir = se_shard_path(now->uuid, s);
				struct stat st;

				if (stat(dir, &st) == 0)
				{
					ereport(LOG,
							(errmsg("search_engine: removing the files of closed shard [%s][%d]: its copy is no longer on node [%s]",
									now->name, s, se_cluster_node_name())));
					se_remove_tree(dir);
				}
				pfree(dir);
			}
			continue;
		}
		slot = se_slot_find(now->uuid, s);
		if (slot < 0)
		{
			int			used;

			if (se_slot_missing(now->uuid, s + 1, &used) > 0 && used >= SeShmem->nslots)
			{
				ereport(WARNING,
						(errmsg("search_engine: node [%s] has no free shard slot for [%s][%d]",
								se_cluster_node_name(), now->name, s),
						 errhint("Raise search_engine.max_shards and restart the server.")));
				continue;
			}
			slot = se_slot_allocate(now->uuid, s);
			(void) se_state_slot_copy(now, s, slot);
			continue;
		}
		/*
		 * The slot holds this copy already: a promotion (replica ->
		 * primary, term + 1) or a new primary elsewhere reaches its owner
		 * through the slot.  A copy failed here and placed here again
		 * (new allocation id) is tried again.
		 */
		if (SeSlots[slot].state == SE_SLOT_FAILED && !SeSlots[slot].failure_disk_full &&
			strcmp(SeSlots[slot].allocation_id, c->allocation_id) != 0)
		{
			(void) se_state_slot_copy(now, s, slot);
			(void) se_slot_advance(slot, SE_SLOT_OPENING, NULL);
		}
		else
			(void) se_state_slot_copy(now, s, slot);
		se_relocation_reconcile(slot, now, s);
	}
}

/* During a full reload: the indices seen so far (name -> JSON). */
static MemoryContext reload_cxt = NULL;
static List *reload_names = NIL;
static List *reload_values = NIL;
static List *reload_revisions = NIL;

static SeIndexMeta *
parse_index(const char *value, int len, int64 revision)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeError		err;
	SeJson	   *j;
	SeIndexMeta *im;

	se_error_init(&err);
	j = se_json_parse(value, len, &opts, &err);
	im = j ? se_state_index_from_json(j, &err) : NULL;
	if (im == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("search_engine: ignoring an invalid index in the cluster state: %s",
						err.reason ? err.reason : "?"),
				 errdetail("corrupt_state_exception")));
		return NULL;
	}
	im->mod_revision = revision;
	return im;
}

/* Write st as the applied state and publish it (state_lock held). */
static void
publish(SeClusterState *st)
{
	se_state_sort(st);
	st->version = Max(st->version, pg_atomic_read_u64(&SeShmem->state_version)) + 1;
	se_state_save_file(st);
	pg_atomic_write_u64(&SeShmem->state_version, st->version);
}

/* Reconcile this node's shards for each (was, now) pair; wake the owners. */
static void
reconcile_all(List *was, List *now)
{
	ListCell   *a,
			   *b;

	forboth(a, was, b, now)
		reconcile(lfirst(a), lfirst(b));
	wake_write_workers();
}

/*
 * The cluster settings, index templates or stored scripts key (what names
 * which, for messages) changed, or in a full reload was read (absent from
 * a reload: is_delete).  The settings are parsed into the state; the
 * templates and scripts kept as their text (templates.c, scripts.c parse
 * it).  Bad JSON keeps what this node had.
 */
static void
apply_blob(const char *what, const char *value, int value_len, bool is_delete,
		   int64 revision)
{
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeError		err;
	bool		settings = strcmp(what, "cluster settings") == 0;
	bool		scripts = strcmp(what, "stored scripts") == 0;
	SeJson	   *j = NULL;
	SeClusterState parsed;

	se_error_init(&err);
	memset(&parsed, 0, sizeof(parsed));
	if (!is_delete &&
		((j = se_json_parse(value, value_len, &opts, &err)) == NULL ||
		 (settings && !se_state_settings_from_json(j, &parsed, &err))))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("search_engine: ignoring invalid %s in the cluster state: %s",
						what, err.reason ? err.reason : "?"),
				 errdetail("corrupt_state_exception")));
		return;
	}
	LWLockAcquire(&SeShmem->state_lock, LW_EXCLUSIVE);
	PG_TRY();
	{
		SeClusterState *st = se_state_load_manifest();
		char	   *text = is_delete || settings ? NULL : pnstrdup(value, value_len);
		int64		rev = is_delete ? 0 : revision;

		if (settings)
		{
			st->persistent = parsed.persistent;
			st->transient = parsed.transient;
			st->settings_mod_revision = rev;
		}
		else if (scripts)
		{
			st->scripts_json = text;
			st->scripts_mod_revision = rev;
		}
		else
		{
			st->templates_json = text;
			st->templates_mod_revision = rev;
		}
		publish(st);
	}
	PG_FINALLY();
	{
		LWLockRelease(&SeShmem->state_lock);
	}
	PG_END_TRY();
}

static void
apply_event(const char *suffix, const char *value, int value_len, bool is_delete,
			int64 revision)
{
	const char *name;
	SeClusterState *st;
	SeIndexMeta *im = NULL;
	SeIndexMeta *was = NULL;
	int			i;

	if (strcmp(suffix, SETTINGS_KEY) == 0)
	{
		apply_blob("cluster settings", value, value_len, is_delete, revision);
		return;
	}
	if (strcmp(suffix, TEMPLATES_KEY) == 0)
	{
		apply_blob("index templates", value, value_len, is_delete, revision);
		return;
	}
	if (strcmp(suffix, SCRIPTS_KEY) == 0)
	{
		apply_blob("stored scripts", value, value_len, is_delete, revision);
		return;
	}
	if (strncmp(suffix, INDEX_KEY_PREFIX, strlen(INDEX_KEY_PREFIX)) != 0)
		return;
	name = suffix + strlen(INDEX_KEY_PREFIX);
	if (reload_cxt != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(reload_cxt);

		if (!is_delete)
		{
			reload_names = lappend(reload_names, pstrdup(name));
			reload_values = lappend(reload_values, pnstrdup(value, value_len));
			reload_revisions = lappend(reload_revisions, palloc(sizeof(int64)));
			*(int64 *) llast(reload_revisions) = revision;
		}
		MemoryContextSwitchTo(old);
		return;
	}
	if (!is_delete && (im = parse_index(value, value_len, revision)) == NULL)
		return;
	LWLockAcquire(&SeShmem->state_lock, LW_EXCLUSIVE);
	PG_TRY();
	{
		/* only the index that changed is read (and written) */
		st = se_state_load_manifest();
		for (i = 0; i < st->nindices; i++)
			if (strcmp(st->indices[i]->name, name) == 0)
			{
				was = se_state_index_load(st, i);
				st->indices[i] = st->indices[--st->nindices];
				break;
			}
		if (im)
		{
			st->indices = repalloc(st->indices, sizeof(SeIndexMeta *) * (st->nindices + 1));
			st->indices[st->nindices++] = im;
		}
		publish(st);
	}
	PG_FINALLY();
	{
		LWLockRelease(&SeShmem->state_lock);
	}
	PG_END_TRY();
	reconcile_all(list_make1(was), list_make1(im));
}

static void
reload_begin(int64 revision)
{
	if (reload_cxt)
		MemoryContextDelete(reload_cxt);
	reload_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine state reload",
									   ALLOCSET_DEFAULT_SIZES);
	reload_names = reload_values = reload_revisions = NIL;
}

/* The whole state was re-read: it is exactly the indices seen since begin. */
static void
reload_end(int64 revision)
{
	MemoryContext cxt = reload_cxt;
	List	   *was = NIL,
			   *now = NIL;

	reload_cxt = NULL;
	if (cxt == NULL)
		return;
	LWLockAcquire(&SeShmem->state_lock, LW_EXCLUSIVE);
	PG_TRY();
	{
		SeClusterState *st = se_state_load_file();
		SeIndexMeta **indices = palloc0(sizeof(SeIndexMeta *) * Max(1, list_length(reload_names)));
		int			n = 0;
		int			i;
		ListCell   *ln,
				   *lv,
				   *lr;

		forthree(ln, reload_names, lv, reload_values, lr, reload_revisions)
		{
			SeIndexMeta *im = parse_index(lfirst(lv), strlen(lfirst(lv)), *(int64 *) lfirst(lr));
			SeIndexMeta *old = NULL;

			if (im == NULL)
				continue;
			for (i = 0; i < st->nindices; i++)
				if (st->indices[i] && strcmp(st->indices[i]->name, im->name) == 0)
				{
					old = st->indices[i];
					st->indices[i] = NULL;
				}
			was = lappend(was, old);
			now = lappend(now, im);
			indices[n++] = im;
		}
		for (i = 0; i < st->nindices; i++)
			if (st->indices[i])
			{
				was = lappend(was, st->indices[i]);
				now = lappend(now, NULL);
			}
		st->indices = indices;
		st->nindices = n;
		publish(st);
	}
	PG_FINALLY();
	{
		LWLockRelease(&SeShmem->state_lock);
		MemoryContextDelete(cxt);
	}
	PG_END_TRY();
	reconcile_all(was, now);
}

/* Called in the coordinator worker at its start. */
void
se_state_sync_init(void)
{
	se_cluster_state_apply_hook = apply_event;
	se_cluster_state_full_reload_begin = reload_begin;
	se_cluster_state_full_reload_end = reload_end;
}
