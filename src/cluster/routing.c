/*-------------------------------------------------------------------------
 *
 * routing.c
 *	  The rules of one shard's routing: copies, primary term, in-sync ids.
 *
 * The master changes a shard's routing only through these (state_sync.c,
 * reroute.c, shard_state.c call them on the state they commit): a copy
 * unassigned leaves the in-sync set (it misses the writes from now on); a
 * replica count changed adds unassigned replicas or removes the least
 * advanced ones; an unassigned primary is replaced by a STARTED in-sync
 * replica with the primary term + 1 (ES's failover: a copy outside the
 * in-sync set is never promoted, so no acknowledged write is lost).
 * Pure, so that test/unit/test_routing.c runs the rules alone.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "cluster/routing.h"

bool
se_routing_in_sync(const SeShardRouting *r, const char *allocation_id)
{
	int			k;

	if (allocation_id == NULL || allocation_id[0] == '\0')
		return false;
	for (k = 0; k < r->nin_sync; k++)
		if (strcmp(r->in_sync[k], allocation_id) == 0)
			return true;
	return false;
}

void
se_routing_in_sync_add(SeShardRouting *r, const char *allocation_id)
{
	if (allocation_id == NULL || allocation_id[0] == '\0' ||
		se_routing_in_sync(r, allocation_id))
		return;
	r->in_sync = r->in_sync ? repalloc(r->in_sync, sizeof(char *) * (r->nin_sync + 1))
		: palloc(sizeof(char *));
	r->in_sync[r->nin_sync++] = pstrdup(allocation_id);
}

void
se_routing_in_sync_remove(SeShardRouting *r, const char *allocation_id)
{
	int			k;

	for (k = 0; k < r->nin_sync; k++)
		if (strcmp(r->in_sync[k], allocation_id) == 0)
		{
			r->in_sync[k] = r->in_sync[--r->nin_sync];
			return;
		}
}

void
se_routing_init_replica(SeShardCopy *c, const char *reason, int64 now_ms)
{
	memset(c, 0, sizeof(*c));
	c->state = SE_SHARD_UNASSIGNED;
	c->primary = false;
	c->node = "";
	c->unassigned_reason = pstrdup(reason);
	c->unassigned_at = now_ms;
}

void
se_routing_unassign(SeShardRouting *r, int k, const char *reason, const char *details,
					int64 now_ms)
{
	SeShardCopy *c = &r->copies[k];

	se_routing_in_sync_remove(r, c->allocation_id);
	c->state = SE_SHARD_UNASSIGNED;
	c->allocation_id[0] = '\0';
	c->node = "";
	c->unassigned_reason = pstrdup(reason);
	c->unassigned_at = now_ms;
	c->unassigned_details = details ? pstrdup(details) : NULL;
}

/*
 * Removed replicas go unassigned ones first, then initializing, then
 * started (the last in the list first among equals), as ES removes the
 * copies that cost least.
 */
bool
se_routing_resize(SeShardRouting *r, int ncopies, int64 now_ms)
{
	bool		changed = false;
	int			k;

	if (r->ncopies < ncopies)
	{
		r->copies = repalloc(r->copies, sizeof(SeShardCopy) * ncopies);
		for (k = r->ncopies; k < ncopies; k++)
			se_routing_init_replica(&r->copies[k], "REPLICA_ADDED", now_ms);
		r->ncopies = ncopies;
		changed = true;
	}
	while (r->ncopies > Max(ncopies, 1))
	{
		int			victim = -1;
		int			rank;

		for (rank = SE_SHARD_UNASSIGNED; victim < 0 && rank <= SE_SHARD_STARTED; rank++)
			for (k = r->ncopies - 1; k >= 1 && victim < 0; k--)
				if ((int) r->copies[k].state == rank)
					victim = k;
		se_routing_in_sync_remove(r, r->copies[victim].allocation_id);
		memmove(&r->copies[victim], &r->copies[victim + 1],
				sizeof(SeShardCopy) * (r->ncopies - victim - 1));
		r->ncopies--;
		changed = true;
	}
	return changed;
}

/*
 * The primary is unassigned: the first STARTED replica in the in-sync set
 * becomes the primary (copies[0]) with the term + 1; the old primary's
 * place becomes an unassigned replica, so the shard keeps its copies.
 * False when no copy may be promoted (the shard stays red: a stale copy
 * is promoted only by allocate_stale_primary).
 */
bool
se_routing_promote(SeShardRouting *r, int64 now_ms)
{
	SeShardCopy old;
	int			k;

	if (r->copies[0].state != SE_SHARD_UNASSIGNED)
		return false;
	for (k = 1; k < r->ncopies; k++)
	{
		SeShardCopy *c = &r->copies[k];

		if (c->state != SE_SHARD_STARTED || !se_routing_in_sync(r, c->allocation_id))
			continue;
		old = r->copies[0];
		r->copies[0] = *c;
		r->copies[0].primary = true;
		r->copies[0].data_node = pstrdup(r->copies[0].node);
		se_routing_init_replica(c, old.unassigned_reason ? old.unassigned_reason : "NODE_LEFT",
								now_ms);
		c->unassigned_details =
			psprintf("primary failed over to [%s]; was: %s", r->copies[0].node,
					 old.unassigned_details ? old.unassigned_details : "unassigned");
		c->failed_attempts = old.failed_attempts;
		r->primary_term++;
		return true;
	}
	return false;
}

const SeShardCopy *
se_routing_copy_on(const SeShardRouting *r, const char *node)
{
	int			k;

	for (k = 0; k < r->ncopies; k++)
		if (r->copies[k].state != SE_SHARD_UNASSIGNED && strcmp(r->copies[k].node, node) == 0)
			return &r->copies[k];
	return NULL;
}
