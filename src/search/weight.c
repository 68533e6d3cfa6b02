/*-------------------------------------------------------------------------
 *
 * weight.c
 *	  Bind a parsed query to one shard: resolve fields through the mapping,
 *	  analyze text, encode values, gather the shard's BM25 statistics.
 *
 * This is where ES's QueryBuilder.toQuery and Lucene's createWeight meet:
 * the resulting SeWeight tree holds everything per-segment scorers need,
 * with term statistics summed over all segments of the shard, deleted
 * documents included (Lucene does not subtract deletes).  The rewrites
 * mirror what ES and Lucene do so that scores agree: a single analyzed
 * token is a bare term query; duplicate SHOULD/MUST terms are merged by
 * summing boosts; a bool with only must_not clauses gets a match-all
 * filter; an empty bool matches all.
 *
 * ES's limits on query size hold here, per shard as in ES: a bool query
 * or a match query's terms beyond max_clause_count fail as Lucene's
 * BooleanQuery.Builder does (too_many_clauses); the leaves of the whole
 * query -- every term of a match or phrase, every other leaf query --
 * are counted as ES's MaxClauseCountQueryVisitor counts them (and fail
 * with too_many_nested_clauses) before their terms are looked up; a terms
 * query is held to the index's max_terms_count, a regexp to its
 * max_regex_length (in characters).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <sys/time.h>

#include "analysis/analysis.h"
#include "search/search_int.h"

int			se_search_max_clause_count = SE_MAX_CLAUSE_COUNT_DEFAULT;

typedef struct BuildCtx
{
	SeSearchShard *shard;
	SeError    *err;
	int64		now_millis;		/* for date math; fixed per request */
	int64		nclauses;		/* leaf clauses so far */
	const SeDfsStats *global;	/* statistics to score with, or NULL */
	SeDfsStats *collect;		/* the DFS phase's record, or NULL */
} BuildCtx;

/*
 * Count n leaf clauses; false (err set) once the query has more than
 * max_clause_count.  The total is checked again at the end, so a caller
 * that builds nothing costly may ignore the result.
 */
static bool
add_clauses(BuildCtx *c, int n)
{
	c->nclauses += n;
	if (c->nclauses <= se_search_max_clause_count)
		return true;
	se_error_set(c->err, 400, "too_many_nested_clauses",
				 "Query contains too many nested clauses; maxClauseCount is set to %d",
				 se_search_max_clause_count);
	return false;
}

/* Lucene's BooleanQuery.Builder refuses more than max_clause_count clauses. */
static bool
check_bool_clauses(BuildCtx *c, int n)
{
	if (n <= se_search_max_clause_count)
		return true;
	se_error_set(c->err, 400, "too_many_clauses", "maxClauseCount is set to %d",
				 se_search_max_clause_count);
	return false;
}

/*
 * Copy a term: numeric, date and boolean terms are 8-byte binary values
 * that may contain NUL bytes, so never pnstrdup them.
 */
static char *
term_dup(const char *term, int len)
{
	char	   *t = palloc(len + 1);

	memcpy(t, term, len);
	t[len] = '\0';
	return t;
}

static SeWeight *build(BuildCtx *c, const SeQuery *q, float boost,
					   bool scoring);

static SeWeight *
new_weight(SeWeightKind kind, bool scoring)
{
	SeWeight   *w = palloc0(sizeof(SeWeight));

	w->kind = kind;
	w->scoring = scoring;
	return w;
}

static SeWeight *
none_weight(void)
{
	return new_weight(SE_W_NONE, false);
}

static SeWeight *
all_weight(float score, bool scoring)
{
	SeWeight   *w = new_weight(SE_W_ALL, scoring);

	w->const_score = scoring ? score : 0.0f;
	w->max_score = w->const_score;
	return w;
}

/* Upper bound of a sum of sub-scores, widened for float rounding. */
static float
widen_bound(double sum)
{
	if (sum <= 0)
		return 0.0f;
	return (float) (sum * (1.0 + 1e-5) + 1e-30);
}

static SeWeight *geo_refusal(BuildCtx *c, const SeMappedField *f, bool range);

static const SeMappedField *
find_field(BuildCtx *c, const char *name)
{
	if (c->shard->mapping == NULL)
		return NULL;
	return se_mapping_find(c->shard->mapping, name);
}

/*
 * Field statistics to score with: the global ones when the DFS phase has
 * them, else the shard's (recorded for a DFS phase).  DOCS-only fields
 * count one per posting, as Lucene reports their sum_total_term_freq.
 */
static void
shard_field_stats(BuildCtx *c, const char *field, int64 *doc_count,
				  int64 *sum_ttf)
{
	SeSearchShard *sh = c->shard;
	SeFieldStats all = {0};
	const SeDfsField *g;
	int			s;

	if (c->global != NULL && (g = se_dfs_find_field(c->global, field)) != NULL)
	{
		*doc_count = g->stats.doc_count;
		*sum_ttf = g->stats.sum_total_term_freq;
		return;
	}
	for (s = 0; s < sh->nsegments; s++)
	{
		SeSegmentReader *r = sh->segments[s];
		int			f = se_segment_field(r, field);
		SeFieldStats st;

		if (f < 0)
			continue;
		se_segment_field_stats(r, f, &st);
		all.doc_count += st.doc_count;
		all.sum_doc_freq += st.sum_doc_freq;
		if (se_segment_field_index_options(r, f) <= SE_IDX_DOCS)
			all.sum_total_term_freq += st.sum_doc_freq;
		else
			all.sum_total_term_freq += st.sum_total_term_freq;
	}
	if (c->collect != NULL)
		se_dfs_record_field(c->collect, field, &all);
	*doc_count = all.doc_count;
	*sum_ttf = all.sum_total_term_freq;
}

/*
 * The doc_freq to score term with: the global one when the DFS phase has
 * it, else the shard's, df (recorded for a DFS phase, with its
 * total_term_freq summed from the segments' term infos).
 */
static int64
scoring_doc_freq(BuildCtx *c, const char *field, const char *term, int len,
				 int64 df, const SeSegTerm *seg_terms)
{
	const SeDfsTerm *g;

	if (c->global != NULL && (g = se_dfs_find_term(c->global, field, term, len)) != NULL)
		return g->doc_freq;
	if (c->collect != NULL)
	{
		int64		ttf = 0;
		int			s;

		for (s = 0; s < c->shard->nsegments; s++)
			if (seg_terms[s].found)
				ttf += seg_terms[s].ti.total_term_freq;
		se_dfs_record_term(c->collect, field, term, len, df, ttf);
	}
	return df;
}

/* Locate a term in every segment; returns the shard's doc_freq. */
static int64
lookup_term(BuildCtx *c, const char *field, const char *term, int len,
			SeSegTerm *out)
{
	SeSearchShard *sh = c->shard;
	int64		df = 0;
	int			s;

	for (s = 0; s < sh->nsegments; s++)
	{
		SeSegmentReader *r = sh->segments[s];
		int			f = se_segment_field(r, field);

		SE_SEARCH_TICK(1);
		out[s].found = false;
		if (f < 0)
			continue;
		if (se_segment_seek_exact(r, f, term, len, &out[s].ti))
		{
			out[s].found = true;
			df += out[s].ti.doc_freq;
		}
	}
	return df;
}

/* A single-term weight: BM25 scored, or constant (points in ES). */
static SeWeight *
term_weight(BuildCtx *c, const char *field, const char *term, int len,
			float boost, bool scoring, bool bm25)
{
	SeWeight   *w = new_weight(SE_W_TERM, scoring);
	int			nseg = Max(1, c->shard->nsegments);
	int64		df;

	if (!add_clauses(c, 1))
		return NULL;
	w->field = pstrdup(field);
	w->nterms = 1;
	w->terms = palloc(sizeof(char *));
	w->term_lens = palloc(sizeof(int));
	w->seg_terms = palloc(sizeof(SeSegTerm *));
	w->terms[0] = term_dup(term, len);
	w->term_lens[0] = len;
	w->seg_terms[0] = palloc0(sizeof(SeSegTerm) * nseg);
	df = lookup_term(c, field, term, len, w->seg_terms[0]);
	w->bm25 = bm25 && scoring;
	if (df == 0 && w->bm25 && c->collect != NULL)
	{
		/* a shard without the term still counts in the sums (DFS phase) */
		int64		doc_count,
					sum_ttf;

		(void) scoring_doc_freq(c, field, term, len, 0, w->seg_terms[0]);
		shard_field_stats(c, field, &doc_count, &sum_ttf);
	}
	if (df == 0)
		return none_weight();
	if (w->bm25)
	{
		int64		doc_count,
					sum_ttf;

		df = scoring_doc_freq(c, field, term, len, df, w->seg_terms[0]);
		shard_field_stats(c, field, &doc_count, &sum_ttf);
		if (doc_count < df)
			doc_count = df;
		w->sim = palloc(sizeof(SeBM25));
		se_bm25_init(w->sim, boost, se_bm25_idf(df, doc_count),
					 se_bm25_avgdl(sum_ttf, doc_count));
		w->sim->doc_freq = df;
		w->sim->doc_count = doc_count;
		w->max_score = w->sim->weight;
	}
	else
	{
		w->const_score = scoring ? boost : 0.0f;
		w->max_score = w->const_score;
	}
	return w;
}

/*
 * A TERM weight of term on field with its segments located; *df gets the
 * doc_freq to score with (global under DFS).  term_weight_bm25 then scores
 * it with df (a blended one when several terms share it).
 */
static SeWeight *
term_weight_lookup(BuildCtx *c, const char *field, const char *term, int len,
				   bool scoring, int64 *df)
{
	SeWeight   *t = new_weight(SE_W_TERM, scoring);

	t->field = pstrdup(field);
	t->nterms = 1;
	t->terms = palloc(sizeof(char *));
	t->term_lens = palloc(sizeof(int));
	t->seg_terms = palloc(sizeof(SeSegTerm *));
	t->terms[0] = term_dup(term, len);
	t->term_lens[0] = len;
	t->seg_terms[0] = palloc0(sizeof(SeSegTerm) * Max(1, c->shard->nsegments));
	*df = lookup_term(c, field, term, len, t->seg_terms[0]);
	*df = scoring_doc_freq(c, field, term, len, *df, t->seg_terms[0]);
	return t;
}

static void
term_weight_bm25(BuildCtx *c, SeWeight *t, int64 df, float boost)
{
	int64		doc_count,
				sum_ttf;

	t->bm25 = t->scoring;
	t->max_score = 0.0f;
	if (!t->scoring)
		return;
	shard_field_stats(c, t->field, &doc_count, &sum_ttf);
	doc_count = Max(doc_count, df);
	t->sim = palloc(sizeof(SeBM25));
	se_bm25_init(t->sim, boost, se_bm25_idf(df, doc_count),
				 se_bm25_avgdl(sum_ttf, doc_count));
	t->sim->doc_freq = df;
	t->sim->doc_count = doc_count;
	t->max_score = t->sim->weight;
}

static SeWeight *
docset_weight(BuildCtx *c, SeDocSetKind kind, const char *field, float boost,
			  bool scoring)
{
	SeWeight   *w = new_weight(SE_W_DOCSET, scoring);

	(void) add_clauses(c, 1);
	w->ds_kind = kind;
	w->field = pstrdup(field);
	w->const_score = scoring ? boost : 0.0f;
	w->max_score = w->const_score;
	return w;
}

static void
docset_add_term(SeWeight *w, const char *term, int len)
{
	if (w->terms == NULL)
	{
		w->terms = palloc(sizeof(char *) * 4);
		w->term_lens = palloc(sizeof(int) * 4);
	}
	else if ((w->nterms & (w->nterms - 1)) == 0 && w->nterms >= 4)
	{
		w->terms = repalloc(w->terms, sizeof(char *) * w->nterms * 2);
		w->term_lens = repalloc(w->term_lens, sizeof(int) * w->nterms * 2);
	}
	w->terms[w->nterms] = term_dup(term, len);
	w->term_lens[w->nterms] = len;
	w->nterms++;
}

/* Text of a leaf JSON value as ES stringifies it for text fields. */
static bool
json_text(BuildCtx *c, const SeJson *v, const char **s, int *len)
{
	switch (v->type)
	{
		case SE_JSON_STRING:
			*s = v->u.s.str;
			*len = v->u.s.len;
			return true;
		case SE_JSON_NUMBER:
			*s = v->u.n.text;
			*len = v->u.n.len;
			return true;
		case SE_JSON_TRUE:
			*s = "true";
			*len = 4;
			return true;
		case SE_JSON_FALSE:
			*s = "false";
			*len = 5;
			return true;
		default:
			break;
	}
	se_error_set(c->err, 400, "query_shard_exception",
				 "failed to create query: unsupported value of type [%s]",
				 se_json_type_name(v->type));
	return false;
}

/* Encoded term of a value for a numeric-like field. */
static bool
numeric_term(BuildCtx *c, const SeMappedField *f, const SeJson *v,
			 char term[8])
{
	SeError		lerr;
	int64		sv;

	se_error_init(&lerr);
	if (!se_field_sortable_value(f, v, &sv, &lerr))
	{
		se_error_set(c->err, 400, "query_shard_exception",
					 "failed to create query: %s",
					 lerr.reason ? lerr.reason : "invalid value");
		return false;
	}
	se_sortable_term(sv, term);
	return true;
}

/*
 * The exact-value query on one field (term query, and match on non-text
 * fields): keyword/text/boolean terms score with BM25, numeric and date
 * fields are constant score as ES's point queries.
 */
static SeWeight *
exact_value_weight(BuildCtx *c, const SeMappedField *f, const SeJson *v,
				   float boost, bool scoring)
{
	const char *s;
	int			len;
	char		term[8];

	switch (f->type)
	{
		case SE_FT_TEXT:
		case SE_FT_KEYWORD:
			if (!json_text(c, v, &s, &len))
				return NULL;
			return term_weight(c, f->path, s, len, boost, scoring, true);
		case SE_FT_BOOLEAN:
			if (!numeric_term(c, f, v, term))
				return NULL;
			return term_weight(c, f->path, term, 8, boost, scoring, true);
		case SE_FT_OBJECT:
			return none_weight();
		default:
			if (!numeric_term(c, f, v, term))
				return NULL;
			return term_weight(c, f->path, term, 8, boost, scoring, false);
	}
}

static SeWeight *
ids_weight(BuildCtx *c, const SeJson *const *values, int n, float boost,
		   bool scoring)
{
	SeWeight   *w = docset_weight(c, SE_DS_TERMS, SE_ID_FIELD, boost, scoring);
	int			i;

	for (i = 0; i < n; i++)
	{
		const char *s;
		int			len;

		SE_SEARCH_TICK(1);
		if (!json_text(c, values[i], &s, &len))
			return NULL;
		docset_add_term(w, s, len);
	}
	if (w->nterms == 0)
		return none_weight();
	return w;
}

static const SeAnalyzer *
query_analyzer(BuildCtx *c, const SeMappedField *f, const char *override)
{
	const SeAnalyzer *a;

	if (override != NULL)
	{
		a = se_analyzer_lookup(override);
		if (a == NULL)
			se_error_set(c->err, 400, "query_shard_exception",
						 "[match] analyzer [%s] not found", override);
		return a;
	}
	if (f->search_analyzer != NULL)
		return f->search_analyzer;
	if (f->analyzer != NULL)
		return f->analyzer;
	a = se_analyzer_lookup("standard");
	if (a == NULL)
		se_error_set(c->err, 500, "illegal_state_exception",
					 "no analyzer for field [%s]", f->path);
	return a;
}

static SeWeight *
zero_terms_weight(bool all, float boost, bool scoring)
{
	return all ? all_weight(boost, scoring) : none_weight();
}

static SeWeight *fuzzy_weight(BuildCtx *c, const char *field, const char *text,
							  int len, const SeQuery *q, float boost, bool scoring);

/*
 * A bool weight over term clauses, with duplicates merged (Lucene rewrite);
 * fq, when not NULL, makes each clause a fuzzy query with its fuzziness.
 */
static SeWeight *
terms_bool_weight(BuildCtx *c, const char *field, SeTokenList *tl,
				  bool op_and, const char *msm_spec, float boost, bool scoring,
				  const SeQuery *fq)
{
	SeWeight   *w = new_weight(SE_W_BOOL, scoring);
	SeWeight  **clauses = palloc(sizeof(SeWeight *) * tl->ntokens);
	double	   *boosts = palloc(sizeof(double) * tl->ntokens);
	int		   *uniq = palloc(sizeof(int) * tl->ntokens);
	int			nuniq = 0;
	int			msm = 0;
	int			i,
				j;
	double		bound = 0;

	if (msm_spec != NULL)
	{
		msm = se_query_min_should_match(op_and ? 0 : tl->ntokens, msm_spec, c->err);
		if (msm < 0)
			return NULL;
	}
	for (i = 0; i < tl->ntokens; i++)
	{
		bool		dup = false;

		SE_SEARCH_TICK(nuniq + 1);
		if (op_and || msm <= 1)
		{
			for (j = 0; j < nuniq; j++)
			{
				SeToken    *a = &tl->tokens[uniq[j]];

				if (a->len == tl->tokens[i].len &&
					memcmp(a->term, tl->tokens[i].term, a->len) == 0)
				{
					boosts[j] += 1.0;
					dup = true;
					break;
				}
			}
		}
		if (!dup)
		{
			uniq[nuniq] = i;
			boosts[nuniq] = 1.0;
			nuniq++;
		}
	}
	for (j = 0; j < nuniq; j++)
	{
		SeToken    *t = &tl->tokens[uniq[j]];
		float		b = boosts[j] == 1.0 ? boost : boost * (float) boosts[j];

		if (fq != NULL)
			clauses[j] = fuzzy_weight(c, field, t->term, t->len, fq, b, scoring);
		else
			clauses[j] = term_weight(c, field, t->term, t->len, b, scoring, true);
		if (clauses[j] == NULL)
			return NULL;
		bound += clauses[j]->max_score;
	}
	if (op_and)
	{
		w->must = clauses;
		w->nmust = nuniq;
	}
	else
	{
		w->should = clauses;
		w->nshould = nuniq;
	}
	w->msm = msm;
	w->max_score = widen_bound(bound);
	return w;
}

/* match on one field (ES MatchQueryParser, type boolean). */
static SeWeight *
match_field_weight(BuildCtx *c, const SeQuery *q, const char *field,
				   float boost, bool scoring)
{
	const SeMappedField *f;
	const SeAnalyzer *a;
	SeTokenList tl;
	const char *text;
	int			len;

	if (strcmp(field, SE_ID_FIELD) == 0)
		return ids_weight(c, &q->value, 1, boost, scoring);
	f = find_field(c, field);
	if (f != NULL && f->type == SE_FT_GEO_POINT)
		return q->lenient ? none_weight() : geo_refusal(c, f, false);
	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return none_weight();
	if (q->fuzziness.set && f->type == SE_FT_KEYWORD)
	{
		if (!json_text(c, q->value, &text, &len))
			return NULL;
		return fuzzy_weight(c, f->path, text, len, q, boost, scoring);
	}
	if (f->type != SE_FT_TEXT)
		return exact_value_weight(c, f, q->value, boost, scoring);
	if (!json_text(c, q->value, &text, &len))
		return NULL;
	a = query_analyzer(c, f, q->analyzer);
	if (a == NULL)
		return NULL;
	se_token_list_init(&tl);
	se_analyze(a, text, len, &tl);
	if (tl.ntokens == 0)
		return zero_terms_weight(q->zero_terms_all, boost, scoring);
	if (tl.ntokens == 1 && q->fuzziness.set)
		return fuzzy_weight(c, f->path, tl.tokens[0].term, tl.tokens[0].len, q,
							boost, scoring);
	if (tl.ntokens == 1)
		return term_weight(c, f->path, tl.tokens[0].term, tl.tokens[0].len,
						   boost, scoring, true);
	if (!check_bool_clauses(c, tl.ntokens))
		return NULL;
	return terms_bool_weight(c, f->path, &tl, q->op_and, q->msm, boost, scoring,
							 q->fuzziness.set ? q : NULL);
}

static SeWeight *phrase_tokens_weight(BuildCtx *c, const char *path,
									  const SeTokenList *tl, int slop,
									  float boost, bool scoring);
static SeWeight *multi_phrase_weight(BuildCtx *c, const char *path,
									 const SeTokenList *tl, char **alts, int nalts,
									 int slop, float boost, bool scoring);

/* match_phrase on one field: PhraseQuery with the analyzer's positions. */
static SeWeight *
phrase_field_weight(BuildCtx *c, const SeQuery *q, const char *field,
					float boost, bool scoring)
{
	const SeMappedField *f;
	const SeAnalyzer *a;
	SeTokenList tl;
	const char *text;
	int			len;

	if (strcmp(field, SE_ID_FIELD) == 0)
		return ids_weight(c, &q->value, 1, boost, scoring);
	f = find_field(c, field);
	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return none_weight();
	if (f->type != SE_FT_TEXT)
		return exact_value_weight(c, f, q->value, boost, scoring);
	if (!json_text(c, q->value, &text, &len))
		return NULL;
	a = query_analyzer(c, f, q->analyzer);
	if (a == NULL)
		return NULL;
	se_token_list_init(&tl);
	se_analyze(a, text, len, &tl);
	if (tl.ntokens == 0)
		return zero_terms_weight(q->zero_terms_all, boost, scoring);
	if (tl.ntokens == 1)
		return term_weight(c, f->path, tl.tokens[0].term, tl.tokens[0].len,
						   boost, scoring, true);
	return phrase_tokens_weight(c, f->path, &tl, q->slop, boost, scoring);
}

/* PhraseQuery of the tokens (two or more) of tl on field path */
static SeWeight *
phrase_tokens_weight(BuildCtx *c, const char *path, const SeTokenList *tl,
					 int slop, float boost, bool scoring)
{
	return multi_phrase_weight(c, path, tl, NULL, 0, slop, boost, scoring);
}

/*
 * PhraseQuery of the tokens of tl on field path; with nalts > 1, Lucene's
 * MultiPhraseQuery whose last position is any of alts (tl's last token
 * stands for them): one phrase whose idf sums every term's of every
 * position, the union of the alternatives' postings at the last.  A
 * union's term the shard lacks is left out (Lucene's stats skip it).
 */
static SeWeight *
multi_phrase_weight(BuildCtx *c, const char *path, const SeTokenList *tl,
					char **alts, int nalts, int slop, float boost, bool scoring)
{
	SeWeight   *w;
	int			i;
	int			nseg = Max(1, c->shard->nsegments);
	double		idf_sum = 0;
	bool		absent = false;
	int64		doc_count,
				sum_ttf;
	int			nfixed = nalts > 1 ? tl->ntokens - 1 : tl->ntokens;
	int			nterms = nfixed + (nalts > 1 ? nalts : 0);

	if (!add_clauses(c, nterms))
		return NULL;
	w = new_weight(SE_W_PHRASE, scoring);
	w->field = pstrdup(path);
	w->nterms = nterms;
	w->nlast_alts = nalts > 1 ? nalts : 0;
	w->slop = slop;
	w->terms = palloc(sizeof(char *) * nterms);
	w->term_lens = palloc(sizeof(int) * nterms);
	w->positions = palloc(sizeof(int) * nterms);
	w->seg_terms = palloc(sizeof(SeSegTerm *) * nterms);
	w->term_dfs = palloc0(sizeof(int64) * nterms);
	shard_field_stats(c, path, &doc_count, &sum_ttf);
	for (i = 0; i < nterms; i++)
	{
		int64		df;
		const SeToken *t = &tl->tokens[Min(i, tl->ntokens - 1)];
		bool		alt = i >= nfixed;

		w->terms[i] = alt ? pstrdup(alts[i - nfixed]) : pnstrdup(t->term, t->len);
		w->term_lens[i] = strlen(w->terms[i]);
		w->positions[i] = t->position - tl->tokens[0].position;
		w->seg_terms[i] = palloc0(sizeof(SeSegTerm) * nseg);
		df = lookup_term(c, path, w->terms[i], w->term_lens[i], w->seg_terms[i]);
		if (df == 0 && alt)
		{
			/* the union's other terms stand; recorded for a DFS phase */
			(void) scoring_doc_freq(c, path, w->terms[i], w->term_lens[i], 0,
									w->seg_terms[i]);
			continue;
		}
		/* a DFS phase records every term, those after one this shard lacks */
		if (df == 0 && c->collect == NULL)
			return none_weight();
		if (df == 0)
		{
			(void) scoring_doc_freq(c, path, w->terms[i], w->term_lens[i], 0,
									w->seg_terms[i]);
			absent = true;
			continue;
		}
		df = scoring_doc_freq(c, path, w->terms[i], w->term_lens[i], df,
							  w->seg_terms[i]);
		/* the phrase's idf is the sum of its terms' float idfs */
		idf_sum += se_bm25_idf(df, Max(doc_count, df));
		w->term_dfs[i] = df;
	}
	if (absent)
		return none_weight();
	w->sim = palloc(sizeof(SeBM25));
	se_bm25_init(w->sim, boost, (float) idf_sum, se_bm25_avgdl(sum_ttf, doc_count));
	w->sim->doc_count = doc_count;
	w->bm25 = scoring;
	w->max_score = scoring ? w->sim->weight : 0.0f;
	return w;
}

/* ---------------------------------------------------------------------
 * match_bool_prefix, match_phrase_prefix
 * ---------------------------------------------------------------------
 */

/*
 * q's text analyzed for field f (a keyword field's value is one token);
 * false with err set.
 */
static bool
analyze_for(BuildCtx *c, const SeQuery *q, const SeMappedField *f,
			SeTokenList *tl)
{
	const SeAnalyzer *a;
	const char *text;
	int			len;

	if (!json_text(c, q->value, &text, &len))
		return false;
	if (f->type == SE_FT_KEYWORD && q->analyzer == NULL)
		a = se_analyzer_lookup("keyword");
	else
		a = query_analyzer(c, f, q->analyzer);
	if (a == NULL)
		return false;
	se_token_list_init(tl);
	se_analyze(a, text, len, tl);
	return true;
}

/* The field a prefix variant of match runs on, or NULL: matches nothing */
static const SeMappedField *
prefix_match_field(BuildCtx *c, const char *field)
{
	const SeMappedField *f = find_field(c, field);

	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return NULL;
	return f;
}

static SeWeight *
prefix_docset(BuildCtx *c, const char *path, const SeToken *t, float boost,
			  bool scoring)
{
	SeWeight   *w = docset_weight(c, SE_DS_PREFIX, path, boost, scoring);

	w->lower = pnstrdup(t->term, t->len);
	w->lower_len = t->len;
	return w;
}

/*
 * A bool over clauses[0..n): all required with op_and, else optional with
 * minimum_should_match msm_spec (NULL: one); NULL with err set.
 */
static SeWeight *
clauses_bool_weight(BuildCtx *c, SeWeight **clauses, int n, bool op_and,
					const char *msm_spec, bool scoring)
{
	SeWeight   *w = new_weight(SE_W_BOOL, scoring);
	double		bound = 0;
	int			i;

	if (op_and)
	{
		w->must = clauses;
		w->nmust = n;
	}
	else
	{
		w->should = clauses;
		w->nshould = n;
		if (msm_spec != NULL &&
			(w->msm = se_query_min_should_match(n, msm_spec, c->err)) < 0)
			return NULL;
	}
	for (i = 0; i < n; i++)
		bound += clauses[i]->max_score;
	w->max_score = scoring ? widen_bound(bound) : 0.0f;
	return w;
}

/*
 * match_bool_prefix on one field: a bool of the analyzed terms (fuzzy ones
 * with fuzziness) whose last term is a prefix query (constant score, as
 * ES's default rewrite).
 */
static SeWeight *
bool_prefix_field_weight(BuildCtx *c, const SeQuery *q, const char *field,
						 float boost, bool scoring)
{
	const SeMappedField *f = prefix_match_field(c, field);
	SeTokenList tl;
	SeWeight  **clauses;
	int			n,
				i;

	if (f == NULL)
		return none_weight();
	if (f->type != SE_FT_TEXT && f->type != SE_FT_KEYWORD)
		return exact_value_weight(c, f, q->value, boost, scoring);
	if (!analyze_for(c, q, f, &tl))
		return NULL;
	n = tl.ntokens;
	if (n == 0)
		return zero_terms_weight(q->zero_terms_all, boost, scoring);
	if (n == 1)
		return prefix_docset(c, f->path, &tl.tokens[0], boost, scoring);
	if (!check_bool_clauses(c, n))
		return NULL;
	clauses = palloc(sizeof(SeWeight *) * n);
	for (i = 0; i < n - 1; i++)
	{
		SeToken    *t = &tl.tokens[i];

		clauses[i] = q->fuzziness.set ?
			fuzzy_weight(c, f->path, t->term, t->len, q, boost, scoring) :
			term_weight(c, f->path, t->term, t->len, boost, scoring, true);
		if (clauses[i] == NULL)
			return NULL;
	}
	clauses[n - 1] = prefix_docset(c, f->path, &tl.tokens[n - 1], boost, scoring);
	return clauses_bool_weight(c, clauses, n, q->op_and, q->msm, scoring);
}

static int
term_bytes_cmp(const void *x, const void *y)
{
	const char *a = *(const char *const *) x;
	const char *b = *(const char *const *) y;

	return strcmp(a, b);
}

/*
 * The first max terms of field (in byte order, over every segment) that
 * start with prefix; returns their count.  Terms with NUL bytes (numeric
 * encodings) do not occur in the text and keyword fields walked here.
 */
static int
expand_prefix(BuildCtx *c, const char *field, const char *prefix, int plen,
			  int max, char ***out)
{
	SeSearchShard *sh = c->shard;
	char	  **terms = NULL;
	int			n = 0,
				cap = 0,
				i,
				s;

	for (s = 0; s < sh->nsegments; s++)
	{
		int			f = se_segment_field(sh->segments[s], field);
		SeTermsEnum *e;
		const char *t;
		int			len;
		int			got = 0;

		if (f < 0)
			continue;
		e = se_segment_terms(sh->segments[s], f, prefix, plen);
		while (got < max && se_terms_next(e, &t, &len, NULL))
		{
			SE_SEARCH_TICK(1);
			if (len < plen || memcmp(t, prefix, plen) != 0)
				break;
			if (n == cap)
			{
				cap = cap ? cap * 2 : 16;
				terms = terms ? repalloc(terms, sizeof(char *) * cap)
					: palloc(sizeof(char *) * cap);
			}
			terms[n++] = pnstrdup(t, len);
			got++;
		}
		se_terms_close(e);
	}
	if (n == 0)
		return 0;
	qsort(terms, n, sizeof(char *), term_bytes_cmp);
	for (s = 0, i = 0; i < n; i++)
		if (s == 0 || strcmp(terms[s - 1], terms[i]) != 0)
			terms[s++] = terms[i];
	*out = terms;
	return Min(s, max);
}

/*
 * match_phrase_prefix on one field: the phrase with its last term
 * expanded to the first max_expansions terms it prefixes (ES's
 * MultiPhrasePrefixQuery), run as Lucene's MultiPhraseQuery: one phrase
 * whose last position is the union of the expansions.
 */
static SeWeight *
phrase_prefix_field_weight(BuildCtx *c, const SeQuery *q, const char *field,
						   float boost, bool scoring)
{
	const SeMappedField *f = prefix_match_field(c, field);
	SeTokenList tl;
	SeToken    *last;
	char	  **exp;
	int			nexp;
	SeWeight   *w;
	SeWeight  **clauses;
	double		bound = 0;
	int			i;

	if (f == NULL)
		return none_weight();
	if (f->type != SE_FT_TEXT && f->type != SE_FT_KEYWORD)
		return exact_value_weight(c, f, q->value, boost, scoring);
	if (!analyze_for(c, q, f, &tl))
		return NULL;
	if (tl.ntokens == 0)
		return zero_terms_weight(q->zero_terms_all, boost, scoring);
	last = &tl.tokens[tl.ntokens - 1];
	nexp = expand_prefix(c, f->path, last->term, last->len, q->max_expansions, &exp);
	if (nexp == 0)
	{
		(void) add_clauses(c, 1);
		return none_weight();
	}
	if (!check_bool_clauses(c, nexp))
		return NULL;
	if (tl.ntokens > 1)
	{
		/* one MultiPhraseQuery: the expansions are its last position */
		if (nexp == 1)
		{
			last->term = exp[0];
			last->len = strlen(exp[0]);
		}
		return multi_phrase_weight(c, f->path, &tl, exp, nexp, q->slop, boost, scoring);
	}
	/* a single position: Lucene rewrites it to a disjunction of its terms */
	clauses = palloc(sizeof(SeWeight *) * nexp);
	for (i = 0; i < nexp; i++)
	{
		clauses[i] = term_weight(c, f->path, exp[i], strlen(exp[i]), boost,
								 scoring, true);
		if (clauses[i] == NULL)
			return NULL;
		bound += clauses[i]->max_score;
	}
	if (nexp == 1)
		return clauses[0];
	w = new_weight(SE_W_BOOL, scoring);
	w->should = clauses;
	w->nshould = nexp;
	w->max_score = scoring ? widen_bound(bound) : 0.0f;
	return w;
}

/* Fields a multi_match pattern names; wildcards expand over the mapping. */
static int
expand_fields(BuildCtx *c, const char *pattern, char ***out)
{
	const SeMapping *m = c->shard->mapping;
	int			n = 0;
	int			i;

	if (strchr(pattern, '*') == NULL)
	{
		*out = palloc(sizeof(char *));
		(*out)[0] = (char *) pattern;
		return 1;
	}
	if (m == NULL)
		return 0;
	*out = palloc(sizeof(char *) * (m->nfields + 1));
	for (i = 0; i < m->nfields; i++)
	{
		const SeMappedField *f = m->fields[i];

		if (f->type == SE_FT_OBJECT || !f->index)
			continue;
		if (se_glob_match(pattern, f->path, strlen(f->path)))
			(*out)[n++] = f->path;
	}
	return n;
}

static SeWeight *
dismax_weight(SeWeight **subs, int n, float tie, bool scoring)
{
	SeWeight   *w;
	double		sum = 0;
	float		mx = 0;
	int			i;

	if (n == 1)
		return subs[0];
	w = new_weight(SE_W_DISMAX, scoring);
	w->should = subs;
	w->nshould = n;
	w->tie_breaker = tie;
	for (i = 0; i < n; i++)
	{
		sum += subs[i]->max_score;
		mx = Max(mx, subs[i]->max_score);
	}
	w->max_score = widen_bound(mx + fabs(tie) * sum);
	return w;
}

typedef SeWeight *(*FieldBuildFn) (BuildCtx *c, const SeQuery *q,
									 const char *field, float boost, bool scoring);

/*
 * One weight per field that q->fields names (patterns expanded over the
 * mapping, each with its boost), built by fn; fields a pattern matched, or
 * all when q->lenient, turn an error into matching nothing, as ES's
 * default_field and lenient do.  Returns the count, -1 on error.
 */
static int
per_field_weights(BuildCtx *c, const SeQuery *q, FieldBuildFn fn, float boost,
				  bool scoring, SeWeight ***out)
{
	SeWeight  **subs = NULL;
	int			nsubs = 0;
	int			cap = 0;
	int			i,
				j;

	for (i = 0; i < q->nfields; i++)
	{
		char	  **names;
		int			n = expand_fields(c, q->fields[i], &names);
		bool		lenient = q->lenient || strchr(q->fields[i], '*') != NULL;

		for (j = 0; j < n; j++)
		{
			float		fb = boost * q->field_boosts[i];
			SeWeight   *w;
			SeError		lerr;
			SeError    *saved = c->err;

			se_error_init(&lerr);
			if (lenient)
				c->err = &lerr;
			w = fn(c, q, names[j], fb, scoring);
			c->err = saved;
			if (w == NULL)
			{
				if (!lenient)
					return -1;
				w = none_weight();
			}
			if (nsubs == cap)
			{
				cap = cap ? cap * 2 : 8;
				subs = subs ? repalloc(subs, sizeof(SeWeight *) * cap)
					: palloc(sizeof(SeWeight *) * cap);
			}
			subs[nsubs++] = w;
		}
	}
	*out = subs;
	return nsubs;
}

static SeWeight *
multi_match_field(BuildCtx *c, const SeQuery *q, const char *field, float boost,
				  bool scoring)
{
	if (q->mm_type == SE_MM_PHRASE)
		return phrase_field_weight(c, q, field, boost, scoring);
	if (q->mm_type == SE_MM_PHRASE_PREFIX)
		return phrase_prefix_field_weight(c, q, field, boost, scoring);
	if (q->mm_type == SE_MM_BOOL_PREFIX)
		return bool_prefix_field_weight(c, q, field, boost, scoring);
	return match_field_weight(c, q, field, boost, scoring);
}

/* fn on each of q's fields, under one dis_max with q's tie_breaker */
static SeWeight *
per_field_dismax(BuildCtx *c, const SeQuery *q, FieldBuildFn fn, float boost, bool scoring)
{
	SeWeight  **subs;
	int			nsubs = per_field_weights(c, q, fn, boost, scoring, &subs);

	if (nsubs < 0)
		return NULL;
	if (nsubs == 0)
		return none_weight();
	return dismax_weight(subs, nsubs, q->tie_breaker, scoring);
}

static SeWeight *
build_multi_match(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	return per_field_dismax(c, q, multi_match_field, boost, scoring);
}

/*
 * multi_match cross_fields: term-centric, as if the text fields were one
 * (ES's cross_fields with Lucene's BlendedTermQuery): each analyzed term
 * is a dis_max over the fields' term queries, all scored with the largest
 * doc_freq the term has in any of them; the terms combine by operator and
 * minimum_should_match.  Fields that are not text match field by field
 * beside them, under one dis_max.
 */
static SeWeight *
build_cross_fields(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField **tf = NULL;
	float	   *tb = NULL;
	int			ntf = 0;
	SeWeight  **outer = palloc(sizeof(SeWeight *));
	int			nouter = 1;
	SeTokenList tl;
	SeWeight   *w;
	SeWeight  **terms;
	int			nterms = 0;
	int			i,
				j,
				k;

	for (i = 0; i < q->nfields; i++)
	{
		char	  **names;
		int			n = expand_fields(c, q->fields[i], &names);

		for (j = 0; j < n; j++)
		{
			const SeMappedField *f = find_field(c, names[j]);

			if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
				continue;
			if (f->type == SE_FT_TEXT)
			{
				tf = tf ? repalloc(tf, sizeof(*tf) * (ntf + 1)) : palloc(sizeof(*tf));
				tb = tb ? repalloc(tb, sizeof(float) * (ntf + 1)) : palloc(sizeof(float));
				tf[ntf] = f;
				tb[ntf++] = q->field_boosts[i];
			}
			else
			{
				SeWeight   *o = match_field_weight(c, q, f->path,
												   boost * q->field_boosts[i], scoring);

				if (o == NULL)
				{
					if (strchr(q->fields[i], '*') == NULL)
						return NULL;
					/* a pattern's fields are lenient */
					se_error_init(c->err);
					continue;
				}
				outer = repalloc(outer, sizeof(SeWeight *) * (nouter + 1));
				outer[nouter++] = o;
			}
		}
	}
	if (ntf == 0)
		return nouter > 1 ? dismax_weight(outer + 1, nouter - 1, q->tie_breaker, scoring)
			: none_weight();
	if (!analyze_for(c, q, tf[0], &tl))
		return NULL;
	if (tl.ntokens == 0)
		return zero_terms_weight(q->zero_terms_all, boost, scoring);
	if (!check_bool_clauses(c, tl.ntokens))
		return NULL;
	terms = palloc(sizeof(SeWeight *) * tl.ntokens);
	for (k = 0; k < tl.ntokens; k++)
	{
		SeToken    *t = &tl.tokens[k];
		SeWeight  **per = palloc(sizeof(SeWeight *) * ntf);
		int64	   *dfs = palloc(sizeof(int64) * ntf);
		int64		max_df = 0;
		int			nper = 0;
		bool		dup = false;

		for (j = 0; j < k && !dup; j++)
			dup = tl.tokens[j].len == t->len && memcmp(tl.tokens[j].term, t->term, t->len) == 0;
		if (dup)
			continue;
		if (!add_clauses(c, ntf))
			return NULL;
		for (i = 0; i < ntf; i++)
		{
			per[i] = term_weight_lookup(c, tf[i]->path, t->term, t->len, scoring, &dfs[i]);
			max_df = Max(max_df, dfs[i]);
		}
		for (i = 0; i < ntf; i++)
		{
			SeSegTerm  *st = per[i]->seg_terms[0];
			bool		any = false;

			for (j = 0; j < Max(1, c->shard->nsegments) && !any; j++)
				any = st[j].found;
			if (!any)
				continue;
			term_weight_bm25(c, per[i], max_df, boost * tb[i]);
			per[nper++] = per[i];
		}
		terms[nterms++] = nper == 0 ? none_weight() :
			dismax_weight(per, nper, q->tie_breaker, scoring);
	}
	if ((w = clauses_bool_weight(c, terms, nterms, q->op_and, q->msm, scoring)) == NULL)
		return NULL;
	if (nouter == 1)
		return w;
	outer[0] = w;
	return dismax_weight(outer, nouter, q->tie_breaker, scoring);
}

/* Sortable bound of an integer-typed field, rounding fractions as ES. */
static bool
integer_bound(BuildCtx *c, const SeMappedField *f, const SeJson *v,
			  bool lower, bool inclusive, int64 *out, bool *empty)
{
	double		d = 0;
	bool		fractional = false;
	int64		l;

	if (v->type == SE_JSON_NUMBER && !v->u.n.is_int)
	{
		d = v->u.n.d;
		fractional = true;
	}
	else if (v->type == SE_JSON_STRING)
	{
		char	   *end;

		d = strtod(v->u.s.str, &end);
		if (*end == '\0' && v->u.s.len > 0 && (d != floor(d) || strpbrk(v->u.s.str, ".eE")))
			fractional = true;
	}
	if (fractional)
	{
		if (isnan(d) || isinf(d))
		{
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: invalid range bound");
			return false;
		}
		/* outside int64: the bound excludes everything or nothing */
		if (d >= 9.2e18)
		{
			if (lower)
				*empty = true;
			else
				*out = PG_INT64_MAX;
			return true;
		}
		if (d <= -9.2e18)
		{
			if (lower)
				*out = PG_INT64_MIN;
			else
				*empty = true;
			return true;
		}
		l = (int64) d;			/* truncates toward zero as Java */
		if (d == (double) l)
			fractional = false;
		else
		{
			/* 1.5 -> 2 as a lower bound, -1.5 -> -2 as an upper bound */
			if (lower && d > 0)
				l++;
			if (!lower && d < 0)
				l--;
			*out = l;
			return true;
		}
	}
	else
	{
		SeError		lerr;

		se_error_init(&lerr);
		if (!se_field_sortable_value(f, v, &l, &lerr))
		{
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: %s",
						 lerr.reason ? lerr.reason : "invalid value");
			return false;
		}
	}
	if (!inclusive)
	{
		if (lower)
		{
			if (l == PG_INT64_MAX)
				*empty = true;
			else
				l++;
		}
		else
		{
			if (l == PG_INT64_MIN)
				*empty = true;
			else
				l--;
		}
	}
	*out = l;
	return true;
}

static bool
float_bound(BuildCtx *c, const SeMappedField *f, const SeJson *v, bool lower,
			bool inclusive, int64 *out, bool *empty)
{
	SeError		lerr;
	int64		l;

	se_error_init(&lerr);
	if (!se_field_sortable_value(f, v, &l, &lerr))
	{
		se_error_set(c->err, 400, "query_shard_exception",
					 "failed to create query: %s",
					 lerr.reason ? lerr.reason : "invalid value");
		return false;
	}
	/* neighbours in sortable order are nextUp/nextDown of the value */
	if (!inclusive)
	{
		if (lower)
		{
			if (l == PG_INT64_MAX)
				*empty = true;
			else
				l++;
		}
		else
		{
			if (l == PG_INT64_MIN)
				*empty = true;
			else
				l--;
		}
	}
	*out = l;
	return true;
}

static bool
date_bound(BuildCtx *c, const SeQuery *q, const SeMappedField *f,
		   const SeJson *v, bool lower, bool inclusive, int64 *out,
		   bool *empty)
{
	int64		l;
	/* ES rounds up for gt and lte */
	bool		round_up = lower ? !inclusive : inclusive;

	if (v->type == SE_JSON_STRING)
	{
		SeError		lerr;
		SeTimeZone	tz;
		const char *fmt = q->format ? q->format :
		(f->format ? f->format : "strict_date_optional_time||epoch_millis");

		if (c->now_millis == PG_INT64_MIN)
		{
			struct timeval tv;

			gettimeofday(&tv, NULL);
			c->now_millis = (int64) tv.tv_sec * 1000 + tv.tv_usec / 1000;
		}
		se_error_init(&lerr);
		if (q->time_zone != NULL && !se_tz_parse(q->time_zone, &tz, c->err))
			return false;
		if (!se_datemath_parse_tz(v->u.s.str, v->u.s.len, fmt, round_up,
								  c->now_millis, q->time_zone ? &tz : NULL,
								  &l, &lerr))
		{
			se_error_set(c->err, 400, "parse_exception",
						 "%s", lerr.reason ? lerr.reason : "failed to parse date");
			return false;
		}
	}
	else
	{
		SeError		lerr;

		se_error_init(&lerr);
		if (!se_field_sortable_value(f, v, &l, &lerr))
		{
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: %s",
						 lerr.reason ? lerr.reason : "invalid value");
			return false;
		}
	}
	if (!inclusive)
	{
		if (lower)
		{
			if (l == PG_INT64_MAX)
				*empty = true;
			else
				l++;
		}
		else
		{
			if (l == PG_INT64_MIN)
				*empty = true;
			else
				l--;
		}
	}
	*out = l;
	return true;
}

static SeWeight *
build_range(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = find_field(c, q->field);
	SeWeight   *w;

	if (f != NULL && f->type == SE_FT_GEO_POINT)
		return geo_refusal(c, f, true);
	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return none_weight();
	if (f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD)
	{
		const char *s;
		int			len;

		w = docset_weight(c, SE_DS_RANGE, f->path, boost, scoring);
		if (q->lower != NULL)
		{
			if (!json_text(c, q->lower, &s, &len))
				return NULL;
			w->lower = term_dup(s, len);
			w->lower_len = len;
			w->lower_inclusive = q->include_lower;
		}
		if (q->upper != NULL)
		{
			if (!json_text(c, q->upper, &s, &len))
				return NULL;
			w->upper = term_dup(s, len);
			w->upper_len = len;
			w->upper_inclusive = q->include_upper;
		}
		return w;
	}
	else
	{
		int64		lo = PG_INT64_MIN;
		int64		hi = PG_INT64_MAX;
		bool		empty = false;
		bool		ok = true;

		if (q->lower != NULL)
		{
			if (f->type == SE_FT_DOUBLE || f->type == SE_FT_FLOAT)
				ok = float_bound(c, f, q->lower, true, q->include_lower, &lo, &empty);
			else if (f->type == SE_FT_DATE)
				ok = date_bound(c, q, f, q->lower, true, q->include_lower, &lo, &empty);
			else
				ok = integer_bound(c, f, q->lower, true, q->include_lower, &lo, &empty);
		}
		if (ok && q->upper != NULL)
		{
			if (f->type == SE_FT_DOUBLE || f->type == SE_FT_FLOAT)
				ok = float_bound(c, f, q->upper, false, q->include_upper, &hi, &empty);
			else if (f->type == SE_FT_DATE)
				ok = date_bound(c, q, f, q->upper, false, q->include_upper, &hi, &empty);
			else
				ok = integer_bound(c, f, q->upper, false, q->include_upper, &hi, &empty);
		}
		if (!ok)
			return NULL;
		if (empty || lo > hi)
			return none_weight();
		w = docset_weight(c, SE_DS_RANGE, f->path, boost, scoring);
		w->lower = palloc(8);
		w->upper = palloc(8);
		se_sortable_term(lo, w->lower);
		se_sortable_term(hi, w->upper);
		w->lower_len = w->upper_len = 8;
		w->lower_inclusive = w->upper_inclusive = true;
		w->numeric = true;
		w->num_lo = lo;
		w->num_hi = hi;
		return w;
	}
}

/* term, terms, match and range on a geo_point: ES's refusals */
static SeWeight *
geo_refusal(BuildCtx *c, const SeMappedField *f, bool range)
{
	if (range)
		se_error_set(c->err, 400, "illegal_argument_exception",
					 "Field [%s] of type [geo_point] does not support range queries", f->path);
	else
		se_error_set(c->err, 400, "query_shard_exception",
					 "Geometry fields do not support exact searching, use dedicated geometry queries instead: [%s]",
					 f->path);
	return NULL;
}

/* geo_distance, geo_bounding_box: a doc set read from the points' doc values */
static SeWeight *
build_geo(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = find_field(c, q->geo->field);
	SeGeoQuery *g = palloc(sizeof(SeGeoQuery));
	SeWeight   *w;
	bool		none;

	*g = *q->geo;
	if (!se_geo_query_bind(g, f, &none, c->err))
		return NULL;
	if (none)
		return none_weight();
	w = docset_weight(c, SE_DS_GEO, f->path, boost, scoring);
	w->geo = g;
	return w;
}

static SeWeight *
build_exists(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f;
	const SeMapping *m = c->shard->mapping;
	SeWeight   *w;
	int			i;
	int			plen;

	if (strcmp(q->field, SE_ID_FIELD) == 0)
		return all_weight(boost, scoring);
	f = find_field(c, q->field);
	if (f != NULL && f->type != SE_FT_OBJECT)
	{
		w = docset_weight(c, SE_DS_EXISTS, f->path, boost, scoring);
		w->nexist_fields = 1;
		w->exist_fields = palloc(sizeof(char *));
		w->exist_fields[0] = w->field;
		return w;
	}
	if (m == NULL)
		return none_weight();
	/* an object exists when any leaf below it does */
	w = docset_weight(c, SE_DS_EXISTS, q->field, boost, scoring);
	w->exist_fields = palloc(sizeof(char *) * (m->nfields + 1));
	plen = strlen(q->field);
	for (i = 0; i < m->nfields; i++)
	{
		const SeMappedField *sf = m->fields[i];

		if (sf->type != SE_FT_OBJECT &&
			strncmp(sf->path, q->field, plen) == 0 && sf->path[plen] == '.')
			w->exist_fields[w->nexist_fields++] = sf->path;
	}
	if (w->nexist_fields == 0)
		return none_weight();
	return w;
}

/*
 * term(s) on _index: every document of the shard when one value names its
 * index, else none (constant score, as ES's index field); alias filters
 * that differ per index are written with it (api/alias_ops.c).
 */
static SeWeight *
index_name_weight(BuildCtx *c, const SeJson *const *values, int n, float boost, bool scoring)
{
	int			i;

	for (i = 0; i < n; i++)
		if (values[i]->type == SE_JSON_STRING && c->shard->index &&
			strcmp(values[i]->u.s.str, c->shard->index) == 0)
			return all_weight(boost, scoring);
	return none_weight();
}

static SeWeight *
build_terms(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f;
	SeWeight   *w;
	int			max_terms = c->shard->max_terms_count > 0 ?
		c->shard->max_terms_count : SE_MAX_TERMS_COUNT_DEFAULT;
	int			i;

	if (q->nvalues > max_terms)
	{
		se_error_set(c->err, 400, "illegal_argument_exception",
					 "The number of terms [%d] used in the Terms Query request has exceeded the allowed maximum of [%d]. This maximum can be set by changing the [index.max_terms_count] index level setting.",
					 q->nvalues, max_terms);
		return NULL;
	}
	if (strcmp(q->field, SE_ID_FIELD) == 0)
		return ids_weight(c, q->values, q->nvalues, boost, scoring);
	if (strcmp(q->field, "_index") == 0)
		return index_name_weight(c, q->values, q->nvalues, boost, scoring);
	f = find_field(c, q->field);
	if (f != NULL && f->type == SE_FT_GEO_POINT)
		return geo_refusal(c, f, false);
	if (f == NULL || f->type == SE_FT_OBJECT || !f->index || q->nvalues == 0)
		return none_weight();
	w = docset_weight(c, SE_DS_TERMS, f->path, boost, scoring);
	for (i = 0; i < q->nvalues; i++)
	{
		SE_SEARCH_TICK(1);
		if (f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD)
		{
			const char *s;
			int			len;

			if (!json_text(c, q->values[i], &s, &len))
				return NULL;
			docset_add_term(w, s, len);
		}
		else
		{
			char		term[8];

			if (!numeric_term(c, f, q->values[i], term))
				return NULL;
			docset_add_term(w, term, 8);
		}
	}
	return w;
}

static SeWeight *
build_term(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f;

	if (strcmp(q->field, SE_ID_FIELD) == 0)
		return ids_weight(c, &q->value, 1, boost, scoring);
	if (strcmp(q->field, "_index") == 0)
		return index_name_weight(c, &q->value, 1, boost, scoring);
	f = find_field(c, q->field);
	if (f != NULL && f->type == SE_FT_GEO_POINT)
		return geo_refusal(c, f, false);
	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return none_weight();
	if (q->case_insensitive &&
		(f->type == SE_FT_KEYWORD || f->type == SE_FT_TEXT))
	{
		/* an automaton query in ES: constant score */
		SeWeight   *w = docset_weight(c, SE_DS_TERM_CI, f->path, boost, scoring);
		const char *s;
		int			len;
		StringInfoData lower;

		if (!json_text(c, q->value, &s, &len))
			return NULL;
		initStringInfo(&lower);
		se_utf8_lower(s, len, &lower);
		w->lower = lower.data;
		w->lower_len = lower.len;
		return w;
	}
	return exact_value_weight(c, f, q->value, boost, scoring);
}

/*
 * The keyword or text field whose terms a prefix or regexp query walks;
 * NULL when nothing can match (unmapped, not indexed), or with err set
 * for fields of other types.
 */
static const SeMappedField *
term_walk_field(BuildCtx *c, const SeQuery *q, const char *qname)
{
	const SeMappedField *f = find_field(c, q->field);

	if (f == NULL || f->type == SE_FT_OBJECT || !f->index)
		return NULL;
	if (f->type != SE_FT_TEXT && f->type != SE_FT_KEYWORD)
	{
		se_error_set(c->err, 400, "query_shard_exception",
					 "Can only use %s queries on keyword and text fields - not on [%s] which is of type [%s]",
					 qname, f->path, se_field_type_name(f->type));
		return NULL;
	}
	return f;
}

/* The value of a term-level query, lowercased when q asks it of text fields. */
static void
walk_value(const SeQuery *q, const SeMappedField *f, const char **s, int *len)
{
	*s = q->value->u.s.str;
	*len = q->value->u.s.len;
	if (q->normalize && f->type == SE_FT_TEXT)
	{
		StringInfoData lower;

		initStringInfo(&lower);
		se_utf8_lower(*s, *len, &lower);
		*s = lower.data;
		*len = lower.len;
	}
}

static SeWeight *
build_prefix(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = term_walk_field(c, q, "prefix");
	SeWeight   *w;

	const char *s;
	int			len;

	if (f == NULL)
		return se_error_is_set(c->err) ? NULL : none_weight();
	walk_value(q, f, &s, &len);
	if (q->case_insensitive)
	{
		StringInfoData lower;

		w = docset_weight(c, SE_DS_PREFIX_CI, f->path, boost, scoring);
		initStringInfo(&lower);
		se_utf8_lower(s, len, &lower);
		w->lower = lower.data;
		w->lower_len = lower.len;
	}
	else
	{
		w = docset_weight(c, SE_DS_PREFIX, f->path, boost, scoring);
		w->lower = pnstrdup(s, len);
		w->lower_len = len;
	}
	return w;
}

/* regexp: the terms the expression matches; its length is an index limit */
static SeWeight *
build_regexp(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f;
	int			max_len = c->shard->max_regex_length > 0 ?
		c->shard->max_regex_length : SE_MAX_REGEX_LENGTH_DEFAULT;
	const unsigned char *v = (const unsigned char *) q->value->u.s.str;
	int			len = 0;
	SeWeight   *w;
	const char *prefix;
	int			i;

	/* ES measures the Java string: UTF-16 units */
	for (i = 0; i < q->value->u.s.len; i++)
		len += (v[i] & 0xC0) == 0x80 ? 0 : v[i] >= 0xF0 ? 2 : 1;
	if (len > max_len)
	{
		se_error_set(c->err, 400, "illegal_argument_exception",
					 "The length of regex [%d] used in the Regexp Query request has exceeded the allowed maximum of [%d]. This maximum can be set by changing the [index.max_regex_length] index level setting.",
					 len, max_len);
		return NULL;
	}
	if ((f = term_walk_field(c, q, "regexp")) == NULL)
		return se_error_is_set(c->err) ? NULL : none_weight();
	w = docset_weight(c, SE_DS_REGEXP, f->path, boost, scoring);
	w->regex = se_regex_parse(q->value->u.s.str, q->value->u.s.len, q->re_flags,
							  q->case_insensitive, c->err);
	if (w->regex == NULL)
		return NULL;
	prefix = se_regex_prefix(w->regex, &w->lower_len);
	w->lower = pnstrdup(prefix, w->lower_len);
	return w;
}

/* ---------------------------------------------------------------------
 * fuzzy and wildcard
 * ---------------------------------------------------------------------
 */
typedef struct FuzzyTerm
{
	char	   *term;
	int			len;
	int			edits;
	float		similarity;
} FuzzyTerm;

typedef struct FuzzyCollect
{
	SeFuzzy    *a;
	FuzzyTerm  *terms;
	int			n;
	int			cap;
} FuzzyCollect;

static void
fuzzy_collect(void *arg, const char *term, int len, const SeTermInfo *ti,
			  int edits)
{
	FuzzyCollect *fc = arg;

	if (fc->n == fc->cap)
	{
		fc->cap = fc->cap ? fc->cap * 2 : 64;
		fc->terms = fc->terms ? repalloc(fc->terms, sizeof(FuzzyTerm) * fc->cap)
			: palloc(sizeof(FuzzyTerm) * fc->cap);
	}
	fc->terms[fc->n].term = pnstrdup(term, len);
	fc->terms[fc->n].len = len;
	fc->terms[fc->n].edits = edits;
	fc->terms[fc->n].similarity = se_fuzzy_similarity(fc->a, term, len, edits);
	fc->n++;
}

static int
fuzzy_term_cmp_bytes(const void *x, const void *y)
{
	const FuzzyTerm *a = x;
	const FuzzyTerm *b = y;
	int			c = memcmp(a->term, b->term, Min(a->len, b->len));

	return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* Best first: Lucene's top terms queue keeps the highest boosts. */
static int
fuzzy_term_cmp_best(const void *x, const void *y)
{
	const FuzzyTerm *a = x;
	const FuzzyTerm *b = y;

	if (a->similarity != b->similarity)
		return a->similarity > b->similarity ? -1 : 1;
	return fuzzy_term_cmp_bytes(x, y);
}

/*
 * A fuzzy query on one field (Lucene FuzzyQuery with ES's default rewrite,
 * top_terms_blended_freqs_<max_expansions>): the terms the Levenshtein
 * automaton accepts in any segment of the shard, the max_expansions most
 * similar kept, each a SHOULD term clause boosted by its similarity and
 * scored with the largest doc_freq among them, so that a rare misspelling
 * does not outscore the common word.
 */
static SeWeight *
fuzzy_weight(BuildCtx *c, const char *field, const char *text, int len,
			 const SeQuery *q, float boost, bool scoring)
{
	SeSearchShard *sh = c->shard;
	FuzzyCollect fc = {0};
	SeWeight   *w;
	SeWeight  **clauses;
	int64		max_df = 0;
	double		bound = 0;
	int			n,
				i,
				s;

	fc.a = se_fuzzy_create(text, len, se_fuzziness_edits(&q->fuzziness, text, len),
						   q->prefix_length, q->transpositions);
	for (s = 0; s < sh->nsegments; s++)
	{
		int			f = se_segment_field(sh->segments[s], field);

		if (f >= 0)
			(void) se_fuzzy_walk(fc.a, sh->segments[s], f, fuzzy_collect, &fc);
	}
	if (fc.n == 0)
	{
		(void) add_clauses(c, 1);
		return none_weight();
	}
	/* one entry per term, then the best max_expansions */
	qsort(fc.terms, fc.n, sizeof(FuzzyTerm), fuzzy_term_cmp_bytes);
	for (n = 0, i = 0; i < fc.n; i++)
		if (n == 0 || fuzzy_term_cmp_bytes(&fc.terms[n - 1], &fc.terms[i]) != 0)
			fc.terms[n++] = fc.terms[i];
	qsort(fc.terms, n, sizeof(FuzzyTerm), fuzzy_term_cmp_best);
	n = Min(n, q->max_expansions);
	if (!add_clauses(c, n))
		return NULL;

	w = new_weight(SE_W_BOOL, scoring);
	clauses = palloc(sizeof(SeWeight *) * n);
	for (i = 0; i < n; i++)
	{
		int64		df;

		clauses[i] = term_weight_lookup(c, field, fc.terms[i].term, fc.terms[i].len,
										scoring, &df);
		max_df = Max(max_df, df);
	}
	for (i = 0; i < n; i++)
	{
		term_weight_bm25(c, clauses[i], max_df, boost * fc.terms[i].similarity);
		bound += clauses[i]->max_score;
	}
	if (n == 1)
		return clauses[0];
	w->should = clauses;
	w->nshould = n;
	w->max_score = scoring ? widen_bound(bound) : 0.0f;
	return w;
}

static SeWeight *
build_fuzzy(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = term_walk_field(c, q, "fuzzy");
	const char *s;
	int			len;

	if (f == NULL)
		return se_error_is_set(c->err) ? NULL : none_weight();
	walk_value(q, f, &s, &len);
	return fuzzy_weight(c, f->path, s, len, q, boost, scoring);
}

/*
 * wildcard: * any string, ? any character, \ escapes; run as the regexp
 * with every other character literal (Lucene's WildcardQuery is such an
 * automaton), so the term walk starts from the literal prefix.
 */
static SeWeight *
build_wildcard(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = term_walk_field(c, q, "wildcard");
	StringInfoData re;
	const char *s;
	int			len;
	const char *prefix;
	SeWeight   *w;

	if (f == NULL)
		return se_error_is_set(c->err) ? NULL : none_weight();
	walk_value(q, f, &s, &len);
	initStringInfo(&re);
	se_wildcard_to_regex(s, len, &re);
	w = docset_weight(c, SE_DS_REGEXP, f->path, boost, scoring);
	w->regex = se_regex_parse(re.data, re.len, 0, q->case_insensitive, c->err);
	if (w->regex == NULL)
		return NULL;
	prefix = se_regex_prefix(w->regex, &w->lower_len);
	w->lower = pnstrdup(prefix, w->lower_len);
	return w;
}

/* q->inner on one field: a copy of it that names the field */
static SeWeight *
per_field_inner(BuildCtx *c, const SeQuery *q, const char *field, float boost,
				bool scoring)
{
	SeQuery		one = *q->inner;

	one.field = (char *) field;
	return build(c, &one, boost, scoring);
}

/* query_string's terms on several fields: dis_max over the fields */
static SeWeight *
build_per_field(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	return per_field_dismax(c, q, per_field_inner, boost, scoring);
}

/* ---------------------------------------------------------------------
 * function_score, terms_set
 * ---------------------------------------------------------------------
 */

/* A decay parameter in the field's units: dates take date math and times. */
static bool
decay_param(BuildCtx *c, const SeMappedField *f, const SeJson *v, bool is_origin,
			double *out)
{
	if (f->type == SE_FT_DATE && v != NULL && v->type == SE_JSON_STRING)
	{
		if (is_origin)
		{
			SeQuery		dq = {0};
			int64		ms;
			bool		empty = false;

			if (!date_bound(c, &dq, f, v, true, true, &ms, &empty))
				return false;
			*out = (double) ms;
			return true;
		}
		else
		{
			/* a time value: 10d, 12h, 30m, 15s, 100ms */
			char	   *end;
			double		n = strtod(v->u.s.str, &end);
			static const struct
			{
				const char *unit;
				double		ms;
			}			units[] = {
				{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
			};
			int			i;

			for (i = 0; i < lengthof(units); i++)
				if (end != v->u.s.str && strcmp(end, units[i].unit) == 0)
				{
					*out = n * units[i].ms;
					return true;
				}
			se_error_set(c->err, 400, "parse_exception",
						 "failed to parse setting [scale] with value [%s] as a time value",
						 v->u.s.str);
			return false;
		}
	}
	if (is_origin && v == NULL && f->type == SE_FT_DATE)
	{
		SeJson	   *now = se_json_make_string("now", 3);

		return decay_param(c, f, now, true, out);
	}
	if (v == NULL)
	{
		se_error_set(c->err, 400, "parsing_exception",
					 "[origin] must be set for numeric fields.");
		return false;
	}
	if (v->type == SE_JSON_NUMBER)
	{
		*out = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		char	   *end;

		*out = strtod(v->u.s.str, &end);
		if (end != v->u.s.str && *end == '\0')
			return true;
	}
	se_error_set(c->err, 400, "parsing_exception", "failed to parse a decay parameter of [%s]",
				 f->path);
	return false;
}

static bool
fn_field(BuildCtx *c, const SeScoreFunction *q, SeFnWeight *fw)
{
	const SeMappedField *f = find_field(c, q->field);

	if (f == NULL && q->kind == SE_FN_FIELD_VALUE_FACTOR && !q->has_missing)
	{
		/* ES's FieldValueFactorFunctionBuilder, when the shard builds it */
		se_error_set(c->err, 500, "exception",
					 "Unable to find a field mapper for field [%s]. No 'missing' value defined.",
					 q->field);
		return false;
	}
	if (f == NULL)
		return true;			/* unmapped: every doc lacks the value */
	if (q->kind == SE_FN_DISTANCE_FEATURE && f->type == SE_FT_GEO_POINT)
		return se_geo_distance_feature_bind(q, f, fw, c->err);
	if (q->kind >= SE_FN_GAUSS && q->kind <= SE_FN_LINEAR && f->type == SE_FT_GEO_POINT)
		return se_geo_decay_bind(q, f, fw, c->err);
	if (q->kind == SE_FN_DISTANCE_FEATURE && f->type == SE_FT_DATE && q->scale == NULL)
	{
		/* the pivot was no time value: say so now that the type asks for one */
		(void) se_distance_feature_time_pivot(q->offset, c->err);
		return false;
	}
	if (q->kind == SE_FN_DISTANCE_FEATURE && f->type != SE_FT_DATE)
	{
		se_error_set(c->err, 400, "illegal_argument_exception",
					 "Illegal data type of [%s]! [distance_feature] query can only be run on a date, date_nanos or geo_point field type!",
					 se_field_type_name(f->type));
		return false;
	}
	if (!se_field_is_numeric_like(f->type) || f->type == SE_FT_BOOLEAN)
	{
		se_error_set(c->err, 400, "illegal_argument_exception",
					 "field [%s] of type [%s] is not supported for function_score",
					 f->path, se_field_type_name(f->type));
		return false;
	}
	fw->field = pstrdup(f->path);
	fw->is_double = f->type == SE_FT_DOUBLE || f->type == SE_FT_FLOAT;
	if (q->kind == SE_FN_DISTANCE_FEATURE)
	{
		/* origin (date math) and pivot (a time value) in ms, as decays' */
		if (!decay_param(c, f, q->origin, true, &fw->origin) ||
			!decay_param(c, f, q->scale, false, &fw->scale))
			return false;
		if (fw->scale <= 0)
		{
			se_error_set(c->err, 400, "illegal_argument_exception",
						 "pivotDistance must be > 0, got %g", fw->scale);
			return false;
		}
		return true;
	}
	if (q->kind >= SE_FN_GAUSS && q->kind <= SE_FN_LINEAR)
	{
		if (!decay_param(c, f, q->origin, true, &fw->origin) ||
			!decay_param(c, f, q->scale, false, &fw->scale) ||
			(q->offset != NULL && !decay_param(c, f, q->offset, false, &fw->offset)))
			return false;
		if (fw->scale <= 0)
		{
			se_error_set(c->err, 400, "illegal_argument_exception",
						 "scale must be greater than 0");
			return false;
		}
	}
	return true;
}

static SeWeight *
build_function_score(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	/* min_score filters by the score, so it needs one in any context */
	bool		scored = scoring || q->has_min_score;
	SeWeight   *inner = build(c, q->inner, 1.0f, scored);
	SeWeight   *w;
	int			i;

	if (inner == NULL)
		return NULL;
	if (inner->kind == SE_W_NONE || !scored)
		return inner;
	w = new_weight(SE_W_FUNCTION, scoring);
	w->inner = inner;
	w->nfns = q->nfunctions;
	w->fns = palloc0(sizeof(SeFnWeight) * Max(1, q->nfunctions));
	w->score_mode = q->score_mode;
	w->boost_mode = q->boost_mode;
	w->max_boost = q->max_boost;
	w->has_min_score = q->has_min_score;
	w->min_score = q->min_score;
	w->fn_boost = boost;
	for (i = 0; i < q->nfunctions; i++)
	{
		const SeScoreFunction *fq = &q->functions[i];
		SeFnWeight *fw = &w->fns[i];

		fw->kind = fq->kind;
		fw->weight = fq->weight;
		fw->factor = fq->factor;
		fw->modifier = fq->modifier;
		fw->has_missing = fq->has_missing;
		fw->missing = fq->missing;
		fw->decay = fq->decay;
		fw->multi_value_mode = fq->multi_value_mode;
		fw->seed = fq->has_seed ? fq->seed : (int64) random();
		if (fq->field != NULL && !fn_field(c, fq, fw))
			return NULL;
		if (fq->kind == SE_FN_SCRIPT &&
			(fw->script = se_script_bind(fq, c->shard, c->err)) == NULL)
			return NULL;
		if (fq->filter != NULL &&
			(fw->filter = build(c, fq->filter, 1.0f, false)) == NULL)
			return NULL;
	}
	w->max_score = FLT_MAX;
	return w;
}

/* terms_set: term clauses and the count each doc needs */
static SeWeight *
build_terms_set(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = find_field(c, q->field);
	SeWeight   *w;
	int			i;

	if (f == NULL || f->type == SE_FT_OBJECT || !f->index || q->nvalues == 0)
		return none_weight();
	if (!check_bool_clauses(c, q->nvalues))
		return NULL;
	w = new_weight(SE_W_TERMS_SET, scoring);
	w->should = palloc(sizeof(SeWeight *) * q->nvalues);
	for (i = 0; i < q->nvalues; i++)
	{
		SeWeight   *t = exact_value_weight(c, f, q->values[i], boost, scoring);

		if (t == NULL)
			return NULL;
		w->should[w->nshould++] = t;
	}
	if (q->msm_field != NULL)
	{
		const SeMappedField *mf = find_field(c, q->msm_field);

		if (mf == NULL)
			return none_weight();
		if (!se_field_is_numeric_like(mf->type) || mf->type == SE_FT_DOUBLE ||
			mf->type == SE_FT_FLOAT)
		{
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: field [%s] is not an integer field",
						 mf->path);
			return NULL;
		}
		w->msm_field = pstrdup(mf->path);
	}
	else if (q->msm_script != NULL && strcmp(q->msm_script, "params.num_terms") == 0)
		w->msm_const = q->nvalues;
	else if (q->msm_script != NULL)
	{
		if ((w->msm_script = se_script_bind_msm(q, q->nvalues, c->shard, c->err)) == NULL)
			return NULL;
	}
	else if ((w->msm_const = se_query_min_should_match(q->nvalues, q->msm, c->err)) < 0)
		return NULL;
	w->max_score = FLT_MAX;
	return w;
}

static SeWeight **
build_list(BuildCtx *c, SeQuery **qs, int n, float boost, bool scoring)
{
	SeWeight  **out = palloc(sizeof(SeWeight *) * Max(1, n));
	int			i;

	for (i = 0; i < n; i++)
	{
		out[i] = build(c, qs[i], boost, scoring);
		if (out[i] == NULL)
			return NULL;
	}
	return out;
}

static SeWeight *
build_bool(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	SeWeight   *w;
	double		bound = 0;
	int			i;

	if (q->nmust + q->nshould + q->nfilter + q->nmust_not == 0)
		return all_weight(boost, scoring);
	if (!check_bool_clauses(c, q->nmust + q->nshould + q->nfilter + q->nmust_not))
		return NULL;
	w = new_weight(SE_W_BOOL, scoring);
	w->nmust = q->nmust;
	w->nshould = q->nshould;
	w->nfilter = q->nfilter;
	w->nmust_not = q->nmust_not;
	if ((w->must = build_list(c, q->must, q->nmust, boost, scoring)) == NULL ||
		(w->should = build_list(c, q->should, q->nshould, boost, scoring)) == NULL ||
		(w->filter = build_list(c, q->filter, q->nfilter, 1.0f, false)) == NULL ||
		(w->must_not = build_list(c, q->must_not, q->nmust_not, 1.0f, false)) == NULL)
		return NULL;
	if (q->msm != NULL)
	{
		w->msm = se_query_min_should_match(q->nshould, q->msm, c->err);
		if (w->msm < 0)
			return NULL;
	}
	/* pure negative: ES adds a match-all FILTER clause (score 0) */
	if (q->nmust + q->nshould + q->nfilter == 0)
	{
		w->filter = repalloc(w->filter, sizeof(SeWeight *) * 1);
		w->filter[0] = all_weight(0.0f, false);
		w->nfilter = 1;
	}
	for (i = 0; i < w->nmust; i++)
		bound += w->must[i]->max_score;
	for (i = 0; i < w->nshould; i++)
		bound += w->should[i]->max_score;
	w->max_score = scoring ? widen_bound(bound) : 0.0f;
	return w;
}

/*
 * The enclosing nested path while a nested query's inner query is built
 * (NULL: the root); weights are built one at a time in a process.
 */
static const char *nested_scope = NULL;

/*
 * nested: the inner query over the docs of path, joined to their parents
 * (ES's NestedQueryBuilder over Lucene's ToParentBlockJoinQuery; the boost
 * goes down to the children's scores as Lucene passes it to the child
 * weight).
 */
static SeWeight *
build_nested(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	const SeMappedField *f = se_mapping_find(c->shard->mapping, q->field);
	const char *saved = nested_scope;
	SeWeight   *inner;
	SeWeight   *w;

	if (f == NULL || f->type != SE_FT_OBJECT)
	{
		if (q->lenient)
			return none_weight();
		if (f == NULL)
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: [nested] failed to find nested object under path [%s]",
						 q->field);
		else
			se_error_set(c->err, 400, "query_shard_exception",
						 "failed to create query: [nested] nested object under path [%s] is not of nested type",
						 q->field);
		return NULL;
	}
	if (!f->nested)
	{
		se_error_set(c->err, 400, "query_shard_exception",
					 "failed to create query: [nested] nested object under path [%s] is not of nested type",
					 q->field);
		return NULL;
	}
	nested_scope = f->path;
	inner = build(c, q->inner, boost, scoring && q->score_mode != SE_COMB_REPLACE);
	nested_scope = saved;
	if (inner == NULL)
		return NULL;
	if (inner->kind == SE_W_NONE)
		return inner;
	w = new_weight(SE_W_NESTED, scoring);
	w->field = pstrdup(f->path);
	w->inner = inner;
	w->score_mode = q->score_mode;
	w->nested_parent = saved ? pstrdup(saved) : NULL;
	w->nested_shard = c->shard;
	w->max_score = FLT_MAX;
	return w;
}

static SeWeight *
build(BuildCtx *c, const SeQuery *q, float boost, bool scoring)
{
	float		b = boost * q->boost;

	switch (q->kind)
	{
		case SE_Q_MATCH_ALL:
			(void) add_clauses(c, 1);
			return all_weight(b, scoring);
		case SE_Q_MATCH_NONE:
			(void) add_clauses(c, 1);
			return none_weight();
		case SE_Q_MATCH:
			return match_field_weight(c, q, q->field, b, scoring);
		case SE_Q_MATCH_PHRASE:
			return phrase_field_weight(c, q, q->field, b, scoring);
		case SE_Q_MULTI_MATCH:
			if (q->mm_type == SE_MM_CROSS_FIELDS)
				return build_cross_fields(c, q, b, scoring);
			return build_multi_match(c, q, b, scoring);
		case SE_Q_MATCH_BOOL_PREFIX:
			return bool_prefix_field_weight(c, q, q->field, b, scoring);
		case SE_Q_FUNCTION_SCORE:
			return build_function_score(c, q, b, scoring);
		case SE_Q_TERMS_SET:
			return build_terms_set(c, q, b, scoring);
		case SE_Q_MORE_LIKE_THIS:
			{
				/* the rewrite carries q's boost */
				SeQuery    *rq = se_mlt_rewrite(q, c->shard, c->err);

				return rq != NULL ? build(c, rq, boost, scoring) : NULL;
			}
		case SE_Q_MATCH_PHRASE_PREFIX:
			return phrase_prefix_field_weight(c, q, q->field, b, scoring);
		case SE_Q_TERM:
			return build_term(c, q, b, scoring);
		case SE_Q_TERMS:
			return build_terms(c, q, b, scoring);
		case SE_Q_RANGE:
			return build_range(c, q, b, scoring);
		case SE_Q_EXISTS:
			return build_exists(c, q, b, scoring);
		case SE_Q_GEO:
			return build_geo(c, q, b, scoring);
		case SE_Q_IDS:
			return ids_weight(c, q->values, q->nvalues, b, scoring);
		case SE_Q_PREFIX:
			return build_prefix(c, q, b, scoring);
		case SE_Q_REGEXP:
			return build_regexp(c, q, b, scoring);
		case SE_Q_FUZZY:
			return build_fuzzy(c, q, b, scoring);
		case SE_Q_WILDCARD:
			return build_wildcard(c, q, b, scoring);
		case SE_Q_PER_FIELD:
			return build_per_field(c, q, b, scoring);
		case SE_Q_BOOL:
			return build_bool(c, q, b, scoring);
		case SE_Q_CONSTANT_SCORE:
			{
				SeWeight   *inner = build(c, q->inner, 1.0f, false);
				SeWeight   *w;

				if (inner == NULL)
					return NULL;
				if (inner->kind == SE_W_NONE)
					return inner;
				w = new_weight(SE_W_CONST, scoring);
				w->inner = inner;
				w->const_score = scoring ? b : 0.0f;
				w->max_score = w->const_score;
				return w;
			}
		case SE_Q_NESTED:
			return build_nested(c, q, b, scoring);
		case SE_Q_DIS_MAX:
			{
				SeWeight  **subs = build_list(c, q->should, q->nshould, b, scoring);

				if (subs == NULL)
					return NULL;
				return dismax_weight(subs, q->nshould, q->tie_breaker, scoring);
			}
	}
	se_error_set(c->err, 500, "illegal_state_exception", "unknown query kind");
	return NULL;
}

static SeWeight *weight_build(const SeQuery *q, SeSearchShard *shard, bool scoring,
							  const SeDfsStats *global, SeDfsStats *collect, float boost,
							  SeError *err);

SeWeight *
se_weight_build(const SeQuery *q, SeSearchShard *shard, bool scoring,
				const SeDfsStats *global, SeDfsStats *collect, SeError *err)
{
	return weight_build(q, shard, scoring, global, collect, 1.0f, err);
}

SeWeight *
se_weight_build_boosted(const SeQuery *q, SeSearchShard *shard, bool scoring,
						const SeDfsStats *global, float boost, SeError *err)
{
	return weight_build(q, shard, scoring, global, NULL, boost, err);
}

/* se_weight_build, q's scores multiplied by boost (Lucene's BoostQuery) */
static SeWeight *
weight_build(const SeQuery *q, SeSearchShard *shard, bool scoring,
			 const SeDfsStats *global, SeDfsStats *collect, float boost, SeError *err)
{
	BuildCtx	c;
	SeWeight   *w;

	c.shard = shard;
	c.global = global;
	c.collect = collect;
	c.err = err;
	c.now_millis = PG_INT64_MIN;
	c.nclauses = 0;
	nested_scope = NULL;		/* an error may have left a nested build */
	if (q == NULL)
		return all_weight(boost, scoring);
	w = build(&c, q, boost, scoring);
	/* a count past the limit may have been swallowed by a lenient field */
	if (!add_clauses(&c, 0) || se_error_is_set(err))
		return NULL;
	if (w == NULL)
		se_error_set(err, 400, "query_shard_exception", "failed to create query");
	return w;
}
