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
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "port/pg_bitutils.h"
#include "analysis/analysis.h"
#include "search/search_int.h"

/* ---------------------------------------------------------------------
 * Term
 * ---------------------------------------------------------------------
 */
typedef struct TermScorer
{
	SeScorer	base;
	SePostings *p;
	SeSegmentReader *r;
	int			field;
	bool		norms;
	bool		bm25;
	const SeBM25 *sim;
	float		const_score;
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
	/* fields without norms score as length 1, as Lucene */
	norm = t->norms ? se_segment_norm(t->r, t->field, s->doc) : 1;
	return se_bm25_score(t->sim, (float) se_postings_freq(t->p), norm);
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
	t->r = seg->reader;
	t->field = st->ti.field;
	t->norms = se_segment_field_has_norms(seg->reader, t->field);
	t->bm25 = w->bm25;
	t->sim = w->sim;
	t->const_score = w->const_score;
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
			if (se_segment_norm(r, f, doc) != 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
			}
	}
	else if (se_segment_field_dv_type(r, f) == SE_DV_NUMERIC)
	{
		const int64 *vals;

		for (doc = 0; doc < max_doc; doc++)
			if (se_segment_numeric_values(r, f, doc, &vals) > 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
			}
	}
	else if (se_segment_field_dv_type(r, f) == SE_DV_SORTED_SET)
	{
		for (doc = 0; doc < max_doc; doc++)
			if (se_segment_sorted_count(r, f, doc) > 0)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
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
			any |= set_postings_bits(r, &ti, bits, max_doc);
		se_terms_close(e);
	}
	return any;
}

/* Walk the terms of a range, prefix or case-insensitive match. */
static bool
set_enum_bits(SeWeight *w, SeSegmentReader *r, int f, uint64 *bits,
			  int32 max_doc)
{
	SeTermsEnum *e;
	const char *term;
	int			len;
	SeTermInfo	ti;
	bool		any = false;
	StringInfoData lower;
	bool		ci = w->ds_kind == SE_DS_TERM_CI || w->ds_kind == SE_DS_PREFIX_CI;

	if (w->ds_kind == SE_DS_RANGE)
		e = se_segment_terms(r, f, w->lower ? w->lower : "",
							 w->lower ? w->lower_len : 0);
	else if (w->ds_kind == SE_DS_PREFIX)
		e = se_segment_terms(r, f, w->lower, w->lower_len);
	else
		e = se_segment_terms(r, f, "", 0);
	if (e == NULL)
		return false;
	initStringInfo(&lower);
	while (se_terms_next(e, &term, &len, &ti))
	{
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
		else if (w->ds_kind == SE_DS_PREFIX)
		{
			if (len < w->lower_len || memcmp(term, w->lower, w->lower_len) != 0)
				break;
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
		any |= set_postings_bits(r, &ti, bits, max_doc);
	}
	se_terms_close(e);
	pfree(lower.data);
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

					if (se_segment_seek_exact(r, f, w->terms[i], w->term_lens[i], &ti))
						any |= set_postings_bits(r, &ti, bits, seg->max_doc);
				}
			}
			else
				any = set_enum_bits(w, r, f, bits, seg->max_doc);
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
} ConjScorer;

static int32
conj_align(ConjScorer *c, int32 doc)
{
	SeScorer   *lead = c->subs[0];
	int			i;

	while (doc != SE_NO_MORE_DOCS)
	{
		bool		aligned = true;

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

static void
conj_close(SeScorer *s)
{
	ConjScorer *c = (ConjScorer *) s;
	int			i;

	for (i = 0; i < c->n; i++)
		se_scorer_free(c->subs[i]);
	pfree(c->subs);
	pfree(c->scoring);
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
	for (i = 0; i < n; i++)
		c->subs[i] = subs[i];
	for (i = 0; i < nscoring; i++)
		c->scoring[i] = subs[i];
	c->nscoring = nscoring;
	qsort(c->subs, n, sizeof(SeScorer *), cost_cmp);
	c->base.cost = c->subs[0]->cost;
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

static SeScorer *
disj_scorer(SeScorer **subs, int n, int msm, bool dismax, float tie)
{
	DisjScorer *d;
	int			i;

	if (n == 1 && msm <= 1 && !dismax)
		return subs[0];
	d = palloc0(sizeof(DisjScorer));
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
	return &d->base;
}

/* ---------------------------------------------------------------------
 * Required + excluded, required + optional
 * ---------------------------------------------------------------------
 */
typedef struct PairScorer
{
	SeScorer	base;
	SeScorer   *req;
	SeScorer   *other;
} PairScorer;

static int32
excl_check(PairScorer *p, int32 doc)
{
	SeScorer   *excl = p->other;

	while (doc != SE_NO_MORE_DOCS)
	{
		if (excl->doc < doc)
			excl->advance(excl, doc);
		if (excl->doc != doc)
			break;
		doc = p->req->next(p->req);
	}
	return p->base.doc = doc;
}

static int32
excl_next(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	return excl_check(p, p->req->next(p->req));
}

static int32
excl_advance(SeScorer *s, int32 target)
{
	PairScorer *p = (PairScorer *) s;

	return excl_check(p, p->req->advance(p->req, target));
}

static float
excl_score(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	return p->req->score(p->req);
}

static int32
opt_next(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;

	return s->doc = p->req->next(p->req);
}

static int32
opt_advance(SeScorer *s, int32 target)
{
	PairScorer *p = (PairScorer *) s;

	return s->doc = p->req->advance(p->req, target);
}

/* Lucene ReqOptSumScorer: float sum of the two parts. */
static float
opt_score(SeScorer *s)
{
	PairScorer *p = (PairScorer *) s;
	SeScorer   *opt = p->other;
	float		score = p->req->score(p->req);

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

	se_scorer_free(p->req);
	se_scorer_free(p->other);
	pfree(p);
}

static SeScorer *
pair_scorer(SeScorer *req, SeScorer *other, bool exclude)
{
	PairScorer *p = palloc0(sizeof(PairScorer));

	p->base.doc = -1;
	p->base.cost = req->cost;
	p->base.next = exclude ? excl_next : opt_next;
	p->base.advance = exclude ? excl_advance : opt_advance;
	p->base.score = exclude ? excl_score : opt_score;
	p->base.close = pair_close;
	p->req = req;
	p->other = other;
	return &p->base;
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
		main = disj_scorer(opt, nopt, w->msm, false, 0);
	else if (w->msm > 0)
	{
		SeScorer   *pair[2];

		pair[0] = conj_scorer(req, nreq, nscoring);
		pair[1] = disj_scorer(opt, nopt, w->msm, false, 0);
		main = conj_scorer(pair, 2, 2);
	}
	else
		main = pair_scorer(conj_scorer(req, nreq, nscoring),
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
	s = n == 0 ? NULL : disj_scorer(subs, n, 1, true, w->tie_breaker);
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
	}
	return NULL;
}

void
se_scorer_free(SeScorer *s)
{
	if (s != NULL)
		s->close(s);
}
