/*-------------------------------------------------------------------------
 *
 * fields.c
 *	  A hit's "fields": docvalue_fields (read from doc values), script_fields
 *	  (a Painless script's values, script_score.c) and fields (read from
 *	  _source through the mapping), as ES 8 shapes them.
 *
 * docvalue_fields and fields take patterns with '*' wildcards over mapped
 * field paths, each with an optional "format" for dates.  script_fields
 * name their output; a script's failure fails the hit's fetch unless
 * ignore_failure leaves the field out.  docvalue_fields reads the field's doc
 * values (a text field, or doc_values: false, named exactly fails as
 * sorting would); fields walks the document's _source and parses each
 * value as the mapping would index it (ES's "fields" option): numbers as
 * their type, dates in the mapping's (or the given) format, multi-fields
 * from their parent's value, values that would not index left out, and
 * unmapped fields only with include_unmapped.  Every field's values are a
 * JSON array, the object omitted when no field has any.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "search/search_int.h"

typedef struct FieldSpec
{
	char	   *pattern;
	char	   *format;			/* dates: output format; NULL = the mapping's */
	bool		include_unmapped;
} FieldSpec;

typedef struct ScriptFieldSpec
{
	char	   *name;
	SeScoreFunction fn;			/* fn.script, fn.script_params */
	bool		ignore_failure;
} ScriptFieldSpec;

struct SeFetchFields
{
	int			ndv;
	FieldSpec  *dv;				/* docvalue_fields */
	int			nsrc;
	FieldSpec  *src;			/* fields */
	int			nscript;
	ScriptFieldSpec *script;	/* script_fields */
};

/* One output field: its name and its values so far (JSON, comma-joined). */
typedef struct OutField
{
	const char *name;
	StringInfoData values;
} OutField;

typedef struct Collect
{
	int			n;
	int			cap;
	OutField   *f;
} Collect;

static bool
parse_specs(const char *key, const SeJson *v, FieldSpec **out, int *n, SeError *err)
{
	int			i;

	if (v->type != SE_JSON_ARRAY)
	{
		se_error_set(err, 400, "parsing_exception",
					 "[%s] Expected [START_ARRAY] but found [%s]", key,
					 v->type == SE_JSON_OBJECT ? "START_OBJECT" : "VALUE");
		return false;
	}
	*out = palloc0(sizeof(FieldSpec) * Max(1, v->u.a.count));
	*n = v->u.a.count;
	for (i = 0; i < v->u.a.count; i++)
	{
		const SeJson *e = v->u.a.items[i];
		FieldSpec  *s = &(*out)[i];
		int			j;

		if (e->type == SE_JSON_STRING)
		{
			s->pattern = pstrdup(e->u.s.str);
			continue;
		}
		if (e->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "parsing_exception",
						 "[%s] expected a field name or an object with [field]", key);
			return false;
		}
		for (j = 0; j < e->u.o.count; j++)
		{
			const char *k = e->u.o.members[j].key;
			const SeJson *x = e->u.o.members[j].value;

			if (strcmp(k, "field") == 0 && x->type == SE_JSON_STRING)
				s->pattern = pstrdup(x->u.s.str);
			else if (strcmp(k, "format") == 0 && x->type == SE_JSON_STRING)
				s->format = pstrdup(x->u.s.str);
			else if (strcmp(k, "include_unmapped") == 0 && strcmp(key, "fields") == 0 &&
					 (x->type == SE_JSON_TRUE || x->type == SE_JSON_FALSE))
				s->include_unmapped = x->type == SE_JSON_TRUE;
			else
			{
				se_error_set(err, 400, "x_content_parse_exception",
							 "[%s] unknown field [%s]", key, k);
				return false;
			}
		}
		if (s->pattern == NULL)
		{
			se_error_set(err, 400, "x_content_parse_exception",
						 "Required [field]");
			return false;
		}
		/* geo_point formats pass; a date field given one prints its default */
		if (s->format != NULL && strcmp(s->format, "wkt") != 0 &&
			strcmp(s->format, "geojson") != 0 && !se_decimal_format_valid(s->format) &&
			!se_date_format_validate(s->format, err))
			return false;
	}
	return true;
}

/* "script_fields": {name: {"script": .., "ignore_failure": bool}} */
static bool
parse_script_fields(const SeJson *v, SeFetchFields *ff, SeError *err)
{
	int			i,
				j;

	if (v->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "parsing_exception",
					 "Expected [START_OBJECT] under [script_fields], but got a [%s] in [script_fields]",
					 v->type == SE_JSON_ARRAY ? "START_ARRAY" : "VALUE_STRING");
		return false;
	}
	ff->script = palloc0(sizeof(ScriptFieldSpec) * Max(1, v->u.o.count));
	for (i = 0; i < v->u.o.count; i++)
	{
		const SeJson *def = v->u.o.members[i].value;
		ScriptFieldSpec *sp = &ff->script[ff->nscript++];
		bool		has_script = false;

		sp->name = pstrdup(v->u.o.members[i].key);
		if (def->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "parsing_exception",
						 "Expected [START_OBJECT] under [%s], but got a [VALUE] in [script_fields]",
						 sp->name);
			return false;
		}
		for (j = 0; j < def->u.o.count; j++)
		{
			const char *k = def->u.o.members[j].key;
			const SeJson *x = def->u.o.members[j].value;

			if (strcmp(k, "script") == 0)
			{
				if (!se_script_spec_parse("script_fields", x, &sp->fn, err))
					return false;
				has_script = true;
			}
			else if (strcmp(k, "ignore_failure") == 0 &&
					 (x->type == SE_JSON_TRUE || x->type == SE_JSON_FALSE))
				sp->ignore_failure = x->type == SE_JSON_TRUE;
			else
			{
				se_error_set(err, 400, "parsing_exception",
							 "Unknown key for a VALUE_STRING in [%s].", k);
				return false;
			}
		}
		if (!has_script)
		{
			se_error_set(err, 400, "parsing_exception", "must specify a script in script_fields");
			return false;
		}
	}
	return true;
}

bool
se_fetch_fields_parse(const char *key, const SeJson *v, SeFetchFields **ff, SeError *err)
{
	if (*ff == NULL)
		*ff = palloc0(sizeof(SeFetchFields));
	if (strcmp(key, "script_fields") == 0)
		return parse_script_fields(v, *ff, err);
	if (strcmp(key, "docvalue_fields") == 0)
		return parse_specs(key, v, &(*ff)->dv, &(*ff)->ndv, err);
	return parse_specs(key, v, &(*ff)->src, &(*ff)->nsrc, err);
}

static StringInfo
out_field(Collect *c, const char *name)
{
	int			i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->f[i].name, name) == 0)
		{
			appendStringInfoChar(&c->f[i].values, ',');
			return &c->f[i].values;
		}
	if (c->n == c->cap)
	{
		c->cap = Max(8, c->cap * 2);
		c->f = c->f ? repalloc(c->f, sizeof(OutField) * c->cap) :
			palloc(sizeof(OutField) * c->cap);
	}
	c->f[c->n].name = name;
	initStringInfo(&c->f[c->n].values);
	return &c->f[c->n++].values;
}

static bool
has_wildcard(const char *p)
{
	return strchr(p, '*') != NULL;
}

/*
 * A doc value (sortable int64) of f as the hit shows it: dates as strings
 * in format (NULL: the mapping's), booleans and numbers as JSON values
 * (se_field_format_sortable's text is both).
 */
static void
write_numeric(const SeMappedField *f, int64 v, const char *format, StringInfo out)
{
	StringInfoData s;

	if (f->type != SE_FT_DATE)
	{
		if (format != NULL && f->type != SE_FT_BOOLEAN && se_decimal_format_valid(format))
		{
			/* a DecimalFormat pattern: the value as a string, as ES */
			initStringInfo(&s);
			se_decimal_format(format, f->type == SE_FT_DOUBLE || f->type == SE_FT_FLOAT ?
							  se_sortable_to_double(v) : (double) v, &s);
			se_json_write_string(out, s.data, s.len);
			pfree(s.data);
			return;
		}
		se_field_format_sortable(f, v, out);
		return;
	}
	initStringInfo(&s);
	if (format != NULL && strcmp(format, "wkt") != 0 && strcmp(format, "geojson") != 0)
		se_date_format_with(v, format, &s);
	else
		se_field_format_sortable(f, v, &s);
	se_json_write_string(out, s.data, s.len);
	pfree(s.data);
}

static const FieldSpec *src_spec(const SeFetchFields *ff, const char *path, bool unmapped);

/* A geo_point's doc value as ES's GeoPoint prints it: "lat, lon" (quantised). */
static void
write_geo_doc_value(int64 v, StringInfo out)
{
	StringInfoData s;
	double		lat,
				lon;

	se_geo_decode(v, &lat, &lon);
	initStringInfo(&s);
	se_append_java_double(&s, lat);
	appendStringInfoString(&s, ", ");
	se_append_java_double(&s, lon);
	se_json_write_string(out, s.data, s.len);
	pfree(s.data);
}

/*
 * A geo_point of _source as "fields" shows it: GeoJSON by default, "wkt"
 * as POINT (lon lat); points that would not index are left out.
 */
static void
src_geo_point(Collect *c, const SeMappedField *f, const FieldSpec *s, const SeJson *v)
{
	SeGeoPoint	p;
	SeError		e;
	StringInfo	out;
	StringInfoData t;

	se_error_init(&e);
	if (!se_geo_parse_point(v, f->ignore_z_value, &p, &e))
		return;
	if (!se_geo_point_valid(&p))
	{
		if (!f->ignore_malformed)
			return;
		se_geo_normalize(&p);
	}
	out = out_field(c, f->path);
	initStringInfo(&t);
	if (s->format != NULL && strcmp(s->format, "wkt") == 0)
	{
		appendStringInfoString(&t, "POINT (");
		se_append_java_double(&t, p.lon);
		appendStringInfoChar(&t, ' ');
		se_append_java_double(&t, p.lat);
		appendStringInfoChar(&t, ')');
		se_json_write_string(out, t.data, t.len);
	}
	else
	{
		appendStringInfoString(out, "{\"type\":\"Point\",\"coordinates\":[");
		se_append_java_double(out, p.lon);
		appendStringInfoChar(out, ',');
		se_append_java_double(out, p.lat);
		appendStringInfoString(out, "]}");
	}
	pfree(t.data);
}

/* A geo_point field's _source value: one point or an array of them. */
static void
src_geo(const SeFetchFields *ff, Collect *c, const SeMappedField *f, const SeJson *v)
{
	const FieldSpec *s = src_spec(ff, f->path, false);
	int			i;

	if (s == NULL || v->type == SE_JSON_NULL)
		return;
	if (v->type != SE_JSON_ARRAY || se_geo_is_single_point_array(v))
	{
		src_geo_point(c, f, s, v);
		return;
	}
	for (i = 0; i < v->u.a.count; i++)
		if (v->u.a.items[i]->type != SE_JSON_NULL)
			src_geo_point(c, f, s, v->u.a.items[i]);
}

static bool
docvalue_fields(const SeFetchFields *ff, const SeMapping *m, const char *index,
				SeSegmentReader *r, int32 doc, Collect *c, SeError *err)
{
	int			i,
				j,
				k;

	for (i = 0; i < ff->ndv; i++)
	{
		const FieldSpec *s = &ff->dv[i];

		for (j = 0; j < m->nfields; j++)
		{
			const SeMappedField *f = m->fields[j];
			int			fid;

			if (f->type == SE_FT_OBJECT ||
				!se_glob_match(s->pattern, f->path, strlen(f->path)))
				continue;
			if (f->type == SE_FT_TEXT || !f->doc_values)
			{
				/* a pattern skips what has no doc values; a name fails */
				if (has_wildcard(s->pattern))
					continue;
				return se_search_check_doc_values(f, index, err);
			}
			fid = se_segment_field(r, f->path);
			if (fid < 0)
				continue;
			if (f->type == SE_FT_KEYWORD)
			{
				int			n = se_segment_sorted_count(r, fid, doc);

				for (k = 0; k < n; k++)
				{
					int			len;
					const char *b = se_segment_sorted_value(r, fid, doc, k, &len);

					se_json_write_string(out_field(c, f->path), b, len);
				}
			}
			else
			{
				const int64 *vals;
				int			n = se_segment_numeric_values(r, fid, doc, &vals);
				int64	   *copy = palloc(sizeof(int64) * Max(1, n));

				/* the reader's buffer lasts until its next call */
				memcpy(copy, vals, sizeof(int64) * n);
				for (k = 0; k < n; k++)
				{
					if (f->type == SE_FT_GEO_POINT)
						write_geo_doc_value(copy[k], out_field(c, f->path));
					else
						write_numeric(f, copy[k], s->format, out_field(c, f->path));
				}
				pfree(copy);
			}
		}
	}
	return true;
}

/* The first "fields" pattern that takes path, or NULL. */
static const FieldSpec *
src_spec(const SeFetchFields *ff, const char *path, bool unmapped)
{
	int			i;

	for (i = 0; i < ff->nsrc; i++)
		if ((!unmapped || ff->src[i].include_unmapped) &&
			se_glob_match(ff->src[i].pattern, path, strlen(path)))
			return &ff->src[i];
	return NULL;
}

/* v (a scalar of _source) as field f would index it, appended to its values. */
static void
src_value(Collect *c, const SeMappedField *f, const FieldSpec *s, const SeJson *v)
{
	int64		sv;
	SeError		e;

	switch (f->type)
	{
		case SE_FT_TEXT:
		case SE_FT_KEYWORD:
			if (v->type == SE_JSON_STRING)
			{
				if (f->type == SE_FT_KEYWORD && f->ignore_above > 0 &&
					v->u.s.len > f->ignore_above)
					return;		/* not indexed */
				se_json_write_string(out_field(c, f->path), v->u.s.str, v->u.s.len);
			}
			else if (v->type == SE_JSON_NUMBER)
				se_json_write_string(out_field(c, f->path), v->u.n.text, v->u.n.len);
			else if (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
				se_json_write_string(out_field(c, f->path),
									 v->type == SE_JSON_TRUE ? "true" : "false", -1);
			return;
		case SE_FT_OBJECT:
			return;
		default:
			se_error_init(&e);
			if (!se_field_sortable_value(f, v, &sv, &e))
				return;			/* malformed: ES leaves it out too */
			write_numeric(f, sv, s->format, out_field(c, f->path));
			return;
	}
}

static void
src_leaf(const SeFetchFields *ff, const SeMapping *m, Collect *c, const char *path,
		 const SeJson *v)
{
	const SeMappedField *f;
	const FieldSpec *s;
	int			i;

	if (v->type == SE_JSON_NULL)
		return;
	f = se_mapping_find(m, path);
	if (f == NULL)
	{
		if ((s = src_spec(ff, path, true)) != NULL)
			se_json_write(out_field(c, pstrdup(path)), v);
		return;
	}
	if ((s = src_spec(ff, f->path, false)) != NULL)
		src_value(c, f, s, v);
	for (i = 0; i < f->nmulti_fields; i++)
	{
		const SeMappedField *mf = f->multi_fields[i];

		if ((s = src_spec(ff, mf->path, false)) != NULL)
			src_value(c, mf, s, v);
	}
}

static void
src_walk(const SeFetchFields *ff, const SeMapping *m, Collect *c, const char *prefix,
		 const SeJson *obj)
{
	int			i,
				j;

	for (i = 0; i < obj->u.o.count; i++)
	{
		const SeJson *v = obj->u.o.members[i].value;
		char	   *path = prefix ? psprintf("%s.%s", prefix, obj->u.o.members[i].key) :
			pstrdup(obj->u.o.members[i].key);
		const SeMappedField *gf;

		SE_SEARCH_TICK(1);
		if ((v->type == SE_JSON_OBJECT || v->type == SE_JSON_ARRAY ||
			 v->type == SE_JSON_STRING) &&
			(gf = se_mapping_find(m, path)) != NULL && gf->type == SE_FT_GEO_POINT)
			src_geo(ff, c, gf, v);
		else if (v->type == SE_JSON_OBJECT)
			src_walk(ff, m, c, path, v);
		else if (v->type == SE_JSON_ARRAY)
		{
			for (j = 0; j < v->u.a.count; j++)
			{
				const SeJson *e = v->u.a.items[j];

				if (e->type == SE_JSON_OBJECT)
					src_walk(ff, m, c, path, e);
				else if (e->type != SE_JSON_ARRAY)
					src_leaf(ff, m, c, path, e);
			}
		}
		else
			src_leaf(ff, m, c, path, v);
	}
}

bool
se_fetch_fields_doc(const SeFetchFields *ff, const SeMapping *m, const char *index,
					SeSegmentReader *r, int32 doc, StringInfo out, SeError *err)
{
	Collect		c = {0};
	int			i;

	if (ff->ndv > 0 && !docvalue_fields(ff, m, index, r, doc, &c, err))
		return false;
	for (i = 0; i < ff->nscript; i++)
	{
		const ScriptFieldSpec *sp = &ff->script[i];
		StringInfoData vals;

		initStringInfo(&vals);
		if (!se_script_field_values(&sp->fn, m, index, r, doc, &vals, err))
		{
			if (!sp->ignore_failure)
				return false;
			/* ES leaves the field out of the hit */
			se_error_init(err);
			continue;
		}
		appendBinaryStringInfo(out_field(&c, sp->name), vals.data, vals.len);
	}
	if (ff->nsrc > 0)
	{
		StringInfoData raw;
		SeJson	   *src;

		initStringInfo(&raw);
		if (!se_segment_source(r, doc, &raw))
		{
			se_error_set(err, 500, "index_corrupted_exception", "%s",
						 se_segment_error(r)->reason);
			return false;
		}
		src = se_json_parse(raw.data, raw.len, NULL, err);
		if (src == NULL)
			return false;
		if (src->type == SE_JSON_OBJECT)
			src_walk(ff, m, &c, NULL, src);
	}
	if (c.n == 0)
		return true;
	appendStringInfoChar(out, '{');
	for (i = 0; i < c.n; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, c.f[i].name, strlen(c.f[i].name));
		appendStringInfoString(out, ":[");
		appendBinaryStringInfo(out, c.f[i].values.data, c.f[i].values.len);
		appendStringInfoChar(out, ']');
	}
	appendStringInfoChar(out, '}');
	return true;
}
