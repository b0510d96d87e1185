#include "poll.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

const char *const poll_mode_names[POLL_MODES] = { "busy", "adaptive", "interrupt" };

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

static int add_fds(struct poller *p, struct api *a)
{
	const struct api_ops *ops = a->ops;
	int n = ops->rx_fds ? ops->rx_fds(a, NULL, 0) : 0, *fds;

	if (n <= 0) {
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
			fprintf(stderr, "cnfperf-engine: --poll interrupt: cannot wait on --api %s: %s\n",
				ops->name, strerror(errno));
			free(fds);
			return -1;
		}
	}
	free(fds);
	if (ops->rx_intr)
		p->intr[p->nintr++] = a;
	return 0;
}

int poller_init(struct poller *p, enum poll_mode mode, uint64_t hz, struct api *a, struct api *b)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->hz = hz;
	p->spin = (uint64_t)((u128)POLL_SPIN_NS * hz / 1000000000u);
	p->epfd = -1;
	if (mode == POLL_BUSY)
		return 0;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (mode != POLL_INTERRUPT || (!a && !b))
		return 0;
	if ((p->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		fprintf(stderr, "cnfperf-engine: --poll interrupt: epoll: %s\n", strerror(errno));
		return -1;
	}
	if ((a && add_fds(p, a)) || (b && b != a && add_fds(p, b))) {
		poller_free(p);
		return -1;
	}
	return 0;
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
	p->idle_since = 0;
	p->backoff = 0;
	if (p->armed)
		arm(p, false);
}

uint64_t poller_plan(struct poller *p, uint64_t now, uint64_t until)
{
	if (!p->idle_since) {
		p->idle_since = now ? now : 1;
		p->backoff = 0;
	}
	if (now - p->idle_since < p->spin)
		return 0;
	uint64_t ns = poll_backoff_ns(p->backoff), left = left_ns(p, now, until);
	if (left < ns)
		ns = left;
	if (ns < POLL_BACKOFF_MIN_NS)
		return 0;
	if (p->backoff < 64)
		p->backoff++;
	return ns;
}

static void nap(struct poller *p, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	uint64_t t0 = clock_ticks();

	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	p->s.sleeps++;
	p->s.asked_ns += ns;
	p->s.slept_ns += to_ns(p, clock_ticks() - t0);
}

/* Blocks until a port signals frames, a signal arrives or ns have passed. The
 * epoll set is waited on through ppoll() for a timeout in ns (epoll_wait()
 * counts ms), then emptied without waiting, which consumes the edges. */
static void wait_rx(struct poller *p, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	struct pollfd pf = { .fd = p->epfd, .events = POLLIN };
	struct epoll_event ev[16];
	uint64_t t0 = clock_ticks();

	if (ppoll(&pf, 1, &ts, NULL) > 0)
		epoll_wait(p->epfd, ev, 16, 0);
	p->s.waits++;
	p->s.waited_ns += to_ns(p, clock_ticks() - t0);
}

void poller_empty(struct poller *p, uint64_t now, uint64_t until)
{
	p->s.polls++;
	p->s.empty_polls++;
	switch (p->mode) {
	case POLL_BUSY:
		return;
	case POLL_ADAPTIVE: {
		uint64_t ns = poller_plan(p, now, until);
		if (ns)
			nap(p, ns);
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
	uint64_t ns = p->mode == POLL_BUSY ? 0 : left_ns(p, now, until);

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
}
