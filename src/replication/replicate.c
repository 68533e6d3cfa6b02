/*-------------------------------------------------------------------------
 *
 * replicate.c
 *	  Write replication, primary to replicas (ES's ReplicationOperation and
 *	  TransportReplicationAction, over our transport).
 *
 * Primary side.  The bulk coordinator's backend on the primary's node
 * waits for the owners to apply and fsync a round of sub-requests; then,
 * before it answers, se_replication_replicate_round sends each shard's new
 * operations -- read back from the translog the owner just wrote, as the
 * same records -- to the shard's copies: the in-sync ones of the routing
 * and those a running peer recovery tracks (the slot's target table).  One
 * replica_ops call per node carries every shard for that node, all nodes
 * in parallel.  Replication runs in the coordinating backend, never in the
 * write worker: a worker waiting on another node's worker, which waits on
 * ours, would deadlock.  Operations of concurrent rounds therefore reach a
 * replica out of order, which the engine's checkpoint tracker and
 * seq_no-aware apply absorb (engine.c, apply_sequenced).
 *
 * A copy that answers 429 (its write queue is full) is retried with a
 * doubling backoff for up to REJECT_RETRY_BOUND_MS; a copy that fails,
 * times out or stays full is reported to the master (shard_failed), which
 * removes it from the in-sync set; only once the master answered is the
 * round acknowledged.  A master that cannot be reached fails the round's
 * items with 503: never acknowledged without every in-sync copy.  The copy
 * then still lacks what the primary applied, so it stays owed to the
 * master (must_fail): each later round, and the shard-state worker when
 * the shard is idle, report it again -- sending it nothing -- until the
 * master removed it (ES ShardStateAction retries the same way).  A copy
 * that refuses the operations for an older primary term means this copy
 * is no longer the primary: the items fail and nothing is reported.
 *
 * The global checkpoint is the minimum of the local checkpoints of the
 * in-sync copies (the primary's own included) and only moves up; the
 * primary publishes it in the slot and sends it with every replica_ops.
 *
 * Replica side.  The replica_ops action queues each shard's operations to
 * the copy's owner as an SE_REQ_REPLICA request of the node's bounded
 * write queue (full: 429), waits, and answers the copy's local checkpoint
 * after the owner synced its translog.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "replication/replication.h"
#include "shard/bulk_protocol.h"
#include "shard/engine.h"
#include "transport/transport.h"
#include "util/json.h"
#include "util/varint.h"

/* ES's replication timeout is the request's (1m): a copy gets this long */
#define REPLICA_TIMEOUT_MS		30000
#define REJECT_RETRY_FIRST_MS	50
#define REJECT_RETRY_BOUND_MS	10000
#define REPORT_TIMEOUT_MS		10000

/* ---------- the slot's target table ---------- */

/* The entry of allocation_id, or NULL; caller holds repl_mutex. */
static SeReplTarget *
find_target(SeShardSlot *s, const char *allocation_id)
{
	int			i;

	for (i = 0; i < s->repl_ntargets; i++)
		if (strcmp(s->repl_targets[i].allocation_id, allocation_id) == 0)
			return &s->repl_targets[i];
	return NULL;
}

/* The entry of allocation_id, made if missing; NULL when full.  Holds repl_mutex. */
static SeReplTarget *
get_target(SeShardSlot *s, const char *allocation_id, const char *node)
{
	SeReplTarget *t = find_target(s, allocation_id);

	if (t == NULL)
	{
		int			i;

		/* full: a copy reported failed is skipped anyway; its entry goes */
		for (i = 0; i < s->repl_ntargets && s->repl_ntargets == SE_REPL_MAX_TARGETS; i++)
			if (s->repl_targets[i].failed)
			{
				s->repl_targets[i] = s->repl_targets[--s->repl_ntargets];
				break;
			}
	}
	if (t == NULL && s->repl_ntargets < SE_REPL_MAX_TARGETS)
	{
		t = &s->repl_targets[s->repl_ntargets++];
		memset(t, 0, sizeof(*t));
		strlcpy(t->allocation_id, allocation_id, sizeof(t->allocation_id));
		t->local_checkpoint = -1;
	}
	if (t && node)
		strlcpy(t->node, node, sizeof(t->node));
	return t;
}

/* Does a copy of s still owe the master its failure?  Holds repl_mutex. */
static bool
any_must_fail(SeShardSlot *s)
{
	int			i;

	for (i = 0; i < s->repl_ntargets; i++)
		if (s->repl_targets[i].must_fail && !s->repl_targets[i].failed)
			return true;
	return false;
}

/* how long a target may be missing from the routing before its entry goes */
#define SE_REPL_ABSENT_DROP_MS	30000

/* Does routing rt hold the copy allocation_id (or relocate to it)? */
static bool
copy_routed(const SeShardRouting *rt, const char *allocation_id)
{
	int			k;

	for (k = 0; k < rt->ncopies; k++)
		if (strcmp(rt->copies[k].allocation_id, allocation_id) == 0 ||
			strcmp(rt->copies[k].relocation_id, allocation_id) == 0)
			return true;
	return false;
}

/*
 * Drop the entries of copies the routing no longer has (removed, failed,
 * a cancelled relocation's target): otherwise a primary that outlives
 * many copies fills its table of SE_REPL_MAX_TARGETS and can track no
 * new recovery, and it keeps sending operations to copies that are gone.
 * A copy this node's routing showed and no longer shows is gone; one it
 * never showed counts as gone only after SE_REPL_ABSENT_DROP_MS, so this
 * node applying the state a little after the copy's node cannot drop a
 * copy that is just starting its recovery.
 */
static void
prune_targets(SeShardSlot *s, const SeIndexMeta *im)
{
	const SeShardRouting *rt;
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	if (im == NULL || im->routing == NULL || s->shard >= im->settings.number_of_shards)
		return;
	rt = &im->routing[s->shard];
	SpinLockAcquire(&s->repl_mutex);
	for (i = 0; i < s->repl_ntargets;)
	{
		SeReplTarget *t = &s->repl_targets[i];

		if (copy_routed(rt, t->allocation_id))
		{
			t->seen = true;
			t->absent_since = 0;
		}
		else if (t->absent_since == 0 && !t->seen)
			t->absent_since = now;
		else if (t->seen ||
				 TimestampDifferenceExceeds(t->absent_since, now, SE_REPL_ABSENT_DROP_MS))
		{
			s->repl_targets[i] = s->repl_targets[--s->repl_ntargets];
			continue;
		}
		i++;
	}
	SpinLockRelease(&s->repl_mutex);
}

/* Does this node's applied routing of slot s's shard show allocation_id? */
static bool
routed_here(SeShardSlot *s, const char *allocation_id)
{
	const SeIndexMeta *im = se_state_find_uuid(se_state_current(), s->index_uuid);

	return im != NULL && im->routing != NULL && s->shard < im->settings.number_of_shards &&
		copy_routed(&im->routing[s->shard], allocation_id);
}

void
se_replication_track(int slot, const char *allocation_id, const char *node)
{
	SeShardSlot *s = &SeSlots[slot];
	SeReplTarget *t;

	/*
	 * A copy this node's routing already shows counts as seen now, not only
	 * when prune_targets next runs: a copy that came and went between two of
	 * its runs (the shard-state worker can be busy for seconds) would
	 * otherwise hold its entry for SE_REPL_ABSENT_DROP_MS, and a primary
	 * whose replicas are added and removed quickly would fill its table.
	 */
	bool		routed = routed_here(s, allocation_id);

	SpinLockAcquire(&s->repl_mutex);
	t = get_target(s, allocation_id, node);
	if (t)
	{
		t->tracked = true;
		t->failed = false;
		if (routed)
		{
			t->seen = true;
			t->absent_since = 0;
		}
	}
	SpinLockRelease(&s->repl_mutex);
	if (t == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("shard [%s][%d] has %d replication targets already",
						s->index_uuid, s->shard, SE_REPL_MAX_TARGETS),
				 errdetail("illegal_state_exception")));
}

void
se_replication_untrack(int slot, const char *allocation_id)
{
	SeShardSlot *s = &SeSlots[slot];
	SeReplTarget *t;

	SpinLockAcquire(&s->repl_mutex);
	t = find_target(s, allocation_id);
	if (t)
		*t = s->repl_targets[--s->repl_ntargets];
	SpinLockRelease(&s->repl_mutex);
}

void
se_replication_mark_in_sync(int slot, const char *allocation_id)
{
	SeShardSlot *s = &SeSlots[slot];
	SeReplTarget *t;

	SpinLockAcquire(&s->repl_mutex);
	t = find_target(s, allocation_id);
	if (t)
		t->in_sync = true;
	SpinLockRelease(&s->repl_mutex);
}

int64
se_replication_target_checkpoint(int slot, const char *allocation_id)
{
	SeShardSlot *s = &SeSlots[slot];
	SeReplTarget *t;
	int64		v = -1;

	SpinLockAcquire(&s->repl_mutex);
	t = find_target(s, allocation_id);
	if (t)
		v = t->local_checkpoint;
	SpinLockRelease(&s->repl_mutex);
	return v;
}

/* Raise the slot's global checkpoint to v (it never goes down). */
static void
raise_global_checkpoint(SeShardSlot *s, int64 v)
{
	uint64		cur = pg_atomic_read_u64(&s->global_checkpoint);

	while ((int64) cur < v &&
		   !pg_atomic_compare_exchange_u64(&s->global_checkpoint, &cur, (uint64) v))
		;
}

/* ---------- the replica's side ---------- */

/* One shard's operations queued to this node's owner of the copy. */
typedef struct LocalApply
{
	int			slot;
	dsm_segment *seg;
	SeReplicaRequest *rq;
	bool		done;
	SeError		err;
	int64		local_checkpoint;
} LocalApply;

/* Queue la's operations to the copy's owner; false with la->err when refused. */
static bool
local_submit(LocalApply *la, const char *uuid, int shard, const char *allocation_id,
			 int64 primary_term, int64 global_checkpoint, bool refresh,
			 const char *ops, size_t len)
{
	SeEnqueueResult why;
	int			e = se_queue_reserve(la->slot, SE_REQ_REPLICA, len, &why);
	Size		off = MAXALIGN(sizeof(SeReplicaRequest));
	SeReplicaRequest *rq;

	if (e < 0)
	{
		/* the replica's write pool is full: ES answers the primary 429 too */
		se_error_set(&la->err, 429, "es_rejected_execution_exception",
					 why == SE_ENQUEUE_REJECTED_QUEUE
					 ? "rejected execution of replica operations on the [write] queue of node [%s] (queue capacity = %d)"
					 : "rejected execution of replica operations on node [%s]: indexing pressure over the limit (%d)",
					 se_node_name_get(), why == SE_ENQUEUE_REJECTED_QUEUE
					 ? se_write_queue_size : se_indexing_pressure_limit_kb);
		la->done = true;
		return false;
	}
	PG_TRY();
	{
		la->seg = dsm_create(off + Max(len, 1), 0);
	}
	PG_CATCH();
	{
		se_queue_cancel_reserved(e);
		PG_RE_THROW();
	}
	PG_END_TRY();
	rq = la->rq = dsm_segment_address(la->seg);
	memset(rq, 0, sizeof(*rq));
	rq->magic = SE_REPLICA_MAGIC;
	pg_atomic_init_u32(&rq->state, SE_SUB_PENDING);
	strlcpy(rq->index_uuid, uuid, sizeof(rq->index_uuid));
	rq->shard = shard;
	strlcpy(rq->allocation_id, allocation_id ? allocation_id : "", sizeof(rq->allocation_id));
	rq->primary_term = primary_term;
	rq->global_checkpoint = global_checkpoint;
	rq->refresh = refresh;
	rq->ops_off = off;
	rq->ops_len = len;
	rq->taker = -1;
	memcpy((char *) rq + off, ops, len);
	se_queue_submit_reserved(e, dsm_segment_handle(la->seg), 0);
	return true;
}

/* Wait for every submitted request of las[0..n). */
static void
local_wait(LocalApply *las, int n)
{
	for (;;)
	{
		bool		all = true;
		int			i;

		for (i = 0; i < n; i++)
		{
			LocalApply *la = &las[i];
			uint32		st;

			if (la->done)
				continue;
			st = pg_atomic_read_u32(&la->rq->state);
			if (st == SE_SUB_PENDING)
			{
				if (la->rq->taker >= 0 &&
					SeShmem->workers[la->rq->taker].generation != la->rq->taker_generation)
					se_error_set(&la->err, 500, "shard_failed_exception",
								 "the write worker owning the shard exited while applying replica operations");
				else
				{
					all = false;
					continue;
				}
			}
			else
			{
				pg_read_barrier();
				if (st == SE_SUB_DONE)
					la->local_checkpoint = la->rq->local_checkpoint;
				else
					se_error_set(&la->err, la->rq->failure_status ? la->rq->failure_status : 500,
								 pstrdup(la->rq->failure_type), "%s", la->rq->failure);
			}
			la->done = true;
			dsm_detach(la->seg);
			la->seg = NULL;
		}
		if (all)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		se_check_wait_interrupts();
	}
}

bool
se_replication_apply_local(int slot, const char *allocation_id, int64 primary_term,
						   int64 global_checkpoint, const char *ops, size_t len,
						   int64 *local_checkpoint, SeError *err)
{
	LocalApply	la;

	memset(&la, 0, sizeof(la));
	se_error_init(&la.err);
	la.slot = slot;
	if (local_submit(&la, SeSlots[slot].index_uuid, SeSlots[slot].shard, allocation_id,
					 primary_term, global_checkpoint, false, ops, len))
		local_wait(&la, 1);
	if (se_error_is_set(&la.err))
	{
		*err = la.err;
		return false;
	}
	*local_checkpoint = la.local_checkpoint;
	return true;
}

/*
 * Wire format of replica_ops: u32 count, then per shard u32 header length,
 * the JSON header {"index_uuid", "shard", "allocation_id", "primary_term",
 * "global_checkpoint", "refresh"}, u64 ops length, the ops (translog records).  The
 * reply: {"results": [{"local_checkpoint": n} | {"status", "type",
 * "reason"}, ...]} in the same order.
 */
typedef struct WireEntry
{
	const char *uuid;
	int			shard;
	const char *allocation_id;
	int64		primary_term;
	int64		global_checkpoint;
	bool		refresh;
	const char *ops;
	size_t		len;
} WireEntry;

static void
wire_put_entry(StringInfo out, const WireEntry *w)
{
	StringInfoData h;

	initStringInfo(&h);
	appendStringInfoString(&h, "{\"index_uuid\":");
	se_json_write_string(&h, w->uuid, -1);
	appendStringInfo(&h, ",\"shard\":%d,\"allocation_id\":", w->shard);
	se_json_write_string(&h, w->allocation_id, -1);
	appendStringInfo(&h, ",\"primary_term\":" INT64_FORMAT ",\"global_checkpoint\":" INT64_FORMAT
					 ",\"refresh\":%s}", w->primary_term, w->global_checkpoint,
					 w->refresh ? "true" : "false");
	se_put_u32(out, (uint32) h.len);
	appendBinaryStringInfo(out, h.data, h.len);
	se_put_u64(out, (uint64) w->len);
	appendBinaryStringInfo(out, w->ops, w->len);
	pfree(h.data);
}

static int64
json_int(const SeJson *o, const char *key, int64 dflt)
{
	const SeJson *v = o ? se_json_get(o, key) : NULL;

	return v && v->type == SE_JSON_NUMBER && v->u.n.is_int ? v->u.n.i : dflt;
}

static const char *
json_str(const SeJson *o, const char *key)
{
	const SeJson *v = o ? se_json_get(o, key) : NULL;

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

static bool
replica_ops_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	const uint8 *p = (const uint8 *) payload;
	const uint8 *end = p + len;
	uint32		n;
	uint32		i;
	WireEntry  *ws;
	LocalApply *las;

	if (len < 4)
		goto malformed;
	if (se_debug_fault("replica_ops"))
	{
		se_error_set(err, 500, "shard_failed_exception",
					 "node [%s] failed replica operations (debug fault)", se_node_name_get());
		return false;
	}
	n = se_read_u32(p);
	p += 4;
	if (n > 4096)
		goto malformed;
	ws = palloc0(sizeof(WireEntry) * Max(n, 1));
	las = palloc0(sizeof(LocalApply) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		uint32		hl;
		uint64		ol;
		SeJsonParseOptions opts = {0};
		SeJson	   *h;

		if (end - p < 4)
			goto malformed;
		hl = se_read_u32(p);
		p += 4;
		if (hl > (uint64) (end - p))
			goto malformed;
		h = se_json_parse((const char *) p, hl, &opts, err);
		p += hl;
		if (h == NULL || json_str(h, "index_uuid") == NULL || json_str(h, "allocation_id") == NULL)
			goto malformed;
		if (end - p < 8)
			goto malformed;
		ol = se_read_u64(p);
		p += 8;
		if (ol > (uint64) (end - p))
			goto malformed;
		ws[i].uuid = json_str(h, "index_uuid");
		ws[i].shard = (int) json_int(h, "shard", -1);
		ws[i].allocation_id = json_str(h, "allocation_id");
		ws[i].primary_term = json_int(h, "primary_term", 0);
		ws[i].global_checkpoint = json_int(h, "global_checkpoint", -1);
		ws[i].refresh = se_json_get(h, "refresh") && se_json_get(h, "refresh")->type == SE_JSON_TRUE;
		ws[i].ops = (const char *) p;
		ws[i].len = ol;
		p += ol;
	}

	/* every shard to its owner first, then wait: the owners work in parallel */
	for (i = 0; i < n; i++)
	{
		LocalApply *la = &las[i];

		se_error_init(&la->err);
		la->slot = se_slot_find(ws[i].uuid, ws[i].shard);
		if (la->slot < 0)
		{
			se_error_set(&la->err, 404, "shard_not_found_exception",
						 "no such shard copy [%s][%d][%s] on node [%s]", ws[i].uuid,
						 ws[i].shard, ws[i].allocation_id, se_node_name_get());
			la->done = true;
			continue;
		}
		(void) local_submit(la, ws[i].uuid, ws[i].shard, ws[i].allocation_id,
							ws[i].primary_term, ws[i].global_checkpoint, ws[i].refresh,
							ws[i].ops, ws[i].len);
	}
	local_wait(las, n);

	appendStringInfoString(reply, "{\"results\":[");
	for (i = 0; i < n; i++)
	{
		LocalApply *la = &las[i];

		if (i > 0)
			appendStringInfoChar(reply, ',');
		if (se_error_is_set(&la->err))
		{
			appendStringInfo(reply, "{\"status\":%d,\"type\":", la->err.status);
			se_json_write_string(reply, la->err.type, -1);
			appendStringInfoString(reply, ",\"reason\":");
			se_json_write_string(reply, la->err.reason ? la->err.reason : "", -1);
			appendStringInfoChar(reply, '}');
		}
		else
			appendStringInfo(reply, "{\"local_checkpoint\":" INT64_FORMAT "}",
							 la->local_checkpoint);
	}
	appendStringInfoString(reply, "]}");
	return true;

malformed:
	se_error_init(err);
	se_error_set(err, 400, "illegal_argument_exception", "malformed replica_ops request");
	return false;
}

void
se_replication_register_actions(void)
{
	se_transport_register("replica_ops", replica_ops_action);
	se_retention_register_actions();
}

/* ---------- the primary's side ---------- */

static void replicate_subs(SeBulkSub *subs, int nsubs, bool empty_ok, bool refresh);

/* One shard's operations of the round to one copy. */
typedef struct Work
{
	SeBulkSub  *sub;
	int			slot;
	char		allocation_id[SE_UUID_LEN + 1];
	char		node[NAMEDATALEN];
	bool		in_sync;
	int			ops_index;		/* into the round's ops buffers */
	/* outcome */
	bool		done;
	bool		ok;
	bool		rejected;		/* 429: retry */
	bool		stale_term;		/* refused: we are not the primary any more */
	bool		must_fail;		/* owed to the master from an earlier round */
	SeError		err;
} Work;

typedef struct RoundOps
{
	StringInfoData buf;
	int64		primary_term;
	int64		global_checkpoint;
} RoundOps;

static void
encode_op(const SeTranslogOp *op, void *arg)
{
	se_translog_encode((StringInfo) arg, op);
}

typedef struct CountOps
{
	int64		n;
	int64		first;
	int64		last;
	bool		ok;
} CountOps;

static void
count_op(const SeTranslogOp *op, void *arg)
{
	CountOps   *c = arg;

	if (op->seq_no != c->first + c->n)
		c->ok = false;
	c->n++;
}

/*
 * The sub-request's operations as translog records: its byte range of
 * the generation the owner wrote them to (checked: the run of seq_nos it
 * assigned), else found by seq_no in the retained generations.
 */
static bool
read_sub_ops(SeBulkSub *sub, StringInfo out)
{
	char	   *dir = psprintf("%s/translog", se_shard_path(sub->index_uuid, sub->shard));
	int64		want = sub->last_seq_no - sub->first_seq_no + 1;

	if (sub->tlog_gen >= 0 &&
		se_translog_read_range(dir, sub->tlog_gen, sub->tlog_start, sub->tlog_end, out))
	{
		CountOps	c = {0, sub->first_seq_no, sub->last_seq_no, true};

		if (se_translog_decode(out->data, out->len, count_op, &c) == (size_t) out->len &&
			c.ok && c.n == want)
			return true;
		resetStringInfo(out);
	}
	return se_translog_read_ops(dir, sub->first_seq_no, sub->last_seq_no, encode_op, out) == want;
}

static void
sub_fail(SeBulkSub *sub, int status, const char *type, const char *msg)
{
	sub->failure_status = status;
	strlcpy(sub->failure_type, type, sizeof(sub->failure_type));
	strlcpy(sub->failure, msg, sizeof(sub->failure));
	pg_write_barrier();
	pg_atomic_write_u32(&sub->state, SE_SUB_FAILED);
}

/* The copies shard s of im replicates to now, as Work items appended to *works. */
static void
add_targets(SeBulkSub *sub, const SeIndexMeta *im, int ops_index, Work **works,
			int *nworks, int *cap)
{
	SeShardSlot *s = &SeSlots[sub->slot];
	List	   *targets = se_state_shard_targets(im, sub->shard);
	char		aids[SE_REPL_MAX_TARGETS * 2][SE_UUID_LEN + 1];
	char		nodes[SE_REPL_MAX_TARGETS * 2][NAMEDATALEN];
	bool		in_sync[SE_REPL_MAX_TARGETS * 2];
	bool		must_fail[SE_REPL_MAX_TARGETS * 2];
	int			n = 0;
	int			i;
	ListCell   *lc;

	SpinLockAcquire(&s->repl_mutex);
	/* the routing's in-sync copies (and initializing ones a recovery tracks) */
	foreach(lc, targets)
	{
		const SeShardCopy *c = lfirst(lc);
		bool		sync;
		SeReplTarget *t;

		if (c->node == NULL || c->node[0] == '\0' || c->allocation_id[0] == '\0' ||
			n >= SE_REPL_MAX_TARGETS)
			continue;
		sync = se_state_in_sync(im, sub->shard, c->allocation_id);
		t = find_target(s, c->allocation_id);
		if (t && t->failed)
			continue;			/* reported: the routing drops it soon */
		if (!sync && !(t && t->tracked))
			continue;
		if (sync && (t = get_target(s, c->allocation_id, c->node)) != NULL)
			t->in_sync = true;
		strlcpy(aids[n], c->allocation_id, SE_UUID_LEN + 1);
		strlcpy(nodes[n], c->node, NAMEDATALEN);
		in_sync[n] = sync;
		must_fail[n] = t && t->must_fail;
		n++;
	}
	/* tracked by a recovery the routing does not show yet */
	for (i = 0; i < s->repl_ntargets; i++)
	{
		SeReplTarget *t = &s->repl_targets[i];
		int			j;

		if (!t->tracked || t->failed)
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(aids[j], t->allocation_id) == 0)
				break;
		if (j < n || n >= lengthof(aids))
			continue;
		strlcpy(aids[n], t->allocation_id, SE_UUID_LEN + 1);
		strlcpy(nodes[n], t->node, NAMEDATALEN);
		in_sync[n] = t->in_sync;
		must_fail[n] = t->must_fail;
		n++;
	}
	SpinLockRelease(&s->repl_mutex);
	for (i = 0; i < n; i++)
	{
		Work	   *w;

		if (*nworks == *cap)
		{
			*cap = Max(8, *cap * 2);
			*works = *works ? repalloc(*works, sizeof(Work) * *cap) : palloc(sizeof(Work) * *cap);
		}
		w = &(*works)[(*nworks)++];
		memset(w, 0, sizeof(*w));
		w->sub = sub;
		w->slot = sub->slot;
		strlcpy(w->allocation_id, aids[i], sizeof(w->allocation_id));
		strlcpy(w->node, nodes[i], sizeof(w->node));
		w->in_sync = in_sync[i];
		w->ops_index = ops_index;
		se_error_init(&w->err);
		if (must_fail[i])
		{
			/* it lacks an earlier round's operations: not sent, reported */
			w->must_fail = true;
			w->done = true;
			se_error_set(&w->err, 500, "replication_failed_exception",
						 "failed an earlier write that the master has not yet been told of");
		}
	}
}

/* Send every not-done work item once: one call per node; fill outcomes. */
static void
send_works(Work *works, int nworks, RoundOps *ops, bool refresh)
{
	char	  **nodes = palloc(sizeof(char *) * Max(nworks, 1));
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * Max(nworks, 1));
	StringInfoData *payloads = palloc0(sizeof(StringInfoData) * Max(nworks, 1));
	int		   *call_of = palloc(sizeof(int) * Max(nworks, 1));
	int		   *counts = palloc0(sizeof(int) * Max(nworks, 1));
	int			ncalls = 0;
	int			i,
				c;

	for (i = 0; i < nworks; i++)
	{
		Work	   *w = &works[i];

		call_of[i] = -1;
		if (w->done)
			continue;
		for (c = 0; c < ncalls; c++)
			if (strcmp(nodes[c], w->node) == 0)
				break;
		if (c == ncalls)
		{
			nodes[c] = w->node;
			initStringInfo(&payloads[c]);
			counts[c] = 0;
			calls[c].node = w->node;
			calls[c].conninfo = se_cluster_conninfo(w->node);
			calls[c].action = "replica_ops";
			initStringInfo(&calls[c].reply);
			se_error_init(&calls[c].err);
			ncalls++;
		}
		call_of[i] = c;
		{
			WireEntry	we;

			we.uuid = w->sub->index_uuid;
			we.shard = w->sub->shard;
			we.allocation_id = w->allocation_id;
			we.primary_term = ops[w->ops_index].primary_term;
			we.global_checkpoint = ops[w->ops_index].global_checkpoint;
			we.refresh = refresh;
			we.ops = ops[w->ops_index].buf.data;
			we.len = ops[w->ops_index].buf.len;
			wire_put_entry(&payloads[c], &we);
			counts[c]++;
		}
	}
	for (c = 0; c < ncalls; c++)
	{
		/* the count goes first */
		StringInfoData full;

		initStringInfo(&full);
		se_put_u32(&full, (uint32) counts[c]);
		appendBinaryStringInfo(&full, payloads[c].data, payloads[c].len);
		pfree(payloads[c].data);
		payloads[c] = full;
	}
	for (c = 0; c < ncalls; c++)
	{
		calls[c].payload = payloads[c].data;
		calls[c].payload_len = payloads[c].len;
	}
	if (ncalls > 0)
		se_transport_call_each(calls, ncalls, REPLICA_TIMEOUT_MS);

	for (c = 0; c < ncalls; c++)
	{
		SeJson	   *res = NULL;
		const SeJson *results = NULL;
		int			k = 0;

		if (calls[c].ok)
		{
			SeJsonParseOptions opts = {0};
			SeError		perr;

			se_error_init(&perr);
			res = se_json_parse(calls[c].reply.data, calls[c].reply.len, &opts, &perr);
			results = res ? se_json_get(res, "results") : NULL;
			if (results && results->type != SE_JSON_ARRAY)
				results = NULL;
		}
		for (i = 0; i < nworks; i++)
		{
			Work	   *w = &works[i];
			const SeJson *r;

			if (call_of[i] != c)
				continue;
			r = results && k < results->u.a.count ? results->u.a.items[k] : NULL;
			k++;
			w->done = true;
			if (!calls[c].ok)
				w->err = calls[c].err;
			else if (r == NULL)
				se_error_set(&w->err, 500, "remote_transport_exception",
							 "[%s][replica_ops] malformed reply", w->node);
			else if (json_str(r, "type") != NULL)
				se_error_set(&w->err, (int) json_int(r, "status", 500),
							 pstrdup(json_str(r, "type")), "%s",
							 json_str(r, "reason") ? json_str(r, "reason") : "");
			else
			{
				SeShardSlot *s = &SeSlots[w->slot];
				SeReplTarget *t;

				w->ok = true;
				SpinLockAcquire(&s->repl_mutex);
				t = find_target(s, w->allocation_id);
				if (t)
					t->local_checkpoint = Max(t->local_checkpoint,
											  json_int(r, "local_checkpoint", -1));
				SpinLockRelease(&s->repl_mutex);
				continue;
			}
			w->rejected = w->err.status == 429;
			w->stale_term = strcmp(w->err.type, "illegal_state_exception") == 0 &&
				w->err.reason && strstr(w->err.reason, "primary term") != NULL;
		}
	}
}

/*
 * Tell the master that the copies of works[] that failed are stale (ES
 * ShardStateAction.remoteShardFailed) and wait for its commit; false if
 * no master answered, or it answered that our primary term is over (ES
 * NoLongerPrimaryShardException: we were replaced, acknowledge nothing).
 */
static bool
report_failed(Work *works, int nworks, const RoundOps *ops, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	const SeClusterMember *master = NULL;
	StringInfoData payload;
	SeTransportCall call;
	int			n = 0;
	int			i;

	se_cluster_view(v);
	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"node\":");
	se_json_write_string(&payload, v->local_name, -1);
	appendStringInfoString(&payload, ",\"shards\":[");
	for (i = 0; i < nworks; i++)
	{
		Work	   *w = &works[i];

		if (w->ok || w->stale_term)
			continue;
		appendStringInfo(&payload, "%s{\"index_uuid\":", n ? "," : "");
		se_json_write_string(&payload, w->sub->index_uuid, -1);
		appendStringInfo(&payload, ",\"shard\":%d,\"primary_term\":" INT64_FORMAT ",\"allocation_id\":",
						 w->sub->shard, ops[w->ops_index].primary_term);
		se_json_write_string(&payload, w->allocation_id, -1);
		appendStringInfoString(&payload, ",\"message\":");
		se_json_write_string(&payload, psprintf("failed to perform indexing on replica on node [%s]: %s",
												w->node, w->err.reason ? w->err.reason : w->err.type), -1);
		appendStringInfoChar(&payload, '}');
		n++;
	}
	appendStringInfoString(&payload, "]}");
	if (n == 0)
		return true;
	master = se_cluster_view_master(v);
	if (master == NULL)
	{
		se_error_set(err, 503, "unavailable_shards_exception",
					 "a replica failed and no master is known to remove it from the in-sync copies");
		return false;
	}
	memset(&call, 0, sizeof(call));
	call.node = master->name;
	call.conninfo = master->conninfo;
	call.action = "shard_failed";
	call.payload = payload.data;
	call.payload_len = payload.len;
	initStringInfo(&call.reply);
	se_error_init(&call.err);
	se_transport_call_each(&call, 1, REPORT_TIMEOUT_MS);
	if (!call.ok)
	{
		se_error_set(err, 503, "unavailable_shards_exception",
					 "a replica failed and the master [%s] could not remove it from the in-sync copies: %s",
					 master->name, call.err.reason ? call.err.reason : call.err.type);
		return false;
	}
	return true;
}

/* The global checkpoint of slot: the in-sync copies' minimum local checkpoint. */
static void
update_global_checkpoint(int slot, const SeIndexMeta *im, int shard)
{
	SeShardSlot *s = &SeSlots[slot];
	int64		gcp = se_slot_read_i64(&s->local_checkpoint);
	List	   *targets = se_state_shard_targets(im, shard);
	ListCell   *lc;
	int			i;

	SpinLockAcquire(&s->repl_mutex);
	foreach(lc, targets)
	{
		const SeShardCopy *c = lfirst(lc);
		SeReplTarget *t;

		if (!se_state_in_sync(im, shard, c->allocation_id))
			continue;
		t = find_target(s, c->allocation_id);
		if (t && t->failed)
			continue;
		gcp = Min(gcp, t ? t->local_checkpoint : -1);
	}
	for (i = 0; i < s->repl_ntargets; i++)
		if (s->repl_targets[i].in_sync && !s->repl_targets[i].failed)
			gcp = Min(gcp, s->repl_targets[i].local_checkpoint);
	SpinLockRelease(&s->repl_mutex);
	raise_global_checkpoint(s, gcp);
}

void
se_replication_replicate_round(SeBulkHeader *hdr)
{
	if (se_cluster_single_node())
		return;
	/* a refresh the bulk asked for happens on the copies too (ES's replica refresh) */
	replicate_subs(hdr->subs, hdr->nsubs, false, hdr->refresh != 0);
}

/*
 * Replicate subs[0..nsubs) (DONE ones) to their shards' copies.  empty_ok:
 * a sub without operations is sent all the same (a resync after a
 * promotion that has nothing to resend still tells the copies the new
 * term; an idle global checkpoint sync carries no operations).  refresh:
 * the copies refresh before they answer.
 */
static void
replicate_subs(SeBulkSub *subs, int nsubs, bool empty_ok, bool refresh)
{
	const SeClusterState *st;
	Work	   *works = NULL;
	int			nworks = 0;
	int			cap = 0;
	RoundOps   *ops;
	int			nops = 0;
	int			s,
				i;
	int			backoff = REJECT_RETRY_FIRST_MS;
	TimestampTz start;
	bool		any_failed = false;
	SeError		rerr;

	st = se_state_current();
	ops = palloc0(sizeof(RoundOps) * Max(nsubs, 1));
	for (s = 0; s < nsubs; s++)
	{
		SeBulkSub  *sub = &subs[s];
		SeIndexMeta *im;
		int			before = nworks;

		if (pg_atomic_read_u32(&sub->state) != SE_SUB_DONE ||
			(sub->first_seq_no < 0 && !empty_ok))
			continue;
		pg_read_barrier();
		im = se_state_find_uuid(st, sub->index_uuid);
		/* no replicas: still a relocation's target, which its recovery tracks */
		if (im == NULL || (im->settings.number_of_replicas == 0 &&
						   se_routing_relocations(&im->routing[sub->shard]) == 0))
			continue;
		add_targets(sub, im, nops, &works, &nworks, &cap);
		if (nworks == before)
			continue;
		initStringInfo(&ops[nops].buf);
		ops[nops].primary_term = SeSlots[sub->slot].primary_term > 0
			? SeSlots[sub->slot].primary_term : im->primary_term;
		ops[nops].global_checkpoint = se_slot_read_i64(&SeSlots[sub->slot].global_checkpoint);
		{
			SeShardSlot *sl = &SeSlots[sub->slot];

			SpinLockAcquire(&sl->repl_mutex);
			sl->gcp_sent = Max(sl->gcp_sent, ops[nops].global_checkpoint);
			SpinLockRelease(&sl->repl_mutex);
		}
		if (sub->first_seq_no >= 0 && !read_sub_ops(sub, &ops[nops].buf))
		{
			/* cannot happen while the translog retains above the global checkpoint */
			sub_fail(sub, 500, "shard_failed_exception",
					 "the operations to replicate are no longer in the primary's translog");
			nworks = before;
			continue;
		}
		nops++;
	}
	if (nworks == 0)
		return;

	/* send; retry copies whose write queue was full, within a bound */
	start = GetCurrentTimestamp();
	for (;;)
	{
		bool		retry = false;

		send_works(works, nworks, ops, refresh);
		for (i = 0; i < nworks; i++)
			if (works[i].rejected &&
				!TimestampDifferenceExceeds(start, GetCurrentTimestamp(), REJECT_RETRY_BOUND_MS))
			{
				works[i].done = false;
				works[i].rejected = false;
				se_error_init(&works[i].err);
				retry = true;
			}
		if (!retry)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 backoff, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		se_check_wait_interrupts();
		backoff = Min(backoff * 2, 1000);
	}

	/* an older term: we were replaced, the items are not acknowledged */
	for (i = 0; i < nworks; i++)
	{
		if (works[i].stale_term)
			sub_fail(works[i].sub, works[i].err.status ? works[i].err.status : 500,
					 works[i].err.type, works[i].err.reason ? works[i].err.reason : "");
		else if (!works[i].ok)
			any_failed = true;
	}
	se_error_init(&rerr);
	if (any_failed)
	{
		if (report_failed(works, nworks, ops, &rerr))
		{
			/* the master removed them: skip them until the routing drops them */
			for (i = 0; i < nworks; i++)
			{
				SeShardSlot *sl = &SeSlots[works[i].slot];
				SeReplTarget *t;

				if (works[i].ok || works[i].stale_term)
					continue;
				ereport(LOG,
						(errmsg("search_engine: replica [%s] of [%s][%d] on node [%s] failed and was removed from the in-sync copies: %s",
								works[i].allocation_id, works[i].sub->index_name,
								works[i].sub->shard, works[i].node,
								works[i].err.reason ? works[i].err.reason : works[i].err.type)));
				SpinLockAcquire(&sl->repl_mutex);
				t = get_target(sl, works[i].allocation_id, works[i].node);
				if (t)
				{
					t->failed = true;
					t->must_fail = false;
					t->tracked = false;
					t->in_sync = false;
				}
				SpinLockRelease(&sl->repl_mutex);
			}
		}
		else
		{
			for (i = 0; i < nworks; i++)
			{
				SeShardSlot *sl = &SeSlots[works[i].slot];
				SeReplTarget *t;

				if (works[i].ok || works[i].stale_term)
					continue;
				if (pg_atomic_read_u32(&works[i].sub->state) == SE_SUB_DONE)
					sub_fail(works[i].sub, rerr.status, rerr.type, rerr.reason);
				/* it still lacks these operations: owed to the master */
				SpinLockAcquire(&sl->repl_mutex);
				t = get_target(sl, works[i].allocation_id, works[i].node);
				if (t && !t->failed)
					t->must_fail = true;
				SpinLockRelease(&sl->repl_mutex);
			}
		}
	}

	/* ES's _shards.successful: the in-sync copies that have the writes */
	for (i = 0; i < nworks; i++)
		if (works[i].ok && works[i].in_sync)
			works[i].sub->replicas_ok++;

	/* the global checkpoint moves with what the copies confirmed */
	for (s = 0; s < nsubs; s++)
	{
		SeBulkSub  *sub = &subs[s];
		SeIndexMeta *im;

		if (pg_atomic_read_u32(&sub->state) != SE_SUB_DONE)
			continue;
		im = se_state_find_uuid(st, sub->index_uuid);
		if (im != NULL && im->settings.number_of_replicas > 0)
			update_global_checkpoint(sub->slot, im, sub->shard);
	}
}

/*
 * Background duties of this node's primaries, run by the shard-state
 * worker (a process that may wait on the network; write workers may not):
 * after a promotion, resync the operations above the global checkpoint to
 * the copies with the new term (ES PrimaryReplicaSyncer), and when the
 * global checkpoint moved since the copies last heard it, send it with an
 * empty replica_ops (ES GlobalCheckpointSyncAction after indexing stops).
 */
void
se_replication_maintain(void)
{
	const SeClusterState *st;
	int			i;

	if (se_cluster_single_node())
		return;
	st = se_state_current();
	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];
		SeIndexMeta *im;
		SeBulkSub  *sub;
		bool		resync = false;
		bool		sync_gcp = false;
		int64		gcp = se_slot_read_i64(&s->global_checkpoint);
		int64		from = 0,
					to = -1;

		if (s->state != SE_SLOT_STARTED || s->replica)
			continue;
		se_retention_maintain(i, se_state_find_uuid(st, s->index_uuid));
		prune_targets(s, se_state_find_uuid(st, s->index_uuid));
		SpinLockAcquire(&s->repl_mutex);
		if (s->resync_term > 0 && !s->resync_running &&
			s->resync_term == s->primary_term)
		{
			s->resync_running = resync = true;
			from = s->resync_from;
			to = s->resync_to;
		}
		else if (s->resync_term == 0 && gcp > s->gcp_sent && s->repl_ntargets > 0 &&
				 !se_debug_skip("gcp_sync"))
			sync_gcp = true;
		else if (s->resync_term == 0 && any_must_fail(s))
			sync_gcp = true;	/* the round reports the copies owed */
		SpinLockRelease(&s->repl_mutex);
		if (!resync && !sync_gcp)
			continue;
		im = se_state_find_uuid(st, s->index_uuid);
		if (im == NULL || im->closed || im->settings.number_of_replicas == 0)
		{
			SpinLockAcquire(&s->repl_mutex);
			s->resync_running = false;
			s->resync_term = 0;
			SpinLockRelease(&s->repl_mutex);
			continue;
		}
		sub = palloc0(sizeof(SeBulkSub));
		pg_atomic_init_u32(&sub->state, SE_SUB_DONE);
		sub->slot = i;
		strlcpy(sub->index_uuid, s->index_uuid, sizeof(sub->index_uuid));
		sub->shard = s->shard;
		strlcpy(sub->index_name, im->name, sizeof(sub->index_name));
		sub->first_seq_no = resync && from <= to ? from : -1;
		sub->last_seq_no = to;
		sub->tlog_gen = -1;
		if (resync)
			ereport(LOG,
					(errmsg("search_engine: primary [%s][%d] resyncs operations [" INT64_FORMAT "..." INT64_FORMAT "] to its copies with primary term [" INT64_FORMAT "]",
							im->name, s->shard, from, to, s->primary_term)));
		replicate_subs(sub, 1, true, false);
		SpinLockAcquire(&s->repl_mutex);
		if (resync)
		{
			s->resync_running = false;
			/* done, or the copies that failed were reported; else again later */
			if (pg_atomic_read_u32(&sub->state) == SE_SUB_DONE)
				s->resync_term = 0;
		}
		if (pg_atomic_read_u32(&sub->state) == SE_SUB_DONE)
			s->gcp_sent = Max(s->gcp_sent, gcp);
		SpinLockRelease(&s->repl_mutex);
		if (resync && pg_atomic_read_u32(&sub->state) != SE_SUB_DONE)
			ereport(WARNING,
					(errmsg("search_engine: resync of [%s][%d] failed, retried: %s",
							im->name, s->shard, sub->failure)));
	}
}

/* ---------- SQL: replica apply on one node, for tests ---------- */

typedef struct OpRecords
{
	List	   *records;		/* StringInfo per operation */
} OpRecords;

static void
keep_op(const SeTranslogOp *op, void *arg)
{
	OpRecords  *r = arg;
	StringInfo	b = makeStringInfo();

	se_translog_encode(b, op);
	r->records = lappend(r->records, b);
}

/*
 * search_engine._replica_apply_from(source, target, shard, primary_term,
 * chunk, reverse): read shard's operations from source's translog and
 * apply them to target's copy of the shard as replica_ops would, chunk
 * operations per request, the chunks in reverse order if asked (the
 * out-of-order arrival of concurrent replication).  Superuser only: it
 * writes into target behind its mapping's back, as a replica does.
 * Returns {"operations": n, "local_checkpoint": c}.
 */
PG_FUNCTION_INFO_V1(se_sql_replica_apply_from);
Datum
se_sql_replica_apply_from(PG_FUNCTION_ARGS)
{
	char	   *source = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *target = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			shard = PG_GETARG_INT32(2);
	int64		term = PG_GETARG_INT64(3);
	int			chunk = Max(PG_GETARG_INT32(4), 1);
	bool		reverse = PG_GETARG_BOOL(5);
	const SeClusterState *st = se_state_current();
	SeIndexMeta *src = se_state_find(st, source);
	SeIndexMeta *dst = se_state_find(st, target);
	OpRecords	r = {NIL};
	int			slot;
	int			n;
	int			c;
	int64		lcp = -1;
	int64		gcp;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may apply replica operations"),
				 errdetail("security_exception")));
	if (src == NULL || dst == NULL || shard < 0 ||
		shard >= src->settings.number_of_shards || shard >= dst->settings.number_of_shards)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no shard [%d] in both [%s] and [%s]", shard, source, target),
				 errdetail("index_not_found_exception")));
	slot = se_slot_find(dst->uuid, shard);
	if (slot < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("shard [%s][%d] is not open on this node", target, shard),
				 errdetail("shard_not_found_exception")));
	/* the source's global checkpoint (on one node: its local one) */
	c = se_slot_find(src->uuid, shard);
	gcp = c >= 0 ? se_slot_read_i64(&SeSlots[c].global_checkpoint) : -1;
	(void) se_shard_read_ops(src->uuid, shard, 0, PG_INT64_MAX, keep_op, &r);
	n = list_length(r.records);
	for (c = 0; c * chunk < n; c++)
	{
		int			first = reverse ? ((n - 1) / chunk - c) * chunk : c * chunk;
		StringInfoData b;
		SeError		err;
		int			i;

		initStringInfo(&b);
		for (i = first; i < Min(first + chunk, n); i++)
		{
			StringInfo	rec = list_nth(r.records, i);

			appendBinaryStringInfo(&b, rec->data, rec->len);
		}
		se_error_init(&err);
		if (!se_replication_apply_local(slot, "", term, gcp, b.data, b.len, &lcp, &err))
			se_error_raise(&err);
		pfree(b.data);
	}
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("{\"operations\": %d, \"local_checkpoint\": " INT64_FORMAT "}",
											  n, lcp)));
}
