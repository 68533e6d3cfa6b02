/*-------------------------------------------------------------------------
 *
 * shard_access.c
 *	  The FDW's access to the engine: open an index, pin its shard
 *	  snapshots, run a DSL request as a scan, a top-k search or a count,
 *	  read documents, realtime GET.
 *
 * Local shards run in the calling backend over shard snapshots, as
 * search_engine.search() does (src/api/search_ops.c); no text round trip.
 * Shards on other nodes (SeSearchShard.node set) are read through the
 * transport: scans and realtime GET by remote_shards.c, top-k searches and
 * counts by search's own query-then-fetch (api/search_remote.c).
 *
 * Segment readers live in a per-backend cache that the next snapshot of
 * the same shard may prune, so a caller must finish with one set of
 * snapshots (convert what it needs) before taking the next: fdw.c
 * materializes each (re)scan into a tuplestore in one go.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "miscadmin.h"
#include "executor/executor.h"

#include "api/api.h"
#include "fdw/fdw.h"
#include "shard/snapshot.h"
#include "util/hash.h"

static void
raise_if(SeError *err)
{
	if (se_error_is_set(err))
		se_raise(err);
}

/* se_alias_single_index, its error raised */
static const char *
single_index(const char *name, bool write, const char **routing)
{
	SeError		err;
	const char *ci;

	se_error_init(&err);
	ci = se_alias_single_index(se_state_current(), name, write, routing, &err);
	if (ci == NULL)
		se_raise(&err);
	return ci;
}

/*
 * The index option may name an alias of one index (its writes go through
 * se_engine_write_index): that index.  An alias's filter is applied by
 * the table's queries (se_engine_alias_filter).
 */
const char *
se_engine_concrete_index(const char *index)
{
	return single_index(index, false, NULL);
}

/* The filter of the alias name (JSON), NULL when none or not an alias. */
char *
se_engine_alias_filter(const char *name)
{
	const SeClusterState *st = se_state_current();
	List	   *l;
	const char *f;

	if (se_state_find(st, name) != NULL || (l = se_alias_indices(st, name)) == NIL)
		return NULL;
	f = se_alias_on(linitial(l), name)->filter;
	return f ? pstrdup(f) : NULL;
}

/*
 * A write through the index option name: ES's rules for an alias (its
 * write index, refused when it has none; its index routing, into
 * *routing, refused when the row's differs).  The concrete index.
 */
const char *
se_engine_write_index(const char *name, const char **routing)
{
	return single_index(name, true, routing);
}

/*
 * Resolve an index for reading.  Missing index: false when missing_ok,
 * else ERROR (index_not_found_exception in the detail).
 */
bool
se_engine_open(const char *index, SeEngineIndex *ei, bool missing_ok)
{
	SeError		err;
	SeIndexMeta *im;

	se_require_started();
	se_error_init(&err);
	memset(ei, 0, sizeof(*ei));
	im = se_index_for_read(se_engine_concrete_index(index), &err);
	if (im == NULL)
	{
		if (missing_ok && err.status == 404)
			return false;
		se_raise(&err);
	}
	ei->im = im;
	ei->name = pstrdup(im->name);
	ei->mapping = se_mapping_copy(im->mapping);
	ei->max_result_window = im->settings.max_result_window;
	return true;
}

void
se_engine_authorize(const char *index, SeAclAction action, EState *estate, Index rtindex)
{
	Oid			role = InvalidOid;
	SeError		err;

	/* as postgres_fdw picks its user mapping: a view's owner, else the caller */
	if (estate != NULL && rtindex > 0)
		role = exec_rt_fetch(rtindex, estate)->checkAsUser;
	if (!OidIsValid(role))
		role = GetUserId();
	se_error_init(&err);
	if (!se_acl_role_check(role, se_engine_concrete_index(index), action, &err))
		se_raise(&err);
}

bool
se_engine_readable(const char *index)
{
	return se_acl_allowed(se_engine_concrete_index(index), SE_ACL_READ);
}

/*
 * Snapshots of every shard of the index (call right after se_engine_open);
 * a shard on another node is named (node, index uuid) for the transport.
 */
SeSearchShard *
se_engine_shards(SeEngineIndex *ei, int *nshards)
{
	int			n = ei->im->settings.number_of_shards;
	SeSearchShard *shards = palloc0(sizeof(SeSearchShard) * Max(n, 1));
	int			s;

	for (s = 0; s < n; s++)
	{
		const char *node;

		if (se_state_read_here(ei->im, s, &node))
			(void) se_snapshot_acquire(ei->im, s, &shards[s], NULL);
		else
		{
			shards[s].shard = s;
			shards[s].node = pstrdup(node);
			shards[s].max_terms_count = ei->im->settings.max_terms_count;
			shards[s].max_regex_length = ei->im->settings.max_regex_length;
			shards[s].max_analyzed_offset = ei->im->settings.highlight_max_analyzed_offset;
		}
		shards[s].index = ei->name;
		shards[s].index_uuid = pstrdup(ei->im->uuid);
		shards[s].mapping = ei->mapping;
	}
	*nshards = n;
	return shards;
}

/* Refresh shards from..to-1 of im where they are, if they need it. */
static void
refresh_shards(SeIndexMeta *im, int from, int to)
{
	SeSearchShard *named = palloc0(sizeof(SeSearchShard) * Max(to - from, 1));
	int			s;

	for (s = from; s < to; s++)
	{
		SeSearchShard *sh = &named[s - from];
		const char *node;

		sh->index = im->name;
		sh->index_uuid = im->uuid;
		sh->shard = s;
		if (se_state_read_here(im, s, &node))
			se_snapshot_refresh_if_needed(im, s);
		else
			sh->node = node;
	}
	se_engine_refresh_remote(named, to - from);
}

/*
 * Make every write of the index searchable first (for the scans feeding
 * UPDATE/DELETE: their rows carry the _seq_no the write is conditioned
 * on, so they must see the latest version, as a realtime GET does).
 */
void
se_engine_refresh(SeEngineIndex *ei)
{
	refresh_shards(ei->im, 0, ei->im->settings.number_of_shards);
}

/* The same for one shard (the shards a commit wrote to). */
void
se_engine_refresh_shard(SeIndexMeta *im, int shard)
{
	refresh_shards(im, shard, shard + 1);
}

static SeJson *
parse_json(const char *body, int len)
{
	SeError		err;
	SeJsonParseOptions opts = {0};
	SeJson	   *j;

	se_error_init(&err);
	j = se_json_parse(body, len, &opts, &err);
	raise_if(&err);
	return j;
}

/* Parse a DSL body (JSON text); errors are raised with the ES type. */
SeSearchRequest *
se_engine_parse(const char *body, int len, bool count)
{
	SeError		err;
	SeJson	   *j = parse_json(body, len);
	SeSearchRequest *req;

	se_error_init(&err);
	req = count ? se_search_parse_count(j, &err) : se_search_parse(j, PG_INT32_MAX, &err);
	raise_if(&err);
	return req;
}

typedef struct ScanArg
{
	SeDocFn		fn;
	void	   *arg;
	bool		stopped;
} ScanArg;

static bool
scan_cb(SeSearchShard *shard, int segment, int32 doc, void *arg)
{
	ScanArg    *sa = arg;
	SeDocRef	d;

	d.shard = shard;
	d.segment = segment;
	d.doc = doc;
	d.score = NAN;
	d.id = NULL;
	d.source = NULL;
	d.meta = NULL;
	if (!sa->fn(&d, sa->arg))
	{
		sa->stopped = true;
		return false;
	}
	return true;
}

/*
 * Every live matching document, unscored: the local shards in (shard,
 * segment, doc) order, then those of other nodes as their batches come
 * (with _source when with_source; local docs read theirs on demand).
 */
void
se_engine_scan(SeSearchRequest *req, const char *body, SeSearchShard *shards,
			   int nshards, bool with_source, SeDocFn fn, void *arg)
{
	if (se_engine_scan_local(req, shards, nshards, fn, arg))
		se_engine_scan_remote(body, shards, nshards, with_source, fn, arg);
}

/* The same over this node's shards only; false when fn stopped it. */
bool
se_engine_scan_local(SeSearchRequest *req, SeSearchShard *shards, int nshards,
					 SeDocFn fn, void *arg)
{
	ScanArg		sa;
	int			i;

	sa.fn = fn;
	sa.arg = arg;
	sa.stopped = false;
	for (i = 0; i < nshards && !sa.stopped; i++)
	{
		SeError		err;

		if (shards[i].node != NULL)
			continue;
		CHECK_FOR_INTERRUPTS();
		se_error_init(&err);
		if (!se_search_scan(req, &shards[i], scan_cb, &sa, &err))
			raise_if(&err);
	}
	return !sa.stopped;
}

/*
 * Run req (whose text is body) on every shard, local or remote.  With im
 * (the index of every shard) and every shard here, the query phases run in
 * the search pool's workers, in parallel, as search_engine.search runs
 * them (not yet with shards on other nodes too: that mix is untested).
 */
static SeSearchResult *
run_search(SeSearchRequest *req, const char *body, SeSearchShard *shards,
		   int nshards, int from, int size, SeIndexMeta *im)
{
	SeError		err;
	SeSearchResult *res;
	SeSearchParams p;
	StringInfoData common;
	SePoolSearch *pool = NULL;

	se_error_init(&err);
	se_search_set_from_size(req, from, size);
	memset(&p, 0, sizeof(p));
	p.from = from;
	p.size = size;
	p.track_total_hits = -2;
	initStringInfo(&common);
	if (se_engine_any_remote(shards, nshards) || im != NULL)
		se_search_common_encode(parse_json(body, strlen(body)), &p, -1, PG_INT32_MAX, NULL, &common);
	if (im != NULL && !se_engine_any_remote(shards, nshards))
	{
		SeIndexMeta **metas = palloc(sizeof(SeIndexMeta *) * Max(nshards, 1));
		int			i;

		for (i = 0; i < nshards; i++)
			metas[i] = im;
		pool = se_search_pool_dispatch(&common, shards, metas, nshards);
	}
	PG_TRY();
	{
		if (se_engine_any_remote(shards, nshards))
		{
			/* query then fetch: the other nodes' shards' top docs, merged */
			SeRemoteSearch *rs = se_search_remote_begin(&common, shards, nshards,
														 se_search_pool_transport(pool));

			res = se_search_run_remote(req, shards, nshards, se_search_remote_transport(rs), &err);
			if (res != NULL && res->shards_failed > 0)
			{
				/* a foreign table does not return part of an index as all of it */
				se_error_set(&err, 503, "search_phase_execution_exception",
							 "%d of %d shards of index [%s] failed", res->shards_failed,
							 res->shards_total, shards[0].index);
				res = NULL;
			}
		}
		else if (pool != NULL)
			res = se_search_run_remote(req, shards, nshards, se_search_pool_transport(pool), &err);
		else
			res = se_search_run(req, shards, nshards, &err);
	}
	PG_FINALLY();
	{
		if (pool != NULL)
			se_search_pool_finish(pool);
	}
	PG_END_TRY();
	if (res == NULL)
		raise_if(&err);
	return res;
}

/*
 * Top-k search: hits from..from+size in the request's order; returns the
 * total hit count.
 */
int64
se_engine_search(SeSearchRequest *req, const char *body, SeSearchShard *shards,
				 int nshards, int from, int size, SeDocFn fn, void *arg)
{
	SeSearchResult *res = run_search(req, body, shards, nshards, from, size, NULL);
	int			i;

	for (i = 0; i < res->nhits; i++)
	{
		SeHit	   *h = &res->hits[i];
		SeDocRef	d;

		d.shard = &shards[h->shard_idx];
		d.segment = h->segment;
		d.doc = h->doc;
		d.score = h->score;
		d.id = h->id;
		d.source = h->has_source ? &h->source : NULL;
		d.meta = h->has_meta ? &h->meta : NULL;
		if (!fn(&d, arg))
			break;
	}
	return res->total;
}

/*
 * A body with "aggs" (and "size": 0) through the search path: every shard,
 * local or on another node, collects its partial, the reduce merges them
 * (src/search/aggs.c).  Returns the "aggregations" object; *total the hit
 * count.
 */
char *
se_engine_aggregations(SeEngineIndex *ei, const char *body, SeSearchShard *shards,
					   int nshards, int64 *total)
{
	SeSearchRequest *req = se_engine_parse(body, strlen(body), false);
	SeSearchResult *res = run_search(req, body, shards, nshards, 0, 0, ei->im);

	*total = res->total;
	return res->aggregations ? res->aggregations : "{}";
}

/* Exact number of matching live documents, on every node. */
int64
se_engine_count(const char *body, SeSearchShard *shards, int nshards)
{
	SeError		err;
	SeJson	   *j = parse_json(body, strlen(body));
	SeJson	   *cbody = NULL;
	const SeJson *q = se_json_get(j, "query");
	SeSearchRequest *req;
	int64		c = 0,
				elsewhere = 0;

	/* a search body's query alone is the count body */
	if (q != NULL)
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "{\"query\":");
		se_json_write(&b, q);
		appendStringInfoChar(&b, '}');
		cbody = parse_json(b.data, b.len);
	}
	se_error_init(&err);
	req = se_search_parse_count(cbody, &err);
	raise_if(&err);
	if (!se_search_remote_count(cbody, shards, nshards, &elsewhere, &err) ||
		!se_search_count(req, shards, nshards, &c, &err))
		raise_if(&err);
	return c + elsewhere;
}

/* Live documents of an index (refreshed), -1 if it does not exist. */
int64
se_engine_live_docs(const char *index)
{
	SeEngineIndex ei;
	SeSearchShard *shards;
	int			n,
				s,
				g;
	int64		total = 0;

	if (!se_engine_open(index, &ei, true))
		return -1;
	shards = se_engine_shards(&ei, &n);
	if (se_engine_any_remote(shards, n))
		return se_engine_count("{}", shards, n);
	for (s = 0; s < n; s++)
		for (g = 0; g < shards[s].nsegments; g++)
		{
			uint32		max = se_segment_max_doc(shards[s].segments[g]);

			total += shards[s].live_docs[g] ? se_livedocs_count(shards[s].live_docs[g], max) : max;
		}
	return total;
}

/* Append the stored _source of d (unfiltered; of a remote doc, what the request asked for). */
bool
se_engine_source(SeDocRef *d, StringInfo out)
{
	SeSegmentReader *r;

	if (d->shard->node != NULL)
	{
		/* its node sent it, filtered as the request's _source says */
		if (d->source == NULL)
			elog(ERROR, "no _source was fetched for document \"%s\"", d->id);
		appendBinaryStringInfo(out, d->source->data, d->source->len);
		return true;
	}
	r = d->shard->segments[d->segment];
	if (!se_segment_source(r, d->doc, out))
	{
		const SeError *e = se_segment_error(r);
		SeError		err;

		se_error_init(&err);
		se_error_set(&err, 500, "index_corrupted_exception", "%s",
					 e && e->reason ? e->reason : "failed to read _source");
		se_raise(&err);
	}
	return true;
}

void
se_engine_meta(SeDocRef *d, SeDocMeta *meta)
{
	if (d->meta != NULL)
	{
		*meta = *d->meta;
		return;
	}
	if (d->shard->node != NULL)
		elog(ERROR, "no metadata was fetched for document \"%s\"", d->id);
	se_segment_doc_meta(d->shard->segments[d->segment], d->doc, meta);
}

/*
 * Realtime GET (refreshes the shard first when it has unrefreshed writes),
 * on the node that holds the document's shard.
 */
void
se_engine_get(const char *index, const char *id, const char *routing, SeEngineDoc *out)
{
	SeEngineIndex ei;
	const char *rv = routing ? routing : id;
	const char *node;
	int			shard;

	memset(out, 0, sizeof(*out));
	if (!se_engine_open(index, &ei, true))
		return;
	shard = se_routing_shard(rv, strlen(rv), ei.im->settings.number_of_shards,
							 ei.im->settings.routing_num_shards);
	if (se_state_read_here(ei.im, shard, &node))
		se_engine_get_local(ei.im, shard, id, out);
	else
		se_engine_get_remote(ei.im, shard, id, out);
}

/* Realtime GET of id from a shard of this node. */
void
se_engine_get_local(SeIndexMeta *im, int shard, const char *id, SeEngineDoc *out)
{
	SeSearchShard sh;
	int			i;

	memset(out, 0, sizeof(*out));
	se_snapshot_refresh_if_needed(im, shard);
	(void) se_snapshot_acquire(im, shard, &sh, NULL);
	for (i = sh.nsegments - 1; i >= 0; i--)
	{
		int32		doc = se_segment_lookup_id(sh.segments[i], id, strlen(id));
		SeDocMeta	meta;
		SeDocRef	d;
		StringInfoData src;

		if (doc < 0 || !se_livedocs_get(sh.live_docs[i], doc))
			continue;
		se_segment_doc_meta(sh.segments[i], doc, &meta);
		memset(&d, 0, sizeof(d));
		d.shard = &sh;
		d.segment = i;
		d.doc = doc;
		initStringInfo(&src);
		se_engine_source(&d, &src);
		out->found = true;
		out->source = src.data;
		out->source_len = src.len;
		out->routing = meta.routing ? pnstrdup(meta.routing, meta.routing_len) : NULL;
		out->seq_no = meta.seq_no;
		out->primary_term = meta.primary_term;
		out->version = meta.version;
		return;
	}
}
