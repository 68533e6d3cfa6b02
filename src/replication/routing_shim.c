/*-------------------------------------------------------------------------
 *
 * routing_shim.c
 *	  Weak stand-ins for the routing accessors of cluster/state_sync.c
 *	  (engineer R, branch repl-routing) until they land: a build without
 *	  them has no replica routing, so no targets and no in-sync copies.
 *	  The real definitions, when linked, win over these.  Delete this file
 *	  once repl-routing is merged.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "replication/replication_int.h"

__attribute__((weak)) List *
se_state_shard_targets(const SeIndexMeta *im, int shard)
{
	return NIL;
}

__attribute__((weak)) bool
se_state_in_sync(const SeIndexMeta *im, int shard, const char *allocation_id)
{
	return false;
}
