/*-------------------------------------------------------------------------
 *
 * hll.c
 *	  HyperLogLog++ (Heule, Nunkesser, Hall 2013) for the cardinality
 *	  aggregation past its precision_threshold.
 *
 * 2^p registers each keep the largest rank (leading zeros + 1) of the
 * hashes whose first p bits name it.  HLL's raw estimate is biased upwards
 * for counts up to about 5 * 2^p; HLL++ subtracts an empirically measured
 * bias there, and uses linear counting (from the empty registers) below a
 * count where that is more accurate.  The bias tables and thresholds in
 * hll_bias.h are this project's own, measured by test/unit/gen_hll_bias.c
 * (the program and its method are described there; rerun it with
 * `make -C test/unit -f Makefile.bench hll_bias`), not copied from the
 * paper's or Elasticsearch's.  The bias is interpolated linearly between
 * the measured points, by raw estimate.
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "common/hashfn.h"
#include "search/hll.h"

#ifndef SE_HLL_GENERATOR
#include "search/hll_bias.h"
#endif

/*
 * The hash of a value: PostgreSQL's hash_bytes_extended, then MurmurHash3's
 * 64-bit finalizer.  The first alone is not uniform enough in its top bits
 * (the register index) for consecutive integers: their estimates came out
 * 0.5-0.9% low on average (test_hll).
 */
uint64
se_hll_hash(const void *v, int len)
{
	uint64		h = hash_bytes_extended((const unsigned char *) v, len, 0);

	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

int
se_hll_precision(int64 threshold)
{
	/* hash table entries at load factor 0.75, in 4-byte ints: bits needed */
	int64		entries = (int64) ceil((double) threshold / 0.75) * 4;
	int			p = 0;

	while (p < 62 && (INT64CONST(1) << p) <= entries)
		p++;
	return Max(SE_HLL_MIN_P, Min(SE_HLL_MAX_P, p));
}

void
se_hll_add(uint8 *regs, int p, uint64 h)
{
	uint64		idx = h >> (64 - p);
	uint64		w = (h << p) | (UINT64CONST(1) << (p - 1));
	uint8		rank = (uint8) (__builtin_clzll(w) + 1);

	if (rank > regs[idx])
		regs[idx] = rank;
}

double
se_hll_raw(const uint8 *regs, int p, int *zeros)
{
	int			m = 1 << p;
	double		sum = 0;
	int			z = 0;
	int			i;

	for (i = 0; i < m; i++)
	{
		sum += ldexp(1.0, -regs[i]);
		z += regs[i] == 0;
	}
	*zeros = z;
	return se_hll_alpha(p) * m * (double) m / sum;
}

/* Flajolet et al.'s constant alpha_m of the raw estimate */
double
se_hll_alpha(int p)
{
	int			m = 1 << p;

	return m == 16 ? 0.673 : m == 32 ? 0.697 : m == 64 ? 0.709 :
		0.7213 / (1.0 + 1.079 / m);
}

/* The bias of raw estimate e from table t: linear between its points. */
static double
bias_at(const SeHllBias *t, double e)
{
	int			lo = 0,
				hi = t->n - 1;

	if (e <= t->raw[0])
		return t->bias[0];
	if (e >= t->raw[t->n - 1])
		return t->bias[t->n - 1];
	while (hi - lo > 1)
	{
		int			mid = (lo + hi) / 2;

		if (t->raw[mid] <= e)
			lo = mid;
		else
			hi = mid;
	}
	return t->bias[lo] + (t->bias[hi] - t->bias[lo]) *
		(e - t->raw[lo]) / (t->raw[hi] - t->raw[lo]);
}

double
se_hll_estimate_with(const uint8 *regs, int p, const SeHllBias *t)
{
	int			zeros;
	double		e = se_hll_raw(regs, p, &zeros);

	return se_hll_estimate_raw(e, zeros, p, t);
}

double
se_hll_estimate_raw(double e, int zeros, int p, const SeHllBias *t)
{
	double		m = (double) (1 << p);
	double		lc;

	if (t == NULL)
	{
		/* HLL: its small-range correction only */
		if (e <= 2.5 * m && zeros > 0)
			e = m * log(m / zeros);
		return e;
	}
	if (e <= 5 * m)
		e = Max(0.0, e - bias_at(t, e));
	if (zeros > 0 && (lc = m * log(m / zeros)) <= t->lc_threshold)
		return lc;
	return e;
}

#ifndef SE_HLL_GENERATOR
int64
se_hll_estimate(const uint8 *regs, int p)
{
	const SeHllBias *t = &se_hll_bias[p - SE_HLL_MIN_P];

	return (int64) llround(se_hll_estimate_with(regs, p, t));
}
#endif
