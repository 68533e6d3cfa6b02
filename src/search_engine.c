/*-------------------------------------------------------------------------
 *
 * search_engine.c
 *	  Module entry point: _PG_init refuses to load outside
 *	  shared_preload_libraries, defines the GUCs, requests shared memory and
 *	  registers the launcher background worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"

#include "node/node.h"
#include "api/api.h"
#include "cluster/replica_select.h"
#include "api/byquery.h"
#include "cluster/state.h"
#include "cluster/coordinator.h"
#include "fdw/fdw.h"
#include "http/http.h"
#include "replication/recovery.h"
#include "replication/replication.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	se_shmem_request();
}

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	se_shmem_startup();
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("search_engine must be loaded via shared_preload_libraries"),
				 errhint("Add search_engine to shared_preload_libraries in postgresql.conf "
						 "(shared_preload_libraries = 'search_engine') and restart the server.")));

	/* before se_guc_define reserves the search_engine. prefix */
	se_http_guc_define();
	se_guc_define();
	se_search_interrupts_init();
	se_nodes_register_actions();
	se_bulk_register_actions();
	se_search_register_actions();
	se_search_remote_register_actions();
	se_pit_register_actions();
	se_fdw_register_actions();
	se_index_ops_register_actions();
	se_cat_register_actions();
	se_stats_register_actions();
	/* _only_nodes:attr:value reads the members' node_attributes */
	se_replica_attributes_lookup(se_cluster_node_attributes);
	se_state_register_actions();
	se_byquery_register_actions();
	se_shard_state_register_actions();
	se_fault_detection_register_actions();
	se_recovery_register_actions();
	se_replication_register_actions();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;

	se_launcher_register();
	se_merge_register();
	se_task_workers_register();
	se_search_workers_register();
	se_coordinator_register();
	se_shard_state_register();
	se_fault_detection_register();
	se_http_register();
}
