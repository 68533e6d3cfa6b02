/*-------------------------------------------------------------------------
 *
 * script.h
 *	  Painless update scripts (_update, update_by_query) over the JSON DOM.
 *
 * A script is compiled once into an AST (se_script_compile) and run once
 * per document (se_script_run) against a context holding that document's
 * _source and metadata.  The interpreter works directly on the SeJson DOM:
 * ctx._source is the caller's parsed document, mutated in place, so there
 * is no conversion to and from another representation.
 *
 * The language is the subset of Painless that update scripts use: see
 * src/script/README.md for the constructs, methods and known gaps.  Values
 * keep Java's numeric types (int, long, float, double), so an integer
 * field incremented stays an integer and a double prints as Java prints
 * it (2.0, 1.0E10).
 *
 * Pure module: palloc only, no ereport.  Hostile scripts are bounded: the
 * source size (65535 bytes, as ES's script.max_size_in_bytes), nesting
 * depth, a statement budget per run (ES's painless.max_loop_counter,
 * 1,000,000 by default), the memory a run may allocate (charged before
 * each allocation) and the size of the updated document.  Failures are
 * SeErrors of type "script_exception" (status 400) whose reason names the
 * position:
 *
 *	  compile error at [1:17]: unexpected token ';', expected an expression
 *	  runtime error at [1:23]: cannot access field [x] of null
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SCRIPT_H
#define SE_SCRIPT_H

#include "util/json.h"

/* A compiled script: immutable, reusable for any number of runs. */
typedef struct SeScript SeScript;

/* What the script asked for (ctx.op), or an error. */
typedef enum SeScriptResult
{
	SE_SCRIPT_ERROR = -1,		/* err is set; discard ctx->source */
	SE_SCRIPT_INDEX = 0,		/* ctx.op "index" (the default; "create" for
								 * an upsert): write ctx->source */
	SE_SCRIPT_NOOP,				/* ctx.op "noop" (or "none") */
	SE_SCRIPT_DELETE			/* ctx.op "delete" */
} SeScriptResult;

/*
 * Score scripts (script_score query, function_score's script_score): the
 * doc values of the current document, read through the caller's reader.
 * A script names its fields as constants (doc['f'], doc.f); each gets a
 * number, in order of first use, listed by se_script_doc_fields.
 */
typedef enum SeScriptDocKind
{
	SE_SDOC_LONG,				/* l: integer types (Painless Longs) */
	SE_SDOC_DOUBLE,				/* d: float types (Doubles) */
	SE_SDOC_STRING,				/* s, len: keyword (Strings) */
	SE_SDOC_BOOLEAN,			/* l: 0 or 1 (Booleans) */
	SE_SDOC_DATE				/* l: epoch millis (Dates) */
} SeScriptDocKind;

typedef struct SeScriptDocValue
{
	SeScriptDocKind kind;
	int64		l;
	double		d;
	const char *s;				/* need not be NUL-terminated */
	int			len;
} SeScriptDocValue;

typedef struct SeScriptDocReader
{
	void	   *arg;

	/*
	 * Number of values field (a number from se_script_doc_fields) has in
	 * the current document; -1 with err set (its type the Java exception,
	 * as "illegal_argument_exception") when the field cannot be read.
	 */
	int			(*count) (void *arg, int field, SeError *err);
	/* Value i (< count) of field, in ascending order. */
	void		(*value) (void *arg, int field, int i, SeScriptDocValue *out);

	/*
	 * doc[expr], a field name computed at run time (len bytes, not
	 * NUL-terminated): its number, the same for the same name, at or past
	 * those of se_script_doc_fields; -1 with err set when it cannot be
	 * numbered.  NULL: computed names fail.
	 */
	int			(*lookup) (void *arg, const char *name, int len, SeError *err);
} SeScriptDocReader;

/*
 * The per-document context, ES's ctx map.  Set it up with se_script_ctx_init
 * and fill in what is known; metadata left unset reads as null.
 */
typedef struct SeScriptCtx
{
	/*
	 * ctx._source: a JSON object, mutated in place by the run (containers
	 * and scalars may be replaced, arrays and member lists reallocated).
	 * The script may also assign a new map to ctx._source, so read the
	 * result back from here.  Nodes of the result may point into the
	 * script's memory (literals, params): use the result while the script
	 * is alive.
	 */
	SeJson	   *source;

	/*
	 * read-only metadata: NULL strings and negative numbers read as null;
	 * strings must be NUL-terminated
	 */
	const char *id;				/* ctx._id */
	const char *index;			/* ctx._index */
	const char *routing;		/* ctx._routing */
	int64		version;		/* ctx._version */
	int64		seq_no;			/* ctx._seq_no */
	int64		primary_term;	/* ctx._primary_term */
	int64		now;			/* ctx._now, epoch millis */

	/*
	 * A scripted upsert of a missing document: ctx.op starts as "create"
	 * (reported as SE_SCRIPT_INDEX) and may only become "noop"/"none", as
	 * in Elasticsearch.
	 */
	bool		upsert;

	/* score scripts: doc values and _score of the current document */
	const SeScriptDocReader *doc;
	double		score;

	/* limits; se_script_ctx_init sets the defaults below */
	int64		max_statements; /* statements + loop iterations per run */
	int64		max_memory;		/* bytes a run may allocate */
	int64		max_source_bytes;	/* largest updated _source, as JSON */

	/* outputs */
	const char *op;				/* final ctx.op as set ("index" if untouched) */

	/*
	 * On error: the Java exception ES would report as caused_by (e.g.
	 * "null_pointer_exception", "class_cast_exception",
	 * "illegal_argument_exception", "index_out_of_bounds_exception",
	 * "arithmetic_exception", "painless_error"), and the byte offset in the
	 * source of the failing construct (-1 if none).
	 */
	const char *error_cause;
	int			error_offset;
} SeScriptCtx;

#define SE_SCRIPT_MAX_SOURCE		65535
#define SE_SCRIPT_DEFAULT_STATEMENTS	1000000
#define SE_SCRIPT_DEFAULT_MEMORY	((int64) 64 * 1024 * 1024)
#define SE_SCRIPT_DEFAULT_SOURCE_BYTES	((int64) 100 * 1024 * 1024)

/* Initialise ctx for one run over source (metadata unset, default limits). */
extern void se_script_ctx_init(SeScriptCtx *ctx, SeJson *source);

/*
 * Compile source (a NUL-terminated Painless script) with its params (a JSON
 * object or NULL for none; deep-copied, so the caller may free it).
 * Returns NULL and sets err ("compile error at [line:col]: ...") on a
 * syntax or resolution error.  The script lives in CurrentMemoryContext.
 */
extern SeScript *se_script_compile(const char *source, const SeJson *params,
								   SeError *err);

/*
 * Run s once over ctx.  Allocates in CurrentMemoryContext (reset it per
 * document).  On error returns SE_SCRIPT_ERROR with err set to
 * "runtime error at [line:col]: ..." and ctx->error_cause/error_offset
 * filled; ctx->source may then be half-modified and must be discarded.
 */
extern SeScriptResult se_script_run(const SeScript *s, SeScriptCtx *ctx,
									SeError *err);

/*
 * Compile a score script: doc, _score and ES's score functions
 * (saturation, sigmoid, decayNumeric*, decayDate*) are in scope, ctx is
 * not, and the value of a final expression statement is the result.
 */
extern SeScript *se_script_compile_score(const char *source, const SeJson *params,
										 SeError *err);

/* The fields a score script reads, numbered 0..*n-1. */
extern const char *const *se_script_doc_fields(const SeScript *s, int *n);

/*
 * Run a score script on the document ctx->doc reads, with ctx->score as
 * _score: false with err set on a runtime error or a result that is not
 * a number.  ctx comes from se_script_ctx_init(ctx, NULL).
 */
extern bool se_script_run_score(const SeScript *s, SeScriptCtx *ctx,
								double *result, SeError *err);

/*
 * Run a score script as a script field (script_fields): its result's
 * values, JSON comma-joined, appended to out (a list's or doc values'
 * elements, else the one value).  false with err set on a runtime error.
 */
extern bool se_script_run_values(const SeScript *s, SeScriptCtx *ctx, StringInfo out,
								 SeError *err);

/* d as Java prints a double (or, is_float, a float): "-1.0", "1.0E10" */
extern int	se_script_java_double(char *dst, double d, bool is_float);

/* The source text the script was compiled from. */
extern const char *se_script_source(const SeScript *s);

#endif							/* SE_SCRIPT_H */
