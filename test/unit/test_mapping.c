/* SOURCES: src/mapping/mapping.c src/mapping/docparse.c src/mapping/date.c src/mapping/numeric.c src/mapping/geo_point.c src/util/json.c src/util/error.c src/analysis/analysis.c src/analysis/porter.c src/analysis/standard_tokenizer.c src/analysis/unicode.c src/index/builder.c src/index/fileformat.c src/index/livedocs.c src/index/merge.c src/index/postings.c src/index/reader.c src/index/smallfloat.c src/index/writer.c */
/*-------------------------------------------------------------------------
 *
 * test_mapping.c
 *	  Unit tests for src/mapping: numeric encodings, dates, the mapping
 *	  model (JSON in/out, merge, lookup) and document parsing checked
 *	  through a real segment (builder -> serialize -> reader).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdlib.h>

#include "mapping/mapping.h"
#include "unit_test.h"

/* ---------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------
 */

static SeJson *
J(const char *text)
{
	SeError		err;
	SeJson	   *v;

	se_error_init(&err);
	v = se_json_parse(text, strlen(text), NULL, &err);
	if (v == NULL)
	{
		fprintf(stderr, "bad test JSON: %s: %s\n", text, err.reason);
		exit(2);
	}
	return v;
}

static SeMapping *
M(const char *json)
{
	SeError		err;
	SeMapping  *m;

	se_error_init(&err);
	m = se_mapping_from_json(J(json), NULL, &err);
	if (m == NULL)
	{
		fprintf(stderr, "bad test mapping: %s: %s\n", json, err.reason);
		exit(2);
	}
	return m;
}

static char *
to_json(const SeMapping *m)
{
	StringInfoData s;

	initStringInfo(&s);
	se_mapping_to_json(m, &s);
	return s.data;
}

/* from_json expected to fail: check type and reason substring. */
static void
mapping_error(const char *json, const SeMappingLimits *limits,
			  const char *type, const char *reason_part)
{
	SeError		err;
	SeMapping  *m;

	se_error_init(&err);
	m = se_mapping_from_json(J(json), limits, &err);
	UT_CHECK(m == NULL, "mapping %s should fail", json);
	UT_CHECK(err.type && strcmp(err.type, type) == 0 && err.status == 400,
			 "mapping %s: type %s, want %s", json, err.type ? err.type : "(none)", type);
	UT_CHECK(err.reason && strstr(err.reason, reason_part) != NULL,
			 "mapping %s: reason \"%s\", want \"%s\"", json,
			 err.reason ? err.reason : "(none)", reason_part);
}

static int64
sortable(const SeMappedField *f, const char *json, bool *ok, SeError *err)
{
	int64		v = 0;

	se_error_init(err);
	*ok = se_field_sortable_value(f, J(json), &v, err);
	return v;
}

static SeMappedField
field_of(SeFieldType t, const char *format)
{
	SeMappedField f;

	memset(&f, 0, sizeof(f));
	f.path = "f";
	f.type = t;
	f.format = (char *) format;
	f.coerce = true;
	return f;
}

static int
bytes_cmp(const char *a, const char *b)
{
	return memcmp(a, b, 8);
}

static int64
date_of(const char *s, const char *format, bool *ok)
{
	int64		ms = 0;
	SeError		err;

	se_error_init(&err);
	*ok = se_date_parse(s, strlen(s), format, &ms, &err);
	return ms;
}

#define DATE_OK(s, fmt, expect) \
	do { \
		bool ok_; \
		int64 v_ = date_of((s), (fmt), &ok_); \
		UT_CHECK(ok_ && v_ == (expect), "date %s with %s: ok=%d " INT64_FORMAT ", want " INT64_FORMAT, \
				 (s), (fmt) ? (fmt) : "(default)", ok_, v_, (int64) (expect)); \
	} while (0)

#define DATE_BAD(s, fmt) \
	do { \
		bool ok_; \
		(void) date_of((s), (fmt), &ok_); \
		UT_CHECK(!ok_, "date %s with %s should fail", (s), (fmt) ? (fmt) : "(default)"); \
	} while (0)

static char *
fmt_date(int64 ms)
{
	StringInfoData s;

	initStringInfo(&s);
	se_date_format(ms, &s);
	return s.data;
}

static char *
write_sortable(SeFieldType t, int64 v)
{
	SeMappedField f = field_of(t, NULL);
	StringInfoData s;

	initStringInfo(&s);
	se_field_write_sortable(&f, v, &s);
	return s.data;
}

/* ---------------------------------------------------------------------
 * Numeric encodings and values
 * ---------------------------------------------------------------------
 */

static void
test_sortable_term(void)
{
	int64		vals[] = {PG_INT64_MIN, PG_INT64_MIN + 1, -1000000, -256, -1, 0, 1, 255, 256, 1000000, PG_INT64_MAX};
	char		a[8],
				b[8];
	int			i;
	static const char zero[8] = {(char) 0x80, 0, 0, 0, 0, 0, 0, 0};
	static const char minus1[8] = {0x7f, (char) 0xff, (char) 0xff, (char) 0xff, (char) 0xff, (char) 0xff, (char) 0xff, (char) 0xff};
	static const char v258[8] = {(char) 0x80, 0, 0, 0, 0, 0, 1, 2};

	se_sortable_term(0, a);
	UT_CHECK(memcmp(a, zero, 8) == 0, "term of 0");
	se_sortable_term(-1, a);
	UT_CHECK(memcmp(a, minus1, 8) == 0, "term of -1");
	se_sortable_term(258, a);
	UT_CHECK(memcmp(a, v258, 8) == 0, "term of 258 is big-endian");
	for (i = 0; i + 1 < lengthof(vals); i++)
	{
		se_sortable_term(vals[i], a);
		se_sortable_term(vals[i + 1], b);
		UT_CHECK(bytes_cmp(a, b) < 0, "term order " INT64_FORMAT " < " INT64_FORMAT, vals[i], vals[i + 1]);
	}
}

static void
test_double_sortable(void)
{
	double		vals[] = {-INFINITY, -1e300, -1.5, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 1.5, 1e300, INFINITY};
	int			i;

	UT_CHECK(se_double_to_sortable(0.0) == 0, "0.0 -> 0");
	UT_CHECK(se_double_to_sortable(1.0) == INT64CONST(0x3ff0000000000000), "1.0 bits");
	/* Lucene: bits ^ ((bits >> 63) & 0x7fff...) for -1.0 = 0xbff0.. ^ 0x7fff.. */
	UT_CHECK(se_double_to_sortable(-1.0) == (int64) UINT64CONST(0xc00fffffffffffff), "-1.0 sortable");
	UT_CHECK(se_double_to_sortable(-0.0) == -1, "-0.0 sortable");
	UT_CHECK(se_double_to_sortable(NAN) == INT64CONST(0x7ff8000000000000), "NaN canonical");
	for (i = 0; i + 1 < lengthof(vals); i++)
		UT_CHECK(se_double_to_sortable(vals[i]) < se_double_to_sortable(vals[i + 1]),
				 "double order %g < %g", vals[i], vals[i + 1]);
	for (i = 0; i < lengthof(vals); i++)
	{
		double		back = se_sortable_to_double(se_double_to_sortable(vals[i]));

		UT_CHECK(memcmp(&back, &vals[i], sizeof(double)) == 0, "round trip %g", vals[i]);
	}
}

static void
test_field_values(void)
{
	SeMappedField lf = field_of(SE_FT_LONG, NULL);
	SeMappedField inf = field_of(SE_FT_INTEGER, NULL);
	SeMappedField sf = field_of(SE_FT_SHORT, NULL);
	SeMappedField bf = field_of(SE_FT_BYTE, NULL);
	SeMappedField df = field_of(SE_FT_DOUBLE, NULL);
	SeMappedField ff = field_of(SE_FT_FLOAT, NULL);
	SeMappedField boolf = field_of(SE_FT_BOOLEAN, NULL);
	SeMappedField datef = field_of(SE_FT_DATE, NULL);
	SeMappedField kwf = field_of(SE_FT_KEYWORD, NULL);
	SeError		err;
	bool		ok;
	int64		v;

	v = sortable(&lf, "42", &ok, &err);
	UT_CHECK(ok && v == 42, "long 42");
	v = sortable(&lf, "\"-17\"", &ok, &err);
	UT_CHECK(ok && v == -17, "long from string");
	v = sortable(&lf, "\"+17\"", &ok, &err);
	UT_CHECK(ok && v == 17, "long from +string");
	v = sortable(&lf, "9223372036854775807", &ok, &err);
	UT_CHECK(ok && v == PG_INT64_MAX, "long max");
	v = sortable(&lf, "\"-9223372036854775808\"", &ok, &err);
	UT_CHECK(ok && v == PG_INT64_MIN, "long min string");
	v = sortable(&lf, "1e3", &ok, &err);
	UT_CHECK(ok && v == 1000, "long 1e3");
	v = sortable(&lf, "\"2.50e1\"", &ok, &err);
	UT_CHECK(ok && v == 25, "long from 2.50e1");
	(void) sortable(&lf, "9223372036854775808", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "out of range for a long"), "long overflow: %s", err.reason);
	(void) sortable(&lf, "1.5", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "has a decimal part"), "query long 1.5: %s", err.reason);
	(void) sortable(&lf, "\"abc\"", &ok, &err);
	UT_CHECK(!ok && err.status == 400 && strstr(err.reason, "For input string: \"abc\""), "long abc: %s", err.reason);
	(void) sortable(&lf, "\" 1\"", &ok, &err);
	UT_CHECK(!ok, "long with space rejected");
	(void) sortable(&lf, "true", &ok, &err);
	UT_CHECK(!ok, "long from boolean rejected");
	(void) sortable(&lf, "1e100000000000", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "out of range"), "huge exponent: %s", err.reason);
	v = sortable(&lf, "1e-100000000000", &ok, &err);
	UT_CHECK(!ok, "tiny exponent has a decimal part");
	v = sortable(&lf, "0e999999999", &ok, &err);
	UT_CHECK(ok && v == 0, "zero with huge exponent");

	v = sortable(&inf, "2147483647", &ok, &err);
	UT_CHECK(ok && v == PG_INT32_MAX, "int max");
	(void) sortable(&inf, "2147483648", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "out of range for an integer"), "int overflow: %s", err.reason);
	(void) sortable(&sf, "32768", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "for a short"), "short overflow");
	v = sortable(&sf, "-32768", &ok, &err);
	UT_CHECK(ok && v == -32768, "short min");
	(void) sortable(&bf, "-129", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "for a byte"), "byte overflow");
	v = sortable(&bf, "127", &ok, &err);
	UT_CHECK(ok && v == 127, "byte max");

	v = sortable(&df, "1.5", &ok, &err);
	UT_CHECK(ok && v == se_double_to_sortable(1.5), "double 1.5");
	v = sortable(&df, "\" 2.5 \"", &ok, &err);
	UT_CHECK(ok && v == se_double_to_sortable(2.5), "double from padded string (Java trims)");
	v = sortable(&df, "\"1e2d\"", &ok, &err);
	UT_CHECK(ok && v == se_double_to_sortable(100.0), "double with d suffix");
	(void) sortable(&df, "\"NaN\"", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "[double] supports only finite values, but got [NaN]"), "NaN: %s", err.reason);
	(void) sortable(&df, "1e400", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "Infinity"), "1e400: %s", err.reason);
	v = sortable(&ff, "1.1", &ok, &err);
	UT_CHECK(ok && v == se_double_to_sortable((double) 1.1f), "float rounding");
	(void) sortable(&ff, "1e39", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "[float] supports only finite values"), "float overflow: %s", err.reason);
	v = sortable(&ff, "3.4028235e38", &ok, &err);
	UT_CHECK(ok && v == se_double_to_sortable((double) 3.4028235e38f), "float max");

	v = sortable(&boolf, "true", &ok, &err);
	UT_CHECK(ok && v == 1, "bool true");
	v = sortable(&boolf, "\"false\"", &ok, &err);
	UT_CHECK(ok && v == 0, "bool \"false\"");
	v = sortable(&boolf, "\"\"", &ok, &err);
	UT_CHECK(ok && v == 0, "bool empty string is false");
	(void) sortable(&boolf, "\"yes\"", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "Failed to parse value [yes] as only [true] or [false] are allowed."), "bool yes: %s", err.reason);
	(void) sortable(&boolf, "1", &ok, &err);
	UT_CHECK(!ok, "bool from number rejected");

	v = sortable(&datef, "\"2024-01-02T03:04:05Z\"", &ok, &err);
	UT_CHECK(ok && v == INT64CONST(1704164645000), "date string");
	v = sortable(&datef, "1704164645000", &ok, &err);
	UT_CHECK(ok && v == INT64CONST(1704164645000), "date epoch number");
	(void) sortable(&datef, "\"yesterday\"", &ok, &err);
	UT_CHECK(!ok && strstr(err.reason, "failed to parse date field [yesterday] with format [strict_date_optional_time||epoch_millis]"), "bad date: %s", err.reason);

	(void) sortable(&kwf, "\"x\"", &ok, &err);
	UT_CHECK(!ok && err.status == 400, "keyword is not numeric");

	UT_CHECK(se_number_text_is_long("-12", 3) && !se_number_text_is_long("1.0", 3) &&
			 !se_number_text_is_long("99999999999999999999", 20), "is_long");
	UT_CHECK(se_number_text_is_double("1.0", 3) && se_number_text_is_double("NaN", 3) &&
			 se_number_text_is_double("1e5", 3) && !se_number_text_is_double("2024-01-02", 10) &&
			 !se_number_text_is_double("e5", 2), "is_double");
}

static void
test_write_sortable(void)
{
	SeMappedField bf = field_of(SE_FT_BOOLEAN, NULL);
	SeMappedField datef = field_of(SE_FT_DATE, NULL);
	SeMappedField datef2 = field_of(SE_FT_DATE, "yyyy/MM/dd||epoch_millis");
	StringInfoData s;
	struct
	{
		double		d;
		const char *want;
	}			dcases[] = {
		{1.5, "1.5"}, {100.0, "100.0"}, {1e10, "1.0E10"}, {0.001, "0.001"},
		{0.0001, "1.0E-4"}, {-0.0, "-0.0"}, {0.0, "0.0"}, {1234567.0, "1234567.0"},
		{12345678.0, "1.2345678E7"}, {-2.5e-7, "-2.5E-7"}, {0.1, "0.1"},
		{123.456, "123.456"}, {1e21, "1.0E21"}, {5e-324, "4.9E-324"},
	};
	int			i;

	UT_CHECK(strcmp(write_sortable(SE_FT_LONG, -42), "-42") == 0, "long write");
	for (i = 0; i < lengthof(dcases); i++)
	{
		char	   *got = write_sortable(SE_FT_DOUBLE, se_double_to_sortable(dcases[i].d));

		UT_CHECK(strcmp(got, dcases[i].want) == 0, "double %g: got %s want %s", dcases[i].d, got, dcases[i].want);
	}
	UT_CHECK(strcmp(write_sortable(SE_FT_FLOAT, se_double_to_sortable((double) 1.1f)), "1.1") == 0,
			 "float 1.1 shortest: %s", write_sortable(SE_FT_FLOAT, se_double_to_sortable((double) 1.1f)));
	UT_CHECK(strcmp(write_sortable(SE_FT_DATE, 1704164645000), "1704164645000") == 0, "date sort value");
	UT_CHECK(strcmp(write_sortable(SE_FT_BOOLEAN, 1), "1") == 0, "boolean sort value");

	initStringInfo(&s);
	se_field_format_sortable(&bf, 0, &s);
	UT_CHECK(strcmp(s.data, "false") == 0, "bool as string");
	resetStringInfo(&s);
	se_field_format_sortable(&datef, INT64CONST(1704164645123), &s);
	UT_CHECK(strcmp(s.data, "2024-01-02T03:04:05.123Z") == 0, "date as string: %s", s.data);
	resetStringInfo(&s);
	se_field_format_sortable(&datef2, INT64CONST(1704164645123), &s);
	UT_CHECK(strcmp(s.data, "2024/01/02") == 0, "date in custom format: %s", s.data);
}

/* ---------------------------------------------------------------------
 * Dates
 * ---------------------------------------------------------------------
 */

static void
test_dates(void)
{
	StringInfoData s;
	SeError		err;
	int64		samples[] = {0, -1, 1, INT64CONST(1704164645123), INT64CONST(-62135596800000),
		INT64CONST(253402300799999), INT64CONST(253402300800000), INT64CONST(951782400000),
	INT64CONST(-2208988800001)};
	int			i;

	DATE_OK("2024-01-02", NULL, INT64CONST(1704153600000));
	DATE_OK("2024-01-02T03:04:05Z", NULL, INT64CONST(1704164645000));
	DATE_OK("2024-01-02T03:04:05.123Z", NULL, INT64CONST(1704164645123));
	DATE_OK("2024-01-02T03:04:05.1Z", NULL, INT64CONST(1704164645100));
	DATE_OK("2024-01-02T03:04:05.123456789Z", NULL, INT64CONST(1704164645123));
	DATE_OK("2024-01-02T03:04:05,5Z", NULL, INT64CONST(1704164645500));
	DATE_OK("2024-01-02T03:04:05+01:00", NULL, INT64CONST(1704161045000));
	DATE_OK("2024-01-02T03:04:05-0130", NULL, INT64CONST(1704170045000));
	DATE_OK("2024-01-02T03:04:05+01", NULL, INT64CONST(1704161045000));
	DATE_OK("2024-01-02T03:04", NULL, INT64CONST(1704164640000));
	DATE_OK("2024-01-02T03", NULL, INT64CONST(1704164400000));
	DATE_OK("2024-01-02T03:04:05", NULL, INT64CONST(1704164645000));
	DATE_OK("2024", NULL, INT64CONST(1704067200000));
	DATE_OK("2024-02", NULL, INT64CONST(1706745600000));
	DATE_OK("2024-02-29", NULL, INT64CONST(1709164800000));
	DATE_OK("1969-12-31T23:59:59.999Z", NULL, -1);
	DATE_OK("0001-01-01", NULL, INT64CONST(-62135596800000));
	DATE_BAD("2023-02-29", NULL);
	DATE_BAD("2024-13-01", NULL);
	DATE_BAD("2024-01-32", NULL);
	DATE_BAD("2024-01-02T24:00:00Z", NULL);
	DATE_BAD("2024-01-02 03:04:05", NULL);
	DATE_BAD("2024-1-2", NULL);
	DATE_BAD("2024-01-02T03:04:05+19:00", NULL);
	DATE_BAD("", NULL);
	DATE_BAD("2024-01-02Tx", NULL);
	DATE_OK("2024-1-2", "date_optional_time", INT64CONST(1704153600000));
	DATE_OK("2024-1-2T3:4:5Z", "date_optional_time", INT64CONST(1704164645000));
	DATE_BAD("2024-1-2", "strict_date_optional_time");

	/* epoch formats */
	DATE_OK("1704164645123", NULL, INT64CONST(1704164645123));
	DATE_OK("-1", NULL, -1);
	DATE_OK("-1.5", "epoch_millis", -2);
	DATE_OK("1.9", "epoch_millis", 1);
	DATE_OK("1704164645", "epoch_second", INT64CONST(1704164645000));
	DATE_OK("1.5", "epoch_second", 1500);
	DATE_OK("-1.5", "epoch_second", -1500);
	DATE_BAD("99999999999999999999", "epoch_millis");
	DATE_OK("9223372036854775", "epoch_second", INT64CONST(9223372036854775000));
	DATE_BAD("9223372036854776", "epoch_second");
	DATE_BAD("1e3", "epoch_millis");
	DATE_BAD("abc", "epoch_millis");
	DATE_BAD("-", "epoch_millis");

	/* named and explicit patterns */
	DATE_OK("2024-01-02", "strict_date", INT64CONST(1704153600000));
	DATE_BAD("2024-01-02T00:00:00Z", "strict_date");
	DATE_OK("2024-01-02 03:04:05", "yyyy-MM-dd HH:mm:ss", INT64CONST(1704164645000));
	DATE_OK("2024/01/02", "yyyy/MM/dd", INT64CONST(1704153600000));
	DATE_OK("02/01/2024", "dd/MM/yyyy", INT64CONST(1704153600000));
	DATE_OK("20240102", "basic_date", INT64CONST(1704153600000));
	DATE_OK("20240102030405", "yyyyMMddHHmmss", INT64CONST(1704164645000));
	DATE_OK("2024-01-02 03:04:05.123", "yyyy-MM-dd HH:mm:ss.SSS", INT64CONST(1704164645123));
	DATE_BAD("2024-01-02 03:04:05.12", "yyyy-MM-dd HH:mm:ss.SSS");
	DATE_OK("Jan 2, 2024", "MMM d, yyyy", INT64CONST(1704153600000));
	DATE_OK("2 January 2024", "d MMMM yyyy", INT64CONST(1704153600000));
	DATE_OK("2024-01-02 03:04 PM", "yyyy-MM-dd hh:mm a", INT64CONST(1704207840000));
	DATE_OK("2024-01-02 12:04 AM", "yyyy-MM-dd hh:mm a", INT64CONST(1704153840000));
	DATE_OK("2024-01-02T03:04:05Z", "yyyy-MM-dd'T'HH:mm:ssX", INT64CONST(1704164645000));
	DATE_OK("2024/01/02 03:04:05 +0100", "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z", INT64CONST(1704161045000));
	DATE_OK("2024/01/02 Z", "yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z", INT64CONST(1704153600000));
	DATE_OK("2024/01/02", "yyyy-MM-dd||yyyy/MM/dd||epoch_millis", INT64CONST(1704153600000));
	DATE_OK("5", "yyyy-MM-dd||yyyy/MM/dd||epoch_millis", 5);
	DATE_OK("2024-01-02", "yyyy-MM-dd[ HH:mm]", INT64CONST(1704153600000));
	DATE_OK("2024-01-02 03:04", "yyyy-MM-dd[ HH:mm]", INT64CONST(1704164640000));
	DATE_OK("24-01-02", "yy-MM-dd", INT64CONST(1704153600000));
	DATE_OK("2024-01-02T03:04:05.123Z", "strict_date_time", INT64CONST(1704164645123));
	DATE_BAD("2024-01-02T03:04:05Z", "strict_date_time");
	DATE_OK("2024-01-02T03:04:05Z", "strict_date_time_no_millis", INT64CONST(1704164645000));

	se_error_init(&err);
	UT_CHECK(!se_date_parse("nope", 4, "yyyy-MM-dd", NULL, &err) && err.status == 400 &&
			 strcmp(err.reason, "failed to parse date field [nope] with format [yyyy-MM-dd]") == 0,
			 "date error message: %s", err.reason);

	/* formatting */
	UT_CHECK(strcmp(fmt_date(INT64CONST(1704164645000)), "2024-01-02T03:04:05.000Z") == 0, "format: %s", fmt_date(INT64CONST(1704164645000)));
	UT_CHECK(strcmp(fmt_date(0), "1970-01-01T00:00:00.000Z") == 0, "format epoch");
	UT_CHECK(strcmp(fmt_date(-1), "1969-12-31T23:59:59.999Z") == 0, "format -1: %s", fmt_date(-1));
	UT_CHECK(strcmp(fmt_date(INT64CONST(253402300800000)), "+10000-01-01T00:00:00.000Z") == 0, "format year 10000: %s", fmt_date(INT64CONST(253402300800000)));
	UT_CHECK(strcmp(fmt_date(INT64CONST(-62167219200000)), "0000-01-01T00:00:00.000Z") == 0, "format year 0: %s", fmt_date(INT64CONST(-62167219200000)));
	UT_CHECK(strcmp(fmt_date(INT64CONST(-62198755200000)), "-0001-01-01T00:00:00.000Z") == 0, "format year -1: %s", fmt_date(INT64CONST(-62198755200000)));
	fmt_date(PG_INT64_MIN);		/* must not crash */
	fmt_date(PG_INT64_MAX);
	for (i = 0; i < lengthof(samples); i++)
	{
		char	   *txt = fmt_date(samples[i]);

		DATE_OK(txt, NULL, samples[i]);
	}
	initStringInfo(&s);
	se_date_format_with(INT64CONST(1704164645123), "yyyy/MM/dd HH:mm:ss||epoch_millis", &s);
	UT_CHECK(strcmp(s.data, "2024/01/02 03:04:05") == 0, "format_with pattern: %s", s.data);
	resetStringInfo(&s);
	se_date_format_with(INT64CONST(1704164645123), "epoch_millis", &s);
	UT_CHECK(strcmp(s.data, "1704164645123") == 0, "format_with epoch_millis");
	resetStringInfo(&s);
	se_date_format_with(-1, "epoch_second", &s);
	UT_CHECK(strcmp(s.data, "-1") == 0, "format_with epoch_second floors: %s", s.data);
	resetStringInfo(&s);
	se_date_format_with(INT64CONST(1704164645123), "strict_date", &s);
	UT_CHECK(strcmp(s.data, "2024-01-02") == 0, "format_with strict_date: %s", s.data);
	resetStringInfo(&s);
	se_date_format_with(INT64CONST(1704164645123), "MMM d yyyy h:mm a", &s);
	UT_CHECK(strcmp(s.data, "Jan 2 2024 3:04 AM") == 0, "format_with names: %s", s.data);

	/* format validation */
	se_error_init(&err);
	UT_CHECK(se_date_format_validate("yyyy-MM-dd HH:mm:ss||strict_date_optional_time||epoch_millis", &err), "valid formats");
	se_error_init(&err);
	UT_CHECK(!se_date_format_validate("yyyy-jj", &err) && strstr(err.reason, "Unknown pattern letter: j"), "bad letter: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_date_format_validate("YYYY-MM-dd", &err) && strstr(err.reason, "Unsupported pattern letter: Y"), "week year: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_date_format_validate("yyyy-MM-dd'T", &err) && err.type && strcmp(err.type, "mapper_parsing_exception") == 0, "open quote");
	se_error_init(&err);
	UT_CHECK(!se_date_format_validate("strict_date||", &err), "empty alternative");
	se_error_init(&err);
	UT_CHECK(!se_date_format_validate("yyyy[-MM", &err), "open section");
}

/* ---------------------------------------------------------------------
 * Mapping model
 * ---------------------------------------------------------------------
 */

static void
test_mapping_json(void)
{
	SeMapping  *m;
	const SeMappedField *f;
	char	   *out;
	SeIndexOptions io;
	bool		norms;
	SeDocValuesType dv;
	const char *example =
	"{\"properties\":{\"summary\":{\"type\":\"text\",\"analyzer\":\"english\",\"fields\":{\"keyword\":{\"type\":\"keyword\",\"ignore_above\":256}}}}}";
	SeMappingLimits lim;

	m = M(example);
	out = to_json(m);
	UT_CHECK(strcmp(out, example) == 0, "example round trip: %s", out);
	f = se_mapping_find(m, "summary");
	UT_CHECK(f && f->type == SE_FT_TEXT && f->analyzer == se_analyzer_lookup("english") &&
			 f->search_analyzer == f->analyzer && !f->is_multi_field && f->nmulti_fields == 1,
			 "summary field");
	f = se_mapping_find(m, "summary.keyword");
	UT_CHECK(f && f->type == SE_FT_KEYWORD && f->is_multi_field && f->ignore_above == 256 &&
			 f->doc_values && f->index, "summary.keyword field");
	UT_CHECK(se_mapping_find(m, "summary.k") == NULL && se_mapping_find(m, "") == NULL, "missing lookups");

	/* objects, dotted names, defaults not printed, params printed */
	m = M("{\"dynamic\":\"strict\",\"properties\":{"
		  "\"a.b\":{\"type\":\"long\",\"coerce\":false,\"null_value\":7},"
		  "\"a\":{\"dynamic\":true,\"properties\":{\"c\":{\"type\":\"keyword\",\"index\":false,\"null_value\":\"NA\"}}},"
		  "\"d\":{\"type\":\"date\",\"format\":\"yyyy/MM/dd||epoch_millis\",\"ignore_malformed\":true},"
		  "\"e\":{\"type\":\"date\"},"
		  "\"t\":{\"type\":\"text\",\"analyzer\":\"simple\",\"search_analyzer\":\"standard\",\"norms\":false,\"position_increment_gap\":10},"
		  "\"flag\":{\"type\":\"boolean\",\"doc_values\":false},"
		  "\"o\":{\"type\":\"object\",\"enabled\":false},"
		  "\"n\":{\"type\":\"double\"}, \"i\":{\"type\":\"integer\"}, \"s\":{\"type\":\"short\"}, \"by\":{\"type\":\"byte\"}, \"fl\":{\"type\":\"float\"}}}");
	out = to_json(m);
	UT_CHECK(strcmp(out,
					"{\"dynamic\":\"strict\",\"properties\":{"
					"\"a\":{\"dynamic\":\"true\",\"properties\":{\"b\":{\"type\":\"long\",\"coerce\":false,\"null_value\":7},"
					"\"c\":{\"type\":\"keyword\",\"index\":false,\"null_value\":\"NA\"}}},"
					"\"by\":{\"type\":\"byte\"},"
					"\"d\":{\"type\":\"date\",\"format\":\"yyyy/MM/dd||epoch_millis\",\"ignore_malformed\":true},"
					"\"e\":{\"type\":\"date\"},"
					"\"fl\":{\"type\":\"float\"},"
					"\"flag\":{\"type\":\"boolean\",\"doc_values\":false},"
					"\"i\":{\"type\":\"integer\"},"
					"\"n\":{\"type\":\"double\"},"
					"\"o\":{\"type\":\"object\",\"enabled\":false},"
					"\"s\":{\"type\":\"short\"},"
					"\"t\":{\"type\":\"text\",\"analyzer\":\"simple\",\"search_analyzer\":\"standard\",\"norms\":false,\"position_increment_gap\":10}}}") == 0,
			 "complex to_json: %s", out);
	/* what we print parses back to the same mapping */
	UT_CHECK(strcmp(to_json(M(out)), out) == 0, "to_json round trip");
	UT_CHECK(m->dynamic == SE_DYNAMIC_STRICT && m->dynamic_set, "root dynamic");
	f = se_mapping_find(m, "a");
	UT_CHECK(f && f->type == SE_FT_OBJECT && f->dynamic == SE_DYNAMIC_TRUE && f->dynamic_set, "object a");
	f = se_mapping_find(m, "o");
	UT_CHECK(f && !f->enabled && f->dynamic == SE_DYNAMIC_STRICT, "o inherits strict");
	f = se_mapping_find(m, "e");
	UT_CHECK(f && f->format && strcmp(f->format, SE_DATE_DEFAULT_FORMAT) == 0, "date default format set");
	UT_CHECK(m->nfields == 13, "field count %d", m->nfields);

	/* codec options */
	se_field_codec_options(se_mapping_find(m, "t"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_POSITIONS && !norms && dv == SE_DV_NONE, "text codec (norms off)");
	se_field_codec_options(se_mapping_find(M(example), "summary"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_POSITIONS && norms && dv == SE_DV_NONE, "text codec");
	se_field_codec_options(se_mapping_find(M(example), "summary.keyword"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_DOCS && !norms && dv == SE_DV_SORTED_SET, "keyword codec");
	se_field_codec_options(se_mapping_find(m, "a.c"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_NONE && !norms && dv == SE_DV_SORTED_SET, "keyword index:false codec");
	se_field_codec_options(se_mapping_find(m, "a.b"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_DOCS && !norms && dv == SE_DV_NUMERIC, "long codec");
	se_field_codec_options(se_mapping_find(m, "flag"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_DOCS && !norms && dv == SE_DV_NONE, "boolean no doc values codec");
	se_field_codec_options(se_mapping_find(m, "a"), &io, &norms, &dv);
	UT_CHECK(io == SE_IDX_NONE && !norms && dv == SE_DV_NONE, "object codec");

	UT_CHECK(se_field_is_numeric_like(SE_FT_DATE) && se_field_is_numeric_like(SE_FT_BOOLEAN) &&
			 se_field_is_numeric_like(SE_FT_BYTE) && !se_field_is_numeric_like(SE_FT_KEYWORD) &&
			 !se_field_is_numeric_like(SE_FT_TEXT) && !se_field_is_numeric_like(SE_FT_OBJECT), "numeric_like");
	UT_CHECK(strcmp(se_field_type_name(SE_FT_SHORT), "short") == 0 &&
			 strcmp(se_field_type_name(SE_FT_OBJECT), "object") == 0, "type names");

	/* empty and trivial mappings */
	UT_CHECK(strcmp(to_json(se_mapping_create()), "{}") == 0, "empty mapping");
	UT_CHECK(strcmp(to_json(M("{}")), "{}") == 0, "{} mapping");
	UT_CHECK(strcmp(to_json(M("{\"date_detection\":false,\"numeric_detection\":\"true\",\"properties\":{\"x\":{}}}")),
					"{\"date_detection\":false,\"numeric_detection\":true,\"properties\":{\"x\":{\"type\":\"object\"}}}") == 0,
			 "detection flags and empty object");
	UT_CHECK(strcmp(to_json(M("{\"properties\":{\"x\":{\"dynamic\":\"false\"}}}")),
					"{\"properties\":{\"x\":{\"type\":\"object\",\"dynamic\":\"false\"}}}") == 0, "object dynamic string");
	/* sorting edge: '-' sorts before '.', children are not adjacent to the parent */
	m = M("{\"properties\":{\"a\":{\"properties\":{\"x\":{\"type\":\"long\"}}},\"a-b\":{\"type\":\"keyword\"},\"a0\":{\"type\":\"long\"}}}");
	UT_CHECK(se_mapping_find(m, "a.x") && se_mapping_find(m, "a-b") && se_mapping_find(m, "a0"), "sorted lookups");
	out = to_json(m);
	UT_CHECK(strcmp(out, "{\"properties\":{\"a\":{\"properties\":{\"x\":{\"type\":\"long\"}}},\"a-b\":{\"type\":\"keyword\"},\"a0\":{\"type\":\"long\"}}}") == 0,
			 "nested output with interleaved names: %s", out);

	/* errors */
	mapping_error("{\"properties\":{\"bar\":{\"type\":\"foo\"}}}", NULL, "mapper_parsing_exception",
				  "No handler for type [foo] declared on field [bar]");
	mapping_error("{\"properties\":{\"bar\":{\"type\":\"nested\",\"include_in_root\":1}}}", NULL,
				  "mapper_parsing_exception", "Failed to parse value [1] as only [true] or [false]");
	{
		SeMappingLimits nl = {1000, 20, 1, 0};

		mapping_error("{\"properties\":{\"a\":{\"type\":\"nested\"},\"b\":{\"type\":\"nested\"}}}", &nl,
					  "illegal_argument_exception", "Limit of nested fields [1] has been exceeded");
	}
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"analyzer\":\"x\"}}}", NULL, "mapper_parsing_exception",
				  "analyzer [x] has not been configured in mappings");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"foo\":1}}}", NULL, "mapper_parsing_exception",
				  "unknown parameter [foo] on mapper [f] of type [text]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"doc_values\":true}}}", NULL, "mapper_parsing_exception",
				  "unknown parameter [doc_values] on mapper [f] of type [text]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"keyword\",\"analyzer\":\"standard\"}}}", NULL, "mapper_parsing_exception",
				  "unknown parameter [analyzer] on mapper [f] of type [keyword]");
	mapping_error("{\"properties\":{\"o\":{\"properties\":{\"g\":{\"type\":\"long\",\"properties\":{}}}}}}", NULL, "mapper_parsing_exception",
				  "unknown parameter [properties] on mapper [o.g] of type [long]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"keyword\",\"ignore_above\":\"x\"}}}", NULL, "mapper_parsing_exception",
				  "ignore_above");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"keyword\",\"ignore_above\":-1}}}", NULL, "mapper_parsing_exception",
				  "[ignore_above] must be positive, got [-1]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"keyword\",\"index\":\"yes\"}}}", NULL, "mapper_parsing_exception",
				  "Failed to parse value [yes] as only [true] or [false] are allowed.");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"analyzer\":null}}}", NULL, "mapper_parsing_exception",
				  "[analyzer] on mapper [f] of type [text] must not have a [null] value");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"search_analyzer\":\"simple\"}}}", NULL, "mapper_parsing_exception",
				  "analyzer on field [f] must be set when search_analyzer is set");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"long\",\"null_value\":\"abc\"}}}", NULL, "mapper_parsing_exception",
				  "Error parsing [null_value] on field [f]: For input string: \"abc\"");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"date\",\"format\":\"yyyy-MM-dd\",\"null_value\":\"2020/01/01\"}}}", NULL,
				  "mapper_parsing_exception", "Error parsing [null_value] on field [f]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"date\",\"format\":\"yyyy-jj\"}}}", NULL, "mapper_parsing_exception",
				  "Invalid format: [yyyy-jj]: Unknown pattern letter: j");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"fields\":{\"k\":{\"type\":\"object\"}}}}}", NULL,
				  "mapper_parsing_exception", "Type [object] cannot be used in multi field");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"fields\":{\"k\":{}}}}}", NULL,
				  "mapper_parsing_exception", "No type specified for field [f.k]");
	mapping_error("{\"properties\":{\"f\":{\"type\":\"text\",\"fields\":{\"k.x\":{\"type\":\"keyword\"}}}}}", NULL,
				  "mapper_parsing_exception", "Field name [k.x] which is a multi field of [f] cannot contain '.'");
	mapping_error("{\"properties\":{\"f\":\"text\"}}", NULL, "mapper_parsing_exception", "Expected map");
	mapping_error("{\"properties\":[]}", NULL, "mapper_parsing_exception", "Expected map");
	mapping_error("[]", NULL, "mapper_parsing_exception", "Expected map");
	mapping_error("{\"properties\":{\"\":{\"type\":\"long\"}}}", NULL, "mapper_parsing_exception",
				  "field name cannot be an empty string");
	mapping_error("{\"properties\":{\"a..b\":{\"type\":\"long\"}}}", NULL, "mapper_parsing_exception",
				  "makes object resolution ambiguous: [a..b]");
	mapping_error("{\"properties\":{\"a\\u0000b\":{\"type\":\"long\"}}}", NULL, "mapper_parsing_exception", "NUL");
	mapping_error("{\"dynamic\":\"sometimes\"}", NULL, "mapper_parsing_exception", "Could not convert [dynamic] to boolean");
	mapping_error("{\"foo\":1,\"_source\":{\"enabled\":false}}", NULL, "mapper_parsing_exception",
				  "Root mapping definition has unsupported parameters:  [foo : 1] [_source : {enabled=false}]");
	mapping_error("{\"properties\":{\"a\":{\"type\":\"long\"},\"a.b\":{\"type\":\"long\"}}}", NULL, "illegal_argument_exception",
				  "mapper [a] cannot be changed from type [long] to [object]");
	mapping_error("{\"properties\":{\"a.b\":{\"type\":\"long\"},\"a\":{\"type\":\"long\"}}}", NULL, "illegal_argument_exception",
				  "can't merge a non object mapping [a] with an object mapping");

	/* limits */
	lim.total_fields_limit = 3;
	lim.depth_limit = 3;
	mapping_error("{\"properties\":{\"a\":{\"type\":\"long\"},\"b\":{\"type\":\"text\",\"fields\":{\"k\":{\"type\":\"keyword\"}}},\"c\":{\"type\":\"long\"}}}",
				  &lim, "illegal_argument_exception", "Limit of total fields [3] has been exceeded");
	mapping_error("{\"properties\":{\"a\":{\"properties\":{\"b\":{\"properties\":{\"c\":{\"properties\":{\"d\":{\"type\":\"long\"}}}}}}}}}",
				  &lim, "illegal_argument_exception", "Limit of mapping depth [3] has been exceeded due to object field [a.b.c]");
	{
		SeError		err;

		se_error_init(&err);
		UT_CHECK(se_mapping_from_json(J("{\"properties\":{\"a\":{\"properties\":{\"b\":{\"properties\":{\"c\":{\"type\":\"long\"}}}}}}}"), &lim, &err) != NULL,
				 "depth 3 allowed (root, a, a.b)");
	}
}

static void
test_mapping_lookup_many(void)
{
	StringInfoData s;
	SeMapping  *m;
	int			i;
	bool		all = true;
	SeMappingLimits lim = {5000, 20};
	SeError		err;

	initStringInfo(&s);
	appendStringInfoString(&s, "{\"properties\":{");
	for (i = 0; i < 1500; i++)
		appendStringInfo(&s, "%s\"f%d\":{\"type\":\"%s\"}", i ? "," : "", (i * 7919) % 1500,
						 i % 2 ? "long" : "keyword");
	appendStringInfoString(&s, "}}");
	se_error_init(&err);
	m = se_mapping_from_json(J(s.data), &lim, &err);
	UT_CHECK(m && m->nfields == 1500, "1500 fields");
	for (i = 0; m && i < 1500; i++)
	{
		char		name[16];
		const SeMappedField *f;

		snprintf(name, sizeof(name), "f%d", i);
		f = se_mapping_find(m, name);
		if (f == NULL || strcmp(f->path, name) != 0)
			all = false;
	}
	UT_CHECK(all, "every field found by binary search");
	for (i = 1; m && i < m->nfields; i++)
		if (strcmp(m->fields[i - 1]->path, m->fields[i]->path) >= 0)
			all = false;
	UT_CHECK(all, "fields sorted");
	se_error_init(&err);
	UT_CHECK(se_mapping_from_json(J(s.data), NULL, &err) == NULL &&
			 strstr(err.reason, "Limit of total fields [1000] has been exceeded"), "default limit 1000");
}

static void
test_mapping_merge(void)
{
	SeMapping  *m = M("{\"properties\":{\"title\":{\"type\":\"text\",\"analyzer\":\"english\"},"
					  "\"tag\":{\"type\":\"keyword\",\"ignore_above\":10},\"obj\":{\"properties\":{\"x\":{\"type\":\"long\"}}}}}");
	SeMapping  *copy;
	char	   *before;
	SeError		err;
	const SeMappedField *f;

	before = to_json(m);
	/* type change fails and leaves m unchanged */
	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"new1\":{\"type\":\"long\"},\"title\":{\"type\":\"long\"}}}"), NULL, &err),
			 "type change rejected");
	UT_CHECK(err.status == 400 && strcmp(err.type, "illegal_argument_exception") == 0 &&
			 strcmp(err.reason, "mapper [title] cannot be changed from type [text] to [long]") == 0, "type change error: %s", err.reason);
	UT_CHECK(strcmp(to_json(m), before) == 0 && se_mapping_find(m, "new1") == NULL, "unchanged after failure");

	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"title\":{\"type\":\"text\"}}}"), NULL, &err) &&
			 strcmp(err.type, "illegal_argument_exception") == 0 &&
			 strstr(err.reason, "Mapper for [title] conflicts with existing mapper:\n\tCannot update parameter [analyzer] from [english] to [standard]"),
			 "analyzer change: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"obj\":{\"type\":\"keyword\"}}}"), NULL, &err) &&
			 strstr(err.reason, "can't merge a non object mapping [obj] with an object mapping"), "object -> leaf: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"tag\":{\"properties\":{}}}}"), NULL, &err) &&
			 strstr(err.reason, "mapper [tag] cannot be changed from type [keyword] to [object]"), "leaf -> object: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"tag\":{\"type\":\"keyword\",\"doc_values\":false}}}"), NULL, &err) &&
			 strstr(err.reason, "Cannot update parameter [doc_values] from [true] to [false]"), "doc_values change: %s", err.reason);
	se_error_init(&err);
	UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"obj\":{\"enabled\":false}}}"), NULL, &err), "enabled change");
	UT_CHECK(strcmp(to_json(m), before) == 0, "still unchanged after failures");

	/* additions and updatable parameters */
	se_error_init(&err);
	UT_CHECK(se_mapping_merge(m, J("{\"dynamic\":\"strict\",\"properties\":{"
								   "\"title\":{\"type\":\"text\",\"analyzer\":\"english\",\"search_analyzer\":\"standard\",\"fields\":{\"raw\":{\"type\":\"keyword\"}}},"
								   "\"tag\":{\"type\":\"keyword\",\"ignore_above\":20},"
								   "\"obj\":{\"dynamic\":false,\"properties\":{\"y\":{\"type\":\"date\"}}},"
								   "\"obj.z\":{\"type\":\"boolean\"},"
								   "\"n\":{\"type\":\"integer\"}}}"), NULL, &err),
			 "merge additions: %s", err.reason ? err.reason : "");
	UT_CHECK(strcmp(to_json(m),
					"{\"dynamic\":\"strict\",\"properties\":{\"n\":{\"type\":\"integer\"},"
					"\"obj\":{\"dynamic\":\"false\",\"properties\":{\"x\":{\"type\":\"long\"},\"y\":{\"type\":\"date\"},\"z\":{\"type\":\"boolean\"}}},"
					"\"tag\":{\"type\":\"keyword\",\"ignore_above\":20},"
					"\"title\":{\"type\":\"text\",\"analyzer\":\"english\",\"search_analyzer\":\"standard\",\"fields\":{\"raw\":{\"type\":\"keyword\"}}}}}") == 0,
			 "after merge: %s", to_json(m));
	f = se_mapping_find(m, "title");
	UT_CHECK(f && f->nmulti_fields == 1 && strcmp(f->multi_fields[0]->path, "title.raw") == 0, "multi-field link rebuilt");
	f = se_mapping_find(m, "obj");
	UT_CHECK(f && f->dynamic == SE_DYNAMIC_FALSE, "object dynamic updated");
	/* a merge that omits earlier multi-fields keeps them */
	se_error_init(&err);
	UT_CHECK(se_mapping_merge(m, J("{\"properties\":{\"title\":{\"type\":\"text\",\"analyzer\":\"english\",\"search_analyzer\":\"standard\"}}}"), NULL, &err),
			 "merge same definition");
	UT_CHECK(se_mapping_find(m, "title.raw") != NULL, "multi-field kept");
	/* limits are applied to the merged mapping */
	{
		SeMappingLimits lim = {8, 20};

		se_error_init(&err);
		UT_CHECK(!se_mapping_merge(m, J("{\"properties\":{\"p\":{\"type\":\"long\"},\"q\":{\"type\":\"long\"}}}"), &lim, &err) &&
				 strstr(err.reason, "Limit of total fields [8] has been exceeded"), "merge limit: %s", err.reason);
		UT_CHECK(se_mapping_find(m, "p") == NULL, "nothing added");
	}

	/* copies are independent */
	copy = se_mapping_copy(m);
	UT_CHECK(strcmp(to_json(copy), to_json(m)) == 0, "copy equal");
	se_error_init(&err);
	UT_CHECK(se_mapping_merge(copy, J("{\"properties\":{\"extra\":{\"type\":\"long\"}}}"), NULL, &err), "merge into copy");
	UT_CHECK(se_mapping_find(copy, "extra") && !se_mapping_find(m, "extra"), "copy independent");
	f = se_mapping_find(copy, "title");
	UT_CHECK(f && f->nmulti_fields == 1 && f->multi_fields[0] == se_mapping_find(copy, "title.raw"), "copy links its own fields");
}

/* ---------------------------------------------------------------------
 * Document parsing through the segment builder
 * ---------------------------------------------------------------------
 */

typedef struct Seg
{
	SeSegmentBuilder *b;
	SeSegmentReader *r;
	StringInfoData data;
	int			ndocs;
} Seg;

static void
seg_init(Seg *s)
{
	s->b = se_builder_create();
	s->r = NULL;
	s->ndocs = 0;
}

/* Parse one doc into the builder; on success end it. */
static bool
seg_doc(Seg *s, SeMapping *m, const char *id, const char *json, const SeDocParseOptions *opts,
		bool *changed, SeError *err)
{
	SeJson	   *src = J(json);
	bool		ok;
	bool		ch = false;

	se_error_init(err);
	se_builder_begin_doc(s->b);
	ok = se_doc_parse(m, src, opts, s->b, id, &ch, err);
	if (changed)
		*changed = ch;
	if (ok)
	{
		SeDocMeta	meta;

		memset(&meta, 0, sizeof(meta));
		meta.id = id;
		meta.id_len = strlen(id);
		meta.seq_no = s->ndocs;
		meta.primary_term = 1;
		meta.version = 1;
		se_builder_end_doc(s->b, &meta, json, strlen(json));
		s->ndocs++;
	}
	return ok;
}

static SeSegmentReader *
seg_finish(Seg *s)
{
	uint8		id[SE_SEGMENT_ID_LEN] = {1, 2, 3};
	SeError		err;

	initStringInfo(&s->data);
	se_builder_serialize(s->b, id, 1, &s->data);
	se_error_init(&err);
	s->r = se_segment_open((const uint8 *) s->data.data, s->data.len, true, &err);
	if (s->r == NULL)
	{
		fprintf(stderr, "segment open failed: %s\n", err.reason);
		exit(2);
	}
	return s->r;
}

/* doc_freq of a term, or 0. */
static int
term_df(SeSegmentReader *r, const char *field, const char *term, int len)
{
	int			fno = se_segment_field(r, field);
	SeTermInfo	ti;

	if (fno < 0 || !se_segment_seek_exact(r, fno, term, len, &ti))
		return 0;
	return ti.doc_freq;
}

static int
text_df(SeSegmentReader *r, const char *field, const char *term)
{
	return term_df(r, field, term, strlen(term));
}

static int
num_df(SeSegmentReader *r, const char *field, int64 v)
{
	char		t[8];

	se_sortable_term(v, t);
	return term_df(r, field, t, 8);
}

/* Positions of term in doc, as a comma list. */
static char *
positions(SeSegmentReader *r, const char *field, const char *term, int32 doc)
{
	int			fno = se_segment_field(r, field);
	SeTermInfo	ti;
	SePostings *p;
	StringInfoData s;
	int32		pos;

	initStringInfo(&s);
	if (fno < 0 || !se_segment_seek_exact(r, fno, term, strlen(term), &ti))
		return s.data;
	p = se_postings_open(r, &ti, true);
	if (se_postings_advance(p, doc) == doc)
		while ((pos = se_postings_next_position(p)) >= 0)
			appendStringInfo(&s, "%s%d", s.len ? "," : "", pos);
	se_postings_close(p);
	return s.data;
}

/* Terms of a field in byte order as "a|b|c". */
static char *
terms_of(SeSegmentReader *r, const char *field)
{
	int			fno = se_segment_field(r, field);
	StringInfoData s;
	SeTermsEnum *e;
	const char *t;
	int			len;
	SeTermInfo	ti;

	initStringInfo(&s);
	if (fno < 0)
		return s.data;
	e = se_segment_terms(r, fno, NULL, 0);
	while (se_terms_next(e, &t, &len, &ti))
	{
		if (s.len)
			appendStringInfoChar(&s, '|');
		appendBinaryStringInfo(&s, t, len);
	}
	se_terms_close(e);
	return s.data;
}

static char *
numeric_dv(SeSegmentReader *r, const char *field, int32 doc)
{
	int			fno = se_segment_field(r, field);
	const int64 *vals;
	int			n,
				i;
	StringInfoData s;

	initStringInfo(&s);
	if (fno < 0)
		return s.data;
	n = se_segment_numeric_values(r, fno, doc, &vals);
	for (i = 0; i < n; i++)
		appendStringInfo(&s, "%s" INT64_FORMAT, i ? "," : "", vals[i]);
	return s.data;
}

static char *
sorted_dv(SeSegmentReader *r, const char *field, int32 doc)
{
	int			fno = se_segment_field(r, field);
	int			n,
				i;
	StringInfoData s;

	initStringInfo(&s);
	if (fno < 0)
		return s.data;
	n = se_segment_sorted_count(r, fno, doc);
	for (i = 0; i < n; i++)
	{
		int			len;
		const char *v = se_segment_sorted_value(r, fno, doc, i, &len);

		if (i)
			appendStringInfoChar(&s, '|');
		appendBinaryStringInfo(&s, v, len);
	}
	return s.data;
}

static void
test_doc_explicit(void)
{
	SeMapping  *m = M("{\"dynamic\":false,\"properties\":{"
					  "\"title\":{\"type\":\"text\",\"fields\":{\"raw\":{\"type\":\"keyword\",\"ignore_above\":13}}},"
					  "\"body\":{\"type\":\"text\",\"analyzer\":\"english\"},"
					  "\"tags\":{\"type\":\"keyword\",\"null_value\":\"none\"},"
					  "\"count\":{\"type\":\"long\"},"
					  "\"strict_n\":{\"type\":\"integer\",\"coerce\":false},"
					  "\"price\":{\"type\":\"double\"},"
					  "\"ratio\":{\"type\":\"float\"},"
					  "\"small\":{\"type\":\"byte\",\"ignore_malformed\":true},"
					  "\"when\":{\"type\":\"date\"},"
					  "\"day\":{\"type\":\"date\",\"format\":\"yyyy/MM/dd\"},"
					  "\"ok\":{\"type\":\"boolean\",\"null_value\":true},"
					  "\"hidden\":{\"type\":\"keyword\",\"index\":false},"
					  "\"nodv\":{\"type\":\"long\",\"doc_values\":false},"
					  "\"user\":{\"properties\":{\"name\":{\"type\":\"text\"},\"age\":{\"type\":\"short\"}}},"
					  "\"blob\":{\"type\":\"object\",\"enabled\":false}}}");
	Seg			s;
	SeSegmentReader *r;
	SeError		err;
	bool		changed;
	int			nfields = m->nfields;
	char	   *before = to_json(m);
	int			fno;
	SeFieldStats st;

	seg_init(&s);
	/* doc 0 */
	UT_CHECK(seg_doc(&s, m, "1",
					 "{\"title\":\"The Quick Fox\",\"body\":[\"running dogs\",\"the cats\"],"
					 "\"tags\":[\"a\",\"b\",null,\"a\"],\"count\":\"1.5\",\"strict_n\":7,"
					 "\"price\":9.5,\"ratio\":0.1,\"small\":\"300\",\"when\":\"2024-01-02T03:04:05Z\","
					 "\"day\":\"2024/01/02\",\"ok\":\"false\",\"hidden\":\"h\",\"nodv\":5,"
					 "\"user\":[{\"name\":\"alice smith\",\"age\":30},{\"name\":\"bob\",\"age\":\"41\"}],"
					 "\"blob\":{\"anything\":[1,{\"x\":\"y\"}]},\"unmapped\":{\"deep\":1},\"extra\":\"x\"}",
					 NULL, &changed, &err),
			 "doc 1: %s", err.reason ? err.reason : "");
	UT_CHECK(!changed && m->nfields == nfields, "dynamic false: mapping unchanged");

	/* failing documents leave no trace */
	UT_CHECK(!seg_doc(&s, m, "bad1", "{\"title\":\"partial\",\"count\":\"abc\"}", NULL, NULL, &err) &&
			 strcmp(err.type, "mapper_parsing_exception") == 0 &&
			 strcmp(err.reason, "failed to parse field [count] of type [long] in document with id 'bad1'. Preview of field's value: 'abc'") == 0,
			 "bad long: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "bad2", "{\"strict_n\":1.5}", NULL, NULL, &err) &&
			 strstr(err.reason, "failed to parse field [strict_n] of type [integer]"), "coerce false fraction");
	UT_CHECK(!seg_doc(&s, m, "bad3", "{\"strict_n\":\"1\"}", NULL, NULL, &err), "coerce false string");
	UT_CHECK(!seg_doc(&s, m, "bad4", "{\"count\":{\"a\":1}}", NULL, NULL, &err) &&
			 strstr(err.reason, "failed to parse field [count] of type [long] in document with id 'bad4'. Preview of field's value: '{a=1}'"),
			 "object for leaf: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "bad5", "{\"user\":\"x\"}", NULL, NULL, &err) &&
			 strcmp(err.reason, "object mapping for [user] tried to parse field [user] as object, but found a concrete value") == 0,
			 "value for object: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "bad6", "{\"user\":{\"age\":40000}}", NULL, NULL, &err) &&
			 strstr(err.reason, "[user.age] of type [short]"), "short overflow in doc: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "bad7", "{\"ok\":\"yes\"}", NULL, NULL, &err) &&
			 strstr(err.reason, "of type [boolean]"), "bad boolean");
	UT_CHECK(!seg_doc(&s, m, "bad8", "{\"day\":\"2024-01-02\"}", NULL, NULL, &err) &&
			 strstr(err.reason, "of type [date]"), "date in wrong format");
	UT_CHECK(!seg_doc(&s, m, "bad9", "{\"title.raw\":\"x\"}", NULL, NULL, &err) &&
			 strcmp(err.reason, "Could not dynamically add mapping for field [title.raw]. Existing mapping for [title] must be of type object but found [text].") == 0,
			 "dotted key into leaf: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "bad10", "{\"_id\":\"x\"}", NULL, NULL, &err) &&
			 strstr(err.reason, "Field [_id] is a metadata field and cannot be added inside a document"), "metadata field");
	UT_CHECK(!seg_doc(&s, m, "bad11", "{\"\":1}", NULL, NULL, &err) &&
			 strstr(err.reason, "field name cannot be an empty string"), "empty key");
	UT_CHECK(!seg_doc(&s, m, "bad12", "{\"a..b\":1}", NULL, NULL, &err) &&
			 strstr(err.reason, "object field starting or ending with a [.] makes object resolution ambiguous: [a..b]"), "a..b");
	UT_CHECK(!seg_doc(&s, m, "bad13", "{\".\":1}", NULL, NULL, &err) &&
			 strstr(err.reason, "field name cannot contain only dots"), "only dots");
	UT_CHECK(!seg_doc(&s, m, "bad14", "[1]", NULL, NULL, &err) &&
			 strcmp(err.type, "mapper_parsing_exception") == 0, "non-object source");
	UT_CHECK(!seg_doc(&s, m, "bad15", "{\"title\":[\"ok\",{\"a\":1}]}", NULL, NULL, &err) &&
			 strstr(err.reason, "of type [text]"), "object inside text array");
	UT_CHECK(m->nfields == nfields && strcmp(to_json(m), before) == 0, "mapping unchanged by failures");

	/* doc 1: nulls, ignore_above, defaults, dotted keys into objects */
	UT_CHECK(seg_doc(&s, m, "2",
					 "{\"title\":\"A much longer title here\",\"tags\":null,\"ok\":null,\"count\":[],"
					 "\"user.name\":\"carol\",\"when\":1704164645123,\"price\":\"2\",\"small\":127,"
					 "\"body\":[],\"title\":[\"x\"]}", NULL, NULL, &err),
			 "doc 2: %s", err.reason ? err.reason : "");
	/* doc 2: booleans and numbers into text/keyword */
	UT_CHECK(seg_doc(&s, m, "3", "{\"title\":true,\"tags\":[1.50,false],\"body\":\"\"}", NULL, NULL, &err),
			 "doc 3: %s", err.reason ? err.reason : "");

	r = seg_finish(&s);
	UT_CHECK(se_segment_max_doc(r) == 3, "3 docs (failures not buffered): %u", se_segment_max_doc(r));

	/* text: standard analyzer, positions, norms */
	UT_CHECK(strcmp(terms_of(r, "title"), "a|fox|here|longer|much|quick|the|title|true|x") == 0, "title terms: %s", terms_of(r, "title"));
	UT_CHECK(strcmp(positions(r, "title", "quick", 0), "1") == 0, "quick at 1");
	UT_CHECK(strcmp(positions(r, "title", "fox", 0), "2") == 0, "fox at 2");
	fno = se_segment_field(r, "title");
	UT_CHECK(fno >= 0 && se_segment_field_index_options(r, fno) == SE_IDX_POSITIONS &&
			 se_segment_field_has_norms(r, fno) && se_segment_field_dv_type(r, fno) == SE_DV_NONE, "title codec");
	UT_CHECK(se_segment_norm(r, fno, 0) == se_smallfloat_int_to_byte4(3), "title norm doc0");
	/* doc 1 has the title twice: "A much longer title here" then "x" after the gap */
	UT_CHECK(se_segment_norm(r, fno, 1) == se_smallfloat_int_to_byte4(6), "title norm doc1");
	UT_CHECK(strcmp(positions(r, "title", "x", 1), "105") == 0, "second value after gap: %s", positions(r, "title", "x", 1));
	se_segment_field_stats(r, fno, &st);
	UT_CHECK(st.doc_count == 3 && st.sum_total_term_freq == 10, "title stats %lld %lld",
			 (long long) st.doc_count, (long long) st.sum_total_term_freq);
	/* english analyzer with stop words and a gap between values */
	UT_CHECK(strcmp(terms_of(r, "body"), "cat|dog|run") == 0, "body terms: %s", terms_of(r, "body"));
	UT_CHECK(strcmp(positions(r, "body", "run", 0), "0") == 0 && strcmp(positions(r, "body", "dog", 0), "1") == 0 &&
			 strcmp(positions(r, "body", "cat", 0), "103") == 0, "body positions: cat %s", positions(r, "body", "cat", 0));
	fno = se_segment_field(r, "body");
	UT_CHECK(se_segment_norm(r, fno, 2) == 0, "empty text value: no norm");

	/* multi-field keyword with ignore_above 13 (13 characters still indexed) */
	UT_CHECK(strcmp(terms_of(r, "title.raw"), "The Quick Fox|true|x") == 0, "title.raw terms: %s", terms_of(r, "title.raw"));
	UT_CHECK(strcmp(sorted_dv(r, "title.raw", 1), "x") == 0, "long value skipped by ignore_above: %s", sorted_dv(r, "title.raw", 1));
	fno = se_segment_field(r, "title.raw");
	UT_CHECK(fno >= 0 && se_segment_field_index_options(r, fno) == SE_IDX_DOCS &&
			 !se_segment_field_has_norms(r, fno) && se_segment_field_dv_type(r, fno) == SE_DV_SORTED_SET, "keyword codec");

	/* keyword array, null_value, coercion of scalars */
	/* a null inside an array takes null_value too */
	UT_CHECK(strcmp(sorted_dv(r, "tags", 0), "a|b|none") == 0, "tags dv: %s", sorted_dv(r, "tags", 0));
	UT_CHECK(strcmp(sorted_dv(r, "tags", 1), "none") == 0, "null_value: %s", sorted_dv(r, "tags", 1));
	UT_CHECK(strcmp(sorted_dv(r, "tags", 2), "1.50|false") == 0, "number/bool as keyword: %s", sorted_dv(r, "tags", 2));
	UT_CHECK(text_df(r, "tags", "a") == 1 && text_df(r, "tags", "none") == 2 && text_df(r, "tags", "1.50") == 1, "tag terms");

	/* numerics */
	UT_CHECK(strcmp(numeric_dv(r, "count", 0), "1") == 0, "coerce truncates 1.5: %s", numeric_dv(r, "count", 0));
	UT_CHECK(num_df(r, "count", 1) == 1, "count term is the sortable term");
	UT_CHECK(strcmp(numeric_dv(r, "count", 1), "") == 0, "empty array: no value");
	fno = se_segment_field(r, "count");
	UT_CHECK(fno >= 0 && se_segment_field_index_options(r, fno) == SE_IDX_DOCS &&
			 !se_segment_field_has_norms(r, fno) && se_segment_field_dv_type(r, fno) == SE_DV_NUMERIC, "long codec");
	UT_CHECK(strcmp(numeric_dv(r, "strict_n", 0), "7") == 0, "integer");
	{
		char		buf[64];

		snprintf(buf, sizeof(buf), INT64_FORMAT, se_double_to_sortable(9.5));
		UT_CHECK(strcmp(numeric_dv(r, "price", 0), buf) == 0, "double dv");
		snprintf(buf, sizeof(buf), INT64_FORMAT, se_double_to_sortable(2.0));
		UT_CHECK(strcmp(numeric_dv(r, "price", 1), buf) == 0, "double from string");
		snprintf(buf, sizeof(buf), INT64_FORMAT, se_double_to_sortable((double) 0.1f));
		UT_CHECK(strcmp(numeric_dv(r, "ratio", 0), buf) == 0, "float dv rounded to float");
		UT_CHECK(num_df(r, "price", se_double_to_sortable(9.5)) == 1, "double term");
	}
	UT_CHECK(strcmp(numeric_dv(r, "small", 0), "") == 0 && strcmp(numeric_dv(r, "small", 1), "127") == 0,
			 "ignore_malformed skips out-of-range byte");
	UT_CHECK(strcmp(numeric_dv(r, "when", 0), "1704164645000") == 0 && strcmp(numeric_dv(r, "when", 1), "1704164645123") == 0,
			 "dates as millis");
	UT_CHECK(num_df(r, "when", INT64CONST(1704164645000)) == 1, "date term");
	UT_CHECK(strcmp(numeric_dv(r, "day", 0), "1704153600000") == 0, "custom date format");
	UT_CHECK(strcmp(numeric_dv(r, "ok", 0), "0") == 0 && strcmp(numeric_dv(r, "ok", 1), "1") == 0,
			 "boolean and its null_value");
	UT_CHECK(num_df(r, "ok", 1) == 1 && num_df(r, "ok", 0) == 1, "boolean terms");

	/* index:false / doc_values:false */
	fno = se_segment_field(r, "hidden");
	UT_CHECK(fno >= 0 && se_segment_field_index_options(r, fno) == SE_IDX_NONE &&
			 text_df(r, "hidden", "h") == 0 && strcmp(sorted_dv(r, "hidden", 0), "h") == 0, "index:false keyword keeps doc values");
	fno = se_segment_field(r, "nodv");
	UT_CHECK(fno >= 0 && se_segment_field_dv_type(r, fno) == SE_DV_NONE && num_df(r, "nodv", 5) == 1, "doc_values:false long");

	/* objects flattened, dotted keys */
	UT_CHECK(strcmp(terms_of(r, "user.name"), "alice|bob|carol|smith") == 0, "user.name terms: %s", terms_of(r, "user.name"));
	UT_CHECK(strcmp(positions(r, "user.name", "bob", 0), "102") == 0, "object array values share positions: %s", positions(r, "user.name", "bob", 0));
	UT_CHECK(strcmp(numeric_dv(r, "user.age", 0), "30,41") == 0, "user.age: %s", numeric_dv(r, "user.age", 0));
	UT_CHECK(se_segment_field(r, "user") < 0, "objects are not segment fields");

	/* unmapped, disabled objects */
	UT_CHECK(se_segment_field(r, "unmapped.deep") < 0 && se_segment_field(r, "extra") < 0 &&
			 se_segment_field(r, "blob.anything") < 0 && se_segment_field(r, "blob.anything.x") < 0,
			 "dynamic false and enabled false index nothing");
	UT_CHECK(se_segment_field(r, "_id") >= 0 && text_df(r, "_id", "2") == 1, "_id indexed by the builder");
}

static void
test_doc_dynamic(void)
{
	SeMapping  *m = se_mapping_create();
	Seg			s;
	SeSegmentReader *r;
	SeError		err;
	bool		changed;
	const SeMappedField *f;
	char	   *out;
	char	   *before;
	int			n;

	seg_init(&s);
	UT_CHECK(seg_doc(&s, m, "1",
					 "{\"title\":\"Hello World\",\"n\":42,\"x\":1.5,\"b\":true,\"d\":\"2024-01-02\","
					 "\"d2\":\"2024/01/02 03:04:05 +0000\",\"num_str\":\"123\",\"month\":\"2024-01\","
					 "\"user\":{\"name\":\"Al\",\"tags\":[null,\"t1\",\"t2\"]},\"nothing\":null,\"empty\":[],"
					 "\"nulls\":[null,null],\"a.b.c\":7,\"arr\":[3,4],\"eo\":{}}",
					 NULL, &changed, &err),
			 "dynamic doc: %s", err.reason ? err.reason : "");
	UT_CHECK(changed, "mapping changed");
	out = to_json(m);
	UT_CHECK(strcmp(out,
					"{\"properties\":{"
					"\"a\":{\"properties\":{\"b\":{\"properties\":{\"c\":{\"type\":\"long\"}}}}},"
					"\"arr\":{\"type\":\"long\"},"
					"\"b\":{\"type\":\"boolean\"},"
					"\"d\":{\"type\":\"date\"},"
					"\"d2\":{\"type\":\"date\",\"format\":\"yyyy/MM/dd HH:mm:ss Z||yyyy/MM/dd Z\"},"
					"\"eo\":{\"type\":\"object\"},"
					"\"month\":{\"type\":\"date\"},"
					"\"n\":{\"type\":\"long\"},"
					"\"num_str\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\",\"ignore_above\":256}}},"
					"\"title\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\",\"ignore_above\":256}}},"
					"\"user\":{\"properties\":{\"name\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\",\"ignore_above\":256}}},"
					"\"tags\":{\"type\":\"text\",\"fields\":{\"keyword\":{\"type\":\"keyword\",\"ignore_above\":256}}}}},"
					"\"x\":{\"type\":\"float\"}}}") == 0,
			 "dynamic mapping: %s", out);
	f = se_mapping_find(m, "title");
	UT_CHECK(f && f->nmulti_fields == 1 && f->multi_fields[0] == se_mapping_find(m, "title.keyword"), "dynamic multi-field link");

	/* second doc: existing dynamic fields are reused, type mismatch rolls back new fields */
	n = m->nfields;
	before = to_json(m);
	UT_CHECK(!seg_doc(&s, m, "2", "{\"newfield\":\"v\",\"new2\":{\"z\":1},\"n\":\"not a number\"}", NULL, &changed, &err) &&
			 strstr(err.reason, "failed to parse field [n] of type [long] in document with id '2'"), "type mismatch: %s", err.reason);
	UT_CHECK(!changed && m->nfields == n && se_mapping_find(m, "newfield") == NULL &&
			 se_mapping_find(m, "new2") == NULL && strcmp(to_json(m), before) == 0, "dynamic additions rolled back");
	/* array typed by its first element */
	UT_CHECK(!seg_doc(&s, m, "3", "{\"mixed\":[1,\"abc\"]}", NULL, NULL, &err) && se_mapping_find(m, "mixed") == NULL,
			 "mixed array fails as long");
	UT_CHECK(seg_doc(&s, m, "4", "{\"mixed2\":[null,\"abc\",1]}", NULL, &changed, &err) && changed, "text first");
	f = se_mapping_find(m, "mixed2");
	UT_CHECK(f && f->type == SE_FT_TEXT, "array type from first non-null");

	/* limits */
	{
		SeDocParseOptions opts;

		opts.limits.total_fields_limit = m->nfields + 2;
		opts.limits.depth_limit = 2;
		n = m->nfields;
		UT_CHECK(!seg_doc(&s, m, "5", "{\"p\":1,\"q\":\"text\"}", &opts, NULL, &err) &&
				 strcmp(err.type, "illegal_argument_exception") == 0 &&
				 strstr(err.reason, "Limit of total fields [") && strstr(err.reason, "has been exceeded while adding new fields [3]"),
				 "total fields: %s", err.reason);
		UT_CHECK(m->nfields == n, "limit failure rolled back");
		UT_CHECK(!seg_doc(&s, m, "6", "{\"o1\":{\"o2\":{\"o3\":1}}}", &opts, NULL, &err) &&
				 strcmp(err.type, "illegal_argument_exception") == 0 &&
				 strcmp(err.reason, "Limit of mapping depth [2] has been exceeded due to object field [o1.o2]") == 0,
				 "depth: %s", err.reason);
		UT_CHECK(m->nfields == n && se_mapping_find(m, "o1") == NULL, "depth failure rolled back");
		UT_CHECK(seg_doc(&s, m, "7", "{\"o1\":{\"leaf\":1}}", &opts, NULL, &err), "depth within the limit");
	}

	/* numeric detection off: numeric strings stay text; on: long/float */
	f = se_mapping_find(m, "num_str");
	UT_CHECK(f && f->type == SE_FT_TEXT, "numeric_detection off");
	{
		SeMapping  *nd = M("{\"numeric_detection\":true,\"date_detection\":false}");

		UT_CHECK(seg_doc(&s, nd, "8", "{\"a\":\"12\",\"b\":\"1.5\",\"c\":\"2024-01-02\"}", NULL, NULL, &err), "numeric detection doc");
		UT_CHECK(se_mapping_find(nd, "a")->type == SE_FT_LONG && se_mapping_find(nd, "b")->type == SE_FT_FLOAT &&
				 se_mapping_find(nd, "c")->type == SE_FT_TEXT, "numeric detection types, date detection off");
	}

	r = seg_finish(&s);
	UT_CHECK(se_segment_max_doc(r) == 4, "docs 1,4,7,8 buffered: %u", se_segment_max_doc(r));
	UT_CHECK(strcmp(terms_of(r, "title"), "hello|world") == 0, "dynamic text analyzed with standard");
	UT_CHECK(strcmp(sorted_dv(r, "title.keyword", 0), "Hello World") == 0, "dynamic keyword multi-field");
	UT_CHECK(strcmp(numeric_dv(r, "n", 0), "42") == 0, "dynamic long");
	UT_CHECK(strcmp(numeric_dv(r, "d", 0), "1704153600000") == 0, "dynamic date");
	UT_CHECK(strcmp(numeric_dv(r, "d2", 0), "1704164645000") == 0, "dynamic date second format");
	UT_CHECK(strcmp(numeric_dv(r, "a.b.c", 0), "7") == 0, "dotted key dynamic");
	UT_CHECK(strcmp(numeric_dv(r, "arr", 0), "3,4") == 0, "long array");
	UT_CHECK(strcmp(sorted_dv(r, "user.tags.keyword", 0), "t1|t2") == 0, "nested keyword with nulls");
	UT_CHECK(strcmp(numeric_dv(r, "b", 0), "1") == 0, "dynamic boolean");
	{
		char		buf[64];

		snprintf(buf, sizeof(buf), INT64_FORMAT, se_double_to_sortable((double) 1.5f));
		UT_CHECK(strcmp(numeric_dv(r, "x", 0), buf) == 0, "dynamic float");
	}
	UT_CHECK(se_mapping_find(m, "nothing") == NULL && se_mapping_find(m, "empty") == NULL &&
			 se_mapping_find(m, "nulls") == NULL, "nulls and empty arrays map nothing");
}

static void
test_doc_strict(void)
{
	SeMapping  *m = M("{\"dynamic\":\"strict\",\"properties\":{\"a\":{\"type\":\"keyword\"},"
					  "\"open\":{\"dynamic\":true,\"properties\":{}},"
					  "\"closed\":{\"properties\":{\"k\":{\"type\":\"long\"}}},"
					  "\"quiet\":{\"dynamic\":false,\"properties\":{\"inner\":{\"properties\":{}}}}}}");
	Seg			s;
	SeError		err;
	bool		changed;
	int			n = m->nfields;
	SeSegmentReader *r;

	seg_init(&s);
	UT_CHECK(!seg_doc(&s, m, "1", "{\"a\":\"x\",\"b\":1}", NULL, NULL, &err) &&
			 err.status == 400 && strcmp(err.type, "strict_dynamic_mapping_exception") == 0 &&
			 strcmp(err.reason, "mapping set to strict, dynamic introduction of [b] within [_doc] is not allowed") == 0,
			 "strict root: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "2", "{\"closed\":{\"z\":1}}", NULL, NULL, &err) &&
			 strcmp(err.reason, "mapping set to strict, dynamic introduction of [z] within [closed] is not allowed") == 0,
			 "strict inherited: %s", err.reason);
	UT_CHECK(!seg_doc(&s, m, "3", "{\"nope\":{\"z\":1}}", NULL, NULL, &err) &&
			 strstr(err.reason, "dynamic introduction of [nope] within [_doc]"), "strict object");
	UT_CHECK(!seg_doc(&s, m, "3b", "{\"nope.z\":1}", NULL, NULL, &err) &&
			 strstr(err.reason, "dynamic introduction of [nope] within [_doc]"), "strict dotted: %s", err.reason);
	UT_CHECK(m->nfields == n, "nothing added");
	UT_CHECK(seg_doc(&s, m, "4", "{\"open\":{\"x\":{\"y\":\"v\"}},\"quiet\":{\"u\":1,\"inner\":{\"w\":2}},\"a\":\"k\"}", NULL, &changed, &err),
			 "dynamic true below strict: %s", err.reason ? err.reason : "");
	UT_CHECK(changed && se_mapping_find(m, "open.x") && se_mapping_find(m, "open.x.y") &&
			 se_mapping_find(m, "open.x")->dynamic == SE_DYNAMIC_TRUE, "open.x.y added, inherits true");
	UT_CHECK(se_mapping_find(m, "quiet.u") == NULL && se_mapping_find(m, "quiet.inner.w") == NULL,
			 "dynamic false inherited by sub-object");
	r = seg_finish(&s);
	UT_CHECK(se_segment_max_doc(r) == 1 && strcmp(terms_of(r, "open.x.y"), "v") == 0, "open.x.y indexed");
}

static void
test_doc_details(void)
{
	SeMapping  *m = M("{\"properties\":{"
					  "\"k\":{\"type\":\"keyword\",\"ignore_above\":2},"
					  "\"big\":{\"type\":\"keyword\"},"
					  "\"n\":{\"type\":\"long\",\"null_value\":\"-5\",\"fields\":{\"as_kw\":{\"type\":\"keyword\"}}},"
					  "\"gap\":{\"type\":\"text\",\"position_increment_gap\":10},"
					  "\"off\":{\"type\":\"object\",\"enabled\":false},"
					  "\"ws\":{\"type\":\"text\",\"analyzer\":\"keyword\"}}}");
	Seg			s;
	SeSegmentReader *r;
	SeError		err;
	StringInfoData big;
	int			i;

	seg_init(&s);
	/* ignore_above counts UTF-16 units: U+1F600 is two */
	UT_CHECK(seg_doc(&s, m, "1", "{\"k\":[\"\\ud83d\\ude00\",\"\\ud83d\\ude00a\",\"ab\",\"abc\"],"
					 "\"n\":[null,7],\"gap\":[\"a b\",\"c\"],\"off.x\":1,\"off\":{\"y\":[{}]},"
					 "\"when\":\"2024-01-02T03:04:05Z\",\"slashy\":\"1/2/2024\"}", NULL, NULL, &err),
			 "details doc: %s", err.reason ? err.reason : "");

	/* immense keyword term */
	initStringInfo(&big);
	appendStringInfoString(&big, "{\"big\":\"");
	for (i = 0; i < 33000; i++)
		appendStringInfoChar(&big, 'x');
	appendStringInfoString(&big, "\"}");
	UT_CHECK(!seg_doc(&s, m, "2", big.data, NULL, NULL, &err) && strcmp(err.type, "illegal_argument_exception") == 0 &&
			 strstr(err.reason, "Document contains at least one immense term in field=\"big\"") &&
			 strstr(err.reason, "bytes can be at most 32766 in length; got 33000"), "immense term: %.120s", err.reason);
	/* same through an analyzer that keeps it whole */
	big.data[2] = 'w';
	big.data[3] = 's';
	big.data[4] = '"';
	memmove(big.data + 5, big.data + 6, big.len - 5);
	big.len--;
	UT_CHECK(!seg_doc(&s, m, "3", big.data, NULL, NULL, &err) && strstr(err.reason, "immense term in field=\"ws\""),
			 "immense token: %.80s", err.reason);

	r = seg_finish(&s);
	UT_CHECK(se_segment_max_doc(r) == 1, "one doc");
	UT_CHECK(strcmp(sorted_dv(r, "k", 0), "ab|\xf0\x9f\x98\x80") == 0, "ignore_above in UTF-16 units: %s", sorted_dv(r, "k", 0));
	UT_CHECK(strcmp(numeric_dv(r, "n", 0), "-5,7") == 0, "numeric null_value in array: %s", numeric_dv(r, "n", 0));
	UT_CHECK(strcmp(sorted_dv(r, "n.as_kw", 0), "7") == 0, "numeric multi-field as keyword: %s", sorted_dv(r, "n.as_kw", 0));
	UT_CHECK(strcmp(positions(r, "gap", "c", 0), "12") == 0, "custom position_increment_gap: %s", positions(r, "gap", "c", 0));
	UT_CHECK(se_segment_field(r, "off.x") < 0 && se_segment_field(r, "off.y") < 0, "disabled object skipped, dotted too");
	UT_CHECK(se_mapping_find(m, "when")->type == SE_FT_DATE && se_mapping_find(m, "slashy")->type == SE_FT_TEXT,
			 "date detection");
	UT_CHECK(se_mapping_find(m, "off.x") == NULL, "no mapping under a disabled object");
}

/* A sanity check that parsing stays cheap: many documents, many fields. */
static void
test_doc_volume(void)
{
	SeMapping  *m = se_mapping_create();
	Seg			s;
	SeSegmentReader *r;
	SeError		err;
	int			i;
	bool		ok = true;
	StringInfoData d;

	seg_init(&s);
	initStringInfo(&d);
	for (i = 0; i < 2000 && ok; i++)
	{
		resetStringInfo(&d);
		appendStringInfo(&d, "{\"id\":%d,\"title\":\"doc number %d\",\"tags\":[\"t%d\",\"t%d\"],"
						 "\"f%d\":%d,\"user\":{\"name\":\"u%d\",\"age\":%d}}",
						 i, i, i % 10, i % 7, i % 300, i, i % 50, i % 90);
		ok = seg_doc(&s, m, "v", d.data, NULL, NULL, &err);
	}
	UT_CHECK(ok, "2000 docs: %s", err.reason ? err.reason : "");
	/* id, title(+keyword), tags(+keyword), f0..f299, user, user.name(+keyword), user.age */
	UT_CHECK(m->nfields == 5 + 300 + 4, "fields %d", m->nfields);
	r = seg_finish(&s);
	UT_CHECK(se_segment_max_doc(r) == 2000 && text_df(r, "title", "number") == 2000 &&
			 num_df(r, "id", 1234) == 1 && text_df(r, "tags.keyword", "t3") > 0, "volume segment");
}

/*
 * geo_point: Lucene's quantisation (values computed by hand from
 * GeoEncodingUtils' definition: floor(deg / (180 / 2^32)) etc.), every input
 * form, the haversine distance, geohashes, units, normalisation.
 */
static void
test_geo_point(void)
{
	static const char *const forms[] = {
		"{\"lat\": 41.12, \"lon\": -71.34}", "{\"lat\": \"41.12\", \"lon\": \"-71.34\"}",
		"\"41.12,-71.34\"", "[-71.34, 41.12]", "\"POINT (-71.34 41.12)\"",
		"{\"type\": \"Point\", \"coordinates\": [-71.34, 41.12]}", "\" 41.12 , -71.34 \"",
		"[-71.34, 41.12, 5]", "\"point(-71.34 41.12)\""
	};
	static const char *const bad[] = {
		"{\"lat\": 1}", "{\"lon\": 1}", "{\"lat\": 1, \"lon\": 2, \"q\": 3}", "[1]", "[1, 2, 3, 4]",
		"[1, \"a\"]", "\"1,2,3,4\"", "\"POINT (1)\"", "\"a!\"", "true", "{\"type\": \"Line\", \"coordinates\": [1, 2]}",
		"\"1,x\""
	};
	SeGeoPoint	p;
	SeError		err;
	double		lat,
				lon,
				lat0,
				lat1,
				lon0,
				lon1,
				m;
	char		hash[16];
	int			i;

	for (i = 0; i < lengthof(forms); i++)
	{
		se_error_init(&err);
		UT_CHECK(se_geo_parse_point(J(forms[i]), true, &p, &err) && p.lat == 41.12 && p.lon == -71.34,
				 "geo form %s", forms[i]);
	}
	for (i = 0; i < lengthof(bad); i++)
	{
		se_error_init(&err);
		UT_CHECK(!se_geo_parse_point(J(bad[i]), true, &p, &err) && err.reason != NULL,
				 "geo refuses %s", bad[i]);
	}
	se_error_init(&err);
	UT_CHECK(!se_geo_parse_point(J("[1, 2, 3]"), false, &p, &err) &&
			 strcmp(err.reason, "Exception parsing coordinates: found Z value [3.0] but [ignore_z_value] parameter is [false]") == 0,
			 "z refused: %s", err.reason ? err.reason : "");

	/* 40.12 -> floor(40.12 / (1 / (2^32 / 180))) = 957300488; -71.34 -> -851119353 */
	UT_CHECK(se_geo_encode(40.12, -71.34) == (int64) (((uint64) 957300488 << 32) | (uint32) -851119353),
			 "encode");
	se_geo_decode(se_geo_encode(40.12, -71.34), &lat, &lon);
	UT_CHECK(lat == 957300488 * (180.0 / 4294967296.0) && lon == -851119353 * (360.0 / 4294967296.0),
			 "decode %.17g %.17g", lat, lon);
	/* the edges stay inside the int range */
	se_geo_decode(se_geo_encode(90, 180), &lat, &lon);
	UT_CHECK(lat < 90 && lat > 89.9999999 && lon < 180 && lon > 179.9999999, "edges");
	se_geo_decode(se_geo_encode(-90, -180), &lat, &lon);
	UT_CHECK(lat == -90 && lon == -180, "low edges");

	/* haversine, r = 6371008.7714: a degree of a meridian is r * pi / 180 */
	m = se_geo_arc_meters(0, 0, 1, 0);
	UT_CHECK(fabs(m - 6371008.7714 * M_PI / 180) < 1e-6, "one degree %.9f", m);
	m = se_geo_arc_meters(0, 179.5, 0, -179.5);
	UT_CHECK(fabs(m - 6371008.7714 * M_PI / 180) < 1e-6, "over the dateline %.9f", m);
	UT_CHECK(fabs(se_geo_plane_meters(0, 0, 1, 0) - 6371008.7714 * M_PI / 180) < 1e-6, "plane");

	/* geohash: the cell of "u17" and back */
	UT_CHECK(se_geohash_cell("u17", 3, &lat0, &lat1, &lon0, &lon1) &&
			 lat0 == 52.03125 && lat1 == 53.4375 && lon0 == 4.21875 && lon1 == 5.625, "u17 cell");
	se_geohash_encode(52.374081, 4.912350, 3, hash);
	UT_CHECK(strcmp(hash, "u17") == 0, "geohash %s", hash);
	se_geohash_encode(41.12, -71.34, 12, hash);
	UT_CHECK(strcmp(hash, "drm3btev3e86") == 0, "geohash %s", hash);
	UT_CHECK(!se_geohash_cell("ua", 2, &lat0, &lat1, &lon0, &lon1), "a is no geohash letter");
	/* a geohash point is its cell's lower left corner as ES computes it */
	se_error_init(&err);
	UT_CHECK(se_geo_parse_point(J("\"drm3btev3e86\""), true, &p, &err) &&
			 p.lat == 41.119999922811985 && p.lon == -71.34000029414892, "geohash point %.17g %.17g",
			 p.lat, p.lon);
	se_geohash_of_encoded(se_geo_encode(-90, -180), 2, hash);
	UT_CHECK(strcmp(hash, "00") == 0, "corner cell %s", hash);
	se_geohash_of_encoded(se_geo_encode(90, 180), 2, hash);
	UT_CHECK(strcmp(hash, "zz") == 0, "top cell %s", hash);

	/* units */
	UT_CHECK(se_geo_parse_distance("12km", 1, &m) && m == 12000, "km");
	UT_CHECK(se_geo_parse_distance("2mi", 1, &m) && m == 2 * 1609.344, "mi");
	UT_CHECK(se_geo_parse_distance("3NM", 1, &m) && m == 3 * 1852, "NM");
	UT_CHECK(se_geo_parse_distance("100", 1000, &m) && m == 100000, "default unit");
	UT_CHECK(se_geo_parse_distance("5.5m", 1, &m) && m == 5.5, "m");
	UT_CHECK(!se_geo_parse_distance("5 parsecs", 1, &m) && !se_geo_parse_distance("km", 1, &m), "bad units");

	/* normalisation as ES's GeoUtils.normalizePoint */
	p.lat = 91;
	p.lon = 181;
	se_geo_normalize(&p);
	UT_CHECK(p.lat == 89 && p.lon == 1, "normalize %g %g", p.lat, p.lon);
	p.lat = 10;
	p.lon = 190;
	se_geo_normalize(&p);
	UT_CHECK(p.lat == 10 && p.lon == -170, "normalize lon %g %g", p.lat, p.lon);
	p.lat = -100;
	p.lon = 0;
	se_geo_normalize(&p);
	UT_CHECK(p.lat == -80 && p.lon == 180, "normalize south %g %g", p.lat, p.lon);
}

int
main(void)
{
	test_sortable_term();
	test_double_sortable();
	test_field_values();
	test_write_sortable();
	test_dates();
	test_mapping_json();
	test_mapping_lookup_many();
	test_mapping_merge();
	test_doc_explicit();
	test_doc_dynamic();
	test_doc_strict();
	test_doc_details();
	test_doc_volume();
	test_geo_point();
	return ut_finish("test_mapping");
}
