/*-------------------------------------------------------------------------
 *
 * recovery_stub.c
 *	  Until peer recovery exists: a replica copy fails to start.
 *
 * The routing (cluster/) places replica copies; without peer recovery
 * there is nothing to fill one with, and opening it from the node's own
 * store would serve an empty or stale shard as if it were in sync.  So its
 * owner fails it, its node reports shard_failed, and the master keeps the
 * copy unassigned (ALLOCATION_FAILED, retried up to
 * index.allocation.max_retries) with this reason in its unassigned_info.
 * The peer recovery (src/replication/recovery_*.c) replaces this file.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "node/node.h"
#include "replication/recovery.h"

bool
se_recovery_start_replica(int slot_no)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("[%s][%d] replica copy cannot start: peer recovery is not available",
					SeSlots[slot_no].index_uuid, SeSlots[slot_no].shard),
			 errdetail("recovery_failed_exception")));
	return false;
}
