/*-------------------------------------------------------------------------
 *
 * decimal_format.c
 *	  The numeric "format" of docvalue_fields and fields: the subset of
 *	  Java's DecimalFormat patterns ES users write ("0.00", "#.##",
 *	  "#,##0", "000").
 *
 * A pattern is integer digits ('0' always shown, '#' only when needed, ','
 * marking the grouping size), optionally '.', and fraction digits ('0'
 * always shown, '#' up to that many).  Rounding is DecimalFormat's
 * HALF_EVEN on the double's exact value (printf's rounding).  Prefixes,
 * suffixes, exponents and percent are not supported: such a pattern is
 * taken for a date format, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/search_int.h"

bool
se_decimal_format_valid(const char *p)
{
	bool		dot = false;
	bool		digit = false;

	if (p == NULL || *p == '\0')
		return false;
	for (; *p; p++)
	{
		if (*p == '0' || *p == '#')
			digit = true;
		else if (*p == '.' && !dot)
			dot = true;
		else if (*p == ',' && !dot)
			 /* grouping */ ;
		else
			return false;
	}
	return digit;
}

void
se_decimal_format(const char *pattern, double v, StringInfo out)
{
	int			int_min = 0,
				frac_min = 0,
				frac_max = 0,
				group = 0;
	bool		in_frac = false;
	int			since_comma = -1;
	const char *p;
	char		buf[400];
	char	   *dot;
	char	   *ip;
	int			ilen,
				flen,
				i;

	for (p = pattern; *p; p++)
	{
		if (*p == '.')
		{
			in_frac = true;
			continue;
		}
		if (*p == ',')
		{
			since_comma = 0;
			continue;
		}
		if (in_frac)
		{
			frac_max++;
			frac_min += *p == '0';
		}
		else
		{
			int_min += *p == '0';
			if (since_comma >= 0)
				since_comma++;
		}
	}
	group = since_comma > 0 ? since_comma : 0;
	if (isnan(v))
	{
		appendStringInfoString(out, "NaN");
		return;
	}
	if (isinf(v))
	{
		appendStringInfoString(out, v < 0 ? "-\u221E" : "\u221E");
		return;
	}
	snprintf(buf, sizeof(buf), "%.*f", frac_max, fabs(v));
	dot = strchr(buf, '.');
	flen = dot ? (int) strlen(dot + 1) : 0;
	if (dot)
		*dot = '\0';
	/* fraction: drop the optional trailing zeros */
	while (flen > frac_min && dot[flen] == '0')
		flen--;
	ip = buf;
	while (*ip == '0' && ip[1] != '\0')
		ip++;
	ilen = strlen(ip);
	if (ilen == 1 && ip[0] == '0' && int_min == 0)
		ilen = 0;				/* "#.##" writes .5 */
	/* as Java, a negative number that rounds to zero keeps its sign */
	if (v < 0)
		appendStringInfoChar(out, '-');
	/* integer digits, padded to int_min, grouped */
	{
		int			total = Max(ilen, int_min);

		for (i = 0; i < total; i++)
		{
			char		c = i < total - ilen ? '0' : ip[i - (total - ilen)];

			if (group > 0 && i > 0 && (total - i) % group == 0)
				appendStringInfoChar(out, ',');
			appendStringInfoChar(out, c);
		}
		if (total == 0 && flen == 0)
			appendStringInfoChar(out, '0');
	}
	if (flen > 0)
	{
		appendStringInfoChar(out, '.');
		appendBinaryStringInfo(out, dot + 1, flen);
	}
}
