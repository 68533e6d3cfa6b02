/* SOURCES: src/index/builder.c src/index/writer.c src/index/reader.c src/index/postings.c src/index/livedocs.c src/index/merge.c src/index/fileformat.c src/index/smallfloat.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_segment.c
 *	  Unit tests of the segment codec (src/index/): SmallFloat, builder,
 *	  serialization, reader, live docs, merge and corruption handling.
 *
 * Every segment is checked against a reference model kept by the test:
 * the documents' tokens, doc values, metadata and sources.  Expected
 * postings, statistics and norms are recomputed from the model by brute
 * force (sorting all (term, doc, position) tuples), independently of the
 * codec's own data structures.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <time.h>

#include "index/segment.h"
#include "index/segment_internal.h"
#include "unit_test.h"

/* Docs per postings block (the format's SE_POSTINGS_BLOCK). */
#define SE_BLOCK_DOCS 128

/* Damaged copies read without checksum; raise with -DSE_FUZZ_ITERS=... */
#ifndef SE_FUZZ_ITERS
#define SE_FUZZ_ITERS 2400
#endif

/* ---------------------------------------------------------------------
 * Deterministic randomness
 * ---------------------------------------------------------------------
 */
static uint64 rng_state = 0x243F6A8885A308D3ULL;

static uint64
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint32
rnd_below(uint32 n)
{
	return n == 0 ? 0 : (uint32) (rnd() % n);
}

static double
now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------------
 * Field definitions and the document model
 * ---------------------------------------------------------------------
 */
typedef struct FDef
{
	const char *name;
	SeIndexOptions io;
	bool		norms;
	SeDocValuesType dv;
} FDef;

enum
{
	F_ID, F_BODY, F_TAG, F_TITLE, F_NUM, F_MIXED, F_UNI, F_EMPTY, F_EXTRA,
	NFDEFS
};

static const FDef fdefs[NFDEFS] = {
	{"_id", SE_IDX_DOCS, false, SE_DV_NONE},
	{"body", SE_IDX_POSITIONS, true, SE_DV_NONE},
	{"tag", SE_IDX_DOCS, false, SE_DV_SORTED_SET},
	{"title.keyword", SE_IDX_FREQS, true, SE_DV_NONE},
	{"num", SE_IDX_NONE, false, SE_DV_NUMERIC},
	{"mixed", SE_IDX_POSITIONS, false, SE_DV_NUMERIC},
	{"\xc3\xbcn\xc3\xaf.c\xc3\xb6" "d\xc3\xa9", SE_IDX_DOCS, true, SE_DV_SORTED_SET},
	{"empty", SE_IDX_POSITIONS, true, SE_DV_NUMERIC},
	{"extra.only.in.some", SE_IDX_FREQS, true, SE_DV_SORTED_SET},
};

typedef struct MTok
{
	int			field;
	const char *term;
	int			len;
	int			pos;
} MTok;

typedef struct MNum
{
	int			field;
	int64		v;
} MNum;

typedef struct MSorted
{
	int			field;
	const char *v;
	int			len;
} MSorted;

typedef struct MDoc
{
	char		id[40];
	int			id_len;
	char	   *routing;
	int			routing_len;
	int64		seq_no;
	int64		primary_term;
	int64		version;
	char	   *src;
	size_t		src_len;
	MTok	   *toks;
	int			ntoks;
	MNum	   *nums;
	int			nnums;
	MSorted    *sorted;
	int			nsorted;
} MDoc;

/* Vocabulary: random words plus edge cases for byte ordering. */
#define VOCAB 3000
static char *vocab[VOCAB];
static int	vocab_len[VOCAB];

static void
init_vocab(void)
{
	static const char *special[] = {
		"", "\xff\xfe", "\xff", "\xc3\xa9t\xc3\xa9", "a", "aa", "ab", "b",
		"the", "0", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "\x01", "a b c"
	};
	int			nspecial = lengthof(special);
	int			i,
				j;

	for (i = 0; i < VOCAB; i++)
	{
		if (i < nspecial)
		{
			vocab[i] = pstrdup(special[i]);
			vocab_len[i] = strlen(special[i]);
			continue;
		}
		vocab_len[i] = 1 + rnd_below(12);
		if (i % 97 == 0)
			vocab_len[i] = 40 + rnd_below(200);	/* a few long terms */
		vocab[i] = palloc(vocab_len[i] + 1);
		for (j = 0; j < vocab_len[i]; j++)
			vocab[i][j] = (i % 50 == 0) ? (char) (0x80 + rnd_below(128)) : (char) ('a' + rnd_below(26));
		vocab[i][vocab_len[i]] = '\0';
	}
}

/* Skewed pick: low indexes are much more frequent. */
static int
pick_word(void)
{
	return (int) rnd_below(rnd_below(VOCAB) + 1);
}

static void
add_tok(MDoc *d, int *cap, int field, int w, int pos)
{
	if (d->ntoks == *cap)
	{
		*cap = *cap ? *cap * 2 : 16;
		d->toks = d->toks ? repalloc(d->toks, sizeof(MTok) * *cap) : palloc(sizeof(MTok) * *cap);
	}
	d->toks[d->ntoks].field = field;
	d->toks[d->ntoks].term = vocab[w];
	d->toks[d->ntoks].len = vocab_len[w];
	d->toks[d->ntoks].pos = pos;
	d->ntoks++;
}

/* Generate one random document; use_extra adds the F_EXTRA field. */
static void
gen_doc(MDoc *d, int idnum, bool use_extra, int body_max)
{
	int			cap = 0;
	int			n,
				i,
				pos;

	memset(d, 0, sizeof(MDoc));
	d->id_len = snprintf(d->id, sizeof(d->id), "doc-%d", idnum);
	if (rnd_below(5) == 0)
	{
		d->routing_len = rnd_below(3) == 0 ? 0 : 1 + rnd_below(10);
		d->routing = palloc(d->routing_len + 1);
		for (i = 0; i < d->routing_len; i++)
			d->routing[i] = 'r' + rnd_below(5);
		d->routing[d->routing_len] = '\0';
	}
	d->seq_no = (int64) rnd_below(1000000);
	d->primary_term = 1 + rnd_below(3);
	d->version = rnd_below(10) == 0 ? -1 : (int64) (1 + rnd_below(100));

	/* source: mostly small, sometimes empty, sometimes big */
	i = rnd_below(100);
	d->src_len = (i == 0) ? 0 : (i == 1) ? 20000 + rnd_below(100000) : 10 + rnd_below(1500);
	d->src = palloc(d->src_len + 1);
	for (i = 0; i < (int) d->src_len; i++)
		d->src[i] = (char) ((i % 7 == 0) ? rnd_below(256) : 'a' + (i * 31 + idnum) % 26);

	/* body: positions nondecreasing, with synonyms and gaps */
	n = rnd_below(body_max + 1);
	pos = rnd_below(3);
	for (i = 0; i < n; i++)
	{
		int			r = rnd_below(100);

		if (r < 5)
			pos += 100;
		else if (r < 10)
			pos += 0;
		else if (r == 10)
			pos += 1 << 20;
		else
			pos += 1;
		add_tok(d, &cap, F_BODY, (r < 20) ? 8 /* "the" */ : pick_word(), pos);
	}
	/* a doc with a very high frequency of one term */
	if (rnd_below(50) == 0)
		for (i = 0; i < 300; i++)
			add_tok(d, &cap, F_BODY, 9, ++pos);

	n = rnd_below(4);
	for (i = 0; i < n; i++)
		add_tok(d, &cap, F_TAG, rnd_below(40), 0);
	n = rnd_below(6);
	for (i = 0; i < n; i++)
		add_tok(d, &cap, F_TITLE, rnd_below(30), i);
	n = rnd_below(4);
	for (i = 0; i < n; i++)
		add_tok(d, &cap, F_MIXED, pick_word(), i * 3);
	n = rnd_below(3);
	for (i = 0; i < n; i++)
		add_tok(d, &cap, F_UNI, rnd_below(15), 0);
	if (use_extra)
	{
		n = rnd_below(3);
		for (i = 0; i < n; i++)
			add_tok(d, &cap, F_EXTRA, rnd_below(20), i);
	}

	/* doc values */
	n = rnd_below(4) + (use_extra ? 3 : 0);
	d->nums = palloc(sizeof(MNum) * (n + 1));
	d->sorted = palloc(sizeof(MSorted) * (n + 8));
	for (i = 0; i < n; i++)
	{
		int64		v;

		switch (rnd_below(6))
		{
			case 0:
				v = PG_INT64_MIN;
				break;
			case 1:
				v = PG_INT64_MAX;
				break;
			case 2:
				v = -(int64) rnd_below(1000);
				break;
			default:
				v = rnd_below(5);	/* duplicates are kept */
		}
		d->nums[d->nnums].field = (rnd_below(2) == 0) ? F_NUM : F_MIXED;
		d->nums[d->nnums].v = v;
		d->nnums++;
	}
	n = rnd_below(5);
	for (i = 0; i < n; i++)
	{
		int			w = rnd_below(25);
		int			which = rnd_below(use_extra ? 3 : 2);

		d->sorted[d->nsorted].field = which == 0 ? F_TAG : which == 1 ? F_UNI : F_EXTRA;
		d->sorted[d->nsorted].v = vocab[w];
		d->sorted[d->nsorted].len = vocab_len[w];
		d->nsorted++;
	}
}

/* Feed a model doc to the builder; returns its buffered doc id. */
static int
build_doc(SeSegmentBuilder *b, const int *fmap, const MDoc *d)
{
	SeDocMeta	m;
	int			i;

	se_builder_begin_doc(b);
	for (i = 0; i < d->ntoks; i++)
		se_builder_add_term(b, fmap[d->toks[i].field], d->toks[i].term,
							d->toks[i].len, d->toks[i].pos);
	for (i = 0; i < d->nnums; i++)
		se_builder_add_numeric(b, fmap[d->nums[i].field], d->nums[i].v);
	for (i = 0; i < d->nsorted; i++)
		se_builder_add_sorted(b, fmap[d->sorted[i].field], d->sorted[i].v,
							  d->sorted[i].len);
	m.id = d->id;
	m.id_len = d->id_len;
	m.routing = d->routing;
	m.routing_len = d->routing_len;
	m.seq_no = d->seq_no;
	m.primary_term = d->primary_term;
	m.version = d->version;
	return se_builder_end_doc(b, &m, d->src, d->src_len);
}

static void
declare_fields(SeSegmentBuilder *b, int *fmap, bool use_extra)
{
	int			k;

	for (k = 0; k < NFDEFS; k++)
	{
		fmap[k] = -1;
		if (k == F_EXTRA && !use_extra)
			continue;
		fmap[k] = se_builder_field(b, fdefs[k].name, fdefs[k].io, fdefs[k].norms,
								   fdefs[k].dv);
	}
}

/* ---------------------------------------------------------------------
 * Verification against the model
 * ---------------------------------------------------------------------
 */
typedef struct Tuple
{
	const char *term;
	int			len;
	int			doc;
	int			pos;
} Tuple;

static int
cmp_bytes(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

static int
cmp_tuple(const void *a, const void *b)
{
	const Tuple *x = a;
	const Tuple *y = b;
	int			c = cmp_bytes(x->term, x->len, y->term, y->len);

	if (c != 0)
		return c;
	if (x->doc != y->doc)
		return x->doc < y->doc ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static int
cmp_msorted(const void *a, const void *b)
{
	const MSorted *x = a;
	const MSorted *y = b;

	return cmp_bytes(x->v, x->len, y->v, y->len);
}

/*
 * The full impacts of the shallow block: pairs ascending on both sides,
 * every doc dominated by a pair, the extremes equal to max freq / min
 * norm, and exactly the competitive pairs computed here by brute force
 * when there are no more than SE_MAX_IMPACTS of them.  Returns errors.
 */
static int	big_fronts = 0;

static int
freqs_max(const int *freqs, int n)
{
	int			m = 0;

	while (n-- > 0)
		m = Max(m, freqs[n]);
	return m;
}

static int
check_block_pairs(SeSegmentReader *r, int field, SePostings *p, const int *docs,
				  const int *freqs, int n, bool norms, bool exact)
{
	SeImpact	imp[SE_MAX_IMPACTS];
	SeImpact	front[256];
	int			nimp = se_postings_block_impacts(p, imp);
	int			nfront = 0;
	int			i,
				k,
				bad = 0;

	if (nimp < 1 || nimp > SE_MAX_IMPACTS)
		return 1;
	for (i = 1; i < nimp; i++)
		if (imp[i].freq <= imp[i - 1].freq || imp[i].norm <= imp[i - 1].norm)
			bad++;
	for (k = 0; k < n; k++)
	{
		int			nv = norms ? se_segment_norm(r, field, docs[k]) : 0;
		bool		covered = false;
		bool		dominated = false;

		for (i = 0; i < nimp; i++)
			covered |= freqs[k] <= imp[i].freq && nv >= imp[i].norm;
		if (!covered)
			bad++;
		if (!exact)
			continue;
		/* brute-force front: no other doc at least as good on both, better on one */
		for (i = 0; i < n && !dominated; i++)
		{
			int			ni = norms ? se_segment_norm(r, field, docs[i]) : 0;

			dominated = freqs[i] >= freqs[k] && ni <= nv &&
				(freqs[i] > freqs[k] || ni < nv);
		}
		if (!dominated)
		{
			for (i = 0; i < nfront; i++)
				if (front[i].freq == freqs[k] && front[i].norm == nv)
					break;
			if (i == nfront)
			{
				front[nfront].freq = freqs[k];
				front[nfront].norm = (uint8) nv;
				nfront++;
			}
		}
	}
	if (nfront > SE_MAX_IMPACTS)
		big_fronts++;
	if (!exact)
	{
		if (imp[nimp - 1].freq != freqs_max(freqs, n))
			bad++;
	}
	else if (nfront <= SE_MAX_IMPACTS)
	{
		if (nfront != nimp)
			bad++;
		else
			for (i = 0; i < nimp; i++)
			{
				for (k = 0; k < nfront; k++)
					if (front[k].freq == imp[i].freq && front[k].norm == imp[i].norm)
						break;
				if (k == nfront)
					bad++;
			}
	}
	else if (nimp != SE_MAX_IMPACTS)
		bad++;
	return bad;
}

/*
 * Skip groups (format v4): a term of more than 32 blocks answers
 * group_impacts with the last doc of the group of 32 blocks (4096 docs)
 * that holds the first doc >= target, and pairs that cover every doc of
 * that group; a shorter term answers for all its docs with
 * SE_NO_MORE_DOCS.  Ascending targets (steps, jumps over groups, repeats),
 * a backward target, and docs read with advance() in between, which moves
 * other cursors than the group one.
 */
static void
check_group_impacts(SeSegmentReader *r, const SeTermInfo *ti, const int *docs,
					const int *freqs, int ndocs, const char *label)
{
	const int	gdocs = SE_BLOCK_DOCS * 32;
	bool		norms = se_segment_field_has_norms(r, ti->field);
	bool		grouped = ndocs > gdocs;
	SePostings *p = se_postings_open(r, ti, false);
	int			target = 0,
				j = 0,
				bad = 0,
				steps = 0;

	for (;;)
	{
		SeImpact	imp[SE_MAX_IMPACTS];
		int			nimp = 0,
					first,
					last,
					k,
					i;
		int32		upto = se_postings_group_impacts(p, target, imp, &nimp);

		while (j < ndocs && docs[j] < target)
			j++;
		if (j == ndocs)
		{
			if (upto != SE_NO_MORE_DOCS)
				bad++;
			break;
		}
		first = grouped ? j / gdocs * gdocs : 0;
		last = grouped ? Min(first + gdocs, ndocs) - 1 : ndocs - 1;
		if (upto != (grouped ? docs[last] : SE_NO_MORE_DOCS) || nimp < 1 ||
			nimp > SE_MAX_IMPACTS)
		{
			if (bad++ == 0)
				fprintf(stderr, "%s: group_impacts(%d) = %d, expected %d\n", label,
						target, upto, grouped ? docs[last] : SE_NO_MORE_DOCS);
			break;
		}
		for (k = first; k <= last; k++)
		{
			int			nv = norms ? se_segment_norm(r, ti->field, docs[k]) : 0;
			bool		covered = false;

			for (i = 0; i < nimp; i++)
				covered |= freqs[k] <= imp[i].freq && nv >= imp[i].norm;
			if (!covered)
				bad++;
		}
		/* the same group again from a doc inside it */
		if (se_postings_group_impacts(p, docs[last], imp, &nimp) != upto)
			bad++;
		if (rnd_below(3) == 0 && se_postings_doc(p) < target)
			(void) se_postings_advance(p, target);
		if (!grouped || docs[last] == SE_NO_MORE_DOCS)
			break;
		target = rnd_below(2) == 0 ? docs[last] + 1 :
			docs[last] + 1 + (int) rnd_below(3 * gdocs);
		steps++;
	}
	if (grouped)
	{
		SeImpact	imp[SE_MAX_IMPACTS];
		int			nimp;

		/* backward: walks again from the first group */
		if (se_postings_group_impacts(p, 0, imp, &nimp) != docs[gdocs - 1])
			bad++;
		UT_CHECK(steps > 0, "%s: groups visited", label);
	}
	se_postings_close(p);
	UT_CHECK(bad == 0, "%s: %d wrong group impacts", label, bad);
}

/*
 * Check the impacts of a term against its docs and freqs: the term-level
 * impact, and advance_shallow / block_impact for ascending, repeated and
 * backward targets, interleaved with advance().  Blocks are the runs of
 * 128 docs, so the expected block of a target is known exactly.
 */
static void
check_impacts(SeSegmentReader *r, const SeTermInfo *ti, const int *docs,
			  const int *freqs, int ndocs, const char *label)
{
	SePostings *p;
	int			maxf = 0,
				minn = 255;
	int32		mf;
	uint8		mn;
	int			k,
				target,
				round;
	bool		norms = se_segment_field_has_norms(r, ti->field);
	int			bad = 0;

	if (ndocs == 0)
		return;
	for (k = 0; k < ndocs; k++)
	{
		maxf = Max(maxf, freqs[k]);
		minn = Min(minn, norms ? se_segment_norm(r, ti->field, docs[k]) : 0);
	}
	UT_CHECK(ti->max_freq == maxf && ti->min_norm == minn,
			 "%s: term impact %d/%d expected %d/%d", label, ti->max_freq,
			 ti->min_norm, maxf, minn);
	p = se_postings_open(r, ti, false);
	se_postings_block_impact(p, &mf, &mn);
	UT_CHECK(mf == maxf && mn == minn, "%s: impact before shallow", label);
	/* term-level pairs: cover every doc (exact only without merged blocks) */
	UT_CHECK(check_block_pairs(r, ti->field, p, docs, freqs, ndocs, norms, false) == 0,
			 "%s: term impacts", label);
	for (round = 0; round < 2; round++)
	{
		int			j = 0;

		target = round == 0 ? 0 : (int) rnd_below(docs[ndocs - 1] + 1);
		for (;;)
		{
			int32		upto = se_postings_advance_shallow(p, target);
			int			b,
						first,
						last,
						bmaxf = 0,
						bminn = 255;

			while (j < ndocs && docs[j] < target)
				j++;
			if (j == ndocs)
			{
				if (upto != SE_NO_MORE_DOCS)
					bad++;
				break;
			}
			b = j / SE_BLOCK_DOCS;
			first = b * SE_BLOCK_DOCS;
			last = Min(first + SE_BLOCK_DOCS, ndocs) - 1;
			for (k = first; k <= last; k++)
			{
				bmaxf = Max(bmaxf, freqs[k]);
				bminn = Min(bminn, norms ? se_segment_norm(r, ti->field, docs[k]) : 0);
			}
			se_postings_block_impact(p, &mf, &mn);
			if (upto != docs[last] || mf != bmaxf || mn != bminn)
			{
				if (bad++ == 0)
					fprintf(stderr, "%s: shallow(%d) = %d (%d/%d), expected %d (%d/%d)\n",
							label, target, upto, mf, mn, docs[last], bmaxf, bminn);
			}
			bad += check_block_pairs(r, ti->field, p, docs + first, freqs + first,
									 last - first + 1, norms, true);
			/* the same target again, and one inside the block */
			if (se_postings_advance_shallow(p, target) != upto ||
				se_postings_advance_shallow(p, docs[last]) != upto)
				bad++;
			/* the doc iterator is independent of the shallow cursor */
			if (rnd_below(4) == 0 && se_postings_doc(p) < target)
			{
				if (se_postings_advance(p, target) != docs[j])
					bad++;
			}
			/* sometimes jump several blocks, sometimes step one */
			target = rnd_below(3) == 0 ? docs[last] + 1 + (int) rnd_below(3000) : docs[last] + 1;
		}
	}
	/* a backward target walks again */
	if (se_postings_advance_shallow(p, 0) != docs[Min(SE_BLOCK_DOCS, ndocs) - 1])
		bad++;
	se_postings_close(p);
	UT_CHECK(bad == 0, "%s: %d wrong shallow advances or block impacts", label, bad);
	check_group_impacts(r, ti, docs, freqs, ndocs, label);
}

/* Check one term's postings (docs, freqs, positions) and advance(). */
static void
check_postings(SeSegmentReader *r, const SeTermInfo *ti, SeIndexOptions io,
			   const Tuple *t, int nt, const char *label)
{
	SePostings *p;
	int			i = 0;
	int			ndocs = 0;
	int		   *docs = palloc(sizeof(int) * (nt + 1));
	int		   *freqs = palloc(sizeof(int) * (nt + 1));
	int			k;

	p = se_postings_open(r, ti, true);
	UT_CHECK(se_postings_doc(p) == -1, "%s: doc before next", label);
	while (i < nt)
	{
		int			j = i;
		int32		doc = se_postings_next(p);

		while (j < nt && t[j].doc == t[i].doc)
			j++;
		freqs[ndocs] = (io == SE_IDX_DOCS) ? 1 : j - i;
		docs[ndocs++] = t[i].doc;
		if (doc != t[i].doc)
		{
			UT_CHECK(doc == t[i].doc, "%s: doc %d expected %d", label, doc, t[i].doc);
			break;
		}
		if (io == SE_IDX_DOCS)
			UT_CHECK(se_postings_freq(p) == 1, "%s: freq of docs-only", label);
		else
			UT_CHECK(se_postings_freq(p) == j - i, "%s: doc %d freq %d expected %d",
					 label, doc, se_postings_freq(p), j - i);
		/*
		 * Read all positions of most docs, none or only some of others, to
		 * test the lazy skipping of unread positions.
		 */
		if (io == SE_IDX_POSITIONS && (ndocs % 4 == 2 || (ndocs % 4 == 3 && j - i > 1)))
		{
			int			upto = (ndocs % 4 == 2) ? i : i + (j - i) / 2;

			for (k = i; k < upto; k++)
				UT_CHECK(se_postings_next_position(p) == t[k].pos, "%s: partial positions", label);
		}
		else if (io == SE_IDX_POSITIONS)
		{
			for (k = i; k < j; k++)
			{
				int32		pos = se_postings_next_position(p);

				if (pos != t[k].pos)
				{
					UT_CHECK(pos == t[k].pos, "%s: doc %d pos %d expected %d",
							 label, doc, pos, t[k].pos);
					break;
				}
			}
			UT_CHECK(se_postings_next_position(p) == -1, "%s: positions end", label);
		}
		else if (io != SE_IDX_POSITIONS)
			UT_CHECK(se_postings_next_position(p) == -1, "%s: no positions", label);
		i = j;
	}
	UT_CHECK(se_postings_next(p) == SE_NO_MORE_DOCS, "%s: end", label);
	UT_CHECK(se_postings_next(p) == SE_NO_MORE_DOCS, "%s: end stays", label);
	UT_CHECK(se_postings_cost(p) == ndocs, "%s: cost", label);
	se_postings_close(p);

	/* advance() to random targets, mixed with next() */
	if (ndocs > 3)
	{
		int			target = 0;

		p = se_postings_open(r, ti, false);
		for (;;)
		{
			int			expect = SE_NO_MORE_DOCS;
			int32		got;

			target += 1 + rnd_below(ndocs > 100 ? 200 : 20);
			for (k = 0; k < ndocs; k++)
				if (docs[k] >= target)
				{
					expect = docs[k];
					break;
				}
			got = se_postings_advance(p, target);
			if (got != expect)
			{
				UT_CHECK(got == expect, "%s: advance(%d) = %d expected %d", label,
						 target, got, expect);
				break;
			}
			if (got == SE_NO_MORE_DOCS)
				break;
			target = got;
			if (rnd_below(3) == 0)
			{
				got = se_postings_next(p);
				expect = (k + 1 < ndocs) ? docs[k + 1] : SE_NO_MORE_DOCS;
				UT_CHECK(got == expect, "%s: next after advance", label);
				if (got == SE_NO_MORE_DOCS)
					break;
				target = got;
			}
		}
		se_postings_close(p);
	}
	if (i >= nt)
		check_impacts(r, ti, docs, freqs, ndocs, label);
	pfree(docs);
	pfree(freqs);
}

static void
verify_field(SeSegmentReader *r, MDoc **docs, int ndocs, int k, const char *label)
{
	const FDef *fd = &fdefs[k];
	int			fnum = se_segment_field(r, fd->name);
	Tuple	   *t;
	int			nt = 0,
				cap = 64;
	int			i,
				j,
				d;
	int			has_dv = 0;
	SeTermsEnum *e;
	int64		df_sum = 0,
				doc_count = 0;
	bool	   *seen;
	char		lbl[200];
	int			nterms = 0;
	Tuple	  **uniq;

	t = palloc(sizeof(Tuple) * cap);
	for (d = 0; d < ndocs; d++)
	{
		if (k == F_ID)
		{
			if (nt == cap)
				t = repalloc(t, sizeof(Tuple) * (cap *= 2));
			t[nt].term = docs[d]->id;
			t[nt].len = docs[d]->id_len;
			t[nt].doc = d;
			t[nt].pos = 0;
			nt++;
		}
		for (i = 0; i < docs[d]->ntoks; i++)
		{
			if (docs[d]->toks[i].field != k)
				continue;
			if (nt == cap)
				t = repalloc(t, sizeof(Tuple) * (cap *= 2));
			t[nt].term = docs[d]->toks[i].term;
			t[nt].len = docs[d]->toks[i].len;
			t[nt].doc = d;
			t[nt].pos = docs[d]->toks[i].pos;
			nt++;
		}
		for (i = 0; i < docs[d]->nnums; i++)
			has_dv += docs[d]->nums[i].field == k;
		for (i = 0; i < docs[d]->nsorted; i++)
			has_dv += docs[d]->sorted[i].field == k;
	}
	if (fnum < 0)
	{
		UT_CHECK(nt == 0 && has_dv == 0, "%s: field %s missing", label, fd->name);
		pfree(t);
		return;
	}
	UT_CHECK(strcmp(se_segment_field_name(r, fnum), fd->name) == 0, "%s: name", label);
	UT_CHECK(se_segment_field_index_options(r, fnum) == fd->io, "%s: io of %s", label, fd->name);
	UT_CHECK(se_segment_field_has_norms(r, fnum) == fd->norms, "%s: norms of %s", label, fd->name);
	UT_CHECK(se_segment_field_dv_type(r, fnum) == fd->dv, "%s: dv of %s", label, fd->name);
	if (fd->io == SE_IDX_NONE)
		nt = 0;
	qsort(t, nt, sizeof(Tuple), cmp_tuple);

	/* walk the term groups and the terms enum together */
	uniq = palloc(sizeof(Tuple *) * (nt + 1));
	seen = palloc0(ndocs + 1);
	e = se_segment_terms(r, fnum, NULL, 0);
	for (i = 0; i < nt; i = j)
	{
		const char *term;
		int			len;
		SeTermInfo	ti,
					ti2;
		int			df = 0;

		for (j = i; j < nt && cmp_bytes(t[j].term, t[j].len, t[i].term, t[i].len) == 0; j++)
			if (j == i || t[j].doc != t[j - 1].doc)
			{
				df++;
				if (!seen[t[j].doc])
				{
					seen[t[j].doc] = true;
					doc_count++;
				}
			}
		uniq[nterms++] = &t[i];
		df_sum += df;
		snprintf(lbl, sizeof(lbl), "%s: field %s term #%d", label, fd->name, nterms);
		if (!se_terms_next(e, &term, &len, &ti))
		{
			UT_CHECK(false, "%s: enum ended early", lbl);
			break;
		}
		if (cmp_bytes(term, len, t[i].term, t[i].len) != 0)
		{
			UT_CHECK(false, "%s: enum term mismatch", lbl);
			break;
		}
		UT_CHECK(ti.doc_freq == df, "%s: df %d expected %d", lbl, ti.doc_freq, df);
		UT_CHECK(ti.total_term_freq == (fd->io == SE_IDX_DOCS ? df : j - i),
				 "%s: ttf " INT64_FORMAT, lbl, ti.total_term_freq);
		UT_CHECK(se_segment_seek_exact(r, fnum, t[i].term, t[i].len, &ti2) &&
				 ti2.doc_freq == ti.doc_freq &&
				 ti2.postings_offset == ti.postings_offset, "%s: seek_exact", lbl);
		check_postings(r, &ti, fd->io, &t[i], j - i, lbl);
	}
	UT_CHECK(!se_terms_next(e, NULL, NULL, NULL), "%s: field %s: enum has extra terms",
			 label, fd->name);
	se_terms_close(e);

	if (fd->io != SE_IDX_NONE)
	{
		SeFieldStats st;

		se_segment_field_stats(r, fnum, &st);
		UT_CHECK(st.doc_count == doc_count, "%s: %s doc_count " INT64_FORMAT " expected " INT64_FORMAT,
				 label, fd->name, st.doc_count, doc_count);
		UT_CHECK(st.sum_doc_freq == df_sum, "%s: %s sum_doc_freq", label, fd->name);
		UT_CHECK(st.sum_total_term_freq == (fd->io == SE_IDX_DOCS ? df_sum : nt),
				 "%s: %s sum_ttf " INT64_FORMAT, label, fd->name, st.sum_total_term_freq);
	}

	/* seeks of absent terms and enumeration from bounds */
	{
		SeTermInfo	ti;

		UT_CHECK(!se_segment_seek_exact(r, fnum, "no-such-term\x01", 13, &ti),
				 "%s: absent term", label);
	}
	for (i = 0; i < 30 && nterms > 0; i++)
	{
		char		bound[300];
		int			blen;
		const Tuple *u = uniq[rnd_below(nterms)];
		int			expect = -1;
		const char *term;
		int			len;

		/* a bound at, just after or just before an existing term */
		blen = Min(u->len, 290);
		memcpy(bound, u->term, blen);
		switch (rnd_below(3))
		{
			case 0:
				break;
			case 1:
				bound[blen++] = '\0';
				break;
			default:
				if (blen > 0)
					blen--;
		}
		for (j = 0; j < nterms; j++)
			if (cmp_bytes(uniq[j]->term, uniq[j]->len, bound, blen) >= 0)
			{
				expect = j;
				break;
			}
		e = se_segment_terms(r, fnum, bound, blen);
		if (expect < 0)
			UT_CHECK(!se_terms_next(e, &term, &len, NULL), "%s: from bound past end", label);
		else
		{
			UT_CHECK(se_terms_next(e, &term, &len, NULL) &&
					 cmp_bytes(term, len, uniq[expect]->term, uniq[expect]->len) == 0,
					 "%s: terms from bound", label);
			if (expect + 1 < nterms)
				UT_CHECK(se_terms_next(e, &term, &len, NULL) &&
						 cmp_bytes(term, len, uniq[expect + 1]->term, uniq[expect + 1]->len) == 0,
						 "%s: terms from bound, second", label);
		}
		se_terms_close(e);
	}

	/* norms */
	if (fd->norms)
	{
		int		   *cnt = palloc0(sizeof(int) * (ndocs + 1));
		int			bad = 0;

		for (i = 0; i < nt; i++)
			cnt[t[i].doc]++;
		for (d = 0; d < ndocs; d++)
			if (se_segment_norm(r, fnum, d) != se_smallfloat_int_to_byte4(cnt[d]))
				bad++;
		UT_CHECK(bad == 0, "%s: %s: %d wrong norms", label, fd->name, bad);
		pfree(cnt);
	}
	else
		UT_CHECK(se_segment_norm(r, fnum, 0) == 0, "%s: no norms", label);

	/* doc values */
	for (d = 0; d < ndocs; d++)
	{
		MDoc	   *md = docs[d];

		if (fd->dv == SE_DV_NUMERIC)
		{
			int64		expect[64];
			int			ne = 0;
			const int64 *vals;
			int			n = se_segment_numeric_values(r, fnum, d, &vals);

			for (i = 0; i < md->nnums; i++)
				if (md->nums[i].field == k)
					expect[ne++] = md->nums[i].v;
			qsort(expect, ne, sizeof(int64), cmp_int64);
			UT_CHECK(n == ne && (n == 0 || memcmp(vals, expect, n * sizeof(int64)) == 0),
					 "%s: %s numeric values of doc %d (%d vs %d)", label, fd->name, d, n, ne);
		}
		else if (fd->dv == SE_DV_SORTED_SET)
		{
			MSorted		expect[64];
			int			ne = 0,
						nu = 0;
			int			n = se_segment_sorted_count(r, fnum, d);

			for (i = 0; i < md->nsorted; i++)
				if (md->sorted[i].field == k)
					expect[ne++] = md->sorted[i];
			qsort(expect, ne, sizeof(MSorted), cmp_msorted);
			for (i = 0; i < ne; i++)
				if (nu == 0 || cmp_msorted(&expect[nu - 1], &expect[i]) != 0)
					expect[nu++] = expect[i];
			UT_CHECK(n == nu, "%s: %s sorted count of doc %d: %d vs %d", label, fd->name, d, n, nu);
			for (i = 0; i < n && i < nu; i++)
			{
				int			len;
				const char *v = se_segment_sorted_value(r, fnum, d, i, &len);
				int64		ord = se_segment_sorted_ord(r, fnum, d, i);

				UT_CHECK(v != NULL && cmp_bytes(v, len, expect[i].v, expect[i].len) == 0,
						 "%s: sorted value %d of doc %d", label, i, d);
				UT_CHECK(ord >= 0 && (i == 0 || ord > se_segment_sorted_ord(r, fnum, d, i - 1)),
						 "%s: ords ascend", label);
			}
			UT_CHECK(se_segment_sorted_value(r, fnum, d, n, &i) == NULL, "%s: past values", label);
		}
		else
		{
			const int64 *vals;

			UT_CHECK(se_segment_numeric_values(r, fnum, d, &vals) == 0 &&
					 se_segment_sorted_count(r, fnum, d) == 0, "%s: no doc values", label);
		}
	}
	/* sorted dictionary: strictly ascending, every value used */
	if (fd->dv == SE_DV_SORTED_SET)
	{
		int64		n = se_segment_sorted_dict_size(r, fnum);
		int64		o;
		const char *prev = NULL;
		int			prev_len = 0;
		bool	   *used = palloc0(n + 1);
		bool		ok = true;

		for (o = 0; o < n; o++)
		{
			int			len;
			const char *v = se_segment_sorted_dict_value(r, fnum, o, &len);

			if (v == NULL || (prev && cmp_bytes(prev, prev_len, v, len) >= 0))
				ok = false;
			prev = v;
			prev_len = len;
		}
		for (d = 0; d < ndocs; d++)
			for (i = 0; i < se_segment_sorted_count(r, fnum, d); i++)
				used[se_segment_sorted_ord(r, fnum, d, i)] = true;
		for (o = 0; o < n; o++)
			ok = ok && used[o];
		UT_CHECK(ok, "%s: %s sorted dictionary ascending and fully used", label, fd->name);
		pfree(used);
	}
	pfree(uniq);
	pfree(seen);
	pfree(t);
}

/* Check a whole segment against docs[0..ndocs) (new doc order). */
static void
verify_segment(SeSegmentReader *r, MDoc **docs, int ndocs, const char *label)
{
	int			k,
				d;
	int			bad_meta = 0,
				bad_src = 0,
				bad_lookup = 0;
	StringInfoData s;

	UT_CHECK(se_segment_max_doc(r) == (uint32) ndocs, "%s: max_doc %u expected %d",
			 label, se_segment_max_doc(r), ndocs);
	UT_CHECK(se_segment_field(r, SE_ID_FIELD) >= 0, "%s: _id field", label);
	UT_CHECK(se_segment_field(r, "no.such.field") == -1, "%s: unknown field", label);
	for (k = 0; k < NFDEFS; k++)
		verify_field(r, docs, ndocs, k, label);

	initStringInfo(&s);
	for (d = 0; d < ndocs; d++)
	{
		MDoc	   *md = docs[d];
		SeDocMeta	m;
		int			len;
		const char *id = se_segment_doc_id(r, d, &len);
		const char *routing = se_segment_doc_routing(r, d, &len);
		int			expect_lookup = -1;
		int			j;

		id = se_segment_doc_id(r, d, &len);
		if (len != md->id_len || memcmp(id, md->id, len) != 0)
			bad_meta++;
		routing = se_segment_doc_routing(r, d, &len);
		if ((routing == NULL) != (md->routing == NULL) ||
			(routing && (len != md->routing_len || memcmp(routing, md->routing, len) != 0)))
			bad_meta++;
		se_segment_doc_meta(r, d, &m);
		if (m.id_len != md->id_len || memcmp(m.id, md->id, m.id_len) != 0 ||
			m.seq_no != md->seq_no || m.primary_term != md->primary_term ||
			m.version != md->version || (m.routing == NULL) != (md->routing == NULL))
			bad_meta++;
		resetStringInfo(&s);
		appendStringInfoString(&s, "prefix");
		if (!se_segment_source(r, d, &s) || s.len != 6 + (int) md->src_len ||
			memcmp(s.data + 6, md->src, md->src_len) != 0)
			bad_src++;
		for (j = ndocs - 1; j >= 0; j--)
			if (docs[j]->id_len == md->id_len && memcmp(docs[j]->id, md->id, md->id_len) == 0)
			{
				expect_lookup = j;
				break;
			}
		if (se_segment_lookup_id(r, md->id, md->id_len) != expect_lookup)
			bad_lookup++;
	}
	/* random-order source reads hit other blocks than the cache */
	for (d = 0; d < 200 && ndocs > 0; d++)
	{
		int			doc = rnd_below(ndocs);

		resetStringInfo(&s);
		if (!se_segment_source(r, doc, &s) || s.len != (int) docs[doc]->src_len ||
			memcmp(s.data, docs[doc]->src, s.len) != 0)
			bad_src++;
	}
	UT_CHECK(bad_meta == 0, "%s: %d bad metadata", label, bad_meta);
	UT_CHECK(bad_src == 0, "%s: %d bad sources", label, bad_src);
	UT_CHECK(bad_lookup == 0, "%s: %d bad lookups", label, bad_lookup);
	UT_CHECK(se_segment_lookup_id(r, "nope", 4) == -1, "%s: lookup absent id", label);
	UT_CHECK(!se_segment_source(r, ndocs, &s) && !se_segment_source(r, -1, &s),
			 "%s: source out of range", label);
	UT_CHECK(se_segment_error(r) == NULL, "%s: no reader error: %s", label,
			 se_segment_error(r) ? se_segment_error(r)->reason : "");
	pfree(s.data);
}

/* ---------------------------------------------------------------------
 * Building test segments
 * ---------------------------------------------------------------------
 */
typedef struct TestSeg
{
	MDoc	   *all;			/* every buffered doc */
	int			nall;
	MDoc	  **live;			/* surviving docs in segment order */
	int			nlive;
	StringInfoData file;
	uint8		id[SE_SEGMENT_ID_LEN];
} TestSeg;

static void
make_segment(TestSeg *ts, int ndocs, int id_base, bool use_extra, int body_max,
			 uint8 idbyte)
{
	SeSegmentBuilder *b = se_builder_create();
	int			fmap[NFDEFS];
	bool	   *deleted = palloc0(ndocs);
	int			d,
				i;
	size_t		ram0 = se_builder_ram_bytes(b);
	char		lbl[64];

	snprintf(lbl, sizeof(lbl), "segment %d", idbyte);
	declare_fields(b, fmap, use_extra);
	UT_CHECK(fmap[F_ID] == 0, "_id is field 0");
	UT_CHECK(se_builder_field(b, "body", SE_IDX_DOCS, false, SE_DV_NONE) == fmap[F_BODY],
			 "redeclaring returns the same number");
	ts->all = palloc0(sizeof(MDoc) * ndocs);
	ts->nall = ndocs;
	for (d = 0; d < ndocs; d++)
	{
		/* some docs update an earlier id: the shard deletes the old one */
		int			idnum = (d > 10 && rnd_below(10) == 0) ? id_base + (int) rnd_below(d) : id_base + d;
		int			doc;
		int			prev;

		gen_doc(&ts->all[d], idnum, use_extra, body_max);
		prev = se_builder_lookup_id(b, ts->all[d].id, ts->all[d].id_len);
		doc = build_doc(b, fmap, &ts->all[d]);
		UT_CHECK(doc == d, "end_doc returns buffered doc id");
		if (prev >= 0)
		{
			se_builder_delete(b, prev);
			deleted[prev] = true;
		}
		if (rnd_below(20) == 0)
		{
			se_builder_delete(b, d);
			deleted[d] = true;
		}
	}
	UT_CHECK(se_builder_ram_bytes(b) > ram0, "ram grows");
	UT_CHECK(se_builder_num_docs(b) == (uint32) ndocs, "num_docs");

	/* buffered lookups and metadata */
	{
		int			bad = 0;

		for (d = 0; d < ndocs; d++)
		{
			int			expect = -1;
			SeDocMeta	m;

			for (i = ndocs - 1; i >= 0; i--)
				if (!deleted[i] && ts->all[i].id_len == ts->all[d].id_len &&
					memcmp(ts->all[i].id, ts->all[d].id, ts->all[d].id_len) == 0)
				{
					expect = i;
					break;
				}
			if (se_builder_lookup_id(b, ts->all[d].id, ts->all[d].id_len) != expect)
				bad++;
			if (se_builder_is_deleted(b, d) != deleted[d])
				bad++;
			se_builder_doc_meta(b, d, &m);
			if (m.id_len != ts->all[d].id_len || memcmp(m.id, ts->all[d].id, m.id_len) != 0 ||
				m.seq_no != ts->all[d].seq_no || m.version != ts->all[d].version ||
				(m.routing == NULL) != (ts->all[d].routing == NULL))
				bad++;
		}
		UT_CHECK(bad == 0, "%s: %d bad buffered lookups/metadata", lbl, bad);
	}

	ts->live = palloc(sizeof(MDoc *) * (ndocs + 1));
	ts->nlive = 0;
	for (d = 0; d < ndocs; d++)
		if (!deleted[d])
			ts->live[ts->nlive++] = &ts->all[d];
	UT_CHECK(se_builder_live_docs(b) == (uint32) ts->nlive, "live_docs");

	memset(ts->id, idbyte, SE_SEGMENT_ID_LEN);
	initStringInfo(&ts->file);
	se_builder_serialize(b, ts->id, 3, &ts->file);
	se_builder_free(b);
	pfree(deleted);
}

/* ---------------------------------------------------------------------
 * Individual tests
 * ---------------------------------------------------------------------
 */
static void
test_smallfloat(void)
{
	int			i;
	int32		prev = -1;
	bool		ok = true;

	for (i = 0; i < 256; i++)
	{
		int32		v = se_smallfloat_byte4_to_int((uint8) i);

		if (se_smallfloat_int_to_byte4(v) != i)
			ok = false;
		if (v <= prev)
			ok = false;
		prev = v;
	}
	UT_CHECK(ok, "smallfloat: 256 bytes round trip and increase");
	for (i = 0; i < 24; i++)
		UT_CHECK(se_smallfloat_int_to_byte4(i) == i && se_smallfloat_byte4_to_int(i) == i,
				 "smallfloat: %d maps to itself", i);
	/* values worked out from Lucene's definition */
	UT_CHECK(se_smallfloat_int_to_byte4(24) == 24, "intToByte4(24)");
	UT_CHECK(se_smallfloat_int_to_byte4(31) == 31, "intToByte4(31)");
	UT_CHECK(se_smallfloat_int_to_byte4(39) == 39, "intToByte4(39) exact");
	UT_CHECK(se_smallfloat_int_to_byte4(41) == 40, "intToByte4(41) rounds down");
	UT_CHECK(se_smallfloat_int_to_byte4(100) == 57, "intToByte4(100)");
	UT_CHECK(se_smallfloat_byte4_to_int(57) == 96, "byte4ToInt(57)");
	UT_CHECK(se_smallfloat_int_to_byte4(PG_INT32_MAX) == 255, "intToByte4(MAX)");
	UT_CHECK(se_smallfloat_byte4_to_int(255) == 2013265944, "byte4ToInt(255)");
	UT_CHECK(se_smallfloat_byte4_to_int(40) == 40, "byte4ToInt(40)");
	UT_CHECK(se_smallfloat_byte4_to_int(41) == 42, "byte4ToInt(41)");
	/* encoding rounds down to the largest representable value <= i */
	ok = true;
	for (i = 0; i < 2000000; i += (i < 5000 ? 1 : 997))
	{
		uint8		b = se_smallfloat_int_to_byte4(i);

		if (se_smallfloat_byte4_to_int(b) > i ||
			(b < 255 && se_smallfloat_byte4_to_int(b + 1) <= i))
			ok = false;
	}
	UT_CHECK(ok, "smallfloat: int_to_byte4 rounds down");
	UT_CHECK(se_smallfloat_int_to_byte4(-5) == 0, "negative lengths encode as 0");
}

static void
test_file_format(void)
{
	StringInfoData f;
	uint8		id[SE_SEGMENT_ID_LEN];
	uint8		other[SE_SEGMENT_ID_LEN];
	SeError		err;
	int			hdr;

	memset(id, 7, sizeof(id));
	memset(other, 8, sizeof(other));
	initStringInfo(&f);
	se_file_write_header(&f, "se_test", 3, id);
	appendStringInfoString(&f, "payload");
	se_file_write_footer(&f);
	se_error_init(&err);
	hdr = se_file_check((uint8 *) f.data, f.len, "se_test", 1, 3, id, true, &err);
	UT_CHECK(hdr == 4 + 1 + 7 + 4 + 16, "header length %d", hdr);
	UT_CHECK(!se_error_is_set(&err), "no error");
	hdr = se_file_check((uint8 *) f.data, f.len, "se_test", 4, 5, NULL, true, &err);
	UT_CHECK(hdr == -1 && strstr(err.reason, "version") != NULL &&
			 strcmp(err.type, "index_corrupted_exception") == 0 && err.status == 500,
			 "version refused: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(se_file_check((uint8 *) f.data, f.len, "se_other", 1, 3, NULL, true, &err) == -1,
			 "format name checked");
	se_error_init(&err);
	UT_CHECK(se_file_check((uint8 *) f.data, f.len, "se_test", 1, 3, other, true, &err) == -1 &&
			 strstr(err.reason, "id mismatch"), "id checked");
	se_error_init(&err);
	f.data[20] ^= 1;
	UT_CHECK(se_file_check((uint8 *) f.data, f.len, "se_test", 1, 3, NULL, false, &err) > 0,
			 "no crc check without verify");
	UT_CHECK(se_file_check((uint8 *) f.data, f.len, "se_test", 1, 3, NULL, true, &err) == -1 &&
			 strstr(err.reason, "checksum"), "crc checked");
	pfree(f.data);
}

static void
test_builder_edge_cases(void)
{
	SeSegmentBuilder *b = se_builder_create();
	int			body = se_builder_field(b, "body", SE_IDX_POSITIONS, true, SE_DV_NONE);
	int			kw = se_builder_field(b, "kw", SE_IDX_FREQS, false, SE_DV_NUMERIC);
	SeDocMeta	m;
	StringInfoData f;
	uint8		id[SE_SEGMENT_ID_LEN] = {1};
	SeError		err;
	SeSegmentReader *r;
	SeTermInfo	ti;
	SePostings *p;
	int			fb;

	memset(&m, 0, sizeof(m));
	/* positions going backwards or negative are clamped */
	se_builder_begin_doc(b);
	se_builder_add_term(b, body, "x", 1, 10);
	se_builder_add_term(b, body, "x", 1, 5);
	se_builder_add_term(b, body, "y", 1, -3);
	/* invalid calls are ignored */
	se_builder_add_term(b, 99, "x", 1, 0);
	se_builder_add_term(b, -1, "x", 1, 0);
	se_builder_add_term(b, body, NULL, 5, 0);
	se_builder_add_term(b, body, "x", -1, 0);
	se_builder_add_numeric(b, body, 5);
	se_builder_add_sorted(b, kw, "v", 1);
	se_builder_add_numeric(b, kw, 42);
	m.id = "a";
	m.id_len = 1;
	UT_CHECK(se_builder_end_doc(b, &m, NULL, 0) == 0, "first doc");
	/* a doc without metadata or content */
	UT_CHECK(se_builder_end_doc(b, NULL, NULL, 0) == 1, "empty doc");
	/* an unfinished doc is not serialized */
	se_builder_begin_doc(b);
	se_builder_add_term(b, body, "pending", 7, 0);
	se_builder_delete(b, 5);	/* out of range: ignored */
	se_builder_delete(b, -1);
	UT_CHECK(se_builder_live_docs(b) == 2, "live docs");
	UT_CHECK(se_builder_lookup_id(b, "zz", 2) == -1, "absent id");
	UT_CHECK(se_builder_lookup_id(b, "a", 1) == 0, "id a");

	initStringInfo(&f);
	appendStringInfoString(&f, "junk before the file");	/* appended files work */
	se_builder_serialize(b, id, 1, &f);
	se_builder_free(b);
	se_error_init(&err);
	r = se_segment_open((uint8 *) f.data + 20, f.len - 20, true, &err);
	UT_CHECK(r != NULL, "open appended file: %s", err.reason ? err.reason : "");
	if (r == NULL)
		return;
	UT_CHECK(se_segment_max_doc(r) == 2, "two docs");
	fb = se_segment_field(r, "body");
	UT_CHECK(se_segment_seek_exact(r, fb, "x", 1, &ti) && ti.total_term_freq == 2, "x");
	p = se_postings_open(r, &ti, true);
	UT_CHECK(se_postings_next(p) == 0 && se_postings_next_position(p) == 10 &&
			 se_postings_next_position(p) == 10 && se_postings_next_position(p) == -1,
			 "clamped positions");
	se_postings_close(p);
	UT_CHECK(se_segment_seek_exact(r, fb, "y", 1, &ti), "y");
	p = se_postings_open(r, &ti, true);
	UT_CHECK(se_postings_next(p) == 0 && se_postings_next_position(p) == 0, "negative -> 0");
	se_postings_close(p);
	UT_CHECK(!se_segment_seek_exact(r, fb, "pending", 7, &ti), "unfinished doc dropped");
	UT_CHECK(se_segment_norm(r, fb, 0) == 3 && se_segment_norm(r, fb, 1) == 0, "norms");
	{
		const int64 *v;

		UT_CHECK(se_segment_numeric_values(r, se_segment_field(r, "kw"), 0, &v) == 1 &&
				 v[0] == 42, "numeric");
	}
	{
		int			len;
		const char *id0 = se_segment_doc_id(r, 1, &len);

		UT_CHECK(id0 != NULL && len == 0, "empty id");
		UT_CHECK(se_segment_doc_id(r, 7, &len) != NULL && len == 0, "id out of range");
		UT_CHECK(se_segment_doc_routing(r, 0, &len) == NULL, "no routing");
	}
	/* out-of-range arguments are safe and are not corruption */
	{
		const int64 *v;
		SeFieldStats st;

		UT_CHECK(se_segment_norm(r, 99, 0) == 0 && se_segment_norm(r, fb, 99) == 0, "norm oob");
		UT_CHECK(se_segment_numeric_values(r, -1, 0, &v) == 0 && v == NULL, "dv oob");
		UT_CHECK(se_segment_sorted_count(r, fb, 0) == 0, "sorted wrong type");
		UT_CHECK(se_segment_field_name(r, 77) == NULL, "name oob");
		se_segment_field_stats(r, 77, &st);
		UT_CHECK(st.doc_count == 0, "stats oob");
		UT_CHECK(!se_segment_seek_exact(r, 77, "x", 1, &ti), "seek oob");
		ti.field = 77;
		p = se_postings_open(r, &ti, true);
		UT_CHECK(se_postings_next(p) == SE_NO_MORE_DOCS, "bogus term info");
		se_postings_close(p);
		UT_CHECK(se_segment_error(r) == NULL, "no error from bad arguments");
	}
	se_segment_close(r);
	pfree(f.data);

	/* an empty builder gives a valid empty segment */
	b = se_builder_create();
	initStringInfo(&f);
	se_builder_serialize(b, id, 3, &f);
	se_builder_free(b);
	r = se_segment_open((uint8 *) f.data, f.len, true, &err);
	UT_CHECK(r != NULL && se_segment_max_doc(r) == 0 && se_segment_num_fields(r) == 1,
			 "empty segment");
	if (r)
	{
		StringInfoData s;

		initStringInfo(&s);
		UT_CHECK(!se_segment_source(r, 0, &s), "no source in empty segment");
		UT_CHECK(se_segment_lookup_id(r, "a", 1) == -1, "no id in empty segment");
		se_segment_close(r);
		pfree(s.data);
	}
	pfree(f.data);
}

/* Same field name with different options: the first segment's win. */
static void
test_merge_mismatched_fields(void)
{
	SeSegmentBuilder *b;
	StringInfoData f[2],
				out;
	SeSegmentReader *r[2],
			   *m;
	SeError		err;
	uint8		id[SE_SEGMENT_ID_LEN] = {3};
	SeDocMeta	meta;
	int			s,
				x;
	SeTermInfo	ti;
	SePostings *p;
	const int64 *v;
	char		bigterm[100000];

	memset(&meta, 0, sizeof(meta));
	memset(bigterm, 'q', sizeof(bigterm));
	for (s = 0; s < 2; s++)
	{
		b = se_builder_create();
		if (s == 0)
			x = se_builder_field(b, "x", SE_IDX_POSITIONS, true, SE_DV_NUMERIC);
		else
			x = se_builder_field(b, "x", SE_IDX_DOCS, false, SE_DV_SORTED_SET);
		se_builder_begin_doc(b);
		se_builder_add_term(b, x, "t", 1, 4);
		se_builder_add_term(b, x, "t", 1, 6);
		se_builder_add_term(b, x, bigterm, sizeof(bigterm), 7);
		se_builder_add_numeric(b, x, 11);
		se_builder_add_sorted(b, x, "s", 1);
		meta.id = s == 0 ? "a" : "b";
		meta.id_len = 1;
		se_builder_end_doc(b, &meta, "{}", 2);
		initStringInfo(&f[s]);
		se_builder_serialize(b, id, 3, &f[s]);
		se_builder_free(b);
		se_error_init(&err);
		r[s] = se_segment_open((uint8 *) f[s].data, f[s].len, true, &err);
		UT_CHECK(r[s] != NULL, "open mismatched %d", s);
		if (r[s] == NULL)
			return;
	}
	UT_CHECK(se_segment_seek_exact(r[1], se_segment_field(r[1], "x"), bigterm,
								   sizeof(bigterm), &ti), "100 KB term");
	initStringInfo(&out);
	UT_CHECK(se_segment_merge(r, NULL, 2, id, 3, &out, &err), "merge mismatched");
	m = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(m != NULL, "open merged mismatched");
	if (m)
	{
		x = se_segment_field(m, "x");
		UT_CHECK(se_segment_field_index_options(m, x) == SE_IDX_POSITIONS &&
				 se_segment_field_dv_type(m, x) == SE_DV_NUMERIC &&
				 se_segment_field_has_norms(m, x), "first options win");
		UT_CHECK(se_segment_seek_exact(m, x, "t", 1, &ti) && ti.doc_freq == 2 &&
				 ti.total_term_freq == 3, "merged df/ttf");
		p = se_postings_open(m, &ti, true);
		UT_CHECK(se_postings_next(p) == 0 && se_postings_freq(p) == 2 &&
				 se_postings_next_position(p) == 4 && se_postings_next_position(p) == 6,
				 "doc 0 postings");
		UT_CHECK(se_postings_next(p) == 1 && se_postings_freq(p) == 1 &&
				 se_postings_next_position(p) == 0, "doc 1 from a docs-only field");
		se_postings_close(p);
		UT_CHECK(se_segment_seek_exact(m, x, bigterm, sizeof(bigterm), &ti) &&
				 ti.doc_freq == 2, "merged 100 KB term");
		UT_CHECK(se_segment_norm(m, x, 0) == 3 && se_segment_norm(m, x, 1) == 0, "norms");
		UT_CHECK(se_segment_numeric_values(m, x, 0, &v) == 1 && v[0] == 11 &&
				 se_segment_numeric_values(m, x, 1, &v) == 0, "numeric only from the first");
		UT_CHECK(se_segment_lookup_id(m, "b", 1) == 1, "ids");
		se_segment_close(m);
	}
	for (s = 0; s < 2; s++)
	{
		se_segment_close(r[s]);
		pfree(f[s].data);
	}
	pfree(out.data);
}

/* A doc begun but never ended (failed parse) leaves no trace. */
/*
 * se_builder_add_terms builds the same segment, byte for byte, as one
 * se_builder_add_term per token: values longer than a prefetch group,
 * repeated terms within a group, terms longer than 8 bytes, empty terms,
 * positions that go backwards, invalid tokens skipped, and a term table
 * that grows (rehashes) in the middle of a group.
 */
static void
test_builder_add_terms(void)
{
	SeSegmentBuilder *b1 = se_builder_create();
	SeSegmentBuilder *b2 = se_builder_create();
	int			f1 = se_builder_field(b1, "body", SE_IDX_POSITIONS, true, SE_DV_NONE);
	int			f2 = se_builder_field(b2, "body", SE_IDX_POSITIONS, true, SE_DV_NONE);
	int			g1 = se_builder_field(b1, "tags", SE_IDX_FREQS, false, SE_DV_NONE);
	int			g2 = se_builder_field(b2, "tags", SE_IDX_FREQS, false, SE_DV_NONE);
	uint8		id[SE_SEGMENT_ID_LEN] = {7};
	StringInfoData s1,
				s2;
	char	   *words = palloc(64 * 5000);
	SeBuilderTerm *terms = palloc(sizeof(SeBuilderTerm) * 200);
	int			d,
				t,
				n;

	for (d = 0; d < 300; d++)
	{
		SeDocMeta	m;
		char		idbuf[16];

		n = 1 + (d * 37) % 200;
		for (t = 0; t < n; t++)
		{
			char	   *w = words + 64 * ((d * 200 + t) % 5000);
			int			k = (d * 131 + t * t * 7) % 4000;

			/* short, long (> 8 bytes) and repeated terms; one empty */
			if (t % 3 == 0)
				snprintf(w, 64, "w%d", k % 50);
			else if (t % 3 == 1)
				snprintf(w, 64, "a-longer-term-%d", k);
			else
				snprintf(w, 64, "%d", k);
			terms[t].term = w;
			terms[t].len = (t == 5) ? 0 : (int) strlen(w);
			terms[t].position = (t == 9) ? t - 5 : t;	/* once backwards */
		}
		if (n > 20)
		{
			terms[17].len = -1;	/* invalid: skipped by both */
			terms[18].term = NULL;
		}
		se_builder_begin_doc(b1);
		se_builder_begin_doc(b2);
		for (t = 0; t < n; t++)
			se_builder_add_term(b1, f1, terms[t].term, terms[t].len, terms[t].position);
		se_builder_add_terms(b2, f2, terms, n);
		for (t = 0; t < n; t += 7)
			se_builder_add_term(b1, g1, terms[t].term, terms[t].len, 0);
		for (t = 0; t < n; t += 7)
			se_builder_add_terms(b2, g2, &terms[t], 1);
		snprintf(idbuf, sizeof(idbuf), "doc%d", d);
		memset(&m, 0, sizeof(m));
		m.id = idbuf;
		m.id_len = (int) strlen(idbuf);
		m.version = 1;
		se_builder_end_doc(b1, &m, "{}", 2);
		se_builder_end_doc(b2, &m, "{}", 2);
	}
	/* invalid calls do nothing */
	se_builder_add_terms(b2, 99, terms, 3);
	se_builder_add_terms(b2, f2, NULL, 3);
	se_builder_add_terms(b2, f2, terms, 0);
	initStringInfo(&s1);
	initStringInfo(&s2);
	se_builder_serialize(b1, id, 1, &s1);
	se_builder_serialize(b2, id, 1, &s2);
	UT_CHECK(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0,
			 "add_terms and add_term build the same segment (%d vs %d bytes)", s1.len, s2.len);
	se_builder_free(b1);
	se_builder_free(b2);
	pfree(s1.data);
	pfree(s2.data);
	pfree(words);
	pfree(terms);
}

/*
 * Term order where the builder's radix sort on 8-byte prefixes needs its
 * tie-break: terms that share their first 8 bytes, terms apart only by
 * trailing zero bytes ("a" and "a\0" have one prefix), 0xFF bytes, the
 * empty term; as keywords they are also sorted-set values.  The term and
 * value dictionaries must come out in byte order (shorter first on a tie).
 */
static int
cmp_bytes_len(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

/*
 * se_builder_add_keywords gives the segment that se_builder_add_term and
 * se_builder_add_sorted value by value give: indexed and doc-values
 * keywords, either alone, repeated values, long and short ones, the empty
 * value, invalid entries, more values than one prefetch group.
 */
static void
test_builder_add_keywords(void)
{
	SeSegmentBuilder *b1 = se_builder_create();
	SeSegmentBuilder *b2 = se_builder_create();
	int			fa[2],
				fb[2],
				fc[2],
				k;
	uint8		id[SE_SEGMENT_ID_LEN] = {3};
	StringInfoData s1,
				s2;
	char		words[80][40];
	SeBuilderTerm vals[80];
	int			d,
				t,
				n;

	for (k = 0; k < 2; k++)
	{
		SeSegmentBuilder *b = k == 0 ? b1 : b2;

		fa[k] = se_builder_field(b, "both", SE_IDX_DOCS, false, SE_DV_SORTED_SET);
		fb[k] = se_builder_field(b, "index_only", SE_IDX_DOCS, false, SE_DV_NONE);
		fc[k] = se_builder_field(b, "dv_only", SE_IDX_NONE, false, SE_DV_SORTED_SET);
	}
	for (d = 0; d < 200; d++)
	{
		SeDocMeta	m;
		char		idbuf[16];

		n = (d * 29) % 70;
		for (t = 0; t < n; t++)
		{
			int			w = (d * 7 + t * t) % 90;

			if (w % 5 == 0)
				snprintf(words[t], 40, "v%d", w);
			else
				snprintf(words[t], 40, "libsomething-quite-long-%d", w);
			vals[t].term = words[t];
			vals[t].len = (w == 45) ? 0 : (int) strlen(words[t]);
			vals[t].position = 0;
		}
		if (n > 10)
			vals[3].len = -1;	/* invalid: skipped */
		se_builder_begin_doc(b1);
		se_builder_begin_doc(b2);
		for (k = 0; k < 3; k++)
		{
			int			f1 = k == 0 ? fa[0] : k == 1 ? fb[0] : fc[0];
			int			f2 = k == 0 ? fa[1] : k == 1 ? fb[1] : fc[1];

			for (t = 0; t < n; t++)
			{
				se_builder_add_term(b1, f1, vals[t].term, vals[t].len, 0);
				se_builder_add_sorted(b1, f1, vals[t].term, vals[t].len);
			}
			se_builder_add_keywords(b2, f2, vals, n, true, true);
		}
		snprintf(idbuf, sizeof(idbuf), "k%d", d);
		memset(&m, 0, sizeof(m));
		m.id = idbuf;
		m.id_len = (int) strlen(idbuf);
		se_builder_end_doc(b1, &m, "{}", 2);
		se_builder_end_doc(b2, &m, "{}", 2);
	}
	initStringInfo(&s1);
	initStringInfo(&s2);
	se_builder_serialize(b1, id, 1, &s1);
	se_builder_serialize(b2, id, 1, &s2);
	UT_CHECK(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0,
			 "add_keywords and add_term + add_sorted build the same segment (%d vs %d bytes)",
			 s1.len, s2.len);
	se_builder_free(b1);
	se_builder_free(b2);
	pfree(s1.data);
	pfree(s2.data);
}

static void
test_builder_term_order(void)
{
	static const char *const stems[] = {"", "a", "abcdefgh", "abcdefgi", "\xff\xff\xff\xff\xff\xff\xff\xff", "zz"};
	SeSegmentBuilder *b = se_builder_create();
	int			kw = se_builder_field(b, "kw", SE_IDX_DOCS, false, SE_DV_SORTED_SET);
	uint8		id[SE_SEGMENT_ID_LEN] = {9};
	char		terms[600][24];
	int			lens[600];
	int			nterms = 0;
	int			s,
				k,
				d;
	StringInfoData out;
	SeSegmentReader *r;
	SeError		err;
	SeTermsEnum *e;
	const char *term;
	char		prev[24];
	int			len,
				prev_len = 0,
				seen = 0,
				f;
	SeTermInfo	ti;

	/* each stem, then 0-3 NUL bytes, then optionally one of a few tails */
	for (s = 0; s < (int) lengthof(stems); s++)
		for (k = 0; k < 4 * 9; k++)
		{
			int			sl = (int) strlen(stems[s]);
			int			nul = k % 4;
			int			tail = k / 4;	/* 0: none, else a byte */
			int			l = 0;

			memcpy(terms[nterms], stems[s], sl);
			l = sl;
			memset(terms[nterms] + l, 0, nul);
			l += nul;
			if (tail > 0)
				terms[nterms][l++] = (char) (tail == 8 ? 0xFF : '0' + tail);
			lens[nterms++] = l;
		}
	/* plenty of ordinary terms, so the radix sort runs */
	for (k = 0; k < 300; k++)
	{
		lens[nterms] = snprintf(terms[nterms], 24, "%c%cterm%d", 'a' + k % 26, 'a' + k % 7, k);
		nterms++;
	}
	/* every term once, in a scrambled order; one doc holds up to 7 */
	for (d = 0; d * 7 < nterms; d++)
	{
		SeDocMeta	m;
		char		idbuf[16];

		se_builder_begin_doc(b);
		for (k = d * 7; k < nterms && k < d * 7 + 7; k++)
		{
			int			t = (k * 211) % nterms;

			se_builder_add_term(b, kw, terms[t], lens[t], 0);
			se_builder_add_sorted(b, kw, terms[t], lens[t]);
		}
		snprintf(idbuf, sizeof(idbuf), "d%d", d);
		memset(&m, 0, sizeof(m));
		m.id = idbuf;
		m.id_len = (int) strlen(idbuf);
		se_builder_end_doc(b, &m, "{}", 2);
	}
	/* (211 and nterms share no factor, so every term was added) */
	initStringInfo(&out);
	se_builder_serialize(b, id, 1, &out);
	se_error_init(&err);
	r = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(r != NULL, "term order: segment opens");
	if (r == NULL)
		return;
	f = se_segment_field(r, "kw");
	e = se_segment_terms(r, f, NULL, 0);
	while (se_terms_next(e, &term, &len, &ti))
	{
		if (seen > 0)
			UT_CHECK(cmp_bytes_len(prev, prev_len, term, len) < 0,
					 "term order: term %d follows its predecessor", seen);
		memcpy(prev, term, Min(len, (int) sizeof(prev)));
		prev_len = len;
		seen++;
	}
	se_terms_close(e);
	UT_CHECK(seen == nterms, "term order: %d terms, expected %d", seen, nterms);
	UT_CHECK(se_segment_sorted_dict_size(r, f) == nterms, "term order: %d values",
			 (int) se_segment_sorted_dict_size(r, f));
	for (k = 0; k < nterms; k++)
	{
		term = se_segment_sorted_dict_value(r, f, k, &len);
		UT_CHECK(term != NULL, "term order: value %d", k);
		if (term == NULL)
			break;
		if (k > 0)
			UT_CHECK(cmp_bytes_len(prev, prev_len, term, len) < 0,
					 "term order: value %d follows its predecessor", k);
		memcpy(prev, term, Min(len, (int) sizeof(prev)));
		prev_len = len;
	}
	se_segment_close(r);
	se_builder_free(b);
	pfree(out.data);
}

/*
 * se_segwriter_term_pos_vints: a doc's positions handed over encoded give
 * the bytes that one se_segwriter_term_pos call per position gives, also
 * when the doc already got some positions one by one (then the encoded
 * ones are decoded), for small and multi-byte deltas.
 */
static void
write_pos_segment(int mode, StringInfo out)
{
	static const int32 pos[] = {0, 0, 1, 127, 128, 20000, 1 << 21, PG_INT32_MAX - 5};
	SeSegWriter *w = se_segwriter_create(3, 1);
	int			f = se_segwriter_add_field(w, "body", 4, SE_IDX_POSITIONS, false, SE_DV_NONE);
	uint8		id[SE_SEGMENT_ID_LEN] = {5};
	int			d,
				i;

	se_segwriter_terms_begin(w, f);
	se_segwriter_term_begin(w, "t", 1);
	for (d = 0; d < 3; d++)
	{
		uint32		n = d == 0 ? 1 : lengthof(pos);
		StringInfoData v;
		int32		last = 0;

		se_segwriter_term_doc(w, d, n);
		initStringInfo(&v);
		for (i = 0; i < (int) n; i++)
		{
			if (mode == 0 || (mode == 2 && d == 2 && i < 3))
				se_segwriter_term_pos(w, pos[i]);
			else
				se_put_vint(&v, (uint64) (pos[i] - last));
			last = pos[i];
		}
		if (mode == 1 || (mode == 2 && d < 2))
			se_segwriter_term_pos_vints(w, (const uint8 *) v.data, v.len, n);
		else if (mode == 2)
		{
			/* the rest of doc 2, its deltas from 0 as the section holds them */
			StringInfoData rest;

			initStringInfo(&rest);
			se_put_vint(&rest, (uint64) pos[3]);
			for (i = 4; i < (int) n; i++)
				se_put_vint(&rest, (uint64) (pos[i] - pos[i - 1]));
			se_segwriter_term_pos_vints(w, (const uint8 *) rest.data, rest.len, n - 3);
			pfree(rest.data);
		}
		pfree(v.data);
	}
	se_segwriter_term_end(w);
	se_segwriter_terms_end(w);
	for (d = 0; d < 3; d++)
	{
		SeDocMeta	m;

		memset(&m, 0, sizeof(m));
		m.id = "x";
		m.id_len = 1;
		se_segwriter_doc(w, &m, "{}", 2);
	}
	initStringInfo(out);
	se_segwriter_finish(w, id, out);
}

static void
test_term_pos_vints(void)
{
	StringInfoData a,
				b,
				c;

	write_pos_segment(0, &a);
	write_pos_segment(1, &b);
	write_pos_segment(2, &c);
	UT_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
			 "term_pos_vints writes what term_pos writes");
	UT_CHECK(a.len == c.len && memcmp(a.data, c.data, a.len) == 0,
			 "term_pos_vints after term_pos calls decodes");
	pfree(a.data);
	pfree(b.data);
	pfree(c.data);
}

static void
test_builder_abort(void)
{
	SeSegmentBuilder *b = se_builder_create();
	int			body = se_builder_field(b, "body", SE_IDX_POSITIONS, true, SE_DV_NUMERIC);
	SeDocMeta	m;
	StringInfoData f;
	uint8		id[SE_SEGMENT_ID_LEN] = {4};
	SeError		err;
	SeSegmentReader *r;
	SeTermInfo	ti;
	SePostings *p;
	int			doc;

	memset(&m, 0, sizeof(m));
	se_builder_begin_doc(b);
	se_builder_add_term(b, body, "orphan", 6, 0);
	se_builder_add_term(b, body, "shared", 6, 1);
	se_builder_add_numeric(b, body, 99);
	/* the next doc begins without the previous one ending */
	se_builder_begin_doc(b);
	se_builder_add_term(b, body, "shared", 6, 0);
	m.id = "keep";
	m.id_len = 4;
	doc = se_builder_end_doc(b, &m, "{\"a\":1}", 7);
	UT_CHECK(doc == 1 && se_builder_is_deleted(b, 0) && se_builder_live_docs(b) == 1,
			 "aborted doc becomes a deleted placeholder (doc %d)", doc);
	/* an aborted doc that received nothing consumes no id */
	se_builder_begin_doc(b);
	se_builder_abort_doc(b);
	se_builder_begin_doc(b);
	se_builder_add_term(b, body, "orphan2", 7, 0);
	se_builder_abort_doc(b);
	se_builder_abort_doc(b);
	UT_CHECK(se_builder_num_docs(b) == 3 && se_builder_live_docs(b) == 1, "abort counts");
	UT_CHECK(se_builder_lookup_id(b, "", 0) == -1, "placeholder has no findable id");

	initStringInfo(&f);
	se_builder_serialize(b, id, 3, &f);
	se_builder_free(b);
	se_error_init(&err);
	r = se_segment_open((uint8 *) f.data, f.len, true, &err);
	UT_CHECK(r != NULL, "open");
	if (r)
	{
		const int64 *v;
		SeFieldStats st;

		body = se_segment_field(r, "body");
		UT_CHECK(se_segment_max_doc(r) == 1, "one doc");
		UT_CHECK(!se_segment_seek_exact(r, body, "orphan", 6, &ti) &&
				 !se_segment_seek_exact(r, body, "orphan2", 7, &ti), "orphans gone");
		UT_CHECK(se_segment_seek_exact(r, body, "shared", 6, &ti) && ti.doc_freq == 1 &&
				 ti.total_term_freq == 1, "shared term only from the kept doc");
		p = se_postings_open(r, &ti, true);
		UT_CHECK(se_postings_next(p) == 0 && se_postings_next_position(p) == 0, "kept doc");
		se_postings_close(p);
		UT_CHECK(se_segment_numeric_values(r, body, 0, &v) == 0, "no orphan doc values");
		UT_CHECK(se_segment_norm(r, body, 0) == 1, "norm of the kept doc");
		se_segment_field_stats(r, body, &st);
		UT_CHECK(st.doc_count == 1 && st.sum_total_term_freq == 1 && st.sum_doc_freq == 1,
				 "stats ignore the aborted doc");
		UT_CHECK(se_segment_lookup_id(r, "keep", 4) == 0 && se_segment_lookup_id(r, "", 0) == -1,
				 "ids");
		se_segment_close(r);
	}
	pfree(f.data);
}

static void
test_livedocs(void)
{
	uint32		sizes[] = {0, 1, 63, 64, 65, 1000, 4096};
	int			i;
	uint8		id[SE_SEGMENT_ID_LEN];

	memset(id, 0x5A, sizeof(id));
	for (i = 0; i < lengthof(sizes); i++)
	{
		uint32		n = sizes[i];
		uint64	   *bits = se_livedocs_new(n);
		StringInfoData f;
		SeError		err;
		uint64	   *back;
		uint32		d,
					cleared = 0;
		bool		same = true;

		UT_CHECK(se_livedocs_count(bits, n) == n, "livedocs %u all live", n);
		for (d = 0; d < n; d += 3)
		{
			se_livedocs_clear(bits, d);
			cleared++;
		}
		UT_CHECK(se_livedocs_count(bits, n) == n - cleared, "livedocs count");
		initStringInfo(&f);
		se_livedocs_serialize(bits, n, id, 7, &f);
		se_error_init(&err);
		back = se_livedocs_parse((uint8 *) f.data, f.len, n, id, &err);
		UT_CHECK(back != NULL, "livedocs parse %u", n);
		for (d = 0; back && d < n; d++)
			same = same && se_livedocs_get(back, d) == se_livedocs_get(bits, d);
		UT_CHECK(same, "livedocs round trip %u", n);
		/* wrong size, wrong id, corrupted byte, truncation */
		UT_CHECK(se_livedocs_parse((uint8 *) f.data, f.len, n + 1, id, &err) == NULL &&
				 strcmp(err.type, "index_corrupted_exception") == 0, "wrong max_doc");
		se_error_init(&err);
		{
			uint8		other[SE_SEGMENT_ID_LEN] = {0};

			UT_CHECK(se_livedocs_parse((uint8 *) f.data, f.len, n, other, &err) == NULL,
					 "wrong segment id");
		}
		for (d = 0; d < (uint32) f.len; d++)
		{
			se_error_init(&err);
			f.data[d] ^= 0x10;
			if (se_livedocs_parse((uint8 *) f.data, f.len, n, id, &err) != NULL)
				break;
			f.data[d] ^= 0x10;
		}
		UT_CHECK(d == (uint32) f.len, "every livedocs byte flip detected");
		for (d = 0; d < (uint32) f.len; d++)
		{
			se_error_init(&err);
			if (se_livedocs_parse((uint8 *) f.data, d, n, id, &err) != NULL)
				break;
		}
		UT_CHECK(d == (uint32) f.len, "livedocs truncation detected");
		pfree(f.data);
		pfree(bits);
		if (back)
			pfree(back);
	}
	UT_CHECK(se_livedocs_get(NULL, 12345), "NULL bits = all live");
	UT_CHECK(se_livedocs_count(NULL, 10) == 10, "NULL bits count");
}

/* Read everything a reader offers; must never crash on corrupted data. */
static void
exercise_reader(SeSegmentReader *r)
{
	int			nf = se_segment_num_fields(r);
	int			f;
	uint32		max_doc = se_segment_max_doc(r);
	int32		d;
	StringInfoData s;
	const SeError *err;

	initStringInfo(&s);
	for (f = 0; f < nf; f++)
	{
		SeTermsEnum *e;
		const char *term;
		int			len;
		SeTermInfo	ti;
		int			count = 0;
		SeFieldStats st;

		(void) se_segment_field_name(r, f);
		(void) se_segment_field_index_options(r, f);
		(void) se_segment_field_dv_type(r, f);
		(void) se_segment_field_has_norms(r, f);
		se_segment_field_stats(r, f, &st);
		e = se_segment_terms(r, f, NULL, 0);
		while (count < 3000 && se_terms_next(e, &term, &len, &ti))
		{
			SePostings *p = se_postings_open(r, &ti, count % 2 == 0);
			int			n = 0;
			SeTermInfo	ti2;
			SeTermsEnum *e2;
			int32		doc;

			while (n < 100000 && se_postings_doc(p) != SE_NO_MORE_DOCS &&
				   (doc = (count % 3 == 0) ?
					se_postings_advance(p, se_postings_doc(p) + 2 + (n % 5 == 0 ? 300 : 0)) :
					se_postings_next(p)) != SE_NO_MORE_DOCS)
			{
				int			k = 0;
				int32		mf;
				uint8		mn;

				if (n % 3 == 1)
				{
					SeImpact	imp[SE_MAX_IMPACTS];

					(void) se_postings_advance_shallow(p, doc + (n % 7) * 100);
					se_postings_block_impact(p, &mf, &mn);
					k = se_postings_block_impacts(p, imp);
					if (k < 1 || k > SE_MAX_IMPACTS)
						UT_CHECK(false, "impacts count %d", k);
					(void) se_postings_group_impacts(p, doc + (n % 11) * 700, imp, &k);
					if (k < 1 || k > SE_MAX_IMPACTS)
						UT_CHECK(false, "group impacts count %d", k);
					k = 0;
				}

				(void) se_postings_freq(p);
				while (k < 1000 && se_postings_next_position(p) >= 0)
					k++;
				n++;
			}
			se_postings_close(p);
			(void) se_segment_seek_exact(r, f, term, len, &ti2);
			e2 = se_segment_terms(r, f, term, len);
			(void) se_terms_next(e2, &term, &len, &ti2);
			se_terms_close(e2);
			count++;
		}
		se_terms_close(e);
	}
	for (d = 0; d < (int32) max_doc + 1; d++)
	{
		SeDocMeta	m;
		int			len,
					i;
		const char *id;

		for (f = 0; f < nf; f++)
		{
			const int64 *vals;
			int			n;
			int64		sum = 0;

			(void) se_segment_norm(r, f, d);
			n = se_segment_numeric_values(r, f, d, &vals);
			for (i = 0; i < n; i++)
				sum += vals[i];
			n = se_segment_sorted_count(r, f, d);
			for (i = 0; i < n && i < 100; i++)
			{
				const char *v = se_segment_sorted_value(r, f, d, i, &len);

				if (v && len > 0)
					sum += v[len - 1];
			}
			(void) sum;
		}
		id = se_segment_doc_id(r, d, &len);
		(void) se_segment_doc_routing(r, d, &len);
		se_segment_doc_meta(r, d, &m);
		resetStringInfo(&s);
		(void) se_segment_source(r, d, &s);
		(void) se_segment_lookup_id(r, id, len);
	}
	err = se_segment_error(r);
	UT_CHECK(err == NULL || (strcmp(err->type, "index_corrupted_exception") == 0 &&
							 err->status == 500 && strstr(err->reason, "segment [") != NULL),
			 "corruption error shape: %s", err ? err->reason : "");
	pfree(s.data);
}

static void
test_corruption(void)
{
	TestSeg		ts;
	SeError		err;
	SeSegmentReader *r;
	int			i,
				len;
	int			undetected = 0,
				opened = 0,
				flagged = 0;
	uint8	   *copy;
	double		t0 = now_sec();

	make_segment(&ts, 120, 0, true, 15, 0xC0);
	len = ts.file.len;
	copy = palloc(len);
	se_error_init(&err);
	r = se_segment_open((uint8 *) ts.file.data, len, true, &err);
	UT_CHECK(r != NULL, "corruption base opens");
	if (r)
	{
		verify_segment(r, ts.live, ts.nlive, "corruption base");
		se_segment_close(r);
	}

	/* every single-byte flip is caught by the checksum */
	for (i = 0; i < len; i++)
	{
		memcpy(copy, ts.file.data, len);
		copy[i] ^= (uint8) (1 << (i % 8));
		se_error_init(&err);
		r = se_segment_open(copy, len, true, &err);
		if (r != NULL || err.type == NULL || strcmp(err.type, "index_corrupted_exception") != 0)
		{
			undetected++;
			if (r)
				se_segment_close(r);
		}
		else
			pfree(err.reason);
	}
	UT_CHECK(undetected == 0, "%d of %d byte flips undetected", undetected, len);

	/* truncations, with and without checksum verification */
	undetected = 0;
	for (i = 0; i < len; i += (i < 200 || i > len - 200) ? 1 : 7)
	{
		se_error_init(&err);
		r = se_segment_open((uint8 *) ts.file.data, i, i % 2 == 0, &err);
		if (r != NULL || err.type == NULL)
		{
			undetected++;
			if (r)
				se_segment_close(r);
		}
	}
	UT_CHECK(undetected == 0, "%d truncations undetected", undetected);
	se_error_init(&err);
	UT_CHECK(se_segment_open(NULL, 0, true, &err) == NULL, "NULL data");

	/*
	 * Without the checksum, damaged content must still never crash: flip
	 * bytes all over the file and read everything.
	 */
	for (i = 0; i < SE_FUZZ_ITERS; i++)
	{
		int			nflips = (i % 4 == 0) ? 1 + rnd_below(8) : 1;
		int			k;

		memcpy(copy, ts.file.data, len);
		for (k = 0; k < nflips; k++)
		{
			/* the first flip sweeps the file, the others land anywhere */
			int			at = (k == 0) ? (int) ((int64) i * len / SE_FUZZ_ITERS) : (int) rnd_below(len);

			if (i % 5 == 1)
				copy[at] = (uint8) rnd();
			else if (i % 5 == 2)
				copy[at] = 0xFF;
			else
				copy[at] ^= (uint8) (1 << rnd_below(8));
		}
		se_error_init(&err);
		r = se_segment_open(copy, len, false, &err);
		if (r == NULL)
		{
			UT_CHECK(err.type != NULL && strcmp(err.type, "index_corrupted_exception") == 0,
					 "open error type");
			continue;
		}
		opened++;
		exercise_reader(r);
		if (se_segment_error(r))
			flagged++;
		/* merging a damaged segment fails cleanly or succeeds; never crashes */
		if (i % 10 == 0)
		{
			StringInfoData out;
			uint8		mid[SE_SEGMENT_ID_LEN] = {9};
			SeError		merr;

			initStringInfo(&out);
			se_error_init(&merr);
			if (!se_segment_merge(&r, NULL, 1, mid, 1, &out, &merr))
				UT_CHECK(merr.type != NULL && out.len == 0, "failed merge reports an error");
			pfree(out.data);
		}
		se_segment_close(r);
	}
	printf("corruption: %d bytes, %d damaged copies opened without checksum, %d flagged corrupt (%.2fs)\n",
		   len, opened, flagged, now_sec() - t0);
	UT_CHECK(opened > 0 && flagged > 0, "fuzzing reached the read paths");

	/* a wrong format version is refused */
	memcpy(copy, ts.file.data, len);
	copy[4 + 1 + 10] = 99;		/* version byte after magic, name length, name */
	se_error_init(&err);
	r = se_segment_open(copy, len, false, &err);
	UT_CHECK(r == NULL && err.reason && strstr(err.reason, "version"), "unknown version refused");
	/*
	 * files are v5 (term-dictionary restart points; v4 is still read, see
	 * test_term_dictionary); v2 (flat dictionary) is refused
	 */
	UT_CHECK(ts.file.data[4 + 1 + 10] == 5, "segments are written as v5");
	copy[4 + 1 + 10] = 2;
	se_error_init(&err);
	r = se_segment_open(copy, len, false, &err);
	UT_CHECK(r == NULL && err.reason && strstr(err.reason, "version"), "v2 refused");
	/* v3 (flat skip tables and doc values) is refused too */
	copy[4 + 1 + 10] = 3;
	se_error_init(&err);
	r = se_segment_open(copy, len, false, &err);
	UT_CHECK(r == NULL && err.reason && strstr(err.reason, "version"), "v3 refused");
	pfree(copy);
}

/* ---------------------------------------------------------------------
 * Term dictionary (blocks of prefix-compressed terms)
 * ---------------------------------------------------------------------
 */
typedef struct DTerm
{
	char	   *b;
	int			len;
} DTerm;

static int
cmp_dterm(const void *a, const void *b)
{
	const DTerm *x = a;
	const DTerm *y = b;

	return cmp_bytes(x->b, x->len, y->b, y->len);
}

/* A random term: shares a prefix with an earlier one, long, binary, ... */
static void
random_dterm(DTerm *t, DTerm *made, int nmade)
{
	static const char alpha[] = "abcz\x00\xff\x7f\x80";
	int			kind = rnd_below(10);
	int			len,
				i;

	if (kind == 0)
	{
		/* an 8-byte numeric term (big-endian, sign flipped), NULs inside */
		int64		v = (int64) (rnd() >> rnd_below(64)) * (rnd_below(2) ? 1 : -1);
		uint64		u = (uint64) v ^ UINT64CONST(0x8000000000000000);

		t->len = 8;
		t->b = palloc(8);
		for (i = 0; i < 8; i++)
			t->b[i] = (char) (u >> (56 - 8 * i));
		return;
	}
	if (kind <= 5 && nmade > 0)
	{
		/* an earlier term's prefix (maybe all of it), then a few bytes */
		const DTerm *o = &made[rnd_below(nmade)];
		int			keep = rnd_below(o->len + 1);
		int			add = rnd_below(4);

		t->len = keep + add;
		t->b = palloc(t->len + 1);
		memcpy(t->b, o->b, keep);
		for (i = 0; i < add; i++)
			t->b[keep + i] = alpha[rnd_below(sizeof(alpha) - 1)];
		return;
	}
	/* fresh: mostly short, some longer than any stack buffer */
	len = kind == 6 ? 200 + rnd_below(2000) : rnd_below(12);
	t->len = len;
	t->b = palloc(len + 1);
	for (i = 0; i < len; i++)
		t->b[i] = alpha[rnd_below(sizeof(alpha) - 1)];
}

/* Index of the first term >= key in sorted[0..n), by brute force. */
static int
brute_ceil(const DTerm *sorted, int n, const char *key, int klen)
{
	int			i;

	for (i = 0; i < n; i++)
		if (cmp_bytes(sorted[i].b, sorted[i].len, key, klen) >= 0)
			return i;
	return n;
}

/*
 * Write terms[0..n) (distinct, any order) into a segment of ndocs docs in
 * three fields (docs only; freqs and norms; positions and norms: their
 * term metas differ in shape), term i in doc i % ndocs and, for every
 * third term, also in another doc (doc_freq 2).
 */
static void
dict_segment(DTerm *terms, int n, int ndocs, uint8 idbyte, StringInfo out)
{
	SeSegmentBuilder *b = se_builder_create();
	int			fd[3];
	int			d,
				i,
				k;
	uint8		sid[SE_SEGMENT_ID_LEN];

	fd[0] = se_builder_field(b, "d", SE_IDX_DOCS, false, SE_DV_NONE);
	fd[1] = se_builder_field(b, "f", SE_IDX_FREQS, true, SE_DV_NONE);
	fd[2] = se_builder_field(b, "p", SE_IDX_POSITIONS, true, SE_DV_NONE);
	for (d = 0; d < ndocs; d++)
	{
		SeDocMeta	m;
		char		idb[16];

		se_builder_begin_doc(b);
		for (i = 0; i < n; i++)
			if (i % ndocs == d || (i % 3 == 0 && (i + 7) % ndocs == d && ndocs > 1))
				for (k = 0; k < 3; k++)
					se_builder_add_term(b, fd[k], terms[i].b, terms[i].len, i % 5);
		memset(&m, 0, sizeof(m));
		m.id_len = snprintf(idb, sizeof(idb), "t%d", d);
		m.id = idb;
		se_builder_end_doc(b, &m, NULL, 0);
	}
	memset(sid, idbyte, sizeof(sid));
	se_builder_serialize(b, sid, 1, out);
	se_builder_free(b);
}

/* Enumeration, exact lookups and seek-ceil against the sorted terms. */
static void
check_dictionary(SeSegmentReader *r, const DTerm *sorted, int n, int max_df,
				 const char *label)
{
	static const char *fields[3] = {"d", "f", "p"};
	int			k,
				i,
				j;

	for (k = 0; k < 3; k++)
	{
		int			f = se_segment_field(r, fields[k]);
		SeTermsEnum *e = se_segment_terms(r, f, NULL, 0);
		const char *term;
		int			len;
		SeTermInfo	ti;
		int			bad = 0;

		for (i = 0; i < n; i++)
			if (!se_terms_next(e, &term, &len, &ti) ||
				cmp_bytes(term, len, sorted[i].b, sorted[i].len) != 0 ||
				ti.doc_freq < 1 || ti.doc_freq > max_df)
				bad++;
		UT_CHECK(bad == 0 && !se_terms_next(e, &term, &len, &ti),
				 "%s: field %s enumerates %d terms in order (%d wrong)",
				 label, fields[k], n, bad);
		se_terms_close(e);

		/* every term is found; its df agrees with the enum's */
		bad = 0;
		e = se_segment_terms(r, f, NULL, 0);
		for (i = 0; i < n; i++)
		{
			SeTermInfo	ti2;

			if (!se_terms_next(e, &term, &len, &ti) ||
				!se_segment_seek_exact(r, f, sorted[i].b, sorted[i].len, &ti2) ||
				ti2.doc_freq != ti.doc_freq || ti2.postings_offset != ti.postings_offset ||
				ti2.positions_offset != ti.positions_offset ||
				ti2.total_term_freq != ti.total_term_freq)
				bad++;
		}
		se_terms_close(e);
		UT_CHECK(bad == 0, "%s: field %s: %d of %d exact lookups wrong", label,
				 fields[k], bad, n);

		/* probes around every term (and random ones) against brute force */
		bad = 0;
		for (i = 0; i < n + 200; i++)
		{
			char		key[4200];
			int			klen;
			int			expect,
						got = 0;
			bool		found;
			SeTermInfo	ti2;

			if (i < n)
			{
				const DTerm *t = &sorted[i];

				klen = Min(t->len, 4000);
				memcpy(key, t->b, klen);
				switch (i % 4)
				{
					case 0:		/* the term plus a NUL: its successor's ceil */
						key[klen++] = '\0';
						break;
					case 1:		/* one byte shorter */
						if (klen > 0)
							klen--;
						break;
					case 2:		/* last byte bumped */
						if (klen > 0 && (uint8) key[klen - 1] < 0xFF)
							key[klen - 1]++;
						break;
					default:	/* the term itself */
						break;
				}
			}
			else
			{
				klen = rnd_below(6);
				for (j = 0; j < klen; j++)
					key[j] = "abcz\x00\xff"[rnd_below(6)];
			}
			expect = brute_ceil(sorted, n, key, klen);
			found = se_segment_seek_exact(r, f, key, klen, &ti2);
			if (found != (expect < n && cmp_bytes(sorted[expect].b, sorted[expect].len,
												  key, klen) == 0))
				bad++;
			e = se_segment_terms(r, f, key, klen);
			/* the ceil and the two terms after it */
			for (j = expect; j < Min(n, expect + 3); j++)
				if (se_terms_next(e, &term, &len, NULL) &&
					cmp_bytes(term, len, sorted[j].b, sorted[j].len) == 0)
					got++;
			if (got != Min(n, expect + 3) - expect ||
				(expect + 3 >= n && se_terms_next(e, &term, &len, NULL) &&
				 expect + got >= n))
				bad++;
			se_terms_close(e);
		}
		UT_CHECK(bad == 0, "%s: field %s: %d seeks disagree with brute force",
				 label, fields[k], bad);

		/*
		 * Forward seeks of one enum from where it stands (a fuzzy walk's
		 * pattern: the gallop, then the restart points after the cursor
		 * in its block), to keys near a later term, against brute force.
		 */
		bad = 0;
		e = se_segment_terms(r, f, NULL, 0);
		i = 0;
		while (n > 0 && i < n && se_terms_next(e, &term, &len, NULL))
		{
			char		key[4200];
			int			klen,
						expect,
						to = i + 1 + (int) rnd_below(i % 3 == 0 ? 5 : 70);

			to = Min(n - 1, to);
			klen = Min(sorted[to].len, 4000);
			memcpy(key, sorted[to].b, klen);
			if (to % 3 == 1 && klen > 0)
				klen--;
			else if (to % 3 == 2)
				key[klen++] = '\0';
			expect = brute_ceil(sorted, n, key, klen);
			se_terms_seek(e, key, klen);
			if (expect >= n)
			{
				if (se_terms_next(e, &term, &len, NULL))
					bad++;
				break;
			}
			/* the enum returns the ceil next; the loop's next moves past it */
			if (!se_terms_next(e, &term, &len, NULL) ||
				cmp_bytes(term, len, sorted[expect].b, sorted[expect].len) != 0)
			{
				bad++;
				break;
			}
			i = Max(i, expect) + 1;	/* a target made shorter may lie behind */
		}
		se_terms_close(e);
		UT_CHECK(bad == 0, "%s: field %s: forward seeks disagree with brute force",
				 label, fields[k]);
	}
	UT_CHECK(se_segment_error(r) == NULL, "%s: no corruption reported: %s", label,
			 se_segment_error(r) ? se_segment_error(r)->reason : "");
}

/* The format version in a segment file's header. */
static int
file_version(const StringInfoData *f)
{
	return (int) se_read_u32((const uint8 *) f->data + 5 + strlen(SE_SEGMENT_FORMAT));
}

/*
 * Both formats the reader reads: v4 (written with se_segment_write_version
 * = 4, as before v5) and v5 (restart points); a merge writes v5 from either.
 */
static void
test_term_dictionary(void)
{
	static const int sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 24, 25, 31, 32, 33,
	63, 64, 65, 97, 1000, 4000};
	int			si,
				wv;

	for (wv = 4; wv <= SE_SEGMENT_VERSION; wv++)
	for (si = 0; si < lengthof(sizes); si++)
	{
		int			want = sizes[si];
		int			cap = want * 2 + 16;
		DTerm	   *t = palloc(sizeof(DTerm) * cap);
		int			n = 0,
					i,
					tries;
		int			ndocs = 1 + (want % 37);
		StringInfoData f;
		SeSegmentReader *r;
		SeError		err;
		char		label[64];

		/* distinct terms; the empty term in some sets */
		if (want > 2 && si % 2 == 0)
		{
			t[n].b = palloc(1);
			t[n++].len = 0;
		}
		for (tries = 0; n < want && tries < want * 50; tries++)
		{
			DTerm		c;
			bool		dup = false;

			random_dterm(&c, t, n);
			for (i = 0; i < n && !dup; i++)
				dup = cmp_bytes(c.b, c.len, t[i].b, t[i].len) == 0;
			if (dup)
				pfree(c.b);
			else
				t[n++] = c;
		}
		qsort(t, n, sizeof(DTerm), cmp_dterm);
		snprintf(label, sizeof(label), "v%d term dictionary of %d terms", wv, n);

		initStringInfo(&f);
		se_segment_write_version = wv;
		dict_segment(t, n, ndocs, 0xD1, &f);
		se_segment_write_version = SE_SEGMENT_VERSION;
		UT_CHECK(file_version(&f) == wv, "%s: written as v%d", label,
				 file_version(&f));
		se_error_init(&err);
		r = se_segment_open((uint8 *) f.data, f.len, true, &err);
		UT_CHECK(r != NULL, "%s: opens", label);
		if (r)
		{
			check_dictionary(r, t, n, 2, label);

			/* merged with itself: the same terms, doc_freq doubled */
			if (n <= 1000)
			{
				SeSegmentReader *two[2] = {r, r};
				StringInfoData m;
				uint8		mid[SE_SEGMENT_ID_LEN] = {0xD2};
				SeSegmentReader *mr;

				initStringInfo(&m);
				UT_CHECK(se_segment_merge(two, NULL, 2, mid, 1, &m, &err),
						 "%s: merges", label);
				mr = se_segment_open((uint8 *) m.data, m.len, true, &err);
				UT_CHECK(mr != NULL && file_version(&m) == SE_SEGMENT_VERSION,
						 "%s: merged opens, written as v%d", label, file_version(&m));
				if (mr)
				{
					snprintf(label, sizeof(label), "v%d merged dictionary of %d terms",
							 wv, n);
					check_dictionary(mr, t, n, 4, label);
					se_segment_close(mr);
				}
				pfree(m.data);
			}
			se_segment_close(r);
		}
		pfree(f.data);
		for (i = 0; i < n; i++)
			pfree(t[i].b);
		pfree(t);
	}
}

/*
 * A term stored out of order inside a block (a damaged suffix byte, read
 * without the checksum) ends the enum, fails the merge and is reported:
 * the merge depends on the order.
 */
static void
test_term_order_corruption(void)
{
	DTerm		t[3] = {{"ab", 2}, {"acq", 3}, {"ad", 2}};
	StringInfoData f;
	SeSegmentReader *r;
	SeError		err;
	int			i,
				at = -1;
	const char *term;
	int			len,
				n = 0;
	SeTermsEnum *e;

	initStringInfo(&f);
	dict_segment(t, 3, 1, 0xD3, &f);
	/* "acq" follows "ab" as prefix 1, suffix 2, "cq": make it "aaq" */
	for (i = 0; i + 4 < f.len; i++)
		if (f.data[i] == 1 && f.data[i + 1] == 2 && memcmp(f.data + i + 2, "cq", 2) == 0)
		{
			at = i + 2;
			break;
		}
	UT_CHECK(at > 0, "order corruption: found the suffix");
	if (at < 0)
		return;
	f.data[at] = 'a';
	se_error_init(&err);
	r = se_segment_open((uint8 *) f.data, f.len, false, &err);
	UT_CHECK(r != NULL, "order corruption: opens without checksum");
	if (r == NULL)
		return;
	e = se_segment_terms(r, se_segment_field(r, "d"), NULL, 0);
	while (se_terms_next(e, &term, &len, NULL))
		n++;
	se_terms_close(e);
	UT_CHECK(n == 1 && se_segment_error(r) != NULL &&
			 strstr(se_segment_error(r)->reason, "out of order") != NULL,
			 "order corruption: enum stops after %d terms: %s", n,
			 se_segment_error(r) ? se_segment_error(r)->reason : "no error");
	{
		StringInfoData m;
		uint8		mid[SE_SEGMENT_ID_LEN] = {0xD4};
		SeSegmentReader *r2 = se_segment_open((uint8 *) f.data, f.len, false, &err);

		initStringInfo(&m);
		se_error_init(&err);
		UT_CHECK(r2 && !se_segment_merge(&r2, NULL, 1, mid, 1, &m, &err) &&
				 strstr(err.reason, "out of order") != NULL,
				 "order corruption: merge refuses");
		se_segment_close(r2);
		pfree(m.data);
	}
	se_segment_close(r);
	pfree(f.data);
}

static void
test_segments_and_merge(void)
{
	TestSeg		seg[3];
	SeSegmentReader *r[3];
	uint64	   *live[3];
	SeError		err;
	int			s,
				i;
	MDoc	  **expect;
	int			nexpect = 0;
	StringInfoData out;
	uint8		mid[SE_SEGMENT_ID_LEN];
	SeSegmentReader *m;
	double		t0;

	make_segment(&seg[0], 2500, 0, false, 40, 0xA0);
	make_segment(&seg[1], 700, 100000, true, 10, 0xA1);
	make_segment(&seg[2], 1500, 200000, false, 80, 0xA2);
	for (s = 0; s < 3; s++)
	{
		char		lbl[40];
		uint8		got[SE_SEGMENT_ID_LEN];

		snprintf(lbl, sizeof(lbl), "segment %d", s);
		se_error_init(&err);
		r[s] = se_segment_open((uint8 *) seg[s].file.data, seg[s].file.len, true, &err);
		UT_CHECK(r[s] != NULL, "open %s: %s", lbl, err.reason ? err.reason : "");
		if (r[s] == NULL)
			return;
		se_segment_get_id(r[s], got);
		UT_CHECK(memcmp(got, seg[s].id, SE_SEGMENT_ID_LEN) == 0, "segment id");
		verify_segment(r[s], seg[s].live, seg[s].nlive, lbl);
	}

	/* a mapping that is not 8-byte aligned still reads correctly */
	{
		char	   *buf = palloc(seg[1].file.len + 8);
		SeSegmentReader *mr;

		memcpy(buf + 3, seg[1].file.data, seg[1].file.len);
		se_error_init(&err);
		mr = se_segment_open((uint8 *) buf + 3, seg[1].file.len, true, &err);
		UT_CHECK(mr != NULL, "open misaligned");
		if (mr)
		{
			verify_segment(mr, seg[1].live, seg[1].nlive, "misaligned");
			se_segment_close(mr);
		}
		pfree(buf);
	}

	/* deletes through live docs in segments 0 and 2; segment 1 all live */
	expect = palloc(sizeof(MDoc *) * (seg[0].nlive + seg[1].nlive + seg[2].nlive));
	for (s = 0; s < 3; s++)
	{
		live[s] = (s == 1) ? NULL : se_livedocs_new(seg[s].nlive);
		for (i = 0; i < seg[s].nlive; i++)
		{
			if (live[s] && rnd_below(4) == 0)
				se_livedocs_clear(live[s], i);
			if (se_livedocs_get(live[s], i))
				expect[nexpect++] = seg[s].live[i];
		}
	}
	memset(mid, 0xEE, sizeof(mid));
	initStringInfo(&out);
	se_error_init(&err);
	t0 = now_sec();
	UT_CHECK(se_segment_merge(r, (const uint64 **) live, 3, mid, 3, &out, &err),
			 "merge: %s", err.reason ? err.reason : "");
	printf("merge of %d docs: %.3fs\n", nexpect, now_sec() - t0);
	m = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(m != NULL, "open merged: %s", err.reason ? err.reason : "");
	if (m)
	{
		verify_segment(m, expect, nexpect, "merged");
		se_segment_close(m);
	}

	/* merging a merged segment with everything deleted in another */
	{
		uint64	   *none = se_livedocs_new(seg[1].nlive);
		const uint64 *lv[2];
		SeSegmentReader *rr[2];
		StringInfoData out2;

		for (i = 0; i < seg[1].nlive; i++)
			se_livedocs_clear(none, i);
		m = se_segment_open((uint8 *) out.data, out.len, false, &err);
		rr[0] = r[1];
		rr[1] = m;
		lv[0] = none;
		lv[1] = NULL;
		initStringInfo(&out2);
		UT_CHECK(se_segment_merge(rr, lv, 2, mid, 1, &out2, &err), "second merge");
		se_segment_close(m);
		m = se_segment_open((uint8 *) out2.data, out2.len, true, &err);
		UT_CHECK(m != NULL, "open second merge");
		if (m)
		{
			verify_segment(m, expect, nexpect, "merged twice");
			se_segment_close(m);
		}
		pfree(out2.data);
		pfree(none);
	}

	/* merge of nothing */
	resetStringInfo(&out);
	UT_CHECK(se_segment_merge(NULL, NULL, 0, mid, 1, &out, &err), "empty merge");
	m = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(m != NULL && se_segment_max_doc(m) == 0, "empty merge opens");
	if (m)
		se_segment_close(m);

	for (s = 0; s < 3; s++)
	{
		se_segment_close(r[s]);
		if (live[s])
			pfree(live[s]);
	}
	pfree(out.data);
	pfree(expect);
}

/*
 * Postings blocks: terms whose doc counts sit around the block size (127,
 * 128, 129, 256, 257) and beyond, with runs of small doc gaps broken by
 * large ones and freqs that are mostly small but sometimes huge, so the
 * PFOR blocks carry exceptions.  Every term is indexed in a positions
 * field, a freqs field and a docs-only field without norms; iteration,
 * advance across blocks with positions read after each jump, and impacts
 * are checked against the model.
 */
typedef struct BTerm
{
	char		name[16];
	int			df;
	int		   *docs;
	int		   *freqs;
} BTerm;

#define BLK_MAX_DOC 30000

static int
btok_pos(int doc, int k)
{
	return (doc % 5) + 2 * k;
}

static void
check_block_term(SeSegmentReader *r, int field, const BTerm *bt, const char *fname)
{
	SeIndexOptions io = se_segment_field_index_options(r, field);
	SeTermInfo	ti;
	SePostings *p;
	char		lbl[80];
	int			k,
				j,
				bad = 0;
	int		   *freqs = palloc(sizeof(int) * bt->df);

	snprintf(lbl, sizeof(lbl), "blocks %s/%s", fname, bt->name);
	if (!se_segment_seek_exact(r, field, bt->name, strlen(bt->name), &ti))
	{
		UT_CHECK(false, "%s: term missing", lbl);
		return;
	}
	UT_CHECK(ti.doc_freq == bt->df, "%s: df", lbl);
	for (k = 0; k < bt->df; k++)
		freqs[k] = io == SE_IDX_DOCS ? 1 : bt->freqs[k];

	/* next() over everything, positions of every other doc */
	p = se_postings_open(r, &ti, true);
	for (k = 0; k < bt->df; k++)
	{
		if (se_postings_next(p) != bt->docs[k] || se_postings_freq(p) != freqs[k])
		{
			bad++;
			break;
		}
		if (io == SE_IDX_POSITIONS && k % 2 == 0)
		{
			for (j = 0; j < freqs[k]; j++)
				if (se_postings_next_position(p) != btok_pos(bt->docs[k], j))
					bad++;
			if (se_postings_next_position(p) != -1)
				bad++;
		}
	}
	if (se_postings_next(p) != SE_NO_MORE_DOCS)
		bad++;
	se_postings_close(p);
	UT_CHECK(bad == 0, "%s: %d errors iterating", lbl, bad);

	/* advance() with long and short jumps; positions right after jumps */
	for (j = 0; j < 3; j++)
	{
		int			target = 0;

		bad = 0;
		p = se_postings_open(r, &ti, true);
		k = 0;
		for (;;)
		{
			int32		got;

			target += 1 + (int) rnd_below(j == 0 ? 40 : j == 1 ? 700 : 5000);
			while (k < bt->df && bt->docs[k] < target)
				k++;
			got = se_postings_advance(p, target);
			if (got != (k < bt->df ? bt->docs[k] : SE_NO_MORE_DOCS))
			{
				if (bad++ == 0)
					fprintf(stderr, "%s: advance(%d) = %d expected %d\n", lbl, target,
							got, k < bt->df ? bt->docs[k] : -1);
				break;
			}
			if (got == SE_NO_MORE_DOCS)
				break;
			if (se_postings_freq(p) != freqs[k])
				bad++;
			if (io == SE_IDX_POSITIONS && rnd_below(2) == 0)
			{
				int			m = rnd_below(freqs[k] + 1);
				int			q;

				for (q = 0; q < m; q++)
					if (se_postings_next_position(p) != btok_pos(got, q))
						bad++;
			}
			if (rnd_below(3) == 0)
			{
				/* a few next() calls between jumps */
				int			q,
							m = 1 + rnd_below(4);

				for (q = 0; q < m && k + 1 < bt->df; q++)
				{
					k++;
					if (se_postings_next(p) != bt->docs[k])
						bad++;
				}
				target = bt->docs[k];
			}
			else
				target = got;
		}
		se_postings_close(p);
		UT_CHECK(bad == 0, "%s: %d errors advancing (round %d)", lbl, bad, j);
	}
	check_impacts(r, &ti, bt->docs, freqs, bt->df, lbl);
	pfree(freqs);
}

static void
test_postings_blocks(void)
{
	static const int dfs[] = {2, 3, 127, 128, 129, 255, 256, 257, 640, 1000, 3001,
	4096, 4097, 12000, 20000};
	int			nterms = lengthof(dfs);
	BTerm	   *bts = palloc0(sizeof(BTerm) * nterms);
	SeSegmentBuilder *b = se_builder_create();
	int			fp,
				ff,
				fd;
	int		   *next_idx = palloc0(sizeof(int) * nterms);
	StringInfoData out;
	uint8		sid[SE_SEGMENT_ID_LEN] = {0xB1};
	SeSegmentReader *r;
	SeError		err;
	int			t,
				d,
				k;

	/* doc lists: dense runs broken by large gaps (PFOR exceptions) */
	for (t = 0; t < nterms; t++)
	{
		BTerm	   *bt = &bts[t];
		int			doc = -1;
		int			span;

		snprintf(bt->name, sizeof(bt->name), "t%d", dfs[t]);
		bt->df = dfs[t];
		bt->docs = palloc(sizeof(int) * bt->df);
		bt->freqs = palloc(sizeof(int) * bt->df);
		span = BLK_MAX_DOC / bt->df;
		for (k = 0; k < bt->df; k++)
		{
			int			gap;

			if (rnd_below(25) == 0)
				gap = 1 + (int) rnd_below(span * 8 + 1);
			else
				gap = 1 + (int) rnd_below(Max(1, span / 2));
			if (doc + gap > BLK_MAX_DOC - (bt->df - k))
				gap = 1;
			doc += gap;
			bt->docs[k] = doc;
			/* wide freqs in some terms make more than SE_MAX_IMPACTS pairs */
			bt->freqs[k] = rnd_below(40) == 0 ? 100 + (int) rnd_below(300) :
				1 + (int) rnd_below(t % 3 == 0 ? 14 : 3);
		}
	}
	fp = se_builder_field(b, "p", SE_IDX_POSITIONS, true, SE_DV_NONE);
	ff = se_builder_field(b, "f", SE_IDX_FREQS, true, SE_DV_NONE);
	fd = se_builder_field(b, "d", SE_IDX_DOCS, false, SE_DV_NONE);
	for (d = 0; d < BLK_MAX_DOC; d++)
	{
		SeDocMeta	m;
		char		idb[16];
		int			f;

		se_builder_begin_doc(b);
		for (f = 0; f < 3; f++)
		{
			int			field = f == 0 ? fp : f == 1 ? ff : fd;

			for (t = 0; t < nterms; t++)
			{
				BTerm	   *bt = &bts[t];
				int			i = next_idx[t];

				if (i < bt->df && bt->docs[i] == d)
					for (k = 0; k < bt->freqs[i]; k++)
						se_builder_add_term(b, field, bt->name, strlen(bt->name),
											btok_pos(d, k));
			}
			/* filler that varies the field lengths, hence the norms */
			for (k = 0; k < (int) (d % 37); k++)
				se_builder_add_term(b, field, "filler", 6, 1000 + k);
		}
		for (t = 0; t < nterms; t++)
			if (next_idx[t] < bts[t].df && bts[t].docs[next_idx[t]] == d)
				next_idx[t]++;
		memset(&m, 0, sizeof(m));
		m.id_len = snprintf(idb, sizeof(idb), "b%d", d);
		m.id = idb;
		se_builder_end_doc(b, &m, NULL, 0);
	}
	initStringInfo(&out);
	se_builder_serialize(b, sid, 1, &out);
	se_builder_free(b);
	se_error_init(&err);
	r = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(r != NULL, "blocks: open: %s", err.reason ? err.reason : "");
	if (r != NULL)
	{
		for (t = 0; t < nterms; t++)
		{
			check_block_term(r, se_segment_field(r, "p"), &bts[t], "p");
			check_block_term(r, se_segment_field(r, "f"), &bts[t], "f");
			check_block_term(r, se_segment_field(r, "d"), &bts[t], "d");
		}
		UT_CHECK(se_segment_error(r) == NULL, "blocks: no reader error");
		UT_CHECK(big_fronts > 0, "blocks: some blocks merge impact pairs");
		se_segment_close(r);
	}
	pfree(out.data);
	for (t = 0; t < nterms; t++)
	{
		pfree(bts[t].docs);
		pfree(bts[t].freqs);
	}
	pfree(bts);
	pfree(next_idx);
}

/* The DOCVALUES section's id (segment_internal.h) */
#define SEC_DOCVALUES 6

/* Length of section id of a segment file (0 if absent). */
static uint64
section_len(const char *data, int len, int id)
{
	uint64		toc;
	uint32		nsec,
				i;

	memcpy(&toc, data + len - SE_FILE_FOOTER_LEN - 8, 8);
	memcpy(&nsec, data + toc + 4, 4);
	for (i = 0; i < nsec; i++)
	{
		uint32		sid;
		uint64		slen;

		memcpy(&sid, data + toc + 8 + 24 * i, 4);
		memcpy(&slen, data + toc + 8 + 24 * i + 16, 8);
		if ((int) sid == id)
			return slen;
	}
	return 0;
}

/*
 * Packed doc values: columns whose values are multiples of a gcd above
 * their min (timestamps in seconds as milliseconds), all equal, spanning
 * the whole int64 range (stored raw), multi-valued with missing docs (with
 * starts), and sorted-set ords; every value reads back, ranges over the
 * column match the model, a merge keeps them, and the section is a
 * fraction of the 4-byte starts and 8-byte values a flat layout takes.
 */
static void
test_doc_values_packing(void)
{
	const int	ndocs = 20000;
	SeSegmentBuilder *b = se_builder_create();
	int			fts = se_builder_field(b, "ts", SE_IDX_NONE, false, SE_DV_NUMERIC);
	int			fconst = se_builder_field(b, "const", SE_IDX_NONE, false, SE_DV_NUMERIC);
	int			fwide = se_builder_field(b, "wide", SE_IDX_NONE, false, SE_DV_NUMERIC);
	int			fmulti = se_builder_field(b, "multi", SE_IDX_NONE, false, SE_DV_NUMERIC);
	int			fkw = se_builder_field(b, "kw", SE_IDX_DOCS, false, SE_DV_SORTED_SET);
	int64	   *wide = palloc(sizeof(int64) * ndocs);
	StringInfoData out;
	uint8		sid[SE_SEGMENT_ID_LEN] = {0xD7};
	uint8		mid[SE_SEGMENT_ID_LEN] = {0xD8};
	SeSegmentReader *r,
			   *m;
	SeError		err;
	uint64		flat;
	uint64	   *bits = palloc0(sizeof(uint64) * (ndocs / 64 + 1));
	int			d,
				k,
				bad = 0,
				round;

	for (d = 0; d < ndocs; d++)
	{
		SeDocMeta	meta;
		char		idb[16];
		char		kw[16];
		int			kl = snprintf(kw, sizeof(kw), "k%03d", (d * 7) % 300);

		wide[d] = d == 0 ? PG_INT64_MIN : d == 1 ? PG_INT64_MAX :
			(int64) (((uint64) rnd() << 32) ^ rnd());
		se_builder_begin_doc(b);
		se_builder_add_numeric(b, fts, INT64CONST(1700000000000) + 1000 * (int64) ((d * 37) % 5000));
		se_builder_add_numeric(b, fconst, 42);
		se_builder_add_numeric(b, fwide, wide[d]);
		for (k = 0; k < d % 3; k++)
			se_builder_add_numeric(b, fmulti, k == 0 ? -d : (int64) d * 7);
		se_builder_add_sorted(b, fkw, kw, kl);
		memset(&meta, 0, sizeof(meta));
		meta.id_len = snprintf(idb, sizeof(idb), "p%d", d);
		meta.id = idb;
		se_builder_end_doc(b, &meta, NULL, 0);
	}
	initStringInfo(&out);
	se_builder_serialize(b, sid, 1, &out);
	se_builder_free(b);
	se_error_init(&err);
	r = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(r != NULL, "packed doc values: open: %s", err.reason ? err.reason : "");
	if (r == NULL)
		return;
	/* a flat layout: 4-byte starts per doc and field, 8-byte values, 4-byte ords */
	flat = 5 * 4 * (uint64) (ndocs + 1) + 8 * (3 * (uint64) ndocs + (uint64) ndocs) + 4 * (uint64) ndocs;
	printf("packed doc values: %d docs, DOCVALUES section %llu bytes (flat layout %llu)\n",
		   ndocs, (unsigned long long) section_len(out.data, out.len, SEC_DOCVALUES),
		   (unsigned long long) flat);
	UT_CHECK(section_len(out.data, out.len, SEC_DOCVALUES) * 3 < flat,
			 "doc values are packed");

	/* the same checks on the segment and on its merge (merge rewrites the columns) */
	initStringInfo(&out);
	UT_CHECK(se_segment_merge(&r, NULL, 1, mid, 1, &out, &err), "packed doc values: merge");
	m = se_segment_open((uint8 *) out.data, out.len, true, &err);
	UT_CHECK(m != NULL, "packed doc values: merged opens");
	for (round = 0; round < 2; round++)
	{
		SeSegmentReader *x = round == 0 ? r : m;
		int			ts = se_segment_field(x, "ts"),
					cf = se_segment_field(x, "const"),
					wf = se_segment_field(x, "wide"),
					mf = se_segment_field(x, "multi"),
					kf = se_segment_field(x, "kw");
		int64		lo = INT64CONST(1700000000000) + 1000 * 1200,
					hi = INT64CONST(1700000000000) + 1000 * 3400;
		int			nin = 0;

		if (x == NULL)
			break;
		for (d = 0; d < ndocs; d++)
		{
			const int64 *v;
			int			n;
			int64		t = INT64CONST(1700000000000) + 1000 * (int64) ((d * 37) % 5000);
			char		kw[16];
			int			kl = snprintf(kw, sizeof(kw), "k%03d", (d * 7) % 300);
			int			vl;
			const char *vb;

			if (se_segment_numeric_values(x, ts, d, &v) != 1 || v[0] != t)
				bad++;
			if (se_segment_numeric_values(x, cf, d, &v) != 1 || v[0] != 42)
				bad++;
			if (se_segment_numeric_values(x, wf, d, &v) != 1 || v[0] != wide[d])
				bad++;
			n = se_segment_numeric_values(x, mf, d, &v);
			if (n != d % 3 || (n >= 1 && v[0] != -d) || (n == 2 && v[1] != (int64) d * 7))
				bad++;
			vb = se_segment_sorted_value(x, kf, d, 0, &vl);
			if (se_segment_sorted_count(x, kf, d) != 1 || vb == NULL || vl != kl ||
				memcmp(vb, kw, kl) != 0)
				bad++;
			if (t >= lo && t <= hi)
				nin++;
		}
		memset(bits, 0, sizeof(uint64) * (ndocs / 64 + 1));
		UT_CHECK(se_segment_numeric_range_bits(x, ts, lo, hi, 0, ndocs, bits), "range over a packed column");
		for (d = 0; d < ndocs; d++)
		{
			int64		t = INT64CONST(1700000000000) + 1000 * (int64) ((d * 37) % 5000);
			bool		set = (bits[d >> 6] >> (d & 63)) & 1;

			if (set != (t >= lo && t <= hi))
				bad++;
			nin -= set;
		}
		/* bounds off the gcd grid, beyond the column, on a constant column */
		{
			static const int64 rl[][2] = {
				{1200001, 3399999}, {-5, 2000}, {4998000, PG_INT64_MAX},
				{PG_INT64_MIN, -1}, {4999001, PG_INT64_MAX}, {7, 7}, {PG_INT64_MIN, PG_INT64_MAX}
			};
			int			q;

			for (q = 0; q < lengthof(rl); q++)
			{
				int64		qlo = rl[q][0] == PG_INT64_MIN ? PG_INT64_MIN : INT64CONST(1700000000000) + rl[q][0];
				int64		qhi = rl[q][1] == PG_INT64_MAX ? PG_INT64_MAX : INT64CONST(1700000000000) + rl[q][1];
				bool		anyset;

				memset(bits, 0, sizeof(uint64) * (ndocs / 64 + 1));
				anyset = se_segment_numeric_range_bits(x, ts, qlo, qhi, 0, 1000, bits);
				anyset |= se_segment_numeric_range_bits(x, ts, qlo, qhi, 1000, PG_UINT32_MAX, bits);
				for (d = 0; d < ndocs; d++)
				{
					int64		t = INT64CONST(1700000000000) + 1000 * (int64) ((d * 37) % 5000);
					bool		set = (bits[d >> 6] >> (d & 63)) & 1;

					if (set != (t >= qlo && t <= qhi))
						bad++;
					if (set && !anyset)
						bad++;
				}
			}
			for (q = 0; q < 4; q++)
			{
				int64		clo = q == 0 ? 42 : q == 1 ? 43 : q == 2 ? PG_INT64_MIN : 0,
							chi = q == 0 ? 42 : q == 1 ? 100 : q == 2 ? 41 : PG_INT64_MAX;
				bool		anyset;

				memset(bits, 0, sizeof(uint64) * (ndocs / 64 + 1));
				anyset = se_segment_numeric_range_bits(x, cf, clo, chi, 0, ndocs, bits);
				if (anyset != (42 >= clo && 42 <= chi))
					bad++;
				for (d = 0; d < ndocs; d++)
					if (((bits[d >> 6] >> (d & 63)) & 1) != (42 >= clo && 42 <= chi))
						bad++;
			}
		}
		memset(bits, 0, sizeof(uint64) * (ndocs / 64 + 1));
		(void) se_segment_numeric_range_bits(x, wf, PG_INT64_MAX, PG_INT64_MAX, 0, 77, bits);
		(void) se_segment_numeric_range_bits(x, wf, PG_INT64_MAX, PG_INT64_MAX, 77, ndocs, bits);
		for (d = 0; d < ndocs; d++)
			if (((bits[d >> 6] >> (d & 63)) & 1) != (wide[d] == PG_INT64_MAX))
				bad++;
		UT_CHECK(bad == 0 && nin == 0 && se_segment_error(x) == NULL,
				 "packed doc values read back (%s): %d wrong", round == 0 ? "written" : "merged", bad);
	}
	if (m)
		se_segment_close(m);
	se_segment_close(r);
	pfree(wide);
	pfree(bits);
}

/*
 * Corruption of the block format: a small segment of dense terms (full
 * PFOR blocks, skip tables, impacts).  Every byte flip fails the checksum;
 * without it, flips aimed at the TERMS, POSTINGS and POSITIONS sections
 * must be reported or harmless, never a crash or an endless loop.
 */
static void
test_block_corruption(void)
{
	SeSegmentBuilder *b = se_builder_create();
	int			f = se_builder_field(b, "p", SE_IDX_POSITIONS, true, SE_DV_NONE);
	int			g = se_builder_field(b, "f", SE_IDX_FREQS, true, SE_DV_NONE);
	StringInfoData out;
	uint8		sid[SE_SEGMENT_ID_LEN] = {0xB2};
	uint8	   *copy;
	SeSegmentReader *r;
	SeError		err;
	int			d,
				i,
				len,
				undetected = 0,
				opened = 0,
				flagged = 0;
	uint64		toc,
				sec_off[4],
				sec_len[4];
	double		t0 = now_sec();

	for (d = 0; d < 900; d++)
	{
		SeDocMeta	m;
		char		idb[16];
		int			n = 1 + rnd_below(12);

		se_builder_begin_doc(b);
		for (i = 0; i < n; i++)
		{
			char		w[4];
			int			wl = snprintf(w, sizeof(w), "%d", (int) rnd_below(rnd_below(20) + 1));

			se_builder_add_term(b, f, w, wl, i);
			se_builder_add_term(b, g, w, wl, i);
		}
		if (d % 97 == 0)
			for (i = 0; i < 200; i++)
				se_builder_add_term(b, f, "0", 1, 20 + i);
		memset(&m, 0, sizeof(m));
		m.id_len = snprintf(idb, sizeof(idb), "c%d", d);
		m.id = idb;
		se_builder_end_doc(b, &m, NULL, 0);
	}
	initStringInfo(&out);
	se_builder_serialize(b, sid, 1, &out);
	se_builder_free(b);
	len = out.len;
	copy = palloc(len);

	for (i = 0; i < len; i++)
	{
		memcpy(copy, out.data, len);
		copy[i] ^= (uint8) (1 << (i % 8));
		se_error_init(&err);
		r = se_segment_open(copy, len, true, &err);
		if (r != NULL)
		{
			undetected++;
			se_segment_close(r);
		}
	}
	UT_CHECK(undetected == 0, "block corruption: %d of %d flips undetected", undetected, len);

	/* locate TERMS, POSTINGS and POSITIONS through the table of contents */
	memcpy(&toc, out.data + len - SE_FILE_FOOTER_LEN - 8, 8);
	for (i = 0; i < 3; i++)
	{
		memcpy(&sec_off[i], out.data + toc + 8 + 24 * (i + 1) + 8, 8);
		memcpy(&sec_len[i], out.data + toc + 8 + 24 * (i + 1) + 16, 8);
	}
	UT_CHECK(sec_len[1] > 1000, "block corruption: postings section of %d bytes",
			 (int) sec_len[1]);
	for (i = 0; i < SE_FUZZ_ITERS; i++)
	{
		int			sec = i % 5 < 3 ? 1 : i % 5 == 3 ? 0 : 2;
		int			nflips = 1 + (i % 3 == 0 ? rnd_below(4) : 0);
		int			k;

		if (sec_len[sec] == 0)
			continue;
		memcpy(copy, out.data, len);
		for (k = 0; k < nflips; k++)
		{
			int			at = (int) (sec_off[sec] + rnd_below((uint32) sec_len[sec]));

			if (i % 4 == 1)
				copy[at] = (uint8) rnd();
			else
				copy[at] ^= (uint8) (1 << rnd_below(8));
		}
		se_error_init(&err);
		r = se_segment_open(copy, len, false, &err);
		if (r == NULL)
			continue;
		opened++;
		exercise_reader(r);
		if (se_segment_error(r))
			flagged++;
		se_segment_close(r);
	}
	printf("block corruption: %d bytes, %d damaged copies read, %d flagged (%.2fs)\n",
		   len, opened, flagged, now_sec() - t0);
	UT_CHECK(opened > 0 && flagged > opened / 4, "block fuzzing reached the decoders");
	pfree(copy);
	pfree(out.data);
}

/*
 * Throughput: 64k docs x ~100 tokens through the builder and the
 * serializer, then postings iteration speed.  Timings are printed; the
 * asserted bounds are loose because this runs under sanitizers.
 */
static void
test_throughput(void)
{
	int			ndocs = 65536;
	SeSegmentBuilder *b = se_builder_create();
	int			body = se_builder_field(b, "body", SE_IDX_POSITIONS, true, SE_DV_NONE);
	int			kw = se_builder_field(b, "kw", SE_IDX_DOCS, false, SE_DV_SORTED_SET);
	int			num = se_builder_field(b, "n", SE_IDX_NONE, false, SE_DV_NUMERIC);
	char		src[700];
	StringInfoData f;
	double		t0,
				t1,
				t2;
	int			d,
				i;
	uint8		id[SE_SEGMENT_ID_LEN] = {0x42};
	SeSegmentReader *r;
	SeError		err;
	int64		tokens = 0;

	memset(src, 'x', sizeof(src));
	t0 = now_sec();
	for (d = 0; d < ndocs; d++)
	{
		SeDocMeta	m;
		char		idbuf[16];
		int			ntok = 80 + rnd_below(40);

		se_builder_begin_doc(b);
		for (i = 0; i < ntok; i++)
		{
			int			w = pick_word();

			se_builder_add_term(b, body, vocab[w], vocab_len[w], i);
		}
		tokens += ntok;
		se_builder_add_term(b, kw, vocab[d % 50], vocab_len[d % 50], 0);
		se_builder_add_sorted(b, kw, vocab[d % 50], vocab_len[d % 50]);
		se_builder_add_numeric(b, num, d);
		memset(&m, 0, sizeof(m));
		m.id_len = snprintf(idbuf, sizeof(idbuf), "%08d", d);
		m.id = idbuf;
		m.seq_no = d;
		m.version = 1;
		memcpy(src, idbuf, 8);
		se_builder_end_doc(b, &m, src, 300 + d % 400);
	}
	t1 = now_sec();
	initStringInfo(&f);
	se_builder_serialize(b, id, 1, &f);
	t2 = now_sec();
	printf("throughput: %d docs, " INT64_FORMAT " tokens: build %.3fs, serialize %.3fs, "
		   "builder ram %.1f MB, file %.1f MB\n", ndocs, tokens, t1 - t0, t2 - t1,
		   se_builder_ram_bytes(b) / 1048576.0, f.len / 1048576.0);
	se_builder_free(b);
	/* the times are printed, not checked: speed is bench/'s, not a test's */

	se_error_init(&err);
	t0 = now_sec();
	r = se_segment_open((uint8 *) f.data, f.len, true, &err);
	t1 = now_sec();
	UT_CHECK(r != NULL, "open big segment");
	if (r)
	{
		SeTermInfo	ti;
		SePostings *p;
		int64		n = 0,
					sum = 0;
		int			rep;
		int			fb = se_segment_field(r, "body");

		printf("throughput: open with checksum %.3fs\n", t1 - t0);
		UT_CHECK(se_segment_seek_exact(r, fb, vocab[0], vocab_len[0], &ti), "frequent term");
		t0 = now_sec();
		for (rep = 0; rep < 20; rep++)
		{
			p = se_postings_open(r, &ti, false);
			while (se_postings_next(p) != SE_NO_MORE_DOCS)
			{
				sum += se_postings_freq(p);
				n++;
			}
			se_postings_close(p);
		}
		t1 = now_sec();
		printf("throughput: postings of df=%d: %.1f ns per 100 docs\n", ti.doc_freq,
			   (t1 - t0) * 1e9 / n * 100);
		UT_CHECK(n == 20 * (int64) ti.doc_freq && sum == 20 * ti.total_term_freq,
				 "postings count");
		UT_CHECK(se_segment_lookup_id(r, "00012345", 8) == 12345, "lookup in big segment");
		se_segment_close(r);
	}
	pfree(f.data);
}

int
main(void)
{
	init_vocab();
	test_smallfloat();
	test_file_format();
	test_builder_edge_cases();
	test_builder_add_terms();
	test_builder_term_order();
	test_builder_add_keywords();
	test_term_pos_vints();
	test_builder_abort();
	test_livedocs();
	test_merge_mismatched_fields();
	test_term_dictionary();
	test_term_order_corruption();
	test_segments_and_merge();
	test_corruption();
	test_postings_blocks();
	test_block_corruption();
	test_doc_values_packing();
	test_throughput();
	return ut_finish("test_segment");
}
