/*-------------------------------------------------------------------------
 *
 * coordinator.h
 *	  The cluster's coordination layer: node settings, membership, master
 *	  election with fencing, and the applied view of etcd every process reads.
 *
 * With search_engine.etcd_endpoints empty the node is a one-node cluster:
 * it is its own master (term 1) and only member, and nothing here talks to
 * etcd.  Otherwise the coordinator worker (coordinator.c) keeps this node's
 * leased key under /search_engine/<cluster>/nodes/, campaigns for the
 * leased leader key when the node is master-eligible, watches the cluster's
 * prefix and publishes what it applied in shared memory (SeClusterShared).
 * Backends read that view (se_cluster_view) and hand the master's writes to
 * the worker (se_cluster_commit); they never call etcd themselves.
 *
 * Keys, under /search_engine/<cluster_name>/:
 *   nodes/<node_name>   leased; JSON {name, ephemeral_id, roles, attributes,
 *                       conninfo, disk {total_bytes, free_bytes}, started_at}
 *   leader              leased; JSON {node, ephemeral_id}; the master's term
 *                       is this key's create_revision (it only grows)
 *   state/nodes         written by the master (fenced): {master, term, nodes}
 *   state/...           everything else in state/ goes to
 *                       se_cluster_state_apply_hook (cluster/state.c)
 *
 * Lock order: SeClusterShared->lock is a leaf (never held across etcd I/O or
 * while taking another lock); commit slots use the spinlock commit_mutex.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_CLUSTER_COORDINATOR_H
#define SE_CLUSTER_COORDINATOR_H

#include "util/se_common.h"

#include "datatype/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/dsm.h"
#include "storage/spin.h"

#include "cluster/etcd.h"
#include "node/node.h"

#define SE_NODE_ROLE_MASTER		0x01
#define SE_NODE_ROLE_DATA		0x02

#define SE_CLUSTER_MAX_NODES	64
#define SE_NODE_NAME_LEN		128
#define SE_EPHEMERAL_ID_LEN		22	/* as SE_UUID_LEN */
#define SE_NODE_ATTRS_LEN		256
#define SE_CONNINFO_LEN			512
#define SE_CLUSTER_COMMIT_SLOTS	16

/* a backend's wait for a commit (ES's master_timeout default) */
#define SE_CLUSTER_COMMIT_TIMEOUT_MS	30000

/* ---------- GUCs (defined in node/guc.c) ---------- */
extern char *se_cluster_name;
extern char *se_node_roles;
extern char *se_node_attributes;
extern char *se_etcd_endpoints;
extern char *se_publish_conninfo;
extern int	se_cluster_lease_ttl;

/* in members.c: the settings' parsing, shared by the GUC check hooks */
extern bool se_node_roles_parse(const char *s, int *roles, char **detail);
extern bool se_node_attributes_parse(const char *s, char **detail);
extern int	se_node_roles_local(void);
extern bool se_cluster_single_node(void);
extern const char *se_cluster_node_name(void);

/* One node as the cluster sees it. */
typedef struct SeClusterMember
{
	char		name[SE_NODE_NAME_LEN];
	char		ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];
	int			roles;			/* SE_NODE_ROLE_* bits */
	char		attributes[SE_NODE_ATTRS_LEN];	/* "k:v,k:v" */
	char		conninfo[SE_CONNINFO_LEN];
	int64		disk_total_bytes;
	int64		disk_free_bytes;
	int64		started_at;		/* ms since the epoch */
	/* not in the key's JSON: */
	int64		key_revision;	/* mod revision of its nodes/ key */
	bool		published;		/* in the membership the current master
								 * published (ES: joined to it) */
} SeClusterMember;

typedef enum SeCommitState
{
	SE_COMMIT_FREE = 0,
	SE_COMMIT_SUBMITTED,		/* a backend filled it; the worker takes it */
	SE_COMMIT_RUNNING,			/* the worker is committing or awaiting its apply */
	SE_COMMIT_DONE,				/* answered: ok or error */
	SE_COMMIT_ABANDONED			/* the backend left; the worker frees it */
} SeCommitState;

typedef struct SeCommitSlot
{
	int			state;			/* SeCommitState, under commit_mutex */
	uint64		generation;		/* bumped at each submit, to tell slots' uses apart */
	dsm_handle	handle;			/* the ops, serialized (commit.c) */
	int			requester_procno;
	bool		ok;
	int64		revision;		/* of the committed txn */
	int			err_status;
	char		err_type[64];
	char		err_reason[256];
} SeCommitSlot;

typedef struct SeClusterShared
{
	LWLock		lock;			/* the view below; a leaf lock */
	char		ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];	/* this node's, per start */
	int64		started_at;
	int			worker_procno;	/* coordinator's, -1 = not running */

	/* the view, as the coordinator applied it (under lock) */
	char		cluster_uuid[SE_EPHEMERAL_ID_LEN + 1];	/* "" = unknown */
	char		master[SE_NODE_NAME_LEN];	/* "" = none known */
	char		master_ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];
	int64		term;			/* leader key's create_revision */
	bool		acting_master;	/* this node acts as master now ... */
	TimestampTz acting_until;	/* ... and at most until then (even if the
								 * worker is stopped) */
	int64		applied_revision;	/* last etcd revision applied */
	TimestampTz etcd_reachable_at;	/* last successful etcd call, 0 = never */
	bool		joined;			/* the current master published a
								 * membership with this process in it */
	bool		joined_once;	/* ... at least once since it started */
	int			nmembers;
	SeClusterMember members[SE_CLUSTER_MAX_NODES];	/* sorted by name */

	/* the leader's term the fault detection asks to depose (0 = none) */
	int64		depose_term;

	/* commits handed over by backends (commit.c) */
	slock_t		commit_mutex;
	ConditionVariable commit_cv;	/* slot answered */
	ConditionVariable applied_cv;	/* applied_revision moved */
	SeCommitSlot commits[SE_CLUSTER_COMMIT_SLOTS];
} SeClusterShared;

extern SeClusterShared *SeCluster;

/* A consistent copy of the view, for readers. */
typedef struct SeClusterView
{
	bool		single_node;	/* no etcd: this node alone, its own master */
	char		cluster_name[SE_NODE_NAME_LEN];
	char		cluster_uuid[SE_EPHEMERAL_ID_LEN + 1];
	char		master[SE_NODE_NAME_LEN];
	char		master_ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];
	int64		term;
	bool		acting_master;
	int64		applied_revision;
	TimestampTz etcd_reachable_at;
	bool		joined;			/* see SeClusterShared; single node: true */
	char		local_name[SE_NODE_NAME_LEN];
	char		local_ephemeral_id[SE_EPHEMERAL_ID_LEN + 1];
	int			nmembers;
	SeClusterMember members[SE_CLUSTER_MAX_NODES];
} SeClusterView;

/* in members.c */
extern Size se_cluster_shmem_size(void);
extern void se_cluster_shmem_init(void);
extern void se_cluster_view(SeClusterView *v);
extern bool se_cluster_joined_once(void);
/* the view's master among its members; NULL when none is known */
extern const SeClusterMember *se_cluster_view_master(const SeClusterView *v);
extern char *se_cluster_conninfo(const char *node);
extern char *se_cluster_node_attributes(const char *node);
extern void se_cluster_local_member(SeClusterMember *m);
extern void se_cluster_member_json(const SeClusterMember *m, StringInfo out);
extern bool se_cluster_member_parse(const char *json, int len, SeClusterMember *m);
extern char *se_node_roles_letters(int roles);
extern void se_node_roles_json(int roles, StringInfo out);
extern const char *se_conninfo_host(const char *conninfo);
extern const char *se_conninfo_port(const char *conninfo);

/*
 * Events under state/ other than state/nodes, for cluster/state.c to
 * register: key_suffix is the key after ".../state/", value is NULL for a
 * delete.  After a compaction the worker re-reads the whole prefix: it
 * calls full_reload_begin, then the hook for every key under state/, then
 * full_reload_end (keys not seen in between are gone).  All NULL-safe.
 */
typedef void (*SeClusterStateApplyHook) (const char *key_suffix, const char *value,
										 int value_len, bool is_delete, int64 revision);
extern PGDLLIMPORT SeClusterStateApplyHook se_cluster_state_apply_hook;
extern PGDLLIMPORT void (*se_cluster_state_full_reload_begin) (int64 revision);
extern PGDLLIMPORT void (*se_cluster_state_full_reload_end) (int64 revision);

/*
 * in commit.c: from a backend on the master, commit ops as one txn fenced
 * on the master's term; true once this node's watch applied the txn's
 * revision (*revision).  503 master_not_discovered_exception when this node
 * is not the acting master, 503 process_cluster_event_timeout_exception
 * after SE_CLUSTER_COMMIT_TIMEOUT_MS.  The caller's key names are full
 * etcd keys (se_cluster_key makes them).
 */
extern bool se_cluster_commit(const SeEtcdOp *ops, int nops, int64 *revision, SeError *err);
extern bool se_cluster_commit_if(const SeEtcdCmp *cmps, int ncmps, const SeEtcdOp *ops,
								 int nops, int64 *revision, bool *conflict, SeError *err);
extern char *se_cluster_key(const char *suffix);
/* the worker's side */
extern int	se_commit_take(uint64 *generation);
extern SeEtcdOp *se_commit_read_ops(int slot, int *nops, SeEtcdCmp **cmps, int *ncmps,
									SeError *err);
/* the error type of an answer whose caller compares failed */
#define SE_COMMIT_CONFLICT "cluster_state_conflict"
extern void se_commit_answer(int slot, uint64 generation, bool ok, int64 revision,
							 const SeError *err);
extern void se_commit_worker_start(void);

/* in coordinator.c */
extern void se_coordinator_register(void);
PGDLLEXPORT void se_coordinator_main(Datum arg);

/* in fault_detection.c: follower and leader checks (ES fault detection) */
extern void se_fault_detection_register(void);
extern void se_fault_detection_register_actions(void);
PGDLLEXPORT void se_fault_detection_main(Datum arg);

#endif							/* SE_CLUSTER_COORDINATOR_H */
