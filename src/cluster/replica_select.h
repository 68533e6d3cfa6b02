/*-------------------------------------------------------------------------
 *
 * replica_select.h
 *	  Which copy of a shard a read goes to: ES's search `preference`
 *	  (_shards, _only_local, _local, _prefer_nodes, _only_nodes, a custom
 *	  string) and ES's adaptive replica selection (ARS: copies ranked by the
 *	  response time, service time and queue size this coordinator saw from
 *	  their nodes and the requests it has outstanding to them).
 *
 * Pure (no shared memory, no catalog, times passed in): the statistics
 * are a table of this process; state_sync.c's se_state_pick_copy and
 * search_ops.c call in with the cluster state and the clock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_REPLICA_SELECT_H
#define SE_CLUSTER_REPLICA_SELECT_H

#include "util/se_common.h"
#include "cluster/routing.h"

typedef enum SePrefKind
{
	SE_PREF_DEFAULT = 0,		/* none (or only _shards): ARS / local first */
	SE_PREF_LOCAL,				/* _local */
	SE_PREF_ONLY_LOCAL,			/* _only_local */
	SE_PREF_PREFER_NODES,		/* _prefer_nodes:a,b */
	SE_PREF_ONLY_NODES,			/* _only_nodes:spec,... */
	SE_PREF_CUSTOM				/* any string not starting with '_' */
} SePrefKind;

typedef struct SePreference
{
	SePrefKind	kind;
	int			nshards;		/* _shards:2,3 -- 0: every shard */
	int		   *shards;
	int			nnodes;			/* _prefer_nodes / _only_nodes values */
	char	  **nodes;
	const char *text;			/* what was given (for _only_nodes' error) */
	uint32		hash;			/* custom string's hash */
} SePreference;

/*
 * Parse ES's preference (NULL or "": the default).  ES's errors: 400
 * illegal_argument_exception "no Preference for [_x]", a _shards value
 * that is not a number (number_format_exception).
 */
extern bool se_preference_parse(const char *text, SePreference *p, SeError *err);

/*
 * How _only_nodes' attr:value specs read a node's attributes: fn returns
 * them as node_attributes sets them ("k:v,k:v", palloc'd) or NULL when the
 * node is not known.  Unset: no attribute matches (the unit tests set one).
 */
extern void se_replica_attributes_lookup(char *(*fn) (const char *node));

/* Is shard s searched at all (the _shards filter)? */
extern bool se_preference_shard_wanted(const SePreference *p, int shard);

/* A copy readable now: STARTED (M: RELOCATING counts too). */
extern bool se_copy_readable(const SeShardCopy *c);

/*
 * The node a read of shard routing r goes to, coordinated by node me:
 *   - NULL with err unset: no copy matches (_only_local without a local
 *     copy): the shard counts in _shards.total and nowhere else, as ES's
 *     search counts a shard with no copy to try;
 *   - NULL with err set: ES's 400 for _only_nodes matching no copy;
 *   - else the node.  Default: ARS (when use_ars) ranks the readable
 *     copies, ties and copies without statistics going to me's copy first,
 *     then the one hash picks; no readable copy: the primary's node ("":
 *     unassigned, the caller answers unavailable).
 * p NULL is the default.  now_us: the clock, for ARS's bookkeeping.
 */
extern const char *se_replica_choose(const SeShardRouting *r, const char *index, int shard,
									 const char *me, const SePreference *p, uint32 hash,
									 bool use_ars, SeError *err);

/* ---------------------------------------------------------------------
 * Adaptive replica selection statistics (per process, keyed by node)
 * ---------------------------------------------------------------------
 */
#define SE_ARS_MAX_NODES 64
#define SE_ARS_NODE_LEN 64

typedef struct SeArsNodeStats
{
	char		node[SE_ARS_NODE_LEN];
	double		queue_size;		/* EWMA of the node's search queue length */
	double		response_ms;	/* EWMA of request-to-reply time seen here */
	double		service_ms;		/* EWMA of the node's own time on a request */
	int			outstanding;	/* shard requests of the read being planned */
	int64		samples;
} SeArsNodeStats;

/* The node's statistics (shared by its processes: ars_shmem.c) */
typedef struct SeArsTable
{
	int			n;
	SeArsNodeStats nodes[SE_ARS_MAX_NODES];
} SeArsTable;

/* ES's ResponseCollectorService.ALPHA */
#define SE_ARS_ALPHA 0.3

/*
 * Use t (lock(true/false) around every access) instead of the process's
 * own table: the backend's startup gives the shared one.
 */
extern void se_ars_use_table(SeArsTable *t, void (*lock) (bool acquire));

/*
 * A shard request of the read being planned goes to node / the planning of
 * a new read starts (a process coordinates one read at a time, so what it
 * has outstanding is what the read it plans already sends to each node).
 */
extern void se_ars_begin(const char *node);
extern void se_ars_clear_outstanding(void);

/*
 * A reply from node: response_ms measured here (send to reply), and what
 * the node reported of itself: its queue length and its service time.
 */
extern void se_ars_record(const char *node, double queue_size, double response_ms,
						  double service_ms);

/* A copy of node's statistics into *out; false when none were collected. */
extern bool se_ars_stats(const char *node, SeArsNodeStats *out);

/*
 * ES's rank of a node (ComputedNodeStats.innerRank, C3): with os its
 * outstanding requests from here and nclients the number of copies
 * ranked, q^ = 1 + os * nclients + queue_size, rank = response - service +
 * q^3 * service (ES's notation: mu = 1 / service time).  Lower is better.
 */
extern double se_ars_rank(const SeArsNodeStats *s, int nclients);

/* Forget every statistic (tests). */
extern void se_ars_reset(void);

/* Copies of up to max nodes' statistics (_nodes/stats); returns count. */
extern int	se_ars_all(SeArsNodeStats *out, int max);

/* in ars_shmem.c (backend only): the shared table */
extern Size se_ars_shmem_size(void);
extern void se_ars_shmem_init(void);

#endif							/* SE_CLUSTER_REPLICA_SELECT_H */
