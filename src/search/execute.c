/*-------------------------------------------------------------------------
 *
 * execute.c
 *	  query_then_fetch: the per-shard query phase, the coordinator's merge
 *	  of shard top docs, and the fetch phase of the final page.
 *
 * The query phase walks each segment's scorer document-at-a-time, skips
 * deleted docs, counts hits up to the track_total_hits threshold and keeps
 * the best from + size docs in a bounded heap (worst on top).  Ranking is
 * by score (descending) or by the sort keys, then by shard index and doc
 * order, as ES breaks ties.  Once the count is settled and the heap is
 * full, a shard stops early when no later doc can enter the heap: the
 * weight's score upper bound is not above the heap's worst score (later
 * docs lose ties), or the primary sort is _doc ascending.
 *
 * Top-k by score also hands the heap's worst score to the scorer as the
 * minimum competitive score once the count no longer needs to be exact
 * (past the track_total_hits threshold, or when totals are off): the
 * scorer may then skip postings blocks whose impacts cannot beat it
 * (see scorer.c).  The docs it still returns are scored as before, so
 * the top docs do not change; the count becomes a lower bound ("gte"),
 * as it already was.  track_total_hits: true never skips.
 *
 * The three phases only exchange SeShardTopDocs and (shard, segment, doc)
 * addresses, so a remote shard can run the same query phase and ship its
 * top docs back.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "common/int.h"

#include "portability/instr_time.h"
#include "search/aggs.h"
#include "util/hash.h"
#include "search/search_int.h"

bool		se_search_block_max = true;
bool		se_search_range_doc_values = true;
int64		se_search_stat_docs = 0;
int64		se_search_stat_group_skips = 0;

/* Ranking configuration shared by the shard collectors and the merge. */
typedef struct RankCtx
{
	int			nkeys;			/* 0: by score */
	SeSortKey  *keys;
} RankCtx;

typedef struct Collector
{
	RankCtx		rank;
	int			ntop;
	SeTopDoc   *slots;
	int		   *heap;			/* slot indexes; worst-ranked on top */
	int			hsize;
	SeTopDoc	scratch;
	int32		doc_base;		/* global doc of the segment's doc 0 */
	int		   *seg_fields;		/* per key: field number in the segment */
	/* collapse: each slot is its group's head, its value at keys[rank.nkeys] */
	const SeMappedField *group_field;	/* NULL: not collapsing */
	int			group_seg_field;
	SeGroupSet *groups;
	int		   *heap_pos;		/* collapse: each slot's place in the heap */
} Collector;

/* The heap's place i holds slot (its place kept when collapsing). */
static inline void
heap_set(Collector *c, int i, int slot)
{
	c->heap[i] = slot;
	if (c->heap_pos != NULL)
		c->heap_pos[slot] = i;
}

static int
cmp_value(const SeSortKey *k, const SeSortValue *a, const SeSortValue *b,
		  float sa, float sb)
{
	int			c = 0;

	switch (k->type)
	{
		case SE_KEY_SCORE:
			c = sa < sb ? -1 : sa > sb ? 1 : 0;
			break;
		case SE_KEY_DOC:
		case SE_KEY_SHARD_DOC:
			c = a->num < b->num ? -1 : a->num > b->num ? 1 : 0;
			break;
		case SE_KEY_NUMERIC:
		case SE_KEY_BYTES:
			/* missing values go last (or first) whatever the order */
			if (a->missing || b->missing)
			{
				if (a->missing && b->missing)
					return 0;
				c = a->missing ? 1 : -1;
				return k->missing == SE_MISSING_FIRST ? -c : c;
			}
			if (k->type == SE_KEY_NUMERIC)
				c = a->num < b->num ? -1 : a->num > b->num ? 1 : 0;
			else
			{
				c = memcmp(a->bytes, b->bytes, Min(a->len, b->len));
				if (c == 0)
					c = a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
				else
					c = c < 0 ? -1 : 1;
			}
			break;
	}
	return k->desc ? -c : c;
}

/* < 0 when a ranks before b. */
static int
rank_cmp(const RankCtx *r, const SeTopDoc *a, const SeTopDoc *b)
{
	int			i;

	if (r->nkeys == 0)
	{
		if (a->score != b->score)
			return a->score > b->score ? -1 : 1;
	}
	for (i = 0; i < r->nkeys; i++)
	{
		int			c = cmp_value(&r->keys[i], &a->keys[i], &b->keys[i],
								  a->score, b->score);

		if (c != 0)
			return c;
	}
	if (a->shard_idx != b->shard_idx)
		return a->shard_idx < b->shard_idx ? -1 : 1;
	if (a->seg != b->seg)
		return a->seg < b->seg ? -1 : 1;
	if (a->doc != b->doc)
		return a->doc < b->doc ? -1 : 1;
	return 0;
}

static int
rank_qsort_cmp(const void *a, const void *b, void *arg)
{
	return rank_cmp((const RankCtx *) arg, (const SeTopDoc *) a,
					(const SeTopDoc *) b);
}

/* ---------------------------------------------------------------------
 * Sort keys
 * ---------------------------------------------------------------------
 */
bool
se_search_check_doc_values(const SeMappedField *f, const char *index, SeError *err)
{
	if (f->type == SE_FT_TEXT)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Fielddata is disabled on [%s] in [%s]. Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [%s] in order to load field data by uninverting the inverted index. Note that this can use significant memory.",
					 f->path, index ? index : "", f->path);
		return false;
	}
	if (f->type != SE_FT_OBJECT && !f->doc_values)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Can't load fielddata on [%s] because fielddata is unsupported on fields of type [%s]. Use doc values instead.",
					 f->path, se_field_type_name(f->type));
		return false;
	}
	return true;
}

/*
 * numeric_type: the field as the asked type (*f becomes a copy of it with
 * that type, so that missing values, search_after and the hits' sort
 * values are in it) and the conversion of its doc values.  A cross-index
 * sort on a field mapped long in one index and double in another then
 * compares like with like.
 */
static bool
sort_cast_field(const SeSortSpec *s, const SeMappedField **f, int *cast, SeError *err)
{
	SeMappedField *t;
	SeFieldType from = (*f)->type;
	bool		from_float = from == SE_FT_DOUBLE || from == SE_FT_FLOAT;
	bool		to_date = strncmp(s->numeric_type, "date", 4) == 0;

	if (from == SE_FT_KEYWORD || from == SE_FT_TEXT || from == SE_FT_BOOLEAN)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[numeric_type] option cannot be set on a non-numeric field, got %s",
					 se_field_type_name(from));
		return false;
	}
	if (to_date && from != SE_FT_DATE)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[numeric_type] %s can only be used on a date field, got %s",
					 s->numeric_type, se_field_type_name(from));
		return false;
	}
	t = palloc(sizeof(SeMappedField));
	memcpy(t, *f, sizeof(SeMappedField));
	*cast = SE_SORT_CAST_NONE;
	if (strcmp(s->numeric_type, "double") == 0)
	{
		t->type = SE_FT_DOUBLE;
		if (!from_float)
			*cast = SE_SORT_CAST_TO_DOUBLE;
	}
	else if (strcmp(s->numeric_type, "long") == 0)
	{
		t->type = SE_FT_LONG;
		if (from_float)
			*cast = SE_SORT_CAST_TO_LONG;
	}
	else if (strcmp(s->numeric_type, "date_nanos") == 0)
	{
		t->type = SE_FT_LONG;	/* nanoseconds since the epoch */
		*cast = SE_SORT_CAST_MS_TO_NS;
	}
	*f = t;
	return true;
}

/*
 * The kind of value a sort key compares, as Lucene's SortField.Type: the
 * shards of a search must agree on it.  float and double both compare as
 * doubles here.
 */
static const char *
sort_family(const SeSortKey *k)
{
	switch (k->type)
	{
		case SE_KEY_SCORE:
			return "SCORE";
		case SE_KEY_DOC:
		case SE_KEY_SHARD_DOC:
			return "DOC";
		case SE_KEY_BYTES:
			return "STRING";
		case SE_KEY_NUMERIC:
			return k->ftype == SE_FT_DOUBLE || k->ftype == SE_FT_FLOAT ? "DOUBLE" : "LONG";
	}
	return "?";
}

/* A doc value in the type numeric_type asks for (sort_cast_field). */
static inline int64
sort_cast_value(int cast, int64 v)
{
	switch (cast)
	{
		case SE_SORT_CAST_TO_DOUBLE:
			return se_double_to_sortable((double) v);
		case SE_SORT_CAST_TO_LONG:
			{
				double		d = se_sortable_to_double(v);

				if (isnan(d))
					return 0;
				return d >= 9.2233720368547758e18 ? PG_INT64_MAX :
					d <= -9.2233720368547758e18 ? PG_INT64_MIN : (int64) d;
			}
		case SE_SORT_CAST_MS_TO_NS:
			{
				int64		ns;

				if (pg_mul_s64_overflow(v, 1000000, &ns))
					return v < 0 ? PG_INT64_MIN : PG_INT64_MAX;
				return ns;
			}
		default:
			return v;
	}
}

/*
 * _geo_distance: a double key computed from the doc's points; a doc without
 * one sorts as Infinity (ES's missing distance), last ascending and first
 * descending.
 */
static bool
geo_sort_key(const SeSortSpec *s, const SeMappedField *f, SeSortKey *k, SeError *err)
{
	static const SeMappedField distance_field = {.path = "_geo_distance", .type = SE_FT_DOUBLE};

	if ((f == NULL || f->type == SE_FT_OBJECT) && !s->geo->ignore_unmapped)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "failed to find mapper for [%s] for geo distance based sort", s->field);
		return false;
	}
	if (f != NULL && f->type != SE_FT_OBJECT && f->type != SE_FT_GEO_POINT)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "unable to apply geo distance sort to field [%s] of type [%s]",
					 s->field, se_field_type_name(f->type));
		return false;
	}
	if (f != NULL && f->type == SE_FT_GEO_POINT && !se_search_check_doc_values(f, NULL, err))
		return false;
	k->type = SE_KEY_NUMERIC;
	k->ftype = SE_FT_DOUBLE;
	k->mfield = &distance_field;
	k->geo = s->geo;
	k->missing = s->desc ? SE_MISSING_FIRST : SE_MISSING_LAST;
	return true;
}

static bool
resolve_sort_keys(SeSearchRequest *req, SeSearchShard *shard, SeSortKey *keys,
				  SeError *err)
{
	int			i;

	for (i = 0; i < req->nsort; i++)
	{
		SeSortSpec *s = &req->sort[i];
		SeSortKey  *k = &keys[i];
		const SeMappedField *f;

		memset(k, 0, sizeof(*k));
		k->desc = s->desc;
		k->missing = s->missing;
		k->field = s->field;
		if (s->kind == SE_SORT_SCORE)
		{
			k->type = SE_KEY_SCORE;
			continue;
		}
		if (s->kind == SE_SORT_DOC)
		{
			k->type = SE_KEY_DOC;
			continue;
		}
		if (s->kind == SE_SORT_SHARD_DOC)
		{
			k->type = SE_KEY_SHARD_DOC;
			continue;
		}
		f = shard->mapping ? se_mapping_find(shard->mapping, s->field) : NULL;
		if (s->geo != NULL)
		{
			if (!geo_sort_key(s, f, k, err))
				return false;
			continue;
		}
		if (f == NULL || f->type == SE_FT_OBJECT)
		{
			if (s->unmapped_type == NULL)
			{
				se_error_set(err, 400, "query_shard_exception",
							 "No mapping found for [%s] in order to sort on",
							 s->field);
				return false;
			}
			k->type = strcmp(s->unmapped_type, "keyword") == 0 ||
				strcmp(s->unmapped_type, "text") == 0 ? SE_KEY_BYTES : SE_KEY_NUMERIC;
			k->ftype = k->type == SE_KEY_BYTES ? SE_FT_KEYWORD : SE_FT_LONG;
			k->mfield = NULL;
			if (k->missing == SE_MISSING_VALUE)
				k->missing = SE_MISSING_LAST;
			continue;
		}
		if (f->type == SE_FT_GEO_POINT)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "can't sort on geo_point field without using specific sorting feature, like geo_distance");
			return false;
		}
		if (!se_search_check_doc_values(f, shard->index, err))
			return false;
		if (s->numeric_type && !sort_cast_field(s, &f, &k->cast, err))
			return false;
		if (s->nested_path == NULL && se_mapping_nested_scope(shard->mapping, f->path) != NULL)
		{
			se_error_set(err, 400, "query_shard_exception",
						 "it is mandatory to set the [nested] context on the nested sort field: [%s].",
						 f->path);
			return false;
		}
		if (s->nested_path != NULL)
		{
			const SeMappedField *nf = se_mapping_find(shard->mapping, s->nested_path);

			if (nf == NULL || !nf->nested)
			{
				se_error_set(err, 400, "query_shard_exception",
							 "[nested] failed to find nested object under path [%s]",
							 s->nested_path);
				return false;
			}
			k->nested_path = nf->path;
			if (s->nested_filter != NULL &&
				(k->nested_filter = se_weight_build(s->nested_filter, shard, false, NULL,
													NULL, err)) == NULL)
				return false;
		}
		k->mfield = f;
		k->ftype = f->type;
		k->type = f->type == SE_FT_KEYWORD ? SE_KEY_BYTES : SE_KEY_NUMERIC;
		k->use_max = s->mode == SE_SORT_MODE_MAX ||
			(s->mode == SE_SORT_MODE_DEFAULT && s->desc);
		if (s->missing == SE_MISSING_VALUE)
		{
			if (k->type == SE_KEY_BYTES)
			{
				const SeJson *v = s->missing_value;

				if (v->type == SE_JSON_STRING)
				{
					k->missing_bytes = pnstrdup(v->u.s.str, v->u.s.len);
					k->missing_len = v->u.s.len;
				}
				else if (v->type == SE_JSON_NUMBER)
				{
					k->missing_bytes = pnstrdup(v->u.n.text, v->u.n.len);
					k->missing_len = v->u.n.len;
				}
				else
				{
					k->missing_bytes = pstrdup(v->type == SE_JSON_TRUE ? "true" : "false");
					k->missing_len = strlen(k->missing_bytes);
				}
			}
			else
			{
				SeError		lerr;

				se_error_init(&lerr);
				if (!se_field_sortable_value(f, s->missing_value, &k->missing_num, &lerr))
				{
					se_error_set(err, 400, "query_shard_exception",
								 "failed to parse sort missing value for [%s]: %s",
								 f->path, lerr.reason ? lerr.reason : "invalid value");
					return false;
				}
			}
		}
	}
	return true;
}

/*
 * ES's _shard_doc value: the shard's index in the search in the high 32
 * bits, the doc's number in the shard below -- unique in a point in time,
 * and in the order ties are broken in (shard, segment, doc).
 */
static inline int64
shard_doc_value(int shard_idx, int32 global_doc)
{
	return ((int64) shard_idx << 32) | (int64) (uint32) global_doc;
}

/* A nested sort key's per-segment state (search/nested.c's bitsets). */
static void
nested_key_segment(SeSortKey *k, SeSearchShard *shard, int s, SeSegmentCtx *seg)
{
	if (k->nested_scorer)
		se_scorer_free(k->nested_scorer);
	k->nested_scorer = NULL;
	k->nested_child = se_nested_path_bits(seg->reader, k->nested_path);
	k->nested_roots = se_nested_root_bits(seg->reader);
	k->nested_live = shard->all_live_docs ? shard->all_live_docs[s] :
		(shard->live_docs ? shard->live_docs[s] : NULL);
	if (k->nested_filter != NULL)
		k->nested_scorer = se_scorer_create(k->nested_filter, seg);
}

/*
 * The min or max value of field f over doc's live nested docs of the key's
 * path that pass its filter (ascending doc order, so the filter's scorer
 * only moves forward); false when none has one.
 */
static bool
nested_key_value(SeSortKey *k, SeSegmentReader *r, int f, int32 doc, SeSortValue *v)
{
	int32		start = doc - 1;
	int32		d;
	bool		found = false;

	if (f < 0 || k->nested_child == NULL || k->nested_roots == NULL ||
		(k->nested_filter != NULL && k->nested_scorer == NULL))
		return false;
	while (start >= 0 && !((k->nested_roots[start >> 6] >> (start & 63)) & 1))
		start--;
	for (d = start + 1; d < doc; d++)
	{
		SE_SEARCH_TICK(1);
		if (!((k->nested_child[d >> 6] >> (d & 63)) & 1) || !se_livedocs_get(k->nested_live, d))
			continue;
		if (k->nested_scorer != NULL)
		{
			if (k->nested_scorer->doc < d)
				k->nested_scorer->advance(k->nested_scorer, d);
			if (k->nested_scorer->doc != d)
				continue;
		}
		if (k->type == SE_KEY_NUMERIC)
		{
			const int64 *vals;
			int			n = se_segment_numeric_values(r, f, d, &vals);
			int64		x;

			if (n == 0)
				continue;
			x = sort_cast_value(k->cast, k->use_max ? vals[n - 1] : vals[0]);
			if (!found || (k->use_max ? x > v->num : x < v->num))
				v->num = x;
			found = true;
		}
		else
		{
			int			n = se_segment_sorted_count(r, f, d);
			const char *b;
			int			len = 0;
			int			c;

			if (n == 0 || (b = se_segment_sorted_value(r, f, d, k->use_max ? n - 1 : 0, &len)) == NULL)
				continue;
			if (found)
			{
				c = memcmp(b, v->bytes, Min(len, v->len));
				if (c == 0)
					c = len < v->len ? -1 : len > v->len;
			}
			if (!found || (k->use_max ? c > 0 : c < 0))
			{
				v->bytes = (char *) b;
				v->len = len;
			}
			found = true;
		}
	}
	return found;
}

/* Fill c->scratch's keys for doc of reader r. */
static void
fill_keys(Collector *c, SeSegmentReader *r, int32 doc)
{
	int			i;

	for (i = 0; i < c->rank.nkeys; i++)
	{
		const SeSortKey *k = &c->rank.keys[i];
		SeSortValue *v = &c->scratch.keys[i];
		int			f = c->seg_fields[i];

		v->missing = false;
		if (k->nested_path != NULL)
		{
			if (nested_key_value((SeSortKey *) k, r, f, doc, v))
				continue;
			if (k->missing == SE_MISSING_VALUE && k->type == SE_KEY_NUMERIC)
				v->num = k->missing_num;
			else if (k->missing == SE_MISSING_VALUE)
			{
				v->bytes = k->missing_bytes;
				v->len = k->missing_len;
			}
			else
				v->missing = true;
			continue;
		}
		switch (k->type)
		{
			case SE_KEY_SCORE:
				break;
			case SE_KEY_DOC:
				v->num = (int64) c->doc_base + doc;
				break;
			case SE_KEY_SHARD_DOC:
				v->num = shard_doc_value(c->scratch.shard_idx, c->doc_base + doc);
				break;
			case SE_KEY_NUMERIC:
				{
					const int64 *vals;
					int			n = f < 0 ? 0 : se_segment_numeric_values(r, f, doc, &vals);

					if (n > 0 && k->geo != NULL)
						v->num = se_double_to_sortable(se_geo_sort_value(k->geo, k->desc, vals, n));
					else if (n > 0)
						v->num = sort_cast_value(k->cast, k->use_max ? vals[n - 1] : vals[0]);
					else if (k->missing == SE_MISSING_VALUE)
						v->num = k->missing_num;
					else
						v->missing = true;
				}
				break;
			case SE_KEY_BYTES:
				{
					int			n = f < 0 ? 0 : se_segment_sorted_count(r, f, doc);
					const char *b = NULL;
					int			len = 0;

					if (n > 0)
						b = se_segment_sorted_value(r, f, doc, k->use_max ? n - 1 : 0, &len);
					if (b != NULL)
					{
						v->bytes = (char *) b;
						v->len = len;
					}
					else if (k->missing == SE_MISSING_VALUE)
					{
						v->bytes = k->missing_bytes;
						v->len = k->missing_len;
					}
					else
						v->missing = true;
				}
				break;
		}
	}
}

/* Copy the scratch candidate into a heap slot (owning its key bytes). */
static void
store_slot(Collector *c, SeTopDoc *slot)
{
	int			i;

	slot->score = c->scratch.score;
	slot->shard_idx = c->scratch.shard_idx;
	slot->seg = c->scratch.seg;
	slot->doc = c->scratch.doc;
	for (i = 0; i < c->rank.nkeys; i++)
	{
		SeSortValue *dst = &slot->keys[i];
		const SeSortValue *src = &c->scratch.keys[i];

		if (c->rank.keys[i].type == SE_KEY_BYTES)
			se_sort_value_copy(dst, src);
		else
		{
			dst->missing = src->missing;
			dst->num = src->num;
		}
		dst->score = c->scratch.score;
	}
}

static void
heap_sift_up(Collector *c, int i)
{
	int			node = c->heap[i];

	while (i > 0)
	{
		int			parent = (i - 1) / 2;

		if (rank_cmp(&c->rank, &c->slots[c->heap[parent]], &c->slots[node]) >= 0)
			break;
		heap_set(c, i, c->heap[parent]);
		i = parent;
	}
	heap_set(c, i, node);
}

static void
heap_sift_down(Collector *c, int i)
{
	int			node = c->heap[i];

	for (;;)
	{
		int			l = 2 * i + 1;
		int			r = l + 1;
		int			m;

		if (l >= c->hsize)
			break;
		m = l;
		if (r < c->hsize &&
			rank_cmp(&c->rank, &c->slots[c->heap[r]], &c->slots[c->heap[l]]) > 0)
			m = r;
		if (rank_cmp(&c->rank, &c->slots[c->heap[m]], &c->slots[node]) <= 0)
			break;
		heap_set(c, i, c->heap[m]);
		i = m;
	}
	heap_set(c, i, node);
}

/* Offer the scratch candidate to the heap. */
static void
collect(Collector *c)
{
	if (c->hsize < c->ntop)
	{
		int			slot = c->hsize;

		store_slot(c, &c->slots[slot]);
		c->heap[c->hsize++] = slot;
		heap_sift_up(c, c->hsize - 1);
	}
	else if (rank_cmp(&c->rank, &c->scratch, &c->slots[c->heap[0]]) < 0)
	{
		store_slot(c, &c->slots[c->heap[0]]);
		heap_sift_down(c, 0);
	}
}

/*
 * Offer the scratch candidate, whose group value is set, to the heap of
 * group heads (Lucene's first pass grouping): it replaces its group's
 * head when it ranks better, or the worst head (and its group) when its
 * group has none and it beats that head.
 */
static void
collect_group(Collector *c)
{
	SeSortValue *g = &c->scratch.keys[c->rank.nkeys];
	int			slot = se_group_set_find(c->groups, g);
	int			pos;

	if (slot >= 0)
	{
		if (rank_cmp(&c->rank, &c->scratch, &c->slots[slot]) >= 0)
			return;
		store_slot(c, &c->slots[slot]);
		heap_sift_down(c, c->heap_pos[slot]);
		return;
	}
	if (c->hsize < c->ntop)
	{
		slot = c->hsize;
		pos = c->hsize++;
		heap_set(c, pos, slot);
	}
	else if (rank_cmp(&c->rank, &c->scratch, &c->slots[c->heap[0]]) < 0)
	{
		slot = c->heap[0];
		pos = 0;
		se_group_set_remove(c->groups, slot);
	}
	else
		return;
	store_slot(c, &c->slots[slot]);
	se_sort_value_copy(&c->slots[slot].keys[c->rank.nkeys], g);
	se_group_set_add(c->groups, slot, &c->slots[slot].keys[c->rank.nkeys]);
	if (pos == 0)
		heap_sift_down(c, 0);
	else
		heap_sift_up(c, pos);
}

static void
collector_init(Collector *c, int ntop, int nkeys, SeSortKey *keys)
{
	int			i;

	memset(c, 0, sizeof(*c));
	c->rank.nkeys = nkeys;
	c->rank.keys = keys;
	c->ntop = ntop;
	c->slots = palloc0(sizeof(SeTopDoc) * Max(1, ntop));
	c->heap = palloc(sizeof(int) * Max(1, ntop));
	c->seg_fields = palloc(sizeof(int) * Max(1, nkeys));
	c->scratch.keys = palloc0(sizeof(SeSortValue) * Max(1, nkeys));
	if (nkeys > 0)
		for (i = 0; i < ntop; i++)
			c->slots[i].keys = palloc0(sizeof(SeSortValue) * nkeys);
}

/* ---------------------------------------------------------------------
 * search_after
 * ---------------------------------------------------------------------
 */
/* Compare a doc's sort values with search_after's (keys only: ties are not after). */
static int
after_cmp(const RankCtx *r, const SeTopDoc *a, const SeTopDoc *after)
{
	int			i;

	for (i = 0; i < r->nkeys; i++)
	{
		int			c = cmp_value(&r->keys[i], &a->keys[i], &after->keys[i],
								  a->score, after->score);

		if (c != 0)
			return c;
	}
	return 0;
}

static bool
after_int(const SeJson *v, int64 *out)
{
	char	   *end;

	if (v->type == SE_JSON_NUMBER && v->u.n.is_int)
	{
		*out = v->u.n.i;
		return true;
	}
	if (v->type == SE_JSON_STRING && v->u.s.len > 0)
	{
		errno = 0;
		*out = strtoi64(v->u.s.str, &end, 10);
		return *end == '\0' && errno == 0;
	}
	return false;
}

/*
 * search_after's values as a sort point of req's keys (resolved for
 * shard).  A value standing for a missing one -- null, or the extreme
 * a missing value is shown as -- is missing.
 */
static bool
parse_after(SeSearchRequest *req, SeSearchShard *shard, const SeSortKey *keys,
			SeTopDoc *after, SeError *err)
{
	const SeJson *arr = req->search_after;
	int			i;

	after->keys = palloc0(sizeof(SeSortValue) * req->nsort);
	after->score = NAN;
	for (i = 0; i < req->nsort; i++)
	{
		const SeSortKey *k = &keys[i];
		const SeJson *v = arr->u.a.items[i];
		SeSortValue *sv = &after->keys[i];
		bool		ok = true;

		switch (k->type)
		{
			case SE_KEY_SCORE:
				/* from the digits: a float's shortest form reads back exactly */
				if (v->type == SE_JSON_NUMBER)
					after->score = strtof(pnstrdup(v->u.n.text, v->u.n.len), NULL);
				else if (v->type == SE_JSON_STRING)
					after->score = strtof(v->u.s.str, NULL);
				else
					ok = false;
				sv->score = after->score;
				break;
			case SE_KEY_DOC:
			case SE_KEY_SHARD_DOC:
				ok = after_int(v, &sv->num);
				break;
			case SE_KEY_BYTES:
				if (v->type == SE_JSON_NULL)
					sv->missing = true;
				else if (v->type == SE_JSON_STRING)
				{
					sv->bytes = pnstrdup(v->u.s.str, v->u.s.len);
					sv->len = v->u.s.len;
				}
				else if (v->type == SE_JSON_NUMBER)
				{
					sv->bytes = pnstrdup(v->u.n.text, v->u.n.len);
					sv->len = v->u.n.len;
				}
				else
					ok = false;
				break;
			case SE_KEY_NUMERIC:
				{
					bool		high = (k->missing == SE_MISSING_LAST) != k->desc;
					bool		is_float = k->ftype == SE_FT_DOUBLE || k->ftype == SE_FT_FLOAT;
					int64		n;

					if (v->type == SE_JSON_NULL)
						sv->missing = true;
					else if (is_float && v->type == SE_JSON_STRING &&
							 strcmp(v->u.s.str, high ? "Infinity" : "-Infinity") == 0)
						sv->missing = true;
					else if (!is_float && after_int(v, &n) &&
							 n == (high ? PG_INT64_MAX : PG_INT64_MIN))
						sv->missing = true;
					else if (k->mfield != NULL)
					{
						SeError		lerr;

						se_error_init(&lerr);
						ok = se_field_sortable_value(k->mfield, v, &sv->num, &lerr);
					}
					else
						ok = after_int(v, &sv->num);
				}
				break;
		}
		if (!ok)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Failed to parse search_after value for field [%s].",
						 k->type == SE_KEY_SCORE ? "_score" : k->type == SE_KEY_DOC ? "_doc" :
						 k->type == SE_KEY_SHARD_DOC ? "_shard_doc" : k->field);
			return false;
		}
	}
	(void) shard;
	return true;
}

/* ---------------------------------------------------------------------
 * Query phase
 * ---------------------------------------------------------------------
 */
static bool
sort_has_score(const SeSearchRequest *req)
{
	int			i;

	for (i = 0; i < req->nsort; i++)
		if (req->sort[i].kind == SE_SORT_SCORE)
			return true;
	return false;
}

/*
 * The number of docs w matches in segment s when it is known without
 * iterating them (Lucene's Weight.count): a term's doc_freq in a segment
 * without deletions, the live docs for match_all; -1 when unknown.
 */
static int64
segment_count(SeWeight *w, SeSearchShard *shard, int s)
{
	SeSegmentReader *r = shard->segments[s];
	const uint64 *live = shard->live_docs ? shard->live_docs[s] : NULL;
	uint32		max_doc = se_segment_max_doc(r);

	switch (w->kind)
	{
		case SE_W_NONE:
			return 0;
		case SE_W_ALL:
			return live ? se_livedocs_count(live, max_doc) : max_doc;
		case SE_W_TERM:
			if (w->nterms != 1 || live != NULL)
				return -1;
			return w->seg_terms[0][s].found ? w->seg_terms[0][s].ti.doc_freq : 0;
		case SE_W_CONST:
			return segment_count(w->inner, shard, s);
		default:
			return -1;
	}
}

/* The shard's count when every segment's is known, else -1. */
static int64
shard_count(SeWeight *w, SeSearchShard *shard)
{
	int64		total = 0;
	int			s;

	for (s = 0; s < shard->nsegments; s++)
	{
		int64		n = segment_count(w, shard, s);

		if (n < 0)
			return -1;
		total += n;
	}
	return total;
}

/*
 * The state of one shard's query phase.  It lives in palloc'd memory, not
 * in locals of the function that sets the landing point, so that it is
 * intact after a stop (timeout) longjmps there.
 */
typedef struct QueryRun
{
	SeSearchRequest *req;
	SeSearchShard *shard;
	int			ntop;
	int			nkeys;
	SeSortKey  *keys;
	SeWeight   *w;
	Collector	c;
	bool		need_scores;
	bool		track_max;
	int64		threshold;
	int64		total;
	int64		known;			/* count known without counting, or -1 */
	float		max_score;
	bool		stopped;
	bool		doc_first;
	bool		can_skip;
	bool		skipping;		/* a minimum score was handed over */
	float		min_score;
	bool		ok;				/* query_segments' result */
	SeAggsShard *aggs;			/* aggregations collected, or NULL */
	bool		count_only;
	SeTopDoc   *after;			/* search_after's point, or NULL */
	SeWeight   *post_filter;	/* post_filter's (not scoring), or NULL */
	bool		terminated_early;
} QueryRun;

/*
 * Walk every segment's scorer into the collector.  false with err set
 * when the query cannot be built; out->failed when a segment is corrupt.
 */
static bool
query_segments(QueryRun *qr, int shard_idx, SeShardTopDocs *out, SeError *err)
{
	SeSearchRequest *req = qr->req;
	SeSearchShard *shard = qr->shard;
	Collector  *c = &qr->c;
	int			ntop = qr->ntop;
	int			nkeys = qr->nkeys;
	int32		doc_base = 0;
	int			s,
				i;

	qr->w = se_weight_build_boosted(req->query, shard, qr->need_scores, req->dfs,
									se_search_index_boost(req, shard->index), err);
	if (qr->w == NULL)
		return false;
	if (req->post_filter != NULL &&
		(qr->post_filter = se_weight_build(req->post_filter, shard, false, NULL, NULL, err)) == NULL)
		return false;
	if (nkeys > 0)
	{
		qr->keys = palloc0(sizeof(SeSortKey) * nkeys);
		if (!resolve_sort_keys(req, shard, qr->keys, err))
			return false;
	}
	collector_init(c, ntop, nkeys, qr->keys);
	c->scratch.shard_idx = shard_idx;
	/* collapse: one more key per doc, its group value (kept, shipped, not ranked) */
	if (req->collapse != NULL && ntop > 0)
	{
		if ((c->group_field = se_collapse_resolve(req->collapse, shard, err)) == NULL)
			return false;
		c->groups = se_group_set_create(ntop);
		c->heap_pos = palloc(sizeof(int) * ntop);
		c->scratch.keys = palloc0(sizeof(SeSortValue) * (nkeys + 1));
		for (i = 0; i < ntop; i++)
			c->slots[i].keys = palloc0(sizeof(SeSortValue) * (nkeys + 1));
	}
	/* aggregations see every matching doc: no early stop, no skipping */
	if (req->aggs != NULL && !qr->count_only &&
		(qr->aggs = se_aggs_shard_begin(req->aggs, shard, err)) == NULL)
		return false;
	if (req->search_after != NULL && nkeys > 0)
	{
		qr->after = palloc0(sizeof(SeTopDoc));
		if (!parse_after(req, shard, qr->keys, qr->after, err))
			return false;
	}

	/*
	 * A count known up front (a term on segments without deletions,
	 * match_all) is exact whatever track_total_hits says, and then nothing
	 * needs counting: collect as with the count untracked, so top-k skips
	 * from the first full page and a bare count reads no postings.  ES
	 * answers such queries with exact totals for the same reason.
	 */
	if (qr->threshold != SE_TRACK_TOTAL_DISABLED && !req->has_min_score &&
		req->slice_max == 0 && req->post_filter == NULL && req->terminate_after == 0 &&
		(qr->known = shard_count(qr->w, shard)) >= 0)
	{
		qr->threshold = SE_TRACK_TOTAL_DISABLED;
		if (ntop == 0 && !qr->track_max && qr->aggs == NULL)
			qr->stopped = true;
	}
	/* skipping by score: top-k by relevance with an inexact count allowed */
	qr->can_skip = se_search_block_max && ntop > 0 && nkeys == 0 && qr->need_scores &&
		qr->threshold != SE_TRACK_TOTAL_ACCURATE && qr->aggs == NULL;

	for (s = 0; s < shard->nsegments && !qr->stopped; s++)
	{
		SeSegmentReader *r = shard->segments[s];
		const uint64 *live = shard->live_docs ? shard->live_docs[s] : NULL;
		SeSegmentCtx seg;
		SeScorer   *scorer;
		SeScorer   *pf;
		bool		pf_none;	/* no doc of the segment passes the post_filter */
		int32		doc;
		const SeError *serr;

		seg.reader = r;
		seg.ord = s;
		seg.max_doc = (int32) se_segment_max_doc(r);
		c->doc_base = doc_base;
		doc_base += seg.max_doc;
		scorer = se_scorer_create(qr->w, &seg);
		pf = NULL;
		pf_none = false;
		if (scorer != NULL && qr->post_filter != NULL &&
			(pf = se_scorer_create(qr->post_filter, &seg)) == NULL)
		{
			/* nothing in this segment passes the post_filter */
			pf_none = true;
			if (qr->aggs == NULL)
			{
				se_scorer_free(scorer);
				scorer = NULL;
			}
		}
		if (scorer != NULL)
		{
			for (i = 0; i < nkeys; i++)
			{
				c->seg_fields[i] = qr->keys[i].type == SE_KEY_NUMERIC || qr->keys[i].type == SE_KEY_BYTES ?
					(qr->keys[i].geo ? se_segment_field(r, qr->keys[i].field) :
					 qr->keys[i].mfield ? se_segment_field(r, qr->keys[i].mfield->path) : -1) : -1;
				if (qr->keys[i].nested_path != NULL)
					nested_key_segment(&qr->keys[i], shard, s, &seg);
			}
			if (c->group_field != NULL)
				c->group_seg_field = se_segment_field(r, c->group_field->path);
			c->scratch.seg = s;
			if (qr->aggs != NULL)
				se_aggs_segment(qr->aggs, &seg);
			if (qr->skipping && scorer->set_min_score != NULL)
				scorer->set_min_score(scorer, qr->min_score);
			while ((doc = scorer->next(scorer)) != SE_NO_MORE_DOCS)
			{
				float		score = NAN;
				bool		pf_pass = !pf_none;

				if (doc < 0 || doc >= seg.max_doc)
					break;		/* corrupt postings; reported below */
				se_search_stat_docs++;
				SE_SEARCH_TICK(1);
				if (!se_livedocs_get(live, doc))
					continue;
				if (pf != NULL)
				{
					if (pf->doc < doc)
						(void) pf->advance(pf, doc);
					pf_pass = pf->doc == doc;
				}
				/* aggregations see the query's docs; post_filter only narrows hits */
				if (!pf_pass && qr->aggs == NULL)
				{
					if (pf_none || pf->doc == SE_NO_MORE_DOCS)
						break;	/* nothing later passes the post_filter */
					continue;
				}
				/*
				 * a slice: the docs whose murmur3(_id) falls in its share,
				 * as ES's scroll slices split by _id (and by-query slices
				 * here): a document stays in its slice across the
				 * snapshots of slices opened one after another
				 */
				if (req->slice_max > 0)
				{
					int			idlen;
					const char *id = se_segment_doc_id(r, doc, &idlen);

					if ((uint32) se_routing_hash(id, idlen) % (uint32) req->slice_max !=
						(uint32) req->slice_id)
						continue;
				}
				if (qr->need_scores)
				{
					score = scorer->score(scorer);
					if (req->has_min_score && !(score >= req->min_score))
						continue;
				}
				if (qr->aggs != NULL)
					se_aggs_collect(qr->aggs, doc, score);
				if (!pf_pass)
					continue;
				qr->total++;
				if (qr->track_max && (isnan(qr->max_score) || score > qr->max_score))
					qr->max_score = score;
				if (req->terminate_after > 0 && qr->total >= req->terminate_after)
				{
					/* ES: this doc is collected, then the shard stops */
					qr->terminated_early = true;
					qr->stopped = true;
				}
				if (ntop > 0)
				{
					c->scratch.score = score;
					c->scratch.doc = doc;
					if (nkeys > 0)
						fill_keys(c, r, doc);
					if (c->group_field != NULL &&
						!se_collapse_doc_value(c->group_field, r, c->group_seg_field, doc,
											   &c->scratch.keys[nkeys], err))
					{
						se_scorer_free(scorer);
						return false;
					}
					if (qr->after != NULL && after_cmp(&c->rank, &c->scratch, qr->after) <= 0)
						;
					else if (c->group_field != NULL)
						collect_group(c);
					else
						collect(c);
				}
				if (qr->terminated_early)
					break;

				/* stop once neither the count nor the page can change */
				if ((qr->threshold == SE_TRACK_TOTAL_DISABLED || qr->total > qr->threshold) &&
					c->hsize == ntop && qr->aggs == NULL)
				{
					/* ... and skip what cannot enter the page */
					if (qr->can_skip &&
						(!qr->skipping || c->slots[c->heap[0]].score > qr->min_score))
					{
						qr->min_score = c->slots[c->heap[0]].score;
						qr->skipping = true;
						if (scorer->set_min_score != NULL)
							scorer->set_min_score(scorer, qr->min_score);
					}
					if (ntop == 0 && !qr->track_max)
						qr->stopped = true;
					else if (ntop > 0 && nkeys == 0 && qr->need_scores &&
							 c->slots[c->heap[0]].score >= qr->w->max_score)
						qr->stopped = true;
					else if (ntop > 0 && qr->doc_first)
						qr->stopped = true;
					if (qr->stopped)
						break;
				}
			}
			se_scorer_free(scorer);
			if (pf != NULL)
				se_scorer_free(pf);
		}
		serr = se_segment_error(r);
		if (serr != NULL && se_error_is_set(serr))
		{
			out->failed = true;
			se_error_set(&out->error, serr->status ? serr->status : 500,
						 serr->type, "%s", serr->reason ? serr->reason : "corrupted segment");
			return true;
		}
	}
	return true;
}

/* Score order of rescored docs: score descending, then doc order (Lucene's). */
static int
rescored_cmp(const void *a, const void *b)
{
	const SeTopDoc *x = a;
	const SeTopDoc *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return x->doc < y->doc ? -1 : (x->doc > y->doc ? 1 : 0);
}

/* By (segment, doc), to walk each segment's scorer forward once. */
static int
doc_order_cmp(const void *a, const void *b)
{
	const SeTopDoc *const *x = a;
	const SeTopDoc *const *y = b;

	if ((*x)->seg != (*y)->seg)
		return (*x)->seg < (*y)->seg ? -1 : 1;
	return (*x)->doc < (*y)->doc ? -1 : ((*x)->doc > (*y)->doc ? 1 : 0);
}

/* A rescored doc's score from its two weighted passes, by score_mode. */
float
se_rescore_combine(SeRescoreMode mode, float primary, float secondary)
{
	switch (mode)
	{
		case SE_RESCORE_TOTAL:
			return primary + secondary;
		case SE_RESCORE_MULTIPLY:
			return primary * secondary;
		case SE_RESCORE_AVG:
			return (primary + secondary) / 2;
		case SE_RESCORE_MAX:
			return Max(primary, secondary);
		case SE_RESCORE_MIN:
			return Min(primary, secondary);
	}
	return primary;
}

/*
 * ES's QueryRescorer on one shard's top docs (in score order): the first
 * window_size get query_weight * score combined by score_mode with
 * rescore_query_weight * the rescore query's score when it matches them,
 * the others query_weight * score; then all are sorted again.
 */
static bool
rescore_shard(SeSearchRequest *req, int pass, SeSearchShard *shard,
			  SeShardTopDocs *out, SeError *err)
{
	const SeRescore *rs = &req->rescore[pass];
	int			window = Min(rs->window_size, out->ndocs);
	SeWeight   *w;
	SeTopDoc  **order;
	SeScorer   *scorer = NULL;
	int			scorer_seg = -1;
	int			i;

	w = se_weight_build(rs->query, shard, true, req->dfs, NULL, err);
	if (w == NULL)
		return false;
	order = palloc(sizeof(SeTopDoc *) * Max(1, window));
	for (i = 0; i < window; i++)
		order[i] = &out->docs[i];
	qsort(order, window, sizeof(SeTopDoc *), doc_order_cmp);
	for (i = 0; i < window; i++)
	{
		SeTopDoc   *d = order[i];
		float		primary = d->score * rs->query_weight;
		float		secondary;

		SE_SEARCH_TICK(1);
		if (pass < 32)
			d->rescored |= (uint32) 1 << pass;
		if (d->seg != scorer_seg)
		{
			SeSegmentCtx seg;

			se_scorer_free(scorer);
			seg.reader = shard->segments[d->seg];
			seg.ord = d->seg;
			seg.max_doc = (int32) se_segment_max_doc(seg.reader);
			scorer = se_scorer_create(w, &seg);
			scorer_seg = d->seg;
		}
		if (scorer == NULL ||
			(scorer->doc < d->doc && scorer->advance(scorer, d->doc) != d->doc) ||
			scorer->doc != d->doc)
		{
			d->score = primary;
			continue;
		}
		secondary = scorer->score(scorer) * rs->rescore_query_weight;
		d->score = se_rescore_combine(rs->mode, primary, secondary);
	}
	se_scorer_free(scorer);
	for (i = window; i < out->ndocs; i++)
		out->docs[i].score *= rs->query_weight;
	qsort(out->docs, out->ndocs, sizeof(SeTopDoc), rescored_cmp);
	out->max_score = out->docs[0].score;
	return true;
}

/*
 * Run the query phase on one shard.  With a timeout, the phase stops when
 * it runs out of time and answers the hits it has collected, the count as
 * a lower bound and timed_out (ES's partial results); an interrupt hook's
 * "stop" fails it with task_cancelled_exception.
 */
bool
se_search_query_shard(SeSearchRequest *req, SeSearchShard *shard,
					  int shard_idx, int ntop, bool count_only,
					  SeShardTopDocs *out, SeError *err)
{
	QueryRun   *qr = palloc0(sizeof(QueryRun));
	SeSearchStop *stop = palloc0(sizeof(SeSearchStop));
	Collector  *c = &qr->c;
	bool		timed_out;
	int			i;

	memset(out, 0, sizeof(*out));
	out->shard_idx = shard_idx;
	out->max_score = NAN;
	se_error_init(&out->error);
	if (count_only)
		ntop = 0;
	/* a rescorer's window is taken from each shard's top (ES's) */
	for (i = 0; ntop > 0 && i < req->nrescore; i++)
		ntop = Max(ntop, req->rescore[i].window_size);
	qr->req = req;
	qr->shard = shard;
	qr->count_only = count_only;
	qr->ntop = ntop;
	qr->nkeys = count_only || ntop == 0 ? 0 : req->nsort;
	qr->threshold = count_only ? SE_TRACK_TOTAL_ACCURATE : req->track_total_hits;
	qr->known = -1;
	qr->max_score = NAN;
	qr->doc_first = qr->nkeys > 0 && !req->sort[0].desc &&
		(req->sort[0].kind == SE_SORT_DOC || req->sort[0].kind == SE_SORT_SHARD_DOC);
	qr->need_scores = req->has_min_score ||
		(ntop > 0 && (req->nsort == 0 || req->track_scores || sort_has_score(req))) ||
		(!count_only && req->aggs != NULL && se_aggs_need_scores(req->aggs));
	/* max_score is reported with relevance order, or with track_scores */
	qr->track_max = qr->need_scores && ntop > 0 && (req->nsort == 0 || req->track_scores);
	collector_init(c, 0, 0, NULL);	/* empty until the weight is built */

	se_search_stop_arm(stop, count_only ? -1 : req->timeout_ms);
	if (setjmp(stop->jb) == 0)
		qr->ok = query_segments(qr, shard_idx, out, err);
	se_search_stop_disarm();
	if (stop->reason == SE_STOP_ABANDONED)
	{
		se_error_set(err, 400, "task_cancelled_exception", "cancelled");
		return false;
	}
	if (stop->reason == SE_STOP_FAILED)
	{
		*err = stop->error;
		return false;
	}
	timed_out = stop->reason == SE_STOP_TIMED_OUT;
	if (!timed_out && (!qr->ok || out->failed))
		return qr->ok;

	out->timed_out = timed_out;
	out->terminated_early = qr->terminated_early;
	out->total = qr->known >= 0 ? qr->known : qr->total;
	out->total_is_lower_bound = qr->known < 0 &&
		qr->threshold != SE_TRACK_TOTAL_DISABLED &&
		(timed_out || (((qr->stopped && !qr->terminated_early) || qr->skipping) &&
					   qr->threshold != SE_TRACK_TOTAL_ACCURATE));
	out->max_score = qr->max_score;
	if (qr->aggs != NULL)
		out->aggs = se_aggs_shard_end(qr->aggs);
	out->ndocs = c->hsize;
	out->docs = palloc(sizeof(SeTopDoc) * Max(1, c->hsize));
	for (i = 0; i < c->hsize; i++)
		out->docs[i] = c->slots[c->heap[i]];
	if (c->hsize > 1)
		qsort_arg(out->docs, c->hsize, sizeof(SeTopDoc), rank_qsort_cmp, &c->rank);
	for (i = 0; i < req->nrescore && out->ndocs > 0; i++)
		if (!rescore_shard(req, i, shard, out, err))
			return false;
	return true;
}

/* ---------------------------------------------------------------------
 * Fetch phase helpers
 * ---------------------------------------------------------------------
 */
static void
write_sort_values(const SeTopDoc *d, const SeSortKey *keys, int nkeys,
				  StringInfo out)
{
	int			i;

	appendStringInfoChar(out, '[');
	for (i = 0; i < nkeys; i++)
	{
		const SeSortKey *k = &keys[i];
		const SeSortValue *v = &d->keys[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		switch (k->type)
		{
			case SE_KEY_SCORE:
				se_search_write_float(out, d->score);
				break;
			case SE_KEY_DOC:
			case SE_KEY_SHARD_DOC:
				appendStringInfo(out, INT64_FORMAT, v->num);
				break;
			case SE_KEY_BYTES:
				if (v->missing)
					appendStringInfoString(out, "null");
				else
					se_json_write_string(out, v->bytes, v->len);
				break;
			case SE_KEY_NUMERIC:
				{
					bool		is_float = k->ftype == SE_FT_DOUBLE || k->ftype == SE_FT_FLOAT;

					if (v->missing)
					{
						/* ES substitutes the extreme value of the order */
						bool		high = (k->missing == SE_MISSING_LAST) != k->desc;

						if (is_float)
							appendStringInfoString(out, high ? "\"Infinity\"" : "\"-Infinity\"");
						else
							appendStringInfo(out, INT64_FORMAT,
											 high ? PG_INT64_MAX : PG_INT64_MIN);
					}
					else if (is_float && k->mfield != NULL)
						se_field_write_sortable(k->mfield, v->num, out);
					else
						appendStringInfo(out, INT64_FORMAT, v->num);
				}
				break;
		}
	}
	appendStringInfoChar(out, ']');
}

static bool explain_doc(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
						uint32 rescored, char **explanation, bool *matched, SeError *err);

/*
 * The "_explanation" of req's query for doc of the shard's segment (a new
 * weight with the query phase's statistics, DFS ones included, so that
 * its value is the hit's score); *matched, when asked, whether it matches.
 */
bool
se_search_explain_doc(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
					  char **explanation, bool *matched, SeError *err)
{
	return explain_doc(req, shard, segment, doc, 0, explanation, matched, err);
}

/*
 * se_search_explain_doc of a hit: rescored's bit i says the doc was in
 * rescorer i's window on its shard, whose explanation then follows the
 * first pass's (ES's QueryRescorer.explain).
 */
static bool
explain_doc(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
			uint32 rescored, char **explanation, bool *matched, SeError *err)
{
	SeWeight   *w = se_weight_build_boosted(req->query, shard, true, req->dfs,
											se_search_index_boost(req, shard->index), err);
	SeSegmentCtx seg;
	StringInfoData out;
	bool		m;

	if (w == NULL)
		return false;
	seg.reader = shard->segments[segment];
	seg.ord = segment;
	seg.max_doc = (int32) se_segment_max_doc(seg.reader);
	initStringInfo(&out);
	if (!se_explain_rescored(req, shard, w, &seg, doc, rescored, &out, &m, err))
		return false;
	*explanation = out.data;
	if (matched)
		*matched = m;
	return true;
}

bool
se_search_fetch_doc(SeSearchRequest *req, SeSearchShard *shard, int segment, int32 doc,
					SeHit *hit, SeError *err)
{
	SeSegmentReader *r;
	const char *id;
	int			idlen = 0;

	if (segment < 0 || segment >= shard->nsegments || shard->segments == NULL)
	{
		se_error_set(err, 500, "illegal_state_exception",
					 "fetch of segment [%d] of a shard with %d segments", segment,
					 shard->nsegments);
		return false;
	}
	r = shard->segments[segment];
	if (doc < 0 || doc >= se_segment_max_doc(r))
	{
		se_error_set(err, 500, "illegal_state_exception", "fetch of doc [%d] past the segment",
					 (int) doc);
		return false;
	}
	id = se_segment_doc_id(r, doc, &idlen);
	hit->id = id ? pnstrdup(id, idlen) : pstrdup("");
	if (req->seq_no_primary_term || req->version)
	{
		/* a remote hit's came with it (search_remote.c shard_fetch) */
		se_segment_doc_meta(r, doc, &hit->meta);
		hit->has_meta = true;
	}
	initStringInfo(&hit->source);
	hit->has_source = false;
	hit->highlight = NULL;
	if (req->highlight != NULL)
	{
		StringInfoData raw;
		StringInfoData hl;

		/* from the whole _source, whatever of it the hit shows */
		initStringInfo(&raw);
		initStringInfo(&hl);
		if (se_segment_source(r, doc, &raw) &&
			!se_highlight_doc(req->highlight, req->query, shard, doc, raw.data, raw.len,
							  &hl, err))
			return false;
		if (hl.len > 0)
			hit->highlight = hl.data;
		pfree(raw.data);
	}
	hit->explanation = NULL;
	if (req->explain && !explain_doc(req, shard, segment, doc, hit->rescored,
									 &hit->explanation, NULL, err))
		return false;
	if (!se_nested_inner_hits(req, shard, segment, doc, &hit->inner_hits, err))
		return false;
	hit->fields = NULL;
	if (req->fetch_fields != NULL)
	{
		StringInfoData fs;

		initStringInfo(&fs);
		if (!se_fetch_fields_doc(req->fetch_fields, shard->mapping, shard->index, r, doc,
								 &fs, err))
			return false;
		if (fs.len > 0)
			hit->fields = fs.data;
	}
	if (req->source.fetch)
	{
		StringInfoData raw;

		initStringInfo(&raw);
		if (!se_segment_source(r, doc, &raw))
		{
			const SeError *serr = se_segment_error(r);

			se_error_set(err, 500, serr && serr->type ? serr->type : "index_corrupted_exception",
						 "%s", serr && serr->reason ? serr->reason : "failed to read _source");
			return false;
		}
		if (se_source_filter_active(&req->source))
		{
			if (!se_source_filter_apply(&req->source, raw.data, raw.len,
										&hit->source, err))
				return false;
			pfree(raw.data);
		}
		else
		{
			pfree(hit->source.data);
			hit->source = raw;
		}
		hit->has_source = true;
	}
	return true;
}

/* One hit of the merged top: its id and source (here or elsewhere), score, sort values. */
static bool
fetch_hit(SeSearchRequest *req, SeSearchShard *shard, const SeTopDoc *d,
		  bool scores, const SeSortKey *keys, SeHit *hit, bool fetched, SeError *err)
{
	if (!fetched)
	{
		memset(hit, 0, sizeof(*hit));
		hit->rescored = d->rescored;
		if (!se_search_fetch_doc(req, shard, d->seg, d->doc, hit, err))
			return false;
	}
	hit->shard_idx = d->shard_idx;
	hit->segment = d->seg;
	hit->doc = d->doc;
	hit->score = scores ? d->score : NAN;
	if (req->nsort > 0 && req->nsort_visible != 0)
	{
		StringInfoData sj;

		initStringInfo(&sj);
		write_sort_values(d, keys, req->nsort_visible > 0 ? req->nsort_visible : req->nsort,
						  &sj);
		hit->sort_json = sj.data;
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------
 */
/* Shard i's top docs as a failed shard's (the caller sets out->error). */
static void
shard_failed(SeShardTopDocs *out, int i)
{
	memset(out, 0, sizeof(*out));
	out->shard_idx = i;
	out->max_score = NAN;
	out->failed = true;
	se_error_init(&out->error);
}

/*
 * Observer of the query phases this process runs for its own request
 * (api/stats.c counts them in the copy's search stats); NULL: none.  Those
 * a search worker or another node runs for it are counted there.
 */
SeSearchQueryHook se_search_query_hook = NULL;

/* se_search_query_shard, timed for se_search_query_hook. */
static bool
query_shard_observed(SeSearchRequest *req, SeSearchShard *shard, int shard_idx, int ntop,
					 bool count_only, SeShardTopDocs *out, SeError *err)
{
	instr_time	start,
				end;
	bool		ok;

	if (se_search_query_hook == NULL)
		return se_search_query_shard(req, shard, shard_idx, ntop, count_only, out, err);
	INSTR_TIME_SET_CURRENT(start);
	ok = se_search_query_shard(req, shard, shard_idx, ntop, count_only, out, err);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	se_search_query_hook(shard, (int64) INSTR_TIME_GET_MICROSEC(end));
	return ok;
}

/* Shard i's top docs: its answer when it was sent away, else run here. */
static bool
shard_top_docs(SeSearchRequest *req, SeSearchShard *shards, int i, int ntop,
			   const SeShardTransport *t, SeShardTopDocs *out, SeError *err)
{
	if (shards[i].failure != NULL)
	{
		shard_failed(out, i);
		se_error_set(&out->error, shards[i].failure->status, shards[i].failure->type,
					 "%s", shards[i].failure->reason);
		return true;
	}
	if (t != NULL && t->remote[i])
	{
		StringInfoData msg;

		initStringInfo(&msg);
		if (t->receive(t->arg, i, &msg))
		{
			int			nkeys = req->nsort > 0 && ntop > 0 ? req->nsort : 0;

			/* a collapsed shard's docs carry their group value last */
			if (req->collapse != NULL && ntop > 0)
				nkeys = (req->nsort > 0 ? req->nsort : 0) + 1;
			switch (se_search_decode_query_phase(msg.data, msg.len, i,
												 shards[i].nsegments, nkeys,
												 out, err))
			{
				case SE_WIRE_OK:
					if (out->failed || req->aggs == NULL)
						return true;
					/* the shard's aggregations came after its top docs */
					if (out->aggs_msg != NULL &&
						(out->aggs = se_aggs_decode(req->aggs, out->aggs_msg,
													out->aggs_len)) != NULL)
						return true;
					break;
				case SE_WIRE_ERROR:
					return false;
				case SE_WIRE_MALFORMED:
					break;
			}
		}
		pfree(msg.data);
	}
	if (shards[i].node != NULL)
	{
		/* on another node: no answer is that shard's failure */
		shard_failed(out, i);
		se_error_set(&out->error, 500, "remote_transport_exception",
					 "[%s][%d] no answer from node [%s]", shards[i].index, shards[i].shard,
					 shards[i].node);
		return true;
	}
	return query_shard_observed(req, &shards[i], i, ntop, false, out, err);
}

SeSearchResult *
se_search_run(SeSearchRequest *req, SeSearchShard *shards, int nshards,
			  SeError *err)
{
	return se_search_run_remote(req, shards, nshards, NULL, err);
}

SeSearchResult *
se_search_run_remote(SeSearchRequest *req, SeSearchShard *shards, int nshards,
					 const SeShardTransport *t, SeError *err)
{
	SeSearchResult *res;
	SeShardTopDocs *tops;
	int			ntop;
	int			nall = 0;
	SeTopDoc   *all;
	RankCtx		rank;
	SeSortKey  *keys = NULL;
	bool		scores;
	bool		lower_bound = false;
	bool		timed_out = false;
	bool		terminated_early = false;
	int64		total = 0;
	float		max_score = NAN;
	int			nok = 0;
	int			first_failed = -1;
	int			i,
				j;

	se_search_stop_disarm();	/* none is left over from an ereport */
	if (!se_search_check_window(req, err))
		return NULL;
	ntop = req->from + req->size;
	tops = palloc0(sizeof(SeShardTopDocs) * Max(1, nshards));
	if (t != NULL)
	{
		/*
		 * Shards kept here run while the others run elsewhere; the first
		 * error in shard order wins, as when every shard runs here.
		 */
		SeError    *errs = palloc0(sizeof(SeError) * Max(1, nshards));
		bool	   *ok = palloc0(sizeof(bool) * Max(1, nshards));
		int			pass;

		for (pass = 0; pass < 2; pass++)
			for (i = 0; i < nshards; i++)
				if ((t->remote[i] ? 1 : 0) == pass)
				{
					se_error_init(&errs[i]);
					ok[i] = shard_top_docs(req, shards, i, ntop, t, &tops[i], &errs[i]);
				}
		for (i = 0; i < nshards; i++)
			if (!ok[i])
			{
				se_error_set(err, errs[i].status, errs[i].type, "%s", errs[i].reason);
				return NULL;
			}
	}
	for (i = 0; i < nshards; i++)
	{
		if (t == NULL && !shard_top_docs(req, shards, i, ntop, NULL, &tops[i], err))
			return NULL;
		if (tops[i].failed)
		{
			if (first_failed < 0)
				first_failed = i;
			continue;
		}
		nok++;
		nall += tops[i].ndocs;
		total += tops[i].total;
		lower_bound |= tops[i].total_is_lower_bound;
		timed_out |= tops[i].timed_out;
		terminated_early |= tops[i].terminated_early;
		if (!isnan(tops[i].max_score) &&
			(isnan(max_score) || tops[i].max_score > max_score))
			max_score = tops[i].max_score;
	}
	if (nshards > 0 && nok == 0)
	{
		SeError    *e = &tops[first_failed].error;

		se_error_set(err, e->status, e->type, "%s", e->reason);
		return NULL;
	}

	/*
	 * Keys for the merge and sort values: any shard's resolution will do,
	 * once the shards that bring hits agree on each key's kind of value (ES
	 * refuses to merge, say, a field mapped long in one index and double in
	 * another; numeric_type makes them agree).
	 */
	if (req->nsort > 0 && ntop > 0)
	{
		SeSortKey  *other = palloc0(sizeof(SeSortKey) * req->nsort);
		int			first = -1;

		for (i = 0; i < nshards; i++)
			if (!tops[i].failed && (first < 0 || (tops[i].ndocs > 0 && tops[first].ndocs == 0)))
				first = i;
		keys = palloc0(sizeof(SeSortKey) * req->nsort);
		if (first >= 0 && !resolve_sort_keys(req, &shards[first], keys, err))
			return NULL;
		for (i = 0; i < nshards; i++)
		{
			if (i == first || tops[i].failed || tops[i].ndocs == 0)
				continue;
			if (!resolve_sort_keys(req, &shards[i], other, err))
				return NULL;
			for (j = 0; j < req->nsort; j++)
			{
				const char *a = sort_family(&keys[j]);
				const char *b = sort_family(&other[j]);

				if (strcmp(a, b) != 0)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "Can't sort on field [%s]; the field has incompatible sort types: [%s] and [%s] across shards!",
								 keys[j].field, a, b);
					return NULL;
				}
			}
		}
	}
	rank.nkeys = keys ? req->nsort : 0;
	rank.keys = keys;
	all = palloc(sizeof(SeTopDoc) * Max(1, nall));
	nall = 0;
	for (i = 0; i < nshards; i++)
		if (!tops[i].failed)
			for (j = 0; j < tops[i].ndocs; j++)
				all[nall++] = tops[i].docs[j];
	if (nall > 1)
		qsort_arg(all, nall, sizeof(SeTopDoc), rank_qsort_cmp, &rank);
	/* collapse: the best head of each group over all shards; pages are of groups */
	if (req->collapse != NULL && nall > 0)
		nall = se_collapse_dedupe(all, nall, rank.nkeys);

	res = palloc0(sizeof(SeSearchResult));
	res->shards_total = nshards;
	res->shards_successful = nok;
	res->shards_failed = nshards - nok;
	res->track_total = req->track_total_hits != SE_TRACK_TOTAL_DISABLED;
	res->seq_no_primary_term = req->seq_no_primary_term;
	if (req->aggs != NULL)
	{
		SeAggPartial **parts = palloc0(sizeof(SeAggPartial *) * Max(1, nshards));
		StringInfoData aggs;

		for (i = 0; i < nshards; i++)
			if (!tops[i].failed)
				parts[i] = tops[i].aggs;
		initStringInfo(&aggs);
		se_aggs_reduce(req->aggs, parts, nshards, req->typed_keys, &aggs);
		res->aggregations = aggs.data;
	}
	res->version = req->version;
	res->no_id = req->stored_fields_none;
	res->terminated_early = terminated_early;
	res->total = total;
	res->timed_out = timed_out;
	if (res->track_total && req->track_total_hits != SE_TRACK_TOTAL_ACCURATE &&
		(lower_bound || total > req->track_total_hits))
	{
		res->total = Min(total, req->track_total_hits);
		res->total_is_lower_bound = true;
	}
	else if (res->track_total && lower_bound)
		res->total_is_lower_bound = true;	/* a shard timed out */
	scores = req->nsort == 0 || req->track_scores || sort_has_score(req);
	res->max_score = max_score;

	res->nhits = Max(0, Min(nall - req->from, req->size));
	res->hits = palloc0(sizeof(SeHit) * Max(1, res->nhits));
	/* the hits of shards on other nodes: fetched there, all at once */
	if (t != NULL && t->fetch != NULL)
	{
		SeHit	   *far = palloc0(sizeof(SeHit) * Max(1, res->nhits));
		int		   *at = palloc(sizeof(int) * Max(1, res->nhits));
		int			nfar = 0;

		for (i = 0; i < res->nhits; i++)
		{
			const SeTopDoc *d = &all[req->from + i];

			if (shards[d->shard_idx].node == NULL)
				continue;
			far[nfar].shard_idx = d->shard_idx;
			far[nfar].segment = d->seg;
			far[nfar].doc = d->doc;
			far[nfar].rescored = d->rescored;
			at[nfar++] = i;
		}
		if (nfar > 0 && !t->fetch(t->arg, far, nfar, err))
			return NULL;
		for (j = 0; j < nfar; j++)
			res->hits[at[j]] = far[j];
	}
	for (i = 0; i < res->nhits; i++)
	{
		const SeTopDoc *d = &all[req->from + i];
		bool		fetched = shards[d->shard_idx].node != NULL;

		if (fetched && (t == NULL || t->fetch == NULL))
		{
			se_error_set(err, 500, "illegal_state_exception",
						 "a hit of shard [%s][%d] on node [%s] cannot be fetched",
						 shards[d->shard_idx].index, shards[d->shard_idx].shard,
						 shards[d->shard_idx].node);
			return NULL;
		}
		SE_SEARCH_TICK(16);		/* a _source block may be decompressed */
		if (!fetch_hit(req, &shards[d->shard_idx], d, scores, keys,
					   &res->hits[i], fetched, err))
			return NULL;
		if (req->collapse != NULL)
		{
			const SeMappedField *gf = shards[d->shard_idx].mapping ?
				se_mapping_find(shards[d->shard_idx].mapping, req->collapse->field) : NULL;

			res->hits[i].collapse_value = se_collapse_value_json(gf, &d->keys[rank.nkeys]);
			se_collapse_hit_fields(req->collapse, &res->hits[i]);
		}
	}
	if (res->nhits > 0 && keys != NULL)
	{
		StringInfoData sj;

		initStringInfo(&sj);
		write_sort_values(&all[req->from + res->nhits - 1], keys, req->nsort, &sj);
		res->last_sort_json = sj.data;
	}
	return res;
}

bool
se_search_count(SeSearchRequest *req, SeSearchShard *shards, int nshards,
				int64 *count, SeError *err)
{
	int64		total = 0;
	int			i;

	for (i = 0; i < nshards; i++)
	{
		SeShardTopDocs top;

		if (!query_shard_observed(req, &shards[i], i, 0, true, &top, err))
			return false;
		if (top.failed)
		{
			se_error_set(err, top.error.status, top.error.type, "%s",
						 top.error.reason);
			return false;
		}
		total += top.total;
	}
	*count = total;
	return true;
}
