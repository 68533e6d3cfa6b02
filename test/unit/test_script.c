/* SOURCES: src/script/lexer.c src/script/parser.c src/script/interp.c src/script/builtins.c src/script/values.c src/script/score.c src/util/units.c src/util/json.c src/util/error.c */
/*-------------------------------------------------------------------------
 *
 * test_script.c
 *	  Unit tests for src/script: the Painless subset of update scripts.
 *
 * Scripts run against a parsed _source; the result is compared as compact
 * JSON, so number formatting (int stays int, 2.0 stays 2.0) is checked
 * too.  The last sections check error positions, budgets, depth limits
 * and run a few thousand mutated scripts to make sure nothing crashes
 * (SE_FUZZ_ITERATIONS and SE_FUZZ_SEED run a longer or different fuzz).
 * Under AddressSanitizer its allocator hooks measure what a run really
 * allocates, so the memory budget is checked against the heap itself.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdlib.h>
#include <time.h>

#include "script/script.h"
#include "unit_test.h"

/* ---------------------------------------------------------------------
 * Heap measurement (AddressSanitizer's hooks; not measured without it)
 * ---------------------------------------------------------------------
 */
#if defined(__SANITIZE_ADDRESS__)
#define HEAP_MEASURED 1
extern int	__sanitizer_install_malloc_and_free_hooks(void (*m) (const volatile void *, size_t),
													  void (*f) (const volatile void *));
extern size_t __sanitizer_get_allocated_size(const volatile void *p);

static int64 heap_now;
static int64 heap_peak;

static void
heap_malloc_hook(const volatile void *p, size_t size)
{
	heap_now += size;
	if (heap_now > heap_peak)
		heap_peak = heap_now;
}

static void
heap_free_hook(const volatile void *p)
{
	if (p != NULL)
		heap_now -= __sanitizer_get_allocated_size(p);
}
#else
#define HEAP_MEASURED 0
static int64 heap_now;
static int64 heap_peak;
#endif

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

typedef struct Outcome
{
	SeScriptResult res;
	char	   *source;			/* resulting _source JSON, or NULL */
	char	   *error;			/* error reason, or NULL */
	const char *cause;
	bool		compiled;
	int64		heap;			/* peak bytes the run held (HEAP_MEASURED) */
} Outcome;

static Outcome
run_budget(const char *script, const char *doc, const char *params, int64 max_statements,
		   int64 max_memory)
{
	Outcome		o;
	SeError		err;
	SeScript   *s;
	SeScriptCtx ctx;

	memset(&o, 0, sizeof(o));
	se_error_init(&err);
	s = se_script_compile(script, params ? J(params) : NULL, &err);
	if (s == NULL)
	{
		o.res = SE_SCRIPT_ERROR;
		o.error = err.reason;
		return o;
	}
	o.compiled = true;
	se_script_ctx_init(&ctx, J(doc ? doc : "{}"));
	ctx.id = "doc-1";
	ctx.index = "idx";
	ctx.version = 3;
	ctx.seq_no = 7;
	ctx.primary_term = 1;
	ctx.now = 1700000000000LL;
	if (max_statements > 0)
		ctx.max_statements = max_statements;
	if (max_memory > 0)
		ctx.max_memory = max_memory;
	heap_peak = heap_now;
	o.heap = -heap_now;
	o.res = se_script_run(s, &ctx, &err);
	o.heap += heap_peak;
	if (o.res == SE_SCRIPT_ERROR)
	{
		o.error = err.reason;
		o.cause = ctx.error_cause;
	}
	else
		o.source = se_json_to_string(ctx.source);
	return o;
}

static Outcome
run_full(const char *script, const char *doc, const char *params, int64 max_statements)
{
	return run_budget(script, doc, params, max_statements, 0);
}

static Outcome
run(const char *script, const char *doc, const char *params)
{
	return run_full(script, doc, params, 0);
}

static const char *
show(const Outcome *o)
{
	return o->error ? o->error : o->source ? o->source : "(null)";
}

/* script over doc gives expect (compact JSON) and result res */
#define OK_RES(script, doc, params, expect, res_) \
	do { \
		Outcome o_ = run((script), (doc), (params)); \
		UT_CHECK(o_.res == (res_) && o_.source && strcmp(o_.source, (expect)) == 0, \
				 "script [%s]: got %s (res %d), want %s (res %d)", (script), show(&o_), \
				 (int) o_.res, (expect), (int) (res_)); \
	} while (0)

#define OK(script, doc, params, expect) OK_RES(script, doc, params, expect, SE_SCRIPT_INDEX)

/* value of expression expr, stored as ctx._source.r */
#define EXPR(expr, expect) \
	do { \
		Outcome o_ = run("ctx._source.r = " expr, "{}", \
						 "{\"i\":5,\"s\":\"str\",\"d\":2.5,\"l\":[1,2,3],\"m\":{\"a\":1},\"n\":null}"); \
		char		want_[512]; \
		snprintf(want_, sizeof(want_), "{\"r\":%s}", (expect)); \
		UT_CHECK(o_.source && strcmp(o_.source, want_) == 0, \
				 "expr [%s]: got %s, want %s", expr, show(&o_), (expect)); \
	} while (0)

/* script fails (compile or run) with a reason containing part */
#define FAILS(script, doc, params, part) \
	do { \
		Outcome o_ = run((script), (doc), (params)); \
		UT_CHECK(o_.res == SE_SCRIPT_ERROR && o_.error && strstr(o_.error, (part)) != NULL, \
				 "script [%s]: got %s, want error with \"%s\"", (script), show(&o_), (part)); \
	} while (0)

#define EXPR_FAILS(expr, part) \
	FAILS("ctx._source.r = " expr, "{}", \
		  "{\"i\":5,\"s\":\"str\",\"d\":2.5,\"l\":[1,2,3],\"m\":{\"a\":1},\"n\":null}", (part))

/* ---------------------------------------------------------------------
 * Elasticsearch's typical update scripts
 * ---------------------------------------------------------------------
 */

static void
test_es_examples(void)
{
	/* counter += params.count */
	OK("ctx._source.counter += params.count", "{\"counter\":1}", "{\"count\":4}",
	   "{\"counter\":5}");
	OK("ctx._source.counter += params.count;", "{\"counter\":1.5}", "{\"count\":4}",
	   "{\"counter\":5.5}");

	/* add a tag unless present, noop otherwise */
	OK_RES("if (ctx._source.tags.contains(params.tag)) { ctx.op = 'noop' } else { ctx._source.tags.add(params.tag) }",
		   "{\"tags\":[\"red\"]}", "{\"tag\":\"blue\"}", "{\"tags\":[\"red\",\"blue\"]}",
		   SE_SCRIPT_INDEX);
	OK_RES("if (ctx._source.tags.contains(params.tag)) { ctx.op = 'noop' } else { ctx._source.tags.add(params.tag) }",
		   "{\"tags\":[\"red\"]}", "{\"tag\":\"red\"}", "{\"tags\":[\"red\"]}",
		   SE_SCRIPT_NOOP);

	/* remove a tag */
	OK("if (ctx._source.tags.contains(params.tag)) { ctx._source.tags.remove(ctx._source.tags.indexOf(params.tag)) }",
	   "{\"tags\":[\"a\",\"b\",\"c\"]}", "{\"tag\":\"b\"}", "{\"tags\":[\"a\",\"c\"]}");

	/* add and remove fields */
	OK("ctx._source.new_field = 'value_of_new_field'", "{\"a\":1}", NULL,
	   "{\"a\":1,\"new_field\":\"value_of_new_field\"}");
	OK("ctx._source.remove('new_field')", "{\"a\":1,\"new_field\":\"x\"}", NULL, "{\"a\":1}");
	OK("ctx._source.remove('missing')", "{\"a\":1}", NULL, "{\"a\":1}");

	/* conditional delete */
	OK_RES("if (ctx._source.tags.contains(params.tag)) { ctx.op = 'delete' } else { ctx.op = 'none' }",
		   "{\"tags\":[\"green\"]}", "{\"tag\":\"green\"}", "{\"tags\":[\"green\"]}",
		   SE_SCRIPT_DELETE);
	OK_RES("if (ctx._source.tags.contains(params.tag)) { ctx.op = 'delete' } else { ctx.op = 'none' }",
		   "{\"tags\":[\"blue\"]}", "{\"tag\":\"green\"}", "{\"tags\":[\"blue\"]}",
		   SE_SCRIPT_NOOP);
	OK_RES("if (ctx._source.likes > params.max) ctx.op = 'delete'",
		   "{\"likes\":11}", "{\"max\":10}", "{\"likes\":11}", SE_SCRIPT_DELETE);

	/* update_by_query classics */
	OK("ctx._source.likes++", "{\"likes\":0}", NULL, "{\"likes\":1}");
	OK("ctx._source.count = ctx._source.count == null ? 1 : ctx._source.count + 1",
	   "{}", NULL, "{\"count\":1}");
	OK("ctx._source.count = ctx._source.count == null ? 1 : ctx._source.count + 1",
	   "{\"count\":41}", NULL, "{\"count\":42}");
	OK("if (ctx._source.tags == null) { ctx._source.tags = [] } ctx._source.tags.add(params.t)",
	   "{}", "{\"t\":\"x\"}", "{\"tags\":[\"x\"]}");
	OK("ctx._source.full_name = ctx._source.first + ' ' + ctx._source.last",
	   "{\"first\":\"Ada\",\"last\":\"Lovelace\"}", NULL,
	   "{\"first\":\"Ada\",\"last\":\"Lovelace\",\"full_name\":\"Ada Lovelace\"}");
	OK("ctx._source.user.name = params.name", "{\"user\":{\"name\":\"a\",\"id\":1}}",
	   "{\"name\":\"b\"}", "{\"user\":{\"name\":\"b\",\"id\":1}}");
	OK("ctx._source.user.address.city = 'Paris'",
	   "{\"user\":{\"address\":{\"city\":\"Rome\"}}}", NULL,
	   "{\"user\":{\"address\":{\"city\":\"Paris\"}}}");
	OK("ctx._source['a.b'] = 1", "{\"a\":{\"b\":0}}", NULL, "{\"a\":{\"b\":0},\"a.b\":1}");
	OK("ctx._source.a['b'] = 2", "{\"a\":{\"b\":0}}", NULL, "{\"a\":{\"b\":2}}");
	OK("ctx._source.status = params['status']", "{}", "{\"status\":\"done\"}",
	   "{\"status\":\"done\"}");
	OK("for (def item : ctx._source.items) { item.price *= 2 }",
	   "{\"items\":[{\"price\":1},{\"price\":2.5}]}", NULL,
	   "{\"items\":[{\"price\":2},{\"price\":5.0}]}");
	OK("ctx._source.tags.removeIf(t -> t == params.tag)",
	   "{\"tags\":[\"a\",\"b\",\"a\"]}", "{\"tag\":\"a\"}", "{\"tags\":[\"b\"]}");
	OK("ctx._source.keySet().removeIf(k -> k.startsWith('tmp_'))",
	   "{\"tmp_a\":1,\"keep\":2,\"tmp_b\":3}", NULL, "{\"keep\":2}");
	OK("ctx._source.total = 0; for (def p : ctx._source.prices) { ctx._source.total += p }",
	   "{\"prices\":[1,2,3]}", NULL, "{\"prices\":[1,2,3],\"total\":6}");
	OK("ctx._source.stats = ['count': 1, 'names': ['a']]", "{}", NULL,
	   "{\"stats\":{\"count\":1,\"names\":[\"a\"]}}");
	OK("ctx._source.list = params.list; ctx._source.list.add(4)", "{}", "{\"list\":[1,2,3]}",
	   "{\"list\":[1,2,3,4]}");
	OK("ctx._source.updated = ctx._now", "{}", NULL, "{\"updated\":1700000000000}");
	OK("ctx._source.meta = ctx._id + '/' + ctx._index + '/' + ctx._version + '/' + ctx._seq_no + '/' + ctx._primary_term",
	   "{}", NULL, "{\"meta\":\"doc-1/idx/3/7/1\"}");
	OK("ctx._source.r = ctx._routing", "{}", NULL, "{\"r\":null}");
	OK("ctx['_source']['x'] = ctx['op']", "{}", NULL, "{\"x\":\"index\"}");
	OK("ctx._source = ['fresh': true]", "{\"old\":1}", NULL, "{\"fresh\":true}");
	OK("return", "{\"a\":1}", NULL, "{\"a\":1}");
	OK("", "{\"a\":1}", NULL, "{\"a\":1}");
	OK("ctx._source.a = 1; return; ctx._source.a = 2", "{}", NULL, "{\"a\":1}");
}

/* ---------------------------------------------------------------------
 * Expressions
 * ---------------------------------------------------------------------
 */

static void
test_literals(void)
{
	EXPR("1", "1");
	EXPR("-2147483648", "-2147483648");
	EXPR("9223372036854775807L", "9223372036854775807");
	EXPR("-9223372036854775808L", "-9223372036854775808");
	EXPR("0x1F", "31");
	EXPR("0xFFFFFFFF", "-1");
	EXPR("010", "8");
	EXPR("1.5", "1.5");
	EXPR("1.0", "1.0");
	EXPR("2e3", "2000.0");
	EXPR("1e21", "1.0E21");
	EXPR("0.0001", "1.0E-4");
	EXPR("0.001", "0.001");
	EXPR("1e7", "1.0E7");
	EXPR("9999999.0", "9999999.0");
	EXPR(".5", "0.5");
	EXPR("1.5f", "1.5");
	EXPR("0.1f", "0.1");
	EXPR("0.1f + 0.2f", "0.3");
	EXPR("0.1 + 0.2", "0.30000000000000004");
	EXPR("3d", "3.0");
	EXPR("4.9E-324", "4.9E-324");
	EXPR("'single'", "\"single\"");
	EXPR("\"double\"", "\"double\"");
	EXPR("'it\\'s'", "\"it's\"");
	EXPR("\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\"");
	EXPR("'back\\\\slash'", "\"back\\\\slash\"");
	EXPR("'tab\\tnl\\n'", "\"tab\\tnl\\n\"");
	EXPR("'\\u00e9\\uD83D\\uDE00'", "\"\xc3\xa9\xf0\x9f\x98\x80\"");
	EXPR("true", "true");
	EXPR("false", "false");
	EXPR("null", "null");
	EXPR("[]", "[]");
	EXPR("[1, 'a', [2], null]", "[1,\"a\",[2],null]");
	EXPR("[:]", "{}");
	EXPR("['a': 1, 'b': [1, 2]]", "{\"a\":1,\"b\":[1,2]}");
	EXPR("[1: 'x']", "{\"1\":\"x\"}");
	EXPR("Integer.MAX_VALUE", "2147483647");
	EXPR("Long.MIN_VALUE", "-9223372036854775808");
	EXPR("Math.PI", "3.141592653589793");
	EXPR("Double.NaN", "\"NaN\"");
	EXPR("1.0 / 0", "\"Infinity\"");
	EXPR("-1.0 / 0", "\"-Infinity\"");
}

static void
test_arithmetic(void)
{
	EXPR("1 + 2 * 3", "7");
	EXPR("(1 + 2) * 3", "9");
	EXPR("7 / 2", "3");
	EXPR("-7 / 2", "-3");
	EXPR("7 % 3", "1");
	EXPR("-7 % 3", "-1");
	EXPR("7.0 / 2", "3.5");
	EXPR("7 / 2.0", "3.5");
	EXPR("1 + 0.5", "1.5");
	EXPR("1.5 + 0.5", "2.0");
	EXPR("5.5 % 2", "1.5");
	EXPR("2147483647 + 1", "-2147483648");
	EXPR("2147483647L + 1", "2147483648");
	EXPR("Integer.MIN_VALUE / -1", "-2147483648");
	EXPR("Integer.MIN_VALUE % -1", "0");
	EXPR("Long.MIN_VALUE / -1", "-9223372036854775808");
	EXPR("1 + 2L", "3");
	EXPR("1 + 2f", "3.0");
	EXPR("params.i * 2", "10");
	EXPR("params.d * 2", "5.0");
	EXPR("-params.i", "-5");
	EXPR("+params.i", "5");
	EXPR("-(-2147483648)", "-2147483648");
	EXPR("~5", "-6");
	EXPR("6 & 3", "2");
	EXPR("6 | 3", "7");
	EXPR("6 ^ 3", "5");
	EXPR("1 << 33", "2");
	EXPR("1L << 33", "8589934592");
	EXPR("-16 >> 2", "-4");
	EXPR("-16 >>> 28", "15");
	EXPR("-16L >>> 60", "15");
	EXPR("true & false", "false");
	EXPR("true ^ true", "false");
	EXPR("(int) 3.9", "3");
	EXPR("(int) -3.9", "-3");
	EXPR("(int) 1e20", "2147483647");
	EXPR("(long) 1e20", "9223372036854775807");
	EXPR("(int) Double.NaN", "0");
	EXPR("(double) 3", "3.0");
	EXPR("(float) 0.1", "0.1");
	EXPR("(int) 4294967297L", "1");
	EXPR("(float) 1e300", "\"Infinity\"");
	EXPR("(float) -1e39", "\"-Infinity\"");
	EXPR("(float) 3.4028235e38", "3.4028235E38");
	EXPR("Float.parseFloat('1e300')", "\"Infinity\"");
	EXPR("params.d.floatValue()", "2.5");
	EXPR("(long) params.i", "5");
	EXPR("(def) 1", "1");
	EXPR_FAILS("1 / 0", "/ by zero");
	EXPR_FAILS("1 % 0", "/ by zero");
	EXPR_FAILS("1L / 0L", "/ by zero");
	EXPR_FAILS("params.n + 1", "cannot apply [+] operation to types [null] and [java.lang.Integer]");
	EXPR_FAILS("params.l - 1", "cannot apply [-] operation");
	EXPR_FAILS("1.5 & 1", "cannot apply [&] operation");
	EXPR_FAILS("(int) 'x'", "cannot cast [java.lang.String] to [int]");
	EXPR_FAILS("(String) 1", "cannot cast [java.lang.Integer] to [java.lang.String]");
}

static void
test_strings(void)
{
	EXPR("'a' + 'b'", "\"ab\"");
	EXPR("'a' + 1", "\"a1\"");
	EXPR("1 + 'a'", "\"1a\"");
	EXPR("1 + 2 + 'a'", "\"3a\"");
	EXPR("'a' + 1 + 2", "\"a12\"");
	EXPR("'v' + 1.0", "\"v1.0\"");
	EXPR("'v' + 100.0", "\"v100.0\"");
	EXPR("'v' + 1e10", "\"v1.0E10\"");
	EXPR("'v' + 2L", "\"v2\"");
	EXPR("'v' + 0.5f", "\"v0.5\"");
	EXPR("'v' + true", "\"vtrue\"");
	EXPR("'v' + null", "\"vnull\"");
	EXPR("null + 'v'", "\"nullv\"");
	EXPR("'v' + [1, 'a']", "\"v[1, a]\"");
	EXPR("'v' + ['k': [1.0]]", "\"v{k=[1.0]}\"");
	EXPR("'x' + params.m", "\"x{a=1}\"");
	EXPR("'hello'.length()", "5");
	EXPR("'h\\u00e9llo\\uD83D\\uDE00'.length()", "7");
	EXPR("''.isEmpty()", "true");
	EXPR("'hello'.contains('ell')", "true");
	EXPR("'hello'.contains('xyz')", "false");
	EXPR("'hello'.startsWith('he')", "true");
	EXPR("'hello'.startsWith('l', 2)", "true");
	EXPR("'hello'.endsWith('lo')", "true");
	EXPR("'HeLLo'.toLowerCase()", "\"hello\"");
	EXPR("'HeLLo'.toUpperCase()", "\"HELLO\"");
	EXPR("'\\u00c9t\\u00e9'.toUpperCase()", "\"\xc3\x89T\xc3\x89\"");
	EXPR("'\\u0410\\u0411'.toLowerCase()", "\"\xd0\xb0\xd0\xb1\"");
	EXPR("'  pad \\t'.trim()", "\"pad\"");
	EXPR("'hello'.substring(1)", "\"ello\"");
	EXPR("'hello'.substring(1, 3)", "\"el\"");
	EXPR("'hello'.substring(5)", "\"\"");
	EXPR("'h\\u00e9llo'.substring(1, 2)", "\"\xc3\xa9\"");
	EXPR("'hello'.indexOf('l')", "2");
	EXPR("'hello'.indexOf('l', 3)", "3");
	EXPR("'hello'.indexOf('z')", "-1");
	EXPR("'\\u00e9a'.indexOf('a')", "1");
	EXPR("'hello'.lastIndexOf('l')", "3");
	EXPR("'a-b-c'.replace('-', '+')", "\"a+b+c\"");
	EXPR("'aaa'.replace('a', 'bb')", "\"bbbbbb\"");
	EXPR("'ab'.replace('', '-')", "\"-a-b-\"");
	EXPR("'a,b,,c,,'.splitOnToken(',')", "[\"a\",\"b\",\"\",\"c\",\"\",\"\"]");
	EXPR("'a,b,c'.splitOnToken(',', 2)", "[\"a\",\"b,c\"]");
	EXPR("'a,b,c'.splitOnToken(',', 0)", "[\"a\",\"b\",\"c\"]");
	EXPR("''.splitOnToken(',')", "[\"\"]");
	EXPR("'abc'.splitOnToken('')", "[\"abc\"]");
	EXPR("'a::b'.splitOnToken('::')", "[\"a\",\"b\"]");
	EXPR("'a,b,,c,,'.split(',')", "[\"a\",\"b\",\"\",\"c\"]");
	EXPR("'a,b,,'.split(',', -1)", "[\"a\",\"b\",\"\",\"\"]");
	EXPR("',a'.split(',')", "[\"\",\"a\"]");
	EXPR("','.split(',')", "[]");
	EXPR("''.split(',')", "[\"\"]");
	EXPR("'a.b'.split('\\\\.')", "[\"a\",\"b\"]");
	EXPR("'a b'.split(' ').length", "2");
	EXPR_FAILS("'a.b'.split('.')", "split with a regular expression is not supported");
	EXPR_FAILS("'a b'.split('\\\\s+')", "split with a regular expression is not supported");
	EXPR("'abc'.equals('abc')", "true");
	EXPR("'abc'.equals(1)", "false");
	EXPR("'ABC'.equalsIgnoreCase('abc')", "true");
	EXPR("'a'.compareTo('b')", "-1");
	EXPR("'abc'.compareTo('ab')", "1");
	EXPR("'hello'.charAt(1)", "\"e\"");
	EXPR("'ab'.concat('cd')", "\"abcd\"");
	EXPR("'ab'.hashCode()", "3105");
	EXPR("params.s.toString()", "\"str\"");
	EXPR("String.valueOf(1.0)", "\"1.0\"");
	EXPR("String.valueOf(null)", "\"null\"");
	EXPR("Integer.toString(42)", "\"42\"");
	EXPR("String.join('-', ['a', 'b', 1])", "\"a-b-1\"");
	EXPR("['a', 'b'].join(',')", "\"a,b\"");
	EXPR_FAILS("'hello'.substring(3, 2)", "begin 3, end 2, length 5");
	EXPR_FAILS("'hello'.substring(-1)", "begin -1");
	EXPR_FAILS("'hello'.charAt(9)", "index 9, length 5");
	EXPR_FAILS("'hello'.foo()", "dynamic method [java.lang.String, foo/0] not found");
	EXPR_FAILS("'a' < 'b'", "cannot apply [<] operation to types [java.lang.String]");
}

static void
test_comparisons(void)
{
	EXPR("1 == 1", "true");
	EXPR("1 == 1L", "true");
	EXPR("1 == 1.0", "true");
	EXPR("1 != 2", "true");
	EXPR("'abc' == 'ab' + 'c'", "true");
	EXPR("params.s == 'str'", "true");
	EXPR("params.s != 'str'", "false");
	EXPR("null == null", "true");
	EXPR("params.n == null", "true");
	EXPR("params.missing == null", "true");
	EXPR("1 == null", "false");
	EXPR("[1, 2] == [1, 2]", "true");
	/* stored in a list, 1L reads back as an int (JSON keeps no long/int distinction) */
	EXPR("[1, 2] == [1L, 2]", "true");
	EXPR("[1, 2] == [1.0, 2]", "false");
	EXPR("['a': 1, 'b': 2] == ['b': 2, 'a': 1]", "true");
	EXPR("params.l == [1, 2, 3]", "true");
	EXPR("[1] === [1]", "false");
	EXPR("params.l === params.l", "true");
	EXPR("1 === 1", "true");
	EXPR("1 < 2", "true");
	EXPR("2 <= 2", "true");
	EXPR("3 > 2.5", "true");
	EXPR("2L >= 3", "false");
	EXPR("Double.NaN < 1", "false");
	EXPR("Double.NaN == Double.NaN", "false");
	EXPR("true && false", "false");
	EXPR("true || false", "true");
	EXPR("!true", "false");
	EXPR("false && params.n.x", "false");
	EXPR("true || params.n.x", "true");
	EXPR("1 < 2 ? 'yes' : 'no'", "\"yes\"");
	EXPR("1 > 2 ? 'yes' : 2 > 1 ? 'inner' : 'no'", "\"inner\"");
	EXPR("true ? 1 : 2.0", "1.0");
	EXPR("false ? 1L : 2", "2");
	EXPR("true ? params.i : 2.0", "5");
	EXPR("params.n ?: 'default'", "\"default\"");
	EXPR("params.s ?: 'default'", "\"str\"");
	EXPR("params.n ?: params.n ?: 3", "3");
	EXPR("params.n ?: false ? 1 : 2", "2");
	EXPR("true ? params.n : 1 ?: 'elvis'", "\"elvis\"");
	EXPR("1 < 2 == true", "true");
	EXPR("1 + 2 << 1", "6");
	EXPR("1 | 2 ^ 3 & 4", "3");
	EXPR("params.s instanceof String == true", "true");
	EXPR("params.n?.x", "null");
	EXPR("params.m?.a", "1");
	EXPR("params.n?.size()", "null");
	EXPR("params.n?.x?.y", "null");
	EXPR("params.s instanceof String", "true");
	EXPR("params.i instanceof Integer", "true");
	EXPR("params.i instanceof int", "true");
	EXPR("params.i instanceof Number", "true");
	EXPR("params.i instanceof Long", "false");
	EXPR("params.l instanceof List", "true");
	EXPR("params.m instanceof Map", "true");
	EXPR("params.n instanceof Object", "false");
	EXPR("params.d instanceof Double", "true");
	EXPR_FAILS("1 && true", "cannot cast [java.lang.Integer] to [boolean]");
	EXPR_FAILS("!params.n", "cannot cast null to [boolean]");
}

static void
test_statements(void)
{
	/* declarations and typed locals */
	OK("int x = 5; x = x / 2; ctx._source.r = x", "{}", NULL, "{\"r\":2}");
	OK("double x = 5; ctx._source.r = x", "{}", NULL, "{\"r\":5.0}");
	OK("long x = 5; ctx._source.r = x * 1000000000", "{}", NULL, "{\"r\":5000000000}");
	OK("int x = 5; x += 1.7; ctx._source.r = x", "{}", NULL, "{\"r\":6}");
	OK("float f = 1.1f; ctx._source.r = f", "{}", NULL, "{\"r\":1.1}");
	OK("boolean b; ctx._source.r = b", "{}", NULL, "{\"r\":false}");
	OK("int i; ctx._source.r = i", "{}", NULL, "{\"r\":0}");
	OK("String s; ctx._source.r = s", "{}", NULL, "{\"r\":null}");
	OK("def a = 1, b = 2; ctx._source.r = a + b", "{}", NULL, "{\"r\":3}");
	OK("var v = 'x'; ctx._source.r = v", "{}", NULL, "{\"r\":\"x\"}");
	OK("List l = new ArrayList(); l.add(1); Map m = new HashMap(); m.put('l', l); ctx._source.r = m",
	   "{}", NULL, "{\"r\":{\"l\":[1]}}");
	OK("String[] parts = 'a b'.splitOnToken(' '); ctx._source.r = parts.length", "{}", NULL,
	   "{\"r\":2}");
	OK("Integer x = null; ctx._source.r = x", "{}", NULL, "{\"r\":null}");
	OK("def x = params.i; x++; ctx._source.r = x", "{}", "{\"i\":1}", "{\"r\":2}");
	FAILS("int x = 'a'", "{}", NULL, "cannot cast [java.lang.String] to [int]");
	FAILS("int x = null", "{}", NULL, "cannot cast null to [int]");
	FAILS("String s = 5", "{}", NULL, "cannot cast [java.lang.Integer] to [java.lang.String]");
	FAILS("List l = 'x'", "{}", NULL, "cannot cast [java.lang.String] to [java.util.List]");

	/* if / else */
	OK("if (true) ctx._source.r = 1; else ctx._source.r = 2", "{}", NULL, "{\"r\":1}");
	OK("if (false) ctx._source.r = 1; else if (true) ctx._source.r = 2; else ctx._source.r = 3",
	   "{}", NULL, "{\"r\":2}");
	OK("if (false) { ctx._source.r = 1 }", "{}", NULL, "{}");

	/* loops */
	OK("int s = 0; for (int i = 0; i < 10; i++) { s += i } ctx._source.r = s", "{}", NULL,
	   "{\"r\":45}");
	OK("int s = 0; for (int i = 0, j = 10; i < j; i++, j--) { s++ } ctx._source.r = s", "{}", NULL,
	   "{\"r\":5}");
	OK("int s = 0; for (;;) { if (++s == 5) break; } ctx._source.r = s", "{}", NULL,
	   "{\"r\":5}");
	OK("int s = 0; int i = 0; while (i < 10) { i++; if (i % 2 == 0) continue; s += i } ctx._source.r = s",
	   "{}", NULL, "{\"r\":25}");
	OK("int i = 0; do { i++ } while (i < 3); ctx._source.r = i", "{}", NULL, "{\"r\":3}");
	OK("int i = 10; do { i++ } while (i < 3); ctx._source.r = i", "{}", NULL, "{\"r\":11}");
	OK("def out = []; for (def x : [3, 1, 2]) { out.add(x * 10) } ctx._source.r = out", "{}",
	   NULL, "{\"r\":[30,10,20]}");
	OK("def out = []; for (x in ['a', 'b']) { out.add(x) } ctx._source.r = out", "{}", NULL,
	   "{\"r\":[\"a\",\"b\"]}");
	OK("def out = []; for (String k : ctx._source.keySet()) { out.add(k) } ctx._source.r = out",
	   "{\"a\":1,\"b\":2}", NULL, "{\"a\":1,\"b\":2,\"r\":[\"a\",\"b\"]}");
	OK("def out = ''; for (def e : ctx._source.entrySet()) { out += e.getKey() + '=' + e.getValue() + ';' } ctx._source.r = out",
	   "{\"a\":1,\"b\":\"x\"}", NULL, "{\"a\":1,\"b\":\"x\",\"r\":\"a=1;b=x;\"}");
	OK("for (def e : ctx._source.entrySet()) { if (e.value instanceof Integer) { e.setValue(e.value * 2) } }",
	   "{\"a\":1,\"b\":\"x\"}", NULL, "{\"a\":2,\"b\":\"x\"}");
	OK("for (def k : ctx._source.keySet()) { if (k.startsWith('x')) ctx._source.remove(k) }",
	   "{\"xa\":1,\"b\":2,\"xc\":3}", NULL, "{\"b\":2}");
	OK("def l = [1, 2, 3]; for (def x : l) { if (l.size() < 6) l.add(x) } ctx._source.r = l",
	   "{}", NULL, "{\"r\":[1,2,3,1,2,3]}");
	OK("def s = 0; for (int i = 0; i < 3; i++) { for (int j = 0; j < 3; j++) { if (j == 1) break; s++ } } ctx._source.r = s",
	   "{}", NULL, "{\"r\":3}");
	OK("for (int i = 0; i < 3; i++);", "{}", NULL, "{}");
	OK("while (false);", "{}", NULL, "{}");
	OK("{ def x = 1; } { def x = 2; ctx._source.r = x }", "{}", NULL, "{\"r\":2}");
	OK(";;; ctx._source.r = 1;;", "{}", NULL, "{\"r\":1}");
	OK("// comment\nctx._source.r = /* inline */ 1 // trailing", "{}", NULL, "{\"r\":1}");

	/* assignments and increments */
	OK("def x = 1; def y = x++; ctx._source.r = [x, y]", "{}", NULL, "{\"r\":[2,1]}");
	OK("def x = 1; def y = ++x; ctx._source.r = [x, y]", "{}", NULL, "{\"r\":[2,2]}");
	OK("def x = 1; def y = x--; def z = --x; ctx._source.r = [x, y, z]", "{}", NULL,
	   "{\"r\":[-1,1,-1]}");
	OK("ctx._source.a -= 1; ctx._source.b *= 2; ctx._source.c /= 2; ctx._source.d %= 3",
	   "{\"a\":1,\"b\":2,\"c\":7,\"d\":7}", NULL, "{\"a\":0,\"b\":4,\"c\":3,\"d\":1}");
	OK("ctx._source.s += '!'", "{\"s\":\"hi\"}", NULL, "{\"s\":\"hi!\"}");
	OK("ctx._source.a = ctx._source.b = 3", "{}", NULL, "{\"b\":3,\"a\":3}");
	OK("ctx._source.d++", "{\"d\":1.5}", NULL, "{\"d\":2.5}");
	OK("ctx._source.big++", "{\"big\":2147483647}", NULL, "{\"big\":-2147483648}");
	OK("ctx._source.big++", "{\"big\":2147483648}", NULL, "{\"big\":2147483649}");
	OK("ctx._source.l[0]++; ctx._source.l[-1] = 'last'", "{\"l\":[1,2,3]}", NULL,
	   "{\"l\":[2,2,\"last\"]}");
	OK("ctx._source.m['k'] += 1", "{\"m\":{\"k\":1}}", NULL, "{\"m\":{\"k\":2}}");
	OK("ctx._source.a.b.c = 1", "{\"a\":{\"b\":{}}}", NULL, "{\"a\":{\"b\":{\"c\":1}}}");
	OK("ctx._source.copy = ctx._source.orig; ctx._source.copy.x = 2",
	   "{\"orig\":{\"x\":1}}", NULL, "{\"orig\":{\"x\":2},\"copy\":{\"x\":2}}");
	OK("ctx._source.x = ctx._source.x", "{\"x\":1.50}", NULL, "{\"x\":1.50}");
	OK("ctx._source.x = ctx._source.y", "{\"y\":1e2}", NULL, "{\"y\":1e2,\"x\":1e2}");
	OK("ctx._source.x = ctx._source.y + 0", "{\"y\":1e2}", NULL, "{\"y\":1e2,\"x\":100.0}");

	/* syntax corners */
	OK("ctx._source.r = true?.5:1", "{}", NULL, "{\"r\":0.5}");
	OK("ctx._source.new = 1; ctx._source.in = ctx._source.new + 1", "{}", NULL,
	   "{\"new\":1,\"in\":2}");
	OK("ctx._source.r = (ctx._source.a ?: [:]).size()", "{}", NULL, "{\"r\":0}");
	FAILS("def x = 1; def f = (x) -> x", "{}", NULL, "compile error at [1:24]: unexpected token '->', expected ';'");
	OK("ctx._source.r = [1, 2, 3].removeIf((def x) -> x > 1)", "{}", NULL, "{\"r\":true}");
	OK("ctx._source.r = 1;\r\n\tctx._source.s = 2", "{}", NULL, "{\"r\":1,\"s\":2}");
	OK("if (ctx._source.a == null) ctx._source.a = 1; else { ctx._source.a++ }", "{\"a\":1}",
	   NULL, "{\"a\":2}");
	OK("return ctx._source.x = 5", "{}", NULL, "{\"x\":5}");
}

static void
test_collections(void)
{
	const char *p = "{\"l\":[1,2,3],\"m\":{\"a\":1,\"b\":[2]}}";

	/* list methods */
	OK("def l = [1]; l.add(2); l.add(0, 0); ctx._source.r = l", "{}", NULL, "{\"r\":[0,1,2]}");
	OK("def l = [1, 2, 3]; def x = l.remove(1); ctx._source.r = [l, x]", "{}", NULL,
	   "{\"r\":[[1,3],2]}");
	OK("def l = ['a', 'b']; ctx._source.r = [l.contains('a'), l.contains('z'), l.indexOf('b'), l.size(), l.isEmpty(), l.get(0)]",
	   "{}", NULL, "{\"r\":[true,false,1,2,false,\"a\"]}");
	OK("def l = [1, 2, 1]; ctx._source.r = [l.lastIndexOf(1), l.contains(1L), l.indexOf(1.0)]",
	   "{}", NULL, "{\"r\":[2,false,-1]}");
	OK("def l = [1, 2]; def old = l.set(0, 9); l.addAll([3, 4]); ctx._source.r = [l, old]", "{}",
	   NULL, "{\"r\":[[9,2,3,4],1]}");
	OK("def l = [1, 2]; l.addAll(l); ctx._source.r = l", "{}", NULL, "{\"r\":[1,2,1,2]}");
	OK("def l = [1, 2, 3, 2]; l.removeAll([2]); ctx._source.r = l", "{}", NULL, "{\"r\":[1,3]}");
	OK("def l = [1, 2, 3]; l.retainAll([2, 3, 4]); ctx._source.r = l", "{}", NULL,
	   "{\"r\":[2,3]}");
	OK("ctx._source.r = [[1, 2, 3].containsAll([1, 3]), [1].containsAll([2])]", "{}", NULL,
	   "{\"r\":[true,false]}");
	OK("def l = [1, 2]; l.clear(); ctx._source.r = l", "{}", NULL, "{\"r\":[]}");
	OK("def l = [3, 1, 2.5, 2]; l.sort(null); ctx._source.r = l", "{}", NULL,
	   "{\"r\":[1,2,2.5,3]}");
	OK("def l = ['b', 'c', 'a']; Collections.sort(l); ctx._source.r = l", "{}", NULL,
	   "{\"r\":[\"a\",\"b\",\"c\"]}");
	OK("def l = [1, 3, 2]; l.sort((a, b) -> b - a); ctx._source.r = l", "{}", NULL,
	   "{\"r\":[3,2,1]}");
	OK("def l = [[2, 'x'], [1, 'y'], [2, 'a'], [1, 'b']]; l.sort((a, b) -> a[0] - b[0]); ctx._source.r = l",
	   "{}", NULL, "{\"r\":[[1,\"y\"],[1,\"b\"],[2,\"x\"],[2,\"a\"]]}");
	OK("def l = [1, 2, 3]; Collections.reverse(l); ctx._source.r = l", "{}", NULL,
	   "{\"r\":[3,2,1]}");
	OK("def s = [0]; [1, 2, 3].forEach(x -> s[0] += x); ctx._source.r = s[0]", "{}", NULL,
	   "{\"r\":6}");
	OK("def l = [1, 2, 3, 4]; l.removeIf(x -> { return x % 2 == 0; }); ctx._source.r = l", "{}",
	   NULL, "{\"r\":[1,3]}");
	OK("ctx._source.r = [1, 2, 3, 4].subList(1, 3)", "{}", NULL, "{\"r\":[2,3]}");
	OK("def l = [1, 2, 3]; ctx._source.r = [l[-1], l[-3], l.length]", "{}", NULL,
	   "{\"r\":[3,1,3]}");
	OK("ctx._source.r = new ArrayList(params.l)", "{}", p, "{\"r\":[1,2,3]}");
	OK("def l = new ArrayList(params.m.keySet()); ctx._source.r = l", "{}", p,
	   "{\"r\":[\"a\",\"b\"]}");
	FAILS("def l = [1, 2]; l.remove('a')", "{}", NULL,
		  "List.remove takes an index; use removeIf or indexOf to remove by value");
	FAILS("def l = [1, 2]; l.get(-1)", "{}", NULL, "Index -1 out of bounds for length 2");
	FAILS("def l = [1, 2]; l[2]", "{}", NULL, "Index 2 out of bounds for length 2");
	FAILS("def l = [1, 2]; l[-3] = 1", "{}", NULL, "Index -3 out of bounds for length 2");
	FAILS("def l = [1, 2]; l.add(5, 1)", "{}", NULL, "Index 5 out of bounds for length 2");
	FAILS("def l = [1, 2]; l.remove(2)", "{}", NULL, "Index 2 out of bounds for length 2");
	FAILS("def l = [1, 'a']; l.sort(null)", "{}", NULL,
		  "cannot compare [java.lang.String] with [java.lang.Integer]");
	FAILS("[1].foo(1, 2)", "{}", NULL, "dynamic method [java.util.ArrayList, foo/2] not found");
	FAILS("[1].removeIf(1)", "{}", NULL, "expects a lambda");
	FAILS("[1].removeIf(x -> 1)", "{}", NULL, "cannot cast [java.lang.Integer] to [boolean]");

	/* map methods */
	OK("def m = ['a': 1]; m.put('b', 2); ctx._source.r = [m.containsKey('a'), m.containsKey('z'), m.get('b'), m.size(), m.isEmpty()]",
	   "{}", NULL, "{\"r\":[true,false,2,2,false]}");
	OK("def m = ['a': 1]; ctx._source.r = [m.getOrDefault('a', 0), m.getOrDefault('z', 0), m.get('z')]",
	   "{}", NULL, "{\"r\":[1,0,null]}");
	OK("def m = ['a': 1, 'b': 2]; def old = m.remove('a'); ctx._source.r = [m, old, m.remove('zz')]",
	   "{}", NULL, "{\"r\":[{\"b\":2},1,null]}");
	OK("def m = ['a': 1]; def old = m.put('a', 5); ctx._source.r = [m, old]", "{}", NULL,
	   "{\"r\":[{\"a\":5},1]}");
	OK("def m = ['a': 1]; m.putIfAbsent('a', 2); m.putIfAbsent('b', 3); ctx._source.r = m", "{}",
	   NULL, "{\"r\":{\"a\":1,\"b\":3}}");
	OK("def m = ['a': 1]; m.putAll(['b': 2, 'a': 3]); ctx._source.r = m", "{}", NULL,
	   "{\"r\":{\"a\":3,\"b\":2}}");
	OK("def m = ['a': 1, 'b': [2]]; ctx._source.r = [m.keySet(), m.values(), m.containsValue([2])]",
	   "{}", NULL, "{\"r\":[[\"a\",\"b\"],[1,[2]],true]}");
	OK("def m = ['a': 1, 'b': 2]; def s = ''; m.forEach((k, v) -> s += k + v); ctx._source.r = s",
	   "{}", NULL, "{\"r\":\"a1b2\"}");
	OK("def m = ['a': 1, 'b': null]; m.entrySet().removeIf(e -> e.getValue() == null); ctx._source.r = m",
	   "{}", NULL, "{\"r\":{\"a\":1}}");
	OK("def m = ['a': 1]; m.keySet().remove('a'); ctx._source.r = [m, m.keySet().contains('a')]",
	   "{}", NULL, "{\"r\":[{},false]}");
	OK("def m = ['a': 1]; m.clear(); ctx._source.r = m", "{}", NULL, "{\"r\":{}}");
	OK("ctx._source.r = new HashMap(params.m); ctx._source.r.c = 1", "{}", p,
	   "{\"r\":{\"a\":1,\"b\":[2],\"c\":1}}");
	OK("ctx._source.r = ctx._source.keySet().size() + ctx._source.entrySet().size()",
	   "{\"a\":1}", NULL, "{\"a\":1,\"r\":2}");
	OK("ctx._source.r = ctx._source.containsKey('a') && !ctx._source.containsKey('z')",
	   "{\"a\":1}", NULL, "{\"a\":1,\"r\":true}");
	OK("ctx._source.r = ctx.containsKey('_source') && ctx.get('_id') == 'doc-1'", "{}", NULL,
	   "{\"r\":true}");

	/* params are read-only, copies are not */
	FAILS("params.l.add(4)", "{}", p, "params are read-only");
	FAILS("params.m.a = 2", "{}", p, "params are read-only");
	FAILS("def l = params.l; l.add(4)", "{}", p, "params are read-only");
	FAILS("params.x = 1", "{}", p, "params are read-only");
	OK("ctx._source.m = params.m; ctx._source.m.b.add(3); ctx._source.p = params.m", "{}", p,
	   "{\"m\":{\"a\":1,\"b\":[2,3]},\"p\":{\"a\":1,\"b\":[2]}}");
	OK("def l = new ArrayList(params.l); l.add(4); ctx._source.r = [l, params.l]", "{}", p,
	   "{\"r\":[[1,2,3,4],[1,2,3]]}");
	OK("def c = [params.m]; c[0].a = 5; ctx._source.r = [c, params.m.a]", "{}", p,
	   "{\"r\":[[{\"a\":5,\"b\":[2]}],1]}");
}

static void
test_math(void)
{
	EXPR("Math.max(1, 2)", "2");
	EXPR("Math.max(1, 2L)", "2");
	EXPR("Math.max(1, 2.5)", "2.5");
	EXPR("Math.min(-1, 2)", "-1");
	EXPR("Math.abs(-3)", "3");
	EXPR("Math.abs(-3.5)", "3.5");
	EXPR("Math.abs(Integer.MIN_VALUE)", "-2147483648");
	EXPR("Math.floor(2.7)", "2.0");
	EXPR("Math.ceil(2.1)", "3.0");
	EXPR("Math.round(2.5)", "3");
	EXPR("Math.round(-2.5)", "-2");
	EXPR("Math.round(0.49999999999999994)", "0");
	EXPR("Math.round(2.4f)", "2");
	EXPR("Math.sqrt(16)", "4.0");
	EXPR("Math.pow(2, 10)", "1024.0");
	EXPR("Math.log(1)", "0.0");
	EXPR("Math.log10(1000)", "3.0");
	EXPR("Math.exp(0)", "1.0");
	EXPR("Math.signum(-5)", "-1.0");
	EXPR("Math.max(Double.NaN, 1)", "\"NaN\"");
	EXPR("Integer.parseInt('42')", "42");
	EXPR("Integer.parseInt('-2147483648')", "-2147483648");
	EXPR("Long.parseLong('9223372036854775807')", "9223372036854775807");
	EXPR("Double.parseDouble(' 1.5 ')", "1.5");
	EXPR("Double.parseDouble('1e3')", "1000.0");
	EXPR("Float.parseFloat('0.1')", "0.1");
	EXPR("Boolean.parseBoolean('TRUE')", "true");
	EXPR("Boolean.parseBoolean('yes')", "false");
	EXPR("Integer.valueOf('7') + 1", "8");
	EXPR("Objects.equals(1, 1)", "true");
	EXPR("Objects.equals(1, 1L)", "false");
	EXPR("Objects.isNull(params.n)", "true");
	EXPR("params.i.doubleValue()", "5.0");
	EXPR("params.d.intValue()", "2");
	EXPR("params.i.longValue() * 3000000000L", "15000000000");
	EXPR("params.i.compareTo(7)", "-1");
	EXPR("params.i.toString() + params.d.toString()", "\"52.5\"");
	EXPR("params.i.equals(5)", "true");
	EXPR("params.i.equals(5L)", "false");
	EXPR_FAILS("Integer.parseInt('x1')", "For input string: \"x1\"");
	EXPR_FAILS("Integer.parseInt('2147483648')", "For input string");
	EXPR_FAILS("Double.parseDouble('1.2.3')", "For input string");
	EXPR_FAILS("Math.max('a', 1)", "cannot cast [java.lang.String] to [java.lang.Number]");
}

/* ---------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------
 */

static void
test_compile_errors(void)
{
	FAILS("ctx._source.x = ;", "{}", NULL,
		  "compile error at [1:17]: unexpected token ';', expected an expression");
	FAILS("ctx._source.x = 1 2", "{}", NULL, "compile error at [1:19]: unexpected token '2', expected ';'");
	FAILS("ctx._source.x = (1", "{}", NULL, "compile error at [1:19]: unexpected end of script, expected ')'");
	FAILS("if (true) {\n  ctx._source.x = 1\n", "{}", NULL,
		  "compile error at [3:1]: unexpected end of script, expected '}'");
	FAILS("x = 1", "{}", NULL, "compile error at [1:1]: cannot resolve symbol [x]");
	FAILS("def x = 1; def x = 2", "{}", NULL, "compile error at [1:16]: variable [x] is already defined");
	FAILS("def ctx = 1", "{}", NULL, "variable [ctx] is already defined");
	FAILS("1 = 2", "{}", NULL, "compile error at [1:3]: invalid assignment");
	FAILS("ctx._source.a?.b = 1", "{}", NULL, "invalid assignment");
	FAILS("5++", "{}", NULL, "invalid increment target");
	FAILS("break", "{}", NULL, "break must be inside a loop");
	FAILS("ctx._source.x = 'abc", "{}", NULL, "compile error at [1:17]: unterminated string literal");
	FAILS("ctx._source.x = 'a\\qb'", "{}", NULL, "invalid escape sequence");
	FAILS("ctx._source.x = 2147483648", "{}", NULL, "invalid int constant [2147483648]");
	FAILS("ctx._source.x = 99999999999999999999L", "{}", NULL, "invalid long constant");
	FAILS("ctx._source.x = 1e", "{}", NULL, "invalid exponent");
	FAILS("ctx._source.x = 09", "{}", NULL, "invalid octal literal");
	FAILS("ctx._source.x = 1abc", "{}", NULL, "invalid number literal");
	FAILS("ctx._source.x = #", "{}", NULL, "compile error at [1:17]: unexpected character '#'");
	FAILS("/* never closed", "{}", NULL, "unterminated comment");
	FAILS("Math.foo(1)", "{}", NULL, "unknown call [foo] with [1] arguments on type [Math]");
	FAILS("Math.max(1)", "{}", NULL, "unknown call [max] with [1] arguments on type [Math]");
	FAILS("Integer.FOO", "{}", NULL, "unknown static field [Integer.FOO]");
	FAILS("new Thread()", "{}", NULL, "cannot instantiate [Thread]");
	FAILS("try { } catch (Exception e) { }", "{}", NULL, "'try' is not supported");
	FAILS("} ", "{}", NULL, "unexpected token '}', expected a statement");
	FAILS("else ctx.op = 'noop'", "{}", NULL, "'else' without a matching 'if'");
	FAILS("def List = 1", "{}", NULL, "invalid variable name [List]");
	FAILS("[1, 2: 3]", "{}", NULL, "expected ',' or ']' in list initializer");
	FAILS("{ def y = 1; } y = 2", "{}", NULL, "cannot resolve symbol [y]");
	FAILS("ctx._source.x = '\xe9'", "{}", NULL, "invalid UTF-8 in script");
	/* columns count characters, not bytes */
	FAILS("ctx._source.x = '\xc3\xa9' ;;  )", "{}", NULL, "compile error at [1:25]");
	{
		Outcome		o = run("ctx._source.x = 1", "{}", "[1]");

		UT_CHECK(o.error && strstr(o.error, "params must be an object"), "params array: %s", show(&o));
	}
	{
		char	   *big = (char *) palloc(SE_SCRIPT_MAX_SOURCE + 10);
		Outcome		o;

		memset(big, ' ', SE_SCRIPT_MAX_SOURCE + 1);
		big[SE_SCRIPT_MAX_SOURCE + 1] = '\0';
		o = run(big, "{}", NULL);
		UT_CHECK(o.error && strstr(o.error, "more than the maximum"), "big script: %s", show(&o));
	}
}

static void
test_runtime_errors(void)
{
	Outcome		o;

	FAILS("ctx._source.a.x = 1", "{}", NULL,
		  "runtime error at [1:15]: cannot access field [x] of null");
	FAILS("ctx._source.x = ctx._source.missing.x", "{}", NULL,
		  "runtime error at [1:37]: cannot access field [x] of null");
	FAILS("ctx._source.a.b.c = 1", "{\"a\":{}}", NULL,
		  "runtime error at [1:17]: cannot access field [c] of null");
	FAILS("ctx._source.tags.add('x')", "{}", NULL,
		  "runtime error at [1:18]: cannot invoke method [add] of null");
	FAILS("ctx._source.count++", "{}", NULL, "runtime error at [1:18]: cannot increment null");
	FAILS("ctx._source.count += 1", "{}", NULL,
		  "runtime error at [1:19]: cannot apply [+] operation to types [null] and [java.lang.Integer]");
	FAILS("def x = 1;\nx = x / (x - 1)", "{}", NULL, "runtime error at [2:7]: / by zero");
	FAILS("ctx._source.s.x = 1", "{\"s\":\"str\"}", NULL,
		  "cannot set field [x] of class [java.lang.String]");
	FAILS("ctx._source.x = ctx._source.s.x", "{\"s\":\"str\"}", NULL,
		  "dynamic field [x] not found for class [java.lang.String]");
	FAILS("ctx._source.s[0]", "{\"s\":\"str\"}", NULL, "cannot use [] on class [java.lang.String]");
	FAILS("ctx.op = 'anything'", "{}", NULL,
		  "Operation type [anything] not allowed, only [noop, index, delete] are allowed");
	FAILS("ctx.op = 1", "{}", NULL, "cannot cast [java.lang.Integer] to [java.lang.String]");
	FAILS("ctx._id = 'x'", "{}", NULL, "cannot modify read-only metadata [_id]");
	FAILS("ctx.foo = 'x'", "{}", NULL, "cannot put key [foo] into ctx");
	FAILS("ctx._source = 1", "{}", NULL, "cannot cast [java.lang.Integer] to [java.util.Map]");
	FAILS("if (ctx._source.x) {}", "{\"x\":1}", NULL,
		  "cannot cast [java.lang.Integer] to [boolean]");
	FAILS("for (def x : ctx._source) {}", "{}", NULL, "cannot iterate over a Map");
	FAILS("for (def x : ctx._source.n) {}", "{}", NULL, "runtime error at [1:26]: cannot iterate over null");
	FAILS("ctx._source.a = ctx._source", "{}", NULL,
		  "the updated _source is nested too deeply, too large, or contains itself");
	FAILS("def l = []; l.add(l); ctx._source.l = l", "{}", NULL, "contains itself");
	OK("def l = [1]; l.add(l); ctx._source.s = '' + l", "{}", NULL, "{\"s\":\"[1, (this Collection)]\"}");

	/* scripted upsert: ctx.op starts as create, may become noop */
	{
		SeError		err;
		SeScript   *s;
		SeScriptCtx ctx;
		SeScriptResult res;

		se_error_init(&err);
		s = se_script_compile("ctx._source.op = ctx.op; if (ctx._source.n == 1) ctx.op = 'none'", NULL, &err);
		se_script_ctx_init(&ctx, J("{\"n\":0}"));
		ctx.upsert = true;
		res = se_script_run(s, &ctx, &err);
		UT_CHECK(res == SE_SCRIPT_INDEX && strcmp(ctx.op, "create") == 0 &&
				 strcmp(se_json_to_string(ctx.source), "{\"n\":0,\"op\":\"create\"}") == 0,
				 "upsert create: %d %s", (int) res, ctx.op);
		se_script_ctx_init(&ctx, J("{\"n\":1}"));
		ctx.upsert = true;
		res = se_script_run(s, &ctx, &err);
		UT_CHECK(res == SE_SCRIPT_NOOP, "upsert noop: %d", (int) res);
		s = se_script_compile("ctx.op = 'delete'", NULL, &err);
		se_script_ctx_init(&ctx, J("{}"));
		ctx.upsert = true;
		res = se_script_run(s, &ctx, &err);
		UT_CHECK(res == SE_SCRIPT_ERROR && err.reason &&
				 strstr(err.reason, "Operation type [delete] not allowed, only [noop, create] are allowed"),
				 "upsert delete: %s", err.reason ? err.reason : "(none)");
	}
	FAILS("ctx.op = 'create'", "{}", NULL, "Operation type [create] not allowed");

	/* the cause and offset are reported for the API layer */
	o = run("ctx._source.a.b = 1", "{}", NULL);
	UT_CHECK(o.cause && strcmp(o.cause, "null_pointer_exception") == 0, "cause %s", o.cause ? o.cause : "(null)");
	o = run("def l = []; l[1]", "{}", NULL);
	UT_CHECK(o.cause && strcmp(o.cause, "index_out_of_bounds_exception") == 0, "cause %s", o.cause ? o.cause : "(null)");
	o = run("1/0", "{}", NULL);
	UT_CHECK(o.cause && strcmp(o.cause, "arithmetic_exception") == 0, "cause %s", o.cause ? o.cause : "(null)");
	o = run("(int) 'a'", "{}", NULL);
	UT_CHECK(o.cause && strcmp(o.cause, "class_cast_exception") == 0, "cause %s", o.cause ? o.cause : "(null)");
	o = run("[].foo()", "{}", NULL);
	UT_CHECK(o.cause && strcmp(o.cause, "illegal_argument_exception") == 0, "cause %s", o.cause ? o.cause : "(null)");
}

/* ---------------------------------------------------------------------
 * Limits
 * ---------------------------------------------------------------------
 */

static void
test_limits(void)
{
	Outcome		o;
	StringInfoData s;
	int			k;

	o = run("while (true) {}", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements") != NULL,
			 "infinite loop: %s", show(&o));
	UT_CHECK(o.cause && strcmp(o.cause, "painless_error") == 0, "budget cause");
	o = run("for (;;);", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements") != NULL, "for(;;): %s", show(&o));
	o = run("def i = 0; do { i++ } while (true)", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements") != NULL, "do: %s", show(&o));
	o = run("def l = [1]; while (true) { l.addAll(l) }", "{}", NULL);
	UT_CHECK(o.error != NULL, "doubling list: %s", show(&o));
	o = run("def s = 'ab'; while (true) { s = s + s }", "{}", NULL);
	UT_CHECK(o.error != NULL, "doubling string: %s", show(&o));
	o = run("def l = []; for (int i = 0; i < 100000; i++) { l.add(i) } def c = 0; while (true) { if (l.contains(-1)) c++ }",
			"{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements") != NULL,
			 "scans are charged: %s", show(&o));
	o = run("def l = [1]; for (int i = 0; i < 200; i++) { l = [l, l] } ctx._source.l = l", "{}", NULL);
	UT_CHECK(o.error != NULL, "exponential DAG refused: %s", show(&o));
	o = run("def l = [1]; for (int i = 0; i < 200; i++) { l = [l, l] } ctx._source.s = '' + l", "{}", NULL);
	UT_CHECK(o.error != NULL, "exponential toString refused: %s", show(&o));
	o = run("def l = [1]; for (int i = 0; i < 100; i++) { l = [l, l] } ctx._source.s = l == l", "{}", NULL);
	UT_CHECK(o.source != NULL, "identical lists compare quickly: %s", show(&o));

	/* string searches stay linear on hostile inputs */
	o = run("def s = 'a'; while (s.length() < 100000) { s += s } def t = s.substring(0, 50000) + 'b'; "
			"ctx._source.r = [s.contains(t), s.indexOf(t), s.lastIndexOf(s.substring(1, 40000)), s.replace(t, 'x').length(), s.split(t).length]",
			"{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"r\":[false,-1,91073,131072,1]}") == 0, "hostile search: %s", show(&o));
	o = run("def s = 'ab'; while (s.length() < 1000000) { s += s } def c = 0; while (true) { if (s == s + '') c++ }", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements"), "long string compares are charged: %s", show(&o));
	o = run("def s = 'ab'; while (s.length() < 1000000) { s += s } def c = 0; while (true) { c += s.length() }", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements"), "long string methods are charged: %s", show(&o));

	/* a smaller statement budget */
	o = run_full("for (int i = 0; i < 100; i++) {}", "{}", NULL, 50);
	UT_CHECK(o.error && strstr(o.error, "(50)"), "budget 50: %s", show(&o));
	o = run_full("for (int i = 0; i < 10; i++) {}", "{}", NULL, 50);
	UT_CHECK(o.source != NULL, "budget 50 enough: %s", show(&o));

	/* deep nesting is refused at compile time, not by the C stack */
	initStringInfo(&s);
	appendStringInfoString(&s, "ctx._source.x = ");
	for (k = 0; k < 5000; k++)
		appendStringInfoChar(&s, '(');
	appendStringInfoChar(&s, '1');
	for (k = 0; k < 5000; k++)
		appendStringInfoChar(&s, ')');
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "parens: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "ctx._source.x = 1");
	for (k = 0; k < 10000; k++)
		appendStringInfoString(&s, "+1");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "long chain: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "ctx._source.x = 1");
	for (k = 0; k < 200; k++)
		appendStringInfoString(&s, "+1");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"x\":201}") == 0, "200-term chain: %s", show(&o));

	resetStringInfo(&s);
	for (k = 0; k < 3000; k++)
		appendStringInfoString(&s, "if (true) ");
	appendStringInfoString(&s, "ctx._source.x = 1");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "nested ifs: %s", show(&o));

	resetStringInfo(&s);
	for (k = 0; k < 3000; k++)
		appendStringInfoString(&s, "{");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "braces: %s", show(&o));

	resetStringInfo(&s);
	for (k = 0; k < 5000; k++)
		appendStringInfoString(&s, "-");
	appendStringInfoString(&s, "1");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "unary chain: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "ctx._source.x = [");
	for (k = 0; k < 5000; k++)
		appendStringInfoString(&s, "[");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "list nesting: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "ctx._source");
	for (k = 0; k < 3000; k++)
		appendStringInfoString(&s, ".a");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "too deeply nested"), "field chain: %s", show(&o));

	/* as deep as allowed: runs without exhausting the C stack (under ASan) */
	resetStringInfo(&s);
	for (k = 0; k < 250; k++)
		appendStringInfoString(&s, "{");
	appendStringInfoString(&s, "ctx._source.x = 1");
	for (k = 0; k < 250; k++)
		appendStringInfoString(&s, "}");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"x\":1}") == 0, "250 blocks: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "ctx._source.x = ctx._source");
	for (k = 0; k < 250; k++)
		appendStringInfoString(&s, "?.a");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"x\":null}") == 0, "250 fields: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "def n = 0; def l = [1]; ");
	for (k = 0; k < 80; k++)
		appendStringInfo(&s, "l.forEach(x%d -> ", k);
	appendStringInfoString(&s, "n++");
	for (k = 0; k < 80; k++)
		appendStringInfoString(&s, ")");
	appendStringInfoString(&s, "; ctx._source.n = n");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"n\":1}") == 0, "80 nested lambdas: %s", show(&o));

	resetStringInfo(&s);
	appendStringInfoString(&s, "def x; ");
	for (k = 0; k < 200; k++)
		appendStringInfoString(&s, "x = ");
	appendStringInfoString(&s, "1; ctx._source.x = x");
	o = run(s.data, "{}", NULL);
	UT_CHECK(o.source && strcmp(o.source, "{\"x\":1}") == 0, "200 assignments: %s", show(&o));

	/* values nested deeper than any document are refused, not recursed into */
	o = run("def l = []; for (int i = 0; i < 1100; i++) { l = [l] } ctx._source.s = '' + l", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "nested too deeply"), "deep print: %s", show(&o));
	o = run("def a = [], b = []; for (int i = 0; i < 1100; i++) { a = [a]; b = [b] } ctx._source.s = a == b", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "nested too deeply"), "deep equals: %s", show(&o));
	o = run("def l = []; for (int i = 0; i < 1100; i++) { l = [l] } ctx._source.l = l", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "nested too deeply"), "deep store: %s", show(&o));
	o = run("def l = []; for (int i = 0; i < 1100; i++) { l = [l] } ctx._source.l = new ArrayList(l)", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "nested too deeply"), "deep store: %s", show(&o));
	resetStringInfo(&s);
	for (k = 0; k < 500; k++)
		appendStringInfoString(&s, "[");
	for (k = 0; k < 500; k++)
		appendStringInfoString(&s, "]");
	{
		char	   *doc = psprintf("{\"deep\":%s,\"p\":%s}", s.data, s.data);

		o = run("ctx._source.s = ctx._source.deep == ctx._source.p; ctx._source.t = ('' + ctx._source.deep).length()", doc, NULL);
		UT_CHECK(o.source != NULL && strstr(o.source, "\"s\":true,\"t\":1000}"), "deep doc: %s", show(&o));
	}
}

/* ---------------------------------------------------------------------
 * Budgets: a run that would loop forever, allocate without bound or
 * write an unbounded document fails with an error naming the limit --
 * before it passes the limit, not after
 * ---------------------------------------------------------------------
 */

#define SMALL_MEMORY ((int64) 4 * 1024 * 1024)
#define MB_STRING "def s = 'a'; while (s.length() < 1000000) { s += s } "

static void
test_budgets(void)
{
	static const char *const loops[] = {
		"while (true) {}",
		"while (true);",
		"for (;;) {}",
		"do {} while (true)",
		"def l = [1, 2]; while (true) { l.forEach(x -> {}) }",
		"def l = [1, 2]; while (true) { l.removeIf(x -> false) }",
		"def m = ['a': 1]; while (true) { for (k in m.keySet()) {} }",
	};
	static const char *const allocations[] = {
		"def l = []; while (true) { l.add(l.size()) }",
		"def l = []; while (true) { l.add([]) }",
		"def l = [1]; while (true) { l.addAll(l) }",
		"while (true) { def x = [[], [], [], [], [], [], [], [], [], [], [], [], [], [], [], []] }",
		"while (true) { def a = [:]; def b = [:]; def c = [:]; def d = [:] }",
		"def s = 'ab'; while (true) { s = s + s }",
		"def s = 'ab'; while (true) { s = s.concat(s) }",
		MB_STRING "def l = []; while (true) { l.add(s.toUpperCase()) }",
		MB_STRING "def l = []; while (true) { l.add(s.replace('a', 'bb')) }",
		MB_STRING "def l = []; while (true) { l.add(s.replace('', 'b')) }",
		MB_STRING "def l = []; while (true) { l.add(String.join(s, [s, s])) }",
		MB_STRING "def l = []; while (true) { l.add([s, s, s].toString()) }",
		MB_STRING "def l = []; while (true) { l.add(s.substring(1)) }",
		MB_STRING "ctx._source.n = s.split('a').size()",
		/* an entrySet scanned once per element of the list */
		"def m = [:]; for (int i = 0; i < 3000; i++) { m['k' + i] = i } def l = []; "
		"for (int i = 0; i < 300; i++) { l.add(i) } while (true) { l.removeAll(m.entrySet()) }",
	};
	Outcome		o;
	StringInfoData doc;
	int			k;

	for (k = 0; k < lengthof(loops); k++)
	{
		o = run(loops[k], "{}", NULL);
		UT_CHECK(o.error && strstr(o.error, "The maximum number of statements that can be executed (1000000) has been reached.") &&
				 o.cause && strcmp(o.cause, "painless_error") == 0,
				 "endless [%s]: %s", loops[k], show(&o));
	}
	for (k = 0; k < lengthof(allocations); k++)
	{
		o = run_budget(allocations[k], "{}", NULL, 0, SMALL_MEMORY);
		UT_CHECK(o.error && strstr(o.error, "exceeded the memory limit of 4194304 bytes") &&
				 o.cause && strcmp(o.cause, "circuit_breaking_exception") == 0,
				 "unbounded [%s]: %s", allocations[k], show(&o));
		/* the heap never held more than the budget (plus the error message) */
		UT_CHECK(!HEAP_MEASURED || o.heap <= SMALL_MEMORY + 65536,
				 "unbounded [%s] held %lld bytes", allocations[k], (long long) o.heap);
	}
	o = run_budget(MB_STRING "ctx._source.n = s.length()", "{}", NULL, 0, SMALL_MEMORY);
	UT_CHECK(o.source && strcmp(o.source, "{\"n\":1048576}") == 0, "1 MB within 4 MB: %s", show(&o));

	/* linear work is charged wherever it happens (1 MB of digits in the document) */
	initStringInfo(&doc);
	appendStringInfoString(&doc, "{\"s\":\"");
	for (k = 0; k < 1024 * 1024; k++)
		appendStringInfoChar(&doc, '0');
	appendStringInfoString(&doc, "\"}");
	o = run_full("for (int i = 0; i < 100; i++) { Double.parseDouble(ctx._source.s) }", doc.data, NULL, 1000);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements"), "parseDouble is charged: %s", show(&o));
	o = run_full("for (int i = 0; i < 100; i++) { Integer.parseInt(ctx._source.s) }", doc.data, NULL, 1000);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements"), "parseInt is charged: %s", show(&o));
	resetStringInfo(&doc);
	appendStringInfoChar(&doc, '{');
	for (k = 0; k < 20000; k++)
		appendStringInfo(&doc, "%s\"key%d\":%d", k ? "," : "", k, k);
	appendStringInfoChar(&doc, '}');
	o = run("for (e in ctx._source.entrySet()) { e.setValue(1) }", doc.data, NULL);
	UT_CHECK(o.error && strstr(o.error, "maximum number of statements"), "setValue lookups are charged: %s", show(&o));

	/* shared nodes are written out as often as they appear */
	o = run("def s = 'a'; while (s.length() < 100000) { s += s } def l = [s]; "
			"for (int i = 0; i < 14; i++) { l.addAll(l) } ctx._source.l = l", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "the updated _source exceeds the limit of 104857600 bytes"),
			 "2 GB of one shared string: %s", show(&o));
	o = run("def s = 'a'; while (s.length() < 100000) { s += s } "
			"for (int i = 0; i < 1000; i++) { ctx._source.list.add(s) }", "{\"list\":[]}", NULL);
	UT_CHECK(o.error && strstr(o.error, "the updated _source exceeds the limit of 104857600 bytes"),
			 "131 MB of one string in the document's own list: %s", show(&o));
	o = run("def s = 'a'; while (s.length() < 100000) { s += s } "
			"for (int i = 0; i < 100; i++) { ctx._source.list.add(s) }", "{\"list\":[]}", NULL);
	UT_CHECK(o.source && strlen(o.source) == 9 + 100 * (131072 + 2) + 99 + 2, "13 MB document: %s",
			 o.error ? o.error : "(ok)");

	/* a long input is quoted in part: reasons travel in responses */
	o = run("def s = 'x'; while (s.length() < 1000000) { s += s } Integer.parseInt(s)", "{}", NULL);
	UT_CHECK(o.error && strstr(o.error, "x...\"") && strlen(o.error) < 200, "quoted in part: %.300s",
			 show(&o));
}

/* ---------------------------------------------------------------------
 * Reuse: one compiled script, many documents
 * ---------------------------------------------------------------------
 */

static void
test_reuse(void)
{
	SeError		err;
	SeScript   *s;
	int			k;
	bool		ok = true;
	clock_t		t0;
	double		secs;
	int			n = 100000;

	se_error_init(&err);
	s = se_script_compile("if (ctx._source.tags.contains(params.tag)) { ctx.op = 'noop' } else { ctx._source.tags.add(params.tag); ctx._source.counter += params.count }",
						  J("{\"tag\":\"t\",\"count\":2}"), &err);
	UT_CHECK(s != NULL, "compile: %s", err.reason ? err.reason : "");
	if (s == NULL)
		return;
	UT_CHECK(strncmp(se_script_source(s), "if (ctx", 7) == 0, "source kept");
	t0 = clock();
	for (k = 0; k < n; k++)
	{
		SeScriptCtx ctx;
		SeScriptResult res;
		char	   *out;

		se_error_init(&err);
		se_script_ctx_init(&ctx, J(k % 2 ? "{\"tags\":[\"t\"],\"counter\":1}" : "{\"tags\":[],\"counter\":1}"));
		res = se_script_run(s, &ctx, &err);
		if (k % 2)
			ok &= (res == SE_SCRIPT_NOOP && strcmp(ctx.op, "noop") == 0);
		else
		{
			out = se_json_to_string(ctx.source);
			ok &= (res == SE_SCRIPT_INDEX && strcmp(out, "{\"tags\":[\"t\"],\"counter\":3}") == 0);
			pfree(out);
		}
	}
	secs = (double) (clock() - t0) / CLOCKS_PER_SEC;
	UT_CHECK(ok, "reused script gives the same results on every document");
	printf("reuse: %d documents (parse + run + write) in %.3f s under sanitizers\n", n, secs);
}

/* ---------------------------------------------------------------------
 * Fuzzing: mutated scripts never crash
 * ---------------------------------------------------------------------
 */

static uint64 rng_state = 0x9E3779B97F4A7C15ULL;

static uint32
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32) (rng_state >> 16);
}

static const char *const corpus[] = {
	"ctx._source.counter += params.count",
	"if (ctx._source.tags.contains(params.tag)) { ctx.op = 'noop' } else { ctx._source.tags.add(params.tag) }",
	"ctx._source.remove('field')",
	"if (ctx._source.likes > 10) { ctx.op = 'delete' }",
	"ctx._source.name = ctx._source.first + ' ' + ctx._source.last",
	"for (def t : ctx._source.tags) { if (t == 'x') { ctx._source.found = true } }",
	"int s = 0; for (int i = 0; i < 10; i++) { s += i * 2 } ctx._source.s = s",
	"def m = ['a': 1, 'b': [1, 2.5, 'x']]; m.put('c', m.size()); ctx._source.m = m",
	"ctx._source.tags.removeIf(t -> t.startsWith('tmp'))",
	"ctx._source.x = params.n ?: params.s?.length() ?: -1",
	"while (ctx._source.counter < 100) { ctx._source.counter *= 2 }",
	"ctx._source.l.sort((a, b) -> a - b); ctx._source.l[-1]++",
	"String s = 'abc'.substring(1).toUpperCase(); ctx._source.s = s.replace('B', '\\u00e9')",
	"ctx._source.d = Math.max(ctx._source.counter, 3.5) / 0",
	"def e = ctx._source.entrySet(); for (def x : e) { x.setValue(x.getValue() + '') }",
	"ctx._source.a.b['c'] = [1, [2, [3]]]; ctx._source.copy = ctx._source.a",
	"long x = 1L << 40; x >>>= 3; ctx._source.x = (int) x ^ ~5",
	"do { ctx._source.counter-- } while (ctx._source.counter > 0 && ctx._source.counter % 7 != 0)",
	"ctx._source.k = ctx._source.keySet().size() + '' + ctx._id + ctx._now",
	"def l = new ArrayList(params.l); l.addAll(l); Collections.sort(l); ctx._source.l2 = l.subList(0, 2)",
	"ctx._source.m = new HashMap(params.m); ctx._source.m.putAll(['z': [1]]); ctx._source.m.keySet().removeIf(k -> k == 'k')",
	"String t = ctx._source.first; if (t instanceof String && !t.isEmpty()) { ctx._source.t = t.charAt(0) + t.trim().toLowerCase() }",
	"ctx._source.parts = 'a,b,,c'.splitOnToken(','); ctx._source.j = String.join('|', ctx._source.parts)",
	"def total = 0.0; for (def e : params.m.entrySet()) { total += e.getValue().size() } ctx._source.total = (int) total",
	"ctx._source.n = Integer.parseInt('12') + Long.parseLong('3') * Double.parseDouble('1.5') % 7",
	"def x = ctx._source.counter; x = x instanceof Integer ? x << 2 : x; ctx._source.counter = x >= 10 ? -x : ~x",
	"ctx._source.l.forEach(v -> ctx._source.counter += v); ctx._source.l.removeIf(v -> v % 2 == 1)",
	"def m = ctx._source.a; m.forEach((k, v) -> { if (v instanceof Map) { v.put('seen', true) } }); ctx._source.a = m",
	"ctx._source.s = ctx._source.containsKey('first') ? ctx._source.getOrDefault('last', 'none') : params.s?.toUpperCase()",
	"for (int i = ctx._source.tags.size() - 1; i >= 0; i--) { if (ctx._source.tags[i].startsWith('t')) ctx._source.tags.remove(i) }",
};

static const char *const fragments[] = {
	"(", ")", "{", "}", "[", "]", ";", ",", ".", "?.", "?:", "?", ":", "->",
	"=", "+=", "-=", "++", "--", "+", "-", "*", "/", "%", "<<", ">>>", "&&",
	"||", "!", "~", "==", "!=", "===", "<", ">=", "instanceof", "if", "else",
	"for", "while", "do", "break", "continue", "return", "new", "def", "int",
	"String", "List", "Map", "ctx", "params", "_source", "null", "true", "0",
	"-1", "2147483647", "1.5", "1e308", "'s'", "\"q\"", "x", "ctx._source",
	"ctx.op", "params.l", "params.m", "Math.max(", "new ArrayList(", "[:]",
	"[1, 2]", ".add(", ".remove(", ".size()", ".contains(", "(int)",
	"'\\u00e9'", "\xc3\xa9", "\\", "'", "\"", "/*", "*/", "//", "\n", " ",
	"\xff", "e -> e", "(a, b) -> a", "while (true) {}", "ctx._source.tags",
};

/* parts of the corpus that a value swap may replace, and what with */
static const char *const swap_targets[] = {
	"params.count", "params.tag", "params.l", "'noop'", "'delete'", "10", "0",
	"1", "2", "'x'", "' '", "t", "i", "s", "ctx._source.tags", "ctx._source.counter",
	"ctx._source.first", "ctx._source.l", "ctx._source.a", "a", "b", "x", "m",
	"3.5", "'tmp'", "'field'", "100", "7", "-1", "e",
};

static const char *const swap_values[] = {
	"null", "1", "-1", "0", "2147483647", "-2147483648", "9223372036854775807L",
	"1.5", "-0.0", "1e308", "Double.NaN", "'s'", "''", "'\\u00e9\\uD83D\\uDE00'",
	"true", "[]", "[:]", "[1, 'a', null]", "['k': [1]]", "params.l", "params.m",
	"params.n", "params.s", "ctx._source", "ctx", "ctx._source.tags",
	"ctx._source.a", "ctx._source.missing", "ctx.op", "(int) 1e10",
	"ctx._source.keySet()", "ctx._source.entrySet()", "params.m.keySet()",
	"new ArrayList()", "new HashMap(params.m)", "'a,b'.splitOnToken(',')",
};

/* Replace one occurrence of a swap target by a value of another type. */
static char *
swap_value(const char *cur)
{
	int			tries;

	for (tries = 0; tries < 8; tries++)
	{
		const char *t = swap_targets[rnd() % lengthof(swap_targets)];
		const char *at = strstr(cur, t);
		int			skip = rnd() % 3;

		while (at != NULL && skip-- > 0 && strstr(at + 1, t) != NULL)
			at = strstr(at + 1, t);
		if (at != NULL)
		{
			StringInfoData b;

			initStringInfo(&b);
			appendBinaryStringInfo(&b, cur, at - cur);
			appendStringInfoString(&b, swap_values[rnd() % lengthof(swap_values)]);
			appendStringInfoString(&b, at + strlen(t));
			return b.data;
		}
	}
	return pstrdup(cur);
}

static char *
mutate(const char *src, bool swaps_only)
{
	StringInfoData b;
	int			len = strlen(src);
	int			nmut = 1 + rnd() % 4;
	int			m;
	char	   *cur = pstrdup(src);

	for (m = 0; m < nmut; m++)
	{
		int			at;

		len = strlen(cur);
		at = len > 0 ? rnd() % (len + 1) : 0;
		if (swaps_only || rnd() % 2 == 0)
		{
			char	   *next = swap_value(cur);

			pfree(cur);
			cur = next;
			continue;
		}
		initStringInfo(&b);
		switch (rnd() % 6)
		{
			case 0:				/* delete a run */
				{
					int			n = 1 + rnd() % 8;

					appendBinaryStringInfo(&b, cur, at);
					if (at + n < len)
						appendStringInfoString(&b, cur + at + n);
				}
				break;
			case 1:				/* insert a fragment */
			case 2:
				appendBinaryStringInfo(&b, cur, at);
				appendStringInfoString(&b, fragments[rnd() % lengthof(fragments)]);
				appendStringInfoString(&b, cur + at);
				break;
			case 3:				/* random byte */
				appendBinaryStringInfo(&b, cur, at);
				appendStringInfoChar(&b, (char) (1 + rnd() % 255));
				if (at < len)
					appendStringInfoString(&b, cur + at + 1);
				break;
			case 4:				/* splice another corpus entry */
				{
					const char *o = corpus[rnd() % lengthof(corpus)];
					int			ol = strlen(o);
					int			from = rnd() % (ol + 1);

					appendBinaryStringInfo(&b, cur, at);
					appendStringInfoString(&b, o + from);
				}
				break;
			default:			/* duplicate a run */
				{
					int			n = rnd() % 16;

					if (at + n > len)
						n = len - at;
					appendBinaryStringInfo(&b, cur, at + n);
					appendStringInfoString(&b, cur + at);
				}
				break;
		}
		pfree(cur);
		cur = b.data;
	}
	return cur;
}

/*
 * A random well-formed script: expressions over values of every type, so
 * that most of them compile and the runtime meets every type combination.
 */
static const char *const gen_atoms[] = {
	"null", "true", "0", "1", "-7", "2147483647", "5L", "2.5", "0.1f", "'s'",
	"''", "'a,b'", "[]", "[1, 'x', 2.0]", "['k': 1]", "[:]", "params.l",
	"params.m", "params.n", "params.s", "params.count", "ctx._source",
	"ctx._source.counter", "ctx._source.tags", "ctx._source.a", "ctx._source.l",
	"ctx._source.missing", "ctx._id", "ctx.op", "ctx._now", "v0", "v1", "v2",
	"Integer.MAX_VALUE", "Math.PI", "ctx._source.keySet()", "ctx._source.entrySet()",
};

static const char *const gen_binops[] = {
	"+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "&", "|", "^",
	"<<", ">>>", "===", "?:",
};

static const char *const gen_methods[] = {
	"size()", "isEmpty()", "add(%s)", "add(0, %s)", "remove(%s)", "contains(%s)",
	"indexOf(%s)", "get(%s)", "set(0, %s)", "put('k', %s)", "containsKey(%s)",
	"getOrDefault(%s, 1)", "keySet()", "values()", "length()", "substring(1)",
	"toUpperCase()", "trim()", "replace('a', %s)", "startsWith(%s)",
	"splitOnToken(',')", "toString()", "equals(%s)", "compareTo(%s)",
	"intValue()", "addAll(%s)", "removeIf(x -> x == %s)", "forEach(x -> v0 = x)",
	"sort(null)", "join(',')", "getKey()", "getValue()", "clear()",
};

static void gen_expr(StringInfo b, int depth);

static void
gen_expr(StringInfo b, int depth)
{
	uint32		c = depth > 3 ? 0 : rnd() % 9;

	switch (c)
	{
		case 0:
		case 1:
			appendStringInfoString(b, gen_atoms[rnd() % lengthof(gen_atoms)]);
			break;
		case 2:
			appendStringInfoChar(b, '(');
			gen_expr(b, depth + 1);
			appendStringInfo(b, " %s ", gen_binops[rnd() % lengthof(gen_binops)]);
			gen_expr(b, depth + 1);
			appendStringInfoChar(b, ')');
			break;
		case 3:
			{
				const char *m = gen_methods[rnd() % lengthof(gen_methods)];
				StringInfoData arg;

				initStringInfo(&arg);
				gen_expr(&arg, depth + 1);
				gen_expr(b, depth + 1);
				appendStringInfoString(b, rnd() % 4 ? "." : "?.");
				appendStringInfo(b, m, arg.data);
			}
			break;
		case 4:
			gen_expr(b, depth + 1);
			appendStringInfoChar(b, '[');
			gen_expr(b, depth + 1);
			appendStringInfoChar(b, ']');
			break;
		case 5:
			appendStringInfoString(b, "(");
			gen_expr(b, depth + 1);
			appendStringInfoString(b, " ? ");
			gen_expr(b, depth + 1);
			appendStringInfoString(b, " : ");
			gen_expr(b, depth + 1);
			appendStringInfoString(b, ")");
			break;
		case 6:
			appendStringInfoString(b, rnd() % 2 ? "-" : "!");
			gen_expr(b, depth + 1);
			break;
		case 7:
			{
				static const char *const casts[] = {"(int) ", "(long) ", "(double) ", "(float) ",
				"(String) ", "(List) ", "(def) "};

				appendStringInfoString(b, casts[rnd() % lengthof(casts)]);
				gen_expr(b, depth + 1);
			}
			break;
		default:
			gen_expr(b, depth + 1);
			appendStringInfoString(b, rnd() % 2 ? ".a" : "?.counter");
			break;
	}
}

static void
gen_lvalue(StringInfo b)
{
	static const char *const lv[] = {
		"v0", "v1", "v2", "ctx._source.counter", "ctx._source.x", "ctx._source.a.b",
		"ctx._source.tags[0]", "ctx._source.l[-1]", "ctx.op", "ctx._source['k']",
		"ctx._source.a['c']",
	};

	appendStringInfoString(b, lv[rnd() % lengthof(lv)]);
}

static void
gen_statement(StringInfo b, int depth)
{
	static const char *const assign_ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "<<="};
	uint32		c = depth > 2 ? rnd() % 3 : rnd() % 7;

	switch (c)
	{
		case 0:
		case 1:
			gen_lvalue(b);
			appendStringInfo(b, " %s ", assign_ops[rnd() % lengthof(assign_ops)]);
			gen_expr(b, 0);
			appendStringInfoString(b, "; ");
			break;
		case 2:
			gen_lvalue(b);
			appendStringInfoString(b, rnd() % 2 ? "++; " : "--; ");
			break;
		case 3:
			appendStringInfoString(b, "if (");
			gen_expr(b, 1);
			appendStringInfoString(b, ") { ");
			gen_statement(b, depth + 1);
			appendStringInfoString(b, "} else { ");
			gen_statement(b, depth + 1);
			appendStringInfoString(b, "} ");
			break;
		case 4:
			appendStringInfo(b, "for (def it%d : ", depth);
			gen_expr(b, 1);
			appendStringInfoString(b, ") { ");
			gen_statement(b, depth + 1);
			appendStringInfoString(b, "} ");
			break;
		case 5:
			appendStringInfo(b, "for (int i%d = 0; i%d < 3; i%d++) { ", depth, depth, depth);
			gen_statement(b, depth + 1);
			appendStringInfoString(b, "} ");
			break;
		default:
			appendStringInfoString(b, "while (");
			gen_expr(b, 1);
			appendStringInfoString(b, ") { ");
			gen_statement(b, depth + 1);
			appendStringInfoString(b, "break; } ");
			break;
	}
}

static void
test_fuzz(void)
{
	int			k;
	int			compiled = 0;
	int			ran_ok = 0;
	const char *doc = "{\"counter\":5,\"tags\":[\"a\",\"tmp1\",\"x\"],\"likes\":12,\"first\":\"A\",\"last\":\"B\","
		"\"l\":[3,1,2],\"a\":{\"b\":{\"c\":0}},\"field\":1}";
	const char *params = "{\"count\":2,\"tag\":\"z\",\"l\":[2,1],\"m\":{\"k\":[1]},\"s\":\"str\",\"n\":null}";
	SeJson	   *pj = J(params);
	int			iterations = getenv("SE_FUZZ_ITERATIONS") ? atoi(getenv("SE_FUZZ_ITERATIONS")) : 8000;

	/* the unmutated corpus is valid */
	for (k = 0; k < lengthof(corpus); k++)
	{
		Outcome		o = run(corpus[k], doc, params);

		UT_CHECK(o.compiled, "corpus [%s]: %s", corpus[k], show(&o));
		if (o.error)
			printf("corpus %d fails at run time (fine): %s\n", k, o.error);
	}
	if (getenv("SE_FUZZ_SEED"))
		rng_state ^= (uint64) strtoull(getenv("SE_FUZZ_SEED"), NULL, 10) * 0x2545F4914F6CDD1DULL;
	for (k = 0; k < iterations; k++)
	{
		char	   *src = mutate(corpus[rnd() % lengthof(corpus)], k % 2 == 0);
		SeError		err;
		SeScript   *s;

		se_error_init(&err);
		s = se_script_compile(src, pj, &err);
		UT_CHECK(s != NULL || (err.reason && strncmp(err.reason, "compile error", 13) == 0),
				 "fuzz compile of [%s]: %s", src, err.reason ? err.reason : "(no reason)");
		if (s != NULL)
		{
			SeScriptCtx ctx;
			SeScriptResult res;

			compiled++;
			se_script_ctx_init(&ctx, J(doc));
			ctx.max_statements = 20000;
			ctx.max_memory = 4 * 1024 * 1024;
			res = se_script_run(s, &ctx, &err);
			if (res != SE_SCRIPT_ERROR)
			{
				char	   *out = se_json_to_string(ctx.source);
				SeError		e2;

				ran_ok++;
				se_error_init(&e2);
				/* the result is always valid JSON */
				UT_CHECK(se_json_parse(out, strlen(out), NULL, &e2) != NULL,
						 "fuzz output of [%s] is not JSON: %s", src, out);
			}
			else
				UT_CHECK(err.reason && strncmp(err.reason, "runtime error", 13) == 0,
						 "fuzz run of [%s]: %s", src, err.reason ? err.reason : "(no reason)");
		}
	}
	printf("fuzz: %d mutated scripts, %d compiled, %d ran without error\n", iterations, compiled, ran_ok);

	/* generated well-formed scripts */
	{
		int			gen_compiled = 0,
					gen_ok = 0;

		for (k = 0; k < iterations / 2; k++)
		{
			StringInfoData b;
			int			n = 1 + rnd() % 4;
			int			i;
			SeError		err;
			SeScript   *s;

			initStringInfo(&b);
			appendStringInfoString(&b, "def v0 = params.count; def v1 = ctx._source.tags; def v2 = 's'; ");
			for (i = 0; i < n; i++)
				gen_statement(&b, 0);
			se_error_init(&err);
			s = se_script_compile(b.data, pj, &err);
			UT_CHECK(s != NULL || (err.reason && strncmp(err.reason, "compile error", 13) == 0),
					 "generated [%s]: %s", b.data, err.reason ? err.reason : "(no reason)");
			if (s != NULL)
			{
				SeScriptCtx ctx;
				SeScriptResult res;

				gen_compiled++;
				se_script_ctx_init(&ctx, J(doc));
				ctx.max_statements = 20000;
				ctx.max_memory = 4 * 1024 * 1024;
				res = se_script_run(s, &ctx, &err);
				if (res != SE_SCRIPT_ERROR)
				{
					char	   *out = se_json_to_string(ctx.source);
					SeError		e2;

					gen_ok++;
					se_error_init(&e2);
					UT_CHECK(se_json_parse(out, strlen(out), NULL, &e2) != NULL,
							 "generated [%s] output is not JSON: %s", b.data, out);
				}
				else
					UT_CHECK(err.reason && strncmp(err.reason, "runtime error", 13) == 0 &&
							 ctx.error_cause != NULL,
							 "generated [%s]: %s", b.data, err.reason ? err.reason : "(no reason)");
			}
		}
		printf("fuzz: %d generated scripts, %d compiled, %d ran without error\n",
			   iterations / 2, gen_compiled, gen_ok);
	}

	/* random byte strings */
	for (k = 0; k < 2000; k++)
	{
		char		buf[64];
		int			n = rnd() % 63;
		int			i;
		SeError		err;
		SeScript   *s;

		for (i = 0; i < n; i++)
			buf[i] = fragments[rnd() % lengthof(fragments)][0] ? (char) (32 + rnd() % 95) : 'x';
		buf[n] = '\0';
		se_error_init(&err);
		s = se_script_compile(buf, NULL, &err);
		if (s != NULL)
		{
			SeScriptCtx ctx;

			se_script_ctx_init(&ctx, J(doc));
			ctx.max_statements = 20000;
			(void) se_script_run(s, &ctx, &err);
		}
	}

	/* random token soups */
	for (k = 0; k < 3000; k++)
	{
		StringInfoData b;
		int			n = 1 + rnd() % 30;
		int			i;
		SeError		err;
		SeScript   *s;

		initStringInfo(&b);
		for (i = 0; i < n; i++)
		{
			appendStringInfoString(&b, fragments[rnd() % lengthof(fragments)]);
			if (rnd() % 2)
				appendStringInfoChar(&b, ' ');
		}
		se_error_init(&err);
		s = se_script_compile(b.data, pj, &err);
		if (s != NULL)
		{
			SeScriptCtx ctx;

			se_script_ctx_init(&ctx, J(doc));
			ctx.max_statements = 20000;
			(void) se_script_run(s, &ctx, &err);
		}
	}
}

int
main(void)
{
#if HEAP_MEASURED
	__sanitizer_install_malloc_and_free_hooks(heap_malloc_hook, heap_free_hook);
#endif
	test_es_examples();
	test_literals();
	test_arithmetic();
	test_strings();
	test_comparisons();
	test_statements();
	test_collections();
	test_math();
	test_compile_errors();
	test_runtime_errors();
	test_limits();
	test_budgets();
	test_reuse();
	test_fuzz();
	return ut_finish("test_script");
}
