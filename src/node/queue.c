/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  The node's bounded write queue.
 *
 * Bulk sub-requests (one per shard of a bulk) are queued to the write
 * worker that owns the shard.  The bound is node-wide and counts waiting
 * sub-requests, as Elasticsearch's write thread pool queue does; a second
 * bound limits the payload bytes in flight (indexing pressure).  A
 * sub-request that does not fit is rejected at once -- nothing is queued
 * beyond the bounds.  Control requests (refresh, flush, open/close shard)
 * use reserved entries beyond the bound and are never rejected.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"

#include "node/node.h"

static void
wake_worker(int worker)
{
	int			procno = SeShmem->workers[worker].procno;

	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* Append entry e to worker w's FIFO; caller holds queue_mutex. */
static void
fifo_push(int w, int e)
{
	SeWorkerState *ws = &SeShmem->workers[w];

	SeEntries[e].next = -1;
	if (ws->tail >= 0)
		SeEntries[ws->tail].next = e;
	else
		ws->head = e;
	ws->tail = e;
	ws->queued++;
}

/*
 * Reserve room for one bulk sub-request to slot, or reject it.
 *
 * The bound follows Elasticsearch's write pool: write_queue_size waiting
 * tasks plus one executing task per thread.  Our workers take batches of
 * entries at once, so an entry counts until its sub-request finishes and
 * the limit is write_queue_size + number of workers -- taking a batch does
 * not make room for more.  The caller fills the request and submits the
 * entry with se_queue_submit_reserved (or cancels it).
 */
int
se_queue_reserve_bulk(int slot, uint64 bytes, SeEnqueueResult *why)
{
	return se_queue_reserve(slot, SE_REQ_BULK, bytes, why);
}

/*
 * Reserve an entry of kind SE_REQ_BULK or SE_REQ_REPLICA: a replica's
 * operations take room in the same queue as its node's own bulk
 * sub-requests (ES's write pool), so replication cannot grow memory
 * without bound either.
 */
int
se_queue_reserve(int slot, SeRequestKind kind, uint64 bytes, SeEnqueueResult *why)
{
	int			w = SeSlots[slot].owner;
	int			e;
	uint64		limit = (uint64) se_indexing_pressure_limit_kb * 1024;

	SpinLockAcquire(&SeShmem->queue_mutex);
	if (SeShmem->queued >= se_write_queue_size + SeShmem->nworkers || SeShmem->free_head < 0)
	{
		SeShmem->rejected++;
		SeShmem->workers[w].rejected++;
		SpinLockRelease(&SeShmem->queue_mutex);
		*why = SE_ENQUEUE_REJECTED_QUEUE;
		return -1;
	}
	/* a single request larger than the limit is admitted only when idle */
	if (SeShmem->inflight_bytes > 0 && SeShmem->inflight_bytes + bytes > limit)
	{
		SeShmem->rejected++;
		SeShmem->workers[w].rejected++;
		SpinLockRelease(&SeShmem->queue_mutex);
		*why = SE_ENQUEUE_REJECTED_PRESSURE;
		return -1;
	}
	e = SeShmem->free_head;
	SeShmem->free_head = SeEntries[e].next;
	SeEntries[e].kind = kind;
	SeEntries[e].slot = slot;
	SeEntries[e].bytes = bytes;
	SeEntries[e].state = SE_ENTRY_RESERVED;
	SeShmem->queued++;
	SeShmem->inflight_bytes += bytes;
	SpinLockRelease(&SeShmem->queue_mutex);
	*why = SE_ENQUEUE_OK;
	return e;
}

/* Queue a reserved entry to its shard's owner. */
void
se_queue_submit_reserved(int e, dsm_handle handle, int sub)
{
	int			w = SeSlots[SeEntries[e].slot].owner;

	SpinLockAcquire(&SeShmem->queue_mutex);
	SeEntries[e].handle = handle;
	SeEntries[e].sub = sub;
	SeEntries[e].requester_procno = MyProc->pgprocno;
	SeEntries[e].state = SE_ENTRY_QUEUED;
	fifo_push(w, e);
	SpinLockRelease(&SeShmem->queue_mutex);
	wake_worker(w);
}

/* Give back a reservation that will not be submitted. */
void
se_queue_cancel_reserved(int e)
{
	SpinLockAcquire(&SeShmem->queue_mutex);
	SeShmem->queued--;
	SeShmem->inflight_bytes -= Min(SeEntries[e].bytes, SeShmem->inflight_bytes);
	SeEntries[e].state = SE_ENTRY_FREE;
	SeEntries[e].next = SeShmem->free_head;
	SeShmem->free_head = e;
	SpinLockRelease(&SeShmem->queue_mutex);
}

/*
 * Take the next entry of worker w's FIFO.  Bulk entries are copied out by
 * the caller and freed with se_queue_bulk_done's bookkeeping; control
 * entries stay allocated until the requester has seen the result.
 */
int
se_queue_take(int w)
{
	SeWorkerState *ws = &SeShmem->workers[w];
	int			e;
	int			busy = 0,
				k;

	SpinLockAcquire(&SeShmem->queue_mutex);
	e = ws->head;
	if (e >= 0)
	{
		ws->head = SeEntries[e].next;
		if (ws->head < 0)
			ws->tail = -1;
		ws->queued--;
		ws->active++;
		for (k = 0; k < SeShmem->nworkers; k++)
			busy += SeShmem->workers[k].active > 0;
		SeShmem->largest_active = Max(SeShmem->largest_active, busy);
		if (SeEntries[e].state == SE_ENTRY_QUEUED)
			SeEntries[e].state = SE_ENTRY_ACTIVE;
		SeEntries[e].taker_generation = ws->generation;
	}
	SpinLockRelease(&SeShmem->queue_mutex);
	return e;
}

/* Free a taken bulk entry right away (its data lives in the DSM). */
static void
free_entry_locked(int e)
{
	SeEntries[e].state = SE_ENTRY_FREE;
	SeEntries[e].next = SeShmem->free_head;
	SeShmem->free_head = e;
}

void
se_queue_free_bulk_entry(int e)
{
	SpinLockAcquire(&SeShmem->queue_mutex);
	free_entry_locked(e);
	SpinLockRelease(&SeShmem->queue_mutex);
}

/*
 * A bulk sub-request finished (applied, or dropped because its requester
 * left): release its room in the queue and its pressure; count it as
 * completed only if it was applied.
 */
void
se_queue_bulk_done(int w, uint64 bytes, bool applied)
{
	SpinLockAcquire(&SeShmem->queue_mutex);
	SeShmem->queued--;
	SeShmem->inflight_bytes -= Min(bytes, SeShmem->inflight_bytes);
	SeShmem->workers[w].active--;
	if (applied)
	{
		SeShmem->workers[w].completed++;
		SeShmem->completed++;
	}
	SpinLockRelease(&SeShmem->queue_mutex);
}

/* Worker w finished a control request it took. */
void
se_queue_control_done(int w, int e, bool failed)
{
	SpinLockAcquire(&SeShmem->queue_mutex);
	SeShmem->workers[w].active--;
	if (SeEntries[e].state == SE_ENTRY_ABANDONED)
		free_entry_locked(e);
	else
	{
		SeEntries[e].failed = failed;
		SeEntries[e].state = SE_ENTRY_DONE;
	}
	SpinLockRelease(&SeShmem->queue_mutex);
	ConditionVariableBroadcast(&SeShmem->control_cv);
}

/*
 * Run a control request on each of slots[0..n) (on its owner) and wait for
 * all of them: the owners work in parallel, as ES broadcasts a refresh to
 * every shard at once.  Returns how many succeeded.  An interrupt while waiting abandons the
 * entries not done yet (their workers free them).
 */
int
se_queue_control_many(const int *slots, int n, SeRequestKind kind, int64 arg)
{
	int		   *entries = palloc(sizeof(int) * Max(n, 1));
	int		   *owners = palloc(sizeof(int) * Max(n, 1));
	int			i;
	int			left = n;
	int			succeeded = 0;

	for (i = 0; i < n; i++)
	{
		int			w = SeSlots[slots[i]].owner;
		int			e;

		for (;;)
		{
			SpinLockAcquire(&SeShmem->queue_mutex);
			e = SeShmem->free_head;
			if (e >= 0)
			{
				SeShmem->free_head = SeEntries[e].next;
				SeEntries[e].kind = kind;
				SeEntries[e].slot = slots[i];
				SeEntries[e].handle = 0;
				SeEntries[e].requester_procno = MyProc->pgprocno;
				SeEntries[e].bytes = 0;
				SeEntries[e].arg = arg;
				SeEntries[e].failed = false;
				SeEntries[e].state = SE_ENTRY_QUEUED;
				fifo_push(w, e);
			}
			SpinLockRelease(&SeShmem->queue_mutex);
			if (e >= 0)
				break;
			/* all entries busy: wait a little (control requests are never rejected) */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 10, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			se_check_wait_interrupts();
		}
		entries[i] = e;
		owners[i] = w;
		wake_worker(w);
	}

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&SeShmem->control_cv);
		while (left > 0)
		{
			SpinLockAcquire(&SeShmem->queue_mutex);
			for (i = 0; i < n; i++)
			{
				int			e = entries[i];
				int			state;
				bool		failed;

				if (e < 0)
					continue;
				state = SeEntries[e].state;
				if (state == SE_ENTRY_DONE)
					failed = SeEntries[e].failed;
				else if (state == SE_ENTRY_ACTIVE &&
						 SeShmem->workers[owners[i]].generation != SeEntries[e].taker_generation)
					failed = true;	/* the worker that took it exited (FATAL) and was restarted */
				else
					continue;
				free_entry_locked(e);
				entries[i] = -1;
				left--;
				if (!failed)
					succeeded++;
			}
			SpinLockRelease(&SeShmem->queue_mutex);
			if (left > 0)
			{
				ConditionVariableTimedSleep(&SeShmem->control_cv, 1000, PG_WAIT_EXTENSION);
				se_check_wait_interrupts();
			}
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		SpinLockAcquire(&SeShmem->queue_mutex);
		for (i = 0; i < n; i++)
		{
			int			e = entries[i];

			if (e < 0)
				continue;
			if (SeEntries[e].state == SE_ENTRY_DONE)
				free_entry_locked(e);
			else
				SeEntries[e].state = SE_ENTRY_ABANDONED;
		}
		SpinLockRelease(&SeShmem->queue_mutex);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pfree(entries);
	pfree(owners);
	return succeeded;
}

/* One control request (see se_queue_control_many); false if it failed. */
bool
se_queue_control(int slot, SeRequestKind kind, int64 arg)
{
	return se_queue_control_many(&slot, 1, kind, arg) == 1;
}
