/*-------------------------------------------------------------------------
 *
 * standard_tokenizer.c
 *	  Lucene's StandardTokenizer: UAX#29 word segmentation over UTF-8.
 *
 * Lucene generates its tokenizer with JFlex from a grammar of UAX#29 word
 * break rules; JFlex takes, at each position, the longest match of any rule
 * ("ignore one character" being the last-resort rule).  We do the same by
 * hand: at each position the candidate rules are run and the longest match
 * wins.  The rules, as Lucene writes them:
 *
 *   word   leading/trailing/inner ExtendNumLet around units of letters
 *          (ALetter, Hebrew_Letter), numbers and katakana; letters join
 *          across one MidLetter/MidNumLet/Single_Quote, numbers across one
 *          MidNum/MidNumLet/Single_Quote; letters and numbers abut freely;
 *          katakana joins only katakana (or anything through ExtendNumLet);
 *          Hebrew letter + Single_Quote, Hebrew + Double_Quote + Hebrew.
 *          A run of the WORD_DFA below.
 *   SE Asian   runs of Line_Break=Complex_Context (Thai, Lao, Khmer, ...).
 *   ideograph / hiragana   one character each.
 *   emoji  emoji, presentation and modifier sequences joined by ZWJ, flag
 *          (regional indicator) pairs, keycaps, tag sequences.
 *
 * Every unit absorbs following Extend/Format/ZWJ characters (WB4).  Other
 * characters produce no token.  A token never exceeds max_units UTF-16 code
 * units: as Lucene's scanner buffer, matching just stops there, so a longer
 * word comes out in 255-unit pieces.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "analysis/analysis_int.h"

/* A matching position: byte offset and UTF-16 units consumed since start. */
typedef struct ScanPos
{
	int			pos;
	int			units;
} ScanPos;

/*
 * Decode the character at sp, if it still fits the token's unit budget.
 * Returns its byte length, or 0 at end of input or budget.
 */
static inline int
peek(const SeStdScanner *sc, const ScanPos *sp, uint32 *cp, uint32 *props)
{
	int			n;
	uint32		c;

	if (sp->pos >= sc->len)
		return 0;
	c = sc->text[sp->pos];
	if (c < 0x80)
		n = 1;
	else
		n = se_utf8_decode(sc->text + sp->pos, sc->len - sp->pos, &c);
	if (sp->units + (c >= 0x10000 ? 2 : 1) > sc->max_units)
		return 0;
	*cp = c;
	*props = se_unicode_props(c);
	return n;
}

static inline void
advance(ScanPos *sp, int n, uint32 cp)
{
	sp->pos += n;
	sp->units += (cp >= 0x10000) ? 2 : 1;
}

static inline bool
is_extend(uint32 props)
{
	uint32		cls = props & SE_WB_MASK;

	return cls == SE_WB_EXTEND || cls == SE_WB_ZWJ;
}

/* Skip Extend/Format/ZWJ; without presentation selectors if !presel. */
static void
skip_extend(const SeStdScanner *sc, ScanPos *sp, bool presel)
{
	uint32		cp;
	uint32		props;
	int			n;

	while ((n = peek(sc, sp, &cp, &props)) > 0 && is_extend(props))
	{
		if (!presel && (cp == 0xFE0E || cp == 0xFE0F))
			break;
		advance(sp, n, cp);
	}
}

/*
 * The word rule as a DFA over word-break classes.  States after "the last
 * unit was ...":
 */
enum
{
	W_START,
	W_ENL0,						/* leading ExtendNumLet only (no unit yet) */
	W_AL,						/* a letter */
	W_HL,						/* a Hebrew letter that may begin a new unit */
	W_HLJ,						/* a Hebrew letter joined by a mid character */
	W_HSQ,						/* Hebrew letter + Single_Quote */
	W_HDQH,						/* Hebrew + Double_Quote + Hebrew */
	W_NU,						/* a digit */
	W_KA,						/* katakana */
	W_ENL,						/* ExtendNumLet after a unit */
	W_ALM,						/* letter + mid: needs a letter */
	W_NUM,						/* digit + mid: needs a digit */
	W_HLDQ,						/* Hebrew + Double_Quote: needs Hebrew */
	W_STOP,
	W_NSTATES = W_STOP
};

#define S W_STOP
static const uint8 word_dfa[W_NSTATES][14] = {
	/*
	 * OTHER ALETTER HEBREW NUMERIC KATAKANA MIDLETTER MIDNUM MIDNUMLET
	 * SQUOTE DQUOTE EXTENDNUMLET EXTEND ZWJ RI
	 */
	[W_START] = {S, W_AL, W_HL, W_NU, W_KA, S, S, S, S, S, W_ENL0, S, S, S},
	[W_ENL0] = {S, W_AL, W_HL, W_NU, W_KA, S, S, S, S, S, W_ENL0, W_ENL0, W_ENL0, S},
	[W_AL] = {S, W_AL, W_HL, W_NU, S, W_ALM, S, W_ALM, W_ALM, S, W_ENL, W_AL, W_AL, S},
	[W_HL] = {S, W_AL, W_HL, W_NU, S, W_ALM, S, W_ALM, W_HSQ, W_HLDQ, W_ENL, W_HL, W_HL, S},
	[W_HLJ] = {S, W_AL, W_HL, W_NU, S, W_ALM, S, W_ALM, W_ALM, S, W_ENL, W_HLJ, W_HLJ, S},
	[W_HSQ] = {S, W_AL, W_HL, W_NU, S, S, S, S, S, S, W_ENL, W_HSQ, W_HSQ, S},
	[W_HDQH] = {S, W_AL, W_HL, W_NU, S, S, S, S, S, S, W_ENL, W_HDQH, W_HDQH, S},
	[W_NU] = {S, W_AL, W_HL, W_NU, S, S, W_NUM, W_NUM, W_NUM, S, W_ENL, W_NU, W_NU, S},
	[W_KA] = {S, S, S, S, W_KA, S, S, S, S, S, W_ENL, W_KA, W_KA, S},
	[W_ENL] = {S, W_AL, W_HL, W_NU, W_KA, S, S, S, S, S, W_ENL, W_ENL, W_ENL, S},
	[W_ALM] = {S, W_AL, W_HLJ, S, S, S, S, S, S, S, S, W_ALM, W_ALM, S},
	[W_NUM] = {S, S, S, W_NU, S, S, S, S, S, S, S, W_NUM, W_NUM, S},
	[W_HLDQ] = {S, S, W_HDQH, S, S, S, S, S, S, S, S, W_HLDQ, W_HLDQ, S},
};
#undef S

static const bool word_accepting[W_NSTATES] = {
	[W_AL] = true,[W_HL] = true,[W_HLJ] = true,[W_HSQ] = true,
	[W_HDQH] = true,[W_NU] = true,[W_KA] = true,[W_ENL] = true,
};

/*
 * Why W_HL and W_HLJ differ: Lucene's grammar lets "Hebrew + quote" form a
 * unit of its own, so a Hebrew letter that follows a letter directly can
 * start such a unit ("aב'" is one token), but one joined to the previous
 * letter through a mid character cannot ("a.ב'" stops before the quote).
 * Likewise nothing but a new unit may follow a complete Hebrew + quote unit.
 */

/* Longest match of the word rule at start; start if none. */
static int
match_word(const SeStdScanner *sc, int start)
{
	ScanPos		sp = {start, 0};
	int			accept = start;
	int			state = W_START;
	uint32		cp;
	uint32		props;
	int			n;

	while ((n = peek(sc, &sp, &cp, &props)) > 0)
	{
		int			next = word_dfa[state][props & SE_WB_MASK];

		if (next == W_STOP)
			break;
		state = next;
		advance(&sp, n, cp);
		if (word_accepting[state])
			accept = sp.pos;
	}
	return accept;
}

/* Longest run of (Complex_Context Extend*)+ at start. */
static int
match_complex(const SeStdScanner *sc, int start)
{
	ScanPos		sp = {start, 0};
	uint32		cp;
	uint32		props;
	int			n;

	while ((n = peek(sc, &sp, &cp, &props)) > 0)
	{
		if (!(props & SE_UP_SA) && (sp.pos == start || !is_extend(props)))
			break;
		advance(&sp, n, cp);
	}
	return sp.pos;
}

/* One character with the given flag, plus Extend*. */
static int
match_single(const SeStdScanner *sc, int start, uint32 flag)
{
	ScanPos		sp = {start, 0};
	uint32		cp;
	uint32		props;
	int			n;

	n = peek(sc, &sp, &cp, &props);
	if (n == 0 || !(props & flag))
		return start;
	advance(&sp, n, cp);
	skip_extend(sc, &sp, true);
	return sp.pos;
}

/* Keycap: [0-9#*] Extend* FE0F? 20E3 Extend* (Extend without FE0E/FE0F). */
static int
match_keycap(const SeStdScanner *sc, int start)
{
	ScanPos		sp = {start, 0};
	uint32		cp;
	uint32		props;
	int			n;
	bool		seen_keycap = false;

	n = peek(sc, &sp, &cp, &props);
	if (n == 0)
		return start;
	advance(&sp, n, cp);
	while ((n = peek(sc, &sp, &cp, &props)) > 0 && is_extend(props) &&
		   cp != 0xFE0E && cp != 0xFE0F)
	{
		if (cp == 0x20E3)
			seen_keycap = true;
		advance(&sp, n, cp);
	}
	if (n > 0 && cp == 0xFE0F)
	{
		ScanPos		t = sp;

		advance(&t, n, cp);
		n = peek(sc, &t, &cp, &props);
		if (n > 0 && cp == 0x20E3)
		{
			advance(&t, n, cp);
			skip_extend(sc, &t, false);
			return t.pos;
		}
	}
	/* the keycap mark was inside the Extend run: the match ends with it */
	return seen_keycap ? sp.pos : start;
}

/*
 * Emoji sequences: elements ZWJ* (EmojiChar Extend* FE0F? | Modifier
 * Extend*) joined by ZWJ; or one element followed by a tag sequence.
 */
static int
match_emoji_seq(const SeStdScanner *sc, int start)
{
	ScanPos		at = {start, 0};
	int			accept = start;
	bool		first = true;
	bool		joined = false; /* the previous element's run ended in ZWJ */
	uint32		cp;
	uint32		props;
	int			n;

	for (;;)
	{
		ScanPos		e = at;
		bool		last_zwj = false;

		n = peek(sc, &e, &cp, &props);
		if (!first && !joined && (n == 0 || (props & SE_WB_MASK) != SE_WB_ZWJ))
			break;
		while (n > 0 && (props & SE_WB_MASK) == SE_WB_ZWJ)
		{
			advance(&e, n, cp);
			n = peek(sc, &e, &cp, &props);
		}
		if (n == 0 || !(props & (SE_UP_EMOJI | SE_UP_EMOJI_MOD)))
			break;
		advance(&e, n, cp);
		if (props & SE_UP_EMOJI)
		{
			while ((n = peek(sc, &e, &cp, &props)) > 0 && is_extend(props) &&
				   cp != 0xFE0E && cp != 0xFE0F)
			{
				last_zwj = (props & SE_WB_MASK) == SE_WB_ZWJ;
				advance(&e, n, cp);
			}
			if (n > 0 && cp == 0xFE0F)
			{
				advance(&e, n, cp);
				last_zwj = false;
			}
		}
		else
		{
			while ((n = peek(sc, &e, &cp, &props)) > 0 && is_extend(props) &&
				   cp != 0xFE0E && cp != 0xFE0F)
			{
				last_zwj = (props & SE_WB_MASK) == SE_WB_ZWJ;
				advance(&e, n, cp);
			}
		}
		at = e;
		accept = e.pos;
		joined = last_zwj;

		/* tag sequence (only reachable here after FE0F: tags are Extend) */
		if (first && (n = peek(sc, &at, &cp, &props)) > 0 &&
			cp >= 0xE0020 && cp <= 0xE007E)
		{
			ScanPos		t = at;

			while ((n = peek(sc, &t, &cp, &props)) > 0 &&
				   cp >= 0xE0020 && cp <= 0xE007E)
				advance(&t, n, cp);
			if (n > 0 && cp == 0xE007F)
			{
				advance(&t, n, cp);
				return t.pos;
			}
			return accept;
		}
		first = false;
	}
	return accept;
}

/* Longest emoji match at start (first character already classified). */
static int
match_emoji(const SeStdScanner *sc, int start, uint32 cp, uint32 props)
{
	if ((props & SE_WB_MASK) == SE_WB_RI)
	{
		ScanPos		sp = {start, 0};
		uint32		c2;
		uint32		p2;
		int			n;

		advance(&sp, se_utf8_decode(sc->text + start, sc->len - start, &c2), cp);
		skip_extend(sc, &sp, true);
		n = peek(sc, &sp, &c2, &p2);
		if (n == 0 || (p2 & SE_WB_MASK) != SE_WB_RI)
			return start;
		advance(&sp, n, c2);
		skip_extend(sc, &sp, true);
		return sp.pos;
	}
	if (cp == '#' || cp == '*' || (cp >= '0' && cp <= '9'))
		return match_keycap(sc, start);
	return match_emoji_seq(sc, start);
}

/*
 * What an ASCII byte is to the scanner, derived once from se_uni_direct:
 * ASCII_SKIP starts no token (white space and the punctuation of class
 * Other, but not '#' and '*', which start keycaps), ASCII_ALNUM is a letter
 * or digit (word class ALetter or Numeric), ASCII_END ends the fast path's
 * run (class Other), ASCII_MID may join two runs (MidLetter, MidNum,
 * MidNumLet, Single_Quote: the . , : ; ' of "e.g", "3,000", "can't").
 * Bytes of 0x80 and up are none of them.
 */
#define ASCII_SKIP	0x01
#define ASCII_ALNUM	0x02
#define ASCII_END	0x04
#define ASCII_MID	0x08

static uint8 ascii_class[256];
static bool ascii_class_ready = false;

static void
init_ascii_class(void)
{
	int			c;

	for (c = 0; c < 0x80; c++)
	{
		uint32		props = se_uni_direct[c];
		uint32		wb = props & SE_WB_MASK;
		uint8		k = 0;

		if ((props == SE_WB_OTHER || (props & SE_UP_SPACE)) && c != '#' && c != '*')
			k |= ASCII_SKIP;
		if (wb == SE_WB_ALETTER || wb == SE_WB_NUMERIC)
			k |= ASCII_ALNUM;
		if (wb == SE_WB_OTHER)
			k |= ASCII_END;
		if (wb == SE_WB_MIDLETTER || wb == SE_WB_MIDNUM || wb == SE_WB_MIDNUMLET ||
			wb == SE_WB_SQUOTE)
			k |= ASCII_MID;
		ascii_class[c] = k;
	}
	ascii_class_ready = true;
}

/*
 * ASCII fast path of the word rule: a run of ASCII letters and digits
 * followed by the end of the text or by an ASCII character of class Other
 * (space, most punctuation) is exactly the token match_word and the other
 * rules would find at start (no rule continues through an Other, and none
 * but the word rule matches an ASCII letter or digit), and so is such a run
 * followed by a mid character and then the end or an Other.  Returns the
 * run's end, or start when anything else follows (a mid character before a
 * letter or digit, '_', non-ASCII) or the run reaches the token's unit
 * budget: then the full rules decide.  Most tokens of English text take
 * this path.
 */
static inline int
ascii_word_end(const SeStdScanner *sc, int start)
{
	const unsigned char *t = sc->text;
	int			len = sc->len;
	int			limit = Min(len, start + sc->max_units);
	int			q = start + 1;

	while (q < limit && (ascii_class[t[q]] & ASCII_ALNUM))
		q++;
	if (q == len)
		return q;
	if (q < limit && (ascii_class[t[q]] & ASCII_END))
		return q;
	/*
	 * A mid character joins the run to what follows only if a letter or
	 * digit follows it (UAX #29 WB6/7, WB11/12); before the end of the text
	 * or an Other, as after "foo." or "bar,", the word ends at it.
	 */
	if (q < limit && (ascii_class[t[q]] & ASCII_MID) &&
		(q + 1 == len || (ascii_class[t[q + 1]] & ASCII_END)))
		return q;
	return start;
}

void
se_std_scanner_init(SeStdScanner *sc, const char *text, int len)
{
	sc->text = (const unsigned char *) text;
	sc->len = (text == NULL || len < 0) ? 0 : len;
	sc->pos = 0;
	sc->max_units = SE_MAX_TOKEN_UNITS;
	sc->ascii_fast = true;
	sc->ascii_alnum = false;
	if (!ascii_class_ready)
		init_ascii_class();
}

/*
 * Find the next token; returns false at end of input.  The token is
 * text[*start .. *end).
 */
bool
se_std_scanner_next(SeStdScanner *sc, int *start, int *end)
{
	const unsigned char *t = sc->text;
	int			len = sc->len;

	while (sc->pos < len)
	{
		int			p = sc->pos;
		unsigned char c;
		uint32		cp;
		uint32		props;
		uint32		cls;
		int			n;
		int			best;
		int			m;

		/* ASCII fast path: spaces and punctuation start nothing */
		while (p < len && (ascii_class[t[p]] & ASCII_SKIP))
			p++;
		sc->pos = p;
		if (p >= len)
			break;
		best = p;
		c = t[p];
		if (c < 0x80)
		{
			props = se_uni_direct[c];
			cp = c;
			n = 1;
			if (sc->ascii_fast && (ascii_class[c] & ASCII_ALNUM))
			{
				int			q = ascii_word_end(sc, p);

				if (q > p)
				{
					*start = p;
					*end = q;
					sc->pos = q;
					sc->ascii_alnum = true;
					return true;
				}
			}
		}
		else
		{
			n = se_utf8_decode(sc->text + p, sc->len - p, &cp);
			props = se_unicode_props(cp);
		}
		cls = props & SE_WB_MASK;

		switch (cls)
		{
			case SE_WB_ALETTER:
			case SE_WB_HEBREW:
			case SE_WB_NUMERIC:
			case SE_WB_KATAKANA:
			case SE_WB_EXTENDNUMLET:
				best = match_word(sc, p);
				break;
			default:
				break;
		}
		/* digits start keycaps too, but the word rule always matches as far */
		if ((props & (SE_UP_EMOJI | SE_UP_EMOJI_MOD)) || cls == SE_WB_ZWJ ||
			cls == SE_WB_RI || cp == '#' || cp == '*')
		{
			m = match_emoji(sc, p, cp, props);
			best = Max(best, m);
		}
		if (props & SE_UP_SA)
		{
			m = match_complex(sc, p);
			best = Max(best, m);
		}
		if (props & SE_UP_HAN)
		{
			m = match_single(sc, p, SE_UP_HAN);
			best = Max(best, m);
		}
		if (props & SE_UP_HIRAGANA)
		{
			m = match_single(sc, p, SE_UP_HIRAGANA);
			best = Max(best, m);
		}

		if (best > p)
		{
			*start = p;
			*end = best;
			sc->pos = best;
			sc->ascii_alnum = false;
			return true;
		}
		/* no rule matched: Lucene ignores this character */
		sc->pos = p + n;
	}
	return false;
}
