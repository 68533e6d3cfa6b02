/*-------------------------------------------------------------------------
 *
 * search_int.h
 *	  Internals of the search module: the parsed query tree, per-shard
 *	  weights, per-segment scorers and the query/merge/fetch phases.
 *
 * Layers, each built from the one above:
 *   SeQuery   - the ES query DSL parsed into a tree; independent of any
 *               mapping (dsl.c).
 *   SeWeight  - a query bound to one shard: fields resolved through the
 *               mapping, text analyzed, values encoded, BM25 statistics of
 *               the shard computed (weight.c).
 *   SeScorer  - a doc-id iterator over one segment that can score the
 *               current doc (scorer.c, phrase.c).
 * The query phase (execute.c) runs per shard and yields SeShardTopDocs,
 * which the coordinator merges before the fetch phase loads the page.
 * Only SeShardTopDocs crosses a shard boundary, so remote shards can later
 * ship it over the transport.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SEARCH_INT_H
#define SE_SEARCH_INT_H

#include <setjmp.h>

#include "search/search.h"

/* Maximum nesting of compound queries (ES indices.query.bool.max_nested_depth). */
#define SE_QUERY_MAX_DEPTH	100

/* ES's max_expansions of fuzzy queries. */
#define SE_FUZZY_MAX_EXPANSIONS_DEFAULT 50

/* Default for track_total_hits. */
#define SE_TRACK_TOTAL_HITS_DEFAULT 10000
#define SE_TRACK_TOTAL_DISABLED		(-1)
#define SE_TRACK_TOTAL_ACCURATE		PG_INT64_MAX

/* ---------------------------------------------------------------------
 * Parsed query DSL (dsl.c)
 * ---------------------------------------------------------------------
 */
typedef enum SeQueryKind
{
	SE_Q_MATCH_ALL,
	SE_Q_MATCH_NONE,
	SE_Q_MATCH,
	SE_Q_MATCH_PHRASE,
	SE_Q_MULTI_MATCH,
	SE_Q_TERM,
	SE_Q_TERMS,
	SE_Q_RANGE,
	SE_Q_EXISTS,
	SE_Q_IDS,
	SE_Q_PREFIX,
	SE_Q_REGEXP,
	SE_Q_BOOL,
	SE_Q_CONSTANT_SCORE,
	SE_Q_DIS_MAX,
	SE_Q_FUZZY,
	SE_Q_WILDCARD,
	SE_Q_PER_FIELD,				/* inner once per field of fields (query_string) */
	SE_Q_MATCH_BOOL_PREFIX,
	SE_Q_MATCH_PHRASE_PREFIX,
	SE_Q_FUNCTION_SCORE,
	SE_Q_TERMS_SET,
	SE_Q_MORE_LIKE_THIS,		/* rewritten per shard (mlt.c) */
	SE_Q_GEO,					/* geo_distance, geo_bounding_box (geo_query.c) */
	SE_Q_NESTED					/* path in field, query in inner (nested.c) */
} SeQueryKind;

/* geo_distance and geo_bounding_box (geo_query.c) */
typedef enum SeGeoQueryKind
{
	SE_GEO_DISTANCE,
	SE_GEO_BOX
} SeGeoQueryKind;

typedef enum SeGeoValidation
{
	SE_GEO_STRICT,
	SE_GEO_IGNORE_MALFORMED,
	SE_GEO_COERCE
} SeGeoValidation;

typedef struct SeGeoQuery
{
	SeGeoQueryKind kind;
	char	   *field;
	SeGeoValidation validation;
	bool		ignore_unmapped;
	SeGeoPoint	center;			/* DISTANCE */
	double		radius;			/* metres */
	bool		arc;			/* distance_type (no effect on matching) */
	double		top;			/* BOX, degrees */
	double		bottom;
	double		left;
	double		right;
} SeGeoQuery;

/* function_score (function_score.c) */
typedef enum SeScoreFnKind
{
	SE_FN_WEIGHT,				/* the weight alone */
	SE_FN_FIELD_VALUE_FACTOR,
	SE_FN_GAUSS,
	SE_FN_EXP,
	SE_FN_LINEAR,
	SE_FN_RANDOM,
	SE_FN_DISTANCE_FEATURE,		/* the distance_feature query (distance_feature.c) */
	SE_FN_SCRIPT				/* script_score (script_score.c) */
} SeScoreFnKind;

typedef enum SeFvfModifier
{
	SE_FVF_NONE, SE_FVF_LOG, SE_FVF_LOG1P, SE_FVF_LOG2P, SE_FVF_LN, SE_FVF_LN1P,
	SE_FVF_LN2P, SE_FVF_SQUARE, SE_FVF_SQRT, SE_FVF_RECIPROCAL
} SeFvfModifier;

/* ES's score_mode and boost_mode, and multi_value_mode of decays */
typedef enum SeCombine
{
	SE_COMB_MULTIPLY, SE_COMB_SUM, SE_COMB_AVG, SE_COMB_FIRST, SE_COMB_MAX,
	SE_COMB_MIN, SE_COMB_REPLACE
} SeCombine;

typedef struct SeQuery SeQuery;

typedef struct SeScoreFunction
{
	SeScoreFnKind kind;
	SeQuery    *filter;			/* NULL: every doc */
	float		weight;			/* 1 unless given */
	char	   *field;			/* field_value_factor, decays, random_score */
	double		factor;			/* field_value_factor */
	SeFvfModifier modifier;
	bool		has_missing;
	double		missing;
	const SeJson *origin;		/* decays (origin NULL: now, for dates) */
	const SeJson *scale;
	const SeJson *offset;
	double		decay;
	SeCombine	multi_value_mode;	/* MIN, MAX, AVG, SUM */
	bool		has_seed;		/* random_score */
	int64		seed;
	char	   *script;			/* script_score: Painless source */
	const SeJson *script_params;
	bool		script_query;	/* the script_score query, not a function */
} SeScoreFunction;

/* ES "fuzziness": AUTO[:low,high] or a fixed edit distance (fuzzy.c). */
typedef struct SeFuzziness
{
	bool		set;
	bool		is_auto;
	int			low;
	int			high;
	int			edits;
} SeFuzziness;

typedef enum SeMultiMatchType
{
	SE_MM_BEST_FIELDS,
	SE_MM_MOST_FIELDS,
	SE_MM_PHRASE,
	SE_MM_PHRASE_PREFIX,
	SE_MM_BOOL_PREFIX,
	SE_MM_CROSS_FIELDS
} SeMultiMatchType;

struct SeQuery
{
	SeQueryKind kind;
	float		boost;
	char	   *field;			/* single-field queries */
	const SeJson *value;		/* match text, term value, prefix value */

	/* match, match_phrase, multi_match */
	bool		op_and;
	char	   *msm;			/* minimum_should_match spec or NULL */
	char	   *analyzer;		/* analyzer override or NULL */
	bool		zero_terms_all;
	int			slop;

	/* multi_match */
	int			nfields;
	char	  **fields;
	float	   *field_boosts;
	SeMultiMatchType mm_type;
	float		tie_breaker;

	/* term, prefix, regexp */
	bool		case_insensitive;
	int			re_flags;		/* regexp: SE_RE_* */

	/* terms, ids */
	int			nvalues;
	const SeJson **values;

	/* range */
	const SeJson *lower;
	const SeJson *upper;
	bool		include_lower;
	bool		include_upper;
	char	   *format;
	char	   *time_zone;		/* dates without a zone are local there */

	/* bool, dis_max (queries in should), constant_score (filter in inner) */
	int			nmust;
	int			nshould;
	int			nfilter;
	int			nmust_not;
	SeQuery   **must;
	SeQuery   **should;
	SeQuery   **filter;
	SeQuery   **must_not;
	SeQuery    *inner;

	/* fuzzy, and match/multi_match with fuzziness */
	SeFuzziness fuzziness;
	int			prefix_length;
	int			max_expansions;
	bool		transpositions;

	/*
	 * Terms written in query_string syntax (wildcard, prefix, fuzzy) are
	 * lowercased on text fields, as ES normalizes them with the field's
	 * analyzer; lenient: a field of the wrong type matches nothing.
	 */
	bool		normalize;
	bool		lenient;

	/* function_score (query in inner) */
	int			nfunctions;
	SeScoreFunction *functions;
	SeCombine	score_mode;
	SeCombine	boost_mode;
	float		max_boost;
	bool		has_min_score;
	float		min_score;

	/* terms_set (terms in values) */
	char	   *msm_field;
	char	   *msm_script;
	const SeJson *msm_script_params;	/* the script's own params, or NULL */

	/* more_like_this */
	struct SeMlt *mlt;

	/* geo_distance, geo_bounding_box */
	SeGeoQuery *geo;
};

/* Parse one query object ({"match":{..}}); depth counts enclosing queries. */
extern SeQuery *se_query_parse(const SeJson *v, int depth, SeError *err);

/* An empty query node of kind with ES's defaults (dsl.c). */
extern SeQuery *se_query_new(SeQueryKind kind);
/* true/false or "true"/"false" (dsl.c) */
extern bool se_query_json_bool(const SeJson *v, bool *out);
/* query_string (simple: simple_query_string) body (query_string.c) */
extern SeQuery *se_query_string_parse(const SeJson *body, bool simple,
									  SeError *err);

/* ES Queries.calculateMinShouldMatch; -1 with err set on a bad spec. */
extern int	se_query_min_should_match(int optional_clauses, const char *spec,
									  SeError *err);

/* ---------------------------------------------------------------------
 * Search request (request.c)
 * ---------------------------------------------------------------------
 */
typedef enum SeSortKind
{
	SE_SORT_SCORE,
	SE_SORT_DOC,
	SE_SORT_FIELD,
	SE_SORT_SHARD_DOC			/* _shard_doc: (shard index << 32) | doc */
} SeSortKind;

typedef enum SeSortMissing
{
	SE_MISSING_LAST,
	SE_MISSING_FIRST,
	SE_MISSING_VALUE
} SeSortMissing;

typedef enum SeSortMode
{
	SE_SORT_MODE_DEFAULT,		/* min for asc, max for desc */
	SE_SORT_MODE_MIN,
	SE_SORT_MODE_MAX
} SeSortMode;

typedef struct SeSortSpec
{
	SeSortKind	kind;
	char	   *field;
	bool		desc;
	SeSortMissing missing;
	const SeJson *missing_value;
	SeSortMode	mode;
	char	   *unmapped_type;
	char	   *numeric_type;	/* long, double, date, date_nanos; NULL: none */
	struct SeGeoSort *geo;		/* _geo_distance (field is its geo_point) */
	char	   *nested_path;	/* "nested": {"path"}: values of nested docs */
	SeQuery    *nested_filter;	/* "nested": {"filter"}, or NULL */
} SeSortSpec;

/* The _geo_distance sort (geo_query.c) */
typedef enum SeGeoSortMode
{
	SE_GEO_SORT_MIN, SE_GEO_SORT_MAX, SE_GEO_SORT_AVG, SE_GEO_SORT_MEDIAN
} SeGeoSortMode;

typedef struct SeGeoSort
{
	int			npoints;
	SeGeoPoint *points;
	double		unit;			/* metres per unit */
	bool		arc;			/* distance_type arc (else plane) */
	bool		mode_set;
	SeGeoSortMode mode;			/* else min for asc, max for desc */
	bool		ignore_unmapped;
	SeGeoValidation validation;
} SeGeoSort;

/* {"_geo_distance": {..}} of a sort into s. */
extern bool se_geo_sort_parse(const SeJson *body, SeSortSpec *s, SeError *err);
/* A doc's sort value (in the unit) of its points vals[0..n), n > 0. */
extern double se_geo_sort_value(const SeGeoSort *g, bool desc, const int64 *vals, int n);

/* A query rescorer (ES's QueryRescorerBuilder). */
typedef enum SeRescoreMode
{
	SE_RESCORE_TOTAL, SE_RESCORE_MULTIPLY, SE_RESCORE_AVG, SE_RESCORE_MAX,
	SE_RESCORE_MIN
} SeRescoreMode;

typedef struct SeRescore
{
	int			window_size;
	SeQuery    *query;
	float		query_weight;
	float		rescore_query_weight;
	SeRescoreMode mode;
} SeRescore;

typedef struct SeIndexBoost
{
	char	   *index;			/* name or wildcard pattern */
	float		boost;
} SeIndexBoost;

/* The indices_boost factor of the shard's index (1 when none names it). */
extern float se_search_index_boost(const struct SeSearchRequest *req, const char *index);

typedef struct SeSourceFilter
{
	bool		fetch;
	int			ninclude;
	char	  **include;
	int			nexclude;
	char	  **exclude;
} SeSourceFilter;

struct SeSearchRequest
{
	SeQuery    *query;
	int			from;
	int			size;
	int			max_result_window;
	SeSearchLimits limits;		/* the other index.max_* (defaults filled) */
	int			nsort;			/* 0 = by relevance */
	SeSortSpec *sort;
	bool		track_scores;
	int64		track_total_hits;	/* threshold, or DISABLED / ACCURATE */
	bool		has_min_score;
	float		min_score;
	int64		timeout_ms;		/* "timeout"; -1 = none */
	SeSourceFilter source;
	bool		seq_no_primary_term;	/* hits carry _seq_no, _primary_term */
	bool		typed_keys;		/* aggregation names as type#name (URL) */
	const SeDfsStats *dfs;		/* global statistics (DFS), or NULL */
	struct SeAggs *aggs;		/* "aggs" (aggs.c), or NULL */

	/* deep pagination (search_after, point in time, slice) */
	const SeJson *search_after; /* array of sort values, or NULL */
	char	   *pit_id;			/* "pit": {"id"}, or NULL */
	int64		pit_keep_alive_ms;	/* "pit": {"keep_alive"}; -1 = none */
	int			nsort_user;		/* sort keys the body gave (before _shard_doc) */
	int			nsort_visible;	/* sort values shown on hits; -1 = all */
	int			slice_id;		/* "slice": {"id", "max"}; max 0 = none */
	int			slice_max;

	/* request options */
	bool		version;		/* hits carry _version */
	SeQuery    *post_filter;	/* filters hits after the query (not aggregations) */
	int64		terminate_after;	/* per shard: stop after this many hits; 0 = none */
	struct SeHighlight *highlight;	/* "highlight", or NULL */
	int			nrescore;		/* "rescore": query rescorers, in order */
	struct SeRescore *rescore;
	int			nindices_boost; /* "indices_boost": per index score factors */
	struct SeIndexBoost *indices_boost;
	struct SeFetchFields *fetch_fields; /* docvalue_fields / fields, or NULL */
	bool		stored_fields_none; /* stored_fields "_none_": hits without _id */
	bool		explain;		/* hits carry their score's explanation */
	struct SeCollapse *collapse;	/* "collapse", or NULL */
};

extern bool se_search_check_window(const SeSearchRequest *req, SeError *err);
/* A "_source" value (true, false, patterns, includes/excludes) into f. */
extern bool se_search_parse_source_filter(const SeJson *v, SeSourceFilter *f, SeError *err);

/*
 * Sorting and aggregations read doc values: a text field (no fielddata) or
 * a field without doc values fails with ES's illegal_argument_exception.
 */
extern bool se_search_check_doc_values(const SeMappedField *f, const char *index,
									   SeError *err);

/* ---------------------------------------------------------------------
 * BM25 (bm25.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeBM25
{
	float		weight;			/* boost * idf */
	float		cache[256];		/* 1 / (k1 * ((1 - b) + b * len / avgdl)) */
	/* what explain shows (explain.c) */
	float		boost;
	float		idf;
	float		avgdl;
	int64		doc_freq;		/* n (a single term's) */
	int64		doc_count;		/* N */
} SeBM25;

#define SE_BM25_K1		1.2f
#define SE_BM25_B		0.75f

extern float se_bm25_idf(int64 doc_freq, int64 doc_count);
extern float se_bm25_avgdl(int64 sum_total_term_freq, int64 doc_count);
extern void se_bm25_init(SeBM25 *sim, float boost, float idf, float avgdl);

static inline float
se_bm25_score(const SeBM25 *sim, float freq, uint8 norm)
{
	float		ninv = sim->cache[norm];
	float		denom = 1.0f + freq * ninv;

	return sim->weight - sim->weight / denom;
}

/* ---------------------------------------------------------------------
 * Weights: a query bound to one shard (weight.c)
 * ---------------------------------------------------------------------
 */
typedef enum SeWeightKind
{
	SE_W_NONE,					/* matches nothing */
	SE_W_ALL,					/* every doc, constant score */
	SE_W_TERM,					/* one term, BM25 or constant */
	SE_W_PHRASE,				/* exact or sloppy phrase, BM25 */
	SE_W_BOOL,
	SE_W_DISMAX,
	SE_W_CONST,					/* inner matches, constant score */
	SE_W_DOCSET,				/* set of terms / term range / exists */
	SE_W_FUNCTION,				/* function_score */
	SE_W_TERMS_SET,				/* terms_set: at least a per-doc count of terms */
	SE_W_NESTED					/* children of path (field) joined to parents */
} SeWeightKind;

/* One function of a function_score bound to the shard (weight.c). */
typedef struct SeFnWeight
{
	SeScoreFnKind kind;
	struct SeWeight *filter;	/* NULL: every doc */
	float		weight;
	char	   *field;			/* NULL: none (random_score on doc ids) */
	bool		is_double;		/* field's sortable int64s are doubles */
	double		factor;
	SeFvfModifier modifier;
	bool		has_missing;
	double		missing;
	double		origin;			/* decays, in the field's units (dates: ms) */
	double		scale;
	double		offset;
	double		decay;
	SeCombine	multi_value_mode;
	int64		seed;
	struct SeScriptBinding *script; /* script_score, bound to the shard */
	bool		geo;			/* distance_feature on a geo_point: */
	double		origin_lat;		/* origin, and the pivot in scale (metres) */
	double		origin_lon;
} SeFnWeight;

typedef enum SeDocSetKind
{
	SE_DS_TERMS,				/* exact terms (terms, ids) */
	SE_DS_RANGE,				/* term byte range */
	SE_DS_PREFIX,
	SE_DS_EXISTS,
	SE_DS_TERM_CI,				/* case-insensitive term */
	SE_DS_PREFIX_CI,			/* case-insensitive prefix */
	SE_DS_REGEXP,
	SE_DS_GEO					/* points in a geo query's shape (geo) */
} SeDocSetKind;

/* Term located in one segment (found == false: absent there). */
typedef struct SeSegTerm
{
	bool		found;
	SeTermInfo	ti;
} SeSegTerm;

typedef struct SeWeight SeWeight;

struct SeWeight
{
	SeWeightKind kind;
	bool		scoring;		/* scores are needed from this weight */
	float		const_score;	/* ALL, CONST, DOCSET, constant TERM */
	float		max_score;		/* upper bound of any score it yields */
	char	   *field;

	/* TERM (nterms == 1) and PHRASE */
	int64	   *term_dfs;		/* PHRASE: each term's n, for explain */
	int			nterms;
	char	  **terms;
	int		   *term_lens;
	int		   *positions;		/* PHRASE: query positions */
	int			nlast_alts;		/* PHRASE: the last this many terms (> 1) are
								 * alternatives at one position, their postings
								 * one union (Lucene's MultiPhraseQuery) */
	SeSegTerm **seg_terms;		/* [term][segment] */
	bool		bm25;			/* TERM: BM25 rather than const_score */
	SeBM25	   *sim;
	int			slop;

	/* BOOL */
	int			nmust;
	int			nshould;
	int			nfilter;
	int			nmust_not;
	SeWeight  **must;
	SeWeight  **should;
	SeWeight  **filter;
	SeWeight  **must_not;
	int			msm;

	/* DISMAX (subs in should) */
	float		tie_breaker;

	/* CONST */
	SeWeight   *inner;

	/* DOCSET */
	SeDocSetKind ds_kind;
	bool		lower_inclusive;
	bool		upper_inclusive;
	char	   *lower;			/* RANGE bounds (NULL = open), PREFIX value */
	int			lower_len;
	char	   *upper;
	int			upper_len;
	/* RANGE on a numeric or date field: the sortable bounds, inclusive */
	bool		numeric;
	int64		num_lo;
	int64		num_hi;
	/* EXISTS on an object: the leaf fields below it */
	int			nexist_fields;
	char	  **exist_fields;
	/* REGEXP: the expression (lower = its literal prefix) */
	struct SeRegex *regex;

	/* FUNCTION: function_score over inner */
	int			nfns;
	struct SeFnWeight *fns;
	SeCombine	score_mode;
	SeCombine	boost_mode;
	float		max_boost;
	bool		has_min_score;
	float		min_score;
	float		fn_boost;

	/* TERMS_SET: the term weights in should, the count per doc from msm_field */
	char	   *msm_field;
	int			msm_const;		/* when no field: from the script's params */
	struct SeScriptBinding *msm_script; /* else a script over doc values */

	/* DOCSET GEO: the bound query */
	SeGeoQuery *geo;
	/* NESTED: inner over the docs of path field; score_mode combines them */
	char	   *nested_parent;	/* the enclosing nested path; NULL: the root */
	const SeSearchShard *nested_shard;	/* its all_live_docs */
};

/*
 * Build the weight tree of q for one shard; NULL with err on failure.
 * BM25 weights score with global's statistics where it has them (the DFS
 * phase's sums), else with the shard's; collect, when not NULL, records
 * the shard's statistics of every scoring term and its field (dfs.c).
 */
extern SeWeight *se_weight_build(const SeQuery *q, SeSearchShard *shard,
								 bool scoring, const SeDfsStats *global,
								 SeDfsStats *collect, SeError *err);
/* The same with every score multiplied by boost (indices_boost). */
extern SeWeight *se_weight_build_boosted(const SeQuery *q, SeSearchShard *shard,
										 bool scoring, const SeDfsStats *global,
										 float boost, SeError *err);

/* ---------------------------------------------------------------------
 * DFS statistics (dfs.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeDfsTerm
{
	char	   *field;
	char	   *term;			/* bytes (numeric terms may hold NULs) */
	int			len;
	int64		doc_freq;
	int64		total_term_freq;
} SeDfsTerm;

typedef struct SeDfsField
{
	char	   *field;
	SeFieldStats stats;			/* doc_count, sum_total_term_freq, sum_doc_freq */
} SeDfsField;

/* Sorted by (field, term) and unique once finished or added. */
struct SeDfsStats
{
	int64		max_doc;
	int			nterms;
	int			terms_cap;
	SeDfsTerm  *terms;
	int			nfields;
	int			fields_cap;
	SeDfsField *fields;
};

extern void se_dfs_record_term(SeDfsStats *s, const char *field, const char *term,
							   int len, int64 doc_freq, int64 total_term_freq);
extern void se_dfs_record_field(SeDfsStats *s, const char *field,
								const SeFieldStats *st);
extern void se_dfs_stats_finish_shard(SeDfsStats *s);
extern const SeDfsTerm *se_dfs_find_term(const SeDfsStats *s, const char *field,
										 const char *term, int len);
extern const SeDfsField *se_dfs_find_field(const SeDfsStats *s, const char *field);

/* ---------------------------------------------------------------------
 * Scorers: per-segment doc iterators (scorer.c, phrase.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeScorer SeScorer;

/*
 * A scorer iterates the docs its weight matches in one segment.  The last
 * three members are optional (zero/NULL when unsupported) and serve top-k
 * retrieval that skips what cannot be competitive:
 *
 *   max_score_upto(s, target, &upto) returns a bound of score() for every
 *     doc in [target, upto] (upto >= target, SE_NO_MORE_DOCS for "all the
 *     rest"), from block impacts, without moving the scorer; max_score
 *     bounds score() on the whole segment.  Both are set together.
 *   max_score_group(s, target, &upto): the same over a wider window (the
 *     postings' skip groups of 32 blocks), so that skipping can pass over
 *     4096 docs at once; NULL when the scorer has none (callers then use
 *     max_score_upto).
 *   set_min_score(s, min): from now on the scorer may skip docs whose
 *     score is <= min (a later doc that only ties the k-th best cannot
 *     enter the top k).  min only grows.  Returned docs are scored
 *     exactly as without it; only which docs are returned changes.
 */
struct SeScorer
{
	int32		doc;			/* -1 before the first next */
	int64		cost;
	int32		(*next) (SeScorer *s);
	int32		(*advance) (SeScorer *s, int32 target);
	float		(*score) (SeScorer *s);
	void		(*close) (SeScorer *s);
	float		max_score;
	float		(*max_score_upto) (SeScorer *s, int32 target, int32 *upto);
	float		(*max_score_group) (SeScorer *s, int32 target, int32 *upto);
	void		(*set_min_score) (SeScorer *s, float min);
};

typedef struct SeSegmentCtx
{
	SeSegmentReader *reader;
	int			ord;			/* segment index within the shard */
	int32		max_doc;
} SeSegmentCtx;

/*
 * A scorer over inner's docs that accept takes (exclusions, function_score's
 * min_score): next and advance move inner until accept says yes.  Embed
 * it first in the scorer's struct; score and close are the embedder's.
 */
typedef struct SeFilteredScorer SeFilteredScorer;
struct SeFilteredScorer
{
	SeScorer	base;
	SeScorer   *inner;
	bool		(*accept) (SeFilteredScorer *f, int32 doc);
};
extern void se_filtered_scorer_init(SeFilteredScorer *f, SeScorer *inner,
									bool (*accept) (SeFilteredScorer *f, int32 doc));

/* function_score and terms_set scorers (function_score.c) */
extern SeScorer *se_function_scorer_create(SeWeight *w, SeSegmentCtx *seg);
extern float se_rescore_combine(SeRescoreMode mode, float primary, float secondary);
extern bool se_explain_rescored(SeSearchRequest *req, SeSearchShard *shard, SeWeight *w,
								SeSegmentCtx *seg, int32 doc, uint32 rescored,
								StringInfo out, bool *matched, SeError *err);
extern bool se_function_score_values(SeWeight *w, SeSegmentCtx *seg, int32 doc,
									 double *values, double *factor);
extern void se_function_decay_text(const SeFnWeight *f, SeSegmentReader *r, int32 doc,
								   StringInfo out);
extern SeScorer *se_terms_set_scorer_create(SeWeight *w, SeSegmentCtx *seg);
extern SeQuery *se_function_score_parse(const SeJson *body, int depth, SeError *err);
extern SeQuery *se_terms_set_parse(const SeJson *body, SeError *err);
/*
 * more_like_this (mlt.c): parsed, then rewritten per shard into the bool
 * of term queries its terms select (NULL with err on failure).
 */
typedef struct SeMlt SeMlt;
extern SeQuery *se_mlt_parse(const SeJson *body, SeError *err);
extern SeQuery *se_mlt_rewrite(const SeQuery *q, SeSearchShard *shard, SeError *err);
/* distance_feature (distance_feature.c) */
extern SeQuery *se_distance_feature_parse(const SeJson *body, SeError *err);
/* pivot as a time value in ms (a JSON string "Nms"), NULL with err */
extern const SeJson *se_distance_feature_time_pivot(const SeJson *v, SeError *err);
/* distance_feature's origin and pivot on a geo_point field (geo_query.c) */
extern bool se_geo_distance_feature_bind(const SeScoreFunction *q, const SeMappedField *f,
										 SeFnWeight *fw, SeError *err);
/* gauss/exp/linear's origin, scale and offset on a geo_point (geo_query.c) */
extern bool se_geo_decay_bind(const SeScoreFunction *q, const SeMappedField *f,
							  SeFnWeight *fw, SeError *err);
extern double se_distance_feature_score(const SeFnWeight *f, SeSegmentReader *r, int field,
										int32 doc);
/* geo queries (geo_query.c) */
extern SeQuery *se_geo_distance_parse(const SeJson *body, SeError *err);
extern SeQuery *se_geo_bounding_box_parse(const SeJson *body, SeError *err);
/* "unit" and "distance_type" (arc / plane) of geo queries, sorts and aggs */
extern bool se_geo_parse_unit(const SeJson *v, double *meters, SeError *err);
extern bool se_geo_parse_distance_type(const SeJson *v, bool *arc, SeError *err);
extern bool se_geo_query_bind(SeGeoQuery *g, const SeMappedField *f, bool *none,
							  SeError *err);
extern bool se_geo_set_bits(const SeGeoQuery *g, SeSegmentReader *r, int f,
							uint64 *bits, int32 max_doc);
extern double se_geo_distance_feature_score(const SeFnWeight *f, SeSegmentReader *r,
											int field, int32 doc);

/* in script_score.c */
typedef struct SeScriptBinding SeScriptBinding;
typedef struct SeScriptLeaf SeScriptLeaf;
extern SeQuery *se_script_score_parse(const SeJson *body, int depth, SeError *err);
extern bool se_script_score_fn_parse(const SeJson *v, SeScoreFunction *fn,
									 SeError *err);
extern SeScriptBinding *se_script_bind(const SeScoreFunction *fq,
									   const SeSearchShard *shard, SeError *err);
extern SeScriptLeaf *se_script_leaf_open(SeScriptBinding *b, SeSegmentReader *r);
extern float se_script_leaf_score(SeScriptLeaf *l, int32 doc, float qscore);
/* terms_set: the script's number for doc; false after se_search_fail. */
extern bool se_script_leaf_number(SeScriptLeaf *l, int32 doc, int64 *out);
/* terms_set's minimum_should_match_script with params.num_terms = nterms */
extern SeScriptBinding *se_script_bind_msm(const SeQuery *q, int nterms,
										   const SeSearchShard *shard, SeError *err);
extern const char *se_script_binding_source(const SeScriptBinding *b);
/* A "script" of ctx (script_fields, ...) into fn; compiled to check it. */
extern bool se_script_spec_parse(const char *ctx, const SeJson *v, SeScoreFunction *fn,
								 SeError *err);
/* script_fields: fn's script on doc, its JSON values comma-joined into out. */
extern bool se_script_field_values(const SeScoreFunction *fn, const SeMapping *m,
								   const char *index, SeSegmentReader *r, int32 doc,
								   StringInfo out, SeError *err);
extern bool se_script_binding_is_query(const SeScriptBinding *b);

/* Scorer of w over one segment, or NULL when nothing can match there. */
extern SeScorer *se_scorer_create(SeWeight *w, SeSegmentCtx *seg);
extern void se_scorer_free(SeScorer *s);

/* in nested.c */
extern SeQuery *se_nested_query_parse(const SeJson *body, int depth, SeError *err);
extern SeScorer *se_nested_scorer_create(SeWeight *w, SeSegmentCtx *seg);
extern int	se_nested_children(SeWeight *w, SeSegmentCtx *seg, int32 parent,
							   int32 *first, int32 *last, int32 *best);
extern const uint64 *se_nested_path_bits(SeSegmentReader *r, const char *path);
/* the hit's "inner_hits" object of its nested queries (NULL: none) */
extern bool se_nested_inner_hits(SeSearchRequest *req, SeSearchShard *shard, int segment,
								 int32 doc, char **inner_hits, SeError *err);

/* in phrase.c */
extern SeScorer *se_phrase_scorer_create(SeWeight *w, SeSegmentCtx *seg);
/* The phrase frequency of the doc the scorer is on (explain). */
extern float se_phrase_scorer_freq(SeScorer *s);

/* ---------------------------------------------------------------------
 * Explanations of scores (explain.c)
 * ---------------------------------------------------------------------
 */
/*
 * Append Lucene's explanation of w's score for doc of segment seg (ES's
 * "_explanation" object), its value the score the scorers give; *matched
 * says whether w matches the doc at all.
 */
extern void se_explain_weight(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out,
							  bool *matched);

/* ---------------------------------------------------------------------
 * Interrupt checks and the timeout (interrupt.c)
 * ---------------------------------------------------------------------
 */
#define SE_SEARCH_CHECK_INTERVAL 1024

extern int32 se_search_budget;
extern void se_search_check(void);

/*
 * Count units of work (a doc, a term, a position, about 10-100 ns each);
 * every SE_SEARCH_CHECK_INTERVAL units se_search_check runs the interrupt
 * hook and the timeout.  Never between taking a doc and collecting it.
 */
#define SE_SEARCH_TICK(units) \
	do { \
		if (unlikely((se_search_budget -= (units)) <= 0)) \
			se_search_check(); \
	} while (0)

typedef enum SeSearchStopReason
{
	SE_STOP_NONE,
	SE_STOP_TIMED_OUT,
	SE_STOP_ABANDONED,			/* the interrupt hook said stop */
	SE_STOP_FAILED				/* se_search_fail: error in stop->error */
} SeSearchStopReason;

/*
 * A query phase's landing point: arm it (timeout_ms < 0: none), then
 * setjmp(stop->jb); a stop longjmps there with reason set.  Disarm before
 * returning.  One at a time; it must not outlive the setjmp's frame.
 */
typedef struct SeSearchStop
{
	jmp_buf		jb;
	int64		deadline_us;	/* 0 = no timeout */
	SeSearchStopReason reason;
	SeError		error;			/* SE_STOP_FAILED */
} SeSearchStop;

extern void se_search_stop_arm(SeSearchStop *stop, int64 timeout_ms);
extern void se_search_stop_disarm(void);

/*
 * A scorer's error with no way back (a script's): leave through the armed
 * landing point as SE_STOP_FAILED.  With none armed (explain), the error
 * is kept for se_search_take_failure and the caller goes on.
 */
extern void se_search_fail(const SeError *e);
extern bool se_search_take_failure(SeError *err);

/* ---------------------------------------------------------------------
 * Query phase, merge and fetch (execute.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeSortValue
{
	bool		missing;
	int64		num;			/* numeric/date sortable int64, or doc */
	float		score;
	char	   *bytes;			/* keyword value (owned) */
	int			len;
	int			cap;
} SeSortValue;

typedef struct SeTopDoc
{
	float		score;			/* NaN when not scored */
	int			shard_idx;
	int32		seg;
	int32		doc;
	SeSortValue *keys;			/* nkeys values when sorting by fields */
	uint32		rescored;		/* bit i: in rescorer i's window (explain) */
} SeTopDoc;

/* The result of the query phase on one shard. */
typedef struct SeShardTopDocs
{
	int			shard_idx;
	int64		total;
	bool		total_is_lower_bound;
	float		max_score;		/* NaN if none */
	int			ndocs;			/* in rank order */
	SeTopDoc   *docs;
	bool		timed_out;		/* stopped at the timeout: partial */
	bool		terminated_early;	/* stopped at terminate_after */
	bool		failed;
	SeError		error;
	/* aggregations: the shard's partial, or (decoded) its bytes */
	struct SeAggPartial *aggs;
	const char *aggs_msg;
	int			aggs_len;
} SeShardTopDocs;

/* Resolved sort key for one shard. */
typedef enum SeSortKeyType
{
	SE_KEY_SCORE,
	SE_KEY_DOC,
	SE_KEY_NUMERIC,
	SE_KEY_BYTES,
	SE_KEY_SHARD_DOC
} SeSortKeyType;

typedef struct SeSortKey
{
	SeSortKeyType type;
	bool		desc;
	SeSortMissing missing;
	bool		use_max;		/* min or max of multi-valued docs */
	const SeMappedField *mfield;	/* NULL when unmapped */
	SeFieldType ftype;
	const char *field;
	int64		missing_num;
	char	   *missing_bytes;
	int			missing_len;
	int			cast;			/* SE_SORT_CAST_*: numeric_type's conversion */
	const SeGeoSort *geo;		/* _geo_distance: doubles computed per doc */
	/*
	 * A nested sort: the min or max over the doc's nested docs of path that
	 * pass the filter; per segment the bitsets and the filter's scorer.
	 */
	const char *nested_path;
	SeWeight   *nested_filter;
	const uint64 *nested_child;
	const uint64 *nested_roots;
	const uint64 *nested_live;
	SeScorer   *nested_scorer;
} SeSortKey;

/* numeric_type: how a shard's doc values become the asked type's */
#define SE_SORT_CAST_NONE		0
#define SE_SORT_CAST_TO_DOUBLE	1	/* an integer value as a double */
#define SE_SORT_CAST_TO_LONG	2	/* a double truncated to a long */
#define SE_SORT_CAST_MS_TO_NS	3	/* date millis as date_nanos */

/*
 * Docs the query phase has taken from scorers since the process started
 * (deleted ones included); tests and benchmarks read it to see how much
 * top-k skipping saved.
 */
extern int64 se_search_stat_docs;
/* Skip groups passed over by top-k scorers (also for tests). */
extern int64 se_search_stat_group_skips;

/* Run the query phase on one shard (keeps top from + size). */
extern bool se_search_query_shard(SeSearchRequest *req, SeSearchShard *shard,
								  int shard_idx, int ntop, bool count_only,
								  SeShardTopDocs *out, SeError *err);

/* ---------------------------------------------------------------------
 * The query phase as a message (shard_wire.c)
 * ---------------------------------------------------------------------
 */
typedef enum SeWireResult
{
	SE_WIRE_OK,					/* top docs decoded */
	SE_WIRE_ERROR,				/* the shard's query phase failed: err set */
	SE_WIRE_MALFORMED			/* not an answer; run the shard here */
} SeWireResult;

extern SeWireResult se_search_decode_query_phase(const char *data, size_t len,
												 int shard_idx, int nsegments,
												 int nkeys, SeShardTopDocs *out,
												 SeError *err);

/* ---------------------------------------------------------------------
 * Field collapsing (collapse.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeInnerHits
{
	char	   *name;
	int			from;
	int			size;
	const SeJson *spec;			/* the definition, for its fetch options */
} SeInnerHits;

typedef struct SeCollapse
{
	char	   *field;
	int			ninner;
	SeInnerHits *inner;
	int			max_concurrent; /* accepted; group searches run one by one */
} SeCollapse;

extern SeCollapse *se_collapse_parse(const SeJson *v, SeError *err);
extern bool se_collapse_check_request(const SeSearchRequest *req, SeError *err);
extern const SeMappedField *se_collapse_resolve(const SeCollapse *c,
												const SeSearchShard *shard, SeError *err);
extern bool se_collapse_doc_value(const SeMappedField *f, SeSegmentReader *r, int field,
								  int32 doc, SeSortValue *out, SeError *err);
extern void se_sort_value_copy(SeSortValue *dst, const SeSortValue *src);
extern int	se_collapse_dedupe(SeTopDoc *docs, int ndocs, int gkey);
extern char *se_collapse_value_json(const SeMappedField *f, const SeSortValue *v);
extern void se_collapse_hit_fields(const SeCollapse *c, SeHit *hit);

/* Entry ids by group value (the shard's heap slots, the merge's docs). */
typedef struct SeGroupSet SeGroupSet;
extern SeGroupSet *se_group_set_create(int capacity);
extern int	se_group_set_find(const SeGroupSet *s, const SeSortValue *v);
extern void se_group_set_add(SeGroupSet *s, int id, const SeSortValue *v);
extern void se_group_set_remove(SeGroupSet *s, int id);

/* ---------------------------------------------------------------------
 * _source filtering (source_filter.c)
 * ---------------------------------------------------------------------
 */
extern bool se_source_filter_active(const SeSourceFilter *f);
/* Filter src[0..len) into out; false (err set) when src is not JSON. */
extern bool se_source_filter_apply(const SeSourceFilter *f, const char *src,
								   size_t len, StringInfo out, SeError *err);
/* Glob match with '*' wildcards (whole string). */
extern bool se_glob_match(const char *pat, const char *s, int slen);

/* ---------------------------------------------------------------------
 * A hit's "fields": docvalue_fields and fields (fields.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeFetchFields SeFetchFields;
/* Add the "docvalue_fields", "script_fields" or "fields" v (key says which) to *ff. */
extern bool se_fetch_fields_parse(const char *key, const SeJson *v, SeFetchFields **ff,
								  SeError *err);
/* Append the hit's "fields" object for doc (nothing when no field has values). */
extern bool se_fetch_fields_doc(const SeFetchFields *ff, const SeMapping *m, const char *index,
								SeSegmentReader *r, int32 doc, StringInfo out, SeError *err);

/* ---------------------------------------------------------------------
 * Highlighting (highlight.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeHighlight SeHighlight;
extern SeHighlight *se_highlight_parse(const SeJson *v, SeError *err);
/*
 * Append the hit's "highlight" object for source (its whole _source) to
 * out, nothing when no field has a fragment; false (err) if source is not
 * JSON.
 */
extern bool se_highlight_doc(const SeHighlight *h, const SeQuery *query,
							 const SeSearchShard *shard, int32 doc,
							 const char *source, int len, StringInfo out, SeError *err);

/* ---------------------------------------------------------------------
 * Regular expressions for the regexp query (regexp.c)
 * ---------------------------------------------------------------------
 */
/* ES's regexp "flags" (Lucene's RegExp syntax flags); ALL is the default. */
#define SE_RE_INTERSECTION	0x01	/* & */
#define SE_RE_COMPLEMENT	0x02	/* ~ */
#define SE_RE_EMPTY			0x04	/* # */
#define SE_RE_ANYSTRING		0x08	/* @ */
#define SE_RE_INTERVAL		0x20	/* <n-m> */
#define SE_RE_ALL			0xff

typedef struct SeRegex SeRegex;

/* Parse; NULL with err set (query_shard_exception, Lucene's wording). */
extern SeRegex *se_regex_parse(const char *pattern, int len, int flags,
							   bool case_insensitive, SeError *err);
/* The literal text every matching term starts with (may be empty). */
extern const char *se_regex_prefix(const SeRegex *re, int *len);
/* Does the whole term (UTF-8) match?  Counts its work for interrupts. */
extern bool se_regex_match(SeRegex *re, const char *term, int len);
/* A wildcard pattern (* ? and \ escapes) as the regexp it stands for. */
extern void se_wildcard_to_regex(const char *s, int len, StringInfo re);
/* ES's "flags" string: ALL, NONE or names joined by '|'. */
extern bool se_regex_flags_parse(const char *s, int *flags, SeError *err);

/* ---------------------------------------------------------------------
 * Levenshtein automata for fuzzy queries (fuzzy.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeFuzzy SeFuzzy;
typedef void (*SeFuzzyTermFn) (void *arg, const char *term, int len,
							   const SeTermInfo *ti, int edits);

/* Terms within max_edits of term whose first prefix_length code points match. */
extern SeFuzzy *se_fuzzy_create(const char *term, int len, int max_edits,
								int prefix_length, bool transpositions);
extern void se_fuzzy_free(SeFuzzy *a);
/* Edits from the query term to term, or -1 when not accepted. */
extern int	se_fuzzy_distance(SeFuzzy *a, const char *term, int len);
/* Call fn for every accepted term of field in r; returns the terms visited. */
extern int64 se_fuzzy_walk(SeFuzzy *a, SeSegmentReader *r, int field,
						   SeFuzzyTermFn fn, void *arg);
extern int	se_fuzzy_term_cps(const SeFuzzy *a);
extern float se_fuzzy_similarity(const SeFuzzy *a, const char *term, int len,
								 int edits);
extern bool se_fuzziness_parse(const SeJson *v, SeFuzziness *f, SeError *err);
extern int	se_fuzziness_edits(const SeFuzziness *f, const char *term, int len);

/* DecimalFormat subset for numeric "format"s (decimal_format.c) */
extern bool se_decimal_format_valid(const char *pattern);
extern void se_decimal_format(const char *pattern, double v, StringInfo out);

/* ---------------------------------------------------------------------
 * Time zones (timezone.c)
 * ---------------------------------------------------------------------
 */
typedef struct SeTimeZone
{
	const char *name;			/* as given */
	int64		fixed_ms;		/* a fixed offset (tz == NULL) */
	struct pg_tz *tz;			/* a tz database zone, or NULL */
} SeTimeZone;

/* "+01:00", "UTC", "Europe/Berlin"; false with ES's error when unknown */
extern bool se_tz_parse(const char *s, SeTimeZone *out, SeError *err);
extern int64 se_tz_offset(const SeTimeZone *tz, int64 utc_ms);
extern int64 se_tz_to_local(const SeTimeZone *tz, int64 utc_ms);
extern int64 se_tz_local_to_utc(const SeTimeZone *tz, int64 local_ms);
extern bool se_tz_is_utc(const SeTimeZone *tz);
extern void se_tz_format(const SeTimeZone *tz, int64 utc_ms, StringInfo out);
extern bool se_tz_date_has_zone(const char *s, int len);

/* ---------------------------------------------------------------------
 * Date math for range queries (datemath.c)
 * ---------------------------------------------------------------------
 */
/*
 * Parse an ES date-math expression ("now-1d/d", "2020-01-01||+1M") or a
 * plain date in format; round_up selects the upper end of rounding and of
 * missing time components (used for gt and lte).
 */
extern bool se_datemath_parse(const char *s, int len, const char *format,
							  bool round_up, int64 now_millis,
							  int64 *millis, SeError *err);
/*
 * The same in time zone tz (NULL: UTC): a date without its own zone is
 * local time there, and arithmetic and rounding work on local time.
 */
extern bool se_datemath_parse_tz(const char *s, int len, const char *format,
								 bool round_up, int64 now_millis,
								 const SeTimeZone *tz, int64 *millis, SeError *err);

#endif							/* SE_SEARCH_INT_H */
