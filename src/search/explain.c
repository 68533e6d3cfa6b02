/*-------------------------------------------------------------------------
 *
 * explain.c
 *	  Lucene's explanation of a document's score (ES's "_explanation",
 *	  explain: true in hits and the _explain API).
 *
 * The tree follows Lucene 9's Weight.explain: a BM25 term gives
 * "weight(field:term in doc) [PerFieldSimilarity]" over "score(freq=...),
 * computed as boost * idf * tf" with idf's n and N and tf's freq, k1, b,
 * dl and avgdl; boolean queries sum their scoring clauses ("sum of:",
 * filters as "match on required clause"), dis_max takes the max (plus
 * tie_breaker times the others).  As Lucene's BooleanWeight does, every
 * node's value is what the node's own scorer gives for the doc, so the
 * root's value is the hit's _score exactly; the parts under a term are
 * the same float steps as bm25.c.  Non-matching docs get Lucene's
 * "no match" descriptions.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "index/segment.h"
#include "search/search_int.h"

static void explain_node(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out,
						 bool *matched);

/* Open one explanation object: {"value":v,"description":d,"details":[ */
static void
open_expl(StringInfo out, float value, const char *description)
{
	appendStringInfoString(out, "{\"value\":");
	se_search_write_float(out, value);
	appendStringInfoString(out, ",\"description\":");
	se_json_write_string(out, description, strlen(description));
	appendStringInfoString(out, ",\"details\":[");
}

static void
close_expl(StringInfo out)
{
	appendStringInfoString(out, "]}");
}

static void
leaf_float(StringInfo out, float value, const char *description)
{
	open_expl(out, value, description);
	close_expl(out);
}

/* A count (Lucene explains longs as integers). */
static void
leaf_long(StringInfo out, int64 value, const char *description)
{
	appendStringInfo(out, "{\"value\":" INT64_FORMAT ",\"description\":", value);
	se_json_write_string(out, description, strlen(description));
	appendStringInfoString(out, ",\"details\":[]}");
}

/* The term as Lucene's Term.text() shows it. */
static void
append_term(StringInfo out, const char *term, int len)
{
	appendBinaryStringInfo(out, term, len);
}

/* Lucene's toString of w's query, close enough to name it in descriptions. */
static void
query_string(const SeWeight *w, StringInfo out)
{
	int			i;

	switch (w->kind)
	{
		case SE_W_NONE:
			appendStringInfoString(out, "MatchNoDocsQuery(\"\")");
			break;
		case SE_W_ALL:
			appendStringInfoString(out, "*:*");
			break;
		case SE_W_TERM:
			appendStringInfo(out, "%s:", w->field);
			append_term(out, w->terms[0], w->term_lens[0]);
			break;
		case SE_W_PHRASE:
			appendStringInfo(out, "%s:\"", w->field);
			for (i = 0; i < w->nterms; i++)
			{
				/* MultiPhraseQuery: a position's alternatives in parentheses */
				bool		alt = w->nlast_alts > 1 && i >= w->nterms - w->nlast_alts;

				if (i > 0)
					appendStringInfoChar(out, ' ');
				if (alt && i == w->nterms - w->nlast_alts)
					appendStringInfoChar(out, '(');
				append_term(out, w->terms[i], w->term_lens[i]);
				if (alt && i == w->nterms - 1)
					appendStringInfoChar(out, ')');
			}
			appendStringInfoChar(out, '"');
			if (w->slop > 0)
				appendStringInfo(out, "~%d", w->slop);
			break;
		case SE_W_BOOL:
			{
				bool		first = true;

#define CLAUSES(arr, n, prefix) \
				for (i = 0; i < (n); i++) \
				{ \
					if (!first) \
						appendStringInfoChar(out, ' '); \
					first = false; \
					appendStringInfoString(out, prefix); \
					if ((arr)[i]->kind == SE_W_BOOL) \
						appendStringInfoChar(out, '('); \
					query_string((arr)[i], out); \
					if ((arr)[i]->kind == SE_W_BOOL) \
						appendStringInfoChar(out, ')'); \
				}
				CLAUSES(w->must, w->nmust, "+");
				CLAUSES(w->should, w->nshould, "");
				CLAUSES(w->filter, w->nfilter, "#");
				CLAUSES(w->must_not, w->nmust_not, "-");
#undef CLAUSES
			}
			break;
		case SE_W_DISMAX:
			appendStringInfoChar(out, '(');
			for (i = 0; i < w->nshould; i++)
			{
				if (i > 0)
					appendStringInfoString(out, " | ");
				query_string(w->should[i], out);
			}
			appendStringInfoChar(out, ')');
			break;
		case SE_W_CONST:
			appendStringInfoString(out, "ConstantScore(");
			query_string(w->inner, out);
			appendStringInfoChar(out, ')');
			break;
		case SE_W_DOCSET:
			switch (w->ds_kind)
			{
				case SE_DS_EXISTS:
					appendStringInfo(out, "FieldExistsQuery [field=%s]", w->field);
					break;
				case SE_DS_RANGE:
					if (w->numeric)
						appendStringInfo(out, "%s:[" INT64_FORMAT " TO " INT64_FORMAT "]",
										 w->field, w->num_lo, w->num_hi);
					else
					{
						appendStringInfo(out, "%s:%c", w->field, w->lower_inclusive ? '[' : '{');
						if (w->lower)
							append_term(out, w->lower, w->lower_len);
						else
							appendStringInfoChar(out, '*');
						appendStringInfoString(out, " TO ");
						if (w->upper)
							append_term(out, w->upper, w->upper_len);
						else
							appendStringInfoChar(out, '*');
						appendStringInfoChar(out, w->upper_inclusive ? ']' : '}');
					}
					break;
				case SE_DS_PREFIX:
				case SE_DS_PREFIX_CI:
					appendStringInfo(out, "%s:", w->field);
					if (w->lower)
						append_term(out, w->lower, w->lower_len);
					appendStringInfoChar(out, '*');
					break;
				default:
					appendStringInfo(out, "%s:(", w->field);
					for (i = 0; i < w->nterms; i++)
					{
						if (i > 0)
							appendStringInfoChar(out, ' ');
						append_term(out, w->terms[i], w->term_lens[i]);
					}
					appendStringInfoChar(out, ')');
					break;
			}
			break;
		case SE_W_FUNCTION:
			appendStringInfoString(out, "function score (");
			query_string(w->inner, out);
			appendStringInfoChar(out, ')');
			break;
		case SE_W_TERMS_SET:
			appendStringInfo(out, "CoveringQuery(field=%s)", w->msm_field ? w->msm_field : "");
			break;
		case SE_W_NESTED:
			appendStringInfoString(out, "ToParentBlockJoinQuery (");
			query_string(w->inner, out);
			appendStringInfoChar(out, ')');
			break;
	}
}

/* w's scorer on doc: true with *score when it matches. */
static bool
score_of(SeWeight *w, SeSegmentCtx *seg, int32 doc, float *score, float *phrase_freq)
{
	SeScorer   *s = se_scorer_create(w, seg);
	bool		hit;

	if (s == NULL)
		return false;
	hit = s->advance(s, doc) == doc;
	if (hit)
	{
		*score = s->score(s);
		if (phrase_freq)
			*phrase_freq = se_phrase_scorer_freq(s);
	}
	se_scorer_free(s);
	return hit;
}

/*
 * BM25's "score(freq=...)" node (Lucene's BM25Scorer.explain) for freq and
 * the doc's norm byte; idf_details writes idf's sub-details.
 */
static void
explain_bm25(const SeWeight *w, float freq, uint8 norm, float score, StringInfo out)
{
	const SeBM25 *sim = w->sim;
	float		dl = (float) se_smallfloat_byte4_to_int(norm);
	float		ninv = sim->cache[norm];
	float		tf = (float) (1.0f - 1.0f / (1.0f + freq * ninv));
	char	   *d;
	StringInfoData fs;
	int			i;

	initStringInfo(&fs);
	se_search_write_float(&fs, freq);
	d = psprintf("score(freq=%s), computed as boost * idf * tf from:", fs.data);
	open_expl(out, score, d);
	if (sim->boost != 1.0f)
	{
		leaf_float(out, sim->boost, "boost");
		appendStringInfoChar(out, ',');
	}
	if (w->kind == SE_W_PHRASE)
	{
		bool		first = true;

		open_expl(out, sim->idf, "idf, sum of:");
		for (i = 0; w->term_dfs && i < w->nterms; i++)
		{
			if (w->term_dfs[i] == 0)
				continue;		/* a union's term the shard lacks */
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			open_expl(out, se_bm25_idf(w->term_dfs[i], Max(sim->doc_count, w->term_dfs[i])),
					  "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:");
			leaf_long(out, w->term_dfs[i], "n, number of documents containing term");
			appendStringInfoChar(out, ',');
			leaf_long(out, sim->doc_count, "N, total number of documents with field");
			close_expl(out);
		}
		close_expl(out);
	}
	else
	{
		open_expl(out, sim->idf, "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:");
		leaf_long(out, sim->doc_freq, "n, number of documents containing term");
		appendStringInfoChar(out, ',');
		leaf_long(out, sim->doc_count, "N, total number of documents with field");
		close_expl(out);
	}
	appendStringInfoChar(out, ',');
	open_expl(out, tf, "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:");
	leaf_float(out, freq, w->kind == SE_W_PHRASE ? psprintf("phraseFreq=%s", fs.data) :
			   "freq, occurrences of term within document");
	appendStringInfoChar(out, ',');
	leaf_float(out, SE_BM25_K1, "k1, term saturation parameter");
	appendStringInfoChar(out, ',');
	leaf_float(out, SE_BM25_B, "b, length normalization parameter");
	appendStringInfoChar(out, ',');
	leaf_float(out, dl, norm > 39 ? "dl, length of field (approximate)" : "dl, length of field");
	appendStringInfoChar(out, ',');
	leaf_float(out, sim->avgdl, "avgdl, average length of field");
	close_expl(out);
	close_expl(out);
}

/* The doc's norm byte for w's field in seg (1 without norms, as the scorers). */
static uint8
doc_norm(const SeWeight *w, SeSegmentCtx *seg, int32 doc)
{
	int			field = se_segment_field(seg->reader, w->field);

	if (field < 0 || !se_segment_field_has_norms(seg->reader, field))
		return 1;
	return se_segment_norm(seg->reader, field, doc);
}

static void
explain_term(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	StringInfoData q;
	float		score;
	float		pfreq = 0;
	bool		phrase = w->kind == SE_W_PHRASE;

	initStringInfo(&q);
	query_string(w, &q);
	*matched = score_of(w, seg, doc, &score, phrase ? &pfreq : NULL);
	if (!*matched)
	{
		leaf_float(out, 0.0f, "no matching term");
		return;
	}
	if (!w->bm25 || w->sim == NULL)
	{
		if (score != 1.0f)
		{
			StringInfoData b;

			initStringInfo(&b);
			se_search_write_float(&b, score);
			appendStringInfo(&q, "^%s", b.data);
		}
		leaf_float(out, score, q.data);
		return;
	}
	open_expl(out, score, psprintf("weight(%s in %d) [PerFieldSimilarity], result of:", q.data, doc));
	if (phrase)
		explain_bm25(w, pfreq, doc_norm(w, seg, doc), score, out);
	else
	{
		SeSegTerm  *st = &w->seg_terms[0][seg->ord];
		SePostings *p = st->found ? se_postings_open(seg->reader, &st->ti, false) : NULL;
		float		freq = 1.0f;

		if (p != NULL && se_postings_advance(p, doc) == doc)
			freq = (float) se_postings_freq(p);
		if (p != NULL)
			se_postings_close(p);
		explain_bm25(w, freq, doc_norm(w, seg, doc), score, out);
	}
	close_expl(out);
}

/* e, the explanation of clause, under Lucene's words for what it did (what). */
static void
wrap_clause(StringInfo subs, const char *what, const SeWeight *clause, const StringInfoData *e)
{
	StringInfoData q;

	initStringInfo(&q);
	query_string(clause, &q);
	open_expl(subs, 0.0f, psprintf("%s (%s)", what, q.data));
	appendBinaryStringInfo(subs, e->data, e->len);
	close_expl(subs);
}

typedef enum
{
	CL_MUST, CL_SHOULD, CL_FILTER, CL_MUST_NOT
} ClauseKind;

/* Lucene's BooleanWeight.explain over the clauses in must, should, filter, must_not order. */
static void
explain_bool(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	StringInfoData subs;
	bool		fail = false;
	int			nmatch = 0;
	int			nshould = 0;
	float		score = 0;
	int			kind,
				i;

	initStringInfo(&subs);
	for (kind = CL_MUST; kind <= CL_MUST_NOT; kind++)
	{
		SeWeight  **arr = kind == CL_MUST ? w->must : kind == CL_SHOULD ? w->should :
			kind == CL_FILTER ? w->filter : w->must_not;
		int			n = kind == CL_MUST ? w->nmust : kind == CL_SHOULD ? w->nshould :
			kind == CL_FILTER ? w->nfilter : w->nmust_not;

		for (i = 0; i < n; i++)
		{
			StringInfoData e;
			bool		m;
			bool		required = kind == CL_MUST || kind == CL_FILTER;

			initStringInfo(&e);
			explain_node(arr[i], seg, doc, &e, &m);
			if (!m && !required)
				continue;		/* Lucene lists no unmatched optional clause */
			if (subs.len > 0)
				appendStringInfoChar(&subs, ',');
			if (kind == CL_MUST_NOT)
			{
				wrap_clause(&subs, "match on prohibited clause", arr[i], &e);
				fail = true;
			}
			else if (!m)
			{
				wrap_clause(&subs, "no match on required clause", arr[i], &e);
				fail = true;
			}
			else if (kind == CL_FILTER)
			{
				open_expl(&subs, 0.0f, "match on required clause, product of:");
				leaf_float(&subs, 0.0f, "# clause");
				appendStringInfoChar(&subs, ',');
				appendBinaryStringInfo(&subs, e.data, e.len);
				close_expl(&subs);
				nmatch++;
			}
			else
			{
				appendBinaryStringInfo(&subs, e.data, e.len);
				nmatch++;
				nshould += kind == CL_SHOULD;
			}
		}
	}
	*matched = false;
	if (fail)
		open_expl(out, 0.0f, "Failure to meet condition(s) of required/prohibited clause(s)");
	else if (nmatch == 0)
		open_expl(out, 0.0f, "No matching clauses");
	else if (nshould < w->msm)
		open_expl(out, 0.0f, psprintf("Failure to match minimum number of optional clauses: %d", w->msm));
	else
	{
		/* the scorer's value, as Lucene: its sums round as they do */
		*matched = score_of(w, seg, doc, &score, NULL);
		open_expl(out, score, "sum of:");
	}
	appendBinaryStringInfo(out, subs.data, subs.len);
	close_expl(out);
}

static void
explain_dismax(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	StringInfoData subs;
	float		score = 0;
	bool		any = false;
	int			i;

	initStringInfo(&subs);
	for (i = 0; i < w->nshould; i++)
	{
		StringInfoData e;
		bool		m;

		initStringInfo(&e);
		explain_node(w->should[i], seg, doc, &e, &m);
		if (m)
		{
			if (any)
				appendStringInfoChar(&subs, ',');
			appendBinaryStringInfo(&subs, e.data, e.len);
			any = true;
		}
	}
	*matched = any && score_of(w, seg, doc, &score, NULL);
	if (!*matched)
		open_expl(out, 0.0f, "No matching clause");
	else if (w->tie_breaker == 0.0f)
		open_expl(out, score, "max of:");
	else
	{
		StringInfoData t;

		initStringInfo(&t);
		se_search_write_float(&t, w->tie_breaker);
		open_expl(out, score, psprintf("max plus %s times others of:", t.data));
	}
	appendBinaryStringInfo(out, subs.data, subs.len);
	close_expl(out);
}

/* A float as Java's Float.toString, for descriptions. */
static char *
float_text(float f)
{
	StringInfoData b;

	initStringInfo(&b);
	se_search_write_float(&b, f);
	return b.data;
}

static const char *const fvf_modifiers[] = {
	"none", "log", "log1p", "log2p", "ln", "ln1p", "ln2p", "square", "sqrt", "reciprocal"
};

/*
 * One function's explanation (ES's ScoreFunction.explainScore), its weight
 * as WeightFactorFunction's "product of:" when it has one; value is the
 * function's own value, qexpl the query's explanation (script functions
 * show it as "_score: ").
 */
static void
explain_function(const SeFnWeight *f, double value, float qscore, const char *qexpl,
				 SeSegmentCtx *seg, int32 doc, StringInfo out)
{
	bool		weighted = f->kind == SE_FN_WEIGHT || f->weight != 1.0f;

	if (weighted)
		open_expl(out, (float) value * f->weight, "product of:");
	switch (f->kind)
	{
		case SE_FN_WEIGHT:
			leaf_float(out, 1.0f, "constant score 1.0 - no function provided");
			break;
		case SE_FN_FIELD_VALUE_FACTOR:
			leaf_float(out, (float) value,
					   psprintf("field value function: %s(doc['%s'].value%s%s * factor=%s)",
								fvf_modifiers[f->modifier], f->field ? f->field : "",
								f->has_missing ? "?:" : "",
								f->has_missing ? float_text((float) f->missing) : "",
								float_text((float) f->factor)));
			break;
		case SE_FN_RANDOM:
			leaf_float(out, (float) value,
					   psprintf("random score function (seed: " INT64_FORMAT ", field: %s)",
								f->seed, f->field ? f->field : "null"));
			break;
		case SE_FN_SCRIPT:
			open_expl(out, (float) value,
					  psprintf("script score function, computed with script:\"Script{type=inline, lang='painless', idOrCode='%s'}\"",
							   se_script_binding_source(f->script)));
			open_expl(out, qscore, "_score: ");
			appendStringInfoString(out, qexpl);
			close_expl(out);
			close_expl(out);
			break;
		case SE_FN_GAUSS:
		case SE_FN_EXP:
		case SE_FN_LINEAR:
			{
				StringInfoData text;

				initStringInfo(&text);
				se_function_decay_text(f, seg->reader, doc, &text);
				open_expl(out, (float) value,
						  psprintf("Function for field %s:", f->field ? f->field : ""));
				leaf_float(out, (float) value, text.data);
				close_expl(out);
			}
			break;
		default:
			leaf_float(out, (float) value, "distance_feature function");
			break;
	}
	if (weighted)
	{
		appendStringInfoChar(out, ',');
		leaf_float(out, f->weight, "weight");
		close_expl(out);
	}
}

static const char *const combine_names[] = {
	"multiply", "sum", "avg", "first", "max", "min", "replace"
};

/*
 * function_score's explanation as ES's FunctionScoreQuery.explain: the
 * query's, each applying function's (under "function score, product of:"
 * with "match filter: ..." when it has a filter), their factor ("function
 * score, score mode [m]" unless a single unfiltered function), then
 * boost_mode's CombineFunction.explain with max_boost ("min of:").  Values
 * come from the scorer's code; the root is the scorer's score.
 */
static void
explain_function_score(SeWeight *w, SeSegmentCtx *seg, int32 doc, float score, StringInfo out)
{
	double	   *values = palloc(sizeof(double) * Max(1, w->nfns));
	double		factor = 1.0;
	float		qscore = 0;
	float		fval,
				capped;
	StringInfoData qexpl;
	StringInfoData fexpl;
	bool		m,
				first = true;
	int			i,
				napplied = 0;
	const char *how;

	initStringInfo(&qexpl);
	initStringInfo(&fexpl);
	score_of(w->inner, seg, doc, &qscore, NULL);
	explain_node(w->inner, seg, doc, &qexpl, &m);
	if (!se_function_score_values(w, seg, doc, values, &factor))
		factor = 1.0;
	for (i = 0; i < w->nfns; i++)
		if (!isnan(values[i]))
			napplied++;
	fval = (float) factor;
	if (napplied == 0)
		leaf_float(&fexpl, 1.0f, "No function matched");
	else
	{
		bool		single = w->nfns == 1 && w->fns[0].filter == NULL;

		if (!single)
			open_expl(&fexpl, fval, psprintf("function score, score mode [%s]",
											 combine_names[w->score_mode]));
		for (i = 0; i < w->nfns; i++)
		{
			const SeFnWeight *f = &w->fns[i];

			if (isnan(values[i]))
				continue;
			if (!first)
				appendStringInfoChar(&fexpl, ',');
			first = false;
			if (f->filter != NULL)
			{
				StringInfoData fq;

				initStringInfo(&fq);
				query_string(f->filter, &fq);
				open_expl(&fexpl, (float) (values[i] * f->weight), "function score, product of:");
				leaf_float(&fexpl, 1.0f, psprintf("match filter: %s", fq.data));
				appendStringInfoChar(&fexpl, ',');
			}
			explain_function(f, values[i], qscore, qexpl.data, seg, doc, &fexpl);
			if (f->filter != NULL)
				close_expl(&fexpl);
		}
		if (!single)
			close_expl(&fexpl);
	}
	capped = Min(fval, w->max_boost);
	how = w->boost_mode == SE_COMB_SUM ? "sum of" : w->boost_mode == SE_COMB_AVG ? "avg of"
		: w->boost_mode == SE_COMB_MIN ? "min of" : w->boost_mode == SE_COMB_MAX ? "max of"
		: "function score, product of:";
	if (w->fn_boost != 1.0f)
		open_expl(out, score, "product of:");
	if (w->boost_mode != SE_COMB_REPLACE)
	{
		open_expl(out, w->fn_boost != 1.0f ? score / w->fn_boost : score, how);
		appendStringInfoString(out, qexpl.data);
		appendStringInfoChar(out, ',');
	}
	open_expl(out, w->boost_mode == SE_COMB_REPLACE && w->fn_boost == 1.0f ? score : capped,
			  "min of:");
	appendStringInfoString(out, fexpl.data);
	appendStringInfoChar(out, ',');
	leaf_float(out, w->max_boost, "maxBoost");
	close_expl(out);
	if (w->boost_mode != SE_COMB_REPLACE)
		close_expl(out);
	if (w->fn_boost != 1.0f)
	{
		appendStringInfoChar(out, ',');
		leaf_float(out, w->fn_boost, "boost");
		close_expl(out);
	}
}

/* Any other node: its scorer's value, named by its query, inner nodes below. */
static void
explain_other(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	StringInfoData q;
	float		score = 0;

	initStringInfo(&q);
	query_string(w, &q);
	*matched = score_of(w, seg, doc, &score, NULL);
	if (!*matched)
	{
		leaf_float(out, 0.0f, psprintf("%s doesn't match id %d", q.data, doc));
		return;
	}
	if (w->kind == SE_W_FUNCTION && w->inner != NULL)
	{
		bool		m;

		if (w->nfns == 1 && w->fns[0].script != NULL &&
			se_script_binding_is_query(w->fns[0].script))
		{
			float		inner_score = 0;

			/* ES's ScriptScoreQuery: the script, then the _score it read */
			open_expl(out, score, psprintf("script score function, computed with script:\"Script{type=inline, lang='painless', idOrCode='%s'}\"",
										   se_script_binding_source(w->fns[0].script)));
			score_of(w->inner, seg, doc, &inner_score, NULL);
			open_expl(out, inner_score, "_score: ");
			explain_node(w->inner, seg, doc, out, &m);
			close_expl(out);
			close_expl(out);
			return;
		}
		explain_function_score(w, seg, doc, score, out);
		return;
	}
	if (score != 1.0f && w->kind != SE_W_TERMS_SET)
	{
		StringInfoData b;

		initStringInfo(&b);
		se_search_write_float(&b, score);
		appendStringInfo(&q, "^%s", b.data);
	}
	leaf_float(out, score, q.data);
}

/*
 * Lucene's BlockJoinWeight.explain: the children counted, their doc range
 * and the score mode, with the best child's explanation.
 */
static void
explain_nested(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	int32		first,
				last,
				best;
	int			count = se_nested_children(w, seg, doc, &first, &last, &best);
	float		score = 0;
	bool		child_matched;
	const char *mode;

	*matched = count > 0 && score_of(w, seg, doc, &score, NULL);
	if (!*matched)
	{
		leaf_float(out, 0.0f, "Not a match");
		return;
	}
	switch (w->score_mode)
	{
		case SE_COMB_MAX:
			mode = "Max";
			break;
		case SE_COMB_MIN:
			mode = "Min";
			break;
		case SE_COMB_SUM:
			mode = "Total";
			break;
		case SE_COMB_REPLACE:
			mode = "None";
			break;
		default:
			mode = "Avg";
			break;
	}
	open_expl(out, score,
			  psprintf("Score based on %d child docs in range from %d to %d, using score mode %s",
					   count, first, last, mode));
	explain_node(w->inner, seg, best, out, &child_matched);
	close_expl(out);
}

static void
explain_node(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	SE_SEARCH_TICK(1);
	switch (w->kind)
	{
		case SE_W_NESTED:
			explain_nested(w, seg, doc, out, matched);
			break;
		case SE_W_TERM:
		case SE_W_PHRASE:
			explain_term(w, seg, doc, out, matched);
			break;
		case SE_W_BOOL:
			explain_bool(w, seg, doc, out, matched);
			break;
		case SE_W_DISMAX:
			explain_dismax(w, seg, doc, out, matched);
			break;
		case SE_W_NONE:
			/* mostly a term no doc of the shard has */
			*matched = false;
			leaf_float(out, 0.0f, "no matching term");
			break;
		default:
			explain_other(w, seg, doc, out, matched);
			break;
	}
}

void
se_explain_weight(SeWeight *w, SeSegmentCtx *seg, int32 doc, StringInfo out, bool *matched)
{
	explain_node(w, seg, doc, out, matched);
}

/*
 * w's explanation for doc, then each rescorer's as ES's
 * QueryRescorer.explain: the value so far times query_weight ("product
 * of:" ... "primaryWeight"); when the doc was in the rescorer's window
 * (bit i of rescored) and its query matches, that and the rescore query's
 * explanation times rescore_query_weight ("secondaryWeight") combined by
 * score_mode ("sum of:", "product of:", "avg of:", "max of:", "min of:").
 * The values are the same float steps as the rescore itself.
 */
bool
se_explain_rescored(SeSearchRequest *req, SeSearchShard *shard, SeWeight *w,
					SeSegmentCtx *seg, int32 doc, uint32 rescored, StringInfo out,
					bool *matched, SeError *err)
{
	static const char *const mode_names[] = {
		[SE_RESCORE_TOTAL] = "sum of:",
		[SE_RESCORE_MULTIPLY] = "product of:",
		[SE_RESCORE_AVG] = "avg of:",
		[SE_RESCORE_MAX] = "max of:",
		[SE_RESCORE_MIN] = "min of:"
	};
	StringInfoData cur;
	float		value = 0;
	int			i;

	initStringInfo(&cur);
	explain_node(w, seg, doc, &cur, matched);
	if (req->nrescore == 0 || !*matched)
	{
		appendBinaryStringInfo(out, cur.data, cur.len);
		return true;
	}
	score_of(w, seg, doc, &value, NULL);
	for (i = 0; i < req->nrescore; i++)
	{
		const SeRescore *rs = &req->rescore[i];
		StringInfoData prim;
		float		primary = value * rs->query_weight;

		initStringInfo(&prim);
		open_expl(&prim, primary, "product of:");
		appendBinaryStringInfo(&prim, cur.data, cur.len);
		appendStringInfoChar(&prim, ',');
		leaf_float(&prim, rs->query_weight, "primaryWeight");
		close_expl(&prim);
		value = primary;
		if (i < 32 && (rescored & ((uint32) 1 << i)) != 0)
		{
			SeWeight   *rw = se_weight_build(rs->query, shard, true, req->dfs, NULL, err);
			float		rscore = 0;

			if (rw == NULL)
				return false;
			if (score_of(rw, seg, doc, &rscore, NULL))
			{
				StringInfoData both;
				float		secondary = rscore * rs->rescore_query_weight;
				bool		m;

				value = se_rescore_combine(rs->mode, primary, secondary);
				initStringInfo(&both);
				open_expl(&both, value, mode_names[rs->mode]);
				appendBinaryStringInfo(&both, prim.data, prim.len);
				appendStringInfoChar(&both, ',');
				open_expl(&both, secondary, "product of:");
				explain_node(rw, seg, doc, &both, &m);
				appendStringInfoChar(&both, ',');
				leaf_float(&both, rs->rescore_query_weight, "secondaryWeight");
				close_expl(&both);
				close_expl(&both);
				prim = both;
			}
		}
		cur = prim;
	}
	appendBinaryStringInfo(out, cur.data, cur.len);
	return true;
}

bool
se_search_validate(SeSearchRequest *req, SeSearchShard *shard, StringInfo explanation,
				   SeError *err)
{
	SeWeight   *w = se_weight_build(req->query, shard, true, NULL, NULL, err);

	if (w == NULL)
		return false;
	query_string(w, explanation);
	return true;
}
