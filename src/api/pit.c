/*-------------------------------------------------------------------------
 *
 * pit.c
 *	  Point in time (POST /{index}/_pit, DELETE /_pit, search with "pit")
 *	  and scroll (?scroll=, _search/scroll, DELETE _search/scroll) on the
 *	  same pinned shard snapshots.
 *
 * Opening a point in time pins, on each node holding a shard searched, the
 * shard's segments and live docs as they are (shard/pit_registry.h: one
 * entry per shard under one random context id, with a keep-alive and the
 * node's search.max_open_scroll_context limit); the shard's owner keeps
 * their files until the context is freed or expires.  Shards on other
 * nodes are pinned there by the transport action "pit_open", freed by
 * "pit_close".  The id given to the client names the context and every
 * shard with its node, as ES's does, so any node's backend can coordinate
 * a later search: local shards are opened at the pinned generations,
 * remote ones are queried with the search body, whose "pit" tells the
 * serving node which context to open them at (se_search_shard_snapshot)
 * and to extend.
 *
 * A scroll is a point in time plus a cursor: its id carries the context's
 * id, the keep-alive, the search body and the sort values of the last hit
 * returned; each page is the body searched at the point in time with
 * search_after those values (the point in time's _shard_doc tiebreaker
 * makes them unique), so pages never repeat or skip a hit, whatever is
 * written meanwhile.  The tiebreaker is not shown on scroll hits.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "common/base64.h"
#include "miscadmin.h"

#include "api/api.h"
#include "cluster/cluster_settings.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/replica_select.h"
#include "search/search.h"
#include "security/acl.h"
#include "shard/pit_registry.h"
#include "shard/snapshot.h"
#include "transport/transport.h"
#include "util/hash.h"
#include "util/varint.h"

#define PIT_ID_VERSION		2	/* 1: without the alias filter */
#define SCROLL_ID_VERSION	1
#define PIT_TRANSPORT_TIMEOUT_MS 30000

typedef struct PitShardRef
{
	char	   *index;
	char	   *uuid;
	int			shard;
	char	   *node;			/* "" = the single node */
} PitShardRef;

typedef struct PitId
{
	uint64		ctx;
	int			n;
	PitShardRef *shards;
	char	   *filter;			/* the aliases' filter clause, NULL: none */
} PitId;

/* ---------------------------------------------------------------------
 * Ids: base64url of a small binary record
 * ---------------------------------------------------------------------
 */
static char *
b64url_encode(const StringInfoData *bin)
{
	int			cap = pg_b64_enc_len(bin->len) + 1;
	char	   *out = palloc(cap);
	int			n = pg_b64_encode(bin->data, bin->len, out, cap);
	int			i;

	if (n < 0)
		n = 0;
	out[n] = '\0';
	for (i = 0; i < n; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return out;
}

/* NULL when text is not base64url */
static char *
b64url_decode(const char *text, int *len)
{
	int			tl = strlen(text);
	char	   *std = palloc(tl + 4);
	char	   *out;
	int			i,
				n;

	for (i = 0; i < tl; i++)
		std[i] = text[i] == '-' ? '+' : text[i] == '_' ? '/' : text[i];
	while (i % 4 != 0)
		std[i++] = '=';
	out = palloc(pg_b64_dec_len(i) + 1);
	n = pg_b64_decode(std, i, out, pg_b64_dec_len(i) + 1);
	if (n < 0)
		return NULL;
	*len = n;
	return out;
}

static char *
pit_id_encode(const PitId *p)
{
	StringInfoData b;
	int			i;

	initStringInfo(&b);
	se_put_vint(&b, PIT_ID_VERSION);
	se_put_vint(&b, p->ctx);
	se_put_vint(&b, (uint64) p->n);
	for (i = 0; i < p->n; i++)
	{
		se_put_str(&b, p->shards[i].index, strlen(p->shards[i].index));
		se_put_str(&b, p->shards[i].uuid, strlen(p->shards[i].uuid));
		se_put_vint(&b, (uint64) p->shards[i].shard);
		se_put_str(&b, p->shards[i].node, strlen(p->shards[i].node));
	}
	se_put_str(&b, p->filter, p->filter ? strlen(p->filter) : 0);
	return b64url_encode(&b);
}

static bool
pit_id_decode(const char *text, PitId *p, SeError *err)
{
	int			len;
	char	   *bin = b64url_decode(text, &len);
	SeWireReader r;
	uint64		n;
	uint64		version;
	int			i;

	memset(p, 0, sizeof(*p));
	if (bin != NULL)
	{
		se_wire_init(&r, bin, len);
		version = se_wire_vint(&r);
		if (version != 1 && version != PIT_ID_VERSION)
			r.bad = true;
		p->ctx = se_wire_vint(&r);
		n = se_wire_vint(&r);
		if (n > 100000)
			r.bad = true;
		p->n = r.bad ? 0 : (int) n;
		p->shards = palloc0(sizeof(PitShardRef) * Max(1, p->n));
		for (i = 0; i < p->n && !r.bad; i++)
		{
			p->shards[i].index = se_wire_str(&r, NULL);
			p->shards[i].uuid = se_wire_str(&r, NULL);
			p->shards[i].shard = (int) se_wire_vint(&r);
			p->shards[i].node = se_wire_str(&r, NULL);
			if (p->shards[i].index == NULL || p->shards[i].uuid == NULL)
				r.bad = true;
			if (p->shards[i].node == NULL)
				p->shards[i].node = "";
		}
		if (version >= 2 && !r.bad)
		{
			p->filter = se_wire_str(&r, NULL);
			if (p->filter != NULL && p->filter[0] == '\0')
				p->filter = NULL;
		}
		if (!r.bad && r.p == r.end)
			return true;
	}
	se_error_set(err, 400, "illegal_argument_exception", "invalid id: [%s]", text);
	return false;
}

/* Is ref's shard on this node? */
static bool
ref_here(const PitShardRef *ref)
{
	return ref->node[0] == '\0' || strcmp(ref->node, se_cluster_node_name()) == 0;
}

/* The distinct nodes other than this one holding shards of p. */
static List *
pit_remote_nodes(const PitId *p)
{
	List	   *nodes = NIL;
	int			i;

	for (i = 0; i < p->n; i++)
	{
		ListCell   *lc;
		bool		seen = false;

		if (ref_here(&p->shards[i]))
			continue;
		foreach(lc, nodes)
			if (strcmp(lfirst(lc), p->shards[i].node) == 0)
			seen = true;
		if (!seen)
			nodes = lappend(nodes, p->shards[i].node);
	}
	return nodes;
}

/* ---------------------------------------------------------------------
 * Serving side: this node's shards of a context
 * ---------------------------------------------------------------------
 */
/* Open shard of im at the point in time ctx pinned here (and extend it). */
static bool
pit_acquire(uint64 ctx, const SeIndexMeta *im, int shard, int64 keep_alive_ms,
			Oid role, SeSearchShard *out, SeError *err)
{
	uint64		gens[SE_MAX_SEGMENTS];
	uint64		dels[SE_MAX_SEGMENTS];
	int			n;

	if (!se_pit_lookup(ctx, im->uuid, shard, keep_alive_ms, role, gens, dels, &n, err))
		return false;
	if (se_snapshot_acquire_at(im, shard, gens, dels, n, out, err))
		return true;
	/* its files went (a keep-alive ran out meanwhile): the context is gone */
	se_error_init(err);
	se_error_set(err, 404, "search_context_missing_exception",
				 "No search context found for id [" UINT64_FORMAT "]", ctx);
	return false;
}

bool
se_search_shard_snapshot(const SeSearchRequest *req, const SeIndexMeta *im, int shard,
						 Oid role, SeSearchShard *out, SeError *err)
{
	const char *id = req ? se_search_pit_id(req) : NULL;
	PitId		p;

	if (id == NULL)
		return se_snapshot_acquire(im, shard, out, err);
	if (!pit_id_decode(id, &p, err))
		return false;
	return pit_acquire(p.ctx, im, shard, se_search_pit_keep_alive(req), role, out, err);
}

/*
 * Transport action "pit_open": pin this node's shards of a point in time.
 * Payload: context id, keep-alive (ms), the requesting role's name (the
 * contexts are bound to it, as ES binds them to the user), then the
 * shards (se_peer_shard_put).  All or nothing: a shard that cannot be
 * pinned frees the others.
 */
static bool
pit_open_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		ctx;
	int64		keep_alive;
	char	   *role_name;
	Oid			role;
	uint64		n,
				i;

	se_wire_init(&r, payload, len);
	ctx = se_wire_vint(&r);
	keep_alive = se_wire_svint(&r);
	role_name = se_wire_str(&r, NULL);
	n = se_wire_vint(&r);
	if (r.bad || role_name == NULL || n > 100000)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed pit_open request");
		return false;
	}
	role = se_peer_role(role_name);
	if (!OidIsValid(role))
	{
		se_error_set(err, 403, "security_exception",
					 "action [indices:data/read/open_point_in_time] is unauthorized for user [%s]: no such role on node [%s]",
					 role_name, se_node_name_get());
		return false;
	}
	for (i = 0; i < n; i++)
	{
		int			shard;
		SeIndexMeta *im = se_peer_shard_get(&r, &shard, err);
		SeSearchShard sh;

		if (im == NULL || !se_snapshot_acquire_pit(im, shard, ctx, keep_alive, role, &sh, err))
		{
			(void) se_pit_release(ctx, role);
			return false;
		}
	}
	return true;
}

/*
 * Transport action "pit_close": free a context's shards here, those of the
 * role named after the context id; answers how many.
 */
static bool
pit_close_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;
	uint64		ctx;
	char	   *role_name;
	Oid			role;

	se_wire_init(&r, payload, len);
	ctx = se_wire_vint(&r);
	role_name = se_wire_str(&r, NULL);
	if (r.bad || role_name == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception", "malformed pit_close request");
		return false;
	}
	role = se_peer_role(role_name);
	/* context 0 (no context's id): every scroll, DELETE _search/scroll/_all */
	se_put_vint(reply, (uint64) (ctx == 0 ? se_pit_release_scrolls(role) : se_pit_release(ctx, role)));
	return true;
}

void
se_pit_register_actions(void)
{
	se_transport_register("pit_open", pit_open_action);
	se_transport_register("pit_close", pit_close_action);
}

/* ---------------------------------------------------------------------
 * Coordinating side
 * ---------------------------------------------------------------------
 */
/*
 * Run pit_close calls[0..n) (node, conninfo and payload set); the shard
 * contexts they freed.  A node that does not answer lets its contexts
 * expire with their keep-alive.
 */
static int
close_calls(SeTransportCall *calls, int n)
{
	int			freed = 0;
	int			k;

	for (k = 0; k < n; k++)
		calls[k].action = "pit_close";
	se_transport_call_each(calls, n, PIT_TRANSPORT_TIMEOUT_MS);
	for (k = 0; k < n; k++)
	{
		SeWireReader r;
		uint64		got;

		if (!calls[k].ok)
			continue;
		se_wire_init(&r, calls[k].reply.data, calls[k].reply.len);
		got = se_wire_vint(&r);
		if (!r.bad)
			freed += (int) Min(got, 100000);
	}
	return freed;
}

/* Free p's contexts on every node; the number of shard contexts freed. */
static int
pit_close(const PitId *p)
{
	List	   *nodes = pit_remote_nodes(p);
	int			nnodes = list_length(nodes);
	int			freed = se_pit_release(p->ctx, GetUserId());
	SeTransportCall *calls;
	StringInfoData payload;
	int			k;

	if (nnodes == 0)
		return freed;
	calls = palloc0(sizeof(SeTransportCall) * nnodes);
	initStringInfo(&payload);
	se_put_vint(&payload, p->ctx);
	se_peer_role_put(&payload, GetUserId());
	for (k = 0; k < nnodes; k++)
	{
		calls[k].node = list_nth(nodes, k);
		calls[k].conninfo = se_cluster_conninfo(calls[k].node);
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
	}
	return freed + close_calls(calls, nnodes);
}

/*
 * Open a point in time over the shards of indices (routing and preference
 * narrow them as for a search): pin each where the preference reads it.
 * NULL with err set when a shard cannot be pinned (nothing stays pinned).
 */
static PitId *
pit_open(const char *expr, List *indices, int64 keep_alive_ms, const char *routing,
		 const SePreference *pref, bool scroll, int *nunavailable, SeError *err)
{
	PitId	   *p = palloc0(sizeof(PitId));
	const char *me = se_cluster_node_name();
	ListCell   *lc;
	int			total = 0;
	List	   *nodes;
	int			nnodes;
	SeTransportCall *calls;
	int			k,
				i;

	*nunavailable = 0;
	p->ctx = se_pit_new_id(scroll);
	foreach(lc, indices)
		total += ((SeIndexMeta *) lfirst(lc))->settings.number_of_shards;
	p->shards = palloc0(sizeof(PitShardRef) * Max(1, total));
	foreach(lc, indices)
	{
		SeIndexMeta *im = lfirst(lc);
		const char *rt = se_alias_index_routing(expr, im, routing);
		int			s;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			PitShardRef *ref = &p->shards[p->n];
			const char *node;

			if (!se_search_routed_to(rt, im, s) || !se_preference_shard_wanted(pref, s))
				continue;
			node = se_state_pick_copy_pref(im, s, pref, err);
			if (se_error_is_set(err))
				goto fail;
			if (node == NULL)
			{
				(*nunavailable)++;
				continue;
			}
			if (node[0] == '\0' && im->routing != NULL)
			{
				se_error_set(err, 503, "no_shard_available_action_exception",
							 "[%s][%d] is not assigned to any node", im->name, s);
				goto fail;
			}
			ref->index = im->name;
			ref->uuid = im->uuid;
			ref->shard = s;
			if (im->routing == NULL || strcmp(node, me) == 0)
			{
				SeSearchShard sh;

				ref->node = im->routing == NULL ? "" : pstrdup(me);
				if (!se_snapshot_acquire_pit(im, s, p->ctx, keep_alive_ms, GetUserId(), &sh, err))
					goto fail;
			}
			else
				ref->node = pstrdup(node);
			p->n++;
		}
	}

	/* the shards on other nodes: pinned there, all at once */
	nodes = pit_remote_nodes(p);
	nnodes = list_length(nodes);
	if (nnodes == 0)
		return p;
	calls = palloc0(sizeof(SeTransportCall) * nnodes);
	for (k = 0; k < nnodes; k++)
	{
		StringInfoData payload;
		int			count = 0;

		for (i = 0; i < p->n; i++)
			if (strcmp(p->shards[i].node, list_nth(nodes, k)) == 0)
				count++;
		initStringInfo(&payload);
		se_put_vint(&payload, p->ctx);
		se_put_svint(&payload, keep_alive_ms);
		se_peer_role_put(&payload, GetUserId());
		se_put_vint(&payload, (uint64) count);
		for (i = 0; i < p->n; i++)
			if (strcmp(p->shards[i].node, list_nth(nodes, k)) == 0)
				se_peer_shard_put(&payload, p->shards[i].index, p->shards[i].uuid,
								  p->shards[i].shard);
		calls[k].node = list_nth(nodes, k);
		calls[k].conninfo = se_cluster_conninfo(calls[k].node);
		calls[k].action = "pit_open";
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
	}
	se_transport_call_each(calls, nnodes, PIT_TRANSPORT_TIMEOUT_MS);
	for (k = 0; k < nnodes; k++)
		if (!calls[k].ok)
		{
			se_error_set(err, calls[k].err.status, calls[k].err.type, "%s", calls[k].err.reason);
			goto fail;
		}
	return p;

fail:
	(void) pit_close(p);
	return NULL;
}

/* A duration as ES's TimeValue.toString: the largest unit, one decimal at most. */
static void
time_value_string(int64 ms, StringInfo out)
{
	static const struct
	{
		int64		ms;
		const char *suffix;
	}			units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
	int			i;
	char		buf[64];
	int			len;

	for (i = 0; i < lengthof(units) - 1 && ms < units[i].ms; i++)
		;
	len = snprintf(buf, sizeof(buf), "%.1f", (double) ms / units[i].ms);
	if (len > 2 && strcmp(buf + len - 2, ".0") == 0)
		buf[len - 2] = '\0';
	appendStringInfo(out, "%s%s", buf, units[i].suffix);
}

/* The cluster's search.max_keep_alive (24h unless set), within the registry's bound. */
static int64
max_keep_alive_ms(void)
{
	const SeClusterState *st = se_state_current();
	int64		ms = st ? se_csettings_time_ms(&st->persistent, &st->transient,
											   "search.max_keep_alive") : 24 * 3600 * 1000L;

	return Min(ms, SE_PIT_MAX_KEEP_ALIVE_MS);
}

/* "keep_alive" / "scroll" as ES reads it: required, at most search.max_keep_alive */
static bool
keep_alive_param(const char *name, const char *v, int64 *ms, SeError *err)
{
	if (v == NULL || v[0] == '\0')
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [%s] is not specified;", name);
		return false;
	}
	if (!se_rest_time_value(name, v, ms, err))
		return false;
	if (*ms > max_keep_alive_ms())
	{
		StringInfoData max;

		initStringInfo(&max);
		time_value_string(max_keep_alive_ms(), &max);
		se_error_set(err, 400, "illegal_argument_exception",
					 "Keep alive for request (%s) is too large. It must be less than (%s). This limit can be set by changing the [search.max_keep_alive] cluster level setting.",
					 v, max.data);
		return false;
	}
	if (*ms < 0)
		*ms = 0;
	return true;
}

static void
shards_json(StringInfo out, int total, int ok)
{
	appendStringInfo(out, "\"_shards\":{\"total\":%d,\"successful\":%d,\"skipped\":0,\"failed\":%d}",
					 total, ok, total - ok);
}

bool
se_op_open_pit(const char *expr, const char *keep_alive, const char *routing,
			   const char *preference, SeResponse *r, SeError *err)
{
	int64		ms;
	List	   *indices;
	SePreference pref;
	PitId	   *p;
	int			nunavailable;
	char	   *id;

	se_require_started();
	if (!keep_alive_param("keep_alive", keep_alive, &ms, err) ||
		!se_preference_parse(preference, &pref, err))
		return false;
	indices = se_search_resolve_for_read(expr, err);
	if (se_error_is_set(err))
		return false;
	p = pit_open(expr, indices, ms, routing, &pref, false, &nunavailable, err);
	if (p == NULL)
		return false;
	/* through filtered aliases: every search of it applies their filters (ES) */
	p->filter = se_alias_filter_clause(expr, indices);
	id = pit_id_encode(p);
	appendStringInfoString(&r->body, "{\"id\":");
	se_json_write_string(&r->body, id, strlen(id));
	appendStringInfoChar(&r->body, ',');
	shards_json(&r->body, p->n + nunavailable, p->n);
	appendStringInfoChar(&r->body, '}');
	r->status = 200;
	return true;
}

/* ES's answer to freeing contexts: 404 when none was found */
static void
freed_json(SeResponse *r, int freed)
{
	appendStringInfo(&r->body, "{\"succeeded\":true,\"num_freed\":%d}", freed);
	r->status = freed > 0 ? 200 : 404;
}

bool
se_op_close_pit(const SeJson *body, SeResponse *r, SeError *err)
{
	const SeJson *id = body ? se_json_get(body, "id") : NULL;
	PitId		p;

	se_require_started();
	if (id == NULL || id->type != SE_JSON_STRING)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [id] is not specified;");
		return false;
	}
	if (!pit_id_decode(id->u.s.str, &p, err))
		return false;
	freed_json(r, pit_close(&p));
	return true;
}

/* The point in time a search body names, decoded into *p; false if none or bad. */
static bool
body_pit_id(const SeJson *body, PitId *p)
{
	const SeJson *pit = body && body->type == SE_JSON_OBJECT ? se_json_get(body, "pit") : NULL;
	const SeJson *id = pit && pit->type == SE_JSON_OBJECT ? se_json_get(pit, "id") : NULL;
	SeError		e;

	se_error_init(&e);
	return id != NULL && id->type == SE_JSON_STRING && pit_id_decode(id->u.s.str, p, &e);
}

/*
 * The indices a search body's point in time names, to hold the body to
 * their index.max_* limits as a search of them is held (ES checks each
 * shard against its own index's).  NIL with no point in time or one that
 * does not decode: the search's own parse reports that.
 */
List *
se_pit_body_indices(const SeJson *body)
{
	const SeClusterState *st = se_state_current();
	List	   *res = NIL;
	PitId		p;
	int			i;

	if (!body_pit_id(body, &p))
		return NIL;
	for (i = 0; i < p.n; i++)
	{
		SeIndexMeta *im = se_state_find_uuid(st, p.shards[i].uuid);

		if (im != NULL && !list_member_ptr(res, im))
			res = lappend(res, im);
	}
	return res;
}

/*
 * A search body with a point in time opened through filtered aliases:
 * their filter clause beside its query (the body as it is otherwise; an
 * id that does not decode is reported by the search's own parse).
 */
const SeJson *
se_pit_search_body(const SeJson *body, SeError *err)
{
	PitId		p;

	if (!body_pit_id(body, &p))
		return body;
	return se_body_with_filter(body, p.filter, err);
}

/*
 * The shards of the search req's point in time names: this node's opened
 * at their pinned generations, the others placed on their nodes (their
 * query goes there with the body, whose "pit" opens them there).  A shard
 * whose context is gone, or whose index is, fails (ES: a shard failure;
 * all of them failing fails the search with the first error).
 */
SeSearchShard *
se_pit_search_shards(const SeSearchRequest *req, int *nshards, SeIndexMeta ***metas,
					 SeError *err)
{
	PitId		p;
	SeSearchShard *shards;
	const SeClusterState *st = se_state_current();
	int			i,
				j;

	if (!pit_id_decode(se_search_pit_id(req), &p, err))
		return NULL;
	/* read privilege on every index of it, now (a role may have lost it) */
	for (i = 0; i < p.n; i++)
	{
		for (j = 0; j < i; j++)
			if (strcmp(p.shards[j].index, p.shards[i].index) == 0)
				break;
		if (j == i && !se_acl_check(p.shards[i].index, SE_ACL_READ, err))
			return NULL;
	}
	shards = palloc0(sizeof(SeSearchShard) * Max(1, p.n));
	*metas = palloc0(sizeof(SeIndexMeta *) * Max(1, p.n));
	for (i = 0; i < p.n; i++)
	{
		const PitShardRef *ref = &p.shards[i];
		SeIndexMeta *im = se_state_find_uuid(st, ref->uuid);
		SeSearchShard *sh = &shards[i];
		SeError    *e = palloc(sizeof(SeError));

		se_error_init(e);
		(*metas)[i] = im;
		if (im == NULL || im->closed)
			se_index_status_error(SE_INDEX_MISSING, ref->index, e);
		else if (ref_here(ref))
			(void) pit_acquire(p.ctx, im, ref->shard, se_search_pit_keep_alive(req), GetUserId(),
							   sh, e);
		else
		{
			sh->mapping = im->mapping;
			sh->max_terms_count = im->settings.max_terms_count;
			sh->max_regex_length = im->settings.max_regex_length;
			sh->max_analyzed_offset = im->settings.highlight_max_analyzed_offset;
			sh->node = ref->node;
			se_ars_begin(ref->node);
		}
		sh->index = ref->index;
		sh->shard = ref->shard;
		sh->index_uuid = ref->uuid;
		if (se_error_is_set(e))
		{
			sh->nsegments = 0;
			sh->segments = NULL;
			sh->seg_gens = NULL;
			sh->failure = e;
			if (sh->mapping == NULL && im != NULL)
				sh->mapping = im->mapping;
		}
	}
	*nshards = p.n;
	return shards;
}

/* ---------------------------------------------------------------------
 * Scroll
 * ---------------------------------------------------------------------
 */
typedef struct ScrollState
{
	char	   *pit_id;
	int64		keep_alive_ms;
	char	   *body;			/* the search body (NULL: none) */
	int			size;			/* URL size, -1: the body's */
	char	   *after;			/* sort values of the last hit, or NULL */
	bool		first;			/* no page served yet */
	bool		total_as_int;	/* rest_total_hits_as_int on this page */
	bool		typed_keys;		/* typed_keys on this page */
} ScrollState;

static char *
scroll_id_encode(const ScrollState *s, const char *after)
{
	StringInfoData b;

	initStringInfo(&b);
	se_put_vint(&b, SCROLL_ID_VERSION);
	se_put_str(&b, s->pit_id, strlen(s->pit_id));
	se_put_svint(&b, s->keep_alive_ms);
	se_put_str(&b, s->body, s->body ? strlen(s->body) : 0);
	se_put_svint(&b, s->size);
	se_put_str(&b, after, after ? strlen(after) : 0);
	return b64url_encode(&b);
}

static bool
scroll_id_decode(const char *text, ScrollState *s, SeError *err)
{
	int			len;
	char	   *bin = b64url_decode(text, &len);
	SeWireReader r;

	memset(s, 0, sizeof(*s));
	if (bin != NULL)
	{
		se_wire_init(&r, bin, len);
		if (se_wire_vint(&r) != SCROLL_ID_VERSION)
			r.bad = true;
		s->pit_id = se_wire_str(&r, NULL);
		s->keep_alive_ms = se_wire_svint(&r);
		s->body = se_wire_str(&r, NULL);
		s->size = (int) se_wire_svint(&r);
		s->after = se_wire_str(&r, NULL);
		if (!r.bad && r.p == r.end && s->pit_id != NULL)
			return true;
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "Cannot parse scroll id");
	return false;
}

/*
 * One page's body: the scroll's body at its point in time, after the last
 * hit served (from applies to the first page only, and so do aggregations:
 * as in ES, only the first page answers them).
 */
static SeJson *
scroll_page_body(const ScrollState *s, bool first, SeError *err)
{
	StringInfoData b;
	SeJsonParseOptions opts = {0};
	SeJson	   *orig = NULL;
	int			i;

	if (s->body)
	{
		orig = se_json_parse(s->body, strlen(s->body), &opts, err);
		if (orig == NULL)
			return NULL;
	}
	initStringInfo(&b);
	appendStringInfoString(&b, "{\"pit\":{\"id\":");
	se_json_write_string(&b, s->pit_id, strlen(s->pit_id));
	appendStringInfo(&b, ",\"keep_alive\":\"" INT64_FORMAT "ms\"}", s->keep_alive_ms);
	if (s->after)
		appendStringInfo(&b, ",\"search_after\":%s", s->after);
	for (i = 0; orig && orig->type == SE_JSON_OBJECT && i < orig->u.o.count; i++)
	{
		const char *k = orig->u.o.members[i].key;

		if (s->after && strcmp(k, "from") == 0)
			continue;
		if (!first && (strcmp(k, "aggs") == 0 || strcmp(k, "aggregations") == 0))
			continue;
		appendStringInfoChar(&b, ',');
		se_json_write_string(&b, k, strlen(k));
		appendStringInfoChar(&b, ':');
		se_json_write(&b, orig->u.o.members[i].value);
	}
	appendStringInfoChar(&b, '}');
	return se_json_parse(b.data, b.len, &opts, err);
}

static void
scroll_on_result(void *arg, SeSearchResult *res)
{
	ScrollState *s = arg;

	/* no hit: the cursor stays, and so does the id */
	res->scroll_id = scroll_id_encode(s, res->last_sort_json ? res->last_sort_json : s->after);
}

static bool
scroll_page(ScrollState *s, const SeSearchParams *p, SeResponse *r, SeError *err)
{
	SeJson	   *body = scroll_page_body(s, p != NULL, err);
	SeSearchParams sp;
	SeSearchPaging pg;

	if (body == NULL)
		return false;
	memset(&sp, 0, sizeof(sp));
	if (p)
		sp = *p;
	else
	{
		sp.from = -1;
		sp.track_total_hits = -2;
	}
	sp.size = s->size;
	sp.routing = NULL;
	sp.preference = NULL;
	sp.scroll = NULL;
	/* the URL's options are in the scroll's body */
	sp.source = sp.source_includes = sp.source_excludes = NULL;
	sp.version = false;
	sp.rest_total_hits_as_int = s->total_as_int;
	sp.typed_keys = s->typed_keys;
	if (s->after)
		sp.from = -1;
	memset(&pg, 0, sizeof(pg));
	pg.scroll = true;
	pg.on_result = scroll_on_result;
	pg.arg = s;
	return se_search_exec(NULL, body, &sp, &pg, r, err);
}

/* A search with ?scroll=: open a point in time, serve its first page. */
bool
se_op_scroll_start(const char *expr, const SeJson *body, const SeSearchParams *p,
				   SeResponse *r, SeError *err)
{
	ScrollState s;
	int64		ms;
	List	   *indices;
	SePreference pref;
	PitId	   *pit;
	int			nunavailable;
	StringInfoData text;
	const SeJson *v;
	bool		ok;
	SeSearchLimits lim;

	se_require_started();
	if (!keep_alive_param("scroll", p->scroll, &ms, err) ||
		!se_preference_parse(p->preference, &pref, err))
		return false;
	if (body && (v = se_json_get(body, "pit")) != NULL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: using [point in time] is not allowed in a scroll context;");
		return false;
	}
	if (body && (v = se_json_get(body, "search_after")) != NULL)
	{
		se_error_set(err, 400, "search_exception",
					 "`search_after` cannot be used in a scroll context.");
		return false;
	}
	if (body && (v = se_json_get(body, "collapse")) != NULL)
	{
		se_error_set(err, 400, "search_exception",
					 "cannot use `collapse` in a scroll context");
		return false;
	}
	if (p->size == 0 || (body && (v = se_json_get(body, "size")) != NULL &&
						 v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i == 0))
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: [size] cannot be [0] in a scroll context;");
		return false;
	}
	indices = se_search_resolve_for_read(expr, err);
	if (se_error_is_set(err))
		return false;
	/*
	 * Through aliases: their filters join the body the scroll id keeps, so
	 * every page applies them, and their search routing narrows the shards
	 * pinned, as for a search.
	 */
	body = se_alias_search_body(expr, indices, body, err);
	if (se_error_is_set(err))
		return false;
	/* a URL q is in the body already (rest.c uri_query) */
	body = se_search_url_options_body(body, p, err);
	if (se_error_is_set(err))
		return false;
	/* the pages search the point in time: hold the body to the indices' limits now */
	se_search_limits_of(indices, &lim);
	if (se_search_parse_limited(body, &lim, err) == NULL)
		return false;
	pit = pit_open(expr, indices, ms, p->routing, &pref, true, &nunavailable, err);
	if (pit == NULL)
		return false;
	memset(&s, 0, sizeof(s));
	s.pit_id = pit_id_encode(pit);
	s.keep_alive_ms = ms;
	if (body)
	{
		initStringInfo(&text);
		se_json_write(&text, body);
		s.body = text.data;
	}
	s.size = p->size;
	s.first = true;
	s.total_as_int = p->rest_total_hits_as_int;
	s.typed_keys = p->typed_keys;
	ok = scroll_page(&s, p, r, err);
	if (!ok)
		(void) pit_close(pit);
	return ok;
}

/* POST _search/scroll {"scroll": "1m", "scroll_id": "..."}: the next page. */
bool
se_op_scroll_next(const char *scroll_id, const char *scroll, bool total_as_int,
				  bool typed_keys, SeResponse *r, SeError *err)
{
	ScrollState s;

	se_require_started();
	if (scroll_id == NULL || scroll_id[0] == '\0')
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: scrollId is missing;");
		return false;
	}
	if (!scroll_id_decode(scroll_id, &s, err))
		return false;
	s.total_as_int = total_as_int;
	s.typed_keys = typed_keys;
	/* a new keep-alive applies from this page on */
	if (scroll != NULL && !keep_alive_param("scroll", scroll, &s.keep_alive_ms, err))
		return false;
	return scroll_page(&s, NULL, r, err);
}

/* DELETE _search/scroll: free the scrolls' contexts. */
/*
 * DELETE _search/scroll/_all: free every scroll context (not points in
 * time) on every node, the role's own (a superuser's: all), as pit_close
 * of context 0; a node that does not answer lets them expire.
 */
static int
scroll_clear_all(void)
{
	SeClusterView *v = palloc0(sizeof(SeClusterView));
	SeTransportCall *calls;
	StringInfoData payload;
	int			freed = se_pit_release_scrolls(GetUserId());
	int			n = 0;
	int			k;

	se_cluster_view(v);
	calls = palloc0(sizeof(SeTransportCall) * Max(1, v->nmembers));
	initStringInfo(&payload);
	se_put_vint(&payload, 0);
	se_peer_role_put(&payload, GetUserId());
	for (k = 0; k < v->nmembers; k++)
	{
		if (strcmp(v->members[k].name, v->local_name) == 0)
			continue;
		calls[n].node = v->members[k].name;
		calls[n].conninfo = v->members[k].conninfo;
		calls[n].payload = payload.data;
		calls[n].payload_len = payload.len;
		n++;
	}
	return freed + close_calls(calls, n);
}

bool
se_op_scroll_clear(const SeJson *ids, const char *path_ids, SeResponse *r, SeError *err)
{
	List	   *list = NIL;
	ListCell   *lc;
	int			freed = 0;
	int			i;

	se_require_started();
	if (path_ids != NULL)
	{
		char	   *copy = pstrdup(path_ids);
		char	   *tok,
				   *save;

		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			list = lappend(list, tok);
	}
	else if (ids != NULL && ids->type == SE_JSON_STRING)
		list = lappend(list, (char *) ids->u.s.str);
	else if (ids != NULL && ids->type == SE_JSON_ARRAY)
		for (i = 0; i < ids->u.a.count; i++)
		{
			if (ids->u.a.items[i]->type != SE_JSON_STRING)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "scroll_id array element should only contain scroll_id");
				return false;
			}
			list = lappend(list, (char *) ids->u.a.items[i]->u.s.str);
		}
	if (list == NIL)
	{
		se_error_set(err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: no scroll ids specified;");
		return false;
	}
	foreach(lc, list)
	{
		ScrollState s;
		PitId		p;

		if (strcmp(lfirst(lc), "_all") == 0)
		{
			freed += scroll_clear_all();
			continue;
		}
		if (!scroll_id_decode(lfirst(lc), &s, err) || !pit_id_decode(s.pit_id, &p, err))
			return false;
		freed += pit_close(&p);
	}
	freed_json(r, freed);
	return true;
}
