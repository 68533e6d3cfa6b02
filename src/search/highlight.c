/*-------------------------------------------------------------------------
 *
 * highlight.c
 *	  Highlighting: the "highlight" section of a search and the fragments
 *	  of each hit, by re-analysis of its _source.
 *
 * The query's terms are gathered per field from the query tree (match,
 * match_phrase, multi_match analyzed with the field's search analyzer;
 * term, terms as given; prefix as a prefix), not from must_not clauses.
 * Each highlighted field's values are read from _source (a multi-field's
 * from its parent) and analyzed with the field's index analyzer; a token
 * equal to a query term of that field (of any field with
 * require_field_match: false) is tagged.  Fragments are cut as Lucene's
 * plain highlighter cuts them (SimpleFragmenter): consecutive runs of
 * tokens of at most fragment_size bytes, scored by the number of distinct
 * terms they hold; the best number_of_fragments are returned in text
 * order (order: score: best first).  number_of_fragments 0 returns each
 * matching value whole; no_match_size returns the start of the first
 * value, cut at a token's end, when nothing matched.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "analysis/analysis.h"
#include "search/search_int.h"

#define HL_DEFAULT_FRAGMENT_SIZE	100
#define HL_DEFAULT_FRAGMENTS		5

typedef struct HlField
{
	char	   *pattern;
	int			fragment_size;	/* -1: the section's */
	int			number_of_fragments;
	int			no_match_size;
} HlField;

struct SeHighlight
{
	char	   *pre_tag;
	char	   *post_tag;
	int			fragment_size;
	int			number_of_fragments;
	int			no_match_size;
	bool		require_field_match;
	bool		order_score;
	SeQuery    *query;			/* highlight_query, or NULL: the search's */
	int			nfields;
	HlField    *fields;
};

typedef struct HlTerm
{
	const char *field;
	char	   *term;
	int			len;
	bool		prefix;
} HlTerm;

typedef struct HlTerms
{
	int			n;
	int			cap;
	HlTerm	   *t;
} HlTerms;

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */
static bool
hl_int(const char *key, const SeJson *v, int *out, SeError *err)
{
	if (v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i >= 0 && v->u.n.i <= PG_INT32_MAX)
	{
		*out = (int) v->u.n.i;
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[highlight] failed to parse field [%s]", key);
	return false;
}

/* pre_tags / post_tags: the first tag is used (ES cycles through several for scores) */
static bool
hl_tag(const char *key, const SeJson *v, char **out, SeError *err)
{
	if (v->type == SE_JSON_ARRAY && v->u.a.count > 0 && v->u.a.items[0]->type == SE_JSON_STRING)
	{
		*out = pstrdup(v->u.a.items[0]->u.s.str);
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		*out = pstrdup(v->u.s.str);
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[highlight] failed to parse field [%s]", key);
	return false;
}

/* Options common to the section and to a field; false with err on a bad one. */
static bool
hl_option(SeHighlight *h, HlField *f, const char *k, const SeJson *v, bool *known,
		  SeError *err)
{
	*known = true;
	if (strcmp(k, "fragment_size") == 0 || strcmp(k, "fragment_offset") == 0)
		return hl_int(k, v, f ? &f->fragment_size : &h->fragment_size, err);
	if (strcmp(k, "number_of_fragments") == 0)
		return hl_int(k, v, f ? &f->number_of_fragments : &h->number_of_fragments, err);
	if (strcmp(k, "no_match_size") == 0)
		return hl_int(k, v, f ? &f->no_match_size : &h->no_match_size, err);
	if (strcmp(k, "type") == 0 || strcmp(k, "fragmenter") == 0 ||
		strcmp(k, "boundary_scanner") == 0 || strcmp(k, "encoder") == 0 ||
		strcmp(k, "tags_schema") == 0 || strcmp(k, "max_analyzed_offset") == 0)
		return true;			/* one highlighter here */
	*known = false;
	return true;
}

SeHighlight *
se_highlight_parse(const SeJson *v, SeError *err)
{
	SeHighlight *h = palloc0(sizeof(SeHighlight));
	int			i,
				j;

	h->pre_tag = "<em>";
	h->post_tag = "</em>";
	h->fragment_size = HL_DEFAULT_FRAGMENT_SIZE;
	h->number_of_fragments = HL_DEFAULT_FRAGMENTS;
	h->require_field_match = true;
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[highlight] expected an object");
		return NULL;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;
		bool		known;

		if (!hl_option(h, NULL, k, x, &known, err))
			return NULL;
		if (known)
			continue;
		if (strcmp(k, "pre_tags") == 0)
		{
			if (!hl_tag(k, x, &h->pre_tag, err))
				return NULL;
		}
		else if (strcmp(k, "post_tags") == 0)
		{
			if (!hl_tag(k, x, &h->post_tag, err))
				return NULL;
		}
		else if (strcmp(k, "require_field_match") == 0 &&
				 (x->type == SE_JSON_TRUE || x->type == SE_JSON_FALSE))
			h->require_field_match = x->type == SE_JSON_TRUE;
		else if (strcmp(k, "order") == 0 && x->type == SE_JSON_STRING)
			h->order_score = strcmp(x->u.s.str, "score") == 0;
		else if (strcmp(k, "highlight_query") == 0)
		{
			if ((h->query = se_query_parse(x, 0, err)) == NULL)
				return NULL;
		}
		else if (strcmp(k, "fields") == 0)
		{
			/* {"f": {..}, ..} or [{"f": {..}}, ..] (ordered) */
			const SeJson *const *objs;
			int			nobj;

			if (x->type == SE_JSON_OBJECT)
			{
				objs = (const SeJson *const *) &x;
				nobj = 1;
			}
			else if (x->type == SE_JSON_ARRAY)
			{
				objs = (const SeJson *const *) x->u.a.items;
				nobj = x->u.a.count;
			}
			else
			{
				se_error_set(err, 400, "parsing_exception", "[highlight] [fields] expected an object");
				return NULL;
			}
			for (j = 0; j < nobj; j++)
			{
				int			m;

				if (objs[j]->type != SE_JSON_OBJECT)
				{
					se_error_set(err, 400, "parsing_exception", "[highlight] [fields] expected an object");
					return NULL;
				}
				for (m = 0; m < objs[j]->u.o.count; m++)
				{
					const SeJson *fo = objs[j]->u.o.members[m].value;
					HlField    *f;
					int			o;

					h->fields = h->fields ? repalloc(h->fields, sizeof(HlField) * (h->nfields + 1))
						: palloc(sizeof(HlField));
					f = &h->fields[h->nfields++];
					f->pattern = pstrdup(objs[j]->u.o.members[m].key);
					f->fragment_size = f->number_of_fragments = f->no_match_size = -1;
					if (fo->type != SE_JSON_OBJECT)
					{
						se_error_set(err, 400, "parsing_exception",
									 "[highlight_field] expected an object for [%s]", f->pattern);
						return NULL;
					}
					for (o = 0; o < fo->u.o.count; o++)
					{
						if (!hl_option(h, f, fo->u.o.members[o].key, fo->u.o.members[o].value,
									   &known, err))
							return NULL;
						if (!known && strcmp(fo->u.o.members[o].key, "pre_tags") != 0 &&
							strcmp(fo->u.o.members[o].key, "post_tags") != 0 &&
							strcmp(fo->u.o.members[o].key, "matched_fields") != 0 &&
							strcmp(fo->u.o.members[o].key, "require_field_match") != 0 &&
							strcmp(fo->u.o.members[o].key, "order") != 0)
						{
							se_error_set(err, 400, "parsing_exception",
										 "[highlight_field] unknown field [%s]",
										 fo->u.o.members[o].key);
							return NULL;
						}
					}
				}
			}
		}
		else
		{
			se_error_set(err, 400, "parsing_exception", "[highlight] unknown field [%s]", k);
			return NULL;
		}
	}
	if (h->nfields == 0)
	{
		se_error_set(err, 400, "parsing_exception", "[highlight] requires [fields]");
		return NULL;
	}
	return h;
}

/* ---------------------------------------------------------------------
 * The query's terms
 * ---------------------------------------------------------------------
 */
static void
add_term(HlTerms *ts, const char *field, const char *term, int len, bool prefix)
{
	HlTerm	   *t;

	if (ts->n == ts->cap)
	{
		ts->cap = Max(16, ts->cap * 2);
		ts->t = ts->t ? repalloc(ts->t, sizeof(HlTerm) * ts->cap) : palloc(sizeof(HlTerm) * ts->cap);
	}
	t = &ts->t[ts->n++];
	t->field = field;
	t->term = pnstrdup(term, len);
	t->len = len;
	t->prefix = prefix;
}

static void
add_value(HlTerms *ts, const char *field, const SeJson *v)
{
	if (v == NULL)
		return;
	if (v->type == SE_JSON_STRING)
		add_term(ts, field, v->u.s.str, v->u.s.len, false);
	else if (v->type == SE_JSON_NUMBER)
		add_term(ts, field, v->u.n.text, v->u.n.len, false);
}

static void
add_analyzed(HlTerms *ts, const SeMapping *m, const char *field, const SeJson *v)
{
	const SeMappedField *f = m ? se_mapping_find(m, field) : NULL;
	const SeAnalyzer *a;
	SeTokenList tl;
	int			i;

	if (v == NULL || v->type != SE_JSON_STRING)
	{
		add_value(ts, field, v);
		return;
	}
	if (f == NULL || f->type != SE_FT_TEXT)
	{
		add_value(ts, field, v);
		return;
	}
	a = f->search_analyzer ? f->search_analyzer : f->analyzer;
	if (a == NULL)
		a = se_analyzer_lookup("standard");
	se_token_list_init(&tl);
	se_analyze(a, v->u.s.str, v->u.s.len, &tl);
	for (i = 0; i < tl.ntokens; i++)
		add_term(ts, field, tl.tokens[i].term, tl.tokens[i].len, false);
	se_token_list_free(&tl);
}

static void
collect_terms(const SeQuery *q, const SeMapping *m, HlTerms *ts)
{
	int			i;

	if (q == NULL)
		return;
	switch (q->kind)
	{
		case SE_Q_MATCH:
		case SE_Q_MATCH_PHRASE:
			add_analyzed(ts, m, q->field, q->value);
			break;
		case SE_Q_MULTI_MATCH:
			for (i = 0; i < q->nfields; i++)
				add_analyzed(ts, m, q->fields[i], q->value);
			break;
		case SE_Q_TERM:
			add_value(ts, q->field, q->value);
			break;
		case SE_Q_TERMS:
			for (i = 0; i < q->nvalues; i++)
				add_value(ts, q->field, q->values[i]);
			break;
		case SE_Q_PREFIX:
			if (q->value && q->value->type == SE_JSON_STRING)
				add_term(ts, q->field, q->value->u.s.str, q->value->u.s.len, true);
			break;
		case SE_Q_BOOL:
		case SE_Q_DIS_MAX:
			for (i = 0; i < q->nmust; i++)
				collect_terms(q->must[i], m, ts);
			for (i = 0; i < q->nshould; i++)
				collect_terms(q->should[i], m, ts);
			for (i = 0; i < q->nfilter; i++)
				collect_terms(q->filter[i], m, ts);
			break;
		case SE_Q_CONSTANT_SCORE:
			collect_terms(q->inner, m, ts);
			break;
		default:
			break;
	}
}

/* The index of the query term tok matches for field, or -1. */
static int
match_term(const HlTerms *ts, const char *field, bool any_field, const char *tok, int len)
{
	int			i;

	for (i = 0; i < ts->n; i++)
	{
		const HlTerm *t = &ts->t[i];

		if (!any_field && strcmp(t->field, field) != 0)
			continue;
		if (t->prefix ? (len >= t->len && memcmp(tok, t->term, t->len) == 0)
			: (len == t->len && memcmp(tok, t->term, len) == 0))
			return i;
	}
	return -1;
}

/* ---------------------------------------------------------------------
 * Values and fragments
 * ---------------------------------------------------------------------
 */
typedef struct HlValues
{
	int			n;
	int			cap;
	const SeJson **v;
} HlValues;

/* Append the string values at dotted path (objects and arrays walked) to vals. */
static void
source_values(const SeJson *v, const char *path, HlValues *vals)
{
	const char *dot;
	int			i;

	if (v == NULL)
		return;
	if (v->type == SE_JSON_ARRAY)
	{
		for (i = 0; i < v->u.a.count; i++)
			source_values(v->u.a.items[i], path, vals);
		return;
	}
	if (*path == '\0')
	{
		if (v->type == SE_JSON_STRING)
		{
			if (vals->n == vals->cap)
			{
				vals->cap = Max(4, vals->cap * 2);
				vals->v = vals->v ? repalloc(vals->v, sizeof(SeJson *) * vals->cap)
					: palloc(sizeof(SeJson *) * vals->cap);
			}
			vals->v[vals->n++] = v;
		}
		return;
	}
	if (v->type != SE_JSON_OBJECT)
		return;
	/* a key may itself hold dots ("a.b": 1): try the longest first */
	for (dot = path + strlen(path); dot != NULL;)
	{
		char	   *key = pnstrdup(path, dot - path);
		const SeJson *child = se_json_get(v, key);

		if (child != NULL)
		{
			source_values(child, *dot ? dot + 1 : dot, vals);
			return;
		}
		/* previous dot */
		while (dot > path && *--dot != '.')
			;
		if (dot == path)
			dot = NULL;
	}
}

typedef struct HlSpan
{
	int			start;
	int			end;
	int			term;			/* index in the terms */
} HlSpan;

/* text[start, end) with the spans in it tagged */
static void
write_tagged(StringInfo out, const SeHighlight *h, const char *text, int start, int end,
			 const HlSpan *spans, int nspans)
{
	int			at = start;
	int			i;

	for (i = 0; i < nspans; i++)
	{
		if (spans[i].start < start || spans[i].end > end)
			continue;
		appendBinaryStringInfo(out, text + at, spans[i].start - at);
		appendStringInfoString(out, h->pre_tag);
		appendBinaryStringInfo(out, text + spans[i].start, spans[i].end - spans[i].start);
		appendStringInfoString(out, h->post_tag);
		at = spans[i].end;
	}
	appendBinaryStringInfo(out, text + at, end - at);
}

typedef struct HlFrag
{
	int			start;
	int			end;
	float		score;
	int			order;
} HlFrag;

static int
frag_cmp_score(const void *a, const void *b)
{
	const HlFrag *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->order - y->order;
}

static int
frag_cmp_order(const void *a, const void *b)
{
	return ((const HlFrag *) a)->order - ((const HlFrag *) b)->order;
}

/*
 * The fragments of one value into frags (appended as JSON strings to out,
 * comma-separated after *nout earlier ones); how many.
 */
static int
value_fragments(const SeHighlight *h, const SeMappedField *f, const char *field,
				const HlTerms *ts, const char *text, int len, int fragment_size,
				int nfrag, int max_out, StringInfo out, int *nout)
{
	SeTokenList tl;
	HlSpan	   *spans;
	int			nspans = 0;
	HlFrag	   *frags;
	int			nfrags = 0;
	int			i;
	int			written = 0;

	if (f->type != SE_FT_TEXT)
	{
		/* a keyword is one token, the whole value */
		HlSpan		one;
		StringInfoData s;

		if (match_term(ts, field, !h->require_field_match, text, len) < 0)
			return 0;
		one.start = 0;
		one.end = len;
		one.term = 0;
		initStringInfo(&s);
		write_tagged(&s, h, text, 0, len, &one, 1);
		if (*nout > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, s.data, s.len);
		(*nout)++;
		return 1;
	}
	se_token_list_init(&tl);
	se_analyze(f->analyzer ? f->analyzer : se_analyzer_lookup("standard"), text, len, &tl);
	spans = palloc(sizeof(HlSpan) * Max(1, tl.ntokens));
	frags = palloc(sizeof(HlFrag) * Max(1, tl.ntokens + 1));
	for (i = 0; i < tl.ntokens; i++)
	{
		const SeToken *t = &tl.tokens[i];
		int			k = match_term(ts, field, !h->require_field_match, t->term, t->len);

		SE_SEARCH_TICK(1);
		if (k >= 0)
		{
			spans[nspans].start = t->start_offset;
			spans[nspans].end = t->end_offset;
			spans[nspans].term = k;
			nspans++;
		}
	}
	if (nspans == 0)
	{
		se_token_list_free(&tl);
		return 0;
	}
	if (nfrag == 0)
	{
		StringInfoData s;

		/* the whole value */
		initStringInfo(&s);
		write_tagged(&s, h, text, 0, len, spans, nspans);
		if (*nout > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, s.data, s.len);
		(*nout)++;
		se_token_list_free(&tl);
		return 1;
	}

	/* SimpleFragmenter: a new fragment where a token would pass fragment_size */
	frags[0].start = 0;
	nfrags = 1;
	for (i = 0; i < tl.ntokens; i++)
	{
		const SeToken *t = &tl.tokens[i];

		if (t->end_offset - frags[nfrags - 1].start > fragment_size &&
			t->start_offset > frags[nfrags - 1].start)
		{
			frags[nfrags - 1].end = t->start_offset;
			frags[nfrags].start = t->start_offset;
			nfrags++;
		}
	}
	frags[nfrags - 1].end = len;
	for (i = 0; i < nfrags; i++)
	{
		int			s,
					d;
		bool	   *seen = palloc0(sizeof(bool) * Max(1, ts->n));

		frags[i].order = i;
		frags[i].score = 0;
		/* trailing whitespace is not part of a fragment */
		while (frags[i].end > frags[i].start &&
			   (text[frags[i].end - 1] == ' ' || text[frags[i].end - 1] == '\n' ||
				text[frags[i].end - 1] == '\t'))
			frags[i].end--;
		for (s = 0; s < nspans; s++)
		{
			if (spans[s].start < frags[i].start || spans[s].end > frags[i].end)
				continue;
			d = spans[s].term;
			frags[i].score += seen[d] ? 0.01f : 1.0f;	/* distinct terms first */
			seen[d] = true;
		}
	}
	qsort(frags, nfrags, sizeof(HlFrag), frag_cmp_score);
	while (nfrags > 0 && frags[nfrags - 1].score <= 0)
		nfrags--;
	nfrags = Min(nfrags, Min(nfrag, max_out));
	if (!h->order_score)
		qsort(frags, nfrags, sizeof(HlFrag), frag_cmp_order);
	for (i = 0; i < nfrags; i++)
	{
		StringInfoData s;

		initStringInfo(&s);
		write_tagged(&s, h, text, frags[i].start, frags[i].end, spans, nspans);
		if (*nout > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, s.data, s.len);
		(*nout)++;
		written++;
	}
	se_token_list_free(&tl);
	return written;
}

/* The first no_match_size bytes of text, cut back to the end of a token. */
static void
no_match_text(const SeMappedField *f, const char *text, int len, int size, StringInfo out)
{
	SeTokenList tl;
	int			cut = 0;
	int			i;

	if (len <= size)
	{
		se_json_write_string(out, text, len);
		return;
	}
	se_token_list_init(&tl);
	if (f->type == SE_FT_TEXT)
		se_analyze(f->analyzer ? f->analyzer : se_analyzer_lookup("standard"), text, len, &tl);
	for (i = 0; i < tl.ntokens; i++)
		if (tl.tokens[i].end_offset <= size)
			cut = tl.tokens[i].end_offset;
	if (cut == 0)
	{
		/* no token ends in it: a UTF-8 boundary */
		cut = size;
		while (cut > 0 && (text[cut] & 0xC0) == 0x80)
			cut--;
	}
	se_token_list_free(&tl);
	se_json_write_string(out, text, cut);
}

bool
se_highlight_doc(const SeHighlight *h, const SeQuery *query, const SeMapping *m,
				 const char *source, int len, StringInfo out, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *src;
	HlTerms		ts;
	int			nfields_out = 0;
	int			i,
				j;
	bool	   *done;

	memset(&ts, 0, sizeof(ts));
	collect_terms(h->query ? h->query : query, m, &ts);
	src = se_json_parse(source, len, &opts, err);
	if (src == NULL)
		return false;
	done = palloc0(sizeof(bool) * Max(1, m ? m->nfields : 1));
	for (i = 0; i < h->nfields && m != NULL; i++)
	{
		const HlField *hf = &h->fields[i];
		int			fragment_size = hf->fragment_size >= 0 ? hf->fragment_size : h->fragment_size;
		int			nfrag = hf->number_of_fragments >= 0 ? hf->number_of_fragments : h->number_of_fragments;
		int			no_match = hf->no_match_size >= 0 ? hf->no_match_size : h->no_match_size;

		for (j = 0; j < m->nfields; j++)
		{
			const SeMappedField *f = m->fields[j];
			HlValues	vals = {0, 0, NULL};
			char	   *spath;
			int			k;
			StringInfoData frags;
			int			nout = 0;

			if (done[j] || (f->type != SE_FT_TEXT && f->type != SE_FT_KEYWORD) ||
				!se_glob_match(hf->pattern, f->path, strlen(f->path)))
				continue;
			done[j] = true;
			/* a multi-field's values are its parent's */
			spath = pstrdup(f->path);
			if (f->is_multi_field && strrchr(spath, '.'))
				*strrchr(spath, '.') = '\0';
			source_values(src, spath, &vals);
			initStringInfo(&frags);
			for (k = 0; k < vals.n; k++)
			{
				const SeJson *v = vals.v[k];

				(void) value_fragments(h, f, f->path, &ts, v->u.s.str, v->u.s.len, fragment_size,
									   nfrag, nfrag == 0 ? PG_INT32_MAX : nfrag - nout,
									   &frags, &nout);
				if (nfrag > 0 && nout >= nfrag)
					break;
			}
			if (nout == 0 && no_match > 0 && vals.n > 0)
			{
				const SeJson *v = vals.v[0];

				no_match_text(f, v->u.s.str, v->u.s.len, no_match, &frags);
				nout = 1;
			}
			if (nout == 0)
				continue;
			appendStringInfoChar(out, nfields_out == 0 ? '{' : ',');
			se_json_write_string(out, f->path, strlen(f->path));
			appendStringInfoString(out, ":[");
			appendBinaryStringInfo(out, frags.data, frags.len);
			appendStringInfoChar(out, ']');
			nfields_out++;
		}
	}
	if (nfields_out > 0)
		appendStringInfoChar(out, '}');
	return true;
}
