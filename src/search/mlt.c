/*-------------------------------------------------------------------------
 *
 * mlt.c
 *	  The more_like_this query.
 *
 * As ES 8 (MoreLikeThisQueryBuilder over Lucene's XMoreLikeThis), per
 * shard: the "like" texts are analyzed with the first field's analyzer
 * (or "analyzer"), the liked documents' values of every field with that
 * field's analyzer; their words (minus "unlike" ones, stop words, words
 * outside min/max_word_length) are counted per source (texts, docs),
 * words seen fewer than min_term_freq times dropped, and each remaining
 * word takes the field of its largest doc frequency in the shard (deleted
 * docs counted, as Lucene's docFreq); doc frequencies below min_doc_freq,
 * above max_doc_freq or 0 drop the word.  The max_query_terms best by
 * tf * idf (ClassicSimilarity's idf, log((numDocs + 1) / (df + 1)) + 1,
 * numDocs the shard's live docs) become SHOULD term queries of a bool
 * with minimum_should_match -- boosted by boost_terms * score / the
 * lowest kept score when boost_terms is set, Lucene's quirk kept -- one
 * bool for the texts and one for the documents, both SHOULD.  The
 * existing weights and scorers run that bool.  include: false (the
 * default) excludes the liked documents named by _id.
 *
 * Documents named by {"_index", "_id"} are fetched by the API layer
 * before the search is parsed (api/mlt_items.c) and arrive here with
 * their "_source", so remote shards see the same documents.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>

#include "analysis/analysis.h"
#include "common/hashfn.h"
#include "search/search_int.h"

typedef struct SeMltItem
{
	const SeJson *doc;			/* inline "doc", or the fetched "_source" */
	char	   *id;				/* "_id", or NULL */
	const SeJson *fields;		/* the item's "fields" (array), or NULL: all */
	const SeJson *per_field_analyzer;	/* {"field": "analyzer"}, or NULL */
} SeMltItem;

struct SeMlt
{
	int			nfields;		/* 0: every text and keyword field */
	char	  **fields;
	int			nlike_texts;
	char	  **like_texts;
	int			nlike_items;
	SeMltItem  *like_items;
	int			nunlike_texts;
	char	  **unlike_texts;
	int			nunlike_items;
	SeMltItem  *unlike_items;
	int			max_query_terms;
	int			min_term_freq;
	int			min_doc_freq;
	int64		max_doc_freq;
	int			min_word_length;
	int			max_word_length;
	int			nstop_words;
	char	  **stop_words;
	char	   *analyzer;
	char	   *msm;
	float		boost_terms;
	bool		include;
	bool		fail_on_unsupported_field;
};

static SeQuery *
mlt_error(SeError *err, const char *type, const char *msg, const char *arg)
{
	se_error_set(err, 400, type, msg, arg);
	return NULL;
}

/* A like/unlike item: a text, {"doc"}, or {"_index", "_id"} (with "_source" once fetched). */
static bool
add_item(const SeJson *v, int *ntexts, char ***texts, int *nitems, SeMltItem **items,
		 SeError *err)
{
	int			i;
	SeMltItem	it = {0};
	bool		has_id = false;

	if (v->type == SE_JSON_STRING)
	{
		*texts = *ntexts ? repalloc(*texts, sizeof(char *) * (*ntexts + 1)) : palloc(sizeof(char *));
		(*texts)[(*ntexts)++] = pnstrdup(v->u.s.str, v->u.s.len);
		return true;
	}
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[more_like_this] like and unlike items must be strings or objects");
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *m = v->u.o.members[i].value;

		if (strcmp(k, "_id") == 0 && m->type == SE_JSON_STRING)
		{
			it.id = pnstrdup(m->u.s.str, m->u.s.len);
			has_id = true;
		}
		else if ((strcmp(k, "doc") == 0 || strcmp(k, "_source") == 0) &&
				 m->type == SE_JSON_OBJECT)
			it.doc = m;
		else if (strcmp(k, "fields") == 0 && m->type == SE_JSON_ARRAY)
			it.fields = m;
		else if (strcmp(k, "per_field_analyzer") == 0 && m->type == SE_JSON_OBJECT)
			it.per_field_analyzer = m;
		else if (strcmp(k, "_index") == 0 || strcmp(k, "routing") == 0 ||
				 strcmp(k, "found") == 0)
			 /* the API layer's */ ;
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[more_like_this] unknown field [%s] in a like item", k);
			return false;
		}
	}
	if (!has_id && it.doc == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[more_like_this] an item requires either [_id] or [doc]");
		return false;
	}
	if (se_json_get(v, "doc") != NULL)
		it.id = NULL;			/* artificial docs are not excluded (ES) */
	*items = *nitems ? repalloc(*items, sizeof(SeMltItem) * (*nitems + 1)) : palloc(sizeof(SeMltItem));
	(*items)[(*nitems)++] = it;
	return true;
}

static bool
add_items(const SeJson *v, int *ntexts, char ***texts, int *nitems, SeMltItem **items,
		  SeError *err)
{
	int			i;

	if (v->type != SE_JSON_ARRAY)
		return add_item(v, ntexts, texts, nitems, items, err);
	for (i = 0; i < v->u.a.count; i++)
		if (!add_item(v->u.a.items[i], ntexts, texts, nitems, items, err))
			return false;
	return true;
}

static bool
string_list(const char *key, const SeJson *v, int *n, char ***out, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[more_like_this] query does not support [%s] as a %s", key,
					 se_json_type_name(v->type));
		return false;
	}
	*n = v->u.a.count;
	*out = palloc(sizeof(char *) * Max(1, *n));
	for (i = 0; i < *n; i++)
	{
		if (v->u.a.items[i]->type != SE_JSON_STRING)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[more_like_this] [%s] must hold strings", key);
			return false;
		}
		(*out)[i] = pstrdup(v->u.a.items[i]->u.s.str);
	}
	return true;
}

SeQuery *
se_mlt_parse(const SeJson *body, SeError *err)
{
	SeQuery    *q;
	SeMlt	   *m;
	int			i;
	bool		has_like = false;

	if (body->type != SE_JSON_OBJECT)
		return mlt_error(err, "parsing_exception",
						 "[%s] query malformed, no start_object after query name",
						 "more_like_this");
	q = se_query_new(SE_Q_MORE_LIKE_THIS);
	q->mlt = m = palloc0(sizeof(SeMlt));
	m->max_query_terms = 25;
	m->min_term_freq = 2;
	m->min_doc_freq = 5;
	m->max_doc_freq = PG_INT32_MAX;
	m->msm = pstrdup("30%");
	m->fail_on_unsupported_field = true;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;
		double		d;

		if (strcmp(k, "like") == 0)
		{
			has_like = true;
			if (!add_items(v, &m->nlike_texts, &m->like_texts, &m->nlike_items,
						   &m->like_items, err))
				return NULL;
		}
		else if (strcmp(k, "unlike") == 0)
		{
			if (!add_items(v, &m->nunlike_texts, &m->unlike_texts, &m->nunlike_items,
						   &m->unlike_items, err))
				return NULL;
		}
		else if (strcmp(k, "fields") == 0)
		{
			if (!string_list(k, v, &m->nfields, &m->fields, err))
				return NULL;
			if (m->nfields == 0)
				return mlt_error(err, "illegal_argument_exception",
								 "%s requires 'fields' to be non-empty", "more_like_this");
		}
		else if (strcmp(k, "stop_words") == 0)
		{
			if (!string_list(k, v, &m->nstop_words, &m->stop_words, err))
				return NULL;
		}
		else if (strcmp(k, "analyzer") == 0 && v->type == SE_JSON_STRING)
			m->analyzer = pstrdup(v->u.s.str);
		else if (strcmp(k, "minimum_should_match") == 0 &&
				 (v->type == SE_JSON_STRING || v->type == SE_JSON_NUMBER))
			m->msm = v->type == SE_JSON_STRING ? pstrdup(v->u.s.str) :
				pnstrdup(v->u.n.text, v->u.n.len);
		else if ((strcmp(k, "include") == 0 || strcmp(k, "fail_on_unsupported_field") == 0) &&
				 (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE))
		{
			if (k[0] == 'i')
				m->include = v->type == SE_JSON_TRUE;
			else
				m->fail_on_unsupported_field = v->type == SE_JSON_TRUE;
		}
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else if (se_json_as_double(v, &d))
		{
			if (strcmp(k, "boost") == 0)
				q->boost = (float) d;
			else if (strcmp(k, "boost_terms") == 0)
				m->boost_terms = (float) d;
			else if (strcmp(k, "max_query_terms") == 0)
				m->max_query_terms = (int) d;
			else if (strcmp(k, "min_term_freq") == 0)
				m->min_term_freq = (int) d;
			else if (strcmp(k, "min_doc_freq") == 0)
				m->min_doc_freq = (int) d;
			else if (strcmp(k, "max_doc_freq") == 0)
				m->max_doc_freq = (int64) d;
			else if (strcmp(k, "min_word_length") == 0)
				m->min_word_length = (int) d;
			else if (strcmp(k, "max_word_length") == 0)
				m->max_word_length = (int) d;
			else
				return mlt_error(err, "parsing_exception",
								 "[more_like_this] query does not support [%s]", k);
		}
		else
			return mlt_error(err, "parsing_exception",
							 "[more_like_this] query does not support [%s]", k);
	}
	if (!has_like || m->nlike_texts + m->nlike_items == 0)
		return mlt_error(err, "illegal_argument_exception",
						 "%s requires 'like' to be specified", "more_like_this");
	if (m->max_query_terms <= 0)
		return mlt_error(err, "illegal_argument_exception",
						 "requires 'max_query_terms' to be greater than 0", NULL);
	return q;
}

/* ---------------------------------------------------------------------
 * Term selection on a shard
 * ---------------------------------------------------------------------
 */
typedef struct Word
{
	char	   *word;
	int			len;
	int			tf;
	struct Word *next;
} Word;

/* words by text: a chained hash, insertion order kept in a list */
typedef struct Words
{
	int			nbuckets;
	Word	  **bucket;
	int			n;
	Word	  **order;
	int			cap;
} Words;

static void
words_init(Words *w)
{
	memset(w, 0, sizeof(*w));
	w->nbuckets = 256;
	w->bucket = palloc0(sizeof(Word *) * w->nbuckets);
}

static Word *
words_find(Words *w, const char *s, int len)
{
	Word	   *x;

	for (x = w->bucket[hash_bytes((const unsigned char *) s, len) & (w->nbuckets - 1)]; x; x = x->next)
		if (x->len == len && memcmp(x->word, s, len) == 0)
			return x;
	return NULL;
}

static void
words_add(Words *w, const char *s, int len)
{
	Word	   *x = words_find(w, s, len);
	int			b;

	if (x != NULL)
	{
		x->tf++;
		return;
	}
	b = hash_bytes((const unsigned char *) s, len) & (w->nbuckets - 1);
	x = palloc0(sizeof(Word));
	/* skip keys hold a NUL between field and word: copy every byte */
	x->word = palloc(len + 1);
	memcpy(x->word, s, len);
	x->word[len] = '\0';
	x->len = len;
	x->tf = 1;
	x->next = w->bucket[b];
	w->bucket[b] = x;
	if (w->n == w->cap)
	{
		w->cap = w->cap ? 2 * w->cap : 64;
		w->order = w->order ? repalloc(w->order, sizeof(Word *) * w->cap) :
			palloc(sizeof(Word *) * w->cap);
	}
	w->order[w->n++] = x;
}

typedef struct MltCtx
{
	SeMlt	   *m;
	SeSearchShard *shard;
	int			nfields;
	const SeMappedField **fields;
	Words		skip;			/* unlike words, as "field\0word" */
	const SeMltItem *item;		/* the document being analyzed, or NULL */
	SeError    *err;
} MltCtx;

static int
utf8_chars(const char *s, int len)
{
	int			n = 0;
	int			i;

	for (i = 0; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

static bool
noise_word(const SeMlt *m, const char *s, int len)
{
	int			n = utf8_chars(s, len);
	int			i;

	if (m->min_word_length > 0 && n < m->min_word_length)
		return true;
	if (m->max_word_length > 0 && n > m->max_word_length)
		return true;
	for (i = 0; i < m->nstop_words; i++)
		if ((int) strlen(m->stop_words[i]) == len && memcmp(m->stop_words[i], s, len) == 0)
			return true;
	return false;
}

static char *
skip_key(const char *field, const char *s, int len, int *klen)
{
	int			flen = strlen(field);
	char	   *k = palloc(flen + 1 + len);

	memcpy(k, field, flen + 1);
	memcpy(k + flen + 1, s, len);
	*klen = flen + 1 + len;
	return k;
}

/*
 * Texts take "analyzer" when it names one (ES falls back to the field's
 * otherwise), else, as documents, the field's index analyzer (ES's
 * MoreLikeThisQueryBuilder); keyword values stay whole.
 */
static const SeAnalyzer *
field_analyzer(MltCtx *c, const SeMappedField *f, bool for_text)
{
	const SeAnalyzer *a;

	if (for_text && c->m->analyzer != NULL &&
		(a = se_analyzer_lookup(c->m->analyzer)) != NULL)
		return a;
	/* a document's own per_field_analyzer (ES's term vectors request) */
	if (!for_text && c->item != NULL && c->item->per_field_analyzer != NULL)
	{
		const SeJson *n = se_json_get(c->item->per_field_analyzer, f->path);

		if (n != NULL && n->type == SE_JSON_STRING &&
			(a = se_analyzer_lookup(n->u.s.str)) != NULL)
			return a;
	}
	if (f->type == SE_FT_KEYWORD)
		return se_analyzer_lookup("keyword");
	if (f->analyzer != NULL)
		return f->analyzer;
	return se_analyzer_lookup("standard");
}

/* Analyze text for field f; each token not noise nor skipped counts in into (or in skip). */
static void
add_text(MltCtx *c, const SeMappedField *f, const char *text, int len, bool for_text,
		 Words *into)
{
	const SeAnalyzer *a = field_analyzer(c, f, for_text);
	SeTokenList tl;
	int			i;

	if (a == NULL)
		return;
	se_token_list_init(&tl);
	se_analyze(a, text, len, &tl);
	for (i = 0; i < tl.ntokens; i++)
	{
		const SeToken *t = &tl.tokens[i];
		int			klen;
		char	   *k;

		SE_SEARCH_TICK(1);
		if (f->type == SE_FT_KEYWORD && f->ignore_above > 0 &&
			utf8_chars(t->term, t->len) > f->ignore_above)
			continue;
		k = skip_key(f->path, t->term, t->len, &klen);
		if (into == NULL)
		{
			words_add(&c->skip, k, klen);
			continue;
		}
		if (noise_word(c->m, t->term, t->len) || words_find(&c->skip, k, klen) != NULL)
			continue;
		words_add(into, t->term, t->len);
	}
	se_token_list_free(&tl);
}

/* The values of path in a JSON document (arrays flattened, objects descended). */
static void
add_doc_values(MltCtx *c, const SeMappedField *f, const SeJson *v, const char *path,
			   Words *into)
{
	int			i;

	if (v == NULL)
		return;
	if (v->type == SE_JSON_ARRAY)
	{
		for (i = 0; i < v->u.a.count; i++)
			add_doc_values(c, f, v->u.a.items[i], path, into);
		return;
	}
	if (*path == '\0')
	{
		if (v->type == SE_JSON_STRING)
			add_text(c, f, v->u.s.str, v->u.s.len, false, into);
		else if (v->type == SE_JSON_NUMBER)
			add_text(c, f, v->u.n.text, v->u.n.len, false, into);
		return;
	}
	if (v->type != SE_JSON_OBJECT)
		return;
	/* "a.b.c": the key "a.b.c", "a.b" then "c", "a" then "b.c" */
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		int			kl = strlen(k);

		if (strncmp(path, k, kl) == 0 && (path[kl] == '\0' || path[kl] == '.'))
			add_doc_values(c, f, v->u.o.members[i].value,
						   path[kl] == '\0' ? path + kl : path + kl + 1, into);
	}
}

static void
add_doc(MltCtx *c, const SeMltItem *it, Words *into)
{
	int			i;

	c->item = it;
	for (i = 0; i < c->nfields; i++)
	{
		const SeMappedField *f = c->fields[i];
		char	   *path = pstrdup(f->path);
		bool		wanted = it->fields == NULL;
		int			j;

		/* an item's "fields" narrows the query's to those it names */
		for (j = 0; !wanted && j < it->fields->u.a.count; j++)
			wanted = it->fields->u.a.items[j]->type == SE_JSON_STRING &&
				strcmp(it->fields->u.a.items[j]->u.s.str, f->path) == 0;
		if (!wanted)
			continue;

		/* a multi-field takes its parent's values */
		if (f->is_multi_field && strrchr(path, '.') != NULL)
			*strrchr(path, '.') = '\0';
		add_doc_values(c, f, it->doc, path, into);
	}
	c->item = NULL;
}

typedef struct ScoreTerm
{
	Word	   *w;
	const char *field;
	float		score;
} ScoreTerm;

/* the shard's doc frequency of term in field (deleted docs included) */
static int64
doc_freq(MltCtx *c, const char *field, const char *term, int len)
{
	SeSearchShard *sh = c->shard;
	int64		df = 0;
	int			s;

	for (s = 0; s < sh->nsegments; s++)
	{
		int			f = se_segment_field(sh->segments[s], field);
		SeTermInfo	ti;

		SE_SEARCH_TICK(1);
		if (f >= 0 && se_segment_seek_exact(sh->segments[s], f, term, len, &ti))
			df += ti.doc_freq;
	}
	return df;
}

static int
score_term_cmp(const void *a, const void *b)
{
	const ScoreTerm *x = a;
	const ScoreTerm *y = b;

	return x->score < y->score ? -1 : x->score > y->score ? 1 : 0;
}

/*
 * XMoreLikeThis.createQueue + createQuery: the bool of the best words
 * (NULL when none is left).
 */
static SeQuery *
words_query(MltCtx *c, Words *words)
{
	SeMlt	   *m = c->m;
	SeSearchShard *sh = c->shard;
	int64		num_docs = 0;
	int			limit = Min(m->max_query_terms, words->n);
	ScoreTerm  *queue = palloc(sizeof(ScoreTerm) * Max(1, limit));
	int			nq = 0;
	SeQuery    *bq;
	float		best = -1;
	int			i,
				j,
				s;

	for (s = 0; s < sh->nsegments; s++)
	{
		const uint64 *live = sh->live_docs ? sh->live_docs[s] : NULL;
		uint32		max_doc = se_segment_max_doc(sh->segments[s]);

		num_docs += live ? se_livedocs_count(live, max_doc) : max_doc;
	}
	for (i = 0; i < words->n; i++)
	{
		Word	   *w = words->order[i];
		const char *top = c->fields[0]->path;
		int64		df = 0;
		float		idf,
					score;

		if (m->min_term_freq > 0 && w->tf < m->min_term_freq)
			continue;
		for (j = 0; j < c->nfields; j++)
		{
			int64		f = doc_freq(c, c->fields[j]->path, w->word, w->len);

			if (f > df)
			{
				df = f;
				top = c->fields[j]->path;
			}
		}
		if ((m->min_doc_freq > 0 && df < m->min_doc_freq) || df > m->max_doc_freq || df == 0)
			continue;
		idf = (float) (log((double) (num_docs + 1) / (double) (df + 1)) + 1.0);
		score = (float) w->tf * idf;
		/* a bounded queue, lowest first; ties keep the earlier word */
		if (nq < limit)
		{
			queue[nq].w = w;
			queue[nq].field = top;
			queue[nq].score = score;
			nq++;
		}
		else
		{
			int			low = 0;

			for (j = 1; j < nq; j++)
				if (queue[j].score < queue[low].score)
					low = j;
			if (queue[low].score < score)
			{
				queue[low].w = w;
				queue[low].field = top;
				queue[low].score = score;
			}
		}
	}
	if (nq == 0)
		return NULL;
	qsort(queue, nq, sizeof(ScoreTerm), score_term_cmp);
	bq = se_query_new(SE_Q_BOOL);
	bq->nshould = nq;
	bq->should = palloc(sizeof(SeQuery *) * nq);
	for (i = 0; i < nq; i++)
	{
		SeQuery    *t = se_query_new(SE_Q_TERM);

		t->field = pstrdup(queue[i].field);
		t->value = se_json_make_string(queue[i].w->word, queue[i].w->len);
		/* Lucene pops the lowest score first and boosts relative to it */
		if (m->boost_terms != 0)
		{
			if (best == -1)
				best = queue[i].score;
			t->boost = m->boost_terms * queue[i].score / best;
		}
		bq->should[i] = t;
	}
	bq->msm = m->msm;
	return bq;
}

/*
 * q bound to shard: the bool of term queries (and exclusion) the existing
 * weights build; NULL with err set on failure.
 */
SeQuery *
se_mlt_rewrite(const SeQuery *q, SeSearchShard *shard, SeError *err)
{
	SeMlt	   *m = q->mlt;
	MltCtx		c;
	SeQuery    *top;
	SeQuery    *sub[2];
	int			nsub = 0;
	int			i;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.shard = shard;
	c.err = err;
	words_init(&c.skip);
	c.fields = palloc(sizeof(SeMappedField *) * Max(1, shard->mapping ? shard->mapping->nfields : 1));
	if (m->nfields == 0 && shard->mapping != NULL)
	{
		/* index.query.default_field "*": the text and keyword fields */
		for (i = 0; i < shard->mapping->nfields; i++)
		{
			const SeMappedField *f = shard->mapping->fields[i];

			if ((f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD) && f->index)
				c.fields[c.nfields++] = f;
		}
	}
	for (i = 0; i < m->nfields; i++)
	{
		const SeMappedField *f = shard->mapping ? se_mapping_find(shard->mapping, m->fields[i]) : NULL;

		if (f == NULL)
			continue;			/* unmapped fields are left out */
		if (f->type != SE_FT_TEXT && f->type != SE_FT_KEYWORD)
		{
			if (!m->fail_on_unsupported_field)
				continue;
			se_error_set(err, 400, "illegal_argument_exception",
						 "more_like_this only supports text/keyword fields: [%s]", f->path);
			return NULL;
		}
		c.fields = repalloc(c.fields, sizeof(SeMappedField *) * (c.nfields + 1));
		c.fields[c.nfields++] = f;
	}
	if (c.nfields == 0)
		return se_query_new(SE_Q_MATCH_NONE);

	/* unlike: texts for every field, documents' values per field */
	for (i = 0; i < m->nunlike_texts; i++)
	{
		int			j;

		for (j = 0; j < c.nfields; j++)
			add_text(&c, c.fields[j], m->unlike_texts[i], strlen(m->unlike_texts[i]), true, NULL);
	}
	for (i = 0; i < m->nunlike_items; i++)
		if (m->unlike_items[i].doc != NULL)
			add_doc(&c, &m->unlike_items[i], NULL);

	/* the documents' query, then the texts' (analyzed as the first field) */
	if (m->nlike_items > 0)
	{
		Words		w;

		words_init(&w);
		for (i = 0; i < m->nlike_items; i++)
			if (m->like_items[i].doc != NULL)
				add_doc(&c, &m->like_items[i], &w);
		if ((sub[nsub] = words_query(&c, &w)) != NULL)
			nsub++;
	}
	if (m->nlike_texts > 0)
	{
		Words		w;

		words_init(&w);
		for (i = 0; i < m->nlike_texts; i++)
			add_text(&c, c.fields[0], m->like_texts[i], strlen(m->like_texts[i]), true, &w);
		if ((sub[nsub] = words_query(&c, &w)) != NULL)
			nsub++;
	}
	if (se_error_is_set(err))
		return NULL;
	if (nsub == 0)
		return se_query_new(SE_Q_MATCH_NONE);
	top = se_query_new(SE_Q_BOOL);
	top->boost = q->boost;
	top->nshould = nsub;
	top->should = palloc(sizeof(SeQuery *) * nsub);
	memcpy(top->should, sub, sizeof(SeQuery *) * nsub);
	if (!m->include)
	{
		SeQuery    *ids = se_query_new(SE_Q_IDS);

		ids->values = palloc(sizeof(SeJson *) * Max(1, m->nlike_items));
		for (i = 0; i < m->nlike_items; i++)
			if (m->like_items[i].id != NULL)
				ids->values[ids->nvalues++] = se_json_make_string(m->like_items[i].id, -1);
		if (ids->nvalues > 0)
		{
			top->nmust_not = 1;
			top->must_not = palloc(sizeof(SeQuery *));
			top->must_not[0] = ids;
		}
	}
	return top;
}
