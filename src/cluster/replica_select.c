/*-------------------------------------------------------------------------
 *
 * replica_select.c
 *	  Which copy of a shard a read goes to: ES's `preference` and adaptive
 *	  replica selection (see replica_select.h).
 *
 * ES's OperationRouting.preferenceActiveShardIterator, in order: a leading
 * "_shards:2,3" restricts the shards (a shard not listed is not searched
 * and not counted), and what follows '|' is the preference proper; a value
 * starting with '_' must be one of ES's Preference types; anything else is
 * a custom string, hashed so that the same string reads the same copies
 * (ES bypasses ARS for it, and so do we).
 *
 * ARS (ES's ResponseCollectorService + ComputedNodeStats): per node, EWMAs
 * (alpha 0.3) of the queue size and service time the node reports in its
 * shard_query answers and of the response time measured here (a table of
 * the node, in shared memory, ars_shmem.c), plus the shard requests the
 * read being planned already sends to that node (this process's); the copy
 * on the lowest-ranked node is read, and the others' statistics are pulled
 * halfway towards the winner's (ES's adjustStats) so a node once slow gets
 * tried again.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <limits.h>
#include <math.h>

#include "common/hashfn.h"

#include "cluster/replica_select.h"
#include "util/match.h"

bool
se_copy_readable(const SeShardCopy *c)
{
	return c->state == SE_SHARD_STARTED && c->node != NULL && c->node[0] != '\0';
}

/* ES's Preference.parse: the type before ':' */
static bool
pref_type(const char *s, size_t len, SePrefKind *kind, bool *shards, SeError *err)
{
	static const struct
	{
		const char *name;
		SePrefKind	kind;
	}			types[] = {
		{"_prefer_nodes", SE_PREF_PREFER_NODES},
		{"_local", SE_PREF_LOCAL},
		{"_only_local", SE_PREF_ONLY_LOCAL},
		{"_onlyLocal", SE_PREF_ONLY_LOCAL},
		{"_only_nodes", SE_PREF_ONLY_NODES},
	};
	int			i;

	*shards = len == 7 && strncmp(s, "_shards", 7) == 0;
	if (*shards)
		return true;
	for (i = 0; i < lengthof(types); i++)
		if (strlen(types[i].name) == len && strncmp(s, types[i].name, len) == 0)
		{
			*kind = types[i].kind;
			return true;
		}
	se_error_set(err, 400, "illegal_argument_exception", "no Preference for [%.*s]",
				 (int) len, s);
	return false;
}

/* "a,b,c" -> items (empty ones dropped, as Strings.splitStringByCommaToArray) */
static int
split_commas(const char *s, size_t len, char ***out)
{
	char	   *copy = pnstrdup(s, len);
	char	   *tok,
			   *save;
	int			n = 0;

	*out = palloc(sizeof(char *) * (len / 2 + 1));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		(*out)[n++] = tok;
	return n;
}

bool
se_preference_parse(const char *text, SePreference *p, SeError *err)
{
	const char *s = text;
	size_t		len;
	const char *colon;
	bool		shards;

	memset(p, 0, sizeof(*p));
	p->text = text;
	if (s == NULL || s[0] == '\0')
		return true;
	if (s[0] != '_')
	{
		p->kind = SE_PREF_CUSTOM;
		p->hash = hash_bytes((const unsigned char *) s, strlen(s));
		return true;
	}
	len = strlen(s);
	colon = strchr(s, ':');
	if (!pref_type(s, colon ? (size_t) (colon - s) : len, &p->kind, &shards, err))
		return false;
	if (shards)
	{
		const char *bar = strchr(s, '|');
		const char *list = colon ? colon + 1 : s + len;
		char	  **ids;
		int			n,
					i;

		n = split_commas(list, bar ? (size_t) (bar - list) : strlen(list), &ids);
		p->shards = palloc(sizeof(int) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			char	   *end;
			long		v;

			errno = 0;
			v = strtol(ids[i], &end, 10);
			if (*end != '\0' || end == ids[i] || errno != 0 || v < INT_MIN || v > INT_MAX)
			{
				se_error_set(err, 400, "number_format_exception",
							 "For input string: \"%s\"", ids[i]);
				return false;
			}
			p->shards[i] = (int) v;
		}
		p->nshards = n;
		if (n == 0)
		{
			/* ES: "_shards:" lists nothing, so no shard matches */
			p->shards[0] = -1;
			p->nshards = 1;
		}
		/* no more preference, or the one after '|' */
		if (bar == NULL || bar[1] == '\0')
		{
			p->kind = SE_PREF_DEFAULT;
			return true;
		}
		s = bar + 1;
		len = strlen(s);
		if (s[0] != '_')
		{
			/* ES hashes what follows as a custom string */
			p->kind = SE_PREF_CUSTOM;
			p->hash = hash_bytes((const unsigned char *) s, len);
			return true;
		}
		colon = strchr(s, ':');
		if (!pref_type(s, colon ? (size_t) (colon - s) : len, &p->kind, &shards, err))
			return false;
		if (shards)
		{
			se_error_set(err, 400, "illegal_argument_exception", "no Preference for [_shards]");
			return false;
		}
	}
	if (p->kind == SE_PREF_PREFER_NODES || p->kind == SE_PREF_ONLY_NODES)
		p->nnodes = colon ? split_commas(colon + 1, strlen(colon + 1), &p->nodes) : 0;
	return true;
}

bool
se_preference_shard_wanted(const SePreference *p, int shard)
{
	int			i;

	if (p == NULL || p->nshards == 0)
		return true;
	for (i = 0; i < p->nshards; i++)
		if (p->shards[i] == shard)
			return true;
	return false;
}

/* a node's attributes "k:v,k:v" (palloc'd; NULL: none known), see .h */
static char *(*attributes_of) (const char *node) = NULL;

void
se_replica_attributes_lookup(char *(*fn) (const char *node))
{
	attributes_of = fn;
}

/*
 * Does spec "name:value" match one of node's attributes, '*' wildcards in
 * both parts (ES's DiscoveryNodes.resolveNodes)?
 */
static bool
attribute_matches(const char *spec, const char *node)
{
	const char *colon = strchr(spec, ':');
	char	   *attrs;
	char	   *name;
	char	   *tok;
	char	   *save = NULL;
	bool		found = false;

	if (colon == NULL || attributes_of == NULL || (attrs = attributes_of(node)) == NULL)
		return false;
	name = pnstrdup(spec, colon - spec);
	for (tok = strtok_r(attrs, ",", &save); tok != NULL && !found; tok = strtok_r(NULL, ",", &save))
	{
		char	   *c = strchr(tok, ':');

		if (c == NULL)
			continue;
		*c = '\0';
		found = se_wildcard_match(name, tok) && se_wildcard_match(colon + 1, c + 1);
	}
	pfree(name);
	pfree(attrs);
	return found;
}

/*
 * Is node one of p's nodes (names, '*' wildcards, _local, _all; for
 * _only_nodes, which ES resolves as node specs, attr:value too)?
 */
static bool
node_listed(const SePreference *p, const char *node, const char *me)
{
	int			i;

	for (i = 0; i < p->nnodes; i++)
	{
		const char *v = p->nodes[i];

		if (strcmp(v, "_all") == 0 || (strcmp(v, "_local") == 0 && strcmp(node, me) == 0) ||
			se_wildcard_match(v, node) ||
			(p->kind == SE_PREF_ONLY_NODES && attribute_matches(v, node)))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------------
 * ARS statistics
 * ---------------------------------------------------------------------
 */
/* this process's own table until se_ars_use_table gives the node's */
static SeArsTable local_table;
static SeArsTable *tab = &local_table;
static void (*tab_lock) (bool acquire) = NULL;

/* what this process plans to send to each node (per process: see .h) */
static struct
{
	char		node[SE_ARS_NODE_LEN];
	int			n;
}			outstanding[SE_ARS_MAX_NODES];
static int	noutstanding = 0;

void
se_ars_use_table(SeArsTable *t, void (*lock) (bool acquire))
{
	tab = t;
	tab_lock = lock;
}

static inline void
lock(void)
{
	if (tab_lock)
		tab_lock(true);
}

static inline void
unlock(void)
{
	if (tab_lock)
		tab_lock(false);
}

/* node's entry (the lock held), created when asked; NULL: none / full */
static SeArsNodeStats *
ars_find(const char *node, bool create)
{
	int			i;

	if (node == NULL || node[0] == '\0')
		return NULL;
	for (i = 0; i < tab->n; i++)
		if (strcmp(tab->nodes[i].node, node) == 0)
			return &tab->nodes[i];
	if (!create || tab->n == SE_ARS_MAX_NODES || strlen(node) >= SE_ARS_NODE_LEN)
		return NULL;
	memset(&tab->nodes[tab->n], 0, sizeof(SeArsNodeStats));
	strlcpy(tab->nodes[tab->n].node, node, SE_ARS_NODE_LEN);
	return &tab->nodes[tab->n++];
}

static int
outstanding_of(const char *node)
{
	int			i;

	for (i = 0; i < noutstanding; i++)
		if (strcmp(outstanding[i].node, node) == 0)
			return outstanding[i].n;
	return 0;
}

static double
ewma(double old, double v, int64 samples)
{
	return samples == 0 ? v : SE_ARS_ALPHA * v + (1.0 - SE_ARS_ALPHA) * old;
}

void
se_ars_begin(const char *node)
{
	int			i;

	for (i = 0; i < noutstanding; i++)
		if (strcmp(outstanding[i].node, node) == 0)
		{
			outstanding[i].n++;
			return;
		}
	if (noutstanding == SE_ARS_MAX_NODES || strlen(node) >= SE_ARS_NODE_LEN)
		return;
	strlcpy(outstanding[noutstanding].node, node, SE_ARS_NODE_LEN);
	outstanding[noutstanding++].n = 1;
}

void
se_ars_clear_outstanding(void)
{
	noutstanding = 0;
}

void
se_ars_record(const char *node, double queue_size, double response_ms, double service_ms)
{
	SeArsNodeStats *s;

	lock();
	s = ars_find(node, true);
	if (s != NULL)
	{
		s->queue_size = ewma(s->queue_size, queue_size, s->samples);
		s->response_ms = ewma(s->response_ms, response_ms, s->samples);
		s->service_ms = ewma(s->service_ms, service_ms, s->samples);
		s->samples++;
	}
	unlock();
}

bool
se_ars_stats(const char *node, SeArsNodeStats *out)
{
	SeArsNodeStats *s;
	bool		found;

	lock();
	s = ars_find(node, false);
	found = s != NULL && s->samples > 0;
	if (found)
		*out = *s;
	unlock();
	if (found)
		out->outstanding = outstanding_of(node);
	return found;
}

double
se_ars_rank(const SeArsNodeStats *s, int nclients)
{
	double		q_hat = 1.0 + (double) s->outstanding * nclients + s->queue_size;

	/* a service time of 0 (a reply faster than the clock) would divide by 0 */
	double		mu_inv = Max(s->service_ms, 1e-3);

	/* ES: rS - (1 / muBarS) + qHatS^3 / muBarS, muBarS = 1 / service time */
	return s->response_ms - mu_inv + q_hat * q_hat * q_hat * mu_inv;
}

void
se_ars_reset(void)
{
	lock();
	tab->n = 0;
	unlock();
	noutstanding = 0;
}

int
se_ars_all(SeArsNodeStats *out, int max)
{
	int			i,
				n;

	lock();
	n = Min(tab->n, max);
	for (i = 0; i < n; i++)
		out[i] = tab->nodes[i];
	unlock();
	for (i = 0; i < n; i++)
		out[i].outstanding = outstanding_of(out[i].node);
	return n;
}

/*
 * ES's adjustStats: the nodes not chosen get their queue, response and
 * service time pulled halfway to the winner's, so a node ranked badly once
 * is not starved of the requests that would show it recovered.
 */
static void
ars_adjust(const char *winner, const SeShardCopy **cand, int n)
{
	SeArsNodeStats *win;
	int			i;

	lock();
	win = ars_find(winner, false);
	for (i = 0; win && i < n; i++)
	{
		SeArsNodeStats *s = ars_find(cand[i]->node, false);

		if (s == NULL || s == win || s->samples == 0)
			continue;
		s->queue_size = (win->queue_size + s->queue_size) / 2;
		s->response_ms = (win->response_ms + s->response_ms) / 2;
		s->service_ms = (win->service_ms + s->service_ms) / 2;
	}
	unlock();
}

/* ---------------------------------------------------------------------
 * The choice
 * ---------------------------------------------------------------------
 */
const char *
se_replica_choose(const SeShardRouting *r, const char *index, int shard,
				  const char *me, const SePreference *p, uint32 hash,
				  bool use_ars, SeError *err)
{
	SePrefKind	kind = p ? p->kind : SE_PREF_DEFAULT;
	const SeShardCopy **cand = palloc(sizeof(SeShardCopy *) * Max(r->ncopies, 1));
	SeArsNodeStats *stats = palloc0(sizeof(SeArsNodeStats) * Max(r->ncopies, 1));
	bool	   *has = palloc0(sizeof(bool) * Max(r->ncopies, 1));
	int			n = 0,
				k,
				best = -1;
	double		best_rank = 0;
	bool		any_stats = false;

	for (k = 0; k < r->ncopies; k++)
	{
		const SeShardCopy *c = &r->copies[k];

		if (!se_copy_readable(c))
			continue;
		if (kind == SE_PREF_ONLY_LOCAL && strcmp(c->node, me) != 0)
			continue;
		if (kind == SE_PREF_ONLY_NODES && !node_listed(p, c->node, me))
			continue;
		cand[n++] = c;
	}
	if (n == 0)
	{
		if (kind == SE_PREF_ONLY_LOCAL)
			return NULL;
		if (kind == SE_PREF_ONLY_NODES)
		{
			const char *spec = strchr(p->text, ':');

			/* ES's onlyNodeSelectorActiveInitializingShardsIt */
			se_error_set(err, 400, "illegal_argument_exception",
						 "no data nodes with %s [%s] found for shard: [%s][%d]",
						 p->nnodes == 1 ? "criteria" : "criterion",
						 spec ? spec + 1 : "", index, shard);
			return NULL;
		}
		return r->copies[0].node;
	}
	if (kind == SE_PREF_CUSTOM)
		return cand[p->hash % (uint32) n]->node;

	/* _local and _prefer_nodes: only the preferred copies, when there are any */
	if (kind == SE_PREF_LOCAL || kind == SE_PREF_PREFER_NODES)
	{
		int			m = 0;

		for (k = 0; k < n; k++)
			if (kind == SE_PREF_LOCAL ? strcmp(cand[k]->node, me) == 0
				: node_listed(p, cand[k]->node, me))
				cand[m++] = cand[k];
		if (m > 0)
			n = m;
	}
	if (n == 1)
		return cand[0]->node;

	if (use_ars)
	{
		for (k = 0; k < n; k++)
		{
			has[k] = se_ars_stats(cand[k]->node, &stats[k]);
			any_stats |= has[k];
		}
	}
	if (any_stats)
	{
		/*
		 * ES ranks a node without statistics first (it has to be tried to
		 * get some); among those, this node's copy first.
		 */
		for (k = 0; k < n; k++)
		{
			double		rank = has[k] ? se_ars_rank(&stats[k], n) : -INFINITY;
			bool		mine = strcmp(cand[k]->node, me) == 0;

			if (best < 0 || rank < best_rank ||
				(rank == best_rank && mine))
			{
				best = k;
				best_rank = rank;
			}
		}
		if (has[best])
			ars_adjust(cand[best]->node, cand, n);
		return cand[best]->node;
	}
	/* no statistics (or ARS off): this node's copy, else the one hash picks */
	for (k = 0; k < n; k++)
		if (strcmp(cand[k]->node, me) == 0)
			return cand[k]->node;
	return cand[hash % (uint32) n]->node;
}
