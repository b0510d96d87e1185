/* How an rx loop spends the time when no frame comes (--poll), in one place:
 * the roles call poller_empty() after a burst that came back empty on every
 * port, poller_got() after one that did not, and poller_pause() when a sender
 * has nothing to do until its next burst; they never look at the mode.
 *
 *   busy       spin on rx_burst (and on the pacer): lowest latency, one core.
 *   adaptive   spin while traffic flows; after POLL_SPIN_NS of empty polls in
 *              a row, sleep 1, 2, 4 ... POLL_BACKOFF_MAX_NS us, back to
 *              spinning at the first frame.
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

enum poll_mode { POLL_BUSY, POLL_ADAPTIVE, POLL_INTERRUPT };
#define POLL_MODES 3
extern const char *const poll_mode_names[POLL_MODES];   /* "busy", "adaptive", "interrupt" */

#define POLL_SPIN_NS 20000           /* adaptive: empty polls this long before the first sleep */
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

struct poll_stats {
	uint64_t polls, empty_polls;   /* rx bursts (on every port) and how many found nothing */
	uint64_t sleeps, slept_ns;     /* timed sleeps (adaptive back-off, senders between bursts) */
	uint64_t asked_ns;             /* what those sleeps asked for: slept - asked = wake-up cost */
	uint64_t waits, waited_ns;     /* interrupt: waits for a port to have frames */
};

#define POLL_MAX_APIS 2

struct poller {
	enum poll_mode mode;
	uint64_t hz;
	uint64_t spin;                 /* POLL_SPIN_NS in ticks */
	uint64_t idle_since;           /* tick of the first empty poll in a row, 0 while frames come */
	unsigned backoff;              /* adaptive: sleeps in a row */
	struct api *intr[POLL_MAX_APIS]; /* apis to arm before a wait (api_ops.rx_intr) */
	unsigned nintr;
	bool armed;
	int epfd;                      /* interrupt: one epoll set over every rx fd; -1 otherwise */
	struct poll_stats s;
};

/* The adaptive back-off, a pure function: the k-th sleep in a row (k from 0)
 * lasts POLL_BACKOFF_MIN_NS << k, capped at POLL_BACKOFF_MAX_NS. */
uint64_t poll_backoff_ns(unsigned k);

/* rx: the apis the loop receives from (NULL for none: a sender only sleeps).
 * 0, or -1 after a line on stderr (interrupt: an api with nothing to wait on,
 * or epoll failing). Sets the calling thread's timer slack to 1 ns when the
 * mode sleeps (threads created afterwards inherit it), so the kernel does not
 * add its default 50 us to every sleep. */
int poller_init(struct poller *p, enum poll_mode mode, uint64_t hz, struct api *a, struct api *b);
void poller_free(struct poller *p);

/* A poll of every port found nothing at tick now; the loop needs the thread
 * back by tick `until` (UINT64_MAX: no bound but POLL_WAIT_MAX_NS). */
void poller_empty(struct poller *p, uint64_t now, uint64_t until);

/* Adaptive: how many ns to sleep after an empty poll at tick now (0: keep
 * spinning), never past until, advancing the back-off as if slept. No system
 * call: poller_empty() sleeps what it says, and the tests check the schedule. */
uint64_t poller_plan(struct poller *p, uint64_t now, uint64_t until);

void poller_wake(struct poller *p);   /* frames again after empty polls: reset, disarm */

/* A poll that brought frames: the hot path, one increment and one test. */
static inline void poller_got(struct poller *p)
{
	p->s.polls++;
	if (__builtin_expect(p->idle_since != 0 || p->armed, 0))
		poller_wake(p);
}

/* A sender with nothing to do until tick until: busy spins (one pause), the
 * other modes sleep until then (not for less than POLL_MIN_NAP_NS). */
void poller_pause(struct poller *p, uint64_t now, uint64_t until);

void poll_stats_add(struct poll_stats *to, const struct poll_stats *from);

#endif
