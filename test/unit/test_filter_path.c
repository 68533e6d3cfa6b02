/* SOURCES: src/api/filter_path.c src/util/json.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_filter_path.c
 *	  Unit tests for ES's filter_path over JSON answers: the examples of
 *	  ES's "common options" page (inclusions, wildcards, "**", exclusions,
 *	  both together) and the edges (arrays, empty results, scalars on the
 *	  way, keys with a dot).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "api/filter_path.h"
#include "util/json.h"
#include "unit_test.h"

static const char *
fp(const char *json, const char *spec)
{
	SeError		err;
	SeJson	   *v;

	se_error_init(&err);
	v = se_json_parse(json, strlen(json), NULL, &err);
	if (v == NULL)
		return "parse error";
	return se_json_to_string(se_filter_path(v, spec));
}

#define EXPECT(json, spec, want) \
	do { \
		const char *got_ = fp(json, spec); \
		UT_CHECK(strcmp(got_, want) == 0, "%s with [%s]: %s", json, spec, got_); \
	} while (0)

int
main(void)
{
	const char *search = "{\"took\":3,\"_shards\":{\"total\":2,\"successful\":2},"
		"\"hits\":{\"total\":{\"value\":2,\"relation\":\"eq\"},\"max_score\":1.5,"
		"\"hits\":[{\"_index\":\"t\",\"_id\":\"1\",\"_score\":1.5,\"_source\":{\"a\":1,\"b\":{\"c\":2}}},"
		"{\"_index\":\"t\",\"_id\":\"2\",\"_score\":1.0,\"_source\":{\"a\":3}}]}}";
	const char *bulk = "{\"took\":1,\"errors\":true,\"items\":["
		"{\"index\":{\"_id\":\"1\",\"status\":201}},"
		"{\"index\":{\"_id\":\"2\",\"status\":429,\"error\":{\"type\":\"es_rejected_execution_exception\"}}}]}";

	/* ES's examples: a list, wildcards in a segment, "**", exclusion */
	EXPECT(search, "took,hits.hits._id,hits.hits._score",
		   "{\"took\":3,\"hits\":{\"hits\":[{\"_id\":\"1\",\"_score\":1.5},{\"_id\":\"2\",\"_score\":1.0}]}}");
	EXPECT(search, "hits.hits._i*", "{\"hits\":{\"hits\":[{\"_index\":\"t\",\"_id\":\"1\"},{\"_index\":\"t\",\"_id\":\"2\"}]}}");
	EXPECT(search, "**.c", "{\"hits\":{\"hits\":[{\"_source\":{\"b\":{\"c\":2}}}]}}");
	EXPECT(search, "**._id", "{\"hits\":{\"hits\":[{\"_id\":\"1\"},{\"_id\":\"2\"}]}}");
	EXPECT(search, "-hits", "{\"took\":3,\"_shards\":{\"total\":2,\"successful\":2}}");
	EXPECT(search, "-hits.hits._source,-_shards,-took",
		   "{\"hits\":{\"total\":{\"value\":2,\"relation\":\"eq\"},\"max_score\":1.5,"
		   "\"hits\":[{\"_index\":\"t\",\"_id\":\"1\",\"_score\":1.5},{\"_index\":\"t\",\"_id\":\"2\",\"_score\":1.0}]}}");
	/* exclusions first, then inclusions */
	EXPECT(search, "hits.hits._source,-hits.hits._source.b",
		   "{\"hits\":{\"hits\":[{\"_source\":{\"a\":1}},{\"_source\":{\"a\":3}}]}}");
	/* a named value is kept whole */
	EXPECT(search, "_shards", "{\"_shards\":{\"total\":2,\"successful\":2}}");
	EXPECT(search, "hits.total.value", "{\"hits\":{\"total\":{\"value\":2}}}");
	/* a path through a scalar or to nothing: dropped; nothing left is {} */
	EXPECT(search, "took.x", "{}");
	EXPECT(search, "nosuch", "{}");
	EXPECT(search, "hits.hits.nosuch", "{}");
	/* the bulk filter log shippers send: items without an error vanish */
	EXPECT(bulk, "errors,items.*.error",
		   "{\"errors\":true,\"items\":[{\"index\":{\"error\":{\"type\":\"es_rejected_execution_exception\"}}}]}");
	EXPECT(bulk, "errors,items.*.status",
		   "{\"errors\":true,\"items\":[{\"index\":{\"status\":201}},{\"index\":{\"status\":429}}]}");
	EXPECT("{\"took\":1,\"errors\":false,\"items\":[{\"index\":{\"status\":201}}]}", "errors,items.*.error",
		   "{\"errors\":false}");
	/* a trailing "**", "*" alone, empty spec parts */
	EXPECT(search, "_shards.**", "{\"_shards\":{\"total\":2,\"successful\":2}}");
	EXPECT("{\"a\":1,\"b\":[1,2]}", "*", "{\"a\":1,\"b\":[1,2]}");
	EXPECT("{\"a\":1,\"b\":2}", ",a,", "{\"a\":1}");
	/* arrays of scalars named whole; arrays of arrays passed through */
	EXPECT("{\"a\":[[{\"x\":1,\"y\":2}],[{\"y\":3}]]}", "a.x", "{\"a\":[[{\"x\":1}]]}");
	/* an explicitly named empty object stays */
	EXPECT("{\"aggregations\":{},\"b\":1}", "aggregations", "{\"aggregations\":{}}");
	/* keys with dots (_cat's JSON columns) */
	EXPECT("[{\"index\":\"a\",\"docs.count\":\"3\",\"docs.deleted\":\"0\"}]", "index,docs.count",
		   "[{\"index\":\"a\",\"docs.count\":\"3\"}]");
	EXPECT("[{\"docs.count\":\"3\",\"docs.deleted\":\"0\"}]", "docs.*", "[{\"docs.count\":\"3\",\"docs.deleted\":\"0\"}]");
	/* an error answer is cut as any other (ES does so too) */
	EXPECT("{\"error\":{\"type\":\"x\"},\"status\":404}", "status", "{\"status\":404}");
	return ut_finish("test_filter_path");
}
