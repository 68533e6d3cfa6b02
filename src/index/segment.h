/*-------------------------------------------------------------------------
 *
 * segment.h
 *	  The segment codec: an immutable, self-describing segment file built
 *	  from an in-memory buffer, read back through a mapped byte range.
 *
 * Pure module: byte buffers in, byte buffers out; no catalog, no shared
 * memory, no file I/O (callers read/mmap and write files).  Everything is
 * palloc'd in CurrentMemoryContext.
 *
 * A segment holds, for up to 2^31-1 documents numbered 0..max_doc-1:
 *   - field infos (name, index options, norms, doc-values type);
 *   - per field a sorted term dictionary (byte order) with doc_freq and
 *     total_term_freq per term, postings (doc ids, freqs) and positions;
 *   - per field with norms one byte per document: the field length encoded
 *     with Lucene's SmallFloat.intToByte4 (0 = field absent in that doc);
 *   - per field statistics: doc_count (docs with >= 1 term in the field),
 *     sum_total_term_freq, sum_doc_freq;
 *   - doc values: SORTED_NUMERIC (int64 values per doc, sorted ascending)
 *     and SORTED_SET (distinct byte strings per doc, sorted);
 *   - per document: _id (also indexed as terms of the reserved field "_id"),
 *     optional _routing, seq_no, primary_term, version;
 *   - stored _source, zstd-compressed in blocks of consecutive documents.
 * Every file starts with a header (magic, format name, version, 16-byte
 * segment id) and ends with a footer carrying a CRC32C of all bytes before
 * it.  A reader refuses unknown versions and reports corruption as
 * status 500, type "index_corrupted_exception".
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_SEGMENT_H
#define SE_SEGMENT_H

#include "util/se_common.h"

#define SE_NO_MORE_DOCS		PG_INT32_MAX
#define SE_SEGMENT_ID_LEN	16
#define SE_ID_FIELD			"_id"
/*
 * Nested documents (mapping/docparse.c): each carries its nested path as a
 * term of this field and its position among its parent's values as a
 * numeric doc value; the root documents have neither.
 */
#define SE_NESTED_PATH_FIELD	"_nested_path"
#define SE_NESTED_OFFSET_FIELD	"_nested_offset"

typedef enum SeIndexOptions
{
	SE_IDX_NONE = 0,			/* not indexed */
	SE_IDX_DOCS = 1,			/* doc ids only (freq reads as 1) */
	SE_IDX_FREQS = 2,			/* doc ids + term frequencies */
	SE_IDX_POSITIONS = 3		/* + positions */
} SeIndexOptions;

typedef enum SeDocValuesType
{
	SE_DV_NONE = 0,
	SE_DV_NUMERIC = 1,			/* sorted numeric: int64 values per doc */
	SE_DV_SORTED_SET = 2		/* sorted set: distinct byte strings per doc */
} SeDocValuesType;

typedef struct SeDocMeta
{
	const char *id;				/* _id, UTF-8 */
	int			id_len;
	const char *routing;		/* _routing or NULL */
	int			routing_len;
	int64		seq_no;
	int64		primary_term;
	int64		version;
} SeDocMeta;

typedef struct SeFieldStats
{
	int64		doc_count;
	int64		sum_total_term_freq;
	int64		sum_doc_freq;
} SeFieldStats;

/* ---------------------------------------------------------------------
 * Building: the in-memory segment buffer of a shard's single writer.
 * ---------------------------------------------------------------------
 */
typedef struct SeSegmentBuilder SeSegmentBuilder;

/* Creates a builder in its own memory context under CurrentMemoryContext. */
extern SeSegmentBuilder *se_builder_create(void);
extern void se_builder_free(SeSegmentBuilder *b);

/*
 * Declare (or find) a field; returns its number.  Declaring an existing
 * name returns the existing number (options of the first declaration win).
 */
extern int	se_builder_field(SeSegmentBuilder *b, const char *name,
							 SeIndexOptions io, bool norms,
							 SeDocValuesType dv);

/*
 * Document assembly: begin, any number of adds, end.  Beginning a doc while
 * another is unfinished aborts the unfinished one (see abort_doc).
 */
extern void se_builder_begin_doc(SeSegmentBuilder *b);
/*
 * Discard the doc being assembled (e.g. its parse failed): nothing of it is
 * ever serialized or found by lookup_id.  If it already received terms or
 * values it still consumes a buffered doc id, as a deleted doc.
 */
extern void se_builder_abort_doc(SeSegmentBuilder *b);
/* One token occurrence; the field length for norms is the number of calls. */
extern void se_builder_add_term(SeSegmentBuilder *b, int field,
								const char *term, int len, int position);
/* se_builder_add_term for each of n tokens (faster for long values). */
typedef struct SeBuilderTerm
{
	const char *term;
	int			len;
	int			position;
} SeBuilderTerm;
extern void se_builder_add_terms(SeSegmentBuilder *b, int field,
								 const SeBuilderTerm *terms, int n);
/*
 * Keyword values (positions ignored): each as se_builder_add_term (if
 * index) then se_builder_add_sorted (if doc_values), one lookup per value.
 */
extern void se_builder_add_keywords(SeSegmentBuilder *b, int field,
									const SeBuilderTerm *terms, int n,
									bool index, bool doc_values);
extern void se_builder_add_numeric(SeSegmentBuilder *b, int field, int64 v);
extern void se_builder_add_sorted(SeSegmentBuilder *b, int field,
								  const char *v, int len);
/* Finishes the doc; returns its doc id in this buffer (0, 1, 2, ...). */
extern int	se_builder_end_doc(SeSegmentBuilder *b, const SeDocMeta *meta,
							   const char *source, size_t source_len);

/* Mark a buffered doc deleted (it will not be written). */
extern void se_builder_delete(SeSegmentBuilder *b, int doc);
extern bool se_builder_is_deleted(SeSegmentBuilder *b, int doc);
/* Latest non-deleted buffered doc with this _id, or -1. */
extern int	se_builder_lookup_id(SeSegmentBuilder *b, const char *id, int len);
/* A hint: the lookup_id (and end_doc) of this _id come next. */
extern void se_builder_prefetch_id(SeSegmentBuilder *b, const char *id, int len);
/* Pointers stay valid until se_builder_free. */
extern void se_builder_doc_meta(SeSegmentBuilder *b, int doc, SeDocMeta *meta);

extern uint32 se_builder_num_docs(SeSegmentBuilder *b);	/* incl. deleted */
extern uint32 se_builder_live_docs(SeSegmentBuilder *b);
/* Approximate heap bytes held (for index_buffer_size accounting). */
extern size_t se_builder_ram_bytes(SeSegmentBuilder *b);

/*
 * Serialize the live buffered docs (deleted ones dropped, the rest keep
 * their relative order) as a segment file appended to out (the file starts
 * at out->data + out->len on entry).  A doc begun but not ended is left
 * out.  zstd_level: compression level for stored _source blocks.  The
 * file must fit a StringInfo (1 GB); shards flush long before.
 */
extern void se_builder_serialize(SeSegmentBuilder *b,
								 const uint8 segment_id[SE_SEGMENT_ID_LEN],
								 int zstd_level, StringInfo out);

/* ---------------------------------------------------------------------
 * Reading: data must stay mapped while the reader is used.
 * ---------------------------------------------------------------------
 */
typedef struct SeSegmentReader SeSegmentReader;

/*
 * Open a segment from data[0..len).  verify_checksum: compute the CRC32C of
 * the whole file (otherwise only header and footer structure are checked).
 * Returns NULL and sets err (500, "index_corrupted_exception") on any
 * mismatch.  All later reads are bounds-checked against len; a read that
 * would go out of bounds behaves as corruption (returns false/NULL/-1 and
 * sets the reader's error), never as undefined behaviour.
 */
extern SeSegmentReader *se_segment_open(const uint8 *data, size_t len,
										bool verify_checksum, SeError *err);
extern void se_segment_close(SeSegmentReader *r);
/* Non-NULL when a read found corruption after open. */
extern const SeError *se_segment_error(SeSegmentReader *r);

extern uint32 se_segment_max_doc(SeSegmentReader *r);
extern void se_segment_get_id(SeSegmentReader *r, uint8 out[SE_SEGMENT_ID_LEN]);

/*
 * A per-reader cache of doc bitsets derived from the segment's immutable
 * contents (search/nested.c: the docs of a nested path, the root docs),
 * held in the reader's memory, so they live and die with it and can never
 * be reused for another segment.  Never live docs: those change while the
 * segment does not.  Get: the cached bitset of key ((max_doc + 63) / 64
 * words), or NULL.  Put: a copy of bits cached under key, or bits itself
 * when the reader already holds SE_SEGMENT_BITS_MAX of them (at most 2
 * bytes per doc) or found corruption (the bits may be short).
 */
#define SE_SEGMENT_BITS_MAX 16
extern const uint64 *se_segment_bits_get(SeSegmentReader *r, const char *key);
extern const uint64 *se_segment_bits_put(SeSegmentReader *r, const char *key,
										 const uint64 *bits);

/* Field number by name, or -1 when the segment has no such field. */
extern int	se_segment_field(SeSegmentReader *r, const char *name);
extern int	se_segment_num_fields(SeSegmentReader *r);
extern const char *se_segment_field_name(SeSegmentReader *r, int field);
extern SeIndexOptions se_segment_field_index_options(SeSegmentReader *r, int field);
extern SeDocValuesType se_segment_field_dv_type(SeSegmentReader *r, int field);
extern bool se_segment_field_has_norms(SeSegmentReader *r, int field);
extern void se_segment_field_stats(SeSegmentReader *r, int field, SeFieldStats *stats);

/* Term lookup */
typedef struct SeTermInfo
{
	int32		doc_freq;
	int64		total_term_freq;
	/*
	 * Term-level impact: the largest freq of the term in any doc (1 for
	 * docs-only fields) and the smallest norm byte among its docs (0 when
	 * the field has no norms).  score(max_freq, min_norm) bounds the BM25
	 * score of every doc of the term in this segment.
	 */
	int32		max_freq;
	uint8		min_norm;
	/* codec-private locators */
	uint64		postings_offset;
	uint64		positions_offset;
	int			field;
} SeTermInfo;

extern bool se_segment_seek_exact(SeSegmentReader *r, int field,
								  const char *term, int len, SeTermInfo *ti);

/* Terms of a field in byte order, starting at the first term >= from. */
typedef struct SeTermsEnum SeTermsEnum;
extern SeTermsEnum *se_segment_terms(SeSegmentReader *r, int field,
									 const char *from, int from_len);
/* Returns false at the end; term stays valid until the next call. */
extern bool se_terms_next(SeTermsEnum *e, const char **term, int *len,
						  SeTermInfo *ti);
extern void se_terms_close(SeTermsEnum *e);
/* The same without decoding each term's metadata; se_terms_info reads it. */
extern bool se_terms_next_key(SeTermsEnum *e, const char **term, int *len);
extern bool se_terms_info(SeTermsEnum *e, SeTermInfo *ti);
extern void se_terms_seek(SeTermsEnum *e, const char *from, int from_len);

/*
 * Postings iteration (doc ids ascending).  Docs are stored in blocks of
 * 128 with skip data, so advance() jumps over whole blocks without
 * decoding them.  Positions are only read when asked for: an iterator
 * opened without positions never touches them, and one opened with them
 * decodes a doc's positions only on its first next_position call.
 */
typedef struct SePostings SePostings;
extern SePostings *se_postings_open(SeSegmentReader *r, const SeTermInfo *ti,
									bool with_positions);
extern int32 se_postings_doc(SePostings *p);	/* -1 before the first next */
extern int32 se_postings_next(SePostings *p);	/* SE_NO_MORE_DOCS at end */
extern int32 se_postings_advance(SePostings *p, int32 target);	/* first doc >= target */
extern int32 se_postings_freq(SePostings *p);
/* Positions of the current doc, ascending; -1 after the last one. */
extern int32 se_postings_next_position(SePostings *p);
extern int64 se_postings_cost(SePostings *p);
extern void se_postings_close(SePostings *p);

/*
 * Impacts for block-max scoring.  advance_shallow positions a skip cursor,
 * independent of the doc the iterator is on, on the block that may hold
 * target (the first block whose last doc is >= target), without decoding
 * any doc; it returns that block's last doc, or SE_NO_MORE_DOCS when no
 * block can hold target.  Every doc of the term in [target, returned doc]
 * lies in that block.  Targets are meant to ascend; a smaller one makes
 * the cursor walk again from the first block.
 *
 * block_impact reports the impact of the block the shallow cursor is on:
 * the largest freq and the smallest norm byte among its docs (1 and 0 for
 * fields without freqs or norms).  Before any advance_shallow, or after
 * it returned SE_NO_MORE_DOCS, it reports the term-level impact.
 */
extern int32 se_postings_advance_shallow(SePostings *p, int32 target);
extern void se_postings_block_impact(SePostings *p, int32 *max_freq,
									 uint8 *min_norm);

typedef struct SeImpact
{
	int32		freq;
	uint8		norm;
} SeImpact;

#define SE_MAX_IMPACTS 8

/*
 * The same block's impacts in full: up to SE_MAX_IMPACTS (freq, norm)
 * pairs, both ascending, such that every doc of the block has freq <= f
 * and norm >= n for at least one pair (the pairs no doc of the block beats
 * on both, merged into dominating pairs past the limit).  The best score
 * among the pairs is a much tighter bound than (max_freq, min_norm).
 * Fills impacts[0..n) and returns n >= 1; the term-level impact is the
 * single pair (max_freq, min_norm).
 */
extern int	se_postings_block_impacts(SePostings *p, SeImpact *impacts);

/*
 * One level up: impacts over the skip group (SE_POSTINGS_GROUP blocks of
 * 128 docs) that may hold target, from a cursor of its own.  Returns the
 * group's last doc: every doc of the term in [target, returned doc] has
 * freq <= f and norm >= n for one of the pairs put in impacts[0..*nimpacts).
 * A term without groups (one group's worth of blocks or fewer) answers
 * for the whole term with SE_NO_MORE_DOCS, as
 * does a target past the last doc.  Targets are meant to ascend.
 */
extern int32 se_postings_group_impacts(SePostings *p, int32 target,
									   SeImpact *impacts, int *nimpacts);

/* Norms: SmallFloat byte of the field length; 0 if the doc lacks the field. */
extern uint8 se_segment_norm(SeSegmentReader *r, int field, int32 doc);
/*
 * The same for hot loops: the field's max_doc norm bytes indexed by doc
 * (valid while the mapping is), or NULL when it has no norms.
 */
extern const uint8 *se_segment_norms(SeSegmentReader *r, int field);

/*
 * Doc values.  Return the number of values of doc (0 if none).  Numeric
 * values are unpacked into a reader buffer valid until the next call;
 * sorted values point into the mapping and are not NUL-terminated.
 */
extern bool se_segment_numeric_range_bits(SeSegmentReader *r, int field,
										  int64 lo, int64 hi, uint32 from,
										  uint32 to, uint64 *bits);
extern int	se_segment_numeric_values(SeSegmentReader *r, int field, int32 doc,
									  const int64 **values);
extern int	se_segment_sorted_count(SeSegmentReader *r, int field, int32 doc);
extern const char *se_segment_sorted_value(SeSegmentReader *r, int field,
										   int32 doc, int i, int *len);

/*
 * Sorted-set ordinals (additions for aggregations): a field's distinct
 * values in a segment are numbered 0..dict_size-1 in byte order, and a
 * doc's ordinals ascend.  Values point into the mapping (not
 * NUL-terminated).  sorted_ord returns -1 when out of range.
 */
extern int64 se_segment_sorted_ord(SeSegmentReader *r, int field, int32 doc,
								   int i);
extern int64 se_segment_sorted_dict_size(SeSegmentReader *r, int field);
extern const char *se_segment_sorted_dict_value(SeSegmentReader *r, int field,
												int64 ord, int *len);

/*
 * Per-document metadata and stored source.  _id and _routing point into the
 * mapping and are not NUL-terminated; an out-of-range or corrupted doc
 * gives "" with length 0.
 */
extern const char *se_segment_doc_id(SeSegmentReader *r, int32 doc, int *len);
extern const char *se_segment_doc_routing(SeSegmentReader *r, int32 doc, int *len);	/* NULL if none */
extern void se_segment_doc_meta(SeSegmentReader *r, int32 doc, SeDocMeta *meta);
/* Appends the document's _source bytes to out; false on corruption. */
extern bool se_segment_source(SeSegmentReader *r, int32 doc, StringInfo out);
/* Highest doc id with this _id (deleted or not), or -1. */
extern int32 se_segment_lookup_id(SeSegmentReader *r, const char *id, int len);

/* ---------------------------------------------------------------------
 * Live docs: one bit per doc (1 = live), stored in a separate small file
 * per generation "<segment>_<gen>.liv" with its own header and footer.
 * ---------------------------------------------------------------------
 */
extern uint64 *se_livedocs_new(uint32 max_doc);	/* all live */
static inline bool
se_livedocs_get(const uint64 *bits, int32 doc)
{
	return bits == NULL || (bits[doc >> 6] >> (doc & 63)) & 1;
}
static inline void
se_livedocs_clear(uint64 *bits, int32 doc)
{
	bits[doc >> 6] &= ~((uint64) 1 << (doc & 63));
}
extern uint32 se_livedocs_count(const uint64 *bits, uint32 max_doc);
extern void se_livedocs_serialize(const uint64 *bits, uint32 max_doc,
								  const uint8 segment_id[SE_SEGMENT_ID_LEN],
								  int64 gen, StringInfo out);
extern uint64 *se_livedocs_parse(const uint8 *data, size_t len, uint32 max_doc,
								 const uint8 segment_id[SE_SEGMENT_ID_LEN],
								 SeError *err);

/* ---------------------------------------------------------------------
 * Merge: the live docs of n segments, in order, into one new segment.
 * ---------------------------------------------------------------------
 */
extern bool se_segment_merge(SeSegmentReader **readers, const uint64 **live,
							 int n, const uint8 segment_id[SE_SEGMENT_ID_LEN],
							 int zstd_level, StringInfo out, SeError *err);

/* SmallFloat (Lucene) field-length norm coding. */
extern uint8 se_smallfloat_int_to_byte4(int32 i);
extern int32 se_smallfloat_byte4_to_int(uint8 b);

/* CRC32C footer helpers shared by all our file formats. */
extern void se_file_write_header(StringInfo out, const char *format_name,
								 int32 version,
								 const uint8 id[SE_SEGMENT_ID_LEN]);
extern void se_file_write_footer(StringInfo out);
/*
 * Check header (magic, format name, version within [min,max], id if not
 * NULL) and footer (magic, CRC32C of all preceding bytes if verify).
 * Returns the header length, or -1 with err set.
 */
extern int	se_file_check(const uint8 *data, size_t len, const char *format_name,
						  int32 min_version, int32 max_version,
						  const uint8 *expect_id, bool verify, SeError *err);
#define SE_FILE_FOOTER_LEN 16

#endif							/* SE_SEGMENT_H */
