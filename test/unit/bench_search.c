/* SOURCES: src/search/aggs.c src/search/hll.c src/search/collapse.c src/search/mlt.c src/search/distance_feature.c src/search/geo_query.c src/search/explain.c src/search/fields.c src/search/bm25.c src/search/datemath.c src/search/dfs.c src/search/dsl.c src/search/execute.c src/search/function_score.c src/search/fuzzy.c src/search/highlight.c src/search/interrupt.c src/search/phrase.c src/search/query_string.c src/search/regexp.c src/search/request.c src/search/response.c src/search/scorer.c src/search/shard_wire.c src/search/source_filter.c src/search/weight.c src/search/script_score.c src/search/timezone.c src/search/decimal_format.c src/search/nested.c src/script/lexer.c src/script/parser.c src/script/interp.c src/script/builtins.c src/script/values.c src/script/score.c src/util/units.c src/util/json.c src/util/error.c src/util/hash.c src/index/builder.c src/index/fileformat.c src/index/livedocs.c src/index/merge.c src/index/postings.c src/index/reader.c src/index/smallfloat.c src/index/writer.c src/mapping/date.c src/mapping/docparse.c src/mapping/mapping.c src/mapping/numeric.c src/mapping/geo_point.c src/analysis/analysis.c src/analysis/porter.c src/analysis/standard_tokenizer.c src/analysis/unicode.c */
/*-------------------------------------------------------------------------
 *
 * bench_search.c
 *	  Micro-benchmark of the query phase: top-10 latency on a synthetic
 *	  Zipf corpus in one segment, with and without top-k skipping.
 *
 * The corpus: BENCH_DOCS documents (default 200000) whose "body" field
 * holds 10..150 words drawn from a Zipf(1) distribution over a vocabulary
 * of 50000 words "w0", "w1", ...; one segment, no deletes.  Each query
 * runs a few times to warm up, then BENCH_REPS times (default 31); the
 * median wall time of se_search_run (query phase plus the fetch of ten
 * hits without _source) is printed in microseconds, along with the docs
 * the query phase took from the scorer.
 *
 * Built with -O2 and no sanitizers by Makefile.bench:
 *	   make -C test/unit -f Makefile.bench bench
 * Built against an older tree (SRCROOT=...) with -DSE_BENCH_BASELINE it
 * measures code that has no skipping switch; then only the exhaustive
 * column is meaningful.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <time.h>

#include "search/search_int.h"

#define VOCAB 50000

#ifdef SE_BENCH_BASELINE
static int64 se_search_stat_docs = 0;	/* not counted by older trees */
#endif

static uint64 rng_state = 0x9E3779B97F4A7C15ULL;

static uint64
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static double
now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double *cdf;

static int
zipf_word(void)
{
	double		u = (double) (rnd() >> 11) / (double) (UINT64CONST(1) << 53);
	int			lo = 0,
				hi = VOCAB - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static SeJson *
parse_json(const char *text)
{
	SeError		err;
	SeJson	   *j;

	se_error_init(&err);
	j = se_json_parse(text, strlen(text), NULL, &err);
	if (j == NULL)
	{
		fprintf(stderr, "bad json: %s: %s\n", text, err.reason);
		exit(2);
	}
	return j;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

typedef struct BenchResult
{
	double		median_us;
	double		min_us;
	int64		docs;
	int64		total;
	bool		gte;
} BenchResult;

static BenchResult
run_query(SeSearchShard *shard, const char *body, int reps)
{
	SeSearchRequest *req;
	SeError		err;
	double	   *t = palloc(sizeof(double) * reps);
	BenchResult br;
	int			i;

	memset(&br, 0, sizeof(br));
	se_error_init(&err);
	req = se_search_parse(parse_json(body), 10000, &err);
	if (req == NULL)
	{
		fprintf(stderr, "bad request %s: %s\n", body, err.reason);
		exit(2);
	}
	for (i = -3; i < reps; i++)
	{
		double		t0 = now_sec();
		int64		d0 = se_search_stat_docs;
		SeSearchResult *res = se_search_run(req, shard, 1, &err);

		if (res == NULL)
		{
			fprintf(stderr, "search failed %s: %s\n", body, err.reason);
			exit(2);
		}
		if (i >= 0)
			t[i] = now_sec() - t0;
		br.docs = se_search_stat_docs - d0;
		br.total = res->total;
		br.gte = res->total_is_lower_bound;
	}
	qsort(t, reps, sizeof(double), cmp_double);
	br.median_us = t[reps / 2] * 1e6;
	br.min_us = t[0] * 1e6;
	pfree(t);
	return br;
}

int
main(int argc, char **argv)
{
	int			ndocs = getenv("BENCH_DOCS") ? atoi(getenv("BENCH_DOCS")) : 200000;
	int			reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 31;
	SeMapping  *mapping;
	SeSegmentBuilder *b;
	SeSegmentReader *readers[1];
	SeSearchShard shard;
	StringInfoData file;
	uint8		sid[SE_SEGMENT_ID_LEN] = {0xBE};
	SeError		err;
	int			body,
				d,
				i;
	int64		tokens = 0;
	double		t0,
				sum = 0;
	static const char *const queries[][2] = {
		{"frequent term", "{\"match\":{\"body\":\"w3\"}}"},
		{"two frequent terms, or", "{\"match\":{\"body\":\"w3 w7\"}}"},
		{"two frequent terms, and", "{\"match\":{\"body\":{\"query\":\"w3 w7\",\"operator\":\"and\"}}}"},
		{"phrase", "{\"match_phrase\":{\"body\":\"w3 w7\"}}"},
		{"frequent + rare terms, or", "{\"match\":{\"body\":\"w3 w7 w1500\"}}"},
		{"four middle terms, or", "{\"match\":{\"body\":\"w40 w90 w150 w300\"}}"},
		{"bool should + must_not", "{\"bool\":{\"should\":[{\"match\":{\"body\":\"w3 w12\"}}],\"must_not\":{\"match\":{\"body\":\"w20\"}}}}"},
	};
	static const char *const tths[][2] = {
		{"10000", ""},
		{"false", ",\"track_total_hits\":false"},
	};
	int			q,
				m;

	cdf = palloc(sizeof(double) * VOCAB);
	for (i = 0; i < VOCAB; i++)
	{
		sum += 1.0 / (i + 1);
		cdf[i] = sum;
	}
	for (i = 0; i < VOCAB; i++)
		cdf[i] /= sum;

	se_error_init(&err);
	mapping = se_mapping_from_json(parse_json("{\"properties\":{\"body\":{\"type\":\"text\"}}}"),
								   NULL, &err);
	if (mapping == NULL)
	{
		fprintf(stderr, "mapping: %s\n", err.reason);
		return 2;
	}

	t0 = now_sec();
	b = se_builder_create();
	body = se_builder_field(b, "body", SE_IDX_POSITIONS, true, SE_DV_NONE);
	for (d = 0; d < ndocs; d++)
	{
		SeDocMeta	meta;
		char		id[16];
		char		w[16];
		int			n = 10 + (int) (rnd() % 141);

		se_builder_begin_doc(b);
		for (i = 0; i < n; i++)
		{
			int			len = snprintf(w, sizeof(w), "w%d", zipf_word());

			se_builder_add_term(b, body, w, len, i);
		}
		tokens += n;
		memset(&meta, 0, sizeof(meta));
		meta.id_len = snprintf(id, sizeof(id), "%d", d);
		meta.id = id;
		meta.version = 1;
		se_builder_end_doc(b, &meta, "{}", 2);
	}
	initStringInfo(&file);
	se_builder_serialize(b, sid, 1, &file);
	se_builder_free(b);
	readers[0] = se_segment_open((uint8 *) file.data, file.len, true, &err);
	if (readers[0] == NULL)
	{
		fprintf(stderr, "open: %s\n", err.reason);
		return 2;
	}
	printf("corpus: %d docs, " INT64_FORMAT " tokens, segment %.1f MB, built in %.1fs\n",
		   ndocs, tokens, file.len / 1048576.0, now_sec() - t0);
	{
		SeTermInfo	ti;
		int			f = se_segment_field(readers[0], "body");
		static const char *const show[] = {"w3", "w7", "w12", "w20", "w40", "w300", "w1500"};

		printf("doc freqs:");
		for (i = 0; i < (int) lengthof(show); i++)
			if (se_segment_seek_exact(readers[0], f, show[i], strlen(show[i]), &ti))
				printf(" %s=%d", show[i], ti.doc_freq);
		printf("\n");
	}

	memset(&shard, 0, sizeof(shard));
	shard.index = "bench";
	shard.mapping = mapping;
	shard.nsegments = 1;
	shard.segments = readers;

	printf("\nmedian latency of top-10 (us) over %d runs; docs = docs taken from the scorer\n", reps);
	printf("%-27s %-8s %9s %8s %7s %9s %8s %7s %8s\n", "query", "tth",
		   "exh.p50", "exh.min", "docs", "skip.p50", "skip.min", "docs", "speedup");
	for (q = 0; q < (int) lengthof(queries); q++)
		for (m = 0; m < (int) lengthof(tths); m++)
		{
			char		bodybuf[512];
			BenchResult ex,
						sk;

			/* BENCH_ONLY=<query number> runs one query (for profiling) */
			if (getenv("BENCH_ONLY") && atoi(getenv("BENCH_ONLY")) != q)
				continue;

			snprintf(bodybuf, sizeof(bodybuf),
					 "{\"query\":%s,\"size\":10,\"_source\":false%s}", queries[q][1], tths[m][1]);
#ifndef SE_BENCH_BASELINE
			se_search_block_max = false;
#endif
			/* BENCH_SKIP_ONLY=1 times the skipping side only (profiling) */
			if (getenv("BENCH_SKIP_ONLY"))
				memset(&ex, 0, sizeof(ex));
			else
				ex = run_query(&shard, bodybuf, reps);
#ifndef SE_BENCH_BASELINE
			se_search_block_max = true;
			sk = run_query(&shard, bodybuf, reps);
#else
			sk = ex;
#endif
			printf("%-27s %-8s %9.0f %8.0f %7" INT64_MODIFIER "d %9.0f %8.0f %7" INT64_MODIFIER "d %7.1fx\n",
				   queries[q][0], tths[m][0], ex.median_us, ex.min_us, ex.docs,
				   sk.median_us, sk.min_us, sk.docs, ex.median_us / Max(sk.median_us, 0.001));
		}
	se_segment_close(readers[0]);
	return 0;
}
