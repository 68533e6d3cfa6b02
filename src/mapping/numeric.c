/*-------------------------------------------------------------------------
 *
 * numeric.c
 *	  Values of numeric-like fields: parsing JSON values as ES does, the
 *	  sortable int64 encodings and their textual forms.
 *
 * Every numeric-like value (long, integer, short, byte, double, float, date,
 * boolean) is indexed through one int64 whose signed order is the value
 * order: integers, epoch millis and 0/1 as they are, doubles and floats
 * through Lucene's doubleToSortableLong.  Integer parsing works on the
 * decimal text itself (not through a double) so that every int64 is exact
 * and out-of-range values are detected, as ES's BigDecimal path does.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <float.h>
#include <math.h>

#include "common/shortest_dec.h"
#include "mapping/mapping.h"

#define SIGN_BIT	UINT64CONST(0x8000000000000000)
#define MAGNITUDE	INT64CONST(0x7fffffffffffffff)

typedef enum DecResult
{
	DEC_OK,
	DEC_SYNTAX,
	DEC_RANGE
} DecResult;

/* 8 bytes big-endian with the sign bit flipped: byte order = value order. */
void
se_sortable_term(int64 v, char out[8])
{
	uint64		u = ((uint64) v) ^ SIGN_BIT;
	int			i;

	for (i = 0; i < 8; i++)
		out[i] = (char) (u >> (56 - 8 * i));
}

/* Lucene NumericUtils.doubleToSortableLong (NaN canonicalised as Java does). */
int64
se_double_to_sortable(double d)
{
	int64		bits;

	if (isnan(d))
		bits = INT64CONST(0x7ff8000000000000);
	else
		memcpy(&bits, &d, sizeof(bits));
	return bits ^ (bits < 0 ? MAGNITUDE : 0);
}

double
se_sortable_to_double(int64 v)
{
	int64		bits = v ^ (v < 0 ? MAGNITUDE : 0);
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

/*
 * Parse s[0..len) as a Java BigDecimal literal ([+-]digits[.digits][e[+-]n])
 * and truncate it toward zero to an int64; *fraction tells whether non-zero
 * digits were dropped.  Exact for any number of digits.
 */
static DecResult
decimal_to_int64(const char *s, int len, int64 *out, bool *fraction)
{
	const char *p = s;
	const char *end = s + len;
	bool		neg = false;
	const char *ip;
	int			nint;
	const char *fp = NULL;
	int			nfrac = 0;
	int64		exp = 0;
	int64		point;
	int			ndigits;
	uint64		acc = 0;
	uint64		limit;
	int64		i;

	*fraction = false;
	if (p < end && (*p == '+' || *p == '-'))
		neg = (*p++ == '-');
	ip = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	nint = p - ip;
	if (p < end && *p == '.')
	{
		p++;
		fp = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		nfrac = p - fp;
	}
	if (nint + nfrac == 0)
		return DEC_SYNTAX;
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		bool		eneg = false;
		const char *ep;

		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = (*p++ == '-');
		ep = p;
		while (p < end && *p >= '0' && *p <= '9')
		{
			/* clamp: beyond this every non-zero value over- or underflows */
			if (exp < 100000000)
				exp = exp * 10 + (*p - '0');
			p++;
		}
		if (p == ep)
			return DEC_SYNTAX;
		if (eneg)
			exp = -exp;
	}
	if (p != end)
		return DEC_SYNTAX;

	/* digits D = int digits then fraction digits; the point sits after "point" of them */
	ndigits = nint + nfrac;
	point = nint + exp;
	limit = neg ? SIGN_BIT : (uint64) PG_INT64_MAX;
	for (i = 0; i < point; i++)
	{
		int			d;

		if (i < ndigits)
			d = (i < nint ? ip[i] : fp[i - nint]) - '0';
		else if (acc == 0)
			break;				/* only zeros follow */
		else
			d = 0;
		if (acc > (limit - d) / 10)
			return DEC_RANGE;
		acc = acc * 10 + d;
	}
	for (i = (point > 0 ? point : 0); i < ndigits; i++)
	{
		char		c = (i < nint ? ip[i] : fp[i - nint]);

		if (c != '0')
		{
			*fraction = true;
			break;
		}
	}
	if (neg)
		*out = (acc == SIGN_BIT) ? PG_INT64_MIN : -(int64) acc;
	else
		*out = (int64) acc;
	return DEC_OK;
}

/* Java Long.parseLong syntax: [+-]digits, within int64. */
bool
se_number_text_is_long(const char *s, int len)
{
	int64		v;
	bool		frac;
	int			i;
	int			start = (len > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;

	if (len <= start)
		return false;
	for (i = start; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return decimal_to_int64(s, len, &v, &frac) == DEC_OK;
}

/*
 * Java Double.parseDouble syntax (decimal forms, NaN, Infinity, optional
 * f/d suffix, surrounding white space); hexadecimal floats are not taken.
 * On success [*start, *stop) is the trimmed text without the suffix.
 */
static bool
java_double_syntax(const char *s, int len, int *start, int *stop)
{
	int			b = 0;
	int			e = len;
	int			p;
	int			ndig = 0;

	while (b < e && (unsigned char) s[b] <= ' ')
		b++;
	while (e > b && (unsigned char) s[e - 1] <= ' ')
		e--;
	*start = b;
	*stop = e;
	p = b;
	if (p < e && (s[p] == '+' || s[p] == '-'))
		p++;
	if (e - p == 3 && memcmp(s + p, "NaN", 3) == 0)
		return true;
	if (e - p == 8 && memcmp(s + p, "Infinity", 8) == 0)
		return true;
	if (e > p && (s[e - 1] == 'f' || s[e - 1] == 'F' ||
				  s[e - 1] == 'd' || s[e - 1] == 'D'))
		*stop = --e;
	while (p < e && s[p] >= '0' && s[p] <= '9')
		p++, ndig++;
	if (p < e && s[p] == '.')
	{
		p++;
		while (p < e && s[p] >= '0' && s[p] <= '9')
			p++, ndig++;
	}
	if (ndig == 0)
		return false;
	if (p < e && (s[p] == 'e' || s[p] == 'E'))
	{
		int			nexp = 0;

		p++;
		if (p < e && (s[p] == '+' || s[p] == '-'))
			p++;
		while (p < e && s[p] >= '0' && s[p] <= '9')
			p++, nexp++;
		if (nexp == 0)
			return false;
	}
	return p == e;
}

bool
se_number_text_is_double(const char *s, int len)
{
	int			b,
				e;

	return java_double_syntax(s, len, &b, &e);
}

/* Double.parseDouble of a string value; false on a syntax error. */
static bool
parse_java_double(const char *s, int len, double *out)
{
	int			b,
				e;
	char	   *copy;
	const char *p;
	bool		neg;

	if (!java_double_syntax(s, len, &b, &e))
		return false;
	p = s + b;
	neg = (*p == '-');
	if (*p == '+' || *p == '-')
		p++;
	if (strncmp(p, "NaN", 3) == 0 && s + e - p == 3)
		*out = NAN;
	else if (strncmp(p, "Infinity", 8) == 0 && s + e - p == 8)
		*out = neg ? -INFINITY : INFINITY;
	else
	{
		copy = pnstrdup(s + b, e - b);
		*out = strtod(copy, NULL);
		pfree(copy);
	}
	return true;
}

static void append_java_double(StringInfo out, double d, bool is_float);

void
se_append_java_double(StringInfo out, double d)
{
	append_java_double(out, d, false);
}

/* Java's Double.toString / Float.toString of shortest round-trip digits. */
static void
append_java_double(StringInfo out, double d, bool is_float)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 1];
	char		digits[DOUBLE_SHORTEST_DECIMAL_LEN];
	int			nd = 0;
	int			intlen = 0;
	int			k = 0;
	int			e = 0;			/* value = d1.d2d3... * 10^e */
	bool		neg;
	const char *p;
	int			i;

	if (isnan(d))
	{
		appendStringInfoString(out, "NaN");
		return;
	}
	if (isinf(d))
	{
		appendStringInfoString(out, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (is_float)
		float_to_shortest_decimal_buf((float) d, buf);
	else
		double_to_shortest_decimal_buf(d, buf);

	/* Ryu prints "123.45", "0.00012" or "1.2345e+17"; take digits and exponent */
	p = buf;
	neg = (*p == '-');
	if (neg)
		p++;
	while (p[intlen] >= '0' && p[intlen] <= '9')
		intlen++;
	for (; *p && *p != 'e'; p++)
	{
		if (*p == '.')
			continue;
		if (nd == 0 && *p == '0')
		{
			k++;
			continue;
		}
		if (nd == 0)
			e = intlen - 1 - k;
		digits[nd++] = *p;
		k++;
	}
	if (nd == 0)
	{
		appendStringInfoString(out, neg ? "-0.0" : "0.0");
		return;
	}
	if (*p == 'e')
		e += atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (nd == 1)
	{
		char		two[32];

		/*
		 * Java always prints two significant digits and picks the two-digit
		 * decimal nearest the value (4.9E-324, not 5.0E-324); when one digit
		 * round-trips, the correctly rounded two-digit form does too.
		 */
		snprintf(two, sizeof(two), "%.1e", fabs(d));
		digits[0] = two[0];
		digits[1] = two[2];
		nd = digits[1] == '0' ? 1 : 2;
		e = atoi(two + 4);
	}

	if (neg)
		appendStringInfoChar(out, '-');
	if (e >= -3 && e < 7)
	{
		/* plain notation, at least one digit after the point */
		if (e < 0)
		{
			appendStringInfoString(out, "0.");
			for (i = 0; i < -e - 1; i++)
				appendStringInfoChar(out, '0');
			appendBinaryStringInfo(out, digits, nd);
		}
		else
		{
			for (i = 0; i <= e; i++)
				appendStringInfoChar(out, i < nd ? digits[i] : '0');
			appendStringInfoChar(out, '.');
			if (nd > e + 1)
				appendBinaryStringInfo(out, digits + e + 1, nd - e - 1);
			else
				appendStringInfoChar(out, '0');
		}
	}
	else
	{
		appendStringInfoChar(out, digits[0]);
		appendStringInfoChar(out, '.');
		if (nd > 1)
			appendBinaryStringInfo(out, digits + 1, nd - 1);
		else
			appendStringInfoChar(out, '0');
		appendStringInfo(out, "E%d", e);
	}
}

static const char *
java_class_name(SeFieldType t)
{
	switch (t)
	{
		case SE_FT_LONG:
			return "Long";
		case SE_FT_INTEGER:
			return "Integer";
		case SE_FT_SHORT:
			return "Short";
		case SE_FT_BYTE:
			return "Byte";
		case SE_FT_DOUBLE:
			return "Double";
		case SE_FT_FLOAT:
			return "Float";
		default:
			return "Value";
	}
}

/* Range of an integer type, with ES's "for a/an <type>" wording. */
static void
integer_range(SeFieldType t, int64 *lo, int64 *hi, const char **what)
{
	switch (t)
	{
		case SE_FT_INTEGER:
			*lo = PG_INT32_MIN;
			*hi = PG_INT32_MAX;
			*what = "an integer";
			break;
		case SE_FT_SHORT:
			*lo = PG_INT16_MIN;
			*hi = PG_INT16_MAX;
			*what = "a short";
			break;
		case SE_FT_BYTE:
			*lo = PG_INT8_MIN;
			*hi = PG_INT8_MAX;
			*what = "a byte";
			break;
		default:
			*lo = PG_INT64_MIN;
			*hi = PG_INT64_MAX;
			*what = "a long";
			break;
	}
}

static bool
parse_integer(const SeMappedField *f, const SeJson *v, bool allow_strings,
			  bool truncate, int64 *out, SeError *err)
{
	const char *text;
	int			len;
	int64		val;
	int64		lo,
				hi;
	const char *what;
	bool		fraction = false;

	integer_range(f->type, &lo, &hi, &what);
	if (v->type == SE_JSON_STRING)
	{
		if (!allow_strings)
		{
			se_error_set(err, 400, "mapper_parsing_exception",
						 "%s value passed as String", java_class_name(f->type));
			return false;
		}
		text = v->u.s.str;
		len = v->u.s.len;
	}
	else if (v->type == SE_JSON_NUMBER)
	{
		if (v->u.n.is_int)
		{
			val = v->u.n.i;
			goto range;
		}
		text = v->u.n.text;
		len = v->u.n.len;
	}
	else
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "Current token (%s) not numeric, can not use numeric value accessors",
					 v->type == SE_JSON_TRUE ? "VALUE_TRUE" :
					 v->type == SE_JSON_FALSE ? "VALUE_FALSE" :
					 v->type == SE_JSON_NULL ? "VALUE_NULL" :
					 v->type == SE_JSON_ARRAY ? "START_ARRAY" : "START_OBJECT");
		return false;
	}

	switch (decimal_to_int64(text, len, &val, &fraction))
	{
		case DEC_SYNTAX:
			se_error_set(err, 400, "mapper_parsing_exception",
						 "For input string: \"%.*s\"", len, text);
			return false;
		case DEC_RANGE:
			se_error_set(err, 400, "mapper_parsing_exception",
						 "Value [%.*s] is out of range for %s", len, text, what);
			return false;
		case DEC_OK:
			break;
	}
	if (fraction && !truncate)
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "Value [%.*s] has a decimal part", len, text);
		return false;
	}

range:
	if (val < lo || val > hi)
	{
		if (v->type == SE_JSON_STRING || v->type == SE_JSON_NUMBER)
		{
			const char *t = v->type == SE_JSON_STRING ? v->u.s.str : v->u.n.text;
			int			l = v->type == SE_JSON_STRING ? v->u.s.len : v->u.n.len;

			se_error_set(err, 400, "mapper_parsing_exception",
						 "Value [%.*s] is out of range for %s", l, t, what);
		}
		return false;
	}
	*out = val;
	return true;
}

static bool
parse_floating(const SeMappedField *f, const SeJson *v, bool allow_strings,
			   int64 *out, SeError *err)
{
	double		d;
	const char *tname = f->type == SE_FT_FLOAT ? "float" : "double";

	if (v->type == SE_JSON_NUMBER)
		d = v->u.n.d;
	else if (v->type == SE_JSON_STRING)
	{
		if (!allow_strings)
		{
			se_error_set(err, 400, "mapper_parsing_exception",
						 "%s value passed as String", java_class_name(f->type));
			return false;
		}
		if (!parse_java_double(v->u.s.str, v->u.s.len, &d))
		{
			se_error_set(err, 400, "mapper_parsing_exception",
						 "For input string: \"%.*s\"", v->u.s.len, v->u.s.str);
			return false;
		}
	}
	else
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "Current token (%s) not numeric, can not use numeric value accessors",
					 v->type == SE_JSON_TRUE ? "VALUE_TRUE" :
					 v->type == SE_JSON_FALSE ? "VALUE_FALSE" :
					 v->type == SE_JSON_NULL ? "VALUE_NULL" :
					 v->type == SE_JSON_ARRAY ? "START_ARRAY" : "START_OBJECT");
		return false;
	}
	if (f->type == SE_FT_FLOAT && !isnan(d))
	{
		float		fl;

		/*
		 * Round as Java's (float) cast does, without the C cast's undefined
		 * behaviour beyond FLT_MAX: from the midpoint between FLT_MAX and
		 * 2^128 on, the value rounds to infinity.
		 */
		if (fabs(d) <= FLT_MAX)
			fl = (float) d;
		else if (fabs(d) < ldexp(2.0 - ldexp(1.0, -24), 127))
			fl = d > 0 ? FLT_MAX : -FLT_MAX;
		else
			fl = d > 0 ? INFINITY : -INFINITY;
		d = (double) fl;
	}
	if (isnan(d) || isinf(d))
	{
		StringInfoData s;

		initStringInfo(&s);
		append_java_double(&s, d, false);
		se_error_set(err, 400, "mapper_parsing_exception",
					 "[%s] supports only finite values, but got [%s]", tname, s.data);
		pfree(s.data);
		return false;
	}
	*out = se_double_to_sortable(d);
	return true;
}

static bool
parse_boolean(const SeJson *v, int64 *out, SeError *err)
{
	StringInfoData s;

	switch (v->type)
	{
		case SE_JSON_TRUE:
			*out = 1;
			return true;
		case SE_JSON_FALSE:
			*out = 0;
			return true;
		case SE_JSON_STRING:
			/* ES 8: "" is false, as Booleans.parseBoolean's default */
			if (v->u.s.len == 0 || (v->u.s.len == 5 && memcmp(v->u.s.str, "false", 5) == 0))
			{
				*out = 0;
				return true;
			}
			if (v->u.s.len == 4 && memcmp(v->u.s.str, "true", 4) == 0)
			{
				*out = 1;
				return true;
			}
			break;
		default:
			break;
	}
	initStringInfo(&s);
	se_mapping_preview(v, &s);
	se_error_set(err, 400, "mapper_parsing_exception",
				 "Failed to parse value [%s] as only [true] or [false] are allowed.",
				 s.data);
	pfree(s.data);
	return false;
}

static bool
parse_date_value(const SeMappedField *f, const SeJson *v, int64 *out,
				 SeError *err)
{
	const char *fmt = f->format ? f->format : SE_DATE_DEFAULT_FORMAT;
	SeError		inner;
	bool		ok;

	se_error_init(&inner);
	if (v->type == SE_JSON_STRING)
		ok = se_date_parse(v->u.s.str, v->u.s.len, fmt, out, &inner);
	else if (v->type == SE_JSON_NUMBER)
		ok = se_date_parse(v->u.n.text, v->u.n.len, fmt, out, &inner);	/* ES parses the number's text */
	else
	{
		StringInfoData s;

		initStringInfo(&s);
		se_mapping_preview(v, &s);
		se_error_set(err, 400, "mapper_parsing_exception",
					 "failed to parse date field [%s] with format [%s]", s.data, fmt);
		pfree(s.data);
		return false;
	}
	if (!ok)
	{
		se_error_set(err, 400, "mapper_parsing_exception", "%s", inner.reason);
		pfree(inner.reason);
		return false;
	}
	return true;
}

/*
 * Sortable int64 of a value for a numeric-like field.  allow_strings and
 * truncate are ES's "coerce" for documents (both true by default); queries
 * use allow_strings = true, truncate = false.
 */
bool
se_field_parse_value(const SeMappedField *f, const SeJson *v,
					 bool allow_strings, bool truncate, int64 *out,
					 SeError *err)
{
	if (v == NULL || v->type == SE_JSON_NULL)
	{
		se_error_set(err, 400, "mapper_parsing_exception",
					 "value of field [%s] must not be null", f->path);
		return false;
	}
	switch (f->type)
	{
		case SE_FT_LONG:
		case SE_FT_INTEGER:
		case SE_FT_SHORT:
		case SE_FT_BYTE:
			return parse_integer(f, v, allow_strings, truncate, out, err);
		case SE_FT_DOUBLE:
		case SE_FT_FLOAT:
			return parse_floating(f, v, allow_strings, out, err);
		case SE_FT_BOOLEAN:
			return parse_boolean(v, out, err);
		case SE_FT_DATE:
			return parse_date_value(f, v, out, err);
		default:
			se_error_set(err, 400, "illegal_argument_exception",
						 "field [%s] of type [%s] is not numeric",
						 f->path, se_field_type_name(f->type));
			return false;
	}
}

bool
se_field_sortable_value(const SeMappedField *f, const SeJson *v, int64 *out,
						SeError *err)
{
	return se_field_parse_value(f, v, true, false, out, err);
}

void
se_field_write_sortable(const SeMappedField *f, int64 v, StringInfo out)
{
	switch (f->type)
	{
		case SE_FT_DOUBLE:
			append_java_double(out, se_sortable_to_double(v), false);
			break;
		case SE_FT_FLOAT:
			append_java_double(out, se_sortable_to_double(v), true);
			break;
		default:
			appendStringInfo(out, INT64_FORMAT, v);
			break;
	}
}

void
se_field_format_sortable(const SeMappedField *f, int64 v, StringInfo out)
{
	switch (f->type)
	{
		case SE_FT_DATE:
			se_date_format_with(v, f->format, out);
			break;
		case SE_FT_BOOLEAN:
			appendStringInfoString(out, v != 0 ? "true" : "false");
			break;
		default:
			se_field_write_sortable(f, v, out);
			break;
	}
}
