/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Node-wide shared memory: queue entries, write-worker states, shard
 *	  slots with their published snapshots.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "cluster/coordinator.h"
#include "cluster/replica_select.h"
#include "http/http.h"
#include "node/node.h"
#include "node/tasks.h"
#include "replication/recovery.h"
#include "shard/pit_registry.h"

SeShared   *SeShmem = NULL;
SeQueueEntry *SeEntries = NULL;
SeShardSlot *SeSlots = NULL;

static int	se_lwlock_tranche = 0;

int
se_shmem_queue_capacity(void)
{
	return se_write_queue_size + SE_CONTROL_SLOTS;
}

static Size
shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(SeShared));

	size = add_size(size, MAXALIGN(mul_size(se_shmem_queue_capacity(), sizeof(SeQueueEntry))));
	size = add_size(size, mul_size(se_max_shards, sizeof(SeShardSlot)));
	return size;
}

/* Called from the shmem_request_hook. */
void
se_shmem_request(void)
{
	RequestAddinShmemSpace(shmem_size());
	RequestAddinShmemSpace(se_tasks_shmem_size());
	RequestAddinShmemSpace(se_search_queue_shmem_size());
	RequestAddinShmemSpace(se_cluster_shmem_size());
	RequestAddinShmemSpace(se_recovery_shmem_size());
	RequestAddinShmemSpace(se_ars_shmem_size());
	RequestAddinShmemSpace(se_pit_shmem_size());
	RequestAddinShmemSpace(se_http_auth_shmem_size());
	RequestAddinShmemSpace(se_http_stats_shmem_size());
}

/* Called from the shmem_startup_hook: create or attach. */
void
se_shmem_startup(void)
{
	bool		found;
	char	   *base;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	base = ShmemInitStruct("search_engine", shmem_size(), &found);
	SeShmem = (SeShared *) base;
	SeEntries = (SeQueueEntry *) (base + MAXALIGN(sizeof(SeShared)));
	SeSlots = (SeShardSlot *) (base + MAXALIGN(sizeof(SeShared)) +
							   MAXALIGN(mul_size(se_shmem_queue_capacity(), sizeof(SeQueueEntry))));
	if (!found)
	{
		int			i,
					k;

		memset(base, 0, shmem_size());
		se_lwlock_tranche = LWLockNewTrancheId();
		LWLockInitialize(&SeShmem->state_lock, se_lwlock_tranche);
		LWLockInitialize(&SeShmem->slots_lock, se_lwlock_tranche);
		pg_atomic_init_u64(&SeShmem->state_version, 0);
		pg_atomic_init_u64(&SeShmem->last_bulk_at, 0);
		pg_atomic_init_u64(&SeShmem->transport_server_open, 0);
		pg_atomic_init_u64(&SeShmem->transport_outbound_opened, 0);
		pg_atomic_init_u64(&SeShmem->transport_rx_count, 0);
		pg_atomic_init_u64(&SeShmem->transport_rx_bytes, 0);
		pg_atomic_init_u64(&SeShmem->transport_tx_count, 0);
		pg_atomic_init_u64(&SeShmem->transport_tx_bytes, 0);
		SpinLockInit(&SeShmem->queue_mutex);
		SpinLockInit(&SeShmem->merge_mutex);
		SeShmem->nmerge_workers = se_merge_threads;
		for (i = 0; i < SE_MAX_MERGE_THREADS; i++)
			SeShmem->merge_procnos[i] = -1;
		ConditionVariableInit(&SeShmem->control_cv);
		ConditionVariableInit(&SeShmem->slot_cv);
		ConditionVariableInit(&SeShmem->refresh_cv);
		SeShmem->nentries = se_shmem_queue_capacity();
		for (i = 0; i < SeShmem->nentries; i++)
			SeEntries[i].next = (i + 1 < SeShmem->nentries) ? i + 1 : -1;
		SeShmem->free_head = 0;
		SeShmem->nworkers = se_write_threads;
		for (i = 0; i < SE_MAX_WRITE_THREADS; i++)
		{
			SeShmem->workers[i].head = -1;
			SeShmem->workers[i].tail = -1;
			SeShmem->workers[i].procno = -1;
		}
		SeShmem->nslots = se_max_shards;
		for (i = 0; i < se_max_shards; i++)
		{
			SeShardSlot *slot = &SeSlots[i];

			LWLockInitialize(&slot->lock, se_lwlock_tranche);
			pg_atomic_init_u64(&slot->write_gen, 0);
			pg_atomic_init_u64(&slot->refreshed_gen, 0);
			pg_atomic_init_u32(&slot->refresh_listeners, 0);
			pg_atomic_init_u64(&slot->docs_count, 0);
			pg_atomic_init_u64(&slot->docs_deleted, 0);
			pg_atomic_init_u64(&slot->store_bytes, 0);
			pg_atomic_init_u64(&slot->translog_bytes, 0);
			pg_atomic_init_u64(&slot->max_seq_no, 0);
			pg_atomic_init_u64(&slot->indexing_ops, 0);
			for (k = 0; k < SE_STAT_N; k++)
				pg_atomic_init_u64(&slot->stats[k], 0);
			pg_atomic_init_u64(&slot->local_checkpoint, (uint64) -1);
			pg_atomic_init_u64(&slot->global_checkpoint, (uint64) -1);
			pg_atomic_init_u64(&slot->retain_seq_no, (uint64) -1);
			pg_atomic_init_u32(&slot->writes_in_flight, 0);
			pg_atomic_init_u32(&slot->handoff, 0);
			SpinLockInit(&slot->repl_mutex);
			slot->repl_ntargets = 0;
		}
		SeShmem->launcher_pid = 0;
	}
	se_tasks_shmem_init();
	se_search_queue_shmem_init();
	se_cluster_shmem_init();
	se_recovery_shmem_init();
	se_ars_shmem_init();
	se_pit_shmem_init();
	se_http_auth_shmem_init();
	se_http_stats_shmem_init();
	LWLockRelease(AddinShmemInitLock);
	LWLockRegisterTranche(SeShmem->state_lock.tranche, "search_engine");
}
