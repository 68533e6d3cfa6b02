/*-------------------------------------------------------------------------
 *
 * state_int.h
 *	  What state.c (the state, its file) and state_sync.c (the state in
 *	  etcd, through the master) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_STATE_INT_H
#define SE_CLUSTER_STATE_INT_H

#include "cluster/state.h"

/* A change to a loaded state; false (err set) leaves it unwritten. */
typedef bool (*StateMutator) (SeClusterState *st, void *arg, SeError *err);

/* A mutation as sent to the master (the public function's arguments). */
typedef struct StateOp
{
	const char *op;				/* create, delete, close, settings, mapping,
								 * dynamic_mapping */
	const char *name;
	const char *uuid;
	bool		flag;			/* close: closed */
	const SeJson *body;
} StateOp;

/* in state.c; the caller holds state_lock */
extern SeClusterState *se_state_load_file(void);
/* the manifest only: indices as stubs, parsed one by one by index_load */
extern SeClusterState *se_state_load_manifest(void);
extern SeIndexMeta *se_state_index_load(SeClusterState *st, int i);
/* a copy of this process's current state that a mutation may change */
extern SeClusterState *se_state_copy_current(void);
extern void se_state_save_file(SeClusterState *st);
extern void se_state_sort(SeClusterState *st);
extern void se_state_index_to_json(const SeIndexMeta *im, bool with_revision, StringInfo out);
extern SeIndexMeta *se_state_index_from_json(const SeJson *j, SeError *err);
extern bool se_state_run_op(const StateOp *op, char *uuid_out, SeError *err);
extern int64 se_state_now_millis(void);
extern void se_state_settings_to_json(const SeClusterState *st, bool with_revision,
									  StringInfo out);
extern bool se_state_settings_from_json(const SeJson *j, SeClusterState *st, SeError *err);

/* state.c's mutation (file or, in a cluster, a commit through etcd) */
extern bool se_state_mutate(StateMutator fn, void *arg, SeError *err);

/* in templates.c: a copy of object o with key set to v (NULL: removed) */
extern SeJson *se_state_json_with(const SeJson *o, const char *key, SeJson *v);

/* in reroute.c: the master's side of a forwarded POST /_cluster/reroute */
extern bool se_state_run_reroute(const SeJson *body, bool retry_failed, SeError *err);

/* in state_sync.c */
extern bool se_state_forwarded(const StateOp *op, bool *ok, SeError *err);
extern char se_state_forwarded_uuid[SE_UUID_LEN + 1];
extern bool se_state_commit(StateMutator fn, void *arg, SeError *err);
extern bool se_state_commit_node_removal(const char *node, SeError *err);
extern void se_state_allocate_shards(const SeClusterState *st, SeIndexMeta *im);
extern void se_state_place_shard(const SeClusterState *st, SeIndexMeta *im, int s,
								 const char *reason);
extern void se_state_unassign_copy(SeIndexMeta *im, int s, int k, const char *reason,
								   const char *details);
extern bool se_state_routing_resize(SeIndexMeta *im);
extern bool se_state_promote(SeIndexMeta *im, int s);

#endif							/* SE_CLUSTER_STATE_INT_H */
