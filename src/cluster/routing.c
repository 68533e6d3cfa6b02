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
	/* a moving copy that fails takes its target with it (ES cancels it) */
	c->relocating_node = NULL;
	c->relocation_id[0] = '\0';
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
		/* the new primary stays where it is: its move starts over later */
		se_routing_relocation_cancel(r, k);
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

void
se_routing_relocate(SeShardRouting *r, int k, const char *node, const char *target_id)
{
	SeShardCopy *c = &r->copies[k];

	Assert(c->state == SE_SHARD_STARTED);
	c->relocating_node = pstrdup(node);
	strlcpy(c->relocation_id, target_id, sizeof(c->relocation_id));
}

void
se_routing_relocation_cancel(SeShardRouting *r, int k)
{
	SeShardCopy *c = &r->copies[k];

	c->relocating_node = NULL;
	c->relocation_id[0] = '\0';
}

void
se_routing_relocation_done(SeShardRouting *r, int k)
{
	SeShardCopy *c = &r->copies[k];

	if (!se_routing_relocating(c))
		return;
	/* the source's id leaves the in-sync set, the target's joins it */
	se_routing_in_sync_remove(r, c->allocation_id);
	c->node = c->relocating_node;
	strlcpy(c->allocation_id, c->relocation_id, sizeof(c->allocation_id));
	c->data_node = pstrdup(c->node);
	c->relocating_node = NULL;
	c->relocation_id[0] = '\0';
	c->failed_attempts = 0;
	se_routing_in_sync_add(r, c->allocation_id);
}

int
se_routing_relocation_of(const SeShardRouting *r, const char *node, const char *target_id)
{
	int			k;

	for (k = 0; k < r->ncopies; k++)
		if (se_routing_relocating(&r->copies[k]) &&
			strcmp(r->copies[k].relocating_node, node) == 0 &&
			(target_id == NULL || strcmp(r->copies[k].relocation_id, target_id) == 0))
			return k;
	return -1;
}

bool
se_routing_target_on(const SeShardRouting *r, const char *node, SeShardCopy *out)
{
	int			k = se_routing_relocation_of(r, node, NULL);

	if (k < 0)
		return false;
	memset(out, 0, sizeof(*out));
	out->state = SE_SHARD_INITIALIZING;
	out->primary = false;
	out->node = r->copies[k].relocating_node;
	strlcpy(out->allocation_id, r->copies[k].relocation_id, sizeof(out->allocation_id));
	out->unassigned_reason = NULL;
	return true;
}

int
se_routing_relocations(const SeShardRouting *r)
{
	int			k,
				n = 0;

	for (k = 0; k < r->ncopies; k++)
		n += se_routing_relocating(&r->copies[k]) ? 1 : 0;
	return n;
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
