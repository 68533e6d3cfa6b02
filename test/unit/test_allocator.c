/*
 * test_allocator.c
 *	  The balanced allocator and its deciders on synthetic clusters: each
 *	  decider's verdict, the balancer's moves, the commands, and property
 *	  tests on random clusters (no two copies of a shard on a node, the
 *	  bookkeeping equal to a recount, the same input giving the same
 *	  result, a balanced cluster producing no moves).
 */
/* SOURCES: src/cluster/allocator.c src/util/match.c src/util/json.c src/util/error.c */
#include "util/se_common.h"

#include <math.h>

#include "cluster/allocator.h"
#include "util/json.h"
#include "unit_test.h"

/* ---- building models ---- */

typedef struct Builder
{
	SeAllocModel m;
	int			cap_copies;
} Builder;

static void
b_init(Builder *b, int nnodes)
{
	int			i;

	memset(b, 0, sizeof(*b));
	se_alloc_settings_default(&b->m.settings);
	b->m.nnodes = nnodes;
	b->m.nodes = palloc0(sizeof(SeAllocNode) * nnodes);
	for (i = 0; i < nnodes; i++)
	{
		b->m.nodes[i].id = psprintf("id%02d", i);
		b->m.nodes[i].name = psprintf("n%d", i);
		b->m.nodes[i].host = psprintf("host%d", i);
		b->m.nodes[i].data = true;
	}
	b->m.indices = palloc0(sizeof(SeAllocIndex) * 64);
	b->cap_copies = 64;
	b->m.copies = palloc0(sizeof(SeAllocCopy) * b->cap_copies);
}

static void
b_attr(Builder *b, int node, const char *key, const char *value)
{
	SeAllocNode *n = &b->m.nodes[node];

	n->attrs = n->attrs ? repalloc(n->attrs, sizeof(SeAllocAttr) * (n->nattrs + 1))
		: palloc(sizeof(SeAllocAttr));
	n->attrs[n->nattrs].key = key;
	n->attrs[n->nattrs].value = value;
	n->nattrs++;
}

static void
b_add_copy(Builder *b, int index, int shard, bool primary, SeCopyState st, int node)
{
	SeAllocCopy *c;

	if (b->m.ncopies == b->cap_copies)
	{
		b->cap_copies *= 2;
		b->m.copies = repalloc(b->m.copies, sizeof(SeAllocCopy) * b->cap_copies);
	}
	c = &b->m.copies[b->m.ncopies++];
	memset(c, 0, sizeof(*c));
	c->index = index;
	c->shard = shard;
	c->primary = primary;
	c->state = st;
	c->node = node;
	c->relocating_node = -1;
	c->data_node = st == SE_COPY_STARTED ? node : -1;
	c->reason = SE_UNASSIGNED_INDEX_CREATED;
}

/* four nodes: n0, n1 box_type:hot, n2, n3 box_type:cold; no initial throttle */
static void
b_tiers(Builder *b)
{
	b_init(b, 4);
	b_attr(b, 0, "box_type", "hot");
	b_attr(b, 1, "box_type", "hot");
	b_attr(b, 2, "box_type", "cold");
	b_attr(b, 3, "box_type", "cold");
	b->m.settings.node_initial_primaries_recoveries = -1;
}

/* a new index: all copies unassigned */
static int
b_index(Builder *b, const char *name, int shards, int replicas)
{
	int			ix = b->m.nindices++;
	SeAllocIndex *x = &b->m.indices[ix];
	int			s,
				r;

	x->name = name;
	x->number_of_shards = shards;
	x->number_of_replicas = replicas;
	x->total_shards_per_node = -1;
	x->max_retries = 5;
	for (s = 0; s < shards; s++)
		for (r = 0; r <= replicas; r++)
			b_add_copy(b, ix, s, r == 0, SE_COPY_UNASSIGNED, -1);
	return ix;
}

static void
prepare(SeAllocModel *m)
{
	SeError		err;

	se_error_init(&err);
	if (!se_alloc_prepare(m, &err))
	{
		fprintf(stderr, "prepare: %s\n", err.reason);
		exit(2);
	}
}

static void
check_inv(SeAllocModel *m, const char *what)
{
	SeError		err;
	bool		ok;

	se_error_init(&err);
	ok = se_alloc_check_invariants(m, &err);
	UT_CHECK(ok, "%s: %s", what, err.reason ? err.reason : "");
}

/* start every initializing or relocating copy */
static int
start_all(SeAllocModel *m)
{
	int			i,
				n = 0;

	for (i = 0; i < m->ncopies; i++)
		if (m->copies[i].state == SE_COPY_INITIALIZING || m->copies[i].state == SE_COPY_RELOCATING)
		{
			se_alloc_start(m, i);
			n++;
		}
	return n;
}

/* reroute and start until nothing changes; the number of rounds */
static int
converge(SeAllocModel *m, int max_rounds)
{
	int			r;

	for (r = 0; r < max_rounds; r++)
	{
		int			changed = se_alloc_reroute(m);

		check_inv(m, "converge");
		if (changed == 0 && start_all(m) == 0)
			return r;
		start_all(m);
	}
	return r;
}

static int
count_state(const SeAllocModel *m, SeCopyState st)
{
	int			i,
				n = 0;

	for (i = 0; i < m->ncopies; i++)
		if (m->copies[i].state == st)
			n++;
	return n;
}

static int
on_node(const SeAllocModel *m, int node)
{
	int			i,
				n = 0;

	for (i = 0; i < m->ncopies; i++)
		if (m->copies[i].state != SE_COPY_UNASSIGNED && m->copies[i].node == node)
			n++;
	return n;
}

static SeAllocFilter *
filter1(const char *attr, const char *v1, const char *v2)
{
	SeAllocFilter *f = palloc0(sizeof(SeAllocFilter));

	f->attr = attr;
	f->values = palloc0(sizeof(char *) * 2);
	f->values[0] = v1;
	f->nvalues = 1;
	if (v2)
	{
		f->values[1] = v2;
		f->nvalues = 2;
	}
	return f;
}

/* the verdict of decider for copy on node, from explain */
static SeDecisionType
explain_verdict(SeAllocModel *m, int copy, int node, const char *decider, char **why)
{
	SeAllocNodeDecision *d = palloc(sizeof(SeAllocNodeDecision) * m->nnodes);
	int			i,
				k;

	se_alloc_explain(m, copy, d, NULL);
	for (i = 0; i < m->nnodes; i++)
		if (d[i].node == node)
			for (k = 0; k < d[i].nverdicts; k++)
				if (strcmp(d[i].verdicts[k].decider, decider) == 0)
				{
					if (why)
						*why = d[i].verdicts[k].explanation;
					return d[i].verdicts[k].type;
				}
	return (SeDecisionType) -1;
}

/* ---- tests ---- */

static SeAllocModel *clone_model(const SeAllocModel *m);
static bool same_copies(const SeAllocModel *a, const SeAllocModel *b);

static void
test_initial_allocation(void)
{
	Builder		b;

	b_init(&b, 3);
	b.m.settings.node_initial_primaries_recoveries = -1;
	b_index(&b, "a", 6, 0);
	prepare(&b.m);
	UT_CHECK(se_alloc_reroute(&b.m) == 6, "six copies allocated");
	check_inv(&b.m, "initial");
	UT_CHECK(on_node(&b.m, 0) == 2 && on_node(&b.m, 1) == 2 && on_node(&b.m, 2) == 2,
			 "two per node: %d %d %d", on_node(&b.m, 0), on_node(&b.m, 1), on_node(&b.m, 2));
	start_all(&b.m);
	UT_CHECK(se_alloc_reroute(&b.m) == 0, "a balanced cluster: no moves");
}

static void
test_throttling(void)
{
	Builder		b;
	char	   *why = NULL;
	int			i,
				unassigned = -1;

	b_init(&b, 3);
	b_index(&b, "a", 15, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 12,
			 "4 initial primary recoveries per node: %d", count_state(&b.m, SE_COPY_INITIALIZING));
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].state == SE_COPY_UNASSIGNED)
			unassigned = i;
	UT_CHECK(unassigned >= 0 &&
			 explain_verdict(&b.m, unassigned, 0, "throttling", &why) == SE_DECISION_THROTTLE &&
			 strstr(why, "node_initial_primaries_recoveries") != NULL,
			 "explain names the throttle: %s", why ? why : "");
	start_all(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 0, "the rest after they started");
	check_inv(&b.m, "throttling");
}

/* copies of closed indices recover nothing: they take no recovery slot */
static void
test_closed_not_throttled(void)
{
	Builder		b;
	int			ix,
				i,
				open_init = 0;

	b_init(&b, 2);
	ix = b_index(&b, "closed", 20, 0);
	b.m.indices[ix].closed = true;
	b_index(&b, "open", 4, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].index != ix && b.m.copies[i].state == SE_COPY_INITIALIZING)
			open_init++;
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 0,
			 "every closed copy is placed in one reroute (%d left)", count_state(&b.m, SE_COPY_UNASSIGNED));
	UT_CHECK(open_init == 4, "and the open index's primaries are not throttled by them (%d)", open_init);
	UT_CHECK(b.m.counts[0].initial_primaries + b.m.counts[1].initial_primaries == 4,
			 "only the open index's copies count as recoveries");
	check_inv(&b.m, "closed");

	/*
	 * A closed index's replicas are built by a recovery (its files copied
	 * from the primary's node): throttled like any other.
	 */
	b_init(&b, 2);
	b.m.settings.node_initial_primaries_recoveries = -1;
	ix = b_index(&b, "closed", 10, 1);
	prepare(&b.m);
	converge(&b.m, 40);
	b.m.indices[ix].closed = true;
	for (i = 0; i < b.m.ncopies; i++)
		if (!b.m.copies[i].primary)
			se_alloc_fail(&b.m, i);
	se_alloc_retry_failed(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 4,
			 "closed replicas: 2 incoming recoveries per node (%d)",
			 count_state(&b.m, SE_COPY_INITIALIZING));
	check_inv(&b.m, "closed replicas");
	UT_CHECK(converge(&b.m, 40) < 40 && count_state(&b.m, SE_COPY_STARTED) == 20,
			 "then all of them");
}

static void
test_same_shard_and_replica_after_primary(void)
{
	Builder		b;
	char	   *why = NULL;
	int			r1 = -1,
				r2 = -1,
				i;

	b_init(&b, 2);
	b_index(&b, "a", 1, 2);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 1, "only the primary before it is active");
	for (i = 0; i < b.m.ncopies; i++)
		if (!b.m.copies[i].primary)
			r1 < 0 ? (r1 = i) : (r2 = i);
	UT_CHECK(explain_verdict(&b.m, r1, 1, "replica_after_primary_active", NULL) == SE_DECISION_NO,
			 "replica waits for its primary");
	start_all(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 1 && count_state(&b.m, SE_COPY_UNASSIGNED) == 1,
			 "one replica on the other node, one left over");
	check_inv(&b.m, "same shard");
	{
		int			left = b.m.copies[r1].state == SE_COPY_UNASSIGNED ? r1 : r2;

		UT_CHECK(explain_verdict(&b.m, left, 0, "same_shard", &why) == SE_DECISION_NO &&
				 explain_verdict(&b.m, left, 1, "same_shard", NULL) == SE_DECISION_NO &&
				 strstr(why, "already allocated to this node") != NULL,
				 "same_shard says no on both nodes: %s", why ? why : "");
	}
	/* same_shard.host: two nodes on one host */
	b_init(&b, 2);
	b.m.nodes[1].host = b.m.nodes[0].host;
	b.m.settings.same_shard_host = true;
	b_index(&b, "a", 1, 1);
	b.m.copies[0].state = SE_COPY_STARTED;
	b.m.copies[0].node = 0;
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 1, "no replica on another node of the same host");
}

static void
test_filters_move(void)
{
	Builder		b;
	int			ix,
				i,
				hot;

	b_tiers(&b);
	ix = b_index(&b, "logs", 4, 0);
	b.m.indices[ix].filters.require = filter1("box_type", "hot", NULL);
	b.m.indices[ix].filters.nrequire = 1;
	prepare(&b.m);
	converge(&b.m, 10);
	UT_CHECK(on_node(&b.m, 0) + on_node(&b.m, 1) == 4 && on_node(&b.m, 0) == 2,
			 "require box_type:hot puts the index on the hot nodes");
	/* to the cold tier: every copy may not remain and moves */
	b.m.indices[ix].filters.require = filter1("box_type", "c*", NULL);
	b.m.settings.cluster_concurrent_rebalance = -1;
	converge(&b.m, 20);
	UT_CHECK(on_node(&b.m, 2) == 2 && on_node(&b.m, 3) == 2, "then on the cold nodes (wildcard): %d %d",
			 on_node(&b.m, 2), on_node(&b.m, 3));
	/* exclude by name, include of several values */
	b.m.indices[ix].filters.nrequire = 0;
	b.m.indices[ix].filters.exclude = filter1("_name", "n2", NULL);
	b.m.indices[ix].filters.nexclude = 1;
	converge(&b.m, 20);
	UT_CHECK(on_node(&b.m, 2) == 0, "exclude._name empties n2");
	{
		char	   *why = NULL;

		UT_CHECK(explain_verdict(&b.m, 0, 2, "filter", &why) == SE_DECISION_NO &&
				 strcmp(why, "node matches index.routing.allocation.exclude._name:\"n2\"") == 0,
				 "explain names the filter: %s", why ? why : "");
	}
	b.m.indices[ix].filters.nexclude = 0;
	b.m.settings.filters.include = filter1("_host", "host0", "host3");
	b.m.settings.filters.ninclude = 1;
	converge(&b.m, 20);
	hot = 0;
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].node == 0 || b.m.copies[i].node == 3)
			hot++;
	UT_CHECK(hot == 4, "a cluster include filter on _host: %d on host0/host3", hot);
	check_inv(&b.m, "filters");
}

static void
test_disk_watermarks(void)
{
	Builder		b;
	int			ix,
				i;
	int64		gb = INT64CONST(1) << 30;

	b_init(&b, 3);
	for (i = 0; i < 3; i++)
	{
		b.m.nodes[i].disk_total = 100 * gb;
		b.m.nodes[i].disk_used = 10 * gb;
	}
	b.m.nodes[2].disk_used = 86 * gb;	/* above low */
	b.m.settings.node_initial_primaries_recoveries = -1;
	ix = b_index(&b, "a", 4, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(on_node(&b.m, 2) == 0, "no new copy above the low watermark");
	{
		char	   *why = NULL;

		UT_CHECK(explain_verdict(&b.m, 0, 2, "disk_threshold", &why) == SE_DECISION_NO &&
				 strstr(why, "low watermark") != NULL, "explain: %s", why ? why : "");
	}
	start_all(&b.m);

	/* node 0 goes above high with its 2 copies of 5 GB each: one moves away */
	for (i = 0; i < b.m.ncopies; i++)
		b.m.copies[i].size_bytes = 5 * gb;
	b.m.nodes[0].disk_used = 92 * gb;
	b.m.nodes[2].disk_used = 10 * gb;
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_RELOCATING) == 1,
			 "above high: copies move off until the node's projected use is below (%d moving)",
			 count_state(&b.m, SE_COPY_RELOCATING));
	check_inv(&b.m, "high watermark");
	/* a move into a node that would pass the high watermark is refused */
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].state == SE_COPY_RELOCATING)
			UT_CHECK(b.m.copies[i].relocating_node != 0, "not back onto node 0");
	start_all(&b.m);
	b.m.nodes[0].disk_used = 87 * gb;

	/* flood stage blocks the index, and lifts once below high */
	b.m.nodes[1].disk_used = 96 * gb;
	se_alloc_reroute(&b.m);
	UT_CHECK(b.m.indices[ix].read_only_allow_delete, "flood stage: read_only_allow_delete");
	b.m.nodes[1].disk_used = 93 * gb;
	se_alloc_reroute(&b.m);
	UT_CHECK(b.m.indices[ix].read_only_allow_delete, "still blocked between high and flood");
	b.m.nodes[1].disk_used = 50 * gb;
	se_alloc_reroute(&b.m);
	UT_CHECK(!b.m.indices[ix].read_only_allow_delete, "released below the high watermark");

	/* absolute free-bytes watermarks */
	b_init(&b, 2);
	b.m.nodes[0].disk_total = b.m.nodes[1].disk_total = 100 * gb;
	b.m.nodes[0].disk_used = 95 * gb;	/* 5 GB free */
	b.m.nodes[1].disk_used = 10 * gb;
	b.m.settings.low_free_bytes = 20 * gb;
	b.m.settings.high_free_bytes = 10 * gb;
	b.m.settings.flood_free_bytes = 1 * gb;
	b_index(&b, "x", 2, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(on_node(&b.m, 0) == 0 && on_node(&b.m, 1) == 2, "free-bytes low watermark");
}

static void
test_awareness(void)
{
	Builder		b;
	const char *aw[] = {"zone"};
	const char *force_ab[] = {"a", "b", NULL};
	const char **force[] = {force_ab};
	int			s,
				ok = 1;

	b_init(&b, 4);
	b_attr(&b, 0, "zone", "a");
	b_attr(&b, 1, "zone", "a");
	b_attr(&b, 2, "zone", "b");
	b_attr(&b, 3, "zone", "b");
	b.m.settings.awareness = aw;
	b.m.settings.nawareness = 1;
	b_index(&b, "a", 4, 1);
	prepare(&b.m);
	converge(&b.m, 20);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 0, "all copies allocated");
	for (s = 0; s < 4; s++)
	{
		int			n,
					first = se_alloc_shard_copies(&b.m, 0, s, &n);
		const char *z0 = b.m.nodes[b.m.copies[first].node].attrs[0].value;
		const char *z1 = b.m.nodes[b.m.copies[first + 1].node].attrs[0].value;

		if (strcmp(z0, z1) == 0)
			ok = 0;
	}
	UT_CHECK(ok, "the two copies of each shard are in different zones");

	/* forced awareness: zone b is gone, the replicas wait for it */
	b_init(&b, 2);
	b_attr(&b, 0, "zone", "a");
	b_attr(&b, 1, "zone", "a");
	b.m.settings.awareness = aw;
	b.m.settings.nawareness = 1;
	b.m.settings.awareness_force = force;
	b_index(&b, "a", 2, 1);
	prepare(&b.m);
	converge(&b.m, 20);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 2, "forced awareness keeps replicas unassigned");
	{
		char	   *why = NULL;
		int			i,
					rep = -1;

		for (i = 0; i < b.m.ncopies; i++)
			if (b.m.copies[i].state == SE_COPY_UNASSIGNED)
				rep = i;
		UT_CHECK(rep >= 0 && explain_verdict(&b.m, rep, 0, "awareness", &why) == SE_DECISION_NO &&
				 strstr(why, "[2] values for attribute [zone]") != NULL, "awareness explains: %s",
				 why ? why : "");
	}
	/* a node without the attribute takes no copy */
	b_init(&b, 2);
	b_attr(&b, 0, "zone", "a");
	b.m.settings.awareness = aw;
	b.m.settings.nawareness = 1;
	b.m.settings.node_initial_primaries_recoveries = -1;
	b_index(&b, "a", 4, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(on_node(&b.m, 1) == 0 && on_node(&b.m, 0) == 4, "no copy on a node lacking the attribute");
}

static void
test_shards_limit_enable_retry(void)
{
	Builder		b;
	int			ix,
				i;

	b_init(&b, 3);
	ix = b_index(&b, "a", 4, 0);
	b.m.indices[ix].total_shards_per_node = 1;
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 1, "total_shards_per_node 1 on 3 nodes leaves one");

	b_init(&b, 2);
	b.m.settings.total_shards_per_node = 2;
	b_index(&b, "a", 3, 0);
	b_index(&b, "b", 3, 0);
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 2, "the cluster-wide limit");

	/* enable */
	b_init(&b, 2);
	b.m.settings.enable = SE_ALLOC_ENABLE_NONE;
	b_index(&b, "a", 1, 1);
	prepare(&b.m);
	UT_CHECK(se_alloc_reroute(&b.m) == 0, "enable none allocates nothing");
	b.m.settings.enable = SE_ALLOC_ENABLE_PRIMARIES;
	se_alloc_reroute(&b.m);
	start_all(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_STARTED) == 1 && count_state(&b.m, SE_COPY_UNASSIGNED) == 1,
			 "enable primaries: the replica waits");
	b.m.settings.enable = SE_ALLOC_ENABLE_ALL;
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 1, "enable all: then it goes");

	/* new_primaries: a primary that held data elsewhere is not new */
	b_init(&b, 2);
	b.m.settings.enable = SE_ALLOC_ENABLE_NEW_PRIMARIES;
	b_index(&b, "a", 2, 0);
	b.m.copies[1].data_node = 1;
	b.m.copies[1].reason = SE_UNASSIGNED_NODE_LEFT;
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_INITIALIZING) == 1, "new_primaries allocates only the new one");

	/* max_retry */
	b_init(&b, 1);
	b_index(&b, "a", 1, 0);
	prepare(&b.m);
	for (i = 0; i < 5; i++)
	{
		se_alloc_reroute(&b.m);
		se_alloc_fail(&b.m, 0);
	}
	UT_CHECK(se_alloc_reroute(&b.m) == 0 && b.m.copies[0].failed_attempts == 5,
			 "after 5 failed attempts: no more");
	se_alloc_retry_failed(&b.m);
	UT_CHECK(se_alloc_reroute(&b.m) == 1, "retry_failed allocates it again");
	check_inv(&b.m, "retry");
}

static void
test_existing_store_and_node_left(void)
{
	Builder		b;

	b_init(&b, 3);
	b_index(&b, "a", 3, 0);
	prepare(&b.m);
	converge(&b.m, 10);
	UT_CHECK(on_node(&b.m, 1) == 1, "one copy on n1");
	se_alloc_node_left(&b.m, 1);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 1, "its copy is unassigned");
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 1,
			 "a primary whose data is on the departed node is not rebuilt empty elsewhere");
	/* n1 comes back: its primary returns there */
	b.m.nodes[1].data = true;
	b.m.ndata_nodes++;
	se_alloc_reroute(&b.m);
	UT_CHECK(on_node(&b.m, 1) == 1 && count_state(&b.m, SE_COPY_UNASSIGNED) == 0,
			 "and comes back on the node that holds it");
	check_inv(&b.m, "node left");

	/* delayed allocation of replicas */
	b_init(&b, 3);
	b_index(&b, "a", 1, 1);
	b.m.indices[0].delayed_timeout_ms = 60000;
	prepare(&b.m);
	converge(&b.m, 10);
	{
		int			rnode = b.m.copies[1].node;

		b.m.settings.now_ms = 1000;
		se_alloc_node_left(&b.m, rnode);
		se_alloc_reroute(&b.m);
		UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 1, "a replica of a departed node waits delayed_timeout");
		b.m.settings.now_ms = 62000;
		se_alloc_reroute(&b.m);
		UT_CHECK(count_state(&b.m, SE_COPY_UNASSIGNED) == 0, "and is allocated after it");
	}
}

/*
 * A closed index's copies move as ES 7.2+ moves them: its files are
 * immutable, so a recovery copies them without opening the shard.  The
 * rebalance, the move step (high watermark, filters) and the move command
 * relocate them; a cluster balanced with closed indices makes no moves.
 */
static void
test_closed_moved(void)
{
	Builder		b;
	SeError		err;
	SeAllocModel *twin;
	int			ix,
				i,
				moved_closed = 0;
	int64		gb = INT64CONST(1) << 30;

	/* rebalanced onto a node that joins, as open copies are */
	b_init(&b, 3);
	b.m.nodes[2].data = false;	/* joins later */
	b.m.settings.node_initial_primaries_recoveries = -1;
	ix = b_index(&b, "closed", 6, 0);
	b_index(&b, "open", 2, 0);
	prepare(&b.m);
	converge(&b.m, 10);
	b.m.indices[ix].closed = true;
	b.m.nodes[2].data = true;
	b.m.ndata_nodes++;
	twin = clone_model(&b.m);
	se_alloc_reroute(&b.m);
	se_alloc_reroute(twin);
	UT_CHECK(same_copies(&b.m, twin), "moving closed copies is deterministic");
	start_all(&b.m);
	converge(&b.m, 20);
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].index == ix && b.m.copies[i].node == 2)
			moved_closed++;
	UT_CHECK(moved_closed == 2, "closed copies rebalanced onto the new node (%d of 6)", moved_closed);
	UT_CHECK(se_alloc_reroute(&b.m) == 0, "a balanced cluster with a closed index: no moves");
	check_inv(&b.m, "closed rebalanced");
	/* the move command */
	se_error_init(&err);
	for (i = 0; i < b.m.ncopies && !(b.m.copies[i].index == ix && b.m.copies[i].node == 0); i++)
		;
	UT_CHECK(i < b.m.ncopies && se_alloc_move(&b.m, i, 1, &err) &&
			 b.m.copies[i].state == SE_COPY_RELOCATING && b.m.copies[i].relocating_node == 1,
			 "the move command relocates a closed copy: %s", err.reason ? err.reason : "");
	UT_CHECK(b.m.counts[1].initializing == 1 && b.m.counts[0].relocating_out == 1,
			 "and it counts as a recovery on both nodes");
	check_inv(&b.m, "closed move command");

	/* off a node above the high watermark */
	b_init(&b, 3);
	for (i = 0; i < 3; i++)
	{
		b.m.nodes[i].disk_total = 100 * gb;
		b.m.nodes[i].disk_used = 10 * gb;
	}
	b.m.settings.node_initial_primaries_recoveries = -1;
	b.m.settings.cluster_concurrent_rebalance = -1;
	ix = b_index(&b, "closed", 6, 0);
	prepare(&b.m);
	converge(&b.m, 10);
	for (i = 0; i < b.m.ncopies; i++)
		b.m.copies[i].size_bytes = 5 * gb;
	b.m.indices[ix].closed = true;
	b.m.nodes[0].disk_used = 92 * gb;
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_RELOCATING) == 1,
			 "one closed copy moves off the node above the high watermark (%d)",
			 count_state(&b.m, SE_COPY_RELOCATING));
	for (i = 0; i < b.m.ncopies; i++)
		if (b.m.copies[i].state == SE_COPY_RELOCATING)
			UT_CHECK(b.m.copies[i].node == 0 && b.m.copies[i].relocating_node != 0,
					 "from n0 to another node");
	check_inv(&b.m, "closed high watermark");

	/* out of an excluded tier */
	b_tiers(&b);
	b.m.settings.cluster_concurrent_rebalance = -1;
	ix = b_index(&b, "logs", 4, 1);
	b.m.indices[ix].filters.exclude = filter1("box_type", "cold", NULL);
	b.m.indices[ix].filters.nexclude = 1;
	prepare(&b.m);
	converge(&b.m, 10);
	UT_CHECK(on_node(&b.m, 0) == 4 && on_node(&b.m, 1) == 4, "on the hot tier");
	b.m.indices[ix].closed = true;
	b.m.indices[ix].filters.exclude = filter1("box_type", "hot", NULL);
	twin = clone_model(&b.m);
	converge(&b.m, 20);
	UT_CHECK(on_node(&b.m, 0) == 0 && on_node(&b.m, 1) == 0 &&
			 on_node(&b.m, 2) == 4 && on_node(&b.m, 3) == 4,
			 "the closed index left the excluded tier: %d %d %d %d",
			 on_node(&b.m, 0), on_node(&b.m, 1), on_node(&b.m, 2), on_node(&b.m, 3));
	converge(twin, 20);
	UT_CHECK(same_copies(&b.m, twin), "the same closed cluster gives the same moves");
	UT_CHECK(se_alloc_reroute(&b.m) == 0, "then no moves");
	check_inv(&b.m, "closed tier");
}

static void
test_rebalance(void)
{
	Builder		b;
	int			rounds,
				i,
				mn = 1 << 30,
				mx = 0;

	b_init(&b, 3);
	b.m.nodes[2].data = false;	/* joins later */
	b.m.settings.node_initial_primaries_recoveries = -1;
	b_index(&b, "a", 6, 0);
	b_index(&b, "b", 6, 0);
	b_index(&b, "c", 3, 0);
	prepare(&b.m);
	converge(&b.m, 10);
	UT_CHECK(on_node(&b.m, 0) + on_node(&b.m, 1) == 15, "two nodes hold everything");
	/* a third data node joins */
	b.m.nodes[2].data = true;
	b.m.ndata_nodes++;
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_RELOCATING) == 2,
			 "cluster_concurrent_rebalance: 2 at a time (%d)", count_state(&b.m, SE_COPY_RELOCATING));
	start_all(&b.m);
	rounds = converge(&b.m, 50);
	UT_CHECK(rounds < 50, "rebalancing converges (%d rounds)", rounds);
	for (i = 0; i < 3; i++)
	{
		mn = Min(mn, on_node(&b.m, i));
		mx = Max(mx, on_node(&b.m, i));
	}
	UT_CHECK(mx - mn <= 1, "balanced: %d..%d per node", mn, mx);
	UT_CHECK(b.m.node_index_shards[0 * b.m.nnodes + 2] == 2, "index a has 2 shards on the new node");

	/* no rebalancing while a copy is unassigned (indices_all_active) */
	b_init(&b, 2);
	b.m.nodes[1].data = false;
	b_index(&b, "a", 4, 1);		/* replicas can never go anywhere on one node */
	prepare(&b.m);
	converge(&b.m, 10);
	b.m.nodes[1].data = true;
	b.m.ndata_nodes++;
	b.m.indices[0].number_of_replicas = 1;
	b.m.settings.rebalance_enable = SE_REBALANCE_NONE;
	se_alloc_reroute(&b.m);
	UT_CHECK(count_state(&b.m, SE_COPY_RELOCATING) == 0, "rebalance.enable none: no move");
}

static void
test_commands(void)
{
	Builder		b;
	SeError		err;
	int			p,
				r;

	b_init(&b, 3);
	b_index(&b, "a", 1, 1);
	prepare(&b.m);
	converge(&b.m, 10);
	p = 0;
	r = 1;
	se_error_init(&err);
	UT_CHECK(!se_alloc_move(&b.m, p, b.m.copies[r].node, &err) &&
			 strstr(err.reason, "since its not allowed") && strstr(err.reason, "same_shard") == NULL &&
			 strstr(err.reason, "already allocated to this node"),
			 "move onto the replica's node is refused: %s", err.reason ? err.reason : "");
	{
		int			free_node = 3 - b.m.copies[p].node - b.m.copies[r].node;

		se_error_init(&err);
		UT_CHECK(se_alloc_move(&b.m, p, free_node, &err) && b.m.copies[p].state == SE_COPY_RELOCATING,
				 "move to the free node");
		se_error_init(&err);
		UT_CHECK(se_alloc_cancel(&b.m, p, false, &err) && b.m.copies[p].state == SE_COPY_STARTED,
				 "cancel of a relocation keeps the copy");
	}
	se_error_init(&err);
	UT_CHECK(!se_alloc_cancel(&b.m, p, false, &err) && strstr(err.reason, "shard is primary"),
			 "cancel of a primary needs allow_primary");
	se_error_init(&err);
	UT_CHECK(se_alloc_cancel(&b.m, r, false, &err) && b.m.copies[r].state == SE_COPY_UNASSIGNED,
			 "cancel a replica");
	se_error_init(&err);
	UT_CHECK(!se_alloc_allocate_replica(&b.m, r, b.m.copies[p].node, &err), "allocate_replica onto the primary's node");
	se_error_init(&err);
	UT_CHECK(se_alloc_allocate_replica(&b.m, r, 3 - b.m.copies[p].node - 1 >= 0 ? (b.m.copies[p].node + 1) % 3 : 0, &err),
			 "allocate_replica elsewhere: %s", err.reason ? err.reason : "");
	check_inv(&b.m, "commands");

	/* a lost primary: only with accept_data_loss */
	b_init(&b, 2);
	b_index(&b, "a", 1, 0);
	b.m.copies[0].data_node = 0;
	b.m.copies[0].reason = SE_UNASSIGNED_NODE_LEFT;
	b.m.nodes[0].data = false;
	prepare(&b.m);
	UT_CHECK(se_alloc_reroute(&b.m) == 0, "a lost primary is not rebuilt on its own");
	se_error_init(&err);
	UT_CHECK(!se_alloc_allocate_primary(&b.m, 0, 1, false, false, &err) &&
			 strstr(err.reason, "accept_data_loss"), "allocate_empty_primary needs accept_data_loss");
	se_error_init(&err);
	UT_CHECK(se_alloc_allocate_primary(&b.m, 0, 1, false, true, &err) &&
			 b.m.copies[0].state == SE_COPY_INITIALIZING && b.m.copies[0].node == 1,
			 "with it, an empty primary on n1");
}

static SeJson *
explain_json(SeAllocModel *m, int copy, bool yes)
{
	StringInfoData s;
	SeError		err;
	SeJsonParseOptions opts = {0};
	SeJson	   *j;

	initStringInfo(&s);
	se_alloc_explain_json(m, copy, yes, &s);
	se_error_init(&err);
	j = se_json_parse(s.data, s.len, &opts, &err);
	UT_CHECK(j != NULL, "explain writes valid JSON: %s", s.data);
	return j;
}

static const char *
jstr(const SeJson *o, const char *k)
{
	const SeJson *v = se_json_get(o, k);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : "";
}

static void
test_explain_json(void)
{
	Builder		b;
	SeJson	   *j;
	const SeJson *nd;
	int			ix;

	b_init(&b, 2);
	b_attr(&b, 0, "box_type", "cold");
	b_attr(&b, 1, "box_type", "cold");
	ix = b_index(&b, "logs", 1, 0);
	b.m.indices[ix].filters.require = filter1("box_type", "hot", NULL);
	b.m.indices[ix].filters.nrequire = 1;
	prepare(&b.m);
	se_alloc_reroute(&b.m);
	j = explain_json(&b.m, 0, false);
	nd = se_json_get(j, "node_allocation_decisions");
	UT_CHECK(strcmp(jstr(j, "current_state"), "unassigned") == 0 &&
			 strcmp(jstr(j, "can_allocate"), "no") == 0 &&
			 strcmp(jstr(se_json_get(j, "unassigned_info"), "reason"), "INDEX_CREATED") == 0,
			 "an unassigned copy no node takes");
	UT_CHECK(nd && nd->type == SE_JSON_ARRAY && nd->u.a.count == 2 &&
			 strcmp(jstr(nd->u.a.items[0], "node_decision"), "no") == 0 &&
			 se_json_get(nd->u.a.items[0], "deciders")->u.a.count == 1 &&
			 strcmp(jstr(se_json_get(nd->u.a.items[0], "deciders")->u.a.items[0], "decider"), "filter") == 0,
			 "each node names the decider that says no (and only it)");
	j = explain_json(&b.m, 0, true);
	nd = se_json_get(j, "node_allocation_decisions");
	UT_CHECK(se_json_get(nd->u.a.items[0], "deciders")->u.a.count > 5, "include_yes_decisions lists them all");

	/* a started copy that may not remain, with a node to go to */
	b.m.indices[ix].filters.nrequire = 0;
	se_alloc_reroute(&b.m);
	start_all(&b.m);
	b.m.indices[ix].filters.exclude = filter1("_name", b.m.nodes[b.m.copies[0].node].name, NULL);
	b.m.indices[ix].filters.nexclude = 1;
	j = explain_json(&b.m, 0, false);
	UT_CHECK(strcmp(jstr(j, "current_state"), "started") == 0 &&
			 strcmp(jstr(j, "can_remain_on_current_node"), "no") == 0 &&
			 strcmp(jstr(j, "can_move_to_other_node"), "yes") == 0 &&
			 se_json_get(j, "current_node") != NULL,
			 "a copy excluded from its node can move");
	b.m.indices[ix].filters.nexclude = 0;
	j = explain_json(&b.m, 0, false);
	UT_CHECK(strcmp(jstr(j, "can_remain_on_current_node"), "yes") == 0 &&
			 strcmp(jstr(j, "can_rebalance_cluster"), "yes") == 0, "and stays once allowed");
}

/* ---- property tests on random clusters ---- */

static SeAllocModel *
clone_model(const SeAllocModel *m)
{
	SeAllocModel *c = palloc(sizeof(SeAllocModel));

	*c = *m;
	c->nodes = palloc(sizeof(SeAllocNode) * m->nnodes);
	memcpy(c->nodes, m->nodes, sizeof(SeAllocNode) * m->nnodes);
	c->indices = palloc(sizeof(SeAllocIndex) * Max(m->nindices, 1));
	memcpy(c->indices, m->indices, sizeof(SeAllocIndex) * m->nindices);
	c->copies = palloc(sizeof(SeAllocCopy) * Max(m->ncopies, 1));
	memcpy(c->copies, m->copies, sizeof(SeAllocCopy) * m->ncopies);
	prepare(c);
	return c;
}

static bool
same_copies(const SeAllocModel *a, const SeAllocModel *b)
{
	int			i;

	for (i = 0; i < a->ncopies; i++)
		if (a->copies[i].state != b->copies[i].state || a->copies[i].node != b->copies[i].node ||
			a->copies[i].relocating_node != b->copies[i].relocating_node)
			return false;
	return true;
}

static void
test_properties(void)
{
	int			trial;
	int			det_ok = 0,
				noop_ok = 0,
				wm_ok = 1,
				trials = 200;
	int64		gb = INT64CONST(1) << 30;

	for (trial = 0; trial < trials; trial++)
	{
		Builder		b;
		int			nnodes = 2 + ut_rnd() % 10;
		int			nidx = 1 + ut_rnd() % 12;
		int			i,
					step;
		SeAllocModel *twin;

		b_init(&b, nnodes);
		b.m.settings.cluster_concurrent_rebalance = -1;
		for (i = 0; i < nnodes; i++)
		{
			b.m.nodes[i].disk_total = 100 * gb;
			b.m.nodes[i].disk_used = (int64) (ut_rnd() % 95) * gb;
		}
		for (i = 0; i < nidx; i++)
		{
			int			ix = b_index(&b, psprintf("i%d", i), 1 + ut_rnd() % 6, ut_rnd() % 3);

			b.m.indices[ix].closed = ut_rnd() % 2;
		}
		prepare(&b.m);
		twin = clone_model(&b.m);
		se_alloc_reroute(&b.m);
		se_alloc_reroute(twin);
		if (same_copies(&b.m, twin))
			det_ok++;
		/* random life: starts, failures, a node leaving, reroutes */
		for (step = 0; step < 30; step++)
		{
			int			k = ut_rnd() % b.m.ncopies;
			int			what = ut_rnd() % 10;

			if (what < 6)
				se_alloc_start(&b.m, k);
			else if (what < 8)
				se_alloc_fail(&b.m, k);
			else if (what == 8 && b.m.ndata_nodes > 1)
				se_alloc_node_left(&b.m, ut_rnd() % nnodes);
			se_alloc_reroute(&b.m);
			check_inv(&b.m, "random life");
			/* nothing new was placed on a node above the low watermark */
			for (i = 0; i < b.m.ncopies; i++)
			{
				const SeAllocCopy *c = &b.m.copies[i];

				if (c->changed && c->state == SE_COPY_INITIALIZING &&
					b.m.nodes[c->node].disk_used > 85 * gb)
					wm_ok = 0;
				b.m.copies[i].changed = false;
			}
		}
		/* settle: then another reroute moves nothing */
		{
			int			r = converge(&b.m, 200);

			if (se_alloc_reroute(&b.m) == 0)
				noop_ok++;
			else
				fprintf(stderr, "trial %d: %d rounds, %d nodes, %d copies, %d unassigned\n",
						trial, r, b.m.ndata_nodes, b.m.ncopies, b.m.unassigned);
		}
	}
	UT_CHECK(det_ok == trials, "the same model gives the same result (%d/%d)", det_ok, trials);
	UT_CHECK(noop_ok == trials, "a settled cluster produces no moves (%d/%d)", noop_ok, trials);
	UT_CHECK(wm_ok, "no copy placed above the low watermark");
}

int
main(void)
{
	test_initial_allocation();
	test_throttling();
	test_closed_not_throttled();
	test_same_shard_and_replica_after_primary();
	test_filters_move();
	test_disk_watermarks();
	test_awareness();
	test_shards_limit_enable_retry();
	test_existing_store_and_node_left();
	test_rebalance();
	test_closed_moved();
	test_commands();
	test_explain_json();
	test_properties();
	return ut_finish("test_allocator");
}
