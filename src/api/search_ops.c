/*-------------------------------------------------------------------------
 *
 * search_ops.c
 *	  Search, count, get and mget over shard snapshots.
 *
 * Search sees refreshed data (the published snapshots); GET is realtime:
 * when the shard holding the id has writes not yet refreshed, it asks the
 * owner to refresh first, as Elasticsearch does for realtime gets.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "nodes/value.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/scripts.h"
#include "node/node.h"
#include "search/search.h"
#include "security/acl.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/hash.h"

/*
 * The search module's interrupt checks in this process: statement_timeout,
 * pg_cancel_backend and pg_terminate_backend act inside a long query
 * phase.  Search memory is request memory and search holds no lock, so
 * the ereport may leave from anywhere the module checks.
 */
static bool
backend_interrupt_check(void)
{
	CHECK_FOR_INTERRUPTS();
	return true;
}

void
se_search_interrupts_init(void)
{
	se_search_interrupt_hook = backend_interrupt_check;
	se_search_script_lang_hook = se_script_lang_allowed;
	se_search_stored_script_hook = se_stored_script_source;
}

/*
 * The index.max_* limits of a search over indices: each the lowest of the
 * indices' settings (ES checks each shard against its own index's), -1
 * (ES's default) with no index.
 */
void
se_search_limits_of(List *indices, SeSearchLimits *lim)
{
	ListCell   *lc;

	memset(lim, -1, sizeof(*lim));
	foreach(lc, indices)
	{
		const SeIndexSettings *s = &((SeIndexMeta *) lfirst(lc))->settings;

#define LOWEST(f) lim->f = lim->f < 0 ? s->f : Min(lim->f, s->f)
		LOWEST(max_result_window);
		LOWEST(max_inner_result_window);
		LOWEST(max_docvalue_fields_search);
		LOWEST(max_script_fields);
		LOWEST(max_rescore_window);
		LOWEST(max_slices_per_scroll);
#undef LOWEST
	}
}

/* Open indices of expr; an explicitly named closed index is an error. */
List *
se_search_resolve_for_read(const char *expr, SeError *err)
{
	List	   *all = se_acl_resolve(expr, SE_ACL_READ, true, err);
	List	   *res = NIL;
	ListCell   *lc;
	bool		wildcard = (expr == NULL || strchr(expr, '*') || strcmp(expr, "_all") == 0);

	if (se_error_is_set(err))
		return NIL;
	foreach(lc, all)
	{
		SeIndexMeta *im = lfirst(lc);

		if (im->closed)
		{
			if (!wildcard && !(se_indices_options && se_indices_options->ignore_unavailable))
			{
				se_error_set(err, 400, "index_closed_exception", "closed");
				return NIL;
			}
			continue;
		}
		res = lappend(res, im);
	}
	return res;
}

/* The same, and body with its aliases' filters. */
static List *
resolve_read_aliased(const char *expr, const SeJson **body, SeError *err)
{
	List	   *indices = se_search_resolve_for_read(expr, err);

	if (!se_error_is_set(err))
		*body = se_alias_search_body(expr, indices, *body, err);
	return indices;
}

/* Does routing (NULL: any; a comma list: any of its values) lead to shard s? */
bool
se_search_routed_to(const char *routing, const SeIndexMeta *im, int s)
{
	const char *p = routing;

	if (routing == NULL)
		return true;
	for (;;)
	{
		size_t		len = strcspn(p, ",");

		if (se_routing_shard(p, len, im->settings.number_of_shards,
							 im->settings.routing_num_shards) == s)
			return true;
		if (p[len] == '\0')
			return false;
		p += len + 1;
	}
}

/*
 * Snapshots of every shard of the indices of expr (or the routed shards
 * only, each index's routing its own: se_alias_index_routing, or those
 * preference names), each on the copy the preference (NULL: none)
 * chooses.  A shard with no copy the preference accepts (_only_local) is
 * counted in *nunavailable (ES: in _shards.total, neither successful nor
 * failed) and not searched.
 */
static SeSearchShard *
acquire_all(const char *expr, List *indices, const char *routing, const SePreference *pref,
			int *nshards, SeIndexMeta ***metas, int *nunavailable, SeError *err)
{
	ListCell   *lc;
	int			total = 0;
	SeSearchShard *shards;
	int			n = 0;
	const char *me = se_cluster_node_name();

	*nunavailable = 0;
	se_ars_clear_outstanding();
	foreach(lc, indices)
		total += ((SeIndexMeta *) lfirst(lc))->settings.number_of_shards;
	shards = palloc0(sizeof(SeSearchShard) * Max(total, 1));
	if (metas)
		*metas = palloc0(sizeof(SeIndexMeta *) * Max(total, 1));
	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		const char *rt = se_alias_index_routing(expr, im, routing);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			const char *node;

			if (!se_search_routed_to(rt, im, s) || !se_preference_shard_wanted(pref, s))
				continue;
			node = se_state_pick_copy_pref(im, s, pref, err);
			if (se_error_is_set(err))
				return NULL;
			if (node == NULL)
			{
				(*nunavailable)++;
				continue;
			}
			if (im->routing != NULL && strcmp(node, me) != 0)
			{
				/* searched on the node of the copy chosen (search_remote.c) */
				shards[n].index = im->name;
				shards[n].shard = s;
				shards[n].mapping = im->mapping;
				shards[n].index_uuid = im->uuid;
				shards[n].max_terms_count = im->settings.max_terms_count;
				shards[n].max_regex_length = im->settings.max_regex_length;
				shards[n].max_analyzed_offset = im->settings.highlight_max_analyzed_offset;
				shards[n].node = node;
				se_ars_begin(node);
			}
			else if (!se_snapshot_acquire(im, s, &shards[n], err))
				return NULL;
			if (metas)
				(*metas)[n] = im;
			n++;
		}
	}
	*nshards = n;
	return shards;
}

/*
 * URL search_type: false (err set) for a type ES does not know; *dfs for
 * dfs_query_then_fetch.
 */
static bool
parse_search_type(const char *type, bool *dfs, SeError *err)
{
	*dfs = false;
	if (type == NULL || strcmp(type, "query_then_fetch") == 0)
		return true;
	if (strcmp(type, "dfs_query_then_fetch") == 0)
	{
		*dfs = true;
		return true;
	}
	se_error_set(err, 400, "illegal_argument_exception", "No search type for [%s]", type);
	return false;
}

/*
 * The DFS phase of dfs_query_then_fetch: every shard's statistics of the
 * query's terms, here and on the other nodes, summed and given to req (and
 * so to every shard's query phase, here, in the search pool and on the
 * other nodes, through the common part).  Shards whose node fails it fail.
 * A local shard's weights are built in a context of their own, freed once
 * its statistics are added: the query phase builds its own, and the
 * request's memory stays what it is without DFS.
 */
static bool
dfs_phase(SeSearchRequest *req, const StringInfoData *common, SeSearchShard *shards,
		  int nshards, SeDfsStats *global, SeError *err)
{
	MemoryContext cxt;
	int			i;

	if (!se_search_remote_dfs(common, shards, nshards, global, err))
		return false;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "search_engine DFS phase",
								ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < nshards; i++)
	{
		MemoryContext old;
		SeDfsStats *mine;
		bool		ok;

		if (shards[i].node != NULL)
			continue;
		old = MemoryContextSwitchTo(cxt);
		mine = se_dfs_stats_create();
		ok = se_search_dfs_phase(req, &shards[i], mine, err);
		MemoryContextSwitchTo(old);
		if (!ok)
			return false;		/* err lives in cxt, freed with the request */
		se_dfs_stats_add(global, mine);
		MemoryContextReset(cxt);
	}
	MemoryContextDelete(cxt);
	se_search_set_dfs(req, global);
	return true;
}

/* a comma-separated URL list as a JSON array */
static void
write_url_list(StringInfo out, const char *list)
{
	char	   *copy = pstrdup(list);
	char	   *tok,
			   *save;
	bool		first = true;

	appendStringInfoChar(out, '[');
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		se_json_write_string(out, tok, strlen(tok));
	}
	appendStringInfoChar(out, ']');
}

/*
 * The "_source" value the URL's _source, _source_includes and
 * _source_excludes make, as ES's FetchSourceContext.parseFromRestRequest:
 * _source=false fetches none, another _source value lists includes
 * (_source_includes wins).
 */
static void
write_source_spec(StringInfo b, const char *source, const char *includes,
				  const char *excludes)
{
	if (source && strcmp(source, "false") == 0)
		appendStringInfoString(b, "false");
	else
	{
		const char *inc = includes ? includes :
			(source && strcmp(source, "true") != 0 ? source : NULL);

		appendStringInfoString(b, "{\"includes\":");
		write_url_list(b, inc ? inc : "");
		appendStringInfoString(b, ",\"excludes\":");
		write_url_list(b, excludes ? excludes : "");
		appendStringInfoChar(b, '}');
	}
}

SeJson *
se_source_url_spec(const char *source, const char *includes, const char *excludes,
				   SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};

	if (source == NULL && includes == NULL && excludes == NULL)
		return NULL;
	initStringInfo(&b);
	write_source_spec(&b, source, includes, excludes);
	return se_json_parse(b.data, b.len, &opts, err);
}

/*
 * The body with the URL's request options in it, as ES's RestSearchAction
 * puts them in the search source: _source / _source_includes /
 * _source_excludes replace the body's _source, version=true sets version,
 * rest_total_hits_as_int counts exactly (ES refuses it with a count
 * threshold).  In the body, they reach every shard and node with it.
 */
SeJson *
se_search_url_options_body(const SeJson *body, const SeSearchParams *p, SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};
	bool		source = p && (p->source || p->source_includes || p->source_excludes);
	const SeJson *tth = body ? se_json_get(body, "track_total_hits") : NULL;
	bool		first = true;
	int			i;

	if (p == NULL || (!source && !p->version && !p->rest_total_hits_as_int))
		return (SeJson *) body;
	if (p->rest_total_hits_as_int && tth != NULL &&
		tth->type != SE_JSON_TRUE && tth->type != SE_JSON_FALSE)
	{
		StringInfoData v;

		initStringInfo(&v);
		se_json_write(&v, tth);
		se_error_set(err, 400, "illegal_argument_exception",
					 "[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got %s",
					 v.data);
		return NULL;
	}
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (i = 0; body && body->type == SE_JSON_OBJECT && i < body->u.o.count; i++)
	{
		const char *k = body->u.o.members[i].key;

		if ((source && strcmp(k, "_source") == 0) ||
			(p->version && strcmp(k, "version") == 0) ||
			(p->rest_total_hits_as_int && strcmp(k, "track_total_hits") == 0))
			continue;
		if (!first)
			appendStringInfoChar(&b, ',');
		first = false;
		se_json_write_string(&b, k, strlen(k));
		appendStringInfoChar(&b, ':');
		se_json_write(&b, body->u.o.members[i].value);
	}
	if (source)
	{
		appendStringInfo(&b, "%s\"_source\":", first ? "" : ",");
		first = false;
		write_source_spec(&b, p->source, p->source_includes, p->source_excludes);
	}
	if (p->version)
	{
		appendStringInfo(&b, "%s\"version\":true", first ? "" : ",");
		first = false;
	}
	if (p->rest_total_hits_as_int)
		appendStringInfo(&b, "%s\"track_total_hits\":%s", first ? "" : ",",
						 tth && tth->type == SE_JSON_FALSE ? "false" : "true");
	appendStringInfoChar(&b, '}');
	return se_json_parse(b.data, b.len, &opts, err);
}

bool
se_op_search(const char *expr, const SeJson *body, const SeSearchParams *p,
			 SeResponse *r, SeError *err)
{
	if (p && p->scroll)
		return se_op_scroll_start(expr, body, p, r, err);
	return se_search_exec(expr, body, p, NULL, r, err);
}

bool
se_search_exec(const char *expr, const SeJson *body, const SeSearchParams *p,
			   const SeSearchPaging *pg, SeResponse *r, SeError *err)
{
	TimestampTz start = GetCurrentTimestamp();
	List	   *indices;
	SeSearchRequest *req;
	SeSearchShard *shards;
	SeIndexMeta **metas;
	SePoolSearch *pool;
	int			nshards = 0;
	SeSearchResult *res;
	SePreference pref;
	int			nunavailable = 0;
	int			window = -1;
	SeSearchLimits lim;
	int64		url_timeout_ms = -2;	/* -2: none given */
	const char *routing;
	bool		dfs;
	StringInfoData common;
	long		secs;
	int			usecs;

	se_require_started();
	if (!parse_search_type(p ? p->search_type : NULL, &dfs, err) ||
		!se_preference_parse(p ? p->preference : NULL, &pref, err))
		return false;
	/* a point in time names its shards (expr NULL), no index */
	indices = expr ? se_search_resolve_for_read(expr, err) : NIL;
	if (se_error_is_set(err))
		return false;
	/* through aliases: their filter (alias_ops.c); their search routing per index */
	routing = p ? p->routing : NULL;
	body = se_alias_search_body(expr, indices, body, err);
	if (se_error_is_set(err))
		return false;
	/* a point in time opened through filtered aliases: their filter, kept in its id */
	body = se_pit_search_body(body, err);
	if (se_error_is_set(err))
		return false;
	/* each index's own limit holds (ES checks it per shard): the lowest;
	 * a point in time's are the indices it was opened on */
	se_search_limits_of(expr ? indices : se_pit_body_indices(body), &lim);
	window = lim.max_result_window;
	if (window < 0)
		window = 10000;			/* no index: ES's default */
	body = se_search_url_options_body(body, p, err);
	if (se_error_is_set(err))
		return false;
	/* more_like_this's {"_index", "_id"} items: fetched before shards see them */
	if (!se_mlt_resolve_items((SeJson *) body, indices, err))
		return false;
	lim.max_result_window = window;
	req = se_search_parse_limited(body, &lim, err);
	if (req == NULL)
		return false;
	if (p && (p->from >= 0 || p->size >= 0))
		se_search_set_from_size(req, p->from, p->size);
	/* the URL's timeout overrides the body's, read after it, as ES does */
	if (p && p->timeout)
	{
		if (!se_rest_time_value("timeout", p->timeout, &url_timeout_ms, err))
			return false;
		se_search_set_timeout(req, url_timeout_ms);
	}
	if (p && p->seq_no_primary_term)
		se_search_set_seq_no_primary_term(req);
	if (p && p->typed_keys)
		se_search_set_typed_keys(req);
	if (se_search_has_slice(req) && se_search_pit_id(req) == NULL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [slice] can only be used with [scroll] or [point-in-time] requests;");
		return false;
	}
	if (pg && pg->scroll)
		se_search_set_visible_sort(req, true);
	if (se_search_pit_id(req) != NULL)
		shards = se_pit_search_shards(req, &nshards, &metas, err);
	else
		shards = acquire_all(expr, indices, routing, &pref, &nshards, &metas,
							 &nunavailable, err);
	if (shards == NULL)
		return false;
	initStringInfo(&common);
	se_search_common_encode(body, p, url_timeout_ms, window, NULL, &common);
	/* one shard's statistics are the global ones: ES skips DFS there too */
	if (dfs && nshards > 1)
	{
		SeDfsStats *global = se_dfs_stats_create();

		if (!dfs_phase(req, &common, shards, nshards, global, err))
			return false;
		resetStringInfo(&common);
		se_search_common_encode(body, p, url_timeout_ms, window, global, &common);
	}
	pool = se_search_pool_dispatch(&common, shards, metas, nshards);
	PG_TRY();
	{
		SeRemoteSearch *rs = se_search_remote_begin(&common, shards, nshards,
													 se_search_pool_transport(pool));

		res = se_search_run_remote(req, shards, nshards,
								   rs ? se_search_remote_transport(rs)
								   : se_search_pool_transport(pool), err);
	}
	PG_FINALLY();
	{
		se_search_pool_finish(pool);
	}
	PG_END_TRY();
	if (res == NULL)
		return false;
	res->shards_total += nunavailable;
	if (se_search_pit_id(req) != NULL && !(pg && pg->scroll))
		res->pit_id = se_search_pit_id(req);
	res->total_as_int = p && p->rest_total_hits_as_int;
	/* collapse's inner_hits: the expand phase, a search per hit and definition */
	if (se_search_collapse_ninner(req) > 0 && !se_search_expand(expr, body, p, req, res, err))
		return false;
	if (pg && pg->on_result)
		pg->on_result(pg->arg, res);
	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	se_search_result_to_json(res, shards, secs * 1000 + usecs / 1000, &r->body);
	r->status = 200;
	return true;
}

bool
se_op_count(const char *expr, const SeJson *body, const char *preference,
			int64 *count, SeResponse *r, SeError *err)
{
	List	   *indices;
	SeSearchRequest *req;
	SeSearchShard *shards;
	SePreference pref;
	int			nshards = 0;
	int			nunavailable = 0;
	int64		c = 0;

	se_require_started();
	if (!se_preference_parse(preference, &pref, err))
		return false;
	indices = resolve_read_aliased(expr, &body, err);
	if (se_error_is_set(err))
		return false;
	if (!se_mlt_resolve_items((SeJson *) body, indices, err))
		return false;
	req = se_search_parse_count(body, err);
	if (req == NULL)
		return false;
	shards = acquire_all(expr, indices, NULL, &pref, &nshards, NULL, &nunavailable, err);
	if (shards == NULL)
		return false;
	/* shards on other nodes count there (here they look empty) */
	{
		int64		elsewhere;

		if (!se_search_remote_count(body, shards, nshards, &elsewhere, err) ||
			!se_search_count(req, shards, nshards, &c, err))
			return false;
		c += elsewhere;
	}
	if (count)
		*count = c;
	if (r)
		appendStringInfo(&r->body, "{\"count\":" INT64_FORMAT ",\"_shards\":{\"total\":%d,\"successful\":%d,\"skipped\":0,\"failed\":0}}",
						 c, nshards + nunavailable, nshards);
	return true;
}

#define SE_GET_REMOTE_TIMEOUT_MS 30000

static bool get_counted(SeIndexMeta *im, int shard, const char *id, const SeJson *source,
						bool source_only, StringInfo out, SeError *err);
static bool get_local(SeIndexMeta *im, int shard, const char *id, const SeJson *source,
					  bool source_only, StringInfo out, SeError *err);
static bool get_one(SeIndexMeta *im, const char *id, const char *routing,
					const SePreference *pref, const SeJson *source, bool source_only,
					StringInfo out, SeError *err);

/* A get on this node for a peer (which checked read): never forwarded again. */
static bool serving_get = false;

/*
 * get_one for a shard on another node: the "get_doc" transport action.
 * The reply is 'F' (found) or 'N', then what get_one wrote there.
 */
/* {"index", "uuid", "id" of a document request to a peer, left open */
static void
doc_payload_start(StringInfo payload, const SeIndexMeta *im, const char *id)
{
	initStringInfo(payload);
	appendStringInfoString(payload, "{\"index\":");
	se_json_write_string(payload, im->name, -1);
	appendStringInfoString(payload, ",\"uuid\":");
	se_json_write_string(payload, im->uuid, -1);
	appendStringInfoString(payload, ",\"id\":");
	se_json_write_string(payload, id, -1);
}

/*
 * Call action on node with payload; its answer ('F' found or 'N', then a
 * body) appended to out.  1 found, 0 not, -1 with err on failure.
 */
static int
doc_call(const char *node, const char *action, const StringInfoData *payload,
		 StringInfo out, SeError *err)
{
	SeTransportCall call;

	memset(&call, 0, sizeof(call));
	call.node = node;
	call.conninfo = se_cluster_conninfo(node);
	call.action = action;
	call.payload = payload->data;
	call.payload_len = payload->len;
	se_transport_call_each(&call, 1, SE_GET_REMOTE_TIMEOUT_MS);
	if (!call.ok)
	{
		se_error_set(err, call.err.status, call.err.type, "%s", call.err.reason);
		return -1;
	}
	if (call.reply.len < 1)
	{
		se_error_set(err, 500, "remote_transport_exception", "[%s][%s] empty answer", node, action);
		return -1;
	}
	appendBinaryStringInfo(out, call.reply.data + 1, call.reply.len - 1);
	return call.reply.data[0] == 'F' ? 1 : 0;
}

static bool
get_remote(SeIndexMeta *im, int shard, const char *node, const char *id, const char *routing,
		   const SeJson *source, bool source_only, StringInfo out, SeError *err)
{
	StringInfoData payload;

	if (serving_get || node[0] == '\0')
	{
		se_error_set(err, 503, "no_shard_available_action_exception",
					 "[%s][%d] is not on node [%s]%s", im->name, shard, se_node_name_get(),
					 node[0] ? "" : ": it is unassigned");
		return false;
	}
	doc_payload_start(&payload, im, id);
	if (routing)
	{
		appendStringInfoString(&payload, ",\"routing\":");
		se_json_write_string(&payload, routing, -1);
	}
	if (source)
	{
		appendStringInfoString(&payload, ",\"source\":");
		se_json_write(&payload, source);
	}
	appendStringInfo(&payload, ",\"source_only\":%s}", source_only ? "true" : "false");
	return doc_call(node, "get_doc", &payload, out, err) == 1;
}

static const char *
payload_str(const SeJson *j, const char *key)
{
	const SeJson *v = se_json_get(j, key);

	return v && v->type == SE_JSON_STRING ? v->u.s.str : NULL;
}

/*
 * The index and id a peer's document request (doc_payload_start) names;
 * NULL with err when malformed or the index is not that one any more.
 */
static SeIndexMeta *
doc_request_index(const SeJson *j, const char *action, const char **id, SeError *err)
{
	const char *index = payload_str(j, "index");
	const char *uuid = payload_str(j, "uuid");
	SeIndexMeta *im;

	*id = payload_str(j, "id");
	if (index == NULL || uuid == NULL || *id == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed %s request", action);
		return NULL;
	}
	im = se_index_for_read(index, err);
	if (im != NULL && strcmp(im->uuid, uuid) != 0)
	{
		se_index_status_error(SE_INDEX_MISSING, index, err);
		return NULL;
	}
	return im;
}

/* Transport action "get_doc": a peer's get of a document on this node. */
static bool
get_doc_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeJsonParseOptions opts = {16, false};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	const char *id;
	SeIndexMeta *im;
	bool		found;
	int			mark;

	if (j == NULL || (im = doc_request_index(j, "get_doc", &id, err)) == NULL)
		return false;
	mark = reply->len;			/* the reply may hold the transport's framing */
	appendStringInfoChar(reply, 'N');
	serving_get = true;
	PG_TRY();
	{
		found = get_one(im, id, payload_str(j, "routing"), NULL, se_json_get(j, "source"),
						se_json_get(j, "source_only")->type == SE_JSON_TRUE, reply, err);
	}
	PG_FINALLY();
	{
		serving_get = false;
	}
	PG_END_TRY();
	if (se_error_is_set(err))
		return false;
	if (found)
		reply->data[mark] = 'F';
	return true;
}

/*
 * _explain of id on this node's copy of shard: Lucene's explanation of
 * body's query for the document, on the searcher's (refreshed) view as
 * ES's explain reads it.  Appends the answer; false with err on failure.
 */
static bool
explain_local(SeIndexMeta *im, int shard, const char *id, const SeJson *body,
			  StringInfo out, int *status, SeError *err)
{
	SeSearchShard sh;
	SeSearchRequest *req;
	int			i;

	req = se_search_parse(body, im->settings.max_result_window, err);
	if (req == NULL || !se_snapshot_acquire(im, shard, &sh, err))
		return false;
	appendStringInfoString(out, "{\"_index\":");
	se_json_write_string(out, im->name, strlen(im->name));
	appendStringInfoString(out, ",\"_id\":");
	se_json_write_string(out, id, strlen(id));
	for (i = sh.nsegments - 1; i >= 0; i--)
	{
		int32		doc = se_segment_lookup_id(sh.segments[i], id, strlen(id));
		char	   *expl;
		bool		matched;

		if (doc < 0 || !se_livedocs_get(sh.live_docs[i], doc))
			continue;
		if (!se_search_explain_doc(req, &sh, i, doc, &expl, &matched, err))
			return false;
		appendStringInfo(out, ",\"matched\":%s,\"explanation\":%s}",
						 matched ? "true" : "false", expl);
		*status = 200;
		return true;
	}
	appendStringInfoString(out, ",\"matched\":false}");
	*status = 404;
	return true;
}

/* Transport action "explain_doc": a peer's _explain of a document here. */
static bool
explain_doc_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeJsonParseOptions opts = {0};
	SeJson	   *j = se_json_parse(payload, len, &opts, err);
	const SeJson *shard;
	const char *id;
	SeIndexMeta *im;
	int			status = 500;
	int			mark;

	if (j == NULL || (im = doc_request_index(j, "explain_doc", &id, err)) == NULL)
		return false;
	shard = se_json_get(j, "shard");
	if (shard == NULL || shard->type != SE_JSON_NUMBER)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed explain_doc request");
		return false;
	}
	mark = reply->len;
	appendStringInfoChar(reply, 'N');
	if (!explain_local(im, (int) shard->u.n.d, id, se_json_get(j, "body"), reply, &status, err))
		return false;
	if (status == 200)
		reply->data[mark] = 'F';
	return true;
}

bool
se_op_explain(const char *index, const char *id, const char *routing, const char *preference,
			  const SeJson *body, SeResponse *r, SeError *err)
{
	SeIndexMeta *im;
	SePreference pref;
	const char *rv = routing ? routing : id;
	int			shard;
	const char *node;

	se_require_started();
	index = se_alias_single_index(se_state_current(), index, false, &routing, err);
	if (index == NULL)
		return false;
	rv = routing ? routing : id;
	if (!se_preference_parse(preference, &pref, err) || !se_acl_check(index, SE_ACL_READ, err))
		return false;
	im = se_index_for_read(index, err);
	if (im == NULL)
		return false;
	/* the copy's node explains the body with its liked documents in it */
	if (!se_mlt_resolve_items((SeJson *) body, list_make1(im), err))
		return false;
	/* the query is checked before the shard is asked, as ES validates it */
	if (se_search_parse(body, im->settings.max_result_window, err) == NULL)
		return false;
	shard = se_routing_shard(rv, strlen(rv), im->settings.number_of_shards,
							 im->settings.routing_num_shards);
	if (pref.kind != SE_PREF_DEFAULT)
	{
		node = se_state_pick_copy_pref(im, shard, &pref, err);
		if (se_error_is_set(err))
			return false;
		if (node == NULL)
		{
			se_error_set(err, 503, "no_shard_available_action_exception",
						 "[%s][%d] has no copy on node [%s]", im->name, shard, se_node_name_get());
			return false;
		}
		if (im->routing == NULL || strcmp(node, se_cluster_node_name()) == 0)
			node = NULL;
	}
	else if (se_state_read_here(im, shard, &node))
		node = NULL;
	if (node == NULL)
		return explain_local(im, shard, id, body, &r->body, &r->status, err);
	if (node[0] == '\0')
	{
		se_error_set(err, 503, "no_shard_available_action_exception",
					 "[%s][%d] is unassigned", im->name, shard);
		return false;
	}
	{
		StringInfoData payload;
		int			found;

		doc_payload_start(&payload, im, id);
		appendStringInfo(&payload, ",\"shard\":%d", shard);
		if (body)
		{
			appendStringInfoString(&payload, ",\"body\":");
			se_json_write(&payload, body);
		}
		appendStringInfoChar(&payload, '}');
		if ((found = doc_call(node, "explain_doc", &payload, &r->body, err)) < 0)
			return false;
		r->status = found ? 200 : 404;
		return true;
	}
}

/*
 * _validate/query, as ES's: a body that does not parse is {"valid": false}
 * (with "error" under explain); else the query is bound to one shard of
 * each index (a local copy, or the mapping alone when none is here), and
 * explain lists each index's bound query or error.
 */
bool
se_op_validate_query(const char *expr, const SeJson *body, bool explain, SeResponse *r,
					 SeError *err)
{
	List	   *indices;
	SeSearchRequest *req;
	SeError		perr;
	StringInfoData ex;
	bool		valid = true;
	int			n = 0;
	ListCell   *lc;
	SeJsonParseOptions opts = {0};
	SeJson	   *qbody = NULL;

	se_require_started();
	indices = se_search_resolve_for_read(expr ? expr : "_all", err);
	if (se_error_is_set(err))
		return false;
	se_error_init(&perr);
	/* the body holds a query and nothing else (RestActions.getQueryContent) */
	if (body != NULL && body->type == SE_JSON_OBJECT)
	{
		int			i;

		for (i = 0; i < body->u.o.count && !se_error_is_set(&perr); i++)
			if (strcmp(body->u.o.members[i].key, "query") != 0)
				se_error_set(&perr, 400, "parsing_exception",
							 "request does not support [%s]", body->u.o.members[i].key);
		if (!se_error_is_set(&perr) && se_json_get(body, "query") != NULL)
		{
			StringInfoData b;

			initStringInfo(&b);
			appendStringInfoString(&b, "{\"query\":");
			se_json_write(&b, se_json_get(body, "query"));
			appendStringInfoChar(&b, '}');
			qbody = se_json_parse(b.data, b.len, &opts, &perr);
			if (qbody != NULL)
				(void) se_mlt_resolve_items(qbody, indices, &perr);
		}
	}
	req = se_error_is_set(&perr) ? NULL : se_search_parse(qbody, 10000, &perr);
	r->status = 200;
	if (req == NULL)
	{
		appendStringInfoString(&r->body, "{\"valid\":false");
		if (explain)
		{
			appendStringInfoString(&r->body, ",\"error\":");
			se_json_write_string(&r->body, perr.reason, strlen(perr.reason));
		}
		appendStringInfoChar(&r->body, '}');
		return true;
	}
	initStringInfo(&ex);
	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		SeSearchShard sh;
		StringInfoData q;
		SeError		e;
		int			s;
		bool		ok;

		memset(&sh, 0, sizeof(sh));
		sh.index = im->name;
		sh.mapping = im->mapping;
		sh.index_uuid = im->uuid;
		sh.max_terms_count = im->settings.max_terms_count;
		sh.max_regex_length = im->settings.max_regex_length;
		sh.max_analyzed_offset = im->settings.highlight_max_analyzed_offset;
		se_error_init(&e);
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			const char *node;

			if (se_state_read_here(im, s, &node))
			{
				if (!se_snapshot_acquire(im, s, &sh, &e))
					se_error_init(&e);	/* not open after all: the mapping alone */
				break;
			}
		}
		initStringInfo(&q);
		ok = se_search_validate(req, &sh, &q, &e);
		valid &= ok;
		if (n++ > 0)
			appendStringInfoChar(&ex, ',');
		appendStringInfoString(&ex, "{\"index\":");
		se_json_write_string(&ex, im->name, strlen(im->name));
		appendStringInfo(&ex, ",\"valid\":%s,\"%s\":", ok ? "true" : "false",
						 ok ? "explanation" : "error");
		if (ok)
			se_json_write_string(&ex, q.data, q.len);
		else
		{
			char	   *msg = psprintf("[%s/%s] %s[%s]", im->name, im->uuid, e.type, e.reason);

			se_json_write_string(&ex, msg, strlen(msg));
		}
		appendStringInfoChar(&ex, '}');
	}
	appendStringInfo(&r->body, "{\"_shards\":{\"total\":%d,\"successful\":%d,\"failed\":0},\"valid\":%s",
					 n, n, valid ? "true" : "false");
	if (explain)
		appendStringInfo(&r->body, ",\"explanations\":[%s]", ex.data);
	appendStringInfoChar(&r->body, '}');
	return true;
}

void
se_search_register_actions(void)
{
	se_transport_register("get_doc", get_doc_action);
	se_transport_register("explain_doc", explain_doc_action);
}

/*
 * Realtime lookup of one id, on the copy pref (NULL: none) chooses; appends
 * the GET body, returns found.  (ES's get takes preference too; a _shards
 * part does not apply to the one shard the id routes to.)
 */
static bool
get_one(SeIndexMeta *im, const char *id, const char *routing, const SePreference *pref,
		const SeJson *source, bool source_only, StringInfo out, SeError *err)
{
	const char *rv = routing ? routing : id;
	int			shard = se_routing_shard(rv, strlen(rv), im->settings.number_of_shards,
										 im->settings.routing_num_shards);
	const char *node;

	if (pref != NULL && pref->kind != SE_PREF_DEFAULT && !serving_get)
	{
		node = se_state_pick_copy_pref(im, shard, pref, err);
		if (se_error_is_set(err))
			return false;
		if (node == NULL)
		{
			se_error_set(err, 503, "no_shard_available_action_exception",
						 "[%s][%d] has no copy on node [%s]", im->name, shard,
						 se_node_name_get());
			return false;
		}
		if (im->routing != NULL && strcmp(node, se_cluster_node_name()) != 0)
			return get_remote(im, shard, node, id, routing, source, source_only, out, err);
	}
	else if (!se_state_read_here(im, shard, &node))
		return get_remote(im, shard, node, id, routing, source, source_only, out, err);
	return get_counted(im, shard, id, source, source_only, out, err);
}

/*
 * ES's version_type for a read: internal, external and external_gte all
 * ask for exactly that version (VersionType.isVersionConflictForReads);
 * anything else is refused with ES's message.
 */
bool
se_get_version_type_check(const char *version_type, SeError *err)
{
	if (version_type == NULL || strcmp(version_type, "internal") == 0 ||
		strcmp(version_type, "external") == 0 || strcmp(version_type, "external_gte") == 0)
		return true;
	se_error_set(err, 400, "illegal_argument_exception", "No version type match [%s]", version_type);
	return false;
}

/*
 * get_one with ES's version check (version < 0: none): the document's
 * current version must be the one asked for, else 409.  A _source-only
 * get reads the whole document first to learn its version.
 */
static bool
get_versioned(SeIndexMeta *im, const char *id, const char *routing, const SePreference *pref,
			  const SeJson *source, bool source_only, int64 version, StringInfo out,
			  SeError *err)
{
	StringInfoData full;
	SeJsonParseOptions opts = {0};
	SeJson	   *doc;
	const SeJson *v;
	bool		found;

	if (version < 0)
		return get_one(im, id, routing, pref, source, source_only, out, err);
	initStringInfo(&full);
	found = get_one(im, id, routing, pref, source, false, &full, err);
	if (se_error_is_set(err))
		return false;
	if (found)
	{
		doc = se_json_parse(full.data, full.len, &opts, err);
		if (doc == NULL)
			return false;
		v = se_json_get(doc, "_version");
		if (v && v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i != version)
		{
			se_error_set(err, 409, "version_conflict_engine_exception",
						 "[%s]: version conflict, current version [" INT64_FORMAT "] is different than the one provided [" INT64_FORMAT "]",
						 id, v->u.n.i, version);
			return false;
		}
	}
	if (!source_only || !found)
	{
		appendBinaryStringInfo(out, full.data, full.len);
		return found;
	}
	return get_one(im, id, routing, pref, source, true, out, err);
}

/*
 * get_local, counted in the shard's get stats (ES counts a get on the copy
 * that answers it: here, or on the node a get_doc came from).
 */
static bool
get_counted(SeIndexMeta *im, int shard, const char *id, const SeJson *source, bool source_only,
			StringInfo out, SeError *err)
{
	int			slot = se_slot_find(im->uuid, shard);
	TimestampTz start = GetCurrentTimestamp();
	bool		found;
	int64		us;

	se_slot_stat_add(slot, SE_STAT_GET_CURRENT, 1);
	PG_TRY();
	{
		found = get_local(im, shard, id, source, source_only, out, err);
	}
	PG_FINALLY();
	{
		se_slot_stat_add(slot, SE_STAT_GET_CURRENT, -1);
	}
	PG_END_TRY();
	us = GetCurrentTimestamp() - start;
	se_slot_stat_add(slot, SE_STAT_GET, 1);
	se_slot_stat_add(slot, SE_STAT_GET_US, us);
	if (found)
	{
		se_slot_stat_add(slot, SE_STAT_GET_EXISTS, 1);
		se_slot_stat_add(slot, SE_STAT_GET_EXISTS_US, us);
	}
	return found;
}

/* Append doc's _source, filtered by f (NULL: whole). */
static bool
append_source(SeSegmentReader *seg, int32 doc, const struct SeSourceFilter *f,
			  StringInfo out, SeError *err)
{
	StringInfoData raw;
	StringInfo	to = out;

	if (f != NULL)
	{
		initStringInfo(&raw);
		to = &raw;
	}
	if (!se_segment_source(seg, doc, to))
	{
		se_error_set(err, 500, "index_corrupted_exception", "%s",
					 se_segment_error(seg)->reason);
		return false;
	}
	return f == NULL || se_source_filter_write(f, raw.data, raw.len, out, err);
}

/*
 * The realtime lookup of id in this node's copy of shard (see get_one);
 * source is the "_source" value (NULL: all of it), filtered here so that
 * a remote copy ships only what is asked.
 */
static bool
get_local(SeIndexMeta *im, int shard, const char *id, const SeJson *source, bool source_only,
		  StringInfo out, SeError *err)
{
	SeSearchShard sh;
	struct SeSourceFilter *f = NULL;
	int			i;

	if (source != NULL && (f = se_source_filter_parse(source, err)) == NULL)
		return false;
	se_snapshot_refresh_if_needed(im, shard);
	if (!se_snapshot_acquire(im, shard, &sh, err))
		return false;
	for (i = sh.nsegments - 1; i >= 0; i--)
	{
		int32		doc = se_segment_lookup_id(sh.segments[i], id, strlen(id));
		SeDocMeta	meta;

		if (doc < 0 || !se_livedocs_get(sh.live_docs[i], doc))
			continue;
		se_segment_doc_meta(sh.segments[i], doc, &meta);
		if (source_only)
			return append_source(sh.segments[i], doc, f, out, err);
		appendStringInfoString(out, "{\"_index\":");
		se_json_write_string(out, im->name, strlen(im->name));
		appendStringInfoString(out, ",\"_id\":");
		se_json_write_string(out, id, strlen(id));
		appendStringInfo(out, ",\"_version\":" INT64_FORMAT ",\"_seq_no\":" INT64_FORMAT
						 ",\"_primary_term\":" INT64_FORMAT,
						 meta.version, meta.seq_no, meta.primary_term);
		if (meta.routing)
		{
			appendStringInfoString(out, ",\"_routing\":");
			se_json_write_string(out, meta.routing, meta.routing_len);
		}
		appendStringInfoString(out, ",\"found\":true");
		if (se_source_filter_fetches(f))
		{
			appendStringInfoString(out, ",\"_source\":");
			if (!append_source(sh.segments[i], doc, f, out, err))
				return false;
		}
		appendStringInfoChar(out, '}');
		return true;
	}
	if (!source_only)
	{
		appendStringInfoString(out, "{\"_index\":");
		se_json_write_string(out, im->name, strlen(im->name));
		appendStringInfoString(out, ",\"_id\":");
		se_json_write_string(out, id, strlen(id));
		appendStringInfoString(out, ",\"found\":false}");
	}
	return false;
}

/*
 * The "get" object ES's update answers with when asked for _source: the
 * document as the shard wrote it (a write that overtook the update does
 * not show), filtered; read back by a realtime get only when its source
 * did not fit the shard's answer (over SE_UPDATE_SOURCE_ROOM).
 */
bool
se_get_after_update(const char *index, const SeWriteItem *it,
					const SeJson *source, StringInfo out, SeError *err)
{
	SeIndexMeta *im;
	StringInfoData doc;
	SeJsonParseOptions opts = {0};
	SeJson	   *j;
	static const char *const keys[] = {"_seq_no", "_primary_term", "_routing", "found", "_source"};
	bool		first = true;
	int			i;

	if (it->source != NULL)
	{
		struct SeSourceFilter *f = se_source_filter_parse(source, err);

		if (f == NULL)
			return false;
		appendStringInfo(out, "{\"_seq_no\":" INT64_FORMAT ",\"_primary_term\":" INT64_FORMAT,
						 it->resp.seq_no, it->resp.primary_term);
		if (it->routing)
		{
			appendStringInfoString(out, ",\"_routing\":");
			se_json_write_string(out, it->routing, strlen(it->routing));
		}
		appendStringInfoString(out, ",\"found\":true");
		if (se_source_filter_fetches(f))
		{
			appendStringInfoString(out, ",\"_source\":");
			if (!se_source_filter_write(f, it->source, it->source_len, out, err))
				return false;
		}
		appendStringInfoChar(out, '}');
		return true;
	}
	if ((im = se_index_for_read(index, err)) == NULL)
		return false;
	initStringInfo(&doc);
	(void) get_one(im, it->id, it->routing, NULL, source, false, &doc, err);
	if (se_error_is_set(err) || (j = se_json_parse(doc.data, doc.len, &opts, err)) == NULL)
		return false;
	appendStringInfoChar(out, '{');
	for (i = 0; i < lengthof(keys); i++)
	{
		const SeJson *v = se_json_get(j, keys[i]);

		if (v == NULL)
			continue;
		appendStringInfo(out, "%s\"%s\":", first ? "" : ",", keys[i]);
		se_json_write(out, v);
		first = false;
	}
	appendStringInfoChar(out, '}');
	return true;
}

bool
se_op_get(const char *index, const char *id, const char *routing, const char *preference,
		  const SeJson *source_filter, bool source_only, int64 version, SeResponse *r,
		  SeError *err)
{
	SeIndexMeta *im;
	bool		found;
	SePreference pref;

	se_require_started();
	if (!se_preference_parse(preference, &pref, err))
		return false;
	/* an alias of one index is that index (cluster/alias.c) */
	index = se_alias_single_index(se_state_current(), index, false, &routing, err);
	if (index == NULL || !se_acl_check(index, SE_ACL_READ, err))
		return false;
	im = se_index_for_read(index, err);
	if (im == NULL)
		return false;
	found = get_versioned(im, id, routing, &pref, source_filter, source_only, version, &r->body, err);
	if (se_error_is_set(err))
		return false;
	if (!found && source_only)
	{
		se_error_set(err, 404, "resource_not_found_exception",
					 "Document not found [%s]/[%s]", index, id);
		return false;
	}
	r->status = found ? 200 : 404;
	return true;
}

bool
se_op_mget(const char *default_index, const SeJson *body, const char *preference,
		   const SeJson *source, SeResponse *r, SeError *err)
{
	SeJson	   *docs = body ? se_json_get(body, "docs") : NULL;
	SeJson	   *ids = body ? se_json_get(body, "ids") : NULL;
	int			n,
				i;
	SePreference pref;

	se_require_started();
	if (!se_preference_parse(preference, &pref, err))
		return false;
	if ((docs == NULL || docs->type != SE_JSON_ARRAY) && (ids == NULL || ids->type != SE_JSON_ARRAY))
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no documents to get;");
		return false;
	}
	n = docs ? docs->u.a.count : ids->u.a.count;
	if (n == 0)
	{
		/* ES refuses an empty list too, not only a missing one */
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no documents to get;");
		return false;
	}
	appendStringInfoString(&r->body, "{\"docs\":[");
	for (i = 0; i < n; i++)
	{
		const char *index = default_index;
		const char *id = NULL;
		const char *routing = NULL;
		const SeJson *doc_source = source;	/* the URL's, or the doc's own */
		int64		version = -1;
		SeError		ierr;
		SeIndexMeta *im;

		if (docs)
		{
			SeJson	   *d = docs->u.a.items[i];
			SeJson	   *v;

			if (d->type != SE_JSON_OBJECT)
			{
				se_error_set(err, 400, "parsing_exception", "docs array element should include an object");
				return false;
			}
			if ((v = se_json_get(d, "_index")) && v->type == SE_JSON_STRING)
			{
				if (!se_name_check_json(v, SE_NAME_INDEX, err))
					return false;
				index = v->u.s.str;
			}
			if ((v = se_json_get(d, "_id")) && v->type == SE_JSON_STRING)
			{
				if (!se_name_check_json(v, SE_NAME_ID, err))
					return false;
				id = v->u.s.str;
			}
			else if (v && v->type == SE_JSON_NUMBER)
				id = pnstrdup(v->u.n.text, v->u.n.len);
			if ((v = se_json_get(d, "routing")) && v->type == SE_JSON_STRING)
			{
				if (!se_name_check_json(v, SE_NAME_ROUTING, err))
					return false;
				routing = v->u.s.str;
			}
			if ((v = se_json_get(d, "_source")) != NULL)
			{
				if (se_source_filter_parse(v, err) == NULL)
					return false;
				doc_source = v;
			}
			if ((v = se_json_get(d, "version")) != NULL)
			{
				if (v->type != SE_JSON_NUMBER || !v->u.n.is_int || v->u.n.i < 0)
				{
					se_error_set(err, 400, "parsing_exception", "failed to parse field [version]");
					return false;
				}
				version = v->u.n.i;
			}
			if ((v = se_json_get(d, "version_type")) != NULL &&
				(v->type != SE_JSON_STRING || !se_get_version_type_check(v->u.s.str, err)))
			{
				if (!se_error_is_set(err))
					se_error_set(err, 400, "parsing_exception", "failed to parse field [version_type]");
				return false;
			}
		}
		else
		{
			SeJson	   *v = ids->u.a.items[i];

			if (!se_name_check_json(v, SE_NAME_ID, err))
				return false;
			id = v->type == SE_JSON_STRING ? v->u.s.str :
				(v->type == SE_JSON_NUMBER ? pnstrdup(v->u.n.text, v->u.n.len) : NULL);
		}
		if (index == NULL || id == NULL)
		{
			se_error_set(err, 400, "action_request_validation_exception",
						 "Validation Failed: 1: %s is missing for doc %d;", index == NULL ? "index" : "id", i);
			return false;
		}
		if (i > 0)
			appendStringInfoChar(&r->body, ',');
		se_error_init(&ierr);
		{
			const char *ci = se_alias_single_index(se_state_current(), index, false,
												   &routing, &ierr);

			im = ci && se_acl_check(ci, SE_ACL_READ, &ierr) ? se_index_for_read(ci, &ierr) : NULL;
		}
		if (im != NULL)
		{
			StringInfoData one;

			/* a conflict is this doc's error, not a half-written entry */
			initStringInfo(&one);
			(void) get_versioned(im, id, routing, &pref, doc_source, false, version, &one, &ierr);
			if (!se_error_is_set(&ierr))
				appendBinaryStringInfo(&r->body, one.data, one.len);
		}
		if (se_error_is_set(&ierr))
		{
			appendStringInfoString(&r->body, "{\"_index\":");
			se_json_write_string(&r->body, index, strlen(index));
			appendStringInfoString(&r->body, ",\"_id\":");
			se_json_write_string(&r->body, id, strlen(id));
			appendStringInfoString(&r->body, ",\"error\":");
			{
				StringInfoData eb;

				initStringInfo(&eb);
				se_error_body(&ierr, &eb);
				/* ES puts the inner error object here */
				appendStringInfoString(&r->body, "{\"type\":");
				se_json_write_string(&r->body, ierr.type, strlen(ierr.type));
				appendStringInfoString(&r->body, ",\"reason\":");
				se_json_write_string(&r->body, ierr.reason, strlen(ierr.reason));
				appendStringInfoChar(&r->body, '}');
			}
			appendStringInfoChar(&r->body, '}');
		}
	}
	appendStringInfoString(&r->body, "]}");
	return true;
}
