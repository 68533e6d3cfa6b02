/*-------------------------------------------------------------------------
 *
 * units.c
 *	  Elasticsearch's time and byte-size values ("500ms", "1m", "512mb"),
 *	  read and written as index and cluster settings take them.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "util/units.h"

/* ES time value ("1s", "500ms", "2m", "-1") in milliseconds. */
bool
se_parse_time_value(const char *s, int64 *ms)
{
	char	   *end;
	double		v;

	if (strcmp(s, "-1") == 0)
	{
		*ms = -1;
		return true;
	}
	v = strtod(s, &end);
	if (end == s || v < 0)
		return false;
	if (strcmp(end, "ms") == 0)
		*ms = (int64) v;
	else if (strcmp(end, "s") == 0)
		*ms = (int64) (v * 1000);
	else if (strcmp(end, "m") == 0)
		*ms = (int64) (v * 60000);
	else if (strcmp(end, "h") == 0)
		*ms = (int64) (v * 3600000);
	else if (strcmp(end, "d") == 0)
		*ms = (int64) (v * 86400000);
	else if (*end == '\0' && v == 0)
		*ms = 0;
	else
		return false;
	return true;
}

bool
se_parse_byte_size(const char *s, int64 *bytes)
{
	char	   *end;
	double		v = strtod(s, &end);
	double		mult;

	if (end == s || v < 0)
		return false;
	if (pg_strcasecmp(end, "b") == 0 || *end == '\0')
		mult = 1;
	else if (pg_strcasecmp(end, "kb") == 0)
		mult = 1024.0;
	else if (pg_strcasecmp(end, "mb") == 0)
		mult = 1024.0 * 1024;
	else if (pg_strcasecmp(end, "gb") == 0)
		mult = 1024.0 * 1024 * 1024;
	else if (pg_strcasecmp(end, "tb") == 0)
		mult = 1024.0 * 1024 * 1024 * 1024;
	else
		return false;
	*bytes = (int64) (v * mult);
	return true;
}

void
se_format_time_value(int64 ms, StringInfo out)
{
	if (ms < 0)
		appendStringInfoString(out, "-1");
	else if (ms % 1000 == 0)
		appendStringInfo(out, INT64_FORMAT "s", ms / 1000);
	else
		appendStringInfo(out, INT64_FORMAT "ms", ms);
}

void
se_format_byte_size(int64 b, StringInfo out)
{
	if (b % (1024 * 1024 * 1024) == 0 && b > 0)
		appendStringInfo(out, INT64_FORMAT "gb", b / (1024 * 1024 * 1024));
	else if (b % (1024 * 1024) == 0 && b > 0)
		appendStringInfo(out, INT64_FORMAT "mb", b / (1024 * 1024));
	else if (b % 1024 == 0 && b > 0)
		appendStringInfo(out, INT64_FORMAT "kb", b / 1024);
	else
		appendStringInfo(out, INT64_FORMAT "b", b);
}

/* A JSON scalar as ES settings hold it (text); NULL for other types. */
char *
se_json_scalar_text(const SeJson *v)
{
	switch (v->type)
	{
		case SE_JSON_STRING:
			return pstrdup(v->u.s.str);
		case SE_JSON_NUMBER:
			return pnstrdup(v->u.n.text, v->u.n.len);
		case SE_JSON_TRUE:
			return pstrdup("true");
		case SE_JSON_FALSE:
			return pstrdup("false");
		default:
			return NULL;
	}
}

bool
se_parse_es_boolean(const char *v, bool *out, SeError *err)
{
	if (v[0] == '\0' || strcmp(v, "true") == 0)
		*out = true;
	else if (strcmp(v, "false") == 0)
		*out = false;
	else
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Failed to parse value [%s] as only [true] or [false] are allowed.", v);
		return false;
	}
	return true;
}
