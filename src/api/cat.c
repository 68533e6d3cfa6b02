/*-------------------------------------------------------------------------
 *
 * cat.c
 *	  _cat APIs and the views built on them: indices, thread_pool, segments.
 *
 * One row collector per API feeds both the SQL views (set-returning
 * functions) and the REST _cat text/JSON output.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "pgtime.h"

#include <unistd.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "nodes/value.h"
#include "security/acl.h"
#include "node/node.h"
#include "replication/recovery.h"
#include "transport/transport.h"
#include "util/varint.h"

typedef struct CatTable
{
	int			ncols;
	const char **cols;
	List	   *rows;			/* of char ** (ncols strings) */
	const char *const *aliases; /* per column: ES's short names (comma list)
								 * for h= and s=, or NULL; NULL = none */
	const char *defaults;		/* shown without h=: comma list; NULL = all */
	const char *bytes_unit;		/* ?bytes=: b, kb, mb, gb, tb, pb; NULL = human */
} CatTable;

const char *
se_node_name_get(void)
{
	return se_cluster_node_name();
}

static char *
human_bytes(uint64 b)
{
	if (b >= (uint64) 1024 * 1024 * 1024)
		return psprintf("%.1fgb", b / (1024.0 * 1024 * 1024));
	if (b >= 1024 * 1024)
		return psprintf("%.1fmb", b / (1024.0 * 1024));
	if (b >= 1024)
		return psprintf("%.1fkb", b / 1024.0);
	return psprintf(UINT64_FORMAT "b", b);
}

/*
 * A byte size in a _cat column: human-readable (1.2kb), or with ?bytes= a
 * whole number of that unit, rounded down, as ES's ByteSizeValue gives.
 */
static char *
cat_bytes(const CatTable *t, uint64 b)
{
	static const char *const units[] = {"b", "kb", "mb", "gb", "tb", "pb"};
	int			i;

	if (t->bytes_unit == NULL)
		return human_bytes(b);
	for (i = 0; i < lengthof(units); i++)
	{
		/* ES takes k, m, g, t, p too */
		if (strcmp(t->bytes_unit, units[i]) == 0 ||
			(i > 0 && t->bytes_unit[0] == units[i][0] && t->bytes_unit[1] == '\0'))
			return psprintf(UINT64_FORMAT, b);
		b /= 1024;
	}
	return human_bytes(b);		/* unreachable: se_cat_bytes_unit_valid */
}

/* Whether unit is a ?bytes= value ES takes. */
bool
se_cat_bytes_unit_valid(const char *unit)
{
	static const char *const ok[] = {"b", "k", "kb", "m", "mb", "g", "gb", "t", "tb", "p", "pb"};
	int			i;

	for (i = 0; i < lengthof(ok); i++)
		if (strcmp(unit, ok[i]) == 0)
			return true;
	return false;
}

/*
 * Start table t with its columns; returns the indices expr names (all when
 * NULL; expand: the table's expand_wildcards default, SE_EXPAND_*), or NIL
 * with err set.
 */
static List *
cat_begin(CatTable *t, const char **cols, const char *const *aliases, int ncols,
		  const char *expr, int expand, SeError *err)
{
	List	   *targets = se_acl_resolve(expr ? expr : "_all", SE_ACL_VIEW, expand, err);

	t->ncols = ncols;
	t->cols = cols;
	t->aliases = aliases;
	t->rows = NIL;
	t->defaults = NULL;
	return targets;
}

/*
 * Per-index totals over its primaries as their nodes have them; started
 * counts the primaries the routing (or, on one node, the slots) says
 * started, all_started whether every replica did too (a single node never
 * allocates replicas).
 */
static void
index_totals(const SeIndexMeta *im, List *remote, uint64 *docs, uint64 *deleted,
			 uint64 *bytes, int *started, bool *all_started)
{
	int			s,
				k;

	*docs = *deleted = *bytes = 0;
	*started = 0;
	*all_started = im->routing != NULL || im->settings.number_of_replicas == 0;
	for (s = 0; s < im->settings.number_of_shards; s++)
	{
		SeShardView view;

		if (se_state_shard_state(im, s) == SE_SHARD_STARTED)
			(*started)++;
		for (k = 1; im->routing && k < im->routing[s].ncopies; k++)
			if (im->routing[s].copies[k].state != SE_SHARD_STARTED)
				*all_started = false;
		if (!se_shard_view(im, s, remote, &view))
			continue;
		*docs += view.docs;
		*deleted += view.deleted;
		*bytes += view.bytes;
	}
}

static bool
collect_indices(const char *expr, CatTable *t, bool raw_bytes, SeError *err)
{
	static const char *cols[] = {"health", "status", "index", "uuid", "pri", "rep",
	"docs.count", "docs.deleted", "store.size", "pri.store.size"};
	static const char *const aliases[] = {"h", "s", "i,idx", "id,uuid",
		"p,shards.primary,shardsPrimary", "r,shards.replica,shardsReplica",
		"dc,docsCount", "dd,docsDeleted", "ss,storeSize", NULL};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	List	   *targets = cat_begin(t, cols, aliases, lengthof(cols), expr, SE_EXPAND_ALL, err);
	List	   *remote;
	ListCell   *lc;

	if (se_error_is_set(err))
		return false;
	/* shards on other nodes: their figures as their nodes have them */
	remote = se_remote_shard_stats(targets);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		char	  **row = palloc0(sizeof(char *) * t->ncols);
		uint64		docs,
					deleted,
					bytes;
		int			started;
		bool		all_started;

		index_totals(im, remote, &docs, &deleted, &bytes, &started, &all_started);
		if (im->closed)
			row[0] = NULL;
		else if (started < im->settings.number_of_shards)
			row[0] = "red";
		else
			row[0] = all_started ? "green" : "yellow";
		row[1] = im->closed ? "close" : "open";
		row[2] = im->name;
		row[3] = im->uuid;
		row[4] = psprintf("%d", im->settings.number_of_shards);
		row[5] = psprintf("%d", im->settings.number_of_replicas);
		if (!im->closed)
		{
			row[6] = psprintf(UINT64_FORMAT, docs);
			row[7] = psprintf(UINT64_FORMAT, deleted);
			row[8] = raw_bytes ? psprintf(UINT64_FORMAT, bytes) : cat_bytes(t, bytes);
			row[9] = row[8];
		}
		t->rows = lappend(t->rows, row);
	}
	return true;
}

/* One row per pool of every node that answers (api/nodes.c asks them). */
static void
collect_thread_pool(CatTable *t)
{
	static const char *cols[] = {"node_name", "name", "threads", "active", "queue",
	"queue_size", "rejected", "completed"};
	static const char *const aliases[] = {"nn", "n", "t", "a", "q", "qs", "r", "c"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");

	t->ncols = lengthof(cols);
	t->cols = cols;
	t->aliases = aliases;
	t->defaults = NULL;
	t->rows = se_nodes_thread_pool_rows();
}

/* The published segments of slot (at most SE_MAX_SEGMENTS): how many. */
static int
slot_segments(int slot, SeSegRef *refs)
{
	int			n;

	LWLockAcquire(&SeSlots[slot].lock, LW_SHARED);
	n = SeSlots[slot].nsegments;
	memcpy(refs, SeSlots[slot].segs, sizeof(SeSegRef) * n);
	LWLockRelease(&SeSlots[slot].lock);
	return n;
}

/*
 * Transport action "shard_segments": the published segments of each shard
 * the request names (se_peer_shard_put), in its order; a shard that is not
 * open here has none.
 */
static bool
shard_segments_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeWireReader r;

	se_wire_init(&r, payload, len);
	while (r.p < r.end && !r.bad)
	{
		SeError		serr;
		int			shard;
		SeIndexMeta *im;
		int			slot;
		SeSegRef	refs[SE_MAX_SEGMENTS];
		int			n = 0;
		int			i;

		se_error_init(&serr);
		im = se_peer_shard_get(&r, &shard, &serr);
		if (r.bad)
		{
			*err = serr;
			return false;
		}
		if (im && (slot = se_slot_find(im->uuid, shard)) >= 0)
			n = slot_segments(slot, refs);
		se_put_vint(reply, (uint64) n);
		for (i = 0; i < n; i++)
		{
			se_put_vint(reply, refs[i].seg_gen);
			se_put_vint(reply, refs[i].max_doc);
			se_put_vint(reply, refs[i].live_docs);
			se_put_vint(reply, refs[i].size_bytes);
			se_put_vint(reply, refs[i].committed ? 1 : 0);
		}
	}
	return true;
}

/* A shard copy's segments as its node published them (_cat/segments). */
typedef struct ShardSegments
{
	const SeIndexMeta *im;
	int			shard;
	int			copy;			/* in the shard's routing: 0 the primary */
	const char *node;
	int			nsegments;
	SeSegRef   *segs;
} ShardSegments;

/*
 * The segments of targets' shards on other nodes: one shard_segments
 * request per node, all at once; a node that does not answer lists none
 * (ES's _cat shows what it reaches).
 */
static List *
remote_segments(List *targets)
{
	List	   *nodes = se_state_copy_nodes_elsewhere(targets);
	List	   *out = NIL;
	SeTransportCall *calls;
	List	  **asked;
	ListCell   *lc;
	int			k = 0;
	int			i;

	if (nodes == NIL)
		return NIL;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	asked = palloc0(sizeof(List *) * list_length(nodes));
	foreach(lc, nodes)
	{
		StringInfoData payload;
		ListCell   *li;

		initStringInfo(&payload);
		foreach(li, targets)
		{
			SeIndexMeta *im = lfirst(li);
			int			s,
						c;

			for (s = 0; im->routing && s < im->settings.number_of_shards; s++)
				for (c = 0; c < im->routing[s].ncopies; c++)
					if (im->routing[s].copies[c].state == SE_SHARD_STARTED &&
						strcmp(im->routing[s].copies[c].node, lfirst(lc)) == 0)
					{
						ShardSegments *ss = palloc0(sizeof(ShardSegments));

						ss->im = im;
						ss->shard = s;
						ss->copy = c;
						ss->node = lfirst(lc);
						asked[k] = lappend(asked[k], ss);
						se_peer_shard_put(&payload, im->name, im->uuid, s);
					}
		}
		calls[k].node = lfirst(lc);
		calls[k].conninfo = se_cluster_conninfo(calls[k].node);
		calls[k].action = "shard_segments";
		calls[k].payload = payload.data;
		calls[k].payload_len = payload.len;
		k++;
	}
	se_transport_call_each(calls, k, 10000);
	for (i = 0; i < k; i++)
	{
		SeWireReader r;

		if (!calls[i].ok)
			continue;
		se_wire_init(&r, calls[i].reply.data, calls[i].reply.len);
		foreach(lc, asked[i])
		{
			ShardSegments *ss = lfirst(lc);
			int			n = (int) se_wire_vint(&r);
			int			j;

			if (r.bad || n < 0 || n > SE_MAX_SEGMENTS)
				break;
			ss->segs = palloc0(sizeof(SeSegRef) * Max(1, n));
			for (j = 0; j < n; j++)
			{
				ss->segs[j].seg_gen = se_wire_vint(&r);
				ss->segs[j].max_doc = (uint32) se_wire_vint(&r);
				ss->segs[j].live_docs = (uint32) se_wire_vint(&r);
				ss->segs[j].size_bytes = se_wire_vint(&r);
				ss->segs[j].committed = se_wire_vint(&r) != 0;
			}
			if (r.bad)
				break;
			ss->nsegments = n;
			out = lappend(out, ss);
		}
	}
	return out;
}

/* The host of node name in v ("127.0.0.1" when it is not known). */
static const char *
node_host(const SeClusterView *v, const char *name)
{
	int			i;

	for (i = 0; i < v->nmembers; i++)
		if (strcmp(v->members[i].name, name) == 0)
			return se_conninfo_host(v->members[i].conninfo);
	return "127.0.0.1";
}

static bool
collect_segments(const char *expr, CatTable *t, SeError *err)
{
	static const char *cols[] = {"index", "shard", "prirep", "ip", "segment", "generation",
	"docs.count", "docs.deleted", "size", "committed", "searchable", "version", "compound"};
	static const char *const aliases[] = {"i,idx", "s,sh", "p,pr,primaryOrReplica",
		NULL, "seg", "g,gen", "dc,docsCount", "dd,docsDeleted", "si", "ic,isCommitted",
		"is,isSearchable", "v", "ico,isCompound"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	List	   *targets = cat_begin(t, cols, aliases, lengthof(cols), expr, false, err);
	SeClusterView *v = palloc(sizeof(SeClusterView));
	List	   *remote;
	ListCell   *lc;

	if (se_error_is_set(err))
		return false;
	se_cluster_view(v);
	remote = remote_segments(targets);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s,
					c;

		for (s = 0; s < im->settings.number_of_shards; s++)
			for (c = 0; c < (im->routing ? im->routing[s].ncopies : 1); c++)
			{
				SeSegRef	local[SE_MAX_SEGMENTS];
				SeSegRef   *refs = local;
				const char *node = se_node_name_get();
				int			n = 0,
							i;

				if (im->routing == NULL ||
					strcmp(im->routing[s].copies[c].node, se_cluster_node_name()) == 0)
				{
					int			slot = se_slot_find(im->uuid, s);

					if (slot < 0)
						continue;
					n = slot_segments(slot, local);
				}
				else
				{
					ListCell   *lr;

					foreach(lr, remote)
					{
						ShardSegments *ss = lfirst(lr);

						if (ss->im == im && ss->shard == s && ss->copy == c)
						{
							refs = ss->segs;
							n = ss->nsegments;
							node = ss->node;
						}
					}
				}
				for (i = 0; i < n; i++)
				{
					char	  **row = palloc0(sizeof(char *) * t->ncols);

					row[0] = im->name;
					row[1] = psprintf("%d", s);
					row[2] = c == 0 ? "p" : "r";
					row[3] = (char *) node_host(v, node);
					row[4] = psprintf("_" UINT64_FORMAT, refs[i].seg_gen);
					row[5] = psprintf(UINT64_FORMAT, refs[i].seg_gen);
					row[6] = psprintf("%u", refs[i].live_docs);
					row[7] = psprintf("%u", refs[i].max_doc - refs[i].live_docs);
					row[8] = cat_bytes(t, refs[i].size_bytes);
					row[9] = refs[i].committed ? "true" : "false";
					row[10] = "true";
					row[11] = "0.1";	/* the extension version that wrote it */
					row[12] = "true";	/* one compound file per segment */
					t->rows = lappend(t->rows, row);
				}
			}
	}
	return true;
}

/* Transport action "shard_stats": every shard slot of this node. */
static bool
shard_stats_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	int			i;

	for (i = 0; i < SeShmem->nslots; i++)
	{
		SeShardSlot *sl = &SeSlots[i];

		if (sl->state == SE_SLOT_FREE)
			continue;
		se_put_str(reply, sl->index_uuid, strlen(sl->index_uuid));
		se_put_vint(reply, (uint64) sl->shard);
		se_put_vint(reply, (uint64) sl->state);
		se_put_vint(reply, pg_atomic_read_u64(&sl->docs_count));
		se_put_vint(reply, pg_atomic_read_u64(&sl->store_bytes));
		se_put_vint(reply, (uint64) sl->owner);
		se_put_vint(reply, pg_atomic_read_u64(&sl->docs_deleted));
	}
	return true;
}

void
se_cat_register_actions(void)
{
	se_transport_register("shard_stats", shard_stats_action);
	se_transport_register("shard_segments", shard_segments_action);
}

typedef SeShardView ShardStat;

/*
 * The slots of the other nodes that hold shards of targets (one request
 * per node, all at once); a node that does not answer leaves its shards
 * UNASSIGNED in the table, as ES's _cat shows what it cannot reach.
 */
List *
se_remote_shard_stats(List *targets)
{
	List	   *nodes = NIL;
	List	   *stats = NIL;
	ListCell   *lc;
	SeTransportCall *calls;
	int			k = 0;
	int			i;

	nodes = se_state_copy_nodes_elsewhere(targets);
	if (nodes == NIL)
		return NIL;
	calls = palloc0(sizeof(SeTransportCall) * list_length(nodes));
	foreach(lc, nodes)
	{
		calls[k].node = lfirst(lc);
		calls[k].conninfo = se_cluster_conninfo(calls[k].node);
		calls[k].action = "shard_stats";
		k++;
	}
	se_transport_call_each(calls, k, 10000);
	for (i = 0; i < k; i++)
	{
		SeWireReader r;

		if (!calls[i].ok)
			continue;
		se_wire_init(&r, calls[i].reply.data, calls[i].reply.len);
		while (r.p < r.end && !r.bad)
		{
			ShardStat  *st = palloc0(sizeof(ShardStat));

			st->node = calls[i].node;
			st->uuid = se_wire_str(&r, NULL);
			st->shard = (int) se_wire_vint(&r);
			st->state = (SeSlotState) se_wire_vint(&r);
			st->docs = se_wire_vint(&r);
			st->bytes = se_wire_vint(&r);
			st->owner = (int) se_wire_vint(&r);
			st->deleted = se_wire_vint(&r);
			if (!r.bad && st->uuid)
				stats = lappend(stats, st);
		}
	}
	return stats;
}

/*
 * The copy of shard s of im on node as that node has it: this node's
 * slot, or what node reported in remote (se_remote_shard_stats); false
 * when nobody has it.
 */
bool
se_shard_copy_view(const SeIndexMeta *im, int s, const char *node, List *remote,
				   SeShardView *out)
{
	ListCell   *lr;

	if (im->routing == NULL || strcmp(node, se_cluster_node_name()) == 0)
	{
		int			slot = se_slot_find(im->uuid, s);

		if (slot < 0)
			return false;
		out->node = se_node_name_get();
		out->uuid = (char *) im->uuid;
		out->shard = s;
		out->state = SeSlots[slot].state;
		out->docs = pg_atomic_read_u64(&SeSlots[slot].docs_count);
		out->deleted = pg_atomic_read_u64(&SeSlots[slot].docs_deleted);
		/* store size: segment files only, as ES reports it */
		out->bytes = pg_atomic_read_u64(&SeSlots[slot].store_bytes);
		out->owner = SeSlots[slot].owner;
		return true;
	}
	foreach(lr, remote)
	{
		SeShardView *r = lfirst(lr);

		if (r->shard == s && strcmp(r->uuid, im->uuid) == 0 && strcmp(r->node, node) == 0)
		{
			*out = *r;
			return true;
		}
	}
	return false;
}

/* The primary of shard s of im as its node has it (see above). */
bool
se_shard_view(const SeIndexMeta *im, int s, List *remote, SeShardView *out)
{
	return se_shard_copy_view(im, s, im->routing ? im->routing[s].copies[0].node : "",
							  remote, out);
}

/*
 * ES _cat/shards: one row per shard copy (p: the primary, r: a replica),
 * with the write worker that owns it on its node (an extension column).
 * A single node lists its primaries only (it has no routing: its
 * replicas are never allocated).
 */
static bool
collect_shards(const char *expr, CatTable *t, bool raw_bytes, SeError *err)
{
	static const char *cols[] = {"index", "shard", "prirep", "state", "docs", "store",
	"ip", "node", "write_worker"};
	static const char *const aliases[] = {"i,idx", "s,sh", "p,pr,primaryOrReplica",
		"st", "d,dc", "sto", NULL, "n", NULL};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	List	   *targets = cat_begin(t, cols, aliases, lengthof(cols), expr, false, err);
	SeClusterView *v = palloc(sizeof(SeClusterView));
	List	   *remote;
	ListCell   *lc;

	if (se_error_is_set(err))
		return false;
	se_cluster_view(v);
	remote = se_remote_shard_stats(targets);
	foreach(lc, targets)
	{
		SeIndexMeta *im = lfirst(lc);
		int			s,
					k;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			int			ncopies = im->routing ? im->routing[s].ncopies : 1;

			for (k = 0; k < ncopies; k++)
			{
				char	  **row = palloc0(sizeof(char *) * t->ncols);
				const char *node = im->routing ? im->routing[s].copies[k].node : se_node_name_get();
				SeShardState state = im->routing ? im->routing[s].copies[k].state
					: se_state_shard_state(im, s);
				ShardStat	view;
				ShardStat  *st = state != SE_SHARD_UNASSIGNED &&
					se_shard_copy_view(im, s, node, remote, &view) ? &view : NULL;

				row[0] = im->name;
				row[1] = psprintf("%d", s);
				row[2] = k == 0 ? "p" : "r";
				row[3] = (char *) se_shard_state_name(state);
				if (st && st->state == SE_SLOT_STARTED && state == SE_SHARD_STARTED)
				{
					row[4] = psprintf(UINT64_FORMAT, st->docs);
					row[5] = raw_bytes ? psprintf(UINT64_FORMAT, st->bytes) : cat_bytes(t, st->bytes);
				}
				if (state != SE_SHARD_UNASSIGNED)
				{
					row[6] = (char *) node_host(v, node);
					row[7] = (char *) node;
					if (st)
						row[8] = psprintf("%d", st->owner);
				}
				t->rows = lappend(t->rows, row);
				if (im->routing && se_routing_relocating(&im->routing[s].copies[k]))
				{
					/* ES: "n1 -> ip id n2", and a row for the target */
					const char *to = im->routing[s].copies[k].relocating_node;
					char	  **trow = palloc0(sizeof(char *) * t->ncols);

					row[3] = "RELOCATING";
					row[7] = psprintf("%s -> %s %s %s", node, node_host(v, to), to, to);
					trow[0] = im->name;
					trow[1] = row[1];
					trow[2] = row[2];
					trow[3] = (char *) se_shard_state_name(SE_SHARD_INITIALIZING);
					trow[6] = (char *) node_host(v, to);
					trow[7] = (char *) to;
					t->rows = lappend(t->rows, trow);
				}
			}
		}
	}
	return true;
}

/*
 * ES _cat/allocation: per data node the shard copies the routing puts on
 * it, their bytes (disk.indices) and the node's disk; a last row counts
 * the unassigned copies.  Shards of every index count (node figures, as
 * ES's cluster monitor API), though only administrators see the rows.
 */
static bool
collect_allocation(CatTable *t, const SeClusterView *v, bool raw_bytes, SeError *err)
{
	static const char *cols[] = {"shards", "disk.indices", "disk.used", "disk.avail",
	"disk.total", "disk.percent", "host", "ip", "node", "node.role"};
	static const char *const aliases[] = {"s", "di,diskIndices", "du,diskUsed",
		"da,diskAvail", "dt,diskTotal", "dp,diskPercent", "h", NULL, "n",
		"r,role,nodeRole"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	const SeClusterState *st = se_state_current();
	List	   *all = NIL;
	List	   *remote;
	int		   *shards = palloc0(sizeof(int) * (v->nmembers + 1));
	uint64	   *bytes = palloc0(sizeof(uint64) * (v->nmembers + 1));
	int			unassigned = 0;
	int			i,
				s,
				c,
				k;

	if (!se_acl_cluster_manage_check("cluster:monitor/allocation", err))
		return false;
	t->ncols = lengthof(cols);
	t->cols = cols;
	t->aliases = aliases;
	t->rows = NIL;
	t->defaults = NULL;
	for (i = 0; i < st->nindices; i++)
		all = lappend(all, st->indices[i]);
	remote = se_remote_shard_stats(all);
	for (i = 0; i < st->nindices; i++)
	{
		const SeIndexMeta *im = st->indices[i];

		for (s = 0; s < im->settings.number_of_shards; s++)
			for (c = 0; c < (im->routing ? im->routing[s].ncopies : 1); c++)
			{
				const char *node = im->routing ? im->routing[s].copies[c].node : v->local_name;
				SeShardState state = im->routing ? im->routing[s].copies[c].state
					: se_state_shard_state(im, s);
				SeShardView view;

				if (state == SE_SHARD_UNASSIGNED || node[0] == '\0')
				{
					/* a closed index's copies hold no slot on one node: not unassigned */
					if (im->routing || !im->closed)
						unassigned++;
					continue;
				}
				for (k = 0; k < v->nmembers; k++)
					if (strcmp(v->members[k].name, node) == 0)
						break;
				shards[k]++;
				if (!im->closed && se_shard_copy_view(im, s, node, remote, &view))
					bytes[k] += view.bytes;
			}
	}
	for (k = 0; k < v->nmembers; k++)
	{
		const SeClusterMember *m = &v->members[k];
		char	  **row;
		int64		used = m->disk_total_bytes - m->disk_free_bytes;

		if (!(m->roles & SE_NODE_ROLE_DATA))
			continue;
		row = palloc0(sizeof(char *) * t->ncols);
		row[0] = psprintf("%d", shards[k]);
		row[1] = raw_bytes ? psprintf(UINT64_FORMAT, bytes[k]) : cat_bytes(t, bytes[k]);
		if (m->disk_total_bytes > 0)
		{
			row[2] = raw_bytes ? psprintf(INT64_FORMAT, used) : cat_bytes(t, used);
			row[3] = raw_bytes ? psprintf(INT64_FORMAT, m->disk_free_bytes) : cat_bytes(t, m->disk_free_bytes);
			row[4] = raw_bytes ? psprintf(INT64_FORMAT, m->disk_total_bytes) : cat_bytes(t, m->disk_total_bytes);
			row[5] = psprintf("%d", (int) (100 * used / m->disk_total_bytes));
		}
		row[6] = row[7] = (char *) se_conninfo_host(m->conninfo);
		row[8] = pstrdup(m->name);
		row[9] = se_node_roles_letters(m->roles);
		t->rows = lappend(t->rows, row);
	}
	if (unassigned > 0)
	{
		char	  **row = palloc0(sizeof(char *) * t->ncols);

		row[0] = psprintf("%d", unassigned);
		row[8] = "UNASSIGNED";
		t->rows = lappend(t->rows, row);
	}
	return true;
}

/*
 * ES _cat/nodes: one row per member of the applied cluster view (the one
 * node on a single-node cluster).
 */
static void
collect_nodes(CatTable *t, const SeClusterView *v, bool full_id)
{
	static const char *cols[] = {"id", "ip", "disk.total", "disk.used", "disk.avail",
	"disk.used_percent", "node.role", "master", "name"};
	static const char *const aliases[] = {"id,nodeId", "i", "dt,diskTotal",
		"du,diskUsed", "d,da,disk,diskAvail", "dup,diskUsedPercent", "r,role,nodeRole",
		"m", "n"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	int			i;

	t->ncols = lengthof(cols);
	t->cols = cols;
	t->aliases = aliases;
	t->rows = NIL;
	t->defaults = "ip,node.role,master,name";
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];
		char	  **row = palloc0(sizeof(char *) * t->ncols);
		int64		used = m->disk_total_bytes - m->disk_free_bytes;

		row[0] = full_id ? pstrdup(m->ephemeral_id) : pnstrdup(m->ephemeral_id, 4);
		row[1] = (char *) se_conninfo_host(m->conninfo);
		if (m->disk_total_bytes > 0)
		{
			row[2] = cat_bytes(t, m->disk_total_bytes);
			row[3] = cat_bytes(t, used);
			row[4] = cat_bytes(t, m->disk_free_bytes);
			row[5] = psprintf("%.2f", 100.0 * used / m->disk_total_bytes);
		}
		row[6] = se_node_roles_letters(m->roles);
		row[7] = strcmp(m->ephemeral_id, v->master_ephemeral_id) == 0 ? "*" : "-";
		row[8] = pstrdup(m->name);
		t->rows = lappend(t->rows, row);
	}
}

/* ES _cat/master: the elected master; 503 when this node knows none. */
static bool
collect_master(CatTable *t, const SeClusterView *v, SeError *err)
{
	static const char *cols[] = {"id", "host", "ip", "node"};
	static const char *const aliases[] = {NULL, "h", NULL, "n"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	char	  **row = palloc0(sizeof(char *) * lengthof(cols));
	const char *host = NULL;
	int			i;

	t->ncols = lengthof(cols);
	t->cols = cols;
	t->aliases = aliases;
	t->defaults = NULL;
	if (v->master[0] == '\0')
	{
		se_error_set(err, 503, "master_not_discovered_exception",
					 "no master is known to node [%s]", v->local_name);
		return false;
	}
	for (i = 0; i < v->nmembers; i++)
		if (strcmp(v->members[i].ephemeral_id, v->master_ephemeral_id) == 0)
			host = se_conninfo_host(v->members[i].conninfo);
	row[0] = pstrdup(v->master_ephemeral_id);
	row[1] = row[2] = (char *) (host ? host : "");
	row[3] = pstrdup(v->master);
	t->rows = list_make1(row);
	return true;
}

/* Is column col in the comma list (entries may use '*' wildcards)? */
static bool
column_listed(const char *list, const char *col)
{
	char	   *copy = pstrdup(list);
	char	   *save = NULL;
	char	   *tok;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (se_wildcard_match(tok, col))
			return true;
	return false;
}

/* Is name one of the comma list's entries (no wildcards)? */
static bool
column_listed_exact(const char *list, const char *name)
{
	size_t		n = strlen(name);
	const char *p = list;

	for (;;)
	{
		const char *e = strchr(p, ',');
		size_t		len = e ? (size_t) (e - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		if (e == NULL)
			return false;
		p = e + 1;
	}
}

/*
 * The column name or alias names in t (-1: none).  A name wins over an
 * alias; of two columns sharing an alias (ES's _cat/health gives "t" to
 * epoch and shards) the later one wins, as ES's Table.getAliasMap fills
 * its map in column order.
 */
static int
cat_column_find(const CatTable *t, const char *name)
{
	int			found = -1;
	int			i;

	for (i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], name) == 0)
			return i;
	for (i = 0; t->aliases && i < t->ncols; i++)
		if (t->aliases[i] && column_listed_exact(t->aliases[i], name))
			found = i;
	return found;
}

/*
 * Keep the columns h names, in h's order, or without h the table's
 * default columns.  An entry is a column's name or one of its aliases
 * (headed as written, as ES's RestTable shows the alias asked for), else
 * a '*' pattern over the names; entries naming no column are skipped, as
 * ES's RestTable does.
 */
static void
cat_select(CatTable *t, const char *h)
{
	int		   *pick = palloc(sizeof(int) * t->ncols * 2 + 1);
	const char **heads = palloc(sizeof(char *) * (t->ncols * 2 + 1));
	int			npick = 0;
	ListCell   *lc;
	int			i;

	if (h == NULL && t->defaults == NULL)
		return;
	if (h != NULL)
	{
		char	   *copy = pstrdup(h);
		char	   *save = NULL;
		char	   *tok;

		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			int			c = strchr(tok, '*') ? -1 : cat_column_find(t, tok);

			if (c >= 0 && npick < t->ncols * 2)
			{
				heads[npick] = tok;
				pick[npick++] = c;
				continue;
			}
			for (i = 0; i < t->ncols && npick < t->ncols * 2; i++)
				if (se_wildcard_match(tok, t->cols[i]))
				{
					heads[npick] = t->cols[i];
					pick[npick++] = i;
				}
		}
	}
	else
		for (i = 0; i < t->ncols; i++)
			if (column_listed(t->defaults, t->cols[i]))
			{
				heads[npick] = t->cols[i];
				pick[npick++] = i;
			}
	foreach(lc, t->rows)
	{
		char	  **row = lfirst(lc);
		char	  **out = palloc0(sizeof(char *) * Max(npick, 1));

		for (i = 0; i < npick; i++)
			out[i] = row[pick[i]];
		lfirst(lc) = out;
	}
	t->cols = heads;
	t->aliases = NULL;
	t->ncols = npick;
}

/* The sort keys of ?s= (column index, descending), for cat_row_cmp */
typedef struct CatSortKey
{
	int			col;
	bool		desc;
} CatSortKey;

static CatSortKey *cat_sort_keys;
static int	cat_nsort_keys;

/*
 * A cell as a number, for ?s=: plain, a human byte size ("1.2kb", in
 * bytes), a time ("250ms", "1.5s", in ms) or a percentage ("99.5%"); *kind
 * says which (cells of different kinds compare as strings).  ES sorts
 * these columns by the value behind the text, so "900b" < "1.2kb" < "3mb".
 */
static bool
cat_cell_number(const char *x, double *v, int *kind)
{
	static const struct
	{
		const char *unit;
		int			kind;
		double		scale;
	}			units[] = {
		{"", 0, 1}, {"%", 1, 1},
		{"b", 2, 1}, {"kb", 2, 1024.0}, {"mb", 2, 1048576.0},
		{"gb", 2, 1073741824.0}, {"tb", 2, 1099511627776.0},
		{"pb", 2, 1125899906842624.0},
		{"nanos", 3, 1e-6}, {"micros", 3, 1e-3}, {"ms", 3, 1}, {"s", 3, 1e3},
		{"m", 3, 6e4}, {"h", 3, 3.6e6}, {"d", 3, 8.64e7},
	};
	char	   *e;
	int			i;

	if (*x == '\0')
		return false;
	*v = strtod(x, &e);
	if (e == x)
		return false;
	for (i = 0; i < lengthof(units); i++)
		if (strcmp(e, units[i].unit) == 0)
		{
			*v *= units[i].scale;
			*kind = units[i].kind;
			return true;
		}
	return false;
}

/*
 * Two rows in ?s= order: per key, numbers as numbers (both cells parse
 * whole as numbers of one kind: cat_cell_number), other cells as
 * strings, an empty cell first.  list_sort's comparator takes no
 * argument, hence the keys in statics.
 */
static int
cat_row_cmp(const ListCell *a, const ListCell *b)
{
	char	  **ra = lfirst(a);
	char	  **rb = lfirst(b);
	int			k;

	for (k = 0; k < cat_nsort_keys; k++)
	{
		const char *x = ra[cat_sort_keys[k].col];
		const char *y = rb[cat_sort_keys[k].col];
		double		dx,
					dy;
		int			kx,
					ky;
		int			c;

		if (x == NULL || y == NULL)
			c = (x != NULL) - (y != NULL);
		else if (cat_cell_number(x, &dx, &kx) && cat_cell_number(y, &dy, &ky) && kx == ky)
			c = (dx > dy) - (dx < dy);
		else
			c = strcmp(x, y);
		if (c != 0)
			return cat_sort_keys[k].desc ? -c : c;
	}
	return 0;
}

/*
 * ?s=col[:asc|:desc],...: sort the rows by any of the table's columns
 * (shown or not), as ES's _cat does; an unknown column is ES's 400.
 */
static bool
cat_sort(CatTable *t, const char *s, SeError *err)
{
	char	   *copy;
	char	   *save = NULL;
	char	   *tok;
	int			n = 0;

	if (s == NULL || t->rows == NIL)
		return true;
	copy = pstrdup(s);
	cat_sort_keys = palloc(sizeof(CatSortKey) * (strlen(s) / 2 + 1));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *colon = strchr(tok, ':');
		int			i;

		cat_sort_keys[n].desc = false;
		if (colon)
		{
			*colon = '\0';
			if (strcmp(colon + 1, "desc") == 0)
				cat_sort_keys[n].desc = true;
			else if (strcmp(colon + 1, "asc") != 0)
			{
				se_error_set(err, 400, "illegal_argument_exception",
							 "Unsupported sort order [%s] for column [%s]", colon + 1, tok);
				return false;
			}
		}
		i = cat_column_find(t, tok);
		if (i < 0)
		{
			se_error_set(err, 400, "unsupported_operation_exception",
						 "Unable to sort by unknown sort key `%s`", tok);
			return false;
		}
		cat_sort_keys[n++].col = i;
	}
	cat_nsort_keys = n;
	list_sort(t->rows, cat_row_cmp);
	return true;
}

/* What a column holds, for ?help (ES's descriptions; none for the rest). */
static const char *
cat_column_help(const char *col)
{
	static const char *const help[][2] = {
		{"health", "current health status"}, {"status", "open/close status"},
		{"index", "index name"}, {"uuid", "index uuid"}, {"pri", "number of primary shards"},
		{"rep", "number of replica shards"}, {"docs.count", "available docs"},
		{"docs.deleted", "deleted docs"}, {"store.size", "store size of primaries & replicas"},
		{"pri.store.size", "store size of primaries"}, {"node_name", "node name"},
		{"name", "name"}, {"threads", "number of threads"}, {"active", "number of active threads"},
		{"queue", "number of tasks currently in queue"}, {"queue_size", "maximum number of tasks permitted in queue"},
		{"rejected", "number of rejected tasks"}, {"completed", "number of completed tasks"},
		{"shard", "shard name"}, {"prirep", "primary or replica"}, {"ip", "ip address"},
		{"segment", "segment name"}, {"generation", "segment generation"},
		{"size", "segment size in bytes"}, {"committed", "is segment committed"},
		{"searchable", "is segment searched"}, {"version", "version"},
		{"compound", "is segment compound"}, {"state", "shard state"}, {"docs", "number of docs in shard"},
		{"store", "store size of shard (how much disk it uses)"}, {"node", "name of node where it lives"},
		{"shards", "number of shards on node"}, {"disk.indices", "disk used by ES indices"},
		{"disk.used", "disk used (total, not just ES)"}, {"disk.avail", "disk available"},
		{"disk.total", "total capacity of all volumes"}, {"disk.percent", "percent disk used"},
		{"host", "host name"}, {"node.role", "node roles"}, {"id", "node id"},
		{"disk.used_percent", "used disk ratio"}, {"master", "*:current master"},
		{"epoch", "seconds since 1970-01-01 00:00:00"}, {"timestamp", "time in HH:MM:SS"},
		{"cluster", "cluster name"}, {"node.total", "total number of nodes"},
		{"node.data", "number of nodes that can store data"}, {"relo", "number of relocating nodes"},
		{"init", "number of initializing nodes"}, {"unassign", "number of unassigned shards"},
		{"pending_tasks", "number of pending tasks"}, {"max_task_wait_time", "wait time of longest task pending"},
		{"active_shards_percent", "active number of shards in percent"}, {"count", "the document count"},
		{"index_patterns", "template index patterns"}, {"order", "template application order/priority number"},
		{"composed_of", "component templates comprising index template"},
		{"type", "recovery type"}, {"stage", "recovery stage"}, {"time", "recovery time"},
	};
	int			i;

	for (i = 0; i < lengthof(help); i++)
		if (strcmp(help[i][0], col) == 0)
			return help[i][1];
	return "";
}

/* ?help: every column, one a line, as ES's "name | aliases | description" */
static void
cat_help(const CatTable *t, SeResponse *r)
{
	int			w = 0,
				wa = 0,
				i;

	for (i = 0; i < t->ncols; i++)
	{
		w = Max(w, (int) strlen(t->cols[i]));
		if (t->aliases && t->aliases[i])
			wa = Max(wa, (int) strlen(t->aliases[i]));
	}
	for (i = 0; i < t->ncols; i++)
		appendStringInfo(&r->body, "%-*s | %-*s | %s\n", w, t->cols[i], wa,
						 t->aliases && t->aliases[i] ? t->aliases[i] : "",
						 cat_column_help(t->cols[i]));
	r->is_text = true;
}

/* ES _cat output: aligned text (header with v) or a JSON array of objects. */
static bool
cat_format(CatTable *t, const SeCatParams *p, SeResponse *r, SeError *err)
{
	StringInfo	out = &r->body;
	bool		header = p->v;
	ListCell   *lc;
	int			i;

	if (p->help)
	{
		cat_help(t, r);
		return true;
	}
	if (!cat_sort(t, p->s, err))
		return false;
	cat_select(t, p->h);
	r->is_text = !p->json;
	if (p->json)
	{
		bool		first = true;

		appendStringInfoChar(out, '[');
		foreach(lc, t->rows)
		{
			char	  **row = lfirst(lc);

			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			appendStringInfoChar(out, '{');
			for (i = 0; i < t->ncols; i++)
			{
				if (i > 0)
					appendStringInfoChar(out, ',');
				se_json_write_string(out, t->cols[i], strlen(t->cols[i]));
				appendStringInfoChar(out, ':');
				if (row[i])
					se_json_write_string(out, row[i], strlen(row[i]));
				else
					appendStringInfoString(out, "null");
			}
			appendStringInfoChar(out, '}');
		}
		appendStringInfoChar(out, ']');
		return true;
	}
	{
		int		   *w = palloc0(sizeof(int) * Max(t->ncols, 1));

		for (i = 0; i < t->ncols; i++)
			w[i] = header ? strlen(t->cols[i]) : 0;
		foreach(lc, t->rows)
		{
			char	  **row = lfirst(lc);

			for (i = 0; i < t->ncols; i++)
				w[i] = Max(w[i], row[i] ? (int) strlen(row[i]) : 0);
		}
		if (header)
		{
			for (i = 0; i < t->ncols; i++)
				appendStringInfo(out, "%-*s%s", i + 1 < t->ncols ? w[i] : 0, t->cols[i],
								 i + 1 < t->ncols ? " " : "\n");
		}
		foreach(lc, t->rows)
		{
			char	  **row = lfirst(lc);

			for (i = 0; i < t->ncols; i++)
				appendStringInfo(out, "%-*s%s", i + 1 < t->ncols ? w[i] : 0, row[i] ? row[i] : "",
								 i + 1 < t->ncols ? " " : "\n");
		}
	}
	return true;
}

bool
se_op_cat_indices(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	if (!collect_indices(expr, &t, false, err))
		return false;
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_thread_pool(const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	collect_thread_pool(&t);
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_shards(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	if (!collect_shards(expr, &t, false, err))
		return false;
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_segments(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	if (!collect_segments(expr, &t, err))
		return false;
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_nodes(const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};
	SeClusterView *v = palloc(sizeof(SeClusterView));

	se_require_started();
	se_cluster_view(v);
	collect_nodes(&t, v, p->full_id);
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_allocation(const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};
	SeClusterView *v = palloc(sizeof(SeClusterView));

	se_require_started();
	se_cluster_view(v);
	if (!collect_allocation(&t, v, false, err))
		return false;
	return cat_format(&t, p, r, err);
}

bool
se_op_cat_master(const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};
	SeClusterView *v = palloc(sizeof(SeClusterView));

	se_require_started();
	se_cluster_view(v);
	if (!collect_master(&t, v, err))
		return false;
	return cat_format(&t, p, r, err);
}

/*
 * _cat/templates[/{name}]: composable and legacy templates, as ES lists
 * them (patterns and components as [a, b]; a composable one's priority in
 * the order column; no version, or a legacy one's components: null).
 */
static void
collect_templates(CatTable *t, const char *name)
{
	static const char *cols[] = {"name", "index_patterns", "order", "version", "composed_of"};
	static const char *const aliases[] = {"n", "t", "o,p", "v", "c"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	static const SeTemplateKind kinds[] = {SE_TEMPLATE_INDEX, SE_TEMPLATE_LEGACY};
	const SeClusterState *st = se_state_current();
	int			k,
				i,
				j;

	t->ncols = lengthof(cols);
	t->cols = cols;
	t->aliases = aliases;
	for (k = 0; k < lengthof(kinds); k++)
	{
		const SeJson *all = se_templates_of(st, kinds[k]);

		for (i = 0; i < all->u.o.count; i++)
		{
			const SeJson *tm = all->u.o.members[i].value;
			const char *lists[] = {"index_patterns", "composed_of"};
			char	  **row = palloc0(sizeof(char *) * lengthof(cols));
			const SeJson *v;
			int			l;

			if (name && !se_wildcard_match(name, all->u.o.members[i].key))
				continue;
			row[0] = pstrdup(all->u.o.members[i].key);
			for (l = 0; l < 2; l++)
			{
				StringInfoData s;

				initStringInfo(&s);
				appendStringInfoChar(&s, '[');
				v = se_json_get(tm, lists[l]);
				for (j = 0; v && j < v->u.a.count; j++)
					appendStringInfo(&s, "%s%s", j ? ", " : "", v->u.a.items[j]->u.s.str);
				appendStringInfoChar(&s, ']');
				row[l == 0 ? 1 : 4] = kinds[k] == SE_TEMPLATE_LEGACY && l == 1 ? NULL : s.data;
			}
			v = se_json_get(tm, kinds[k] == SE_TEMPLATE_LEGACY ? "order" : "priority");
			row[2] = v ? pnstrdup(v->u.n.text, v->u.n.len) : "0";
			v = se_json_get(tm, "version");
			row[3] = v ? pnstrdup(v->u.n.text, v->u.n.len) : NULL;
			t->rows = lappend(t->rows, row);
		}
	}
}

bool
se_op_cat_templates(const char *name, const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	collect_templates(&t, name);
	return cat_format(&t, p, r, err);
}

static void table_to_srf(FunctionCallInfo fcinfo, const CatTable *t, const int *numeric_cols);

/* The templates view: _cat/templates in SQL */
PG_FUNCTION_INFO_V1(se_sql_cat_templates);
Datum
se_sql_cat_templates(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	static const int numeric[] = {0, 0, 1, 1, 0};

	se_require_started();
	collect_templates(&t, NULL);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

/* row[0..1]: now as _cat's epoch (seconds) and timestamp (HH:MM:SS, UTC) */
static void
cat_epoch_time(char **row)
{
	int64		now = se_now_millis();
	pg_time_t	secs = (pg_time_t) (now / 1000);
	struct pg_tm *tm = pg_gmtime(&secs);

	row[0] = psprintf(INT64_FORMAT, now / 1000);
	row[1] = psprintf("%02d:%02d:%02d", tm->tm_hour, tm->tm_min, tm->tm_sec);
}

/* _cat/count[/{index}]: the documents the indices hold, as _count counts */
bool
se_op_cat_count(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err)
{
	static const char *cols[] = {"epoch", "timestamp", "count"};
	static const char *const aliases[] = {"t,time", "ts,hms,hhmmss",
		"dc,docs.count,docsCount"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	CatTable	t = {.bytes_unit = p->bytes};
	SeResponse	c;
	int64		n = 0;
	char	  **row = palloc0(sizeof(char *) * lengthof(cols));

	se_response_init(&c);
	if (!se_op_count(expr ? expr : "_all", NULL, NULL, &n, &c, err))
		return false;
	cat_epoch_time(row);
	row[2] = psprintf(INT64_FORMAT, n);
	t.ncols = lengthof(cols);
	t.cols = cols;
	t.aliases = aliases;
	t.rows = list_make1(row);
	return cat_format(&t, p, r, err);
}

/*
 * _cat/aliases[/{name}]: one row per alias and index, the indices the
 * caller may view; "*" marks a filter, "-" what is not set.
 */
bool
se_op_cat_aliases(const char *name, const SeCatParams *p, SeResponse *r, SeError *err)
{
	static const char *cols[] = {"alias", "index", "filter", "routing.index",
	"routing.search", "is_write_index"};
	static const char *const aliases[] = {"a", "i,idx", "f,fi", "ri,routingIndex",
		"rs,routingSearch", "w,isWriteIndex"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	CatTable	t = {.bytes_unit = p->bytes};
	List	   *targets = cat_begin(&t, cols, aliases, lengthof(cols), NULL, true, err);
	ListCell   *lc;

	if (se_error_is_set(err))
		return false;
	foreach(lc, targets)
	{
		const SeIndexMeta *im = lfirst(lc);
		int			k;

		for (k = 0; k < im->naliases; k++)
		{
			const SeAlias *a = &im->aliases[k];
			char	  **row;

			if (name && !se_alias_pattern_match(name, a->name))
				continue;
			row = palloc0(sizeof(char *) * lengthof(cols));
			row[0] = a->name;
			row[1] = im->name;
			row[2] = a->filter ? "*" : "-";
			row[3] = a->index_routing ? a->index_routing : "-";
			row[4] = a->search_routing ? a->search_routing : "-";
			row[5] = a->is_write_index < 0 ? "-" : (a->is_write_index ? "true" : "false");
			t.rows = lappend(t.rows, row);
		}
	}
	return cat_format(&t, p, r, err);
}

/*
 * _cat/health: the cluster health (se_op_cluster_health's answer, not
 * waiting) as one row with ES's columns -- what rsyslog's omelasticsearch
 * asks to tell the server is up before it sends.
 */
bool
se_op_cat_health(const SeCatParams *p, SeResponse *r, SeError *err)
{
	static const char *cols[] = {"epoch", "timestamp", "cluster", "status", "node.total",
		"node.data", "shards", "pri", "relo", "init", "unassign", "pending_tasks",
	"max_task_wait_time", "active_shards_percent"};
	static const char *const aliases[] = {"t,time", "ts,hms,hhmmss", "cl", "st",
		"nt,nodeTotal", "nd,nodeData", "t,sh,shards.total,shardsTotal",
		"p,shards.primary,shardsPrimary", "r,shards.relocating,shardsRelocating",
		"i,shards.initializing,shardsInitializing",
		"u,shards.unassigned,shardsUnassigned", "pt,pendingTasks",
		"mtwt,maxTaskWaitTime", "asp,activeShardsPercent"};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	static const char *fields[] = {"cluster_name", "status", "number_of_nodes",
		"number_of_data_nodes", "active_shards", "active_primary_shards", "relocating_shards",
	"initializing_shards", "unassigned_shards", "number_of_pending_tasks"};
	CatTable	t = {.bytes_unit = p->bytes};
	SeHealthWait w = {0};
	SeResponse	h;
	SeJson	   *health;
	SeJsonParseOptions opts = {0};
	char	  **row = palloc0(sizeof(char *) * lengthof(cols));
	const SeJson *pct;
	int			i;

	se_response_init(&h);
	if (!se_op_cluster_health(NULL, &w, 0, &h, err) ||
		(health = se_json_parse(h.body.data, h.body.len, &opts, err)) == NULL)
		return false;
	cat_epoch_time(row);
	for (i = 0; i < lengthof(fields); i++)
	{
		const SeJson *f = se_json_get(health, fields[i]);

		if (f && f->type == SE_JSON_STRING)
			row[2 + i] = pstrdup(f->u.s.str);
		else if (f && f->type == SE_JSON_NUMBER)
			row[2 + i] = psprintf(INT64_FORMAT, f->u.n.i);
	}
	row[12] = "-";
	pct = se_json_get(health, "active_shards_percent_as_number");
	row[13] = psprintf("%.1f%%", pct && pct->type == SE_JSON_NUMBER ? pct->u.n.d : 100.0);
	t.ncols = lengthof(cols);
	t.cols = cols;
	t.aliases = aliases;
	t.rows = list_make1(row);
	return cat_format(&t, p, r, err);
}

/* ---------- SQL views ---------- */

static void
table_to_srf(FunctionCallInfo fcinfo, const CatTable *t, const int *numeric_cols)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, t->rows)
	{
		char	  **row = lfirst(lc);
		Datum	   *values = palloc0(sizeof(Datum) * t->ncols);
		bool	   *nulls = palloc0(sizeof(bool) * t->ncols);
		int			i;

		for (i = 0; i < t->ncols; i++)
		{
			if (row[i] == NULL)
				nulls[i] = true;
			else if (numeric_cols[i] == 1)
				values[i] = Int64GetDatum(strtoll(row[i], NULL, 10));
			else if (numeric_cols[i] == 2)
				values[i] = Int32GetDatum(atoi(row[i]));
			else
				values[i] = CStringGetTextDatum(row[i]);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

PG_FUNCTION_INFO_V1(se_sql_cat_indices);
Datum
se_sql_cat_indices(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	SeError		err;
	static const int numeric[] = {0, 0, 0, 0, 2, 2, 1, 1, 1, 1};

	se_require_started();
	se_error_init(&err);
	if (!collect_indices(NULL, &t, true, &err))
		se_raise(&err);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(se_sql_cat_thread_pool);
Datum
se_sql_cat_thread_pool(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	static const int numeric[] = {0, 0, 2, 2, 2, 2, 1, 1};

	se_require_started();
	collect_thread_pool(&t);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(se_sql_cat_shards);
Datum
se_sql_cat_shards(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	SeError		err;
	static const int numeric[] = {0, 2, 0, 0, 1, 1, 0, 0, 2};

	se_require_started();
	se_error_init(&err);
	if (!collect_shards(NULL, &t, true, &err))
		se_raise(&err);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(se_sql_cat_segments);
Datum
se_sql_cat_segments(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	SeError		err;
	static const int numeric[] = {0, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};

	se_require_started();
	se_error_init(&err);
	if (!collect_segments(NULL, &t, &err))
		se_raise(&err);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

/* search_engine.nodes: the members of the applied cluster view. */
PG_FUNCTION_INFO_V1(se_sql_nodes);
Datum
se_sql_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SeClusterView *v = palloc(sizeof(SeClusterView));
	int			i;

	se_require_started();
	se_cluster_view(v);
	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];
		Datum		values[11];
		bool		nulls[11] = {0};

		values[0] = CStringGetTextDatum(m->name);
		values[1] = CStringGetTextDatum(m->ephemeral_id);
		values[2] = CStringGetTextDatum(se_node_roles_letters(m->roles));
		values[3] = BoolGetDatum(strcmp(m->ephemeral_id, v->master_ephemeral_id) == 0);
		values[4] = CStringGetTextDatum(m->attributes);
		values[5] = CStringGetTextDatum(m->conninfo);
		values[6] = CStringGetTextDatum(se_conninfo_host(m->conninfo));
		values[7] = Int64GetDatum(m->disk_total_bytes);
		values[8] = Int64GetDatum(m->disk_free_bytes);
		values[9] = TimestampTzGetDatum(time_t_to_timestamptz((pg_time_t) (m->started_at / 1000)));
		values[10] = Int64GetDatum(strcmp(m->ephemeral_id, v->master_ephemeral_id) == 0 ? v->term : 0);
		nulls[10] = values[10] == Int64GetDatum(0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---------- _cat/recovery ---------- */

static const char *const recovery_stage_names[] = {
	"free", "init", "index", "verify_index", "translog", "translog", "finalize", "done", "failed"
};

static int64
epoch_ms(TimestampTz t)
{
	return t / 1000 + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
}

static char *
human_ms(int64 ms)
{
	if (ms >= 3600000)
		return psprintf("%.1fh", ms / 3600000.0);
	if (ms >= 60000)
		return psprintf("%.1fm", ms / 60000.0);
	if (ms >= 1000)
		return psprintf("%.1fs", ms / 1000.0);
	return psprintf(INT64_FORMAT "ms", ms);
}

static char *
percent(double done, double total)
{
	return psprintf("%.1f%%", total > 0 ? 100.0 * done / total : 100.0);
}

/*
 * The peer recoveries of targets' shards as every node of the cluster
 * holds them (recovery_stats on each; a node that does not answer shows
 * none), one row per recovery the target node remembers, as ES's
 * _cat/recovery.  raw: numbers and ms for the view.
 */
static bool
collect_recovery(const char *expr, CatTable *t, bool raw, SeError *err)
{
	static const char *cols[] = {"index", "shard", "start_time", "start_time_millis",
		"stop_time", "stop_time_millis", "time", "type", "stage", "source_host",
		"source_node", "target_host", "target_node", "repository", "snapshot", "files",
		"files_recovered", "files_percent", "files_total", "bytes", "bytes_recovered",
		"bytes_percent", "bytes_total", "translog_ops", "translog_ops_recovered",
	"translog_ops_percent", "throttle_time", "attempts", "failure"};
	static const char *const aliases[] = {"i,idx", "s,sh", "start", "start_millis",
		"stop", "stop_millis", "t,ti", "ty", "st", "shost", "snode", "thost", "tnode",
		"rep", "snap", "f", "fr", "fp", "tf", "b", "br", "bp", "tb", "to", "tor", "top",
		NULL, NULL, NULL};
	StaticAssertDecl(lengthof(aliases) == lengthof(cols), "an alias entry per column");
	/* a closed index's copies are recovered too (moved, replicas built) */
	List	   *targets = cat_begin(t, cols, aliases, lengthof(cols), expr, true, err);
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeTransportCall *calls;
	StringInfoData local;
	int			ncalls = 0;
	int			i;

	if (se_error_is_set(err))
		return false;
	t->defaults = raw ? NULL : "index,shard,time,type,stage,source_host,source_node,target_host,"
		"target_node,repository,snapshot,files,files_recovered,files_percent,files_total,bytes,"
		"bytes_recovered,bytes_percent,bytes_total,translog_ops,translog_ops_recovered,"
		"translog_ops_percent";
	se_cluster_view(v);
	calls = palloc0(sizeof(SeTransportCall) * (v->nmembers + 1));
	/* this node's own table, then every other member's */
	initStringInfo(&local);
	(void) se_recovery_stats_action(NULL, 0, &local, err);
	calls[ncalls].ok = true;
	calls[ncalls].reply = local;
	ncalls++;
	{
		int			first = ncalls;

		for (i = 0; i < v->nmembers; i++)
		{
			if (strcmp(v->members[i].name, v->local_name) == 0)
				continue;
			calls[ncalls].node = v->members[i].name;
			calls[ncalls].conninfo = v->members[i].conninfo;
			calls[ncalls].action = "recovery_stats";
			ncalls++;
		}
		if (ncalls > first)
			se_transport_call_each(calls + first, ncalls - first, 10000);
	}
	for (i = 0; i < ncalls; i++)
	{
		SeWireReader rd;
		SeRecovery	rec;

		if (!calls[i].ok)
			continue;
		se_wire_init(&rd, calls[i].reply.data, calls[i].reply.len);
		while (se_recovery_stats_read(&rd, &rec))
		{
			SeIndexMeta *im = NULL;
			ListCell   *lc;
			char	  **row;
			TimestampTz end = rec.stop_time ? rec.stop_time : GetCurrentTimestamp();
			int64		ops_total = rec.ops_total >= 0 ? rec.ops_total : rec.ops_recovered;
			bool		finished = rec.stage == SE_REC_DONE || rec.stage == SE_REC_FAILED;

			foreach(lc, targets)
				if (strcmp(((SeIndexMeta *) lfirst(lc))->uuid, rec.index_uuid) == 0)
					im = lfirst(lc);
			if (im == NULL || rec.stage <= SE_REC_FREE || rec.stage > SE_REC_FAILED)
				continue;
			row = palloc0(sizeof(char *) * lengthof(cols));
			row[0] = im->name;
			row[1] = psprintf("%d", rec.shard);
			row[2] = pstrdup(timestamptz_to_str(rec.start_time));
			row[3] = psprintf(INT64_FORMAT, epoch_ms(rec.start_time));
			row[4] = finished ? pstrdup(timestamptz_to_str(rec.stop_time)) : NULL;
			row[5] = finished ? psprintf(INT64_FORMAT, epoch_ms(rec.stop_time)) : NULL;
			row[6] = raw ? psprintf(INT64_FORMAT, (int64) ((end - rec.start_time) / 1000))
				: human_ms((end - rec.start_time) / 1000);
			row[7] = "peer";
			row[8] = (char *) recovery_stage_names[rec.stage];
			row[9] = (char *) node_host(v, rec.source_node);
			row[10] = pstrdup(rec.source_node);
			row[11] = (char *) node_host(v, rec.target_node);
			row[12] = pstrdup(rec.target_node);
			row[13] = "n/a";
			row[14] = "n/a";
			row[15] = psprintf("%d", rec.files_to_recover);
			row[16] = psprintf("%d", rec.files_recovered);
			row[17] = percent(rec.files_recovered, rec.files_to_recover);
			row[18] = psprintf("%d", rec.files_total);
			row[19] = raw ? psprintf(UINT64_FORMAT, rec.bytes_to_recover) : cat_bytes(t, rec.bytes_to_recover);
			row[20] = raw ? psprintf(UINT64_FORMAT, rec.bytes_recovered) : cat_bytes(t, rec.bytes_recovered);
			row[21] = percent(rec.bytes_recovered, rec.bytes_to_recover);
			row[22] = raw ? psprintf(UINT64_FORMAT, rec.bytes_total) : cat_bytes(t, rec.bytes_total);
			row[23] = psprintf(INT64_FORMAT, ops_total);
			row[24] = psprintf(INT64_FORMAT, rec.ops_recovered);
			row[25] = percent(rec.ops_recovered, ops_total);
			row[26] = raw ? psprintf(UINT64_FORMAT, rec.throttle_ms) : human_ms(rec.throttle_ms);
			row[27] = psprintf("%d", rec.attempts);
			row[28] = rec.failure[0] ? pstrdup(rec.failure) : NULL;
			t->rows = lappend(t->rows, row);
		}
	}
	return true;
}

bool
se_op_cat_recovery(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err)
{
	CatTable	t = {.bytes_unit = p->bytes};

	se_require_started();
	if (!collect_recovery(expr, &t, false, err))
		return false;
	return cat_format(&t, p, r, err);
}

PG_FUNCTION_INFO_V1(se_sql_cat_allocation);
Datum
se_sql_cat_allocation(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	SeError		err;
	SeClusterView *v = palloc(sizeof(SeClusterView));
	static const int numeric[] = {2, 1, 1, 1, 1, 2, 0, 0, 0, 0};

	se_require_started();
	se_error_init(&err);
	se_cluster_view(v);
	if (!collect_allocation(&t, v, true, &err))
		se_raise(&err);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(se_sql_cat_recovery);
Datum
se_sql_cat_recovery(PG_FUNCTION_ARGS)
{
	CatTable	t = {0};
	SeError		err;
	static const int numeric[] = {0, 2, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 2,
	1, 1, 0, 1, 1, 1, 0, 1, 2, 0};

	se_require_started();
	se_error_init(&err);
	if (!collect_recovery(NULL, &t, true, &err))
		se_raise(&err);
	table_to_srf(fcinfo, &t, numeric);
	return (Datum) 0;
}
