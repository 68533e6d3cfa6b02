/*-------------------------------------------------------------------------
 *
 * collapse.c
 *	  Field collapsing ("collapse"): parsing, the group set the query
 *	  phase and the merge dedupe with, the collapse value of each hit, and
 *	  the bodies of the expand phase's group searches (inner_hits).
 *
 * As ES (Lucene's CollapsingTopDocsCollector): each shard keeps the best
 * doc of each of its top (from + size) groups -- a doc of a group already
 * kept replaces its head when it ranks better, a doc of a new group enters
 * when it beats the worst head (whose group then leaves) -- and ships each
 * head with its group value after its sort values.  The coordinator
 * merges the heads of all shards in rank order and keeps the first of
 * each group, so from/size page over groups.  A doc without the field is
 * in the null group.  The total is the number of matching docs.
 *
 * inner_hits are ES's expand phase: one search per hit and inner_hits
 * definition, the original query AND the hit's group (a term query on the
 * field, or no value for the null group), with the definition's from,
 * size, sort and fetch options; the API layer runs them (api/search_expand.c)
 * through the same search path, so shards on other nodes take part.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "common/hashfn.h"
#include "search/search_int.h"

/*
 * Keys of an inner_hits definition the expand phase passes on as they are;
 * a "collapse" there is ES's second level of collapsing (the group search
 * collapses in turn).
 */
static const char *const inner_copied[] = {
	"sort", "_source", "explain", "version", "seq_no_primary_term", "track_scores",
	"stored_fields", "docvalue_fields", "fields", "script_fields", "highlight", "collapse", NULL
};

static bool
parse_inner_hits(const SeJson *v, SeCollapse *c, SeInnerHits *ih, SeError *err)
{
	int			i;

	memset(ih, 0, sizeof(*ih));
	ih->size = 3;				/* ES's default for inner hits */
	ih->spec = v;
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[inner_hits] expected an object, found [%s]", se_json_type_name(v->type));
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *m = v->u.o.members[i].value;
		int			j;
		bool		known = false;

		if (strcmp(k, "name") == 0 && m->type == SE_JSON_STRING)
			ih->name = pnstrdup(m->u.s.str, m->u.s.len);
		else if ((strcmp(k, "from") == 0 || strcmp(k, "size") == 0) &&
				 m->type == SE_JSON_NUMBER && m->u.n.is_int)
		{
			if (m->u.n.i < 0 || m->u.n.i > PG_INT32_MAX)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "illegal %s value [" INT64_FORMAT "] in [inner_hits]",
							 k, m->u.n.i);
				return false;
			}
			if (k[0] == 'f')
				ih->from = (int) m->u.n.i;
			else
				ih->size = (int) m->u.n.i;
		}
		else if (strcmp(k, "ignore_unmapped") == 0 &&
				 (m->type == SE_JSON_TRUE || m->type == SE_JSON_FALSE))
			;					/* the collapse field is checked on its own */
		else
		{
			for (j = 0; inner_copied[j] != NULL; j++)
				if (strcmp(k, inner_copied[j]) == 0)
					known = true;
			if (!known)
			{
				se_error_set(err, 400, "x_content_parse_exception",
							 "[inner_hits] unknown field [%s]", k);
				return false;
			}
		}
	}
	/* ES names the section after the definition; unnamed: after the field */
	if (ih->name == NULL)
		ih->name = c->field;
	return true;
}

/* "collapse": {"field", "inner_hits": {..} or [..], "max_concurrent_group_searches"} */
SeCollapse *
se_collapse_parse(const SeJson *v, SeError *err)
{
	SeCollapse *c = palloc0(sizeof(SeCollapse));
	const SeJson *ih = NULL;
	int			i;

	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[collapse] expected an object, found [%s]", se_json_type_name(v->type));
		return NULL;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *m = v->u.o.members[i].value;

		if (strcmp(k, "field") == 0 && m->type == SE_JSON_STRING)
			c->field = pnstrdup(m->u.s.str, m->u.s.len);
		else if (strcmp(k, "inner_hits") == 0 &&
				 (m->type == SE_JSON_OBJECT || m->type == SE_JSON_ARRAY))
			ih = m;
		else if (strcmp(k, "max_concurrent_group_searches") == 0 &&
				 m->type == SE_JSON_NUMBER && m->u.n.is_int)
		{
			if (m->u.n.i < 1 || m->u.n.i > PG_INT32_MAX)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "maxConcurrentGroupRequests must be positive, got " INT64_FORMAT,
							 m->u.n.i);
				return NULL;
			}
			c->max_concurrent = (int) m->u.n.i;
		}
		else
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "[collapse] unknown field [%s]", k);
			return NULL;
		}
	}
	if (c->field == NULL)
	{
		se_error_set(err, 400, "x_content_parse_exception",
					 "[collapse] failed to parse field [field]: Required [field]");
		return NULL;
	}
	if (ih != NULL)
	{
		int			n = ih->type == SE_JSON_ARRAY ? ih->u.a.count : 1;

		c->inner = palloc0(sizeof(SeInnerHits) * Max(1, n));
		for (i = 0; i < n; i++)
		{
			int			j;

			if (!parse_inner_hits(ih->type == SE_JSON_ARRAY ? ih->u.a.items[i] : ih,
								  c, &c->inner[i], err))
				return NULL;
			for (j = 0; j < i; j++)
				if (strcmp(c->inner[j].name, c->inner[i].name) == 0)
				{
					se_error_set(err, 400, "illegal_argument_exception",
								 "[inner_hits] already contains an entry for key [%s]",
								 c->inner[i].name);
					return NULL;
				}
			c->ninner++;
		}
	}
	return c;
}

/*
 * What ES refuses together with collapse, once the whole body is read:
 * rescore, and search_after unless the only sort is the collapse field.
 * (A scroll is refused where scrolls start, api/pit.c.)
 */
bool
se_collapse_check_request(const SeSearchRequest *req, SeError *err)
{
	if (req->nrescore > 0)
	{
		se_error_set(err, 400, "search_exception",
					 "cannot use `collapse` in conjunction with `rescore`");
		return false;
	}
	if (req->search_after != NULL &&
		(req->nsort != 1 || req->sort[0].kind != SE_SORT_FIELD ||
		 strcmp(req->sort[0].field, req->collapse->field) != 0))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Cannot use [collapse] in conjunction with [search_after] unless the search is sorted on the same field. Multiple sort fields are not allowed.");
		return false;
	}
	return true;
}

/*
 * The collapse field of a shard's index: a keyword or numeric field with
 * doc values (ES's CollapseBuilder checks and messages).
 */
const SeMappedField *
se_collapse_resolve(const SeCollapse *c, const SeSearchShard *shard, SeError *err)
{
	const SeMappedField *f = shard->mapping ? se_mapping_find(shard->mapping, c->field) : NULL;

	if (f == NULL || f->type == SE_FT_OBJECT)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "no mapping found for `%s` in order to collapse on", c->field);
		return NULL;
	}
	if (f->type != SE_FT_KEYWORD && !(se_field_is_numeric_like(f->type) &&
									  f->type != SE_FT_DATE && f->type != SE_FT_BOOLEAN))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "collapse is not supported for the field [%s] of the type [%s]",
					 f->path, se_field_type_name(f->type));
		return NULL;
	}
	if (!f->doc_values)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "cannot collapse on field `%s` without `doc_values`", f->path);
		return NULL;
	}
	if (c->ninner > 0 && !f->index)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "cannot expand `inner_hits` for collapse field `%s`, only indexed field can retrieve `inner_hits`",
					 f->path);
		return NULL;
	}
	return f;
}

/*
 * The group value of doc (keyword bytes point into the segment; not
 * owned).  false with err when the doc has several values (ES's
 * "must be single valued").
 */
bool
se_collapse_doc_value(const SeMappedField *f, SeSegmentReader *r, int field, int32 doc,
					  SeSortValue *out, SeError *err)
{
	int			n;

	out->missing = true;
	out->bytes = NULL;
	out->len = 0;
	out->num = 0;
	if (field < 0)
		return true;
	if (f->type == SE_FT_KEYWORD)
	{
		n = se_segment_sorted_count(r, field, doc);
		if (n == 1)
		{
			out->bytes = (char *) se_segment_sorted_value(r, field, doc, 0, &out->len);
			out->missing = out->bytes == NULL;
		}
	}
	else
	{
		const int64 *vals;

		n = se_segment_numeric_values(r, field, doc, &vals);
		if (n == 1)
		{
			out->num = vals[0];
			out->missing = false;
		}
	}
	if (n > 1)
	{
		se_error_set(err, 500, "illegal_state_exception",
					 "failed to collapse %d, the collapse field must be single valued", doc);
		return false;
	}
	return true;
}

/*
 * Copy a sort or group value into dst, which owns its bytes (reused between
 * docs); the heap's slots and collapse's group values both keep theirs so.
 */
void
se_sort_value_copy(SeSortValue *dst, const SeSortValue *src)
{
	dst->missing = src->missing;
	dst->num = src->num;
	/* a field is keyword or numeric in one shard: numeric slots keep no bytes */
	if (src->missing || src->bytes == NULL)
	{
		dst->len = 0;
		return;
	}
	if (dst->cap < src->len + 1)
	{
		int			cap = Max(src->len + 1, 16);

		dst->bytes = dst->cap ? repalloc(dst->bytes, cap) : palloc(cap);
		dst->cap = cap;
	}
	memcpy(dst->bytes, src->bytes, src->len);
	dst->bytes[src->len] = '\0';
	dst->len = src->len;
}

/* ---------------------------------------------------------------------
 * Group sets: entry ids (heap slots, merged docs) by group value
 * ---------------------------------------------------------------------
 */
struct SeGroupSet
{
	int			nbuckets;		/* a power of two */
	int		   *bucket;			/* first entry, -1: none */
	int		   *next;			/* per entry: next in its chain */
	const SeSortValue **vals;	/* per entry: its value (NULL: not in the set) */
};

/* Keyword groups have bytes, numeric ones compare num; missing ones are one group. */
static inline bool
value_is_bytes(const SeSortValue *v)
{
	return v->bytes != NULL;
}

static uint32
value_hash(const SeSortValue *v)
{
	if (v->missing)
		return 0;
	if (value_is_bytes(v))
		return hash_bytes((const unsigned char *) v->bytes, v->len);
	return hash_bytes_uint32((uint32) v->num) ^ hash_bytes_uint32((uint32) (v->num >> 32));
}

static bool
value_eq(const SeSortValue *a, const SeSortValue *b)
{
	if (a->missing || b->missing)
		return a->missing && b->missing;
	if (value_is_bytes(a) != value_is_bytes(b))
		return false;
	if (value_is_bytes(a))
		return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
	return a->num == b->num;
}

SeGroupSet *
se_group_set_create(int capacity)
{
	SeGroupSet *s = palloc0(sizeof(SeGroupSet));
	int			i;

	s->nbuckets = 16;
	while (s->nbuckets < 2 * capacity)
		s->nbuckets <<= 1;
	s->bucket = palloc(sizeof(int) * s->nbuckets);
	for (i = 0; i < s->nbuckets; i++)
		s->bucket[i] = -1;
	s->next = palloc(sizeof(int) * Max(1, capacity));
	s->vals = palloc0(sizeof(SeSortValue *) * Max(1, capacity));
	return s;
}

/* The entry holding v's group, or -1. */
int
se_group_set_find(const SeGroupSet *s, const SeSortValue *v)
{
	int			e;

	for (e = s->bucket[value_hash(v) & (s->nbuckets - 1)]; e >= 0; e = s->next[e])
		if (value_eq(s->vals[e], v))
			return e;
	return -1;
}

/* Add entry id (< capacity) for the value *v (which must stay valid). */
void
se_group_set_add(SeGroupSet *s, int id, const SeSortValue *v)
{
	int			b = value_hash(v) & (s->nbuckets - 1);

	s->vals[id] = v;
	s->next[id] = s->bucket[b];
	s->bucket[b] = id;
}

/* Remove entry id (before its value changes). */
void
se_group_set_remove(SeGroupSet *s, int id)
{
	int		   *p;

	if (s->vals[id] == NULL)
		return;
	for (p = &s->bucket[value_hash(s->vals[id]) & (s->nbuckets - 1)]; *p >= 0; p = &s->next[*p])
		if (*p == id)
		{
			*p = s->next[id];
			break;
		}
	s->vals[id] = NULL;
}

/*
 * The merge: docs (in rank order, each with its group value at
 * keys[gkey]) keep the first doc of each group; returns how many are left.
 */
int
se_collapse_dedupe(SeTopDoc *docs, int ndocs, int gkey)
{
	SeGroupSet *s = se_group_set_create(ndocs);
	int			n = 0;
	int			i;

	for (i = 0; i < ndocs; i++)
	{
		SE_SEARCH_TICK(1);
		if (se_group_set_find(s, &docs[i].keys[gkey]) >= 0)
			continue;
		if (n != i)
			docs[n] = docs[i];
		se_group_set_add(s, n, &docs[n].keys[gkey]);
		n++;
	}
	return n;
}

/* ---------------------------------------------------------------------
 * Hits
 * ---------------------------------------------------------------------
 */
/* The group value as JSON: a string, a number, or null (the null group). */
char *
se_collapse_value_json(const SeMappedField *f, const SeSortValue *v)
{
	StringInfoData s;

	initStringInfo(&s);
	if (v->missing)
		appendStringInfoString(&s, "null");
	else if (value_is_bytes(v))
		se_json_write_string(&s, v->bytes, v->len);
	else if (f != NULL)
		se_field_write_sortable(f, v->num, &s);
	else
		appendStringInfo(&s, INT64_FORMAT, v->num);
	return s.data;
}

/*
 * The hit's "fields" gets {"<field>": [value]} (ES puts the collapse
 * value there), first, unless docvalue_fields/fields already show it.
 */
void
se_collapse_hit_fields(const SeCollapse *c, SeHit *hit)
{
	StringInfoData s;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	se_json_write_string(&s, c->field, strlen(c->field));
	appendStringInfo(&s, ":[%s]", hit->collapse_value);
	if (hit->fields != NULL)
	{
		SeError		e;
		SeJson	   *old;

		se_error_init(&e);
		old = se_json_parse(hit->fields, strlen(hit->fields), NULL, &e);
		if (old != NULL && se_json_get(old, c->field) != NULL)
			return;
		if (old != NULL && old->type == SE_JSON_OBJECT && old->u.o.count > 0)
		{
			appendStringInfoChar(&s, ',');
			appendStringInfoString(&s, hit->fields + 1);
			hit->fields = s.data;
			return;
		}
	}
	appendStringInfoChar(&s, '}');
	hit->fields = s.data;
}

/* ---------------------------------------------------------------------
 * The expand phase (inner_hits)
 * ---------------------------------------------------------------------
 */
int
se_search_collapse_ninner(const SeSearchRequest *req)
{
	return req->collapse ? req->collapse->ninner : 0;
}

bool
se_search_has_collapse(const SeSearchRequest *req)
{
	return req->collapse != NULL;
}

const char *
se_search_collapse_inner_name(const SeSearchRequest *req, int i)
{
	return req->collapse->inner[i].name;
}

/*
 * The body of the group search of inner hits i for hit (ES's
 * ExpandSearchPhase): the original query (body's) as must, the group
 * and the post_filter as filters, the definition's from, size and fetch
 * options; a point in time stays the same.
 */
void
se_search_collapse_expand_body(const SeSearchRequest *req, const SeJson *body,
							   const SeHit *hit, int i, StringInfo out)
{
	const SeCollapse *c = req->collapse;
	const SeInnerHits *ih = &c->inner[i];
	const SeJson *q = body ? se_json_get(body, "query") : NULL;
	const SeJson *pf = body ? se_json_get(body, "post_filter") : NULL;
	const SeJson *pit = body ? se_json_get(body, "pit") : NULL;
	int			k;

	appendStringInfoString(out, "{\"query\":{\"bool\":{");
	if (q != NULL)
	{
		appendStringInfoString(out, "\"must\":[");
		se_json_write(out, q);
		appendStringInfoString(out, "],");
	}
	appendStringInfoString(out, "\"filter\":[");
	if (strcmp(hit->collapse_value, "null") == 0)
	{
		appendStringInfoString(out, "{\"bool\":{\"must_not\":[{\"exists\":{\"field\":");
		se_json_write_string(out, c->field, strlen(c->field));
		appendStringInfoString(out, "}}]}}");
	}
	else
	{
		appendStringInfoString(out, "{\"term\":{");
		se_json_write_string(out, c->field, strlen(c->field));
		appendStringInfo(out, ":%s}}", hit->collapse_value);
	}
	if (pf != NULL)
	{
		appendStringInfoChar(out, ',');
		se_json_write(out, pf);
	}
	appendStringInfo(out, "]}},\"from\":%d,\"size\":%d", ih->from, ih->size);
	if (pit != NULL)
	{
		appendStringInfoString(out, ",\"pit\":");
		se_json_write(out, pit);
	}
	for (k = 0; k < ih->spec->u.o.count; k++)
	{
		const char *key = ih->spec->u.o.members[k].key;
		int			j;

		for (j = 0; inner_copied[j] != NULL; j++)
			if (strcmp(key, inner_copied[j]) == 0)
			{
				appendStringInfoChar(out, ',');
				se_json_write_string(out, key, strlen(key));
				appendStringInfoChar(out, ':');
				se_json_write(out, ih->spec->u.o.members[k].value);
			}
	}
	appendStringInfoChar(out, '}');
}
