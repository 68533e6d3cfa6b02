/*-------------------------------------------------------------------------
 *
 * pit_registry.h
 *	  The node's open search contexts (point in time, scroll): the shard
 *	  snapshots they pinned, in shared memory, with keep-alive and a
 *	  node-wide limit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_PIT_REGISTRY_H
#define SE_PIT_REGISTRY_H

#include "util/se_common.h"

/* Room for the node's pinned shard contexts; the setting limits below it. */
#define SE_PIT_MAX_ENTRIES		1024
/*
 * The longest keep-alive the registry holds a context for; the cluster
 * setting search.max_keep_alive (24h by default) bounds requests below it.
 */
#define SE_PIT_MAX_KEEP_ALIVE_MS	(3650 * 24 * 3600 * 1000L)

/* ES's search.max_open_scroll_context: open shard contexts on this node */
extern int	se_max_open_scroll_context;

extern Size se_pit_shmem_size(void);
extern void se_pit_shmem_init(void);

/*
 * Pin shard (uuid, shard)'s segments gens/dels (n of them) for context ctx
 * until keep_alive_ms from now; the caller holds the shard slot's lock so
 * that no file of them can go meanwhile.  false with err set (ES's 429
 * when the node holds se_max_open_scroll_context contexts already).
 */
extern bool se_pit_register(uint64 ctx, const char *uuid, int shard,
							const uint64 *gens, const uint64 *dels, int n,
							int64 keep_alive_ms, Oid owner, SeError *err);

/*
 * The segments ctx pinned of (uuid, shard) into gens/dels (room for
 * SE_MAX_SEGMENTS), extending its keep-alive when keep_alive_ms >= 0.
 * false with err set (404 search_context_missing_exception) when the
 * context is unknown or expired, or role is not the one that opened it (nor
 * a superuser).  role is the requesting role: on a node serving a peer, the
 * one the peer named, not the peer's own connection role.
 */
extern bool se_pit_lookup(uint64 ctx, const char *uuid, int shard, int64 keep_alive_ms,
						  Oid role, uint64 *gens, uint64 *dels, int *n, SeError *err);

/* Free role's (a superuser's: every) shard contexts of ctx here; how many. */
extern int	se_pit_release(uint64 ctx, Oid role);
/* Free every scroll's shard contexts here (role's; a superuser's: all). */
extern int	se_pit_release_scrolls(Oid role);

/*
 * Live contexts of (uuid, shard) here (ES's search.open_contexts of the
 * copy); *scrolls: how many of them are scrolls'.
 */
extern int	se_pit_count(const char *uuid, int shard, int *scrolls);

/* Room a caller of se_pit_shard_pins gives (distinct pairs of one shard) */
#define SE_PIT_MAX_PINS			16384

/*
 * The distinct (segment, live docs) generations live contexts pin in
 * (uuid, shard): into gens/dels (room for cap), their number; -1 when
 * there are more than cap (then keep every file).  The shard's owner keeps
 * those files; a reader may open them though they left the shard.
 */
extern int	se_pit_shard_pins(const char *uuid, int shard, uint64 *gens, uint64 *dels,
							  int cap);
extern bool se_pit_pinned(const char *uuid, int shard, uint64 gen, uint64 del_gen);

/* Open (live) shard contexts on this node. */
extern int	se_pit_open_count(void);

/*
 * A new context id: unique on every node with high probability; a
 * scroll's is odd (SE_PIT_SCROLL), a point in time's even, so that
 * DELETE _search/scroll/_all frees scrolls only.
 */
#define SE_PIT_SCROLL	UINT64CONST(1)
extern uint64 se_pit_new_id(bool scroll);

#endif
