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

/* the assigned copy on node, or NULL */
extern const SeShardCopy *se_routing_copy_on(const SeShardRouting *r, const char *node);

/* (the copy a read picks: replica_select.h) */

#endif							/* SE_CLUSTER_ROUTING_H */
