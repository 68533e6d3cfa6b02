/*-------------------------------------------------------------------------
 *
 * relocation.c
 *	  The handoff of a relocating primary (ES's IndexShard.relocated and
 *	  its operation permits).
 *
 * A primary moves as a replica does: its target, an INITIALIZING copy on
 * the new node, recovers from it (recovery_*.c) and is replicated to as a
 * tracked copy.  At recovery_finalize the source hands off: it refuses
 * new writes (se_relocation_write_begin answers false: the coordinator
 * gets retry_on_primary_exception and routes them again once its cluster
 * state shows the new primary), waits until the bulk rounds already
 * admitted have been replicated -- to the target too, so the target then
 * holds every operation the source assigned a seq_no to (recovery_target.c
 * checks its local checkpoint reached the source's max_seq_no) -- and
 * answers.  The target then reports started; the master makes it the
 * primary in place of the source with the SAME primary term (ES does not
 * bump the term on a relocation), and the source's copy is closed.
 *
 * The window: between the handoff and the moment every node applied the
 * new routing, the source is still primary in some nodes' states, but it
 * takes no write, so no operation is acknowledged by a copy that is no
 * longer primary, and none is acknowledged twice (a refused write was not
 * applied anywhere).  Replicas do not need to refuse the old primary: it
 * sends them nothing after the handoff (same term, so they could not tell
 * by the term; a later failover bumps it).  If the relocation is cancelled
 * after the handoff (the target failed before it reported started), the
 * source is primary without a relocation again and takes writes
 * (se_relocation_reconcile).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "node/node.h"
#include "replication/relocation.h"
#include "replication/replication.h"

/* how long a handoff waits for the writes under way (ES: 30 min; ours are short) */
#define HANDOFF_TIMEOUT_MS	30000

bool
se_relocation_write_begin(int slot)
{
	SeShardSlot *s = &SeSlots[slot];

	pg_atomic_fetch_add_u32(&s->writes_in_flight, 1);
	/* pairs with the barrier in se_relocation_handoff: one of us sees the other */
	pg_memory_barrier();
	if (pg_atomic_read_u32(&s->handoff) != 0)
	{
		se_relocation_write_end(slot);
		return false;
	}
	return true;
}

void
se_relocation_write_end(int slot)
{
	SeShardSlot *s = &SeSlots[slot];

	/* a slot reallocated meanwhile starts from 0: never below */
	uint32		cur = pg_atomic_read_u32(&s->writes_in_flight);

	while (cur > 0 && !pg_atomic_compare_exchange_u32(&s->writes_in_flight, &cur, cur - 1))
		;
}

/* this node's copy of shard is the primary, relocating to target aid */
static bool
primary_moving_to(const SeIndexMeta *im, int shard, const char *aid)
{
	const SeShardCopy *p = se_state_primary_copy(im, shard);

	return p != NULL && se_routing_relocating(p) && se_state_shard_local(im, shard) &&
		(aid == NULL || strcmp(p->relocation_id, aid) == 0);
}

bool
se_relocation_handoff(int slot, const SeIndexMeta *im, int shard, const char *aid,
					  SeError *err)
{
	SeShardSlot *s = &SeSlots[slot];
	TimestampTz deadline;

	if (!primary_moving_to(im, shard, aid))
		return true;
	strlcpy(s->handoff_id, aid, sizeof(s->handoff_id));
	pg_atomic_write_u32(&s->handoff, 1);
	pg_memory_barrier();
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), HANDOFF_TIMEOUT_MS);
	while (pg_atomic_read_u32(&s->writes_in_flight) > 0)
	{
		if (GetCurrentTimestamp() >= deadline)
		{
			pg_atomic_write_u32(&s->handoff, 0);
			se_error_set(err, 503, "illegal_state_exception",
						 "relocation handoff of [%s][%d] timed out waiting for the writes under way",
						 im->name, shard);
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 5, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		se_check_wait_interrupts();
	}
	ereport(LOG,
			(errmsg("search_engine: primary [%s][%d] handed off to relocation target [%s] at max_seq_no [" INT64_FORMAT "]",
					im->name, shard, aid, (int64) pg_atomic_read_u64(&s->max_seq_no))));
	return true;
}

void
se_relocation_reconcile(int slot, const SeIndexMeta *im, int shard)
{
	SeShardSlot *s = &SeSlots[slot];

	if (pg_atomic_read_u32(&s->handoff) == 0 || !se_state_shard_local(im, shard))
		return;
	/* still primary here, and no longer moving to that target: cancelled */
	if (!primary_moving_to(im, shard, s->handoff_id))
	{
		ereport(LOG,
				(errmsg("search_engine: relocation of primary [%s][%d] to [%s] was cancelled: it takes writes again",
						im->name, shard, s->handoff_id)));
		pg_atomic_write_u32(&s->handoff, 0);
	}
}
