/*-------------------------------------------------------------------------
 *
 * analysis.h
 *	  Analyzers: text -> tokens (pure; no catalog access).
 *
 * Built-in analyzers, named as in Elasticsearch:
 *   standard   - Unicode word segmentation (UAX#29 rules as Lucene's
 *                StandardTokenizer applies them), lower-casing, tokens longer
 *                than 255 chars split; no stop words.
 *   simple     - LetterTokenizer (maximal runs of Unicode letters) + lower case.
 *   whitespace - split on Unicode white space, no normalisation.
 *   keyword    - the whole input as one token.
 *   stop       - simple + the English stop words (ES "_english_").
 *   english    - standard tokenizer, English possessive filter ('s), lower
 *                case, English stop words, Porter stemmer (Lucene's
 *                PorterStemFilter, i.e. Martin Porter's original algorithm).
 *
 * Positions: the first token of a call gets position list->next_position;
 * each later token position+1, and a removed stop word still consumes a
 * position (as Lucene's StopFilter leaves a position increment).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_ANALYSIS_H
#define SE_ANALYSIS_H

#include "util/se_common.h"

typedef struct SeToken
{
	const char *term;			/* UTF-8 bytes, NUL-terminated, palloc'd in
								 * the list's term arena: valid until the
								 * list is reset or freed */
	int			len;
	int			position;
	int			start_offset;	/* byte offsets into the input */
	int			end_offset;
} SeToken;

typedef struct SeTokenList
{
	SeToken    *tokens;
	int			ntokens;
	int			capacity;
	int			next_position;	/* position the next token will get */
	struct SeTermChunk *term_chunks;	/* private: arena holding the terms */
} SeTokenList;

typedef struct SeAnalyzer SeAnalyzer;	/* opaque, statically allocated */

/* Look up a built-in analyzer by ES name; NULL if unknown. */
extern const SeAnalyzer *se_analyzer_lookup(const char *name);

/* The analyzer's ES name. */
extern const char *se_analyzer_name(const SeAnalyzer *a);

/*
 * init: empty list (allocates nothing).  reset: drop the tokens, position
 * back to 0, keep the memory for reuse (terms of earlier tokens become
 * invalid).  free: release everything; the list is then as after init.
 * Memory comes from CurrentMemoryContext at the time a call needs it.
 */
extern void se_token_list_init(SeTokenList *list);
extern void se_token_list_reset(SeTokenList *list);
extern void se_token_list_free(SeTokenList *list);

/*
 * Analyze text[0..len) (valid UTF-8) and append its tokens to list.
 * Callers indexing several values of one field add the ES
 * position_increment_gap (100) to list->next_position between values.
 */
extern void se_analyze(const SeAnalyzer *a, const char *text, int len,
					   SeTokenList *list);

/*
 * Unicode simple lower-casing of a UTF-8 string into out (appended), as
 * Lucene's LowerCaseFilter does; invalid UTF-8 bytes become U+FFFD.
 */
extern void se_utf8_lower(const char *s, int len, StringInfo out);

#endif							/* SE_ANALYSIS_H */
