/*-------------------------------------------------------------------------
 *
 * script_score.c
 *	  The script_score query and function_score's script_score function:
 *	  a Painless score script (src/script) run per candidate document.
 *
 * Both parse into a function_score with one SE_FN_SCRIPT function (the
 * query: boost_mode replace, so the script's value is the score and
 * _score the inner query's), and share function_score's scorer, min_score
 * and boost.  The script is compiled once per shard (se_script_bind),
 * where the fields it reads with doc['f'] are resolved against the
 * mapping: a field that cannot be read (unmapped, text without fielddata,
 * doc_values: false) fails only when a document's run reads it, as ES's
 * LeafDocLookup does.  Per segment (se_script_leaf_open) the fields get
 * their segment numbers and the runs a memory context reset after each
 * document.  A runtime error, or a negative or NaN score (ES refuses
 * them), leaves the query phase through se_search_fail.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>

#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

#include "script/script.h"
#include "search/search_int.h"

bool		(*se_search_script_lang_hook) (const char *lang, SeError *err) = NULL;

/* A field a script reads, as the shard's mapping has it. */
typedef struct ScriptField
{
	const SeMappedField *f;		/* NULL: not readable (error below) */
	SeError		error;			/* why it cannot be read */
} ScriptField;

struct SeScriptBinding
{
	SeScript   *script;
	bool		query;			/* the script_score query */
	int			nfields;
	ScriptField *fields;
};

/* Per segment: field numbers and a cache of each field's current doc. */
typedef struct LeafField
{
	int			fid;			/* in the segment, -1: absent */
	int32		doc;			/* whose values are cached, -1 none */
	int			count;
	int64	   *vals;			/* numeric values, copied */
	int			cap;
} LeafField;

struct SeScriptLeaf
{
	SeScriptBinding *b;
	SeSegmentReader *reader;
	int32		doc;
	LeafField  *fields;
	SeScriptDocReader reader_cb;
#ifndef SE_FRONTEND
	MemoryContext cxt;			/* one run's memory, reset per doc */
#endif
};

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */

/* "script": "source" | {"source"|"inline", "params", "lang"}; false with err */
static bool
parse_script(const char *ctx, const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	const char *lang = "painless";
	int			i;

	if (v->type == SE_JSON_STRING)
	{
		fn->script = pstrdup(v->u.s.str);
		return se_search_script_lang_hook == NULL || se_search_script_lang_hook(lang, err);
	}
	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[%s] failed to parse field [script]", ctx);
		return false;
	}
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;
		const SeJson *x = v->u.o.members[i].value;

		if ((strcmp(k, "source") == 0 || strcmp(k, "inline") == 0) && x->type == SE_JSON_STRING)
			fn->script = pstrdup(x->u.s.str);
		else if (strcmp(k, "params") == 0 && x->type == SE_JSON_OBJECT)
			fn->script_params = x;
		else if (strcmp(k, "lang") == 0 && x->type == SE_JSON_STRING)
			lang = x->u.s.str;
		else if (strcmp(k, "id") == 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "stored scripts are not supported: give the script's [source]");
			return false;
		}
		else if (strcmp(k, "options") == 0)
			 /* accepted, as ES ignores them for painless */ ;
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[script] unknown field [%s]", k);
			return false;
		}
	}
	if (fn->script == NULL)
	{
		se_error_set(err, 400, "parsing_exception",
					 "must specify either [source] for an inline script or [id] for a stored script");
		return false;
	}
	if (strcmp(lang, "painless") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "script_lang not supported [%s]", lang);
		return false;
	}
	return se_search_script_lang_hook == NULL || se_search_script_lang_hook(lang, err);
}

/* Compile to report syntax errors at parse time, as ES does. */
static bool
check_compiles(const SeScoreFunction *fn, SeError *err)
{
	SeScript   *s = se_script_compile_score(fn->script, fn->script_params, err);

	return s != NULL;
}

bool
se_script_score_fn_parse(const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception", "[%s] must be an object", "script_score");
		return false;
	}
	fn->kind = SE_FN_SCRIPT;
	for (i = 0; i < v->u.o.count; i++)
	{
		const char *k = v->u.o.members[i].key;

		if (strcmp(k, "script") == 0)
		{
			if (!parse_script("script_score", v->u.o.members[i].value, fn, err))
				return false;
		}
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "script_score query does not support [%s]", k);
			return false;
		}
	}
	if (fn->script == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "script_score function requires a [script]");
		return false;
	}
	return check_compiles(fn, err);
}

/* {"script_score": {"query", "script", "min_score", "boost", "_name"}} */
SeQuery *
se_script_score_parse(const SeJson *body, int depth, SeError *err)
{
	SeQuery    *q;
	SeScoreFunction *fn;
	int			i;

	if (body->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] query malformed, no start_object after query name", "script_score");
		return NULL;
	}
	q = se_query_new(SE_Q_FUNCTION_SCORE);
	q->score_mode = SE_COMB_MULTIPLY;
	q->boost_mode = SE_COMB_REPLACE;
	q->max_boost = FLT_MAX;
	fn = palloc0(sizeof(SeScoreFunction));
	fn->kind = SE_FN_SCRIPT;
	fn->weight = 1.0f;
	fn->script_query = true;
	q->functions = fn;
	q->nfunctions = 1;
	for (i = 0; i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;
		const SeJson *v = body->u.o.members[i].value;

		if (strcmp(k, "query") == 0)
		{
			if ((q->inner = se_query_parse(v, depth + 1, err)) == NULL)
				return NULL;
		}
		else if (strcmp(k, "script") == 0)
		{
			if (!parse_script("script_score", v, fn, err))
				return NULL;
		}
		else if (strcmp(k, "min_score") == 0 && v->type == SE_JSON_NUMBER)
		{
			q->has_min_score = true;
			q->min_score = (float) (v->u.n.is_int ? (double) v->u.n.i : v->u.n.d);
		}
		else if (strcmp(k, "boost") == 0 && v->type == SE_JSON_NUMBER)
			q->boost = (float) (v->u.n.is_int ? (double) v->u.n.i : v->u.n.d);
		else if (strcmp(k, "_name") == 0)
			 /* accepted */ ;
		else
		{
			se_error_set(err, 400, "parsing_exception",
						 "[script_score] query does not support [%s]", k);
			return NULL;
		}
	}
	if (q->inner == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "[script_score] requires 'query' field");
		return NULL;
	}
	if (fn->script == NULL)
	{
		se_error_set(err, 400, "parsing_exception", "[script_score] requires 'script' field");
		return NULL;
	}
	if (!check_compiles(fn, err))
		return NULL;
	return q;
}

/* ---------------------------------------------------------------------
 * Binding to a shard and running per document
 * ---------------------------------------------------------------------
 */
SeScriptBinding *
se_script_bind(const SeScoreFunction *fq, const SeSearchShard *shard, SeError *err)
{
	SeScriptBinding *b = palloc0(sizeof(SeScriptBinding));
	const char *const *names;
	int			i;

	b->script = se_script_compile_score(fq->script, fq->script_params, err);
	if (b->script == NULL)
		return NULL;
	b->query = fq->script_query;
	names = se_script_doc_fields(b->script, &b->nfields);
	b->fields = palloc0(sizeof(ScriptField) * Max(1, b->nfields));
	for (i = 0; i < b->nfields; i++)
	{
		ScriptField *sf = &b->fields[i];
		const SeMappedField *f = shard->mapping ? se_mapping_find(shard->mapping, names[i]) : NULL;

		se_error_init(&sf->error);
		if (f == NULL || f->type == SE_FT_OBJECT)
			se_error_set(&sf->error, 400, "illegal_argument_exception",
						 "No field found for [%s] in mapping", names[i]);
		else if (se_search_check_doc_values(f, shard->index, &sf->error))
			sf->f = f;
	}
	return b;
}

const char *
se_script_binding_source(const SeScriptBinding *b)
{
	return se_script_source(b->script);
}

/* The script_score query's binding (not a function_score function's)? */
bool
se_script_binding_is_query(const SeScriptBinding *b)
{
	return b->query;
}

/* Load field's values of the leaf's current doc into its cache. */
static int
leaf_count(void *arg, int field, SeError *err)
{
	SeScriptLeaf *l = (SeScriptLeaf *) arg;
	ScriptField *sf = &l->b->fields[field];
	LeafField  *lf = &l->fields[field];

	if (sf->f == NULL)
	{
		err->status = sf->error.status;
		err->type = sf->error.type;
		err->reason = sf->error.reason;
		return -1;
	}
	if (lf->doc == l->doc)
		return lf->count;
	lf->doc = l->doc;
	lf->count = 0;
	if (lf->fid < 0)
		return 0;
	if (sf->f->type == SE_FT_KEYWORD)
		lf->count = se_segment_sorted_count(l->reader, lf->fid, l->doc);
	else
	{
		const int64 *vals;
		int			n = se_segment_numeric_values(l->reader, lf->fid, l->doc, &vals);

		/* the reader's buffer lasts until its next call: keep a copy */
		if (n > lf->cap)
		{
			lf->cap = Max(n, 4);
			lf->vals = lf->vals ? repalloc(lf->vals, sizeof(int64) * lf->cap)
				: palloc(sizeof(int64) * lf->cap);
		}
		if (n > 0)
			memcpy(lf->vals, vals, sizeof(int64) * n);
		lf->count = n;
	}
	return lf->count;
}

static void
leaf_value(void *arg, int field, int i, SeScriptDocValue *out)
{
	SeScriptLeaf *l = (SeScriptLeaf *) arg;
	const SeMappedField *f = l->b->fields[field].f;
	LeafField  *lf = &l->fields[field];

	switch (f->type)
	{
		case SE_FT_KEYWORD:
			out->kind = SE_SDOC_STRING;
			out->s = se_segment_sorted_value(l->reader, lf->fid, l->doc, i, &out->len);
			break;
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
			out->kind = SE_SDOC_DOUBLE;
			out->d = se_sortable_to_double(lf->vals[i]);
			break;
		case SE_FT_BOOLEAN:
			out->kind = SE_SDOC_BOOLEAN;
			out->l = lf->vals[i] != 0;
			break;
		case SE_FT_DATE:
			out->kind = SE_SDOC_DATE;
			out->l = lf->vals[i];
			break;
		default:
			out->kind = SE_SDOC_LONG;
			out->l = lf->vals[i];
			break;
	}
}

SeScriptLeaf *
se_script_leaf_open(SeScriptBinding *b, SeSegmentReader *r)
{
	SeScriptLeaf *l = palloc0(sizeof(SeScriptLeaf));
	int			i;

	l->b = b;
	l->reader = r;
	l->doc = -1;
	l->fields = palloc0(sizeof(LeafField) * Max(1, b->nfields));
	for (i = 0; i < b->nfields; i++)
	{
		l->fields[i].fid = b->fields[i].f ? se_segment_field(r, b->fields[i].f->path) : -1;
		l->fields[i].doc = -1;
	}
	l->reader_cb.arg = l;
	l->reader_cb.count = leaf_count;
	l->reader_cb.value = leaf_value;
#ifndef SE_FRONTEND
	l->cxt = AllocSetContextCreate(CurrentMemoryContext, "script score",
								   ALLOCSET_SMALL_SIZES);
#endif
	return l;
}

/*
 * The script's score of doc, whose query scored qscore.  Errors leave
 * through se_search_fail; with no landing point (explain) the score is 0.
 */
float
se_script_leaf_score(SeScriptLeaf *l, int32 doc, float qscore)
{
	SeScriptCtx ctx;
	SeError		e;
	double		v;
	bool		ok;
#ifndef SE_FRONTEND
	MemoryContext old;
#endif

	l->doc = doc;
	se_script_ctx_init(&ctx, NULL);
	ctx.doc = &l->reader_cb;
	ctx.score = qscore;
	se_error_init(&e);
#ifndef SE_FRONTEND
	old = MemoryContextSwitchTo(l->cxt);
#endif
	ok = se_script_run_score(l->b->script, &ctx, &v, &e);
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	/* a run may do up to a million statements: count it as work */
	SE_SEARCH_TICK(16);
	if (ok && (v < 0 || isnan(v)))
	{
		char		num[64];

		if (l->b->query)
		{
			se_script_java_double(num, v, true);
			se_error_set(&e, 400, "illegal_argument_exception",
						 "script_score script returned an invalid score [%s] for doc [%d]. Must be a non-negative score!",
						 num, doc);
		}
		else
		{
			se_script_java_double(num, v, false);
			se_error_set(&e, 400, "illegal_argument_exception",
						 "script score function must not produce negative scores, but got: [%s]",
						 num);
		}
		ok = false;
	}
	else if (!ok)
		e.reason = pstrdup(e.reason);	/* out of the run's memory */
#ifndef SE_FRONTEND
	MemoryContextReset(l->cxt);
#endif
	if (!ok)
	{
		se_search_fail(&e);
		return 0.0f;
	}
	return (float) v;
}
