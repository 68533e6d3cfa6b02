/*
 * test_replica_select.c
 *	  The copy a read goes to (cluster/replica_select.c): ES's preference
 *	  parsed as ES's OperationRouting reads it, the copies each preference
 *	  allows, and adaptive replica selection -- ES's rank formula, the
 *	  local copy first while statistics are equal or missing, a slow node
 *	  avoided, outstanding requests spreading one read's shards, and the
 *	  losers' statistics pulled towards the winner's so a slow node is
 *	  tried again.
 */
/* SOURCES: src/cluster/replica_select.c src/cluster/routing.c src/util/match.c src/util/error.c */
#include "util/se_common.h"

#include <math.h>

#include "cluster/replica_select.h"
#include "unit_test.h"

/* a shard with one started copy on each of the nodes given, the first primary */
static SeShardRouting *
shard_on(int n, const char *const *nodes)
{
	SeShardRouting *r = palloc0(sizeof(SeShardRouting));
	int			k;

	r->ncopies = n;
	r->copies = palloc0(sizeof(SeShardCopy) * n);
	r->primary_term = 1;
	for (k = 0; k < n; k++)
	{
		r->copies[k].state = SE_SHARD_STARTED;
		r->copies[k].node = pstrdup(nodes[k]);
		r->copies[k].primary = k == 0;
	}
	return r;
}

/* n1..n3 in racks r1..r3, n3 alone in zone eu-b; n9 unknown */
static char *
fake_attributes(const char *node)
{
	if (strcmp(node, "n1") == 0)
		return pstrdup("rack:r1,zone:eu-a");
	if (strcmp(node, "n2") == 0)
		return pstrdup("rack:r2,zone:eu-a");
	if (strcmp(node, "n3") == 0)
		return pstrdup("rack:r3,zone:eu-b");
	return NULL;
}

static SePreference
pref(const char *text)
{
	SePreference p;
	SeError		err;

	se_error_init(&err);
	UT_CHECK(se_preference_parse(text, &p, &err), "parse [%s]: %s", text,
			 err.reason ? err.reason : "");
	return p;
}

static const char *
choose(const SeShardRouting *r, const char *me, const char *text, uint32 h)
{
	SePreference p = pref(text);
	SeError		err;
	const char *n;

	se_error_init(&err);
	n = se_replica_choose(r, "i", 0, me, &p, h, true, &err);
	return n ? n : "(none)";
}

static void
test_parse(void)
{
	SePreference p;
	SeError		err;

	p = pref(NULL);
	UT_CHECK(p.kind == SE_PREF_DEFAULT && p.nshards == 0, "none");
	p = pref("_shards:2,3");
	UT_CHECK(p.kind == SE_PREF_DEFAULT && p.nshards == 2 && p.shards[0] == 2 && p.shards[1] == 3, "_shards");
	UT_CHECK(se_preference_shard_wanted(&p, 3) && !se_preference_shard_wanted(&p, 1), "_shards filters");
	p = pref("_shards:1|_only_local");
	UT_CHECK(p.kind == SE_PREF_ONLY_LOCAL && p.nshards == 1, "_shards then _only_local");
	p = pref("_shards:0|sess");
	UT_CHECK(p.kind == SE_PREF_CUSTOM, "_shards then a custom string");
	p = pref("_prefer_nodes:a,b");
	UT_CHECK(p.kind == SE_PREF_PREFER_NODES && p.nnodes == 2 && strcmp(p.nodes[1], "b") == 0, "_prefer_nodes");
	p = pref("_onlyLocal");
	UT_CHECK(p.kind == SE_PREF_ONLY_LOCAL, "ES's old spelling");
	p = pref("abc");
	UT_CHECK(p.kind == SE_PREF_CUSTOM && p.hash == pref("abc").hash && p.hash != pref("abd").hash,
			 "custom: a stable hash of the string");
	se_error_init(&err);
	UT_CHECK(!se_preference_parse("_primary", &p, &err) && err.status == 400 &&
			 strcmp(err.reason, "no Preference for [_primary]") == 0, "ES's error for an unknown type");
	se_error_init(&err);
	UT_CHECK(!se_preference_parse("_shards:1,x", &p, &err) &&
			 strcmp(err.type, "number_format_exception") == 0, "a shard that is not a number");
}

static void
test_preferences(void)
{
	static const char *const nodes[] = {"n1", "n2", "n3"};
	SeShardRouting *r = shard_on(3, nodes);
	SePreference p;
	SeError		err;
	bool		seen[3] = {false, false, false};
	uint32		h;

	se_ars_reset();
	UT_CHECK(strcmp(choose(r, "n2", NULL, 0), "n2") == 0, "default: the local copy");
	UT_CHECK(strcmp(choose(r, "n2", "_only_local", 7), "n2") == 0, "_only_local");
	UT_CHECK(strcmp(choose(r, "n9", "_only_local", 7), "(none)") == 0, "_only_local without a copy here: none");
	UT_CHECK(strcmp(choose(r, "n1", "_prefer_nodes:n3", 0), "n3") == 0, "_prefer_nodes over the local copy");
	UT_CHECK(strcmp(choose(r, "n1", "_prefer_nodes:n7", 0), "n1") == 0, "_prefer_nodes matching nothing: default");
	UT_CHECK(strcmp(choose(r, "n1", "_only_nodes:n3", 0), "n3") == 0, "_only_nodes");
	UT_CHECK(strcmp(choose(r, "n9", "_only_nodes:n*", 1), "n9") != 0, "_only_nodes with a wildcard");
	p = pref("_only_nodes:x1,x2");
	se_error_init(&err);
	UT_CHECK(se_replica_choose(r, "i", 0, "n1", &p, 0, true, &err) == NULL && err.status == 400 &&
			 strstr(err.reason, "no data nodes with criterion [x1,x2] found for shard: [i][0]") != NULL,
			 "_only_nodes matching no copy: ES's 400 (%s)", err.reason ? err.reason : "");
	/* node attributes (ES's attr:value node specs, wildcards in both parts) */
	se_replica_attributes_lookup(fake_attributes);
	UT_CHECK(strcmp(choose(r, "n1", "_only_nodes:rack:r2", 0), "n2") == 0, "_only_nodes by attribute");
	UT_CHECK(strcmp(choose(r, "n1", "_only_nodes:zone:*-b", 0), "n3") == 0, "a wildcard value");
	UT_CHECK(strcmp(choose(r, "n1", "_only_nodes:ra*:r3,x9", 0), "n3") == 0, "a wildcard name, in a list");
	UT_CHECK(strcmp(choose(r, "n2", "_only_nodes:rack:r1,rack:r3", 0), "n2") != 0, "two racks: not n2");
	p = pref("_only_nodes:rack:r9");
	se_error_init(&err);
	UT_CHECK(se_replica_choose(r, "i", 0, "n1", &p, 0, true, &err) == NULL && err.status == 400 &&
			 strstr(err.reason, "no data nodes with criteria [rack:r9]") != NULL,
			 "an attribute no copy's node has: ES's 400 (%s)", err.reason ? err.reason : "");
	UT_CHECK(strcmp(choose(r, "n1", "_prefer_nodes:rack:r2", 0), "n1") == 0,
			 "_prefer_nodes takes node ids only (ES), not attributes");
	se_replica_attributes_lookup(NULL);
	UT_CHECK(strcmp(choose(r, "n1", "_local", 0), "n1") == 0, "_local");
	/* a custom string: the same copy from every coordinating node, and spread */
	UT_CHECK(strcmp(choose(r, "n1", "user-42", 0), choose(r, "n3", "user-42", 9)) == 0,
			 "custom string: the same copy whichever node coordinates");
	for (h = 0; h < 40; h++)
	{
		char		s[16];

		snprintf(s, sizeof(s), "u%u", h);
		seen[choose(r, "n1", s, 0)[1] - '1'] = true;
	}
	UT_CHECK(seen[0] && seen[1] && seen[2], "custom strings spread over the copies");
	r->copies[2].state = SE_SHARD_INITIALIZING;
	for (h = 0; h < 40; h++)
		UT_CHECK(strcmp(choose(r, "n9", NULL, h), "n3") != 0, "never an initializing copy");
	UT_CHECK(strcmp(choose(r, "n3", "_only_local", 0), "(none)") == 0, "_only_local: not an initializing copy");
}

/* the default without statistics (or ARS off): as before ARS */
static void
test_default(void)
{
	static const char *const nodes[] = {"n1", "n2", "n3"};
	SeShardRouting *r = shard_on(3, nodes);
	bool		seen[3] = {false, false, false};
	uint32		h;
	int			k;

	se_ars_reset();
	for (k = 0; k < 3; k++)
		se_routing_init_replica(&r->copies[k], "INDEX_CREATED", 0);
	r->copies[0].primary = true;
	UT_CHECK(strcmp(choose(r, "n9", NULL, 1), "") == 0, "nothing assigned: the primary's \"\"");
	r->copies[0].node = "n1";
	r->copies[0].state = SE_SHARD_INITIALIZING;
	r->copies[1].node = "n2";
	r->copies[1].state = SE_SHARD_INITIALIZING;
	UT_CHECK(strcmp(choose(r, "n2", NULL, 1), "n1") == 0,
			 "no started copy: the primary's node, even from an initializing replica's node");
	r->copies[0].state = SE_SHARD_STARTED;
	r->copies[1].state = SE_SHARD_STARTED;
	r->copies[2].node = "n3";
	r->copies[2].state = SE_SHARD_INITIALIZING;
	UT_CHECK(strcmp(choose(r, "n2", NULL, 0), "n2") == 0, "the local started copy first");
	UT_CHECK(strcmp(choose(r, "n3", NULL, 5), choose(r, "n3", NULL, 5)) == 0, "stable for one hash");
	for (h = 0; h < 16; h++)
	{
		const char *n = choose(r, "n9", NULL, h);

		UT_CHECK(strcmp(n, "n3") != 0, "never an initializing copy");
		seen[n[1] - '1'] = true;
	}
	UT_CHECK(seen[0] && seen[1], "hashes spread over the started copies");
}

static void
test_ars(void)
{
	static const char *const nodes[] = {"n1", "n2", "n3"};
	SeShardRouting *r = shard_on(3, nodes);
	SeArsNodeStats s;
	int			i,
				to_n1 = 0;

	/* ES's formula: rS - 1/mu + q^3/mu, q^ = 1 + os * clients + q */
	memset(&s, 0, sizeof(s));
	s.response_ms = 10;
	s.service_ms = 2;
	s.queue_size = 1;
	s.outstanding = 0;
	UT_CHECK(fabs(se_ars_rank(&s, 3) - (10 - 2 + 8 * 2)) < 1e-9, "rank, nothing outstanding: %f", se_ars_rank(&s, 3));
	s.outstanding = 1;
	UT_CHECK(fabs(se_ars_rank(&s, 3) - (10 - 2 + 125 * 2)) < 1e-9, "rank, one outstanding: %f", se_ars_rank(&s, 3));

	/* EWMA with alpha 0.3 */
	se_ars_reset();
	se_ars_record("n1", 0, 10, 1);
	se_ars_record("n1", 0, 20, 1);
	UT_CHECK(se_ars_stats("n1", &s) && fabs(s.response_ms - 13) < 1e-9, "EWMA: %f", s.response_ms);
	UT_CHECK(!se_ars_stats("n2", &s), "no statistics without a reply");

	/* a coordinating node without a copy (n9): the fast node is read */
	se_ars_reset();
	se_ars_record("n1", 0, 5, 1);
	se_ars_record("n2", 4, 500, 50);
	se_ars_record("n3", 0, 6, 1);
	r->copies[2].state = SE_SHARD_UNASSIGNED;
	for (i = 0; i < 10; i++)
		to_n1 += strcmp(choose(r, "n9", NULL, (uint32) i), "n1") == 0;
	UT_CHECK(to_n1 >= 9, "the slow node n2 is avoided (%d of 10 to n1)", to_n1);
	/* ... but not for ever: the winner's statistics pull the loser's down */
	for (i = 0; i < 40 && strcmp(choose(r, "n9", NULL, 0), "n2") != 0; i++)
		se_ars_record("n1", 0, 5, 1);
	UT_CHECK(se_ars_stats("n2", &s) && s.response_ms < 50, "n2's response time pulled towards n1's (%f)",
			 s.response_ms);
	/* the local copy (never measured: it is read without the transport) stays first */
	se_ars_reset();
	se_ars_record("n1", 0, 1, 1);
	UT_CHECK(strcmp(choose(r, "n2", NULL, 0), "n2") == 0, "the local copy first");
	se_ars_record("n2", 4, 500, 50);
	/* ARS off: the hash, as before */
	{
		SePreference p = pref(NULL);
		SeError		err;

		se_error_init(&err);
		UT_CHECK(strcmp(se_replica_choose(r, "i", 0, "n9", &p, 1, false, &err), "n2") == 0 &&
				 strcmp(se_replica_choose(r, "i", 0, "n9", &p, 0, false, &err), "n1") == 0,
				 "use_adaptive_replica_selection false: by hash");
	}
	/* equal statistics: outstanding requests of one read spread its shards */
	se_ars_reset();
	se_ars_record("n1", 0, 5, 1);
	se_ars_record("n2", 0, 5, 1);
	{
		const char *first = choose(r, "n9", NULL, 0);
		const char *second;

		se_ars_begin(first);
		second = choose(r, "n9", NULL, 0);
		UT_CHECK(strcmp(first, second) != 0, "a second shard of the same read goes to the other node (%s, %s)",
				 first, second);
		se_ars_clear_outstanding();
		UT_CHECK(strcmp(choose(r, "n9", NULL, 0), first) == 0, "a new read starts with nothing outstanding");
	}
	/* custom strings bypass ARS, as in ES */
	se_ars_reset();
	se_ars_record("n1", 0, 5, 1);
	se_ars_record("n2", 50, 900, 100);
	UT_CHECK(strcmp(choose(r, "n9", "s1", 0), choose(r, "n1", "s1", 0)) == 0, "custom: still by its hash");
}

int
main(void)
{
	test_parse();
	test_preferences();
	test_default();
	test_ars();
	return ut_finish("test_replica_select");
}
