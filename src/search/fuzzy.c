/*-------------------------------------------------------------------------
 *
 * fuzzy.c
 *	  Levenshtein automata for the fuzzy query and "fuzziness" in match and
 *	  multi_match, run against a segment's term dictionary.
 *
 * The automaton accepts the terms within max_edits of the query term, in
 * code points, that start with its first prefix_length code points
 * exactly; with transpositions an exchange of two adjacent code points
 * counts as one edit (Lucene's LevenshteinAutomata with transpositions:
 * the optimal string alignment distance).  It is a DFA built lazily: a
 * state is a row of the edit-distance table, every cell capped at
 * max_edits + 1 (and, with transpositions, the row before it and the class
 * of the last code point), interned once, and its transitions are kept per
 * character class -- each distinct code point of the query is a class, all
 * others one class -- so stepping a term is a table lookup per code point.
 * A state whose every cell exceeds max_edits is dead.
 *
 * Intersecting it with the term dictionary is not a scan: the walk seeks
 * to the exact prefix, reuses the states of the code points a term shares
 * with the one before it, decodes the metadata of accepted terms only,
 * and after any term it does not accept seeks to the least string above
 * it that the automaton accepts (Lucene's AutomatonTermsEnum.nextString):
 * the least live code point above the term's own at the deepest position
 * that has one, then the least accepted continuation.  The seek gallops
 * forward from the current block (se_terms_seek).  The work is counted
 * for interrupt checks.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "port/pg_bitutils.h"
#include "search/search_int.h"

/* a DFA transition not computed yet, and the dead state */
#define FZ_UNKNOWN	(-2)
#define FZ_DEAD		(-1)

/*
 * What a seek target needs of a state, worked out once per state: every
 * dead branch of the dictionary asks for them again, and each walk of a
 * shard's segments asks the same states.  ascii: bit c set when code point
 * c (1..127) keeps the state alive; hi: the least code point >= 128 that
 * does (0: none); least_off/least_len: the least string from the state to
 * an accepting one, in SeFuzzy.least (least_off -1: not known yet).
 */
typedef struct SeFuzzyMemo
{
	uint64		ascii[2];
	uint32		hi;
	bool		live_known;
	int32		least_off;
	int32		least_len;
} SeFuzzyMemo;

struct SeFuzzy
{
	int			k;				/* max edits */
	bool		transpositions;
	char	   *prefix;			/* exact start (UTF-8 bytes) */
	int			prefix_len;
	int			prefix_cps;		/* its length in code points */
	uint32	   *q;				/* query code points after the prefix */
	int			m;

	/*
	 * Character classes: class i < nd is the code point chars[i] (the
	 * distinct ones of q, ascending), class nd every other code point (all
	 * act alike on the table).  qcls[j] is q[j]'s class.
	 */
	uint32	   *chars;
	int			nd;
	int		   *qcls;
	int			ascii[128];		/* class of each ASCII code point */

	/*
	 * The DFA, built lazily: a state is its key -- the table's row (m + 1
	 * cells capped at k + 1), and with transpositions the row before it and
	 * the class of the last code point (two bytes) -- interned in an open-addressing
	 * hash table.
	 */
	int			width;			/* bytes of a key */
	uint8	   *keys;			/* nstates x width */
	int32	   *trans;			/* nstates x (nd + 1): state, FZ_DEAD, FZ_UNKNOWN */
	int8	   *accept;			/* the distance of a term ending there, or -1 */
	uint64	   *live;			/* live_mask of each state, or LIVE_UNKNOWN */
	SeFuzzyMemo *memo;			/* per state: what the seeks ask of it */
	StringInfoData least;		/* bytes of the memoized continuations */
	int			nstates;
	int			cap;
	int32	   *htab;			/* state ids, -1 empty */
	int			hmask;
	uint8	   *scratch;		/* a key being built */

	/* walk: the current term's path (bytes after the prefix) */
	int32	   *st;				/* st[i]: state after i code points */
	uint32	   *cand;			/* its code points */
	int		   *cand_end;		/* byte offset past each */
	int			depth_cap;
	char	   *path;
	int			path_cap;
	char	   *key;			/* a seek target (prefix included) */
	int			key_cap;
};

/* Decode one code point of s[0..len); *l gets its byte length (>= 1). */
static uint32
next_cp(const unsigned char *s, int len, int *l)
{
	int			n = pg_utf_mblen(s);

	if (n < 1 || n > len)
		n = 1;
	*l = n;
	if (n == 1)
		return s[0];
	return utf8_to_unicode(s);
}

/* A byte that is no valid UTF-8 start, decoded as itself by next_cp. */
#define INVALID_CP(c, l)	((l) == 1 && (c) >= 0x80)

static int
count_cps(const char *s, int len)
{
	int			n = 0;
	int			i = 0;

	while (i < len)
	{
		int			l;

		(void) next_cp((const unsigned char *) s + i, len - i, &l);
		i += l;
		n++;
	}
	return n;
}

static int
cmp_u32(const void *x, const void *y)
{
	uint32		a = *(const uint32 *) x;
	uint32		b = *(const uint32 *) y;

	return (a > b) - (a < b);
}

/* The first of the query's distinct code points that is >= c (or nd). */
static int
lower_bound(const SeFuzzy *a, uint32 c)
{
	int			lo = 0,
				hi = a->nd;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (a->chars[mid] < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The class of code point c. */
static inline int
class_of(const SeFuzzy *a, uint32 c)
{
	int			i;

	if (c < 128)
		return a->ascii[c];
	i = lower_bound(a, c);
	return i < a->nd && a->chars[i] == c ? i : a->nd;
}

static uint32
key_hash(const uint8 *key, int width)
{
	return hash_bytes(key, width);
}

/* The state of key (a->scratch), added when new. */
static int32
intern(SeFuzzy *a, const uint8 *key)
{
	uint32		h = key_hash(key, a->width) & a->hmask;
	int32		s;
	int			c = a->nd + 1;
	int			i;

	while ((s = a->htab[h]) >= 0)
	{
		if (memcmp(a->keys + (size_t) s * a->width, key, a->width) == 0)
			return s;
		h = (h + 1) & a->hmask;
	}
	if (a->nstates == a->cap)
	{
		a->cap *= 2;
		a->keys = repalloc(a->keys, (size_t) a->cap * a->width);
		a->trans = repalloc(a->trans, sizeof(int32) * (size_t) a->cap * c);
		a->accept = repalloc(a->accept, a->cap);
		a->live = repalloc(a->live, sizeof(uint64) * a->cap);
		a->memo = repalloc(a->memo, sizeof(SeFuzzyMemo) * a->cap);
	}
	s = a->nstates++;
	memcpy(a->keys + (size_t) s * a->width, key, a->width);
	for (i = 0; i < c; i++)
		a->trans[(size_t) s * c + i] = FZ_UNKNOWN;
	a->accept[s] = key[a->m] <= a->k ? (int8) key[a->m] : -1;
	a->live[s] = PG_UINT64_MAX;	/* not known yet */
	a->memo[s].live_known = false;
	a->memo[s].least_off = -1;
	a->htab[h] = s;
	/* keep the table at most half full */
	if (a->nstates * 2 > a->hmask)
	{
		int			n = (a->hmask + 1) * 2;
		int			j;

		pfree(a->htab);
		a->htab = palloc(sizeof(int32) * n);
		memset(a->htab, 0xFF, sizeof(int32) * n);
		a->hmask = n - 1;
		for (j = 0; j < a->nstates; j++)
		{
			h = key_hash(a->keys + (size_t) j * a->width, a->width) & a->hmask;
			while (a->htab[h] >= 0)
				h = (h + 1) & a->hmask;
			a->htab[h] = j;
		}
	}
	return s;
}

/*
 * The state after state s reads a code point of class cls: the next row
 * of the edit-distance table, FZ_DEAD when its every cell exceeds k (no
 * continuation can come back under k: with transpositions a cell is at
 * most one more than the cell up-left of it, which is over k too).
 */
static pg_noinline int32
compute_transition(SeFuzzy *a, int32 s, int cls)
{
	int			c = a->nd + 1;
	int32		t;
	const uint8 *prev;
	const uint8 *prev2;
	int			pcls;
	uint8	   *row = a->scratch;
	int			cap = a->k + 1;
	int			mn;
	int			j;

	prev = a->keys + (size_t) s * a->width;
	prev2 = prev + (a->m + 1);
	pcls = a->transpositions ? prev[2 * (a->m + 1)] | prev[2 * (a->m + 1) + 1] << 8 : a->nd;
	row[0] = (uint8) Min(prev[0] + 1, cap);
	mn = row[0];
	for (j = 1; j <= a->m; j++)
	{
		int			d = prev[j - 1] + (a->qcls[j - 1] == cls ? 0 : 1);

		d = Min(d, prev[j] + 1);
		d = Min(d, row[j - 1] + 1);
		if (a->transpositions && j > 1 && cls < a->nd &&
			a->qcls[j - 2] == cls && a->qcls[j - 1] == pcls)
			d = Min(d, prev2[j - 2] + 1);
		row[j] = (uint8) Min(d, cap);
		mn = Min(mn, row[j]);
	}
	if (mn > a->k)
		t = FZ_DEAD;
	else
	{
		if (a->transpositions)
		{
			memcpy(row + (a->m + 1), prev, a->m + 1);
			row[2 * (a->m + 1)] = (uint8) (cls & 0xFF);
			row[2 * (a->m + 1) + 1] = (uint8) (cls >> 8);
		}
		t = intern(a, row);
	}
	a->trans[(size_t) s * c + cls] = t;
	return t;
}

static inline int32
transition(SeFuzzy *a, int32 s, int cls)
{
	int32		t = a->trans[(size_t) s * (a->nd + 1) + cls];

	return likely(t != FZ_UNKNOWN) ? t : compute_transition(a, s, cls);
}

SeFuzzy *
se_fuzzy_create(const char *term, int len, int max_edits, int prefix_length,
				bool transpositions)
{
	SeFuzzy    *a = palloc0(sizeof(SeFuzzy));
	const unsigned char *u = (const unsigned char *) term;
	int			i = 0;
	int			j;

	a->k = Max(0, max_edits);
	a->transpositions = transpositions;
	/* the exact prefix, in whole code points */
	while (i < len && a->prefix_cps < prefix_length)
	{
		int			l;

		(void) next_cp(u + i, len - i, &l);
		i += l;
		a->prefix_cps++;
	}
	a->prefix = pnstrdup(term, i);
	a->prefix_len = i;
	a->q = palloc(sizeof(uint32) * (len - i + 1));
	while (i < len)
	{
		int			l;

		a->q[a->m++] = next_cp(u + i, len - i, &l);
		i += l;
	}

	/* classes */
	a->chars = palloc(sizeof(uint32) * (a->m + 1));
	memcpy(a->chars, a->q, sizeof(uint32) * a->m);
	qsort(a->chars, a->m, sizeof(uint32), cmp_u32);
	for (i = 0, j = 0; i < a->m; i++)
		if (j == 0 || a->chars[j - 1] != a->chars[i])
			a->chars[j++] = a->chars[i];
	a->nd = j;
	a->qcls = palloc(sizeof(int) * (a->m + 1));
	for (j = 0; j < 128; j++)
		a->ascii[j] = a->nd;
	for (j = 0; j < a->nd; j++)
		if (a->chars[j] < 128)
			a->ascii[a->chars[j]] = j;
	for (j = 0; j < a->m; j++)
		a->qcls[j] = class_of(a, a->q[j]);

	/* the DFA: its start state is row 0 (and a row before it that is all over k) */
	a->width = transpositions ? 2 * (a->m + 1) + 2 : a->m + 1;
	a->cap = 64;
	a->keys = palloc((size_t) a->cap * a->width);
	a->trans = palloc(sizeof(int32) * (size_t) a->cap * (a->nd + 1));
	a->accept = palloc(a->cap);
	a->live = palloc(sizeof(uint64) * a->cap);
	a->memo = palloc(sizeof(SeFuzzyMemo) * a->cap);
	initStringInfo(&a->least);
	a->hmask = 127;
	a->htab = palloc(sizeof(int32) * (a->hmask + 1));
	memset(a->htab, 0xFF, sizeof(int32) * (a->hmask + 1));
	a->scratch = palloc(a->width);
	for (j = 0; j <= a->m; j++)
		a->scratch[j] = (uint8) Min(j, a->k + 1);
	if (transpositions)
	{
		memset(a->scratch + a->m + 1, a->k + 1, a->m + 1);
		a->scratch[2 * (a->m + 1)] = (uint8) (a->nd & 0xFF);
		a->scratch[2 * (a->m + 1) + 1] = (uint8) (a->nd >> 8);
	}
	(void) intern(a, a->scratch);	/* state 0 */

	a->depth_cap = 16;
	a->st = palloc(sizeof(int32) * (a->depth_cap + 1));
	a->cand = palloc(sizeof(uint32) * a->depth_cap);
	a->cand_end = palloc(sizeof(int) * a->depth_cap);
	a->path_cap = 64;
	a->path = palloc(a->path_cap);
	a->key_cap = a->prefix_len + a->path_cap + 8;
	a->key = palloc(a->key_cap);
	return a;
}

/* Release the automaton (a walk over many segments keeps one). */
void
se_fuzzy_free(SeFuzzy *a)
{
	pfree(a->prefix);
	pfree(a->q);
	pfree(a->chars);
	pfree(a->qcls);
	pfree(a->keys);
	pfree(a->trans);
	pfree(a->accept);
	pfree(a->live);
	pfree(a->memo);
	pfree(a->least.data);
	pfree(a->htab);
	pfree(a->scratch);
	pfree(a->st);
	pfree(a->cand);
	pfree(a->cand_end);
	pfree(a->path);
	pfree(a->key);
	pfree(a);
}

/* Length in code points of the query term (for similarity). */
int
se_fuzzy_term_cps(const SeFuzzy *a)
{
	return a->prefix_cps + a->m;
}

int
se_fuzzy_distance(SeFuzzy *a, const char *term, int len)
{
	const unsigned char *u = (const unsigned char *) term;
	int32		s = 0;
	int			pos;

	if (len < a->prefix_len || memcmp(term, a->prefix, a->prefix_len) != 0)
		return -1;
	pos = a->prefix_len;
	while (pos < len)
	{
		int			l;
		uint32		c = next_cp(u + pos, len - pos, &l);

		pos += l;
		if ((s = transition(a, s, class_of(a, c))) == FZ_DEAD)
			return -1;
	}
	return a->accept[s];
}

/*
 * The least byte string above every string that starts with s[0..*len):
 * s's last byte below 0xFF incremented, the rest cut.  False when s is
 * all 0xFF (nothing sorts after its extensions).
 */
static bool
successor(char *s, int *len)
{
	int			n = *len;

	while (n > 0 && (unsigned char) s[n - 1] == 0xFF)
		n--;
	if (n == 0)
		return false;
	s[n - 1] = (char) ((unsigned char) s[n - 1] + 1);
	*len = n;
	return true;
}

/*
 * Bit i set: class i keeps state s alive (bit nd: the other class).  Built
 * once per state, for queries of at most MASK_CLASSES distinct code points.
 */
#define MASK_CLASSES	62
#define LIVE_UNKNOWN	PG_UINT64_MAX

static uint64
live_mask(SeFuzzy *a, int32 s)
{
	uint64		m = a->live[s];
	int			i;

	if (m != LIVE_UNKNOWN)
		return m;
	m = 0;
	for (i = 0; i <= a->nd; i++)
		if (transition(a, s, i) != FZ_DEAD)
			m |= UINT64CONST(1) << i;
	a->live[s] = m;
	return m;
}

/* The least code point above c of the "other" class (none: above 0x10FFFF). */
static uint32
next_other(const SeFuzzy *a, uint32 c, int lo)
{
	uint32		o = c + 1;
	int			i = lo;

	for (;;)
	{
		if (o >= 0xD800 && o <= 0xDFFF)
			o = 0xE000;			/* no surrogates */
		while (i < a->nd && a->chars[i] < o)
			i++;
		if (i < a->nd && a->chars[i] == o)
		{
			o++;
			continue;
		}
		return o;
	}
}

/*
 * The least code point above c that state s does not die on, or 0: the
 * least code point above c of the "other" class if that class lives, or
 * the least live query code point above c, whichever is smaller.
 */
static uint32
next_live_slow(SeFuzzy *a, int32 s, uint32 c)
{
	int			lo = lower_bound(a, c + 1);
	uint32		best = 0;
	uint32		o;
	int			i;

	if (a->nd <= MASK_CLASSES)
	{
		uint64		m = live_mask(a, s);
		uint64		q = (m & ((UINT64CONST(1) << a->nd) - 1)) >> lo;

		if (q != 0)
			best = a->chars[lo + pg_rightmost_one_pos64(q)];
		if ((m & (UINT64CONST(1) << a->nd)) == 0 ||
			(o = next_other(a, c, lo)) > 0x10FFFF)
			return best;
		return best != 0 && best < o ? best : o;
	}
	if ((o = next_other(a, c, lo)) <= 0x10FFFF && transition(a, s, a->nd) != FZ_DEAD)
		best = o;
	for (i = lo; i < a->nd && (best == 0 || a->chars[i] < best); i++)
	{
		if (transition(a, s, i) != FZ_DEAD)
			return a->chars[i];
	}
	return best;
}

/* Fill the state's memo of live code points (ascii, hi). */
static pg_noinline void
memo_live(SeFuzzy *a, int32 s)
{
	SeFuzzyMemo *mm;
	uint64		bits[2] = {0, 0};
	uint32		c;
	uint32		hi;

	for (c = 1; c < 128; c++)
		if (transition(a, s, a->ascii[c]) != FZ_DEAD)
			bits[c >> 6] |= UINT64CONST(1) << (c & 63);
	hi = next_live_slow(a, s, 127);
	mm = &a->memo[s];			/* transition() may have moved the array */
	mm->ascii[0] = bits[0];
	mm->ascii[1] = bits[1];
	mm->hi = hi;
	mm->live_known = true;
}

/*
 * next_live_slow's answer; below 128 from the state's memo: the next set
 * bit of its ASCII map above c, else its least live code point >= 128.
 */
static inline uint32
next_live(SeFuzzy *a, int32 s, uint32 c)
{
	SeFuzzyMemo *mm;
	uint64		w;

	if (c >= 127)
		return next_live_slow(a, s, c);
	if (unlikely(!a->memo[s].live_known))
		memo_live(a, s);
	mm = &a->memo[s];
	if (c < 64)
	{
		w = mm->ascii[0] & ~((UINT64CONST(2) << c) - 1);
		if (w != 0)
			return pg_rightmost_one_pos64(w);
		w = mm->ascii[1];
	}
	else
		w = mm->ascii[1] & ~((UINT64CONST(2) << (c - 64)) - 1);
	if (w != 0)
		return 64 + pg_rightmost_one_pos64(w);
	return mm->hi;
}

/* Make room for depth + 1 code points on the path. */
static void
reserve_depth(SeFuzzy *a, int depth)
{
	if (depth < a->depth_cap)
		return;
	a->depth_cap = Max(depth + 1, a->depth_cap * 2);
	a->st = repalloc(a->st, sizeof(int32) * (a->depth_cap + 1));
	a->cand = repalloc(a->cand, sizeof(uint32) * a->depth_cap);
	a->cand_end = repalloc(a->cand_end, sizeof(int) * a->depth_cap);
}

/* Room for n more bytes after the first len of a->key. */
static void
reserve_key(SeFuzzy *a, int len, int n)
{
	if (len + n <= a->key_cap)
		return;
	a->key_cap = Max(len + n, 2 * a->key_cap);
	a->key = repalloc(a->key, a->key_cap);
}

/*
 * Append to a->key[0..len) the least string that takes live state s to an
 * accepting one: the least live code point at each step (a live state has
 * a cell <= k, so some continuation is accepted, and the least code point
 * that keeps one so starts the least accepted continuation; a live string
 * is at most m + k code points long, so this ends).  Returns the length.
 */
static int
append_least_accepted(SeFuzzy *a, int32 s, int len)
{
	int32		s0 = s;
	int			len0 = len;

	if (a->memo[s].least_off >= 0)
	{
		int			n = a->memo[s].least_len;

		reserve_key(a, len, n);
		memcpy(a->key + len, a->least.data + a->memo[s].least_off, n);
		return len + n;
	}
	while (a->accept[s] < 0)
	{
		uint32		c = next_live(a, s, 0);

		Assert(c != 0);
		reserve_key(a, len, 4);
		unicode_to_utf8(c, (unsigned char *) a->key + len);
		len += pg_utf_mblen((unsigned char *) a->key + len);
		s = transition(a, s, class_of(a, c));
	}
	/* the same state asks again at every later dead branch: keep it */
	a->memo[s0].least_off = a->least.len;
	a->memo[s0].least_len = len - len0;
	appendBinaryStringInfo(&a->least, a->key + len0, len - len0);
	return len;
}

/*
 * The seek target after a term the automaton does not accept: the least
 * string above it that it accepts (Lucene's AutomatonTermsEnum.nextString),
 * so that the terms between are never visited.  The term's code points
 * 0..depth-1 lead to live states; with dead, the one at depth kills, and
 * from that position up the least live code point above the term's own
 * replaces it; else the term is a live start and grows.  Either way the
 * least accepted continuation follows.  A code point decoded from an
 * invalid byte skips only the strings that extend the term up to it.
 * Returns the target's length in a->key, or -1 when no later term can
 * match.
 */
static int
next_target(SeFuzzy *a, int depth, bool dead)
{
	int			d;

	if (!dead)
	{
		int			n = depth > 0 ? a->cand_end[depth - 1] : 0;

		reserve_key(a, a->prefix_len, n);
		memcpy(a->key + a->prefix_len, a->path, n);
		return append_least_accepted(a, a->st[depth], a->prefix_len + n);
	}
	for (d = depth; d >= 0; d--)
	{
		int			start = d > 0 ? a->cand_end[d - 1] : 0;
		int			l = a->cand_end[d] - start;
		uint32		c = a->cand[d];
		int			n;

		if (INVALID_CP(c, l))
		{
			n = a->prefix_len + a->cand_end[d];
			reserve_key(a, a->prefix_len, a->cand_end[d]);
			memcpy(a->key + a->prefix_len, a->path, a->cand_end[d]);
			return successor(a->key, &n) ? n : -1;
		}
		if ((c = next_live(a, a->st[d], c)) != 0)
		{
			n = a->prefix_len + start;
			reserve_key(a, n, 4);
			memcpy(a->key + a->prefix_len, a->path, start);
			unicode_to_utf8(c, (unsigned char *) a->key + n);
			n += pg_utf_mblen((unsigned char *) a->key + n);
			return append_least_accepted(a, transition(a, a->st[d], class_of(a, c)), n);
		}
	}
	return -1;
}

int64
se_fuzzy_walk(SeFuzzy *a, SeSegmentReader *r, int field, SeFuzzyTermFn fn,
			  void *arg)
{
	SeTermsEnum *e = se_segment_terms(r, field, a->prefix, a->prefix_len);
	int			path_len = 0;	/* bytes of a->path that rows are held for */
	int			depth = 0;		/* code points of the path: st[0..depth] */
	int64		visited = 0;
	const char *term;
	int			len;

	if (e == NULL)
		return 0;
	a->st[0] = 0;
	memcpy(a->key, a->prefix, a->prefix_len);
	while (se_terms_next_key(e, &term, &len))
	{
		const unsigned char *s;
		int			slen;
		int			lcp = 0;
		int			i;
		int			pos;
		int			klen;
		bool		dead = false;

		SE_SEARCH_TICK(1);
		visited++;
		if (len < a->prefix_len || memcmp(term, a->prefix, a->prefix_len) != 0)
			break;
		s = (const unsigned char *) term + a->prefix_len;
		slen = len - a->prefix_len;
		/* keep the states of the code points shared with the last term */
		while (lcp < slen && lcp < path_len && s[lcp] == (unsigned char) a->path[lcp])
			lcp++;
		i = 0;
		while (i < depth && a->cand_end[i] <= lcp)
			i++;
		pos = i > 0 ? a->cand_end[i - 1] : 0;
		while (pos < slen)
		{
			int			l;
			uint32		c = next_cp(s + pos, slen - pos, &l);
			int32		t;

			reserve_depth(a, i);
			a->cand[i] = c;
			pos += l;
			a->cand_end[i] = pos;
			t = transition(a, a->st[i], class_of(a, c));
			if (t == FZ_DEAD)
			{
				dead = true;
				break;
			}
			a->st[++i] = t;
		}
		if (pos > a->path_cap)
		{
			a->path_cap = Max(pos, 2 * a->path_cap);
			a->path = repalloc(a->path, a->path_cap);
		}
		memcpy(a->path + lcp, s + lcp, pos - Min(lcp, pos));
		path_len = pos;
		depth = i;
		if (!dead && a->accept[a->st[i]] >= 0)
		{
			SeTermInfo	ti;

			if (!se_terms_info(e, &ti))
				break;
			fn(arg, term, len, &ti, a->accept[a->st[i]]);
			continue;
		}
		/* seek to the least string after it that can match */
		if ((klen = next_target(a, i, dead)) < 0)
			break;
		se_terms_seek(e, a->key, klen);
	}
	se_terms_close(e);
	return visited;
}

/*
 * ES's "fuzziness": AUTO, AUTO:low,high or an edit distance 0, 1 or 2
 * (a number or its text).  Fills *f; false with err set otherwise.
 */
bool
se_fuzziness_parse(const SeJson *v, SeFuzziness *f, SeError *err)
{
	const char *s;
	char	   *end;
	double		d;

	memset(f, 0, sizeof(*f));
	if (v->type == SE_JSON_NUMBER)
	{
		d = v->u.n.is_int ? (double) v->u.n.i : v->u.n.d;
		s = NULL;
	}
	else if (v->type == SE_JSON_STRING)
	{
		s = v->u.s.str;
		if (pg_strcasecmp(s, "auto") == 0)
		{
			f->is_auto = true;
			f->low = 3;
			f->high = 6;
			f->set = true;
			return true;
		}
		if (pg_strncasecmp(s, "auto:", 5) == 0)
		{
			long		lo,
						hi;

			lo = strtol(s + 5, &end, 10);
			if (end == s + 5 || *end != ',')
				goto bad_auto;
			hi = strtol(end + 1, &end, 10);
			if (*end != '\0' || lo < 0 || hi < lo)
				goto bad_auto;
			f->is_auto = true;
			f->low = (int) lo;
			f->high = (int) hi;
			f->set = true;
			return true;
		}
		d = strtod(s, &end);
		if (end == s || *end != '\0')
		{
			se_error_set(err, 400, "parsing_exception",
						 "failed to parse fuzziness [%s]", s);
			return false;
		}
	}
	else
	{
		se_error_set(err, 400, "parsing_exception",
					 "fuzziness cannot be null or empty.");
		return false;
	}
	if (d != 0 && d != 1 && d != 2)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "Valid edit distances are [0, 1, 2] but was [%g]", d);
		return false;
	}
	f->edits = (int) d;
	f->set = true;
	return true;

bad_auto:
	se_error_set(err, 400, "parsing_exception",
				 "failed to find low and high distance values");
	return false;
}

/* Edits allowed for a term (ES Fuzziness.asDistance). */
int
se_fuzziness_edits(const SeFuzziness *f, const char *term, int len)
{
	int			n;

	if (!f->is_auto)
		return f->edits;
	n = count_cps(term, len);
	if (n < f->low)
		return 0;
	if (n < f->high)
		return 1;
	return 2;
}

/* Lucene FuzzyTermsEnum's boost of a term at edits from the query term. */
float
se_fuzzy_similarity(const SeFuzzy *a, const char *term, int len, int edits)
{
	int			n = Min(count_cps(term, len), se_fuzzy_term_cps(a));

	if (edits == 0)
		return 1.0f;
	if (n <= 0)
		return 0.0f;
	return 1.0f - (float) edits / (float) n;
}
