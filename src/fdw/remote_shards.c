/*-------------------------------------------------------------------------
 *
 * remote_shards.c
 *	  The FDW's reads of shards that live on other nodes, over the
 *	  transport: paged scans, refresh before a write's scan, realtime GET.
 *
 * A foreign table on any node sees the whole index: shard_access.c runs
 * the local shards in-process and hands the others to this file.  Top-k
 * searches and counts reuse search's query-then-fetch (search_remote.c);
 * what is the FDW's own is the unscored scan of every matching document,
 * which must not hold a big index in memory on either side:
 *
 *	fdw_scan		the serving backend parses the request, pins a snapshot
 *					of each named shard in a scan context and answers the
 *					first batch;
 *	fdw_scan_next	the next batch of the same context, until the answer
 *					says there is no more.
 *
 * The serving side walks one segment at a time: it collects the matching
 * doc numbers of that segment (4 bytes each) and sends them in batches of
 * at most SE_FDW_BATCH_DOCS documents or about SE_FDW_BATCH_BYTES of
 * _source (filtered as the request says: the fields the rows read), each with _id, _routing, _seq_no, _primary_term and _version
 * (what the rows and the conditional writes of UPDATE/DELETE need).  The
 * coordinating side asks every node at once for each round.  As with
 * search contexts, one context lives per serving backend (a pooled
 * connection serves one coordinating process, whose scan is materialized
 * in one go): a new fdw_scan frees the previous one, the last batch frees
 * its own, and the backend's exit frees the rest.
 *
 * A node that fails fails the statement (a foreign table must not return
 * part of an index as if it were all of it); every wait is bounded by the
 * transport's deadline and interrupts act at once.  The index privilege
 * was checked on the coordinating node (se_engine_authorize); the serving
 * node trusts its search_engine_node peer, as for every transport action.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "fdw/fdw.h"
#include "fdw/fdw_int.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/varint.h"

#define SE_FDW_REMOTE_TIMEOUT_MS	120000
#define SE_FDW_BATCH_DOCS			1000
#define SE_FDW_BATCH_BYTES			(4 * 1024 * 1024)

/* ---------------------------------------------------------------------
 * Serving side
 * ---------------------------------------------------------------------
 */
typedef struct ScanContext
{
	uint64		id;
	MemoryContext cxt;
	MemoryContext seg_cxt;		/* the current segment's matches */
	SeSearchRequest *req;
	bool		with_source;
	int			nshards;
	int		   *idx;			/* the coordinator's shard index of each */
	SeSearchShard *shards;		/* pinned snapshots */
	int			cur_shard;		/* position: shard, segment, match */
	int			cur_seg;		/* -1: the shard's segments not begun */
	int32	   *docs;
	int			ndocs;
	int			cap;
	int			pos;
} ScanContext;

static ScanContext *scan_context = NULL;

static void
scan_context_free(void)
{
	int			i;

	if (scan_context == NULL)
		return;
	for (i = 0; i < scan_context->nshards; i++)
		if (scan_context->shards[i].segments != NULL)
			se_snapshot_pin(&scan_context->shards[i], false);
	MemoryContextDelete(scan_context->cxt);
	scan_context = NULL;
}

static bool
collect_doc(SeSearchShard *shard, int segment, int32 doc, void *arg)
{
	ScanContext *sc = arg;

	if (sc->ndocs == sc->cap)
	{
		sc->cap = sc->cap ? sc->cap * 2 : 1024;
		sc->docs = sc->docs ? repalloc_huge(sc->docs, sizeof(int32) * sc->cap)
			: MemoryContextAllocHuge(sc->seg_cxt, sizeof(int32) * sc->cap);
	}
	sc->docs[sc->ndocs++] = doc;
	return true;
}

/*
 * Matches of the next segment into sc->docs; false when every shard is
 * done.  A one-segment view of the shard is scanned (the scan is unscored,
 * so no statistic of the other segments enters it).
 */
static bool
next_segment(ScanContext *sc, SeError *err)
{
	for (;;)
	{
		SeSearchShard *sh;
		SeSearchShard one;
		MemoryContext old;

		if (sc->cur_shard >= sc->nshards)
			return false;
		sh = &sc->shards[sc->cur_shard];
		if (++sc->cur_seg >= sh->nsegments)
		{
			sc->cur_shard++;
			sc->cur_seg = -1;
			continue;
		}
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(sc->seg_cxt);
		sc->docs = NULL;
		sc->ndocs = sc->cap = sc->pos = 0;
		one = *sh;
		one.nsegments = 1;
		one.segments = &sh->segments[sc->cur_seg];
		one.live_docs = &sh->live_docs[sc->cur_seg];
		if (sh->all_live_docs)
			one.all_live_docs = &sh->all_live_docs[sc->cur_seg];
		if (sh->seg_gens)
			one.seg_gens = &sh->seg_gens[sc->cur_seg];
		if (sh->del_gens)
			one.del_gens = &sh->del_gens[sc->cur_seg];
		old = MemoryContextSwitchTo(sc->seg_cxt);
		if (!se_search_scan(sc->req, &one, collect_doc, sc, err))
		{
			MemoryContextSwitchTo(old);
			return false;
		}
		MemoryContextSwitchTo(old);
		if (sc->ndocs > 0)
			return true;
	}
}

/*
 * One batch: count, then per doc its shard index, _id, _routing, _seq_no,
 * _primary_term, _version and _source filtered by the request (or none);
 * then whether more follow.
 */
static bool
scan_batch(StringInfo reply, SeError *err)
{
	ScanContext *sc = scan_context;
	StringInfoData docs;
	int			n = 0;
	bool		more = true;

	initStringInfo(&docs);
	while (n < SE_FDW_BATCH_DOCS && docs.len < SE_FDW_BATCH_BYTES)
	{
		SeSearchShard *sh;
		SeSegmentReader *r;
		SeDocMeta	meta;
		int32		doc;

		if (sc->pos >= sc->ndocs && !next_segment(sc, err))
		{
			if (se_error_is_set(err))
				return false;
			more = false;
			break;
		}
		CHECK_FOR_INTERRUPTS();
		sh = &sc->shards[sc->cur_shard];
		r = sh->segments[sc->cur_seg];
		doc = sc->docs[sc->pos++];
		se_segment_doc_meta(r, doc, &meta);
		se_put_vint(&docs, (uint64) sc->idx[sc->cur_shard]);
		se_put_str(&docs, meta.id, meta.id_len);
		se_put_str(&docs, meta.routing, meta.routing_len);
		se_put_svint(&docs, meta.seq_no);
		se_put_svint(&docs, meta.primary_term);
		se_put_svint(&docs, meta.version);
		if (sc->with_source)
		{
			/* filtered by the request's _source: the fields the rows read */
			SeHit		hit;

			memset(&hit, 0, sizeof(hit));
			if (!se_search_fetch_doc(sc->req, sh, sc->cur_seg, doc, &hit, err))
				return false;
			se_put_str(&docs, hit.has_source ? hit.source.data : NULL, hit.source.len);
			pfree(hit.id);
			pfree(hit.source.data);
		}
		else
			se_put_str(&docs, NULL, 0);
		n++;
	}
	se_put_vint(reply, (uint64) n);
	appendBinaryStringInfo(reply, docs.data, docs.len);
	se_put_vint(reply, more ? 1 : 0);
	if (!more)
		scan_context_free();
	return true;
}

/*
 * Transport action "fdw_scan".  Payload: context id, with_source, the
 * request body, then per shard index name, uuid, shard and its index in
 * the coordinator's shards.  Answer: the first batch.
 */
static bool
fdw_scan_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		id;
	bool		with_source;
	char	   *body;
	int			body_len;
	uint64		n;
	ScanContext *sc;
	MemoryContext old;
	SeJsonParseOptions opts = {0};
	SeJson	   *j;
	int			i;

	scan_context_free();
	se_wire_init(&r, payload, len);
	id = se_wire_vint(&r);
	with_source = se_wire_vint(&r) != 0;
	body = se_wire_str(&r, &body_len);
	n = se_wire_vint(&r);
	if (r.bad || body == NULL || n > 100000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_scan request");
		return false;
	}
	sc = MemoryContextAllocZero(TopMemoryContext, sizeof(ScanContext));
	sc->id = id;
	sc->with_source = with_source;
	sc->cxt = AllocSetContextCreate(TopMemoryContext, "search_engine fdw scan context",
									ALLOCSET_DEFAULT_SIZES);
	sc->seg_cxt = AllocSetContextCreate(sc->cxt, "fdw scan segment", ALLOCSET_DEFAULT_SIZES);
	sc->cur_seg = -1;
	scan_context = sc;
	old = MemoryContextSwitchTo(sc->cxt);
	sc->idx = palloc0(sizeof(int) * Max(1, n));
	sc->shards = palloc0(sizeof(SeSearchShard) * Max(1, n));
	if ((j = se_json_parse(body, body_len, &opts, err)) == NULL ||
		(sc->req = se_search_parse(j, PG_INT32_MAX, err)) == NULL)
		goto fail;
	for (i = 0; i < (int) n; i++)
	{
		int			shard;
		SeIndexMeta *im = se_peer_shard_get(&r, &shard, err);

		sc->idx[i] = (int) se_wire_vint(&r);
		if (im == NULL)
			goto fail;
		if (r.bad)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_scan request");
			goto fail;
		}
		if (!se_snapshot_acquire(im, shard, &sc->shards[i], err))
			goto fail;
		se_snapshot_pin(&sc->shards[i], true);
		sc->nshards = i + 1;
	}
	MemoryContextSwitchTo(old);
	if (!scan_batch(reply, err))
	{
		scan_context_free();
		return false;
	}
	return true;

fail:
	MemoryContextSwitchTo(old);
	scan_context_free();
	return false;
}

/* Transport action "fdw_scan_next": payload the context id; the next batch. */
static bool
fdw_scan_next_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		id;

	se_wire_init(&r, payload, len);
	id = se_wire_vint(&r);
	if (r.bad || scan_context == NULL || scan_context->id != id)
	{
		se_error_set(err, 500, "search_context_missing_exception",
					 "No search context found for id [" UINT64_FORMAT "]", id);
		return false;
	}
	if (!scan_batch(reply, err))
	{
		scan_context_free();
		return false;
	}
	return true;
}

/*
 * Transport action "fdw_refresh": make the named shards' writes searchable
 * when they have unrefreshed ones (the scan of an UPDATE/DELETE reads the
 * latest versions).  Payload: count, then per shard name, uuid, shard.
 */
static bool
fdw_refresh_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		n,
				i;

	se_wire_init(&r, payload, len);
	n = se_wire_vint(&r);
	for (i = 0; i < n && !r.bad; i++)
	{
		int			shard;
		SeIndexMeta *im = se_peer_shard_get(&r, &shard, err);

		if (im == NULL)
			return false;
		se_snapshot_refresh_if_needed(im, shard);
	}
	if (r.bad)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_refresh request");
		return false;
	}
	return true;
}

/*
 * Transport action "fdw_get": realtime GET of a document of a shard of this
 * node.  Payload: the shard, _id.  Answer: found, then _routing, _seq_no,
 * _primary_term, _version, _source.
 */
static bool
fdw_get_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	int			shard;
	SeIndexMeta *im;
	char	   *id;
	SeEngineDoc doc;

	se_wire_init(&r, payload, len);
	im = se_peer_shard_get(&r, &shard, err);
	if (im == NULL)
		return false;
	id = se_wire_str(&r, NULL);
	if (r.bad || id == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed fdw_get request");
		return false;
	}
	se_engine_get_local(im, shard, id, &doc);
	se_put_vint(reply, doc.found ? 1 : 0);
	if (!doc.found)
		return true;
	se_put_str(reply, doc.routing, doc.routing ? strlen(doc.routing) : 0);
	se_put_svint(reply, doc.seq_no);
	se_put_svint(reply, doc.primary_term);
	se_put_svint(reply, doc.version);
	se_put_str(reply, doc.source, doc.source_len);
	return true;
}

void
se_fdw_register_actions(void)
{
	se_transport_register("fdw_scan", fdw_scan_action);
	se_transport_register("fdw_scan_next", fdw_scan_next_action);
	se_transport_register("fdw_refresh", fdw_refresh_action);
	se_transport_register("fdw_get", fdw_get_action);
}

/* ---------------------------------------------------------------------
 * Coordinating side
 * ---------------------------------------------------------------------
 */

static void
check_assigned(SeSearchShard *sh)
{
	if (sh->node != NULL && sh->node[0] == '\0')
	{
		SeError		err;

		se_error_init(&err);
		se_error_set(&err, 503, "no_shard_available_action_exception",
					 "[%s][%d] is not assigned to any node", sh->index, sh->shard);
		se_raise(&err);
	}
}

/* The distinct nodes holding the shards that are elsewhere. */
static List *
remote_nodes(SeSearchShard *shards, int nshards)
{
	List	   *nodes = NIL;
	int			i;

	for (i = 0; i < nshards; i++)
	{
		ListCell   *lc;
		bool		seen = false;

		if (shards[i].node == NULL)
			continue;
		check_assigned(&shards[i]);
		foreach(lc, nodes)
			if (strcmp(lfirst(lc), shards[i].node) == 0)
				seen = true;
		if (!seen)
			nodes = lappend(nodes, (char *) shards[i].node);
	}
	return nodes;
}

bool
se_engine_any_remote(SeSearchShard *shards, int nshards)
{
	int			i;

	for (i = 0; i < nshards; i++)
		if (shards[i].node != NULL)
			return true;
	return false;
}

static void
call_init(SeTransportCall *c, const char *node, const char *action, StringInfo payload)
{
	memset(c, 0, sizeof(*c));
	c->node = node;
	c->conninfo = se_cluster_conninfo(node);
	c->action = action;
	c->payload = payload->data;
	c->payload_len = payload->len;
}

static void
malformed(const char *node, const char *action)
{
	SeError		err;

	se_error_init(&err);
	se_error_set(&err, 500, "remote_transport_exception", "[%s][%s] malformed answer",
				 node, action);
	se_raise(&err);
}

/*
 * Send action to every node holding some of the shards, all at once: the
 * payload is prefix, then the count and names of that node's shards.  A
 * failure is raised; *ncalls answers are returned, in node order.
 */
SeTransportCall *
se_engine_call_shard_nodes(SeSearchShard *shards, int nshards, const char *action,
						   const char *prefix, int prefix_len, int *ncalls)
{
	List	   *nodes = remote_nodes(shards, nshards);
	SeTransportCall *calls;
	ListCell   *lc;
	int			k = 0;

	*ncalls = 0;
	if (nodes == NIL)
		return NULL;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	foreach(lc, nodes)
	{
		StringInfoData payload;
		int			i,
					n = 0;

		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, lfirst(lc)) == 0)
				n++;
		initStringInfo(&payload);
		appendBinaryStringInfo(&payload, prefix, prefix_len);
		se_put_vint(&payload, (uint64) n);
		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, lfirst(lc)) == 0)
				se_peer_shard_put(&payload, shards[i].index, shards[i].index_uuid,
								  shards[i].shard);
		call_init(&calls[k++], lfirst(lc), action, &payload);
	}
	se_transport_call_all_or_error(calls, k, SE_FDW_REMOTE_TIMEOUT_MS);
	*ncalls = k;
	return calls;
}

/* fdw_refresh on every node holding some of the shards. */
void
se_engine_refresh_remote(SeSearchShard *shards, int nshards)
{
	int			n;

	(void) se_engine_call_shard_nodes(shards, nshards, "fdw_refresh", "", 0, &n);
}

static uint64 next_scan_id = 0;

/*
 * Every live document of the shards elsewhere matching body (a search
 * body), unscored, in batches from all their nodes at once; fn gets each
 * (with _id, metadata, and _source when with_source) until it returns
 * false.
 */
void
se_engine_scan_remote(const char *body, SeSearchShard *shards, int nshards,
					  bool with_source, SeDocFn fn, void *arg)
{
	List	   *nodes = remote_nodes(shards, nshards);
	int			nnodes = list_length(nodes);
	SeTransportCall *calls;
	SeTransportCall *round;
	int		   *which;
	uint64	   *ids;
	bool	   *more;
	StringInfoData *next;
	MemoryContext batch_cxt,
				old;
	ListCell   *lc;
	int			k;
	bool		stopped = false;
	bool		first = true;

	if (nodes == NIL)
		return;
	calls = palloc0(sizeof(SeTransportCall) * nnodes);
	round = palloc0(sizeof(SeTransportCall) * nnodes);
	which = palloc0(sizeof(int) * nnodes);
	ids = palloc0(sizeof(uint64) * nnodes);
	more = palloc0(sizeof(bool) * nnodes);
	next = palloc0(sizeof(StringInfoData) * nnodes);
	k = 0;
	foreach(lc, nodes)
	{
		StringInfoData payload;
		int			i,
					n = 0;

		ids[k] = ++next_scan_id;
		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, lfirst(lc)) == 0)
				n++;
		initStringInfo(&payload);
		se_put_vint(&payload, ids[k]);
		se_put_vint(&payload, with_source ? 1 : 0);
		se_put_str(&payload, body, strlen(body));
		se_put_vint(&payload, (uint64) n);
		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, lfirst(lc)) == 0)
			{
				se_peer_shard_put(&payload, shards[i].index, shards[i].index_uuid,
								  shards[i].shard);
				se_put_vint(&payload, (uint64) i);
			}
		call_init(&calls[k], lfirst(lc), "fdw_scan", &payload);
		initStringInfo(&next[k]);
		se_put_vint(&next[k], ids[k]);
		more[k] = true;
		k++;
	}
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "fdw remote batch",
									  ALLOCSET_DEFAULT_SIZES);
	while (!stopped)
	{
		int			nround = 0;
		int			c;

		for (k = 0; k < nnodes; k++)
		{
			if (!more[k])
				continue;
			if (first)
				round[nround] = calls[k];
			else
				call_init(&round[nround], calls[k].node, "fdw_scan_next", &next[k]);
			which[nround++] = k;
		}
		if (nround == 0)
			break;
		first = false;
		MemoryContextReset(batch_cxt);
		old = MemoryContextSwitchTo(batch_cxt);
		se_transport_call_all_or_error(round, nround, SE_FDW_REMOTE_TIMEOUT_MS);
		for (c = 0; c < nround && !stopped; c++)
		{
			SeWireReader r;
			uint64		n,
						i;

			se_wire_init(&r, round[c].reply.data, round[c].reply.len);
			n = se_wire_vint(&r);
			for (i = 0; i < n && !r.bad && !stopped; i++)
			{
				uint64		idx = se_wire_vint(&r);
				SeDocMeta	meta;
				StringInfoData src;
				SeDocRef	d;
				char	   *s;
				int			slen;

				memset(&meta, 0, sizeof(meta));
				meta.id = se_wire_str(&r, &meta.id_len);
				meta.routing = se_wire_str(&r, &meta.routing_len);
				meta.seq_no = se_wire_svint(&r);
				meta.primary_term = se_wire_svint(&r);
				meta.version = se_wire_svint(&r);
				s = se_wire_str(&r, &slen);
				if (r.bad || idx >= (uint64) nshards || meta.id == NULL ||
					shards[idx].node == NULL)
					malformed(round[c].node, round[c].action);
				CHECK_FOR_INTERRUPTS();
				memset(&d, 0, sizeof(d));
				d.shard = &shards[idx];
				d.segment = -1;
				d.doc = -1;
				d.score = NAN;
				d.id = meta.id;
				d.meta = &meta;
				if (s)
				{
					src.data = s;
					src.len = slen;
					src.maxlen = slen + 1;
					src.cursor = 0;
					d.source = &src;
				}
				MemoryContextSwitchTo(old);
				if (!fn(&d, arg))
					stopped = true;
				MemoryContextSwitchTo(batch_cxt);
			}
			more[which[c]] = se_wire_vint(&r) != 0;
			if (r.bad)
				malformed(round[c].node, round[c].action);
		}
		MemoryContextSwitchTo(old);
	}
	MemoryContextDelete(batch_cxt);
}

/* Realtime GET of id from shard, which is on another node. */
void
se_engine_get_remote(SeIndexMeta *im, int shard, const char *id, SeEngineDoc *out)
{
	SeTransportCall call;
	StringInfoData payload;
	SeWireReader r;
	SeSearchShard sh;

	memset(&sh, 0, sizeof(sh));
	sh.index = im->name;
	sh.shard = shard;
	sh.node = se_state_pick_copy(im, shard);
	check_assigned(&sh);
	initStringInfo(&payload);
	se_peer_shard_put(&payload, im->name, im->uuid, shard);
	se_put_str(&payload, id, strlen(id));
	call_init(&call, sh.node, "fdw_get", &payload);
	se_transport_call_all_or_error(&call, 1, SE_FDW_REMOTE_TIMEOUT_MS);
	se_wire_init(&r, call.reply.data, call.reply.len);
	memset(out, 0, sizeof(*out));
	out->found = se_wire_vint(&r) != 0;
	if (out->found)
	{
		out->routing = se_wire_str(&r, NULL);
		out->seq_no = se_wire_svint(&r);
		out->primary_term = se_wire_svint(&r);
		out->version = se_wire_svint(&r);
		out->source = se_wire_str(&r, &out->source_len);
		if (out->source == NULL)
			out->source = pstrdup("");
	}
	if (r.bad)
		malformed(call.node, call.action);
}
