/*-------------------------------------------------------------------------
 *
 * snapshot.c
 *	  Reader side of a shard (see snapshot.h).
 *
 * Segment files are immutable, so a backend keeps them mapped across
 * queries in a per-process cache keyed by (index uuid, shard, segment gen).
 * Published segments were written by the owner from memory or verified by
 * it (full CRC32C) at recovery, so a backend checks only their structure
 * (header, footer, table of contents; every read is bounds-checked) --
 * a full checksum per backend would read the whole index on every new
 * connection.  se_snapshot_verify re-reads everything on demand and fails
 * the shard on a mismatch, as a scrub.
 * Entries whose segment left the shard's published list are unmapped when
 * the next snapshot of that shard is taken.  Files are opened while the
 * slot lock is held shared, and the owner deletes files only while holding
 * it exclusively, so a listed file always exists when we open it.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "index/segment.h"
#include "node/node.h"
#include "shard/engine.h"
#include "shard/pit_registry.h"
#include "shard/snapshot.h"
#include "util/fileio.h"

typedef struct SegCacheKey
{
	char		uuid[SE_UUID_LEN + 1];
	int			shard;
	uint64		gen;
} SegCacheKey;

typedef struct SegCacheEntry
{
	SegCacheKey key;
	MemoryContext cxt;
	SeMappedFile mf;
	SeSegmentReader *reader;
	uint64		del_gen;		/* of live below */
	uint64	   *live;
	uint64		seen_snapshot;	/* last snapshot_gen that listed it */
	int			pins;			/* held by a long-lived snapshot: not evicted */
	/* nested docs (search/nested.c): NULL when the segment has none */
	bool		nested_known;
	const uint64 *nested;		/* the reader's cache */
	uint64	   *top_live;		/* live without the nested docs */
	const uint64 *top_live_of;	/* the live it was computed from */
} SegCacheEntry;

static HTAB *seg_cache = NULL;

static void
cache_init(void)
{
	HASHCTL		ctl;

	if (seg_cache)
		return;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(SegCacheKey);
	ctl.entrysize = sizeof(SegCacheEntry);
	ctl.hcxt = TopMemoryContext;
	seg_cache = hash_create("search_engine segment cache", 256, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * A segment with nested docs: top-level readers get live docs without them
 * (computed once per live docs generation), the nested scorer the true ones.
 */
static void
nested_view(SegCacheEntry *e, SeSearchShard *out, int i, int n)
{
	MemoryContext old;

	if (!e->nested_known)
	{
		old = MemoryContextSwitchTo(e->cxt);
		e->nested = se_nested_docs_bits(e->reader);
		MemoryContextSwitchTo(old);
		e->nested_known = true;
	}
	out->all_live_docs[i] = e->live;
	if (e->nested == NULL)
		return;
	if (e->top_live == NULL || e->top_live_of != e->live)
	{
		old = MemoryContextSwitchTo(e->cxt);
		if (e->top_live)
			pfree(e->top_live);
		e->top_live = se_nested_top_live(e->live, e->nested,
										 se_segment_max_doc(e->reader));
		e->top_live_of = e->live;
		MemoryContextSwitchTo(old);
	}
	out->live_docs[i] = e->top_live;
}

static void
evict(SegCacheEntry *e)
{
	se_file_unmap(&e->mf);
	if (e->cxt)
		MemoryContextDelete(e->cxt);
	hash_search(seg_cache, &e->key, HASH_REMOVE, NULL);
}

/*
 * Can the slot's published segments be read in state st?  When started,
 * and when failed on a full disk or being recovered after that: its list
 * stays valid until the recovery publishes a new one (engine.c numbers
 * the recovery's files past the old ones).
 */
static bool
readable(const SeShardSlot *s, SeSlotState st)
{
	return st == SE_SLOT_STARTED ||
		((st == SE_SLOT_FAILED || st == SE_SLOT_OPENING) && s->failure_disk_full);
}

int
se_snapshot_slot(const SeIndexMeta *im, int shard, SeError *err)
{
	int			slot = se_slot_find(im->uuid, shard);
	SeSlotState st;

	if (slot < 0)
	{
		se_state_shard_unavailable(im->uuid, im->name, shard,
								   se_state_shard_local(im, shard)
								   ? "shard is not allocated on this node"
								   : psprintf("shard is on node [%s]: reading shards of other "
											  "nodes is not built yet",
											  im->shard_nodes[shard][0]
											  ? im->shard_nodes[shard] : "(unassigned)"),
								   err);
		return -1;
	}
	st = (SeSlotState) SeSlots[slot].state;
	if (readable(&SeSlots[slot], st))
		return slot;
	if (st == SE_SLOT_OPENING)
		st = se_slot_wait_while(slot, SE_SLOT_OPENING, 30000);
	if (readable(&SeSlots[slot], st))
		return slot;
	if (st == SE_SLOT_FAILED)
	{
		se_error_set(err, 500, SeSlots[slot].failure_corrupted ? "index_corrupted_exception" : "shard_failed_exception",
					 "[%s][%d] shard failed: %s", im->name, shard, SeSlots[slot].failure);
		return -1;
	}
	if (st != SE_SLOT_STARTED)
	{
		se_state_shard_unavailable(im->uuid, im->name, shard, "shard is not started", err);
		return -1;
	}
	return slot;
}

static void
raise_or_set(SeError *dst, const SeError *src)
{
	if (dst)
	{
		se_error_set(dst, src->status, src->type, "%s", src->reason);
		return;
	}
	ereport(ERROR,
			(errcode(se_error_sqlstate(src->type)),
			 errmsg("%s", src->reason),
			 errdetail("%s", src->type)));
}

/* Is (ref's segment, live docs generation) in the published list? */
static bool
ref_listed(const SeSegRef *cur, int ncur, const SeSegRef *ref)
{
	int			i;

	for (i = 0; i < ncur; i++)
		if (cur[i].seg_gen == ref->seg_gen && cur[i].del_gen == ref->del_gen)
			return true;
	return false;
}

/*
 * Open the current snapshot of (im, shard), or with at_gens the point in
 * time (at_gens, at_dels)[0..at_n) another process took: each of its
 * segments must still be published with the same live docs, or be in our
 * cache with them; else it is gone (its files may be deleted) and we fail
 * with "snapshot_gone".
 */
/* A point in time to register for the snapshot taken (see pit_registry.h) */
typedef struct PitPin
{
	uint64		ctx;
	int64		keep_alive_ms;
	Oid			owner;			/* the role the context is bound to */
} PitPin;

static bool
acquire(const SeIndexMeta *im, int shard, const uint64 *at_gens,
		const uint64 *at_dels, int at_n, const PitPin *pin, SeSearchShard *out,
		SeError *err)
{
	SeError		lerr;
	int			slot;
	SeShardSlot *s;
	SeSegRef	refs[SE_MAX_SEGMENTS];
	SeSegRef	cur[SE_MAX_SEGMENTS];
	int			ncur;
	int			n;
	uint64	   *gens;
	uint64	   *dels;
	uint64		snap;
	int			i;
	char	   *dir;
	HASH_SEQ_STATUS seq;
	SegCacheEntry *e;

	se_error_init(&lerr);
	cache_init();
	slot = se_snapshot_slot(im, shard, &lerr);
	if (slot < 0)
	{
		raise_or_set(err, &lerr);
		return false;
	}
	s = &SeSlots[slot];
	dir = psprintf("%s/index", se_shard_path(im->uuid, shard));
	out->index = im->name;
	out->shard = shard;
	out->mapping = im->mapping;
	out->node = NULL;			/* here */
	out->failure = NULL;

	out->index_uuid = im->uuid;
	out->max_terms_count = im->settings.max_terms_count;
	out->max_regex_length = im->settings.max_regex_length;
	out->max_analyzed_offset = im->settings.highlight_max_analyzed_offset;
	if (at_gens != NULL && (at_n < 0 || at_n > SE_MAX_SEGMENTS))
	{
		se_error_set(&lerr, 500, "snapshot_gone", "[%s][%d] bad point in time", im->name, shard);
		raise_or_set(err, &lerr);
		return false;
	}

	LWLockAcquire(&s->lock, LW_SHARED);

	/*
	 * The slot may have been closed (and even given to another shard) since
	 * it was found; its owner unpublishes under this lock before any file
	 * of a closed shard goes, so the check here is the one that counts.
	 */
	if (!readable(s, (SeSlotState) s->state) || s->shard != shard ||
		strcmp(s->index_uuid, im->uuid) != 0)
	{
		LWLockRelease(&s->lock);
		se_state_shard_unavailable(im->uuid, im->name, shard, "shard is not started", &lerr);
		raise_or_set(err, &lerr);
		return false;
	}
	ncur = s->nsegments;
	memcpy(cur, s->segs, sizeof(SeSegRef) * ncur);
	snap = s->snapshot_gen;
	if (at_gens == NULL)
	{
		n = ncur;
		memcpy(refs, cur, sizeof(SeSegRef) * n);
	}
	else
	{
		n = at_n;
		for (i = 0; i < n; i++)
		{
			memset(&refs[i], 0, sizeof(SeSegRef));
			refs[i].seg_gen = at_gens[i];
			refs[i].del_gen = at_dels[i];
		}
	}
	out->nsegments = n;
	out->segments = palloc0(sizeof(SeSegmentReader *) * Max(n, 1));
	out->live_docs = palloc0(sizeof(uint64 *) * Max(n, 1));
	out->all_live_docs = palloc0(sizeof(uint64 *) * Max(n, 1));
	gens = palloc(sizeof(uint64) * Max(n, 1));
	dels = palloc(sizeof(uint64) * Max(n, 1));
	out->seg_gens = gens;
	out->del_gens = dels;
	for (i = 0; i < n; i++)
	{
		SegCacheKey key;
		bool		found;

		memset(&key, 0, sizeof(key));
		strlcpy(key.uuid, im->uuid, sizeof(key.uuid));
		key.shard = shard;
		key.gen = refs[i].seg_gen;
		if (at_gens != NULL && !ref_listed(cur, ncur, &refs[i]))
		{
			/* not published any more: only our mapped copy can serve it */
			e = hash_search(seg_cache, &key, HASH_FIND, NULL);
			/* ... or its files, which the owner keeps for a point in time */
			if ((e == NULL || e->del_gen != refs[i].del_gen) &&
				!se_pit_pinned(im->uuid, shard, refs[i].seg_gen, refs[i].del_gen))
			{
				se_error_set(&lerr, 409, "snapshot_gone",
							 "[%s][%d] segment " UINT64_FORMAT " left the shard", im->name, shard, key.gen);
				break;
			}
		}
		gens[i] = refs[i].seg_gen;
		dels[i] = refs[i].del_gen;
		e = hash_search(seg_cache, &key, HASH_ENTER, &found);
		if (!found)
		{
			char	   *path = psprintf("%s/_" UINT64_FORMAT ".seg", dir, key.gen);
			MemoryContext old;

			e->cxt = NULL;
			e->reader = NULL;
			e->live = NULL;
			e->del_gen = 0;
			e->nested_known = false;
			e->nested = NULL;
			e->top_live = NULL;
			e->top_live_of = NULL;
			memset(&e->mf, 0, sizeof(e->mf));
			if (!se_file_map(path, &e->mf))
			{
				hash_search(seg_cache, &key, HASH_REMOVE, NULL);
				se_error_set(&lerr, 500, "index_corrupted_exception",
							 "[%s][%d] could not open segment file \"%s\"", im->name, shard, path);
				break;
			}
			e->cxt = AllocSetContextCreate(TopMemoryContext, "search_engine segment reader",
										   ALLOCSET_SMALL_SIZES);
			old = MemoryContextSwitchTo(e->cxt);
			e->reader = se_segment_open(e->mf.data, e->mf.len, false, &lerr);
			MemoryContextSwitchTo(old);
			if (e->reader == NULL)
			{
				char	   *why = pstrdup(lerr.reason ? lerr.reason : "");

				evict(e);
				se_error_init(&lerr);
				se_error_set(&lerr, 500, "index_corrupted_exception",
							 "[%s][%d] segment \"%s\" is corrupted: %s", im->name, shard, path, why);
				break;
			}
		}
		if (e->del_gen != refs[i].del_gen)
		{
			MemoryContext old = MemoryContextSwitchTo(e->cxt);

			e->live = NULL;
			e->del_gen = 0;
			if (refs[i].del_gen > 0)
			{
				char	   *lp = psprintf("%s/_" UINT64_FORMAT "_" UINT64_FORMAT ".liv", dir,
										  key.gen, refs[i].del_gen);
				size_t		len;
				char	   *data = se_file_read_all(lp, &len, true);
				uint8		id[SE_SEGMENT_ID_LEN];

				se_segment_get_id(e->reader, id);
				if (data)
					e->live = se_livedocs_parse((const uint8 *) data, len,
												se_segment_max_doc(e->reader), id, &lerr);
				if (e->live == NULL)
				{
					MemoryContextSwitchTo(old);
					if (!se_error_is_set(&lerr))
						se_error_set(&lerr, 500, "index_corrupted_exception",
									 "[%s][%d] live docs file \"%s\" is missing", im->name, shard, lp);
					break;
				}
				e->del_gen = refs[i].del_gen;
			}
			MemoryContextSwitchTo(old);
		}
		e->seen_snapshot = snap;
		out->segments[i] = e->reader;
		out->live_docs[i] = e->live;
		nested_view(e, out, i, n);
	}
	/* registered before the lock goes: no file of it can be deleted first */
	if (pin != NULL && !se_error_is_set(&lerr))
		(void) se_pit_register(pin->ctx, im->uuid, shard, gens, dels, n,
							   pin->keep_alive_ms, pin->owner, &lerr);
	LWLockRelease(&s->lock);

	if (se_error_is_set(&lerr))
	{
		raise_or_set(err, &lerr);
		return false;
	}

	/* unmap segments of this shard that are neither published nor in use */
	hash_seq_init(&seq, seg_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->key.shard == shard && strcmp(e->key.uuid, im->uuid) == 0 &&
			e->seen_snapshot != snap)
		{
			bool		listed = false;

			for (i = 0; i < n; i++)
				if (out->segments[i] == e->reader)
					listed = true;
			for (i = 0; i < ncur; i++)
				if (cur[i].seg_gen == e->key.gen)
					listed = true;
			if (!listed && e->pins == 0)
				evict(e);
		}
	}
	return true;
}

bool
se_snapshot_acquire(const SeIndexMeta *im, int shard, SeSearchShard *out, SeError *err)
{
	return acquire(im, shard, NULL, NULL, 0, NULL, out, err);
}

bool
se_snapshot_acquire_pit(const SeIndexMeta *im, int shard, uint64 ctx, int64 keep_alive_ms,
						Oid owner, SeSearchShard *out, SeError *err)
{
	PitPin		pin;

	pin.ctx = ctx;
	pin.keep_alive_ms = keep_alive_ms;
	pin.owner = owner;
	return acquire(im, shard, NULL, NULL, 0, &pin, out, err);
}

bool
se_snapshot_acquire_at(const SeIndexMeta *im, int shard, const uint64 *seg_gens,
					   const uint64 *del_gens, int nsegments, SeSearchShard *out,
					   SeError *err)
{
	return acquire(im, shard, seg_gens, del_gens, nsegments, NULL, out, err);
}

/*
 * Pin (or unpin) the segments of a snapshot in this process's cache, so a
 * later acquire of the same shard does not unmap them while the snapshot
 * is still in use (update-by-query slices reuse one snapshot per shard).
 */
void
se_snapshot_pin(SeSearchShard *snap, bool pin)
{
	HASH_SEQ_STATUS seq;
	SegCacheEntry *e;
	int			i;

	if (seg_cache == NULL)
		return;
	hash_seq_init(&seq, seg_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		for (i = 0; i < snap->nsegments; i++)
			if (snap->segments[i] == e->reader)
				e->pins += pin ? 1 : (e->pins > 0 ? -1 : 0);
	}
}

void
se_snapshot_refresh_if_needed(const SeIndexMeta *im, int shard)
{
	SeError		err;
	int			slot;

	se_error_init(&err);
	slot = se_snapshot_slot(im, shard, &err);
	if (slot < 0)
		raise_or_set(NULL, &err);
	if (pg_atomic_read_u64(&SeSlots[slot].write_gen) !=
		pg_atomic_read_u64(&SeSlots[slot].refreshed_gen))
		(void) se_queue_control(slot, SE_REQ_REFRESH, 0);
}

/*
 * Full CRC32C check of every published file of (im, shard), bypassing the
 * cache.  On a mismatch the shard is marked failed (index_corrupted) so no
 * later read can return a wrong answer, and the error is raised.
 */
void
se_snapshot_verify(const SeIndexMeta *im, int shard)
{
	SeError		err;
	int			slot;
	SeShardSlot *s;
	SeSegRef	refs[SE_MAX_SEGMENTS];
	int			n,
				i;
	char	   *dir;

	se_error_init(&err);
	slot = se_snapshot_slot(im, shard, &err);
	if (slot < 0)
		raise_or_set(NULL, &err);
	s = &SeSlots[slot];
	dir = psprintf("%s/index", se_shard_path(im->uuid, shard));
	LWLockAcquire(&s->lock, LW_SHARED);
	n = s->nsegments;
	memcpy(refs, s->segs, sizeof(SeSegRef) * n);
	for (i = 0; i < n && !se_error_is_set(&err); i++)
	{
		char	   *path = psprintf("%s/_" UINT64_FORMAT ".seg", dir, refs[i].seg_gen);
		SeMappedFile mf;
		SeSegmentReader *r;

		if (!se_file_map(path, &mf))
		{
			se_error_set(&err, 500, "index_corrupted_exception",
						 "[%s][%d] could not open segment file \"%s\"", im->name, shard, path);
			break;
		}
		r = se_segment_open(mf.data, mf.len, true, &err);
		if (r != NULL && refs[i].del_gen > 0)
		{
			char	   *lp = psprintf("%s/_" UINT64_FORMAT "_" UINT64_FORMAT ".liv", dir,
									  refs[i].seg_gen, refs[i].del_gen);
			size_t		len;
			char	   *data = se_file_read_all(lp, &len, true);
			uint8		id[SE_SEGMENT_ID_LEN];

			se_segment_get_id(r, id);
			if (data == NULL || se_livedocs_parse((const uint8 *) data, len,
												  se_segment_max_doc(r), id, &err) == NULL)
				se_error_set(&err, 500, "index_corrupted_exception",
							 "[%s][%d] live docs file \"%s\" is missing or corrupted", im->name, shard, lp);
		}
		se_file_unmap(&mf);
		if (se_error_is_set(&err))
		{
			char	   *why = pstrdup(err.reason ? err.reason : "");

			se_error_init(&err);
			se_error_set(&err, 500, "index_corrupted_exception",
						 "[%s][%d] segment \"%s\" is corrupted: %s", im->name, shard, path, why);
		}
	}
	LWLockRelease(&s->lock);
	if (se_error_is_set(&err))
	{
		s->failure_corrupted = true;
		(void) se_slot_advance(slot, SE_SLOT_FAILED, err.reason);
		raise_or_set(NULL, &err);
	}
}
