/* SOURCES: src/script/mustache.c src/script/lexer.c src/script/parser.c src/script/interp.c src/script/builtins.c src/script/values.c src/script/score.c src/util/units.c src/util/json.c src/util/error.c */
/*
 * test_mustache.c
 *	  Search template rendering as Elasticsearch does it: escaping, names,
 *	  sections, ES's functions, delimiters, and malformed templates.
 */
#include "util/se_common.h"

#include "script/mustache.h"
#include "unit_test.h"

/* Render tpl with params (JSON text); the output, or "ERR: reason". */
static char *
render(const char *tpl, const char *params)
{
	SeError		err;
	SeMustache *m;
	SeJson	   *p = NULL;
	StringInfoData out;

	se_error_init(&err);
	if (params)
	{
		p = se_json_parse(params, strlen(params), NULL, &err);
		if (p == NULL)
			return psprintf("BAD PARAMS: %s", err.reason);
	}
	m = se_mustache_compile(tpl, strlen(tpl), &err);
	if (m == NULL)
		return psprintf("ERR: %s", err.reason);
	initStringInfo(&out);
	if (!se_mustache_render(m, p, 1024 * 1024, &out, &err))
		return psprintf("ERR: %s", err.reason);
	return out.data;
}

#define EXPECT(tpl, params, want) \
	do { \
		char *got_ = render(tpl, params); \
		UT_CHECK(strcmp(got_, want) == 0, "%s -> [%s], want [%s]", tpl, got_, want); \
	} while (0)

#define EXPECT_ERR(tpl, params, frag) \
	do { \
		char *got_ = render(tpl, params); \
		UT_CHECK(strncmp(got_, "ERR: ", 5) == 0 && strstr(got_, frag) != NULL, \
				 "%s -> [%s], want error with [%s]", tpl, got_, frag); \
	} while (0)

static void
test_values(void)
{
	EXPECT("hello {{name}}!", "{\"name\":\"world\"}", "hello world!");
	EXPECT("{{ name }}", "{\"name\":\"x\"}", "x");
	EXPECT("[{{missing}}]", "{}", "[]");
	EXPECT("[{{n}}]", "{\"n\":null}", "[]");
	EXPECT("{{a}} {{b}} {{c}} {{d}} {{e}}", "{\"a\":0,\"b\":1.5,\"c\":true,\"d\":1e10,\"e\":-12345678901234}",
		   "0 1.5 true 1.0E10 -12345678901234");
	/* a list prints as ES's map of its indexes; inside a value as a list */
	EXPECT("{{l}} {{o}}", "{\"l\":[\"a\",1,null],\"o\":{\"k\":\"v\",\"n\":[2,3]}}", "{0=a, 1=1, 2=null} {k=v, n=[2, 3]}");
	/* JSON-string escaping by default, none for triple and & */
	EXPECT("\"{{q}}\"", "{\"q\":\"say \\\"hi\\\"\\\\ \\n\\t\\u0001 é/\"}",
		   "\"say \\\"hi\\\"\\\\ \\n\\t\\u0001 é/\"");
	EXPECT("{{{q}}}|{{& q}}", "{\"q\":\"a\\\"b\"}", "a\"b|a\"b");
	/* dotted names, list index and size, the first segment's scope decides */
	EXPECT("{{a.b.c}}", "{\"a\":{\"b\":{\"c\":\"deep\"}}}", "deep");
	EXPECT("{{l.0}}-{{l.2}}-{{l.9}}-{{l.size}}", "{\"l\":[\"x\",\"y\",\"z\"]}", "x-z--3");
	EXPECT("{{l.1.k}}", "{\"l\":[{},{\"k\":7}]}", "7");
	EXPECT("{{#a}}{{b.c}}{{/a}}", "{\"a\":{\"b\":{}},\"b\":{\"c\":\"outer\"}}", "");
	EXPECT("{{#a}}{{x}}{{/a}}", "{\"a\":{\"y\":1},\"x\":\"outer\"}", "outer");
	EXPECT("{{.}}", "{\"k\":1}", "{k=1}");
	EXPECT("no tags at all", NULL, "no tags at all");
	EXPECT("{{x}}", NULL, "");
}

static void
test_sections(void)
{
	EXPECT("{{#l}}<{{.}}>{{/l}}", "{\"l\":[1,2,3]}", "<1><2><3>");
	EXPECT("{{#l}}{{n}},{{/l}}", "{\"l\":[{\"n\":1},{\"n\":2}]}", "1,2,");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":true}", "yes");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":false}", "no");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{}", "no");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":\"\"}", "no");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":[]}", "no");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":0}", "yes");
	EXPECT("{{#b}}yes{{/b}}{{^b}}no{{/b}}", "{\"b\":{}}", "yes");
	/* ES's default-value idiom */
	EXPECT("{{from}}{{^from}}0{{/from}}", "{}", "0");
	EXPECT("{{from}}{{^from}}0{{/from}}", "{\"from\":20}", "20");
	EXPECT("{{#o}}{{k}}{{/o}}", "{\"o\":{\"k\":\"v\"}}", "v");
	EXPECT("a{{! a comment }}b", NULL, "ab");
	EXPECT("a{{!multi\nline}}b", NULL, "ab");
}

static void
test_functions(void)
{
	EXPECT("{{#toJson}}statuses{{/toJson}}",
		   "{\"statuses\":{\"status\":[\"pending\",\"published\"]}}",
		   "{\"status\":[\"pending\",\"published\"]}");
	/* not a list or object: its toString, unescaped */
	EXPECT("{{#toJson}}s{{/toJson}}|{{#toJson}}n{{/toJson}}", "{\"s\":\"a\\\"b\",\"n\":3}", "a\"b|3");
	EXPECT("{{#TOJSON}}l{{/TOJSON}}", "{\"l\":[1,\"x\"]}", "[1,\"x\"]");
	EXPECT("[{{#toJson}}missing{{/toJson}}]", "{}", "[]");
	EXPECT("{{#toJson}}.{{/toJson}}", "{\"a\":1}", "{\"a\":1}");
	EXPECT("{{#join}}emails{{/join}}", "{\"emails\":[\"a@x.com\",\"b@x.com\"]}", "a@x.com,b@x.com");
	EXPECT("{{#join delimiter='||'}}date.formats{{/join delimiter='||'}}",
		   "{\"date\":{\"formats\":[\"yyyy-MM-dd\",\"yyyy\"]}}", "yyyy-MM-dd||yyyy");
	/* not a list: ES writes the body's text */
	EXPECT("{{#join}}s{{/join}}", "{\"s\":\"single\"}", "s");
	EXPECT("{{#join}}missing{{/join}}", "{}", "missing");
	EXPECT("{{#join delimiter=''}}l{{/join delimiter=''}}", "{\"l\":[1,2]}", "12");
	EXPECT("{{#Join}}l{{/Join}}", "{\"l\":[1,2.5]}", "1,2.5");
	/* ES's pattern is exact: this is a plain section */
	EXPECT("{{#join  delimiter='-'}}x{{/join  delimiter='-'}}", "{}", "");
	EXPECT("{{#url}}{{host}}/{{page}}{{/url}}", "{\"host\":\"http://example.com\",\"page\":\"hello-world\"}",
		   "http%3A%2F%2Fexample.com%2Fhello-world");
	EXPECT("{{#url}}a b*é{{/url}}", NULL, "a+b*%C3%A9");
	EXPECT_ERR("{{#toJson}}{{x}}{{/toJson}}", "{}", "must contain one and only one identifier");
	EXPECT_ERR("{{#join}}{{/join}}", "{}", "must contain one and only one identifier");
	EXPECT_ERR("{{#join delimiter='||'}}x{{/join}}", "{}", "Mismatched start/end tags");
}

static void
test_delimiters(void)
{
	EXPECT("{{=<% %>=}}<% a %>{{a}}<%={{ }}=%>{{a}}", "{\"a\":1}", "1{{a}}1");
	EXPECT("{{=| |=}}|#l||.||/l|", "{\"l\":[1,2]}", "12");
	EXPECT_ERR("{{=<%=}}", NULL, "Invalid delimiter");
	EXPECT_ERR("{{= a= b =}}", NULL, "Invalid delimiter");
}

static void
test_errors(void)
{
	char	   *deep;
	StringInfoData b;
	int			i;

	EXPECT_ERR("{{#a}}x", "{}", "Failed to close 'a' tag @[query-template:1]");
	EXPECT_ERR("line1\n{{#a}}\n{{#b}}{{/a}}", "{}", "Mismatched start/end tags: b != a @[query-template:3]");
	EXPECT_ERR("x{{/a}}", "{}", "Closing tag 'a' has no matching opening tag");
	EXPECT_ERR("{{a", "{}", "Improperly closed tag");
	EXPECT_ERR("{{{a}}", "{}", "Improperly closed tag");
	EXPECT_ERR("{{}}", "{}", "Empty mustache tag");
	EXPECT_ERR("{{> partial}}", "{}", "partials");
	EXPECT_ERR("{{! never closed", "{}", "Improperly closed tag");

	/* nesting bounded at compile time */
	initStringInfo(&b);
	for (i = 0; i <= SE_MUSTACHE_MAX_DEPTH; i++)
		appendStringInfoString(&b, "{{#a}}");
	for (i = 0; i <= SE_MUSTACHE_MAX_DEPTH; i++)
		appendStringInfoString(&b, "{{/a}}");
	deep = render(b.data, "{}");
	UT_CHECK(strstr(deep, "nest deeper than") != NULL, "%s", deep);
	/* the deepest allowed nesting renders */
	resetStringInfo(&b);
	for (i = 0; i < SE_MUSTACHE_MAX_DEPTH; i++)
		appendStringInfoString(&b, "{{#a}}");
	appendStringInfoString(&b, "x");
	for (i = 0; i < SE_MUSTACHE_MAX_DEPTH; i++)
		appendStringInfoString(&b, "{{/a}}");
	EXPECT(b.data, "{\"a\":true}", "x");

	/* output and work are bounded: loops over loops fail, not hang */
	resetStringInfo(&b);
	appendStringInfoString(&b, "{\"l\":[");
	for (i = 0; i < 1000; i++)
		appendStringInfo(&b, "%s%d", i ? "," : "", i);
	appendStringInfoString(&b, "]}");
	EXPECT_ERR("{{#l}}{{#l}}{{#l}}{{/l}}{{/l}}{{/l}}", b.data, "steps");
	EXPECT_ERR("{{#l}}{{#l}}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{/l}}{{/l}}", b.data, "longer than");
}

static void
test_es_example(void)
{
	const char *tpl = "{\"query\":{\"match\":{\"message\":\"{{query_string}}\"}},\"from\":\"{{from}}\",\"size\":\"{{size}}\"}";

	EXPECT(tpl, "{\"query_string\":\"hello world\",\"from\":20,\"size\":10}",
		   "{\"query\":{\"match\":{\"message\":\"hello world\"}},\"from\":\"20\",\"size\":\"10\"}");
	EXPECT("{\"query\":{\"bool\":{\"filter\":[{{#year_scope}}{\"range\":{\"@timestamp\":{\"gte\":\"now-1y/d\"}}},{{/year_scope}}{\"term\":{\"user.id\":\"{{user_id}}\"}}]}}}",
		   "{\"year_scope\":true,\"user_id\":\"kimchy\"}",
		   "{\"query\":{\"bool\":{\"filter\":[{\"range\":{\"@timestamp\":{\"gte\":\"now-1y/d\"}}},{\"term\":{\"user.id\":\"kimchy\"}}]}}}");
}

int
main(void)
{
	test_values();
	test_sections();
	test_functions();
	test_delimiters();
	test_errors();
	test_es_example();
	return ut_finish("test_mustache");
}
