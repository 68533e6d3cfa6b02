/*-------------------------------------------------------------------------
 *
 * postings.c
 *	  Postings format v1: encoder (segment writer side), term meta coding
 *	  and the SePostings iterator.
 *
 * Doc stream of a term (POSTINGS section), one entry per doc:
 *	 SE_IDX_DOCS:	varint delta
 *	 otherwise:		varint (delta << 1 | freq == 1), then varint freq if != 1
 * where delta = doc - previous doc and the first doc's previous is -1, so a
 * valid delta is always >= 1.  Positions (POSITIONS section) are, per doc,
 * freq varints of position deltas starting from 0.
 *
 * Term meta, stored right after the term bytes in the term dictionary:
 *	 varint doc_freq; varint total_term_freq - doc_freq (if freqs);
 *	 varint doc (doc_freq == 1, the doc stream is omitted) or the offset of
 *	 the doc stream in the field's POSTINGS region; varint offset of the
 *	 positions in the field's POSITIONS region (if positions).
 * Inlining singletons keeps the _id field (one doc per term) small and
 * makes _id lookups a single dictionary probe.
 *
 * The iterator validates everything it decodes: deltas must be >= 1 and
 * docs < max_doc, so docs are strictly increasing and iteration ends even
 * on garbage; anything else marks the reader corrupted and ends the
 * iteration.  advance() is linear in v1.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment_internal.h"

struct SePostings
{
	SeSegmentReader *r;
	int			field;
	SeIndexOptions io;
	bool		positions;		/* positions requested and present */
	const uint8 *p;				/* doc stream */
	const uint8 *end;
	const uint8 *pp;			/* positions stream */
	const uint8 *pend;
	int32		doc;
	int32		freq;
	uint32		left;			/* docs not yet returned */
	int64		cost;
	bool		singleton;
	int32		singleton_doc;
	int32		singleton_freq;
	/* positions are decoded lazily; pos_skip counts those of passed docs */
	uint64		pos_skip;
	bool		pos_started;
	int32		pos_left;
	int64		last_pos;
};

/* ---------------------------------------------------------------------
 * Encoder
 * ---------------------------------------------------------------------
 */

void
se_postenc_term_begin(SePostingsEnc *e)
{
	e->term_docs_start = e->docs->len;
	e->term_pos_start = e->pos->len;
	e->last_doc = -1;
	e->last_pos = 0;
	e->first_doc = -1;
	e->freq = 0;
	e->pos_left = 0;
	e->doc_freq = 0;
	e->total_term_freq = 0;
}

/* Pad missing positions of the current doc so the stream stays aligned. */
static void
finish_doc_positions(SePostingsEnc *e)
{
	while (e->pos_left > 0)
	{
		se_put_vint_fast(e->pos, 0);
		e->pos_left--;
	}
}

/* Docs must come strictly ascending; others are ignored by the caller. */
void
se_postenc_doc(SePostingsEnc *e, int32 doc, uint32 freq)
{
	uint64		delta = (uint64) ((int64) doc - e->last_doc);

	if (e->io == SE_IDX_POSITIONS)
		finish_doc_positions(e);
	if (e->io == SE_IDX_DOCS || freq == 0)
		freq = 1;
	if (e->io == SE_IDX_DOCS)
		se_put_vint_fast(e->docs, delta);
	else
	{
		se_put_vint_fast(e->docs, (delta << 1) | (freq == 1 ? 1 : 0));
		if (freq != 1)
			se_put_vint_fast(e->docs, freq);
	}
	if (e->first_doc < 0)
		e->first_doc = doc;
	e->last_doc = doc;
	e->last_pos = 0;
	e->freq = freq;
	e->pos_left = (e->io == SE_IDX_POSITIONS) ? freq : 0;
	e->doc_freq++;
	e->total_term_freq += freq;
}

/* Positions of the current doc, nondecreasing; extra ones are dropped. */
void
se_postenc_pos(SePostingsEnc *e, int32 pos)
{
	if (e->pos_left == 0)
		return;
	if (pos < e->last_pos)
		pos = e->last_pos;
	se_put_vint_fast(e->pos, (uint64) (pos - e->last_pos));
	e->last_pos = pos;
	e->pos_left--;
}

void
se_postenc_term_end(SePostingsEnc *e, StringInfo meta_out)
{
	if (e->io == SE_IDX_POSITIONS)
		finish_doc_positions(e);
	if (e->doc_freq == 0)
	{
		e->docs->len = e->term_docs_start;
		e->pos->len = e->term_pos_start;
		return;
	}
	se_put_vint_fast(meta_out, e->doc_freq);
	if (e->io != SE_IDX_DOCS)
		se_put_vint_fast(meta_out, e->total_term_freq - e->doc_freq);
	if (e->doc_freq == 1)
	{
		/* singleton: the doc lives in the dictionary, drop the stream */
		e->docs->len = e->term_docs_start;
		se_put_vint_fast(meta_out, (uint64) e->first_doc);
	}
	else
		se_put_vint_fast(meta_out, (uint64) (e->term_docs_start - e->docs_base));
	if (e->io == SE_IDX_POSITIONS)
		se_put_vint_fast(meta_out, (uint64) (e->term_pos_start - e->pos_base));
}

/* ---------------------------------------------------------------------
 * Term meta decoding
 * ---------------------------------------------------------------------
 */

bool
se_postings_decode_meta(SeSegmentReader *r, int field, const uint8 *p,
						const uint8 *end, SeTermInfo *ti)
{
	SeFieldR   *f = &r->fields[field];
	uint64		df,
				extra = 0,
				loc,
				ploc = 0;

	if (!se_dec_vint(&p, end, &df) ||
		(f->io != SE_IDX_DOCS && !se_dec_vint(&p, end, &extra)) ||
		!se_dec_vint(&p, end, &loc) ||
		(f->io == SE_IDX_POSITIONS && !se_dec_vint(&p, end, &ploc)))
		goto bad;
	if (df == 0 || df > r->max_doc || extra > (uint64) PG_INT64_MAX - df)
		goto bad;
	if (df == 1)
	{
		if (loc >= r->max_doc || df + extra > (uint64) PG_INT32_MAX)
			goto bad;
	}
	else if (loc >= f->post_len)
		goto bad;
	if (f->io == SE_IDX_POSITIONS && ploc > f->pos_len)
		goto bad;
	ti->doc_freq = (int32) df;
	ti->total_term_freq = (int64) (df + extra);
	ti->postings_offset = loc;
	ti->positions_offset = ploc;
	ti->field = field;
	return true;

bad:
	se_segment_corrupt(r, "terms", "field [%s]: invalid term metadata",
					   f->name);
	return false;
}

/* ---------------------------------------------------------------------
 * Iterator
 * ---------------------------------------------------------------------
 */

static void
postings_corrupt(SePostings *p, const char *what)
{
	se_segment_corrupt(p->r, "postings", "field [%s]: %s",
					   p->r->fields[p->field].name, what);
	p->doc = SE_NO_MORE_DOCS;
	p->left = 0;
	p->freq = 1;
	p->pos_left = 0;
	p->positions = false;
}

SePostings *
se_postings_open(SeSegmentReader *r, const SeTermInfo *ti, bool with_positions)
{
	SePostings *p = palloc0(sizeof(SePostings));
	SeFieldR   *f;

	p->r = r;
	p->doc = -1;
	p->freq = 1;
	p->pos_left = 0;
	p->left = 0;
	if (r == NULL || ti == NULL || ti->field < 0 || ti->field >= r->nfields ||
		ti->doc_freq <= 0 || (uint32) ti->doc_freq > r->max_doc)
		return p;				/* empty iterator */
	f = &r->fields[ti->field];
	p->field = ti->field;
	p->io = f->io;
	p->left = (uint32) ti->doc_freq;
	p->cost = ti->doc_freq;
	if (ti->doc_freq == 1)
	{
		if (ti->postings_offset >= r->max_doc ||
			ti->total_term_freq < 1 || ti->total_term_freq > PG_INT32_MAX)
		{
			p->left = 0;
			return p;
		}
		p->singleton = true;
		p->singleton_doc = (int32) ti->postings_offset;
		p->singleton_freq = (f->io == SE_IDX_DOCS) ? 1 : (int32) ti->total_term_freq;
	}
	else
	{
		if (ti->postings_offset >= f->post_len)
		{
			p->left = 0;
			return p;
		}
		p->p = f->post + ti->postings_offset;
		p->end = f->post + f->post_len;
	}
	if (with_positions && f->io == SE_IDX_POSITIONS)
	{
		if (ti->positions_offset > f->pos_len)
		{
			p->left = 0;
			return p;
		}
		p->positions = true;
		p->pp = f->pos + ti->positions_offset;
		p->pend = f->pos + f->pos_len;
	}
	return p;
}

int32
se_postings_doc(SePostings *p)
{
	return p->doc;
}

int32
se_postings_next(SePostings *p)
{
	uint64		code;
	uint64		freq = 1;
	int64		doc;

	if (p->left == 0)
	{
		p->doc = SE_NO_MORE_DOCS;
		return p->doc;
	}
	if (p->positions && p->doc >= 0)
		p->pos_skip += p->pos_started ? (uint64) p->pos_left : (uint64) p->freq;
	p->left--;
	if (p->singleton)
	{
		p->doc = p->singleton_doc;
		p->freq = p->singleton_freq;
	}
	else
	{
		if (!se_dec_vint(&p->p, p->end, &code))
		{
			postings_corrupt(p, "truncated doc stream");
			return p->doc;
		}
		if (p->io != SE_IDX_DOCS)
		{
			if ((code & 1) == 0 &&
				(!se_dec_vint(&p->p, p->end, &freq) || freq == 0 ||
				 freq > PG_INT32_MAX))
			{
				postings_corrupt(p, "invalid term frequency");
				return p->doc;
			}
			code >>= 1;
		}
		doc = (int64) p->doc + (int64) Min(code, (uint64) PG_INT32_MAX + 1);
		if (code == 0 || doc >= (int64) p->r->max_doc)
		{
			postings_corrupt(p, "invalid doc delta");
			return p->doc;
		}
		p->doc = (int32) doc;
		p->freq = (int32) freq;
	}
	p->pos_started = false;
	p->pos_left = p->freq;
	return p->doc;
}

/* Linear in v1; the block format brings skip data. */
int32
se_postings_advance(SePostings *p, int32 target)
{
	while (p->doc < target)
		se_postings_next(p);
	return p->doc;
}

int32
se_postings_freq(SePostings *p)
{
	return p->freq;
}

int32
se_postings_next_position(SePostings *p)
{
	uint64		delta;

	if (!p->positions || p->doc < 0 || p->doc == SE_NO_MORE_DOCS)
		return -1;
	if (!p->pos_started)
	{
		/* skip the positions of the docs passed over since the last read */
		while (p->pos_skip > 0)
		{
			if (p->pp >= p->pend)
			{
				postings_corrupt(p, "truncated positions");
				return -1;
			}
			if (*p->pp++ < 0x80)
				p->pos_skip--;
		}
		p->pos_started = true;
		p->last_pos = 0;
	}
	if (p->pos_left <= 0)
		return -1;
	if (!se_dec_vint(&p->pp, p->pend, &delta) ||
		delta > (uint64) (PG_INT32_MAX - p->last_pos))
	{
		postings_corrupt(p, "invalid position");
		return -1;
	}
	p->last_pos += (int64) delta;
	p->pos_left--;
	return (int32) p->last_pos;
}

int64
se_postings_cost(SePostings *p)
{
	return p->cost;
}

void
se_postings_close(SePostings *p)
{
	if (p)
		pfree(p);
}
