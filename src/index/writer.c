/*-------------------------------------------------------------------------
 *
 * writer.c
 *	  The segment serializer: turns a stream of fields, terms, postings,
 *	  norms, doc values and documents into one segment file.
 *
 * Both se_builder_serialize and se_segment_merge drive this writer, so the
 * on-disk layout (described in segment_internal.h) is produced in exactly
 * one place.  Sections are accumulated in separate buffers and copied into
 * the output at finish, which also computes nothing late: field statistics
 * are gathered as postings are fed, from the docs actually written.
 *
 * Memory: everything is palloc'd in CurrentMemoryContext and freed by
 * se_segwriter_finish.  Each section must stay under 1 GB (StringInfo).
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <zstd.h>

#include "port/pg_bitutils.h"
#include "index/segment_internal.h"

/* Values of one doc must fit a StringInfo enlargement. */
#define MAX_DV_PER_DOC	(64 * 1024 * 1024)

typedef struct WField
{
	char	   *name;
	int			name_len;
	SeIndexOptions io;
	bool		norms;
	SeDocValuesType dv;
	SeFieldStats stats;
	uint64		terms_off;
	uint64		terms_len;
	uint64		post_off;
	uint64		post_len;
	uint64		pos_off;
	uint64		pos_len;
	uint8	   *norm_vals;		/* max_doc bytes, allocated on first norm */
	uint64		dv_off;
	uint64		dv_len;
} WField;

struct SeSegWriter
{
	uint32		max_doc;
	int			zstd_level;
	WField	   *fields;
	size_t		fields_cap;
	int			nfields;

	StringInfoData sec_terms;
	StringInfoData sec_post;
	StringInfoData sec_pos;
	StringInfoData sec_dv;

	/* terms of the field being written (layout in segment_internal.h) */
	int			tfield;			/* -1 when none */
	bool		in_term;
	SePostingsEnc enc;
	StringInfoData term;		/* the term being written */
	StringInfoData prev;		/* the last term kept */
	StringInfoData tmeta;		/* its meta, while its survival is unknown */
	StringInfoData tkeys;		/* first term of each block */
	StringInfoData tblocks;
	uint32	   *toffs;			/* per block: block offset, key offset */
	size_t		toffs_cap;
	uint32		nterms;
	int			version;		/* the format written */
	int32	   *doc_mark;		/* last field that gave the doc a term */

	/* doc values of the field being written */
	int			dvfield;		/* -1 when none */
	int32		dv_next;
	uint32	   *dv_starts;
	uint64		dv_count;
	StringInfoData dv_vals;
	StringInfoData dict;
	uint32	   *dict_offs;
	size_t		dict_offs_cap;
	uint32		ndict;

	/* per-doc metadata */
	uint32		ndocs;
	uint32	   *meta_offs;
	StringInfoData meta;

	/* stored fields: the open block and the finished ones */
	StringInfoData blk;
	uint32	   *blk_lens;
	size_t		blk_lens_cap;
	uint32		blk_ndocs;
	uint32		blk_first;
	StringInfoData raw;
	StringInfoData stored_index;
	StringInfoData stored_data;
	uint32		nblocks;
};

int			se_segment_write_version = SE_SEGMENT_VERSION;

SeSegWriter *
se_segwriter_create(uint32 max_doc, int zstd_level)
{
	SeSegWriter *w = palloc0(sizeof(SeSegWriter));
	uint32		i;

	w->max_doc = max_doc;
	w->zstd_level = Max(Min(zstd_level, ZSTD_maxCLevel()), ZSTD_minCLevel());
	initStringInfo(&w->sec_terms);
	initStringInfo(&w->sec_post);
	initStringInfo(&w->sec_pos);
	initStringInfo(&w->sec_dv);
	initStringInfo(&w->term);
	initStringInfo(&w->prev);
	initStringInfo(&w->tmeta);
	initStringInfo(&w->tkeys);
	initStringInfo(&w->tblocks);
	initStringInfo(&w->dv_vals);
	initStringInfo(&w->dict);
	initStringInfo(&w->meta);
	initStringInfo(&w->blk);
	initStringInfo(&w->raw);
	initStringInfo(&w->stored_index);
	initStringInfo(&w->stored_data);
	w->tfield = -1;
	w->dvfield = -1;
	w->version = se_segment_write_version == 4 ? 4 : SE_SEGMENT_VERSION;
	w->doc_mark = se_index_alloc_huge(sizeof(int32) * ((size_t) max_doc + 1), false);
	for (i = 0; i < max_doc; i++)
		w->doc_mark[i] = -1;
	w->meta_offs = se_index_alloc_huge(sizeof(uint32) * ((size_t) max_doc + 1), false);
	se_postenc_init(&w->enc, &w->sec_post, &w->sec_pos);
	return w;
}

int
se_segwriter_add_field(SeSegWriter *w, const char *name, int name_len,
					   SeIndexOptions io, bool norms, SeDocValuesType dv)
{
	WField	   *f;

	w->fields = se_index_grow(w->fields, &w->fields_cap, w->nfields + 1,
							  sizeof(WField));
	f = &w->fields[w->nfields];
	memset(f, 0, sizeof(WField));
	f->name = palloc(name_len + 1);
	memcpy(f->name, name, name_len);
	f->name[name_len] = '\0';
	f->name_len = name_len;
	f->io = (io >= SE_IDX_NONE && io <= SE_IDX_POSITIONS) ? io : SE_IDX_NONE;
	f->norms = norms;
	f->dv = (dv >= SE_DV_NONE && dv <= SE_DV_SORTED_SET) ? dv : SE_DV_NONE;
	return w->nfields++;
}

/* ---------------------------------------------------------------------
 * Terms and postings
 * ---------------------------------------------------------------------
 */

void
se_segwriter_terms_begin(SeSegWriter *w, int field)
{
	WField	   *f;

	if (w->tfield >= 0)
		se_segwriter_terms_end(w);
	if (field < 0 || field >= w->nfields || w->fields[field].io == SE_IDX_NONE)
		return;
	f = &w->fields[field];
	w->tfield = field;
	w->nterms = 0;
	resetStringInfo(&w->tkeys);
	resetStringInfo(&w->tblocks);
	w->enc.io = f->io;
	/* block impacts see the norms set so far (builder and merge set them first) */
	w->enc.norms = f->norms;
	w->enc.norm_vals = f->norm_vals;
	w->enc.docs_base = w->sec_post.len;
	w->enc.pos_base = w->sec_pos.len;
	f->post_off = w->sec_post.len;
	f->pos_off = w->sec_pos.len;
}

void
se_segwriter_term_begin(SeSegWriter *w, const char *term, int len)
{
	if (w->tfield < 0)
		return;
	if (w->in_term)
		se_segwriter_term_end(w);
	w->in_term = true;
	resetStringInfo(&w->term);
	appendBinaryStringInfo(&w->term, term, len);
	se_postenc_term_begin(&w->enc);
}

void
se_segwriter_term_doc(SeSegWriter *w, int32 doc, uint32 freq)
{
	WField	   *f;

	if (!w->in_term || doc < 0 || (uint32) doc >= w->max_doc ||
		doc <= w->enc.last_doc)
		return;
	f = &w->fields[w->tfield];
	if (f->io == SE_IDX_DOCS || freq == 0)
		freq = 1;
	se_postenc_doc(&w->enc, doc, freq);
	f->stats.sum_total_term_freq += freq;
	if (w->doc_mark[doc] != w->tfield)
	{
		w->doc_mark[doc] = w->tfield;
		f->stats.doc_count++;
	}
}

void
se_segwriter_term_pos(SeSegWriter *w, int32 pos)
{
	if (w->in_term && w->enc.io == SE_IDX_POSITIONS)
		se_postenc_pos(&w->enc, pos);
}

void
se_segwriter_term_pos_vints(SeSegWriter *w, const uint8 *vints, int len,
							uint32 count)
{
	if (w->in_term && w->enc.io == SE_IDX_POSITIONS)
		se_postenc_pos_vints(&w->enc, vints, len, count);
}

void
se_segwriter_term_end(SeSegWriter *w)
{
	if (!w->in_term)
		return;
	w->in_term = false;
	resetStringInfo(&w->tmeta);
	se_postenc_term_end(&w->enc, &w->tmeta);
	if (w->enc.doc_freq == 0)
		return;					/* no surviving doc: the term disappears */
	if (w->nterms % SE_TERMS_BLOCK == 0)
	{
		/* a new block: its first term goes to the keys, whole */
		uint32		b = w->nterms / SE_TERMS_BLOCK;

		w->toffs = se_index_grow(w->toffs, &w->toffs_cap, 2 * ((size_t) b + 2),
								 sizeof(uint32));
		w->toffs[2 * b] = (uint32) w->tblocks.len;
		w->toffs[2 * b + 1] = (uint32) w->tkeys.len;
		appendBinaryStringInfo(&w->tkeys, w->term.data, w->term.len);
		if (w->version >= 5)
		{
			/* the restart offsets, zero until their terms come */
			int			slots = (SE_TERMS_BLOCK - 1) / SE_TERMS_RESTART;

			while (slots-- > 0)
				se_put_u32(&w->tblocks, 0);
		}
	}
	else
	{
		int			lcp = 0;
		int			n = Min(w->prev.len, w->term.len);
		uint32		i = w->nterms % SE_TERMS_BLOCK;

		if (w->version >= 5 && i % SE_TERMS_RESTART == 0)
		{
			/* a restart point: the whole term, its offset in the table */
			uint32		start = w->toffs[2 * (w->nterms / SE_TERMS_BLOCK)];
			uint32		off = (uint32) w->tblocks.len - start;
			char	   *slot = w->tblocks.data + start + 4 * (i / SE_TERMS_RESTART - 1);

			slot[0] = (char) (off & 0xff);
			slot[1] = (char) ((off >> 8) & 0xff);
			slot[2] = (char) ((off >> 16) & 0xff);
			slot[3] = (char) ((off >> 24) & 0xff);
		}
		else
			while (lcp < n && w->prev.data[lcp] == w->term.data[lcp])
				lcp++;
		se_put_vint_fast(&w->tblocks, (uint64) lcp);
		se_put_vint_fast(&w->tblocks, (uint64) (w->term.len - lcp));
		appendBinaryStringInfo(&w->tblocks, w->term.data + lcp,
							   w->term.len - lcp);
	}
	if (w->version >= 5)
		se_put_vint_fast(&w->tblocks, (uint64) w->tmeta.len);
	appendBinaryStringInfo(&w->tblocks, w->tmeta.data, w->tmeta.len);
	resetStringInfo(&w->prev);
	appendBinaryStringInfo(&w->prev, w->term.data, w->term.len);
	w->nterms++;
	w->fields[w->tfield].stats.sum_doc_freq += w->enc.doc_freq;
}

void
se_segwriter_terms_end(SeSegWriter *w)
{
	WField	   *f;
	uint32		nblocks,
				b;
	int			k;

	if (w->tfield < 0)
		return;
	if (w->in_term)
		se_segwriter_term_end(w);
	f = &w->fields[w->tfield];
	nblocks = (w->nterms + SE_TERMS_BLOCK - 1) / SE_TERMS_BLOCK;
	w->toffs = se_index_grow(w->toffs, &w->toffs_cap, 2 * ((size_t) nblocks + 1),
							 sizeof(uint32));
	w->toffs[2 * nblocks] = (uint32) w->tblocks.len;
	w->toffs[2 * nblocks + 1] = (uint32) w->tkeys.len;
	f->terms_off = w->sec_terms.len;
	se_put_u32(&w->sec_terms, w->nterms);
	se_put_u32(&w->sec_terms, SE_TERMS_BLOCK);
	if (w->version >= 5)
		se_put_u32(&w->sec_terms, SE_TERMS_RESTART);
	for (k = 0; k < 2; k++)
		for (b = 0; b <= nblocks; b++)
			se_put_u32(&w->sec_terms, w->toffs[2 * b + k]);
	appendBinaryStringInfo(&w->sec_terms, w->tkeys.data, w->tkeys.len);
	appendBinaryStringInfo(&w->sec_terms, w->tblocks.data, w->tblocks.len);
	f->terms_len = w->sec_terms.len - f->terms_off;
	f->post_len = w->sec_post.len - f->post_off;
	f->pos_len = w->sec_pos.len - f->pos_off;
	w->tfield = -1;
}

/* ---------------------------------------------------------------------
 * Norms and doc values
 * ---------------------------------------------------------------------
 */

void
se_segwriter_set_norm(SeSegWriter *w, int field, int32 doc, uint8 norm)
{
	WField	   *f;

	if (field < 0 || field >= w->nfields || doc < 0 || (uint32) doc >= w->max_doc)
		return;
	f = &w->fields[field];
	if (!f->norms)
		return;
	if (f->norm_vals == NULL)
		f->norm_vals = se_index_alloc_huge(w->max_doc, true);
	f->norm_vals[doc] = norm;
}

static void
dv_begin(SeSegWriter *w, int field, SeDocValuesType type)
{
	if (w->dvfield >= 0)
	{
		if (w->fields[w->dvfield].dv == SE_DV_NUMERIC)
			se_segwriter_numeric_end(w);
		else
			se_segwriter_sorted_end(w);
	}
	if (field < 0 || field >= w->nfields || w->fields[field].dv != type)
		return;
	w->dvfield = field;
	w->dv_next = 0;
	w->dv_count = 0;
	if (w->dv_starts == NULL)
		w->dv_starts = se_index_alloc_huge(sizeof(uint32) * ((size_t) w->max_doc + 1), false);
	resetStringInfo(&w->dv_vals);
	resetStringInfo(&w->dict);
	w->ndict = 0;
}

/* Fill starts of docs without values up to (excluding) doc. */
static void
dv_fill_to(SeSegWriter *w, int32 doc)
{
	while (w->dv_next < doc)
		w->dv_starts[w->dv_next++] = (uint32) w->dv_count;
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static int
cmp_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return (x > y) - (x < y);
}

/* Value i of a buffer of esize-byte values: int64, or uint32 ords. */
static inline int64
dv_src_get(const char *src, int esize, uint64 i)
{
	if (esize == 8)
	{
		int64		v;

		memcpy(&v, src + 8 * i, 8);
		return v;
	}
	return (int64) ((const uint32 *) src)[i];
}

static int
bit_width64(uint64 v)
{
	return v == 0 ? 0 : pg_leftmost_one_pos64(v) + 1;
}

/*
 * Append n values of src as (v - min) / gcd in bits bits each, packed
 * little-endian, then SE_PACKED_SLACK zero bytes.
 */
static void
put_packed(StringInfo out, const char *src, int esize, uint64 n, int64 min,
		   uint64 gcd, int bits)
{
	uint64		acc = 0;
	int			nacc = 0;
	uint64		i;
	uint8	   *dst;

	enlargeStringInfo(out, (int) se_packed_len(n, bits));
	dst = (uint8 *) out->data + out->len;
	for (i = 0; i < n && bits > 0; i++)
	{
		uint64		x = ((uint64) dv_src_get(src, esize, i) - (uint64) min) / gcd;

		acc |= x << nacc;
		nacc += bits;
		while (nacc >= 8)
		{
			*dst++ = (uint8) acc;
			acc >>= 8;
			nacc -= 8;
		}
	}
	if (nacc > 0)
		*dst++ = (uint8) acc;
	memset(dst, 0, SE_PACKED_SLACK);
	dst += SE_PACKED_SLACK;
	out->len = (int) ((char *) dst - out->data);
	out->data[out->len] = '\0';
}

/*
 * Append the current field's column (dv_starts, and n values of esize
 * bytes in dv_vals) packed as segment_internal.h describes: values become
 * multiples of their gcd above their min, in as few bits as that takes,
 * and the starts disappear when every doc has exactly one value.
 */
static void
dv_put_column(SeSegWriter *w, int esize, uint64 n)
{
	const char *src = w->dv_vals.data;
	bool		single = n == w->max_doc;
	int64		min = 0,
				max = 0;
	uint64		gcd = 0;
	int			sbits = bit_width64(n);
	int			vbits;
	uint64		i;

	for (i = 0; single && i < w->max_doc; i++)
		single = w->dv_starts[i] == i;
	for (i = 0; i < n; i++)
	{
		int64		v = dv_src_get(src, esize, i);

		if (i == 0 || v < min)
			min = v;
		if (i == 0 || v > max)
			max = v;
	}
	for (i = 0; i < n && gcd != 1; i++)
	{
		uint64		a = (uint64) dv_src_get(src, esize, i) - (uint64) min,
					b = gcd;

		while (b != 0)
		{
			uint64		t = a % b;

			a = b;
			b = t;
		}
		gcd = a;
	}
	if (gcd == 0)
		gcd = 1;				/* no values, or all equal */
	vbits = bit_width64(((uint64) max - (uint64) min) / gcd);
	if (vbits > SE_DV_MAX_PACKED_BITS)
	{
		vbits = SE_DV_RAW_BITS;
		min = 0;
		gcd = 1;
	}
	appendStringInfoChar(&w->sec_dv, (char) single);
	appendStringInfoChar(&w->sec_dv, (char) (single ? 0 : sbits));
	appendStringInfoChar(&w->sec_dv, (char) vbits);
	appendStringInfoChar(&w->sec_dv, 0);
	se_put_u32(&w->sec_dv, 0);
	se_put_u64(&w->sec_dv, n);
	se_put_u64(&w->sec_dv, (uint64) min);
	se_put_u64(&w->sec_dv, gcd);
	if (!single)
		put_packed(&w->sec_dv, (const char *) w->dv_starts, 4,
				   (uint64) w->max_doc + 1, 0, 1, sbits);
	if (vbits == SE_DV_RAW_BITS)
	{
		for (i = 0; i < n; i++)
			se_put_u64(&w->sec_dv, (uint64) dv_src_get(src, esize, i));
	}
	else
		put_packed(&w->sec_dv, src, esize, n, min, gcd, vbits);
}

void
se_segwriter_numeric_begin(SeSegWriter *w, int field)
{
	dv_begin(w, field, SE_DV_NUMERIC);
}

/* Values are sorted here so the "ascending per doc" invariant always holds. */
void
se_segwriter_numeric_doc(SeSegWriter *w, int32 doc, const int64 *values, int n)
{
	int64	   *dst;

	if (w->dvfield < 0 || w->fields[w->dvfield].dv != SE_DV_NUMERIC ||
		doc < w->dv_next || (uint32) doc >= w->max_doc || n <= 0 ||
		n > MAX_DV_PER_DOC)
		return;
	dv_fill_to(w, doc);
	w->dv_starts[w->dv_next++] = (uint32) w->dv_count;
	enlargeStringInfo(&w->dv_vals, n * (int) sizeof(int64));
	dst = (int64 *) (w->dv_vals.data + w->dv_vals.len);
	memcpy(dst, values, sizeof(int64) * n);
	if (n > 1)
		qsort(dst, n, sizeof(int64), cmp_int64);
	w->dv_vals.len += n * (int) sizeof(int64);
	w->dv_count += n;
}

void
se_segwriter_numeric_end(SeSegWriter *w)
{
	WField	   *f;
	int			start;

	if (w->dvfield < 0)
		return;
	f = &w->fields[w->dvfield];
	dv_fill_to(w, (int32) w->max_doc);
	w->dv_starts[w->max_doc] = (uint32) w->dv_count;
	se_pad_to(&w->sec_dv, 0, 8);
	start = w->sec_dv.len;
	f->dv_off = start;
	dv_put_column(w, sizeof(int64), w->dv_count);
	f->dv_len = w->sec_dv.len - start;
	w->dvfield = -1;
}

void
se_segwriter_sorted_begin(SeSegWriter *w, int field)
{
	dv_begin(w, field, SE_DV_SORTED_SET);
}

/* Dictionary values must come in ascending byte order, without repeats. */
void
se_segwriter_sorted_dict_add(SeSegWriter *w, const char *v, int len)
{
	if (w->dvfield < 0 || w->fields[w->dvfield].dv != SE_DV_SORTED_SET)
		return;
	w->dict_offs = se_index_grow(w->dict_offs, &w->dict_offs_cap,
								 (size_t) w->ndict + 2, sizeof(uint32));
	w->dict_offs[w->ndict++] = (uint32) w->dict.len;
	appendBinaryStringInfo(&w->dict, v, len);
}

void
se_segwriter_sorted_doc(SeSegWriter *w, int32 doc, const uint32 *ords, int n)
{
	uint32	   *dst;
	int			i,
				k = 0;

	if (w->dvfield < 0 || w->fields[w->dvfield].dv != SE_DV_SORTED_SET ||
		doc < w->dv_next || (uint32) doc >= w->max_doc || n <= 0 ||
		n > MAX_DV_PER_DOC)
		return;
	dv_fill_to(w, doc);
	w->dv_starts[w->dv_next++] = (uint32) w->dv_count;
	enlargeStringInfo(&w->dv_vals, n * (int) sizeof(uint32));
	dst = (uint32 *) (w->dv_vals.data + w->dv_vals.len);
	memcpy(dst, ords, sizeof(uint32) * n);
	if (n > 1)
		qsort(dst, n, sizeof(uint32), cmp_uint32);
	/* keep valid, distinct ords only */
	for (i = 0; i < n; i++)
	{
		if (dst[i] >= w->ndict || (k > 0 && dst[k - 1] == dst[i]))
			continue;
		dst[k++] = dst[i];
	}
	w->dv_vals.len += k * (int) sizeof(uint32);
	w->dv_count += k;
}

void
se_segwriter_sorted_end(SeSegWriter *w)
{
	WField	   *f;
	int			start;

	if (w->dvfield < 0)
		return;
	f = &w->fields[w->dvfield];
	dv_fill_to(w, (int32) w->max_doc);
	w->dv_starts[w->max_doc] = (uint32) w->dv_count;
	w->dict_offs = se_index_grow(w->dict_offs, &w->dict_offs_cap,
								 (size_t) w->ndict + 1, sizeof(uint32));
	w->dict_offs[w->ndict] = (uint32) w->dict.len;
	se_pad_to(&w->sec_dv, 0, 8);
	start = w->sec_dv.len;
	f->dv_off = start;
	se_put_u32(&w->sec_dv, w->ndict);
	appendBinaryStringInfo(&w->sec_dv, (const char *) w->dict_offs,
						   sizeof(uint32) * ((size_t) w->ndict + 1));
	appendBinaryStringInfo(&w->sec_dv, w->dict.data, w->dict.len);
	se_pad_to(&w->sec_dv, start, 8);
	dv_put_column(w, sizeof(uint32), w->dv_count);
	f->dv_len = w->sec_dv.len - start;
	w->dvfield = -1;
}

/* ---------------------------------------------------------------------
 * Documents: metadata and stored source
 * ---------------------------------------------------------------------
 */

/*
 * One zstd compression context per process, kept for its lifetime.
 * ZSTD_compress creates and frees a context (its whole workspace) on every
 * call: for a 16 KB block of Debian package sources at level 3 that was
 * 10 of its 57 microseconds.  ZSTD_compressCCtx starts each frame afresh,
 * so a reused context gives the same bytes.  It lives in malloc'd memory,
 * outside any memory context, so an error in the middle of a block cannot
 * leave it half-freed.
 */
static ZSTD_CCtx *
stored_cctx(void)
{
	static ZSTD_CCtx *cctx = NULL;

	if (cctx == NULL)
		cctx = ZSTD_createCCtx();
	return cctx;
}

static void
flush_block(SeSegWriter *w)
{
	ZSTD_CCtx  *cctx = stored_cctx();
	size_t		bound;
	size_t		n;
	uint32		i;
	uint32		comp_len;

	if (w->blk_ndocs == 0)
		return;
	resetStringInfo(&w->raw);
	for (i = 0; i < w->blk_ndocs; i++)
		se_put_vint_fast(&w->raw, w->blk_lens[i]);
	appendBinaryStringInfo(&w->raw, w->blk.data, w->blk.len);

	bound = ZSTD_compressBound(w->raw.len);
	enlargeStringInfo(&w->stored_data, (int) bound);
	if (cctx != NULL)
		n = ZSTD_compressCCtx(cctx, w->stored_data.data + w->stored_data.len, bound,
							  w->raw.data, w->raw.len, w->zstd_level);
	else
		n = ZSTD_compress(w->stored_data.data + w->stored_data.len, bound,
						  w->raw.data, w->raw.len, w->zstd_level);
	if (ZSTD_isError(n))
	{
		/* out of memory, or cannot happen; keep the data readable anyway */
		memcpy(w->stored_data.data + w->stored_data.len, w->raw.data, w->raw.len);
		n = w->raw.len;
		comp_len = (uint32) n | SE_STORED_RAW_FLAG;
	}
	else
		comp_len = (uint32) n;
	se_put_u32(&w->stored_index, w->blk_first);
	se_put_u32(&w->stored_index, (uint32) w->raw.len);
	se_put_u32(&w->stored_index, (uint32) w->stored_data.len);
	se_put_u32(&w->stored_index, comp_len);
	w->stored_data.len += (int) n;
	w->stored_data.data[w->stored_data.len] = '\0';
	w->nblocks++;
	w->blk_ndocs = 0;
	resetStringInfo(&w->blk);
}

void
se_segwriter_doc(SeSegWriter *w, const SeDocMeta *meta, const char *source,
				 size_t source_len)
{
	if (w->ndocs >= w->max_doc)
		return;
	/* metadata */
	w->meta_offs[w->ndocs] = (uint32) w->meta.len;
	if (meta && meta->id && meta->id_len > 0)
	{
		se_put_vint_fast(&w->meta, (uint64) meta->id_len);
		appendBinaryStringInfo(&w->meta, meta->id, meta->id_len);
	}
	else
		se_put_vint_fast(&w->meta, 0);
	if (meta && meta->routing && meta->routing_len >= 0)
	{
		se_put_vint_fast(&w->meta, (uint64) meta->routing_len + 1);
		appendBinaryStringInfo(&w->meta, meta->routing, meta->routing_len);
	}
	else
		se_put_vint_fast(&w->meta, 0);
	se_put_vint_fast(&w->meta, se_zigzag(meta ? meta->seq_no : 0));
	se_put_vint_fast(&w->meta, se_zigzag(meta ? meta->primary_term : 0));
	se_put_vint_fast(&w->meta, se_zigzag(meta ? meta->version : 0));

	/* stored source */
	if (source == NULL)
		source_len = 0;
	if (w->blk_ndocs == 0)
		w->blk_first = w->ndocs;
	w->blk_lens = se_index_grow(w->blk_lens, &w->blk_lens_cap,
								(size_t) w->blk_ndocs + 1, sizeof(uint32));
	w->blk_lens[w->blk_ndocs++] = (uint32) source_len;
	/*
	 * A source must fit a StringInfo (1 GB); a larger one makes
	 * enlargeStringInfo raise its out-of-memory error rather than overflow.
	 */
	if (source_len > 0)
		appendBinaryStringInfo(&w->blk, source,
							   (int) Min(source_len, (size_t) PG_INT32_MAX));
	w->ndocs++;
	if (w->blk.len >= SE_STORED_BLOCK_TARGET)
		flush_block(w);
}

/* ---------------------------------------------------------------------
 * Finish: lay out the sections, TOC and footer
 * ---------------------------------------------------------------------
 */

static void
writer_free(SeSegWriter *w)
{
	int			i;

	for (i = 0; i < w->nfields; i++)
	{
		pfree(w->fields[i].name);
		if (w->fields[i].norm_vals)
			pfree(w->fields[i].norm_vals);
	}
	if (w->fields)
		pfree(w->fields);
	pfree(w->sec_terms.data);
	pfree(w->sec_post.data);
	pfree(w->sec_pos.data);
	pfree(w->sec_dv.data);
	pfree(w->term.data);
	pfree(w->prev.data);
	pfree(w->tmeta.data);
	pfree(w->tkeys.data);
	pfree(w->tblocks.data);
	pfree(w->dv_vals.data);
	pfree(w->dict.data);
	pfree(w->meta.data);
	pfree(w->blk.data);
	pfree(w->raw.data);
	pfree(w->stored_index.data);
	pfree(w->stored_data.data);
	if (w->toffs)
		pfree(w->toffs);
	if (w->dv_starts)
		pfree(w->dv_starts);
	if (w->dict_offs)
		pfree(w->dict_offs);
	if (w->blk_lens)
		pfree(w->blk_lens);
	pfree(w->doc_mark);
	pfree(w->meta_offs);
	se_postenc_free(&w->enc);
	pfree(w);
}

static void
put_section(StringInfo out, int start, uint64 *toc, SeSection id,
			const char *data, size_t len)
{
	se_pad_to(out, start, 8);
	toc[2 * (id - 1)] = (uint64) (out->len - start);
	toc[2 * (id - 1) + 1] = len;
	if (len > 0)
		appendBinaryStringInfo(out, data, (int) len);
}

void
se_segwriter_finish(SeSegWriter *w, const uint8 segment_id[SE_SEGMENT_ID_LEN],
					StringInfo out)
{
	StringInfoData fields;
	uint64		toc[2 * SE_NUM_SECTIONS];
	uint64		norms_off = 0;
	uint64		toc_off;
	int			start = out->len;
	int			i;

	if (w->tfield >= 0)
		se_segwriter_terms_end(w);
	if (w->dvfield >= 0)
		dv_begin(w, -1, SE_DV_NONE);	/* closes the open one */
	/* every doc-values field gets its (possibly empty) columns */
	for (i = 0; i < w->nfields; i++)
	{
		if (w->fields[i].dv == SE_DV_NUMERIC && w->fields[i].dv_len == 0)
		{
			se_segwriter_numeric_begin(w, i);
			se_segwriter_numeric_end(w);
		}
		else if (w->fields[i].dv == SE_DV_SORTED_SET && w->fields[i].dv_len == 0)
		{
			se_segwriter_sorted_begin(w, i);
			se_segwriter_sorted_end(w);
		}
	}
	while (w->ndocs < w->max_doc)
		se_segwriter_doc(w, NULL, NULL, 0);
	flush_block(w);
	w->meta_offs[w->max_doc] = (uint32) w->meta.len;

	/*
	 * One enlargement for the whole file: out usually starts empty, and
	 * growing it by doubling to the size of a segment copied it once more
	 * and faulted in fresh pages at every step.  need is an upper bound
	 * (the field table, padding, TOC and footer are small); past
	 * StringInfo's 1 GB limit the appends below raise its error as before.
	 */
	{
		uint64		need = (uint64) w->sec_terms.len + w->sec_post.len + w->sec_pos.len +
			w->sec_dv.len + sizeof(uint32) * ((uint64) w->max_doc + 1) + w->meta.len +
			w->stored_index.len + w->stored_data.len +
			(uint64) w->max_doc * w->nfields + 64 * (uint64) w->nfields + 4096;

		if (need < (uint64) (0x3fffffff - out->len))
			enlargeStringInfo(out, (int) need);
	}

	/* FIELDS */
	initStringInfo(&fields);
	se_put_vint_fast(&fields, (uint64) w->nfields);
	for (i = 0; i < w->nfields; i++)
	{
		WField	   *f = &w->fields[i];
		uint8		flags[3];

		se_put_vint_fast(&fields, (uint64) f->name_len);
		appendBinaryStringInfo(&fields, f->name, f->name_len);
		flags[0] = (uint8) f->io;
		flags[1] = f->norms ? 1 : 0;
		flags[2] = (uint8) f->dv;
		appendBinaryStringInfo(&fields, (const char *) flags, 3);
		se_put_vint_fast(&fields, (uint64) f->stats.doc_count);
		se_put_vint_fast(&fields, (uint64) f->stats.sum_total_term_freq);
		se_put_vint_fast(&fields, (uint64) f->stats.sum_doc_freq);
		se_put_vint_fast(&fields, f->terms_off);
		se_put_vint_fast(&fields, f->terms_len);
		se_put_vint_fast(&fields, f->post_off);
		se_put_vint_fast(&fields, f->post_len);
		se_put_vint_fast(&fields, f->pos_off);
		se_put_vint_fast(&fields, f->pos_len);
		se_put_vint_fast(&fields, f->norms ? norms_off : 0);
		if (f->norms)
			norms_off += w->max_doc;
		se_put_vint_fast(&fields, f->dv_off);
		se_put_vint_fast(&fields, f->dv_len);
	}

	se_file_write_header(out, SE_SEGMENT_FORMAT, w->version, segment_id);
	put_section(out, start, toc, SE_SEC_FIELDS, fields.data, fields.len);
	put_section(out, start, toc, SE_SEC_TERMS, w->sec_terms.data, w->sec_terms.len);
	put_section(out, start, toc, SE_SEC_POSTINGS, w->sec_post.data, w->sec_post.len);
	put_section(out, start, toc, SE_SEC_POSITIONS, w->sec_pos.data, w->sec_pos.len);

	/* NORMS: max_doc bytes per field with norms, in field order */
	put_section(out, start, toc, SE_SEC_NORMS, NULL, 0);
	for (i = 0; i < w->nfields; i++)
	{
		WField	   *f = &w->fields[i];

		if (!f->norms || w->max_doc == 0)
			continue;
		if (f->norm_vals)
			appendBinaryStringInfo(out, (const char *) f->norm_vals, w->max_doc);
		else
		{
			enlargeStringInfo(out, (int) w->max_doc);
			memset(out->data + out->len, 0, w->max_doc);
			out->len += (int) w->max_doc;
			out->data[out->len] = '\0';
		}
	}
	toc[2 * (SE_SEC_NORMS - 1) + 1] = norms_off;

	put_section(out, start, toc, SE_SEC_DOCVALUES, w->sec_dv.data, w->sec_dv.len);

	/* DOCMETA: offsets then entries */
	put_section(out, start, toc, SE_SEC_DOCMETA, (const char *) w->meta_offs,
				sizeof(uint32) * ((size_t) w->max_doc + 1));
	appendBinaryStringInfo(out, w->meta.data, w->meta.len);
	toc[2 * (SE_SEC_DOCMETA - 1) + 1] += w->meta.len;

	/* STORED: block count, block index, frames */
	put_section(out, start, toc, SE_SEC_STORED, NULL, 0);
	se_put_u32(out, w->nblocks);
	appendBinaryStringInfo(out, w->stored_index.data, w->stored_index.len);
	appendBinaryStringInfo(out, w->stored_data.data, w->stored_data.len);
	toc[2 * (SE_SEC_STORED - 1) + 1] = 4 + (uint64) w->stored_index.len +
		w->stored_data.len;

	/* TOC */
	se_pad_to(out, start, 8);
	toc_off = out->len - start;
	se_put_u32(out, w->max_doc);
	se_put_u32(out, SE_NUM_SECTIONS);
	for (i = 0; i < SE_NUM_SECTIONS; i++)
	{
		se_put_u32(out, (uint32) (i + 1));
		se_put_u32(out, 0);
		se_put_u64(out, toc[2 * i]);
		se_put_u64(out, toc[2 * i + 1]);
	}
	se_put_u64(out, toc_off);
	se_file_write_footer_at(out, start);
	pfree(fields.data);

	writer_free(w);
}

/* Drop a writer without producing a file (merge failures). */
void
se_segwriter_abort(SeSegWriter *w)
{
	if (w)
		writer_free(w);
}
