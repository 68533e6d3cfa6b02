/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The search_engine foreign data wrapper handler: planning and scans.
 *
 * Paths offered for a foreign table (cheapest wins, as usual):
 *   - the base scan: pushable WHERE clauses become one DSL query
 *     (deparse.c), the rest stay local filters; only the columns the query
 *     needs are read from _source;
 *   - a sorted scan when ORDER BY maps to engine sort keys (fields with
 *     doc values, _score);
 *   - parameterized scans for join clauses on _id or exact-value fields:
 *     a nested loop then does one ids/terms lookup per outer row;
 *   - UPPERREL_FINAL: ORDER BY ... LIMIT/OFFSET as the engine's top-k
 *     (sort + from + size), when every WHERE clause was pushed;
 *   - UPPERREL_GROUP_AGG: count(*), count(col), min, max, sum, avg and
 *     GROUP BY on doc-value columns computed by the engine (the count API,
 *     or a doc-values scan in shard_access.c's snapshots) without fetching rows.
 *
 * Execution: each (re)scan evaluates the runtime values (parameters, outer
 * columns, stable expressions), generates the DSL, runs it against fresh
 * shard snapshots and materializes the rows in a tuplestore before
 * returning the first one (segment readers must not be held across the
 * executor's calls; see shard_access.c).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/tuplestore.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "fdw/fdw_int.h"

/* ---------------------------------------------------------------------
 * Planner state
 * ---------------------------------------------------------------------
 */

/* RelOptInfo.fdw_private of our base rels and of upper rels over them. */
typedef struct SeRelInfo
{
	/* base rel */
	SeFdwTable *tbl;
	SeMapping  *mapping;		/* NULL: the index does not exist (yet) */
	List	   *remote_conds;	/* RestrictInfos the engine evaluates */
	List	   *local_conds;
	Bitmapset  *attrs_used;		/* offset by FirstLowInvalidHeapAttributeNumber */
	double		tuples;			/* documents in the index */
	double		rows;
	Cost		per_row;
	bool		qp_sort_ok;		/* query_pathkeys map to engine sort keys */
	List	   *qp_sortkeys;

	/* upper rels */
	UpperRelationKind stage;
	RelOptInfo *outerrel;
	bool		pushdown_safe;
	List	   *aggs;			/* GROUP_AGG: (SeAggKind, attno) per scan tlist entry */
	List	   *agg_tlist;		/* GROUP_AGG: the scan tlist exprs */
} SeRelInfo;

/* Path.fdw_private of base-rel paths (a List): sort keys, has_limit. */
enum
{
	PP_SORTKEYS,
	PP_HAS_LIMIT
};

/* ---------------------------------------------------------------------
 * Sort keys
 * ---------------------------------------------------------------------
 */

/* Engine sort key for one pathkey, or false. */
static bool
pathkey_to_sortkey(PlannerInfo *root, RelOptInfo *rel, SeRelInfo *fp, PathKey *pk,
				   SeSortKey *out)
{
	EquivalenceClass *ec = pk->pk_eclass;
	ListCell   *lc;

	if (ec->ec_has_volatile)
		return false;
	if (pk->pk_strategy != BTLessStrategyNumber && pk->pk_strategy != BTGreaterStrategyNumber)
		return false;
	foreach(lc, ec->ec_members)
	{
		EquivalenceMember *em = lfirst(lc);
		Expr	   *e = em->em_expr;
		Var		   *var;
		SeFdwColumn *col;
		Oid			opclass;

		while (e && IsA(e, RelabelType))
			e = ((RelabelType *) e)->arg;
		if (e == NULL || !IsA(e, Var) || em->em_is_child)
			continue;
		var = (Var *) e;
		if (var->varno != rel->relid || var->varlevelsup != 0 || var->varattno <= 0)
			continue;
		col = &fp->tbl->cols[var->varattno - 1];
		opclass = GetDefaultOpClass(col->typid, BTREE_AM_OID);
		if (!OidIsValid(opclass) || get_opclass_family(opclass) != pk->pk_opfamily)
			continue;
		out->attno = var->varattno;
		out->desc = (pk->pk_strategy == BTGreaterStrategyNumber);
		out->nulls_first = pk->pk_nulls_first;
		if (col->kind == SE_COL_SCORE)
		{
			out->attno = 0;
			return true;
		}
		if (col->kind == SE_COL_FIELD)
		{
			SeColSearch cs;

			se_fdw_col_search(col, fp->mapping, ec->ec_collation, &cs);
			if (cs.sortable)
				return true;
		}
	}
	return false;
}

/* Engine sort keys for pathkeys (a List of SeSortKey *), or NIL. */
static List *
pathkeys_to_sortkeys(PlannerInfo *root, RelOptInfo *rel, SeRelInfo *fp, List *pathkeys)
{
	List	   *res = NIL;
	ListCell   *lc;

	foreach(lc, pathkeys)
	{
		SeSortKey  *k = palloc(sizeof(SeSortKey));

		if (!pathkey_to_sortkey(root, rel, fp, lfirst(lc), k))
			return NIL;
		res = lappend(res, k);
	}
	return res;
}

static List *
sortkeys_to_node(List *keys)
{
	List	   *res = NIL;
	ListCell   *lc;

	foreach(lc, keys)
	{
		SeSortKey  *k = lfirst(lc);

		res = lappend(res, list_make3_int(k->attno, k->desc, k->nulls_first));
	}
	return res;
}

static List *
sortkeys_from_node(List *node)
{
	List	   *res = NIL;
	ListCell   *lc;

	foreach(lc, node)
	{
		List	   *l = lfirst(lc);
		SeSortKey  *k = palloc(sizeof(SeSortKey));

		k->attno = linitial_int(l);
		k->desc = lsecond_int(l);
		k->nulls_first = lthird_int(l);
		res = lappend(res, k);
	}
	return res;
}

/* ---------------------------------------------------------------------
 * GetForeignRelSize / GetForeignPaths
 * ---------------------------------------------------------------------
 */

static void
dsl_check_ctx(SeDslContext *ctx, SeRelInfo *fp, RelOptInfo *rel, Relids outer)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->tbl = fp->tbl;
	ctx->mapping = fp->mapping;
	ctx->relid = rel->relid;
	ctx->outer_relids = outer;
}

/* Count the documents matching the pushed conditions (use_remote_estimate). */
static double
remote_count(SeRelInfo *fp, RelOptInfo *rel)
{
	List	   *quals = NIL;
	List	   *runtime = NIL;
	ListCell   *lc;
	SeDslContext ctx;
	StringInfoData body;
	SeEngineIndex ei;
	SeSearchShard *shards;
	int			n;

	dsl_check_ctx(&ctx, fp, rel, NULL);
	foreach(lc, fp->remote_conds)
		quals = lappend(quals, se_dsl_prepare(&ctx, ((RestrictInfo *) lfirst(lc))->clause, &runtime));
	if (runtime != NIL)
		return -1;				/* values unknown until run time */
	ctx.relid = 0;
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"query\":");
	se_dsl_query(&ctx, quals, &body);
	appendStringInfoChar(&body, '}');
	if (!se_engine_readable(fp->tbl->index) || !se_engine_open(fp->tbl->index, &ei, true))
		return -1;
	shards = se_engine_shards(&ei, &n);
	return (double) se_engine_count(body.data, shards, n);
}

static void
seGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	SeRelInfo  *fp = palloc0(sizeof(SeRelInfo));
	SeEngineIndex ei;
	ListCell   *lc;
	SeDslContext ctx;
	Selectivity sel;
	QualCost	qc;
	double		docs = -1;

	baserel->fdw_private = fp;
	fp->tbl = se_fdw_table_get(foreigntableid);
	if (se_engine_open(fp->tbl->index, &ei, true))
	{
		fp->mapping = ei.mapping;
		/* never analyzed: the live documents of the index */
		if (baserel->tuples < 0 && se_engine_readable(fp->tbl->index))
			docs = se_engine_live_docs(fp->tbl->index);
	}
	fp->tuples = baserel->tuples >= 0 ? baserel->tuples : Max(docs, 0);
	if (baserel->tuples < 0)
		baserel->tuples = fp->tuples;

	dsl_check_ctx(&ctx, fp, baserel, NULL);
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (fp->mapping != NULL && se_dsl_pushable(&ctx, ri->clause))
			fp->remote_conds = lappend(fp->remote_conds, ri);
		else
			fp->local_conds = lappend(fp->local_conds, ri);
	}

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &fp->attrs_used);
	foreach(lc, fp->local_conds)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause, baserel->relid,
					   &fp->attrs_used);

	sel = clauselist_selectivity(root, extract_actual_clauses(fp->remote_conds, false),
								 baserel->relid, JOIN_INNER, NULL);
	fp->rows = clamp_row_est(fp->tuples * sel);
	if (fp->tbl->use_remote_estimate && fp->mapping != NULL)
	{
		double		c = remote_count(fp, baserel);

		if (c >= 0)
			fp->rows = clamp_row_est(c);
	}
	baserel->rows = clamp_row_est(fp->rows *
								  clauselist_selectivity(root, extract_actual_clauses(fp->local_conds, false),
														 baserel->relid, JOIN_INNER, NULL));
	cost_qual_eval(&qc, extract_actual_clauses(fp->local_conds, false), root);
	fp->per_row = fp->tbl->fdw_tuple_cost + cpu_tuple_cost + qc.per_tuple;

	/* can the engine produce the query's ordering? */
	if (root->query_pathkeys != NIL && fp->mapping != NULL)
	{
		fp->qp_sortkeys = pathkeys_to_sortkeys(root, baserel, fp, root->query_pathkeys);
		fp->qp_sort_ok = fp->qp_sortkeys != NIL;
	}
	fp->pushdown_safe = true;
}

/* Cost of a scan returning rows of fp (materialized: startup = total). */
static void
scan_cost(SeRelInfo *fp, double rows, bool sorted, Cost *startup, Cost *total)
{
	Cost		c = fp->tbl->fdw_startup_cost;

	/* the engine walks postings of the pushed query: a small per-doc cost */
	c += fp->tuples * 0.0001;
	c += fp->rows * fp->per_row;
	if (sorted && fp->rows > 1)
		c += fp->rows * log2(fp->rows) * cpu_operator_cost * 0.5;
	*startup = c;
	*total = c;
	(void) rows;
}

typedef struct EcArg
{
	Var		   *target;
} EcArg;

static bool
ec_member_matches(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec,
				  EquivalenceMember *em, void *arg)
{
	Expr	   *e = em->em_expr;

	while (e && IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	return equal(e, ((EcArg *) arg)->target);
}

/* Parameterized paths for join clauses the engine can look up. */
static void
add_param_paths(PlannerInfo *root, RelOptInfo *baserel, SeRelInfo *fp)
{
	List	   *ppis = NIL;
	List	   *clauses = NIL;
	ListCell   *lc;
	int			i;

	foreach(lc, baserel->joininfo)
		clauses = lappend(clauses, lfirst(lc));
	if (baserel->has_eclass_joins)
	{
		for (i = 0; i < fp->tbl->natts; i++)
		{
			SeFdwColumn *col = &fp->tbl->cols[i];
			SeColSearch cs;
			EcArg		arg;

			if (col->kind == SE_COL_DROPPED || col->is_array)
				continue;
			se_fdw_col_search(col, fp->mapping, col->collation, &cs);
			if (cs.term_field == NULL || cs.term_max_len > 0)
				continue;
			arg.target = makeVar(baserel->relid, col->attnum, col->typid, col->typmod,
								 col->collation, 0);
			clauses = list_concat(clauses,
								  generate_implied_equalities_for_column(root, baserel,
																		 ec_member_matches, &arg,
																		 baserel->lateral_referencers));
		}
	}
	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst(lc);
		Relids		required_outer;
		SeDslContext ctx;

		if (!join_clause_is_movable_to(ri, baserel))
			continue;
		required_outer = bms_union(ri->clause_relids, baserel->lateral_relids);
		required_outer = bms_del_member(required_outer, baserel->relid);
		if (bms_is_empty(required_outer))
			continue;
		dsl_check_ctx(&ctx, fp, baserel, required_outer);
		if (!se_dsl_pushable(&ctx, ri->clause))
			continue;
		ppis = list_append_unique_ptr(ppis, get_baserel_parampathinfo(root, baserel, required_outer));
	}
	foreach(lc, ppis)
	{
		ParamPathInfo *ppi = lfirst(lc);
		double		rows = ppi->ppi_rows;
		Cost		c = fp->tbl->fdw_startup_cost * 0.1 + rows * fp->per_row;

		add_path(baserel, (Path *)
				 create_foreignscan_path(root, baserel, NULL, rows, c, c, NIL,
										 ppi->ppi_req_outer, NULL, NIL));
	}
}

static void
seGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	SeRelInfo  *fp = baserel->fdw_private;
	Cost		startup,
				total;

	scan_cost(fp, baserel->rows, false, &startup, &total);
	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows, startup, total,
									 NIL, baserel->lateral_relids, NULL, NIL));
	if (fp->qp_sort_ok)
	{
		scan_cost(fp, baserel->rows, true, &startup, &total);
		add_path(baserel, (Path *)
				 create_foreignscan_path(root, baserel, NULL, baserel->rows, startup, total,
										 root->query_pathkeys, baserel->lateral_relids, NULL,
										 list_make2(sortkeys_to_node(fp->qp_sortkeys),
													makeInteger(false))));
	}
	if (fp->mapping != NULL)
		add_param_paths(root, baserel, fp);
}

/* ---------------------------------------------------------------------
 * Upper paths: ORDER BY + LIMIT, aggregates
 * ---------------------------------------------------------------------
 */

static bool
limit_expr_ok(Node *n)
{
	if (n == NULL)
		return true;
	if (IsA(n, Const))
		return true;
	if (IsA(n, Param))
		return ((Param *) n)->paramkind == PARAM_EXTERN;
	return false;
}

static void
add_final_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *final_rel,
				FinalPathExtraData *extra)
{
	Query	   *parse = root->parse;
	SeRelInfo  *ifp = input_rel->fdw_private;
	SeRelInfo  *fp = final_rel->fdw_private;
	List	   *pathkeys = NIL;
	List	   *sortkeys = NIL;
	double		rows;
	Cost		startup,
				total;
	ForeignPath *path;

	if (parse->commandType != CMD_SELECT || parse->rowMarks || !extra->limit_needed ||
		parse->hasTargetSRFs)
		return;
	if (input_rel->reloptkind == RELOPT_UPPER_REL)
	{
		if (ifp->stage != UPPERREL_ORDERED || !ifp->pushdown_safe)
			return;
		input_rel = ifp->outerrel;
		ifp = input_rel->fdw_private;
		pathkeys = root->sort_pathkeys;
		sortkeys = pathkeys_to_sortkeys(root, input_rel, ifp, pathkeys);
		if (sortkeys == NIL)
			return;
	}
	if (input_rel->reloptkind != RELOPT_BASEREL || ifp->local_conds != NIL ||
		ifp->mapping == NULL)
		return;
	if (!limit_expr_ok(parse->limitCount) || !limit_expr_ok(parse->limitOffset))
		return;
	fp->outerrel = input_rel;
	fp->pushdown_safe = true;

	rows = extra->count_est > 0 ? Min(extra->count_est, ifp->rows) : ifp->rows;
	startup = ifp->tbl->fdw_startup_cost + ifp->tuples * 0.0001 + ifp->rows * cpu_operator_cost * 0.1;
	total = startup + rows * ifp->per_row;
	path = create_foreign_upper_path(root, input_rel, root->upper_targets[UPPERREL_FINAL],
									 rows, startup, total, pathkeys, NULL,
									 list_make2(sortkeys_to_node(sortkeys), makeInteger(true)));
	add_path(final_rel, (Path *) path);
}

/*
 * Does a document of the index hold a value of text field `field` that its
 * keyword sub-field `kw` did not keep (longer than its ignore_above)?  Such
 * a document has no doc value to group on; true also when it cannot be
 * told (no read privilege: the scan will say so).
 */
static bool
long_values(SeRelInfo *fp, const char *field, const char *kw)
{
	StringInfoData body;
	SeEngineIndex ei;
	SeSearchShard *shards;
	int			n;

	if (!se_engine_readable(fp->tbl->index) || !se_engine_open(fp->tbl->index, &ei, true))
		return true;
	initStringInfo(&body);
	appendStringInfoString(&body, "{\"query\":{\"bool\":{\"filter\":[{\"exists\":{\"field\":");
	se_json_write_string(&body, field, -1);
	appendStringInfoString(&body, "}}],\"must_not\":[{\"exists\":{\"field\":");
	se_json_write_string(&body, kw, -1);
	appendStringInfoString(&body, "}}]}}}");
	shards = se_engine_shards(&ei, &n);
	return se_engine_count(body.data, shards, n) > 0;
}

/* Aggregate of an Aggref the engine computes, or 0. */
static int
agg_kind(Aggref *a, SeRelInfo *ifp, RelOptInfo *input_rel, AttrNumber *attno)
{
	const char *name;
	TargetEntry *te;
	Expr	   *arg;
	SeFdwColumn *col;
	Var		   *var;
	SeColSearch cs;
	Oid			t;

	*attno = 0;
	if (a->aggfilter || a->aggdistinct || a->aggorder || a->aggkind != AGGKIND_NORMAL ||
		a->aggsplit != AGGSPLIT_SIMPLE || a->aggvariadic || a->agglevelsup != 0 ||
		a->aggfnoid >= FirstGenbkiObjectId)
		return 0;
	name = get_func_name(a->aggfnoid);
	if (a->aggstar)
		return strcmp(name, "count") == 0 ? SE_AGG_COUNT_STAR : 0;
	if (list_length(a->args) != 1)
		return 0;
	te = linitial(a->args);
	arg = te->expr;
	/* a COLLATE on the column: the collation is a->inputcollid */
	while (arg && IsA(arg, RelabelType) && exprType((Node *) ((RelabelType *) arg)->arg) ==
		   ((RelabelType *) arg)->resulttype)
		arg = ((RelabelType *) arg)->arg;
	if (arg == NULL || !IsA(arg, Var))
		return 0;
	var = (Var *) arg;
	if (var->varno != input_rel->relid || var->varattno <= 0 || var->varlevelsup != 0)
		return 0;
	col = &ifp->tbl->cols[var->varattno - 1];
	if (col->kind != SE_COL_FIELD || col->is_array)
		return 0;
	se_fdw_col_search(col, ifp->mapping, a->inputcollid, &cs);
	*attno = var->varattno;
	t = col->typid;
	/*
	 * A text column through its keyword sub-field's doc values (as GROUP
	 * BY): count, and min / max where the collation orders as bytes; not
	 * while a document holds a value past the sub-field's ignore_above
	 * (aggregate.c checks again when it runs).
	 */
	if (cs.field != NULL && cs.field->type == SE_FT_TEXT && cs.agg_field != NULL &&
		(strcmp(name, "count") == 0 ||
		 ((strcmp(name, "min") == 0 || strcmp(name, "max") == 0) &&
		  se_fdw_collation_c(a->inputcollid))))
	{
		if (cs.agg_max_len > 0 && long_values(ifp, cs.field->path, cs.agg_field))
			return 0;
		return strcmp(name, "count") == 0 ? SE_AGG_COUNT :
			strcmp(name, "min") == 0 ? SE_AGG_MIN : SE_AGG_MAX;
	}
	if (strcmp(name, "count") == 0)
		return cs.exists_ok ? SE_AGG_COUNT : 0;
	if (!cs.aggregatable)
		return 0;
	if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
	{
		if (t == BOOLOID || (t == TEXTOID && !cs.sortable))
			return 0;
		return strcmp(name, "min") == 0 ? SE_AGG_MIN : SE_AGG_MAX;
	}
	if (t != INT2OID && t != INT4OID && t != INT8OID && t != FLOAT4OID && t != FLOAT8OID)
		return 0;
	if (strcmp(name, "sum") == 0)
		return SE_AGG_SUM;
	if (strcmp(name, "avg") == 0)
		return SE_AGG_AVG;
	return 0;
}

static void
add_grouping_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
				   GroupPathExtraData *extra)
{
	Query	   *parse = root->parse;
	SeRelInfo  *ifp = input_rel->fdw_private;
	SeRelInfo  *fp = grouped_rel->fdw_private;
	PathTarget *target = grouped_rel->reltarget;
	List	   *tlist = NIL;
	List	   *specs = NIL;
	List	   *exprs;
	ListCell   *lc;
	double		rows;
	Cost		startup,
				total;
	bool		only_counts = true;

	if (input_rel->reloptkind != RELOPT_BASEREL || !ifp->pushdown_safe ||
		ifp->local_conds != NIL || ifp->mapping == NULL)
		return;
	if (parse->groupingSets || extra->patype != PARTITIONWISE_AGGREGATE_NONE)
		return;

	/* GROUP BY: plain columns with doc values */
	foreach(lc, parse->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		Expr	   *e = (Expr *) get_sortgroupclause_expr(sgc, parse->targetList);
		Var		   *var;
		SeFdwColumn *col;
		SeColSearch cs;

		while (e && IsA(e, RelabelType))
			e = ((RelabelType *) e)->arg;
		if (e == NULL || !IsA(e, Var))
			return;
		var = (Var *) e;
		if (var->varno != input_rel->relid || var->varattno <= 0)
			return;
		col = &ifp->tbl->cols[var->varattno - 1];
		if (col->kind != SE_COL_FIELD || col->is_array)
			return;
		se_fdw_col_search(col, ifp->mapping, exprCollation((Node *) var), &cs);
		/* grouped by the aggregations engine on doc values (aggregate.c) */
		if (cs.agg_field == NULL)
			return;
		/* values past the keyword sub-field's ignore_above: group them here */
		if (cs.agg_max_len > 0 && cs.field->type == SE_FT_TEXT &&
			long_values(ifp, cs.field->path, cs.agg_field))
			return;
		if (!tlist_member((Expr *) var, tlist))
		{
			tlist = add_to_flat_tlist(tlist, list_make1(var));
			specs = lappend(specs, list_make2_int(SE_AGG_GROUP_KEY, var->varattno));
		}
		only_counts = false;
	}

	/* aggregates in the target list and HAVING */
	exprs = pull_var_clause((Node *) target->exprs, PVC_INCLUDE_AGGREGATES);
	if (parse->havingQual)
		exprs = list_concat(exprs, pull_var_clause(parse->havingQual, PVC_INCLUDE_AGGREGATES));
	foreach(lc, exprs)
	{
		Node	   *e = lfirst(lc);

		if (IsA(e, Aggref))
		{
			AttrNumber	attno;
			int			k = agg_kind((Aggref *) e, ifp, input_rel, &attno);

			if (k == 0)
				return;
			if (k != SE_AGG_COUNT_STAR && k != SE_AGG_COUNT)
				only_counts = false;
			if (!tlist_member((Expr *) e, tlist))
			{
				tlist = add_to_flat_tlist(tlist, list_make1(e));
				specs = lappend(specs, list_make2_int(k, attno));
			}
		}
		else if (IsA(e, Var))
		{
			/* must be a grouping column, already in tlist */
			if (!tlist_member((Expr *) e, tlist))
				return;
		}
		else
			return;
	}
	fp->outerrel = input_rel;
	fp->pushdown_safe = true;
	fp->agg_tlist = tlist;
	fp->aggs = specs;

	rows = parse->groupClause ? Max(1, ifp->rows / 10) : 1;
	startup = ifp->tbl->fdw_startup_cost + ifp->tuples * 0.0001 +
		(only_counts ? 0 : ifp->rows * cpu_operator_cost);
	total = startup + rows * cpu_tuple_cost;
	add_path(grouped_rel, (Path *)
			 create_foreign_upper_path(root, grouped_rel, grouped_rel->reltarget, rows,
									   startup, total, NIL, NULL, NIL));
}

static void
seGetForeignUpperPaths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
					   RelOptInfo *output_rel, void *extra)
{
	SeRelInfo  *ifp = input_rel->fdw_private;
	SeRelInfo  *fp;

	if (ifp == NULL || !ifp->pushdown_safe || output_rel->fdw_private != NULL)
		return;
	if (stage != UPPERREL_GROUP_AGG && stage != UPPERREL_ORDERED && stage != UPPERREL_FINAL)
		return;
	fp = palloc0(sizeof(SeRelInfo));
	fp->stage = stage;
	output_rel->fdw_private = fp;
	switch (stage)
	{
		case UPPERREL_GROUP_AGG:
			fp->tbl = ifp->tbl;
			fp->mapping = ifp->mapping;
			add_grouping_paths(root, input_rel, output_rel, (GroupPathExtraData *) extra);
			break;
		case UPPERREL_ORDERED:
			/* base-rel sorted paths were made already; remember for FINAL */
			if (input_rel->reloptkind == RELOPT_BASEREL)
			{
				fp->outerrel = input_rel;
				fp->pushdown_safe = ifp->qp_sort_ok && ifp->local_conds == NIL;
			}
			break;
		case UPPERREL_FINAL:
			add_final_paths(root, input_rel, output_rel, (FinalPathExtraData *) extra);
			break;
		default:
			break;
	}
}

/* ---------------------------------------------------------------------
 * GetForeignPlan
 * ---------------------------------------------------------------------
 */

static ForeignScan *
seGetForeignPlan(PlannerInfo *root, RelOptInfo *foreignrel, Oid foreigntableid,
				 ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	SeRelInfo  *fp = foreignrel->fdw_private;
	SeRelInfo  *bfp = fp;
	RelOptInfo *baserel = foreignrel;
	SeFdwScanPlan sp;
	List	   *local_exprs = NIL;
	List	   *runtime = NIL;
	List	   *fdw_scan_tlist = NIL;
	Index		scan_relid;
	ListCell   *lc;
	SeDslContext ctx;
	List	   *pushed = NIL;

	memset(&sp, 0, sizeof(sp));
	sp.limit_idx = -1;
	sp.offset_idx = -1;

	if (IS_UPPER_REL(foreignrel))
	{
		/* aggregate pushdown */
		baserel = fp->outerrel;
		bfp = baserel->fdw_private;
		scan_relid = 0;
		fdw_scan_tlist = fp->agg_tlist;
		sp.kind = SE_KIND_AGG;
		sp.aggs = fp->aggs;
		foreach(lc, bfp->remote_conds)
			pushed = lappend(pushed, ((RestrictInfo *) lfirst(lc))->clause);
		if (root->parse->havingQual)
			local_exprs = (List *) root->parse->havingQual;
	}
	else
	{
		Relids		outer = best_path->path.param_info ?
		best_path->path.param_info->ppi_req_outer : NULL;

		scan_relid = baserel->relid;
		dsl_check_ctx(&ctx, bfp, baserel, outer);
		foreach(lc, scan_clauses)
		{
			RestrictInfo *ri = lfirst(lc);

			if (ri->pseudoconstant)
				continue;
			if (list_member_ptr(bfp->remote_conds, ri))
				pushed = lappend(pushed, ri->clause);
			else if (list_member_ptr(bfp->local_conds, ri))
				local_exprs = lappend(local_exprs, ri->clause);
			else if (bfp->mapping != NULL && se_dsl_pushable(&ctx, ri->clause))
				pushed = lappend(pushed, ri->clause);
			else
				local_exprs = lappend(local_exprs, ri->clause);
		}
		sp.kind = SE_KIND_SCAN;
		if (best_path->fdw_private != NIL)
		{
			List	   *keys = list_nth(best_path->fdw_private, PP_SORTKEYS);

			sp.sortkeys = sortkeys_from_node(keys);
			if (intVal(list_nth(best_path->fdw_private, PP_HAS_LIMIT)))
			{
				sp.kind = SE_KIND_SEARCH;
				sp.has_limit = true;
			}
		}
		if (sp.sortkeys != NIL)
			sp.kind = SE_KIND_SEARCH;
	}

	/* prepare pushed quals: runtime values -> fdw_exprs */
	dsl_check_ctx(&ctx, bfp, baserel,
				  best_path->path.param_info ? best_path->path.param_info->ppi_req_outer : NULL);
	foreach(lc, pushed)
		sp.quals = lappend(sp.quals, se_dsl_prepare(&ctx, lfirst(lc), &runtime));
	if (sp.has_limit)
	{
		if (root->parse->limitCount)
		{
			sp.limit_idx = list_length(runtime);
			runtime = lappend(runtime, copyObject(root->parse->limitCount));
		}
		if (root->parse->limitOffset)
		{
			sp.offset_idx = list_length(runtime);
			runtime = lappend(runtime, copyObject(root->parse->limitOffset));
		}
	}

	/* columns to fetch */
	if (scan_relid > 0)
	{
		int			i;
		bool		whole = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, bfp->attrs_used);

		for (i = 1; i <= bfp->tbl->natts; i++)
			if (whole || bms_is_member(i - FirstLowInvalidHeapAttributeNumber, bfp->attrs_used))
			{
				if (bfp->tbl->cols[i - 1].kind == SE_COL_DROPPED)
					continue;
				sp.attrs = lappend_int(sp.attrs, i);
				/* _score needs scoring only when some condition scores */
				if (bfp->tbl->cols[i - 1].kind == SE_COL_SCORE && se_dsl_scoring(&ctx, pushed))
					sp.kind = SE_KIND_SEARCH;
			}
		/* the scan feeding UPDATE/DELETE keeps pre-images (xact.c) */
		if (root->parse->resultRelation == (int) baserel->relid &&
			(root->parse->commandType == CMD_UPDATE || root->parse->commandType == CMD_DELETE))
			sp.for_modify = true;
	}
	sp.relid = bfp->tbl->relid;

	return make_foreignscan(tlist, local_exprs, scan_relid, runtime,
							se_fdw_scan_plan_to_list(&sp), fdw_scan_tlist, NIL, outer_plan);
}

/* ---------------------------------------------------------------------
 * Executor
 * ---------------------------------------------------------------------
 */


static void
seBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *fsplan = (ForeignScan *) node->ss.ps.plan;
	SeScanState *ss = palloc0(sizeof(SeScanState));
	MemoryContext old;

	node->fdw_state = ss;
	se_fdw_scan_plan_from_list(fsplan->fdw_private, &ss->plan);
	ss->tbl = se_fdw_table_get(ss->plan.relid);
	ss->estate = node->ss.ps.state;
	ss->param_states = ExecInitExprList(fsplan->fdw_exprs, (PlanState *) node);
	ss->nvalues = list_length(fsplan->fdw_exprs);
	ss->values = palloc0(sizeof(SeDslValue) * Max(1, ss->nvalues));
	ss->cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
									"search_engine scan", ALLOCSET_DEFAULT_SIZES);
	ss->doc_cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
										"search_engine doc", ALLOCSET_DEFAULT_SIZES);
	/* reads the tuplestore; made here: Iterate runs in per-tuple memory */
	old = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	ss->mslot = MakeSingleTupleTableSlot(node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
										 &TTSOpsMinimalTuple);
	MemoryContextSwitchTo(old);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	se_require_started();
	se_engine_authorize(ss->tbl->index, SE_ACL_READ, ss->estate,
						fsplan->scan.scanrelid > 0 ? fsplan->scan.scanrelid :
						bms_next_member(fsplan->fs_relids, -1));
}

static TupleTableSlot *
seIterateForeignScan(ForeignScanState *node)
{
	SeScanState *ss = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	TupleTableSlot *m;
	int			n = slot->tts_tupleDescriptor->natts;
	MemoryContext old;
	bool		found;

	if (!ss->materialized)
		se_fdw_materialize(node, ss);
	m = ss->mslot;
	ExecClearTuple(slot);
	/*
	 * A tuplestore that spilled to disk returns palloc'd tuples the slot
	 * frees on the next call: they must not live in per-tuple memory.
	 */
	old = MemoryContextSwitchTo(ss->cxt);
	found = tuplestore_gettupleslot(ss->store, true, false, m);
	MemoryContextSwitchTo(old);
	if (!found)
		return slot;
	/* the row stays in the tuplestore slot until the next call */
	slot_getallattrs(m);
	memcpy(slot->tts_values, m->tts_values, sizeof(Datum) * n);
	memcpy(slot->tts_isnull, m->tts_isnull, sizeof(bool) * n);
	ExecStoreVirtualTuple(slot);
	return slot;
}

static void
seReScanForeignScan(ForeignScanState *node)
{
	SeScanState *ss = node->fdw_state;

	if (ss->mslot)
		ExecClearTuple(ss->mslot);
	if (ss->store)
	{
		tuplestore_end(ss->store);
		ss->store = NULL;
	}
	ss->materialized = false;
}

static void
seEndForeignScan(ForeignScanState *node)
{
	SeScanState *ss = node->fdw_state;

	if (ss && ss->mslot)
		ExecDropSingleTupleTableSlot(ss->mslot);
	if (ss && ss->store)
	{
		tuplestore_end(ss->store);
		ss->store = NULL;
	}
}

static const char *
kind_name(const SeFdwScanPlan *p)
{
	switch (p->kind)
	{
		case SE_KIND_SCAN:
			return "scan";
		case SE_KIND_SEARCH:
			return p->has_limit ? "top-k search" : "search";
		case SE_KIND_AGG:
			{
				ListCell   *lc;

				foreach(lc, p->aggs)
				{
					int			k = linitial_int((List *) lfirst(lc));

					if (k != SE_AGG_COUNT_STAR && k != SE_AGG_COUNT)
						return "aggregation over doc values";
				}
				return "count";
			}
	}
	return "scan";
}

static void
seExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	SeScanState *ss = node->fdw_state;

	if (!es->verbose)
		return;
	ExplainPropertyText("Index", ss->tbl->index, es);
	ExplainPropertyText("Engine Request", kind_name(&ss->plan), es);
	if (ss->last_request)
		ExplainPropertyText("Elasticsearch DSL", ss->last_request, es);
	else
		ExplainPropertyText("Elasticsearch DSL", se_fdw_request_text(node, ss, true), es);
	if (es->analyze && ss->materialized)
		ExplainPropertyInteger("Engine Hits", NULL, ss->total_hits, es);
}

static bool
seAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func, BlockNumber *totalpages)
{
	return se_fdw_analyze(relation, func, totalpages);
}

static List *
seImportForeignSchema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	return se_fdw_import(stmt, serverOid);
}

PG_FUNCTION_INFO_V1(se_fdw_handler);

/* The FdwRoutine of the search_engine foreign data wrapper. */
Datum
se_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *r = makeNode(FdwRoutine);

	r->GetForeignRelSize = seGetForeignRelSize;
	r->GetForeignPaths = seGetForeignPaths;
	r->GetForeignPlan = seGetForeignPlan;
	r->BeginForeignScan = seBeginForeignScan;
	r->IterateForeignScan = seIterateForeignScan;
	r->ReScanForeignScan = seReScanForeignScan;
	r->EndForeignScan = seEndForeignScan;
	r->GetForeignUpperPaths = seGetForeignUpperPaths;
	r->ExplainForeignScan = seExplainForeignScan;
	r->AnalyzeForeignTable = seAnalyzeForeignTable;
	r->ImportForeignSchema = seImportForeignSchema;
	se_fdw_modify_routines(r);
	PG_RETURN_POINTER(r);
}
