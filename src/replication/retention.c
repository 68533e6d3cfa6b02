/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  A primary's retention leases (lease.h) in its slot: renewed from the
 *	  copies' local checkpoints, expired, persisted, and turned into the
 *	  slot's retain_seq_no, which the engine's flush honours (it keeps
 *	  every translog generation that may hold an operation at or above
 *	  it).  That retained history is what lets peer recovery replay
 *	  operations instead of copying files (recovery_source.c).
 *
 * The set lives in the slot under repl_mutex (only memory work under the
 * spinlock); the shard-state worker's periodic pass (se_replication_
 * maintain, every second or so) renews, expires, publishes retain_seq_no
 * and writes <shard>/retention_leases when the set or a retaining seq_no
 * changed (ES persists leases in a state file of the shard too), so a
 * restarted primary still retains for a copy that was away.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/time.h>

#include "storage/spin.h"

#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "node/node.h"
#include "replication/lease.h"
#include "replication/recovery.h"
#include "replication/replication.h"
#include "shard/engine.h"
#include "util/fileio.h"

#define LEASE_FILE	"retention_leases"
#define LEASE_SAVE_EVERY_MS	10000

static int64
now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static char *
lease_path(const SeShardSlot *s)
{
	return psprintf("%s/" LEASE_FILE, se_shard_path(s->index_uuid, s->shard));
}

/* Read the shard's lease file into the slot once after it was allocated. */
static void
load_leases(SeShardSlot *s)
{
	char	   *path = lease_path(s);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeLeaseSet	file;
	int			i;

	memset(&file, 0, sizeof(file));
	if (data && !se_lease_decode(data, len, &file))
	{
		ereport(WARNING,
				(errmsg("search_engine: ignoring the unreadable retention lease file \"%s\"", path)));
		file.n = 0;
	}
	SpinLockAcquire(&s->repl_mutex);
	for (i = 0; i < file.n; i++)
	{
		const SeRetentionLease *l = &file.leases[i];

		(void) se_lease_renew(&s->leases, l->id, l->retaining_seq_no, l->timestamp_ms);
	}
	s->leases_loaded = true;
	SpinLockRelease(&s->repl_mutex);
}

void
se_retention_renew(int slot, const char *node, int64 retaining_seq_no)
{
	SeShardSlot *s = &SeSlots[slot];
	char		id[SE_LEASE_ID_LEN];
	SeRetentionLease *l;
	int64		retain;

	se_lease_id(node, id, sizeof(id));
	SpinLockAcquire(&s->repl_mutex);
	/*
	 * A new recovery of that node's copy starts from retaining_seq_no: its
	 * lease must not retain less (ES adds or renews the lease before the
	 * recovery reads history), so it may go down here, unlike a renewal.
	 */
	l = (SeRetentionLease *) se_lease_find(&s->leases, id);
	if (l && l->retaining_seq_no > retaining_seq_no)
		l->retaining_seq_no = retaining_seq_no;
	(void) se_lease_renew(&s->leases, id, retaining_seq_no, now_ms());
	s->leases_dirty = true;
	retain = se_lease_min(&s->leases);
	SpinLockRelease(&s->repl_mutex);
	/* at once, so a flush before the next pass keeps that history */
	se_slot_write_i64(&s->retain_seq_no, retain);
}

void
se_retention_advance(int slot, const char *node, int64 retaining_seq_no)
{
	SeShardSlot *s = &SeSlots[slot];
	char		id[SE_LEASE_ID_LEN];

	se_lease_id(node, id, sizeof(id));
	SpinLockAcquire(&s->repl_mutex);
	if (se_lease_find(&s->leases, id) != NULL)
		s->leases_dirty |= se_lease_renew(&s->leases, id, retaining_seq_no, now_ms());
	SpinLockRelease(&s->repl_mutex);
}

int64
se_retention_lease_of(int slot, const char *node)
{
	SeShardSlot *s = &SeSlots[slot];
	char		id[SE_LEASE_ID_LEN];
	const SeRetentionLease *l;
	int64		v = -1;

	se_lease_id(node, id, sizeof(id));
	SpinLockAcquire(&s->repl_mutex);
	l = se_lease_find(&s->leases, id);
	if (l)
		v = l->retaining_seq_no;
	SpinLockRelease(&s->repl_mutex);
	return v;
}

void
se_retention_leases(int slot, SeLeaseSet *out)
{
	SeShardSlot *s = &SeSlots[slot];

	SpinLockAcquire(&s->repl_mutex);
	*out = s->leases;
	SpinLockRelease(&s->repl_mutex);
}

void
se_retention_maintain(int slot, const SeIndexMeta *im)
{
	SeShardSlot *s = &SeSlots[slot];
	const SeShardRouting *rt;
	const char *keep[SE_MAX_LEASES + 1];
	char		ids[SE_MAX_LEASES + 1][SE_LEASE_ID_LEN];
	int64		cps[SE_MAX_LEASES + 1];
	int			nkeep = 0;
	bool		may_return = false;
	bool		changed;
	bool		moved = false;
	int			nbefore;
	int64		now = now_ms();
	int64		lcp = se_slot_read_i64(&s->local_checkpoint);
	int64		gcp = se_slot_read_i64(&s->global_checkpoint);
	int64		retain;
	SeLeaseSet	copy;
	int			k;

	if (im == NULL || im->routing == NULL || s->shard >= im->settings.number_of_shards)
		return;
	if (!s->leases_loaded)
		load_leases(s);
	rt = &im->routing[s->shard];
	/* the copies that are assigned: renewed (ES: the primary's own too) */
	for (k = 0; k < rt->ncopies && nkeep <= SE_MAX_LEASES; k++)
	{
		const SeShardCopy *c = &rt->copies[k];

		if (c->state == SE_SHARD_UNASSIGNED || c->node == NULL || c->node[0] == '\0')
		{
			may_return = may_return || !c->primary;
			continue;
		}
		se_lease_id(c->node, ids[nkeep], sizeof(ids[nkeep]));
		keep[nkeep] = ids[nkeep];
		cps[nkeep] = c->primary ? lcp : se_replication_target_checkpoint(slot, c->allocation_id);
		nkeep++;
	}
	SpinLockAcquire(&s->repl_mutex);
	/*
	 * ES retains from a copy's global checkpoint + 1: a returning copy
	 * replays its own translog up to the global checkpoint it persisted
	 * (the last one it was sent) and needs what is above.
	 */
	for (k = 0; k < nkeep; k++)
		if (cps[k] >= 0)
			cps[k] = Min(cps[k], s->gcp_sent >= 0 ? s->gcp_sent : gcp);
	changed = s->leases_dirty;
	s->leases_dirty = false;
	nbefore = s->leases.n;
	for (k = 0; k < nkeep; k++)
	{
		const SeRetentionLease *l = se_lease_find(&s->leases, keep[k]);

		if (cps[k] >= 0)
			moved |= se_lease_renew(&s->leases, keep[k], cps[k] + 1, now);
		else if (l)
			(void) se_lease_renew(&s->leases, keep[k], l->retaining_seq_no, now);
	}
	/*
	 * A lease added or gone is persisted at once; retaining seq_nos that
	 * only moved up (every write moves them) at most every
	 * LEASE_SAVE_EVERY_MS -- a file a little behind retains more, which is
	 * safe.
	 */
	s->leases_unsaved |= moved;
	changed |= s->leases.n != nbefore;
	changed |= se_lease_expire(&s->leases, keep, nkeep, may_return, now, im->settings.lease_period_ms) > 0;
	changed |= s->leases_unsaved && now - s->leases_saved_ms >= LEASE_SAVE_EVERY_MS;
	if (changed)
	{
		s->leases_saved_ms = now;
		s->leases_unsaved = false;
	}
	copy = s->leases;
	SpinLockRelease(&s->repl_mutex);
	retain = se_lease_min(&copy);
	se_slot_write_i64(&s->retain_seq_no, retain);
	if (changed)
	{
		StringInfoData b;

		initStringInfo(&b);
		se_lease_encode(&copy, &b);
		se_file_write_durable(lease_path(s), b.data, b.len);
		pfree(b.data);
	}
}
