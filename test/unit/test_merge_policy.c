/* SOURCES: src/index/merge_policy.c */
/*-------------------------------------------------------------------------
 *
 * test_merge_policy.c
 *	  Unit tests for the tiered merge policy: the segment budget, the
 *	  choice of equal-sized segments, what it must never pick, deletes, and
 *	  a simulated stream of refreshes (bounded segment count, each byte
 *	  rewritten O(log n) times).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdlib.h>
#include <string.h>

#include "index/merge_policy.h"
#include "unit_test.h"

#define MB ((int64) 1024 * 1024)

static SeMergePolicy
defaults(void)
{
	SeMergePolicy p;

	p.segments_per_tier = SE_MERGE_DEFAULT_SEGMENTS_PER_TIER;
	p.max_merge_at_once = SE_MERGE_DEFAULT_MAX_AT_ONCE;
	p.floor_segment_bytes = SE_MERGE_DEFAULT_FLOOR_BYTES;
	p.max_merged_segment_bytes = SE_MERGE_DEFAULT_MAX_MERGED_BYTES;
	p.deletes_pct_allowed = SE_MERGE_DEFAULT_DELETES_PCT;
	return p;
}

static SeMergeSegment
seg(int64 bytes, int64 max_doc, int64 del)
{
	SeMergeSegment s;

	s.bytes = bytes;
	s.max_doc = max_doc;
	s.del_count = del;
	s.merging = false;
	return s;
}

static bool
contains(const int *out, int n, int idx)
{
	int			i;

	for (i = 0; i < n; i++)
		if (out[i] == idx)
			return true;
	return false;
}

static void
test_within_budget(void)
{
	SeMergePolicy p = defaults();
	SeMergeSegment s[32];
	int			out[16];
	int			i;

	/* ten segments of any sizes, no deletes: nothing to do */
	for (i = 0; i < 10; i++)
		s[i] = seg((int64) (i + 1) * 37 * MB, 1000, 0);
	UT_CHECK(se_merge_policy_find(&p, s, 10, out, NULL) == 0, "10 segments are within budget");

	/*
	 * A 400 MB segment and fourteen 2 MB refresh segments: budget 10 at
	 * 2 MB + 10 at 20 MB + 2 at 200 MB = 22, so no merge yet (merging the
	 * smallest whenever there are more than ten would have merged).
	 */
	s[0] = seg(400 * MB, 100000, 0);
	for (i = 1; i < 15; i++)
		s[i] = seg(2 * MB, 500, 0);
	UT_CHECK(se_merge_policy_allowed(&p, s, 15) == 22, "allowed %d",
			 se_merge_policy_allowed(&p, s, 15));
	UT_CHECK(se_merge_policy_find(&p, s, 15, out, NULL) == 0, "15 segments of a 428 MB shard are within budget");
}

static void
test_equal_sizes_first(void)
{
	SeMergePolicy p = defaults();
	SeMergeSegment s[32];
	int			out[16];
	int			n,
				i;

	/* two large segments and 25 of 1 MB: over a budget of 20 */
	s[0] = seg(100 * MB, 50000, 0);
	s[1] = seg(90 * MB, 45000, 0);
	for (i = 2; i < 27; i++)
		s[i] = seg(1 * MB, 400, 0);
	UT_CHECK(se_merge_policy_allowed(&p, s, 27) == 20, "allowed %d",
			 se_merge_policy_allowed(&p, s, 27));
	n = se_merge_policy_find(&p, s, 27, out, NULL);
	UT_CHECK(n == 10, "merges max_merge_at_once segments, got %d", n);
	UT_CHECK(!contains(out, n, 0) && !contains(out, n, 1), "leaves the large segments alone");
	for (i = 0; i < n; i++)
		UT_CHECK(out[i] >= 2 && out[i] < 27, "picked index %d in range", out[i]);

	/* eleven tiny segments: the ten that fit a merge */
	for (i = 0; i < 11; i++)
		s[i] = seg(64 * 1024, 10, 0);
	n = se_merge_policy_find(&p, s, 11, out, NULL);
	UT_CHECK(n == 10, "11 tiny segments: merge 10, got %d", n);
}

static void
test_never_picks(void)
{
	SeMergePolicy p = defaults();
	SeMergeSegment s[32];
	int			out[16];
	int			n,
				i;

	/* merging segments are neither picked nor counted */
	for (i = 0; i < 21; i++)
	{
		s[i] = seg(1 * MB, 100, 0);
		s[i].merging = (i < 11);
	}
	n = se_merge_policy_find(&p, s, 21, out, NULL);
	UT_CHECK(n == 0, "10 free segments with 11 merging: within budget, got %d", n);
	s[0].merging = false;
	n = se_merge_policy_find(&p, s, 21, out, NULL);
	UT_CHECK(n == 10, "11 free segments: merge 10 of them, got %d", n);
	for (i = 0; i < n; i++)
		UT_CHECK(!s[out[i]].merging, "never a merging segment (%d)", out[i]);
	for (i = 0; i < 21; i++)
		s[i].merging = (i % 2 == 0);
	p.segments_per_tier = 2;
	p.max_merge_at_once = 2;
	n = se_merge_policy_find(&p, s, 21, out, NULL);
	UT_CHECK(n == 2, "a small tier merges two, got %d", n);
	for (i = 0; i < n; i++)
		UT_CHECK(!s[out[i]].merging, "never a merging segment (%d)", out[i]);

	/* segments over half of max_merged_segment stay, the rest fit under it */
	p = defaults();
	p.max_merged_segment_bytes = 100 * MB;
	for (i = 0; i < 5; i++)
		s[i] = seg(60 * MB, 1000, 0);
	for (i = 5; i < 20; i++)
		s[i] = seg(20 * MB, 1000, 0);
	n = se_merge_policy_find(&p, s, 20, out, NULL);
	UT_CHECK(n >= 2, "merges some of the 20 MB segments, got %d", n);
	{
		int64		total = 0;

		for (i = 0; i < n; i++)
		{
			UT_CHECK(out[i] >= 5, "not a segment over half the maximum (%d)", out[i]);
			total += s[out[i]].bytes;
		}
		UT_CHECK(total <= p.max_merged_segment_bytes, "merged size %lld within the maximum",
				 (long long) total);
	}
}

static void
test_deletes(void)
{
	SeMergePolicy p = defaults();
	SeMergeSegment s[4];
	int			out[16];
	int			n;

	/* within the count budget, but 30 % of the documents are deleted */
	s[0] = seg(100 * MB, 10000, 3500);
	s[1] = seg(10 * MB, 1000, 0);
	s[2] = seg(10 * MB, 1000, 0);
	n = se_merge_policy_find(&p, s, 3, out, NULL);
	UT_CHECK(n >= 1 && contains(out, n, 0), "reclaims the deletes of segment 0 (n=%d)", n);

	/* 10 % deleted: within the allowance */
	s[0].del_count = 1000;
	UT_CHECK(se_merge_policy_find(&p, s, 3, out, NULL) == 0, "10 %% deletes are allowed");

	/* a segment too large to merge is rewritten alone for its deletes */
	p.max_merged_segment_bytes = 150 * MB;
	s[0] = seg(140 * MB, 10000, 4000);
	n = se_merge_policy_find(&p, s, 1, out, NULL);
	UT_CHECK(n == 1 && out[0] == 0, "singleton merge for deletes (n=%d)", n);
}

/*
 * Refreshes of 1 MB each, merges applied at once: the segment count stays
 * within the budget and each byte is rewritten a logarithmic number of
 * times (write amplification of merging 10 at a time over ~3 tiers).
 */
static void
test_simulated_refreshes(void)
{
	SeMergePolicy p = defaults();
	SeMergeSegment *s = palloc(sizeof(SeMergeSegment) * 256);
	int			out[16];
	int			nsegs = 0;
	double		written = 0,
				indexed = 0;
	int			max_seen = 0;
	int			r;

	for (r = 0; r < 3000; r++)
	{
		int			n;

		s[nsegs++] = seg(1 * MB, 100, 0);
		indexed += 1 * MB;
		while ((n = se_merge_policy_find(&p, s, nsegs, out, NULL)) > 0)
		{
			SeMergeSegment merged = seg(0, 0, 0);
			bool		gone[256] = {false};
			int			i,
						j;

			for (i = 0; i < n; i++)
			{
				merged.bytes += s[out[i]].bytes;
				merged.max_doc += s[out[i]].max_doc;
				gone[out[i]] = true;
			}
			written += (double) merged.bytes;
			for (i = 0, j = 0; i < nsegs; i++)
				if (!gone[i])
					s[j++] = s[i];
			s[j++] = merged;
			nsegs = j;
		}
		max_seen = Max(max_seen, nsegs);
		UT_CHECK(nsegs <= se_merge_policy_allowed(&p, s, nsegs),
				 "after refresh %d: %d segments within budget %d", r, nsegs,
				 se_merge_policy_allowed(&p, s, nsegs));
		if (ut_failed > 0)
			break;
	}
	UT_CHECK(max_seen <= 40, "at most %d segments for 3 GB of refreshes", max_seen);
	UT_CHECK(written / indexed < 5.0, "write amplification %.2f", written / indexed);
	pfree(s);
}

/* Random inputs: the answer is always a valid merge. */
static void
test_random(void)
{
	int			iter;

	srand(42);
	for (iter = 0; iter < 2000; iter++)
	{
		SeMergePolicy p = defaults();
		SeMergeSegment s[64];
		int			out[16];
		int			nsegs = 1 + rand() % 64;
		int			n,
					i,
					j;
		int64		size = 0;

		p.segments_per_tier = 2 + rand() % 12;
		p.max_merge_at_once = 2 + rand() % 15;
		p.max_merged_segment_bytes = (int64) (1 + rand() % 200) * MB;
		for (i = 0; i < nsegs; i++)
		{
			int64		docs = 1 + rand() % 100000;

			s[i] = seg((int64) (1 + rand() % 300) * MB / (1 + rand() % 50), docs,
					   rand() % 4 == 0 ? rand() % docs : 0);
			s[i].merging = rand() % 5 == 0;
		}
		n = se_merge_policy_find(&p, s, nsegs, out, NULL);
		UT_CHECK(n >= 0 && n <= p.max_merge_at_once, "count %d", n);
		for (i = 0; i < n; i++)
		{
			UT_CHECK(out[i] >= 0 && out[i] < nsegs && !s[out[i]].merging,
					 "iteration %d: valid pick %d", iter, out[i]);
			for (j = 0; j < i; j++)
				UT_CHECK(out[i] != out[j], "iteration %d: distinct picks", iter);
			size += s[out[i]].bytes - s[out[i]].bytes * s[out[i]].del_count / s[out[i]].max_doc;
		}
		if (n > 1)
			UT_CHECK(size <= p.max_merged_segment_bytes + 1024, "iteration %d: %lld bytes fit",
					 iter, (long long) size);
		if (ut_failed > 20)
			break;
	}
}

int
main(void)
{
	test_within_budget();
	test_equal_sizes_first();
	test_never_picks();
	test_deletes();
	test_simulated_refreshes();
	test_random();
	return ut_finish("test_merge_policy");
}
