/*-------------------------------------------------------------------------
 *
 * builder.c
 *	  The in-memory segment buffer of a shard's single writer, and its
 *	  serialization through the segment writer.
 *
 * Every indexed token of a bulk ingest passes through se_builder_add_term,
 * so the structures are chosen for speed and compactness:
 *
 *	 - per field, an open-addressing hash table (slots carry the hash)
 *	   maps term bytes to a dense term id whose struct also holds the
 *	   term's first 8 bytes and its postings state, so a token usually
 *	   touches one slot and one term struct; term bytes live in an arena of
 *	   64 KB blocks (stable pointers, no per-term allocation);
 *	 - per term, postings are appended as varints to chains of growing
 *	   slices (8 to 512 bytes) carved from a pool of 64 KB zeroed blocks.
 *	   The last 4 bytes of a slice hold a non-zero end marker (0x10 | level)
 *	   until the slice fills up, when they become the address of the next,
 *	   larger slice: writers detect the end by finding a non-zero byte where
 *	   they are about to write, readers by knowing each level's size.  The
 *	   doc stream holds, per doc, the doc delta and (except for SE_IDX_DOCS)
 *	   the previous doc's freq folded into the next delta's low bit; the
 *	   freq of the last doc stays in the term's struct.  Positions go to a
 *	   second chain as deltas within the doc.
 *	 - norms are a dense byte per doc per field with norms; doc values are
 *	   kept only for the docs that have some; per-doc metadata is one
 *	   fixed-size struct; _source bytes go to the arena.
 *	 - a SORTED_SET value is a key of the field's term table, the same one
 *	   its term uses (a keyword is indexed and kept as a doc value with the
 *	   same bytes): one copy of the bytes, a lookup that finds the key the
 *	   term just touched, and at serialization one sort for both the term
 *	   dictionary and the doc-values dictionary.  A value that is not also
 *	   a term (index: false) leaves a key without postings, which the term
 *	   dictionary skips.
 *
 * The _id of every doc is indexed as a term of field 0 ("_id",
 * SE_IDX_DOCS), which also serves se_builder_lookup_id.
 *
 * Memory: everything lives in the builder's own context (server), so
 * se_builder_free is one context delete; pointers handed out by
 * se_builder_doc_meta stay valid until then.
 *
 * Limits: pool addresses are 32-bit, so a builder holds at most 4 GB of
 * postings (shards flush far earlier, see se_builder_ram_bytes); past that,
 * further tokens are dropped rather than corrupting memory.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment_internal.h"
#include "port/pg_bswap.h"

#ifndef SE_FRONTEND
#include "utils/memutils.h"
#endif

#define POOL_SHIFT		16
#define POOL_BLOCK		(1 << POOL_SHIFT)
#define POOL_MASK		(POOL_BLOCK - 1)
#define POOL_MAX_BLOCKS	(1 << (32 - POOL_SHIFT))

#define NLEVELS 7
static const uint32 level_size[NLEVELS] = {8, 16, 32, 64, 128, 256, 512};
static const uint8 level_next[NLEVELS] = {1, 2, 3, 4, 5, 6, 6};

#define ARENA_BLOCK		(64 * 1024)
#define ARENA_BIG		(ARENA_BLOCK / 4)	/* larger items get their own chunk */

/* In-memory postings state of one term. */
typedef struct BPost
{
	uint32		doc_head;		/* pool addresses; 0 = none */
	uint32		doc_write;
	uint32		pos_head;
	uint32		pos_write;
	int32		last_doc;		/* -1 before the first doc */
	uint32		freq;			/* freq in last_doc */
	int32		last_pos;
} BPost;

/*
 * A hashed byte string and, for terms, its postings state (one struct, so
 * a token touches a single cache line of it).  prefix holds the first 8
 * bytes, zero padded: terms of up to 8 bytes compare without reading the
 * arena.  ids index the keys array.
 */
typedef struct BKey
{
	const char *text;
	uint64		prefix;
	uint32		len;
	uint32		hash;
	BPost		post;
} BKey;

/* Open addressing slot: the hash is kept here to skip most key reads. */
typedef struct BSlot
{
	uint32		hash;
	int32		id;				/* -1 = empty */
} BSlot;

typedef struct BHash
{
	BKey	   *keys;
	size_t		nkeys;
	size_t		keys_cap;
	BSlot	   *slots;
	uint32		mask;
} BHash;

/* A doc with doc values: where its values start. */
typedef struct BDvDoc
{
	uint32		doc;
	uint32		start;
} BDvDoc;

typedef struct BField
{
	const char *name;
	int			name_len;
	SeIndexOptions io;
	bool		norms;
	SeDocValuesType dv;
	BHash		terms;
	/* current doc */
	uint32		cur_len;
	bool		touched;
	/* norms, dense by doc */
	uint8	   *normv;
	size_t		normv_cap;
	uint32		normv_len;
	/* doc values */
	BDvDoc	   *dvdocs;
	size_t		dvdocs_cap;
	size_t		ndvdocs;
	int64	   *nums;
	size_t		nums_cap;
	size_t		nnums;
	uint32	   *ords;			/* sorted set: value ids, in terms */
	size_t		ords_cap;
	size_t		nords;
} BField;

typedef struct BDoc
{
	const char *routing;		/* NULL if none */
	const char *src;
	uint64		src_len;
	int64		seq_no;
	int64		primary_term;
	int64		version;
	uint32		id_term;		/* term id in field 0 */
	int32		routing_len;
} BDoc;

typedef struct PendNum
{
	int32		field;
	int64		v;
} PendNum;

typedef struct PendOrd
{
	int32		field;
	uint32		id;
} PendOrd;

struct SeSegmentBuilder
{
#ifndef SE_FRONTEND
	MemoryContext cxt;
#endif
	size_t		ram;
	bool		pool_full;
	BField	   *fields;
	size_t		fields_cap;
	int			nfields;
	BHash		names;
	/* postings pool */
	uint8	  **blocks;
	size_t		blocks_cap;
	uint32		nblocks;
	uint32		block_used;
	/* arena */
	char	  **chunks;
	size_t		chunks_cap;
	size_t		nchunks;
	char	   *arena_cur;
	size_t		arena_used;
	/* documents */
	BDoc	   *docs;
	size_t		docs_cap;
	uint32		num_docs;
	uint32		num_deleted;
	uint64	   *deleted;
	size_t		deleted_cap;
	/* doc being assembled */
	bool		in_doc;
	int32	   *touched;
	size_t		touched_cap;
	int			ntouched;
	PendNum    *pnum;
	size_t		pnum_cap;
	int			npnum;
	PendOrd    *pord;
	size_t		pord_cap;
	int			npord;
};

/*
 * Slice chain reader (internal data: trusted).  It walks raw pointers and
 * looks at the pool's block table only when it crosses into the next
 * slice: serialization reads every posting byte through it.
 */
typedef struct SliceReader
{
	SeSegmentBuilder *b;
	const uint8 *p;				/* next byte */
	const uint8 *lim;			/* end of the current slice's data */
	const uint8 *end;			/* where the writer stopped */
	int			level;
} SliceReader;

/* ---------------------------------------------------------------------
 * Memory
 * ---------------------------------------------------------------------
 */

static void *
balloc(SeSegmentBuilder *b, size_t size, bool zero)
{
	size = Max(size, 1);
	b->ram += size;
#ifndef SE_FRONTEND
	return MemoryContextAllocExtended(b->cxt, size,
									  MCXT_ALLOC_HUGE | (zero ? MCXT_ALLOC_ZERO : 0));
#else
	return zero ? palloc0(size) : palloc(size);
#endif
}

static void *
bgrow(SeSegmentBuilder *b, void *ptr, size_t *cap, size_t need, size_t elem)
{
	size_t		ncap;

	if (ptr != NULL && need <= *cap)
		return ptr;
	ncap = Max(*cap, 8);
	while (ncap < need)
		ncap *= 2;
	if (ptr == NULL)
		ptr = balloc(b, ncap * elem, false);
	else
	{
		b->ram += (ncap - *cap) * elem;
#ifndef SE_FRONTEND
		ptr = repalloc_huge(ptr, ncap * elem);
#else
		ptr = repalloc(ptr, ncap * elem);
#endif
	}
	*cap = ncap;
	return ptr;
}

static void
bfree(SeSegmentBuilder *b, void *ptr, size_t size)
{
	if (ptr == NULL)
		return;
	b->ram -= Min(b->ram, size);
	pfree(ptr);
}

/* Copy bytes to the arena; the result never moves. */
static const char *
arena_copy(SeSegmentBuilder *b, const char *src, size_t len)
{
	char	   *dst;

	if (len == 0)
		return "";
	b->chunks = bgrow(b, b->chunks, &b->chunks_cap, b->nchunks + 1, sizeof(char *));
	if (len > ARENA_BIG)
		dst = b->chunks[b->nchunks++] = balloc(b, len, false);
	else
	{
		if (b->arena_cur == NULL || b->arena_used + len > ARENA_BLOCK)
		{
			b->arena_cur = b->chunks[b->nchunks++] = balloc(b, ARENA_BLOCK, false);
			b->arena_used = 0;
		}
		dst = b->arena_cur + b->arena_used;
		b->arena_used += len;
	}
	memcpy(dst, src, len);
	return dst;
}

/* ---------------------------------------------------------------------
 * Byte-string hash table
 * ---------------------------------------------------------------------
 */

/* First 8 bytes of s, zero padded, in memory order. */
static inline uint64
key_prefix(const char *s, uint32 len)
{
	uint64		v = 0;

	memcpy(&v, s, Min(len, 8));
	return v;
}

static inline uint32
hash_bytes(const char *s, uint32 len, uint64 prefix)
{
	uint64		h = UINT64CONST(0x9E3779B97F4A7C15) ^ len;
	uint64		k;
	uint32		i;

	h = (h ^ prefix) * UINT64CONST(0xBF58476D1CE4E5B9);
	h ^= h >> 29;
	for (i = 8; i + 8 <= len; i += 8)
	{
		memcpy(&k, s + i, 8);
		h = (h ^ k) * UINT64CONST(0xBF58476D1CE4E5B9);
		h ^= h >> 29;
	}
	if (i < len)
	{
		k = 0;
		memcpy(&k, s + i, len - i);
		h = (h ^ k) * UINT64CONST(0x94D049BB133111EB);
		h ^= h >> 31;
	}
	h *= UINT64CONST(0xD6E8FEB86659FD93);
	h ^= h >> 32;
	return (uint32) h;
}

static void
bhash_resize(SeSegmentBuilder *b, BHash *h, uint32 nslots)
{
	BSlot	   *slots = balloc(b, sizeof(BSlot) * nslots, false);
	uint32		mask = nslots - 1;
	size_t		i;

	memset(slots, 0xFF, sizeof(BSlot) * nslots);
	for (i = 0; i < h->nkeys; i++)
	{
		uint32		j = h->keys[i].hash & mask;

		while (slots[j].id >= 0)
			j = (j + 1) & mask;
		slots[j].hash = h->keys[i].hash;
		slots[j].id = (int32) i;
	}
	if (h->slots)
		bfree(b, h->slots, sizeof(BSlot) * ((size_t) h->mask + 1));
	h->slots = slots;
	h->mask = mask;
}

/* Id of s (with its prefix and hash) in h, adding it when add is set. */
static int32
bhash_lookup_hashed(SeSegmentBuilder *b, BHash *h, const char *s, uint32 len,
					uint64 prefix, uint32 hv, bool add)
{
	uint32		i;
	int32		id;
	BKey	   *k;

	if (h->slots == NULL)
	{
		if (!add)
			return -1;
		bhash_resize(b, h, 16);
	}
	i = hv & h->mask;
	for (;;)
	{
		id = h->slots[i].id;
		if (id < 0)
			break;
		if (h->slots[i].hash == hv)
		{
			k = &h->keys[id];
			if (k->len == len && k->prefix == prefix &&
				(len <= 8 || memcmp(k->text + 8, s + 8, len - 8) == 0))
				return id;
		}
		i = (i + 1) & h->mask;
	}
	if (!add)
		return -1;
	h->keys = bgrow(b, h->keys, &h->keys_cap, h->nkeys + 1, sizeof(BKey));
	id = (int32) h->nkeys++;
	k = &h->keys[id];
	memset(k, 0, sizeof(BKey));
	k->text = arena_copy(b, s, len);
	k->prefix = prefix;
	k->len = len;
	k->hash = hv;
	k->post.last_doc = -1;
	h->slots[i].hash = hv;
	h->slots[i].id = id;
	if (h->nkeys * 2 > (size_t) h->mask + 1)
		bhash_resize(b, h, (h->mask + 1) * 2);
	return id;
}

/* Id of s in h, adding it when add is set (else -1 if absent). */
static inline int32
bhash_lookup(SeSegmentBuilder *b, BHash *h, const char *s, uint32 len,
			 bool add)
{
	uint64		prefix = key_prefix(s, len);

	return bhash_lookup_hashed(b, h, s, len, prefix, hash_bytes(s, len, prefix), add);
}

#ifdef SE_FRONTEND
/* The server frees a builder by deleting its context. */
static void
bhash_free(SeSegmentBuilder *b, BHash *h)
{
	bfree(b, h->keys, h->keys_cap * sizeof(BKey));
	if (h->slots)
		bfree(b, h->slots, sizeof(BSlot) * ((size_t) h->mask + 1));
}
#endif

/* ---------------------------------------------------------------------
 * Slice pool
 * ---------------------------------------------------------------------
 */

static inline uint8 *
pool_ptr(SeSegmentBuilder *b, uint32 addr)
{
	return b->blocks[addr >> POOL_SHIFT] + (addr & POOL_MASK);
}

/* Callers make sure a block is still available (see add_token). */
static uint32
pool_alloc(SeSegmentBuilder *b, int level)
{
	uint32		size = level_size[level];
	uint32		addr;

	if (b->nblocks == 0 || b->block_used + size > POOL_BLOCK)
	{
		b->blocks = bgrow(b, b->blocks, &b->blocks_cap, b->nblocks + 1,
						  sizeof(uint8 *));
		b->blocks[b->nblocks++] = balloc(b, POOL_BLOCK, true);
		/* address 0 means "no slice" */
		b->block_used = (b->nblocks == 1) ? 8 : 0;
	}
	addr = ((b->nblocks - 1) << POOL_SHIFT) | b->block_used;
	b->block_used += size;
	pool_ptr(b, addr)[size - 4] = (uint8) (0x10 | level);
	return addr;
}

static inline void
slice_byte(SeSegmentBuilder *b, uint32 *write, uint8 v)
{
	uint8	   *p = pool_ptr(b, *write);

	if (*p != 0)
	{
		/* end marker: chain a larger slice through the last 4 bytes */
		uint32		naddr = pool_alloc(b, level_next[*p & 0x0F]);

		memcpy(p, &naddr, 4);
		*write = naddr;
		p = pool_ptr(b, naddr);
	}
	*p = v;
	(*write)++;
}

static inline void
slice_vint(SeSegmentBuilder *b, uint32 *write, uint64 v)
{
	while (v >= 0x80)
	{
		slice_byte(b, write, (uint8) ((v & 0x7F) | 0x80));
		v >>= 7;
	}
	slice_byte(b, write, (uint8) v);
}

static void
slice_reader_init(SliceReader *sr, SeSegmentBuilder *b, uint32 head, uint32 end)
{
	sr->b = b;
	sr->level = 0;
	if (head == 0)
	{
		/* no chain: at its end already */
		sr->p = sr->lim = sr->end = NULL;
		return;
	}
	sr->p = pool_ptr(b, head);
	sr->lim = sr->p + level_size[0] - 4;
	sr->end = pool_ptr(b, end);
}

static inline bool
sr_eof(SliceReader *sr)
{
	return sr->p == sr->end;
}

/* Move to the next slice of the chain (at the current one's end). */
static inline void
sr_next_slice(SliceReader *sr)
{
	uint32		next;

	memcpy(&next, sr->lim, 4);
	sr->level = level_next[sr->level];
	sr->p = pool_ptr(sr->b, next);
	sr->lim = sr->p + level_size[sr->level] - 4;
}

static inline uint8
sr_byte(SliceReader *sr)
{
	if (unlikely(sr->p == sr->lim))
		sr_next_slice(sr);
	return *sr->p++;
}

static inline uint64
sr_vint(SliceReader *sr)
{
	uint64		v;
	int			shift = 0;
	uint8		c;

	c = sr_byte(sr);
	if (likely(c < 0x80))
		return c;
	v = c & 0x7F;
	do
	{
		shift += 7;
		c = sr_byte(sr);
		v |= (uint64) (c & 0x7F) << shift;
	} while ((c & 0x80) && shift < 63);
	return v;
}

/*
 * Copy the next n varints' bytes, as they are, to dst (room for 10 bytes
 * per varint); returns the bytes copied.
 */
static int
sr_copy_vints(SliceReader *sr, uint32 n, uint8 *dst)
{
	uint8	   *o = dst;

	while (n > 0)
	{
		const uint8 *p;
		const uint8 *lim;

		if (sr->p == sr->lim)
			sr_next_slice(sr);
		p = sr->p;
		lim = sr->lim;
		/* within the slice: a varint ends at a byte below 0x80 */
		while (p < lim)
		{
			uint8		c = *p++;

			*o++ = c;
			if (c < 0x80 && --n == 0)
				break;
		}
		sr->p = p;
	}
	return (int) (o - dst);
}

/* ---------------------------------------------------------------------
 * Building
 * ---------------------------------------------------------------------
 */

SeSegmentBuilder *
se_builder_create(void)
{
	SeSegmentBuilder *b;
#ifndef SE_FRONTEND
	MemoryContext cxt;

	cxt = AllocSetContextCreate(CurrentMemoryContext,
								"search_engine segment builder",
								ALLOCSET_DEFAULT_SIZES);
	b = MemoryContextAllocZero(cxt, sizeof(SeSegmentBuilder));
	b->cxt = cxt;
#else
	b = palloc0(sizeof(SeSegmentBuilder));
#endif
	b->ram = sizeof(SeSegmentBuilder);
	se_builder_field(b, SE_ID_FIELD, SE_IDX_DOCS, false, SE_DV_NONE);
	return b;
}

void
se_builder_free(SeSegmentBuilder *b)
{
	if (b == NULL)
		return;
#ifndef SE_FRONTEND
	MemoryContextDelete(b->cxt);
#else
	{
		int			i;
		size_t		k;

		for (i = 0; i < b->nfields; i++)
		{
			BField	   *f = &b->fields[i];

			bhash_free(b, &f->terms);
			bfree(b, f->normv, 0);
			bfree(b, f->dvdocs, 0);
			bfree(b, f->nums, 0);
			bfree(b, f->ords, 0);
		}
		bfree(b, b->fields, 0);
		bhash_free(b, &b->names);
		for (k = 0; k < b->nblocks; k++)
			pfree(b->blocks[k]);
		bfree(b, b->blocks, 0);
		for (k = 0; k < b->nchunks; k++)
			pfree(b->chunks[k]);
		bfree(b, b->chunks, 0);
		bfree(b, b->docs, 0);
		bfree(b, b->deleted, 0);
		bfree(b, b->touched, 0);
		bfree(b, b->pnum, 0);
		bfree(b, b->pord, 0);
		pfree(b);
	}
#endif
}

int
se_builder_field(SeSegmentBuilder *b, const char *name, SeIndexOptions io,
				 bool norms, SeDocValuesType dv)
{
	size_t		len;
	int32		id;
	BField	   *f;

	if (name == NULL)
		name = "";
	len = strlen(name);
	id = bhash_lookup(b, &b->names, name, (uint32) len, false);
	if (id >= 0)
		return id;
	id = bhash_lookup(b, &b->names, name, (uint32) len, true);
	Assert(id == b->nfields);
	b->fields = bgrow(b, b->fields, &b->fields_cap, b->nfields + 1, sizeof(BField));
	f = &b->fields[b->nfields++];
	memset(f, 0, sizeof(BField));
	f->name = b->names.keys[id].text;
	f->name_len = (int) len;
	f->io = (io >= SE_IDX_NONE && io <= SE_IDX_POSITIONS) ? io : SE_IDX_NONE;
	f->norms = norms && f->io != SE_IDX_NONE;
	f->dv = (dv >= SE_DV_NONE && dv <= SE_DV_SORTED_SET) ? dv : SE_DV_NONE;
	return id;
}

/*
 * Drop the doc being assembled.  Tokens already in the postings cannot be
 * taken back, so a doc that received any is finished as an empty, deleted
 * doc (it consumes a buffered doc id and is never written).
 */
void
se_builder_abort_doc(SeSegmentBuilder *b)
{
	int			doc;

	if (!b->in_doc)
		return;
	if (b->ntouched == 0 && b->npnum == 0 && b->npord == 0)
	{
		b->in_doc = false;
		return;
	}
	doc = se_builder_end_doc(b, NULL, NULL, 0);
	if (doc >= 0)
		se_builder_delete(b, doc);
	b->in_doc = false;
}

/* A doc begun but never ended (e.g. its parse failed) is aborted here. */
void
se_builder_begin_doc(SeSegmentBuilder *b)
{
	se_builder_abort_doc(b);
	b->in_doc = true;
}

/* Record one occurrence of term (prefix, hash) in doc; returns the term id. */
static int32
add_token(SeSegmentBuilder *b, BField *f, const char *term, uint32 len,
		  uint64 prefix, uint32 hv, int32 position, int32 doc)
{
	int32		id;
	BPost	   *p;

	id = bhash_lookup_hashed(b, &f->terms, term, len, prefix, hv, true);
	/* one token allocates at most two slices: keep a block in reserve */
	if (b->nblocks >= POOL_MAX_BLOCKS - 1)
	{
		b->pool_full = true;
		return id;
	}
	p = &f->terms.keys[id].post;
	if (p->last_doc != doc)
	{
		if (p->doc_head == 0)
			p->doc_head = p->doc_write = pool_alloc(b, 0);
		if (f->io == SE_IDX_DOCS || p->last_doc < 0)
			slice_vint(b, &p->doc_write, (uint64) ((int64) doc - p->last_doc));
		else
		{
			slice_vint(b, &p->doc_write,
					   ((uint64) (doc - p->last_doc) << 1) | (p->freq == 1 ? 1 : 0));
			if (p->freq != 1)
				slice_vint(b, &p->doc_write, p->freq);
		}
		p->last_doc = doc;
		p->freq = 0;
		p->last_pos = 0;
	}
	p->freq++;
	if (f->io == SE_IDX_POSITIONS)
	{
		/* positions must not go backwards (nor below 0) within a doc */
		if (position < p->last_pos)
			position = p->last_pos;
		if (p->pos_head == 0)
			p->pos_head = p->pos_write = pool_alloc(b, 0);
		slice_vint(b, &p->pos_write, (uint64) (position - p->last_pos));
		p->last_pos = position;
	}
	return id;
}

/* The field's first token in the current doc puts it on the touched list. */
static inline void
touch_field(SeSegmentBuilder *b, BField *f, int field)
{
	b->in_doc = true;
	if (!f->touched)
	{
		b->touched = bgrow(b, b->touched, &b->touched_cap, b->ntouched + 1,
						   sizeof(int32));
		b->touched[b->ntouched++] = field;
		f->touched = true;
	}
}

void
se_builder_add_term(SeSegmentBuilder *b, int field, const char *term, int len,
					int position)
{
	BField	   *f;
	uint64		prefix;

	if (field < 0 || field >= b->nfields || len < 0 ||
		(term == NULL && len > 0) || b->num_docs >= (uint32) PG_INT32_MAX - 1)
		return;
	f = &b->fields[field];
	if (f->io == SE_IDX_NONE)
		return;
	touch_field(b, f, field);
	if (term == NULL)
		term = "";
	prefix = key_prefix(term, (uint32) len);
	add_token(b, f, term, (uint32) len, prefix, hash_bytes(term, (uint32) len, prefix),
			  position, (int32) b->num_docs);
	f->cur_len++;
}

/*
 * se_builder_add_term for each of n tokens, in groups: a group's hashes
 * are computed and their hash slots prefetched, then the terms those slots
 * point to, and only then are the tokens added.  A large buffer's term
 * table is far bigger than the CPU caches, and a lookup used to stall on
 * the slot and again on the term; this way a group's cache misses overlap.
 * (Prefetches are hints: a table that grows meanwhile is still correct.)
 */
#define ADD_GROUP 16

static void add_pending_ord(SeSegmentBuilder *b, int field, int32 id);

/*
 * The terms of add_terms and add_keywords: postings when index is set (and
 * the field is indexed), sorted-set values when sorted is set (and the
 * field keeps them), each term as se_builder_add_term then
 * se_builder_add_sorted would, in order.
 */
static void
add_grouped(SeSegmentBuilder *b, int field, const SeBuilderTerm *terms, int n,
			bool index, bool sorted)
{
	BField	   *f;
	BHash	   *h;
	uint64		prefix[ADD_GROUP];
	uint32		hv[ADD_GROUP];
	int			g,
				i,
				m;

	if (field < 0 || field >= b->nfields || n <= 0 || terms == NULL)
		return;
	f = &b->fields[field];
	index = index && f->io != SE_IDX_NONE;
	sorted = sorted && f->dv == SE_DV_SORTED_SET;
	if (!index && !sorted)
		return;
	h = &f->terms;
	for (g = 0; g < n; g += ADD_GROUP)
	{
		m = Min(ADD_GROUP, n - g);
		for (i = 0; i < m; i++)
		{
			const SeBuilderTerm *t = &terms[g + i];

			if (t->len < 0 || (t->term == NULL && t->len > 0))
				continue;
			prefix[i] = key_prefix(t->term ? t->term : "", (uint32) t->len);
			hv[i] = hash_bytes(t->term ? t->term : "", (uint32) t->len, prefix[i]);
			if (h->slots)
				__builtin_prefetch(&h->slots[hv[i] & h->mask]);
		}
		if (h->slots)
		{
			for (i = 0; i < m; i++)
			{
				const SeBuilderTerm *t = &terms[g + i];
				int32		id;

				if (t->len < 0 || (t->term == NULL && t->len > 0))
					continue;
				id = h->slots[hv[i] & h->mask].id;
				if (id >= 0)
					__builtin_prefetch(&h->keys[id]);
			}
		}
		for (i = 0; i < m; i++)
		{
			const SeBuilderTerm *t = &terms[g + i];
			const char *term = t->term ? t->term : "";
			int32		id = -1;

			if (t->len < 0 || (t->term == NULL && t->len > 0))
				continue;
			if (index && b->num_docs < (uint32) PG_INT32_MAX - 1)
			{
				touch_field(b, f, field);
				id = add_token(b, f, term, (uint32) t->len, prefix[i], hv[i],
							   t->position, (int32) b->num_docs);
				f->cur_len++;
			}
			if (sorted)
			{
				if (id < 0)
					id = bhash_lookup_hashed(b, h, term, (uint32) t->len,
											 prefix[i], hv[i], true);
				add_pending_ord(b, field, id);
			}
		}
	}
}

void
se_builder_add_terms(SeSegmentBuilder *b, int field, const SeBuilderTerm *terms, int n)
{
	add_grouped(b, field, terms, n, true, false);
}

/*
 * Keyword values: each as se_builder_add_term (if index) then
 * se_builder_add_sorted (if doc_values) would add it, with one hash and
 * one lookup per value and the lookups of a group overlapping.
 */
void
se_builder_add_keywords(SeSegmentBuilder *b, int field, const SeBuilderTerm *terms,
						int n, bool index, bool doc_values)
{
	add_grouped(b, field, terms, n, index, doc_values);
}

void
se_builder_add_numeric(SeSegmentBuilder *b, int field, int64 v)
{
	if (field < 0 || field >= b->nfields || b->fields[field].dv != SE_DV_NUMERIC)
		return;
	b->in_doc = true;
	b->pnum = bgrow(b, b->pnum, &b->pnum_cap, b->npnum + 1, sizeof(PendNum));
	b->pnum[b->npnum].field = field;
	b->pnum[b->npnum].v = v;
	b->npnum++;
}

void
se_builder_add_sorted(SeSegmentBuilder *b, int field, const char *v, int len)
{
	int32		id;

	if (field < 0 || field >= b->nfields ||
		b->fields[field].dv != SE_DV_SORTED_SET || len < 0 ||
		(v == NULL && len > 0))
		return;
	/* the value's key in the field's term table (see the file header) */
	id = bhash_lookup(b, &b->fields[field].terms, v ? v : "", (uint32) len, true);
	add_pending_ord(b, field, id);
}

/* Value id of a sorted-set field for the doc being assembled. */
static void
add_pending_ord(SeSegmentBuilder *b, int field, int32 id)
{
	b->in_doc = true;
	b->pord = bgrow(b, b->pord, &b->pord_cap, b->npord + 1, sizeof(PendOrd));
	b->pord[b->npord].field = field;
	b->pord[b->npord].id = (uint32) id;
	b->npord++;
}

static int
cmp_pend_num(const void *a, const void *b)
{
	const PendNum *x = a;
	const PendNum *y = b;

	if (x->field != y->field)
		return x->field < y->field ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

static int
cmp_pend_ord(const void *a, const void *b)
{
	const PendOrd *x = a;
	const PendOrd *y = b;

	if (x->field != y->field)
		return x->field < y->field ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Move the doc's pending doc values to their fields. */
static void
flush_pending_dv(SeSegmentBuilder *b, uint32 doc)
{
	int			i;

	if (b->npnum > 1)
		qsort(b->pnum, b->npnum, sizeof(PendNum), cmp_pend_num);
	for (i = 0; i < b->npnum; i++)
	{
		BField	   *f = &b->fields[b->pnum[i].field];

		if (i == 0 || b->pnum[i - 1].field != b->pnum[i].field)
		{
			f->dvdocs = bgrow(b, f->dvdocs, &f->dvdocs_cap, f->ndvdocs + 1,
							  sizeof(BDvDoc));
			f->dvdocs[f->ndvdocs].doc = doc;
			f->dvdocs[f->ndvdocs].start = (uint32) f->nnums;
			f->ndvdocs++;
		}
		f->nums = bgrow(b, f->nums, &f->nums_cap, f->nnums + 1, sizeof(int64));
		f->nums[f->nnums++] = b->pnum[i].v;
	}
	b->npnum = 0;

	if (b->npord > 1)
		qsort(b->pord, b->npord, sizeof(PendOrd), cmp_pend_ord);
	for (i = 0; i < b->npord; i++)
	{
		BField	   *f = &b->fields[b->pord[i].field];
		bool		new_field = (i == 0 || b->pord[i - 1].field != b->pord[i].field);

		if (!new_field && b->pord[i - 1].id == b->pord[i].id)
			continue;			/* a set: duplicates collapse */
		if (new_field)
		{
			f->dvdocs = bgrow(b, f->dvdocs, &f->dvdocs_cap, f->ndvdocs + 1,
							  sizeof(BDvDoc));
			f->dvdocs[f->ndvdocs].doc = doc;
			f->dvdocs[f->ndvdocs].start = (uint32) f->nords;
			f->ndvdocs++;
		}
		f->ords = bgrow(b, f->ords, &f->ords_cap, f->nords + 1, sizeof(uint32));
		f->ords[f->nords++] = b->pord[i].id;
	}
	b->npord = 0;
}

int
se_builder_end_doc(SeSegmentBuilder *b, const SeDocMeta *meta,
				   const char *source, size_t source_len)
{
	uint32		doc = b->num_docs;
	BDoc	   *d;
	const char *id = "";
	int			id_len = 0;
	int			i;
	size_t		words;
	uint64		prefix;

	if (doc >= (uint32) PG_INT32_MAX - 1)
		return -1;
	b->docs = bgrow(b, b->docs, &b->docs_cap, (size_t) doc + 1, sizeof(BDoc));
	d = &b->docs[doc];
	memset(d, 0, sizeof(BDoc));
	if (meta && meta->id && meta->id_len > 0)
	{
		id = meta->id;
		id_len = meta->id_len;
	}
	prefix = key_prefix(id, (uint32) id_len);
	d->id_term = (uint32) add_token(b, &b->fields[0], id, (uint32) id_len, prefix,
									hash_bytes(id, (uint32) id_len, prefix), 0, (int32) doc);
	if (meta && meta->routing && meta->routing_len >= 0)
	{
		d->routing = arena_copy(b, meta->routing, meta->routing_len);
		d->routing_len = meta->routing_len;
	}
	if (meta)
	{
		d->seq_no = meta->seq_no;
		d->primary_term = meta->primary_term;
		d->version = meta->version;
	}
	if (source && source_len > 0)
	{
		d->src = arena_copy(b, source, source_len);
		d->src_len = source_len;
	}
	else
		d->src = "";

	/* norms of the fields this doc touched */
	for (i = 0; i < b->ntouched; i++)
	{
		BField	   *f = &b->fields[b->touched[i]];

		if (f->norms)
		{
			f->normv = bgrow(b, f->normv, &f->normv_cap, (size_t) doc + 1, 1);
			if (f->normv_len < doc)
				memset(f->normv + f->normv_len, 0, doc - f->normv_len);
			f->normv[doc] = se_smallfloat_int_to_byte4((int32) Min(f->cur_len, (uint32) PG_INT32_MAX));
			f->normv_len = doc + 1;
		}
		f->cur_len = 0;
		f->touched = false;
	}
	b->ntouched = 0;
	flush_pending_dv(b, doc);

	words = (size_t) doc / 64 + 1;
	if (words > b->deleted_cap || b->deleted == NULL)
	{
		size_t		old = b->deleted ? b->deleted_cap : 0;

		b->deleted = bgrow(b, b->deleted, &b->deleted_cap, words, sizeof(uint64));
		memset(b->deleted + old, 0, (b->deleted_cap - old) * sizeof(uint64));
	}
	b->num_docs++;
	b->in_doc = false;
	return (int) doc;
}

void
se_builder_delete(SeSegmentBuilder *b, int doc)
{
	if (doc < 0 || (uint32) doc >= b->num_docs || se_builder_is_deleted(b, doc))
		return;
	b->deleted[doc >> 6] |= (uint64) 1 << (doc & 63);
	b->num_deleted++;
}

bool
se_builder_is_deleted(SeSegmentBuilder *b, int doc)
{
	if (doc < 0 || (uint32) doc >= b->num_docs)
		return false;
	return (b->deleted[doc >> 6] >> (doc & 63)) & 1;
}

int
se_builder_lookup_id(SeSegmentBuilder *b, const char *id, int len)
{
	BField	   *f = &b->fields[0];
	int32		tid;
	BPost	   *p;
	SliceReader sr;
	int64		doc = -1;
	int			best = -1;

	if (len < 0 || (id == NULL && len > 0))
		return -1;
	tid = bhash_lookup(b, &f->terms, id ? id : "", (uint32) len, false);
	if (tid < 0)
		return -1;
	p = &f->terms.keys[tid].post;
	if (p->last_doc < 0)
		return -1;
	if ((uint32) p->last_doc < b->num_docs && !se_builder_is_deleted(b, p->last_doc))
		return p->last_doc;
	/* the latest is deleted: walk the older docs with this _id */
	slice_reader_init(&sr, b, p->doc_head, p->doc_write);
	while (!sr_eof(&sr))
	{
		doc += (int64) sr_vint(&sr);
		if (doc < b->num_docs && !se_builder_is_deleted(b, (int) doc))
			best = (int) doc;
	}
	return best;
}

/*
 * Fetch the hash slot of this _id into the cache ahead of its lookup: the
 * _id table holds one key per buffered doc, far beyond the CPU caches, and
 * a new _id's lookup did little but wait for its slot.
 */
void
se_builder_prefetch_id(SeSegmentBuilder *b, const char *id, int len)
{
	BHash	   *h = &b->fields[0].terms;
	uint64		prefix;

	if (h->slots == NULL || len < 0 || (id == NULL && len > 0))
		return;
	if (id == NULL)
		id = "";
	prefix = key_prefix(id, (uint32) len);
	__builtin_prefetch(&h->slots[hash_bytes(id, (uint32) len, prefix) & h->mask]);
}

void
se_builder_doc_meta(SeSegmentBuilder *b, int doc, SeDocMeta *meta)
{
	BDoc	   *d;
	BKey	   *k;

	memset(meta, 0, sizeof(SeDocMeta));
	meta->id = "";
	if (doc < 0 || (uint32) doc >= b->num_docs)
		return;
	d = &b->docs[doc];
	k = &b->fields[0].terms.keys[d->id_term];
	meta->id = k->text;
	meta->id_len = (int) k->len;
	meta->routing = d->routing;
	meta->routing_len = d->routing ? d->routing_len : 0;
	meta->seq_no = d->seq_no;
	meta->primary_term = d->primary_term;
	meta->version = d->version;
}

uint32
se_builder_num_docs(SeSegmentBuilder *b)
{
	return b->num_docs;
}

uint32
se_builder_live_docs(SeSegmentBuilder *b)
{
	return b->num_docs - b->num_deleted;
}

size_t
se_builder_ram_bytes(SeSegmentBuilder *b)
{
	return b->ram;
}

/* ---------------------------------------------------------------------
 * Serialization
 * ---------------------------------------------------------------------
 */

/* Sort key: the first 8 bytes big-endian decide most comparisons. */
typedef struct SortTerm
{
	uint64		prefix;
	int32		id;
} SortTerm;

static int
cmp_sort_term(const void *a, const void *b, void *arg)
{
	const SortTerm *x = a;
	const SortTerm *y = b;
	const BKey *keys = arg;
	const BKey *kx,
			   *ky;
	int			c;

	if (x->prefix != y->prefix)
		return x->prefix < y->prefix ? -1 : 1;
	kx = &keys[x->id];
	ky = &keys[y->id];
	c = memcmp(kx->text, ky->text, Min(kx->len, ky->len));
	if (c != 0)
		return c;
	return (kx->len > ky->len) - (kx->len < ky->len);
}

/*
 * A key's first 8 bytes as a big-endian number, from its stored prefix
 * (memory order, zero padded): the sort need not read the arena.
 */
static inline uint64
term_prefix(const BKey *k)
{
#ifdef WORDS_BIGENDIAN
	return k->prefix;
#else
	return pg_bswap64(k->prefix);
#endif
}

/*
 * The ids of h's keys, sorted by bytes (h->nkeys of them).  A radix sort
 * (least significant byte first, stable) orders them by their big-endian
 * 8-byte prefixes, skipping the bytes all keys share; only runs of equal
 * prefixes (keys alike in their first 8 bytes, or apart only by trailing
 * zero bytes) then need cmp_sort_term.  Keys are distinct, so the order is
 * exactly the one qsort_arg with cmp_sort_term gave, for a fraction of
 * its comparisons (it was 4% of a write worker's time on Debian packages).
 */
#define RADIX_MIN_KEYS 64

static SortTerm *
sort_keys(BHash *h)
{
	size_t		n = h->nkeys;
	SortTerm   *st = se_index_alloc_huge(sizeof(SortTerm) * (n + 1), false);
	SortTerm   *tmp,
			   *src,
			   *dst;
	size_t		count[8][256];
	size_t		i,
				j;
	int			pass;

	for (i = 0; i < n; i++)
	{
		st[i].prefix = term_prefix(&h->keys[i]);
		st[i].id = (int32) i;
	}
	if (n < RADIX_MIN_KEYS)
	{
		qsort_arg(st, n, sizeof(SortTerm), cmp_sort_term, h->keys);
		return st;
	}
	memset(count, 0, sizeof(count));
	for (i = 0; i < n; i++)
	{
		uint64		p = st[i].prefix;

		for (pass = 0; pass < 8; pass++)
			count[pass][(p >> (8 * pass)) & 0xFF]++;
	}
	tmp = se_index_alloc_huge(sizeof(SortTerm) * n, false);
	src = st;
	dst = tmp;
	for (pass = 0; pass < 8; pass++)
	{
		size_t	   *c = count[pass];
		size_t		sum = 0;
		int			shift = 8 * pass;

		if (c[(st[0].prefix >> shift) & 0xFF] == n)
			continue;			/* every key has this byte */
		for (j = 0; j < 256; j++)
		{
			size_t		t = c[j];

			c[j] = sum;
			sum += t;
		}
		for (i = 0; i < n; i++)
			dst[c[(src[i].prefix >> shift) & 0xFF]++] = src[i];
		{
			SortTerm   *t = src;

			src = dst;
			dst = t;
		}
	}
	if (src != st)
		memcpy(st, src, sizeof(SortTerm) * n);
	pfree(tmp);
	for (i = 0; i < n; i = j)
	{
		for (j = i + 1; j < n && st[j].prefix == st[i].prefix; j++)
			;
		if (j - i > 1)
			qsort_arg(st + i, j - i, sizeof(SortTerm), cmp_sort_term, h->keys);
	}
	return st;
}

static inline int32
new_doc(SeSegmentBuilder *b, const int32 *map, int64 doc)
{
	if (doc < 0 || doc >= b->num_docs)
		return -1;				/* includes a doc still being assembled */
	return map ? map[doc] : (int32) doc;
}

/*
 * Terms are visited in sorted order, which is random order in memory: a
 * term's struct, bytes and first posting slices were each a cache miss.
 * Visiting term k, prefetch the struct of term k + 2 * PREFETCH_AHEAD and
 * what the struct of term k + PREFETCH_AHEAD (fetched by then) points to.
 */
#define PREFETCH_AHEAD 24

static inline void
prefetch_term(SeSegmentBuilder *b, BHash *h, const SortTerm *st, size_t k)
{
	if (k + 2 * PREFETCH_AHEAD < h->nkeys)
	{
		const char *a = (const char *) &h->keys[st[k + 2 * PREFETCH_AHEAD].id];

		__builtin_prefetch(a);
		__builtin_prefetch(a + offsetof(BKey, post.pos_write));
	}
	if (k + PREFETCH_AHEAD < h->nkeys)
	{
		const BKey *a = &h->keys[st[k + PREFETCH_AHEAD].id];

		if (a->len > 8)
			__builtin_prefetch(a->text);
		if (a->post.doc_head != 0)
			__builtin_prefetch(pool_ptr(b, a->post.doc_head));
		if (a->post.pos_head != 0)
			__builtin_prefetch(pool_ptr(b, a->post.pos_head));
	}
}

/* The field's term dictionary and postings; st: its terms, sorted. */
static void
serialize_terms(SeSegmentBuilder *b, SeSegWriter *w, int fno, const int32 *map,
				const SortTerm *st)
{
	BField	   *f = &b->fields[fno];
	bool		positions = f->io == SE_IDX_POSITIONS;
	uint8	   *pos_buf = NULL;
	size_t		pos_cap = 0;
	size_t		k;

	se_segwriter_terms_begin(w, fno);
	for (k = 0; k < f->terms.nkeys; k++)
	{
		BKey	   *key = &f->terms.keys[st[k].id];
		BPost	   *post = &key->post;
		SliceReader dr,
					pr;
		int64		doc;

		prefetch_term(b, &f->terms, st, k);
		/* a short term's bytes are all in its prefix: no arena read */
		se_segwriter_term_begin(w, key->len <= 8 ? (const char *) &key->prefix : key->text,
								(int) key->len);
		if (post->doc_head == 0)
		{
			se_segwriter_term_end(w);
			continue;
		}
		slice_reader_init(&dr, b, post->doc_head, post->doc_write);
		/* (pr is only read for positions fields) */
		slice_reader_init(&pr, b, post->pos_head, post->pos_write);
		doc = -1 + (int64) sr_vint(&dr);
		for (;;)
		{
			uint64		code = 0;
			uint32		freq = 1;
			bool		more;
			int32		nd;

			if (f->io == SE_IDX_DOCS)
				more = !sr_eof(&dr);
			else if (sr_eof(&dr))
			{
				freq = post->freq;
				more = false;
			}
			else
			{
				code = sr_vint(&dr);
				freq = (code & 1) ? 1 : (uint32) sr_vint(&dr);
				more = true;
			}
			nd = new_doc(b, map, doc);
			if (nd >= 0)
				se_segwriter_term_doc(w, nd, freq);
			if (positions)
			{
				/*
				 * The chain holds the doc's position deltas as the
				 * POSITIONS section does (from 0, clamped to ascend, at
				 * most PG_INT32_MAX): they are copied, not re-encoded.
				 */
				int			len;

				if ((size_t) freq * 10 > pos_cap)
				{
					if (pos_buf)
						pfree(pos_buf);
					pos_cap = Max((size_t) freq * 10, 1024);
					pos_buf = se_index_alloc_huge(pos_cap, false);
				}
				len = sr_copy_vints(&pr, freq, pos_buf);
				if (nd >= 0)
					se_segwriter_term_pos_vints(w, pos_buf, len, freq);
			}
			if (!more)
				break;
			doc += (f->io == SE_IDX_DOCS) ? (int64) sr_vint(&dr) : (int64) (code >> 1);
		}
		se_segwriter_term_end(w);
	}
	se_segwriter_terms_end(w);
	if (pos_buf)
		pfree(pos_buf);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return (x > y) - (x < y);
}

/* The field's doc values; st: its terms, sorted (sorted-set values are terms). */
static void
serialize_doc_values(SeSegmentBuilder *b, SeSegWriter *w, int fno,
					 const int32 *map, const SortTerm *st)
{
	BField	   *f = &b->fields[fno];
	size_t		k;

	if (f->dv == SE_DV_NUMERIC)
	{
		se_segwriter_numeric_begin(w, fno);
		for (k = 0; k < f->ndvdocs; k++)
		{
			size_t		s = f->dvdocs[k].start;
			size_t		e = (k + 1 < f->ndvdocs) ? f->dvdocs[k + 1].start : f->nnums;
			int32		nd = new_doc(b, map, f->dvdocs[k].doc);

			if (nd >= 0)
				se_segwriter_numeric_doc(w, nd, f->nums + s, (int) (e - s));
		}
		se_segwriter_numeric_end(w);
	}
	else if (f->dv == SE_DV_SORTED_SET)
	{
		bool	   *used = se_index_alloc_huge(f->terms.nkeys + 1, true);
		uint32	   *ordmap = se_index_alloc_huge(sizeof(uint32) * (f->terms.nkeys + 1), false);
		uint32	   *tmp = NULL;
		size_t		tmp_cap = 0;
		uint32		n = 0;

		/* only values of surviving docs enter the dictionary */
		for (k = 0; k < f->ndvdocs; k++)
		{
			size_t		s = f->dvdocs[k].start;
			size_t		e = (k + 1 < f->ndvdocs) ? f->dvdocs[k + 1].start : f->nords;

			if (new_doc(b, map, f->dvdocs[k].doc) >= 0)
				for (; s < e; s++)
					used[f->ords[s]] = true;
		}
		se_segwriter_sorted_begin(w, fno);
		for (k = 0; k < f->terms.nkeys; k++)
		{
			BKey	   *key = &f->terms.keys[st[k].id];

			prefetch_term(b, &f->terms, st, k);
			if (!used[st[k].id])
				continue;
			ordmap[st[k].id] = n++;
			se_segwriter_sorted_dict_add(w, key->len <= 8 ? (const char *) &key->prefix : key->text,
										 (int) key->len);
		}
		for (k = 0; k < f->ndvdocs; k++)
		{
			size_t		s = f->dvdocs[k].start;
			size_t		e = (k + 1 < f->ndvdocs) ? f->dvdocs[k + 1].start : f->nords;
			int32		nd = new_doc(b, map, f->dvdocs[k].doc);
			size_t		i;

			if (nd < 0)
				continue;
			tmp = se_index_grow(tmp, &tmp_cap, e - s, sizeof(uint32));
			for (i = s; i < e; i++)
				tmp[i - s] = ordmap[f->ords[i]];
			if (e - s > 1)
				qsort(tmp, e - s, sizeof(uint32), cmp_u32);
			se_segwriter_sorted_doc(w, nd, tmp, (int) (e - s));
		}
		se_segwriter_sorted_end(w);
		pfree(used);
		pfree(ordmap);
		if (tmp)
			pfree(tmp);
	}
}

void
se_builder_serialize(SeSegmentBuilder *b,
					 const uint8 segment_id[SE_SEGMENT_ID_LEN],
					 int zstd_level, StringInfo out)
{
	int32	   *map = NULL;
	uint32		live = b->num_docs - b->num_deleted;
	SeSegWriter *w;
	SortTerm   *st;
	uint32		d;
	int			i;

	if (b->num_deleted > 0)
	{
		int32		next = 0;

		map = se_index_alloc_huge(sizeof(int32) * ((size_t) b->num_docs + 1), false);
		for (d = 0; d < b->num_docs; d++)
			map[d] = se_builder_is_deleted(b, (int) d) ? -1 : next++;
	}
	w = se_segwriter_create(live, zstd_level);
	for (i = 0; i < b->nfields; i++)
	{
		BField	   *f = &b->fields[i];

		se_segwriter_add_field(w, f->name, f->name_len, f->io, f->norms, f->dv);
	}
	for (i = 0; i < b->nfields; i++)
	{
		BField	   *f = &b->fields[i];

		/* norms first: the postings impacts are computed from them */
		if (f->norms)
		{
			for (d = 0; d < f->normv_len && d < b->num_docs; d++)
			{
				int32		nd = new_doc(b, map, d);

				if (nd >= 0 && f->normv[d] != 0)
					se_segwriter_set_norm(w, i, nd, f->normv[d]);
			}
		}
		/* one sort serves the term and the sorted-set dictionaries */
		st = NULL;
		if ((f->io != SE_IDX_NONE || f->dv == SE_DV_SORTED_SET) && f->terms.nkeys > 0)
			st = sort_keys(&f->terms);
		if (f->io != SE_IDX_NONE && f->terms.nkeys > 0)
			serialize_terms(b, w, i, map, st);
		if (f->dv != SE_DV_NONE)
			serialize_doc_values(b, w, i, map, st);
		if (st)
			pfree(st);
	}
	for (d = 0; d < b->num_docs; d++)
	{
		SeDocMeta	m;
		BDoc	   *doc = &b->docs[d];

		if (map && map[d] < 0)
			continue;
		se_builder_doc_meta(b, (int) d, &m);
		se_segwriter_doc(w, &m, doc->src, doc->src_len);
	}
	se_segwriter_finish(w, segment_id, out);
	if (map)
		pfree(map);
}
