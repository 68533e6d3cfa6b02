/*-------------------------------------------------------------------------
 *
 * replication_int.h
 *	  What replication/ uses of the routing (cluster/state_sync.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_REPLICATION_INT_H
#define SE_REPLICATION_INT_H

#include "cluster/state.h"

/* the routing accessors of REPLICATION.md section 1 (state.h once merged) */
extern List *se_state_shard_targets(const SeIndexMeta *im, int shard);
extern bool se_state_in_sync(const SeIndexMeta *im, int shard, const char *allocation_id);

#endif							/* SE_REPLICATION_INT_H */
