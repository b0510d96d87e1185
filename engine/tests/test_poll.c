/* The poller: the adaptive back-off schedule without sleeping (1, 2, 4 ...
 * 128 us, reset by traffic), what each mode counts, and the interrupt mode's
 * arming and waiting on fake apis whose fds are eventfds already signalled,
 * so nothing waits long. */
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "../src/core/clock.h"
#include "../src/core/poll.h"

static void schedule(void)
{
	static const uint64_t want[] = { 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 128000, 128000 };
	struct poller p;

	for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		CHECK(poll_backoff_ns(k) == want[k], "sleep %u: %llu ns", k, (unsigned long long)poll_backoff_ns(k));
	CHECK(poll_backoff_ns(1000) == POLL_BACKOFF_MAX_NS, "capped");

	/* ticks are ns here: spin 20 us, then the back-off, reset by traffic */
	poller_init(&p, POLL_ADAPTIVE, 1000000000, NULL, NULL);
	uint64_t t = 5000;
	CHECK(poller_plan(&p, t, UINT64_MAX) == 0, "first empty poll: spin");
	CHECK(poller_plan(&p, t + POLL_SPIN_NS - 1, UINT64_MAX) == 0, "still spinning");
	t += POLL_SPIN_NS;
	for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		uint64_t ns = poller_plan(&p, t, UINT64_MAX);
		CHECK(ns == want[k], "sleep %u after the spin: %llu", k, (unsigned long long)ns);
		t += ns;
	}
	poller_got(&p);
	CHECK(p.idle_since == 0 && p.backoff == 0 && p.s.polls == 1, "traffic resets");
	CHECK(poller_plan(&p, t, UINT64_MAX) == 0, "spins again after traffic");
	t += POLL_SPIN_NS;
	CHECK(poller_plan(&p, t, UINT64_MAX) == 1000, "and starts over at 1 us");
	CHECK(poller_plan(&p, t, t + 1500) == 1500, "never past until");
	CHECK(poller_plan(&p, t, t + 999) == 0, "no sleep shorter than 1 us");
	CHECK(poller_plan(&p, t, t) == 0 && poller_plan(&p, t + 10, t) == 0, "until passed: no sleep");
	poller_free(&p);

	/* busy only counts */
	poller_init(&p, POLL_BUSY, 1000000000, NULL, NULL);
	for (int i = 0; i < 5; i++)
		poller_empty(&p, 100000 * (uint64_t)i, UINT64_MAX);
	poller_got(&p);
	CHECK(p.s.polls == 6 && p.s.empty_polls == 5 && !p.s.sleeps && !p.s.waits && !p.idle_since, "busy");
	poller_free(&p);
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
	poller_got(&p);
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
	interrupt(&clk);
	return check_done("poll");
}
