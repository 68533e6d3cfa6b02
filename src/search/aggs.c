/*-------------------------------------------------------------------------
 *
 * aggs.c
 *	  Aggregations per shard over doc values, and their coordinator reduce.
 *
 * A request's "aggs" parse into a tree of specs.  Each shard binds the
 * tree to its mapping and, for every matching live doc of its query
 * phase, feeds the doc's doc values (numeric: sortable longs; keyword:
 * sorted-set bytes) into states: a metric's state is count/sum/sum of
 * squares/min/max (every metric here is derived from those five, as ES's
 * extended_stats is), a bucket aggregation's state is a list of buckets,
 * each with its doc count and one state per sub-aggregation.  So nesting
 * goes to any depth by the same code.
 *
 * At the end of its query phase a shard cuts each terms state to
 * shard_size buckets (ES's shard-level top terms) and keeps what it cut as
 * sum_other_doc_count and, for count order, the count of its last bucket
 * as its doc_count_error_upper_bound; the coordinator merges the shards'
 * states bucket by key and adds, to each bucket, the error bounds of the
 * shards that did not return it -- ES's InternalTerms.reduce.  Histograms
 * fill empty buckets (min_doc_count 0, extended_bounds) only at the reduce.
 *
 * The states travel between nodes as bytes (varints, double bits) in the
 * query phase message (shard_wire.c); a decoder that sees anything
 * malformed returns NULL and the message counts as no answer.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "common/hashfn.h"

#include "search/aggs.h"
#include "search/hll.h"
#include "search/search_int.h"
#include "util/varint.h"

typedef enum AggType
{
	AT_MIN,
	AT_MAX,
	AT_SUM,
	AT_AVG,
	AT_VALUE_COUNT,
	AT_STATS,
	AT_EXTENDED_STATS,
	AT_CARDINALITY,
	AT_PERCENTILES,
	AT_PERCENTILE_RANKS,
	AT_TOP_HITS,
	AT_TERMS,
	AT_SIGNIFICANT_TERMS,
	AT_HISTOGRAM,
	AT_DATE_HISTOGRAM,
	AT_RANGE,
	AT_DATE_RANGE,
	AT_FILTER,
	AT_FILTERS,
	AT_MISSING,
	AT_COMPOSITE,
	AT_GEO_BOUNDS,				/* geo metrics (their state: see geo_collect) */
	AT_GEO_CENTROID,
	/* pipelines: computed at the reduce from other aggregations' results */
	AT_CUMULATIVE_SUM,
	AT_DERIVATIVE,
	AT_BUCKET_SORT,
	AT_AVG_BUCKET,
	AT_MAX_BUCKET,
	AT_MIN_BUCKET,
	AT_SUM_BUCKET
} AggType;

static const char *const type_names[] = {
	"min", "max", "sum", "avg", "value_count", "stats", "extended_stats",
	"cardinality", "percentiles", "percentile_ranks", "top_hits", "terms", "significant_terms", "histogram", "date_histogram", "range", "date_range",
	"filter", "filters", "missing", "composite", "geo_bounds", "geo_centroid",
	"cumulative_sum", "derivative", "bucket_sort", "avg_bucket", "max_bucket",
	"min_bucket", "sum_bucket"
};

#define IS_METRIC(t)	((t) <= AT_TOP_HITS || (t) == AT_GEO_BOUNDS || (t) == AT_GEO_CENTROID)

/*
 * Geo aggregations that are others with a geo_point's values: geo_distance
 * is a range over each point's distance to an origin, geohash_grid and
 * geotile_grid terms over each point's cell (SeAggSpec.geo).
 */
#define GEO_NONE		0
#define GEO_DISTANCE	1
#define GEO_HASH_GRID	2
#define GEO_TILE_GRID	3
#define IS_PIPELINE(t)	((t) >= AT_CUMULATIVE_SUM)
#define IS_TERMS(t)		((t) == AT_TERMS || (t) == AT_SIGNIFICANT_TERMS)
#define IS_PARENT_PIPELINE(t)	((t) >= AT_CUMULATIVE_SUM && (t) <= AT_BUCKET_SORT)

/* ES's cardinality defaults and limits */
#define CARD_DEFAULT_THRESHOLD	3000
#define CARD_MAX_THRESHOLD		40000

/* what a state's keys or values are, from the field's type */
typedef enum KeyKind
{
	KK_NONE,					/* field unmapped on that shard: no values */
	KK_STR,
	KK_LONG,
	KK_DOUBLE,
	KK_DATE,
	KK_BOOL
} KeyKind;

typedef enum OrderBy
{
	ORD_COUNT,
	ORD_KEY,
	ORD_SUB
} OrderBy;

typedef struct AggOrder
{
	OrderBy		by;
	bool		desc;
	int			sub;			/* ORD_SUB: index of the sub-aggregation */
	char	   *metric;			/* ORD_SUB: "avg" of "stats.avg", or NULL */
} AggOrder;

/* significant_terms' significance heuristics (ES's names) */
typedef enum SigHeuristic
{
	SIG_JLH,
	SIG_CHI_SQUARE,
	SIG_GND,
	SIG_MUTUAL_INFORMATION,
	SIG_PERCENTAGE
} SigHeuristic;

static const char *const sig_names[] = {
	"jlh", "chi_square", "gnd", "mutual_information", "percentage"
};

/* top_hits: one key of its "sort" (field NULL: _score, or _doc) */
typedef struct ThSortKey
{
	char	   *field;
	bool		is_doc;
	bool		desc;
	/* bound to the shard, then the segment */
	const SeMappedField *mf;
	KeyKind		kind;
	int			fieldno;
} ThSortKey;

/* a top_hits doc's value of one sort key */
typedef struct ThValue
{
	bool		missing;
	double		num;			/* numbers, dates (ms), booleans, _score, _doc */
	char	   *str;			/* keywords (not NUL-terminated) */
	int			len;
} ThValue;

typedef struct AggRange
{
	char	   *key;			/* NULL: "from-to" */
	bool		has_from;
	bool		has_to;
	double		from;
	double		to;
	const SeJson *from_v;		/* date_range: the bounds as given */
	const SeJson *to_v;
} AggRange;

struct SeAggSpec
{
	char	   *name;
	AggType		type;
	char	   *field;
	const SeJson *missing;		/* "missing" value, or NULL */
	double		sigma;			/* extended_stats */
	bool		exact_sum;		/* stats, sum: "exact_sum" (engine-private, FDW) */
	int64		precision_threshold;	/* cardinality */
	int			npercents;		/* percentiles: percents; ranks: values */
	double	   *percents;
	double		compression;	/* t-digest */
	SeSourceFilter source;		/* top_hits: _source */
	bool		sort_by_field;	/* top_hits: sorted by thsort, not _score */
	int			nthsort;
	ThSortKey  *thsort;
	ThValue    *thscratch;		/* the values of the doc being collected */

	/* terms */
	int			size;
	int			shard_size;
	int64		min_doc_count;
	int			norder;
	AggOrder   *order;
	bool		show_error;
	const SeJson *include;		/* array of values, or a regex string */
	const SeJson *exclude;
	SeRegex    *include_re;
	SeRegex    *exclude_re;

	/* significant_terms */
	SigHeuristic sig;
	bool		sig_negatives;	/* include_negatives */
	bool		sig_superset;	/* background_is_superset */

	/* histogram, date_histogram */
	double		interval;		/* histogram; date fixed interval in ms */
	char		cal_unit;		/* date calendar: m h d w M q y; 0 = fixed */
	double		offset;
	SeTimeZone	tz;				/* time_zone (timezone.c); UTC by default */
	bool		has_bounds;
	double		bmin;
	double		bmax;

	/* range, date_range, filters */
	int			nranges;
	AggRange   *ranges;
	bool		keyed;
	int			nfilters;
	SeQuery   **filters;
	char	  **filter_keys;	/* NULL: anonymous filters (array) */

	int			nsub;
	SeAggSpec **sub;

	/* composite: its sources (specs of terms/histogram/date_histogram) */
	int			nsrc;
	SeAggSpec **src;
	const SeJson *after;
	bool		missing_bucket; /* a source's */
	bool		src_desc;		/* a source's order */
	StringInfoData scratch;		/* a source's keys of the current doc */
	int		   *offs;
	int			noffs;

	/* pipelines */
	char	   *buckets_path;
	int			nsort;			/* bucket_sort: paths and directions */
	char	  **sort_path;
	bool	   *sort_desc;
	int			from;
	bool		insert_zeros;	/* gap_policy */

	/* bound to the shard, then the segment, being collected */
	const SeMappedField *mf;
	KeyKind		kind;
	int			fieldno;
	int			seg_ord;		/* the segment's index in the shard */
	SeSegmentReader *reader;
	SeWeight  **weights;
	SeScorer  **scorers;

	/* geo: geo_distance ranges, geo grids, geo_bounds */
	int			geo;			/* GEO_* */
	bool		has_origin;
	SeGeoPoint	origin;			/* geo_distance */
	double		geo_unit;		/* metres per unit */
	bool		geo_arc;
	int			precision;		/* grids */
	bool		has_geo_bounds; /* grids: "bounds" */
	double		gtop,
				gbottom,
				gleft,
				gright;
	bool		wrap_longitude; /* geo_bounds */
	/*
	 * "nested": a filter-like single bucket (type AT_FILTER) that collects
	 * the nested docs of path below each doc instead of the doc (nested.c);
	 * per segment the docs of the path and of the collecting docs' level.
	 */
	char	   *nested_path;
	const uint64 *nested_child; /* the reader's cache (search/nested.c) */
	const uint64 *nested_level;
	const uint64 *nested_live;
	/*
	 * "reverse_nested" (nested_path "" = the root, else that path): the
	 * parent docs of the nested docs collected, each once per bucket.
	 */
	bool		reverse_nested;
};

typedef struct AggState AggState;

/* A top_hits doc: where it is (on the shard), how it ranks, then what it is. */
typedef struct TopHit
{
	int			seg;
	int32		doc;
	float		score;
	ThValue    *vals;			/* spec->nthsort sort values */
	char	   *index;
	char	   *id;
	char	   *source;			/* NULL: not fetched (_source: false) */
	int			srclen;
} TopHit;

typedef struct Bucket
{
	char	   *key;
	int			keylen;
	uint32		hash;
	int64		doc_count;
	int64		err;			/* terms: doc count error bound */
	int64		bg;				/* significant_terms: docs of the index with the key */
	bool		seen;			/* reduce: in the partial being merged */
	AggState  **subs;
} Bucket;

struct AggState
{
	const SeAggSpec *spec;
	KeyKind		kind;
	/* metrics */
	int64		count;
	double		sum;
	double		sumsq;
	double		min;
	double		max;
	/* exact_sum: the integers' sum, 128-bit two's complement */
	int64		xsum_hi;
	uint64		xsum_lo;
	int64		xmin;			/* exact_sum: the integers' min and max */
	int64		xmax;
	/* buckets */
	int			nb;
	int			capb;
	Bucket	  **b;
	int64		rn_last;		/* reverse_nested: 1 + the last parent collected */
	Bucket	  **ht;				/* open addressing over b, by key */
	int			htcap;
	int64		other;			/* terms: docs of buckets cut */
	int64		err;			/* terms: error bound (-1 unknown) */
	int64		bg_size;		/* significant_terms: docs of the index (count: of the subset) */
	bool		err_unknown;	/* reduce: a shard's bound was unknown */
	/* cardinality: the values' hashes, or once past the threshold HLL registers */
	uint64	   *hset;			/* open addressing, 0 = empty */
	int			hcap;
	int			hcount;
	uint8	   *regs;			/* 1 << precision registers, or NULL */
	int			precision;
	/* pipelines: the value computed at the reduce (NaN: none) */
	double		pvalue;
	int			npkeys;			/* max_bucket, min_bucket: the buckets' keys */
	char	  **pkeys;
	/* percentiles: t-digest centroids (merged ones first, then a buffer) */
	double	   *cmean;
	double	   *cweight;
	int			nc;
	int			nmerged;
	int			capc;
	/* top_hits: the best from + size docs, best first */
	int			nth;
	TopHit	   *th;
	KeyKind    *thkind;			/* per sort key, from the shard's mapping (NULL: the spec's) */
	/* geo_bounds: min/max are bottom/top; these the lons >= 0 and < 0 */
	double		pos_left;
	double		pos_right;
	double		neg_left;
	double		neg_right;
};

struct SeAggsShard
{
	const SeAggs *aggs;
	SeSearchShard *shard;
	AggState  **states;
};

struct SeAggPartial
{
	const SeAggs *aggs;
	int			n;
	AggState  **states;
};

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */

static SeAggs *parse_aggs(const SeJson *v, int depth, SeError *err);
static bool has_fixed_buckets(const SeAggSpec *a);
static char *key_text(const AggState *st, const Bucket *bk);

static bool
bad(SeError *err, const char *type, const char *fmt, const char *a, const char *b)
{
	se_error_set(err, 400, type, fmt, a, b);
	return false;
}

/* A date given as epoch millis or as a date (date math allowed). */
static bool
json_date_tz(const SeJson *v, const SeTimeZone *tz, double *d, SeError *err)
{
	int64		ms;

	if (v->type == SE_JSON_NUMBER)
	{
		*d = v->u.n.d;
		return true;
	}
	if (v->type != SE_JSON_STRING)
		return bad(err, "parsing_exception", "failed to parse date [%s]%s", "", "");
	if (!se_datemath_parse_tz(v->u.s.str, v->u.s.len, "strict_date_optional_time||epoch_millis",
							  false, (int64) time(NULL) * 1000, tz, &ms, err))
		return false;
	*d = (double) ms;
	return true;
}

static bool
json_date(const SeJson *v, double *d, SeError *err)
{
	return json_date_tz(v, NULL, d, err);
}

/* "1d", "12h", "30m", "90s", "500ms" as milliseconds; <= 0 when bad. */
static double
parse_fixed_interval(const char *s)
{
	char	   *end;
	double		n = strtod(s, &end);

	if (end == s || n <= 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		return n;
	if (strcmp(end, "s") == 0)
		return n * 1000;
	if (strcmp(end, "m") == 0)
		return n * 60000;
	if (strcmp(end, "h") == 0)
		return n * 3600000;
	if (strcmp(end, "d") == 0)
		return n * 86400000;
	return -1;
}

static char
parse_calendar_interval(const char *s)
{
	static const char *const names[][3] = {
		{"minute", "1m", "m"}, {"hour", "1h", "h"}, {"day", "1d", "d"},
		{"week", "1w", "w"}, {"month", "1M", "M"}, {"quarter", "1q", "q"},
		{"year", "1y", "y"}
	};
	int			i;

	for (i = 0; i < lengthof(names); i++)
		if (strcmp(s, names[i][0]) == 0 || strcmp(s, names[i][1]) == 0)
			return names[i][2][0];
	return 0;
}

static bool
parse_order_one(SeAggSpec *a, const SeJson *o, SeAggs *subs, AggOrder *out, SeError *err)
{
	const char *k;
	const SeJson *dir;
	int			i;

	if (o->type != SE_JSON_OBJECT || o->u.o.count != 1)
		return bad(err, "parsing_exception", "[%s] order must be an object with one key%s", a->name, "");
	k = o->u.o.members[0].key;
	dir = o->u.o.members[0].value;
	if (dir->type != SE_JSON_STRING ||
		(strcmp(dir->u.s.str, "asc") != 0 && strcmp(dir->u.s.str, "desc") != 0))
		return bad(err, "parsing_exception", "Unknown terms order direction [%s] in terms aggregation [%s]",
				   dir->type == SE_JSON_STRING ? dir->u.s.str : "", a->name);
	out->desc = strcmp(dir->u.s.str, "desc") == 0;
	if (strcmp(k, "_count") == 0)
		out->by = ORD_COUNT;
	else if (strcmp(k, "_key") == 0 || strcmp(k, "_term") == 0)
		out->by = ORD_KEY;
	else
	{
		char	   *path = pstrdup(k);
		char	   *dot = strchr(path, '.');

		if (dot)
			*dot++ = '\0';
		out->by = ORD_SUB;
		out->metric = dot;
		out->sub = -1;
		for (i = 0; subs && i < subs->n; i++)
			if (strcmp(subs->specs[i]->name, path) == 0)
				out->sub = i;
		if (out->sub < 0 || !IS_METRIC(subs->specs[out->sub]->type))
			return bad(err, "aggregation_execution_exception",
					   "Invalid aggregator order path [%s]. The provided aggregation [%s] either does not exist, or is not a pathable aggregation",
					   k, path);
	}
	return true;
}

static bool
parse_ranges(SeAggSpec *a, const SeJson *v, bool dates, SeError *err)
{
	int			i,
				j;

	if (v->type != SE_JSON_ARRAY)
		return bad(err, "parsing_exception", "[%s] ranges must be an array%s", a->name, "");
	a->nranges = v->u.a.count;
	a->ranges = palloc0(sizeof(AggRange) * Max(1, a->nranges));
	for (i = 0; i < a->nranges; i++)
	{
		const SeJson *r = v->u.a.items[i];
		AggRange   *rg = &a->ranges[i];

		if (r->type != SE_JSON_OBJECT)
			return bad(err, "parsing_exception", "[%s] a range must be an object%s", a->name, "");
		for (j = 0; j < r->u.o.count; j++)
		{
			const char *k = r->u.o.members[j].key;
			const SeJson *x = r->u.o.members[j].value;
			bool		ok;
			double		d = 0;

			if (strcmp(k, "key") == 0 && x->type == SE_JSON_STRING)
			{
				rg->key = pstrdup(x->u.s.str);
				continue;
			}
			if (strcmp(k, "from") != 0 && strcmp(k, "to") != 0)
				return bad(err, "parsing_exception", "[range] unknown field [%s]%s", k, "");
			if (x->type == SE_JSON_NULL)
				continue;
			ok = dates ? json_date(x, &d, err) : se_json_as_double(x, &d);
			if (!ok)
				return bad(err, "parsing_exception", "[%s] bad range bound [%s]", a->name, k);
			if (k[0] == 'f')
				rg->has_from = true, rg->from = d, rg->from_v = x;
			else
				rg->has_to = true, rg->to = d, rg->to_v = x;
		}
	}
	return true;
}

static bool
parse_filters(SeAggSpec *a, const SeJson *v, int depth, SeError *err)
{
	int			i;

	if (v->type == SE_JSON_OBJECT)
	{
		a->nfilters = v->u.o.count;
		a->filter_keys = palloc(sizeof(char *) * Max(1, a->nfilters));
	}
	else if (v->type == SE_JSON_ARRAY)
		a->nfilters = v->u.a.count;
	else
		return bad(err, "parsing_exception", "[filters] must be an object or an array in [%s]%s", a->name, "");
	a->filters = palloc(sizeof(SeQuery *) * Max(1, a->nfilters));
	for (i = 0; i < a->nfilters; i++)
	{
		const SeJson *q = v->type == SE_JSON_OBJECT ? v->u.o.members[i].value : v->u.a.items[i];

		if (a->filter_keys)
			a->filter_keys[i] = pstrdup(v->u.o.members[i].key);
		if ((a->filters[i] = se_query_parse(q, depth, err)) == NULL)
			return false;
	}
	return true;
}

/* A composite's source: {"name": {"terms"|"histogram"|"date_histogram": {...}}} */
static SeAggSpec *
parse_source_spec(const SeJson *v, SeError *err)
{
	SeAggSpec  *a = palloc0(sizeof(SeAggSpec));
	const SeJson *body;
	int			i;

	if (v->type != SE_JSON_OBJECT || v->u.o.count != 1 ||
		v->u.o.members[0].value->type != SE_JSON_OBJECT ||
		v->u.o.members[0].value->u.o.count != 1)
	{
		bad(err, "parsing_exception", "[composite] a source must be {\"name\": {\"type\": {...}}}%s%s", "", "");
		return NULL;
	}
	a->name = pstrdup(v->u.o.members[0].key);
	v = v->u.o.members[0].value;
	if (strcmp(v->u.o.members[0].key, "terms") == 0)
		a->type = AT_TERMS;
	else if (strcmp(v->u.o.members[0].key, "histogram") == 0)
		a->type = AT_HISTOGRAM;
	else if (strcmp(v->u.o.members[0].key, "date_histogram") == 0)
		a->type = AT_DATE_HISTOGRAM;
	else
	{
		bad(err, "parsing_exception", "Unknown source type [%s] in composite [%s]",
			v->u.o.members[0].key, a->name);
		return NULL;
	}
	body = v->u.o.members[0].value;
	if (body->type != SE_JSON_OBJECT)
	{
		bad(err, "parsing_exception", "[composite] source [%s] must be an object%s", a->name, "");
		return NULL;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *x = body->u.o.members[i].value;
		bool		ok = true;

		if (strcmp(k, "field") == 0 && x->type == SE_JSON_STRING)
			a->field = pstrdup(x->u.s.str);
		else if (strcmp(k, "order") == 0 && x->type == SE_JSON_STRING)
		{
			ok = strcmp(x->u.s.str, "asc") == 0 || strcmp(x->u.s.str, "desc") == 0;
			a->src_desc = strcmp(x->u.s.str, "desc") == 0;
		}
		else if (strcmp(k, "missing_bucket") == 0)
			a->missing_bucket = x->type == SE_JSON_TRUE;
		else if (a->type == AT_HISTOGRAM && strcmp(k, "interval") == 0)
			ok = se_json_as_double(x, &a->interval) && a->interval > 0;
		else if (a->type == AT_DATE_HISTOGRAM && strcmp(k, "fixed_interval") == 0 && x->type == SE_JSON_STRING)
			ok = (a->interval = parse_fixed_interval(x->u.s.str)) > 0;
		else if (a->type == AT_DATE_HISTOGRAM && strcmp(k, "calendar_interval") == 0 && x->type == SE_JSON_STRING)
			ok = (a->cal_unit = parse_calendar_interval(x->u.s.str)) != 0;
		else if (a->type == AT_DATE_HISTOGRAM && strcmp(k, "time_zone") == 0 && x->type == SE_JSON_STRING)
		{
			if (!se_tz_parse(pstrdup(x->u.s.str), &a->tz, err))
				return NULL;
		}
		else
		{
			bad(err, "parsing_exception", "[%s] unknown field [%s]", type_names[a->type], k);
			return NULL;
		}
		if (!ok)
		{
			bad(err, "illegal_argument_exception", "[composite] bad value for [%s] in source [%s]", k, a->name);
			return NULL;
		}
	}
	if (a->field == NULL ||
		(a->type == AT_HISTOGRAM && a->interval <= 0) ||
		(a->type == AT_DATE_HISTOGRAM && a->interval <= 0 && a->cal_unit == 0))
	{
		bad(err, "illegal_argument_exception", "[composite] source [%s] needs a field%s",
			a->name, a->type == AT_TERMS ? "" : " and an interval");
		return NULL;
	}
	return a;
}

/* {"size": n, "sources": [...], "after": {...}} */
static bool
parse_composite(SeAggSpec *a, const SeJson *body, SeError *err)
{
	int			i;

	a->size = 10;
	a->min_doc_count = 1;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "size") == 0 && v->type == SE_JSON_NUMBER && v->u.n.d > 0)
			a->size = (int) Min(v->u.n.d, PG_INT32_MAX);
		else if (strcmp(k, "after") == 0 && v->type == SE_JSON_OBJECT)
			a->after = v;
		else if (strcmp(k, "sources") == 0 && v->type == SE_JSON_ARRAY && v->u.a.count > 0)
		{
			int			j;

			a->nsrc = v->u.a.count;
			a->src = palloc(sizeof(SeAggSpec *) * a->nsrc);
			for (j = 0; j < a->nsrc; j++)
				if ((a->src[j] = parse_source_spec(v->u.a.items[j], err)) == NULL)
					return false;
		}
		else
			return bad(err, "parsing_exception", "[composite] unknown field [%s]%s", k, "");
	}
	if (a->nsrc == 0)
		return bad(err, "illegal_argument_exception",
				   "Composite [sources] cannot be null or empty in [%s]%s", a->name, "");
	if (a->after != NULL)
	{
		for (i = 0; i < a->nsrc; i++)
			if (se_json_get(a->after, a->src[i]->name) == NULL)
				return bad(err, "illegal_argument_exception",
						   "[after] has no value for source [%s] of composite [%s]", a->src[i]->name, a->name);
	}
	return true;
}

/* The body of a pipeline aggregation. */
static bool
parse_pipeline(SeAggSpec *a, const SeJson *body, SeError *err)
{
	const char *tn = type_names[a->type];
	int			i,
				j;

	a->size = -1;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "buckets_path") == 0 && v->type == SE_JSON_STRING && a->type != AT_BUCKET_SORT)
			a->buckets_path = pstrdup(v->u.s.str);
		else if (strcmp(k, "gap_policy") == 0 && v->type == SE_JSON_STRING &&
				 (strcmp(v->u.s.str, "skip") == 0 || strcmp(v->u.s.str, "insert_zeros") == 0))
			a->insert_zeros = strcmp(v->u.s.str, "insert_zeros") == 0;
		else if (strcmp(k, "format") == 0 && v->type == SE_JSON_STRING)
			;
		else if (a->type == AT_BUCKET_SORT && strcmp(k, "from") == 0 && v->type == SE_JSON_NUMBER &&
				 v->u.n.d >= 0)
			a->from = (int) v->u.n.d;
		else if (a->type == AT_BUCKET_SORT && strcmp(k, "size") == 0 && v->type == SE_JSON_NUMBER &&
				 v->u.n.d >= 0)
			a->size = (int) v->u.n.d;
		else if (a->type == AT_BUCKET_SORT && strcmp(k, "sort") == 0)
		{
			int			n = v->type == SE_JSON_ARRAY ? v->u.a.count : 1;

			a->nsort = n;
			a->sort_path = palloc(sizeof(char *) * n);
			a->sort_desc = palloc0(sizeof(bool) * n);
			for (j = 0; j < n; j++)
			{
				const SeJson *x = v->type == SE_JSON_ARRAY ? v->u.a.items[j] : v;

				if (x->type == SE_JSON_STRING)
					a->sort_path[j] = pstrdup(x->u.s.str);
				else if (x->type == SE_JSON_OBJECT && x->u.o.count == 1)
				{
					const SeJson *o = x->u.o.members[0].value;
					const SeJson *d = o->type == SE_JSON_OBJECT ? se_json_get(o, "order") : o;

					a->sort_path[j] = pstrdup(x->u.o.members[0].key);
					a->sort_desc[j] = d && d->type == SE_JSON_STRING && strcmp(d->u.s.str, "desc") == 0;
				}
				else
					return bad(err, "parsing_exception", "[%s] bad sort in [%s]", tn, a->name);
			}
		}
		else
			return bad(err, "parsing_exception", "[%s] unknown field [%s]", tn, k);
	}
	if (a->type != AT_BUCKET_SORT && a->buckets_path == NULL)
		return bad(err, "illegal_argument_exception",
				   "[buckets_path] must be set for aggregation [%s]%s", a->name, "");
	return true;
}

/*
 * top_hits "sort": as a search's, any number of keys, each "_score",
 * "_doc" or a field (numeric, date, boolean, keyword): "f",
 * {"f": "desc"} or {"f": {"order": "desc"}}, alone or in an array.
 * Fields sort ascending by default, _score descending; a sort on _score
 * alone is the default order.
 */
static bool
parse_top_hits_sort(SeAggSpec *a, const SeJson *v)
{
	int			n = v->type == SE_JSON_ARRAY ? v->u.a.count : 1;
	int			i;

	a->nthsort = 0;
	a->thsort = palloc0(sizeof(ThSortKey) * Max(1, n));
	for (i = 0; i < n; i++)
	{
		const SeJson *k = v->type == SE_JSON_ARRAY ? v->u.a.items[i] : v;
		const SeJson *o = NULL;
		ThSortKey  *key = &a->thsort[a->nthsort++];
		const char *name;

		if (k->type == SE_JSON_STRING)
			name = k->u.s.str;
		else if (k->type == SE_JSON_OBJECT && k->u.o.count == 1)
		{
			name = k->u.o.members[0].key;
			o = k->u.o.members[0].value;
			if (o->type == SE_JSON_OBJECT)
				o = se_json_get(o, "order");
			if (o != NULL && (o->type != SE_JSON_STRING ||
							  (strcmp(o->u.s.str, "asc") != 0 && strcmp(o->u.s.str, "desc") != 0)))
				return false;
		}
		else
			return false;
		key->is_doc = strcmp(name, "_doc") == 0;
		key->field = key->is_doc || strcmp(name, "_score") == 0 ? NULL : pstrdup(name);
		key->desc = o != NULL ? strcmp(o->u.s.str, "desc") == 0
			: (key->field == NULL && !key->is_doc);
	}
	/* by _score descending alone: the default */
	if (a->nthsort == 1 && a->thsort[0].field == NULL && !a->thsort[0].is_doc &&
		a->thsort[0].desc)
		a->nthsort = 0;
	a->sort_by_field = a->nthsort > 0;
	a->thscratch = palloc0(sizeof(ThValue) * Max(1, a->nthsort));
	return true;
}

/*
 * significant_terms' heuristic objects: "jlh": {}, "percentage": {},
 * "gnd": {"background_is_superset": b}, "chi_square" and
 * "mutual_information": {"include_negatives": b, "background_is_superset": b}.
 * False when k names none of them; *ok false when its body is wrong.
 */
static bool
parse_sig_heuristic(SeAggSpec *a, const char *k, const SeJson *v, bool *ok, SeError *err)
{
	int			h,
				i;

	for (h = 0; h < lengthof(sig_names); h++)
		if (strcmp(k, sig_names[h]) == 0)
			break;
	if (h == lengthof(sig_names))
		return false;
	if (v->type != SE_JSON_OBJECT)
	{
		*ok = bad(err, "parsing_exception", "[%s] expected an object for [%s]", "significant_terms", k);
		return true;
	}
	a->sig = h;
	a->sig_negatives = false;
	a->sig_superset = true;
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *pk = v->u.o.members[i].key;
		const SeJson *pv = v->u.o.members[i].value;
		bool		is_bool = pv->type == SE_JSON_TRUE || pv->type == SE_JSON_FALSE;

		if (is_bool && strcmp(pk, "background_is_superset") == 0 &&
			(h == SIG_CHI_SQUARE || h == SIG_GND || h == SIG_MUTUAL_INFORMATION))
			a->sig_superset = pv->type == SE_JSON_TRUE;
		else if (is_bool && strcmp(pk, "include_negatives") == 0 &&
				 (h == SIG_CHI_SQUARE || h == SIG_MUTUAL_INFORMATION))
			a->sig_negatives = pv->type == SE_JSON_TRUE;
		else
		{
			*ok = bad(err, "parsing_exception", "failed to parse [%s] significance heuristic. unknown field [%s]",
					  k, pk);
			return true;
		}
	}
	return true;
}

/*
 * A parameter of a geo aggregation (origin, unit, distance_type;
 * precision, bounds; wrap_longitude): false when k is none of them, *ok
 * false when its value is wrong.
 */
static bool
parse_geo_param(SeAggSpec *a, const char *k, const SeJson *v, bool *ok, SeError *err)
{
	SeError		inner;

	if (a->geo == GEO_DISTANCE && strcmp(k, "origin") == 0)
	{
		se_error_init(&inner);
		if (!se_geo_parse_point(v, true, &a->origin, &inner))
		{
			*ok = bad(err, "parsing_exception", "[geo_distance] failed to parse [origin]: %s",
					  inner.reason ? inner.reason : "", "");
			return true;
		}
		a->has_origin = true;
	}
	else if (a->geo == GEO_DISTANCE && strcmp(k, "unit") == 0)
		*ok = se_geo_parse_unit(v, &a->geo_unit, err);
	else if (a->geo == GEO_DISTANCE && strcmp(k, "distance_type") == 0)
		*ok = se_geo_parse_distance_type(v, &a->geo_arc, err);
	else if ((a->geo == GEO_HASH_GRID || a->geo == GEO_TILE_GRID) &&
			 strcmp(k, "precision") == 0)
	{
		double		d;
		int			max = a->geo == GEO_HASH_GRID ? 12 : 29;

		if (!se_json_as_double(v, &d) || d != floor(d) || d < (a->geo == GEO_HASH_GRID ? 1 : 0) || d > max)
		{
			char		msg[128];

			snprintf(msg, sizeof(msg), "%d", max);
			*ok = bad(err, "illegal_argument_exception",
					  a->geo == GEO_HASH_GRID ?
					  "Invalid geohash aggregation precision of %s. Must be between 1 and %s." :
					  "Invalid geotile_grid precision of %s. Must be between 0 and %s.",
					  v->type == SE_JSON_NUMBER ? v->u.n.text : "?", msg);
			return true;
		}
		a->precision = (int) d;
	}
	else if ((a->geo == GEO_HASH_GRID || a->geo == GEO_TILE_GRID) &&
			 strcmp(k, "bounds") == 0)
	{
		SeQuery    *q = se_geo_bounding_box_parse(&(SeJson) {.type = SE_JSON_OBJECT,
			.u.o = {.count = 1, .members = &(SeJsonMember) {.key = "bounds", .value = (SeJson *) v}}},
												  err);

		if (q == NULL)
		{
			*ok = false;
			return true;
		}
		a->has_geo_bounds = true;
		a->gtop = q->geo->top;
		a->gbottom = q->geo->bottom;
		a->gleft = q->geo->left;
		a->gright = q->geo->right;
	}
	else if (a->type == AT_GEO_BOUNDS && strcmp(k, "wrap_longitude") == 0)
	{
		if (!se_query_json_bool(v, &a->wrap_longitude))
			*ok = bad(err, "parsing_exception", "[geo_bounds] failed to parse [wrap_longitude]%s%s",
					  "", "");
	}
	else
		return false;
	return true;
}

/* The body of one aggregation ({"field": .., ...}) of type a->type. */
static bool
parse_body(SeAggSpec *a, const SeJson *body, int depth, SeError *err)
{
	const char *tn = type_names[a->type];
	int			i;

	if (a->type == AT_FILTER && a->reverse_nested)
	{
		const SeJson *path = body->type == SE_JSON_OBJECT ? se_json_get(body, "path") : NULL;

		if (path != NULL && path->type == SE_JSON_STRING)
			a->nested_path = pstrdup(path->u.s.str);
		a->nfilters = 1;
		a->filters = palloc(sizeof(SeQuery *));
		a->filters[0] = se_query_new(SE_Q_MATCH_ALL);
		return true;
	}
	if (a->type == AT_FILTER && a->nested_path != NULL)
	{
		const SeJson *path = body->type == SE_JSON_OBJECT ? se_json_get(body, "path") : NULL;

		if (path == NULL || path->type != SE_JSON_STRING)
			return bad(err, "illegal_argument_exception",
					   "[nested] requires '%s' field%s", "path", "");
		a->nested_path = pstrdup(path->u.s.str);
		a->nfilters = 1;
		a->filters = palloc(sizeof(SeQuery *));
		a->filters[0] = se_query_new(SE_Q_MATCH_ALL);
		return true;
	}
	if (a->type == AT_FILTER)
	{
		a->nfilters = 1;
		a->filters = palloc(sizeof(SeQuery *));
		return (a->filters[0] = se_query_parse(body, depth, err)) != NULL;
	}
	if (body->type != SE_JSON_OBJECT)
		return bad(err, "parsing_exception", "Expected [START_OBJECT] under [%s], but got a [%s]",
				   tn, se_json_type_name(body->type));
	if (IS_PIPELINE(a->type))
		return parse_pipeline(a, body, err);
	if (a->type == AT_COMPOSITE)
		return parse_composite(a, body, err);
	a->sigma = 2.0;
	a->precision_threshold = CARD_DEFAULT_THRESHOLD;
	if (a->type == AT_TOP_HITS)
	{
		a->size = 3;
		a->source.fetch = true;
	}
	a->compression = 100.0;
	a->keyed = true;			/* percentiles; other types read it again */
	a->size = 10;
	a->shard_size = -1;
	a->min_doc_count = a->type == AT_TERMS ? 1 : a->type == AT_SIGNIFICANT_TERMS ? 3 : 0;
	a->geo_unit = 1.0;
	a->geo_arc = true;
	a->wrap_longitude = true;
	if (a->geo == GEO_HASH_GRID || a->geo == GEO_TILE_GRID)
	{
		a->size = 10000;
		a->precision = a->geo == GEO_HASH_GRID ? 5 : 7;
	}
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		bool		ok = true;

		if ((a->geo != GEO_NONE || a->type == AT_GEO_BOUNDS) &&
			parse_geo_param(a, k, v, &ok, err))
		{
			if (!ok)
				return false;
			continue;
		}
		if (strcmp(k, "field") == 0 && v->type == SE_JSON_STRING && a->type != AT_FILTERS)
			a->field = pstrdup(v->u.s.str);
		else if (strcmp(k, "missing") == 0 && a->type != AT_FILTERS && a->type != AT_MISSING)
			a->missing = v;
		else if (strcmp(k, "format") == 0 && v->type == SE_JSON_STRING)
			;					/* values are written in the field's own format */
		else if ((a->type == AT_STATS || a->type == AT_SUM) && strcmp(k, "exact_sum") == 0 &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			a->exact_sum = v->type == SE_JSON_TRUE;
		else if (a->type == AT_EXTENDED_STATS && strcmp(k, "sigma") == 0)
			ok = se_json_as_double(v, &a->sigma) && a->sigma >= 0;
		else if ((a->type == AT_PERCENTILES && strcmp(k, "percents") == 0) ||
				 (a->type == AT_PERCENTILE_RANKS && strcmp(k, "values") == 0))
		{
			int			j;

			ok = v->type == SE_JSON_ARRAY && v->u.a.count > 0;
			a->npercents = ok ? v->u.a.count : 0;
			a->percents = palloc(sizeof(double) * Max(1, a->npercents));
			for (j = 0; ok && j < a->npercents; j++)
				ok = se_json_as_double(v->u.a.items[j], &a->percents[j]) &&
					(a->type == AT_PERCENTILE_RANKS ||
					 (a->percents[j] >= 0 && a->percents[j] <= 100));
		}
		else if ((a->type == AT_PERCENTILES || a->type == AT_PERCENTILE_RANKS) &&
				 strcmp(k, "keyed") == 0)
			a->keyed = v->type == SE_JSON_TRUE;
		else if ((a->type == AT_PERCENTILES || a->type == AT_PERCENTILE_RANKS) &&
				 strcmp(k, "tdigest") == 0 && v->type == SE_JSON_OBJECT)
		{
			const SeJson *c = se_json_get(v, "compression");

			ok = c == NULL || (se_json_as_double(c, &a->compression) && a->compression > 0);
		}
		else if (a->type == AT_TOP_HITS && (strcmp(k, "size") == 0 || strcmp(k, "from") == 0) &&
				 v->type == SE_JSON_NUMBER && v->u.n.d >= 0 && v->u.n.d <= PG_INT32_MAX / 2)
			*(k[0] == 's' ? &a->size : &a->from) = (int) v->u.n.d;
		else if (a->type == AT_TOP_HITS && strcmp(k, "_source") == 0)
		{
			if (!se_search_parse_source_filter(v, &a->source, err))
				return false;
		}
		else if (a->type == AT_TOP_HITS && strcmp(k, "sort") == 0)
			ok = parse_top_hits_sort(a, v);
		else if (a->type == AT_CARDINALITY && strcmp(k, "precision_threshold") == 0 &&
				 v->type == SE_JSON_NUMBER)
			ok = (a->precision_threshold = (int64) v->u.n.d) >= 0;
		else if (IS_TERMS(a->type) && strcmp(k, "size") == 0 && v->type == SE_JSON_NUMBER)
			ok = (a->size = (int) v->u.n.d) > 0;
		else if (IS_TERMS(a->type) && strcmp(k, "shard_size") == 0 && v->type == SE_JSON_NUMBER)
			ok = (a->shard_size = (int) v->u.n.d) > 0;
		else if ((IS_TERMS(a->type) || a->type == AT_HISTOGRAM || a->type == AT_DATE_HISTOGRAM) &&
				 strcmp(k, "min_doc_count") == 0 && v->type == SE_JSON_NUMBER)
			ok = (a->min_doc_count = (int64) v->u.n.d) >= 0;
		else if (a->type == AT_SIGNIFICANT_TERMS && parse_sig_heuristic(a, k, v, &ok, err))
			;
		else if (a->type == AT_TERMS && strcmp(k, "show_term_doc_count_error") == 0)
			a->show_error = v->type == SE_JSON_TRUE;
		else if ((a->type == AT_TERMS || a->type == AT_HISTOGRAM || a->type == AT_DATE_HISTOGRAM) &&
				 strcmp(k, "order") == 0)
			;					/* after the sub-aggregations are known */
		else if (IS_TERMS(a->type) && strcmp(k, "include") == 0)
			a->include = v;
		else if (IS_TERMS(a->type) && strcmp(k, "exclude") == 0)
			a->exclude = v;
		else if (a->type == AT_HISTOGRAM && strcmp(k, "interval") == 0)
			ok = se_json_as_double(v, &a->interval) && a->interval > 0;
		else if (a->type == AT_DATE_HISTOGRAM && strcmp(k, "fixed_interval") == 0 &&
				 v->type == SE_JSON_STRING)
		{
			if ((a->interval = parse_fixed_interval(v->u.s.str)) <= 0)
				return bad(err, "illegal_argument_exception",
						   "failed to parse setting [date_histogram.fixedInterval] with value [%s] as a time value: unit is missing or unrecognized%s",
						   v->u.s.str, "");
		}
		else if (a->type == AT_DATE_HISTOGRAM && strcmp(k, "calendar_interval") == 0 &&
				 v->type == SE_JSON_STRING)
		{
			if ((a->cal_unit = parse_calendar_interval(v->u.s.str)) == 0)
				return bad(err, "illegal_argument_exception",
						   "The supplied interval [%s] could not be parsed as a calendar interval.%s",
						   v->u.s.str, "");
		}
		else if ((a->type == AT_DATE_HISTOGRAM || a->type == AT_DATE_RANGE) &&
				 strcmp(k, "time_zone") == 0 && v->type == SE_JSON_STRING)
		{
			if (!se_tz_parse(pstrdup(v->u.s.str), &a->tz, err))
				return false;
		}
		else if ((a->type == AT_HISTOGRAM || a->type == AT_DATE_HISTOGRAM) &&
				 strcmp(k, "offset") == 0)
		{
			if (a->type == AT_DATE_HISTOGRAM && v->type == SE_JSON_STRING)
			{
				const char *s = v->u.s.str;
				bool		neg = s[0] == '-';
				double		ms = parse_fixed_interval(s + (s[0] == '-' || s[0] == '+'));

				ok = ms > 0;
				a->offset = neg ? -ms : ms;
			}
			else
				ok = se_json_as_double(v, &a->offset);
		}
		else if ((a->type == AT_HISTOGRAM || a->type == AT_DATE_HISTOGRAM) &&
				 strcmp(k, "extended_bounds") == 0 && v->type == SE_JSON_OBJECT)
		{
			const SeJson *mn = se_json_get(v, "min");
			const SeJson *mx = se_json_get(v, "max");

			a->has_bounds = true;
			a->bmin = INFINITY;
			a->bmax = -INFINITY;
			if (mn)
				ok = a->type == AT_HISTOGRAM ? se_json_as_double(mn, &a->bmin) : json_date(mn, &a->bmin, err);
			if (ok && mx)
				ok = a->type == AT_HISTOGRAM ? se_json_as_double(mx, &a->bmax) : json_date(mx, &a->bmax, err);
		}
		else if ((a->type == AT_RANGE || a->type == AT_DATE_RANGE) && strcmp(k, "ranges") == 0)
		{
			if (!parse_ranges(a, v, a->type == AT_DATE_RANGE, err))
				return false;
		}
		else if ((a->type == AT_RANGE || a->type == AT_DATE_RANGE || a->type == AT_HISTOGRAM ||
				  a->type == AT_DATE_HISTOGRAM) && strcmp(k, "keyed") == 0)
			a->keyed = v->type == SE_JSON_TRUE;
		else if (a->type == AT_FILTERS && strcmp(k, "filters") == 0)
		{
			if (!parse_filters(a, v, depth, err))
				return false;
		}
		else
			return bad(err, "parsing_exception", "[%s] unknown field [%s]", tn, k);
		if (!ok)
		{
			if (err->type == NULL || !se_error_is_set(err))
				bad(err, "illegal_argument_exception", "[%s] bad value for [%s]", tn, k);
			return false;
		}
	}
	if (a->type != AT_PERCENTILES && a->type != AT_PERCENTILE_RANKS &&
		se_json_get(body, "keyed") == NULL)
		a->keyed = false;
	if (a->type == AT_PERCENTILES && a->percents == NULL)
	{
		static const double defaults[] = {1, 5, 25, 50, 75, 95, 99};

		a->npercents = lengthof(defaults);
		a->percents = palloc(sizeof(defaults));
		memcpy(a->percents, defaults, sizeof(defaults));
	}
	if (a->type == AT_PERCENTILE_RANKS && a->percents == NULL)
		return bad(err, "illegal_argument_exception",
				   "[values] must not be null: [%s]%s", a->name, "");
	if (a->type != AT_FILTERS && a->type != AT_TOP_HITS && a->field == NULL)
		return bad(err, "illegal_argument_exception",
				   "Required one of fields [field, script], but none were specified.%s%s", "", "");
	if (a->type == AT_HISTOGRAM && a->interval <= 0)
		return bad(err, "illegal_argument_exception",
				   "[interval] must be >0 for histogram aggregation [%s]%s", a->name, "");
	if (a->type == AT_DATE_HISTOGRAM && a->interval <= 0 && a->cal_unit == 0)
		return bad(err, "illegal_argument_exception",
				   "Invalid interval specified, must be non-null and non-empty%s%s", "", "");
	if ((a->type == AT_RANGE || a->type == AT_DATE_RANGE) && a->nranges == 0)
		return bad(err, "illegal_argument_exception", "No [ranges] specified for the [%s] aggregation%s",
				   a->name, "");
	if (a->geo == GEO_DISTANCE && !a->has_origin)
		return bad(err, "illegal_argument_exception",
				   "Missing [origin] for the [geo_distance] aggregation [%s]%s", a->name, "");
	/* date_range bounds without their own zone are local time in time_zone */
	for (i = 0; a->type == AT_DATE_RANGE && !se_tz_is_utc(&a->tz) && i < a->nranges; i++)
	{
		AggRange   *rg = &a->ranges[i];

		if ((rg->from_v && !json_date_tz(rg->from_v, &a->tz, &rg->from, err)) ||
			(rg->to_v && !json_date_tz(rg->to_v, &a->tz, &rg->to, err)))
			return false;
	}
	if (a->type == AT_FILTERS && a->filters == NULL)
		return bad(err, "illegal_argument_exception", "[filters] cannot be empty.%s%s", "", "");
	if (a->shard_size < 0)
		a->shard_size = (int) Min((int64) a->size * 3 / 2 + 10, PG_INT32_MAX);
	if (a->shard_size < a->size)
		a->shard_size = a->size;
	if (IS_TERMS(a->type))
	{
		if (a->include && a->include->type == SE_JSON_STRING &&
			(a->include_re = se_regex_parse(a->include->u.s.str, a->include->u.s.len,
											SE_RE_ALL, false, err)) == NULL)
			return false;
		if (a->exclude && a->exclude->type == SE_JSON_STRING &&
			(a->exclude_re = se_regex_parse(a->exclude->u.s.str, a->exclude->u.s.len,
											SE_RE_ALL, false, err)) == NULL)
			return false;
	}
	return true;
}

static SeAggSpec *
parse_one(const char *name, const SeJson *v, int depth, SeError *err)
{
	SeAggSpec  *a = palloc0(sizeof(SeAggSpec));
	const SeJson *body = NULL;
	const SeJson *subs = NULL;
	const SeJson *order = NULL;
	SeAggs	   *sub = NULL;
	int			i,
				t;

	a->name = pstrdup(name);
	a->type = -1;
	if (strpbrk(name, "[]>") != NULL || name[0] == '\0')
	{
		bad(err, "parsing_exception",
			"Invalid aggregation name [%s]. Aggregation names can contain any character except '[', ']', and '>'%s",
			name, "");
		return NULL;
	}
	if (v->type != SE_JSON_OBJECT)
	{
		bad(err, "parsing_exception", "Expected [START_OBJECT] under [%s], but got a [%s]",
			name, se_json_type_name(v->type));
		return NULL;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;

		if (strcmp(k, "aggs") == 0 || strcmp(k, "aggregations") == 0)
		{
			subs = v->u.o.members[i].value;
			continue;
		}
		if (strcmp(k, "meta") == 0)
			continue;
		for (t = 0; t < lengthof(type_names); t++)
			if (strcmp(k, type_names[t]) == 0)
				break;
		if (strcmp(k, "geo_distance") == 0)
			t = AT_RANGE, a->geo = GEO_DISTANCE;
		else if (strcmp(k, "geohash_grid") == 0)
			t = AT_TERMS, a->geo = GEO_HASH_GRID;
		else if (strcmp(k, "geotile_grid") == 0)
			t = AT_TERMS, a->geo = GEO_TILE_GRID;
		if (strcmp(k, "nested") == 0)
		{
			t = AT_FILTER;
			a->nested_path = "";	/* set from the body */
		}
		else if (strcmp(k, "reverse_nested") == 0)
		{
			t = AT_FILTER;
			a->nested_path = "";
			a->reverse_nested = true;
		}
		if (t == lengthof(type_names))
		{
			bad(err, "parsing_exception", "Unknown aggregation type [%s]%s", k, "");
			return NULL;
		}
		if (body != NULL)
		{
			se_error_set(err, 400, "parsing_exception",
						 "Found two aggregation type definitions in [%s]: [%s] and [%s]",
						 name, type_names[a->type], k);
			return NULL;
		}
		a->type = t;
		body = v->u.o.members[i].value;
	}
	if (body == NULL)
	{
		bad(err, "parsing_exception", "Missing definition for aggregation [%s]%s", name, "");
		return NULL;
	}
	if (subs != NULL)
	{
		if (IS_METRIC(a->type) || IS_PIPELINE(a->type))
		{
			se_error_set(err, 400, "aggregation_initialization_exception",
						 "Aggregator [%s] of type [%s] cannot accept sub-aggregations",
						 name, type_names[a->type]);
			return NULL;
		}
		if ((sub = parse_aggs(subs, depth + 1, err)) == NULL)
			return NULL;
		a->nsub = sub->n;
		a->sub = sub->specs;
		for (i = 0; i < a->nsub; i++)
		{
			AggType		pt = a->sub[i]->type;

			if ((pt == AT_CUMULATIVE_SUM || pt == AT_DERIVATIVE) &&
				a->type != AT_HISTOGRAM && a->type != AT_DATE_HISTOGRAM)
			{
				se_error_set(err, 400, "action_request_validation_exception",
							 "Validation Failed: 1: %s aggregation [%s] must have a histogram, date_histogram or auto_date_histogram as parent;",
							 type_names[pt], a->sub[i]->name);
				return NULL;
			}
			if (pt == AT_COMPOSITE)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "[composite] aggregation cannot be used with a parent aggregation of type: [%s]",
							 type_names[a->type]);
				return NULL;
			}
			if (pt == AT_BUCKET_SORT && (has_fixed_buckets(a) && a->type != AT_FILTERS))
			{
				se_error_set(err, 400, "action_request_validation_exception",
							 "Validation Failed: 1: bucket_sort aggregation [%s] must be declared inside of another aggregation;",
							 a->sub[i]->name);
				return NULL;
			}
		}
	}
	if (!parse_body(a, body, depth + 1, err))
		return NULL;
	if (a->type == AT_TERMS || a->type == AT_HISTOGRAM || a->type == AT_DATE_HISTOGRAM)
		order = body->type == SE_JSON_OBJECT ? se_json_get(body, "order") : NULL;
	if (order != NULL)
	{
		int			n = order->type == SE_JSON_ARRAY ? order->u.a.count : 1;

		a->norder = n;
		a->order = palloc0(sizeof(AggOrder) * n);
		for (i = 0; i < n; i++)
			if (!parse_order_one(a, order->type == SE_JSON_ARRAY ? order->u.a.items[i] : order,
								 sub, &a->order[i], err))
				return NULL;
	}
	else if (a->type == AT_TERMS)
	{
		a->norder = 1;
		a->order = palloc0(sizeof(AggOrder));
		a->order[0].by = ORD_COUNT;
		a->order[0].desc = true;
	}
	else
	{
		a->norder = 1;
		a->order = palloc0(sizeof(AggOrder));
		a->order[0].by = ORD_KEY;
	}
	return a;
}

static SeAggs *
parse_aggs(const SeJson *v, int depth, SeError *err)
{
	SeAggs	   *aggs = palloc0(sizeof(SeAggs));
	int			i;

	if (depth > SE_QUERY_MAX_DEPTH)
	{
		bad(err, "illegal_argument_exception", "aggregations nested deeper than %s%s", "100", "");
		return NULL;
	}
	if (v->type != SE_JSON_OBJECT)
	{
		bad(err, "parsing_exception", "Expected [START_OBJECT] under [aggs], but got a [%s]%s",
			se_json_type_name(v->type), "");
		return NULL;
	}
	aggs->n = v->u.o.count;
	aggs->specs = palloc0(sizeof(SeAggSpec *) * Max(1, aggs->n));
	for (i = 0; i < aggs->n; i++)
	{
		int			j;

		for (j = 0; j < i; j++)
			if (strcmp(v->u.o.members[i].key, v->u.o.members[j].key) == 0)
			{
				bad(err, "illegal_argument_exception",
					"Two sibling aggregations cannot have the same name: [%s]%s",
					v->u.o.members[i].key, "");
				return NULL;
			}
		if ((aggs->specs[i] = parse_one(v->u.o.members[i].key, v->u.o.members[i].value,
										depth, err)) == NULL)
			return NULL;
	}
	return aggs;
}

/* ES refuses a reverse_nested with no nested aggregation above it */
static bool
check_reverse_nested(SeAggSpec **specs, int n, bool in_nested, SeError *err)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		const SeAggSpec *a = specs[i];

		if (a->reverse_nested && !in_nested)
		{
			bad(err, "illegal_argument_exception",
				"Reverse nested aggregation [%s] can only be used inside a [nested] aggregation%s",
				a->name, "");
			return false;
		}
		if (!check_reverse_nested(a->sub, a->nsub,
								  in_nested || (a->nested_path != NULL && !a->reverse_nested),
								  err))
			return false;
	}
	return true;
}

SeAggs *
se_aggs_parse(const SeJson *v, SeError *err)
{
	SeAggs	   *aggs = parse_aggs(v, 0, err);

	if (aggs != NULL && !check_reverse_nested(aggs->specs, aggs->n, false, err))
		return NULL;
	return aggs;
}

/* ---------------------------------------------------------------------
 * States
 * ---------------------------------------------------------------------
 */

static AggState *
state_new(const SeAggSpec *spec, KeyKind kind)
{
	AggState   *st = palloc0(sizeof(AggState));

	st->spec = spec;
	st->kind = kind;
	st->min = INFINITY;
	st->max = -INFINITY;
	st->xmin = PG_INT64_MAX;
	st->xmax = PG_INT64_MIN;
	st->pos_left = st->neg_left = INFINITY;
	st->pos_right = st->neg_right = -INFINITY;
	st->pvalue = NAN;
	return st;
}

static bool has_fixed_buckets(const SeAggSpec *a);
static void fixed_buckets(AggState *st, bool bound);

static AggState **
states_new(SeAggSpec **specs, int n, bool bound)
{
	AggState  **s = palloc(sizeof(AggState *) * Max(1, n));
	int			i;

	for (i = 0; i < n; i++)
	{
		s[i] = state_new(specs[i], bound ? specs[i]->kind : KK_NONE);
		if (has_fixed_buckets(specs[i]))
			fixed_buckets(s[i], bound);
	}
	return s;
}

static Bucket *
bucket_add(AggState *st, const char *key, int keylen, uint32 hash, bool bound)
{
	Bucket	   *bk = palloc0(sizeof(Bucket));

	bk->key = palloc(Max(keylen, 1));
	memcpy(bk->key, key, keylen);
	bk->keylen = keylen;
	bk->hash = hash;
	bk->subs = states_new(st->spec->sub, st->spec->nsub, bound);
	if (st->nb == st->capb)
	{
		st->capb = st->capb ? st->capb * 2 : 8;
		st->b = st->b ? repalloc(st->b, sizeof(Bucket *) * st->capb)
			: palloc(sizeof(Bucket *) * st->capb);
	}
	st->b[st->nb++] = bk;
	return bk;
}

/* rebuild the hash table over st->b (after growth, cuts or reordering) */
static void
rehash(AggState *st, int cap)
{
	int			i;

	st->htcap = cap;
	st->ht = palloc0(sizeof(Bucket *) * cap);
	for (i = 0; i < st->nb; i++)
	{
		int			j = st->b[i]->hash & (cap - 1);

		while (st->ht[j])
			j = (j + 1) & (cap - 1);
		st->ht[j] = st->b[i];
	}
}

/* The bucket of key, created (empty) when it is new. */
static Bucket *
bucket_get(AggState *st, const char *key, int keylen, bool bound)
{
	uint32		h = hash_bytes((const unsigned char *) key, keylen);
	Bucket	   *bk;
	int			i;

	if (st->ht == NULL || st->nb * 2 >= st->htcap)
		rehash(st, st->htcap ? st->htcap * 2 : 16);
	i = h & (st->htcap - 1);
	while ((bk = st->ht[i]) != NULL)
	{
		if (bk->hash == h && bk->keylen == keylen && memcmp(bk->key, key, keylen) == 0)
			return bk;
		i = (i + 1) & (st->htcap - 1);
	}
	bk = bucket_add(st, key, keylen, h, bound);
	st->ht[i] = bk;
	return bk;
}

/* Fixed buckets (range, filters, filter, missing), in the spec's order. */
static void
fixed_buckets(AggState *st, bool bound)
{
	const SeAggSpec *a = st->spec;
	int			n = a->type == AT_RANGE || a->type == AT_DATE_RANGE ? a->nranges
		: a->type == AT_FILTERS ? a->nfilters : 1;
	int			i;

	for (i = 0; i < n; i++)
		bucket_add(st, (char *) &i, sizeof(int), (uint32) i, bound);
}

static bool
has_fixed_buckets(const SeAggSpec *a)
{
	return a->type == AT_RANGE || a->type == AT_DATE_RANGE || a->type == AT_FILTERS ||
		a->type == AT_FILTER || a->type == AT_MISSING;
}

/* ---------------------------------------------------------------------
 * Binding and collection
 * ---------------------------------------------------------------------
 */

/*
 * The shard-wide number of the first doc of the segment being collected
 * (top_hits' _doc sort value, as Lucene's docBase + doc).
 */
static int64 collect_doc_base;

static KeyKind
kind_of(const SeMappedField *f)
{
	switch (f->type)
	{
		case SE_FT_KEYWORD:
			return KK_STR;
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
			return KK_DOUBLE;
		case SE_FT_DATE:
			return KK_DATE;
		case SE_FT_BOOLEAN:
			return KK_BOOL;
		default:
			return KK_LONG;
	}
}

static bool
bind_specs(SeAggSpec **specs, int n, SeSearchShard *shard, SeError *err)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		SeAggSpec  *a = specs[i];
		const SeMappedField *f = NULL;

		a->mf = NULL;
		a->kind = KK_NONE;
		a->fieldno = -1;
		if (a->field != NULL)
		{
			f = shard->mapping ? se_mapping_find(shard->mapping, a->field) : NULL;
			if (f != NULL && !se_search_check_doc_values(f, shard->index, err))
				return false;
			if (f != NULL && f->type != SE_FT_OBJECT)
			{
				a->mf = f;
				a->kind = kind_of(f);
				if ((f->type == SE_FT_GEO_POINT) !=
					(a->geo != GEO_NONE || a->type == AT_GEO_BOUNDS || a->type == AT_GEO_CENTROID) &&
					a->type != AT_VALUE_COUNT && a->type != AT_MISSING)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "Field [%s] of type [%s] is not supported for aggregation [%s]",
								 a->field, se_field_type_name(f->type),
								 a->geo == GEO_DISTANCE ? "geo_distance" :
								 a->geo == GEO_HASH_GRID ? "geohash_grid" :
								 a->geo == GEO_TILE_GRID ? "geotile_grid" : type_names[a->type]);
					return false;
				}
				if (a->geo == GEO_HASH_GRID || a->geo == GEO_TILE_GRID)
					a->kind = KK_STR;	/* the cells' keys */
				else if (f->type == SE_FT_GEO_POINT)
					a->kind = KK_DOUBLE;
			}
			if (a->type == AT_SIGNIFICANT_TERMS && a->kind != KK_STR && a->kind != KK_NONE)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "significant_terms on field [%s] of type [%s]: only keyword fields are supported",
							 a->field, se_field_type_name(f->type));
				return false;
			}
			if (a->kind == KK_STR && a->type != AT_VALUE_COUNT && !IS_TERMS(a->type) &&
				a->type != AT_MISSING && a->type != AT_CARDINALITY)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Field [%s] of type [keyword] is not supported for aggregation [%s]",
							 a->field, type_names[a->type]);
				return false;
			}
			if (a->type == AT_DATE_HISTOGRAM && a->kind != KK_DATE && a->kind != KK_NONE)
				a->kind = KK_DATE;	/* keys are epoch millis all the same */
			if (a->type == AT_HISTOGRAM)
				a->kind = KK_DOUBLE;
		}
		for (j = 0; j < a->nthsort; j++)
		{
			ThSortKey  *k = &a->thsort[j];

			k->mf = NULL;
			k->kind = KK_NONE;
			if (k->field == NULL)
				continue;
			f = shard->mapping ? se_mapping_find(shard->mapping, k->field) : NULL;
			if (f == NULL || f->type == SE_FT_OBJECT)
			{
				se_error_set(err, 400, "query_shard_exception",
							 "No mapping found for [%s] in order to sort on", k->field);
				return false;
			}
			if (!se_search_check_doc_values(f, shard->index, err))
				return false;
			k->mf = f;
			k->kind = kind_of(f);
		}
		if (a->nested_path != NULL && a->nested_path[0] != '\0')
		{
			const SeMappedField *nf = shard->mapping ?
				se_mapping_find(shard->mapping, a->nested_path) : NULL;

			/* ES's words (an unmapped path collects nothing, as ES) */
			if (nf != NULL && !nf->nested)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "[nested] nested path [%s] is not nested", a->nested_path);
				return false;
			}
		}
		if (a->nfilters > 0)
		{
			a->weights = palloc0(sizeof(SeWeight *) * a->nfilters);
			a->scorers = palloc0(sizeof(SeScorer *) * a->nfilters);
			for (j = 0; j < a->nfilters; j++)
				if ((a->weights[j] = se_weight_build(a->filters[j], shard, false, NULL, NULL,
													 err)) == NULL)
					return false;
		}
		if (!bind_specs(a->sub, a->nsub, shard, err))
			return false;
		if (a->nsrc > 0 && !bind_specs(a->src, a->nsrc, shard, err))
			return false;
		if (a->type == AT_COMPOSITE)
		{
			/* the key being built, and each source's keys of a doc */
			initStringInfo(&a->scratch);
			for (j = 0; j < a->nsrc; j++)
				initStringInfo(&a->src[j]->scratch);
		}
	}
	return true;
}

SeAggsShard *
se_aggs_shard_begin(const SeAggs *aggs, SeSearchShard *shard, SeError *err)
{
	SeAggsShard *as = palloc0(sizeof(SeAggsShard));

	if (!bind_specs(aggs->specs, aggs->n, shard, err))
		return NULL;
	as->aggs = aggs;
	as->shard = shard;
	as->states = states_new(aggs->specs, aggs->n, true);
	return as;
}

/* the true live docs of the segment being collected (nested aggs) */
static const uint64 *collect_true_live;
/* the nested path of the docs the aggregations being bound collect; NULL: root */
static const char *collect_scope;

/* A nested aggregation's bitsets for this segment. */
static void
segment_nested(SeAggSpec *a, SeSegmentCtx *seg)
{
	a->nested_child = NULL;
	a->nested_level = NULL;
	a->nested_live = collect_true_live;
	if (a->reverse_nested)
	{
		/* the level joined back to; nothing outside a nested aggregation */
		if (collect_scope == NULL)
			return;
		if (a->nested_path[0] != '\0')
			a->nested_level = se_nested_path_bits(seg->reader, a->nested_path);
		else
			a->nested_level = se_nested_root_bits(seg->reader);
		return;
	}
	a->nested_child = se_nested_path_bits(seg->reader, a->nested_path);
	if (collect_scope != NULL)
		a->nested_level = se_nested_path_bits(seg->reader, collect_scope);
	else
		a->nested_level = se_nested_root_bits(seg->reader);
	a->nested_live = collect_true_live;
}

static void collect_bucket(Bucket *bk, const SeAggSpec *a, int32 doc);

/* Collect the live nested docs of a's path below doc into a's bucket. */
static void
nested_collect(AggState *st, const SeAggSpec *a, int32 doc)
{
	int32		d;

	if (a->nested_child == NULL || a->nested_level == NULL)
		return;
	for (d = doc - 1; d >= 0; d--)
	{
		if ((a->nested_level[d >> 6] >> (d & 63)) & 1)
			break;
		if (((a->nested_child[d >> 6] >> (d & 63)) & 1) &&
			se_livedocs_get(a->nested_live, d))
			collect_bucket(st->b[0], a, d);
	}
}

static void
segment_specs(SeAggSpec **specs, int n, SeSegmentCtx *seg)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		SeAggSpec  *a = specs[i];
		const char *saved = collect_scope;

		if (a->nested_path != NULL)
		{
			segment_nested(a, seg);
			collect_scope = a->reverse_nested ?
				(a->nested_path[0] ? a->nested_path : NULL) : a->nested_path;
		}

		a->reader = seg->reader;
		a->seg_ord = seg->ord;
		a->fieldno = a->mf ? se_segment_field(seg->reader, a->mf->path) : -1;
		for (j = 0; j < a->nthsort; j++)
			a->thsort[j].fieldno = a->thsort[j].mf ?
				se_segment_field(seg->reader, a->thsort[j].mf->path) : -1;
		for (j = 0; j < a->nfilters; j++)
		{
			if (a->scorers[j] != NULL)
				se_scorer_free(a->scorers[j]);
			a->scorers[j] = se_scorer_create(a->weights[j], seg);
		}
		segment_specs(a->sub, a->nsub, seg);
		segment_specs(a->src, a->nsrc, seg);
		collect_scope = saved;
	}
}

void
se_aggs_segment(SeAggsShard *as, SeSegmentCtx *seg)
{
	int			s;

	collect_doc_base = 0;
	for (s = 0; s < seg->ord && s < as->shard->nsegments && as->shard->segments != NULL; s++)
		collect_doc_base += se_segment_max_doc(as->shard->segments[s]);
	collect_true_live = as->shard->all_live_docs ? as->shard->all_live_docs[seg->ord] :
		(as->shard->live_docs ? as->shard->live_docs[seg->ord] : NULL);
	collect_scope = NULL;
	segment_specs(as->aggs->specs, as->aggs->n, seg);
}

static bool
filter_matches(SeScorer *s, int32 doc)
{
	if (s == NULL)
		return false;
	if (s->doc < doc)
		s->advance(s, doc);
	return s->doc == doc;
}

static double
num_as_double(KeyKind kind, int64 v)
{
	return kind == KK_DOUBLE ? se_sortable_to_double(v) : (double) v;
}

static void collect_states(AggState **states, int n, int32 doc);

static void
collect_bucket(Bucket *bk, const SeAggSpec *a, int32 doc)
{
	bk->doc_count++;
	if (a->nsub > 0)
		collect_states(bk->subs, a->nsub, doc);
}

/* include/exclude of a terms aggregation: is this key kept? */
static bool
term_kept(const SeAggSpec *a, const char *key, int len, bool str)
{
	char		buf[64];
	double		d = 0;
	int			i;

	if (a->include == NULL && a->exclude == NULL)
		return true;
	if (!str)
	{
		/* numeric keys compare by value with the numbers given */
		if (a->kind == KK_DOUBLE)
			memcpy(&d, key, sizeof(double));
		else
		{
			int64		v;

			memcpy(&v, key, sizeof(int64));
			d = (double) v;
		}
		snprintf(buf, sizeof(buf), "%.17g", d);
		key = buf;
		len = strlen(buf);
	}
	if (a->include_re && !se_regex_match(a->include_re, key, len))
		return false;
	if (a->exclude_re && se_regex_match(a->exclude_re, key, len))
		return false;
	for (i = 0; i < 2; i++)
	{
		const SeJson *l = i == 0 ? a->include : a->exclude;
		bool		found = false;
		int			j;

		if (l == NULL || l->type != SE_JSON_ARRAY)
			continue;
		for (j = 0; j < l->u.a.count && !found; j++)
		{
			const SeJson *x = l->u.a.items[j];

			if (str && x->type == SE_JSON_STRING)
				found = x->u.s.len == len && memcmp(x->u.s.str, key, len) == 0;
			else if (!str && x->type == SE_JSON_NUMBER)
				found = d == x->u.n.d;
		}
		if (found != (i == 0))
			return false;
	}
	return true;
}

static const int64 *
missing_value(const SeAggSpec *a, int64 *buf)
{
	double		d;

	if (a->missing == NULL || a->kind == KK_STR)
		return NULL;
	if (a->kind == KK_DATE)
	{
		SeError		e;

		se_error_init(&e);
		if (!json_date(a->missing, &d, &e))
			return NULL;
	}
	else if (a->missing->type == SE_JSON_TRUE || a->missing->type == SE_JSON_FALSE)
		d = a->missing->type == SE_JSON_TRUE;
	else if (!se_json_as_double(a->missing, &d))
		return NULL;
	*buf = a->kind == KK_DOUBLE ? se_double_to_sortable(d) : (int64) d;
	return buf;
}

/*
 * Cardinality: exact (a set of 64-bit hashes of the values) up to
 * precision_threshold distinct values, as ES's HyperLogLogPlusPlus is with
 * its linear counting; past it, HyperLogLog++ registers with ES's precision
 * for that threshold (hll.c: bias-corrected, linear counting for small
 * estimates).
 */
static int
card_precision(int64 threshold)
{
	return se_hll_precision(threshold);
}

static void
card_reg(AggState *st, uint64 h)
{
	se_hll_add(st->regs, st->precision, h);
}

static void
card_to_hll(AggState *st)
{
	int			i;

	st->precision = card_precision(Min(st->spec->precision_threshold, CARD_MAX_THRESHOLD));
	st->regs = palloc0((Size) 1 << st->precision);
	for (i = 0; i < st->hcap; i++)
		if (st->hset[i] != 0)
			card_reg(st, st->hset[i]);
	st->hset = NULL;
	st->hcap = st->hcount = 0;
}

static void
card_add(AggState *st, uint64 h)
{
	int			i;

	if (h == 0)
		h = 1;
	if (st->regs != NULL)
	{
		card_reg(st, h);
		return;
	}
	if (st->hcount * 2 >= st->hcap)
	{
		uint64	   *old = st->hset;
		int			oldcap = st->hcap;

		st->hcap = st->hcap ? st->hcap * 2 : 16;
		st->hset = palloc0(sizeof(uint64) * st->hcap);
		st->hcount = 0;
		for (i = 0; i < oldcap; i++)
			if (old[i] != 0)
				card_add(st, old[i]);
	}
	i = (int) (h & (st->hcap - 1));
	while (st->hset[i] != 0)
	{
		if (st->hset[i] == h)
			return;
		i = (i + 1) & (st->hcap - 1);
	}
	st->hset[i] = h;
	st->hcount++;
	if (st->hcount > Min(st->spec->precision_threshold, CARD_MAX_THRESHOLD))
		card_to_hll(st);
}

static int64
card_value(const AggState *st)
{
	if (st->regs == NULL)
		return st->hcount;
	return se_hll_estimate(st->regs, st->precision);
}

static void
card_merge(AggState *into, const AggState *from)
{
	int			i;

	if (from->regs != NULL && into->regs == NULL)
		card_to_hll(into);
	if (into->regs != NULL && from->regs != NULL)
	{
		/* the same spec, so the same precision */
		for (i = 0; i < ((int) 1 << into->precision); i++)
			into->regs[i] = Max(into->regs[i], from->regs[i]);
		return;
	}
	for (i = 0; i < from->hcap; i++)
		if (from->hset[i] != 0)
			card_add(into, from->hset[i]);
}

/*
 * Percentiles: a merging t-digest (Dunning), ES's structure for them, with
 * the k1 scale function: centroids near the tails stay small, so extreme
 * quantiles are accurate; compression bounds their number.
 */
static double
td_q_to_k(double q, double d)
{
	return d / (2 * M_PI) * asin(2 * q - 1);
}

static double
td_k_to_q(double k, double d)
{
	return (sin(k * 2 * M_PI / d) + 1) / 2;
}

static int
td_cmp(const void *pa, const void *pb, void *arg)
{
	const AggState *st = arg;
	int			a = *(const int *) pa,
				b = *(const int *) pb;

	return (st->cmean[a] > st->cmean[b]) - (st->cmean[a] < st->cmean[b]);
}

/* Merge the buffer into the centroids. */
static void
td_compress(AggState *st)
{
	double		d = st->spec->compression;
	double		total = 0,
				so_far = 0,
				limit;
	int		   *ord;
	double	   *m,
			   *w;
	int			i,
				n = 0;

	if (st->nc == st->nmerged)
		return;
	ord = palloc(sizeof(int) * st->nc);
	for (i = 0; i < st->nc; i++)
	{
		ord[i] = i;
		total += st->cweight[i];
	}
	qsort_arg(ord, st->nc, sizeof(int), td_cmp, st);
	m = palloc(sizeof(double) * st->capc);
	w = palloc(sizeof(double) * st->capc);
	m[0] = st->cmean[ord[0]];
	w[0] = st->cweight[ord[0]];
	limit = total * td_k_to_q(td_q_to_k(0, d) + 1, d);
	for (i = 1; i < st->nc; i++)
	{
		double		xm = st->cmean[ord[i]],
					xw = st->cweight[ord[i]];

		if (so_far + w[n] + xw <= limit)
		{
			w[n] += xw;
			m[n] += (xm - m[n]) * xw / w[n];
		}
		else
		{
			so_far += w[n];
			limit = total * td_k_to_q(td_q_to_k(Min(1.0, so_far / total), d) + 1, d);
			n++;
			m[n] = xm;
			w[n] = xw;
		}
	}
	st->cmean = m;
	st->cweight = w;
	st->nc = st->nmerged = n + 1;
}

static void
td_add(AggState *st, double mean, double weight)
{
	if (st->nc == st->capc)
	{
		int			cap = st->capc ? st->capc * 2 : (int) Max(64, st->spec->compression * 6);

		st->cmean = st->cmean ? repalloc(st->cmean, sizeof(double) * cap) : palloc(sizeof(double) * cap);
		st->cweight = st->cweight ? repalloc(st->cweight, sizeof(double) * cap) : palloc(sizeof(double) * cap);
		st->capc = cap;
	}
	st->cmean[st->nc] = mean;
	st->cweight[st->nc] = weight;
	st->nc++;
	/* the buffer holds a few compressions' worth before merging */
	if (st->nc - st->nmerged >= (int) (st->spec->compression * 4) && st->nc * 2 > st->capc)
		td_compress(st);
}

/* Interpolate between centroid centers; min and max bound the tails. */
static double
td_quantile(AggState *st, double q)
{
	double		total = (double) st->count,
				index,
				cum = 0,
				prev_c = 0,
				prev_m;
	int			i;

	if (st->count == 0)
		return NAN;
	td_compress(st);
	if (st->nc == 1)
		return st->cmean[0];
	index = q * total;
	prev_m = st->min;
	for (i = 0; i < st->nc; i++)
	{
		double		c = cum + st->cweight[i] / 2;

		if (index <= c)
		{
			if (c == prev_c)
				return st->cmean[i];
			return prev_m + (st->cmean[i] - prev_m) * (index - prev_c) / (c - prev_c);
		}
		prev_c = c;
		prev_m = st->cmean[i];
		cum += st->cweight[i];
	}
	if (total == prev_c)
		return st->max;
	return prev_m + (st->max - prev_m) * (index - prev_c) / (total - prev_c);
}

/* The fraction (percent) of values at or below v. */
static double
td_rank(AggState *st, double v)
{
	double		total = (double) st->count,
				cum = 0,
				prev_c = 0,
				prev_m;
	int			i;

	if (st->count == 0)
		return NAN;
	if (v < st->min)
		return 0;
	if (v >= st->max)
		return 100;
	td_compress(st);
	prev_m = st->min;
	for (i = 0; i < st->nc; i++)
	{
		double		c = cum + st->cweight[i] / 2;

		if (v < st->cmean[i])
		{
			if (st->cmean[i] == prev_m)
				return 100 * c / total;
			return 100 * (prev_c + (c - prev_c) * (v - prev_m) / (st->cmean[i] - prev_m)) / total;
		}
		prev_c = c;
		prev_m = st->cmean[i];
		cum += st->cweight[i];
	}
	return 100 * (prev_c + (total - prev_c) * (v - prev_m) / (st->max - prev_m)) / total;
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64
calendar_round(char unit, int64 ms)
{
	int64		days,
				y;
	int			m,
				d;

	switch (unit)
	{
		case 'm':
			return floor_div(ms, 60000) * 60000;
		case 'h':
			return floor_div(ms, 3600000) * 3600000;
		case 'd':
			return floor_div(ms, 86400000) * 86400000;
		case 'w':
			/* 1970-01-01 was a Thursday; weeks start on Monday */
			days = floor_div(ms, 86400000);
			return (floor_div(days + 3, 7) * 7 - 3) * 86400000;
		default:
			se_civil_from_days(floor_div(ms, 86400000), &y, &m, &d);
			if (unit == 'q')
				m = (m - 1) / 3 * 3 + 1;
			else if (unit == 'y')
				m = 1;
			return se_days_from_civil(y, m, 1) * 86400000;
	}
}

/* the key after key of a calendar interval */
static int64
calendar_next(char unit, int64 key)
{
	int64		y;
	int			m,
				d,
				add;

	switch (unit)
	{
		case 'm':
			return key + 60000;
		case 'h':
			return key + 3600000;
		case 'd':
			return key + 86400000;
		case 'w':
			return key + 7 * 86400000LL;
		default:
			se_civil_from_days(floor_div(key, 86400000), &y, &m, &d);
			add = unit == 'M' ? 1 : unit == 'q' ? 3 : 12;
			m += add;
			y += (m - 1) / 12;
			m = (m - 1) % 12 + 1;
			return se_days_from_civil(y, m, 1) * 86400000 + (key - calendar_round('d', key));
	}
}

/*
 * The bucket key of instant ms: rounded in local time (ES's rounding in
 * time_zone, fixed and calendar intervals alike), the local key turned
 * back into an instant.  Intervals of an hour or less keep the doc's own
 * offset, so the repeated hour when clocks go back is a bucket of its own.
 */
static int64
date_key(const SeAggSpec *a, int64 ms)
{
	int64		off = (int64) a->offset;
	int64		local = se_tz_to_local(&a->tz, ms);
	int64		key;
	bool		short_unit;

	if (a->cal_unit == 0)
	{
		int64		iv = (int64) a->interval;

		key = floor_div(local - off, iv) * iv + off;
		short_unit = iv <= 3600000;
	}
	else
	{
		key = calendar_round(a->cal_unit, local - off) + off;
		short_unit = a->cal_unit == 'm' || a->cal_unit == 'h';
	}
	if (short_unit || a->tz.tz == NULL)
		return key - (local - ms);
	return se_tz_local_to_utc(&a->tz, key);
}

/* The key of the bucket after key k (empty buckets between bounds). */
static int64
date_next_key(const SeAggSpec *a, int64 k)
{
	int64		off = (int64) a->offset;
	int64		local = se_tz_to_local(&a->tz, k);
	int64		next;

	if (a->cal_unit == 0)
		next = local + (int64) a->interval;
	else
		next = calendar_next(a->cal_unit, local - off) + off;
	next = date_key(a, se_tz_local_to_utc(&a->tz, next));
	/* a local hour repeated when clocks go back: step past it */
	while (next <= k)
		next = date_key(a, next + 3600000);
	return next;
}

/* ---------------------------------------------------------------------
 * Composite: a bucket per combination of its sources' keys.  A key is the
 * sources' components in order, each a kind byte (KK_NONE: missing) and
 * its value (8 bytes, or a length and the bytes of a string), so keys
 * compare and print without the mapping.
 * ---------------------------------------------------------------------
 */
static void
comp_append(SeAggSpec *s, KeyKind kind, const void *v, int len)
{
	if (s->offs == NULL || s->noffs % 16 == 15)
		s->offs = s->offs ? repalloc(s->offs, sizeof(int) * (s->noffs + 17))
			: palloc(sizeof(int) * 16);
	s->offs[s->noffs++] = s->scratch.len;
	appendStringInfoChar(&s->scratch, (char) kind);
	if (kind == KK_STR)
	{
		int32		l = len;

		appendBinaryStringInfo(&s->scratch, (char *) &l, sizeof(l));
	}
	if (kind != KK_NONE)
		appendBinaryStringInfo(&s->scratch, v, len);
	s->offs[s->noffs] = s->scratch.len;
}

/* A source's keys for doc, into its scratch (none: the doc has no bucket). */
static void
source_keys(SeAggSpec *s, int32 doc)
{
	SeSegmentReader *r = s->reader;
	const int64 *vals;
	int			n = 0,
				i;

	resetStringInfo(&s->scratch);
	s->noffs = 0;
	if (s->kind == KK_STR)
	{
		n = s->fieldno >= 0 ? se_segment_sorted_count(r, s->fieldno, doc) : 0;
		for (i = 0; i < n; i++)
		{
			int			len;
			const char *v = se_segment_sorted_value(r, s->fieldno, doc, i, &len);

			comp_append(s, KK_STR, v, len);
		}
	}
	else if (s->fieldno >= 0 && (n = se_segment_numeric_values(r, s->fieldno, doc, &vals)) > 0)
	{
		char		prev[8];

		for (i = 0; i < n; i++)
		{
			char		key[8];
			KeyKind		kind = s->kind;

			if (s->type == AT_HISTOGRAM)
			{
				double		d = num_as_double(s->mf->type != SE_FT_DOUBLE && s->mf->type != SE_FT_FLOAT ?
											  KK_LONG : KK_DOUBLE, vals[i]);
				double		k = floor(d / s->interval) * s->interval;

				memcpy(key, &k, 8);
				kind = KK_DOUBLE;
			}
			else if (s->type == AT_DATE_HISTOGRAM)
			{
				int64		k = date_key(s, vals[i]);

				memcpy(key, &k, 8);
				kind = KK_DATE;
			}
			else if (kind == KK_DOUBLE)
			{
				double		d = se_sortable_to_double(vals[i]);

				memcpy(key, &d, 8);
			}
			else
				memcpy(key, &vals[i], 8);
			if (i > 0 && memcmp(prev, key, 8) == 0)
				continue;
			memcpy(prev, key, 8);
			comp_append(s, kind, key, 8);
		}
	}
	if (s->noffs == 0 && s->missing_bucket)
		comp_append(s, KK_NONE, NULL, 0);
}

static void
composite_product(AggState *st, int k, StringInfo key, int32 doc)
{
	const SeAggSpec *a = st->spec;
	SeAggSpec  *s;
	int			j,
				len = key->len;

	if (k == a->nsrc)
	{
		collect_bucket(bucket_get(st, key->data, key->len, true), a, doc);
		return;
	}
	s = a->src[k];
	for (j = 0; j < s->noffs; j++)
	{
		appendBinaryStringInfo(key, s->scratch.data + s->offs[j], s->offs[j + 1] - s->offs[j]);
		composite_product(st, k + 1, key, doc);
		key->len = len;
	}
}

static void
composite_collect(AggState *st, int32 doc)
{
	SeAggSpec  *a = (SeAggSpec *) st->spec;
	int			k;

	for (k = 0; k < a->nsrc; k++)
	{
		source_keys(a->src[k], doc);
		if (a->src[k]->noffs == 0)
			return;
	}
	resetStringInfo(&a->scratch);
	composite_product(st, 0, &a->scratch, doc);
}

/* One component at *p: its kind, value and (strings) length; *p moves past it. */
static KeyKind
comp_read(const char **p, const char **v, int *len)
{
	KeyKind		kind = (KeyKind) (uint8) **p;
	int32		l = 8;

	(*p)++;
	if (kind == KK_NONE)
		l = 0;
	else if (kind == KK_STR)
	{
		memcpy(&l, *p, sizeof(l));
		*p += sizeof(l);
	}
	*v = *p;
	*p += l;
	*len = l;
	return kind;
}

static double
comp_number(KeyKind kind, const char *v)
{
	if (kind == KK_DOUBLE)
	{
		double		d;

		memcpy(&d, v, 8);
		return d;
	}
	else
	{
		int64		i;

		memcpy(&i, v, 8);
		return (double) i;
	}
}

/*
 * One source's values in a composite key order: missing first, strings by
 * bytes, numbers by value; then the source's direction.
 */
static int
comp_value_cmp(const SeAggSpec *src, bool xmissing, bool ymissing, bool str,
			   const char *xs, int xl, const char *ys, int yl, double dx, double dy)
{
	int			c;

	if (xmissing || ymissing)
		c = (!xmissing) - (!ymissing);
	else if (str)
	{
		c = memcmp(xs, ys, Min(xl, yl));
		if (c == 0)
			c = (xl > yl) - (xl < yl);
	}
	else
		c = (dx > dy) - (dx < dy);
	return src->src_desc ? -c : c;
}

static int
composite_cmp(const void *pa, const void *pb, void *arg)
{
	const SeAggSpec *a = arg;
	const char *p = (*(Bucket *const *) pa)->key;
	const char *q = (*(Bucket *const *) pb)->key;
	int			k;

	for (k = 0; k < a->nsrc; k++)
	{
		const char *x,
				   *y;
		int			xl,
					yl,
					c;
		KeyKind		xk = comp_read(&p, &x, &xl),
					yk = comp_read(&q, &y, &yl);
		bool		num = xk != KK_NONE && yk != KK_NONE && xk != KK_STR;

		c = comp_value_cmp(a->src[k], xk == KK_NONE, yk == KK_NONE, xk == KK_STR, x, xl, y, yl,
						   num ? comp_number(xk, x) : 0, num ? comp_number(yk, y) : 0);
		if (c != 0)
			return c;
	}
	return 0;
}

/* bucket bk against the request's "after": > 0 when bk comes after it */
static int
composite_after_cmp(const SeAggSpec *a, const Bucket *bk)
{
	const char *p = bk->key;
	int			k;

	for (k = 0; k < a->nsrc; k++)
	{
		const SeJson *v = se_json_get(a->after, a->src[k]->name);
		const char *x;
		int			xl,
					c;
		KeyKind		xk = comp_read(&p, &x, &xl);
		bool		vmissing = v == NULL || v->type == SE_JSON_NULL;
		const char *s = "";
		int			sl = 0;
		double		d = 0;

		if (!vmissing && v->type == SE_JSON_STRING)
		{
			s = v->u.s.str;
			sl = v->u.s.len;
		}
		else if (!vmissing && v->type == SE_JSON_NUMBER)
		{
			s = v->u.n.text;
			sl = v->u.n.len;
		}
		if (xk != KK_NONE && xk != KK_STR && !vmissing)
		{
			SeError		e;

			se_error_init(&e);
			if (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
				d = v->type == SE_JSON_TRUE;
			else if (xk == KK_DATE)
				(void) json_date(v, &d, &e);
			else
				(void) se_json_as_double(v, &d);
		}
		c = comp_value_cmp(a->src[k], xk == KK_NONE, vmissing, xk == KK_STR, x, xl, s, sl,
						   xk != KK_NONE && xk != KK_STR ? comp_number(xk, x) : 0, d);
		if (c != 0)
			return c;
	}
	return 0;
}

/* Sort a composite's buckets; keep the first size after "after". */
static void
composite_cut(AggState *st)
{
	const SeAggSpec *a = st->spec;
	int			j,
				keep = 0;

	if (st->nb > 1)
		qsort_arg(st->b, st->nb, sizeof(Bucket *), composite_cmp, (void *) a);
	for (j = 0; j < st->nb && keep < a->size; j++)
		if (a->after == NULL || composite_after_cmp(a, st->b[j]) > 0)
			st->b[keep++] = st->b[j];
	st->nb = keep;
	st->ht = NULL;
	st->htcap = 0;
}

/*
 * The score of the doc being collected (NaN when the query phase does not
 * score), for top_hits; collection is one doc at a time, never reentrant.
 */
static float collect_score;

/*
 * A top_hits sort key's kind in st: the shard's mapping says it, and the
 * partial carries it to a coordinator that may hold no shard of the index.
 */
static KeyKind
th_kind(const AggState *st, int k)
{
	return st->thkind != NULL ? st->thkind[k] : st->spec->thsort[k].kind;
}

/* One key's order of two values: missing last either way, as ES's default. */
static int
th_value_cmp(const ThSortKey *k, KeyKind kind, const ThValue *x, const ThValue *y)
{
	int			c;

	if (x->missing || y->missing)
		return x->missing == y->missing ? 0 : (x->missing ? 1 : -1);
	if (kind == KK_STR && k->field != NULL)
	{
		c = memcmp(x->str, y->str, Min(x->len, y->len));
		if (c == 0)
			c = x->len < y->len ? -1 : x->len > y->len;
	}
	else
		c = x->num < y->num ? -1 : x->num > y->num;
	return k->desc ? -c : c;
}

/* top_hits order: x before y?  By the sort keys, else score; ties keep the earlier. */
static bool
top_hit_before(const AggState *st, const TopHit *x, const TopHit *y)
{
	const SeAggSpec *a = st->spec;
	int			k;

	if (a->sort_by_field)
	{
		for (k = 0; k < a->nthsort; k++)
		{
			int			c = th_value_cmp(&a->thsort[k], th_kind(st, k), &x->vals[k], &y->vals[k]);

			if (c != 0)
				return c < 0;
		}
		return false;
	}
	if (isnan(x->score) || isnan(y->score))
		return false;
	return x->score > y->score;
}

/* Keep h among st's best from + size, best first (its values copied in). */
static void
top_hit_add(AggState *st, const TopHit *h)
{
	const SeAggSpec *a = st->spec;
	int			cap = a->from + a->size;
	int			i,
				k;
	TopHit		copy;

	if (cap == 0)
		return;
	if (st->th == NULL)
		st->th = palloc(sizeof(TopHit) * cap);
	if (st->nth == cap && !top_hit_before(st, h, &st->th[cap - 1]))
		return;
	copy = *h;
	if (a->nthsort > 0)
	{
		copy.vals = palloc(sizeof(ThValue) * a->nthsort);
		for (k = 0; k < a->nthsort; k++)
		{
			copy.vals[k] = h->vals[k];
			if (h->vals[k].str != NULL)
				copy.vals[k].str = pnstrdup(h->vals[k].str, h->vals[k].len);
		}
	}
	i = st->nth < cap ? st->nth++ : cap - 1;
	while (i > 0 && top_hit_before(st, &copy, &st->th[i - 1]))
	{
		st->th[i] = st->th[i - 1];
		i--;
	}
	st->th[i] = copy;
}

static void
top_hits_collect(AggState *st, int32 doc)
{
	const SeAggSpec *a = st->spec;
	TopHit		h;
	int			k;

	memset(&h, 0, sizeof(h));
	h.seg = a->seg_ord;
	h.doc = doc;
	h.score = collect_score;
	h.vals = a->thscratch;
	for (k = 0; k < a->nthsort; k++)
	{
		const ThSortKey *key = &a->thsort[k];
		ThValue    *v = &h.vals[k];

		memset(v, 0, sizeof(*v));
		if (key->is_doc)
			v->num = (double) (collect_doc_base + doc);
		else if (key->field == NULL)
		{
			v->num = collect_score;
			v->missing = isnan(collect_score);
		}
		else if (key->fieldno < 0)
			v->missing = true;
		else if (key->kind == KK_STR)
		{
			int			n = se_segment_sorted_count(a->reader, key->fieldno, doc);

			/* a multi-valued doc sorts by its least value ascending, its greatest descending */
			v->missing = n == 0;
			if (n > 0)
				v->str = (char *) se_segment_sorted_value(a->reader, key->fieldno, doc,
														  key->desc ? n - 1 : 0, &v->len);
		}
		else
		{
			const int64 *vals;
			int			n = se_segment_numeric_values(a->reader, key->fieldno, doc, &vals);

			v->missing = n == 0;
			if (n > 0)
				v->num = num_as_double(key->kind, key->desc ? vals[n - 1] : vals[0]);
		}
	}
	st->count++;
	top_hit_add(st, &h);
}

/* exact_sum: add a 128-bit two's complement (hi, lo) to st's */
static void
xsum_add(AggState *st, int64 hi, uint64 lo)
{
	uint64		sum_lo = st->xsum_lo + lo;

	st->xsum_hi = (int64) ((uint64) st->xsum_hi + (uint64) hi + (sum_lo < lo ? 1 : 0));
	st->xsum_lo = sum_lo;
}

/* ES's GeoTileUtils: the tile of a point at zoom z, "z/x/y" */
static int
geotile_key(double lat, double lon, int z, char *out)
{
	double		tiles = ldexp(1.0, z);
	double		lat_sin;
	double		x,
				y;

	lat = Max(-85.05112878, Min(85.05112878, lat));
	lat_sin = cos(M_PI / 2 - lat * (M_PI / 180.0));
	x = floor((lon + 180.0) / 360.0 * tiles);
	y = floor((0.5 - log((1 + lat_sin) / (1 - lat_sin)) / (4 * M_PI)) * tiles);
	x = Max(0, Min(tiles - 1, x));
	y = Max(0, Min(tiles - 1, y));
	return snprintf(out, 64, "%d/%.0f/%.0f", z, x, y);
}

/*
 * A doc's points into a geo aggregation: geo_distance's ranges (a doc once
 * per range one of its points is in), a grid's cells (once per cell),
 * geo_bounds' extent, geo_centroid's sums (in sum and sumsq: lat, lon).
 */
static void
geo_collect(AggState *st, int32 doc)
{
	const SeAggSpec *a = st->spec;
	const int64 *vals = NULL;
	int64	   *pts;
	int			n = a->fieldno >= 0 ? se_segment_numeric_values(a->reader, a->fieldno, doc, &vals) : 0;
	int			i,
				j;

	if (n == 0)
		return;
	/* the reader's buffer lasts until its next call (sub-aggregations) */
	pts = palloc(sizeof(int64) * n);
	memcpy(pts, vals, sizeof(int64) * n);
	if (a->geo == GEO_DISTANCE)
	{
		double	   *d = palloc(sizeof(double) * n);

		for (i = 0; i < n; i++)
		{
			double		lat,
						lon;

			se_geo_decode(pts[i], &lat, &lon);
			d[i] = (a->geo_arc ? se_geo_arc_meters(a->origin.lat, a->origin.lon, lat, lon) :
					se_geo_plane_meters(a->origin.lat, a->origin.lon, lat, lon)) / a->geo_unit;
		}
		for (j = 0; j < a->nranges; j++)
		{
			const AggRange *rg = &a->ranges[j];

			for (i = 0; i < n; i++)
				if ((!rg->has_from || d[i] >= rg->from) && (!rg->has_to || d[i] < rg->to))
				{
					collect_bucket(st->b[j], a, doc);
					break;
				}
		}
		pfree(d);
	}
	else if (a->geo == GEO_HASH_GRID || a->geo == GEO_TILE_GRID)
	{
		char	  **keys = palloc(sizeof(char *) * n);
		int			nk = 0;

		for (i = 0; i < n; i++)
		{
			char		key[64];
			double		lat,
						lon;
			bool		dup = false;

			se_geo_decode(pts[i], &lat, &lon);
			if (a->has_geo_bounds &&
				(lat > a->gtop || lat < a->gbottom ||
				 (a->gleft <= a->gright ? (lon < a->gleft || lon > a->gright)
				  : (lon < a->gleft && lon > a->gright))))
				continue;
			if (a->geo == GEO_HASH_GRID)
				se_geohash_of_encoded(pts[i], a->precision, key);
			else
				geotile_key(lat, lon, a->precision, key);
			for (j = 0; j < nk && !dup; j++)
				dup = strcmp(keys[j], key) == 0;
			if (dup)
				continue;
			keys[nk++] = pstrdup(key);
			collect_bucket(bucket_get(st, key, strlen(key), true), a, doc);
		}
		for (j = 0; j < nk; j++)
			pfree(keys[j]);
		pfree(keys);
	}
	else
	{
		for (i = 0; i < n; i++)
		{
			double		lat,
						lon;

			se_geo_decode(pts[i], &lat, &lon);
			st->count++;
			if (a->type == AT_GEO_CENTROID)
			{
				st->sum += lat;
				st->sumsq += lon;
				continue;
			}
			st->min = Min(st->min, lat);
			st->max = Max(st->max, lat);
			if (lon >= 0)
			{
				st->pos_left = Min(st->pos_left, lon);
				st->pos_right = Max(st->pos_right, lon);
			}
			else
			{
				st->neg_left = Min(st->neg_left, lon);
				st->neg_right = Max(st->neg_right, lon);
			}
		}
	}
	pfree(pts);
}

static void
collect_one(AggState *st, int32 doc)
{
	const SeAggSpec *a = st->spec;
	SeSegmentReader *r = a->reader;
	const int64 *vals = NULL;
	int64		mbuf;
	int			n = 0,
				i;

	if (IS_PIPELINE(a->type))
		return;
	if (a->geo != GEO_NONE || a->type == AT_GEO_BOUNDS || a->type == AT_GEO_CENTROID)
	{
		geo_collect(st, doc);
		return;
	}
	switch (a->type)
	{
		case AT_COMPOSITE:
			composite_collect(st, doc);
			return;
		case AT_TOP_HITS:
			top_hits_collect(st, doc);
			return;
		case AT_FILTER:
		case AT_FILTERS:
			if (a->reverse_nested)
			{
				int32		parent;

				if (a->nested_level == NULL)
					return;
				for (parent = doc + 1; parent < (int32) se_segment_max_doc(a->reader); parent++)
					if ((a->nested_level[parent >> 6] >> (parent & 63)) & 1)
						break;
				if (parent >= (int32) se_segment_max_doc(a->reader) ||
					st->rn_last == collect_doc_base + parent + 1)
					return;
				st->rn_last = collect_doc_base + parent + 1;
				collect_bucket(st->b[0], a, parent);
				return;
			}
			if (a->nested_path != NULL)
			{
				nested_collect(st, a, doc);
				return;
			}
			for (i = 0; i < a->nfilters; i++)
				if (filter_matches(a->scorers[i], doc))
					collect_bucket(st->b[i], a, doc);
			return;
		case AT_MISSING:
			if (a->fieldno < 0)
				n = 0;
			else if (a->kind == KK_STR)
				n = se_segment_sorted_count(r, a->fieldno, doc);
			else
				n = se_segment_numeric_values(r, a->fieldno, doc, &vals);
			if (n == 0)
				collect_bucket(st->b[0], a, doc);
			return;
		default:
			break;
	}

	if (a->type == AT_SIGNIFICANT_TERMS)
		st->count++;			/* the subset's size */
	if (a->kind == KK_STR)
	{
		int			len;
		const char *s;

		n = a->fieldno >= 0 ? se_segment_sorted_count(r, a->fieldno, doc) : 0;
		if (a->type == AT_VALUE_COUNT)
		{
			st->count += n;
			return;
		}
		if (a->type == AT_CARDINALITY)
		{
			for (i = 0; i < n; i++)
			{
				s = se_segment_sorted_value(r, a->fieldno, doc, i, &len);
				card_add(st, se_hll_hash(s, len));
			}
			return;
		}
		/* terms on a keyword: sorted-set values are distinct per doc */
		for (i = 0; i < n; i++)
		{
			s = se_segment_sorted_value(r, a->fieldno, doc, i, &len);
			if (term_kept(a, s, len, true))
				collect_bucket(bucket_get(st, s, len, true), a, doc);
		}
		if (n == 0 && a->missing != NULL)
		{
			const SeJson *m = a->missing;
			const char *ms = m->type == SE_JSON_STRING ? m->u.s.str : m->type == SE_JSON_NUMBER ? m->u.n.text : "";
			int			ml = m->type == SE_JSON_STRING ? m->u.s.len : m->type == SE_JSON_NUMBER ? m->u.n.len : 0;

			collect_bucket(bucket_get(st, ms, ml, true), a, doc);
		}
		return;
	}

	if (a->fieldno >= 0)
		n = se_segment_numeric_values(r, a->fieldno, doc, &vals);
	if (n == 0 && (vals = missing_value(a, &mbuf)) != NULL)
		n = 1;
	if (a->type == AT_CARDINALITY)
	{
		for (i = 0; i < n; i++)
			card_add(st, se_hll_hash(&vals[i], 8));
		return;
	}
	if (a->type == AT_PERCENTILES || a->type == AT_PERCENTILE_RANKS)
	{
		for (i = 0; i < n; i++)
		{
			double		d = num_as_double(a->kind, vals[i]);

			td_add(st, d, 1);
			st->count++;
			st->min = Min(st->min, d);
			st->max = Max(st->max, d);
		}
		return;
	}
	if (IS_METRIC(a->type))
	{
		if (a->exact_sum && a->kind != KK_DOUBLE)
			for (i = 0; i < n; i++)
			{
				xsum_add(st, vals[i] < 0 ? -1 : 0, (uint64) vals[i]);
				st->xmin = Min(st->xmin, vals[i]);
				st->xmax = Max(st->xmax, vals[i]);
			}
		for (i = 0; i < n; i++)
		{
			double		d = num_as_double(a->kind, vals[i]);

			st->count++;
			st->sum += d;
			st->sumsq += d * d;
			if (d < st->min)
				st->min = d;
			if (d > st->max)
				st->max = d;
		}
		return;
	}
	if (a->type == AT_RANGE || a->type == AT_DATE_RANGE)
	{
		int			j;

		for (j = 0; j < a->nranges; j++)
		{
			const AggRange *rg = &a->ranges[j];

			for (i = 0; i < n; i++)
			{
				double		d = num_as_double(a->kind, vals[i]);

				if ((!rg->has_from || d >= rg->from) && (!rg->has_to || d < rg->to))
				{
					collect_bucket(st->b[j], a, doc);
					break;
				}
			}
		}
		return;
	}
	{
		/* terms, histograms: a key per value, each key once per doc */
		char		prev[8];
		bool		has_prev = false;

		for (i = 0; i < n; i++)
		{
			char		key[8];

			if (a->type == AT_TERMS)
			{
				if (a->kind == KK_DOUBLE)
				{
					double		d = se_sortable_to_double(vals[i]);

					memcpy(key, &d, 8);
				}
				else
					memcpy(key, &vals[i], 8);
				if (!term_kept(a, key, 8, false))
					continue;
			}
			else if (a->type == AT_HISTOGRAM)
			{
				double		d = num_as_double(a->mf && a->mf->type != SE_FT_DOUBLE &&
											  a->mf->type != SE_FT_FLOAT ? KK_LONG : KK_DOUBLE,
											  vals[i]);
				double		k = floor((d - a->offset) / a->interval) * a->interval + a->offset;

				memcpy(key, &k, 8);
			}
			else
			{
				int64		k = date_key(a, vals[i]);

				memcpy(key, &k, 8);
			}
			if (has_prev && memcmp(prev, key, 8) == 0)
				continue;
			memcpy(prev, key, 8);
			has_prev = true;
			collect_bucket(bucket_get(st, key, 8, true), a, doc);
		}
	}
}

static void
collect_states(AggState **states, int n, int32 doc)
{
	int			i;

	for (i = 0; i < n; i++)
		collect_one(states[i], doc);
}

void
se_aggs_collect(SeAggsShard *as, int32 doc, float score)
{
	collect_score = score;
	collect_states(as->states, as->aggs->n, doc);
}

/* Has this top_hits a _score key among its sort keys? */
static bool
top_hits_sorts_by_score(const SeAggSpec *a)
{
	int			k;

	for (k = 0; k < a->nthsort; k++)
		if (a->thsort[k].field == NULL && !a->thsort[k].is_doc)
			return true;
	return false;
}

bool
se_aggs_need_scores(const SeAggs *aggs)
{
	int			i;

	for (i = 0; aggs != NULL && i < aggs->n; i++)
	{
		const SeAggSpec *a = aggs->specs[i];

		if ((a->type == AT_TOP_HITS && (!a->sort_by_field || top_hits_sorts_by_score(a))) ||
			se_aggs_need_scores(&(SeAggs) {a->nsub, a->sub}))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Ordering and cutting buckets
 * ---------------------------------------------------------------------
 */

static double
metric_value(const AggState *m, const char *metric)
{
	AggType		t = m->spec->type;
	double		avg = m->count ? m->sum / m->count : NAN;

	if (IS_PIPELINE(t))
		return m->pvalue;
	if (t == AT_CARDINALITY)
		return (double) card_value(m);
	if ((t == AT_PERCENTILES || t == AT_PERCENTILE_RANKS) && metric != NULL)
	{
		double		x = strtod(metric, NULL);

		return t == AT_PERCENTILES ? td_quantile((AggState *) m, x / 100)
			: td_rank((AggState *) m, x);
	}
	if (metric == NULL)
		metric = type_names[t];
	if (strcmp(metric, "min") == 0)
		return m->count ? m->min : NAN;
	if (strcmp(metric, "max") == 0)
		return m->count ? m->max : NAN;
	if (strcmp(metric, "sum") == 0)
		return m->sum;
	if (strcmp(metric, "avg") == 0)
		return avg;
	if (strcmp(metric, "count") == 0 || strcmp(metric, "value_count") == 0)
		return (double) m->count;
	if (strcmp(metric, "sum_of_squares") == 0)
		return m->sumsq;
	if (strcmp(metric, "variance") == 0 || strcmp(metric, "std_deviation") == 0)
	{
		double		var = m->count ? Max(0.0, m->sumsq / m->count - avg * avg) : NAN;

		return metric[0] == 'v' ? var : sqrt(var);
	}
	return NAN;
}

static int
key_cmp(KeyKind kind, const Bucket *x, const Bucket *y)
{
	if (kind == KK_STR || x->keylen != 8 || y->keylen != 8)
	{
		int			c = memcmp(x->key, y->key, Min(x->keylen, y->keylen));

		return c != 0 ? c : (x->keylen > y->keylen) - (x->keylen < y->keylen);
	}
	if (kind == KK_DOUBLE)
	{
		double		a,
					b;

		memcpy(&a, x->key, 8);
		memcpy(&b, y->key, 8);
		return (a > b) - (a < b);
	}
	else
	{
		int64		a,
					b;

		memcpy(&a, x->key, 8);
		memcpy(&b, y->key, 8);
		return (a > b) - (a < b);
	}
}

static int
bucket_cmp(const void *pa, const void *pb, void *arg)
{
	const AggState *st = arg;
	const Bucket *x = *(Bucket *const *) pa;
	const Bucket *y = *(Bucket *const *) pb;
	int			i,
				c = 0;

	for (i = 0; i < st->spec->norder && c == 0; i++)
	{
		const AggOrder *o = &st->spec->order[i];

		if (o->by == ORD_COUNT)
			c = (x->doc_count > y->doc_count) - (x->doc_count < y->doc_count);
		else if (o->by == ORD_KEY)
			c = key_cmp(st->kind, x, y);
		else
		{
			double		a = metric_value(x->subs[o->sub], o->metric);
			double		b = metric_value(y->subs[o->sub], o->metric);

			/* buckets without a value go last either way */
			if (isnan(a) || isnan(b))
			{
				c = isnan(a) - isnan(b);
				continue;
			}
			c = (a > b) - (a < b);
		}
		if (o->desc)
			c = -c;
	}
	if (c == 0 && st->spec->order[0].by == ORD_COUNT)
		c = key_cmp(st->kind, x, y);
	else if (c == 0)
		c = (x->doc_count < y->doc_count) - (x->doc_count > y->doc_count);
	if (c == 0)
		c = key_cmp(st->kind, x, y);
	return c;
}

static void
sort_buckets(AggState *st)
{
	if (st->nb > 1)
		qsort_arg(st->b, st->nb, sizeof(Bucket *), bucket_cmp, st);
}

static bool
count_desc(const SeAggSpec *a)
{
	return a->order[0].by == ORD_COUNT && a->order[0].desc;
}

/*
 * significant_terms' score of a term from four counts: the docs aggregated
 * here (the subset) with the term and in all, and the docs of the index
 * (the superset) with it and in all -- ES's SignificanceHeuristic
 * implementations, formula for formula, so scores match ES's digits.
 * Scores of 0 or below (and -Infinity: a term rarer in the subset, when
 * negatives are excluded) drop the bucket at the reduce, as in ES.
 */
typedef struct SigFreq
{
	double		n00,
				n01,
				n10,
				n11,
				n0_,
				n1_,
				n_0,
				n_1,
				n;
} SigFreq;

/* ES's NXYSignificanceHeuristic.computeNxys: the 2x2 contingency table */
static void
sig_nxy(const SeAggSpec *a, double sf, double ss, double bf, double bs, SigFreq *f)
{
	if (a->sig_superset)
	{
		f->n00 = bs - bf - (ss - sf);
		f->n01 = ss - sf;
		f->n10 = bf - sf;
		f->n11 = sf;
		f->n0_ = bs - bf;
		f->n1_ = bf;
		f->n_0 = bs - ss;
		f->n_1 = ss;
		f->n = bs;
	}
	else
	{
		f->n00 = bs - bf;
		f->n01 = ss - sf;
		f->n10 = bf;
		f->n11 = sf;
		f->n0_ = bs - bf + ss - sf;
		f->n1_ = bf + sf;
		f->n_0 = bs;
		f->n_1 = ss;
		f->n = bs + ss;
	}
}

/* one term of mutual information's sum (ES's getMITerm) */
static double
mi_term(double nxy, double nx_, double n_y, double n)
{
	double		numerator = fabs(n * nxy);
	double		denominator = fabs(nx_ * n_y);
	double		factor = fabs(nxy / n);

	if (numerator < 1e-7 && factor < 1e-7)
		return 0.0;
	return factor * log(numerator / denominator);
}

static double
sig_score(const AggState *st, const Bucket *bk)
{
	const SeAggSpec *a = st->spec;
	double		sf = (double) bk->doc_count,
				ss = (double) st->count,
				bf = (double) bk->bg,
				bs = (double) st->bg_size;
	SigFreq		f;
	double		score;

	switch (a->sig)
	{
		case SIG_PERCENTAGE:
			return bf == 0 ? 0 : sf / bf;
		case SIG_JLH:
			{
				double		sp,
							bp;

				if (ss == 0 || bs == 0)
					return 0;
				/* a background that is not a superset may lack the term */
				if (bf == 0)
					bf = 1;
				sp = sf / ss;
				bp = bf / bs;
				return sp - bp <= 0 ? 0 : (sp - bp) * (sp / bp);
			}
		case SIG_GND:
			sig_nxy(a, sf, ss, bf, bs, &f);
			if (f.n11 == 0)
				return 0;		/* no co-occurrence */
			if (f.n1_ == f.n_1 && f.n1_ == f.n11)
				return 1;		/* perfect co-occurrence */
			score = (Max(log(f.n1_), log(f.n_1)) - log(f.n11)) /
				(log(f.n) - Min(log(f.n1_), log(f.n_1)));
			/* GND scores related terms low: inverted */
			return exp(-score);
		case SIG_CHI_SQUARE:
			sig_nxy(a, sf, ss, bf, bs, &f);
			if (!a->sig_negatives && f.n11 / f.n_1 < f.n10 / f.n_0)
				return -INFINITY;
			return f.n * pow(f.n11 * f.n00 - f.n01 * f.n10, 2.0) /
				(f.n_1 * f.n1_ * f.n0_ * f.n_0);
		case SIG_MUTUAL_INFORMATION:
			sig_nxy(a, sf, ss, bf, bs, &f);
			score = (mi_term(f.n00, f.n0_, f.n_0, f.n) +
					 mi_term(f.n01, f.n0_, f.n_1, f.n) +
					 mi_term(f.n10, f.n1_, f.n_0, f.n) +
					 mi_term(f.n11, f.n1_, f.n_1, f.n)) / log(2.0);
			if (isnan(score))
				score = -INFINITY;
			if (!a->sig_negatives && f.n11 / f.n_1 < f.n10 / f.n_0)
				score = -INFINITY;
			return score;
	}
	return 0;
}

static int
sig_cmp(const void *pa, const void *pb, void *arg)
{
	const AggState *st = arg;
	const Bucket *x = *(Bucket *const *) pa;
	const Bucket *y = *(Bucket *const *) pb;
	double		a = sig_score(st, x),
				b = sig_score(st, y);

	if (a != b)
		return a > b ? -1 : 1;
	if (x->doc_count != y->doc_count)
		return x->doc_count > y->doc_count ? -1 : 1;
	return key_cmp(st->kind, x, y);
}

/*
 * Calls fn on each bucket aggregation of states[0..n) and, below it, of
 * its buckets' sub-aggregations (parent first, so the buckets fn adds get
 * theirs visited too).
 */
static void
visit_bucket_aggs(AggState **states, int n, SeSearchShard *shard,
				  void (*fn) (AggState *st, SeSearchShard *shard))
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		AggState   *st = states[i];
		const SeAggSpec *a = st->spec;

		if (IS_METRIC(a->type) || IS_PIPELINE(a->type))
			continue;
		fn(st, shard);
		for (j = 0; j < st->nb; j++)
			visit_bucket_aggs(st->b[j]->subs, a->nsub, shard, fn);
	}
}

/*
 * The superset on this shard: its live docs, and per term the docs of the
 * index that have it (the term dictionary's doc_freq, summed over the
 * segments).
 */
static void
sig_background(AggState *st, SeSearchShard *shard)
{
	const SeAggSpec *a = st->spec;
	int			j,
				s;

	if (a->type != AT_SIGNIFICANT_TERMS || a->mf == NULL)
		return;
	for (s = 0; s < shard->nsegments; s++)
	{
		SeSegmentReader *r = shard->segments[s];
		const uint64 *live = shard->live_docs ? shard->live_docs[s] : NULL;
		uint32		max_doc = se_segment_max_doc(r);
		int			f = se_segment_field(r, a->mf->path);

		st->bg_size += live ? se_livedocs_count(live, max_doc) : max_doc;
		for (j = 0; f >= 0 && j < st->nb; j++)
		{
			SeTermInfo	ti;

			SE_SEARCH_TICK(1);
			if (se_segment_seek_exact(r, f, st->b[j]->key, st->b[j]->keylen, &ti))
				st->b[j]->bg += ti.doc_freq;
		}
	}
}

/*
 * terms with min_doc_count 0: every value of the field on this shard gets
 * a bucket, count 0 when no matching doc has it -- as ES fills the blanks
 * (the segment's whole sorted-set dictionary for keywords, the values of
 * every doc for numbers, deleted docs' included as in ES), include/exclude
 * still applying.  Like ES it is skipped when count order already has
 * shard_size buckets.  The new buckets' sub-aggregations are filled too.
 */
static void
fill_unseen_terms(AggState *st, SeSearchShard *shard)
{
	const SeAggSpec *a = st->spec;
	int			s;

	if (a->type != AT_TERMS || a->min_doc_count != 0 || a->mf == NULL ||
		(count_desc(a) && st->nb >= a->shard_size))
		return;
	for (s = 0; s < shard->nsegments; s++)
	{
		SeSegmentReader *r = shard->segments[s];
		int			f = se_segment_field(r, a->mf->path);
		int64		o,
					nd;
		int32		doc,
					max_doc = (int32) se_segment_max_doc(r);

		if (f < 0)
			continue;
		if (a->kind == KK_STR)
		{
			nd = se_segment_sorted_dict_size(r, f);
			for (o = 0; o < nd; o++)
			{
				int			len;
				const char *v = se_segment_sorted_dict_value(r, f, o, &len);

				SE_SEARCH_TICK(1);
				if (v != NULL && term_kept(a, v, len, true))
					bucket_get(st, v, len, true);
			}
			continue;
		}
		for (doc = 0; doc < max_doc; doc++)
		{
			const int64 *vals;
			int			nv = se_segment_numeric_values(r, f, doc, &vals);
			int			k;

			SE_SEARCH_TICK(1);
			for (k = 0; k < nv; k++)
			{
				char		key[8];

				if (a->kind == KK_DOUBLE)
				{
					double		d = se_sortable_to_double(vals[k]);

					memcpy(key, &d, 8);
				}
				else
					memcpy(key, &vals[k], 8);
				if (term_kept(a, key, 8, false))
					bucket_get(st, key, 8, true);
			}
		}
	}
}

/*
 * A shard's terms cut to shard_size, recursively, and its digests merged,
 * so that a partial is the same whether it is reduced here or encoded.
 */
static void
shard_cut(AggState **states, int n)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		AggState   *st = states[i];
		const SeAggSpec *a = st->spec;

		for (j = 0; j < st->nb; j++)
			shard_cut(st->b[j]->subs, a->nsub);
		/* digests leave a shard merged, whether they travel or not */
		if (a->type == AT_PERCENTILES || a->type == AT_PERCENTILE_RANKS)
			td_compress(st);
		if (a->type == AT_COMPOSITE)
			composite_cut(st);
		if (a->type == AT_SIGNIFICANT_TERMS)
		{
			if (st->nb > 1)
				qsort_arg(st->b, st->nb, sizeof(Bucket *), sig_cmp, st);
			st->nb = Min(st->nb, a->shard_size);
			st->ht = NULL;
			st->htcap = 0;
		}
		if (a->type != AT_TERMS)
			continue;
		sort_buckets(st);
		st->err = 0;
		if (st->nb > a->shard_size)
		{
			for (j = a->shard_size; j < st->nb; j++)
				st->other += st->b[j]->doc_count;
			st->nb = a->shard_size;
			st->err = count_desc(a) ? st->b[st->nb - 1]->doc_count
				: a->order[0].by == ORD_KEY ? 0 : -1;
		}
		st->ht = NULL;
		st->htcap = 0;
	}
}

/* Release the segment's scorers: the specs may be bound to another shard next. */
static void
unbind_specs(SeAggSpec **specs, int n)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		SeAggSpec  *a = specs[i];

		for (j = 0; j < a->nfilters; j++)
		{
			if (a->scorers != NULL && a->scorers[j] != NULL)
				se_scorer_free(a->scorers[j]);
			if (a->scorers != NULL)
				a->scorers[j] = NULL;
		}
		a->reader = NULL;
		a->fieldno = -1;
		unbind_specs(a->sub, a->nsub);
		unbind_specs(a->src, a->nsrc);
	}
}

/*
 * top_hits docs get their _id and _source on the shard, as ES's top_hits
 * fetches in the shard's query phase: the partial carries them anywhere.
 */
static void
top_hits_fetch(AggState **states, int n, SeSearchShard *shard)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		AggState   *st = states[i];

		for (j = 0; j < st->nb; j++)
			top_hits_fetch(st->b[j]->subs, st->spec->nsub, shard);
		if (st->spec->type != AT_TOP_HITS)
			continue;
		/* the keys' kinds as this shard's mapping has them, for the reduce */
		if (st->spec->nthsort > 0 && st->thkind == NULL)
		{
			int			k;

			st->thkind = palloc(sizeof(KeyKind) * st->spec->nthsort);
			for (k = 0; k < st->spec->nthsort; k++)
				st->thkind[k] = st->spec->thsort[k].kind;
		}
		for (j = 0; j < st->nth; j++)
		{
			TopHit	   *h = &st->th[j];
			SeSearchRequest fr;
			SeHit		hit;
			SeError		e;

			memset(&fr, 0, sizeof(fr));
			fr.source = st->spec->source;
			memset(&hit, 0, sizeof(hit));
			se_error_init(&e);
			SE_SEARCH_TICK(16);
			h->index = pstrdup(shard->index ? shard->index : "");
			if (!se_search_fetch_doc(&fr, shard, h->seg, h->doc, &hit, &e))
			{
				h->id = pstrdup("");	/* a corrupt doc: listed without its source */
				continue;
			}
			h->id = hit.id;
			if (hit.has_source)
			{
				h->source = hit.source.data;
				h->srclen = hit.source.len;
			}
		}
	}
}

SeAggPartial *
se_aggs_shard_end(SeAggsShard *as)
{
	SeAggPartial *p = palloc0(sizeof(SeAggPartial));

	visit_bucket_aggs(as->states, as->aggs->n, as->shard, fill_unseen_terms);
	visit_bucket_aggs(as->states, as->aggs->n, as->shard, sig_background);
	shard_cut(as->states, as->aggs->n);
	top_hits_fetch(as->states, as->aggs->n, as->shard);
	unbind_specs(as->aggs->specs, as->aggs->n);
	p->aggs = as->aggs;
	p->n = as->aggs->n;
	p->states = as->states;
	return p;
}

/* ---------------------------------------------------------------------
 * Wire form
 * ---------------------------------------------------------------------
 */

static void
put_double(StringInfo out, double d)
{
	uint64		bits;

	memcpy(&bits, &d, 8);
	se_put_vint(out, bits);
}

static double
get_double(SeWireReader *r)
{
	uint64		bits = se_wire_vint(r);
	double		d;

	memcpy(&d, &bits, 8);
	return d;
}

static void
put_states(StringInfo out, AggState **states, int n)
{
	int			i,
				j,
				k;

	for (i = 0; i < n; i++)
	{
		AggState   *st = states[i];

		se_put_vint(out, (uint64) st->kind);
		if (IS_PIPELINE(st->spec->type))
			continue;
		if (IS_METRIC(st->spec->type))
		{
			se_put_svint(out, st->count);
			put_double(out, st->sum);
			put_double(out, st->sumsq);
			put_double(out, st->min);
			put_double(out, st->max);
			if (st->spec->exact_sum)
			{
				se_put_svint(out, st->xsum_hi);
				se_put_vint(out, st->xsum_lo);
				se_put_svint(out, st->xmin);
				se_put_svint(out, st->xmax);
			}
			if (st->spec->type == AT_GEO_BOUNDS)
			{
				put_double(out, st->pos_left);
				put_double(out, st->pos_right);
				put_double(out, st->neg_left);
				put_double(out, st->neg_right);
			}
			if (st->spec->type == AT_TOP_HITS)
			{
				for (k = 0; k < st->spec->nthsort; k++)
					se_put_vint(out, (uint64) th_kind(st, k));
				se_put_vint(out, (uint64) st->nth);
				for (j = 0; j < st->nth; j++)
				{
					const TopHit *h = &st->th[j];

					se_put_float(out, h->score);
					for (k = 0; k < st->spec->nthsort; k++)
					{
						const ThValue *v = &h->vals[k];

						se_put_vint(out, v->missing ? 1 : 0);
						put_double(out, v->num);
						se_put_str(out, v->str, v->str ? v->len : 0);
					}
					se_put_str(out, h->index, h->index ? strlen(h->index) : 0);
					se_put_str(out, h->id, h->id ? strlen(h->id) : 0);
					se_put_vint(out, h->source ? 1 : 0);
					se_put_str(out, h->source, h->srclen);
				}
			}
			if (st->spec->type == AT_PERCENTILES || st->spec->type == AT_PERCENTILE_RANKS)
			{
				td_compress(st);
				se_put_vint(out, (uint64) st->nc);
				for (j = 0; j < st->nc; j++)
				{
					put_double(out, st->cmean[j]);
					put_double(out, st->cweight[j]);
				}
			}
			if (st->spec->type == AT_CARDINALITY)
			{
				se_put_vint(out, (uint64) (st->regs ? st->precision : 0));
				if (st->regs)
					se_put_str(out, (char *) st->regs, 1 << st->precision);
				else
				{
					se_put_vint(out, (uint64) st->hcount);
					for (j = 0; j < st->hcap; j++)
						if (st->hset[j] != 0)
							se_put_vint(out, st->hset[j]);
				}
			}
			continue;
		}
		se_put_svint(out, st->other);
		se_put_svint(out, st->err);
		se_put_svint(out, st->count);
		se_put_svint(out, st->bg_size);
		se_put_vint(out, (uint64) st->nb);
		for (j = 0; j < st->nb; j++)
		{
			Bucket	   *bk = st->b[j];

			se_put_str(out, bk->key, bk->keylen);
			se_put_svint(out, bk->doc_count);
			se_put_svint(out, bk->err);
			se_put_svint(out, bk->bg);
			put_states(out, bk->subs, st->spec->nsub);
		}
	}
}

void
se_aggs_encode(const SeAggPartial *p, StringInfo out)
{
	put_states(out, p->states, p->n);
}

static bool
get_states(SeWireReader *r, SeAggSpec **specs, int n, AggState **states)
{
	int			i;
	uint64		j,
				nb;

	for (i = 0; i < n && !r->bad; i++)
	{
		uint64		kind = se_wire_vint(r);
		AggState   *st;

		if (kind > KK_BOOL)
			return false;
		st = states[i] = state_new(specs[i], (KeyKind) kind);
		if (IS_PIPELINE(specs[i]->type))
			continue;
		if (IS_METRIC(specs[i]->type))
		{
			st->count = se_wire_svint(r);
			st->sum = get_double(r);
			st->sumsq = get_double(r);
			st->min = get_double(r);
			st->max = get_double(r);
			if (specs[i]->exact_sum)
			{
				st->xsum_hi = se_wire_svint(r);
				st->xsum_lo = se_wire_vint(r);
				st->xmin = se_wire_svint(r);
				st->xmax = se_wire_svint(r);
			}
			if (specs[i]->type == AT_GEO_BOUNDS)
			{
				st->pos_left = get_double(r);
				st->pos_right = get_double(r);
				st->neg_left = get_double(r);
				st->neg_right = get_double(r);
			}
			if (specs[i]->type == AT_TOP_HITS)
			{
				uint64		nth;
				int			k;

				/* the shard's kinds of the sort keys, then the docs */
				if (specs[i]->nthsort > 0)
				{
					st->thkind = palloc(sizeof(KeyKind) * specs[i]->nthsort);
					for (k = 0; k < specs[i]->nthsort; k++)
					{
						uint64		kk = se_wire_vint(r);

						if (kk > KK_BOOL)
							return false;
						st->thkind[k] = (KeyKind) kk;
					}
				}
				nth = se_wire_vint(r);

				if (r->bad || nth > (uint64) (specs[i]->from + specs[i]->size))
					return false;
				for (j = 0; j < nth && !r->bad; j++)
				{
					TopHit		h;

					memset(&h, 0, sizeof(h));
					h.score = se_wire_float(r);
					h.vals = palloc0(sizeof(ThValue) * Max(1, specs[i]->nthsort));
					for (k = 0; k < specs[i]->nthsort; k++)
					{
						h.vals[k].missing = se_wire_vint(r) != 0;
						h.vals[k].num = get_double(r);
						h.vals[k].str = se_wire_str(r, &h.vals[k].len);
					}
					h.index = se_wire_str(r, NULL);
					h.id = se_wire_str(r, NULL);
					if (se_wire_vint(r) != 0)
					{
						h.source = se_wire_str(r, &h.srclen);
						if (h.source == NULL)
							h.source = pstrdup("");
					}
					else
						(void) se_wire_str(r, NULL);
					top_hit_add(st, &h);
				}
			}
			if (specs[i]->type == AT_PERCENTILES || specs[i]->type == AT_PERCENTILE_RANKS)
			{
				uint64		nc = se_wire_vint(r);

				/* each centroid takes at least 2 bytes */
				if (r->bad || nc > (uint64) (r->end - r->p) / 2)
					return false;
				for (j = 0; j < nc && !r->bad; j++)
				{
					double		m = get_double(r);

					td_add(st, m, get_double(r));
				}
			}
			if (specs[i]->type == AT_CARDINALITY)
			{
				uint64		p = se_wire_vint(r);

				if (p != 0)
				{
					int			len;

					if (p != (uint64) card_precision(Min(specs[i]->precision_threshold,
														   CARD_MAX_THRESHOLD)))
						return false;
					st->precision = (int) p;
					st->regs = (uint8 *) se_wire_str(r, &len);
					if (st->regs == NULL || len != (1 << p))
						return false;
				}
				else
				{
					uint64		nh = se_wire_vint(r);

					if (r->bad || nh > (uint64) (r->end - r->p))
						return false;
					for (j = 0; j < nh && !r->bad; j++)
						card_add(st, se_wire_vint(r));
				}
			}
			continue;
		}
		st->other = se_wire_svint(r);
		st->err = se_wire_svint(r);
		st->count = se_wire_svint(r);
		st->bg_size = se_wire_svint(r);
		nb = se_wire_vint(r);
		/* each bucket takes at least 4 bytes: no allocation beyond the message */
		if (r->bad || nb > (uint64) (r->end - r->p) / 4)
			return false;
		for (j = 0; j < nb && !r->bad; j++)
		{
			int			len;
			char	   *key = se_wire_str(r, &len);
			Bucket	   *bk;

			if (r->bad)
				return false;
			bk = bucket_add(st, key ? key : "", key ? len : 0,
							hash_bytes((const unsigned char *) (key ? key : ""), key ? len : 0),
							false);
			bk->doc_count = se_wire_svint(r);
			bk->err = se_wire_svint(r);
			bk->bg = se_wire_svint(r);
			if (!get_states(r, specs[i]->sub, specs[i]->nsub, bk->subs))
				return false;
		}
	}
	return !r->bad;
}

SeAggPartial *
se_aggs_decode(const SeAggs *aggs, const char *data, size_t len)
{
	SeAggPartial *p = palloc0(sizeof(SeAggPartial));
	SeWireReader r;

	se_wire_init(&r, data, len);
	p->aggs = aggs;
	p->n = aggs->n;
	p->states = palloc0(sizeof(AggState *) * Max(1, aggs->n));
	if (!get_states(&r, aggs->specs, aggs->n, p->states) || r.p != r.end)
		return NULL;
	return p;
}

/* ---------------------------------------------------------------------
 * Reduce
 * ---------------------------------------------------------------------
 */

static void merge_states(AggState **into, AggState **from, int n);

static void
merge_state(AggState *into, AggState *from)
{
	const SeAggSpec *a = into->spec;
	int64		ferr = Max(from->err, 0);
	int			j;

	if (into->kind == KK_NONE)
		into->kind = from->kind;
	if (IS_PIPELINE(a->type))
		return;
	if (a->type == AT_CARDINALITY)
	{
		card_merge(into, from);
		return;
	}
	if (a->type == AT_TOP_HITS)
	{
		if (into->thkind == NULL)
			into->thkind = from->thkind;
		for (j = 0; j < from->nth; j++)
			top_hit_add(into, &from->th[j]);
		into->count += from->count;
		return;
	}
	if (a->type == AT_PERCENTILES || a->type == AT_PERCENTILE_RANKS)
	{
		for (j = 0; j < from->nc; j++)
			td_add(into, from->cmean[j], from->cweight[j]);
		into->count += from->count;
		into->min = Min(into->min, from->min);
		into->max = Max(into->max, from->max);
		return;
	}
	if (IS_METRIC(a->type))
	{
		into->pos_left = Min(into->pos_left, from->pos_left);
		into->pos_right = Max(into->pos_right, from->pos_right);
		into->neg_left = Min(into->neg_left, from->neg_left);
		into->neg_right = Max(into->neg_right, from->neg_right);
		xsum_add(into, from->xsum_hi, from->xsum_lo);
		into->xmin = Min(into->xmin, from->xmin);
		into->xmax = Max(into->xmax, from->xmax);
		into->count += from->count;
		into->sum += from->sum;
		into->sumsq += from->sumsq;
		into->min = Min(into->min, from->min);
		into->max = Max(into->max, from->max);
		return;
	}
	if (has_fixed_buckets(a))
	{
		for (j = 0; j < into->nb && j < from->nb; j++)
		{
			into->b[j]->doc_count += from->b[j]->doc_count;
			merge_states(into->b[j]->subs, from->b[j]->subs, a->nsub);
		}
		return;
	}

	/*
	 * Terms: a bucket a shard did not return may have had up to that
	 * shard's error bound of docs there (ES's InternalTerms.reduce): a new
	 * bucket starts with the bounds of the shards merged before, a bucket
	 * from does not have gets from's.
	 */
	for (j = 0; j < into->nb; j++)
		into->b[j]->seen = false;
	for (j = 0; j < from->nb; j++)
	{
		Bucket	   *f = from->b[j];
		int			before = into->nb;
		Bucket	   *bk = bucket_get(into, f->key, f->keylen, false);

		if (into->nb > before)
			bk->err = into->err;
		bk->doc_count += f->doc_count;
		bk->bg += f->bg;
		bk->err += f->err;
		bk->seen = true;
		merge_states(bk->subs, f->subs, a->nsub);
	}
	for (j = 0; j < into->nb; j++)
		if (!into->b[j]->seen)
			into->b[j]->err += ferr;
	into->other += from->other;
	into->count += from->count;
	into->bg_size += from->bg_size;
	into->err += ferr;
	into->err_unknown |= from->err < 0;
}

static void
merge_states(AggState **into, AggState **from, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		merge_state(into[i], from[i]);
}

/* ---------------------------------------------------------------------
 * Final buckets and the response
 * ---------------------------------------------------------------------
 */

/* histogram keys: the i-th interval from base, computed as collection does */
static void
fill_gaps(AggState *st)
{
	const SeAggSpec *a = st->spec;
	bool		dates = a->type == AT_DATE_HISTOGRAM;
	double		lo = INFINITY,
				hi = -INFINITY;
	int			j;

	for (j = 0; j < st->nb; j++)
	{
		double		k;

		if (dates)
		{
			int64		v;

			memcpy(&v, st->b[j]->key, 8);
			k = (double) v;
		}
		else
			memcpy(&k, st->b[j]->key, 8);
		lo = Min(lo, k);
		hi = Max(hi, k);
	}
	if (a->has_bounds)
	{
		if (isfinite(a->bmin))
			lo = Min(lo, dates ? (double) date_key(a, (int64) a->bmin)
					 : floor((a->bmin - a->offset) / a->interval) * a->interval + a->offset);
		if (isfinite(a->bmax))
			hi = Max(hi, dates ? (double) date_key(a, (int64) a->bmax)
					 : floor((a->bmax - a->offset) / a->interval) * a->interval + a->offset);
	}
	if (!isfinite(lo) || !isfinite(hi))
		return;
	if (dates)
	{
		int64		k = (int64) lo;
		int64		n = 0;

		while (k <= (int64) hi && n++ < 1000000)
		{
			SE_SEARCH_TICK(1);
			(void) bucket_get(st, (char *) &k, 8, false);
			k = date_next_key(a, k);
		}
	}
	else
	{
		double		base = floor((lo - a->offset) / a->interval);
		double		i;

		for (i = 0; i <= floor((hi - a->offset) / a->interval) - base && i < 1000000; i++)
		{
			double		k = (base + i) * a->interval + a->offset;

			SE_SEARCH_TICK(1);
			(void) bucket_get(st, (char *) &k, 8, false);
		}
	}
}

/* The value of path ("_count", "m", "m.avg", "p>m") in a bucket; NaN if none. */
static double
bucket_path_value(const SeAggSpec *parent, const Bucket *bk, const char *path)
{
	char	   *name = pstrdup(path);
	char	   *rest = strchr(name, '>');
	char	   *metric;
	int			i;

	if (strcmp(path, "_count") == 0)
		return (double) bk->doc_count;
	if (rest)
		*rest++ = '\0';
	metric = rest ? NULL : strchr(name, '.');
	if (metric)
		*metric++ = '\0';
	for (i = 0; i < parent->nsub; i++)
	{
		const SeAggSpec *s = parent->sub[i];
		const AggState *st = bk->subs[i];

		if (strcmp(s->name, name) != 0)
			continue;
		if (rest != NULL)
		{
			/* a single-bucket aggregation (filter, missing) on the way */
			if (!(s->type == AT_FILTER || s->type == AT_MISSING) || st->nb != 1)
				return NAN;
			return bucket_path_value(s, st->b[0], rest);
		}
		if (IS_METRIC(s->type) || IS_PIPELINE(s->type))
			return metric_value(st, metric);
		return NAN;
	}
	return NAN;
}

typedef struct PipelineSort
{
	const SeAggSpec *ps;		/* the bucket_sort */
	const AggState *st;			/* the buckets' aggregation */
} PipelineSort;

/* bucket_sort's order; keys break ties so the order is the same every time */
static int
pipeline_sort_cmp(const void *pa, const void *pb, void *arg)
{
	const PipelineSort *o = arg;
	const SeAggSpec *ps = o->ps;
	const Bucket *x = *(Bucket *const *) pa;
	const Bucket *y = *(Bucket *const *) pb;
	int			i,
				c;

	for (i = 0; i < ps->nsort; i++)
	{
		if (strcmp(ps->sort_path[i], "_key") == 0)
			c = key_cmp(o->st->kind, x, y);
		else
		{
			double		a = bucket_path_value(o->st->spec, x, ps->sort_path[i]);
			double		b = bucket_path_value(o->st->spec, y, ps->sort_path[i]);

			if (isnan(a) || isnan(b))
			{
				c = isnan(a) - isnan(b);	/* without a value: last */
				if (c != 0)
					return c;
				continue;
			}
			c = (a > b) - (a < b);
		}
		if (ps->sort_desc[i])
			c = -c;
		if (c != 0)
			return c;
	}
	return key_cmp(o->st->kind, x, y);
}

/* Parent pipelines of st (in request order) over its final buckets. */
static void
parent_pipelines(AggState *st)
{
	const SeAggSpec *a = st->spec;
	int			k,
				j;

	for (k = 0; k < a->nsub; k++)
	{
		const SeAggSpec *ps = a->sub[k];
		double		sum = 0,
					last = NAN;

		if (!IS_PARENT_PIPELINE(ps->type))
			continue;
		if (ps->type == AT_BUCKET_SORT)
		{
			PipelineSort arg = {ps, st};
			int			from = Min(ps->from, st->nb);
			int			size = ps->size < 0 ? st->nb : ps->size;

			if (ps->nsort > 0 && st->nb > 1)
				qsort_arg(st->b, st->nb, sizeof(Bucket *), pipeline_sort_cmp, &arg);
			memmove(st->b, st->b + from, sizeof(Bucket *) * (st->nb - from));
			st->nb = Min(st->nb - from, size);
			continue;
		}
		for (j = 0; j < st->nb; j++)
		{
			double		v = bucket_path_value(a, st->b[j], ps->buckets_path);

			if (isnan(v) && ps->insert_zeros)
				v = 0;			/* gap_policy insert_zeros */
			if (ps->type == AT_CUMULATIVE_SUM)
			{
				if (!isnan(v))
					sum += v;
				st->b[j]->subs[k]->pvalue = sum;
			}
			else
			{
				if (!isnan(v) && !isnan(last))
					st->b[j]->subs[k]->pvalue = v - last;
				if (!isnan(v))
					last = v;
			}
		}
	}
}

/* Sibling pipelines among states: "agg>path" over agg's buckets. */
static void
sibling_pipelines(AggState **states, int n)
{
	int			i,
				k,
				j;

	for (i = 0; i < n; i++)
	{
		AggState   *ps = states[i];
		const SeAggSpec *p = ps->spec;
		char	   *name;
		char	   *path;
		double		acc = NAN;
		int			cnt = 0;

		if (!IS_PIPELINE(p->type) || IS_PARENT_PIPELINE(p->type))
			continue;
		name = pstrdup(p->buckets_path);
		path = strchr(name, '>');
		if (path)
			*path++ = '\0';
		for (k = 0; k < n; k++)
			if (strcmp(states[k]->spec->name, name) == 0 && !IS_METRIC(states[k]->spec->type) &&
				!IS_PIPELINE(states[k]->spec->type))
				break;
		if (k == n)
			continue;
		ps->pkeys = palloc(sizeof(char *) * Max(1, states[k]->nb));
		for (j = 0; j < states[k]->nb; j++)
		{
			const Bucket *bk = states[k]->b[j];
			double		v = bucket_path_value(states[k]->spec, bk, path ? path : "_count");
			bool		better;

			if (isnan(v))
				continue;
			cnt++;
			switch (p->type)
			{
				case AT_MAX_BUCKET:
				case AT_MIN_BUCKET:
					better = isnan(acc) || (p->type == AT_MAX_BUCKET ? v > acc : v < acc);
					if (better)
					{
						acc = v;
						ps->npkeys = 0;
					}
					if (v == acc)
						ps->pkeys[ps->npkeys++] = key_text(states[k], bk);
					break;
				default:
					acc = isnan(acc) ? v : acc + v;
					break;
			}
		}
		if (p->type == AT_AVG_BUCKET)
			ps->pvalue = cnt ? acc / cnt : NAN;
		else if (p->type == AT_SUM_BUCKET)
			ps->pvalue = cnt ? acc : 0;
		else
			ps->pvalue = acc;
	}
}

static void
finish_states(AggState **states, int n)
{
	int			i,
				j,
				keep;

	for (i = 0; i < n; i++)
	{
		AggState   *st = states[i];
		const SeAggSpec *a = st->spec;

		if (IS_METRIC(a->type) || IS_PIPELINE(a->type))
			continue;
		if (a->type == AT_COMPOSITE)
			composite_cut(st);
		else if (!has_fixed_buckets(a))
		{
			if (a->min_doc_count == 0 && !IS_TERMS(a->type))
				fill_gaps(st);
			if (a->type == AT_SIGNIFICANT_TERMS)
			{
				if (st->nb > 1)
					qsort_arg(st->b, st->nb, sizeof(Bucket *), sig_cmp, st);
			}
			else
				sort_buckets(st);
			keep = 0;
			for (j = 0; j < st->nb; j++)
			{
				if (st->b[j]->doc_count < a->min_doc_count)
					continue;
				if (a->type == AT_SIGNIFICANT_TERMS && !(sig_score(st, st->b[j]) > 0))
					continue;	/* ES keeps only terms that score above 0 */
				if (IS_TERMS(a->type) && keep >= a->size)
				{
					st->other += st->b[j]->doc_count;
					continue;
				}
				st->b[keep++] = st->b[j];
			}
			st->nb = keep;
		}
		for (j = 0; j < st->nb; j++)
			finish_states(st->b[j]->subs, a->nsub);
		parent_pipelines(st);
	}
	sibling_pipelines(states, n);
}

/*
 * A double as Java's Double.toString writes it (ES's numbers): the fewest
 * digits that read back the same, "1.0" for integral values, and
 * "1.0E7" notation outside [1e-3, 1e7).
 */
static void
write_double(StringInfo out, double d)
{
	char		buf[64];
	int			prec;
	char	   *e;

	if (!isfinite(d))
	{
		appendStringInfoString(out, "null");
		return;
	}
	if (d == 0 || (fabs(d) >= 1e-3 && fabs(d) < 1e7))
	{
		for (prec = 1; prec <= 17; prec++)
		{
			snprintf(buf, sizeof(buf), "%.*f", prec, d);
			if (strtod(buf, NULL) == d)
				break;
		}
		/* "%.1f" of an integral value already ends in ".0" */
		appendStringInfoString(out, buf);
		return;
	}
	for (prec = 1; prec <= 17; prec++)
	{
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	e = strchr(buf, 'e');
	*e = '\0';
	appendStringInfoString(out, buf);
	if (strchr(buf, '.') == NULL)
		appendStringInfoString(out, ".0");
	appendStringInfo(out, "E%d", atoi(e + 1));
}

static void
write_date(StringInfo out, int64 ms)
{
	StringInfoData s;

	initStringInfo(&s);
	se_date_format(ms, &s);
	se_json_write_string(out, s.data, s.len);
}

/* a date as ES writes it in the agg's time_zone: "...T00:00:00.000+01:00" */
static void
write_date_tz(StringInfo out, const SeTimeZone *tz, int64 ms)
{
	StringInfoData s;

	initStringInfo(&s);
	se_tz_format(tz, ms, &s);
	se_json_write_string(out, s.data, s.len);
}

static void
write_key(StringInfo out, const AggState *st, const Bucket *bk)
{
	int64		v;
	double		d;

	appendStringInfoString(out, "\"key\":");
	if (st->kind == KK_STR || bk->keylen != 8)
	{
		se_json_write_string(out, bk->key, bk->keylen);
		return;
	}
	if (st->kind == KK_DOUBLE)
	{
		memcpy(&d, bk->key, 8);
		write_double(out, d);
		return;
	}
	memcpy(&v, bk->key, 8);
	appendStringInfo(out, INT64_FORMAT, v);
	if (st->kind == KK_DATE)
	{
		appendStringInfoString(out, ",\"key_as_string\":");
		write_date_tz(out, &st->spec->tz, v);
	}
	else if (st->kind == KK_BOOL)
		appendStringInfo(out, ",\"key_as_string\":\"%s\"", v ? "true" : "false");
}

/* a bucket key as text, for keyed output */
static char *
key_text(const AggState *st, const Bucket *bk)
{
	StringInfoData s;
	int64		v;

	initStringInfo(&s);
	if (st->kind == KK_STR || bk->keylen != 8)
		appendBinaryStringInfo(&s, bk->key, bk->keylen);
	else if (st->kind == KK_DOUBLE)
	{
		double		d;

		memcpy(&d, bk->key, 8);
		write_double(&s, d);
	}
	else
	{
		memcpy(&v, bk->key, 8);
		if (st->kind == KK_DATE)
			se_tz_format(&st->spec->tz, v, &s);
		else
			appendStringInfo(&s, INT64_FORMAT, v);
	}
	return s.data;
}

static void write_states(StringInfo out, AggState **states, int n);

static void
write_value_as_string(StringInfo out, const AggState *st, const char *name, double v)
{
	if (st->kind == KK_DATE && isfinite(v))
	{
		appendStringInfo(out, ",\"%s_as_string\":", name);
		write_date(out, (int64) v);
	}
}

/* {"values": {"50.0": v}} (keyed) or {"values": [{"key": 50.0, "value": v}]} */
static void
write_percentiles(StringInfo out, AggState *st)
{
	const SeAggSpec *a = st->spec;
	int			i;

	appendStringInfoString(out, a->keyed ? "{\"values\":{" : "{\"values\":[");
	for (i = 0; i < a->npercents; i++)
	{
		double		v = a->type == AT_PERCENTILES ? td_quantile(st, a->percents[i] / 100)
			: td_rank(st, a->percents[i]);

		if (i > 0)
			appendStringInfoChar(out, ',');
		if (a->keyed)
		{
			appendStringInfoChar(out, '"');
			write_double(out, a->percents[i]);
			appendStringInfoString(out, "\":");
		}
		else
		{
			appendStringInfoString(out, "{\"key\":");
			write_double(out, a->percents[i]);
			appendStringInfoString(out, ",\"value\":");
		}
		write_double(out, v);
		if (!a->keyed)
			appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, a->keyed ? "}}" : "]}");
}

/* {"hits": {"total": .., "max_score": .., "hits": [..]}} as a search's hits */
static void
write_top_hits(StringInfo out, const AggState *st)
{
	const SeAggSpec *a = st->spec;
	int			j;

	appendStringInfo(out, "{\"hits\":{\"total\":{\"value\":" INT64_FORMAT
					 ",\"relation\":\"eq\"},\"max_score\":", st->count);
	se_search_write_float(out, !a->sort_by_field && st->nth > 0 ? st->th[0].score : NAN);
	appendStringInfoString(out, ",\"hits\":[");
	for (j = a->from; j < st->nth; j++)
	{
		const TopHit *h = &st->th[j];

		if (j > a->from)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"_index\":");
		se_json_write_string(out, h->index ? h->index : "", h->index ? strlen(h->index) : 0);
		appendStringInfoString(out, ",\"_id\":");
		se_json_write_string(out, h->id ? h->id : "", h->id ? strlen(h->id) : 0);
		appendStringInfoString(out, ",\"_score\":");
		se_search_write_float(out, a->sort_by_field ? NAN : h->score);
		if (h->source != NULL)
		{
			appendStringInfoString(out, ",\"_source\":");
			if (h->srclen > 0)
				appendBinaryStringInfo(out, h->source, h->srclen);
			else
				appendStringInfoString(out, "{}");
		}
		if (a->sort_by_field)
		{
			int			k;

			appendStringInfoString(out, ",\"sort\":[");
			for (k = 0; k < a->nthsort; k++)
			{
				const ThSortKey *key = &a->thsort[k];
				const ThValue *v = &h->vals[k];
				KeyKind		kind = th_kind(st, k);

				if (k > 0)
					appendStringInfoChar(out, ',');
				if (key->field == NULL && !key->is_doc)
					se_search_write_float(out, v->missing ? NAN : (float) v->num);
				else if (key->is_doc)
					appendStringInfo(out, INT64_FORMAT, (int64) v->num);
				else if (v->missing)
				{
					/* ES substitutes the extreme value of the order (keywords: null) */
					bool		high = !key->desc;

					if (kind == KK_STR || kind == KK_NONE)
						appendStringInfoString(out, "null");
					else if (kind == KK_DOUBLE)
						appendStringInfoString(out, high ? "\"Infinity\"" : "\"-Infinity\"");
					else
						appendStringInfo(out, INT64_FORMAT, high ? PG_INT64_MAX : PG_INT64_MIN);
				}
				else if (kind == KK_STR)
					se_json_write_string(out, v->str, v->len);
				else if (kind == KK_DOUBLE)
					write_double(out, v->num);
				else
					appendStringInfo(out, INT64_FORMAT, (int64) v->num);
			}
			appendStringInfoChar(out, ']');
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, "]}}");
}

/*
 * "exact_sum" asked: the integers' exact sum as a decimal string (ES has no
 * such key; the FDW asks for it so that sum(bigint) does not depend on the
 * double "sum", which stops being exact past 2^53).  Not for floats.
 */
static void
write_exact_sum(StringInfo out, const AggState *st)
{
	uint32		limb[4];
	char		digits[48];
	int			nd = 0,
				i;
	bool		neg = st->xsum_hi < 0;
	uint64		hi = (uint64) st->xsum_hi,
				lo = st->xsum_lo;

	if (!st->spec->exact_sum || st->kind == KK_DOUBLE)
		return;
	if (neg)
	{
		/* the magnitude: two's complement negation over 128 bits */
		hi = ~hi;
		lo = ~lo + 1;
		if (lo == 0)
			hi++;
	}
	limb[0] = (uint32) (hi >> 32);
	limb[1] = (uint32) hi;
	limb[2] = (uint32) (lo >> 32);
	limb[3] = (uint32) lo;
	do
	{
		uint64		rem = 0;

		/* long division of the 128-bit magnitude by 10 */
		for (i = 0; i < 4; i++)
		{
			uint64		cur = (rem << 32) | limb[i];

			limb[i] = (uint32) (cur / 10);
			rem = cur % 10;
		}
		digits[nd++] = (char) ('0' + rem);
	} while (limb[0] | limb[1] | limb[2] | limb[3]);
	appendStringInfoString(out, ",\"sum_exact\":\"");
	if (neg)
		appendStringInfoChar(out, '-');
	while (nd > 0)
		appendStringInfoChar(out, digits[--nd]);
	appendStringInfoChar(out, '"');
}

static void
write_geo_point(StringInfo out, const char *name, double lat, double lon)
{
	appendStringInfo(out, "\"%s\":{\"lat\":", name);
	se_append_java_double(out, lat);
	appendStringInfoString(out, ",\"lon\":");
	se_append_java_double(out, lon);
	appendStringInfoChar(out, '}');
}

/*
 * geo_centroid: the mean point and the count; geo_bounds: the box of the
 * points, over the dateline when that box is narrower (wrap_longitude), as
 * ES's InternalGeoBounds; nothing when no point was seen.
 */
static void
write_geo_metric(StringInfo out, const AggState *st)
{
	double		left,
				right;

	if (st->spec->type == AT_GEO_CENTROID)
	{
		appendStringInfoChar(out, '{');
		if (st->count > 0)
		{
			write_geo_point(out, "location", st->sum / st->count, st->sumsq / st->count);
			appendStringInfoChar(out, ',');
		}
		appendStringInfo(out, "\"count\":" INT64_FORMAT "}", st->count);
		return;
	}
	if (st->count == 0 || isinf(st->max))
	{
		appendStringInfoString(out, "{}");
		return;
	}
	if (isinf(st->neg_right))
		left = st->pos_left, right = st->pos_right;
	else if (isinf(st->pos_left))
		left = st->neg_left, right = st->neg_right;
	else if (st->spec->wrap_longitude &&
			 st->pos_right - st->neg_left > (180 - st->pos_left) - (-180 - st->neg_right))
		left = st->pos_left, right = st->neg_right;
	else
		left = st->neg_left, right = st->pos_right;
	appendStringInfoString(out, "{\"bounds\":{");
	write_geo_point(out, "top_left", st->max, left);
	appendStringInfoChar(out, ',');
	write_geo_point(out, "bottom_right", st->min, right);
	appendStringInfoString(out, "}}");
}

static void
write_metric(StringInfo out, const AggState *st)
{
	AggType		t = st->spec->type;
	double		n = (double) st->count;
	double		avg = st->count ? st->sum / n : NAN;

	switch (t)
	{
		case AT_MIN:
		case AT_MAX:
		case AT_AVG:
			{
				double		v = t == AT_MIN ? st->min : t == AT_MAX ? st->max : avg;

				appendStringInfoString(out, "{\"value\":");
				write_double(out, st->count ? v : NAN);
				write_value_as_string(out, st, "value", st->count ? v : NAN);
				appendStringInfoChar(out, '}');
				return;
			}
		case AT_SUM:
			appendStringInfoString(out, "{\"value\":");
			write_double(out, st->sum);
			write_exact_sum(out, st);
			appendStringInfoChar(out, '}');
			return;
		case AT_VALUE_COUNT:
			appendStringInfo(out, "{\"value\":" INT64_FORMAT "}", st->count);
			return;
		case AT_CARDINALITY:
			appendStringInfo(out, "{\"value\":" INT64_FORMAT "}", card_value(st));
			return;
		case AT_PERCENTILES:
		case AT_PERCENTILE_RANKS:
			write_percentiles(out, (AggState *) st);
			return;
		case AT_TOP_HITS:
			write_top_hits(out, st);
			return;
		case AT_GEO_BOUNDS:
		case AT_GEO_CENTROID:
			write_geo_metric(out, st);
			return;
		default:
			break;
	}
	appendStringInfo(out, "{\"count\":" INT64_FORMAT ",\"min\":", st->count);
	write_double(out, st->count ? st->min : NAN);
	appendStringInfoString(out, ",\"max\":");
	write_double(out, st->count ? st->max : NAN);
	appendStringInfoString(out, ",\"avg\":");
	write_double(out, avg);
	appendStringInfoString(out, ",\"sum\":");
	write_double(out, st->sum);
	write_exact_sum(out, st);
	/* and the integers' min and max, exact past 2^53 (doubles are not) */
	if (st->spec->exact_sum && st->kind != KK_DOUBLE && st->count > 0)
		appendStringInfo(out, ",\"min_exact\":\"" INT64_FORMAT "\",\"max_exact\":\"" INT64_FORMAT "\"",
						 st->xmin, st->xmax);
	if (t == AT_EXTENDED_STATS)
	{
		/* as ES's InternalExtendedStats: variance from the sums */
		double		var = st->count ? Max(0.0, (st->sumsq - st->sum * st->sum / n) / n) : NAN;
		double		var_s = st->count > 1 ? Max(0.0, (st->sumsq - st->sum * st->sum / n) / (n - 1)) : NAN;
		double		sd = sqrt(var),
					sd_s = sqrt(var_s);
		double		sg = st->spec->sigma;

		appendStringInfoString(out, ",\"sum_of_squares\":");
		write_double(out, st->count ? st->sumsq : NAN);
		appendStringInfoString(out, ",\"variance\":");
		write_double(out, var);
		appendStringInfoString(out, ",\"variance_population\":");
		write_double(out, var);
		appendStringInfoString(out, ",\"variance_sampling\":");
		write_double(out, var_s);
		appendStringInfoString(out, ",\"std_deviation\":");
		write_double(out, sd);
		appendStringInfoString(out, ",\"std_deviation_population\":");
		write_double(out, sd);
		appendStringInfoString(out, ",\"std_deviation_sampling\":");
		write_double(out, sd_s);
		appendStringInfoString(out, ",\"std_deviation_bounds\":{\"upper\":");
		write_double(out, avg + sg * sd);
		appendStringInfoString(out, ",\"lower\":");
		write_double(out, avg - sg * sd);
		appendStringInfoString(out, ",\"upper_population\":");
		write_double(out, avg + sg * sd);
		appendStringInfoString(out, ",\"lower_population\":");
		write_double(out, avg - sg * sd);
		appendStringInfoString(out, ",\"upper_sampling\":");
		write_double(out, avg + sg * sd_s);
		appendStringInfoString(out, ",\"lower_sampling\":");
		write_double(out, avg - sg * sd_s);
		appendStringInfoChar(out, '}');
	}
	write_value_as_string(out, st, "min", st->count ? st->min : NAN);
	write_value_as_string(out, st, "max", st->count ? st->max : NAN);
	appendStringInfoChar(out, '}');
}

/* doc_count and the sub-aggregations of a bucket (no braces) */
static void
write_bucket_body(StringInfo out, const AggState *st, const Bucket *bk)
{
	appendStringInfo(out, "\"doc_count\":" INT64_FORMAT, bk->doc_count);
	if (st->spec->type == AT_SIGNIFICANT_TERMS)
	{
		appendStringInfoString(out, ",\"score\":");
		write_double(out, sig_score(st, bk));
		appendStringInfo(out, ",\"bg_count\":" INT64_FORMAT, bk->bg);
	}
	if (st->spec->type == AT_TERMS && st->spec->show_error)
		appendStringInfo(out, ",\"doc_count_error_upper_bound\":" INT64_FORMAT,
						 st->err_unknown ? -1 : bk->err);
	write_states(out, bk->subs, st->spec->nsub);
}

static void
write_range_bound(StringInfo out, const AggState *st, const char *name, double v)
{
	appendStringInfo(out, ",\"%s\":", name);
	write_double(out, v);
	if (st->spec->type == AT_DATE_RANGE)
	{
		appendStringInfo(out, ",\"%s_as_string\":", name);
		write_date_tz(out, &st->spec->tz, (int64) v);
	}
}

static void
range_bound_text(StringInfo s, const AggState *st, bool has, double v)
{
	if (!has)
		appendStringInfoChar(s, '*');
	else if (st->spec->type == AT_DATE_RANGE)
		se_tz_format(&st->spec->tz, (int64) v, s);
	else
		write_double(s, v);
}

/* ES sorts ranges by from, then to (a missing from first, a missing to last) */
static int
range_cmp(const void *pa, const void *pb)
{
	const AggRange *x = *(AggRange *const *) pa;
	const AggRange *y = *(AggRange *const *) pb;
	double		xf = x->has_from ? x->from : -INFINITY,
				yf = y->has_from ? y->from : -INFINITY;
	double		xt = x->has_to ? x->to : INFINITY,
				yt = y->has_to ? y->to : INFINITY;

	if (xf != yf)
		return xf < yf ? -1 : 1;
	if (xt != yt)
		return xt < yt ? -1 : 1;
	return 0;
}

static void
write_ranges(StringInfo out, const AggState *st)
{
	const SeAggSpec *a = st->spec;
	const AggRange **order = palloc(sizeof(AggRange *) * Max(1, a->nranges));
	int			i;

	for (i = 0; i < a->nranges; i++)
		order[i] = &a->ranges[i];
	qsort(order, a->nranges, sizeof(AggRange *), range_cmp);
	appendStringInfoString(out, a->keyed ? "{\"buckets\":{" : "{\"buckets\":[");
	for (i = 0; i < a->nranges; i++)
	{
		const AggRange *rg = order[i];
		int			idx = (int) (rg - a->ranges);
		StringInfoData key;

		initStringInfo(&key);
		if (rg->key)
			appendStringInfoString(&key, rg->key);
		else
		{
			range_bound_text(&key, st, rg->has_from, rg->from);
			appendStringInfoChar(&key, '-');
			range_bound_text(&key, st, rg->has_to, rg->to);
		}
		if (i > 0)
			appendStringInfoChar(out, ',');
		if (a->keyed)
		{
			se_json_write_string(out, key.data, key.len);
			appendStringInfoString(out, ":{");
		}
		else
		{
			appendStringInfoString(out, "{\"key\":");
			se_json_write_string(out, key.data, key.len);
		}
		{
			StringInfoData f;

			/* each bound starts with a comma; keyed buckets start with them */
			initStringInfo(&f);
			if (rg->has_from)
				write_range_bound(&f, st, "from", rg->from);
			else if (a->geo == GEO_DISTANCE)
				write_range_bound(&f, st, "from", 0.0);	/* ES's distances start at 0 */
			if (rg->has_to)
				write_range_bound(&f, st, "to", rg->to);
			appendStringInfoChar(&f, ',');
			appendStringInfoString(out, a->keyed ? f.data + 1 : f.data);
		}
		write_bucket_body(out, st, st->b[idx]);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, a->keyed ? "}}" : "]}");
}

/* a composite key as {"source": value, ...} */
static void
write_composite_key(StringInfo out, const SeAggSpec *a, const Bucket *bk)
{
	const char *p = bk->key;
	int			k;

	appendStringInfoChar(out, '{');
	for (k = 0; k < a->nsrc; k++)
	{
		const char *v;
		int			len;
		KeyKind		kind = comp_read(&p, &v, &len);

		if (k > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, a->src[k]->name, strlen(a->src[k]->name));
		appendStringInfoChar(out, ':');
		if (kind == KK_NONE)
			appendStringInfoString(out, "null");
		else if (kind == KK_STR)
			se_json_write_string(out, v, len);
		else if (kind == KK_DOUBLE)
			write_double(out, comp_number(kind, v));
		else if (kind == KK_BOOL)
			appendStringInfoString(out, comp_number(kind, v) != 0 ? "true" : "false");
		else
		{
			int64		i;

			memcpy(&i, v, 8);
			appendStringInfo(out, INT64_FORMAT, i);
		}
	}
	appendStringInfoChar(out, '}');
}

static void
write_composite(StringInfo out, const AggState *st)
{
	int			j;

	appendStringInfoChar(out, '{');
	if (st->nb > 0)
	{
		appendStringInfoString(out, "\"after_key\":");
		write_composite_key(out, st->spec, st->b[st->nb - 1]);
		appendStringInfoChar(out, ',');
	}
	appendStringInfoString(out, "\"buckets\":[");
	for (j = 0; j < st->nb; j++)
	{
		if (j > 0)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"key\":");
		write_composite_key(out, st->spec, st->b[j]);
		appendStringInfoChar(out, ',');
		write_bucket_body(out, st, st->b[j]);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, "]}");
}

static void
write_state(StringInfo out, const AggState *st)
{
	const SeAggSpec *a = st->spec;
	int			j;

	if (IS_METRIC(a->type))
	{
		write_metric(out, st);
		return;
	}
	switch (a->type)
	{
		case AT_FILTER:
		case AT_MISSING:
			appendStringInfoChar(out, '{');
			write_bucket_body(out, st, st->b[0]);
			appendStringInfoChar(out, '}');
			return;
		case AT_FILTERS:
			appendStringInfoString(out, a->filter_keys ? "{\"buckets\":{" : "{\"buckets\":[");
			for (j = 0; j < a->nfilters; j++)
			{
				if (j > 0)
					appendStringInfoChar(out, ',');
				if (a->filter_keys)
				{
					se_json_write_string(out, a->filter_keys[j], strlen(a->filter_keys[j]));
					appendStringInfoChar(out, ':');
				}
				appendStringInfoChar(out, '{');
				write_bucket_body(out, st, st->b[j]);
				appendStringInfoChar(out, '}');
			}
			appendStringInfoString(out, a->filter_keys ? "}}" : "]}");
			return;
		case AT_RANGE:
		case AT_DATE_RANGE:
			write_ranges(out, st);
			return;
		case AT_COMPOSITE:
			write_composite(out, st);
			return;
		default:
			break;
	}
	appendStringInfoChar(out, '{');
	if (a->type == AT_SIGNIFICANT_TERMS)
		appendStringInfo(out, "\"doc_count\":" INT64_FORMAT ",\"bg_count\":" INT64_FORMAT ",",
						 st->count, st->bg_size);
	if (a->type == AT_TERMS && a->geo == GEO_NONE)
		appendStringInfo(out, "\"doc_count_error_upper_bound\":" INT64_FORMAT
						 ",\"sum_other_doc_count\":" INT64_FORMAT ",",
						 st->err_unknown ? -1 : st->err, st->other);
	appendStringInfoString(out, a->keyed ? "\"buckets\":{" : "\"buckets\":[");
	for (j = 0; j < st->nb; j++)
	{
		if (j > 0)
			appendStringInfoChar(out, ',');
		if (a->keyed)
		{
			char	   *k = key_text(st, st->b[j]);

			se_json_write_string(out, k, strlen(k));
			appendStringInfoChar(out, ':');
		}
		appendStringInfoChar(out, '{');
		write_key(out, st, st->b[j]);
		appendStringInfoChar(out, ',');
		write_bucket_body(out, st, st->b[j]);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, a->keyed ? "}}" : "]}");
}

/*
 * typed_keys=true while the reduce writes its response (the writers are
 * recursive through buckets; the flag spares every one a parameter)
 */
static bool write_typed_keys = false;

/*
 * ES's type of a reduced aggregation, its InternalAggregation.getType()
 * that typed_keys writes before '#': a terms' from its values (unmapped
 * everywhere: as strings), a pipeline's from the value it makes.
 */
static const char *
typed_name(const AggState *st)
{
	const SeAggSpec *a = st->spec;
	bool		str = st->kind == KK_STR || st->kind == KK_NONE;

	switch (a->type)
	{
		case AT_PERCENTILES:
			return "tdigest_percentiles";
		case AT_PERCENTILE_RANKS:
			return "tdigest_percentile_ranks";
		case AT_TERMS:
			if (a->geo == GEO_HASH_GRID)
				return "geohash_grid";
			if (a->geo == GEO_TILE_GRID)
				return "geotile_grid";
			return str ? "sterms" : st->kind == KK_DOUBLE ? "dterms" : "lterms";
		case AT_SIGNIFICANT_TERMS:
			return str ? "sigsterms" : "siglterms";
		case AT_RANGE:
			return a->geo == GEO_DISTANCE ? "geo_distance" : "range";
		case AT_FILTER:
			if (a->reverse_nested)
				return "reverse_nested";
			return a->nested_path != NULL ? "nested" : "filter";
		case AT_CUMULATIVE_SUM:
		case AT_AVG_BUCKET:
		case AT_SUM_BUCKET:
			return "simple_value";
		case AT_MAX_BUCKET:
		case AT_MIN_BUCKET:
			return "bucket_metric_value";
		default:
			return type_names[a->type];
	}
}

/*
 * ,"name":{...} per state; a pipeline without a value (a derivative's first
 * bucket) and bucket_sort write nothing, as in ES.
 */
static void
write_states(StringInfo out, AggState **states, int n)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		const AggState *st = states[i];
		AggType		t = st->spec->type;

		if (t == AT_BUCKET_SORT || (IS_PARENT_PIPELINE(t) && isnan(st->pvalue)))
			continue;
		appendStringInfoChar(out, ',');
		if (write_typed_keys)
		{
			StringInfoData k;

			initStringInfo(&k);
			appendStringInfo(&k, "%s#%s", typed_name(st), st->spec->name);
			se_json_write_string(out, k.data, k.len);
			pfree(k.data);
		}
		else
			se_json_write_string(out, st->spec->name, strlen(st->spec->name));
		appendStringInfoChar(out, ':');
		if (IS_PIPELINE(t))
		{
			int			k;

			appendStringInfoString(out, "{\"value\":");
			write_double(out, st->pvalue);
			if (t == AT_MAX_BUCKET || t == AT_MIN_BUCKET)
			{
				appendStringInfoString(out, ",\"keys\":[");
				for (k = 0; k < st->npkeys; k++)
				{
					if (k > 0)
						appendStringInfoChar(out, ',');
					se_json_write_string(out, st->pkeys[k], strlen(st->pkeys[k]));
				}
				appendStringInfoChar(out, ']');
			}
			appendStringInfoChar(out, '}');
		}
		else
			write_state(out, st);
	}
}

void
se_aggs_reduce(const SeAggs *aggs, SeAggPartial **parts, int nparts,
			   bool typed_keys, StringInfo out)
{
	AggState  **states = states_new(aggs->specs, aggs->n, false);
	StringInfoData body;
	int			i;

	for (i = 0; i < nparts; i++)
		if (parts[i] != NULL)
			merge_states(states, parts[i]->states, aggs->n);
	finish_states(states, aggs->n);
	initStringInfo(&body);
	write_typed_keys = typed_keys;
	write_states(&body, states, aggs->n);
	write_typed_keys = false;
	appendStringInfoChar(out, '{');
	if (body.len > 0)
		appendStringInfoString(out, body.data + 1);	/* its leading comma */
	appendStringInfoChar(out, '}');
}

bool
se_aggs_check_inner_window(const SeAggs *aggs, int max, SeError *err)
{
	int			i;

	for (i = 0; aggs != NULL && i < aggs->n; i++)
	{
		const SeAggSpec *a = aggs->specs[i];
		SeAggs		subs;

		if (a->type == AT_TOP_HITS && (int64) a->from + a->size > max)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Top hits result window is too large, the top hits aggregator [%s]'s from + size must be less than or equal to: [%d] but was [%d]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
						 a->name, max, a->from + a->size);
			return false;
		}
		subs.n = a->nsub;
		subs.specs = a->sub;
		if (!se_aggs_check_inner_window(&subs, max, err))
			return false;
	}
	return true;
}
