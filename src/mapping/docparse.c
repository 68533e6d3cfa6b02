/*-------------------------------------------------------------------------
 *
 * docparse.c
 *	  Document parsing: a JSON _source walked against the mapping (with
 *	  dynamic mapping) and turned into segment builder calls.
 *
 * Parsing has two phases so that a bad document never leaves half of itself
 * in the segment buffer: the walk converts and checks every value (numbers
 * parsed, dates resolved, text analyzed) into a list of pending values and
 * adds dynamic fields to the mapping, remembering them; only when the whole
 * document is good are the pending values handed to the builder.  On error
 * the dynamic fields are taken out again and the builder was never touched.
 *
 * The walk keeps the current full path in one reused buffer and finds each
 * field by binary search, so a document costs O(values * log fields) with
 * no per-field string building.  Pending values are grouped by field before
 * the builder sees them, because positions of a multi-valued text field run
 * on across its values (position_increment_gap apart) even when the values
 * are scattered over an array of objects.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "mapping/mapping.h"

typedef enum PendingKind
{
	PV_TEXT,
	PV_KEYWORD,
	PV_NUMERIC
} PendingKind;

/* A converted value waiting for the builder. */
typedef struct PendingValue
{
	const SeMappedField *field;
	int			seq;			/* document order, to keep it stable */
	PendingKind kind;
	int64		num;			/* numeric */
	const char *str;			/* keyword bytes (point into the source) */
	int			len;
	int			tok_start;		/* text: tokens [tok_start, tok_end); -1: str
								 * [0, len) not analyzed yet */
	int			tok_end;
	int			span;			/* text: positions used by the value */
	const SeAnalyzer *analyzer; /* text not analyzed yet */
	int			sub;			/* the (nested) document it belongs to */
} PendingValue;

/*
 * A document of the block: 0 is the root, the others one object each of a
 * nested field, in the order the walk met them (a parent before its
 * children).  They reach the builder in the reverse order, as
 * Elasticsearch writes them: every nested doc before its parent, so a
 * parent's children are the docs between the previous parent-level doc
 * and it (Lucene's block join).
 */
typedef struct SubDoc
{
	const SeMappedField *field; /* the nested field; NULL for the root */
	int			parent;			/* enclosing document */
	int			offset;			/* position among its parent's field values */
} SubDoc;

typedef struct DocParse
{
	SeMapping  *m;
	int			total_fields_limit;
	int			depth_limit;
	const char *doc_id;
	StringInfoData path;		/* full path of the value being parsed */
	PendingValue *values;
	int			nvalues;
	int			capvalues;
	SeTokenList tokens;			/* tokens of all text values */
	SeBuilderTerm *bterms;		/* one text value's tokens for the builder */
	int			capbterms;
	SeMappedField **added;		/* dynamic fields, for rollback */
	int			nadded;
	int			capadded;
	bool		defer_text;		/* analyze short text values in se_doc_add */
	SeError    *err;
	/* nested documents (SubDoc); nsubs is 1 when there are none */
	SubDoc	   *subs;
	int			nsubs;
	int			capsubs;
	int			cur_sub;
	int			nested_objects_limit;
	char	   *id_copy;		/* doc_id, kept for the nested docs' _id */
} DocParse;

/* ES metadata fields that a document body may not contain at its root. */
static const char *const metadata_fields[] = {
	"_id", "_index", "_source", "_routing", "_seq_no", "_primary_term",
	"_version", "_ignored", "_field_names", "_doc_count", "_tier",
	"_data_stream_timestamp", "_nested_path", "_feature", "_tsid"
};

static bool parse_object(DocParse *dp, const SeJson *obj, SeDynamic dyn);
static bool parse_value(DocParse *dp, const char *name, const SeJson *v,
						SeDynamic dyn);

static const char *
doc_id_str(const DocParse *dp)
{
	return dp->doc_id ? dp->doc_id : "null";
}

static void
push_path(DocParse *dp, const char *name, int len)
{
	if (dp->path.len > 0)
		appendStringInfoChar(&dp->path, '.');
	appendBinaryStringInfo(&dp->path, name, len);
}

static void
pop_path(DocParse *dp, int len)
{
	dp->path.len = len;
	dp->path.data[len] = '\0';
}

/* Path of the object that contains the current field ("_doc" at the root). */
static void
parent_path(const DocParse *dp, StringInfo out)
{
	const char *dot = strrchr(dp->path.data, '.');

	if (dot == NULL)
		appendStringInfoString(out, "_doc");
	else
		appendBinaryStringInfo(out, dp->path.data, dot - dp->path.data);
}

static PendingValue *
new_pending(DocParse *dp, const SeMappedField *f, PendingKind kind)
{
	PendingValue *pv;

	if (dp->nvalues >= dp->capvalues)
	{
		dp->capvalues = dp->capvalues == 0 ? 32 : dp->capvalues * 2;
		if (dp->values == NULL)
			dp->values = palloc(sizeof(PendingValue) * dp->capvalues);
		else
			dp->values = repalloc(dp->values, sizeof(PendingValue) * dp->capvalues);
	}
	pv = &dp->values[dp->nvalues];
	memset(pv, 0, sizeof(*pv));
	pv->field = f;
	pv->seq = dp->nvalues++;
	pv->kind = kind;
	pv->sub = dp->cur_sub;
	return pv;
}

static void
failed_to_parse(DocParse *dp, const SeMappedField *f, const SeJson *v)
{
	StringInfoData s;

	initStringInfo(&s);
	se_mapping_preview(v, &s);
	se_error_set(dp->err, 400, "mapper_parsing_exception",
				 "failed to parse field [%s] of type [%s] in document with id '%s'. "
				 "Preview of field's value: '%s'",
				 f->path, se_field_type_name(f->type), doc_id_str(dp), s.data);
	pfree(s.data);
}

/* Lucene refuses terms over 32766 bytes; ES reports it like this. */
StaticAssertDecl(SE_DEFER_TEXT_MAX * 3 <= SE_MAX_TERM_LENGTH,
				 "deferred text must not be able to produce an immense term");

void
se_immense_term_error(SeError *err, const char *field, const char *term, int len)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	for (i = 0; i < 30 && i < len; i++)
		appendStringInfo(&s, "%s%d", i > 0 ? ", " : "", (int) (signed char) term[i]);
	se_error_set(err, 400, "illegal_argument_exception",
				 "Document contains at least one immense term in field=\"%s\" "
				 "(whose UTF8 encoding is longer than the max length %d), all of which "
				 "were skipped.  Please correct the analyzer to not produce such terms.  "
				 "The prefix of the first immense term is: '[%s]...', original message: "
				 "bytes can be at most %d in length; got %d",
				 field, SE_MAX_TERM_LENGTH, s.data, SE_MAX_TERM_LENGTH, len);
	pfree(s.data);
}

static bool
check_term_length(DocParse *dp, const SeMappedField *f, const char *term, int len)
{
	if (len <= SE_MAX_TERM_LENGTH)
		return true;
	se_immense_term_error(dp->err, f->path, term, len);
	return false;
}

/* String form of a scalar for text/keyword fields (numbers as written). */
static bool
scalar_text(const SeJson *v, const char **str, int *len)
{
	switch (v->type)
	{
		case SE_JSON_STRING:
			*str = v->u.s.str;
			*len = v->u.s.len;
			return true;
		case SE_JSON_NUMBER:
			*str = v->u.n.text;
			*len = v->u.n.len;
			return true;
		case SE_JSON_TRUE:
			*str = "true";
			*len = 4;
			return true;
		case SE_JSON_FALSE:
			*str = "false";
			*len = 5;
			return true;
		default:
			return false;
	}
}

/* Convert one value of leaf f (then of its multi-fields) into pending values. */
static bool
index_leaf(DocParse *dp, const SeMappedField *f, const SeJson *v)
{
	const SeJson *val = v;
	int			i;

	if (val->type == SE_JSON_NULL)
		val = f->null_value;	/* NULL: nothing to index for this field */

	if (val != NULL)
	{
		switch (f->type)
		{
			case SE_FT_OBJECT:
				break;
			case SE_FT_TEXT:
				{
					const char *str;
					int			len;

					if (!scalar_text(val, &str, &len))
					{
						failed_to_parse(dp, f, v);
						return false;
					}
					if (f->index)
					{
						const SeAnalyzer *a = f->analyzer ? f->analyzer : se_analyzer_lookup("standard");
						PendingValue *pv = new_pending(dp, f, PV_TEXT);
						int			t;

						/*
						 * A value too short to hold an immense term cannot
						 * fail analysis: it may wait for se_doc_add.
						 */
						if (dp->defer_text && len <= SE_DEFER_TEXT_MAX)
						{
							pv->tok_start = -1;
							pv->str = str;
							pv->len = len;
							pv->analyzer = a;
							break;
						}
						pv->tok_start = dp->tokens.ntokens;
						dp->tokens.next_position = 0;
						if (a)
							se_analyze(a, str, len, &dp->tokens);
						pv->tok_end = dp->tokens.ntokens;
						pv->span = dp->tokens.next_position;
						for (t = pv->tok_start; t < pv->tok_end; t++)
							if (!check_term_length(dp, f, dp->tokens.tokens[t].term,
												   dp->tokens.tokens[t].len))
								return false;
					}
					break;
				}
			case SE_FT_KEYWORD:
				{
					const char *str;
					int			len;

					if (!scalar_text(val, &str, &len))
					{
						failed_to_parse(dp, f, v);
						return false;
					}
					/* values over ignore_above stay in _source only */
					if (f->ignore_above > 0 && se_utf16_length(str, len) > f->ignore_above)
						break;
					if (f->index || f->doc_values)
					{
						PendingValue *pv;

						if (!check_term_length(dp, f, str, len))
							return false;
						pv = new_pending(dp, f, PV_KEYWORD);
						pv->str = str;
						pv->len = len;
					}
					break;
				}
			case SE_FT_GEO_POINT:
				{
					SeGeoPoint	p;
					SeError		inner;

					se_error_init(&inner);
					if (!se_geo_parse_point(val, f->ignore_z_value, &p, &inner))
					{
						if (inner.reason)
							pfree(inner.reason);
						if (f->ignore_malformed)
							break;
						failed_to_parse(dp, f, v);
						return false;
					}
					if (!se_geo_point_valid(&p))
					{
						/* ES normalizes what ignore_malformed lets in */
						if (!f->ignore_malformed)
						{
							failed_to_parse(dp, f, v);
							return false;
						}
						se_geo_normalize(&p);
					}
					if (f->index || f->doc_values)
						new_pending(dp, f, PV_NUMERIC)->num = se_geo_encode(p.lat, p.lon);
					break;
				}
			default:
				{
					int64		num;
					SeError		inner;

					se_error_init(&inner);
					if (val->type == SE_JSON_OBJECT || val->type == SE_JSON_ARRAY ||
						!se_field_parse_value(f, val, f->coerce, f->coerce, &num, &inner))
					{
						/* the ES message names the field; the cause is dropped */
						if (inner.reason)
							pfree(inner.reason);
						if (f->ignore_malformed && f->type != SE_FT_BOOLEAN)
							break;
						failed_to_parse(dp, f, v);
						return false;
					}
					if (f->index || f->doc_values)
						new_pending(dp, f, PV_NUMERIC)->num = num;
					break;
				}
		}
	}

	/* multi-fields see the same value (a null takes their own null_value) */
	for (i = 0; i < f->nmulti_fields; i++)
		if (!index_leaf(dp, f->multi_fields[i], v))
			return false;
	return true;
}

static bool
check_new_fields_limit(DocParse *dp)
{
	if (dp->m->nfields > dp->total_fields_limit)
	{
		se_error_set(dp->err, 400, "illegal_argument_exception",
					 "Limit of total fields [%d] has been exceeded while adding new fields [%d]",
					 dp->total_fields_limit, dp->nadded);
		return false;
	}
	return true;
}

/* Add a dynamic field at the current path to the mapping (undone on error). */
static SeMappedField *
add_dynamic(DocParse *dp, SeFieldType type, SeDynamic inherited)
{
	SeMappedField *f = se_mapping_new_field(dp->m, dp->path.data, type);

	if (type == SE_FT_OBJECT)
		f->dynamic = inherited;
	se_mapping_insert(dp->m, f);
	if (dp->nadded >= dp->capadded)
	{
		dp->capadded = dp->capadded == 0 ? 8 : dp->capadded * 2;
		if (dp->added == NULL)
			dp->added = palloc(sizeof(SeMappedField *) * dp->capadded);
		else
			dp->added = repalloc(dp->added, sizeof(SeMappedField *) * dp->capadded);
	}
	dp->added[dp->nadded++] = f;
	return f;
}

static bool
strict_error(DocParse *dp, const char *name)
{
	StringInfoData within;

	initStringInfo(&within);
	parent_path(dp, &within);
	se_error_set(dp->err, 400, "strict_dynamic_mapping_exception",
				 "mapping set to strict, dynamic introduction of [%s] within [%s] is not allowed",
				 name, within.data);
	pfree(within.data);
	return false;
}

static bool
check_object_depth(DocParse *dp)
{
	int			dots = 0;
	int			i;

	for (i = 0; i < dp->path.len; i++)
		if (dp->path.data[i] == '.')
			dots++;
	if (dots + 2 > dp->depth_limit)
	{
		se_error_set(dp->err, 400, "illegal_argument_exception",
					 "Limit of mapping depth [%d] has been exceeded due to object field [%s]",
					 dp->depth_limit, dp->path.data);
		return false;
	}
	return true;
}

/* A new object at the current path, or NULL with the error set. */
static SeMappedField *
add_dynamic_object(DocParse *dp, SeDynamic inherited)
{
	SeMappedField *f;

	if (!check_object_depth(dp))
		return NULL;
	f = add_dynamic(dp, SE_FT_OBJECT, inherited);
	if (!check_new_fields_limit(dp))
		return NULL;
	return f;
}

/* A new leaf at the current path typed from the value (ES dynamic rules). */
static SeMappedField *
add_dynamic_leaf(DocParse *dp, const SeJson *v)
{
	SeMappedField *f;
	SeFieldType type;
	const char *format = NULL;

	switch (v->type)
	{
		case SE_JSON_TRUE:
		case SE_JSON_FALSE:
			type = SE_FT_BOOLEAN;
			break;
		case SE_JSON_NUMBER:
			/* integers (even beyond int64, as ES's BIG_INTEGER) -> long */
			if (v->u.n.is_int || strpbrk(v->u.n.text, ".eE") == NULL)
				type = SE_FT_LONG;
			else
				type = SE_FT_FLOAT;
			break;
		default:
			{
				const char *s = v->u.s.str;
				int			len = v->u.s.len;
				bool		is_long = se_number_text_is_long(s, len);
				bool		is_double = se_number_text_is_double(s, len);
				int64		ms;

				type = SE_FT_TEXT;
				if (dp->m->numeric_detection && (is_long || is_double))
					type = is_long ? SE_FT_LONG : SE_FT_FLOAT;
				else if (!is_long && !is_double && dp->m->date_detection)
				{
					/* ES's dynamic_date_formats; pure numbers never become dates */
					if (se_date_parse(s, len, "strict_date_optional_time", &ms, NULL))
					{
						type = SE_FT_DATE;
						format = NULL;
					}
					else if (se_date_parse(s, len, "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z", &ms, NULL))
					{
						type = SE_FT_DATE;
						format = "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z";
					}
				}
				break;
			}
	}
	f = add_dynamic(dp, type, SE_DYNAMIC_TRUE);
	if (format)
	{
		pfree(f->format);
		f->format = se_mapping_strdup(dp->m, format);
	}
	if (type == SE_FT_TEXT)
	{
		SeMappedField *kw;
		int			base = dp->path.len;

		push_path(dp, "keyword", 7);
		kw = add_dynamic(dp, SE_FT_KEYWORD, SE_DYNAMIC_TRUE);
		pop_path(dp, base);
		kw->is_multi_field = true;
		kw->ignore_above = 256;
		se_mapping_add_multi_field(f, kw);
	}
	if (!check_new_fields_limit(dp))
		return NULL;
	return f;
}

/* Field name checks ES applies to document keys. */
static bool
check_key(DocParse *dp, const char *key, int keylen, bool at_root)
{
	int			i;
	int			start = 0;

	if ((int) strlen(key) != keylen)
	{
		se_error_set(dp->err, 400, "mapper_parsing_exception",
					 "field name cannot contain the NUL character");
		return false;
	}
	if (keylen == 0)
	{
		se_error_set(dp->err, 400, "mapper_parsing_exception",
					 "field name cannot be an empty string");
		return false;
	}
	if (at_root && key[0] == '_')
	{
		for (i = 0; i < lengthof(metadata_fields); i++)
			if (strcmp(key, metadata_fields[i]) == 0)
			{
				se_error_set(dp->err, 400, "mapper_parsing_exception",
							 "Field [%s] is a metadata field and cannot be added inside a document. "
							 "Use the index API request parameters.", key);
				return false;
			}
	}
	if (memchr(key, '.', keylen) == NULL)
		return true;
	if ((int) strspn(key, ".") == keylen)
	{
		se_error_set(dp->err, 400, "mapper_parsing_exception",
					 "field name cannot contain only dots");
		return false;
	}
	for (i = 0; i <= keylen; i++)
	{
		if (i == keylen || key[i] == '.')
		{
			int			j;
			bool		blank = true;

			if (i == start)
			{
				se_error_set(dp->err, 400, "mapper_parsing_exception",
							 "object field starting or ending with a [.] makes object resolution ambiguous: [%s]",
							 key);
				return false;
			}
			for (j = start; j < i; j++)
				if (key[j] != ' ' && key[j] != '\t' && key[j] != '\n' && key[j] != '\r')
					blank = false;
			if (blank)
			{
				se_error_set(dp->err, 400, "mapper_parsing_exception",
							 "object field cannot contain only whitespace: ['%s']", key);
				return false;
			}
			start = i + 1;
		}
	}
	return true;
}

/*
 * Members of an object whose path is dp->path; dyn is the dynamic setting
 * in force for new fields directly inside it.
 */
static bool
parse_object(DocParse *dp, const SeJson *obj, SeDynamic dyn)
{
	int			base = dp->path.len;
	int			i;

	for (i = 0; i < obj->u.o.count; i++)
	{
		const SeJsonMember *mem = &obj->u.o.members[i];
		const char *key = mem->key;
		const char *p = key;
		const char *dot;
		SeDynamic	d = dyn;
		bool		skip = false;

		if (!check_key(dp, key, mem->keylen, base == 0))
			return false;

		/* "a.b": 1 is {"a": {"b": 1}}: walk (or create) the objects */
		while ((dot = strchr(p, '.')) != NULL)
		{
			const SeMappedField *f;

			push_path(dp, p, dot - p);
			f = se_mapping_find(dp->m, dp->path.data);
			if (f == NULL)
			{
				if (d == SE_DYNAMIC_STRICT)
				{
					char	   *name = pnstrdup(p, dot - p);

					strict_error(dp, name);
					pfree(name);
					return false;
				}
				if (d == SE_DYNAMIC_FALSE)
				{
					skip = true;
					break;
				}
				if ((f = add_dynamic_object(dp, d)) == NULL)
					return false;
			}
			else if (f->type != SE_FT_OBJECT)
			{
				se_error_set(dp->err, 400, "mapper_parsing_exception",
							 "Could not dynamically add mapping for field [%.*s%s%s]. "
							 "Existing mapping for [%s] must be of type object but found [%s].",
							 base, dp->path.data, base > 0 ? "." : "", key,
							 f->path, se_field_type_name(f->type));
				return false;
			}
			else if (!f->enabled)
			{
				skip = true;
				break;
			}
			d = f->dynamic;
			p = dot + 1;
		}
		if (!skip)
		{
			push_path(dp, p, strlen(p));
			if (!parse_value(dp, p, mem->value, d))
				return false;
		}
		pop_path(dp, base);
	}
	return true;
}

/* One object of nested field f: a document of its own in the block. */
static bool
parse_nested(DocParse *dp, const SeMappedField *f, const SeJson *v)
{
	int			saved = dp->cur_sub;
	int			k;
	SubDoc	   *sd;

	if (dp->nsubs - 1 >= dp->nested_objects_limit)
	{
		se_error_set(dp->err, 400, "mapper_parsing_exception",
					 "The number of nested documents has exceeded the allowed limit of [%d]. "
					 "This limit can be set by changing the [index.mapping.nested_objects.limit] index level setting.",
					 dp->nested_objects_limit);
		return false;
	}
	if (dp->nsubs >= dp->capsubs)
	{
		dp->capsubs = dp->capsubs * 2;
		dp->subs = repalloc(dp->subs, sizeof(SubDoc) * dp->capsubs);
	}
	sd = &dp->subs[dp->nsubs];
	sd->field = f;
	sd->parent = saved;
	sd->offset = 0;
	for (k = 1; k < dp->nsubs; k++)
		if (dp->subs[k].field == f && dp->subs[k].parent == saved)
			sd->offset++;
	dp->cur_sub = dp->nsubs++;
	if (!parse_object(dp, v, f->dynamic))
		return false;
	dp->cur_sub = saved;
	return true;
}

/* A value at dp->path (whose last part is name), inside an object with dyn. */
static bool
parse_value(DocParse *dp, const char *name, const SeJson *v, SeDynamic dyn)
{
	const SeMappedField *f = se_mapping_find(dp->m, dp->path.data);
	int			i;

	/* a point may be an object, an array [lon, lat] or an array of points */
	if (f != NULL && f->type == SE_FT_GEO_POINT)
	{
		if (v->type != SE_JSON_ARRAY || se_geo_is_single_point_array(v))
			return index_leaf(dp, f, v);
		for (i = 0; i < v->u.a.count; i++)
			if (v->u.a.items[i]->type != SE_JSON_NULL &&
				!index_leaf(dp, f, v->u.a.items[i]))
				return false;
		return true;
	}

	switch (v->type)
	{
		case SE_JSON_NULL:
			/* nulls map nothing dynamically; a mapped leaf may have null_value */
			if (f && f->type != SE_FT_OBJECT)
				return index_leaf(dp, f, v);
			return true;
		case SE_JSON_ARRAY:
			for (i = 0; i < v->u.a.count; i++)
				if (!parse_value(dp, name, v->u.a.items[i], dyn))
					return false;
			return true;
		case SE_JSON_OBJECT:
			if (f == NULL)
			{
				if (dyn == SE_DYNAMIC_STRICT)
					return strict_error(dp, name);
				if (dyn == SE_DYNAMIC_FALSE)
					return true;
				if ((f = add_dynamic_object(dp, dyn)) == NULL)
					return false;
			}
			if (f->type != SE_FT_OBJECT)
			{
				failed_to_parse(dp, f, v);
				return false;
			}
			if (!f->enabled)
				return true;
			if (f->nested)
				return parse_nested(dp, f, v);
			return parse_object(dp, v, f->dynamic);
		default:
			if (f == NULL)
			{
				if (dyn == SE_DYNAMIC_STRICT)
					return strict_error(dp, name);
				if (dyn == SE_DYNAMIC_FALSE)
					return true;
				if ((f = add_dynamic_leaf(dp, v)) == NULL)
					return false;
			}
			if (f->type == SE_FT_OBJECT)
			{
				if (!f->enabled)
					return true;
				se_error_set(dp->err, 400, "mapper_parsing_exception",
							 "object mapping for [%s] tried to parse field [%s] as object, but found a concrete value",
							 f->path, name);
				return false;
			}
			return index_leaf(dp, f, v);
	}
}

/* Order pending values by field (path), then document order. */
static int
pending_cmp(const void *a, const void *b)
{
	const PendingValue *x = a;
	const PendingValue *y = b;

	if (x->field != y->field)
	{
		int			c = strcmp(x->field->path, y->field->path);

		if (c != 0)
			return c;
	}
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Put the values in pending_cmp's order without a general sort: a document
 * has few distinct fields, so those are sorted by path (insertion) and the
 * values are then distributed to their field's run in document order.
 * qsort compared paths for most pairs of values, 2-3% of a write worker's
 * time on Debian package documents (their depends arrays are long).
 * Documents with many fields, or two fields with one path, take qsort.
 */
#define GROUP_MAX_FIELDS 32

static void
order_values(DocParse *dp)
{
	const SeMappedField *fields[GROUP_MAX_FIELDS];
	int			count[GROUP_MAX_FIELDS];
	int			start[GROUP_MAX_FIELDS];
	uint8	   *group;
	PendingValue *sorted;
	int			nf = 0;
	int			last = 0;
	int			i,
				g;

	group = palloc(dp->nvalues);
	for (i = 0; i < dp->nvalues; i++)
	{
		const SeMappedField *f = dp->values[i].field;

		if (nf == 0 || fields[last] != f)
		{
			for (last = 0; last < nf && fields[last] != f; last++)
				;
			if (last == nf)
			{
				if (nf == GROUP_MAX_FIELDS)
				{
					pfree(group);
					qsort(dp->values, dp->nvalues, sizeof(PendingValue), pending_cmp);
					return;
				}
				fields[nf] = f;
				count[nf++] = 0;
			}
		}
		group[i] = (uint8) last;
		count[last]++;
	}
	/* sort the fields by path; start[] maps a field to its rank first */
	{
		int			rank[GROUP_MAX_FIELDS];

		for (g = 0; g < nf; g++)
		{
			int			k = g;

			while (k > 0)
			{
				int			c = strcmp(fields[rank[k - 1]]->path, fields[g]->path);

				if (c == 0)
				{
					pfree(group);
					qsort(dp->values, dp->nvalues, sizeof(PendingValue), pending_cmp);
					return;
				}
				if (c < 0)
					break;
				rank[k] = rank[k - 1];
				k--;
			}
			rank[k] = g;
		}
		for (g = 0, i = 0; g < nf; g++)
		{
			start[rank[g]] = i;
			i += count[rank[g]];
		}
	}
	sorted = palloc(sizeof(PendingValue) * dp->nvalues);
	for (i = 0; i < dp->nvalues; i++)
		sorted[start[group[i]]++] = dp->values[i];
	pfree(dp->values);
	pfree(group);
	dp->values = sorted;
	dp->capvalues = dp->nvalues;
}

/* Room for n terms in dp->bterms. */
static void
reserve_bterms(DocParse *dp, int n)
{
	if (n > dp->capbterms)
	{
		if (dp->bterms)
			pfree(dp->bterms);
		dp->capbterms = Max(n, 64);
		dp->bterms = palloc(sizeof(SeBuilderTerm) * dp->capbterms);
	}
}

/*
 * Does a value of document from belong to document to?  Its own, and
 * through include_in_parent / include_in_root those of its ancestors.
 */
static bool
value_in_doc(const DocParse *dp, int from, int to)
{
	int			x = from;
	bool		root = false;

	if (from == to)
		return true;
	while (x != 0)
	{
		const SubDoc *sd = &dp->subs[x];

		root |= sd->field->include_in_root;
		if (!sd->field->include_in_parent)
			break;
		x = sd->parent;
		if (x == to)
			return true;
	}
	return to == 0 && root;
}

static void emit_values(DocParse *dp, SeSegmentBuilder *b);

/*
 * Hand the checked values to the builder: the nested documents first (each
 * a finished doc carrying its path in _nested_path, its offset and its
 * root's _id, no _source), then the root's values, which the caller's
 * end_doc finishes.
 */
static void
emit(DocParse *dp, SeSegmentBuilder *b)
{
	PendingValue *all;
	int			nall;
	int			k,
				i;

	if (dp->nvalues > 1)
		order_values(dp);
	if (dp->nsubs <= 1)
	{
		emit_values(dp, b);
		return;
	}
	all = dp->values;
	nall = dp->nvalues;
	dp->values = palloc(sizeof(PendingValue) * Max(nall, 1));
	for (k = dp->nsubs - 1; k >= 1; k--)	/* ES's order: reversed */
	{
		int			d = k;

		dp->nvalues = 0;
		for (i = 0; i < nall; i++)
			if (value_in_doc(dp, all[i].sub, d))
				dp->values[dp->nvalues++] = all[i];
		se_builder_begin_doc(b);
		emit_values(dp, b);
		{
			const SubDoc *sd = &dp->subs[d];
			SeBuilderTerm t;
			SeDocMeta	meta;
			int			field = se_builder_field(b, SE_NESTED_PATH_FIELD, SE_IDX_DOCS,
												 false, SE_DV_NONE);

			t.term = sd->field->path;
			t.len = strlen(sd->field->path);
			t.position = 0;
			se_builder_add_keywords(b, field, &t, 1, true, false);
			field = se_builder_field(b, SE_NESTED_OFFSET_FIELD, SE_IDX_NONE, false,
									 SE_DV_NUMERIC);
			se_builder_add_numeric(b, field, sd->offset);
			memset(&meta, 0, sizeof(meta));
			meta.id = dp->id_copy;
			meta.id_len = dp->id_copy ? strlen(dp->id_copy) : 0;
			/* no _source: inner hits take the object from the root's */
			se_builder_end_doc(b, &meta, NULL, 0);
		}
	}
	dp->nvalues = 0;
	for (i = 0; i < nall; i++)
		if (value_in_doc(dp, all[i].sub, 0))
			dp->values[dp->nvalues++] = all[i];
	se_builder_begin_doc(b);
	emit_values(dp, b);
	pfree(dp->values);
	dp->values = all;
	dp->nvalues = nall;
}

static void
emit_values(DocParse *dp, SeSegmentBuilder *b)
{
	int			i = 0;

	while (i < dp->nvalues)
	{
		const SeMappedField *f = dp->values[i].field;
		SeIndexOptions io;
		bool		norms;
		SeDocValuesType dv;
		int			field;
		int			pos = 0;
		int			j;

		se_field_codec_options(f, &io, &norms, &dv);
		field = se_builder_field(b, f->path, io, norms, dv);
		for (j = i; j < dp->nvalues && dp->values[j].field == f; j++)
		{
			const PendingValue *pv = &dp->values[j];
			int			t;

			switch (pv->kind)
			{
				case PV_TEXT:
					{
						int			nt = pv->tok_end - pv->tok_start;

						reserve_bterms(dp, nt);
						for (t = 0; t < nt; t++)
						{
							const SeToken *tok = &dp->tokens.tokens[pv->tok_start + t];

							dp->bterms[t].term = tok->term;
							dp->bterms[t].len = tok->len;
							dp->bterms[t].position = pos + tok->position;
						}
						se_builder_add_terms(b, field, dp->bterms, nt);
						pos += pv->span + f->position_increment_gap;
						break;
					}
				case PV_KEYWORD:
					{
						/* the field's keyword values, in one call */
						int			nk = 0;

						while (j + nk < dp->nvalues && dp->values[j + nk].field == f &&
							   dp->values[j + nk].kind == PV_KEYWORD)
							nk++;
						reserve_bterms(dp, nk);
						for (t = 0; t < nk; t++)
						{
							dp->bterms[t].term = dp->values[j + t].str;
							dp->bterms[t].len = dp->values[j + t].len;
							dp->bterms[t].position = 0;
						}
						se_builder_add_keywords(b, field, dp->bterms, nk,
												io != SE_IDX_NONE, dv != SE_DV_NONE);
						j += nk - 1;
						break;
					}
				case PV_NUMERIC:
					if (io != SE_IDX_NONE)
					{
						char		term[8];

						se_sortable_term(pv->num, term);
						se_builder_add_term(b, field, term, 8, 0);
					}
					if (dv != SE_DV_NONE)
						se_builder_add_numeric(b, field, pv->num);
					break;
			}
		}
		i = j;
	}
}

/* Analyze the text values that waited (in document order, as the walk would have). */
static void
analyze_deferred(DocParse *dp)
{
	int			i;

	for (i = 0; i < dp->nvalues; i++)
	{
		PendingValue *pv = &dp->values[i];

		if (pv->kind != PV_TEXT || pv->tok_start >= 0)
			continue;
		pv->tok_start = dp->tokens.ntokens;
		dp->tokens.next_position = 0;
		if (pv->analyzer)
			se_analyze(pv->analyzer, pv->str, pv->len, &dp->tokens);
		pv->tok_end = dp->tokens.ntokens;
		pv->span = dp->tokens.next_position;
	}
}

static void
free_parsed(DocParse *dp)
{
	if (dp->path.data)
		pfree(dp->path.data);
	if (dp->values)
		pfree(dp->values);
	if (dp->added)
		pfree(dp->added);
	if (dp->bterms)
		pfree(dp->bterms);
	if (dp->subs)
		pfree(dp->subs);
	se_token_list_free(&dp->tokens);
	pfree(dp);
}

SeParsedDoc *
se_doc_check(SeMapping *m, const SeJson *source, const SeDocParseOptions *opts,
			 const char *doc_id, bool *mapping_changed, SeError *err)
{
	DocParse   *dp;
	bool		ok;
	int			i;

	if (mapping_changed)
		*mapping_changed = false;
	if (source == NULL)
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "failed to parse, document is empty");
		return NULL;
	}
	if (source->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "failed to parse: Malformed content, must start with an object");
		return NULL;
	}

	dp = palloc0(sizeof(DocParse));
	dp->m = m;
	dp->total_fields_limit = (opts && opts->limits.total_fields_limit > 0) ?
		opts->limits.total_fields_limit : SE_DEFAULT_TOTAL_FIELDS_LIMIT;
	dp->depth_limit = (opts && opts->limits.depth_limit > 0) ?
		opts->limits.depth_limit : SE_DEFAULT_DEPTH_LIMIT;
	dp->defer_text = opts && opts->defer_text;
	dp->nested_objects_limit = (opts && opts->limits.nested_objects_limit > 0) ?
		opts->limits.nested_objects_limit : SE_DEFAULT_NESTED_OBJECTS_LIMIT;
	dp->capsubs = 4;
	dp->subs = palloc0(sizeof(SubDoc) * dp->capsubs);
	dp->nsubs = 1;
	dp->cur_sub = 0;
	dp->doc_id = doc_id;
	dp->err = err;
	initStringInfo(&dp->path);
	se_token_list_init(&dp->tokens);

	ok = parse_object(dp, source, m->dynamic);
	if (!ok)
	{
		/* take the dynamic fields out again, newest first */
		for (i = dp->nadded - 1; i >= 0; i--)
			se_mapping_remove(m, dp->added[i]);
		for (i = dp->nadded - 1; i >= 0; i--)
			se_mapping_free_field(dp->added[i]);
		dp->nadded = 0;
	}
	if (mapping_changed)
		*mapping_changed = dp->nadded > 0;
	if (!ok)
	{
		free_parsed(dp);
		return NULL;
	}
	dp->err = NULL;				/* nothing can fail any more */
	if (dp->nsubs > 1 && doc_id != NULL)
		dp->id_copy = pstrdup(doc_id);	/* a deferred add outlives doc_id */
	if (dp->defer_text)
	{
		/*
		 * It waits with a batch of others: keep only what se_doc_add
		 * needs, so that the scratch (the path, the values array's spare
		 * room) goes back to the free lists for the next document instead
		 * of a few KB per waiting document.
		 */
		pfree(dp->path.data);
		dp->path.data = NULL;
		if (dp->values && dp->nvalues < dp->capvalues)
		{
			PendingValue *v = palloc(sizeof(PendingValue) * Max(dp->nvalues, 1));

			memcpy(v, dp->values, sizeof(PendingValue) * dp->nvalues);
			pfree(dp->values);
			dp->values = v;
			dp->capvalues = Max(dp->nvalues, 1);
		}
	}
	return (SeParsedDoc *) dp;
}

void
se_doc_add(SeParsedDoc *pd, SeSegmentBuilder *b)
{
	DocParse   *dp = (DocParse *) pd;

	analyze_deferred(dp);
	emit(dp, b);
	free_parsed(dp);
}

void
se_doc_discard(SeParsedDoc *pd)
{
	free_parsed((DocParse *) pd);
}

bool
se_doc_parse(SeMapping *m, const SeJson *source, const SeDocParseOptions *opts,
			 SeSegmentBuilder *b, const char *doc_id, bool *mapping_changed,
			 SeError *err)
{
	SeDocParseOptions o = {{0}};
	SeParsedDoc *pd;

	if (opts)
		o = *opts;
	o.defer_text = false;
	pd = se_doc_check(m, source, &o, doc_id, mapping_changed, err);
	if (pd == NULL)
		return false;
	se_doc_add(pd, b);
	return true;
}
