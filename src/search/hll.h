/*-------------------------------------------------------------------------
 *
 * hll.h
 *	  HyperLogLog++ registers and estimate for the cardinality aggregation
 *	  (hll.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SE_HLL_H
#define SE_HLL_H

#define SE_HLL_MIN_P	4
#define SE_HLL_MAX_P	18

/* The 64-bit hash of a value's bytes that the registers take. */
extern uint64 se_hll_hash(const void *v, int len);
/* ES's precision for a precision_threshold (HyperLogLogPlusPlus.precisionFromThreshold) */
extern int	se_hll_precision(int64 threshold);
/* Register of 64-bit hash h (never 0) among the 2^p of regs. */
extern void se_hll_add(uint8 *regs, int p, uint64 h);
/* HLL's raw estimate alpha m^2 / sum 2^-reg; *zeros gets the empty registers. */
extern double se_hll_raw(const uint8 *regs, int p, int *zeros);
extern double se_hll_alpha(int p);

/*
 * An empirical bias table of one precision: at the mean raw estimates
 * raw[0..n) (ascending) the mean bias (raw estimate - true count), and
 * the count below which linear counting is the better estimate.
 */
typedef struct SeHllBias
{
	int			n;
	const double *raw;
	const double *bias;
	double		lc_threshold;
} SeHllBias;

/* HLL++'s estimate with table t (NULL: no bias correction, HLL's). */
extern double se_hll_estimate_with(const uint8 *regs, int p, const SeHllBias *t);
/* ... from the raw estimate and the number of empty registers */
extern double se_hll_estimate_raw(double raw, int zeros, int p, const SeHllBias *t);
/* ... with the committed tables (hll_bias.h, from test/unit/gen_hll_bias.c) */
extern int64 se_hll_estimate(const uint8 *regs, int p);

#endif							/* SE_HLL_H */
