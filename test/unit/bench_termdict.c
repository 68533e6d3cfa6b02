/* SOURCES: src/util/json.c src/util/error.c src/util/hash.c src/index/builder.c src/index/fileformat.c src/index/livedocs.c src/index/merge.c src/index/postings.c src/index/reader.c src/index/smallfloat.c src/index/writer.c src/search/fuzzy.c src/search/interrupt.c src/mapping/date.c src/mapping/docparse.c src/mapping/mapping.c src/mapping/numeric.c src/mapping/geo_point.c src/analysis/analysis.c src/analysis/porter.c src/analysis/standard_tokenizer.c src/analysis/unicode.c */
/*-------------------------------------------------------------------------
 *
 * bench_termdict.c
 *	  Term dictionary benchmark: the size of the TERMS section and of the
 *	  whole segment for a real corpus, and the speed of exact term lookups,
 *	  prefix seeks and full enumeration.
 *
 *	  bench_termdict CORPUS INDEX_BODY [MAX_DOCS]
 *
 * CORPUS is an Elasticsearch bulk file (action line with _id, then the
 * source line), INDEX_BODY the create-index body whose "mappings" are used
 * (bench/lib/debian_index.json, bench/contents_corpus.json).  The first
 * MAX_DOCS documents (default all) go through the mapping's document
 * parser into one segment, as a shard's refresh would write them.  Then,
 * over every indexed field's terms: LOOKUPS random exact lookups of
 * existing terms, as many of absent ones (an existing term with a byte
 * appended), and prefix seeks (the first half of a random term, then the
 * terms that share it, up to 10) -- each timed ROUNDS times in CPU time
 * of the process (min / median / max printed).  Then the Levenshtein
 * walk of fuzzy queries over the "description" field (when the mapping has
 * it): misspelt words, analyzed by the field's analyzer, fuzziness AUTO,
 * as the fuzzy top-10 of bench/search_breadth_bench.sh runs on each
 * segment (the walk only: no scoring).  Env: BENCH_LOOKUPS (default
 * 1000000), BENCH_ROUNDS (5), BENCH_FUZZY_WALKS (2000), BENCH_WRITE_VERSION
 * (4: write the previous segment format, when this tree knows it).
 *
 * The same file builds against another source tree (Makefile.bench
 * bench_termdict_base SRCROOT=...), so a run compares two formats on the
 * same corpus and machine:
 *	   make -C test/unit -f Makefile.bench termdict SRCROOT=/path/to/main
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <time.h>

#include "index/segment.h"
#include "analysis/analysis.h"
#include "mapping/mapping.h"
#include "search/search_int.h"
#include "util/json.h"
#include "unit_test.h"

typedef struct BTerm
{
	int			field;
	char	   *b;
	int			len;
} BTerm;

/* CPU time of this process: the machine is shared, wall time is noisy. */
#define now_sec() ut_clock_sec(CLOCK_PROCESS_CPUTIME_ID)

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;

	if (f == NULL)
	{
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	*len = (size_t) ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(*len + 1);
	if (buf == NULL || fread(buf, 1, *len, f) != *len)
	{
		perror(path);
		exit(2);
	}
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static SeJson *
parse_json(const char *text, size_t len)
{
	SeError		err;
	SeJson	   *j;

	se_error_init(&err);
	j = se_json_parse(text, len, NULL, &err);
	if (j == NULL)
	{
		fprintf(stderr, "bad json: %.*s: %s\n", (int) Min(len, 200), text, err.reason);
		exit(2);
	}
	return j;
}

/* Section len from the table of contents (the same in every version). */
static uint64
section_len(const StringInfoData *file, uint32 want)
{
	uint64		toc;
	uint32		n,
				i;

	memcpy(&toc, file->data + file->len - SE_FILE_FOOTER_LEN - 8, 8);
	memcpy(&n, file->data + toc + 4, 4);
	for (i = 0; i < n; i++)
	{
		uint32		id;
		uint64		len;

		memcpy(&id, file->data + toc + 8 + 24 * i, 4);
		memcpy(&len, file->data + toc + 8 + 24 * i + 16, 8);
		if (id == want)
			return len;
	}
	return 0;
}

/*
 * Weak: the baseline tree bench/termdict_bench.sh builds this file against
 * may predate se_fuzzy_free (its automata then stay allocated).
 */
extern void se_fuzzy_free(SeFuzzy *a);
#pragma weak se_fuzzy_free

/*
 * Weak likewise (trees before format v5 write v4 only): BENCH_WRITE_VERSION=4
 * makes the segment an old-format one, to compare formats in one build.
 */
extern int	se_segment_write_version;
#pragma weak se_segment_write_version

/* The words of the fuzzy top-10 benchmark, and a few more misspellings. */
static const char *const fuzzy_words[] = {
	"libary", "pyhton", "kernal", "databse", "netwrok",
	"compresion", "utilty", "graphcs", "fnt", "xml"
};

static void
fuzzy_count(void *arg, const char *term, int len, const SeTermInfo *ti,
			int edits)
{
	(*(int64 *) arg)++;
}

/* Time the statements over ROUNDS rounds; prints ops/s as min / median / max. */
#define TIMED(label, nops, rounds, ...) \
	do { \
		double	   *t_ = palloc(sizeof(double) * (rounds)); \
		int			r_; \
		for (r_ = 0; r_ < (rounds); r_++) \
		{ \
			double		t0_ = now_sec(); \
			__VA_ARGS__; \
			t_[r_] = (double) (nops) / (now_sec() - t0_); \
		} \
		qsort(t_, (rounds), sizeof(double), ut_cmp_double); \
		printf("%-34s %12.0f %12.0f %12.0f   ops/s (min median max)\n", label, \
			   t_[0], t_[(rounds) / 2], t_[(rounds) - 1]); \
		pfree(t_); \
	} while (0)

int
main(int argc, char **argv)
{
	size_t		clen,
				blen;
	char	   *corpus,
			   *body;
	int			max_docs = argc > 3 ? atoi(argv[3]) : PG_INT32_MAX;
	int			lookups = getenv("BENCH_LOOKUPS") ? atoi(getenv("BENCH_LOOKUPS")) : 1000000;
	int			rounds = getenv("BENCH_ROUNDS") ? atoi(getenv("BENCH_ROUNDS")) : 5;
	SeMapping  *mapping;
	SeSegmentBuilder *b;
	SeSegmentReader *r;
	StringInfoData file;
	uint8		sid[SE_SEGMENT_ID_LEN] = {0xBD};
	SeError		err;
	char	   *p,
			   *end;
	int			ndocs = 0;
	BTerm	   *terms;
	int			nterms = 0,
				cap = 1024;
	int			f,
				i;
	int		   *pick;
	int64		found = 0;
	double		t0;

	if (argc < 3)
	{
		fprintf(stderr, "usage: %s CORPUS INDEX_BODY [MAX_DOCS]\n", argv[0]);
		return 2;
	}
	if (getenv("BENCH_WRITE_VERSION") && &se_segment_write_version)
		se_segment_write_version = atoi(getenv("BENCH_WRITE_VERSION"));
	corpus = read_file(argv[1], &clen);
	body = read_file(argv[2], &blen);
	se_error_init(&err);
	mapping = se_mapping_from_json(se_json_get(parse_json(body, blen), "mappings"),
								   NULL, &err);
	if (mapping == NULL)
	{
		fprintf(stderr, "mapping: %s\n", err.reason);
		return 2;
	}

	/* build one segment from the corpus */
	t0 = now_sec();
	b = se_builder_create();
	p = corpus;
	end = corpus + clen;
	while (p < end && ndocs < max_docs)
	{
		char	   *nl = memchr(p, '\n', end - p);
		char	   *src;
		char	   *src_end;
		SeJson	   *action,
				   *id,
				   *doc;
		SeDocMeta	meta;
		SeDocParseOptions opts;
		bool		changed;
		char		idbuf[300];

		if (nl == NULL)
			break;
		action = parse_json(p, nl - p);
		src = nl + 1;
		src_end = memchr(src, '\n', end - src);
		if (src_end == NULL)
			src_end = end;
		p = src_end + 1;
		id = se_json_get(se_json_get(action, "index"), "_id");
		if (id == NULL || id->type != SE_JSON_STRING)
		{
			fprintf(stderr, "action without _id at doc %d\n", ndocs);
			return 2;
		}
		snprintf(idbuf, sizeof(idbuf), "%.*s", id->u.s.len, id->u.s.str);
		doc = parse_json(src, src_end - src);
		memset(&opts, 0, sizeof(opts));
		se_builder_begin_doc(b);
		if (!se_doc_parse(mapping, doc, &opts, b, idbuf, &changed, &err))
		{
			fprintf(stderr, "doc %s: %s\n", idbuf, err.reason);
			return 2;
		}
		memset(&meta, 0, sizeof(meta));
		meta.id = idbuf;
		meta.id_len = strlen(idbuf);
		meta.seq_no = ndocs;
		meta.version = 1;
		se_builder_end_doc(b, &meta, src, src_end - src);
		ndocs++;
	}
	initStringInfo(&file);
	se_builder_serialize(b, sid, 1, &file);
	se_builder_free(b);
	r = se_segment_open((uint8 *) file.data, file.len, true, &err);
	if (r == NULL)
	{
		fprintf(stderr, "open: %s\n", err.reason);
		return 2;
	}

	/* every term of every indexed field */
	terms = palloc(sizeof(BTerm) * cap);
	for (f = 0; f < se_segment_num_fields(r); f++)
	{
		SeTermsEnum *e = se_segment_terms(r, f, NULL, 0);
		const char *t;
		int			len;

		while (se_terms_next(e, &t, &len, NULL))
		{
			if (nterms == cap)
				terms = repalloc(terms, sizeof(BTerm) * (cap *= 2));
			terms[nterms].field = f;
			terms[nterms].b = palloc(len + 1);
			memcpy(terms[nterms].b, t, len);
			terms[nterms].b[len] = 0xFF;	/* for absent-term probes */
			terms[nterms].len = len;
			nterms++;
		}
		se_terms_close(e);
	}
	printf("corpus: %s, %d docs, %d fields, %d terms (built in %.1fs)\n", argv[1],
		   ndocs, se_segment_num_fields(r), nterms, now_sec() - t0);
	printf("segment %" INT64_MODIFIER "d bytes, TERMS section %" INT64_MODIFIER
		   "d bytes (%.2f bytes/term)\n", (int64) file.len,
		   (int64) section_len(&file, 2), (double) section_len(&file, 2) / Max(nterms, 1));
	if (nterms == 0)
		return 0;

	pick = palloc(sizeof(int) * lookups);
	for (i = 0; i < lookups; i++)
		pick[i] = (int) (ut_rnd() % nterms);

	TIMED("exact lookups (present)", lookups, rounds,
		  {
		  for (i = 0; i < lookups; i++)
		  {
			  SeTermInfo ti;
			  BTerm *bt = &terms[pick[i]];

			  found += se_segment_seek_exact(r, bt->field, bt->b, bt->len, &ti);
		  }
		  });
	TIMED("exact lookups (absent)", lookups, rounds,
		  {
		  for (i = 0; i < lookups; i++)
		  {
			  SeTermInfo ti;
			  BTerm *bt = &terms[pick[i]];

			  found += se_segment_seek_exact(r, bt->field, bt->b, bt->len + 1, &ti);
		  }
		  });
	TIMED("prefix seeks (<= 10 terms each)", lookups / 4, rounds,
		  {
		  for (i = 0; i < lookups / 4; i++)
		  {
			  BTerm *bt = &terms[pick[i]];
			  int plen = bt->len / 2;
			  SeTermsEnum *e = se_segment_terms(r, bt->field, bt->b, plen);
			  const char *t;
			  int len, k = 0;

			  while (k < 10 && se_terms_next(e, &t, &len, NULL) &&
					 len >= plen && memcmp(t, bt->b, plen) == 0)
				  k++;
			  found += k;
			  se_terms_close(e);
		  }
		  });
	TIMED("enumerate all terms (terms/s)", nterms, rounds,
		  {
		  for (f = 0; f < se_segment_num_fields(r); f++)
		  {
			  SeTermsEnum *e = se_segment_terms(r, f, NULL, 0);
			  SeTermInfo ti;

			  while (se_terms_next(e, NULL, NULL, &ti))
				  found++;
			  se_terms_close(e);
		  }
		  });
	if ((f = se_segment_field(r, "description")) >= 0)
	{
		int			walks = getenv("BENCH_FUZZY_WALKS") ?
			atoi(getenv("BENCH_FUZZY_WALKS")) : 2000;
		int			nw = lengthof(fuzzy_words);
		SeTokenList toks;
		char	   *stem[lengthof(fuzzy_words)];
		int			stem_len[lengthof(fuzzy_words)];
		int64		visited = 0,
					accepted = 0;
		SeFuzziness fz = {.set = true,.is_auto = true,.low = 3,.high = 6};

		se_token_list_init(&toks);
		for (i = 0; i < nw; i++)
		{
			se_token_list_reset(&toks);
			se_analyze(se_analyzer_lookup("english"), fuzzy_words[i],
					   strlen(fuzzy_words[i]), &toks);
			stem[i] = pstrdup(toks.ntokens > 0 ? toks.tokens[0].term : fuzzy_words[i]);
			stem_len[i] = strlen(stem[i]);
		}
		for (i = 0; i < nw; i++)
		{
			SeFuzzy    *a = se_fuzzy_create(stem[i], stem_len[i],
											se_fuzziness_edits(&fz, stem[i], stem_len[i]),
											0, true);
			int64		n = 0;
			int64		v = se_fuzzy_walk(a, r, f, fuzzy_count, &n);

			printf("fuzzy %-10s (%s, %d edits): %" INT64_MODIFIER "d terms visited, %"
				   INT64_MODIFIER "d accepted\n", fuzzy_words[i], stem[i],
				   se_fuzziness_edits(&fz, stem[i], stem_len[i]), v, n);
			visited += v;
			accepted += n;
		}
		found += accepted;
		TIMED("fuzzy walks, AUTO (walks/s)", walks, rounds,
			  {
			  for (i = 0; i < walks; i++)
			  {
				  int w = i % nw;
				  SeFuzzy *a = se_fuzzy_create(stem[w], stem_len[w],
											   se_fuzziness_edits(&fz, stem[w], stem_len[w]),
											   0, true);
				  int64 n = 0;

				  (void) se_fuzzy_walk(a, r, f, fuzzy_count, &n);
				  if (se_fuzzy_free)
					  se_fuzzy_free(a);
			  }
			  });
		printf("fuzzy walks: %" INT64_MODIFIER "d terms visited, %" INT64_MODIFIER
			   "d accepted per %d words\n", visited, accepted, nw);
	}
	printf("(checksum %" INT64_MODIFIER "d)\n", found);
	if (se_segment_error(r))
	{
		fprintf(stderr, "reader error: %s\n", se_segment_error(r)->reason);
		return 1;
	}
	se_segment_close(r);
	return 0;
}
