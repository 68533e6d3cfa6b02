/* SOURCES: src/util/json.c src/util/error.c src/util/hash.c src/index/builder.c src/index/fileformat.c src/index/livedocs.c src/index/postings.c src/index/reader.c src/index/smallfloat.c src/index/writer.c src/mapping/date.c src/mapping/docparse.c src/mapping/mapping.c src/mapping/numeric.c src/mapping/geo_point.c src/analysis/analysis.c src/analysis/porter.c src/analysis/standard_tokenizer.c src/analysis/unicode.c */
/*-------------------------------------------------------------------------
 *
 * bench_ingest.c
 *	  Micro-benchmark of a write worker's per-document work: what
 *	  se_shard_apply_bulk and refresh do to a document, without the server.
 *
 * Reads an NDJSON bulk body (action line + source line per document,
 * default bench/data/debian.ndjson), maps it with bench/lib/debian_index.json
 * (BENCH_INDEX_BODY names another index body, e.g. bench/contents_corpus.json
 * for bench/data/contents.ndjson; BENCH_DUMP a file that gets the first
 * round's segments, to compare two builds' bytes) and, BENCH_REPS times (default 5), feeds every document through
 * se_json_parse, se_doc_parse into a segment builder (analysis, postings,
 * doc values) and se_builder_end_doc, serializing the builder into a
 * segment every BENCH_SEG_DOCS documents (default 16000, about what one
 * shard buffers between two 1 s refreshes of the foundation benchmark).
 * (Per-document parse memory is not freed: frontend palloc has no
 * contexts.)  Prints the median CPU seconds of each phase (CPU time, not
 * wall time, so that other processes on a shared machine disturb it less)
 * and documents per CPU second of the whole.
 *
 *	   make -C test/unit -f Makefile.bench bench_ingest && test/unit/bench_ingest
 *	   make -C test/unit -f Makefile.bench bench_ingest_base SRCROOT=/work/main
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "index/segment.h"
#include "mapping/mapping.h"
#include "util/json.h"

static double
now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);	/* CPU time: the machine is shared */
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (f == NULL)
	{
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = palloc(n + 1);
	if (fread(buf, 1, n, f) != (size_t) n)
		exit(1);
	buf[n] = '\0';
	fclose(f);
	*len = n;
	return buf;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	const char *top = getenv("BENCH_TOP") ? getenv("BENCH_TOP") : "../..";
	char		path[1024];
	size_t		len;
	char	   *body;
	char	   *mapjson;
	SeError		err;
	SeJsonParseOptions popts = {0};
	SeJson	   *idx;
	SeMapping  *m;
	int			reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 5;
	int			seg_docs = getenv("BENCH_SEG_DOCS") ? atoi(getenv("BENCH_SEG_DOCS")) : 16000;
	double	   *t_parse,
			   *t_doc,
			   *t_ser,
			   *t_all;
	int			ndocs = 0;
	FILE	   *dump = getenv("BENCH_DUMP") ? fopen(getenv("BENCH_DUMP"), "wb") : NULL;
	int			r;
	int			i;

	snprintf(path, sizeof(path), "%s/bench/lib/debian_index.json", top);
	mapjson = read_file(getenv("BENCH_INDEX_BODY") ? getenv("BENCH_INDEX_BODY") : path, &len);
	se_error_init(&err);
	idx = se_json_parse(mapjson, len, &popts, &err);
	for (i = 0; idx && i < idx->u.o.count; i++)
		if (strcmp(idx->u.o.members[i].key, "mappings") == 0)
			break;
	m = (idx && i < idx->u.o.count) ? se_mapping_from_json(idx->u.o.members[i].value, NULL, &err) : NULL;
	if (m == NULL)
	{
		fprintf(stderr, "bad mapping: %s\n", err.reason ? err.reason : "?");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/bench/data/debian.ndjson", top);
	body = read_file(argc > 1 ? argv[1] : path, &len);

	t_parse = palloc0(sizeof(double) * reps);
	t_doc = palloc0(sizeof(double) * reps);
	t_ser = palloc0(sizeof(double) * reps);
	t_all = palloc0(sizeof(double) * reps);
	for (r = 0; r < reps; r++)
	{
		SeSegmentBuilder *b = se_builder_create();
		size_t		pos = 0;
		int			line = 0;
		int			inseg = 0;
		double		t0 = now_sec();
		uint8		segid[SE_SEGMENT_ID_LEN] = {0};

		ndocs = 0;
		while (pos < len)
		{
			const char *nl = memchr(body + pos, '\n', len - pos);
			size_t		end = nl ? (size_t) (nl - body) : len;
			const char *l = body + pos;
			size_t		ll = end - pos;

			pos = end + 1;
			if (line++ % 2 == 0)
				continue;		/* action line */
			{
				SeJsonParseOptions o = {0};
				SeDocParseOptions dopts;
				SeDocMeta	meta;
				SeJson	   *doc;
				bool		changed;
				char		id[32];
				double		a,
							c;

				memset(&dopts, 0, sizeof(dopts));
				dopts.limits.total_fields_limit = 1000;
				dopts.limits.depth_limit = 20;
				o.reject_duplicate_keys = true;
				o.max_depth = 1000;
				a = now_sec();
				doc = se_json_parse(l, ll, &o, &err);
				c = now_sec();
				t_parse[r] += c - a;
				snprintf(id, sizeof(id), "%d", ndocs);
				se_builder_begin_doc(b);
				if (doc == NULL || !se_doc_parse(m, doc, &dopts, b, id, &changed, &err))
				{
					fprintf(stderr, "doc %d failed: %s\n", ndocs, err.reason ? err.reason : "?");
					return 1;
				}
				meta = (SeDocMeta) {.id = id, .id_len = (int) strlen(id), .seq_no = ndocs,
				.primary_term = 1, .version = 1};
				se_builder_end_doc(b, &meta, l, ll);
				t_doc[r] += now_sec() - c;
				ndocs++;
				if (++inseg == seg_docs || pos >= len)
				{
					StringInfoData out;

					a = now_sec();
					initStringInfo(&out);
					se_builder_serialize(b, segid, 3, &out);
					if (dump != NULL && r == 0)
						fwrite(out.data, 1, out.len, dump);
					pfree(out.data);
					se_builder_free(b);
					b = se_builder_create();
					inseg = 0;
					t_ser[r] += now_sec() - a;
				}
			}
		}
		se_builder_free(b);
		t_all[r] = now_sec() - t0;
	}
	if (dump != NULL)
		fclose(dump);
	qsort(t_parse, reps, sizeof(double), cmp_double);
	qsort(t_doc, reps, sizeof(double), cmp_double);
	qsort(t_ser, reps, sizeof(double), cmp_double);
	qsort(t_all, reps, sizeof(double), cmp_double);
	printf("docs %d, reps %d (median): json parse %.3f s, doc parse + analysis + builder %.3f s, "
		   "serialize %.3f s, total %.3f s = %.0f docs/s\n",
		   ndocs, reps, t_parse[reps / 2], t_doc[reps / 2], t_ser[reps / 2],
		   t_all[reps / 2], ndocs / t_all[reps / 2]);
	return 0;
}
