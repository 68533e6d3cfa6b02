/*-------------------------------------------------------------------------
 *
 * deparse.c
 *	  WHERE clauses -> one Elasticsearch query DSL object.
 *
 * SQL has three-valued logic, the DSL two: a row passes WHERE only when
 * the clause is TRUE.  So every expression is translated with a polarity:
 * T(e) = the documents where e is TRUE, F(e) = where e is FALSE, and
 *
 *     T(a AND b) = T(a) AND T(b)        F(a AND b) = F(a) OR F(b)
 *     T(a OR b)  = T(a) OR T(b)         F(a OR b)  = F(a) AND F(b)
 *     T(NOT a)   = F(a)                 F(NOT a)   = T(a)
 *     T(x = v)   = term                 F(x = v)   = exists(x) AND NOT term
 *     T(x IS NULL) = NOT exists(x)      F(x IS NULL) = exists(x)
 *
 * so "NOT (price > 10)" does not return documents without a price, just as
 * PostgreSQL does not.  A node whose needed polarity cannot be expressed
 * exactly (see shippable.c) makes its whole qual local.  Conditions that
 * do not score go to bool.filter; the @@@ operator scores (bool.must).
 *
 * Values: constants are rendered at once; anything else the engine cannot
 * see -- parameters, outer columns of a parameterized join, stable
 * expressions such as now() - interval '1 day' -- becomes a runtime value:
 * se_dsl_prepare replaces it with a sentinel Param and hands the
 * expression to fdw_exprs, which the executor evaluates at every
 * (re)scan.  The DSL is then generated with the values in hand, so a NULL
 * parameter correctly matches nothing, and EXPLAIN shows it as $n.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "datatype/timestamp.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "fdw/fdw.h"

#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

#define MATCH_ALL	"{\"match_all\":{}}"
#define MATCH_NONE	"{\"match_none\":{}}"

static bool dsl_node(SeDslContext *ctx, Node *node, bool positive, StringInfo out);
static bool node_scores(SeDslContext *ctx, Node *node, bool positive);

/* Are we generating (values known or shown as $n), or only checking? */
static inline bool
checking(SeDslContext *ctx)
{
	return ctx->relid != 0;
}

static Node *
strip(Node *n)
{
	while (n && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
}

/* The column a Var of our table refers to (attno > 0), or NULL. */
static SeFdwColumn *
var_column(SeDslContext *ctx, Node *node)
{
	Var		   *var;
	SeFdwColumn *col;

	node = strip(node);
	if (node == NULL || !IsA(node, Var))
		return NULL;
	var = (Var *) node;
	if (var->varlevelsup != 0 || (ctx->relid != 0 && var->varno != ctx->relid))
		return NULL;
	if (var->varattno <= 0 || var->varattno > ctx->tbl->natts)
		return NULL;
	col = &ctx->tbl->cols[var->varattno - 1];
	return col->kind == SE_COL_DROPPED ? NULL : col;
}

static bool
is_whole_row(SeDslContext *ctx, Node *node)
{
	Var		   *var;

	node = strip(node);
	if (node == NULL || !IsA(node, Var))
		return false;
	var = (Var *) node;
	return var->varlevelsup == 0 && var->varattno == 0 &&
		(ctx->relid == 0 || var->varno == ctx->relid);
}

/* ---------------------------------------------------------------------
 * Runtime values
 * ---------------------------------------------------------------------
 */

typedef struct ValueCheck
{
	SeDslContext *ctx;
	bool		ok;
} ValueCheck;

static bool
value_walker(Node *node, ValueCheck *vc)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if (v->varlevelsup == 0 &&
			(v->varno == vc->ctx->relid || !bms_is_member(v->varno, vc->ctx->outer_relids)))
		{
			vc->ok = false;
			return true;
		}
		return false;
	}
	if (IsA(node, PlaceHolderVar) || IsA(node, Aggref) || IsA(node, WindowFunc) ||
		IsA(node, GroupingFunc) || IsA(node, SubLink) || IsA(node, SubPlan) ||
		IsA(node, AlternativeSubPlan) || IsA(node, CurrentOfExpr) ||
		IsA(node, NextValueExpr))
	{
		vc->ok = false;
		return true;
	}
	return expression_tree_walker(node, value_walker, (void *) vc);
}

/* Can node be evaluated outside the engine, before the scan? */
static bool
is_value(SeDslContext *ctx, Node *node)
{
	ValueCheck	vc;

	if (node == NULL)
		return false;
	if (IsA(node, Const))
		return true;
	if (!checking(ctx))
		return IsA(node, Param) && SE_PARAM_IS_SENTINEL((Param *) node);
	if (contain_volatile_functions(node))
		return false;
	vc.ctx = ctx;
	vc.ok = true;
	(void) value_walker(node, &vc);
	return vc.ok;
}

/*
 * The value of node: false when it is only known at run time and we are
 * checking or explaining (then *ref is its $n, 0 for "unknown").
 */
static bool
get_value(SeDslContext *ctx, Node *node, SeDslValue *v, int *ref)
{
	*ref = 0;
	if (IsA(node, Const))
	{
		Const	   *c = (Const *) node;

		v->value = c->constvalue;
		v->isnull = c->constisnull;
		v->type = c->consttype;
		return true;
	}
	if (IsA(node, Param) && SE_PARAM_IS_SENTINEL((Param *) node))
	{
		int			i = SE_PARAM_INDEX((Param *) node);

		*ref = i + 1;
		if (ctx->values != NULL && i < ctx->nvalues)
		{
			*v = ctx->values[i];
			return true;
		}
	}
	v->type = exprType(node);
	v->isnull = false;
	return false;
}

/* ---------------------------------------------------------------------
 * Rendering values
 * ---------------------------------------------------------------------
 */

/* Where a non-finite value sits relative to every value a field holds. */
typedef enum Domain
{
	DOM_IN,						/* an ordinary value */
	DOM_ABOVE,					/* above every value (NaN, +Infinity) */
	DOM_BELOW					/* below every value (-Infinity) */
} Domain;

static Domain
value_domain(const SeDslValue *v)
{
	switch (v->type)
	{
		case FLOAT8OID:
			{
				double		d = DatumGetFloat8(v->value);

				if (isnan(d) || (isinf(d) && d > 0))
					return DOM_ABOVE;
				if (isinf(d))
					return DOM_BELOW;
				return DOM_IN;
			}
		case FLOAT4OID:
			{
				float		f = DatumGetFloat4(v->value);

				if (isnan(f) || (isinf(f) && f > 0))
					return DOM_ABOVE;
				if (isinf(f))
					return DOM_BELOW;
				return DOM_IN;
			}
		case TIMESTAMPTZOID:
			if (TIMESTAMP_IS_NOEND(DatumGetTimestampTz(v->value)))
				return DOM_ABOVE;
			if (TIMESTAMP_IS_NOBEGIN(DatumGetTimestampTz(v->value)))
				return DOM_BELOW;
			return DOM_IN;
		default:
			return DOM_IN;
	}
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/*
 * Append value v for field type ft as JSON.  For dates, op decides the
 * rounding of microseconds to the engine's milliseconds ("=" with
 * sub-millisecond digits cannot match: returns false).
 */
static bool
render_scalar(const SeDslValue *v, const SeMappedField *f, const char *op, StringInfo out)
{
	switch (v->type)
	{
		case TEXTOID:
		case VARCHAROID:
			{
				text	   *t = DatumGetTextPP(v->value);

				se_json_write_string(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				return true;
			}
		case INT2OID:
			appendStringInfo(out, "%d", (int) DatumGetInt16(v->value));
			return true;
		case INT4OID:
			appendStringInfo(out, "%d", DatumGetInt32(v->value));
			return true;
		case INT8OID:
			appendStringInfo(out, INT64_FORMAT, DatumGetInt64(v->value));
			return true;
		case FLOAT8OID:
			appendStringInfo(out, "%.17g", DatumGetFloat8(v->value));
			return true;
		case FLOAT4OID:
			if (f && f->type == SE_FT_FLOAT)
				appendStringInfo(out, "%.9g", (double) DatumGetFloat4(v->value));
			else
				appendStringInfo(out, "%.17g", (double) DatumGetFloat4(v->value));
			return true;
		case BOOLOID:
			appendStringInfoString(out, DatumGetBool(v->value) ? "true" : "false");
			return true;
		case TIMESTAMPTZOID:
			{
				int64		us = DatumGetTimestampTz(v->value) + UNIX_EPOCH_USECS;
				int64		lo = floor_div(us, 1000);
				int64		hi = (us % 1000 == 0) ? lo : lo + 1;
				int64		ms;

				if (strcmp(op, "=") == 0)
				{
					if (lo != hi)
						return false;
					ms = lo;
				}
				else if (strcmp(op, "<") == 0 || strcmp(op, ">=") == 0)
					ms = hi;	/* m*1000 < us  <=>  m < ceil(us/1000) */
				else
					ms = lo;	/* <= and >: floor */
				appendStringInfo(out, INT64_FORMAT, ms);
				return true;
			}
		default:
			break;
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Leaves
 * ---------------------------------------------------------------------
 */

static void
exists_json(const char *field, StringInfo out)
{
	appendStringInfoString(out, "{\"exists\":{\"field\":");
	se_json_write_string(out, field, -1);
	appendStringInfoString(out, "}}");
}

/* Field exists queries use: the mapped field (its path), _id always. */
static const char *
exists_field(const SeFdwColumn *col, const SeColSearch *cs)
{
	if (col->kind == SE_COL_ID)
		return "_id";
	return cs->field ? cs->field->path : col->field;
}

/* {"bool":{"filter":[exists],"must_not":[q]}} */
static void
exists_and_not(const char *field, const char *q, StringInfo out)
{
	appendStringInfoString(out, "{\"bool\":{\"filter\":[");
	exists_json(field, out);
	appendStringInfo(out, "],\"must_not\":[%s]}}", q);
}

static void
must_not(const char *q, StringInfo out)
{
	appendStringInfo(out, "{\"bool\":{\"must_not\":[%s]}}", q);
}

/* The term (or ids) query for "col = value" into out; false if impossible. */
static bool
term_json(SeDslContext *ctx, const SeFdwColumn *col, const SeColSearch *cs,
		  Node *value, StringInfo out)
{
	SeDslValue	v;
	int			ref;
	bool		known = get_value(ctx, value, &v, &ref);

	if (known && v.isnull)
	{
		appendStringInfoString(out, MATCH_NONE);
		return true;
	}
	if (col->kind == SE_COL_ID)
		appendStringInfoString(out, "{\"ids\":{\"values\":[");
	else
	{
		appendStringInfoString(out, "{\"term\":{");
		se_json_write_string(out, cs->term_field, -1);
		appendStringInfoChar(out, ':');
	}
	if (!known)
		appendStringInfo(out, "$%d", ref);
	else if (!render_scalar(&v, cs->field, "=", out))
		return false;
	appendStringInfoString(out, col->kind == SE_COL_ID ? "]}}" : "}}");
	return true;
}

/* Strings longer than ignore_above are not indexed: pushable only if short. */
static bool
term_length_ok(SeDslContext *ctx, const SeColSearch *cs, Node *value)
{
	SeDslValue	v;
	int			ref;

	if (cs->term_max_len <= 0)
		return true;
	if (!IsA(value, Const))
		return false;			/* unknown until run time */
	if (!get_value(ctx, value, &v, &ref) || v.isnull)
		return true;
	if (v.type == TEXTOID || v.type == VARCHAROID)
	{
		text	   *t = DatumGetTextPP(v.value);

		return se_utf16_length(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) <= cs->term_max_len;
	}
	return true;
}

static const char *
commute(const char *op)
{
	if (strcmp(op, "<") == 0)
		return ">";
	if (strcmp(op, "<=") == 0)
		return ">=";
	if (strcmp(op, ">") == 0)
		return "<";
	if (strcmp(op, ">=") == 0)
		return "<=";
	return op;
}

static const char *
negate_op(const char *op)
{
	if (strcmp(op, "=") == 0)
		return "<>";
	if (strcmp(op, "<>") == 0)
		return "=";
	if (strcmp(op, "<") == 0)
		return ">=";
	if (strcmp(op, "<=") == 0)
		return ">";
	if (strcmp(op, ">") == 0)
		return "<=";
	return "<";
}

/*
 * col op value, TRUE side (the FALSE side of "x op v" is the TRUE side of
 * "x negop v" for non-null x, which is what exists() adds).
 */
static bool
comparison_true(SeDslContext *ctx, const SeFdwColumn *col, const SeColSearch *cs,
				const char *op, Node *value, StringInfo out)
{
	SeDslValue	v;
	int			ref;
	bool		known = get_value(ctx, value, &v, &ref);
	const char *ef = exists_field(col, cs);

	if (known && v.isnull)
	{
		appendStringInfoString(out, MATCH_NONE);
		return true;
	}
	if (known && value_domain(&v) != DOM_IN)
	{
		bool		above = value_domain(&v) == DOM_ABOVE;
		bool		all;

		/* x op v for v above (below) every value the field can hold */
		if (strcmp(op, "=") == 0)
			all = false;
		else if (strcmp(op, "<>") == 0)
			all = true;
		else if (op[0] == '<')
			all = above;
		else
			all = !above;
		if (all)
			exists_json(ef, out);
		else
			appendStringInfoString(out, MATCH_NONE);
		return true;
	}
	if (strcmp(op, "=") == 0)
	{
		if (cs->field && cs->field->type == SE_FT_DATE && known)
		{
			StringInfoData b;

			initStringInfo(&b);
			if (!render_scalar(&v, cs->field, "=", &b))
			{
				appendStringInfoString(out, MATCH_NONE);
				return true;
			}
			appendStringInfoString(out, "{\"range\":{");
			se_json_write_string(out, cs->term_field, -1);
			appendStringInfo(out, ":{\"gte\":%s,\"lte\":%s,\"format\":\"epoch_millis\"}}}", b.data, b.data);
			return true;
		}
		if (cs->field && cs->field->type == SE_FT_DATE)
		{
			appendStringInfoString(out, "{\"range\":{");
			se_json_write_string(out, cs->term_field, -1);
			appendStringInfo(out, ":{\"gte\":$%d,\"lte\":$%d,\"format\":\"epoch_millis\"}}}", ref, ref);
			return true;
		}
		return term_json(ctx, col, cs, value, out);
	}
	if (strcmp(op, "<>") == 0)
	{
		StringInfoData t;

		initStringInfo(&t);
		if (!comparison_true(ctx, col, cs, "=", value, &t))
			return false;
		if (col->kind == SE_COL_ID)
			must_not(t.data, out);
		else
			exists_and_not(ef, t.data, out);
		return true;
	}
	/* ranges */
	{
		const char *key = strcmp(op, "<") == 0 ? "lt" : strcmp(op, "<=") == 0 ? "lte" :
		strcmp(op, ">") == 0 ? "gt" : "gte";
		const char *rf = (cs->field && cs->field->type == SE_FT_KEYWORD) ? cs->term_field : cs->field->path;

		appendStringInfoString(out, "{\"range\":{");
		se_json_write_string(out, rf, -1);
		appendStringInfo(out, ":{\"%s\":", key);
		if (!known)
			appendStringInfo(out, "$%d", ref);
		else if (!render_scalar(&v, cs->field, op, out))
			return false;
		if (cs->field->type == SE_FT_DATE)
			appendStringInfoString(out, ",\"format\":\"epoch_millis\"");
		appendStringInfoString(out, "}}}");
		return true;
	}
}

/* Var op value (either order), = <> < <= > >=. */
static bool
dsl_comparison(SeDslContext *ctx, OpExpr *op, const char *opname, bool positive,
			   StringInfo out)
{
	Node	   *l = linitial(op->args);
	Node	   *r = lsecond(op->args);
	SeFdwColumn *col;
	Node	   *value;
	SeColSearch cs;
	const char *eop;

	if ((col = var_column(ctx, l)) != NULL && is_value(ctx, strip(r)))
	{
		value = strip(r);
		eop = opname;
	}
	else if ((col = var_column(ctx, r)) != NULL && is_value(ctx, strip(l)))
	{
		value = strip(l);
		eop = commute(opname);
	}
	else
		return false;
	if (col->is_array)
		return false;
	se_fdw_col_search(col, ctx->mapping, op->inputcollid, &cs);
	if (cs.term_field == NULL)
		return false;
	if (!se_fdw_comparable_types(col->typid, exprType(value),
								 col->kind == SE_COL_ID ? NULL : cs.field))
		return false;
	if (!positive)
	{
		/* FALSE <=> non-null AND the opposite comparison */
		if (!cs.exists_ok)
			return false;
		eop = negate_op(eop);
	}
	if (strcmp(eop, "=") == 0 || strcmp(eop, "<>") == 0)
	{
		if (!term_length_ok(ctx, &cs, value))
			return false;
		if (strcmp(eop, "<>") == 0 && !cs.exists_ok)
			return false;
	}
	else if (!cs.range_ok || col->kind == SE_COL_ID)
		return false;
	if (out == NULL)
		return true;
	return comparison_true(ctx, col, &cs, eop, value, out);
}

/* Elements of an array value (known at this point). */
static void
array_elements(SeDslValue *v, Datum **elems, bool **nulls, int *n)
{
	ArrayType  *a = DatumGetArrayTypeP(v->value);
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;

	get_typlenbyvalalign(ARR_ELEMTYPE(a), &elmlen, &elmbyval, &elmalign);
	deconstruct_array(a, ARR_ELEMTYPE(a), elmlen, elmbyval, elmalign, elems, nulls, n);
	v->type = ARR_ELEMTYPE(a);
}

/* terms (or ids) of the non-null elements; *has_null says if any was NULL. */
static bool
terms_json(SeDslContext *ctx, const SeFdwColumn *col, const SeColSearch *cs,
		   Node *arrnode, StringInfo out, bool *has_null)
{
	SeDslValue	v;
	int			ref;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i,
				written = 0;

	*has_null = false;
	if (!get_value(ctx, arrnode, &v, &ref))
	{
		if (col->kind == SE_COL_ID)
			appendStringInfo(out, "{\"ids\":{\"values\":$%d}}", ref);
		else
		{
			appendStringInfoString(out, "{\"terms\":{");
			se_json_write_string(out, cs->term_field, -1);
			appendStringInfo(out, ":$%d}}", ref);
		}
		return true;
	}
	if (v.isnull)
	{
		*has_null = true;
		appendStringInfoString(out, MATCH_NONE);
		return true;
	}
	array_elements(&v, &elems, &nulls, &n);
	if (col->kind != SE_COL_ID && cs->field &&
		cs->field->type != SE_FT_KEYWORD && cs->field->type != SE_FT_TEXT)
	{
		/*
		 * Numbers, dates, booleans: one exact query per value (the terms
		 * query of the search module mishandles binary terms; see README).
		 */
		appendStringInfoString(out, "{\"bool\":{\"should\":[");
		for (i = 0; i < n; i++)
		{
			SeDslValue	e;
			StringInfoData one;

			if (nulls[i])
			{
				*has_null = true;
				continue;
			}
			e.value = elems[i];
			e.isnull = false;
			e.type = v.type;
			if (value_domain(&e) != DOM_IN)
				continue;		/* NaN / infinity equals no stored value */
			initStringInfo(&one);
			if (cs->field->type == SE_FT_DATE)
			{
				StringInfoData ms;

				initStringInfo(&ms);
				if (!render_scalar(&e, cs->field, "=", &ms))
					continue;	/* sub-millisecond: matches nothing */
				appendStringInfoString(&one, "{\"range\":{");
				se_json_write_string(&one, cs->term_field, -1);
				appendStringInfo(&one, ":{\"gte\":%s,\"lte\":%s,\"format\":\"epoch_millis\"}}}",
								 ms.data, ms.data);
			}
			else
			{
				appendStringInfoString(&one, "{\"term\":{");
				se_json_write_string(&one, cs->term_field, -1);
				appendStringInfoChar(&one, ':');
				if (!render_scalar(&e, cs->field, "=", &one))
					return false;
				appendStringInfoString(&one, "}}");
			}
			appendStringInfo(out, "%s%s", written++ > 0 ? "," : "", one.data);
		}
		appendStringInfoString(out, "],\"minimum_should_match\":1}}");
		if (written == 0)
		{
			resetStringInfo(out);
			appendStringInfoString(out, MATCH_NONE);
		}
		return true;
	}
	if (col->kind == SE_COL_ID)
		appendStringInfoString(out, "{\"ids\":{\"values\":[");
	else
	{
		appendStringInfoString(out, "{\"terms\":{");
		se_json_write_string(out, cs->term_field, -1);
		appendStringInfoString(out, ":[");
	}
	for (i = 0; i < n; i++)
	{
		SeDslValue	e;

		if (nulls[i])
		{
			*has_null = true;
			continue;
		}
		e.value = elems[i];
		e.isnull = false;
		e.type = v.type;
		if (written++ > 0)
			appendStringInfoChar(out, ',');
		if (!render_scalar(&e, cs->field, "=", out))
			return false;
	}
	appendStringInfoString(out, col->kind == SE_COL_ID ? "]}}" : "]}}");
	if (written == 0)
	{
		resetStringInfo(out);
		appendStringInfoString(out, MATCH_NONE);
	}
	return true;
}

/* Every element of a constant text array short enough for ignore_above? */
static bool
array_length_ok(SeDslContext *ctx, const SeColSearch *cs, Node *arrnode)
{
	SeDslValue	v;
	int			ref;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;

	if (cs->term_max_len <= 0)
		return true;
	if (!IsA(arrnode, Const))
		return false;
	if (!get_value(ctx, arrnode, &v, &ref) || v.isnull)
		return true;
	array_elements(&v, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		text	   *t;

		if (nulls[i])
			continue;
		t = DatumGetTextPP(elems[i]);
		if (se_utf16_length(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) > cs->term_max_len)
			return false;
	}
	return true;
}

/* x = ANY(array), x <> ALL(array), v = ANY(array_column). */
static bool
dsl_saop(SeDslContext *ctx, ScalarArrayOpExpr *sa, bool positive, StringInfo out)
{
	const char *opname = se_fdw_comparison_name(sa->opno);
	Node	   *l = linitial(sa->args);
	Node	   *r = lsecond(sa->args);
	SeFdwColumn *col;
	SeColSearch cs;

	if (opname == NULL)
		return false;

	/* 'v' = ANY(array column): a term on a multi-valued field */
	if ((col = var_column(ctx, r)) != NULL && col->is_array && sa->useOr &&
		strcmp(opname, "=") == 0 && is_value(ctx, strip(l)))
	{
		Node	   *value = strip(l);

		if (!positive)
			return false;		/* FALSE needs every element to differ */
		se_fdw_col_search(col, ctx->mapping, sa->inputcollid, &cs);
		if (cs.term_field == NULL || col->kind != SE_COL_FIELD ||
			!se_fdw_comparable_types(col->elemtype, exprType(value), cs.field) ||
			!term_length_ok(ctx, &cs, value))
			return false;
		if (out == NULL)
			return true;
		return comparison_true(ctx, col, &cs, "=", value, out);
	}

	if ((col = var_column(ctx, l)) == NULL || col->is_array || !is_value(ctx, strip(r)))
		return false;
	r = strip(r);
	if (!((sa->useOr && strcmp(opname, "=") == 0) || (!sa->useOr && strcmp(opname, "<>") == 0)))
		return false;
	se_fdw_col_search(col, ctx->mapping, sa->inputcollid, &cs);
	if (cs.term_field == NULL)
		return false;
	if (!se_fdw_comparable_types(col->typid, get_element_type(exprType(r)),
								 col->kind == SE_COL_ID ? NULL : cs.field))
		return false;
	if (!array_length_ok(ctx, &cs, r))
		return false;
	/* "x <> ALL" is the negation of "x = ANY" */
	if (!sa->useOr)
		positive = !positive;
	if (!positive && !cs.exists_ok)
		return false;
	if (out == NULL)
		return true;
	{
		StringInfoData t;
		bool		has_null;

		initStringInfo(&t);
		if (!terms_json(ctx, col, &cs, r, &t, &has_null))
			return false;
		if (positive)
			appendStringInfoString(out, t.data);
		else if (has_null)
			appendStringInfoString(out, MATCH_NONE);	/* never FALSE */
		else if (col->kind == SE_COL_ID)
			must_not(t.data, out);
		else
			exists_and_not(exists_field(col, &cs), t.data, out);
	}
	return true;
}

/*
 * A LIKE pattern that is a literal prefix followed by one '%': the prefix
 * (unescaped); *exact when there is no wildcard at all.
 */
static char *
like_prefix(const char *p, int len, bool *exact, bool *all)
{
	StringInfoData b;
	int			i;

	initStringInfo(&b);
	*exact = false;
	*all = false;
	for (i = 0; i < len; i++)
	{
		char		c = p[i];

		if (c == '\\')
		{
			if (i + 1 >= len)
				return NULL;
			appendStringInfoChar(&b, p[++i]);
			continue;
		}
		if (c == '_')
			return NULL;
		if (c == '%')
		{
			/* only trailing %s allowed */
			for (; i < len; i++)
				if (p[i] != '%')
					return NULL;
			*all = (b.len == 0);
			return b.data;
		}
		appendStringInfoChar(&b, c);
	}
	*exact = true;
	return b.data;
}

static bool
dsl_like(SeDslContext *ctx, OpExpr *op, bool negated, bool positive, StringInfo out)
{
	SeFdwColumn *col = var_column(ctx, linitial(op->args));
	Node	   *pat = strip(lsecond(op->args));
	SeColSearch cs;
	text	   *pt;
	char	   *prefix;
	bool		exact,
				all;
	StringInfoData t;

	if (col == NULL || col->is_array || col->kind != SE_COL_FIELD || pat == NULL ||
		!IsA(pat, Const) || ((Const *) pat)->constisnull)
		return false;
	if (exprType(pat) != TEXTOID && exprType(pat) != VARCHAROID)
		return false;
	se_fdw_col_search(col, ctx->mapping, op->inputcollid, &cs);
	if (!se_fdw_comparable_types(col->typid, TEXTOID, cs.field) || cs.term_field == NULL)
		return false;
	pt = DatumGetTextPP(((Const *) pat)->constvalue);
	prefix = like_prefix(VARDATA_ANY(pt), VARSIZE_ANY_EXHDR(pt), &exact, &all);
	if (prefix == NULL)
		return false;
	if (negated)
		positive = !positive;
	/* the FALSE side needs exists; a bare '%' is IS NOT NULL */
	if ((!positive || all) && !cs.exists_ok)
		return false;
	if (exact)
	{
		if (cs.term_max_len > 0 && se_utf16_length(prefix, strlen(prefix)) > cs.term_max_len)
			return false;
	}
	else if (!cs.prefix_ok && !all)
		return false;
	if (out == NULL)
		return true;
	initStringInfo(&t);
	if (all)
		exists_json(exists_field(col, &cs), &t);
	else
	{
		appendStringInfo(&t, "{\"%s\":{", exact ? "term" : "prefix");
		se_json_write_string(&t, cs.term_field, -1);
		appendStringInfoChar(&t, ':');
		se_json_write_string(&t, prefix, -1);
		appendStringInfoString(&t, "}}");
	}
	if (positive)
		appendStringInfoString(out, t.data);
	else if (all)
		appendStringInfoString(out, MATCH_NONE);
	else
		exists_and_not(exists_field(col, &cs), t.data, out);
	return true;
}

/* The @@@ operator. */
static bool
dsl_match(SeDslContext *ctx, OpExpr *op, SeMatchKind kind, bool positive, StringInfo out)
{
	Node	   *l = linitial(op->args);
	Node	   *r = strip(lsecond(op->args));
	SeFdwColumn *col = NULL;
	SeDslValue	v;
	int			ref;
	bool		known;
	StringInfoData t;

	if (!is_value(ctx, r))
		return false;
	switch (kind)
	{
		case SE_MATCH_TEXT:
		case SE_MATCH_TEXT_ARRAY:
			col = var_column(ctx, l);
			if (col == NULL || col->kind != SE_COL_FIELD)
				return false;
			break;
		case SE_MATCH_DSL:
			col = var_column(ctx, l);
			if (col == NULL || col->kind != SE_COL_SOURCE)
				return false;
			break;
		case SE_MATCH_ROW:
			if (!is_whole_row(ctx, l))
				return false;
			break;
		case SE_MATCH_NONE:
			return false;
	}
	if (out == NULL)
		return true;
	known = get_value(ctx, r, &v, &ref);
	if (known && v.isnull)
	{
		appendStringInfoString(out, MATCH_NONE);
		return true;
	}
	initStringInfo(&t);
	if (kind == SE_MATCH_TEXT || kind == SE_MATCH_TEXT_ARRAY)
	{
		appendStringInfoString(&t, "{\"match\":{");
		se_json_write_string(&t, col->field, -1);
		appendStringInfoChar(&t, ':');
		if (!known)
			appendStringInfo(&t, "$%d", ref);
		else
		{
			text	   *q = DatumGetTextPP(v.value);

			se_json_write_string(&t, VARDATA_ANY(q), VARSIZE_ANY_EXHDR(q));
		}
		appendStringInfoString(&t, "}}");
	}
	else if (!known)
		appendStringInfo(&t, "$%d", ref);
	else
	{
		Jsonb	   *jb = DatumGetJsonbP(v.value);

		if (!JB_ROOT_IS_OBJECT(jb))
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("the right operand of @@@ must be a query DSL object, such as {\"match\": {\"name\": \"shoe\"}}"),
					 errdetail("parsing_exception")));
		appendStringInfoString(&t, JsonbToCString(NULL, &jb->root, VARSIZE(jb)));
	}
	if (positive)
		appendStringInfoString(out, t.data);
	else
		must_not(t.data, out);
	return true;
}

/* col IS [NOT] NULL */
static bool
dsl_nulltest(SeDslContext *ctx, NullTest *nt, bool positive, StringInfo out)
{
	SeFdwColumn *col = var_column(ctx, (Node *) nt->arg);
	SeColSearch cs;
	bool		want_null;

	if (col == NULL || nt->argisrow)
		return false;
	se_fdw_col_search(col, ctx->mapping, InvalidOid, &cs);
	if (!cs.exists_ok)
		return false;
	if (out == NULL)
		return true;
	want_null = (nt->nulltesttype == IS_NULL) == positive;
	if (col->kind == SE_COL_ID)
		appendStringInfoString(out, want_null ? MATCH_NONE : MATCH_ALL);
	else if (want_null)
	{
		StringInfoData e;

		initStringInfo(&e);
		exists_json(exists_field(col, &cs), &e);
		must_not(e.data, out);
	}
	else
		exists_json(exists_field(col, &cs), out);
	return true;
}

static void
bool_term(const SeColSearch *cs, bool value, StringInfo out)
{
	appendStringInfoString(out, "{\"term\":{");
	se_json_write_string(out, cs->term_field, -1);
	appendStringInfo(out, ":%s}}", value ? "true" : "false");
}

/* A boolean column used as a condition, or IS [NOT] TRUE/FALSE/UNKNOWN. */
static bool
dsl_bool_column(SeDslContext *ctx, Node *arg, int test, bool positive, StringInfo out)
{
	SeFdwColumn *col = var_column(ctx, arg);
	SeColSearch cs;
	StringInfoData t;

	if (col == NULL || col->is_array || col->typid != BOOLOID)
		return false;
	se_fdw_col_search(col, ctx->mapping, InvalidOid, &cs);
	if (cs.term_field == NULL)
		return false;
	if ((test == IS_UNKNOWN || test == IS_NOT_UNKNOWN) && !cs.exists_ok)
		return false;
	if (out == NULL)
		return true;
	initStringInfo(&t);
	switch (test)
	{
		case -1:				/* the bare column: TRUE / FALSE */
			bool_term(&cs, positive, out);
			return true;
		case IS_TRUE:
		case IS_NOT_TRUE:
			bool_term(&cs, true, &t);
			break;
		case IS_FALSE:
		case IS_NOT_FALSE:
			bool_term(&cs, false, &t);
			break;
		default:
			exists_json(cs.field->path, &t);
			break;
	}
	/* IS [NOT] x never yields NULL: FALSE is the complement */
	if (test == IS_NOT_TRUE || test == IS_NOT_FALSE || test == IS_UNKNOWN)
		positive = !positive;
	if (positive)
		appendStringInfoString(out, t.data);
	else
		must_not(t.data, out);
	return true;
}

/* ---------------------------------------------------------------------
 * Composition
 * ---------------------------------------------------------------------
 */

static void
append_list(StringInfo out, const char *key, List *items, bool *first)
{
	ListCell   *lc;
	bool		f = true;

	if (items == NIL)
		return;
	appendStringInfo(out, "%s\"%s\":[", *first ? "" : ",", key);
	*first = false;
	foreach(lc, items)
	{
		appendStringInfo(out, "%s%s", f ? "" : ",", (char *) lfirst(lc));
		f = false;
	}
	appendStringInfoChar(out, ']');
}

/* AND of children (each with the given polarity); scoring ones in must. */
static bool
dsl_and(SeDslContext *ctx, List *args, bool positive, StringInfo out)
{
	ListCell   *lc;
	List	   *must = NIL;
	List	   *filter = NIL;
	bool		first = true;

	foreach(lc, args)
	{
		StringInfoData c;

		if (out == NULL)
		{
			if (!dsl_node(ctx, lfirst(lc), positive, NULL))
				return false;
			continue;
		}
		initStringInfo(&c);
		if (!dsl_node(ctx, lfirst(lc), positive, &c))
			return false;
		if (node_scores(ctx, lfirst(lc), positive))
			must = lappend(must, c.data);
		else
			filter = lappend(filter, c.data);
	}
	if (out == NULL)
		return true;
	if (list_length(must) == 1 && filter == NIL)
	{
		appendStringInfoString(out, linitial(must));
		return true;
	}
	appendStringInfoString(out, "{\"bool\":{");
	append_list(out, "must", must, &first);
	append_list(out, "filter", filter, &first);
	if (first)
		appendStringInfoString(out, "\"filter\":[]");
	appendStringInfoString(out, "}}");
	return true;
}

/* OR of children (each with the given polarity). */
static bool
dsl_or(SeDslContext *ctx, List *args, bool positive, StringInfo out)
{
	ListCell   *lc;
	List	   *should = NIL;
	bool		first = true;

	foreach(lc, args)
	{
		StringInfoData c;

		if (out == NULL)
		{
			if (!dsl_node(ctx, lfirst(lc), positive, NULL))
				return false;
			continue;
		}
		initStringInfo(&c);
		if (!dsl_node(ctx, lfirst(lc), positive, &c))
			return false;
		should = lappend(should, c.data);
	}
	if (out == NULL)
		return true;
	appendStringInfoString(out, "{\"bool\":{");
	append_list(out, "should", should, &first);
	appendStringInfoString(out, ",\"minimum_should_match\":1}}");
	return true;
}

/* Does the translation of node with this polarity score (contain a
 * positive @@@)? */
static bool
node_scores(SeDslContext *ctx, Node *node, bool positive)
{
	if (node == NULL)
		return false;
	if (IsA(node, BoolExpr))
	{
		BoolExpr   *b = (BoolExpr *) node;
		ListCell   *lc;

		if (b->boolop == NOT_EXPR)
			return node_scores(ctx, linitial(b->args), !positive);
		foreach(lc, b->args)
			if (node_scores(ctx, lfirst(lc), positive))
				return true;
		return false;
	}
	if (IsA(node, OpExpr))
		return positive && se_fdw_match_kind(((OpExpr *) node)->opfuncid) != SE_MATCH_NONE;
	return false;
}

/* Translate node with polarity positive (TRUE side) or not (FALSE side). */
static bool
dsl_node(SeDslContext *ctx, Node *node, bool positive, StringInfo out)
{
	check_stack_depth();
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;

				if (b->boolop == NOT_EXPR)
					return dsl_node(ctx, linitial(b->args), !positive, out);
				if ((b->boolop == AND_EXPR) == positive)
					return dsl_and(ctx, b->args, positive, out);
				return dsl_or(ctx, b->args, positive, out);
			}
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) node;
				SeMatchKind mk;
				const char *name;

				if (list_length(op->args) != 2)
					return false;
				mk = se_fdw_match_kind(op->opfuncid);
				if (mk != SE_MATCH_NONE)
					return dsl_match(ctx, op, mk, positive, out);
				if ((name = se_fdw_comparison_name(op->opno)) != NULL)
					return dsl_comparison(ctx, op, name, positive, out);
				if (op->opno < FirstGenbkiObjectId &&
					(op->opfuncid == F_TEXTLIKE || op->opfuncid == F_TEXTNLIKE))
					return dsl_like(ctx, op, op->opfuncid == F_TEXTNLIKE, positive, out);
				return false;
			}
		case T_ScalarArrayOpExpr:
			return dsl_saop(ctx, (ScalarArrayOpExpr *) node, positive, out);
		case T_NullTest:
			return dsl_nulltest(ctx, (NullTest *) node, positive, out);
		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;

				return dsl_bool_column(ctx, (Node *) bt->arg, (int) bt->booltesttype, positive, out);
			}
		case T_Var:
		case T_RelabelType:
			return dsl_bool_column(ctx, node, -1, positive, out);
		case T_Const:
			{
				Const	   *c = (Const *) node;

				if (c->consttype != BOOLOID)
					return false;
				if (out)
					appendStringInfoString(out,
										   (!c->constisnull && DatumGetBool(c->constvalue) == positive)
										   ? MATCH_ALL : MATCH_NONE);
				return true;
			}
		default:
			return false;
	}
}

/* ---------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------
 */

/* Can clause (a WHERE or join condition) be evaluated by the engine? */
bool
se_dsl_pushable(SeDslContext *ctx, Expr *clause)
{
	return dsl_node(ctx, (Node *) clause, true, NULL);
}

typedef struct PrepareCtx
{
	SeDslContext *ctx;
	List	   *runtime;
} PrepareCtx;

static Node *
prepare_mutator(Node *node, PrepareCtx *pc)
{
	if (node == NULL)
		return NULL;
	/* constants stay (their values decide pushability at plan time) */
	if (IsA(strip(node), Const))
		return node;
	if (!IsA(node, RelabelType) && is_value(pc->ctx, node))
	{
		Param	   *p = makeNode(Param);

		p->paramkind = PARAM_EXTERN;
		p->paramid = SE_PARAM_SENTINEL_BASE - list_length(pc->runtime);
		p->paramtype = exprType(node);
		p->paramtypmod = exprTypmod(node);
		p->paramcollid = exprCollation(node);
		p->location = -1;
		pc->runtime = lappend(pc->runtime, copyObject(node));
		return (Node *) p;
	}
	if (IsA(node, RelabelType) && is_value(pc->ctx, node))
	{
		/* a relabeled runtime value: the value itself, as its own type */
		return prepare_mutator((Node *) ((RelabelType *) node)->arg, pc);
	}
	return expression_tree_mutator(node, prepare_mutator, (void *) pc);
}

/*
 * A copy of a pushable clause whose runtime values are sentinel Params;
 * the values' expressions are appended to *runtime (they go to fdw_exprs,
 * in this order).
 */
Expr *
se_dsl_prepare(SeDslContext *ctx, Expr *clause, List **runtime)
{
	PrepareCtx	pc;
	Expr	   *res;

	pc.ctx = ctx;
	pc.runtime = *runtime;
	res = (Expr *) prepare_mutator((Node *) clause, &pc);
	*runtime = pc.runtime;
	return res;
}

/* Does the AND of quals score? */
bool
se_dsl_scoring(SeDslContext *ctx, List *quals)
{
	ListCell   *lc;

	foreach(lc, quals)
		if (node_scores(ctx, lfirst(lc), true))
			return true;
	return false;
}

/*
 * The query object for the AND of the prepared quals (generation mode:
 * ctx->relid is 0).  Runtime values come from ctx->values, or show as $n
 * when that is NULL (EXPLAIN without execution).
 */
void
se_dsl_query(SeDslContext *ctx, List *quals, StringInfo out)
{
	Assert(!checking(ctx));
	ctx->scoring = se_dsl_scoring(ctx, quals);
	/* through a filtered alias: its filter beside the query, as ES's */
	if (ctx->tbl->filter)
		appendStringInfoString(out, "{\"bool\":{\"must\":[");
	if (quals == NIL)
		appendStringInfoString(out, MATCH_ALL);
	else if (!dsl_and(ctx, quals, true, out))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not generate the query for foreign table \"%s\"", ctx->tbl->relname),
				 errdetail("The mapping of index \"%s\" changed since the plan was made.", ctx->tbl->index),
				 errhint("Run the statement again.")));
	if (ctx->tbl->filter)
		appendStringInfo(out, "],\"filter\":[%s]}}", ctx->tbl->filter);
}

/* "sort":[...] for the sort keys. */
void
se_dsl_sort(SeDslContext *ctx, List *sortkeys, StringInfo out)
{
	ListCell   *lc;
	bool		first = true;

	appendStringInfoString(out, "\"sort\":[");
	foreach(lc, sortkeys)
	{
		SeSortKey  *k = lfirst(lc);

		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		if (k->attno == 0)
			appendStringInfo(out, "{\"_score\":\"%s\"}", k->desc ? "desc" : "asc");
		else
		{
			SeFdwColumn *col = &ctx->tbl->cols[k->attno - 1];
			SeColSearch cs;

			se_fdw_col_search(col, ctx->mapping, col->collation, &cs);
			appendStringInfoChar(out, '{');
			se_json_write_string(out, cs.field ? cs.field->path : col->field, -1);
			appendStringInfo(out, ":{\"order\":\"%s\",\"missing\":\"%s\"}}",
							 k->desc ? "desc" : "asc", k->nulls_first ? "_first" : "_last");
		}
	}
	appendStringInfoChar(out, ']');
}
