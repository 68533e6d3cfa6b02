/* SOURCES: src/analysis/analysis.c src/analysis/standard_tokenizer.c src/analysis/porter.c src/analysis/unicode.c src/util/error.c */
/*
 * test_analysis.c
 *	  Unit tests for the analyzers: standard tokenizer (UAX#29 as Lucene
 *	  applies it), letter/whitespace/keyword tokenizers, filters, positions,
 *	  offsets, the Porter stemmer, Unicode tables and hostile input.
 *
 * Expected tokens come from Lucene's own tests and Elasticsearch behaviour.
 */
#include "util/se_common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis_int.h"
#include "unit_test.h"

/* Analyze text and join the terms with '|'. */
static char *
terms_of(const char *analyzer, const char *text, int len)
{
	const SeAnalyzer *a = se_analyzer_lookup(analyzer);
	SeTokenList list;
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	if (a == NULL)
	{
		appendStringInfoString(&buf, "<no analyzer>");
		return buf.data;
	}
	se_token_list_init(&list);
	se_analyze(a, text, len, &list);
	for (i = 0; i < list.ntokens; i++)
	{
		if (i > 0)
			appendStringInfoChar(&buf, '|');
		appendBinaryStringInfo(&buf, list.tokens[i].term, list.tokens[i].len);
	}
	se_token_list_free(&list);
	return buf.data;
}

#define CHECK_TERMS(an, text, expected) \
	do { \
		char *got_ = terms_of((an), (text), (int) strlen(text)); \
		UT_CHECK(strcmp(got_, (expected)) == 0, "%s(\"%s\"): got [%s] want [%s]", \
				 (an), (text), got_, (expected)); \
		pfree(got_); \
	} while (0)

/* Analyze and return the list (caller frees). */
static SeTokenList
analyze(const char *analyzer, const char *text)
{
	SeTokenList list;

	se_token_list_init(&list);
	se_analyze(se_analyzer_lookup(analyzer), text, (int) strlen(text), &list);
	return list;
}

static void
test_lookup(void)
{
	const char *names[] = {"standard", "simple", "whitespace", "keyword", "stop", "english"};
	int			i;

	for (i = 0; i < (int) lengthof(names); i++)
	{
		const SeAnalyzer *a = se_analyzer_lookup(names[i]);

		UT_CHECK(a != NULL, "lookup %s", names[i]);
		UT_CHECK(a && strcmp(se_analyzer_name(a), names[i]) == 0, "name %s", names[i]);
	}
	UT_CHECK(se_analyzer_lookup("Standard") == NULL, "names are case-sensitive");
	UT_CHECK(se_analyzer_lookup("french") == NULL, "unknown analyzer");
	UT_CHECK(se_analyzer_lookup(NULL) == NULL, "NULL name");
}

static void
test_standard_basic(void)
{
	/* from the task and Elasticsearch documentation */
	CHECK_TERMS("standard", "Wi-Fi", "wi|fi");
	CHECK_TERMS("standard", "don't", "don't");
	CHECK_TERMS("standard", "3.14", "3.14");
	CHECK_TERMS("standard", "U.S.A.", "u.s.a");
	CHECK_TERMS("standard", "example.com", "example.com");
	CHECK_TERMS("standard", "foo_bar", "foo_bar");
	CHECK_TERMS("standard", "l'avion", "l'avion");
	CHECK_TERMS("standard",
				"The 2 QUICK Brown-Foxes jumped over the lazy dog's bone.",
				"the|2|quick|brown|foxes|jumped|over|the|lazy|dog's|bone");
	CHECK_TERMS("standard", "john.smith@example.com visited http://www.example.com/path?q=1",
				"john.smith|example.com|visited|http|www.example.com|path|q|1");

	/* Lucene TestStandardAnalyzer */
	CHECK_TERMS("standard", "B2B 2B", "b2b|2b");
	CHECK_TERMS("standard", "some-dashed-phrase", "some|dashed|phrase");
	CHECK_TERMS("standard", "dogs,chase,cats", "dogs|chase|cats");
	CHECK_TERMS("standard", "ac/dc", "ac|dc");
	CHECK_TERMS("standard", "O'Reilly you're she's Jim's O'Reilly's",
				"o'reilly|you're|she's|jim's|o'reilly's");
	CHECK_TERMS("standard", "21.35 R2D2 C3PO 216.239.63.104", "21.35|r2d2|c3po|216.239.63.104");
	CHECK_TERMS("standard", "David has 5000 bones", "david|has|5000|bones");
	CHECK_TERMS("standard", "C embedded developers wanted", "c|embedded|developers|wanted");
	CHECK_TERMS("standard", "foo      bar .  FOO <> BAR", "foo|bar|foo|bar");
	CHECK_TERMS("standard", "\"QUOTED\" word", "quoted|word");
	CHECK_TERMS("standard", "1,000,000 1.5e10 $100 50% #hashtag @user", "1,000,000|1.5e10|100|50|hashtag|user");
	CHECK_TERMS("standard", "trailing_ _leading __ a__b", "trailing_|_leading|a__b");
	CHECK_TERMS("standard", "a'b' 'quoted' x.y.", "a'b|quoted|x.y");
	CHECK_TERMS("standard", "ab12.34cd 12ab.cd", "ab12.34cd|12ab.cd");
	CHECK_TERMS("standard", "ab.12 12.ab", "ab|12|12|ab");
	CHECK_TERMS("standard", "1'000 a;b 1;2", "1'000|a|b|1;2");
}

/* Lucene TestStandardAnalyzer.testMid */
static void
test_standard_mid(void)
{
	CHECK_TERMS("standard", "A:B", "a:b");
	CHECK_TERMS("standard", "A::B", "a|b");
	CHECK_TERMS("standard", "1.2", "1.2");
	CHECK_TERMS("standard", "A.B", "a.b");
	CHECK_TERMS("standard", "1..2", "1|2");
	CHECK_TERMS("standard", "A..B", "a|b");
	CHECK_TERMS("standard", "1,2", "1,2");
	CHECK_TERMS("standard", "1,,2", "1|2");
	CHECK_TERMS("standard", "A.:B", "a|b");
	CHECK_TERMS("standard", "A:.B", "a|b");
	CHECK_TERMS("standard", "1,.2", "1|2");
	CHECK_TERMS("standard", "1.,2", "1|2");
	CHECK_TERMS("standard", "A:B_A:B", "a:b_a:b");
	CHECK_TERMS("standard", "A:B_A::B", "a:b_a|b");
	CHECK_TERMS("standard", "1.2_1.2", "1.2_1.2");
	CHECK_TERMS("standard", "A.B_A.B", "a.b_a.b");
	CHECK_TERMS("standard", "1.2_1..2", "1.2_1|2");
	CHECK_TERMS("standard", "A.B_A..B", "a.b_a|b");
	CHECK_TERMS("standard", "1,2_1,2", "1,2_1,2");
	CHECK_TERMS("standard", "1,2_1,,2", "1,2_1|2");
	CHECK_TERMS("standard", "C_A.:B", "c_a|b");
	CHECK_TERMS("standard", "C_A:.B", "c_a|b");
	CHECK_TERMS("standard", "3_1,.2", "3_1|2");
	CHECK_TERMS("standard", "3_1.,2", "3_1|2");
}

static void
test_standard_empty(void)
{
	SeTokenList list;

	CHECK_TERMS("standard", "", "");
	CHECK_TERMS("standard", ".", "");
	CHECK_TERMS("standard", " ", "");
	CHECK_TERMS("standard", "!!! ... --- ??? ,,, ''' \"\" () [] {} <> / \\ | ~ ^ & * # @", "");
	CHECK_TERMS("standard", "\t\r\n\f\v", "");
	CHECK_TERMS("standard", "_", "");
	CHECK_TERMS("standard", "___ _._", "");

	list = analyze("standard", "... ---");
	UT_CHECK(list.ntokens == 0 && list.next_position == 0,
			 "punctuation consumes no position: %d", list.next_position);
	se_token_list_free(&list);

	/* NULL text is treated as empty */
	se_token_list_init(&list);
	se_analyze(se_analyzer_lookup("standard"), NULL, 5, &list);
	UT_CHECK(list.ntokens == 0, "NULL text");
	se_analyze(se_analyzer_lookup("standard"), "abc", -1, &list);
	UT_CHECK(list.ntokens == 0, "negative length");
	se_token_list_free(&list);
}

static void
test_standard_offsets(void)
{
	SeTokenList list = analyze("standard", "David has 5000 bones");
	int			starts[] = {0, 6, 10, 15};
	int			ends[] = {5, 9, 14, 20};
	int			i;

	UT_CHECK(list.ntokens == 4, "ntokens %d", list.ntokens);
	for (i = 0; i < 4 && i < list.ntokens; i++)
	{
		UT_CHECK(list.tokens[i].start_offset == starts[i] &&
				 list.tokens[i].end_offset == ends[i],
				 "token %d offsets %d-%d", i, list.tokens[i].start_offset,
				 list.tokens[i].end_offset);
		UT_CHECK(list.tokens[i].position == i, "position %d", list.tokens[i].position);
		UT_CHECK(list.tokens[i].term[list.tokens[i].len] == '\0', "NUL-terminated");
	}
	UT_CHECK(list.next_position == 4, "next_position %d", list.next_position);
	se_token_list_free(&list);

	/* byte offsets with multi-byte characters; lower-casing keeps offsets */
	list = analyze("standard", "Ärger «Über» 東京");
	UT_CHECK(list.ntokens == 4, "ntokens %d", list.ntokens);
	if (list.ntokens == 4)
	{
		UT_CHECK(list.tokens[0].start_offset == 0 && list.tokens[0].end_offset == 6,
				 "Ärger %d-%d", list.tokens[0].start_offset, list.tokens[0].end_offset);
		UT_CHECK(strcmp(list.tokens[0].term, "ärger") == 0, "term %s", list.tokens[0].term);
		UT_CHECK(list.tokens[1].start_offset == 9 && list.tokens[1].end_offset == 14,
				 "Über %d-%d", list.tokens[1].start_offset, list.tokens[1].end_offset);
		UT_CHECK(list.tokens[2].start_offset == 17 && list.tokens[2].end_offset == 20,
				 "東 %d-%d", list.tokens[2].start_offset, list.tokens[2].end_offset);
		UT_CHECK(list.tokens[3].start_offset == 20 && list.tokens[3].end_offset == 23,
				 "京 %d-%d", list.tokens[3].start_offset, list.tokens[3].end_offset);
		UT_CHECK(list.tokens[3].position == 3, "position");
	}
	se_token_list_free(&list);
}

static void
test_standard_languages(void)
{
	/* Greek, Cyrillic, accented Latin, lower-cased */
	CHECK_TERMS("standard", "Γράφεται σε συνεργασία από εθελοντές",
				"γράφεται|σε|συνεργασία|από|εθελοντές");
	CHECK_TERMS("standard", "ΣΟΦΟΣ Σοφός", "σοφοσ|σοφός");	/* no final-sigma rule */
	CHECK_TERMS("standard", "Привет, Мир! Ёлка", "привет|мир|ёлка");
	CHECK_TERMS("standard", "Élan CAFÉ naïve Straße ÆØÅ", "élan|café|naïve|straße|æøå");
	CHECK_TERMS("standard", "cafe\xCC\x81 mo\xCD\xA4" "chte", "cafe\xCC\x81|mo\xCD\xA4" "chte");
	CHECK_TERMS("standard", "İSTANBUL", "istanbul");
	CHECK_TERMS("standard", "co\xC2\xAD" "operate", "co\xC2\xAD" "operate");	/* soft hyphen */

	/* CJK: ideographs and hiragana one per token, katakana and hangul runs */
	CHECK_TERMS("standard", "我是中国人。 １２３４ Ｔｅｓｔｓ ",
				"我|是|中|国|人|１２３４|ｔｅｓｔｓ");
	CHECK_TERMS("standard", "仮名遣い カタカナ", "仮|名|遣|い|カタカナ");
	CHECK_TERMS("standard", "안녕하세요 한글입니다", "안녕하세요|한글입니다");
	CHECK_TERMS("standard", "훈민정음", "훈민정음");
	CHECK_TERMS("standard", "𩬅艱鍟䇹愯瀛", "𩬅|艱|鍟|䇹|愯|瀛");
	CHECK_TERMS("standard", "ざ", "ざ");
	CHECK_TERMS("standard", "ザ", "ザ");
	CHECK_TERMS("standard", "壹゙", "壹゙");
	CHECK_TERMS("standard", "아゙", "아゙");
	CHECK_TERMS("standard", "カタカナabc カタ_abc", "カタカナ|abc|カタ_abc");
	CHECK_TERMS("standard", "東京abc", "東|京|abc");

	/* South-East Asian scripts stay whole */
	CHECK_TERMS("standard", "การที่ได้ต้องแสดงว่างานดี. แล้วเธอจะไปไหน? ๑๒๓๔",
				"การที่ได้ต้องแสดงว่างานดี|แล้วเธอจะไปไหน|๑๒๓๔");
	CHECK_TERMS("standard", "ສາທາລະນະລັດ ປະຊາທິປະໄຕ ປະຊາຊົນລາວ",
				"ສາທາລະນະລັດ|ປະຊາທິປະໄຕ|ປະຊາຊົນລາວ");

	/* other scripts from Lucene's tests */
	CHECK_TERMS("standard", "ዊኪፔድያ የባለ ብዙ ቋንቋ የተሟላ", "ዊኪፔድያ|የባለ|ብዙ|ቋንቋ|የተሟላ");
	CHECK_TERMS("standard",
				"الفيلم الوثائقي الأول عن ويكيبيديا يسمى \"الحقيقة بالأرقام: قصة ويكيبيديا\" (بالإنجليزية: Truth in Numbers: The Wikipedia Story)، سيتم إطلاقه في 2008.",
				"الفيلم|الوثائقي|الأول|عن|ويكيبيديا|يسمى|الحقيقة|بالأرقام|قصة|ويكيبيديا|بالإنجليزية|truth|in|numbers|the|wikipedia|story|سيتم|إطلاقه|في|2008");
	CHECK_TERMS("standard", "ویکی پدیای انگلیسی در تاریخ ۲۵ دی ۱۳۷۹ به صورت مکملی برای دانشنامهٔ تخصصی",
				"ویکی|پدیای|انگلیسی|در|تاریخ|۲۵|دی|۱۳۷۹|به|صورت|مکملی|برای|دانشنامهٔ|تخصصی");
	CHECK_TERMS("standard", "এই বিশ্বকোষ পরিচালনা করে উইকিমিডিয়া ফাউন্ডেশন (একটি অলাভজনক সংস্থা)।",
				"এই|বিশ্বকোষ|পরিচালনা|করে|উইকিমিডিয়া|ফাউন্ডেশন|একটি|অলাভজনক|সংস্থা");
	CHECK_TERMS("standard", "སྣོན་མཛོད་དང་ལས་འདིས་བོད་ཡིག་",
				"སྣོན|མཛོད|དང|ལས|འདིས|བོད|ཡིག");

	/* Hebrew quotes (WB7a-c) */
	CHECK_TERMS("standard", "צה\"ל", "צה\"ל");
	CHECK_TERMS("standard", "ג'ירפה ג'", "ג'ירפה|ג'");
	CHECK_TERMS("standard", "a\"b", "a|b");
	/* Lucene's grammar: a Hebrew letter + quote unit follows a letter only directly */
	CHECK_TERMS("standard", "aא'", "aא'");
	CHECK_TERMS("standard", "a.א'", "a.א");
	CHECK_TERMS("standard", "א\"ב'", "א\"ב");
	CHECK_TERMS("standard", "א'1 a'1", "א'1|a|1");	/* Hebrew+quote, then a number */
}

static void
test_standard_emoji(void)
{
	/* Lucene TestStandardAnalyzer emoji tests */
	CHECK_TERMS("standard", "💩 💩💩", "💩|💩|💩");
	CHECK_TERMS("standard", "👩\u200D❤️\u200D👩", "👩\u200D❤️\u200D👩");
	CHECK_TERMS("standard", "👨🏼\u200D⚕️", "👨🏼\u200D⚕️");
	CHECK_TERMS("standard", "🇺🇸🇺🇸", "🇺🇸|🇺🇸");
	CHECK_TERMS("standard", "🇺", "");
	CHECK_TERMS("standard", "#️⃣", "#️⃣");
	CHECK_TERMS("standard", "3️⃣", "3️⃣");
	CHECK_TERMS("standard", "#\uFE0E", "");
	CHECK_TERMS("standard", "3\uFE0E", "3\uFE0E");
	CHECK_TERMS("standard", "\u2B55\uFE0E", "\u2B55");
	CHECK_TERMS("standard", "\u2B55\uFE0E\u200D\u2B55\uFE0E", "\u2B55|\u200D\u2B55");
	CHECK_TERMS("standard", "🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
				"🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F");
	CHECK_TERMS("standard", "poo💩poo", "poo|💩|poo");
	CHECK_TERMS("standard", "💩中國💩", "💩|中|國|💩");
	CHECK_TERMS("standard", "I ❤️ NY 👍🏽!", "i|❤️|ny|👍🏽");
	CHECK_TERMS("standard", "\u200D\u200D", "");
}

static void
test_standard_long_tokens(void)
{
	StringInfoData in;
	StringInfoData want;
	int			i;
	char	   *got;
	SeTokenList list;

	/* Lucene testMaxTokenLengthDefault: 255 b's, then 256 b's -> 255 + 1 */
	initStringInfo(&in);
	initStringInfo(&want);
	appendStringInfoString(&in, "x ");
	for (i = 0; i < 255; i++)
		appendStringInfoChar(&in, 'b');
	appendStringInfoChar(&in, ' ');
	for (i = 0; i < 256; i++)
		appendStringInfoChar(&in, 'b');
	appendStringInfoString(&want, "x|");
	for (i = 0; i < 255; i++)
		appendStringInfoChar(&want, 'b');
	appendStringInfoChar(&want, '|');
	for (i = 0; i < 255; i++)
		appendStringInfoChar(&want, 'b');
	appendStringInfoString(&want, "|b");
	got = terms_of("standard", in.data, in.len);
	UT_CHECK(strcmp(got, want.data) == 0, "max token length split");

	/* 600 letters -> 255, 255, 90 at consecutive positions, right offsets */
	resetStringInfo(&in);
	for (i = 0; i < 600; i++)
		appendStringInfoChar(&in, 'A' + i % 26);
	list = analyze("standard", in.data);
	UT_CHECK(list.ntokens == 3, "600 letters -> %d tokens", list.ntokens);
	if (list.ntokens == 3)
	{
		UT_CHECK(list.tokens[0].len == 255 && list.tokens[1].len == 255 &&
				 list.tokens[2].len == 90, "lengths %d %d %d", list.tokens[0].len,
				 list.tokens[1].len, list.tokens[2].len);
		UT_CHECK(list.tokens[1].start_offset == 255 && list.tokens[1].end_offset == 510 &&
				 list.tokens[2].position == 2, "split offsets");
		UT_CHECK(list.tokens[1].term[0] == 'v', "second piece starts with v: %c",
				 list.tokens[1].term[0]);
	}
	se_token_list_free(&list);

	/* the limit counts UTF-16 units: 300 x 'é' (2 bytes, 1 unit) -> 255 + 45 */
	resetStringInfo(&in);
	for (i = 0; i < 300; i++)
		appendStringInfoString(&in, "é");
	list = analyze("standard", in.data);
	UT_CHECK(list.ntokens == 2 && list.tokens[0].len == 510 && list.tokens[1].len == 90,
			 "é split: %d tokens", list.ntokens);
	se_token_list_free(&list);

	/* a supplementary letter does not straddle the limit: 254 + U+10300 */
	resetStringInfo(&in);
	for (i = 0; i < 254; i++)
		appendStringInfoChar(&in, 'a');
	appendStringInfoString(&in, "\xF0\x90\x8C\x80");
	list = analyze("standard", in.data);
	UT_CHECK(list.ntokens == 2 && list.tokens[0].len == 254 && list.tokens[1].len == 4,
			 "surrogate pair at limit: %d tokens", list.ntokens);
	se_token_list_free(&list);

	/* CharTokenizer lets the last supplementary char go one unit over */
	list = analyze("simple", in.data);
	UT_CHECK(list.ntokens == 1 && list.tokens[0].len == 258,
			 "letter tokenizer surrogate at limit: %d tokens", list.ntokens);
	se_token_list_free(&list);

	/* a mid character at the limit is not part of the piece */
	resetStringInfo(&in);
	for (i = 0; i < 254; i++)
		appendStringInfoChar(&in, 'a');
	appendStringInfoString(&in, ".b");
	got = terms_of("standard", in.data, in.len);
	UT_CHECK(strlen(got) == 256 && strcmp(got + 254, "|b") == 0, "mid at limit");

	/* simple/whitespace split at 255 too */
	resetStringInfo(&in);
	for (i = 0; i < 600; i++)
		appendStringInfoChar(&in, 'z');
	list = analyze("simple", in.data);
	UT_CHECK(list.ntokens == 3 && list.tokens[2].len == 90, "simple split %d", list.ntokens);
	se_token_list_free(&list);
	list = analyze("whitespace", in.data);
	UT_CHECK(list.ntokens == 3 && list.tokens[0].len == 255, "whitespace split %d", list.ntokens);
	se_token_list_free(&list);
	list = analyze("keyword", in.data);
	UT_CHECK(list.ntokens == 1 && list.tokens[0].len == 600, "keyword never splits");
	se_token_list_free(&list);
}

static void
test_other_analyzers(void)
{
	SeTokenList list;

	/* simple: letters only, lower-cased */
	CHECK_TERMS("simple", "The 2 QUICK Brown-Foxes jumped over the lazy dog's bone.",
				"the|quick|brown|foxes|jumped|over|the|lazy|dog|s|bone");
	CHECK_TERMS("simple", "R2D2 l'avion 3.14 foo_bar Ĳssel ΑΒΓ Ωmega", "r|d|l|avion|foo|bar|ĳssel|αβγ|ωmega");
	CHECK_TERMS("simple", "東京タワー", "東京タワー");	/* letters, no UAX#29 */
	CHECK_TERMS("simple", "", "");
	CHECK_TERMS("simple", "123 !!", "");
	CHECK_TERMS("simple", "cafe\xCC\x81", "cafe");	/* Mn is not a letter */

	/* whitespace: no normalisation; Java white space, no-break spaces are not */
	CHECK_TERMS("whitespace", "The 2 QUICK Brown-Foxes jumped over the lazy dog's bone.",
				"The|2|QUICK|Brown-Foxes|jumped|over|the|lazy|dog's|bone.");
	CHECK_TERMS("whitespace", " a\tb\nc\rd\fe\vf\x1cg\xE3\x80\x80h\xE2\x80\xA8i\xC2\xA0j\xE2\x80\xAFk ",
				"a|b|c|d|e|f|g|h|i\xC2\xA0j\xE2\x80\xAFk");
	CHECK_TERMS("whitespace", "   ", "");
	CHECK_TERMS("whitespace", "", "");

	/* keyword: one token, even for empty input */
	CHECK_TERMS("keyword", "New York, NY", "New York, NY");
	list = analyze("keyword", "");
	UT_CHECK(list.ntokens == 1 && list.tokens[0].len == 0 && list.tokens[0].term[0] == '\0' &&
			 list.tokens[0].start_offset == 0 && list.tokens[0].end_offset == 0,
			 "keyword empty: %d tokens", list.ntokens);
	se_token_list_free(&list);

	/* stop: simple + English stop words, positions kept */
	CHECK_TERMS("stop", "The quick brown fox jumps over the lazy dog's bone, and it is THIS one.",
				"quick|brown|fox|jumps|over|lazy|dog|s|bone|one");
	list = analyze("stop", "The quick AND the dead");
	UT_CHECK(list.ntokens == 2, "stop ntokens %d", list.ntokens);
	if (list.ntokens == 2)
	{
		UT_CHECK(strcmp(list.tokens[0].term, "quick") == 0 && list.tokens[0].position == 1,
				 "quick at 1: %d", list.tokens[0].position);
		UT_CHECK(strcmp(list.tokens[1].term, "dead") == 0 && list.tokens[1].position == 4,
				 "dead at 4: %d", list.tokens[1].position);
		UT_CHECK(list.tokens[1].start_offset == 18 && list.tokens[1].end_offset == 22,
				 "dead offsets");
	}
	UT_CHECK(list.next_position == 5, "next_position %d", list.next_position);
	se_token_list_free(&list);

	/* every stop word */
	CHECK_TERMS("stop", "a an and are as at be but by for if in into is it no not of on or such "
				"that the their then there these they this to was will with", "");
	CHECK_TERMS("stop", "A An AND Are theirs thence therefore wills within", "theirs|thence|therefore|wills|within");

	/* standard keeps stop words */
	CHECK_TERMS("standard", "to be or not to be", "to|be|or|not|to|be");
}

static void
test_english(void)
{
	SeTokenList list;

	CHECK_TERMS("english", "The 2 QUICK Brown-Foxes jumped over the lazy dog's bone.",
				"2|quick|brown|fox|jump|over|lazi|dog|bone");
	CHECK_TERMS("english", "caresses ponies relational generalization running libraries library python servers connection",
				"caress|poni|relat|gener|run|librari|librari|python|server|connect");
	CHECK_TERMS("english", "Wi-Fi connections", "wi|fi|connect");
	/* possessives: 's, ’s, ＇s, S; only at the end */
	CHECK_TERMS("english", "John's JOHN'S John’s John＇s", "john|john|john|john");
	CHECK_TERMS("english", "it's", "");	/* it's -> it -> stop word */
	CHECK_TERMS("english", "o'reilly's books", "o'reilli|book");
	CHECK_TERMS("english", "dogs' owner's", "dog|owner");
	CHECK_TERMS("english", "don't", "don't");
	CHECK_TERMS("english", "café cafés", "café|café");
	CHECK_TERMS("english", "Γράφεται ΣΟΦΟΣ", "γράφεται|σοφοσ");
	CHECK_TERMS("english", "to be or not to be", "");
	CHECK_TERMS("english", "İT works", "work");	/* lower-cased before the stop filter */

	/* stop words consume positions, possessive keeps the original offsets */
	list = analyze("english", "It's the library's books");
	UT_CHECK(list.ntokens == 2, "ntokens %d", list.ntokens);
	if (list.ntokens == 2)
	{
		UT_CHECK(strcmp(list.tokens[0].term, "librari") == 0 && list.tokens[0].position == 2,
				 "librari at %d", list.tokens[0].position);
		UT_CHECK(list.tokens[0].start_offset == 9 && list.tokens[0].end_offset == 18,
				 "offsets %d-%d", list.tokens[0].start_offset, list.tokens[0].end_offset);
		UT_CHECK(strcmp(list.tokens[1].term, "book") == 0 && list.tokens[1].position == 3,
				 "book at %d", list.tokens[1].position);
	}
	UT_CHECK(list.next_position == 4, "next_position %d", list.next_position);
	se_token_list_free(&list);

	/* trailing stop words still advance next_position */
	list = analyze("english", "search the");
	UT_CHECK(list.ntokens == 1 && list.next_position == 2, "trailing stop: %d", list.next_position);
	se_token_list_free(&list);
}

static void
test_positions_multi_value(void)
{
	SeTokenList list;
	const SeAnalyzer *a = se_analyzer_lookup("standard");

	se_token_list_init(&list);
	se_analyze(a, "first value", 11, &list);
	list.next_position += 100;	/* position_increment_gap */
	se_analyze(a, "second", 6, &list);
	UT_CHECK(list.ntokens == 3, "ntokens %d", list.ntokens);
	UT_CHECK(list.ntokens == 3 && list.tokens[2].position == 102,
			 "second value position %d", list.ntokens == 3 ? list.tokens[2].position : -1);
	UT_CHECK(list.ntokens == 3 && list.tokens[2].start_offset == 0, "offsets are per value");
	UT_CHECK(strcmp(list.tokens[0].term, "first") == 0, "earlier terms intact");

	/* reset: empty, position 0, memory reused */
	se_token_list_reset(&list);
	UT_CHECK(list.ntokens == 0 && list.next_position == 0 && list.capacity > 0, "reset");
	se_analyze(a, "again", 5, &list);
	UT_CHECK(list.ntokens == 1 && list.tokens[0].position == 0 &&
			 strcmp(list.tokens[0].term, "again") == 0, "after reset");
	se_token_list_free(&list);
	UT_CHECK(list.tokens == NULL && list.capacity == 0 && list.term_chunks == NULL, "free");
	se_token_list_free(&list);	/* twice is harmless */
}

/* Many tokens: the arena and token array grow without moving terms. */
static void
test_large_document(void)
{
	StringInfoData in;
	SeTokenList list;
	int			i;
	int			bad = 0;
	char		word[32];

	initStringInfo(&in);
	for (i = 0; i < 50000; i++)
		appendStringInfo(&in, "Word%d ", i);
	list = analyze("standard", in.data);
	UT_CHECK(list.ntokens == 50000, "ntokens %d", list.ntokens);
	for (i = 0; i < list.ntokens; i++)
	{
		snprintf(word, sizeof(word), "word%d", i);
		if (strcmp(list.tokens[i].term, word) != 0 || list.tokens[i].position != i ||
			list.tokens[i].len != (int) strlen(word))
			bad++;
	}
	UT_CHECK(bad == 0, "%d bad tokens", bad);

	/* reuse after reset keeps working with one chunk */
	se_token_list_reset(&list);
	se_analyze(se_analyzer_lookup("english"), in.data, in.len, &list);
	UT_CHECK(list.ntokens == 50000 && strcmp(list.tokens[49999].term, "word49999") == 0,
			 "english large");
	se_token_list_free(&list);

	/* a huge single term gets its own chunk, which reset does not keep */
	resetStringInfo(&in);
	while (in.len < 2 * 1024 * 1024)
		appendStringInfoString(&in, "0123456789abcdef");
	se_analyze(se_analyzer_lookup("keyword"), in.data, in.len, &list);
	UT_CHECK(list.ntokens == 1 && list.tokens[0].len == in.len &&
			 memcmp(list.tokens[0].term, in.data, in.len) == 0, "huge keyword");
	se_token_list_reset(&list);
	UT_CHECK(list.term_chunks == NULL, "huge chunk released by reset");
	se_analyze(se_analyzer_lookup("keyword"), "small", 5, &list);
	UT_CHECK(list.ntokens == 1 && strcmp(list.tokens[0].term, "small") == 0, "after huge");
	se_token_list_free(&list);
	pfree(in.data);
}

static void
check_stem(const char *in, const char *want)
{
	char		buf[128];
	int			len;

	strlcpy(buf, in, sizeof(buf));
	len = se_porter_stem(buf, (int) strlen(buf));
	buf[len] = '\0';
	UT_CHECK(strcmp(buf, want) == 0, "stem(%s) = %s, want %s", in, buf, want);
}

static void
test_porter(void)
{
	/* the paper's and the task's examples (whole algorithm) */
	static const char *const pairs[][2] = {
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"},
		{"cats", "cat"}, {"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"},
		{"bled", "bled"}, {"motoring", "motor"}, {"sing", "sing"}, {"conflated", "conflat"},
		{"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"}, {"tanned", "tan"},
		{"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"},
		{"filing", "file"}, {"happy", "happi"}, {"sky", "sky"}, {"relational", "relat"},
		{"conditional", "condit"}, {"rational", "ration"}, {"valenci", "valenc"},
		{"hesitanci", "hesit"}, {"digitizer", "digit"}, {"conformabli", "conform"},
		{"radicalli", "radic"}, {"differentli", "differ"}, {"vileli", "vile"},
		{"analogousli", "analog"}, {"vietnamization", "vietnam"}, {"predication", "predic"},
		{"operator", "oper"}, {"feudalism", "feudal"}, {"decisiveness", "decis"},
		{"hopefulness", "hope"}, {"callousness", "callous"}, {"formaliti", "formal"},
		{"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"}, {"triplicate", "triplic"},
		{"formative", "form"}, {"formalize", "formal"}, {"electriciti", "electr"},
		{"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"},
		{"airliner", "airlin"}, {"gyroscopic", "gyroscop"}, {"adjustable", "adjust"},
		{"defensible", "defens"}, {"irritant", "irrit"}, {"replacement", "replac"},
		{"adjustment", "adjust"}, {"dependent", "depend"}, {"adoption", "adopt"},
		{"homologou", "homolog"}, {"communism", "commun"}, {"activate", "activ"},
		{"angulariti", "angular"}, {"homologous", "homolog"}, {"effective", "effect"},
		{"bowdlerize", "bowdler"}, {"probate", "probat"}, {"rate", "rate"},
		{"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		{"generalization", "gener"}, {"running", "run"}, {"libraries", "librari"},
		{"library", "librari"}, {"python", "python"}, {"servers", "server"},
		{"connection", "connect"}, {"connections", "connect"}, {"connected", "connect"},
		{"connecting", "connect"}, {"generalizations", "gener"}, {"oscillators", "oscil"},
		/* Porter's vocabulary / output sample */
		{"abandoned", "abandon"}, {"abase", "abas"}, {"abatements", "abat"},
		{"abbey", "abbei"}, {"abbominable", "abbomin"}, {"abbreviated", "abbrevi"},
		{"abed", "ab"}, {"abergavenny", "abergavenni"}, {"abetting", "abet"},
		{"abhorred", "abhor"}, {"abide", "abid"}, {"abilities", "abil"},
		{"abjectly", "abjectli"}, {"able", "abl"}, {"abler", "abler"},
		{"abodements", "abod"}, {"abominably", "abomin"}, {"abortives", "abort"},
		{"abridgment", "abridg"}, {"abruption", "abrupt"}, {"absolutely", "absolut"},
		{"abstemious", "abstemi"}, {"abstinence", "abstin"}, {"absyrtus", "absyrtu"},
		{"abundance", "abund"}, {"abus", "abu"}, {"aby", "abi"}, {"achilles", "achil"},
		{"accessary", "accessari"}, {"accidentally", "accident"}, {"accompanying", "accompani"},
		{"accordingly", "accordingli"}, {"accursed", "accurs"}, {"accusativo", "accusativo"},
		{"impossibilities", "imposs"}, {"fortifications", "fortif"}, {"bashfulness", "bash"},
		{"communication", "commun"}, {"covetousness", "covet"}, {"deliciousness", "delici"},
		{"excellencies", "excel"}, {"fearfulness", "fear"}, {"principalities", "princip"},
		{"prognostication", "prognost"}, {"voluptuousness", "voluptu"}, {"wilfulness", "wil"},
		{"witnessing", "wit"}, {"businesses", "busi"}, {"considerings", "consid"},
		{"constellation", "constel"}, {"conversations", "convers"}, {"copulatives", "copul"},
		{"affirmatives", "affirm"}, {"atonements", "aton"}, {"considerations", "consider"},
		/* Lucene departures: -bli -> -ble, -logi -> -log */
		{"archaeology", "archaeolog"}, {"analogi", "analog"}, {"possibli", "possibl"},
		/* short words are left alone; y rules */
		{"as", "as"}, {"is", "is"}, {"a", "a"}, {"yes", "ye"}, {"syzygy", "syzygi"},
		{"yelling", "yell"}, {"toy", "toi"}, {"sses", "ss"}, {"ies", "i"}, {"ion", "ion"},
		{"eed", "eed"}, {"oed", "o"}, {"aed", "a"},
	};
	int			i;
	uint16		w[8];
	char		buf[64];
	int			len;

	for (i = 0; i < (int) lengthof(pairs); i++)
		check_stem(pairs[i][0], pairs[i][1]);

	/* UTF-16 semantics: a doubled non-ASCII consonant loses one character */
	strlcpy(buf, "a\xC3\xA9\xC3\xA9" "ed", sizeof(buf));
	len = se_porter_stem(buf, (int) strlen(buf));
	buf[len] = '\0';
	UT_CHECK(strcmp(buf, "a\xC3\xA9") == 0, "aééed -> %s", buf);
	/* supplementary characters are two units and never split */
	strlcpy(buf, "\xF0\x90\x90\xA8\xF0\x90\x90\xA8ing", sizeof(buf));
	len = se_porter_stem(buf, (int) strlen(buf));
	buf[len] = '\0';
	UT_CHECK(strcmp(buf, "\xF0\x90\x90\xA8\xF0\x90\x90\xA8ing") == 0, "supplementary: %s", buf);
	/* invalid UTF-8 is left alone */
	strlcpy(buf, "abc\xFF" "ing", sizeof(buf));
	len = se_porter_stem(buf, 7);
	UT_CHECK(len == 7, "invalid UTF-8 untouched");
	UT_CHECK(se_porter_stem(NULL, 0) == 0, "NULL");

	/* the UTF-16 entry point */
	w[0] = 'r';
	w[1] = 'u';
	w[2] = 'n';
	w[3] = 'n';
	w[4] = 'i';
	w[5] = 'n';
	w[6] = 'g';
	UT_CHECK(se_porter_stem_utf16(w, 7) == 3 && w[0] == 'r' && w[2] == 'n', "utf16 running");
}

/*
 * The stem cache answers exactly what the stemmer does: many more words
 * than slots (collisions and evictions), each stemmed several times in
 * varying order, lengths around the cached maximum, mixed with non-ASCII.
 */
static void
test_porter_cache(void)
{
	static const char *const suffixes[] = {
		"", "s", "ing", "ed", "ies", "ational", "ization", "fulness", "iveness",
		"ement", "ly", "ness", "able", "ibiliti", "e", "es", "ous", "ize"
	};
	static const char *const roots[] = {
		"caress", "poni", "hop", "relat", "conform", "electr", "sensit", "digit",
		"formal", "adjust", "y", "sky", "ab", "controll", "roll", "fizz",
		"internationalization", "\xC3\xA9t\xC3\xA9", "aaaaaaaaaaaaaaaaaa"
	};
	char		word[128];
	char		a[128];
	char		b[128];
	int			pass,
				r,
				k,
				n,
				mismatches = 0,
				checked = 0;

	for (pass = 0; pass < 3; pass++)
		for (n = 0; n < 3000; n++)
			for (r = 0; r < (int) lengthof(roots); r++)
			{
				int			la,
							lb,
							len;

				k = (n + pass * 7 + r) % (int) lengthof(suffixes);
				/* a numbered variant gives thousands of distinct words */
				snprintf(word, sizeof(word), "%s%c%c%s", roots[r],
						 'a' + n % 26, 'a' + (n / 26) % 26, suffixes[k]);
				len = (int) strlen(word);
				if (pass == 1)
					len = Min(len, 22 + n % 3);	/* around the cached maximum */
				memcpy(a, word, len);
				memcpy(b, word, len);
				la = se_porter_stem(a, len);
				lb = se_porter_stem_uncached(b, len);
				checked++;
				if (la != lb || memcmp(a, b, la) != 0)
					mismatches++;
			}
	UT_CHECK(mismatches == 0, "stem cache: %d of %d words differ from the stemmer", mismatches, checked);
}

static void
test_unicode_tables(void)
{
	StringInfoData out;

	UT_CHECK((se_unicode_props('a') & SE_WB_MASK) == SE_WB_ALETTER &&
			 (se_unicode_props('a') & SE_UP_LETTER), "a");
	UT_CHECK((se_unicode_props('7') & SE_WB_MASK) == SE_WB_NUMERIC &&
			 !(se_unicode_props('7') & SE_UP_LETTER), "7");
	UT_CHECK((se_unicode_props('\'') & SE_WB_MASK) == SE_WB_SQUOTE, "'");
	UT_CHECK((se_unicode_props('.') & SE_WB_MASK) == SE_WB_MIDNUMLET, ".");
	UT_CHECK((se_unicode_props(':') & SE_WB_MASK) == SE_WB_MIDLETTER, ":");
	UT_CHECK((se_unicode_props(',') & SE_WB_MASK) == SE_WB_MIDNUM, ",");
	UT_CHECK((se_unicode_props('_') & SE_WB_MASK) == SE_WB_EXTENDNUMLET, "_");
	UT_CHECK((se_unicode_props(0x05D0) & SE_WB_MASK) == SE_WB_HEBREW, "alef");
	UT_CHECK((se_unicode_props(0x30A2) & SE_WB_MASK) == SE_WB_KATAKANA, "katakana a");
	UT_CHECK((se_unicode_props(0x0661) & SE_WB_MASK) == SE_WB_NUMERIC, "arabic-indic 1");
	UT_CHECK((se_unicode_props(0xFF11) & SE_WB_MASK) == SE_WB_NUMERIC, "fullwidth 1");
	UT_CHECK((se_unicode_props(0x0301) & SE_WB_MASK) == SE_WB_EXTEND, "combining acute");
	UT_CHECK((se_unicode_props(0x00AD) & SE_WB_MASK) == SE_WB_EXTEND, "soft hyphen (Format)");
	UT_CHECK((se_unicode_props(0x200D) & SE_WB_MASK) == SE_WB_ZWJ, "ZWJ");
	UT_CHECK((se_unicode_props(0x1F1FA) & SE_WB_MASK) == SE_WB_RI, "RI");
	UT_CHECK(se_unicode_props(0x4E2D) & SE_UP_HAN, "han");
	UT_CHECK(se_unicode_props(0x29B05) & SE_UP_HAN, "han ext B");
	UT_CHECK(se_unicode_props(0x3042) & SE_UP_HIRAGANA, "hiragana");
	UT_CHECK(se_unicode_props(0x0E01) & SE_UP_SA, "thai");
	UT_CHECK(se_unicode_props(0x1F600) & SE_UP_EMOJI, "emoji");
	UT_CHECK(se_unicode_props(0x1FAE0) & SE_UP_EMOJI, "emoji 14.0 (Extended_Pictographic)");
	UT_CHECK(!(se_unicode_props('#') & SE_UP_EMOJI), "# is not EmojiChar");
	UT_CHECK(se_unicode_props(0x1F3FD) & SE_UP_EMOJI_MOD, "modifier");
	UT_CHECK((se_unicode_props(0xAC00) & SE_WB_MASK) == SE_WB_ALETTER, "hangul");
	/* CJK Ext G (Unicode 13): unknown to Lucene 9's tokenizer, a letter to Java */
	UT_CHECK(!(se_unicode_props(0x30000) & SE_UP_HAN) &&
			 (se_unicode_props(0x30000) & SE_UP_LETTER), "ext G");
	UT_CHECK(se_unicode_props(' ') & SE_UP_SPACE, "space");
	UT_CHECK(se_unicode_props(0x3000) & SE_UP_SPACE, "ideographic space");
	UT_CHECK(se_unicode_props(0x2028) & SE_UP_SPACE, "line separator");
	UT_CHECK(!(se_unicode_props(0x00A0) & SE_UP_SPACE), "nbsp");
	UT_CHECK(!(se_unicode_props(0x0085) & SE_UP_SPACE), "NEL");
	UT_CHECK(se_unicode_props(0x110000) == 0 && se_unicode_props(0xFFFFFFFF) == 0, "out of range");
	UT_CHECK(se_unicode_props(0x10FFFF) == 0, "last code point");

	UT_CHECK(se_unicode_lower('A') == 'a' && se_unicode_lower('a') == 'a', "A");
	UT_CHECK(se_unicode_lower(0x00C0) == 0x00E0, "À");
	UT_CHECK(se_unicode_lower(0x0130) == 0x0069, "İ simple mapping");
	UT_CHECK(se_unicode_lower(0x03A3) == 0x03C3, "Σ");
	UT_CHECK(se_unicode_lower(0x1E9E) == 0x00DF, "ẞ");
	UT_CHECK(se_unicode_lower(0x212A) == 'k', "Kelvin");
	UT_CHECK(se_unicode_lower(0x2126) == 0x03C9, "Ohm");
	UT_CHECK(se_unicode_lower(0x1E00) == 0x1E01 && se_unicode_lower(0x1E01) == 0x1E01, "stride 2");
	UT_CHECK(se_unicode_lower(0x023A) == 0x2C65, "Ⱥ");
	UT_CHECK(se_unicode_lower(0x13A0) == 0xAB70, "Cherokee");
	UT_CHECK(se_unicode_lower(0x10400) == 0x10428, "Deseret");
	UT_CHECK(se_unicode_lower(0xFF21) == 0xFF41, "fullwidth A");
	UT_CHECK(se_unicode_lower(0x4E2D) == 0x4E2D, "han unchanged");

	initStringInfo(&out);
	se_utf8_lower("Hello ÀÉÎ İ ΣΑΣ Ⱥ K \xF0\x90\x90\x80", -1 + (int) sizeof("Hello ÀÉÎ İ ΣΑΣ Ⱥ K \xF0\x90\x90\x80"), &out);
	UT_CHECK(strcmp(out.data, "hello àéî i σασ ⱥ k \xF0\x90\x90\xA8") == 0, "se_utf8_lower: %s", out.data);
	resetStringInfo(&out);
	se_utf8_lower("A\xFF" "B\xC3", 4, &out);
	UT_CHECK(strcmp(out.data, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD") == 0, "invalid bytes -> U+FFFD");
	resetStringInfo(&out);
	appendStringInfoString(&out, "x");
	se_utf8_lower(NULL, 3, &out);
	se_utf8_lower("", 0, &out);
	UT_CHECK(strcmp(out.data, "x") == 0, "append, empty");
	pfree(out.data);
}

/* Is s[0..len) valid UTF-8? */
static bool
valid_utf8(const char *s, int len)
{
	int			i = 0;

	while (i < len)
	{
		uint32		cp;
		int			n = se_utf8_decode((const unsigned char *) s + i, len - i, &cp);

		if (cp == 0xFFFD && n == 1)
			return false;
		i += n;
	}
	return true;
}

/* Hostile input: malformed UTF-8 and random bytes through every analyzer. */
static void
test_hostile(void)
{
	const char *names[] = {"standard", "simple", "whitespace", "keyword", "stop", "english"};
	int			a;
	int			iter;
	int			problems = 0;
	unsigned int seed = 12345;
	char		buf[512];

	CHECK_TERMS("standard", "\xFF\xFE abc \xC3", "abc");
	CHECK_TERMS("standard", "ab\xC3" "cd", "ab|cd");
	CHECK_TERMS("standard", "\xED\xA0\x80x", "x");	/* encoded surrogate */
	CHECK_TERMS("standard", "\xC0\xAFx", "x");	/* overlong */
	CHECK_TERMS("whitespace", "\xFF\xFE z", "\xEF\xBF\xBD\xEF\xBF\xBD|z");
	CHECK_TERMS("keyword", "a\xF4\x90\x80\x80", "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
	CHECK_TERMS("english", "\xE2\x80", "");
	CHECK_TERMS("english", "x\xE2\x80", "x");

	for (iter = 0; iter < 3000; iter++)
	{
		int			len = (int) (seed % sizeof(buf));
		int			i;

		for (i = 0; i < len; i++)
		{
			seed = seed * 1103515245 + 12345;
			/* bias towards interesting bytes */
			switch ((seed >> 16) % 8)
			{
				case 0:
					buf[i] = (char) ((seed >> 8) & 0xFF);
					break;
				case 1:
					buf[i] = " .'_:,\"#*"[(seed >> 8) % 9];
					break;
				case 2:
					buf[i] = (char) (0x80 | ((seed >> 8) & 0x3F));
					break;
				case 3:
					buf[i] = (char) (0xC0 | ((seed >> 8) & 0x3F));
					break;
				default:
					buf[i] = (char) ('a' + (seed >> 8) % 26);
					break;
			}
		}
		seed = seed * 1103515245 + 12345;
		for (a = 0; a < (int) lengthof(names); a++)
		{
			SeTokenList list;
			int			t;

			se_token_list_init(&list);
			se_analyze(se_analyzer_lookup(names[a]), buf, len, &list);
			for (t = 0; t < list.ntokens; t++)
			{
				SeToken    *tok = &list.tokens[t];

				if (tok->start_offset < 0 || tok->end_offset > len ||
					tok->start_offset > tok->end_offset ||
					(tok->len == 0 && a != 3) ||
					tok->term[tok->len] != '\0' ||
					!valid_utf8(tok->term, tok->len) ||
					(t > 0 && tok->position <= list.tokens[t - 1].position) ||
					(t > 0 && tok->start_offset < list.tokens[t - 1].end_offset))
					problems++;
			}
			se_token_list_free(&list);
		}
	}
	UT_CHECK(problems == 0, "%d bad tokens on random input", problems);
}

/* Rough throughput figure for ASCII prose (not an assertion). */
static void
bench(void)
{
	StringInfoData in;
	SeTokenList list;
	const char *para = "The quick brown fox jumps over the lazy dog. Elasticsearch-class "
		"search engines index documents; they're tokenized, lower-cased and stemmed (3.14, "
		"U.S.A., example.com, foo_bar). ";
	clock_t		t0;
	double		secs;
	int			round;

	if (getenv("SE_BENCH") == NULL)
		return;
	initStringInfo(&in);
	while (in.len < 16 * 1024 * 1024)
		appendStringInfoString(&in, para);
	se_token_list_init(&list);
	for (round = 0; round < 2; round++)
	{
		const char *an = round == 0 ? "standard" : "english";

		t0 = clock();
		se_token_list_reset(&list);
		se_analyze(se_analyzer_lookup(an), in.data, in.len, &list);
		secs = (double) (clock() - t0) / CLOCKS_PER_SEC;
		printf("bench %s: %d tokens, %.1f MB/s\n", an, list.ntokens, in.len / 1048576.0 / secs);
	}
	se_token_list_free(&list);
}

/*
 * The scanner's ASCII fast path against the full rules: random text from
 * pieces that sit on its edges (ASCII words and digits, mid characters,
 * '_', quotes, spaces, '#', '*', Extend and ZWJ marks, Hebrew, katakana,
 * emoji, keycaps, accented letters, runs near the 255-unit budget) must
 * give the same tokens, with and without it.
 */
static void
test_scanner_fast_path(void)
{
	static const char *const pieces[] = {
		"abc", "Z", "x9", "2024", "0", "hello", "a", " ", "  ", "\n", "\t",
		".", ":", "'", ",", ";", "\"", "_", "-", "/", "#", "*", "(", ")",
		"\xcc\x81",			/* U+0301 combining acute: Extend */
		"\xe2\x80\x8d",		/* ZWJ */
		"\xef\xb8\x8f",		/* FE0F */
		"\xe2\x83\xa3",		/* 20E3 keycap */
		"\xd7\x90",			/* Hebrew alef */
		"\xe3\x82\xa2",		/* katakana A */
		"\xf0\x9f\x98\x80",	/* emoji */
		"\xc3\xa9",			/* e acute */
		"\xe4\xb8\xad",		/* ideograph */
		"\xc2\xa0",			/* no-break space */
		"\xe0\xb8\x81",		/* Thai */
		"\xff",				/* invalid byte */
	};
	uint64		seed = 0x9E3779B97F4A7C15ULL;
	StringInfoData in;
	int			iter;
	int			mismatches = 0;

	initStringInfo(&in);
	for (iter = 0; iter < 20000; iter++)
	{
		SeStdScanner fast,
					slow;
		int			n,
					k;

		resetStringInfo(&in);
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (int) ((seed >> 33) % 12);
		for (k = 0; k < n; k++)
		{
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			if ((seed >> 60) == 0)
			{
				/* a letter run near the unit budget */
				int			len = 250 + (int) ((seed >> 40) % 10);
				int			j;

				for (j = 0; j < len; j++)
					appendStringInfoChar(&in, 'a' + j % 26);
			}
			else
				appendStringInfoString(&in, pieces[(seed >> 33) % lengthof(pieces)]);
		}
		se_std_scanner_init(&fast, in.data, in.len);
		se_std_scanner_init(&slow, in.data, in.len);
		slow.ascii_fast = false;
		for (;;)
		{
			int			fs = -1,
						fe = -1,
						ss = -1,
						se = -1;
			bool		fok = se_std_scanner_next(&fast, &fs, &fe);
			bool		sok = se_std_scanner_next(&slow, &ss, &se);

			if (fok != sok || fs != ss || fe != se)
			{
				if (mismatches++ < 5)
					UT_CHECK(false, "fast path: \"%s\": token [%d,%d) vs [%d,%d)",
							 in.data, fs, fe, ss, se);
				break;
			}
			if (!fok)
				break;
		}
	}
	UT_CHECK(mismatches == 0, "fast path: %d texts tokenized differently", mismatches);
	pfree(in.data);
}

/*
 * Tokens of ASCII letters and digits take emit_ascii_alnum: for text of
 * such words between spaces and commas, the standard analyzer must give
 * each word lower-cased, and the english one each word lower-cased, stop
 * words dropped (the stop analyzer's list), stemmed by the uncached
 * stemmer, with a position per word.
 */
static void
test_ascii_alnum_tokens(void)
{
	static const char *const words[] = {
		"The", "AND", "running", "Packages", "x86", "64BIT", "libfoo2", "ARE",
		"relational", "Hopping", "a", "I", "9", "abcdefghijklmnopqrstuvwxyz", "Such",
		"generalizations", "UTF8", "caresses", "ponies", "it", "Into", "sky"
	};
	uint64		seed = 0x243F6A8885A308D3ULL;
	int			iter;

	for (iter = 0; iter < 300; iter++)
	{
		StringInfoData in,
					want_std,
					want_en;
		int			n = 1 + iter % 9;
		int			k;
		int			nstd = 0,
					nen = 0;
		char	   *got;
		SeTokenList list;

		initStringInfo(&in);
		initStringInfo(&want_std);
		initStringInfo(&want_en);
		for (k = 0; k < n; k++)
		{
			const char *w;
			char		low[64];
			char	   *stop;
			int			len,
						j;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			w = words[(seed >> 33) % lengthof(words)];
			len = (int) strlen(w);
			appendStringInfoString(&in, k == 0 ? "" : (k % 3 == 0 ? ", " : " "));
			appendStringInfoString(&in, w);
			for (j = 0; j < len; j++)
				low[j] = (w[j] >= 'A' && w[j] <= 'Z') ? w[j] + ('a' - 'A') : w[j];
			low[len] = '\0';
			appendStringInfo(&want_std, "%s%s", nstd++ ? "|" : "", low);
			stop = terms_of("stop", low, len);
			if (strspn(low, "abcdefghijklmnopqrstuvwxyz") == (size_t) len && stop[0] == '\0')
			{
				pfree(stop);
				continue;		/* a stop word */
			}
			pfree(stop);
			len = se_porter_stem_uncached(low, len);
			low[len] = '\0';
			appendStringInfo(&want_en, "%s%s", nen++ ? "|" : "", low);
		}
		got = terms_of("standard", in.data, in.len);
		UT_CHECK(strcmp(got, want_std.data) == 0, "ascii tokens: standard(\"%s\"): got [%s] want [%s]",
				 in.data, got, want_std.data);
		pfree(got);
		got = terms_of("english", in.data, in.len);
		UT_CHECK(strcmp(got, want_en.data) == 0, "ascii tokens: english(\"%s\"): got [%s] want [%s]",
				 in.data, got, want_en.data);
		pfree(got);
		list = analyze("english", in.data);
		UT_CHECK(list.next_position == n, "ascii tokens: %d positions for %d words",
				 list.next_position, n);
		se_token_list_free(&list);
		pfree(in.data);
		pfree(want_std.data);
		pfree(want_en.data);
	}
}

int
main(void)
{
	test_lookup();
	test_standard_basic();
	test_standard_mid();
	test_standard_empty();
	test_standard_offsets();
	test_standard_languages();
	test_standard_emoji();
	test_standard_long_tokens();
	test_scanner_fast_path();
	test_ascii_alnum_tokens();
	test_other_analyzers();
	test_english();
	test_positions_multi_value();
	test_large_document();
	test_porter();
	test_porter_cache();
	test_unicode_tables();
	test_hostile();
	bench();
	return ut_finish("test_analysis");
}
