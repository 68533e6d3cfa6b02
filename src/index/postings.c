/*-------------------------------------------------------------------------
 *
 * postings.c
 *	  Postings format v2: block encoder (segment writer side), term meta
 *	  coding and the SePostings iterator with skip data and impacts.
 *
 * A term's documents are cut into blocks of SE_POSTINGS_BLOCK (128) docs;
 * the last block may be shorter (the tail).  The doc stream of a term with
 * doc_freq > 1 (POSTINGS section) is
 *
 *	 varint skip_len, skip region (skip_len bytes), block 0, block 1, ...
 *
 * The skip region starts with the term's impacts (as below, fields with
 * freqs or norms only): the competitive pairs over all its docs.  Then
 * comes one skip entry per block (tail included):
 *	 varint last doc - last doc of the previous block (-1 before block 0);
 *	 varint byte length of the block in the doc stream;
 *	 varint byte length of its positions (positions fields only);
 *	 impacts (fields with freqs or norms): varint count k (1..8), then k
 *	 (freq, norm) pairs, freq and norm both ascending: varint freq delta
 *	 - 1 (from 0; fields with freqs) and u8 norm delta (- 1 after the
 *	 first; fields with norms).
 * From segment format v4 on, a term of more than SE_POSTINGS_GROUP (32)
 * blocks has a second level: its skip entries come in groups of 32 blocks
 * (the last group may be shorter), each group preceded by a group entry:
 *	 varint last doc of the group - last doc of the previous group (-1
 *	 before the first);
 *	 varint byte length of the group's skip entries that follow;
 *	 varint byte length of its blocks in the doc stream;
 *	 varint byte length of its positions (positions fields only);
 *	 its impacts, as above (the competitive pairs of its blocks' pairs).
 * A cursor looking for a later doc passes over a whole group (4096 docs)
 * without decoding its 32 entries, and the group's impacts bound the
 * scores of all its docs, so top-k scorers can skip a group at once
 * (Lucene keeps impacts on its skip levels for the same reason).  Terms
 * of at most 32 blocks, and v3 segments, have no groups.
 * A full block holds its 128 doc deltas minus 1 and then (fields with
 * freqs) its 128 freqs minus 1, each as a patched frame of reference
 * (PFOR): u8 bit width b, u8 number of exceptions, 128 values of b bits
 * packed little-endian (16 * b bytes), then per exception u8 index and
 * varint (value >> b), the bits that did not fit.  b is chosen to
 * minimize the size.  A tail block is varints as in v1: per doc
 * (delta << 1 | freq == 1) then freq if != 1, or the bare delta for
 * docs-only fields.  Deltas are from the previous doc (-1 before the
 * first), so a valid delta is >= 1.
 *
 * Positions (POSITIONS section) are, per doc, freq varints of position
 * deltas starting from 0, blocks following each other; a skip entry's
 * positions length lets advance() jump over them.  They are decoded
 * lazily, only when asked for: an iterator opened without positions never
 * touches the section.
 *
 * Term meta, stored after each term in its term-dictionary block:
 *	 varint doc_freq; varint total_term_freq - doc_freq (if freqs);
 *	 varint doc (doc_freq == 1, the doc stream is omitted) or the offset of
 *	 the doc stream in the field's POSTINGS region; varint offset of the
 *	 positions in the field's POSITIONS region (if positions); and for
 *	 doc_freq > 1 the term's impact: varint max freq - 1 (if freqs), u8
 *	 min norm (if norms).  A singleton's impact is its own freq and norm.
 * Inlining singletons keeps the _id field (one doc per term) small and
 * makes _id lookups a single dictionary probe.
 *
 * Impacts: the norm byte is SmallFloat of the field length, so BM25 grows
 * with freq and falls with the norm byte.  A block's impacts are the
 * competitive (freq, norm) pairs of its docs -- those no other doc beats
 * on both -- so that every doc has freq <= f and norm >= n for one of
 * them and the best of their scores bounds the block.  (max freq, min
 * norm) alone would be much looser: nearly every block has a short doc
 * and a doc with a high freq.  Past 8 pairs, neighbours merge into one
 * pair that dominates both.  The writer reads the norms it was given
 * before the field's terms (builder and merge set norms first); a norm
 * not yet known counts as 0, which only loosens the bound.
 *
 * The iterator validates everything it decodes: deltas >= 1, docs <
 * max_doc, skip entries consistent with the blocks they describe, region
 * bounds; anything else marks the reader corrupted and ends the iteration.
 * Two skip cursors walk the skip table forward: one serves advance(), the
 * other advance_shallow() and the block impacts, so scorers can look at
 * impacts ahead of the doc they are on.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "port/pg_bitutils.h"
#ifdef WORDS_BIGENDIAN
#include "port/pg_bswap.h"
#endif

#include "index/segment_internal.h"

#define BLOCK			SE_POSTINGS_BLOCK
#define GROUP			SE_POSTINGS_GROUP
/* bytes a fast unpack may read past the packed values */
#define UNPACK_SLACK	8

typedef struct SkipCursor
{
	const uint8 *p;				/* next entry to decode */
	int32		block;			/* current entry: -1 before, nblocks after */
	int32		prev_last;		/* last doc of the block before */
	int32		last;			/* last doc of this block */
	uint64		doc_off;		/* block start, from the first block */
	uint64		doc_len;
	uint64		pos_off;		/* block positions start, from the term's */
	uint64		pos_len;
	int			nimpacts;
	SeImpact	impacts[SE_MAX_IMPACTS];
	/* the group whose entry was read last (terms with groups only) */
	int32		group_end;		/* its last block; -1 before the first */
	int32		group_prev_last;	/* last doc before it */
	int32		group_last;
	const uint8 *group_entries_end;
	uint64		group_doc_end;	/* its blocks' end, from the first block */
	uint64		group_pos_end;
	int			group_nimpacts;
	SeImpact	group_impacts[SE_MAX_IMPACTS];
} SkipCursor;

struct SePostings
{
	SeSegmentReader *r;
	int			field;
	SeIndexOptions io;
	bool		norms;			/* field has norms (impacts carry them) */
	bool		positions;		/* positions requested and present */
	bool		singleton;
	bool		groups;			/* the skip entries come in groups */
	int32		df;
	int32		nblocks;
	int64		cost;
	/* term-level impacts */
	int32		term_max_freq;
	uint8		term_min_norm;
	int			nterm_impacts;
	SeImpact	term_impacts[SE_MAX_IMPACTS];
	/* doc stream */
	const uint8 *skip;			/* first skip entry */
	const uint8 *skip_end;
	const uint8 *blocks;		/* block 0 */
	const uint8 *end;			/* end of the field's region */
	/* the decoded block */
	int32		cur_block;		/* -1 = none yet */
	int32		bcount;			/* docs in it */
	int32		bi;				/* index of the current doc */
	const uint8 *next_block;	/* where block cur_block + 1 starts */
	const uint8 *freq_src;		/* packed freqs not yet decoded, or NULL */
	int32		doc;
	/* positions, decoded lazily; pos_skip counts those of passed docs */
	const uint8 *pos_start;
	const uint8 *pp;
	const uint8 *pend;
	uint64		pos_skip;
	bool		pos_started;
	int32		pos_left;
	int64		last_pos;
	SkipCursor	adv;			/* drives advance() */
	SkipCursor	shallow;		/* drives advance_shallow() */
	SkipCursor	gcur;			/* drives group_impacts(): groups only */
	int32		docs[BLOCK];
	int32		freqs[BLOCK];
};

/* ---------------------------------------------------------------------
 * Bit packing
 * ---------------------------------------------------------------------
 */
static inline uint64
load_le64(const uint8 *p)
{
	uint64		v;

	memcpy(&v, p, sizeof(v));
#ifdef WORDS_BIGENDIAN
	v = pg_bswap64(v);
#endif
	return v;
}

static inline int
bit_length(uint32 v)
{
	return v == 0 ? 0 : pg_leftmost_one_pos32(v) + 1;
}

static inline int
vint_len(uint64 v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* Append BLOCK values as PFOR (see the file header). */
static void
pfor_encode(StringInfo out, const uint32 *v)
{
	int			nb[33] = {0};
	int			b,
				best_b,
				best_cost;
	int			i,
				k;
	int			nexc = 0;
	uint64		mask;
	uint64		acc = 0;
	int			nacc = 0;
	uint8	   *dst;
	int			maxb = 0;

	for (i = 0; i < BLOCK; i++)
	{
		int			bl = bit_length(v[i]);

		nb[bl]++;
		maxb = Max(maxb, bl);
	}

	/*
	 * Widths from maxb up cost 16 * b, no exceptions: maxb is the best of
	 * them.  Narrower ones may do better (a tie keeps the wider, as the
	 * search from 31 down always did), and their exceptions have at most
	 * maxb bits: a handful of steps instead of 528.
	 */
	best_b = maxb;
	best_cost = 16 * maxb;
	for (b = maxb - 1; b >= 0; b--)
	{
		int			cost = 16 * b;

		for (k = b + 1; k <= maxb; k++)
			cost += nb[k] * (1 + (k - b + 6) / 7);
		if (cost < best_cost)
		{
			best_cost = cost;
			best_b = b;
		}
	}
	b = best_b;
	for (k = b + 1; k <= 32; k++)
		nexc += nb[k];
	mask = (b == 32) ? 0xFFFFFFFFU : (((uint64) 1 << b) - 1);

	enlargeStringInfo(out, 2 + 16 * b);
	dst = (uint8 *) out->data + out->len;
	*dst++ = (uint8) b;
	*dst++ = (uint8) nexc;
	if (b > 0)
	{
		for (i = 0; i < BLOCK; i++)
		{
			acc |= ((uint64) v[i] & mask) << nacc;
			nacc += b;
			while (nacc >= 8)
			{
				*dst++ = (uint8) acc;
				acc >>= 8;
				nacc -= 8;
			}
		}
	}
	out->len = (int) ((char *) dst - out->data);
	out->data[out->len] = '\0';
	if (nexc > 0)
	{
		for (i = 0; i < BLOCK; i++)
			if (bit_length(v[i]) > b)
			{
				uint8		idx = (uint8) i;

				appendBinaryStringInfo(out, (const char *) &idx, 1);
				se_put_vint_fast(out, (uint64) (v[i] >> b));
			}
	}
}

/* Unpack BLOCK values of B bits; in must have 16 * B + UNPACK_SLACK bytes. */
#define UNPACK_CASE(B) \
	case B: \
		for (g = 0; g < BLOCK / 8; g++) \
		{ \
			const uint8 *src = in + g * (B); \
			uint32	   *o = out + g * 8; \
			int			j; \
			for (j = 0; j < 8; j++) \
				o[j] = (uint32) ((load_le64(src + ((j * (B)) >> 3)) >> \
								  ((j * (B)) & 7)) & (((uint64) 1 << (B)) - 1)); \
		} \
		break

static void
unpack_bits(const uint8 *in, int b, uint32 *out)
{
	int			g;

	switch (b)
	{
			UNPACK_CASE(1);
			UNPACK_CASE(2);
			UNPACK_CASE(3);
			UNPACK_CASE(4);
			UNPACK_CASE(5);
			UNPACK_CASE(6);
			UNPACK_CASE(7);
			UNPACK_CASE(8);
			UNPACK_CASE(9);
			UNPACK_CASE(10);
			UNPACK_CASE(11);
			UNPACK_CASE(12);
			UNPACK_CASE(13);
			UNPACK_CASE(14);
			UNPACK_CASE(15);
			UNPACK_CASE(16);
			UNPACK_CASE(17);
			UNPACK_CASE(18);
			UNPACK_CASE(19);
			UNPACK_CASE(20);
			UNPACK_CASE(21);
			UNPACK_CASE(22);
			UNPACK_CASE(23);
			UNPACK_CASE(24);
			UNPACK_CASE(25);
			UNPACK_CASE(26);
			UNPACK_CASE(27);
			UNPACK_CASE(28);
			UNPACK_CASE(29);
			UNPACK_CASE(30);
			UNPACK_CASE(31);
			UNPACK_CASE(32);
		default:
			memset(out, 0, sizeof(uint32) * BLOCK);
			break;
	}
}

/* Decode BLOCK PFOR values at *pp (bounded by end); false if malformed. */
static bool
pfor_decode(const uint8 **pp, const uint8 *end, uint32 *out)
{
	const uint8 *p = *pp;
	int			b,
				nexc,
				i;
	uint64		packed;

	if (end - p < 2)
		return false;
	b = p[0];
	nexc = p[1];
	p += 2;
	packed = 16 * (uint64) b;
	if (b > 32 || nexc > BLOCK || (uint64) (end - p) < packed ||
		(b == 32 && nexc > 0))
		return false;
	if (b == 0)
		memset(out, 0, sizeof(uint32) * BLOCK);
	else if ((uint64) (end - p) >= packed + UNPACK_SLACK)
		unpack_bits(p, b, out);
	else
	{
		uint8		tmp[16 * 32 + UNPACK_SLACK];

		memcpy(tmp, p, packed);
		memset(tmp + packed, 0, UNPACK_SLACK);
		unpack_bits(tmp, b, out);
	}
	p += packed;
	for (i = 0; i < nexc; i++)
	{
		uint64		high;
		int			idx;

		if (p >= end)
			return false;
		idx = *p++;
		if (idx >= BLOCK || !se_dec_vint(&p, end, &high) ||
			high == 0 || high >= ((uint64) 1 << (32 - b)))
			return false;
		out[idx] |= (uint32) (high << b);
	}
	*pp = p;
	return true;
}

/* Step over a PFOR run without unpacking it. */
static bool
pfor_skip(const uint8 **pp, const uint8 *end)
{
	const uint8 *p = *pp;
	int			b,
				nexc,
				i;
	uint64		v;

	if (end - p < 2)
		return false;
	b = p[0];
	nexc = p[1];
	p += 2;
	if (b > 32 || nexc > BLOCK || (uint64) (end - p) < 16 * (uint64) b)
		return false;
	p += 16 * b;
	for (i = 0; i < nexc; i++)
	{
		if (p >= end)
			return false;
		p++;
		if (!se_dec_vint(&p, end, &v))
			return false;
	}
	*pp = p;
	return true;
}

/* ---------------------------------------------------------------------
 * Encoder
 * ---------------------------------------------------------------------
 */

/* Competitive (freq, norm) pairs being collected (SeImpactFront). */
static void
front_init(SeImpactFront *f)
{
	memset(f->best, 0, sizeof(f->best));
	f->lo = 255;
	f->hi = 0;
}

/* Empty again, clearing only the norms in use. */
static void
front_clear(SeImpactFront *f)
{
	if (f->lo <= f->hi)
		memset(f->best + f->lo, 0, sizeof(uint32) * (f->hi - f->lo + 1));
	f->lo = 255;
	f->hi = 0;
}

static inline void
front_add(SeImpactFront *f, int norm, uint32 freq)
{
	if (freq > f->best[norm])
		f->best[norm] = freq;
	f->lo = Min(f->lo, norm);
	f->hi = Max(f->hi, norm);
}

/* Start an empty skip group. */
static void
group_reset(SePostingsEnc *e)
{
	resetStringInfo(&e->grp);
	e->grp_nblocks = 0;
	e->grp_doc_bytes = 0;
	e->grp_pos_bytes = 0;
	front_clear(&e->grp_front);
}

void
se_postenc_init(SePostingsEnc *e, StringInfo docs, StringInfo pos)
{
	memset(e, 0, sizeof(*e));
	e->docs = docs;
	e->pos = pos;
	initStringInfo(&e->skip);
	initStringInfo(&e->blocks);
	initStringInfo(&e->head);
	initStringInfo(&e->grp);
	front_init(&e->term_front);
	front_init(&e->grp_front);
}

void
se_postenc_free(SePostingsEnc *e)
{
	if (e->skip.data)
		pfree(e->skip.data);
	if (e->blocks.data)
		pfree(e->blocks.data);
	if (e->head.data)
		pfree(e->head.data);
	if (e->grp.data)
		pfree(e->grp.data);
	e->skip.data = NULL;
	e->blocks.data = NULL;
	e->head.data = NULL;
	e->grp.data = NULL;
}

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
	e->max_freq = 0;
	e->min_norm = 0xFF;
	e->nbuf = 0;
	e->block_base = -1;
	e->block_pos_start = e->pos->len;
	resetStringInfo(&e->skip);
	resetStringInfo(&e->blocks);
	front_clear(&e->term_front);
	group_reset(e);
	e->ngroups = 0;
	e->grp_base = -1;
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

/*
 * Competitive pairs of f (per norm byte, the largest freq seen, 0 =
 * none): norm ascending, kept when the freq beats every smaller norm's.
 * More than SE_MAX_IMPACTS pairs are merged in runs of neighbours, each
 * run becoming (its smallest norm, its largest freq), which dominates the
 * run.
 */
static int
impacts_front(const SeImpactFront *f, SeImpact *out)
{
	const uint32 *best = f->best;
	int			lo = f->lo,
				hi = f->hi;
	SeImpact	front[256];
	int			nfront = 0;
	uint32		run = 0;
	int			i,
				k;

	for (i = lo; i <= hi; i++)
		if (best[i] > run)
		{
			run = best[i];
			front[nfront].freq = (int32) Min(run, (uint32) PG_INT32_MAX);
			front[nfront].norm = (uint8) i;
			nfront++;
		}
	if (nfront <= SE_MAX_IMPACTS)
	{
		memcpy(out, front, sizeof(SeImpact) * nfront);
		return nfront;
	}
	for (k = 0; k < SE_MAX_IMPACTS; k++)
	{
		int			first = k * nfront / SE_MAX_IMPACTS;
		int			last = (k + 1) * nfront / SE_MAX_IMPACTS - 1;

		out[k].norm = front[first].norm;
		out[k].freq = front[last].freq;
	}
	return SE_MAX_IMPACTS;
}

/* The buffered docs' impacts; they also join the term's. */
static int
block_impacts(SePostingsEnc *e, SeImpact *out)
{
	SeImpactFront bf;
	int			i,
				n;

	front_init(&bf);
	for (i = 0; i < e->nbuf; i++)
		front_add(&bf, (e->norms && e->norm_vals) ? e->norm_vals[e->buf_docs[i]] : 0,
				  (e->io == SE_IDX_DOCS) ? 1 : e->buf_freqs[i]);
	n = impacts_front(&bf, out);
	for (i = 0; i < n; i++)
	{
		front_add(&e->term_front, out[i].norm, (uint32) out[i].freq);
		front_add(&e->grp_front, out[i].norm, (uint32) out[i].freq);
	}
	return n;
}

/* Append impacts as the file header describes (nothing if io/norms say so). */
static void
put_impacts(SePostingsEnc *e, StringInfo out, const SeImpact *imp, int n)
{
	int			i;

	if (e->io == SE_IDX_DOCS && !e->norms)
		return;
	se_put_vint_fast(out, (uint64) n);
	for (i = 0; i < n; i++)
	{
		if (e->io != SE_IDX_DOCS)
			se_put_vint_fast(out, (uint64) (imp[i].freq - (i > 0 ? imp[i - 1].freq : 0) - 1));
		if (e->norms)
		{
			uint8		nd = (uint8) (imp[i].norm - (i > 0 ? imp[i - 1].norm + 1 : 0));

			appendBinaryStringInfo(out, (const char *) &nd, 1);
		}
	}
}

/* Append the filled skip group, its entry first, to the skip region. */
static void
put_group(SePostingsEnc *e)
{
	SeImpact	imp[SE_MAX_IMPACTS];
	int			nimp = impacts_front(&e->grp_front, imp);

	se_put_vint_fast(&e->skip, (uint64) (e->grp_last - e->grp_base));
	se_put_vint_fast(&e->skip, (uint64) e->grp.len);
	se_put_vint_fast(&e->skip, e->grp_doc_bytes);
	if (e->io == SE_IDX_POSITIONS)
		se_put_vint_fast(&e->skip, e->grp_pos_bytes);
	put_impacts(e, &e->skip, imp, nimp);
	appendBinaryStringInfo(&e->skip, e->grp.data, e->grp.len);
	e->grp_base = e->grp_last;
	e->ngroups++;
	group_reset(e);
}

/* Encode the buffered docs as one block plus its skip entry. */
static void
flush_block(SePostingsEnc *e)
{
	int			n = e->nbuf;
	int			start = e->blocks.len;
	SeImpact	imp[SE_MAX_IMPACTS];
	int			nimp;
	int32		prev = e->block_base;
	int			i;

	if (n == 0)
		return;
	if (e->io == SE_IDX_POSITIONS)
		finish_doc_positions(e);
	/* a 33rd block: the term has groups, and the first one is full */
	if (e->grp_nblocks == GROUP)
		put_group(e);
	nimp = block_impacts(e, imp);
	if (n == BLOCK)
	{
		uint32		v[BLOCK];

		for (i = 0; i < BLOCK; i++)
		{
			v[i] = (uint32) (e->buf_docs[i] - prev - 1);
			prev = e->buf_docs[i];
		}
		pfor_encode(&e->blocks, v);
		if (e->io != SE_IDX_DOCS)
		{
			for (i = 0; i < BLOCK; i++)
				v[i] = e->buf_freqs[i] - 1;
			pfor_encode(&e->blocks, v);
		}
	}
	else
	{
		for (i = 0; i < n; i++)
		{
			uint64		delta = (uint64) (e->buf_docs[i] - prev);

			prev = e->buf_docs[i];
			if (e->io == SE_IDX_DOCS)
				se_put_vint_fast(&e->blocks, delta);
			else
			{
				se_put_vint_fast(&e->blocks, (delta << 1) | (e->buf_freqs[i] == 1 ? 1 : 0));
				if (e->buf_freqs[i] != 1)
					se_put_vint_fast(&e->blocks, e->buf_freqs[i]);
			}
		}
	}
	se_put_vint_fast(&e->grp, (uint64) (e->buf_docs[n - 1] - e->block_base));
	se_put_vint_fast(&e->grp, (uint64) (e->blocks.len - start));
	if (e->io == SE_IDX_POSITIONS)
		se_put_vint_fast(&e->grp, (uint64) (e->pos->len - e->block_pos_start));
	put_impacts(e, &e->grp, imp, nimp);
	e->grp_nblocks++;
	e->grp_last = e->buf_docs[n - 1];
	e->grp_doc_bytes += (uint64) (e->blocks.len - start);
	e->grp_pos_bytes += (uint64) (e->pos->len - e->block_pos_start);

	if ((uint32) imp[nimp - 1].freq > e->max_freq)
		e->max_freq = (uint32) imp[nimp - 1].freq;
	if (imp[0].norm < e->min_norm)
		e->min_norm = imp[0].norm;
	e->block_base = e->buf_docs[n - 1];
	e->block_pos_start = e->pos->len;
	e->nbuf = 0;
}

/* Docs must come strictly ascending; others are ignored by the caller. */
void
se_postenc_doc(SePostingsEnc *e, int32 doc, uint32 freq)
{
	if (e->io == SE_IDX_POSITIONS)
		finish_doc_positions(e);
	if (e->io == SE_IDX_DOCS || freq == 0)
		freq = 1;
	if (e->nbuf == BLOCK)
		flush_block(e);
	e->buf_docs[e->nbuf] = doc;
	e->buf_freqs[e->nbuf] = freq;
	e->nbuf++;
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

/*
 * All count positions of the current doc as encoded varint deltas: when
 * they are exactly what the doc still owes, they are the bytes
 * se_postenc_pos would write (the caller vouches that they sum to at most
 * PG_INT32_MAX), copied whole; otherwise they are decoded and go through
 * se_postenc_pos one by one.
 */
void
se_postenc_pos_vints(SePostingsEnc *e, const uint8 *vints, int len, uint32 count)
{
	const uint8 *p = vints;
	const uint8 *end = vints + len;
	int64		pos = 0;
	uint64		d;

	if (count == e->pos_left && e->last_pos == 0)
	{
		StringInfo	out = e->pos;

		/* mostly a byte or two: appendBinaryStringInfo's call cost more */
		if (out->maxlen - out->len <= len)
			enlargeStringInfo(out, len);
		memcpy(out->data + out->len, vints, len);
		out->len += len;
		out->data[out->len] = '\0';
		e->pos_left = 0;
		return;
	}
	while (count-- > 0 && se_dec_vint(&p, end, &d))
	{
		pos += (int64) d;
		se_postenc_pos(e, (int32) Min(pos, PG_INT32_MAX));
	}
}

void
se_postenc_term_end(SePostingsEnc *e, StringInfo meta_out)
{
	SeImpact	timp[SE_MAX_IMPACTS];
	int			nimp;

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
		/* singleton: the doc lives in the dictionary, no doc stream */
		e->nbuf = 0;
		se_put_vint_fast(meta_out, (uint64) e->first_doc);
		if (e->io == SE_IDX_POSITIONS)
			se_put_vint_fast(meta_out, (uint64) (e->term_pos_start - e->pos_base));
		return;
	}
	flush_block(e);
	/* the last group; a term of one group has its entries bare */
	if (e->ngroups > 0)
		put_group(e);
	else
		appendBinaryStringInfo(&e->skip, e->grp.data, e->grp.len);
	se_put_vint_fast(meta_out, (uint64) (e->term_docs_start - e->docs_base));
	if (e->io == SE_IDX_POSITIONS)
		se_put_vint_fast(meta_out, (uint64) (e->term_pos_start - e->pos_base));
	if (e->io != SE_IDX_DOCS)
		se_put_vint_fast(meta_out, e->max_freq - 1);
	if (e->norms)
		appendBinaryStringInfo(meta_out, (const char *) &e->min_norm, 1);

	/* the skip region: the term's impacts, then the skip entries */
	nimp = impacts_front(&e->term_front, timp);
	resetStringInfo(&e->head);
	put_impacts(e, &e->head, timp, nimp);
	se_put_vint_fast(e->docs, (uint64) (e->head.len + e->skip.len));
	appendBinaryStringInfo(e->docs, e->head.data, e->head.len);
	appendBinaryStringInfo(e->docs, e->skip.data, e->skip.len);
	appendBinaryStringInfo(e->docs, e->blocks.data, e->blocks.len);
}

/* ---------------------------------------------------------------------
 * Term meta decoding
 * ---------------------------------------------------------------------
 */

bool
se_postings_decode_meta(SeSegmentReader *r, int field, const uint8 *p,
						const uint8 *end, SeTermInfo *ti, const uint8 **next)
{
	SeFieldR   *f = &r->fields[field];
	uint64		df,
				extra = 0,
				loc,
				ploc = 0,
				maxf = 0;
	uint8		min_norm = 0;

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
		maxf = extra;			/* freq - 1 */
		min_norm = f->has_norms ? se_segment_norm(r, field, (int32) loc) : 0;
	}
	else
	{
		if (loc >= f->post_len)
			goto bad;
		if (f->io != SE_IDX_DOCS &&
			(!se_dec_vint(&p, end, &maxf) || maxf > extra ||
			 maxf >= (uint64) PG_INT32_MAX))
			goto bad;
		if (f->has_norms)
		{
			if (p >= end)
				goto bad;
			min_norm = *p++;
		}
	}
	if (f->io == SE_IDX_POSITIONS && ploc > f->pos_len)
		goto bad;
	ti->doc_freq = (int32) df;
	ti->total_term_freq = (int64) (df + extra);
	ti->postings_offset = loc;
	ti->positions_offset = ploc;
	ti->field = field;
	ti->max_freq = (int32) maxf + 1;
	ti->min_norm = min_norm;
	if (next)
		*next = p;
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
	p->cur_block = p->nblocks;
	p->bcount = 0;
	p->freq_src = NULL;
	p->pos_left = 0;
	p->positions = false;
	p->adv.block = p->shallow.block = p->gcur.block = p->nblocks;
	p->adv.last = p->shallow.last = p->gcur.last = SE_NO_MORE_DOCS;
	p->groups = false;
}

static inline int32
block_size(SePostings *p, int32 k)
{
	return k < p->nblocks - 1 ? BLOCK : p->df - BLOCK * (p->nblocks - 1);
}

/*
 * A cursor before the first entry.  Only what is read before being set is
 * set: postings are opened once per term of a range or prefix, so an open
 * must stay cheap (no clearing of impact arrays).
 */
static void
skip_reset(SePostings *p, SkipCursor *c)
{
	c->p = p->skip;
	c->block = -1;
	c->prev_last = -1;
	c->last = -1;
	c->doc_off = 0;
	c->doc_len = 0;
	c->pos_off = 0;
	c->pos_len = 0;
	c->nimpacts = 0;
	c->group_end = -1;
	c->group_prev_last = -1;
	c->group_last = -1;
}

/* Decode n impact pairs at *pp (bounded by the skip region). */
static bool
get_impact_pairs(SePostings *p, const uint8 **pp, int n, SeImpact *out)
{
	int64		freq = 0;
	int			norm = -1;
	int			i;

	for (i = 0; i < n; i++)
	{
		uint64		fd = 0;

		if (p->io != SE_IDX_DOCS &&
			(!se_dec_vint(pp, p->skip_end, &fd) || fd >= (uint64) PG_INT32_MAX))
			return false;
		freq += (int64) fd + 1;
		if (p->norms)
		{
			if (*pp >= p->skip_end)
				return false;
			norm += *(*pp)++ + 1;
		}
		else
			norm = 0;
		if (freq > PG_INT32_MAX || norm > 255)
			return false;
		out[i].freq = (int32) freq;
		out[i].norm = (uint8) norm;
	}
	return true;
}

static bool group_enter(SePostings *p, SkipCursor *c);
static int	term_level_impacts(SePostings *p, SeImpact *impacts);

/* Move a cursor to the next skip entry; false at the end or on corruption. */
static bool
skip_step(SePostings *p, SkipCursor *c)
{
	uint64		dlast,
				dlen,
				plen = 0,
				nimp = 1;
	int64		last;

	if (c->block >= p->nblocks)
		return false;
	if (c->block + 1 >= p->nblocks)
	{
		c->block = p->nblocks;
		c->prev_last = c->last;
		c->last = SE_NO_MORE_DOCS;
		return false;
	}
	if (p->groups && c->block == c->group_end && !group_enter(p, c))
		return false;
	if (!se_dec_vint(&c->p, p->skip_end, &dlast) ||
		!se_dec_vint(&c->p, p->skip_end, &dlen) ||
		(p->io == SE_IDX_POSITIONS && !se_dec_vint(&c->p, p->skip_end, &plen)) ||
		((p->io != SE_IDX_DOCS || p->norms) && !se_dec_vint(&c->p, p->skip_end, &nimp)))
		goto bad;
	last = (int64) c->last + (int64) Min(dlast, (uint64) PG_INT32_MAX + 1);
	if (dlast < (uint64) block_size(p, c->block + 1) ||
		last >= (int64) p->r->max_doc ||
		dlen > (uint64) (p->end - p->blocks) - (c->doc_off + c->doc_len) ||
		nimp == 0 || nimp > SE_MAX_IMPACTS)
		goto bad;
	if (p->positions &&
		plen > (uint64) (p->pend - p->pos_start) - (c->pos_off + c->pos_len))
		goto bad;
	if (!get_impact_pairs(p, &c->p, (int) nimp, c->impacts))
		goto bad;
	c->nimpacts = (int) nimp;
	c->block++;
	c->prev_last = c->last;
	c->last = (int32) last;
	c->doc_off += c->doc_len;
	c->doc_len = dlen;
	c->pos_off += c->pos_len;
	c->pos_len = plen;
	/* a group's last entry must end where its group entry said */
	if (p->groups && c->block == c->group_end &&
		(c->p != c->group_entries_end || c->last != c->group_last ||
		 c->doc_off + c->doc_len != c->group_doc_end ||
		 (p->positions && c->pos_off + c->pos_len != c->group_pos_end)))
	{
		postings_corrupt(p, "skip group does not match its entries");
		return false;
	}
	return true;

bad:
	postings_corrupt(p, "invalid skip data");
	return false;
}

/*
 * Read the entry of the group after the one c has finished (c is on that
 * group's last block, or before the first block).
 */
static bool
group_enter(SePostings *p, SkipCursor *c)
{
	uint64		dlast,
				slen,
				dbytes,
				pbytes = 0,
				nimp = 1;
	int32		first = c->block + 1;
	int32		nb = Min(GROUP, p->nblocks - first);
	int64		ndocs = (first + nb == p->nblocks) ?
		(int64) p->df - (int64) first * BLOCK : (int64) nb * BLOCK;
	uint64		doc_start = c->doc_off + c->doc_len;
	uint64		pos_start = c->pos_off + c->pos_len;
	int64		last;

	if (!se_dec_vint(&c->p, p->skip_end, &dlast) ||
		!se_dec_vint(&c->p, p->skip_end, &slen) ||
		!se_dec_vint(&c->p, p->skip_end, &dbytes) ||
		(p->io == SE_IDX_POSITIONS && !se_dec_vint(&c->p, p->skip_end, &pbytes)) ||
		((p->io != SE_IDX_DOCS || p->norms) && !se_dec_vint(&c->p, p->skip_end, &nimp)))
		goto bad;
	last = (int64) c->last + (int64) Min(dlast, (uint64) PG_INT32_MAX + 1);
	if (nb <= 0 || dlast < (uint64) ndocs || last >= (int64) p->r->max_doc ||
		dbytes > (uint64) (p->end - p->blocks) - doc_start ||
		nimp == 0 || nimp > SE_MAX_IMPACTS)
		goto bad;
	if (p->positions &&
		pbytes > (uint64) (p->pend - p->pos_start) - pos_start)
		goto bad;
	if (!get_impact_pairs(p, &c->p, (int) nimp, c->group_impacts) ||
		slen > (uint64) (p->skip_end - c->p))
		goto bad;
	c->group_end = first + nb - 1;
	c->group_prev_last = c->last;
	c->group_last = (int32) last;
	c->group_entries_end = c->p + slen;
	c->group_doc_end = doc_start + dbytes;
	c->group_pos_end = pos_start + pbytes;
	c->group_nimpacts = (int) nimp;
	return true;

bad:
	postings_corrupt(p, "invalid skip group");
	return false;
}

/*
 * Pass over the rest of the group just entered: c ends on its last block,
 * as if it had stepped there, except that the block's window is the whole
 * group's (prev_last, impacts).  Only for cursors that go on past it.
 */
static void
group_jump(SkipCursor *c)
{
	c->p = c->group_entries_end;
	c->block = c->group_end;
	c->prev_last = c->group_prev_last;
	c->last = c->group_last;
	c->doc_off = c->group_doc_end;
	c->doc_len = 0;
	c->pos_off = c->group_pos_end;
	c->pos_len = 0;
	c->nimpacts = c->group_nimpacts;
	memcpy(c->impacts, c->group_impacts, sizeof(SeImpact) * c->group_nimpacts);
}

/*
 * Move c forward to the first block whose last doc is >= target, passing
 * over whole groups that end before it; false when no block can hold it.
 * c never stops in a group it jumped over.
 */
static bool
skip_seek(SePostings *p, SkipCursor *c, int32 target)
{
	while (c->block < 0 || c->last < target)
	{
		if (p->groups && c->block + 1 < p->nblocks)
		{
			if (c->block == c->group_end && !group_enter(p, c))
				return false;
			if (c->group_last < target)
			{
				group_jump(c);
				continue;
			}
		}
		if (!skip_step(p, c))
			return false;
	}
	return true;
}

/* Decode the freqs of the current block if still packed. */
static bool
decode_freqs(SePostings *p)
{
	const uint8 *src = p->freq_src;
	int			i;

	if (src == NULL)
		return true;
	p->freq_src = NULL;
	if (!pfor_decode(&src, p->end, (uint32 *) p->freqs))
	{
		postings_corrupt(p, "invalid term frequencies");
		return false;
	}
	for (i = 0; i < BLOCK; i++)
	{
		if ((uint32) p->freqs[i] >= (uint32) PG_INT32_MAX)
		{
			postings_corrupt(p, "invalid term frequency");
			return false;
		}
		p->freqs[i]++;
	}
	return true;
}

/*
 * Decode block k from src, its docs following base.  Freqs of full blocks
 * stay packed until needed unless positions are read.
 */
static bool
decode_block(SePostings *p, int32 k, const uint8 *src, int32 base)
{
	int32		n = block_size(p, k);
	int64		doc = base;
	int32		max_doc = (int32) p->r->max_doc;
	int			i;

	p->freq_src = NULL;
	if (n == BLOCK)
	{
		uint32	   *d = (uint32 *) p->docs;

		if (!pfor_decode(&src, p->end, d))
			goto bad;
		for (i = 0; i < BLOCK; i++)
		{
			doc += (int64) d[i] + 1;
			if (doc >= max_doc)
				goto bad;
			p->docs[i] = (int32) doc;
		}
		if (p->io != SE_IDX_DOCS)
		{
			p->freq_src = src;
			if (!pfor_skip(&src, p->end))
				goto bad;
			if (p->positions && !decode_freqs(p))
				return false;
		}
		else
			for (i = 0; i < BLOCK; i++)
				p->freqs[i] = 1;
	}
	else
	{
		for (i = 0; i < n; i++)
		{
			uint64		code,
						freq = 1;

			if (!se_dec_vint(&src, p->end, &code))
				goto bad;
			if (p->io != SE_IDX_DOCS)
			{
				if ((code & 1) == 0 &&
					(!se_dec_vint(&src, p->end, &freq) || freq == 0 ||
					 freq >= PG_INT32_MAX))
					goto bad;
				code >>= 1;
			}
			doc += (int64) Min(code, (uint64) PG_INT32_MAX + 1);
			if (code == 0 || doc >= max_doc)
				goto bad;
			p->docs[i] = (int32) doc;
			p->freqs[i] = (int32) freq;
		}
	}
	p->cur_block = k;
	p->bcount = n;
	p->next_block = src;
	return true;

bad:
	postings_corrupt(p, "invalid doc block");
	return false;
}

SePostings *
se_postings_open(SeSegmentReader *r, const SeTermInfo *ti, bool with_positions)
{
	SePostings *p = palloc(sizeof(SePostings));
	SeFieldR   *f;

	/* the cursors and block buffers need no zeroing */
	memset(p, 0, offsetof(SePostings, adv));
	p->r = r;
	p->doc = -1;
	p->cur_block = -1;
	skip_reset(p, &p->adv);
	skip_reset(p, &p->shallow);
	skip_reset(p, &p->gcur);
	if (r == NULL || ti == NULL || ti->field < 0 || ti->field >= r->nfields ||
		ti->doc_freq <= 0 || (uint32) ti->doc_freq > r->max_doc)
		goto empty;
	f = &r->fields[ti->field];
	p->field = ti->field;
	p->io = f->io;
	p->norms = f->has_norms;
	p->df = ti->doc_freq;
	p->cost = ti->doc_freq;
	p->nblocks = (ti->doc_freq + BLOCK - 1) / BLOCK;
	p->term_max_freq = (f->io == SE_IDX_DOCS) ? 1 : Max(ti->max_freq, 1);
	p->term_min_norm = f->has_norms ? ti->min_norm : 0;
	if (ti->doc_freq == 1)
	{
		if (ti->postings_offset >= r->max_doc ||
			ti->total_term_freq < 1 || ti->total_term_freq > PG_INT32_MAX)
			goto empty;
		p->singleton = true;
		p->docs[0] = (int32) ti->postings_offset;
		p->freqs[0] = (f->io == SE_IDX_DOCS) ? 1 : (int32) ti->total_term_freq;
		p->term_max_freq = p->freqs[0];
		p->bcount = 1;
		p->bi = -1;
		p->cur_block = 0;
	}
	else
	{
		const uint8 *s;
		uint64		skip_len;

		if (ti->postings_offset >= f->post_len)
			goto empty;
		s = f->post + ti->postings_offset;
		p->end = f->post + f->post_len;
		if (!se_dec_vint(&s, p->end, &skip_len) ||
			skip_len > (uint64) (p->end - s))
		{
			postings_corrupt(p, "invalid skip table");
			goto empty;
		}
		p->skip = s;
		p->skip_end = s + skip_len;
		p->blocks = p->skip_end;
		p->next_block = p->blocks;
		if (f->io != SE_IDX_DOCS || f->has_norms)
		{
			uint64		n;

			if (!se_dec_vint(&p->skip, p->skip_end, &n) || n == 0 ||
				n > SE_MAX_IMPACTS ||
				!get_impact_pairs(p, &p->skip, (int) n, p->term_impacts))
			{
				postings_corrupt(p, "invalid term impacts");
				goto empty;
			}
			p->nterm_impacts = (int) n;
		}
		p->adv.p = p->shallow.p = p->gcur.p = p->skip;
		p->groups = p->nblocks > GROUP;
	}
	if (with_positions && f->io == SE_IDX_POSITIONS)
	{
		if (ti->positions_offset > f->pos_len)
			goto empty;
		p->positions = true;
		p->pos_start = f->pos + ti->positions_offset;
		p->pp = p->pos_start;
		p->pend = f->pos + f->pos_len;
	}
	return p;

empty:
	p->df = 0;
	p->nblocks = 0;
	p->bcount = 0;
	p->cur_block = 0;
	p->singleton = false;
	p->positions = false;
	return p;
}

int32
se_postings_doc(SePostings *p)
{
	return p->doc;
}

/* Position bookkeeping when leaving the current doc. */
static inline void
leave_doc(SePostings *p)
{
	if (p->positions && p->doc >= 0)
		p->pos_skip += p->pos_started ? (uint64) p->pos_left : (uint64) p->freqs[p->bi];
}

static inline int32
enter_doc(SePostings *p, int32 i)
{
	p->bi = i;
	p->doc = p->docs[i];
	if (p->positions)
	{
		p->pos_started = false;
		p->pos_left = p->freqs[i];
	}
	return p->doc;
}

int32
se_postings_next(SePostings *p)
{
	if (p->doc == SE_NO_MORE_DOCS)
		return p->doc;
	leave_doc(p);
	if (p->bi + 1 < p->bcount)
		return enter_doc(p, p->bi + 1);
	/* the next block, in stream order */
	if (p->cur_block + 1 >= p->nblocks)
	{
		p->doc = SE_NO_MORE_DOCS;
		return p->doc;
	}
	if (!decode_block(p, p->cur_block + 1, p->next_block,
					  p->cur_block >= 0 ? p->docs[p->bcount - 1] : -1))
		return p->doc;
	return enter_doc(p, 0);
}

int32
se_postings_advance(SePostings *p, int32 target)
{
	int32		i;

	if (p->doc >= target)
		return p->doc;
	if (p->bcount > 0 && p->bi + 1 < p->bcount &&
		target <= p->docs[p->bcount - 1])
	{
		/* target within the decoded block */
		leave_doc(p);
		i = p->bi + 1;
		if (p->positions)
		{
			while (p->docs[i] < target)
				p->pos_skip += (uint64) p->freqs[i++];
		}
		else
			while (p->docs[i] < target)
				i++;
		return enter_doc(p, i);
	}
	if (p->singleton || p->cur_block + 1 >= p->nblocks)
	{
		p->doc = SE_NO_MORE_DOCS;
		return p->doc;
	}
	/*
	 * Skip to the first later block that can hold target (target is past
	 * the decoded block, so that block is later).
	 */
	if (!skip_seek(p, &p->adv, target))
	{
		p->doc = SE_NO_MORE_DOCS;
		return p->doc;
	}
	if (!decode_block(p, p->adv.block, p->blocks + p->adv.doc_off,
					  p->adv.prev_last))
		return p->doc;
	if (p->docs[p->bcount - 1] != p->adv.last)
	{
		postings_corrupt(p, "skip data does not match its block");
		return p->doc;
	}
	i = 0;
	if (p->positions)
	{
		p->pp = p->pos_start + p->adv.pos_off;
		p->pos_skip = 0;
		while (p->docs[i] < target)
			p->pos_skip += (uint64) p->freqs[i++];
	}
	else
		while (p->docs[i] < target)
			i++;
	return enter_doc(p, i);
}

int32
se_postings_freq(SePostings *p)
{
	if (p->doc < 0 || p->doc == SE_NO_MORE_DOCS)
		return 1;
	if (p->freq_src != NULL && !decode_freqs(p))
		return 1;
	return p->freqs[p->bi];
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

int32
se_postings_advance_shallow(SePostings *p, int32 target)
{
	SkipCursor *c = &p->shallow;

	if (p->df == 0)
		return SE_NO_MORE_DOCS;
	if (p->singleton)
	{
		if (target > p->docs[0])
		{
			c->block = 1;
			return SE_NO_MORE_DOCS;
		}
		c->block = 0;
		return p->docs[0];
	}
	if (target <= c->prev_last && c->block >= 0)
		skip_reset(p, c);		/* went backwards: walk again */
	if (!skip_seek(p, c, target))
		return SE_NO_MORE_DOCS;
	return c->last;
}

int32
se_postings_group_impacts(SePostings *p, int32 target, SeImpact *impacts,
						  int *nimpacts)
{
	SkipCursor *c = &p->gcur;

	if (!p->groups)
	{
		*nimpacts = term_level_impacts(p, impacts);
		return SE_NO_MORE_DOCS;
	}
	if (c->group_end >= 0 && target <= c->group_prev_last)
		skip_reset(p, c);		/* went backwards: walk again */
	for (;;)
	{
		if (c->block == c->group_end)
		{
			if (c->block + 1 >= p->nblocks || !group_enter(p, c))
			{
				/* nothing at or after target (or corrupt) */
				*nimpacts = term_level_impacts(p, impacts);
				return SE_NO_MORE_DOCS;
			}
		}
		if (c->group_last >= target)
			break;
		group_jump(c);
	}
	memcpy(impacts, c->group_impacts, sizeof(SeImpact) * c->group_nimpacts);
	*nimpacts = c->group_nimpacts;
	return c->group_last;
}

/* The term-level impacts. */
static int
term_level_impacts(SePostings *p, SeImpact *impacts)
{
	if (p->nterm_impacts > 0)
	{
		memcpy(impacts, p->term_impacts, sizeof(SeImpact) * p->nterm_impacts);
		return p->nterm_impacts;
	}
	impacts[0].freq = p->term_max_freq;
	impacts[0].norm = p->term_min_norm;
	return 1;
}

int
se_postings_block_impacts(SePostings *p, SeImpact *impacts)
{
	SkipCursor *c = &p->shallow;

	if (p->singleton || c->block < 0 || c->block >= p->nblocks)
		return term_level_impacts(p, impacts);
	memcpy(impacts, c->impacts, sizeof(SeImpact) * c->nimpacts);
	return c->nimpacts;
}

void
se_postings_block_impact(SePostings *p, int32 *max_freq, uint8 *min_norm)
{
	SkipCursor *c = &p->shallow;

	if (p->singleton || c->block < 0 || c->block >= p->nblocks)
	{
		*max_freq = p->term_max_freq;
		*min_norm = p->term_min_norm;
	}
	else
	{
		*max_freq = c->impacts[c->nimpacts - 1].freq;
		*min_norm = c->impacts[0].norm;
	}
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
