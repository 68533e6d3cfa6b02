/*-------------------------------------------------------------------------
 *
 * dfs.c
 *	  The DFS phase of dfs_query_then_fetch: the term and field statistics
 *	  a query scores with, gathered per shard, summed over all shards, and
 *	  handed to every shard's query phase as global statistics.
 *
 * A shard's statistics are what its weights read (weight.c records them
 * while it builds the query's weight tree in "collect" mode, as ES's
 * DfsPhase lets Lucene's createWeight ask a collecting searcher): per term
 * that a BM25 weight scores with, its doc_freq and total_term_freq; per
 * field of such a term, doc_count, sum_total_term_freq (as Lucene reports
 * it: sum_doc_freq for fields without freqs) and sum_doc_freq; and the
 * shard's max_doc.  Filters and constant-score queries ask for none, as
 * Lucene's weights do not when scores are not needed.  Summed over shards
 * (deleted docs included, as Lucene counts them), these are the statistics
 * of one shard holding every doc, so scores equal that shard's.
 *
 * Entries are kept sorted by (field, term) and unique, so two sets add up
 * in one merge and the query phase finds a term by binary search.  The
 * encoding (varints, lengths before bytes) does not depend on the
 * sender's layout; a decoder checks every bound and refuses a malformed
 * message rather than scoring with half of one.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "search/search_int.h"
#include "util/varint.h"

#define DFS_WIRE_VERSION	1

SeDfsStats *
se_dfs_stats_create(void)
{
	return palloc0(sizeof(SeDfsStats));
}

/* Order of terms: by field, then by term bytes (shorter first on a tie). */
static int
term_cmp(const char *fa, const char *ta, int la, const char *fb, const char *tb, int lb)
{
	int			c = strcmp(fa, fb);

	if (c != 0)
		return c;
	c = memcmp(ta, tb, Min(la, lb));
	if (c != 0)
		return c;
	return la < lb ? -1 : la > lb ? 1 : 0;
}

static int
term_qsort_cmp(const void *a, const void *b)
{
	const SeDfsTerm *x = a;
	const SeDfsTerm *y = b;

	return term_cmp(x->field, x->term, x->len, y->field, y->term, y->len);
}

static int
field_qsort_cmp(const void *a, const void *b)
{
	return strcmp(((const SeDfsField *) a)->field, ((const SeDfsField *) b)->field);
}

void
se_dfs_record_term(SeDfsStats *s, const char *field, const char *term, int len,
				   int64 doc_freq, int64 total_term_freq)
{
	SeDfsTerm  *t;

	if (s->nterms == s->terms_cap)
	{
		s->terms_cap = s->terms_cap ? s->terms_cap * 2 : 16;
		s->terms = s->terms ? repalloc(s->terms, sizeof(SeDfsTerm) * s->terms_cap)
			: palloc(sizeof(SeDfsTerm) * s->terms_cap);
	}
	t = &s->terms[s->nterms++];
	t->field = pstrdup(field);
	t->term = palloc(len + 1);
	memcpy(t->term, term, len);
	t->term[len] = '\0';
	t->len = len;
	t->doc_freq = doc_freq;
	t->total_term_freq = total_term_freq;
}

void
se_dfs_record_field(SeDfsStats *s, const char *field, const SeFieldStats *st)
{
	SeDfsField *f;

	if (s->nfields == s->fields_cap)
	{
		s->fields_cap = s->fields_cap ? s->fields_cap * 2 : 8;
		s->fields = s->fields ? repalloc(s->fields, sizeof(SeDfsField) * s->fields_cap)
			: palloc(sizeof(SeDfsField) * s->fields_cap);
	}
	f = &s->fields[s->nfields++];
	f->field = pstrdup(field);
	f->stats = *st;
}

/*
 * Sort the entries and make them unique.  sum: equal keys are different
 * shards' figures and add up; otherwise they are one shard's figures
 * recorded twice (a term in two clauses) and one of them stays.
 */
static void
normalize(SeDfsStats *s, bool sum)
{
	int			i,
				n;

	if (s->nterms > 1)
	{
		qsort(s->terms, s->nterms, sizeof(SeDfsTerm), term_qsort_cmp);
		for (i = 1, n = 1; i < s->nterms; i++)
		{
			SeDfsTerm  *last = &s->terms[n - 1];
			SeDfsTerm  *t = &s->terms[i];

			if (term_qsort_cmp(last, t) == 0)
			{
				if (sum)
				{
					last->doc_freq += t->doc_freq;
					last->total_term_freq += t->total_term_freq;
				}
				continue;
			}
			s->terms[n++] = *t;
		}
		s->nterms = n;
	}
	if (s->nfields > 1)
	{
		qsort(s->fields, s->nfields, sizeof(SeDfsField), field_qsort_cmp);
		for (i = 1, n = 1; i < s->nfields; i++)
		{
			SeDfsField *last = &s->fields[n - 1];
			SeDfsField *f = &s->fields[i];

			if (strcmp(last->field, f->field) == 0)
			{
				if (sum)
				{
					last->stats.doc_count += f->stats.doc_count;
					last->stats.sum_total_term_freq += f->stats.sum_total_term_freq;
					last->stats.sum_doc_freq += f->stats.sum_doc_freq;
				}
				continue;
			}
			s->fields[n++] = *f;
		}
		s->nfields = n;
	}
}

/* One shard's statistics, recorded while building its weights: unique. */
void
se_dfs_stats_finish_shard(SeDfsStats *s)
{
	normalize(s, false);
}

void
se_dfs_stats_add(SeDfsStats *into, const SeDfsStats *from)
{
	int			i;

	into->max_doc += from->max_doc;
	for (i = 0; i < from->nterms; i++)
	{
		const SeDfsTerm *t = &from->terms[i];

		se_dfs_record_term(into, t->field, t->term, t->len, t->doc_freq,
						   t->total_term_freq);
	}
	for (i = 0; i < from->nfields; i++)
		se_dfs_record_field(into, from->fields[i].field, &from->fields[i].stats);
	normalize(into, true);
}

const SeDfsTerm *
se_dfs_find_term(const SeDfsStats *s, const char *field, const char *term, int len)
{
	int			lo = 0,
				hi = s->nterms - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		const SeDfsTerm *t = &s->terms[mid];
		int			c = term_cmp(t->field, t->term, t->len, field, term, len);

		if (c == 0)
			return t;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

const SeDfsField *
se_dfs_find_field(const SeDfsStats *s, const char *field)
{
	int			lo = 0,
				hi = s->nfields - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(s->fields[mid].field, field);

		if (c == 0)
			return &s->fields[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

void
se_dfs_stats_encode(const SeDfsStats *s, StringInfo out)
{
	int			i;

	se_put_vint(out, DFS_WIRE_VERSION);
	se_put_svint(out, s->max_doc);
	se_put_vint(out, (uint64) s->nfields);
	for (i = 0; i < s->nfields; i++)
	{
		const SeDfsField *f = &s->fields[i];

		se_put_str(out, f->field, strlen(f->field));
		se_put_svint(out, f->stats.doc_count);
		se_put_svint(out, f->stats.sum_total_term_freq);
		se_put_svint(out, f->stats.sum_doc_freq);
	}
	se_put_vint(out, (uint64) s->nterms);
	for (i = 0; i < s->nterms; i++)
	{
		const SeDfsTerm *t = &s->terms[i];

		se_put_str(out, t->field, strlen(t->field));
		se_put_str(out, t->term, t->len);
		se_put_svint(out, t->doc_freq);
		se_put_svint(out, t->total_term_freq);
	}
}

/* Statistics encoded by se_dfs_stats_encode; NULL when malformed. */
SeDfsStats *
se_dfs_stats_decode(const char *data, size_t len)
{
	SeWireReader r;
	SeDfsStats *s = se_dfs_stats_create();
	uint64		n;
	uint64		i;

	se_wire_init(&r, data, len);
	if (se_wire_vint(&r) != DFS_WIRE_VERSION)
		return NULL;
	s->max_doc = se_wire_svint(&r);
	/* every entry takes at least 4 bytes: no allocation beyond the message */
	n = se_wire_vint(&r);
	if (r.bad || n > len / 4)
		return NULL;
	for (i = 0; i < n && !r.bad; i++)
	{
		SeFieldStats st;
		char	   *field = se_wire_str(&r, NULL);

		st.doc_count = se_wire_svint(&r);
		st.sum_total_term_freq = se_wire_svint(&r);
		st.sum_doc_freq = se_wire_svint(&r);
		if (field == NULL || st.doc_count < 0 || st.sum_total_term_freq < 0 ||
			st.sum_doc_freq < 0)
			return NULL;
		se_dfs_record_field(s, field, &st);
	}
	n = se_wire_vint(&r);
	if (r.bad || n > len / 4)
		return NULL;
	for (i = 0; i < n && !r.bad; i++)
	{
		int			tlen;
		char	   *field = se_wire_str(&r, NULL);
		char	   *term = se_wire_str(&r, &tlen);
		int64		df = se_wire_svint(&r);
		int64		ttf = se_wire_svint(&r);

		if (field == NULL || term == NULL || df < 0 || ttf < 0)
			return NULL;
		se_dfs_record_term(s, field, term, tlen, df, ttf);
	}
	if (r.bad || r.p != r.end || s->max_doc < 0)
		return NULL;
	/* a sender's set is unique already; summing makes any set one */
	normalize(s, true);
	return s;
}

/*
 * The DFS phase of one shard: add the statistics req's query scores with
 * on shard to into.  false with err set when the query cannot be built
 * there (its query phase would fail the same way).
 */
bool
se_search_dfs_phase(SeSearchRequest *req, SeSearchShard *shard, SeDfsStats *into,
					SeError *err)
{
	SeDfsStats *mine = se_dfs_stats_create();
	int			s;

	se_search_stop_disarm();	/* none is left over from an ereport */
	if (se_weight_build(req->query, shard, true, NULL, mine, err) == NULL)
		return false;
	for (s = 0; s < shard->nsegments; s++)
		mine->max_doc += se_segment_max_doc(shard->segments[s]);
	se_dfs_stats_finish_shard(mine);
	se_dfs_stats_add(into, mine);
	return true;
}

void
se_search_set_dfs(SeSearchRequest *req, const SeDfsStats *global)
{
	req->dfs = global;
}
