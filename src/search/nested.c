/*-------------------------------------------------------------------------
 *
 * nested.c
 *	  Nested documents at search time: the per-segment bitsets of the block
 *	  join, the "nested" query and its scorer (Lucene's
 *	  ToParentBlockJoinQuery).
 *
 * A document with nested objects is a block in its segment (written by
 * mapping/docparse.c): every nested object is a hidden doc carrying its
 * path as a term of _nested_path, placed before its parent, the root doc
 * last.  The docs of a parent level are found from those terms: the root
 * docs are the docs without any _nested_path term, the docs of path p the
 * postings of p.  A child c's parent is the first parent-level doc after
 * c; a parent's children are the docs between the previous parent-level
 * doc and it.  Top-level searches see only root docs: the snapshot hands
 * them live docs with the nested docs cleared (SeSearchShard.live_docs)
 * and keeps the true ones (all_live_docs) for the nested scorer.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "port/pg_bitutils.h"
#include "search/search_int.h"

static inline size_t
nwords(uint32 max_doc)
{
	return ((size_t) max_doc + 63) / 64;
}

/* OR the postings of ti into bits. */
static void
or_postings(SeSegmentReader *r, const SeTermInfo *ti, uint64 *bits, uint32 max_doc)
{
	SePostings *p = se_postings_open(r, ti, false);
	int32		doc;

	while ((doc = se_postings_next(p)) != SE_NO_MORE_DOCS)
	{
		SE_SEARCH_TICK(1);
		if ((uint32) doc < max_doc)
			bits[doc >> 6] |= (uint64) 1 << (doc & 63);
	}
	se_postings_close(p);
}

uint64 *
se_nested_docs_bits(SeSegmentReader *r)
{
	int			field = se_segment_field(r, SE_NESTED_PATH_FIELD);
	uint32		max_doc = se_segment_max_doc(r);
	uint64	   *bits;
	SeTermsEnum *e;
	const char *term;
	int			len;
	SeTermInfo	ti;

	if (field < 0)
		return NULL;
	bits = palloc0(sizeof(uint64) * Max(nwords(max_doc), 1));
	e = se_segment_terms(r, field, "", 0);
	while (se_terms_next(e, &term, &len, &ti))
		or_postings(r, &ti, bits, max_doc);
	se_terms_close(e);
	return bits;
}

uint64 *
se_nested_path_bits(SeSegmentReader *r, const char *path)
{
	int			field = se_segment_field(r, SE_NESTED_PATH_FIELD);
	uint32		max_doc = se_segment_max_doc(r);
	uint64	   *bits;
	SeTermInfo	ti;

	if (field < 0 || !se_segment_seek_exact(r, field, path, strlen(path), &ti))
		return NULL;
	bits = palloc0(sizeof(uint64) * Max(nwords(max_doc), 1));
	or_postings(r, &ti, bits, max_doc);
	return bits;
}

uint64 *
se_nested_top_live(const uint64 *live, const uint64 *nested, uint32 max_doc)
{
	size_t		n = nwords(max_doc);
	uint64	   *out = palloc(sizeof(uint64) * Max(n, 1));
	size_t		i;

	for (i = 0; i < n; i++)
		out[i] = (live ? live[i] : ~UINT64CONST(0)) & ~nested[i];
	if (n > 0 && max_doc % 64 != 0)
		out[n - 1] &= ((uint64) 1 << (max_doc % 64)) - 1;
	return out;
}

static inline bool
bit_get(const uint64 *bits, int32 doc)
{
	return (bits[doc >> 6] >> (doc & 63)) & 1;
}

/* First set bit >= from, or SE_NO_MORE_DOCS. */
static int32
next_set(const uint64 *bits, int32 from, int32 max_doc)
{
	int32		word;
	uint64		w;

	if (from >= max_doc)
		return SE_NO_MORE_DOCS;
	word = from >> 6;
	w = bits[word] & (~UINT64CONST(0) << (from & 63));
	while (w == 0)
	{
		if (++word >= (int32) nwords(max_doc))
			return SE_NO_MORE_DOCS;
		w = bits[word];
	}
	from = word * 64 + pg_rightmost_one_pos64(w);
	return from < max_doc ? from : SE_NO_MORE_DOCS;
}

/* Last set bit <= from, or -1. */
static int32
prev_set(const uint64 *bits, int32 from)
{
	int32		word;
	uint64		w;

	if (from < 0)
		return -1;
	word = from >> 6;
	w = bits[word] & (~UINT64CONST(0) >> (63 - (from & 63)));
	while (w == 0)
	{
		if (--word < 0)
			return -1;
		w = bits[word];
	}
	return word * 64 + pg_leftmost_one_pos64(w);
}

/* ---------------------------------------------------------------------
 * The query
 * ---------------------------------------------------------------------
 */

SeQuery *
se_nested_query_parse(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[nested] query malformed, no start_object after query name");
		return NULL;
	}
	q = se_query_new(SE_Q_NESTED);
	q->score_mode = SE_COMB_AVG;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "path") == 0)
		{
			if (v->type != SE_JSON_STRING)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[nested] path doesn't support values of type: %s",
							 se_json_type_name(v->type));
				return NULL;
			}
			q->field = pstrdup(v->u.s.str);
		}
		else if (strcmp(k, "query") == 0)
		{
			if ((q->inner = se_query_parse(v, depth + 1, err)) == NULL)
				return NULL;
		}
		else if (strcmp(k, "score_mode") == 0)
		{
			const char *m = v->type == SE_JSON_STRING ? v->u.s.str : "";

			if (strcmp(m, "avg") == 0)
				q->score_mode = SE_COMB_AVG;
			else if (strcmp(m, "max") == 0)
				q->score_mode = SE_COMB_MAX;
			else if (strcmp(m, "min") == 0)
				q->score_mode = SE_COMB_MIN;
			else if (strcmp(m, "sum") == 0)
				q->score_mode = SE_COMB_SUM;
			else if (strcmp(m, "none") == 0)
				q->score_mode = SE_COMB_REPLACE;	/* "none": parents score 0 */
			else
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "No score mode for child query [%s] found", m);
				return NULL;
			}
		}
		else if (strcmp(k, "ignore_unmapped") == 0)
		{
			if (!se_query_json_bool(v, &q->lenient))
			{
				se_error_set(err, 400, "parsing_exception",
							 "[nested] failed to parse field [ignore_unmapped]");
				return NULL;
			}
		}
		else if (strcmp(k, "boost") == 0)
		{
			if (v->type != SE_JSON_NUMBER)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[nested] failed to parse field [boost]");
				return NULL;
			}
			q->boost = (float) (v->u.n.is_int ? (double) v->u.n.i : v->u.n.d);
		}
		else if (strcmp(k, "inner_hits") == 0)
			q->value = v;		/* kept for the fetch phase (inner hits) */
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[nested] query does not support [%s]", k);
			return NULL;
		}
	}
	if (q->field == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "[nested] requires 'path' field");
		return NULL;
	}
	if (q->inner == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "[nested] requires 'query' field");
		return NULL;
	}
	return q;
}

/* ---------------------------------------------------------------------
 * The scorer: children of the inner weight joined to their parents
 * ---------------------------------------------------------------------
 */
typedef struct NestedScorer
{
	SeScorer	base;
	SeScorer   *inner;
	uint64	   *child_bits;		/* docs of the path */
	uint64	   *parent_bits;	/* docs of the parent level */
	const uint64 *live;			/* the segment's true live docs (NULL: all) */
	int32		max_doc;
	SeCombine	mode;
	float		score;
} NestedScorer;

/* Is the inner scorer's doc a live child of the path? */
static inline bool
good_child(NestedScorer *n, int32 doc)
{
	return bit_get(n->child_bits, doc) && se_livedocs_get(n->live, doc);
}

/*
 * From the inner scorer's position (a doc >= the first child of the next
 * candidate block), the next parent with a matching child and its score.
 */
static int32
nested_collect(NestedScorer *n)
{
	SeScorer   *in = n->inner;
	int32		doc = in->doc;

	for (;;)
	{
		int32		parent;
		double		score = 0;
		int			freq = 0;

		while (doc != SE_NO_MORE_DOCS && !good_child(n, doc))
		{
			SE_SEARCH_TICK(1);
			doc = in->next(in);
		}
		if (doc == SE_NO_MORE_DOCS)
			return n->base.doc = SE_NO_MORE_DOCS;
		parent = next_set(n->parent_bits, doc + 1, n->max_doc);
		if (parent == SE_NO_MORE_DOCS)
			return n->base.doc = SE_NO_MORE_DOCS;	/* orphans: cannot happen */
		/* Lucene's BlockJoinScorer: children summed in double, in doc order */
		while (doc < parent)
		{
			SE_SEARCH_TICK(1);
			if (good_child(n, doc))
			{
				float		cs = n->mode == SE_COMB_REPLACE ? 0.0f : in->score(in);

				if (freq == 0)
					score = cs;
				else if (n->mode == SE_COMB_MAX)
					score = Max(score, cs);
				else if (n->mode == SE_COMB_MIN)
					score = Min(score, cs);
				else if (n->mode != SE_COMB_REPLACE)
					score += cs;
				freq++;
			}
			doc = in->next(in);
		}
		if (n->mode == SE_COMB_AVG)
			score /= freq;
		n->score = (float) score;
		return n->base.doc = parent;
	}
}

static int32
nested_advance(SeScorer *s, int32 target)
{
	NestedScorer *n = (NestedScorer *) s;
	int32		start;

	if (target >= n->max_doc)
		return s->doc = SE_NO_MORE_DOCS;
	/* the children of parents >= target come after the parent before it */
	start = prev_set(n->parent_bits, target - 1) + 1;
	if (n->inner->doc < start)
		n->inner->advance(n->inner, start);
	return nested_collect(n);
}

static int32
nested_next(SeScorer *s)
{
	NestedScorer *n = (NestedScorer *) s;

	if (n->inner->doc < 0)
		n->inner->next(n->inner);
	return nested_collect(n);
}

static float
nested_score(SeScorer *s)
{
	return ((NestedScorer *) s)->score;
}

static void
nested_close(SeScorer *s)
{
	NestedScorer *n = (NestedScorer *) s;

	se_scorer_free(n->inner);
	pfree(n->child_bits);
	pfree(n->parent_bits);
	pfree(n);
}

/*
 * The parent-level docs of w's path in the segment: the root docs when the
 * path is a top-level nested field, else the docs of the enclosing path.
 */
static uint64 *
parent_level_bits(SeWeight *w, SeSegmentCtx *seg)
{
	uint64	   *bits;

	if (w->nested_parent != NULL)
	{
		bits = se_nested_path_bits(seg->reader, w->nested_parent);
		return bits ? bits : palloc0(sizeof(uint64) * Max(nwords(seg->max_doc), 1));
	}
	bits = se_nested_docs_bits(seg->reader);
	if (bits == NULL)
		return NULL;
	{
		uint64	   *top = se_nested_top_live(NULL, bits, seg->max_doc);

		pfree(bits);
		return top;
	}
}

static const uint64 *
true_live(SeWeight *w, SeSegmentCtx *seg)
{
	const SeSearchShard *sh = w->nested_shard;

	if (sh == NULL)
		return NULL;
	if (sh->all_live_docs != NULL)
		return sh->all_live_docs[seg->ord];
	return sh->live_docs ? sh->live_docs[seg->ord] : NULL;
}

SeScorer *
se_nested_scorer_create(SeWeight *w, SeSegmentCtx *seg)
{
	uint64	   *child = se_nested_path_bits(seg->reader, w->field);
	uint64	   *parent;
	SeScorer   *inner;
	NestedScorer *n;

	if (child == NULL)
		return NULL;
	if ((parent = parent_level_bits(w, seg)) == NULL ||
		(inner = se_scorer_create(w->inner, seg)) == NULL)
	{
		pfree(child);
		if (parent)
			pfree(parent);
		return NULL;
	}
	n = palloc0(sizeof(NestedScorer));
	n->base.doc = -1;
	n->base.cost = inner->cost;
	n->base.next = nested_next;
	n->base.advance = nested_advance;
	n->base.score = nested_score;
	n->base.close = nested_close;
	n->inner = inner;
	n->child_bits = child;
	n->parent_bits = parent;
	n->live = true_live(w, seg);
	n->max_doc = seg->max_doc;
	n->mode = w->score_mode;
	return &n->base;
}

/*
 * The children of parent doc in seg that w's inner query matches: their
 * count, the first and last doc of the block's children, and the best
 * scoring one (-1 when none), for explain.
 */
int
se_nested_children(SeWeight *w, SeSegmentCtx *seg, int32 parent,
				   int32 *first, int32 *last, int32 *best)
{
	uint64	   *child = se_nested_path_bits(seg->reader, w->field);
	uint64	   *pbits = child ? parent_level_bits(w, seg) : NULL;
	const uint64 *live = true_live(w, seg);
	SeScorer   *inner;
	float		best_score = -1;
	int			count = 0;
	int32		doc;

	*first = *last = *best = -1;
	if (pbits == NULL || parent < 0 || parent >= seg->max_doc || !bit_get(pbits, parent))
		return 0;
	*first = prev_set(pbits, parent - 1) + 1;
	*last = parent - 1;
	inner = se_scorer_create(w->inner, seg);
	if (inner == NULL)
		return 0;
	for (doc = inner->advance(inner, *first); doc < parent; doc = inner->next(inner))
	{
		if (!bit_get(child, doc) || !se_livedocs_get(live, doc))
			continue;
		count++;
		if (inner->score(inner) > best_score)
		{
			best_score = inner->score(inner);
			*best = doc;
		}
	}
	se_scorer_free(inner);
	return count;
}
