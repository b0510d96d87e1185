/* Log-linear latency histogram (HdrHistogram's layout, fixed precision).
 *
 * Values below 128 ns get one bucket each; above, every power of two is cut
 * into 128 equal buckets, so a bucket is at most 1/128 (0.78 %) of its lower
 * bound wide. Percentiles report the upper bound of the bucket holding the
 * rank, clamped to the exact min/max: never below the true value, at most
 * 0.78 % above. 2^40 ns (18 min) is the top; larger values land in the last
 * bucket (max stays exact). Histograms merge by adding counts. */
#ifndef CNFPERF_HIST_H
#define CNFPERF_HIST_H

#include <stdint.h>

#include "clock.h" /* u128 */

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_TOP_BITS 40
#define HIST_BUCKETS ((HIST_TOP_BITS - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t count, min, max, sum;
	u128 sumsq;
	uint64_t bucket[HIST_BUCKETS];
};

static inline unsigned hist_index(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	if (v >> HIST_TOP_BITS)
		v = (UINT64_C(1) << HIST_TOP_BITS) - 1;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return (e - HIST_SUB_BITS + 1) * HIST_SUB + (unsigned)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* n samples of value v: exactly what n calls of hist_add(h, v) leave */
static inline void hist_add_n(struct hist *h, uint64_t v, uint64_t n)
{
	h->bucket[hist_index(v)] += n;
	h->count += n;
	h->sum += v * n;
	h->sumsq += (u128)v * v * n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	hist_add_n(h, v, 1);
}

/* Samples on their way into a histogram, a run of equal values at a time.
 * A receiver reads its clock once per burst and a sender stamps a burst
 * once, so the frames of one burst mostly share one latency: adding them as
 * one (hist_add_n) costs one compare per frame, not a bucket index, a 128-bit
 * square and two compares. The histogram is exact once hist_run_flush() has
 * run: flush before reading it. */
struct hist_run {
	uint64_t v, n;            /* n samples of value v not yet added */
};

static inline void hist_run_flush(struct hist *h, struct hist_run *run)
{
	if (run->n)
		hist_add_n(h, run->v, run->n);
	run->n = 0;
}

static inline void hist_run_add(struct hist *h, struct hist_run *run, uint64_t v)
{
	if (__builtin_expect(v == run->v, 1)) {   /* n == 0 too: then v is its first */
		run->n++;
		return;
	}
	hist_run_flush(h, run);
	run->v = v;
	run->n = 1;
}

void hist_reset(struct hist *h);
void hist_merge(struct hist *into, const struct hist *from);
void hist_bounds(unsigned idx, uint64_t *lo, uint64_t *hi); /* inclusive */
uint64_t hist_percentile(const struct hist *h, double p);   /* p in (0, 100] */
double hist_mean(const struct hist *h);
double hist_stddev(const struct hist *h);

#endif
