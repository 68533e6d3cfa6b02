/*-------------------------------------------------------------------------
 *
 * mapping.c
 *	  The mapping model: field definitions from ES "mappings" JSON,
 *	  put_mapping merges, GET _mapping output and lookup by path.
 *
 * A mapping is a flat array of fields sorted by full dotted path, so a
 * lookup is one binary search and every subtree ("a." prefixed paths) is a
 * contiguous range.  Objects, leaves and multi-fields all live in the array;
 * derived links (inherited "dynamic", each leaf's multi-fields) are rebuilt
 * after every change by one pass in path order, where parents come before
 * their children.
 *
 * Creating and merging share one routine that applies a mappings body to a
 * working mapping with ES merge rules (a field defined twice in one body
 * merges like a put_mapping does).  A merge works on a copy, so a failure
 * leaves the live mapping untouched; the result is then copied into the
 * memory context the mapping was created in.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

#include "mapping/mapping.h"

/*
 * Allocations that must live as long as an existing object go to that
 * object's memory context (dynamic fields are added while the caller is in
 * a short-lived per-document context).
 */
#ifdef SE_FRONTEND
#define alloc_like(owner, size)	palloc0(size)
#else
#define alloc_like(owner, size) \
	MemoryContextAllocZero(GetMemoryChunkContext((void *) (owner)), (size))
#endif

static const char *const type_names[] = {
	"object", "text", "keyword", "long", "integer", "short", "byte",
	"double", "float", "boolean", "date", "geo_point"
};

/* State of one application of a mappings body. */
typedef struct Apply
{
	SeMapping  *m;				/* working mapping */
	int			total_fields_limit;
	int			depth_limit;
	int			nested_fields_limit;
	StringInfoData path;		/* full path of the field being defined */
	SeError    *err;
} Apply;

static bool apply_properties(Apply *ap, const SeJson *props);
static bool apply_field(Apply *ap, const SeJson *def, SeMappedField *multi_parent);
static void finalize(SeMapping *m);

const char *
se_field_type_name(SeFieldType t)
{
	if ((int) t < 0 || (int) t >= lengthof(type_names))
		return "unknown";
	return type_names[t];
}

bool
se_field_is_numeric_like(SeFieldType t)
{
	switch (t)
	{
		case SE_FT_LONG:
		case SE_FT_INTEGER:
		case SE_FT_SHORT:
		case SE_FT_BYTE:
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
		case SE_FT_BOOLEAN:
		case SE_FT_DATE:
			return true;
		default:
			return false;
	}
}

static bool
type_by_name(const char *name, SeFieldType *t)
{
	int			i;

	for (i = 0; i < lengthof(type_names); i++)
		if (strcmp(type_names[i], name) == 0)
		{
			*t = (SeFieldType) i;
			return true;
		}
	return false;
}

static bool
is_integer_type(SeFieldType t)
{
	return t == SE_FT_LONG || t == SE_FT_INTEGER || t == SE_FT_SHORT || t == SE_FT_BYTE;
}

static bool
is_numeric_type(SeFieldType t)
{
	return is_integer_type(t) || t == SE_FT_DOUBLE || t == SE_FT_FLOAT;
}

void
se_field_codec_options(const SeMappedField *f, SeIndexOptions *io, bool *norms,
					   SeDocValuesType *dv)
{
	*io = SE_IDX_NONE;
	*norms = false;
	*dv = SE_DV_NONE;
	switch (f->type)
	{
		case SE_FT_OBJECT:
			break;
		case SE_FT_TEXT:
			if (f->index)
			{
				*io = SE_IDX_POSITIONS;
				*norms = f->norms;
			}
			break;
		case SE_FT_KEYWORD:
			if (f->index)
			{
				*io = SE_IDX_DOCS;
				*norms = f->norms;
			}
			if (f->doc_values)
				*dv = SE_DV_SORTED_SET;
			break;
		case SE_FT_GEO_POINT:
			/* queries read the points from doc values: no terms */
			if (f->index || f->doc_values)
				*dv = SE_DV_NUMERIC;
			break;
		default:
			if (f->index)
				*io = SE_IDX_DOCS;
			if (f->doc_values)
				*dv = SE_DV_NUMERIC;
			break;
	}
}

/* ---------------------------------------------------------------------
 * JSON values owned by a mapping (null_value)
 * ---------------------------------------------------------------------
 */

static char *
strdup_like(const void *owner, const char *s, int len)
{
	char	   *r = alloc_like(owner, len + 1);

	memcpy(r, s, len);
	r[len] = '\0';
	return r;
}

/* Deep copy of a JSON value into owner's memory context. */
static SeJson *
copy_json(const void *owner, const SeJson *v)
{
	SeJson	   *c = alloc_like(owner, sizeof(SeJson));
	int			i;

	c->type = v->type;
	switch (v->type)
	{
		case SE_JSON_STRING:
			c->u.s.str = strdup_like(owner, v->u.s.str, v->u.s.len);
			c->u.s.len = v->u.s.len;
			break;
		case SE_JSON_NUMBER:
			c->u.n = v->u.n;
			c->u.n.text = strdup_like(owner, v->u.n.text, v->u.n.len);
			break;
		case SE_JSON_ARRAY:
			c->u.a.count = v->u.a.count;
			c->u.a.items = alloc_like(owner, sizeof(SeJson *) * Max(1, v->u.a.count));
			for (i = 0; i < v->u.a.count; i++)
				c->u.a.items[i] = copy_json(owner, v->u.a.items[i]);
			break;
		case SE_JSON_OBJECT:
			c->u.o.count = v->u.o.count;
			c->u.o.members = alloc_like(owner, sizeof(SeJsonMember) * Max(1, v->u.o.count));
			for (i = 0; i < v->u.o.count; i++)
			{
				c->u.o.members[i].key = strdup_like(owner, v->u.o.members[i].key,
													v->u.o.members[i].keylen);
				c->u.o.members[i].keylen = v->u.o.members[i].keylen;
				c->u.o.members[i].value = copy_json(owner, v->u.o.members[i].value);
			}
			break;
		default:
			break;
	}
	return c;
}

static void
free_json(SeJson *v)
{
	int			i;

	switch (v->type)
	{
		case SE_JSON_STRING:
			pfree((char *) v->u.s.str);
			break;
		case SE_JSON_NUMBER:
			pfree((char *) v->u.n.text);
			break;
		case SE_JSON_ARRAY:
			for (i = 0; i < v->u.a.count; i++)
				free_json(v->u.a.items[i]);
			pfree(v->u.a.items);
			break;
		case SE_JSON_OBJECT:
			for (i = 0; i < v->u.o.count; i++)
			{
				pfree((char *) v->u.o.members[i].key);
				free_json(v->u.o.members[i].value);
			}
			pfree(v->u.o.members);
			break;
		default:
			break;
	}
	pfree(v);
}

static bool
json_equal(const SeJson *a, const SeJson *b)
{
	int			i;

	if (a == NULL || b == NULL)
		return a == b;
	if (a->type != b->type)
		return false;
	switch (a->type)
	{
		case SE_JSON_STRING:
			return a->u.s.len == b->u.s.len &&
				memcmp(a->u.s.str, b->u.s.str, a->u.s.len) == 0;
		case SE_JSON_NUMBER:
			return a->u.n.len == b->u.n.len &&
				memcmp(a->u.n.text, b->u.n.text, a->u.n.len) == 0;
		case SE_JSON_ARRAY:
			if (a->u.a.count != b->u.a.count)
				return false;
			for (i = 0; i < a->u.a.count; i++)
				if (!json_equal(a->u.a.items[i], b->u.a.items[i]))
					return false;
			return true;
		case SE_JSON_OBJECT:
			if (a->u.o.count != b->u.o.count)
				return false;
			for (i = 0; i < a->u.o.count; i++)
				if (a->u.o.members[i].keylen != b->u.o.members[i].keylen ||
					memcmp(a->u.o.members[i].key, b->u.o.members[i].key,
						   a->u.o.members[i].keylen) != 0 ||
					!json_equal(a->u.o.members[i].value, b->u.o.members[i].value))
					return false;
			return true;
		default:
			return true;
	}
}

/* Bounded, Java Map.toString-like preview of a value, for error messages. */
#define PREVIEW_MAX 1024

static void
preview_rec(const SeJson *v, StringInfo out, int start)
{
	int			i;

	if (out->len - start > PREVIEW_MAX)
		return;
	switch (v->type)
	{
		case SE_JSON_NULL:
			appendStringInfoString(out, "null");
			break;
		case SE_JSON_TRUE:
			appendStringInfoString(out, "true");
			break;
		case SE_JSON_FALSE:
			appendStringInfoString(out, "false");
			break;
		case SE_JSON_NUMBER:
			appendBinaryStringInfo(out, v->u.n.text, v->u.n.len);
			break;
		case SE_JSON_STRING:
			{
				int			len = v->u.s.len;

				if (len > PREVIEW_MAX)
				{
					/* cut at a UTF-8 character boundary */
					len = PREVIEW_MAX;
					while (len > 0 && (v->u.s.str[len] & 0xC0) == 0x80)
						len--;
				}
				appendBinaryStringInfo(out, v->u.s.str, len);
				if (len < v->u.s.len)
					appendStringInfoString(out, "...");
				break;
			}
		case SE_JSON_ARRAY:
			appendStringInfoChar(out, '[');
			for (i = 0; i < v->u.a.count && out->len - start <= PREVIEW_MAX; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				preview_rec(v->u.a.items[i], out, start);
			}
			appendStringInfoChar(out, ']');
			break;
		case SE_JSON_OBJECT:
			appendStringInfoChar(out, '{');
			for (i = 0; i < v->u.o.count && out->len - start <= PREVIEW_MAX; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				appendBinaryStringInfo(out, v->u.o.members[i].key,
									   Min(v->u.o.members[i].keylen, PREVIEW_MAX));
				appendStringInfoChar(out, '=');
				preview_rec(v->u.o.members[i].value, out, start);
			}
			appendStringInfoChar(out, '}');
			break;
	}
}

void
se_mapping_preview(const SeJson *v, StringInfo out)
{
	preview_rec(v, out, out->len);
}

/* ---------------------------------------------------------------------
 * The sorted field array
 * ---------------------------------------------------------------------
 */

SeMapping *
se_mapping_create(void)
{
	SeMapping  *m = palloc0(sizeof(SeMapping));

	m->dynamic = SE_DYNAMIC_TRUE;
	m->date_detection = true;
	m->numeric_detection = false;
	return m;
}

/* Index of path, or -(insertion point) - 1. */
static int
search(const SeMapping *m, const char *path)
{
	int			lo = 0;
	int			hi = m->nfields - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const char *mp = m->fields[mid]->path;

		/* most probes differ in the first byte: no call for those */
		int			c = (int) (unsigned char) mp[0] - (int) (unsigned char) path[0];

		if (c == 0)
			c = strcmp(mp, path);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -lo - 1;
}

const SeMappedField *
se_mapping_find(const SeMapping *m, const char *path)
{
	int			i;

	if (m == NULL || path == NULL)
		return NULL;
	i = search(m, path);
	return i >= 0 ? m->fields[i] : NULL;
}

static SeMappedField *
find_mut(SeMapping *m, const char *path)
{
	int			i = search(m, path);

	return i >= 0 ? m->fields[i] : NULL;
}

/* [*lo, *hi): the fields whose path starts with prefix[0..len). */
static void
prefix_range(const SeMapping *m, const char *prefix, int len, int *lo, int *hi)
{
	int			a = 0;
	int			b = m->nfields;

	/* first index whose path is >= prefix in its first len bytes */
	while (a < b)
	{
		int			mid = a + (b - a) / 2;

		if (strncmp(m->fields[mid]->path, prefix, len) < 0)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	b = m->nfields;
	while (a < b)
	{
		int			mid = a + (b - a) / 2;

		if (strncmp(m->fields[mid]->path, prefix, len) <= 0)
			a = mid + 1;
		else
			b = mid;
	}
	*hi = a;
}

static void
init_field_defaults(const SeMapping *m, SeMappedField *f, SeFieldType type)
{
	f->type = type;
	f->index = true;
	f->doc_values = (type != SE_FT_TEXT && type != SE_FT_OBJECT);
	f->norms = (type == SE_FT_TEXT);
	f->coerce = true;
	f->enabled = true;
	f->position_increment_gap = SE_POSITION_INCREMENT_GAP;
	f->dynamic = m->dynamic;
	f->ignore_z_value = true;
	if (type == SE_FT_TEXT)
	{
		f->analyzer = se_analyzer_lookup("standard");
		f->search_analyzer = f->analyzer;
	}
}

/* A copy of s in m's memory context. */
char *
se_mapping_strdup(const SeMapping *m, const char *s)
{
	return strdup_like(m, s, strlen(s));
}

/* A new field with ES defaults for its type, in m's memory context. */
SeMappedField *
se_mapping_new_field(const SeMapping *m, const char *path, SeFieldType type)
{
	SeMappedField *f = alloc_like(m, sizeof(SeMappedField));

	f->path = strdup_like(m, path, strlen(path));
	init_field_defaults(m, f, type);
	if (type == SE_FT_DATE)
		f->format = strdup_like(m, SE_DATE_DEFAULT_FORMAT, strlen(SE_DATE_DEFAULT_FORMAT));
	return f;
}

void
se_mapping_insert(SeMapping *m, SeMappedField *f)
{
	int			i = search(m, f->path);

	Assert(i < 0);
	i = -i - 1;
	if (m->nfields >= m->capacity)
	{
		int			cap = m->capacity < 16 ? 16 : m->capacity * 2;

		if (m->fields == NULL)
			m->fields = alloc_like(m, sizeof(SeMappedField *) * cap);
		else
			m->fields = repalloc(m->fields, sizeof(SeMappedField *) * cap);
		m->capacity = cap;
	}
	memmove(&m->fields[i + 1], &m->fields[i],
			sizeof(SeMappedField *) * (m->nfields - i));
	m->fields[i] = f;
	m->nfields++;
}

void
se_mapping_remove(SeMapping *m, SeMappedField *f)
{
	int			i = search(m, f->path);

	if (i < 0 || m->fields[i] != f)
		return;
	memmove(&m->fields[i], &m->fields[i + 1],
			sizeof(SeMappedField *) * (m->nfields - i - 1));
	m->nfields--;
}

void
se_mapping_free_field(SeMappedField *f)
{
	pfree(f->path);
	if (f->format)
		pfree(f->format);
	if (f->null_value)
		free_json(f->null_value);
	if (f->multi_fields)
		pfree(f->multi_fields);
	pfree(f);
}

void
se_mapping_add_multi_field(SeMappedField *parent, SeMappedField *child)
{
	SeMappedField **arr = alloc_like(parent, sizeof(SeMappedField *) * (parent->nmulti_fields + 1));

	if (parent->nmulti_fields > 0)
		memcpy(arr, parent->multi_fields, sizeof(SeMappedField *) * parent->nmulti_fields);
	if (parent->multi_fields)
		pfree(parent->multi_fields);
	arr[parent->nmulti_fields++] = child;
	parent->multi_fields = arr;
}

/* Copy of f owned by m's memory context (derived links not copied). */
static SeMappedField *
copy_field(const SeMapping *m, const SeMappedField *f)
{
	SeMappedField *c = alloc_like(m, sizeof(SeMappedField));

	*c = *f;
	c->path = strdup_like(m, f->path, strlen(f->path));
	c->format = f->format ? strdup_like(m, f->format, strlen(f->format)) : NULL;
	c->null_value = f->null_value ? copy_json(c, f->null_value) : NULL;
	c->nmulti_fields = 0;
	c->multi_fields = NULL;
	return c;
}

static void
free_all_fields(SeMapping *m)
{
	int			i;

	for (i = 0; i < m->nfields; i++)
		se_mapping_free_field(m->fields[i]);
	if (m->fields)
		pfree(m->fields);
	m->fields = NULL;
	m->nfields = 0;
	m->capacity = 0;
}

/* Nearest enclosing field of path (its parent object or leaf), or NULL. */
static SeMappedField *
parent_of(SeMapping *m, const char *path)
{
	const char *dot = strrchr(path, '.');
	char	   *pp;
	SeMappedField *p;

	if (dot == NULL)
		return NULL;
	pp = pnstrdup(path, dot - path);
	p = find_mut(m, pp);
	pfree(pp);
	return p;
}

/* Rebuild derived links: inherited dynamic and multi-field lists. */
static void
finalize(SeMapping *m)
{
	int			i;

	for (i = 0; i < m->nfields; i++)
	{
		SeMappedField *f = m->fields[i];

		if (f->multi_fields)
			pfree(f->multi_fields);
		f->multi_fields = NULL;
		f->nmulti_fields = 0;
	}
	/* path order puts every parent before its children */
	m->has_nested = false;
	for (i = 0; i < m->nfields; i++)
	{
		SeMappedField *f = m->fields[i];
		SeMappedField *parent = parent_of(m, f->path);

		m->has_nested |= f->nested;

		if (f->type == SE_FT_OBJECT && !f->dynamic_set)
			f->dynamic = parent ? parent->dynamic : m->dynamic;
		if (f->is_multi_field && parent)
			se_mapping_add_multi_field(parent, f);
	}
}

SeMapping *
se_mapping_copy(const SeMapping *m)
{
	SeMapping  *c = se_mapping_create();
	int			i;

	c->dynamic = m->dynamic;
	c->dynamic_set = m->dynamic_set;
	c->date_detection = m->date_detection;
	c->numeric_detection = m->numeric_detection;
	if (m->nfields > 0)
	{
		c->capacity = m->nfields;
		c->fields = palloc(sizeof(SeMappedField *) * c->capacity);
		for (i = 0; i < m->nfields; i++)
			c->fields[i] = copy_field(c, m->fields[i]);
		c->nfields = m->nfields;
	}
	finalize(c);
	return c;
}

/* ---------------------------------------------------------------------
 * Parameters
 * ---------------------------------------------------------------------
 */

static bool
param_bool(Apply *ap, const char *name, const SeJson *v, bool *out)
{
	StringInfoData s;

	if (v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
	{
		*out = (v->type == SE_JSON_TRUE);
		return true;
	}
	if (v->type == SE_JSON_STRING)
	{
		if (strcmp(v->u.s.str, "true") == 0)
		{
			*out = true;
			return true;
		}
		if (strcmp(v->u.s.str, "false") == 0)
		{
			*out = false;
			return true;
		}
	}
	initStringInfo(&s);
	se_mapping_preview(v, &s);
	se_error_set(ap->err, 400, "mapper_parsing_exception",
				 "Failed to parse value [%s] as only [true] or [false] are allowed.",
				 s.data);
	pfree(s.data);
	return false;
}

static bool
param_int(Apply *ap, const char *name, const SeJson *v, int *out)
{
	int64		val = 0;
	bool		ok = false;
	StringInfoData s;

	if (v->type == SE_JSON_NUMBER && v->u.n.is_int)
	{
		val = v->u.n.i;
		ok = true;
	}
	else if (v->type == SE_JSON_STRING && se_number_text_is_long(v->u.s.str, v->u.s.len))
	{
		val = strtoll(v->u.s.str, NULL, 10);
		ok = true;
	}
	if (ok && val >= PG_INT32_MIN && val <= PG_INT32_MAX)
	{
		if (val < 0)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "[%s] must be positive, got [" INT64_FORMAT "]", name, val);
			return false;
		}
		*out = (int) val;
		return true;
	}
	initStringInfo(&s);
	se_mapping_preview(v, &s);
	se_error_set(ap->err, 400, "mapper_parsing_exception",
				 "Failed to parse mapping: [%s] on mapper [%s] must be an integer, got [%s]",
				 name, ap->path.data, s.data);
	pfree(s.data);
	return false;
}

static bool
param_dynamic(Apply *ap, const SeJson *v, SeDynamic *out)
{
	if (v->type == SE_JSON_STRING && pg_strcasecmp(v->u.s.str, "strict") == 0)
	{
		*out = SE_DYNAMIC_STRICT;
		return true;
	}
	if (v->type == SE_JSON_TRUE || (v->type == SE_JSON_STRING && strcmp(v->u.s.str, "true") == 0))
	{
		*out = SE_DYNAMIC_TRUE;
		return true;
	}
	if (v->type == SE_JSON_FALSE || (v->type == SE_JSON_STRING && strcmp(v->u.s.str, "false") == 0))
	{
		*out = SE_DYNAMIC_FALSE;
		return true;
	}
	if (v->type == SE_JSON_STRING && pg_strcasecmp(v->u.s.str, "runtime") == 0)
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "dynamic [runtime] is not supported (runtime fields are not implemented)");
	else
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Could not convert [%s%sdynamic] to boolean",
					 ap->path.data, ap->path.len > 0 ? "." : "");
	return false;
}

static const SeAnalyzer *
param_analyzer(Apply *ap, const char *name, const SeJson *v)
{
	const SeAnalyzer *a;

	if (v->type != SE_JSON_STRING)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "[%s] on mapper [%s] of type [text] must be a string",
					 name, ap->path.data);
		return NULL;
	}
	a = se_analyzer_lookup(v->u.s.str);
	if (a == NULL)
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "analyzer [%s] has not been configured in mappings", v->u.s.str);
	return a;
}

/* Field names: no NUL, not empty, no empty or blank dot-separated part. */
static bool
check_field_name(Apply *ap, const char *name, int len, bool is_multi)
{
	int			i;
	int			start = 0;

	if ((int) strlen(name) != len)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "field name cannot contain the NUL character");
		return false;
	}
	if (len == 0)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "field name cannot be an empty string");
		return false;
	}
	if (is_multi && strchr(name, '.'))
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Field name [%s] which is a multi field of [%s] cannot contain '.'",
					 name, ap->path.data);
		return false;
	}
	for (i = 0; i <= len; i++)
	{
		if (i == len || name[i] == '.')
		{
			int			j;
			bool		blank = true;

			for (j = start; j < i; j++)
				if (name[j] != ' ' && name[j] != '\t' && name[j] != '\n' && name[j] != '\r')
					blank = false;
			if (i == start)
			{
				se_error_set(ap->err, 400, "mapper_parsing_exception",
							 len == 1 || strspn(name, ".") == (size_t) len ?
							 "field name cannot contain only dots: [%s]" :
							 "field name starting or ending with a [.] makes object resolution ambiguous: [%s]",
							 name);
				return false;
			}
			if (blank)
			{
				se_error_set(ap->err, 400, "mapper_parsing_exception",
							 "field name cannot contain only whitespace: ['%s']", name);
				return false;
			}
			start = i + 1;
		}
	}
	return true;
}

static bool
check_depth(Apply *ap, const char *path)
{
	int			dots = 0;
	const char *p;

	for (p = path; *p; p++)
		if (*p == '.')
			dots++;
	/* root counts 1, each object level one more (ES depth rule) */
	if (dots + 2 > ap->depth_limit)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "Limit of mapping depth [%d] has been exceeded due to object field [%s]",
					 ap->depth_limit, path);
		return false;
	}
	return true;
}

static bool
add_new_field(Apply *ap, SeMappedField *f)
{
	if (ap->m->nfields + 1 > ap->total_fields_limit)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "Limit of total fields [%d] has been exceeded",
					 ap->total_fields_limit);
		return false;
	}
	se_mapping_insert(ap->m, f);
	return true;
}

/* Ensure path (ap->path) is an object, creating an implicit one. */
static bool
ensure_object(Apply *ap)
{
	SeMappedField *f = find_mut(ap->m, ap->path.data);

	if (f == NULL)
	{
		if (!check_depth(ap, ap->path.data))
			return false;
		f = se_mapping_new_field(ap->m, ap->path.data, SE_FT_OBJECT);
		return add_new_field(ap, f);
	}
	if (f->type != SE_FT_OBJECT)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "mapper [%s] cannot be changed from type [%s] to [object]",
					 f->path, se_field_type_name(f->type));
		return false;
	}
	return true;
}

static bool
apply_properties(Apply *ap, const SeJson *props)
{
	int			base = ap->path.len;
	int			i;

	if (props->type != SE_JSON_OBJECT)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Expected map for property [properties] on field [%s] but got a %s",
					 base > 0 ? ap->path.data : "_doc", se_json_type_name(props->type));
		return false;
	}
	for (i = 0; i < props->u.o.count; i++)
	{
		const SeJsonMember *mem = &props->u.o.members[i];
		const char *name = mem->key;
		const char *p;
		const char *dot;

		if (!check_field_name(ap, name, mem->keylen, false))
			return false;
		/* "a.b" in properties means object a with sub-field b */
		for (p = name; (dot = strchr(p, '.')) != NULL; p = dot + 1)
		{
			if (ap->path.len > 0)
				appendStringInfoChar(&ap->path, '.');
			appendBinaryStringInfo(&ap->path, p, dot - p);
			if (!ensure_object(ap))
				return false;
		}
		if (ap->path.len > 0)
			appendStringInfoChar(&ap->path, '.');
		appendStringInfoString(&ap->path, p);
		if (!apply_field(ap, mem->value, NULL))
			return false;
		ap->path.len = base;
		ap->path.data[base] = '\0';
	}
	return true;
}

static bool
unknown_nested_param(Apply *ap, const char *key)
{
	se_error_set(ap->err, 400, "mapper_parsing_exception",
				 "unknown parameter [%s] on mapper [%s] of type [nested]",
				 key, ap->path.data);
	return false;
}

static bool
unknown_param(Apply *ap, const char *key, SeFieldType t)
{
	se_error_set(ap->err, 400, "mapper_parsing_exception",
				 "unknown parameter [%s] on mapper [%s] of type [%s]",
				 key, ap->path.data, se_field_type_name(t));
	return false;
}

/* Is parameter key known for type t? */
static bool
param_allowed(const char *key, SeFieldType t, bool nested)
{
	if (nested && (strcmp(key, "include_in_parent") == 0 ||
				   strcmp(key, "include_in_root") == 0))
		return true;
	if (strcmp(key, "type") == 0)
		return true;
	if (t == SE_FT_OBJECT)
		return strcmp(key, "properties") == 0 || strcmp(key, "dynamic") == 0 ||
			strcmp(key, "enabled") == 0;
	if (strcmp(key, "fields") == 0 || strcmp(key, "index") == 0)
		return true;
	switch (t)
	{
		case SE_FT_TEXT:
			return strcmp(key, "analyzer") == 0 || strcmp(key, "search_analyzer") == 0 ||
				strcmp(key, "norms") == 0 || strcmp(key, "position_increment_gap") == 0;
		case SE_FT_KEYWORD:
			return strcmp(key, "ignore_above") == 0 || strcmp(key, "doc_values") == 0 ||
				strcmp(key, "null_value") == 0 || strcmp(key, "norms") == 0;
		case SE_FT_DATE:
			return strcmp(key, "format") == 0 || strcmp(key, "doc_values") == 0 ||
				strcmp(key, "null_value") == 0 || strcmp(key, "ignore_malformed") == 0;
		case SE_FT_BOOLEAN:
			return strcmp(key, "doc_values") == 0 || strcmp(key, "null_value") == 0;
		case SE_FT_GEO_POINT:
			return strcmp(key, "doc_values") == 0 || strcmp(key, "null_value") == 0 ||
				strcmp(key, "ignore_malformed") == 0 || strcmp(key, "ignore_z_value") == 0;
		default:
			return strcmp(key, "doc_values") == 0 || strcmp(key, "null_value") == 0 ||
				strcmp(key, "coerce") == 0 || strcmp(key, "ignore_malformed") == 0;
	}
}

/* Validate a null_value for field f (params other than null_value set). */
static bool
check_null_value(Apply *ap, const SeMappedField *f, const SeJson *v)
{
	SeError		inner;
	int64		dummy;

	if (f->type == SE_FT_KEYWORD)
	{
		if (v->type == SE_JSON_STRING || v->type == SE_JSON_NUMBER ||
			v->type == SE_JSON_TRUE || v->type == SE_JSON_FALSE)
			return true;
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Error parsing [null_value] on field [%s]: expected a string but got a %s",
					 f->path, se_json_type_name(v->type));
		return false;
	}
	se_error_init(&inner);
	if (f->type == SE_FT_GEO_POINT)
	{
		SeGeoPoint	p;

		if (se_geo_parse_point(v, f->ignore_z_value, &p, &inner))
		{
			if (f->ignore_malformed || se_geo_point_valid(&p))
				return true;
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "Error parsing [null_value] on field [%s]: illegal latitude or longitude value",
						 f->path);
			return false;
		}
	}
	if (f->type == SE_FT_GEO_POINT ||
		!se_field_parse_value(f, v, true, f->coerce, &dummy, &inner))
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Error parsing [null_value] on field [%s]: %s", f->path, inner.reason);
		pfree(inner.reason);
		return false;
	}
	return true;
}

static void
add_conflict(StringInfo c, const char *param, const char *from, const char *to)
{
	appendStringInfo(c, "\n\tCannot update parameter [%s] from [%s] to [%s]",
					 param, from, to);
}

static const char *
bool_str(bool b)
{
	return b ? "true" : "false";
}

static const char *
analyzer_str(const SeAnalyzer *a)
{
	return a ? se_analyzer_name(a) : "default";
}

/*
 * Merge definition nf into the existing field f (same type): conflicts for
 * parameters ES cannot update, new values for those it can.
 */
static bool
merge_leaf(Apply *ap, SeMappedField *f, const SeMappedField *nf)
{
	StringInfoData c;

	initStringInfo(&c);
	if (f->index != nf->index)
		add_conflict(&c, "index", bool_str(f->index), bool_str(nf->index));
	if (f->type != SE_FT_TEXT && f->doc_values != nf->doc_values)
		add_conflict(&c, "doc_values", bool_str(f->doc_values), bool_str(nf->doc_values));
	if ((f->type == SE_FT_TEXT || f->type == SE_FT_KEYWORD) && f->norms != nf->norms &&
		!(f->norms && !nf->norms))	/* norms can only be disabled */
		add_conflict(&c, "norms", bool_str(f->norms), bool_str(nf->norms));
	if (f->type == SE_FT_TEXT)
	{
		if (f->analyzer != nf->analyzer)
			add_conflict(&c, "analyzer", analyzer_str(f->analyzer), analyzer_str(nf->analyzer));
		if (f->position_increment_gap != nf->position_increment_gap)
		{
			char		a[16],
						b[16];

			snprintf(a, sizeof(a), "%d", f->position_increment_gap);
			snprintf(b, sizeof(b), "%d", nf->position_increment_gap);
			add_conflict(&c, "position_increment_gap", a, b);
		}
	}
	if (f->type == SE_FT_DATE && strcmp(f->format, nf->format) != 0)
		add_conflict(&c, "format", f->format, nf->format);
	if (f->type != SE_FT_TEXT && !json_equal(f->null_value, nf->null_value))
	{
		StringInfoData a,
					b;

		initStringInfo(&a);
		initStringInfo(&b);
		if (f->null_value)
			se_mapping_preview(f->null_value, &a);
		else
			appendStringInfoString(&a, "null");
		if (nf->null_value)
			se_mapping_preview(nf->null_value, &b);
		else
			appendStringInfoString(&b, "null");
		add_conflict(&c, "null_value", a.data, b.data);
	}
	if (c.len > 0)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "Mapper for [%s] conflicts with existing mapper:%s", f->path, c.data);
		pfree(c.data);
		return false;
	}
	pfree(c.data);
	/* updatable parameters take the new definition's values */
	f->search_analyzer = nf->search_analyzer;
	f->ignore_above = nf->ignore_above;
	f->coerce = nf->coerce;
	f->ignore_malformed = nf->ignore_malformed;
	f->ignore_z_value = nf->ignore_z_value;
	f->norms = nf->norms;
	return true;
}

/*
 * Apply one field definition at ap->path.  multi_parent: the leaf this is a
 * "fields" entry of, or NULL for a property.
 */
static bool
apply_field(Apply *ap, const SeJson *def, SeMappedField *multi_parent)
{
	SeMappedField nf;
	SeMappedField *f;
	const SeJson *type_json;
	const SeJson *props = NULL;
	const SeJson *fields = NULL;
	const SeJson *null_value = NULL;
	bool		analyzer_set = false;
	bool		search_analyzer_set = false;
	bool		enabled_set = false;
	bool		is_nested = false;
	SeFieldType type = SE_FT_OBJECT;
	int			i;

	if (def->type != SE_JSON_OBJECT)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Expected map for property [%s] on field [%s] but got a %s",
					 multi_parent ? "fields" : "properties", ap->path.data,
					 se_json_type_name(def->type));
		return false;
	}
	type_json = se_json_get(def, "type");
	if (type_json != NULL)
	{
		if (type_json->type != SE_JSON_STRING)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "No type specified for field [%s]", ap->path.data);
			return false;
		}
		if (strcmp(type_json->u.s.str, "nested") == 0 && !multi_parent)
			is_nested = true;
		else if (!type_by_name(type_json->u.s.str, &type))
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "No handler for type [%s] declared on field [%s]",
						 type_json->u.s.str, ap->path.data);
			return false;
		}
	}
	else if (multi_parent)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "No type specified for field [%s]", ap->path.data);
		return false;
	}
	if (multi_parent && type == SE_FT_OBJECT)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Type [object] cannot be used in multi field");
		return false;
	}

	/* the definition with defaults, then its parameters */
	memset(&nf, 0, sizeof(nf));
	init_field_defaults(ap->m, &nf, type);
	nf.path = ap->path.data;
	nf.format = (type == SE_FT_DATE) ? (char *) SE_DATE_DEFAULT_FORMAT : NULL;
	nf.is_multi_field = (multi_parent != NULL);
	nf.nested = is_nested;
	for (i = 0; i < def->u.o.count; i++)
	{
		const char *key = def->u.o.members[i].key;
		const SeJson *v = def->u.o.members[i].value;

		if (!param_allowed(key, type, is_nested))
			return is_nested ? unknown_nested_param(ap, key) : unknown_param(ap, key, type);
		if (strcmp(key, "type") == 0)
			continue;
		if (v->type == SE_JSON_NULL && strcmp(key, "null_value") != 0)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "[%s] on mapper [%s] of type [%s] must not have a [null] value",
						 key, ap->path.data, se_field_type_name(type));
			return false;
		}
		if (strcmp(key, "properties") == 0)
			props = v;
		else if (strcmp(key, "fields") == 0)
			fields = v;
		else if (strcmp(key, "null_value") == 0)
			null_value = (v->type == SE_JSON_NULL) ? NULL : v;
		else if (strcmp(key, "dynamic") == 0)
		{
			if (!param_dynamic(ap, v, &nf.dynamic))
				return false;
			nf.dynamic_set = true;
		}
		else if (strcmp(key, "enabled") == 0)
		{
			if (!param_bool(ap, key, v, &nf.enabled))
				return false;
			enabled_set = true;
		}
		else if (strcmp(key, "include_in_parent") == 0)
		{
			if (!param_bool(ap, key, v, &nf.include_in_parent))
				return false;
		}
		else if (strcmp(key, "include_in_root") == 0)
		{
			if (!param_bool(ap, key, v, &nf.include_in_root))
				return false;
		}
		else if (strcmp(key, "index") == 0)
		{
			if (!param_bool(ap, key, v, &nf.index))
				return false;
		}
		else if (strcmp(key, "doc_values") == 0)
		{
			if (!param_bool(ap, key, v, &nf.doc_values))
				return false;
		}
		else if (strcmp(key, "norms") == 0)
		{
			if (!param_bool(ap, key, v, &nf.norms))
				return false;
		}
		else if (strcmp(key, "coerce") == 0)
		{
			if (!param_bool(ap, key, v, &nf.coerce))
				return false;
		}
		else if (strcmp(key, "ignore_malformed") == 0)
		{
			if (!param_bool(ap, key, v, &nf.ignore_malformed))
				return false;
		}
		else if (strcmp(key, "ignore_z_value") == 0)
		{
			if (!param_bool(ap, key, v, &nf.ignore_z_value))
				return false;
		}
		else if (strcmp(key, "ignore_above") == 0)
		{
			if (!param_int(ap, key, v, &nf.ignore_above))
				return false;
		}
		else if (strcmp(key, "position_increment_gap") == 0)
		{
			if (!param_int(ap, key, v, &nf.position_increment_gap))
				return false;
		}
		else if (strcmp(key, "analyzer") == 0)
		{
			if ((nf.analyzer = param_analyzer(ap, key, v)) == NULL)
				return false;
			analyzer_set = true;
		}
		else if (strcmp(key, "search_analyzer") == 0)
		{
			if ((nf.search_analyzer = param_analyzer(ap, key, v)) == NULL)
				return false;
			search_analyzer_set = true;
		}
		else if (strcmp(key, "format") == 0)
		{
			if (v->type != SE_JSON_STRING)
			{
				se_error_set(ap->err, 400, "mapper_parsing_exception",
							 "[format] on mapper [%s] of type [date] must be a string",
							 ap->path.data);
				return false;
			}
			if (!se_date_format_validate(v->u.s.str, ap->err))
				return false;
			nf.format = (char *) v->u.s.str;
		}
	}
	if (type == SE_FT_TEXT)
	{
		if (search_analyzer_set && !analyzer_set)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "analyzer on field [%s] must be set when search_analyzer is set",
						 ap->path.data);
			return false;
		}
		if (!search_analyzer_set)
			nf.search_analyzer = nf.analyzer;
	}
	if (null_value && !check_null_value(ap, &nf, null_value))
		return false;
	nf.null_value = (SeJson *) null_value;

	/* merge into the working mapping */
	f = find_mut(ap->m, ap->path.data);
	if (f == NULL)
	{
		if (type == SE_FT_OBJECT && !check_depth(ap, ap->path.data))
			return false;
		f = copy_field(ap->m, &nf);
		if (!add_new_field(ap, f))
		{
			se_mapping_free_field(f);
			return false;
		}
	}
	else if (f->type == SE_FT_OBJECT && type != SE_FT_OBJECT)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "can't merge a non object mapping [%s] with an object mapping",
					 f->path);
		return false;
	}
	else if (f->type != type)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "mapper [%s] cannot be changed from type [%s] to [%s]",
					 f->path, se_field_type_name(f->type), se_field_type_name(type));
		return false;
	}
	else if (type == SE_FT_OBJECT && f->nested != is_nested)
	{
		/* ES's MapperErrors words, both ways */
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 f->nested ? "can't merge a non-nested mapping [%s] with a nested mapping" :
					 "can't merge a nested mapping [%s] with a non-nested mapping",
					 f->path);
		return false;
	}
	else if (type == SE_FT_OBJECT)
	{
		if (is_nested && (nf.include_in_parent != f->include_in_parent ||
						  nf.include_in_root != f->include_in_root))
		{
			se_error_set(ap->err, 400, "illegal_argument_exception",
						 "the [%s] parameter can't be updated on a nested object mapping",
						 nf.include_in_parent != f->include_in_parent ?
						 "include_in_parent" : "include_in_root");
			return false;
		}
		if (enabled_set && nf.enabled != f->enabled)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "the [enabled] parameter can't be updated for the object mapping [%s]",
						 f->path);
			return false;
		}
		if (nf.dynamic_set)
		{
			f->dynamic = nf.dynamic;
			f->dynamic_set = true;
		}
	}
	else if (!merge_leaf(ap, f, &nf))
		return false;

	if (props && !apply_properties(ap, props))
		return false;
	if (fields)
	{
		int			base = ap->path.len;

		if (fields->type != SE_JSON_OBJECT)
		{
			se_error_set(ap->err, 400, "mapper_parsing_exception",
						 "Expected map for property [fields] on field [%s] but got a %s",
						 ap->path.data, se_json_type_name(fields->type));
			return false;
		}
		for (i = 0; i < fields->u.o.count; i++)
		{
			const SeJsonMember *mem = &fields->u.o.members[i];

			if (!check_field_name(ap, mem->key, mem->keylen, true))
				return false;
			appendStringInfoChar(&ap->path, '.');
			appendStringInfoString(&ap->path, mem->key);
			if (!apply_field(ap, mem->value, f))
				return false;
			ap->path.len = base;
			ap->path.data[base] = '\0';
		}
	}
	return true;
}

/* Apply a whole mappings body to the working mapping ap->m. */
static bool
apply_root(Apply *ap, const SeJson *mappings)
{
	StringInfoData unsupported;
	const SeJson *props = NULL;
	int			i;

	if (mappings == NULL || mappings->type == SE_JSON_NULL)
		return true;
	if (mappings->type != SE_JSON_OBJECT)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Expected map for mappings but got a %s",
					 se_json_type_name(mappings->type));
		return false;
	}
	initStringInfo(&unsupported);
	for (i = 0; i < mappings->u.o.count; i++)
	{
		const char *key = mappings->u.o.members[i].key;
		const SeJson *v = mappings->u.o.members[i].value;

		if (strcmp(key, "properties") == 0)
			props = v;
		else if (strcmp(key, "dynamic") == 0)
		{
			if (!param_dynamic(ap, v, &ap->m->dynamic))
				return false;
			ap->m->dynamic_set = true;
		}
		else if (strcmp(key, "date_detection") == 0)
		{
			if (!param_bool(ap, key, v, &ap->m->date_detection))
				return false;
		}
		else if (strcmp(key, "numeric_detection") == 0)
		{
			if (!param_bool(ap, key, v, &ap->m->numeric_detection))
				return false;
		}
		else
		{
			appendStringInfo(&unsupported, " [%s : ", key);
			se_mapping_preview(v, &unsupported);
			appendStringInfoChar(&unsupported, ']');
		}
	}
	if (unsupported.len > 0)
	{
		se_error_set(ap->err, 400, "mapper_parsing_exception",
					 "Root mapping definition has unsupported parameters: %s",
					 unsupported.data);
		return false;
	}
	pfree(unsupported.data);
	if (props && props->type != SE_JSON_NULL && !apply_properties(ap, props))
		return false;
	return true;
}

/* index.mapping.nested_fields.limit over the whole mapping, as ES's check */
static bool
check_nested_limit(Apply *ap)
{
	int			n = 0;
	int			i;

	for (i = 0; i < ap->m->nfields; i++)
		if (ap->m->fields[i]->nested)
			n++;
	if (n > ap->nested_fields_limit)
	{
		se_error_set(ap->err, 400, "illegal_argument_exception",
					 "Limit of nested fields [%d] has been exceeded",
					 ap->nested_fields_limit);
		return false;
	}
	return true;
}

static void
apply_init(Apply *ap, SeMapping *m, const SeMappingLimits *limits, SeError *err)
{
	ap->m = m;
	ap->total_fields_limit = (limits && limits->total_fields_limit > 0) ?
		limits->total_fields_limit : SE_DEFAULT_TOTAL_FIELDS_LIMIT;
	ap->depth_limit = (limits && limits->depth_limit > 0) ?
		limits->depth_limit : SE_DEFAULT_DEPTH_LIMIT;
	ap->nested_fields_limit = (limits && limits->nested_fields_limit > 0) ?
		limits->nested_fields_limit : SE_DEFAULT_NESTED_FIELDS_LIMIT;
	ap->err = err;
	initStringInfo(&ap->path);
}

static void
mapping_free(SeMapping *m)
{
	free_all_fields(m);
	pfree(m);
}

SeMapping *
se_mapping_from_json(const SeJson *mappings, const SeMappingLimits *limits,
					 SeError *err)
{
	SeMapping  *m = se_mapping_create();
	Apply		ap;
	bool		ok;

	apply_init(&ap, m, limits, err);
	ok = apply_root(&ap, mappings) && check_nested_limit(&ap);
	pfree(ap.path.data);
	if (!ok)
	{
		mapping_free(m);
		return NULL;
	}
	finalize(m);
	return m;
}

bool
se_mapping_merge(SeMapping *m, const SeJson *mappings,
				 const SeMappingLimits *limits, SeError *err)
{
	SeMapping  *w = se_mapping_copy(m);
	Apply		ap;
	bool		ok;
	int			i;

	apply_init(&ap, w, limits, err);
	ok = apply_root(&ap, mappings) && check_nested_limit(&ap);
	pfree(ap.path.data);
	if (!ok)
	{
		mapping_free(w);
		return false;
	}

	/* success: move the result into m's own memory context */
	free_all_fields(m);
	m->dynamic = w->dynamic;
	m->dynamic_set = w->dynamic_set;
	m->date_detection = w->date_detection;
	m->numeric_detection = w->numeric_detection;
	if (w->nfields > 0)
	{
		m->capacity = w->nfields;
		m->fields = alloc_like(m, sizeof(SeMappedField *) * m->capacity);
		for (i = 0; i < w->nfields; i++)
			m->fields[i] = copy_field(m, w->fields[i]);
		m->nfields = w->nfields;
	}
	mapping_free(w);
	finalize(m);
	return true;
}

bool
se_mapping_has_nested(const SeMapping *m)
{
	return m != NULL && m->has_nested;
}

const SeMappedField *
se_mapping_nested_scope(const SeMapping *m, const char *path)
{
	char	   *p = pstrdup(path);
	const SeMappedField *found = NULL;

	for (;;)
	{
		const SeMappedField *f = se_mapping_find(m, p);
		char	   *dot;

		if (f && f->nested)
		{
			found = f;
			break;
		}
		if ((dot = strrchr(p, '.')) == NULL)
			break;
		*dot = '\0';
	}
	pfree(p);
	return found;
}

/* ---------------------------------------------------------------------
 * GET _mapping output
 * ---------------------------------------------------------------------
 */

static const char *
dynamic_str(SeDynamic d)
{
	switch (d)
	{
		case SE_DYNAMIC_FALSE:
			return "false";
		case SE_DYNAMIC_STRICT:
			return "strict";
		default:
			return "true";
	}
}

static void write_children(const SeMapping *m, const char *prefix, int plen,
						   StringInfo out);

static void
write_key(StringInfo out, bool *first, const char *key)
{
	if (!*first)
		appendStringInfoChar(out, ',');
	*first = false;
	se_json_write_string(out, key, strlen(key));
	appendStringInfoChar(out, ':');
}

/* Does f have direct children (properties or multi-fields)? */
static bool
has_children(const SeMapping *m, const SeMappedField *f, StringInfo prefix)
{
	int			lo,
				hi;

	resetStringInfo(prefix);
	appendStringInfo(prefix, "%s.", f->path);
	prefix_range(m, prefix->data, prefix->len, &lo, &hi);
	return lo < hi;
}

static void
write_field(const SeMapping *m, const SeMappedField *f, StringInfo out)
{
	bool		first = true;
	StringInfoData prefix;
	bool		children;

	initStringInfo(&prefix);
	children = has_children(m, f, &prefix);
	appendStringInfoChar(out, '{');
	if (f->nested)
	{
		write_key(out, &first, "type");
		appendStringInfoString(out, "\"nested\"");
		if (f->include_in_parent)
		{
			write_key(out, &first, "include_in_parent");
			appendStringInfoString(out, "true");
		}
		if (f->include_in_root)
		{
			write_key(out, &first, "include_in_root");
			appendStringInfoString(out, "true");
		}
	}
	else if (f->type != SE_FT_OBJECT || !children)
	{
		write_key(out, &first, "type");
		se_json_write_string(out, se_field_type_name(f->type), strlen(se_field_type_name(f->type)));
	}
	switch (f->type)
	{
		case SE_FT_OBJECT:
			if (f->dynamic_set)
			{
				write_key(out, &first, "dynamic");
				se_json_write_string(out, dynamic_str(f->dynamic), strlen(dynamic_str(f->dynamic)));
			}
			if (!f->enabled)
			{
				write_key(out, &first, "enabled");
				appendStringInfoString(out, "false");
			}
			break;
		case SE_FT_TEXT:
			if (f->analyzer && strcmp(se_analyzer_name(f->analyzer), "standard") != 0)
			{
				write_key(out, &first, "analyzer");
				se_json_write_string(out, se_analyzer_name(f->analyzer), strlen(se_analyzer_name(f->analyzer)));
			}
			if (f->search_analyzer && f->search_analyzer != f->analyzer)
			{
				write_key(out, &first, "search_analyzer");
				se_json_write_string(out, se_analyzer_name(f->search_analyzer), strlen(se_analyzer_name(f->search_analyzer)));
			}
			break;
		case SE_FT_KEYWORD:
			if (f->ignore_above > 0)
			{
				write_key(out, &first, "ignore_above");
				appendStringInfo(out, "%d", f->ignore_above);
			}
			break;
		case SE_FT_DATE:
			if (f->format && strcmp(f->format, SE_DATE_DEFAULT_FORMAT) != 0)
			{
				write_key(out, &first, "format");
				se_json_write_string(out, f->format, strlen(f->format));
			}
			break;
		default:
			break;
	}
	if (f->type != SE_FT_OBJECT)
	{
		if (!f->index)
		{
			write_key(out, &first, "index");
			appendStringInfoString(out, "false");
		}
		if (f->type != SE_FT_TEXT && !f->doc_values)
		{
			write_key(out, &first, "doc_values");
			appendStringInfoString(out, "false");
		}
		if ((f->type == SE_FT_TEXT && !f->norms) || (f->type == SE_FT_KEYWORD && f->norms))
		{
			write_key(out, &first, "norms");
			appendStringInfoString(out, bool_str(f->norms));
		}
		if (f->type == SE_FT_TEXT && f->position_increment_gap != SE_POSITION_INCREMENT_GAP)
		{
			write_key(out, &first, "position_increment_gap");
			appendStringInfo(out, "%d", f->position_increment_gap);
		}
		if (is_numeric_type(f->type) && !f->coerce)
		{
			write_key(out, &first, "coerce");
			appendStringInfoString(out, "false");
		}
		if ((is_numeric_type(f->type) || f->type == SE_FT_DATE ||
			 f->type == SE_FT_GEO_POINT) && f->ignore_malformed)
		{
			write_key(out, &first, "ignore_malformed");
			appendStringInfoString(out, "true");
		}
		if (f->type == SE_FT_GEO_POINT && !f->ignore_z_value)
		{
			write_key(out, &first, "ignore_z_value");
			appendStringInfoString(out, "false");
		}
		if (f->null_value)
		{
			write_key(out, &first, "null_value");
			se_json_write(out, f->null_value);
		}
	}
	if (children)
	{
		write_key(out, &first, f->type == SE_FT_OBJECT ? "properties" : "fields");
		write_children(m, prefix.data, prefix.len, out);
	}
	appendStringInfoChar(out, '}');
	pfree(prefix.data);
}

/* {"name": {...}, ...} of the direct children of prefix (or of the root). */
static void
write_children(const SeMapping *m, const char *prefix, int plen, StringInfo out)
{
	int			lo,
				hi,
				i;
	bool		first = true;

	if (plen > 0)
		prefix_range(m, prefix, plen, &lo, &hi);
	else
	{
		lo = 0;
		hi = m->nfields;
	}
	appendStringInfoChar(out, '{');
	for (i = lo; i < hi; i++)
	{
		const SeMappedField *f = m->fields[i];
		const char *name = f->path + plen;

		if (strchr(name, '.') != NULL)
			continue;			/* a grandchild: written by its parent */
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		se_json_write_string(out, name, strlen(name));
		appendStringInfoChar(out, ':');
		write_field(m, f, out);
	}
	appendStringInfoChar(out, '}');
}

void
se_mapping_to_json(const SeMapping *m, StringInfo out)
{
	bool		first = true;

	appendStringInfoChar(out, '{');
	if (m->dynamic_set)
	{
		write_key(out, &first, "dynamic");
		se_json_write_string(out, dynamic_str(m->dynamic), strlen(dynamic_str(m->dynamic)));
	}
	if (!m->date_detection)
	{
		write_key(out, &first, "date_detection");
		appendStringInfoString(out, "false");
	}
	if (m->numeric_detection)
	{
		write_key(out, &first, "numeric_detection");
		appendStringInfoString(out, "true");
	}
	if (m->nfields > 0)
	{
		write_key(out, &first, "properties");
		write_children(m, "", 0, out);
	}
	appendStringInfoChar(out, '}');
}
