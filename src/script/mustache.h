/*-------------------------------------------------------------------------
 *
 * mustache.h
 *	  Mustache templates as Elasticsearch's search templates render them
 *	  (mustache.java with ES's CustomMustacheFactory).
 *
 * A template is compiled once into a tree and rendered with a JSON
 * params object.  Pure: no catalog, shared memory or ereport; failures
 * are SeErrors of type script_exception naming the line.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SCRIPT_MUSTACHE_H
#define SE_SCRIPT_MUSTACHE_H

#include "util/se_common.h"

#include "util/json.h"

/* Deepest nesting of sections a template may have. */
#define SE_MUSTACHE_MAX_DEPTH	100

typedef struct SeMustache SeMustache;

/* Compile src[0..len); NULL with a script_exception when malformed. */
extern SeMustache *se_mustache_compile(const char *src, size_t len, SeError *err);

/*
 * Render m with params (an object, or NULL) onto out.  {{x}} is escaped
 * as a JSON string's content (ES's default for search templates).  The
 * output is bounded by max_bytes and the work by a step budget; past
 * either the render fails with a clear error.
 */
extern bool se_mustache_render(const SeMustache *m, const SeJson *params,
							   size_t max_bytes, StringInfo out, SeError *err);

#endif							/* SE_SCRIPT_MUSTACHE_H */
