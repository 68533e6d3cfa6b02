/*-------------------------------------------------------------------------
 *
 * bm25.c
 *	  Lucene 9 BM25Similarity (k1 = 1.2, b = 0.75) in float32.
 *
 * Every step is rounded to float where Lucene's Java code rounds to float,
 * so scores agree bit for bit: idf is computed in double and cast, avgdl
 * likewise, the per-norm cache and the final score in float.  ES 8 uses
 * this form, without the (k1 + 1) factor of older Lucene versions.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "index/segment.h"
#include "search/search_int.h"

#define BM25_K1		SE_BM25_K1
#define BM25_B		SE_BM25_B

float
se_bm25_idf(int64 doc_freq, int64 doc_count)
{
	return (float) log(1.0 + ((double) (doc_count - doc_freq) + 0.5) /
					   ((double) doc_freq + 0.5));
}

float
se_bm25_avgdl(int64 sum_total_term_freq, int64 doc_count)
{
	if (doc_count <= 0)
		return 1.0f;
	return (float) ((double) sum_total_term_freq / (double) doc_count);
}

/* weight = boost * idf; cache[i] = 1 / (k1 * ((1 - b) + b * len(i) / avgdl)) */
void
se_bm25_init(SeBM25 *sim, float boost, float idf, float avgdl)
{
	int			i;

	sim->weight = boost * idf;
	sim->boost = boost;
	sim->idf = idf;
	sim->avgdl = avgdl;
	sim->doc_freq = 0;
	sim->doc_count = 0;
	for (i = 0; i < 256; i++)
	{
		float		len = (float) se_smallfloat_byte4_to_int((uint8) i);
		float		t = BM25_B * len;

		t = t / avgdl;
		t = (1.0f - BM25_B) + t;
		t = BM25_K1 * t;
		sim->cache[i] = 1.0f / t;
	}
}
