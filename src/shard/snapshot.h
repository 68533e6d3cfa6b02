/*-------------------------------------------------------------------------
 *
 * snapshot.h
 *	  Reader side of a shard: pin the published segment list of a slot and
 *	  open its segments (mmap, verified once per process) as a search view.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SNAPSHOT_H
#define SE_SNAPSHOT_H

#include "postgres.h"

#include "cluster/state.h"
#include "search/search.h"

/*
 * Fill out with the current snapshot of (im, shard).  ERROR (with the ES
 * type in errdetail) when the shard is not available or corrupted; with
 * err != NULL sets err instead and returns false.
 */
extern bool se_snapshot_acquire(const SeIndexMeta *im, int shard,
								SeSearchShard *out, SeError *err);

/*
 * Open the point in time another process acquired (its shard's seg_gens /
 * del_gens), for running part of its search here.  Fails with type
 * "snapshot_gone" when a segment of it is no longer published and not
 * mapped here (its file may be deleted): the caller searches it itself.
 */
extern bool se_snapshot_acquire_at(const SeIndexMeta *im, int shard,
								   const uint64 *seg_gens, const uint64 *del_gens,
								   int nsegments, SeSearchShard *out,
								   SeError *err);

/*
 * se_snapshot_acquire, and register the snapshot as context ctx's point in
 * time on this node (pit_registry.h) before any of its files can go: the
 * owner keeps them, and se_snapshot_acquire_at opens them, until the
 * context is released or its keep_alive_ms passes.  The context is bound
 * to role owner (the requesting role, also when a peer asks).
 */
extern bool se_snapshot_acquire_pit(const SeIndexMeta *im, int shard, uint64 ctx,
									int64 keep_alive_ms, Oid owner, SeSearchShard *out,
									SeError *err);

/* Keep a snapshot's segments mapped across later acquires (or release them). */
extern void se_snapshot_pin(SeSearchShard *snap, bool pin);

/* Make sure unrefreshed writes of this shard are searchable (realtime get). */
extern void se_snapshot_refresh_if_needed(const SeIndexMeta *im, int shard);

/* Full checksum of every file of the shard; fails the shard on mismatch. */
extern void se_snapshot_verify(const SeIndexMeta *im, int shard);

/* Slot of (im, shard) in STARTED state, or sets err (503/500). */
extern int	se_snapshot_slot(const SeIndexMeta *im, int shard, SeError *err);

#endif
