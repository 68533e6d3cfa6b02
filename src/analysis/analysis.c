/*-------------------------------------------------------------------------
 *
 * analysis.c
 *	  The built-in analyzers, their token filters and token lists.
 *
 * Each analyzer is a tokenizer plus a fixed filter chain, as Lucene builds
 * Elasticsearch's built-ins:
 *   standard    StandardTokenizer, LowerCaseFilter
 *   simple      LetterTokenizer, LowerCaseFilter
 *   whitespace  WhitespaceTokenizer
 *   keyword     KeywordTokenizer
 *   stop        LetterTokenizer, LowerCaseFilter, StopFilter(_english_)
 *   english     StandardTokenizer, EnglishPossessiveFilter, LowerCaseFilter,
 *               StopFilter(_english_), PorterStemFilter
 * The filters run fused, once per token, writing the final term straight
 * into the token list's arena: this runs for every indexed document, so a
 * token costs no allocation of its own.
 *
 * Every token the tokenizer produces takes a position, removed stop words
 * included (Lucene's position increments).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <limits.h>

#include "analysis/analysis_int.h"

typedef enum SeAnalyzerKind
{
	SE_ANALYZER_STANDARD,
	SE_ANALYZER_SIMPLE,
	SE_ANALYZER_WHITESPACE,
	SE_ANALYZER_KEYWORD,
	SE_ANALYZER_STOP,
	SE_ANALYZER_ENGLISH
} SeAnalyzerKind;

struct SeAnalyzer
{
	const char *name;
	SeAnalyzerKind kind;
};

static const SeAnalyzer builtin_analyzers[] = {
	{"standard", SE_ANALYZER_STANDARD},
	{"simple", SE_ANALYZER_SIMPLE},
	{"whitespace", SE_ANALYZER_WHITESPACE},
	{"keyword", SE_ANALYZER_KEYWORD},
	{"stop", SE_ANALYZER_STOP},
	{"english", SE_ANALYZER_ENGLISH},
};

/* What happens to a token between the tokenizer and the list. */
#define F_LOWER			0x01	/* LowerCaseFilter */
#define F_STOP			0x02	/* StopFilter, English stop words */
#define F_POSSESSIVE	0x04	/* EnglishPossessiveFilter */
#define F_STEM			0x08	/* PorterStemFilter */

/*
 * The term arena: a chain of chunks, newest first.  Terms never move, so
 * token pointers stay valid while the list grows.
 */
typedef struct SeTermChunk
{
	struct SeTermChunk *older;
	Size		size;			/* bytes in data[] */
	Size		used;
	char		data[FLEXIBLE_ARRAY_MEMBER];
} SeTermChunk;

#define TERM_CHUNK_MIN	4096
#define TERM_CHUNK_MAX	(1024 * 1024)
#define TOKENS_MIN		64

const SeAnalyzer *
se_analyzer_lookup(const char *name)
{
	int			i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < (int) lengthof(builtin_analyzers); i++)
		if (strcmp(builtin_analyzers[i].name, name) == 0)
			return &builtin_analyzers[i];
	return NULL;
}

const char *
se_analyzer_name(const SeAnalyzer *a)
{
	return a ? a->name : NULL;
}

void
se_token_list_init(SeTokenList *list)
{
	list->tokens = NULL;
	list->ntokens = 0;
	list->capacity = 0;
	list->next_position = 0;
	list->term_chunks = NULL;
}

void
se_token_list_reset(SeTokenList *list)
{
	SeTermChunk *chunk = list->term_chunks;
	SeTermChunk *keep = NULL;

	list->ntokens = 0;
	list->next_position = 0;

	/*
	 * Keep the newest regular chunk (the largest, as sizes grow) for the
	 * next document; free the rest, including chunks made for one huge term.
	 */
	while (chunk != NULL)
	{
		SeTermChunk *older = chunk->older;

		if (keep == NULL && chunk->size <= TERM_CHUNK_MAX)
			keep = chunk;
		else
			pfree(chunk);
		chunk = older;
	}
	if (keep != NULL)
	{
		keep->older = NULL;
		keep->used = 0;
	}
	list->term_chunks = keep;
}

void
se_token_list_free(SeTokenList *list)
{
	SeTermChunk *chunk = list->term_chunks;

	while (chunk != NULL)
	{
		SeTermChunk *older = chunk->older;

		pfree(chunk);
		chunk = older;
	}
	if (list->tokens != NULL)
		pfree(list->tokens);
	se_token_list_init(list);
}

/* (re)palloc that may pass 1GB in the server: huge documents. */
static void *
alloc_big(void *old, Size size)
{
#ifdef SE_FRONTEND
	return old ? repalloc(old, size) : palloc(size);
#else
	return old ? repalloc_huge(old, size) : palloc_extended(size, MCXT_ALLOC_HUGE);
#endif
}

/* Room for need bytes of term text (committed by term_commit). */
static char *
term_reserve(SeTokenList *list, Size need)
{
	SeTermChunk *chunk = list->term_chunks;

	if (chunk == NULL || chunk->size - chunk->used < need)
	{
		Size		size = chunk ? Min(chunk->size * 2, TERM_CHUNK_MAX) : TERM_CHUNK_MIN;
		SeTermChunk *fresh;

		size = Max(size, need);
		fresh = alloc_big(NULL, offsetof(SeTermChunk, data) + size);
		fresh->older = chunk;
		fresh->size = size;
		fresh->used = 0;
		list->term_chunks = chunk = fresh;
	}
	return chunk->data + chunk->used;
}

static inline void
term_commit(SeTokenList *list, Size used)
{
	list->term_chunks->used += used;
}

/* Make room for one more token; false if the list cannot grow further. */
static bool
grow_tokens(SeTokenList *list)
{
	int			newcap;

	if (list->capacity >= INT_MAX / 2)
	{
		if (list->capacity == INT_MAX)
			return false;
		newcap = INT_MAX;
	}
	else
		newcap = Max(list->capacity * 2, TOKENS_MIN);
	list->tokens = alloc_big(list->tokens, (Size) newcap * sizeof(SeToken));
	list->capacity = newcap;
	return true;
}

/*
 * Copy src[0..n) to dst as valid UTF-8, lower-cased if asked; returns the
 * bytes written, at most 3n (a 2-byte letter may lower-case to 3 bytes, an
 * invalid byte becomes the 3-byte U+FFFD).
 */
static int
copy_term(char *dst, const unsigned char *src, int n, bool lower)
{
	int			i = 0;
	int			o;

	/* the ASCII head (most tokens are all of it), without branches */
	if (lower)
		for (; i < n && src[i] < 0x80; i++)
			dst[i] = (char) (src[i] + ((unsigned int) (src[i] - 'A') < 26 ? 'a' - 'A' : 0));
	else
		for (; i < n && src[i] < 0x80; i++)
			dst[i] = (char) src[i];
	o = i;
	while (i < n)
	{
		unsigned char c = src[i];
		uint32		cp;

		if (c < 0x80)
		{
			dst[o++] = (lower && c >= 'A' && c <= 'Z') ? (char) (c + ('a' - 'A')) : (char) c;
			i++;
			continue;
		}
		i += se_utf8_decode(src + i, n - i, &cp);
		if (lower)
			cp = se_unicode_lower(cp);
		o += se_utf8_encode(cp, dst + o);
	}
	return o;
}

/* Is term one of Lucene's English stop words (ENGLISH_STOP_WORDS_SET)? */
static bool
is_english_stop_word(const char *t, int len)
{
#define IS(w) (len == (int) sizeof(w) - 1 && memcmp(t, w, sizeof(w) - 1) == 0)
	if (len < 1 || len > 5)
		return false;
	switch (t[0])
	{
		case 'a':
			return IS("a") || IS("an") || IS("and") || IS("are") || IS("as") || IS("at");
		case 'b':
			return IS("be") || IS("but") || IS("by");
		case 'f':
			return IS("for");
		case 'i':
			return IS("if") || IS("in") || IS("into") || IS("is") || IS("it");
		case 'n':
			return IS("no") || IS("not");
		case 'o':
			return IS("of") || IS("on") || IS("or");
		case 's':
			return IS("such");
		case 't':
			return IS("that") || IS("the") || IS("their") || IS("then") ||
				IS("there") || IS("these") || IS("they") || IS("this") || IS("to");
		case 'w':
			return IS("was") || IS("will") || IS("with");
		default:
			return false;
	}
#undef IS
}

/*
 * Byte length of a trailing English possessive ('s, ’s or ＇s, s or S) of
 * s[0..n), or 0.
 */
static int
possessive_suffix(const unsigned char *s, int n)
{
	if (n < 2 || (s[n - 1] != 's' && s[n - 1] != 'S'))
		return 0;
	if (s[n - 2] == '\'')
		return 2;
	if (n >= 4 && s[n - 4] == 0xE2 && s[n - 3] == 0x80 && s[n - 2] == 0x99)
		return 4;				/* U+2019 */
	if (n >= 4 && s[n - 4] == 0xEF && s[n - 3] == 0xBC && s[n - 2] == 0x87)
		return 4;				/* U+FF07 */
	return 0;
}

/*
 * The rest of the chain for a term copied into the reserved space at term
 * (tlen bytes): stop words, stemming, then commit it and append the token.
 */
static inline void
finish_term(SeTokenList *list, char *term, int tlen, int position, int start,
			int end, int flags)
{
	SeToken    *tok;

	if ((flags & F_STOP) && is_english_stop_word(term, tlen))
		return;					/* nothing committed: the space is reused */
	/* F_STEM: se_analyze stems the field's tokens together, in place */
	term[tlen] = '\0';
	term_commit(list, (Size) tlen + 1);

	if (list->ntokens >= list->capacity && !grow_tokens(list))
		return;					/* 2^31 tokens: no more can be recorded */
	tok = &list->tokens[list->ntokens++];
	tok->term = term;
	tok->len = tlen;
	tok->position = position;
	tok->start_offset = start;
	tok->end_offset = end;
}

/*
 * Run the filter chain on text[start..end) and append the surviving token.
 * The token's position is consumed even when a filter drops it.
 */
static void
emit(SeTokenList *list, const char *text, int start, int end, int flags)
{
	const unsigned char *src = (const unsigned char *) text + start;
	int			n = end - start;
	int			position = list->next_position++;
	char	   *term;
	int			tlen;

	if (flags & F_POSSESSIVE)
		n -= possessive_suffix(src, n);

	term = term_reserve(list, (Size) n * 3 + 1);
	tlen = copy_term(term, src, n, (flags & F_LOWER) != 0);
	finish_term(list, term, tlen, position, start, end, flags);
}

/*
 * Lower-case an ASCII letters-and-digits token into dst: a digit already
 * has bit 0x20 set, so OR-ing it into every byte is exact (8 at a time).
 */
static inline void
lower_ascii_alnum(char *dst, const char *src, int n)
{
	int			i = 0;

	for (; i + 8 <= n; i += 8)
	{
		uint64		w;

		memcpy(&w, src + i, 8);
		w |= UINT64CONST(0x2020202020202020);
		memcpy(dst + i, &w, 8);
	}
	for (; i < n; i++)
		dst[i] = (char) (src[i] | 0x20);
}

/*
 * emit for a token of ASCII letters and digits, which the tokenizer's
 * fast path vouches for: no possessive (it needs an apostrophe), no
 * UTF-8 to decode or validate, lower-casing 8 bytes at a time.
 */
static void
emit_ascii_alnum(SeTokenList *list, const char *src, int start, int end, int flags)
{
	int			n = end - start;
	int			position = list->next_position++;
	char	   *term;

	Assert(flags & F_LOWER);
	term = term_reserve(list, (Size) n + 1);
	lower_ascii_alnum(term, src, n);
	finish_term(list, term, n, position, start, end, flags);
}

static void
run_standard(const char *text, int len, SeTokenList *list, int flags)
{
	SeStdScanner sc;
	int			start;
	int			end;

	se_std_scanner_init(&sc, text, len);
	while (se_std_scanner_next(&sc, &start, &end))
	{
		if (sc.ascii_alnum && (flags & F_LOWER))
			emit_ascii_alnum(list, text + start, start, end, flags);
		else
			emit(list, text, start, end, flags);
	}
}

/*
 * Lucene's CharTokenizer: maximal runs of token characters (letters, or
 * non-white-space), cut after SE_MAX_TOKEN_UNITS UTF-16 units (a token may
 * end one unit over when its last character is supplementary, as Lucene's).
 */
static void
run_char_tokenizer(const char *text, int len, SeTokenList *list,
				   uint32 token_flag, bool negate, int flags)
{
	const unsigned char *s = (const unsigned char *) text;
	int			p = 0;
	int			start = -1;
	int			units = 0;

	while (p < len)
	{
		uint32		cp;
		int			n;
		bool		is_token;

		if (s[p] < 0x80)
		{
			cp = s[p];
			n = 1;
			is_token = ((se_uni_direct[cp] & token_flag) != 0) != negate;
		}
		else
		{
			n = se_utf8_decode(s + p, len - p, &cp);
			is_token = ((se_unicode_props(cp) & token_flag) != 0) != negate;
		}

		if (is_token)
		{
			if (start < 0)
			{
				start = p;
				units = 0;
			}
			units += (cp >= 0x10000) ? 2 : 1;
			p += n;
			if (units >= SE_MAX_TOKEN_UNITS)
			{
				emit(list, text, start, p, flags);
				start = -1;
			}
		}
		else
		{
			if (start >= 0)
			{
				emit(list, text, start, p, flags);
				start = -1;
			}
			p += n;
		}
	}
	if (start >= 0)
		emit(list, text, start, p, flags);
}

void
se_analyze(const SeAnalyzer *a, const char *text, int len, SeTokenList *list)
{
	if (a == NULL || list == NULL)
		return;
	if (text == NULL || len < 0)
		len = 0;
	if (text == NULL)
		text = "";

	switch (a->kind)
	{
		case SE_ANALYZER_STANDARD:
			run_standard(text, len, list, F_LOWER);
			break;
		case SE_ANALYZER_ENGLISH:
			{
				int			first = list->ntokens;

				run_standard(text, len, list, F_POSSESSIVE | F_LOWER | F_STOP | F_STEM);
				if (list->ntokens > first)
					se_porter_stem_tokens(list->tokens + first, list->ntokens - first);
			}
			break;
		case SE_ANALYZER_SIMPLE:
			run_char_tokenizer(text, len, list, SE_UP_LETTER, false, F_LOWER);
			break;
		case SE_ANALYZER_STOP:
			run_char_tokenizer(text, len, list, SE_UP_LETTER, false, F_LOWER | F_STOP);
			break;
		case SE_ANALYZER_WHITESPACE:
			run_char_tokenizer(text, len, list, SE_UP_SPACE, true, 0);
			break;
		case SE_ANALYZER_KEYWORD:
			/* Lucene's KeywordTokenizer emits one token, even for "" */
			emit(list, text, 0, len, 0);
			break;
	}
}
