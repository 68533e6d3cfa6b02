/*-------------------------------------------------------------------------
 *
 * reader.c
 *	  Segment reader: opens a mapped segment file and serves fields, term
 *	  dictionary, norms, doc values, per-document metadata and stored
 *	  sources from it.
 *
 * Open checks the header and footer (and the whole-file CRC32C when asked),
 * the table of contents and the field table, so that every region a later
 * read touches is known to lie inside the file.  Everything finer (term
 * entries, per-doc offsets, compressed blocks) is validated when read: a
 * bad value marks the reader corrupted (se_segment_error) and the call
 * returns a safe empty answer.  No read ever leaves [data, data + len).
 *
 * The reader owns a memory context (server) holding its parsed field table
 * and the last decompressed stored block; iterators and enums are palloc'd
 * in the caller's CurrentMemoryContext.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdarg.h>
#include <zstd.h>

#include "index/segment_internal.h"

#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

/* A zstd block of at most 128 KB never takes fewer than 4 bytes. */
#define ZSTD_MAX_RATIO 65536

typedef struct Range
{
	const uint8 *p;
	uint64		len;
} Range;

/*
 * A position in a field's term dictionary: the current term (rebuilt from
 * the prefix-compressed block into buf) and where its meta starts.
 */
typedef struct TermCursor
{
	SeSegmentReader *r;
	SeFieldR   *f;
	uint32		block;			/* current block; nblocks = exhausted */
	uint32		idx;			/* index of the current term in it */
	uint32		count;			/* terms in the block */
	uint32		next_restart;	/* index of the next restart term (v5) */
	bool		at_restart;		/* the current term is one (whole) */
	const uint8 *meta;			/* current term's meta */
	const uint8 *next;			/* just past it, or NULL while not known */
	const uint8 *end;			/* end of the block */
	const uint8 *blk;			/* start of the block (v5: its restart table) */
	uint8	   *buf;			/* current term */
	int			len;
	int			cap;
	bool		own_buf;		/* buf is palloc'd (else caller's stack) */
} TermCursor;

struct SeTermsEnum
{
	TermCursor	c;
	int			field;
	bool		started;		/* the cursor's term was returned */
	uint8		small[96];		/* the term buffer until a term outgrows it */
};

/* ---------------------------------------------------------------------
 * Errors and memory
 * ---------------------------------------------------------------------
 */

void *
se_segment_alloc(SeSegmentReader *r, size_t size)
{
#ifndef SE_FRONTEND
	return MemoryContextAllocExtended(r->cxt, Max(size, 1), MCXT_ALLOC_HUGE);
#else
	return palloc(Max(size, 1));
#endif
}

void
se_segment_corrupt(SeSegmentReader *r, const char *section, const char *fmt,...)
{
	StringInfoData buf;
	va_list		args;
#ifndef SE_FRONTEND
	MemoryContext old;
#endif

	if (se_error_is_set(&r->err))
		return;
#ifndef SE_FRONTEND
	/* the error outlives the caller's (per-query) context */
	old = MemoryContextSwitchTo(r->cxt);
#endif
	initStringInfo(&buf);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	se_error_set(&r->err, 500, SE_CORRUPTED, "segment [%s] is corrupted: %s: %s",
				 r->idhex, section, buf.data);
	pfree(buf.data);
#ifndef SE_FRONTEND
	MemoryContextSwitchTo(old);
#endif
}

const SeError *
se_segment_error(SeSegmentReader *r)
{
	return (r && se_error_is_set(&r->err)) ? &r->err : NULL;
}

/* ---------------------------------------------------------------------
 * Open / close
 * ---------------------------------------------------------------------
 */

static bool
sub_range(Range sec, uint64 off, uint64 len, Range *out)
{
	if (off > sec.len || len > sec.len - off)
		return false;
	out->p = sec.p + off;
	out->len = len;
	return true;
}

static int
cmp_field_name(const void *a, const void *b, void *arg)
{
	SeSegmentReader *r = arg;
	const SeFieldR *x = &r->fields[*(const int *) a];
	const SeFieldR *y = &r->fields[*(const int *) b];
	int			c = memcmp(x->name, y->name, Min(x->name_len, y->name_len));

	if (c != 0)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Check the term dictionary's header; blocks are checked as they are read. */
static bool
parse_term_dict(SeSegmentReader *r, SeFieldR *f, Range t)
{
	uint64		n,
				k,
				rs = 0,
				nb,
				fixed = r->version >= 5 ? 12 : 8,
				hdr;

	if (t.len == 0)
		return true;
	if (f->io == SE_IDX_NONE || t.len < fixed)
		return false;
	n = se_read_u32(t.p);
	k = se_read_u32(t.p + 4);
	if (k < 1 || k > SE_TERMS_BLOCK_MAX)
		return false;
	if (r->version >= 5)
	{
		rs = se_read_u32(t.p + 8);
		if (rs < 1 || rs > k)
			return false;
	}
	nb = (n + k - 1) / k;
	hdr = fixed + 8 * (nb + 1);
	if (hdr > t.len)
		return false;
	f->nterms = (uint32) n;
	f->tblock_size = (uint32) k;
	f->trestart = (uint32) rs;
	f->trestart_slots = rs ? (uint32) ((k - 1) / rs) : 0;
	f->nblocks = (uint32) nb;
	f->tblock_offs = t.p + fixed;
	f->tkey_offs = t.p + fixed + 4 * (nb + 1);
	f->tkeys_len = se_read_u32(f->tkey_offs + 4 * nb);
	f->tblocks_len = se_read_u32(f->tblock_offs + 4 * nb);
	if (f->tkeys_len + f->tblocks_len != t.len - hdr)
		return false;
	f->tkeys = t.p + hdr;
	f->tblocks = f->tkeys + f->tkeys_len;
	return true;
}

/* A doc-values column (segment_internal.h) of len bytes at p. */
static bool
parse_dv_column(SeSegmentReader *r, SeFieldR *f, const uint8 *p, uint64 len)
{
	uint64		n,
				at = SE_DV_COLUMN_HEADER,
				need;
	int			sbits,
				vbits;

	if (len < SE_DV_COLUMN_HEADER || p[0] > 1 || p[3] != 0 ||
		se_read_u32(p + 4) != 0)
		return false;
	f->dv_single = p[0] == 1;
	sbits = p[1];
	vbits = p[2];
	n = se_read_u64(p + 8);
	f->dv_min = (int64) se_read_u64(p + 16);
	f->dv_gcd = se_read_u64(p + 24);
	if (sbits > SE_DV_MAX_PACKED_BITS ||
		(vbits > SE_DV_MAX_PACKED_BITS && vbits != SE_DV_RAW_BITS) ||
		f->dv_gcd == 0 || n > PG_UINT32_MAX)
		return false;
	if (f->dv_single)
	{
		if (n != r->max_doc || sbits != 0)
			return false;
		f->dv_starts = NULL;
	}
	else
	{
		need = se_packed_len((uint64) r->max_doc + 1, sbits);
		if (need > len - at)
			return false;
		f->dv_starts = p + at;
		at += need;
	}
	need = vbits == SE_DV_RAW_BITS ? 8 * n : se_packed_len(n, vbits);
	if (need != len - at)
		return false;
	f->dv_values = p + at;
	f->dv_nvalues = n;
	f->dv_start_bits = (uint8) sbits;
	f->dv_value_bits = (uint8) vbits;
	return true;
}

static bool
parse_doc_values(SeSegmentReader *r, SeFieldR *f, Range d)
{
	uint64		at;
	uint64		dict_len;

	if (f->dv == SE_DV_NONE)
		return d.len == 0;
	if (f->dv == SE_DV_NUMERIC)
		return parse_dv_column(r, f, d.p, d.len);
	/* sorted set: the dictionary, then the column of ords */
	if (d.len < 8)
		return false;
	f->dv_ndict = se_read_u32(d.p);
	at = 4 + 4 * ((uint64) f->dv_ndict + 1);
	if (at > d.len)
		return false;
	f->dv_dict_offs = d.p + 4;
	dict_len = se_read_u32(d.p + at - 4);
	if (dict_len > d.len - at)
		return false;
	f->dv_dict_blob = d.p + at;
	f->dv_dict_len = dict_len;
	at = TYPEALIGN(8, at + dict_len);
	return at <= d.len && parse_dv_column(r, f, d.p + at, d.len - at);
}

static bool
parse_fields(SeSegmentReader *r, const Range *sec)
{
	const uint8 *p = sec[SE_SEC_FIELDS].p;
	const uint8 *end = p + sec[SE_SEC_FIELDS].len;
	uint64		n;
	int			i;

	/* a field entry takes at least 16 bytes */
	if (!se_dec_vint(&p, end, &n) || n > sec[SE_SEC_FIELDS].len / 16)
	{
		se_segment_corrupt(r, "fields", "bad field count");
		return false;
	}
	r->nfields = (int) n;
	r->fields = se_segment_alloc(r, sizeof(SeFieldR) * (n + 1));
	memset(r->fields, 0, sizeof(SeFieldR) * (n + 1));
	for (i = 0; i < r->nfields; i++)
	{
		SeFieldR   *f = &r->fields[i];
		uint64		v[15];
		int			k;
		Range		t;

		if (!se_dec_vint(&p, end, &v[0]) || v[0] > (uint64) (end - p) ||
			v[0] > PG_INT32_MAX - 1)
			goto bad;
		f->name = se_segment_alloc(r, v[0] + 1);
		memcpy(f->name, p, v[0]);
		f->name[v[0]] = '\0';
		f->name_len = (int) v[0];
		p += v[0];
		if (end - p < 3 || p[0] > SE_IDX_POSITIONS || p[1] > 1 ||
			p[2] > SE_DV_SORTED_SET)
			goto bad;
		f->io = (SeIndexOptions) p[0];
		f->has_norms = p[1] != 0;
		f->dv = (SeDocValuesType) p[2];
		p += 3;
		for (k = 0; k < 12; k++)
			if (!se_dec_vint(&p, end, &v[k]) || v[k] > (uint64) PG_INT64_MAX)
				goto bad;
		if (v[0] > r->max_doc)
			goto bad;
		f->stats.doc_count = (int64) v[0];
		f->stats.sum_total_term_freq = (int64) v[1];
		f->stats.sum_doc_freq = (int64) v[2];
		if (!sub_range(sec[SE_SEC_TERMS], v[3], v[4], &t) ||
			!parse_term_dict(r, f, t))
			goto bad;
		if (!sub_range(sec[SE_SEC_POSTINGS], v[5], v[6], &t))
			goto bad;
		f->post = t.p;
		f->post_len = t.len;
		if (!sub_range(sec[SE_SEC_POSITIONS], v[7], v[8], &t))
			goto bad;
		f->pos = t.p;
		f->pos_len = t.len;
		if (f->has_norms)
		{
			if (!sub_range(sec[SE_SEC_NORMS], v[9], r->max_doc, &t))
				goto bad;
			f->norms = t.p;
		}
		if (!sub_range(sec[SE_SEC_DOCVALUES], v[10], v[11], &t) ||
			!parse_doc_values(r, f, t))
			goto bad;
	}
	if (p != end)
	{
		se_segment_corrupt(r, "fields", "trailing bytes in field table");
		return false;
	}

	/* name index for se_segment_field */
	r->by_name = se_segment_alloc(r, sizeof(int) * (r->nfields + 1));
	for (i = 0; i < r->nfields; i++)
		r->by_name[i] = i;
	qsort_arg(r->by_name, r->nfields, sizeof(int), cmp_field_name, r);
	for (i = 1; i < r->nfields; i++)
		if (cmp_field_name(&r->by_name[i - 1], &r->by_name[i], r) == 0)
		{
			se_segment_corrupt(r, "fields", "duplicate field [%s]",
							   r->fields[r->by_name[i]].name);
			return false;
		}
	return true;

bad:
	se_segment_corrupt(r, "fields", "invalid entry for field %d", i);
	return false;
}

static bool
parse_segment(SeSegmentReader *r, int hdr_len)
{
	Range		sec[SE_NUM_SECTIONS + 1];
	bool		seen[SE_NUM_SECTIONS + 1];
	size_t		body_end = r->len - SE_FILE_FOOTER_LEN - 8;
	uint64		toc_off;
	uint32		nsect;
	uint32		i;
	const uint8 *t;
	Range		d;

	memset(seen, 0, sizeof(seen));
	if (r->len < (size_t) hdr_len + SE_FILE_FOOTER_LEN + 16)
	{
		se_segment_corrupt(r, "toc", "file too short");
		return false;
	}
	toc_off = se_read_u64(r->data + body_end);
	if (toc_off < (uint64) hdr_len || toc_off > body_end || body_end - toc_off < 8)
	{
		se_segment_corrupt(r, "toc", "bad offset");
		return false;
	}
	t = r->data + toc_off;
	r->max_doc = se_read_u32(t);
	nsect = se_read_u32(t + 4);
	if ((uint64) nsect * 24 != body_end - toc_off - 8 ||
		r->max_doc >= (uint32) PG_INT32_MAX)
	{
		se_segment_corrupt(r, "toc", "bad size");
		return false;
	}
	for (i = 0; i < nsect; i++)
	{
		const uint8 *e = t + 8 + 24 * (uint64) i;
		uint32		id = se_read_u32(e);
		uint64		off = se_read_u64(e + 8);
		uint64		len = se_read_u64(e + 16);

		if (off < (uint64) hdr_len || off > toc_off || len > toc_off - off)
		{
			se_segment_corrupt(r, "toc", "section %u out of bounds", id);
			return false;
		}
		if (id < 1 || id > SE_NUM_SECTIONS)
			continue;			/* unknown sections are skipped */
		if (seen[id])
		{
			se_segment_corrupt(r, "toc", "duplicate section %u", id);
			return false;
		}
		seen[id] = true;
		sec[id].p = r->data + off;
		sec[id].len = len;
	}
	for (i = 1; i <= SE_NUM_SECTIONS; i++)
		if (!seen[i])
		{
			se_segment_corrupt(r, "toc", "missing section %u", i);
			return false;
		}

	if (!parse_fields(r, sec))
		return false;

	/* per-doc metadata */
	if (!sub_range(sec[SE_SEC_DOCMETA], 0, 4 * ((uint64) r->max_doc + 1), &d))
	{
		se_segment_corrupt(r, "docmeta", "section too short");
		return false;
	}
	r->meta_offs = d.p;
	r->meta_blob = d.p + d.len;
	r->meta_blob_len = sec[SE_SEC_DOCMETA].len - d.len;

	/* stored fields */
	d = sec[SE_SEC_STORED];
	if (d.len < 4)
	{
		se_segment_corrupt(r, "stored", "section too short");
		return false;
	}
	r->nblocks = se_read_u32(d.p);
	if (16 * (uint64) r->nblocks > d.len - 4 || r->nblocks > r->max_doc ||
		(r->max_doc > 0 && r->nblocks == 0))
	{
		se_segment_corrupt(r, "stored", "bad block count");
		return false;
	}
	r->block_index = d.p + 4;
	r->block_data = d.p + 4 + 16 * (uint64) r->nblocks;
	r->block_data_len = d.len - 4 - 16 * (uint64) r->nblocks;
	return true;
}

SeSegmentReader *
se_segment_open(const uint8 *data, size_t len, bool verify_checksum,
				SeError *err)
{
	SeSegmentReader *r;
	int			hdr;
#ifndef SE_FRONTEND
	MemoryContext cxt;
#endif

	hdr = se_file_check(data, len, SE_SEGMENT_FORMAT, SE_SEGMENT_VERSION_MIN,
						SE_SEGMENT_VERSION, NULL, verify_checksum, err);
	if (hdr < 0)
		return NULL;
#ifndef SE_FRONTEND
	cxt = AllocSetContextCreate(CurrentMemoryContext,
								"search_engine segment reader",
								ALLOCSET_SMALL_SIZES);
	r = MemoryContextAllocZero(cxt, sizeof(SeSegmentReader));
	r->cxt = cxt;
#else
	r = palloc0(sizeof(SeSegmentReader));
#endif
	r->data = data;
	r->len = len;
	r->version = (int32) se_read_u32(data + 5 + strlen(SE_SEGMENT_FORMAT));
	memcpy(r->id, data + hdr - SE_SEGMENT_ID_LEN, SE_SEGMENT_ID_LEN);
	se_file_id_hex(r->id, r->idhex);
	r->cache_block = -1;
	se_error_init(&r->err);
	if (!parse_segment(r, hdr))
	{
		se_error_set(err, r->err.status, r->err.type, "%s", r->err.reason);
		se_segment_close(r);
		return NULL;
	}
	return r;
}

void
se_segment_close(SeSegmentReader *r)
{
	if (r == NULL)
		return;
#ifndef SE_FRONTEND
	MemoryContextDelete(r->cxt);
#else
	{
		int			i;

		if (r->fields)
		{
			for (i = 0; i < r->nfields; i++)
				if (r->fields[i].name)
					pfree(r->fields[i].name);
			pfree(r->fields);
		}
		if (r->by_name)
			pfree(r->by_name);
		if (r->cache_buf)
			pfree(r->cache_buf);
		if (r->cache_offs)
			pfree(r->cache_offs);
		if (r->scratch)
			pfree(r->scratch);
		if (r->err.reason)
			pfree(r->err.reason);
		for (i = 0; i < r->nbits; i++)
		{
			pfree(r->bits[i].key);
			pfree(r->bits[i].bits);
		}
		pfree(r);
	}
#endif
}

const uint64 *
se_segment_bits_get(SeSegmentReader *r, const char *key)
{
	int			i;

	for (i = 0; i < r->nbits; i++)
		if (strcmp(r->bits[i].key, key) == 0)
			return r->bits[i].bits;
	return NULL;
}

const uint64 *
se_segment_bits_put(SeSegmentReader *r, const char *key, const uint64 *bits)
{
	size_t		size = sizeof(uint64) * Max(((size_t) r->max_doc + 63) / 64, 1);
	size_t		klen = strlen(key) + 1;

	if (r->nbits >= SE_SEGMENT_BITS_MAX || se_error_is_set(&r->err))
		return bits;
	r->bits[r->nbits].key = se_segment_alloc(r, klen);
	memcpy(r->bits[r->nbits].key, key, klen);
	r->bits[r->nbits].bits = se_segment_alloc(r, size);
	memcpy(r->bits[r->nbits].bits, bits, size);
	return r->bits[r->nbits++].bits;
}

uint32
se_segment_max_doc(SeSegmentReader *r)
{
	return r->max_doc;
}

void
se_segment_get_id(SeSegmentReader *r, uint8 out[SE_SEGMENT_ID_LEN])
{
	memcpy(out, r->id, SE_SEGMENT_ID_LEN);
}

/* ---------------------------------------------------------------------
 * Fields
 * ---------------------------------------------------------------------
 */

static inline SeFieldR *
get_field(SeSegmentReader *r, int field)
{
	if (r == NULL || field < 0 || field >= r->nfields)
		return NULL;
	return &r->fields[field];
}

int
se_segment_field(SeSegmentReader *r, const char *name)
{
	int			lo = 0,
				hi = r->nfields;
	int			len;

	if (name == NULL)
		name = "";
	len = (int) strlen(name);

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		SeFieldR   *f = &r->fields[r->by_name[mid]];
		int			c = memcmp(f->name, name, Min(f->name_len, len));

		if (c == 0)
			c = (f->name_len > len) - (f->name_len < len);
		if (c == 0)
			return r->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int
se_segment_num_fields(SeSegmentReader *r)
{
	return r->nfields;
}

const char *
se_segment_field_name(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return f ? f->name : NULL;
}

SeIndexOptions
se_segment_field_index_options(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return f ? f->io : SE_IDX_NONE;
}

SeDocValuesType
se_segment_field_dv_type(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return f ? f->dv : SE_DV_NONE;
}

bool
se_segment_field_has_norms(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return f ? f->has_norms : false;
}

void
se_segment_field_stats(SeSegmentReader *r, int field, SeFieldStats *stats)
{
	SeFieldR   *f = get_field(r, field);

	if (f)
		*stats = f->stats;
	else
		memset(stats, 0, sizeof(SeFieldStats));
}

/* ---------------------------------------------------------------------
 * Term dictionary
 * ---------------------------------------------------------------------
 */

/* Byte order; an inline loop, as terms mostly differ in their first bytes. */
static inline int
cmp_bytes(const uint8 *a, int alen, const uint8 *b, int blen)
{
	int			n = Min(alen, blen);
	int			i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return (int) a[i] - (int) b[i];
	return (alen > blen) - (alen < blen);
}

static void
cursor_corrupt(TermCursor *c, const char *what)
{
	se_segment_corrupt(c->r, "terms", "field [%s]: %s in block %u",
					   c->f->name, what, c->block);
	c->block = c->f->nblocks;
}

/* The first term of block b (in the mapping); false if corrupted. */
static bool
block_key(TermCursor *c, uint32 b, const uint8 **key, int *len)
{
	SeFieldR   *f = c->f;
	uint32		o0 = se_read_u32(f->tkey_offs + 4 * (uint64) b);
	uint32		o1 = se_read_u32(f->tkey_offs + 4 * (uint64) b + 4);

	if (o0 > o1 || o1 > f->tkeys_len || o1 - o0 > (uint32) PG_INT32_MAX)
	{
		c->block = b;
		cursor_corrupt(c, "bad key offsets");
		return false;
	}
	*key = f->tkeys + o0;
	*len = (int) (o1 - o0);
	return true;
}

/* Grow the term buffer to len bytes or more, keeping the first keep bytes. */
static pg_noinline void
cursor_grow(TermCursor *c, int len, int keep)
{
	len = Max(len, 2 * c->cap);
	if (c->own_buf)
		c->buf = repalloc(c->buf, len);	/* a term is < 1 GB: sections are */
	else
	{
		uint8	   *b = palloc(len);

		memcpy(b, c->buf, keep);
		c->buf = b;
		c->own_buf = true;
	}
	c->cap = len;
}

/* Make room for a term of len bytes, keeping the first keep bytes. */
static inline void
cursor_reserve(TermCursor *c, int len, int keep)
{
	if (unlikely(len > c->cap))
		cursor_grow(c, len, keep);
}

/*
 * Copy a suffix of n bytes to buf + at (room reserved).  Suffixes are
 * short: when 16 bytes fit on both sides, a fixed-size copy (two moves)
 * beats a memcpy call; the bytes past n are scratch.
 */
static inline void
copy_suffix(TermCursor *c, int at, const uint8 *src, int n)
{
	if (n <= 16 && c->cap - at >= 16 && c->end - src >= 16)
		memcpy(c->buf + at, src, 16);
	else
		memcpy(c->buf + at, src, n);
}

/*
 * v5: the meta length at p (an entry's end); sets meta and next.  False
 * when it does not fit in the block.
 */
static inline bool
cursor_meta_len(TermCursor *c, const uint8 *p)
{
	uint64		ml;

	if (!se_dec_vint(&p, c->end, &ml) || ml > (uint64) (c->end - p))
		return false;
	c->meta = p;
	c->next = p + ml;
	return true;
}

/* Position the cursor on the first term of block b. */
static bool
cursor_load(TermCursor *c, uint32 b)
{
	SeFieldR   *f = c->f;
	const uint8 *key;
	int			klen;
	uint32		o0,
				o1;

	if (b >= f->nblocks)
	{
		c->block = f->nblocks;
		return false;
	}
	if (!block_key(c, b, &key, &klen))
		return false;
	c->block = b;
	o0 = se_read_u32(f->tblock_offs + 4 * (uint64) b);
	o1 = se_read_u32(f->tblock_offs + 4 * (uint64) b + 4);
	if (o0 > o1 || o1 > f->tblocks_len)
	{
		cursor_corrupt(c, "bad block offsets");
		return false;
	}
	c->blk = f->tblocks + o0;
	c->meta = c->blk;
	c->next = NULL;
	c->end = f->tblocks + o1;
	c->idx = 0;
	c->count = Min(f->tblock_size, f->nterms - b * f->tblock_size);
	c->next_restart = f->trestart > 0 ? f->trestart : PG_UINT32_MAX;
	c->at_restart = false;
	if (f->trestart > 0)
	{
		/* past the restart table, the first term's meta length */
		c->meta += 4 * (uint64) f->trestart_slots;
		if (c->meta > c->end || !cursor_meta_len(c, c->meta))
		{
			cursor_corrupt(c, "bad block start");
			return false;
		}
	}
	cursor_reserve(c, klen, 0);
	memcpy(c->buf, key, klen);
	c->len = klen;
	return true;
}

/*
 * Read the entry of the next term of the block (idx + 1 < count): skip
 * the current meta, read the prefix length and the suffix.  The cursor
 * moves to the new term's meta and length; its bytes are the caller's to
 * rebuild (buf still holds the previous term).
 */
static pg_attribute_always_inline bool
cursor_entry(TermCursor *c, const uint8 **suffix, int *prefix)
{
	const uint8 *p = c->next ? c->next : c->meta;
	uint64		pl,
				sl;

	if ((c->next == NULL &&
		 !se_postings_skip_meta(c->f->io, c->f->has_norms, &p, c->end)) ||
		!se_dec_vint(&p, c->end, &pl) || !se_dec_vint(&p, c->end, &sl) ||
		pl > (uint64) c->len || sl > (uint64) (c->end - p) || sl == 0 ||
		pl + sl > (uint64) PG_INT32_MAX)
	{
		cursor_corrupt(c, "bad term entry");
		return false;
	}
	c->len = (int) (pl + sl);
	c->idx++;
	/* no division per entry: the next restart index is kept */
	c->at_restart = c->idx == c->next_restart;
	if (c->f->trestart > 0)
	{
		/* v5: a restart term is whole; the meta's length precedes it */
		if (c->at_restart)
			c->next_restart += c->f->trestart;
		if ((c->at_restart && pl != 0) || !cursor_meta_len(c, p + sl))
		{
			cursor_corrupt(c, "bad term entry");
			return false;
		}
	}
	else
	{
		c->meta = p + sl;
		c->next = NULL;
	}
	*suffix = p;
	*prefix = (int) pl;
	return true;
}

/* Move to the next term; false at the end or on corruption. */
static bool
cursor_next(TermCursor *c)
{
	const uint8 *suffix;
	int			prefix;
	const uint8 *key;
	int			klen;

	if (c->block >= c->f->nblocks)
		return false;
	if (c->idx + 1 < c->count)
	{
		int			prev_len = c->len;

		if (!cursor_entry(c, &suffix, &prefix))
			return false;
		/*
		 * The prefix is the exact common one: the term grows after it; a
		 * restart term (whole) is compared whole.
		 */
		if (c->at_restart ?
			cmp_bytes(suffix, c->len, c->buf, prev_len) <= 0 :
			prefix < prev_len && suffix[0] <= c->buf[prefix])
		{
			cursor_corrupt(c, "terms out of order");
			return false;
		}
		cursor_reserve(c, c->len, prefix);
		copy_suffix(c, prefix, suffix, c->len - prefix);
		return true;
	}
	if (c->block + 1 >= c->f->nblocks)
	{
		c->block = c->f->nblocks;
		return false;
	}
	/* the next block's key must follow the last term of this one */
	if (!block_key(c, c->block + 1, &key, &klen))
		return false;
	if (cmp_bytes(key, klen, c->buf, c->len) <= 0)
	{
		cursor_corrupt(c, "terms out of order");
		return false;
	}
	return cursor_load(c, c->block + 1);
}

static bool cursor_scan(TermCursor *c, const uint8 *key, int klen, bool *exact);

/*
 * Position the cursor on the first term >= key; true when there is one,
 * *exact tells whether it equals key.  Binary search over the block keys,
 * then a scan of one block that compares only the bytes past the prefix m
 * the current term shares with key, and copies no term bytes: a term whose
 * prefix is longer than m is smaller than key like its predecessor, and
 * the term the scan stops at is key's first prefix bytes plus its suffix.
 * (The scan trusts the order; enumeration checks it.)
 */
static bool
cursor_seek(TermCursor *c, const uint8 *key, int klen, bool *exact)
{
	SeFieldR   *f = c->f;
	uint32		lo = 0,
				hi = f->nblocks;
	const uint8 *k;
	int			kl;

	*exact = false;
	/* the last block whose first term is <= key */
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (!block_key(c, mid, &k, &kl))
			return false;
		if (cmp_bytes(k, kl, key, klen) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return cursor_load(c, 0);	/* key precedes every term */
	if (!cursor_load(c, lo - 1))
		return false;
	return cursor_scan(c, key, klen, exact);
}

/*
 * v5: move the cursor (its term < key, or its block's first) to the last
 * restart term after it that is <= key, if any: a binary search of the
 * block's restart table, each restart term being whole.
 */
static bool
cursor_restart(TermCursor *c, const uint8 *key, int klen)
{
	SeFieldR   *f = c->f;
	uint32		rs = f->trestart;
	uint32		lo = c->idx / rs;	/* slot j holds term (j + 1) * rs */
	uint32		hi = Min(f->trestart_slots, (c->count - 1) / rs);
	const uint8 *best = NULL;
	uint32		best_slot = 0;
	uint64		best_len = 0;
	bool		nearest = true;

	while (lo < hi)
	{
		/*
		 * The nearest restart term first: most seeks (a fuzzy walk's next
		 * live branch) land before it, and then one comparison settles it.
		 */
		uint32		mid = nearest ? lo : lo + (hi - lo) / 2;
		uint32		off = se_read_u32(c->blk + 4 * (uint64) mid);
		const uint8 *p = c->blk + off;
		uint64		pl,
					sl;

		if (off < 4 * f->trestart_slots || off >= (uint64) (c->end - c->blk) ||
			!se_dec_vint(&p, c->end, &pl) || !se_dec_vint(&p, c->end, &sl) ||
			pl != 0 || sl == 0 || sl > (uint64) (c->end - p) ||
			sl > (uint64) PG_INT32_MAX)
		{
			cursor_corrupt(c, "bad restart point");
			return false;
		}
		nearest = false;
		if (cmp_bytes(p, (int) sl, key, klen) <= 0)
		{
			best = p;
			best_slot = mid;
			best_len = sl;
			lo = mid + 1;
		}
		else
			hi = mid;
	}
	if (best == NULL)
		return true;
	c->idx = (best_slot + 1) * rs;
	c->next_restart = c->idx + rs;
	c->at_restart = true;
	c->len = (int) best_len;
	if (!cursor_meta_len(c, best + best_len))
	{
		cursor_corrupt(c, "bad term entry");
		return false;
	}
	cursor_reserve(c, c->len, 0);
	memcpy(c->buf, best, c->len);
	return true;
}

/*
 * The scan of cursor_seek, from the cursor's term (its bytes in buf, the
 * block's first key <= key) to the first term >= key.
 */
static bool
cursor_scan(TermCursor *c, const uint8 *key, int klen, bool *exact)
{
	int			kl;
	int			m;

	*exact = false;
	if (c->f->trestart > 0 && !cursor_restart(c, key, klen))
		return false;
	kl = Min(c->len, klen);
	for (m = 0; m < kl && c->buf[m] == key[m]; m++)
		;
	if (m == c->len && m == klen)
	{
		*exact = true;
		return true;
	}
	for (;;)
	{
		const uint8 *suffix;
		int			prefix,
					slen,
					j;

		if (c->idx + 1 >= c->count)
			return cursor_load(c, c->block + 1);	/* its first term is > key */
		if (!cursor_entry(c, &suffix, &prefix))
			return false;
		if (c->at_restart)
			m = 0;				/* a restart term, whole: compare it all */
		else if (prefix > m)
			continue;			/* shares the previous term's smaller byte */
		if (prefix == m)
		{
			/* compare the suffix with key past m */
			slen = c->len - prefix;
			kl = Min(slen, klen - m);
			for (j = 0; j < kl && suffix[j] == key[m + j]; j++)
				;
			if (j == kl && slen < klen - m)
			{
				m += j;			/* a proper prefix of key: smaller */
				continue;
			}
			if (j < kl && suffix[j] < key[m + j])
			{
				m += j;
				continue;
			}
			*exact = (j == kl && slen == klen - m);
		}
		/* the ceil: differs from key where its prefix ends, or is >= key */
		cursor_reserve(c, c->len, 0);
		memcpy(c->buf, key, prefix);
		copy_suffix(c, prefix, suffix, c->len - prefix);
		return true;
	}
}

static void
cursor_init(TermCursor *c, SeSegmentReader *r, SeFieldR *f, uint8 *buf,
			int cap)
{
	c->r = r;
	c->f = f;
	c->block = f ? f->nblocks : 0;
	c->idx = c->count = 0;
	c->next_restart = PG_UINT32_MAX;
	c->at_restart = false;
	c->buf = buf;
	c->cap = cap;
	c->len = 0;
	c->own_buf = false;
}

static void
cursor_free(TermCursor *c)
{
	if (c->own_buf)
		pfree(c->buf);
}

bool
se_segment_seek_exact(SeSegmentReader *r, int field, const char *term, int len,
					  SeTermInfo *ti)
{
	SeFieldR   *f = get_field(r, field);
	uint8		stack[256];
	TermCursor	c;
	bool		exact = false;
	bool		ok;

	if (f == NULL || f->nterms == 0 || len < 0 || (term == NULL && len > 0))
		return false;
	cursor_init(&c, r, f, stack, sizeof(stack));
	ok = cursor_seek(&c, (const uint8 *) (term ? term : ""), len, &exact) &&
		exact && se_postings_decode_meta(r, field, c.meta, c.end, ti, NULL);
	cursor_free(&c);
	return ok;
}

SeTermsEnum *
se_segment_terms(SeSegmentReader *r, int field, const char *from, int from_len)
{
	SeTermsEnum *e = palloc0(sizeof(SeTermsEnum));
	SeFieldR   *f = get_field(r, field);
	bool		exact;

	e->field = field;
	cursor_init(&e->c, r, f, e->small, sizeof(e->small));
	if (f == NULL)
		return e;
	if (from != NULL && from_len > 0)
		(void) cursor_seek(&e->c, (const uint8 *) from, from_len, &exact);
	else
		(void) cursor_load(&e->c, 0);
	return e;
}

bool
se_terms_next(SeTermsEnum *e, const char **term, int *len, SeTermInfo *ti)
{
	SeTermInfo	tmp;
	const char *t;
	int			l;

	if (!se_terms_next_key(e, &t, &l) || !se_terms_info(e, ti ? ti : &tmp))
		return false;
	if (term)
		*term = t;
	if (len)
		*len = l;
	return true;
}

/*
 * The next term without its metadata: a walk that looks at many terms and
 * keeps few (fuzzy) decodes the metadata of those it keeps only, with
 * se_terms_info.  The next call skips the metadata unread.
 */
bool
se_terms_next_key(SeTermsEnum *e, const char **term, int *len)
{
	if (e->c.f == NULL)
		return false;
	if (e->started && !cursor_next(&e->c))
		return false;
	e->started = true;
	if (e->c.block >= e->c.f->nblocks)
		return false;
	*term = (const char *) e->c.buf;
	*len = e->c.len;
	return true;
}

/* The metadata of the term se_terms_next_key returned last. */
bool
se_terms_info(SeTermsEnum *e, SeTermInfo *ti)
{
	if (e->c.f == NULL || !e->started || e->c.block >= e->c.f->nblocks)
		return false;
	if (!se_postings_decode_meta(e->c.r, e->field, e->c.meta, e->c.end, ti,
								 &e->c.next))
	{
		e->c.block = e->c.f->nblocks;
		return false;
	}
	return true;
}

/*
 * Move the enumeration to the first term >= from.  A target after the
 * cursor's term is usually near it (a fuzzy walk's next live branch): the
 * blocks after the current one are galloped over, and a target in the
 * current block is scanned to from the cursor, with no binary search.
 */
void
se_terms_seek(SeTermsEnum *e, const char *from, int from_len)
{
	TermCursor *c = &e->c;
	const uint8 *key = (const uint8 *) from;
	bool		exact;
	bool		ok;

	e->started = false;
	if (c->f == NULL)
		return;
	if (c->block < c->f->nblocks && cmp_bytes(c->buf, c->len, key, from_len) < 0)
	{
		uint32		lo = c->block;	/* its first key <= key */
		uint32		hi = lo + 1;
		uint32		step = 1;
		const uint8 *k;
		int			kl;

		/* the last block whose first term is <= key, in (lo, hi) */
		for (;;)
		{
			if (hi >= c->f->nblocks)
			{
				hi = c->f->nblocks;
				break;
			}
			if (!block_key(c, hi, &k, &kl))
				return;
			if (cmp_bytes(k, kl, key, from_len) > 0)
				break;
			lo = hi;
			step *= 2;
			hi = lo + step;
		}
		while (lo + 1 < hi)
		{
			uint32		mid = lo + (hi - lo) / 2;

			if (!block_key(c, mid, &k, &kl))
				return;
			if (cmp_bytes(k, kl, key, from_len) <= 0)
				lo = mid;
			else
				hi = mid;
		}
		ok = (lo == c->block || cursor_load(c, lo)) &&
			cursor_scan(c, key, from_len, &exact);
	}
	else
		ok = cursor_seek(c, key, from_len, &exact);
	if (!ok)
		c->block = c->f->nblocks;
}

void
se_terms_close(SeTermsEnum *e)
{
	if (e)
	{
		cursor_free(&e->c);
		pfree(e);
	}
}

/* ---------------------------------------------------------------------
 * Norms and doc values
 * ---------------------------------------------------------------------
 */

uint8
se_segment_norm(SeSegmentReader *r, int field, int32 doc)
{
	SeFieldR   *f = get_field(r, field);

	if (f == NULL || f->norms == NULL || doc < 0 || (uint32) doc >= r->max_doc)
		return 0;
	return f->norms[doc];
}

const uint8 *
se_segment_norms(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return f ? f->norms : NULL;
}

/* Where the values of doc (0..max_doc) start in a doc-values column. */
static inline uint64
dv_start(const SeFieldR *f, uint64 doc)
{
	if (f->dv_single)
		return doc;
	return se_packed_get(f->dv_starts, doc, f->dv_start_bits);
}

/* Value k of a column: an int64, or a sorted set's ord. */
static inline int64
dv_value(const SeFieldR *f, uint64 k)
{
	if (f->dv_value_bits == SE_DV_RAW_BITS)
		return (int64) se_read_u64(f->dv_values + 8 * k);
	return (int64) ((uint64) f->dv_min +
					f->dv_gcd * se_packed_get(f->dv_values, k, f->dv_value_bits));
}

/* Value range [*start, *start + *n) of doc in a doc-values field. */
static bool
dv_range(SeSegmentReader *r, SeFieldR *f, int32 doc, uint64 *start, int *n)
{
	uint64		s0,
				s1;

	s0 = dv_start(f, (uint64) doc);
	s1 = dv_start(f, (uint64) doc + 1);
	if (s0 > s1 || s1 > f->dv_nvalues || s1 - s0 > (uint64) PG_INT32_MAX)
	{
		se_segment_corrupt(r, "docvalues", "field [%s]: bad offsets for doc %d",
						   f->name, doc);
		return false;
	}
	*start = s0;
	*n = (int) (s1 - s0);
	return true;
}

/*
 * Set in bits (max_doc bits, cleared by the caller) the docs in [from, to)
 * of numeric doc-values field `field` having a value in [lo, hi]; true if
 * any.  One sequential pass over the column (callers take it in pieces to
 * check for interrupts), for range filters that span many distinct
 * values; false (and no bit set) when the field has no numeric doc values
 * or its offsets are corrupt (reported).
 */
/*
 * The range pass over a packed single-valued column, in packed units: the
 * column's values are min + gcd * x, so [lo, hi] becomes [xlo, xhi] once
 * and each doc costs one unaligned load, a shift and one compare.
 */
static bool
packed_range_bits(SeSegmentReader *r, SeFieldR *f, int64 lo, int64 hi,
				  uint32 from, uint32 to, uint64 *bits)
{
	int			b = f->dv_value_bits;
	uint64		mask = b == 0 ? 0 : (UINT64CONST(1) << b) - 1;
	uint64		xlo,
				xhi,
				width,
				d,
				bit = 0;
	uint32		doc;
	bool		any = false;

	if (hi < f->dv_min)
		return false;
	d = (uint64) hi - (uint64) f->dv_min;
	xhi = d / f->dv_gcd;
	if (lo <= f->dv_min)
		xlo = 0;
	else
	{
		d = (uint64) lo - (uint64) f->dv_min;
		xlo = d / f->dv_gcd + (d % f->dv_gcd != 0);
	}
	if (xlo > xhi || xlo > mask)
		return false;
	width = xhi - xlo;
	bit = (uint64) from * b;
	for (doc = from; doc < to; doc++, bit += b)
	{
		uint64		x = b == 0 ? 0 :
			(se_read_u64(f->dv_values + (bit >> 3)) >> (bit & 7)) & mask;

		if (x - xlo <= width)
		{
			bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
			any = true;
		}
	}
	return any;
}

bool
se_segment_numeric_range_bits(SeSegmentReader *r, int field, int64 lo, int64 hi,
							  uint32 from, uint32 to, uint64 *bits)
{
	SeFieldR   *f = get_field(r, field);
	uint64		s0,
				s1;
	uint32		doc;
	bool		any = false;

	to = Min(to, r->max_doc);
	if (f == NULL || f->dv != SE_DV_NUMERIC || from >= to || lo > hi)
		return false;
	if (f->dv_single && f->dv_value_bits != SE_DV_RAW_BITS)
		return packed_range_bits(r, f, lo, hi, from, to, bits);
	s0 = dv_start(f, from);
	for (doc = from; doc < to; doc++)
	{
		uint64		k;

		s1 = dv_start(f, (uint64) doc + 1);
		if (s1 < s0 || s1 > f->dv_nvalues)
		{
			se_segment_corrupt(r, "docvalues", "field [%s]: bad offsets for doc %u",
							   f->name, doc);
			memset(bits, 0, sizeof(uint64) * (((uint64) r->max_doc + 63) / 64));
			return false;
		}
		for (k = s0; k < s1; k++)
		{
			int64		v = dv_value(f, k);

			if (v >= lo && v <= hi)
			{
				bits[doc >> 6] |= UINT64CONST(1) << (doc & 63);
				any = true;
				break;
			}
		}
		s0 = s1;
	}
	return any;
}

int
se_segment_numeric_values(SeSegmentReader *r, int field, int32 doc,
						  const int64 **values)
{
	SeFieldR   *f = get_field(r, field);
	uint64		start;
	int			n;
	int			i;

	*values = NULL;
	if (f == NULL || f->dv != SE_DV_NUMERIC || doc < 0 ||
		(uint32) doc >= r->max_doc || !dv_range(r, f, doc, &start, &n) || n == 0)
		return 0;
	if (r->scratch_cap < (size_t) n)
	{
		if (r->scratch)
			pfree(r->scratch);
		r->scratch = se_segment_alloc(r, sizeof(int64) * n);
		r->scratch_cap = n;
	}
	for (i = 0; i < n; i++)
		r->scratch[i] = dv_value(f, start + i);
	*values = r->scratch;
	return n;
}

int
se_segment_sorted_count(SeSegmentReader *r, int field, int32 doc)
{
	SeFieldR   *f = get_field(r, field);
	uint64		start;
	int			n;

	if (f == NULL || f->dv != SE_DV_SORTED_SET || doc < 0 ||
		(uint32) doc >= r->max_doc || !dv_range(r, f, doc, &start, &n))
		return 0;
	return n;
}

int64
se_segment_sorted_ord(SeSegmentReader *r, int field, int32 doc, int i)
{
	SeFieldR   *f = get_field(r, field);
	uint64		start;
	int			n;
	int64		ord;

	if (f == NULL || f->dv != SE_DV_SORTED_SET || doc < 0 ||
		(uint32) doc >= r->max_doc || !dv_range(r, f, doc, &start, &n) ||
		i < 0 || i >= n)
		return -1;
	ord = dv_value(f, start + i);
	if (ord < 0 || ord >= f->dv_ndict)
	{
		se_segment_corrupt(r, "docvalues", "field [%s]: ordinal out of range",
						   f->name);
		return -1;
	}
	return ord;
}

int64
se_segment_sorted_dict_size(SeSegmentReader *r, int field)
{
	SeFieldR   *f = get_field(r, field);

	return (f && f->dv == SE_DV_SORTED_SET) ? f->dv_ndict : 0;
}

const char *
se_segment_sorted_dict_value(SeSegmentReader *r, int field, int64 ord, int *len)
{
	SeFieldR   *f = get_field(r, field);
	uint32		o0,
				o1;

	*len = 0;
	if (f == NULL || f->dv != SE_DV_SORTED_SET || ord < 0 || ord >= f->dv_ndict)
		return NULL;
	o0 = se_read_u32(f->dv_dict_offs + 4 * (uint64) ord);
	o1 = se_read_u32(f->dv_dict_offs + 4 * (uint64) ord + 4);
	if (o0 > o1 || o1 > f->dv_dict_len)
	{
		se_segment_corrupt(r, "docvalues", "field [%s]: bad dictionary offsets",
						   f->name);
		return NULL;
	}
	*len = (int) (o1 - o0);
	return (const char *) f->dv_dict_blob + o0;
}

const char *
se_segment_sorted_value(SeSegmentReader *r, int field, int32 doc, int i,
						int *len)
{
	int64		ord = se_segment_sorted_ord(r, field, doc, i);

	*len = 0;
	if (ord < 0)
		return NULL;
	return se_segment_sorted_dict_value(r, field, ord, len);
}

/* ---------------------------------------------------------------------
 * Per-document metadata
 * ---------------------------------------------------------------------
 */

static bool
parse_meta(SeSegmentReader *r, int32 doc, SeDocMeta *m)
{
	uint32		o0,
				o1;
	const uint8 *p;
	const uint8 *end;
	uint64		v;

	memset(m, 0, sizeof(SeDocMeta));
	m->id = "";
	if (doc < 0 || (uint32) doc >= r->max_doc)
		return false;
	o0 = se_read_u32(r->meta_offs + 4 * (uint64) doc);
	o1 = se_read_u32(r->meta_offs + 4 * (uint64) doc + 4);
	if (o0 > o1 || o1 > r->meta_blob_len)
		goto bad;
	p = r->meta_blob + o0;
	end = r->meta_blob + o1;
	if (!se_dec_vint(&p, end, &v) || v > (uint64) (end - p))
		goto bad;
	m->id = (const char *) p;
	m->id_len = (int) v;
	p += v;
	if (!se_dec_vint(&p, end, &v) || (v > 0 && v - 1 > (uint64) (end - p)))
		goto bad;
	if (v > 0)
	{
		m->routing = (const char *) p;
		m->routing_len = (int) (v - 1);
		p += v - 1;
	}
	if (!se_dec_vint(&p, end, &v))
		goto bad;
	m->seq_no = se_unzigzag(v);
	if (!se_dec_vint(&p, end, &v))
		goto bad;
	m->primary_term = se_unzigzag(v);
	if (!se_dec_vint(&p, end, &v))
		goto bad;
	m->version = se_unzigzag(v);
	return true;

bad:
	se_segment_corrupt(r, "docmeta", "bad entry for doc %d", doc);
	memset(m, 0, sizeof(SeDocMeta));
	m->id = "";
	return false;
}

/* Not NUL-terminated; "" with *len 0 when out of range or corrupted. */
const char *
se_segment_doc_id(SeSegmentReader *r, int32 doc, int *len)
{
	SeDocMeta	m;

	parse_meta(r, doc, &m);
	*len = m.id_len;
	return m.id;
}

const char *
se_segment_doc_routing(SeSegmentReader *r, int32 doc, int *len)
{
	SeDocMeta	m;

	parse_meta(r, doc, &m);
	*len = m.routing_len;
	return m.routing;
}

void
se_segment_doc_meta(SeSegmentReader *r, int32 doc, SeDocMeta *meta)
{
	parse_meta(r, doc, meta);
}

int32
se_segment_lookup_id(SeSegmentReader *r, const char *id, int len)
{
	int			field = se_segment_field(r, SE_ID_FIELD);
	SeTermInfo	ti;
	SePostings *p;
	int32		doc,
				last = -1;

	if (field < 0 || !se_segment_seek_exact(r, field, id, len, &ti))
		return -1;
	if (ti.doc_freq == 1)
		return (int32) ti.postings_offset;	/* validated by decode */
	p = se_postings_open(r, &ti, false);
	while ((doc = se_postings_next(p)) != SE_NO_MORE_DOCS)
		last = doc;
	se_postings_close(p);
	return last;
}

/* ---------------------------------------------------------------------
 * Stored source
 * ---------------------------------------------------------------------
 */

static inline uint32
block_first_doc(SeSegmentReader *r, uint32 b)
{
	return se_read_u32(r->block_index + 16 * (uint64) b);
}

/*
 * One zstd decompression context per process, kept for its lifetime:
 * ZSTD_decompress builds a fresh one per call, which took 8 of the 21
 * microseconds a 16 KB block of Debian package sources costs (merges and
 * fetches decompress block after block).  Plain malloc'd memory, so an
 * error cannot leave it half-freed; NULL (out of memory) falls back.
 */
static ZSTD_DCtx *
stored_dctx(void)
{
	static ZSTD_DCtx *dctx = NULL;

	if (dctx == NULL)
		dctx = ZSTD_createDCtx();
	return dctx;
}

/* Decompress block b into the cache and index its docs. */
static bool
load_block(SeSegmentReader *r, uint32 b, uint32 first, uint32 ndocs)
{
	const uint8 *e = r->block_index + 16 * (uint64) b;
	uint32		raw_len = se_read_u32(e + 4);
	uint32		off = se_read_u32(e + 8);
	uint32		clen = se_read_u32(e + 12);
	bool		raw = (clen & SE_STORED_RAW_FLAG) != 0;
	const uint8 *src;
	const uint8 *p;
	const uint8 *end;
	uint64		pos;
	uint32		k;

	r->cache_block = -1;
	clen &= ~SE_STORED_RAW_FLAG;
	if (off > r->block_data_len || clen > r->block_data_len - off ||
		raw_len > SE_STORED_MAX_RAW || ndocs > raw_len ||
		(raw && clen != raw_len) ||
		(!raw && (uint64) raw_len > (uint64) clen * ZSTD_MAX_RATIO))
		goto bad;
	src = r->block_data + off;
	if (r->cache_cap < raw_len || r->cache_buf == NULL)
	{
		if (r->cache_buf)
			pfree(r->cache_buf);
		r->cache_buf = se_segment_alloc(r, raw_len);
		r->cache_cap = Max(raw_len, 1);
	}
	if (raw)
		memcpy(r->cache_buf, src, raw_len);
	else
	{
		unsigned long long fcs = ZSTD_getFrameContentSize(src, clen);
		ZSTD_DCtx  *dctx = stored_dctx();
		size_t		n;

		if (fcs != raw_len)
			goto bad;
		if (dctx != NULL)
			n = ZSTD_decompressDCtx(dctx, r->cache_buf, raw_len, src, clen);
		else
			n = ZSTD_decompress(r->cache_buf, raw_len, src, clen);
		if (ZSTD_isError(n) || n != raw_len)
			goto bad;
	}
	if (r->cache_offs_cap < (size_t) ndocs + 1)
	{
		if (r->cache_offs)
			pfree(r->cache_offs);
		r->cache_offs = se_segment_alloc(r, sizeof(uint32) * ((size_t) ndocs + 1));
		r->cache_offs_cap = (size_t) ndocs + 1;
	}
	/* docs' lengths, then their bytes */
	p = (const uint8 *) r->cache_buf;
	end = p + raw_len;
	pos = 0;
	for (k = 0; k < ndocs; k++)
	{
		uint64		l;

		if (!se_dec_vint(&p, end, &l) || l > raw_len)
			goto bad;
		r->cache_offs[k + 1] = (uint32) l;	/* lengths for now */
	}
	pos = p - (const uint8 *) r->cache_buf;
	r->cache_offs[0] = (uint32) pos;
	for (k = 0; k < ndocs; k++)
	{
		pos += r->cache_offs[k + 1];
		if (pos > raw_len)
			goto bad;
		r->cache_offs[k + 1] = (uint32) pos;
	}
	if (pos != raw_len)
		goto bad;
	r->cache_block = b;
	r->cache_first_doc = (int32) first;
	r->cache_ndocs = ndocs;
	return true;

bad:
	se_segment_corrupt(r, "stored", "bad block %u", b);
	return false;
}

bool
se_segment_source(SeSegmentReader *r, int32 doc, StringInfo out)
{
	uint32		lo,
				hi,
				first,
				next;
	uint32		k;

	if (doc < 0 || (uint32) doc >= r->max_doc || r->nblocks == 0)
		return false;
	if (r->cache_block >= 0 && doc >= r->cache_first_doc &&
		(uint32) (doc - r->cache_first_doc) < r->cache_ndocs)
		k = (uint32) (doc - r->cache_first_doc);
	else
	{
		/* last block whose first doc is <= doc */
		lo = 0;
		hi = r->nblocks;
		while (hi - lo > 1)
		{
			uint32		mid = lo + (hi - lo) / 2;

			if (block_first_doc(r, mid) <= (uint32) doc)
				lo = mid;
			else
				hi = mid;
		}
		first = block_first_doc(r, lo);
		next = (lo + 1 < r->nblocks) ? block_first_doc(r, lo + 1) : r->max_doc;
		if (first > (uint32) doc || next <= (uint32) doc || next > r->max_doc ||
			(lo == 0 && first != 0))
		{
			se_segment_corrupt(r, "stored", "bad block index near doc %d", doc);
			return false;
		}
		if (!load_block(r, lo, first, next - first))
			return false;
		k = (uint32) doc - first;
	}
	appendBinaryStringInfo(out, r->cache_buf + r->cache_offs[k],
						   (int) (r->cache_offs[k + 1] - r->cache_offs[k]));
	return true;
}
