/*-------------------------------------------------------------------------
 *
 * cluster_settings.h
 *	  Dynamic cluster settings (PUT/GET /_cluster/settings): the settings
 *	  the product knows, their validation, persistent and transient layers,
 *	  and what the allocator reads from them (pure: no I/O).
 *
 * A layer is a flat map of "dotted.key" -> value text, as Elasticsearch
 * stores settings (every value a string; a list setting as a
 * comma-separated string).  The effective value of a key is the transient
 * one, else the persistent one, else its default.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_SETTINGS_H
#define SE_CLUSTER_SETTINGS_H

#include "util/se_common.h"
#include "util/json.h"
#include "cluster/allocator.h"

typedef struct SeSettingsLayer
{
	int			n;
	char	  **keys;			/* sorted */
	char	  **values;
} SeSettingsLayer;

/*
 * Apply a PUT /_cluster/settings body to the two layers: leaves (nested or
 * dotted keys) set a value, null resets it (a key with '*' resets every
 * key it matches).  Every value is validated, and the result as a whole
 * (e.g. low <= high <= flood stage watermarks); errors as ES's: 400
 * illegal_argument_exception "persistent setting [x], not recognized",
 * "illegal value can't update [k] from [a] to [b]: why",
 * action_request_validation_exception "no settings to update",
 * x_content_parse_exception for an unknown top-level field.  On success
 * *persistent and *transient hold the new layers and *acknowledged_out
 * (when not NULL) the body of ES's answer.
 */
extern bool se_csettings_update(const SeJson *body, SeSettingsLayer *persistent,
								SeSettingsLayer *transient, StringInfo answer,
								SeError *err);

/* {"persistent":{..},"transient":{..}[,"defaults":{..}]}, nested or flat */
extern void se_csettings_to_json(const SeSettingsLayer *persistent,
								 const SeSettingsLayer *transient,
								 bool flat, bool include_defaults, StringInfo out);

/* A layer as a flat JSON object (the stored form), nested, and back. */
extern void se_csettings_layer_to_json(const SeSettingsLayer *l, StringInfo out);
extern void se_csettings_layer_nested(const SeSettingsLayer *l, StringInfo out);
extern bool se_csettings_layer_from_json(const SeJson *obj, SeSettingsLayer *l,
										 SeError *err);

/* Set (value NULL: remove) a key of a layer; copy: a layer of its own. */
extern void se_csettings_layer_put(SeSettingsLayer *l, const char *key, const char *value);
extern SeSettingsLayer se_csettings_layer_copy(const SeSettingsLayer *l);

/* The effective value of key (transient, persistent, default; NULL if none). */
extern const char *se_csettings_get(const SeSettingsLayer *persistent,
									const SeSettingsLayer *transient,
									const char *key);

/* A time setting in ms / an integer setting (defaults for what is unset). */
extern int64 se_csettings_time_ms(const SeSettingsLayer *persistent,
								  const SeSettingsLayer *transient, const char *key);
extern int	se_csettings_int(const SeSettingsLayer *persistent,
							 const SeSettingsLayer *transient, const char *key);

/*
 * Allocation filters from a layer's keys "<prefix>{include,exclude,
 * require}.<attr>" = "v1, v2*" (cluster: "cluster.routing.allocation.",
 * an index's allocation_filters: "").
 */
extern void se_csettings_filters(const SeSettingsLayer *l, const char *prefix,
								 SeAllocFilters *f);

/*
 * The allocator's settings from the layers (defaults for what is unset).
 * Strings point into the layers.
 */
extern void se_csettings_alloc(const SeSettingsLayer *persistent,
							   const SeSettingsLayer *transient,
							   SeAllocSettings *out);

#endif							/* SE_CLUSTER_SETTINGS_H */
