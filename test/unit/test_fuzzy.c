/* SOURCES: src/search/fuzzy.c src/search/interrupt.c src/index/builder.c src/index/writer.c src/index/reader.c src/index/postings.c src/index/livedocs.c src/index/merge.c src/index/fileformat.c src/index/smallfloat.c src/util/error.c src/util/json.c */
/*-------------------------------------------------------------------------
 *
 * test_fuzzy.c
 *	  The Levenshtein automaton of the fuzzy query against brute force.
 *
 * A segment holds a few thousand random terms over a small alphabet with
 * multibyte letters (so that many terms are near each other and code
 * points differ from bytes).  For random query terms, every max_edits,
 * prefix_length and transpositions setting, the terms the automaton's
 * walk of the term dictionary yields, with their distances, must be
 * exactly those a brute-force edit distance over every term accepts; and
 * the walk must visit fewer terms than the dictionary holds (it seeks past
 * dead branches rather than scanning).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "mb/pg_wchar.h"
#include "search/search_int.h"
#include "unit_test.h"

#define NTERMS	4000
#define MAXCP	9

/* a, b, c, d, é, ö, ß: one and two byte letters */
static const char *const letters[] = {"a", "b", "c", "d", "\xc3\xa9", "\xc3\xb6", "\xc3\x9f"};
#define NLETTERS 7
/* the alphabet random terms are drawn from (test_shared_automaton's own) */
static const char *const *alpha = letters;
static int	nalpha = NLETTERS;

static char *terms[NTERMS];
static int	nterms;

static int
cps(const char *s, uint32 *out)
{
	const unsigned char *u = (const unsigned char *) s;
	int			n = 0;

	while (*u)
	{
		int			l = pg_utf_mblen(u);

		out[n++] = l == 1 ? *u : utf8_to_unicode(u);
		u += l;
	}
	return n;
}

/* Optimal string alignment distance over code points, the whole table. */
static int
osa(const char *x, const char *y, bool transpositions)
{
	uint32		a[64],
				b[64];
	int			n = cps(x, a);
	int			m = cps(y, b);
	int			d[65][65];
	int			i,
				j;

	for (i = 0; i <= n; i++)
		d[i][0] = i;
	for (j = 0; j <= m; j++)
		d[0][j] = j;
	for (i = 1; i <= n; i++)
		for (j = 1; j <= m; j++)
		{
			int			v = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);

			v = Min(v, d[i - 1][j] + 1);
			v = Min(v, d[i][j - 1] + 1);
			if (transpositions && i > 1 && j > 1 &&
				a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				v = Min(v, d[i - 2][j - 2] + 1);
			d[i][j] = v;
		}
	return d[n][m];
}

/* The first p code points of s, as bytes. */
static int
prefix_bytes(const char *s, int p)
{
	const unsigned char *u = (const unsigned char *) s;
	int			i = 0;

	while (p-- > 0 && u[i])
		i += pg_utf_mblen(u + i);
	return i;
}

static char *
random_term(int maxcp)
{
	StringInfoData s;
	int			n = (int) (ut_rnd() % (maxcp + 1));

	initStringInfo(&s);
	while (n-- > 0)
		appendStringInfoString(&s, alpha[ut_rnd() % nalpha]);
	return s.data;
}

static SeSegmentReader *
build_segment(int maxcp)
{
	SeSegmentBuilder *b = se_builder_create();
	int			f = se_builder_field(b, "t", SE_IDX_FREQS, false, SE_DV_NONE);
	StringInfoData out;
	SeError		err;
	uint8		segid[SE_SEGMENT_ID_LEN];
	SeSegmentReader *r;
	int			i;

	for (i = 0; i < NTERMS; i++)
	{
		SeDocMeta	meta;
		char	   *t = random_term(maxcp);

		if (t[0] == '\0')
			continue;
		se_builder_begin_doc(b);
		se_builder_add_term(b, f, t, strlen(t), 0);
		memset(&meta, 0, sizeof(meta));
		meta.id = psprintf("d%d", i);
		meta.id_len = strlen(meta.id);
		meta.primary_term = 1;
		meta.version = 1;
		meta.seq_no = i;
		se_builder_end_doc(b, &meta, "{}", 2);
	}
	memset(segid, 7, sizeof(segid));
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

typedef struct Got
{
	int			n;
	char	   *terms[NTERMS];
	int			edits[NTERMS];
} Got;

static void
collect(void *arg, const char *term, int len, const SeTermInfo *ti, int edits)
{
	Got		   *g = arg;

	g->terms[g->n] = pnstrdup(term, len);
	g->edits[g->n] = edits;
	g->n++;
}

static void
load_terms(SeSegmentReader *r)
{
	SeTermsEnum *e = se_segment_terms(r, se_segment_field(r, "t"), "", 0);
	const char *t;
	int			len;

	nterms = 0;
	while (se_terms_next(e, &t, &len, NULL))
		terms[nterms++] = pnstrdup(t, len);
	se_terms_close(e);
}

/* Walk r's dictionary (its terms loaded) with a, check against brute force. */
static void
check_walk(SeFuzzy *a, SeSegmentReader *r, const char *q, int k, int p, bool tr,
		   int64 *visited_sum)
{
	Got		   *g = palloc0(sizeof(Got));
	int			pb = prefix_bytes(q, p);
	int			want = 0;
	int			gi = 0;
	bool		same = true;
	int			i;

	*visited_sum += se_fuzzy_walk(a, r, se_segment_field(r, "t"), collect, g);
	/* terms come in dictionary order, as does the brute force */
	for (i = 0; i < nterms; i++)
	{
		int			d;

		if ((int) strlen(terms[i]) < pb || memcmp(terms[i], q, pb) != 0)
			continue;
		d = osa(terms[i] + pb, q + pb, tr);
		if (d > k)
			continue;
		want++;
		if (gi >= g->n || strcmp(g->terms[gi], terms[i]) != 0 || g->edits[gi] != d)
			same = false;
		gi++;
		/* the automaton's own distance agrees too */
		UT_CHECK(se_fuzzy_distance(a, terms[i], strlen(terms[i])) == d,
				 "distance %s ~ %s", terms[i], q);
	}
	UT_CHECK(same && want == g->n, "walk of %s k=%d p=%d tr=%d: %d terms, want %d",
			 q, k, p, tr, g->n, want);
}

static void
check_query(SeSegmentReader *r, const char *q, int k, int p, bool tr,
			int64 *visited_sum)
{
	SeFuzzy    *a = se_fuzzy_create(q, strlen(q), k, p, tr);

	check_walk(a, r, q, k, p, tr, visited_sum);
	se_fuzzy_free(a);
}

/*
 * One automaton walks several segments (as a shard's fuzzy query does):
 * what its states memoized on one dictionary -- live code points, least
 * accepted continuations -- must serve the next.  Terms over code points
 * below 64, from 64 to 126 (the last one the ASCII map holds) and two
 * bytes long, so that each part of the memo is asked.
 */
static void
test_shared_automaton(void)
{
	static const char *const mixed[] = {"0", "7", "-", "a", "z", "~", "\xc3\xa9"};
	SeSegmentReader *seg[2];
	int64		visited = 0;
	int			i;

	alpha = mixed;
	nalpha = lengthof(mixed);
	seg[0] = build_segment(6);
	seg[1] = build_segment(6);
	for (i = 0; i < 30; i++)
	{
		char	   *q = random_term(6);
		int			k = 1 + i % 2;
		int			p = i % 3 == 2 ? 1 : 0;
		bool		tr = i % 4 < 2;
		SeFuzzy    *a = se_fuzzy_create(q, strlen(q), k, p, tr);
		int			j;

		for (j = 0; j < 3; j++)
		{
			load_terms(seg[j % 2]);
			check_walk(a, seg[j % 2], q, k, p, tr, &visited);
		}
		se_fuzzy_free(a);
	}
	alpha = letters;
	nalpha = NLETTERS;
}

static void
test_against_brute_force(SeSegmentReader *r, int maxcp, int nqueries)
{
	int64		visited = 0;
	int			nq = 0;
	int			i;

	for (i = 0; i < nqueries; i++)
	{
		char	   *q = random_term(maxcp);
		int			k,
					p;

		for (k = 0; k <= 2; k++)
			for (p = 0; p <= 2; p++)
			{
				check_query(r, q, k, p, true, &visited);
				check_query(r, q, k, p, false, &visited);
				nq += 2;
			}
	}
	/*
	 * The walk skips: on average far fewer terms than the dictionary (a seek
	 * to the least accepted string after a dead term, as Lucene's
	 * AutomatonTermsEnum, visits about a third of what seeking past each
	 * dead start visited: 91 terms against 232 on the short terms)
	 */
	UT_CHECK(visited / nq < nterms / 20, "visited %ld per query of %d terms",
			 (long) (visited / nq), nterms);
	printf("fuzzy walk: %d terms, %ld visited per query on average\n", nterms,
		   (long) (visited / nq));
}

/*
 * A query of 63 distinct code points: past the per-state bitmaps of live
 * classes, the walk tests each class.  Its first letters are the
 * dictionary's, so that terms sharing its start come near.
 */
static void
test_many_classes(SeSegmentReader *r)
{
	StringInfoData q;
	int64		visited = 0;
	int			i;

	initStringInfo(&q);
	for (i = 0; i < NLETTERS; i++)
		appendStringInfoString(&q, letters[i]);
	for (i = 0; i < 56; i++)
	{
		unsigned char buf[4];

		unicode_to_utf8(0x100 + i, buf);
		appendBinaryStringInfo(&q, (char *) buf, pg_utf_mblen(buf));
	}
	check_query(r, q.data, 2, 0, true, &visited);
	check_query(r, q.data, 2, 1, false, &visited);
	/* and its first 9 code points (the bitmaps serve it) */
	q.data[prefix_bytes(q.data, 9)] = '\0';
	check_query(r, q.data, 2, 0, true, &visited);
}

static void
test_distance_cases(void)
{
	static const struct
	{
		const char *q;
		const char *t;
		int			k;
		bool		tr;
		int			want;
	}			cases[] = {
		{"kitten", "sitting", 2, true, -1},
		{"kitten", "sittin", 2, true, 2},
		{"ab", "ba", 1, true, 1},
		{"ab", "ba", 1, false, -1},
		{"ab", "ba", 2, false, 2},
		{"caf\xc3\xa9", "cafe", 1, true, 1},	/* one code point, two bytes */
		{"", "ab", 2, true, 2},
		{"abc", "", 2, true, -1},
		{"abc", "abc", 0, true, 0},
	};
	int			i;

	for (i = 0; i < lengthof(cases); i++)
	{
		SeFuzzy    *a = se_fuzzy_create(cases[i].q, strlen(cases[i].q), cases[i].k, 0,
										cases[i].tr);

		UT_CHECK(se_fuzzy_distance(a, cases[i].t, strlen(cases[i].t)) == cases[i].want,
				 "%s ~ %s", cases[i].q, cases[i].t);
	}
}

static void
test_fuzziness(void)
{
	SeFuzziness f;
	SeError		err;
	SeJson	   *v;

	se_error_init(&err);
	v = se_json_make_string("AUTO", 4);
	UT_CHECK(se_fuzziness_parse(v, &f, &err) && f.is_auto, "AUTO");
	UT_CHECK(se_fuzziness_edits(&f, "ab", 2) == 0 && se_fuzziness_edits(&f, "abc", 3) == 1 &&
			 se_fuzziness_edits(&f, "abcde", 5) == 1 && se_fuzziness_edits(&f, "abcdef", 6) == 2,
			 "AUTO edits by length");
	UT_CHECK(se_fuzziness_edits(&f, "\xc3\xa9\xc3\xa9\xc3\xa9", 6) == 1, "AUTO counts code points");
	v = se_json_make_string("auto:1,4", 8);
	UT_CHECK(se_fuzziness_parse(v, &f, &err) && f.low == 1 && f.high == 4 &&
			 se_fuzziness_edits(&f, "a", 1) == 1 && se_fuzziness_edits(&f, "abcd", 4) == 2,
			 "AUTO:1,4");
	v = se_json_make_string("2", 1);
	UT_CHECK(se_fuzziness_parse(v, &f, &err) && !f.is_auto && f.edits == 2, "\"2\"");
	v = se_json_make_string("3", 1);
	UT_CHECK(!se_fuzziness_parse(v, &f, &err) &&
			 strcmp(err.reason, "Valid edit distances are [0, 1, 2] but was [3]") == 0,
			 "3 refused: %s", err.reason);
	se_error_init(&err);
	v = se_json_make_string("AUTO:4", 6);
	UT_CHECK(!se_fuzziness_parse(v, &f, &err), "AUTO:4 refused");
}

int
main(void)
{
	SeSegmentReader *r = build_segment(MAXCP);

	load_terms(r);
	test_distance_cases();
	test_fuzziness();
	test_against_brute_force(r, 7, 60);
	test_shared_automaton();
	/* long terms: the walk's path and states outgrow their first buffers */
	r = build_segment(40);
	load_terms(r);
	test_against_brute_force(r, 40, 10);
	test_many_classes(r);
	return ut_finish("test_fuzzy");
}
