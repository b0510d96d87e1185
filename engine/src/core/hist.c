#include "hist.h"

#include <math.h>
#include <string.h>

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_merge(struct hist *into, const struct hist *from)
{
	if (!from->count)
		return;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->bucket[i] += from->bucket[i];
	into->count += from->count;
	into->sum += from->sum;
	into->sumsq += from->sumsq;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

void hist_bounds(unsigned idx, uint64_t *lo, uint64_t *hi)
{
	if (idx < HIST_SUB) {
		*lo = *hi = idx;
		return;
	}
	unsigned e = idx / HIST_SUB + HIST_SUB_BITS - 1;
	uint64_t width = UINT64_C(1) << (e - HIST_SUB_BITS);

	*lo = (uint64_t)(HIST_SUB + idx % HIST_SUB) * width;
	*hi = *lo + width - 1;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (!h->count)
		return 0;
	/* rank of the smallest sample with at least p % of samples at or below it */
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count - 1e-9);
	uint64_t seen = 0;

	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t lo, hi;
			hist_bounds(i, &lo, &hi);
			if (hi > h->max)
				hi = h->max;
			return hi < h->min ? h->min : hi;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double hist_stddev(const struct hist *h)
{
	if (h->count < 2)
		return 0.0;
	long double n = (long double)h->count;
	long double mean = (long double)h->sum / n;
	long double var = (long double)h->sumsq / n - mean * mean;
	return var > 0 ? (double)sqrtl(var) : 0.0;
}
