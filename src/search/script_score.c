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
 * them), leaves the query phase through se_search_fail.  doc[expr], a
 * name computed at run time, is resolved the same way on its first read
 * and kept in the binding.  script_fields run these scripts at fetch,
 * whatever value they return (se_script_field_values).
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
const char *(*se_search_stored_script_hook) (const char *id, SeError *err) = NULL;

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
	char	  **names;			/* of fields, for computed doc[...] names */
	const SeMapping *mapping;
	const char *index;
#ifndef SE_FRONTEND
	MemoryContext cxt;			/* where fields named at run time go */
#endif
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
	int			nfields;		/* of fields: the binding's may grow later */
	SeScriptDocReader reader_cb;
#ifndef SE_FRONTEND
	MemoryContext cxt;			/* one run's memory, reset per doc */
	MemoryContext home;			/* where fields named at run time go */
#endif
};

/* ---------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------
 */

/*
 * "script": "source" | {"source"|"inline"|"id", "params", "lang"}; false
 * with err.  An id names a stored script, whose source is read here.
 */
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
		else if (strcmp(k, "id") == 0 && x->type == SE_JSON_STRING)
		{
			/* a stored script (always painless): its source from the state */
			const char *src = se_search_stored_script_hook ?
				se_search_stored_script_hook(x->u.s.str, err) : NULL;

			if (src == NULL)
			{
				if (!se_error_is_set(err))
					se_error_set(err, 400, "illegal_argument_exception",
								 "stored scripts are not available here");
				return false;
			}
			fn->script = pstrdup(src);
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
se_script_spec_parse(const char *ctx, const SeJson *v, SeScoreFunction *fn, SeError *err)
{
	return parse_script(ctx, v, fn, err) && check_compiles(fn, err);
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
/* Resolve field name against the binding's mapping into sf. */
static void
resolve_field(const SeScriptBinding *b, const char *name, ScriptField *sf)
{
	const SeMappedField *f = b->mapping ? se_mapping_find(b->mapping, name) : NULL;

	se_error_init(&sf->error);
	sf->f = NULL;
	if (f == NULL || f->type == SE_FT_OBJECT)
		se_error_set(&sf->error, 400, "illegal_argument_exception",
					 "No field found for [%s] in mapping", name);
	else if (f->type == SE_FT_GEO_POINT)
		/* its doc values are encoded points: no GeoPoint script values yet */
		se_error_set(&sf->error, 400, "illegal_argument_exception",
					 "geo_point field [%s] is not supported in scripts", name);
	else if (se_search_check_doc_values(f, b->index, &sf->error))
		sf->f = f;
}

static SeScriptBinding *
bind_script(SeScript *script, const SeMapping *mapping, const char *index)
{
	SeScriptBinding *b = palloc0(sizeof(SeScriptBinding));
	const char *const *names;
	int			i;

	b->script = script;
	b->mapping = mapping;
	b->index = index;
#ifndef SE_FRONTEND
	b->cxt = CurrentMemoryContext;
#endif
	names = se_script_doc_fields(b->script, &b->nfields);
	b->fields = palloc0(sizeof(ScriptField) * Max(1, b->nfields));
	b->names = palloc0(sizeof(char *) * Max(1, b->nfields));
	for (i = 0; i < b->nfields; i++)
	{
		b->names[i] = pstrdup(names[i]);
		resolve_field(b, names[i], &b->fields[i]);
	}
	return b;
}

SeScriptBinding *
se_script_bind(const SeScoreFunction *fq, const SeSearchShard *shard, SeError *err)
{
	SeScript   *script = se_script_compile_score(fq->script, fq->script_params, err);
	SeScriptBinding *b;

	if (script == NULL)
		return NULL;
	b = bind_script(script, shard->mapping, shard->index);
	b->query = fq->script_query;
	return b;
}

const char *
se_script_binding_source(const SeScriptBinding *b)
{
	return se_script_source(b->script);
}

/* Make the leaf's fields as many as the binding's (grown by lookups). */
static void
leaf_grow(SeScriptLeaf *l)
{
	int			i;
#ifndef SE_FRONTEND
	MemoryContext old = MemoryContextSwitchTo(l->home);
#endif

	l->fields = repalloc(l->fields, sizeof(LeafField) * Max(1, l->b->nfields));
	for (i = l->nfields; i < l->b->nfields; i++)
	{
		memset(&l->fields[i], 0, sizeof(LeafField));
		l->fields[i].fid = l->b->fields[i].f ?
			se_segment_field(l->reader, l->b->fields[i].f->path) : -1;
		l->fields[i].doc = -1;
	}
	l->nfields = l->b->nfields;
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
}

/*
 * doc[name] with a name computed at run time: its field number, a new one
 * resolved against the mapping (kept for the binding's later runs) when
 * the script has not read it before.
 */
static int
leaf_lookup(void *arg, const char *name, int len, SeError *err)
{
	SeScriptLeaf *l = (SeScriptLeaf *) arg;
	SeScriptBinding *b = l->b;
	int			i;

	for (i = 0; i < b->nfields; i++)
		if (strncmp(b->names[i], name, len) == 0 && b->names[i][len] == '\0')
			break;
	if (i == b->nfields)
	{
#ifndef SE_FRONTEND
		MemoryContext old = MemoryContextSwitchTo(b->cxt);
#endif

		b->fields = repalloc(b->fields, sizeof(ScriptField) * (b->nfields + 1));
		b->names = repalloc(b->names, sizeof(char *) * (b->nfields + 1));
		b->names[i] = pnstrdup(name, len);
		resolve_field(b, b->names[i], &b->fields[i]);
		b->nfields++;
#ifndef SE_FRONTEND
		MemoryContextSwitchTo(old);
#endif
	}
	if (l->nfields < b->nfields)
		leaf_grow(l);
	return i;
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
	l->nfields = b->nfields;
	l->reader_cb.arg = l;
	l->reader_cb.count = leaf_count;
	l->reader_cb.value = leaf_value;
	l->reader_cb.lookup = leaf_lookup;
#ifndef SE_FRONTEND
	l->home = CurrentMemoryContext;
	l->cxt = AllocSetContextCreate(CurrentMemoryContext, "script score",
								   ALLOCSET_SMALL_SIZES);
#endif
	return l;
}

/* Run the leaf's script on doc: false with e set (outside the run's memory). */
static bool
leaf_run(SeScriptLeaf *l, int32 doc, float qscore, double *v, SeError *e)
{
	SeScriptCtx ctx;
	bool		ok;
#ifndef SE_FRONTEND
	MemoryContext old;
#endif

	l->doc = doc;
	se_script_ctx_init(&ctx, NULL);
	ctx.doc = &l->reader_cb;
	ctx.score = qscore;
	se_error_init(e);
#ifndef SE_FRONTEND
	old = MemoryContextSwitchTo(l->cxt);
#endif
	ok = se_script_run_score(l->b->script, &ctx, v, e);
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	/* a run may do up to a million statements: count it as work */
	SE_SEARCH_TICK(16);
	if (!ok)
		e->reason = pstrdup(e->reason); /* out of the run's memory */
#ifndef SE_FRONTEND
	MemoryContextReset(l->cxt);
#endif
	return ok;
}

/*
 * The script's score of doc, whose query scored qscore.  Errors leave
 * through se_search_fail; with no landing point (explain) the score is 0.
 */
float
se_script_leaf_score(SeScriptLeaf *l, int32 doc, float qscore)
{
	SeError		e;
	double		v;
	bool		ok = leaf_run(l, doc, qscore, &v, &e);

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
	if (!ok)
	{
		se_search_fail(&e);
		return 0.0f;
	}
	return (float) v;
}

/* As Number.longValue() of the script's result (ES's terms_set script). */
bool
se_script_leaf_number(SeScriptLeaf *l, int32 doc, int64 *out)
{
	SeError		e;
	double		v;

	if (!leaf_run(l, doc, 0.0f, &v, &e))
	{
		se_search_fail(&e);
		return false;
	}
	if (isnan(v))
		*out = 0;
	else if (v >= (double) PG_INT64_MAX)
		*out = PG_INT64_MAX;
	else if (v <= (double) PG_INT64_MIN)
		*out = PG_INT64_MIN;
	else
		*out = (int64) v;
	return true;
}

/* params (an object or NULL) with key: value added, without copying params */
static SeJson *
params_plus(const SeJson *params, const char *key, SeJson *value)
{
	int			n = params ? params->u.o.count : 0;
	SeJson	   *p = palloc0(sizeof(SeJson));

	p->type = SE_JSON_OBJECT;
	p->u.o.members = palloc(sizeof(SeJsonMember) * (n + 1));
	if (n > 0)
		memcpy(p->u.o.members, params->u.o.members, sizeof(SeJsonMember) * n);
	p->u.o.members[n].key = key;
	p->u.o.members[n].keylen = strlen(key);
	p->u.o.members[n].value = value;
	p->u.o.count = n + 1;
	return p;
}

/* The script with its params and num_terms, bound to the shard. */
SeScriptBinding *
se_script_bind_msm(const SeQuery *q, int nterms, const SeSearchShard *shard, SeError *err)
{
	SeJson	   *params = params_plus(q->msm_script_params, "num_terms",
										 se_json_make_number_int(nterms));
	SeScript   *script;

	if ((script = se_script_compile_score(q->msm_script, params, err)) == NULL)
		return NULL;
	return bind_script(script, shard->mapping, shard->index);
}

/* ---------------------------------------------------------------------
 * script_fields
 * ---------------------------------------------------------------------
 */

/* params with "_source" (doc's, parsed) added, as ES's field scripts see it */
static const SeJson *
params_with_source(const SeJson *params, SeSegmentReader *r, int32 doc, SeError *err)
{
	StringInfoData raw;
	SeJson	   *src;

	initStringInfo(&raw);
	if (!se_segment_source(r, doc, &raw))
	{
		se_error_set(err, 500, "index_corrupted_exception", "%s", se_segment_error(r)->reason);
		return NULL;
	}
	if ((src = se_json_parse(raw.data, raw.len, NULL, err)) == NULL)
		return NULL;
	return params_plus(params, "_source", src);
}

/*
 * Compiled and bound per hit: a fetch has few hits, and params._source
 * (read only when the script names it) differs per hit anyway.  A
 * failure's reason is copied out of the run's memory.
 */
bool
se_script_field_values(const SeScoreFunction *fn, const SeMapping *m, const char *index,
					   SeSegmentReader *r, int32 doc, StringInfo out, SeError *err)
{
	const SeJson *params = fn->script_params;
	SeScript   *script = NULL;
	StringInfoData vals;
	bool		ok = false;
#ifndef SE_FRONTEND
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "script field",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
#endif

	initStringInfo(&vals);
	if (strstr(fn->script, "_source") != NULL)
		params = params_with_source(params, r, doc, err);
	if (!se_error_is_set(err))
		script = se_script_compile_score(fn->script, params, err);
	if (script != NULL)
	{
		SeScriptBinding *b = bind_script(script, m, index);
		SeScriptLeaf *l = se_script_leaf_open(b, r);
		SeScriptCtx ctx;

		l->doc = doc;
		se_script_ctx_init(&ctx, NULL);
		ctx.doc = &l->reader_cb;
		ok = se_script_run_values(script, &ctx, &vals, err);
	}
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
	if (ok)
		appendBinaryStringInfo(out, vals.data, vals.len);
	else
	{
		err->reason = pstrdup(err->reason);
		err->type = pstrdup(err->type);
	}
#ifndef SE_FRONTEND
	MemoryContextDelete(cxt);
#endif
	return ok;
}
