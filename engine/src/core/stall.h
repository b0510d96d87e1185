/* Stalls: the time a polling loop did not poll. A busy poller that loses its
 * core (the scheduler runs another thread there, the hypervisor runs another
 * guest) comes back to a full ring, and what it did in the meantime is
 * nothing: a tester's pacer falls behind and skips, a receiver's ring
 * overflows. So each loop notes the gap between two of its iterations, on the
 * tick it reads anyway, and a gap longer than --stall-us is a stall: counted,
 * summed, the longest kept, over the measured window only.
 *
 * The hot path is stalls_see(): a subtraction, a store and one compare per
 * iteration; what a stall costs (stalls_add) is off it. A poller that sleeps
 * or waits by its own choice (--poll adaptive, interrupt; a sender between
 * bursts) restarts the gap when it meant to wake (stalls_woke), so only the
 * time it meant to poll and could not counts, what it overslept included; a
 * yield (adaptive) that got the core back late counts: the core was another's
 * for that long. */
#ifndef CNFPERF_STALL_H
#define CNFPERF_STALL_H

#include <stdbool.h>
#include <stdint.h>

#define STALL_US_DEFAULT 200

struct stall_sum {
	uint64_t count, total, max;   /* stalls; their sum and the longest, ticks */
};

struct stalls {
	uint64_t last;            /* tick of the loop's latest iteration (or wake-up) */
	uint64_t threshold;       /* ticks: a longer gap is a stall */
	bool on;                  /* the measured window is open: stalls count */
	unsigned pollers;         /* loops summed here: 1, 2 (a client's two threads), 0 (none) */
	struct stall_sum live;    /* what the loop has counted so far */
	struct stall_sum kept;    /* receivers: as of their latest measured frames, so that the idle
	                           * tail after the sender's last frame does not count */
};

void stalls_init(struct stalls *s, uint64_t threshold_ticks);
void stalls_add(struct stalls *s, uint64_t gap);   /* a gap above the threshold */
void stalls_merge(struct stalls *to, const struct stalls *from);   /* another thread's, kept */

/* Each iteration of a polling loop, with the tick it read. */
static inline void stalls_see(struct stalls *s, uint64_t now)
{
	uint64_t gap = now - s->last;

	s->last = now;
	if (__builtin_expect(gap > s->threshold, 0))
		stalls_add(s, gap);
}

/* The loop slept or waited by its own choice until tick now: the time it
 * asked for, or its wake-up when that came earlier (a frame ended a wait). */
static inline void stalls_woke(struct stalls *s, uint64_t now)
{
	s->last = now;
}

/* Receivers, after a burst with measured frames: what counted so far is in
 * the window (one compare while nothing stalled). */
static inline void stalls_keep(struct stalls *s)
{
	if (__builtin_expect(s->live.count != s->kept.count, 0))
		s->kept = s->live;
}

#endif
