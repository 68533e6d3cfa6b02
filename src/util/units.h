/*-------------------------------------------------------------------------
 *
 * units.h
 *	  Elasticsearch's time and byte-size values, and settings' scalars.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_UTIL_UNITS_H
#define SE_UTIL_UNITS_H

#include "util/se_common.h"
#include "util/json.h"

/* "1s", "500ms", "2m", "1h", "1d", "0", "-1" (= -1) in milliseconds */
extern bool se_parse_time_value(const char *s, int64 *ms);
/* "10", "10b", "4kb", "512mb", "1gb", "2tb" (case-insensitive) in bytes */
extern bool se_parse_byte_size(const char *s, int64 *bytes);
extern void se_format_time_value(int64 ms, StringInfo out);
extern void se_format_byte_size(int64 bytes, StringInfo out);
/*
 * A boolean parameter as ES's paramAsBoolean reads it: "" and "true" are
 * true, "false" false; anything else is its 400 illegal_argument_exception.
 */
extern bool se_parse_es_boolean(const char *v, bool *out, SeError *err);
/* a JSON scalar as ES settings hold it (text); NULL for other types */
extern char *se_json_scalar_text(const SeJson *v);

#endif							/* SE_UTIL_UNITS_H */
