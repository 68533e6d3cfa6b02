/*-------------------------------------------------------------------------
 *
 * highlight.c
 *	  Highlighting: the "highlight" section of a search and the fragments
 *	  of each hit, by re-analysis of its _source.
 *
 * The query's terms are gathered per field from the query tree (match,
 * match_phrase*, match_bool_prefix, multi_match analyzed with the field's
 * search analyzer; term, terms as given; prefix; fuzzy and fuzziness as a
 * Levenshtein automaton; wildcard and regexp as their automaton;
 * query_string through the tree it parses to), not from must_not clauses.
 * A phrase's terms are tagged only where the phrase matches (positions
 * within its slop), not each term alone.  Each highlighted field's values
 * are read from _source (a multi-field's from its parent) and analyzed with
 * the field's index analyzer; a token a query term of that field (of any
 * field with require_field_match: false; with matched_fields, of those
 * fields, each analyzing the text with its own analyzer) accepts is tagged.
 *
 * type unified (ES 8's default; fvh is mapped to it, as no term vectors
 * exist here) follows Lucene's UnifiedHighlighter: the values joined by
 * U+2029, passages grown around each match by a break iterator (sentence:
 * UAX #29 sentence boundaries, at most fragment_size units, a longer
 * sentence cut at word boundaries as ES's BoundedBreakIteratorScanner;
 * word: the word itself; chars: boundary_chars within boundary_max_scan of
 * a fragment_size window), scored as Lucene's PassageScorer (BM25 over the
 * passage: k1 1.2, b 0.75, pivot 87), the best number_of_fragments in text
 * order (order: score: best first), each trimmed.  type plain cuts
 * fragments as Lucene's plain highlighter (SimpleFragmenter: consecutive
 * runs of tokens of at most fragment_size units; span: never inside a
 * phrase's match), scored by the distinct terms they hold.
 * number_of_fragments 0 returns each matching value whole; no_match_size
 * returns the start of the first value when nothing matched.  A field's
 * text longer than index.highlight.max_analyzed_offset is ES's error unless
 * the request's max_analyzed_offset (below the index's) truncates the
 * analysis there.  Offsets are bytes into the UTF-8 text; fragment_size,
 * no_match_size, max_analyzed_offset and the passage scorer's lengths count
 * UTF-16 units as ES's (Java strings) do.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "analysis/analysis.h"
#include "search/search_int.h"
#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

#define HL_DEFAULT_FRAGMENT_SIZE	100
#define HL_DEFAULT_FRAGMENTS		5
#define HL_DEFAULT_MAX_SCAN			20
#define HL_DEFAULT_BOUNDARY_CHARS	".,!? \t\n"
#define HL_DEFAULT_MAX_ANALYZED_OFFSET 1000000

/* ES joins a field's values with U+2029, a sentence break */
#define HL_SEP		"\xE2\x80\xA9"
#define HL_SEP_LEN	3

typedef enum HlType
{
	HL_UNIFIED,
	HL_PLAIN,
	HL_FVH						/* run as unified */
} HlType;

typedef enum HlBoundary
{
	HL_BS_SENTENCE,
	HL_BS_WORD,
	HL_BS_CHARS
} HlBoundary;

/* The options of the section, then of a field (the section's, overridden). */
typedef struct HlOpts
{
	char	   *pre_tag;
	char	   *post_tag;
	int			fragment_size;
	int			number_of_fragments;
	int			no_match_size;
	bool		require_field_match;
	bool		order_score;
	bool		html;			/* encoder: html */
	char	   *type;			/* as given: unified, plain or fvh */
	char	   *fragmenter;		/* plain: span (default) or simple */
	HlBoundary	boundary_scanner;
	int			boundary_max_scan;
	char	   *boundary_chars;
	int			max_analyzed_offset;	/* -1: not given */
	SeQuery    *query;			/* highlight_query, or NULL: the search's */
	int			nmatched;
	char	  **matched_fields;
} HlOpts;

typedef struct HlField
{
	char	   *pattern;
	HlOpts		o;
	HlType		type;
} HlField;

/* The terms of a query on a mapping, collected once for all the hits */
typedef struct HlTermsCache
{
	const SeMapping *mapping;
	const SeQuery *query;
	struct HlTerms *ts;
} HlTermsCache;

struct SeHighlight
{
	HlOpts		o;
	int			nfields;
	HlField    *fields;
	int			ncache;
	HlTermsCache *cache;		/* in the highlight's own memory context */
};

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */
static bool
hl_int(const char *ctx, const char *key, const SeJson *v, int min, int *out, SeError *err)
{
	if (v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i >= min && v->u.n.i <= PG_INT32_MAX)
	{
		*out = (int) v->u.n.i;
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[%s] failed to parse field [%s]", ctx, key);
	return false;
}

static bool
hl_string(const char *ctx, const char *key, const SeJson *v, char **out, SeError *err)
{
	if (v->type == SE_JSON_STRING)
	{
		*out = pstrdup(v->u.s.str);
		return true;
	}
	se_error_set(err, 400, "x_content_parse_exception",
				 "[%s] failed to parse field [%s]", ctx, key);
	return false;
}

/* pre_tags / post_tags: the first tag is used (ES cycles through several for scores) */
static bool
hl_tag(const char *ctx, const char *key, const SeJson *v, char **out, SeError *err)
{
	if (v->type == SE_JSON_ARRAY && v->u.a.count > 0 && v->u.a.items[0]->type == SE_JSON_STRING)
	{
		*out = pstrdup(v->u.a.items[0]->u.s.str);
		return true;
	}
	return hl_string(ctx, key, v, out, err);
}

/*
 * One option of the section or of a field (ctx names which, for errors);
 * 1 applied, 0 error, -1 not an option.
 */
static int
hl_option(HlOpts *o, const char *ctx, const char *k, const SeJson *v, SeError *err)
{
	int			ignored;
	char	   *s;

	if (strcmp(k, "fragment_size") == 0)
		return hl_int(ctx, k, v, 0, &o->fragment_size, err);
	if (strcmp(k, "number_of_fragments") == 0)
		return hl_int(ctx, k, v, 0, &o->number_of_fragments, err);
	if (strcmp(k, "no_match_size") == 0)
		return hl_int(ctx, k, v, 0, &o->no_match_size, err);
	if (strcmp(k, "boundary_max_scan") == 0)
		return hl_int(ctx, k, v, 0, &o->boundary_max_scan, err);
	/* fvh's and the plain highlighter's knobs with no effect on these */
	if (strcmp(k, "fragment_offset") == 0 || strcmp(k, "phrase_limit") == 0)
		return hl_int(ctx, k, v, 0, &ignored, err);
	if (strcmp(k, "force_source") == 0 || strcmp(k, "highlight_filter") == 0 ||
		strcmp(k, "boundary_scanner_locale") == 0)
		return 1;
	if (strcmp(k, "max_analyzed_offset") == 0)
	{
		/* ES: a positive integer, or -1 for the index's limit */
		if (v->type == SE_JSON_NUMBER && v->u.n.is_int &&
			(v->u.n.i == -1 || (v->u.n.i > 0 && v->u.n.i <= PG_INT32_MAX)))
		{
			o->max_analyzed_offset = (int) v->u.n.i;
			return 1;
		}
		se_error_set(err, 400, "illegal_argument_exception",
					 "[max_analyzed_offset] must be a positive integer, or -1");
		return 0;
	}
	if (strcmp(k, "pre_tags") == 0)
		return hl_tag(ctx, k, v, &o->pre_tag, err);
	if (strcmp(k, "post_tags") == 0)
		return hl_tag(ctx, k, v, &o->post_tag, err);
	if (strcmp(k, "type") == 0)
		return hl_string(ctx, k, v, &o->type, err);
	if (strcmp(k, "fragmenter") == 0)
		return hl_string(ctx, k, v, &o->fragmenter, err);
	if (strcmp(k, "boundary_chars") == 0)
		return hl_string(ctx, k, v, &o->boundary_chars, err);
	if (strcmp(k, "require_field_match") == 0 &&
		(v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
	{
		o->require_field_match = v->type == SE_JSON_TRUE;
		return 1;
	}
	if (strcmp(k, "order") == 0 && v->type == SE_JSON_STRING)
	{
		o->order_score = strcmp(v->u.s.str, "score") == 0;
		return 1;
	}
	if (strcmp(k, "boundary_scanner") == 0 || strcmp(k, "encoder") == 0 ||
		strcmp(k, "tags_schema") == 0)
	{
		if (!hl_string(ctx, k, v, &s, err))
			return 0;
		if (strcmp(k, "boundary_scanner") == 0 && pg_strcasecmp(s, "sentence") == 0)
			o->boundary_scanner = HL_BS_SENTENCE;
		else if (strcmp(k, "boundary_scanner") == 0 && pg_strcasecmp(s, "word") == 0)
			o->boundary_scanner = HL_BS_WORD;
		else if (strcmp(k, "boundary_scanner") == 0 && pg_strcasecmp(s, "chars") == 0)
			o->boundary_scanner = HL_BS_CHARS;
		else if (strcmp(k, "encoder") == 0 && (strcmp(s, "html") == 0 || strcmp(s, "default") == 0))
			o->html = strcmp(s, "html") == 0;
		else if (strcmp(k, "tags_schema") == 0 && strcmp(s, "styled") == 0)
		{
			/* the first of ES's styled tags (the one a single score uses) */
			o->pre_tag = "<em class=\"hlt1\">";
			o->post_tag = "</em>";
		}
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 strcmp(k, "tags_schema") == 0 ? "Unknown tag schema [%s]" :
						 strcmp(k, "encoder") == 0 ? "Unknown encoder [%s]" :
						 "Invalid boundary_scanner type [%s]", s);
			return 0;
		}
		return 1;
	}
	if (strcmp(k, "highlight_query") == 0)
		return (o->query = se_query_parse(v, 0, err)) != NULL;
	if (strcmp(k, "matched_fields") == 0)
	{
		/* a name or an array of names */
		const SeJson *const *items = v->type == SE_JSON_ARRAY ?
			(const SeJson *const *) v->u.a.items : (const SeJson *const *) &v;
		int			i;

		o->nmatched = v->type == SE_JSON_ARRAY ? v->u.a.count : 1;
		o->matched_fields = palloc(sizeof(char *) * Max(1, o->nmatched));
		for (i = 0; i < o->nmatched; i++)
			if (!hl_string(ctx, k, items[i], &o->matched_fields[i], err))
				return 0;
		return 1;
	}
	return -1;
}

static void
add_field(SeHighlight *h, const char *pattern, const SeJson *fo)
{
	HlField    *f;

	h->fields = h->fields ? repalloc(h->fields, sizeof(HlField) * (h->nfields + 1))
		: palloc(sizeof(HlField));
	f = &h->fields[h->nfields++];
	f->pattern = pstrdup(pattern);
	/* the field's own options are applied once the section's are known */
	f->o.query = (SeQuery *) fo;
}

SeHighlight *
se_highlight_parse(const SeJson *v, SeError *err)
{
	SeHighlight *h = palloc0(sizeof(SeHighlight));
	int			i,
				j;

	h->o.pre_tag = "<em>";
	h->o.post_tag = "</em>";
	h->o.fragment_size = HL_DEFAULT_FRAGMENT_SIZE;
	h->o.number_of_fragments = HL_DEFAULT_FRAGMENTS;
	h->o.require_field_match = true;
	h->o.type = "unified";
	h->o.fragmenter = "span";
	h->o.boundary_scanner = HL_BS_SENTENCE;
	h->o.boundary_max_scan = HL_DEFAULT_MAX_SCAN;
	h->o.boundary_chars = HL_DEFAULT_BOUNDARY_CHARS;
	h->o.max_analyzed_offset = -1;
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[highlight] expected an object");
		return NULL;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;
		int			r = hl_option(&h->o, "highlight", k, x, err);

		if (r == 0)
			return NULL;
		if (r > 0)
			continue;
		if (strcmp(k, "fields") == 0)
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

					if (fo->type != SE_JSON_OBJECT)
					{
						se_error_set(err, 400, "parsing_exception",
									 "[highlight_field] expected an object for [%s]",
									 objs[j]->u.o.members[m].key);
						return NULL;
					}
					add_field(h, objs[j]->u.o.members[m].key, fo);
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
	for (i = 0; i < h->nfields; i++)
	{
		HlField    *f = &h->fields[i];
		const SeJson *fo = (const SeJson *) f->o.query;

		f->o = h->o;
		for (j = 0; j < fo->u.o.count; j++)
		{
			int			r = hl_option(&f->o, "highlight_field", fo->u.o.members[j].key,
									  fo->u.o.members[j].value, err);

			if (r == 0)
				return NULL;
			if (r < 0)
			{
				se_error_set(err, 400, "parsing_exception",
							 "[highlight_field] unknown field [%s]", fo->u.o.members[j].key);
				return NULL;
			}
		}
		/* ES finds these out per field in the fetch; here before any work */
		if (strcmp(f->o.type, "unified") == 0)
			f->type = HL_UNIFIED;
		else if (strcmp(f->o.type, "plain") == 0)
			f->type = HL_PLAIN;
		else if (strcmp(f->o.type, "fvh") == 0)
			f->type = HL_FVH;
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unknown highlighter type [%s] for the field [%s]", f->o.type, f->pattern);
			return NULL;
		}
		if (strcmp(f->o.fragmenter, "span") != 0 && strcmp(f->o.fragmenter, "simple") != 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unknown fragmenter option [%s] for the field [%s]", f->o.fragmenter,
						 f->pattern);
			return NULL;
		}
	}
	return h;
}

/* ---------------------------------------------------------------------
 * The query's terms
 * ---------------------------------------------------------------------
 */
typedef enum HlMatchKind
{
	HM_TERM,
	HM_PREFIX,
	HM_FUZZY,
	HM_REGEX
} HlMatchKind;

typedef struct HlTerm
{
	const char *field;			/* a field name or a pattern */
	HlMatchKind kind;
	char	   *term;			/* HM_TERM, HM_PREFIX */
	int			len;
	bool		ci;				/* compared with the token lowercased */
	SeFuzzy    *fuzzy;
	SeRegex    *re;
	int			phrase;			/* the phrase it is a term of, -1: none */
	int			pos;			/* its position in the phrase */
} HlTerm;

/* A phrase: terms [first, first + n) at their positions, within slop. */
typedef struct HlPhrase
{
	int			first;
	int			n;
	int			slop;
} HlPhrase;

typedef struct HlTerms
{
	int			n;
	int			cap;
	HlTerm	   *t;
	int			nphrases;
	HlPhrase   *phrases;
	bool		any_ci;
} HlTerms;

typedef enum HlMode
{
	HL_M_TERMS,					/* match */
	HL_M_BOOL_PREFIX,			/* the last term a prefix */
	HL_M_PHRASE,
	HL_M_PHRASE_PREFIX
} HlMode;

static HlTerm *
add_term(HlTerms *ts, const char *field, HlMatchKind kind, const char *term, int len, bool ci)
{
	HlTerm	   *t;

	if (ts->n == ts->cap)
	{
		ts->cap = Max(16, ts->cap * 2);
		ts->t = ts->t ? repalloc(ts->t, sizeof(HlTerm) * ts->cap) : palloc(sizeof(HlTerm) * ts->cap);
	}
	t = &ts->t[ts->n++];
	memset(t, 0, sizeof(HlTerm));
	t->field = field;
	t->kind = kind;
	t->phrase = -1;
	t->ci = ci;
	ts->any_ci |= ci;
	if (ci)
	{
		StringInfoData lower;

		initStringInfo(&lower);
		se_utf8_lower(term, len, &lower);
		t->term = lower.data;
		t->len = lower.len;
	}
	else
	{
		t->term = pnstrdup(term, len);
		t->len = len;
	}
	return t;
}

static void
add_value(HlTerms *ts, const char *field, const SeJson *v, bool ci)
{
	if (v == NULL)
		return;
	if (v->type == SE_JSON_STRING)
		(void) add_term(ts, field, HM_TERM, v->u.s.str, v->u.s.len, ci);
	else if (v->type == SE_JSON_NUMBER)
		(void) add_term(ts, field, HM_TERM, v->u.n.text, v->u.n.len, false);
}

static void
add_fuzzy(HlTerms *ts, const char *field, const SeQuery *q, const char *term, int len)
{
	HlTerm	   *t = add_term(ts, field, HM_FUZZY, term, len, false);

	t->fuzzy = se_fuzzy_create(t->term, t->len, se_fuzziness_edits(&q->fuzziness, t->term, t->len),
							   q->prefix_length, q->transpositions);
}

/* A regexp (or a wildcard turned into one); one that does not parse is skipped. */
static void
add_regex(HlTerms *ts, const char *field, const char *re, int len, int flags, bool ci)
{
	SeError		rerr;
	SeRegex    *x;
	HlTerm	   *t;

	se_error_init(&rerr);
	x = se_regex_parse(re, len, flags, ci, &rerr);
	if (x == NULL)
		return;
	t = add_term(ts, field, HM_REGEX, re, len, false);
	t->re = x;
}

/* The text of q analyzed for field: its terms, a phrase or a prefix at the end. */
static void
add_analyzed(HlTerms *ts, const SeMapping *m, const char *field, const SeQuery *q, HlMode mode)
{
	const SeMappedField *f = m ? se_mapping_find(m, field) : NULL;
	const SeJson *v = q->value;
	const SeAnalyzer *a = NULL;
	SeTokenList tl;
	int			phrase = -1;
	int			i;

	if (v == NULL || v->type != SE_JSON_STRING || f == NULL || f->type != SE_FT_TEXT)
	{
		if (v != NULL && v->type == SE_JSON_STRING && q->fuzziness.set)
			add_fuzzy(ts, field, q, v->u.s.str, v->u.s.len);
		else
			add_value(ts, field, v, false);
		return;
	}
	if (q->analyzer)
		a = se_analyzer_lookup(q->analyzer);
	if (a == NULL)
		a = f->search_analyzer ? f->search_analyzer : f->analyzer;
	if (a == NULL)
		a = se_analyzer_lookup("standard");
	se_token_list_init(&tl);
	se_analyze(a, v->u.s.str, v->u.s.len, &tl);
	if ((mode == HL_M_PHRASE || mode == HL_M_PHRASE_PREFIX) && tl.ntokens > 1)
	{
		HlPhrase   *p;

		ts->phrases = ts->phrases ? repalloc(ts->phrases, sizeof(HlPhrase) * (ts->nphrases + 1))
			: palloc(sizeof(HlPhrase));
		phrase = ts->nphrases++;
		p = &ts->phrases[phrase];
		p->first = ts->n;
		p->n = tl.ntokens;
		p->slop = q->slop;
	}
	for (i = 0; i < tl.ntokens; i++)
	{
		const SeToken *k = &tl.tokens[i];
		bool		last = i == tl.ntokens - 1;
		HlTerm	   *t;

		if (q->fuzziness.set && phrase < 0)
		{
			add_fuzzy(ts, field, q, k->term, k->len);
			continue;
		}
		t = add_term(ts, field, last && mode != HL_M_TERMS && mode != HL_M_PHRASE ? HM_PREFIX : HM_TERM,
					 k->term, k->len, false);
		if (phrase >= 0)
		{
			t->phrase = phrase;
			t->pos = k->position - tl.tokens[0].position;
		}
	}
	se_token_list_free(&tl);
}

static void collect_terms(const SeQuery *q, const SeMapping *m, HlTerms *ts);

/* q on the mapped fields a name or pattern names (text and keyword ones). */
static void
collect_on_fields(const SeQuery *q, const char *pattern, const SeMapping *m, HlTerms *ts)
{
	SeQuery		one = *q;
	int			i;

	if (strchr(pattern, '*') == NULL || m == NULL)
	{
		one.field = (char *) pattern;
		collect_terms(&one, m, ts);
		return;
	}
	for (i = 0; i < m->nfields; i++)
	{
		const SeMappedField *f = m->fields[i];

		if ((f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD) &&
			se_glob_match(pattern, f->path, strlen(f->path)))
		{
			one.field = f->path;
			collect_terms(&one, m, ts);
		}
	}
}

/* The value of a term-level query, lowercased when query_string asks it. */
static void
term_value(const SeQuery *q, const char **s, int *len)
{
	*s = q->value->u.s.str;
	*len = q->value->u.s.len;
	if (q->normalize)
	{
		StringInfoData lower;

		initStringInfo(&lower);
		se_utf8_lower(*s, *len, &lower);
		*s = lower.data;
		*len = lower.len;
	}
}

static void
collect_terms(const SeQuery *q, const SeMapping *m, HlTerms *ts)
{
	const char *s;
	int			len;
	int			i;

	if (q == NULL)
		return;
	switch (q->kind)
	{
		case SE_Q_MATCH:
			add_analyzed(ts, m, q->field, q, HL_M_TERMS);
			break;
		case SE_Q_MATCH_BOOL_PREFIX:
			add_analyzed(ts, m, q->field, q, HL_M_BOOL_PREFIX);
			break;
		case SE_Q_MATCH_PHRASE:
			add_analyzed(ts, m, q->field, q, HL_M_PHRASE);
			break;
		case SE_Q_MATCH_PHRASE_PREFIX:
			add_analyzed(ts, m, q->field, q, HL_M_PHRASE_PREFIX);
			break;
		case SE_Q_MULTI_MATCH:
			for (i = 0; i < q->nfields; i++)
			{
				SeQuery		one = *q;

				one.kind = q->mm_type == SE_MM_PHRASE ? SE_Q_MATCH_PHRASE :
					q->mm_type == SE_MM_PHRASE_PREFIX ? SE_Q_MATCH_PHRASE_PREFIX :
					q->mm_type == SE_MM_BOOL_PREFIX ? SE_Q_MATCH_BOOL_PREFIX : SE_Q_MATCH;
				collect_on_fields(&one, q->fields[i], m, ts);
			}
			break;
		case SE_Q_PER_FIELD:
			for (i = 0; i < q->nfields; i++)
				collect_on_fields(q->inner, q->fields[i], m, ts);
			break;
		case SE_Q_TERM:
			add_value(ts, q->field, q->value, q->case_insensitive);
			break;
		case SE_Q_TERMS:
		case SE_Q_TERMS_SET:
			for (i = 0; i < q->nvalues; i++)
				add_value(ts, q->field, q->values[i], false);
			break;
		case SE_Q_PREFIX:
			if (q->value && q->value->type == SE_JSON_STRING)
			{
				term_value(q, &s, &len);
				(void) add_term(ts, q->field, HM_PREFIX, s, len, q->case_insensitive);
			}
			break;
		case SE_Q_FUZZY:
			if (q->value && q->value->type == SE_JSON_STRING)
			{
				term_value(q, &s, &len);
				add_fuzzy(ts, q->field, q, s, len);
			}
			break;
		case SE_Q_WILDCARD:
			if (q->value && q->value->type == SE_JSON_STRING)
			{
				StringInfoData re;

				term_value(q, &s, &len);
				initStringInfo(&re);
				se_wildcard_to_regex(s, len, &re);
				add_regex(ts, q->field, re.data, re.len, 0, q->case_insensitive);
			}
			break;
		case SE_Q_REGEXP:
			if (q->value && q->value->type == SE_JSON_STRING)
				add_regex(ts, q->field, q->value->u.s.str, q->value->u.s.len, q->re_flags,
						  q->case_insensitive);
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
		case SE_Q_FUNCTION_SCORE:
			collect_terms(q->inner, m, ts);
			break;
		default:
			break;
	}
}

/* Does t accept the token (lower: the token lowercased, when some term needs it)? */
static bool
term_accepts(HlTerm *t, const char *tok, int len, const char *lower, int llen)
{
	if (t->ci)
	{
		tok = lower;
		len = llen;
	}
	switch (t->kind)
	{
		case HM_TERM:
			return len == t->len && memcmp(tok, t->term, len) == 0;
		case HM_PREFIX:
			return len >= t->len && memcmp(tok, t->term, t->len) == 0;
		case HM_FUZZY:
			return se_fuzzy_distance(t->fuzzy, tok, len) >= 0;
		case HM_REGEX:
			return se_regex_match(t->re, tok, len);
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Break iterators over a field's text (byte offsets)
 * ---------------------------------------------------------------------
 */

/* The code point at s[i] (invalid UTF-8: the byte), its length in *adv. */
static int
cp_at(const char *s, int len, int i, int *adv)
{
	const unsigned char *u = (const unsigned char *) s + i;
	int			n = len - i;

	if (u[0] < 0x80 || n < 2)
	{
		*adv = 1;
		return u[0];
	}
	if ((u[0] & 0xE0) == 0xC0 && (u[1] & 0xC0) == 0x80)
	{
		*adv = 2;
		return ((u[0] & 0x1F) << 6) | (u[1] & 0x3F);
	}
	if ((u[0] & 0xF0) == 0xE0 && n >= 3 && (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80)
	{
		*adv = 3;
		return ((u[0] & 0x0F) << 12) | ((u[1] & 0x3F) << 6) | (u[2] & 0x3F);
	}
	if ((u[0] & 0xF8) == 0xF0 && n >= 4)
	{
		*adv = 4;
		return ((u[0] & 0x07) << 18) | ((u[1] & 0x3F) << 12) | ((u[2] & 0x3F) << 6) | (u[3] & 0x3F);
	}
	*adv = 1;
	return u[0];
}

/* UAX #29 classes (the subset the sentence and word rules below need) */
static bool
is_para_sep(int c)
{
	return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029;
}

static bool
is_sp(int c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == 0xA0 ||
		(c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool
is_aterm(int c)
{
	return c == '.' || c == 0x2024 || c == 0xFE52 || c == 0xFF0E;
}

static bool
is_sterm(int c)
{
	return c == '!' || c == '?' || c == 0x203C || c == 0x203D || c == 0x3002 ||
		c == 0xFF01 || c == 0xFF1F || c == 0xFF61;
}

static bool
is_close(int c)
{
	return c == '"' || c == '\'' || c == '(' || c == ')' || c == '[' || c == ']' ||
		c == '{' || c == '}' || c == 0xAB || c == 0xBB || (c >= 0x2018 && c <= 0x201F) ||
		c == 0x2039 || c == 0x203A;
}

static bool
is_scontinue(int c)
{
	return c == ',' || c == '-' || c == ':' || c == ';' || c == 0x2013 || c == 0x2014 ||
		c == 0x3001 || c == 0xFF0C || c == 0xFF1A || c == 0xFF1B;
}

static bool
is_upper(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7);
}

static bool
is_lower(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 0xDF && c <= 0xFF && c != 0xF7);
}

/* A letter or digit of a word (other scripts: every code point outside punctuation) */
static bool
is_word(int c)
{
	if (c < 0x80)
		return isalnum(c) || c == '_';
	return !is_para_sep(c) && !is_sp(c) && !is_close(c) && !is_sterm(c) && !is_aterm(c) &&
		!is_scontinue(c) && !(c >= 0x2000 && c <= 0x206F) && !(c >= 0x3000 && c <= 0x303F) &&
		c != 0xA1 && c != 0xBF && c != 0xB7;
}

/*
 * Lengths as ES counts them (Java strings: UTF-16 units).  Offsets stay
 * byte offsets into the UTF-8 text; u[i] holds the units before byte i
 * (NULL when the text is ASCII: units are bytes).
 */
typedef struct HlUnits
{
	const char *text;
	int			len;
	int		   *u;
} HlUnits;

static void
units_init(HlUnits *un, const char *text, int len)
{
	int			n = 0;
	int			i;

	un->text = text;
	un->len = len;
	un->u = NULL;
	if (se_utf16_length(text, len) == len)
		return;
	un->u = palloc(sizeof(int) * (len + 1));
	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) text[i];

		if ((c & 0xC0) != 0x80)
			n += c >= 0xF0 ? 2 : 1;
		un->u[i] = (c & 0xC0) == 0x80 ? n : n - (c >= 0xF0 ? 2 : 1);
	}
	un->u[len] = n;
}

/* The UTF-16 units before byte offset b */
static inline int
units_at(const HlUnits *un, int b)
{
	b = Max(0, Min(b, un->len));
	return un->u ? un->u[b] : b;
}

/*
 * The byte offset of a character boundary at UTF-16 offset units: the first
 * at or past it (up), or the last at or before it (down: one inside a
 * character rounds back to its start).
 */
static int
units_to_byte(const HlUnits *un, int units, bool up)
{
	int			lo = 0,
				hi = un->len;

	if (units <= 0)
		return 0;
	if (un->u == NULL)
		return Min(units, un->len);
	if (units >= un->u[un->len])
		return un->len;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (un->u[mid] >= units)
			hi = mid;
		else
			lo = mid + 1;
	}
	while (lo < un->len && (un->text[lo] & 0xC0) == 0x80)
		lo++;
	if (!up && un->u[lo] > units)
	{
		do
			lo--;
		while (lo > 0 && (un->text[lo] & 0xC0) == 0x80);
	}
	return lo;
}

typedef struct HlBounds
{
	int			n;
	int			cap;
	int		   *b;				/* ascending, 0 and len included */
} HlBounds;

static void
bounds_push(HlBounds *bs, int at)
{
	if (bs->n > 0 && bs->b[bs->n - 1] >= at)
		return;
	if (bs->n == bs->cap)
	{
		bs->cap = Max(64, bs->cap * 2);
		bs->b = bs->b ? repalloc(bs->b, sizeof(int) * bs->cap) : palloc(sizeof(int) * bs->cap);
	}
	bs->b[bs->n++] = at;
}

/*
 * Sentence boundaries as UAX #29 (java.text.BreakIterator's sentence
 * instance): after a paragraph separator; after . ! ? with their closing
 * punctuation, spaces and one separator, except before a lowercase word
 * (SB8: "e.g. the"), a digit right after a period (SB6: "3.5"), an
 * uppercase letter after Upper. (SB7: "U.S.A"), or a comma, colon, ... or
 * another terminator (SB8a).
 */
static void
sentence_bounds(const char *s, int len, HlBounds *bs)
{
	int			i = 0;
	int			prev = 0;

	bounds_push(bs, 0);
	while (i < len)
	{
		int			adv;
		int			c = cp_at(s, len, i, &adv);
		int			j = i + adv;
		int			k,
					n,
					a,
					d;

		SE_SEARCH_TICK(1);
		if (is_para_sep(c))
		{
			if (c == '\r' && j < len && s[j] == '\n')
				j++;
			bounds_push(bs, j);
			prev = c;
			i = j;
			continue;
		}
		if (!is_aterm(c) && !is_sterm(c))
		{
			prev = c;
			i = j;
			continue;
		}
		if (is_aterm(c) && j < len)
		{
			d = cp_at(s, len, j, &a);
			if ((d >= '0' && d <= '9') || ((is_upper(prev) || is_lower(prev)) && is_upper(d)))
			{
				prev = c;
				i = j;
				continue;
			}
		}
		for (k = j; k < len && is_close(d = cp_at(s, len, k, &a)); k += a)
			;
		for (; k < len && is_sp(d = cp_at(s, len, k, &a)); k += a)
			;
		if (k < len)
		{
			d = cp_at(s, len, k, &a);
			if (is_scontinue(d) || is_aterm(d) || is_sterm(d))
			{
				prev = c;
				i = j;
				continue;
			}
			if (is_aterm(c))
			{
				for (n = k; n < len; n += a)
				{
					d = cp_at(s, len, n, &a);
					if (is_upper(d) || is_lower(d) || is_word(d) || is_para_sep(d) ||
						is_aterm(d) || is_sterm(d))
						break;
				}
				if (n < len && is_lower(d))
				{
					prev = c;
					i = j;
					continue;
				}
			}
			d = cp_at(s, len, k, &a);
			if (is_para_sep(d))
			{
				k += a;
				if (d == '\r' && k < len && s[k] == '\n')
					k++;
			}
		}
		bounds_push(bs, k);
		prev = c;
		i = Max(k, j);
	}
	bounds_push(bs, len);
}

/*
 * Word boundaries (java.text.BreakIterator's word instance, simplified): a
 * run of letters and digits (with ' . inside it) is one segment, a run of
 * spaces another, any other character one by itself.
 */
static void
word_bounds(const char *s, int len, HlBounds *bs)
{
	int			i = 0;

	bounds_push(bs, 0);
	while (i < len)
	{
		int			a;
		int			c = cp_at(s, len, i, &a);
		int			j = i + a;

		SE_SEARCH_TICK(1);
		if (is_word(c))
		{
			while (j < len)
			{
				int			b;
				int			d = cp_at(s, len, j, &b);

				if (is_word(d))
					j += b;
				else if ((d == '\'' || d == '.' || d == 0x2019) && j + b < len &&
						 is_word(cp_at(s, len, j + b, &a)))
					j += b;
				else
					break;
			}
		}
		else if (is_sp(c))
		{
			while (j < len && is_sp(cp_at(s, len, j, &a)))
				j += a;
		}
		bounds_push(bs, j);
		i = j;
	}
	bounds_push(bs, len);
}

/* The last boundary before off (0 when none) */
static int
bounds_preceding(const HlBounds *bs, int off)
{
	int			lo = 0,
				hi = bs->n - 1;

	/* the last index with b < off */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (bs->b[mid] < off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return bs->b[lo] < off ? bs->b[lo] : 0;
}

/* The first boundary after off (the text's end when none) */
static int
bounds_following(const HlBounds *bs, int off)
{
	int			lo = 0,
				hi = bs->n - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (bs->b[mid] > off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return bs->b[lo];
}

/* The break iterator of a field: its kind and state (ES's bounded scanner's) */
typedef struct HlBreaker
{
	HlBoundary	kind;
	const char *text;
	int			len;
	int			max_len;		/* fragment_size (sentence: 0 = unbounded) */
	int			max_scan;
	HlUnits		un;				/* max_len and max_scan are UTF-16 units */
	const char *chars;
	HlBounds	sent;
	HlBounds	word;
	int			window_start;
	int			window_end;
	int			inner_start;
	int			inner_end;
} HlBreaker;

static void
breaker_init(HlBreaker *br, const HlOpts *o, const char *text, int len)
{
	memset(br, 0, sizeof(HlBreaker));
	br->kind = o->boundary_scanner;
	br->text = text;
	br->len = len;
	br->max_len = o->fragment_size;
	br->max_scan = o->boundary_max_scan;
	br->chars = o->boundary_chars;
	br->window_start = br->window_end = -1;
	units_init(&br->un, text, len);
	if (br->kind == HL_BS_SENTENCE)
		sentence_bounds(text, len, &br->sent);
	if (br->kind == HL_BS_WORD || (br->kind == HL_BS_SENTENCE && br->max_len > 0))
		word_bounds(text, len, &br->word);
}

static bool
is_boundary_char(const HlBreaker *br, char c)
{
	return c != '\0' && strchr(br->chars, c) != NULL;
}

/* Where the passage around offset starts (BreakIterator.preceding). */
static int
breaker_preceding(HlBreaker *br, int offset)
{
	const HlUnits *un = &br->un;
	int			u = units_at(un, offset);
	int			at,
				i;

	switch (br->kind)
	{
		case HL_BS_WORD:
			return bounds_preceding(&br->word, offset);
		case HL_BS_CHARS:
			/* half a fragment before, moved back to just after a boundary char */
			at = units_to_byte(un, u - br->max_len / 2, false);
			for (i = at; i > 0 && units_at(un, at) - units_at(un, i) < br->max_scan; i--)
				if (is_boundary_char(br, br->text[i - 1]))
					return i;
			return at;
		case HL_BS_SENTENCE:
			if (br->max_len <= 0)
				return bounds_preceding(&br->sent, offset);
			break;
	}

	/*
	 * ES's BoundedBreakIteratorScanner: whole sentences up to max_len, the
	 * window kept for the matches after this one; a longer sentence is cut
	 * at word boundaries around the match.
	 */
	if (offset > br->window_start && offset < br->window_end)
	{
		br->inner_start = br->inner_end;
		br->inner_end = br->window_end;
	}
	else
	{
		br->window_start = br->inner_start = bounds_preceding(&br->sent, offset);
		br->window_end = br->inner_end = bounds_following(&br->sent, offset - 1);
		while (units_at(un, br->inner_end) - units_at(un, br->inner_start) < br->max_len &&
			   br->inner_end < br->len)
		{
			int			end;

			/* not across values: each value's fragments stay its own */
			if (br->inner_end >= HL_SEP_LEN &&
				memcmp(br->text + br->inner_end - HL_SEP_LEN, HL_SEP, HL_SEP_LEN) == 0)
				break;
			end = bounds_following(&br->sent, br->inner_end);

			if (units_at(un, end) - units_at(un, br->inner_start) > br->max_len)
				break;
			br->window_end = br->inner_end = end;
		}
	}
	if (units_at(un, br->inner_end) - units_at(un, br->inner_start) > br->max_len)
	{
		int			remaining;

		if (u - br->max_len > units_at(un, br->inner_start))
			br->inner_start = Max(br->inner_start,
								  bounds_preceding(&br->word,
												   units_to_byte(un, u - br->max_len, true)));
		remaining = Max(0, br->max_len - (u - units_at(un, br->inner_start)));
		if (u + remaining < units_at(un, br->window_end))
			br->inner_end = Min(br->window_end,
								bounds_following(&br->word,
												 units_to_byte(un, u + remaining, false)));
	}
	return br->inner_start;
}

/* Where the passage around offset ends (BreakIterator.following). */
static int
breaker_following(HlBreaker *br, int offset)
{
	const HlUnits *un = &br->un;
	int			at,
				i;

	switch (br->kind)
	{
		case HL_BS_WORD:
			return bounds_following(&br->word, offset);
		case HL_BS_CHARS:
			at = units_to_byte(un, units_at(un, offset) + (br->max_len + 1) / 2, false);
			for (i = at; i < br->len && units_at(un, i) - units_at(un, at) < br->max_scan; i++)
				if (is_boundary_char(br, br->text[i]))
					return i;
			return at;
		case HL_BS_SENTENCE:
			if (br->max_len <= 0)
				return bounds_following(&br->sent, offset);
			break;
	}
	return br->inner_end;
}

/* ---------------------------------------------------------------------
 * Matches in a field's values
 * ---------------------------------------------------------------------
 */
typedef struct HlSpan
{
	int			start;
	int			end;
	const char *term;			/* the token: passages score distinct ones */
	int			len;
} HlSpan;

typedef struct HlSpans
{
	int			n;
	int			cap;
	HlSpan	   *s;
	int			nextents;		/* phrase extents, for the span fragmenter */
	int			ecap;
	HlSpan	   *ext;
} HlSpans;

static void
span_add(HlSpan **arr, int *n, int *cap, int start, int end, const char *term, int len)
{
	if (*n == *cap)
	{
		*cap = Max(16, *cap * 2);
		*arr = *arr ? repalloc(*arr, sizeof(HlSpan) * *cap) : palloc(sizeof(HlSpan) * *cap);
	}
	(*arr)[*n].start = start;
	(*arr)[*n].end = end;
	(*arr)[*n].term = term;
	(*arr)[*n].len = len;
	(*n)++;
}

static int
span_cmp(const void *a, const void *b)
{
	const HlSpan *x = a,
			   *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Sort by offset, without duplicates (a token several terms or fields tagged). */
static void
spans_sort(HlSpans *sp)
{
	int			i,
				n = 0;

	if (sp->n == 0)
		return;
	qsort(sp->s, sp->n, sizeof(HlSpan), span_cmp);
	for (i = 0; i < sp->n; i++)
		if (n == 0 || sp->s[n - 1].start != sp->s[i].start || sp->s[n - 1].end != sp->s[i].end)
			sp->s[n++] = sp->s[i];
	sp->n = n;
}

/* The token of tokens[from..] (either way) at position target within slop that row accepts */
static int
phrase_find(const SeTokenList *tl, const bool *row, int from, int target, int slop)
{
	int			j;

	for (j = from; j < tl->ntokens && tl->tokens[j].position <= target + slop; j++)
		if (row[j] && abs(tl->tokens[j].position - target) <= slop)
			return j;
	for (j = from - 1; j >= 0 && tl->tokens[j].position >= target - slop; j--)
		if (row[j] && abs(tl->tokens[j].position - target) <= slop)
			return j;
	return -1;
}

/*
 * The matches of the query's terms in one value text[0, len) of mapped
 * field f (analyzed as f, terms of the field name unless any_field), at
 * base in the field's text; tokens starting past limit are not analyzed.
 */
static void
value_spans(HlTerms *ts, const SeMappedField *f, const char *name, bool any_field,
			const char *text, int len, int base, int limit, HlSpans *out)
{
	SeTokenList tl;
	SeToken		whole;
	const SeToken *toks;
	int			ntok;
	bool	   *applies = palloc(sizeof(bool) * Max(1, ts->n));
	bool	   *rows = NULL;
	int			i,
				k;

	for (k = 0; k < ts->n; k++)
		applies[k] = any_field || se_glob_match(ts->t[k].field, name, strlen(name));
	se_token_list_init(&tl);
	if (f->type == SE_FT_TEXT)
	{
		se_analyze(f->analyzer ? f->analyzer : se_analyzer_lookup("standard"), text, len, &tl);
		toks = tl.tokens;
		ntok = tl.ntokens;
	}
	else
	{
		/* a keyword is one token, the whole value */
		whole.term = text;
		whole.len = len;
		whole.position = 0;
		whole.start_offset = 0;
		whole.end_offset = len;
		toks = &whole;
		ntok = 1;
	}
	while (ntok > 0 && base + toks[ntok - 1].start_offset > limit)
		ntok--;
	if (ts->nphrases > 0)
		rows = palloc0(sizeof(bool) * ts->n * Max(1, ntok));
	for (i = 0; i < ntok; i++)
	{
		const SeToken *t = &toks[i];
		StringInfoData lower = {NULL, 0, 0, 0};
		bool		alone = false;

		SE_SEARCH_TICK(1);
		if (ts->any_ci)
		{
			initStringInfo(&lower);
			se_utf8_lower(t->term, t->len, &lower);
		}
		for (k = 0; k < ts->n; k++)
		{
			HlTerm	   *term = &ts->t[k];

			if (!applies[k] || (alone && term->phrase < 0) ||
				!term_accepts(term, t->term, t->len, lower.data, lower.len))
				continue;
			if (term->phrase < 0)
				alone = true;
			else
				rows[k * ntok + i] = true;
		}
		if (alone)
			span_add(&out->s, &out->n, &out->cap, base + t->start_offset, base + t->end_offset,
					 pnstrdup(t->term, t->len), t->len);
	}
	/* phrases: each term where the whole phrase matches */
	for (k = 0; k < ts->nphrases; k++)
	{
		const HlPhrase *p = &ts->phrases[k];
		int		   *at = palloc(sizeof(int) * p->n);

		for (i = 0; i < ntok; i++)
		{
			int			m,
						s,
						e;

			if (!rows[p->first * ntok + i])
				continue;
			at[0] = i;
			for (m = 1; m < p->n; m++)
			{
				at[m] = phrase_find(&tl, &rows[(p->first + m) * ntok], i,
									toks[i].position + ts->t[p->first + m].pos, p->slop);
				if (at[m] < 0)
					break;
			}
			if (m < p->n)
				continue;
			s = e = base + toks[i].start_offset;
			for (m = 0; m < p->n; m++)
			{
				const SeToken *t = &toks[at[m]];

				span_add(&out->s, &out->n, &out->cap, base + t->start_offset, base + t->end_offset,
						 pnstrdup(t->term, t->len), t->len);
				s = Min(s, base + t->start_offset);
				e = Max(e, base + t->end_offset);
			}
			span_add(&out->ext, &out->nextents, &out->ecap, s, e, NULL, 0);
		}
	}
	se_token_list_free(&tl);
}

/* The spans of one value for the highlighted field and its matched_fields. */
static void
field_value_spans(HlTerms *ts, const HlField *hf, const SeMapping *m, const SeMappedField *f,
				  const char *text, int len, int base, int limit, HlSpans *out)
{
	int			i;

	value_spans(ts, f, f->path, !hf->o.require_field_match, text, len, base, limit, out);
	/* ES: matched_fields is the fvh's; unified takes it too, plain ignores it */
	if (hf->type != HL_PLAIN)
		for (i = 0; i < hf->o.nmatched; i++)
		{
			const SeMappedField *mf = se_mapping_find(m, hf->o.matched_fields[i]);

			if (mf == NULL || mf == f || (mf->type != SE_FT_TEXT && mf->type != SE_FT_KEYWORD))
				continue;
			value_spans(ts, mf, mf->path, !hf->o.require_field_match, text, len, base, limit, out);
		}
	spans_sort(out);
}

/* ---------------------------------------------------------------------
 * Writing fragments
 * ---------------------------------------------------------------------
 */

/* text[start, end), HTML-escaped with encoder: html (Lucene's SimpleHTMLEncoder) */
static void
write_text(StringInfo out, bool html, const char *text, int start, int end)
{
	int			i;

	if (!html)
	{
		appendBinaryStringInfo(out, text + start, end - start);
		return;
	}
	for (i = start; i < end; i++)
	{
		switch (text[i])
		{
			case '"':
				appendStringInfoString(out, "&quot;");
				break;
			case '&':
				appendStringInfoString(out, "&amp;");
				break;
			case '<':
				appendStringInfoString(out, "&lt;");
				break;
			case '>':
				appendStringInfoString(out, "&gt;");
				break;
			case '\'':
				appendStringInfoString(out, "&#x27;");
				break;
			case '/':
				appendStringInfoString(out, "&#x2F;");
				break;
			default:
				appendStringInfoChar(out, text[i]);
		}
	}
}

/*
 * text[start, end) with the spans in it tagged (overlapping ones as one,
 * a span past end cut there) as one JSON string after the *nout earlier.
 */
static void
write_fragment(StringInfo out, const HlOpts *o, const char *text, int start, int end,
			   const HlSpan *spans, int nspans, bool trim, int *nout)
{
	StringInfoData s;
	int			at = start;
	int			i;

	if (trim)
	{
		/* the passage formatter: no value separator at the end, then String.trim() */
		if (end - start >= HL_SEP_LEN && memcmp(text + end - HL_SEP_LEN, HL_SEP, HL_SEP_LEN) == 0)
			end -= HL_SEP_LEN;
		while (start < end && (unsigned char) text[start] <= ' ')
			start++;
		while (end > start && (unsigned char) text[end - 1] <= ' ')
			end--;
		at = start;
	}
	initStringInfo(&s);
	for (i = 0; i < nspans; i++)
	{
		int			st = spans[i].start;
		int			e = spans[i].end;

		if (st < at || st >= end)
			continue;
		while (i + 1 < nspans && spans[i + 1].start < e)
			e = Max(e, spans[++i].end);
		e = Min(e, end);
		write_text(&s, o->html, text, at, st);
		appendStringInfoString(&s, o->pre_tag);
		write_text(&s, o->html, text, st, e);
		appendStringInfoString(&s, o->post_tag);
		at = e;
	}
	write_text(&s, o->html, text, at, Max(at, end));
	if (*nout > 0)
		appendStringInfoChar(out, ',');
	se_json_write_string(out, s.data, s.len);
	(*nout)++;
	pfree(s.data);
}

/* ---------------------------------------------------------------------
 * unified: passages
 * ---------------------------------------------------------------------
 */
typedef struct HlPassage
{
	int			start;
	int			end;
	float		score;
	int			m0;				/* its spans: [m0, m1) */
	int			m1;
} HlPassage;

/* Best first; of equal scores the later (Lucene's queue evicts the earlier). */
static int
passage_cmp_best(const void *a, const void *b)
{
	const HlPassage *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return y->start - x->start;
}

static int
passage_cmp_score(const void *a, const void *b)
{
	const HlPassage *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->start - y->start;
}

static int
passage_cmp_offset(const void *a, const void *b)
{
	return ((const HlPassage *) a)->start - ((const HlPassage *) b)->start;
}

/*
 * Lucene's PassageScorer (k1 1.2, b 0.75, pivot 87): per distinct term of
 * the passage, BM25's tf over the passage's length times an idf that takes
 * the text's length for the number of docs and the term's frequency in the
 * text for its doc freq; times a norm favouring passages near the start.
 */
static float
passage_score(const HlPassage *p, const int *term_id, const int *ttf, int *tf, const HlUnits *un)
{
	const float k1 = 1.2f,
				b = 0.75f,
				pivot = 87.0f;
	float		num_docs = 1 + units_at(un, un->len) / pivot;
	float		norm = k1 * ((1 - b) + b * ((units_at(un, p->end) - units_at(un, p->start)) / pivot));
	float		score = 0;
	int			i;

	for (i = p->m0; i < p->m1; i++)
		tf[term_id[i]]++;
	for (i = p->m0; i < p->m1; i++)
	{
		int			id = term_id[i];

		if (tf[id] == 0)
			continue;			/* counted */
		score += (k1 + 1) * (float) log(1 + (num_docs + 0.5) / (ttf[id] + 0.5)) *
			(tf[id] / (tf[id] + norm));
		tf[id] = 0;
	}
	return score * (1 + 1 / (float) log(pivot + units_at(un, p->start)));
}

/* The best nfrag passages of the field's text around its spans, written to out. */
static void
unified_fragments(const HlOpts *o, const char *text, int len, const HlSpans *sp, int nfrag,
				  StringInfo out, int *nout)
{
	HlBreaker	br;
	HlPassage  *ps = palloc(sizeof(HlPassage) * sp->n);
	int			np = 0;
	int		   *term_id = palloc(sizeof(int) * sp->n);
	int		   *ttf = palloc0(sizeof(int) * sp->n);
	int		   *tf = palloc0(sizeof(int) * sp->n);
	int			nterms = 0;
	int			last_end = 0;
	int			i,
				j;

	/* each span's term, and how often each term matched in the text */
	for (i = 0; i < sp->n; i++)
	{
		for (j = 0; j < i; j++)
			if (sp->s[j].len == sp->s[i].len && memcmp(sp->s[j].term, sp->s[i].term, sp->s[i].len) == 0)
				break;
		term_id[i] = j < i ? term_id[j] : nterms++;
		ttf[term_id[i]]++;
	}

	/* FieldHighlighter.highlightOffsetsEnums: a passage from each match past the last */
	breaker_init(&br, o, text, len);
	for (i = 0; i < sp->n; i++)
	{
		int			start = sp->s[i].start;
		int			end = sp->s[i].end;

		SE_SEARCH_TICK(1);
		if (np == 0 || start >= ps[np - 1].end)
		{
			int			center = start + (end - start) / 2;
			HlPassage  *p = &ps[np++];
			int			b;

			/* once each: the bounded scanner keeps state (Min/Max evaluate twice) */
			b = breaker_preceding(&br, Max(start + 1, center));
			p->start = Min(start, Max(b, last_end));
			b = breaker_following(&br, Min(end - 1, center));
			last_end = Max(end, Min(b, len));
			p->end = last_end;
			p->m0 = i;
		}
		ps[np - 1].m1 = i + 1;
	}
	for (i = 0; i < np; i++)
		ps[i].score = passage_score(&ps[i], term_id, ttf, tf, &br.un);
	qsort(ps, np, sizeof(HlPassage), passage_cmp_best);
	np = Min(np, nfrag);
	qsort(ps, np, sizeof(HlPassage), o->order_score ? passage_cmp_score : passage_cmp_offset);
	for (i = 0; i < np; i++)
		write_fragment(out, o, text, ps[i].start, ps[i].end, sp->s + ps[i].m0,
					   ps[i].m1 - ps[i].m0, true, nout);
}

/* ES's CustomFieldHighlighter: the first value to the word boundary after no_match_size */
static void
unified_no_match(const HlOpts *o, const char *text, int len, int size, StringInfo out, int *nout)
{
	HlUnits		un;
	int			pos = 0;
	int			end;

	while (pos + HL_SEP_LEN <= len && memcmp(text + pos, HL_SEP, HL_SEP_LEN) == 0)
		pos += HL_SEP_LEN;
	if (pos >= len)
		return;
	/* the first value's end */
	for (end = pos; end + HL_SEP_LEN <= len && memcmp(text + end, HL_SEP, HL_SEP_LEN) != 0; end++)
		;
	if (end + HL_SEP_LEN > len)
		end = len;
	units_init(&un, text, len);
	if (size + units_at(&un, pos) < units_at(&un, end))
	{
		HlBounds	wb = {0, 0, NULL};

		word_bounds(text, len, &wb);
		end = bounds_following(&wb, units_to_byte(&un, size + units_at(&un, pos), false));
	}
	write_fragment(out, o, text, pos, end, NULL, 0, true, nout);
}

/* ---------------------------------------------------------------------
 * plain: fragments of each value
 * ---------------------------------------------------------------------
 */
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

/* Is off strictly inside a phrase's match (the span fragmenter does not cut there)? */
static bool
inside_phrase(const HlSpans *sp, int off)
{
	int			i;

	for (i = 0; i < sp->nextents; i++)
		if (off > sp->ext[i].start && off < sp->ext[i].end)
			return true;
	return false;
}

/*
 * The fragments of one value text[0, len) with its spans sp, at most
 * max_out of them, appended to out.
 */
static void
plain_fragments(const HlField *hf, const SeMappedField *f, const char *text, int len,
				const HlSpans *sp, int max_out, StringInfo out, int *nout)
{
	const HlOpts *o = &hf->o;
	SeTokenList tl;
	HlUnits		un;
	HlFrag	   *frags;
	int			nfrags;
	int			i;

	if (f->type != SE_FT_TEXT)
	{
		write_fragment(out, o, text, 0, len, sp->s, sp->n, false, nout);
		return;
	}
	se_token_list_init(&tl);
	se_analyze(f->analyzer ? f->analyzer : se_analyzer_lookup("standard"), text, len, &tl);
	frags = palloc(sizeof(HlFrag) * Max(1, tl.ntokens + 1));

	/* SimpleFragmenter: a new fragment where a token would pass fragment_size */
	units_init(&un, text, len);
	frags[0].start = 0;
	nfrags = 1;
	for (i = 0; i < tl.ntokens; i++)
	{
		const SeToken *t = &tl.tokens[i];

		if (units_at(&un, t->end_offset) - units_at(&un, frags[nfrags - 1].start) > o->fragment_size &&
			t->start_offset > frags[nfrags - 1].start &&
			(strcmp(o->fragmenter, "simple") == 0 || !inside_phrase(sp, t->start_offset)))
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

		frags[i].order = i;
		frags[i].score = 0;
		/* trailing whitespace is not part of a fragment */
		while (frags[i].end > frags[i].start &&
			   (text[frags[i].end - 1] == ' ' || text[frags[i].end - 1] == '\n' ||
				text[frags[i].end - 1] == '\t'))
			frags[i].end--;
		for (s = 0; s < sp->n; s++)
		{
			bool		seen = false;

			if (sp->s[s].start < frags[i].start || sp->s[s].end > frags[i].end)
				continue;
			for (d = 0; d < s && !seen; d++)
				seen = sp->s[d].start >= frags[i].start && sp->s[d].len == sp->s[s].len &&
					memcmp(sp->s[d].term, sp->s[s].term, sp->s[s].len) == 0;
			frags[i].score += seen ? 0.01f : 1.0f;	/* distinct terms first */
		}
	}
	qsort(frags, nfrags, sizeof(HlFrag), frag_cmp_score);
	while (nfrags > 0 && frags[nfrags - 1].score <= 0)
		nfrags--;
	nfrags = Min(nfrags, max_out);
	if (!o->order_score)
		qsort(frags, nfrags, sizeof(HlFrag), frag_cmp_order);
	for (i = 0; i < nfrags; i++)
		write_fragment(out, o, text, frags[i].start, frags[i].end, sp->s, sp->n, false, nout);
	se_token_list_free(&tl);
}

/* The first no_match_size UTF-16 units of text, cut back to the end of a token. */
static void
plain_no_match(const HlOpts *o, const SeMappedField *f, const char *text, int len, int size,
			   StringInfo out, int *nout)
{
	SeTokenList tl;
	HlUnits		un;
	int			cut = 0;
	int			i;

	units_init(&un, text, len);
	if (units_at(&un, len) <= size)
	{
		write_fragment(out, o, text, 0, len, NULL, 0, false, nout);
		return;
	}
	se_token_list_init(&tl);
	if (f->type == SE_FT_TEXT)
		se_analyze(f->analyzer ? f->analyzer : se_analyzer_lookup("standard"), text, len, &tl);
	for (i = 0; i < tl.ntokens; i++)
		if (units_at(&un, tl.tokens[i].end_offset) <= size)
			cut = tl.tokens[i].end_offset;
	if (cut == 0)
		cut = units_to_byte(&un, size, false);	/* no token ends in it */
	se_token_list_free(&tl);
	write_fragment(out, o, text, 0, cut, NULL, 0, false, nout);
}

/* ---------------------------------------------------------------------
 * A hit's highlight
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

/* The byte offset of UTF-16 offset units in s (len past the end) */
static int
utf16_to_byte(const char *s, int len, int64 units)
{
	int64		n = 0;
	int			i;

	for (i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if ((c & 0xC0) == 0x80)
			continue;
		if (n >= units)
			return i;
		n += c >= 0xF0 ? 2 : 1;
	}
	return len;
}

/*
 * ES's check of the text's length against index.highlight.max_analyzed_offset,
 * unless the request's max_analyzed_offset is below it; the byte offset past
 * which tokens are not analyzed in *limit.  False with err when too long.
 */
static bool
analyzed_limit(const HlField *hf, const SeSearchShard *shard, const char *field, int32 doc,
			   const char *text, int len, int *limit, SeError *err)
{
	int			index_max = shard->max_analyzed_offset > 0 ?
		shard->max_analyzed_offset : HL_DEFAULT_MAX_ANALYZED_OFFSET;
	int			req = hf->o.max_analyzed_offset;
	int64		n;

	*limit = PG_INT32_MAX;
	if (req > 0 && req <= index_max)
	{
		*limit = utf16_to_byte(text, len, req);
		return true;
	}
	if ((int64) len <= index_max || (n = se_utf16_length(text, len)) <= index_max)
		return true;
	se_error_set(err, 400, "illegal_argument_exception",
				 "The length [" INT64_FORMAT "] of field [%s] in doc[%d]/index[%s] exceeds the [index.highlight.max_analyzed_offset] limit [%d]. To avoid this error, set the query parameter [max_analyzed_offset] to a value less than index setting [%d] and this will tolerate long field values by truncating them.",
				 n, field, (int) doc, shard->index ? shard->index : "", index_max, index_max);
	return false;
}

/*
 * The fragments of mapped field f with values vals into out (a JSON array's
 * members); how many.
 */
static bool
field_fragments(const HlField *hf, HlTerms *ts, const SeSearchShard *shard, int32 doc,
				const SeMappedField *f, const HlValues *vals, StringInfo out, int *nout,
				SeError *err)
{
	const HlOpts *o = &hf->o;
	int			nfrag = o->number_of_fragments;
	int			k;

	if (hf->type == HL_PLAIN)
	{
		/* each value by itself, as Lucene's Highlighter gets them */
		for (k = 0; k < vals->n && (nfrag == 0 || *nout < nfrag); k++)
		{
			const SeJson *v = vals->v[k];
			HlSpans		sp;
			int			limit;

			memset(&sp, 0, sizeof(sp));
			if (!analyzed_limit(hf, shard, f->path, doc, v->u.s.str, v->u.s.len, &limit, err))
				return false;
			field_value_spans(ts, hf, shard->mapping, f, v->u.s.str, v->u.s.len, 0, limit, &sp);
			if (sp.n == 0)
				continue;
			if (nfrag == 0)
				write_fragment(out, o, v->u.s.str, 0, v->u.s.len, sp.s, sp.n, false, nout);
			else
				plain_fragments(hf, f, v->u.s.str, v->u.s.len, &sp, nfrag - *nout, out, nout);
		}
		if (*nout == 0 && o->no_match_size > 0 && vals->n > 0)
			plain_no_match(o, f, vals->v[0]->u.s.str, vals->v[0]->u.s.len, o->no_match_size,
						   out, nout);
	}
	else
	{
		/* the values as one text, separated by U+2029 */
		StringInfoData text;
		int		   *base = palloc(sizeof(int) * (vals->n + 1));
		HlSpans		sp;
		int			limit;

		initStringInfo(&text);
		memset(&sp, 0, sizeof(sp));
		for (k = 0; k < vals->n; k++)
		{
			if (k > 0)
				appendBinaryStringInfo(&text, HL_SEP, HL_SEP_LEN);
			base[k] = text.len;
			appendBinaryStringInfo(&text, vals->v[k]->u.s.str, vals->v[k]->u.s.len);
		}
		base[vals->n] = text.len + HL_SEP_LEN;
		if (!analyzed_limit(hf, shard, f->path, doc, text.data, text.len, &limit, err))
			return false;
		for (k = 0; k < vals->n; k++)
			field_value_spans(ts, hf, shard->mapping, f, vals->v[k]->u.s.str,
							  vals->v[k]->u.s.len, base[k], limit, &sp);
		spans_sort(&sp);
		if (sp.n > 0 && nfrag == 0)
		{
			int			s = 0;

			/* each value with a match, whole */
			for (k = 0; k < vals->n; k++)
			{
				int			first = s;

				while (s < sp.n && sp.s[s].start < base[k + 1])
					s++;
				if (s > first)
					write_fragment(out, o, text.data, base[k], base[k] + vals->v[k]->u.s.len,
								   sp.s + first, s - first, false, nout);
			}
		}
		else if (sp.n > 0)
			unified_fragments(o, text.data, text.len, &sp, nfrag, out, nout);
		else if (o->no_match_size > 0)
			unified_no_match(o, text.data, text.len, o->no_match_size, out, nout);
	}
	return true;
}

/*
 * The terms of q on mapping m: analysing the query, building fuzzy and
 * regexp automata is the same work for every hit, so done once per request
 * (the cache lives as long as the parsed highlight section).
 */
static HlTerms *
terms_for(const SeHighlight *ch, const SeQuery *q, const SeMapping *m)
{
	SeHighlight *h = (SeHighlight *) ch;	/* only the cache changes */
#ifndef SE_FRONTEND
	MemoryContext old;
#endif
	HlTerms    *ts;
	int			i;

	for (i = 0; i < h->ncache; i++)
		if (h->cache[i].mapping == m && h->cache[i].query == q)
			return h->cache[i].ts;
#ifndef SE_FRONTEND
	old = MemoryContextSwitchTo(GetMemoryChunkContext(h));
#endif
	ts = palloc0(sizeof(HlTerms));
	collect_terms(q, m, ts);
	h->cache = h->cache ? repalloc(h->cache, sizeof(HlTermsCache) * (h->ncache + 1))
		: palloc(sizeof(HlTermsCache));
	h->cache[h->ncache].mapping = m;
	h->cache[h->ncache].query = q;
	h->cache[h->ncache].ts = ts;
	h->ncache++;
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	return ts;
}

bool
se_highlight_doc(const SeHighlight *h, const SeQuery *query, const SeSearchShard *shard,
				 int32 doc, const char *source, int len, StringInfo out, SeError *err)
{
	const SeMapping *m = shard->mapping;
	SeJsonParseOptions opts = {0};
	SeJson	   *src;
	HlTerms    *section_ts;
	int			nfields_out = 0;
	int			i,
				j;
	bool	   *done;

	if (m == NULL)
		return true;
	section_ts = terms_for(h, h->o.query ? h->o.query : query, m);
	src = se_json_parse(source, len, &opts, err);
	if (src == NULL)
		return false;
	done = palloc0(sizeof(bool) * Max(1, m->nfields));
	for (i = 0; i < h->nfields; i++)
	{
		const HlField *hf = &h->fields[i];
		HlTerms    *ts = section_ts;

		/* the field's own highlight_query */
		if (hf->o.query != h->o.query)
			ts = terms_for(h, hf->o.query, m);
		for (j = 0; j < m->nfields; j++)
		{
			const SeMappedField *f = m->fields[j];
			HlValues	vals = {0, 0, NULL};
			char	   *spath;
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
			if (vals.n == 0)
				continue;
			initStringInfo(&frags);
			if (!field_fragments(hf, ts, shard, doc, f, &vals, &frags, &nout, err))
				return false;
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
