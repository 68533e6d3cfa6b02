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

#include <sys/stat.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "utils/wait_event.h"

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

/*
 * The same for a process without a transaction (the coordinator): with
 * debug_waitpoints on, wait while the file <PGDATA>/search_engine_pause_<name>
 * exists.  A test creates the file, lets the process reach the point, acts
 * (e.g. lets the process's etcd lease lapse), then removes the file.
 */
void
se_debug_pausepoint(const char *name)
{
	char	   *path;
	struct stat st;
	bool		logged = false;

	if (!se_debug_waitpoints)
		return;
	path = psprintf("%s/search_engine_pause_%s", DataDir, name);
	while (stat(path, &st) == 0)
	{
		if (!logged)
			ereport(LOG, (errmsg("search_engine: paused at debug point \"%s\" while %s exists", name, path)));
		logged = true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (logged)
		ereport(LOG, (errmsg("search_engine: resumed at debug point \"%s\"", name)));
	pfree(path);
}

/*
 * With debug_waitpoints on, does <PGDATA>/search_engine_skip_<name> exist?
 * A test makes a periodic duty skip its turns while it does (e.g. the idle
 * global checkpoint sync, so replicas keep an older one).
 */
bool
se_debug_skip(const char *name)
{
	char	   *path;
	struct stat st;
	bool		yes;

	if (!se_debug_waitpoints)
		return false;
	path = psprintf("%s/search_engine_skip_%s", DataDir, name);
	yes = stat(path, &st) == 0;
	pfree(path);
	return yes;
}

/*
 * With debug_waitpoints on, does <PGDATA>/search_engine_fault_<name> exist?
 * A test makes one step fail while it does (a translog sync on a full
 * disk, a replica's apply, the master's shard_failed), to reach the error
 * paths chaos reaches only by chance.
 */
bool
se_debug_fault(const char *name)
{
	char	   *path;
	struct stat st;
	bool		yes;

	if (!se_debug_waitpoints)
		return false;
	path = psprintf("%s/search_engine_fault_%s", DataDir, name);
	yes = stat(path, &st) == 0;
	pfree(path);
	return yes;
}
