/*-------------------------------------------------------------------------
 *
 * nodes.c
 *	  Node-level APIs answered by every node of the cluster: _nodes/stats
 *	  and _cat/thread_pool.
 *
 * The coordinating node asks each member for its own figures through the
 * transport ("node_stats", answered by the same function it runs for
 * itself, without a connection to itself) and assembles ES's answer.  A
 * member that does not answer in time is counted in _nodes.failed with
 * its error, as ES does; the others are still reported.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include "pgtime.h"
#include "postmaster/postmaster.h"

#include "api/api.h"
#include "cluster/coordinator.h"
#include "cluster/replica_select.h"
#include "http/http.h"
#include "node/node.h"
#include "transport/transport.h"

static void ars_stats_json(StringInfo out);

/* ES's default node request timeout is 30 s; _cat waits less */
#define NODE_STATS_TIMEOUT_MS	10000

/* The write and search pools' figures, in the ES view. */
static void
pool_stats_json(StringInfo out)
{
	int			active = 0,
				queued;
	uint64		rejected,
				completed;
	int			i,
				largest;

	SpinLockAcquire(&SeShmem->queue_mutex);
	for (i = 0; i < SeShmem->nworkers; i++)
		if (SeShmem->workers[i].active > 0)
			active++;
	/* a busy thread is active, every other task is queued */
	queued = Max(0, SeShmem->queued - active);
	rejected = SeShmem->rejected;
	completed = SeShmem->completed;
	largest = SeShmem->largest_active;
	SpinLockRelease(&SeShmem->queue_mutex);
	appendStringInfo(out, "{\"write\":{\"threads\":%d,\"queue\":%d,\"active\":%d,\"queue_size\":%d,"
					 "\"rejected\":" UINT64_FORMAT ",\"largest\":%d,\"completed\":" UINT64_FORMAT "}",
					 SeShmem->nworkers, queued, active, se_write_queue_size, rejected, largest,
					 completed);
	se_search_queue_stats(&active, &queued, &rejected, &completed);
	appendStringInfo(out, ",\"search\":{\"threads\":%d,\"queue\":%d,\"active\":%d,\"queue_size\":%d,"
					 "\"rejected\":" UINT64_FORMAT ",\"largest\":%d,\"completed\":" UINT64_FORMAT "}}",
					 se_search_queue_workers(), queued, active, se_search_queue_size,
					 rejected, se_search_queue_largest(), completed);
}

/*
 * The file system of this node's data directory, as ES's fs stats: total
 * and per data path (one here), what the exporter's filesystem metrics and
 * curator's allocation checks read.
 */
static void
fs_stats_json(StringInfo out)
{
	const char *dir = se_data_directory();
	struct statvfs sv;
	char	   *sizes = "";

	if (statvfs(dir, &sv) == 0)
		sizes = psprintf("\"total_in_bytes\":" INT64_FORMAT ",\"free_in_bytes\":" INT64_FORMAT
						 ",\"available_in_bytes\":" INT64_FORMAT,
						 (int64) sv.f_blocks * sv.f_frsize, (int64) sv.f_bfree * sv.f_frsize,
						 (int64) sv.f_bavail * sv.f_frsize);
	appendStringInfo(out, "{\"timestamp\":" INT64_FORMAT ",\"total\":{%s},\"data\":[{\"path\":",
					 se_now_millis(), sizes);
	se_json_write_string(out, dir, -1);
	appendStringInfo(out, "%s%s}]}", sizes[0] ? "," : "", sizes);
}

/*
 * The machine as ES's os stats: load averages (getloadavg) and memory and
 * swap (sysinfo: free is the kernel's free memory, as ES reports it), and
 * cpu.percent (node_process.c: since this process last asked).
 */
static void
os_stats_json(StringInfo out)
{
	double		load[3];
	struct sysinfo si;

	appendStringInfo(out, "{\"timestamp\":" INT64_FORMAT ",\"cpu\":{\"percent\":%d", se_now_millis(),
					 se_os_cpu_percent());
	if (getloadavg(load, 3) == 3)
		appendStringInfo(out, ",\"load_average\":{\"1m\":%.2f,\"5m\":%.2f,\"15m\":%.2f}",
						 load[0], load[1], load[2]);
	appendStringInfoChar(out, '}');
	if (sysinfo(&si) == 0)
	{
		int64		unit = si.mem_unit ? si.mem_unit : 1;
		int64		total = (int64) si.totalram * unit;
		int64		free = (int64) si.freeram * unit;
		int64		swap_total = (int64) si.totalswap * unit;
		int64		swap_free = (int64) si.freeswap * unit;

		appendStringInfo(out, ",\"mem\":{\"total_in_bytes\":" INT64_FORMAT
						 ",\"free_in_bytes\":" INT64_FORMAT ",\"used_in_bytes\":" INT64_FORMAT
						 ",\"free_percent\":%d,\"used_percent\":%d}"
						 ",\"swap\":{\"total_in_bytes\":" INT64_FORMAT
						 ",\"free_in_bytes\":" INT64_FORMAT ",\"used_in_bytes\":" INT64_FORMAT "}",
						 total, free, total - free,
						 total > 0 ? (int) (100 * free / total) : 0,
						 total > 0 ? (int) (100 - 100 * free / total) : 0,
						 swap_total, swap_free, swap_total - swap_free);
	}
	appendStringInfoChar(out, '}');
}

/*
 * ES's transport section from the node's counters (transport/): inbound
 * connections open (backends serving peers), outbound connections
 * opened, and messages and bytes received and sent, both sides.
 */
static void
transport_stats_json(StringInfo out)
{
	appendStringInfo(out, "{\"server_open\":" UINT64_FORMAT
					 ",\"total_outbound_connections\":" UINT64_FORMAT
					 ",\"rx_count\":" UINT64_FORMAT ",\"rx_size_in_bytes\":" UINT64_FORMAT
					 ",\"tx_count\":" UINT64_FORMAT ",\"tx_size_in_bytes\":" UINT64_FORMAT "}",
					 pg_atomic_read_u64(&SeShmem->transport_server_open),
					 pg_atomic_read_u64(&SeShmem->transport_outbound_opened),
					 pg_atomic_read_u64(&SeShmem->transport_rx_count),
					 pg_atomic_read_u64(&SeShmem->transport_rx_bytes),
					 pg_atomic_read_u64(&SeShmem->transport_tx_count),
					 pg_atomic_read_u64(&SeShmem->transport_tx_bytes));
}

/*
 * ES's ingest section.  This server has no ingest pipelines (a bulk's
 * `pipeline` is accepted and not run), so no document ever went through
 * one: ES's shape for a node without pipelines, totals 0.
 */
static void
ingest_stats_json(StringInfo out)
{
	appendStringInfoString(out, "{\"total\":{\"count\":0,\"time_in_millis\":0,\"current\":0,"
						   "\"failed\":0},\"pipelines\":{}}");
}

/* Transport action "node_stats": this node's stats object. */
static bool
node_stats_action(const char *payload, size_t len, StringInfo reply, SeError *err)
{
	SeClusterMember m;

	se_cluster_local_member(&m);
	appendStringInfoString(reply, "{\"name\":");
	se_json_write_string(reply, m.name, strlen(m.name));
	appendStringInfoString(reply, ",\"roles\":");
	se_node_roles_json(m.roles, reply);
	appendStringInfoString(reply, ",\"thread_pool\":");
	pool_stats_json(reply);
	appendStringInfoString(reply, ",\"adaptive_selection\":");
	ars_stats_json(reply);
	appendStringInfoString(reply, ",\"fs\":");
	fs_stats_json(reply);
	appendStringInfoString(reply, ",\"os\":");
	os_stats_json(reply);
	appendStringInfoString(reply, ",\"process\":");
	se_node_process_json(reply);
	appendStringInfoString(reply, ",\"jvm\":");
	se_node_jvm_json(reply);
	appendStringInfoString(reply, ",\"breakers\":");
	se_node_breakers_json(reply);
	appendStringInfoString(reply, ",\"indices\":");
	se_stats_node_indices_json(reply);
	appendStringInfoString(reply, ",\"transport\":");
	transport_stats_json(reply);
	appendStringInfoString(reply, ",\"http\":");
	se_http_stats_json(reply);
	appendStringInfoString(reply, ",\"ingest\":");
	ingest_stats_json(reply);
	appendStringInfoChar(reply, '}');
	return true;
}

void
se_nodes_register_actions(void)
{
	se_transport_register("node_stats", node_stats_action);
}

/*
 * Ask every member of the cluster (this node in-process, the others over
 * the transport) for action's answer; calls[i] matches v->members[i].
 */
static SeTransportCall *
gather(const SeClusterView *v, const char *action, SeTransportHandler local, int timeout_ms)
{
	SeTransportCall *calls = palloc0(sizeof(SeTransportCall) * Max(1, v->nmembers));
	SeTransportCall *remote = palloc0(sizeof(SeTransportCall) * Max(1, v->nmembers));
	int		   *remote_of = palloc(sizeof(int) * Max(1, v->nmembers));
	int			nremote = 0;
	int			i;

	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];
		SeTransportCall *c = &calls[i];

		c->node = m->name;
		c->conninfo = m->conninfo;
		c->action = action;
		if (strcmp(m->name, v->local_name) == 0)
		{
			initStringInfo(&c->reply);
			se_error_init(&c->err);
			c->ok = local(NULL, 0, &c->reply, &c->err);
		}
		else
		{
			remote[nremote] = *c;
			remote_of[nremote++] = i;
		}
	}
	se_transport_call_each(remote, nremote, timeout_ms);
	for (i = 0; i < nremote; i++)
		calls[remote_of[i]] = remote[i];
	return calls;
}

/* The members' node_stats answers, parsed; NULL for a member that failed. */
static SeJson **
gather_stats(const SeClusterView *v, int timeout_ms, SeTransportCall **calls_out)
{
	SeTransportCall *calls = gather(v, "node_stats", node_stats_action, timeout_ms);
	SeJson	  **stats = palloc0(sizeof(SeJson *) * Max(1, v->nmembers));
	int			i;

	for (i = 0; i < v->nmembers; i++)
	{
		SeJsonParseOptions opts = {64, false};

		if (calls[i].ok)
			stats[i] = se_json_parse(calls[i].reply.data, calls[i].reply.len, &opts, &calls[i].err);
		calls[i].ok = stats[i] != NULL;
	}
	*calls_out = calls;
	return stats;
}

/*
 * This node's adaptive replica selection statistics of its peers, keyed
 * by node name (se_op_nodes_stats turns them into node ids), with ES's
 * fields: outgoing_searches, avg_queue_size, avg_service_time_ns,
 * avg_response_time_ns, rank ("%.1f").
 */
static void
ars_stats_json(StringInfo out)
{
	SeArsNodeStats *st = palloc(sizeof(SeArsNodeStats) * SE_ARS_MAX_NODES);
	int			n = se_ars_all(st, SE_ARS_MAX_NODES);
	int			i;

	appendStringInfoChar(out, '{');
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, st[i].node, strlen(st[i].node));
		appendStringInfo(out, ":{\"outgoing_searches\":%d,\"avg_queue_size\":%d,"
						 "\"avg_service_time_ns\":" INT64_FORMAT ",\"avg_response_time_ns\":" INT64_FORMAT
						 ",\"rank\":\"%.1f\"}",
						 st[i].outstanding, (int) (st[i].queue_size + 0.5),
						 (int64) (st[i].service_ms * 1e6), (int64) (st[i].response_ms * 1e6),
						 se_ars_rank(&st[i], 1));
	}
	appendStringInfoChar(out, '}');
}

/* Whether node filter f (ES node spec: _all, _local, _master, names) has m. */
static bool
node_selected(const char *f, const SeClusterView *v, const SeClusterMember *m)
{
	char	   *list,
			   *tok,
			   *save;

	if (f == NULL || f[0] == '\0')
		return true;
	list = pstrdup(f);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		if (strcmp(tok, "_all") == 0 ||
			(strcmp(tok, "_local") == 0 && strcmp(m->name, v->local_name) == 0) ||
			(strcmp(tok, "_master") == 0 && strcmp(m->name, v->master) == 0) ||
			strcmp(tok, m->ephemeral_id) == 0 || se_wildcard_match(tok, m->name))
			return true;
	}
	return false;
}

/* Keep only the members node filter f selects. */
static void
select_nodes(SeClusterView *v, const char *f)
{
	int			i,
				n = 0;

	for (i = 0; i < v->nmembers; i++)
		if (node_selected(f, v, &v->members[i]))
			v->members[n++] = v->members[i];
	v->nmembers = n;
}

/*
 * A member's addresses as ES's node objects have them: transport_address,
 * host and ip (the host its transport conninfo names).
 */
static void
node_address_json(const SeClusterMember *m, StringInfo out)
{
	const char *host = se_conninfo_host(m->conninfo);
	const char *port = se_conninfo_port(m->conninfo);
	char	   *addr;

	/* no port in the conninfo: libpq's default, or this server's own */
	if (port == NULL)
		port = strcmp(m->ephemeral_id, SeCluster->ephemeral_id) == 0 ?
			psprintf("%d", PostPortNumber) : DEF_PGPORT_STR;
	addr = psprintf("%s:%s", host, port);

	appendStringInfoString(out, ",\"transport_address\":");
	se_json_write_string(out, addr, -1);
	appendStringInfoString(out, ",\"host\":");
	se_json_write_string(out, host, -1);
	appendStringInfoString(out, ",\"ip\":");
	se_json_write_string(out, host, -1);
}

/*
 * The start of a _nodes answer: _nodes (total, successful, failed with
 * each failure, as ES's nodes responses count members that did not answer)
 * and cluster_name, up to the opening of "nodes".
 */
static void
nodes_header(const SeClusterView *v, const SeTransportCall *calls, StringInfo out)
{
	StringInfoData failures;
	int			nfailed = 0;
	int			i;

	initStringInfo(&failures);
	for (i = 0; i < v->nmembers; i++)
		if (!calls[i].ok)
		{
			appendStringInfoString(&failures, nfailed++ ? "," : "");
			appendStringInfoString(&failures, "{\"type\":\"failed_node_exception\",\"reason\":");
			se_json_write_string(&failures, calls[i].err.reason, strlen(calls[i].err.reason));
			appendStringInfoString(&failures, ",\"node_id\":");
			se_json_write_string(&failures, v->members[i].ephemeral_id,
								 strlen(v->members[i].ephemeral_id));
			appendStringInfo(&failures, ",\"caused_by\":{\"type\":\"%s\"}}", calls[i].err.type);
		}
	appendStringInfo(out, "{\"_nodes\":{\"total\":%d,\"successful\":%d,\"failed\":%d",
					 v->nmembers, v->nmembers - nfailed, nfailed);
	if (nfailed > 0)
		appendStringInfo(out, ",\"failures\":[%s]", failures.data);
	appendStringInfoString(out, "},\"cluster_name\":");
	se_json_write_string(out, v->cluster_name, strlen(v->cluster_name));
	appendStringInfoString(out, ",\"nodes\":{");
}

/*
 * Whether metrics (ES's comma list of _nodes/stats metrics, NULL or _all:
 * every one) has metric; an unknown name is ES's 400.  ES's metrics this
 * server has no figures for (script, discovery, indexing_pressure ...) are accepted and
 * answer nothing.
 */
static bool
metric_wanted(const char *metrics, const char *metric)
{
	char	   *list,
			   *tok,
			   *save;

	if (metrics == NULL)
		return true;
	list = pstrdup(metrics);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, "_all") == 0 || strcmp(tok, metric) == 0)
			return true;
	return false;
}

static bool
metrics_valid(const char *metrics, SeError *err)
{
	static const char *const known[] = {"_all", "indices", "os", "process", "jvm",
		"thread_pool", "fs", "transport", "http", "breaker", "breakers", "script",
		"discovery", "ingest", "adaptive_selection", "script_cache", "indexing_pressure",
	"repositories", "allocations", NULL};
	char	   *list,
			   *tok,
			   *save;
	int			k;

	if (metrics == NULL)
		return true;
	list = pstrdup(metrics);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		for (k = 0; known[k] && strcmp(known[k], tok) != 0; k++)
			;
		if (known[k] == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "request [/_nodes/stats/%s] contains unrecognized metric: [%s]", metrics, tok);
			return false;
		}
	}
	return true;
}

/* GET /_nodes/stats[/{metric}], /_nodes/{node_id}/stats[/{metric}]. */
bool
se_op_nodes_stats(const char *nodes, const char *metrics, int timeout_ms, SeResponse *r,
				  SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeClusterView *all = palloc(sizeof(SeClusterView));	/* ids of the peers */
	SeTransportCall *calls;
	SeJson	  **stats;
	int			i;
	bool		first = true;
	int			sec_no;
	static const char *const sections[] = {"indices", "fs", "os", "process", "jvm", "breakers",
	"transport", "http", "ingest"};

	se_require_started();
	if (!metrics_valid(metrics, err))
		return false;
	/* ES's path says "breaker", its answer "breakers" */
	if (metrics && metric_wanted(metrics, "breaker"))
		metrics = psprintf("%s,breakers", metrics);
	se_cluster_view(v);
	se_cluster_view(all);
	select_nodes(v, nodes);
	stats = gather_stats(v, timeout_ms, &calls);
	nodes_header(v, calls, &r->body);
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];

		if (stats[i] == NULL)
			continue;
		if (!first)
			appendStringInfoChar(&r->body, ',');
		first = false;
		se_json_write_string(&r->body, m->ephemeral_id, strlen(m->ephemeral_id));
		appendStringInfoString(&r->body, ":{\"timestamp\":");
		appendStringInfo(&r->body, INT64_FORMAT, se_now_millis());
		appendStringInfoString(&r->body, ",\"name\":");
		se_json_write_string(&r->body, m->name, strlen(m->name));
		node_address_json(m, &r->body);
		appendStringInfoString(&r->body, ",\"roles\":");
		se_node_roles_json(m->roles, &r->body);
		if (metric_wanted(metrics, "thread_pool"))
		{
			appendStringInfoString(&r->body, ",\"thread_pool\":");
			se_json_write(&r->body, se_json_get(stats[i], "thread_pool"));
		}
		for (sec_no = 0; sec_no < lengthof(sections); sec_no++)
		{
			const SeJson *sec = se_json_get(stats[i], sections[sec_no]);

			/* a node of an older build answers without them */
			if (sec == NULL || !metric_wanted(metrics, sections[sec_no]))
				continue;
			appendStringInfo(&r->body, ",\"%s\":", sections[sec_no]);
			se_json_write(&r->body, sec);
		}
		if (!metric_wanted(metrics, "adaptive_selection"))
		{
			appendStringInfoChar(&r->body, '}');
			continue;
		}
		appendStringInfoString(&r->body, ",\"adaptive_selection\":{");
		{
			const SeJson *as = se_json_get(stats[i], "adaptive_selection");
			int			k,
						j,
						nout = 0;

			/* ES keys them by node id */
			for (k = 0; as && as->type == SE_JSON_OBJECT && k < as->u.o.count; k++)
				for (j = 0; j < all->nmembers; j++)
					if (strcmp(all->members[j].name, as->u.o.members[k].key) == 0)
					{
						if (nout++ > 0)
							appendStringInfoChar(&r->body, ',');
						se_json_write_string(&r->body, all->members[j].ephemeral_id,
											 strlen(all->members[j].ephemeral_id));
						appendStringInfoChar(&r->body, ':');
						se_json_write(&r->body, as->u.o.members[k].value);
					}
		}
		appendStringInfoString(&r->body, "}}");
	}
	appendStringInfoString(&r->body, "}}");
	return true;
}

/*
 * The Elasticsearch version this server answers as: GET /'s version object
 * and each node's version in _nodes.  8.x unless
 * search_engine.override_main_response_version names another, for tools
 * that refuse an 8.x server; then that major's Lucene and compatibility
 * floors, as OpenSearch's override does.
 */
void
se_es_version(SeEsVersion *ver)
{
	const char *o = se_override_main_response_version;

	ver->number = SE_ES_VERSION;
	ver->lucene = "9.8.0";
	ver->wire = "7.17.0";
	ver->index = "7.0.0";
	if (o && o[0] == '7')
		ver->number = o, ver->lucene = "8.11.1", ver->wire = "6.8.0", ver->index = "6.0.0-beta1";
	else if (o && o[0] == '6')
		ver->number = o, ver->lucene = "7.7.3", ver->wire = "5.6.0", ver->index = "5.0.0";
	else if (o && o[0] == '8')
		ver->number = o;
}

/*
 * The build date ES reports, in its form (ISO 8601, UTC): here the time
 * this library's file was written (built or installed), found through the
 * dynamic loader; the epoch if it cannot be told.
 */
const char *
se_es_build_date(void)
{
	Dl_info		dl;
	struct stat st;
	struct pg_tm tm;
	pg_time_t	t = 0;

	if (dladdr((void *) se_es_build_date, &dl) != 0 && dl.dli_fname != NULL &&
		stat(dl.dli_fname, &st) == 0)
		t = (pg_time_t) st.st_mtime;
	tm = *pg_gmtime(&t);
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.000Z", tm.tm_year + 1900, tm.tm_mon + 1,
					tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/*
 * GET /_nodes, /_nodes/{node_id}: what each member is -- name, addresses,
 * version and build, roles, attributes -- from the membership, and its
 * thread pools' sizes (type, size, queue_size) from its own node_stats
 * answer, so a node's pools are as that node is configured.
 */
bool
se_op_nodes_info(const char *nodes, int timeout_ms, SeResponse *r, SeError *err)
{
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeTransportCall *calls;
	SeJson	  **stats;
	SeEsVersion ver;
	int			i;
	bool		first = true;

	se_require_started();
	se_es_version(&ver);
	se_cluster_view(v);
	select_nodes(v, nodes);
	stats = gather_stats(v, timeout_ms, &calls);
	nodes_header(v, calls, &r->body);
	for (i = 0; i < v->nmembers; i++)
	{
		const SeClusterMember *m = &v->members[i];
		const SeJson *tp;
		int			k;

		if (stats[i] == NULL)
			continue;
		appendStringInfoString(&r->body, first ? "" : ",");
		first = false;
		se_json_write_string(&r->body, m->ephemeral_id, -1);
		appendStringInfoString(&r->body, ":{\"name\":");
		se_json_write_string(&r->body, m->name, -1);
		node_address_json(m, &r->body);
		appendStringInfoString(&r->body, ",\"version\":");
		se_json_write_string(&r->body, ver.number, -1);
		appendStringInfoString(&r->body, ",\"build_flavor\":\"default\",\"build_type\":\"deb\","
							   "\"build_hash\":\"search_engine-" SE_EXTENSION_VERSION "\",\"roles\":");
		se_node_roles_json(m->roles, &r->body);
		appendStringInfoString(&r->body, ",\"attributes\":");
		se_node_attributes_json(m->attributes, &r->body);
		appendStringInfoString(&r->body, ",\"thread_pool\":{");
		tp = se_json_get(stats[i], "thread_pool");
		for (k = 0; tp && tp->type == SE_JSON_OBJECT && k < tp->u.o.count; k++)
		{
			const SeJson *threads = se_json_get(tp->u.o.members[k].value, "threads");
			const SeJson *queue = se_json_get(tp->u.o.members[k].value, "queue_size");

			appendStringInfoString(&r->body, k ? "," : "");
			se_json_write_string(&r->body, tp->u.o.members[k].key, -1);
			appendStringInfo(&r->body, ":{\"type\":\"fixed\",\"size\":" INT64_FORMAT
							 ",\"queue_size\":" INT64_FORMAT "}",
							 threads && threads->type == SE_JSON_NUMBER ? threads->u.n.i : 0,
							 queue && queue->type == SE_JSON_NUMBER ? queue->u.n.i : 0);
		}
		appendStringInfoString(&r->body, "}}");
	}
	appendStringInfoString(&r->body, "}}");
	return true;
}

/*
 * Rows of _cat/thread_pool for every member that answered (node_name,
 * name, threads, active, queue, queue_size, rejected, completed): a
 * member that does not answer is left out, as ES's _cat does.
 */
List *
se_nodes_thread_pool_rows(void)
{
	static const char *pools[] = {"write", "search"};
	SeClusterView *v = palloc(sizeof(SeClusterView));
	SeTransportCall *calls;
	SeJson	  **stats;
	List	   *rows = NIL;
	int			i,
				p;

	se_cluster_view(v);
	stats = gather_stats(v, NODE_STATS_TIMEOUT_MS, &calls);
	for (i = 0; i < v->nmembers; i++)
	{
		const SeJson *tp = stats[i] ? se_json_get(stats[i], "thread_pool") : NULL;

		for (p = 0; tp && p < lengthof(pools); p++)
		{
			const SeJson *pool = se_json_get(tp, pools[p]);
			static const char *fields[] = {"threads", "active", "queue", "queue_size",
			"rejected", "completed"};
			char	  **row = palloc0(sizeof(char *) * 8);
			int			f;

			if (pool == NULL || pool->type != SE_JSON_OBJECT)
				continue;
			row[0] = v->members[i].name;
			row[1] = (char *) pools[p];
			for (f = 0; f < lengthof(fields); f++)
			{
				const SeJson *n = se_json_get(pool, fields[f]);

				row[2 + f] = psprintf(INT64_FORMAT, n && n->type == SE_JSON_NUMBER ? n->u.n.i : 0);
			}
			rows = lappend(rows, row);
		}
	}
	return rows;
}
