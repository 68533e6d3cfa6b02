/*-------------------------------------------------------------------------
 *
 * aggs.h
 *	  Aggregations: ES "aggs" parsed into a tree of specs, collected per
 *	  shard over doc values for the query's matching docs, shipped as
 *	  partial states and reduced at the coordinator (pure, as search/).
 *
 * Flow, the same for local and remote shards:
 *   se_aggs_parse (request)  -> SeAggSpec tree, mapping-free
 *   se_aggs_shard_begin      -> SeAggsShard: specs bound to one shard's
 *                               mapping (fields, filter weights)
 *   se_aggs_segment / se_aggs_collect for every matching live doc
 *   se_aggs_shard_end        -> SeAggPartial: the shard's states, terms
 *                               cut to shard_size with their error bounds
 *   se_aggs_encode / se_aggs_decode: a partial as bytes (shard_wire.c)
 *   se_aggs_reduce           -> merged states, then JSON (ES's shape)
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SEARCH_AGGS_H
#define SE_SEARCH_AGGS_H

#include "search/search.h"

typedef struct SeAggSpec SeAggSpec;		/* one named aggregation */
typedef struct SeAggs
{
	int			n;
	SeAggSpec **specs;
} SeAggs;
typedef struct SeAggsShard SeAggsShard;
typedef struct SeAggPartial SeAggPartial;
struct SeSegmentCtx;

/* Parse the value of "aggs"/"aggregations"; NULL with err (ES's errors). */
extern SeAggs *se_aggs_parse(const SeJson *v, SeError *err);
/* top_hits' from + size within index.max_inner_result_window (max) */
extern bool se_aggs_check_inner_window(const SeAggs *aggs, int max, SeError *err);

extern SeAggsShard *se_aggs_shard_begin(const SeAggs *aggs, SeSearchShard *shard,
										SeError *err);
extern void se_aggs_segment(SeAggsShard *as, struct SeSegmentCtx *seg);
extern void se_aggs_collect(SeAggsShard *as, int32 doc, float score);
/* Does a top_hits sorted by _score need the query phase to score? */
extern bool se_aggs_need_scores(const SeAggs *aggs);
extern SeAggPartial *se_aggs_shard_end(SeAggsShard *as);

extern void se_aggs_encode(const SeAggPartial *p, StringInfo out);
/* NULL when the bytes are not a partial of aggs */
extern SeAggPartial *se_aggs_decode(const SeAggs *aggs, const char *data, size_t len);

/*
 * Merge the partials (NULL entries are skipped: failed shards) and write
 * the "aggregations" object's value to out; typed_keys names each
 * aggregation "type#name" at every depth (ES's typed_keys=true).
 */
extern void se_aggs_reduce(const SeAggs *aggs, SeAggPartial **parts, int nparts,
						   bool typed_keys, StringInfo out);

#endif							/* SE_SEARCH_AGGS_H */
