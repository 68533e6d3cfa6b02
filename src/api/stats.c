/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  ES's index stats API: GET /_stats[/{metric}], /{index}/_stats[/{metric}]
 *	  with level=cluster|indices|shards.
 *
 * Every figure is a shard copy's, as the node holding the copy has it in
 * its slot (node/node.h: the published counters and the SeSlotStat
 * operation counters): this node's slots are read directly, the other
 * nodes' come from the transport action index_stats (one call per node,
 * all at once).  A copy's sums go to its index's "total", a primary's to
 * "primaries" too, and both to "_all".  At level=shards each copy also
 * shows its routing, its seq_no figures and its retention leases (ES
 * ShardStats: a primary's own set; a replica's the primary's last synced
 * set, replication/retention.c).
 *
 * A started copy whose node does not answer, or has no started slot for
 * it, counts as failed in _shards; an unassigned or recovering copy counts
 * in the total only (ES's broadcast-by-node actions count them so).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "nodes/value.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "node/node.h"
#include "replication/replication.h"
#include "search/search.h"
#include "security/acl.h"
#include "shard/pit_registry.h"
#include "transport/transport.h"
#include "util/json.h"
#include "util/varint.h"

#define STATS_TIMEOUT_MS 30000

/* the metrics served (ES names; "merge" answers under "merges") */
#define M_DOCS		0x001
#define M_STORE		0x002
#define M_INDEXING	0x004
#define M_GET		0x008
#define M_SEARCH	0x010
#define M_REFRESH	0x020
#define M_FLUSH		0x040
#define M_MERGE		0x080
#define M_TRANSLOG	0x100
#define M_ALL		0x1ff

static const struct
{
	const char *name;
	int			bit;
}			metric_names[] = {
	{"docs", M_DOCS}, {"store", M_STORE}, {"indexing", M_INDEXING}, {"get", M_GET},
	{"search", M_SEARCH}, {"refresh", M_REFRESH}, {"flush", M_FLUSH}, {"merge", M_MERGE},
	{"translog", M_TRANSLOG},
	/* ES's other metrics: accepted, not kept here, so their sections are absent */
	{"completion", 0}, {"fielddata", 0}, {"query_cache", 0}, {"request_cache", 0},
	{"segments", 0}, {"warmer", 0}, {"bulk", 0}, {"shard_stats", 0}, {"dense_vector", 0},
};

/* What the summed sections hold. */
typedef struct StatNums
{
	uint64		docs;
	uint64		deleted;
	uint64		store;
	uint64		translog;
	uint64		indexed;
	uint64		stat[SE_STAT_N];
} StatNums;

/* One shard copy's figures, from its node's slot. */
typedef struct CopyStats
{
	const char *node;
	char	   *uuid;
	int			shard;
	int			state;			/* SeSlotState */
	bool		replica;
	StatNums	nums;
	int64		max_seq_no;
	int64		local_checkpoint;
	int64		global_checkpoint;
	SeLeaseSet	leases;
} CopyStats;

static void nums_add(StatNums *into, const StatNums *n);
static void nums_json(StringInfo out, const StatNums *n, int metrics);

static void
copy_from_slot(int i, CopyStats *c)
{
	SeShardSlot *s = &SeSlots[i];
	int			k;

	memset(c, 0, sizeof(*c));
	c->node = se_cluster_node_name();
	c->uuid = s->index_uuid;
	c->shard = s->shard;
	c->state = s->state;
	c->replica = s->replica;
	c->nums.docs = pg_atomic_read_u64(&s->docs_count);
	c->nums.deleted = pg_atomic_read_u64(&s->docs_deleted);
	c->nums.store = pg_atomic_read_u64(&s->store_bytes);
	c->nums.translog = pg_atomic_read_u64(&s->translog_bytes);
	c->nums.indexed = pg_atomic_read_u64(&s->indexing_ops);
	for (k = 0; k < SE_STAT_N; k++)
		c->nums.stat[k] = pg_atomic_read_u64(&s->stats[k]);
	{
		int			scrolls;

		c->nums.stat[SE_STAT_OPEN_CONTEXTS] = se_pit_count(s->index_uuid, s->shard, &scrolls);
		c->nums.stat[SE_STAT_SCROLL_CURRENT] = scrolls;
	}
	c->max_seq_no = c->state == SE_SLOT_STARTED ? (int64) pg_atomic_read_u64(&s->max_seq_no) : -1;
	c->local_checkpoint = se_slot_read_i64(&s->local_checkpoint);
	c->global_checkpoint = se_slot_read_i64(&s->global_checkpoint);
	se_retention_leases(i, &c->leases);
	/* a set never synced or renewed yet is still this copy's term's */
	if (c->leases.primary_term == 0)
		c->leases.primary_term = s->primary_term;
}

static void
put_copy(StringInfo out, const CopyStats *c)
{
	StringInfoData leases;
	int			k;

	se_put_str(out, c->uuid, strlen(c->uuid));
	se_put_vint(out, (uint64) c->shard);
	se_put_vint(out, (uint64) c->state);
	se_put_vint(out, c->replica ? 1 : 0);
	se_put_vint(out, c->nums.docs);
	se_put_vint(out, c->nums.deleted);
	se_put_vint(out, c->nums.store);
	se_put_vint(out, c->nums.translog);
	se_put_vint(out, c->nums.indexed);
	se_put_svint(out, c->max_seq_no);
	se_put_svint(out, c->local_checkpoint);
	se_put_svint(out, c->global_checkpoint);
	initStringInfo(&leases);
	se_lease_encode(&c->leases, &leases);
	se_put_str(out, leases.data, leases.len);
	pfree(leases.data);
	/* the counters last, with their number: a newer node may have more */
	se_put_vint(out, SE_STAT_N);
	for (k = 0; k < SE_STAT_N; k++)
		se_put_vint(out, c->nums.stat[k]);
}

static bool
get_copy(SeWireReader *r, const char *node, CopyStats *c)
{
	char	   *leases;
	int			len;
	int			n,
				k;

	memset(c, 0, sizeof(*c));
	c->node = node;
	c->uuid = se_wire_str(r, NULL);
	c->shard = (int) se_wire_vint(r);
	c->state = (int) se_wire_vint(r);
	c->replica = se_wire_vint(r) != 0;
	c->nums.docs = se_wire_vint(r);
	c->nums.deleted = se_wire_vint(r);
	c->nums.store = se_wire_vint(r);
	c->nums.translog = se_wire_vint(r);
	c->nums.indexed = se_wire_vint(r);
	c->max_seq_no = se_wire_svint(r);
	c->local_checkpoint = se_wire_svint(r);
	c->global_checkpoint = se_wire_svint(r);
	leases = se_wire_str(r, &len);
	n = (int) se_wire_vint(r);
	for (k = 0; k < n && !r->bad; k++)
	{
		uint64		v = se_wire_vint(r);

		if (k < SE_STAT_N)
			c->nums.stat[k] = v;
	}
	return !r->bad && c->uuid != NULL && leases != NULL &&
		se_lease_decode(leases, len, &c->leases);
}

/* Transport action "index_stats": every shard slot of this node. */
static bool
index_stats_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	int			i;

	for (i = 0; i < SeShmem->nslots; i++)
	{
		CopyStats	c;

		if (SeSlots[i].state == SE_SLOT_FREE)
			continue;
		copy_from_slot(i, &c);
		put_copy(reply, &c);
	}
	return true;
}

/*
 * _nodes/stats "indices": every copy this node holds, summed, in the
 * sections _stats writes for an index.
 */
void
se_stats_node_indices_json(StringInfo out)
{
	StatNums	sum;
	int			i;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < SeShmem->nslots; i++)
	{
		CopyStats	c;

		if (SeSlots[i].state == SE_SLOT_FREE)
			continue;
		copy_from_slot(i, &c);
		nums_add(&sum, &c.nums);
	}
	nums_json(out, &sum, M_ALL);
}

/* se_search_query_hook: a query phase run in a backend, on its copy here */
static void
count_query(const SeSearchShard *sh, int64 elapsed_us)
{
	int			slot = sh->index_uuid ? se_slot_find(sh->index_uuid, sh->shard) : -1;

	se_slot_stat_add(slot, SE_STAT_QUERY, 1);
	se_slot_stat_add(slot, SE_STAT_QUERY_US, elapsed_us);
}

void
se_stats_register_actions(void)
{
	se_transport_register("index_stats", index_stats_action);
	se_search_query_hook = count_query;
}

/* Add node (not this one, not yet listed) to nodes. */
static List *
add_node(List *nodes, const char *node)
{
	ListCell   *lc;

	if (node == NULL || node[0] == '\0' || strcmp(node, se_cluster_node_name()) == 0)
		return nodes;
	foreach(lc, nodes)
		if (strcmp(lfirst(lc), node) == 0)
		return nodes;
	return lappend(nodes, (char *) node);
}

/*
 * The copies of targets' shards as their nodes have them: this node's
 * slots and what the other nodes holding a copy or a relocation target
 * answered (a node that did not answer has none in the list).
 */
static List *
gather_copies(List *targets)
{
	List	   *nodes = NIL;
	List	   *copies = NIL;
	ListCell   *lc;
	SeTransportCall *calls;
	int			n = 0;
	int			i;

	for (i = 0; i < SeShmem->nslots; i++)
	{
		CopyStats  *c;

		if (SeSlots[i].state == SE_SLOT_FREE)
			continue;
		c = palloc(sizeof(CopyStats));
		copy_from_slot(i, c);
		c->uuid = pstrdup(c->uuid);
		copies = lappend(copies, c);
	}
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s,
					k;

		for (s = 0; im->routing && s < im->settings.number_of_shards; s++)
			for (k = 0; k < im->routing[s].ncopies; k++)
			{
				const SeShardCopy *c = &im->routing[s].copies[k];

				nodes = add_node(nodes, c->node);
				if (se_routing_relocating(c))
					nodes = add_node(nodes, c->relocating_node);
			}
	}
	if (nodes == NIL)
		return copies;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	foreach(lc, nodes)
	{
		calls[n].node = lfirst(lc);
		calls[n].conninfo = se_cluster_conninfo(calls[n].node);
		calls[n].action = "index_stats";
		if (calls[n].conninfo != NULL)
			n++;
	}
	se_transport_call_each(calls, n, STATS_TIMEOUT_MS);
	for (i = 0; i < n; i++)
	{
		SeWireReader r;

		if (!calls[i].ok)
			continue;
		se_wire_init(&r, calls[i].reply.data, calls[i].reply.len);
		while (r.p < r.end && !r.bad)
		{
			CopyStats  *c = palloc(sizeof(CopyStats));

			if (get_copy(&r, calls[i].node, c))
				copies = lappend(copies, c);
		}
	}
	return copies;
}

static const CopyStats *
find_copy(List *copies, const SeIndexMeta *im, int shard, const char *node)
{
	ListCell   *lc;

	foreach(lc, copies)
	{
		const CopyStats *c = lfirst(lc);

		if (c->shard == shard && c->state == SE_SLOT_STARTED &&
			strcmp(c->uuid, im->uuid) == 0 && strcmp(c->node, node) == 0)
			return c;
	}
	return NULL;
}

static void
nums_add(StatNums *into, const StatNums *n)
{
	int			k;

	into->docs += n->docs;
	into->deleted += n->deleted;
	into->store += n->store;
	into->translog += n->translog;
	into->indexed += n->indexed;
	for (k = 0; k < SE_STAT_N; k++)
		into->stat[k] += n->stat[k];
}

#define MS(n, k) ((n)->stat[k] / 1000)

/* The metric sections of n, as ES's CommonStats writes them. */
static void
nums_json(StringInfo out, const StatNums *n, int metrics)
{
	const uint64 *st = n->stat;

	appendStringInfoChar(out, '{');
	if (metrics & M_DOCS)
		appendStringInfo(out, "\"docs\":{\"count\":" UINT64_FORMAT ",\"deleted\":" UINT64_FORMAT "},",
						 n->docs, n->deleted);
	if (metrics & M_STORE)
		appendStringInfo(out, "\"store\":{\"size_in_bytes\":" UINT64_FORMAT
						 ",\"total_data_set_size_in_bytes\":" UINT64_FORMAT "},",
						 n->store, n->store);
	if (metrics & M_INDEXING)
		appendStringInfo(out, "\"indexing\":{\"index_total\":" UINT64_FORMAT "},", n->indexed);
	if (metrics & M_GET)
		appendStringInfo(out, "\"get\":{\"total\":" UINT64_FORMAT ",\"time_in_millis\":" UINT64_FORMAT
						 ",\"exists_total\":" UINT64_FORMAT ",\"exists_time_in_millis\":" UINT64_FORMAT
						 ",\"missing_total\":" UINT64_FORMAT ",\"missing_time_in_millis\":" UINT64_FORMAT
						 ",\"current\":" UINT64_FORMAT "},",
						 st[SE_STAT_GET], MS(n, SE_STAT_GET_US),
						 st[SE_STAT_GET_EXISTS], MS(n, SE_STAT_GET_EXISTS_US),
						 st[SE_STAT_GET] - st[SE_STAT_GET_EXISTS],
						 (st[SE_STAT_GET_US] - st[SE_STAT_GET_EXISTS_US]) / 1000,
						 st[SE_STAT_GET_CURRENT]);
	if (metrics & M_SEARCH)
		appendStringInfo(out, "\"search\":{\"open_contexts\":" UINT64_FORMAT ",\"query_total\":" UINT64_FORMAT
						 ",\"query_time_in_millis\":" UINT64_FORMAT ",\"query_current\":" UINT64_FORMAT
						 ",\"scroll_current\":" UINT64_FORMAT "},",
						 st[SE_STAT_OPEN_CONTEXTS], st[SE_STAT_QUERY], MS(n, SE_STAT_QUERY_US),
						 st[SE_STAT_QUERY_CURRENT], st[SE_STAT_SCROLL_CURRENT]);
	if (metrics & M_MERGE)
		appendStringInfo(out, "\"merges\":{\"total\":" UINT64_FORMAT ",\"total_time_in_millis\":" UINT64_FORMAT
						 ",\"total_docs\":" UINT64_FORMAT ",\"total_size_in_bytes\":" UINT64_FORMAT "},",
						 st[SE_STAT_MERGE], MS(n, SE_STAT_MERGE_US), st[SE_STAT_MERGE_DOCS],
						 st[SE_STAT_MERGE_BYTES]);
	if (metrics & M_REFRESH)
		appendStringInfo(out, "\"refresh\":{\"total\":" UINT64_FORMAT ",\"total_time_in_millis\":" UINT64_FORMAT "},",
						 st[SE_STAT_REFRESH], MS(n, SE_STAT_REFRESH_US));
	if (metrics & M_FLUSH)
		appendStringInfo(out, "\"flush\":{\"total\":" UINT64_FORMAT ",\"total_time_in_millis\":" UINT64_FORMAT "},",
						 st[SE_STAT_FLUSH], MS(n, SE_STAT_FLUSH_US));
	if (metrics & M_TRANSLOG)
		appendStringInfo(out, "\"translog\":{\"size_in_bytes\":" UINT64_FORMAT "},", n->translog);
	if (out->data[out->len - 1] == ',')
		out->len--;
	appendStringInfoChar(out, '}');
	out->data[out->len] = '\0';
}

/* "primaries" and "total" of one index or of all */
static void
pair_json(StringInfo out, const StatNums *pri, const StatNums *tot, int metrics)
{
	appendStringInfoString(out, "\"primaries\":");
	nums_json(out, pri, metrics);
	appendStringInfoString(out, ",\"total\":");
	nums_json(out, tot, metrics);
}

/* One copy at level=shards: routing, its sections, seq_no, retention_leases. */
static void
shard_json(StringInfo out, const CopyStats *c, const char *state, bool primary,
		   const char *relocating_node, int metrics)
{
	StringInfoData nums;

	appendStringInfo(out, "{\"routing\":{\"state\":\"%s\",\"primary\":%s,\"node\":", state,
					 primary ? "true" : "false");
	se_json_write_string(out, c->node, strlen(c->node));
	appendStringInfoString(out, ",\"relocating_node\":");
	if (relocating_node)
		se_json_write_string(out, relocating_node, strlen(relocating_node));
	else
		appendStringInfoString(out, "null");
	appendStringInfoChar(out, '}');
	initStringInfo(&nums);
	nums_json(&nums, &c->nums, metrics);
	if (nums.len > 2)
	{
		/* the sections, without their braces */
		appendStringInfoChar(out, ',');
		appendBinaryStringInfo(out, nums.data + 1, nums.len - 2);
	}
	appendStringInfo(out, ",\"seq_no\":{\"max_seq_no\":" INT64_FORMAT ",\"local_checkpoint\":" INT64_FORMAT
					 ",\"global_checkpoint\":" INT64_FORMAT "},\"retention_leases\":",
					 c->max_seq_no, c->local_checkpoint, c->global_checkpoint);
	se_lease_encode(&c->leases, out);
	appendStringInfoChar(out, '}');
}

static bool
parse_metrics(const char *metric, int *metrics, SeError *err)
{
	char	   *list;
	char	   *tok;
	char	   *save = NULL;

	*metrics = 0;
	if (metric == NULL || strcmp(metric, "_all") == 0)
	{
		*metrics = M_ALL;
		return true;
	}
	list = pstrdup(metric);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			k;

		for (k = 0; k < lengthof(metric_names); k++)
			if (strcmp(metric_names[k].name, tok) == 0)
				break;
		if (k == lengthof(metric_names) || strcmp(tok, "_all") == 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "request [_stats] contains unrecognized metric: [%s]", tok);
			return false;
		}
		*metrics |= metric_names[k].bit;
	}
	return true;
}

bool
se_op_stats(const char *expr, const char *metric, const char *level, SeResponse *r,
			SeError *err)
{
	List	   *targets;
	List	   *copies;
	ListCell   *lc;
	StringInfoData indices;
	StatNums	all_pri,
				all_tot;
	int			metrics;
	int			total = 0,
				ok = 0,
				failed = 0;
	bool		by_index;
	bool		by_shard;

	if (!parse_metrics(metric, &metrics, err))
		return false;
	if (level == NULL)
		level = "indices";
	by_index = strcmp(level, "indices") == 0 || strcmp(level, "shards") == 0;
	by_shard = strcmp(level, "shards") == 0;
	if (!by_index && strcmp(level, "cluster") != 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "level parameter must be one of [cluster] or [indices] or [shards] but was [%s]",
					 level);
		return false;
	}
	targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, false, err);
	if (se_error_is_set(err))
		return false;
	copies = gather_copies(targets);
	memset(&all_pri, 0, sizeof(all_pri));
	memset(&all_tot, 0, sizeof(all_tot));
	initStringInfo(&indices);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		StatNums	pri,
					tot;
		StringInfoData shards;
		int			s,
					k;

		memset(&pri, 0, sizeof(pri));
		memset(&tot, 0, sizeof(tot));
		initStringInfo(&shards);
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			int			ncopies = im->routing ? im->routing[s].ncopies : 1;
			int			listed = 0;

			appendStringInfo(&shards, "%s\"%d\":[", s > 0 ? "," : "", s);
			for (k = 0; k < ncopies; k++)
			{
				const SeShardCopy *rc = im->routing ? &im->routing[s].copies[k] : NULL;
				const char *node = rc ? rc->node : se_cluster_node_name();
				SeShardState state = rc ? rc->state : se_state_shard_state(im, s);
				int			j;

				/* a moving copy's target is a copy too (ES lists it INITIALIZING) */
				for (j = 0; j < (rc && se_routing_relocating(rc) ? 2 : 1); j++)
				{
					const char *on = j == 0 ? node : rc->relocating_node;
					const CopyStats *c;
					const char *state_name;

					total++;
					if (j == 0 && (state == SE_SHARD_UNASSIGNED || node[0] == '\0'))
						continue;
					c = find_copy(copies, im, s, on);
					if (c == NULL)
					{
						/* a started copy its node did not report */
						if (j == 0 && state == SE_SHARD_STARTED)
							failed++;
						continue;
					}
					ok++;
					nums_add(&tot, &c->nums);
					if (j == 0 && k == 0)
						nums_add(&pri, &c->nums);
					if (!by_shard)
						continue;
					if (j == 1)
						state_name = se_shard_state_name(SE_SHARD_INITIALIZING);
					else if (rc && se_routing_relocating(rc))
						state_name = "RELOCATING";
					else
						state_name = se_shard_state_name(state);
					if (listed++ > 0)
						appendStringInfoChar(&shards, ',');
					shard_json(&shards, c, state_name, k == 0,
							   j == 0 ? (rc && se_routing_relocating(rc) ? rc->relocating_node : NULL)
							   : node, metrics);
				}
			}
			appendStringInfoChar(&shards, ']');
		}
		nums_add(&all_pri, &pri);
		nums_add(&all_tot, &tot);
		if (!by_index)
			continue;
		if (indices.len > 0)
			appendStringInfoChar(&indices, ',');
		se_json_write_string(&indices, im->name, strlen(im->name));
		appendStringInfoString(&indices, ":{\"uuid\":");
		se_json_write_string(&indices, im->uuid, strlen(im->uuid));
		appendStringInfo(&indices, ",\"status\":\"%s\",", im->closed ? "close" : "open");
		pair_json(&indices, &pri, &tot, metrics);
		if (by_shard)
			appendStringInfo(&indices, ",\"shards\":{%s}", shards.data);
		appendStringInfoChar(&indices, '}');
	}
	appendStringInfo(&r->body, "{\"_shards\":{\"total\":%d,\"successful\":%d,\"failed\":%d},\"_all\":{",
					 total, ok, failed);
	pair_json(&r->body, &all_pri, &all_tot, metrics);
	appendStringInfoChar(&r->body, '}');
	if (by_index)
		appendStringInfo(&r->body, ",\"indices\":{%s}", indices.data);
	appendStringInfoChar(&r->body, '}');
	r->status = 200;
	return true;
}
