/*-------------------------------------------------------------------------
 *
 * porter.c
 *	  The Porter stemmer (M.F. Porter, "An algorithm for suffix stripping",
 *	  Program 14(3), 1980), as Lucene's PorterStemFilter applies it.
 *
 * Lucene's PorterStemmer follows Porter's own reference implementation,
 * which departs from the paper in a few places; so do we:
 *   - words of fewer than three characters are left alone;
 *   - step 2 maps -bli to -ble (the paper: -abli to -able) and adds
 *     -logi -> -log;
 *   - in steps 2 to 4 the suffix that ends the word decides: if its stem
 *     fails the measure condition, no shorter suffix is tried.
 * As in the paper, 'y' is a consonant at the start of a word or after a
 * vowel.  The word is a sequence of UTF-16 code units like Java's char[]:
 * anything but a, e, i, o, u and a vowel 'y' counts as a consonant.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "analysis/analysis_int.h"

/*
 * The word being stemmed: b[0..k] is the current word; j marks the end of
 * the stem before the suffix last matched by ends().
 */
typedef struct Stemmer
{
	uint16	   *b;
	int			k;
	int			j;
} Stemmer;

typedef struct SuffixRule
{
	const char *suffix;
	int			len;
	const char *replacement;
	int			rlen;
} SuffixRule;

/* string literal and its length */
#define LIT(s) (s), (int) sizeof(s) - 1
#define RULE(s, r) {LIT(s), LIT(r)}

/* Is b[i] a consonant? */
static bool
is_consonant(const Stemmer *z, int i)
{
	bool		flip = false;

	/* a 'y' is the opposite of what precedes it; at the start a consonant */
	for (;;)
	{
		switch (z->b[i])
		{
			case 'a':
			case 'e':
			case 'i':
			case 'o':
			case 'u':
				return flip;
			case 'y':
				if (i == 0)
					return !flip;
				flip = !flip;
				i--;
				break;
			default:
				return !flip;
		}
	}
}

/*
 * The measure m of b[0..j]: the number of vowel-consonant sequences in
 * [C](VC)^m[V].
 */
static int
measure(const Stemmer *z)
{
	int			m = 0;
	int			i = 0;

	/* skip the leading consonants */
	while (i <= z->j && is_consonant(z, i))
		i++;
	for (;;)
	{
		/* a vowel run ... */
		while (i <= z->j && !is_consonant(z, i))
			i++;
		if (i > z->j)
			return m;
		/* ... closed by a consonant run */
		while (i <= z->j && is_consonant(z, i))
			i++;
		m++;
		if (i > z->j)
			return m;
	}
}

/* Does b[0..j] contain a vowel? */
static bool
vowel_in_stem(const Stemmer *z)
{
	int			i;

	for (i = 0; i <= z->j; i++)
		if (!is_consonant(z, i))
			return true;
	return false;
}

/* Do b[i-1] and b[i] form a double consonant? */
static bool
double_consonant(const Stemmer *z, int i)
{
	if (i < 1 || z->b[i] != z->b[i - 1])
		return false;
	return is_consonant(z, i);
}

/*
 * Is b[i-2..i] consonant-vowel-consonant, the last not w, x or y?  (Used to
 * restore an e: hop(e), but not snow, box, tray.)
 */
static bool
cvc(const Stemmer *z, int i)
{
	uint16		c;

	if (i < 2 || !is_consonant(z, i) || is_consonant(z, i - 1) ||
		!is_consonant(z, i - 2))
		return false;
	c = z->b[i];
	return c != 'w' && c != 'x' && c != 'y';
}

/* Does b[0..k] end with s?  If so, j is set to the end of the stem. */
static inline bool
ends(Stemmer *z, const char *s, int len)
{
	int			o = z->k - len + 1;
	int			i;

	if (o < 0)
		return false;
	/* from the end: most candidates differ in their last letter */
	for (i = len - 1; i >= 0; i--)
		if (z->b[o + i] != (unsigned char) s[i])
			return false;
	z->j = z->k - len;
	return true;
}

/* Replace b[j+1..k] with s. */
static void
set_to(Stemmer *z, const char *s, int len)
{
	int			i;

	for (i = 0; i < len; i++)
		z->b[z->j + 1 + i] = (unsigned char) s[i];
	z->k = z->j + len;
}

/*
 * Find the rule whose suffix ends the word (first in table order) and apply
 * it if the stem's measure is positive.  Returns whether a suffix matched.
 */
static bool
apply_rules(Stemmer *z, const SuffixRule *rules, int nrules)
{
	uint16		last = z->b[z->k];
	int			r;

	for (r = 0; r < nrules; r++)
	{
		const SuffixRule *rule = &rules[r];

		if ((unsigned char) rule->suffix[rule->len - 1] == last &&
			ends(z, rule->suffix, rule->len))
		{
			if (measure(z) > 0)
				set_to(z, rule->replacement, rule->rlen);
			return true;
		}
	}
	return false;
}

/* Step 1a/1b: plurals, -eed, -ed, -ing. */
static void
step1ab(Stemmer *z)
{
	if (z->b[z->k] == 's')
	{
		if (ends(z, LIT("sses")))
			z->k -= 2;
		else if (ends(z, LIT("ies")))
			set_to(z, LIT("i"));
		else if (z->b[z->k - 1] != 's')
			z->k--;
	}
	if (ends(z, LIT("eed")))
	{
		if (measure(z) > 0)
			z->k--;
	}
	else if ((ends(z, LIT("ed")) || ends(z, LIT("ing"))) && vowel_in_stem(z))
	{
		z->k = z->j;
		if (ends(z, LIT("at")))
			set_to(z, LIT("ate"));
		else if (ends(z, LIT("bl")))
			set_to(z, LIT("ble"));
		else if (ends(z, LIT("iz")))
			set_to(z, LIT("ize"));
		else if (double_consonant(z, z->k))
		{
			uint16		c = z->b[z->k];

			if (c != 'l' && c != 's' && c != 'z')
				z->k--;
		}
		else if (measure(z) == 1 && cvc(z, z->k))
		{
			/* j == k here: append the e */
			set_to(z, LIT("e"));
		}
	}
}

/* Step 1c: y -> i when the stem has a vowel. */
static void
step1c(Stemmer *z)
{
	if (ends(z, LIT("y")) && vowel_in_stem(z))
		z->b[z->k] = 'i';
}

/* Step 2: double suffixes to single ones (-ization -> -ize, ...). */
static const SuffixRule step2_rules[] = {
	RULE("ational", "ate"), RULE("tional", "tion"),
	RULE("enci", "ence"), RULE("anci", "ance"),
	RULE("izer", "ize"),
	RULE("bli", "ble"), RULE("alli", "al"), RULE("entli", "ent"), RULE("eli", "e"), RULE("ousli", "ous"),
	RULE("ization", "ize"), RULE("ation", "ate"), RULE("ator", "ate"),
	RULE("alism", "al"), RULE("iveness", "ive"), RULE("fulness", "ful"), RULE("ousness", "ous"),
	RULE("aliti", "al"), RULE("iviti", "ive"), RULE("biliti", "ble"),
	RULE("logi", "log"),
};

/* Step 3: -ic-, -full, -ness etc. */
static const SuffixRule step3_rules[] = {
	RULE("icate", "ic"), RULE("ative", ""), RULE("alize", "al"),
	RULE("iciti", "ic"),
	RULE("ical", "ic"), RULE("ful", ""),
	RULE("ness", ""),
};

/* Step 4: remove -ant, -ence etc. when the stem has m > 1. */
static const SuffixRule step4_suffixes[] = {
	RULE("al", ""), RULE("ance", ""), RULE("ence", ""), RULE("er", ""),
	RULE("ic", ""), RULE("able", ""), RULE("ible", ""), RULE("ant", ""),
	RULE("ement", ""), RULE("ment", ""), RULE("ent", ""), RULE("ion", ""),
	RULE("ou", ""), RULE("ism", ""), RULE("ate", ""), RULE("iti", ""),
	RULE("ous", ""), RULE("ive", ""), RULE("ize", ""),
};

static void
step4(Stemmer *z)
{
	uint16		last = z->b[z->k];
	int			r;

	for (r = 0; r < (int) lengthof(step4_suffixes); r++)
	{
		const SuffixRule *rule = &step4_suffixes[r];

		if ((unsigned char) rule->suffix[rule->len - 1] == last &&
			ends(z, rule->suffix, rule->len))
		{
			/* -ion only after s or t */
			if (strcmp(rule->suffix, "ion") == 0 &&
				(z->j < 0 || (z->b[z->j] != 's' && z->b[z->j] != 't')))
				return;
			if (measure(z) > 1)
				z->k = z->j;
			return;
		}
	}
}

/* Step 5: remove a final -e, and -ll -> -l, when m > 1. */
static void
step5(Stemmer *z)
{
	z->j = z->k;
	if (z->b[z->k] == 'e')
	{
		int			m = measure(z);

		if (m > 1 || (m == 1 && !cvc(z, z->k - 1)))
			z->k--;
	}
	if (z->b[z->k] == 'l' && double_consonant(z, z->k) && measure(z) > 1)
		z->k--;
}

/*
 * Stem word[0..len) (UTF-16 code units, lower case) in place; returns the
 * new length, never more than len.
 */
int
se_porter_stem_utf16(uint16 *word, int len)
{
	Stemmer		z;

	if (word == NULL || len < 3)
		return Max(len, 0);
	z.b = word;
	z.k = len - 1;
	z.j = 0;
	step1ab(&z);
	step1c(&z);
	apply_rules(&z, step2_rules, lengthof(step2_rules));
	apply_rules(&z, step3_rules, lengthof(step3_rules));
	step4(&z);
	step5(&z);
	return z.k + 1;
}

/*
 * Stem a UTF-8 word in place; returns its new byte length.  The stemmer
 * runs on UTF-16 code units as Lucene's does, which matters only for the
 * non-ASCII letters it treats as consonants.
 */
static int
stem_utf8(char *word, int len)
{
	uint16		local[SE_MAX_TOKEN_UNITS + 1];
	uint16	   *units = local;
	const unsigned char *s = (const unsigned char *) word;
	int			nunits = 0;
	int			i;
	int			o;
	int			n;
	bool		ascii = true;

	if (len > (int) lengthof(local))
		units = palloc(sizeof(uint16) * len);	/* never more units than bytes */

	for (i = 0; i < len;)
	{
		uint32		cp;

		if (s[i] < 0x80)
		{
			units[nunits++] = s[i++];
			continue;
		}
		ascii = false;
		n = se_utf8_decode(s + i, len - i, &cp);
		if (n == 1)
		{
			/* not UTF-8: leave it alone rather than grow it with U+FFFD */
			if (units != local)
				pfree(units);
			return len;
		}
		i += n;
		if (cp >= 0x10000)
		{
			units[nunits++] = (uint16) (0xD800 + ((cp - 0x10000) >> 10));
			units[nunits++] = (uint16) (0xDC00 + ((cp - 0x10000) & 0x3FF));
		}
		else
			units[nunits++] = (uint16) cp;
	}

	nunits = se_porter_stem_utf16(units, nunits);

	/* back to UTF-8; the result is a prefix plus ASCII, so never longer */
	o = 0;
	for (i = 0; i < nunits; i++)
	{
		uint32		u = units[i];

		if (ascii || u < 0x80)
		{
			word[o++] = (char) u;
			continue;
		}
		if (u >= 0xD800 && u <= 0xDBFF && i + 1 < nunits &&
			units[i + 1] >= 0xDC00 && units[i + 1] <= 0xDFFF)
		{
			u = 0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00);
			i++;
		}
		else if (u >= 0xD800 && u <= 0xDFFF)
			u = 0xFFFD;
		o += se_utf8_encode(u, word + o);
	}
	if (units != local)
		pfree(units);
	return o;
}

/*
 * Stems of recently seen words.  Text repeats a small vocabulary and a
 * word's stem never changes, so ASCII words of up to STEM_CACHE_WORD bytes
 * are looked up in a direct-mapped table (per process, a fixed 2.9 MB, of
 * which only the slots used become resident) before the stemmer runs: a
 * hit costs a hash and one compare instead of the UTF-16 round trip and
 * the five steps.  (16384 slots ran the stemmer half as often as 4096 did
 * on the Debian package descriptions; 65536, whose slots are prefetched
 * (se_porter_stem_tokens), cost 2% less analysis time again.)  A slot
 * holds the whole word, so a colliding word only evicts, never matches.
 */
#define STEM_CACHE_SLOTS	65536	/* a power of two */
#define STEM_CACHE_WORD		22

typedef struct StemCacheEntry
{
	uint8		len;			/* 0 = empty */
	uint8		stem_len;
	char		word[STEM_CACHE_WORD];
	char		stem[STEM_CACHE_WORD];
} StemCacheEntry;

static StemCacheEntry stem_cache[STEM_CACHE_SLOTS];

/*
 * The cache slot of a word, or NULL when the word is not cached (shorter
 * than 3 bytes: never stemmed; longer than STEM_CACHE_WORD or not ASCII).
 */
static inline StemCacheEntry *
stem_slot(const char *word, int len)
{
	const unsigned char *s = (const unsigned char *) word;
	uint32		h = 2166136261u;
	uint8		high = 0;
	int			i;

	if (len < 3 || len > STEM_CACHE_WORD)
		return NULL;
	for (i = 0; i < len; i++)
	{
		high |= s[i];
		h = (h ^ s[i]) * 16777619u;
	}
	if (high & 0x80)
		return NULL;
	return &stem_cache[(h ^ (h >> 15)) & (STEM_CACHE_SLOTS - 1)];
}

/* se_porter_stem once the word's slot is known (e NULL: not cached). */
static inline int
stem_in_slot(char *word, int len, StemCacheEntry *e)
{
	int			n;

	if (word == NULL || len < 3)
		return Max(len, 0);
	if (e == NULL)
		return stem_utf8(word, len);
	if (e->len == len && memcmp(e->word, word, len) == 0)
	{
		memcpy(word, e->stem, e->stem_len);
		return e->stem_len;
	}
	e->len = 0;
	memcpy(e->word, word, len);
	n = stem_utf8(word, len);
	memcpy(e->stem, word, n);
	e->stem_len = (uint8) n;
	e->len = (uint8) len;
	return n;
}

/* Stem a (lower-case) UTF-8 word in place; returns its new byte length. */
int
se_porter_stem(char *word, int len)
{
	return stem_in_slot(word, len, word ? stem_slot(word, len) : NULL);
}

/*
 * se_porter_stem for each of n tokens, in place (term and len).  The cache
 * is far larger than the CPU's nearest caches and a lookup used to stall
 * on its slot: here a group's slots are found and prefetched first, so
 * that their misses overlap.
 */
#define STEM_GROUP 16

void
se_porter_stem_tokens(SeToken *toks, int n)
{
	StemCacheEntry *slot[STEM_GROUP];
	int			g,
				i,
				m;

	for (g = 0; g < n; g += STEM_GROUP)
	{
		m = Min(STEM_GROUP, n - g);
		for (i = 0; i < m; i++)
		{
			slot[i] = stem_slot(toks[g + i].term, toks[g + i].len);
			if (slot[i] != NULL)
			{
				/* an entry may straddle two cache lines */
				__builtin_prefetch(slot[i]);
				__builtin_prefetch((const char *) slot[i] + sizeof(StemCacheEntry) - 1);
			}
		}
		for (i = 0; i < m; i++)
		{
			SeToken    *t = &toks[g + i];
			char	   *w = (char *) t->term;	/* the list's own, writable */

			t->len = stem_in_slot(w, t->len, slot[i]);
			w[t->len] = '\0';
		}
	}
}

/* The stemmer without the cache (tests compare the two). */
int
se_porter_stem_uncached(char *word, int len)
{
	if (word == NULL || len < 3)
		return Max(len, 0);
	return stem_utf8(word, len);
}
