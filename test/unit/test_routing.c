/*
 * test_routing.c
 *	  One shard's routing rules (cluster/routing.c): the in-sync set, the
 *	  replica count changed at runtime, the failover to an in-sync replica
 *	  with the primary term + 1 (never to a stale copy), and a property
 *	  test over random event sequences (the copy a read picks:
 *	  test_replica_select.c).
 */
/* SOURCES: src/cluster/routing.c */
#include "util/se_common.h"

#include "cluster/routing.h"
#include "unit_test.h"

static int	next_id = 0;

/* a shard with ncopies copies, all unassigned, term 1 */
static SeShardRouting *
r_new(int ncopies)
{
	SeShardRouting *r = palloc0(sizeof(SeShardRouting));
	int			k;

	r->ncopies = ncopies;
	r->copies = palloc0(sizeof(SeShardCopy) * ncopies);
	r->primary_term = 1;
	for (k = 0; k < ncopies; k++)
		se_routing_init_replica(&r->copies[k], "INDEX_CREATED", 0);
	r->copies[0].primary = true;
	return r;
}

/* copy k placed on node (INITIALIZING, fresh id), as the master's reroute does */
static void
place(SeShardRouting *r, int k, const char *node)
{
	SeShardCopy *c = &r->copies[k];

	c->state = SE_SHARD_INITIALIZING;
	c->node = pstrdup(node);
	snprintf(c->allocation_id, sizeof(c->allocation_id), "id%d", next_id++);
}

/* shard_started of copy k: STARTED and in sync */
static void
start(SeShardRouting *r, int k)
{
	r->copies[k].state = SE_SHARD_STARTED;
	se_routing_in_sync_add(r, r->copies[k].allocation_id);
}

static void
test_in_sync(void)
{
	SeShardRouting *r = r_new(2);

	place(r, 0, "n1");
	start(r, 0);
	se_routing_in_sync_add(r, r->copies[0].allocation_id);
	UT_CHECK(r->nin_sync == 1, "an id is in the set once");
	UT_CHECK(se_routing_in_sync(r, r->copies[0].allocation_id), "started primary in sync");
	UT_CHECK(!se_routing_in_sync(r, ""), "no id is never in sync");
	place(r, 1, "n2");
	UT_CHECK(!se_routing_in_sync(r, r->copies[1].allocation_id), "an initializing replica is not in sync");
	start(r, 1);
	UT_CHECK(r->nin_sync == 2, "started replica joins");
	se_routing_unassign(r, 1, "ALLOCATION_FAILED", "boom", 5);
	UT_CHECK(r->nin_sync == 1 && r->copies[1].state == SE_SHARD_UNASSIGNED &&
			 r->copies[1].node[0] == '\0' && r->copies[1].allocation_id[0] == '\0' &&
			 strcmp(r->copies[1].unassigned_reason, "ALLOCATION_FAILED") == 0 &&
			 r->copies[1].unassigned_at == 5,
			 "a failed copy is unassigned and leaves the in-sync set");
}

static void
test_resize(void)
{
	SeShardRouting *r = r_new(1);

	place(r, 0, "n1");
	start(r, 0);
	UT_CHECK(se_routing_resize(r, 3, 7), "0 -> 2 replicas changes");
	UT_CHECK(r->ncopies == 3 && !r->copies[1].primary && !r->copies[2].primary &&
			 r->copies[2].state == SE_SHARD_UNASSIGNED &&
			 strcmp(r->copies[2].unassigned_reason, "REPLICA_ADDED") == 0,
			 "replicas added unassigned (REPLICA_ADDED)");
	UT_CHECK(!se_routing_resize(r, 3, 7), "same count: no change");
	place(r, 1, "n2");
	start(r, 1);
	place(r, 2, "n3");
	/* 2 -> 1: the initializing one goes before the started one */
	UT_CHECK(se_routing_resize(r, 2, 8) && r->ncopies == 2 &&
			 strcmp(r->copies[1].node, "n2") == 0, "initializing replica removed first");
	se_routing_resize(r, 3, 9);
	UT_CHECK(se_routing_resize(r, 2, 9) && r->ncopies == 2 &&
			 r->copies[1].state == SE_SHARD_STARTED, "unassigned replica removed first");
	UT_CHECK(se_routing_resize(r, 1, 9) && r->ncopies == 1 && r->nin_sync == 1 &&
			 se_routing_in_sync(r, r->copies[0].allocation_id),
			 "removing a started replica takes its id out of in_sync, the primary stays");
	UT_CHECK(!se_routing_resize(r, 0, 9) && r->ncopies == 1, "never fewer than the primary");
}

static void
test_promote(void)
{
	SeShardRouting *r = r_new(2);
	char		promoted_id[SE_UUID_LEN + 1];

	place(r, 0, "n1");
	start(r, 0);
	UT_CHECK(!se_routing_promote(r, 1), "no promotion while the primary is assigned");
	place(r, 1, "n2");
	/* primary's node leaves while the replica still initializes: red */
	se_routing_unassign(r, 0, "NODE_LEFT", "node_left [n1]", 2);
	UT_CHECK(!se_routing_promote(r, 2) && r->primary_term == 1,
			 "an initializing replica is never promoted");
	/* a started replica outside the in-sync set (failed a write, say) */
	r = r_new(2);
	place(r, 0, "n1");
	start(r, 0);
	place(r, 1, "n2");
	r->copies[1].state = SE_SHARD_STARTED;	/* started, but not in sync */
	se_routing_unassign(r, 0, "NODE_LEFT", NULL, 2);
	UT_CHECK(!se_routing_promote(r, 2) && r->copies[0].state == SE_SHARD_UNASSIGNED,
			 "a stale copy is never promoted");
	/* the failover */
	r = r_new(3);
	place(r, 0, "n1");
	start(r, 0);
	place(r, 1, "n2");
	start(r, 1);
	place(r, 2, "n3");
	strlcpy(promoted_id, r->copies[1].allocation_id, sizeof(promoted_id));
	se_routing_unassign(r, 0, "NODE_LEFT", "node_left [n1]", 3);
	UT_CHECK(se_routing_promote(r, 4), "in-sync started replica promoted");
	UT_CHECK(r->primary_term == 2, "term + 1 (%lld)", (long long) r->primary_term);
	UT_CHECK(r->copies[0].primary && strcmp(r->copies[0].node, "n2") == 0 &&
			 strcmp(r->copies[0].allocation_id, promoted_id) == 0 &&
			 r->copies[0].state == SE_SHARD_STARTED &&
			 strcmp(r->copies[0].data_node, "n2") == 0,
			 "copies[0] is the promoted copy, same allocation id, its data there");
	UT_CHECK(r->ncopies == 3 && !r->copies[1].primary && r->copies[1].state == SE_SHARD_UNASSIGNED &&
			 strcmp(r->copies[1].unassigned_reason, "NODE_LEFT") == 0 &&
			 strstr(r->copies[1].unassigned_details, "failed over to [n2]") != NULL,
			 "the old primary's place is an unassigned replica");
	UT_CHECK(strcmp(r->copies[2].node, "n3") == 0 && r->copies[2].state == SE_SHARD_INITIALIZING,
			 "the other replica stays");
	UT_CHECK(r->nin_sync == 1 && se_routing_in_sync(r, promoted_id),
			 "in_sync: the new primary only");
}

/*
 * Random events on a shard (start, fail, node left with the failover,
 * replica count changes, placements): copies[0] is the only primary,
 * every in-sync id belongs to an assigned copy, the term never goes down
 * and goes up exactly when a promotion happens, and a promoted copy was
 * in sync and started.
 */
static void
test_properties(void)
{
	int			round;
	int			bad = 0;

	for (round = 0; round < 200; round++)
	{
		SeShardRouting *r = r_new(1 + (int) (ut_rnd() % 3));
		int			step;

		for (step = 0; step < 60; step++)
		{
			int			k = (int) (ut_rnd() % r->ncopies);
			int64		term = r->primary_term;
			int			j,
						m;

			switch (ut_rnd() % 6)
			{
				case 0:			/* place an unassigned copy (replica: after the primary started) */
					if (r->copies[k].state == SE_SHARD_UNASSIGNED &&
						(k == 0 || r->copies[0].state == SE_SHARD_STARTED))
					{
						char		node[8];

						snprintf(node, sizeof(node), "n%d", (int) (ut_rnd() % 5));
						if (se_routing_copy_on(r, node) == NULL)
							place(r, k, node);
					}
					break;
				case 1:
					if (r->copies[k].state == SE_SHARD_INITIALIZING)
						start(r, k);
					break;
				case 2:
					if (r->copies[k].state != SE_SHARD_UNASSIGNED)
						se_routing_unassign(r, k, "ALLOCATION_FAILED", NULL, step);
					break;
				case 3:
					se_routing_resize(r, 1 + (int) (ut_rnd() % 4), step);
					break;
				default:
					break;
			}
			/* every reroute tries the failover */
			{
				char		was[SE_UUID_LEN + 1] = "";
				bool		was_ok = false;

				for (j = 1; j < r->ncopies; j++)
					if (r->copies[0].state == SE_SHARD_UNASSIGNED &&
						r->copies[j].state == SE_SHARD_STARTED &&
						se_routing_in_sync(r, r->copies[j].allocation_id))
					{
						strlcpy(was, r->copies[j].allocation_id, sizeof(was));
						was_ok = true;
						break;
					}
				if (se_routing_promote(r, step))
				{
					if (!was_ok || strcmp(r->copies[0].allocation_id, was) != 0 ||
						r->primary_term != term + 1)
						bad++;
				}
				else if (was_ok || r->primary_term != term)
					bad++;
			}
			for (j = 0; j < r->ncopies; j++)
				if (r->copies[j].primary != (j == 0))
					bad++;
			for (m = 0; m < r->nin_sync; m++)
			{
				bool		found = false;

				for (j = 0; j < r->ncopies; j++)
					if (r->copies[j].state != SE_SHARD_UNASSIGNED &&
						strcmp(r->copies[j].allocation_id, r->in_sync[m]) == 0)
						found = true;
				if (!found)
					bad++;
			}
		}
	}
	UT_CHECK(bad == 0, "%d invariant violations over random event sequences", bad);
}

/*
 * A relocation (ES RELOCATING): the moving copy stays STARTED and
 * readable, its target is an INITIALIZING copy on the new node under its
 * own id (not readable); started, the target takes the copy's place and
 * the in-sync entry, with the same primary term; cancelled or failed,
 * nothing moved.  A promoted replica's move and a failed copy's target go.
 */
static void
test_relocation(void)
{
	SeShardRouting *r = r_new(2);
	SeShardCopy t;
	char		old_id[SE_UUID_LEN + 1];
	int			k;

	place(r, 0, "n1");
	start(r, 0);
	place(r, 1, "n2");
	start(r, 1);
	UT_CHECK(!se_routing_target_on(r, "n3", &t) && se_routing_relocations(r) == 0,
			 "no relocation yet");
	strlcpy(old_id, r->copies[1].allocation_id, sizeof(old_id));
	se_routing_relocate(r, 1, "n3", "tgt1");
	UT_CHECK(se_routing_relocating(&r->copies[1]) && r->copies[1].state == SE_SHARD_STARTED &&
			 se_routing_relocations(r) == 1, "a moving copy is STARTED and RELOCATING");
	UT_CHECK(se_routing_target_on(r, "n3", &t) && t.state == SE_SHARD_INITIALIZING &&
			 !t.primary && strcmp(t.allocation_id, "tgt1") == 0 && strcmp(t.node, "n3") == 0,
			 "the target is an initializing copy on the new node under its own id");
	UT_CHECK(!se_routing_target_on(r, "n2", &t), "the source node holds no target");
	UT_CHECK(se_routing_copy_on(r, "n3") == NULL, "the target is not an assigned copy");
	UT_CHECK(se_routing_relocation_of(r, "n3", "tgt1") == 1 &&
			 se_routing_relocation_of(r, "n3", "other") == -1 &&
			 se_routing_relocation_of(r, "n2", "tgt1") == -1, "a target found by node and id");
	/* reads choose among copies[] (replica_select.c): the target is not one */
	for (k = 0; k < r->ncopies; k++)
		UT_CHECK(r->copies[k].node == NULL || strcmp(r->copies[k].node, "n3") != 0,
				 "a read never goes to the target");
	se_routing_relocation_done(r, 1);
	UT_CHECK(strcmp(r->copies[1].node, "n3") == 0 &&
			 strcmp(r->copies[1].allocation_id, "tgt1") == 0 &&
			 r->copies[1].state == SE_SHARD_STARTED && !se_routing_relocating(&r->copies[1]) &&
			 strcmp(r->copies[1].data_node, "n3") == 0,
			 "the started target takes the copy's place");
	UT_CHECK(se_routing_in_sync(r, "tgt1") && !se_routing_in_sync(r, old_id) && r->nin_sync == 2,
			 "the target's id replaces the source's in the in-sync set");

	/* a primary's move keeps the term */
	se_routing_relocate(r, 0, "n4", "tgt2");
	se_routing_relocation_done(r, 0);
	UT_CHECK(r->copies[0].primary && strcmp(r->copies[0].node, "n4") == 0 &&
			 r->primary_term == 1 && se_routing_in_sync(r, "tgt2"),
			 "a relocated primary is primary on the target with the same term");

	/* cancelled: nothing moved */
	se_routing_relocate(r, 1, "n5", "tgt3");
	se_routing_relocation_cancel(r, 1);
	UT_CHECK(strcmp(r->copies[1].node, "n3") == 0 && !se_routing_relocating(&r->copies[1]) &&
			 !se_routing_target_on(r, "n5", &t) && se_routing_in_sync(r, "tgt1"),
			 "a cancelled move leaves the copy where it was");
	se_routing_relocation_done(r, 1);
	UT_CHECK(strcmp(r->copies[1].node, "n3") == 0, "done after cancel does nothing");

	/* the moving copy fails: its target goes too */
	se_routing_relocate(r, 1, "n5", "tgt4");
	se_routing_unassign(r, 1, "ALLOCATION_FAILED", NULL, 9);
	UT_CHECK(!se_routing_target_on(r, "n5", &t) && se_routing_relocations(r) == 0,
			 "a failed moving copy's target is gone");

	/* a replica moving when its primary fails is promoted where it is */
	place(r, 1, "n6");
	start(r, 1);
	se_routing_relocate(r, 1, "n7", "tgt5");
	se_routing_unassign(r, 0, "NODE_LEFT", NULL, 10);
	UT_CHECK(se_routing_promote(r, 11) && strcmp(r->copies[0].node, "n6") == 0 &&
			 !se_routing_relocating(&r->copies[0]) && r->primary_term == 2 &&
			 !se_routing_target_on(r, "n7", &t),
			 "a promoted replica's move is cancelled");
}

int
main(void)
{
	test_in_sync();
	test_resize();
	test_promote();
	test_relocation();
	test_properties();
	return ut_finish("test_routing");
}
