/*-------------------------------------------------------------------------
 *
 * json.h
 *	  A small, strict JSON DOM parser and writer (pure; no catalog access).
 *
 * Used for bulk NDJSON lines, documents, query DSL bodies and responses.
 * The parser validates UTF-8 (rejects overlong forms, surrogates encoded in
 * UTF-8, code points above U+10FFFF), decodes escapes including surrogate
 * pairs (a lone surrogate escape is an error), bounds nesting depth and
 * optionally rejects duplicate object keys (as Elasticsearch does).  All
 * nodes are palloc'd in CurrentMemoryContext.
 *
 * A parsed DOM is carved out of a few large palloc'd chunks: free it by
 * resetting or deleting its memory context, never by pfree'ing a node or
 * string.  Nodes made by the se_json_make_* constructors are plain pallocs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_JSON_H
#define SE_JSON_H

#include "util/se_common.h"

typedef enum SeJsonType
{
	SE_JSON_NULL,
	SE_JSON_FALSE,
	SE_JSON_TRUE,
	SE_JSON_NUMBER,
	SE_JSON_STRING,
	SE_JSON_ARRAY,
	SE_JSON_OBJECT
} SeJsonType;

typedef struct SeJson SeJson;

typedef struct SeJsonMember
{
	const char *key;			/* decoded UTF-8, NUL-terminated */
	int			keylen;
	SeJson	   *value;
} SeJsonMember;

struct SeJson
{
	SeJsonType	type;
	union
	{
		struct
		{
			const char *str;	/* decoded UTF-8, NUL-terminated */
			int			len;	/* bytes, excluding the NUL */
		}			s;
		struct
		{
			const char *text;	/* the number exactly as written */
			int			len;
			double		d;		/* value as double */
			bool		is_int; /* no fraction/exponent and fits int64 */
			int64		i;		/* value when is_int */
		}			n;
		struct
		{
			int			count;
			SeJson	  **items;
		}			a;
		struct
		{
			int			count;
			SeJsonMember *members;	/* in document order */
		}			o;
	}			u;
};

/*
 * Largest input se_json_parse accepts (ES's default http.max_content_length);
 * keeps every internal allocation below MaxAllocSize.
 */
#define SE_JSON_MAX_INPUT	((size_t) 100 * 1024 * 1024)

/*
 * The one nesting limit of documents, enforced when a bulk or document
 * write parses them and so equal to what every later parse (translog
 * replay, updates, scripts) accepts: Jackson's default in ES 8.
 */
#define SE_JSON_MAX_DEPTH	1000

/*
 * Mappings written as JSON (cluster state, dynamic updates) nest two levels
 * per object level, and index.mapping.depth.limit goes up to 1000: the
 * engine's own files are parsed with this limit.
 */
#define SE_JSON_STATE_MAX_DEPTH	(3 * SE_JSON_MAX_DEPTH)

typedef struct SeJsonParseOptions
{
	int			max_depth;		/* nesting limit; 0 means SE_JSON_MAX_DEPTH */
	bool		reject_duplicate_keys;
	bool		reject_nul;		/* refuse \u0000 in strings (jsonb cannot hold it) */
} SeJsonParseOptions;

/*
 * Parse exactly one JSON value from text[0..len) (surrounding whitespace is
 * allowed, anything else after the value is an error; a leading UTF-8 BOM is
 * ignored).  opts may be NULL (depth SE_JSON_MAX_DEPTH, duplicates allowed).  Lone
 * surrogate escapes are syntax errors.  Numbers whose magnitude overflows a
 * double parse with d = +-HUGE_VAL (the mapping layer rejects them, as ES
 * does).  Columns in error reasons count characters.  On failure returns
 * NULL and sets err to status 400, type "x_content_parse_exception" (or
 * "json_parse_exception" for invalid UTF-8 / duplicate keys), with a reason
 * naming the line, column and what was expected, e.g.
 * "[1:15] Unexpected character ('}' (code 125)): was expecting a value".
 */
extern SeJson *se_json_parse(const char *text, size_t len,
							 const SeJsonParseOptions *opts, SeError *err);

/* Object member lookup by key (last one wins); NULL if absent or not object. */
extern SeJson *se_json_get(const SeJson *obj, const char *key);
/* A number, or a string holding only one (as ES takes "1.5"), as double. */
extern bool se_json_as_double(const SeJson *v, double *out);

/* Does a string or key anywhere in v hold a NUL (which jsonb cannot)? */
extern bool se_json_has_nul(const SeJson *v);

/* Convenience constructors for building DOM values (len < 0: strlen). */
extern SeJson *se_json_make_string(const char *s, int len);
extern SeJson *se_json_make_number_int(int64 v);

/*
 * A number node whose text is the shortest %g form that reads back as d;
 * NaN and infinities, which JSON cannot express, give a null node.
 */
extern SeJson *se_json_make_number_double(double d);
extern SeJson *se_json_make_bool(bool b);
extern SeJson *se_json_make_null(void);

/* Printable name of a type ("object", "array", "string", ...). */
extern const char *se_json_type_name(SeJsonType t);

/*
 * Append s[0..len) as a JSON string literal (with quotes and escaping).
 * Valid UTF-8 passes through; invalid bytes become U+FFFD so the output is
 * always valid JSON.  len < 0 means strlen(s).
 */
extern void se_json_write_string(StringInfo out, const char *s, int len);

/* Bytes se_json_write_string appends for s[0..len), counted without writing. */
extern int64 se_json_string_size(const char *s, int len);

/* Append v serialized compactly (numbers as originally written). */
extern void se_json_write(StringInfo out, const SeJson *v);

/* se_json_write into a new palloc'd NUL-terminated string. */
extern char *se_json_to_string(const SeJson *v);

/*
 * Validate that s[0..len) is well-formed UTF-8; returns offset of first bad byte or -1.
 * The offset is that of the first byte of the ill-formed sequence (offsets
 * past INT_MAX are reported as INT_MAX).
 */
extern int	se_utf8_validate(const char *s, size_t len);

/* Length of UTF-8 s in UTF-16 code units (Java's String.length()). */
extern int64 se_utf16_length(const char *s, size_t len);

/*
 * A bulk action/metadata line of the common shape, read without building
 * a DOM:  {"<op>": {"<key>": "<string>", ...}}  with JSON whitespace
 * anywhere, keys among _index, _id, routing, _routing (each at most once),
 * and plain ASCII strings (no escapes, no control characters).  On a match
 * returns true with op_name/op_len set and each present key's value as a
 * slice of line (the others NULL); anything else returns false and the
 * caller parses the line in full.  So a line read here means exactly what
 * se_json_parse would make of it.
 */
typedef struct SeActionLine
{
	const char *op;
	int			op_len;
	const char *index;
	int			index_len;
	const char *id;
	int			id_len;
	const char *routing;
	int			routing_len;
} SeActionLine;

extern bool se_json_scan_action_line(const char *line, size_t len, SeActionLine *out);

#endif							/* SE_JSON_H */
