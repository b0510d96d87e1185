/* Burst pacer: busy-polls the tick counter, releases one burst every
 * burst/rate seconds.
 *
 * Fractional periods accumulate exactly (32.32 fixed point), so the long-run
 * rate has no rounding drift. After a stall (preemption, a slow syscall) the
 * debt is capped at PACER_CATCHUP bursts: the sender then releases at most
 * PACER_CATCHUP + 1 bursts back to back and falls back to the normal spacing;
 * what was forgiven shows as tx_pps below offered_pps, and in the measured
 * window as the summary's tx_skipped (bursts times the burst size). Only
 * bursts due from `from` on count as forgiven: a stall across the warm-up's
 * end skips warm-up bursts too, and those are not the window's. */
#ifndef CNFPERF_PACER_H
#define CNFPERF_PACER_H

#include <stdbool.h>
#include <stdint.h>

#define PACER_CATCHUP 4

struct pacer {
	bool unpaced;        /* rate 0: every poll is due */
	uint64_t period;     /* ticks between bursts, integer part */
	uint32_t frac;       /* fractional part, 1/2^32 ticks */
	uint32_t frac_acc;
	uint64_t next;       /* tick at which the next burst is due */
	uint64_t max_lag;    /* debt beyond this is forgiven */
	uint64_t forgiven;   /* bursts due from `from` on forgiven after stalls */
	uint64_t from;       /* tick: bursts due before it are forgiven uncounted */
};

void pacer_init(struct pacer *p, double rate_pps, unsigned burst, uint64_t hz, uint64_t now);
void pacer_forgive(struct pacer *p, uint64_t now);
/* count forgiven bursts due from tick `from` on (the measured window's start) */
void pacer_count_from(struct pacer *p, uint64_t from);
/* whole bursts due from `from` on and before tick `end` (the window's end)
 * that were neither released nor forgiven: a stall across the window's end
 * leaves them owed, and they are the schedule's as much as forgiven ones.
 * The burst due within one period of `end` is not counted (the last tick's
 * grain). */
uint64_t pacer_owed(const struct pacer *p, uint64_t end);

/* true when a burst is due at tick `now`; then schedules the next one */
static inline bool pacer_due(struct pacer *p, uint64_t now)
{
	if (p->unpaced)
		return true;
	if (now < p->next)
		return false;
	if (__builtin_expect(now - p->next > p->max_lag, 0))
		pacer_forgive(p, now);
	uint64_t acc = (uint64_t)p->frac_acc + p->frac;
	p->next += p->period + (acc >> 32);
	p->frac_acc = (uint32_t)acc;
	return true;
}

/* ticks until the next burst is due (0 when due) */
static inline uint64_t pacer_wait(const struct pacer *p, uint64_t now)
{
	return p->unpaced || now >= p->next ? 0 : p->next - now;
}

#endif
