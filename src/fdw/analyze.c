/*-------------------------------------------------------------------------
 *
 * analyze.c
 *	  ANALYZE of a search_engine foreign table: a random sample of the
 *	  index's documents, taken through the engine.
 *
 * One pass over every live document of a snapshot (unscored scan, no
 * query), reservoir sampling (Vitter's algorithm, as ANALYZE of a heap
 * does); only the documents that enter the reservoir are read from
 * _source and converted, so the cost is dominated by the scan, not by
 * JSON.  The planner then has the real row count and per-column
 * statistics (distinct values, most common values, histograms) to
 * estimate the selectivity of pushed-down and local conditions alike.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "api/api.h"
#include "fdw/fdw.h"

typedef struct SampleState
{
	SeFdwTable *tbl;
	TupleDesc	desc;
	SeColConv  *convs;
	HeapTuple  *rows;
	int			targrows;
	int			numrows;
	double		samplerows;
	double		rowstoskip;
	ReservoirStateData rstate;
	MemoryContext doc_cxt;
	MemoryContext row_cxt;
	StringInfoData buf;
	Datum	   *values;
	bool	   *nulls;
} SampleState;

static HeapTuple
make_row(SampleState *st, SeDocRef *d)
{
	SeFdwTable *t = st->tbl;
	SeDocMeta	meta;
	SeJson	   *dom;
	SeError		err;
	SeJsonParseOptions po = {0};
	int			i;
	MemoryContext old;
	HeapTuple	tup;

	MemoryContextReset(st->doc_cxt);
	old = MemoryContextSwitchTo(st->doc_cxt);
	se_engine_meta(d, &meta);
	se_fdw_conv_pos.doc_id = pnstrdup(meta.id, meta.id_len);
	resetStringInfo(&st->buf);
	se_engine_source(d, &st->buf);
	se_error_init(&err);
	dom = se_json_parse(st->buf.data, st->buf.len, &po, &err);
	if (dom == NULL)
		se_raise(&err);
	for (i = 0; i < t->natts; i++)
	{
		SeFdwColumn *c = &t->cols[i];
		SeColConv  *cv = &st->convs[i];

		st->nulls[i] = true;
		se_fdw_conv_pos.colname = c->name;
		switch (c->kind)
		{
			case SE_COL_FIELD:
				{
					SeFieldValues fv;

					se_fdw_lookup_path(dom, c->field, &fv);
					st->values[i] = se_fdw_value_from_json(cv, &fv, &st->nulls[i]);
					break;
				}
			case SE_COL_ID:
				st->values[i] = InputFunctionCall(&cv->inproc, pnstrdup(meta.id, meta.id_len),
												  cv->ioparam, c->typmod);
				st->nulls[i] = false;
				break;
			case SE_COL_SOURCE:
				st->values[i] = InputFunctionCall(&cv->inproc, pnstrdup(st->buf.data, st->buf.len),
												  cv->ioparam, c->typmod);
				st->nulls[i] = false;
				break;
			case SE_COL_ROUTING:
				if (meta.routing)
				{
					st->values[i] = InputFunctionCall(&cv->inproc, pnstrdup(meta.routing, meta.routing_len),
													  cv->ioparam, c->typmod);
					st->nulls[i] = false;
				}
				break;
			case SE_COL_SEQ_NO:
			case SE_COL_PRIMARY_TERM:
			case SE_COL_VERSION:
				st->values[i] = InputFunctionCall(&cv->inproc,
												  psprintf(INT64_FORMAT,
														   c->kind == SE_COL_SEQ_NO ? meta.seq_no :
														   c->kind == SE_COL_VERSION ? meta.version :
														   meta.primary_term),
												  cv->ioparam, c->typmod);
				st->nulls[i] = false;
				break;
			case SE_COL_INDEX:
				st->values[i] = InputFunctionCall(&cv->inproc, t->index, cv->ioparam, c->typmod);
				st->nulls[i] = false;
				break;
			case SE_COL_SCORE:
			case SE_COL_DROPPED:
				break;
		}
	}
	se_fdw_conv_pos.colname = NULL;
	MemoryContextSwitchTo(st->row_cxt);
	tup = heap_form_tuple(st->desc, st->values, st->nulls);
	MemoryContextSwitchTo(old);
	return tup;
}

static bool
sample_doc(SeDocRef *d, void *arg)
{
	SampleState *st = arg;
	int			pos;

	vacuum_delay_point();
	if (st->numrows < st->targrows)
		pos = st->numrows++;
	else
	{
		if (st->rowstoskip < 0)
			st->rowstoskip = reservoir_get_next_S(&st->rstate, st->samplerows, st->targrows);
		if (st->rowstoskip <= 0)
		{
			pos = (int) (st->targrows * sampler_random_fract(&st->rstate.randstate));
			heap_freetuple(st->rows[pos]);
		}
		else
			pos = -1;
		st->rowstoskip -= 1;
	}
	st->samplerows += 1;
	if (pos >= 0)
		st->rows[pos] = make_row(st, d);
	return true;
}

static int
acquire_sample_rows(Relation relation, int elevel, HeapTuple *rows, int targrows,
					double *totalrows, double *totaldeadrows)
{
	SampleState st;
	SeEngineIndex ei;
	SeSearchShard *shards;
	const char *body;
	int			nshards;
	int			i;

	memset(&st, 0, sizeof(st));
	st.tbl = se_fdw_table_get(RelationGetRelid(relation));
	st.desc = RelationGetDescr(relation);
	st.rows = rows;
	st.targrows = targrows;
	st.rowstoskip = -1;
	st.row_cxt = CurrentMemoryContext;
	st.doc_cxt = AllocSetContextCreate(CurrentMemoryContext, "search_engine analyze",
									   ALLOCSET_DEFAULT_SIZES);
	st.values = palloc0(sizeof(Datum) * Max(1, st.tbl->natts));
	st.nulls = palloc0(sizeof(bool) * Max(1, st.tbl->natts));
	initStringInfo(&st.buf);
	reservoir_init_selection_state(&st.rstate, targrows);

	se_engine_authorize(st.tbl->index, SE_ACL_READ, NULL, 0);
	(void) se_engine_open(st.tbl->index, &ei, false);
	se_fdw_check_columns(st.tbl, ei.mapping);
	st.convs = palloc0(sizeof(SeColConv) * Max(1, st.tbl->natts));
	for (i = 0; i < st.tbl->natts; i++)
	{
		SeFdwColumn *c = &st.tbl->cols[i];

		if (c->kind != SE_COL_DROPPED)
			se_fdw_conv_init(&st.convs[i], c,
							 c->kind == SE_COL_FIELD ? se_mapping_find(ei.mapping, c->field) : NULL);
	}
	se_fdw_conv_pos.relname = st.tbl->relname;
	shards = se_engine_shards(&ei, &nshards);
	/* through a filtered alias: its documents only */
	body = st.tbl->filter ? psprintf("{\"query\":{\"bool\":{\"filter\":[%s]}}}", st.tbl->filter) : "{}";
	se_engine_scan(se_engine_parse(body, strlen(body), false), body, shards, nshards, true,
				   sample_doc, &st);
	MemoryContextDelete(st.doc_cxt);

	*totalrows = st.samplerows;
	*totaldeadrows = 0;
	ereport(elevel,
			(errmsg("\"%s\": index \"%s\" holds %.0f documents; %d rows in sample",
					RelationGetRelationName(relation), st.tbl->index, st.samplerows, st.numrows)));
	return st.numrows;
}

/* AnalyzeForeignTable: sample through the engine. */
bool
se_fdw_analyze(Relation relation, AcquireSampleRowsFunc *func, BlockNumber *totalpages)
{
	SeFdwTable *t = se_fdw_table_get(RelationGetRelid(relation));
	int64		docs = se_engine_live_docs(t->index);

	*func = acquire_sample_rows;
	/* pages only scale the cost model: about 50 documents per page */
	*totalpages = docs > 0 ? (BlockNumber) Min((docs + 49) / 50, (int64) MaxBlockNumber) : 1;
	return true;
}
