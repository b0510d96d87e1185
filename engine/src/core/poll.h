/* How an rx loop spends the time when no frame comes (--poll), in one place:
 * the roles call poller_empty() after a burst that came back empty on every
 * port, poller_got() after one that did not, and poller_pause() when a sender
 * has nothing to do until its next burst; they never look at the mode.
 *
 *   busy       spin on rx_burst (and on the pacer): lowest latency, one core.
 *   adaptive   follow the traffic's pace (arrivals.h: the smoothed gap between
 *              arrivals, seeded by the sender's rate when told, --rate): after
 *              a frame, wait for the ports (as interrupt does: an early frame
 *              ends it) or, an api with nothing to wait on, sleep, until
 *              shortly before the next is due (arrivals.h: the earliest
 *              arrivals' pace; less a margin: twice
 *              the gap's deviation, what a sleep overshoots, POLL_MARGIN_NS;
 *              at most POLL_YIELD_MAX_NS), then poll while yielding the core
 *              (sched_yield: a poller sharing it runs) until a margin past
 *              the due time, then wait as interrupt does, or back off (sleeps
 *              of 1, 2, 4 ... POLL_BACKOFF_MAX_NS us) on an api with nothing
 *              to wait on. Without a regular pace (no frames yet, gaps over
 *              POLL_PLAN_MAX_NS, a deviation over a quarter of the gap and
 *              no rate told) it spins POLL_SPIN_NS, then waits or backs off.
 *   interrupt  on an empty poll, block until a port has frames (epoll on the
 *              fds the apis give, api_ops.rx_fds), at most POLL_WAIT_MAX_NS.
 *              An api with rx_intr (dpdk) is armed first and polled once more
 *              before the wait: a frame that came between the empty burst and
 *              the arming raised no interrupt.
 *
 * Senders with a mode other than busy sleep until their next burst is due.
 * Every sleep and wait is counted for the summary ("poll"). */
#ifndef CNFPERF_POLL_H
#define CNFPERF_POLL_H

#include <stdbool.h>
#include <stdint.h>

#include "../api/api.h"
#include "arrivals.h"
#include "stall.h"

enum poll_mode { POLL_BUSY, POLL_ADAPTIVE, POLL_INTERRUPT };
#define POLL_MODES 3

/* What a mode is, beside its name (--poll): what the code outside this
 * poller asks of it instead of its name, and what --describe says of it
 * (the orchestrator plans cores and argv by these). */
struct poll_props {
	const char *name;
	bool spins;        /* an empty poll may be followed by another at once: it may hold a core */
	bool sleeps;       /* it sleeps or waits when idle, and so does a sender between bursts */
	bool paced;        /* it follows the traffic's pace, seeded by --rate when told */
	bool interrupts;   /* it waits for the ports' Rx interrupts: a port without them fails */
};
extern const struct poll_props poll_modes[POLL_MODES];   /* by enum poll_mode: busy, adaptive, interrupt */

#define POLL_SPIN_NS 20000           /* adaptive without a pace: empty polls this long before waiting */
#define POLL_BACKOFF_MIN_NS 1000     /* adaptive: the first sleep; each next one doubles */
/* Cap of the back-off. A frame that arrives while the poller sleeps waits for
 * the rest of that sleep, so the cap is the latency a resuming flow may see on
 * its first frames, and what the ring must absorb meanwhile (128 us at 1 Mpps
 * is 128 frames, inside the smallest ring we use, 256). Longer sleeps would
 * save little: at 128 us an idle poller wakes ~8,000 times a second, each
 * wake-up a few us of one core. */
#define POLL_BACKOFF_MAX_NS 128000
/* interrupt: the longest wait, so that a signal, an interval record or the end
 * of the run is never later than this. */
#define POLL_WAIT_MAX_NS 100000000ull
#define POLL_MIN_NAP_NS 2000         /* less is not worth a system call: spin instead */
/* adaptive: what a sleep stops short of the next frame's due time besides
 * the measured deviation and overshoot: the rx burst and the clock read. */
#define POLL_MARGIN_NS 2000
/* adaptive: the longest a poller yields before and after a frame's due time;
 * a pace whose deviation is over a quarter of its gap is not planned for
 * unless the sender told it (the frames come when they come: it waits for
 * them as interrupt does) */
#define POLL_YIELD_MAX_NS 100000
/* adaptive: a pace slower than this is not planned for: at under 500 frames a
 * second, waiting for the port's signal costs nothing worth a prediction, and
 * a long sleep that a frame cannot end would be all latency if it came early. */
#define POLL_PLAN_MAX_NS 2000000

struct poll_stats {
	uint64_t polls, empty_polls;   /* rx bursts (on every port) and how many found nothing */
	uint64_t sleeps, slept_ns;     /* timed sleeps (adaptive back-off, senders between bursts) */
	uint64_t asked_ns;             /* what those sleeps asked for: slept - asked = wake-up cost */
	uint64_t waits, waited_ns;     /* waits for a port to have frames (interrupt, adaptive) */
	uint64_t woken;                /* of those, the ones a port's signal ended (not the timeout) */
	uint64_t on_time;              /* adaptive: frames found by a poll that followed a yield, not a
	                                * sleep or a wait: the pace was right */
};

/* What an adaptive poller does after an empty poll (poller_plan). */
enum poll_act {
	POLL_SPIN,      /* poll again at once */
	POLL_YIELD,     /* the next frame is due: give the core away (sched_yield), poll again */
	POLL_SLEEP,     /* sleep ns: until shortly before the next frame, or a back-off step */
	POLL_ARM,       /* arm the apis' Rx interrupts, poll once more (then POLL_WAIT) */
	POLL_WAIT,      /* wait for a port's signal, at most ns */
};

struct poll_plan {
	enum poll_act act;
	uint64_t ns;
};

#define POLL_MAX_APIS 2
#define POLL_STREAMS 2

struct poller {
	enum poll_mode mode;
	uint64_t hz;
	uint64_t spin;                 /* POLL_SPIN_NS in ticks */
	uint64_t idle_since;           /* tick of the first empty poll in a row, 0 while frames come */
	unsigned backoff;              /* adaptive: sleeps in a row */
	struct api *intr[POLL_MAX_APIS]; /* apis to arm before a wait (api_ops.rx_intr) */
	unsigned nintr;
	bool armed;
	int epfd;                      /* one epoll set over every rx fd; -1: none */
	enum poll_act last;            /* adaptive: what the latest empty poll did */
	uint64_t late;                 /* adaptive: smoothed overshoot of a sleep, ticks */
	uint64_t margin;               /* POLL_MARGIN_NS in ticks */
	uint64_t plan_max;             /* POLL_PLAN_MAX_NS in ticks */
	uint64_t yield_max;            /* POLL_YIELD_MAX_NS in ticks */
	/* adaptive: the pace of the traffic, one per stream: an nf's two ports
	 * each have theirs (a latency run's requests on one, replies on the
	 * other, each regular where their mix is not) */
	struct arrivals arr[POLL_STREAMS];
	unsigned streams;
	struct poll_stats s;
	struct stalls *stalls;         /* the loop's (set by its role): a sleep or a wait restarts its
	                                * gap as it ends, so a chosen pause is no stall; NULL: none */
};

/* The adaptive back-off, a pure function: the k-th sleep in a row (k from 0)
 * lasts POLL_BACKOFF_MIN_NS << k, capped at POLL_BACKOFF_MAX_NS. */
uint64_t poll_backoff_ns(unsigned k);

/* rx: the apis the loop receives from (NULL for none: a sender only sleeps).
 * 0, or -1 after a line on stderr (interrupt: an api with nothing to wait on,
 * or epoll failing; adaptive backs off instead). Sets the calling thread's timer slack to 1 ns when the
 * mode sleeps (threads created afterwards inherit it), so the kernel does not
 * add its default 50 us to every sleep. */
int poller_init(struct poller *p, enum poll_mode mode, uint64_t hz, struct api *a, struct api *b);
void poller_free(struct poller *p);

/* adaptive: the sender's rate in frames per second (--rate), the pace to
 * expect before the first frames and after a pause (arrivals.h). */
void poller_expect(struct poller *p, double rate);

/* adaptive: an nf with two ports tells each port's arrivals apart: it calls
 * poller_arrived() per port with frames before poller_got(). */
void poller_streams(struct poller *p, unsigned n);

static inline void poller_arrived(struct poller *p, unsigned stream, uint64_t now)
{
	if (p->mode == POLL_ADAPTIVE)
		arrivals_seen(&p->arr[stream], now);
}

/* adaptive: arrivals over every stream, and the shortest pace (ns, 0 none) */
uint64_t poller_arrivals(const struct poller *p);
uint64_t poller_gap_ns(const struct poller *p);

/* A poll of every port found nothing at tick now; the loop needs the thread
 * back by tick `until` (UINT64_MAX: no bound but POLL_WAIT_MAX_NS). */
void poller_empty(struct poller *p, uint64_t now, uint64_t until);

/* Adaptive: what to do after an empty poll at tick now (poll.h's top), never
 * sleeping or waiting past until (it ends them the learnt overshoot and
 * POLL_MARGIN_NS before, and yields in what is left). No system call: poller_empty() does what it
 * says, and the tests check the plans. Advances the back-off when it plans
 * one of its sleeps. */
struct poll_plan poller_plan(struct poller *p, uint64_t now, uint64_t until);

void poller_wake(struct poller *p);   /* frames again after empty polls: reset, disarm */

/* A poll that brought frames at tick now: the hot path, an increment and a
 * test (and adaptive's arrival, a few integer operations). */
static inline void poller_got(struct poller *p, uint64_t now)
{
	p->s.polls++;
	if (p->mode == POLL_ADAPTIVE && p->streams == 1)
		arrivals_seen(&p->arr[0], now);
	if (__builtin_expect(p->idle_since != 0 || p->armed, 0))
		poller_wake(p);
}

/* A sender with nothing to do until tick until: busy spins (one pause), the
 * other modes sleep until then (not for less than POLL_MIN_NAP_NS). */
void poller_pause(struct poller *p, uint64_t now, uint64_t until);

void poll_stats_add(struct poll_stats *to, const struct poll_stats *from);

#endif
