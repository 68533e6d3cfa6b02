/*-------------------------------------------------------------------------
 *
 * analysis_int.h
 *	  Internals shared by the analysis module's files: UTF-8 decoding,
 *	  Unicode property lookups, the standard tokenizer and the Porter
 *	  stemmer.  Not for use outside src/analysis/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_ANALYSIS_INT_H
#define SE_ANALYSIS_INT_H

#include "analysis/analysis.h"
#include "analysis/unicode_tables.h"

/* Lucene's default max_token_length, in UTF-16 code units. */
#define SE_MAX_TOKEN_UNITS 255

/*
 * Decode one code point from s[0..avail) (avail >= 1); returns its byte
 * length.  Malformed or truncated sequences, overlongs and surrogates
 * decode as U+FFFD consuming one byte, so hostile input never reads past
 * avail and always makes progress.
 */
static inline int
se_utf8_decode(const unsigned char *s, int avail, uint32 *cp)
{
	unsigned char c = s[0];
	uint32		v;

	if (c < 0x80)
	{
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
	{
		if (avail >= 2 && (s[1] & 0xC0) == 0x80)
		{
			*cp = ((uint32) (c & 0x1F) << 6) | (s[1] & 0x3F);
			return 2;
		}
	}
	else if (c >= 0xE0 && c <= 0xEF)
	{
		if (avail >= 3 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80)
		{
			v = ((uint32) (c & 0x0F) << 12) | ((uint32) (s[1] & 0x3F) << 6) |
				(s[2] & 0x3F);
			if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF))
			{
				*cp = v;
				return 3;
			}
		}
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		if (avail >= 4 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 &&
			(s[3] & 0xC0) == 0x80)
		{
			v = ((uint32) (c & 0x07) << 18) | ((uint32) (s[1] & 0x3F) << 12) |
				((uint32) (s[2] & 0x3F) << 6) | (s[3] & 0x3F);
			if (v >= 0x10000 && v <= 0x10FFFF)
			{
				*cp = v;
				return 4;
			}
		}
	}
	*cp = 0xFFFD;
	return 1;
}

/* Encode a code point (<= 0x10FFFF, not a surrogate) as UTF-8; returns length. */
static inline int
se_utf8_encode(uint32 cp, char *out)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/* in unicode.c */
extern uint32 se_unicode_props_search(uint32 cp);
extern uint32 se_unicode_lower_search(uint32 cp);

/* Property bits of a code point: SE_WB_* class | SE_UP_* flags. */
static inline uint32
se_unicode_props(uint32 cp)
{
	if (cp < SE_UNI_DIRECT_LIMIT)
		return se_uni_direct[cp];
	return se_unicode_props_search(cp);
}

/* Simple lower-case mapping (Java Character.toLowerCase(int)). */
static inline uint32
se_unicode_lower(uint32 cp)
{
	if (cp < SE_UNI_DIRECT_LIMIT)
		return (uint32) ((int32) cp + se_lower_direct[cp]);
	return se_unicode_lower_search(cp);
}

/* in standard_tokenizer.c */

/* Scanner state of Lucene's StandardTokenizer over a UTF-8 buffer. */
typedef struct SeStdScanner
{
	const unsigned char *text;
	int			len;
	int			pos;			/* where the next token search starts */
	int			max_units;		/* max token length in UTF-16 units */
	bool		ascii_fast;		/* take the ASCII word fast path (tests
								 * turn it off to compare) */
	bool		ascii_alnum;	/* the last token is ASCII letters and
								 * digits only */
} SeStdScanner;

extern void se_std_scanner_init(SeStdScanner *sc, const char *text, int len);
extern bool se_std_scanner_next(SeStdScanner *sc, int *start, int *end);

/* in porter.c */
extern int	se_porter_stem_utf16(uint16 *word, int len);
extern int	se_porter_stem(char *word, int len);
extern int	se_porter_stem_uncached(char *word, int len);
extern void se_porter_stem_tokens(SeToken *toks, int n);

#endif							/* SE_ANALYSIS_INT_H */
