/*-------------------------------------------------------------------------
 *
 * fault_detection.c
 *	  Elasticsearch's fault detection over the transport: the master's
 *	  follower checks of every node, and the master-eligible nodes' leader
 *	  checks of the master.
 *
 * Without it the master learns that a node died only when the node's etcd
 * lease ends (search_engine.cluster_lease_ttl), and only then unassigns its
 * copies and promotes their replicas.  As ES does, the elected master
 * pings every other member (transport action "fault_check") every
 * cluster.fault_detection.follower_check.interval, each ping bounded by
 * .timeout.  A node is removed from the cluster when a check fails at once
 * for a connection that is refused or dropped (what kill -9 gives: the
 * process is gone) or answered by another process of that name (another
 * ephemeral id), and after .retry_count consecutive failed checks
 * otherwise (timeouts: a paused or overloaded node).  A node that answers,
 * even with an error, is alive.
 *
 * Removing is the master's fenced etcd commit (state_sync.c
 * se_state_commit_node_removal): the node's nodes/<name> key is deleted in
 * the same transaction as a reroute that treats it as gone (its copies
 * NODE_LEFT, in-sync replicas promoted with the primary term + 1).  So
 * membership stays etcd's.  A live node removed wrongly sees its key gone
 * and writes it again (coordinator.c): it rejoins as a node whose copies
 * are no longer primaries; its old primary cannot acknowledge a write any
 * more, because the promoted copy refuses the old term and a write's
 * replica failure needs the master's answer.
 *
 * The master-eligible nodes that are not the master check it the same way
 * (leader_check.*); when it fails they ask their coordinator to depose it
 * (delete the leader key of exactly that term, a compare in etcd), so a
 * dead master is replaced after about one check interval, not after its
 * lease.  Who wins is still decided by etcd: the candidates campaign for
 * the leader key as at any other election.
 *
 * A worker of its own (on master-eligible nodes of a cluster), because a
 * check round waits on the network for up to the timeout, which neither
 * the coordinator (it must keep its lease) nor the shard-state worker (its
 * reports) may do.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/cluster_settings.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/state_int.h"
#include "node/node.h"
#include "transport/transport.h"
#include "util/json.h"

/* ---------- the checked node's side ---------- */

/*
 * Transport action "fault_check": {"from", "term"}.  Answers this node's
 * name and ephemeral id, so the checker knows it is the same process that
 * joined (ES's follower/leader check answer).
 */
static bool
fault_check_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	appendStringInfoString(reply, "{\"node\":");
	se_json_write_string(reply, se_cluster_node_name(), -1);
	appendStringInfoString(reply, ",\"ephemeral_id\":");
	se_json_write_string(reply, SeCluster->ephemeral_id, -1);
	appendStringInfoChar(reply, '}');
	return true;
}

void
se_fault_detection_register_actions(void)
{
	se_transport_register("fault_check", fault_check_action);
}

/* ---------- the checker's side ---------- */

typedef enum CheckOutcome
{
	CHECK_OK,					/* the node answered */
	CHECK_FAILED,				/* counts towards retry_count */
	CHECK_GONE					/* counts at once */
} CheckOutcome;

/* One checked node: how many checks in a row it failed. */
typedef struct Checked
{
	char		name[SE_NODE_NAME_LEN];
	char		ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];
	int			failures;
	bool		seen;
} Checked;

static Checked checked[SE_CLUSTER_MAX_NODES];
static int	nchecked = 0;

static Checked *
checked_get(const char *name, const char *ephemeral_id)
{
	int			i;

	for (i = 0; i < nchecked; i++)
		if (strcmp(checked[i].name, name) == 0)
		{
			/* another process of that name: a new count */
			if (strcmp(checked[i].ephemeral_id, ephemeral_id) != 0)
			{
				strlcpy(checked[i].ephemeral_id, ephemeral_id, sizeof(checked[i].ephemeral_id));
				checked[i].failures = 0;
			}
			return &checked[i];
		}
	Assert(nchecked < SE_CLUSTER_MAX_NODES);
	memset(&checked[nchecked], 0, sizeof(Checked));
	strlcpy(checked[nchecked].name, name, sizeof(checked[nchecked].name));
	strlcpy(checked[nchecked].ephemeral_id, ephemeral_id, sizeof(checked[nchecked].ephemeral_id));
	return &checked[nchecked++];
}

/* Forget the nodes not checked this round. */
static void
checked_sweep(void)
{
	int			i;

	for (i = 0; i < nchecked;)
	{
		if (!checked[i].seen)
			checked[i] = checked[--nchecked];
		else
		{
			checked[i].seen = false;
			i++;
		}
	}
}

/* Was the call's error made by the connection, not answered by the node? */
static bool
transport_failure(const SeTransportCall *c)
{
	return strcmp(c->err.type, "connect_transport_exception") == 0 ||
		strcmp(c->err.type, "node_disconnected_exception") == 0 ||
		strcmp(c->err.type, "receive_timeout_transport_exception") == 0;
}

static CheckOutcome
outcome(const SeTransportCall *c, const char *ephemeral_id)
{
	SeError		err;
	SeJson	   *j;
	const SeJson *eid;

	if (!c->ok)
	{
		if (!transport_failure(c))
			return CHECK_OK;	/* it answered: alive */
		/*
		 * Refused, or no such socket: no process listens there (kill -9).
		 * A server that answers the connection with a FATAL (starting up,
		 * too many clients) is there: that counts as a failed check only.
		 */
		if (strcmp(c->err.type, "connect_transport_exception") == 0 &&
			c->err.reason && strstr(c->err.reason, "connect failed") != NULL &&
			strstr(c->err.reason, "FATAL") == NULL)
			return CHECK_GONE;
		return CHECK_FAILED;
	}
	se_error_init(&err);
	j = se_json_parse(c->reply.data, c->reply.len, NULL, &err);
	eid = j ? se_json_get(j, "ephemeral_id") : NULL;
	if (eid && eid->type == SE_JSON_STRING && strcmp(eid->u.s.str, ephemeral_id) != 0)
		return CHECK_GONE;		/* the node restarted: the member we know is gone */
	return CHECK_OK;
}

/*
 * Check the nodes of calls[] (names and ephemeral ids in eids[]) once, in
 * parallel: a connection that broke since the last round (the pooled one
 * to a killed node) is tried once more at once, so that the new
 * connection's refusal decides.
 */
static void
check_round(SeTransportCall *calls, int n, int timeout_ms, CheckOutcome *out,
			const char **eids)
{
	int			i;

	se_transport_probe_each(calls, n, timeout_ms);
	for (i = 0; i < n; i++)
		if (!calls[i].ok && strcmp(calls[i].err.type, "node_disconnected_exception") == 0)
			se_transport_probe_each(&calls[i], 1, timeout_ms);
	for (i = 0; i < n; i++)
		out[i] = outcome(&calls[i], eids[i]);
}

static char *
check_payload(const SeClusterView *v)
{
	StringInfoData p;

	initStringInfo(&p);
	appendStringInfoString(&p, "{\"from\":");
	se_json_write_string(&p, v->local_name, -1);
	appendStringInfo(&p, ",\"term\":" INT64_FORMAT "}", v->term);
	return p.data;
}

/* The acting master: check every other member; remove those that failed. */
static void
follower_checks(const SeClusterView *v, const SeClusterState *st)
{
	int			timeout_ms = (int) se_csettings_time_ms(&st->persistent, &st->transient,
														"cluster.fault_detection.follower_check.timeout");
	int			retries = se_csettings_int(&st->persistent, &st->transient,
										   "cluster.fault_detection.follower_check.retry_count");
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * Max(1, v->nmembers));
	const char **eids = palloc0(sizeof(char *) * Max(1, v->nmembers));
	CheckOutcome *out = palloc0(sizeof(CheckOutcome) * Max(1, v->nmembers));
	char	   *payload = check_payload(v);
	int			n = 0;
	int			i;

	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];

		if (strcmp(m->name, v->local_name) == 0)
			continue;
		calls[n].node = m->name;
		calls[n].conninfo = m->conninfo;
		calls[n].action = "fault_check";
		calls[n].payload = payload;
		calls[n].payload_len = strlen(payload);
		eids[n] = m->ephemeral_id;
		n++;
	}
	if (n > 0)
		check_round(calls, n, timeout_ms, out, eids);
	for (i = 0; i < n; i++)
	{
		Checked    *c = checked_get(calls[i].node, eids[i]);
		SeError		err;

		c->seen = true;
		if (out[i] == CHECK_OK)
		{
			c->failures = 0;
			continue;
		}
		c->failures++;
		if (out[i] != CHECK_GONE && c->failures < retries)
			continue;
		ereport(LOG,
				(errmsg("search_engine: master [%s] removes node [%s]: %d follower check(s) failed in a row%s: %s",
						v->local_name, calls[i].node, c->failures,
						out[i] == CHECK_GONE ? " (gone: counts at once)" : "",
						calls[i].ok ? "another process answered under its name"
						: (calls[i].err.reason ? calls[i].err.reason : calls[i].err.type))));
		se_error_init(&err);
		if (se_state_commit_node_removal(calls[i].node, &err))
			c->failures = 0;
		else
			ereport(LOG,
					(errmsg("search_engine: removing node [%s] failed: %s", calls[i].node,
							err.reason ? err.reason : err.type)));
	}
}

/* A master-eligible node that is not the master: check it; depose it if it failed. */
static void
leader_check(const SeClusterView *v, const SeClusterState *st)
{
	const SeClusterMember *master = se_cluster_view_master(v);
	int			timeout_ms = (int) se_csettings_time_ms(&st->persistent, &st->transient,
														"cluster.fault_detection.leader_check.timeout");
	int			retries = se_csettings_int(&st->persistent, &st->transient,
										   "cluster.fault_detection.leader_check.retry_count");
	SeTransportCall call;
	const char *eid;
	CheckOutcome out;
	Checked    *c;
	int			procno;

	if (master == NULL || v->term == 0 || strcmp(master->name, v->local_name) == 0)
		return;
	memset(&call, 0, sizeof(call));
	call.node = master->name;
	call.conninfo = master->conninfo;
	call.action = "fault_check";
	call.payload = check_payload(v);
	call.payload_len = strlen(call.payload);
	eid = v->master_ephemeral_id;
	check_round(&call, 1, timeout_ms, &out, &eid);
	c = checked_get(master->name, eid);
	c->seen = true;
	if (out == CHECK_OK)
	{
		c->failures = 0;
		return;
	}
	c->failures++;
	if (out != CHECK_GONE && c->failures < retries)
		return;
	ereport(LOG,
			(errmsg("search_engine: master [%s] failed %d leader check(s) in a row from node [%s]%s: %s",
					master->name, c->failures, v->local_name,
					out == CHECK_GONE ? " (gone: counts at once)" : "",
					call.ok ? "another process answered under its name"
					: (call.err.reason ? call.err.reason : call.err.type))));
	c->failures = 0;
	LWLockAcquire(&SeCluster->lock, LW_EXCLUSIVE);
	SeCluster->depose_term = v->term;
	procno = SeCluster->worker_procno;
	LWLockRelease(&SeCluster->lock);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

void
se_fault_detection_register(void)
{
	if (se_cluster_single_node() || !(se_node_roles_local() & SE_NODE_ROLE_MASTER))
		return;
	se_bgw_register("se_fault_detection_main", "search_engine fault detection", 1, false);
}

void
se_fault_detection_main(Datum arg)
{
	MemoryContext loop_cxt;

	se_bgw_start();
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine fault detection loop",
									 ALLOCSET_DEFAULT_SIZES);
	while (se_bgw_loop_top())
	{
		SeClusterView *v;
		const SeClusterState *st;
		TimestampTz start = GetCurrentTimestamp();
		int64		interval_ms;
		long		wait_ms;

		MemoryContextSwitchTo(loop_cxt);
		v = palloc(sizeof(SeClusterView));
		se_cluster_view(v);
		st = se_state_current();
		if (v->acting_master)
		{
			interval_ms = se_csettings_time_ms(&st->persistent, &st->transient,
											   "cluster.fault_detection.follower_check.interval");
			follower_checks(v, st);
		}
		else
		{
			interval_ms = se_csettings_time_ms(&st->persistent, &st->transient,
											   "cluster.fault_detection.leader_check.interval");
			leader_check(v, st);
		}
		checked_sweep();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(loop_cxt);
		/* the next round an interval after this one began */
		wait_ms = (long) interval_ms -
			(long) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
		if (wait_ms > 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
	proc_exit(0);
}
