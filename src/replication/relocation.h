/*-------------------------------------------------------------------------
 *
 * relocation.h
 *	  A primary's relocation handoff (ES's IndexShard.relocated): before its
 *	  target may take over as primary, the moving primary stops taking
 *	  writes, lets the ones under way finish their replication (so the
 *	  target has every operation) and refuses the rest with
 *	  retry_on_primary_exception, which the coordinating node retries on
 *	  the new primary once the cluster state moved.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_RELOCATION_H
#define SE_RELOCATION_H

#include "util/se_common.h"

#include "cluster/state.h"

/* the error type of a write refused by a handed-off primary (retried) */
#define SE_RETRY_ON_PRIMARY "retry_on_primary_exception"

/*
 * A bulk round's writes to slot begin (false: the slot handed off, the
 * writes must go to the new primary) and end once replicated.
 */
extern bool se_relocation_write_begin(int slot);
extern void se_relocation_write_end(int slot);

/*
 * recovery_finalize on the source, for target allocation id aid: when aid
 * is the target of this primary's relocation, hand off (block new writes,
 * wait for those under way, check the target has every operation).  false
 * with err when it could not; true otherwise (also when not a handoff).
 */
extern bool se_relocation_handoff(int slot, const SeIndexMeta *im, int shard,
								  const char *aid, SeError *err);

/* reconcile: a handoff whose relocation was cancelled takes writes again */
extern void se_relocation_reconcile(int slot, const SeIndexMeta *im, int shard);

#endif							/* SE_RELOCATION_H */
