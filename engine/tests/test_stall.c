/* Stall accounting (core/stall.h) on made-up ticks: gaps above the threshold
 * count only in the window, a chosen sleep restarts the gap, a receiver keeps
 * what counted as of its last measured frames, two threads' sums merge. */
#include "check.h"
#include "../src/core/stall.h"

/* a loop polling every `step` ticks from `from` to `to`: the tick after */
static uint64_t spin(struct stalls *s, uint64_t from, uint64_t to, uint64_t step)
{
	for (uint64_t t = from; t < to; t += step)
		stalls_see(s, t);
	return to;
}

static void window(void)
{
	struct stalls s;

	stalls_init(&s, 200);
	CHECK(s.pollers == 1 && !s.on && !s.live.count, "starts empty, closed");
	s.last = 1000;
	uint64_t t = spin(&s, 1000, 5000, 10);
	stalls_see(&s, t + 5000);   /* a stall before the window: not counted */
	CHECK(s.live.count == 0 && s.live.total == 0, "closed window: %llu", (unsigned long long)s.live.count);
	s.on = true;
	t = spin(&s, t + 5000, t + 9000, 10);
	CHECK(s.live.count == 0, "gaps of 10 are no stalls");
	stalls_see(&s, s.last + 200);
	CHECK(s.live.count == 0, "a gap of exactly the threshold is none");
	stalls_see(&s, s.last + 201);
	stalls_see(&s, s.last + 1000);
	stalls_see(&s, s.last + 300);
	CHECK(s.live.count == 3 && s.live.total == 1501 && s.live.max == 1000, "three: %llu %llu %llu",
	      (unsigned long long)s.live.count, (unsigned long long)s.live.total,
	      (unsigned long long)s.live.max);
	/* a sleep of 10000 it chose: the gap starts again when it wakes */
	uint64_t woke = s.last + 10000;
	stalls_woke(&s, woke);
	stalls_see(&s, woke + 50);
	CHECK(s.live.count == 3, "a chosen sleep is no stall");
	s.on = false;
	stalls_see(&s, s.last + 5000);
	CHECK(s.live.count == 3 && s.live.max == 1000, "closed again");
}

static void receiver(void)
{
	struct stalls s;

	stalls_init(&s, 100);
	s.on = true;
	s.last = 10;
	stalls_see(&s, 500);      /* a stall, then measured frames */
	stalls_keep(&s);
	CHECK(s.kept.count == 1 && s.kept.total == 490, "kept with the frames");
	stalls_see(&s, 5000);     /* the idle tail: no measured frames after it */
	CHECK(s.live.count == 2 && s.kept.count == 1 && s.kept.max == 490, "the tail is not kept");
	stalls_keep(&s);
	CHECK(s.kept.count == 2 && s.kept.max == 4500, "unless frames follow");
}

static void merge(void)
{
	struct stalls a, b;

	stalls_init(&a, 100);
	stalls_init(&b, 100);
	a.kept = (struct stall_sum){ 2, 900, 600 };
	b.kept = (struct stall_sum){ 1, 700, 700 };
	stalls_merge(&a, &b);
	CHECK(a.kept.count == 3 && a.kept.total == 1600 && a.kept.max == 700 && a.pollers == 2, "merged");
	b.pollers = 0;
	b.kept = (struct stall_sum){ 0, 0, 0 };
	stalls_merge(&a, &b);
	CHECK(a.pollers == 2 && a.kept.count == 3, "a loop that is none adds nothing");
}

int main(void)
{
	window();
	receiver();
	merge();
	return check_done("stall");
}
