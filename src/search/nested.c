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

/*
 * The reader caches these bitsets (se_segment_bits_put): they depend on
 * the segment only, which never changes, so a search computes them once per
 * segment reader (Lucene's BitSetProducer cache) and they go with the
 * reader when its segment is merged away or its shard closed.  Keys that
 * are not paths (no path is empty or starts with \x01) name the others.
 */
#define BITS_NESTED "\x01nested"
#define BITS_ROOTS "\x01roots"

/* bits, now cached in r under key when there was room (else bits). */
static const uint64 *
keep(SeSegmentReader *r, const char *key, uint64 *bits)
{
	const uint64 *kept = se_segment_bits_put(r, key, bits);

	if (kept != bits)
		pfree(bits);
	return kept;
}

const uint64 *
se_nested_docs_bits(SeSegmentReader *r)
{
	int			field = se_segment_field(r, SE_NESTED_PATH_FIELD);
	uint32		max_doc = se_segment_max_doc(r);
	const uint64 *cached;
	uint64	   *bits;
	SeTermsEnum *e;
	const char *term;
	int			len;
	SeTermInfo	ti;

	if (field < 0)
		return NULL;
	if ((cached = se_segment_bits_get(r, BITS_NESTED)) != NULL)
		return cached;
	bits = palloc0(sizeof(uint64) * Max(nwords(max_doc), 1));
	e = se_segment_terms(r, field, "", 0);
	while (se_terms_next(e, &term, &len, &ti))
		or_postings(r, &ti, bits, max_doc);
	se_terms_close(e);
	return keep(r, BITS_NESTED, bits);
}

const uint64 *
se_nested_root_bits(SeSegmentReader *r)
{
	const uint64 *cached = se_segment_bits_get(r, BITS_ROOTS);
	const uint64 *nested;

	if (cached != NULL)
		return cached;
	if ((nested = se_nested_docs_bits(r)) == NULL)
		return NULL;
	return keep(r, BITS_ROOTS, se_nested_top_live(NULL, nested, se_segment_max_doc(r)));
}

const uint64 *
se_nested_path_bits(SeSegmentReader *r, const char *path)
{
	int			field = se_segment_field(r, SE_NESTED_PATH_FIELD);
	uint32		max_doc = se_segment_max_doc(r);
	const uint64 *cached;
	uint64	   *bits;
	SeTermInfo	ti;

	if (field < 0 || path[0] == '\0' || path[0] == '\x01')
		return NULL;
	if ((cached = se_segment_bits_get(r, path)) != NULL)
		return cached;
	if (!se_segment_seek_exact(r, field, path, strlen(path), &ti))
		return NULL;
	bits = palloc0(sizeof(uint64) * Max(nwords(max_doc), 1));
	or_postings(r, &ti, bits, max_doc);
	return keep(r, path, bits);
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
	const uint64 *child_bits;	/* docs of the path (the reader's cache) */
	const uint64 *parent_bits;	/* docs of the parent level (idem) */
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
	pfree(n);
}

/*
 * The parent-level docs of w's path in the segment: the root docs when the
 * path is a top-level nested field, else the docs of the enclosing path.
 */
static const uint64 *
parent_level_bits(SeWeight *w, SeSegmentCtx *seg)
{
	const uint64 *bits;

	if (w->nested_parent == NULL)
		return se_nested_root_bits(seg->reader);
	bits = se_nested_path_bits(seg->reader, w->nested_parent);
	return bits ? bits : palloc0(sizeof(uint64) * Max(nwords(seg->max_doc), 1));
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
	const uint64 *child = se_nested_path_bits(seg->reader, w->field);
	const uint64 *parent;
	SeScorer   *inner;
	NestedScorer *n;

	if (child == NULL)
		return NULL;
	if ((parent = parent_level_bits(w, seg)) == NULL ||
		(inner = se_scorer_create(w->inner, seg)) == NULL)
		return NULL;
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
	const uint64 *child = se_nested_path_bits(seg->reader, w->field);
	const uint64 *pbits = child ? parent_level_bits(w, seg) : NULL;
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

/* ---------------------------------------------------------------------
 * inner_hits of nested queries (the fetch phase, per hit)
 * ---------------------------------------------------------------------
 */
typedef struct InnerChild
{
	int32		doc;
	float		score;
} InnerChild;

static int
inner_child_cmp(const void *a, const void *b)
{
	const InnerChild *x = a;
	const InnerChild *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* The nested doc's position among its parent's values (_nested_offset). */
static int64
child_offset(SeSegmentReader *r, int32 doc)
{
	int			field = se_segment_field(r, SE_NESTED_OFFSET_FIELD);
	const int64 *v = NULL;

	if (field < 0 || se_segment_numeric_values(r, field, doc, &v) < 1 || v == NULL)
		return 0;
	return v[0];
}

/*
 * ES's "_nested" identity of nested doc c of path: {"field", "offset"} from
 * the top nested level down, each inner level in the "_nested" of the one
 * above it with the field named relative to it.
 */
#define MAX_LEVELS 64

/* The nested levels of doc c of path, innermost first, with their docs. */
static int
identity_chain(const SeMapping *m, SeSegmentReader *r, const char *path, int32 c,
			   const SeMappedField **levels, int32 *docs)
{
	int			n = 0;
	const SeMappedField *f = se_mapping_nested_scope(m, path);

	while (f != NULL && n < MAX_LEVELS)
	{
		char	   *parent_path;
		char	   *dot;

		levels[n] = f;
		docs[n] = c;
		n++;
		parent_path = pstrdup(f->path);
		dot = strrchr(parent_path, '.');
		if (dot == NULL)
			break;
		*dot = '\0';
		f = se_mapping_nested_scope(m, parent_path);
		if (f != NULL)
		{
			/* the enclosing object's doc: the first of its path after c */
			const uint64 *bits = se_nested_path_bits(r, f->path);

			c = bits ? next_set(bits, c + 1, se_segment_max_doc(r)) : SE_NO_MORE_DOCS;
			if (c == SE_NO_MORE_DOCS)
				break;
		}
	}
	return n;
}

/* The name of level i relative to the level above it (the top's: its path). */
static const char *
level_name(const SeMappedField **levels, int n, int i)
{
	return i < n - 1 ? levels[i]->path + strlen(levels[i + 1]->path) + 1 : levels[i]->path;
}

static void
write_identity(const SeMapping *m, SeSegmentReader *r, const char *path, int32 c,
			   StringInfo out)
{
	const SeMappedField *levels[MAX_LEVELS];
	int32		docs[MAX_LEVELS];
	int			n = identity_chain(m, r, path, c, levels, docs);
	int			i;

	for (i = n - 1; i >= 0; i--)
	{
		const char *name = level_name(levels, n, i);

		appendStringInfoString(out, "{\"field\":");
		se_json_write_string(out, name, strlen(name));
		appendStringInfo(out, ",\"offset\":" INT64_FORMAT, child_offset(r, docs[i]));
		if (i > 0)
			appendStringInfoString(out, ",\"_nested\":");
	}
	for (i = 0; i < n; i++)
		appendStringInfoChar(out, '}');
}

/* obj's value at a dotted name ({"a": {"b": x}} or {"a.b": x}), or NULL. */
static const SeJson *
get_dotted(const SeJson *obj, const char *name)
{
	const SeJson *v;
	const char *dot;

	if (obj == NULL || obj->type != SE_JSON_OBJECT)
		return NULL;
	if ((v = se_json_get(obj, name)) != NULL)
		return v;
	for (dot = strchr(name, '.'); dot != NULL; dot = strchr(dot + 1, '.'))
	{
		char	   *head = pnstrdup(name, dot - name);

		v = se_json_get(obj, head);
		pfree(head);
		if (v != NULL && (v = get_dotted(v, dot + 1)) != NULL)
			return v;
	}
	return NULL;
}

/*
 * The nested doc's object, taken from its root's _source by its identity
 * (as ES does: nested docs store no _source), as JSON into out.
 */
static bool
nested_source(const SeMapping *m, SeSegmentReader *r, const char *path, int32 c,
			  const SeJson *root, StringInfo out)
{
	const SeMappedField *levels[MAX_LEVELS];
	int32		docs[MAX_LEVELS];
	int			n = identity_chain(m, r, path, c, levels, docs);
	const SeJson *v = root;
	int			i;

	for (i = n - 1; i >= 0 && v != NULL; i--)
	{
		int64		off = child_offset(r, docs[i]);

		v = get_dotted(v, level_name(levels, n, i));
		if (v != NULL && v->type == SE_JSON_ARRAY)
		{
			/* the objects of the array, nulls and scalars skipped */
			int			k,
						seen = 0;
			const SeJson *hit = NULL;

			for (k = 0; k < v->u.a.count && hit == NULL; k++)
				if (v->u.a.items[k]->type == SE_JSON_OBJECT && seen++ == off)
					hit = v->u.a.items[k];
			v = hit;
		}
		else if (v != NULL && (v->type != SE_JSON_OBJECT || off != 0))
			v = NULL;
	}
	if (v == NULL)
		return false;
	se_json_write(out, v);
	return true;
}

/* One nested query's inner hits for root doc of segment; false with err. */
static bool
nested_inner_hits(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
				  const SeQuery *q, bool *first, StringInfo out, SeError *err)
{
	const SeJson *ih = q->value;
	const char *name = q->field;
	int64		from = 0;
	int64		size = 3;
	bool		source = true;
	SeSegmentCtx seg;
	SeWeight   *w;
	SeScorer   *s;
	const uint64 *child;
	const uint64 *roots;
	const uint64 *live;
	InnerChild *kids = NULL;
	int			nkids = 0;
	int			cap = 0;
	int32		start;
	int32		d;
	int			i;
	const char *id;
	int			idlen = 0;
	SeJson	   *root = NULL;

	if (ih->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[inner_hits] expected an object");
		return false;
	}
	for (i = 0; i < ih->u.o.count; i++)
	{
		const char *k = ih->u.o.members[i].key;
		const SeJson *v = ih->u.o.members[i].value;

		if (strcmp(k, "name") == 0 && v->type == SE_JSON_STRING)
			name = v->u.s.str;
		else if ((strcmp(k, "from") == 0 || strcmp(k, "size") == 0) &&
				 v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i >= 0)
			*(strcmp(k, "from") == 0 ? &from : &size) = v->u.n.i;
		else if (strcmp(k, "_source") == 0 && (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
			source = v->type == SE_JSON_TRUE;
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[inner_hits] of a nested query does not support [%s] yet", k);
			return false;
		}
	}
	if (from + size > (req->limits.max_inner_result_window > 0 ? req->limits.max_inner_result_window : 100))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Inner result window is too large, the inner hit definition's [%s]'s from + size must be less than or equal to: [%d] but was [" INT64_FORMAT "]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
					 name, req->limits.max_inner_result_window > 0 ? req->limits.max_inner_result_window : 100,
					 from + size);
		return false;
	}
	seg.reader = shard->segments[segment];
	seg.ord = segment;
	seg.max_doc = (int32) se_segment_max_doc(seg.reader);
	if ((w = se_weight_build(q->inner, shard, true, req->dfs, NULL, err)) == NULL)
		return false;
	child = se_nested_path_bits(seg.reader, q->field);
	roots = se_nested_root_bits(seg.reader);
	live = shard->all_live_docs ? shard->all_live_docs[segment] :
		(shard->live_docs ? shard->live_docs[segment] : NULL);
	s = (child && roots) ? se_scorer_create(w, &seg) : NULL;
	if (s != NULL)
	{
		start = prev_set(roots, doc - 1) + 1;
		for (d = s->advance(s, start); d < doc; d = s->next(s))
		{
			SE_SEARCH_TICK(1);
			if (!bit_get(child, d) || !se_livedocs_get(live, d))
				continue;
			if (nkids >= cap)
			{
				cap = cap ? cap * 2 : 8;
				kids = kids ? repalloc(kids, sizeof(InnerChild) * cap) :
					palloc(sizeof(InnerChild) * cap);
			}
			kids[nkids].doc = d;
			kids[nkids].score = s->score(s);
			nkids++;
		}
		se_scorer_free(s);
	}
	if (nkids > 1)
		qsort(kids, nkids, sizeof(InnerChild), inner_child_cmp);
	if (!*first)
		appendStringInfoChar(out, ',');
	*first = false;
	se_json_write_string(out, name, strlen(name));
	appendStringInfo(out, ":{\"hits\":{\"total\":{\"value\":%d,\"relation\":\"eq\"},\"max_score\":", nkids);
	if (nkids > 0)
		se_search_write_float(out, kids[0].score);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ",\"hits\":[");
	id = se_segment_doc_id(seg.reader, doc, &idlen);
	if (source && nkids > from)
	{
		StringInfoData raw;

		initStringInfo(&raw);
		if (se_segment_source(seg.reader, doc, &raw))
			root = se_json_parse(raw.data, raw.len, NULL, err);
		if (root == NULL)
			se_error_init(err);	/* no source: hits without one */
	}
	for (i = (int) from; i < nkids && i < from + size; i++)
	{
		if (i > from)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"_index\":");
		se_json_write_string(out, shard->index, strlen(shard->index));
		appendStringInfoString(out, ",\"_id\":");
		se_json_write_string(out, id ? id : "", id ? idlen : 0);
		appendStringInfoString(out, ",\"_nested\":");
		write_identity(shard->mapping, seg.reader, q->field, kids[i].doc, out);
		appendStringInfoString(out, ",\"_score\":");
		se_search_write_float(out, kids[i].score);
		if (root != NULL)
		{
			int			mark = out->len;

			appendStringInfoString(out, ",\"_source\":");
			if (!nested_source(shard->mapping, seg.reader, q->field, kids[i].doc, root, out))
			{
				out->len = mark;
				out->data[mark] = '\0';
			}
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfoString(out, "]}}");
	return true;
}

/* The nested queries with inner_hits in q (not under must_not), in order. */
static bool
walk_inner_hits(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
				const SeQuery *q, bool *first, StringInfo out, SeError *err)
{
	int			i;

	if (q == NULL)
		return true;
	if (q->kind == SE_Q_NESTED)
		return q->value == NULL ||
			nested_inner_hits(req, shard, segment, doc, q, first, out, err);
	for (i = 0; i < q->nmust; i++)
		if (!walk_inner_hits(req, shard, segment, doc, q->must[i], first, out, err))
			return false;
	for (i = 0; i < q->nshould; i++)
		if (!walk_inner_hits(req, shard, segment, doc, q->should[i], first, out, err))
			return false;
	for (i = 0; i < q->nfilter; i++)
		if (!walk_inner_hits(req, shard, segment, doc, q->filter[i], first, out, err))
			return false;
	if (q->kind == SE_Q_CONSTANT_SCORE || q->kind == SE_Q_FUNCTION_SCORE)
		return walk_inner_hits(req, shard, segment, doc, q->inner, first, out, err);
	return true;
}

bool
se_nested_inner_hits(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
					 char **inner_hits, SeError *err)
{
	StringInfoData out;
	bool		first = true;

	*inner_hits = NULL;
	if (req->query == NULL)
		return true;
	initStringInfo(&out);
	appendStringInfoChar(&out, '{');
	if (!walk_inner_hits(req, shard, segment, doc, req->query, &first, &out, err))
		return false;
	appendStringInfoChar(&out, '}');
	if (!first)
		*inner_hits = out.data;
	return true;
}
