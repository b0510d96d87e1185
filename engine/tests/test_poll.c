/* The poller: the adaptive plans without sleeping (the back-off of 1, 2, 4
 * ... 128 us reset by traffic, the smoothed pace, sleeping up to a frame's due
 * time and yielding around it), what each mode counts, and the waiting modes'
 * arming and waiting on fake apis whose fds are eventfds already signalled,
 * so nothing waits long. */
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "../src/core/clock.h"
#include "../src/core/poll.h"

/* an empty poll's plan, with ticks in ns */
static struct poll_plan plan(struct poller *p, uint64_t now)
{
	return poller_plan(p, now, UINT64_MAX);
}

static void schedule(void)
{
	static const uint64_t want[] = { 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 128000, 128000 };
	struct poller p;
	struct poll_plan pl;

	for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		CHECK(poll_backoff_ns(k) == want[k], "sleep %u: %llu ns", k, (unsigned long long)poll_backoff_ns(k));
	CHECK(poll_backoff_ns(1000) == POLL_BACKOFF_MAX_NS, "capped");

	/* no data yet, nothing to wait on: spin 20 us, then the back-off, reset by traffic */
	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	uint64_t t = 5000;
	CHECK(plan(&p, t).act == POLL_SPIN, "first empty poll: spin");
	CHECK(plan(&p, t + POLL_SPIN_NS - 1).act == POLL_SPIN, "still spinning");
	t += POLL_SPIN_NS;
	for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		pl = plan(&p, t);
		CHECK(pl.act == POLL_SLEEP && pl.ns == want[k], "sleep %u after the spin: %d %llu", k, pl.act,
		      (unsigned long long)pl.ns);
		t += pl.ns;
	}
	poller_got(&p, t);
	CHECK(p.idle_since == 0 && p.backoff == 0 && p.s.polls == 1, "traffic resets");
	CHECK(p.arr[0].n == 1 && p.arr[0].gap == 0, "one arrival is no pace yet");
	CHECK(plan(&p, t).act == POLL_SPIN, "spins again after traffic");
	t += POLL_SPIN_NS;
	CHECK(plan(&p, t).ns == 1000, "and starts over at 1 us");
	/* back by until: a sleep ends what it overshoots (p.late) and POLL_MARGIN_NS before */
	p.late = 500;
	pl = poller_plan(&p, t, t + POLL_MARGIN_NS + 500 + 1500);
	CHECK(pl.act == POLL_SLEEP && pl.ns == 1500, "never past until, less its margin: %llu",
	      (unsigned long long)pl.ns);
	CHECK(poller_plan(&p, t, t + POLL_MARGIN_NS + 500 + 999).act == POLL_YIELD,
	      "no sleep shorter than 1 us: yield");
	CHECK(poller_plan(&p, t, t).act == POLL_YIELD && poller_plan(&p, t + 10, t).act == POLL_YIELD,
	      "until passed: no sleep");
	poller_free(&p);

	/* busy only counts */
	poller_init(&p, POLL_BUSY, 1000000000, NULL, NULL);
	for (int i = 0; i < 5; i++)
		poller_empty(&p, 100000 * (uint64_t)i, UINT64_MAX);
	poller_got(&p, 500000);
	CHECK(p.s.polls == 6 && p.s.empty_polls == 5 && !p.s.sleeps && !p.s.waits && !p.idle_since, "busy");
	CHECK(p.arr[0].n == 0, "busy keeps no pace");
	poller_free(&p);
}

/* The smoothing: a steady gap is learnt exactly, a jittered one with its
 * deviation, a pause is not a sample, a told rate seeds it. */
static void smoothing(void)
{
	struct arrivals a;

	arrivals_init(&a, 1000000000, 0);
	for (uint64_t t = 1000; t <= 1000 + 50 * 100000; t += 100000)
		arrivals_seen(&a, t);
	CHECK(a.gap == 100000 && a.dev < 1000 && a.n == 51, "steady 100 us: gap %llu dev %llu",
	      (unsigned long long)a.gap, (unsigned long long)a.dev);
	uint64_t t = a.last;
	for (int i = 0; i < 200; i++)
		arrivals_seen(&a, t += i % 2 ? 90000 : 110000);
	CHECK(a.gap > 95000 && a.gap < 105000 && a.dev > 5000 && a.dev < 15000, "+-10 us: gap %llu dev %llu",
	      (unsigned long long)a.gap, (unsigned long long)a.dev);
	arrivals_seen(&a, t += 2 * ARRIVALS_PAUSE_NS);
	CHECK(a.gap == 0, "a pause forgets an untold pace");

	arrivals_init(&a, 1000000000, 10000);
	CHECK(a.gap == 100000 && a.dev == 25000 && a.last == 0, "10 kpps told: 100 us before any frame");
	arrivals_seen(&a, 7000);
	arrivals_seen(&a, 7000 + 3 * ARRIVALS_PAUSE_NS);
	CHECK(a.gap == 100000, "after a pause, the told pace again");
	arrivals_seen(&a, 7000 + 3 * ARRIVALS_PAUSE_NS + 300000);
	CHECK(a.gap > 100000 && a.gap < 300000, "and samples move it: %llu", (unsigned long long)a.gap);
}

/* With a pace: sleep to shortly before the next frame, yield around its due
 * time, then fall back (back-off here: no fds). */
static void paced(void)
{
	struct poller p;
	struct poll_plan pl;

	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	uint64_t t = 1000000;
	for (int i = 0; i < 40; i++, t += 100000)
		poller_got(&p, t);
	t -= 100000;                                   /* the last frame came at t */
	CHECK(p.arr[0].gap == 100000, "steady 100 us learnt: %llu", (unsigned long long)p.arr[0].gap);
	pl = plan(&p, t + 3000);                       /* its burst handled, an empty poll */
	CHECK(pl.act == POLL_SLEEP && pl.ns < 100000 - 3000 && t + 3000 + pl.ns < t + 100000 &&
	      pl.ns > 80000, "a steady 100 us gap: sleep %llu ns, ending before the next frame",
	      (unsigned long long)pl.ns);
	uint64_t woke = t + 3000 + pl.ns;
	CHECK(plan(&p, woke).act == POLL_YIELD, "woken shortly before: yield");
	CHECK(plan(&p, t + 100000).act == POLL_YIELD, "at the due time: yield");
	pl = plan(&p, t + 100000 + 20000);
	CHECK(pl.act == POLL_SLEEP && pl.ns == POLL_BACKOFF_MIN_NS, "overdue: the back-off (%d)", pl.act);
	CHECK(plan(&p, t + 100000 + 21000).ns == 2000, "which grows");
	pl = poller_plan(&p, t + 3000, t + 50000);
	CHECK(pl.act == POLL_SLEEP && pl.ns == 47000 - POLL_MARGIN_NS - p.late, "never past until: %llu",
	      (unsigned long long)pl.ns);
	poller_got(&p, t + 100000 + 22000);
	CHECK(p.s.on_time == 0, "found after a sleep: not on time");
	/* seen 22 us late: the next is due 1/8 of that later, not 22 us */
	CHECK(p.arr[0].due == t + 100000 + 22000 / 8 + p.arr[0].gap, "due %llu after t",
	      (unsigned long long)(p.arr[0].due - t));
	t += 100000;
	CHECK(plan(&p, t + 50000).act == POLL_SLEEP, "the next gap");
	CHECK(plan(&p, t + 99000).act == POLL_YIELD, "yielding");
	poller_got(&p, t + 100500);
	CHECK(p.s.on_time == 1, "found while yielding: on time");
	CHECK(p.arr[0].due == t + 100500 + p.arr[0].gap, "an arrival earlier than due is the next due time's base");

	/* a pace slower than POLL_PLAN_MAX_NS is not planned for */
	poller_free(&p);
	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	t = 1000000;
	for (int i = 0; i < 10; i++, t += 3 * POLL_PLAN_MAX_NS)
		poller_got(&p, t);
	t -= 3 * POLL_PLAN_MAX_NS;
	CHECK(p.arr[0].gap == 3 * POLL_PLAN_MAX_NS, "a 6 ms gap learnt");
	CHECK(plan(&p, t + 1000).act == POLL_SPIN && plan(&p, t + 1000 + POLL_SPIN_NS).act == POLL_SLEEP &&
	      p.backoff == 1, "a gap over the cap: spin, then the back-off");
	poller_free(&p);

	/* told the rate, it plans from the first frame */
	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	poller_expect(&p, 10000);
	poller_got(&p, 1000000);
	pl = plan(&p, 1002000);
	CHECK(pl.act == POLL_SLEEP && pl.ns < 98000 && pl.ns > 40000, "told 10 kpps: sleep %llu after one frame",
	      (unsigned long long)pl.ns);
	poller_free(&p);

	/* Frames seen 40 and 160 us apart in turn (a poller woken late, or a
	 * jittery sender): a deviation over a quarter of the gap. Untold, no plan:
	 * spin, then the back-off. Told the rate, the sender keeps a pace the
	 * poller's own lateness cannot show: it still yields around the due time. */
	for (int told = 0; told < 2; told++) {
		poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
		if (told)
			poller_expect(&p, 10000);
		t = 1000000;
		for (int i = 0; i < 40; i++) {
			t += i % 2 ? 40000 : 160000;
			poller_got(&p, t);
		}
		CHECK(4 * p.arr[0].dev > p.arr[0].gap, "irregular: gap %llu dev %llu",
		      (unsigned long long)p.arr[0].gap, (unsigned long long)p.arr[0].dev);
		pl = plan(&p, p.arr[0].due);
		CHECK(pl.act == (told ? POLL_YIELD : POLL_SPIN), "%s: at the due time %d", told ? "told" : "untold",
		      pl.act);
		poller_free(&p);
	}
}

/* A fake api whose rx fd is an eventfd; with_intr gives it rx_intr. */
static int efd, armed, arms;

static int fake_fds(struct api *a, int *fds, int max)
{
	(void)a;
	if (max > 0)
		fds[0] = efd;
	return 1;
}

static void fake_intr(struct api *a, bool on)
{
	(void)a;
	armed = on;
	arms += on;
}

static void interrupt(const struct clock *clk)
{
	struct api_ops intr_ops = { .name = "fake", .rx_fds = fake_fds, .rx_intr = fake_intr };
	struct api_ops sock_ops = { .name = "fakesock", .rx_fds = fake_fds };
	struct api_ops none_ops = { .name = "none" };
	struct api a = { .ops = &intr_ops }, s = { .ops = &sock_ops }, n = { .ops = &none_ops };
	struct poller p;
	struct poll_plan pl;
	uint64_t one = 1;

	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(poller_init(&p, POLL_INTERRUPT, clk->hz, &n, NULL) == -1, "an api with nothing to wait on");

	/* armed first, then a wait that a signalled fd ends at once, then disarmed */
	CHECK(poller_init(&p, POLL_INTERRUPT, clk->hz, &a, NULL) == 0 && p.nintr == 1, "init");
	uint64_t now = clock_ticks();
	poller_empty(&p, now, UINT64_MAX);
	CHECK(armed && p.armed && p.s.waits == 0, "first empty poll arms, does not wait");
	CHECK(write(efd, &one, 8) == 8, "signal");
	poller_empty(&p, clock_ticks(), UINT64_MAX);
	CHECK(!armed && !p.armed && p.s.waits == 1 && p.s.waited_ns < 50000000, "woken at once: %llu ns",
	      (unsigned long long)p.s.waited_ns);
	poller_empty(&p, clock_ticks(), UINT64_MAX);
	poller_got(&p, clock_ticks());
	CHECK(arms == 2 && !armed && p.s.waits == 1, "frames after arming: disarmed without waiting");
	/* edge-triggered: the eventfd stays readable, yet the next wait times out */
	poller_empty(&p, clock_ticks(), UINT64_MAX);
	now = clock_ticks();
	poller_empty(&p, now, now + clk->hz / 200);
	CHECK(p.s.waits == 2 && p.s.waited_ns >= 4000000, "the old edge is gone: waited %llu ns",
	      (unsigned long long)p.s.waited_ns);
	now = clock_ticks();
	poller_empty(&p, now, now + clk->hz / 1000000);
	CHECK(p.s.waits == 2, "less than 2 us left: no wait");
	CHECK(p.s.polls == 7 && p.s.empty_polls == 6, "%llu polls", (unsigned long long)p.s.polls);
	poller_free(&p);

	/* adaptive on the same api: spins, then arms and waits; a signal ends the wait */
	CHECK(poller_init(&p, POLL_ADAPTIVE, clk->hz, &a, NULL) == 0 && p.nintr == 1 && p.epfd >= 0, "adaptive init");
	now = clock_ticks();
	poller_empty(&p, now, UINT64_MAX);
	CHECK(!armed && p.last == POLL_SPIN, "adaptive spins first");
	poller_empty(&p, now + p.spin, UINT64_MAX);
	CHECK(armed && p.last == POLL_ARM && p.s.waits == 0, "then arms");
	CHECK(write(efd, &one, 8) == 8, "signal");
	poller_empty(&p, now + p.spin, UINT64_MAX);
	CHECK(!armed && p.s.waits == 1 && p.s.woken == 1, "and waits, woken by the port");
	poller_got(&p, clock_ticks());
	CHECK(p.s.on_time == 0 && p.arr[0].n == 1, "a frame after a wait is not on time");
	poller_free(&p);
	/* with a pace: a wait up to the window (armed first), which a frame may end */
	CHECK(poller_init(&p, POLL_ADAPTIVE, 1000000000, &a, NULL) == 0, "adaptive init, ticks in ns");
	for (uint64_t t = 1000000; t <= 5000000; t += 100000)
		poller_got(&p, t);
	pl = poller_plan(&p, 5003000, UINT64_MAX);
	CHECK(pl.act == POLL_ARM, "paced: arms first (%d)", pl.act);
	poller_empty(&p, 5003000, UINT64_MAX);
	CHECK(armed && p.armed, "armed");
	pl = poller_plan(&p, 5003000, UINT64_MAX);
	CHECK(pl.act == POLL_WAIT && pl.ns > 80000 && pl.ns < 97000, "then waits up to the window: %llu",
	      (unsigned long long)pl.ns);
	poller_got(&p, 5100000);
	CHECK(!armed && !p.armed, "a frame disarms");
	poller_free(&p);
	/* an nf's two streams: a window of either is a window */
	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	poller_streams(&p, 2);
	for (uint64_t t = 1000000; t <= 5000000; t += 100000) {
		poller_arrived(&p, 0, t);
		poller_arrived(&p, 1, t + 30000);
		poller_got(&p, t + 30000);
	}
	CHECK(p.arr[0].gap == 100000 && p.arr[1].gap == 100000 && poller_arrivals(&p) == 82, "two paces");
	CHECK(poller_plan(&p, 5040000, UINT64_MAX).act == POLL_SLEEP, "between the windows: sleep");
	CHECK(poller_plan(&p, 5099000, UINT64_MAX).act == POLL_YIELD, "port 1's window");
	CHECK(poller_plan(&p, 5129000, UINT64_MAX).act == POLL_YIELD, "port 2's window");
	poller_free(&p);

	/* an api with nothing to wait on: adaptive backs off instead */
	CHECK(poller_init(&p, POLL_ADAPTIVE, clk->hz, &n, NULL) == 0 && p.epfd < 0, "adaptive without fds");
	poller_free(&p);

	/* a socket: level-triggered, no arming, readable while it holds frames */
	CHECK(poller_init(&p, POLL_INTERRUPT, clk->hz, &s, NULL) == 0 && p.nintr == 0, "socket init");
	now = clock_ticks();
	poller_empty(&p, now, UINT64_MAX);
	poller_empty(&p, clock_ticks(), UINT64_MAX);
	CHECK(p.s.waits == 2 && p.s.waited_ns < 50000000, "a readable socket ends every wait");
	poller_free(&p);
	close(efd);
}

int main(void)
{
	struct clock clk;

	clock_init(&clk);
	schedule();
	smoothing();
	paced();
	interrupt(&clk);
	return check_done("poll");
}
