/*-------------------------------------------------------------------------
 *
 * allocator.c
 *	  Balanced shard allocation with deciders, as Elasticsearch's
 *	  BalancedShardsAllocator and AllocationDeciders (see allocator.h).
 *
 * Pure: everything is in the model the caller hands over.  Deciders are
 * small functions of (model, copy, node) that read the model's
 * bookkeeping; they return a decision and, when an explain buffer is
 * given, append their verdict with its reason.  Without one (the reroute)
 * the first NO ends the evaluation, as ES does outside debug mode.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "cluster/allocator.h"
#include "util/json.h"
#include "util/match.h"

static void count_awareness_values(SeAllocModel *m);

/* an explain buffer: verdicts of one (copy, node) evaluation */
typedef struct Explain
{
	int			n;
	int			cap;
	SeAllocVerdict *v;
} Explain;

static void
verdict(Explain *ex, const char *decider, SeDecisionType t, const char *fmt,...)
pg_attribute_printf(4, 5);

static void
verdict(Explain *ex, const char *decider, SeDecisionType t, const char *fmt,...)
{
	va_list		ap;
	StringInfoData buf;

	if (ex == NULL)
		return;
	if (ex->n == ex->cap)
	{
		ex->cap = ex->cap ? ex->cap * 2 : 16;
		ex->v = ex->v ? repalloc(ex->v, sizeof(SeAllocVerdict) * ex->cap)
			: palloc(sizeof(SeAllocVerdict) * ex->cap);
	}
	initStringInfo(&buf);
	for (;;)
	{
		int			needed;

		va_start(ap, fmt);
		needed = appendStringInfoVA(&buf, fmt, ap);
		va_end(ap);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	ex->v[ex->n].decider = decider;
	ex->v[ex->n].type = t;
	ex->v[ex->n].explanation = buf.data;
	ex->n++;
}

const char *
se_copy_state_name(SeCopyState s)
{
	switch (s)
	{
		case SE_COPY_UNASSIGNED:
			return "UNASSIGNED";
		case SE_COPY_INITIALIZING:
			return "INITIALIZING";
		case SE_COPY_STARTED:
			return "STARTED";
		case SE_COPY_RELOCATING:
			return "RELOCATING";
	}
	return "UNASSIGNED";
}

const char *
se_decision_name(SeDecisionType d)
{
	return d == SE_DECISION_YES ? "YES" : d == SE_DECISION_THROTTLE ? "THROTTLE" : "NO";
}

void
se_alloc_settings_default(SeAllocSettings *s)
{
	memset(s, 0, sizeof(*s));
	s->balance_shard = 0.45f;
	s->balance_index = 0.55f;
	s->threshold = 1.0f;
	s->enable = SE_ALLOC_ENABLE_ALL;
	s->rebalance_enable = SE_REBALANCE_ALL;
	s->cluster_concurrent_rebalance = 2;
	s->node_concurrent_incoming_recoveries = 2;
	s->node_concurrent_outgoing_recoveries = 2;
	s->node_initial_primaries_recoveries = 4;
	s->total_shards_per_node = -1;
	s->disk_threshold_enabled = true;
	s->low_used = 0.85;
	s->high_used = 0.90;
	s->flood_used = 0.95;
}

/* ---------------------------------------------------------------------
 * Bookkeeping
 * ---------------------------------------------------------------------
 */

#define NIS(m, node, index) ((m)->node_index_shards[(size_t) (index) * (m)->nnodes + (node)])

/*
 * A closed index's primary is placed (or comes back) where its data is
 * and is STARTED at once: nothing recovers it, so it is no recovery to
 * count or throttle.  A closed index's replica or moving copy is a
 * recovery like any other: its files are copied from the primary's
 * directory (replication/recovery_source.c), throttled alike.
 */
static inline bool
closed_primary(const SeAllocModel *m, const SeAllocCopy *c)
{
	return m->indices[c->index].closed && c->primary;
}

/* the node a copy counts on for balance: a relocation's target */
static inline int
owning_node(const SeAllocCopy *c)
{
	if (c->state == SE_COPY_RELOCATING)
		return c->relocating_node;
	return c->node;
}

#ifdef SE_ALLOC_SCAN_NODE_SHARDS
/*
 * Benchmark-only build (bench/allocator_bench.sh): the deciders count a
 * node's initializing and relocating copies by walking the node's copies
 * on every decision, as Elasticsearch did before 7.5 -- the O(n^2) reroute
 * the bookkeeping replaces.  Never compiled into the extension.
 */
static int *scan_list;			/* copy ids grouped by node */
static int *scan_first;			/* per node: offset into scan_list */
static bool scan_dirty = true;

static void
scan_rebuild(const SeAllocModel *m)
{
	int			i,
				n;

	if (scan_list)
	{
		pfree(scan_list);
		pfree(scan_first);
	}
	scan_list = palloc(sizeof(int) * (2 * m->ncopies + 1));
	scan_first = palloc0(sizeof(int) * (m->nnodes + 1));
	for (i = 0; i < m->ncopies; i++)
	{
		if (m->copies[i].node >= 0)
			scan_first[m->copies[i].node + 1]++;
		if (m->copies[i].relocating_node >= 0)
			scan_first[m->copies[i].relocating_node + 1]++;
	}
	for (n = 0; n < m->nnodes; n++)
		scan_first[n + 1] += scan_first[n];
	{
		int		   *fill = palloc(sizeof(int) * (m->nnodes + 1));

		memcpy(fill, scan_first, sizeof(int) * (m->nnodes + 1));
		for (i = 0; i < m->ncopies; i++)
		{
			if (m->copies[i].node >= 0)
				scan_list[fill[m->copies[i].node]++] = i;
			if (m->copies[i].relocating_node >= 0)
				scan_list[fill[m->copies[i].relocating_node]++] = i;
		}
		pfree(fill);
	}
	scan_dirty = false;
}

static const SeAllocNodeCounts *
node_counts(const SeAllocModel *m, int node)
{
	static SeAllocNodeCounts k;
	int			j;

	if (scan_dirty)
		scan_rebuild(m);
	memset(&k, 0, sizeof(k));
	for (j = scan_first[node]; j < scan_first[node + 1]; j++)
	{
		const SeAllocCopy *c = &m->copies[scan_list[j]];

		if (c->state == SE_COPY_INITIALIZING)
		{
			k.shards++;
			if (!closed_primary(m, c))
			{
				k.initializing++;
				if (c->primary)
					k.initial_primaries++;
			}
		}
		else if (c->state == SE_COPY_STARTED)
			k.shards++;
		else if (c->state == SE_COPY_RELOCATING && c->node == node)
		{
			k.relocating_out++;
			k.bytes_out += c->size_bytes;
		}
		else if (c->state == SE_COPY_RELOCATING)
		{
			k.initializing++;
			k.bytes_in += c->size_bytes;
			k.shards++;
		}
	}
	return &k;
}
#define NOTE_CHANGED() (scan_dirty = true)
#else
#define node_counts(m, node) (&(m)->counts[node])
#define NOTE_CHANGED() ((void) 0)
#endif

/* add (sign +1) or remove (-1) a copy's contribution to the counts */
static void
account(SeAllocModel *m, const SeAllocCopy *c, int sign)
{
	int			own = owning_node(c);

	switch (c->state)
	{
		case SE_COPY_UNASSIGNED:
			m->unassigned += sign;
			return;
		case SE_COPY_INITIALIZING:
			/* a closed index's primary recovers nothing: no recovery to count */
			if (closed_primary(m, c))
				break;
			m->initializing += sign;
			m->counts[c->node].initializing += sign;
			/* a primary coming back from (or created on) its own disk */
			if (c->primary)
				m->counts[c->node].initial_primaries += sign;
			break;
		case SE_COPY_STARTED:
			break;
		case SE_COPY_RELOCATING:
			m->relocations += sign;
			m->counts[c->node].relocating_out += sign;
			m->counts[c->node].bytes_out += sign * c->size_bytes;
			m->counts[c->relocating_node].initializing += sign;
			m->counts[c->relocating_node].bytes_in += sign * c->size_bytes;
			break;
	}
	m->counts[own].shards += sign;
	NIS(m, own, c->index) += sign;
}

static void
set_state(SeAllocModel *m, int id, SeCopyState state, int node, int relocating_node)
{
	SeAllocCopy *c = &m->copies[id];

	account(m, c, -1);
	c->state = state;
	c->node = node;
	c->relocating_node = relocating_node;
	account(m, c, +1);
	c->changed = true;
	NOTE_CHANGED();
}


static int
copy_cmp(const void *a, const void *b)
{
	const SeAllocCopy *x = a;
	const SeAllocCopy *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	if (x->primary != y->primary)
		return x->primary ? -1 : 1;
	/* replicas: assigned ones first, then by node, for a stable order */
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return 0;
}

static bool
validate_node_ref(const SeAllocModel *m, int node, bool allow_none, const char *what,
				  int id, SeError *err)
{
	if ((node == -1 && allow_none) || (node >= 0 && node < m->nnodes && m->nodes[node].data))
		return true;
	se_error_set(err, 400, "illegal_argument_exception",
				 "copy %d: %s %d is not a data node of the model", id, what, node);
	return false;
}

bool
se_alloc_prepare(SeAllocModel *m, SeError *err)
{
	int			i;
	int			nshards_total = 0;

	for (i = 0; i < m->ncopies; i++)
	{
		SeAllocCopy *c = &m->copies[i];

		if (c->index < 0 || c->index >= m->nindices ||
			c->shard < 0 || c->shard >= m->indices[c->index].number_of_shards)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "copy %d names no shard of the model", i);
			return false;
		}
		if (c->state == SE_COPY_UNASSIGNED)
		{
			c->node = -1;
			c->relocating_node = -1;
		}
		else if (!validate_node_ref(m, c->node, false, "node", i, err))
			return false;
		if (c->state == SE_COPY_RELOCATING)
		{
			if (!validate_node_ref(m, c->relocating_node, false, "relocating node", i, err))
				return false;
		}
		else
			c->relocating_node = -1;
		if (c->data_node >= m->nnodes)
			c->data_node = -1;
		c->changed = false;
	}
	qsort(m->copies, m->ncopies, sizeof(SeAllocCopy), copy_cmp);

	m->index_first_shard = palloc(sizeof(int) * (m->nindices + 1));
	m->index_copies = palloc0(sizeof(int) * Max(m->nindices, 1));
	for (i = 0; i < m->nindices; i++)
	{
		m->index_first_shard[i] = nshards_total;
		nshards_total += m->indices[i].number_of_shards;
	}
	m->index_first_shard[m->nindices] = nshards_total;
	/* shard_first[k] .. shard_first[k + 1]: the copies of global shard k */
	m->shard_first = palloc(sizeof(int) * (nshards_total + 1));
	{
		int			k = 0;

		for (i = 0; i < m->ncopies; i++)
		{
			int			g = m->index_first_shard[m->copies[i].index] + m->copies[i].shard;

			while (k <= g)
				m->shard_first[k++] = i;
		}
		while (k <= nshards_total)
			m->shard_first[k++] = m->ncopies;
	}
	/* at most one primary per shard */
	for (i = 1; i < m->ncopies; i++)
		if (m->copies[i].primary && m->copies[i - 1].primary &&
			m->copies[i].index == m->copies[i - 1].index &&
			m->copies[i].shard == m->copies[i - 1].shard)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[%s][%d] has two primaries", m->indices[m->copies[i].index].name,
						 m->copies[i].shard);
			return false;
		}

	m->counts = palloc0(sizeof(SeAllocNodeCounts) * Max(m->nnodes, 1));
	m->node_index_shards = palloc0(sizeof(int) * Max((size_t) m->nnodes * m->nindices, 1));
	m->ndata_nodes = 0;
	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].data)
			m->ndata_nodes++;
	count_awareness_values(m);
	m->total_copies = m->ncopies;
	m->unassigned = m->initializing = m->relocations = 0;
	for (i = 0; i < m->ncopies; i++)
	{
		account(m, &m->copies[i], +1);
		m->index_copies[m->copies[i].index]++;
	}
	m->prepared = true;
	NOTE_CHANGED();
	return true;
}

int
se_alloc_shard_copies(const SeAllocModel *m, int index, int shard, int *ncopies)
{
	int			g = m->index_first_shard[index] + shard;

	*ncopies = m->shard_first[g + 1] - m->shard_first[g];
	return m->shard_first[g];
}

bool
se_alloc_check_invariants(const SeAllocModel *m, SeError *err)
{
	SeAllocModel t = *m;
	int			i;

	t.counts = palloc0(sizeof(SeAllocNodeCounts) * Max(m->nnodes, 1));
	t.node_index_shards = palloc0(sizeof(int) * Max((size_t) m->nnodes * m->nindices, 1));
	t.unassigned = t.initializing = t.relocations = 0;
	for (i = 0; i < m->ncopies; i++)
		account(&t, &m->copies[i], +1);
	if (t.unassigned != m->unassigned || t.initializing != m->initializing ||
		t.relocations != m->relocations)
	{
		se_error_set(err, 500, "illegal_state_exception",
					 "copy counts drifted: unassigned %d/%d initializing %d/%d relocating %d/%d",
					 m->unassigned, t.unassigned, m->initializing, t.initializing,
					 m->relocations, t.relocations);
		return false;
	}
	for (i = 0; i < m->nnodes; i++)
		if (memcmp(&t.counts[i], &m->counts[i], sizeof(SeAllocNodeCounts)) != 0)
		{
			se_error_set(err, 500, "illegal_state_exception",
						 "counts of node [%s] drifted: shards %d/%d initializing %d/%d",
						 m->nodes[i].name, m->counts[i].shards, t.counts[i].shards,
						 m->counts[i].initializing, t.counts[i].initializing);
			return false;
		}
	if (memcmp(t.node_index_shards, m->node_index_shards,
			   sizeof(int) * (size_t) m->nnodes * m->nindices) != 0)
	{
		se_error_set(err, 500, "illegal_state_exception", "shards per (node, index) drifted");
		return false;
	}
	/* two copies of one shard on one node */
	for (i = 0; i < m->nindices; i++)
	{
		int			s;

		for (s = 0; s < m->indices[i].number_of_shards; s++)
		{
			int			n,
						first = se_alloc_shard_copies(m, i, s, &n),
						a,
						b;

			for (a = first; a < first + n; a++)
				for (b = a + 1; b < first + n; b++)
				{
					const SeAllocCopy *x = &m->copies[a],
							   *y = &m->copies[b];

					if (x->node >= 0 && (x->node == y->node || x->node == y->relocating_node ||
										 (x->relocating_node >= 0 &&
										  (x->relocating_node == y->node ||
										   x->relocating_node == y->relocating_node))))
					{
						se_error_set(err, 500, "illegal_state_exception",
									 "two copies of [%s][%d] on one node", m->indices[i].name, s);
						return false;
					}
				}
		}
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Deciders
 * ---------------------------------------------------------------------
 */

static const char *
node_attr(const SeAllocNode *n, const char *key)
{
	int			i;

	if (strcmp(key, "_name") == 0)
		return n->name;
	if (strcmp(key, "_host") == 0 || strcmp(key, "_ip") == 0)
		return n->host;
	if (strcmp(key, "_id") == 0)
		return n->id;
	for (i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].key, key) == 0)
			return n->attrs[i].value;
	return NULL;
}

static bool
filter_matches(const SeAllocFilter *f, const SeAllocNode *n)
{
	const char *v = node_attr(n, f->attr);
	int			i;

	if (v == NULL)
		return false;
	for (i = 0; i < f->nvalues; i++)
		if (se_wildcard_match(f->values[i], v))
			return true;
	return false;
}

/* the NO verdict of filters f[0..n) of one kind ("node matches ..." or not) */
static SeDecisionType
filter_no(Explain *ex, const char *lead, const char *scope, const char *kind,
		  const SeAllocFilter *f, int n)
{
	StringInfoData s;
	int			i,
				k;

	if (ex == NULL)
		return SE_DECISION_NO;
	initStringInfo(&s);
	appendStringInfoString(&s, lead);
	for (i = 0; i < n; i++)
	{
		appendStringInfo(&s, "%s%s.routing.allocation.%s.%s:\"", i ? " or " : "",
						 scope, kind, f[i].attr);
		for (k = 0; k < f[i].nvalues; k++)
			appendStringInfo(&s, "%s%s", k ? "," : "", f[i].values[k]);
		appendStringInfoChar(&s, '"');
	}
	verdict(ex, "filter", SE_DECISION_NO, "%s", s.data);
	return SE_DECISION_NO;
}

/*
 * Filters (ES's FilterAllocationDecider): require -- every filter must
 * match; include -- at least one of them must match; exclude -- none may.
 */
static SeDecisionType
check_filters(const SeAllocFilters *fs, const char *scope, const SeAllocNode *n,
			  Explain *ex)
{
	int			i;
	bool		any = fs->ninclude == 0;

	for (i = 0; i < fs->nrequire; i++)
		if (!filter_matches(&fs->require[i], n))
			return filter_no(ex, "node does not match ", scope, "require", &fs->require[i], 1);
	for (i = 0; i < fs->ninclude && !any; i++)
		any = filter_matches(&fs->include[i], n);
	if (!any)
		return filter_no(ex, "node does not match ", scope, "include", fs->include, fs->ninclude);
	for (i = 0; i < fs->nexclude; i++)
		if (filter_matches(&fs->exclude[i], n))
			return filter_no(ex, "node matches ", scope, "exclude", &fs->exclude[i], 1);
	return SE_DECISION_YES;
}

static SeDecisionType
decide_filter(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	const SeAllocNode *n = &m->nodes[node];

	if (check_filters(&m->indices[c->index].filters, "index", n, ex) == SE_DECISION_NO ||
		check_filters(&m->settings.filters, "cluster", n, ex) == SE_DECISION_NO)
		return SE_DECISION_NO;
	verdict(ex, "filter", SE_DECISION_YES, "node passes include/exclude/require filters");
	return SE_DECISION_YES;
}

/* same_shard: never two copies of one shard on a node (or on a host) */
static SeDecisionType
decide_same_shard(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	int			n,
				first = se_alloc_shard_copies(m, c->index, c->shard, &n),
				i;

	for (i = first; i < first + n; i++)
	{
		const SeAllocCopy *o = &m->copies[i];
		int			on;

		if (o == c || o->state == SE_COPY_UNASSIGNED)
			continue;
		for (on = 0; on < 2; on++)
		{
			int			holder = on ? o->relocating_node : o->node;

			if (holder < 0)
				continue;
			if (holder == node)
			{
				verdict(ex, "same_shard", SE_DECISION_NO,
						"a copy of this shard is already allocated to this node [[%s][%d], node[%s], [%s], s[%s]]",
						m->indices[c->index].name, c->shard, m->nodes[node].id,
						o->primary ? "P" : "R", se_copy_state_name(o->state));
				return SE_DECISION_NO;
			}
			if (m->settings.same_shard_host && m->nodes[holder].host && m->nodes[node].host &&
				strcmp(m->nodes[holder].host, m->nodes[node].host) == 0)
			{
				verdict(ex, "same_shard", SE_DECISION_NO,
						"a copy of this shard is already allocated to host address [%s], on node [%s], and [cluster.routing.allocation.same_shard.host] is [true] which forbids more than one node on each host from holding a copy of this shard",
						m->nodes[node].host, m->nodes[holder].id);
				return SE_DECISION_NO;
			}
		}
	}
	verdict(ex, "same_shard", SE_DECISION_YES, "this node does not hold a copy of this shard");
	return SE_DECISION_YES;
}

static const char *
enable_name(SeAllocEnable e)
{
	switch (e)
	{
		case SE_ALLOC_ENABLE_ALL:
			return "all";
		case SE_ALLOC_ENABLE_PRIMARIES:
			return "primaries";
		case SE_ALLOC_ENABLE_NEW_PRIMARIES:
			return "new_primaries";
		case SE_ALLOC_ENABLE_NONE:
			return "none";
	}
	return "all";
}

/* enable: cluster.routing.allocation.enable, then the index's own */
static SeDecisionType
decide_enable(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	SeAllocEnable e = m->settings.enable;
	const char *scope = "cluster";
	bool		ok;

	if (m->indices[c->index].enable != SE_ALLOC_ENABLE_ALL)
	{
		e = m->indices[c->index].enable;
		scope = "index";
	}
	switch (e)
	{
		case SE_ALLOC_ENABLE_NONE:
			ok = false;
			break;
		case SE_ALLOC_ENABLE_PRIMARIES:
			ok = c->primary;
			break;
		case SE_ALLOC_ENABLE_NEW_PRIMARIES:
			ok = c->primary && c->data_node < 0 && c->reason == SE_UNASSIGNED_INDEX_CREATED;
			break;
		default:
			ok = true;
	}
	if (!ok)
	{
		verdict(ex, "enable", SE_DECISION_NO,
				"%s allocations are forbidden due to %s setting [%s.routing.allocation.enable=%s]",
				c->primary ? "primary" : "replica", scope, scope, enable_name(e));
		return SE_DECISION_NO;
	}
	verdict(ex, "enable", SE_DECISION_YES, "all allocations are allowed");
	return SE_DECISION_YES;
}

/* replica_after_primary_active */
static SeDecisionType
decide_replica_after_primary(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	int			n,
				first;

	if (c->primary)
	{
		verdict(ex, "replica_after_primary_active", SE_DECISION_YES, "shard is primary and can be allocated");
		return SE_DECISION_YES;
	}
	first = se_alloc_shard_copies(m, c->index, c->shard, &n);
	if (n > 0 && m->copies[first].primary &&
		(m->copies[first].state == SE_COPY_STARTED || m->copies[first].state == SE_COPY_RELOCATING))
	{
		verdict(ex, "replica_after_primary_active", SE_DECISION_YES, "primary shard for this replica is already active");
		return SE_DECISION_YES;
	}
	verdict(ex, "replica_after_primary_active", SE_DECISION_NO, "primary shard for this replica is not yet active");
	return SE_DECISION_NO;
}

/* max_retry */
static SeDecisionType
decide_max_retry(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	int			max = m->indices[c->index].max_retries;

	if (c->state == SE_COPY_UNASSIGNED && c->failed_attempts >= max)
	{
		verdict(ex, "max_retry", SE_DECISION_NO,
				"shard has exceeded the maximum number of retries [%d] on failed allocation attempts - manually call [/_cluster/reroute?retry_failed=true] to retry",
				max);
		return SE_DECISION_NO;
	}
	verdict(ex, "max_retry", SE_DECISION_YES, "shard has failed allocating [%d] times but [%d] retries are allowed",
			c->failed_attempts, max);
	return SE_DECISION_YES;
}

/* shards_limit: index.routing.allocation.total_shards_per_node and the cluster's */
static SeDecisionType
decide_shards_limit(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex, bool remain)
{
	int			ilimit = m->indices[c->index].total_shards_per_node;
	int			climit = m->settings.total_shards_per_node;
	/* allocating adds one; remaining counts the copy itself already */
	int			extra = remain ? 0 : 1;

	if (ilimit >= 0 && NIS(m, node, c->index) + extra > ilimit)
	{
		verdict(ex, "shards_limit", SE_DECISION_NO,
				"too many shards [%d] allocated to this node for index [%s], index setting [index.routing.allocation.total_shards_per_node=%d]",
				NIS(m, node, c->index), m->indices[c->index].name, ilimit);
		return SE_DECISION_NO;
	}
	if (climit >= 0 && node_counts(m, node)->shards + extra > climit)
	{
		verdict(ex, "shards_limit", SE_DECISION_NO,
				"too many shards [%d] allocated to this node, cluster setting [cluster.routing.allocation.total_shards_per_node=%d]",
				node_counts(m, node)->shards, climit);
		return SE_DECISION_NO;
	}
	verdict(ex, "shards_limit", SE_DECISION_YES, "total shard limits are disabled or not reached");
	return SE_DECISION_YES;
}

/*
 * The values of each awareness attribute: those seen on data nodes, and
 * the forced ones (kept in the model; nodes change only by node_left).
 */
static void
count_awareness_values(SeAllocModel *m)
{
	int			a;

	m->awareness_values = palloc0(sizeof(int) * Max(m->settings.nawareness, 1));
	for (a = 0; a < m->settings.nawareness; a++)
	{
		const char *attr = m->settings.awareness[a];
		const char **seen = palloc(sizeof(char *) * (m->nnodes + 1));
		int			nseen = 0,
					nforced = 0,
					i,
					k;

		for (i = 0; i < m->nnodes; i++)
		{
			const char *v = m->nodes[i].data ? node_attr(&m->nodes[i], attr) : NULL;

			if (v == NULL)
				continue;
			for (k = 0; k < nseen && strcmp(seen[k], v) != 0; k++)
				;
			if (k == nseen)
				seen[nseen++] = v;
		}
		if (m->settings.awareness_force && m->settings.awareness_force[a])
		{
			const char **f;

			for (f = m->settings.awareness_force[a]; *f; f++)
			{
				for (k = 0; k < nseen && strcmp(seen[k], *f) != 0; k++)
					;
				if (k == nseen)
					nforced++;
			}
		}
		m->awareness_values[a] = nseen + nforced;
		pfree(seen);
	}
}

/*
 * awareness: the copies of a shard spread over the values of each
 * awareness attribute: at most ceil(copies / values) on one value, where
 * values counts the values seen on data nodes plus forced ones.
 */
static SeDecisionType
decide_awareness(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex, bool remain)
{
	int			a;

	for (a = 0; a < m->settings.nawareness; a++)
	{
		const char *attr = m->settings.awareness[a];
		const char *mine = node_attr(&m->nodes[node], attr);
		int			nvalues = m->awareness_values[a],
					i,
					ncopies,
					first,
					here = 0,
					total;

		if (mine == NULL)
		{
			verdict(ex, "awareness", SE_DECISION_NO,
					"node does not contain the awareness attribute [%s]; required attributes cluster setting [cluster.routing.allocation.awareness.attributes=%s]",
					attr, attr);
			return SE_DECISION_NO;
		}
		/* copies of the shard (all of them, as ES counts the shard's copies) */
		first = se_alloc_shard_copies(m, c->index, c->shard, &ncopies);
		total = ncopies;
		for (i = first; i < first + ncopies; i++)
		{
			const SeAllocCopy *o = &m->copies[i];
			int			where = owning_node(o);
			const char *v;

			if (o == c || where < 0)
				continue;
			v = node_attr(&m->nodes[where], attr);
			if (v && strcmp(v, mine) == 0)
				here++;
		}
		here++;					/* this copy */
		if (nvalues > 0 && here > (total + nvalues - 1) / nvalues)
		{
			verdict(ex, "awareness", SE_DECISION_NO,
					"there are [%d] copies of this shard and [%d] values for attribute [%s] so there may be at most [%d] copies of this shard allocated to nodes with each value, but (including this copy) there would be [%d] copies allocated to nodes with [node.attr.%s: %s]",
					total, nvalues, attr, (total + nvalues - 1) / nvalues, here, attr, mine);
			return SE_DECISION_NO;
		}
	}
	verdict(ex, "awareness", SE_DECISION_YES,
			m->settings.nawareness ? "node meets all awareness attribute requirements"
			: "allocation awareness is not enabled, set cluster setting [cluster.routing.allocation.awareness.attributes] to enable it");
	(void) remain;
	return SE_DECISION_YES;
}

/* the used fraction (or free bytes) a watermark tests; total 0 = unknown */
static bool
over_watermark(const SeAllocModel *m, const SeAllocNode *n, int64 used, double frac, int64 free_bytes)
{
	if (n->disk_total <= 0)
		return false;
	if (free_bytes > 0)
		return n->disk_total - used < free_bytes;
	return (double) used / (double) n->disk_total > frac;
}

static const char *
watermark_text(double frac, int64 free_bytes, char *buf, size_t len)
{
	if (free_bytes > 0)
		snprintf(buf, len, INT64_FORMAT "b free", free_bytes);
	else
		snprintf(buf, len, "%.1f%%", frac * 100.0);
	return buf;
}

/*
 * disk_threshold.  Allocating: no copy onto a node above the low watermark
 * (a primary that never was allocated is held back too, as ES), and none
 * that would take it above the high watermark, counting the bytes already
 * relocating in.  Remaining: not above the high watermark, counting the
 * bytes relocating away as gone.
 */
static SeDecisionType
decide_disk(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex, bool remain)
{
	const SeAllocSettings *s = &m->settings;
	const SeAllocNode *n = &m->nodes[node];
	const SeAllocNodeCounts *k;
	char		wbuf[64];

	if (!s->disk_threshold_enabled || n->disk_total <= 0)
	{
		verdict(ex, "disk_threshold", SE_DECISION_YES,
				s->disk_threshold_enabled ? "the node reports no disk usage"
				: "the disk threshold decider is disabled");
		return SE_DECISION_YES;
	}
	k = node_counts(m, node);
	if (remain)
	{
		int64		used = n->disk_used + k->bytes_in - k->bytes_out;

		if (over_watermark(m, n, used, s->high_used, s->high_free_bytes))
		{
			verdict(ex, "disk_threshold", SE_DECISION_NO,
					"the shard cannot remain on this node because it is above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=%s] and there is less than the required free space on the node, actual used: [%.1f%%]",
					watermark_text(s->high_used, s->high_free_bytes, wbuf, sizeof(wbuf)),
					100.0 * used / n->disk_total);
			return SE_DECISION_NO;
		}
		verdict(ex, "disk_threshold", SE_DECISION_YES,
				"there is enough disk on this node for the shard to remain");
		return SE_DECISION_YES;
	}
	else
	{
		int64		used = n->disk_used + k->bytes_in;

		if (over_watermark(m, n, used, s->low_used, s->low_free_bytes))
		{
			verdict(ex, "disk_threshold", SE_DECISION_NO,
					"the node is above the low watermark cluster setting [cluster.routing.allocation.disk.watermark.low=%s], having used [%.1f%%] of its disk",
					watermark_text(s->low_used, s->low_free_bytes, wbuf, sizeof(wbuf)),
					100.0 * used / n->disk_total);
			return SE_DECISION_NO;
		}
		if (over_watermark(m, n, used + c->size_bytes, s->high_used, s->high_free_bytes))
		{
			verdict(ex, "disk_threshold", SE_DECISION_NO,
					"allocating the shard to this node will bring the node above the high watermark cluster setting [cluster.routing.allocation.disk.watermark.high=%s] and cause it to have less than the minimum required free space (shard size: " INT64_FORMAT "b)",
					watermark_text(s->high_used, s->high_free_bytes, wbuf, sizeof(wbuf)),
					c->size_bytes);
			return SE_DECISION_NO;
		}
		verdict(ex, "disk_threshold", SE_DECISION_YES,
				"enough disk for shard on node, free: [" INT64_FORMAT "b], used: [%.1f%%]",
				n->disk_total - used, 100.0 * used / n->disk_total);
		return SE_DECISION_YES;
	}
}

/*
 * throttling: concurrent recoveries per node.  A primary recovering from
 * its own store counts against node_initial_primaries_recoveries, a copy
 * recovering from a peer (a replica, a relocation) against the incoming
 * limit of the target and the outgoing limit of the source.
 */
static SeDecisionType
decide_throttling(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex, int source)
{
	const SeAllocSettings *s = &m->settings;
	SeAllocNodeCounts k_node = *node_counts(m, node);
	const SeAllocNodeCounts *k = &k_node;
	int			source_out = source >= 0 ? node_counts(m, source)->relocating_out : 0;

	if (closed_primary(m, c) && c->state == SE_COPY_UNASSIGNED)
	{
		verdict(ex, "throttling", SE_DECISION_YES,
				"a closed index's primary is placed where its data is, not recovered, so it takes no recovery slot");
		return SE_DECISION_YES;
	}
	if (c->primary && c->state == SE_COPY_UNASSIGNED)
	{
		if (s->node_initial_primaries_recoveries >= 0 &&
			k->initial_primaries >= s->node_initial_primaries_recoveries)
		{
			verdict(ex, "throttling", SE_DECISION_THROTTLE,
					"reached the limit of ongoing initial primary recoveries [%d], cluster setting [cluster.routing.allocation.node_initial_primaries_recoveries=%d]",
					k->initial_primaries, s->node_initial_primaries_recoveries);
			return SE_DECISION_THROTTLE;
		}
		verdict(ex, "throttling", SE_DECISION_YES, "below primary recovery limit of [%d]",
				s->node_initial_primaries_recoveries);
		return SE_DECISION_YES;
	}
	if (s->node_concurrent_incoming_recoveries >= 0 &&
		k->initializing - k->initial_primaries >= s->node_concurrent_incoming_recoveries)
	{
		verdict(ex, "throttling", SE_DECISION_THROTTLE,
				"reached the limit of incoming shard recoveries [%d], cluster setting [cluster.routing.allocation.node_concurrent_incoming_recoveries=%d] (can also be set via [cluster.routing.allocation.node_concurrent_recoveries])",
				k->initializing - k->initial_primaries, s->node_concurrent_incoming_recoveries);
		return SE_DECISION_THROTTLE;
	}
	if (source >= 0 && s->node_concurrent_outgoing_recoveries >= 0 &&
		source_out >= s->node_concurrent_outgoing_recoveries)
	{
		verdict(ex, "throttling", SE_DECISION_THROTTLE,
				"reached the limit of outgoing shard recoveries [%d] on the node [%s] which holds the primary, cluster setting [cluster.routing.allocation.node_concurrent_outgoing_recoveries=%d] (can also be set via [cluster.routing.allocation.node_concurrent_recoveries])",
				source_out, m->nodes[source].id,
				s->node_concurrent_outgoing_recoveries);
		return SE_DECISION_THROTTLE;
	}
	verdict(ex, "throttling", SE_DECISION_YES, "below shard recovery limit of outgoing: [%d < %d] incoming: [%d < %d]",
			source_out, s->node_concurrent_outgoing_recoveries,
			k->initializing - k->initial_primaries, s->node_concurrent_incoming_recoveries);
	return SE_DECISION_YES;
}

/*
 * A primary that has held data can only come back where that data is
 * (ES's existing shards allocator: no valid shard copy elsewhere).
 */
static SeDecisionType
decide_existing_store(SeAllocModel *m, const SeAllocCopy *c, int node, Explain *ex)
{
	if (!c->primary || c->state != SE_COPY_UNASSIGNED || c->data_node < 0 || c->data_node == node)
		return SE_DECISION_YES;
	verdict(ex, "existing_store", SE_DECISION_NO,
			"a copy of this primary's data exists only on node [%s]; allocating it here would lose it (use allocate_stale_primary or allocate_empty_primary with accept_data_loss)",
			m->nodes[c->data_node].name);
	return SE_DECISION_NO;
}

#define DECIDE(expr) \
	do { \
		SeDecisionType d_ = (expr); \
		if (d_ == SE_DECISION_NO) { \
			worst = SE_DECISION_NO; \
			if (ex == NULL) return worst; \
		} else if (d_ == SE_DECISION_THROTTLE && worst == SE_DECISION_YES) \
			worst = SE_DECISION_THROTTLE; \
	} while (0)

/*
 * May copy c go to node?  source: the node it comes from (a relocation's
 * source, or the primary's node for a replica), -1 if none.
 */
static SeDecisionType
can_allocate(SeAllocModel *m, const SeAllocCopy *c, int node, int source, Explain *ex)
{
	SeDecisionType worst = SE_DECISION_YES;

	if (!m->nodes[node].data)
	{
		verdict(ex, "data_node", SE_DECISION_NO, "node does not hold the data role");
		return SE_DECISION_NO;
	}
	DECIDE(decide_existing_store(m, c, node, ex));
	DECIDE(decide_max_retry(m, c, node, ex));
	DECIDE(decide_replica_after_primary(m, c, node, ex));
	DECIDE(decide_enable(m, c, node, ex));
	DECIDE(decide_same_shard(m, c, node, ex));
	DECIDE(decide_filter(m, c, node, ex));
	DECIDE(decide_shards_limit(m, c, node, ex, false));
	DECIDE(decide_awareness(m, c, node, ex, false));
	DECIDE(decide_disk(m, c, node, ex, false));
	DECIDE(decide_throttling(m, c, node, ex, source));
	return worst;
}

static SeDecisionType
can_remain(SeAllocModel *m, const SeAllocCopy *c, Explain *ex)
{
	SeDecisionType worst = SE_DECISION_YES;
	int			node = c->node;

	DECIDE(decide_filter(m, c, node, ex));
	DECIDE(decide_shards_limit(m, c, node, ex, true));
	DECIDE(decide_awareness(m, c, node, ex, true));
	DECIDE(decide_disk(m, c, node, ex, true));
	return worst;
}

/* the node a replica recovers from: its primary's */
static int
recovery_source(const SeAllocModel *m, const SeAllocCopy *c)
{
	int			n,
				first;

	if (c->primary)
		return -1;
	first = se_alloc_shard_copies(m, c->index, c->shard, &n);
	return (n > 0 && m->copies[first].primary) ? m->copies[first].node : -1;
}

/* ---------------------------------------------------------------------
 * Weights and the three steps
 * ---------------------------------------------------------------------
 */

typedef struct Weights
{
	float		theta0;
	float		theta1;
	float		avg_shards;		/* per data node */
} Weights;

static void
weights_init(const SeAllocModel *m, Weights *w)
{
	float		sum = m->settings.balance_shard + m->settings.balance_index;

	if (sum <= 0)
		sum = 1;
	w->theta0 = m->settings.balance_shard / sum;
	w->theta1 = m->settings.balance_index / sum;
	w->avg_shards = m->ndata_nodes ? (float) m->total_copies / m->ndata_nodes : 0;
}

static inline float
weight(const SeAllocModel *m, const Weights *w, int node, int index)
{
	float		avg_index = m->ndata_nodes ? (float) m->index_copies[index] / m->ndata_nodes : 0;

	return w->theta0 * (m->counts[node].shards - w->avg_shards) +
		w->theta1 * (NIS(m, node, index) - avg_index);
}

/*
 * The node of least weight for c whose deciders do not say NO; *decision
 * is YES or THROTTLE (of that node), NO when none.  Ties: a YES beats a
 * THROTTLE, then the earlier node.
 */
static int
best_node(SeAllocModel *m, const Weights *w, const SeAllocCopy *c, int source,
		  int exclude, SeDecisionType *decision)
{
	int			best = -1;
	float		best_w = 0;
	SeDecisionType best_d = SE_DECISION_NO;
	int			n;

	for (n = 0; n < m->nnodes; n++)
	{
		SeDecisionType d;
		float		wt;

		if (!m->nodes[n].data || n == exclude)
			continue;
		d = can_allocate(m, c, n, source, NULL);
		if (d == SE_DECISION_NO)
			continue;
		wt = weight(m, w, n, c->index);
		if (best < 0 || wt < best_w ||
			(wt == best_w && d == SE_DECISION_YES && best_d == SE_DECISION_THROTTLE))
		{
			best = n;
			best_w = wt;
			best_d = d;
		}
	}
	*decision = best_d;
	return best;
}

static int
unassigned_cmp(const void *a, const void *b, void *arg)
{
	const SeAllocModel *m = arg;
	const SeAllocCopy *x = &m->copies[*(const int *) a];
	const SeAllocCopy *y = &m->copies[*(const int *) b];

	if (x->primary != y->primary)
		return x->primary ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

static bool
delayed(const SeAllocModel *m, const SeAllocCopy *c)
{
	const SeAllocIndex *ix = &m->indices[c->index];

	return !c->primary && c->reason == SE_UNASSIGNED_NODE_LEFT &&
		ix->delayed_timeout_ms > 0 &&
		m->settings.now_ms < c->unassigned_at_ms + ix->delayed_timeout_ms;
}

static int
allocate_unassigned(SeAllocModel *m, const Weights *w)
{
	int		   *ids;
	int			n = 0,
				i,
				changed = 0;

	if (m->unassigned == 0)
		return 0;
	ids = palloc(sizeof(int) * m->unassigned);
	for (i = 0; i < m->ncopies; i++)
		if (m->copies[i].state == SE_COPY_UNASSIGNED)
			ids[n++] = i;
	qsort_arg(ids, n, sizeof(int), unassigned_cmp, m);
	for (i = 0; i < n; i++)
	{
		SeAllocCopy *c = &m->copies[ids[i]];
		SeDecisionType d;
		int			node;

		if (delayed(m, c))
			continue;
		node = best_node(m, w, c, recovery_source(m, c), -1, &d);
		if (node >= 0 && d == SE_DECISION_YES)
		{
			set_state(m, ids[i], SE_COPY_INITIALIZING, node, -1);
			changed++;
		}
	}
	pfree(ids);
	return changed;
}

static void
relocate(SeAllocModel *m, int id, int to)
{
	SeAllocCopy *c = &m->copies[id];

	set_state(m, id, SE_COPY_RELOCATING, c->node, to);
}

static int
move_shards(SeAllocModel *m, const Weights *w)
{
	int			i,
				changed = 0;

	for (i = 0; i < m->ncopies; i++)
	{
		SeAllocCopy *c = &m->copies[i];
		SeDecisionType d;
		int			to;

		if (c->state != SE_COPY_STARTED || can_remain(m, c, NULL) != SE_DECISION_NO)
			continue;
		to = best_node(m, w, c, c->node, c->node, &d);
		if (to >= 0 && d == SE_DECISION_YES)
		{
			relocate(m, i, to);
			changed++;
		}
	}
	return changed;
}

/* may copies be rebalanced at all (ES's cluster_rebalance and enable) */
static bool
rebalance_allowed(const SeAllocModel *m)
{
	/* allow_rebalance: indices_all_active */
	if (m->settings.rebalance_enable == SE_REBALANCE_NONE ||
		m->unassigned > 0 || m->initializing > 0)
		return false;
	return true;
}

static bool
copy_may_rebalance(const SeAllocModel *m, const SeAllocCopy *c)
{
	switch (m->settings.rebalance_enable)
	{
		case SE_REBALANCE_PRIMARIES:
			return c->primary;
		case SE_REBALANCE_REPLICAS:
			return !c->primary;
		case SE_REBALANCE_NONE:
			return false;
		default:
			return true;
	}
}

static bool
concurrent_rebalance_room(const SeAllocModel *m)
{
	return m->settings.cluster_concurrent_rebalance < 0 ||
		m->relocations < m->settings.cluster_concurrent_rebalance;
}

/* relocate one started copy of index from node hi to node lo */
static bool
try_relocate(SeAllocModel *m, int index, int hi, int lo)
{
	int			first = m->shard_first[m->index_first_shard[index]];
	int			last = m->shard_first[m->index_first_shard[index + 1]];
	int			i;

	for (i = first; i < last; i++)
	{
		SeAllocCopy *c = &m->copies[i];

		if (c->state != SE_COPY_STARTED || c->node != hi || !copy_may_rebalance(m, c))
			continue;
		if (can_allocate(m, c, lo, hi, NULL) == SE_DECISION_YES)
		{
			relocate(m, i, lo);
			return true;
		}
	}
	return false;
}

typedef struct NodeW
{
	int			node;
	float		w;
} NodeW;

static int
nodew_cmp(const void *a, const void *b)
{
	const NodeW *x = a;
	const NodeW *y = b;

	if (x->w != y->w)
		return x->w < y->w ? -1 : 1;
	return x->node - y->node;
}

/*
 * A move of one copy from the heavier to the lighter node lowers the sum
 * over nodes of theta0/2 (shards - avg)^2 + theta1/2 (index shards -
 * avg)^2 by delta - (theta0 + theta1) = delta - 1: with a threshold of at
 * least 1 every move makes progress and rebalancing cannot cycle.  A delta
 * a rounding error above the threshold (two nodes one copy apart) would
 * swap a copy back and forth, so it counts as balanced (ES's lessThan).
 */
static inline bool
balanced_enough(float delta, float threshold)
{
	return delta <= threshold + 0.001f;
}

static int
balance(SeAllocModel *m, const Weights *w)
{
	NodeW	   *nw;
	int			ix,
				changed = 0;
	float		threshold = m->settings.threshold;

	if (!rebalance_allowed(m) || m->ndata_nodes < 2)
		return 0;
	nw = palloc(sizeof(NodeW) * m->nnodes);
	for (ix = 0; ix < m->nindices && concurrent_rebalance_room(m); ix++)
	{
		int			nrel = 0,
					n,
					lo,
					hi;
		float		wmin = 0,
					wmax = 0;
		SeAllocCopy probe;

		if (m->index_copies[ix] == 0)
			continue;
		/*
		 * The nodes relevant to the index: those holding a copy, and those
		 * its filters admit.  A quick look at the spread first: a balanced
		 * index (most of them, in a no-op reroute) costs O(nodes).
		 */
		memset(&probe, 0, sizeof(probe));
		probe.index = ix;
		probe.node = -1;
		probe.relocating_node = -1;
		probe.data_node = -1;
		for (n = 0; n < m->nnodes; n++)
		{
			float		wt;

			if (!m->nodes[n].data)
				continue;
			if (NIS(m, n, ix) == 0 &&
				(check_filters(&m->indices[ix].filters, "index", &m->nodes[n], NULL) == SE_DECISION_NO ||
				 check_filters(&m->settings.filters, "cluster", &m->nodes[n], NULL) == SE_DECISION_NO))
				continue;
			wt = weight(m, w, n, ix);
			if (nrel == 0 || wt < wmin)
				wmin = wt;
			if (nrel == 0 || wt > wmax)
				wmax = wt;
			nw[nrel].node = n;
			nw[nrel].w = wt;
			nrel++;
		}
		if (nrel < 2 || balanced_enough(wmax - wmin, threshold))
			continue;
		qsort(nw, nrel, sizeof(NodeW), nodew_cmp);
		lo = 0;
		hi = nrel - 1;
		while (concurrent_rebalance_room(m))
		{
			if (NIS(m, nw[hi].node, ix) > 0)
			{
				float		delta = nw[hi].w - nw[lo].w;

				if (balanced_enough(delta, threshold))
					break;		/* every other pair is closer still */
				if (try_relocate(m, ix, nw[hi].node, nw[lo].node))
				{
					changed++;
					nw[lo].w = weight(m, w, nw[lo].node, ix);
					nw[hi].w = weight(m, w, nw[hi].node, ix);
					qsort(nw, nrel, sizeof(NodeW), nodew_cmp);
					lo = 0;
					hi = nrel - 1;
					continue;
				}
			}
			if (lo < hi - 1)
				lo++;
			else if (hi > 1)
			{
				lo = 0;
				hi--;
			}
			else
				break;
		}
	}
	pfree(nw);
	return changed;
}

/*
 * Flood stage: an index with a copy on a node above it becomes
 * read_only_allow_delete; once every node holding it is back below the
 * high watermark the block goes (ES releases it automatically since 7.4).
 */
static void
flood_stage(SeAllocModel *m)
{
	const SeAllocSettings *s = &m->settings;
	bool	   *flood,
			   *high;
	int			i;

	if (!s->disk_threshold_enabled)
		return;
	flood = palloc0(sizeof(bool) * Max(m->nnodes, 1));
	high = palloc0(sizeof(bool) * Max(m->nnodes, 1));
	for (i = 0; i < m->nnodes; i++)
	{
		flood[i] = over_watermark(m, &m->nodes[i], m->nodes[i].disk_used, s->flood_used, s->flood_free_bytes);
		high[i] = over_watermark(m, &m->nodes[i], m->nodes[i].disk_used, s->high_used, s->high_free_bytes);
	}
	{
		/* per index: 2 = a copy on a flooded node, 1 = on a node above high */
		char	   *level = palloc0(Max(m->nindices, 1));

		for (i = 0; i < m->ncopies; i++)
		{
			const SeAllocCopy *c = &m->copies[i];
			int			on;

			for (on = 0; on < 2; on++)
			{
				int			n = on ? c->relocating_node : c->node;

				if (n < 0)
					continue;
				if (flood[n])
					level[c->index] = 2;
				else if (high[n] && level[c->index] < 1)
					level[c->index] = 1;
			}
		}
		for (i = 0; i < m->nindices; i++)
		{
			if (level[i] == 2)
				m->indices[i].read_only_allow_delete = true;
			else if (level[i] == 0)
				m->indices[i].read_only_allow_delete = false;
			/* between high and flood: leave the block as it was */
		}
		pfree(level);
	}
	pfree(flood);
	pfree(high);
}

int
se_alloc_reroute(SeAllocModel *m)
{
	Weights		w;
	int			changed = 0;

	Assert(m->prepared);
	weights_init(m, &w);
	changed += allocate_unassigned(m, &w);
	if (!m->settings.no_relocation)
	{
		changed += move_shards(m, &w);
		changed += balance(m, &w);
	}
	flood_stage(m);
	return changed;
}

/* ---------------------------------------------------------------------
 * State changes and commands
 * ---------------------------------------------------------------------
 */

void
se_alloc_start(SeAllocModel *m, int id)
{
	SeAllocCopy *c = &m->copies[id];

	if (c->state == SE_COPY_INITIALIZING)
	{
		set_state(m, id, SE_COPY_STARTED, c->node, -1);
		c->data_node = c->node;
	}
	else if (c->state == SE_COPY_RELOCATING)
	{
		/* the relocation finished: the copy lives on its target */
		set_state(m, id, SE_COPY_STARTED, c->relocating_node, -1);
		c->data_node = c->node;
	}
	c->failed_attempts = 0;
}

static void
unassign(SeAllocModel *m, int id, SeUnassignedReason reason)
{
	SeAllocCopy *c = &m->copies[id];

	set_state(m, id, SE_COPY_UNASSIGNED, -1, -1);
	c->reason = reason;
	c->unassigned_at_ms = m->settings.now_ms;
}

void
se_alloc_fail(SeAllocModel *m, int id)
{
	SeAllocCopy *c = &m->copies[id];

	if (c->state == SE_COPY_RELOCATING)
	{
		/* the target failed: the copy stays where it is */
		set_state(m, id, SE_COPY_STARTED, c->node, -1);
		return;
	}
	if (c->state == SE_COPY_UNASSIGNED)
		return;
	unassign(m, id, SE_UNASSIGNED_ALLOCATION_FAILED);
	c->failed_attempts++;
}

void
se_alloc_node_left(SeAllocModel *m, int node)
{
	int			i;

	for (i = 0; i < m->ncopies; i++)
	{
		SeAllocCopy *c = &m->copies[i];

		if (c->state == SE_COPY_RELOCATING && c->relocating_node == node)
			set_state(m, i, SE_COPY_STARTED, c->node, -1);
		else if (c->state == SE_COPY_RELOCATING && c->node == node)
		{
			/* the source left mid-move: the target has no complete copy */
			unassign(m, i, SE_UNASSIGNED_NODE_LEFT);
		}
		else if (c->node == node && c->state != SE_COPY_UNASSIGNED)
			unassign(m, i, SE_UNASSIGNED_NODE_LEFT);
	}
	if (m->nodes[node].data)
		m->ndata_nodes--;
	m->nodes[node].data = false;
	count_awareness_values(m);
}

static char *
explain_no(SeAllocModel *m, const SeAllocCopy *c, int node, int source)
{
	Explain		ex = {0};
	StringInfoData s;
	int			i;

	(void) can_allocate(m, c, node, source, &ex);
	initStringInfo(&s);
	for (i = 0; i < ex.n; i++)
		if (ex.v[i].type != SE_DECISION_YES)
			appendStringInfo(&s, "%s[%s(%s)]", s.len ? ", " : "", se_decision_name(ex.v[i].type),
							 ex.v[i].explanation);
	return s.data;
}

static bool
check_node(const SeAllocModel *m, int node, const char *cmd, SeError *err)
{
	if (node >= 0 && node < m->nnodes && m->nodes[node].data)
		return true;
	se_error_set(err, 400, "illegal_argument_exception", "[%s] node is not a data node", cmd);
	return false;
}

bool
se_alloc_move(SeAllocModel *m, int id, int to, SeError *err)
{
	SeAllocCopy *c = &m->copies[id];
	const char *iname = m->indices[c->index].name;

	if (!check_node(m, to, "move_allocation", err))
		return false;
	if (c->state != SE_COPY_STARTED)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[move_allocation] can't move [%s][%d], shard is not started (state = %s)",
					 iname, c->shard, se_copy_state_name(c->state));
		return false;
	}
	if (can_allocate(m, c, to, c->node, NULL) == SE_DECISION_NO)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[move_allocation] can't move [%s][%d], from %s, to %s, since its not allowed, reason: %s",
					 iname, c->shard, m->nodes[c->node].name, m->nodes[to].name,
					 explain_no(m, c, to, c->node));
		return false;
	}
	relocate(m, id, to);
	return true;
}

bool
se_alloc_cancel(SeAllocModel *m, int id, bool allow_primary, SeError *err)
{
	SeAllocCopy *c = &m->copies[id];

	if (c->state == SE_COPY_RELOCATING)
	{
		set_state(m, id, SE_COPY_STARTED, c->node, -1);
		return true;
	}
	if (c->primary && !allow_primary)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[cancel_allocation] can't cancel [%s][%d] on node %s, shard is primary and %s",
					 m->indices[c->index].name, c->shard,
					 c->node >= 0 ? m->nodes[c->node].name : "-", se_copy_state_name(c->state));
		return false;
	}
	if (c->state == SE_COPY_UNASSIGNED)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[cancel_allocation] can't cancel [%s][%d], failed to find it on node",
					 m->indices[c->index].name, c->shard);
		return false;
	}
	unassign(m, id, SE_UNASSIGNED_REROUTE_CANCELLED);
	return true;
}

bool
se_alloc_allocate_replica(SeAllocModel *m, int id, int node, SeError *err)
{
	SeAllocCopy *c = &m->copies[id];

	if (!check_node(m, node, "allocate_replica", err))
		return false;
	if (c->primary || c->state != SE_COPY_UNASSIGNED)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[allocate_replica] all copies of [%s][%d] are already assigned",
					 m->indices[c->index].name, c->shard);
		return false;
	}
	if (can_allocate(m, c, node, recovery_source(m, c), NULL) == SE_DECISION_NO)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[allocate_replica] allocation of [%s][%d] on node %s is not allowed, reason: %s",
					 m->indices[c->index].name, c->shard, m->nodes[node].name,
					 explain_no(m, c, node, recovery_source(m, c)));
		return false;
	}
	set_state(m, id, SE_COPY_INITIALIZING, node, -1);
	return true;
}

bool
se_alloc_allocate_primary(SeAllocModel *m, int id, int node, bool stale,
						  bool accept_data_loss, SeError *err)
{
	SeAllocCopy *c = &m->copies[id];
	const char *cmd = stale ? "allocate_stale_primary" : "allocate_empty_primary";

	if (!check_node(m, node, cmd, err))
		return false;
	if (!accept_data_loss)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] allocating an empty or stale primary for [%s][%d] can result in data loss. Please confirm by setting the accept_data_loss parameter to true",
					 cmd, m->indices[c->index].name, c->shard);
		return false;
	}
	if (!c->primary || c->state != SE_COPY_UNASSIGNED)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] primary [%s][%d] is already assigned", cmd,
					 m->indices[c->index].name, c->shard);
		return false;
	}
	/* forget where the data was: this node's (stale or empty) copy wins */
	c->data_node = -1;
	if (decide_same_shard(m, c, node, NULL) == SE_DECISION_NO)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "[%s] a copy of [%s][%d] is already on node %s", cmd,
					 m->indices[c->index].name, c->shard, m->nodes[node].name);
		return false;
	}
	set_state(m, id, SE_COPY_INITIALIZING, node, -1);
	return true;
}

void
se_alloc_retry_failed(SeAllocModel *m)
{
	int			i;

	for (i = 0; i < m->ncopies; i++)
		m->copies[i].failed_attempts = 0;
}

/* ---------------------------------------------------------------------
 * Explain
 * ---------------------------------------------------------------------
 */

static int
decision_rank_cmp(const void *a, const void *b)
{
	const SeAllocNodeDecision *x = a;
	const SeAllocNodeDecision *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? -1 : 1;
	return x->node - y->node;
}

void
se_alloc_explain(SeAllocModel *m, int id, SeAllocNodeDecision *decisions,
				 SeAllocNodeDecision *remain)
{
	SeAllocCopy *c = &m->copies[id];
	Weights		w;
	int			n;
	int			source = c->state == SE_COPY_UNASSIGNED ? recovery_source(m, c) : c->node;

	weights_init(m, &w);
	for (n = 0; n < m->nnodes; n++)
	{
		Explain		ex = {0};
		SeAllocNodeDecision *d = &decisions[n];

		d->node = n;
		d->weight = weight(m, &w, n, c->index);
		d->type = can_allocate(m, c, n, source, &ex);
		d->nverdicts = ex.n;
		d->verdicts = ex.v;
	}
	qsort(decisions, m->nnodes, sizeof(SeAllocNodeDecision), decision_rank_cmp);
	if (remain)
	{
		memset(remain, 0, sizeof(*remain));
		remain->node = c->node;
		if (c->node >= 0)
		{
			Explain		ex = {0};

			remain->type = can_remain(m, c, &ex);
			remain->weight = weight(m, &w, c->node, c->index);
			remain->nverdicts = ex.n;
			remain->verdicts = ex.v;
		}
	}
}

const char *
se_unassigned_reason_name(SeUnassignedReason r)
{
	switch (r)
	{
		case SE_UNASSIGNED_INDEX_CREATED:
			return "INDEX_CREATED";
		case SE_UNASSIGNED_NODE_LEFT:
			return "NODE_LEFT";
		case SE_UNASSIGNED_ALLOCATION_FAILED:
			return "ALLOCATION_FAILED";
		case SE_UNASSIGNED_REROUTE_CANCELLED:
			return "REROUTE_CANCELLED";
		case SE_UNASSIGNED_REPLICA_ADDED:
			return "REPLICA_ADDED";
		case SE_UNASSIGNED_INDEX_REOPENED:
			return "INDEX_REOPENED";
		case SE_UNASSIGNED_CLUSTER_RECOVERED:
			return "CLUSTER_RECOVERED";
	}
	return "INDEX_CREATED";
}

static void
json_str(StringInfo out, const char *s)
{
	se_json_write_string(out, s ? s : "", -1);
}

static const char *
decision_lower(SeDecisionType d)
{
	return d == SE_DECISION_YES ? "yes" : d == SE_DECISION_THROTTLE ? "throttled" : "no";
}

static void
deciders_json(const SeAllocNodeDecision *d, bool include_yes, StringInfo out)
{
	int			k;
	bool		first = true;

	appendStringInfoChar(out, '[');
	for (k = 0; k < d->nverdicts; k++)
	{
		const SeAllocVerdict *v = &d->verdicts[k];

		if (v->type == SE_DECISION_YES && !include_yes)
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		appendStringInfoString(out, "{\"decider\":");
		json_str(out, v->decider);
		appendStringInfo(out, ",\"decision\":\"%s\",\"explanation\":", se_decision_name(v->type));
		json_str(out, v->explanation);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, ']');
}

static void
node_head_json(const SeAllocNode *n, StringInfo out)
{
	int			a;

	appendStringInfoString(out, "\"node_id\":");
	json_str(out, n->id);
	appendStringInfoString(out, ",\"node_name\":");
	json_str(out, n->name);
	appendStringInfoString(out, ",\"transport_address\":");
	json_str(out, n->transport_address ? n->transport_address : n->host);
	appendStringInfoString(out, ",\"node_attributes\":{");
	for (a = 0; a < n->nattrs; a++)
	{
		if (a)
			appendStringInfoChar(out, ',');
		json_str(out, n->attrs[a].key);
		appendStringInfoChar(out, ':');
		json_str(out, n->attrs[a].value);
	}
	appendStringInfoChar(out, '}');
}

/* the data nodes' decisions, ranked by weight (1 = the allocator's choice) */
static void
node_decisions_json(SeAllocModel *m, SeAllocNodeDecision *d, int skip_node,
					bool include_yes, StringInfo out)
{
	int			i,
				rank = 0;
	bool		first = true;

	appendStringInfoString(out, "\"node_allocation_decisions\":[");
	for (i = 0; i < m->nnodes; i++)
	{
		if (!m->nodes[d[i].node].data)
			continue;
		rank++;
		if (d[i].node == skip_node)
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		appendStringInfoChar(out, '{');
		node_head_json(&m->nodes[d[i].node], out);
		appendStringInfo(out, ",\"node_decision\":\"%s\",\"weight_ranking\":%d,\"deciders\":",
						 decision_lower(d[i].type), rank);
		deciders_json(&d[i], include_yes, out);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, ']');
}

void
se_alloc_explain_json(SeAllocModel *m, int id, bool include_yes, StringInfo out)
{
	SeAllocCopy *c = &m->copies[id];
	SeAllocNodeDecision *d = palloc0(sizeof(SeAllocNodeDecision) * Max(m->nnodes, 1));
	SeAllocNodeDecision remain;
	int			i;
	bool		any_yes = false,
				any_throttle = false;

	se_alloc_explain(m, id, d, &remain);
	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[d[i].node].data && d[i].node != c->node)
		{
			any_yes |= d[i].type == SE_DECISION_YES;
			any_throttle |= d[i].type == SE_DECISION_THROTTLE;
		}
	appendStringInfoString(out, "{\"index\":");
	json_str(out, m->indices[c->index].name);
	appendStringInfo(out, ",\"shard\":%d,\"primary\":%s,\"current_state\":\"%s\"",
					 c->shard, c->primary ? "true" : "false",
					 c->state == SE_COPY_UNASSIGNED ? "unassigned" :
					 c->state == SE_COPY_INITIALIZING ? "initializing" :
					 c->state == SE_COPY_RELOCATING ? "relocating" : "started");
	if (c->state == SE_COPY_UNASSIGNED)
	{
		const char *can;
		const char *why;

		appendStringInfo(out, ",\"unassigned_info\":{\"reason\":\"%s\",\"at_millis\":" INT64_FORMAT
						 ",\"failed_allocation_attempts\":%d}",
						 se_unassigned_reason_name(c->reason), c->unassigned_at_ms, c->failed_attempts);
		if (c->primary && c->data_node >= 0 && !m->nodes[c->data_node].data)
		{
			can = "no_valid_shard_copy";
			why = "Elasticsearch can't allocate this shard because there are no copies of its data in the cluster. Elasticsearch will allocate this shard when a node holding a good copy of its data joins the cluster. If no such node is available, restore this index from a recent snapshot.";
		}
		else if (delayed(m, c))
		{
			can = "allocation_delayed";
			why = "The node containing this shard copy recently left the cluster. Elasticsearch is waiting for it to return. If the node does not return within [index.unassigned.node_left.delayed_timeout] then Elasticsearch will allocate this shard to another node.";
		}
		else if (any_yes)
		{
			can = "yes";
			why = "Elasticsearch can allocate the shard.";
		}
		else if (any_throttle)
		{
			can = "throttled";
			why = "Elasticsearch is currently busy with other activities. It expects to be able to allocate this shard when those activities finish. Please wait.";
		}
		else
		{
			can = "no";
			why = "Elasticsearch isn't allowed to allocate this shard to any of the nodes in the cluster. Choose a node to which you expect this shard to be allocated, find this node in the node-by-node explanation, and address the reasons which prevent Elasticsearch from allocating this shard there.";
		}
		appendStringInfo(out, ",\"can_allocate\":\"%s\",\"allocate_explanation\":", can);
		json_str(out, why);
		appendStringInfoChar(out, ',');
		node_decisions_json(m, d, -1, include_yes, out);
	}
	else
	{
		int			rank = 0;

		for (i = 0; i < m->nnodes; i++)
			if (m->nodes[d[i].node].data)
			{
				rank++;
				if (d[i].node == c->node)
					break;
			}
		appendStringInfoString(out, ",\"current_node\":{\"id\":");
		json_str(out, m->nodes[c->node].id);
		appendStringInfoString(out, ",\"name\":");
		json_str(out, m->nodes[c->node].name);
		appendStringInfoString(out, ",\"transport_address\":");
		json_str(out, m->nodes[c->node].transport_address ? m->nodes[c->node].transport_address
				 : m->nodes[c->node].host);
		appendStringInfo(out, ",\"weight_ranking\":%d}", rank);
		appendStringInfo(out, ",\"can_remain_on_current_node\":\"%s\"",
						 remain.type == SE_DECISION_NO ? "no" : "yes");
		if (remain.type == SE_DECISION_NO)
		{
			appendStringInfoString(out, ",\"can_remain_decisions\":");
			deciders_json(&remain, include_yes, out);
			if (m->settings.no_relocation)
				any_yes = any_throttle = false;
			appendStringInfo(out, ",\"can_move_to_other_node\":\"%s\",\"move_explanation\":",
							 any_yes ? "yes" : any_throttle ? "throttled" : "no");
			json_str(out, m->settings.no_relocation
					 ? "This shard may not remain on its current node, and this cluster does not move shard copies yet (relocation is a peer recovery, not built)."
					 : any_yes ? "Elasticsearch can move the shard to another node."
					 : any_throttle ? "Elasticsearch is currently busy with other activities. It expects to be able to move this shard when those activities finish. Please wait."
					 : "This shard may not remain on its current node, but Elasticsearch isn't allowed to move it to another node. Choose a node to which you expect this shard to be allocated, find this node in the node-by-node explanation, and address the reasons which prevent Elasticsearch from allocating this shard there.");
		}
		else
		{
			bool		may = rebalance_allowed(m) && copy_may_rebalance(m, c) &&
				!m->settings.no_relocation;

			appendStringInfo(out, ",\"can_rebalance_cluster\":\"%s\",\"can_rebalance_to_other_node\":\"%s\",\"rebalance_explanation\":",
							 may ? "yes" : "no", may && any_yes ? "yes" : "no");
			json_str(out, !may ? "Elasticsearch is not allowed to rebalance the cluster now: the rebalancing setting forbids it, or a shard copy is unassigned or initializing."
					 : any_yes ? "This shard is in a well-balanced location and can remain here, though other nodes would also accept it."
					 : "Elasticsearch cannot rebalance this shard to another node since there is no node to which allocation is permitted which would improve the cluster balance. If you expect this shard to be rebalanced to another node, find this node in the node-by-node explanation and address the reasons which prevent Elasticsearch from rebalancing this shard there.");
		}
		appendStringInfoChar(out, ',');
		node_decisions_json(m, d, c->node, include_yes, out);
	}
	appendStringInfoChar(out, '}');
}
