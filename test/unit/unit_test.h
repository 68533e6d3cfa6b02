/*
 * unit_test.h
 *	  Minimal assertion helpers for the standalone C tests, and the few
 *	  helpers benchmarks share (deterministic randomness, timing).
 *
 * Each test program calls UT_CHECK for every assertion and returns
 * ut_finish() from main; the summary line "N passed, N failed" is what CI
 * reads.
 */
#ifndef SE_UNIT_TEST_H
#define SE_UNIT_TEST_H

#include <stdio.h>
#include <time.h>

static int	ut_passed = 0;
static int	ut_failed = 0;

#define UT_CHECK(cond, ...) \
	do { \
		if (cond) ut_passed++; \
		else { \
			ut_failed++; \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fprintf(stderr, "\n"); \
		} \
	} while (0)

static inline int
ut_finish(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, ut_passed, ut_failed);
	return ut_failed == 0 ? 0 : 1;
}

/* xorshift64*: deterministic, the same sequence on every run. */
static inline uint64
ut_rnd(void)
{
	static uint64 state = UINT64CONST(0x9E3779B97F4A7C15);

	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * UINT64CONST(0x2545F4914F6CDD1D);
}

/* Seconds on the given clock (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
static inline double
ut_clock_sec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int
ut_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

#endif
