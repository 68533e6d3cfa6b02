/*-------------------------------------------------------------------------
 *
 * date.c
 *	  ES date formats: parsing to epoch milliseconds and formatting back.
 *
 * A format is a "||"-separated list tried in order.  Each alternative is
 * either a named ES format (strict_date_optional_time, epoch_millis, ...) or
 * a java.time-style pattern.  Named formats are written in the same pattern
 * language (with one private letter, 'f', for a 1..9 digit fraction, and 'Z'
 * taking every offset form) so a single interpreter serves both; patterns
 * are interpreted in place, never compiled or allocated, because parsing runs
 * for every date value of every indexed document.
 *
 * Pattern letters: y/u year (yy = 2000-2099), M month (MMM/MMMM English
 * names), d day, H hour, h hour of am/pm with a (AM/PM), m minute, s second,
 * S fraction (as many digits as letters), X/x/Z offset (Z, +HH, +HHmm,
 * +HH:mm); 'quoted' literals, [optional sections]; other characters are
 * literals.  Strict forms take fixed widths, lenient (non-strict named)
 * forms 1..n digits.  Missing fields default to 1970-01-01T00:00:00Z.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "common/int.h"
#include "mapping/mapping.h"

#define MS_PER_DAY	INT64CONST(86400000)
#define MAX_ABS_YEAR	200000000	/* keeps epoch millis within int64 */

typedef enum FormatKind
{
	FMT_PATTERN,
	FMT_EPOCH_MILLIS,
	FMT_EPOCH_SECOND
} FormatKind;

typedef struct NamedFormat
{
	const char *name;
	FormatKind	kind;
	const char *pattern;		/* parse pattern (internal letters allowed) */
	bool		lenient;		/* non-strict: variable digit counts */
	const char *print;			/* print pattern when it differs */
} NamedFormat;

#define OPT_TIME "yyyy[-MM[-dd['T'[HH[:mm[:ss[.f][,f]]]][Z]]]]"
#define ISO_PRINT "yyyy-MM-dd'T'HH:mm:ss.fZ"

static const NamedFormat named_formats[] = {
	{"epoch_millis", FMT_EPOCH_MILLIS, NULL, false, NULL},
	{"epoch_second", FMT_EPOCH_SECOND, NULL, false, NULL},
	{"strict_date_optional_time", FMT_PATTERN, OPT_TIME, false, ISO_PRINT},
	{"date_optional_time", FMT_PATTERN, OPT_TIME, true, ISO_PRINT},
	{"strict_date_optional_time_nanos", FMT_PATTERN, OPT_TIME, false, ISO_PRINT},
	{"strict_date", FMT_PATTERN, "yyyy-MM-dd", false, NULL},
	{"date", FMT_PATTERN, "yyyy-MM-dd", true, NULL},
	{"strict_year_month_day", FMT_PATTERN, "yyyy-MM-dd", false, NULL},
	{"year_month_day", FMT_PATTERN, "yyyy-MM-dd", true, NULL},
	{"strict_year_month", FMT_PATTERN, "yyyy-MM", false, NULL},
	{"year_month", FMT_PATTERN, "yyyy-MM", true, NULL},
	{"strict_year", FMT_PATTERN, "yyyy", false, NULL},
	{"year", FMT_PATTERN, "yyyy", true, NULL},
	{"strict_date_time", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.fZ", false, NULL},
	{"date_time", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.fZ", true, NULL},
	{"strict_date_time_no_millis", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ssZ", false, NULL},
	{"date_time_no_millis", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ssZ", true, NULL},
	{"strict_date_hour_minute_second_millis", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.f", false, NULL},
	{"date_hour_minute_second_millis", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.f", true, NULL},
	{"strict_date_hour_minute_second_fraction", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.f", false, NULL},
	{"date_hour_minute_second_fraction", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss.f", true, NULL},
	{"strict_date_hour_minute_second", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss", false, NULL},
	{"date_hour_minute_second", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm:ss", true, NULL},
	{"strict_date_hour_minute", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm", false, NULL},
	{"date_hour_minute", FMT_PATTERN, "yyyy-MM-dd'T'HH:mm", true, NULL},
	{"strict_date_hour", FMT_PATTERN, "yyyy-MM-dd'T'HH", false, NULL},
	{"date_hour", FMT_PATTERN, "yyyy-MM-dd'T'HH", true, NULL},
	{"basic_date", FMT_PATTERN, "yyyyMMdd", false, NULL},
	{"basic_date_time", FMT_PATTERN, "yyyyMMdd'T'HHmmss.fZ", false, NULL},
	{"basic_date_time_no_millis", FMT_PATTERN, "yyyyMMdd'T'HHmmssZ", false, NULL},
	{"strict_hour_minute_second", FMT_PATTERN, "HH:mm:ss", false, NULL},
	{"hour_minute_second", FMT_PATTERN, "HH:mm:ss", true, NULL},
	{"strict_hour_minute", FMT_PATTERN, "HH:mm", false, NULL},
	{"hour_minute", FMT_PATTERN, "HH:mm", true, NULL},
	{"strict_time", FMT_PATTERN, "HH:mm:ss.fZ", false, NULL},
	{"time", FMT_PATTERN, "HH:mm:ss.fZ", true, NULL},
	{"strict_time_no_millis", FMT_PATTERN, "HH:mm:ssZ", false, NULL},
	{"time_no_millis", FMT_PATTERN, "HH:mm:ssZ", true, NULL},
};

static const char *const month_names[12] = {
	"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"
};

/* Date-time fields gathered while matching. */
typedef struct DateFields
{
	int64		year;
	int			month;
	int			day;
	int			hour;
	int			minute;
	int			second;
	int			nanos;
	int			ampm;			/* -1 none, 0 AM, 1 PM */
	bool		hour12;			/* hour came from 'h' */
	int			offset;			/* seconds east of UTC */
} DateFields;

/* Input being matched against one pattern. */
typedef struct Matcher
{
	const char *pat;
	int			plen;
	const char *s;
	int			slen;
	bool		lenient;
	bool		internal;		/* named format: 'f' allowed */
} Matcher;

static void
fields_init(DateFields *df)
{
	df->year = 1970;
	df->month = 1;
	df->day = 1;
	df->hour = 0;
	df->minute = 0;
	df->second = 0;
	df->nanos = 0;
	df->ampm = -1;
	df->hour12 = false;
	df->offset = 0;
}

static const NamedFormat *
find_named(const char *name, int len)
{
	int			i;

	for (i = 0; i < lengthof(named_formats); i++)
		if ((int) strlen(named_formats[i].name) == len &&
			memcmp(named_formats[i].name, name, len) == 0)
			return &named_formats[i];
	return NULL;
}

static bool
is_leap(int64 y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
days_in_month(int64 y, int m)
{
	static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return (m == 2 && is_leap(y)) ? 29 : dim[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's method). */
static int64
days_from_civil(int64 y, int m, int d)
{
	int64		era;
	int64		yoe;
	int64		doy;
	int64		doe;

	y -= (m <= 2);
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64 z, int64 *y, int *m, int *d)
{
	int64		era;
	int64		doe;
	int64		yoe;
	int64		doy;
	int64		mp;

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

/* The proleptic Gregorian calendar's day numbers, for other modules. */
int64
se_days_from_civil(int64 y, int m, int d)
{
	return days_from_civil(y, m, d);
}

void
se_civil_from_days(int64 days, int64 *y, int *m, int *d)
{
	civil_from_days(days, y, m, d);
}

/* Split epoch millis into calendar fields (UTC). */
static void
millis_to_fields(int64 millis, DateFields *df)
{
	int64		days = millis / MS_PER_DAY;
	int64		ms = millis % MS_PER_DAY;

	if (ms < 0)
	{
		ms += MS_PER_DAY;
		days--;
	}
	fields_init(df);
	civil_from_days(days, &df->year, &df->month, &df->day);
	df->hour = (int) (ms / 3600000);
	df->minute = (int) (ms / 60000 % 60);
	df->second = (int) (ms / 1000 % 60);
	df->nanos = (int) (ms % 1000) * 1000000;
}

static bool
fields_to_millis(DateFields *df, int64 *out)
{
	int64		days;
	int64		ms;
	int			hour = df->hour;

	if (df->hour12)
	{
		if (hour < 1 || hour > 12)
			return false;
		hour %= 12;
		if (df->ampm == 1)
			hour += 12;
	}
	else if (df->ampm >= 0 && hour > 12)
		return false;
	if (df->year > MAX_ABS_YEAR || df->year < -MAX_ABS_YEAR)
		return false;
	if (df->month < 1 || df->month > 12)
		return false;
	if (df->day < 1 || df->day > days_in_month(df->year, df->month))
		return false;
	if (hour > 23 || df->minute > 59 || df->second > 59)
		return false;
	days = days_from_civil(df->year, df->month, df->day);
	ms = days * MS_PER_DAY +
		((int64) hour * 3600 + df->minute * 60 + df->second - df->offset) * 1000 +
		df->nanos / 1000000;
	*out = ms;
	return true;
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Read min..max digits at s[*si]; greedy. */
static bool
read_digits(const Matcher *mt, int *si, int min, int max, int64 *val, int *ndigits)
{
	int			n = 0;
	int64		v = 0;

	while (n < max && *si + n < mt->slen && is_digit(mt->s[*si + n]))
	{
		v = v * 10 + (mt->s[*si + n] - '0');
		n++;
	}
	if (n < min)
		return false;
	*si += n;
	*val = v;
	if (ndigits)
		*ndigits = n;
	return true;
}

static bool
ascii_prefix_ci(const char *s, int slen, const char *word, int wlen)
{
	int			i;

	if (slen < wlen)
		return false;
	for (i = 0; i < wlen; i++)
	{
		char		a = s[i];
		char		b = word[i];

		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (b >= 'A' && b <= 'Z')
			b += 'a' - 'A';
		if (a != b)
			return false;
	}
	return true;
}

/* Offset: Z, UTC/GMT/UT [offset], +HH, +HHmm, +HH:mm (and :ss). */
static bool
read_offset(const Matcher *mt, int *si, int *offset)
{
	const char *s = mt->s + *si;
	int			len = mt->slen - *si;
	int			p = 0;
	int			sign;
	int64		hh,
				mm = 0,
				ss = 0;
	int			tmp;

	if (len >= 1 && s[0] == 'Z')
	{
		*offset = 0;
		*si += 1;
		return true;
	}
	if (ascii_prefix_ci(s, len, "UTC", 3) || ascii_prefix_ci(s, len, "GMT", 3))
		p = 3;
	else if (ascii_prefix_ci(s, len, "UT", 2))
		p = 2;
	if (p > 0 && (p == len || (s[p] != '+' && s[p] != '-')))
	{
		*offset = 0;
		*si += p;
		return true;
	}
	if (p >= len || (s[p] != '+' && s[p] != '-'))
		return false;
	sign = s[p] == '-' ? -1 : 1;
	p++;
	tmp = *si + p;
	if (!read_digits(mt, &tmp, 2, 2, &hh, NULL))
		return false;
	if (tmp < mt->slen && mt->s[tmp] == ':')
	{
		tmp++;
		if (!read_digits(mt, &tmp, 2, 2, &mm, NULL))
			return false;
		if (tmp < mt->slen && mt->s[tmp] == ':')
		{
			tmp++;
			if (!read_digits(mt, &tmp, 2, 2, &ss, NULL))
				return false;
		}
	}
	else if (tmp + 1 < mt->slen && is_digit(mt->s[tmp]) && is_digit(mt->s[tmp + 1]))
	{
		if (!read_digits(mt, &tmp, 2, 2, &mm, NULL))
			return false;
	}
	if (hh > 18 || mm > 59 || ss > 59 || (hh == 18 && (mm > 0 || ss > 0)))
		return false;
	*offset = sign * (int) (hh * 3600 + mm * 60 + ss);
	*si = tmp;
	return true;
}

static bool
is_numeric_letter(char c, int count)
{
	switch (c)
	{
		case 'y':
		case 'u':
		case 'd':
		case 'H':
		case 'h':
		case 'm':
		case 's':
		case 'S':
		case 'f':
			return true;
		case 'M':
			return count < 3;
		default:
			return false;
	}
}

/* Letters of a run starting at pat[i]. */
static int
run_length(const char *pat, int plen, int i)
{
	int			n = 1;

	while (i + n < plen && pat[i + n] == pat[i])
		n++;
	return n;
}

/* Index of the ']' closing the section opened at pat[open], or -1. */
static int
section_end(const char *pat, int plen, int open)
{
	int			depth = 0;
	int			i;

	for (i = open; i < plen; i++)
	{
		if (pat[i] == '\'')
		{
			for (i++; i < plen && pat[i] != '\''; i++)
				;
			if (i >= plen)
				return -1;
		}
		else if (pat[i] == '[')
			depth++;
		else if (pat[i] == ']' && --depth == 0)
			return i;
	}
	return -1;
}

static bool match_seq(const Matcher *mt, int *pi, int *si, DateFields *df);

/* One letter run (count letters c) at the input position *si. */
static bool
match_letter(const Matcher *mt, char c, int count, bool adjacent, int *si,
			 DateFields *df)
{
	int64		v;
	int			nd;
	int			min,
				max;

	switch (c)
	{
		case 'y':
		case 'u':
			{
				bool		neg = false;

				if (count == 2 && !mt->lenient)
				{
					if (!read_digits(mt, si, 2, 2, &v, NULL))
						return false;
					df->year = 2000 + v;
					return true;
				}
				if (!adjacent && *si < mt->slen &&
					(mt->s[*si] == '-' || mt->s[*si] == '+') &&
					(count >= 4 || mt->lenient))
				{
					/* a sign allows more digits than the pattern width */
					neg = mt->s[*si] == '-';
					(*si)++;
					min = count;
					max = 9;
				}
				else if (mt->lenient && !adjacent)
				{
					min = 1;
					max = 9;
				}
				else if (adjacent || count >= 4)
					min = max = count;
				else
				{
					min = count;
					max = 9;
				}
				if (!read_digits(mt, si, min, max, &v, NULL))
					return false;
				df->year = neg ? -v : v;
				return true;
			}
		case 'M':
			if (count >= 3)
			{
				int			i;

				for (i = 0; i < 12; i++)
				{
					int			wlen = count == 3 ? 3 : (int) strlen(month_names[i]);

					if (ascii_prefix_ci(mt->s + *si, mt->slen - *si, month_names[i], wlen))
					{
						df->month = i + 1;
						*si += wlen;
						return true;
					}
				}
				return false;
			}
			/* FALLTHROUGH */
		case 'd':
		case 'H':
		case 'h':
		case 'm':
		case 's':
			if (adjacent)
				min = max = count;
			else if (mt->lenient || count == 1)
			{
				min = 1;
				max = 2;
			}
			else
				min = max = count;
			if (!read_digits(mt, si, min, max, &v, NULL))
				return false;
			if (c == 'M')
				df->month = (int) v;
			else if (c == 'd')
				df->day = (int) v;
			else if (c == 'H')
				df->hour = (int) v;
			else if (c == 'h')
			{
				df->hour = (int) v;
				df->hour12 = true;
			}
			else if (c == 'm')
				df->minute = (int) v;
			else
				df->second = (int) v;
			return true;
		case 'S':
		case 'f':
			if (c == 'f' || (mt->lenient && !adjacent))
			{
				min = 1;
				max = 9;
			}
			else
				min = max = count;
			if (max > 9 || !read_digits(mt, si, min, max, &v, &nd))
				return false;
			while (nd++ < 9)
				v *= 10;
			df->nanos = (int) v;
			return true;
		case 'a':
			if (ascii_prefix_ci(mt->s + *si, mt->slen - *si, "AM", 2))
				df->ampm = 0;
			else if (ascii_prefix_ci(mt->s + *si, mt->slen - *si, "PM", 2))
				df->ampm = 1;
			else
				return false;
			*si += 2;
			return true;
		case 'X':
		case 'x':
		case 'Z':
			return read_offset(mt, si, &df->offset);
		default:
			return false;
	}
}

/* Match pattern elements from *pi up to the end or a ']' (left unconsumed). */
static bool
match_seq(const Matcher *mt, int *pi, int *si, DateFields *df)
{
	while (*pi < mt->plen)
	{
		char		c = mt->pat[*pi];

		if (c == ']')
			return true;
		if (c == '[')
		{
			int			close = section_end(mt->pat, mt->plen, *pi);
			int			pi2 = *pi + 1;
			int			si2 = *si;
			DateFields	saved = *df;

			if (close < 0)
				return false;
			/* an optional section either matches whole or is skipped */
			if (match_seq(mt, &pi2, &si2, df) && pi2 == close)
				*si = si2;
			else
				*df = saved;
			*pi = close + 1;
			continue;
		}
		if (c == '\'')
		{
			int			j = *pi + 1;

			if (j < mt->plen && mt->pat[j] == '\'')
			{
				/* '' is a literal quote */
				if (*si >= mt->slen || mt->s[*si] != '\'')
					return false;
				(*si)++;
				*pi = j + 1;
				continue;
			}
			for (; j < mt->plen && mt->pat[j] != '\''; j++)
			{
				if (*si >= mt->slen || mt->s[*si] != mt->pat[j])
					return false;
				(*si)++;
			}
			if (j >= mt->plen)
				return false;
			*pi = j + 1;
			continue;
		}
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		{
			int			count = run_length(mt->pat, mt->plen, *pi);
			int			next = *pi + count;
			bool		adjacent;

			if (c == 'f' && !mt->internal)
				return false;
			adjacent = next < mt->plen && is_numeric_letter(c, count) &&
				is_numeric_letter(mt->pat[next], run_length(mt->pat, mt->plen, next));
			if (!match_letter(mt, c, count, adjacent, si, df))
				return false;
			*pi = next;
			continue;
		}
		if (*si >= mt->slen || mt->s[*si] != c)
			return false;
		(*si)++;
		(*pi)++;
	}
	return true;
}

static bool
parse_pattern(const char *pat, int plen, bool lenient, bool internal,
			  const char *s, int len, int64 *millis)
{
	Matcher		mt;
	DateFields	df;
	int			pi = 0;
	int			si = 0;

	mt.pat = pat;
	mt.plen = plen;
	mt.s = s;
	mt.slen = len;
	mt.lenient = lenient;
	mt.internal = internal;
	fields_init(&df);
	if (!match_seq(&mt, &pi, &si, &df) || pi != plen || si != len)
		return false;
	return fields_to_millis(&df, millis);
}

/*
 * epoch_millis / epoch_second: [-]digits[.digits].  The fraction is below
 * the unit; the result is floored to whole millis as Instant.toEpochMilli
 * does.
 */
static bool
parse_epoch(const char *s, int len, int64 unit_ms, int64 *millis)
{
	int			p = 0;
	bool		neg = false;
	int64		whole = 0;
	int64		frac_ns = 0;	/* the fraction, in nanoseconds */
	int			nd = 0;
	int64		result;

	if (p < len && s[p] == '-')
	{
		neg = true;
		p++;
	}
	while (p < len && is_digit(s[p]))
	{
		if (pg_mul_s64_overflow(whole, 10, &whole) ||
			pg_add_s64_overflow(whole, s[p] - '0', &whole))
			return false;
		p++;
		nd++;
	}
	if (nd == 0)
		return false;
	if (p < len && s[p] == '.')
	{
		int64		scale = unit_ms * 1000000;	/* nanos per unit */
		int			nf = 0;

		p++;
		while (p < len && is_digit(s[p]))
		{
			/* digits beyond nanosecond precision are dropped */
			scale /= 10;
			frac_ns += (s[p] - '0') * scale;
			p++;
			nf++;
		}
		if (nf == 0)
			return false;
	}
	if (p != len)
		return false;
	if (pg_mul_s64_overflow(whole, unit_ms, &result) ||
		pg_add_s64_overflow(result, frac_ns / 1000000, &result))
		return false;
	if (neg)
	{
		result = -result;
		if (frac_ns % 1000000 != 0)
			result -= 1;		/* floor below a whole milli */
	}
	*millis = result;
	return true;
}

static bool
parse_one(const char *alt, int altlen, const char *s, int len, int64 *millis)
{
	const NamedFormat *nf = find_named(alt, altlen);

	if (nf == NULL)
		return parse_pattern(alt, altlen, false, false, s, len, millis);
	switch (nf->kind)
	{
		case FMT_EPOCH_MILLIS:
			return parse_epoch(s, len, 1, millis);
		case FMT_EPOCH_SECOND:
			return parse_epoch(s, len, 1000, millis);
		case FMT_PATTERN:
			return parse_pattern(nf->pattern, strlen(nf->pattern), nf->lenient,
								 true, s, len, millis);
	}
	return false;
}

/* Next "||" alternative of format starting at *pos; false at the end. */
static bool
next_alternative(const char *format, int *pos, const char **alt, int *altlen)
{
	const char *start = format + *pos;
	const char *bar;

	if (*pos < 0)
		return false;
	bar = strstr(start, "||");
	*alt = start;
	if (bar == NULL)
	{
		*altlen = strlen(start);
		*pos = -1;
	}
	else
	{
		*altlen = bar - start;
		*pos += *altlen + 2;
	}
	return true;
}

bool
se_date_parse(const char *s, int len, const char *format, int64 *millis,
			  SeError *err)
{
	int			pos = 0;
	const char *alt;
	int			altlen;
	int64		dummy;

	if (format == NULL)
		format = SE_DATE_DEFAULT_FORMAT;
	if (millis == NULL)
		millis = &dummy;
	while (next_alternative(format, &pos, &alt, &altlen))
	{
		if (altlen > 0 && parse_one(alt, altlen, s, len, millis))
			return true;
	}
	se_error_set(err, 400, "parse_exception",
				 "failed to parse date field [%.*s] with format [%s]",
				 len > 1024 ? 1024 : len, s, format);
	return false;
}

/* java.time pattern letters this implementation does not interpret */
static const char java_unsupported_letters[] = "GDLQqYwWEecFKkAnNVzOp";

/* Check one user pattern; false with *why set. */
static bool
validate_pattern(const char *pat, int plen, char *bad, const char **why)
{
	int			i = 0;
	int			depth = 0;

	while (i < plen)
	{
		char		c = pat[i];

		if (c == '\'')
		{
			for (i++; i < plen && pat[i] != '\''; i++)
				;
			if (i >= plen)
			{
				*why = "Pattern ends with an incomplete string literal";
				return false;
			}
			i++;
			continue;
		}
		if (c == '[')
			depth++;
		else if (c == ']')
		{
			if (--depth < 0)
			{
				*why = "Pattern invalid as it contains ] without previous [";
				return false;
			}
		}
		else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		{
			int			n = run_length(pat, plen, i);

			*bad = c;
			if (strchr("yuMdHhmsSaXxZ", c) == NULL)
			{
				*why = strchr(java_unsupported_letters, c) ? "Unsupported pattern letter: " : "Unknown pattern letter: ";
				return false;
			}
			if ((c == 'S' && n > 9) || ((c == 'y' || c == 'u') && n > 9) ||
				(strchr("dHhms", c) && n > 2) || (c == 'M' && n > 4) ||
				(c == 'a' && n > 1) || (strchr("Xx", c) && n > 5) || (c == 'Z' && n > 5))
			{
				*why = "Too many pattern letters: ";
				return false;
			}
			i += n;
			continue;
		}
		else if (c == '{' || c == '}' || c == '#')
		{
			*bad = c;
			*why = "Pattern includes reserved character: ";
			return false;
		}
		i++;
	}
	if (depth != 0)
	{
		*bad = 0;
		*why = "Pattern has an unclosed optional section";
		return false;
	}
	return true;
}

bool
se_date_format_validate(const char *format, SeError *err)
{
	int			pos = 0;
	const char *alt;
	int			altlen;

	if (format == NULL)
		return true;
	if (*format == '\0')
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "Invalid format: []: empty format");
		return false;
	}
	while (next_alternative(format, &pos, &alt, &altlen))
	{
		char		bad = 0;
		const char *why = NULL;

		if (altlen == 0)
		{
			se_error_set(err, 400, "mapper_parsing_exception",
						 "Invalid format: [%s]: empty format alternative", format);
			return false;
		}
		if (find_named(alt, altlen))
			continue;
		if (!validate_pattern(alt, altlen, &bad, &why))
		{
			if (bad && why[strlen(why) - 1] == ' ')
				se_error_set(err, 400, "mapper_parsing_exception",
							 "Invalid format: [%s]: %s%c", format, why, bad);
			else
				se_error_set(err, 400, "mapper_parsing_exception",
							 "Invalid format: [%s]: %s", format, why);
			return false;
		}
	}
	return true;
}

static void
append_padded(StringInfo out, int64 v, int width)
{
	char		buf[32];
	int			n;

	n = snprintf(buf, sizeof(buf), INT64_FORMAT, v < 0 ? -v : v);
	if (v < 0)
		appendStringInfoChar(out, '-');
	while (n++ < width)
		appendStringInfoChar(out, '0');
	appendStringInfoString(out, buf);
}

static void
print_year(StringInfo out, int64 year, int count)
{
	if (count == 2)
	{
		int64		yy = year % 100;

		append_padded(out, yy < 0 ? yy + 100 : yy, 2);
	}
	else if (year > 9999 && count >= 4)
	{
		/* ISO / java.time EXCEEDS_PAD: a sign for years beyond the pad */
		appendStringInfoChar(out, '+');
		append_padded(out, year, count);
	}
	else
		append_padded(out, year, count);
}

/*
 * Print fields with a pattern; optional sections are printed whole.
 * internal: a named format's pattern ('f' fraction, 'Z' printed as "Z").
 */
static void
print_pattern(const char *pat, int plen, bool internal, const DateFields *df,
			  StringInfo out)
{
	int			i = 0;

	while (i < plen)
	{
		char		c = pat[i];
		int			n;

		if (c == '[' || c == ']')
		{
			i++;
			continue;
		}
		if (c == '\'')
		{
			if (i + 1 < plen && pat[i + 1] == '\'')
			{
				appendStringInfoChar(out, '\'');
				i += 2;
				continue;
			}
			for (i++; i < plen && pat[i] != '\''; i++)
				appendStringInfoChar(out, pat[i]);
			i++;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
		{
			appendStringInfoChar(out, c);
			i++;
			continue;
		}
		n = run_length(pat, plen, i);
		i += n;
		switch (c)
		{
			case 'y':
			case 'u':
				print_year(out, df->year, n);
				break;
			case 'M':
				if (n >= 4)
					appendStringInfoString(out, month_names[df->month - 1]);
				else if (n == 3)
					appendBinaryStringInfo(out, month_names[df->month - 1], 3);
				else
					append_padded(out, df->month, n);
				break;
			case 'd':
				append_padded(out, df->day, n);
				break;
			case 'H':
				append_padded(out, df->hour, n);
				break;
			case 'h':
				append_padded(out, df->hour % 12 == 0 ? 12 : df->hour % 12, n);
				break;
			case 'a':
				appendStringInfoString(out, df->hour < 12 ? "AM" : "PM");
				break;
			case 'm':
				append_padded(out, df->minute, n);
				break;
			case 's':
				append_padded(out, df->second, n);
				break;
			case 'f':
				append_padded(out, df->nanos / 1000000, 3);
				break;
			case 'S':
				{
					char		buf[16];

					snprintf(buf, sizeof(buf), "%09d", df->nanos);
					appendBinaryStringInfo(out, buf, n > 9 ? 9 : n);
					break;
				}
			case 'X':
				appendStringInfoString(out, "Z");
				break;
			case 'x':
				appendStringInfoString(out, n == 1 ? "+00" : n == 2 ? "+0000" : "+00:00");
				break;
			case 'Z':
				if (internal || n == 5)
					appendStringInfoString(out, "Z");
				else
					appendStringInfoString(out, n == 4 ? "GMT" : "+0000");
				break;
			default:
				break;
		}
	}
}

void
se_date_format(int64 millis, StringInfo out)
{
	DateFields	df;

	millis_to_fields(millis, &df);
	print_pattern(ISO_PRINT, strlen(ISO_PRINT), true, &df, out);
}

void
se_date_format_with(int64 millis, const char *format, StringInfo out)
{
	int			pos = 0;
	const char *alt;
	int			altlen;
	const NamedFormat *nf;
	DateFields	df;

	if (format == NULL || !next_alternative(format, &pos, &alt, &altlen) || altlen == 0)
	{
		se_date_format(millis, out);
		return;
	}
	nf = find_named(alt, altlen);
	if (nf && nf->kind == FMT_EPOCH_MILLIS)
	{
		appendStringInfo(out, INT64_FORMAT, millis);
		return;
	}
	if (nf && nf->kind == FMT_EPOCH_SECOND)
	{
		int64		sec = millis / 1000;

		if (millis % 1000 < 0)
			sec--;
		appendStringInfo(out, INT64_FORMAT, sec);
		return;
	}
	millis_to_fields(millis, &df);
	if (nf)
	{
		const char *p = nf->print ? nf->print : nf->pattern;

		print_pattern(p, strlen(p), true, &df, out);
	}
	else
		print_pattern(alt, altlen, false, &df, out);
}
