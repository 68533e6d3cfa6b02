/*-------------------------------------------------------------------------
 *
 * state.c
 *	  The cluster state: load, cache, mutate and persist index metadata.
 *
 * Files, each framed by the common file header and CRC32C footer:
 *   <data_dir>/_state/cluster_state, the manifest:
 *     {"version":N,"cluster_uuid":"..","next_gen":G,"indices":[{"name":..,
 *      "uuid":..,"gen":..}],"settings":{...}}
 *   <data_dir>/_state/indices/<uuid>-<gen>, one index:
 *     {"name":..,"uuid":..,"closed":false,"creation_date":..,
 *      "primary_term":1,"mapping_version":1,"settings":{...flat...},
 *      "mappings":{...}[,"routing":[...],"mod_revision":..]}
 * A change writes the files of the indices it changed and a new manifest,
 * so with thousands of shard copies a change and every process's reload
 * cost one index, not the whole state.  The first format (manifest
 * version 1, every index inline) is still read.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <sys/stat.h>
#include <dirent.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "analysis/analysis.h"
#include "cluster/coordinator.h"
#include "cluster/state.h"
#include "cluster/state_int.h"
#include "cluster/scripts.h"
#include "cluster/templates.h"
#include "util/units.h"
#include "index/segment.h"
#include "util/fileio.h"
#include "util/hash.h"
#include "util/varint.h"

#define STATE_FORMAT "se_cluster_state"
#define STATE_VERSION 2		/* 1: every index inline; 2: a file each */
#define INDEX_STATE_FORMAT "se_index_state"
#define INDEX_STATE_VERSION 1

static MemoryContext state_cxt = NULL;
static SeClusterState *cached = NULL;

static const SeIndexSettings default_settings = {
	.number_of_shards = 1,
	.number_of_replicas = 1,
	.routing_num_shards = 0,
	.refresh_interval_ms = 1000,
	.durability_async = false,
	.sync_interval_ms = 5000,
	.flush_threshold_bytes = (int64) 512 * 1024 * 1024,
	.total_fields_limit = 1000,
	.depth_limit = 20,
	.nested_fields_limit = 50,
	.nested_objects_limit = 10000,
	.max_result_window = 10000,
	.max_terms_count = 65536,
	.max_regex_length = 1000,
	.highlight_max_analyzed_offset = 1000000,
	.max_refresh_listeners = 1000,
	.max_inner_result_window = 100,
	.max_docvalue_fields_search = 100,
	.max_script_fields = 32,
	.max_rescore_window = 10000,
	.max_slices_per_scroll = 1024,
	.codec_level = 3,
	.best_compression = false,
	.merge_policy = {
		.segments_per_tier = SE_MERGE_DEFAULT_SEGMENTS_PER_TIER,
		.max_merge_at_once = SE_MERGE_DEFAULT_MAX_AT_ONCE,
		.floor_segment_bytes = SE_MERGE_DEFAULT_FLOOR_BYTES,
		.max_merged_segment_bytes = SE_MERGE_DEFAULT_MAX_MERGED_BYTES,
		.deletes_pct_allowed = SE_MERGE_DEFAULT_DELETES_PCT,
	},
	.merge_max_thread_count = 1,
	.total_shards_per_node = -1,
	.allocation_enable = 0,
	.max_retries = 5,
	.delayed_timeout_ms = 60000,
	.lease_period_ms = 12 * 3600 * 1000,
};

static void search_limits_to_json(const SeIndexSettings *s, bool flat, StringInfo out);

static char *
state_path(void)
{
	return psprintf("%s/_state/cluster_state", se_data_directory());
}

void
se_make_uuid(char out[SE_UUID_LEN + 1])
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	uint8		bytes[17];
	int			i;

	if (!pg_strong_random(bytes, 16))
		elog(ERROR, "could not generate random uuid");
	bytes[16] = 0;
	/* 16 bytes -> 22 base64url chars (the last carries 2 bits) */
	for (i = 0; i < SE_UUID_LEN; i++)
	{
		int			bit = i * 6;
		int			byte = bit / 8;
		int			off = bit % 8;
		int			v = ((bytes[byte] << 8) | bytes[byte + 1]) >> (10 - off);

		out[i] = alphabet[v & 63];
	}
	out[SE_UUID_LEN] = '\0';
}

/* ---------- settings ---------- */

/* A scalar setting value as text (ES accepts numbers and strings). */

static bool
int_setting(const char *key, const char *val, int min, int max, int *out, SeError *err)
{
	char	   *end;
	long		v = strtol(val, &end, 10);

	if (*val == '\0' || *end != '\0' || v < min || v > max)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Failed to parse value [%s] for setting [index.%s] must be >= %d and <= %d",
					 val, key, min, max);
		return false;
	}
	*out = (int) v;
	return true;
}

static bool
double_setting(const char *key, const char *val, double min, double max, double *out,
			   SeError *err)
{
	char	   *end;
	double		v = strtod(val, &end);

	if (*val == '\0' || *end != '\0' || !(v >= min && v <= max))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Failed to parse value [%s] for setting [index.%s] must be >= %g and <= %g",
					 val, key, min, max);
		return false;
	}
	*out = v;
	return true;
}

static bool
bytes_setting(const char *key, const char *val, int64 min, int64 *out, SeError *err)
{
	if (!se_parse_byte_size(val, out) || *out < min)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "failed to parse setting [index.%s] with value [%s] as a size in bytes (at least " INT64_FORMAT "b)",
					 key, val, min);
		return false;
	}
	return true;
}

/* index.merge.*: Elasticsearch's names, Lucene's bounds. */
static bool
apply_merge_setting(SeIndexSettings *s, const char *key, const char *val,
					SeError *err)
{
	SeMergePolicy *p = &s->merge_policy;

	if (strcmp(key, "merge.policy.segments_per_tier") == 0)
		return double_setting(key, val, 2.0, 1000.0, &p->segments_per_tier, err);
	if (strcmp(key, "merge.policy.max_merge_at_once") == 0)
		return int_setting(key, val, 2, SE_MERGE_MAX_INPUTS, &p->max_merge_at_once, err);
	if (strcmp(key, "merge.policy.floor_segment") == 0)
		return bytes_setting(key, val, 0, &p->floor_segment_bytes, err);
	if (strcmp(key, "merge.policy.max_merged_segment") == 0)
		return bytes_setting(key, val, 1024 * 1024, &p->max_merged_segment_bytes, err);
	if (strcmp(key, "merge.policy.deletes_pct_allowed") == 0)
		return double_setting(key, val, 5.0, 50.0, &p->deletes_pct_allowed, err);
	if (strcmp(key, "merge.scheduler.max_thread_count") == 0)
		return int_setting(key, val, 1, SE_SHARD_MAX_MERGES, &s->merge_max_thread_count, err);
	se_error_set(err, 400, "illegal_argument_exception",
				 "unknown setting [index.%s] please check that any required plugins are installed, or check the breaking changes documentation for removed settings",
				 key);
	return false;
}

static bool
bool_setting(const char *key, const char *val, bool *out, SeError *err)
{
	if (strcmp(val, "true") == 0 || strcmp(val, "false") == 0)
	{
		*out = val[0] == 't';
		return true;
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "Failed to parse value [%s] as only [true] or [false] are allowed for setting [index.%s]",
				 val, key);
	return false;
}

static const char *const allocation_enable_names[] = {"all", "primaries", "new_primaries", "none", NULL};

static bool
is_allocation_setting(const char *key)
{
	return strncmp(key, "blocks.", 7) == 0 || strncmp(key, "routing.allocation.", 19) == 0 ||
		strcmp(key, "allocation.max_retries") == 0 ||
		strcmp(key, "unassigned.node_left.delayed_timeout") == 0 ||
		strcmp(key, "soft_deletes.retention_lease.period") == 0;
}

/* the text of an allocation setting's default ("" removes a filter) */
static const char *
allocation_setting_default(const char *key)
{
	if (strncmp(key, "blocks.", 7) == 0)
		return "false";
	if (strcmp(key, "routing.allocation.total_shards_per_node") == 0)
		return "-1";
	if (strcmp(key, "routing.allocation.enable") == 0)
		return "all";
	if (strcmp(key, "allocation.max_retries") == 0)
		return "5";
	if (strcmp(key, "unassigned.node_left.delayed_timeout") == 0)
		return "1m";
	if (strcmp(key, "soft_deletes.retention_lease.period") == 0)
		return "12h";
	return "";
}

/* index.blocks.*, index.routing.allocation.*, index.allocation.max_retries, ... */
static bool
apply_allocation_setting(SeIndexSettings *s, const char *key, const char *val, SeError *err)
{
	static const char *const kinds[] = {"include.", "exclude.", "require.", NULL};
	int			k;

	if (strcmp(key, "blocks.write") == 0)
		return bool_setting(key, val, &s->blocks_write, err);
	if (strcmp(key, "blocks.read_only") == 0)
		return bool_setting(key, val, &s->blocks_read_only, err);
	if (strcmp(key, "blocks.read_only_allow_delete") == 0)
		return bool_setting(key, val, &s->blocks_read_only_allow_delete, err);
	if (strcmp(key, "routing.allocation.total_shards_per_node") == 0)
		return int_setting(key, val, -1, INT_MAX, &s->total_shards_per_node, err);
	if (strcmp(key, "allocation.max_retries") == 0)
		return int_setting(key, val, 0, INT_MAX, &s->max_retries, err);
	if (strcmp(key, "unassigned.node_left.delayed_timeout") == 0 ||
		strcmp(key, "soft_deletes.retention_lease.period") == 0)
	{
		int64	   *ms = key[0] == 'u' ? &s->delayed_timeout_ms : &s->lease_period_ms;

		if (!se_parse_time_value(val, ms) || *ms < 0)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "failed to parse setting [index.%s] with value [%s] as a time value", key, val);
			return false;
		}
		return true;
	}
	if (strcmp(key, "routing.allocation.enable") == 0)
	{
		for (k = 0; allocation_enable_names[k]; k++)
			if (strcmp(val, allocation_enable_names[k]) == 0)
			{
				s->allocation_enable = k;
				return true;
			}
		se_error_set(err, 400, "illegal_argument_exception",
					 "illegal value can't update [index.routing.allocation.enable] from [%s] to [%s]",
					 allocation_enable_names[s->allocation_enable], val);
		return false;
	}
	for (k = 0; kinds[k]; k++)
	{
		const char *rest = key + strlen("routing.allocation.");

		if (strncmp(rest, kinds[k], strlen(kinds[k])) == 0 && rest[strlen(kinds[k])] != '\0')
		{
			/* an empty value removes the filter, as ES */
			se_csettings_layer_put(&s->allocation_filters, rest, val[0] ? val : NULL);
			return true;
		}
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "unknown setting [index.%s] please check that any required plugins are installed, or check the breaking changes documentation for removed settings",
				 key);
	return false;
}

/* Apply one flat setting (without "index." prefix). */
static bool
apply_setting(SeIndexSettings *s, const char *key, const SeJson *v,
			  bool for_update, SeError *err)
{
	char	   *val = se_json_scalar_text(v);

	/* null resets a block or allocation setting to its default, as ES */
	if (v->type == SE_JSON_NULL && is_allocation_setting(key))
		return apply_allocation_setting(s, key, allocation_setting_default(key), err);
	if (val == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "illegal value for setting [index.%s]: expected a scalar", key);
		return false;
	}
	/* static settings: fixed when the index is created */
	if (for_update && (strcmp(key, "number_of_shards") == 0 ||
					   strcmp(key, "number_of_routing_shards") == 0 ||
					   strcmp(key, "codec") == 0))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Can't update non dynamic settings [[index.%s]] for open indices", key);
		return false;
	}
	if (strcmp(key, "number_of_shards") == 0)
		return int_setting(key, val, 1, 1024, &s->number_of_shards, err);
	if (strcmp(key, "number_of_replicas") == 0)
		return int_setting(key, val, 0, 64, &s->number_of_replicas, err);
	if (strcmp(key, "number_of_routing_shards") == 0)
		return int_setting(key, val, 1, 1024 * 1024, &s->routing_num_shards, err);
	if (strcmp(key, "refresh_interval") == 0)
	{
		if (!se_parse_time_value(val, &s->refresh_interval_ms))
			goto bad_time;
		return true;
	}
	if (strcmp(key, "translog.durability") == 0)
	{
		if (pg_strcasecmp(val, "request") == 0)
			s->durability_async = false;
		else if (pg_strcasecmp(val, "async") == 0)
			s->durability_async = true;
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "No enum constant org.elasticsearch.index.translog.Translog.Durability.%s", val);
			return false;
		}
		return true;
	}
	if (strcmp(key, "translog.sync_interval") == 0)
	{
		if (!se_parse_time_value(val, &s->sync_interval_ms) || s->sync_interval_ms < 100)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "failed to parse value [%s] for setting [index.translog.sync_interval], must be >= [100ms]", val);
			return false;
		}
		return true;
	}
	if (strcmp(key, "translog.flush_threshold_size") == 0)
	{
		if (!se_parse_byte_size(val, &s->flush_threshold_bytes) || s->flush_threshold_bytes < 56)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "failed to parse setting [index.translog.flush_threshold_size] with value [%s] as a size in bytes", val);
			return false;
		}
		return true;
	}
	if (strcmp(key, "mapping.total_fields.limit") == 0)
		return int_setting(key, val, 1, 1000000, &s->total_fields_limit, err);
	if (strcmp(key, "mapping.depth.limit") == 0)
		return int_setting(key, val, 1, 1000, &s->depth_limit, err);
	if (strcmp(key, "mapping.nested_fields.limit") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->nested_fields_limit, err);
	if (strcmp(key, "mapping.nested_objects.limit") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->nested_objects_limit, err);
	if (strcmp(key, "max_result_window") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_result_window, err);
	if (strcmp(key, "max_terms_count") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_terms_count, err);
	if (strcmp(key, "max_regex_length") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_regex_length, err);
	if (strcmp(key, "highlight.max_analyzed_offset") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->highlight_max_analyzed_offset, err);
	if (strcmp(key, "max_refresh_listeners") == 0)
		return int_setting(key, val, 0, INT_MAX, &s->max_refresh_listeners, err);
	if (strcmp(key, "max_inner_result_window") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_inner_result_window, err);
	if (strcmp(key, "max_docvalue_fields_search") == 0)
		return int_setting(key, val, 0, INT_MAX, &s->max_docvalue_fields_search, err);
	if (strcmp(key, "max_script_fields") == 0)
		return int_setting(key, val, 0, INT_MAX, &s->max_script_fields, err);
	if (strcmp(key, "max_rescore_window") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_rescore_window, err);
	if (strcmp(key, "max_slices_per_scroll") == 0)
		return int_setting(key, val, 1, INT_MAX, &s->max_slices_per_scroll, err);
	if (strcmp(key, "hidden") == 0)
	{
		if (val[0] == '\0')	/* the URL's "" = true does not hold here */
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Failed to parse value [] as only [true] or [false] are allowed.");
			return false;
		}
		return se_parse_es_boolean(val, &s->hidden, err);
	}
	if (strncmp(key, "merge.", 6) == 0)
		return apply_merge_setting(s, key, val, err);
	if (is_allocation_setting(key))
		return apply_allocation_setting(s, key, val, err);
	if (strcmp(key, "codec") == 0)
	{
		if (strcmp(val, "default") == 0)
		{
			s->best_compression = false;
			s->codec_level = 3;
		}
		else if (strcmp(val, "best_compression") == 0)
		{
			s->best_compression = true;
			s->codec_level = 19;
		}
		else
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "unknown value for [index.codec] must be one of [default, best_compression] but was: %s", val);
			return false;
		}
		return true;
	}
	se_error_set(err, 400, "illegal_argument_exception",
				 "unknown setting [index.%s] please check that any required plugins are installed, or check the breaking changes documentation for removed settings",
				 key);
	return false;

bad_time:
	se_error_set(err, 400, "illegal_argument_exception",
				 "failed to parse setting [index.%s] with value [%s] as a time value: unit is missing or unrecognized",
				 key, val);
	return false;
}

/* Walk nested/flat settings objects, joining keys with '.'. */
static bool
walk_settings(SeIndexSettings *s, const SeJson *obj, const char *prefix,
			  bool for_update, SeError *err)
{
	int			i;

	for (i = 0; i < obj->u.o.count; i++)
	{
		const SeJsonMember *m = &obj->u.o.members[i];
		char	   *key = prefix[0] ? psprintf("%s.%s", prefix, m->key) : pstrdup(m->key);
		const char *k = key;

		if (strncmp(k, "index.", 6) == 0)
			k += 6;
		if (m->value->type == SE_JSON_OBJECT)
		{
			if (!walk_settings(s, m->value, key, for_update, err))
				return false;
			continue;
		}
		if (strcmp(k, "index") == 0)
			continue;
		/* ES accepts and ignores these informational keys on create */
		if (strcmp(k, "uuid") == 0 || strcmp(k, "provided_name") == 0 ||
			strcmp(k, "creation_date") == 0 || strncmp(k, "version.", 8) == 0)
			continue;
		if (!apply_setting(s, k, m->value, for_update, err))
			return false;
	}
	return true;
}

bool
se_settings_parse(const SeJson *settings, SeIndexSettings *out, bool for_update,
				  SeError *err)
{
	if (!for_update)
		*out = default_settings;
	/* out may share its filters with the state it was copied from */
	out->allocation_filters = se_csettings_layer_copy(&out->allocation_filters);
	if (settings == NULL || settings->type == SE_JSON_NULL)
		goto done;
	if (settings->type != SE_JSON_OBJECT)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "settings must be an object");
		return false;
	}
	if (!walk_settings(out, settings, "", for_update, err))
		return false;
done:
	if (out->routing_num_shards == 0 || !for_update)
	{
		if (out->routing_num_shards == 0)
			out->routing_num_shards = se_routing_num_shards(out->number_of_shards);
	}
	return true;
}

/*
 * Blocks and allocation settings that differ from the defaults, each as
 * ,"key":"value" -- flat ("blocks.write") or nested under "blocks" and
 * "routing"/"allocation"/"unassigned" objects.
 */
static void
allocation_settings_to_json(const SeIndexSettings *s, bool flat, StringInfo out)
{
	SeSettingsLayer l = se_csettings_layer_copy(&s->allocation_filters);
	SeSettingsLayer all = {0};
	int			i;

	for (i = 0; i < l.n; i++)
		se_csettings_layer_put(&all, psprintf("routing.allocation.%s", l.keys[i]), l.values[i]);
	if (s->blocks_write)
		se_csettings_layer_put(&all, "blocks.write", "true");
	if (s->blocks_read_only)
		se_csettings_layer_put(&all, "blocks.read_only", "true");
	if (s->blocks_read_only_allow_delete)
		se_csettings_layer_put(&all, "blocks.read_only_allow_delete", "true");
	if (s->total_shards_per_node != default_settings.total_shards_per_node)
		se_csettings_layer_put(&all, "routing.allocation.total_shards_per_node",
							   psprintf("%d", s->total_shards_per_node));
	if (s->allocation_enable != default_settings.allocation_enable)
		se_csettings_layer_put(&all, "routing.allocation.enable",
							   allocation_enable_names[s->allocation_enable]);
	if (s->max_retries != default_settings.max_retries)
		se_csettings_layer_put(&all, "allocation.max_retries", psprintf("%d", s->max_retries));
	if (s->delayed_timeout_ms != default_settings.delayed_timeout_ms)
	{
		StringInfoData t;

		initStringInfo(&t);
		se_format_time_value(s->delayed_timeout_ms, &t);
		se_csettings_layer_put(&all, "unassigned.node_left.delayed_timeout", t.data);
	}
	if (s->lease_period_ms != default_settings.lease_period_ms)
	{
		StringInfoData t;

		initStringInfo(&t);
		se_format_time_value(s->lease_period_ms, &t);
		se_csettings_layer_put(&all, "soft_deletes.retention_lease.period", t.data);
	}
	if (all.n == 0)
		return;
	if (flat)
	{
		for (i = 0; i < all.n; i++)
		{
			appendStringInfoChar(out, ',');
			se_json_write_string(out, all.keys[i], strlen(all.keys[i]));
			appendStringInfoChar(out, ':');
			se_json_write_string(out, all.values[i], strlen(all.values[i]));
		}
	}
	else
	{
		StringInfoData nested;

		/* {"allocation":..,"blocks":..}: its members, without the braces */
		initStringInfo(&nested);
		se_csettings_layer_nested(&all, &nested);
		appendStringInfoChar(out, ',');
		appendBinaryStringInfo(out, nested.data + 1, nested.len - 2);
	}
}

/*
 * index.merge.* as GET _settings shows them: like Elasticsearch, only the
 * ones set to something other than the default.
 */
static void
merge_settings_to_json(const SeIndexSettings *s, StringInfo out)
{
	const SeMergePolicy *p = &s->merge_policy;
	const SeMergePolicy *d = &default_settings.merge_policy;
	StringInfoData pol;
	StringInfoData tmp;

	initStringInfo(&pol);
	initStringInfo(&tmp);
	if (p->segments_per_tier != d->segments_per_tier)
		appendStringInfo(&pol, ",\"segments_per_tier\":\"%g\"", p->segments_per_tier);
	if (p->max_merge_at_once != d->max_merge_at_once)
		appendStringInfo(&pol, ",\"max_merge_at_once\":\"%d\"", p->max_merge_at_once);
	if (p->floor_segment_bytes != d->floor_segment_bytes)
	{
		se_format_byte_size(p->floor_segment_bytes, &tmp);
		appendStringInfo(&pol, ",\"floor_segment\":\"%s\"", tmp.data);
		resetStringInfo(&tmp);
	}
	if (p->max_merged_segment_bytes != d->max_merged_segment_bytes)
	{
		se_format_byte_size(p->max_merged_segment_bytes, &tmp);
		appendStringInfo(&pol, ",\"max_merged_segment\":\"%s\"", tmp.data);
	}
	if (p->deletes_pct_allowed != d->deletes_pct_allowed)
		appendStringInfo(&pol, ",\"deletes_pct_allowed\":\"%g\"", p->deletes_pct_allowed);
	if (pol.len > 0 || s->merge_max_thread_count != default_settings.merge_max_thread_count)
	{
		appendStringInfoString(out, "\"merge\":{");
		if (pol.len > 0)
			appendStringInfo(out, "\"policy\":{%s}", pol.data + 1);
		if (s->merge_max_thread_count != default_settings.merge_max_thread_count)
			appendStringInfo(out, "%s\"scheduler\":{\"max_thread_count\":\"%d\"}",
							 pol.len > 0 ? "," : "", s->merge_max_thread_count);
		appendStringInfoString(out, "},");
	}
	pfree(pol.data);
	pfree(tmp.data);
}

/* Settings as ES's GET /{index}/_settings shows them (strings). */
void
se_settings_to_json(const SeIndexMeta *im, StringInfo out)
{
	const SeIndexSettings *s = &im->settings;
	StringInfoData tmp;

	initStringInfo(&tmp);
	appendStringInfoString(out, "{\"index\":{");
	appendStringInfo(out, "\"creation_date\":\"" INT64_FORMAT "\",", im->creation_date);
	appendStringInfo(out, "\"number_of_shards\":\"%d\",", s->number_of_shards);
	appendStringInfo(out, "\"number_of_replicas\":\"%d\",", s->number_of_replicas);
	appendStringInfo(out, "\"routing_num_shards\":\"%d\",", s->routing_num_shards);
	se_format_time_value(s->refresh_interval_ms, &tmp);
	appendStringInfo(out, "\"refresh_interval\":\"%s\",", tmp.data);
	resetStringInfo(&tmp);
	se_format_time_value(s->sync_interval_ms, &tmp);
	appendStringInfo(out, "\"translog\":{\"durability\":\"%s\",\"sync_interval\":\"%s\",",
					 s->durability_async ? "async" : "request", tmp.data);
	resetStringInfo(&tmp);
	se_format_byte_size(s->flush_threshold_bytes, &tmp);
	appendStringInfo(out, "\"flush_threshold_size\":\"%s\"},", tmp.data);
	appendStringInfo(out, "\"mapping\":{\"total_fields\":{\"limit\":\"%d\"},\"depth\":{\"limit\":\"%d\"}",
					 s->total_fields_limit, s->depth_limit);
	/* like ES, these only once set */
	if (s->nested_fields_limit != default_settings.nested_fields_limit)
		appendStringInfo(out, ",\"nested_fields\":{\"limit\":\"%d\"}", s->nested_fields_limit);
	if (s->nested_objects_limit != default_settings.nested_objects_limit)
		appendStringInfo(out, ",\"nested_objects\":{\"limit\":\"%d\"}", s->nested_objects_limit);
	appendStringInfoString(out, "},");
	appendStringInfo(out, "\"max_result_window\":\"%d\",", s->max_result_window);
	/* like ES, these only once set */
	if (s->max_terms_count != default_settings.max_terms_count)
		appendStringInfo(out, "\"max_terms_count\":\"%d\",", s->max_terms_count);
	if (s->max_regex_length != default_settings.max_regex_length)
		appendStringInfo(out, "\"max_regex_length\":\"%d\",", s->max_regex_length);
	if (s->max_refresh_listeners != default_settings.max_refresh_listeners)
		appendStringInfo(out, "\"max_refresh_listeners\":\"%d\",", s->max_refresh_listeners);
	if (s->highlight_max_analyzed_offset != default_settings.highlight_max_analyzed_offset)
		appendStringInfo(out, "\"highlight\":{\"max_analyzed_offset\":\"%d\"},",
						 s->highlight_max_analyzed_offset);
	search_limits_to_json(s, false, out);
	if (s->hidden)
		appendStringInfoString(out, "\"hidden\":\"true\",");
	appendStringInfo(out, "\"codec\":\"%s\"", s->best_compression ? "best_compression" : "default");
	allocation_settings_to_json(s, false, out);
	appendStringInfoChar(out, ',');
	merge_settings_to_json(s, out);
	appendStringInfoString(out, "\"uuid\":");
	se_json_write_string(out, im->uuid, strlen(im->uuid));
	appendStringInfoString(out, ",\"provided_name\":");
	se_json_write_string(out, im->name, strlen(im->name));
	appendStringInfoString(out, ",\"version\":{\"created\":\"8110099\"}}}");
	pfree(tmp.data);
}

/*
 * The search limits that differ from ES's defaults (ES shows them only once
 * set): flat (",key":N, for the state file) or nested ("key":"N",).
 */
static void
search_limits_to_json(const SeIndexSettings *s, bool flat, StringInfo out)
{
	const struct
	{
		const char *key;
		int			v;
		int			dflt;
	}			l[] = {
		{"max_inner_result_window", s->max_inner_result_window, default_settings.max_inner_result_window},
		{"max_docvalue_fields_search", s->max_docvalue_fields_search, default_settings.max_docvalue_fields_search},
		{"max_script_fields", s->max_script_fields, default_settings.max_script_fields},
		{"max_rescore_window", s->max_rescore_window, default_settings.max_rescore_window},
		{"max_slices_per_scroll", s->max_slices_per_scroll, default_settings.max_slices_per_scroll},
	};
	int			i;

	for (i = 0; i < lengthof(l); i++)
		if (l[i].v != l[i].dflt)
			appendStringInfo(out, flat ? ",\"%s\":%d" : "\"%s\":\"%d\",", l[i].key, l[i].v);
}

/* Flat settings for the state file (round-trips through apply_setting). */
static void
settings_to_flat_json(const SeIndexSettings *s, StringInfo out)
{
	StringInfoData tmp;

	initStringInfo(&tmp);
	appendStringInfo(out, "{\"number_of_shards\":%d,\"number_of_replicas\":%d,\"number_of_routing_shards\":%d,",
					 s->number_of_shards, s->number_of_replicas, s->routing_num_shards);
	se_format_time_value(s->refresh_interval_ms, &tmp);
	appendStringInfo(out, "\"refresh_interval\":\"%s\",", tmp.data);
	resetStringInfo(&tmp);
	se_format_time_value(s->sync_interval_ms, &tmp);
	appendStringInfo(out, "\"translog.durability\":\"%s\",\"translog.sync_interval\":\"%s\",",
					 s->durability_async ? "async" : "request", tmp.data);
	appendStringInfo(out, "\"translog.flush_threshold_size\":\"" INT64_FORMAT "b\",", s->flush_threshold_bytes);
	appendStringInfo(out, "\"mapping.total_fields.limit\":%d,\"mapping.depth.limit\":%d,\"max_result_window\":%d,\"codec\":\"%s\",",
					 s->total_fields_limit, s->depth_limit, s->max_result_window,
					 s->best_compression ? "best_compression" : "default");
	appendStringInfo(out, "\"max_terms_count\":%d,\"max_regex_length\":%d,",
					 s->max_terms_count, s->max_regex_length);
	appendStringInfo(out, "\"merge.policy.segments_per_tier\":\"%.17g\",\"merge.policy.max_merge_at_once\":%d,"
					 "\"merge.policy.floor_segment\":\"" INT64_FORMAT "b\",\"merge.policy.max_merged_segment\":\"" INT64_FORMAT "b\","
					 "\"merge.policy.deletes_pct_allowed\":\"%.17g\",\"merge.scheduler.max_thread_count\":%d}",
					 s->merge_policy.segments_per_tier, s->merge_policy.max_merge_at_once,
					 s->merge_policy.floor_segment_bytes, s->merge_policy.max_merged_segment_bytes,
					 s->merge_policy.deletes_pct_allowed, s->merge_max_thread_count);
	/* the settings below only once set (a state file of before them reads the same) */
	out->len--;					/* reopen the object */
	if (s->max_refresh_listeners != default_settings.max_refresh_listeners)
		appendStringInfo(out, ",\"max_refresh_listeners\":%d", s->max_refresh_listeners);
	if (s->highlight_max_analyzed_offset != default_settings.highlight_max_analyzed_offset)
		appendStringInfo(out, ",\"highlight.max_analyzed_offset\":%d",
						 s->highlight_max_analyzed_offset);
	search_limits_to_json(s, true, out);
	if (s->nested_fields_limit != default_settings.nested_fields_limit)
		appendStringInfo(out, ",\"mapping.nested_fields.limit\":%d", s->nested_fields_limit);
	if (s->nested_objects_limit != default_settings.nested_objects_limit)
		appendStringInfo(out, ",\"mapping.nested_objects.limit\":%d", s->nested_objects_limit);
	if (s->hidden)
		appendStringInfoString(out, ",\"hidden\":true");
	allocation_settings_to_json(s, true, out);
	appendStringInfoChar(out, '}');
	pfree(tmp.data);
}

/* ---------- index names and expressions ---------- */

/*
 * ES's rules for a new index's name (MetadataCreateIndexService), checked
 * and worded in ES's order; lowercase is Unicode's, as Java's toLowerCase.
 * The name never becomes a file name (indices live under their uuid), but
 * "/", "\" and ".." are refused all the same.
 */
bool
se_index_name_valid(const char *name, SeError *err)
{
	size_t		len = name ? strlen(name) : 0;
	StringInfoData lower;
	bool		is_lower;

	if (len == 0)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [], must not be empty");
		return false;
	}
	if (strpbrk(name, "\\/*?\"<>| ,") != NULL)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]",
					 name);
		return false;
	}
	if (strchr(name, '#') != NULL || strchr(name, ':') != NULL)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must not contain '%c'", name,
					 strchr(name, '#') ? '#' : ':');
		return false;
	}
	if (name[0] == '-' || name[0] == '_' || name[0] == '+')
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must not start with '_', '-', or '+'", name);
		return false;
	}
	if (len > 255)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], index name is too long, (%d > 255)",
					 name, (int) len);
		return false;
	}
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must not be '.' or '..'", name);
		return false;
	}
	if (se_utf8_validate(name, len) >= 0)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name, must be valid UTF-8");
		return false;
	}
	initStringInfo(&lower);
	se_utf8_lower(name, (int) len, &lower);
	is_lower = lower.len == (int) len && memcmp(lower.data, name, len) == 0;
	pfree(lower.data);
	if (!is_lower)
	{
		se_error_set(err, 400, "invalid_index_name_exception",
					 "Invalid index name [%s], must be lowercase", name);
		return false;
	}
	return true;
}

List *
se_state_resolve(const SeClusterState *st, const char *expr, bool include_closed,
				 SeError *err)
{
	return se_state_resolve_filtered(st, expr, include_closed, NULL, NULL, err);
}

List *
se_state_resolve_filtered(const SeClusterState *st, const char *expr, int expand,
						  SeIndexFilter filter, void *arg, SeError *err)
{
	bool		include_closed = (expand & SE_EXPAND_CLOSED) != 0;
	List	   *result = NIL;
	char	   *copy = pstrdup(expr ? expr : "_all");
	char	   *tok;
	char	   *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		int			i;
		bool		exclude = false;

		while (*tok == ' ')
			tok++;
		if (tok[0] == '-' && result != NIL)
		{
			exclude = true;
			tok++;
		}
		if (strcmp(tok, "_all") == 0 || strchr(tok, '*') != NULL)
		{
			const char *pat = strcmp(tok, "_all") == 0 ? "*" : tok;

			for (i = 0; i < st->nindices; i++)
			{
				SeIndexMeta *im = st->indices[i];

				if (!se_wildcard_match(pat, im->name))
					continue;
				/* ES: hidden indices only when asked, or ".x*" for ".x..." */
				if (im->settings.hidden && !(expand & SE_EXPAND_HIDDEN) &&
					!(pat[0] == '.' && im->name[0] == '.'))
					continue;
				if (!exclude && filter && !filter(im->name, false, arg, err))
					continue;
				if (exclude)
					result = list_delete_ptr(result, im);
				else if ((include_closed || !im->closed) && !list_member_ptr(result, im))
					result = lappend(result, im);
			}
			/* and the indices of the (visible) aliases it matches */
			if (strcmp(tok, "_all") != 0)
			{
				bool		found;

				result = se_alias_resolve_into(st, pat, true, exclude, expand,
											   result, filter, arg, &found, err);
			}
		}
		else
		{
			SeIndexMeta *im;
			bool		alias = false;

			/* an alias is its indices, authorized each (alias.c) */
			if (se_state_find(st, tok) == NULL)
			{
				result = se_alias_resolve_into(st, tok, false, exclude, true, result,
											   filter, arg, &alias, err);
				if (se_error_is_set(err))
					return NIL;
				if (alias)
					continue;
			}
			/* names are authorized before they are looked up, as in ES */
			if (!exclude && filter && !filter(tok, true, arg, err))
				return NIL;
			im = se_state_find(st, tok);
			if (im == NULL)
			{
				if (exclude)
					continue;
				se_error_set(err, 404, "index_not_found_exception",
							 "no such index [%s]", tok);
				return NIL;
			}
			if (exclude)
				result = list_delete_ptr(result, im);
			else if (!list_member_ptr(result, im))
				result = lappend(result, im);
		}
	}
	return result;
}

/* ---------- load / save ---------- */

static int
cmp_index_name(const void *a, const void *b)
{
	return strcmp((*(SeIndexMeta *const *) a)->name, (*(SeIndexMeta *const *) b)->name);
}

/* Keep st's indices sorted by name (se_state_find's binary search). */
void
se_state_sort(SeClusterState *st)
{
	qsort(st->indices, st->nindices, sizeof(SeIndexMeta *), cmp_index_name);
}

static const char *
json_string_or(const SeJson *obj, const char *key, const char *dflt)
{
	const SeJson *v = obj ? se_json_get(obj, key) : NULL;

	return v && v->type == SE_JSON_STRING ? v->u.s.str : dflt;
}

static int64
json_int_or(const SeJson *obj, const char *key, int64 dflt)
{
	const SeJson *v = obj ? se_json_get(obj, key) : NULL;

	return v && v->type == SE_JSON_NUMBER ? v->u.n.i : dflt;
}

const char *
se_shard_state_name(SeShardState state)
{
	switch (state)
	{
		case SE_SHARD_STARTED:
			return "STARTED";
		case SE_SHARD_INITIALIZING:
			return "INITIALIZING";
		default:
			return "UNASSIGNED";
	}
}

/*
 * One copy of the state's routing JSON: {node, state, allocation_id,
 * primary, data_node, unassigned_info {reason, at, details,
 * failed_attempts}}.  An entry without a state (written before shards
 * reported their start) is INITIALIZING where it has a node.
 */
static void
shard_copy_from_json(const SeJson *e, bool primary, SeShardCopy *c)
{
	const char *st = json_string_or(e, "state", NULL);
	const SeJson *ui = se_json_get(e, "unassigned_info");

	c->node = pstrdup(json_string_or(e, "node", ""));
	c->primary = primary;
	if (st && strcmp(st, "STARTED") == 0)
		c->state = SE_SHARD_STARTED;
	else if (st ? strcmp(st, "INITIALIZING") == 0 : c->node[0] != '\0')
		c->state = SE_SHARD_INITIALIZING;
	else
		c->state = SE_SHARD_UNASSIGNED;
	strlcpy(c->allocation_id, json_string_or(e, "allocation_id", ""), sizeof(c->allocation_id));
	/* a moving copy (written as STARTED, so that an older build reads it so) */
	if (c->state == SE_SHARD_STARTED && json_string_or(e, "relocating_node", NULL) &&
		json_string_or(e, "relocation_id", NULL))
	{
		c->relocating_node = pstrdup(json_string_or(e, "relocating_node", NULL));
		strlcpy(c->relocation_id, json_string_or(e, "relocation_id", ""),
				sizeof(c->relocation_id));
	}
	if (json_string_or(e, "data_node", NULL))
		c->data_node = pstrdup(json_string_or(e, "data_node", NULL));
	if (ui && ui->type == SE_JSON_OBJECT)
	{
		c->unassigned_reason = pstrdup(json_string_or(ui, "reason", "INDEX_CREATED"));
		c->unassigned_at = json_int_or(ui, "at", 0);
		if (json_string_or(ui, "details", NULL))
			c->unassigned_details = pstrdup(json_string_or(ui, "details", NULL));
		c->failed_attempts = (int) json_int_or(ui, "failed_attempts", 0);
	}
	else if (c->state != SE_SHARD_STARTED)
		c->unassigned_reason = primary ? "INDEX_CREATED" : "REPLICA_ADDED";
}

static void
shard_copy_to_json(const SeShardCopy *c, StringInfo out)
{
	appendStringInfoString(out, "{\"node\":");
	se_json_write_string(out, c->node, strlen(c->node));
	appendStringInfo(out, ",\"state\":\"%s\",\"primary\":%s", se_shard_state_name(c->state),
					 c->primary ? "true" : "false");
	if (c->allocation_id[0])
		appendStringInfo(out, ",\"allocation_id\":\"%s\"", c->allocation_id);
	if (se_routing_relocating(c))
	{
		appendStringInfoString(out, ",\"relocating_node\":");
		se_json_write_string(out, c->relocating_node, strlen(c->relocating_node));
		appendStringInfo(out, ",\"relocation_id\":\"%s\"", c->relocation_id);
	}
	if (c->data_node)
	{
		appendStringInfoString(out, ",\"data_node\":");
		se_json_write_string(out, c->data_node, strlen(c->data_node));
	}
	if (c->unassigned_reason)
	{
		appendStringInfoString(out, ",\"unassigned_info\":{\"reason\":");
		se_json_write_string(out, c->unassigned_reason, strlen(c->unassigned_reason));
		appendStringInfo(out, ",\"at\":" INT64_FORMAT ",\"failed_attempts\":%d",
						 c->unassigned_at, c->failed_attempts);
		if (c->unassigned_details)
		{
			appendStringInfoString(out, ",\"details\":");
			se_json_write_string(out, c->unassigned_details, strlen(c->unassigned_details));
		}
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, '}');
}

/*
 * One shard's routing from JSON: {"primary_term", "in_sync": [..],
 * "copies": [primary, replicas..]}, or the shape written before replicas
 * (the primary copy's own object), read as a single primary copy whose id,
 * once started, is in sync.
 */
static void
shard_routing_from_json(const SeJson *e, int64 index_term, SeShardRouting *r)
{
	const SeJson *copies = se_json_get(e, "copies");
	const SeJson *in_sync = se_json_get(e, "in_sync");
	int			k;

	if (copies == NULL || copies->type != SE_JSON_ARRAY || copies->u.a.count == 0)
	{
		r->ncopies = 1;
		r->copies = palloc0(sizeof(SeShardCopy));
		shard_copy_from_json(e, true, &r->copies[0]);
		r->primary_term = index_term;
		r->in_sync = palloc0(sizeof(char *));
		if (r->copies[0].state == SE_SHARD_STARTED && r->copies[0].allocation_id[0])
			r->in_sync[r->nin_sync++] = pstrdup(r->copies[0].allocation_id);
		return;
	}
	r->ncopies = copies->u.a.count;
	r->copies = palloc0(sizeof(SeShardCopy) * r->ncopies);
	for (k = 0; k < r->ncopies; k++)
		shard_copy_from_json(copies->u.a.items[k], k == 0, &r->copies[k]);
	r->primary_term = json_int_or(e, "primary_term", index_term);
	r->in_sync = palloc0(sizeof(char *) *
						 Max(1, in_sync && in_sync->type == SE_JSON_ARRAY ? in_sync->u.a.count : 0));
	for (k = 0; in_sync && in_sync->type == SE_JSON_ARRAY && k < in_sync->u.a.count; k++)
		if (in_sync->u.a.items[k]->type == SE_JSON_STRING)
			r->in_sync[r->nin_sync++] = pstrdup(in_sync->u.a.items[k]->u.s.str);
}

static void
shard_routing_to_json(const SeShardRouting *r, StringInfo out)
{
	int			k;

	appendStringInfo(out, "{\"primary_term\":" INT64_FORMAT ",\"in_sync\":[", r->primary_term);
	for (k = 0; k < r->nin_sync; k++)
	{
		if (k > 0)
			appendStringInfoChar(out, ',');
		se_json_write_string(out, r->in_sync[k], -1);
	}
	appendStringInfoString(out, "],\"copies\":[");
	for (k = 0; k < r->ncopies; k++)
	{
		if (k > 0)
			appendStringInfoChar(out, ',');
		shard_copy_to_json(&r->copies[k], out);
	}
	appendStringInfoString(out, "]}");
}

/* One index of the state from its JSON object (the file's or etcd's). */
SeIndexMeta *
se_state_index_from_json(const SeJson *j, SeError *err)
{
	SeIndexMeta *im = palloc0(sizeof(SeIndexMeta));
	SeMappingLimits limits;
	StringInfoData buf;
	const SeJson *v;

	im->name = pstrdup(se_json_get(j, "name")->u.s.str);
	strlcpy(im->uuid, se_json_get(j, "uuid")->u.s.str, sizeof(im->uuid));
	im->closed = se_json_get(j, "closed")->type == SE_JSON_TRUE;
	im->creation_date = se_json_get(j, "creation_date")->u.n.i;
	im->primary_term = se_json_get(j, "primary_term")->u.n.i;
	im->mapping_version = se_json_get(j, "mapping_version")->u.n.i;
	if (!se_settings_parse(se_json_get(j, "settings"), &im->settings, false, err))
		return NULL;
	memset(&limits, 0, sizeof(limits));
	limits.total_fields_limit = INT_MAX;
	limits.depth_limit = INT_MAX;
	limits.nested_fields_limit = INT_MAX;

	/*
	 * The parsed mapping keeps pointers into the JSON it was read from, so
	 * it gets a parse of its own: the caller may then drop j, whose
	 * routing (~1 KB a shard copy parsed) is not needed once read.
	 */
	{
		SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
		char	   *text = se_json_to_string(se_json_get(j, "mappings"));
		SeJson	   *mj = se_json_parse(text, strlen(text), &opts, err);

		pfree(text);
		if (mj == NULL)
			return NULL;
		im->mapping = se_mapping_from_json(mj, &limits, err);
	}
	if (im->mapping == NULL)
		return NULL;
	initStringInfo(&buf);
	se_mapping_to_json(im->mapping, &buf);
	im->mappings_json = buf.data;
	/* cluster mode only: etcd's revision of the index's key, its shards' nodes */
	v = se_json_get(j, "mod_revision");
	im->mod_revision = v && v->type == SE_JSON_NUMBER ? v->u.n.i : 0;
	if (!se_aliases_from_state_json(im, se_json_get(j, "aliases"), err))
		return NULL;
	v = se_json_get(j, "routing");
	if (v && v->type == SE_JSON_ARRAY && v->u.a.count == im->settings.number_of_shards)
	{
		int			s;

		im->routing = palloc0(sizeof(SeShardRouting) * v->u.a.count);
		for (s = 0; s < v->u.a.count; s++)
			shard_routing_from_json(v->u.a.items[s], im->primary_term, &im->routing[s]);
		se_state_routing_derive(im);
	}
	return im;
}

/*
 * The manifest: {"version":N,"cluster_uuid":..,"next_gen":G,"indices":
 * [{"name":..,"uuid":..,"gen":..}],"settings":{..}}.  Its indices come back
 * as stubs (name, uuid, state_gen), which se_state_index_load parses.  A
 * state written by the first format (version 1: every index inline) is
 * parsed whole; its indices have no file yet (state_gen 0), so the next
 * save writes them.
 */
static SeClusterState *
manifest_from_json(const char *data, size_t len, int format_version, SeError *err)
{
	SeJson	   *root;
	SeJson	   *indices;
	const SeJson *v;
	SeClusterState *st;
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	int			i;

	root = se_json_parse(data, len, &opts, err);
	if (root == NULL)
		return NULL;
	st = palloc0(sizeof(SeClusterState));
	st->version = (uint64) se_json_get(root, "version")->u.n.i;
	st->cluster_uuid = pstrdup(se_json_get(root, "cluster_uuid")->u.s.str);
	v = se_json_get(root, "next_gen");
	st->next_state_gen = v && v->type == SE_JSON_NUMBER ? (uint64) v->u.n.i : 1;
	indices = se_json_get(root, "indices");
	st->nindices = indices->u.a.count;
	st->indices = palloc0(sizeof(SeIndexMeta *) * Max(1, st->nindices));
	for (i = 0; i < st->nindices; i++)
	{
		const SeJson *e = indices->u.a.items[i];
		SeIndexMeta *im;

		if (format_version == 1)
		{
			if ((im = se_state_index_from_json(e, err)) == NULL)
				return NULL;
		}
		else
		{
			im = palloc0(sizeof(SeIndexMeta));
			im->name = pstrdup(se_json_get(e, "name")->u.s.str);
			strlcpy(im->uuid, se_json_get(e, "uuid")->u.s.str, sizeof(im->uuid));
			im->state_gen = (uint64) se_json_get(e, "gen")->u.n.i;
			im->state_stub = true;
		}
		st->indices[i] = im;
	}
	qsort(st->indices, st->nindices, sizeof(SeIndexMeta *), cmp_index_name);
	if (!se_state_settings_from_json(se_json_get(root, "settings"), st, err))
		return NULL;
	/* index templates (absent from a state written before them) */
	v = se_json_get(root, "templates");
	if (v && se_json_get(v, "value"))
	{
		const SeJson *rev = se_json_get(v, "mod_revision");

		st->templates_json = se_json_to_string(se_json_get(v, "value"));
		st->templates_mod_revision = rev && rev->type == SE_JSON_NUMBER ? rev->u.n.i : 0;
	}
	/* stored scripts, the same way */
	v = se_json_get(root, "scripts");
	if (v && se_json_get(v, "value"))
	{
		const SeJson *rev = se_json_get(v, "mod_revision");

		st->scripts_json = se_json_to_string(se_json_get(v, "value"));
		st->scripts_mod_revision = rev && rev->type == SE_JSON_NUMBER ? rev->u.n.i : 0;
	}
	return st;
}

/*
 * The cluster settings of the state: {"persistent":{..},"transient":{..}}
 * (flat), and in the file also etcd's mod_revision of their key.
 */
void
se_state_settings_to_json(const SeClusterState *st, bool with_revision, StringInfo out)
{
	appendStringInfoString(out, "{\"persistent\":");
	se_csettings_layer_to_json(&st->persistent, out);
	appendStringInfoString(out, ",\"transient\":");
	se_csettings_layer_to_json(&st->transient, out);
	if (with_revision && st->settings_mod_revision > 0)
		appendStringInfo(out, ",\"mod_revision\":" INT64_FORMAT, st->settings_mod_revision);
	appendStringInfoChar(out, '}');
}

bool
se_state_settings_from_json(const SeJson *j, SeClusterState *st, SeError *err)
{
	const SeJson *rev;

	memset(&st->persistent, 0, sizeof(st->persistent));
	memset(&st->transient, 0, sizeof(st->transient));
	st->settings_mod_revision = 0;
	if (j == NULL)				/* a state written before cluster settings */
		return true;
	if (!se_csettings_layer_from_json(se_json_get(j, "persistent"), &st->persistent, err) ||
		!se_csettings_layer_from_json(se_json_get(j, "transient"), &st->transient, err))
		return false;
	rev = se_json_get(j, "mod_revision");
	st->settings_mod_revision = rev && rev->type == SE_JSON_NUMBER ? rev->u.n.i : 0;
	return true;
}

/*
 * One index as JSON: what the file holds and what the master writes to
 * etcd (without mod_revision, which etcd assigns).
 */
void
se_state_index_to_json(const SeIndexMeta *im, bool with_revision, StringInfo out)
{
	appendStringInfoString(out, "{\"name\":");
	se_json_write_string(out, im->name, strlen(im->name));
	appendStringInfo(out, ",\"uuid\":\"%s\",\"closed\":%s,\"creation_date\":" INT64_FORMAT
					 ",\"primary_term\":" INT64_FORMAT ",\"mapping_version\":" INT64_FORMAT ",\"settings\":",
					 im->uuid, im->closed ? "true" : "false", im->creation_date,
					 im->primary_term, im->mapping_version);
	settings_to_flat_json(&im->settings, out);
	appendStringInfoString(out, ",\"mappings\":");
	appendStringInfoString(out, im->mappings_json);
	/* only when it has some: an index without aliases keeps its encoding */
	if (im->naliases > 0)
	{
		appendStringInfoString(out, ",\"aliases\":");
		se_aliases_to_json(im, NULL, out);
	}
	if (im->routing)
	{
		int			s;

		appendStringInfoString(out, ",\"routing\":[");
		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			if (s > 0)
				appendStringInfoChar(out, ',');
			shard_routing_to_json(&im->routing[s], out);
		}
		appendStringInfoChar(out, ']');
	}
	if (with_revision && im->mod_revision > 0)
		appendStringInfo(out, ",\"mod_revision\":" INT64_FORMAT, im->mod_revision);
	appendStringInfoChar(out, '}');
}

static void
manifest_to_json(const SeClusterState *st, StringInfo out)
{
	int			i;

	appendStringInfo(out, "{\"version\":" UINT64_FORMAT ",\"cluster_uuid\":", st->version);
	se_json_write_string(out, st->cluster_uuid, strlen(st->cluster_uuid));
	appendStringInfo(out, ",\"next_gen\":" UINT64_FORMAT ",\"indices\":[", st->next_state_gen);
	for (i = 0; i < st->nindices; i++)
	{
		const SeIndexMeta *im = st->indices[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, "{\"name\":");
		se_json_write_string(out, im->name, strlen(im->name));
		appendStringInfo(out, ",\"uuid\":\"%s\",\"gen\":" UINT64_FORMAT "}", im->uuid, im->state_gen);
	}
	appendStringInfoString(out, "],\"settings\":");
	se_state_settings_to_json(st, true, out);
	if (st->templates_json)
		appendStringInfo(out, ",\"templates\":{\"value\":%s,\"mod_revision\":" INT64_FORMAT "}",
						 st->templates_json, st->templates_mod_revision);
	if (st->scripts_json)
		appendStringInfo(out, ",\"scripts\":{\"value\":%s,\"mod_revision\":" INT64_FORMAT "}",
						 st->scripts_json, st->scripts_mod_revision);
	appendStringInfoChar(out, '}');
}

static char *
index_file_path(const char *uuid, uint64 gen)
{
	return psprintf("%s/_state/indices/%s-" UINT64_FORMAT, se_data_directory(), uuid, gen);
}

/* Read one index's file; NULL (err set) when it is missing or invalid. */
static SeIndexMeta *
index_file_load(const char *uuid, uint64 gen, SeError *err)
{
	char	   *path = index_file_path(uuid, gen);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};
	SeJson	   *j;
	SeIndexMeta *im;
	int			hdr;
	MemoryContext scratch,
				old;

	if (data == NULL)
	{
		se_error_set(err, 500, "corrupt_state_exception", "index state file \"%s\" is missing", path);
		return NULL;
	}
	hdr = se_file_check((const uint8 *) data, len, INDEX_STATE_FORMAT, INDEX_STATE_VERSION,
						INDEX_STATE_VERSION, NULL, true, err);
	if (hdr < 0)
		return NULL;
	len -= hdr + SE_FILE_FOOTER_LEN;
	/* the parsed JSON goes once the index is read out of it */
	scratch = AllocSetContextCreate(CurrentMemoryContext, "search_engine index state parse",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(scratch);
	j = se_json_parse(data + hdr, len, &opts, err);
	MemoryContextSwitchTo(old);
	im = j ? se_state_index_from_json(j, err) : NULL;
	if (im)
	{
		im->state_gen = gen;
		im->state_json = pnstrdup(data + hdr, len);
	}
	else if (err->reason)
		err->reason = pstrdup(err->reason);
	MemoryContextDelete(scratch);
	pfree(data);
	return im;
}

static void
state_corrupted(const char *what, const SeError *err)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("search_engine cluster state %s is corrupted: %s", what,
					err->reason ? err->reason : "?"),
			 errdetail("corrupt_state_exception")));
}

/*
 * Read the manifest (or an empty state): indices as stubs.  The caller
 * holds state_lock.
 */
SeClusterState *
se_state_load_manifest(void)
{
	char	   *path = state_path();
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeError		err;
	int			hdr;
	int			format_version = 0;
	SeClusterState *st;

	se_error_init(&err);
	if (data == NULL)
	{
		char		uuid[SE_UUID_LEN + 1];

		st = palloc0(sizeof(SeClusterState));
		se_make_uuid(uuid);
		st->cluster_uuid = pstrdup(uuid);
		st->indices = palloc0(sizeof(SeIndexMeta *));
		st->next_state_gen = 1;
		return st;
	}
	hdr = se_file_check((const uint8 *) data, len, STATE_FORMAT, 1,
						STATE_VERSION, NULL, true, &err);
	if (hdr < 0)
		state_corrupted(psprintf("file \"%s\"", path), &err);
	format_version = (int) se_read_u32((const uint8 *) data + 5 + strlen(STATE_FORMAT));
	st = manifest_from_json(data + hdr, len - hdr - SE_FILE_FOOTER_LEN, format_version, &err);
	if (st == NULL)
		state_corrupted(psprintf("file \"%s\"", path), &err);
	pfree(data);
	return st;
}

/* Parse index i of a manifest if it is still a stub; returns it. */
SeIndexMeta *
se_state_index_load(SeClusterState *st, int i)
{
	SeIndexMeta *im = st->indices[i];
	SeError		err;

	if (!im->state_stub)
		return im;
	se_error_init(&err);
	st->indices[i] = index_file_load(im->uuid, im->state_gen, &err);
	if (st->indices[i] == NULL)
		state_corrupted(psprintf("of index [%s]", im->name), &err);
	return st->indices[i];
}

/* Read the whole state (or an empty one); caller holds state_lock. */
SeClusterState *
se_state_load_file(void)
{
	SeClusterState *st = se_state_load_manifest();
	int			i;

	for (i = 0; i < st->nindices; i++)
		(void) se_state_index_load(st, i);
	return st;
}

static int
cmp_cstring_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Remove the index files the manifest no longer names. */
static void
remove_stale_index_files(const SeClusterState *st, const char *dir)
{
	DIR		   *d;
	struct dirent *de;
	char	  **names = palloc(sizeof(char *) * Max(1, st->nindices));
	int			i;

	/* the file names the manifest keeps, sorted for bsearch */
	for (i = 0; i < st->nindices; i++)
		names[i] = psprintf("%s-" UINT64_FORMAT, st->indices[i]->uuid, st->indices[i]->state_gen);
	qsort(names, st->nindices, sizeof(char *), cmp_cstring_ptr);
	d = AllocateDir(dir);
	while ((de = ReadDir(d, dir)) != NULL)
	{
		const char *name = de->d_name;

		if (name[0] == '.' ||
			bsearch(&name, names, st->nindices, sizeof(char *), cmp_cstring_ptr))
			continue;
		{
			char	   *path = psprintf("%s/%s", dir, name);

			if (unlink(path) != 0 && errno != ENOENT)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			pfree(path);
		}
	}
	FreeDir(d);
}

/*
 * Write the state: a new file for each index whose JSON changed (its name
 * carries a new generation), then the manifest naming them (atomically:
 * temp, fsync, rename, fsync dir), then remove the files nothing names.  A
 * crash leaves either manifest with every file it names.  Stubs keep
 * their files.  The caller holds state_lock exclusively, so no reader
 * meets a file gone between the manifest and its read.
 */
void
se_state_save_file(SeClusterState *st)
{
	StringInfoData buf;
	uint8		zero_id[SE_SEGMENT_ID_LEN] = {0};
	char	   *dir = psprintf("%s/_state/indices", se_data_directory());
	int			i;

	se_mkdir_p(dir);
	initStringInfo(&buf);
	if (st->next_state_gen == 0)
		st->next_state_gen = 1;
	for (i = 0; i < st->nindices; i++)
	{
		SeIndexMeta *im = st->indices[i];
		int			body;

		if (im->state_stub)
			continue;
		resetStringInfo(&buf);
		se_file_write_header(&buf, INDEX_STATE_FORMAT, INDEX_STATE_VERSION, zero_id);
		body = buf.len;
		se_state_index_to_json(im, true, &buf);
		if (im->state_gen != 0 && im->state_json &&
			strcmp(im->state_json, buf.data + body) == 0)
			continue;
		im->state_json = pnstrdup(buf.data + body, buf.len - body);
		im->state_gen = st->next_state_gen++;
		se_file_write_footer(&buf);
		se_file_write_durable(index_file_path(im->uuid, im->state_gen), buf.data, buf.len);
	}
	resetStringInfo(&buf);
	se_file_write_header(&buf, STATE_FORMAT, STATE_VERSION, zero_id);
	manifest_to_json(st, &buf);
	se_file_write_footer(&buf);
	se_file_write_durable(state_path(), buf.data, buf.len);
	pfree(buf.data);
	remove_stale_index_files(st, dir);
}

/*
 * This process's parsed indices, kept across reloads: a reload re-reads
 * the manifest and parses only the index files whose generation it has
 * not parsed yet, so a change to one index costs every process one
 * index's parse, not the whole state's (10,000 shard copies: ~170 ms).
 */
typedef struct CachedIndex
{
	SeIndexMeta *im;
	MemoryContext cxt;			/* NULL: part of the manifest's context (a
								 * state of the first format) */
} CachedIndex;

static CachedIndex *cache_ix = NULL;
static int	ncache_ix = 0;

static SeClusterState *
load_cached(void)
{
	MemoryContext newcxt = AllocSetContextCreate(TopMemoryContext,
												 "search_engine cluster state",
												 ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(newcxt);
	CachedIndex *fresh;
	SeClusterState *st;
	int			i,
				k,
				next = 0;

	PG_TRY();
	{
		st = se_state_load_manifest();
		fresh = MemoryContextAllocZero(TopMemoryContext, sizeof(CachedIndex) * Max(1, st->nindices));
		for (i = 0; i < st->nindices; i++)
		{
			SeIndexMeta *im = st->indices[i];

			if (!im->state_stub)
				continue;		/* first format: parsed with the manifest */
			/* both are sorted by name: walk the cache alongside */
			while (next < ncache_ix && (cache_ix[next].im == NULL ||
										strcmp(cache_ix[next].im->name, im->name) < 0))
				next++;
			k = next;
			if (k < ncache_ix && cache_ix[k].cxt &&
				strcmp(cache_ix[k].im->name, im->name) == 0 &&
				cache_ix[k].im->state_gen == im->state_gen &&
				strcmp(cache_ix[k].im->uuid, im->uuid) == 0)
			{
				fresh[i] = cache_ix[k];
				cache_ix[k].cxt = NULL; /* moved */
			}
			else
			{
				fresh[i].cxt = AllocSetContextCreate(TopMemoryContext,
													 "search_engine index state",
													 ALLOCSET_SMALL_SIZES);
				MemoryContextSwitchTo(fresh[i].cxt);
				fresh[i].im = se_state_index_load(st, i);
				MemoryContextSwitchTo(newcxt);
			}
			st->indices[i] = fresh[i].im;
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(newcxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	/* what the new state does not use any more */
	for (k = 0; k < ncache_ix; k++)
		if (cache_ix[k].cxt)
			MemoryContextDelete(cache_ix[k].cxt);
	if (cache_ix)
		pfree(cache_ix);
	cache_ix = fresh;
	ncache_ix = st->nindices;
	if (state_cxt)
		MemoryContextDelete(state_cxt);
	state_cxt = newcxt;
	return st;
}

/*
 * A copy of one index that a mutation may change, without parsing: the
 * strings and arrays are copied, the parsed mapping is shared (the one
 * mutation that changes a mapping, mutate_mapping, copies it first).
 */
static SeIndexMeta *
index_copy(const SeIndexMeta *src)
{
	SeIndexMeta *im = palloc(sizeof(SeIndexMeta));
	int			n = src->settings.number_of_shards;
	int			s;

	memcpy(im, src, sizeof(SeIndexMeta));
	im->name = pstrdup(src->name);
	im->mappings_json = pstrdup(src->mappings_json);
	im->settings.allocation_filters = se_csettings_layer_copy(&src->settings.allocation_filters);
	im->shard_nodes = NULL;
	if (src->routing)
	{
		im->routing = palloc(sizeof(SeShardRouting) * n);
		for (s = 0; s < n; s++)
		{
			const SeShardRouting *ra = &src->routing[s];
			SeShardRouting *r = &im->routing[s];
			int			k;

			*r = *ra;
			r->copies = palloc(sizeof(SeShardCopy) * Max(1, ra->ncopies));
			for (k = 0; k < ra->ncopies; k++)
			{
				const SeShardCopy *a = &ra->copies[k];
				SeShardCopy *c = &r->copies[k];

				*c = *a;
				c->node = pstrdup(a->node ? a->node : "");
				c->unassigned_reason = a->unassigned_reason ? pstrdup(a->unassigned_reason) : NULL;
				c->unassigned_details = a->unassigned_details ? pstrdup(a->unassigned_details) : NULL;
				c->data_node = a->data_node ? pstrdup(a->data_node) : NULL;
				c->relocating_node = a->relocating_node ? pstrdup(a->relocating_node) : NULL;
			}
			r->in_sync = palloc(sizeof(char *) * Max(1, ra->nin_sync));
			for (k = 0; k < ra->nin_sync; k++)
				r->in_sync[k] = pstrdup(ra->in_sync[k]);
		}
		se_state_routing_derive(im);
	}
	return im;
}

/*
 * A copy of this process's current state for a mutation to change: what
 * the master commits from (parsing every index's file instead costs
 * ~170 ms at 10,000 shard copies; copying them, a few).
 */
SeClusterState *
se_state_copy_current(void)
{
	const SeClusterState *cur = se_state_current();
	SeClusterState *st = palloc0(sizeof(SeClusterState));
	int			i;

	st->version = cur->version;
	st->cluster_uuid = pstrdup(cur->cluster_uuid);
	st->nindices = cur->nindices;
	st->indices = palloc0(sizeof(SeIndexMeta *) * Max(1, cur->nindices));
	for (i = 0; i < cur->nindices; i++)
		st->indices[i] = index_copy(cur->indices[i]);
	st->persistent = se_csettings_layer_copy(&cur->persistent);
	st->transient = se_csettings_layer_copy(&cur->transient);
	st->settings_mod_revision = cur->settings_mod_revision;
	st->next_state_gen = cur->next_state_gen;
	st->templates_json = cur->templates_json ? pstrdup(cur->templates_json) : NULL;
	st->templates_mod_revision = cur->templates_mod_revision;
	st->scripts_json = cur->scripts_json ? pstrdup(cur->scripts_json) : NULL;
	st->scripts_mod_revision = cur->scripts_mod_revision;
	return st;
}

/* This process's current copy, reloaded when the shared version moved. */
const SeClusterState *
se_state_current(void)
{
	uint64		v = pg_atomic_read_u64(&SeShmem->state_version);

	if (cached != NULL && cached->version == v && v != 0)
		return cached;

	LWLockAcquire(&SeShmem->state_lock, LW_SHARED);
	PG_TRY();
	{
		cached = load_cached();
	}
	PG_CATCH();
	{
		LWLockRelease(&SeShmem->state_lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* a never-written state has version 0: publish 1 so caching works */
	if (v == 0)
	{
		LWLockRelease(&SeShmem->state_lock);
		LWLockAcquire(&SeShmem->state_lock, LW_EXCLUSIVE);
		if (pg_atomic_read_u64(&SeShmem->state_version) == 0)
			pg_atomic_write_u64(&SeShmem->state_version, Max(cached->version, 1));
	}
	cached->version = pg_atomic_read_u64(&SeShmem->state_version);
	LWLockRelease(&SeShmem->state_lock);
	return cached;
}

SeIndexMeta *
se_state_find(const SeClusterState *st, const char *name)
{
	int			lo = 0,
				hi = st->nindices - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			c = strcmp(st->indices[mid]->name, name);

		if (c == 0)
			return st->indices[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

SeIndexMeta *
se_state_find_uuid(const SeClusterState *st, const char *uuid)
{
	int			i;

	for (i = 0; i < st->nindices; i++)
		if (strcmp(st->indices[i]->uuid, uuid) == 0)
			return st->indices[i];
	return NULL;
}

/*
 * Mutation frame: take the lock, load the latest file into a scratch
 * context, let the caller change it, save with version+1 and publish.
 * With write false, the caller only reads the latest file (shared lock).
 */

static bool
state_with_file(StateMutator fn, void *arg, SeError *err, bool write)
{
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext,
												  "search_engine state update",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	bool		ok;

	LWLockAcquire(&SeShmem->state_lock, write ? LW_EXCLUSIVE : LW_SHARED);
	PG_TRY();
	{
		SeClusterState *st = se_state_load_file();

		ok = fn(st, arg, err);
		if (ok && write)
		{
			st->version = Max(st->version, pg_atomic_read_u64(&SeShmem->state_version)) + 1;
			qsort(st->indices, st->nindices, sizeof(SeIndexMeta *), cmp_index_name);
			se_state_save_file(st);
			pg_atomic_write_u64(&SeShmem->state_version, st->version);
		}
	}
	PG_CATCH();
	{
		LWLockRelease(&SeShmem->state_lock);
		MemoryContextSwitchTo(old);
		PG_RE_THROW();
	}
	PG_END_TRY();
	LWLockRelease(&SeShmem->state_lock);
	MemoryContextSwitchTo(old);
	/* errors carry palloc'd reasons: copy them out before dropping scratch */
	if (!ok && err->reason)
		err->reason = pstrdup(err->reason);
	if (!ok && err->type)
		err->type = pstrdup(err->type);
	MemoryContextDelete(scratch);
	return ok;
}

/* Change the state: the file on a single node, etcd through the master. */
static bool
state_mutate(StateMutator fn, void *arg, SeError *err)
{
	if (!se_cluster_single_node())
		return se_state_commit(fn, arg, err);
	return state_with_file(fn, arg, err, true);
}

/* state_mutate for the state's other modules (templates.c, scripts.c) */
bool
se_state_mutate(StateMutator fn, void *arg, SeError *err)
{
	return state_mutate(fn, arg, err);
}

static SeIndexStatus
index_status(const SeIndexMeta *im)
{
	return im == NULL ? SE_INDEX_MISSING : (im->closed ? SE_INDEX_CLOSED : SE_INDEX_OPEN);
}

typedef struct StatusArgs
{
	const char *uuid;
	SeIndexStatus status;
} StatusArgs;

static bool
read_status(SeClusterState *st, void *arg, SeError *err)
{
	StatusArgs *a = arg;

	a->status = index_status(se_state_find_uuid(st, a->uuid));
	return true;
}

/*
 * Whether index uuid exists and is open in the latest state, without
 * replacing this process's copy (callers may hold pointers into it).  When
 * the copy is current it answers; else the file is read into a scratch
 * context.
 */
SeIndexStatus
se_state_index_status(const char *uuid)
{
	StatusArgs	a;
	SeError		err;

	if (cached != NULL && cached->version == pg_atomic_read_u64(&SeShmem->state_version))
		return index_status(se_state_find_uuid(cached, uuid));
	se_error_init(&err);
	a.uuid = uuid;
	(void) state_with_file(read_status, &a, &err, false);
	return a.status;
}

/* ES's answer for index name that is missing (404) or closed (400). */
void
se_index_status_error(SeIndexStatus status, const char *name, SeError *err)
{
	if (status == SE_INDEX_CLOSED)
		se_error_set(err, 400, "index_closed_exception", "closed");
	else
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", name);
}

/*
 * A shard of index (uuid, name) is not open on this node: the 404 or 400
 * above if the latest state says the index is gone or closed, else 503
 * no_shard_available_action_exception saying why.
 */
void
se_state_shard_unavailable(const char *uuid, const char *name, int shard,
						   const char *why, SeError *err)
{
	SeIndexStatus status = se_state_index_status(uuid);

	if (status != SE_INDEX_OPEN)
		se_index_status_error(status, name, err);
	else
		se_error_set(err, 503, "no_shard_available_action_exception",
					 "[%s][%d] %s", name, shard, why);
}

/* Now, in ms since the Unix epoch (creation dates, unassigned_info.at). */
int64
se_state_now_millis(void)
{
	return (int64) (GetCurrentTimestamp() / 1000) +
		((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400 * 1000);
}

typedef struct CreateArgs
{
	const char *name;
	const SeJson *body;
	char		uuid[SE_UUID_LEN + 1];
} CreateArgs;

static bool
mutate_create(SeClusterState *st, void *arg, SeError *err)
{
	CreateArgs *a = arg;
	SeIndexMeta *im;
	const SeJson *settings = NULL;
	const SeJson *mappings = NULL;
	const SeJson *aliases = NULL;
	StringInfoData buf;
	int			i;

	if (!se_alias_index_name_free(st, a->name, err))
		return false;
	if (se_state_find(st, a->name) != NULL)
	{
		SeIndexMeta *ex = se_state_find(st, a->name);

		se_error_set(err, 400, "resource_already_exists_exception",
					 "index [%s/%s] already exists", a->name, ex->uuid);
		return false;
	}
	if (a->body && a->body->type == SE_JSON_OBJECT)
	{
		for (i = 0; i < a->body->u.o.count; i++)
		{
			const char *k = a->body->u.o.members[i].key;

			if (strcmp(k, "settings") == 0)
				settings = a->body->u.o.members[i].value;
			else if (strcmp(k, "mappings") == 0)
				mappings = a->body->u.o.members[i].value;
			else if (strcmp(k, "aliases") == 0)
				aliases = a->body->u.o.members[i].value;
			else
			{
				se_error_set(err, 400, "parse_exception",
							 "unknown key [%s] for create index", k);
				return false;
			}
		}
	}
	else if (a->body && a->body->type != SE_JSON_NULL)
	{
		se_error_set(err, 400, "parse_exception", "request body must be an object");
		return false;
	}
	im = palloc0(sizeof(SeIndexMeta));
	im->name = pstrdup(a->name);
	se_make_uuid(im->uuid);
	im->closed = false;
	im->creation_date = se_state_now_millis();
	im->primary_term = 1;
	im->mapping_version = 1;
	if (!se_settings_parse(settings, &im->settings, false, err))
		return false;
	if (mappings && mappings->type != SE_JSON_NULL)
	{
		SeMappingLimits limits;

		if (mappings->type != SE_JSON_OBJECT)
		{
			se_error_set(err, 400, "mapper_parsing_exception",
						 "Failed to parse mapping: mappings must be an object");
			return false;
		}
		memset(&limits, 0, sizeof(limits));
		limits.total_fields_limit = im->settings.total_fields_limit;
		limits.depth_limit = im->settings.depth_limit;
		limits.nested_fields_limit = im->settings.nested_fields_limit;
		im->mapping = se_mapping_from_json(mappings, &limits, err);
		if (im->mapping == NULL)
			return false;
	}
	else
		im->mapping = se_mapping_create();
	initStringInfo(&buf);
	se_mapping_to_json(im->mapping, &buf);
	im->mappings_json = buf.data;

	if (!se_cluster_single_node())
		se_state_allocate_shards(st, im);
	st->indices = repalloc(st->indices, sizeof(SeIndexMeta *) * (st->nindices + 1));
	st->indices[st->nindices++] = im;
	/* after it joined st: the aliases' rules look at every index */
	if (!se_alias_add_from_body(st, im, aliases, err))
		return false;
	strlcpy(a->uuid, im->uuid, sizeof(a->uuid));
	return true;
}

/*
 * Create an index in the state; returns this process's copy of it.  The
 * copy is looked up again after the write: if the index is gone already
 * (deleted by a caller that does not hold the index's lifecycle lock),
 * that is a 404, never a NULL without an error.
 */
SeIndexMeta *
se_state_create_index(const char *name, const SeJson *body, SeError *err)
{
	CreateArgs	a;
	SeIndexMeta *im;
	bool		ok;

	if (!se_index_name_valid(name, err))
		return NULL;
	a.name = name;
	a.body = body;
	if (se_state_forwarded(&(StateOp) {"create", name, NULL, false, body}, &ok, err))
	{
		if (!ok)
			return NULL;
		strlcpy(a.uuid, se_state_forwarded_uuid, sizeof(a.uuid));
	}
	else if (!state_mutate(mutate_create, &a, err))
		return NULL;
	se_debug_waitpoint("se:create_index:after_state");
	im = se_state_find(se_state_current(), name);
	if (im == NULL || strcmp(im->uuid, a.uuid) != 0)
	{
		se_index_status_error(SE_INDEX_MISSING, name, err);
		return NULL;
	}
	return im;
}

static bool
mutate_delete(SeClusterState *st, void *arg, SeError *err)
{
	const char *name = arg;
	int			i;

	for (i = 0; i < st->nindices; i++)
	{
		if (strcmp(st->indices[i]->name, name) == 0)
		{
			st->indices[i] = st->indices[--st->nindices];
			return true;
		}
	}
	se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", name);
	return false;
}

bool
se_state_delete_index(const char *name, SeError *err)
{
	bool		ok;

	if (se_state_forwarded(&(StateOp) {"delete", name, NULL, false, NULL}, &ok, err))
		return ok;
	return state_mutate(mutate_delete, (void *) name, err);
}

typedef struct CloseArgs
{
	const char *name;
	bool		closed;
} CloseArgs;

static bool
mutate_close(SeClusterState *st, void *arg, SeError *err)
{
	CloseArgs  *a = arg;
	SeIndexMeta *im = se_state_find(st, a->name);

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", a->name);
		return false;
	}
	/*
	 * Reopened in a cluster: its shards recover again, each copy
	 * INITIALIZING under a new allocation id on its node (ES's
	 * INDEX_REOPENED), an unassigned one placed anew.
	 */
	if (im->closed && !a->closed && im->routing)
	{
		int			s,
					k;

		for (s = 0; s < im->settings.number_of_shards; s++)
		{
			SeShardRouting *r = &im->routing[s];
			SeShardCopy *c = &r->copies[0];

			/* the primary's new id joins in_sync when it started again */
			r->nin_sync = 0;
			/* a closed copy's move in flight ends: the copy opens where it is */
			se_routing_relocation_cancel(r, 0);
			/* replicas recover from the reopened primary (peer recovery) */
			for (k = 1; k < r->ncopies; k++)
				se_state_unassign_copy(im, s, k, "INDEX_REOPENED", NULL);
			if (c->node[0] == '\0')
			{
				se_state_place_shard(st, im, s, "INDEX_REOPENED");
				continue;
			}
			c->state = SE_SHARD_INITIALIZING;
			se_make_uuid(c->allocation_id);
			c->unassigned_reason = "INDEX_REOPENED";
			c->unassigned_at = se_state_now_millis();
			c->unassigned_details = NULL;
			c->failed_attempts = 0;
		}
		se_state_routing_derive(im);
	}
	im->closed = a->closed;
	return true;
}

bool
se_state_set_closed(const char *name, bool closed, SeError *err)
{
	bool		ok;
	CloseArgs	a;

	if (se_state_forwarded(&(StateOp) {"close", name, NULL, closed, NULL}, &ok, err))
		return ok;
	a.name = name;
	a.closed = closed;
	return state_mutate(mutate_close, &a, err);
}

typedef struct SettingsArgs
{
	const char *name;
	const SeJson *settings;
} SettingsArgs;

static bool
mutate_settings(SeClusterState *st, void *arg, SeError *err)
{
	SettingsArgs *a = arg;
	SeIndexMeta *im = se_state_find(st, a->name);
	SeIndexSettings s;

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]", a->name);
		return false;
	}
	s = im->settings;
	if (!se_settings_parse(a->settings, &s, true, err))
		return false;
	im->settings = s;
	return true;
}

/* PUT /{index}/_settings: change dynamic settings of one index. */
bool
se_index_write_blocked(const SeIndexMeta *im, bool metadata, SeError *err)
{
	const SeIndexSettings *s = &im->settings;

	se_error_init(err);
	/* ES's NO_MASTER_BLOCK_WRITES, for a node not yet back in the cluster */
	if (!metadata && !se_cluster_joined_once())
		se_error_set(err, 503, "cluster_block_exception",
					 "blocked by: [SERVICE_UNAVAILABLE/2/no master];");
	else if (s->blocks_read_only_allow_delete)
		se_error_set(err, 429, "cluster_block_exception",
					 "index [%s] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];",
					 im->name);
	else if (s->blocks_read_only)
		se_error_set(err, 403, "cluster_block_exception",
					 "index [%s] blocked by: [FORBIDDEN/5/index read-only (api)];", im->name);
	else if (s->blocks_write && !metadata)
		se_error_set(err, 403, "cluster_block_exception",
					 "index [%s] blocked by: [FORBIDDEN/8/index write (api)];", im->name);
	return se_error_is_set(err);
}

static bool
mutate_cluster_settings(SeClusterState *st, void *arg, SeError *err)
{
	return se_csettings_update((const SeJson *) arg, &st->persistent, &st->transient, NULL, err);
}

bool
se_state_put_cluster_settings(const SeJson *body, StringInfo answer, SeError *err)
{
	const SeClusterState *cur = se_state_current();
	SeSettingsLayer p = cur->persistent;
	SeSettingsLayer t = cur->transient;
	bool		ok;

	/* refuse bad input here, and answer with what this request sets */
	if (!se_csettings_update(body, &p, &t, answer, err))
		return false;
	if (se_state_forwarded(&(StateOp) {"cluster_settings", NULL, NULL, false, body}, &ok, err))
		return ok;
	return state_mutate(mutate_cluster_settings, (void *) body, err);
}

static bool
mutate_clear_transient(SeClusterState *st, void *arg, SeError *err)
{
	bool	   *changed = arg;

	*changed = st->transient.n > 0;
	memset(&st->transient, 0, sizeof(st->transient));
	return true;
}

/* At a single node's start (cluster mode: the cluster's settings stay). */
void
se_state_clear_transient_settings(void)
{
	SeError		err;
	bool		changed = false;

	if (!se_cluster_single_node())
		return;
	se_error_init(&err);
	if (se_state_current()->transient.n > 0 &&
		!state_mutate(mutate_clear_transient, &changed, &err))
		elog(WARNING, "search_engine: could not clear transient cluster settings: %s",
			 err.reason ? err.reason : "?");
}

bool
se_state_update_settings(const char *name, const SeJson *settings, SeError *err)
{
	bool		ok;
	SettingsArgs a;

	if (se_state_forwarded(&(StateOp) {"settings", name, NULL, false, settings}, &ok, err))
		return ok;
	a.name = name;
	a.settings = settings;
	return state_mutate(mutate_settings, &a, err);
}

typedef struct MappingArgs
{
	const char *name;
	const char *uuid;
	const SeJson *mappings;
} MappingArgs;

static bool
mutate_mapping(SeClusterState *st, void *arg, SeError *err)
{
	MappingArgs *a = arg;
	SeIndexMeta *im = a->name ? se_state_find(st, a->name) : se_state_find_uuid(st, a->uuid);
	SeMappingLimits limits;
	StringInfoData buf;

	if (im == NULL)
	{
		se_error_set(err, 404, "index_not_found_exception", "no such index [%s]",
					 a->name ? a->name : a->uuid);
		return false;
	}
	/* an explicit mapping change obeys the read-only blocks */
	if (a->name && se_index_write_blocked(im, true, err))
		return false;
	memset(&limits, 0, sizeof(limits));
	limits.total_fields_limit = im->settings.total_fields_limit;
	limits.depth_limit = im->settings.depth_limit;
	limits.nested_fields_limit = im->settings.nested_fields_limit;
	/* the state may share its parsed mappings with this process's copy */
	im->mapping = se_mapping_copy(im->mapping);
	if (!se_mapping_merge(im->mapping, a->mappings, &limits, err))
		return false;
	initStringInfo(&buf);
	se_mapping_to_json(im->mapping, &buf);
	if (strcmp(buf.data, im->mappings_json) == 0)
		return true;
	im->mappings_json = buf.data;
	im->mapping_version++;
	return true;
}

bool
se_state_put_mapping(const char *name, const SeJson *mappings, SeError *err)
{
	bool		ok;
	MappingArgs a;

	if (se_state_forwarded(&(StateOp) {"mapping", name, NULL, false, mappings}, &ok, err))
		return ok;
	a.name = name;
	a.uuid = NULL;
	a.mappings = mappings;
	return state_mutate(mutate_mapping, &a, err);
}

bool
se_state_merge_dynamic_mapping(const char *uuid, const SeMapping *m, SeError *err)
{
	bool		ok;
	MappingArgs a;
	StringInfoData buf;
	SeJsonParseOptions opts = {SE_JSON_STATE_MAX_DEPTH, false};

	initStringInfo(&buf);
	se_mapping_to_json(m, &buf);
	a.name = NULL;
	a.uuid = uuid;
	a.mappings = se_json_parse(buf.data, buf.len, &opts, err);
	if (a.mappings == NULL)
		return false;
	if (se_state_forwarded(&(StateOp) {"dynamic_mapping", NULL, uuid, false, a.mappings},
						&ok, err))
		return ok;
	return state_mutate(mutate_mapping, &a, err);
}

/*
 * Run a mutation a peer forwarded to this node, the master (the peer made
 * the privilege checks); uuid_out gets a created index's uuid.
 */
bool
se_state_run_op(const StateOp *op, char *uuid_out, SeError *err)
{
	if (strcmp(op->op, "create") == 0)
	{
		SeIndexMeta *im = se_state_create_index(op->name, op->body, err);

		if (im != NULL)
			strlcpy(uuid_out, im->uuid, SE_UUID_LEN + 1);
		return im != NULL;
	}
	if (strcmp(op->op, "delete") == 0)
		return se_state_delete_index(op->name, err);
	if (strcmp(op->op, "close") == 0)
		return se_state_set_closed(op->name, op->flag, err);
	if (strcmp(op->op, "settings") == 0)
		return se_state_update_settings(op->name, op->body, err);
	if (strcmp(op->op, "mapping") == 0)
		return se_state_put_mapping(op->name, op->body, err);
	if (strcmp(op->op, "cluster_settings") == 0)
		return se_state_put_cluster_settings(op->body, NULL, err);
	if (strcmp(op->op, "aliases") == 0)
		return se_state_update_aliases(op->body, err);
	if (strcmp(op->op, "reroute") == 0)
		return se_state_run_reroute(op->body, op->flag, err);
	if (strstr(op->op, "_template") != NULL)
		return se_state_template_op(op->op, op->name, op->body, op->flag, err);
	if (strcmp(op->op, "script") == 0 || strcmp(op->op, "script_delete") == 0)
		return se_state_script_op(op->op, op->name, op->body, err);
	if (strcmp(op->op, "dynamic_mapping") == 0 && op->uuid)
	{
		MappingArgs a;

		a.name = NULL;
		a.uuid = op->uuid;
		a.mappings = op->body;
		return state_mutate(mutate_mapping, &a, err);
	}
	se_error_set(err, 400, "illegal_argument_exception", "unknown cluster state operation [%s]",
				 op->op);
	return false;
}
