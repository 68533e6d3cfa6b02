/*-------------------------------------------------------------------------
 *
 * filter_path.h
 *	  ES's filter_path URL parameter over a parsed JSON answer (pure).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_FILTER_PATH_H
#define SE_FILTER_PATH_H

#include "util/json.h"

/*
 * v cut to spec ("a.b,-c.*,**.d"): exclusions first, then inclusions;
 * "{}" when inclusions leave nothing.  Shares unfiltered parts with v.
 */
extern SeJson *se_filter_path(const SeJson *v, const char *spec);

#endif							/* SE_FILTER_PATH_H */
