/* SOURCES: src/replication/checkpoint.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_checkpoint.c
 *	  Unit tests for the local checkpoint tracker: in order, out of order,
 *	  duplicates, long gaps across words, reset; and a randomized check
 *	  against a plain array of every seq_no.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <string.h>

#include "replication/checkpoint.h"
#include "unit_test.h"

static void
test_in_order(void)
{
	SeCheckpointTracker t;
	int64		i;

	se_checkpoint_init(&t, -1);
	UT_CHECK(t.checkpoint == -1, "fresh checkpoint %lld", (long long) t.checkpoint);
	UT_CHECK(!se_checkpoint_contains(&t, 0), "0 not processed yet");
	for (i = 0; i < 1000; i++)
		se_checkpoint_mark(&t, i);
	UT_CHECK(t.checkpoint == 999, "in order: %lld", (long long) t.checkpoint);
	UT_CHECK(t.bits == NULL, "in order needs no window");
	UT_CHECK(se_checkpoint_contains(&t, 500), "500 processed");
	UT_CHECK(!se_checkpoint_contains(&t, 1000), "1000 not");
	se_checkpoint_free(&t);
}

static void
test_out_of_order(void)
{
	SeCheckpointTracker t;

	se_checkpoint_init(&t, 9);
	se_checkpoint_mark(&t, 12);
	se_checkpoint_mark(&t, 11);
	UT_CHECK(t.checkpoint == 9, "gap at 10: %lld", (long long) t.checkpoint);
	UT_CHECK(t.max_seq_no == 12, "max %lld", (long long) t.max_seq_no);
	UT_CHECK(se_checkpoint_contains(&t, 11) && !se_checkpoint_contains(&t, 10), "window");
	se_checkpoint_mark(&t, 10);
	UT_CHECK(t.checkpoint == 12, "gap filled: %lld", (long long) t.checkpoint);
	se_checkpoint_mark(&t, 12);		/* duplicate */
	se_checkpoint_mark(&t, 3);		/* below */
	UT_CHECK(t.checkpoint == 12, "duplicates change nothing");
	/* a gap spanning several words */
	se_checkpoint_mark(&t, 500);
	UT_CHECK(t.checkpoint == 12, "far ahead: %lld", (long long) t.checkpoint);
	for (int64 i = 499; i >= 14; i--)
		se_checkpoint_mark(&t, i);
	UT_CHECK(t.checkpoint == 12, "13 missing: %lld", (long long) t.checkpoint);
	se_checkpoint_mark(&t, 13);
	UT_CHECK(t.checkpoint == 500, "all filled: %lld", (long long) t.checkpoint);
	UT_CHECK(t.nwords == 0, "window emptied: %d", t.nwords);
	se_checkpoint_mark(&t, 501);
	UT_CHECK(t.checkpoint == 501, "in order again");
	se_checkpoint_reset(&t, 100);
	UT_CHECK(t.checkpoint == 100 && t.max_seq_no == 100 && !se_checkpoint_contains(&t, 101),
			 "reset");
	se_checkpoint_mark(&t, 101);
	UT_CHECK(t.checkpoint == 101, "after reset");
	se_checkpoint_free(&t);
}

static void
test_random(void)
{
	enum
	{
		N = 20000
	};
	static int64 order[N];
	static bool seen[N];
	SeCheckpointTracker t;
	int			i;
	int			bad = 0;
	int64		expect = -1;
	int64		spread = 0;

	for (i = 0; i < N; i++)
		order[i] = i;
	/* shuffle within windows of 300: bounded disorder, as in flight */
	for (i = 0; i < N; i++)
	{
		int			j = i + (int) (ut_rnd() % 300);

		if (j < N)
		{
			int64		x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
	}
	se_checkpoint_init(&t, -1);
	for (i = 0; i < N; i++)
	{
		se_checkpoint_mark(&t, order[i]);
		seen[order[i]] = true;
		while (expect + 1 < N && seen[expect + 1])
			expect++;
		if (t.checkpoint != expect)
			bad++;
		spread = Max(spread, t.max_seq_no - t.checkpoint);
		if (i % 97 == 0 && se_checkpoint_contains(&t, order[(i * 7) % N]) != seen[order[(i * 7) % N]])
			bad++;
	}
	UT_CHECK(bad == 0, "%d mismatches against the reference", bad);
	UT_CHECK(t.checkpoint == N - 1, "end %lld", (long long) t.checkpoint);
	UT_CHECK(t.capwords <= 2 * (spread / 64 + 2), "window bounded by the spread %lld: %d words",
			 (long long) spread, t.capwords);
	se_checkpoint_free(&t);
}

int
main(void)
{
	test_in_order();
	test_out_of_order();
	test_random();
	return ut_finish("test_checkpoint");
}
