/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Clocks, percentiles and the progress bar.
 *
 * The progress bar is one stderr line redrawn with '\r'; by default only
 * when stderr is a terminal (--progress always forces it, e.g. for a log
 * that is read with `tail`).
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"

double
lg_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

void
lg_sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0)
		;
}

int
lg_cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Percentile p (0..100) of n sorted values, interpolating between ranks. */
double
lg_percentile(const double *sorted, long n, double p)
{
	double		rank;
	long		lo;

	if (n <= 0)
		return NAN;
	rank = p / 100.0 * (double) (n - 1);
	lo = (long) floor(rank);
	if (lo >= n - 1)
		return sorted[n - 1];
	return sorted[lo] + (rank - (double) lo) * (sorted[lo + 1] - sorted[lo]);
}

bool
lg_progress_enabled(void)
{
	if (lg_opts.progress == LG_PROGRESS_NEVER || lg_opts.quiet)
		return false;
	if (lg_opts.progress == LG_PROGRESS_ALWAYS)
		return true;
	return isatty(STDERR_FILENO);
}

/* 1234567 -> "1.23M" */
char *
lg_fmt_count(double v, char *buf, size_t size)
{
	if (v >= 1e9)
		snprintf(buf, size, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, size, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, size, "%.1fk", v / 1e3);
	else
		snprintf(buf, size, "%.0f", v);
	return buf;
}

/*
 * Draw "label [#####.....]  45.0%  1.23M/2.70M docs  35.1k/s  extra".
 * total <= 0 draws a bar without a known end.
 */
void
lg_progress_draw(const char *label, double done, double total, const char *unit,
				 double rate, const char *extra)
{
	char		bar[31];
	char		a[16],
				b[16],
				r[16];
	double		frac = total > 0 ? done / total : 0;
	int			filled,
				i;

	if (!lg_progress_enabled())
		return;
	if (frac > 1)
		frac = 1;
	filled = (int) (frac * 30);
	for (i = 0; i < 30; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[30] = '\0';
	if (total > 0)
		fprintf(stderr, "\r%-8s [%s] %5.1f%% %s/%s %s %s/s %s\033[K", label, bar, frac * 100,
				lg_fmt_count(done, a, sizeof(a)), lg_fmt_count(total, b, sizeof(b)), unit,
				lg_fmt_count(rate, r, sizeof(r)), extra ? extra : "");
	else
		fprintf(stderr, "\r%-8s %s %s %s/s %s\033[K", label, lg_fmt_count(done, a, sizeof(a)),
				unit, lg_fmt_count(rate, r, sizeof(r)), extra ? extra : "");
	fflush(stderr);
}

void
lg_progress_end(void)
{
	if (!lg_progress_enabled())
		return;
	fputc('\n', stderr);
	fflush(stderr);
}
