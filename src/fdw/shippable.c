/*-------------------------------------------------------------------------
 *
 * shippable.c
 *	  What the engine can evaluate exactly as PostgreSQL would.
 *
 * A qual is pushed only when the engine's answer equals PostgreSQL's for
 * every document, so results never depend on where a condition ran:
 *
 *   keyword   = / <> / IN / LIKE 'p%' on text or varchar columns with a
 *             deterministic collation (engine terms are byte-exact); range
 *             comparisons and sorting only under the C collation (the
 *             engine orders bytes).  A keyword field with ignore_above
 *             does not index longer values, so on it only = / IN of short
 *             enough constants are pushed (no exists, no prefix, no range).
 *   text      analysed: only the @@@ operator; = / IN go to a keyword
 *             multi-field (name.keyword) when there is one.
 *   numbers   integer columns on long/integer/short/byte fields, float8 on
 *             double, float4 (compared with float4 only) on float:
 *             the engine compares the same values PostgreSQL sees.
 *   date      timestamptz columns: values are epoch milliseconds on both
 *             sides (convert.c reads dates with the field's format), and
 *             deparse.c rounds constants with microseconds correctly.
 *   boolean   bool columns.
 *   _id       = / <> / IN (the ids query).
 *
 * exists (IS [NOT] NULL, and the "false" side of a negated comparison)
 * needs doc values or an index that holds every value.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_language.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/syscache.h"

#include "fdw/fdw.h"

/* The @@@ functions, recognised by their C symbol (prosrc). */
SeMatchKind
se_fdw_match_kind(Oid funcid)
{
	HeapTuple	tp;
	SeMatchKind kind = SE_MATCH_NONE;

	tp = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tp))
	{
		Form_pg_proc p = (Form_pg_proc) GETSTRUCT(tp);

		if (p->prolang == ClanguageId)
		{
			bool		isnull;
			Datum		d = SysCacheGetAttr(PROCOID, tp, Anum_pg_proc_prosrc, &isnull);

			if (!isnull)
			{
				char	   *src = TextDatumGetCString(d);

				if (strcmp(src, "se_fdw_match_text") == 0)
					kind = SE_MATCH_TEXT;
				else if (strcmp(src, "se_fdw_match_text_array") == 0)
					kind = SE_MATCH_TEXT_ARRAY;
				else if (strcmp(src, "se_fdw_match_dsl") == 0)
					kind = SE_MATCH_DSL;
				else if (strcmp(src, "se_fdw_match_row") == 0)
					kind = SE_MATCH_ROW;
			}
		}
		ReleaseSysCache(tp);
	}
	return kind;
}

/* Name of a builtin comparison operator, or NULL. */
const char *
se_fdw_comparison_name(Oid opno)
{
	static const char *const names[] = {"=", "<>", "<", "<=", ">", ">="};
	char	   *name;
	int			i;

	if (opno >= FirstGenbkiObjectId)
		return NULL;
	name = get_opname(opno);
	if (name == NULL)
		return NULL;
	for (i = 0; i < lengthof(names); i++)
		if (strcmp(name, names[i]) == 0)
			return names[i];
	return NULL;
}

static bool
is_text_type(Oid t)
{
	return t == TEXTOID || t == VARCHAROID;
}

static bool
is_int_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}

/*
 * Can a value of type vtype be compared in the engine with a column of
 * type ctype holding field f, with PostgreSQL's result?  (f NULL: _id.)
 */
bool
se_fdw_comparable_types(Oid ctype, Oid vtype, const SeMappedField *f)
{
	if (f == NULL)
		return is_text_type(ctype) && is_text_type(vtype);
	switch (f->type)
	{
		case SE_FT_TEXT:
		case SE_FT_KEYWORD:
			return is_text_type(ctype) && is_text_type(vtype);
		case SE_FT_LONG:
		case SE_FT_INTEGER:
		case SE_FT_SHORT:
		case SE_FT_BYTE:
			return is_int_type(ctype) && is_int_type(vtype);
		case SE_FT_DOUBLE:
			return ctype == FLOAT8OID && (vtype == FLOAT8OID || vtype == FLOAT4OID);
		case SE_FT_FLOAT:
			return ctype == FLOAT4OID && vtype == FLOAT4OID;
		case SE_FT_BOOLEAN:
			return ctype == BOOLOID && vtype == BOOLOID;
		case SE_FT_DATE:
			return ctype == TIMESTAMPTZOID && vtype == TIMESTAMPTZOID;
		case SE_FT_OBJECT:
		case SE_FT_GEO_POINT:
			return false;
	}
	return false;
}

/* The column's natural type family for its field (scalar or element). */
static bool
column_type_ok(const SeFdwColumn *col, const SeMappedField *f)
{
	Oid			t = col->is_array ? col->elemtype : col->typid;

	return se_fdw_comparable_types(t, t, f);
}

static bool
collation_c(Oid coll)
{
	return OidIsValid(coll) && lc_collate_is_c(coll);
}

/* Does collation coll order as the engine does (bytes, "C")? */
bool
se_fdw_collation_c(Oid coll)
{
	return collation_c(coll);
}

/*
 * How a column can be searched in the engine (see the file header).
 * collation: the collation the expression compares with.
 */
void
se_fdw_col_search(const SeFdwColumn *col, const SeMapping *m, Oid collation,
				  SeColSearch *out)
{
	const SeMappedField *f;
	bool		textual;

	memset(out, 0, sizeof(*out));
	if (col->kind == SE_COL_ID)
	{
		if (is_text_type(col->typid) &&
			(!OidIsValid(collation) || get_collation_isdeterministic(collation)))
		{
			out->term_field = "_id";
			out->exists_ok = true;
		}
		return;
	}
	if (col->kind != SE_COL_FIELD || m == NULL)
		return;
	f = se_mapping_find(m, col->field);
	out->field = f;
	if (f == NULL || !column_type_ok(col, f))
		return;
	textual = (f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD);
	if (textual && OidIsValid(collation) && !get_collation_isdeterministic(collation))
		return;

	switch (f->type)
	{
		case SE_FT_KEYWORD:
			if (f->index)
			{
				out->term_field = f->path;
				out->term_max_len = f->ignore_above;
			}
			if (f->ignore_above == 0)
			{
				out->exists_ok = f->index || f->doc_values;
				out->prefix_ok = f->index;
				out->range_ok = f->index && collation_c(collation);
				out->sortable = f->doc_values && collation_c(collation) && !col->is_array;
				out->aggregatable = f->doc_values;
				if (f->doc_values)
					out->agg_field = f->path;
			}
			break;
		case SE_FT_TEXT:
			{
				int			i;

				/* exact values through a keyword multi-field */
				for (i = 0; i < f->nmulti_fields; i++)
				{
					const SeMappedField *sub = f->multi_fields[i];

					if (sub->type == SE_FT_KEYWORD && sub->index)
					{
						out->term_field = sub->path;
						out->term_max_len = sub->ignore_above;
						break;
					}
				}
				/* GROUP BY through a keyword multi-field with doc values */
				for (i = 0; i < f->nmulti_fields; i++)
				{
					const SeMappedField *sub = f->multi_fields[i];

					if (sub->type == SE_FT_KEYWORD && sub->doc_values)
					{
						out->agg_field = sub->path;
						out->agg_max_len = sub->ignore_above;
						break;
					}
				}
				break;
			}
		case SE_FT_LONG:
		case SE_FT_INTEGER:
		case SE_FT_SHORT:
		case SE_FT_BYTE:
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
		case SE_FT_DATE:
		case SE_FT_BOOLEAN:
			if (f->index)
				out->term_field = f->path;
			out->exists_ok = f->index || f->doc_values;
			out->range_ok = f->index && f->type != SE_FT_BOOLEAN;
			out->sortable = f->doc_values && !col->is_array;
			out->aggregatable = f->doc_values;
			if (f->doc_values)
				out->agg_field = f->path;
			break;
		case SE_FT_GEO_POINT:
			out->exists_ok = f->index || f->doc_values;
			break;
		case SE_FT_OBJECT:
			break;
	}
}
