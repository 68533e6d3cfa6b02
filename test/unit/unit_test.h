/*
 * unit_test.h
 *	  Minimal assertion helpers for the standalone C tests.
 *
 * Each test program calls UT_CHECK for every assertion and returns
 * ut_finish() from main; the summary line "N passed, N failed" is what CI
 * reads.
 */
#ifndef SE_UNIT_TEST_H
#define SE_UNIT_TEST_H

#include <stdio.h>

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

#endif
