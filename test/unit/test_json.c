/* SOURCES: src/util/json.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_json.c
 *	  Unit tests for the strict JSON parser and writer.
 *
 * Every parse goes through an exactly sized heap copy of the input, so
 * AddressSanitizer catches any read past the end.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "unit_test.h"

/* Parse text[0..len) from an exact-size heap copy. */
static SeJson *
parse_len(const char *text, size_t len, const SeJsonParseOptions *opts,
		  SeError *err)
{
	char	   *copy = malloc(len ? len : 1);
	SeJson	   *v;

	memcpy(copy, text, len);
	se_error_init(err);
	v = se_json_parse(copy, len, opts, err);
	free(copy);					/* the DOM must not point into the input */
	return v;
}

static SeJson *
parse_ok(const char *text)
{
	SeError		err;
	SeJson	   *v = parse_len(text, strlen(text), NULL, &err);

	UT_CHECK(v != NULL && !se_error_is_set(&err), "parse should succeed: %s -> %s",
			 text, err.reason ? err.reason : "(null)");
	return v;
}

static char *
to_s(const SeJson *v)
{
	return se_json_to_string(v);
}

/* Parse, expect failure; returns the reason (or "" if none). */
static const char *
parse_fail_len(const char *text, size_t len, const SeJsonParseOptions *opts,
			   const char *want_type)
{
	SeError		err;
	SeJson	   *v = parse_len(text, len, opts, &err);

	UT_CHECK(v == NULL, "parse of [%.*s] should fail", (int) len, text);
	UT_CHECK(se_error_is_set(&err), "error set for [%.*s]", (int) len, text);
	if (!se_error_is_set(&err))
		return "";
	UT_CHECK(err.status == 400, "status 400, got %d", err.status);
	if (want_type)
		UT_CHECK(strcmp(err.type, want_type) == 0, "type for [%.*s]: %s (%s)",
				 (int) len, text, err.type, err.reason);
	return err.reason;
}

static const char *
parse_fail(const char *text, const char *want_type)
{
	return parse_fail_len(text, strlen(text), NULL, want_type);
}

/* Expect failure and that the reason contains each fragment. */
static void
expect_error(const char *text, const char *type, const char *frag1,
			 const char *frag2)
{
	const char *r = parse_fail(text, type);

	if (frag1)
		UT_CHECK(strstr(r, frag1) != NULL, "[%s] reason \"%s\" lacks \"%s\"",
				 text, r, frag1);
	if (frag2)
		UT_CHECK(strstr(r, frag2) != NULL, "[%s] reason \"%s\" lacks \"%s\"",
				 text, r, frag2);
}

static void
expect_reason(const char *text, const char *type, const char *reason)
{
	const char *r = parse_fail(text, type);

	UT_CHECK(strcmp(r, reason) == 0, "[%s]\n   got  \"%s\"\n   want \"%s\"",
			 text, r, reason);
}

/* Parse and re-serialize compactly. */
static void
expect_roundtrip(const char *in, const char *out)
{
	SeJson	   *v = parse_ok(in);
	char	   *s;
	SeJson	   *again;

	if (v == NULL)
		return;
	s = to_s(v);
	UT_CHECK(strcmp(s, out) == 0, "write(%s)\n   got  %s\n   want %s", in, s, out);
	/* the output parses back to the same text */
	again = parse_ok(s);
	if (again)
		UT_CHECK(strcmp(to_s(again), s) == 0, "idempotent %s", s);
}

/* ------------------------------------------------------------------ */

static void
test_scalars(void)
{
	SeJson	   *v;

	v = parse_ok("null");
	UT_CHECK(v && v->type == SE_JSON_NULL, "null");
	v = parse_ok(" true ");
	UT_CHECK(v && v->type == SE_JSON_TRUE, "true");
	v = parse_ok("\t\r\nfalse\n");
	UT_CHECK(v && v->type == SE_JSON_FALSE, "false");
	v = parse_ok("\"abc\"");
	UT_CHECK(v && v->type == SE_JSON_STRING && v->u.s.len == 3 &&
			 strcmp(v->u.s.str, "abc") == 0, "string");
	v = parse_ok("\"\"");
	UT_CHECK(v && v->type == SE_JSON_STRING && v->u.s.len == 0 &&
			 v->u.s.str[0] == '\0', "empty string");
	v = parse_ok("42");
	UT_CHECK(v && v->type == SE_JSON_NUMBER && v->u.n.is_int && v->u.n.i == 42, "42");

	UT_CHECK(strcmp(se_json_type_name(SE_JSON_OBJECT), "object") == 0, "type name");
	UT_CHECK(strcmp(se_json_type_name(SE_JSON_ARRAY), "array") == 0, "type name");
	UT_CHECK(strcmp(se_json_type_name(SE_JSON_STRING), "string") == 0, "type name");
	UT_CHECK(strcmp(se_json_type_name(SE_JSON_NUMBER), "number") == 0, "type name");
	UT_CHECK(strcmp(se_json_type_name(SE_JSON_TRUE), "boolean") == 0, "type name");
	UT_CHECK(strcmp(se_json_type_name(SE_JSON_NULL), "null") == 0, "type name");
}

static void
test_structure(void)
{
	const char *doc =
		"{ \"title\" : \"Quick fox\", \"tags\": [\"a\", \"b\", []],\n"
		"  \"n\": {\"x\": 1, \"y\": {}}, \"ok\": true, \"none\": null }";
	SeJson	   *v = parse_ok(doc);
	SeJson	   *tags;
	SeJson	   *n;

	if (v == NULL)
		return;
	UT_CHECK(v->type == SE_JSON_OBJECT && v->u.o.count == 5, "top object");
	UT_CHECK(strcmp(v->u.o.members[0].key, "title") == 0 &&
			 v->u.o.members[0].keylen == 5, "first key in order");
	UT_CHECK(strcmp(v->u.o.members[4].key, "none") == 0, "last key in order");
	tags = se_json_get(v, "tags");
	UT_CHECK(tags && tags->type == SE_JSON_ARRAY && tags->u.a.count == 3, "tags");
	if (tags && tags->u.a.count == 3)
	{
		UT_CHECK(strcmp(tags->u.a.items[1]->u.s.str, "b") == 0, "tags[1]");
		UT_CHECK(tags->u.a.items[2]->type == SE_JSON_ARRAY &&
				 tags->u.a.items[2]->u.a.count == 0, "empty array");
	}
	n = se_json_get(v, "n");
	UT_CHECK(n && n->type == SE_JSON_OBJECT && n->u.o.count == 2, "nested");
	UT_CHECK(se_json_get(n, "y") && se_json_get(n, "y")->u.o.count == 0, "empty obj");
	UT_CHECK(se_json_get(n, "x")->u.n.i == 1, "nested number");
	UT_CHECK(se_json_get(v, "ok")->type == SE_JSON_TRUE, "ok");
	UT_CHECK(se_json_get(v, "none")->type == SE_JSON_NULL, "none");
	UT_CHECK(se_json_get(v, "missing") == NULL, "missing");
	UT_CHECK(se_json_get(tags, "a") == NULL, "get on array");
	UT_CHECK(se_json_get(NULL, "a") == NULL, "get on NULL");
}

static void
test_roundtrip(void)
{
	expect_roundtrip("{}", "{}");
	expect_roundtrip("[]", "[]");
	expect_roundtrip(" [ 1 , 2.50 , -0 , 1e5 , 1E-3, 0.0 ] ", "[1,2.50,-0,1e5,1E-3,0.0]");
	expect_roundtrip("{ \"a\" : [1, {\"b\": null}], \"c\": \"x\\u00e9\\n\" }",
					 "{\"a\":[1,{\"b\":null}],\"c\":\"x\xc3\xa9\\n\"}");
	expect_roundtrip("\"\\/\\\"\\\\\\b\\f\\n\\r\\t\"", "\"/\\\"\\\\\\b\\f\\n\\r\\t\"");
	expect_roundtrip("\"\\u0001\\u001F\\u007f\"", "\"\\u0001\\u001f\x7f\"");
	expect_roundtrip("\"\\u0000\"", "\"\\u0000\"");
	expect_roundtrip("[true,false,null]", "[true,false,null]");
	expect_roundtrip("{\"\xe6\x97\xa5\xe6\x9c\xac\":\"\xf0\x9f\x99\x82\"}",
					 "{\"\xe6\x97\xa5\xe6\x9c\xac\":\"\xf0\x9f\x99\x82\"}");
	expect_roundtrip("[[[[[\"deep\"]]]]]", "[[[[[\"deep\"]]]]]");
	expect_roundtrip("{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":2}");
	expect_roundtrip("123456789012345678901234567890",
					 "123456789012345678901234567890");
}

static void
test_strings(void)
{
	SeJson	   *v;

	v = parse_ok("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"");
	UT_CHECK(v && v->u.s.len == 1 + 2 + 3 + 4 &&
			 memcmp(v->u.s.str, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10) == 0,
			 "unicode escapes and surrogate pair");
	v = parse_ok("\"\\uDBFF\\uDFFF\"");
	UT_CHECK(v && v->u.s.len == 4 && memcmp(v->u.s.str, "\xf4\x8f\xbf\xbf", 4) == 0,
			 "U+10FFFF from escapes");
	v = parse_ok("\"a\\u0000b\"");
	UT_CHECK(v && v->u.s.len == 3 && v->u.s.str[1] == '\0' && v->u.s.str[2] == 'b',
			 "escaped NUL is kept, length counts it");
	v = parse_ok("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\"");
	UT_CHECK(v && v->u.s.len == 14 &&
			 memcmp(v->u.s.str, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", 14) == 0,
			 "raw UTF-8 passes");
	/* long string with escapes late exercises the fast path then slow path */
	{
		StringInfoData b;
		int			i;

		initStringInfo(&b);
		appendStringInfoChar(&b, '"');
		for (i = 0; i < 1000; i++)
			appendStringInfoString(&b, "abcdefg\xc3\xa9");
		appendStringInfoString(&b, "\\n\\\"end\"");
		v = parse_ok(b.data);
		UT_CHECK(v && v->u.s.len == 9000 + 1 + 1 + 3, "long string len %d",
				 v ? v->u.s.len : -1);
		UT_CHECK(v && memcmp(v->u.s.str + 9000, "\n\"end", 5) == 0, "long tail");
	}
	/* the DOM must not alias the input: parse_len frees it */
	v = parse_ok("{\"key\":\"value\"}");
	UT_CHECK(v && strcmp(v->u.o.members[0].key, "key") == 0 &&
			 strcmp(v->u.o.members[0].value->u.s.str, "value") == 0, "owned copy");
}

static void
test_string_errors(void)
{
	expect_error("\"abc", "x_content_parse_exception",
				 "[1:5] Unexpected end-of-input", "closing quote");
	expect_error("\"a\nb\"", "x_content_parse_exception",
				 "[1:3] Illegal unquoted character ((CTRL-CHAR, code 10))", NULL);
	expect_error("\"a\tb\"", "x_content_parse_exception", "code 9", NULL);
	expect_error("\"\\x\"", "x_content_parse_exception",
				 "Unrecognized character escape 'x' (code 120)", NULL);
	expect_error("\"\\U0041\"", "x_content_parse_exception",
				 "Unrecognized character escape 'U'", NULL);
	expect_error("\"\\u00g1\"", "x_content_parse_exception",
				 "Unexpected character ('g' (code 103)): expected a hex-digit", NULL);
	expect_error("\"\\u00", "x_content_parse_exception",
				 "Unexpected end-of-input in character escape sequence", NULL);
	expect_error("\"\\", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("'single'", "x_content_parse_exception",
				 "Unexpected character (''' (code 39))", NULL);

	/* lone surrogates */
	expect_error("\"\\ud800\"", "x_content_parse_exception",
				 "[1:2]", "lone high surrogate \\uD800");
	expect_error("\"\\ud800x\"", "x_content_parse_exception", "lone high surrogate", NULL);
	expect_error("\"\\ud800\\n\"", "x_content_parse_exception", "lone high surrogate", NULL);
	expect_error("\"\\ud800\\u0041\"", "x_content_parse_exception",
				 "lone high surrogate", NULL);
	expect_error("\"\\ud800\\ud800\"", "x_content_parse_exception",
				 "lone high surrogate", NULL);
	expect_error("\"\\udc00\"", "x_content_parse_exception",
				 "lone low surrogate \\uDC00", NULL);
	expect_error("\"x\\uDFFF\\ud800\"", "x_content_parse_exception",
				 "[1:3]", "lone low surrogate");
	expect_error("\"\\ud800\\u", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("\"\\ud800\\", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("\"\\ud800", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("\"\\ud800\\uZZZZ\"", "x_content_parse_exception", "hex-digit", NULL);
}

static void
check_number(const char *text, bool is_int, int64 i, double d)
{
	SeJson	   *v = parse_ok(text);

	if (v == NULL)
		return;
	UT_CHECK(v->type == SE_JSON_NUMBER, "%s is a number", text);
	UT_CHECK(v->u.n.len == (int) strlen(text) && strcmp(v->u.n.text, text) == 0,
			 "%s text kept (%s)", text, v->u.n.text);
	UT_CHECK(v->u.n.is_int == is_int, "%s is_int %d", text, v->u.n.is_int);
	if (is_int)
		UT_CHECK(v->u.n.i == i, "%s int value " INT64_FORMAT, text, v->u.n.i);
	UT_CHECK(v->u.n.d == d && signbit(v->u.n.d) == signbit(d),
			 "%s double %.17g want %.17g", text, v->u.n.d, d);
}

static void
test_numbers(void)
{
	check_number("0", true, 0, 0.0);
	check_number("-0", true, 0, -0.0);
	check_number("-0.0", false, 0, -0.0);
	check_number("1", true, 1, 1.0);
	check_number("-17", true, -17, -17.0);
	check_number("1.5", false, 0, 1.5);
	check_number("-1.5e3", false, 0, -1500.0);
	check_number("1E+2", false, 0, 100.0);
	check_number("1e-2", false, 0, 0.01);
	check_number("1.0", false, 0, 1.0);
	check_number("1e2", false, 0, 100.0);
	check_number("0.1", false, 0, 0.1);
	check_number("0.30000000000000004", false, 0, 0.30000000000000004);
	check_number("3.141592653589793", false, 0, 3.141592653589793);
	check_number("9223372036854775807", true, PG_INT64_MAX, 9223372036854775807.0);
	check_number("-9223372036854775808", true, PG_INT64_MIN, -9223372036854775808.0);
	check_number("9223372036854775808", false, 0, 9223372036854775808.0);
	check_number("-9223372036854775809", false, 0, -9223372036854775809.0);
	check_number("18446744073709551616", false, 0, 18446744073709551616.0);
	check_number("123456789012345678", true, INT64CONST(123456789012345678),
				 123456789012345678.0);
	check_number("12345678901234567890123", false, 0, 12345678901234567890123.0);
	check_number("2.2250738585072014e-308", false, 0, 2.2250738585072014e-308);
	check_number("1.7976931348623157e308", false, 0, 1.7976931348623157e308);
	check_number("4.9e-324", false, 0, 4.9e-324);
	check_number("1e-400", false, 0, 0.0);
	check_number("-1e-400", false, 0, -0.0);
	check_number("1e400", false, 0, HUGE_VAL);
	check_number("-1e400", false, 0, -HUGE_VAL);
	check_number("0e99999999999999999999", false, 0, 0.0);
	check_number("1e-99999999999999999999", false, 0, 0.0);
	check_number("0.000000000000000000000000000001", false, 0, 1e-30);
	check_number("100000000000000000000000", false, 0, 1e23);
	check_number("9007199254740993", true, INT64CONST(9007199254740993),
				 9007199254740992.0);

	/* inside containers the number ends at the delimiter */
	{
		SeJson	   *v = parse_ok("[1,-2.5e1,3]");

		UT_CHECK(v && v->u.a.count == 3 && v->u.a.items[1]->u.n.d == -25.0 &&
				 v->u.a.items[1]->u.n.len == 6, "number in array");
		v = parse_ok("{\"a\":12}");
		UT_CHECK(v && v->u.o.members[0].value->u.n.i == 12, "number in object");
	}
}

/* The fast path must be bit-identical to strtod. */
static void
test_number_fuzz(void)
{
	uint64		state = UINT64CONST(0x243F6A8885A308D3);
	int			i;
	int			mismatches = 0;

	for (i = 0; i < 20000; i++)
	{
		char		buf[80];
		int			n = 0;
		int			digits,
					frac,
					k;
		SeError		err;
		SeJson	   *v;
		double		ref;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		if (state & 1)
			buf[n++] = '-';
		digits = 1 + (int) ((state >> 8) % 20);
		frac = (int) ((state >> 16) % 12);
		buf[n++] = '1' + (int) ((state >> 24) % 9);
		for (k = 1; k < digits; k++)
			buf[n++] = '0' + (int) ((state >> (k % 50)) % 10);
		if (frac > 0)
		{
			buf[n++] = '.';
			for (k = 0; k < frac; k++)
				buf[n++] = '0' + (int) ((state >> ((k * 3) % 50)) % 10);
		}
		if (state & 2)
			n += sprintf(buf + n, "e%d", (int) ((state >> 32) % 61) - 30);
		buf[n] = '\0';

		v = parse_len(buf, n, NULL, &err);
		if (v == NULL || v->type != SE_JSON_NUMBER)
		{
			UT_CHECK(false, "number %s failed to parse", buf);
			continue;
		}
		ref = strtod(buf, NULL);
		if (memcmp(&v->u.n.d, &ref, sizeof(double)) != 0)
		{
			mismatches++;
			if (mismatches < 5)
				UT_CHECK(false, "%s: %.17g vs strtod %.17g", buf, v->u.n.d, ref);
		}
	}
	UT_CHECK(mismatches == 0, "%d fast-path mismatches", mismatches);
}

static void
test_number_errors(void)
{
	expect_error("01", "x_content_parse_exception",
				 "[1:2] Invalid numeric value: Leading zeroes not allowed", NULL);
	expect_error("-01", "x_content_parse_exception", "Leading zeroes", NULL);
	expect_error("[00]", "x_content_parse_exception", "Leading zeroes", NULL);
	expect_error("-", "x_content_parse_exception", "[1:2] Unexpected end-of-input", NULL);
	expect_error("-a", "x_content_parse_exception",
				 "Unexpected character ('a' (code 97)) in numeric value", "minus sign");
	expect_error("[-]", "x_content_parse_exception", "minus sign", NULL);
	expect_error("1.", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("1.e3", "x_content_parse_exception",
				 "Decimal point not followed by a digit", NULL);
	expect_error("[1.]", "x_content_parse_exception", "Decimal point", NULL);
	expect_error("1e", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("1e+", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("[1e+]", "x_content_parse_exception",
				 "Exponent indicator not followed by a digit", NULL);
	expect_error("[1E,2]", "x_content_parse_exception", "Exponent indicator", NULL);
	expect_error(".5", "x_content_parse_exception", "('.' (code 46))", NULL);
	expect_error("+1", "x_content_parse_exception", "('+' (code 43))", NULL);
	expect_error("0x10", "x_content_parse_exception",
				 "('x' (code 120))", "end of input");
	expect_error("1.5.3", "x_content_parse_exception", "('.' (code 46))", NULL);
	expect_error("NaN", "x_content_parse_exception", "Non-standard token 'NaN'", NULL);
	expect_error("[Infinity]", "x_content_parse_exception",
				 "Non-standard token 'Infinity'", NULL);
	expect_error("-Infinity", "x_content_parse_exception",
				 "Non-standard token '-Infinity'", NULL);
	expect_error("-Inf", "x_content_parse_exception", "minus sign", NULL);
}

static void
test_literal_errors(void)
{
	expect_error("tru", "x_content_parse_exception", "[1:1] Unrecognized token 'tru'",
				 "was expecting (JSON String, Number, Array, Object");
	expect_error("nul", "x_content_parse_exception", "Unrecognized token 'nul'", NULL);
	expect_error("truex", "x_content_parse_exception", "Unrecognized token 'truex'", NULL);
	expect_error("True", "x_content_parse_exception", "Unrecognized token 'True'", NULL);
	expect_error("[nulll]", "x_content_parse_exception", "'nulll'", NULL);
	expect_error("{\"a\":fals}", "x_content_parse_exception", "[1:6]", "'fals'");
	expect_error("{\"a\":undefined}", "x_content_parse_exception", "'undefined'", NULL);
	expect_error("true false", "x_content_parse_exception", "[1:6]", "end of input");
}

static void
test_syntax_errors(void)
{
	/* exact reasons for the common mistakes */
	expect_reason("{\"a\":1,}", "x_content_parse_exception",
				  "[1:8] Unexpected character ('}' (code 125)): was expecting double-quote to start field name");
	expect_reason("{\"a\":}", "x_content_parse_exception",
				  "[1:6] Unexpected character ('}' (code 125)): was expecting a value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')");
	expect_reason("[1}", "x_content_parse_exception",
				  "[1:3] Unexpected close marker '}': expected ']' (for Array starting at [1:1])");
	expect_reason("  {\"a\":[1]]", "x_content_parse_exception",
				  "[1:11] Unexpected close marker ']': expected '}' (for Object starting at [1:3])");
	expect_reason("{\"a\" 1}", "x_content_parse_exception",
				  "[1:6] Unexpected character ('1' (code 49)): was expecting a colon to separate field name and value");
	expect_reason("{\"a\":1 \"b\":2}", "x_content_parse_exception",
				  "[1:8] Unexpected character ('\"' (code 34)): was expecting comma to separate Object entries");
	expect_reason("[1 2]", "x_content_parse_exception",
				  "[1:4] Unexpected character ('2' (code 50)): was expecting comma to separate Array entries");
	expect_reason("{\"a\":1", "x_content_parse_exception",
				  "[1:7] Unexpected end-of-input: expected close marker for Object (start marker at [1:1])");
	expect_reason("[\n[1,\n", "x_content_parse_exception",
				  "[3:1] Unexpected end-of-input: expected close marker for Array (start marker at [2:1])");

	expect_error("[1,]", "x_content_parse_exception", "[1:4]", "(']' (code 93)): was expecting a value");
	expect_error("[,1]", "x_content_parse_exception", "[1:2]", "(',' (code 44))");
	expect_error("{a:1}", "x_content_parse_exception",
				 "('a' (code 97)): was expecting double-quote to start field name", NULL);
	expect_error("{,}", "x_content_parse_exception", "double-quote", NULL);
	expect_error("{\"a\"}", "x_content_parse_exception", "colon", NULL);
	expect_error("{\"a\":1,,\"b\":2}", "x_content_parse_exception", "double-quote", NULL);
	expect_error("{1:2}", "x_content_parse_exception", "double-quote", NULL);
	expect_error("{\"a\":1 /* c */}", "x_content_parse_exception", "('/' (code 47))", NULL);
	expect_error("// c\n1", "x_content_parse_exception", "[1:1]", "('/' (code 47))");
	expect_error("# c\n1", "x_content_parse_exception", "('#' (code 35))", NULL);
	expect_error("]", "x_content_parse_exception", "[1:1]", "(']' (code 93))");
	expect_error("}", "x_content_parse_exception", "[1:1]", "was expecting a value");
	expect_error("1 2", "x_content_parse_exception", "[1:3]", "end of input after the root value");
	expect_error("{}x", "x_content_parse_exception", "[1:3]", "('x' (code 120))");
	expect_error("{}{}", "x_content_parse_exception", "[1:3]", NULL);
	expect_error("[", "x_content_parse_exception", "[1:2] Unexpected end-of-input", "Array");
	expect_error("{", "x_content_parse_exception", "[1:2] Unexpected end-of-input", "Object");
	expect_error("{\"a\"", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("{\"a\":", "x_content_parse_exception", "end-of-input", NULL);
	expect_error("", "x_content_parse_exception", "[1:1] Unexpected end-of-input", "value");
	expect_error("   \n ", "x_content_parse_exception", "[2:2] Unexpected end-of-input", NULL);
	expect_error("\v1", "x_content_parse_exception", "(CTRL-CHAR, code 11)", NULL);
	expect_error("\xc2\xa0" "1", "x_content_parse_exception",
				 "[1:1] Unexpected character ('\xc2\xa0' (code 160 / 0xa0))", NULL);
	expect_error("[1]\x7f", "x_content_parse_exception", "(CTRL-CHAR, code 127)", NULL);

	/* an embedded NUL is data, not a terminator */
	parse_fail_len("{}\0", 3, NULL, "x_content_parse_exception");
	parse_fail_len("[1,\0 2]", 7, NULL, "x_content_parse_exception");
	parse_fail_len("\"a\0b\"", 5, NULL, "x_content_parse_exception");

	/* NULL text, and the size limit (checked before reading) */
	{
		SeError		err;

		se_error_init(&err);
		UT_CHECK(se_json_parse(NULL, 0, NULL, &err) == NULL && se_error_is_set(&err),
				 "NULL input fails");
		se_error_init(&err);
		UT_CHECK(se_json_parse("{}", SE_JSON_MAX_INPUT + 1, NULL, &err) == NULL &&
				 se_error_is_set(&err) && strstr(err.reason, "exceeds") != NULL,
				 "oversized input refused");
		/* a NULL err is allowed */
		UT_CHECK(se_json_parse("{", 1, NULL, NULL) == NULL, "NULL err");
	}
}

static void
test_positions(void)
{
	/* lines: LF, CRLF and lone CR all end a line */
	expect_error("{\n  \"a\": 1,\n  \"b\": ?\n}", "x_content_parse_exception", "[3:8]", NULL);
	expect_error("{\r\n  \"a\": 1,\r\n  \"b\": ?\r\n}", "x_content_parse_exception", "[3:8]", NULL);
	expect_error("{\r  \"a\": 1,\r  \"b\": ?\r}", "x_content_parse_exception", "[3:8]", NULL);
	/* columns count characters, not bytes */
	expect_error("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82\", x]", "x_content_parse_exception",
				 "[1:9]", "Unrecognized token 'x'");
	expect_error("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82\", ?]", "x_content_parse_exception",
				 "[1:9]", "('?' (code 63))");
	/* a leading BOM is skipped and not counted */
	{
		SeJson	   *v = parse_ok("\xef\xbb\xbf{\"a\":1}");

		UT_CHECK(v && v->type == SE_JSON_OBJECT, "BOM skipped");
		expect_error("\xef\xbb\xbf{x}", "x_content_parse_exception", "[1:2]", NULL);
		expect_error("\xef\xbb\xbf", "x_content_parse_exception", "end-of-input", NULL);
		expect_error("1\xef\xbb\xbf", "x_content_parse_exception", "[1:2]", NULL);
	}
}

static void
test_utf8_errors(void)
{
	/* the example from the spec */
	expect_reason("{\"a\":\"\xff\"}", "json_parse_exception",
				  "Invalid UTF-8 start byte 0xff at [1:7]");
	expect_error("\"\x80\"", "json_parse_exception", "Invalid UTF-8 start byte 0x80", "[1:2]");
	expect_error("\"\xbf\"", "json_parse_exception", "start byte 0xbf", NULL);
	expect_error("\"\xc0\x80\"", "json_parse_exception", "0xc0 (overlong", NULL);
	expect_error("\"\xc1\xbf\"", "json_parse_exception", "0xc1 (overlong", NULL);
	expect_error("\"\xe0\x80\x80\"", "json_parse_exception", "overlong", NULL);
	expect_error("\"\xe0\x9f\xbf\"", "json_parse_exception", "overlong", NULL);
	expect_error("\"\xf0\x80\x80\x80\"", "json_parse_exception", "overlong", NULL);
	expect_error("\"\xf0\x8f\xbf\xbf\"", "json_parse_exception", "overlong", NULL);
	expect_error("\"\xed\xa0\x80\"", "json_parse_exception", "encoded surrogate", NULL);
	expect_error("\"\xed\xbf\xbf\"", "json_parse_exception", "encoded surrogate", NULL);
	expect_error("\"\xf4\x90\x80\x80\"", "json_parse_exception", "above U+10FFFF", NULL);
	expect_error("\"\xf5\x80\x80\x80\"", "json_parse_exception", "start byte 0xf5", NULL);
	expect_error("\"\xf8\x88\x80\x80\x80\"", "json_parse_exception", "start byte 0xf8", NULL);
	expect_error("\"\xfe\"", "json_parse_exception", "start byte 0xfe", NULL);
	expect_error("\"a\xe2\x82\"", "json_parse_exception", "middle byte 0x22", "[1:3]");
	expect_error("\"\xc3(\"", "json_parse_exception", "middle byte 0x28", NULL);
	expect_error("\"\xe2\x82", "json_parse_exception", "truncated", NULL);
	expect_error("\"\xf0\x9f\x99", "json_parse_exception", "truncated", NULL);
	/* in keys, after escapes, and outside strings */
	expect_error("{\"k\xff\":1}", "json_parse_exception", "0xff", "[1:4]");
	expect_error("\"\\n\xff\"", "json_parse_exception", "0xff", "[1:4]");
	expect_error("[\xff]", "json_parse_exception", "0xff", "[1:2]");
	expect_error("\xed\xa0\x80", "json_parse_exception", "encoded surrogate", NULL);
	expect_error("[1,\xc3]", "json_parse_exception", "middle byte 0x5d", NULL);
	expect_error("[1]\xe2\x82", "json_parse_exception", "truncated", NULL);
	/* boundaries that are valid */
	parse_ok("\"\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"
			 "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"");
}

static void
test_utf8_validate(void)
{
	char		big[2048];

	UT_CHECK(se_utf8_validate("", 0) == -1, "empty");
	UT_CHECK(se_utf8_validate("hello", 5) == -1, "ascii");
	UT_CHECK(se_utf8_validate("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x99\x82", 15) == -1, "mixed");
	UT_CHECK(se_utf8_validate("ab\xff", 3) == 2, "bad start");
	UT_CHECK(se_utf8_validate("ab\xc3", 3) == 2, "truncated");
	UT_CHECK(se_utf8_validate("ab\xc3x", 4) == 2, "bad middle");
	UT_CHECK(se_utf8_validate("\xc0\x80", 2) == 0, "overlong 2");
	UT_CHECK(se_utf8_validate("\xe0\x80\xaf", 3) == 0, "overlong 3");
	UT_CHECK(se_utf8_validate("\xf0\x80\x80\xaf", 4) == 0, "overlong 4");
	UT_CHECK(se_utf8_validate("x\xed\xa0\x80", 4) == 1, "surrogate");
	UT_CHECK(se_utf8_validate("\xf4\x8f\xbf\xbf", 4) == -1, "U+10FFFF ok");
	UT_CHECK(se_utf8_validate("\xf4\x90\x80\x80", 4) == 0, "U+110000");
	UT_CHECK(se_utf8_validate("a\0b", 3) == -1, "NUL is valid UTF-8");
	memset(big, 'a', sizeof(big));
	UT_CHECK(se_utf8_validate(big, sizeof(big)) == -1, "long ascii");
	big[1001] = (char) 0x80;
	UT_CHECK(se_utf8_validate(big, sizeof(big)) == 1001, "bad byte deep in ascii");
	big[1001] = (char) 0xc3;
	big[1002] = (char) 0xa9;
	UT_CHECK(se_utf8_validate(big, sizeof(big)) == -1, "valid 2-byte deep in ascii");
	big[2047] = (char) 0xe2;
	UT_CHECK(se_utf8_validate(big, sizeof(big)) == 2047, "truncated at the end");
	UT_CHECK(se_utf8_validate(NULL, 0) == -1, "NULL empty");
}

static char *
nested(int depth, const char *open, const char *close, const char *inner)
{
	StringInfoData b;
	int			i;

	initStringInfo(&b);
	for (i = 0; i < depth; i++)
		appendStringInfoString(&b, open);
	appendStringInfoString(&b, inner);
	for (i = 0; i < depth; i++)
		appendStringInfoString(&b, close);
	return b.data;
}

static void
test_depth(void)
{
	SeJsonParseOptions opts = {0, false};
	SeError		err;
	char	   *s;
	SeJson	   *v;
	const char *r;

	s = nested(SE_JSON_MAX_DEPTH, "[", "]", "1");
	v = parse_len(s, strlen(s), NULL, &err);
	UT_CHECK(v != NULL, "1000 levels allowed by default");
	s = nested(SE_JSON_MAX_DEPTH + 1, "[", "]", "1");
	r = parse_fail_len(s, strlen(s), NULL, "x_content_parse_exception");
	UT_CHECK(strstr(r, "[1:1001] Document nesting depth (1001) exceeds the maximum allowed (1000)") != NULL,
			 "depth reason: %s", r);
	s = nested(SE_JSON_MAX_DEPTH + 1, "{\"a\":", "}", "1");
	r = parse_fail_len(s, strlen(s), NULL, "x_content_parse_exception");
	UT_CHECK(strstr(r, "nesting depth") != NULL, "object depth: %s", r);

	opts.max_depth = 3;
	v = parse_len("[{\"a\":[]}]", 10, &opts, &err);
	UT_CHECK(v != NULL, "depth 3 ok");
	r = parse_fail_len("[{\"a\":[[]]}]", 12, &opts, "x_content_parse_exception");
	UT_CHECK(strstr(r, "(4) exceeds the maximum allowed (3)") != NULL, "custom: %s", r);
	/* scalars do not count as depth */
	opts.max_depth = 1;
	v = parse_len("[1,\"x\",null]", 12, &opts, &err);
	UT_CHECK(v != NULL, "depth 1 with scalars");
	v = parse_len("7", 1, &opts, &err);
	UT_CHECK(v != NULL, "scalar at depth 0");

	/* very deep documents parse and print without recursion */
	opts.max_depth = 200000;
	s = nested(150000, "[", "]", "");
	v = parse_len(s, strlen(s), &opts, &err);
	UT_CHECK(v != NULL, "150000 levels with a raised limit");
	if (v)
	{
		char	   *out = to_s(v);

		UT_CHECK(strcmp(out, s) == 0, "deep round trip");
	}
	s = nested(150000, "{\"k\":", "}", "0");
	v = parse_len(s, strlen(s), &opts, &err);
	UT_CHECK(v != NULL, "150000 object levels");
	if (v)
		UT_CHECK(strcmp(to_s(v), s) == 0, "deep object round trip");
}

static void
test_duplicates(void)
{
	SeJsonParseOptions strict = {0, true};
	SeError		err;
	SeJson	   *v;
	const char *r;
	StringInfoData b;
	int			i;

	/* allowed by default; last one wins on lookup */
	v = parse_ok("{\"a\":1,\"b\":2,\"a\":3}");
	UT_CHECK(v && v->u.o.count == 3 && se_json_get(v, "a")->u.n.i == 3, "last wins");

	r = parse_fail_len("{\"a\":1,\"b\":2,\"a\":3}", 19, &strict, "json_parse_exception");
	UT_CHECK(strcmp(r, "Duplicate field 'a' at [1:14]") == 0, "dup reason: %s", r);
	/* escapes are compared decoded */
	r = parse_fail_len("{\"a\":1,\"\\u0061\":2}", 18, &strict, "json_parse_exception");
	UT_CHECK(strstr(r, "Duplicate field 'a'") != NULL, "escaped dup: %s", r);
	/* same key in different objects is fine */
	v = parse_len("{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}]}", 41, &strict, &err);
	UT_CHECK(v != NULL, "nested same keys: %s", err.reason ? err.reason : "");
	/* keys that differ after a NUL or by length are distinct */
	{
		const char *d = "{\"a\":1,\"a\\u0000\":2,\"a\\u0000b\":3,\"ab\":4,\"\":5}";

		v = parse_len(d, strlen(d), &strict, &err);
	}
	UT_CHECK(v != NULL && v->u.o.count == 5, "distinct keys: %s", err.reason ? err.reason : "");
	r = parse_fail_len("{\"\":1,\"\":2}", 11, &strict, "json_parse_exception");
	UT_CHECK(strstr(r, "Duplicate field ''") != NULL, "empty key dup: %s", r);
	/* duplicate inside a nested object */
	r = parse_fail_len("{\"x\":{\"q\":1,\"q\":2}}", 20, &strict, "json_parse_exception");
	UT_CHECK(strstr(r, "'q' at [1:13]") != NULL, "nested dup: %s", r);

	/* large objects use the hash table: no false positives, dup found */
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (i = 0; i < 5000; i++)
		appendStringInfo(&b, "%s\"key%d\":%d", i ? "," : "", i, i);
	appendStringInfoChar(&b, '}');
	v = parse_len(b.data, b.len, &strict, &err);
	UT_CHECK(v != NULL && v->u.o.count == 5000, "5000 distinct keys");
	if (v)
		UT_CHECK(se_json_get(v, "key4321")->u.n.i == 4321, "lookup in big object");
	b.len--;
	appendStringInfoString(&b, ",\"key2500\":0}");
	r = parse_fail_len(b.data, b.len, &strict, "json_parse_exception");
	UT_CHECK(strstr(r, "Duplicate field 'key2500'") != NULL, "big dup: %s", r);
	/* dup across the linear/hash threshold */
	for (i = 1; i < 40; i++)
	{
		int			j;

		resetStringInfo(&b);
		appendStringInfoChar(&b, '{');
		for (j = 0; j < i; j++)
			appendStringInfo(&b, "\"k%d\":0,", j);
		appendStringInfo(&b, "\"k%d\":1}", i / 2);
		r = parse_fail_len(b.data, b.len, &strict, "json_parse_exception");
		UT_CHECK(strstr(r, "Duplicate field") != NULL, "dup after %d keys", i);
	}
	/* a long key is truncated in the message */
	resetStringInfo(&b);
	appendStringInfoString(&b, "{\"");
	for (i = 0; i < 500; i++)
		appendStringInfoChar(&b, 'x');
	appendStringInfoString(&b, "\":1,\"");
	for (i = 0; i < 500; i++)
		appendStringInfoChar(&b, 'x');
	appendStringInfoString(&b, "\":2}");
	r = parse_fail_len(b.data, b.len, &strict, "json_parse_exception");
	UT_CHECK(strlen(r) < 200 && strstr(r, "...") != NULL, "long key shortened: %zu", strlen(r));
}

static const char *sample_doc =
"{\n"
"  \"title\": \"The quick brown fox \\\"jumps\\\"\",\n"
"  \"body\": \"caf\xc3\xa9 \\u00e9\\ud83d\\ude00 \xf0\x9f\x99\x82 tab\\tend\",\n"
"  \"count\": -12345, \"ratio\": 0.25e-3, \"big\": 123456789012345678901,\n"
"  \"tags\": [\"a\", \"b\", [], {}, [null, true, false]],\n"
"  \"nested\": {\"x\": {\"y\": [1, 2, {\"z\": \"\"}]}}\n"
"}";

/* Every proper prefix of a document must fail cleanly (never crash). */
static void
test_truncation(void)
{
	size_t		len = strlen(sample_doc);
	size_t		i;
	SeError		err;
	SeJson	   *v;
	int			failures = 0;

	v = parse_len(sample_doc, len, NULL, &err);
	UT_CHECK(v != NULL, "sample parses: %s", err.reason ? err.reason : "");
	if (v)
	{
		SeJson	   *again = parse_ok(to_s(v));

		UT_CHECK(again && strcmp(to_s(again), to_s(v)) == 0, "sample round trip");
	}
	for (i = 0; i < len; i++)
	{
		v = parse_len(sample_doc, i, NULL, &err);
		if (v != NULL || !se_error_is_set(&err) || err.status != 400)
			failures++;
	}
	UT_CHECK(failures == 0, "%d prefixes did not fail cleanly", failures);
	/* the same with duplicate detection on */
	{
		SeJsonParseOptions strict = {0, true};

		failures = 0;
		for (i = 0; i < len; i++)
		{
			v = parse_len(sample_doc, i, &strict, &err);
			if (v != NULL || !se_error_is_set(&err))
				failures++;
		}
		UT_CHECK(failures == 0, "%d strict prefixes did not fail", failures);
	}
}

/*
 * One random edit of buf[0..*n) (replace, delete or insert a byte), driven
 * by the xorshift *state: the inserted or replacing byte is from alphabet,
 * or (with raw) half the time any byte.  buf has room for one more byte.
 */
static void
mutate_once(char *buf, size_t *n, uint64 *state, const char *alphabet, size_t nalpha,
			bool raw)
{
	size_t		pos;
	char		c;

	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	pos = (size_t) ((*state >> 8) % *n);
	c = (raw && ((*state >> 40) & 1)) ? (char) (*state >> 48) :
		alphabet[(*state >> 48) % nalpha];
	switch ((*state >> 4) % 3)
	{
		case 0:
			buf[pos] = c;
			break;
		case 1:					/* delete */
			memmove(buf + pos, buf + pos + 1, *n - pos - 1);
			(*n)--;
			break;
		default:				/* insert */
			memmove(buf + pos + 1, buf + pos, *n - pos);
			buf[pos] = c;
			(*n)++;
			break;
	}
}

/*
 * Random byte mutations of the sample: must never crash; whatever parses
 * must serialize to JSON that parses again to the same text.
 */
static void
test_mutation_fuzz(void)
{
	size_t		len = strlen(sample_doc);
	char	   *buf = palloc(len + 8);
	uint64		state = UINT64CONST(0x9E3779B97F4A7C15);
	int			i;
	int			ok = 0,
				bad_roundtrip = 0,
				no_error = 0;
	static const char interesting[] = "{}[]\",:\\u0e.-+ \n\x80\xff\xc3\xed\xf4";
	SeJsonParseOptions strict = {4, true};

	for (i = 0; i < 20000; i++)
	{
		size_t		n = len;
		int			edits,
					k;
		SeError		err;
		SeJson	   *v;

		memcpy(buf, sample_doc, len);
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		edits = 1 + (int) (state % 3);
		for (k = 0; k < edits; k++)
			mutate_once(buf, &n, &state, interesting, sizeof(interesting) - 1, true);
		v = parse_len(buf, n, (i & 1) ? &strict : NULL, &err);
		if (v)
		{
			char	   *out = to_s(v);
			SeJson	   *again;

			ok++;
			again = parse_len(out, strlen(out), NULL, &err);
			if (again == NULL || strcmp(to_s(again), out) != 0)
				bad_roundtrip++;
		}
		else if (!se_error_is_set(&err) || err.status != 400 || err.reason == NULL ||
				 err.reason[0] == '\0')
			no_error++;
	}
	UT_CHECK(bad_roundtrip == 0, "%d mutated docs did not round trip", bad_roundtrip);
	UT_CHECK(no_error == 0, "%d failures without an error", no_error);
	UT_CHECK(ok > 0, "some mutations still parse (%d)", ok);
}

/*
 * What the full parser makes of an action line, in the scanner's terms:
 * true when the line is {"op": {...}} whose members are all strings under
 * _index/_id/routing/_routing, each once (the shape the scanner may take).
 */
static bool
action_by_dom(const char *line, size_t len, SeActionLine *a, bool *plain)
{
	SeError		err;
	SeJson	   *j = parse_len(line, len, NULL, &err);
	const SeJson *o;
	int			i;

	memset(a, 0, sizeof(*a));
	*plain = false;
	if (j == NULL || j->type != SE_JSON_OBJECT || j->u.o.count != 1 ||
		j->u.o.members[0].value->type != SE_JSON_OBJECT)
		return false;
	a->op = j->u.o.members[0].key;
	a->op_len = j->u.o.members[0].keylen;
	o = j->u.o.members[0].value;
	for (i = 0; i < o->u.o.count; i++)
	{
		const SeJsonMember *m = &o->u.o.members[i];
		const char **dst = NULL;
		int		   *dlen = NULL;

		if (m->value->type != SE_JSON_STRING)
			return true;
		if (strcmp(m->key, "_index") == 0)
			dst = &a->index, dlen = &a->index_len;
		else if (strcmp(m->key, "_id") == 0)
			dst = &a->id, dlen = &a->id_len;
		else if (strcmp(m->key, "routing") == 0 || strcmp(m->key, "_routing") == 0)
			dst = &a->routing, dlen = &a->routing_len;
		if (dst == NULL || *dst != NULL)
			return true;
		*dst = m->value->u.s.str;
		*dlen = m->value->u.s.len;
	}
	*plain = true;
	return true;
}

static bool
same_slice(const char *a, int an, const char *b, int bn)
{
	if (a == NULL || b == NULL)
		return a == b;
	return an == bn && memcmp(a, b, an) == 0;
}

/* Scan from an exact-size heap copy; compare with the full parse. */
static int
check_action(const char *line, size_t len)
{
	char	   *copy = malloc(len ? len : 1);
	SeActionLine f,
				d;
	bool		fast,
				parsed,
				plain;
	int			bad = 0;

	memcpy(copy, line, len);
	fast = se_json_scan_action_line(copy, len, &f);
	parsed = action_by_dom(line, len, &d, &plain);
	if (fast)
	{
		/* whatever the scanner takes, the full parse reads the same way */
		if (!parsed || !plain ||
			!same_slice(f.op, f.op_len, d.op, d.op_len) ||
			!same_slice(f.index, f.index_len, d.index, d.index_len) ||
			!same_slice(f.id, f.id_len, d.id, d.id_len) ||
			!same_slice(f.routing, f.routing_len, d.routing, d.routing_len))
			bad = 1;
	}
	free(copy);
	return bad;
}

static void
test_action_lines(void)
{
	static const char *const taken[] = {
		"{\"index\":{\"_id\":\"1\"}}",
		"{\"index\":{}}",
		" { \"create\" : { \"_index\" : \"logs-1\" , \"_id\" : \"a b\" } } \r",
		"{\"delete\":{\"_index\":\"x\",\"_id\":\"\",\"routing\":\"r\"}}",
		"{\"update\":{\"_routing\":\"r\",\"_id\":\"9\"}}",
		"{\"frobnicate\":{\"_id\":\"1\"}}",	/* taken; the caller rejects the op */
	};
	static const char *const left[] = {
		"{\"index\":{\"_id\":1}}",	/* number */
		"{\"index\":{\"_id\":\"\\u0041\"}}",	/* escape */
		"{\"index\":{\"_id\":\"\xc3\xa9\"}}",	/* non-ASCII */
		"{\"index\":{\"_id\":\"1\",\"_id\":\"2\"}}",	/* repeated */
		"{\"index\":{\"routing\":\"1\",\"_routing\":\"2\"}}",
		"{\"index\":{\"if_seq_no\":3}}",	/* other keys */
		"{\"index\":{\"pipeline\":\"p\"}}",
		"{\"index\":{\"_id\":null}}",
		"{\"index\":{\"_id\":\"1\"}",	/* truncated */
		"{\"index\":{\"_id\":\"1\"}}}",
		"{\"index\":{\"_id\":\"1\",}}",
		"{\"index\":{\"_id\":\"1\"},\"x\":{}}",
		"{\"index\":\"x\"}",
		"[\"index\"]",
		"",
		"\xef\xbb\xbf{\"index\":{}}",	/* BOM: the full parser skips it */
	};
	SeActionLine a;
	int			i,
				bad = 0;
	uint64		state = UINT64CONST(0x2545F4914F6CDD1D);
	static const char interesting[] = "{}\",: \t\r\\_idxroutg0\x80\x01";
	char		buf[128];

	for (i = 0; i < lengthof(taken); i++)
	{
		UT_CHECK(se_json_scan_action_line(taken[i], strlen(taken[i]), &a),
				 "scanner takes %s", taken[i]);
		bad += check_action(taken[i], strlen(taken[i]));
	}
	UT_CHECK(se_json_scan_action_line(taken[2], strlen(taken[2]), &a) &&
			 a.id_len == 3 && memcmp(a.id, "a b", 3) == 0 && a.routing == NULL,
			 "slices of the line");
	for (i = 0; i < lengthof(left); i++)
		UT_CHECK(!se_json_scan_action_line(left[i], strlen(left[i]), &a),
				 "scanner leaves %s to the full parse", left[i]);
	/* mutations of taken shapes: the scanner never disagrees with the parser */
	for (i = 0; i < 50000; i++)
	{
		const char *src = taken[i % 5];
		size_t		n = strlen(src);
		int			edits = 1 + (int) (state % 3),
					k;

		memcpy(buf, src, n);
		for (k = 0; k < edits && n > 1 && n < sizeof(buf) - 1; k++)
			mutate_once(buf, &n, &state, interesting, sizeof(interesting) - 1, false);
		bad += check_action(buf, n);
	}
	UT_CHECK(bad == 0, "%d action lines read differently by the scanner and the parser", bad);
}

/* se_json_string_size counts exactly what se_json_write_string appends. */
static void
test_string_size(void)
{
	static const char *const fixed[] = {
		"", "plain", "a\"b\\c/d", "\b\f\n\r\t\x01\x1f\x7f",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", "a\xff" "b\xed\xa0\x80" "c\xe2\x82",
	};
	StringInfoData b;
	char		buf[64];
	int			i,
				k;
	bool		ok = true;

	initStringInfo(&b);
	for (i = 0; i < lengthof(fixed); i++)
	{
		resetStringInfo(&b);
		se_json_write_string(&b, fixed[i], strlen(fixed[i]));
		UT_CHECK(se_json_string_size(fixed[i], strlen(fixed[i])) == b.len,
				 "size of [%s]: %lld, written %d", fixed[i],
				 (long long) se_json_string_size(fixed[i], strlen(fixed[i])), b.len);
	}
	/* random bytes: controls, quotes, valid and broken UTF-8 */
	for (i = 0; i < 20000 && ok; i++)
	{
		int			len = (int) (ut_rnd() % sizeof(buf));

		for (k = 0; k < len; k++)
			buf[k] = (char) (ut_rnd() % 4 == 0 ? 0xC0 + ut_rnd() % 0x30 : ut_rnd());
		resetStringInfo(&b);
		se_json_write_string(&b, buf, len);
		ok = se_json_string_size(buf, len) == b.len;
	}
	UT_CHECK(ok, "size of random strings matches what is written (string %d)", i);
	pfree(b.data);
}

static void
test_write_string(void)
{
	StringInfoData b;

	initStringInfo(&b);
	se_json_write_string(&b, "a\"b\\c/d", 7);
	UT_CHECK(strcmp(b.data, "\"a\\\"b\\\\c/d\"") == 0, "quote and backslash: %s", b.data);

	resetStringInfo(&b);
	se_json_write_string(&b, "\b\f\n\r\t\x01\x1f\x7f", 8);
	UT_CHECK(strcmp(b.data, "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"") == 0,
			 "controls: %s", b.data);

	resetStringInfo(&b);
	se_json_write_string(&b, "a\0b", 3);
	UT_CHECK(b.len == 10 && memcmp(b.data, "\"a\\u0000b\"", 10) == 0, "NUL");

	resetStringInfo(&b);
	se_json_write_string(&b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", 14);
	UT_CHECK(strcmp(b.data, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\"") == 0,
			 "UTF-8 unchanged");

	/* invalid UTF-8 becomes U+FFFD so the output is valid JSON */
	resetStringInfo(&b);
	se_json_write_string(&b, "a\xff" "b\xed\xa0\x80" "c\xe2\x82", 9);
	UT_CHECK(se_utf8_validate(b.data, b.len) == -1, "output valid UTF-8");
	UT_CHECK(strncmp(b.data, "\"a\xef\xbf\xbd" "b", 6) == 0, "0xff replaced: %s", b.data);

	resetStringInfo(&b);
	se_json_write_string(&b, "plain", -1);
	UT_CHECK(strcmp(b.data, "\"plain\"") == 0, "len -1 means strlen");
	resetStringInfo(&b);
	se_json_write_string(&b, NULL, 5);
	UT_CHECK(strcmp(b.data, "\"\"") == 0, "NULL string");

	/* every byte value survives write -> parse when valid */
	{
		char		all[128];
		int			i;
		SeJson	   *v;

		for (i = 0; i < 128; i++)
			all[i] = (char) i;
		resetStringInfo(&b);
		se_json_write_string(&b, all, 128);
		v = parse_ok(b.data);
		UT_CHECK(v && v->u.s.len == 128 && memcmp(v->u.s.str, all, 128) == 0,
				 "all ASCII round trip");
	}
}

static void
test_write_dom(void)
{
	SeJson	   *obj = palloc0(sizeof(SeJson));
	SeJson	   *arr = palloc0(sizeof(SeJson));
	SeJsonMember *m = palloc0(sizeof(SeJsonMember) * 4);
	SeJson	  **items = palloc0(sizeof(SeJson *) * 5);
	SeJson	   *v;
	char	   *s;

	items[0] = se_json_make_number_int(PG_INT64_MIN);
	items[1] = se_json_make_number_double(0.1);
	items[2] = se_json_make_number_double(1.0 / 0.0);
	items[3] = se_json_make_bool(true);
	items[4] = NULL;
	arr->type = SE_JSON_ARRAY;
	arr->u.a.count = 5;
	arr->u.a.items = items;
	m[0].key = "s";
	m[0].keylen = 1;
	m[0].value = se_json_make_string("x\"y", -1);
	m[1].key = "a";
	m[1].keylen = 1;
	m[1].value = arr;
	m[2].key = "k\n";
	m[2].keylen = 2;
	m[2].value = se_json_make_null();
	m[3].key = "e";
	m[3].keylen = 1;
	m[3].value = se_json_make_bool(false);
	obj->type = SE_JSON_OBJECT;
	obj->u.o.count = 4;
	obj->u.o.members = m;

	s = to_s(obj);
	UT_CHECK(strcmp(s, "{\"s\":\"x\\\"y\",\"a\":[-9223372036854775808,0.1,null,true,null],"
					"\"k\\n\":null,\"e\":false}") == 0, "hand-built DOM: %s", s);

	v = se_json_make_number_double(2.5);
	UT_CHECK(v->type == SE_JSON_NUMBER && strcmp(v->u.n.text, "2.5") == 0 &&
			 !v->u.n.is_int, "double node");
	v = se_json_make_number_double(1e300);
	UT_CHECK(strtod(v->u.n.text, NULL) == 1e300, "double text reads back: %s", v->u.n.text);
	v = se_json_make_number_double(3.0);
	UT_CHECK(v->u.n.is_int && v->u.n.i == 3, "integral double");
	v = se_json_make_number_int(42);
	UT_CHECK(strcmp(v->u.n.text, "42") == 0 && v->u.n.i == 42 && v->u.n.d == 42.0, "int node");
	v = se_json_make_string("ab", 1);
	UT_CHECK(v->u.s.len == 1 && strcmp(v->u.s.str, "a") == 0, "string node copies len bytes");

	/* a number without text falls back to its values */
	v = palloc0(sizeof(SeJson));
	v->type = SE_JSON_NUMBER;
	v->u.n.d = 0.5;
	UT_CHECK(strcmp(to_s(v), "0.5") == 0, "textless double");
	v->u.n.is_int = true;
	v->u.n.i = -7;
	UT_CHECK(strcmp(to_s(v), "-7") == 0, "textless int");
	UT_CHECK(strcmp(to_s(NULL), "null") == 0, "NULL value");

	/* writing appends */
	{
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "x=");
		se_json_write(&b, se_json_make_bool(true));
		UT_CHECK(strcmp(b.data, "x=true") == 0, "appends");
	}
}

/* \u0000: kept by default (translog replay), refused with reject_nul */
static const char *
nul_refused(const char *text)
{
	SeJsonParseOptions no_nul = {.reject_nul = true};

	return parse_fail_len(text, strlen(text), &no_nul, "x_content_parse_exception");
}

static void
test_nul(void)
{
	SeJsonParseOptions no_nul = {.reject_nul = true};
	const char *text = "{\"s\":\"\\\\u0000 \\u0001\"}";
	SeError		err;
	SeJson	   *v;
	const char *r;

	v = parse_ok("{\"s\":\"a\\u0000b\"}");
	UT_CHECK(v && se_json_get(v, "s")->u.s.len == 3, "NUL kept by default");
	UT_CHECK(v && se_json_has_nul(v), "has_nul finds it");
	r = nul_refused("{\"s\":\"a\\u0000b\"}");
	UT_CHECK(strstr(r, "[1:8] The NUL character") != NULL, "value refused: %s", r);
	r = nul_refused("{\"k\\u0000\":1}");
	UT_CHECK(strstr(r, "NUL") != NULL, "key refused: %s", r);
	r = nul_refused("[1,[{\"a\":[\"\\u0000\"]}]]");
	UT_CHECK(strstr(r, "NUL") != NULL, "deep refused: %s", r);
	/* an escaped backslash before u0000 is text, and other escapes pass */
	v = parse_len(text, strlen(text), &no_nul, &err);
	UT_CHECK(v != NULL && !se_json_has_nul(v), "\\\\u0000 is text: %s", err.reason ? err.reason : "");
	v = parse_ok("{\"a\":[1,{\"b\":\"x\"}],\"k\\u0000\":null}");
	UT_CHECK(v && se_json_has_nul(v), "has_nul finds a key");
	v = parse_ok("{\"a\":[1,{\"b\":\"x\"}],\"c\":null}");
	UT_CHECK(v && !se_json_has_nul(v), "has_nul: none");
}

int
main(void)
{
	test_scalars();
	test_structure();
	test_roundtrip();
	test_strings();
	test_string_errors();
	test_numbers();
	test_number_fuzz();
	test_number_errors();
	test_literal_errors();
	test_syntax_errors();
	test_positions();
	test_utf8_errors();
	test_utf8_validate();
	test_depth();
	test_duplicates();
	test_truncation();
	test_mutation_fuzz();
	test_action_lines();
	test_write_string();
	test_string_size();
	test_write_dom();
	test_nul();
	return ut_finish("test_json");
}
