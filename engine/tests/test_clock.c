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

/* A calibrated clock stays close to CLOCK_MONOTONIC: at once, 300 ms later,
 * and re-anchored. `what` names the calibration in the messages. */
static void follows(struct clock *c, const char *what)
{
	CHECK(c->hz >= 100000000, "%s: plausible tick rate %llu", what, (unsigned long long)c->hz);
	int64_t o1 = offset(c);
	CHECK(llabs(o1) < 2000, "%s: just calibrated: %lld ns off", what, (long long)o1);
	struct timespec gap = { 0, 300 * 1000 * 1000 };
	nanosleep(&gap, NULL);
	int64_t o2 = offset(c);
	CHECK(llabs(o2) < 5000, "%s: after 300 ms: %lld ns off", what, (long long)o2);
	clock_reanchor(c);
	int64_t o3 = offset(c);
	CHECK(llabs(o3) < 1000, "%s: re-anchored: %lld ns off", what, (long long)o3);
	printf("%s: offsets %lld %lld %lld ns\n", what, (long long)o1, (long long)o2, (long long)o3);
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
	printf("short calibration: %llu us\n", (unsigned long long)took / 1000);
	follows(&c, "short");
}

int main(void)
{
	struct clock c;

	short_span();
	clock_init(&c);
	printf("clock: %s, %llu ticks/s\n", clock_uses_tsc ? "tsc" : "clock_gettime", (unsigned long long)c.hz);
	follows(&c, "clock_init");

	uint64_t a = clock_ticks(), b = clock_ticks();
	CHECK(b >= a, "ticks do not go back");
	CHECK(clock_s_to_ticks(&c, 1.0) == c.hz, "1 s in ticks");
	CHECK(clock_ns(&c, c.tick0 - c.hz) < c.ns0, "ticks before the anchor map backwards");
	return check_done("clock");
}
