/*-------------------------------------------------------------------------
 *
 * segment_internal.h
 *	  Codec-private declarations shared by the files of src/index/: format
 *	  constants, bounds-checked decoding helpers, the segment writer that
 *	  both the builder and merge drive, the postings encoder/decoder and the
 *	  reader's parsed view of a segment file.
 *
 * Nothing here is part of the segment.h contract; other modules must not
 * include this header.
 *
 * Segment file layout (all integers little-endian, offsets from file start):
 *
 *	 header		se_file_write_header("se_segment", SE_SEGMENT_VERSION, id)
 *	 FIELDS		varint nfields, then per field: name, options, stats and the
 *				(offset, length) of its regions in the sections below
 *	 TERMS		per indexed field a block term dictionary (below)
 *	 POSTINGS	per term with doc_freq > 1: skip table (per block of 128
 *				docs: last doc, lengths, impact), then blocks of doc deltas
 *				(+ freqs), PFOR bit-packed; a tail block < 128 in varints
 *	 POSITIONS	per term and doc: position deltas
 *	 NORMS		per field with norms: max_doc bytes
 *	 DOCVALUES	8-aligned per field: numeric = a column of int64 values;
 *				sorted set = u32 ndict, u32 dict_offs[ndict + 1], dict
 *				bytes, pad to 8, then a column of its ords.  A column
 *				is packed:
 *				  u8 single (1: every doc has exactly one value), u8
 *				  start_bits, u8 value_bits (0..56, or 64 = raw), u8 0,
 *				  u32 0, u64 nvalues, i64 min, u64 gcd;
 *				  unless single, starts[max_doc + 1] in start_bits each
 *				  (doc d's values are [starts[d], starts[d + 1]));
 *				  the values as (v - min) / gcd in value_bits each (or
 *				  raw int64 when value_bits is 64).
 *				Packed arrays are little-endian bit strings followed by
 *				8 zero bytes, so any value is one unaligned 8-byte load.
 *	 DOCMETA	u32 offs[max_doc + 1], then per doc: _id, _routing, seq_no,
 *				primary_term, version
 *	 STORED		u32 nblocks, per block {u32 first_doc, u32 raw_len,
 *				u32 offset, u32 comp_len}, then zstd frames; a frame
 *				decompresses to the docs' varint lengths then their bytes
 *	 TOC		u32 max_doc, u32 nsections, per section {u32 id, u32 0,
 *				u64 offset, u64 length}
 *	 u64		offset of TOC
 *	 footer		se_file_write_footer()
 *
 * The term dictionary of a field (TERMS) cuts its terms, ascending, into
 * blocks of k terms (the writer's SE_TERMS_BLOCK; the last block may be
 * shorter):
 *
 *	 u32 nterms, u32 k, u32 block_offs[nblocks + 1],
 *	 u32 key_offs[nblocks + 1], keys, blocks
 *
 * with nblocks = ceil(nterms / k).  keys concatenates the
 * first term of every block (key b is keys[key_offs[b], key_offs[b + 1]));
 * block b is blocks[block_offs[b], block_offs[b + 1]).  A block holds the
 * meta of its first term (whose bytes are its key), then per further term
 * varint shared-prefix length with the previous term, varint suffix
 * length, the suffix bytes and the term's meta.  A reader binary-searches
 * the keys (in the mapping: nothing is loaded at open) and scans one
 * block; a term costs its suffix plus about 2 bytes and 8 / k bytes
 * of index, instead of the whole term plus a 4-byte offset.  The
 * prefix length is the exact common prefix, so the byte after it grows:
 * readers check that terms strictly ascend as they scan.
 *
 * Since v5 (v4 files, as above, are still read) the header has a third
 * u32, the restart interval r (1..k), and a block is
 *
 *	 u32 restart_offs[(k - 1) / r], then the entries
 *
 * where every entry ends with varint meta length before the meta (the
 * first term's entry is only that), and the entry of the term at index
 * j * r of the block (j >= 1, slot j - 1) stores the whole term (shared
 * prefix 0) at restart_offs[j - 1] bytes from the block start (0: no such
 * term, in a short last block).  A seek binary-searches a block's
 * restart terms and scans at most r - 1 entries after one (LevelDB's
 * restart points; Lucene's BlockTree also keeps a block's metadata
 * skippable by length), and every scanned entry skips its meta in one
 * step instead of decoding its varints.
 *
 * The postings-specific parts (term meta inside TERMS, POSTINGS and
 * POSITIONS) are private to postings.c, so a later postings format only
 * touches that file and the version constant.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SEGMENT_INTERNAL_H
#define SE_SEGMENT_INTERNAL_H

#include "index/segment.h"
#include "util/varint.h"

/* The one place the segment format version lives. */
#define SE_SEGMENT_FORMAT			"se_segment"
#define SE_SEGMENT_VERSION			5
/*
 * v5 added term-dictionary restart points and meta lengths (above); v4
 * added postings skip groups and packed doc-values columns; v3 (flat
 * skip tables, u32/int64 doc values) and older files are refused: the
 * index must be rebuilt (reindexed) from its source.
 */
#define SE_SEGMENT_VERSION_MIN		4

/*
 * The version the writer writes (SE_SEGMENT_VERSION or 4): tests and
 * benchmarks set it to 4 to prove old files are still read.
 */
extern int	se_segment_write_version;

/*
 * Terms per term-dictionary block written (files record theirs, so a build
 * may override it to compare sizes; readers accept 1..SE_TERMS_BLOCK_MAX).
 */
#ifndef SE_TERMS_BLOCK
#define SE_TERMS_BLOCK				32
#endif
#define SE_TERMS_BLOCK_MAX			4096
/* Terms between restart points in a block (v5), likewise overridable. */
#ifndef SE_TERMS_RESTART
#define SE_TERMS_RESTART			8
#endif

#define SE_LIVEDOCS_FORMAT			"se_livedocs"
#define SE_LIVEDOCS_VERSION			1

/* Stored _source is compressed in blocks of at least this many raw bytes. */
#define SE_STORED_BLOCK_TARGET		(16 * 1024)

/* Block index flag: the block is stored uncompressed (comp_len = raw_len). */
#define SE_STORED_RAW_FLAG			0x80000000U

/* Upper bound of a decompressed stored block (one doc is < 1 GB). */
#define SE_STORED_MAX_RAW			((uint64) 0x40000000 + 4 * SE_STORED_BLOCK_TARGET)

#define SE_CORRUPTED				"index_corrupted_exception"

/* Section ids of the table of contents. */
typedef enum SeSection
{
	SE_SEC_FIELDS = 1,
	SE_SEC_TERMS,
	SE_SEC_POSTINGS,
	SE_SEC_POSITIONS,
	SE_SEC_NORMS,
	SE_SEC_DOCVALUES,
	SE_SEC_DOCMETA,
	SE_SEC_STORED
} SeSection;
#define SE_NUM_SECTIONS 8

/* ---------------------------------------------------------------------
 * Fast encoding / bounds-checked decoding helpers.
 * ---------------------------------------------------------------------
 */

/* Append a varint, writing into the buffer directly (hot in serialization). */
static inline void
se_put_vint_fast(StringInfo buf, uint64 v)
{
	char	   *p;

	if (buf->maxlen - buf->len <= 10)
		enlargeStringInfo(buf, 10);
	p = buf->data + buf->len;
	while (v >= 0x80)
	{
		*p++ = (char) ((v & 0x7F) | 0x80);
		v >>= 7;
	}
	*p++ = (char) v;
	buf->len = (int) (p - buf->data);
	buf->data[buf->len] = '\0';
}

/* Decode a varint from [*p, end); false when truncated or over-long. */
static inline bool
se_dec_vint(const uint8 **p, const uint8 *end, uint64 *out)
{
	if (*p < end && **p < 0x80)
	{
		*out = *(*p)++;
		return true;
	}
	return se_get_vint(p, end, out);
}

/* Zigzag mapping so that small negative int64s stay short as varints. */
static inline uint64
se_zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
se_unzigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

/* Append zero bytes until buf->len - base is a multiple of align. */
static inline void
se_pad_to(StringInfo buf, int base, int align)
{
	static const char zeros[8] = {0};
	int			rem = (buf->len - base) % align;

	if (rem != 0)
		appendBinaryStringInfo(buf, zeros, align - rem);
}

/* Doc-values columns: header size, raw width, slack after packed arrays */
#define SE_DV_COLUMN_HEADER		32
#define SE_DV_RAW_BITS			64
#define SE_DV_MAX_PACKED_BITS	56
#define SE_PACKED_SLACK			8

/* Bytes of n values of bits bits each, packed, slack included. */
static inline uint64
se_packed_len(uint64 n, int bits)
{
	return (n * (uint64) bits + 7) / 8 + SE_PACKED_SLACK;
}

/* Value i of a packed array of bits (<= SE_DV_MAX_PACKED_BITS) bits each. */
static inline uint64
se_packed_get(const uint8 *p, uint64 i, int bits)
{
	uint64		bit = i * (uint64) bits;

	if (bits == 0)
		return 0;
	return (se_read_u64(p + (bit >> 3)) >> (bit & 7)) &
		((UINT64CONST(1) << bits) - 1);
}

/* Grow a palloc'd array to hold at least need elements (huge-safe). */
extern void *se_index_grow(void *ptr, size_t *cap, size_t need, size_t elem);
extern void *se_index_alloc_huge(size_t size, bool zero);

/* Footer for a file that starts at out->data[start]. */
extern void se_file_write_footer_at(StringInfo out, int start);

/* Lower-case hex of a 16-byte id into out[33]. */
extern void se_file_id_hex(const uint8 *id, char *out);

/* ---------------------------------------------------------------------
 * Segment writer (writer.c): the one serializer both the builder and
 * merge feed.  Calls: add_field for every field; then, in any order per
 * field, terms_begin / term_begin / term_doc / term_pos / term_end /
 * terms_end (terms ascending, docs ascending), set_norm, numeric_*,
 * sorted_* -- except that a field's norms should be set before its terms,
 * because postings impacts are computed from the norms known when the
 * terms are written (later norms only make the impacts looser); exactly max_doc calls of se_segwriter_doc in doc order; then
 * finish.  Field statistics are computed from what is fed.
 * ---------------------------------------------------------------------
 */
typedef struct SeSegWriter SeSegWriter;

extern SeSegWriter *se_segwriter_create(uint32 max_doc, int zstd_level);
extern int	se_segwriter_add_field(SeSegWriter *w, const char *name, int name_len,
								   SeIndexOptions io, bool norms,
								   SeDocValuesType dv);
extern void se_segwriter_terms_begin(SeSegWriter *w, int field);
extern void se_segwriter_term_begin(SeSegWriter *w, const char *term, int len);
extern void se_segwriter_term_doc(SeSegWriter *w, int32 doc, uint32 freq);
extern void se_segwriter_term_pos(SeSegWriter *w, int32 pos);
/*
 * All count positions of the current doc at once, already encoded as the
 * POSITIONS section holds them (len bytes of varint deltas, the first from
 * 0): the same as count term_pos calls, without decoding them.
 */
extern void se_segwriter_term_pos_vints(SeSegWriter *w, const uint8 *vints,
										int len, uint32 count);
extern void se_segwriter_term_end(SeSegWriter *w);
extern void se_segwriter_terms_end(SeSegWriter *w);
extern void se_segwriter_set_norm(SeSegWriter *w, int field, int32 doc, uint8 norm);
extern void se_segwriter_numeric_begin(SeSegWriter *w, int field);
extern void se_segwriter_numeric_doc(SeSegWriter *w, int32 doc,
									 const int64 *values, int n);
extern void se_segwriter_numeric_end(SeSegWriter *w);
extern void se_segwriter_sorted_begin(SeSegWriter *w, int field);
extern void se_segwriter_sorted_dict_add(SeSegWriter *w, const char *v, int len);
extern void se_segwriter_sorted_doc(SeSegWriter *w, int32 doc,
									const uint32 *ords, int n);
extern void se_segwriter_sorted_end(SeSegWriter *w);
extern void se_segwriter_doc(SeSegWriter *w, const SeDocMeta *meta,
							 const char *source, size_t source_len);
extern void se_segwriter_finish(SeSegWriter *w,
								const uint8 segment_id[SE_SEGMENT_ID_LEN],
								StringInfo out);
extern void se_segwriter_abort(SeSegWriter *w);

/* ---------------------------------------------------------------------
 * Postings format (postings.c).
 * ---------------------------------------------------------------------
 */

/* Docs per postings block (skip entry and impact granularity). */
#define SE_POSTINGS_BLOCK	128
/* blocks per skip group (format v4) */
#define SE_POSTINGS_GROUP	32

/* Encoder state for the postings of one field (se_postenc_init). */
/* Per norm byte the largest freq seen (0 = none), over norms [lo, hi]. */
typedef struct SeImpactFront
{
	uint32		best[256];
	int			lo;
	int			hi;
} SeImpactFront;

typedef struct SePostingsEnc
{
	SeIndexOptions io;
	bool		norms;			/* field has norms: impacts carry min norm */
	const uint8 *norm_vals;		/* its norms, max_doc bytes, or NULL (= 0) */
	StringInfo	docs;			/* POSTINGS section buffer */
	StringInfo	pos;			/* POSITIONS section buffer */
	int			docs_base;		/* field's region start in docs */
	int			pos_base;		/* field's region start in pos */
	/* current term */
	int			term_docs_start;
	int			term_pos_start;
	int32		last_doc;
	int32		last_pos;
	int32		first_doc;
	uint32		freq;			/* freq of the current doc */
	uint32		pos_left;		/* positions still owed for the current doc */
	uint32		doc_freq;
	uint64		total_term_freq;
	uint32		max_freq;		/* term impact */
	uint8		min_norm;
	/* the block being filled and the term's encoded blocks */
	int			nbuf;
	int32		block_base;		/* last doc of the previous block, or -1 */
	int			block_pos_start;	/* pos->len where the block began */
	StringInfoData skip;
	StringInfoData blocks;
	StringInfoData head;		/* scratch for the term's impacts */
	/* the skip group being filled (see postings.c) */
	StringInfoData grp;			/* its block skip entries */
	int			grp_nblocks;
	int			ngroups;		/* groups written before it */
	int32		grp_base;		/* last doc before it, or -1 */
	int32		grp_last;
	uint64		grp_doc_bytes;
	uint64		grp_pos_bytes;
	SeImpactFront grp_front;	/* the group's competitive pairs so far */
	int32		buf_docs[SE_POSTINGS_BLOCK];
	uint32		buf_freqs[SE_POSTINGS_BLOCK];
	SeImpactFront term_front;	/* the term's competitive pairs so far */
} SePostingsEnc;

extern void se_postenc_init(SePostingsEnc *e, StringInfo docs, StringInfo pos);
extern void se_postenc_free(SePostingsEnc *e);
extern void se_postenc_term_begin(SePostingsEnc *e);
extern void se_postenc_doc(SePostingsEnc *e, int32 doc, uint32 freq);
extern void se_postenc_pos(SePostingsEnc *e, int32 pos);
extern void se_postenc_pos_vints(SePostingsEnc *e, const uint8 *vints, int len,
								 uint32 count);
/* Finish the term: appends its meta to meta_out (nothing if doc_freq 0). */
extern void se_postenc_term_end(SePostingsEnc *e, StringInfo meta_out);

/*
 * Decode a term's meta (in its term-dictionary block) into ti; *next (if
 * not NULL) gets the first byte after it.
 */
extern bool se_postings_decode_meta(SeSegmentReader *r, int field,
									const uint8 *p, const uint8 *end,
									SeTermInfo *ti, const uint8 **next);

/* Step *p over a varint without decoding it; false if truncated or over-long. */
static inline bool
se_skip_vint(const uint8 **p, const uint8 *end)
{
	const uint8 *q = *p;
	const uint8 *lim = (end - q > 10) ? q + 10 : end;

	while (q < lim && (*q & 0x80))
		q++;
	if (q >= lim)
		return false;
	*p = q + 1;
	return true;
}

/*
 * Step *p over one term meta (its layout is described in postings.c)
 * without decoding it, as the dictionary does for the terms it scans
 * past; false if truncated.  Validation is decode_meta's.
 */
static inline bool
se_postings_skip_meta(SeIndexOptions io, bool norms, const uint8 **p,
					  const uint8 *end)
{
	/* doc_freq 1 is the single byte 1: its doc sits in the meta */
	bool		single = *p < end && **p == 1;
	int			n = 2 + (io != SE_IDX_DOCS) + (io == SE_IDX_POSITIONS) +
		(!single && io != SE_IDX_DOCS);

	while (n-- > 0)
		if (!se_skip_vint(p, end))
			return false;
	if (!single && norms)
	{
		if (*p >= end)
			return false;
		(*p)++;
	}
	return true;
}

/* ---------------------------------------------------------------------
 * Reader internals (reader.c).
 * ---------------------------------------------------------------------
 */
typedef struct SeFieldR
{
	char	   *name;			/* NUL-terminated copy */
	int			name_len;
	SeIndexOptions io;
	bool		has_norms;
	SeDocValuesType dv;
	SeFieldStats stats;
	/* term dictionary (blocks of SE_TERMS_BLOCK terms) */
	uint32		nterms;
	uint32		nblocks;
	uint32		tblock_size;	/* terms per block */
	uint32		trestart;		/* terms per restart point; 0: v4 blocks */
	uint32		trestart_slots; /* restart offsets per block */
	const uint8 *tblock_offs;	/* u32[nblocks + 1] into tblocks */
	const uint8 *tkey_offs;		/* u32[nblocks + 1] into tkeys */
	const uint8 *tkeys;			/* first term of each block */
	uint64		tkeys_len;
	const uint8 *tblocks;
	uint64		tblocks_len;
	/* postings regions */
	const uint8 *post;
	uint64		post_len;
	const uint8 *pos;
	uint64		pos_len;
	/* norms: max_doc bytes or NULL */
	const uint8 *norms;
	/* doc values (see DOCVALUES above) */
	const uint8 *dv_starts;		/* packed, NULL when single */
	const uint8 *dv_values;		/* packed (or raw int64) */
	uint64		dv_nvalues;
	bool		dv_single;		/* one value per doc, no starts */
	uint8		dv_start_bits;
	uint8		dv_value_bits;
	int64		dv_min;
	uint64		dv_gcd;
	uint32		dv_ndict;		/* sorted set dictionary */
	const uint8 *dv_dict_offs;	/* u32[ndict + 1] */
	const uint8 *dv_dict_blob;
	uint64		dv_dict_len;
} SeFieldR;

struct SeSegmentReader
{
	const uint8 *data;
	size_t		len;
	uint8		id[SE_SEGMENT_ID_LEN];
	char		idhex[SE_SEGMENT_ID_LEN * 2 + 1];
	uint32		max_doc;
	int32		version;		/* the file's format version */
	int			nfields;
	SeFieldR   *fields;
	int		   *by_name;		/* field numbers sorted by name */
	/* per-doc metadata */
	const uint8 *meta_offs;		/* u32[max_doc + 1] */
	const uint8 *meta_blob;
	uint64		meta_blob_len;
	/* stored fields */
	uint32		nblocks;
	const uint8 *block_index;	/* 16 bytes per block */
	const uint8 *block_data;
	uint64		block_data_len;
	/* last decompressed stored block */
	int64		cache_block;	/* -1 = none */
	int32		cache_first_doc;
	uint32		cache_ndocs;
	char	   *cache_buf;
	size_t		cache_cap;
	uint32	   *cache_offs;		/* ndocs + 1 offsets into cache_buf */
	size_t		cache_offs_cap;
	/* aligned copy of numeric values when the mapping is misaligned */
	int64	   *scratch;
	size_t		scratch_cap;
	SeError		err;
	/* bitsets derived from the segment (se_segment_bits_put) */
	int			nbits;
	struct
	{
		char	   *key;
		uint64	   *bits;
	}			bits[SE_SEGMENT_BITS_MAX];
#ifndef SE_FRONTEND
	MemoryContext cxt;
#endif
};

/* Record corruption found while reading (first error wins). */
extern void se_segment_corrupt(SeSegmentReader *r, const char *section,
							   const char *fmt,...) pg_attribute_printf(3, 4);
/* Allocate in the reader's own memory (survives the caller's context). */
extern void *se_segment_alloc(SeSegmentReader *r, size_t size);

#endif							/* SE_SEGMENT_INTERNAL_H */
