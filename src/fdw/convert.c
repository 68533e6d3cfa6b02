/*-------------------------------------------------------------------------
 *
 * convert.c
 *	  _source JSON <-> column values, and which column types can hold
 *	  which field types.
 *
 * Reading: a column's field is looked up in the parsed _source with ES's
 * path semantics ("a.b" finds {"a": {"b": 1}}, {"a.b": 1} and, through
 * arrays of objects, every b of {"a": [{"b": 1}, {"b": 2}]}).  No value
 * (or only nulls) is SQL NULL; one value fills a scalar column; an array
 * column takes them all; a scalar column holding several values is an
 * error naming the column and the document, never a silent pick.  Dates
 * are read with the field's own format (epoch_millis included) into
 * timestamptz, exactly as the engine indexes them, so pushed-down
 * comparisons and local ones agree.
 *
 * Writing: a row becomes a _source object; dotted field paths become
 * nested objects; NULL columns are left out.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "fdw/fdw.h"

SeConvErrorPos se_fdw_conv_pos;

#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/* ---------------------------------------------------------------------
 * Path lookup
 * ---------------------------------------------------------------------
 */

static void
add_value(SeFieldValues *out, const SeJson *v, int *cap)
{
	if (v->type == SE_JSON_ARRAY)
	{
		int			i;

		for (i = 0; i < v->u.a.count; i++)
			add_value(out, v->u.a.items[i], cap);
		return;
	}
	if (out->n == *cap)
	{
		*cap = *cap ? *cap * 2 : 4;
		out->v = out->v ? repalloc(out->v, sizeof(SeJson *) * *cap)
			: palloc(sizeof(SeJson *) * *cap);
	}
	out->v[out->n++] = v;
}

static void
collect(const SeJson *node, const char *path, int pathlen, SeFieldValues *out,
		int *cap, int *hits)
{
	int			i;

	if (node->type == SE_JSON_ARRAY)
	{
		for (i = 0; i < node->u.a.count; i++)
			collect(node->u.a.items[i], path, pathlen, out, cap, hits);
		return;
	}
	if (node->type != SE_JSON_OBJECT)
		return;
	for (i = 0; i < node->u.o.count; i++)
	{
		const SeJsonMember *m = &node->u.o.members[i];

		if (m->keylen > pathlen || memcmp(m->key, path, m->keylen) != 0)
			continue;
		if (m->keylen == pathlen)
		{
			(*hits)++;
			out->single = m->value;
			add_value(out, m->value, cap);
		}
		else if (path[m->keylen] == '.')
			collect(m->value, path + m->keylen + 1, pathlen - m->keylen - 1,
					out, cap, hits);
	}
}

/* Every value of path in doc (see the file header). */
void
se_fdw_lookup_path(const SeJson *doc, const char *path, SeFieldValues *out)
{
	int			cap = 0;
	int			hits = 0;

	out->n = 0;
	out->v = NULL;
	out->single = NULL;
	collect(doc, path, strlen(path), out, &cap, &hits);
	if (hits != 1)
		out->single = NULL;
}

/* ---------------------------------------------------------------------
 * Reading
 * ---------------------------------------------------------------------
 */

void
se_fdw_conv_init(SeColConv *cv, SeFdwColumn *col, const SeMappedField *field)
{
	Oid			t = col->is_array ? col->elemtype : col->typid;
	Oid			infunc;

	memset(cv, 0, sizeof(*cv));
	cv->col = col;
	cv->field = field;
	getTypeInputInfo(t, &infunc, &cv->ioparam);
	fmgr_info(infunc, &cv->inproc);
	if (col->is_array)
		get_typlenbyvalalign(col->elemtype, &cv->elmlen, &cv->elmbyval, &cv->elmalign);
}

static const char *
doc_id_for_error(void)
{
	return se_fdw_conv_pos.doc_id ? se_fdw_conv_pos.doc_id : "?";
}

static void
cannot_hold(SeColConv *cv, Oid t, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("column \"%s\" of foreign table \"%s\" cannot hold %s",
					cv->col->name, se_fdw_conv_pos.relname ? se_fdw_conv_pos.relname : "?", what),
			 errdetail("Field \"%s\" of document \"%s\"; the column type is %s.",
					   cv->col->field ? cv->col->field : cv->col->name,
					   doc_id_for_error(), format_type_be(t))));
}

/* Text form of a scalar (or the JSON text of an object / array). */
static char *
json_as_text(const SeJson *v, int *len)
{
	StringInfoData b;

	switch (v->type)
	{
		case SE_JSON_STRING:
			*len = v->u.s.len;
			return (char *) v->u.s.str;
		case SE_JSON_NUMBER:
			*len = v->u.n.len;
			return pnstrdup(v->u.n.text, v->u.n.len);
		case SE_JSON_TRUE:
			*len = 4;
			return "true";
		case SE_JSON_FALSE:
			*len = 5;
			return "false";
		default:
			initStringInfo(&b);
			se_json_write(&b, v);
			*len = b.len;
			return b.data;
	}
}

static Datum
input_call(SeColConv *cv, const char *s, int len)
{
	char	   *z = (s[len] == '\0') ? (char *) s : pnstrdup(s, len);

	return InputFunctionCall(&cv->inproc, z, cv->ioparam,
							 cv->col->is_array ? -1 : cv->col->typmod);
}

static int64
json_millis(SeColConv *cv, Oid t, const SeJson *v)
{
	SeError		err;
	int64		ms;

	if (cv->field && cv->field->type == SE_FT_DATE)
	{
		se_error_init(&err);
		if (!se_field_sortable_value(cv->field, v, &ms, &err))
		{
			char	   *what = psprintf("the value of date field \"%s\": %s",
										cv->field->path, err.reason);

			cannot_hold(cv, t, what);
		}
		return ms;
	}
	if (v->type == SE_JSON_NUMBER && v->u.n.is_int)
		return v->u.n.i;
	if (v->type == SE_JSON_STRING)
	{
		SeError		e2;

		se_error_init(&e2);
		if (se_date_parse(v->u.s.str, v->u.s.len, SE_DATE_DEFAULT_FORMAT, &ms, &e2))
			return ms;
	}
	cannot_hold(cv, t, psprintf("a %s value as a date", se_json_type_name(v->type)));
	return 0;					/* keep compiler quiet */
}

/* One non-null JSON value as a Datum of type t (the column or element type). */
static Datum
scalar_value(SeColConv *cv, Oid t, const SeJson *v)
{
	const char *s;
	int			len;

	switch (t)
	{
		case TEXTOID:
			s = json_as_text(v, &len);
			return PointerGetDatum(cstring_to_text_with_len(s, len));
		case BOOLOID:
			if (v->type == SE_JSON_TRUE)
				return BoolGetDatum(true);
			if (v->type == SE_JSON_FALSE)
				return BoolGetDatum(false);
			if (v->type == SE_JSON_STRING &&
				(strcmp(v->u.s.str, "true") == 0 || strcmp(v->u.s.str, "false") == 0))
				return BoolGetDatum(v->u.s.str[0] == 't');
			cannot_hold(cv, t, psprintf("a %s value", se_json_type_name(v->type)));
			break;
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			if (v->type != SE_JSON_NUMBER && v->type != SE_JSON_STRING)
				cannot_hold(cv, t, psprintf("a %s value", se_json_type_name(v->type)));
			s = json_as_text(v, &len);
			return input_call(cv, s, len);
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			{
				int64		ms = json_millis(cv, t, v);

				return TimestampTzGetDatum(ms * 1000 - UNIX_EPOCH_USECS);
			}
		case DATEOID:
			{
				int64		ms = json_millis(cv, t, v);

				return DirectFunctionCall1(timestamp_date,
										   TimestampGetDatum(ms * 1000 - UNIX_EPOCH_USECS));
			}
		default:
			break;
	}
	s = json_as_text(v, &len);
	return input_call(cv, s, len);
}

/* The column value for the values fv of its field (see the file header). */
Datum
se_fdw_value_from_json(SeColConv *cv, const SeFieldValues *fv, bool *isnull)
{
	SeFdwColumn *col = cv->col;
	int			nonnull = 0;
	int			i;

	*isnull = false;
	if (!col->is_array && (col->typid == JSONBOID || col->typid == JSONOID))
	{
		StringInfoData b;

		if (fv->n == 0 || (fv->single && fv->single->type == SE_JSON_NULL))
		{
			*isnull = true;
			return (Datum) 0;
		}
		initStringInfo(&b);
		if (fv->single)
			se_json_write(&b, fv->single);
		else
		{
			appendStringInfoChar(&b, '[');
			for (i = 0; i < fv->n; i++)
			{
				if (i > 0)
					appendStringInfoChar(&b, ',');
				se_json_write(&b, fv->v[i]);
			}
			appendStringInfoChar(&b, ']');
		}
		return input_call(cv, b.data, b.len);
	}

	for (i = 0; i < fv->n; i++)
		if (fv->v[i]->type != SE_JSON_NULL)
			nonnull++;
	if (nonnull == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	if (!col->is_array)
	{
		if (nonnull > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("column \"%s\" of foreign table \"%s\" cannot hold the %d values of field \"%s\" in document \"%s\"",
							col->name, se_fdw_conv_pos.relname ? se_fdw_conv_pos.relname : "?",
							nonnull, col->field, doc_id_for_error()),
					 errhint("Declare the column as an array (%s[]) or as jsonb.",
							 format_type_be(col->typid))));
		for (i = 0; i < fv->n; i++)
			if (fv->v[i]->type != SE_JSON_NULL)
			{
				if (fv->v[i]->type == SE_JSON_OBJECT && col->typid != TEXTOID)
					cannot_hold(cv, col->typid, "an object");
				return scalar_value(cv, col->typid, fv->v[i]);
			}
	}
	else
	{
		Datum	   *elems = palloc(sizeof(Datum) * fv->n);
		bool	   *nulls = palloc(sizeof(bool) * fv->n);
		int			dims[1];
		int			lbs[1] = {1};

		for (i = 0; i < fv->n; i++)
		{
			nulls[i] = fv->v[i]->type == SE_JSON_NULL;
			if (nulls[i])
				elems[i] = (Datum) 0;
			else if (col->elemtype == JSONBOID || col->elemtype == JSONOID)
			{
				StringInfoData b;

				initStringInfo(&b);
				se_json_write(&b, fv->v[i]);
				elems[i] = input_call(cv, b.data, b.len);
			}
			else
			{
				if (fv->v[i]->type == SE_JSON_OBJECT && col->elemtype != TEXTOID)
					cannot_hold(cv, col->typid, "an object");
				elems[i] = scalar_value(cv, col->elemtype, fv->v[i]);
			}
		}
		dims[0] = fv->n;
		return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
												  col->elemtype, cv->elmlen,
												  cv->elmbyval, cv->elmalign));
	}
	*isnull = true;
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------
 */

static void
write_millis(int64 ms, const SeMappedField *field, StringInfo out)
{
	if (field && field->type == SE_FT_DATE && field->format &&
		strstr(field->format, "date_optional_time") == NULL)
	{
		StringInfoData b;

		initStringInfo(&b);
		se_date_format_with(ms, field->format, &b);
		/* numeric formats (epoch_millis) are written as numbers */
		if (b.len > 0 && strspn(b.data, "-0123456789") == (size_t) b.len)
			appendBinaryStringInfo(out, b.data, b.len);
		else
			se_json_write_string(out, b.data, b.len);
		return;
	}
	appendStringInfoChar(out, '"');
	se_date_format(ms, out);
	appendStringInfoChar(out, '"');
}

static void
non_finite(Oid typid)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("%s value NaN or Infinity cannot be stored in a document", format_type_be(typid)),
			 errdetail("JSON has no representation for it; Elasticsearch rejects it.")));
}

/* Append one scalar Datum of type typid as JSON. */
void
se_fdw_datum_to_json(Oid typid, Datum value, const SeMappedField *field, StringInfo out)
{
	switch (typid)
	{
		case BOOLOID:
			appendStringInfoString(out, DatumGetBool(value) ? "true" : "false");
			return;
		case INT2OID:
			appendStringInfo(out, "%d", (int) DatumGetInt16(value));
			return;
		case INT4OID:
			appendStringInfo(out, "%d", DatumGetInt32(value));
			return;
		case INT8OID:
			appendStringInfo(out, INT64_FORMAT, DatumGetInt64(value));
			return;
		case FLOAT4OID:
			if (isnan(DatumGetFloat4(value)) || isinf(DatumGetFloat4(value)))
				non_finite(typid);
			appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float4out, value)));
			return;
		case FLOAT8OID:
			if (isnan(DatumGetFloat8(value)) || isinf(DatumGetFloat8(value)))
				non_finite(typid);
			appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float8out, value)));
			return;
		case NUMERICOID:
			{
				char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out, value));

				if (strcmp(s, "NaN") == 0 || strstr(s, "Infinity") != NULL)
					non_finite(typid);
				appendStringInfoString(out, s);
				return;
			}
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			{
				Timestamp	ts = DatumGetTimestamp(value);
				int64		us;

				if (TIMESTAMP_NOT_FINITE(ts))
					non_finite(typid);
				us = ts + UNIX_EPOCH_USECS;
				/* floor division: sub-millisecond digits are dropped */
				write_millis(us >= 0 ? us / 1000 : -((-us + 999) / 1000), field, out);
				return;
			}
		case DATEOID:
			{
				DateADT		d = DatumGetDateADT(value);

				if (DATE_NOT_FINITE(d))
					non_finite(typid);
				write_millis(((int64) d + POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400000, field, out);
				return;
			}
		case JSONBOID:
			{
				Jsonb	   *jb = DatumGetJsonbP(value);

				appendStringInfoString(out, JsonbToCString(NULL, &jb->root, VARSIZE(jb)));
				return;
			}
		case JSONOID:
			{
				text	   *t = DatumGetTextPP(value);

				appendBinaryStringInfo(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				return;
			}
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			{
				text	   *t = DatumGetTextPP(value);

				se_json_write_string(out, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				return;
			}
		default:
			{
				Oid			outfunc;
				bool		varlena;
				char	   *s;

				getTypeOutputInfo(typid, &outfunc, &varlena);
				s = OidOutputFunctionCall(outfunc, value);
				se_json_write_string(out, s, strlen(s));
				return;
			}
	}
}

/* Append a column value as JSON (arrays become JSON arrays). */
void
se_fdw_value_to_json(SeFdwColumn *col, const SeMappedField *field, Datum value,
					 StringInfo out)
{
	if (col->is_array)
	{
		ArrayType  *a = DatumGetArrayTypeP(value);
		Datum	   *elems;
		bool	   *nulls;
		int			n,
					i;
		int16		elmlen;
		bool		elmbyval;
		char		elmalign;

		get_typlenbyvalalign(col->elemtype, &elmlen, &elmbyval, &elmalign);
		deconstruct_array(a, col->elemtype, elmlen, elmbyval, elmalign, &elems, &nulls, &n);
		appendStringInfoChar(out, '[');
		for (i = 0; i < n; i++)
		{
			if (i > 0)
				appendStringInfoChar(out, ',');
			if (nulls[i])
				appendStringInfoString(out, "null");
			else
				se_fdw_datum_to_json(col->elemtype, elems[i], field, out);
		}
		appendStringInfoChar(out, ']');
		return;
	}
	se_fdw_datum_to_json(col->typid, value, field, out);
}

/* ---------------------------------------------------------------------
 * Type checks
 * ---------------------------------------------------------------------
 */

static bool
is_json_type(Oid t)
{
	return t == JSONBOID || t == JSONOID;
}

static bool
is_integer_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}

static bool
is_numeric_type(Oid t)
{
	return is_integer_type(t) || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

static bool
is_stringish(Oid t)
{
	char		cat;
	bool		pref;

	get_type_category_preferred(t, &cat, &pref);
	return cat != TYPCATEGORY_NUMERIC && cat != TYPCATEGORY_BOOLEAN &&
		cat != TYPCATEGORY_DATETIME && cat != TYPCATEGORY_TIMESPAN &&
		cat != TYPCATEGORY_ARRAY && cat != TYPCATEGORY_COMPOSITE;
}

/* The column type IMPORT FOREIGN SCHEMA gives a field (and errors suggest). */
const char *
se_fdw_suggested_type(const SeMappedField *f)
{
	switch (f->type)
	{
		case SE_FT_TEXT:
		case SE_FT_KEYWORD:
			return "text";
		case SE_FT_LONG:
			return "bigint";
		case SE_FT_INTEGER:
			return "integer";
		case SE_FT_SHORT:
		case SE_FT_BYTE:
			return "smallint";
		case SE_FT_DOUBLE:
			return "double precision";
		case SE_FT_FLOAT:
			return "real";
		case SE_FT_BOOLEAN:
			return "boolean";
		case SE_FT_DATE:
			return "timestamptz";
		case SE_FT_OBJECT:
		case SE_FT_GEO_POINT:
			return "jsonb";
	}
	return "text";
}

/* Can col hold the values of field f (NULL: unmapped, anything goes)? */
bool
se_fdw_type_fits(const SeFdwColumn *col, const SeMappedField *f, char **reason)
{
	Oid			t = col->is_array ? col->elemtype : col->typid;

	*reason = NULL;
	switch (col->kind)
	{
		case SE_COL_ID:
		case SE_COL_ROUTING:
		case SE_COL_INDEX:
			if (col->is_array || !is_stringish(t) || is_json_type(t))
				*reason = psprintf("%s is a string; use text", se_fdw_meta_name(col->kind));
			return *reason == NULL;
		case SE_COL_SCORE:
			if (col->is_array || !(t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID))
				*reason = pstrdup("_score is a float; use real");
			return *reason == NULL;
		case SE_COL_SOURCE:
			if (col->is_array || !(is_json_type(t) || t == TEXTOID))
				*reason = pstrdup("_source is a JSON document; use jsonb");
			return *reason == NULL;
		case SE_COL_SEQ_NO:
		case SE_COL_PRIMARY_TERM:
		case SE_COL_VERSION:
			if (col->is_array || !(t == INT8OID || t == NUMERICOID || t == FLOAT8OID))
				*reason = psprintf("%s is a 64-bit integer; use bigint", se_fdw_meta_name(col->kind));
			return *reason == NULL;
		case SE_COL_DROPPED:
			return true;
		case SE_COL_FIELD:
			break;
	}
	if (f == NULL || is_json_type(t) || t == TEXTOID || t == VARCHAROID)
		return true;
	switch (f->type)
	{
		case SE_FT_OBJECT:
			*reason = psprintf("field \"%s\" is an object; use jsonb", f->path);
			break;
		case SE_FT_TEXT:
		case SE_FT_KEYWORD:
			if (!is_stringish(t))
				*reason = psprintf("field \"%s\" is of type %s and holds strings; use text",
								   f->path, se_field_type_name(f->type));
			break;
		case SE_FT_LONG:
		case SE_FT_INTEGER:
		case SE_FT_SHORT:
		case SE_FT_BYTE:
			if (!is_numeric_type(t))
				*reason = psprintf("field \"%s\" is of type %s; use %s",
								   f->path, se_field_type_name(f->type), se_fdw_suggested_type(f));
			break;
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
			if (!is_numeric_type(t))
				*reason = psprintf("field \"%s\" is of type %s; use %s",
								   f->path, se_field_type_name(f->type), se_fdw_suggested_type(f));
			else if (is_integer_type(t))
				*reason = psprintf("field \"%s\" is of type %s and holds fractions an integer column cannot hold; use %s",
								   f->path, se_field_type_name(f->type), se_fdw_suggested_type(f));
			break;
		case SE_FT_BOOLEAN:
			if (t != BOOLOID)
				*reason = psprintf("field \"%s\" is of type boolean; use boolean", f->path);
			break;
		case SE_FT_DATE:
			if (t != TIMESTAMPTZOID && t != TIMESTAMPOID && t != DATEOID)
				*reason = psprintf("field \"%s\" is of type date; use timestamptz", f->path);
			break;
		case SE_FT_GEO_POINT:
			/* the point as _source has it */
			*reason = psprintf("field \"%s\" is of type geo_point; use jsonb", f->path);
			break;
	}
	return *reason == NULL;
}

/* ERROR when a column of t cannot hold its field as mapped in m. */
void
se_fdw_check_columns(SeFdwTable *t, const SeMapping *m)
{
	int			i;

	for (i = 0; i < t->natts; i++)
	{
		SeFdwColumn *c = &t->cols[i];
		const SeMappedField *f = NULL;
		char	   *reason;

		if (c->kind == SE_COL_FIELD && m != NULL)
			f = se_mapping_find(m, c->field);
		if (!se_fdw_type_fits(c, f, &reason))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("column \"%s\" of foreign table \"%s\" has type %s, which cannot hold %s of index \"%s\"",
							c->name, t->relname, format_type_be(c->typid),
							c->kind == SE_COL_FIELD ? psprintf("field \"%s\"", c->field)
							: se_fdw_meta_name(c->kind),
							t->index),
					 errdetail("The %s.", reason),
					 errhint("Change the column type, or map the column to another field with OPTIONS (field '...').")));
	}
}
