/* What every role shares: the stop flag, the run's timeline (warm-up,
 * measured window, end), counters, and the JSON records (ready, interval,
 * summary). Roles call run_tick() only when a tick reaches r->t_next, so the
 * hot loop pays one compare per burst for all of it. */
#ifndef CNFPERF_RUN_H
#define CNFPERF_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "../api/api.h"
#include "bucket.h"
#include "clock.h"
#include "conf.h"
#include "drain.h"
#include "hist.h"
#include "poll.h"
#include "seq.h"
#include "stall.h"

struct json;

/* Set by the SIGINT/SIGTERM handler, read by every loop. Global because a
 * signal handler can reach nothing else; sig_atomic_t makes it safe to share. */
extern volatile sig_atomic_t run_stop;

void run_signals(void);
int run_pin(int cpu);  /* 0 or -errno */

struct counters {
	uint64_t tx_packets, tx_bytes, tx_refused;
	/* generators: frames their schedule left out in the measured window,
	 * because a stall put them further behind than the pacer catches up
	 * (pacer.h): what was offered is tx_packets + tx_skipped */
	uint64_t tx_skipped;
	uint64_t rx_packets, rx_bytes;
	uint64_t bad, other, corrupt, warmup_packets;
	/* generators: frames sent in the warm-up. warmup_packets is what a role
	 * counted with the warm-up mark, sent (send) or received (recv, server, and
	 * the client's and tester's returns): one counter cannot say both. */
	uint64_t warmup_tx_packets;
	struct seq_counts seq;
};

struct run {
	const struct conf *conf;   /* what the command line asked for */
	struct api *api, *api2;
	unsigned queues;        /* nf, send, recv: a thread per queue of each port (--threads) */
	unsigned queue;         /* send, recv: the queue this run polls (roles/queues.c); a
	                         * generator's are its flows f with f mod queues = queue */
	struct api *qapi[QUEUES_MAX][2];  /* queue q's instances of port 1 and 2 ([0]: api, api2) */
	struct clock clk;
	bool reanchor;          /* false when several threads read one clock (client) */
	bool rx_window;         /* rates over first..last measured frame (receivers) */
	bool silent;            /* prints no interval records (the client's tx thread) */
	bool started, measuring, done;
	uint64_t t_start, t_measure, t_end, t_stop;
	uint64_t t_next;        /* earliest of the events below: run_tick() is due */
	uint64_t t_next_ival, t_last_ival, t_next_anchor, ival;
	uint64_t t_first_rx, t_last_rx, first_burst;
	uint64_t t_drain_end;   /* receivers: set when a stop signal arrives (RUN_DRAIN_S after it) */
	uint64_t t_signal;      /* receivers: when it arrived */
	struct drain drain;     /* receivers: the silences their drain is held to (drain.h) */
	uint64_t wake;          /* receivers: an idle poller is back by this tick (nf: its shaper's
	                         * next departure); UINT64_MAX: whenever frames come */
	struct counters c, prev;
	struct hist *lat, *lat_ival;  /* NULL when the role measures no latency */
	struct hist_run lat_run;      /* samples on their way into lat_ival (hist.h) */
	const char *lat_kind;         /* "one_way" | "rtt" */
	struct seq_tracker *seq;      /* NULL when the role tracks no sequence */
	uint64_t open_ns;             /* CLOCK_MONOTONIC before its ports were opened: seq_new()'s start */
	void (*collect)(struct run *r); /* client: fold the tx thread's counters into c */
	void *collect_arg;
	struct poller poll;           /* the role's, set up by the role (poller_init) */
	struct poll_stats poll_more;  /* the client's tx thread: its sleeps, for the summary */
	struct stalls stalls;         /* the role's loop's (core/stall.h); printed: its kept sums */
	void (*summary_more)(struct run *r, struct json *j); /* nf: its own fields */
	bool conforms;                /* --conformance: what it measured held to a contract */
	struct conformance conform;
};

/* Receivers: a burst's measured frames, held to the --conformance contract. */
static inline void run_conform(struct run *r, uint64_t now, unsigned measured)
{
	if (r->conforms && measured)
		conformance_add(&r->conform, now, measured);
}

/* 0, or -1 after a message on stderr (out of memory) */
int run_init(struct run *r, const struct conf *cf, struct api *a, const struct clock *clk, bool latency);
void run_free(struct run *r);
void run_start(struct run *r, uint64_t now);
void run_tick(struct run *r, uint64_t now);
void run_ready(const struct run *r);
/* Generators, as their warm-up begins (after --settle): the `start` record. */
void run_started(const struct run *r);
void run_summary(struct run *r);

/* --hold: the second half of a two-phase stop. The summary is out and the
 * datapath has stopped; the ports stay open and untouched until stdin
 * reaches end of file (the orchestrator closes it) or a signal arrives.
 * A peer that closes its port while we still poll the shared rings can crash
 * us (DPDK 22.11's memif unmaps them from its control thread), so the
 * orchestrator releases engines only once none of them polls any more. */
void run_hold(void);

/* --keep: the held engine's next trial. Waits as run_hold() does, for one
 * line on stdin, "RATE DURATION WARMUP": a generator's new --rate, --duration
 * and --warmup, the other roles' --rate (an adaptive poller's pace). 1: cf
 * has them, run the trial; 0: stdin ended or a signal came (release); -1: a
 * line that is not three numbers, after a message on stderr. */
int run_next(struct conf *cf);

/* Receivers: whether to go on after this burst of n frames. After SIGINT or
 * SIGTERM they still take what is on its way, until it stops coming (drain.h),
 * RUN_DRAIN_S at most. */
#define RUN_DRAIN_S 0.5
static inline bool run_keep_going(struct run *r, uint16_t n, uint64_t now)
{
	if (!run_stop)
		return true;
	if (!r->t_drain_end) {
		r->t_signal = now;
		r->t_drain_end = now + clock_s_to_ticks(&r->clk, RUN_DRAIN_S);
	}
	return now < (n ? r->t_drain_end : drain_end(&r->drain, r->t_signal, r->t_drain_end));
}

/* Receivers (recv, server, nf), after each rx burst of n frames at tick now:
 * one place for what every rx loop does besides its frames. RX_STOP: the run
 * is over (drained after a signal, or done): give the frames back and leave.
 * RX_IDLE: nothing came; the poller has spun, slept or waited: poll again.
 * RX_GO: frames to handle; the run has started (at the first of them). */
enum rx_step { RX_STOP, RX_IDLE, RX_GO };

static inline enum rx_step run_rx_step(struct run *r, unsigned n, uint64_t now)
{
	stalls_see(&r->stalls, now);
	if (!run_keep_going(r, (uint16_t)n, now))
		return RX_STOP;
	if (now >= r->t_next) {
		run_tick(r, now);
		if (r->done)
			return RX_STOP;
	}
	if (!n) {
		/* draining: back by its end at the latest */
		uint64_t wake = r->wake;
		if (r->t_drain_end) {
			uint64_t end = drain_end(&r->drain, r->t_signal, r->t_drain_end);
			wake = end < wake ? end : wake;
		}
		poller_empty(&r->poll, now, wake);
		return RX_IDLE;
	}
	drain_saw(&r->drain, now, r->measuring && !run_stop);
	poller_got(&r->poll, now);
	if (!r->started)
		run_start(r, now);
	return RX_GO;
}

/* Receivers: account a burst that held measured frames. Their window is
 * their first measured frame to their last: stalls count from the first on,
 * and are kept as of the last (what came after is idle time, no window). */
static inline void run_rx_window(struct run *r, uint64_t now, unsigned measured)
{
	if (!measured)
		return;
	if (!r->t_first_rx) {
		r->t_first_rx = now;
		r->first_burst = measured;
		r->stalls.on = true;
	}
	r->t_last_rx = now;
	stalls_keep(&r->stalls);
}

#endif
