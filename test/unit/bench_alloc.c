/*
 * bench_alloc.c
 *	  The allocator alone on synthetic clusters (bench/allocator_bench.sh):
 *	  15 data nodes, indices of 5 shards x 1 replica, 90% of them closed,
 *	  disks 30-70% used.  Per size it prints one TSV line:
 *
 *	  copies  initial_ms  noop_ms  noop_inflight_ms
 *
 *	  initial_ms: one reroute allocating every copy of a new cluster (the
 *	  recovery throttles lifted, so one reroute places them all; then the
 *	  primaries are started and a second reroute places the replicas: the
 *	  figure is the sum of both); noop_ms: median of a reroute over the
 *	  started, balanced cluster; noop_inflight_ms: the same with 1,000
 *	  copies initializing or relocating (the seed's case).
 *
 *	  Built twice: as is, and with -DSE_ALLOC_SCAN_NODE_SHARDS, the
 *	  deciders walking each node's copies per decision as ES did before 7.5.
 *
 *	  Times are CPU time of the thread (the machine is shared; a reroute
 *	  does no I/O and holds no lock).  initial_ms is -1 for sizes above
 *	  INITIAL_MAX (the O(n^2) build needs minutes there).
 *
 *	  usage: bench_alloc INITIAL_MAX SIZE [SIZE...] (copies)
 */
/* SOURCES: src/cluster/allocator.c src/util/match.c src/util/json.c src/util/error.c */
#include "util/se_common.h"

#include <stdlib.h>

#include "cluster/allocator.h"
#include "unit_test.h"

#define NODES 15
#define SHARDS 5
#define REPLICAS 1
#define REPS 9

static void place_balanced(SeAllocModel *m);

static SeAllocModel *
build(int ncopies, bool placed)
{
	SeAllocModel *m = palloc0(sizeof(SeAllocModel));
	int			nidx = ncopies / (SHARDS * (1 + REPLICAS));
	int			i,
				k = 0;
	int64		gb = INT64CONST(1) << 30;
	SeError		err;

	se_alloc_settings_default(&m->settings);
	m->nnodes = NODES;
	m->nodes = palloc0(sizeof(SeAllocNode) * NODES);
	for (i = 0; i < NODES; i++)
	{
		m->nodes[i].id = psprintf("node-%02d", i);
		m->nodes[i].name = psprintf("n%d", i);
		m->nodes[i].host = psprintf("10.0.0.%d", i);
		m->nodes[i].data = true;
		m->nodes[i].disk_total = 1000 * gb;
		m->nodes[i].disk_used = (int64) (300 + ut_rnd() % 400) * gb;
	}
	m->nindices = nidx;
	m->indices = palloc0(sizeof(SeAllocIndex) * nidx);
	m->ncopies = nidx * SHARDS * (1 + REPLICAS);
	m->copies = palloc0(sizeof(SeAllocCopy) * m->ncopies);
	for (i = 0; i < nidx; i++)
	{
		int			s,
					r;

		m->indices[i].name = psprintf("index-%06d", i);
		m->indices[i].number_of_shards = SHARDS;
		m->indices[i].number_of_replicas = REPLICAS;
		m->indices[i].closed = (i % 10) != 0;
		m->indices[i].total_shards_per_node = -1;
		m->indices[i].max_retries = 5;
		for (s = 0; s < SHARDS; s++)
			for (r = 0; r <= REPLICAS; r++)
			{
				SeAllocCopy *c = &m->copies[k++];

				c->index = i;
				c->shard = s;
				c->primary = r == 0;
				c->state = SE_COPY_UNASSIGNED;
				c->node = c->relocating_node = c->data_node = -1;
				c->size_bytes = (int64) (1 + ut_rnd() % 64) << 20;
			}
	}
	if (placed)
		place_balanced(m);
	se_error_init(&err);
	if (!se_alloc_prepare(m, &err))
	{
		fprintf(stderr, "prepare: %s\n", err.reason);
		exit(2);
	}
	return m;
}

static void
start_all(SeAllocModel *m)
{
	int			i;

	for (i = 0; i < m->ncopies; i++)
		if (m->copies[i].state == SE_COPY_INITIALIZING || m->copies[i].state == SE_COPY_RELOCATING)
			se_alloc_start(m, i);
}

static double
reroute_ms(SeAllocModel *m)
{
	double		t0 = ut_clock_sec(CLOCK_THREAD_CPUTIME_ID);

	se_alloc_reroute(m);
	return (ut_clock_sec(CLOCK_THREAD_CPUTIME_ID) - t0) * 1000.0;
}

static int
cmp_d(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
median_noop(SeAllocModel *m)
{
	double		t[REPS];
	int			r;

	for (r = 0; r < REPS; r++)
		t[r] = reroute_ms(m);
	qsort(t, REPS, sizeof(double), cmp_d);
	return t[REPS / 2];
}

/* every copy started, round robin over the nodes: a balanced cluster */
static void
place_balanced(SeAllocModel *m)
{
	int			i;

	for (i = 0; i < m->ncopies; i++)
	{
		m->copies[i].state = SE_COPY_STARTED;
		m->copies[i].node = m->copies[i].data_node = i % NODES;
	}
}

int
main(int argc, char **argv)
{
	int			a;
	int			initial_max = argc > 1 ? atoi(argv[1]) : 0;

	for (a = 2; a < argc; a++)
	{
		int			size = atoi(argv[a]);
		SeAllocModel *m;
		SeAllocSettings keep;
		double		initial = -1,
					noop,
					inflight;
		int			i,
					moved = 0;
		SeError		err;

		/* initial allocation of a new cluster: throttles lifted */
		if (size <= initial_max)
		{
			m = build(size, false);
			m->settings.node_initial_primaries_recoveries = -1;
			m->settings.node_concurrent_incoming_recoveries = -1;
			m->settings.node_concurrent_outgoing_recoveries = -1;
			initial = reroute_ms(m);
			start_all(m);
			initial += reroute_ms(m);
			if (m->unassigned != 0)
			{
				fprintf(stderr, "%d copies left unassigned\n", m->unassigned);
				return 1;
			}
		}

		/* a settled cluster: a reroute is a no-op */
		m = build(size, true);
		keep = m->settings;
		if (se_alloc_reroute(m) != 0)
		{
			fprintf(stderr, "the balanced cluster is not a no-op\n");
			return 1;
		}
		noop = median_noop(m);

		/*
		 * 1,000 copies in flight: 500 relocations, 500 replicas being
		 * rebuilt (a copy failed, then allocated again on its node)
		 */
		for (i = 0; i + 1 < m->ncopies && moved < 1000; i += 2 * (m->ncopies / 1200) + 2)
		{
			SeAllocCopy *c = &m->copies[i];
			SeAllocCopy *r = &m->copies[i + 1];
			int			to = (c->node + 1 + (moved / 2) % (NODES - 1)) % NODES;

			se_error_init(&err);
			m->settings.node_concurrent_incoming_recoveries = -1;
			m->settings.node_concurrent_outgoing_recoveries = -1;
			if (c->state == SE_COPY_STARTED && se_alloc_move(m, i, to, &err))
				moved++;
			if (!r->primary && r->state == SE_COPY_STARTED)
			{
				int			node = r->node;

				se_alloc_fail(m, i + 1);
				r->failed_attempts = 0;
				se_error_init(&err);
				if (se_alloc_allocate_replica(m, i + 1, node, &err))
					moved++;
			}
			m->settings = keep;
		}
		if (se_alloc_reroute(m) != 0)
		{
			fprintf(stderr, "the reroute with copies in flight is not a no-op\n");
			return 1;
		}
		inflight = median_noop(m);
		printf("%d\t%.3f\t%.3f\t%.3f\t%d\n", m->ncopies, initial, noop, inflight,
			   m->initializing + m->relocations);
		fflush(stdout);
	}
	return 0;
}
