/*-------------------------------------------------------------------------
 *
 * merge.c
 *	  Merge the live documents of several segments into one new segment.
 *
 * New doc ids follow segment order, then doc order, so every source's
 * postings can be appended in turn and stay ascending.  Terms are merged
 * with an n-way walk over the sources' term enums; doc-values dictionaries
 * are merged the same way, keeping only values some surviving doc uses.
 * Statistics (doc_freq, total_term_freq, field stats) are recomputed by the
 * segment writer from the surviving postings.  Fields are matched by name
 * and take the options of their first appearance; a source field lacking
 * freqs, positions, norms or doc values of the merged field contributes
 * freq 1, position 0, norm 0 or no values.
 *
 * The sources are read through the bounds-checked reader API; any
 * corruption they report, or terms out of order, aborts the merge with the
 * reader's error and leaves out as it was.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include "index/segment_internal.h"

typedef struct MField
{
	const char *name;
	SeIndexOptions io;
	bool		norms;
	SeDocValuesType dv;
	int		   *src;			/* field number per source, or -1 */
} MField;

typedef struct MergeState
{
	SeSegmentReader **readers;
	int			n;
	int32	  **maps;			/* old doc -> new doc or -1, per source */
	SeSegWriter *w;
	MField	   *fields;
	int			nfields;
	SeError    *err;
} MergeState;

typedef struct TermCursor
{
	SeTermsEnum *e;
	const char *term;
	int			len;
	SeTermInfo	ti;
	bool		valid;
} TermCursor;

static inline int
cmp_terms(const char *a, int alen, const char *b, int blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/* Copy the first reader error into err; true if there was one. */
static bool
check_readers(MergeState *ms)
{
	int			s;

	for (s = 0; s < ms->n; s++)
	{
		const SeError *e = se_segment_error(ms->readers[s]);

		if (e)
		{
			se_error_set(ms->err, e->status, e->type, "%s", e->reason);
			return true;
		}
	}
	return false;
}

/*
 * Step a cursor.  The terms enum insists on strictly ascending terms (a
 * disorder ends it and marks the reader corrupted), which the merge of
 * the cursors relies on.
 */
static void
cursor_next(TermCursor *c)
{
	c->valid = se_terms_next(c->e, &c->term, &c->len, &c->ti);
}

static void
merge_terms(MergeState *ms, int mf)
{
	MField	   *f = &ms->fields[mf];
	TermCursor *cur = palloc0(sizeof(TermCursor) * ms->n);
	int			s;

	for (s = 0; s < ms->n; s++)
	{
		int			sf = f->src[s];

		if (sf < 0 || se_segment_field_index_options(ms->readers[s], sf) == SE_IDX_NONE)
			continue;
		cur[s].e = se_segment_terms(ms->readers[s], sf, NULL, 0);
		cursor_next(&cur[s]);
	}
	se_segwriter_terms_begin(ms->w, mf);
	for (;;)
	{
		const char *min = NULL;
		int			min_len = 0;
		char	   *term;

		for (s = 0; s < ms->n; s++)
			if (cur[s].valid &&
				(min == NULL || cmp_terms(cur[s].term, cur[s].len, min, min_len) < 0))
			{
				min = cur[s].term;
				min_len = cur[s].len;
			}
		if (min == NULL)
			break;
		/* the cursors move on below; keep our own copy of the term */
		term = palloc(min_len + 1);
		memcpy(term, min, min_len);
		se_segwriter_term_begin(ms->w, term, min_len);
		for (s = 0; s < ms->n; s++)
		{
			SeSegmentReader *r = ms->readers[s];
			SeIndexOptions sio;
			SePostings *p;
			int32		doc;

			if (!cur[s].valid || cmp_terms(cur[s].term, cur[s].len, term, min_len) != 0)
				continue;
			sio = se_segment_field_index_options(r, f->src[s]);
			p = se_postings_open(r, &cur[s].ti,
								 f->io == SE_IDX_POSITIONS && sio == SE_IDX_POSITIONS);
			while ((doc = se_postings_next(p)) != SE_NO_MORE_DOCS)
			{
				int32		nd = ms->maps[s][doc];
				int32		freq;
				int32		k;

				if (nd < 0)
					continue;
				freq = (sio >= SE_IDX_FREQS) ? se_postings_freq(p) : 1;
				se_segwriter_term_doc(ms->w, nd, (uint32) freq);
				if (f->io == SE_IDX_POSITIONS && sio == SE_IDX_POSITIONS)
				{
					for (k = 0; k < freq; k++)
					{
						int32		pos = se_postings_next_position(p);

						if (pos < 0)
							break;
						se_segwriter_term_pos(ms->w, pos);
					}
				}
			}
			se_postings_close(p);
			cursor_next(&cur[s]);
		}
		se_segwriter_term_end(ms->w);
		pfree(term);
	}
	se_segwriter_terms_end(ms->w);
	for (s = 0; s < ms->n; s++)
		if (cur[s].e)
			se_terms_close(cur[s].e);
	pfree(cur);
}

static void
merge_norms(MergeState *ms, int mf)
{
	MField	   *f = &ms->fields[mf];
	int			s;

	for (s = 0; s < ms->n; s++)
	{
		SeSegmentReader *r = ms->readers[s];
		uint32		d,
					max_doc = se_segment_max_doc(r);

		if (f->src[s] < 0 || !se_segment_field_has_norms(r, f->src[s]))
			continue;
		for (d = 0; d < max_doc; d++)
		{
			int32		nd = ms->maps[s][d];
			uint8		norm;

			if (nd < 0)
				continue;
			norm = se_segment_norm(r, f->src[s], (int32) d);
			if (norm != 0)
				se_segwriter_set_norm(ms->w, mf, nd, norm);
		}
	}
}

static void
merge_numeric(MergeState *ms, int mf)
{
	MField	   *f = &ms->fields[mf];
	int			s;

	se_segwriter_numeric_begin(ms->w, mf);
	for (s = 0; s < ms->n; s++)
	{
		SeSegmentReader *r = ms->readers[s];
		uint32		d,
					max_doc = se_segment_max_doc(r);

		if (f->src[s] < 0 || se_segment_field_dv_type(r, f->src[s]) != SE_DV_NUMERIC)
			continue;
		for (d = 0; d < max_doc; d++)
		{
			const int64 *vals;
			int			cnt;

			if (ms->maps[s][d] < 0)
				continue;
			cnt = se_segment_numeric_values(r, f->src[s], (int32) d, &vals);
			if (cnt > 0)
				se_segwriter_numeric_doc(ms->w, ms->maps[s][d], vals, cnt);
		}
	}
	se_segwriter_numeric_end(ms->w);
}

static void
merge_sorted(MergeState *ms, int mf)
{
	MField	   *f = &ms->fields[mf];
	bool	  **used = palloc0(sizeof(bool *) * ms->n);
	uint32	  **ordmap = palloc0(sizeof(uint32 *) * ms->n);
	int64	   *pos = palloc0(sizeof(int64) * ms->n);
	int64	   *ndict = palloc0(sizeof(int64) * ms->n);
	uint32	   *tmp = NULL;
	size_t		tmp_cap = 0;
	uint32		next_ord = 0;
	int			s;

	/* which ordinals do surviving docs use? */
	for (s = 0; s < ms->n; s++)
	{
		SeSegmentReader *r = ms->readers[s];
		uint32		d,
					max_doc = se_segment_max_doc(r);

		if (f->src[s] < 0 || se_segment_field_dv_type(r, f->src[s]) != SE_DV_SORTED_SET)
			continue;
		ndict[s] = se_segment_sorted_dict_size(r, f->src[s]);
		used[s] = se_index_alloc_huge(ndict[s] + 1, true);
		ordmap[s] = se_index_alloc_huge(sizeof(uint32) * (ndict[s] + 1), false);
		for (d = 0; d < max_doc; d++)
		{
			int			cnt,
						i;

			if (ms->maps[s][d] < 0)
				continue;
			cnt = se_segment_sorted_count(r, f->src[s], (int32) d);
			for (i = 0; i < cnt; i++)
			{
				int64		ord = se_segment_sorted_ord(r, f->src[s], (int32) d, i);

				if (ord >= 0)
					used[s][ord] = true;
			}
		}
	}

	/* n-way merge of the used parts of the sorted dictionaries */
	se_segwriter_sorted_begin(ms->w, mf);
	for (;;)
	{
		const char *min = NULL;
		int			min_len = 0;
		const char **val = palloc0(sizeof(char *) * ms->n);
		int		   *val_len = palloc0(sizeof(int) * ms->n);

		for (s = 0; s < ms->n; s++)
		{
			if (used[s] == NULL)
				continue;
			while (pos[s] < ndict[s] && !used[s][pos[s]])
				pos[s]++;
			if (pos[s] >= ndict[s])
				continue;
			val[s] = se_segment_sorted_dict_value(ms->readers[s], f->src[s],
												  pos[s], &val_len[s]);
			if (val[s] == NULL)
			{
				pos[s] = ndict[s];	/* corruption, reported by the reader */
				continue;
			}
			if (min == NULL || cmp_terms(val[s], val_len[s], min, min_len) < 0)
			{
				min = val[s];
				min_len = val_len[s];
			}
		}
		if (min == NULL)
		{
			pfree(val);
			pfree(val_len);
			break;
		}
		se_segwriter_sorted_dict_add(ms->w, min, min_len);
		for (s = 0; s < ms->n; s++)
		{
			if (val[s] == NULL || cmp_terms(val[s], val_len[s], min, min_len) != 0)
				continue;
			ordmap[s][pos[s]] = next_ord;
			pos[s]++;
			/* the next used value must sort after this one */
			while (pos[s] < ndict[s] && !used[s][pos[s]])
				pos[s]++;
			if (pos[s] < ndict[s])
			{
				int			nl;
				const char *nv = se_segment_sorted_dict_value(ms->readers[s], f->src[s],
															  pos[s], &nl);

				if (nv && cmp_terms(nv, nl, min, min_len) <= 0)
				{
					se_segment_corrupt(ms->readers[s], "docvalues",
									   "field [%s]: dictionary out of order",
									   f->name);
					pos[s] = ndict[s];
				}
			}
		}
		next_ord++;
		pfree(val);
		pfree(val_len);
	}

	for (s = 0; s < ms->n; s++)
	{
		SeSegmentReader *r = ms->readers[s];
		uint32		d,
					max_doc = se_segment_max_doc(r);

		if (used[s] == NULL)
			continue;
		for (d = 0; d < max_doc; d++)
		{
			int			cnt,
						i,
						k = 0;

			if (ms->maps[s][d] < 0)
				continue;
			cnt = se_segment_sorted_count(r, f->src[s], (int32) d);
			if (cnt <= 0)
				continue;
			tmp = se_index_grow(tmp, &tmp_cap, cnt, sizeof(uint32));
			for (i = 0; i < cnt; i++)
			{
				int64		ord = se_segment_sorted_ord(r, f->src[s], (int32) d, i);

				if (ord >= 0 && ord < ndict[s])
					tmp[k++] = ordmap[s][ord];
			}
			se_segwriter_sorted_doc(ms->w, ms->maps[s][d], tmp, k);
		}
	}
	se_segwriter_sorted_end(ms->w);

	for (s = 0; s < ms->n; s++)
	{
		if (used[s])
			pfree(used[s]);
		if (ordmap[s])
			pfree(ordmap[s]);
	}
	pfree(used);
	pfree(ordmap);
	pfree(pos);
	pfree(ndict);
	if (tmp)
		pfree(tmp);
}

/* Union of the sources' fields, in order of first appearance. */
static void
collect_fields(MergeState *ms)
{
	int			s,
				t,
				i,
				cap = 0;

	for (s = 0; s < ms->n; s++)
		cap += se_segment_num_fields(ms->readers[s]);
	ms->fields = palloc0(sizeof(MField) * (cap + 1));
	for (s = 0; s < ms->n; s++)
	{
		SeSegmentReader *r = ms->readers[s];

		for (i = 0; i < se_segment_num_fields(r); i++)
		{
			const char *name = se_segment_field_name(r, i);
			bool		seen = false;
			MField	   *f;

			for (t = 0; t < s && !seen; t++)
				seen = se_segment_field(ms->readers[t], name) >= 0;
			if (seen)
				continue;
			f = &ms->fields[ms->nfields++];
			f->name = name;
			f->io = se_segment_field_index_options(r, i);
			f->norms = se_segment_field_has_norms(r, i);
			f->dv = se_segment_field_dv_type(r, i);
			f->src = palloc(sizeof(int) * ms->n);
			for (t = 0; t < ms->n; t++)
				f->src[t] = (t < s) ? -1 : se_segment_field(ms->readers[t], name);
		}
	}
}

bool
se_segment_merge(SeSegmentReader **readers, const uint64 **live, int n,
				 const uint8 segment_id[SE_SEGMENT_ID_LEN], int zstd_level,
				 StringInfo out, SeError *err)
{
	MergeState	ms;
	uint64		total = 0;
	int			s,
				i;
	bool		ok = false;
	StringInfoData src;

	memset(&ms, 0, sizeof(ms));
	if (n < 0 || (n > 0 && readers == NULL))
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "invalid segments to merge");
		return false;
	}
	for (s = 0; s < n; s++)
		if (readers[s] == NULL)
		{
			se_error_set(err, 400, "illegal_argument_exception",
						 "segment %d to merge is missing", s);
			return false;
		}
	ms.readers = readers;
	ms.n = n;
	ms.err = err;
	if (check_readers(&ms))
		return false;

	ms.maps = palloc0(sizeof(int32 *) * (n + 1));
	for (s = 0; s < n; s++)
	{
		uint32		d,
					max_doc = se_segment_max_doc(readers[s]);
		const uint64 *bits = live ? live[s] : NULL;

		ms.maps[s] = se_index_alloc_huge(sizeof(int32) * ((size_t) max_doc + 1), false);
		for (d = 0; d < max_doc; d++)
			ms.maps[s][d] = se_livedocs_get(bits, (int32) d) ? (int32) total++ : -1;
	}
	if (total >= (uint64) PG_INT32_MAX)
	{
		se_error_set(err, 400, "illegal_argument_exception",
					 "merged segment would hold " UINT64_FORMAT " documents, more than the limit of %d",
					 total, PG_INT32_MAX - 1);
		goto done;
	}

	collect_fields(&ms);
	ms.w = se_segwriter_create((uint32) total, zstd_level);
	for (i = 0; i < ms.nfields; i++)
		se_segwriter_add_field(ms.w, ms.fields[i].name,
							   (int) strlen(ms.fields[i].name), ms.fields[i].io,
							   ms.fields[i].norms, ms.fields[i].dv);
	for (i = 0; i < ms.nfields; i++)
	{
		/* norms first: the postings impacts are computed from them */
		if (ms.fields[i].norms)
			merge_norms(&ms, i);
		if (ms.fields[i].io != SE_IDX_NONE)
			merge_terms(&ms, i);
		if (ms.fields[i].dv == SE_DV_NUMERIC)
			merge_numeric(&ms, i);
		else if (ms.fields[i].dv == SE_DV_SORTED_SET)
			merge_sorted(&ms, i);
		if (check_readers(&ms))
			goto done;
	}

	/* metadata and sources, in new doc order */
	initStringInfo(&src);
	for (s = 0; s < n; s++)
	{
		uint32		d,
					max_doc = se_segment_max_doc(readers[s]);

		for (d = 0; d < max_doc; d++)
		{
			SeDocMeta	m;

			if (ms.maps[s][d] < 0)
				continue;
			se_segment_doc_meta(readers[s], (int32) d, &m);
			resetStringInfo(&src);
			if (!se_segment_source(readers[s], (int32) d, &src))
			{
				if (!check_readers(&ms))
					se_error_set(err, 500, SE_CORRUPTED,
								 "segment %d is corrupted: stored: doc %u unreadable",
								 s, d);
				pfree(src.data);
				goto done;
			}
			se_segwriter_doc(ms.w, &m, src.data, src.len);
		}
	}
	pfree(src.data);
	if (check_readers(&ms))
		goto done;
	se_segwriter_finish(ms.w, segment_id, out);
	ms.w = NULL;
	ok = true;

done:
	if (ms.w)
		se_segwriter_abort(ms.w);
	for (i = 0; i < ms.nfields; i++)
		pfree(ms.fields[i].src);
	if (ms.fields)
		pfree(ms.fields);
	for (s = 0; s < n; s++)
		if (ms.maps[s])
			pfree(ms.maps[s]);
	pfree(ms.maps);
	return ok;
}
