#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool clock_uses_tsc;

/* The TSC is a usable time base across cores and idle states only when the
 * kernel reports it invariant; synchronised across sockets too on every CPU
 * that sets both flags (the kernel checks that before trusting it). */
static bool tsc_invariant(void)
{
#if defined(__x86_64__)
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	bool constant = false, nonstop = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return false;
#endif
}

/* One (tick, ns) pair; the tick is the midpoint of the tightest of a few
 * rdtsc brackets around clock_gettime, so the pair is good to ~10 ns. */
static void pair(uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 7; i++) {
		uint64_t a = clock_ticks();
		uint64_t t = mono_ns();
		uint64_t b = clock_ticks();
		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = t;
		}
	}
}

static uint64_t mult_of(uint64_t dns, uint64_t dtick)
{
	return (uint64_t)(((u128)dns << 32) / dtick);
}

static void fallback(struct clock *c)
{
	clock_uses_tsc = false;
	c->hz = 1000000000u;
	c->mult = (uint64_t)1 << 32;
}

void clock_begin(struct clock *c)
{
	memset(c, 0, sizeof(*c));
	clock_uses_tsc = tsc_invariant();
	if (!clock_uses_tsc) {
		fallback(c);
		return;
	}
	pair(&c->first_tick, &c->first_ns);
}

void clock_end(struct clock *c)
{
	if (!clock_uses_tsc)
		return;
	uint64_t t1 = c->first_tick, n1 = c->first_ns, t2, n2;
	uint64_t span = mono_ns() - n1;

	/* Whatever ran since clock_begin() (opening the ports) is the calibration's
	 * interval; one shorter than CLOCK_MIN_SPAN_NS is made up by sleeping, as
	 * the pairs' ~10 ns error over it is the rate's error until re-anchoring. */
	if (span < CLOCK_MIN_SPAN_NS) {
		struct timespec gap = { 0, (long)(CLOCK_MIN_SPAN_NS - span) };
		while (nanosleep(&gap, &gap) && errno == EINTR)
			;
	}
	pair(&t2, &n2);
	if (t2 <= t1 || n2 <= n1) { /* a TSC that does not advance: do not trust it */
		fallback(c);
		return;
	}
	c->hz = (uint64_t)(((u128)(t2 - t1) * 1000000000u) / (n2 - n1));
	c->mult = mult_of(n2 - n1, t2 - t1);
	c->tick0 = t2;
	c->ns0 = n2;
}

void clock_init(struct clock *c)
{
	clock_begin(c);
	struct timespec gap = { 0, CLOCK_INIT_SPAN_NS };
	nanosleep(&gap, NULL);
	clock_end(c);
}

void clock_reanchor(struct clock *c)
{
	if (!clock_uses_tsc)
		return;
	uint64_t t, n;

	pair(&t, &n);
	if (t <= c->first_tick || n <= c->first_ns)
		return;
	c->mult = mult_of(n - c->first_ns, t - c->first_tick);
	c->tick0 = t;
	c->ns0 = n;
}
