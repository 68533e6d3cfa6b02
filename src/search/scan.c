/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Point-in-time scan: every live document of a shard snapshot that
 *	  matches a request's query, in (segment, doc) order, without scoring.
 *
 * Used by update-by-query, delete-by-query and reindex: the caller holds
 * the snapshot for the whole job, so documents it rewrites (which land in
 * new segments) are not seen again.  Like the query phase, a scan stops
 * at the next interrupt check once the caller's hook says so.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "search/search.h"
#include "search/search_int.h"

static bool
scan_segments(SeSearchRequest *req, SeSearchShard *shard, SeScanFn fn,
			  void *arg, SeError *err)
{
	SeWeight   *w;
	int			s;

	/* a NULL query matches everything */
	w = se_weight_build(req->query, shard, false, NULL, NULL, err);
	if (w == NULL)
		return !se_error_is_set(err);
	for (s = 0; s < shard->nsegments; s++)
	{
		SeSegmentCtx ctx;
		SeScorer   *sc;
		int32		doc;
		const uint64 *live = shard->live_docs[s];

		ctx.reader = shard->segments[s];
		ctx.ord = s;
		ctx.max_doc = (int32) se_segment_max_doc(ctx.reader);
		sc = se_scorer_create(w, &ctx);
		if (sc == NULL)
			continue;
		while ((doc = sc->next(sc)) != SE_NO_MORE_DOCS)
		{
			SE_SEARCH_TICK(1);
			if (!se_livedocs_get(live, doc))
				continue;
			if (!fn(shard, s, doc, arg))
			{
				se_scorer_free(sc);
				return true;
			}
		}
		se_scorer_free(sc);
		if (se_segment_error(ctx.reader) != NULL)
		{
			const SeError *e = se_segment_error(ctx.reader);

			se_error_set(err, e->status, e->type, "%s", e->reason);
			return false;
		}
	}
	return true;
}

/*
 * The scan runs under a landing point as the query phase does: when the
 * interrupt hook says stop (a cancelled task), it leaves from the check
 * that saw it and fails with task_cancelled_exception.  fn is never
 * jumped over: checks are made in the scorers, between its calls.
 */
bool
se_search_scan(SeSearchRequest *req, SeSearchShard *shard, SeScanFn fn,
			   void *arg, SeError *err)
{
	SeSearchStop *stop = palloc0(sizeof(SeSearchStop));
	volatile bool ok = false;

	se_search_stop_arm(stop, -1);
	if (setjmp(stop->jb) == 0)
		ok = scan_segments(req, shard, fn, arg, err);
	se_search_stop_disarm();
	if (stop->reason == SE_STOP_ABANDONED)
	{
		se_error_set(err, 400, "task_cancelled_exception", "task cancelled");
		return false;
	}
	if (stop->reason == SE_STOP_FAILED)
	{
		*err = stop->error;
		return false;
	}
	return ok;
}
