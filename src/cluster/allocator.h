/*-------------------------------------------------------------------------
 *
 * allocator.h
 *	  The master's shard allocator: Elasticsearch's balanced allocator and
 *	  allocation deciders over an in-memory routing model (pure: no I/O, no
 *	  shared memory, no catalog).
 *
 * The master builds an SeAllocModel from the cluster state (nodes with
 * their roles, attributes and disk figures; indices with their settings;
 * every shard copy with its state), calls se_alloc_reroute(), and commits
 * the copies whose state or node changed.  Tests and bench/ build models
 * of synthetic clusters the same way.
 *
 * A reroute runs ES's three steps in order:
 *	 1. allocate unassigned copies (primaries first) to the node of least
 *		weight whose deciders all say YES (THROTTLE: retry next reroute);
 *	 2. move copies that may not remain where they are (filters, the high
 *		disk watermark, awareness) to the node of least weight that takes
 *		them;
 *	 3. rebalance: per index, while the weights of the heaviest and the
 *		lightest eligible node differ by more than the threshold, relocate
 *		a started copy from the one to the other.
 * The weight of a node for an index is ES's
 *	   theta0 * (shards(node) - avg shards per node)
 *	 + theta1 * (shards(node, index) - avg shards of index per node)
 * with theta0 = balance.shard / (balance.shard + balance.index), theta1 the
 * rest (defaults 0.45 and 0.55, threshold 1.0).  Ties go to the node that
 * comes first in the model, so the same model always gives the same result.
 *
 * Linear bookkeeping: every count a decider or the weight function needs
 * -- shards per node, shards per (node, index), initializing and relocating
 * copies per node, primaries in initial recovery per node, bytes relocating
 * in and out per node, copies per shard -- is kept up to date as copies
 * change state (se_alloc_check_invariants() recomputes them from scratch
 * in tests and assert-enabled builds), so each decider answers in O(1)
 * (O(copies of one shard) for same-shard and awareness) and a reroute is
 * O(copies x nodes) with nodes a small constant.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_ALLOCATOR_H
#define SE_ALLOCATOR_H

#include "util/se_common.h"

typedef enum SeCopyState
{
	SE_COPY_UNASSIGNED = 0,
	SE_COPY_INITIALIZING,
	SE_COPY_STARTED,
	SE_COPY_RELOCATING			/* started on node, moving to relocating_node */
} SeCopyState;

typedef enum SeDecisionType
{
	SE_DECISION_NO = 0,
	SE_DECISION_THROTTLE,
	SE_DECISION_YES
} SeDecisionType;

/* why a copy is unassigned (ES's UnassignedInfo.Reason, the ones we use) */
typedef enum SeUnassignedReason
{
	SE_UNASSIGNED_INDEX_CREATED = 0,
	SE_UNASSIGNED_NODE_LEFT,
	SE_UNASSIGNED_ALLOCATION_FAILED,
	SE_UNASSIGNED_REROUTE_CANCELLED,
	SE_UNASSIGNED_REPLICA_ADDED,
	SE_UNASSIGNED_INDEX_REOPENED,
	SE_UNASSIGNED_CLUSTER_RECOVERED
} SeUnassignedReason;

/* cluster.routing.allocation.enable / index.routing.allocation.enable */
typedef enum SeAllocEnable
{
	SE_ALLOC_ENABLE_ALL = 0,
	SE_ALLOC_ENABLE_PRIMARIES,
	SE_ALLOC_ENABLE_NEW_PRIMARIES,
	SE_ALLOC_ENABLE_NONE
} SeAllocEnable;

/* cluster.routing.rebalance.enable */
typedef enum SeRebalanceEnable
{
	SE_REBALANCE_ALL = 0,
	SE_REBALANCE_PRIMARIES,
	SE_REBALANCE_REPLICAS,
	SE_REBALANCE_NONE
} SeRebalanceEnable;

/* "key:value" pairs */
typedef struct SeAllocAttr
{
	const char *key;
	const char *value;
} SeAllocAttr;

/*
 * An allocation filter: routing.allocation.{include,exclude,require}.<attr>
 * = "v1,v2*".  attr is "_name", "_host", "_id" or a node attribute.
 */
typedef struct SeAllocFilter
{
	const char *attr;
	int			nvalues;
	const char **values;		/* simple wildcards: '*' matches any run */
} SeAllocFilter;

typedef struct SeAllocFilters
{
	int			ninclude,
				nexclude,
				nrequire;
	SeAllocFilter *include;
	SeAllocFilter *exclude;
	SeAllocFilter *require;
} SeAllocFilters;

typedef struct SeAllocNode
{
	const char *id;				/* ephemeral id; the model's order breaks ties */
	const char *name;
	const char *host;
	const char *transport_address;	/* for explain; NULL: host */
	int			nattrs;
	SeAllocAttr *attrs;
	bool		data;			/* holds shards (coordinating/master-only: false) */
	/* disk of the data path; total 0 = unknown (the disk decider says YES) */
	int64		disk_total;
	int64		disk_used;
} SeAllocNode;

typedef struct SeAllocIndex
{
	const char *name;
	int			number_of_shards;
	int			number_of_replicas;
	bool		closed;
	int			total_shards_per_node;	/* -1: unlimited */
	int			max_retries;	/* index.allocation.max_retries (5) */
	SeAllocEnable enable;		/* index.routing.allocation.enable */
	int64		delayed_timeout_ms; /* index.unassigned.node_left.delayed_timeout */
	SeAllocFilters filters;		/* index.routing.allocation.* */
	/* out: flood stage set index.blocks.read_only_allow_delete */
	bool		read_only_allow_delete;
} SeAllocIndex;

typedef struct SeAllocCopy
{
	int			index;			/* into model->indices */
	int			shard;
	bool		primary;
	SeCopyState state;
	int			node;			/* -1 when unassigned */
	int			relocating_node;	/* RELOCATING: its target; else -1 */
	int64		size_bytes;		/* on disk (0 for a new copy) */
	/*
	 * The node whose disk holds this copy's data (for a primary that has
	 * been started once: the only place it can come back from without
	 * losing data, as ES's in-sync allocation ids); -1 = none, a new copy.
	 */
	int			data_node;
	/* unassigned copies */
	SeUnassignedReason reason;
	int64		unassigned_at_ms;
	int			failed_attempts;
	/* out: changed by the reroute (the master commits these) */
	bool		changed;
	int			ref;			/* the caller's, kept through se_alloc_prepare's sort */
} SeAllocCopy;

typedef struct SeAllocSettings
{
	float		balance_shard;	/* cluster.routing.allocation.balance.shard */
	float		balance_index;	/* ...balance.index */
	float		threshold;		/* ...balance.threshold */
	SeAllocEnable enable;
	SeRebalanceEnable rebalance_enable;
	int			cluster_concurrent_rebalance;	/* 2; -1 unlimited */
	int			node_concurrent_incoming_recoveries;	/* 2 */
	int			node_concurrent_outgoing_recoveries;	/* 2 */
	int			node_initial_primaries_recoveries;	/* 4 */
	int			total_shards_per_node;	/* cluster level; -1 unlimited */
	bool		same_shard_host;	/* ...same_shard.host */
	/* disk watermarks: a fraction of the disk used (0.85) or, if *_bytes
	 * > 0, the free bytes that must remain */
	bool		disk_threshold_enabled;
	double		low_used;
	double		high_used;
	double		flood_used;
	int64		low_free_bytes;
	int64		high_free_bytes;
	int64		flood_free_bytes;
	/* awareness */
	int			nawareness;
	const char **awareness;		/* attribute names */
	/* forced values per awareness attribute (NULL-terminated lists) */
	const char ***awareness_force;
	SeAllocFilters filters;		/* cluster.routing.allocation.* */
	int64		now_ms;			/* for delayed allocation */
	/* never move a copy (no step 2 and 3): relocation needs a peer recovery */
	bool		no_relocation;
} SeAllocSettings;

/* bookkeeping, per node (see the header comment) */
typedef struct SeAllocNodeCounts
{
	int			shards;			/* copies assigned (RELOCATING counted on the target) */
	int			initializing;	/* incoming recoveries (relocation targets too) */
	int			relocating_out; /* outgoing */
	int			initial_primaries;	/* primaries INITIALIZING from their own store */
	int64		bytes_in;		/* bytes relocating in */
	int64		bytes_out;		/* bytes relocating away */
} SeAllocNodeCounts;

typedef struct SeAllocModel
{
	SeAllocSettings settings;
	int			nnodes;
	SeAllocNode *nodes;
	int			nindices;
	SeAllocIndex *indices;
	int			ncopies;
	SeAllocCopy *copies;

	/* derived by se_alloc_prepare(); kept current by every change */
	SeAllocNodeCounts *counts;	/* per node */
	int		   *node_index_shards;	/* [index * nnodes + node] */
	int		   *index_copies;	/* per index: its copies (for averages) */
	int		   *shard_first;	/* per (index, shard): first copy id (copies sorted) */
	int		   *index_first_shard;	/* per index: offset into shard_first */
	int			ndata_nodes;
	int		   *awareness_values;	/* per awareness attribute: its values */
	int			total_copies;	/* every copy of every index (for averages) */
	int			unassigned;		/* copies UNASSIGNED now */
	int			initializing;	/* copies INITIALIZING now */
	int			relocations;	/* copies RELOCATING now */
	bool		prepared;
} SeAllocModel;

/* One decider's verdict (explain); explanation is palloc'd. */
typedef struct SeAllocVerdict
{
	const char *decider;
	SeDecisionType type;
	char	   *explanation;
} SeAllocVerdict;

typedef struct SeAllocNodeDecision
{
	int			node;
	SeDecisionType type;
	float		weight;
	int			nverdicts;
	SeAllocVerdict *verdicts;
} SeAllocNodeDecision;

/* Defaults as ES 8's. */
extern void se_alloc_settings_default(SeAllocSettings *s);

/*
 * Sort the copies by (index, shard, primary first) and build the
 * bookkeeping.  Call once after filling nodes, indices and copies (copy
 * ids change); errors (a copy naming no index, a shard out of range, two
 * primaries) go to err.
 */
extern bool se_alloc_prepare(SeAllocModel *m, SeError *err);

/*
 * Allocate, move, rebalance.  Returns the number of copies changed
 * (copies[i].changed tells which).  Sets indices' read_only_allow_delete
 * from the flood stage.
 */
extern int	se_alloc_reroute(SeAllocModel *m);

/* State changes the master applies from nodes' reports. */
extern void se_alloc_start(SeAllocModel *m, int copy);	/* INITIALIZING -> STARTED */
extern void se_alloc_fail(SeAllocModel *m, int copy);	/* -> UNASSIGNED, attempts+1 */
extern void se_alloc_node_left(SeAllocModel *m, int node);

/*
 * Explicit commands (POST /_cluster/reroute).  false with err set (ES's
 * illegal_argument_exception with the deciders' reasons) when refused.
 */
extern bool se_alloc_move(SeAllocModel *m, int copy, int to_node, SeError *err);
extern bool se_alloc_cancel(SeAllocModel *m, int copy, bool allow_primary, SeError *err);
extern bool se_alloc_allocate_replica(SeAllocModel *m, int copy, int node, SeError *err);
extern bool se_alloc_allocate_primary(SeAllocModel *m, int copy, int node,
									  bool stale, bool accept_data_loss, SeError *err);
/* reset failed_attempts of every copy (retry_failed) */
extern void se_alloc_retry_failed(SeAllocModel *m);

/*
 * Every decider's verdict for placing copy on each data node (or, for an
 * assigned copy, for it to remain where it is in *remain): the basis of
 * GET /_cluster/allocation/explain.  decisions has nnodes entries, in
 * weight order (ES's weight_ranking).
 */
extern void se_alloc_explain(SeAllocModel *m, int copy,
							 SeAllocNodeDecision *decisions,
							 SeAllocNodeDecision *remain);

/*
 * GET /_cluster/allocation/explain for copy, in ES's shape: current state,
 * unassigned_info, can_allocate / can_remain_on_current_node /
 * can_move_to_other_node / can_rebalance_*, and node_allocation_decisions
 * ranked by weight, each with the deciders that said NO or THROTTLE (every
 * decider with include_yes_decisions).  now_ms: the settings' now_ms.
 */
extern void se_alloc_explain_json(SeAllocModel *m, int copy, bool include_yes_decisions,
								  StringInfo out);
extern const char *se_unassigned_reason_name(SeUnassignedReason r);

/* The copy ids of (index, shard): first and count. */
extern int	se_alloc_shard_copies(const SeAllocModel *m, int index, int shard, int *ncopies);

/* Recompute the bookkeeping and compare; false with the first difference in err. */
extern bool se_alloc_check_invariants(const SeAllocModel *m, SeError *err);

extern const char *se_copy_state_name(SeCopyState s);
extern const char *se_decision_name(SeDecisionType d);

#endif							/* SE_ALLOCATOR_H */
