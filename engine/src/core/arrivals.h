/* When the next frame is due: the gap between arrivals (polls that brought
 * frames) smoothed as TCP smooths its round-trip time (RFC 6298: SRTT and
 * RTTVAR), so that an adaptive poller can sleep until shortly before it
 * instead of backing off blindly (poll.h).
 *
 *   gap += (sample - gap) / 8        dev += (|sample - gap| - dev) / 4
 *
 * A paced sender's rate, when the receiver is told it (--rate), seeds the gap
 * before the first sample and anchors it again after a pause: a gap longer
 * than ARRIVALS_PAUSE_NS is traffic that stopped, not a sample. Pure integer
 * arithmetic on ticks, no system call: the tests feed it any schedule.
 *
 * When the next frame is due: a gap after the last arrival, unless that one
 * was seen later than expected. A poller sees a frame late, never early: it
 * was asleep when the frame came (a wake-up costs tens of us in a VM) or busy
 * with other work, while a paced sender's frames leave on time. Taken as they
 * were seen, late arrivals would put every next due time late by the wake-up
 * too, and the poller would wake for each frame after it came, never before.
 * So a late arrival moves the expectation by 1/8 of its lateness (a pace that
 * really moved is followed within a few frames) and an early one at once: the
 * due times follow the earliest arrivals, the ones seen by a poller awake. */
#ifndef CNFPERF_ARRIVALS_H
#define CNFPERF_ARRIVALS_H

#include <stdint.h>

/* A gap longer than this is a pause in the traffic (a point's warm-up ending,
 * a sender stopped), not the pace of a flow: it is not smoothed in. */
#define ARRIVALS_PAUSE_NS 20000000ull

struct arrivals {
	uint64_t last;      /* tick of the latest arrival, 0 before the first */
	uint64_t gap;       /* smoothed gap between arrivals in ticks, 0: unknown */
	uint64_t dev;       /* smoothed mean deviation of the gap, ticks */
	uint64_t known;     /* the sender's pace (--rate) as a gap, ticks; 0: not told */
	uint64_t pause;     /* ARRIVALS_PAUSE_NS in ticks */
	uint64_t n;         /* arrivals seen */
	uint64_t due;       /* tick the next arrival is expected, 0: unknown (below) */
};

/* hz: ticks per second; rate: the sender's frames per second, 0 unknown. */
void arrivals_init(struct arrivals *a, uint64_t hz, double rate);

/* the gap between arrivals, smoothed */
static inline void arrivals_gap(struct arrivals *a, uint64_t now)
{
	uint64_t last = a->last;

	a->last = now ? now : 1;
	a->n++;
	if (!last || now <= last)
		return;
	uint64_t s = now - last;
	if (s > a->pause) {            /* a pause: start over from what we were told */
		a->gap = a->known;
		a->dev = a->known / 4;
		return;
	}
	if (!a->gap) {                 /* the first sample, as RFC 6298 takes it */
		a->gap = s;
		a->dev = s / 2;
		return;
	}
	uint64_t d = s > a->gap ? s - a->gap : a->gap - s;
	/* in signed steps: the estimates move down as well as up */
	a->dev = (uint64_t)((int64_t)a->dev + ((int64_t)d - (int64_t)a->dev) / 4);
	a->gap = (uint64_t)((int64_t)a->gap + ((int64_t)s - (int64_t)a->gap) / 8);
	if (!a->gap)
		a->gap = 1;
}

/* the due time of the next (the top of this file) */
static inline void arrivals_due(struct arrivals *a, uint64_t now)
{
	uint64_t base = now;

	if (a->due && now > a->due && now - a->due < a->gap / 2)
		base = a->due + (now - a->due) / 8;
	a->due = a->gap ? base + a->gap : 0;
}

/* Frames arrived at tick now. */
static inline void arrivals_seen(struct arrivals *a, uint64_t now)
{
	arrivals_gap(a, now);
	arrivals_due(a, now);
}

#endif
