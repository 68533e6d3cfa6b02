/*-------------------------------------------------------------------------
 *
 * search_queue.c
 *	  The search thread pool's bounded queue of shard-level query requests
 *	  (shared memory) and its workers' registration.
 *
 * A coordinating backend puts the shard requests of one search in one DSM
 * segment (api/search_pool.c) and queues one entry per request here; the
 * search workers take entries in FIFO order.  The bound is ES's search
 * pool queue: search_engine.search_queue_size waiting requests.  A request
 * that does not fit is counted as rejected and not queued; its coordinator
 * runs that shard itself, so a busy pool slows searches down instead of
 * failing them.  An entry leaves the queue when a worker takes it; from then
 * on the request's shm_mq tells the coordinator whether the worker answered
 * or went away.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"

#include "node/node.h"

SeSearchQueue *SeSearchQ = NULL;

Size
se_search_queue_shmem_size(void)
{
	return add_size(offsetof(SeSearchQueue, entries),
					mul_size(se_search_queue_size, sizeof(SeSearchQueueEntry)));
}

void
se_search_queue_shmem_init(void)
{
	bool		found;
	int			i;

	SeSearchQ = ShmemInitStruct("search_engine search queue",
								se_search_queue_shmem_size(), &found);
	if (found)
		return;
	memset(SeSearchQ, 0, se_search_queue_shmem_size());
	SpinLockInit(&SeSearchQ->mutex);
	SeSearchQ->capacity = se_search_queue_size;
	SeSearchQ->head = SeSearchQ->tail = -1;
	for (i = 0; i < se_search_queue_size; i++)
		SeSearchQ->entries[i].next = i + 1 < se_search_queue_size ? i + 1 : -1;
	SeSearchQ->free_head = se_search_queue_size > 0 ? 0 : -1;
	for (i = 0; i < SE_MAX_SEARCH_THREADS; i++)
		SeSearchQ->procnos[i] = -1;
}

/* Number of search workers running now. */
int
se_search_queue_workers(void)
{
	int			n = 0;
	int			i;

	if (SeSearchQ == NULL)
		return 0;
	SpinLockAcquire(&SeSearchQ->mutex);
	for (i = 0; i < SE_MAX_SEARCH_THREADS; i++)
		if (SeSearchQ->procnos[i] >= 0)
			n++;
	SpinLockRelease(&SeSearchQ->mutex);
	return n;
}

/*
 * Queue requests first .. first + n - 1 of the DSM segment handle; returns
 * how many were queued (a prefix; the rest did not fit and count as
 * rejected) and wakes as many idle workers.
 */
int
se_search_queue_submit(dsm_handle handle, int first, int n)
{
	int			wake[SE_MAX_SEARCH_THREADS];
	int			nwake = 0;
	int			queued = 0;
	int			i;

	SpinLockAcquire(&SeSearchQ->mutex);
	while (queued < n && SeSearchQ->free_head >= 0)
	{
		int			e = SeSearchQ->free_head;
		SeSearchQueueEntry *en = &SeSearchQ->entries[e];

		SeSearchQ->free_head = en->next;
		en->next = -1;
		en->handle = handle;
		en->request = first + queued;
		if (SeSearchQ->tail >= 0)
			SeSearchQ->entries[SeSearchQ->tail].next = e;
		else
			SeSearchQ->head = e;
		SeSearchQ->tail = e;
		SeSearchQ->queued++;
		queued++;
	}
	SeSearchQ->rejected += n - queued;
	for (i = 0; i < SE_MAX_SEARCH_THREADS && nwake < queued; i++)
		if (SeSearchQ->idle[i] && SeSearchQ->procnos[i] >= 0)
		{
			SeSearchQ->idle[i] = false;
			wake[nwake++] = SeSearchQ->procnos[i];
		}
	SpinLockRelease(&SeSearchQ->mutex);
	for (i = 0; i < nwake; i++)
		SetLatch(&ProcGlobal->allProcs[wake[i]].procLatch);
	return queued;
}

/* Is request of handle still waiting in the queue (not taken)? */
bool
se_search_queue_pending(dsm_handle handle, int request)
{
	bool		found = false;
	int			e;

	SpinLockAcquire(&SeSearchQ->mutex);
	for (e = SeSearchQ->head; e >= 0 && !found; e = SeSearchQ->entries[e].next)
		found = SeSearchQ->entries[e].handle == handle &&
			SeSearchQ->entries[e].request == request;
	SpinLockRelease(&SeSearchQ->mutex);
	return found;
}

/*
 * Worker me takes the oldest request; false (and the worker is marked idle,
 * to be woken by the next submit) when there is none.
 */
bool
se_search_queue_take(int me, dsm_handle *handle, int *request)
{
	int			e;

	SpinLockAcquire(&SeSearchQ->mutex);
	e = SeSearchQ->head;
	if (e < 0)
	{
		SeSearchQ->idle[me] = true;
		SpinLockRelease(&SeSearchQ->mutex);
		return false;
	}
	SeSearchQ->head = SeSearchQ->entries[e].next;
	if (SeSearchQ->head < 0)
		SeSearchQ->tail = -1;
	*handle = SeSearchQ->entries[e].handle;
	*request = SeSearchQ->entries[e].request;
	SeSearchQ->entries[e].next = SeSearchQ->free_head;
	SeSearchQ->free_head = e;
	SeSearchQ->queued--;
	SeSearchQ->active++;
	SeSearchQ->largest = Max(SeSearchQ->largest, SeSearchQ->active);
	SeSearchQ->idle[me] = false;
	SeSearchQ->busy[me] = true;
	SpinLockRelease(&SeSearchQ->mutex);
	return true;
}

/* Worker finished (answered or gave up on) the request it took. */
void
se_search_queue_done(int me)
{
	SpinLockAcquire(&SeSearchQ->mutex);
	if (SeSearchQ->busy[me])
	{
		SeSearchQ->active--;
		SeSearchQ->completed++;
	}
	SeSearchQ->busy[me] = false;
	SpinLockRelease(&SeSearchQ->mutex);
}

static void
worker_exit(int code, Datum arg)
{
	int			me = DatumGetInt32(arg);

	SpinLockAcquire(&SeSearchQ->mutex);
	SeSearchQ->procnos[me] = -1;
	SeSearchQ->idle[me] = false;
	if (SeSearchQ->busy[me])
		SeSearchQ->active--;
	SeSearchQ->busy[me] = false;
	SpinLockRelease(&SeSearchQ->mutex);
}

/* Search worker me is up (and leaves the pool when its process exits). */
void
se_search_queue_attach_worker(int me)
{
	SpinLockAcquire(&SeSearchQ->mutex);
	SeSearchQ->procnos[me] = MyProc->pgprocno;
	SeSearchQ->idle[me] = false;
	SpinLockRelease(&SeSearchQ->mutex);
	before_shmem_exit(worker_exit, Int32GetDatum(me));
}

/* ES _cat/thread_pool figures of the search pool. */
/* The most requests the pool ran at once since the server started. */
int
se_search_queue_largest(void)
{
	int			n;

	SpinLockAcquire(&SeSearchQ->mutex);
	n = SeSearchQ->largest;
	SpinLockRelease(&SeSearchQ->mutex);
	return n;
}

void
se_search_queue_stats(int *active, int *queued, uint64 *rejected,
					  uint64 *completed)
{
	SpinLockAcquire(&SeSearchQ->mutex);
	*active = SeSearchQ->active;
	*queued = SeSearchQ->queued;
	*rejected = SeSearchQ->rejected;
	*completed = SeSearchQ->completed;
	SpinLockRelease(&SeSearchQ->mutex);
}
