/*-------------------------------------------------------------------------
 *
 * funcs.c
 *	  SQL-callable helpers of the foreign data wrapper: the functions of
 *	  the @@@ full-text operator, its selectivity, the DDL check.
 *
 * The @@@ operator means "this document matches this query" and only the
 * engine can answer it (analyzers, BM25): a scan of a search_engine
 * foreign table pushes it down into the DSL.  Its functions are therefore
 * never meant to run; if PostgreSQL evaluates one (the operand is not a
 * column of such a table, or the condition sits under an expression the
 * scan cannot push down), it raises an error that says so.
 *
 *     text   @@@ text    column @@@ 'query string' -> {"match": {field: q}}
 *     text[] @@@ text    the same on an array column
 *     jsonb  @@@ jsonb   _source @@@ '{DSL query}'
 *     record @@@ jsonb   the table's row @@@ '{DSL query}'
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "foreign/foreign.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"

#include "api/api.h"
#include "fdw/fdw.h"

#define DEFAULT_MATCH_SEL 0.005

static void
not_pushed(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_ERROR),
			 errmsg("operator @@@ can only be evaluated by a search_engine foreign table scan"),
			 errdetail("Its left operand must be a column, the _source column or the row of a search_engine foreign table, in a WHERE condition the scan pushes down (see EXPLAIN VERBOSE)."),
			 errhint("Combine @@@ with AND, OR and NOT of conditions on that table only; other conditions can go in a separate WHERE clause of an outer query.")));
}

PG_FUNCTION_INFO_V1(se_fdw_match_text);
Datum
se_fdw_match_text(PG_FUNCTION_ARGS)
{
	not_pushed();
	PG_RETURN_BOOL(false);
}

PG_FUNCTION_INFO_V1(se_fdw_match_text_array);
Datum
se_fdw_match_text_array(PG_FUNCTION_ARGS)
{
	not_pushed();
	PG_RETURN_BOOL(false);
}

PG_FUNCTION_INFO_V1(se_fdw_match_dsl);
Datum
se_fdw_match_dsl(PG_FUNCTION_ARGS)
{
	not_pushed();
	PG_RETURN_BOOL(false);
}

PG_FUNCTION_INFO_V1(se_fdw_match_row);
Datum
se_fdw_match_row(PG_FUNCTION_ARGS)
{
	not_pushed();
	PG_RETURN_BOOL(false);
}

/*
 * Restriction selectivity of @@@.  With use_remote_estimate on the table,
 * the engine counts the matches of a constant query; otherwise a fixed
 * guess (full-text matches are usually rare).
 */
PG_FUNCTION_INFO_V1(se_fdw_match_restrict);
Datum
se_fdw_match_restrict(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	Node	   *l,
			   *r;
	Var		   *var;
	RangeTblEntry *rte;
	SeFdwTable *t;
	StringInfoData body;
	SeEngineIndex ei;
	SeSearchShard *shards;
	int			n;
	int64		matches,
				total;

	if (list_length(args) != 2)
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	l = linitial(args);
	r = estimate_expression_value(root, lsecond(args));
	while (IsA(l, RelabelType))
		l = (Node *) ((RelabelType *) l)->arg;
	if (!IsA(l, Var) || !IsA(r, Const) || ((Const *) r)->constisnull)
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	var = (Var *) l;
	if (var->varlevelsup != 0 || var->varno <= 0 || var->varno >= root->simple_rel_array_size)
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	rte = planner_rt_fetch(var->varno, root);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_FOREIGN_TABLE ||
		!se_fdw_is_our_server(GetForeignTable(rte->relid)->serverid))
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	t = se_fdw_table_get(rte->relid);
	if (!t->use_remote_estimate)
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);

	initStringInfo(&body);
	appendStringInfoString(&body, "{\"query\":");
	if (exprType(r) == TEXTOID && var->varattno > 0 &&
		t->cols[var->varattno - 1].kind == SE_COL_FIELD)
	{
		text	   *q = DatumGetTextPP(((Const *) r)->constvalue);

		appendStringInfoString(&body, "{\"match\":{");
		se_json_write_string(&body, t->cols[var->varattno - 1].field, -1);
		appendStringInfoChar(&body, ':');
		se_json_write_string(&body, VARDATA_ANY(q), VARSIZE_ANY_EXHDR(q));
		appendStringInfoString(&body, "}}");
	}
	else if (exprType(r) == JSONBOID)
	{
		Jsonb	   *jb = DatumGetJsonbP(((Const *) r)->constvalue);

		appendStringInfoString(&body, JsonbToCString(NULL, &jb->root, VARSIZE(jb)));
	}
	else
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	appendStringInfoChar(&body, '}');
	if (!se_engine_readable(t->index) || !se_engine_open(t->index, &ei, true))
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	shards = se_engine_shards(&ei, &n);
	total = se_engine_count("{}", shards, n);
	if (total <= 0)
		PG_RETURN_FLOAT8(DEFAULT_MATCH_SEL);
	matches = se_engine_count(body.data, shards, n);
	PG_RETURN_FLOAT8(Max((double) matches / (double) total, 1.0 / (double) (total + 1)));
}

/*
 * Check the columns of a foreign table against its index (run by the
 * event trigger after CREATE / ALTER FOREIGN TABLE and IMPORT FOREIGN
 * SCHEMA): ERROR when a column type cannot hold its field.  Tables of
 * other wrappers, and indices that do not exist yet, pass.
 */
PG_FUNCTION_INFO_V1(se_fdw_check_table);
Datum
se_fdw_check_table(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	SeFdwTable *t;
	SeEngineIndex ei;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE ||
		!se_fdw_is_our_server(GetForeignTable(relid)->serverid))
		PG_RETURN_VOID();
	t = se_fdw_table_get(relid);
	if (se_engine_open(t->index, &ei, true))
		se_fdw_check_columns(t, ei.mapping);
	PG_RETURN_VOID();
}
