/*-------------------------------------------------------------------------
 *
 * scorer.c
 *	  Per-segment scorers: doc-id iterators (next/advance) that score the
 *	  doc they are on.
 *
 * Document-at-a-time evaluation as in Lucene: conjunctions leapfrog on
 * advance() led by their cheapest clause, disjunctions keep their clauses
 * in a min-heap by doc id and honour minimum_should_match, exclusions skip
 * the docs of a prohibited iterator.  Boolean composition follows Lucene's
 * Boolean2ScorerSupplier so that scores are summed in the same groups
 * (required sum + optional sum, each summed in double and rounded to
 * float).  Multi-term queries (terms, ids, range, prefix, exists) become a
 * bitset of the segment built from the postings of all matching terms, as
 * Lucene's constant-score rewrite does.  Nothing allocates per document.
 *
 * Top-k skipping (see SeScorer in search_int.h): term scorers bound their
 * scores per postings block from the block's impacts (its competitive
 * (freq, norm) pairs, scored with the term's BM25); once given a minimum
 * competitive score they skip blocks, and docs, that cannot beat it.
 * Conjunctions skip windows where the sum of their scoring clauses' block
 * bounds cannot beat it, and drop a doc as soon as its clause scores so
 * far plus the bounds of the rest cannot.  Disjunctions of such clauses
 * (sum, or dis_max with a tie breaker in [0, 1], whose score is at most
 * the sum) run as the plain heap disjunction until the minimum arrives
 * and then switch to block-max WAND.  The score of a returned doc is
 * computed by the same formulas as without skipping, in double from the
 * same float clause scores; a double sum of a few such floats is exact,
 * so its order does not matter and scores are bit-identical.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "port/pg_bitutils.h"
#include "analysis/analysis.h"
#include "search/search_int.h"

/*
 * Bound comparisons are made on double sums of float bounds, widened by
 * this factor so that rounding (of the sums here and of the scorers' own
 * double sums) can never make a competitive doc look non-competitive.
 */
#define BOUND_SLACK		(1.0 + 1e-9)

/* A float >= d (for bounds handed to a parent). */
static float
bound_up(double d)
{
	float		f;

	if (!(d > 0))
		return 0.0f;
	d *= BOUND_SLACK;
	f = (float) d;
	if ((double) f < d)
		f = nextafterf(f, INFINITY);
	return f;
}

/* ---------------------------------------------------------------------
 * Term
 * ---------------------------------------------------------------------
 */
typedef struct TermScorer
{
	SeScorer	base;
	SePostings *p;
	const uint8 *normv;			/* the field's norms, NULL without */
	uint32		max_doc;
	bool		bm25;
	const SeBM25 *sim;
	float		const_score;
	/* impact window: scores of docs in [wfrom, wupto] are <= wmax */
	int32		wfrom;
	int32		wupto;
	float		wmax;
	/* the same over the skip group: [gfrom, gupto], <= gmax */
	int32		gfrom;
	int32		gupto;
	float		gmax;
	float		min_score;		/* after set_min_score */
	int32		scored_doc;		/* doc whose score is cached, or -1 */
	float		scored;
} TermScorer;

static int32
term_next(SeScorer *s)
{
	TermScorer *t = (TermScorer *) s;

	return s->doc = se_postings_next(t->p);
}

static int32
term_advance(SeScorer *s, int32 target)
{
	TermScorer *t = (TermScorer *) s;

	return s->doc = se_postings_advance(t->p, target);
}

static float
term_score(SeScorer *s)
{
	TermScorer *t = (TermScorer *) s;
	uint8		norm;

	if (!t->bm25)
		return t->const_score;
	if (s->doc == t->scored_doc)
		return t->scored;
	/* fields without norms score as length 1, as Lucene */
	if (t->normv == NULL)
		norm = 1;
	else
		norm = (uint32) s->doc < t->max_doc ? t->normv[s->doc] : 0;
	return se_bm25_score(t->sim, (float) se_postings_freq(t->p), norm);
}

/*
 * The largest score a doc with freq <= max_freq and norm >= min_norm can
 * get: BM25 grows with freq and falls with the norm byte, and the float
 * steps of se_bm25_score are monotonic, so this is exact, not estimated.
 */
static float
term_bound(TermScorer *t, int32 max_freq, uint8 min_norm)
{
	if (!t->bm25)
		return t->const_score;
	return se_bm25_score(t->sim, (float) max_freq, t->normv ? min_norm : 1);
}

/* The best score among competitive (freq, norm) pairs. */
static float
pairs_bound(TermScorer *t, const SeImpact *imp, int n)
{
	float		best = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		float		b = term_bound(t, imp[i].freq, imp[i].norm);

		if (b > best)
			best = b;
	}
	return best;
}

/* Move the impact window to the block that may hold target. */
static inline void
term_window(TermScorer *t, int32 target)
{
	SeImpact	imp[SE_MAX_IMPACTS];
	int			n;

	if (target >= t->wfrom && target <= t->wupto)
		return;
	t->wfrom = target;
	t->wupto = se_postings_advance_shallow(t->p, target);
	n = se_postings_block_impacts(t->p, imp);
	t->wmax = pairs_bound(t, imp, n);
}

/* Move the group window to the skip group that may hold target. */
static inline void
term_group_window(TermScorer *t, int32 target)
{
	SeImpact	imp[SE_MAX_IMPACTS];
	int			n;

	if (target >= t->gfrom && target <= t->gupto)
		return;
	t->gfrom = target;
	t->gupto = se_postings_group_impacts(t->p, target, imp, &n);
	t->gmax = pairs_bound(t, imp, n);
}

static float
term_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	TermScorer *t = (TermScorer *) s;

	term_window(t, target);
	*upto = t->wupto;
	return t->wmax;
}

static float
term_max_group(SeScorer *s, int32 target, int32 *upto)
{
	TermScorer *t = (TermScorer *) s;

	term_group_window(t, target);
	*upto = t->gupto;
	return t->gmax;
}

/*
 * advance() that passes over skip groups, then impact blocks, whose bound
 * is <= min_score.
 */
static int32
term_advance_min(SeScorer *s, int32 target)
{
	TermScorer *t = (TermScorer *) s;

	for (;;)
	{
		int32		doc;

		SE_SEARCH_TICK(1);
		term_group_window(t, target);
		if (t->gmax <= t->min_score)
		{
			se_search_stat_group_skips++;
			if (t->gupto == SE_NO_MORE_DOCS)
				return s->doc = SE_NO_MORE_DOCS;
			target = t->gupto + 1;
			continue;
		}
		term_window(t, target);
		if (t->wmax <= t->min_score)
		{
			if (t->wupto == SE_NO_MORE_DOCS)
				return s->doc = SE_NO_MORE_DOCS;
			target = t->wupto + 1;
			continue;
		}
		doc = se_postings_advance(t->p, target);
		if (doc == SE_NO_MORE_DOCS)
			return s->doc = doc;
		if (doc > t->wupto)
		{
			target = doc;		/* landed in a later block: check it */
			continue;
		}
		/* the doc itself: scored once, the caller gets the cached score */
		s->doc = doc;
		t->scored_doc = -1;
		t->scored = term_score(s);
		if (t->scored > t->min_score)
		{
			t->scored_doc = doc;
			return doc;
		}
		target = doc + 1;
	}
}

static int32
term_next_min(SeScorer *s)
{
	if (s->doc == SE_NO_MORE_DOCS)
		return s->doc;
	return term_advance_min(s, s->doc + 1);
}

static void
term_set_min_score(SeScorer *s, float min)
{
	TermScorer *t = (TermScorer *) s;

	t->min_score = min;
	s->next = term_next_min;
	s->advance = term_advance_min;
}

static void
term_close(SeScorer *s)
{
	TermScorer *t = (TermScorer *) s;

	se_postings_close(t->p);
	pfree(t);
}

static SeScorer *
term_scorer(SeWeight *w, SeSegmentCtx *seg)
{
	SeSegTerm  *st = &w->seg_terms[0][seg->ord];
	TermScorer *t;
	SePostings *p;

	if (!st->found)
		return NULL;
	p = se_postings_open(seg->reader, &st->ti, false);
	if (p == NULL)
		return NULL;
	t = palloc0(sizeof(TermScorer));
	t->base.doc = -1;
	t->base.cost = se_postings_cost(p);
	t->base.next = term_next;
	t->base.advance = term_advance;
	t->base.score = term_score;
	t->base.close = term_close;
	t->p = p;
	t->normv = se_segment_field_has_norms(seg->reader, st->ti.field) ?
		se_segment_norms(seg->reader, st->ti.field) : NULL;
	t->max_doc = se_segment_max_doc(seg->reader);
	t->bm25 = w->bm25;
	t->sim = w->sim;
	t->const_score = w->const_score;
	t->wfrom = 1;				/* empty windows */
	t->wupto = 0;
	t->gfrom = 1;
	t->gupto = 0;
	t->scored_doc = -1;
	/* bounds need non-negative scores (boosts are) */
	if (t->bm25 ? (t->sim->weight >= 0 && !isinf(t->sim->weight)) :
		t->const_score >= 0)
	{
		SeImpact	imp[SE_MAX_IMPACTS];
		int			n = se_postings_block_impacts(p, imp);	/* term-level */

		t->base.max_score = pairs_bound(t, imp, n);
		t->base.max_score_upto = term_max_upto;
		t->base.max_score_group = term_max_group;
		t->base.set_min_score = term_set_min_score;
	}
	return &t->base;
}

/* ---------------------------------------------------------------------
 * All docs, bitset, constant wrapper
 * ---------------------------------------------------------------------
 */
typedef struct AllScorer
{
	SeScorer	base;
	int32		max_doc;
	float		score;
} AllScorer;

static int32
all_advance(SeScorer *s, int32 target)
{
	AllScorer  *a = (AllScorer *) s;

	return s->doc = target < a->max_doc ? target : SE_NO_MORE_DOCS;
}

static int32
all_next(SeScorer *s)
{
	return all_advance(s, s->doc + 1);
}

static float
all_score(SeScorer *s)
{
	return ((AllScorer *) s)->score;
}

static void
simple_close(SeScorer *s)
{
	pfree(s);
}

static SeScorer *
all_scorer(float score, SeSegmentCtx *seg)
{
	AllScorer  *a;

	if (seg->max_doc <= 0)
		return NULL;
	a = palloc0(sizeof(AllScorer));
	a->base.doc = -1;
	a->base.cost = seg->max_doc;
	a->base.next = all_next;
	a->base.advance = all_advance;
	a->base.score = all_score;
	a->base.close = simple_close;
	a->max_doc = seg->max_doc;
	a->score = score;
	return &a->base;
}

typedef struct BitsetScorer
{
	SeScorer	base;
	uint64	   *bits;
	int32		max_doc;
	int32		nwords;
	float		score;
} BitsetScorer;

static int32
bitset_advance(SeScorer *s, int32 target)
{
	BitsetScorer *b = (BitsetScorer *) s;
	int32		word;
	uint64		bits;

	if (target >= b->max_doc)
		return s->doc = SE_NO_MORE_DOCS;
	word = target >> 6;
	bits = b->bits[word] & (~UINT64CONST(0) << (target & 63));
	while (bits == 0)
	{
		if (++word >= b->nwords)
			return s->doc = SE_NO_MORE_DOCS;
		bits = b->bits[word];
	}
	s->doc = word * 64 + pg_rightmost_one_pos64(bits);
	if (s->doc >= b->max_doc)
		s->doc = SE_NO_MORE_DOCS;
	return s->doc;
}

static int32
bitset_next(SeScorer *s)
{
	return bitset_advance(s, s->doc + 1);
}

static float
bitset_score(SeScorer *s)
{
	return ((BitsetScorer *) s)->score;
}

static void
bitset_close(SeScorer *s)
{
	BitsetScorer *b = (BitsetScorer *) s;

	pfree(b->bits);
	pfree(b);
}

typedef struct ConstScorer
{
	SeScorer	base;
	SeScorer   *inner;
	float		score;
} ConstScorer;

static int32
const_next(SeScorer *s)
{
	ConstScorer *c = (ConstScorer *) s;

	return s->doc = c->inner->next(c->inner);
}

static int32
const_advance(SeScorer *s, int32 target)
{
	ConstScorer *c = (ConstScorer *) s;

	return s->doc = c->inner->advance(c->inner, target);
}

static float
const_score(SeScorer *s)
{
	return ((ConstScorer *) s)->score;
}

static void
const_close(SeScorer *s)
{
	ConstScorer *c = (ConstScorer *) s;

	se_scorer_free(c->inner);
	pfree(c);
}

static SeScorer *
const_scorer(SeScorer *inner, float score)
{
	ConstScorer *c = palloc0(sizeof(ConstScorer));

	c->base.doc = -1;
	c->base.cost = inner->cost;
	c->base.next = const_next;
	c->base.advance = const_advance;
	c->base.score = const_score;
	c->base.close = const_close;
	c->inner = inner;
	c->score = score;
	return &c->base;
}

/* ---------------------------------------------------------------------
 * Doc sets of multi-term queries
 * ---------------------------------------------------------------------
 */
static int
term_cmp(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static bool
set_postings_bits(SeSegmentReader *r, const SeTermInfo *ti, uint64 *bits,
				  int32 max_doc)
{
	SePostings *p = se_postings_open(r, ti, false);
	int32		doc;
	bool		any = false;

	if (p == NULL)
		return false;
	while ((doc = se_postings_next(p)) != SE_NO_MORE_DOCS)
	{
		SE_SEARCH_TICK(1);
		if (doc < 0 || doc >= max_doc)
			break;				/* corrupt postings: the reader reports it */
		bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
		any = true;
	}
	se_postings_close(p);
	return any;
}

/* Set the bits of every doc having a value in field f of the segment. */
static bool
set_exists_bits(SeSegmentReader *r, int f, uint64 *bits, int32 max_doc)
{
	bool		any = false;
	int32		doc;

	if (se_segment_field_has_norms(r, f))
	{
		for (doc = 0; doc < max_doc; doc++)
		{
			SE_SEARCH_TICK(1);
			if (se_segment_norm(r, f, doc) != 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
			}
		}
	}
	else if (se_segment_field_dv_type(r, f) == SE_DV_NUMERIC)
	{
		const int64 *vals;

		for (doc = 0; doc < max_doc; doc++)
		{
			SE_SEARCH_TICK(1);
			if (se_segment_numeric_values(r, f, doc, &vals) > 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
			}
		}
	}
	else if (se_segment_field_dv_type(r, f) == SE_DV_SORTED_SET)
	{
		for (doc = 0; doc < max_doc; doc++)
		{
			SE_SEARCH_TICK(1);
			if (se_segment_sorted_count(r, f, doc) > 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
			}
		}
	}
	else
	{
		SeTermsEnum *e = se_segment_terms(r, f, "", 0);
		const char *term;
		int			len;
		SeTermInfo	ti;

		if (e == NULL)
			return false;
		while (se_terms_next(e, &term, &len, &ti))
		{
			SE_SEARCH_TICK(1);
			any |= set_postings_bits(r, &ti, bits, max_doc);
		}
		se_terms_close(e);
	}
	return any;
}

/*
 * Walk the terms of a range, prefix, regexp (from its literal prefix) or
 * case-insensitive match.  With
 * max_terms > 0, stop after that many matching terms and set *over.
 */
static bool
set_enum_bits(SeWeight *w, SeSegmentReader *r, int f, uint64 *bits,
			  int32 max_doc, int32 max_terms, bool *over)
{
	SeTermsEnum *e;
	const char *term;
	int			len;
	SeTermInfo	ti;
	bool		any = false;
	StringInfoData lower;
	bool		ci = w->ds_kind == SE_DS_TERM_CI || w->ds_kind == SE_DS_PREFIX_CI;
	int32		nterms = 0;

	if (w->ds_kind == SE_DS_RANGE)
		e = se_segment_terms(r, f, w->lower ? w->lower : "",
							 w->lower ? w->lower_len : 0);
	else if (w->ds_kind == SE_DS_PREFIX || w->ds_kind == SE_DS_REGEXP)
		e = se_segment_terms(r, f, w->lower, w->lower_len);
	else
		e = se_segment_terms(r, f, "", 0);
	if (e == NULL)
		return false;
	initStringInfo(&lower);
	while (se_terms_next(e, &term, &len, &ti))
	{
		SE_SEARCH_TICK(1);
		if (w->ds_kind == SE_DS_RANGE)
		{
			if (w->lower && !w->lower_inclusive &&
				term_cmp(term, len, w->lower, w->lower_len) == 0)
				continue;
			if (w->upper)
			{
				int			c = term_cmp(term, len, w->upper, w->upper_len);

				if (c > 0 || (c == 0 && !w->upper_inclusive))
					break;
			}
		}
		else if (w->ds_kind == SE_DS_PREFIX || w->ds_kind == SE_DS_REGEXP)
		{
			if (len < w->lower_len || memcmp(term, w->lower, w->lower_len) != 0)
				break;
			if (w->ds_kind == SE_DS_REGEXP && !se_regex_match(w->regex, term, len))
				continue;
		}
		else if (ci)
		{
			resetStringInfo(&lower);
			se_utf8_lower(term, len, &lower);
			if (w->ds_kind == SE_DS_TERM_CI)
			{
				if (term_cmp(lower.data, lower.len, w->lower, w->lower_len) != 0)
					continue;
			}
			else if (lower.len < w->lower_len ||
					 memcmp(lower.data, w->lower, w->lower_len) != 0)
				continue;
		}
		if (max_terms > 0 && ++nterms > max_terms)
		{
			*over = true;
			break;
		}
		any |= set_postings_bits(r, &ti, bits, max_doc);
	}
	se_terms_close(e);
	pfree(lower.data);
	return any;
}

/*
 * A numeric or date range.  Every distinct value is a term, so a wide range
 * over a high-cardinality field (timestamps, prices, ids) would walk one
 * term and one posting list per value.  Walk the terms while that stays
 * cheap; past a budget of max_doc / 32 terms, read the segment's doc values
 * instead: one sequential pass of int64 compares (the values are the same
 * sortable int64s the terms encode), whatever the range's width.
 */
#define DV_RANGE_PIECE 65536		/* docs */

static bool
set_numeric_range_bits(SeWeight *w, SeSegmentReader *r, int f, uint64 *bits,
					   int32 max_doc)
{
	bool		over = false;
	bool		any;
	int64		from;

	if (!se_search_range_doc_values || se_segment_field_dv_type(r, f) != SE_DV_NUMERIC)
		return set_enum_bits(w, r, f, bits, max_doc, 0, NULL);
	any = set_enum_bits(w, r, f, bits, max_doc, Max(16, max_doc / 32), &over);
	if (!over)
		return any;
	memset(bits, 0, sizeof(uint64) * ((max_doc + 63) / 64));
	any = false;
	/* in pieces, to check for interrupts between them */
	for (from = 0; from < max_doc; from += DV_RANGE_PIECE)
	{
		SE_SEARCH_TICK(DV_RANGE_PIECE / 64);
		any |= se_segment_numeric_range_bits(r, f, w->num_lo, w->num_hi, (uint32) from,
											 (uint32) Min(from + DV_RANGE_PIECE, max_doc), bits);
	}
	return any;
}

static SeScorer *
docset_scorer(SeWeight *w, SeSegmentCtx *seg)
{
	SeSegmentReader *r = seg->reader;
	int32		nwords = (seg->max_doc + 63) / 64;
	uint64	   *bits;
	bool		any = false;
	BitsetScorer *b;
	int			i;

	if (seg->max_doc <= 0)
		return NULL;
	bits = palloc0(sizeof(uint64) * Max(1, nwords));
	if (w->ds_kind == SE_DS_EXISTS)
	{
		for (i = 0; i < w->nexist_fields; i++)
		{
			int			f = se_segment_field(r, w->exist_fields[i]);

			if (f >= 0)
				any |= set_exists_bits(r, f, bits, seg->max_doc);
		}
	}
	else
	{
		int			f = se_segment_field(r, w->field);

		if (f >= 0)
		{
			if (w->ds_kind == SE_DS_TERMS)
			{
				for (i = 0; i < w->nterms; i++)
				{
					SeTermInfo	ti;

					SE_SEARCH_TICK(1);
					if (se_segment_seek_exact(r, f, w->terms[i], w->term_lens[i], &ti))
						any |= set_postings_bits(r, &ti, bits, seg->max_doc);
				}
			}
			else if (w->ds_kind == SE_DS_RANGE && w->numeric)
				any = set_numeric_range_bits(w, r, f, bits, seg->max_doc);
			else if (w->ds_kind == SE_DS_GEO)
				any = se_geo_set_bits(w->geo, r, f, bits, seg->max_doc);
			else
				any = set_enum_bits(w, r, f, bits, seg->max_doc, 0, NULL);
		}
	}
	if (!any)
	{
		pfree(bits);
		return NULL;
	}
	b = palloc0(sizeof(BitsetScorer));
	b->base.doc = -1;
	b->base.next = bitset_next;
	b->base.advance = bitset_advance;
	b->base.score = bitset_score;
	b->base.close = bitset_close;
	b->bits = bits;
	b->max_doc = seg->max_doc;
	b->nwords = nwords;
	b->score = w->const_score;
	b->base.cost = 0;
	for (i = 0; i < nwords; i++)
		b->base.cost += pg_popcount64(bits[i]);
	return &b->base;
}

/*
 * Sum of the bounds of subs[0..n) over a common window from target: each
 * sub's bound goes to wb[i], *upto gets the window's end (the first of
 * the subs' ends).  group asks for skip-group windows where a sub has
 * them (max_score_group), else its block window.
 */
static double
window_bounds(SeScorer **subs, int n, int32 target, bool group, int32 *upto,
			  float *wb)
{
	double		sum = 0;
	int			i;

	*upto = SE_NO_MORE_DOCS;
	for (i = 0; i < n; i++)
	{
		SeScorer   *sub = subs[i];
		int32		u;

		wb[i] = group && sub->max_score_group != NULL ?
			sub->max_score_group(sub, target, &u) :
			sub->max_score_upto(sub, target, &u);
		sum += wb[i];
		if (u < *upto)
			*upto = u;
	}
	return sum;
}

/* ---------------------------------------------------------------------
 * Conjunction
 * ---------------------------------------------------------------------
 */
typedef struct ConjScorer
{
	SeScorer	base;
	int			n;
	SeScorer  **subs;			/* ascending cost; subs[0] leads */
	int			nscoring;
	SeScorer  **scoring;
	/* block-max skipping, after set_min_score */
	float		min_score;
	int32		upto;			/* last doc of the bound window, -1 none */
	double		window_max;
	float	   *wbound;			/* per scoring clause, its window bound */
	float	   *wscratch;
} ConjScorer;

static int32
conj_align(ConjScorer *c, int32 doc)
{
	SeScorer   *lead = c->subs[0];
	int			i;

	while (doc != SE_NO_MORE_DOCS)
	{
		bool		aligned = true;

		SE_SEARCH_TICK(1);
		for (i = 1; i < c->n; i++)
		{
			SeScorer   *s = c->subs[i];
			int32		d = s->doc;

			if (d < doc)
				d = s->advance(s, doc);
			if (d > doc)
			{
				doc = lead->advance(lead, d);
				aligned = false;
				break;
			}
		}
		if (aligned)
			break;
	}
	return c->base.doc = doc;
}

static int32
conj_next(SeScorer *s)
{
	ConjScorer *c = (ConjScorer *) s;

	return conj_align(c, c->subs[0]->next(c->subs[0]));
}

static int32
conj_advance(SeScorer *s, int32 target)
{
	ConjScorer *c = (ConjScorer *) s;

	return conj_align(c, c->subs[0]->advance(c->subs[0], target));
}

static float
conj_score(SeScorer *s)
{
	ConjScorer *c = (ConjScorer *) s;
	double		sum = 0;
	int			i;

	for (i = 0; i < c->nscoring; i++)
		sum += c->scoring[i]->score(c->scoring[i]);
	return (float) sum;
}


/*
 * Can the aligned doc beat min_score?  Scores its clauses one by one and
 * gives up once the scores so far plus the window bounds of the clauses
 * not yet scored cannot; conj_score computes a survivor's score again.
 */
static bool
conj_competitive(ConjScorer *c)
{
	double		partial = 0;
	double		rest = c->window_max;
	int			i;

	for (i = 0; i < c->nscoring; i++)
	{
		rest -= c->wbound[i];
		partial += c->scoring[i]->score(c->scoring[i]);
		if ((partial + Max(rest, 0)) * BOUND_SLACK <= c->min_score)
			return false;
	}
	return true;
}

static float
conj_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	ConjScorer *c = (ConjScorer *) s;

	/* (its own scratch: the skipping window must stay intact) */
	return bound_up(window_bounds(c->scoring, c->nscoring, target, false,
								  upto, c->wscratch));
}

static float
conj_max_group(SeScorer *s, int32 target, int32 *upto)
{
	ConjScorer *c = (ConjScorer *) s;

	return bound_up(window_bounds(c->scoring, c->nscoring, target, true,
								  upto, c->wscratch));
}

/* Leapfrog, passing over windows whose bound is <= min_score. */
static int32
conj_advance_min(SeScorer *s, int32 target)
{
	ConjScorer *c = (ConjScorer *) s;

	for (;;)
	{
		int32		doc;

		SE_SEARCH_TICK(1);
		if (target > c->upto)
		{
			int32		gupto;

			/* whole skip groups first */
			if (window_bounds(c->scoring, c->nscoring, target, true, &gupto,
							  c->wscratch) * BOUND_SLACK <= c->min_score)
			{
				se_search_stat_group_skips++;
				if (gupto == SE_NO_MORE_DOCS)
					return s->doc = SE_NO_MORE_DOCS;
				target = gupto + 1;
				continue;
			}
			c->window_max = window_bounds(c->scoring, c->nscoring, target,
										  false, &c->upto, c->wbound);
		}
		if (c->window_max * BOUND_SLACK <= c->min_score)
		{
			if (c->upto == SE_NO_MORE_DOCS)
				return s->doc = SE_NO_MORE_DOCS;
			target = c->upto + 1;
			continue;
		}
		doc = conj_align(c, c->subs[0]->advance(c->subs[0], target));
		if (doc == SE_NO_MORE_DOCS)
			return doc;
		if (doc > c->upto)
		{
			target = doc;		/* beyond the window: check the next one */
			continue;
		}
		if (conj_competitive(c))
			return doc;
		target = doc + 1;
	}
}

static int32
conj_next_min(SeScorer *s)
{
	if (s->doc == SE_NO_MORE_DOCS)
		return s->doc;
	return conj_advance_min(s, s->doc + 1);
}

static void
conj_set_min_score(SeScorer *s, float min)
{
	ConjScorer *c = (ConjScorer *) s;

	c->min_score = min;
	if (s->next != conj_next_min)
	{
		c->upto = -1;
		s->next = conj_next_min;
		s->advance = conj_advance_min;
	}
}

static void
conj_close(SeScorer *s)
{
	ConjScorer *c = (ConjScorer *) s;
	int			i;

	for (i = 0; i < c->n; i++)
		se_scorer_free(c->subs[i]);
	pfree(c->subs);
	pfree(c->scoring);
	pfree(c->wbound);
	pfree(c->wscratch);
	pfree(c);
}

static int
cost_cmp(const void *a, const void *b)
{
	int64		ca = (*(SeScorer *const *) a)->cost;
	int64		cb = (*(SeScorer *const *) b)->cost;

	return ca < cb ? -1 : ca > cb ? 1 : 0;
}

/*
 * Conjunction of subs[0..n); the first nscoring of them contribute to the
 * score.  Takes ownership of the arrays' scorers.
 */
static SeScorer *
conj_scorer(SeScorer **subs, int n, int nscoring)
{
	ConjScorer *c;
	double		max = 0;
	bool		bounded = nscoring > 0;
	int			i;

	if (n == 1)
		return subs[0];			/* a lone filter scores 0 by construction */
	c = palloc0(sizeof(ConjScorer));
	c->base.doc = -1;
	c->base.next = conj_next;
	c->base.advance = conj_advance;
	c->base.score = conj_score;
	c->base.close = conj_close;
	c->n = n;
	c->subs = palloc(sizeof(SeScorer *) * n);
	c->scoring = palloc(sizeof(SeScorer *) * Max(1, nscoring));
	c->wbound = palloc(sizeof(float) * Max(1, nscoring));
	c->wscratch = palloc(sizeof(float) * Max(1, nscoring));
	for (i = 0; i < n; i++)
		c->subs[i] = subs[i];
	for (i = 0; i < nscoring; i++)
	{
		c->scoring[i] = subs[i];
		if (subs[i]->max_score_upto == NULL)
			bounded = false;
		else
			max += subs[i]->max_score;
	}
	c->nscoring = nscoring;
	qsort(c->subs, n, sizeof(SeScorer *), cost_cmp);
	c->base.cost = c->subs[0]->cost;
	if (bounded)
	{
		c->base.max_score = bound_up(max);
		c->base.max_score_upto = conj_max_upto;
		c->base.max_score_group = conj_max_group;
		c->base.set_min_score = conj_set_min_score;
	}
	return &c->base;
}

/* ---------------------------------------------------------------------
 * Disjunction (sum or dis_max) with minimum_should_match
 * ---------------------------------------------------------------------
 */
typedef struct DisjScorer
{
	SeScorer	base;
	int			n;
	SeScorer  **subs;
	SeScorer  **heap;			/* live subs, min-heap on doc */
	int			hsize;
	SeScorer  **matched;		/* subs on base.doc */
	int			nmatched;
	int		   *stack;
	int			msm;
	bool		dismax;
	float		tie;
} DisjScorer;

static void
heap_sift_down(DisjScorer *d, int i)
{
	SeScorer   *node = d->heap[i];

	for (;;)
	{
		int			l = 2 * i + 1;
		int			r = l + 1;
		int			m;

		if (l >= d->hsize)
			break;
		m = (r < d->hsize && d->heap[r]->doc < d->heap[l]->doc) ? r : l;
		if (d->heap[m]->doc >= node->doc)
			break;
		d->heap[i] = d->heap[m];
		i = m;
	}
	d->heap[i] = node;
}

/* Move every sub positioned before target to target or beyond. */
static void
disj_move(DisjScorer *d, int32 target, bool use_advance)
{
	while (d->hsize > 0 && d->heap[0]->doc < target)
	{
		SeScorer   *top = d->heap[0];

		SE_SEARCH_TICK(1);
		if (use_advance)
			top->advance(top, target);
		else
			top->next(top);
		if (top->doc == SE_NO_MORE_DOCS)
		{
			d->heap[0] = d->heap[--d->hsize];
			if (d->hsize == 0)
				break;
		}
		heap_sift_down(d, 0);
	}
}

/* Settle on the first doc >= the heap top matched by at least msm subs. */
static int32
disj_settle(DisjScorer *d)
{
	for (;;)
	{
		int32		doc;
		int			sp = 0;

		if (d->hsize == 0)
		{
			d->nmatched = 0;
			return d->base.doc = SE_NO_MORE_DOCS;
		}
		doc = d->heap[0]->doc;
		/* gather the subtree of heap nodes on doc */
		d->nmatched = 0;
		d->stack[sp++] = 0;
		while (sp > 0)
		{
			int			i = d->stack[--sp];
			int			l = 2 * i + 1;

			d->matched[d->nmatched++] = d->heap[i];
			if (l < d->hsize && d->heap[l]->doc == doc)
				d->stack[sp++] = l;
			if (l + 1 < d->hsize && d->heap[l + 1]->doc == doc)
				d->stack[sp++] = l + 1;
		}
		if (d->nmatched >= d->msm)
			return d->base.doc = doc;
		disj_move(d, doc + 1, false);
	}
}

static int32
disj_next(SeScorer *s)
{
	DisjScorer *d = (DisjScorer *) s;

	disj_move(d, s->doc + 1, false);
	return disj_settle(d);
}

static int32
disj_advance(SeScorer *s, int32 target)
{
	DisjScorer *d = (DisjScorer *) s;

	disj_move(d, target, true);
	return disj_settle(d);
}

static float
disj_score(SeScorer *s)
{
	DisjScorer *d = (DisjScorer *) s;
	int			i;

	if (d->dismax)
	{
		float		max = 0;
		double		others = 0;

		for (i = 0; i < d->nmatched; i++)
		{
			float		sc = d->matched[i]->score(d->matched[i]);

			if (sc >= max)
			{
				others += max;
				max = sc;
			}
			else
				others += sc;
		}
		return (float) (max + others * d->tie);
	}
	else
	{
		double		sum = 0;

		for (i = 0; i < d->nmatched; i++)
			sum += d->matched[i]->score(d->matched[i]);
		return (float) sum;
	}
}

static void
disj_close(SeScorer *s)
{
	DisjScorer *d = (DisjScorer *) s;
	int			i;

	for (i = 0; i < d->n; i++)
		se_scorer_free(d->subs[i]);
	pfree(d->subs);
	pfree(d->heap);
	pfree(d->matched);
	pfree(d->stack);
	pfree(d);
}

/* Set up a heap disjunction in d (zeroed) over subs[0..n). */
static void
disj_init(DisjScorer *d, SeScorer **subs, int n, int msm, bool dismax, float tie)
{
	int			i;

	d->base.doc = -1;
	d->base.next = disj_next;
	d->base.advance = disj_advance;
	d->base.score = disj_score;
	d->base.close = disj_close;
	d->n = n;
	d->subs = palloc(sizeof(SeScorer *) * n);
	d->heap = palloc(sizeof(SeScorer *) * n);
	d->matched = palloc(sizeof(SeScorer *) * n);
	d->stack = palloc(sizeof(int) * (n + 1));
	d->msm = Max(1, msm);
	d->dismax = dismax;
	d->tie = tie;
	d->base.cost = 0;
	for (i = 0; i < n; i++)
	{
		d->subs[i] = subs[i];
		d->heap[i] = subs[i];	/* all on doc -1: already a heap */
		d->base.cost += subs[i]->cost;
	}
	d->hsize = n;
}

static SeScorer *
disj_scorer(SeScorer **subs, int n, int msm, bool dismax, float tie)
{
	DisjScorer *d;

	if (n == 1 && msm <= 1 && !dismax)
		return subs[0];
	d = palloc0(sizeof(DisjScorer));
	disj_init(d, subs, n, msm, dismax, tie);
	return &d->base;
}

/* ---------------------------------------------------------------------
 * Block-max WAND over a disjunction
 * ---------------------------------------------------------------------
 */
typedef struct WandScorer
{
	DisjScorer	d;				/* runs as this heap disjunction until a minimum */
	SeScorer  **order;			/* clauses by doc, during WAND */
	float	   *bound;			/* scratch: block bounds of order[] */
	float		min_score;
} WandScorer;

/* A clause's doc as seen from target: it cannot match before target. */
#define EFF_DOC(s, target)	((s)->doc < (target) ? (target) : (s)->doc)

/*
 * First doc >= target that may score above min_score.  The clauses are
 * kept sorted by doc; the pivot is the first doc where the clauses up to
 * it could reach the minimum with their segment bounds, so docs before it
 * cannot.  The block bounds of the clauses that can match the pivot then
 * decide whether the pivot, and every doc up to the end of the narrowest
 * of their blocks (or the next clause's doc), can be passed over too.
 * Otherwise the pivot is evaluated clause by clause, largest bound first:
 * each is advanced to the pivot and scored there, and the pivot is dropped
 * as soon as the scores so far plus the bounds of the clauses not yet
 * looked at cannot exceed the minimum.  The score of a doc that survives
 * is computed again by wand_score, in clause order, exactly as the heap
 * disjunction would.
 */
static int32
wand_find(WandScorer *w, int32 target)
{
	SeScorer  **o = w->order;
	int			n = w->d.n;

	for (;;)
	{
		double		sum = 0;
		double		rest = 0;
		double		partial = 0;
		int32		pivot = SE_NO_MORE_DOCS;
		int32		upto;
		int32		end;
		int			p = -1;
		int			i;

		if (target == SE_NO_MORE_DOCS)
			return w->d.base.doc = SE_NO_MORE_DOCS;
		SE_SEARCH_TICK(n);
		/* insertion sort by effective doc: nearly sorted already */
		for (i = 1; i < n; i++)
		{
			SeScorer   *x = o[i];
			int32		ex = EFF_DOC(x, target);
			int			j = i - 1;

			while (j >= 0 && EFF_DOC(o[j], target) > ex)
			{
				o[j + 1] = o[j];
				j--;
			}
			o[j + 1] = x;
		}
		for (i = 0; i < n; i++)
		{
			int32		e = EFF_DOC(o[i], target);

			if (e == SE_NO_MORE_DOCS)
				break;
			sum += o[i]->max_score;
			if (sum * BOUND_SLACK > w->min_score)
			{
				p = i;
				pivot = e;
				break;
			}
		}
		if (p < 0)
			return w->d.base.doc = SE_NO_MORE_DOCS;
		while (p + 1 < n && EFF_DOC(o[p + 1], target) == pivot)
			p++;

		/*
		 * Bounds of the clauses that can match the pivot: over their skip
		 * groups first, which may pass over thousands of docs at once, then
		 * over their blocks.
		 */
		{
			bool		skip;

			skip = window_bounds(o, p + 1, pivot, true, &upto, w->bound) *
				BOUND_SLACK <= w->min_score;
			if (skip)
				se_search_stat_group_skips++;
			else
			{
				rest = window_bounds(o, p + 1, pivot, false, &upto, w->bound);
				skip = rest * BOUND_SLACK <= w->min_score;
			}
			if (skip)
			{
				int32		next = upto == SE_NO_MORE_DOCS ? upto : upto + 1;

				if (p + 1 < n && EFF_DOC(o[p + 1], target) < next)
					next = EFF_DOC(o[p + 1], target);
				target = next;
				continue;
			}
		}

		/* the window: the clauses after p cannot match before their docs */
		end = upto;
		if (p + 1 < n && EFF_DOC(o[p + 1], target) <= end)
			end = EFF_DOC(o[p + 1], target) - 1;

		/* evaluate the pivot, largest block bound first */
		for (i = 1; i <= p; i++)
		{
			SeScorer   *x = o[i];
			float		bx = w->bound[i];
			int			j = i - 1;

			while (j >= 0 && w->bound[j] < bx)
			{
				o[j + 1] = o[j];
				w->bound[j + 1] = w->bound[j];
				j--;
			}
			o[j + 1] = x;
			w->bound[j + 1] = bx;
		}

		/*
		 * When the other clauses' bounds cannot reach the minimum without
		 * the first one, a competitive doc of the window holds it: walk
		 * that clause alone (as MaxScore walks its essential clauses) and
		 * stop at the first doc whose own score plus the others' bounds
		 * can, instead of pivoting on every doc of every clause.
		 */
		if (p > 0 && (rest - w->bound[0]) * BOUND_SLACK <= w->min_score)
		{
			SeScorer   *lead = o[0];
			double		others = Max(rest - w->bound[0], 0);
			int32		d = lead->doc < pivot ? lead->advance(lead, pivot) : lead->doc;

			while (d <= end && d != SE_NO_MORE_DOCS &&
				   (lead->score(lead) + others) * BOUND_SLACK <= w->min_score)
			{
				SE_SEARCH_TICK(1);
				d = lead->next(lead);
			}
			if (d > end || d == SE_NO_MORE_DOCS)
			{
				target = end >= SE_NO_MORE_DOCS - 1 ? SE_NO_MORE_DOCS : end + 1;
				continue;
			}
			if (d > pivot)
			{
				target = d;		/* pivot again there */
				continue;
			}
		}
		for (i = 0; i <= p; i++)
		{
			SeScorer   *x = o[i];

			rest -= w->bound[i];
			if (x->doc < pivot)
				x->advance(x, pivot);
			if (x->doc == pivot)
				partial += x->score(x);
			if ((partial + Max(rest, 0)) * BOUND_SLACK <= w->min_score)
				break;
		}
		if (i > p)
			return w->d.base.doc = pivot;
		target = pivot + 1;
	}
}

static int32
wand_next(SeScorer *s)
{
	if (s->doc == SE_NO_MORE_DOCS)
		return s->doc;
	return wand_find((WandScorer *) s, s->doc + 1);
}

static int32
wand_advance(SeScorer *s, int32 target)
{
	if (s->doc >= target)
		return s->doc;
	return wand_find((WandScorer *) s, target);
}

/* The heap disjunction's formulas, over the clauses on the doc. */
static float
wand_score(SeScorer *s)
{
	DisjScorer *d = (DisjScorer *) s;
	int			i;

	if (d->dismax)
	{
		float		max = 0;
		double		others = 0;

		for (i = 0; i < d->n; i++)
		{
			float		sc;

			if (d->subs[i]->doc != s->doc)
				continue;
			sc = d->subs[i]->score(d->subs[i]);
			if (sc >= max)
			{
				others += max;
				max = sc;
			}
			else
				others += sc;
		}
		return (float) (max + others * d->tie);
	}
	else
	{
		double		sum = 0;

		for (i = 0; i < d->n; i++)
			if (d->subs[i]->doc == s->doc)
				sum += d->subs[i]->score(d->subs[i]);
		return (float) sum;
	}
}

/* Sum of the clauses' bounds (also bounds dis_max with tie <= 1). */
static float
wand_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	DisjScorer *d = (DisjScorer *) s;
	double		sum = 0;
	int			i;

	*upto = SE_NO_MORE_DOCS;
	for (i = 0; i < d->n; i++)
	{
		SeScorer   *sub = d->subs[i];
		int32		u;

		if (sub->doc == SE_NO_MORE_DOCS)
			continue;
		sum += sub->max_score_upto(sub, target, &u);
		if (u < *upto)
			*upto = u;
	}
	return bound_up(sum);
}

/* The heap is left behind; the clauses keep their positions. */
static void
wand_set_min_score(SeScorer *s, float min)
{
	WandScorer *w = (WandScorer *) s;

	w->min_score = min;
	if (s->next != wand_next)
	{
		memcpy(w->order, w->d.subs, sizeof(SeScorer *) * w->d.n);
		s->next = wand_next;
		s->advance = wand_advance;
		s->score = wand_score;
	}
}

static void
wand_close(SeScorer *s)
{
	WandScorer *w = (WandScorer *) s;

	pfree(w->order);
	pfree(w->bound);
	disj_close(s);				/* the clauses, the heap, w itself */
}

/*
 * A scoring disjunction: block-max WAND when every clause can bound its
 * scores, msm <= 1 and (dis_max) 0 <= tie <= 1; else the heap disjunction.
 */
static SeScorer *
scoring_disj_scorer(SeScorer **subs, int n, int msm, bool dismax, float tie)
{
	WandScorer *w;
	double		max = 0;
	int			i;

	if (n < 2 || msm > 1 || (dismax && !(tie >= 0 && tie <= 1)))
		return disj_scorer(subs, n, msm, dismax, tie);
	for (i = 0; i < n; i++)
	{
		if (subs[i]->max_score_upto == NULL)
			return disj_scorer(subs, n, msm, dismax, tie);
		max += subs[i]->max_score;
	}
	w = palloc0(sizeof(WandScorer));
	disj_init(&w->d, subs, n, msm, dismax, tie);
	w->order = palloc(sizeof(SeScorer *) * n);
	w->bound = palloc(sizeof(float) * n);
	w->d.base.close = wand_close;
	w->d.base.max_score = bound_up(max);
	w->d.base.max_score_upto = wand_max_upto;
	w->d.base.set_min_score = wand_set_min_score;
	return &w->d.base;
}

/* ---------------------------------------------------------------------
 * Filtered: the docs of another scorer that a check accepts
 * ---------------------------------------------------------------------
 */
static int32
filtered_settle(SeFilteredScorer *f, int32 doc)
{
	while (doc != SE_NO_MORE_DOCS && !f->accept(f, doc))
	{
		SE_SEARCH_TICK(1);
		doc = f->inner->next(f->inner);
	}
	return f->base.doc = doc;
}

static int32
filtered_next(SeScorer *s)
{
	SeFilteredScorer *f = (SeFilteredScorer *) s;

	return filtered_settle(f, f->inner->next(f->inner));
}

static int32
filtered_advance(SeScorer *s, int32 target)
{
	SeFilteredScorer *f = (SeFilteredScorer *) s;

	return filtered_settle(f, f->inner->advance(f->inner, target));
}

void
se_filtered_scorer_init(SeFilteredScorer *f, SeScorer *inner,
						bool (*accept) (SeFilteredScorer *f, int32 doc))
{
	f->base.doc = -1;
	f->base.cost = inner->cost;
	f->base.next = filtered_next;
	f->base.advance = filtered_advance;
	f->inner = inner;
	f->accept = accept;
}

/* ---------------------------------------------------------------------
 * Required + excluded, required + optional
 * ---------------------------------------------------------------------
 */
typedef struct PairScorer
{
	SeFilteredScorer f;			/* f.inner: the required part */
	SeScorer   *other;
	/* required + optional, after set_min_score */
	float		min_score;
	int32		upto;			/* window end, -1 none */
	float		req_max;		/* window bounds of req and opt */
	float		opt_max;
} PairScorer;

/* required - excluded: a doc the excluded scorer is not on */
static bool
excl_accept(SeFilteredScorer *f, int32 doc)
{
	SeScorer   *excl = ((PairScorer *) f)->other;

	if (excl->doc < doc)
		excl->advance(excl, doc);
	return excl->doc != doc;
}

static float
excl_score(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	return p->f.inner->score(p->f.inner);
}

static int32
opt_next(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	return s->doc = p->f.inner->next(p->f.inner);
}

static int32
opt_advance(SeScorer *s, int32 target)
{
	PairScorer *p = (PairScorer *) s;

	return s->doc = p->f.inner->advance(p->f.inner, target);
}

/* Lucene ReqOptSumScorer: float sum of the two parts. */
static float
opt_score(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;
	SeScorer   *opt = p->other;
	float		score = p->f.inner->score(p->f.inner);

	if (opt->doc < s->doc)
		opt->advance(opt, s->doc);
	if (opt->doc == s->doc)
		score += opt->score(opt);
	return score;
}

static void
pair_close(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	se_scorer_free(p->f.inner);
	se_scorer_free(p->other);
	pfree(p);
}

/* Bound of req + opt over [target, *upto]. */
static float
opt_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	PairScorer *p = (PairScorer *) s;
	int32		u1,
				u2;
	double		sum = p->f.inner->max_score_upto(p->f.inner, target, &u1);

	sum += p->other->max_score_upto(p->other, target, &u2);
	*upto = Min(u1, u2);
	return bound_up(sum);
}

/*
 * Required docs, passing over windows where req + opt cannot beat the
 * minimum and docs whose required score plus the optional bound cannot;
 * the rest are checked with their exact score (opt_score's float sum).
 */
static int32
opt_advance_min(SeScorer *s, int32 target)
{
	PairScorer *p = (PairScorer *) s;
	SeScorer   *opt = p->other;

	for (;;)
	{
		int32		doc;
		float		score;

		SE_SEARCH_TICK(1);
		if (target == SE_NO_MORE_DOCS)
			return s->doc = SE_NO_MORE_DOCS;
		if (target > p->upto)
		{
			int32		u1,
						u2;

			p->req_max = p->f.inner->max_score_upto(p->f.inner, target, &u1);
			p->opt_max = opt->max_score_upto(opt, target, &u2);
			p->upto = Min(u1, u2);
		}
		if (((double) p->req_max + p->opt_max) * BOUND_SLACK <= p->min_score)
		{
			if (p->upto == SE_NO_MORE_DOCS)
				return s->doc = SE_NO_MORE_DOCS;
			target = p->upto + 1;
			continue;
		}
		doc = p->f.inner->advance(p->f.inner, target);
		if (doc == SE_NO_MORE_DOCS)
			return s->doc = doc;
		if (doc > p->upto)
		{
			target = doc;
			continue;
		}
		s->doc = doc;
		score = p->f.inner->score(p->f.inner);
		if (((double) score + p->opt_max) * BOUND_SLACK > p->min_score)
		{
			if (opt->doc < doc)
				opt->advance(opt, doc);
			if (opt->doc == doc)
				score += opt->score(opt);
			if (score > p->min_score)
				return doc;
		}
		target = doc + 1;
	}
}

static int32
opt_next_min(SeScorer *s)
{
	if (s->doc == SE_NO_MORE_DOCS)
		return s->doc;
	return opt_advance_min(s, s->doc + 1);
}

static void
opt_set_min_score(SeScorer *s, float min)
{
	PairScorer *p = (PairScorer *) s;

	p->min_score = min;
	if (s->next != opt_next_min)
	{
		p->upto = -1;
		s->next = opt_next_min;
		s->advance = opt_advance_min;
	}
}

/* Excluded docs only go away: the required scorer's bounds hold. */
static float
excl_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	PairScorer *p = (PairScorer *) s;

	return p->f.inner->max_score_upto(p->f.inner, target, upto);
}

static void
excl_set_min_score(SeScorer *s, float min)
{
	PairScorer *p = (PairScorer *) s;

	p->f.inner->set_min_score(p->f.inner, min);
}

static SeScorer *
pair_scorer(SeScorer *req, SeScorer *other, bool exclude)
{
	PairScorer *p = palloc0(sizeof(PairScorer));

	se_filtered_scorer_init(&p->f, req, excl_accept);
	if (!exclude)
	{
		p->f.base.next = opt_next;
		p->f.base.advance = opt_advance;
	}
	p->f.base.score = exclude ? excl_score : opt_score;
	p->f.base.close = pair_close;
	p->other = other;
	if (exclude && req->max_score_upto != NULL)
	{
		p->f.base.max_score = req->max_score;
		p->f.base.max_score_upto = excl_max_upto;
	}
	if (exclude && req->set_min_score != NULL)
		p->f.base.set_min_score = excl_set_min_score;
	if (!exclude && req->max_score_upto != NULL && other->max_score_upto != NULL)
	{
		p->f.base.max_score = bound_up((double) req->max_score + other->max_score);
		p->f.base.max_score_upto = opt_max_upto;
		p->f.base.set_min_score = opt_set_min_score;
	}
	return &p->f.base;
}

/* ---------------------------------------------------------------------
 * Boolean composition
 * ---------------------------------------------------------------------
 */
static void
free_scorers(SeScorer **subs, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		se_scorer_free(subs[i]);
}

static SeScorer *
bool_scorer(SeWeight *w, SeSegmentCtx *seg)
{
	int			nreq_max = w->nmust + w->nfilter;
	SeScorer  **req = palloc(sizeof(SeScorer *) * (nreq_max + 2));
	SeScorer  **opt = palloc(sizeof(SeScorer *) * (w->nshould + 1));
	SeScorer  **excl = palloc(sizeof(SeScorer *) * (w->nmust_not + 1));
	int			nreq = 0,
				nscoring,
				nopt = 0,
				nexcl = 0;
	SeScorer   *main = NULL;
	int			i;

	/* required clauses: a missing one means no match in this segment */
	for (i = 0; i < w->nmust; i++)
	{
		SeScorer   *s = se_scorer_create(w->must[i], seg);

		if (s == NULL)
			goto nomatch;
		req[nreq++] = s;
	}
	nscoring = w->scoring ? nreq : 0;
	for (i = 0; i < w->nfilter; i++)
	{
		SeScorer   *s = se_scorer_create(w->filter[i], seg);

		if (s == NULL)
			goto nomatch;
		req[nreq++] = s;
	}
	/* optional clauses do nothing for filters unless msm requires them */
	if (w->scoring || w->msm > 0 || nreq == 0)
	{
		for (i = 0; i < w->nshould; i++)
		{
			SeScorer   *s = se_scorer_create(w->should[i], seg);

			if (s != NULL)
				opt[nopt++] = s;
		}
	}
	if (nopt < w->msm)
		goto nomatch;
	if (nreq == 0 && nopt == 0)
		goto nomatch;
	for (i = 0; i < w->nmust_not; i++)
	{
		SeScorer   *s = se_scorer_create(w->must_not[i], seg);

		if (s != NULL)
			excl[nexcl++] = s;
	}

	if (nopt == 0)
		main = conj_scorer(req, nreq, nscoring);
	else if (nreq == 0)
		main = w->scoring ? scoring_disj_scorer(opt, nopt, w->msm, false, 0) :
			disj_scorer(opt, nopt, w->msm, false, 0);
	else if (w->msm > 0)
	{
		SeScorer   *pair[2];

		pair[0] = conj_scorer(req, nreq, nscoring);
		pair[1] = disj_scorer(opt, nopt, w->msm, false, 0);
		main = conj_scorer(pair, 2, 2);
	}
	else
		main = pair_scorer(conj_scorer(req, nreq, nscoring),
						   w->scoring ? scoring_disj_scorer(opt, nopt, 1, false, 0) :
						   disj_scorer(opt, nopt, 1, false, 0), false);
	if (nexcl > 0)
		main = pair_scorer(main, disj_scorer(excl, nexcl, 1, false, 0), true);
	pfree(req);
	pfree(opt);
	pfree(excl);
	return main;

nomatch:
	free_scorers(req, nreq);
	free_scorers(opt, nopt);
	free_scorers(excl, nexcl);
	pfree(req);
	pfree(opt);
	pfree(excl);
	return NULL;
}

static SeScorer *
dismax_scorer(SeWeight *w, SeSegmentCtx *seg)
{
	SeScorer  **subs = palloc(sizeof(SeScorer *) * (w->nshould + 1));
	int			n = 0;
	int			i;
	SeScorer   *s;

	for (i = 0; i < w->nshould; i++)
	{
		s = se_scorer_create(w->should[i], seg);
		if (s != NULL)
			subs[n++] = s;
	}
	if (n == 0)
		s = NULL;
	else if (w->scoring)
		s = scoring_disj_scorer(subs, n, 1, true, w->tie_breaker);
	else
		s = disj_scorer(subs, n, 1, true, w->tie_breaker);
	pfree(subs);
	return s;
}

SeScorer *
se_scorer_create(SeWeight *w, SeSegmentCtx *seg)
{
	switch (w->kind)
	{
		case SE_W_NONE:
			return NULL;
		case SE_W_ALL:
			return all_scorer(w->const_score, seg);
		case SE_W_TERM:
			return term_scorer(w, seg);
		case SE_W_PHRASE:
			return se_phrase_scorer_create(w, seg);
		case SE_W_BOOL:
			return bool_scorer(w, seg);
		case SE_W_DISMAX:
			return dismax_scorer(w, seg);
		case SE_W_CONST:
			{
				SeScorer   *inner = se_scorer_create(w->inner, seg);

				return inner ? const_scorer(inner, w->const_score) : NULL;
			}
		case SE_W_DOCSET:
			return docset_scorer(w, seg);
		case SE_W_FUNCTION:
			return se_function_scorer_create(w, seg);
		case SE_W_TERMS_SET:
			return se_terms_set_scorer_create(w, seg);
		case SE_W_NESTED:
			return se_nested_scorer_create(w, seg);
	}
	return NULL;
}

void
se_scorer_free(SeScorer *s)
{
	if (s != NULL)
		s->close(s);
}
