/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The write pool: background workers that own shards and drain their
 *	  part of the bounded write queue.
 *
 * Each worker's loop: signals and config reload, open/close the shards
 * assigned to it, take a batch of queued requests, apply every bulk
 * sub-request to its shard, then -- once per batch (group commit) --
 * publish dynamic mapping updates, fsync the touched translogs, refresh
 * where asked, and only then acknowledge the sub-requests.  Between
 * batches it keeps the node's indexing memory bound and runs the periodic
 * refresh / translog sync / flush.  An ERROR while working on a shard
 * fails that shard (and the sub-request in flight), not the worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "cluster/state.h"
#include "node/node.h"
#include "replication/recovery.h"
#include "shard/bulk_protocol.h"
#include "shard/engine.h"

#define BATCH_MAX 64

static int	my_worker = -1;
static SeShard **shards = NULL;	/* by slot number */

/* The shard being worked on, failed by the error handler. */
static int	current_slot = -1;

/*
 * Shards failed on a full disk: when (and after what delay) their owner
 * next tries to recover them.  Worker-local, indexed by slot.
 */
#define DISK_RETRY_FIRST_MS		1000
#define DISK_RETRY_MAX_MS		30000
static TimestampTz *retry_at;
static int *retry_ms;

/*
 * Primaries failed with writes of theirs answered as failed: once open
 * again, they owe their copies a resync above the global checkpoint (what
 * reached their translog was never replicated).  Worker-local, by slot.
 */
static bool *resync_owed;

/* Register the write workers (static: the postmaster restarts them). */
void
se_launcher_register(void)
{
	se_bgw_register("se_write_worker_main", "search_engine write worker",
					se_write_threads, false);
}

/*
 * At node start, allocate slots for every shard of every open index in the
 * cluster state.  The first worker to get here does it.
 */
static void
node_bootstrap(void)
{
	const SeClusterState *st;
	int			i,
				s;
	bool		done;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	done = SeShmem->launcher_pid != 0;
	if (!done)
		SeShmem->launcher_pid = MyProcPid;
	LWLockRelease(&SeShmem->slots_lock);
	if (done)
		return;
	se_remove_leftover_indices();
	se_state_clear_transient_settings();
	st = se_state_current();
	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];

		if (im->closed)
			continue;
		for (s = 0; s < im->settings.number_of_shards; s++)
			if (im->routing ? se_state_local_copy(im, s) != NULL : se_state_shard_local(im, s))
				(void) se_state_slot_copy(im, s, se_slot_allocate(im->uuid, s));
	}
	/* wake every worker to pick up its slots */
	for (i = 0; i < SeShmem->nworkers; i++)
		if (SeShmem->workers[i].procno >= 0)
			SetLatch(&ProcGlobal->allProcs[SeShmem->workers[i].procno].procLatch);
}

/*
 * After a restart of this worker (it exited, or was terminated), the
 * shards it owned have no engine in this process: recover them again.
 */
static void
reopen_owned_slots(void)
{
	int			i;
	bool		any = false;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->owner == my_worker &&
			(s->state == SE_SLOT_STARTED || s->state == SE_SLOT_FAILED))
		{
			s->state = SE_SLOT_OPENING;
			any = true;
		}
	}
	LWLockRelease(&SeShmem->slots_lock);
	if (any)
		ConditionVariableBroadcast(&SeShmem->slot_cv);
}

/*
 * Close a CLOSING slot: flush the shard (close index) or delete its files
 * (delete index), then free the slot.  An error on the way (the handler
 * discards the shard) leaves the slot CLOSING: the next scan_slots frees
 * it without the shard.
 */
static void
close_shard(int slot)
{
	SeShardSlot *s = &SeSlots[slot];
	bool		delete_files = s->delete_files;

	current_slot = slot;
	se_recovery_forget_slot(slot);
	if (shards[slot])
	{
		se_shard_close(shards[slot], !delete_files);
		shards[slot] = NULL;
	}
	se_slot_unpublish(slot);
	if (delete_files)
		se_shard_remove_files(s->index_uuid, s->shard);
	retry_ms[slot] = 0;			/* the next shard in the slot starts afresh */
	resync_owed[slot] = false;
	se_slot_free(slot);
	current_slot = -1;
}

/*
 * A primary of ours answered writes as failed that its translog may hold
 * (its shard failed mid-batch and was opened again): send its copies the
 * operations above the global checkpoint again, as after a promotion but
 * in the same term (replicate.c; copies skip what they have), so the
 * copies hold what it holds.
 */
static void
owe_resync(int slot, SeShard *sh)
{
	SeShardSlot *s = &SeSlots[slot];

	resync_owed[slot] = false;
	if (s->replica || sh == NULL || sh->max_seq_no <= sh->global_checkpoint)
		return;
	SpinLockAcquire(&s->repl_mutex);
	if (s->resync_term > 0 && s->resync_term == s->primary_term)
	{
		s->resync_from = Min(s->resync_from, sh->global_checkpoint + 1);
		s->resync_to = Max(s->resync_to, sh->max_seq_no);
	}
	else if (s->primary_term > 0)
	{
		s->resync_term = s->primary_term;
		s->resync_from = sh->global_checkpoint + 1;
		s->resync_to = sh->max_seq_no;
		s->resync_running = false;
	}
	SpinLockRelease(&s->repl_mutex);
}

static void
open_shard(int slot)
{
	current_slot = slot;
	/*
	 * A replica is filled from its primary (peer recovery), never opened
	 * from what this node happens to hold: that could serve stale data as
	 * in sync.  An ERROR here fails the slot.
	 */
	if (SeSlots[slot].replica)
		resync_owed[slot] = false;	/* a primary's duty */
	if (SeSlots[slot].replica && !se_recovery_start_replica(slot))
	{
		current_slot = -1;
		return;
	}
	shards[slot] = se_shard_open(slot);
	current_slot = -1;
	if (resync_owed[slot])
		owe_resync(slot, shards[slot]);
	retry_ms[slot] = 0;
	/* recovered: from now on readers wait for it while it opens again */
	SeSlots[slot].failure_disk_full = false;
	/* closed or deleted while it was opening: close it right away */
	if (!se_slot_advance(slot, SE_SLOT_STARTED, NULL))
		close_shard(slot);
}

/*
 * The slot's replica copy was placed here again under a new allocation id
 * (se_slot_set_copy): close the engine holding the old copy, stop a
 * recovery still running for it, and recover the copy from its primary
 * again (the recovery reuses the files that did not change).
 */
static void
reopen_shard(int slot)
{
	current_slot = slot;
	se_recovery_forget_slot(slot);
	if (shards[slot])
	{
		se_shard_close(shards[slot], true);
		shards[slot] = NULL;
	}
	se_slot_unpublish(slot);
	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	SeSlots[slot].reopen = false;
	LWLockRelease(&SeShmem->slots_lock);
	current_slot = -1;
	open_shard(slot);
}

/*
 * A shard of ours failed on a full disk: try to recover it again after a
 * delay that doubles from 1 s up to 30 s while the disk stays full.
 */
static void
schedule_disk_retry(int slot)
{
	retry_ms[slot] = retry_ms[slot] == 0 ? DISK_RETRY_FIRST_MS
		: Min(retry_ms[slot] * 2, DISK_RETRY_MAX_MS);
	retry_at[slot] = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), retry_ms[slot]);
}

/*
 * Open OPENING slots, close CLOSING slots, and recover FAILED-on-a-full-
 * disk slots whose retry is due, of those this worker owns.  A recovery
 * that fails again fails the shard again (the error handler schedules the
 * next try); meanwhile readers keep its last published segment list.
 */
static void
scan_slots(void)
{
	int			i;
	TimestampTz now = GetCurrentTimestamp();

	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->owner != my_worker)
			continue;
		if (s->state == SE_SLOT_FAILED && s->failure_disk_full && shards[i] == NULL &&
			retry_ms[i] > 0 && now >= retry_at[i] &&
			se_slot_advance(i, SE_SLOT_OPENING, NULL))
			open_shard(i);
		else if (s->state == SE_SLOT_OPENING && s->reopen)
			reopen_shard(i);
		else if (s->state == SE_SLOT_OPENING && shards[i] == NULL)
			open_shard(i);
		else if (s->state == SE_SLOT_CLOSING)
			close_shard(i);
		else if (s->state == SE_SLOT_FREE && shards[i] != NULL)
			shards[i] = NULL;	/* freed under us; cannot happen */
	}
}

typedef struct BatchItem
{
	int			entry;
	int			kind;
	int			slot;
	dsm_segment *seg;
	SeBulkSub  *sub;
	SeBulkHeader *hdr;
	SeReplicaRequest *rep;		/* SE_REQ_REPLICA: a primary's ops; NULL once answered */
	uint64		bytes;
	int			requester;
	bool		refresh;
	bool		applied;
} BatchItem;

static void
run_control(int e)
{
	SeQueueEntry *qe = &SeEntries[e];
	int			slot = qe->slot;
	SeShard    *sh = shards[slot];
	bool		failed = false;

	/*
	 * Open and close only a slot this worker still owns: it may have been
	 * freed and given to another worker since the request was queued.
	 */
	switch (qe->kind)
	{
		case SE_REQ_OPEN_SHARD:
			if (SeSlots[slot].owner == my_worker &&
				SeSlots[slot].state == SE_SLOT_OPENING && sh == NULL)
				open_shard(slot);
			break;
		case SE_REQ_CLOSE_SHARD:
			if (SeSlots[slot].owner == my_worker &&
				SeSlots[slot].state == SE_SLOT_CLOSING)
				close_shard(slot);
			break;
		case SE_REQ_REFRESH:
			if (sh)
			{
				current_slot = slot;
				se_shard_publish_mapping(sh);
				se_shard_refresh(sh);
			}
			else
				failed = true;
			break;
		case SE_REQ_FLUSH:
			if (sh)
			{
				current_slot = slot;
				se_shard_publish_mapping(sh);
				se_shard_flush(sh);
			}
			else
				failed = true;
			break;
		case SE_REQ_FORCE_MERGE:
			if (sh)
			{
				current_slot = slot;
				failed = !se_shard_force_merge(sh, (int) qe->arg);
			}
			else
				failed = true;
			break;
		default:
			failed = true;
	}
	current_slot = -1;
	se_queue_control_done(my_worker, e, failed);
}

static void
finish_sub(BatchItem *bi)
{
	pg_write_barrier();
	pg_atomic_write_u32(&bi->sub->state, SE_SUB_DONE);
	SetLatch(&ProcGlobal->allProcs[bi->requester].procLatch);
}

/* Answer a replica request (err NULL: applied, with the local checkpoint). */
static void
finish_replica(BatchItem *bi, SeShard *sh, const SeError *err)
{
	SeReplicaRequest *rq = bi->rep;

	if (err)
	{
		rq->failure_status = err->status ? err->status : 500;
		strlcpy(rq->failure_type, err->type ? err->type : "shard_failed_exception",
				sizeof(rq->failure_type));
		strlcpy(rq->failure, err->reason ? err->reason : "", sizeof(rq->failure));
	}
	else
	{
		rq->local_checkpoint = sh->ckpt.checkpoint;
		rq->max_seq_no = sh->max_seq_no;
	}
	pg_write_barrier();
	pg_atomic_write_u32(&rq->state, err ? SE_SUB_FAILED : SE_SUB_DONE);
	SetLatch(&ProcGlobal->allProcs[bi->requester].procLatch);
	bi->rep = NULL;
}

static void
fail_sub(SeBulkSub *sub, int requester, int status, const char *type, const char *msg)
{
	sub->failure_status = status;
	strlcpy(sub->failure_type, type, sizeof(sub->failure_type));
	strlcpy(sub->failure, msg, sizeof(sub->failure));
	pg_write_barrier();
	pg_atomic_write_u32(&sub->state, SE_SUB_FAILED);
	if (requester >= 0)
		SetLatch(&ProcGlobal->allProcs[requester].procLatch);
}

/* The batch in flight: the error handler fails and releases what is left. */
static BatchItem items[BATCH_MAX];
static int	nitems_batch = 0;
static int	current_control = -1;

/*
 * Is the shard that bi was routed to open here?  It may have been closed or
 * deleted since (its slot may even hold another shard now): then bi fails
 * with the error a router would give now, and false is returned.
 */
/*
 * Fail sub on a full disk with ES's flood-stage block (429, which clients
 * retry), naming the write error: the answer for the batch that hit the
 * full disk and for every write to the shard until its owner recovers it.
 */
static void
fail_sub_disk_full(SeBulkSub *sub, int requester, const char *cause)
{
	char		msg[sizeof(sub->failure)];

	snprintf(msg, sizeof(msg),
			 "index [%s] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, "
			 "index has read-only-allow-delete block]; shard [%d] retries when space is freed: %s",
			 sub->index_name, sub->shard, cause);
	fail_sub(sub, requester, 429, "cluster_block_exception", msg);
}

static bool
routed_shard_open(BatchItem *bi, SeShard *sh)
{
	SeShardSlot *s = &SeSlots[bi->slot];
	SeBulkSub  *sub = bi->sub;
	SeError		err;

	if (sh != NULL && s->state == SE_SLOT_STARTED && sh->shard == sub->shard &&
		strcmp(sh->uuid, sub->index_uuid) == 0)
		return true;
	se_error_init(&err);
	if (s->state == SE_SLOT_FAILED && s->shard == sub->shard &&
		strcmp(s->index_uuid, sub->index_uuid) == 0 && s->failure_disk_full)
	{
		fail_sub_disk_full(sub, bi->requester, s->failure);
		return false;
	}
	if (s->state == SE_SLOT_FAILED && s->shard == sub->shard &&
		strcmp(s->index_uuid, sub->index_uuid) == 0)
		se_error_set(&err, 500, "shard_failed_exception", "%s",
					 s->failure[0] ? s->failure : "shard failed");
	else
		se_state_shard_unavailable(sub->index_uuid, sub->index_name, sub->shard,
								   "shard is not open on this node", &err);
	fail_sub(sub, bi->requester, err.status, err.type, err.reason);
	return false;
}

/*
 * An ERROR failed slot in the middle of the batch: answer the batch's
 * requests for it as failed (disk_full: with the flood-stage 429 clients
 * retry).  The other shards' requests stay in the batch, which resumes:
 * failing them too would answer as failed writes a healthy shard applied,
 * and never replicate them.
 */
static void
fail_slot_items(int slot, bool disk_full, const char *type, const char *msg)
{
	int			i;

	for (i = 0; i < nitems_batch; i++)
	{
		if (items[i].slot != slot)
			continue;
		if (items[i].rep)
		{
			SeError		err;

			se_error_init(&err);
			se_error_set(&err, disk_full ? 429 : 500, disk_full ? "cluster_block_exception" : type,
						 "%s", msg ? msg : "shard failed");
			finish_replica(&items[i], NULL, &err);
		}
		if (items[i].sub && pg_atomic_read_u32(&items[i].sub->state) == SE_SUB_PENDING)
		{
			if (disk_full)
				fail_sub_disk_full(items[i].sub, items[i].requester, msg);
			else
				fail_sub(items[i].sub, items[i].requester, 500, type, msg);
		}
		items[i].sub = NULL;
	}
}

/*
 * Let go of the batch; failed: an ERROR stopped it, and the sub-requests
 * not answered yet fail with it (disk_full: as writes to a shard failed
 * on a full disk do).
 */
static void
release_batch(bool failed, bool disk_full, const char *type, const char *msg)
{
	int			i,
				j;

	for (i = 0; i < nitems_batch; i++)
	{
		if (items[i].rep && failed)
		{
			SeError		err;

			se_error_init(&err);
			se_error_set(&err, disk_full ? 429 : 500, disk_full ? "cluster_block_exception" : type,
						 "%s", msg ? msg : "shard failed");
			finish_replica(&items[i], NULL, &err);
		}
		if (items[i].sub && failed &&
			pg_atomic_read_u32(&items[i].sub->state) == SE_SUB_PENDING)
		{
			if (disk_full)
				fail_sub_disk_full(items[i].sub, items[i].requester, msg);
			else
				fail_sub(items[i].sub, items[i].requester, 500, type, msg);
		}
		se_queue_bulk_done(my_worker, items[i].bytes, items[i].applied);
	}
	for (i = 0; i < nitems_batch; i++)
	{
		if (items[i].seg)
		{
			dsm_segment *seg = items[i].seg;

			for (j = i; j < nitems_batch; j++)
				if (items[j].seg == seg)
					items[j].seg = NULL;
			dsm_detach(seg);
		}
	}
	nitems_batch = 0;
}

typedef struct OpsArray
{
	SeTranslogOp *ops;
	int			n;
	int			cap;
} OpsArray;

static void
collect_op(const SeTranslogOp *op, void *arg)
{
	OpsArray   *a = arg;

	if (a->n == a->cap)
	{
		a->cap = Max(64, a->cap * 2);
		a->ops = a->ops ? repalloc(a->ops, sizeof(SeTranslogOp) * a->cap)
			: palloc(sizeof(SeTranslogOp) * a->cap);
	}
	a->ops[a->n++] = *op;
}

/*
 * Apply a primary's replica_ops to our copy; answered (or failed) once the
 * batch's translog sync is done.  A copy that is not open here, not this
 * shard any more, or not the copy the primary meant, refuses them.
 */
static void
apply_replica(BatchItem *bi, SeShard *sh)
{
	SeReplicaRequest *rq = bi->rep;
	SeShardSlot *s = &SeSlots[bi->slot];
	SeError		err;
	OpsArray	a = {0};
	size_t		used;

	se_error_init(&err);
	if (sh == NULL || s->state != SE_SLOT_STARTED || sh->shard != rq->shard ||
		strcmp(sh->uuid, rq->index_uuid) != 0 ||
		(rq->allocation_id[0] && s->allocation_id[0] &&
		 strcmp(rq->allocation_id, s->allocation_id) != 0))
	{
		se_error_set(&err, 404, "shard_not_found_exception",
					 "no such shard copy [%s][%d][%s] open on this node",
					 rq->index_uuid, rq->shard, rq->allocation_id);
		finish_replica(bi, sh, &err);
		return;
	}
	used = se_translog_decode((char *) rq + rq->ops_off, rq->ops_len, collect_op, &a);
	if (used != rq->ops_len)
	{
		se_error_set(&err, 400, "translog_corrupted_exception",
					 "replica operations for [%s][%d] fail their checksum at byte %zu",
					 rq->index_uuid, rq->shard, used);
		finish_replica(bi, sh, &err);
		return;
	}
	current_slot = bi->slot;
	se_shard_apply_replica_ops(sh, a.ops, a.n, rq->primary_term, rq->global_checkpoint, &err);
	current_slot = -1;
	bi->applied = true;
	/* refreshed in the group commit, as the primary's copy is: reads may come here */
	bi->refresh = rq->refresh;
	if (se_error_is_set(&err))
		finish_replica(bi, sh, &err);
}

static bool batch_defer = false;	/* the batch's writes are indexed after the ack */
static bool batch_resume = false;	/* an error failed one shard: go on with the rest */

static int	run_batch(void);

/* Take and process one batch; returns the number of entries taken. */
static int
process_batch(void)
{
	int			n = 0;
	int			j;
	bool		defer = false;

	while (n < BATCH_MAX)
	{
		int			e = se_queue_take(my_worker);
		SeQueueEntry *qe;

		if (e < 0)
		{
			/* nothing else waits: acknowledge before indexing (engine.c) */
			defer = true;
			break;
		}
		qe = &SeEntries[e];
		if (qe->kind != SE_REQ_BULK && qe->kind != SE_REQ_REPLICA)
		{
			current_control = e;
			run_control(e);
			current_control = -1;
			continue;
		}
		memset(&items[n], 0, sizeof(BatchItem));
		items[n].entry = e;
		items[n].kind = qe->kind;
		items[n].slot = qe->slot;
		items[n].bytes = qe->bytes;
		items[n].requester = qe->requester_procno;
		if (qe->kind == SE_REQ_REPLICA)
		{
			/* its own segment: attach, claim, free the entry */
			items[n].seg = dsm_attach(qe->handle);
			if (items[n].seg)
			{
				items[n].rep = (SeReplicaRequest *) dsm_segment_address(items[n].seg);
				items[n].rep->taker_generation = SeShmem->workers[my_worker].generation;
				pg_write_barrier();
				items[n].rep->taker = my_worker;
			}
			se_queue_free_bulk_entry(e);
			n++;
			nitems_batch = n;
			continue;
		}
		/* share one mapping per DSM handle within the batch */
		for (j = 0; j < n; j++)
			if (items[j].seg && dsm_segment_handle(items[j].seg) == qe->handle)
				break;
		if (j < n)
			items[n].seg = items[j].seg;
		else
			items[n].seg = dsm_attach(qe->handle);
		if (items[n].seg)
		{
			items[n].hdr = (SeBulkHeader *) dsm_segment_address(items[n].seg);
			items[n].sub = &items[n].hdr->subs[qe->sub];
			items[n].sub->taker_generation = SeShmem->workers[my_worker].generation;
			pg_write_barrier();
			items[n].sub->taker = my_worker;
		}
		se_queue_free_bulk_entry(e);
		n++;
		nitems_batch = n;
	}
	batch_defer = defer;
	return run_batch();
}

/*
 * Apply, commit and answer the batch taken (items[0..nitems_batch)).  Run
 * again by the error handler's resume after one shard failed in it: what
 * was applied already is skipped, the failed shard's requests are
 * answered.
 */
static int
run_batch(void)
{
	int			n = nitems_batch;
	int			i,
				j;
	bool		defer = batch_defer;

	for (i = 0; i < n; i++)
	{
		BatchItem  *bi = &items[i];
		SeShard    *sh = shards[bi->slot];

		if (bi->seg == NULL || bi->applied)
			continue;			/* requester gone, or done before an error */
		if (bi->rep)
		{
			apply_replica(bi, sh);
			continue;
		}
		if (bi->sub == NULL)
			continue;			/* answered */
		if (!routed_shard_open(bi, sh))
		{
			bi->sub = NULL;
			continue;
		}
		current_slot = bi->slot;
		se_shard_apply_bulk(sh, bi->hdr, bi->sub, (char *) bi->hdr, defer);
		bi->applied = true;
		/* refresh=wait_for: the writer waits for a later refresh instead */
		bi->refresh = bi->hdr->refresh == 1;
		current_slot = -1;
	}

	/* group commit: mapping, translog fsync, refresh -- then acknowledge */
	for (i = 0; i < n; i++)
	{
		SeShard    *sh = shards[items[i].slot];
		bool		seen = false;

		if ((items[i].sub == NULL && items[i].rep == NULL) || sh == NULL)
			continue;
		for (j = 0; j < i; j++)
			if (items[j].slot == items[i].slot && (items[j].sub != NULL || items[j].rep != NULL))
				seen = true;
		if (seen)
			continue;
		current_slot = items[i].slot;
		se_shard_publish_mapping(sh);
		if (se_debug_waitpoints &&
			se_debug_fault(psprintf("translog_sync_%s", sh->index_name)))
			ereport(ERROR,
					(errcode(ERRCODE_DISK_FULL),
					 errmsg("could not write translog of [%s][%d]: No space left on device (debug fault)",
							sh->index_name, sh->shard)));
		se_shard_sync_translog(sh);
		for (j = i; j < n; j++)
			if (items[j].slot == items[i].slot && (items[j].sub || items[j].rep) && items[j].refresh)
			{
				se_shard_refresh(sh);
				break;
			}
		if (se_shard_translog_over_threshold(sh))
			se_shard_flush(sh);
		current_slot = -1;
	}
	for (i = 0; i < n; i++)
	{
		if (items[i].sub)
			finish_sub(&items[i]);
		else if (items[i].rep)
			finish_replica(&items[i], shards[items[i].slot], NULL);
	}
	release_batch(false, false, NULL, NULL);
	if (n > 0)
		pg_atomic_write_u64(&SeShmem->last_bulk_at, (uint64) GetCurrentTimestamp());

	/*
	 * Acknowledged: now index what was deferred, before the next request.
	 * An error here fails the shard; the documents are in its translog.
	 */
	for (i = 0; i < n; i++)
	{
		SeShard    *sh = shards[items[i].slot];

		if (sh == NULL || sh->npending == 0)
			continue;
		current_slot = items[i].slot;
		se_shard_index_pending(sh);
		current_slot = -1;
	}
	return n;
}

/* Keep indexing memory within this worker's share of index_buffer_size. */
static void
enforce_buffer_bound(void)
{
	size_t		limit = (size_t) se_index_buffer_size_kb * 1024 / Max(1, SeShmem->nworkers);

	for (;;)
	{
		size_t		total = 0;
		size_t		largest = 0;
		int			largest_slot = -1;
		int			i;

		for (i = 0; i < SeShmem->nslots; i++)
		{
			if (shards[i])
			{
				size_t		b = se_shard_buffer_bytes(shards[i]);

				total += b;
				if (b > largest)
				{
					largest = b;
					largest_slot = i;
				}
			}
		}
		if (total <= limit || largest_slot < 0)
			break;
		current_slot = largest_slot;
		se_shard_publish_mapping(shards[largest_slot]);
		se_shard_refresh(shards[largest_slot]);
		current_slot = -1;
	}
}

/*
 * A write worker allocates and frees large pieces all the time: each
 * batch's pending documents (reset once indexed), each refresh's buffer
 * and segment image.  Above glibc's default mmap and trim thresholds they
 * were mapped and faulted in afresh every time: 7% of a worker's CPU in
 * page faults on a Contents load.  A write worker keeps up to
 * SE_WORKER_TRIM_KEEP of freed heap instead (outside index_buffer_size,
 * inside the worker's memory allowance); pieces above SE_WORKER_MMAP_ABOVE
 * are still mapped.
 */
#define SE_WORKER_MMAP_ABOVE	(32 * 1024 * 1024)
#define SE_WORKER_TRIM_KEEP		(64 * 1024 * 1024)

void
se_write_worker_main(Datum arg)
{
	sigjmp_buf	local_sigjmp_buf;
	MemoryContext loop_cxt;
	volatile bool started = false;

	my_worker = DatumGetInt32(arg);
	se_bgw_start();
	se_keep_freed_heap(SE_WORKER_MMAP_ABOVE, SE_WORKER_TRIM_KEEP);

	SpinLockAcquire(&SeShmem->queue_mutex);
	SeShmem->workers[my_worker].pid = MyProcPid;
	SeShmem->workers[my_worker].procno = MyProc->pgprocno;
	SeShmem->workers[my_worker].generation++;
	SeShmem->workers[my_worker].active = 0;
	SpinLockRelease(&SeShmem->queue_mutex);

	shards = MemoryContextAllocZero(TopMemoryContext, sizeof(SeShard *) * SeShmem->nslots);
	retry_at = MemoryContextAllocZero(TopMemoryContext, sizeof(TimestampTz) * SeShmem->nslots);
	retry_ms = MemoryContextAllocZero(TopMemoryContext, sizeof(int) * SeShmem->nslots);
	resync_owed = MemoryContextAllocZero(TopMemoryContext, sizeof(bool) * SeShmem->nslots);
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "search_engine write worker loop",
									 ALLOCSET_DEFAULT_SIZES);

	/* After an ERROR: fail what was in flight and keep serving. */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		ErrorData  *edata;
		bool		disk_full;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(loop_cxt);
		edata = CopyErrorData();
		disk_full = edata->sqlerrcode == ERRCODE_DISK_FULL ||
			edata->saved_errno == ENOSPC || edata->saved_errno == EDQUOT;
		EmitErrorReport();
		FlushErrorState();
		LWLockReleaseAll();
		ConditionVariableCancelSleep();
		/* failing to start: exit, the postmaster restarts us after a pause */
		if (!started)
			proc_exit(1);
		/* the failed shard's requests fail; the rest of the batch goes on */
		if (current_slot >= 0 && nitems_batch > 0)
		{
			fail_slot_items(current_slot, disk_full,
							edata->sqlerrcode == ERRCODE_INDEX_CORRUPTED ? "index_corrupted_exception" : "shard_failed_exception",
							edata->message);
			batch_resume = true;
		}
		else
			release_batch(true, disk_full,
						  edata->sqlerrcode == ERRCODE_INDEX_CORRUPTED ? "index_corrupted_exception" : "shard_failed_exception",
						  edata->message);
		if (current_slot >= 0)
		{
			SeShard    *sh = shards[current_slot];

			/*
			 * The shard's in-memory state is unknown now: let it go and fail
			 * it -- unless it is being closed or deleted, which goes on.
			 */
			shards[current_slot] = NULL;
			if (sh != NULL)
				se_shard_discard(sh);
			SeSlots[current_slot].failure_corrupted = (edata->sqlerrcode == ERRCODE_INDEX_CORRUPTED);
			SeSlots[current_slot].failure_disk_full = disk_full;
			if (SeSlots[current_slot].failure_disk_full)
				schedule_disk_retry(current_slot);
			/* writes it answered as failed may be in its translog */
			resync_owed[current_slot] = true;
			(void) se_slot_advance(current_slot, SE_SLOT_FAILED, edata->message);
		}
		current_slot = -1;
		/* after the slot's failure is set: the requester reports it */
		if (current_control >= 0)
			se_queue_control_done(my_worker, current_control, true);
		current_control = -1;
		MemoryContextReset(loop_cxt);
		RESUME_INTERRUPTS();
		/* requesters of a failed batch see SE_SUB_FAILED or time out on it */
	}
	PG_exception_stack = &local_sigjmp_buf;

	/*
	 * Once only: after an error the loop resumes here, and reopening the
	 * owned slots again would turn a failed shard back into an opening one,
	 * retrying (and failing) it forever.
	 */
	if (!started)
	{
		node_bootstrap();
		reopen_owned_slots();
		started = true;
	}

	while (se_bgw_loop_top())
	{
		long		timeout = 1000;
		TimestampTz now;
		int			i;
		int			taken;

		MemoryContextSwitchTo(loop_cxt);
		scan_slots();
		/* a test holds the worker here so that requests batch up */
		se_debug_pausepoint("write_worker");
		if (batch_resume && nitems_batch > 0)
		{
			batch_resume = false;
			taken = run_batch();
		}
		else
		{
			batch_resume = false;
			taken = process_batch();
		}
		enforce_buffer_bound();
		now = GetCurrentTimestamp();
		for (i = 0; i < SeShmem->nslots; i++)
		{
			if (shards[i])
			{
				current_slot = i;
				timeout = Min(timeout, se_shard_periodic(shards[i], now));
				current_slot = -1;
			}
		}
		MemoryContextReset(loop_cxt);
		if (taken > 0)
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/* clean shutdown: flush every shard so restart needs no replay */
	{
		int			i;

		for (i = 0; i < SeShmem->nslots; i++)
			if (shards[i])
			{
				current_slot = i;
				se_shard_close(shards[i], false);
				shards[i] = NULL;
			}
	}
	SpinLockAcquire(&SeShmem->queue_mutex);
	SeShmem->workers[my_worker].pid = 0;
	SeShmem->workers[my_worker].procno = -1;
	SpinLockRelease(&SeShmem->queue_mutex);
	/* exit code 1: if the server is not shutting down, restart this worker */
	proc_exit(1);
}
