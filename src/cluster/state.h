/*-------------------------------------------------------------------------
 *
 * state.h
 *	  The cluster state: indices with their settings and mappings.
 *
 * On this single-node build the local node is the elected master: the
 * state is a versioned, checksummed file (<data_dir>/_state/state-N.json)
 * written atomically under SeShared->state_lock, and every process keeps a
 * parsed copy that it reloads when the shared version counter moves.  The
 * cluster layer will publish the same object from the elected master.
 *
 * Index operations are not transactional (as in Elasticsearch): they take
 * effect when the function returns, whatever the surrounding transaction
 * does later.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_STATE_H
#define SE_CLUSTER_STATE_H

#include "util/se_common.h"

#include "nodes/pg_list.h"
#include "util/json.h"
#include "util/match.h"
#include "cluster/cluster_settings.h"
#include "cluster/routing.h"
#include "cluster/replica_select.h"
#include "index/merge_policy.h"
#include "mapping/mapping.h"
#include "node/node.h"

typedef struct SeIndexSettings
{
	int			number_of_shards;
	int			number_of_replicas;
	int			routing_num_shards;
	int64		refresh_interval_ms;	/* -1 = disabled */
	bool		durability_async;
	int64		sync_interval_ms;
	int64		flush_threshold_bytes;
	int			total_fields_limit;
	int			depth_limit;
	int			max_result_window;
	int			max_terms_count;	/* terms query values */
	int			max_regex_length;	/* regexp query length */
	int			highlight_max_analyzed_offset;	/* highlighted text's length */
	int			max_refresh_listeners;	/* refresh=wait_for writes per shard */
	/* search body limits (search.h SeSearchLimits) */
	int			max_inner_result_window;
	int			max_docvalue_fields_search;
	int			max_script_fields;
	int			max_rescore_window;
	int			max_slices_per_scroll;
	int			codec_level;	/* zstd level for _source */
	bool		best_compression;
	SeMergePolicy merge_policy; /* index.merge.policy.* */
	int			merge_max_thread_count; /* index.merge.scheduler.max_thread_count */
	/* index.blocks.*: document writes (and, read-only, mapping changes) refused */
	bool		blocks_write;
	bool		blocks_read_only;
	bool		blocks_read_only_allow_delete;	/* set by the flood stage too */
	/* allocation (the master's allocator) */
	int			total_shards_per_node;	/* index.routing.allocation.total_shards_per_node, -1 */
	int			allocation_enable;	/* index.routing.allocation.enable (SeAllocEnable) */
	int			max_retries;	/* index.allocation.max_retries */
	int64		delayed_timeout_ms; /* index.unassigned.node_left.delayed_timeout */
	int64		lease_period_ms;	/* index.soft_deletes.retention_lease.period */
	/* index.routing.allocation.{include,exclude,require}.<attr>: "kind.attr" -> values */
	SeSettingsLayer allocation_filters;
	bool		hidden;			/* index.hidden: wildcards skip it by default */
	int			nested_fields_limit;	/* index.mapping.nested_fields.limit */
	int			nested_objects_limit;	/* index.mapping.nested_objects.limit */
} SeIndexSettings;

/* SeShardState, SeShardCopy, SeShardRouting: cluster/routing.h */

/* An alias of an index (cluster/alias.c) */
typedef struct SeAlias
{
	char	   *name;
	char	   *filter;			/* a query as JSON text, or NULL */
	char	   *index_routing;	/* or NULL */
	char	   *search_routing; /* or NULL; may be a comma list */
	int			is_write_index; /* -1: not set, 0, 1 */
	bool		is_hidden;
} SeAlias;

typedef struct SeIndexMeta
{
	char	   *name;
	char		uuid[SE_UUID_LEN + 1];
	bool		closed;
	int64		creation_date;
	int64		primary_term;
	int64		mapping_version;
	SeIndexSettings settings;
	char	   *mappings_json;	/* canonical, as se_mapping_to_json writes it */
	SeMapping  *mapping;		/* parsed from mappings_json */
	/* cluster mode (etcd): */
	int64		mod_revision;	/* etcd revision of the index's key */
	SeShardRouting *routing;	/* per shard; NULL: a single node */
	char	  **shard_nodes;	/* per shard, the node of its primary ("" =
								 * none), derived from routing by
								 * se_state_routing_derive(); NULL: every
								 * shard is on this node */
	/* its file under _state/indices (state.c) */
	uint64		state_gen;		/* generation of the file it was read from;
								 * 0: not written yet */
	char	   *state_json;		/* that file's JSON (a save skips it when equal) */
	bool		state_stub;		/* only name, uuid and state_gen read: a save
								 * keeps its file as it is */
	/* aliases, sorted by name; a mutation replaces the array (copies share it) */
	int			naliases;
	SeAlias    *aliases;
} SeIndexMeta;

typedef struct SeClusterState
{
	uint64		version;
	char	   *cluster_uuid;
	int			nindices;
	SeIndexMeta **indices;		/* sorted by name */
	/* PUT /_cluster/settings (cluster mode: etcd key state/settings) */
	SeSettingsLayer persistent;
	SeSettingsLayer transient;
	int64		settings_mod_revision;
	uint64		next_state_gen; /* next index file generation */
	/* index templates (templates.h; cluster mode: etcd key state/templates) */
	char	   *templates_json;	/* NULL: none ever put */
	int64		templates_mod_revision;
	/* stored scripts (scripts.h; cluster mode: etcd key state/scripts) */
	char	   *scripts_json;	/* NULL: none ever put */
	int64		scripts_mod_revision;
} SeClusterState;

/* This process's current copy (reloaded when the version moved). */
extern const SeClusterState *se_state_current(void);
extern SeIndexMeta *se_state_find(const SeClusterState *st, const char *name);
extern SeIndexMeta *se_state_find_uuid(const SeClusterState *st, const char *uuid);

/* Index uuid in the latest state, this process's copy left as it is. */
typedef enum SeIndexStatus
{
	SE_INDEX_MISSING,
	SE_INDEX_CLOSED,
	SE_INDEX_OPEN
} SeIndexStatus;
extern SeIndexStatus se_state_index_status(const char *uuid);
extern void se_index_status_error(SeIndexStatus status, const char *name, SeError *err);
extern void se_state_shard_unavailable(const char *uuid, const char *name, int shard,
									   const char *why, SeError *err);

/*
 * Resolve an ES index expression (comma list, wildcards *, ?-less) to the
 * matching indices.  missing_ok: wildcards that match nothing are fine;
 * an explicit missing name sets 404 index_not_found_exception.
 */
extern List *se_state_resolve(const SeClusterState *st, const char *expr,
							  bool include_closed, SeError *err);

/*
 * Which indices a resolution may return: called for every index a wildcard
 * matches (named = false: false skips it) and for every name written
 * out (named = true: false sets err and ends the resolution).
 */
typedef bool (*SeIndexFilter) (const char *name, bool named, void *arg, SeError *err);

/*
 * What wildcards of a resolution expand to besides open indices: an API's
 * default (ES's expand_wildcards).  A bool "include closed" of callers
 * written before hidden indices is SE_EXPAND_CLOSED (true == 1).
 */
#define SE_EXPAND_CLOSED	0x01
#define SE_EXPAND_HIDDEN	0x02	/* index.hidden (a ".pattern" matches ".names") */
#define SE_EXPAND_ALL		(SE_EXPAND_CLOSED | SE_EXPAND_HIDDEN)
extern List *se_state_resolve_filtered(const SeClusterState *st, const char *expr,
									   int expand, SeIndexFilter filter,
									   void *arg, SeError *err);

/*
 * ES's ignore_unavailable / allow_no_indices / expand_wildcards (in
 * indices_options.c).  The REST router sets the current request's from its
 * URL (NULL: none given, each API's defaults); se_acl_resolve honours them.
 */
typedef struct SeIndicesOptions
{
	bool		ignore_unavailable;
	bool		allow_no_indices;
	bool		expand_given;	/* expand_wildcards given: the two below */
	bool		expand_open;
	bool		expand_closed;
	bool		expand_hidden;
} SeIndicesOptions;
extern const SeIndicesOptions *se_indices_options;
extern bool se_indices_options_set(const char *ignore_unavailable,
								   const char *allow_no_indices,
								   const char *expand_wildcards, SeError *err);
extern void se_indices_options_reset(void);
extern void se_indices_options_restore(const SeIndicesOptions *o);
extern List *se_state_resolve_with_options(const SeClusterState *st, const char *expr,
										   int expand, SeIndexFilter filter,
										   void *arg, const SeIndicesOptions *o,
										   SeError *err);


/* Validate an ES index name; sets 400 invalid_index_name_exception. */
extern bool se_index_name_valid(const char *name, SeError *err);

/* Parse ES index settings (nested or flat, "index." prefix optional). */
extern bool se_state_update_settings(const char *name, const SeJson *settings,
									 SeError *err);
extern bool se_settings_parse(const SeJson *settings, SeIndexSettings *out,
							  bool for_update, SeError *err);
extern void se_settings_to_json(const SeIndexMeta *im, StringInfo out);

/*
 * Is a write to im refused by one of its index.blocks.* settings?  Then
 * err holds ES's cluster_block_exception: 429 for the flood stage's
 * read_only_allow_delete, 403 for write and read_only.  metadata: a
 * mapping change (blocked by the read-only blocks, not by write).
 */
extern bool se_index_write_blocked(const SeIndexMeta *im, bool metadata, SeError *err);

/*
 * PUT /_cluster/settings: validated on this node's copy (answer: ES's body),
 * then committed through the master.  A single node forgets its transient
 * settings when it restarts, as a whole ES cluster does.
 */
extern bool se_state_put_cluster_settings(const SeJson *body, StringInfo answer,
										  SeError *err);
extern void se_state_clear_transient_settings(void);

/* Mutations (take the state lock, write the file, bump the version). */
extern SeIndexMeta *se_state_create_index(const char *name, const SeJson *body,
										  SeError *err);
extern bool se_state_delete_index(const char *name, SeError *err);
extern bool se_state_set_closed(const char *name, bool closed, SeError *err);
extern bool se_state_put_mapping(const char *name, const SeJson *mappings,
								 SeError *err);
/* Merge a shard's dynamically grown mapping into the index's mapping. */
extern bool se_state_merge_dynamic_mapping(const char *uuid, const SeMapping *m,
										   SeError *err);

/* in state_sync.c: the state in etcd (cluster mode) */
/* the PRIMARY of shard is on this node (single node: always) */
extern bool se_state_shard_local(const SeIndexMeta *im, int shard);
/* this node's copy of shard (primary or replica, any state), or NULL */
extern const SeShardCopy *se_state_local_copy(const SeIndexMeta *im, int shard);
/* the shard's primary term (single node: the index's) */
extern int64 se_state_shard_primary_term(const SeIndexMeta *im, int shard);
extern bool se_state_in_sync(const SeIndexMeta *im, int shard, const char *allocation_id);
/* the primary's replication targets: assigned replica copies (SeShardCopy *) */
extern List *se_state_shard_targets(const SeIndexMeta *im, int shard);
/* the node a read of shard goes to (a STARTED copy, this node's first); NULL: none */
extern const char *se_state_pick_copy(const SeIndexMeta *im, int shard);
/* the same under ES's search preference p (replica_select.h); NULL: no copy matches */
extern const char *se_state_pick_copy_pref(const SeIndexMeta *im, int shard,
										   const SePreference *p, SeError *err);
/* where a read of shard goes: true = this node's copy, else *node ("" = unassigned) */
extern bool se_state_read_here(const SeIndexMeta *im, int shard, const char **node);
/* the primary copy of shard (cluster mode), or NULL on a single node */
extern SeShardCopy *se_state_primary_copy(const SeIndexMeta *im, int shard);
/* set slot's copy fields (replica, allocation id, term, primary's node); true: became primary */
extern bool se_state_slot_copy(const SeIndexMeta *im, int shard, int slot);
/* shard_nodes again from routing, after a change of the routing */
extern void se_state_routing_derive(SeIndexMeta *im);
extern SeShardState se_state_shard_state(const SeIndexMeta *im, int shard);
extern const char *se_shard_state_name(SeShardState state);
/* other nodes holding primaries of the indices / any copy of them */
extern List *se_state_nodes_elsewhere(List *indices);
extern List *se_state_copy_nodes_elsewhere(List *indices);
extern void se_state_register_actions(void);
extern void se_state_sync_init(void);

/* in reroute.c: the master's allocation (allocator.c) over the state */
extern bool se_state_reroute(SeClusterState *st);
/* the same, as if node (NULL: none) had left the cluster */
extern bool se_state_reroute_without(SeClusterState *st, const char *node);
extern bool se_state_cluster_reroute(const SeJson *body, bool dry_run, bool explain,
									 bool retry_failed, StringInfo answer, SeError *err);
extern bool se_state_allocation_explain(const char *index, int shard, bool primary,
										bool include_yes, StringInfo out, SeError *err);

/* in shard_state.c: shard_started / shard_failed, ES's ShardStateAction */
extern void se_shard_state_register(void);
extern void se_shard_state_register_actions(void);
PGDLLEXPORT void se_shard_state_main(Datum arg);

/* in alias.c: index aliases (index metadata) */
extern bool se_alias_name_valid(const char *name, SeError *err);
extern const SeAlias *se_alias_on(const SeIndexMeta *im, const char *name);
extern void se_alias_to_json(const SeAlias *a, StringInfo out);
extern void se_aliases_to_json(const SeIndexMeta *im, const char *pattern, StringInfo out);
extern bool se_alias_pattern_match(const char *patterns, const char *name);
extern bool se_aliases_from_state_json(SeIndexMeta *im, const SeJson *obj, SeError *err);
extern List *se_alias_indices(const SeClusterState *st, const char *name);
extern bool se_alias_exists(const SeClusterState *st, const char *name);
/* the create body's (or a template's) "aliases" on new index im, in the create mutation */
extern bool se_alias_add_from_body(SeClusterState *st, SeIndexMeta *im,
								   const SeJson *aliases, SeError *err);
extern bool se_alias_index_name_free(const SeClusterState *st, const char *name,
									 SeError *err);
extern bool se_alias_refused_as_index(const SeClusterState *st, const char *expr,
									  SeError *err);
/* concrete actions [{"add"|"remove"|"remove_index":{..}}], atomically */
extern bool se_state_update_aliases(const SeJson *actions, SeError *err);
extern const char *se_alias_single_index(const SeClusterState *st, const char *name,
										 bool write, const char **routing, SeError *err);
extern List *se_alias_resolve_into(const SeClusterState *st, const char *tok, bool pattern,
								   bool exclude, int expand, List *result,
								   SeIndexFilter filter, void *arg, bool *found,
								   SeError *err);
extern void se_alias_search_extras(const char *expr,
								   const SeIndexMeta *im, char **filter, char **routing);

/* Random ES-style uuid (base64url of 16 random bytes, 22 chars). */
extern void se_make_uuid(char out[SE_UUID_LEN + 1]);

#endif							/* SE_CLUSTER_STATE_H */
