/*-------------------------------------------------------------------------
 *
 * match.c
 *	  '*' wildcard matching (see match.h).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "util/match.h"

bool
se_wildcard_match(const char *pat, const char *s)
{
	const char *star = NULL,
			   *resume = NULL;

	while (*s)
	{
		if (*pat == '*')
		{
			star = pat++;
			resume = s;
		}
		else if (*pat == *s)
		{
			pat++;
			s++;
		}
		else if (star)
		{
			/* let the last '*' take one more character */
			pat = star + 1;
			s = ++resume;
		}
		else
			return false;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}
