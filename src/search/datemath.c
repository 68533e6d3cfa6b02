/*-------------------------------------------------------------------------
 *
 * datemath.c
 *	  ES date math for range queries: "now-1d/d", "2020-01-01||+1M/M".
 *
 * An anchor (now, or a date before "||") is followed by operations: +N or
 * -N of a unit (y M w d h H m s) and rounding /unit.  Rounding goes down,
 * or up to the last millisecond of the unit when the bound is gt or lte,
 * as ES's DateMathParser does; a date without time components is likewise
 * completed with the end of its day (ES fills missing time fields with
 * their maximum when rounding up).  Calendar arithmetic is proleptic
 * Gregorian in UTC.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <ctype.h>

#include "common/int.h"

#include "mapping/mapping.h"
#include "search/search_int.h"

#define MS_PER_SECOND	INT64CONST(1000)
#define MS_PER_MINUTE	(60 * MS_PER_SECOND)
#define MS_PER_HOUR		(60 * MS_PER_MINUTE)
#define MS_PER_DAY		(24 * MS_PER_HOUR)

/* Days since 1970-01-01 of a civil date (month 1..12). */
static int64
days_from_civil(int64 y, int m, int d)
{
	int64		era;
	int64		yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64 z, int64 *y, int *m, int *d)
{
	int64		era,
				doe,
				yoe,
				doy,
				mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int
days_in_month(int64 y, int m)
{
	static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool		leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return (m == 2 && leap) ? 29 : dim[m - 1];
}

static int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Add n months, clamping the day to the target month (as java.time). */
static bool
add_months(int64 t, int64 n, int64 *out)
{
	int64		days = floor_div(t, MS_PER_DAY);
	int64		ms = t - days * MS_PER_DAY;
	int64		y;
	int			m,
				d;
	int64		mi;

	civil_from_days(days, &y, &m, &d);
	mi = y * 12 + (m - 1) + n;
	y = floor_div(mi, 12);
	m = (int) (mi - y * 12) + 1;
	d = Min(d, days_in_month(y, m));
	return !pg_mul_s64_overflow(days_from_civil(y, m, d), MS_PER_DAY, out) &&
		!pg_add_s64_overflow(*out, ms, out);
}

/* Start of the unit containing t. */
static int64
round_down(int64 t, char unit)
{
	int64		days = floor_div(t, MS_PER_DAY);
	int64		y;
	int			m,
				d;

	switch (unit)
	{
		case 'y':
			civil_from_days(days, &y, &m, &d);
			return days_from_civil(y, 1, 1) * MS_PER_DAY;
		case 'M':
			civil_from_days(days, &y, &m, &d);
			return days_from_civil(y, m, 1) * MS_PER_DAY;
		case 'w':
			/* ISO weeks start on Monday; 1970-01-01 was a Thursday */
			return (days - ((days + 3) % 7 + 7) % 7) * MS_PER_DAY;
		case 'd':
			return days * MS_PER_DAY;
		case 'h':
		case 'H':
			return floor_div(t, MS_PER_HOUR) * MS_PER_HOUR;
		case 'm':
			return floor_div(t, MS_PER_MINUTE) * MS_PER_MINUTE;
		case 's':
			return floor_div(t, MS_PER_SECOND) * MS_PER_SECOND;
	}
	return t;
}

/*
 * t plus n units into *out; false when that is past what a long of
 * milliseconds holds (ES: "long overflow"), which would wrap around.
 * |n| is at most about 1e9 (the parser's bound), so n * 12 cannot overflow.
 */
static bool
add_units(int64 t, int64 n, char unit, int64 *out)
{
	int64		ms;

	switch (unit)
	{
		case 'y':
			return add_months(t, n * 12, out);
		case 'M':
			return add_months(t, n, out);
		case 'w':
			ms = 7 * MS_PER_DAY;
			break;
		case 'd':
			ms = MS_PER_DAY;
			break;
		case 'h':
		case 'H':
			ms = MS_PER_HOUR;
			break;
		case 'm':
			ms = MS_PER_MINUTE;
			break;
		default:
			ms = MS_PER_SECOND;
			break;
	}
	return !pg_mul_s64_overflow(n, ms, &ms) && !pg_add_s64_overflow(t, ms, out);
}

static bool
valid_unit(char c)
{
	return c == 'y' || c == 'M' || c == 'w' || c == 'd' || c == 'h' ||
		c == 'H' || c == 'm' || c == 's';
}

/*
 * Milliseconds to add to a parsed date string so that its missing time
 * components take their maximum (ES round-up parsing).
 */
static int64
missing_time_fill(const char *s, int len)
{
	int			i = 0;
	int			tpos = -1;
	int			fields = 1;
	bool		fraction = false;

	if (len > 0 && s[0] == '-')
		i = 1;
	for (; i < len; i++)
		if (!isdigit((unsigned char) s[i]))
			break;
	if (i == len)
		return 0;				/* epoch number */
	for (i = 0; i < len; i++)
		if (s[i] == 'T' || s[i] == ' ')
		{
			tpos = i;
			break;
		}
	if (tpos < 0)
		return MS_PER_DAY - 1;
	for (i = tpos + 1; i < len; i++)
	{
		char		c = s[i];

		if (c == ':')
			fields++;
		else if (c == '.' || c == ',')
			fraction = true;
		else if (c == 'Z' || c == '+' || c == '-')
			break;
	}
	if (fraction)
		return 0;
	if (fields == 1)
		return MS_PER_HOUR - 1;
	if (fields == 2)
		return MS_PER_MINUTE - 1;
	return MS_PER_SECOND - 1;
}

bool
se_datemath_parse(const char *s, int len, const char *format, bool round_up,
				  int64 now_millis, int64 *millis, SeError *err)
{
	return se_datemath_parse_tz(s, len, format, round_up, now_millis, NULL,
								millis, err);
}

bool
se_datemath_parse_tz(const char *s, int len, const char *format, bool round_up,
					 int64 now_millis, const SeTimeZone *tz, int64 *millis,
					 SeError *err)
{
	int64		t;
	const char *math;
	const char *end = s + len;

	/* t is local wall time in tz from here to the end */
	if (len >= 3 && strncmp(s, "now", 3) == 0)
	{
		t = se_tz_to_local(tz, now_millis);
		math = s + 3;
	}
	else
	{
		const char *sep = NULL;
		int			i;
		int			dlen;

		for (i = 0; i + 1 < len; i++)
			if (s[i] == '|' && s[i + 1] == '|')
			{
				sep = s + i;
				break;
			}
		dlen = sep ? (int) (sep - s) : len;
		if (!se_date_parse(s, dlen, format, &t, err))
			return false;
		if (se_tz_date_has_zone(s, dlen))
			t = se_tz_to_local(tz, t);
		math = sep ? sep + 2 : end;
		if (round_up && math == end)
			t += missing_time_fill(s, dlen);
	}
	while (math < end)
	{
		char		op = *math++;

		if (op == '/')
		{
			char		unit;

			if (math >= end || !valid_unit(*math))
				goto bad;
			unit = *math++;
			t = round_down(t, unit);
			if (round_up)
			{
				if (!add_units(t, 1, unit, &t))
					goto overflow;
				t--;
			}
		}
		else if (op == '+' || op == '-')
		{
			int64		n = 0;
			bool		digits = false;
			char		unit;

			while (math < end && isdigit((unsigned char) *math))
			{
				if (n > INT64CONST(100000000))
					goto bad;
				n = n * 10 + (*math++ - '0');
				digits = true;
			}
			if (!digits)
				n = 1;
			if (math >= end || !valid_unit(*math))
				goto bad;
			unit = *math++;
			if (!add_units(t, op == '-' ? -n : n, unit, &t))
				goto overflow;
		}
		else
			goto bad;
	}
	*millis = se_tz_is_utc(tz) ? t : se_tz_local_to_utc(tz, t);
	return true;

bad:
	se_error_set(err, 400, "parse_exception",
				 "failed to parse date field [%.*s]: invalid date math", len, s);
	return false;

overflow:
	se_error_set(err, 400, "parse_exception",
				 "failed to parse date field [%.*s]: the date math result is out of range (long overflow)",
				 len, s);
	return false;
}
