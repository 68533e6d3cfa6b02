/*-------------------------------------------------------------------------
 *
 * pit_registry.c
 *	  The node's open search contexts (see pit_registry.h).
 *
 * A point in time (and a scroll, which is one) is, on each node holding
 * some of its shards, one entry per shard: the segment and live-docs
 * generations the shard had when it was opened.  The entries live in
 * shared memory because any backend may serve a later page -- another
 * connection of the client, or the transport's serving backend for a
 * coordinator elsewhere -- and because the shard's owner, which deletes
 * segment files once merges and refreshes leave them, must keep the
 * files a context still names (engine.c's cleanup asks se_pit_shard_pins).
 * Readers open such files from disk (snapshot.c) though they are no
 * longer published.
 *
 * Expiry is lazy, as nothing needs to run at the instant a keep-alive
 * ends: an expired entry counts as free everywhere (lookups, the limit,
 * the owner's cleanup), and the next refresh or merge of its shard drops
 * the files it held.  The registry's LWLock is taken after a slot lock,
 * never before one.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "node/node.h"
#include "shard/pit_registry.h"

int			se_max_open_scroll_context = 500;

typedef struct PitEntry
{
	uint64		ctx;			/* 0: free */
	Oid			owner;			/* the role that opened it */
	TimestampTz expires;
	char		uuid[SE_UUID_LEN + 1];
	int			shard;
	int			nsegments;
	uint64		gens[SE_MAX_SEGMENTS];
	uint64		dels[SE_MAX_SEGMENTS];
} PitEntry;

typedef struct PitShared
{
	LWLock		lock;
	uint64		next_id;
	PitEntry	entries[SE_PIT_MAX_ENTRIES];
} PitShared;

static PitShared *Pit = NULL;

Size
se_pit_shmem_size(void)
{
	return MAXALIGN(sizeof(PitShared));
}

void
se_pit_shmem_init(void)
{
	bool		found;

	Pit = ShmemInitStruct("search_engine search contexts", se_pit_shmem_size(), &found);
	if (!found)
	{
		memset(Pit, 0, se_pit_shmem_size());
		LWLockInitialize(&Pit->lock, LWLockNewTrancheId());
	}
	LWLockRegisterTranche(Pit->lock.tranche, "search_engine_pit");
}

static bool
live(const PitEntry *e, TimestampTz now)
{
	return e->ctx != 0 && e->expires > now;
}

static TimestampTz
expiry(int64 keep_alive_ms)
{
	return TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
									   Min(keep_alive_ms, SE_PIT_MAX_KEEP_ALIVE_MS));
}

uint64
se_pit_new_id(bool scroll)
{
	uint64		id = 0;

	/* random, so that ids of every node and restart differ */
	if (!pg_strong_random(&id, sizeof(id)))
	{
		LWLockAcquire(&Pit->lock, LW_EXCLUSIVE);
		id = ((uint64) MyProcPid << 32) ^ (uint64) GetCurrentTimestamp() ^ ++Pit->next_id;
		LWLockRelease(&Pit->lock);
	}
	id = scroll ? (id | SE_PIT_SCROLL) : (id & ~SE_PIT_SCROLL);
	return id == 0 ? 2 : id;
}

bool
se_pit_register(uint64 ctx, const char *uuid, int shard, const uint64 *gens,
				const uint64 *dels, int n, int64 keep_alive_ms, Oid owner, SeError *err)
{
	TimestampTz now = GetCurrentTimestamp();
	int			open = 0;
	int			slot = -1;
	int			i;

	if (n < 0 || n > SE_MAX_SEGMENTS)
	{
		se_error_set(err, 500, "illegal_state_exception", "too many segments to pin");
		return false;
	}
	LWLockAcquire(&Pit->lock, LW_EXCLUSIVE);
	for (i = 0; i < SE_PIT_MAX_ENTRIES; i++)
	{
		if (live(&Pit->entries[i], now))
			open++;
		else if (slot < 0)
			slot = i;
	}
	if (open >= Min(se_max_open_scroll_context, SE_PIT_MAX_ENTRIES) || slot < 0)
	{
		LWLockRelease(&Pit->lock);
		se_error_set(err, 429, "es_rejected_execution_exception",
					 "Trying to create too many scroll contexts. Must be less than or equal to: [%d]. This limit can be set by changing the [search.max_open_scroll_context] setting.",
					 se_max_open_scroll_context);
		return false;
	}
	{
		PitEntry   *e = &Pit->entries[slot];

		e->ctx = ctx;
		e->owner = owner;
		e->expires = TimestampTzPlusMilliseconds(now, Min(keep_alive_ms, SE_PIT_MAX_KEEP_ALIVE_MS));
		strlcpy(e->uuid, uuid, sizeof(e->uuid));
		e->shard = shard;
		e->nsegments = n;
		memcpy(e->gens, gens, sizeof(uint64) * n);
		memcpy(e->dels, dels, sizeof(uint64) * n);
	}
	LWLockRelease(&Pit->lock);
	return true;
}

bool
se_pit_lookup(uint64 ctx, const char *uuid, int shard, int64 keep_alive_ms,
			  Oid role, uint64 *gens, uint64 *dels, int *n, SeError *err)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		super = superuser_arg(role);	/* no catalog lookup under the lock */
	int			i;

	LWLockAcquire(&Pit->lock, LW_EXCLUSIVE);
	for (i = 0; i < SE_PIT_MAX_ENTRIES; i++)
	{
		PitEntry   *e = &Pit->entries[i];

		if (!live(e, now) || e->ctx != ctx || e->shard != shard || strcmp(e->uuid, uuid) != 0)
			continue;
		/* ES binds a context to the user who opened it */
		if (e->owner != role && !super)
			break;
		if (keep_alive_ms >= 0)
			e->expires = expiry(keep_alive_ms);
		*n = e->nsegments;
		memcpy(gens, e->gens, sizeof(uint64) * e->nsegments);
		memcpy(dels, e->dels, sizeof(uint64) * e->nsegments);
		LWLockRelease(&Pit->lock);
		return true;
	}
	LWLockRelease(&Pit->lock);
	se_error_set(err, 404, "search_context_missing_exception",
				 "No search context found for id [" UINT64_FORMAT "]", ctx);
	return false;
}

/*
 * Free the role's (a superuser's: every) shard contexts of ctx, or with
 * ctx 0 those of every scroll; how many live ones were freed.
 */
static int
release_matching(uint64 ctx, Oid role)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		super = superuser_arg(role);
	int			freed = 0;
	int			i;

	LWLockAcquire(&Pit->lock, LW_EXCLUSIVE);
	for (i = 0; i < SE_PIT_MAX_ENTRIES; i++)
	{
		PitEntry   *e = &Pit->entries[i];

		if (e->ctx == 0 || (ctx != 0 ? e->ctx != ctx : (e->ctx & SE_PIT_SCROLL) == 0) ||
			(e->owner != role && !super))
			continue;
		if (live(e, now))
			freed++;
		e->ctx = 0;
	}
	LWLockRelease(&Pit->lock);
	return freed;
}

int
se_pit_release(uint64 ctx, Oid role)
{
	return ctx == 0 ? 0 : release_matching(ctx, role);
}

int
se_pit_release_scrolls(Oid role)
{
	return release_matching(0, role);
}

int
se_pit_count(const char *uuid, int shard, int *scrolls)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;
	int			i;

	*scrolls = 0;
	LWLockAcquire(&Pit->lock, LW_SHARED);
	for (i = 0; i < SE_PIT_MAX_ENTRIES; i++)
	{
		const PitEntry *e = &Pit->entries[i];

		if (!live(e, now) || e->shard != shard || strcmp(e->uuid, uuid) != 0)
			continue;
		n++;
		*scrolls += (e->ctx & SE_PIT_SCROLL) != 0;
	}
	LWLockRelease(&Pit->lock);
	return n;
}

int
se_pit_shard_pins(const char *uuid, int shard, uint64 *gens, uint64 *dels, int cap)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;
	int			i,
				j,
				k;

	LWLockAcquire(&Pit->lock, LW_SHARED);
	for (i = 0; i < SE_PIT_MAX_ENTRIES && n >= 0; i++)
	{
		const PitEntry *e = &Pit->entries[i];

		if (!live(e, now) || e->shard != shard || strcmp(e->uuid, uuid) != 0)
			continue;
		for (j = 0; j < e->nsegments && n >= 0; j++)
		{
			for (k = 0; k < n; k++)
				if (gens[k] == e->gens[j] && dels[k] == e->dels[j])
					break;
			if (k < n)
				continue;
			if (n == cap)
				n = -1;
			else
			{
				gens[n] = e->gens[j];
				dels[n] = e->dels[j];
				n++;
			}
		}
	}
	LWLockRelease(&Pit->lock);
	return n;
}

bool
se_pit_pinned(const char *uuid, int shard, uint64 gen, uint64 del_gen)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		found = false;
	int			i,
				j;

	LWLockAcquire(&Pit->lock, LW_SHARED);
	for (i = 0; i < SE_PIT_MAX_ENTRIES && !found; i++)
	{
		const PitEntry *e = &Pit->entries[i];

		if (!live(e, now) || e->shard != shard || strcmp(e->uuid, uuid) != 0)
			continue;
		for (j = 0; j < e->nsegments; j++)
			if (e->gens[j] == gen && e->dels[j] == del_gen)
				found = true;
	}
	LWLockRelease(&Pit->lock);
	return found;
}

int
se_pit_open_count(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;
	int			i;

	LWLockAcquire(&Pit->lock, LW_SHARED);
	for (i = 0; i < SE_PIT_MAX_ENTRIES; i++)
		if (live(&Pit->entries[i], now))
			n++;
	LWLockRelease(&Pit->lock);
	return n;
}
