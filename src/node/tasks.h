/*-------------------------------------------------------------------------
 *
 * tasks.h
 *	  The task registry: long-running jobs (update/delete-by-query,
 *	  reindex) split into slices that a bounded pool of task workers runs.
 *
 * Running tasks and their slices live in shared memory, so progress is
 * visible from any backend (like pg_stat_progress_*); every task also has
 * a file <data_dir>/_tasks/<id>.json holding its request, and, once it
 * ends, its ES response -- so a finished task's result survives the end of
 * the job and a server restart.  A task found unfinished at node start was
 * interrupted by the restart and is marked failed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_TASKS_H
#define SE_TASKS_H

#include "postgres.h"

#include "cluster/coordinator.h"
#include "node/node.h"

#define SE_MAX_TASKS		128
#define SE_MAX_SLICES		4096
#define SE_TASK_FAILURES	2048

typedef enum SeTaskState
{
	SE_TASK_FREE = 0,
	SE_TASK_RUNNING,
	SE_TASK_COMPLETED
} SeTaskState;

typedef enum SeSliceState
{
	SE_SLICE_FREE = 0,
	SE_SLICE_PENDING,			/* allocated, request not yet written */
	SE_SLICE_QUEUED,
	SE_SLICE_RUNNING,
	SE_SLICE_DONE
} SeSliceState;

typedef struct SeSliceCounters
{
	int64		total;
	int64		updated;
	int64		created;
	int64		deleted;
	int64		batches;
	int64		version_conflicts;
	int64		noops;
	int64		retries_bulk;
	int64		throttled_millis;
} SeSliceCounters;

typedef struct SeTaskSlice
{
	int			state;			/* SeSliceState */
	int			task;			/* index in the task table */
	int			slice_id;
	bool		cancelled;		/* stopped by cancellation */
	bool		failed;
	SeSliceCounters c;
	SeSliceCounters rc;			/* this slice's parts on other nodes (child
								 * tasks), as their last answer said */
} SeTaskSlice;

/*
 * Cluster mode: a task's slices run where their shards are.  The task on
 * the coordinating node (the parent) runs the parts over its own shards
 * and has one child task per other node holding shards of the source
 * indices; that node runs the same slices over its own shards.
 */
#define SE_MAX_TASK_CHILDREN 16

typedef struct SeTaskChild
{
	char		node[SE_NODE_NAME_LEN];
	int64		id;				/* the child's task number there; 0 = none */
	float4		share;			/* its part of the shards (of the throttle) */
	float4		rps_sent;		/* the throttle last sent to it */
	bool		done;
	bool		cancel_sent;
	int			poll_failures;	/* consecutive, see SE_TASK_CHILD_MAX_FAILURES */
} SeTaskChild;

typedef struct SeTask
{
	int			state;			/* SeTaskState */
	int64		id;				/* node-local task number */
	Oid			owner;			/* the role that submitted it: its scripts and
								 * writes run as that role; only it (and roles
								 * with its privileges, and admins) see it */
	char		action[64];		/* indices:data/write/update/byquery, ... */
	char		description[256];
	int64		start_millis;	/* epoch ms */
	int64		end_millis;
	int			nslices;
	int			first_slice;	/* slice entries are contiguous */
	int			slices_done;
	bool		cancel_requested;
	float4		requests_per_second;	/* -1 = unlimited */
	bool		failed;
	char		failures[SE_TASK_FAILURES];	/* JSON array elements, comma-separated */
	int			failures_len;
	float4		rps_share;		/* part of requests_per_second the local slices
								 * get: 1, or the local shards' part when
								 * children run the others */
	char		parent[SE_NODE_NAME_LEN + 24];	/* "node:id" of the parent, "" */
	int			nchildren;
	int			children_done;
	bool		finalizing;		/* someone is writing the response */
	SeTaskChild children[SE_MAX_TASK_CHILDREN];
} SeTask;

typedef struct SeTaskShared
{
	LWLock		lock;			/* protects everything below */
	ConditionVariable cv;		/* task completions */
	int64		next_id;
	bool		bootstrapped;
	int			nworkers;
	int			worker_procnos[SE_MAX_WRITE_THREADS];
	SeTask		tasks[SE_MAX_TASKS];
	SeTaskSlice slices[SE_MAX_SLICES];
} SeTaskShared;

extern SeTaskShared *SeTasks;
extern int	se_task_threads;

/* in tasks.c */
extern Size se_tasks_shmem_size(void);
extern void se_tasks_shmem_init(void);
extern char *se_tasks_dir(void);
extern char *se_task_file(int64 id);
extern void se_tasks_bootstrap(void);
/* Allocate a running task with nslices queued slices; -1 if full. */
extern int	se_task_create(const char *action, const char *description,
						   int nslices, float4 rps, Oid owner, int64 *id);
extern int	se_task_find(int64 id);
extern void se_tasks_wake_workers(void);
extern void se_task_add_failure(int task, const char *json);
extern void se_task_counters(int task, SeSliceCounters *sum);
extern void se_slice_counters_add(SeSliceCounters *sum, const SeSliceCounters *c);
/* Caller holds the lock: may this call write task's response (once)? */
extern bool se_task_claim_finalize(int task);

#endif
