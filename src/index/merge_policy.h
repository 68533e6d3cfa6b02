/*-------------------------------------------------------------------------
 *
 * merge_policy.h
 *	  Which segments of a shard to merge next: a tiered merge policy with
 *	  the parameters (and Elasticsearch setting names) of Lucene's
 *	  TieredMergePolicy.
 *
 * Pure: no I/O, no shared state.  The shard engine describes its segments
 * (bytes on disk, documents, deleted documents, whether a merge already
 * has them) and gets back at most one merge at a time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_MERGE_POLICY_H
#define SE_MERGE_POLICY_H

typedef struct SeMergePolicy
{
	double		segments_per_tier;	/* index.merge.policy.segments_per_tier */
	int			max_merge_at_once;	/* index.merge.policy.max_merge_at_once */
	int64		floor_segment_bytes;	/* index.merge.policy.floor_segment */
	int64		max_merged_segment_bytes;	/* index.merge.policy.max_merged_segment */
	double		deletes_pct_allowed;	/* index.merge.policy.deletes_pct_allowed */
} SeMergePolicy;

/* Elasticsearch 8's defaults. */
#define SE_MERGE_DEFAULT_SEGMENTS_PER_TIER	10.0
#define SE_MERGE_DEFAULT_MAX_AT_ONCE		10
#define SE_MERGE_DEFAULT_FLOOR_BYTES		((int64) 2 * 1024 * 1024)
#define SE_MERGE_DEFAULT_MAX_MERGED_BYTES	((int64) 5 * 1024 * 1024 * 1024)
#define SE_MERGE_DEFAULT_DELETES_PCT		20.0

typedef struct SeMergeSegment
{
	int64		bytes;			/* size on disk */
	int64		max_doc;
	int64		del_count;		/* deleted documents among max_doc */
	bool		merging;		/* an earlier merge already has it */
} SeMergeSegment;

/*
 * The segments the tier budget says to merge now, as indexes into segs[]
 * written to out[] (room for max_merge_at_once); returns how many, 0 when
 * the shard is within budget.  Never picks a segment marked merging.  The
 * budget itself goes to *allowed unless that is NULL.
 */
extern int	se_merge_policy_find(const SeMergePolicy *p,
								 const SeMergeSegment *segs, int nsegs,
								 int *out, int *allowed);

/* How many segments the budget allows for these (excluding merging ones). */
extern int	se_merge_policy_allowed(const SeMergePolicy *p,
									const SeMergeSegment *segs, int nsegs);

#endif							/* SE_MERGE_POLICY_H */
