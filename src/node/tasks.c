/*-------------------------------------------------------------------------
 *
 * tasks.c
 *	  The task registry in shared memory and its files (see tasks.h).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "node/tasks.h"
#include "util/fileio.h"
#include "util/json.h"

SeTaskShared *SeTasks = NULL;
int			se_task_threads = 2;

Size
se_tasks_shmem_size(void)
{
	return MAXALIGN(sizeof(SeTaskShared));
}

void
se_tasks_shmem_init(void)
{
	bool		found;

	SeTasks = ShmemInitStruct("search_engine tasks", se_tasks_shmem_size(), &found);
	if (!found)
	{
		int			i;

		memset(SeTasks, 0, sizeof(SeTaskShared));
		LWLockInitialize(&SeTasks->lock, SeShmem->state_lock.tranche);
		ConditionVariableInit(&SeTasks->cv);
		SeTasks->next_id = 1;
		SeTasks->nworkers = se_task_threads;
		for (i = 0; i < SE_MAX_WRITE_THREADS; i++)
			SeTasks->worker_procnos[i] = -1;
	}
}

char *
se_tasks_dir(void)
{
	return psprintf("%s/_tasks", se_data_directory());
}

char *
se_task_file(int64 id)
{
	return psprintf("%s/_tasks/" INT64_FORMAT ".json", se_data_directory(), id);
}

/*
 * Once per node start: continue task numbering after the highest stored
 * task, and mark tasks the restart interrupted as failed (their applied
 * updates stay; ES reports such tasks as failed, not lost).
 */
void
se_tasks_bootstrap(void)
{
	char	   *dir;
	DIR		   *d;
	struct dirent *de;
	int64		max_id = 0;

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	if (SeTasks->bootstrapped)
	{
		LWLockRelease(&SeTasks->lock);
		return;
	}
	dir = se_tasks_dir();
	se_mkdir_p(dir);
	d = AllocateDir(dir);
	while ((de = ReadDir(d, dir)) != NULL)
	{
		int64		id;
		char		tail;

		if (sscanf(de->d_name, INT64_FORMAT ".jso%c", &id, &tail) != 2)
			continue;
		if (id > max_id)
			max_id = id;
		{
			char	   *path = psprintf("%s/%s", dir, de->d_name);
			size_t		len;
			char	   *data = se_file_read_all(path, &len, true);
			SeJsonParseOptions opts = {0};
			SeError		err;
			SeJson	   *root;

			se_error_init(&err);
			root = data ? se_json_parse(data, len, &opts, &err) : NULL;
			if (root && se_json_get(root, "completed") &&
				se_json_get(root, "completed")->type == SE_JSON_FALSE)
			{
				StringInfoData buf;
				SeJson	   *task = se_json_get(root, "task");

				initStringInfo(&buf);
				appendStringInfoString(&buf, "{\"completed\":true,\"task\":");
				if (task)
					se_json_write(&buf, task);
				else
					appendStringInfoString(&buf, "{}");
				appendStringInfoString(&buf, ",\"error\":{\"type\":\"task_cancelled_exception\","
									   "\"reason\":\"the node restarted while the task was running; updates applied before the restart are kept\"}");
				if (se_json_get(root, "request"))
				{
					appendStringInfoString(&buf, ",\"request\":");
					se_json_write(&buf, se_json_get(root, "request"));
				}
				appendStringInfoChar(&buf, '}');
				se_file_write_durable(path, buf.data, buf.len);
			}
		}
	}
	FreeDir(d);
	SeTasks->next_id = max_id + 1;
	SeTasks->bootstrapped = true;
	LWLockRelease(&SeTasks->lock);
}

/* First run of n free slice entries, or -1; caller holds the lock. */
static int
free_slice_run(int n)
{
	int			i,
				run = 0;

	for (i = 0; i < SE_MAX_SLICES; i++)
	{
		run = (SeTasks->slices[i].state == SE_SLICE_FREE) ? run + 1 : 0;
		if (run == n)
			return i - n + 1;
	}
	return -1;
}

/* Forget a completed task: its entry and slices become free. */
static void
release_task(SeTask *tk)
{
	int			i;

	for (i = tk->first_slice; i < tk->first_slice + tk->nslices; i++)
		SeTasks->slices[i].state = SE_SLICE_FREE;
	tk->state = SE_TASK_FREE;
}

/*
 * Find room for a task and nslices contiguous slices.  Completed tasks keep
 * their entries (live status) until room is needed; their results stay in
 * their files.
 */
int
se_task_create(const char *action, const char *description, int nslices,
			   float4 rps, Oid owner, int64 *id)
{
	int			t = -1;
	int			i,
				start;

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	for (i = 0; i < SE_MAX_TASKS && t < 0; i++)
		if (SeTasks->tasks[i].state == SE_TASK_FREE)
			t = i;
	start = free_slice_run(nslices);
	if (t < 0 || start < 0)
	{
		for (i = 0; i < SE_MAX_TASKS; i++)
			if (SeTasks->tasks[i].state == SE_TASK_COMPLETED)
			{
				release_task(&SeTasks->tasks[i]);
				if (t < 0)
					t = i;
			}
		start = free_slice_run(nslices);
	}
	if (t < 0 || start < 0)
	{
		LWLockRelease(&SeTasks->lock);
		return -1;
	}
	{
		SeTask	   *tk = &SeTasks->tasks[t];

		memset(tk, 0, sizeof(*tk));
		tk->state = SE_TASK_RUNNING;
		tk->id = SeTasks->next_id++;
		tk->owner = owner;
		strlcpy(tk->action, action, sizeof(tk->action));
		strlcpy(tk->description, description, sizeof(tk->description));
		tk->start_millis = (int64) (GetCurrentTimestamp() / 1000) +
			((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400 * 1000);
		tk->nslices = nslices;
		tk->first_slice = start;
		tk->requests_per_second = rps;
		tk->rps_share = 1;
		for (i = 0; i < nslices; i++)
		{
			SeTaskSlice *sl = &SeTasks->slices[start + i];

			memset(sl, 0, sizeof(*sl));
			sl->task = t;
			sl->slice_id = i;
			/* queued only once the caller has written the request file */
			sl->state = SE_SLICE_PENDING;
		}
		*id = tk->id;
	}
	LWLockRelease(&SeTasks->lock);
	return t;
}

int
se_task_find(int64 id)
{
	int			i;
	int			found = -1;

	LWLockAcquire(&SeTasks->lock, LW_SHARED);
	for (i = 0; i < SE_MAX_TASKS; i++)
		if (SeTasks->tasks[i].state != SE_TASK_FREE && SeTasks->tasks[i].id == id)
			found = i;
	LWLockRelease(&SeTasks->lock);
	return found;
}

void
se_tasks_wake_workers(void)
{
	int			i;

	for (i = 0; i < SeTasks->nworkers; i++)
	{
		int			procno = SeTasks->worker_procnos[i];

		if (procno >= 0)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	}
}

/* Append one failure (a JSON object) to the task; keeps the first few. */
void
se_task_add_failure(int task, const char *json)
{
	SeTask	   *tk = &SeTasks->tasks[task];
	int			len = strlen(json);

	LWLockAcquire(&SeTasks->lock, LW_EXCLUSIVE);
	if (tk->failures_len + len + 2 < SE_TASK_FAILURES)
	{
		if (tk->failures_len > 0)
			tk->failures[tk->failures_len++] = ',';
		memcpy(tk->failures + tk->failures_len, json, len);
		tk->failures_len += len;
		tk->failures[tk->failures_len] = '\0';
	}
	LWLockRelease(&SeTasks->lock);
}

/* Sum of the slices' counters (caller holds the lock or accepts a racy read). */
void
se_task_counters(int task, SeSliceCounters *sum)
{
	SeTask	   *tk = &SeTasks->tasks[task];
	int			i;

	memset(sum, 0, sizeof(*sum));
	for (i = tk->first_slice; i < tk->first_slice + tk->nslices; i++)
	{
		se_slice_counters_add(sum, &SeTasks->slices[i].c);
		se_slice_counters_add(sum, &SeTasks->slices[i].rc);
	}
}

void
se_slice_counters_add(SeSliceCounters *sum, const SeSliceCounters *c)
{
	sum->total += c->total;
	sum->updated += c->updated;
	sum->created += c->created;
	sum->deleted += c->deleted;
	sum->batches += c->batches;
	sum->version_conflicts += c->version_conflicts;
	sum->noops += c->noops;
	sum->retries_bulk += c->retries_bulk;
	sum->throttled_millis += c->throttled_millis;
}

/*
 * A task is answered when its local slices and its children are all done;
 * the last slice's worker or the children's poller may see that first,
 * and exactly one of them writes the response.
 */
bool
se_task_claim_finalize(int task)
{
	SeTask	   *tk = &SeTasks->tasks[task];

	if (tk->finalizing || tk->slices_done < tk->nslices ||
		tk->children_done < tk->nchildren)
		return false;
	tk->finalizing = true;
	return true;
}
