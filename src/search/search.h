/*-------------------------------------------------------------------------
 *
 * search.h
 *	  Search: ES query DSL -> query tree -> per-segment scorers -> top-k
 *	  collection -> fetch (pure; no catalog, no shared memory).
 *
 * Execution follows ES's query_then_fetch: the query phase runs per shard
 * with that shard's term statistics (BM25 exactly as Lucene's
 * BM25Similarity: k1 = 1.2, b = 0.75, float32 arithmetic, SmallFloat norms)
 * and returns the shard's top (from + size) docs and hit count; the
 * coordinator merges the shards' top docs; the fetch phase loads _id and
 * _source of the final page.  Shards here are in-process snapshots; the
 * same three steps will later run on remote shards through the transport.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SEARCH_H
#define SE_SEARCH_H

#include "util/se_common.h"
#include "util/json.h"
#include "index/segment.h"
#include "mapping/mapping.h"

/* A point-in-time view of one shard: its refreshed segments. */
typedef struct SeSearchShard
{
	const char *index;			/* index name, for _index */
	int			shard;			/* shard number */
	const SeMapping *mapping;	/* mapping of the index */
	int			nsegments;
	SeSegmentReader **segments;
	const uint64 **live_docs;	/* per segment; NULL entry = all live */
	/* the point in time, to search it elsewhere (NULL when not known) */
	const char *index_uuid;
	const uint64 *seg_gens;		/* per segment: segment generation */
	const uint64 *del_gens;		/* per segment: live docs generation */
	/* the index's query limits; 0 = ES's defaults (below) */
	int			max_terms_count;	/* index.max_terms_count */
	int			max_regex_length;	/* index.max_regex_length */
	int			max_analyzed_offset;	/* index.highlight.max_analyzed_offset */
	/*
	 * Not NULL: the shard is on that node.  Its query phase arrives through
	 * the transport's receive (nsegments says how many segments it has
	 * there, segments is NULL) and its hits through the transport's fetch.
	 */
	const char *node;
	/*
	 * Not NULL: the shard failed before its query phase (its node failed
	 * the DFS phase); it is not searched and counts as a failed shard.
	 */
	const SeError *failure;
	/*
	 * Segments with nested docs (nested.c): live_docs has them cleared, so
	 * that everything top-level sees root docs only; this has the true live
	 * docs, for the nested scorer.  NULL: live_docs are the true ones.
	 */
	const uint64 **all_live_docs;
} SeSearchShard;

/*
 * Nested docs of a segment (nested.c): the docs with a _nested_path term
 * and the others, the root docs (NULL when it has none; cached in the
 * reader, never to be freed), and live docs without the nested ones (live
 * NULL: all; palloc'd).
 */
extern const uint64 *se_nested_docs_bits(SeSegmentReader *r);
extern const uint64 *se_nested_root_bits(SeSegmentReader *r);
extern uint64 *se_nested_top_live(const uint64 *live, const uint64 *nested,
								  uint32 max_doc);

#define SE_MAX_TERMS_COUNT_DEFAULT	65536
#define SE_MAX_REGEX_LENGTH_DEFAULT 1000
#define SE_MAX_CLAUSE_COUNT_DEFAULT 4096

typedef struct SeSearchRequest SeSearchRequest;	/* opaque */

/*
 * Parse an ES search body ({"query":..,"from":..,"size":..,"sort":..,
 * "_source":..,"track_total_hits":..}); body may be NULL (match_all).
 * Errors as ES: unknown query type -> 400 "parsing_exception" ("unknown
 * query [foo]"), malformed query -> 400 "parsing_exception" /
 * "x_content_parse_exception" naming the query and the bad part, unknown
 * top-level key -> 400 "parsing_exception", from + size > max_result_window
 * -> 400 "illegal_argument_exception" (ES's "Result window is too large..."
 * message).
 */
extern SeSearchRequest *se_search_parse(const SeJson *body,
										int max_result_window, SeError *err);

/*
 * The index.max_* limits a search body is held to, each with ES's message
 * naming its setting; -1 = ES's default (in brackets), INT_MAX = none.
 */
typedef struct SeSearchLimits
{
	int			max_result_window;	/* from + size (10000) */
	int			max_inner_result_window;	/* top_hits from + size (100) */
	int			max_docvalue_fields_search; /* docvalue_fields (100) */
	int			max_script_fields;	/* script_fields (32) */
	int			max_rescore_window; /* rescore window_size (10000) */
	int			max_slices_per_scroll;	/* slice max (1024) */
} SeSearchLimits;

/* se_search_parse under every limit of lim */
extern SeSearchRequest *se_search_parse_limited(const SeJson *body,
												const SeSearchLimits *lim,
												SeError *err);

/* Overrides from URL parameters (size, from); negative = unchanged. */
extern void se_search_set_from_size(SeSearchRequest *req, int from, int size);
/* The URL "timeout", which overrides the body's, as ES's; -1 = none */
extern void se_search_set_timeout(SeSearchRequest *req, int64 timeout_ms);
/* hits carry _seq_no and _primary_term (URL seq_no_primary_term=true) */
extern void se_search_set_seq_no_primary_term(SeSearchRequest *req);
/* aggregation names in the response as "type#name" (URL typed_keys=true) */
extern void se_search_set_typed_keys(SeSearchRequest *req);

/*
 * Deep pagination.  "search_after" resumes after the given sort values;
 * "pit" ({"id", "keep_alive"}) names a point in time the caller resolves
 * to shards (the request sorts with _shard_doc as the last tiebreaker, as
 * ES does); "slice" ({"id", "max"}) keeps the docs whose
 * murmur3(_id) % max == id (a doc's slice does not depend on the snapshot).  Hits show the sort values of the body's own keys
 * only after se_search_set_visible_sort(req, true) (scroll pages).
 */
extern const char *se_search_pit_id(const SeSearchRequest *req);
extern int64 se_search_pit_keep_alive(const SeSearchRequest *req);	/* -1: none */
extern bool se_search_has_slice(const SeSearchRequest *req);
extern bool se_search_has_search_after(const SeSearchRequest *req);
extern void se_search_set_visible_sort(SeSearchRequest *req, bool user_only);
/* A keep_alive / scroll time value ("1m") in ms. */
extern bool se_search_parse_keep_alive(const SeJson *v, int64 *ms, SeError *err);

/*
 * dfs_query_then_fetch.  The DFS phase of each shard adds the statistics
 * of the terms and fields the query scores with to a set; the sum over
 * all shards, given to the request, makes every shard's query phase score
 * with it, so BM25 scores equal those of one shard holding every doc.
 * The set travels between processes and nodes encoded (dfs.c).
 */
typedef struct SeDfsStats SeDfsStats;
extern SeDfsStats *se_dfs_stats_create(void);
extern bool se_search_dfs_phase(SeSearchRequest *req, SeSearchShard *shard,
								SeDfsStats *into, SeError *err);
/* Add from's figures to into's (another shard's, another node's). */
extern void se_dfs_stats_add(SeDfsStats *into, const SeDfsStats *from);
extern void se_dfs_stats_encode(const SeDfsStats *s, StringInfo out);
/* NULL when data is not an encoded set */
extern SeDfsStats *se_dfs_stats_decode(const char *data, size_t len);
/* Score req's query phases with global (the DFS phase's sums); NULL: none. */
extern void se_search_set_dfs(SeSearchRequest *req, const SeDfsStats *global);

/* Count-only request for _count bodies ({"query":..}). */
extern SeSearchRequest *se_search_parse_count(const SeJson *body, SeError *err);

typedef struct SeHit
{
	int			shard_idx;		/* index into the shards array */
	int			segment;		/* index into that shard's segments */
	int32		doc;
	float		score;			/* NaN when not scored (sort without _score) */
	char	   *id;
	char	   *sort_json;		/* JSON array of sort values, or NULL */
	StringInfoData source;		/* filtered _source JSON (len 0 if none) */
	bool		has_source;
	char	   *highlight;		/* the hit's "highlight" object, or NULL */
	char	   *fields;			/* the hit's "fields" object, or NULL */
	char	   *explanation;	/* the hit's "_explanation" object, or NULL */
	uint32		rescored;		/* set before the fetch: bit i, rescorer i's window */
	/* a hit fetched from another node: its metadata came with it */
	bool		has_meta;
	SeDocMeta	meta;
	/* collapse: the group value (JSON), and the "inner_hits" object or NULL */
	char	   *collapse_value;
	char	   *inner_hits;
} SeHit;

typedef struct SeSearchResult
{
	int64		total;			/* hits.total.value */
	bool		total_is_lower_bound;	/* relation "gte" */
	bool		track_total;	/* false when track_total_hits: false */
	float		max_score;		/* NaN if none */
	int			nhits;
	SeHit	   *hits;
	int			shards_total;
	int			shards_successful;
	int			shards_failed;
	bool		timed_out;		/* a shard stopped at the request's timeout */
	bool		seq_no_primary_term;	/* hits show _seq_no, _primary_term */
	char	   *aggregations;	/* the "aggregations" object, or NULL */
	/* every sort value of the last hit (JSON array; NULL: no hit or no sort) */
	char	   *last_sort_json;
	/* written first in the response when set (the caller sets them) */
	const char *scroll_id;
	const char *pit_id;
	bool		version;		/* hits show _version */
	bool		terminated_early;	/* a shard stopped at terminate_after */
	bool		total_as_int;	/* rest_total_hits_as_int: "total": N */
	bool		no_id;			/* stored_fields "_none_": hits without _id */
} SeSearchResult;

/*
 * Top-k retrieval may skip blocks of postings that cannot beat the k-th
 * best score (block-max WAND for disjunctions, block-max conjunctions,
 * impact skipping of single terms) once the hit count no longer needs to
 * be exact (past track_total_hits).  Results are the same either way;
 * false evaluates exhaustively (benchmarks, and a safety valve a setting
 * can expose).  Default true.
 */
extern bool se_search_block_max;

/*
 * Let numeric and date ranges that span many distinct values read doc
 * values instead of walking one term per value.  Results are the same
 * either way (false: always walk the terms, for comparisons).  Default true.
 */
extern bool se_search_range_doc_values;

/*
 * ES's indices.query.bool.max_clause_count: a bool query, or a match
 * query's terms, beyond it fail with too_many_clauses; a query whose
 * leaves (terms of phrases and matches, other leaf queries) add up beyond
 * it fails with too_many_nested_clauses.  Default 4096.
 */
extern int	se_search_max_clause_count;

/*
 * Interrupts.  Every loop over documents, terms or positions of a search
 * counts its work, and every few thousand units calls this hook when it is
 * set.  The hook may leave by a longjmp of its own (the server's runs
 * CHECK_FOR_INTERRUPTS, whose ereport does so; search memory is request
 * memory and nothing is locked), or return false: the shard query phase
 * or scan in progress then stops and fails with task_cancelled_exception
 * (outside them false is ignored).  The same checks enforce a request's
 * "timeout": a shard's query phase that runs past it stops and keeps the
 * hits collected so far ("timed_out": true, as ES).
 */
extern bool (*se_search_interrupt_hook) (void);

/*
 * Field collapsing (collapse.c).  The expand phase of inner_hits runs one
 * search per hit and definition i: se_search_collapse_expand_body writes
 * its body from the request's body and the hit's group.
 */
extern bool se_search_has_collapse(const SeSearchRequest *req);
extern int	se_search_collapse_ninner(const SeSearchRequest *req);
extern const char *se_search_collapse_inner_name(const SeSearchRequest *req, int i);
extern void se_search_collapse_expand_body(const SeSearchRequest *req, const SeJson *body,
										   const SeHit *hit, int i, StringInfo out);

/*
 * Whether scripts of lang may run (search_engine.allowed_script_languages);
 * NULL: any.  Asked when a request with a script is parsed.
 */
extern bool (*se_search_script_lang_hook) (const char *lang, SeError *err);
/* The source of stored script id (NULL with err set when there is none). */
extern const char *(*se_search_stored_script_hook) (const char *id, SeError *err);

/* Run query + fetch over the shards.  NULL with err set on failure. */
extern SeSearchResult *se_search_run(SeSearchRequest *req,
									 SeSearchShard *shards, int nshards,
									 SeError *err);

/*
 * The shard transport seam.  A coordinator may send the query phase of some
 * shards elsewhere (a search worker, later another node); the shard side
 * runs se_search_query_phase and answers with its encoded top docs (or its
 * error).  se_search_run_remote then takes those answers in shard order in
 * place of running those shards, and runs a shard itself when its answer
 * does not come (receive returns false) or cannot be decoded -- so the
 * result is the one se_search_run gives.  The shard side must search the
 * same point in time (segments and live docs) as the coordinator's shards.
 */
typedef struct SeShardTransport
{
	void	   *arg;
	const bool *remote;			/* per shard: its query phase was sent */
	/* Wait for shard i's answer into msg; false = none, run it here. */
	bool		(*receive) (void *arg, int shard_idx, StringInfo msg);

	/*
	 * Fetch the n hits whose shards are on other nodes (hits[i].shard_idx,
	 * segment and doc set): fill id, source and has_source.  NULL when no
	 * shard is elsewhere.
	 */
	bool		(*fetch) (void *arg, SeHit *hits, int n, SeError *err);
} SeShardTransport;

/* An error as the shard messages carry it (status, type, reason). */
struct SeWireReader;
extern void se_search_wire_put_error(StringInfo out, const SeError *e);
/* Read one into e; r->bad when malformed. */
extern void se_search_wire_get_error(struct SeWireReader *r, SeError *e);

/* A query phase message telling that shard shard_idx failed with e. */
extern void se_search_wire_shard_failed(StringInfo out, int shard_idx, const SeError *e);

/*
 * Lucene's explanation (JSON) of req's score for doc of segment of shard
 * (search/explain.c), whether it matches or not (*matched, may be NULL).
 */
extern bool se_search_explain_doc(SeSearchRequest *req, SeSearchShard *shard, int segment,
								  int32 doc, char **explanation, bool *matched, SeError *err);
/*
 * _validate/query: bind req's query to shard (false, err, when it cannot
 * be) and append the bound query as Lucene's toString writes it (terms
 * the shard lacks bind to MatchNoDocsQuery, as rewritten ones).
 */
extern bool se_search_validate(SeSearchRequest *req, SeSearchShard *shard,
							   StringInfo explanation, SeError *err);
/* Fetch one doc's id and (filtered) source into hit, as a search's hits get them. */
extern bool se_search_fetch_doc(SeSearchRequest *req, SeSearchShard *shard, int segment,
								int32 doc, SeHit *hit, SeError *err);

extern void se_search_query_phase(SeSearchRequest *req, SeSearchShard *shard,
								  int shard_idx, StringInfo out);
extern SeSearchResult *se_search_run_remote(SeSearchRequest *req,
											SeSearchShard *shards, int nshards,
											const SeShardTransport *t,
											SeError *err);

/* Called after a query phase this process ran for its own request (_stats). */
typedef void (*SeSearchQueryHook) (const SeSearchShard *shard, int64 elapsed_us);
extern SeSearchQueryHook se_search_query_hook;

/* Exact number of matching live docs (for _count). */
extern bool se_search_count(SeSearchRequest *req, SeSearchShard *shards,
							int nshards, int64 *count, SeError *err);

/* Append the ES search response body for res (took in milliseconds). */
extern void se_search_result_to_json(const SeSearchResult *res,
									 SeSearchShard *shards, int64 took_ms,
									 StringInfo out);

/*
 * Append a float32 score as JSON with the fewest digits that read back as
 * the same float ("1.0" for integral values; null for NaN).
 */
extern void se_search_write_float(StringInfo out, float f);

/*
 * Point-in-time scan (scan.c): call fn for every live document of shard
 * matching req's query, in (segment, doc) order, without scoring; fn
 * returns false to stop.  For update/delete-by-query and reindex.
 */
typedef bool (*SeScanFn) (SeSearchShard *shard, int segment, int32 doc, void *arg);
extern bool se_search_scan(SeSearchRequest *req, SeSearchShard *shard,
						   SeScanFn fn, void *arg, SeError *err);

/*
 * _source filtering of one stored document as search hits have it, for
 * get, mget and update (source_filter.c).  spec is a "_source" value
 * (true, false, patterns, {includes, excludes}); NULL is the whole source.
 */
struct SeSourceFilter;
extern struct SeSourceFilter *se_source_filter_parse(const SeJson *spec, SeError *err);
/* false: the request asked for no _source at all */
extern bool se_source_filter_fetches(const struct SeSourceFilter *f);
/* Append src[0..len) filtered by f (NULL: unchanged); false (err) if not JSON. */
extern bool se_source_filter_write(const struct SeSourceFilter *f, const char *src,
								   size_t len, StringInfo out, SeError *err);

#endif							/* SE_SEARCH_H */
