/* Time base of the engine: TSC ticks, mapped to ns of CLOCK_MONOTONIC.
 *
 * Hot loops read ticks (rdtsc, ~10 ns, no syscall) once per burst. Timestamps
 * on the wire are ns of CLOCK_MONOTONIC so that two engine processes on one
 * host agree (one-way latency): each maps its TSC onto CLOCK_MONOTONIC from a
 * calibration made at start and re-anchored every 10 ms by the owner thread
 * (clock_reanchor, see run.c), which keeps the mapping within ~0.1 us of the
 * kernel's clock however long the run and however the kernel steers it.
 * The calibration need not cost the start any time: clock_begin() before
 * opening the ports and clock_end() after calibrate over what the engine
 * does anyway (main.c), sleeping only up to CLOCK_MIN_SPAN_NS in all.
 *
 * Without an invariant TSC (constant_tsc + nonstop_tsc in /proc/cpuinfo) or
 * off x86-64, ticks are CLOCK_MONOTONIC ns read through the vDSO. */
#ifndef CNFPERF_CLOCK_H
#define CNFPERF_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

__extension__ typedef unsigned __int128 u128;

struct clock {
	uint64_t hz;         /* ticks per second */
	uint64_t tick0;      /* anchor: a tick count ... */
	uint64_t ns0;        /* ... and the CLOCK_MONOTONIC ns it maps to */
	uint64_t mult;       /* ns per tick, 32.32 fixed point */
	uint64_t first_tick; /* the calibration's first pair, kept so re-anchoring */
	uint64_t first_ns;   /* refines the rate over the whole run */
};

/* Decided once by clock_init(), read-only afterwards (so threads may read it). */
extern bool clock_uses_tsc;

/* The shortest span a calibration is measured over: (tick, ns) pairs good to
 * ~10 ns each give the rate to ~4 ppm, ~40 ns of drift before the first
 * re-anchor (10 ms). */
#define CLOCK_MIN_SPAN_NS 5000000u
#define CLOCK_INIT_SPAN_NS 50000000u

void clock_begin(struct clock *c);    /* the calibration's first (tick, ns) pair */
void clock_end(struct clock *c);      /* its second, >= CLOCK_MIN_SPAN_NS later */
void clock_init(struct clock *c);     /* both, CLOCK_INIT_SPAN_NS apart */
void clock_reanchor(struct clock *c); /* owner thread only */

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_ticks(void)
{
#if defined(__x86_64__)
	if (clock_uses_tsc) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return mono_ns();
}

static inline uint64_t clock_ns(const struct clock *c, uint64_t tick)
{
	/* Ticks before the anchor (a timestamp taken by another thread just
	 * before a re-anchor) map backwards, not to a huge unsigned value. */
	if (tick >= c->tick0)
		return c->ns0 + (uint64_t)(((u128)(tick - c->tick0) * c->mult) >> 32);
	return c->ns0 - (uint64_t)(((u128)(c->tick0 - tick) * c->mult) >> 32);
}

static inline uint64_t clock_now_ns(const struct clock *c)
{
	return clock_ns(c, clock_ticks());
}

static inline uint64_t clock_s_to_ticks(const struct clock *c, double s)
{
	return (uint64_t)(s * (double)c->hz + 0.5);
}

static inline double clock_ticks_to_s(const struct clock *c, uint64_t ticks)
{
	return (double)ticks / (double)c->hz;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause");
#endif
}

#endif
