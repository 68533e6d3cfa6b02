/*-------------------------------------------------------------------------
 *
 * interrupt.c
 *	  Interrupt checks and the search timeout for the query phase.
 *
 * Every loop over documents, terms or positions counts its work with
 * SE_SEARCH_TICK (search_int.h): a decrement of se_search_budget, and every
 * SE_SEARCH_CHECK_INTERVAL units a call of se_search_check.  That runs the
 * caller's hook (the server's is CHECK_FOR_INTERRUPTS, which may ereport
 * out of the search; a search worker's also says "stop" once its
 * requester is gone) and compares the clock with the deadline of the
 * request's "timeout".  Both ways of stopping that the search module
 * handles itself -- the timeout (partial results, "timed_out": true, as
 * ES's TimeExceededException) and a hook's "stop" -- leave through the
 * landing point the query phase set up with setjmp, as Lucene's
 * exceptions leave its collectors.  Scorers only hold request memory, so
 * jumping over them leaks nothing that the request's context does not
 * free; the collector's heap is consistent at every check because checks
 * are never made while a doc is being collected.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "portability/instr_time.h"

#include "search/search_int.h"

int32		se_search_budget = SE_SEARCH_CHECK_INTERVAL;
bool		(*se_search_interrupt_hook) (void) = NULL;

/* The query phase's landing point, while one runs (not nested). */
static SeSearchStop *current_stop = NULL;

static int64
now_us(void)
{
	instr_time	t;

	INSTR_TIME_SET_CURRENT(t);
	return (int64) INSTR_TIME_GET_MICROSEC(t);
}

void
se_search_stop_arm(SeSearchStop *stop, int64 timeout_ms)
{
	stop->reason = SE_STOP_NONE;
	/* a timeout of centuries is none (and its microseconds would overflow) */
	stop->deadline_us = timeout_ms < 0 || timeout_ms > PG_INT64_MAX / 4000 ? 0 :
		now_us() + timeout_ms * 1000;
	current_stop = stop;
	/* the first unit of work checks: a timeout of 0 stops there */
	se_search_budget = timeout_ms == 0 ? 0 : SE_SEARCH_CHECK_INTERVAL;
}

void
se_search_stop_disarm(void)
{
	current_stop = NULL;
}

static void
stop_here(SeSearchStopReason reason)
{
	SeSearchStop *stop = current_stop;

	current_stop = NULL;
	stop->reason = reason;
	longjmp(stop->jb, 1);
}

void
se_search_check(void)
{
	se_search_budget = SE_SEARCH_CHECK_INTERVAL;
	if (se_search_interrupt_hook != NULL && !se_search_interrupt_hook() &&
		current_stop != NULL)
		stop_here(SE_STOP_ABANDONED);
	if (current_stop != NULL && current_stop->deadline_us != 0 &&
		now_us() >= current_stop->deadline_us)
		stop_here(SE_STOP_TIMED_OUT);
}

/* The failure of a scorer run with no landing point armed (explain). */
static SeError pending_failure;
static bool has_pending_failure = false;

void
se_search_fail(const SeError *e)
{
	SeSearchStop *stop = current_stop;

	if (stop == NULL)
	{
		if (!has_pending_failure)
		{
			pending_failure = *e;
			has_pending_failure = true;
		}
		return;
	}
	stop->error = *e;
	stop_here(SE_STOP_FAILED);
}

bool
se_search_take_failure(SeError *err)
{
	if (!has_pending_failure)
		return false;
	has_pending_failure = false;
	*err = pending_failure;
	return true;
}
