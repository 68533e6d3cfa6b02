/*-------------------------------------------------------------------------
 *
 * merge_worker.c
 *	  Background merges: a small task table in shared memory and the merge
 *	  workers that run the tasks.
 *
 * A shard's owner picks the segments to merge (tiered: the smallest ones),
 * makes sure their live docs are on disk, and submits a task naming the
 * input segment and live-docs generations and the output generation.  A
 * merge worker reads the immutable inputs, writes the merged segment file
 * and reports back; the owner then installs it, carrying over the deletes
 * that arrived while the merge ran.  Merge workers run at a lower CPU
 * priority (nice 10) so that on a busy machine indexing and searches win,
 * and the owner keeps taking writes the whole time: merges never block
 * the write queue.  Foreground work goes first: a merge waits to start
 * (up to MERGE_DEFER_MAX_MS) while bulk requests are in flight or were
 * answered within the last MERGE_BULK_QUIET_MS, or update/delete-by-query
 * slices run, unless its shard is far over its segment budget (urgent),
 * so that on a small machine a merge that becomes due in the middle of a
 * job does not take the job's CPU.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/resource.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "index/segment.h"
#include "node/node.h"
#include "node/tasks.h"
#include "shard/engine.h"
#include "util/fileio.h"

void
se_merge_register(void)
{
	se_bgw_register("se_merge_worker_main", "search_engine merge worker",
					se_merge_threads, false);
}

static void
wake_merge_workers(void)
{
	int			i;

	for (i = 0; i < SeShmem->nmerge_workers; i++)
	{
		int			procno = SeShmem->merge_procnos[i];

		if (procno >= 0)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	}
}

/* Queue a task; returns its number, or -1 when the table is full. */
int
se_merge_submit(const SeMergeTask *task)
{
	int			i;
	int			found = -1;

	if (SeShmem->nmerge_workers == 0)
		return -1;
	SpinLockAcquire(&SeShmem->merge_mutex);
	for (i = 0; i < SE_MAX_MERGE_TASKS; i++)
	{
		if (SeShmem->merge_tasks[i].state == SE_MERGE_FREE)
		{
			SeShmem->merge_tasks[i] = *task;
			SeShmem->merge_tasks[i].state = SE_MERGE_QUEUED;
			SeShmem->merge_tasks[i].owner_procno = MyProc->pgprocno;
			SeShmem->merge_tasks[i].error[0] = '\0';
			found = i;
			break;
		}
	}
	SpinLockRelease(&SeShmem->merge_mutex);
	if (found >= 0)
		wake_merge_workers();
	return found;
}

SeMergeState
se_merge_state(int task, char *error, size_t errlen)
{
	SeMergeState st;

	SpinLockAcquire(&SeShmem->merge_mutex);
	st = (SeMergeState) SeShmem->merge_tasks[task].state;
	if (error)
		strlcpy(error, SeShmem->merge_tasks[task].error, errlen);
	SpinLockRelease(&SeShmem->merge_mutex);
	return st;
}

void
se_merge_release(int task)
{
	SpinLockAcquire(&SeShmem->merge_mutex);
	SeShmem->merge_tasks[task].state = SE_MERGE_FREE;
	SpinLockRelease(&SeShmem->merge_mutex);
}

/* The owner no longer wants the result (shard closing, inputs merged inline). */
void
se_merge_abandon(int task)
{
	char	   *orphan = NULL;

	SpinLockAcquire(&SeShmem->merge_mutex);
	switch (SeShmem->merge_tasks[task].state)
	{
		case SE_MERGE_QUEUED:
		case SE_MERGE_FAILED:
			SeShmem->merge_tasks[task].state = SE_MERGE_FREE;
			break;
		case SE_MERGE_RUNNING:
			SeShmem->merge_tasks[task].state = SE_MERGE_ABANDONED;
			break;
		case SE_MERGE_DONE:
			orphan = psprintf("%s/index/_" UINT64_FORMAT ".seg",
							  se_shard_path(SeShmem->merge_tasks[task].index_uuid,
											SeShmem->merge_tasks[task].shard),
							  SeShmem->merge_tasks[task].out_gen);
			SeShmem->merge_tasks[task].state = SE_MERGE_FREE;
			break;
		default:
			break;
	}
	SpinLockRelease(&SeShmem->merge_mutex);
	if (orphan)
		(void) unlink(orphan);
}

/* Run one task: map the inputs, merge, write the output file. */
static void
run_task(SeMergeTask *t, char *errbuf, size_t errlen)
{
	char	   *dir = psprintf("%s/index", se_shard_path(t->index_uuid, t->shard));
	SeSegmentReader *readers[SE_MERGE_MAX_INPUTS];
	const uint64 *live[SE_MERGE_MAX_INPUTS];
	SeMappedFile files[SE_MERGE_MAX_INPUTS];
	SeError		err;
	StringInfoData out;
	uint8		id[SE_SEGMENT_ID_LEN];
	int			i;
	bool		ok = true;

	se_error_init(&err);
	memset(files, 0, sizeof(files));
	for (i = 0; i < t->ninputs && ok; i++)
	{
		char	   *path = psprintf("%s/_" UINT64_FORMAT ".seg", dir, t->gens[i]);

		if (!se_file_map(path, &files[i]))
		{
			snprintf(errbuf, errlen, "could not open \"%s\": %m", path);
			ok = false;
			break;
		}
		readers[i] = se_segment_open(files[i].data, files[i].len, true, &err);
		if (readers[i] == NULL)
		{
			snprintf(errbuf, errlen, "%s", err.reason);
			ok = false;
			break;
		}
		live[i] = NULL;
		if (t->del_gens[i] > 0)
		{
			char	   *lp = psprintf("%s/_" UINT64_FORMAT "_" UINT64_FORMAT ".liv", dir,
									  t->gens[i], t->del_gens[i]);
			size_t		len;
			char	   *data = se_file_read_all(lp, &len, true);
			uint8		sid[SE_SEGMENT_ID_LEN];

			se_segment_get_id(readers[i], sid);
			live[i] = data ? se_livedocs_parse((const uint8 *) data, len,
											   se_segment_max_doc(readers[i]), sid, &err) : NULL;
			if (live[i] == NULL)
			{
				snprintf(errbuf, errlen, "live docs \"%s\": %s", lp,
						 err.reason ? err.reason : "missing");
				ok = false;
			}
		}
	}
	if (ok)
	{
		if (!pg_strong_random(id, sizeof(id)))
			elog(ERROR, "could not generate a segment id");
		initStringInfo(&out);
		if (!se_segment_merge(readers, live, t->ninputs, id, t->zstd_level, &out, &err))
		{
			snprintf(errbuf, errlen, "%s", err.reason);
			ok = false;
		}
		else
			se_file_write_plain(psprintf("%s/_" UINT64_FORMAT ".seg", dir, t->out_gen),
								out.data, out.len, false);
	}
	for (i = 0; i < t->ninputs; i++)
		if (files[i].data)
			se_file_unmap(&files[i]);
	if (!ok)
		elog(ERROR, "merge of shard [%s][%d] failed: %s", t->index_uuid, t->shard, errbuf);
}

#define MERGE_DEFER_MAX_MS	30000
#define MERGE_DEFER_POLL_MS 50

/*
 * A bulk batch finished this recently counts as bulk traffic: a write
 * worker acknowledges a batch before it indexes it (deferred indexing),
 * so between one client's requests the queue is often empty for a moment
 * while the load goes on.
 */
#define MERGE_BULK_QUIET_MS	500

/*
 * Bulk sub-requests in flight or finished within MERGE_BULK_QUIET_MS, or
 * by-query slices running, node-wide.
 */
static bool
foreground_busy(void)
{
	int			i;
	TimestampTz last = (TimestampTz) pg_atomic_read_u64(&SeShmem->last_bulk_at);

	if (*(volatile int *) &SeShmem->queued > 0)
		return true;
	if (last != 0 &&
		!TimestampDifferenceExceeds(last, GetCurrentTimestamp(), MERGE_BULK_QUIET_MS))
		return true;
	for (i = 0; i < SE_MAX_SLICES; i++)
		if (*(volatile int *) &SeTasks->slices[i].state == SE_SLICE_RUNNING)
			return true;
	return false;
}

/*
 * Let foreground work finish before task i starts (at most
 * MERGE_DEFER_MAX_MS); false if the owner gave the task up meanwhile or
 * the worker is asked to stop.
 */
static bool
defer_to_foreground(int i)
{
	int			waited = 0;

	while (waited < MERGE_DEFER_MAX_MS && foreground_busy())
	{
		int			state;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 MERGE_DEFER_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (se_bgw_got_sigterm)
			return false;
		SpinLockAcquire(&SeShmem->merge_mutex);
		state = SeShmem->merge_tasks[i].state;
		SpinLockRelease(&SeShmem->merge_mutex);
		if (state == SE_MERGE_ABANDONED)
			return false;
		waited += MERGE_DEFER_POLL_MS;
	}
	return true;
}

/* Finish task i: DONE/FAILED, or drop the output if the owner left. */
static void
complete_task(int i, bool ok, const char *error)
{
	char	   *orphan = NULL;
	int			owner;
	SeMergeTask *t = &SeShmem->merge_tasks[i];

	SpinLockAcquire(&SeShmem->merge_mutex);
	owner = t->owner_procno;
	if (t->state == SE_MERGE_ABANDONED)
	{
		if (ok)
			orphan = psprintf("%s/index/_" UINT64_FORMAT ".seg",
							  se_shard_path(t->index_uuid, t->shard), t->out_gen);
		t->state = SE_MERGE_FREE;
	}
	else
	{
		t->state = ok ? SE_MERGE_DONE : SE_MERGE_FAILED;
		if (error)
			strlcpy(t->error, error, sizeof(t->error));
	}
	if (ok)
		SeShmem->merges_completed++;
	SpinLockRelease(&SeShmem->merge_mutex);
	if (orphan)
		(void) unlink(orphan);
	if (owner >= 0)
		SetLatch(&ProcGlobal->allProcs[owner].procLatch);
}

void
se_merge_worker_main(Datum arg)
{
	int			me = DatumGetInt32(arg);
	sigjmp_buf	local_sigjmp_buf;
	MemoryContext cxt;
	int			current = -1;

	se_bgw_start();
	/* merges yield the CPU to indexing and searches */
	(void) setpriority(PRIO_PROCESS, 0, 10);
	SeShmem->merge_procnos[me] = MyProc->pgprocno;
	cxt = AllocSetContextCreate(TopMemoryContext, "search_engine merge", ALLOCSET_DEFAULT_SIZES);

	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		if (current >= 0)
			complete_task(current, false, edata->message);
		current = -1;
		MemoryContextReset(cxt);
		RESUME_INTERRUPTS();
	}
	PG_exception_stack = &local_sigjmp_buf;

	while (se_bgw_loop_top())
	{
		int			i;
		SeMergeTask task;

		current = -1;
		SpinLockAcquire(&SeShmem->merge_mutex);
		/* urgent tasks (a shard far over its budget) first */
		for (i = 0; i < SE_MAX_MERGE_TASKS; i++)
		{
			if (SeShmem->merge_tasks[i].state == SE_MERGE_QUEUED &&
				(current < 0 || (SeShmem->merge_tasks[i].urgent &&
								 !SeShmem->merge_tasks[current].urgent)))
				current = i;
		}
		if (current >= 0)
		{
			SeShmem->merge_tasks[current].state = SE_MERGE_RUNNING;
			task = SeShmem->merge_tasks[current];
		}
		SpinLockRelease(&SeShmem->merge_mutex);
		if (current >= 0)
		{
			char		errbuf[256];
			bool		go = task.urgent || defer_to_foreground(current);

			MemoryContextSwitchTo(cxt);
			if (go)
				run_task(&task, errbuf, sizeof(errbuf));
			/* not run: the owner left (or we stop); nothing was written */
			complete_task(current, go, go ? NULL : "merge not started");
			current = -1;
			MemoryContextReset(cxt);
			continue;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	SeShmem->merge_procnos[me] = -1;
	/* exit code 1: if the server is not shutting down, restart this worker */
	proc_exit(1);
}
