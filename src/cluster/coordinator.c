/*-------------------------------------------------------------------------
 *
 * coordinator.c
 *	  The coordinator background worker: membership, master election with
 *	  fencing, the watch that applies the cluster's keys, and the master's
 *	  fenced commits.
 *
 * Registered only when search_engine.etcd_endpoints is set.  The loop is
 * pg_cron's: signals, CHECK_FOR_INTERRUPTS, config reload, one step of
 * work, reset the loop's memory context, then wait on the latch and the
 * watch's socket (never longer than the next keep-alive is due).  Every
 * etcd call is bounded by the client's per-request timeout.
 *
 * Stages (one switch):
 *
 *   SYNC  --full read of the prefix, watch from its revision--> JOIN
 *   JOIN  --lease granted, nodes/<name> created on it---------> RUN
 *   RUN   keep-alive every TTL/3; campaign while there is no leader;
 *         apply watch events; run commits; the master publishes
 *         state/nodes when the membership it sees changed
 *   a broken or compacted watch goes back to SYNC, a lost lease to JOIN
 *
 * Acting as master (SeCluster->acting_master) needs both: the leader key
 * holds this node with the term it won, and less than TTL - margin has
 * passed since the *send* time of the last keep-alive etcd accepted.  etcd
 * counts the lease from when it received that keep-alive, later than we
 * sent it, so the node stops acting before etcd can expire the lease and
 * let another node win -- it never relies on holding the lease alone.  A
 * master's writes are, in addition, txns conditioned on the leader key's
 * create_revision (the term) and value, so a deposed master that still
 * believes it acts is refused by etcd.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "util/json.h"

typedef enum CoordStage
{
	STAGE_SYNC,
	STAGE_JOIN,
	STAGE_RUN
} CoordStage;

/* a commit whose txn succeeded, answered once the watch applied it */
typedef struct PendingCommit
{
	int			slot;
	uint64		generation;
	int64		revision;
} PendingCommit;

/* The worker's own state; shared memory gets the view after each step. */
static struct
{
	CoordStage	stage;
	MemoryContext cxt;			/* lives as long as the worker */
	SeEtcd	   *etcd;
	SeEtcdWatch *watch;
	char	   *prefix;			/* /search_engine/<cluster>/ */
	char	   *node_key;
	int			roles;
	int			timeout_ms;		/* per etcd request */

	int64		lease;			/* 0 = none */
	TimestampTz lease_sent;		/* send time of the last accepted keep-alive */
	TimestampTz next_keepalive;
	TimestampTz retry_at;		/* a failed step is retried from then */
	TimestampTz next_disk_update;
	bool		name_conflict_logged;

	/* applied view */
	int64		applied;
	int			nmembers;
	SeClusterMember members[SE_CLUSTER_MAX_NODES];
	char		leader[SE_NODE_NAME_LEN];
	char		leader_eid[SE_EPHEMERAL_ID_LEN + 1];
	int64		leader_term;	/* create_revision, 0 = no leader */
	int64		leader_lease;
	char		cluster_uuid[SE_EPHEMERAL_ID_LEN + 1];
	int64		published_term;	/* term of the state/nodes seen */
	bool		published_has_me;	/* it lists this node's ephemeral id */
	List	   *published_eids; /* the ephemeral ids it lists (co.cxt) */
	int64		joined_term;	/* term whose master we joined (our key
								 * written again after it began) */
	char	   *published_sig;	/* its membership signature */

	/* mastership */
	int64		my_term;		/* term this node won, 0 = not the leader */
	char	   *my_leader_value;
	bool		acting;
	int64		acting_term;	/* the term acted in last */

	int			npending;
	PendingCommit pending[SE_CLUSTER_COMMIT_SLOTS];
} co;

void
se_coordinator_register(void)
{
	if (se_cluster_single_node())
		return;
	se_bgw_register("se_coordinator_main", "search_engine coordinator", 1, false);
}

static int
lease_ttl_ms(void)
{
	return se_cluster_lease_ttl * 1000;
}

/* How long before the lease's end (counted from our send time) we stop acting. */
static int
acting_margin_ms(void)
{
	return Max(1000, lease_ttl_ms() / 5);
}


/*
 * The failures logged since etcd last answered: each kind once, so a node
 * cut off from etcd does not fill the log.
 */
static char failures_logged[1024];

static void
etcd_reached(void)
{
	failures_logged[0] = '\0';
	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	SeCluster->etcd_reachable_at = GetCurrentTimestamp();
	LWLockRelease(&SeCluster->lock);
}

/* A failed etcd call: log it (see failures_logged) and retry after retry_ms. */
static void
etcd_failed(const char *what, const SeError *err, int retry_ms)
{
	char	   *tag = psprintf("|%s|", what);

	if (strstr(failures_logged, tag) == NULL)
	{
		ereport(LOG,
				(errmsg("search_engine coordinator: %s failed: %s", what,
						err->reason ? err->reason : err->type),
				 errdetail("%s", err->type)));
		if (strlen(failures_logged) + strlen(tag) < sizeof(failures_logged))
			strcat(failures_logged, tag);
	}
	co.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), retry_ms);
}

/* ---------- the applied view ---------- */

static int
member_find(const char *name)
{
	int			i;

	for (i = 0; i < co.nmembers; i++)
		if (strcmp(co.members[i].name, name) == 0)
			return i;
	return -1;
}

static int
member_cmp(const void *a, const void *b)
{
	return strcmp(((const SeClusterMember *) a)->name, ((const SeClusterMember *) b)->name);
}

static void
member_put(const char *name, const char *value, int len, int64 mod_revision)
{
	SeClusterMember m;
	int			i;

	if (!se_cluster_member_parse(value, len, &m) || strcmp(m.name, name) != 0)
	{
		ereport(LOG, (errmsg("search_engine coordinator: ignoring malformed node key \"%s\"", name)));
		return;
	}
	i = member_find(name);
	if (i < 0)
	{
		if (co.nmembers == SE_CLUSTER_MAX_NODES)
		{
			ereport(LOG, (errmsg("search_engine coordinator: more than %d nodes; ignoring node \"%s\"",
								 SE_CLUSTER_MAX_NODES, name)));
			return;
		}
		i = co.nmembers++;
	}
	m.key_revision = mod_revision;
	co.members[i] = m;
	qsort(co.members, co.nmembers, sizeof(SeClusterMember), member_cmp);
}

static void
member_delete(const char *name)
{
	int			i = member_find(name);

	if (i < 0)
		return;
	memmove(&co.members[i], &co.members[i + 1], sizeof(SeClusterMember) * (co.nmembers - i - 1));
	co.nmembers--;
}

static void
leader_apply(const SeEtcdKv *kv)
{
	SeError		err;
	SeJson	   *root;

	co.leader[0] = co.leader_eid[0] = '\0';
	co.leader_term = 0;
	co.leader_lease = 0;
	if (kv == NULL)
		return;
	se_error_init(&err);
	root = se_json_parse(kv->value, kv->value_len, NULL, &err);
	if (root && se_json_get(root, "node") && se_json_get(root, "node")->type == SE_JSON_STRING &&
		se_json_get(root, "ephemeral_id") && se_json_get(root, "ephemeral_id")->type == SE_JSON_STRING)
	{
		strlcpy(co.leader, se_json_get(root, "node")->u.s.str, sizeof(co.leader));
		strlcpy(co.leader_eid, se_json_get(root, "ephemeral_id")->u.s.str, sizeof(co.leader_eid));
	}
	co.leader_term = kv->create_revision;
	co.leader_lease = kv->lease;

	/*
	 * Our own key on our own lease that we did not see ourselves win: a
	 * campaign txn that timed out after etcd applied it.  We won.
	 */
	if (co.my_term == 0 && co.lease != 0 && kv->lease == co.lease &&
		strcmp(co.leader_eid, SeCluster->ephemeral_id) == 0)
	{
		MemoryContext old = MemoryContextSwitchTo(co.cxt);

		if (co.my_leader_value)
			pfree(co.my_leader_value);
		co.my_leader_value = pnstrdup(kv->value, kv->value_len);
		MemoryContextSwitchTo(old);
		co.my_term = kv->create_revision;
		ereport(LOG,
				(errmsg("search_engine coordinator: node \"%s\" won the election (term " INT64_FORMAT ")",
						se_cluster_node_name(), co.my_term)));
	}
}

/* state/nodes as the master published it: its term and the cluster uuid. */
static void
published_apply(const SeEtcdKv *kv)
{
	SeError		err;
	SeJson	   *root;
	const SeJson *t;
	const SeJson *u;
	const SeJson *nodes;
	int			i;

	co.published_has_me = false;
	list_free_deep(co.published_eids);
	co.published_eids = NIL;
	if (kv == NULL)
	{
		co.published_term = 0;
		return;
	}
	se_error_init(&err);
	root = se_json_parse(kv->value, kv->value_len, NULL, &err);
	if (root == NULL)
		return;
	t = se_json_get(root, "term");
	u = se_json_get(root, "cluster_uuid");
	nodes = se_json_get(root, "nodes");
	co.published_term = (t && t->type == SE_JSON_NUMBER && t->u.n.is_int) ? t->u.n.i : 0;
	/* this process, not an earlier one of this node's name */
	for (i = 0; nodes && nodes->type == SE_JSON_ARRAY && i < nodes->u.a.count; i++)
	{
		const SeJson *eid = se_json_get(nodes->u.a.items[i], "ephemeral_id");

		MemoryContext old;

		if (eid == NULL || eid->type != SE_JSON_STRING)
			continue;
		if (strcmp(eid->u.s.str, SeCluster->ephemeral_id) == 0)
			co.published_has_me = true;
		old = MemoryContextSwitchTo(co.cxt);
		co.published_eids = lappend(co.published_eids, pstrdup(eid->u.s.str));
		MemoryContextSwitchTo(old);
	}
	if (u && u->type == SE_JSON_STRING)
		strlcpy(co.cluster_uuid, u->u.s.str, sizeof(co.cluster_uuid));
}

/* Apply one key (a put, or a delete when kv->value is NULL and is_delete). */
static void
apply_key(const SeEtcdKv *kv, bool is_delete, int64 revision)
{
	const char *rel;

	if (strncmp(kv->key, co.prefix, strlen(co.prefix)) != 0)
		return;
	rel = kv->key + strlen(co.prefix);
	if (strncmp(rel, "nodes/", 6) == 0)
	{
		if (is_delete)
			member_delete(rel + 6);
		else
			member_put(rel + 6, kv->value, kv->value_len, kv->mod_revision);
	}
	else if (strcmp(rel, "leader") == 0)
		leader_apply(is_delete ? NULL : kv);
	else if (strcmp(rel, "state/nodes") == 0)
		published_apply(is_delete ? NULL : kv);
	else if (strncmp(rel, "state/", 6) == 0 && se_cluster_state_apply_hook)
		se_cluster_state_apply_hook(rel + 6, is_delete ? NULL : kv->value,
									is_delete ? 0 : kv->value_len, is_delete, revision);
}

/*
 * Is this node the master now?  The leader key must be ours (the term we
 * won, on our lease) and our lease renewed recently enough; logs the
 * moments it starts and stops acting.
 */
static void
update_acting(void)
{
	bool		leader = co.my_term > 0 && co.leader_term == co.my_term &&
		co.lease != 0 && co.leader_lease == co.lease &&
		strcmp(co.leader_eid, SeCluster->ephemeral_id) == 0;
	TimestampTz now = GetCurrentTimestamp();
	bool		fresh = co.lease != 0 &&
		now < TimestampTzPlusMilliseconds(co.lease_sent, lease_ttl_ms() - acting_margin_ms());
	bool		acting = leader && fresh;

	if (co.acting && !acting)
		ereport(LOG,
				(errmsg("search_engine coordinator: stopped acting as master of cluster \"%s\" (term " INT64_FORMAT ")",
						se_cluster_name, co.acting_term),
				 errdetail("%s", !fresh ?
						   psprintf("The lease was last renewed %ld ms ago (lease TTL %d s, margin %d ms).",
									(long) TimestampDifferenceMilliseconds(co.lease_sent, now),
									se_cluster_lease_ttl, acting_margin_ms()) :
						   "The leader key no longer names this node with its term.")));
	else if (!co.acting && acting)
		ereport(LOG,
				(errmsg("search_engine coordinator: acting as master of cluster \"%s\" (term " INT64_FORMAT ")",
						se_cluster_name, co.my_term)));
	co.acting = acting;
	if (acting)
		co.acting_term = co.my_term;
	if (!leader)
		co.my_term = 0;
}

/* Copy the view to shared memory; answer the commits it covers. */
static void
publish_view(void)
{
	bool		etcd_lost;
	int			i;

	update_acting();
	/* a node cut off from etcd past its lease no longer knows a master */
	etcd_lost = SeCluster->etcd_reachable_at != 0 &&
		TimestampDifferenceExceeds(SeCluster->etcd_reachable_at, GetCurrentTimestamp(),
								   lease_ttl_ms());
	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	strlcpy(SeCluster->cluster_uuid, co.cluster_uuid, sizeof(SeCluster->cluster_uuid));
	if (etcd_lost && !co.acting)
	{
		SeCluster->master[0] = SeCluster->master_ephemeral_id[0] = '\0';
		SeCluster->term = 0;
	}
	else
	{
		strlcpy(SeCluster->master, co.leader, sizeof(SeCluster->master));
		strlcpy(SeCluster->master_ephemeral_id, co.leader_eid, sizeof(SeCluster->master_ephemeral_id));
		SeCluster->term = co.leader_term;
	}
	/*
	 * Joined: the master of the term in the leader key published a
	 * membership with this process in it.  Until then what this node has is
	 * the state it persisted before it stopped (or a deposed master's), which
	 * says nothing of who is in the cluster now.
	 */
	SeCluster->joined = co.lease != 0 && co.leader_term != 0 &&
		co.published_term == co.leader_term && co.published_has_me &&
		SeCluster->term == co.leader_term;
	if (SeCluster->joined)
		SeCluster->joined_once = true;
	SeCluster->acting_master = co.acting;
	SeCluster->acting_until = co.acting ?
		TimestampTzPlusMilliseconds(co.lease_sent, lease_ttl_ms() - acting_margin_ms()) : 0;
	SeCluster->applied_revision = co.applied;
	SeCluster->nmembers = co.nmembers;
	memcpy(SeCluster->members, co.members, sizeof(SeClusterMember) * co.nmembers);
	for (i = 0; i < co.nmembers; i++)
	{
		ListCell   *lc;

		SeCluster->members[i].published = false;
		if (co.published_term == 0 || co.published_term != co.leader_term)
			continue;
		foreach(lc, co.published_eids)
			if (strcmp((char *) lfirst(lc), co.members[i].ephemeral_id) == 0)
				SeCluster->members[i].published = true;
	}
	LWLockRelease(&SeCluster->lock);
	ConditionVariableBroadcast(&SeCluster->applied_cv);

	for (i = 0; i < co.npending;)
	{
		if (co.pending[i].revision <= co.applied)
		{
			se_commit_answer(co.pending[i].slot, co.pending[i].generation, true,
							 co.pending[i].revision, NULL);
			co.pending[i] = co.pending[--co.npending];
		}
		else
			i++;
	}
}

/* ---------- stages ---------- */

static void
stop_watch(void)
{
	if (co.watch)
		se_etcd_watch_stop(co.watch);
	co.watch = NULL;
}

/* SYNC: read the whole prefix, apply it, watch from the next revision. */
static void
stage_sync(void)
{
	SeError		err;
	SeEtcdKv   *kvs;
	int			nkvs;
	int64		revision;
	int			i;
	MemoryContext old;

	se_error_init(&err);
	stop_watch();
	if (!se_etcd_range(co.etcd, co.prefix, true, &kvs, &nkvs, &revision, &err))
	{
		etcd_failed("reading the cluster's keys", &err, 500);
		return;
	}
	etcd_reached();
	co.nmembers = 0;
	leader_apply(NULL);
	published_apply(NULL);
	if (se_cluster_state_full_reload_begin)
		se_cluster_state_full_reload_begin(revision);
	for (i = 0; i < nkvs; i++)
		apply_key(&kvs[i], false, kvs[i].mod_revision);
	if (se_cluster_state_full_reload_end)
		se_cluster_state_full_reload_end(revision);
	co.applied = revision;

	old = MemoryContextSwitchTo(co.cxt);
	co.watch = se_etcd_watch_start(co.etcd, co.prefix, revision + 1, &err);
	MemoryContextSwitchTo(old);
	if (co.watch == NULL)
	{
		etcd_failed("starting the watch", &err, 500);
		return;
	}
	publish_view();
	co.stage = co.lease != 0 ? STAGE_RUN : STAGE_JOIN;
}

static char *
local_member_json(void)
{
	SeClusterMember m;
	StringInfoData s;

	se_cluster_local_member(&m);
	initStringInfo(&s);
	se_cluster_member_json(&m, &s);
	return s.data;
}

/*
 * Write nodes/<name> on our lease: create it, or replace it if it is ours
 * (same ephemeral id: a restarted worker, or a disk update).  A key of a
 * live node with another ephemeral id is never taken: false, and logged.
 */
static bool
write_node_key(SeError *err)
{
	char	   *json = local_member_json();
	SeEtcdCmp	cmp = {co.node_key, SE_ETCD_CREATE, SE_ETCD_EQUAL, 0};
	SeEtcdOp	put = {SE_ETCD_OP_PUT, co.node_key, json, strlen(json), co.lease, false};
	SeEtcdOp	get = {SE_ETCD_OP_RANGE, co.node_key};
	SeEtcdKv   *kvs;
	int			nkvs;
	bool		ok;
	int64		rev;
	SeClusterMember other;

	if (!se_etcd_txn(co.etcd, &cmp, 1, &put, 1, &get, 1, &ok, &rev, &kvs, &nkvs, err))
		return false;
	if (ok)
		return true;
	if (nkvs == 1 && se_cluster_member_parse(kvs[0].value, kvs[0].value_len, &other) &&
		strcmp(other.ephemeral_id, SeCluster->ephemeral_id) == 0)
	{
		SeEtcdCmp	same = {co.node_key, SE_ETCD_MOD, SE_ETCD_EQUAL, kvs[0].mod_revision};

		if (!se_etcd_txn(co.etcd, &same, 1, &put, 1, NULL, 0, &ok, &rev, NULL, NULL, err))
			return false;
		if (ok)
			return true;
	}
	if (!co.name_conflict_logged)
		ereport(WARNING,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("search_engine coordinator: node name \"%s\" is already used by a live node of cluster \"%s\"",
						se_cluster_node_name(), se_cluster_name),
				 errdetail("The key %s holds another node (ephemeral id %s); this node does not join until it is gone.",
						   co.node_key, nkvs == 1 ? other.ephemeral_id : "?"),
				 errhint("Give every node its own search_engine.node_name.")));
	co.name_conflict_logged = true;
	se_error_set(err, 409, "illegal_state_exception", "node name [%s] is in use",
				 se_cluster_node_name());
	return false;
}

/* JOIN: a new lease, and our node key on it. */
static void
stage_join(void)
{
	SeError		err;
	TimestampTz sent = GetCurrentTimestamp();
	int64		lease;

	se_error_init(&err);
	if (co.lease == 0)
	{
		if (!se_etcd_lease_grant(co.etcd, se_cluster_lease_ttl, &lease, &err))
		{
			etcd_failed("granting the lease", &err, 500);
			return;
		}
		co.lease = lease;
		co.lease_sent = sent;
		co.next_keepalive = TimestampTzPlusMilliseconds(sent, lease_ttl_ms() / 3);
		etcd_reached();
	}
	if (!write_node_key(&err))
	{
		if (strcmp(err.type, "illegal_state_exception") != 0)
			etcd_failed("writing the node key", &err, 500);
		else
		{
			/* name taken: let our lease go, look again later */
			(void) se_etcd_lease_revoke(co.etcd, co.lease, &err);
			co.lease = 0;
			co.retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 2000);
		}
		return;
	}
	if (co.name_conflict_logged)
		ereport(LOG, (errmsg("search_engine coordinator: node name \"%s\" is free again; joining",
							 se_cluster_node_name())));
	co.name_conflict_logged = false;
	etcd_reached();
	ereport(LOG,
			(errmsg("search_engine coordinator: node \"%s\" joined cluster \"%s\" (lease %lld, TTL %d s)",
					se_cluster_node_name(), se_cluster_name, (long long) co.lease, se_cluster_lease_ttl)));
	co.next_disk_update = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);
	co.stage = STAGE_RUN;
}

static void
lease_lost(void)
{
	if (co.lease != 0)
		ereport(LOG, (errmsg("search_engine coordinator: lease %lld expired; joining again",
							 (long long) co.lease)));
	co.lease = 0;
	update_acting();
	co.my_term = 0;
	co.stage = STAGE_JOIN;
}

static void
keepalive(void)
{
	SeError		err;
	TimestampTz sent = GetCurrentTimestamp();
	int64		ttl_left;

	if (co.lease == 0 || sent < co.next_keepalive)
		return;
	se_error_init(&err);
	if (!se_etcd_lease_keepalive(co.etcd, co.lease, &ttl_left, &err))
	{
		/* try again soon: the client moves to the next endpoint */
		etcd_failed("renewing the lease", &err, 0);
		co.next_keepalive = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 200);
		return;
	}
	etcd_reached();
	if (ttl_left <= 0)
	{
		lease_lost();
		return;
	}
	co.lease_sent = sent;
	co.next_keepalive = TimestampTzPlusMilliseconds(sent, lease_ttl_ms() / 3);
}

/* Campaign: create the leader key on our lease if there is none. */
static void
campaign(void)
{
	SeError		err;
	char	   *key;
	StringInfoData value;
	SeEtcdCmp	cmp;
	SeEtcdOp	put;
	SeEtcdOp	get;
	SeEtcdKv   *kvs;
	int			nkvs;
	bool		won;
	int64		rev;

	if (!(co.roles & SE_NODE_ROLE_MASTER) || co.leader_term != 0 || co.lease == 0)
		return;
	key = se_cluster_key("leader");
	initStringInfo(&value);
	appendStringInfoString(&value, "{\"node\":");
	se_json_write_string(&value, se_cluster_node_name(), -1);
	appendStringInfoString(&value, ",\"ephemeral_id\":");
	se_json_write_string(&value, SeCluster->ephemeral_id, -1);
	appendStringInfoChar(&value, '}');
	cmp = (SeEtcdCmp) {key, SE_ETCD_CREATE, SE_ETCD_EQUAL, 0};
	put = (SeEtcdOp) {SE_ETCD_OP_PUT, key, value.data, value.len, co.lease, false};
	get = (SeEtcdOp) {SE_ETCD_OP_RANGE, key};
	se_error_init(&err);
	if (!se_etcd_txn(co.etcd, &cmp, 1, &put, 1, &get, 1, &won, &rev, &kvs, &nkvs, &err))
	{
		etcd_failed("campaigning for master", &err, 200);
		return;
	}
	etcd_reached();
	if (won)
	{
		SeEtcdKv	kv = {key, value.data, value.len, rev, rev, 1, co.lease};

		leader_apply(&kv);		/* ours, on our lease: adopted as won */
	}
	else if (nkvs == 1)
		leader_apply(&kvs[0]);
}

/*
 * Run ops as one txn fenced on our term: the leader key must still be the
 * one we created, holding us.  false with err on an etcd failure or a
 * refused fence (then we step down).
 */
static bool
fenced_txn(const SeEtcdCmp *extra, int nextra, const SeEtcdOp *ops, int nops,
		   int64 *revision, bool *conflict, SeError *err)
{
	char	   *key = se_cluster_key("leader");
	SeEtcdCmp  *cmps = palloc(sizeof(SeEtcdCmp) * (nextra + 2));
	SeEtcdOp	get = {SE_ETCD_OP_RANGE, key, NULL, 0, 0, false};
	SeEtcdKv   *kvs = NULL;
	int			nkvs = 0;
	bool		ok;

	*conflict = false;
	cmps[0] = (SeEtcdCmp) {key, SE_ETCD_CREATE, SE_ETCD_EQUAL, co.my_term};
	cmps[1] = (SeEtcdCmp) {key, SE_ETCD_VALUE, SE_ETCD_EQUAL, 0, co.my_leader_value,
		strlen(co.my_leader_value)};
	if (nextra > 0)
		memcpy(cmps + 2, extra, sizeof(SeEtcdCmp) * nextra);
	if (!se_etcd_txn(co.etcd, cmps, nextra + 2, ops, nops, &get, 1, &ok, revision,
					 &kvs, &nkvs, err))
		return false;
	etcd_reached();
	if (ok)
		return true;
	/* refused: by the fence, or (the leader key still ours) by the caller's compares */
	if (nextra > 0 && nkvs == 1 && kvs[0].create_revision == co.my_term &&
		kvs[0].value_len == (int) strlen(co.my_leader_value) &&
		memcmp(kvs[0].value, co.my_leader_value, kvs[0].value_len) == 0)
	{
		*conflict = true;
		se_error_set(err, 409, SE_COMMIT_CONFLICT, "a compare of the commit failed");
		return false;
	}
	ereport(LOG,
			(errmsg("search_engine coordinator: fenced commit refused: term " INT64_FORMAT " is no longer the master's",
					co.my_term)));
	co.my_term = 0;
	update_acting();
	se_error_set(err, 503, "master_not_discovered_exception",
				 "node [%s] is no longer the master (its term was refused)",
				 se_cluster_node_name());
	return false;
}

/*
 * Whether a member joined this master: its node key was written after the
 * term began (every node writes its key again when it sees a new term, see
 * join_term).  A key older than the term may be a dead process's whose
 * lease has not run out yet -- after a restart of the whole cluster, the
 * pre-stop incarnation of a node -- and its copies must not count as
 * active, as ES's new master keeps only the nodes that joined it.
 */
static bool
member_joined(const SeClusterMember *m)
{
	return m->key_revision > co.my_term;
}

/* The membership the master publishes: who, with which roles. */
static char *
membership_signature(void)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	appendStringInfo(&s, INT64_FORMAT, co.my_term);
	for (i = 0; i < co.nmembers; i++)
		if (member_joined(&co.members[i]))
			appendStringInfo(&s, "|%s/%s/%d", co.members[i].name, co.members[i].ephemeral_id,
							 co.members[i].roles);
	return s.data;
}

/* The master: publish state/nodes when the membership it sees changed. */
static void
publish_membership(void)
{
	char	   *sig;
	StringInfoData value;
	SeEtcdOp	put;
	SeError		err;
	int64		rev;
	bool		conflict;
	int			i;
	int			n;
	MemoryContext old;

	if (!co.acting)
		return;
	sig = membership_signature();
	if (co.published_sig && strcmp(sig, co.published_sig) == 0 && co.published_term == co.my_term)
		return;
	if (co.cluster_uuid[0] == '\0')
		se_make_uuid(co.cluster_uuid);
	initStringInfo(&value);
	appendStringInfoString(&value, "{\"cluster_uuid\":");
	se_json_write_string(&value, co.cluster_uuid, -1);
	appendStringInfoString(&value, ",\"master\":");
	se_json_write_string(&value, se_cluster_node_name(), -1);
	appendStringInfoString(&value, ",\"master_ephemeral_id\":");
	se_json_write_string(&value, SeCluster->ephemeral_id, -1);
	appendStringInfo(&value, ",\"term\":" INT64_FORMAT ",\"nodes\":[", co.my_term);
	for (i = 0, n = 0; i < co.nmembers; i++)
	{
		if (!member_joined(&co.members[i]))
			continue;
		if (n++ > 0)
			appendStringInfoChar(&value, ',');
		se_cluster_member_json(&co.members[i], &value);
	}
	appendStringInfoString(&value, "]}");
	put = (SeEtcdOp) {SE_ETCD_OP_PUT, se_cluster_key("state/nodes"), value.data, value.len, 0, false};
	se_error_init(&err);
	if (!fenced_txn(NULL, 0, &put, 1, &rev, &conflict, &err))
	{
		if (strcmp(err.type, "master_not_discovered_exception") != 0)
			etcd_failed("publishing the membership", &err, 200);
		return;
	}
	old = MemoryContextSwitchTo(co.cxt);
	if (co.published_sig)
		pfree(co.published_sig);
	co.published_sig = pstrdup(sig);
	MemoryContextSwitchTo(old);
	ereport(LOG,
			(errmsg("search_engine coordinator: published membership of %d nodes (term " INT64_FORMAT ", revision " INT64_FORMAT ")",
					n, co.my_term, rev)));
}

/* Commits handed over by backends: run each as a fenced txn. */
static void
run_commits(void)
{
	int			slot;
	uint64		generation;
	char	   *state_prefix = se_cluster_key("state/");
	char	   *nodes_prefix = se_cluster_key("nodes/");

	while ((slot = se_commit_take(&generation)) >= 0)
	{
		SeError		err;
		int			nops = 0;
		int			ncmps = 0;
		SeEtcdOp   *ops;
		SeEtcdCmp  *cmps = NULL;
		int64		rev = 0;
		bool		conflict = false;
		int			i;

		se_error_init(&err);
		ops = se_commit_read_ops(slot, &nops, &cmps, &ncmps, &err);
		if (ops != NULL && !co.acting)
			se_error_set(&err, 503, "master_not_discovered_exception",
						 "node [%s] is not the elected master", se_cluster_node_name());
		/* the fault detection's removal of a node deletes its nodes/ key */
		for (i = 0; ops != NULL && !se_error_is_set(&err) && i < nops; i++)
			if ((strncmp(ops[i].key, state_prefix, strlen(state_prefix)) != 0 ||
				 strcmp(ops[i].key + strlen(state_prefix), "nodes") == 0) &&
				!(ops[i].kind == SE_ETCD_OP_DELETE &&
				  strncmp(ops[i].key, nodes_prefix, strlen(nodes_prefix)) == 0))
				se_error_set(&err, 400, "illegal_argument_exception",
							 "cluster state commits may only write under %s (not state/nodes) or delete under %s, not [%s]",
							 state_prefix, nodes_prefix, ops[i].key);
		/* tests stall here, past the acting check, to meet the fence */
		if (!se_error_is_set(&err))
			se_debug_pausepoint("coordinator_commit");
		if (!se_error_is_set(&err) && fenced_txn(cmps, ncmps, ops, nops, &rev, &conflict, &err))
		{
			co.pending[co.npending++] = (PendingCommit) {slot, generation, rev};
			continue;
		}
		se_commit_answer(slot, generation, false, conflict ? rev : 0, &err);
	}
}

/*
 * The fault detection worker saw the master fail its leader checks
 * (fault_detection.c) and asked to depose it: delete the leader key if it
 * is still that term's (a compare on its create revision, so a newer
 * master is never touched).  The master's fenced writes fail from then on
 * and the candidates campaign at once instead of waiting for its lease to
 * end -- the election itself stays etcd's.
 */
static void
depose_master(void)
{
	int64		term;
	char	   *key;
	SeEtcdCmp	cmp;
	SeEtcdOp	del;
	SeError		err;
	bool		ok;
	int64		rev;

	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	term = SeCluster->depose_term;
	SeCluster->depose_term = 0;
	LWLockRelease(&SeCluster->lock);
	if (term == 0 || term != co.leader_term || term == co.my_term)
		return;
	key = se_cluster_key("leader");
	cmp = (SeEtcdCmp) {key, SE_ETCD_CREATE, SE_ETCD_EQUAL, term};
	del = (SeEtcdOp) {SE_ETCD_OP_DELETE, key, NULL, 0, 0, false};
	se_error_init(&err);
	if (!se_etcd_txn(co.etcd, &cmp, 1, &del, 1, NULL, 0, &ok, &rev, NULL, NULL, &err))
	{
		etcd_failed("deposing the master", &err, 200);
		return;
	}
	etcd_reached();
	if (ok)
		ereport(LOG,
				(errmsg("search_engine coordinator: master [%s] failed its leader checks; its leader key (term " INT64_FORMAT ") was deleted",
						co.leader, term)));
}

/* Apply what the watch delivered; false if it must be re-established. */
static bool
watch_step(void)
{
	SeError		err;
	SeEtcdEvent *events;
	int			nevents;
	int64		revision = 0;
	int64		compacted = 0;
	int			i;

	if (co.watch == NULL)
		return false;
	se_error_init(&err);
	switch (se_etcd_watch_poll(co.watch, 0, &events, &nevents, &revision, &compacted, &err))
	{
		case SE_ETCD_WATCH_OK:
			for (i = 0; i < nevents; i++)
			{
				apply_key(&events[i].kv, events[i].is_delete, events[i].kv.mod_revision);
				co.applied = Max(co.applied, events[i].kv.mod_revision);
			}
			if (nevents > 0)
				etcd_reached();
			return true;
		case SE_ETCD_WATCH_COMPACTED:
			ereport(LOG,
					(errmsg("search_engine coordinator: watch revision was compacted (at " INT64_FORMAT "); reading everything again",
							compacted)));
			return false;
		case SE_ETCD_WATCH_FAILED:
			etcd_failed("watching the cluster's keys", &err, 200);
			return false;
	}
	return false;
}

/*
 * write_node_key in the RUN stage: a name taken by another process means
 * our lease is gone (join again); other failures are retried.
 */
static bool
rewrite_node_key(const char *what)
{
	SeError		err;

	se_error_init(&err);
	if (write_node_key(&err))
		return true;
	if (strcmp(err.type, "illegal_state_exception") == 0)
		lease_lost();
	else
		etcd_failed(what, &err, 500);
	return false;
}

/*
 * Join the master of a new term: write our node key again, so that its
 * revision is past the term's (member_joined).  ES's join request; here
 * etcd orders it.
 */
static void
join_term(void)
{
	int			me = member_find(se_cluster_node_name());

	if (co.leader_term == 0 || co.joined_term == co.leader_term || co.lease == 0 ||
		GetCurrentTimestamp() < co.retry_at)
		return;
	if (me >= 0 && co.members[me].key_revision > co.leader_term &&
		strcmp(co.members[me].ephemeral_id, SeCluster->ephemeral_id) == 0)
	{
		co.joined_term = co.leader_term;	/* written since the term began */
		return;
	}
	if (rewrite_node_key("joining the master"))
		co.joined_term = co.leader_term;
}

/* RUN: one round of the node's duties. */
static void
stage_run(void)
{
	keepalive();
	if (co.stage != STAGE_RUN)
		return;
	if (!watch_step())
	{
		co.stage = STAGE_SYNC;
		return;
	}
	update_acting();
	/* our node key vanished (revoked, or its lease lapsed): join again */
	if (member_find(se_cluster_node_name()) < 0 && co.lease != 0 &&
		GetCurrentTimestamp() >= co.retry_at && !rewrite_node_key("writing the node key"))
		return;
	join_term();
	if (GetCurrentTimestamp() >= co.retry_at)
		depose_master();
	if (GetCurrentTimestamp() >= co.retry_at)
		campaign();
	update_acting();
	run_commits();
	if (GetCurrentTimestamp() >= co.retry_at)
		publish_membership();
	if (GetCurrentTimestamp() >= co.next_disk_update)
	{
		SeError		err;

		se_error_init(&err);
		co.next_disk_update = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);
		if (!write_node_key(&err) && strcmp(err.type, "illegal_state_exception") != 0)
			etcd_failed("updating the node key", &err, 500);
	}
}

/* How long the loop may wait: until the next keep-alive or retry, at most 1 s. */
static long
wait_ms(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = 1000;

	if (co.lease != 0)
		ms = Min(ms, TimestampDifferenceMilliseconds(now, co.next_keepalive));
	if (co.retry_at > now)
		ms = Min(ms, TimestampDifferenceMilliseconds(now, co.retry_at));
	else if (co.stage != STAGE_RUN)
		ms = 0;
	if (co.acting)				/* notice the end of the acting window in time */
		ms = Min(ms, 100);
	return Max(ms, 0);
}

/* Leave cleanly: revoke the lease, so our node key and leader key go now. */
static void
coordinator_exit(void)
{
	SeError		err;

	se_error_init(&err);
	stop_watch();
	if (co.lease != 0 && co.etcd != NULL)
		(void) se_etcd_lease_revoke(co.etcd, co.lease, &err);
	co.lease = 0;
	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	SeCluster->acting_master = false;
	SeCluster->worker_procno = -1;
	LWLockRelease(&SeCluster->lock);
}

void
se_coordinator_main(Datum arg)
{
	MemoryContext loop_cxt;
	SeError		err;

	se_bgw_start();
	co.cxt = AllocSetContextCreate(TopMemoryContext, "search_engine coordinator",
								   ALLOCSET_DEFAULT_SIZES);
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine coordinator loop",
									 ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(co.cxt);
	se_error_init(&err);
	co.prefix = psprintf("/search_engine/%s/", se_cluster_name);
	co.node_key = se_cluster_key(psprintf("nodes/%s", se_cluster_node_name()));
	co.roles = se_node_roles_local();
	co.timeout_ms = Min(1000, lease_ttl_ms() / 4);
	if (!se_etcd_global_init(&err) ||
		(co.etcd = se_etcd_connect(se_etcd_endpoints, co.timeout_ms, &err)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("search_engine coordinator: %s", err.reason ? err.reason : err.type)));
	co.stage = STAGE_SYNC;
	/* index metadata events go to cluster/state_sync.c */
	se_state_sync_init();

	se_commit_worker_start();
	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	SeCluster->worker_procno = MyProc->pgprocno;
	SeCluster->acting_master = false;
	LWLockRelease(&SeCluster->lock);
	ereport(LOG,
			(errmsg("search_engine coordinator: node \"%s\" (ephemeral id %s, roles %s) of cluster \"%s\" using etcd at %s",
					se_cluster_node_name(), SeCluster->ephemeral_id,
					se_node_roles_letters(co.roles), se_cluster_name, se_etcd_endpoints)));

	while (se_bgw_loop_top())
	{
		int			sock;

		MemoryContextSwitchTo(loop_cxt);
		/* first, before any etcd call: has our acting window closed? */
		update_acting();
		if (GetCurrentTimestamp() >= co.retry_at)
		{
			switch (co.stage)
			{
				case STAGE_SYNC:
					stage_sync();
					break;
				case STAGE_JOIN:
					keepalive();
					stage_join();
					break;
				case STAGE_RUN:
					stage_run();
					break;
			}
		}
		else
			keepalive();
		publish_view();
		MemoryContextReset(loop_cxt);

		/* the watch's socket only when the next round will read it */
		sock = (co.watch && co.stage == STAGE_RUN && co.retry_at <= GetCurrentTimestamp()) ?
			se_etcd_watch_socket(co.watch) : -1;
		(void) WaitLatchOrSocket(MyLatch,
								 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH |
								 (sock >= 0 ? WL_SOCKET_READABLE : 0),
								 sock, wait_ms(), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	MemoryContextSwitchTo(co.cxt);
	coordinator_exit();
	proc_exit(1);
}
