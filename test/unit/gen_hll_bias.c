/* SOURCES: src/search/hll.c */
/*-------------------------------------------------------------------------
 *
 * gen_hll_bias.c
 *	  Measures HyperLogLog's raw-estimate bias and the linear counting
 *	  thresholds by simulation, and writes them as src/search/hll_bias.h.
 *
 * For each precision p (m = 2^p registers) the program adds uniformly
 * random 64-bit hashes (splitmix64 from a fixed seed, so the output is
 * reproducible) to empty registers, trial after trial, and at NPOINTS true
 * counts n from 0 to 5.5 m records HLL's raw estimate (kept incrementally:
 * the sum of 2^-register and the empty registers change with one register
 * at a time).  The table holds, per count, the mean raw estimate over the
 * trials and the mean bias (raw - n); hll.c interpolates the bias at a raw
 * estimate linearly between these points (HLL++ used a 6-nearest-neighbour
 * mean over its points; with the means taken first the curve is smooth
 * enough for straight lines).
 *
 * Then, with another seed, it measures per count the mean absolute error
 * of linear counting (m ln(m / empty registers)) and of the bias-corrected
 * raw estimate, and takes as the threshold the first count where linear
 * counting's error exceeds the corrected estimate's at every larger count:
 * below it hll.c uses linear counting.
 *
 *   make -C test/unit -f Makefile.bench hll_bias    (writes the header)
 *
 *-------------------------------------------------------------------------
 */
#include "util/se_common.h"

#include <math.h>

#include "search/hll.h"

#define NPOINTS		96
#define SPAN		5.5			/* counts up to SPAN * m */
#define ADDS		(1 << 26)	/* hashes added per precision and pass (about) */

static uint64 rng_state;

static uint64
splitmix64(void)
{
	uint64		z = (rng_state += UINT64CONST(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

typedef struct Regs
{
	int			p;
	uint8	   *r;
	double		sum;			/* of 2^-r[i] */
	int			zeros;
} Regs;

static void
regs_reset(Regs *g)
{
	memset(g->r, 0, (size_t) 1 << g->p);
	g->sum = (double) (1 << g->p);
	g->zeros = 1 << g->p;
}

static void
regs_add(Regs *g, uint64 h)
{
	uint64		idx = h >> (64 - g->p);
	uint8		old = g->r[idx];

	if (h == 0)
		h = 1;
	se_hll_add(g->r, g->p, h);
	if (g->r[idx] != old)
	{
		g->sum += ldexp(1.0, -g->r[idx]) - ldexp(1.0, -old);
		g->zeros -= old == 0;
	}
}

static double
regs_raw(const Regs *g)
{
	double		m = (double) (1 << g->p);

	return se_hll_alpha(g->p) * m * m / g->sum;
}

int
main(void)
{
	int			p;

	printf("/*\n * hll_bias.h: HyperLogLog raw-estimate bias and linear counting thresholds,\n"
		   " * measured by test/unit/gen_hll_bias.c (do not edit; rerun it):\n"
		   " * %d counts from 0 to %.1f m per precision, about 2^26 hashes per precision.\n */\n",
		   NPOINTS, SPAN);
	for (p = SE_HLL_MIN_P; p <= SE_HLL_MAX_P; p++)
	{
		int			m = 1 << p;
		long		counts[NPOINTS];
		double		raw[NPOINTS],
					bias[NPOINTS],
					lc_err[NPOINTS],
					e_err[NPOINTS];
		int			npts = 0;
		int			trials = Max(64, (int) (ADDS / (SPAN * m)));
		Regs		g;
		SeHllBias	t;
		double		threshold;
		int			i,
					k,
					n;

		/* the counts, distinct */
		for (i = 0; i < NPOINTS; i++)
		{
			long		c = lround(i * SPAN * m / (NPOINTS - 1));

			if (npts == 0 || c > counts[npts - 1])
				counts[npts++] = c;
		}
		g.p = p;
		g.r = palloc((size_t) m);
		memset(raw, 0, sizeof(raw));
		memset(bias, 0, sizeof(bias));
		rng_state = UINT64CONST(0x5EA2C4E11) + p;
		for (k = 0; k < trials; k++)
		{
			long		c = 0;

			regs_reset(&g);
			for (i = 0; i < npts; i++)
			{
				for (; c < counts[i]; c++)
					regs_add(&g, splitmix64());
				raw[i] += regs_raw(&g) / trials;
				bias[i] += (regs_raw(&g) - counts[i]) / trials;
			}
		}
		/* keep the points whose mean raw estimate ascends */
		for (i = 1, n = 1; i < npts; i++)
			if (raw[i] > raw[n - 1])
			{
				raw[n] = raw[i];
				bias[n] = bias[i];
				counts[n] = counts[i];
				n++;
			}
		npts = n;
		t.n = npts;
		t.raw = raw;
		t.bias = bias;
		t.lc_threshold = -1;	/* never linear counting: the corrected raw */

		/* errors of both estimates, with other hashes */
		memset(lc_err, 0, sizeof(lc_err));
		memset(e_err, 0, sizeof(e_err));
		rng_state = UINT64CONST(0xC0FFEE) * (p + 1);
		for (k = 0; k < trials; k++)
		{
			long		c = 0;

			regs_reset(&g);
			for (i = 0; i < npts; i++)
			{
				double		lc;

				for (; c < counts[i]; c++)
					regs_add(&g, splitmix64());
				lc = g.zeros > 0 ? m * log((double) m / g.zeros) : HUGE_VAL;
				lc_err[i] += fabs(lc - counts[i]) / trials;
				e_err[i] += fabs(se_hll_estimate_raw(regs_raw(&g), g.zeros, p, &t) -
								 counts[i]) / trials;
			}
		}
		/* the last count from which on linear counting is always worse */
		threshold = counts[npts - 1];
		for (i = npts - 1; i >= 1 && lc_err[i] > e_err[i]; i--)
			threshold = counts[i - 1];

		printf("\n/* p = %d: %d trials; threshold %.0f (linear counting below) */\n",
			   p, trials, threshold);
		printf("static const double se_hll_raw_%d[%d] = {", p, npts);
		for (i = 0; i < npts; i++)
			printf("%s%.10g", i == 0 ? "\n\t" : i % 6 ? ", " : ",\n\t", raw[i]);
		printf("\n};\nstatic const double se_hll_bias_%d[%d] = {", p, npts);
		for (i = 0; i < npts; i++)
			printf("%s%.10g", i == 0 ? "\n\t" : i % 6 ? ", " : ",\n\t", bias[i]);
		printf("\n};\n#define SE_HLL_LC_%d %.0f\n", p, threshold);
		fprintf(stderr, "p=%d trials=%d points=%d threshold=%.0f bias@m=%.4g%% bias@2.5m=%.4g%% bias@4m=%.4g%%\n",
				p, trials, npts, threshold,
				100 * bias[npts * 2 / 11] / counts[npts * 2 / 11],
				100 * bias[npts * 5 / 11] / counts[npts * 5 / 11],
				100 * bias[npts * 8 / 11] / counts[npts * 8 / 11]);
		pfree(g.r);
	}
	printf("\nstatic const SeHllBias se_hll_bias[] = {\n");
	for (p = SE_HLL_MIN_P; p <= SE_HLL_MAX_P; p++)
		printf("\t{lengthof(se_hll_raw_%d), se_hll_raw_%d, se_hll_bias_%d, SE_HLL_LC_%d},\n",
			   p, p, p, p);
	printf("};\n");
	return 0;
}
