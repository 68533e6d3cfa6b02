/*-------------------------------------------------------------------------
 *
 * bgw.c
 *	  What every search_engine background worker shares: registration,
 *	  signal set-up, the shutdown flag and the top of the work loop.
 *
 * Workers exit with code 1 so that, unless the server is shutting down,
 * the postmaster restarts them after bgw_restart_time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <malloc.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"

#include "node/node.h"

volatile sig_atomic_t se_bgw_got_sigterm = false;

static void
handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	se_bgw_got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* Register count static workers running function, named "<kind> <n>". */
void
se_bgw_register(const char *function, const char *kind, int count, bool database)
{
	BackgroundWorker bgw;
	int			i;

	for (i = 0; i < count; i++)
	{
		memset(&bgw, 0, sizeof(bgw));
		bgw.bgw_flags = BGWORKER_SHMEM_ACCESS |
			(database ? BGWORKER_BACKEND_DATABASE_CONNECTION : 0);
		bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
		bgw.bgw_restart_time = 1;
		snprintf(bgw.bgw_library_name, BGW_MAXLEN, "search_engine");
		snprintf(bgw.bgw_function_name, BGW_MAXLEN, "%s", function);
		snprintf(bgw.bgw_name, BGW_MAXLEN, "%s %d", kind, i);
		snprintf(bgw.bgw_type, BGW_MAXLEN, "%s", kind);
		bgw.bgw_main_arg = Int32GetDatum(i);
		RegisterBackgroundWorker(&bgw);
	}
}

/* Signals: SIGTERM sets the shutdown flag (the loop exits cleanly). */
void
se_bgw_start(void)
{
	pqsignal(SIGTERM, handle_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
}

/* Top of a work loop: interrupts and config reload; false once asked to stop. */
bool
se_bgw_loop_top(void)
{
	CHECK_FOR_INTERRUPTS();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	return !se_bgw_got_sigterm;
}

/*
 * Keep up to trim_keep bytes of freed heap in this process, and take
 * pieces of up to mmap_above bytes from the heap instead of fresh
 * mappings.  For processes that allocate and free pieces of a few hundred
 * KB over and over (bulk coordinators, write workers): with glibc's
 * defaults each such piece was mapped and faulted in afresh every time.
 * Per process; once is enough (later calls change nothing).
 */
void
se_keep_freed_heap(int mmap_above, int trim_keep)
{
	static bool done = false;

	if (done)
		return;
	done = true;
#ifdef M_MMAP_THRESHOLD
	mallopt(M_MMAP_THRESHOLD, mmap_above);
	mallopt(M_TRIM_THRESHOLD, trim_keep);
#endif
}

/*
 * In a wait on another process (a queued bulk, a control request): an
 * extension worker asked to stop abandons it, as CHECK_FOR_INTERRUPTS
 * makes a backend do.  At a clean shutdown the write workers may exit
 * before they take what a task worker queued; the task worker then waited
 * for it until pg_ctl gave up.  The ERROR ends the caller's job (a task is
 * recorded as failed) and the worker's loop then sees the flag and exits.
 */
void
se_check_wait_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
	if (se_bgw_got_sigterm)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("search_engine worker asked to stop: the request it waits for is abandoned")));
}
