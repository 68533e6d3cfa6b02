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
 * The set also goes to the shard's other copies (ES RetentionLeaseSync-
 * Action and its background sync): whenever it was persisted, and at least
 * every LEASE_SYNC_EVERY_MS, the primary sends it to the nodes holding a
 * copy or a relocation target (transport action lease_sync); a replica
 * keeps the newest (primary term, version) it got in its slot and in its
 * own lease file, and retains history from its minimum too.  A copy
 * promoted to primary, or a relocation target handed the primary, thus
 * starts with the leases of the copies that were away, and their return
 * can still be operations-based.
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
#include "transport/transport.h"
#include "util/fileio.h"
#include "util/varint.h"

#define LEASE_FILE	"retention_leases"
#define LEASE_SAVE_EVERY_MS	10000
/* ES index.soft_deletes.retention_lease.sync_interval's default */
#define LEASE_SYNC_EVERY_MS	30000
#define LEASE_SYNC_TIMEOUT_MS	5000

static void save_leases(const SeShardSlot *s, const SeLeaseSet *set);
static void sync_leases(const SeShardSlot *s, const SeShardRouting *rt, const SeLeaseSet *set);

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
	/* the set goes on from the file's version: copies keep the newest */
	s->leases.version = Max(s->leases.version, file.version);
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
	bool		sync;
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
	/* a promoted copy's set is now this term's */
	if (s->primary_term > s->leases.primary_term)
	{
		s->leases.primary_term = s->primary_term;
		s->leases.version++;
		changed = true;
	}
	sync = changed || now - s->leases_synced_ms >= LEASE_SYNC_EVERY_MS;
	if (sync)
		s->leases_synced_ms = now;
	copy = s->leases;
	SpinLockRelease(&s->repl_mutex);
	retain = se_lease_min(&copy);
	se_slot_write_i64(&s->retain_seq_no, retain);
	if (changed)
		save_leases(s, &copy);
	if (sync)
		sync_leases(s, rt, &copy);
}

/* Write set as the shard's lease file. */
static void
save_leases(const SeShardSlot *s, const SeLeaseSet *set)
{
	StringInfoData b;

	initStringInfo(&b);
	se_lease_encode(set, &b);
	se_file_write_durable(lease_path(s), b.data, b.len);
	pfree(b.data);
}

/*
 * Send the primary's set to the nodes of the shard's other copies and
 * relocation targets, all at once.  A copy that does not take it (down,
 * not allocated there yet) gets it on the next sync; it is only logged.
 */
static void
sync_leases(const SeShardSlot *s, const SeShardRouting *rt, const SeLeaseSet *set)
{
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * (2 * rt->ncopies + 1));
	StringInfoData payload;
	const char *me = se_cluster_node_name();
	int			n = 0;
	int			k,
				i;

	initStringInfo(&payload);
	se_put_str(&payload, s->index_uuid, strlen(s->index_uuid));
	se_put_vint(&payload, (uint64) s->shard);
	se_lease_encode(set, &payload);
	for (k = 0; k < rt->ncopies; k++)
	{
		const SeShardCopy *c = &rt->copies[k];
		const char *nodes[2];

		nodes[0] = c->state != SE_SHARD_UNASSIGNED ? c->node : NULL;
		nodes[1] = se_routing_relocating(c) ? c->relocating_node : NULL;
		for (i = 0; i < 2; i++)
		{
			char	   *conninfo;

			if (nodes[i] == NULL || nodes[i][0] == '\0' || strcmp(nodes[i], me) == 0)
				continue;
			conninfo = se_cluster_conninfo(nodes[i]);
			if (conninfo == NULL)
				continue;
			calls[n].node = nodes[i];
			calls[n].conninfo = conninfo;
			calls[n].action = "lease_sync";
			calls[n].payload = payload.data;
			calls[n].payload_len = payload.len;
			n++;
		}
	}
	if (n > 0)
		se_transport_call_each(calls, n, LEASE_SYNC_TIMEOUT_MS);
	for (i = 0; i < n; i++)
	{
		if (!calls[i].ok)
			ereport(DEBUG1,
					(errmsg("search_engine: retention leases of [%s][%d] not synced to %s: %s",
							s->index_uuid, s->shard, calls[i].node, calls[i].err.reason)));
		if (calls[i].reply.data)
			pfree(calls[i].reply.data);
	}
	pfree(payload.data);
	pfree(calls);
}

/*
 * Transport action "lease_sync": a primary's retention leases for this
 * node's replica of the shard.  Kept when newer than what the copy has
 * (so a late sync of an older primary changes nothing), persisted, and
 * the copy retains history from their minimum, as the primary does.
 */
static bool
lease_sync_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *uuid;
	int			shard;
	int			slot;
	SeShardSlot *s;
	SeLeaseSet	set;
	bool		newer;

	se_wire_init(&r, payload, len);
	uuid = se_wire_str(&r, NULL);
	shard = (int) se_wire_vint(&r);
	if (r.bad || uuid == NULL ||
		!se_lease_decode((const char *) r.p, r.end - r.p, &set))
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed lease_sync request");
		return false;
	}
	slot = se_slot_find(uuid, shard);
	/* only an open copy: one closing or failing may have no directory left */
	if (slot < 0 || SeSlots[slot].state != SE_SLOT_STARTED)
	{
		se_error_set(err, 404, "shard_not_found_exception", "no such shard [%s][%d]", uuid, shard);
		return false;
	}
	s = &SeSlots[slot];
	SpinLockAcquire(&s->repl_mutex);
	if (!s->replica || set.primary_term < s->primary_term)
	{
		int64		term = s->primary_term;
		bool		replica = s->replica;

		SpinLockRelease(&s->repl_mutex);
		/* a primary keeps its own set; an older primary's is stale */
		se_error_set(err, 409, "illegal_state_exception",
					 replica ? "retention leases of primary term [" INT64_FORMAT
					 "] are older than this copy's term [" INT64_FORMAT "]"
					 : "this copy is the primary (term [" INT64_FORMAT "]); its leases are its own",
					 replica ? set.primary_term : term, term);
		return false;
	}
	newer = !s->leases_loaded || se_lease_set_newer(&set, &s->leases);
	if (newer)
	{
		s->leases = set;
		s->leases_loaded = true;
	}
	SpinLockRelease(&s->repl_mutex);
	if (newer)
	{
		se_slot_write_i64(&s->retain_seq_no, se_lease_min(&set));
		save_leases(s, &set);
	}
	return true;
}

void
se_retention_register_actions(void)
{
	se_transport_register("lease_sync", lease_sync_action);
}
