/*-------------------------------------------------------------------------
 *
 * engine.c
 *	  One shard's engine, owned by exactly one write worker (see engine.h).
 *
 * Writes: every operation gets the next seq_no, is checked against the
 * current version of its _id (buffer first, then segments newest first,
 * honouring live docs), is appended to the translog and added to the
 * in-memory buffer; a replaced or deleted document is marked deleted in the
 * buffer or in its segment's worker-local live-docs copy.  Refresh turns
 * the buffer into a segment file (not fsynced: the translog still covers
 * it), writes changed live docs, merges when there are too many segments,
 * and publishes the new segment list in the shard slot.  Flush fsyncs the
 * segments, rolls the translog and writes the commit point segments_<N>
 * atomically; recovery = newest valid commit point + translog replay.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "cluster/coordinator.h"
#include "cluster/scripts.h"
#include "mapping/mapping.h"
#include "node/node.h"
#include "script/script.h"
#include "index/merge_policy.h"
#include "shard/engine.h"
#include "shard/pit_registry.h"
#include "util/json.h"

#define COMMIT_FORMAT "se_commit"
#define COMMIT_VERSION 1
#define MERGE_FACTOR 10			/* segments per tier before a merge */

static void publish(SeShard *sh);
static void cleanup_files(SeShard *sh);
static void skip_existing_gens(SeShard *sh);

/*
 * A delete applied out of order on a replica: its _id and seq_no, so that
 * an older index operation of the _id arriving later is not resurrected
 * (ES keeps delete tombstones for that).  Needed only while an older
 * operation may still come: until the local checkpoint passes the delete.
 */
typedef struct SeTombstone
{
	char	   *id;
	int			id_len;
	int64		seq_no;
} SeTombstone;

#define GCP_FILE "global_checkpoint"
#define GCP_FORMAT "se_gcp"
#define GCP_VERSION 1

char *
se_index_path(const char *uuid)
{
	return psprintf("%s/indices/%s", se_data_directory(), uuid);
}

char *
se_shard_path(const char *uuid, int shard)
{
	return psprintf("%s/indices/%s/%d", se_data_directory(), uuid, shard);
}

static char *
seg_path(SeShard *sh, uint64 gen)
{
	return psprintf("%s/_" UINT64_FORMAT ".seg", sh->index_dir, gen);
}

static char *
liv_path(SeShard *sh, uint64 gen, uint64 del_gen)
{
	return psprintf("%s/_" UINT64_FORMAT "_" UINT64_FORMAT ".liv", sh->index_dir, gen, del_gen);
}

static void
make_segment_id(uint8 id[SE_SEGMENT_ID_LEN])
{
	if (!pg_strong_random(id, SE_SEGMENT_ID_LEN))
		elog(ERROR, "could not generate a segment id");
}

static void
new_buffer(SeShard *sh)
{
	MemoryContext old = MemoryContextSwitchTo(sh->cxt);

	if (sh->buffer)
		se_builder_free(sh->buffer);
	sh->buffer = se_builder_create();
	MemoryContextSwitchTo(old);
}

/* Raise INDEX_CORRUPTED for a codec error. */
static void
corrupted(SeShard *sh, const char *what, const SeError *err)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("shard [%s][%d] is corrupted: %s: %s", sh->index_name, sh->shard,
					what, err && err->reason ? err->reason : "unknown"),
			 errdetail("index_corrupted_exception")));
}

/* Open (map + parse) a segment file into entry e. */
static void
open_segment(SeShard *sh, SeSegEntry *e, uint64 gen, uint64 del_gen, bool verify)
{
	char	   *path = seg_path(sh, gen);
	SeError		err;
	MemoryContext old;

	se_error_init(&err);
	memset(e, 0, sizeof(*e));
	e->gen = gen;
	e->del_gen = del_gen;
	e->cxt = AllocSetContextCreate(sh->cxt, "search_engine segment", ALLOCSET_SMALL_SIZES);
	if (!se_file_map(path, &e->mf))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("shard [%s][%d]: could not open segment \"%s\": %m",
						sh->index_name, sh->shard, path),
				 errdetail("index_corrupted_exception")));
	old = MemoryContextSwitchTo(e->cxt);
	e->reader = se_segment_open(e->mf.data, e->mf.len, verify, &err);
	if (e->reader == NULL)
	{
		MemoryContextSwitchTo(old);
		se_file_unmap(&e->mf);
		corrupted(sh, path, &err);
	}
	e->max_doc = se_segment_max_doc(e->reader);
	e->live_count = e->max_doc;
	if (del_gen > 0)
	{
		char	   *lp = liv_path(sh, gen, del_gen);
		size_t		len;
		char	   *data = se_file_read_all(lp, &len, false);
		uint8		id[SE_SEGMENT_ID_LEN];

		se_segment_get_id(e->reader, id);
		e->live = se_livedocs_parse((const uint8 *) data, len, e->max_doc, id, &err);
		if (e->live == NULL)
		{
			MemoryContextSwitchTo(old);
			se_file_unmap(&e->mf);
			corrupted(sh, lp, &err);
		}
		e->live_count = se_livedocs_count(e->live, e->max_doc);
	}
	MemoryContextSwitchTo(old);
	pfree(path);
}

static void
close_segment(SeSegEntry *e)
{
	se_file_unmap(&e->mf);
	if (e->cxt)
		MemoryContextDelete(e->cxt);
	e->cxt = NULL;
	e->reader = NULL;
}

/* ---------- commit points ---------- */

static void tombstone_add(SeShard *sh, const char *id, int id_len, int64 seq_no);

/* Mark seq_no processed; the tracker's window lives with the shard. */
static inline void
mark_processed(SeShard *sh, int64 seq_no)
{
	MemoryContext old = MemoryContextSwitchTo(sh->cxt);

	se_checkpoint_mark(&sh->ckpt, seq_no);
	MemoryContextSwitchTo(old);
}
static void publish_checkpoints(SeShard *sh);
static void persist_global_checkpoint(SeShard *sh);
static int64 load_global_checkpoint(SeShard *sh);
static int64 routing_term(SeShard *sh, const SeIndexMeta *im);
static void flush_commit(SeShard *sh, int64 retain);
static void roll_back_to(SeShard *sh, int64 gcp);

static void
write_commit(SeShard *sh, int64 gen)
{
	StringInfoData buf;
	uint8		zero[SE_SEGMENT_ID_LEN] = {0};
	int			i;
	char	   *path = psprintf("%s/segments_" INT64_FORMAT, sh->index_dir, gen);

	initStringInfo(&buf);
	se_file_write_header(&buf, COMMIT_FORMAT, COMMIT_VERSION, zero);
	appendStringInfo(&buf, "{\"generation\":" INT64_FORMAT ",\"translog_gen\":" INT64_FORMAT
					 ",\"max_seq_no\":" INT64_FORMAT ",\"next_seg_gen\":" INT64_FORMAT ",\"segments\":[",
					 gen, sh->tl.gen, sh->max_seq_no, sh->next_seg_gen);
	for (i = 0; i < sh->nsegs; i++)
		appendStringInfo(&buf, "%s[" UINT64_FORMAT "," UINT64_FORMAT "]", i ? "," : "",
						 sh->segs[i].gen, sh->segs[i].del_gen);
	/*
	 * The local checkpoint, and what a replica processed above it (out of
	 * order) with the tombstones still needed: the translog before this
	 * commit is not replayed, so they would otherwise be forgotten.
	 */
	appendStringInfo(&buf, "],\"local_checkpoint\":" INT64_FORMAT ",\"processed\":[",
					 sh->ckpt.checkpoint);
	{
		int64		q;
		bool		first = true;

		for (q = sh->ckpt.checkpoint + 1; q <= sh->ckpt.max_seq_no; q++)
			if (se_checkpoint_contains(&sh->ckpt, q))
			{
				appendStringInfo(&buf, "%s" INT64_FORMAT, first ? "" : ",", q);
				first = false;
			}
	}
	appendStringInfoString(&buf, "],\"tombstones\":[");
	for (i = 0; i < sh->ntombstones; i++)
	{
		appendStringInfoString(&buf, i ? ",[" : "[");
		se_json_write_string(&buf, sh->tombstones[i].id, sh->tombstones[i].id_len);
		appendStringInfo(&buf, "," INT64_FORMAT "]", sh->tombstones[i].seq_no);
	}
	appendStringInfoString(&buf, "]}");
	se_file_write_footer(&buf);
	se_file_write_durable(path, buf.data, buf.len);
	pfree(buf.data);
	pfree(path);
}

/* Newest commit generation present in the directory, or 0. */
static int64
newest_commit(SeShard *sh)
{
	return se_commit_newest(sh->index_dir);
}

int64
se_commit_newest(const char *index_dir)
{
	DIR		   *d = AllocateDir(index_dir);
	struct dirent *de;
	int64		best = 0;

	while ((de = ReadDir(d, index_dir)) != NULL)
	{
		int64		g;
		char		tail;

		if (sscanf(de->d_name, "segments_" INT64_FORMAT "%c", &g, &tail) == 1 && g > best)
			best = g;
	}
	FreeDir(d);
	return best;
}

int64
se_commit_newest_upto(const char *index_dir, int64 max_seq_no, int64 before, SeCommitInfo *ci)
{
	DIR		   *d = AllocateDir(index_dir);
	struct dirent *de;
	int64	   *gens = NULL;
	int			n = 0;
	int			cap = 0;
	int64		found = 0;
	int			i;

	while ((de = ReadDir(d, index_dir)) != NULL)
	{
		int64		g;
		char		tail;

		if (sscanf(de->d_name, "segments_" INT64_FORMAT "%c", &g, &tail) != 1 ||
			(before > 0 && g >= before))
			continue;
		if (n == cap)
		{
			cap = Max(4, cap * 2);
			gens = gens ? repalloc(gens, sizeof(int64) * cap) : palloc(sizeof(int64) * cap);
		}
		gens[n++] = g;
	}
	FreeDir(d);
	/* few commits (the last and maybe a safe one): newest first by scans */
	while (found == 0 && n > 0)
	{
		int			best = 0;
		SeError		err;

		for (i = 1; i < n; i++)
			if (gens[i] > gens[best])
				best = i;
		se_error_init(&err);
		if (se_commit_read(index_dir, gens[best], ci, &err) && ci->max_seq_no <= max_seq_no)
			found = gens[best];
		gens[best] = gens[--n];
	}
	if (gens)
		pfree(gens);
	return found;
}

void
se_commit_drop_newer(const char *index_dir, int64 gen)
{
	DIR		   *d = AllocateDir(index_dir);
	struct dirent *de;

	while ((de = ReadDir(d, index_dir)) != NULL)
	{
		int64		g;
		char		tail;

		if (sscanf(de->d_name, "segments_" INT64_FORMAT "%c", &g, &tail) == 1 && g > gen)
		{
			char	   *p = psprintf("%s/%s", index_dir, de->d_name);

			(void) unlink(p);
			pfree(p);
		}
	}
	FreeDir(d);
	se_fsync_dir(index_dir);
}

/*
 * Read commit point gen of index_dir (peer recovery's source: which files
 * and translog generations a copy of that commit needs); false with err
 * set when it is missing or corrupted.
 */
bool
se_commit_read(const char *index_dir, int64 gen, SeCommitInfo *ci, SeError *err)
{
	char	   *path = psprintf("%s/segments_" INT64_FORMAT, index_dir, gen);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeJsonParseOptions opts = {0};
	SeJson	   *root = NULL;
	SeJson	   *segs;
	int			hdr;
	int			i;

	if (data == NULL)
	{
		se_error_set(err, 500, "index_corrupted_exception", "commit point \"%s\" is missing", path);
		return false;
	}
	hdr = se_file_check((const uint8 *) data, len, COMMIT_FORMAT, COMMIT_VERSION,
						COMMIT_VERSION, NULL, true, err);
	if (hdr >= 0)
		root = se_json_parse(data + hdr, len - hdr - SE_FILE_FOOTER_LEN, &opts, err);
	segs = root ? se_json_get(root, "segments") : NULL;
	if (segs == NULL || segs->u.a.count > SE_MAX_SEGMENTS)
	{
		if (!se_error_is_set(err))
			se_error_set(err, 500, "index_corrupted_exception", "commit point \"%s\" is corrupted", path);
		return false;
	}
	ci->generation = gen;
	ci->translog_gen = se_json_get(root, "translog_gen")->u.n.i;
	ci->max_seq_no = se_json_get(root, "max_seq_no")->u.n.i;
	{
		/* older commit points: a single copy processed every seq_no in order */
		SeJson	   *lcp = se_json_get(root, "local_checkpoint");

		ci->local_checkpoint = lcp && lcp->type == SE_JSON_NUMBER ? lcp->u.n.i : ci->max_seq_no;
	}
	ci->nsegs = segs->u.a.count;
	for (i = 0; i < ci->nsegs; i++)
	{
		ci->gens[i] = (uint64) segs->u.a.items[i]->u.a.items[0]->u.n.i;
		ci->del_gens[i] = (uint64) segs->u.a.items[i]->u.a.items[1]->u.n.i;
	}
	return true;
}

static void
load_commit(SeShard *sh, int64 gen, int64 *translog_gen)
{
	char	   *path = psprintf("%s/segments_" INT64_FORMAT, sh->index_dir, gen);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, false);
	SeError		err;
	int			hdr;
	SeJson	   *root;
	SeJson	   *segs;
	SeJsonParseOptions opts = {0};
	int			i;

	se_error_init(&err);
	hdr = se_file_check((const uint8 *) data, len, COMMIT_FORMAT, COMMIT_VERSION,
						COMMIT_VERSION, NULL, true, &err);
	if (hdr < 0)
		corrupted(sh, path, &err);
	root = se_json_parse(data + hdr, len - hdr - SE_FILE_FOOTER_LEN, &opts, &err);
	if (root == NULL || se_json_get(root, "segments") == NULL)
		corrupted(sh, path, &err);
	*translog_gen = se_json_get(root, "translog_gen")->u.n.i;
	sh->max_seq_no = se_json_get(root, "max_seq_no")->u.n.i;
	sh->next_seg_gen = se_json_get(root, "next_seg_gen")->u.n.i;
	{
		/* older commit points: a single copy processed every seq_no in order */
		SeJson	   *lcp = se_json_get(root, "local_checkpoint");
		SeJson	   *done = se_json_get(root, "processed");
		SeJson	   *tombs = se_json_get(root, "tombstones");

		se_checkpoint_init(&sh->ckpt, lcp && lcp->type == SE_JSON_NUMBER ? lcp->u.n.i
						   : sh->max_seq_no);
		if (done && done->type == SE_JSON_ARRAY)
			for (i = 0; i < done->u.a.count; i++)
				mark_processed(sh, done->u.a.items[i]->u.n.i);
		if (tombs && tombs->type == SE_JSON_ARRAY)
			for (i = 0; i < tombs->u.a.count; i++)
			{
				SeJson	   *t = tombs->u.a.items[i];

				tombstone_add(sh, t->u.a.items[0]->u.s.str, t->u.a.items[0]->u.s.len,
							  t->u.a.items[1]->u.n.i);
			}
	}
	segs = se_json_get(root, "segments");
	if (segs->u.a.count > SE_MAX_SEGMENTS)
		corrupted(sh, path, NULL);
	sh->nsegs = 0;
	for (i = 0; i < segs->u.a.count; i++)
	{
		SeJson	   *s = segs->u.a.items[i];

		open_segment(sh, &sh->segs[i], (uint64) s->u.a.items[0]->u.n.i,
					 (uint64) s->u.a.items[1]->u.n.i, true);
		sh->segs[i].synced = true;
		sh->nsegs++;
	}
	sh->commit_gen = gen;
	sh->commit_max_seq_no = sh->max_seq_no;
	sh->commit_tlog_gen = *translog_gen;
	sh->safe_gen = 0;
}

/* ---------- version lookup ---------- */

typedef struct DocLoc
{
	int			seg;			/* -1 = buffer, -2 = none */
	int32		doc;
	SeDocMeta	meta;
} DocLoc;

/*
 * Every index and delete looks its _id up in the buffer and then in each
 * segment, newest first, and most ids are in none of them: on 1M Debian
 * Contents documents (about ten segments per shard) those term dictionary
 * seeks were 15% of a write worker's time.  Each segment gets a Bloom
 * filter of its _id terms, built by the first lookup that reaches it
 * (segments never change, so it stays right) and blocked -- the three bits
 * of an id are in one 64-bit word, one cache miss per segment.  About ten
 * bits per document keep false positives, which only cost the seek that
 * every lookup used to make, to a few percent.
 */
#define ID_BLOOM_BITS_PER_DOC	10

static inline uint64
id_bloom_word_bits(uint64 h)
{
	return (UINT64CONST(1) << (h & 63)) |
		(UINT64CONST(1) << ((h >> 6) & 63)) |
		(UINT64CONST(1) << ((h >> 12) & 63));
}

static void
build_id_bloom(SeSegEntry *e)
{
	int			field = se_segment_field(e->reader, SE_ID_FIELD);
	uint64		words = 1;
	uint64	   *bloom;
	MemoryContext tmp;
	MemoryContext old;
	SeTermsEnum *te;
	const char *term;
	int			len;
	SeTermInfo	ti;
	SeFieldStats stats;
	int64		sum_doc_freq = 0;

	e->id_bloom_built = true;
	if (field < 0)
		return;
	while (words * 64 < (uint64) e->max_doc * ID_BLOOM_BITS_PER_DOC)
		words *= 2;
	bloom = MemoryContextAllocExtended(e->cxt, words * sizeof(uint64),
									   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO | MCXT_ALLOC_NO_OOM);
	if (bloom == NULL)
		return;
	tmp = AllocSetContextCreate(CurrentMemoryContext, "search_engine id bloom",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(tmp);
	te = se_segment_terms(e->reader, field, NULL, 0);
	while (se_terms_next(te, &term, &len, &ti))
	{
		uint64		h = hash_bytes_extended((const unsigned char *) term, len, 0);

		bloom[(h >> 32) & (words - 1)] |= id_bloom_word_bits(h);
		sum_doc_freq += ti.doc_freq;
	}
	se_terms_close(te);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	/* a filter that missed a term would hide a live document: check */
	se_segment_field_stats(e->reader, field, &stats);
	if (sum_doc_freq != stats.sum_doc_freq)
	{
		pfree(bloom);
		return;
	}
	e->id_bloom = bloom;
	e->id_bloom_mask = words - 1;
}

/* Can segment e hold the id whose hash_bytes_extended is h? */
static inline bool
id_maybe_in(SeSegEntry *e, uint64 h)
{
	uint64		bits;

	if (!e->id_bloom_built)
		build_id_bloom(e);
	if (e->id_bloom == NULL)
		return true;
	bits = id_bloom_word_bits(h);
	return (e->id_bloom[(h >> 32) & e->id_bloom_mask] & bits) == bits;
}

/*
 * Start the cache misses of lookup_id(id) early (a hint, while the item
 * before it is applied): the buffer's hash slot for the id and the Bloom
 * word of each segment, which a new _id would otherwise wait for one by
 * one (on 1M Contents docs, 5% of a write worker's time).
 */
static uint64
prefetch_id(SeShard *sh, const char *id, int id_len)
{
	uint64		h;
	int			i;

	se_builder_prefetch_id(sh->buffer, id, id_len);
	h = hash_bytes_extended((const unsigned char *) id, id_len, 0);
	for (i = sh->nsegs - 1; i >= 0; i--)
	{
		SeSegEntry *e = &sh->segs[i];

		if (e->id_bloom != NULL)
			__builtin_prefetch(&e->id_bloom[(h >> 32) & e->id_bloom_mask]);
	}
	return h;					/* the id's hash_bytes_extended, for its item */
}

/* Where id's live version is; h: its hash_bytes_extended, or 0 to compute. */
static void
lookup_id_hashed(SeShard *sh, const char *id, int id_len, uint64 h, DocLoc *loc)
{
	int			i;
	int			d = se_builder_lookup_id(sh->buffer, id, id_len);

	if (d >= 0)
	{
		loc->seg = -1;
		loc->doc = d;
		se_builder_doc_meta(sh->buffer, d, &loc->meta);
		return;
	}
	if (h == 0)
		h = hash_bytes_extended((const unsigned char *) id, id_len, 0);
	for (i = sh->nsegs - 1; i >= 0; i--)
	{
		SeSegEntry *e = &sh->segs[i];
		int32		doc;

		if (!id_maybe_in(e, h))
			continue;
		doc = se_segment_lookup_id(e->reader, id, id_len);
		if (doc >= 0 && se_livedocs_get(e->live, doc))
		{
			loc->seg = i;
			loc->doc = doc;
			se_segment_doc_meta(e->reader, doc, &loc->meta);
			return;
		}
	}
	loc->seg = -2;
}

static void
lookup_id(SeShard *sh, const char *id, int id_len, DocLoc *loc)
{
	lookup_id_hashed(sh, id, id_len, 0, loc);
}

/*
 * The nested docs of the block that ends at loc's doc: the docs just
 * before it that are live and carry its _id (a nested doc takes its
 * root's _id; no other live doc has it).  ES deletes and replaces blocks
 * whole, as Lucene's updateDocuments does.
 */
static void
delete_nested_before(SeShard *sh, const DocLoc *loc)
{
	int32		d;

	if (!se_mapping_has_nested(sh->mapping))
		return;
	for (d = loc->doc - 1; d >= 0; d--)
	{
		SeDocMeta	m;

		if (loc->seg == -1)
		{
			if (se_builder_is_deleted(sh->buffer, d))
				break;
			se_builder_doc_meta(sh->buffer, d, &m);
		}
		else
		{
			SeSegEntry *e = &sh->segs[loc->seg];

			if (e->live != NULL && !se_livedocs_get(e->live, d))
				break;
			se_segment_doc_meta(e->reader, d, &m);
		}
		if (m.id_len != loc->meta.id_len || memcmp(m.id, loc->meta.id, m.id_len) != 0)
			break;
		if (loc->seg == -1)
			se_builder_delete(sh->buffer, d);
		else
		{
			SeSegEntry *e = &sh->segs[loc->seg];

			se_livedocs_clear(e->live, d);
			e->live_count--;
			e->live_dirty = true;
		}
	}
}

static void
delete_loc(SeShard *sh, const DocLoc *loc)
{
	if (loc->seg == -1)
	{
		se_builder_delete(sh->buffer, loc->doc);
		delete_nested_before(sh, loc);
	}
	else if (loc->seg >= 0)
	{
		SeSegEntry *e = &sh->segs[loc->seg];

		if (e->live == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(e->cxt);

			e->live = se_livedocs_new(e->max_doc);
			MemoryContextSwitchTo(old);
		}
		if (se_livedocs_get(e->live, loc->doc))
		{
			se_livedocs_clear(e->live, loc->doc);
			e->live_count--;
			e->live_dirty = true;
			delete_nested_before(sh, loc);
		}
	}
}

/* ---------- applying operations ---------- */

static void
refresh_mapping(SeShard *sh)
{
	const SeClusterState *st = se_state_current();
	SeIndexMeta *im;

	if (st->version == sh->mapping_state_version || sh->mapping_dirty)
		return;
	im = se_state_find_uuid(st, sh->uuid);
	if (im == NULL)
		return;
	{
		MemoryContext old = MemoryContextSwitchTo(sh->cxt);

		sh->mapping = se_mapping_copy(im->mapping);
		sh->settings = im->settings;
		MemoryContextSwitchTo(old);
	}
	sh->mapping_state_version = st->version;
	sh->replicated = !se_cluster_single_node() && im->settings.number_of_replicas > 0;
}

/*
 * A document grew the shard's mapping: publish the growth node-wide before
 * the document is logged or acknowledged, as an ES primary sends its
 * mapping update to the master and waits.  Deciding it per shard let two
 * shards acknowledge conflicting documents ({"g": 7} and {"g": {"x": 1}}),
 * of which translog replay then skipped one.  A growth that a conflicting
 * update from another shard (or the total fields limit) beat fails the
 * document with 400 mapper_parsing_exception; either way the shard takes
 * the published mapping back.
 */
static bool
publish_growth(SeShard *sh, SeError *err)
{
	SeError		merr;
	bool		ok;

	se_error_init(&merr);
	ok = se_state_merge_dynamic_mapping(sh->uuid, sh->mapping, &merr);
	if (!ok && merr.status == 404)
		*err = merr;			/* the index was deleted meanwhile */
	else if (!ok)
		se_error_set(err, 400, "mapper_parsing_exception", "failed to parse: %s",
					 merr.reason ? merr.reason : "dynamic mapping update rejected");
	sh->mapping_dirty = false;
	sh->mapping_state_version = 0;
	refresh_mapping(sh);
	return ok;
}

/*
 * Parse and buffer one document; on a mapping error returns false with err
 * set and nothing buffered.
 */
static bool
buffer_doc(SeShard *sh, const SeDocMeta *meta, const char *src, size_t src_len,
		   const SeJson *doc, SeError *err)
{
	SeDocParseOptions opts;
	bool		changed = false;
	MemoryContext old;
	bool		ok;

	memset(&opts, 0, sizeof(opts));
	opts.limits.total_fields_limit = sh->settings.total_fields_limit;
	opts.limits.depth_limit = sh->settings.depth_limit;
	opts.limits.nested_fields_limit = sh->settings.nested_fields_limit;
	opts.limits.nested_objects_limit = sh->settings.nested_objects_limit;
	se_builder_begin_doc(sh->buffer);
	old = MemoryContextSwitchTo(sh->cxt);	/* mapping growth lives with the shard */
	ok = se_doc_parse(sh->mapping, doc, &opts, sh->buffer, meta->id, &changed, err);
	MemoryContextSwitchTo(old);
	if (!ok)
		return false;
	if (changed && !publish_growth(sh, err))
	{
		se_builder_abort_doc(sh->buffer);
		return false;
	}
	se_builder_end_doc(sh->buffer, meta, src, src_len);
	return true;
}

static void
log_op(SeShard *sh, SeOpType op, const SeDocMeta *meta, const char *src, size_t src_len)
{
	SeTranslogOp t;

	mark_processed(sh, meta->seq_no);
	if (sh->recovering)
		return;
	t.op = op;
	t.seq_no = meta->seq_no;
	t.primary_term = meta->primary_term;
	t.version = meta->version;
	t.id = meta->id;
	t.id_len = meta->id_len;
	t.routing = meta->routing;
	t.routing_len = meta->routing_len;
	t.source = src;
	t.source_len = src_len;
	se_translog_add(&sh->tl, &t);
}

/*
 * Deferred indexing.  When its queue has nothing else waiting, the write
 * worker acknowledges a batch once every item is checked against the
 * mapping, versioned and in the fsynced translog, and only then analyzes
 * and inverts the documents (se_shard_index_pending), while the client
 * prepares its next request: a single bulk client otherwise waits for the
 * indexing of every batch.  Nothing can fail after the acknowledgement
 * (se_doc_check has checked all that se_doc_parse checks; deferred text is
 * too short for an immense term), and everything that reads the buffer
 * comes after: the owner adds pending documents before it takes its next
 * request, and refresh, flush and close add them first.  Within a batch,
 * an item whose id is pending, and any update or delete, adds the pending
 * documents first, so lookups and buffer order are what they would be
 * without deferral.
 */
/*
 * At most this much _source (and its DOM, a few times that) waits per
 * shard: beyond it the worker indexes what is pending before going on, so
 * a batch of large bulks stays within the indexing memory bound.
 */
#define SE_PENDING_MAX_BYTES	(8 * 1024 * 1024)

typedef struct SePendingDoc
{
	SeDocMeta	meta;			/* id and routing copied */
	char	   *src;			/* _source, copied out of the request */
	size_t		src_len;
	SeParsedDoc *pd;
	uint64		hash;			/* of the id */
} SePendingDoc;

static int
pending_find(SeShard *sh, const char *id, int id_len, uint64 h)
{
	uint32		i;

	if (sh->npending == 0)
		return -1;
	for (i = (uint32) h & sh->pending_mask; sh->pending_slots[i] != 0; i = (i + 1) & sh->pending_mask)
	{
		SePendingDoc *p = &sh->pending[sh->pending_slots[i] - 1];

		if (p->hash == h && p->meta.id_len == id_len && memcmp(p->meta.id, id, id_len) == 0)
			return (int) (sh->pending_slots[i] - 1);
	}
	return -1;
}

static void
pending_rehash(SeShard *sh, uint32 nslots)
{
	int			k;

	if (sh->pending_slots)
		pfree(sh->pending_slots);
	sh->pending_slots = MemoryContextAllocZero(sh->pending_cxt, sizeof(uint32) * nslots);
	sh->pending_mask = nslots - 1;
	for (k = 0; k < sh->npending; k++)
	{
		uint32		i = (uint32) sh->pending[k].hash & sh->pending_mask;

		while (sh->pending_slots[i] != 0)
			i = (i + 1) & sh->pending_mask;
		sh->pending_slots[i] = k + 1;
	}
}

/*
 * Remember a checked, logged document.  Its id is already in pending_cxt
 * (apply_bulk copies a deferred item's id there); routing and _source
 * point into the request and are copied.
 */
static void
pending_add(SeShard *sh, const SeDocMeta *meta, const char *src, size_t src_len,
			SeParsedDoc *pd, uint64 h)
{
	MemoryContext old = MemoryContextSwitchTo(sh->pending_cxt);
	SePendingDoc *p;

	if (sh->npending == sh->cappending)
	{
		sh->cappending = Max(64, sh->cappending * 2);
		sh->pending = sh->pending ? repalloc(sh->pending, sizeof(SePendingDoc) * sh->cappending)
			: palloc(sizeof(SePendingDoc) * sh->cappending);
	}
	p = &sh->pending[sh->npending++];
	Assert(GetMemoryChunkContext((void *) meta->id) == sh->pending_cxt);
	p->meta = *meta;
	p->meta.routing = meta->routing ? pnstrdup(meta->routing, meta->routing_len) : NULL;
	p->src = palloc(Max(src_len, 1));
	memcpy(p->src, src, src_len);
	p->src_len = src_len;
	p->pd = pd;
	p->hash = h;
	sh->pending_bytes += src_len;
	MemoryContextSwitchTo(old);
	if ((uint32) sh->npending * 2 > sh->pending_mask)
		pending_rehash(sh, Max(128, (sh->pending_mask + 1) * 2));
	else
	{
		uint32		i = (uint32) h & sh->pending_mask;

		while (sh->pending_slots[i] != 0)
			i = (i + 1) & sh->pending_mask;
		sh->pending_slots[i] = sh->npending;
	}
}

void
se_shard_index_pending(SeShard *sh)
{
	int			k;

	for (k = 0; k < sh->npending; k++)
	{
		SePendingDoc *p = &sh->pending[k];

		se_builder_begin_doc(sh->buffer);
		se_doc_add(p->pd, sh->buffer);
		se_builder_end_doc(sh->buffer, &p->meta, p->src, p->src_len);
	}
	sh->npending = 0;
	sh->pending_bytes = 0;
	sh->cappending = 0;
	sh->pending = NULL;
	sh->pending_slots = NULL;
	sh->pending_mask = 0;
	MemoryContextReset(sh->pending_cxt);
}

typedef struct ItemOut
{
	int			status;
	SeItemResult result;
	int64		version;
	int64		seq_no;
	int64		primary_term;
	SeError		err;
	const char *source;			/* an update's document as written (or kept) */
	int			source_len;
} ItemOut;

static bool
check_if_seq_no(const SeItemReq *rq, const char *id, const DocLoc *loc, ItemOut *out)
{
	if (!(rq->flags & SE_ITEM_FLAG_IF_SEQ_NO))
		return true;
	if (loc->seg == -2)
	{
		se_error_set(&out->err, 409, "version_conflict_engine_exception",
					 "[%s]: version conflict, required seqNo [" INT64_FORMAT "], primary term [" INT64_FORMAT "] but no document was found",
					 id, rq->if_seq_no, rq->if_primary_term);
		out->status = 409;
		return false;
	}
	if (loc->meta.seq_no != rq->if_seq_no || loc->meta.primary_term != rq->if_primary_term)
	{
		se_error_set(&out->err, 409, "version_conflict_engine_exception",
					 "[%s]: version conflict, required seqNo [" INT64_FORMAT "], primary term [" INT64_FORMAT "]. current document has seqNo [" INT64_FORMAT "] and primary term [" INT64_FORMAT "]",
					 id, rq->if_seq_no, rq->if_primary_term, loc->meta.seq_no, loc->meta.primary_term);
		out->status = 409;
		return false;
	}
	return true;
}

/* Index (or create) a document; src is validated JSON. */
static void
do_index(SeShard *sh, const SeItemReq *rq, const char *id, int id_len,
		 const char *routing, int routing_len, const char *src, size_t src_len,
		 const SeJson *doc, bool create, bool defer, uint64 id_hash, ItemOut *out)
{
	DocLoc		loc;
	SeDocMeta	meta;

	loc.seg = -2;
	if (!(rq->flags & SE_ITEM_FLAG_AUTO_ID))
		lookup_id_hashed(sh, id, id_len, id_hash, &loc);
	if (create && loc.seg != -2)
	{
		se_error_set(&out->err, 409, "version_conflict_engine_exception",
					 "[%s]: version conflict, document already exists (current version [" INT64_FORMAT "])",
					 id, loc.meta.version);
		out->status = 409;
		return;
	}
	if (!check_if_seq_no(rq, id, &loc, out))
		return;
	meta.id = id;
	meta.id_len = id_len;
	meta.routing = routing;
	meta.routing_len = routing_len;
	meta.seq_no = sh->max_seq_no + 1;
	meta.primary_term = sh->primary_term;
	meta.version = (loc.seg == -2) ? 1 : loc.meta.version + 1;
	if (defer)
	{
		SeDocParseOptions opts;
		SeParsedDoc *pd;
		bool		changed = false;
		MemoryContext old = MemoryContextSwitchTo(sh->pending_cxt);

		memset(&opts, 0, sizeof(opts));
		opts.limits.total_fields_limit = sh->settings.total_fields_limit;
		opts.limits.depth_limit = sh->settings.depth_limit;
		opts.limits.nested_fields_limit = sh->settings.nested_fields_limit;
		opts.limits.nested_objects_limit = sh->settings.nested_objects_limit;
		opts.defer_text = true;
		pd = se_doc_check(sh->mapping, doc, &opts, id, &changed, &out->err);
		MemoryContextSwitchTo(old);
		if (pd == NULL || (changed && !publish_growth(sh, &out->err)))
		{
			out->status = out->err.status ? out->err.status : 400;
			return;
		}
		pending_add(sh, &meta, src, src_len, pd, id_hash);
	}
	else if (!buffer_doc(sh, &meta, src, src_len, doc, &out->err))
	{
		/* nothing changed: the previous version stays live */
		out->status = out->err.status ? out->err.status : 400;
		return;
	}
	sh->max_seq_no = meta.seq_no;
	log_op(sh, SE_OP_INDEX, &meta, src, src_len);
	delete_loc(sh, &loc);
	out->status = (loc.seg == -2) ? 201 : 200;
	out->result = (loc.seg == -2) ? SE_RESULT_CREATED : SE_RESULT_UPDATED;
	out->version = meta.version;
	out->seq_no = meta.seq_no;
	out->primary_term = meta.primary_term;
	sh->write_gen++;
}

static void
do_delete(SeShard *sh, const SeItemReq *rq, const char *id, int id_len,
		  const char *routing, int routing_len, ItemOut *out)
{
	DocLoc		loc;
	SeDocMeta	meta;

	lookup_id(sh, id, id_len, &loc);
	if (!check_if_seq_no(rq, id, &loc, out))
		return;
	meta.id = id;
	meta.id_len = id_len;
	meta.routing = routing;
	meta.routing_len = routing_len;
	meta.seq_no = sh->max_seq_no + 1;
	meta.primary_term = sh->primary_term;
	meta.version = (loc.seg == -2) ? 1 : loc.meta.version + 1;
	sh->max_seq_no = meta.seq_no;
	log_op(sh, SE_OP_DELETE, &meta, NULL, 0);
	delete_loc(sh, &loc);
	out->status = (loc.seg == -2) ? 404 : 200;
	out->result = (loc.seg == -2) ? SE_RESULT_NOT_FOUND : SE_RESULT_DELETED;
	out->version = meta.version;
	out->seq_no = meta.seq_no;
	out->primary_term = meta.primary_term;
	sh->write_gen++;
}

/* ES XContentHelper.update: objects merge recursively, anything else replaces. */
static SeJson *
json_merge(const SeJson *base, const SeJson *changes)
{
	SeJson	   *res;
	int			i;
	int			n = 0;

	if (base == NULL || base->type != SE_JSON_OBJECT || changes->type != SE_JSON_OBJECT)
		return (SeJson *) changes;
	res = palloc(sizeof(SeJson));
	res->type = SE_JSON_OBJECT;
	res->u.o.members = palloc(sizeof(SeJsonMember) * (base->u.o.count + changes->u.o.count + 1));
	for (i = 0; i < base->u.o.count; i++)
	{
		const SeJsonMember *m = &base->u.o.members[i];
		SeJson	   *c = se_json_get(changes, m->key);

		res->u.o.members[n] = *m;
		if (c != NULL)
			res->u.o.members[n].value = json_merge(m->value, c);
		n++;
	}
	for (i = 0; i < changes->u.o.count; i++)
	{
		const SeJsonMember *m = &changes->u.o.members[i];

		if (se_json_get(base, m->key) == NULL)
		{
			int			j;
			bool		dup = false;

			for (j = 0; j < n; j++)
				if (strcmp(res->u.o.members[j].key, m->key) == 0)
					dup = true;
			if (!dup)
				res->u.o.members[n++] = *m;
		}
	}
	res->u.o.count = n;
	return res;
}

/*
 * Locate the current version of id with a readable _source: a version
 * still in the in-memory buffer is refreshed into a segment first.
 */
static void
lookup_readable(SeShard *sh, const char *id, int id_len, DocLoc *loc)
{
	lookup_id(sh, id, id_len, loc);
	if (loc->seg == -1)
	{
		se_shard_refresh(sh);
		lookup_id(sh, id, id_len, loc);
	}
}

/*
 * _update with a script (Painless subset): run it on the current _source;
 * ctx.op "noop" leaves the document, "delete" deletes it.  A missing
 * document takes the upsert (run through the script with scripted_upsert).
 */
static void
do_script_update(SeShard *sh, const SeItemReq *rq, const char *id, int id_len,
				 const char *routing, int routing_len, const SeJson *body, ItemOut *out)
{
	SeJson	   *script = se_json_get(body, "script");
	SeJson	   *upsert = se_json_get(body, "upsert");
	SeJson	   *scripted = se_json_get(body, "scripted_upsert");
	SeJson	   *source = script;
	SeJson	   *params = NULL;
	const char *lang = NULL;
	SeScript   *compiled;
	DocLoc		loc;
	SeJson	   *doc;
	SeScriptCtx ctx;
	SeScriptResult res;
	StringInfoData src;
	SeItemReq	rq2 = *rq;
	SeJsonParseOptions opts = {0};

	if (script->type == SE_JSON_OBJECT)
	{
		SeJson	   *l = se_json_get(script, "lang");

		SeJson	   *sid = se_json_get(script, "id");

		source = se_json_get(script, "source");
		params = se_json_get(script, "params");
		if (l && l->type == SE_JSON_STRING)
			lang = l->u.s.str;
		if (source == NULL && sid != NULL && sid->type == SE_JSON_STRING)
		{
			/* a stored script: its source from the cluster state */
			const char *stored = se_stored_script_source(sid->u.s.str, &out->err);

			if (stored == NULL)
			{
				out->status = out->err.status;
				return;
			}
			source = se_json_make_string(stored, -1);
		}
	}
	if (!se_script_lang_allowed(lang, &out->err))
	{
		out->status = 400;
		return;
	}
	if (lang && strcmp(lang, "painless") != 0)
	{
		se_error_set(&out->err, 400, "illegal_argument_exception",
					 "script_lang not supported [%s] in _update (lang sql runs in update_by_query)",
					 lang);
		out->status = 400;
		return;
	}
	if (source == NULL || source->type != SE_JSON_STRING)
	{
		se_error_set(&out->err, 400, "parsing_exception", "[script] requires [source]");
		out->status = 400;
		return;
	}
	compiled = se_script_compile(source->u.s.str, params, &out->err);
	if (compiled == NULL)
	{
		out->status = 400;
		return;
	}
	lookup_readable(sh, id, id_len, &loc);
	if (!check_if_seq_no(rq, id, &loc, out))
		return;
	rq2.flags &= ~SE_ITEM_FLAG_IF_SEQ_NO;
	if (loc.seg == -2)
	{
		if (upsert == NULL)
		{
			se_error_set(&out->err, 404, "document_missing_exception", "[%s]: document missing", id);
			out->status = 404;
			return;
		}
		if (scripted == NULL || scripted->type != SE_JSON_TRUE)
		{
			initStringInfo(&src);
			se_json_write(&src, upsert);
			out->source = src.data;
			out->source_len = src.len;
			do_index(sh, &rq2, id, id_len, routing, routing_len, src.data, src.len, upsert, false, false, 0, out);
			return;
		}
		initStringInfo(&src);
		se_json_write(&src, upsert);
		doc = se_json_parse(src.data, src.len, &opts, &out->err);
	}
	else
	{
		initStringInfo(&src);
		if (!se_segment_source(sh->segs[loc.seg].reader, loc.doc, &src))
			corrupted(sh, "stored source", se_segment_error(sh->segs[loc.seg].reader));
		doc = se_json_parse(src.data, src.len, &opts, &out->err);
	}
	if (doc == NULL)
	{
		out->status = 500;
		return;
	}
	se_script_ctx_init(&ctx, doc);
	ctx.max_source_bytes = (int64) se_max_document_size_kb * 1024;
	ctx.id = pnstrdup(id, id_len);	/* id points into the packed request */
	ctx.upsert = (loc.seg == -2);	/* ctx.op starts as "create" */
	ctx.index = sh->index_name;
	ctx.routing = routing ? pnstrdup(routing, routing_len) : NULL;
	if (loc.seg != -2)
	{
		ctx.version = loc.meta.version;
		ctx.seq_no = loc.meta.seq_no;
		ctx.primary_term = loc.meta.primary_term;
	}
	res = se_script_run(compiled, &ctx, &out->err);
	if (res == SE_SCRIPT_ERROR)
	{
		out->status = 400;
		return;
	}
	if (res == SE_SCRIPT_NOOP || (res == SE_SCRIPT_DELETE && loc.seg == -2))
	{
		if (loc.seg != -2)
		{
			/* the document kept: src still holds its stored source */
			out->source = src.data;
			out->source_len = src.len;
		}
		out->status = 200;
		out->result = SE_RESULT_NOOP;
		out->version = loc.seg == -2 ? 0 : loc.meta.version;
		out->seq_no = loc.seg == -2 ? 0 : loc.meta.seq_no;
		out->primary_term = loc.seg == -2 ? 0 : loc.meta.primary_term;
		return;
	}
	if (res == SE_SCRIPT_DELETE)
	{
		do_delete(sh, &rq2, id, id_len, routing, routing_len, out);
		return;
	}
	if (ctx.source == NULL || ctx.source->type != SE_JSON_OBJECT)
	{
		se_error_set(&out->err, 400, "script_exception", "ctx._source must be a map after the script ran");
		out->status = 400;
		return;
	}
	if (se_json_has_nul(ctx.source))
	{
		/* what the parser refuses in a document sent (reject_nul) */
		se_error_set(&out->err, 400, "mapper_parsing_exception",
					 "failed to parse: the script's _source holds the NUL character (\\u0000) in a string: PostgreSQL's text and jsonb cannot hold it");
		out->status = 400;
		return;
	}
	resetStringInfo(&src);
	se_json_write(&src, ctx.source);
	out->source = src.data;
	out->source_len = src.len;
	do_index(sh, &rq2, id, id_len, routing, routing_len, src.data, src.len, ctx.source, false, false, 0, out);
}

static void
do_update(SeShard *sh, const SeItemReq *rq, const char *id, int id_len,
		  const char *routing, int routing_len, const SeJson *body, ItemOut *out)
{
	DocLoc		loc;
	SeJson	   *partial = se_json_get(body, "doc");
	SeJson	   *upsert = se_json_get(body, "upsert");
	SeJson	   *doc_as_upsert = se_json_get(body, "doc_as_upsert");
	SeJson	   *detect_noop = se_json_get(body, "detect_noop");
	StringInfoData src;
	SeJson	   *newdoc;
	SeJsonParseOptions opts = {0};
	SeItemReq	rq2 = *rq;

	if (se_json_get(body, "script") != NULL)
	{
		do_script_update(sh, rq, id, id_len, routing, routing_len, body, out);
		return;
	}
	if (partial == NULL && upsert == NULL)
	{
		se_error_set(&out->err, 400, "action_request_validation_exception",
					 "Validation Failed: 1: script or doc is missing;");
		out->status = 400;
		return;
	}
	lookup_readable(sh, id, id_len, &loc);
	if (!check_if_seq_no(rq, id, &loc, out))
		return;
	rq2.flags &= ~SE_ITEM_FLAG_IF_SEQ_NO;
	initStringInfo(&src);
	if (loc.seg == -2)
	{
		if (doc_as_upsert && doc_as_upsert->type == SE_JSON_TRUE && partial)
			newdoc = partial;
		else if (upsert)
			newdoc = upsert;
		else
		{
			se_error_set(&out->err, 404, "document_missing_exception",
						 "[%s]: document missing", id);
			out->status = 404;
			return;
		}
		se_json_write(&src, newdoc);
		out->source = src.data;
		out->source_len = src.len;
		do_index(sh, &rq2, id, id_len, routing, routing_len, src.data, src.len,
				 newdoc, false, false, 0, out);
		return;
	}
	else
	{
		StringInfoData cur;
		SeJson	   *curdoc;
		StringInfoData before;

		initStringInfo(&cur);
		if (!se_segment_source(sh->segs[loc.seg].reader, loc.doc, &cur))
			corrupted(sh, "stored source", se_segment_error(sh->segs[loc.seg].reader));
		curdoc = se_json_parse(cur.data, cur.len, &opts, &out->err);
		if (curdoc == NULL)
		{
			out->status = 500;
			return;
		}
		newdoc = partial ? json_merge(curdoc, partial) : curdoc;
		se_json_write(&src, newdoc);
		out->source = src.data;
		out->source_len = src.len;
		initStringInfo(&before);
		se_json_write(&before, curdoc);
		if ((detect_noop == NULL || detect_noop->type != SE_JSON_FALSE) &&
			before.len == src.len && memcmp(before.data, src.data, src.len) == 0)
		{
			out->status = 200;
			out->result = SE_RESULT_NOOP;
			out->version = loc.meta.version;
			out->seq_no = loc.meta.seq_no;
			out->primary_term = loc.meta.primary_term;
			return;
		}
		do_index(sh, &rq2, id, id_len, routing, routing_len, src.data, src.len,
				 newdoc, false, false, 0, out);
	}
}

/*
 * Write an update's source into the sub's error area (uint32 length, then
 * the bytes); -1 when it does not fit (the coordinator reads it back).
 */
static int32
put_source(SeBulkSub *sub, char *base, const char *src, int len)
{
	uint32		l = (uint32) len;
	int32		off;

	if (sub->err_used + sizeof(l) + len > sub->err_cap)
		return -1;
	off = (int32) sub->err_used;
	memcpy(base + sub->err_off + off, &l, sizeof(l));
	memcpy(base + sub->err_off + off + sizeof(l), src, len);
	sub->err_used += sizeof(l) + len;
	return off;
}

/* Write one item's error text into the sub's error area. */
static int32
put_error(SeBulkSub *sub, char *base, const SeError *err)
{
	size_t		tl = strlen(err->type) + 1;
	size_t		rl = err->reason ? strlen(err->reason) + 1 : 1;
	char	   *area = base + sub->err_off;
	int32		off;

	if (sub->err_used + tl + 2 > sub->err_cap)
		return -1;
	off = (int32) sub->err_used;
	memcpy(area + off, err->type, tl);
	if (sub->err_used + tl + rl > sub->err_cap)
		rl = sub->err_cap - sub->err_used - tl;
	if (rl > 0)
	{
		memcpy(area + off + tl, err->reason ? err->reason : "", rl);
		area[off + tl + rl - 1] = '\0';
	}
	sub->err_used += tl + rl;
	return off;
}

void
se_shard_apply_bulk(SeShard *sh, SeBulkHeader *hdr, SeBulkSub *sub, char *base, bool defer)
{
	const char *p = base + sub->req_off;
	SeItemResp *resp = (SeItemResp *) (base + sub->resp_off);
	uint32		i;
	MemoryContext itemcxt = AllocSetContextCreate(CurrentMemoryContext,
												  "search_engine bulk item",
												  ALLOCSET_DEFAULT_SIZES);
	uint64		next_hash = 0;
	int64		first_seq_no;
	int64		tlog_gen;

	/* promoted (the routing raised the term) since the owner last looked */
	se_shard_promote_if_needed(sh);
	first_seq_no = sh->max_seq_no + 1;
	tlog_gen = sh->tl.gen;
	sub->tlog_start = sh->tl.size + sh->tl.buf.len;
	refresh_mapping(sh);
	for (i = 0; i < sub->nitems; i++)
	{
		SeItemReq	rq;
		const char *id;
		const char *routing = NULL;
		const char *body;
		ItemOut		out;
		MemoryContext old;
		SeJson	   *json = NULL;
		SeJsonParseOptions opts = {0};
		bool		item_defer;
		uint64		id_hash;

		memcpy(&rq, p, sizeof(rq));
		p += sizeof(rq);
		id = p;
		p += rq.id_len;
		if (rq.routing_len != PG_UINT32_MAX)
		{
			routing = p;
			p += rq.routing_len;
		}
		body = p;
		p += rq.body_len;
		/* this item's id hash: computed when it was prefetched */
		id_hash = next_hash != 0 ? next_hash :
			hash_bytes_extended((const unsigned char *) id, rq.id_len, 0);
		next_hash = 0;
		if (i + 1 < sub->nitems)
		{
			/* the next item's _id lookup misses the cache: start it now */
			SeItemReq	next;

			memcpy(&next, p, sizeof(next));
			if (!(next.flags & SE_ITEM_FLAG_AUTO_ID))
				next_hash = prefetch_id(sh, p + sizeof(next), (int) next.id_len);
		}

		memset(&out, 0, sizeof(out));
		se_error_init(&out.err);
		item_defer = defer && (rq.op == SE_ITEM_INDEX || rq.op == SE_ITEM_CREATE);
		/* what deferral must not reorder: see SePendingDoc */
		if (sh->npending > 0 &&
			(!item_defer || pending_find(sh, id, rq.id_len, id_hash) >= 0))
			se_shard_index_pending(sh);
		/* a deferred document's DOM lives until it is indexed */
		old = MemoryContextSwitchTo(item_defer ? sh->pending_cxt : itemcxt);
		if (rq.op != SE_ITEM_DELETE)
		{
			opts.reject_duplicate_keys = true;
			opts.reject_nul = true; /* jsonb could not return it (replay takes it) */
			json = se_json_parse(body, rq.body_len, &opts, &out.err);
			if (json != NULL && json->type != SE_JSON_OBJECT)
			{
				se_error_set(&out.err, 400, "mapper_parsing_exception",
							 "failed to parse, document is empty or not an object");
				json = NULL;
			}
			if (json == NULL)
			{
				SeError		e2;

				/* ES reports unparsable documents as mapper_parsing_exception */
				se_error_init(&e2);
				se_error_set(&e2, 400, "mapper_parsing_exception", "failed to parse: %s",
							 out.err.reason ? out.err.reason : "invalid document");
				out.err = e2;
				out.status = 400;
			}
		}
		if (!se_error_is_set(&out.err))
		{
			char	   *idc = pnstrdup(id, rq.id_len);

			switch (rq.op)
			{
				case SE_ITEM_INDEX:
				case SE_ITEM_CREATE:
					do_index(sh, &rq, idc, rq.id_len, routing,
							 routing ? rq.routing_len : 0, body, rq.body_len, json,
							 rq.op == SE_ITEM_CREATE, item_defer, id_hash, &out);
					break;
				case SE_ITEM_UPDATE:
					do_update(sh, &rq, idc, rq.id_len, routing,
							  routing ? rq.routing_len : 0, json, &out);
					break;
				case SE_ITEM_DELETE:
					do_delete(sh, &rq, idc, rq.id_len, routing,
							  routing ? rq.routing_len : 0, &out);
					break;
				default:
					se_error_set(&out.err, 400, "illegal_argument_exception",
								 "unknown bulk operation");
					out.status = 400;
			}
		}
		MemoryContextSwitchTo(old);
		if (sh->pending_bytes > SE_PENDING_MAX_BYTES)
			se_shard_index_pending(sh);
		resp[i].status = (int16) out.status;
		resp[i].result = (uint8) out.result;
		resp[i].version = out.version;
		resp[i].seq_no = out.seq_no;
		resp[i].primary_term = out.primary_term;
		resp[i].err_off = se_error_is_set(&out.err) ? put_error(sub, base, &out.err) : -1;
		resp[i].src_off = (rq.flags & SE_ITEM_FLAG_WANT_SOURCE) && out.source != NULL &&
			!se_error_is_set(&out.err) ? put_source(sub, base, out.source, out.source_len) : -1;
		if (se_error_is_set(&out.err) && resp[i].status == 0)
			resp[i].status = out.err.status ? out.err.status : 500;
		MemoryContextReset(itemcxt);
	}
	MemoryContextDelete(itemcxt);
	/* the operations just logged, one run of seq_nos (replicate.c reads them) */
	sub->first_seq_no = sh->max_seq_no >= first_seq_no ? first_seq_no : -1;
	sub->last_seq_no = sh->max_seq_no;
	sub->tlog_gen = sh->tl.gen == tlog_gen ? tlog_gen : -1;
	sub->tlog_end = sh->tl.size + sh->tl.buf.len;
	pg_atomic_write_u64(&SeSlots[sh->slot].write_gen, sh->write_gen);
	pg_atomic_write_u64(&SeSlots[sh->slot].max_seq_no, (uint64) sh->max_seq_no);
	pg_atomic_add_fetch_u64(&SeSlots[sh->slot].indexing_ops, sub->nitems);
	pg_atomic_write_u64(&SeSlots[sh->slot].translog_bytes, sh->tl.total_size + sh->tl.buf.len);
	if (hdr->refresh != 0)
		sub->forced_refresh = (hdr->refresh == 1);
	sub->write_gen = sh->write_gen;	/* what a refresh=wait_for waits for */
}

void
se_shard_publish_mapping(SeShard *sh)
{
	SeError		err;

	if (!sh->mapping_dirty)
		return;
	se_error_init(&err);
	if (!se_state_merge_dynamic_mapping(sh->uuid, sh->mapping, &err))
		ereport(WARNING,
				(errmsg("could not publish dynamic mapping update of [%s]: %s",
						sh->index_name, err.reason ? err.reason : "unknown")));
	sh->mapping_dirty = false;
	sh->mapping_state_version = 0;	/* pick up the merged state */
	refresh_mapping(sh);
}

void
se_shard_sync_translog(SeShard *sh)
{
	se_translog_sync(&sh->tl, !sh->settings.durability_async);
	if (!sh->settings.durability_async)
		sh->last_sync = GetCurrentTimestamp();
	pg_atomic_write_u64(&SeSlots[sh->slot].translog_bytes, sh->tl.total_size);
	publish_checkpoints(sh);
}

/*
 * After a translog sync: what is marked processed is in the synced log,
 * so it is the local checkpoint the primary may count on.  The global
 * checkpoint is the primary's to compute (replicate.c writes it to the
 * slot); a copy without replicas has its own as global one.  It is
 * persisted when it moved -- one more fsync, for replicated shards only.
 */
static void
publish_checkpoints(SeShard *sh)
{
	SeShardSlot *slot = &SeSlots[sh->slot];

	se_slot_write_i64(&slot->local_checkpoint, sh->ckpt.checkpoint);
	if (!sh->replicated)
	{
		sh->global_checkpoint = sh->ckpt.checkpoint;
		se_slot_write_i64(&slot->global_checkpoint, sh->global_checkpoint);
		return;
	}
	if (!slot->replica)
		se_shard_update_global_checkpoint(sh, se_slot_read_i64(&slot->global_checkpoint));
	persist_global_checkpoint(sh);
}

/* ---------- refresh, merge, publish ---------- */

static int
cmp_seg_size(const void *a, const void *b)
{
	const SeSegEntry *x = a;
	const SeSegEntry *y = b;

	if (x->mf.len != y->mf.len)
		return x->mf.len < y->mf.len ? -1 : 1;
	return x->gen < y->gen ? -1 : (x->gen > y->gen);
}

static int
cmp_seg_gen(const void *a, const void *b)
{
	const SeSegEntry *x = a;
	const SeSegEntry *y = b;

	return x->gen < y->gen ? -1 : (x->gen > y->gen);
}

/* One more operation of kind which (and its time since start) for _stats. */
static void
count_timed(SeShard *sh, SeSlotStat which, TimestampTz start)
{
	se_slot_stat_add(sh->slot, which, 1);
	se_slot_stat_add(sh->slot, (SeSlotStat) (which + 1), GetCurrentTimestamp() - start);
}

/*
 * Merge segments [from, from+n) (in gen order within that range) into one.
 * The merged segment takes the highest gen of its inputs' position so the
 * newest-first id lookup order is kept.
 */
static void
merge_range(SeShard *sh, SeSegEntry *inputs, int n)
{
	SeSegmentReader **readers = palloc(sizeof(SeSegmentReader *) * n);
	const uint64 **live = palloc(sizeof(uint64 *) * n);
	StringInfoData out;
	uint8		id[SE_SEGMENT_ID_LEN];
	SeError		err;
	uint64		gen = sh->next_seg_gen++;
	char	   *path;
	int			i;
	SeSegEntry	merged;
	TimestampTz start = GetCurrentTimestamp();

	se_error_init(&err);
	for (i = 0; i < n; i++)
	{
		readers[i] = inputs[i].reader;
		live[i] = inputs[i].live;
	}
	make_segment_id(id);
	initStringInfo(&out);
	if (!se_segment_merge(readers, live, n, id, sh->settings.codec_level, &out, &err))
		corrupted(sh, "merge", &err);
	path = seg_path(sh, gen);
	se_file_write_plain(path, out.data, out.len, false);
	pfree(out.data);
	open_segment(sh, &merged, gen, 0, false);
	for (i = 0; i < n; i++)
		close_segment(&inputs[i]);
	inputs[0] = merged;
	for (i = 1; i < n; i++)
		inputs[i].gen = 0;		/* removed below */
	count_timed(sh, SE_STAT_MERGE, start);
	se_slot_stat_add(sh->slot, SE_STAT_MERGE_DOCS, merged.max_doc);
	se_slot_stat_add(sh->slot, SE_STAT_MERGE_BYTES, merged.mf.len);
}

/*
 * Merge down to max_segments (force merge, or a shard about to run out of
 * segment slots): the smallest first, at most MERGE_FACTOR at a time
 * unless fewer rounds are needed to reach the target.
 */
static void
maybe_merge(SeShard *sh, int max_segments)
{
	int			i,
				j;

	/* drop fully deleted segments */
	for (i = 0, j = 0; i < sh->nsegs; i++)
	{
		if (sh->segs[i].live_count == 0)
			close_segment(&sh->segs[i]);
		else
			sh->segs[j++] = sh->segs[i];
	}
	sh->nsegs = j;

	while (sh->nsegs > max_segments)
	{
		int			n = Min(MERGE_FACTOR, sh->nsegs - max_segments + 1);

		if (max_segments < MERGE_FACTOR)
			n = sh->nsegs - max_segments + 1;
		if (n < 2)
			break;
		/* smallest n, merged in gen order */
		qsort(sh->segs, sh->nsegs, sizeof(SeSegEntry), cmp_seg_size);
		qsort(sh->segs, n, sizeof(SeSegEntry), cmp_seg_gen);
		merge_range(sh, sh->segs, n);
		for (i = 0, j = 0; i < sh->nsegs; i++)
			if (sh->segs[i].gen != 0)
				sh->segs[j++] = sh->segs[i];
		sh->nsegs = j;
	}
	/*
	 * Keep gen order for newest-first lookups: a merged segment gets a new
	 * (highest) gen, and its documents are older than later segments' ones
	 * only if it was merged from them; ids are unique among live docs, so
	 * the lookup order among live docs does not matter.
	 */
	qsort(sh->segs, sh->nsegs, sizeof(SeSegEntry), cmp_seg_gen);
}

static bool
merge_in_flight(const SeShardMerge *m)
{
	return m->task >= 0;
}

static int
merges_in_flight(SeShard *sh)
{
	int			i,
				n = 0;

	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
		n += merge_in_flight(&sh->merges[i]);
	return n;
}

/* Is segment gen an input of a background merge in flight? */
static bool
seg_merging(SeShard *sh, uint64 gen)
{
	int			i,
				k;

	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
		for (k = 0; merge_in_flight(&sh->merges[i]) && k < sh->merges[i].n; k++)
			if (sh->merges[i].gens[k] == gen)
				return true;
	return false;
}

/*
 * Ask the merge policy (index.merge.policy.*) which segments to merge now:
 * indexes into sh->segs, in gen order, written to out; returns how many.
 */
static int
policy_pick(SeShard *sh, int *out, int *allowed)
{
	SeMergeSegment *ms = palloc(sizeof(SeMergeSegment) * Max(sh->nsegs, 1));
	int			i,
				j,
				n;

	for (i = 0; i < sh->nsegs; i++)
	{
		ms[i].bytes = (int64) sh->segs[i].mf.len;
		ms[i].max_doc = sh->segs[i].max_doc;
		ms[i].del_count = (int64) sh->segs[i].max_doc - sh->segs[i].live_count;
		ms[i].merging = seg_merging(sh, sh->segs[i].gen);
	}
	n = se_merge_policy_find(&sh->settings.merge_policy, ms, sh->nsegs, out, allowed);
	pfree(ms);
	/* gen order: the merged segment keeps its inputs' documents in order */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && sh->segs[out[j - 1]].gen > sh->segs[out[j]].gen; j--)
		{
			int			t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

/* Merge the picked segments here and now (no merge workers configured). */
static void
merge_inline(SeShard *sh, const int *pick, int n)
{
	SeSegEntry *inputs = palloc(sizeof(SeSegEntry) * n);
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		inputs[i] = sh->segs[pick[i]];
		sh->segs[pick[i]].gen = 0;	/* moved out */
	}
	for (i = 0, j = 0; i < sh->nsegs; i++)
		if (sh->segs[i].gen != 0)
			sh->segs[j++] = sh->segs[i];
	sh->nsegs = j;
	merge_range(sh, inputs, n);
	sh->segs[sh->nsegs++] = inputs[0];
	qsort(sh->segs, sh->nsegs, sizeof(SeSegEntry), cmp_seg_gen);
	pfree(inputs);
}

static void
merge_forget(SeShardMerge *m)
{
	int			i;

	for (i = 0; i < m->n; i++)
		if (m->live[i])
			pfree(m->live[i]);
	m->task = -1;
	m->n = 0;
}

/* Give up every merge in flight (their inputs are about to change). */
static void
merge_abandon(SeShard *sh)
{
	int			i;

	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
	{
		if (!merge_in_flight(&sh->merges[i]))
			continue;
		se_merge_abandon(sh->merges[i].task);
		merge_forget(&sh->merges[i]);
	}
}

/*
 * Hand what the merge policy picks to the merge workers, up to
 * index.merge.scheduler.max_thread_count merges of this shard at a time.
 * The inputs' live docs are on disk (refresh wrote them) and are
 * remembered here, so the deletes that arrive while a merge runs can be
 * carried over.
 */
static void
merge_submit(SeShard *sh)
{
	int			pick[SE_MERGE_MAX_INPUTS];

	if (se_merge_threads == 0)
		return;
	while (merges_in_flight(sh) < Min(sh->settings.merge_max_thread_count, SE_SHARD_MAX_MERGES))
	{
		SeShardMerge *m = NULL;
		SeMergeTask t;
		MemoryContext old;
		int			allowed;
		int			n = policy_pick(sh, pick, &allowed);
		int			i;

		if (n == 0)
			return;
		for (i = 0; i < SE_SHARD_MAX_MERGES && m == NULL; i++)
			if (!merge_in_flight(&sh->merges[i]))
				m = &sh->merges[i];
		memset(&t, 0, sizeof(t));
		t.slot = sh->slot;
		strlcpy(t.index_uuid, sh->uuid, sizeof(t.index_uuid));
		t.shard = sh->shard;
		t.ninputs = n;
		t.out_gen = sh->next_seg_gen++;
		t.zstd_level = sh->settings.codec_level;
		/* far behind: the merge may not wait for foreground work */
		t.urgent = sh->nsegs > 2 * allowed;
		old = MemoryContextSwitchTo(sh->cxt);
		for (i = 0; i < n; i++)
		{
			SeSegEntry *e = &sh->segs[pick[i]];

			t.gens[i] = e->gen;
			t.del_gens[i] = e->del_gen;
			m->gens[i] = e->gen;
			m->del_gens[i] = e->del_gen;
			m->max_doc[i] = e->max_doc;
			m->live[i] = NULL;
			if (e->live)
			{
				size_t		words = (e->max_doc + 63) / 64;

				m->live[i] = palloc(words * sizeof(uint64));
				memcpy(m->live[i], e->live, words * sizeof(uint64));
			}
		}
		MemoryContextSwitchTo(old);
		m->n = n;
		m->out_gen = t.out_gen;
		m->submitted = GetCurrentTimestamp();
		m->task = se_merge_submit(&t);
		if (m->task < 0)
		{
			merge_forget(m);	/* table full: try again after the next refresh */
			return;
		}
	}
}

static int
find_seg(SeShard *sh, uint64 gen)
{
	int			i;

	for (i = 0; i < sh->nsegs; i++)
		if (sh->segs[i].gen == gen)
			return i;
	return -1;
}

/* Install one finished background merge; true if the shard changed. */
static bool
merge_install(SeShard *sh, SeShardMerge *m)
{
	char		error[256];
	SeMergeState st;
	SeSegEntry	merged;
	int			i,
				k;
	int32		newdoc = 0;
	uint64	   *newlive = NULL;
	uint32		newlive_count;
	char	   *path;

	st = se_merge_state(m->task, error, sizeof(error));
	if (st == SE_MERGE_QUEUED || st == SE_MERGE_RUNNING)
		return false;
	se_merge_release(m->task);
	path = seg_path(sh, m->out_gen);
	if (st != SE_MERGE_DONE)
	{
		ereport(WARNING,
				(errmsg("background merge of shard [%s][%d] failed: %s",
						sh->index_name, sh->shard, error)));
		(void) unlink(path);
		merge_forget(m);
		return false;
	}
	/* every input must still be here (an inline merge may have taken them) */
	for (k = 0; k < m->n; k++)
		if (find_seg(sh, m->gens[k]) < 0)
		{
			(void) unlink(path);
			merge_forget(m);
			return false;
		}
	open_segment(sh, &merged, m->out_gen, 0, false);
	/* carry over deletes made while the merge ran */
	for (k = 0; k < m->n; k++)
	{
		SeSegEntry *e = &sh->segs[find_seg(sh, m->gens[k])];
		int32		d;

		for (d = 0; d < (int32) m->max_doc[k]; d++)
		{
			if (!se_livedocs_get(m->live[k], d))
				continue;
			if (!se_livedocs_get(e->live, d) && newdoc < (int32) merged.max_doc)
			{
				if (newlive == NULL)
				{
					MemoryContext old = MemoryContextSwitchTo(merged.cxt);

					newlive = se_livedocs_new(merged.max_doc);
					MemoryContextSwitchTo(old);
				}
				se_livedocs_clear(newlive, newdoc);
			}
			newdoc++;
		}
	}
	if (newdoc != (int32) merged.max_doc)
	{
		ereport(WARNING,
				(errmsg("background merge of shard [%s][%d] produced %u documents, expected %d; discarded",
						sh->index_name, sh->shard, merged.max_doc, newdoc)));
		close_segment(&merged);
		(void) unlink(path);
		merge_forget(m);
		return false;
	}
	newlive_count = newlive ? se_livedocs_count(newlive, merged.max_doc) : merged.max_doc;
	merged.live = newlive;
	merged.live_count = newlive_count;
	merged.live_dirty = (newlive != NULL);
	for (k = 0; k < m->n; k++)
	{
		i = find_seg(sh, m->gens[k]);
		close_segment(&sh->segs[i]);
		sh->segs[i] = sh->segs[--sh->nsegs];
	}
	sh->segs[sh->nsegs++] = merged;
	qsort(sh->segs, sh->nsegs, sizeof(SeSegEntry), cmp_seg_gen);
	/* its time: from the submit, so a merge worker's queue wait counts */
	count_timed(sh, SE_STAT_MERGE, m->submitted);
	se_slot_stat_add(sh->slot, SE_STAT_MERGE_DOCS, merged.max_doc);
	se_slot_stat_add(sh->slot, SE_STAT_MERGE_BYTES, merged.mf.len);
	merge_forget(m);
	return true;
}

bool
se_shard_merge_poll(SeShard *sh)
{
	bool		changed = false;
	int			i;

	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
		if (merge_in_flight(&sh->merges[i]) && merge_install(sh, &sh->merges[i]))
			changed = true;
	return changed;
}

void
se_shard_refresh(SeShard *sh)
{
	int			i;
	bool		changed = false;
	TimestampTz start = GetCurrentTimestamp();

	se_shard_index_pending(sh);

	if (se_builder_live_docs(sh->buffer) > 0)
	{
		StringInfoData out;
		uint8		id[SE_SEGMENT_ID_LEN];
		uint64		gen = sh->next_seg_gen++;
		char	   *path = seg_path(sh, gen);

		if (sh->nsegs >= SE_MAX_SEGMENTS - 1)
		{
			merge_abandon(sh);
			maybe_merge(sh, SE_MAX_SEGMENTS / 2);
		}
		make_segment_id(id);
		initStringInfo(&out);
		se_builder_serialize(sh->buffer, id, sh->settings.codec_level, &out);
		se_file_write_plain(path, out.data, out.len, false);
		pfree(out.data);
		open_segment(sh, &sh->segs[sh->nsegs], gen, 0, false);
		sh->nsegs++;
		changed = true;
	}
	if (se_builder_num_docs(sh->buffer) > 0)
		new_buffer(sh);

	/*
	 * Install finished merges before writing live docs: a merged segment
	 * carries over the deletes that arrived while it was built, and those
	 * must be on disk before it is published, or readers would open it
	 * with every document live and see old versions next to new ones.
	 */
	if (se_shard_merge_poll(sh))
		changed = true;
	for (i = 0; i < sh->nsegs; i++)
	{
		SeSegEntry *e = &sh->segs[i];

		if (e->live_dirty)
		{
			StringInfoData out;
			uint8		id[SE_SEGMENT_ID_LEN];
			char	   *path;

			e->del_gen++;
			path = liv_path(sh, e->gen, e->del_gen);
			se_segment_get_id(e->reader, id);
			initStringInfo(&out);
			se_livedocs_serialize(e->live, e->max_doc, id, (int64) e->del_gen, &out);
			se_file_write_plain(path, out.data, out.len, false);
			pfree(out.data);
			pfree(path);
			e->live_dirty = false;
			e->synced = false;
			changed = true;
		}
	}
	if (se_merge_threads == 0)
	{
		int			pick[SE_MERGE_MAX_INPUTS];
		int			n;

		while ((n = policy_pick(sh, pick, NULL)) > 0)
		{
			merge_inline(sh, pick, n);
			changed = true;
		}
	}
	else if (sh->nsegs > SE_MAX_SEGMENTS / 2)
	{
		/* far behind: merge inline rather than run out of slots */
		merge_abandon(sh);
		maybe_merge(sh, MERGE_FACTOR);
		changed = true;
	}
	sh->refreshed_gen = sh->write_gen;
	sh->last_refresh = GetCurrentTimestamp();
	if (changed)
		publish(sh);
	/* the live docs of every segment are on disk now: a merge may start */
	merge_submit(sh);
	pg_atomic_write_u64(&SeSlots[sh->slot].refreshed_gen, sh->refreshed_gen);
	/* refresh=wait_for writes waiting for this refresh (se_slot_wait_refresh) */
	if (pg_atomic_read_u32(&SeSlots[sh->slot].refresh_listeners) > 0)
		ConditionVariableBroadcast(&SeShmem->refresh_cv);
	count_timed(sh, SE_STAT_REFRESH, start);
}

/* Publish the segment list in the slot, then drop unreferenced files. */
static void
publish(SeShard *sh)
{
	SeShardSlot *slot = &SeSlots[sh->slot];
	int			i;
	uint64		docs = 0,
				deleted = 0,
				bytes = 0;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->nsegments = sh->nsegs;
	for (i = 0; i < sh->nsegs; i++)
	{
		SeSegEntry *e = &sh->segs[i];

		slot->segs[i].seg_gen = e->gen;
		slot->segs[i].del_gen = e->del_gen;
		slot->segs[i].max_doc = e->max_doc;
		slot->segs[i].live_docs = e->live_count;
		slot->segs[i].size_bytes = e->mf.len;
		slot->segs[i].committed = e->synced;
		docs += e->live_count;
		deleted += e->max_doc - e->live_count;
		bytes += e->mf.len;
	}
	slot->snapshot_gen++;
	/* readers open files under the shared lock, so deleting here is safe */
	cleanup_files(sh);
	LWLockRelease(&slot->lock);
	pg_atomic_write_u64(&slot->docs_count, docs);
	pg_atomic_write_u64(&slot->docs_deleted, deleted);
	pg_atomic_write_u64(&slot->store_bytes, bytes);
}

/* Number new segments past every segment file in the shard's directory. */
static void
skip_existing_gens(SeShard *sh)
{
	DIR		   *d = AllocateDir(sh->index_dir);
	struct dirent *de;

	while ((de = ReadDir(d, sh->index_dir)) != NULL)
	{
		uint64		g;
		char		tail[8];

		if (sscanf(de->d_name, "_" UINT64_FORMAT "%c", &g, tail) == 2 && g >= sh->next_seg_gen)
			sh->next_seg_gen = g + 1;
	}
	FreeDir(d);
}

/* Append the segments of commit point gen to gens/dels (*n of them, room for cap). */
static void
commit_segments(SeShard *sh, int64 gen, uint64 *gens, uint64 *dels, int *n, int cap)
{
	char	   *path = psprintf("%s/segments_" INT64_FORMAT, sh->index_dir, gen);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeError		err;

	se_error_init(&err);
	if (data)
	{
		int			hdr = se_file_check((const uint8 *) data, len, COMMIT_FORMAT,
										COMMIT_VERSION, COMMIT_VERSION, NULL, false, &err);
		SeJsonParseOptions opts = {0};
		SeJson	   *root = hdr >= 0 ? se_json_parse(data + hdr, len - hdr - SE_FILE_FOOTER_LEN, &opts, &err) : NULL;
		SeJson	   *segs = root ? se_json_get(root, "segments") : NULL;
		int			i;

		for (i = 0; segs && i < segs->u.a.count && *n < cap; i++)
		{
			gens[*n] = segs->u.a.items[i]->u.a.items[0]->u.n.i;
			dels[*n] = segs->u.a.items[i]->u.a.items[1]->u.n.i;
			(*n)++;
		}
	}
	pfree(path);
}

/*
 * Remove segment/live-docs files neither published nor in the last commit
 * (nor in the safe commit kept beside it), and older commit points.
 */
static void
cleanup_files(SeShard *sh)
{
	DIR		   *d = AllocateDir(sh->index_dir);
	struct dirent *de;
	int64		keep_commit = sh->commit_gen;
	uint64	   *commit_gens = palloc(sizeof(uint64) * 2 * SE_MAX_SEGMENTS);
	uint64	   *commit_dels = palloc(sizeof(uint64) * 2 * SE_MAX_SEGMENTS);
	int			ncommit = 0;
	uint64	   *pin_gens = palloc(sizeof(uint64) * SE_PIT_MAX_PINS);
	uint64	   *pin_dels = palloc(sizeof(uint64) * SE_PIT_MAX_PINS);
	int			npins;

	/* the global checkpoint reached the last commit: it is the safe one */
	if (sh->safe_gen > 0 && sh->commit_max_seq_no <= sh->global_checkpoint)
		sh->safe_gen = 0;
	if (keep_commit > 0)
		commit_segments(sh, keep_commit, commit_gens, commit_dels, &ncommit, 2 * SE_MAX_SEGMENTS);
	if (sh->safe_gen > 0)
		commit_segments(sh, sh->safe_gen, commit_gens, commit_dels, &ncommit, 2 * SE_MAX_SEGMENTS);
	/* and the files of points in time still open (scroll, pit) */
	npins = se_pit_shard_pins(sh->uuid, sh->shard, pin_gens, pin_dels, SE_PIT_MAX_PINS);
	while ((de = ReadDir(d, sh->index_dir)) != NULL)
	{
		uint64		g,
					dg;
		char		tail[8];
		bool		keep = false;
		int			i,
					m;
		bool		is_seg = sscanf(de->d_name, "_" UINT64_FORMAT ".se%c", &g, tail) == 2;
		bool		is_liv = !is_seg && sscanf(de->d_name, "_" UINT64_FORMAT "_" UINT64_FORMAT ".li%c", &g, &dg, tail) == 3;
		int64		cg;

		if ((is_seg || is_liv) && npins < 0)
			keep = true;		/* more pins than we can list: keep all */
		else if (is_seg || is_liv)
		{
			/* inputs and outputs of the background merges in flight */
			for (m = 0; m < SE_SHARD_MAX_MERGES && !keep; m++)
			{
				const SeShardMerge *bm = &sh->merges[m];

				if (!merge_in_flight(bm))
					continue;
				if (is_seg && g == bm->out_gen)
					keep = true;
				for (i = 0; i < bm->n && !keep; i++)
					if (bm->gens[i] == g && (is_seg || bm->del_gens[i] == dg))
						keep = true;
			}
			for (i = 0; i < sh->nsegs && !keep; i++)
				if (sh->segs[i].gen == g && (is_seg || sh->segs[i].del_gen == dg))
					keep = true;
			for (i = 0; i < ncommit && !keep; i++)
				if (commit_gens[i] == g && (is_seg || commit_dels[i] == dg))
					keep = true;
			for (i = 0; i < npins && !keep; i++)
				if (pin_gens[i] == g && (is_seg || pin_dels[i] == dg))
					keep = true;
		}
		else if (sscanf(de->d_name, "segments_" INT64_FORMAT "%c", &cg, tail) == 1)
			keep = (cg >= keep_commit || (sh->safe_gen > 0 && cg == sh->safe_gen));
		else
			keep = true;
		if (!keep)
		{
			char	   *p = psprintf("%s/%s", sh->index_dir, de->d_name);

			(void) unlink(p);
			pfree(p);
		}
	}
	FreeDir(d);
	pfree(commit_gens);
	pfree(commit_dels);
	pfree(pin_gens);
	pfree(pin_dels);
}

/*
 * The lowest seq_no the translog must keep past a commit: a running peer
 * recovery's or retention lease's (the slot's retain_seq_no), and on a
 * replicated shard everything above the global checkpoint -- what a resync
 * after a promotion sends, and what the primary's replication reads back
 * from the translog.  -1: nothing.
 */
static int64
retain_seq_no(SeShard *sh)
{
	int64		r = se_slot_read_i64(&SeSlots[sh->slot].retain_seq_no);

	if (sh->replicated)
		r = r < 0 ? sh->global_checkpoint + 1 : Min(r, sh->global_checkpoint + 1);
	return r;
}

void
se_shard_flush(SeShard *sh)
{
	flush_commit(sh, retain_seq_no(sh));
}

/* Flush (see se_shard_flush), keeping the translog from retain (-1: none). */
static void
flush_commit(SeShard *sh, int64 retain)
{
	int			i;
	int64		newgen;
	TimestampTz start = GetCurrentTimestamp();

	se_shard_refresh(sh);
	for (i = 0; i < sh->nsegs; i++)
	{
		SeSegEntry *e = &sh->segs[i];

		if (!e->synced)
		{
			char	   *p = seg_path(sh, e->gen);

			se_fsync_file(p);
			pfree(p);
			if (e->del_gen > 0)
			{
				p = liv_path(sh, e->gen, e->del_gen);
				se_fsync_file(p);
				pfree(p);
			}
			e->synced = true;
		}
	}
	se_fsync_dir(sh->index_dir);
	/*
	 * A replicated copy's new commit past the global checkpoint is not
	 * safe: the last one becomes the safe one if it is (else an older safe
	 * one stays), kept with the translog from it (ES CombinedDeletionPolicy).
	 */
	if (sh->replicated && sh->max_seq_no > sh->global_checkpoint)
	{
		if (sh->commit_max_seq_no <= sh->global_checkpoint)
		{
			sh->safe_gen = sh->commit_gen;
			sh->safe_tlog_gen = sh->commit_tlog_gen;
		}
	}
	else
		sh->safe_gen = 0;
	newgen = se_translog_roll(&sh->tl, sh->max_seq_no);
	write_commit(sh, sh->commit_gen + 1);
	sh->commit_gen++;
	sh->commit_max_seq_no = sh->max_seq_no;
	sh->commit_tlog_gen = newgen;
	se_translog_trim(&sh->tl, sh->safe_gen > 0 ? sh->safe_tlog_gen : newgen, retain);
	publish(sh);				/* segments are committed now; drops old files */
	pg_atomic_write_u64(&SeSlots[sh->slot].translog_bytes, sh->tl.total_size);
	if (sh->replicated)
		persist_global_checkpoint(sh);
	count_timed(sh, SE_STAT_FLUSH, start);
}

/*
 * Merge down to max_segments.  A merge whose output cannot be written for
 * want of space (ENOSPC, EDQUOT) is abandoned -- its partial file is
 * already gone (se_file_write_plain) and its inputs were not touched --
 * and the shard stays open: false, with the reason in the slot's
 * merge_failure.  Merges done before it are kept.  Any other error fails
 * the shard as before.
 */
bool
se_shard_force_merge(SeShard *sh, int max_segments)
{
	SeShardSlot *slot = &SeSlots[sh->slot];
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool ok = true;

	slot->merge_failure[0] = '\0';
	se_shard_refresh(sh);
	merge_abandon(sh);
	PG_TRY();
	{
		maybe_merge(sh, Max(1, max_segments));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_DISK_FULL &&
			edata->saved_errno != ENOSPC && edata->saved_errno != EDQUOT)
			PG_RE_THROW();
		FlushErrorState();
		ereport(WARNING,
				(errmsg("force merge of shard [%s][%d] abandoned: %s",
						sh->index_name, sh->shard, edata->message)));
		strlcpy(slot->merge_failure, edata->message, sizeof(slot->merge_failure));
		/* maybe_merge sorted by size for the round that failed */
		qsort(sh->segs, sh->nsegs, sizeof(SeSegEntry), cmp_seg_gen);
		ok = false;
	}
	PG_END_TRY();
	publish(sh);
	return ok;
}

/* ---------- open / recover / close ---------- */

/* ---------- sequenced operations: replay, replicas ---------- */

static void
tombstone_add(SeShard *sh, const char *id, int id_len, int64 seq_no)
{
	SeTombstone *t;
	int			i;

	for (i = 0; i < sh->ntombstones; i++)
	{
		t = &sh->tombstones[i];
		if (t->id_len == id_len && memcmp(t->id, id, id_len) == 0)
		{
			t->seq_no = Max(t->seq_no, seq_no);
			return;
		}
	}
	if (sh->ntombstones == sh->captombstones)
	{
		sh->captombstones = Max(16, sh->captombstones * 2);
		sh->tombstones = sh->tombstones
			? repalloc(sh->tombstones, sizeof(SeTombstone) * sh->captombstones)
			: MemoryContextAlloc(sh->cxt, sizeof(SeTombstone) * sh->captombstones);
	}
	t = &sh->tombstones[sh->ntombstones++];
	t->id = MemoryContextAlloc(sh->cxt, Max(id_len, 1));
	memcpy(t->id, id, id_len);
	t->id_len = id_len;
	t->seq_no = seq_no;
}

/* The seq_no of id's tombstone, or -1. */
static int64
tombstone_seq_no(SeShard *sh, const char *id, int id_len)
{
	int			i;

	for (i = 0; i < sh->ntombstones; i++)
		if (sh->tombstones[i].id_len == id_len &&
			memcmp(sh->tombstones[i].id, id, id_len) == 0)
			return sh->tombstones[i].seq_no;
	return -1;
}

/* Drop the tombstones the local checkpoint passed: no older op can come. */
static void
tombstones_prune(SeShard *sh)
{
	int			i = 0;

	while (i < sh->ntombstones)
	{
		if (sh->tombstones[i].seq_no <= sh->ckpt.checkpoint)
		{
			pfree(sh->tombstones[i].id);
			sh->tombstones[i] = sh->tombstones[--sh->ntombstones];
		}
		else
			i++;
	}
}

/*
 * Apply one operation that already has its seq_no, term and version (the
 * translog's replay, a replica): an operation already processed, or older
 * than what its _id holds (live document or tombstone), is only marked
 * processed -- operations reach a replica out of order.  log: append it to
 * the translog (a replica; replay does not).
 */
static void
apply_sequenced(SeShard *sh, const SeTranslogOp *op, bool log)
{
	DocLoc		loc;
	SeDocMeta	meta;
	SeError		err;
	bool		stale;

	if (se_checkpoint_contains(&sh->ckpt, op->seq_no))
		return;					/* a duplicate (recovery and replication overlap) */
	if (op->op == SE_OP_NOOP)
	{
		if (op->seq_no > sh->max_seq_no)
			sh->max_seq_no = op->seq_no;
		if (log && !sh->recovering)
			se_translog_add(&sh->tl, op);
		mark_processed(sh, op->seq_no);
		return;
	}
	se_error_init(&err);
	lookup_id(sh, op->id, op->id_len, &loc);
	stale = (loc.seg != -2 && loc.meta.seq_no > op->seq_no) ||
		(sh->ntombstones > 0 && tombstone_seq_no(sh, op->id, op->id_len) > op->seq_no);
	meta.id = pnstrdup(op->id, op->id_len);
	meta.id_len = op->id_len;
	meta.routing = op->routing;
	meta.routing_len = op->routing_len;
	meta.seq_no = op->seq_no;
	meta.primary_term = op->primary_term;
	meta.version = op->version;
	if (op->seq_no > sh->max_seq_no)
		sh->max_seq_no = op->seq_no;
	if (!stale && op->op == SE_OP_INDEX)
	{
		SeJsonParseOptions opts = {0};
		SeJson	   *doc = se_json_parse(op->source, op->source_len, &opts, &err);

		if (doc == NULL || !buffer_doc(sh, &meta, op->source, op->source_len, doc, &err))
		{
			ereport(WARNING,
					(errmsg("shard [%s][%d]: skipping translog operation for [%s]: %s",
							sh->index_name, sh->shard, meta.id, err.reason ? err.reason : "")));
			stale = true;		/* processed all the same: the checkpoint moves */
		}
		else
			delete_loc(sh, &loc);
	}
	else if (!stale)
	{
		delete_loc(sh, &loc);
		/* an older index op of the id may still come (seq_nos below it missing) */
		if (op->seq_no > sh->ckpt.checkpoint + 1)
			tombstone_add(sh, op->id, op->id_len, op->seq_no);
	}
	if (log && !sh->recovering)
		se_translog_add(&sh->tl, op);
	mark_processed(sh, op->seq_no);
	if (!stale)
		sh->write_gen++;
	/* keep recovery memory bounded */
	if (se_builder_ram_bytes(sh->buffer) > (size_t) se_index_buffer_size_kb * 1024 / Max(1, se_write_threads))
		se_shard_refresh(sh);
}

static void
replay_op(const SeTranslogOp *op, void *arg)
{
	SeShard    *sh = arg;

	/* a rollback replays only up to the global checkpoint */
	if (sh->rollback_to >= 0 && op->seq_no > sh->rollback_to)
		return;
	apply_sequenced(sh, op, false);
}

/* The slot's term when the routing set one (cluster mode), else the index's. */
static int64
routing_term(SeShard *sh, const SeIndexMeta *im)
{
	int64		t = SeSlots[sh->slot].primary_term;

	return t > 0 ? t : (im ? im->primary_term : sh->primary_term);
}

void
se_shard_apply_replica_ops(SeShard *sh, const SeTranslogOp *ops, int n,
						   int64 primary_term, int64 global_checkpoint, SeError *err)
{
	int			i;

	if (primary_term < sh->primary_term)
	{
		/* ES IndexShard: an operation of a primary that was replaced */
		se_error_set(err, 409, "illegal_state_exception",
					 "[%s][%d] operation primary term [" INT64_FORMAT "] is too old (current [" INT64_FORMAT "])",
					 sh->index_name, sh->shard, primary_term, sh->primary_term);
		return;
	}
	if (primary_term > sh->primary_term)
	{
		/* a new primary: what we hold above its global checkpoint may be gone */
		if (sh->ckpt.max_seq_no > global_checkpoint)
			roll_back_to(sh, global_checkpoint);
		sh->primary_term = primary_term;
	}
	refresh_mapping(sh);
	if (sh->npending > 0)
		se_shard_index_pending(sh);
	for (i = 0; i < n; i++)
	{
		if (ops[i].primary_term > primary_term)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "[%s][%d] operation [" INT64_FORMAT "] has primary term [" INT64_FORMAT "] above the request's [" INT64_FORMAT "]",
						 sh->index_name, sh->shard, ops[i].seq_no, ops[i].primary_term, primary_term);
			break;
		}
		apply_sequenced(sh, &ops[i], true);
		CHECK_FOR_INTERRUPTS();
	}
	if (sh->ntombstones > 0)
		tombstones_prune(sh);
	se_shard_update_global_checkpoint(sh, global_checkpoint);
	pg_atomic_write_u64(&SeSlots[sh->slot].write_gen, sh->write_gen);
	pg_atomic_write_u64(&SeSlots[sh->slot].max_seq_no, (uint64) sh->max_seq_no);
	pg_atomic_add_fetch_u64(&SeSlots[sh->slot].indexing_ops, n);
}

/*
 * The routing made this copy the primary with a newer term (reconcile set
 * the slot and woke us): take the term, fill the seq_no gaps below our
 * max_seq_no with no-ops (ES fillSeqNoGaps: the operations in them were
 * never acknowledged, since an acknowledged one is on every in-sync copy),
 * and owe the copies a resync of everything above the global checkpoint,
 * which replicate.c sends with the new term (the copies roll back above
 * the global checkpoint first).  Returns whether it promoted.
 */
bool
se_shard_promote_if_needed(SeShard *sh)
{
	SeShardSlot *slot = &SeSlots[sh->slot];
	int64		term = slot->primary_term;
	int64		q;

	if (slot->replica || term <= sh->primary_term)
		return false;
	if (sh->npending > 0)
		se_shard_index_pending(sh);
	ereport(LOG,
			(errmsg("search_engine: shard [%s][%d] is the primary now, primary term [" INT64_FORMAT "] (was [" INT64_FORMAT "]), local checkpoint [" INT64_FORMAT "], max_seq_no [" INT64_FORMAT "], global checkpoint [" INT64_FORMAT "]",
					sh->index_name, sh->shard, term, sh->primary_term, sh->ckpt.checkpoint,
					sh->max_seq_no, sh->global_checkpoint)));
	sh->primary_term = term;
	for (q = sh->ckpt.checkpoint + 1; q <= sh->max_seq_no; q++)
	{
		SeTranslogOp op;

		if (se_checkpoint_contains(&sh->ckpt, q))
			continue;
		memset(&op, 0, sizeof(op));
		op.op = SE_OP_NOOP;
		op.seq_no = q;
		op.primary_term = term;
		op.id = "";
		se_translog_add(&sh->tl, &op);
		mark_processed(sh, q);
	}
	se_shard_sync_translog(sh);
	SpinLockAcquire(&slot->repl_mutex);
	slot->resync_term = term;
	slot->resync_from = sh->global_checkpoint + 1;
	slot->resync_to = sh->max_seq_no;
	slot->resync_running = false;
	slot->repl_ntargets = 0;	/* an old primary's view of the copies */
	SpinLockRelease(&slot->repl_mutex);
	return true;
}

/*
 * A replica learned a newer primary term: drop what it holds above the
 * new primary's global checkpoint, which the new primary may not have
 * (it resyncs what it has).  Done by reopening from the last commit and
 * replaying the translog up to gcp; a commit already past gcp cannot be
 * rolled back that way and fails the copy, which then gets a fresh peer
 * recovery.  The translog before the rollback is dropped with a flush,
 * so neither a restart nor a later resync from this copy sees those
 * operations again.
 */
static void
roll_back_to(SeShard *sh, int64 gcp)
{
	int64		tlog_gen;
	int64		last_gen;
	int			i;
	MemoryContext old;

	ereport(LOG,
			(errmsg("search_engine: replica [%s][%d] rolls back from max_seq_no [" INT64_FORMAT "] to the global checkpoint [" INT64_FORMAT "]",
					sh->index_name, sh->shard, sh->max_seq_no, gcp)));
	merge_abandon(sh);
	if (sh->npending > 0)
		se_shard_index_pending(sh);
	se_translog_sync(&sh->tl, true);
	for (i = 0; i < sh->nsegs; i++)
		close_segment(&sh->segs[i]);
	sh->nsegs = 0;
	for (i = 0; i < sh->ntombstones; i++)
		pfree(sh->tombstones[i].id);
	sh->ntombstones = 0;
	new_buffer(sh);
	{
		/*
		 * The last commit past gcp: reset to the safe commit kept beside
		 * it (the newest at or below gcp), dropping the newer commit
		 * points -- their files go at the next cleanup.
		 */
		int64		gen = newest_commit(sh);
		SeCommitInfo *ci = palloc0(sizeof(SeCommitInfo));
		int64		safe = se_commit_newest_upto(sh->index_dir, gcp, 0, ci);

		if (safe > 0 && safe != gen)
		{
			ereport(LOG,
					(errmsg("search_engine: replica [%s][%d] resets to its safe commit [" INT64_FORMAT "] (max_seq_no [" INT64_FORMAT "]) to roll back",
							sh->index_name, sh->shard, safe, ci->max_seq_no)));
			se_commit_drop_newer(sh->index_dir, safe);
			gen = safe;
		}
		pfree(ci);
		old = MemoryContextSwitchTo(sh->cxt);
		load_commit(sh, gen, &tlog_gen);
		MemoryContextSwitchTo(old);
	}
	if (sh->ckpt.max_seq_no > gcp)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replica [%s][%d] cannot roll back to the global checkpoint [" INT64_FORMAT "]: its last commit holds operations up to [" INT64_FORMAT "]",
						sh->index_name, sh->shard, gcp, sh->ckpt.max_seq_no),
				 errdetail("illegal_state_exception"),
				 errhint("The copy fails and is recovered afresh from the primary.")));
	skip_existing_gens(sh);
	sh->recovering = true;
	sh->rollback_to = gcp;
	(void) se_translog_replay(sh->tlog_dir, tlog_gen, replay_op, sh, &last_gen);
	sh->rollback_to = -1;
	sh->recovering = false;
	sh->write_gen++;
	flush_commit(sh, -1);
	if (sh->ntombstones > 0)
		tombstones_prune(sh);
	sh->global_checkpoint = Min(sh->global_checkpoint, gcp);
}

void
se_shard_update_global_checkpoint(SeShard *sh, int64 gcp)
{
	gcp = Min(gcp, sh->ckpt.checkpoint);
	if (gcp > sh->global_checkpoint)
	{
		sh->global_checkpoint = gcp;
		se_slot_write_i64(&SeSlots[sh->slot].global_checkpoint, gcp);
	}
}

/* Persist the global checkpoint beside the translog when it moved (ES translog.ckp). */
static void
persist_global_checkpoint(SeShard *sh)
{
	StringInfoData buf;
	uint8		zero[SE_SEGMENT_ID_LEN] = {0};
	char	   *path;

	if (sh->global_checkpoint == sh->persisted_gcp)
		return;
	path = psprintf("%s/" GCP_FILE, sh->tlog_dir);
	initStringInfo(&buf);
	se_file_write_header(&buf, GCP_FORMAT, GCP_VERSION, zero);
	appendBinaryStringInfo(&buf, (const char *) &sh->global_checkpoint, sizeof(int64));
	se_file_write_footer(&buf);
	se_file_write_durable(path, buf.data, buf.len);
	sh->persisted_gcp = sh->global_checkpoint;
	pfree(buf.data);
	pfree(path);
}

/* The persisted global checkpoint, or -1 (none, or unreadable: start over). */
static int64
load_global_checkpoint(SeShard *sh)
{
	return se_shard_read_global_checkpoint(sh->tlog_dir);
}

int64
se_shard_read_global_checkpoint(const char *tlog_dir)
{
	char	   *path = psprintf("%s/" GCP_FILE, tlog_dir);
	size_t		len;
	char	   *data = se_file_read_all(path, &len, true);
	SeError		err;
	int			hdr;
	int64		v = -1;

	se_error_init(&err);
	if (data != NULL)
	{
		hdr = se_file_check((const uint8 *) data, len, GCP_FORMAT, GCP_VERSION, GCP_VERSION,
							NULL, true, &err);
		if (hdr >= 0 && len - hdr - SE_FILE_FOOTER_LEN == sizeof(int64))
			memcpy(&v, data + hdr, sizeof(int64));
		pfree(data);
	}
	pfree(path);
	return v;
}

int64
se_shard_read_ops(const char *uuid, int shard, int64 from, int64 to,
				  SeTranslogReplayFn fn, void *arg)
{
	char	   *dir = psprintf("%s/translog", se_shard_path(uuid, shard));
	int64		n = se_translog_read_ops(dir, from, to, fn, arg);

	pfree(dir);
	return n;
}

static void open_files(SeShard *sh, SeShardSlot *slot);

SeShard *
se_shard_open(int slot_no)
{
	SeShardSlot *slot = &SeSlots[slot_no];
	const SeClusterState *st = se_state_current();
	SeIndexMeta *im = se_state_find_uuid(st, slot->index_uuid);
	MemoryContext cxt;
	MemoryContext old;
	SeShard    *sh;
	int			i;

	if (im == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("index with uuid \"%s\" not found in the cluster state", slot->index_uuid),
				 errdetail("index_not_found_exception")));
	cxt = AllocSetContextCreate(TopMemoryContext, "search_engine shard", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	sh = palloc0(sizeof(SeShard));
	sh->cxt = cxt;
	sh->pending_cxt = AllocSetContextCreate(cxt, "search_engine pending docs",
											ALLOCSET_DEFAULT_SIZES);
	sh->slot = slot_no;
	strlcpy(sh->uuid, slot->index_uuid, sizeof(sh->uuid));
	sh->shard = slot->shard;
	sh->index_name = pstrdup(im->name);
	sh->path = se_shard_path(sh->uuid, sh->shard);
	sh->index_dir = psprintf("%s/index", sh->path);
	sh->tlog_dir = psprintf("%s/translog", sh->path);
	sh->settings = im->settings;
	sh->primary_term = routing_term(sh, im);
	sh->replicated = !se_cluster_single_node() && im->settings.number_of_replicas > 0;
	sh->global_checkpoint = sh->persisted_gcp = -1;
	sh->rollback_to = -1;
	se_checkpoint_init(&sh->ckpt, -1);
	sh->mapping = se_mapping_copy(im->mapping);
	sh->mapping_state_version = st->version;
	sh->next_seg_gen = 1;
	sh->max_seq_no = -1;		/* ES: no operation performed yet */
	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
		sh->merges[i].task = -1;
	sh->tl.fd = -1;
	new_buffer(sh);
	MemoryContextSwitchTo(old);

	/*
	 * A shard that fails to open (a corrupted file, say) leaves nothing
	 * behind: its mappings, translog and memory go, so that the failure
	 * costs the worker nothing however often the shard is retried.
	 */
	PG_TRY();
	{
		open_files(sh, slot);
	}
	PG_CATCH();
	{
		for (i = 0; i < sh->nsegs; i++)
			close_segment(&sh->segs[i]);
		if (sh->tl.fd >= 0)
			close(sh->tl.fd);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return sh;
}

/* The files part of se_shard_open: commit point, segments, translog. */
static void
open_files(SeShard *sh, SeShardSlot *slot)
{
	MemoryContext cxt = sh->cxt;
	MemoryContext old;
	int64		commit;
	int64		tlog_gen = 1;
	int64		last_gen;
	struct stat stbuf;

	if (stat(sh->index_dir, &stbuf) != 0)
	{
		/* a new shard: empty commit point and translog generation 1 */
		se_mkdir_p(sh->index_dir);
		se_mkdir_p(sh->tlog_dir);
		/* the translog's buffer lives as long as the shard */
		old = MemoryContextSwitchTo(cxt);
		se_translog_open(&sh->tl, sh->tlog_dir, 1, true);
		MemoryContextSwitchTo(old);
		write_commit(sh, 1);
		sh->commit_gen = 1;
		sh->commit_max_seq_no = sh->max_seq_no;
		sh->commit_tlog_gen = 1;
		sh->safe_gen = 0;
		se_fsync_dir(sh->path);
	}
	else
	{
		commit = newest_commit(sh);
		if (commit == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("shard [%s][%d] has no commit point in \"%s\"",
							sh->index_name, sh->shard, sh->index_dir),
					 errdetail("index_corrupted_exception")));
		old = MemoryContextSwitchTo(cxt);
		load_commit(sh, commit, &tlog_gen);
		MemoryContextSwitchTo(old);
		{
			/* an older commit kept beside the last is the safe one */
			SeCommitInfo *ci = palloc0(sizeof(SeCommitInfo));

			sh->safe_gen = se_commit_newest_upto(sh->index_dir, PG_INT64_MAX, commit, ci);
			sh->safe_tlog_gen = ci->translog_gen;
			pfree(ci);
		}
		/*
		 * Files of refreshes after the commit stay until the replay's
		 * refresh publishes (and cleans up): a shard reopened after a full
		 * disk may still be read through them.  New segments are numbered
		 * past them, so that none is overwritten under a reader.
		 */
		skip_existing_gens(sh);
		sh->recovering = true;
		(void) se_translog_replay(sh->tlog_dir, tlog_gen, replay_op, sh, &last_gen);
		sh->recovering = false;
		old = MemoryContextSwitchTo(cxt);
		se_translog_open(&sh->tl, sh->tlog_dir, last_gen, false);
		MemoryContextSwitchTo(old);
	}
	if (sh->ntombstones > 0)
		tombstones_prune(sh);
	sh->global_checkpoint = sh->persisted_gcp =
		Min(load_global_checkpoint(sh), sh->ckpt.checkpoint);
	se_shard_refresh(sh);
	publish(sh);
	pg_atomic_write_u64(&slot->max_seq_no, (uint64) sh->max_seq_no);
	se_slot_write_i64(&slot->global_checkpoint, sh->global_checkpoint);
	publish_checkpoints(sh);
	sh->last_sync = sh->last_refresh = GetCurrentTimestamp();
}

/*
 * Close a shard: flushed, unless its files are about to be deleted
 * (se_shard_remove_files, once the slot no longer publishes them).
 */
void
se_shard_close(SeShard *sh, bool flush)
{
	merge_abandon(sh);
	if (flush)
	{
		se_shard_publish_mapping(sh);
		se_shard_flush(sh);
	}
	se_translog_close(&sh->tl);
	se_shard_discard(sh);
}

/*
 * Let go of a shard without any I/O: after an error its state is unknown,
 * and its translog still holds everything acknowledged.
 */
void
se_shard_discard(SeShard *sh)
{
	int			i;

	for (i = 0; i < SE_SHARD_MAX_MERGES; i++)
		if (merge_in_flight(&sh->merges[i]))
			se_merge_abandon(sh->merges[i].task);
	if (sh->tl.fd >= 0)
		close(sh->tl.fd);
	sh->tl.fd = -1;
	for (i = 0; i < sh->nsegs; i++)
		close_segment(&sh->segs[i]);
	sh->nsegs = 0;
	MemoryContextDelete(sh->cxt);
}

/*
 * Delete a shard's files, and its index's directory once no shard is left
 * in it.
 */
void
se_shard_remove_files(const char *uuid, int shard)
{
	char	   *index_dir = se_index_path(uuid);

	se_remove_tree(se_shard_path(uuid, shard));
	(void) rmdir(index_dir);	/* fails while other shards are there */
}

/*
 * Remove the directories of indices the cluster state does not know: left
 * by a delete that crashed after writing the state.  The directories are
 * listed before the state is read, so an index created meanwhile is in
 * the state they are compared with (uuids are never reused).
 */
void
se_remove_leftover_indices(void)
{
	char	   *dir = psprintf("%s/indices", se_data_directory());
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	List	   *found = NIL;
	ListCell   *lc;
	const SeClusterState *st;

	if (d == NULL && errno == ENOENT)
		return;
	while ((de = ReadDir(d, dir)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			found = lappend(found, pstrdup(de->d_name));
	FreeDir(d);
	st = se_state_current();
	foreach(lc, found)
	{
		if (se_state_find_uuid(st, lfirst(lc)) != NULL)
			continue;
		ereport(LOG,
				(errmsg("removing directory \"%s/%s\" of an index that no longer exists",
						dir, (char *) lfirst(lc))));
		se_remove_tree(se_index_path(lfirst(lc)));
	}
}

size_t
se_shard_buffer_bytes(SeShard *sh)
{
	return se_builder_ram_bytes(sh->buffer);
}

bool
se_shard_translog_over_threshold(SeShard *sh)
{
	return sh->tl.total_size > (uint64) sh->settings.flush_threshold_bytes;
}

long
se_shard_periodic(SeShard *sh, TimestampTz now)
{
	long		wait = 1000;

	se_shard_promote_if_needed(sh);
	refresh_mapping(sh);
	if (merges_in_flight(sh) > 0 && se_shard_merge_poll(sh))
	{
		/* publish the merged segment (writes its carried-over deletes) */
		se_shard_refresh(sh);
		publish(sh);
	}
	if (sh->settings.refresh_interval_ms > 0)
	{
		TimestampTz due = TimestampTzPlusMilliseconds(sh->last_refresh,
													  sh->settings.refresh_interval_ms);

		if (now >= due)
		{
			if (sh->write_gen != sh->refreshed_gen)
				se_shard_refresh(sh);
			else
				sh->last_refresh = now;
			wait = Min(wait, sh->settings.refresh_interval_ms);
		}
		else
			wait = Min(wait, (long) ((due - now) / 1000) + 1);
	}
	if (sh->settings.durability_async && (sh->tl.dirty || sh->tl.buf.len > 0))
	{
		TimestampTz due = TimestampTzPlusMilliseconds(sh->last_sync,
													  sh->settings.sync_interval_ms);

		if (now >= due)
		{
			se_translog_sync(&sh->tl, true);
			sh->last_sync = now;
		}
		else
			wait = Min(wait, (long) ((due - now) / 1000) + 1);
	}
	if (se_shard_translog_over_threshold(sh))
		se_shard_flush(sh);
	return Max(wait, 1);
}
