/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  All search_engine GUCs, registered in one alphabetical function.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "cluster/coordinator.h"
#include "node/node.h"
#include "node/tasks.h"
#include "search/search.h"
#include "shard/pit_registry.h"
#include "transport/transport_int.h"

char	   *se_allowed_script_languages = NULL;
int			se_cluster_lease_ttl = 5;
char	   *se_cluster_name = NULL;
char	   *se_database = NULL;
char	   *se_data_directory_setting = NULL;
bool		se_debug_waitpoints = false;
char	   *se_etcd_endpoints = NULL;
int			se_index_buffer_size_kb = 256 * 1024;
int			se_indexing_pressure_limit_kb = 64 * 1024;
int			se_max_document_size_kb = 100 * 1024;
int			se_max_shards = 1024;
int			se_merge_threads = 1;
char	   *se_node_attributes = NULL;
char	   *se_node_name = NULL;
char	   *se_node_roles = NULL;
char	   *se_override_main_response_version = NULL;
char	   *se_publish_conninfo = NULL;
int			se_search_debug_delay_ms = 0;
bool		se_search_parallel = true;
int			se_search_parallel_min_docs = 1000000;
int			se_sql_script_memory_kb = 64 * 1024;
int			se_sql_script_timeout_ms = 1000;
int			se_search_queue_size = 1000;
int			se_search_threads = -1;
char	   *se_transport_conninfo = NULL;
int			se_write_queue_size = 10000;
int			se_write_threads = 0;

/* Script languages, as bits of the parsed search_engine.allowed_script_languages */
static const struct
{
	const char *name;
	int			bit;
}			script_langs[] = {
	{"painless", 0x1}, {"sql", 0x2},
};

static int	allowed_script_langs = 0x3;

static int
script_lang_bit(const char *name)
{
	int			i;

	for (i = 0; i < lengthof(script_langs); i++)
		if (strcmp(script_langs[i].name, name) == 0)
			return script_langs[i].bit;
	return 0;
}

/* Parse the list ("none" or empty: no language) into the bits for the assign hook. */
static bool
check_allowed_script_languages(char **newval, void **extra, GucSource source)
{
	char	   *raw = pstrdup(*newval);
	List	   *names;
	ListCell   *lc;
	int			bits = 0;

	if (!SplitIdentifierString(raw, ',', &names))
	{
		GUC_check_errdetail("List syntax is invalid.");
		return false;
	}
	foreach(lc, names)
	{
		const char *name = (const char *) lfirst(lc);
		int			bit = script_lang_bit(name);

		if (strcmp(name, "none") == 0)
		{
			if (list_length(names) == 1)
				continue;
			GUC_check_errdetail("\"none\" cannot be combined with languages.");
			return false;
		}
		if (bit == 0)
		{
			GUC_check_errdetail("Unknown script language \"%s\"; the languages are painless and sql, or none.",
								name);
			return false;
		}
		bits |= bit;
	}
	/* extra is free()d by the GUC machinery */
	*extra = malloc(sizeof(int));
	if (*extra == NULL)
		return false;
	*((int *) *extra) = bits;
	return true;
}

static void
assign_allowed_script_languages(const char *newval, void *extra)
{
	allowed_script_langs = *((int *) extra);
}

/*
 * May a script in lang (NULL: painless, the default) run?  Every place a
 * script enters asks here; a refusal is ES's illegal_argument_exception.
 */
bool
se_script_lang_allowed(const char *lang, SeError *err)
{
	int			bit;

	if (lang == NULL)
		lang = "painless";
	bit = script_lang_bit(lang);
	if (bit == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "script_lang not supported [%s]; supported: painless, sql", lang);
		return false;
	}
	if ((allowed_script_langs & bit) == 0)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "cannot execute [%s] scripts: search_engine.allowed_script_languages is [%s]",
					 lang, se_allowed_script_languages);
		return false;
	}
	return true;
}

/*
 * A cluster setting refused while the server starts: PostgreSQL would only
 * warn and use the default (a node asked to be coordinating-only would
 * then be master-eligible), so se_guc_define refuses to start instead.
 */
static bool cluster_setting_rejected = false;

static bool
cluster_setting_refused(void)
{
	if (process_shared_preload_libraries_in_progress)
		cluster_setting_rejected = true;
	return false;
}

/* node_roles: master and data, each at most once; empty is coordinating-only. */
static bool
check_node_roles(char **newval, void **extra, GucSource source)
{
	int			roles;
	char	   *detail;

	if (se_node_roles_parse(*newval, &roles, &detail))
		return true;
	GUC_check_errdetail("%s", detail);
	return cluster_setting_refused();
}

static bool
check_node_attributes(char **newval, void **extra, GucSource source)
{
	char	   *detail;

	if (se_node_attributes_parse(*newval, &detail))
		return true;
	GUC_check_errdetail("%s", detail);
	return cluster_setting_refused();
}

/* Names that become one part of an etcd key: no '/', and not empty. */
static bool
check_key_part(char **newval, void **extra, GucSource source)
{
	if (strchr(*newval, '/') != NULL)
	{
		GUC_check_errdetail("The name becomes part of the cluster's etcd keys, so it cannot contain \"/\".");
		return cluster_setting_refused();
	}
	return true;
}

static bool
check_cluster_name(char **newval, void **extra, GucSource source)
{
	if ((*newval)[0] == '\0')
	{
		GUC_check_errdetail("The cluster name cannot be empty.");
		return cluster_setting_refused();
	}
	return check_key_part(newval, extra, source);
}

/*
 * publish_conninfo is published to every node and shown to every user of
 * the extension: it must not carry a password (peers bring their own
 * credentials: a passfile or certificates).
 */
static bool
check_publish_conninfo(char **newval, void **extra, GucSource source)
{
	const char *p = *newval;

	for (; (p = strstr(p, "password")) != NULL; p++)
	{
		const char *q = p + strlen("password");

		while (*q == ' ')
			q++;
		if (*q == '=' && (p == *newval || p[-1] == ' ' || p[-1] == '&' || p[-1] == '?'))
		{
			GUC_check_errdetail("The connection string is published to every node; peers authenticate with their own credentials (a passfile or certificates), so it cannot hold a password.");
			return cluster_setting_refused();
		}
	}
	return true;
}

/* etcd_endpoints: empty, or comma-separated http:// or https:// URLs. */
static bool
check_etcd_endpoints(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	char	   *save = NULL;
	char	   *tok;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		while (*tok == ' ')
			tok++;
		if (strncmp(tok, "http://", 7) != 0 && strncmp(tok, "https://", 8) != 0)
		{
			GUC_check_errdetail("etcd endpoint \"%s\" is not an http:// or https:// URL.", tok);
			return cluster_setting_refused();
		}
	}
	return true;
}

/* Number of online CPUs: ES's default write pool size. */
static int
cpu_count(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1) ? 1 : (n > SE_MAX_WRITE_THREADS ? SE_MAX_WRITE_THREADS : (int) n);
}

/* Register the GUCs, in alphabetical order. */
/*
 * An Elasticsearch version number as GET / reports it: major.minor.patch,
 * major 6 to 8 (what clients that check the version accept), or empty.
 */
static bool
check_es_version(char **newval, void **extra, GucSource source)
{
	int			major,
				minor,
				patch,
				n = 0;

	if (**newval == '\0')
		return true;
	if (sscanf(*newval, "%d.%d.%d%n", &major, &minor, &patch, &n) != 3 ||
		(*newval)[n] != '\0' || major < 6 || major > 8 || minor < 0 || patch < 0)
	{
		GUC_check_errdetail("Expected an Elasticsearch version major.minor.patch with major 6, 7 or 8, e.g. 7.10.2.");
		return false;
	}
	return true;
}

void
se_guc_define(void)
{
	DefineCustomStringVariable("search_engine.allowed_script_languages",
							   "Script languages update scripts may use: painless, sql, or none.",
							   "A comma-separated list, as Elasticsearch's script.allowed_types; a script in another language fails with illegal_argument_exception.",
							   &se_allowed_script_languages, "painless,sql",
							   PGC_SIGHUP, GUC_LIST_INPUT,
							   check_allowed_script_languages, assign_allowed_script_languages, NULL);

	DefineCustomIntVariable("search_engine.cluster_lease_ttl",
							"Time to live of this node's etcd lease (membership and mastership).",
							"A master that cannot renew its lease stops acting as master before this much time has passed since its last renewal.",
							&se_cluster_lease_ttl, 5, 2, 3600,
							PGC_POSTMASTER, GUC_UNIT_S, NULL, NULL, NULL);

	DefineCustomStringVariable("search_engine.cluster_name",
							   "Name of the cluster this node belongs to.",
							   "Nodes with the same etcd endpoints and cluster name form one cluster; its keys live under /search_engine/<cluster_name>/.",
							   &se_cluster_name, "search_engine",
							   PGC_POSTMASTER, 0, check_cluster_name, NULL, NULL);

	DefineCustomStringVariable("search_engine.data_directory",
							   "Directory holding indices, translogs and the cluster state.",
							   "Empty means $PGDATA/search_engine.",
							   &se_data_directory_setting, "",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomStringVariable("search_engine.database",
							   "The one database that holds the search_engine extension.",
							   NULL,
							   &se_database, "postgres",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("search_engine.debug_waitpoints",
							 "Testing only: stop at named points while a test holds their advisory lock.",
							 "See se_debug_waitpoint; makes lifecycle races deterministic in tests.",
							 &se_debug_waitpoints, false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);

	DefineCustomStringVariable("search_engine.etcd_endpoints",
							   "etcd endpoints (v3 JSON gateway URLs, comma-separated) of the cluster's coordination store.",
							   "Empty means a single-node cluster: no etcd, this node is its own master.",
							   &se_etcd_endpoints, "",
							   PGC_POSTMASTER, GUC_LIST_INPUT, check_etcd_endpoints, NULL, NULL);

	DefineCustomBoolVariable("search_engine.block_max",
							 "Let top-k searches skip postings blocks that cannot make the top hits.",
							 "Results are the same either way; off evaluates every matching document (for comparisons).",
							 &se_search_block_max, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("search_engine.range_doc_values",
							 "Let numeric and date ranges over many distinct values read doc values.",
							 "Results are the same either way; off walks one term per value in the range (for comparisons).",
							 &se_search_range_doc_values, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.index_buffer_size",
							"Memory for in-memory segment buffers, node-wide.",
							"When exceeded, the largest shard buffer is written out as a segment.",
							&se_index_buffer_size_kb, 256 * 1024, 1024, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.indexing_pressure_limit",
							"Bytes of bulk sub-request payload allowed in flight, node-wide.",
							"Shard sub-requests beyond it, and any bulk larger than it, are rejected with es_rejected_execution_exception (429).",
							&se_indexing_pressure_limit_kb, 64 * 1024, 64, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.max_clause_count",
							"Most clauses a search query may have (Elasticsearch's indices.query.bool.max_clause_count).",
							"A bool query or a match query's terms beyond it fail with too_many_clauses, a query whose leaves (phrase and match terms included) add up beyond it with too_many_nested_clauses.",
							&se_search_max_clause_count, SE_MAX_CLAUSE_COUNT_DEFAULT, 1, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.max_open_scroll_context",
							"Most open point-in-time and scroll shard contexts on this node (Elasticsearch's search.max_open_scroll_context).",
							"Opening one more fails with es_rejected_execution_exception (429); contexts past their keep_alive do not count.",
							&se_max_open_scroll_context, 500, 0, SE_PIT_MAX_ENTRIES,
							PGC_SUSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.max_document_size",
							"Largest document accepted by bulk and document writes.",
							"Larger documents fail with a per-item illegal_argument_exception (ES's http.max_content_length default is 100MB).",
							&se_max_document_size_kb, 100 * 1024, 1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.max_shards",
							"Maximum number of open shards on this node.",
							NULL,
							&se_max_shards, 1024, 1, 65536,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.merge_threads",
							"Number of background merge workers.",
							"0 merges inline in the shard's write worker.",
							&se_merge_threads, 1, 0, SE_MAX_MERGE_THREADS,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomStringVariable("search_engine.node_attributes",
							   "Attributes of this node as key:value pairs, e.g. zone:a,box_type:hot.",
							   "Elasticsearch's node.attr.*; allocation filtering and awareness use them.",
							   &se_node_attributes, "",
							   PGC_POSTMASTER, 0, check_node_attributes, NULL, NULL);

	DefineCustomStringVariable("search_engine.node_name",
							   "Name of this node, as shown by _cat APIs and task ids.",
							   "Empty means the host name.",
							   &se_node_name, "",
							   PGC_POSTMASTER, 0, check_key_part, NULL, NULL);

	DefineCustomStringVariable("search_engine.node_roles",
							   "Roles of this node: master (master-eligible), data; empty for a coordinating-only node.",
							   NULL,
							   &se_node_roles, "master,data",
							   PGC_POSTMASTER, GUC_LIST_INPUT, check_node_roles, NULL, NULL);

	DefineCustomStringVariable("search_engine.override_main_response_version",
							   "Elasticsearch version GET / reports instead of the 8.x one, e.g. 7.10.2.",
							   "For tools that refuse an 8.x server (curator 5.8), as OpenSearch's compatibility.override_main_response_version; empty reports 8.x.",
							   &se_override_main_response_version, "",
							   PGC_SIGHUP, 0, check_es_version, NULL, NULL);

	DefineCustomStringVariable("search_engine.publish_conninfo",
							   "libpq connection string other nodes use to reach this node.",
							   "Peers log in as a member of search_engine_node with PostgreSQL's own authentication.",
							   &se_publish_conninfo, "",
							   PGC_POSTMASTER, 0, check_publish_conninfo, NULL, NULL);

	DefineCustomIntVariable("search_engine.search_debug_delay",
							"Testing only: search workers wait this long before running a shard request.",
							"Set in the searching session; makes cancellation and snapshot races deterministic in tests.",
							&se_search_debug_delay_ms, 0, 0, 600000,
							PGC_SUSET, GUC_UNIT_MS | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);

	DefineCustomBoolVariable("search_engine.search_parallel",
							 "Let searches over several shards run shards in the search thread pool.",
							 "Results are the same either way; off runs every shard in the backend.",
							 &se_search_parallel, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.search_parallel_min_docs",
							"Smallest shard (in documents) whose query phase is sent to the search thread pool.",
							"Smaller shards run in the searching backend: handing them over costs more than it saves.",
							&se_search_parallel_min_docs, 1000000, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.search_queue_size",
							"Bound of the search thread pool's queue, in shard requests.",
							"Shard requests that do not fit run in the searching backend (counted as rejected).",
							&se_search_queue_size, 1000, 1, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.search_threads",
							"Number of search workers running shard query phases in parallel.",
							"-1 means the number of CPUs; 0 runs every shard in the searching backend.",
							&se_search_threads, -1, -1, SE_MAX_SEARCH_THREADS,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.sql_script_memory",
							"Memory one run of a lang sql update script may take.",
							"The task worker's data segment may grow by this much while the script's statement runs; past it the document fails with script_exception. 0 means no limit.",
							&se_sql_script_memory_kb, 64 * 1024, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.sql_script_timeout",
							"Time one run of a lang sql update script may take.",
							"Past it the script's statement is cancelled and the document fails with script_exception. 0 means no limit.",
							&se_sql_script_timeout_ms, 1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.task_threads",
							"Number of task workers running update/delete-by-query and reindex slices.",
							NULL,
							&se_task_threads, 2, 1, SE_MAX_WRITE_THREADS,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomStringVariable("search_engine.transport_conninfo",
							   "libpq options this node adds when it connects to a peer (user, passfile, sslmode, certificates).",
							   "They are added to the peer's published conninfo and win over it.",
							   &se_transport_conninfo, "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.write_queue_size",
							"Bound of the node's write queue, in shard sub-requests.",
							"Sub-requests that do not fit are rejected with es_rejected_execution_exception (429).",
							&se_write_queue_size, 10000, 1, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("search_engine.write_threads",
							"Number of write workers (background workers owning shards).",
							"0 means the number of CPUs.",
							&se_write_threads, 0, 0, SE_MAX_WRITE_THREADS,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

	MarkGUCPrefixReserved("search_engine");
	if (cluster_setting_rejected)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid search_engine cluster settings"),
				 errhint("Correct the settings the warnings above name; a node does not start with a role, attribute, name or endpoint it was not given.")));

	if (se_write_threads == 0)
		se_write_threads = cpu_count();
	if (se_search_threads < 0)
		se_search_threads = cpu_count();
}

/* The effective data directory (absolute). */
const char *
se_data_directory(void)
{
	static char *dir = NULL;

	if (dir == NULL)
	{
		if (se_data_directory_setting && se_data_directory_setting[0])
			dir = MemoryContextStrdup(TopMemoryContext, se_data_directory_setting);
		else
			dir = MemoryContextStrdup(TopMemoryContext,
									  psprintf("%s/search_engine", DataDir));
	}
	return dir;
}
