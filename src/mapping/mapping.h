/*-------------------------------------------------------------------------
 *
 * mapping.h
 *	  Index mappings (field types, dynamic mapping) and document parsing
 *	  into the segment builder (pure; no catalog access).
 *
 * A mapping is the ES "mappings" object.  In memory it is a flat list of
 * fields keyed by full dotted path: object fields ("user"), leaf fields
 * ("user.name") and multi-fields ("summary.keyword", is_multi_field).
 *
 * Index-time encodings shared with search (one place for each):
 *   text     terms from the field's analyzer, positions, norms; no doc values.
 *   keyword  one term per value (values longer than ignore_above are not
 *            indexed), SORTED_SET doc values; no norms; DOCS only.
 *   numeric  (long, integer, short, byte, double, float), date, boolean:
 *            one term per value = se_sortable_term() of the value's sortable
 *            int64 (8 bytes big-endian with the sign bit flipped, so byte
 *            order equals numeric order), NUMERIC doc values holding the
 *            sortable int64.  Sortable int64 of integer types and date (epoch
 *            millis) and boolean (0/1) is the value itself; of double and float
 *            it is Lucene's NumericUtils.doubleToSortableLong of the (for float:
 *            float-rounded) value.
 *   boolean  also indexed as above (0 = false, 1 = true).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_MAPPING_H
#define SE_MAPPING_H

#include "util/se_common.h"
#include "util/json.h"
#include "analysis/analysis.h"
#include "index/segment.h"

typedef enum SeFieldType
{
	SE_FT_OBJECT,
	SE_FT_TEXT,
	SE_FT_KEYWORD,
	SE_FT_LONG,
	SE_FT_INTEGER,
	SE_FT_SHORT,
	SE_FT_BYTE,
	SE_FT_DOUBLE,
	SE_FT_FLOAT,
	SE_FT_BOOLEAN,
	SE_FT_DATE,
	SE_FT_GEO_POINT
} SeFieldType;

typedef enum SeDynamic
{
	SE_DYNAMIC_TRUE,
	SE_DYNAMIC_FALSE,
	SE_DYNAMIC_STRICT
} SeDynamic;

typedef struct SeMappedField
{
	char	   *path;			/* full dotted path, e.g. "summary.keyword" */
	SeFieldType type;
	const SeAnalyzer *analyzer; /* text: index analyzer */
	const SeAnalyzer *search_analyzer;	/* text: query analyzer */
	int			ignore_above;	/* keyword; 0 = none */
	bool		index;			/* searchable (ES "index") */
	bool		doc_values;		/* ES "doc_values" */
	char	   *format;			/* date: ES format, e.g.
								 * "strict_date_optional_time||epoch_millis" */
	SeDynamic	dynamic;		/* object: its own "dynamic" (inherits) */
	bool		is_multi_field; /* a "fields" sub-field of its parent */

	/*
	 * Further ES parameters, appended (the mapping functions fill them; a
	 * zero-initialised field built by hand still works with the value
	 * functions below).
	 */
	bool		dynamic_set;	/* object: "dynamic" given explicitly (else
								 * dynamic holds the inherited value) */
	bool		enabled;		/* object: false = contents only in _source */
	bool		norms;			/* text/keyword: field-length norms */
	bool		coerce;			/* numeric: strings accepted, fractions
								 * truncated for integer types */
	bool		ignore_malformed;	/* numeric/date: bad values skipped */
	int			position_increment_gap; /* text: gap between values (100) */
	SeJson	   *null_value;		/* keyword/numeric/date/boolean: value
								 * indexed for an explicit null; NULL = none */
	int			nmulti_fields;	/* direct "fields" sub-fields */
	struct SeMappedField **multi_fields;
	bool		ignore_z_value; /* geo_point: a third coordinate accepted */
	/*
	 * object: ES "type": "nested" -- each value object is its own hidden
	 * document of the block before its parent (docparse.c); type stays
	 * SE_FT_OBJECT so everything that walks objects still does.
	 */
	bool		nested;
	bool		include_in_parent;	/* nested: fields also in the parent doc */
	bool		include_in_root;	/* nested: fields also in the root doc */
} SeMappedField;

typedef struct SeMapping
{
	SeDynamic	dynamic;		/* root "dynamic" */
	int			nfields;
	SeMappedField **fields;		/* sorted by path */
	int			capacity;
	/* appended */
	bool		dynamic_set;	/* root "dynamic" given explicitly */
	bool		date_detection; /* dynamic strings -> date (default true) */
	bool		numeric_detection;	/* dynamic numeric strings -> numbers */
	bool		has_nested;		/* a nested field (set by every build) */
} SeMapping;

typedef struct SeMappingLimits
{
	int			total_fields_limit; /* index.mapping.total_fields.limit, 1000 */
	int			depth_limit;	/* index.mapping.depth.limit, 20 */
	int			nested_fields_limit;	/* index.mapping.nested_fields.limit, 50 */
	int			nested_objects_limit;	/* index.mapping.nested_objects.limit,
										 * 10000 (per document) */
} SeMappingLimits;

/* Empty mapping (dynamic true). */
extern SeMapping *se_mapping_create(void);

/*
 * Build a mapping from an ES "mappings" object ({"dynamic":..,"properties":{..}}).
 * Errors: 400 "mapper_parsing_exception" (unknown type, bad parameter),
 * naming the field.  NULL mappings gives an empty mapping; limits NULL (or
 * a member <= 0) means the ES defaults (1000 fields, depth 20).  Everything
 * is allocated in CurrentMemoryContext.
 */
extern SeMapping *se_mapping_from_json(const SeJson *mappings,
									   const SeMappingLimits *limits,
									   SeError *err);

/*
 * Merge an ES "mappings" object (put_mapping) into m.  New fields are added;
 * changing the type or analyzer of an existing field fails with 400
 * "illegal_argument_exception" ("mapper [f] cannot be changed from type
 * [text] to [long]") and leaves m unchanged.  Updatable parameters
 * (ignore_above, search_analyzer, coerce, ignore_malformed, object
 * "dynamic", disabling norms) take the new values.  The merged fields are
 * allocated in the memory context m was created in; earlier
 * SeMappedField pointers into m are invalid afterwards.
 */
extern bool se_mapping_merge(SeMapping *m, const SeJson *mappings,
							 const SeMappingLimits *limits, SeError *err);

/* ES GET-mapping body for this mapping: {"dynamic":..?,"properties":{...}} */
extern void se_mapping_to_json(const SeMapping *m, StringInfo out);

extern SeMapping *se_mapping_copy(const SeMapping *m);

/* Field by full path, or NULL. */
extern const SeMappedField *se_mapping_find(const SeMapping *m, const char *path);
/* Does the mapping have a nested field (its docs come in blocks)? */
extern bool se_mapping_has_nested(const SeMapping *m);
/*
 * The nearest nested field enclosing path (path itself included when it is
 * nested), or NULL when path is a root-level field.
 */
extern const SeMappedField *se_mapping_nested_scope(const SeMapping *m,
													const char *path);

extern const char *se_field_type_name(SeFieldType t);

/* True for long/integer/short/byte/double/float/date/boolean. */
extern bool se_field_is_numeric_like(SeFieldType t);

/*
 * Sortable int64 of a query or document value for a numeric-like field
 * (accepts JSON numbers and numeric strings as ES does; dates as strings in
 * the field's format or epoch millis; booleans as true/false/"true"/"false").
 * Integer types reject fractions and out-of-range values; a value that does
 * not fit gives 400 "mapper_parsing_exception" (document) — callers parsing
 * queries re-type the error.
 */
extern bool se_field_sortable_value(const SeMappedField *f, const SeJson *v,
									int64 *out, SeError *err);

/* Decode a sortable int64 of field type t back to a JSON number / string. */
extern void se_field_write_sortable(const SeMappedField *f, int64 v, StringInfo out);

/*
 * String form of a sortable int64 (ES "key_as_string", no quotes): dates in
 * the field's (first) format, booleans "true"/"false", numbers as
 * se_field_write_sortable writes them.  se_field_write_sortable itself
 * writes dates as epoch millis and booleans as 0/1, as ES sort values and
 * aggregation keys show them.
 */
extern void se_field_format_sortable(const SeMappedField *f, int64 v,
									 StringInfo out);

/* 8-byte order-preserving term of a sortable int64. */
extern void se_sortable_term(int64 v, char out[8]);

/* Lucene NumericUtils.doubleToSortableLong / sortableLongToDouble. */
extern int64 se_double_to_sortable(double d);
extern double se_sortable_to_double(int64 v);

/*
 * Parse a date with an ES format list ("a||b"): supports
 * strict_date_optional_time, date_optional_time, strict_date, date,
 * epoch_millis, epoch_second, and plain "yyyy-MM-dd"/"yyyy-MM-dd HH:mm:ss".
 * Result in epoch milliseconds UTC.  Also the other common named formats
 * (strict_date_time, basic_date, strict_year_month, ...) and java.time
 * patterns of y/u M d H h a m s S X/x/Z letters, 'literals' and [optional]
 * sections (see date.c).  Failure: 400 "parse_exception" ("failed to parse
 * date field [x] with format [f]").
 */
extern bool se_date_parse(const char *s, int len, const char *format,
						  int64 *millis, SeError *err);
/* Format epoch millis as strict_date_optional_time (ISO 8601, 'Z'). */
extern void se_date_format(int64 millis, StringInfo out);
/* Days since 1970-01-01 of a civil date (month 1..12), and back. */
extern int64 se_days_from_civil(int64 y, int m, int d);
extern void se_civil_from_days(int64 days, int64 *y, int *m, int *d);

/*
 * Format epoch millis with the first format of an ES format list (NULL =
 * the date default): named formats and patterns as se_date_parse knows.
 */
extern void se_date_format_with(int64 millis, const char *format,
								StringInfo out);

/*
 * Check an ES date format list at mapping time: each "||" alternative must
 * be a known named format or a pattern of supported letters; otherwise 400
 * "mapper_parsing_exception" ("Invalid format: [x]: ...").
 */
extern bool se_date_format_validate(const char *format, SeError *err);

/* The date type's default format. */
#define SE_DATE_DEFAULT_FORMAT "strict_date_optional_time||epoch_millis"

/* Java's Double.toString of d (numeric.c). */
extern void se_append_java_double(StringInfo out, double d);

/* ---------------------------------------------------------------------
 * geo_point (geo_point.c)
 *
 *   geo_point  no terms; NUMERIC doc values holding Lucene's
 *              LatLonDocValuesField encoding of each point (se_geo_encode:
 *              32-bit quantised latitude high, longitude low).
 * ---------------------------------------------------------------------
 */
#define SE_EARTH_MEAN_RADIUS 6371008.7714	/* metres, ES's GeoUtils */

typedef struct SeGeoPoint
{
	double		lat;
	double		lon;
} SeGeoPoint;

/*
 * A point in any form ES accepts: {"lat":..,"lon":..}, {"geohash":..},
 * GeoJSON {"type":"Point","coordinates":[lon,lat]}, [lon, lat], "lat,lon",
 * "POINT (lon lat)" or a geohash string (its cell's lower left corner).
 * A third coordinate fails unless ignore_z.  No range check (see
 * se_geo_point_valid).  Failure: 400 parse_exception.
 */
extern bool se_geo_parse_point(const SeJson *v, bool ignore_z, SeGeoPoint *p,
							   SeError *err);
/* An array holding one point ([lon, lat]) rather than points. */
extern bool se_geo_is_single_point_array(const SeJson *v);
extern bool se_geo_point_valid(const SeGeoPoint *p);
/* ES's GeoUtils.normalizePoint: out-of-range degrees wrapped around. */
extern void se_geo_normalize(SeGeoPoint *p);
extern int64 se_geo_encode(double lat, double lon);
extern void se_geo_decode(int64 v, double *lat, double *lon);
/* Lucene's SloppyMath.haversinMeters and ES's plane distance, metres. */
extern double se_geo_arc_meters(double lat1, double lon1, double lat2, double lon2);
extern double se_geo_plane_meters(double lat1, double lon1, double lat2, double lon2);
/* Geohash cell of s (false: not a geohash), and a point's geohash. */
extern bool se_geohash_cell(const char *s, int len, double *min_lat, double *max_lat,
							double *min_lon, double *max_lon);
extern void se_geohash_encode(double lat, double lon, int precision, char *out);
extern void se_geohash_of_encoded(int64 v, int precision, char *out);
/* A distance unit's metres ("km", "mi", ...); a distance string in metres. */
extern bool se_geo_unit(const char *name, double *meters);
extern bool se_geo_parse_distance(const char *s, double default_unit, double *meters);

/* ---------------------------------------------------------------------
 * Document parsing
 * ---------------------------------------------------------------------
 */
typedef struct SeDocParseOptions
{
	SeMappingLimits limits;
	bool		defer_text;		/* se_doc_check: leave short text unanalyzed */
} SeDocParseOptions;

/*
 * Text values up to this many bytes cannot produce a term longer than
 * SE_MAX_TERM_LENGTH (an analyzer's term is at most 3 bytes per input
 * byte: copy_term in analysis.c), so their analysis cannot fail and may be
 * deferred.
 */
#define SE_DEFER_TEXT_MAX	10240

/*
 * Parse one document (the JSON _source, already validated) against mapping
 * m and add it to the builder between se_builder_begin_doc and
 * se_builder_end_doc (the caller calls those two).
 *
 * Unknown fields follow dynamic mapping: with dynamic true they are added
 * to m (string -> text + "keyword" multi-field with ignore_above 256, or
 * date when it parses as strict_date_optional_time; integer -> long;
 * decimal -> float; boolean -> boolean; object -> object); *mapping_changed
 * is set when m grew.  dynamic false: ignored (kept in _source only).
 * dynamic strict: 400 "strict_dynamic_mapping_exception" ("mapping set to
 * strict, dynamic introduction of [f] within [_doc] is not allowed").
 * A value that does not fit its field: 400 "mapper_parsing_exception"
 * ("failed to parse field [f] of type [long] in document with id 'x'...").
 * Too many fields / too deep: 400 "illegal_argument_exception" ("Limit of
 * total fields [1000] has been exceeded" / "Limit of mapping depth [20]...").
 *
 * The caller calls se_builder_begin_doc before and se_builder_end_doc after
 * a successful parse.  The document is fully validated before anything is
 * added to b, so on error nothing was added to b and m is unchanged
 * (dynamic additions are rolled back); the caller then starts over with the
 * next document (begin_doc again without end_doc is allowed and discards
 * the empty pending doc).
 * Does not index _id (the builder does that from SeDocMeta).
 *
 * Memory: scratch comes from CurrentMemoryContext and is released before
 * returning (except an error's reason); fields added to m are allocated in
 * the memory context m lives in, whatever the current one is.
 */
extern bool se_doc_parse(SeMapping *m, const SeJson *source,
						 const SeDocParseOptions *opts,
						 SeSegmentBuilder *b, const char *doc_id,
						 bool *mapping_changed, SeError *err);

/*
 * se_doc_parse in two steps, for a write acknowledged before it is indexed
 * (see shard/engine.c, deferred indexing).  se_doc_check walks and checks
 * the document against m exactly as se_doc_parse does (growing m, failing
 * with the same errors, leaving nothing behind on failure); with
 * opts->defer_text, text values of at most SE_DEFER_TEXT_MAX bytes are not
 * analyzed yet.  The result points into source and m, which must stay
 * until se_doc_add analyzes what waited and adds the document to b (between
 * se_builder_begin_doc and se_builder_end_doc), which cannot fail; or until
 * se_doc_discard.  Either frees it.
 */
typedef struct SeParsedDoc SeParsedDoc;
extern SeParsedDoc *se_doc_check(SeMapping *m, const SeJson *source,
								 const SeDocParseOptions *opts, const char *doc_id,
								 bool *mapping_changed, SeError *err);
extern void se_doc_add(SeParsedDoc *pd, SeSegmentBuilder *b);
extern void se_doc_discard(SeParsedDoc *pd);

/* Codec options for a mapped field (what se_doc_parse declares). */
extern void se_field_codec_options(const SeMappedField *f, SeIndexOptions *io,
								   bool *norms, SeDocValuesType *dv);

/*
 * Lucene's IndexWriter refuses a term longer than this; se_immense_term_error
 * words the refusal as ES does (400 illegal_argument_exception).
 */
#define SE_MAX_TERM_LENGTH	32766
extern void se_immense_term_error(SeError *err, const char *field, const char *term, int len);

/* ---------------------------------------------------------------------
 * Shared by the files of src/mapping only (not for other modules).
 * ---------------------------------------------------------------------
 */
#define SE_DEFAULT_TOTAL_FIELDS_LIMIT	1000
#define SE_DEFAULT_DEPTH_LIMIT			20
#define SE_DEFAULT_NESTED_FIELDS_LIMIT	50
#define SE_DEFAULT_NESTED_OBJECTS_LIMIT	10000
#define SE_POSITION_INCREMENT_GAP		100

/* in mapping.c */
extern SeMappedField *se_mapping_new_field(const SeMapping *m, const char *path,
										   SeFieldType type);
extern void se_mapping_insert(SeMapping *m, SeMappedField *f);
extern void se_mapping_remove(SeMapping *m, SeMappedField *f);
extern void se_mapping_free_field(SeMappedField *f);
extern char *se_mapping_strdup(const SeMapping *m, const char *s);
extern void se_mapping_add_multi_field(SeMappedField *parent,
									   SeMappedField *child);
extern void se_mapping_preview(const SeJson *v, StringInfo out);

/* in numeric.c */
extern bool se_field_parse_value(const SeMappedField *f, const SeJson *v,
								 bool allow_strings, bool truncate,
								 int64 *out, SeError *err);
extern bool se_number_text_is_long(const char *s, int len);
extern bool se_number_text_is_double(const char *s, int len);

#endif							/* SE_MAPPING_H */
