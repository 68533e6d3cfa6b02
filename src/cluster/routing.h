/*-------------------------------------------------------------------------
 *
 * routing.h
 *	  One shard's routing: its copies (the primary first), its primary
 *	  term and in-sync allocation ids, and the rules that change them
 *	  (pure: no shared memory, no catalog; state.h includes it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_ROUTING_H
#define SE_CLUSTER_ROUTING_H

#include "util/se_common.h"

#ifndef SE_UUID_LEN
#define SE_UUID_LEN				22		/* as node/node.h */
#endif

/* A shard copy's state in the routing table, as ES's ShardRoutingState. */
typedef enum SeShardState
{
	SE_SHARD_UNASSIGNED = 0,
	SE_SHARD_INITIALIZING,
	SE_SHARD_STARTED
} SeShardState;

/*
 * One shard copy as the master decided it (cluster mode): its state, the
 * allocation id the master gave it when it placed it (a data node's
 * shard_started/shard_failed must name it, so a stale report is ignored),
 * and, while it is not started, why it was unassigned (ES's
 * UnassignedInfo: reason, when, details, failed attempts).
 */
typedef struct SeShardCopy
{
	SeShardState state;
	char		allocation_id[SE_UUID_LEN + 1];	/* "" when unassigned */
	char	   *unassigned_reason;	/* NULL once started */
	int64		unassigned_at;	/* ms since the epoch */
	char	   *unassigned_details; /* NULL: none */
	int			failed_attempts;
	char	   *data_node;		/* the node holding its data once it started
								 * (a primary comes back only there); NULL: none */
	bool		primary;		/* the shard's primary copy (copies[0]) */
	char	   *node;			/* the node it is placed on, "" = unassigned */

	/*
	 * A STARTED copy that is moving (ES's RELOCATING): it stays on node,
	 * readable and writable, while its target -- an INITIALIZING copy on
	 * relocating_node under relocation_id -- recovers from the primary.
	 * When the target reports started it takes this copy's place (same
	 * primary flag, same term).  NULL / "": not relocating.
	 */
	char	   *relocating_node;
	char		relocation_id[SE_UUID_LEN + 1];
} SeShardCopy;

/*
 * One shard's routing (cluster mode): its copies, the primary first (ES's
 * IndexShardRoutingTable), the shard's primary term (ES's
 * IndexMetadata.primaryTerm(shard): + 1 on every promotion) and the
 * allocation ids of the copies that have every acknowledged operation
 * (ES's in_sync_allocations): only these may become primary.
 */
typedef struct SeShardRouting
{
	int			ncopies;		/* 1 + number_of_replicas */
	SeShardCopy *copies;		/* copies[0] is the primary copy */
	int64		primary_term;
	int			nin_sync;
	char	  **in_sync;
} SeShardRouting;

extern bool se_routing_in_sync(const SeShardRouting *r, const char *allocation_id);
extern void se_routing_in_sync_add(SeShardRouting *r, const char *allocation_id);
extern void se_routing_in_sync_remove(SeShardRouting *r, const char *allocation_id);

/* a new unassigned replica copy (reason: ES's unassigned_info) */
extern void se_routing_init_replica(SeShardCopy *c, const char *reason, int64 now_ms);

/* copy k -> UNASSIGNED (reason, details), out of the in-sync set; data kept */
extern void se_routing_unassign(SeShardRouting *r, int k, const char *reason,
								const char *details, int64 now_ms);

/* ncopies copies: replicas added UNASSIGNED (REPLICA_ADDED) or removed */
extern bool se_routing_resize(SeShardRouting *r, int ncopies, int64 now_ms);

/* unassigned primary: promote a STARTED in-sync replica, term + 1 */
extern bool se_routing_promote(SeShardRouting *r, int64 now_ms);

/* copy k is a STARTED copy moving to a target (ES's RELOCATING) */
#define se_routing_relocating(c) \
	((c)->state == SE_SHARD_STARTED && (c)->relocating_node != NULL && \
	 (c)->relocating_node[0] != '\0')

/* copy k (STARTED) starts moving to node under a fresh target id */
extern void se_routing_relocate(SeShardRouting *r, int k, const char *node,
								const char *target_id);

/* copy k's relocation ends without moving (target failed, cancelled) */
extern void se_routing_relocation_cancel(SeShardRouting *r, int k);

/*
 * copy k's target started: it takes k's place (node, allocation id,
 * in-sync entry); a primary keeps its primary term (ES: a relocation is
 * not a failover).
 */
extern void se_routing_relocation_done(SeShardRouting *r, int k);

/* the copy k relocating to node under target_id, or -1 */
extern int	se_routing_relocation_of(const SeShardRouting *r, const char *node,
									 const char *target_id);

/*
 * The relocation target on node (an INITIALIZING replica-like copy under
 * the relocation id, primary false), written into *out; false: none.
 */
extern bool se_routing_target_on(const SeShardRouting *r, const char *node, SeShardCopy *out);

/* copies moving now */
extern int	se_routing_relocations(const SeShardRouting *r);

/* the assigned copy on node, or NULL */
extern const SeShardCopy *se_routing_copy_on(const SeShardRouting *r, const char *node);

/* (the copy a read picks: replica_select.h) */

#endif							/* SE_CLUSTER_ROUTING_H */
