/*-------------------------------------------------------------------------
 *
 * search_remote.c
 *	  Searching and counting shards that live on other nodes, over the
 *	  transport: query then fetch.
 *
 * The coordinating backend sends one "shard_query" per node holding some
 * of the search's shards (the search's common part, as the search pool's
 * workers get it, and the shards with their place in the search) before
 * it searches its own shards.  The node runs each shard's query phase on
 * a snapshot it keeps pinned in a search context and answers the
 * query-phase messages, each shard's segment count with it.  The
 * coordinator merges every shard's top docs exactly as for local shards
 * (se_search_run_remote), then sends one "shard_fetch" per node that holds
 * winners, naming the context: the node reads id and _source of exactly
 * those docs from the same point in time.
 *
 * A context lives in the serving backend, which serves one coordinating
 * process over one pooled connection and so one search at a time: a new
 * shard_query frees the contexts before it, a fetch frees its own, and the
 * backend's exit frees the rest.  A node that does not answer fails its
 * shards (ES's shard failures: the others' hits are still returned); a
 * node that answered the query but not the fetch fails the search.
 *
 * dfs_query_then_fetch adds a "shard_dfs" round first: each node holding
 * shards answers their term statistics (search/dfs.c); the coordinator
 * sums them with its own shards' and sends the sums in the common part of
 * shard_query.  A node that fails that round fails its shards, which are
 * then not queried; a query that cannot be built fails the search, as in
 * the query phase.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/replica_select.h"
#include "search/search.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/varint.h"

/* ES's default search timeout is none; a node's answer is bounded here */
#define SE_REMOTE_SEARCH_TIMEOUT_MS	120000

/* ---------------------------------------------------------------------
 * A shard named in a peer's request
 * ---------------------------------------------------------------------
 */

/* Name shard of index (name, uuid) in a request to the node holding it. */
void
se_peer_shard_put(StringInfo out, const char *index, const char *uuid, int shard)
{
	se_put_str(out, index, strlen(index));
	se_put_str(out, uuid, strlen(uuid));
	se_put_vint(out, (uint64) shard);
}

/*
 * Read a shard named by se_peer_shard_put: its index here, or NULL with
 * err set -- 400 (r->bad) for a malformed request, 404 when the index is
 * gone or is another of that name, 503 when the shard is not on this node
 * (any more).
 */
SeIndexMeta *
se_peer_shard_get(SeWireReader *r, int *shard, SeError *err)
{
	char	   *index = se_wire_str(r, NULL);
	char	   *uuid = se_wire_str(r, NULL);
	SeIndexMeta *im;

	*shard = (int) se_wire_vint(r);
	if (r->bad || index == NULL || uuid == NULL)
	{
		r->bad = true;
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard request");
		return NULL;
	}
	im = se_state_find(se_state_current(), index);
	if (im == NULL || strcmp(im->uuid, uuid) != 0)
	{
		se_index_status_error(SE_INDEX_MISSING, index, err);
		return NULL;
	}
	/* a read may go to any copy; a write reaches the primary by its own action */
	if (!se_state_shard_local(im, *shard) && se_state_local_copy(im, *shard) == NULL)
	{
		se_error_set(err, 503, "no_shard_available_action_exception",
					 "[%s][%d] is not on node [%s]", index, *shard, se_node_name_get());
		return NULL;
	}
	return im;
}

/*
 * The requesting role, named in a peer's request: work a node does for a
 * request runs as the role that asked (a point in time is bound to it),
 * not as the peer's connection role.  Roles are matched by name across
 * nodes; a name unknown here is InvalidOid, which owns nothing.
 */
void
se_peer_role_put(StringInfo out, Oid role)
{
	char	   *name = GetUserNameFromId(role, true);

	se_put_str(out, name ? name : "", name ? strlen(name) : 0);
}

Oid
se_peer_role(const char *name)
{
	return name && name[0] ? get_role_oid(name, true) : InvalidOid;
}

/* ---------------------------------------------------------------------
 * Serving side: contexts
 * ---------------------------------------------------------------------
 */
typedef struct SearchContext
{
	uint64		id;
	MemoryContext cxt;
	SeSearchRequest *req;
	int			nshards;
	int		   *idx;			/* the coordinator's shard index of each */
	SeSearchShard *shards;		/* pinned snapshots (nsegments 0: failed) */
} SearchContext;

static SearchContext *context = NULL;	/* the one live context, if any */

static void
context_free(void)
{
	int			i;

	if (context == NULL)
		return;
	for (i = 0; i < context->nshards; i++)
		if (context->shards[i].segments != NULL)
			se_snapshot_pin(&context->shards[i], false);
	MemoryContextDelete(context->cxt);
	context = NULL;
}

/*
 * Transport action "shard_query": the query phase of this node's shards of
 * a search.  Payload: context id, the common part, then per shard index
 * name, uuid, shard number and its index in the coordinator's search.
 * Answer per shard: its index, segment count, query-phase message; then,
 * for the coordinator's adaptive replica selection (ES piggybacks the same
 * on every query result), this node's search queue length and the
 * microseconds this action took (its service time).
 */
static bool
shard_query_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		id;
	const char *common;
	int			common_len;
	uint64		n;
	SeSearchKnobs knobs;
	MemoryContext old;
	SearchContext *ctx;
	int			i;
	TimestampTz start = GetCurrentTimestamp();

	context_free();
	se_wire_init(&r, payload, len);
	id = se_wire_vint(&r);
	common = se_wire_str(&r, &common_len);
	n = se_wire_vint(&r);
	if (r.bad || common == NULL || n > 100000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard_query request");
		return false;
	}
	ctx = MemoryContextAllocZero(TopMemoryContext, sizeof(SearchContext));
	ctx->id = id;
	ctx->cxt = AllocSetContextCreate(TopMemoryContext, "search_engine search context",
									 ALLOCSET_DEFAULT_SIZES);
	context = ctx;
	old = MemoryContextSwitchTo(ctx->cxt);
	ctx->req = se_search_common_request(common, common_len, &knobs, err);
	if (ctx->req == NULL)
	{
		MemoryContextSwitchTo(old);
		context_free();
		return false;
	}
	ctx->nshards = (int) n;
	ctx->idx = palloc0(sizeof(int) * Max(1, n));
	ctx->shards = palloc0(sizeof(SeSearchShard) * Max(1, n));
	for (i = 0; i < ctx->nshards; i++)
	{
		SeIndexMeta *im;
		SeError		serr;
		StringInfoData msg;
		int			shard;

		se_error_init(&serr);
		im = se_peer_shard_get(&r, &shard, &serr);
		ctx->idx[i] = (int) se_wire_vint(&r);
		if (r.bad)
		{
			MemoryContextSwitchTo(old);
			context_free();
			se_error_set(err, 400, "illegal_argument_exception", "malformed shard_query request");
			return false;
		}
		initStringInfo(&msg);
		if (im != NULL && se_search_shard_snapshot(ctx->req, im, shard, se_peer_role(knobs.role),
												   &ctx->shards[i], &serr))
		{
			se_snapshot_pin(&ctx->shards[i], true);
			se_search_query_phase_with(ctx->req, &knobs, &ctx->shards[i], ctx->idx[i], &msg);
		}
		if (se_error_is_set(&serr))
		{
			memset(&ctx->shards[i], 0, sizeof(SeSearchShard));
			se_search_wire_shard_failed(&msg, ctx->idx[i], &serr);
		}
		se_put_vint(reply, (uint64) ctx->idx[i]);
		se_put_vint(reply, (uint64) ctx->shards[i].nsegments);
		se_put_str(reply, msg.data, msg.len);
	}
	MemoryContextSwitchTo(old);
	{
		int			active,
					queued;
		uint64		rejected,
					completed;

		se_search_queue_stats(&active, &queued, &rejected, &completed);
		se_put_vint(reply, (uint64) Max(queued, 0));
		se_put_vint(reply, (uint64) Max(GetCurrentTimestamp() - start, 0));
	}
	return true;
}

/* Answer kinds of shard_dfs, per shard */
#define DFS_ANSWER_STATS		0
#define DFS_ANSWER_SHARD_FAILED 1	/* the shard is not searchable here */
#define DFS_ANSWER_ERROR		2	/* the query fails (as its query phase would) */

/*
 * Transport action "shard_dfs": the DFS phase of this node's shards of a
 * search.  Payload: the common part (as for shard_query), then per shard
 * index name, uuid, shard number and its index in the coordinator's
 * search.  Answer per shard: its index, an answer kind, then the encoded
 * statistics or the error.
 */
static bool
shard_dfs_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	const char *common;
	int			common_len;
	uint64		n;
	uint64		i;
	SeSearchKnobs knobs;
	SeSearchRequest *req;
	MemoryContext cxt;

	se_wire_init(&r, payload, len);
	common = se_wire_str(&r, &common_len);
	n = se_wire_vint(&r);
	if (r.bad || common == NULL || n > 100000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard_dfs request");
		return false;
	}
	if ((req = se_search_common_request(common, common_len, &knobs, err)) == NULL)
		return false;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "search_engine shard_dfs",
								ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < n; i++)
	{
		SeError		serr;
		SeSearchShard sh;
		int			shard;
		SeIndexMeta *im;
		uint64		idx;

		se_error_init(&serr);
		im = se_peer_shard_get(&r, &shard, &serr);
		idx = se_wire_vint(&r);
		if (r.bad)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed shard_dfs request");
			return false;
		}
		se_put_vint(reply, idx);
		if (im == NULL || !se_search_shard_snapshot(req, im, shard, se_peer_role(knobs.role), &sh, &serr))
		{
			se_put_vint(reply, DFS_ANSWER_SHARD_FAILED);
			se_search_wire_put_error(reply, &serr);
		}
		else
		{
			/* the weights go with cxt once the shard's answer is written */
			MemoryContext old = MemoryContextSwitchTo(cxt);
			SeDfsStats *stats = se_dfs_stats_create();
			StringInfoData enc;

			initStringInfo(&enc);
			if (se_search_dfs_phase_with(req, &knobs, &sh, stats, &serr))
			{
				se_dfs_stats_encode(stats, &enc);
				MemoryContextSwitchTo(old);
				se_put_vint(reply, DFS_ANSWER_STATS);
				se_put_str(reply, enc.data, enc.len);
			}
			else
			{
				MemoryContextSwitchTo(old);
				se_put_vint(reply, DFS_ANSWER_ERROR);
				se_search_wire_put_error(reply, &serr);
			}
			MemoryContextReset(cxt);
		}
	}
	MemoryContextDelete(cxt);
	return true;
}

/*
 * Transport action "shard_fetch": id and _source of docs of the context's
 * shards.  Payload: context id, then per doc shard index, segment, doc.
 * Answer per doc: id, whether it has a source, the source, then _routing,
 * _seq_no, _primary_term and _version (the FDW's rows carry them), and
 * the hit's highlight, fields and _explanation (empty: none).
 */
static bool
shard_fetch_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		id;
	uint64		n;
	uint64		i;

	se_wire_init(&r, payload, len);
	id = se_wire_vint(&r);
	n = se_wire_vint(&r);
	if (r.bad || context == NULL || context->id != id)
	{
		se_error_set(err, 500, "search_context_missing_exception",
					 "No search context found for id [" UINT64_FORMAT "]", id);
		return false;
	}
	for (i = 0; i < n; i++)
	{
		int			idx = (int) se_wire_vint(&r);
		int			seg = (int) se_wire_vint(&r);
		int32		doc = (int32) se_wire_vint(&r);
		uint32		rescored = (uint32) se_wire_vint(&r);
		SeSearchShard *sh = NULL;
		SeHit		hit;
		SeDocMeta	meta;
		int			k;

		for (k = 0; k < context->nshards; k++)
			if (context->idx[k] == idx)
				sh = &context->shards[k];
		if (r.bad || sh == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception", "malformed shard_fetch request");
			return false;
		}
		memset(&hit, 0, sizeof(hit));
		hit.rescored = rescored;	/* for its explanation */
		CHECK_FOR_INTERRUPTS();
		if (!se_search_fetch_doc(context->req, sh, seg, doc, &hit, err))
			return false;
		se_put_str(reply, hit.id, strlen(hit.id));
		se_put_vint(reply, hit.has_source ? 1 : 0);
		se_put_str(reply, hit.source.data, hit.source.len);
		se_segment_doc_meta(sh->segments[seg], doc, &meta);
		se_put_str(reply, meta.routing, meta.routing_len);
		se_put_svint(reply, meta.seq_no);
		se_put_svint(reply, meta.primary_term);
		se_put_svint(reply, meta.version);
		se_put_str(reply, hit.highlight, hit.highlight ? strlen(hit.highlight) : 0);
		se_put_str(reply, hit.fields, hit.fields ? strlen(hit.fields) : 0);
		se_put_str(reply, hit.explanation, hit.explanation ? strlen(hit.explanation) : 0);
		se_put_str(reply, hit.inner_hits, hit.inner_hits ? strlen(hit.inner_hits) : 0);
	}
	context_free();
	return true;
}

/*
 * Transport action "shard_count": the number of docs of this node's
 * shards matching a count request.  Payload: the body (or none), then per
 * shard index name, uuid, shard number.  Answer: the count.
 */
static bool
shard_count_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	char	   *body_text;
	SeJson	   *body = NULL;
	SeSearchRequest *req;
	SeSearchShard *shards;
	uint64		n;
	int			i;
	int64		count = 0;

	se_wire_init(&r, payload, len);
	body_text = se_wire_str(&r, NULL);
	n = se_wire_vint(&r);
	if (r.bad || n > 100000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed shard_count request");
		return false;
	}
	if (body_text)
	{
		SeJsonParseOptions opts = {0};

		if ((body = se_json_parse(body_text, strlen(body_text), &opts, err)) == NULL)
			return false;
	}
	if ((req = se_search_parse_count(body, err)) == NULL)
		return false;
	shards = palloc0(sizeof(SeSearchShard) * Max(1, n));
	for (i = 0; i < (int) n; i++)
	{
		int			shard;
		SeIndexMeta *im = se_peer_shard_get(&r, &shard, err);

		if (im == NULL || !se_snapshot_acquire(im, shard, &shards[i], err))
			return false;
	}
	if (!se_search_count(req, shards, (int) n, &count, err))
		return false;
	se_put_svint(reply, count);
	return true;
}

void
se_search_remote_register_actions(void)
{
	se_transport_register("shard_dfs", shard_dfs_action);
	se_transport_register("shard_query", shard_query_action);
	se_transport_register("shard_fetch", shard_fetch_action);
	se_transport_register("shard_count", shard_count_action);
}

/* ---------------------------------------------------------------------
 * Coordinating side
 * ---------------------------------------------------------------------
 */
struct SeRemoteSearch
{
	SeSearchShard *shards;
	int			nshards;
	const SeShardTransport *pool;	/* the local search pool's, or NULL */
	bool	   *remote;			/* per shard: answered elsewhere */
	StringInfoData *msgs;		/* per node shard: its query-phase message */
	List	   *nodes;			/* of char *: the nodes queried */
	uint64	   *context_ids;	/* per node */
	SeShardTransport transport;
};

static uint64 next_context_id = 0;

static int
node_pos(List *nodes, const char *node)
{
	ListCell   *lc;
	int			i = 0;

	foreach(lc, nodes)
	{
		if (strcmp(lfirst(lc), node) == 0)
			return i;
		i++;
	}
	return -1;
}

/* Whether sh is searched on node (not failed in a DFS phase before). */
static bool
queried_on(const SeSearchShard *sh, const char *node)
{
	return sh->node != NULL && sh->failure == NULL && strcmp(sh->node, node) == 0;
}

/* The nodes holding shards to search (placed on a node, not failed yet). */
static List *
query_nodes(SeSearchShard *shards, int nshards)
{
	List	   *nodes = NIL;
	int			i;

	for (i = 0; i < nshards; i++)
		if (shards[i].node != NULL && shards[i].node[0] != '\0' &&
			shards[i].failure == NULL && node_pos(nodes, shards[i].node) < 0)
			nodes = lappend(nodes, (char *) shards[i].node);
	return nodes;
}

/* The calls asking each node of nodes for action on its shards of the search. */
static SeTransportCall *
shard_calls(List *nodes, const char *action, const StringInfoData *common,
			const uint64 *context_ids, SeSearchShard *shards, int nshards)
{
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * Max(1, list_length(nodes)));
	ListCell   *lc;
	int			k = 0;
	int			i;

	foreach(lc, nodes)
	{
		const char *node = lfirst(lc);
		StringInfoData payload;
		int			count = 0;

		for (i = 0; i < nshards; i++)
			if (queried_on(&shards[i], node))
				count++;
		initStringInfo(&payload);
		if (context_ids)
			se_put_vint(&payload, context_ids[k]);
		se_put_str(&payload, common->data, common->len);
		se_put_vint(&payload, (uint64) count);
		for (i = 0; i < nshards; i++)
			if (queried_on(&shards[i], node))
			{
				se_peer_shard_put(&payload, shards[i].index, shards[i].index_uuid,
								  shards[i].shard);
				se_put_vint(&payload, (uint64) i);
			}
		calls[k].node = node;
		calls[k].conninfo = se_cluster_conninfo(node);
		calls[k].action = action;
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
		k++;
	}
	return calls;
}

/* The shards of node fail with e (before their query phase). */
static void
fail_node_shards(SeSearchShard *shards, int nshards, const char *node, const SeError *e)
{
	int			i;

	for (i = 0; i < nshards; i++)
		if (queried_on(&shards[i], node))
		{
			SeError    *copy = palloc(sizeof(SeError));

			se_error_init(copy);
			se_error_set(copy, e->status, e->type, "%s", e->reason);
			shards[i].failure = copy;
		}
}

/*
 * The DFS phase of the shards on other nodes (all at once): add their
 * statistics to into.  A node that does not answer, or a shard it cannot
 * search, fails those shards (their failure is set); false with err set
 * when the query cannot be built on a shard (the search fails).
 */
bool
se_search_remote_dfs(const StringInfoData *common, SeSearchShard *shards, int nshards,
					 SeDfsStats *into, SeError *err)
{
	List	   *nodes = query_nodes(shards, nshards);
	int			nnodes = list_length(nodes);
	SeTransportCall *calls;
	int			k,
				i;

	if (nnodes == 0)
		return true;
	calls = shard_calls(nodes, "shard_dfs", common, NULL, shards, nshards);
	se_transport_call_each(calls, nnodes, SE_REMOTE_SEARCH_TIMEOUT_MS);
	for (k = 0; k < nnodes; k++)
	{
		SeWireReader r;
		SeError		malformed;

		if (!calls[k].ok)
		{
			fail_node_shards(shards, nshards, calls[k].node, &calls[k].err);
			continue;
		}
		se_error_init(&malformed);
		se_wire_init(&r, calls[k].reply.data, calls[k].reply.len);
		for (i = 0; i < nshards && !r.bad; i++)
		{
			uint64		kind;
			SeError		e;

			if (!queried_on(&shards[i], calls[k].node))
				continue;
			if (se_wire_vint(&r) != (uint64) i)
				r.bad = true;
			kind = se_wire_vint(&r);
			se_error_init(&e);
			if (kind == DFS_ANSWER_STATS)
			{
				int			len;
				char	   *enc = se_wire_str(&r, &len);
				SeDfsStats *st = enc ? se_dfs_stats_decode(enc, len) : NULL;

				if (st == NULL)
					r.bad = true;
				else
					se_dfs_stats_add(into, st);
				continue;
			}
			se_search_wire_get_error(&r, &e);
			if (r.bad || (kind != DFS_ANSWER_SHARD_FAILED && kind != DFS_ANSWER_ERROR))
				r.bad = true;
			else if (kind == DFS_ANSWER_ERROR)
			{
				se_error_set(err, e.status, e.type, "%s", e.reason);
				return false;
			}
			else
			{
				SeError    *copy = palloc(sizeof(SeError));

				*copy = e;
				shards[i].failure = copy;
			}
		}
		if (r.bad || r.p != r.end)
		{
			se_error_set(&malformed, 500, "remote_transport_exception",
						 "[%s][shard_dfs] malformed answer", calls[k].node);
			fail_node_shards(shards, nshards, calls[k].node, &malformed);
		}
	}
	return true;
}

static bool
remote_receive(void *arg, int i, StringInfo msg)
{
	SeRemoteSearch *rs = arg;

	if (rs->shards[i].node != NULL)
	{
		appendBinaryStringInfo(msg, rs->msgs[i].data, rs->msgs[i].len);
		return true;
	}
	return rs->pool != NULL && rs->pool->remote[i] && rs->pool->receive(rs->pool->arg, i, msg);
}

static bool
remote_fetch(void *arg, SeHit *hits, int n, SeError *err)
{
	SeRemoteSearch *rs = arg;
	int			nnodes = list_length(rs->nodes);
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * Max(1, nnodes));
	StringInfoData *payloads = palloc0(sizeof(StringInfoData) * Max(1, nnodes));
	int		   *counts = palloc0(sizeof(int) * Max(1, nnodes));
	int			ncalls = 0;
	int			k,
				i;

	for (k = 0; k < nnodes; k++)
	{
		for (i = 0; i < n; i++)
			if (strcmp(rs->shards[hits[i].shard_idx].node, list_nth(rs->nodes, k)) == 0)
				counts[k]++;
		if (counts[k] == 0)
			continue;
		initStringInfo(&payloads[k]);
		se_put_vint(&payloads[k], rs->context_ids[k]);
		se_put_vint(&payloads[k], (uint64) counts[k]);
		for (i = 0; i < n; i++)
			if (strcmp(rs->shards[hits[i].shard_idx].node, list_nth(rs->nodes, k)) == 0)
			{
				se_put_vint(&payloads[k], (uint64) hits[i].shard_idx);
				se_put_vint(&payloads[k], (uint64) hits[i].segment);
				se_put_vint(&payloads[k], (uint64) hits[i].doc);
				se_put_vint(&payloads[k], hits[i].rescored);
			}
		calls[ncalls].node = list_nth(rs->nodes, k);
		calls[ncalls].conninfo = se_cluster_conninfo(calls[ncalls].node);
		calls[ncalls].action = "shard_fetch";
		calls[ncalls].payload = payloads[k].data;
		calls[ncalls].payload_len = payloads[k].len;
		ncalls++;
	}
	se_transport_call_each(calls, ncalls, SE_REMOTE_SEARCH_TIMEOUT_MS);
	for (k = 0; k < ncalls; k++)
	{
		SeWireReader r;

		if (!calls[k].ok)
		{
			se_error_set(err, calls[k].err.status, calls[k].err.type, "%s", calls[k].err.reason);
			return false;
		}
		se_wire_init(&r, calls[k].reply.data, calls[k].reply.len);
		for (i = 0; i < n; i++)
		{
			int			len;
			char	   *id;
			char	   *src;

			if (strcmp(rs->shards[hits[i].shard_idx].node, calls[k].node) != 0)
				continue;
			id = se_wire_str(&r, NULL);
			hits[i].has_source = se_wire_vint(&r) != 0;
			src = se_wire_str(&r, &len);
			memset(&hits[i].meta, 0, sizeof(SeDocMeta));
			hits[i].meta.routing = se_wire_str(&r, &hits[i].meta.routing_len);
			hits[i].meta.seq_no = se_wire_svint(&r);
			hits[i].meta.primary_term = se_wire_svint(&r);
			hits[i].meta.version = se_wire_svint(&r);
			hits[i].highlight = se_wire_str(&r, NULL);
			hits[i].fields = se_wire_str(&r, NULL);
			hits[i].explanation = se_wire_str(&r, NULL);
			hits[i].inner_hits = se_wire_str(&r, NULL); /* nested queries' */
			if (r.bad)
			{
				se_error_set(err, 500, "remote_transport_exception",
							 "[%s][shard_fetch] malformed answer", calls[k].node);
				return false;
			}
			hits[i].id = id ? id : pstrdup("");
			hits[i].meta.id = hits[i].id;
			hits[i].meta.id_len = strlen(hits[i].id);
			hits[i].has_meta = true;
			initStringInfo(&hits[i].source);
			if (src)
				appendBinaryStringInfo(&hits[i].source, src, len);
		}
	}
	return true;
}

/*
 * Run the query phase of the shards that are on other nodes (all at once),
 * and return the transport se_search_run_remote takes: those shards'
 * answers, and pool's for the local shards it sent to search workers.
 * NULL when no shard is elsewhere (pool is then the transport to use).
 */
SeRemoteSearch *
se_search_remote_begin(const StringInfoData *common, SeSearchShard *shards, int nshards,
					   const SeShardTransport *pool)
{
	SeRemoteSearch *rs;
	SeTransportCall *calls;
	int			nnodes;
	int			i,
				k;

	for (i = 0; i < nshards; i++)
		if (shards[i].node != NULL)
			break;
	if (i == nshards)
		return NULL;
	rs = palloc0(sizeof(SeRemoteSearch));
	rs->shards = shards;
	rs->nshards = nshards;
	rs->pool = pool;
	rs->remote = palloc0(sizeof(bool) * nshards);
	rs->msgs = palloc0(sizeof(StringInfoData) * nshards);
	for (i = 0; i < nshards; i++)
	{
		initStringInfo(&rs->msgs[i]);
		rs->remote[i] = shards[i].node != NULL || (pool != NULL && pool->remote[i]);
		if (shards[i].node != NULL && shards[i].node[0] == '\0')
		{
			/* placed on no node: that shard fails */
			SeError		e;

			se_error_init(&e);
			se_error_set(&e, 503, "no_shard_available_action_exception",
						 "[%s][%d] is not assigned to any node", shards[i].index, shards[i].shard);
			se_search_wire_shard_failed(&rs->msgs[i], i, &e);
		}
	}
	rs->nodes = query_nodes(shards, nshards);
	nnodes = list_length(rs->nodes);
	rs->context_ids = palloc0(sizeof(uint64) * Max(1, nnodes));
	for (k = 0; k < nnodes; k++)
		rs->context_ids[k] = ++next_context_id;
	calls = shard_calls(rs->nodes, "shard_query", common, rs->context_ids, shards, nshards);
	se_transport_call_each(calls, nnodes, SE_REMOTE_SEARCH_TIMEOUT_MS);
	for (k = 0; k < nnodes; k++)
	{
		SeWireReader r;
		bool		bad = !calls[k].ok;

		if (calls[k].ok)
		{
			se_wire_init(&r, calls[k].reply.data, calls[k].reply.len);
			for (i = 0; i < nshards; i++)
			{
				uint64		idx,
							nseg;
				int			len;
				char	   *msg;

				if (!queried_on(&shards[i], calls[k].node))
					continue;
				idx = se_wire_vint(&r);
				nseg = se_wire_vint(&r);
				msg = se_wire_str(&r, &len);
				if (r.bad || idx != (uint64) i || nseg > SE_MAX_SEGMENTS)
				{
					bad = true;
					se_error_set(&calls[k].err, 500, "remote_transport_exception",
								 "[%s][shard_query] malformed answer", calls[k].node);
					break;
				}
				shards[i].nsegments = (int) nseg;
				if (msg)
					appendBinaryStringInfo(&rs->msgs[i], msg, len);
			}
			if (!bad)
			{
				uint64		queued = se_wire_vint(&r);
				uint64		service_us = se_wire_vint(&r);

				/* ARS: what the node said of itself, and the time seen here */
				if (!r.bad)
					se_ars_record(calls[k].node, (double) queued,
								  calls[k].elapsed_us / 1000.0, service_us / 1000.0);
			}
		}
		if (!bad)
			continue;
		/* the node's shards failed, with its error */
		for (i = 0; i < nshards; i++)
			if (queried_on(&shards[i], calls[k].node))
			{
				resetStringInfo(&rs->msgs[i]);
				shards[i].nsegments = 0;
				se_search_wire_shard_failed(&rs->msgs[i], i, &calls[k].err);
			}
	}
	rs->transport.arg = rs;
	rs->transport.remote = rs->remote;
	rs->transport.receive = remote_receive;
	rs->transport.fetch = remote_fetch;
	return rs;
}

const SeShardTransport *
se_search_remote_transport(SeRemoteSearch *rs)
{
	return &rs->transport;
}

/*
 * Count the docs of the shards on other nodes matching body (one request
 * per node, all at once); false (err set) if a node fails.
 */
bool
se_search_remote_count(const SeJson *body, SeSearchShard *shards, int nshards, int64 *count,
					   SeError *err)
{
	List	   *nodes = NIL;
	SeTransportCall *calls;
	StringInfoData text;
	ListCell   *lc;
	int			i,
				k = 0;

	*count = 0;
	for (i = 0; i < nshards; i++)
	{
		if (shards[i].node != NULL && shards[i].node[0] == '\0')
		{
			se_error_set(err, 503, "no_shard_available_action_exception",
						 "[%s][%d] is not assigned to any node", shards[i].index, shards[i].shard);
			return false;
		}
		if (shards[i].node != NULL && node_pos(nodes, shards[i].node) < 0)
			nodes = lappend(nodes, (char *) shards[i].node);
	}
	if (nodes == NIL)
		return true;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	initStringInfo(&text);
	if (body)
		se_json_write(&text, body);
	foreach(lc, nodes)
	{
		const char *node = lfirst(lc);
		StringInfoData payload;
		int			n = 0;

		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, node) == 0)
				n++;
		initStringInfo(&payload);
		se_put_str(&payload, body ? text.data : NULL, text.len);
		se_put_vint(&payload, (uint64) n);
		for (i = 0; i < nshards; i++)
			if (shards[i].node && strcmp(shards[i].node, node) == 0)
			{
				se_peer_shard_put(&payload, shards[i].index, shards[i].index_uuid,
								  shards[i].shard);
			}
		calls[k].node = node;
		calls[k].conninfo = se_cluster_conninfo(node);
		calls[k].action = "shard_count";
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
		k++;
	}
	se_transport_call_each(calls, k, SE_REMOTE_SEARCH_TIMEOUT_MS);
	for (i = 0; i < k; i++)
	{
		SeWireReader r;
		int64		c;

		if (!calls[i].ok)
		{
			se_error_set(err, calls[i].err.status, calls[i].err.type, "%s", calls[i].err.reason);
			return false;
		}
		se_wire_init(&r, calls[i].reply.data, calls[i].reply.len);
		c = se_wire_svint(&r);
		if (r.bad)
		{
			se_error_set(err, 500, "remote_transport_exception",
						 "[%s][shard_count] malformed answer", calls[i].node);
			return false;
		}
		*count += c;
	}
	return true;
}
