/*-------------------------------------------------------------------------
 *
 * api.h
 *	  Operations behind the SQL functions and the ES REST router.
 *
 * Each operation is written once, as se_op_*: it fills an ES response body
 * and status, or sets an SeError.  The typed SQL functions raise the error
 * as a PostgreSQL ERROR (SQLSTATE from the ES type, the ES type in
 * errdetail); search_engine.request() returns ES's error body instead.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_API_H
#define SE_API_H

#include "util/se_common.h"

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "cluster/state.h"
#include "cluster/templates.h"
#include "util/json.h"

typedef struct SeResponse
{
	int			status;
	StringInfoData body;		/* JSON (or text for _cat without format) */
	bool		is_text;		/* body is plain text, not JSON */
	bool		is_yaml;		/* ... and that text is YAML (?format=yaml) */
	Jsonb	   *jsonb;			/* or the body built as jsonb directly */
	char	   *allow;			/* ES's Allow header (405, OPTIONS), or NULL */
} SeResponse;

typedef enum SeRefresh
{
	SE_REFRESH_FALSE = 0,
	SE_REFRESH_TRUE = 1,
	SE_REFRESH_WAIT_FOR = 2
} SeRefresh;

/* freed heap a backend keeps once it coordinates a bulk or returns a large result */
#define SE_BULK_MMAP_ABOVE	(16 * 1024 * 1024)
#define SE_BULK_TRIM_KEEP	(32 * 1024 * 1024)

/* in errors.c */
extern void se_response_init(SeResponse *r);
extern void se_raise(const SeError *err) pg_attribute_noreturn();
extern void se_error_body(const SeError *err, StringInfo out);
extern Datum se_jsonb_from_text(const char *data, size_t len);
extern Datum se_response_jsonb(const SeResponse *r);
extern void se_error_from_edata(const ErrorData *edata, SeError *err);

/* in jsonb_encode.c */
extern Jsonb *se_jsonb_encode(const SeJson *j, size_t size_hint);
extern char *se_text_from_jsonb(Datum jsonb, size_t *len);
/* in yaml.c: ?format=yaml, the finished JSON body rewritten */
extern bool se_response_to_yaml(SeResponse *r);
extern SeJson *se_json_from_jsonb_arg(FunctionCallInfo fcinfo, int argno, SeError *err);
extern bool se_parse_refresh(const char *s, SeRefresh *out, SeError *err);
extern bool se_parse_health_status(const char *s, const char **out, SeError *err);
extern int64 se_now_millis(void);
extern void se_require_started(void);

/* in index_ops.c */
extern bool se_op_create_index(const char *name, const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_create_index_wait(const char *name, const SeJson *body,
									int wait_for_active_shards, int timeout_ms,
									SeResponse *r, SeError *err);
extern bool se_op_delete_index(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_get_index(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_index_exists(const char *expr);
extern bool se_op_get_mapping(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_put_mapping(const char *expr, const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_get_settings(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_put_settings(const char *expr, const SeJson *body, SeResponse *r,
							   SeError *err);
extern bool se_op_open_close(const char *expr, bool close, SeResponse *r, SeError *err);
extern bool se_op_refresh(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_flush(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_verify(const char *expr, SeResponse *r, SeError *err);
extern bool se_op_force_merge(const char *expr, int max_num_segments, SeResponse *r, SeError *err);
/* after the state dropped an index (a remove_index alias action): its local shards */
extern void se_index_dropped(const char *uuid, int nshards);
/* _cluster/health's waits and level */
typedef struct SeHealthWait
{
	const char *wait_for_status;	/* NULL: none */
	char		nodes_op;		/* wait_for_nodes: 0 none, '=', 'g' >=, 'l' <=, '>', '<' */
	int			nodes;
	int			active_shards;	/* wait_for_active_shards: 0 none, -1 all */
	const char *level;			/* cluster (NULL), indices, shards */
	int			master_timeout_ms;	/* wait for a master this long; 0: 30 s */
} SeHealthWait;
extern bool se_parse_wait_for_nodes(const char *s, char *op, int *n, SeError *err);
extern bool se_op_cluster_health(const char *expr, const SeHealthWait *w, int timeout_ms,
								 SeResponse *r, SeError *err);
/* a bulk's auto-creation of index name (exists already: fine) */
extern bool se_index_auto_create(const char *name, SeError *err);
extern void se_index_ops_register_actions(void);
/* a router found a shard of im without a slot: start im's shards if open */
extern bool se_index_open_routed(const SeIndexMeta *im, SeError *err);
/* index meta of one concrete, open index (404 / index_closed_exception) */
extern SeIndexMeta *se_index_for_read(const char *name, SeError *err);

/* in bulk.c */
#include "shard/bulk_protocol.h"

typedef struct SeWriteItem
{
	SeItemOp	op;
	char	   *index;
	char	   *id;
	char	   *routing;
	bool		auto_id;
	int64		if_seq_no;		/* -1 none */
	int64		if_primary_term;
	const char *body;
	size_t		body_len;
	const char *uuid;			/* a peer's item: the index uuid it routed to */
	bool		require_alias;	/* ES's require_alias: index must name an alias */
	bool		want_source;	/* an update: bring back the _source it wrote */
	/* routing result */
	SeIndexMeta *im;
	int			shard;
	int			slot;			/* SE_SLOT_REMOTE: on node */
	const char *node;
	/* outcome */
	bool		done;
	SeItemResp	resp;
	char	   *err_type;		/* NULL = success */
	char	   *err_reason;
	bool		forced_refresh;
	char	   *source;			/* want_source: as written (NULL: no room) */
	size_t		source_len;
} SeWriteItem;

/* room for each update's written _source in a sub-request's answer area */
#define SE_UPDATE_SOURCE_ROOM	(1024 * 1024)

typedef struct SeBulkOptions
{
	const char *default_index;
	const char *default_routing;
	SeRefresh	refresh;
	int			max_retries;
	bool		require_alias;	/* (misnamed) the body must end with a newline */
	bool		url_require_alias;	/* ES's require_alias URL flag: items' default */
	bool		authorized;		/* the caller checked write on every item's index */
	bool		no_auto_create; /* a missing index fails its items (by-query write-back) */
	bool		local_only;		/* a peer's sub-request: shards elsewhere fail, never forwarded */
	int			wait_for_active_shards; /* copies active before writing; 0/1 the
										 * primary only, -1 all (ES) */
	int			timeout_ms;		/* how long to wait for them (0: ES's 1m) */
	int			retried;		/* out: rounds retried after 429s */
} SeBulkOptions;
extern bool se_op_bulk(const char *body, size_t len, const SeBulkOptions *opts,
					   SeResponse *r, SeError *err);
extern void se_bulk_execute(SeWriteItem *items, int n, const SeBulkOptions *opts);
#define SE_SLOT_REMOTE (-3)
extern void se_bulk_register_actions(void);
/* A new auto-generated document id (ES style, 20 chars). */
extern char *se_auto_id(void);
/* ES's UNASSIGNED_SEQ_NO: an if_seq_no the request did not give */
#define SE_UNASSIGNED_SEQ_NO (-2)
/* ES's checks of if_seq_no / if_primary_term; see bulk.c */
extern bool se_cas_check(int64 *if_seq_no, int64 if_primary_term, SeError *err);
/* Single-document writes: a one-item bulk, answered with the item body. */
typedef struct SeDocWrite
{
	const char *index;
	const char *id;				/* NULL: auto-generated (index only) */
	const char *routing;
	const char *op;				/* "index", "create", "update", "delete" */
	const char *body;			/* source (index/create) or update body */
	size_t		body_len;
	int64		if_seq_no;		/* -1 = none */
	int64		if_primary_term;
	SeRefresh	refresh;
	int			wait_for_active_shards; /* as SeBulkOptions' (0, 1: none) */
	int			timeout_ms;		/* for it (0: ES's 1m) */
	const SeJson *source;		/* update: "_source" asked for (NULL: none) */
	bool		require_alias;	/* index must name an alias (ES's URL flag) */
} SeDocWrite;
extern bool se_op_doc_write(const SeDocWrite *w, SeResponse *r, SeError *err);

/* in names.c */
typedef enum SeNameKind
{
	SE_NAME_INDEX,
	SE_NAME_ID,
	SE_NAME_ROUTING
} SeNameKind;
/* false (400 in err) if v is a string holding a NUL, which C strings cut */
extern bool se_name_check_json(const SeJson *v, SeNameKind kind, SeError *err);
extern char *se_nuls_replaced(const char *s, int len, const char *with, int *outlen);
/* ES's limit on a written document's _id (512 bytes) */
extern bool se_doc_id_check(const char *id, SeError *err);

/* in rest.c: a time value as ES's TimeValue reads it, in ms (-1: "-1") */
extern bool se_rest_time_value(const char *name, const char *v, int64 *ms, SeError *err);
/* in rest.c: one REST call through the router (request() and src/http/) */
extern void se_rest_dispatch(const char *method, const char *path, const char *body,
							 size_t body_len, SeResponse *r);

/* in search_ops.c */
typedef struct SeSearchParams
{
	int			from;			/* -1 = from body */
	int			size;
	const char *routing;
	int64		track_total_hits;	/* -2 = body */
	const char *timeout;		/* URL "timeout" as given (NULL: the body's) */
	const char *search_type;	/* URL "search_type" (NULL: query_then_fetch) */
	const char *preference;		/* URL "preference" (NULL: none) */
	bool		seq_no_primary_term;	/* URL seq_no_primary_term=true */
	const char *scroll;			/* URL "scroll" keep-alive (NULL: no scroll) */
	/* URL _source, _source_includes, _source_excludes (override the body's) */
	const char *source;
	const char *source_includes;
	const char *source_excludes;
	bool		version;		/* URL version=true */
	bool		rest_total_hits_as_int; /* "total": N, counted exactly */
	bool		typed_keys;		/* URL typed_keys=true: "type#name" aggregations */
} SeSearchParams;

/*
 * A search run for deep pagination (pit.c): a scroll page shows only the
 * body's sort values, and on_result sees the result before it is written.
 */
struct SeSearchResult;
typedef struct SeSearchPaging
{
	bool		scroll;
	void		(*on_result) (void *arg, struct SeSearchResult *res);
	void	   *arg;
} SeSearchPaging;
extern bool se_op_search(const char *expr, const SeJson *body, const SeSearchParams *p,
						 SeResponse *r, SeError *err);
/* se_op_search's search (expr NULL: the body's "pit" names the shards) */
extern bool se_search_exec(const char *expr, const SeJson *body, const SeSearchParams *p,
						   const SeSearchPaging *pg, SeResponse *r, SeError *err);
/* more_like_this items named by _id get their _source (mlt_items.c) */
extern bool se_mlt_resolve_items(SeJson *body, List *indices, SeError *err);
/* collapse's expand phase: each hit's "inner_hits" (search_expand.c) */
struct SeSearchRequest;
extern bool se_search_expand(const char *expr, const SeJson *body, const SeSearchParams *p,
							 struct SeSearchRequest *req, struct SeSearchResult *res, SeError *err);
/* the open indices a read of expr covers (a named closed one is an error) */
extern List *se_search_resolve_for_read(const char *expr, SeError *err);
extern bool se_search_routed_to(const char *routing, const SeIndexMeta *im, int s);
struct SeSearchLimits;
extern void se_search_limits_of(List *indices, struct SeSearchLimits *lim);
/* body with p's URL request options (_source*, version, rest_total_hits_as_int) in it */
extern SeJson *se_search_url_options_body(const SeJson *body, const SeSearchParams *p,
										  SeError *err);
/* an update's "get" object: the document it wrote, filtered by source */
extern bool se_get_after_update(const char *index, const SeWriteItem *it,
								const SeJson *source, StringInfo out, SeError *err);
/* the "_source" value of the URL's _source* parameters (NULL: none given) */
extern SeJson *se_source_url_spec(const char *source, const char *includes,
								  const char *excludes, SeError *err);
/* _msearch: NDJSON header/body pairs, one response (or error) each */
extern bool se_op_msearch(const char *default_index, const char *body, size_t len,
						  const SeSearchParams *p, SeResponse *r, SeError *err);
/* in search_template.c: search templates (_search/template, _render/template) */
extern SeJson *se_search_template_body(const SeJson *req, SeError *err);
extern bool se_op_render_template(const SeJson *req, const char *path_id, SeResponse *r,
								  SeError *err);
extern bool se_op_msearch_template(const char *default_index, const char *body, size_t len,
								   const SeSearchParams *p, SeResponse *r, SeError *err);
extern bool se_op_count(const char *expr, const SeJson *body,
						const char *preference, int64 *count, SeResponse *r, SeError *err);
extern bool se_op_get(const char *index, const char *id, const char *routing,
					  const char *preference, const SeJson *source_filter, bool source_only,
					  int64 version, SeResponse *r, SeError *err);
extern bool se_get_version_type_check(const char *version_type, SeError *err);
/* source: the URL's _source* as a "_source" value (NULL: none), a doc's own wins */
extern bool se_op_mget(const char *default_index, const SeJson *body, const char *preference,
					   const SeJson *source, SeResponse *r, SeError *err);
/* _explain: Lucene's explanation of body's query for one document */
extern bool se_op_explain(const char *index, const char *id, const char *routing,
						  const char *preference, const SeJson *body, SeResponse *r,
						  SeError *err);
/* _validate/query: whether body's query parses and binds to each index */
extern bool se_op_validate_query(const char *expr, const SeJson *body, bool explain,
								 SeResponse *r, SeError *err);
extern void se_search_interrupts_init(void);
extern void se_search_register_actions(void);

/* in pit.c: point in time and scroll */
struct SeSearchRequest;
struct SeSearchShard;
extern bool se_op_open_pit(const char *expr, const char *keep_alive, const char *routing,
						   const char *preference, SeResponse *r, SeError *err);
extern bool se_op_close_pit(const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_scroll_start(const char *expr, const SeJson *body, const SeSearchParams *p,
							   SeResponse *r, SeError *err);
/* total_as_int, typed_keys: this page's URL rest_total_hits_as_int, typed_keys */
extern bool se_op_scroll_next(const char *scroll_id, const char *scroll, bool total_as_int,
							  bool typed_keys, SeResponse *r, SeError *err);
extern bool se_op_scroll_clear(const SeJson *ids, const char *path_ids, SeResponse *r,
							   SeError *err);
/* the shards of req's point in time (failed ones carry their failure) */
extern List *se_pit_body_indices(const SeJson *body);
extern const SeJson *se_pit_search_body(const SeJson *body, SeError *err);
extern struct SeSearchShard *se_pit_search_shards(const struct SeSearchRequest *req,
												  int *nshards, SeIndexMeta ***metas,
												  SeError *err);
/* shard's snapshot for req: its point in time's when it has one, else the current */
extern bool se_search_shard_snapshot(const struct SeSearchRequest *req, const SeIndexMeta *im,
									 int shard, Oid role, struct SeSearchShard *out,
									 SeError *err);
/* the name of role for a peer ("" if it is gone); the role of a name a peer sent */
extern void se_peer_role_put(StringInfo out, Oid role);
extern Oid	se_peer_role(const char *name);
extern void se_pit_register_actions(void);

/* in search_pool.c */
struct SeSearchShard;
struct SeShardTransport;
typedef struct SePoolSearch SePoolSearch;
typedef struct SeSearchKnobs
{
	bool		block_max;
	int			delay_ms;		/* search_debug_delay (tests) */
	int			max_clauses;
	const char *role;			/* the requesting role's name ("": none) */
} SeSearchKnobs;
struct SeDfsStats;
extern void se_search_common_encode(const SeJson *body, const SeSearchParams *p,
									int64 url_timeout_ms, int window,
									const struct SeDfsStats *dfs, StringInfo out);
extern struct SeSearchRequest *se_search_common_request(const char *common, Size common_len,
														SeSearchKnobs *knobs, SeError *err);
/* in search_remote.c */
typedef struct SeRemoteSearch SeRemoteSearch;
struct SeWireReader;
extern void se_peer_shard_put(StringInfo out, const char *index, const char *uuid, int shard);
extern SeIndexMeta *se_peer_shard_get(struct SeWireReader *r, int *shard, SeError *err);
extern void se_search_remote_register_actions(void);
extern bool se_search_remote_dfs(const StringInfoData *common, struct SeSearchShard *shards,
								 int nshards, struct SeDfsStats *into, SeError *err);
extern SeRemoteSearch *se_search_remote_begin(const StringInfoData *common,
											  struct SeSearchShard *shards, int nshards,
											  const struct SeShardTransport *pool);
extern const struct SeShardTransport *se_search_remote_transport(SeRemoteSearch *rs);
extern bool se_search_remote_count(const SeJson *body, struct SeSearchShard *shards,
								   int nshards, int64 *count, SeError *err);
extern void se_search_query_phase_with(struct SeSearchRequest *sreq, const SeSearchKnobs *knobs,
									   struct SeSearchShard *sh, int shard_idx, StringInfo out);
extern bool se_search_dfs_phase_with(struct SeSearchRequest *sreq, const SeSearchKnobs *knobs,
									 struct SeSearchShard *sh, struct SeDfsStats *into,
									 SeError *err);
struct SeSearchShard;
struct SeShardTransport;
extern SePoolSearch *se_search_pool_dispatch(const StringInfoData *common,
											 struct SeSearchShard *shards,
											 SeIndexMeta **metas, int nshards);
extern const struct SeShardTransport *se_search_pool_transport(SePoolSearch *ps);
extern void se_search_pool_finish(SePoolSearch *ps);
extern void se_search_workers_register(void);
PGDLLEXPORT void se_search_worker_main(Datum arg);

/* in alias_ops.c */
extern bool se_op_update_aliases(const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_put_alias(const char *expr, const char *name, const SeJson *body,
							SeResponse *r, SeError *err);
extern bool se_op_delete_alias(const char *expr, const char *name, SeResponse *r,
							   SeError *err);
extern bool se_op_get_alias(const char *expr, const char *name, bool head, SeResponse *r,
							SeError *err);
extern bool se_alias_body_filters_valid(const SeJson *aliases, SeError *err);
extern char *se_alias_filter_clause(const char *expr, List *indices);
extern const SeJson *se_body_with_filter(const SeJson *body, const char *clause,
										 SeError *err);
extern const SeJson *se_alias_search_body(const char *expr, List *indices,
										  const SeJson *body, SeError *err);
extern const char *se_alias_index_routing(const char *expr, const SeIndexMeta *im,
										  const char *routing);

/* in cat.c */
/* _cat URL parameters: format=json, v (header), h (columns), full_id */
typedef struct SeCatParams
{
	bool		json;
	bool		v;
	const char *h;
	bool		full_id;
	const char *bytes;			/* ?bytes= unit, NULL = human-readable */
	const char *s;				/* ?s= sort keys, NULL = the table's order */
	bool		help;			/* ?help: the columns, not the rows */
} SeCatParams;
extern bool se_op_cat_aliases(const char *name, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_cat_bytes_unit_valid(const char *unit);
extern bool se_op_cat_indices(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_thread_pool(const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_segments(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_shards(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_nodes(const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_master(const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_recovery(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_allocation(const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_health(const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_count(const char *expr, const SeCatParams *p, SeResponse *r, SeError *err);
extern bool se_op_cat_templates(const char *name, const SeCatParams *p, SeResponse *r,
								SeError *err);

/* in template_ops.c: _index_template, _component_template, _template */
extern bool se_op_template_put(SeTemplateKind kind, const char *name, const SeJson *body,
							   bool create, SeResponse *r, SeError *err);
extern bool se_op_template_delete(SeTemplateKind kind, const char *name, SeResponse *r,
								  SeError *err);
extern bool se_op_template_get(SeTemplateKind kind, const char *name, SeResponse *r,
							   SeError *err);
extern bool se_op_simulate_index(const char *index, SeResponse *r, SeError *err);

/* in script_ops.c: _scripts/{id} */
extern bool se_op_script_put(const char *id, const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_script_get(const char *id, SeResponse *r, SeError *err);
extern bool se_op_script_delete(const char *id, SeResponse *r, SeError *err);

/* in cluster_ops.c */
extern void se_node_attributes_json(const char *attrs, StringInfo out);
extern bool se_op_cluster_state(const char *metrics, SeResponse *r, SeError *err);
extern bool se_op_cluster_state_of(const char *metrics, const char *expr, SeResponse *r,
								   SeError *err);
extern bool se_op_cluster_settings_get(bool flat, bool include_defaults, SeResponse *r,
									   SeError *err);
extern bool se_op_cluster_settings_put(const SeJson *body, SeResponse *r, SeError *err);
extern bool se_op_cluster_reroute(const SeJson *body, bool dry_run, bool explain,
								  bool retry_failed, SeResponse *r, SeError *err);
extern bool se_op_allocation_explain(const SeJson *body, bool include_yes, SeResponse *r,
									 SeError *err);

extern void se_cat_register_actions(void);
/* A shard as the node holding it has it (cat.c): _cat/shards, health. */
typedef struct SeShardView
{
	const char *node;
	char	   *uuid;
	int			shard;
	int			state;			/* SeSlotState */
	uint64		docs;
	uint64		deleted;
	uint64		bytes;
	int			owner;
} SeShardView;
extern List *se_remote_shard_stats(List *targets);
extern bool se_shard_view(const SeIndexMeta *im, int s, List *remote, SeShardView *out);
extern bool se_shard_copy_view(const SeIndexMeta *im, int s, const char *node, List *remote,
							   SeShardView *out);

/* in stats.c */
extern void se_stats_node_indices_json(StringInfo out);

/* in node_process.c: _nodes/stats process, jvm, breakers, os.cpu.percent */
extern void se_node_process_json(StringInfo out);
extern void se_node_jvm_json(StringInfo out);
extern void se_node_breakers_json(StringInfo out);
extern int	se_os_cpu_percent(void);
extern bool se_op_stats(const char *expr, const char *metric, const char *level, SeResponse *r,
						SeError *err);
extern void se_stats_register_actions(void);

/* in nodes.c */
extern void se_nodes_register_actions(void);
extern bool se_op_nodes_stats(const char *nodes, const char *metrics, int timeout_ms,
							  SeResponse *r, SeError *err);
extern bool se_op_nodes_info(const char *nodes, int timeout_ms, SeResponse *r, SeError *err);

/* The Elasticsearch release this server answers as (GET /, _nodes) */
#define SE_ES_VERSION			"8.11.0"
/* search_engine.control's default_version: our build, reported as build_hash */
#define SE_EXTENSION_VERSION	"0.1"
typedef struct SeEsVersion
{
	const char *number;			/* version.number */
	const char *lucene;
	const char *wire;			/* minimum_wire_compatibility_version */
	const char *index;			/* minimum_index_compatibility_version */
} SeEsVersion;
extern void se_es_version(SeEsVersion *ver);
extern const char *se_es_build_date(void);
extern List *se_nodes_thread_pool_rows(void);
extern const char *se_node_name_get(void);

#endif
