/*-------------------------------------------------------------------------
 *
 * timezone.c
 *	  ES's time_zone parameter: a fixed offset ("+01:00", "-0530", "UTC",
 *	  "Z") or a tz database name ("Europe/Berlin"), read from PostgreSQL's
 *	  own tz database (pg_tzset / pg_localtime; no other library).
 *
 * Rounding in a zone (date_histogram, date math "/d") works on local wall
 * time: an instant becomes local time by adding the offset in effect at
 * that instant (se_tz_offset), is rounded there, and the local result
 * becomes an instant again (se_tz_local_to_utc) as java.time's
 * LocalDateTime.atZone does: in an overlap (clocks turned back) the
 * earlier instant, in a gap (clocks turned forward) the local time moved
 * later by the gap's length.  The standalone (SE_FRONTEND) build of the
 * unit tests has no tz database: fixed offsets only.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <ctype.h>

#ifndef SE_FRONTEND
#include "pgtime.h"
#endif

#include "search/search_int.h"

#define MS_PER_DAY	INT64CONST(86400000)

/* "+01:00", "-0530", "+1", "UTC", "Z": a fixed offset in ms */
static bool
parse_fixed(const char *s, int64 *ms)
{
	int			h = 0,
				m = 0,
				sign;
	const char *p;

	if (strcmp(s, "UTC") == 0 || strcmp(s, "Z") == 0 || strcmp(s, "GMT") == 0 ||
		strcmp(s, "Etc/UTC") == 0 || strcmp(s, "Etc/GMT") == 0)
	{
		*ms = 0;
		return true;
	}
	/* UTC+01:00 / GMT-5 as java.time's ZoneId.of reads them */
	p = s;
	if (strncmp(p, "UTC", 3) == 0 || strncmp(p, "GMT", 3) == 0)
		p += 3;
	if (p[0] != '+' && p[0] != '-')
		return false;
	sign = p[0] == '-' ? -1 : 1;
	p++;
	if (!isdigit((unsigned char) p[0]))
		return false;
	h = p[0] - '0';
	p++;
	if (isdigit((unsigned char) p[0]))
		h = h * 10 + (*p++ - '0');
	if (*p == ':')
		p++;
	if (isdigit((unsigned char) p[0]) && isdigit((unsigned char) p[1]))
	{
		m = (p[0] - '0') * 10 + (p[1] - '0');
		p += 2;
	}
	if (*p != '\0' || h > 18 || m > 59)
		return false;
	*ms = sign * ((int64) h * 3600000 + (int64) m * 60000);
	return true;
}

bool
se_tz_parse(const char *s, SeTimeZone *out, SeError *err)
{
	const char *p;

	memset(out, 0, sizeof(*out));
	out->name = s;
	if (parse_fixed(s, &out->fixed_ms))
		return true;
	/* a region name: letters, digits, '/', '_', '-', '+'; never a path */
	for (p = s; *p; p++)
		if (!isalnum((unsigned char) *p) && *p != '/' && *p != '_' && *p != '-' && *p != '+')
			break;
#ifndef SE_FRONTEND
	if (*p == '\0' && p != s && s[0] != '/' && strstr(s, "..") == NULL &&
		strlen(s) < 64)
		out->tz = pg_tzset(s);
#endif
	if (out->tz == NULL)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Unknown time-zone ID: %s", s);
		return false;
	}
	return true;
}

/* The zone's offset from UTC in ms at instant utc_ms (epoch millis). */
int64
se_tz_offset(const SeTimeZone *tz, int64 utc_ms)
{
#ifndef SE_FRONTEND
	pg_time_t	t;
	struct pg_tm *tm;
#endif

	if (tz == NULL || tz->tz == NULL)
		return tz ? tz->fixed_ms : 0;
#ifdef SE_FRONTEND
	return 0;
#else
	t = (pg_time_t) (utc_ms >= 0 ? utc_ms / 1000 : -((-utc_ms + 999) / 1000));
	tm = pg_localtime(&t, tz->tz);
	return tm ? (int64) tm->tm_gmtoff * 1000 : 0;
#endif
}

/*
 * The instant of local wall time local_ms (epoch millis of the wall clock
 * read as UTC): the earlier one in an overlap, later by the gap in a gap.
 */
int64
se_tz_local_to_utc(const SeTimeZone *tz, int64 local_ms)
{
	int64		before,
				after,
				ua,
				ub;
	bool		va,
				vb;

	if (tz == NULL || tz->tz == NULL)
		return local_ms - (tz ? tz->fixed_ms : 0);
	/* the offsets a day either side: zones change at most once in that span */
	before = se_tz_offset(tz, local_ms - MS_PER_DAY);
	after = se_tz_offset(tz, local_ms + MS_PER_DAY);
	ua = local_ms - before;
	ub = local_ms - after;
	va = se_tz_offset(tz, ua) == before;
	vb = se_tz_offset(tz, ub) == after;
	if (va && vb)
		return Min(ua, ub);
	if (va)
		return ua;
	if (vb)
		return ub;
	return ua;					/* in a gap: the offset before it */
}

/* Local wall time of utc_ms, as epoch millis of the wall clock. */
int64
se_tz_to_local(const SeTimeZone *tz, int64 utc_ms)
{
	return utc_ms + se_tz_offset(tz, utc_ms);
}

bool
se_tz_is_utc(const SeTimeZone *tz)
{
	return tz == NULL || (tz->tz == NULL && tz->fixed_ms == 0);
}

/*
 * Format utc_ms as strict_date_optional_time in the zone, as ES writes a
 * key_as_string: "2016-03-27T00:00:00.000+01:00" ("Z" in UTC).
 */
void
se_tz_format(const SeTimeZone *tz, int64 utc_ms, StringInfo out)
{
	int64		off = se_tz_offset(tz, utc_ms);
	int			len;

	len = out->len;
	se_date_format(utc_ms + off, out);
	if (se_tz_is_utc(tz) || out->len == len || out->data[out->len - 1] != 'Z')
		return;
	out->len--;
	out->data[out->len] = '\0';
	if (off == 0)
		appendStringInfoChar(out, 'Z');
	else
		appendStringInfo(out, "%c%02d:%02d", off < 0 ? '-' : '+',
						 (int) (Abs(off) / 3600000), (int) (Abs(off) / 60000 % 60));
}

/*
 * Whether a date string names its own zone (a trailing Z or offset after
 * the time, or epoch millis): then a time_zone does not apply to it.
 */
bool
se_tz_date_has_zone(const char *s, int len)
{
	int			i;
	int			t = -1;

	for (i = 0; i < len; i++)
		if (!isdigit((unsigned char) s[i]) && !(i == 0 && s[i] == '-') && s[i] != '.')
			break;
	if (i == len)
		return true;
	for (i = 0; i < len; i++)
		if (s[i] == 'T' || s[i] == ' ')
		{
			t = i;
			break;
		}
	if (t < 0)
		return false;
	for (i = t + 1; i < len; i++)
		if (s[i] == 'Z' || s[i] == 'z' || s[i] == '+' || s[i] == '-')
			return true;
	return false;
}
