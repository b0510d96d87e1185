/* The drain after traffic ends: a receiver's after a stop signal (the
 * orchestrator signals once the senders are done), a tester's or client's
 * after its last send. What is still on its way (in a queue of the path, a
 * socket, a ring) is taken until nothing has come for twice the longest
 * silence between two polls that brought frames while it measured, and
 * DRAIN_QUIET_MIN_S at least: a path's queues empty in a stream, and one
 * that stalled in the window is given as long again. The caller caps it
 * (RUN_DRAIN_S, --drain). */
#ifndef CNFPERF_DRAIN_H
#define CNFPERF_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

#define DRAIN_QUIET_MIN_S 0.02

struct drain {
	uint64_t last;        /* tick of the last poll that brought frames (0: none yet) */
	uint64_t gap_max;     /* the longest silence between two of them while counting */
	uint64_t quiet_min;   /* ticks of DRAIN_QUIET_MIN_S */
};

static inline void drain_init(struct drain *d, uint64_t quiet_min)
{
	d->last = d->gap_max = 0;
	d->quiet_min = quiet_min;
}

/* A poll brought frames at tick now; `counting`: the silence before it is
 * one of the window's (measuring, traffic not over). */
static inline void drain_saw(struct drain *d, uint64_t now, bool counting)
{
	if (d->last && counting && now - d->last > d->gap_max)
		d->gap_max = now - d->last;
	d->last = now;
}

/* The tick the drain that began at `from` ends, `cap` at the latest. */
static inline uint64_t drain_end(const struct drain *d, uint64_t from, uint64_t cap)
{
	uint64_t quiet = 2 * d->gap_max > d->quiet_min ? 2 * d->gap_max : d->quiet_min;
	uint64_t end = (d->last > from ? d->last : from) + quiet;

	return end < cap ? end : cap;
}

#endif
