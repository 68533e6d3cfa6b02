/* SOURCES: src/search/aggs.c src/search/hll.c src/search/collapse.c src/search/mlt.c src/search/distance_feature.c src/search/geo_query.c src/search/explain.c src/search/fields.c src/search/bm25.c src/search/datemath.c src/search/dfs.c src/search/dsl.c src/search/execute.c src/search/function_score.c src/search/fuzzy.c src/search/highlight.c src/search/interrupt.c src/search/phrase.c src/search/query_string.c src/search/regexp.c src/search/request.c src/search/response.c src/search/scorer.c src/search/shard_wire.c src/search/source_filter.c src/search/weight.c src/search/script_score.c src/search/timezone.c src/search/decimal_format.c src/search/nested.c src/script/lexer.c src/script/parser.c src/script/interp.c src/script/builtins.c src/script/values.c src/script/score.c src/util/units.c src/util/json.c src/util/error.c src/util/hash.c src/index/builder.c src/index/fileformat.c src/index/livedocs.c src/index/merge.c src/index/postings.c src/index/reader.c src/index/smallfloat.c src/index/writer.c src/mapping/date.c src/mapping/docparse.c src/mapping/mapping.c src/mapping/numeric.c src/mapping/geo_point.c src/analysis/analysis.c src/analysis/porter.c src/analysis/standard_tokenizer.c src/analysis/unicode.c */
/*-------------------------------------------------------------------------
 *
 * test_search.c
 *	  Unit tests of the search module against the real codec, mapping and
 *	  analysis modules.
 *
 * A generated corpus (bodies up to 60 terms, so SmallFloat norms are
 * lossy) is indexed into three segments with some docs deleted through
 * live docs.  Every query type's hits are checked against a brute-force
 * model of the corpus, and BM25 scores against an independent double
 * precision computation from the model's exact statistics (deleted docs
 * included) and SmallFloat-quantized lengths.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <unistd.h>

#include "search/search_int.h"
#include "unit_test.h"

#define NDOCS	90
#define SEGSIZE 30
#define NSEGS	3

static const char *const vocab[] = {
	"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
	"iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho",
	"sigma", "tau", "upsilon"
};
#define NVOCAB 20

static const char *const tagvals[] = {"red", "green", "blue", "Yellow"};

typedef struct MDoc
{
	char		id[16];
	int			nbody;
	const char *body[64];
	int			ntitle;
	const char *title[8];
	int			ntags;
	const char *tags[2];
	int			nprice;
	int64		price[2];
	bool		has_rating;
	double		rating;
	bool		has_date;
	int			day;			/* 2021-01-<day> */
	bool		flag;
	bool		has_meta;
	bool		live;
	int			seg;
	int			segdoc;
} MDoc;

static MDoc docs[NDOCS];
static SeMapping *mapping;
static SeSearchShard shard;
static SeSegmentReader *readers[NSEGS];
static const uint64 *lives[NSEGS];

/* ---------------------------------------------------------------------
 * Independent SmallFloat and BM25
 * ---------------------------------------------------------------------
 */
static int
sf_int_to_byte4(int i)
{
	int64		v;
	int			nbits = 0;
	int			shift;

	if (i < 24)
		return i;
	v = i - 24;
	while ((v >> nbits) != 0)
		nbits++;
	if (nbits < 4)
		return (int) v + 24;
	shift = nbits - 4;
	return (int) (((v >> shift) & 7) | ((shift + 1) << 3)) + 24;
}

static int
sf_byte4_to_int(int b)
{
	int			bits,
				shift;

	if (b < 24)
		return b;
	b -= 24;
	bits = b & 7;
	shift = (b >> 3) - 1;
	return 24 + (shift == -1 ? bits : ((bits | 8) << shift));
}

static double
bm25(double boost, int64 df, int64 n, double freq, double dl, double avgdl)
{
	double		idf = log(1 + (n - df + 0.5) / (df + 0.5));

	return boost * idf * freq / (freq + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl));
}

static bool
close_enough(double a, double b)
{
	return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b)) + 1e-9;
}

/* ---------------------------------------------------------------------
 * Corpus
 * ---------------------------------------------------------------------
 */
static uint32 rng = 12345;

static uint32
next_rand(void)
{
	rng = rng * 1103515245 + 12345;
	return (rng >> 16) & 0x7fff;
}

/* Skewed word choice so doc frequencies differ. */
static const char *
pick_word(void)
{
	uint32		r = next_rand() % 100;
	int			w;

	if (r < 40)
		w = r % 4;
	else if (r < 70)
		w = 4 + r % 6;
	else
		w = 10 + r % 10;
	return vocab[w];
}

static void
build_corpus(void)
{
	int			i,
				j;

	for (i = 0; i < NDOCS; i++)
	{
		MDoc	   *d = &docs[i];

		snprintf(d->id, sizeof(d->id), "d%d", i);
		d->nbody = (i % 11 == 7) ? 0 : 3 + (i * 7) % 58;
		for (j = 0; j < d->nbody; j++)
			d->body[j] = pick_word();
		d->ntitle = 1 + i % 4;
		for (j = 0; j < d->ntitle; j++)
			d->title[j] = vocab[(i * 3 + j * 5) % NVOCAB];
		if (i % 5 != 0)
		{
			d->ntags = (i % 7 == 0) ? 2 : 1;
			d->tags[0] = tagvals[i % 4];
			if (d->ntags == 2)
				d->tags[1] = tagvals[(i + 1) % 4];
		}
		if (i % 6 != 0)
		{
			d->nprice = (i % 9 == 0) ? 2 : 1;
			d->price[0] = (i * 37) % 100;
			if (d->nprice == 2)
				d->price[1] = (i * 53) % 100 + 100;
		}
		d->has_rating = i % 4 != 0;
		d->rating = (i % 13) * 0.5 - 2;
		d->has_date = i % 10 != 0;
		d->day = 1 + i % 28;
		d->flag = i % 3 == 0;
		d->has_meta = i % 2 == 0;
		d->live = i % 11 != 3;
		d->seg = i / SEGSIZE;
		d->segdoc = i % SEGSIZE;
	}
}

static void
doc_source(const MDoc *d, StringInfo s)
{
	int			j;

	appendStringInfoString(s, "{\"body\":\"");
	for (j = 0; j < d->nbody; j++)
		appendStringInfo(s, "%s%s", j ? " " : "", d->body[j]);
	appendStringInfoString(s, "\",\"title\":\"");
	for (j = 0; j < d->ntitle; j++)
		appendStringInfo(s, "%s%s", j ? " " : "", d->title[j]);
	appendStringInfoString(s, "\"");
	if (d->ntags == 1)
		appendStringInfo(s, ",\"tag\":\"%s\"", d->tags[0]);
	else if (d->ntags == 2)
		appendStringInfo(s, ",\"tag\":[\"%s\",\"%s\"]", d->tags[0], d->tags[1]);
	if (d->nprice == 1)
		appendStringInfo(s, ",\"price\":" INT64_FORMAT, d->price[0]);
	else if (d->nprice == 2)
		appendStringInfo(s, ",\"price\":[" INT64_FORMAT "," INT64_FORMAT "]",
						 d->price[1], d->price[0]);
	if (d->has_rating)
		appendStringInfo(s, ",\"rating\":%g", d->rating);
	if (d->has_date)
		appendStringInfo(s, ",\"date\":\"2021-01-%02d\"", d->day);
	appendStringInfo(s, ",\"flag\":%s", d->flag ? "true" : "false");
	if (d->has_meta)
		appendStringInfo(s, ",\"meta\":{\"a\":%d,\"b\":\"x%d\"}", (int) (d - docs), (int) (d - docs));
	appendStringInfoChar(s, '}');
}

static SeJson *
parse_json(const char *text)
{
	SeError		err;
	SeJson	   *j;

	se_error_init(&err);
	j = se_json_parse(text, strlen(text), NULL, &err);
	if (j == NULL)
		fprintf(stderr, "bad test json: %s: %s\n", text, err.reason);
	return j;
}

/* Index docs[from..to) into one segment; returns the reader. */
static SeSegmentReader *
index_segment(SeMapping *m, MDoc *ds, int n, const char **sources, int seg)
{
	SeSegmentBuilder *b = se_builder_create();
	StringInfoData out;
	SeError		err;
	uint8		segid[SE_SEGMENT_ID_LEN];
	SeSegmentReader *r;
	int			i;

	for (i = 0; i < n; i++)
	{
		StringInfoData src;
		SeJson	   *j;
		SeDocParseOptions opts;
		SeDocMeta	meta;
		bool		changed;
		const char *id;

		initStringInfo(&src);
		if (ds != NULL)
		{
			doc_source(&ds[i], &src);
			id = ds[i].id;
		}
		else
		{
			appendStringInfoString(&src, sources[i]);
			id = psprintf("p%d", i);
		}
		j = parse_json(src.data);
		memset(&opts, 0, sizeof(opts));
		opts.limits.total_fields_limit = 1000;
		opts.limits.depth_limit = 20;
		se_error_init(&err);
		se_builder_begin_doc(b);
		if (!se_doc_parse(m, j, &opts, b, id, &changed, &err))
		{
			fprintf(stderr, "doc parse failed: %s\n", err.reason);
			exit(2);
		}
		memset(&meta, 0, sizeof(meta));
		meta.id = id;
		meta.id_len = strlen(id);
		meta.seq_no = i;
		meta.primary_term = 1;
		meta.version = 1;
		se_builder_end_doc(b, &meta, src.data, src.len);
	}
	memset(segid, seg + 1, sizeof(segid));
	initStringInfo(&out);
	se_builder_serialize(b, segid, 3, &out);
	se_error_init(&err);
	r = se_segment_open((const uint8 *) out.data, out.len, true, &err);
	if (r == NULL)
	{
		fprintf(stderr, "segment open failed: %s\n", err.reason);
		exit(2);
	}
	return r;
}

static void
build_index(void)
{
	SeError		err;
	int			s,
				i;

	se_error_init(&err);
	mapping = se_mapping_from_json(parse_json(
											  "{\"properties\":{\"body\":{\"type\":\"text\"},\"title\":{\"type\":\"text\"},"
											  "\"tag\":{\"type\":\"keyword\"},\"price\":{\"type\":\"long\"},"
											  "\"rating\":{\"type\":\"double\"},\"date\":{\"type\":\"date\"},"
											  "\"flag\":{\"type\":\"boolean\"},"
											  "\"meta\":{\"properties\":{\"a\":{\"type\":\"long\"},\"b\":{\"type\":\"keyword\"}}}}}"),
								   NULL, &err);
	if (mapping == NULL)
	{
		fprintf(stderr, "mapping failed: %s\n", err.reason);
		exit(2);
	}
	for (s = 0; s < NSEGS; s++)
	{
		uint64	   *live;

		readers[s] = index_segment(mapping, &docs[s * SEGSIZE], SEGSIZE, NULL, s);
		live = se_livedocs_new(SEGSIZE);
		for (i = 0; i < SEGSIZE; i++)
			if (!docs[s * SEGSIZE + i].live)
				se_livedocs_clear(live, i);
		lives[s] = live;
	}
	shard.index = "idx";
	shard.shard = 0;
	shard.mapping = mapping;
	shard.nsegments = NSEGS;
	shard.segments = readers;
	shard.live_docs = lives;
}

/* ---------------------------------------------------------------------
 * Search helpers
 * ---------------------------------------------------------------------
 */
static SeSearchResult *
search_on(SeSearchShard *shards, int n, const char *body, SeError *err)
{
	SeJson	   *j = body ? parse_json(body) : NULL;
	SeSearchRequest *req;

	se_error_init(err);
	req = se_search_parse(j, 10000, err);
	if (req == NULL)
		return NULL;
	return se_search_run(req, shards, n, err);
}

static SeSearchResult *
search(const char *body)
{
	SeError		err;
	SeSearchResult *res = search_on(&shard, 1, body, &err);

	if (res == NULL)
		fprintf(stderr, "search failed: %s: %s: %s\n", body, err.type, err.reason);
	return res;
}

static int
doc_index(const char *id)
{
	return atoi(id + 1);
}

/* The query's hits must be exactly the live docs accepted by pred. */
static void
check_set(const char *what, const char *query, bool (*pred) (const MDoc *))
{
	char	   *body = psprintf("{\"query\":%s,\"size\":200,\"track_total_hits\":true}", query);
	SeSearchResult *res = search(body);
	bool		seen[NDOCS];
	int			expected = 0;
	int			i;
	bool		ok = true;

	UT_CHECK(res != NULL, "%s: search failed", what);
	if (res == NULL)
		return;
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < res->nhits; i++)
	{
		int			d = doc_index(res->hits[i].id);

		if (d < 0 || d >= NDOCS || seen[d] || !docs[d].live || !pred(&docs[d]))
		{
			fprintf(stderr, "  %s: unexpected hit %s\n", what, res->hits[i].id);
			ok = false;
		}
		else
			seen[d] = true;
	}
	for (i = 0; i < NDOCS; i++)
		if (docs[i].live && pred(&docs[i]))
		{
			expected++;
			if (!seen[i])
			{
				fprintf(stderr, "  %s: missing hit d%d\n", what, i);
				ok = false;
			}
		}
	UT_CHECK(ok, "%s: hit set differs from model", what);
	UT_CHECK(res->total == expected && !res->total_is_lower_bound,
			 "%s: total " INT64_FORMAT " expected %d", what, res->total, expected);
	UT_CHECK(expected > 0 || res->nhits == 0, "%s", what);
}

static int
count_word(const char *const *words, int n, const char *w)
{
	int			c = 0;
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(words[i], w) == 0)
			c++;
	return c;
}

/* Shard statistics of a text field, over all docs (deleted ones too). */
static void
text_stats(bool title, const char *word, int64 *df, int64 *doc_count,
		   double *avgdl)
{
	int64		sum = 0;
	int			i;

	*df = 0;
	*doc_count = 0;
	for (i = 0; i < NDOCS; i++)
	{
		int			n = title ? docs[i].ntitle : docs[i].nbody;
		const char *const *w = title ? docs[i].title : docs[i].body;

		if (n == 0)
			continue;
		(*doc_count)++;
		sum += n;
		if (word && count_word(w, n, word) > 0)
			(*df)++;
	}
	*avgdl = (double) (float) ((double) sum / *doc_count);
}

static double
model_term_score(const MDoc *d, bool title, const char *word, double boost)
{
	int64		df,
				n;
	double		avgdl;
	int			len = title ? d->ntitle : d->nbody;
	const char *const *w = title ? d->title : d->body;
	int			freq = count_word(w, len, word);

	if (freq == 0)
		return 0;
	text_stats(title, word, &df, &n, &avgdl);
	return bm25(boost, df, n, freq, sf_byte4_to_int(sf_int_to_byte4(len)), avgdl);
}

/* Check every hit's score against model(d) and the ranking order. */
static void
check_scores(const char *what, const char *body, double (*model) (const MDoc *))
{
	SeSearchResult *res = search(body);
	int			i;
	bool		ok = true;
	int			nexpected = 0;

	UT_CHECK(res != NULL, "%s: search failed", what);
	if (res == NULL)
		return;
	for (i = 0; i < NDOCS; i++)
		if (docs[i].live && model(&docs[i]) > 0)
			nexpected++;
	UT_CHECK(res->nhits == nexpected, "%s: %d hits, expected %d", what,
			 res->nhits, nexpected);
	for (i = 0; i < res->nhits; i++)
	{
		const MDoc *d = &docs[doc_index(res->hits[i].id)];
		double		exp = model(d);

		if (!close_enough(res->hits[i].score, exp))
		{
			fprintf(stderr, "  %s: %s score %.9g expected %.9g\n", what,
					d->id, res->hits[i].score, exp);
			ok = false;
		}
		if (i > 0 && (res->hits[i].score > res->hits[i - 1].score ||
					  (res->hits[i].score == res->hits[i - 1].score &&
					   doc_index(res->hits[i].id) < doc_index(res->hits[i - 1].id))))
		{
			fprintf(stderr, "  %s: order broken at %d\n", what, i);
			ok = false;
		}
	}
	UT_CHECK(ok, "%s: scores differ from model", what);
	if (res->nhits > 0)
		UT_CHECK(res->max_score == res->hits[0].score, "%s: max_score", what);
}

/* ---------------------------------------------------------------------
 * Predicates and score models
 * ---------------------------------------------------------------------
 */
static bool
has_body(const MDoc *d, const char *w)
{
	return count_word(d->body, d->nbody, w) > 0;
}

static bool
p_all(const MDoc *d)
{
	return true;
}
static bool
p_none(const MDoc *d)
{
	return false;
}
static bool
p_gamma(const MDoc *d)
{
	return has_body(d, "gamma");
}
static bool
p_gamma_or_rho(const MDoc *d)
{
	return has_body(d, "gamma") || has_body(d, "rho");
}
static bool
p_gamma_and_rho(const MDoc *d)
{
	return has_body(d, "gamma") && has_body(d, "rho");
}
static bool
p_msm2_of3(const MDoc *d)
{
	return has_body(d, "rho") + has_body(d, "sigma") + has_body(d, "tau") >= 2;
}
static bool
p_any_rst(const MDoc *d)
{
	/* 66% of 3 clauses is 1.98, rounded down to 1 */
	return has_body(d, "rho") || has_body(d, "sigma") || has_body(d, "tau");
}
static bool
p_tag_red(const MDoc *d)
{
	return (d->ntags > 0 && strcmp(d->tags[0], "red") == 0) ||
		(d->ntags > 1 && strcmp(d->tags[1], "red") == 0);
}
static bool
p_tag_red_or_blue(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->ntags; i++)
		if (strcmp(d->tags[i], "red") == 0 || strcmp(d->tags[i], "blue") == 0)
			return true;
	return false;
}
static bool
p_price_10_50(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->nprice; i++)
		if (d->price[i] >= 10 && d->price[i] < 50)
			return true;
	return false;
}
static bool
p_price_wide(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->nprice; i++)
		if (d->price[i] >= 5 && d->price[i] <= 150)
			return true;
	return false;
}
static bool
p_price_gt_frac(const MDoc *d)
{
	int			i;

	/* gt 20.5, lte 60.5 on a long field: 21..60 */
	for (i = 0; i < d->nprice; i++)
		if (d->price[i] >= 21 && d->price[i] <= 60)
			return true;
	return false;
}
static bool
p_rating_range(const MDoc *d)
{
	return d->has_rating && d->rating > -1.0 && d->rating <= 2.5;
}
static bool
p_date_range(const MDoc *d)
{
	/* gte 2021-01-05, lte 2021-01-10 (lte rounds up to the end of the day) */
	return d->has_date && d->day >= 5 && d->day <= 10;
}
static bool
p_date_gt(const MDoc *d)
{
	/* gt 2021-01-20 excludes the whole 20th */
	return d->has_date && d->day > 20;
}
static bool
p_tag_range(const MDoc *d)
{
	int			i;

	/* keyword range ["blue", "red") in byte order: "Yellow" < "blue" */
	for (i = 0; i < d->ntags; i++)
		if (strcmp(d->tags[i], "blue") >= 0 && strcmp(d->tags[i], "red") < 0)
			return true;
	return false;
}
static bool
p_has_price(const MDoc *d)
{
	return d->nprice > 0;
}
static bool
p_has_body(const MDoc *d)
{
	return d->nbody > 0;
}
static bool
p_has_meta(const MDoc *d)
{
	return d->has_meta;
}
static bool
p_ids(const MDoc *d)
{
	return strcmp(d->id, "d1") == 0 || strcmp(d->id, "d14") == 0 ||
		strcmp(d->id, "d3") == 0 || strcmp(d->id, "d88") == 0;
}
static bool
p_title_prefix(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->ntitle; i++)
		if (strncmp(d->title[i], "ep", 2) == 0 || strncmp(d->title[i], "et", 2) == 0)
			return true;
	return false;
}
static bool
p_tag_prefix_ci(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->ntags; i++)
		if (pg_strncasecmp(d->tags[i], "YE", 2) == 0)
			return true;
	return false;
}
static bool
p_flag(const MDoc *d)
{
	return d->flag;
}
static bool
p_bool1(const MDoc *d)
{
	/* must gamma, filter price exists, must_not tag red, should ignored */
	return has_body(d, "gamma") && d->nprice > 0 && !p_tag_red(d);
}
static bool
p_bool_should_msm(const MDoc *d)
{
	/* filter flag, should [rho, sigma, tau], msm 2 */
	return d->flag && p_msm2_of3(d);
}
static bool
p_must_not_only(const MDoc *d)
{
	return !has_body(d, "alpha");
}
static bool
p_nested_bool(const MDoc *d)
{
	return (has_body(d, "gamma") && !has_body(d, "delta")) || p_tag_red(d);
}

/* "beta gamma" as an exact phrase, counting occurrences */
static int
phrase_count(const MDoc *d, const char *a, const char *b)
{
	int			c = 0;
	int			i;

	for (i = 0; i + 1 < d->nbody; i++)
		if (strcmp(d->body[i], a) == 0 && strcmp(d->body[i + 1], b) == 0)
			c++;
	return c;
}
static bool
p_phrase(const MDoc *d)
{
	return phrase_count(d, "beta", "gamma") > 0;
}

static double
s_gamma(const MDoc *d)
{
	return model_term_score(d, false, "gamma", 1.0);
}
static double
s_gamma_rho_boost(const MDoc *d)
{
	return model_term_score(d, false, "gamma", 2.5) +
		model_term_score(d, false, "rho", 2.5);
}
static double
s_best_fields(const MDoc *d)
{
	double		a = model_term_score(d, false, "theta", 1.0);
	double		b = model_term_score(d, true, "theta", 2.0);

	return Max(a, b) + 0.3 * Min(a, b);
}
static double
s_bool_mix(const MDoc *d)
{
	double		must = model_term_score(d, false, "gamma", 1.0);

	if (must == 0 || !d->flag)
		return 0;
	return must + model_term_score(d, false, "zeta", 1.0);
}
static double
s_phrase(const MDoc *d)
{
	int64		df1 = 0,
				df2 = 0,
				n = 0;
	double		avgdl;
	int			freq = phrase_count(d, "beta", "gamma");
	double		idf;

	if (freq == 0)
		return 0;
	text_stats(false, "beta", &df1, &n, &avgdl);
	text_stats(false, "gamma", &df2, &n, &avgdl);
	idf = log(1 + (n - df1 + 0.5) / (df1 + 0.5)) + log(1 + (n - df2 + 0.5) / (df2 + 0.5));
	return idf * freq / (freq + 1.2 * (0.25 + 0.75 * sf_byte4_to_int(sf_int_to_byte4(d->nbody)) / avgdl));
}
static double
s_keyword(const MDoc *d)
{
	/* keyword: no norms (length 1), avgdl = sum of doc freqs / doc count */
	int64		df = 0,
				n = 0,
				sum = 0;
	int			i;

	if (!p_tag_red(d))
		return 0;
	for (i = 0; i < NDOCS; i++)
	{
		if (docs[i].ntags == 0)
			continue;
		n++;
		sum += docs[i].ntags;
		if (p_tag_red(&docs[i]))
			df++;
	}
	return bm25(1.0, df, n, 1, 1, (double) (float) ((double) sum / n));
}
static double
s_const_3(const MDoc *d)
{
	return p_tag_red(d) ? 3.0 : 0;
}

/* ---------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------
 */
static void
test_query_sets(void)
{
	check_set("match_all", "{\"match_all\":{}}", p_all);
	check_set("match_none", "{\"match_none\":{}}", p_none);
	check_set("match one term", "{\"match\":{\"body\":\"gamma\"}}", p_gamma);
	check_set("match upper case", "{\"match\":{\"body\":\"GAMMA\"}}", p_gamma);
	check_set("match or", "{\"match\":{\"body\":\"gamma rho\"}}", p_gamma_or_rho);
	check_set("match and", "{\"match\":{\"body\":{\"query\":\"gamma rho\",\"operator\":\"and\"}}}",
			  p_gamma_and_rho);
	check_set("match msm 2", "{\"match\":{\"body\":{\"query\":\"rho sigma tau\",\"minimum_should_match\":2}}}",
			  p_msm2_of3);
	check_set("match msm 66%", "{\"match\":{\"body\":{\"query\":\"rho sigma tau\",\"minimum_should_match\":\"66%\"}}}",
			  p_any_rst);
	check_set("match msm -1", "{\"match\":{\"body\":{\"query\":\"rho sigma tau\",\"minimum_should_match\":\"-1\"}}}",
			  p_msm2_of3);
	check_set("match zero terms none", "{\"match\":{\"body\":\"\"}}", p_none);
	check_set("match zero terms all", "{\"match\":{\"body\":{\"query\":\"\",\"zero_terms_query\":\"all\"}}}",
			  p_all);
	check_set("match unmapped", "{\"match\":{\"nosuch\":\"gamma\"}}", p_none);
	check_set("match keyword", "{\"match\":{\"tag\":\"red\"}}", p_tag_red);
	check_set("match long", "{\"match\":{\"flag\":true}}", p_flag);
	check_set("term keyword", "{\"term\":{\"tag\":\"red\"}}", p_tag_red);
	check_set("term keyword object", "{\"term\":{\"tag\":{\"value\":\"red\",\"boost\":2}}}", p_tag_red);
	check_set("term keyword ci", "{\"term\":{\"tag\":{\"value\":\"RED\",\"case_insensitive\":true}}}", p_tag_red);
	check_set("term keyword case", "{\"term\":{\"tag\":\"RED\"}}", p_none);
	check_set("term text", "{\"term\":{\"body\":\"gamma\"}}", p_gamma);
	check_set("term boolean", "{\"term\":{\"flag\":\"true\"}}", p_flag);
	check_set("terms", "{\"terms\":{\"tag\":[\"red\",\"blue\"]}}", p_tag_red_or_blue);
	check_set("range long", "{\"range\":{\"price\":{\"gte\":10,\"lt\":50}}}", p_price_10_50);
	/* more values in range than the term budget: read from doc values */
	check_set("range long wide", "{\"range\":{\"price\":{\"gte\":5,\"lte\":150}}}", p_price_wide);
	check_set("range long fractions", "{\"range\":{\"price\":{\"gt\":20.5,\"lte\":60.5}}}", p_price_gt_frac);
	check_set("range double", "{\"range\":{\"rating\":{\"gt\":-1,\"lte\":2.5}}}", p_rating_range);
	check_set("range date", "{\"range\":{\"date\":{\"gte\":\"2021-01-05\",\"lte\":\"2021-01-10\"}}}", p_date_range);
	check_set("range date gt", "{\"range\":{\"date\":{\"gt\":\"2021-01-20\"}}}", p_date_gt);
	check_set("range date math", "{\"range\":{\"date\":{\"gte\":\"2021-01-04||+1d\",\"lt\":\"2021-01-10||+1d/d\"}}}",
			  p_date_range);
	check_set("range keyword", "{\"range\":{\"tag\":{\"gte\":\"blue\",\"lt\":\"red\"}}}", p_tag_range);
	check_set("exists long", "{\"exists\":{\"field\":\"price\"}}", p_has_price);
	check_set("exists text", "{\"exists\":{\"field\":\"body\"}}", p_has_body);
	check_set("exists object", "{\"exists\":{\"field\":\"meta\"}}", p_has_meta);
	check_set("ids", "{\"ids\":{\"values\":[\"d1\",\"d14\",\"d3\",\"d88\",\"zz\"]}}", p_ids);
	check_set("term _id", "{\"terms\":{\"_id\":[\"d1\",\"d14\",\"d3\",\"d88\"]}}", p_ids);
	check_set("prefix", "{\"bool\":{\"should\":[{\"prefix\":{\"title\":\"ep\"}},{\"prefix\":{\"title\":{\"value\":\"et\"}}}]}}",
			  p_title_prefix);
	check_set("prefix ci", "{\"prefix\":{\"tag\":{\"value\":\"YE\",\"case_insensitive\":true}}}", p_tag_prefix_ci);
	check_set("bool", "{\"bool\":{\"must\":{\"match\":{\"body\":\"gamma\"}},\"filter\":[{\"exists\":{\"field\":\"price\"}}],"
			  "\"must_not\":[{\"term\":{\"tag\":\"red\"}}],\"should\":[{\"match\":{\"body\":\"zeta\"}}]}}", p_bool1);
	check_set("bool msm", "{\"bool\":{\"filter\":{\"term\":{\"flag\":true}},\"minimum_should_match\":2,"
			  "\"should\":[{\"term\":{\"body\":\"rho\"}},{\"term\":{\"body\":\"sigma\"}},{\"term\":{\"body\":\"tau\"}}]}}",
			  p_bool_should_msm);
	check_set("bool must_not only", "{\"bool\":{\"must_not\":{\"match\":{\"body\":\"alpha\"}}}}", p_must_not_only);
	check_set("bool empty", "{\"bool\":{}}", p_all);
	check_set("bool nested", "{\"bool\":{\"should\":[{\"bool\":{\"must\":{\"term\":{\"body\":\"gamma\"}},"
			  "\"must_not\":{\"term\":{\"body\":\"delta\"}}}},{\"term\":{\"tag\":\"red\"}}]}}", p_nested_bool);
	check_set("constant_score", "{\"constant_score\":{\"filter\":{\"term\":{\"tag\":\"red\"}},\"boost\":3}}", p_tag_red);
	check_set("match_phrase", "{\"match_phrase\":{\"body\":\"beta gamma\"}}", p_phrase);
	check_set("multi_match", "{\"multi_match\":{\"query\":\"gamma\",\"fields\":[\"body\",\"nosuch\"]}}", p_gamma);
	check_set("dis_max", "{\"dis_max\":{\"queries\":[{\"term\":{\"body\":\"gamma\"}},{\"term\":{\"body\":\"rho\"}}]}}",
			  p_gamma_or_rho);
}

static void
test_scores(void)
{
	check_scores("bm25 one term", "{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}", s_gamma);
	check_scores("bm25 two terms boost",
				 "{\"query\":{\"match\":{\"body\":{\"query\":\"gamma rho\",\"boost\":2.5}}},\"size\":100}",
				 s_gamma_rho_boost);
	check_scores("best_fields",
				 "{\"query\":{\"multi_match\":{\"query\":\"theta\",\"fields\":[\"body\",\"title^2\"],\"tie_breaker\":0.3}},\"size\":100}",
				 s_best_fields);
	check_scores("bool must+should+filter",
				 "{\"query\":{\"bool\":{\"must\":{\"match\":{\"body\":\"gamma\"}},\"should\":{\"match\":{\"body\":\"zeta\"}},"
				 "\"filter\":{\"term\":{\"flag\":true}}}},\"size\":100}", s_bool_mix);
	check_scores("phrase", "{\"query\":{\"match_phrase\":{\"body\":\"beta gamma\"}},\"size\":100}", s_phrase);
	check_scores("keyword term", "{\"query\":{\"term\":{\"tag\":\"red\"}},\"size\":100}", s_keyword);
	check_scores("constant_score", "{\"query\":{\"constant_score\":{\"filter\":{\"term\":{\"tag\":\"red\"}},\"boost\":3}},\"size\":100}",
				 s_const_3);
}


/* ---------------------------------------------------------------------
 * Phrases with slop on a small hand-made corpus
 * ---------------------------------------------------------------------
 */
static const char *const phrase_docs[] = {
	"{\"t\":\"a b c d e\"}",	/* p0 */
	"{\"t\":\"a x b c\"}",		/* p1 */
	"{\"t\":\"c b a\"}",		/* p2 */
	"{\"t\":\"b a\"}",			/* p3 */
	"{\"t\":\"a b a b\"}",		/* p4 */
	"{\"t\":\"a c\"}",			/* p5 */
	"{\"t\":\"x y z\"}"			/* p6 */
};
static const int phrase_lens[] = {5, 4, 3, 2, 4, 2, 3};

static SeSearchShard pshard;
static SeSegmentReader *preader[1];

static double
phrase_model(const char *terms, double freq, int doc)
{
	/* df of single letters in the phrase corpus */
	double		idf = 0;
	const char *t;
	double		avgdl = (double) (float) (23.0 / 7);

	for (t = terms; *t; t++)
	{
		int			df = *t == 'a' ? 6 : *t == 'b' ? 5 : *t == 'c' ? 4 : 0;

		if (*t == ' ')
			continue;
		idf += log(1 + (7 - df + 0.5) / (df + 0.5));
	}
	return idf * freq / (freq + 1.2 * (0.25 + 0.75 * phrase_lens[doc] / avgdl));
}

static void
check_phrase(const char *text, int slop, const double *expected_freq)
{
	char	   *body = psprintf("{\"query\":{\"match_phrase\":{\"t\":{\"query\":\"%s\",\"slop\":%d}}},\"size\":20}",
								text, slop);
	SeError		err;
	SeSearchResult *res = search_on(&pshard, 1, body, &err);
	double		got[7] = {0};
	int			i;
	bool		ok = true;

	UT_CHECK(res != NULL, "phrase %s~%d failed: %s", text, slop, err.reason);
	if (res == NULL)
		return;
	for (i = 0; i < res->nhits; i++)
		got[atoi(res->hits[i].id + 1)] = res->hits[i].score;
	for (i = 0; i < 7; i++)
	{
		char		terms[16];
		int			j = 0;
		const char *c;
		double		exp = 0;

		for (c = text; *c; c++)
			if (*c != ' ')
				terms[j++] = *c;
		terms[j] = '\0';
		if (expected_freq[i] > 0)
			exp = phrase_model(terms, expected_freq[i], i);
		if (!close_enough(got[i], exp))
		{
			fprintf(stderr, "  phrase \"%s\"~%d p%d: score %.9g expected %.9g\n",
					text, slop, i, got[i], exp);
			ok = false;
		}
	}
	UT_CHECK(ok, "phrase \"%s\"~%d", text, slop);
}

static void
test_phrases(void)
{
	SeMapping  *m;
	SeError		err;
	static const double ab0[7] = {1, 0, 0, 0, 2, 0, 0};
	static const double ab1[7] = {1, 0.5, 0, 0, 2, 0, 0};
	static const double ab2[7] = {1, 0.5, 1.0 / 3, 1.0 / 3, 2, 0, 0};
	static const double ac1[7] = {0.5, 0, 0, 0, 0, 1, 0};
	static const double bab0[7] = {0, 0, 0, 0, 1, 0, 0};
	static const double abc1[7] = {1, 0.5, 0, 0, 0, 0, 0};
	static const double ba0[7] = {0, 0, 1, 1, 1, 0, 0};
	/* repeated term: the two a's need distinct positions */
	static const double aba2[7] = {0, 0, 0, 0, 1, 0, 0};
	static const double aa3[7] = {0, 0, 0, 0, 0.5, 0, 0};

	se_error_init(&err);
	m = se_mapping_from_json(parse_json("{\"properties\":{\"t\":{\"type\":\"text\"}}}"),
							 NULL, &err);
	preader[0] = index_segment(m, NULL, 7, (const char **) phrase_docs, 5);
	pshard.index = "phr";
	pshard.mapping = m;
	pshard.nsegments = 1;
	pshard.segments = preader;
	pshard.live_docs = NULL;

	check_phrase("a b", 0, ab0);
	check_phrase("a b", 1, ab1);
	check_phrase("a b", 2, ab2);
	check_phrase("a c", 1, ac1);
	check_phrase("b a b", 0, bab0);
	check_phrase("a b c", 1, abc1);
	check_phrase("b a", 0, ba0);
	check_phrase("a b a", 2, aba2);
	check_phrase("a a", 3, aa3);
}

/* ---------------------------------------------------------------------
 * Sorting, paging, totals, _source, errors
 * ---------------------------------------------------------------------
 */
typedef int (*DocCmp) (const MDoc *a, const MDoc *b);

static DocCmp cur_cmp;

static int
qsort_docs(const void *a, const void *b)
{
	const MDoc *x = *(const MDoc *const *) a;
	const MDoc *y = *(const MDoc *const *) b;
	int			c = cur_cmp(x, y);

	if (c != 0)
		return c;
	return x < y ? -1 : 1;
}

static int
missing_cmp(bool ma, bool mb, bool first)
{
	if (ma == mb)
		return 0;
	return (ma ? 1 : -1) * (first ? -1 : 1);
}

static int
c_price_asc(const MDoc *a, const MDoc *b)
{
	int			m = missing_cmp(a->nprice == 0, b->nprice == 0, false);

	if (m || a->nprice == 0)
		return m;
	return a->price[0] < b->price[0] ? -1 : a->price[0] > b->price[0];
}
static int
c_price_desc(const MDoc *a, const MDoc *b)
{
	int			m = missing_cmp(a->nprice == 0, b->nprice == 0, false);
	int64		x,
				y;

	if (m || a->nprice == 0)
		return m;
	x = a->price[a->nprice - 1];
	y = b->price[b->nprice - 1];
	return x > y ? -1 : x < y;
}
static int
c_price_asc_first(const MDoc *a, const MDoc *b)
{
	int			m = missing_cmp(a->nprice == 0, b->nprice == 0, true);

	if (m || a->nprice == 0)
		return m;
	return a->price[0] < b->price[0] ? -1 : a->price[0] > b->price[0];
}
static int
c_price_missing50(const MDoc *a, const MDoc *b)
{
	int64		x = a->nprice ? a->price[0] : 50;
	int64		y = b->nprice ? b->price[0] : 50;

	return x < y ? -1 : x > y;
}
static int
c_tag_asc(const MDoc *a, const MDoc *b)
{
	int			m = missing_cmp(a->ntags == 0, b->ntags == 0, false);
	const char *x,
			   *y;

	if (m || a->ntags == 0)
		return m;
	x = a->ntags == 2 && strcmp(a->tags[1], a->tags[0]) < 0 ? a->tags[1] : a->tags[0];
	y = b->ntags == 2 && strcmp(b->tags[1], b->tags[0]) < 0 ? b->tags[1] : b->tags[0];
	return strcmp(x, y);
}
static int
c_tag_desc(const MDoc *a, const MDoc *b)
{
	int			m = missing_cmp(a->ntags == 0, b->ntags == 0, false);
	const char *x,
			   *y;

	if (m || a->ntags == 0)
		return m;
	x = a->ntags == 2 && strcmp(a->tags[1], a->tags[0]) > 0 ? a->tags[1] : a->tags[0];
	y = b->ntags == 2 && strcmp(b->tags[1], b->tags[0]) > 0 ? b->tags[1] : b->tags[0];
	return -strcmp(x, y);
}
static int
c_flag_rating(const MDoc *a, const MDoc *b)
{
	int			m;

	if (a->flag != b->flag)
		return a->flag ? -1 : 1;
	m = missing_cmp(!a->has_rating, !b->has_rating, false);
	if (m || !a->has_rating)
		return m;
	return a->rating < b->rating ? -1 : a->rating > b->rating;
}
static int
c_doc_desc(const MDoc *a, const MDoc *b)
{
	return a < b ? 1 : -1;
}

static void
check_order(const char *what, const char *sort, DocCmp cmp)
{
	char	   *body = psprintf("{\"sort\":%s,\"size\":100}", sort);
	SeSearchResult *res = search(body);
	const MDoc *exp[NDOCS];
	int			n = 0;
	int			i;
	bool		ok = true;

	UT_CHECK(res != NULL, "%s: search failed", what);
	if (res == NULL)
		return;
	for (i = 0; i < NDOCS; i++)
		if (docs[i].live)
			exp[n++] = &docs[i];
	cur_cmp = cmp;
	qsort(exp, n, sizeof(MDoc *), qsort_docs);
	UT_CHECK(res->nhits == n, "%s: %d hits, expected %d", what, res->nhits, n);
	for (i = 0; i < n && i < res->nhits; i++)
		if (strcmp(res->hits[i].id, exp[i]->id) != 0)
		{
			fprintf(stderr, "  %s: position %d is %s, expected %s\n", what, i,
					res->hits[i].id, exp[i]->id);
			ok = false;
			break;
		}
	UT_CHECK(ok, "%s: order differs from model", what);
	UT_CHECK(res->nhits == 0 || (res->hits[0].sort_json != NULL && isnan(res->hits[0].score)),
			 "%s: sort values present and _score null", what);
	UT_CHECK(isnan(res->max_score), "%s: max_score null", what);
}

static SeHit *
find_hit(SeSearchResult *res, const char *id)
{
	int			i;

	for (i = 0; i < res->nhits; i++)
		if (strcmp(res->hits[i].id, id) == 0)
			return &res->hits[i];
	return NULL;
}

static void
test_sort(void)
{
	SeSearchResult *res;
	SeHit	   *h;

	check_order("price asc", "[{\"price\":\"asc\"}]", c_price_asc);
	check_order("price desc", "[{\"price\":{\"order\":\"desc\"}}]", c_price_desc);
	check_order("price asc missing first", "[{\"price\":{\"order\":\"asc\",\"missing\":\"_first\"}}]",
				c_price_asc_first);
	check_order("price missing value", "[{\"price\":{\"missing\":50}}]", c_price_missing50);
	check_order("tag asc", "\"tag\"", c_tag_asc);
	check_order("tag desc", "[{\"tag\":\"desc\"}]", c_tag_desc);
	check_order("flag desc, rating", "[{\"flag\":\"desc\"},\"rating\"]", c_flag_rating);
	check_order("_doc desc", "[{\"_doc\":\"desc\"}]", c_doc_desc);

	/* sort values: long, keyword, missing long (Long.MAX for asc _last) */
	res = search("{\"query\":{\"ids\":{\"values\":[\"d1\",\"d6\",\"d5\",\"d9\"]}},\"sort\":[\"price\",\"tag\",{\"rating\":\"desc\"}]}");
	UT_CHECK(res != NULL && res->nhits == 4, "sort values search");
	if (res != NULL)
	{
		h = find_hit(res, "d1");
		UT_CHECK(h && strcmp(h->sort_json, "[37,\"green\",-1.5]") == 0, "d1 sort %s", h ? h->sort_json : "");
		h = find_hit(res, "d6");
		UT_CHECK(h && strcmp(h->sort_json, "[9223372036854775807,\"blue\",1.0]") == 0,
				 "d6 sort %s", h ? h->sort_json : "");
		h = find_hit(res, "d5");
		UT_CHECK(h && strcmp(h->sort_json, "[85,null,0.5]") == 0, "d5 sort %s", h ? h->sort_json : "");
		h = find_hit(res, "d9");
		UT_CHECK(h && strcmp(h->sort_json, "[33,\"green\",2.5]") == 0, "d9 sort %s", h ? h->sort_json : "");
	}

	/* track_scores keeps scores with a field sort */
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"sort\":[{\"price\":\"asc\"}],\"track_scores\":true}");
	UT_CHECK(res != NULL && res->nhits > 0 && !isnan(res->hits[0].score) && !isnan(res->max_score),
			 "track_scores");
	if (res != NULL && res->nhits > 0)
		UT_CHECK(close_enough(res->hits[0].score, s_gamma(&docs[doc_index(res->hits[0].id)])),
				 "track_scores score");

	/* _score as a sort key, then a field */
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"sort\":[\"_score\",{\"price\":\"asc\"}],\"size\":3}");
	UT_CHECK(res != NULL && res->nhits == 3 && res->hits[0].sort_json != NULL &&
			 res->hits[0].score >= res->hits[1].score, "sort by _score then field");
}

static void
test_paging_and_totals(void)
{
	SeSearchResult *all = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}");
	SeSearchResult *page = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"from\":3,\"size\":4}");
	SeSearchResult *res;
	int			nlive = 0;
	int			i;

	UT_CHECK(all && page && page->nhits == 4, "paging searches");
	if (all && page)
	{
		for (i = 0; i < 4; i++)
			UT_CHECK(strcmp(page->hits[i].id, all->hits[3 + i].id) == 0, "page hit %d", i);
		UT_CHECK(page->total == all->total, "page total");
		UT_CHECK(page->max_score == all->max_score, "page max_score");
	}
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"from\":1000,\"size\":5}");
	UT_CHECK(res && res->nhits == 0 && res->total == all->total, "page past the end");

	for (i = 0; i < NDOCS; i++)
		nlive += docs[i].live;
	res = search(NULL);
	UT_CHECK(res && res->nhits == 10 && res->total == nlive && !res->total_is_lower_bound &&
			 res->track_total, "default search: %d hits", res ? res->nhits : -1);
	if (res)
	{
		/* the first ten live docs in doc order, all scoring 1.0 */
		int			n = 0;
		bool		ok = true;

		for (i = 0; i < NDOCS && n < 10; i++)
			if (docs[i].live)
			{
				if (strcmp(res->hits[n].id, docs[i].id) != 0 || res->hits[n].score != 1.0f)
					ok = false;
				n++;
			}
		UT_CHECK(ok, "match_all order");
	}
	res = search("{\"track_total_hits\":5,\"size\":3}");
	UT_CHECK(res && res->total == 5 && res->total_is_lower_bound && res->nhits == 3 &&
			 strcmp(res->hits[2].id, "d2") == 0, "track_total_hits 5");
	res = search("{\"track_total_hits\":100}");
	UT_CHECK(res && res->total == nlive && !res->total_is_lower_bound, "track_total_hits 100");
	res = search("{\"track_total_hits\":false}");
	UT_CHECK(res && !res->track_total && res->nhits == 10, "track_total_hits false");
	res = search("{\"track_total_hits\":true,\"size\":0}");
	UT_CHECK(res && res->total == nlive && res->nhits == 0 && isnan(res->max_score), "size 0");
	res = search("{\"track_total_hits\":10,\"size\":0,\"query\":{\"match\":{\"body\":\"alpha\"}}}");
	UT_CHECK(res && res->total == 10 && res->total_is_lower_bound, "size 0 gte");
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"min_score\":1.0,\"size\":100}");
	if (res && all)
	{
		int			n = 0;

		for (i = 0; i < all->nhits; i++)
			n += all->hits[i].score >= 1.0f;
		UT_CHECK(res->total == n && res->nhits == n, "min_score");
	}
}

static void
test_source(void)
{
	SeSearchResult *res;
	StringInfoData exp;

	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}}}");
	initStringInfo(&exp);
	doc_source(&docs[2], &exp);
	UT_CHECK(res && res->nhits == 1 && res->hits[0].has_source &&
			 strcmp(res->hits[0].source.data, exp.data) == 0, "_source unchanged");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}},\"_source\":false}");
	UT_CHECK(res && res->nhits == 1 && !res->hits[0].has_source, "_source false");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}},\"_source\":[\"meta.a\"]}");
	UT_CHECK(res && strcmp(res->hits[0].source.data, "{\"meta\":{\"a\":2}}") == 0,
			 "_source meta.a: %s", res ? res->hits[0].source.data : "");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}},\"_source\":\"meta\"}");
	UT_CHECK(res && strcmp(res->hits[0].source.data, "{\"meta\":{\"a\":2,\"b\":\"x2\"}}") == 0,
			 "_source meta: %s", res ? res->hits[0].source.data : "");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}},\"_source\":{\"includes\":[\"t*\",\"*.b\"],\"excludes\":[\"title\"]}}");
	UT_CHECK(res && strcmp(res->hits[0].source.data, "{\"tag\":\"blue\",\"meta\":{\"b\":\"x2\"}}") == 0,
			 "_source includes/excludes: %s", res ? res->hits[0].source.data : "");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d2\"]}},\"_source\":{\"excludes\":[\"meta.*\",\"body\",\"rating\"]}}");
	UT_CHECK(res && strstr(res->hits[0].source.data, "\"meta\":{}") != NULL &&
			 strstr(res->hits[0].source.data, "body") == NULL &&
			 strstr(res->hits[0].source.data, "rating") == NULL &&
			 strstr(res->hits[0].source.data, "\"tag\":\"blue\"") != NULL,
			 "_source excludes: %s", res ? res->hits[0].source.data : "");
	res = search("{\"query\":{\"ids\":{\"values\":[\"d7\"]}},\"_source\":[\"tag\",\"nosuch\"]}");
	UT_CHECK(res && strcmp(res->hits[0].source.data, "{\"tag\":[\"Yellow\",\"red\"]}") == 0,
			 "_source on d7: %s", res ? res->hits[0].source.data : "");
}

static void
check_error_on(SeSearchShard *sh, const char *body, int status, const char *type,
			   const char *reason)
{
	SeError		err;
	SeSearchResult *res = search_on(sh, 1, body, &err);

	UT_CHECK(res == NULL && err.status == status && err.type && strcmp(err.type, type) == 0 &&
			 err.reason && strncmp(err.reason, reason, strlen(reason)) == 0,
			 "error for %s: got %d %s %s", body, err.status, err.type ? err.type : "-",
			 err.reason ? err.reason : "-");
}

static void
check_error(const char *body, int status, const char *type, const char *reason)
{
	check_error_on(&shard, body, status, type, reason);
}

static void
test_errors(void)
{
	StringInfoData deep;
	int			i;

	check_error("{\"query\":{\"foo\":{}}}", 400, "parsing_exception", "unknown query [foo]");
	check_error("{\"query\":{\"match\":{\"a\":\"x\",\"b\":\"y\"}}}", 400, "parsing_exception",
				"[match] query doesn't support multiple fields, found [a] and [b]");
	check_error("{\"query\":{\"term\":{\"a\":\"x\",\"b\":\"y\"}}}", 400, "parsing_exception",
				"[term] query doesn't support multiple fields, found [a] and [b]");
	check_error("{\"query\":{\"range\":{\"price\":{\"gte\":1,\"foo\":2}}}}", 400, "parsing_exception",
				"[range] query does not support [foo]");
	check_error("{\"query\":{\"match\":{\"body\":[\"a\"]}}}", 400, "parsing_exception",
				"[match] unknown token [START_ARRAY] after [body]");
	check_error("{\"query\":{\"match\":{\"body\":{\"query\":\"a\",\"foo\":1}}}}", 400, "parsing_exception",
				"[match] query does not support [foo]");
	check_error("{\"query\":{}}", 400, "parsing_exception", "query malformed, empty clause found");
	check_error("{\"query\":{\"match_all\":{},\"term\":{}}}", 400, "parsing_exception",
				"[match_all] malformed query, expected [END_OBJECT] but found [FIELD_NAME]");
	check_error("{\"query\":{\"bool\":{\"must\":{\"nope\":{}}}}}", 400, "parsing_exception", "unknown query [nope]");
	check_error("{\"aggs\":{\"x\":{\"nope\":{}}}}", 400, "parsing_exception", "Unknown aggregation type [nope]");
	check_error("{\"aggs\":{\"x\":{\"terms\":{\"field\":\"body\"}}}}", 400, "illegal_argument_exception",
				"Fielddata is disabled on [body] in [idx].");
	check_error("{\"from\":9995,\"size\":10}", 400, "illegal_argument_exception",
				"Result window is too large, from + size must be less than or equal to: [10000] but was [10005].");
	check_error("{\"size\":-1}", 400, "illegal_argument_exception", "[size] parameter cannot be negative");
	check_error("{\"sort\":[\"body\"]}", 400, "illegal_argument_exception",
				"Fielddata is disabled on [body] in [idx]. Text fields are not optimised");
	check_error("{\"sort\":[\"nosuch\"]}", 400, "query_shard_exception",
				"No mapping found for [nosuch] in order to sort on");
	check_error("{\"query\":{\"term\":{\"price\":\"abc\"}}}", 400, "query_shard_exception", "failed to create query");
	check_error("{\"query\":{\"prefix\":{\"price\":\"1\"}}}", 400, "query_shard_exception",
				"Can only use prefix queries on keyword and text fields");
	check_error("{\"query\":{\"match\":{\"body\":{\"query\":\"a b\",\"minimum_should_match\":\"x%\"}}}}", 400,
				"illegal_argument_exception", "For input string");
	check_error("{\"query\":{\"term\":{\"tag\":{\"boost\":-1,\"value\":\"x\"}}}}", 400,
				"illegal_argument_exception", "negative [boost] are not allowed");

	initStringInfo(&deep);
	appendStringInfoString(&deep, "{\"query\":");
	for (i = 0; i < 150; i++)
		appendStringInfoString(&deep, "{\"bool\":{\"must\":");
	appendStringInfoString(&deep, "{\"match_all\":{}}");
	for (i = 0; i < 150; i++)
		appendStringInfoString(&deep, "}}");
	appendStringInfoChar(&deep, '}');
	check_error(deep.data, 400, "parsing_exception", "The nested depth of the query exceeds");

	/* unmapped sort with unmapped_type is allowed */
	UT_CHECK(search("{\"sort\":[{\"nosuch\":{\"unmapped_type\":\"long\"}}]}") != NULL, "unmapped_type");
}

static void
test_multi_shard_and_count(void)
{
	SeSearchShard two[2];
	SeSegmentReader *ra[1],
			   *rb[1];
	SeSearchResult *res,
			   *r0,
			   *r1;
	SeError		err;
	SeSearchRequest *req;
	int64		count = -1;
	int			i,
				expected = 0;
	bool		ok = true;

	ra[0] = index_segment(mapping, &docs[30], 30, NULL, 7);
	rb[0] = index_segment(mapping, &docs[0], 30, NULL, 8);
	memset(two, 0, sizeof(two));
	two[0].index = "idx";
	two[0].shard = 0;
	two[0].mapping = mapping;
	two[0].nsegments = 1;
	two[0].segments = ra;
	two[1] = two[0];
	two[1].shard = 1;
	two[1].segments = rb;

	/* all scores 1: shard 0's docs first, each in doc order */
	res = search_on(two, 2, "{\"size\":60}", &err);
	UT_CHECK(res && res->nhits == 60 && res->shards_total == 2 && res->shards_successful == 2,
			 "two shards");
	if (res)
		for (i = 0; i < 60; i++)
			if (strcmp(res->hits[i].id, docs[i < 30 ? 30 + i : i - 30].id) != 0 ||
				res->hits[i].shard_idx != (i < 30 ? 0 : 1))
				ok = false;
	UT_CHECK(ok, "two-shard tie order");

	/* BM25 statistics are per shard */
	res = search_on(two, 2, "{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}", &err);
	r0 = search_on(&two[0], 1, "{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}", &err);
	r1 = search_on(&two[1], 1, "{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}", &err);
	UT_CHECK(res && r0 && r1 && res->nhits == r0->nhits + r1->nhits, "per-shard search");
	ok = true;
	if (res && r0 && r1)
	{
		for (i = 0; i < res->nhits; i++)
		{
			SeHit	   *h = find_hit(res->hits[i].shard_idx == 0 ? r0 : r1, res->hits[i].id);

			if (h == NULL || h->score != res->hits[i].score)
				ok = false;
			if (i > 0 && res->hits[i].score > res->hits[i - 1].score)
				ok = false;
		}
	}
	UT_CHECK(ok, "merged scores equal per-shard scores, in order");

	/* _count */
	se_error_init(&err);
	req = se_search_parse_count(parse_json("{\"query\":{\"match\":{\"body\":\"gamma\"}}}"), &err);
	UT_CHECK(req && se_search_count(req, &shard, 1, &count, &err), "count");
	for (i = 0; i < NDOCS; i++)
		expected += docs[i].live && p_gamma(&docs[i]);
	UT_CHECK(count == expected, "count " INT64_FORMAT " expected %d", count, expected);
	se_error_init(&err);
	req = se_search_parse_count(parse_json("{\"size\":1}"), &err);
	UT_CHECK(req == NULL && strcmp(err.reason, "request does not support [size]") == 0, "count body");
}

static void
test_response_json(void)
{
	SeError		err;
	SeSearchResult *res = search_on(&shard, 1,
									"{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":2,\"_source\":[\"tag\"],\"sort\":[\"_score\",\"_doc\"]}",
									&err);
	StringInfoData out;
	SeJson	   *j,
			   *hits,
			   *total;
	float		vals[] = {1.0f, 0.1f, 0.2876821f, 1e-5f, 123456.78f, 3.4028235e38f};
	int			i;

	UT_CHECK(res != NULL, "response search");
	if (res == NULL)
		return;
	initStringInfo(&out);
	se_search_result_to_json(res, &shard, 7, &out);
	se_error_init(&err);
	j = se_json_parse(out.data, out.len, NULL, &err);
	UT_CHECK(j != NULL, "response is JSON: %s", out.data);
	if (j == NULL)
		return;
	UT_CHECK(se_json_get(j, "took")->u.n.i == 7, "took");
	UT_CHECK(se_json_get(j, "timed_out")->type == SE_JSON_FALSE, "timed_out");
	UT_CHECK(se_json_get(se_json_get(j, "_shards"), "successful")->u.n.i == 1, "_shards");
	hits = se_json_get(j, "hits");
	total = se_json_get(hits, "total");
	UT_CHECK(total && se_json_get(total, "value")->u.n.i == res->total &&
			 strcmp(se_json_get(total, "relation")->u.s.str, "eq") == 0, "total");
	UT_CHECK(strcmp(se_json_get(se_json_get(hits, "hits")->u.a.items[0], "_index")->u.s.str, "idx") == 0,
			 "_index");
	UT_CHECK((float) se_json_get(se_json_get(hits, "hits")->u.a.items[0], "_score")->u.n.d == res->hits[0].score,
			 "_score round trips");
	UT_CHECK(se_json_get(se_json_get(hits, "hits")->u.a.items[0], "sort")->u.a.count == 2, "sort array");

	for (i = 0; i < (int) lengthof(vals); i++)
	{
		StringInfoData f;

		initStringInfo(&f);
		se_search_write_float(&f, vals[i]);
		UT_CHECK(strtof(f.data, NULL) == vals[i], "float %s round trips", f.data);
	}

	/* total omitted when not tracked */
	res = search("{\"track_total_hits\":false,\"size\":1}");
	resetStringInfo(&out);
	se_search_result_to_json(res, &shard, 0, &out);
	UT_CHECK(strstr(out.data, "\"total\":{") == NULL && strstr(out.data, "\"max_score\":1.0") != NULL,
			 "no total: %s", out.data);
}

/* Lucene's float32 formula, step by step, for a bit-exact comparison. */
static float
lucene_score(int64 df, int64 n, int64 sum_ttf, int freq, int len, float boost)
{
	volatile float idf = (float) log(1 + (n - df + 0.5) / (df + 0.5));
	volatile float avgdl = (float) ((double) sum_ttf / (double) n);
	volatile float weight = boost * idf;
	volatile float dl = (float) sf_byte4_to_int(sf_int_to_byte4(len));
	volatile float t = 0.75f * dl;
	volatile float cache;
	volatile float denom;

	t = t / avgdl;
	t = (1 - 0.75f) + t;
	t = 1.2f * t;
	cache = 1.0f / t;
	denom = 1.0f + (float) freq * cache;
	return weight - weight / denom;
}

static void
test_exact_float(void)
{
	SeSearchResult *res = search("{\"query\":{\"match\":{\"body\":{\"query\":\"gamma\",\"boost\":1.7}}},\"size\":100}");
	int64		df = 0,
				n = 0,
				sum = 0;
	int			i;
	bool		ok = true;

	for (i = 0; i < NDOCS; i++)
	{
		if (docs[i].nbody == 0)
			continue;
		n++;
		sum += docs[i].nbody;
		df += has_body(&docs[i], "gamma");
	}
	UT_CHECK(res != NULL && res->nhits > 0, "exact float search");
	if (res == NULL)
		return;
	for (i = 0; i < res->nhits; i++)
	{
		const MDoc *d = &docs[doc_index(res->hits[i].id)];
		float		exp = lucene_score(df, n, sum, count_word(d->body, d->nbody, "gamma"),
									   d->nbody, 1.7f);

		if (exp != res->hits[i].score)
		{
			fprintf(stderr, "  %s: %.9g != lucene %.9g\n", d->id, res->hits[i].score, exp);
			ok = false;
		}
	}
	UT_CHECK(ok, "scores are bit-exact with Lucene's float32 formula");
}

/* Mutated query bodies must yield a result or a clean error, never a crash. */
static void
test_fuzz(void)
{
	static const char *const seeds[] = {
		"{\"query\":{\"bool\":{\"must\":[{\"match\":{\"body\":{\"query\":\"gamma rho\",\"operator\":\"and\"}}}],\"filter\":{\"range\":{\"price\":{\"gte\":10}}},\"should\":{\"match_phrase\":{\"body\":{\"query\":\"beta gamma\",\"slop\":2}}}}},\"sort\":[{\"price\":{\"order\":\"desc\",\"missing\":\"_first\"}}],\"_source\":{\"includes\":[\"t*\"]}}",
		"{\"query\":{\"multi_match\":{\"query\":\"theta alpha\",\"fields\":[\"body\",\"title^2\",\"t*\"],\"minimum_should_match\":\"3<80%\"}},\"from\":2,\"size\":5}",
		"{\"query\":{\"dis_max\":{\"queries\":[{\"terms\":{\"tag\":[\"red\",\"blue\"]}},{\"prefix\":{\"tag\":\"gr\"}},{\"range\":{\"date\":{\"gt\":\"now-100y/d\"}}}],\"tie_breaker\":0.5}},\"track_total_hits\":3}",
		"{\"query\":{\"constant_score\":{\"filter\":{\"exists\":{\"field\":\"meta\"}},\"boost\":2}},\"sort\":[\"tag\",\"_doc\"]}"
	};
	int			iter;
	int			crashes = 0;

	rng = 777;
	for (iter = 0; iter < 1500; iter++)
	{
		const char *seed = seeds[iter % lengthof(seeds)];
		int			len = strlen(seed);
		char	   *buf = pstrdup(seed);
		int			nmut = 1 + next_rand() % 3;
		int			k;
		SeError		err;
		SeJson	   *j;

		for (k = 0; k < nmut; k++)
		{
			int			pos = next_rand() % len;
			static const char repl[] = "{}[]\":,0123456789-.aeZ*^%<";

			buf[pos] = repl[next_rand() % (sizeof(repl) - 1)];
		}
		se_error_init(&err);
		j = se_json_parse(buf, len, NULL, &err);
		if (j != NULL)
		{
			SeSearchRequest *req;

			se_error_init(&err);
			req = se_search_parse(j, 10000, &err);
			if (req != NULL)
			{
				SeSearchResult *res = se_search_run(req, &shard, 1, &err);

				if (res == NULL && !se_error_is_set(&err))
					crashes++;
			}
			else if (!se_error_is_set(&err))
				crashes++;
		}
		pfree(buf);
	}
	UT_CHECK(crashes == 0, "fuzz: %d failures without an error", crashes);
}

/* ---------------------------------------------------------------------
 * Top-k skipping: block-max WAND / conjunctions / impacts against
 * exhaustive evaluation on a Zipf corpus large enough for many postings
 * blocks
 * ---------------------------------------------------------------------
 */
#define ZVOCAB 400

static double zipf_cdf[ZVOCAB];

static void
zipf_init(void)
{
	double		sum = 0;
	int			i;

	for (i = 0; i < ZVOCAB; i++)
	{
		sum += 1.0 / (i + 1);
		zipf_cdf[i] = sum;
	}
	for (i = 0; i < ZVOCAB; i++)
		zipf_cdf[i] /= sum;
}

static int
zipf_word(void)
{
	double		u = (next_rand() * 32768.0 + next_rand()) / (32768.0 * 32768.0);
	int			lo = 0,
				hi = ZVOCAB - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Word of a frequency band: 0 frequent, 1 middle, 2 rare. */
static int
band_word(int band)
{
	if (band == 0)
		return next_rand() % 8;
	if (band == 1)
		return 8 + next_rand() % 60;
	return 68 + next_rand() % (ZVOCAB - 68);
}

static SeSegmentReader *
zipf_segment(int ndocs, int seg)
{
	const char **src = palloc(sizeof(char *) * ndocs);
	int			i,
				j;

	for (i = 0; i < ndocs; i++)
	{
		StringInfoData b;
		int			n = (next_rand() % 10 == 0) ? 60 + next_rand() % 120 : 1 + next_rand() % 30;

		initStringInfo(&b);
		appendStringInfoString(&b, "{\"body\":\"");
		for (j = 0; j < n; j++)
			appendStringInfo(&b, "%sw%d", j ? " " : "", zipf_word());
		/* "px py" mostly as a bigram: phrase freqs close to term freqs */
		if (next_rand() % 3 == 0)
		{
			int			k = 1 + next_rand() % 3;

			while (k-- > 0)
				appendStringInfoString(&b, next_rand() % 8 ? " px py" : " py px");
		}
		appendStringInfoString(&b, "\",\"title\":\"");
		n = 1 + next_rand() % 4;
		for (j = 0; j < n; j++)
			appendStringInfo(&b, "%sw%d", j ? " " : "", zipf_word() % 50);
		/* keyword values: no norms, so scores tie a lot */
		appendStringInfo(&b, "\",\"tag\":[\"t%d\",\"t%d\"]}", next_rand() % 5,
						 next_rand() % 9);
		src[i] = b.data;
	}
	return index_segment(mapping, NULL, ndocs, src, seg);
}

/* A random query of one of the shapes that can skip, or must not break. */
static void
random_query(StringInfo q, int kind)
{
	int			a = band_word(next_rand() % 2),
				b = band_word(next_rand() % 3),
				c = band_word(next_rand() % 3),
				d = band_word(0);

	switch (kind)
	{
		case 0:
			appendStringInfo(q, "{\"match\":{\"body\":\"w%d w%d w%d\"}}", a, b, c);
			break;
		case 1:
			appendStringInfo(q, "{\"match\":{\"body\":{\"query\":\"w%d w%d\",\"operator\":\"and\"}}}",
							 band_word(0), band_word(next_rand() % 2));
			break;
		case 2:
			appendStringInfo(q, "{\"bool\":{\"should\":[{\"match\":{\"body\":\"w%d\"}},"
							 "{\"match\":{\"title\":{\"query\":\"w%d\",\"boost\":2.5}}},"
							 "{\"term\":{\"body\":{\"value\":\"w%d\",\"boost\":0.5}}},"
							 "{\"match\":{\"body\":\"w%d w%d\"}}]}}", a, b % 50, c, d, b);
			break;
		case 3:
			appendStringInfo(q, "{\"multi_match\":{\"query\":\"w%d w%d\",\"fields\":[\"body\",\"title^2\"],"
							 "\"tie_breaker\":%s}}", a, b % 50,
							 next_rand() % 2 ? "0.3" : "0");
			break;
		case 4:
			appendStringInfo(q, "{\"dis_max\":{\"queries\":[{\"match\":{\"body\":\"w%d\"}},"
							 "{\"match\":{\"body\":\"w%d w%d\"}}],\"tie_breaker\":0.5}}", a, b, c);
			break;
		case 5:
			appendStringInfo(q, "{\"bool\":{\"should\":[{\"match\":{\"body\":\"w%d w%d\"}}],"
							 "\"must_not\":[{\"match\":{\"body\":\"w%d\"}}]}}", a, b, d);
			break;
		case 6:
			appendStringInfo(q, "{\"bool\":{\"must\":[{\"match\":{\"body\":\"w%d\"}}],"
							 "\"should\":[{\"match\":{\"body\":\"w%d\"}}]}}", a, b);
			break;
		case 7:
			appendStringInfo(q, "{\"match\":{\"body\":{\"query\":\"w%d w%d w%d w%d\","
							 "\"minimum_should_match\":2}}}", a, b, c, d);
			break;
		case 8:
			appendStringInfo(q, "{\"match\":{\"body\":\"w%d\"}}", a);
			break;
		case 9:
			appendStringInfo(q, "{\"match_phrase\":{\"body\":{\"query\":\"w%d w%d\",\"slop\":%d}}}",
							 band_word(0), band_word(0), (int) (next_rand() % 2) * 2);
			break;
		case 10:
			appendStringInfo(q, "{\"bool\":{\"must\":[{\"match\":{\"body\":\"w%d\"}},{\"match\":{\"body\":\"w%d\"}}],"
							 "\"filter\":[{\"match\":{\"title\":\"w%d\"}}]}}", a, d, next_rand() % 3);
			break;
		case 11:
			appendStringInfo(q, "{\"bool\":{\"should\":[{\"bool\":{\"must\":[{\"match\":{\"body\":\"w%d\"}},"
							 "{\"match\":{\"body\":\"w%d\"}}]}},{\"match\":{\"body\":\"w%d w%d\"}}]}}",
							 d, a, b, c);
			break;
		case 12:
			appendStringInfo(q, "{\"constant_score\":{\"filter\":{\"match\":{\"body\":\"w%d\"}},\"boost\":1.5}}", a);
			break;
		case 13:
			if (next_rand() % 2)
				appendStringInfoString(q, "{\"match_phrase\":{\"body\":\"px py\"}}");
			else
				appendStringInfo(q, "{\"bool\":{\"should\":[{\"match_phrase\":{\"body\":\"px py\"}},"
								 "{\"match\":{\"body\":\"w%d\"}}]}}", b);
			break;
		default:
			appendStringInfo(q, "{\"bool\":{\"should\":[{\"term\":{\"tag\":\"t%d\"}},"
							 "{\"term\":{\"tag\":{\"value\":\"t%d\",\"boost\":2}}},"
							 "{\"match\":{\"title\":\"w%d\"}}]}}",
							 next_rand() % 5, next_rand() % 9, a % 50);
			break;
	}
}

static bool
same_float(float a, float b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(float)) == 0;
}

static void
test_topk_skipping(void)
{
	static const char *const tths[] = {
		"", ",\"track_total_hits\":false", ",\"track_total_hits\":0",
		",\"track_total_hits\":7", ",\"track_total_hits\":300",
		",\"track_total_hits\":true", ",\"track_total_hits\":2000"
	};
	static const int sizes[] = {1, 3, 10, 10, 25};
	SeSearchShard zs[2];
	SeSegmentReader *za[3],
			   *zb[2];
	const uint64 *zlive[3];
	int			sizes_a[3] = {2600, 1700, 600};
	int			iter,
				s,
				i;
	int			mismatches = 0,
				skipped_exact = 0,
				nqueries = 0;
	int64		docs_exh = 0,
				docs_skip = 0,
				d_exh,
				d_skip;
	int			exact_skipped = 0,
				more = 0;
	int64		g0,
				group_skips = 0;

	rng = 4242;
	zipf_init();
	for (s = 0; s < 3; s++)
	{
		uint64	   *lv = se_livedocs_new(sizes_a[s]);

		za[s] = zipf_segment(sizes_a[s], 20 + s);
		for (i = 0; i < sizes_a[s]; i++)
			if (next_rand() % 19 == 0)
				se_livedocs_clear(lv, i);
		zlive[s] = s == 1 ? NULL : lv;
	}
	zb[0] = zipf_segment(1500, 30);
	/* common terms of more than 32 postings blocks have skip groups */
	zb[1] = zipf_segment(20000, 31);
	memset(zs, 0, sizeof(zs));
	zs[0].index = "z";
	zs[0].mapping = mapping;
	zs[0].nsegments = 3;
	zs[0].segments = za;
	zs[0].live_docs = zlive;
	zs[1] = zs[0];
	zs[1].shard = 1;
	zs[1].nsegments = 2;
	zs[1].segments = zb;
	zs[1].live_docs = NULL;

	for (iter = 0; iter < 300; iter++)
	{
		StringInfoData body;
		SeSearchResult *exh,
				   *skp;
		SeError		err;
		int			kind = iter % 15;
		int			tth = next_rand() % lengthof(tths);
		int			nsh = 1 + (iter % 4 == 3);
		int64		d0;
		bool		ok;

		initStringInfo(&body);
		appendStringInfoString(&body, "{\"query\":");
		random_query(&body, kind);
		appendStringInfo(&body, ",\"size\":%d,\"from\":%d%s,\"_source\":false}",
						 sizes[next_rand() % lengthof(sizes)],
						 next_rand() % 4 == 0 ? 4 : 0, tths[tth]);

		se_search_block_max = false;
		d0 = se_search_stat_docs;
		exh = search_on(zs, nsh, body.data, &err);
		d_exh = se_search_stat_docs - d0;
		se_search_block_max = true;
		d0 = se_search_stat_docs;
		g0 = se_search_stat_group_skips;
		skp = search_on(zs, nsh, body.data, &err);
		d_skip = se_search_stat_docs - d0;
		group_skips += se_search_stat_group_skips - g0;
		/* thresholds this corpus reaches quickly: false, 0, 7 */
		if (tth >= 1 && tth <= 3)
		{
			docs_exh += d_exh;
			docs_skip += d_skip;
		}
		/*
		 * an exact count means no skipping at all, unless it is known up
		 * front (shard 1 has no deletions; see below)
		 */
		if (tth == 5 && nsh == 1 && d_exh != d_skip)
			exact_skipped++;
		nqueries++;
		if (exh == NULL || skp == NULL)
		{
			UT_CHECK(false, "skipping search failed: %s", body.data);
			continue;
		}
		/* without track_total_hits the count is not reported */
		ok = exh->nhits == skp->nhits && same_float(exh->max_score, skp->max_score) &&
			exh->track_total == skp->track_total &&
			(!exh->track_total ||
			 (exh->total == skp->total &&
			  exh->total_is_lower_bound == skp->total_is_lower_bound));
		for (i = 0; ok && i < exh->nhits; i++)
			ok = exh->hits[i].shard_idx == skp->hits[i].shard_idx &&
				exh->hits[i].segment == skp->hits[i].segment &&
				exh->hits[i].doc == skp->hits[i].doc &&
				same_float(exh->hits[i].score, skp->hits[i].score);
		if (!ok)
		{
			if (mismatches++ < 5)
			{
				fprintf(stderr, "  mismatch: %s\n    exhaustive: %d hits total " INT64_FORMAT "%s max %.9g;"
						" skipping: %d hits total " INT64_FORMAT "%s max %.9g\n", body.data,
						exh->nhits, exh->total, exh->total_is_lower_bound ? "+" : "",
						exh->max_score, skp->nhits, skp->total,
						skp->total_is_lower_bound ? "+" : "", skp->max_score);
				for (i = 0; i < Min(exh->nhits, skp->nhits); i++)
					fprintf(stderr, "    %d: %d/%d/%d %.9g | %d/%d/%d %.9g\n", i,
							exh->hits[i].shard_idx, exh->hits[i].segment, exh->hits[i].doc,
							exh->hits[i].score, skp->hits[i].shard_idx,
							skp->hits[i].segment, skp->hits[i].doc, skp->hits[i].score);
			}
		}
		if (d_skip > d_exh)
			more++;
		pfree(body.data);
	}
	UT_CHECK(mismatches == 0, "top-k skipping: %d of %d queries differ from exhaustive evaluation",
			 mismatches, nqueries);

	/* skipping must actually skip: the same queries take fewer docs */
	printf("top-k skipping: %d queries; docs taken from scorers with an inexact count: "
		   "exhaustive " INT64_FORMAT ", skipping " INT64_FORMAT "\n", nqueries,
		   docs_exh, docs_skip);
	/* (the mix includes shapes that are always evaluated exhaustively) */
	UT_CHECK(docs_skip * 10 < docs_exh * 7, "skipping takes far fewer docs");
	UT_CHECK(more == 0, "skipping never takes more docs (%d queries did)", more);
	printf("top-k skipping: " INT64_FORMAT " skip groups (4096 docs) passed over at once\n",
		   group_skips);
	UT_CHECK(group_skips > 0, "whole skip groups are skipped");
	UT_CHECK(exact_skipped == 0, "%d queries skipped with track_total_hits true", exact_skipped);

	/* one query per shape, default settings: skipping engages for each shape that supports it */
	for (i = 0; i <= 11; i++)
	{
		StringInfoData body;
		SeError		err;
		int64		d0,
					d1;

		if (i == 7 || i == 9)
			continue;			/* msm > 1, sloppy phrases: evaluated exhaustively */
		initStringInfo(&body);
		appendStringInfoString(&body, "{\"query\":");
		random_query(&body, i);
		appendStringInfoString(&body, ",\"size\":3,\"track_total_hits\":false}");
		se_search_block_max = false;
		d0 = se_search_stat_docs;
		(void) search_on(zs, 1, body.data, &err);
		d0 = se_search_stat_docs - d0;
		se_search_block_max = true;
		d1 = se_search_stat_docs;
		(void) search_on(zs, 1, body.data, &err);
		d1 = se_search_stat_docs - d1;
		if (getenv("SE_DEBUG_SKIP"))
			fprintf(stderr, "shape %d: %d -> %d\n", i, (int) d0, (int) d1);
		if (d0 > 200 && d1 < d0)
			skipped_exact++;
		else if (d0 > 200)
			fprintf(stderr, "  no skipping for %s (%d docs both ways)\n", body.data, (int) d0);
		pfree(body.data);
	}
	UT_CHECK(skipped_exact >= 8, "skipping engaged for %d of 10 query shapes", skipped_exact);

	/* track_total_hits: true counts exactly, never skips */
	{
		SeError		err;
		int64		d0 = se_search_stat_docs,
					d1;
		SeSearchResult *res;

		se_search_block_max = false;
		res = search_on(zs, 1, "{\"query\":{\"match\":{\"body\":\"w0 w1\"}},\"size\":2,\"track_total_hits\":true}", &err);
		d0 = se_search_stat_docs - d0;
		se_search_block_max = true;
		d1 = se_search_stat_docs;
		res = search_on(zs, 1, "{\"query\":{\"match\":{\"body\":\"w0 w1\"}},\"size\":2,\"track_total_hits\":true}", &err);
		d1 = se_search_stat_docs - d1;
		UT_CHECK(res && !res->total_is_lower_bound && res->total > 1000 && d0 == d1,
				 "track_total_hits true is exact and exhaustive");
	}

	/*
	 * A term's count on segments without deletions is its doc_freq: exact
	 * without counting, so even track_total_hits true skips, and a bare
	 * count reads no postings.  With deletions (shard 0) it is counted.
	 */
	{
		const char *q = "{\"query\":{\"match\":{\"body\":\"w0\"}},\"size\":2,\"track_total_hits\":true}";
		const char *q0 = "{\"query\":{\"match\":{\"body\":\"w0\"}},\"size\":0,\"track_total_hits\":true}";
		SeError		err;
		SeSearchResult *exh,
				   *skp,
				   *cnt;
		int64		d0 = se_search_stat_docs,
					d1,
					d2;

		se_search_block_max = false;
		exh = search_on(&zs[1], 1, q, &err);
		d0 = se_search_stat_docs - d0;
		se_search_block_max = true;
		d1 = se_search_stat_docs;
		skp = search_on(&zs[1], 1, q, &err);
		d1 = se_search_stat_docs - d1;
		d2 = se_search_stat_docs;
		cnt = search_on(&zs[1], 1, q0, &err);
		d2 = se_search_stat_docs - d2;
		UT_CHECK(exh && skp && cnt && !skp->total_is_lower_bound &&
				 skp->total == exh->total && cnt->total == exh->total &&
				 exh->total > 5000 && skp->nhits == 2 &&
				 skp->hits[0].doc == exh->hits[0].doc && skp->hits[1].doc == exh->hits[1].doc,
				 "a known count is exact, with the same hits");
		UT_CHECK(d1 * 10 < d0 && d2 == 0,
				 "a known count skips (" INT64_FORMAT " of " INT64_FORMAT " docs) and a bare count reads none (" INT64_FORMAT ")",
				 d1, d0, d2);
		se_search_block_max = false;
		d0 = se_search_stat_docs;
		exh = search_on(&zs[0], 1, q, &err);
		d0 = se_search_stat_docs - d0;
		se_search_block_max = true;
		d1 = se_search_stat_docs;
		skp = search_on(&zs[0], 1, q, &err);
		d1 = se_search_stat_docs - d1;
		UT_CHECK(exh && skp && skp->total == exh->total && d0 == d1,
				 "with deletions the count is counted, exhaustively");
	}
	se_search_block_max = true;
}

/* ---------------------------------------------------------------------
 * The query phase as a message (shard_wire.c): shards answered through a
 * transport give exactly the result of running them in place.
 * ---------------------------------------------------------------------
 */
typedef struct WireTransport
{
	SeSearchRequest *req;
	SeSearchShard *shards;
	int			mode;			/* 0 intact, 1 truncated, 2 no answer */
	int			received;
} WireTransport;

static bool
wire_receive(void *arg, int i, StringInfo msg)
{
	WireTransport *wt = arg;

	wt->received++;
	if (wt->mode == 2)
		return false;
	se_search_query_phase(wt->req, &wt->shards[i], i, msg);
	if (wt->mode == 1 && msg->len > 3)
		msg->len -= 3;
	return true;
}

static char *
result_json(SeSearchResult *res, SeSearchShard *shards, SeError *err)
{
	StringInfoData out;

	initStringInfo(&out);
	if (res == NULL)
		appendStringInfo(&out, "error %d %s %s", err->status, err->type, err->reason);
	else
		se_search_result_to_json(res, shards, 0, &out);
	return out.data;
}

static void
test_shard_wire(void)
{
	static const char *const bodies[] = {
		"{\"query\":{\"match\":{\"body\":\"gamma delta\"}},\"size\":25}",
		"{\"query\":{\"match\":{\"body\":\"alpha\"}},\"track_total_hits\":3,\"size\":4}",
		"{\"query\":{\"match\":{\"body\":\"beta\"}},\"track_total_hits\":false}",
		"{\"query\":{\"match\":{\"body\":\"beta\"}},\"track_total_hits\":true,\"from\":7,\"size\":9}",
		"{\"sort\":[{\"tag\":\"asc\"},{\"price\":{\"order\":\"desc\",\"missing\":\"_first\"}}],\"size\":40}",
		"{\"query\":{\"match\":{\"body\":\"eta\"}},\"sort\":[{\"rating\":\"desc\"},\"_score\"],\"track_scores\":true}",
		"{\"sort\":[\"_doc\"],\"from\":3,\"size\":5}",
		"{\"query\":{\"match\":{\"body\":\"iota kappa\"}},\"min_score\":0.5}",
		"{\"query\":{\"match_none\":{}}}",
		"{\"size\":0}",
		"{\"timeout\":\"0ms\",\"query\":{\"match\":{\"body\":\"beta\"}}}",	/* timed out */
		"{\"sort\":[{\"body\":\"asc\"}]}",	/* the shards' error */
	};
	SeSearchShard three[3];
	SeSegmentReader *ra[1],
			   *rb[1];
	int			b,
				mode;

	ra[0] = index_segment(mapping, &docs[30], 30, NULL, 17);
	rb[0] = index_segment(mapping, &docs[0], 30, NULL, 18);
	three[0] = shard;
	three[1] = shard;
	three[1].shard = 1;
	three[1].nsegments = 1;
	three[1].segments = ra;
	three[1].live_docs = NULL;
	three[2] = three[1];
	three[2].shard = 2;
	three[2].segments = rb;

	for (b = 0; b < lengthof(bodies); b++)
	{
		SeError		err;
		SeSearchRequest *req;
		char	   *expected;

		se_error_init(&err);
		req = se_search_parse(parse_json(bodies[b]), 10000, &err);
		expected = result_json(req ? se_search_run(req, three, 3, &err) : NULL, three, &err);
		for (mode = 0; mode < 3; mode++)
		{
			bool		remote[3] = {false, true, true};
			WireTransport wt = {req, three, mode, 0};
			SeShardTransport t = {&wt, remote, wire_receive};
			char	   *got;

			se_error_init(&err);
			got = result_json(se_search_run_remote(req, three, 3, &t, &err), three, &err);
			UT_CHECK(strcmp(got, expected) == 0 && wt.received == 2,
					 "body %d mode %d: %s\nexpected %s", b, mode, got, expected);
		}
	}
}


/* ---------------------------------------------------------------------
 * Interrupt checks, the timeout, query size limits
 * ---------------------------------------------------------------------
 */
static int	hook_calls;
static int	hook_stop_after;	/* say stop from this call on; 0 never */
static int	hook_sleep_us;

static bool
test_hook(void)
{
	hook_calls++;
	if (hook_sleep_us > 0)
		usleep(hook_sleep_us);
	return hook_stop_after == 0 || hook_calls < hook_stop_after;
}

/* A shard of long documents over a small vocabulary: phrases cost. */
static void
long_docs_shard(SeSearchShard *sh, SeSegmentReader **segs)
{
	const char **sources = palloc(sizeof(char *) * 40);
	int			i,
				j;

	for (i = 0; i < 40; i++)
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "{\"body\":\"");
		for (j = 0; j < 1500; j++)
			appendStringInfo(&b, "%s%s", j ? " " : "", vocab[(i * 7 + j * 13 + j / 9) % 12]);
		appendStringInfoString(&b, "\",\"tag\":\"red\"}");
		sources[i] = b.data;
	}
	segs[0] = index_segment(mapping, NULL, 40, sources, 21);
	memset(sh, 0, sizeof(*sh));
	sh->index = "long";
	sh->mapping = mapping;
	sh->nsegments = 1;
	sh->segments = segs;
}

static void
test_interrupts(void)
{
	SeSearchShard lsh;
	SeSegmentReader *lsegs[1];
	StringInfoData body;
	StringInfoData json;
	SeSearchResult *plain,
			   *hooked,
			   *res;
	SeError		err;
	int			i;

	long_docs_shard(&lsh, lsegs);
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"query\":{\"match_phrase\":{\"body\":{\"slop\":20,\"query\":\"");
	for (i = 0; i < 60; i++)
		appendStringInfo(&body, "%s%s", i ? " " : "", vocab[(i * 5) % 12]);
	appendStringInfoString(&body, "\"}}},\"size\":40}");

	/* the hook runs every few thousand units, and changes nothing */
	plain = search_on(&lsh, 1, body.data, &err);
	se_search_interrupt_hook = test_hook;
	hook_calls = 0;
	hooked = search_on(&lsh, 1, body.data, &err);
	UT_CHECK(plain && hooked && hook_calls > 10, "interrupt hook called %d times", hook_calls);
	UT_CHECK(plain && hooked && strcmp(result_json(plain, &lsh, &err), result_json(hooked, &lsh, &err)) == 0,
			 "a hook that goes on changes nothing");

	/* a hook that says stop fails the shard's query phase ... */
	hook_calls = 0;
	hook_stop_after = 3;
	res = search_on(&lsh, 1, body.data, &err);
	UT_CHECK(res == NULL && err.type && strcmp(err.type, "task_cancelled_exception") == 0 && hook_calls == 3,
			 "stopped by the hook: %s after %d calls", err.type ? err.type : "-", hook_calls);
	/* ... and leaves nothing armed: scans, counts and searches run on */
	hook_stop_after = 0;
	hooked = search_on(&lsh, 1, body.data, &err);
	UT_CHECK(plain && hooked && strcmp(result_json(plain, &lsh, &err), result_json(hooked, &lsh, &err)) == 0,
			 "the next search is whole");

	/* timeout 0: the first check stops; partial, counted as a lower bound */
	res = search_on(&lsh, 1, "{\"timeout\":\"0ms\",\"query\":{\"match\":{\"tag\":\"red\"}}}", &err);
	UT_CHECK(res && res->timed_out && res->total_is_lower_bound && res->total <= 1,
			 "timeout 0ms: timed_out %d total " INT64_FORMAT, res ? res->timed_out : -1, res ? res->total : -1);
	initStringInfo(&json);
	if (res)
		se_search_result_to_json(res, &lsh, 0, &json);
	UT_CHECK(strstr(json.data, "\"timed_out\":true") && strstr(json.data, "\"relation\":\"gte\""),
			 "timed out response: %s", json.data);

	/* a slow check past the deadline: the hits collected so far stay */
	hook_sleep_us = 3000;
	res = search_on(&lsh, 1, "{\"timeout\":\"1ms\",\"query\":{\"match_phrase\":{\"body\":{\"slop\":3,\"query\":\"alpha gamma\"}}},\"size\":40}", &err);
	plain = search_on(&lsh, 1, "{\"query\":{\"match_phrase\":{\"body\":{\"slop\":3,\"query\":\"alpha gamma\"}}},\"size\":40}", &err);
	hook_sleep_us = 0;
	UT_CHECK(res && plain && res->timed_out && !plain->timed_out && res->total < plain->total &&
			 res->nhits == res->total, "partial results: " INT64_FORMAT " of " INT64_FORMAT,
			 res ? res->total : -1, plain ? plain->total : -1);
	if (res && plain)
		for (i = 0; i < res->nhits; i++)
		{
			SeHit	   *h = find_hit(plain, res->hits[i].id);

			UT_CHECK(h && h->score == res->hits[i].score, "partial hit %s as in the full result", res->hits[i].id);
		}

	/* a long timeout changes nothing; bad values fail as ES */
	res = search_on(&lsh, 1, "{\"timeout\":\"1m\",\"query\":{\"match_phrase\":{\"body\":{\"slop\":3,\"query\":\"alpha gamma\"}}},\"size\":40}", &err);
	UT_CHECK(res && plain && !res->timed_out &&
			 strcmp(result_json(res, &lsh, &err), result_json(plain, &lsh, &err)) == 0, "timeout 1m");
	check_error("{\"timeout\":\"10\"}", 400, "parse_exception",
				"failed to parse setting [timeout] with value [10] as a time value: unit is missing or unrecognized");
	check_error("{\"timeout\":\"1.5s\"}", 400, "parse_exception",
				"failed to parse [1.5s], fractional time values are not supported");
	UT_CHECK(search("{\"timeout\":\"-1\"}") && search("{\"timeout\":\"500micros\"}") &&
			 search("{\"timeout\":\"2d\"}"), "timeout values");
	se_search_interrupt_hook = NULL;
}

static void
test_limits(void)
{
	SeSearchShard lim = shard;
	SeError		err;
	int			saved = se_search_max_clause_count;

	se_search_max_clause_count = 4;
	/* a bool, or a match's terms, beyond the limit: BooleanQuery.Builder */
	check_error("{\"query\":{\"bool\":{\"should\":[{\"term\":{\"tag\":\"a\"}},{\"term\":{\"tag\":\"b\"}},"
				"{\"term\":{\"tag\":\"c\"}},{\"term\":{\"tag\":\"d\"}},{\"term\":{\"tag\":\"e\"}}]}}}",
				400, "too_many_clauses", "maxClauseCount is set to 4");
	check_error("{\"query\":{\"match\":{\"body\":\"alpha beta gamma delta alpha\"}}}",
				400, "too_many_clauses", "maxClauseCount is set to 4");
	/* leaves of the whole query, phrase terms each */
	check_error("{\"query\":{\"match_phrase\":{\"body\":\"alpha beta gamma delta epsilon\"}}}",
				400, "too_many_nested_clauses", "Query contains too many nested clauses; maxClauseCount is set to 4");
	check_error("{\"query\":{\"bool\":{\"must\":[{\"match\":{\"body\":\"alpha beta gamma\"}},"
				"{\"bool\":{\"filter\":[{\"range\":{\"price\":{\"gte\":1}}},{\"exists\":{\"field\":\"tag\"}}]}}]}}}",
				400, "too_many_nested_clauses", "Query contains too many nested clauses; maxClauseCount is set to 4");
	check_error("{\"query\":{\"multi_match\":{\"query\":\"alpha beta gamma\",\"fields\":[\"body\",\"title\"]}}}",
				400, "too_many_nested_clauses", "Query contains too many nested clauses");
	/* at the limit */
	UT_CHECK(search("{\"query\":{\"match_phrase\":{\"body\":\"alpha beta gamma delta\"}}}") &&
			 search("{\"query\":{\"bool\":{\"must\":[{\"match\":{\"body\":\"alpha beta\"}},{\"term\":{\"tag\":\"red\"}},"
					"{\"match_all\":{}}]}}}"), "queries at the limit run");
	se_search_max_clause_count = saved;

	/* index.max_terms_count: the terms query, on _id too */
	lim.max_terms_count = 2;
	UT_CHECK(search_on(&lim, 1, "{\"query\":{\"terms\":{\"tag\":[\"red\",\"blue\"]}}}", &err) != NULL, "two terms");
	check_error_on(&lim, "{\"query\":{\"terms\":{\"_id\":[\"d1\",\"d2\",\"d3\"]}}}", 400, "illegal_argument_exception",
				   "The number of terms [3] used in the Terms Query request has exceeded the allowed maximum of [2]. This maximum can be set by changing the [index.max_terms_count] index level setting.");
}


/* ---------------------------------------------------------------------
 * Regular expressions
 * ---------------------------------------------------------------------
 */
static void
check_regex(const char *pattern, int flags, bool ci, const char *term, bool expected)
{
	SeError		err;
	SeRegex    *re;

	se_error_init(&err);
	re = se_regex_parse(pattern, strlen(pattern), flags, ci, &err);
	UT_CHECK(re != NULL, "regex %s: %s", pattern, err.reason ? err.reason : "-");
	if (re != NULL)
		UT_CHECK(se_regex_match(re, term, strlen(term)) == expected,
				 "regex %s on \"%s\": expected %s", pattern, term, expected ? "match" : "no match");
}

static void
check_regex_error(const char *pattern, const char *reason)
{
	SeError		err;

	se_error_init(&err);
	UT_CHECK(se_regex_parse(pattern, strlen(pattern), SE_RE_ALL, false, &err) == NULL &&
			 strcmp(err.type, "query_shard_exception") == 0 && strcmp(err.reason, reason) == 0,
			 "regex %s: got %s", pattern, err.reason ? err.reason : "no error");
}

static bool
p_body_ta(const MDoc *d)
{
	/* beta, zeta, eta, theta, iota: a word ending in "ta" */
	int			i;

	for (i = 0; i < d->nbody; i++)
	{
		size_t		l = strlen(d->body[i]);

		if (l >= 2 && strcmp(d->body[i] + l - 2, "ta") == 0)
			return true;
	}
	return false;
}

static bool
p_zeta(const MDoc *d)
{
	return has_body(d, "zeta");
}

static bool
p_gamma_any(const MDoc *d)
{
	return has_body(d, "gamma") || count_word(d->title, d->ntitle, "gamma") > 0;
}

static bool
p_body_zeta_beta_eta(const MDoc *d)
{
	return has_body(d, "zeta") || has_body(d, "beta") || has_body(d, "eta");
}

/* fuzzy, fuzziness in match, wildcard: the hits against the model */
static void
test_fuzzy_wildcard(void)
{
	check_set("fuzzy one edit", "{\"fuzzy\":{\"body\":{\"value\":\"gamna\",\"fuzziness\":1}}}", p_gamma);
	/* AUTO: 4 code points allow one edit (a deletion reaches eta) */
	check_set("fuzzy AUTO", "{\"fuzzy\":{\"body\":\"zeta\"}}", p_body_zeta_beta_eta);
	check_set("fuzzy prefix_length", "{\"fuzzy\":{\"body\":{\"value\":\"zeta\",\"prefix_length\":1,\"max_expansions\":10,\"transpositions\":false,\"rewrite\":\"x\"}}}", p_zeta);
	check_set("fuzzy keyword", "{\"fuzzy\":{\"tag\":{\"value\":\"rad\",\"fuzziness\":\"1\"}}}", p_tag_red);
	check_set("fuzzy transposition", "{\"fuzzy\":{\"body\":{\"value\":\"agmma\",\"fuzziness\":1}}}", p_gamma);
	check_set("fuzzy transposition off", "{\"fuzzy\":{\"body\":{\"value\":\"agmma\",\"fuzziness\":1,\"transpositions\":false}}}", p_none);
	check_set("match fuzziness", "{\"match\":{\"body\":{\"query\":\"gamna rhi\",\"fuzziness\":\"AUTO\",\"operator\":\"and\"}}}", p_gamma_and_rho);
	check_set("match fuzziness 0", "{\"match\":{\"body\":{\"query\":\"gamna\",\"fuzziness\":0}}}", p_none);
	check_set("multi_match fuzziness", "{\"multi_match\":{\"query\":\"gamna\",\"fields\":[\"body\",\"title\"],\"fuzziness\":1}}", p_gamma_any);
	check_set("wildcard text", "{\"wildcard\":{\"body\":{\"value\":\"*ta\"}}}", p_body_ta);
	check_set("wildcard ?", "{\"wildcard\":{\"body\":{\"wildcard\":\"g?mma\",\"boost\":2}}}", p_gamma);
	check_set("wildcard keyword case_insensitive", "{\"wildcard\":{\"tag\":{\"value\":\"R*\",\"case_insensitive\":true}}}", p_tag_red);
	check_set("wildcard keyword case", "{\"wildcard\":{\"tag\":\"R*\"}}", p_none);
	check_set("wildcard literal dot", "{\"wildcard\":{\"tag\":\"r.d\"}}", p_none);
	check_error("{\"query\":{\"fuzzy\":{\"price\":\"1\"}}}", 400, "query_shard_exception",
				"Can only use fuzzy queries on keyword and text fields - not on [price] which is of type [long]");
	check_error("{\"query\":{\"fuzzy\":{\"body\":{\"value\":\"a\",\"fuzziness\":5}}}}", 400,
				"illegal_argument_exception", "Valid edit distances are [0, 1, 2] but was [5]");
	check_error("{\"query\":{\"fuzzy\":{\"body\":{\"value\":\"a\",\"case_insensitive\":true}}}}", 400,
				"parsing_exception", "[fuzzy] query does not support [case_insensitive]");
}

static bool
p_not_rho(const MDoc *d)
{
	return !has_body(d, "rho");
}

static double
s_most_fields(const MDoc *d)
{
	return model_term_score(d, false, "theta", 1.0) + model_term_score(d, true, "theta", 2.0);
}

static bool
p_gamma_not_rho(const MDoc *d)
{
	return has_body(d, "gamma") && !has_body(d, "rho");
}

static bool
p_gamma_or_not_rho(const MDoc *d)
{
	return has_body(d, "gamma") || !has_body(d, "rho");
}

static bool
p_qs_group(const MDoc *d)
{
	return (has_body(d, "gamma") || has_body(d, "rho")) && !p_tag_red(d);
}

/* query_string and simple_query_string: Lucene's syntaxes, against the model */
static void
test_query_string(void)
{
	check_set("qs AND", "{\"query_string\":{\"query\":\"gamma AND rho\",\"default_field\":\"body\"}}", p_gamma_and_rho);
	check_set("qs OR", "{\"query_string\":{\"query\":\"gamma OR rho\",\"default_field\":\"body\"}}", p_gamma_or_rho);
	check_set("qs default OR", "{\"query_string\":{\"query\":\"gamma rho\",\"default_field\":\"body\"}}", p_gamma_or_rho);
	check_set("qs default AND", "{\"query_string\":{\"query\":\"gamma rho\",\"default_field\":\"body\",\"default_operator\":\"AND\"}}", p_gamma_and_rho);
	check_set("qs AND OR under AND", "{\"query_string\":{\"query\":\"gamma OR rho\",\"default_field\":\"body\",\"default_operator\":\"and\"}}", p_gamma_or_rho);
	check_set("qs +", "{\"query_string\":{\"query\":\"+gamma +rho\",\"default_field\":\"body\"}}", p_gamma_and_rho);
	check_set("qs -", "{\"query_string\":{\"query\":\"body:gamma -body:rho\"}}", p_gamma_not_rho);
	check_set("qs NOT", "{\"query_string\":{\"query\":\"gamma AND NOT rho\",\"default_field\":\"body\"}}", p_gamma_not_rho);
	check_set("qs !", "{\"query_string\":{\"query\":\"gamma && !rho\",\"default_field\":\"body\"}}", p_gamma_not_rho);
	check_set("qs only NOT", "{\"query_string\":{\"query\":\"NOT rho\",\"default_field\":\"body\"}}", p_not_rho);
	check_set("qs group", "{\"query_string\":{\"query\":\"(gamma OR rho) AND NOT tag:red\",\"default_field\":\"body\"}}", p_qs_group);
	check_set("qs field group", "{\"query_string\":{\"query\":\"body:(gamma rho) -tag:red\"}}", p_qs_group);
	check_set("qs prefix", "{\"query_string\":{\"query\":\"body:gam*\"}}", p_gamma);
	check_set("qs prefix lowercased", "{\"query_string\":{\"query\":\"body:GAM*\"}}", p_gamma);
	check_set("qs wildcard", "{\"query_string\":{\"query\":\"body:g?mma\"}}", p_gamma);
	check_set("qs fuzzy", "{\"query_string\":{\"query\":\"body:gamna~1\"}}", p_gamma);
	check_set("qs fuzzy AUTO", "{\"query_string\":{\"query\":\"zeta~\",\"default_field\":\"body\"}}", p_body_zeta_beta_eta);
	check_set("qs phrase", "{\"query_string\":{\"query\":\"\\\"beta gamma\\\"\",\"default_field\":\"body\"}}", p_phrase);
	check_set("qs exists", "{\"query_string\":{\"query\":\"_exists_:meta\"}}", p_has_meta);
	check_set("qs field:*", "{\"query_string\":{\"query\":\"meta:*\"}}", p_has_meta);
	check_set("qs *:*", "{\"query_string\":{\"query\":\"*:*\"}}", p_all);
	check_set("qs range", "{\"query_string\":{\"query\":\"price:[10 TO 50}\"}}", p_price_10_50);
	check_set("qs range >=", "{\"query_string\":{\"query\":\"price:>=10 AND price:<50\"}}", p_price_10_50);
	check_set("qs keyword", "{\"query_string\":{\"query\":\"tag:red OR tag:blue\"}}", p_tag_red_or_blue);
	check_set("qs regexp", "{\"query_string\":{\"query\":\"tag:/r.d|bl[aeiou]e/\"}}", p_tag_red_or_blue);
	check_set("qs all fields", "{\"query_string\":{\"query\":\"gamma\"}}", p_gamma_any);
	check_set("qs fields", "{\"query_string\":{\"query\":\"gamma\",\"fields\":[\"body\",\"title^2\"]}}", p_gamma_any);
	check_set("qs empty", "{\"query_string\":{\"query\":\"\"}}", p_none);
	check_scores("qs boosts", "{\"query\":{\"query_string\":{\"query\":\"body:gamma^2.5 body:rho^2.5\"}},\"size\":100}", s_gamma_rho_boost);
	check_scores("qs fields tie_breaker", "{\"query\":{\"query_string\":{\"query\":\"theta\",\"fields\":[\"body\",\"title^2\"],\"tie_breaker\":0.3}},\"size\":100}", s_best_fields);
	check_error("{\"query\":{\"query_string\":{\"query\":\"body:(gamma\"}}}", 400, "query_shard_exception",
				"Failed to parse query [body:(gamma]: Cannot parse 'body:(gamma': Encountered \"<EOF>\", expected \")\" at position 11");
	check_error("{\"query\":{\"query_string\":{\"query\":\"*ma\",\"allow_leading_wildcard\":false}}}", 400, "query_shard_exception",
				"Failed to parse query [*ma]: Cannot parse '*ma': '*' or '?' not allowed as first character in WildcardQuery");
	check_error("{\"query\":{\"query_string\":{\"default_field\":\"body\"}}}", 400, "parsing_exception",
				"[query_string] must be provided with a [query]");

	check_set("sqs +", "{\"simple_query_string\":{\"query\":\"gamma +rho\",\"fields\":[\"body\"]}}", p_gamma_and_rho);
	check_set("sqs |", "{\"simple_query_string\":{\"query\":\"gamma | rho\",\"fields\":[\"body\"],\"default_operator\":\"and\"}}", p_gamma_or_rho);
	check_set("sqs whitespace AND", "{\"simple_query_string\":{\"query\":\"gamma rho\",\"fields\":[\"body\"],\"default_operator\":\"AND\"}}", p_gamma_and_rho);
	check_set("sqs - under OR", "{\"simple_query_string\":{\"query\":\"gamma -rho\",\"fields\":[\"body\"]}}", p_gamma_or_not_rho);
	check_set("sqs - under AND", "{\"simple_query_string\":{\"query\":\"gamma -rho\",\"fields\":[\"body\"],\"default_operator\":\"and\"}}", p_gamma_not_rho);
	check_set("sqs prefix", "{\"simple_query_string\":{\"query\":\"gam*\",\"fields\":[\"body\"]}}", p_gamma);
	check_set("sqs fuzzy", "{\"simple_query_string\":{\"query\":\"gamna~1\",\"fields\":[\"body\"]}}", p_gamma);
	check_set("sqs phrase", "{\"simple_query_string\":{\"query\":\"\\\"beta gamma\\\"\",\"fields\":[\"body\"]}}", p_phrase);
	check_set("sqs precedence", "{\"simple_query_string\":{\"query\":\"(gamma | rho) +(-tag:red)\",\"fields\":[\"body\"],\"default_operator\":\"and\"}}", p_gamma_or_rho);
	check_set("sqs flags NONE", "{\"simple_query_string\":{\"query\":\"gam*\",\"fields\":[\"body\"],\"flags\":\"NONE\"}}", p_none);
	check_set("sqs all fields", "{\"simple_query_string\":{\"query\":\"gamma\"}}", p_gamma_any);
	check_set("sqs unbalanced", "{\"simple_query_string\":{\"query\":\"((gamma\",\"fields\":[\"body\"]}}", p_gamma);
	check_scores("sqs fields sum", "{\"query\":{\"simple_query_string\":{\"query\":\"theta\",\"fields\":[\"body\",\"title^2\"]}},\"size\":100}", s_most_fields);
	check_error("{\"query\":{\"simple_query_string\":{\"query\":\"a\",\"flags\":\"BOGUS\"}}}", 400, "illegal_argument_exception",
				"Unknown simple_query_string flag [BOGUS]");
}

static bool
p_price_12(const MDoc *d)
{
	int			i;

	for (i = 0; i < d->nprice; i++)
		if (d->price[i] == 12)
			return true;
	return false;
}

static bool
p_cross(const MDoc *d)
{
	return (has_body(d, "gamma") || count_word(d->title, d->ntitle, "gamma") > 0) &&
		(has_body(d, "rho") || count_word(d->title, d->ntitle, "rho") > 0);
}

/* match_bool_prefix, match_phrase_prefix and the multi_match types */
static void
test_prefix_matches(void)
{
	check_set("match_bool_prefix", "{\"match_bool_prefix\":{\"body\":\"gamma rh\"}}", p_gamma_or_rho);
	check_set("match_bool_prefix and", "{\"match_bool_prefix\":{\"body\":{\"query\":\"gamma rh\",\"operator\":\"and\"}}}", p_gamma_and_rho);
	check_set("match_bool_prefix fuzzy", "{\"match_bool_prefix\":{\"body\":{\"query\":\"gamna rh\",\"operator\":\"and\",\"fuzziness\":1}}}", p_gamma_and_rho);
	check_set("match_bool_prefix one", "{\"match_bool_prefix\":{\"body\":\"gam\"}}", p_gamma);
	check_set("match_phrase_prefix", "{\"match_phrase_prefix\":{\"body\":\"beta gam\"}}", p_phrase);
	check_set("match_phrase_prefix one", "{\"match_phrase_prefix\":{\"body\":{\"query\":\"gam\",\"max_expansions\":5}}}", p_gamma);
	check_set("match_phrase_prefix none", "{\"match_phrase_prefix\":{\"body\":\"beta qqq\"}}", p_none);
	check_set("multi_match phrase_prefix", "{\"multi_match\":{\"query\":\"beta gam\",\"type\":\"phrase_prefix\",\"fields\":[\"body\"]}}", p_phrase);
	check_set("multi_match bool_prefix", "{\"multi_match\":{\"query\":\"gamma rh\",\"type\":\"bool_prefix\",\"fields\":[\"body\"],\"operator\":\"and\"}}", p_gamma_and_rho);
	check_set("multi_match cross_fields", "{\"multi_match\":{\"query\":\"gamma rho\",\"type\":\"cross_fields\",\"fields\":[\"body\",\"title^2\"],\"operator\":\"and\"}}", p_cross);
	check_set("multi_match cross_fields or", "{\"multi_match\":{\"query\":\"gamma\",\"type\":\"cross_fields\",\"fields\":[\"body\",\"title\"]}}", p_gamma_any);
	check_set("multi_match cross_fields numeric", "{\"multi_match\":{\"query\":\"12\",\"type\":\"cross_fields\",\"fields\":[\"body\",\"price\"]}}", p_price_12);
	check_error("{\"query\":{\"multi_match\":{\"query\":\"gamma\",\"type\":\"cross_fields\",\"fields\":[\"body\",\"price\"]}}}", 400,
				"query_shard_exception", "failed to create query: For input string: \"gamma\"");
	check_error("{\"query\":{\"multi_match\":{\"query\":\"a\",\"type\":\"cross_fields\",\"fuzziness\":1}}}", 400,
				"parsing_exception", "Fuzziness not allowed for type [cross_fields]");
}

static bool
p_red_and_green(const MDoc *d)
{
	return d->ntags == 2 && ((strcmp(d->tags[0], "red") == 0 && strcmp(d->tags[1], "green") == 0) ||
							 (strcmp(d->tags[1], "red") == 0 && strcmp(d->tags[0], "green") == 0));
}

static double
s_gamma2(const MDoc *d)
{
	return 2.0 * model_term_score(d, false, "gamma", 1.0);
}

static double
s_fvf(const MDoc *d)
{
	double		v = d->nprice > 0 ? (double) d->price[0] : 1.0;

	return 1.0 + log10(1.5 * v + 1);
}

static double
s_exp_decay(const MDoc *d)
{
	double		dist;
	int			i;

	if (d->nprice == 0)
		return 1.0;
	dist = fabs((double) d->price[0] - 30);
	for (i = 1; i < d->nprice; i++)
		dist = Min(dist, fabs((double) d->price[i] - 30));
	dist = Max(0.0, dist - 5);
	return exp(log(0.5) / 10 * dist);
}

static double
s_filtered_sum(const MDoc *d)
{
	int			i;
	double		sum = 0;
	bool		any = false;

	for (i = 0; i < d->ntags; i++)
	{
		if (strcmp(d->tags[i], "red") == 0)
			sum += 3, any = true;
		else if (strcmp(d->tags[i], "blue") == 0)
			sum += 5, any = true;
	}
	return any ? sum : 1.0;
}

static bool
p_two_of_set(const MDoc *d)
{
	int			i,
				n = 0;

	for (i = 0; i < d->ntags; i++)
		n += strcmp(d->tags[i], "red") == 0 || strcmp(d->tags[i], "blue") == 0 ||
			strcmp(d->tags[i], "Yellow") == 0;
	return n >= 2;
}

/* function_score and terms_set: scores against the model */
static void
test_function_score(void)
{
	check_scores("fs weight", "{\"query\":{\"function_score\":{\"query\":{\"match\":{\"body\":\"gamma\"}},\"weight\":2}},\"size\":100}", s_gamma2);
	check_scores("fs field_value_factor", "{\"query\":{\"function_score\":{\"field_value_factor\":{\"field\":\"price\",\"factor\":1.5,\"modifier\":\"log1p\",\"missing\":1},\"boost_mode\":\"sum\"}},\"size\":100}", s_fvf);
	check_scores("fs exp decay", "{\"query\":{\"function_score\":{\"exp\":{\"price\":{\"origin\":30,\"scale\":10,\"offset\":5}},\"boost_mode\":\"replace\"}},\"size\":100}", s_exp_decay);
	check_scores("fs filtered sum", "{\"query\":{\"function_score\":{\"functions\":[{\"filter\":{\"term\":{\"tag\":\"red\"}},\"weight\":3},{\"filter\":{\"term\":{\"tag\":\"blue\"}},\"weight\":5}],\"score_mode\":\"sum\",\"boost_mode\":\"replace\"}},\"size\":100}", s_filtered_sum);
	check_set("fs min_score", "{\"function_score\":{\"functions\":[{\"filter\":{\"term\":{\"tag\":\"red\"}},\"weight\":3},{\"filter\":{\"term\":{\"tag\":\"blue\"}},\"weight\":5}],\"score_mode\":\"sum\",\"boost_mode\":\"replace\",\"min_score\":3}}", p_tag_red_or_blue);
	check_set("fs min_score in a filter", "{\"bool\":{\"filter\":{\"function_score\":{\"functions\":[{\"filter\":{\"term\":{\"tag\":\"red\"}},\"weight\":3}],\"boost_mode\":\"replace\",\"min_score\":2}}}}", p_tag_red);
	check_set("fs random", "{\"function_score\":{\"random_score\":{\"seed\":7,\"field\":\"price\"}}}", p_all);
	check_set("terms_set", "{\"terms_set\":{\"tag\":{\"terms\":[\"red\",\"blue\",\"Yellow\"],\"minimum_should_match\":2}}}", p_two_of_set);
	check_set("terms_set script", "{\"terms_set\":{\"tag\":{\"terms\":[\"red\",\"green\"],\"minimum_should_match_script\":{\"source\":\"params.num_terms\"}}}}", p_red_and_green);
	check_error("{\"query\":{\"function_score\":{\"script_score\":{\"script\":\"1 +\"}}}}", 400, "script_exception",
				"compile error at [1:4]");
	check_error("{\"query\":{\"script_score\":{\"script\":\"1\"}}}", 400, "parsing_exception",
				"[script_score] requires 'query' field");
	check_error("{\"query\":{\"function_score\":{\"gauss\":{\"price\":{\"origin\":1}}}}}", 400, "parsing_exception",
				"[scale] must be set for distance functions");
}

static void
test_regexp(void)
{
	static const struct
	{
		const char *pattern;
		const char *term;
		bool		match;
	}			cases[] = {
		{"ab", "ab", true}, {"ab", "abc", false}, {"a.c", "abc", true}, {"a.c", "ac", false},
		{"a*", "", true}, {"a*", "aaa", true}, {"a*", "aab", false},
		{"a+b?", "a", true}, {"a+b?", "aab", true}, {"a+b?", "b", false},
		{"a{2}", "aa", true}, {"a{2}", "a", false}, {"a{2}", "aaa", false},
		{"a{2,}", "aaaa", true}, {"a{1,3}", "aaaa", false}, {"a{1,3}", "aaa", true},
		{"(ab|cd)+", "abcdab", true}, {"(ab|cd)+", "abc", false}, {"(a|ab)(c|bcd)", "abcd", true},
		{"[a-c]x", "bx", true}, {"[a-c]x", "dx", false}, {"[^a-c]x", "dx", true}, {"[^a-c]x", "ax", false},
		{"[-abc]+", "a-c", true}, {"\\d+", "123", true}, {"\\d+", "12a", false}, {"\\w+", "ab_1", true},
		{"\\W", "-", true}, {"[\\d.]+", "1.5", true}, {"\"a.b\"", "a.b", true}, {"\"a.b\"", "axb", false},
		{"a\\.b", "a.b", true}, {"a\\.b", "axb", false}, {"@", "anything", true}, {"a@", "a", true},
		{"#", "", false}, {"()", "", true}, {"ab&a.", "ab", true}, {"ab&a.", "ac", false},
		{"~(ab)", "ab", false}, {"~(ab)", "abc", true}, {"~(ab)", "", true},
		{"a~(b)c", "abc", false}, {"a~(b)c", "axc", true}, {"a~(b)c", "ac", true}, {"a~(b)c", "abbc", true},
		{"<1-10>", "7", true}, {"<1-10>", "007", true}, {"<1-10>", "11", false},
		{"<01-10>", "07", true}, {"<01-10>", "7", false}, {"foo<1-100>", "foo42", true},
		{"foo<1-100>", "foo101", false}, {"(a*)*b", "aaaab", true}, {"(a*)*b", "aaaa", false},
		{"é.", "éa", true}, {".{2}", "éa", true}, {"[α-ω]+", "λόγος", false}, {"[α-ω]+", "λογοσ", true},
	};
	SeSearchShard lim = shard;
	SeError		err;
	SeRegex    *re;
	int			len;
	int			flags;
	int			i;

	for (i = 0; i < lengthof(cases); i++)
		check_regex(cases[i].pattern, SE_RE_ALL, false, cases[i].term, cases[i].match);
	/* optional operators are literal without their flag; ASCII case folding */
	check_regex("a&b", 0, false, "a&b", true);
	check_regex("a~b", SE_RE_ALL & ~SE_RE_COMPLEMENT, false, "a~b", true);
	check_regex("<1-2>", 0, false, "<1-2>", true);
	check_regex("AbC", SE_RE_ALL, true, "abc", true);
	check_regex("AbC", SE_RE_ALL, false, "abc", false);
	check_regex("[A-C]", SE_RE_ALL, true, "b", false);	/* ranges are not folded, as Lucene */
	/* Lucene's syntax errors */
	check_regex_error("a(b", "failed to create query: expected ')' at position 3");
	check_regex_error("[ab", "failed to create query: expected ']' at position 3");
	check_regex_error("a)b", "failed to create query: end-of-string expected at position 1");
	check_regex_error("a{2", "failed to create query: expected '}' at position 3");
	check_regex_error("a\\", "failed to create query: unexpected end-of-string");
	check_regex_error("<1x>", "failed to create query: interval syntax error at position 2");
	{
		StringInfoData deep;
		int			k;

		initStringInfo(&deep);
		for (k = 0; k < 600; k++)
			appendStringInfoString(&deep, "(~");
		appendStringInfoChar(&deep, 'a');
		check_regex_error(deep.data, "failed to create query: expression nested too deeply at position 501");
	}
	check_regex("((a)|(~(b)))", SE_RE_ALL, false, "c", true);
	/* the literal prefix the term walk starts from */
	se_error_init(&err);
	re = se_regex_parse("abc.*", 5, SE_RE_ALL, false, &err);
	UT_CHECK(re && strcmp(se_regex_prefix(re, &len), "abc") == 0 && len == 3, "prefix of abc.*");
	re = se_regex_parse("abc|abd", 7, SE_RE_ALL, false, &err);
	UT_CHECK(re && se_regex_prefix(re, &len) && len == 0, "no prefix of a union");
	re = se_regex_parse("abc", 3, SE_RE_ALL, true, &err);
	UT_CHECK(re && se_regex_prefix(re, &len) && len == 0, "no prefix with case folding");
	UT_CHECK(se_regex_flags_parse("INTERSECTION|ANYSTRING", &flags, &err) &&
			 flags == (SE_RE_INTERSECTION | SE_RE_ANYSTRING), "flags");
	UT_CHECK(!se_regex_flags_parse("BOGUS", &flags, &err), "bad flag");

	/* the query: keyword and text fields, against the model */
	check_set("regexp keyword", "{\"regexp\":{\"tag\":\"r.d|bl[aeiou]e\"}}", p_tag_red_or_blue);
	check_set("regexp case_insensitive", "{\"regexp\":{\"tag\":{\"value\":\"R[E]D\",\"case_insensitive\":true}}}", p_tag_red);
	check_set("regexp text", "{\"regexp\":{\"body\":{\"value\":\".*ta\",\"flags\":\"NONE\",\"max_determinized_states\":10000,\"rewrite\":\"constant_score\"}}}", p_body_ta);
	check_set("regexp prefix walk", "{\"regexp\":{\"body\":\"gam+a\"}}", p_gamma);
	check_error("{\"query\":{\"regexp\":{\"price\":\"1.*\"}}}", 400, "query_shard_exception",
				"Can only use regexp queries on keyword and text fields - not on [price] which is of type [long]");
	check_error("{\"query\":{\"regexp\":{\"tag\":\"(red\"}}}", 400, "query_shard_exception",
				"failed to create query: expected ')' at position 4");
	check_error("{\"query\":{\"regexp\":{\"tag\":{\"value\":\"red\",\"flags\":\"SOME\"}}}}", 400,
				"illegal_argument_exception", "Unknown regexp flag [SOME]");

	/* index.max_regex_length, in UTF-16 units as ES counts */
	lim.max_regex_length = 4;
	UT_CHECK(search_on(&lim, 1, "{\"query\":{\"regexp\":{\"tag\":\"r.d\"}}}", &err) != NULL, "short regex");
	check_error_on(&lim, "{\"query\":{\"regexp\":{\"tag\":\"r.d.*\"}}}", 400, "illegal_argument_exception",
				   "The length of regex [5] used in the Regexp Query request has exceeded the allowed maximum of [4]. This maximum can be set by changing the [index.max_regex_length] index level setting.");
	UT_CHECK(search_on(&lim, 1, "{\"query\":{\"regexp\":{\"tag\":\"ééé\"}}}", &err) != NULL, "characters, not bytes");
}

/*
 * dfs_query_then_fetch: the corpus's three segments as three one-segment
 * shards.  Each shard scores with its own statistics, unlike the
 * three-segment shard; with the DFS phase's sums (through the encoding)
 * every hit's score is the three-segment shard's, bit for bit.
 */
static void
test_dfs(void)
{
	static const char *const queries[] = {
		"{\"query\":{\"match\":{\"body\":\"gamma delta zeta\"}},\"size\":100}",
		"{\"query\":{\"match\":{\"body\":{\"query\":\"alpha beta\",\"operator\":\"and\"}}},\"size\":100}",
		"{\"query\":{\"match_phrase\":{\"body\":{\"query\":\"alpha beta\",\"slop\":2}}},\"size\":100}",
		"{\"query\":{\"multi_match\":{\"query\":\"alpha gamma\",\"fields\":[\"title^2\",\"body\"]}},\"size\":100}",
		"{\"query\":{\"bool\":{\"should\":[{\"term\":{\"tag\":\"red\"}},{\"match\":{\"title\":\"beta\"}}],\"filter\":[{\"match\":{\"body\":\"alpha\"}}]}},\"size\":100}",
	};
	SeSearchShard parts[NSEGS];
	SeError		err;
	int			q,
				s,
				i;
	bool		differs = false;

	for (s = 0; s < NSEGS; s++)
	{
		parts[s] = shard;
		parts[s].shard = s;
		parts[s].nsegments = 1;
		parts[s].segments = &readers[s];
		parts[s].live_docs = &lives[s];
		parts[s].seg_gens = parts[s].del_gens = NULL;
	}
	for (q = 0; q < lengthof(queries); q++)
	{
		SeSearchResult *whole = search_on(&shard, 1, queries[q], &err);
		SeSearchResult *plain = search_on(parts, NSEGS, queries[q], &err);
		SeSearchRequest *req;
		SeDfsStats *global = se_dfs_stats_create();
		SeDfsStats *decoded;
		SeSearchResult *res;
		StringInfoData enc;
		bool		same = true;

		se_error_init(&err);
		req = se_search_parse(parse_json(queries[q]), 10000, &err);
		for (s = 0; s < NSEGS && req; s++)
			UT_CHECK(se_search_dfs_phase(req, &parts[s], global, &err), "dfs phase of %d: %s", s, err.reason);
		initStringInfo(&enc);
		se_dfs_stats_encode(global, &enc);
		decoded = se_dfs_stats_decode(enc.data, enc.len);
		UT_CHECK(decoded != NULL, "dfs stats decode");
		if (req == NULL || decoded == NULL || whole == NULL || plain == NULL)
			continue;
		se_search_set_dfs(req, decoded);
		res = se_search_run(req, parts, NSEGS, &err);
		UT_CHECK(res && res->nhits == whole->nhits && res->nhits > 0, "dfs hits of %s", queries[q]);
		for (i = 0; res && i < res->nhits; i++)
		{
			SeHit	   *h = find_hit(whole, res->hits[i].id);
			SeHit	   *p = find_hit(plain, res->hits[i].id);

			if (h == NULL || h->score != res->hits[i].score)
				same = false;
			if (p == NULL || p->score != res->hits[i].score)
				differs = true;
		}
		UT_CHECK(same, "dfs scores equal the one shard's: %s", queries[q]);
	}
	UT_CHECK(differs, "without dfs the shards score differently");

	/* sums: a term's doc_freq over the shards (deleted docs counted) */
	{
		SeDfsStats *a = se_dfs_stats_create();
		SeDfsStats *b = se_dfs_stats_create();
		SeSearchRequest *req;
		const SeDfsTerm *t;
		const SeDfsField *f;
		int64		df = 0,
					dc = 0;
		StringInfoData enc;

		se_error_init(&err);
		req = se_search_parse(parse_json("{\"query\":{\"match\":{\"body\":\"gamma\"}}}"), 10000, &err);
		UT_CHECK(req && se_search_dfs_phase(req, &parts[0], a, &err) &&
				 se_search_dfs_phase(req, &parts[1], b, &err) &&
				 se_search_dfs_phase(req, &parts[2], b, &err), "dfs phases");
		se_dfs_stats_add(a, b);
		for (i = 0; i < NDOCS; i++)
		{
			int			k;

			dc += docs[i].nbody > 0;
			for (k = 0; k < docs[i].nbody; k++)
				if (strcmp(docs[i].body[k], "gamma") == 0)
				{
					df++;
					break;
				}
		}
		t = se_dfs_find_term(a, "body", "gamma", 5);
		f = se_dfs_find_field(a, "body");
		UT_CHECK(t && t->doc_freq == df, "summed doc_freq " INT64_FORMAT " of " INT64_FORMAT,
				 t ? t->doc_freq : -1, df);
		UT_CHECK(f && f->stats.doc_count == dc, "summed doc_count");
		UT_CHECK(a->max_doc == NDOCS && a->nterms == 1 && a->nfields == 1, "one term, one field, max_doc");
		UT_CHECK(se_dfs_find_term(a, "body", "gamm", 4) == NULL &&
				 se_dfs_find_term(a, "title", "gamma", 5) == NULL, "lookups by field and term");
		/* malformed encodings are refused, never half read */
		initStringInfo(&enc);
		se_dfs_stats_encode(a, &enc);
		for (i = 0; i < enc.len; i++)
			UT_CHECK(se_dfs_stats_decode(enc.data, i) == NULL, "truncated at %d refused", i);
		enc.data[0] = 9;
		UT_CHECK(se_dfs_stats_decode(enc.data, enc.len) == NULL, "unknown version refused");
	}
}

/*
 * Deep pagination and request options: search_after pages equal the whole
 * sorted result (a unique last key: _doc, or the _shard_doc a "pit" adds),
 * slices are disjoint and complete, post_filter filters hits and totals
 * but not scores, terminate_after stops the shard.
 */
static char *
ids_of(const SeSearchResult *res)
{
	StringInfoData b;
	int			i;

	initStringInfo(&b);
	for (i = 0; res && i < res->nhits; i++)
		appendStringInfo(&b, "%s,", res->hits[i].id);
	return b.data;
}

static void
check_pages(const char *what, const char *sort, const char *extra)
{
	SeSearchResult *whole;
	StringInfoData all;
	char	   *after = NULL;
	int			pages = 0;

	whole = search(psprintf("{\"size\":1000,\"sort\":%s%s}", sort, extra));
	UT_CHECK(whole != NULL && whole->nhits > 0, "%s: whole", what);
	if (whole == NULL)
		return;
	initStringInfo(&all);
	for (;;)
	{
		SeSearchResult *page;

		page = search(psprintf("{\"size\":7,\"sort\":%s%s%s%s}", sort, extra,
							   after ? ",\"search_after\":" : "", after ? after : ""));
		UT_CHECK(page != NULL, "%s: page %d", what, pages);
		if (page == NULL || page->nhits == 0)
			break;
		UT_CHECK(page->total == whole->total, "%s: every page counts every hit", what);
		appendStringInfoString(&all, ids_of(page));
		after = page->last_sort_json;
		if (++pages > 1000)
			break;
	}
	UT_CHECK(strcmp(all.data, ids_of(whole)) == 0, "%s: pages equal the whole result", what);
}

static void
test_pagination(void)
{
	SeSearchResult *res,
			   *ref;
	StringInfoData ids;
	int			i,
				s;

	check_pages("price asc, _doc", "[{\"price\":\"asc\"},\"_doc\"]", "");
	check_pages("price desc missing first, _doc",
				"[{\"price\":{\"order\":\"desc\",\"missing\":\"_first\"}},\"_doc\"]", "");
	check_pages("tag desc, rating, _doc", "[{\"tag\":\"desc\"},\"rating\",\"_doc\"]", "");
	check_pages("score, _doc", "[\"_score\",\"_doc\"]", ",\"query\":{\"match\":{\"body\":\"gamma\"}}");
	/* a point in time adds _shard_doc: ties of tag are resumed exactly */
	check_pages("pit: tag", "[\"tag\"]", ",\"pit\":{\"id\":\"x\"}");
	check_pages("pit: relevance", "[\"_score\"]", ",\"pit\":{\"id\":\"x\"},\"query\":{\"match\":{\"body\":\"gamma\"}}");
	res = search("{\"size\":1,\"sort\":[\"tag\"],\"pit\":{\"id\":\"x\"}}");
	UT_CHECK(res && res->nhits == 1 && strchr(res->hits[0].sort_json, ',') != NULL,
			 "pit: the _shard_doc tiebreaker is a sort value");

	/* slices: disjoint, together every hit */
	ref = search("{\"size\":1000,\"sort\":[\"_doc\"]}");
	initStringInfo(&ids);
	for (s = 0; s < 3; s++)
	{
		res = search(psprintf("{\"size\":1000,\"sort\":[\"_doc\"],\"slice\":{\"id\":%d,\"max\":3}}", s));
		UT_CHECK(res != NULL && res->nhits > 0, "slice %d", s);
		for (i = 0; res && i < res->nhits; i++)
			appendStringInfo(&ids, "%s,", res->hits[i].id);
	}
	{
		/* the slices' ids, as a set, are the whole result's */
		int			n = 0;
		char	   *p;

		for (p = ids.data; *p; p++)
			n += *p == ',';
		UT_CHECK(ref && n == ref->nhits, "slices hold %d of %d", n, ref ? ref->nhits : -1);
		for (i = 0; ref && i < ref->nhits; i++)
			UT_CHECK(strstr(ids.data, psprintf("%s,", ref->hits[i].id)) != NULL, "slices hold %s",
					 ref->hits[i].id);
	}

	/* post_filter: the filtered hits and total, the query's scores */
	res = search("{\"size\":1000,\"query\":{\"match\":{\"body\":\"gamma\"}},\"post_filter\":{\"term\":{\"tag\":\"red\"}}}");
	ref = search("{\"size\":1000,\"query\":{\"bool\":{\"must\":{\"match\":{\"body\":\"gamma\"}},\"filter\":{\"term\":{\"tag\":\"red\"}}}}}");
	UT_CHECK(res && ref && res->nhits > 0 && res->total == ref->total &&
			 strcmp(ids_of(res), ids_of(ref)) == 0, "post_filter = bool filter hits");
	for (i = 0; res && ref && i < res->nhits && i < ref->nhits; i++)
		UT_CHECK(res->hits[i].score == ref->hits[i].score, "post_filter score %d", i);

	/* terminate_after: at most that many counted, terminated_early */
	res = search("{\"size\":100,\"terminate_after\":5}");
	UT_CHECK(res && res->total == 5 && res->nhits == 5 && res->terminated_early,
			 "terminate_after");
}

/*
 * explain: every hit's explanation value is its score, over the corpus's
 * query shapes; rescore: window docs get query_weight * score + weight *
 * the rescore query's, the rest query_weight * score, in score order.
 */
static void
test_explain_and_rescore(void)
{
	static const char *const queries[] = {
		"{\"match\":{\"body\":\"gamma\"}}",
		"{\"match\":{\"body\":{\"query\":\"gamma rho\",\"boost\":2.5}}}",
		"{\"multi_match\":{\"query\":\"theta\",\"fields\":[\"body\",\"title^2\"],\"tie_breaker\":0.3}}",
		"{\"bool\":{\"must\":{\"match\":{\"body\":\"gamma\"}},\"should\":{\"match\":{\"body\":\"zeta\"}},\"filter\":{\"term\":{\"flag\":true}}}}",
		"{\"match_phrase\":{\"body\":\"beta gamma\"}}",
		"{\"term\":{\"tag\":\"red\"}}",
		"{\"constant_score\":{\"filter\":{\"term\":{\"tag\":\"red\"}},\"boost\":3}}",
	};
	int			q,
				i;
	SeSearchResult *plain;
	SeSearchResult *res;

	for (q = 0; q < lengthof(queries); q++)
	{
		bool		ok = true;

		res = search(psprintf("{\"query\":%s,\"explain\":true,\"size\":100}", queries[q]));
		for (i = 0; res && i < res->nhits; i++)
		{
			SeJson	   *e = res->hits[i].explanation ? parse_json(res->hits[i].explanation) : NULL;
			SeJson	   *v = e ? se_json_get(e, "value") : NULL;

			if (v == NULL || (float) v->u.n.d != res->hits[i].score)
				ok = false;
		}
		UT_CHECK(res && res->nhits > 0 && ok, "explanation value = _score: %s", queries[q]);
	}

	plain = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100}");
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"size\":100,"
				 "\"rescore\":{\"window_size\":3,\"query\":{\"rescore_query\":{\"match_all\":{}},"
				 "\"query_weight\":0.5,\"rescore_query_weight\":10}}}");
	UT_CHECK(plain && res && plain->nhits == res->nhits && res->nhits > 3, "rescore keeps the hits");
	for (i = 0; plain && res && i < res->nhits; i++)
	{
		float		want = i < 3 ? plain->hits[i].score * 0.5f + 10.0f : plain->hits[i].score * 0.5f;

		UT_CHECK(strcmp(res->hits[i].id, plain->hits[i].id) == 0 && res->hits[i].score == want,
				 "rescored hit %d: %s %g (want %s %g)", i, res->hits[i].id, res->hits[i].score,
				 plain->hits[i].id, want);
	}
	res = search("{\"query\":{\"match\":{\"body\":\"gamma\"}},\"sort\":[\"price\"],"
				 "\"rescore\":{\"query\":{\"rescore_query\":{\"match_all\":{}}}}}");
	UT_CHECK(res == NULL, "rescore with a field sort is refused");
}

int
main(void)
{
	build_corpus();
	build_index();
	test_query_sets();
	test_scores();
	test_phrases();
	test_sort();
	test_pagination();
	test_paging_and_totals();
	test_source();
	test_errors();
	test_multi_shard_and_count();
	test_response_json();
	test_exact_float();
	test_topk_skipping();
	test_shard_wire();
	test_dfs();
	test_interrupts();
	test_limits();
	test_regexp();
	test_fuzzy_wildcard();
	test_query_string();
	test_prefix_matches();
	test_function_score();
	test_explain_and_rescore();
	test_fuzz();
	return ut_finish("test_search");
}
