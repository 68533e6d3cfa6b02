/*-------------------------------------------------------------------------
 *
 * foreign_scan.c
 *	  Executing a foreign scan: runtime values, the DSL request, the rows.
 *
 * A (re)scan evaluates fdw_exprs, generates the request body
 *
 *     {"query": .., "sort": [..], "_source": [..], "from": n, "size": n}
 *
 * parses it with the engine's own parser, runs it over fresh snapshots of
 * the index's shards and converts every hit into a row of the columns the
 * query needs, stored in a tuplestore:
 *
 *   scan     se_search_scan over every shard: matching live documents,
 *            unscored; _source read and parsed only when a field column
 *            (or _source) is needed;
 *   search   se_search_run: scored, sorted; top-k when LIMIT was pushed
 *            (from/size), else every hit (size = the exact count, taken
 *            first), for ORDER BY without LIMIT or a _score column;
 *   agg      aggregate.c.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "fdw/fdw_int.h"

enum
{
	SP_RELID,
	SP_KIND,
	SP_QUALS,
	SP_SORTKEYS,
	SP_HAS_LIMIT,
	SP_LIMIT_IDX,
	SP_OFFSET_IDX,
	SP_ATTRS,
	SP_FOR_MODIFY,
	SP_AGGS
};

List *
se_fdw_scan_plan_to_list(SeFdwScanPlan *p)
{
	List	   *keys = NIL;
	List	   *l;
	ListCell   *lc;

	foreach(lc, p->sortkeys)
	{
		SeSortKey  *k = lfirst(lc);

		keys = lappend(keys, list_make3_int(k->attno, k->desc, k->nulls_first));
	}
	l = list_make5(makeInteger((int) p->relid), makeInteger(p->kind), p->quals, keys,
				   makeInteger(p->has_limit));
	l = lappend(l, makeInteger(p->limit_idx));
	l = lappend(l, makeInteger(p->offset_idx));
	l = lappend(l, p->attrs);
	l = lappend(l, makeInteger(p->for_modify));
	l = lappend(l, p->aggs);
	return l;
}

void
se_fdw_scan_plan_from_list(List *l, SeFdwScanPlan *p)
{
	ListCell   *lc;

	memset(p, 0, sizeof(*p));
	p->relid = (Oid) intVal(list_nth(l, SP_RELID));
	p->kind = intVal(list_nth(l, SP_KIND));
	p->quals = list_nth(l, SP_QUALS);
	foreach(lc, (List *) list_nth(l, SP_SORTKEYS))
	{
		List	   *k = lfirst(lc);
		SeSortKey  *sk = palloc(sizeof(SeSortKey));

		sk->attno = linitial_int(k);
		sk->desc = lsecond_int(k);
		sk->nulls_first = lthird_int(k);
		p->sortkeys = lappend(p->sortkeys, sk);
	}
	p->has_limit = intVal(list_nth(l, SP_HAS_LIMIT));
	p->limit_idx = intVal(list_nth(l, SP_LIMIT_IDX));
	p->offset_idx = intVal(list_nth(l, SP_OFFSET_IDX));
	p->attrs = list_nth(l, SP_ATTRS);
	p->for_modify = intVal(list_nth(l, SP_FOR_MODIFY));
	p->aggs = list_nth(l, SP_AGGS);
}

/* ---------------------------------------------------------------------
 * The request
 * ---------------------------------------------------------------------
 */

static void
eval_values(ForeignScanState *node, SeScanState *ss)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	ListCell   *lc,
			   *le;
	int			i = 0;
	MemoryContext old = MemoryContextSwitchTo(ss->cxt);

	forboth(lc, ss->param_states, le, fsplan->fdw_exprs)
	{
		ExprState  *st = lfirst(lc);
		SeDslValue *v = &ss->values[i++];
		int16		typlen;
		bool		typbyval;

		v->value = ExecEvalExpr(st, econtext, &v->isnull);
		v->type = exprType(lfirst(le));
		get_typlenbyval(v->type, &typlen, &typbyval);
		if (!v->isnull)
			v->value = datumCopy(v->value, typbyval, typlen);
	}
	MemoryContextSwitchTo(old);
}

/* LIMIT / OFFSET value (-1: none), ERROR when negative as PostgreSQL does. */
static int64
limit_value(SeScanState *ss, int idx, bool offset)
{
	SeDslValue *v;
	int64		n;

	if (idx < 0)
		return -1;
	v = &ss->values[idx];
	if (v->isnull)
		return -1;
	n = DatumGetInt64(v->value);
	if (n < 0)
		ereport(ERROR,
				(errcode(offset ? ERRCODE_INVALID_ROW_COUNT_IN_RESULT_OFFSET_CLAUSE
						 : ERRCODE_INVALID_ROW_COUNT_IN_LIMIT_CLAUSE),
				 errmsg("%s must not be negative", offset ? "OFFSET" : "LIMIT")));
	return n;
}

static bool
wants(SeScanState *ss, SeColKind kind)
{
	ListCell   *lc;

	foreach(lc, ss->plan.attrs)
		if (ss->tbl->cols[lfirst_int(lc) - 1].kind == kind)
			return true;
	return false;
}

/*
 * The request body.  explain: runtime values not evaluated (shown as $n),
 * from/size of a limited search shown from their expressions.
 */
static char *
request_body(ForeignScanState *node, SeScanState *ss, const SeMapping *mapping,
			 bool explain, int64 from, int64 size)
{
	SeDslContext ctx;
	StringInfoData b;
	ListCell   *lc;
	bool		first = true;

	memset(&ctx, 0, sizeof(ctx));
	ctx.tbl = ss->tbl;
	ctx.mapping = mapping;
	ctx.values = explain ? NULL : ss->values;
	ctx.nvalues = ss->nvalues;
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"query\":");
	se_dsl_query(&ctx, ss->plan.quals, &b);
	if (ss->plan.kind == SE_KIND_AGG)
	{
		se_fdw_agg_request(ss, mapping, &b);
		appendStringInfoChar(&b, '}');
		return b.data;
	}
	if (ss->plan.sortkeys != NIL)
	{
		SeSortKey  *k0 = linitial(ss->plan.sortkeys);

		/* a lone _score descending is the engine's default (relevance) order */
		if (!(list_length(ss->plan.sortkeys) == 1 && k0->attno == 0 && k0->desc))
		{
			ListCell   *lc2;
			bool		by_field = false;

			appendStringInfoChar(&b, ',');
			se_dsl_sort(&ctx, ss->plan.sortkeys, &b);
			foreach(lc2, ss->plan.sortkeys)
				if (((SeSortKey *) lfirst(lc2))->attno != 0)
					by_field = true;
			if (by_field && wants(ss, SE_COL_SCORE))
				appendStringInfoString(&b, ",\"track_scores\":true");
		}
	}
	/* _source: the fields the query reads */
	appendStringInfoString(&b, ",\"_source\":");
	if (ss->plan.for_modify || wants(ss, SE_COL_SOURCE))
		appendStringInfoString(&b, "true");
	else
	{
		foreach(lc, ss->plan.attrs)
		{
			SeFdwColumn *c = &ss->tbl->cols[lfirst_int(lc) - 1];

			if (c->kind != SE_COL_FIELD)
				continue;
			appendStringInfoChar(&b, first ? '[' : ',');
			first = false;
			se_json_write_string(&b, c->field, -1);
		}
		appendStringInfoString(&b, first ? "false" : "]");
	}
	if (ss->plan.has_limit)
	{
		ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;

		if (explain)
		{
			if (ss->plan.offset_idx >= 0)
			{
				Node	   *e = list_nth(fsplan->fdw_exprs, ss->plan.offset_idx);

				if (IsA(e, Const) && !((Const *) e)->constisnull)
					appendStringInfo(&b, ",\"from\":" INT64_FORMAT, DatumGetInt64(((Const *) e)->constvalue));
				else
					appendStringInfo(&b, ",\"from\":$%d", ss->plan.offset_idx + 1);
			}
			if (ss->plan.limit_idx >= 0)
			{
				Node	   *e = list_nth(fsplan->fdw_exprs, ss->plan.limit_idx);

				if (IsA(e, Const) && !((Const *) e)->constisnull)
					appendStringInfo(&b, ",\"size\":" INT64_FORMAT, DatumGetInt64(((Const *) e)->constvalue));
				else
					appendStringInfo(&b, ",\"size\":$%d", ss->plan.limit_idx + 1);
			}
		}
		else
		{
			if (from > 0)
				appendStringInfo(&b, ",\"from\":" INT64_FORMAT, from);
			if (size >= 0)
				appendStringInfo(&b, ",\"size\":" INT64_FORMAT, size);
		}
	}
	else if (!explain && size >= 0)
		appendStringInfo(&b, ",\"size\":" INT64_FORMAT, size);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/* The DSL for EXPLAIN (runtime values as $n). */
char *
se_fdw_request_text(ForeignScanState *node, SeScanState *ss, bool explain)
{
	SeEngineIndex ei;

	if (!se_engine_open(ss->tbl->index, &ei, true))
		return psprintf("(index \"%s\" does not exist)", ss->tbl->index);
	return request_body(node, ss, ei.mapping, explain, -1, -1);
}

/* ---------------------------------------------------------------------
 * Rows
 * ---------------------------------------------------------------------
 */

typedef struct RowBuilder
{
	SeScanState *ss;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	SeColConv  *convs;			/* by attno - 1 (only retrieved ones set) */
	bool		need_source;	/* read _source (some field column) */
	bool		need_dom;		/* parse it */
	bool		need_meta;
	bool		source_from_hit;	/* search hits carry the filtered source */
	StringInfoData buf;
	int64		rows;
} RowBuilder;

static Datum
text_datum(SeColConv *cv, const char *s, int len)
{
	if (cv->col->typid == TEXTOID)
		return PointerGetDatum(cstring_to_text_with_len(s, len));
	return InputFunctionCall(&cv->inproc, pnstrdup(s, len), cv->ioparam, cv->col->typmod);
}

static Datum
int8_datum(SeColConv *cv, int64 v)
{
	if (cv->col->typid == INT8OID)
		return Int64GetDatum(v);
	return InputFunctionCall(&cv->inproc, psprintf(INT64_FORMAT, v), cv->ioparam, cv->col->typmod);
}

static Datum
float_score(SeFdwColumn *c, float f)
{
	if (c->typid == FLOAT4OID)
		return Float4GetDatum(f);
	if (c->typid == FLOAT8OID)
		return Float8GetDatum((double) f);
	return DirectFunctionCall1(float4_numeric, Float4GetDatum(f));
}

static void
build_row(RowBuilder *rb, SeDocRef *d)
{
	SeScanState *ss = rb->ss;
	SeDocMeta	meta;
	SeJson	   *dom = NULL;
	const char *src = NULL;
	int			srclen = 0;
	ListCell   *lc;
	MemoryContext old;
	const char *id;
	int			idlen;

	CHECK_FOR_INTERRUPTS();
	MemoryContextReset(ss->doc_cxt);
	old = MemoryContextSwitchTo(ss->doc_cxt);

	memset(&meta, 0, sizeof(meta));
	if (rb->need_meta || d->id == NULL)
		se_engine_meta(d, &meta);
	if (d->id)
	{
		id = d->id;
		idlen = strlen(d->id);
	}
	else
	{
		id = meta.id;
		idlen = meta.id_len;
	}
	se_fdw_conv_pos.doc_id = pnstrdup(id, idlen);

	if (rb->need_source)
	{
		if (rb->source_from_hit && d->source)
		{
			src = d->source->data;
			srclen = d->source->len;
		}
		else
		{
			resetStringInfo(&rb->buf);
			se_engine_source(d, &rb->buf);
			src = rb->buf.data;
			srclen = rb->buf.len;
		}
		if (rb->need_dom)
		{
			SeError		err;
			SeJsonParseOptions po = {0};

			se_error_init(&err);
			dom = se_json_parse(src, srclen, &po, &err);
			if (dom == NULL)
				se_raise(&err);
		}
	}

	foreach(lc, ss->plan.attrs)
	{
		int			a = lfirst_int(lc) - 1;
		SeColConv  *cv = &rb->convs[a];
		SeFdwColumn *c = cv->col;

		se_fdw_conv_pos.colname = c->name;
		rb->nulls[a] = false;
		switch (c->kind)
		{
			case SE_COL_FIELD:
				{
					SeFieldValues fv;

					se_fdw_lookup_path(dom, c->field, &fv);
					rb->values[a] = se_fdw_value_from_json(cv, &fv, &rb->nulls[a]);
					break;
				}
			case SE_COL_ID:
				rb->values[a] = text_datum(cv, id, idlen);
				break;
			case SE_COL_SCORE:
				if (isnan(d->score))
				{
					/* unscored: what the engine gives a non-scoring query */
					rb->values[a] = float_score(c, ss->plan.quals == NIL ? 1.0f : 0.0f);
				}
				else if (c->typid == FLOAT4OID)
					rb->values[a] = Float4GetDatum(d->score);
				else if (c->typid == FLOAT8OID)
					rb->values[a] = Float8GetDatum((double) d->score);
				else
					rb->values[a] = DirectFunctionCall1(float4_numeric, Float4GetDatum(d->score));
				break;
			case SE_COL_SOURCE:
				if (c->typid == JSONBOID)
					rb->values[a] = se_jsonb_from_text(src, srclen);
				else
					rb->values[a] = text_datum(cv, src, srclen);
				break;
			case SE_COL_ROUTING:
				if (meta.routing)
					rb->values[a] = text_datum(cv, meta.routing, meta.routing_len);
				else
					rb->nulls[a] = true;
				break;
			case SE_COL_SEQ_NO:
				rb->values[a] = int8_datum(cv, meta.seq_no);
				break;
			case SE_COL_PRIMARY_TERM:
				rb->values[a] = int8_datum(cv, meta.primary_term);
				break;
			case SE_COL_VERSION:
				rb->values[a] = int8_datum(cv, meta.version);
				break;
			case SE_COL_INDEX:
				rb->values[a] = text_datum(cv, ss->tbl->index, strlen(ss->tbl->index));
				break;
			case SE_COL_DROPPED:
				rb->nulls[a] = true;
				break;
		}
	}
	se_fdw_conv_pos.colname = NULL;

	if (ss->plan.for_modify)
	{
		SePreImage	pi;

		pi.id = pnstrdup(id, idlen);
		pi.routing = meta.routing ? pnstrdup(meta.routing, meta.routing_len) : NULL;
		pi.seq_no = meta.seq_no;
		pi.primary_term = meta.primary_term;
		pi.source = (char *) src;
		pi.source_len = srclen;
		se_fdw_preimage_put(ss->estate, ss->tbl->relid, &pi);
	}
	MemoryContextSwitchTo(old);
	tuplestore_putvalues(ss->store, rb->desc, rb->values, rb->nulls);
	rb->rows++;
}

static bool
row_cb(SeDocRef *d, void *arg)
{
	build_row((RowBuilder *) arg, d);
	return true;
}

static void
conv_error_callback(void *arg)
{
	if (se_fdw_conv_pos.colname)
		errcontext("column \"%s\" of foreign table \"%s\", document _id \"%s\"",
				   se_fdw_conv_pos.colname, se_fdw_conv_pos.relname,
				   se_fdw_conv_pos.doc_id ? se_fdw_conv_pos.doc_id : "?");
}

/* Run the request and fill ss->store. */
void
se_fdw_materialize(ForeignScanState *node, SeScanState *ss)
{
	SeEngineIndex ei;
	SeSearchShard *shards;
	int			nshards;
	SeSearchRequest *req;
	TupleDesc	desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	MemoryContext old;
	char	   *body;
	RowBuilder	rb;
	ErrorContextCallback errcb;
	ListCell   *lc;
	int64		from = 0,
				size = -1;

	MemoryContextReset(ss->cxt);
	old = MemoryContextSwitchTo(ss->cxt);
	eval_values(node, ss);
	ss->store = tuplestore_begin_heap(false, false, work_mem);
	ss->materialized = true;

	(void) se_engine_open(ss->tbl->index, &ei, false);
	se_fdw_check_columns(ss->tbl, ei.mapping);
	if (ss->plan.for_modify)
		se_engine_refresh(&ei);
	shards = se_engine_shards(&ei, &nshards);

	if (ss->plan.kind == SE_KIND_AGG)
	{
		body = request_body(node, ss, ei.mapping, false, -1, -1);
		ss->last_request = MemoryContextStrdup(node->ss.ps.state->es_query_cxt, body);
		se_fdw_aggregate(node, ss, body, &ei, shards, nshards);
		MemoryContextSwitchTo(old);
		return;
	}

	memset(&rb, 0, sizeof(rb));
	rb.ss = ss;
	rb.desc = desc;
	rb.values = palloc0(sizeof(Datum) * desc->natts);
	rb.nulls = palloc(sizeof(bool) * desc->natts);
	memset(rb.nulls, true, sizeof(bool) * desc->natts);
	rb.convs = palloc0(sizeof(SeColConv) * Max(1, ss->tbl->natts));
	initStringInfo(&rb.buf);
	rb.need_meta = ss->plan.for_modify;
	foreach(lc, ss->plan.attrs)
	{
		SeFdwColumn *c = &ss->tbl->cols[lfirst_int(lc) - 1];

		se_fdw_conv_init(&rb.convs[c->attnum - 1], c,
						 c->kind == SE_COL_FIELD ? se_mapping_find(ei.mapping, c->field) : NULL);
		if (c->kind == SE_COL_FIELD)
			rb.need_source = rb.need_dom = true;
		else if (c->kind == SE_COL_SOURCE)
			rb.need_source = true;
		else if (c->kind != SE_COL_ID && c->kind != SE_COL_SCORE && c->kind != SE_COL_INDEX)
			rb.need_meta = true;
	}
	if (ss->plan.for_modify)
		rb.need_source = true;

	se_fdw_conv_pos.relname = ss->tbl->relname;
	se_fdw_conv_pos.colname = NULL;
	errcb.callback = conv_error_callback;
	errcb.arg = NULL;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	if (ss->plan.kind == SE_KIND_SCAN)
	{
		body = request_body(node, ss, ei.mapping, false, -1, -1);
		ss->last_request = MemoryContextStrdup(node->ss.ps.state->es_query_cxt, body);
		req = se_engine_parse(body, strlen(body), false);
		se_engine_scan(req, body, shards, nshards, rb.need_source, row_cb, &rb);
		ss->total_hits = rb.rows;
	}
	else
	{
		if (ss->plan.has_limit)
		{
			int64		off = limit_value(ss, ss->plan.offset_idx, true);
			int64		lim = limit_value(ss, ss->plan.limit_idx, false);

			from = Max(off, 0);
			size = lim;
		}
		if (size < 0)
		{
			/* every hit: count them first */
			body = request_body(node, ss, ei.mapping, false, -1, -1);
			size = se_engine_count(body, shards, nshards);
			size = Max(size - from, 0);
		}
		size = Min(size, (int64) PG_INT32_MAX - from);
		body = request_body(node, ss, ei.mapping, false, from, size);
		ss->last_request = MemoryContextStrdup(node->ss.ps.state->es_query_cxt, body);
		req = se_engine_parse(body, strlen(body), false);
		rb.source_from_hit = !ss->plan.for_modify;
		ss->total_hits = se_engine_search(req, body, shards, nshards, (int) from, (int) size,
										   row_cb, &rb);
	}
	error_context_stack = errcb.previous;
	MemoryContextSwitchTo(old);
}
