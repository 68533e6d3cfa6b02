/*-------------------------------------------------------------------------
 *
 * ars_shmem.c
 *	  The node's adaptive replica selection statistics in shared memory:
 *	  every backend coordinating reads records what its peers answered and
 *	  ranks copies by what all of them saw (ES keeps one
 *	  ResponseCollectorService per node).  A spinlock guards the few
 *	  doubles of an update or a copy.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "storage/shmem.h"
#include "storage/spin.h"

#include "cluster/replica_select.h"

typedef struct SeArsShared
{
	slock_t		mutex;
	SeArsTable	table;
} SeArsShared;

static SeArsShared *ArsShmem = NULL;

static void
ars_lock(bool acquire)
{
	if (acquire)
		SpinLockAcquire(&ArsShmem->mutex);
	else
		SpinLockRelease(&ArsShmem->mutex);
}

Size
se_ars_shmem_size(void)
{
	return MAXALIGN(sizeof(SeArsShared));
}

void
se_ars_shmem_init(void)
{
	bool		found;

	ArsShmem = ShmemInitStruct("search_engine adaptive replica selection",
							   se_ars_shmem_size(), &found);
	if (!found)
	{
		memset(ArsShmem, 0, se_ars_shmem_size());
		SpinLockInit(&ArsShmem->mutex);
	}
	se_ars_use_table(&ArsShmem->table, ars_lock);
}
