/*-------------------------------------------------------------------------
 *
 * phrase.c
 *	  Phrase scorer: exact and sloppy phrase matching over positions.
 *
 * The candidate docs are the conjunction of the terms' postings; each
 * candidate's phrase frequency is then computed from positions with the
 * semantics of Lucene 9's phrase matchers, because the frequency feeds
 * BM25 and must agree with Elasticsearch:
 *   - exact (slop 0): the number of start positions at which every term
 *     sits at its query offset;
 *   - sloppy: the positions of all terms advance through a priority queue
 *     ordered by (position - offset); each minimal window whose spread
 *     ("match length") is <= slop contributes 1 / (1 + match length).
 *     Terms repeated in the phrase form groups whose members must not
 *     occupy the same document position.  The queue is the same binary
 *     heap as Lucene's so ties resolve identically.
 *
 * Positions are read only for candidates, docs holding every term.  For
 * top-k (set_min_score), exact phrases also skip by score: a doc's phrase
 * frequency is at most each term's frequency in it, so each term's block
 * impacts, scored with the phrase's BM25, bound the phrase over that
 * block, and the smallest such bound holds for a window of docs; windows
 * that cannot beat the minimum are passed over, and so is a candidate
 * whose smallest term frequency cannot, before any position is read.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/search_int.h"

/*
 * A query position's postings: one term's, or (MultiPhraseQuery) the union
 * of several terms' as Lucene's UnionPostingsEnum: every doc of any, the
 * freq their sum, the positions merged.
 */
typedef struct PpPostings
{
	SePostings *one;			/* NULL: the union of alt */
	SePostings **alt;
	int			nalt;
	int32		doc;
	int32		loaded;			/* the doc whose positions pos holds */
	int		   *pos;
	int			npos;
	int			cap;
	int			upto;
} PpPostings;

static int32
u_doc(PpPostings *u)
{
	return u->one ? se_postings_doc(u->one) : u->doc;
}

static int32
u_min_doc(PpPostings *u)
{
	int32		m = SE_NO_MORE_DOCS;
	int			i;

	for (i = 0; i < u->nalt; i++)
		m = Min(m, se_postings_doc(u->alt[i]));
	return u->doc = m;
}

static int32
u_next(PpPostings *u)
{
	int			i;

	if (u->one)
		return se_postings_next(u->one);
	for (i = 0; i < u->nalt; i++)
		if (se_postings_doc(u->alt[i]) == u->doc)
			(void) se_postings_next(u->alt[i]);
	return u_min_doc(u);
}

static int32
u_advance(PpPostings *u, int32 target)
{
	int			i;

	if (u->one)
		return se_postings_advance(u->one, target);
	for (i = 0; i < u->nalt; i++)
		if (se_postings_doc(u->alt[i]) < target)
			(void) se_postings_advance(u->alt[i], target);
	return u_min_doc(u);
}

static int
int_cmp(const void *a, const void *b)
{
	int			x = *(const int *) a,
				y = *(const int *) b;

	return (x > y) - (x < y);
}

/* The union's positions in its current doc, read once per doc */
static void
u_load(PpPostings *u)
{
	int			i,
				k;

	if (u->loaded == u->doc)
		return;
	u->npos = 0;
	u->upto = 0;
	for (i = 0; i < u->nalt; i++)
	{
		int			f;

		if (se_postings_doc(u->alt[i]) != u->doc)
			continue;
		f = se_postings_freq(u->alt[i]);
		if (u->npos + f > u->cap)
		{
			u->cap = Max(16, (u->npos + f) * 2);
			u->pos = u->pos ? repalloc(u->pos, sizeof(int) * u->cap) :
				palloc(sizeof(int) * u->cap);
		}
		for (k = 0; k < f; k++)
			u->pos[u->npos++] = se_postings_next_position(u->alt[i]);
	}
	qsort(u->pos, u->npos, sizeof(int), int_cmp);
	u->loaded = u->doc;
}

static int32
u_freq(PpPostings *u)
{
	if (u->one)
		return se_postings_freq(u->one);
	u_load(u);
	return u->npos;
}

static int32
u_next_position(PpPostings *u)
{
	if (u->one)
		return se_postings_next_position(u->one);
	u_load(u);
	return u->upto < u->npos ? u->pos[u->upto++] : -1;
}

static int64
u_cost(PpPostings *u)
{
	int64		c = 0;
	int			i;

	if (u->one)
		return se_postings_cost(u->one);
	for (i = 0; i < u->nalt; i++)
		c += se_postings_cost(u->alt[i]);
	return c;
}

static void
u_close(PpPostings *u)
{
	int			i;

	if (u->one)
		se_postings_close(u->one);
	for (i = 0; i < u->nalt; i++)
		se_postings_close(u->alt[i]);
}

typedef struct PhrasePos
{
	PpPostings *p;
	int			offset;			/* position in the query */
	int			ord;			/* index in the query */
	int			position;		/* doc position - offset */
	int			count;			/* positions left in the doc */
	int			rpt_group;		/* repetition group, -1 if none */
	int			rpt_ind;		/* index within its group */
	/* exact matcher state */
	int			freq;
	int			upto;
	int			pos;
} PhrasePos;

typedef struct PhraseScorer
{
	SeScorer	base;
	int			n;
	PhrasePos  *pps;
	PhrasePos **by_cost;		/* conjunction order, cheapest first */
	SeSegmentReader *r;
	int			field;
	bool		norms;
	bool		bm25;
	const SeBM25 *sim;
	int			slop;
	float		freq;			/* phrase frequency of the current doc */

	/* score window (exact phrases): docs in [wfrom, wupto] score <= wmax */
	const uint8 *normv;
	uint32		max_doc;
	int32		wfrom;
	int32		wupto;
	float		wmax;
	float		min_score;		/* after set_min_score */

	/* sloppy matcher */
	PhrasePos **heap;			/* 1-based binary heap */
	int			hsize;
	int			end;
	int			match_length;
	bool		positioned;
	bool		checked_rpts;
	bool		has_rpts;
	int			ngroups;
	PhrasePos ***groups;
	int		   *group_sizes;
	PhrasePos **rpt_stack;
	bool	   *rpt_bits;
} PhraseScorer;

/* ---------------------------------------------------------------------
 * Exact phrases
 * ---------------------------------------------------------------------
 */
static bool
exact_advance_position(PhrasePos *pp, int target)
{
	while (pp->pos < target)
	{
		SE_SEARCH_TICK(1);
		if (pp->upto == pp->freq)
			return false;
		pp->pos = u_next_position(pp->p);
		pp->upto++;
	}
	return true;
}

/* Number of aligned occurrences; stops at the first when first_only. */
static float
exact_freq(PhraseScorer *ps, bool first_only)
{
	PhrasePos  *lead = &ps->pps[0];
	int			count = 0;
	int			i;

	for (i = 0; i < ps->n; i++)
	{
		ps->pps[i].freq = u_freq(ps->pps[i].p);
		ps->pps[i].pos = -1;
		ps->pps[i].upto = 0;
	}
	for (;;)
	{
		bool		aligned;

		if (lead->upto >= lead->freq)
			break;
		SE_SEARCH_TICK(1);
		lead->pos = u_next_position(lead->p);
		lead->upto++;
		for (;;)
		{
			int			phrase_pos = lead->pos - lead->offset;

			aligned = true;
			for (i = 1; i < ps->n; i++)
			{
				PhrasePos  *pp = &ps->pps[i];
				int			expected = phrase_pos + pp->offset;

				if (!exact_advance_position(pp, expected))
					return (float) count;
				if (pp->pos != expected)
				{
					if (!exact_advance_position(lead, pp->pos - pp->offset + lead->offset))
						return (float) count;
					aligned = false;
					break;
				}
			}
			if (aligned)
				break;
		}
		count++;
		if (first_only)
			break;
	}
	return (float) count;
}

/* ---------------------------------------------------------------------
 * Sloppy phrases
 * ---------------------------------------------------------------------
 */
static bool
pp_less(const PhrasePos *a, const PhrasePos *b)
{
	if (a->position == b->position)
	{
		if (a->offset == b->offset)
			return a->ord < b->ord;
		return a->offset < b->offset;
	}
	return a->position < b->position;
}

static void
heap_add(PhraseScorer *ps, PhrasePos *pp)
{
	int			i = ++ps->hsize;
	int			j = i >> 1;

	while (j > 0 && pp_less(pp, ps->heap[j]))
	{
		ps->heap[i] = ps->heap[j];
		i = j;
		j >>= 1;
	}
	ps->heap[i] = pp;
}

static PhrasePos *
heap_pop(PhraseScorer *ps)
{
	PhrasePos  *result;
	PhrasePos  *node;
	int			i = 1,
				j,
				k;

	if (ps->hsize == 0)
		return NULL;
	result = ps->heap[1];
	ps->heap[1] = ps->heap[ps->hsize];
	ps->heap[ps->hsize] = NULL;
	ps->hsize--;
	if (ps->hsize == 0)
		return result;
	node = ps->heap[1];
	j = 2;
	k = 3;
	if (k <= ps->hsize && pp_less(ps->heap[k], ps->heap[j]))
		j = k;
	while (j <= ps->hsize && pp_less(ps->heap[j], node))
	{
		ps->heap[i] = ps->heap[j];
		i = j;
		j = i << 1;
		k = j + 1;
		if (k <= ps->hsize && pp_less(ps->heap[k], ps->heap[j]))
			j = k;
	}
	ps->heap[i] = node;
	return result;
}

static bool
pp_next_position(PhrasePos *pp)
{
	if (pp->count-- > 0)
	{
		SE_SEARCH_TICK(1);
		pp->position = u_next_position(pp->p) - pp->offset;
		return true;
	}
	return false;
}

static void
pp_first_position(PhrasePos *pp)
{
	pp->count = u_freq(pp->p);
	pp_next_position(pp);
}

static bool
advance_pp(PhraseScorer *ps, PhrasePos *pp)
{
	if (!pp_next_position(pp))
		return false;
	if (pp->position > ps->end)
		ps->end = pp->position;
	return true;
}

static void
fill_queue(PhraseScorer *ps)
{
	int			i;

	ps->hsize = 0;
	for (i = 0; i < ps->n; i++)
	{
		PhrasePos  *pp = &ps->pps[i];

		if (pp->position > ps->end)
			ps->end = pp->position;
		heap_add(ps, pp);
	}
}

/* Members of a group start on distinct positions: k-th is advanced k times. */
static bool
advance_repeat_groups(PhraseScorer *ps)
{
	int			g,
				j,
				k;

	for (g = 0; g < ps->ngroups; g++)
	{
		PhrasePos **rg = ps->groups[g];

		for (j = 1; j < ps->group_sizes[g]; j++)
			for (k = 0; k < j; k++)
				if (!pp_next_position(rg[j]))
					return false;
	}
	return true;
}

/* The weight's terms at query position ord: [*first, *first + count) */
static int
position_terms(const SeWeight *w, int ord, int *first)
{
	int			nalt = w->nlast_alts > 1 ? w->nlast_alts : 1;

	*first = ord;
	return ord == w->nterms - nalt ? nalt : 1;
}

/* Positions a and b share a term (a union shares any of its terms) */
static bool
same_term(PhraseScorer *ps, int a, int b, SeWeight *w)
{
	int			fa,
				fb,
				na = position_terms(w, a, &fa),
				nb = position_terms(w, b, &fb),
				i,
				j;

	for (i = fa; i < fa + na; i++)
		for (j = fb; j < fb + nb; j++)
			if (w->term_lens[i] == w->term_lens[j] &&
				memcmp(w->terms[i], w->terms[j], w->term_lens[i]) == 0)
				return true;
	return false;
}

/* Group the phrase's repeated terms, each group sorted by query offset. */
static void
find_repeat_groups(PhraseScorer *ps, SeWeight *w)
{
	int			i,
				j;

	ps->groups = palloc0(sizeof(PhrasePos **) * ps->n);
	ps->group_sizes = palloc0(sizeof(int) * ps->n);
	ps->ngroups = 0;
	for (i = 0; i < ps->n; i++)
		ps->pps[i].rpt_group = -1;
	for (i = 0; i < ps->n; i++)
	{
		PhrasePos  *pp = &ps->pps[i];

		if (pp->rpt_group >= 0)
			continue;
		SE_SEARCH_TICK(ps->n - i);
		for (j = i + 1; j < ps->n; j++)
		{
			PhrasePos  *pp2 = &ps->pps[j];
			int			g;

			if (pp2->rpt_group >= 0 || pp2->offset == pp->offset ||
				!same_term(ps, i, j, w))
				continue;
			g = pp->rpt_group;
			if (g < 0)
			{
				g = ps->ngroups++;
				pp->rpt_group = g;
				ps->groups[g] = palloc(sizeof(PhrasePos *) * ps->n);
				ps->groups[g][ps->group_sizes[g]++] = pp;
			}
			pp2->rpt_group = g;
			ps->groups[g][ps->group_sizes[g]++] = pp2;
		}
	}
	for (i = 0; i < ps->ngroups; i++)
	{
		PhrasePos **rg = ps->groups[i];
		int			n = ps->group_sizes[i];
		int			a,
					b;

		/* stable insertion sort by offset */
		for (a = 1; a < n; a++)
		{
			PhrasePos  *x = rg[a];

			SE_SEARCH_TICK(a);
			for (b = a - 1; b >= 0 && rg[b]->offset > x->offset; b--)
				rg[b + 1] = rg[b];
			rg[b + 1] = x;
		}
		for (a = 0; a < n; a++)
			rg[a]->rpt_ind = a;
	}
	ps->has_rpts = ps->ngroups > 0;
	if (ps->has_rpts)
	{
		ps->rpt_stack = palloc(sizeof(PhrasePos *) * (ps->n + 1));
		ps->rpt_bits = palloc0(sizeof(bool) * (ps->n + 1));
	}
}

static bool
sloppy_init(PhraseScorer *ps, SeWeight *w)
{
	int			i;

	ps->end = PG_INT32_MIN;
	for (i = 0; i < ps->n; i++)
		pp_first_position(&ps->pps[i]);
	if (!ps->checked_rpts)
	{
		ps->checked_rpts = true;
		find_repeat_groups(ps, w);
	}
	if (ps->has_rpts && !advance_repeat_groups(ps))
		return false;
	fill_queue(ps);
	return true;
}

static int
tp_pos(const PhrasePos *pp)
{
	return pp->position + pp->offset;
}

static int
collide(PhraseScorer *ps, PhrasePos *pp)
{
	int			tp = tp_pos(pp);
	PhrasePos **rg = ps->groups[pp->rpt_group];
	int			n = ps->group_sizes[pp->rpt_group];
	int			i;

	for (i = 0; i < n; i++)
		if (rg[i] != pp && tp_pos(rg[i]) == tp)
			return rg[i]->rpt_ind;
	return -1;
}

static PhrasePos *
lesser(PhrasePos *a, PhrasePos *b)
{
	if (a->position < b->position ||
		(a->position == b->position && a->offset < b->offset))
		return a;
	return b;
}

/*
 * pp was just advanced; if it now shares a doc position with a member of
 * its group, advance the lesser of the two until no collision remains,
 * then re-queue the members that moved while in the queue.
 */
static bool
advance_rpts(PhraseScorer *ps, PhrasePos *pp)
{
	PhrasePos **rg;
	int			gsize;
	int			k0,
				k,
				n = 0,
				nset = 0,
				i;

	if (pp->rpt_group < 0)
		return true;
	rg = ps->groups[pp->rpt_group];
	gsize = ps->group_sizes[pp->rpt_group];
	memset(ps->rpt_bits, 0, sizeof(bool) * gsize);
	k0 = pp->rpt_ind;
	while ((k = collide(ps, pp)) >= 0)
	{
		SE_SEARCH_TICK(gsize);
		pp = lesser(pp, rg[k]);
		if (!advance_pp(ps, pp))
			return false;
		if (k != k0 && !ps->rpt_bits[k])
		{
			ps->rpt_bits[k] = true;
			nset++;
		}
	}
	while (nset > 0)
	{
		PhrasePos  *pp2 = heap_pop(ps);

		if (pp2 == NULL)
			break;
		ps->rpt_stack[n++] = pp2;
		if (pp2->rpt_group >= 0 && pp2->rpt_ind < gsize &&
			ps->rpt_bits[pp2->rpt_ind])
		{
			ps->rpt_bits[pp2->rpt_ind] = false;
			nset--;
		}
	}
	for (i = n - 1; i >= 0; i--)
		heap_add(ps, ps->rpt_stack[i]);
	return true;
}

static bool
sloppy_next_match(PhraseScorer *ps)
{
	PhrasePos  *pp;
	int			next;

	if (!ps->positioned)
		return false;
	pp = heap_pop(ps);
	ps->match_length = ps->end - pp->position;
	next = ps->heap[1]->position;
	while (advance_pp(ps, pp))
	{
		if (ps->has_rpts && !advance_rpts(ps, pp))
			break;
		if (pp->position > next)
		{
			/* done minimizing the current window */
			heap_add(ps, pp);
			if (ps->match_length <= ps->slop)
				return true;
			pp = heap_pop(ps);
			next = ps->heap[1]->position;
			ps->match_length = ps->end - pp->position;
		}
		else
		{
			int			ml = ps->end - pp->position;

			if (ml < ps->match_length)
				ps->match_length = ml;
		}
	}
	ps->positioned = false;
	return ps->match_length <= ps->slop;
}

static float
sloppy_freq(PhraseScorer *ps, SeWeight *w, bool first_only)
{
	float		freq;

	ps->positioned = sloppy_init(ps, w);
	ps->match_length = PG_INT32_MAX;
	if (!sloppy_next_match(ps))
		return 0.0f;
	freq = 1.0f / (1.0f + (float) ps->match_length);
	if (first_only)
		return freq;
	while (sloppy_next_match(ps))
		freq += 1.0f / (1.0f + (float) ps->match_length);
	return freq;
}

/* ---------------------------------------------------------------------
 * The scorer
 * ---------------------------------------------------------------------
 */
typedef struct PhraseScorerHolder
{
	PhraseScorer ps;
	SeWeight   *w;
} PhraseScorerHolder;

static bool
phrase_matches(PhraseScorerHolder *h)
{
	PhraseScorer *ps = &h->ps;
	bool		first_only = !ps->bm25;

	if (ps->slop == 0)
		ps->freq = exact_freq(ps, first_only);
	else
		ps->freq = sloppy_freq(ps, h->w, first_only);
	return ps->freq > 0;
}

/* Leapfrog the terms' postings to the next doc >= that of the lead. */
static int32
phrase_align(PhraseScorer *ps, int32 doc)
{
	PpPostings *lead = ps->by_cost[0]->p;
	int			i;

	while (doc != SE_NO_MORE_DOCS)
	{
		bool		aligned = true;

		SE_SEARCH_TICK(1);
		for (i = 1; i < ps->n; i++)
		{
			PpPostings *p = ps->by_cost[i]->p;
			int32		d = u_doc(p);

			if (d < doc)
				d = u_advance(p, doc);
			if (d > doc)
			{
				doc = u_advance(lead, d);
				aligned = false;
				break;
			}
		}
		if (aligned)
			break;
	}
	return doc;
}

static int32
phrase_settle(PhraseScorerHolder *h, int32 doc)
{
	PhraseScorer *ps = &h->ps;
	PpPostings *lead = ps->by_cost[0]->p;

	for (;;)
	{
		doc = phrase_align(ps, doc);
		if (doc == SE_NO_MORE_DOCS)
			break;
		SE_SEARCH_TICK(ps->n);	/* the candidate's terms are positioned */
		if (phrase_matches(h))
			break;
		doc = u_next(lead);
	}
	return ps->base.doc = doc;
}

static int32
phrase_next(SeScorer *s)
{
	PhraseScorerHolder *h = (PhraseScorerHolder *) s;

	return phrase_settle(h, u_next(h->ps.by_cost[0]->p));
}

static int32
phrase_advance(SeScorer *s, int32 target)
{
	PhraseScorerHolder *h = (PhraseScorerHolder *) s;

	return phrase_settle(h, u_advance(h->ps.by_cost[0]->p, target));
}

/* ---------------------------------------------------------------------
 * Score bounds of exact phrases
 * ---------------------------------------------------------------------
 */
static inline uint8
phrase_norm(PhraseScorer *ps, int32 doc)
{
	if (ps->normv == NULL)
		return 1;				/* as phrase_score: length 1 without norms */
	return (uint32) doc < ps->max_doc ? ps->normv[doc] : 0;
}

/* Best phrase score a term's (freq, norm) pairs allow. */
static float
pairs_bound(PhraseScorer *ps, const SeImpact *imp, int n)
{
	float		best = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		float		b = se_bm25_score(ps->sim, (float) imp[i].freq,
									  ps->normv ? imp[i].norm : 1);

		if (b > best)
			best = b;
	}
	return best;
}

/* Bound over [target, *upto]: the smallest of the terms' block bounds. */
static float
phrase_window_bound(PhraseScorer *ps, int32 target, int32 *upto)
{
	SeImpact	imp[SE_MAX_IMPACTS];
	float		bound = 0;
	int			i;

	*upto = SE_NO_MORE_DOCS;
	SE_SEARCH_TICK(ps->n);
	for (i = 0; i < ps->n; i++)
	{
		int32		u = se_postings_advance_shallow(ps->pps[i].p->one, target);
		int			n = se_postings_block_impacts(ps->pps[i].p->one, imp);
		float		b = pairs_bound(ps, imp, n);

		if (i == 0 || b < bound)
			bound = b;
		if (u < *upto)
			*upto = u;
	}
	return bound;
}

static inline void
phrase_window(PhraseScorer *ps, int32 target)
{
	if (target >= ps->wfrom && target <= ps->wupto)
		return;
	ps->wfrom = target;
	ps->wmax = phrase_window_bound(ps, target, &ps->wupto);
}

static float
phrase_max_upto(SeScorer *s, int32 target, int32 *upto)
{
	PhraseScorer *ps = (PhraseScorer *) s;

	phrase_window(ps, target);
	*upto = ps->wupto;
	return ps->wmax;
}

/* advance() passing over windows and candidates that cannot beat the minimum. */
static int32
phrase_advance_min(SeScorer *s, int32 target)
{
	PhraseScorerHolder *h = (PhraseScorerHolder *) s;
	PhraseScorer *ps = &h->ps;
	PpPostings *lead = ps->by_cost[0]->p;

	for (;;)
	{
		int32		doc;
		int32		minf = PG_INT32_MAX;
		int			i;

		SE_SEARCH_TICK(1);
		if (target == SE_NO_MORE_DOCS)
			return s->doc = SE_NO_MORE_DOCS;
		phrase_window(ps, target);
		if (ps->wmax <= ps->min_score)
		{
			if (ps->wupto == SE_NO_MORE_DOCS)
				return s->doc = SE_NO_MORE_DOCS;
			target = ps->wupto + 1;
			continue;
		}
		doc = phrase_align(ps, u_advance(lead, target));
		if (doc == SE_NO_MORE_DOCS)
			return s->doc = doc;
		if (doc > ps->wupto)
		{
			target = doc;
			continue;
		}
		/* the phrase freq is at most the smallest term freq */
		for (i = 0; i < ps->n; i++)
			minf = Min(minf, u_freq(ps->pps[i].p));
		if (se_bm25_score(ps->sim, (float) minf, phrase_norm(ps, doc)) > ps->min_score &&
			phrase_matches(h))
			return s->doc = doc;
		target = doc + 1;
	}
}

static int32
phrase_next_min(SeScorer *s)
{
	if (s->doc == SE_NO_MORE_DOCS)
		return s->doc;
	return phrase_advance_min(s, s->doc + 1);
}

static void
phrase_set_min_score(SeScorer *s, float min)
{
	PhraseScorer *ps = (PhraseScorer *) s;

	ps->min_score = min;
	s->next = phrase_next_min;
	s->advance = phrase_advance_min;
}

static float
phrase_score(SeScorer *s)
{
	PhraseScorer *ps = (PhraseScorer *) s;
	uint8		norm;

	if (!ps->bm25)
		return 0.0f;
	norm = ps->norms ? se_segment_norm(ps->r, ps->field, s->doc) : 1;
	return se_bm25_score(ps->sim, ps->freq, norm);
}

float
se_phrase_scorer_freq(SeScorer *s)
{
	return ((PhraseScorer *) s)->freq;
}

static void
phrase_close(SeScorer *s)
{
	PhraseScorer *ps = (PhraseScorer *) s;
	int			i;

	for (i = 0; i < ps->n; i++)
		if (ps->pps[i].p != NULL)
			u_close(ps->pps[i].p);
	for (i = 0; i < ps->ngroups; i++)
		pfree(ps->groups[i]);
	if (ps->groups)
		pfree(ps->groups);
	if (ps->group_sizes)
		pfree(ps->group_sizes);
	if (ps->rpt_stack)
		pfree(ps->rpt_stack);
	if (ps->rpt_bits)
		pfree(ps->rpt_bits);
	pfree(ps->heap);
	pfree(ps->by_cost);
	pfree(ps->pps);
	pfree(ps);
}

static int
pp_cost_cmp(const void *a, const void *b)
{
	int64		ca = u_cost((*(PhrasePos *const *) a)->p);
	int64		cb = u_cost((*(PhrasePos *const *) b)->p);

	return ca < cb ? -1 : ca > cb ? 1 : 0;
}

SeScorer *
se_phrase_scorer_create(SeWeight *w, SeSegmentCtx *seg)
{
	PhraseScorerHolder *h;
	PhraseScorer *ps;
	int			field = -1;
	int			npos = w->nterms - (w->nlast_alts > 1 ? w->nlast_alts - 1 : 0);
	bool		unions = w->nlast_alts > 1;
	int			i,
				k;

	/* each position needs a term in the segment (a union: any of its) */
	for (i = 0; i < npos; i++)
	{
		int			first,
					n = position_terms(w, i, &first),
					found = 0;

		for (k = first; k < first + n; k++)
			if (w->seg_terms[k][seg->ord].found)
			{
				found++;
				field = w->seg_terms[k][seg->ord].ti.field;
			}
		if (found == 0)
			return NULL;
	}
	if (field < 0 ||
		se_segment_field_index_options(seg->reader, field) < SE_IDX_POSITIONS)
		return NULL;

	h = palloc0(sizeof(PhraseScorerHolder));
	h->w = w;
	ps = &h->ps;
	ps->n = npos;
	ps->pps = palloc0(sizeof(PhrasePos) * ps->n);
	ps->by_cost = palloc(sizeof(PhrasePos *) * ps->n);
	ps->heap = palloc0(sizeof(PhrasePos *) * (ps->n + 1));
	for (i = 0; i < ps->n; i++)
	{
		PhrasePos  *pp = &ps->pps[i];
		int			first,
					n = position_terms(w, i, &first);
		bool		failed = false;

		SE_SEARCH_TICK(1);

		pp->p = palloc0(sizeof(PpPostings));
		pp->p->loaded = -1;
		pp->p->doc = -1;
		pp->offset = w->positions[first];
		pp->ord = i;
		pp->rpt_group = -1;
		ps->by_cost[i] = pp;
		if (n == 1)
			pp->p->one = se_postings_open(seg->reader, &w->seg_terms[first][seg->ord].ti, true);
		else
		{
			pp->p->alt = palloc(sizeof(SePostings *) * n);
			for (k = first; k < first + n; k++)
			{
				SePostings *alt;

				if (!w->seg_terms[k][seg->ord].found)
					continue;
				alt = se_postings_open(seg->reader, &w->seg_terms[k][seg->ord].ti, true);
				if (alt == NULL)
				{
					failed = true;
					break;
				}
				pp->p->alt[pp->p->nalt++] = alt;
			}
		}
		if (n == 1 ? pp->p->one == NULL : failed)
		{
			phrase_close(&ps->base);
			return NULL;
		}
	}
	qsort(ps->by_cost, ps->n, sizeof(PhrasePos *), pp_cost_cmp);
	ps->base.doc = -1;
	ps->base.cost = u_cost(ps->by_cost[0]->p);
	ps->base.next = phrase_next;
	ps->base.advance = phrase_advance;
	ps->base.score = phrase_score;
	ps->base.close = phrase_close;
	ps->r = seg->reader;
	ps->field = field;
	ps->norms = se_segment_field_has_norms(seg->reader, field);
	ps->bm25 = w->bm25;
	ps->sim = w->sim;
	ps->slop = w->slop;
	ps->normv = ps->norms ? se_segment_norms(seg->reader, field) : NULL;
	ps->max_doc = se_segment_max_doc(seg->reader);
	ps->wfrom = 1;				/* empty window */
	ps->wupto = 0;
	/* score skipping: exact phrases with BM25 and a non-negative weight */
	if (ps->slop == 0 && ps->bm25 && ps->sim->weight >= 0 &&
		!isinf(ps->sim->weight) && !unions)
	{
		SeImpact	imp[SE_MAX_IMPACTS];

		for (i = 0; i < ps->n; i++)
		{
			int			n = se_postings_block_impacts(ps->pps[i].p->one, imp);	/* term-level */
			float		b = pairs_bound(ps, imp, n);

			if (i == 0 || b < ps->base.max_score)
				ps->base.max_score = b;
		}
		ps->base.max_score_upto = phrase_max_upto;
		ps->base.set_min_score = phrase_set_min_score;
	}
	return &ps->base;
}
