/*-------------------------------------------------------------------------
 *
 * slots.c
 *	  Shard slots: the node's table of open shards and their owners.
 *
 * A slot is allocated when a shard is opened on this node (index created,
 * opened, or found at start-up) and assigned to the write worker owning the
 * fewest shards; that worker alone mutates the shard.
 *
 * States (under slots_lock):
 *
 *   FREE --allocate--> OPENING --owner opened it--> STARTED
 *                         |                            |
 *                         +--owner failed it--> FAILED <+
 *                         ^                       |
 *                         +--owner retries it-----+  (failed on a full disk)
 *   OPENING, STARTED, FAILED --close/delete index--> CLOSING --owner--> FREE
 *
 * Backends allocate and mark CLOSING (holding the index's lifecycle lock);
 * the owner does the rest.  CLOSING wins: the owner's own moves to STARTED
 * or FAILED are refused once a slot is CLOSING (se_slot_advance), so a
 * close or delete requested while the shard was opening or failing is
 * never lost, and the owner closes the shard as soon as it sees it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "node/node.h"

/* Slot of (uuid, shard) in any state but FREE, or -1. */
int
se_slot_find(const char *uuid, int shard)
{
	int			i;
	int			found = -1;

	LWLockAcquire(&SeShmem->slots_lock, LW_SHARED);
	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->state != SE_SLOT_FREE && s->shard == shard &&
			strcmp(s->index_uuid, uuid) == 0)
		{
			found = i;
			break;
		}
	}
	LWLockRelease(&SeShmem->slots_lock);
	return found;
}

/*
 * How many of shards 0..nshards-1 of uuid (NULL: a new index) have no
 * slot yet; *used is the number of slots taken.
 */
int
se_slot_missing(const char *uuid, int nshards, int *used)
{
	int			i;
	int			have = 0;

	*used = 0;
	LWLockAcquire(&SeShmem->slots_lock, LW_SHARED);
	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->state == SE_SLOT_FREE)
			continue;
		(*used)++;
		if (uuid && s->shard < nshards && strcmp(s->index_uuid, uuid) == 0)
			have++;
	}
	LWLockRelease(&SeShmem->slots_lock);
	return nshards - have;
}

/* Allocate a slot in state OPENING; ERROR when the node is full. */
int
se_slot_allocate(const char *uuid, int shard)
{
	int			k;
	int			i;
	int			slot = -1;
	int			owners[SE_MAX_WRITE_THREADS] = {0};
	int			mine[SE_MAX_WRITE_THREADS] = {0};	/* this index's shards */
	int			best = 0;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->state == SE_SLOT_FREE)
		{
			if (slot < 0)
				slot = i;
		}
		else
		{
			if (strcmp(s->index_uuid, uuid) == 0)
			{
				if (s->shard == shard)
				{
					LWLockRelease(&SeShmem->slots_lock);
					return i;
				}
				mine[s->owner]++;
			}
			owners[s->owner]++;
		}
	}
	if (slot < 0)
	{
		LWLockRelease(&SeShmem->slots_lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("this node cannot open more than %d shards", SeShmem->nslots),
				 errdetail("validation_exception"),
				 errhint("Raise search_engine.max_shards and restart the server.")));
	}
	/*
	 * The write worker with the fewest shards of this index, then the
	 * fewest shards in all: an index's shards are spread over the workers
	 * first (as ES balances an index's shards over nodes), so that a bulk
	 * into it uses them all even when other indices' shards, busy or idle,
	 * weigh more on one worker than on another.
	 */
	for (i = 1; i < SeShmem->nworkers; i++)
		if (mine[i] < mine[best] || (mine[i] == mine[best] && owners[i] < owners[best]))
			best = i;
	{
		SeShardSlot *s = &SeSlots[slot];

		LWLockAcquire(&s->lock, LW_EXCLUSIVE);
		strlcpy(s->index_uuid, uuid, sizeof(s->index_uuid));
		s->shard = shard;
		s->owner = best;
		s->delete_files = false;
		s->failure[0] = '\0';
		s->failure_corrupted = false;
		s->failure_disk_full = false;
		s->snapshot_gen = 0;
		s->nsegments = 0;
		pg_atomic_write_u64(&s->write_gen, 0);
		pg_atomic_write_u64(&s->refreshed_gen, 0);
		pg_atomic_write_u64(&s->docs_count, 0);
		pg_atomic_write_u64(&s->docs_deleted, 0);
		pg_atomic_write_u64(&s->store_bytes, 0);
		pg_atomic_write_u64(&s->translog_bytes, 0);
		pg_atomic_write_u64(&s->max_seq_no, 0);
		pg_atomic_write_u64(&s->indexing_ops, 0);
		for (k = 0; k < SE_STAT_N; k++)
			pg_atomic_write_u64(&s->stats[k], 0);
		/* a single copy until the routing (reconcile) says otherwise */
		s->replica = false;
		s->allocation_id[0] = '\0';
		s->reopen = false;
		s->primary_term = 0;
		s->primary_node[0] = '\0';
		se_slot_write_i64(&s->local_checkpoint, -1);
		se_slot_write_i64(&s->global_checkpoint, -1);
		se_slot_write_i64(&s->retain_seq_no, -1);
		pg_atomic_write_u32(&s->writes_in_flight, 0);
		pg_atomic_write_u32(&s->handoff, 0);
		s->handoff_id[0] = '\0';
		SpinLockAcquire(&s->repl_mutex);
		s->repl_ntargets = 0;
		s->resync_term = 0;
		s->resync_running = false;
		s->gcp_sent = -1;
		s->leases_loaded = false;
		s->leases_dirty = false;
		s->leases_saved_ms = 0;
		s->leases_unsaved = false;
		s->leases_synced_ms = 0;
		memset(&s->leases, 0, sizeof(s->leases));
		SpinLockRelease(&s->repl_mutex);
		s->state = SE_SLOT_OPENING;
		LWLockRelease(&s->lock);
	}
	LWLockRelease(&SeShmem->slots_lock);
	return slot;
}

/*
 * The copy slot holds (cluster mode: from the routing): whether it is a
 * replica, its allocation id, the shard's primary term and the primary's
 * node -- if slot still holds (uuid, shard): it may have been freed and
 * taken by another shard since it was found.  Returns true when a replica
 * became the primary (a promotion), which its owner acts on when woken.
 */
bool
se_slot_set_copy(int slot, const char *uuid, int shard, bool replica,
				 const char *allocation_id, int64 primary_term, const char *primary_node)
{
	SeShardSlot *s = &SeSlots[slot];
	bool		promoted;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	if (s->state == SE_SLOT_FREE || s->shard != shard || strcmp(s->index_uuid, uuid) != 0)
	{
		LWLockRelease(&SeShmem->slots_lock);
		return false;
	}
	promoted = s->replica && !replica;

	/*
	 * A replica the master failed and placed here again has a new
	 * allocation id, but what this node holds misses the writes the
	 * primary made while the copy was out of its in-sync set: recover it
	 * again (reusing its files), as ES replaces a shard whose allocation
	 * changed.  Done under the same lock as the id change, so nobody sees
	 * the new id on the old, started copy and reports it started.
	 */
	if (s->replica && replica && s->allocation_id[0] != '\0' &&
		strcmp(s->allocation_id, allocation_id) != 0 &&
		(s->state == SE_SLOT_STARTED || s->state == SE_SLOT_OPENING))
	{
		s->state = SE_SLOT_OPENING;
		s->reopen = true;
	}
	s->replica = replica;
	strlcpy(s->allocation_id, allocation_id, sizeof(s->allocation_id));
	s->primary_term = primary_term;
	strlcpy(s->primary_node, primary_node, sizeof(s->primary_node));
	LWLockRelease(&SeShmem->slots_lock);
	return promoted;
}

/*
 * Move slot to STARTED or FAILED unless it is CLOSING (or FREE): returns
 * whether it moved.
 */
bool
se_slot_advance(int slot, SeSlotState state, const char *failure)
{
	SeShardSlot *s = &SeSlots[slot];
	bool		moved;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	moved = s->state != SE_SLOT_CLOSING && s->state != SE_SLOT_FREE;
	if (moved)
	{
		s->state = state;
		if (failure)
			strlcpy(s->failure, failure, sizeof(s->failure));
	}
	LWLockRelease(&SeShmem->slots_lock);
	ConditionVariableBroadcast(&SeShmem->slot_cv);
	return moved;
}

/* Mark the slot of (uuid, shard) CLOSING; returns it, or -1 if none. */
int
se_slot_mark_closing(const char *uuid, int shard, bool delete_files)
{
	int			i;
	int			found = -1;

	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	for (i = 0; i < SeShmem->nslots && found < 0; i++)
	{
		SeShardSlot *s = &SeSlots[i];

		if (s->state != SE_SLOT_FREE && s->shard == shard &&
			strcmp(s->index_uuid, uuid) == 0)
		{
			/* a delete stays a delete if a close comes after it */
			s->delete_files = s->delete_files || delete_files;
			s->state = SE_SLOT_CLOSING;
			found = i;
		}
	}
	LWLockRelease(&SeShmem->slots_lock);
	if (found >= 0)
		ConditionVariableBroadcast(&SeShmem->slot_cv);
	return found;
}

/* The owner is done closing: the slot is free for another shard. */
void
se_slot_free(int slot)
{
	LWLockAcquire(&SeShmem->slots_lock, LW_EXCLUSIVE);
	SeSlots[slot].state = SE_SLOT_FREE;
	LWLockRelease(&SeShmem->slots_lock);
	ConditionVariableBroadcast(&SeShmem->slot_cv);
}

/*
 * Withdraw the published segment list.  Readers open files under the
 * slot's lock held shared, so once this returns nobody opens a file of the
 * shard any more and its files may go.
 */
void
se_slot_unpublish(int slot)
{
	SeShardSlot *s = &SeSlots[slot];

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	s->nsegments = 0;
	s->snapshot_gen++;
	LWLockRelease(&s->lock);
}

/* Wait while slot is in state (or until timeout); returns the state seen. */
SeSlotState
se_slot_wait_while(int slot, SeSlotState state, int timeout_ms)
{
	TimestampTz start = GetCurrentTimestamp();
	SeSlotState st;

	ConditionVariablePrepareToSleep(&SeShmem->slot_cv);
	for (;;)
	{
		st = (SeSlotState) SeSlots[slot].state;
		if (st != state)
			break;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), timeout_ms))
			break;
		ConditionVariableTimedSleep(&SeShmem->slot_cv, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return st;
}

/* The slot this backend waits on as a refresh listener, -1 none. */
static int	listening_slot = -1;

/* A backend leaving mid-wait (FATAL, terminate) still gives its place back. */
static void
listener_exit(int code, Datum arg)
{
	if (listening_slot >= 0)
		pg_atomic_sub_fetch_u32(&SeSlots[listening_slot].refresh_listeners, 1);
	listening_slot = -1;
}

/* Is slot still the copy of uuid/shard it was, open for reads? */
static bool
slot_still(int slot, const char *uuid, int shard)
{
	SeShardSlot *s = &SeSlots[slot];

	return s->state == SE_SLOT_STARTED && s->shard == shard &&
		strcmp(s->index_uuid, uuid) == 0;
}

/*
 * refresh=wait_for, as ES's RefreshListeners: wait until a refresh of the
 * slot covers write generation gen (the scheduled one, index.refresh_interval;
 * with -1, whatever refresh comes).  When max_listeners writes wait on the
 * shard already, this one forces a refresh instead and the answer says
 * forced_refresh, as ES's does.  A shard closed or moved meanwhile ends the
 * wait: no refresh of that copy will come.  Returns whether it forced one.
 */
bool
se_slot_wait_refresh(int slot, const char *uuid, int shard, uint64 gen,
					 int max_listeners)
{
	SeShardSlot *s = &SeSlots[slot];
	uint32		n;

	if (pg_atomic_read_u64(&s->refreshed_gen) >= gen || !slot_still(slot, uuid, shard))
		return false;
	n = pg_atomic_add_fetch_u32(&s->refresh_listeners, 1);
	if (n > (uint32) Max(max_listeners, 0))
	{
		pg_atomic_sub_fetch_u32(&s->refresh_listeners, 1);
		(void) se_queue_control(slot, SE_REQ_REFRESH, 0);
		return true;
	}
	{
		static bool registered = false;

		if (!registered)
			before_shmem_exit(listener_exit, (Datum) 0);
		registered = true;
	}
	listening_slot = slot;
	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&SeShmem->refresh_cv);
		while (pg_atomic_read_u64(&s->refreshed_gen) < gen && slot_still(slot, uuid, shard))
		{
			ConditionVariableTimedSleep(&SeShmem->refresh_cv, 1000, PG_WAIT_EXTENSION);
			se_check_wait_interrupts();
		}
		ConditionVariableCancelSleep();
	}
	PG_FINALLY();
	{
		listening_slot = -1;
		pg_atomic_sub_fetch_u32(&s->refresh_listeners, 1);
	}
	PG_END_TRY();
	return false;
}
