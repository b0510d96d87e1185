/* Histogram percentiles against exactly computed ones, bucket layout, merge. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/core/hist.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* the definition hist_percentile promises: the smallest sample with at least
 * p % of all samples at or below it */
static uint64_t exact(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
	return sorted[(rank ? rank : 1) - 1];
}

static uint64_t rnd64(void)
{
	return (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand();
}

static void layout(void)
{
	uint64_t prev_hi = 0, lo, hi;

	hist_bounds(0, &lo, &hi);
	CHECK(lo == 0 && hi == 0, "bucket 0");
	for (unsigned i = 1; i < HIST_BUCKETS; i++) {
		hist_bounds(i - 1, &lo, &prev_hi);
		hist_bounds(i, &lo, &hi);
		CHECK(lo == prev_hi + 1, "bucket %u starts where %u ends", i, i - 1);
		CHECK((double)(hi - lo + 1) <= (double)lo / 128.0 + 1, "bucket %u narrower than 1/128", i);
		CHECK(hist_index(lo) == i && hist_index(hi) == i, "index of bounds of bucket %u", i);
	}
	CHECK(hi >= 10ull * 1000 * 1000 * 1000, "covers 10 s (top %llu)", (unsigned long long)hi);
	CHECK(hist_index(UINT64_MAX) == HIST_BUCKETS - 1, "huge values land in the last bucket");
}

static void percentiles(size_t n, int shape)
{
	uint64_t *v = malloc(n * sizeof(*v));
	struct hist *h = malloc(sizeof(*h)), *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	static const double ps[] = { 0.001, 1, 25, 50, 90, 99, 99.9, 99.99, 100 };
	long double sum = 0, sq = 0;

	hist_reset(h);
	hist_reset(a);
	hist_reset(b);
	for (size_t i = 0; i < n; i++) {
		switch (shape) {
		case 0: v[i] = 1 + rnd64() % 200; break;                                       /* small, exact buckets */
		case 1: v[i] = (uint64_t)exp(log(1.0) + (double)rand() / RAND_MAX * log(1e10)); break; /* 1 ns .. 10 s */
		default: v[i] = 20000 + rnd64() % 5000 + (i % 1000 == 0 ? 5000000 : 0); break; /* tail */
		}
		hist_add(h, v[i]);
		hist_add(i % 2 ? a : b, v[i]);
		sum += v[i];
		sq += (long double)v[i] * v[i];
	}
	qsort(v, n, sizeof(*v), cmp);
	for (unsigned k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
		uint64_t want = exact(v, n, ps[k]), got = hist_percentile(h, ps[k]);
		CHECK(got >= want && (double)got <= (double)want * (1 + 1.0 / 128) + 1,
		      "shape %d n %zu p%g: got %llu, exact %llu", shape, n, ps[k], (unsigned long long)got,
		      (unsigned long long)want);
	}
	CHECK(h->min == v[0] && h->max == v[n - 1], "exact min/max");
	CHECK(hist_percentile(h, 100) == v[n - 1], "p100 is the max");
	double mean = (double)(sum / n);
	CHECK(fabs(hist_mean(h) - mean) <= 1e-9 * mean + 1e-9, "mean");
	double sd = (double)sqrtl(sq / n - (sum / n) * (sum / n));
	CHECK(fabs(hist_stddev(h) - sd) <= 1e-6 * sd + 1e-6, "stddev %f vs %f", hist_stddev(h), sd);

	hist_merge(a, b);
	CHECK(a->count == h->count && a->min == h->min && a->max == h->max && a->sum == h->sum, "merge totals");
	CHECK(!memcmp(a->bucket, h->bucket, sizeof(h->bucket)), "merged buckets equal the whole");
	free(v);
	free(h);
	free(a);
	free(b);
}

/* hist_run_add() (runs of equal values added as one) then hist_run_flush()
 * leaves exactly what hist_add() of every sample leaves: runs of every
 * length, a value that comes back after another, 0 first (the run's
 * starting value), values past the top. */
static void runs(void)
{
	struct hist *one = malloc(sizeof(*one)), *batched = malloc(sizeof(*batched));
	struct hist_run run = { 0 };
	uint64_t v = 0;

	hist_reset(one);
	hist_reset(batched);
	for (int i = 0; i < 200000; i++) {
		int r = rand() % 100;
		if (r < 10)
			v = (uint64_t)rand() % 200;            /* below and around HIST_SUB */
		else if (r < 20)
			v = (uint64_t)rand() * 977;            /* microseconds to seconds */
		else if (r == 20)
			v = UINT64_C(1) << 50;                 /* past the top bucket */
		hist_add(one, v);                              /* else: the same value again */
		hist_run_add(batched, &run, v);
	}
	hist_run_flush(batched, &run);
	CHECK(run.n == 0, "nothing left pending after a flush");
	CHECK(one->count == batched->count && one->sum == batched->sum && one->sumsq == batched->sumsq &&
	      one->min == batched->min && one->max == batched->max, "batched totals equal one by one");
	CHECK(!memcmp(one->bucket, batched->bucket, sizeof(one->bucket)), "batched buckets equal one by one");
	hist_run_flush(batched, &run);
	CHECK(one->count == batched->count, "a second flush adds nothing");
	hist_reset(batched);
	hist_add_n(batched, 5000, 3);
	CHECK(batched->count == 3 && batched->sum == 15000 && batched->sumsq == (u128)75000000 &&
	      batched->min == 5000 && batched->max == 5000 && batched->bucket[hist_index(5000)] == 3,
	      "hist_add_n: three samples of one value");
	free(one);
	free(batched);
}

int main(void)
{
	srand(11);
	layout();
	runs();
	struct hist *h = malloc(sizeof(*h));
	hist_reset(h);
	CHECK(hist_percentile(h, 50) == 0 && hist_mean(h) == 0, "empty histogram");
	hist_add(h, 1234567);
	CHECK(hist_percentile(h, 50) == 1234567 && hist_percentile(h, 99.99) == 1234567, "single sample exact");
	free(h);
	for (int shape = 0; shape < 3; shape++) {
		percentiles(1, shape);
		percentiles(7, shape);
		percentiles(1000, shape);
		percentiles(100000, shape);
	}
	return check_done("hist");
}
