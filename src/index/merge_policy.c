/*-------------------------------------------------------------------------
 *
 * merge_policy.c
 *	  A tiered merge policy: Lucene's TieredMergePolicy idea, our code.
 *
 * A segment's size is its bytes on disk scaled by its share of live
 * documents; sizes below floor_segment count as floor_segment, so that a
 * stream of tiny refresh segments does not make a long tail of tiers.  The
 * budget ("allowed segment count") grows with the index: segments_per_tier
 * segments of the smallest size, then segments_per_tier of max_merge_at_once
 * times that, and so on up to max_merged_segment.  Only when a shard holds
 * more segments than that, or more than deletes_pct_allowed percent of its
 * documents are deleted, is a merge chosen: among the runs of up to
 * max_merge_at_once segments adjacent in size order, the one with the
 * lowest score, where the score prefers merges of equal-sized segments
 * (low skew), small results and many deletes reclaimed.  Segments larger
 * than half of max_merged_segment are left alone unless their own deletes
 * exceed the allowance.
 *
 * Compared with "merge the ten smallest whenever there are more than ten"
 * this merges each document O(log(n)) times and lets a shard of a large
 * index keep a few more segments, which is what keeps merges from eating
 * the CPU that indexing and update-by-query need.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <limits.h>
#include <math.h>

#include "index/merge_policy.h"

typedef struct Ranked
{
	int			idx;
	double		size;			/* bytes scaled by the live share */
	double		bytes;			/* bytes on disk */
	int64		del_count;
} Ranked;

typedef struct Eligible
{
	Ranked	   *r;				/* by size, largest first */
	int			n;
	double		total_size;
	double		min_size;
	int64		total_max_doc;	/* over every segment not merging */
	int64		total_del;
} Eligible;

static double
live_size(const SeMergeSegment *s)
{
	if (s->max_doc <= 0)
		return (double) s->bytes;
	return (double) s->bytes * (1.0 - (double) s->del_count / (double) s->max_doc);
}

static double
floored(const SeMergePolicy *p, double size)
{
	return Max(size, (double) p->floor_segment_bytes);
}

static int
merge_factor(const SeMergePolicy *p)
{
	return Max(2, Min(p->max_merge_at_once, (int) p->segments_per_tier));
}

static int
cmp_ranked(const void *a, const void *b)
{
	const Ranked *x = a;
	const Ranked *y = b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->idx - y->idx;
}

static void
collect(const SeMergePolicy *p, const SeMergeSegment *segs, int nsegs, Eligible *e)
{
	int			i;

	e->r = palloc(sizeof(Ranked) * Max(nsegs, 1));
	e->n = 0;
	e->total_size = 0;
	e->min_size = 0;
	e->total_max_doc = 0;
	e->total_del = 0;
	for (i = 0; i < nsegs; i++)
	{
		const SeMergeSegment *s = &segs[i];
		double		size;
		double		del_pct;

		if (s->merging)
			continue;
		e->total_max_doc += s->max_doc;
		e->total_del += s->del_count;
		size = live_size(s);
		del_pct = s->max_doc > 0 ? 100.0 * (double) s->del_count / (double) s->max_doc : 0;
		/* too large to merge naturally, unless its deletes are too many */
		if (size > (double) p->max_merged_segment_bytes / 2 &&
			del_pct <= p->deletes_pct_allowed)
			continue;
		e->r[e->n].idx = i;
		e->r[e->n].size = size;
		e->r[e->n].bytes = (double) s->bytes;
		e->r[e->n].del_count = s->del_count;
		e->total_size += size;
		if (e->n == 0 || size < e->min_size)
			e->min_size = size;
		e->n++;
	}
	qsort(e->r, e->n, sizeof(Ranked), cmp_ranked);
}

static int
allowed_count(const SeMergePolicy *p, const Eligible *e)
{
	double		level = floored(p, e->min_size);
	double		left = e->total_size;
	double		allowed = 0;

	for (;;)
	{
		double		in_level = left / level;

		if (in_level < p->segments_per_tier ||
			level >= (double) p->max_merged_segment_bytes)
		{
			allowed += ceil(in_level);
			break;
		}
		allowed += p->segments_per_tier;
		left -= p->segments_per_tier * level;
		level = Min((double) p->max_merged_segment_bytes, level * merge_factor(p));
	}
	allowed = Max(allowed, p->segments_per_tier);
	return allowed > INT_MAX ? INT_MAX : (int) allowed;
}

int
se_merge_policy_allowed(const SeMergePolicy *p, const SeMergeSegment *segs, int nsegs)
{
	Eligible	e;
	int			allowed;

	collect(p, segs, nsegs, &e);
	allowed = allowed_count(p, &e);
	pfree(e.r);
	return allowed;
}

int
se_merge_policy_find(const SeMergePolicy *p, const SeMergeSegment *segs, int nsegs,
					 int *out, int *allowed)
{
	Eligible	e;
	bool		over_count;
	bool		over_deletes;
	int		   *cand = palloc(sizeof(int) * Max(p->max_merge_at_once, 1));
	double		best_score = 0;
	int			best_n = 0;
	int			start;
	int			budget;

	collect(p, segs, nsegs, &e);
	budget = allowed_count(p, &e);
	if (allowed)
		*allowed = budget;
	over_count = e.n > budget;
	over_deletes = (double) e.total_del >
		p->deletes_pct_allowed / 100.0 * (double) e.total_max_doc;
	if (!over_count && !over_deletes)
		goto done;

	for (start = 0; start < e.n; start++)
	{
		int			n = 0;
		double		size = 0;	/* the merged segment's estimated bytes */
		double		bytes = 0;	/* the inputs' bytes */
		double		floor_sum = 0;
		int64		dels = 0;
		bool		hit_too_large = false;
		double		skew;
		double		score;
		int			j;

		for (j = start; j < e.n && n < p->max_merge_at_once; j++)
		{
			if (size + e.r[j].size > (double) p->max_merged_segment_bytes)
			{
				/* try the smaller ones that still fit */
				hit_too_large = true;
				continue;
			}
			cand[n++] = e.r[j].idx;
			size += e.r[j].size;
			bytes += e.r[j].bytes;
			floor_sum += floored(p, e.r[j].size);
			dels += e.r[j].del_count;
		}
		/* merging one segment only pays to reclaim its deletes */
		if (n == 0 || (n == 1 && (dels == 0 || !over_deletes)))
			continue;

		/*
		 * A short run that did not stop on the size limit means the tail of
		 * the size order: every later start gives a smaller merge still.
		 */
		if (best_n > 0 && !hit_too_large && n < merge_factor(p))
			break;

		skew = hit_too_large ? 1.0 / merge_factor(p)
			: floored(p, e.r[start].size) / floor_sum;
		score = skew * pow(Max(size, 1.0), 0.05);
		if (bytes > 0)
			score *= pow(size / bytes, 2.0);	/* favour reclaiming deletes */
		if (best_n == 0 || score < best_score)
		{
			best_score = score;
			best_n = n;
			memcpy(out, cand, sizeof(int) * n);
		}
	}
done:
	pfree(cand);
	pfree(e.r);
	return best_n;
}
