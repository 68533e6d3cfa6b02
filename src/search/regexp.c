/*-------------------------------------------------------------------------
 *
 * regexp.c
 *	  Lucene's regular expression syntax, matched against whole terms, for
 *	  the regexp query.
 *
 * The syntax is Lucene's RegExp with ES's flags: . ? * + {n} {n,} {n,m}
 * | ( ) [ ] [^ ] "literal" \ escapes, \d \s \w and their negations, and
 * the optional operators & (INTERSECTION), ~ (COMPLEMENT), # (EMPTY),
 * @ (ANYSTRING) and <n-m> (INTERVAL); case_insensitive folds ASCII
 * letters, as Lucene's ASCII_CASE_INSENSITIVE.
 *
 * No automaton is built.  A term of n code points is matched by carrying
 * the set of positions the expression can reach: every node maps a set of
 * start positions to the set of end positions its matches can have
 * (bitsets of n + 1 bits), so concatenation composes, union ors, a
 * repetition iterates until no position is new; intersection and
 * complement, which pair a match's start with its end, go start by start.
 * The term matches when position n is reached from {0}.  That costs
 * O(nodes * n / 64) per term for the usual expressions and never blows up
 * as a determinized automaton can, so there is no max_determinized_states
 * (the parameter is accepted).  The work is counted for interrupt checks.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdarg.h>

#include "mb/pg_wchar.h"
#include "port/pg_bitutils.h"
#include "search/search_int.h"

/* Nesting depth past which an expression is refused (the parser recurses). */
#define RE_MAX_NESTING	500

typedef enum ReKind
{
	RE_EMPTY_STRING,			/* () */
	RE_EMPTY_LANG,				/* # */
	RE_ANY_STRING,				/* @ */
	RE_ANY_CHAR,				/* . */
	RE_RANGE,					/* a char or [a-z] item */
	RE_CLASS,					/* [...], \d and kin: any (or none) of subs */
	RE_CONCAT,
	RE_UNION,
	RE_INTERSECT,
	RE_COMPLEMENT,
	RE_REPEAT,
	RE_INTERVAL					/* <n-m> */
} ReKind;

typedef struct ReNode ReNode;

struct ReNode
{
	ReKind		kind;
	int			nsubs;
	ReNode	  **subs;
	bool		negated;		/* CLASS */
	uint32		lo;				/* RANGE */
	uint32		hi;
	int64		min;			/* REPEAT (max -1: unbounded), INTERVAL */
	int64		max;
	int			digits;			/* INTERVAL: exact width, 0 = any */
};

struct SeRegex
{
	ReNode	   *root;
	int			depth;			/* of the tree: temporaries needed */
	StringInfoData prefix;		/* literal start of every match (UTF-8) */
	/* matching scratch, grown between terms */
	uint32	   *text;
	int			text_cap;
	uint64	   *arena;
	int			arena_words;
	int			arena_used;
	int			nwords;			/* per position set, for this term */
	int			n;				/* this term's length in code points */
};

typedef struct ReParser
{
	const uint32 *p;
	int			len;
	int			pos;
	int			flags;
	bool		ci;
	int			nesting;
	SeError    *err;
} ReParser;

/* ---------------------------------------------------------------------
 * UTF-8
 * ---------------------------------------------------------------------
 */

/* Decode s[0..len) into out (len code points of room); returns count. */
static int
utf8_decode(const char *s, int len, uint32 *out)
{
	const unsigned char *u = (const unsigned char *) s;
	int			i = 0,
				n = 0;

	while (i < len)
	{
		int			l = pg_utf_mblen(u + i);

		if (l < 1 || i + l > len)
			l = 1;				/* a truncated sequence: its bytes one by one */
		out[n++] = l == 1 ? u[i] : utf8_to_unicode(u + i);
		i += l;
	}
	return n;
}

static void
utf8_append(StringInfo s, uint32 c)
{
	unsigned char buf[4];

	unicode_to_utf8(c, buf);
	appendBinaryStringInfo(s, (char *) buf, pg_utf_mblen(buf));
}

/* ---------------------------------------------------------------------
 * Parsing (Lucene's RegExp grammar)
 * ---------------------------------------------------------------------
 */
static ReNode *
new_node(ReKind kind)
{
	ReNode	   *n = palloc0(sizeof(ReNode));

	n->kind = kind;
	return n;
}

static ReNode *
unary_node(ReKind kind, ReNode *a)
{
	ReNode	   *n = new_node(kind);

	n->nsubs = 1;
	n->subs = palloc(sizeof(ReNode *));
	n->subs[0] = a;
	return n;
}

static ReNode *
pair_node(ReKind kind, ReNode *a, ReNode *b)
{
	ReNode	   *n = new_node(kind);

	n->nsubs = 2;
	n->subs = palloc(sizeof(ReNode *) * 2);
	n->subs[0] = a;
	n->subs[1] = b;
	return n;
}

static ReNode *
range_node(uint32 lo, uint32 hi)
{
	ReNode	   *n = new_node(RE_RANGE);

	n->lo = lo;
	n->hi = hi;
	return n;
}

/* A class of ranges given as pairs, possibly negated. */
static ReNode *
class_node(const uint32 *pairs, int npairs, bool negated)
{
	ReNode	   *n = new_node(RE_CLASS);
	int			i;

	n->negated = negated;
	n->nsubs = npairs;
	n->subs = palloc(sizeof(ReNode *) * npairs);
	for (i = 0; i < npairs; i++)
		n->subs[i] = range_node(pairs[2 * i], pairs[2 * i + 1]);
	return n;
}

/* One char; with case_insensitive an ASCII letter matches either case. */
static ReNode *
char_node(ReParser *ps, uint32 c)
{
	uint32		both[4];

	if (ps->ci && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
	{
		both[0] = both[1] = c | 0x20;
		both[2] = both[3] = c & ~0x20;
		return class_node(both, 2, false);
	}
	return range_node(c, c);
}

static bool
more(ReParser *ps)
{
	return ps->pos < ps->len;
}

static bool
peek(ReParser *ps, const char *chars)
{
	return more(ps) && ps->p[ps->pos] < 0x80 && strchr(chars, (char) ps->p[ps->pos]) != NULL;
}

static bool
match(ReParser *ps, uint32 c)
{
	if (more(ps) && ps->p[ps->pos] == c)
	{
		ps->pos++;
		return true;
	}
	return false;
}

/* A syntax error, worded as Lucene's RegExp words it; returns false. */
static bool fail(ReParser *ps, const char *fmt,...) pg_attribute_printf(2, 3);

static bool
fail(ReParser *ps, const char *fmt,...)
{
	char		msg[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(msg, sizeof(msg), fmt, args);
	va_end(args);
	se_error_set(ps->err, 400, "query_shard_exception", "failed to create query: %s", msg);
	return false;
}

/* Consume c, or fail as Lucene does ("expected ')' at position 3"). */
static bool
expect(ReParser *ps, char c)
{
	return match(ps, c) || fail(ps, "expected '%c' at position %d", c, ps->pos);
}

/* \d \D \s \S \w \W after a backslash; NULL when c is none of them */
static ReNode *
shorthand_class(uint32 c)
{
	static const uint32 digit[] = {'0', '9'};
	static const uint32 space[] = {' ', ' ', '\t', '\r'};
	static const uint32 word[] = {'a', 'z', 'A', 'Z', '0', '9', '_', '_'};

	switch (c)
	{
		case 'd':
		case 'D':
			return class_node(digit, 1, c == 'D');
		case 's':
		case 'S':
			return class_node(space, 2, c == 'S');
		case 'w':
		case 'W':
			return class_node(word, 4, c == 'W');
	}
	return NULL;
}

/* A char, possibly escaped; a shorthand class into *cls when allowed. */
static bool
parse_char(ReParser *ps, uint32 *c, ReNode **cls)
{
	if (!more(ps))
		return fail(ps, "unexpected end-of-string");
	if (match(ps, '\\'))
	{
		if (!more(ps))
			return fail(ps, "unexpected end-of-string");
		if (cls != NULL && (*cls = shorthand_class(ps->p[ps->pos])) != NULL)
		{
			ps->pos++;
			return true;
		}
	}
	*c = ps->p[ps->pos++];
	return true;
}

static ReNode *parse_union(ReParser *ps);

/* fn one level deeper: ( and ~ recurse, so nesting is bounded */
static ReNode *
parse_deeper(ReParser *ps, ReNode *(*fn) (ReParser *ps))
{
	ReNode	   *n;

	if (ps->nesting >= RE_MAX_NESTING)
	{
		fail(ps, "expression nested too deeply at position %d", ps->pos);
		return NULL;
	}
	ps->nesting++;
	n = fn(ps);
	ps->nesting--;
	return n;
}

static bool
parse_int(ReParser *ps, int64 *v)
{
	int			start = ps->pos;

	*v = 0;
	while (more(ps) && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9')
	{
		*v = Min(*v * 10 + (ps->p[ps->pos] - '0'), PG_INT32_MAX);
		ps->pos++;
	}
	if (ps->pos == start)
		return fail(ps, "integer expected at position %d", ps->pos);
	return true;
}

/* [ ... ] after the '[' (and '^'), up to and including the ']' */
static ReNode *
parse_class(ReParser *ps, bool negated)
{
	ReNode	   *n = new_node(RE_CLASS);
	int			cap = 4;

	n->negated = negated;
	n->subs = palloc(sizeof(ReNode *) * cap);
	do
	{
		uint32		lo,
					hi;
		ReNode	   *item = NULL;

		if (!parse_char(ps, &lo, &item))
			return NULL;
		if (item == NULL)
		{
			if (match(ps, '-'))
			{
				if (!parse_char(ps, &hi, NULL))
					return NULL;
				if (hi < lo)
				{
					StringInfoData a,
								b;

					initStringInfo(&a);
					initStringInfo(&b);
					utf8_append(&a, lo);
					utf8_append(&b, hi);
					fail(ps, "invalid range: from (%s) cannot be > to (%s)", a.data, b.data);
					return NULL;
				}
				item = range_node(lo, hi);
			}
			else
				item = char_node(ps, lo);
		}
		if (n->nsubs == cap)
		{
			cap *= 2;
			n->subs = repalloc(n->subs, sizeof(ReNode *) * cap);
		}
		n->subs[n->nsubs++] = item;
	} while (more(ps) && !peek(ps, "]"));
	if (!expect(ps, ']'))
		return NULL;
	return n;
}

/* <n-m> after the '<', up to and including the '>' */
static ReNode *
parse_interval(ReParser *ps)
{
	ReNode	   *n = new_node(RE_INTERVAL);
	int			s1 = ps->pos,
				s2;

	if (!parse_int(ps, &n->min))
		return NULL;
	if (!match(ps, '-'))
	{
		fail(ps, "interval syntax error at position %d", ps->pos);
		return NULL;
	}
	s2 = ps->pos;
	if (!parse_int(ps, &n->max))
		return NULL;
	/* bounds written with as many digits: exactly that many (zero-padded) */
	n->digits = (s2 - 1 - s1) == (ps->pos - s2) ? ps->pos - s2 : 0;
	if (n->min > n->max)
	{
		int64		t = n->min;

		n->min = n->max;
		n->max = t;
	}
	if (!expect(ps, '>'))
		return NULL;
	return n;
}

static ReNode *
parse_simple(ReParser *ps)
{
	uint32		c;
	ReNode	   *cls = NULL;
	int			i;

	if (match(ps, '.'))
		return new_node(RE_ANY_CHAR);
	if ((ps->flags & SE_RE_EMPTY) && match(ps, '#'))
		return new_node(RE_EMPTY_LANG);
	if ((ps->flags & SE_RE_ANYSTRING) && match(ps, '@'))
		return new_node(RE_ANY_STRING);
	if (match(ps, '"'))
	{
		ReNode	   *n = new_node(RE_CONCAT);
		int			start = ps->pos;

		while (more(ps) && !peek(ps, "\""))
			ps->pos++;
		if (!expect(ps, '"'))
			return NULL;
		n->nsubs = ps->pos - 1 - start;
		n->subs = palloc(sizeof(ReNode *) * Max(1, n->nsubs));
		for (i = 0; i < n->nsubs; i++)
			n->subs[i] = char_node(ps, ps->p[start + i]);
		return n->nsubs == 0 ? new_node(RE_EMPTY_STRING) : n;
	}
	if (match(ps, '('))
	{
		ReNode	   *n;

		if (match(ps, ')'))
			return new_node(RE_EMPTY_STRING);
		n = parse_deeper(ps, parse_union);
		if (n == NULL || !expect(ps, ')'))
			return NULL;
		return n;
	}
	if ((ps->flags & SE_RE_INTERVAL) && match(ps, '<'))
		return parse_interval(ps);
	if (!parse_char(ps, &c, &cls))
		return NULL;
	return cls ? cls : char_node(ps, c);
}

static ReNode *
parse_class_exp(ReParser *ps)
{
	if (match(ps, '['))
		return parse_class(ps, match(ps, '^'));
	return parse_simple(ps);
}

static ReNode *
parse_complement(ReParser *ps)
{
	if ((ps->flags & SE_RE_COMPLEMENT) && match(ps, '~'))
	{
		ReNode	   *sub = parse_deeper(ps, parse_complement);

		return sub ? unary_node(RE_COMPLEMENT, sub) : NULL;
	}
	return parse_class_exp(ps);
}

static ReNode *
parse_repeat(ReParser *ps)
{
	ReNode	   *e = parse_complement(ps);

	while (e != NULL && peek(ps, "?*+{"))
	{
		ReNode	   *r = unary_node(RE_REPEAT, e);

		if (match(ps, '?'))
			r->max = 1;
		else if (match(ps, '*'))
			r->max = -1;
		else if (match(ps, '+'))
		{
			r->min = 1;
			r->max = -1;
		}
		else
		{
			ps->pos++;			/* '{' */
			if (!parse_int(ps, &r->min))
				return NULL;
			r->max = r->min;
			if (match(ps, ','))
			{
				r->max = -1;
				if (!peek(ps, "}") && !parse_int(ps, &r->max))
					return NULL;
			}
			if (!expect(ps, '}'))
				return NULL;
			if (r->max >= 0 && r->max < r->min)
			{
				fail(ps, "invalid repetition bounds at position %d", ps->pos);
				return NULL;
			}
		}
		e = r;
	}
	return e;
}

static ReNode *
parse_concat(ReParser *ps)
{
	ReNode	   *n = NULL;
	int			cap = 0;

	do
	{
		ReNode	   *e = parse_repeat(ps);

		if (e == NULL)
			return NULL;
		if (n == NULL)
		{
			if (!more(ps) || peek(ps, ")|") ||
				((ps->flags & SE_RE_INTERSECTION) && peek(ps, "&")))
				return e;
			n = new_node(RE_CONCAT);
			cap = 4;
			n->subs = palloc(sizeof(ReNode *) * cap);
		}
		if (n->nsubs == cap)
		{
			cap *= 2;
			n->subs = repalloc(n->subs, sizeof(ReNode *) * cap);
		}
		n->subs[n->nsubs++] = e;
	} while (more(ps) && !peek(ps, ")|") &&
			 !((ps->flags & SE_RE_INTERSECTION) && peek(ps, "&")));
	return n;
}

static ReNode *
parse_intersect(ReParser *ps)
{
	ReNode	   *e = parse_concat(ps);

	while (e != NULL && (ps->flags & SE_RE_INTERSECTION) && match(ps, '&'))
	{
		ReNode	   *b = parse_concat(ps);

		if (b == NULL)
			return NULL;
		e = pair_node(RE_INTERSECT, e, b);
	}
	return e;
}

static ReNode *
parse_union(ReParser *ps)
{
	ReNode	   *e = parse_intersect(ps);

	while (e != NULL && match(ps, '|'))
	{
		ReNode	   *b = parse_intersect(ps);

		if (b == NULL)
			return NULL;
		e = pair_node(RE_UNION, e, b);
	}
	return e;
}

static int
tree_depth(const ReNode *n)
{
	int			d = 0;
	int			i;

	for (i = 0; i < n->nsubs; i++)
		d = Max(d, tree_depth(n->subs[i]));
	return d + 1;
}

/* The literal text every match starts with. */
static void
literal_prefix(const ReNode *n, StringInfo out)
{
	int			i;

	if (n->kind == RE_RANGE && n->lo == n->hi)
		utf8_append(out, n->lo);
	else if (n->kind == RE_CONCAT)
		for (i = 0; i < n->nsubs && n->subs[i]->kind == RE_RANGE &&
			 n->subs[i]->lo == n->subs[i]->hi; i++)
			utf8_append(out, n->subs[i]->lo);
}

SeRegex *
se_regex_parse(const char *pattern, int len, int flags, bool case_insensitive,
			   SeError *err)
{
	ReParser	ps;
	uint32	   *p = palloc(sizeof(uint32) * (len + 1));
	SeRegex    *re;
	ReNode	   *root;

	memset(&ps, 0, sizeof(ps));
	ps.p = p;
	ps.len = utf8_decode(pattern, len, p);
	ps.flags = flags;
	ps.ci = case_insensitive;
	ps.err = err;
	root = ps.len == 0 ? new_node(RE_EMPTY_STRING) : parse_union(&ps);
	if (root == NULL)
		return NULL;
	if (more(&ps))
	{
		fail(&ps, "end-of-string expected at position %d", ps.pos);
		return NULL;
	}
	re = palloc0(sizeof(SeRegex));
	re->root = root;
	re->depth = tree_depth(root);
	initStringInfo(&re->prefix);
	literal_prefix(root, &re->prefix);
	return re;
}

const char *
se_regex_prefix(const SeRegex *re, int *len)
{
	*len = re->prefix.len;
	return re->prefix.data;
}

/* ---------------------------------------------------------------------
 * Matching: sets of positions
 * ---------------------------------------------------------------------
 */
#define SET_HAS(s, i)	(((s)[(i) >> 6] >> ((i) & 63)) & 1)
#define SET_ADD(s, i)	((s)[(i) >> 6] |= UINT64CONST(1) << ((i) & 63))

static uint64 *
set_alloc(SeRegex *re)
{
	uint64	   *s = re->arena + re->arena_used;

	Assert(re->arena_used + re->nwords <= re->arena_words);
	re->arena_used += re->nwords;
	memset(s, 0, sizeof(uint64) * re->nwords);
	return s;
}

static bool
set_empty(const SeRegex *re, const uint64 *s)
{
	int			i;

	for (i = 0; i < re->nwords; i++)
		if (s[i] != 0)
			return false;
	return true;
}

/* Next member of s at or after i, or -1. */
static int
set_next(const SeRegex *re, const uint64 *s, int i)
{
	int			w = i >> 6;
	uint64		bits;

	if (i > re->n)
		return -1;
	bits = s[w] & (~UINT64CONST(0) << (i & 63));
	while (bits == 0)
	{
		if (++w >= re->nwords)
			return -1;
		bits = s[w];
	}
	i = w * 64 + pg_rightmost_one_pos64(bits);
	return i <= re->n ? i : -1;
}

static bool
char_matches(const ReNode *n, uint32 c)
{
	int			i;

	switch (n->kind)
	{
		case RE_ANY_CHAR:
			return true;
		case RE_RANGE:
			return c >= n->lo && c <= n->hi;
		case RE_CLASS:
			for (i = 0; i < n->nsubs; i++)
				if (char_matches(n->subs[i], c))
					return !n->negated;
			return n->negated;
		default:
			return false;
	}
}

static void ends(SeRegex *re, const ReNode *n, const uint64 *from, uint64 *out);

/* out = the ends of n's matches from the one start i */
static void
ends_from(SeRegex *re, const ReNode *n, int i, uint64 *single, uint64 *out)
{
	memset(single, 0, sizeof(uint64) * re->nwords);
	SET_ADD(single, i);
	ends(re, n, single, out);
}

/*
 * out (zeroed by the caller) = the positions where a match of n that
 * starts at a position of `from` can end.
 */
static void
ends(SeRegex *re, const ReNode *n, const uint64 *from, uint64 *out)
{
	int			mark = re->arena_used;
	int			w,
				i,
				j;
	uint64	   *a,
			   *b,
			   *c;

	SE_SEARCH_TICK(re->nwords);
	switch (n->kind)
	{
		case RE_EMPTY_STRING:
			memcpy(out, from, sizeof(uint64) * re->nwords);
			break;
		case RE_EMPTY_LANG:
			break;
		case RE_ANY_STRING:
			if ((i = set_next(re, from, 0)) >= 0)
				for (j = i; j <= re->n; j++)
					SET_ADD(out, j);
			break;
		case RE_ANY_CHAR:
		case RE_RANGE:
		case RE_CLASS:
			for (i = set_next(re, from, 0); i >= 0 && i < re->n; i = set_next(re, from, i + 1))
				if (char_matches(n, re->text[i]))
					SET_ADD(out, i + 1);
			break;
		case RE_INTERVAL:
			for (i = set_next(re, from, 0); i >= 0; i = set_next(re, from, i + 1))
			{
				int64		v = 0;

				for (j = i; j < re->n && re->text[j] >= '0' && re->text[j] <= '9'; j++)
				{
					v = v * 10 + (re->text[j] - '0');
					if (v > n->max || (n->digits > 0 && j + 1 - i > n->digits))
						break;
					if (v >= n->min && (n->digits == 0 || j + 1 - i == n->digits))
						SET_ADD(out, j + 1);
				}
			}
			break;
		case RE_CONCAT:
			/* ping-pong between two sets, the last step into out */
			a = set_alloc(re);
			b = set_alloc(re);
			memcpy(a, from, sizeof(uint64) * re->nwords);
			for (i = 0; i < n->nsubs; i++)
			{
				uint64	   *dst = i == n->nsubs - 1 ? out : b;

				memset(dst, 0, sizeof(uint64) * re->nwords);
				ends(re, n->subs[i], a, dst);
				if (dst != out && set_empty(re, dst))
					break;
				c = a;
				a = b;
				b = c;
			}
			break;
		case RE_UNION:
			a = set_alloc(re);
			for (i = 0; i < n->nsubs; i++)
			{
				memset(a, 0, sizeof(uint64) * re->nwords);
				ends(re, n->subs[i], from, a);
				for (w = 0; w < re->nwords; w++)
					out[w] |= a[w];
			}
			break;
		case RE_INTERSECT:
		case RE_COMPLEMENT:
			/* both pair a match's start with its end: start by start */
			a = set_alloc(re);
			b = set_alloc(re);
			c = set_alloc(re);
			for (i = set_next(re, from, 0); i >= 0; i = set_next(re, from, i + 1))
			{
				memset(b, 0, sizeof(uint64) * re->nwords);
				ends_from(re, n->subs[0], i, a, b);
				if (n->kind == RE_INTERSECT)
				{
					memset(c, 0, sizeof(uint64) * re->nwords);
					ends_from(re, n->subs[1], i, a, c);
					for (w = 0; w < re->nwords; w++)
						out[w] |= b[w] & c[w];
				}
				else
					for (j = i; j <= re->n; j++)
						if (!SET_HAS(b, j))
							SET_ADD(out, j);
			}
			break;
		case RE_REPEAT:
			{
				int64		k;

				/* a = the ends after k repetitions, exactly, up to min */
				a = set_alloc(re);
				b = set_alloc(re);
				memcpy(a, from, sizeof(uint64) * re->nwords);
				for (k = 0; k < n->min; k++)
				{
					memset(b, 0, sizeof(uint64) * re->nwords);
					ends(re, n->subs[0], a, b);
					/* empty stays empty, a fixed point stays put */
					if (memcmp(a, b, sizeof(uint64) * re->nwords) == 0)
						break;
					c = a;
					a = b;
					b = c;
					if (set_empty(re, a))
						break;
				}
				memcpy(out, a, sizeof(uint64) * re->nwords);
				/* then only what is new can lead anywhere new */
				for (k = n->min; n->max < 0 || k < n->max; k++)
				{
					bool		grew = false;

					memset(b, 0, sizeof(uint64) * re->nwords);
					ends(re, n->subs[0], a, b);
					for (w = 0; w < re->nwords; w++)
					{
						b[w] &= ~out[w];
						out[w] |= b[w];
						grew |= b[w] != 0;
					}
					if (!grew)
						break;
					c = a;
					a = b;
					b = c;
				}
			}
			break;
	}
	re->arena_used = mark;
}

bool
se_regex_match(SeRegex *re, const char *term, int len)
{
	uint64	   *from,
			   *out;
	int			need;

	if (re->text_cap < len + 1)
	{
		re->text_cap = Max(len + 1, 64);
		re->text = re->text ? repalloc(re->text, sizeof(uint32) * re->text_cap) :
			palloc(sizeof(uint32) * re->text_cap);
	}
	re->n = utf8_decode(term, len, re->text);
	re->nwords = re->n / 64 + 1;
	/* at most three sets per level of the tree, and from and out */
	need = re->nwords * (3 * re->depth + 2);
	if (re->arena_words < need)
	{
		if (re->arena)
			pfree(re->arena);
		re->arena_words = need;
		re->arena = palloc(sizeof(uint64) * need);
	}
	re->arena_used = 0;
	from = set_alloc(re);
	out = set_alloc(re);
	SET_ADD(from, 0);
	ends(re, re->root, from, out);
	return SET_HAS(out, re->n);
}

/* ES's "flags": ALL, NONE or |-separated ANYSTRING, COMPLEMENT, EMPTY, INTERSECTION, INTERVAL. */
bool
se_regex_flags_parse(const char *s, int *flags, SeError *err)
{
	static const struct
	{
		const char *name;
		int			flag;
	}			names[] = {
		{"ALL", SE_RE_ALL}, {"NONE", 0}, {"ANYSTRING", SE_RE_ANYSTRING},
		{"COMPLEMENT", SE_RE_COMPLEMENT}, {"EMPTY", SE_RE_EMPTY},
		{"INTERSECTION", SE_RE_INTERSECTION}, {"INTERVAL", SE_RE_INTERVAL},
	};
	char	   *copy = pstrdup(s);
	char	   *tok;
	char	   *save = NULL;

	*flags = 0;
	for (tok = strtok_r(copy, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
	{
		int			i;

		for (i = 0; i < lengthof(names); i++)
			if (pg_strcasecmp(tok, names[i].name) == 0)
				break;
		if (i == lengthof(names))
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "Unknown regexp flag [%s]", tok);
			return false;
		}
		*flags |= names[i].flag;
	}
	return true;
}

/*
 * A wildcard pattern as a regexp: * any string, ? any character, \ escapes,
 * every other character literal (Lucene's WildcardQuery is such an
 * automaton).  The wildcard query and the highlighter share it.
 */
void
se_wildcard_to_regex(const char *s, int len, StringInfo re)
{
	int			i;

	for (i = 0; i < len; i++)
	{
		unsigned char ch = (unsigned char) s[i];

		if (ch == '*')
			appendStringInfoString(re, ".*");
		else if (ch == '?')
			appendStringInfoChar(re, '.');
		else if (ch == '\\' && i + 1 < len)
		{
			/* the next character, literally (may start a multibyte one) */
			appendStringInfoChar(re, '\\');
			appendStringInfoChar(re, s[++i]);
		}
		else if (ch < 0x80 && !isalnum(ch))
		{
			appendStringInfoChar(re, '\\');
			appendStringInfoChar(re, (char) ch);
		}
		else
			appendStringInfoChar(re, (char) ch);
	}
}
