#include "poll.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

const struct poll_props poll_modes[POLL_MODES] = {
	[POLL_BUSY] = { .name = "busy", .spins = true },
	[POLL_ADAPTIVE] = { .name = "adaptive", .spins = true, .sleeps = true, .paced = true },
	[POLL_INTERRUPT] = { .name = "interrupt", .sleeps = true, .interrupts = true },
};

static uint64_t to_ns(const struct poller *p, uint64_t ticks)
{
	return (uint64_t)((u128)ticks * 1000000000u / p->hz);
}

/* ns left until tick until, UINT64_MAX for no bound */
static uint64_t left_ns(const struct poller *p, uint64_t now, uint64_t until)
{
	if (until == UINT64_MAX)
		return UINT64_MAX;
	return until > now ? to_ns(p, until - now) : 0;
}

uint64_t poll_backoff_ns(unsigned k)
{
	uint64_t ns = POLL_BACKOFF_MIN_NS;

	while (k-- && ns < POLL_BACKOFF_MAX_NS)
		ns <<= 1;
	return ns < POLL_BACKOFF_MAX_NS ? ns : POLL_BACKOFF_MAX_NS;
}

/* 0, or 1 for an api with nothing to wait on (adaptive backs off for it; an
 * error for interrupt), or -1 after a line on stderr. */
static int add_fds(struct poller *p, struct api *a)
{
	const struct api_ops *ops = a->ops;
	int n = ops->rx_fds ? ops->rx_fds(a, NULL, 0) : 0, *fds;

	if (n <= 0) {
		if (!poll_modes[p->mode].interrupts)
			return 1;
		fprintf(stderr, "cnfperf-engine: --poll interrupt: --api %s gives nothing to wait on\n", ops->name);
		return -1;
	}
	if (!(fds = malloc(sizeof(*fds) * (size_t)n))) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		return -1;
	}
	ops->rx_fds(a, fds, n);
	/* An api that is armed (rx_intr) signals each notification once: its fd
	 * may stay readable after (nobody reads a DPDK queue's eventfd), so it is
	 * watched edge-triggered. A socket is readable while it holds frames:
	 * level-triggered, and no arming is needed. */
	struct epoll_event ev = { .events = EPOLLIN | (ops->rx_intr ? EPOLLET : 0) };
	for (int i = 0; i < n; i++) {
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
			fprintf(stderr, "cnfperf-engine: --poll %s: cannot wait on --api %s: %s\n",
				poll_modes[p->mode].name, ops->name, strerror(errno));
			free(fds);
			return -1;
		}
	}
	free(fds);
	if (ops->rx_intr)
		p->intr[p->nintr++] = a;
	return 0;
}

static uint64_t to_ticks(uint64_t hz, uint64_t ns)
{
	return (uint64_t)((u128)ns * hz / 1000000000u);
}

int poller_init(struct poller *p, enum poll_mode mode, uint64_t hz, struct api *a, struct api *b)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->hz = hz;
	p->spin = to_ticks(hz, POLL_SPIN_NS);
	p->margin = to_ticks(hz, POLL_MARGIN_NS);
	p->plan_max = to_ticks(hz, POLL_PLAN_MAX_NS);
	p->yield_max = to_ticks(hz, POLL_YIELD_MAX_NS);
	p->epfd = -1;
	p->streams = 1;
	for (unsigned i = 0; i < POLL_STREAMS; i++)
		arrivals_init(&p->arr[i], hz, 0);
	if (!poll_modes[mode].sleeps)
		return 0;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (!a && !b)
		return 0;
	if ((p->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		fprintf(stderr, "cnfperf-engine: --poll %s: epoll: %s\n", poll_modes[mode].name, strerror(errno));
		return -1;
	}
	int ra = a ? add_fds(p, a) : 0, rb = b && b != a ? add_fds(p, b) : 0;
	if (ra < 0 || rb < 0) {
		poller_free(p);
		return -1;
	}
	/* adaptive waits only where every port can end the wait: a frame on a
	 * port that cannot would sit there until the timeout */
	if (ra || rb) {
		p->nintr = 0;
		close(p->epfd);
		p->epfd = -1;
	}
	return 0;
}

void poller_expect(struct poller *p, double rate)
{
	for (unsigned i = 0; i < POLL_STREAMS; i++)
		arrivals_init(&p->arr[i], p->hz, rate);
}

void poller_streams(struct poller *p, unsigned n)
{
	p->streams = n < 1 ? 1 : n > POLL_STREAMS ? POLL_STREAMS : n;
}

uint64_t poller_arrivals(const struct poller *p)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < p->streams; i++)
		n += p->arr[i].n;
	return n;
}

uint64_t poller_gap_ns(const struct poller *p)
{
	uint64_t gap = 0;

	for (unsigned i = 0; i < p->streams; i++)
		if (p->arr[i].gap && (!gap || p->arr[i].gap < gap))
			gap = p->arr[i].gap;
	return gap ? to_ns(p, gap) : 0;
}

void poller_free(struct poller *p)
{
	if (p->armed)
		poller_wake(p);
	if (p->epfd >= 0)
		close(p->epfd);
	p->epfd = -1;
}

static void arm(struct poller *p, bool on)
{
	for (unsigned i = 0; i < p->nintr; i++)
		p->intr[i]->ops->rx_intr(p->intr[i], on);
	p->armed = on;
}

void poller_wake(struct poller *p)
{
	if (p->idle_since && p->last == POLL_YIELD)
		p->s.on_time++;
	/* The overshoot is learnt only from sleeps, and a large one (the thread
	 * preempted) can make the margin outgrow the gap, so that it never sleeps
	 * again to learn better: each frame after empty polls forgets 1/32 of it. */
	p->late -= p->late >> 5;
	p->idle_since = 0;
	p->backoff = 0;
	p->last = POLL_SPIN;
	if (p->armed)
		arm(p, false);
}

/* A wait where the ports can end it (an api with rx_intr armed first), else
 * sleeps of 1, 2, 4 ... us. */
static struct poll_plan idle_plan(struct poller *p, uint64_t left)
{
	if (p->epfd >= 0 && left >= POLL_MIN_NAP_NS) {
		if (p->nintr && !p->armed)
			return (struct poll_plan){ POLL_ARM, 0 };
		return (struct poll_plan){ POLL_WAIT, left < POLL_WAIT_MAX_NS ? left : POLL_WAIT_MAX_NS };
	}
	uint64_t ns = poll_backoff_ns(p->backoff);
	if (left < ns)
		ns = left;
	if (ns < POLL_BACKOFF_MIN_NS)   /* until is near: poll, leaving the core to others */
		return (struct poll_plan){ POLL_YIELD, 0 };
	if (p->backoff < 64)
		p->backoff++;
	return (struct poll_plan){ POLL_SLEEP, ns };
}

/* Until the next frame's window: a wait the ports can end early, else a sleep. */
static struct poll_plan until_window(struct poller *p, uint64_t ns)
{
	if (p->epfd >= 0) {
		if (p->nintr && !p->armed)
			return (struct poll_plan){ POLL_ARM, 0 };
		return (struct poll_plan){ POLL_WAIT, ns };
	}
	return (struct poll_plan){ POLL_SLEEP, ns };
}

static struct poll_plan plan(struct poller *p, uint64_t now, uint64_t until)
{
	uint64_t left = left_ns(p, now, until), next = UINT64_MAX;
	bool paced = false, overdue = false;

	/* back by until, not after: a sleep or a wait ends late by what they
	 * overshoot (learnt), and until is a burst's send time (a tester's one
	 * thread) or a record's */
	if (left != UINT64_MAX) {
		uint64_t early = to_ns(p, p->late) + POLL_MARGIN_NS;
		left = left > early ? left - early : 0;
	}

	if (!p->idle_since) {
		p->idle_since = now ? now : 1;
		p->backoff = 0;
	}
	/* each stream with a regular pace has a window around its next frame's
	 * due time: yield inside one, sleep (or wait) up to the next one. A pace
	 * the sender told is regular whatever the arrivals look like: a poller
	 * woken late sees them late and uneven, and not planning for them would
	 * only make it wait, and see them later still. */
	for (unsigned i = 0; i < p->streams; i++) {
		const struct arrivals *a = &p->arr[i];
		if (!a->gap || !a->last || a->gap > p->plan_max || (4 * a->dev > a->gap && !a->known))
			continue;
		uint64_t due = a->due, margin = 2 * a->dev + p->late + p->margin;
		if (margin > p->yield_max)
			margin = p->yield_max;
		uint64_t wake = due > margin ? due - margin : 0;
		paced = true;
		if (now >= due + margin) {
			overdue = true;
			continue;
		}
		if (now >= wake)
			return (struct poll_plan){ POLL_YIELD, 0 };
		if (wake < next)
			next = wake;
	}
	if (paced) {
		/* a stream overdue, nothing to wait on: its frame may come any time */
		if (overdue && p->epfd < 0)
			return idle_plan(p, left);
		if (next != UINT64_MAX) {
			uint64_t ns = to_ns(p, next - now);
			if (ns > left)
				ns = left;
			if (ns >= POLL_MIN_NAP_NS)
				return until_window(p, ns);
			return (struct poll_plan){ POLL_YIELD, 0 };
		}
		return idle_plan(p, left);
	}
	if (now - p->idle_since < p->spin)
		return (struct poll_plan){ POLL_SPIN, 0 };
	return idle_plan(p, left);
}

struct poll_plan poller_plan(struct poller *p, uint64_t now, uint64_t until)
{
	struct poll_plan pl = plan(p, now, until);

	p->last = pl.act;
	return pl;
}

/* A sleep's or timed-out wait's overshoot, smoothed (1/8) for adaptive's
 * margin; a preemption is not a wake-up's cost, and counts as the longest
 * back-off at most. */
static void learn_late(struct poller *p, uint64_t took, uint64_t want)
{
	uint64_t over = took > want ? took - want : 0, cap = to_ticks(p->hz, POLL_BACKOFF_MAX_NS);

	if (over > cap)
		over = cap;
	p->late = (uint64_t)((int64_t)p->late + ((int64_t)over - (int64_t)p->late) / 8);
}

static void nap(struct poller *p, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	uint64_t t0 = clock_ticks();

	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	uint64_t t1 = clock_ticks(), took = t1 - t0, want = to_ticks(p->hz, ns);
	if (p->stalls)   /* what it overslept is a stall's, as a preemption's */
		stalls_woke(p->stalls, took > want ? t0 + want : t1);
	p->s.sleeps++;
	p->s.asked_ns += ns;
	p->s.slept_ns += to_ns(p, took);
	learn_late(p, took, want);
}

/* Blocks until a port signals frames, a signal arrives or ns have passed:
 * epoll_pwait2() takes the timeout in ns (epoll_wait() counts ms) and empties
 * the set as it wakes, which consumes the edges. Kernels before 5.11 lack
 * it: ppoll() on the epoll fd, then epoll_wait() without waiting. */
static void wait_rx(struct poller *p, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	struct epoll_event ev[16];
	uint64_t t0 = clock_ticks();
	int n = -1;

#ifdef SYS_epoll_pwait2
	static bool none;
	if (!none) {
		n = (int)syscall(SYS_epoll_pwait2, p->epfd, ev, 16, &ts, NULL, 0);
		none = n < 0 && errno == ENOSYS;
	}
	if (none)
#endif
	{
		struct pollfd pf = { .fd = p->epfd, .events = POLLIN };
		n = ppoll(&pf, 1, &ts, NULL);
		if (n > 0)
			epoll_wait(p->epfd, ev, 16, 0);
	}
	uint64_t t1 = clock_ticks(), took = t1 - t0, want = to_ticks(p->hz, ns);
	if (p->stalls)   /* a wait past its timeout: the rest is a stall's */
		stalls_woke(p->stalls, took > want ? t0 + want : t1);
	p->s.waits++;
	p->s.woken += n > 0;
	p->s.waited_ns += to_ns(p, took);
	if (n == 0)   /* timed out: what it overshot, as a sleep's */
		learn_late(p, took, want);
}

void poller_empty(struct poller *p, uint64_t now, uint64_t until)
{
	p->s.polls++;
	p->s.empty_polls++;
	switch (p->mode) {
	case POLL_BUSY:
		return;
	case POLL_ADAPTIVE: {
		struct poll_plan pl = poller_plan(p, now, until);
		switch (pl.act) {
		case POLL_SPIN:
			return;
		case POLL_YIELD:
			sched_yield();
			return;
		case POLL_SLEEP:
			nap(p, pl.ns);
			return;
		case POLL_ARM:
			arm(p, true);   /* the caller polls once more before we wait */
			return;
		case POLL_WAIT:
			wait_rx(p, pl.ns);
			if (p->armed)
				arm(p, false);
			return;
		}
		return;
	}
	case POLL_INTERRUPT: {
		uint64_t left = left_ns(p, now, until);
		if (p->epfd < 0 || left < POLL_MIN_NAP_NS)
			return;
		if (p->nintr && !p->armed) {
			arm(p, true);   /* the caller polls once more before we wait */
			return;
		}
		wait_rx(p, left < POLL_WAIT_MAX_NS ? left : POLL_WAIT_MAX_NS);
		if (p->armed)
			arm(p, false);
		return;
	}
	}
}

void poller_pause(struct poller *p, uint64_t now, uint64_t until)
{
	uint64_t ns = !poll_modes[p->mode].sleeps ? 0 : left_ns(p, now, until);

	if (ns <= POLL_MIN_NAP_NS || ns == UINT64_MAX)
		cpu_relax();
	else
		nap(p, ns);
}

void poll_stats_add(struct poll_stats *to, const struct poll_stats *from)
{
	to->polls += from->polls;
	to->empty_polls += from->empty_polls;
	to->sleeps += from->sleeps;
	to->slept_ns += from->slept_ns;
	to->asked_ns += from->asked_ns;
	to->waits += from->waits;
	to->waited_ns += from->waited_ns;
	to->woken += from->woken;
	to->on_time += from->on_time;
}
