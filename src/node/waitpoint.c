/*-------------------------------------------------------------------------
 *
 * waitpoint.c
 *	  Debug waitpoints: make a race between two sessions deterministic.
 *
 * With search_engine.debug_waitpoints on, a backend that reaches
 * se_debug_waitpoint("name") waits there while another session holds
 * pg_advisory_lock(hashtext('name')), as TimescaleDB's waitpoints do: the
 * test takes the lock, starts the operation, runs the racing one, and
 * releases the lock.  Off (the default), a waitpoint costs one branch.
 * Backends only: the lock needs a transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "node/node.h"

void
se_debug_waitpoint(const char *name)
{
	LOCKTAG		tag;
	int64		key;

	if (!se_debug_waitpoints)
		return;
	/* the tag of pg_advisory_lock(hashtext(name)) */
	key = DatumGetInt32(hash_any((const unsigned char *) name, strlen(name)));
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (key >> 32), (uint32) key, 1);
	(void) LockAcquire(&tag, ShareLock, false, false);
	LockRelease(&tag, ShareLock, false);
}
