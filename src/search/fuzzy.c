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
 * the optimal string alignment distance).  Its state after reading a
 * term's first i code points is the row i of the edit-distance table,
 * every cell capped at max_edits + 1 (and, with transpositions, the row
 * before it): the states Lucene's determinized automaton encodes, built
 * lazily as terms reach them.  A state whose every cell exceeds
 * max_edits is dead: no term with that start can match.
 *
 * Intersecting it with the term dictionary is not a scan: the walk seeks
 * to the exact prefix, reuses the rows of the code points a term shares
 * with the one before it, and at a dead state seeks past every term with
 * the dead start (to the start's byte string incremented), so it visits
 * about the terms that match plus one per dead branch, as Lucene's
 * AutomatonTermsEnum does.  The work is counted for interrupt checks.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "mb/pg_wchar.h"
#include "search/search_int.h"

struct SeFuzzy
{
	int			k;				/* max edits */
	bool		transpositions;
	char	   *prefix;			/* exact start (UTF-8 bytes) */
	int			prefix_len;
	int			prefix_cps;		/* its length in code points */
	uint32	   *q;				/* query code points after the prefix */
	int			m;
	int			nrows;			/* m + k + 2: a longer term is dead */
	uint8	   *rows;			/* nrows x (m + 1), capped at k + 1 */
	uint32	   *cand;			/* the current term's code points */
	int		   *cand_end;		/* byte offset (after the prefix) past each */
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
	a->nrows = a->m + a->k + 2;
	a->rows = palloc(sizeof(uint8) * a->nrows * (a->m + 1));
	a->cand = palloc(sizeof(uint32) * a->nrows);
	a->cand_end = palloc(sizeof(int) * a->nrows);
	for (j = 0; j <= a->m; j++)
		a->rows[j] = (uint8) Min(j, a->k + 1);
	return a;
}

/* Length in code points of the query term (for similarity). */
int
se_fuzzy_term_cps(const SeFuzzy *a)
{
	return a->prefix_cps + a->m;
}

/*
 * Row i + 1 from row i after the term's code point i (a->cand[i] set);
 * returns the row's least cell.
 */
static int
step(SeFuzzy *a, int i)
{
	int			w = a->m + 1;
	const uint8 *prev = a->rows + i * w;
	const uint8 *prev2 = i > 0 ? a->rows + (i - 1) * w : NULL;
	uint8	   *row = a->rows + (i + 1) * w;
	uint32		c = a->cand[i];
	int			cap = a->k + 1;
	int			mn;
	int			j;

	row[0] = (uint8) Min(i + 1, cap);
	mn = row[0];
	for (j = 1; j <= a->m; j++)
	{
		int			d = prev[j - 1] + (a->q[j - 1] == c ? 0 : 1);

		d = Min(d, prev[j] + 1);
		d = Min(d, row[j - 1] + 1);
		if (a->transpositions && prev2 != NULL && j > 1 &&
			a->q[j - 2] == c && a->q[j - 1] == a->cand[i - 1])
			d = Min(d, prev2[j - 2] + 1);
		row[j] = (uint8) Min(d, cap);
		mn = Min(mn, row[j]);
	}
	return mn;
}

int
se_fuzzy_distance(SeFuzzy *a, const char *term, int len)
{
	const unsigned char *u = (const unsigned char *) term;
	int			i = 0;
	int			pos;
	int			d;

	if (len < a->prefix_len || memcmp(term, a->prefix, a->prefix_len) != 0)
		return -1;
	pos = a->prefix_len;
	while (pos < len)
	{
		int			l;

		if (i + 1 >= a->nrows)
			return -1;
		a->cand[i] = next_cp(u + pos, len - pos, &l);
		pos += l;
		if (step(a, i) > a->k)
			return -1;
		i++;
	}
	d = a->rows[i * (a->m + 1) + a->m];
	return d <= a->k ? d : -1;
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

/* terms stepped over before seeking past a dead start */
#define SKIP_BY_NEXT	16

int64
se_fuzzy_walk(SeFuzzy *a, SeSegmentReader *r, int field, SeFuzzyTermFn fn,
			  void *arg)
{
	SeTermsEnum *e = se_segment_terms(r, field, a->prefix, a->prefix_len);
	StringInfoData prev;		/* bytes after the prefix of the rows held */
	StringInfoData key;
	int			depth = 0;		/* rows 0..depth are those of prev */
	int64		visited = 0;
	const char *term;
	int			len;
	SeTermInfo	ti;

	bool		pending = false;	/* term holds the next term already */

	if (e == NULL)
		return 0;
	initStringInfo(&prev);
	initStringInfo(&key);
	while (pending || se_terms_next(e, &term, &len, &ti))
	{
		const unsigned char *s;
		int			slen;
		int			lcp = 0;
		int			i;
		int			pos;
		bool		dead = false;

		pending = false;
		SE_SEARCH_TICK(1);
		visited++;
		if (len < a->prefix_len || memcmp(term, a->prefix, a->prefix_len) != 0)
			break;
		s = (const unsigned char *) term + a->prefix_len;
		slen = len - a->prefix_len;
		/* keep the rows of the code points shared with the last term */
		while (lcp < slen && lcp < prev.len && s[lcp] == (unsigned char) prev.data[lcp])
			lcp++;
		i = 0;
		while (i < depth && a->cand_end[i] <= lcp)
			i++;
		pos = i > 0 ? a->cand_end[i - 1] : 0;
		while (pos < slen)
		{
			int			l;

			if (i + 1 >= a->nrows)
			{
				/* longer than m + k: dead (its row would be over k) */
				(void) next_cp(s + pos, slen - pos, &l);
				pos += l;
				dead = true;
				break;
			}
			a->cand[i] = next_cp(s + pos, slen - pos, &l);
			pos += l;
			a->cand_end[i] = pos;
			SE_SEARCH_TICK(1);
			if (step(a, i++) > a->k)
			{
				dead = true;
				break;
			}
		}
		resetStringInfo(&prev);
		appendBinaryStringInfo(&prev, (const char *) s, pos);
		depth = i;
		if (dead)
		{
			int			klen;

			/* skip every term starting as this one does up to pos */
			resetStringInfo(&key);
			appendBinaryStringInfo(&key, a->prefix, a->prefix_len);
			appendBinaryStringInfo(&key, (const char *) s, pos);
			klen = key.len;
			if (!successor(key.data, &klen))
				break;

			/*
			 * Most dead starts have few terms: the next ones in the block
			 * are usually past them already, far cheaper than a seek (which
			 * steps through its block the same way; neither counts as a
			 * visit).
			 */
			for (i = 0; i < SKIP_BY_NEXT && !pending; i++)
			{
				int			c;

				if (!se_terms_next(e, &term, &len, &ti))
					goto done;
				SE_SEARCH_TICK(1);
				c = memcmp(term, key.data, Min(len, klen));
				if (c > 0 || (c == 0 && len >= klen))
					pending = true;
			}
			if (pending)
				continue;
			se_terms_close(e);
			e = se_segment_terms(r, field, key.data, klen);
			if (e == NULL)
				break;
			continue;
		}
		{
			int			d = a->rows[i * (a->m + 1) + a->m];

			if (d <= a->k)
				fn(arg, term, len, &ti, d);
		}
	}
done:
	se_terms_close(e);
	pfree(prev.data);
	pfree(key.data);
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
