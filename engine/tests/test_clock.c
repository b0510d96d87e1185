/* The TSC mapping follows CLOCK_MONOTONIC closely, before and after re-anchoring. */
#include <stdlib.h>

#include "check.h"
#include "../src/core/clock.h"

/* The tightest of a few rdtsc brackets around clock_gettime: one bare read
 * pair is off by however long the thread was preempted between the two
 * (tens of us on a busy VM), which is not the clock's error. */
static int64_t offset(const struct clock *c)
{
	uint64_t best = UINT64_MAX;
	int64_t off = 0;

	for (int i = 0; i < 7; i++) {
		uint64_t a = clock_ticks();
		uint64_t m = mono_ns();
		uint64_t b = clock_ticks();
		if (b - a < best) {
			best = b - a;
			off = (int64_t)(clock_ns(c, a + (b - a) / 2) - m);
		}
	}
	return off;
}

/* Calibrated over a short interval (an engine's ports open in ~1 ms): made
 * up to CLOCK_MIN_SPAN_NS, and as close to CLOCK_MONOTONIC as the long one. */
static void short_span(void)
{
	struct clock c;
	struct timespec ports = { 0, 1000 * 1000 };

	uint64_t t0 = mono_ns();
	clock_begin(&c);
	nanosleep(&ports, NULL);
	clock_end(&c);
	uint64_t took = mono_ns() - t0;
	CHECK(took >= CLOCK_MIN_SPAN_NS, "short calibration spans at least %u ns: %llu",
	      CLOCK_MIN_SPAN_NS, (unsigned long long)took);
	CHECK(took < CLOCK_INIT_SPAN_NS, "short calibration is shorter than clock_init: %llu ns",
	      (unsigned long long)took);
	if (!clock_uses_tsc)
		return;
	CHECK(c.hz >= 100000000, "short: plausible tick rate %llu", (unsigned long long)c.hz);
	int64_t o1 = offset(&c);
	CHECK(llabs(o1) < 2000, "short: just calibrated: %lld ns off", (long long)o1);
	struct timespec gap = { 0, 300 * 1000 * 1000 };
	nanosleep(&gap, NULL);
	int64_t o2 = offset(&c);
	CHECK(llabs(o2) < 5000, "short: after 300 ms: %lld ns off", (long long)o2);
	clock_reanchor(&c);
	int64_t o3 = offset(&c);
	CHECK(llabs(o3) < 1000, "short: re-anchored: %lld ns off", (long long)o3);
	printf("short calibration (%llu us): offsets %lld %lld %lld ns\n",
	       (unsigned long long)took / 1000, (long long)o1, (long long)o2, (long long)o3);
}

int main(void)
{
	struct clock c;

	short_span();
	clock_init(&c);
	printf("clock: %s, %llu ticks/s\n", clock_uses_tsc ? "tsc" : "clock_gettime", (unsigned long long)c.hz);
	CHECK(c.hz >= 100000000, "plausible tick rate %llu", (unsigned long long)c.hz);
	int64_t o1 = offset(&c);
	CHECK(llabs(o1) < 2000, "just calibrated: %lld ns off", (long long)o1);

	struct timespec gap = { 0, 300 * 1000 * 1000 };
	nanosleep(&gap, NULL);
	int64_t o2 = offset(&c);
	CHECK(llabs(o2) < 5000, "after 300 ms: %lld ns off", (long long)o2);
	clock_reanchor(&c);
	int64_t o3 = offset(&c);
	CHECK(llabs(o3) < 1000, "re-anchored: %lld ns off", (long long)o3);
	printf("offsets: %lld %lld %lld ns\n", (long long)o1, (long long)o2, (long long)o3);

	uint64_t a = clock_ticks(), b = clock_ticks();
	CHECK(b >= a, "ticks do not go back");
	CHECK(clock_s_to_ticks(&c, 1.0) == c.hz, "1 s in ticks");
	CHECK(clock_ns(&c, c.tick0 - c.hz) < c.ns0, "ticks before the anchor map backwards");
	return check_done("clock");
}
