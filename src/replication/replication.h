/*-------------------------------------------------------------------------
 *
 * replication.h
 *	  Primary-replica replication of writes (see README.md): the primary's
 *	  table of targets per shard slot, the replica_ops transport action,
 *	  applying sequenced operations through a copy's owner, and the
 *	  primary's replication of each bulk round.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_REPLICATION_H
#define SE_REPLICATION_H

#include "util/se_common.h"

#include "nodes/pg_list.h"
#include "replication/lease.h"

struct SeBulkHeader;

/* ---------- the primary's targets (replicate.c) ---------- */

/* A running peer recovery streams to allocation_id on node: replicate to it too. */
extern void se_replication_track(int slot, const char *allocation_id, const char *node);
extern void se_replication_untrack(int slot, const char *allocation_id);
/* The recovery finalized: the copy counts for the global checkpoint. */
extern void se_replication_mark_in_sync(int slot, const char *allocation_id);
/* The copy's last reported local checkpoint; -1 = unknown. */
extern int64 se_replication_target_checkpoint(int slot, const char *allocation_id);

/*
 * Apply ops (translog records) to this node's copy in slot through its
 * owner, in the bounded write queue: false with err on refusal (429 when
 * the queue is full, the primary term, ...).  *local_checkpoint: the
 * copy's after the (synced) apply.
 */
extern bool se_replication_apply_local(int slot, const char *allocation_id,
									   int64 primary_term, int64 global_checkpoint,
									   const char *ops, size_t len,
									   int64 *local_checkpoint, SeError *err);

/*
 * After the owners applied and synced a bulk round: send each shard's
 * operations to its copies and wait; a copy that fails is reported to
 * the master before anything is acknowledged.  Sub-requests that cannot
 * be acknowledged are turned FAILED.  No-op on a single node.
 */
extern void se_replication_replicate_round(struct SeBulkHeader *hdr);

/* Resyncs after a promotion, idle global checkpoint syncs (shard-state worker). */
extern void se_replication_maintain(void);

extern void se_replication_register_actions(void);

/*
 * Retention leases (retention.c, lease.h) of this node's primary in slot:
 * the periodic renewal/expiry/persistence pass, which publishes the
 * slot's retain_seq_no; a recovery's lease for node's copy retaining
 * from retaining_seq_no (set, even lower); an existing lease moved up
 * (renewed); node's lease's retaining seq_no (-1: none); the whole set
 * (stats).
 */
struct SeIndexMeta;
extern void se_retention_maintain(int slot, const struct SeIndexMeta *im);
extern void se_retention_renew(int slot, const char *node, int64 retaining_seq_no);
extern void se_retention_advance(int slot, const char *node, int64 retaining_seq_no);
extern int64 se_retention_lease_of(int slot, const char *node);
extern void se_retention_leases(int slot, SeLeaseSet *out);
/* lease_sync: a replica takes the primary's set (retention.c) */
extern void se_retention_register_actions(void);

#endif							/* SE_REPLICATION_H */
