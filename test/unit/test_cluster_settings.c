/*
 * test_cluster_settings.c
 *	  Dynamic cluster settings: validation with ES's errors, persistent and
 *	  transient layers, resets (also by wildcard), nested and flat
 *	  rendering, and the allocator settings read from them; and the
 *	  wildcard matcher they use.
 */
/* SOURCES: src/cluster/cluster_settings.c src/cluster/allocator.c src/util/match.c src/util/units.c src/util/json.c src/util/error.c */
#include "util/se_common.h"

#include "cluster/cluster_settings.h"
#include "util/match.h"
#include "unit_test.h"

static SeSettingsLayer P,
			T;

/* apply body; returns the error type or "ok", answer into *answer */
static const char *
put(const char *body, char **answer, char **reason)
{
	SeError		err;
	SeJsonParseOptions opts = {0};
	SeJson	   *j;
	StringInfoData a;

	se_error_init(&err);
	j = se_json_parse(body, strlen(body), &opts, &err);
	if (j == NULL)
		return "json";
	initStringInfo(&a);
	if (!se_csettings_update(j, &P, &T, &a, &err))
	{
		if (reason)
			*reason = err.reason;
		return err.type;
	}
	if (answer)
		*answer = a.data;
	return "ok";
}

static char *
get_json(bool flat, bool defaults)
{
	StringInfoData s;

	initStringInfo(&s);
	se_csettings_to_json(&P, &T, flat, defaults, &s);
	return s.data;
}

static void
test_update_and_render(void)
{
	char	   *ans = NULL,
			   *why = NULL;
	const char *r;

	r = put("{\"persistent\":{\"cluster.routing.allocation.enable\":\"primaries\"}}", &ans, NULL);
	UT_CHECK(strcmp(r, "ok") == 0, "%s", r);
	UT_CHECK(strcmp(ans, "{\"acknowledged\":true,\"persistent\":{\"cluster\":{\"routing\":{\"allocation\":{\"enable\":\"primaries\"}}}},\"transient\":{}}") == 0,
			 "answer: %s", ans);
	/* nested input, numbers become strings, transient on top */
	r = put("{\"persistent\":{\"cluster\":{\"routing\":{\"allocation\":{\"balance\":{\"shard\":0.5},\"node_concurrent_recoveries\":3}}}},"
			"\"transient\":{\"cluster.routing.allocation.enable\":\"none\"}}", NULL, NULL);
	UT_CHECK(strcmp(r, "ok") == 0, "%s", r);
	UT_CHECK(strcmp(se_csettings_get(&P, &T, "cluster.routing.allocation.enable"), "none") == 0,
			 "transient wins");
	UT_CHECK(strcmp(get_json(true, false),
					"{\"persistent\":{\"cluster.routing.allocation.balance.shard\":\"0.5\",\"cluster.routing.allocation.enable\":\"primaries\",\"cluster.routing.allocation.node_concurrent_recoveries\":\"3\"},"
					"\"transient\":{\"cluster.routing.allocation.enable\":\"none\"}}") == 0,
			 "flat: %s", get_json(true, false));
	UT_CHECK(strcmp(get_json(false, false),
					"{\"persistent\":{\"cluster\":{\"routing\":{\"allocation\":{\"balance\":{\"shard\":\"0.5\"},\"enable\":\"primaries\",\"node_concurrent_recoveries\":\"3\"}}}},"
					"\"transient\":{\"cluster\":{\"routing\":{\"allocation\":{\"enable\":\"none\"}}}}}") == 0,
			 "nested: %s", get_json(false, false));
	UT_CHECK(strstr(get_json(true, true), "\"defaults\":{") &&
			 strstr(get_json(true, true), "\"cluster.routing.allocation.disk.watermark.low\":\"85%\""),
			 "include_defaults");
	/* reset: null, and by wildcard */
	r = put("{\"transient\":{\"cluster.routing.allocation.enable\":null}}", NULL, NULL);
	UT_CHECK(strcmp(r, "ok") == 0 && T.n == 0 &&
			 strcmp(se_csettings_get(&P, &T, "cluster.routing.allocation.enable"), "primaries") == 0,
			 "null resets the transient value");
	r = put("{\"persistent\":{\"cluster.routing.allocation.*\":null}}", NULL, NULL);
	UT_CHECK(strcmp(r, "ok") == 0 && P.n == 0, "a wildcard resets every match (%d left)", P.n);

	/* errors */
	r = put("{\"persistent\":{\"cluster.routing.allocation.enabel\":\"all\"}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0 &&
			 strcmp(why, "persistent setting [cluster.routing.allocation.enabel], not recognized") == 0,
			 "unknown setting: %s %s", r, why ? why : "");
	r = put("{\"transient\":{\"cluster.routing.allocation.enable\":\"sometimes\"}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0 &&
			 strncmp(why, "illegal value can't update [cluster.routing.allocation.enable] from [all] to [sometimes]", 86) == 0,
			 "bad enum: %s", why ? why : "");
	r = put("{\"persistent\":{\"cluster.routing.allocation.balance.threshold\":0.5}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0, "threshold below 1: %s", why ? why : "");
	r = put("{\"persistent\":{\"cluster.routing.allocation.total_shards_per_node\":\"2x\"}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0, "not an integer: %s", why ? why : "");
	r = put("{\"persistent\":{\"cluster.routing.allocation.disk.watermark.low\":\"95%\"}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0 &&
			 strstr(why, "low disk watermark [95%] more than high disk watermark [90%]"),
			 "watermarks out of order: %s", why ? why : "");
	r = put("{\"persistent\":{\"cluster.routing.allocation.disk.watermark.low\":\"10gb\"}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0 && strstr(why, "consistently"),
			 "bytes mixed with percentages: %s", why ? why : "");
	r = put("{\"persistent\":{}}", NULL, &why);
	UT_CHECK(strcmp(r, "action_request_validation_exception") == 0, "nothing to update");
	r = put("{\"persistant\":{\"a\":1}}", NULL, &why);
	UT_CHECK(strcmp(r, "x_content_parse_exception") == 0, "unknown top-level field");
	UT_CHECK(P.n == 0 && T.n == 0, "a refused update changes nothing");
	/* a failure in the second layer leaves the first unchanged too */
	r = put("{\"transient\":{\"cluster.routing.allocation.enable\":\"none\"},\"persistent\":{\"bogus\":1}}", NULL, &why);
	UT_CHECK(strcmp(r, "illegal_argument_exception") == 0 && T.n == 0, "all or nothing");
}

static void
test_alloc_settings(void)
{
	SeAllocSettings s;
	const char *r;

	memset(&P, 0, sizeof(P));
	memset(&T, 0, sizeof(T));
	r = put("{\"persistent\":{"
			"\"cluster.routing.allocation.enable\":\"new_primaries\","
			"\"cluster.routing.rebalance.enable\":\"replicas\","
			"\"cluster.routing.allocation.node_concurrent_recoveries\":5,"
			"\"cluster.routing.allocation.node_concurrent_outgoing_recoveries\":1,"
			"\"cluster.routing.allocation.disk.watermark.low\":\"30gb\","
			"\"cluster.routing.allocation.disk.watermark.high\":\"20gb\","
			"\"cluster.routing.allocation.disk.watermark.flood_stage\":\"10gb\","
			"\"cluster.routing.allocation.awareness.attributes\":[\"zone\",\"rack\"],"
			"\"cluster.routing.allocation.awareness.force.zone.values\":\"a, b\","
			"\"cluster.routing.allocation.exclude._name\":\"n1,n2\","
			"\"cluster.routing.allocation.require.box_type\":\"hot\""
			"},\"transient\":{\"cluster.routing.allocation.same_shard.host\":true}}", NULL, NULL);
	UT_CHECK(strcmp(r, "ok") == 0, "%s", r);
	se_csettings_alloc(&P, &T, &s);
	UT_CHECK(s.enable == SE_ALLOC_ENABLE_NEW_PRIMARIES && s.rebalance_enable == SE_REBALANCE_REPLICAS, "enums");
	UT_CHECK(s.node_concurrent_incoming_recoveries == 5 && s.node_concurrent_outgoing_recoveries == 1,
			 "node_concurrent_recoveries sets what is not set itself: %d %d",
			 s.node_concurrent_incoming_recoveries, s.node_concurrent_outgoing_recoveries);
	UT_CHECK(s.low_free_bytes == INT64CONST(30) << 30 && s.flood_free_bytes == INT64CONST(10) << 30,
			 "byte watermarks");
	UT_CHECK(s.nawareness == 2 && strcmp(s.awareness[1], "rack") == 0 &&
			 s.awareness_force[0] && strcmp(s.awareness_force[0][1], "b") == 0 &&
			 s.awareness_force[0][2] == NULL && s.awareness_force[1] == NULL, "awareness");
	UT_CHECK(s.filters.nexclude == 1 && s.filters.exclude[0].nvalues == 2 &&
			 strcmp(s.filters.exclude[0].attr, "_name") == 0 &&
			 s.filters.nrequire == 1 && strcmp(s.filters.require[0].values[0], "hot") == 0,
			 "filters");
	UT_CHECK(s.same_shard_host && s.threshold == 1.0f && s.balance_shard == 0.45f, "the rest");
}

static void
test_wildcard(void)
{
	static char long_s[4096];

	UT_CHECK(se_wildcard_match("*", "") && se_wildcard_match("a*", "abc") &&
			 se_wildcard_match("*c", "abc") && se_wildcard_match("a*c*e", "abcde") &&
			 !se_wildcard_match("a*d", "abc") && !se_wildcard_match("abc", "ab") &&
			 se_wildcard_match("logs-*-2026", "logs-x-y-2026"), "wildcards");
	/* a pattern that made the recursive matcher exponential */
	memset(long_s, 'a', sizeof(long_s) - 1);
	UT_CHECK(!se_wildcard_match("*a*a*a*a*a*a*a*a*a*a*a*a*b", long_s), "no blow-up");
}

int
main(void)
{
	test_update_and_render();
	test_alloc_settings();
	test_wildcard();
	return ut_finish("test_cluster_settings");
}
