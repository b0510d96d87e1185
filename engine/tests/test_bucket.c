/* Token buckets (core/bucket.h) on made-up times: a policer passing exactly
 * the conforming frames of an on/off stream, the shaper's queue, delays and
 * drops, and a receiver's conformance (sigma, exceeded). 1 tick = 1 ns. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/core/bucket.h"

#define HZ 1000000000ull
#define MS 1000000ull

/* 64 frames back to back every 100 ms (640 pps on average), against a
 * policer of 200 pps and 16 frames: between two clumps 20 tokens come back,
 * more than the bucket holds, so each clump finds it full and exactly 16 of
 * its frames pass, also when a clump arrives in two rx bursts 10 us apart
 * (0.002 tokens meanwhile). */
static void policer_onoff(void)
{
	struct bucket b;
	unsigned passed = 0, first = 0;

	bucket_init(&b, 200, 16, HZ);
	for (unsigned period = 0; period < 10; period++) {
		uint64_t t = 5 * MS + period * 100 * MS;
		unsigned k = bucket_pass(&b, t, 32) + bucket_pass(&b, t + 10000, 32);
		if (!period)
			first = k;
		passed += k;
	}
	CHECK(first == 16, "the first clump: %u of 64 pass", first);
	CHECK(passed == 160, "10 clumps of 64: %u pass, want 160", passed);

	/* a bucket that does not refill between clumps: 100 pps, 16 frames, a clump
	 * every 100 ms passes 10 (the tokens of 100 ms) after the first's 16 */
	bucket_init(&b, 100, 16, HZ);
	passed = 0;
	for (unsigned period = 0; period < 5; period++)
		passed += bucket_pass(&b, period * 100 * MS, 64);
	CHECK(passed == 16 + 4 * 10, "refilled by the rate: %u, want 56", passed);
}

static void steady_and_exact(void)
{
	struct bucket b;
	unsigned passed = 0, sent = 0;

	/* below the rate, nothing is dropped, a bucket of 1 included */
	bucket_init(&b, 1000, 1, HZ);
	for (uint64_t t = 0; t < 1000 * MS; t += MS + 1, sent++)
		passed += bucket_pass(&b, t, 1);
	CHECK(passed == sent, "steady below the rate: %u of %u", passed, sent);

	/* an unpaced stream gets the rate exactly over time, fractions and all */
	bucket_init(&b, 3e6 / 7, 1, 2400000000ull);   /* 5600 ticks a frame */
	passed = 0;
	for (uint64_t t = 0; t < 240000000ull; t += 100)
		passed += bucket_pass(&b, t, 4);
	CHECK(passed >= 42857 && passed <= 42858, "long-run rate: %u in 0.1 s at 428571 pps", passed);
	CHECK(bucket_due(&b) >= 240000000ull - 100, "next token after the last frame");
}

static void shaper_queue(void)
{
	struct shaper s;
	uint8_t frame[64] = { 1, 2, 3 };
	unsigned out = 0;

	CHECK(shaper_init(&s, 1000, 2, 8, 1518, HZ) == 0, "init");
	for (int i = 0; i < 10; i++) {
		frame[10] = (uint8_t)i;
		shaper_in(&s, frame, 64, 0);
	}
	CHECK(s.n == 8 && s.dropped == 2, "a queue of 8: %u queued, %llu dropped", s.n,
	      (unsigned long long)s.dropped);
	unsigned k = shaper_ready(&s, 0, 32);
	CHECK(k == 2, "a bucket of 2 lets 2 go at once: %u", k);
	uint16_t len;
	const uint8_t *f = shaper_peek(&s, 1, &len);
	CHECK(len == 64 && f[10] == 1, "the second frame, in order");
	shaper_done(&s, k, 0);
	out += k;
	CHECK(s.delayed == 0, "frames that left at once were not delayed");
	CHECK(shaper_ready(&s, MS / 2, 32) == 0, "none within a frame's time");
	CHECK(shaper_due(&s) == MS, "the next at 1 ms: %llu", (unsigned long long)shaper_due(&s));
	for (uint64_t t = MS; t <= 6 * MS; t += MS) {
		k = shaper_ready(&s, t, 32);
		CHECK(k == 1, "one per ms: %u at %llu", k, (unsigned long long)t);
		f = shaper_peek(&s, 0, &len);
		CHECK(f[10] == 2 + out - 2, "in order: frame %u", f[10]);
		shaper_done(&s, k, t);
		out += k;
	}
	CHECK(out == 8 && s.n == 0 && s.delayed == 6, "all out: %u, %llu delayed", out,
	      (unsigned long long)s.delayed);
	CHECK(s.delay_max == 6 * MS, "the longest wait: %llu", (unsigned long long)s.delay_max);
	CHECK(shaper_due(&s) == UINT64_MAX, "nothing queued, nothing due");
	CHECK(!shaper_in(&s, frame, 1519, 7 * MS) && s.dropped == 3, "larger than a slot: dropped");
	shaper_free(&s);
}

static void conformance(void)
{
	struct conformance c;

	/* one frame a ms at 1000 pps: a bucket of one frame */
	conformance_init(&c, 1000, 1, HZ);
	for (uint64_t t = 0; t < 100 * MS; t += MS)
		conformance_add(&c, t, 1);
	CHECK(c.sigma > 0.999 && c.sigma < 1.001 && c.exceeded == 0 && c.frames == 100,
	      "steady: sigma %.3f, %llu exceeded", c.sigma, (unsigned long long)c.exceeded);

	/* 10 frames every 10 ms, the same mean: sigma 10; a contract of 5 frames sees
	 * 5 of each clump exceed */
	conformance_init(&c, 1000, 5, HZ);
	for (uint64_t t = 0; t < 100 * MS; t += 10 * MS)
		conformance_add(&c, t, 10);
	CHECK(c.sigma > 9.999 && c.sigma < 10.001, "clumps: sigma %.3f", c.sigma);
	CHECK(c.exceeded == 50 && c.frames == 100, "beyond 5: %llu", (unsigned long long)c.exceeded);

	/* above the rate for long: sigma grows by what the rate does not drain */
	conformance_init(&c, 1000, 1000000, HZ);
	for (uint64_t t = 0; t < 1000 * MS; t += MS / 2)
		conformance_add(&c, t, 1);
	CHECK(c.sigma > 999 && c.sigma < 1002, "2000 pps held to 1000: sigma %.1f", c.sigma);
}

int main(void)
{
	policer_onoff();
	steady_and_exact();
	shaper_queue();
	conformance();
	return check_done("bucket");
}
