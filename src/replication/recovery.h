/*-------------------------------------------------------------------------
 *
 * recovery.h
 *	  Peer recovery: a replica copy is filled from its primary (issue 16).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_RECOVERY_H
#define SE_RECOVERY_H

#include "util/se_common.h"

/*
 * Called by the owner (write worker) of slot_no, OPENING with replica =
 * true and no engine yet, instead of opening the shard from what this node
 * holds.  Never blocks.  false: a recovery is under way (or will be
 * retried), the owner leaves the slot alone; true: the shard directory
 * holds the copied commit and translog, the owner opens it now.  An ERROR
 * fails the slot (its node reports shard_failed).
 */
extern bool se_recovery_start_replica(int slot_no);

#endif							/* SE_RECOVERY_H */
