/*-------------------------------------------------------------------------
 *
 * match.h
 *	  '*' wildcard matching (index patterns, grants, task action filters,
 *	  node names, allocation filters, cluster setting keys).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_UTIL_MATCH_H
#define SE_UTIL_MATCH_H

#include "util/se_common.h"

/*
 * Does s match pat, where '*' stands for any run of characters (none
 * included)?  Iterative, backtracking only to the last '*': O(len(pat) *
 * len(s)) at worst, whatever pattern a request sends.
 */
extern bool se_wildcard_match(const char *pat, const char *s);

#endif							/* SE_UTIL_MATCH_H */
