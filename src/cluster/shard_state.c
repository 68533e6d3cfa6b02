/*-------------------------------------------------------------------------
 *
 * shard_state.c
 *	  Data nodes tell the master that a shard copy started or failed;
 *	  the master commits it to the routing table (ES's ShardStateAction).
 *
 * When the master places a shard copy it writes it INITIALIZING with a
 * fresh allocation id (state_sync.c).  The data node applies that, its
 * write worker opens the shard (recovering it from its translog), and the
 * slot moves to STARTED or FAILED.  This node's shard-state worker sees
 * the move and sends the master "shard_started" (or "shard_failed", with
 * the failure) naming the index uuid, shard and allocation id; the master
 * checks the report against its current state -- a copy that is not there
 * any more, or holds another allocation id, is a stale report and is
 * ignored -- and commits the copy STARTED (or UNASSIGNED, with ES's
 * unassigned_info) through the same compared, fenced commit as every
 * other change.
 *
 * The worker is a process of its own (registered on data and
 * master-eligible nodes of a cluster; on the acting master it also commits
 * the reroutes that no request causes: membership changes, disk figures,
 * delayed allocation) because a report waits on the network and on the master's
 * commit, which neither a write worker nor the coordinator may do.  A
 * report is retried with a backoff (100 ms doubling to 5 s) while there is
 * no master or the call fails, and sent again after a master change while
 * the applied state still does not show it; reports due together go in
 * one request, which the master commits as one change.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "utils/memutils.h"
#include "common/hashfn.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/state_int.h"
#include "node/node.h"
#include "replication/replication.h"
#include "replication/recovery.h"
#include "transport/transport.h"

#define REPORT_TIMEOUT_MS	10000
#define BACKOFF_FIRST_MS	100
#define BACKOFF_MAX_MS		5000
/* an acknowledged report not yet in the applied state is sent again after */
#define RESEND_MS			10000

/* ---------- the master's side ---------- */

typedef struct ShardReport
{
	const char *index_uuid;
	int			shard;
	const char *allocation_id;
	const char *message;		/* shard_failed: why */
	int64		primary_term;	/* a primary's report: its term (0: none) */
} ShardReport;

typedef struct ReportArgs
{
	bool		failed;			/* shard_failed, else shard_started */
	const char *node;			/* the reporting node */
	int			nreports;
	ShardReport *reports;
	int			applied;		/* out: reports that changed the state */
} ReportArgs;

/*
 * Apply the reports that still match the state: the copy of that index
 * (by uuid), shard and allocation id, on the reporting node -- or, for a
 * failure, a replica failed by its primary's node (a write it could not
 * replicate).  Others are stale (the index was deleted or re-created, the
 * copy moved, failed or was reopened since) and change nothing.  A
 * started copy joins the shard's in-sync set; a failed one leaves it,
 * committed before the master answers, so that a primary waiting on the
 * answer acknowledges a write only once the copy that missed it is out.
 */
static bool
mutate_reports(SeClusterState *st, void *arg, SeError *err)
{
	ReportArgs *a = arg;
	int			i,
				k;

	a->applied = 0;
	for (i = 0; i < a->nreports; i++)
	{
		const ShardReport *r = &a->reports[i];
		SeIndexMeta *im = se_state_find_uuid(st, r->index_uuid);
		SeShardRouting *rt;
		SeShardCopy *c = NULL;

		/* a closed index's copies report too: their files were recovered */
		if (im == NULL || im->routing == NULL ||
			r->shard < 0 || r->shard >= im->settings.number_of_shards)
			continue;
		rt = &im->routing[r->shard];

		/*
		 * A primary failing a replica it could not reach: if it is not the
		 * primary of that term any more (promoted away, or its node
		 * removed), it must not acknowledge the write (ES's
		 * NoLongerPrimaryShardException) -- ignoring the report as stale
		 * would let an old primary acknowledge what only it holds.
		 */
		if (a->failed && r->primary_term > 0 &&
			(rt->primary_term > r->primary_term ||
			 rt->copies[0].state == SE_SHARD_UNASSIGNED ||
			 strcmp(rt->copies[0].node, a->node) != 0))
		{
			se_error_set(err, 500, "no_longer_primary_shard_exception",
						 "[%s][%d] node [%s] is no longer the primary of primary term [" INT64_FORMAT "] (current term [" INT64_FORMAT "])",
						 im->name, r->shard, a->node, r->primary_term, rt->primary_term);
			return false;
		}

		/*
		 * A relocation's target: started, it takes the moving copy's place
		 * (ES: the source is removed, the target STARTED, same primary
		 * term); failed (on its node, or reported by the primary that
		 * replicated to it), the move is cancelled and the copy stays.
		 */
		k = se_routing_relocation_of(rt, a->node, r->allocation_id);
		if (k < 0 && a->failed && rt->copies[0].state != SE_SHARD_UNASSIGNED &&
			strcmp(rt->copies[0].node, a->node) == 0)
		{
			for (k = rt->ncopies - 1; k >= 0; k--)
				if (se_routing_relocating(&rt->copies[k]) &&
					strcmp(rt->copies[k].relocation_id, r->allocation_id) == 0)
					break;
		}
		if (k >= 0)
		{
			if (a->failed)
				se_routing_relocation_cancel(rt, k);
			else
				se_routing_relocation_done(rt, k);
			se_state_routing_derive(im);
			a->applied++;
			continue;
		}
		for (k = 0; k < rt->ncopies; k++)
		{
			c = &rt->copies[k];
			if (c->state != SE_SHARD_UNASSIGNED &&
				strcmp(c->allocation_id, r->allocation_id) == 0 &&
				(strcmp(c->node, a->node) == 0 ||
				 (a->failed && k > 0 && rt->copies[0].state != SE_SHARD_UNASSIGNED &&
				  strcmp(rt->copies[0].node, a->node) == 0)))
				break;
		}
		if (k == rt->ncopies)
			continue;
		if (!a->failed && c->state == SE_SHARD_INITIALIZING)
		{
			c->state = SE_SHARD_STARTED;
			c->unassigned_reason = NULL;
			c->unassigned_details = NULL;
			c->unassigned_at = 0;
			c->failed_attempts = 0;
			se_routing_in_sync_add(rt, c->allocation_id);
			a->applied++;
		}
		else if (a->failed)
		{
			int			attempts = c->state == SE_SHARD_INITIALIZING ? c->failed_attempts + 1 : 1;

			se_state_unassign_copy(im, r->shard, k, "ALLOCATION_FAILED",
								   psprintf("failed shard on node [%s]: %s", c->node,
											r->message ? r->message : "shard failure"));
			c->failed_attempts = attempts;
			se_state_routing_derive(im);
			a->applied++;
		}
	}
	return true;
}

static const char *
json_str(const SeJson *obj, const char *key)
{
	const SeJson *v = se_json_get(obj, key);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

/*
 * Transport actions "shard_started" and "shard_failed" (on the master):
 * {"node": n, "shards": [{"index_uuid", "shard", "allocation_id",
 * "message", "primary_term" (a primary's report of its replica)}]}.  Answers {"revision", "applied"} once committed; a node
 * that is not the acting master refuses, and the sender tries again.
 */
static bool
shard_report_action(const char *payload, size_t len, StringInfo reply, SeError *err,
					bool failed)
{
	SeJsonParseOptions opts = {8, false};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	const SeJson *shards = j ? se_json_get(j, "shards") : NULL;
	SeClusterView *v = palloc(sizeof(SeClusterView));
	ReportArgs	a;
	int			i;

	if (j == NULL || json_str(j, "node") == NULL || shards == NULL ||
		shards->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard state report");
		return false;
	}
	se_cluster_view(v);
	if (failed && se_debug_fault("shard_failed"))
	{
		se_error_set(err, 503, "master_not_discovered_exception",
					 "node [%s] cannot apply shard failures now (debug fault)", v->local_name);
		return false;
	}
	if (v->single_node || !v->acting_master)
	{
		se_error_set(err, 503, "not_master_exception",
					 "node [%s] is not the master, cannot apply shard state reports",
					 v->local_name);
		return false;
	}
	memset(&a, 0, sizeof(a));
	a.failed = failed;
	a.node = json_str(j, "node");
	a.reports = palloc0(sizeof(ShardReport) * Max(1, shards->u.a.count));
	for (i = 0; i < shards->u.a.count; i++)
	{
		const SeJson *e = shards->u.a.items[i];
		const SeJson *sh = se_json_get(e, "shard");
		ShardReport *r = &a.reports[a.nreports];

		r->index_uuid = json_str(e, "index_uuid");
		r->allocation_id = json_str(e, "allocation_id");
		r->message = json_str(e, "message");
		if (r->index_uuid == NULL || r->allocation_id == NULL || sh == NULL ||
			sh->type != SE_JSON_NUMBER)
			continue;
		r->shard = (int) sh->u.n.i;
		{
			const SeJson *pt = se_json_get(e, "primary_term");

			r->primary_term = pt && pt->type == SE_JSON_NUMBER ? pt->u.n.i : 0;
		}
		a.nreports++;
	}
	if (!se_state_commit(mutate_reports, &a, err))
		return false;
	LWLockAcquire(&SeCluster->lock, LW_SHARED);
	appendStringInfo(reply, "{\"revision\":" INT64_FORMAT ",\"applied\":%d}",
					 SeCluster->applied_revision, a.applied);
	LWLockRelease(&SeCluster->lock);
	return true;
}

static bool
shard_started_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	return shard_report_action(payload, len, reply, err, false);
}

static bool
shard_failed_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	return shard_report_action(payload, len, reply, err, true);
}

void
se_shard_state_register_actions(void)
{
	se_transport_register("shard_started", shard_started_action);
	se_transport_register("shard_failed", shard_failed_action);
}

/* ---------- the data node's side: the shard-state worker ---------- */

/* A report this node owes the master, and when it is next due. */
typedef struct Pending
{
	char		index_uuid[SE_UUID_LEN + 1];
	int			shard;
	char		allocation_id[SE_UUID_LEN + 1];
	bool		failed;
	char		message[256];
	bool		seen;			/* still owed at this scan */
	bool		in_request;		/* in the request being sent */
	int64		sent_term;		/* master's term it was acknowledged in, 0 = never */
	TimestampTz next_at;
	int			backoff_ms;
} Pending;

static Pending *pending = NULL;
static int	npending = 0;
static int	maxpending = 0;

static Pending *
pending_get(const char *uuid, int shard, const char *allocation_id, bool failed)
{
	Pending    *p;
	int			i;

	for (i = 0; i < npending; i++)
	{
		p = &pending[i];
		if (p->shard == shard && p->failed == failed &&
			strcmp(p->index_uuid, uuid) == 0 && strcmp(p->allocation_id, allocation_id) == 0)
			return p;
	}
	if (npending == maxpending)
	{
		maxpending = Max(16, maxpending * 2);
		pending = pending ? repalloc(pending, sizeof(Pending) * maxpending)
			: MemoryContextAlloc(TopMemoryContext, sizeof(Pending) * maxpending);
	}
	p = &pending[npending++];
	memset(p, 0, sizeof(*p));
	strlcpy(p->index_uuid, uuid, sizeof(p->index_uuid));
	p->shard = shard;
	strlcpy(p->allocation_id, allocation_id, sizeof(p->allocation_id));
	p->failed = failed;
	return p;
}

/*
 * A closed index's copies placed here INITIALIZING (a replica, a moving
 * copy's target) have no slot and are never opened: their files are
 * copied from the primary's node by a recovery this worker starts
 * (se_recovery_closed_copy), once that primary is STARTED; the copy is
 * owed started when its files are in place, failed when the recovery
 * failed for good.
 */
static void
scan_closed(const SeIndexMeta *im)
{
	int			s;

	for (s = 0; s < im->settings.number_of_shards; s++)
	{
		const SeShardCopy *c = se_state_local_copy(im, s);
		const SeShardCopy *primary = &im->routing[s].copies[0];
		char		failure[256];
		Pending    *p;
		int			done;

		if (c == NULL || c->primary || c->state != SE_SHARD_INITIALIZING ||
			primary->state != SE_SHARD_STARTED)
			continue;
		done = se_recovery_closed_copy(im->uuid, s, c->allocation_id, primary->node,
									   failure, sizeof(failure));
		if (done == 0)
			continue;
		p = pending_get(im->uuid, s, c->allocation_id, done < 0);
		if (done < 0)
			strlcpy(p->message, failure, sizeof(p->message));
		p->seen = true;
	}
}

/*
 * The reports owed now: every copy the applied state places on this node
 * as INITIALIZING whose slot started, and every assigned copy whose slot
 * failed (but for a full disk, which the owner retries by itself).
 */
static void
scan_owed(void)
{
	const SeClusterState *st = se_state_current();
	int			i,
				s;

	for (i = 0; i < npending; i++)
		pending[i].seen = false;
	for (i = 0; i < st->nindices; i++)
	{
		const SeIndexMeta *im = st->indices[i];

		if (im->routing == NULL)
			continue;
		if (im->closed)
		{
			scan_closed(im);
			continue;
		}
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			const SeShardCopy *c = se_state_local_copy(im, s);
			int			slot;
			int			state;
			Pending    *p;

			if (c == NULL)
				continue;
			slot = se_slot_find(im->uuid, s);
			if (slot < 0)
				continue;
			state = SeSlots[slot].state;
			/* a replica is started once its peer recovery finalized */
			if (c->state == SE_SHARD_INITIALIZING && state == SE_SLOT_STARTED &&
				!se_recovery_in_progress(slot))
				p = pending_get(im->uuid, s, c->allocation_id, false);
			else if (state == SE_SLOT_FAILED && !SeSlots[slot].failure_disk_full)
			{
				p = pending_get(im->uuid, s, c->allocation_id, true);
				strlcpy(p->message, SeSlots[slot].failure, sizeof(p->message));
			}
			else
				continue;
			p->seen = true;
		}
	}
	/* owed no more (applied, or stale): forget */
	for (i = 0; i < npending;)
	{
		if (!pending[i].seen)
			pending[i] = pending[--npending];
		else
			i++;
	}
}

/* Send the due reports of one kind to the master, in one request. */
static void
send_due(bool failed, const SeClusterView *v, TimestampTz now)
{
	const SeClusterMember *master = NULL;
	StringInfoData payload;
	SeTransportCall call;
	int			n = 0;
	int			i;

	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"node\":");
	se_json_write_string(&payload, v->local_name, -1);
	appendStringInfoString(&payload, ",\"shards\":[");
	for (i = 0; i < npending; i++)
	{
		Pending    *p = &pending[i];

		p->in_request = false;
		/* due: a new master has not heard it, or its (re)send time came */
		if (p->failed != failed ||
			!((p->sent_term != 0 && p->sent_term != v->term) || now >= p->next_at))
			continue;
		appendStringInfo(&payload, "%s{\"index_uuid\":\"%s\",\"shard\":%d,\"allocation_id\":\"%s\"",
						 n ? "," : "", p->index_uuid, p->shard, p->allocation_id);
		if (failed)
		{
			appendStringInfoString(&payload, ",\"message\":");
			se_json_write_string(&payload, p->message, -1);
		}
		appendStringInfoChar(&payload, '}');
		p->in_request = true;
		n++;
	}
	appendStringInfoString(&payload, "]}");
	if (n == 0)
		return;
	master = se_cluster_view_master(v);
	memset(&call, 0, sizeof(call));
	if (master)
	{
		call.node = master->name;
		call.conninfo = master->conninfo;
		call.action = failed ? "shard_failed" : "shard_started";
		call.payload = payload.data;
		call.payload_len = payload.len;
		se_transport_call_each(&call, 1, REPORT_TIMEOUT_MS);
	}
	now = GetCurrentTimestamp();
	for (i = 0; i < npending; i++)
	{
		Pending    *p = &pending[i];

		if (!p->in_request)
			continue;
		if (master && call.ok)
		{
			p->sent_term = v->term;
			p->backoff_ms = 0;
			p->next_at = TimestampTzPlusMilliseconds(now, RESEND_MS);
		}
		else
		{
			p->sent_term = 0;
			p->backoff_ms = p->backoff_ms == 0 ? BACKOFF_FIRST_MS
				: Min(p->backoff_ms * 2, BACKOFF_MAX_MS);
			p->next_at = TimestampTzPlusMilliseconds(now, p->backoff_ms);
		}
	}
	if (master && !call.ok)
		ereport(DEBUG1,
				(errmsg("search_engine: [%s] to master [%s] failed: %s",
						failed ? "shard_failed" : "shard_started", master->name,
						call.err.reason ? call.err.reason : call.err.type)));
}

/* Milliseconds until the next report is due (at most 1 s). */
static long
next_due_ms(const SeClusterView *v, TimestampTz now)
{
	long		ms = 1000;
	int			i;

	for (i = 0; i < npending; i++)
	{
		const Pending *p = &pending[i];
		long		left;

		if (p->sent_term != 0 && p->sent_term != v->term)
			return 0;			/* a new master has not heard it */
		left = (long) ((p->next_at - now) / 1000);
		ms = Min(ms, Max(left, 0));
	}
	return ms;
}

/* ---------- the master's side: reroutes of its own ---------- */

#define REROUTE_EVERY_MS	5000

static bool
mutate_nothing(SeClusterState *st, void *arg, SeError *err)
{
	return true;
}

/*
 * On the acting master: commit a reroute when the data members changed
 * (a node left: its copies are unassigned; one came: copies wait for it)
 * and every REROUTE_EVERY_MS (disk figures for the watermarks, delayed
 * allocation).  se_state_commit reroutes after its (empty) change and
 * writes only what the reroute changed.
 */
static void
master_reroute(const SeClusterView *v, TimestampTz now)
{
	static uint32 last_members = 0;
	static TimestampTz next_at = 0;
	uint32		members = 0;
	SeError		err;
	int			i;

	if (!v->acting_master)
	{
		last_members = 0;
		return;
	}
	for (i = 0; i < v->nmembers; i++)
		if (v->members[i].roles & SE_NODE_ROLE_DATA)
			members = members * 31 + hash_bytes((const unsigned char *) v->members[i].name,
												strlen(v->members[i].name));
	members = members * 31 + v->nmembers + 1;
	if (members == last_members && now < next_at)
		return;
	last_members = members;
	next_at = TimestampTzPlusMilliseconds(now, REROUTE_EVERY_MS);
	se_error_init(&err);
	if (!se_state_commit(mutate_nothing, NULL, &err))
		ereport(DEBUG1,
				(errmsg("search_engine: reroute on master [%s] failed: %s", v->local_name,
						err.reason ? err.reason : err.type)));
}

void
se_shard_state_register(void)
{
	if (se_cluster_single_node() ||
		!(se_node_roles_local() & (SE_NODE_ROLE_DATA | SE_NODE_ROLE_MASTER)))
		return;
	se_bgw_register("se_shard_state_main", "search_engine shard state", 1, false);
}

void
se_shard_state_main(Datum arg)
{
	MemoryContext loop_cxt;

	se_bgw_start();
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine shard state loop",
									 ALLOCSET_DEFAULT_SIZES);
	while (se_bgw_loop_top())
	{
		SeClusterView *v;
		long		wait_ms;

		MemoryContextSwitchTo(loop_cxt);
		/* slot moves broadcast slot_cv: be on it before looking at them */
		ConditionVariablePrepareToSleep(&SeShmem->slot_cv);
		v = palloc(sizeof(SeClusterView));
		se_cluster_view(v);
		scan_owed();
		send_due(false, v, GetCurrentTimestamp());
		send_due(true, v, GetCurrentTimestamp());
		master_reroute(v, GetCurrentTimestamp());
		se_replication_maintain();	/* resyncs, idle global checkpoint syncs */
		wait_ms = next_due_ms(v, GetCurrentTimestamp());
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(loop_cxt);
		if (wait_ms > 0)
			(void) ConditionVariableTimedSleep(&SeShmem->slot_cv, wait_ms, PG_WAIT_EXTENSION);
		ConditionVariableCancelSleep();
	}
	proc_exit(0);
}
