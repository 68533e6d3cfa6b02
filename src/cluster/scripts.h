/*-------------------------------------------------------------------------
 *
 * scripts.h
 *	  Stored scripts in the cluster state (PUT/GET/DELETE /_scripts/{id}),
 *	  as Elasticsearch keeps them.
 *
 * One JSON object of the state (SeClusterState.scripts_json, etcd key
 * state/scripts in a cluster): {id: {"lang": "painless" or "mustache",
 * "source": .., "options": ..}},
 * changed through the master like index templates, so every node reads
 * the same scripts.  Requests name one with {"script": {"id": .., "params":
 * ..}} wherever a script is accepted.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_SCRIPTS_H
#define SE_CLUSTER_SCRIPTS_H

#include "util/se_common.h"

#include "cluster/state.h"
#include "util/json.h"

/*
 * Put stored script id: body is ES's {"script": {"lang", "source",
 * "options"}}; validated (lang painless or mustache) here.
 */
extern bool se_state_put_script(const char *id, const SeJson *body, SeError *err);
/* Delete stored script id: ES's 404 when there is none. */
extern bool se_state_delete_script(const char *id, SeError *err);

/* The master's side of a forwarded put/delete (state.c's se_state_run_op). */
extern bool se_state_script_op(const char *op, const char *id, const SeJson *script,
							   SeError *err);

/* Stored script id of st ({"lang", "source"}), or NULL. */
extern const SeJson *se_stored_script(const SeClusterState *st, const char *id);

/*
 * The source of stored script id in the current state, as a request's
 * {"script": {"id": ..}} runs it; NULL with ES's 404 when there is none.
 */
extern const char *se_stored_script_source(const char *id, SeError *err);
/* The same for a stored search template (lang mustache). */
extern const char *se_stored_template_source(const char *id, SeError *err);

#endif							/* SE_CLUSTER_SCRIPTS_H */
