/* The return side of client and tester: a paced generator (send.c) sends,
 * and what comes back is taken by probe_poll(), which measures latency and
 * prints the interval records. The client sends to a server and takes its echoes (round-trip
 * time); the tester holds both ends of a path: it sends on port 1 and takes
 * its own frames back on port 2 (or on port 1: a mirror in the path), so its
 * one-way latency reads one clock on both ends.
 *
 * One thread (the tester; the client with --threads 1, the default with
 * --poll busy): the generator calls probe_poll() whenever no burst is due and
 * after each burst, so a poll-mode api costs one spinning core, not two: with
 * two spinning threads and a server on a 2-core machine, RTT measures the
 * scheduler's time slice. With --poll other than busy the poller sleeps or
 * waits there, until the next burst is due at the latest.
 * --threads 2 (client): the generator on the main thread, probe_poll() in a
 * loop on a receive thread; needed when rx sleeps (--poll adaptive or
 * interrupt), where both threads leave the core to others.
 *
 * Shared clock: both timelines read one calibration made before they start
 * and never re-anchored (read-only, so no locking), and the TSC it is based
 * on is invariant and synchronised across cores (clock.c requires
 * constant_tsc and nonstop_tsc), so a timestamp taken on the tx core is
 * comparable with a tick read on the rx core. Without such a TSC both read
 * CLOCK_MONOTONIC.
 *
 * What comes back of the last packets is awaited after the last send (also
 * after SIGINT) until all of it is back (a lossless run waits no longer than
 * its last frame's trip), or until it stops coming (core/drain.h), --drain
 * seconds at most; lost = sent - received over the measured window. */
#include "probe.h"
#include "../core/json.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void collect(struct run *r)
{
	struct probe *pr = r->collect_arg;

	r->c.tx_packets = atomic_load_explicit(&pr->pub.tx_packets, memory_order_relaxed);
	r->c.tx_bytes = atomic_load_explicit(&pr->pub.tx_bytes, memory_order_relaxed);
	r->c.tx_refused = atomic_load_explicit(&pr->pub.tx_refused, memory_order_relaxed);
	r->c.tx_skipped = atomic_load_explicit(&pr->pub.tx_skipped, memory_order_relaxed);
	r->c.warmup_tx_packets = atomic_load_explicit(&pr->pub.warmup_tx_packets, memory_order_relaxed);
}

/* As many frames of the measured window came back as were sent, and each
 * in order: the drain has nothing left to wait for (on an in-order path the
 * warm-up's are ahead of them; one the path lost does not keep the drain
 * waiting). A path that duplicates or reorders could make up the count with
 * a copy while a frame is still on its way, so then the drain runs its full
 * time. The generator publishes before tx_stop is set, so after the stop its
 * counts are final. */
static bool all_back(const struct probe *pr)
{
	const struct counters *c = &pr->rx.c;
	uint64_t sent = atomic_load_explicit(&pr->pub.tx_packets, memory_order_relaxed);

	return !c->seq.duplicate && !c->seq.reordered && c->rx_packets >= sent;
}

/* the summary's settle_s: how long the generator waited for the path to
 * carry a frame (--settle), null without --settle */
static void probe_more(struct run *r, struct json *j)
{
	const struct probe *pr = r->collect_arg;

	if (r->conf->settle > 0)
		json_num(j, "settle_s", clock_ticks_to_s(&r->clk, pr->pub.settle_ticks), 3);
	else
		json_null(j, "settle_s");
}

/* One burst of what came back; false once the drain after the last send is
 * over, or once everything sent is back. An empty burst lets the poller
 * sleep or wait, until `until` at most. */
static bool probe_poll(struct probe *pr, uint64_t until)
{
	struct run *r = &pr->rx;
	struct api *a = pr->api;
	const struct api_ops *ops = a->ops;
	struct counters *c = &r->c;
	struct pkt pkts[API_MAX_BURST];
	uint16_t n = ops->rx_burst(a, pkts, (uint16_t)r->conf->burst);
	uint64_t now = clock_ticks();
	uint64_t stop = atomic_load_explicit(&pr->tx_stop, memory_order_acquire);

	if (pr->thread)
		stalls_see(&r->stalls, now);
	if (now >= r->t_next)
		run_tick(r, now);
	if (stop)   /* the window is the generator's: over (after run_tick, which
	             * would open it again where the rx run starts measuring late) */
		r->stalls.on = false;
	if (n)
		drain_saw(&pr->quiet, now, r->measuring && !stop);
	uint64_t end = stop ? drain_end(&pr->quiet, stop, stop + pr->drain) : UINT64_MAX;
	if (stop && (now >= end || all_back(pr))) {
		if (n)
			ops->release(a, pkts, n);
		return false;
	}
	if (!n) {
		poller_empty(&r->poll, now, end < until ? end : until);
		return true;
	}
	poller_got(&r->poll, now);
	uint64_t now_ns = clock_ns(&r->clk, now);
	/* the sender's warm-up mark is the only one that counts */
	unsigned measured = rx_measure_burst(r, &pr->known, pkts, n, &pr->f, pr->flow_off, false, now_ns, false);
	ops->release(a, pkts, n);
	run_conform(r, now, measured);
	/* --settle: the path carries frames; said once (pub is the generator's
	 * cache line, written by it every burst) */
	if (__builtin_expect(!pr->told, 0) && c->rx_packets + c->warmup_packets) {
		pr->told = true;
		atomic_store_explicit(&pr->pub.back, true, memory_order_release);
	}
	return !(stop && all_back(pr));
}

static void probe_idle(void *arg, uint64_t until)
{
	probe_poll(arg, until);
}

static void *rx_thread(void *arg)
{
	struct probe *pr = arg;
	int cpu = pr->rx.conf->rx_cpu;

	if (run_pin(cpu)) {
		fprintf(stderr, "cnfperf-engine: --rx-cpu %d: cannot pin the receive thread\n", cpu);
		pr->err = 1;
	}
	stalls_woke(&pr->rx.stalls, clock_ticks());   /* its loop starts now, not at run_start() */
	while (probe_poll(pr, UINT64_MAX))
		;
	pr->rx.stalls.kept = pr->rx.stalls.live;
	return NULL;
}

static void tx_done(struct probe *pr, const struct run *tx)
{
	atomic_store_explicit(&pr->tx_stop, tx->t_stop ? tx->t_stop : clock_ticks(), memory_order_release);
}

/* Runs the generator, and probe_poll() until the drain is over. */
static int exchange(struct probe *pr, struct run *tx)
{
	pthread_t th;
	int rc;

	if (tx->conf->threads != 2) {
		const struct gen_idle idle = { probe_idle, pr };
		rc = gen_run(tx, &pr->pub, &idle);
		tx_done(pr, tx);
		while (probe_poll(pr, UINT64_MAX))
			;
		return rc;
	}
	if ((errno = pthread_create(&th, NULL, rx_thread, pr))) {
		perror("cnfperf-engine: receive thread");
		return 1;
	}
	rc = gen_run(tx, &pr->pub, NULL);
	tx_done(pr, tx);
	pthread_join(th, NULL);
	return rc;
}

int probe_run(struct run *tx, struct probe *pr, const char *lat_kind)
{
	const struct conf *cf = tx->conf;
	int rc = 1;

	/* the return run carries the histograms and prints the records */
	pr->rx = *tx;
	tx->lat = tx->lat_ival = NULL;
	pr->rx.lat_kind = lat_kind;
	pr->rx.reanchor = false;
	pr->rx.collect = collect;
	pr->rx.collect_arg = pr;
	pr->rx.summary_more = probe_more;
	pr->drain = clock_s_to_ticks(&tx->clk, cf->drain);
	drain_init(&pr->quiet, clock_s_to_ticks(&tx->clk, DRAIN_QUIET_MIN_S));
	rx_known_init(&pr->known);
	tx->reanchor = false;
	tx->silent = true;
	if (!(pr->rx.seq = seq_new(tx->open_ns))) {
		fprintf(stderr, "cnfperf-engine: out of memory for sequence tracking\n");
		goto out;
	}
	/* rx waits in one poller, the generator of a two-thread client sleeps in
	 * another (each thread its own); both made here so the receive thread
	 * inherits the timer slack */
	if (poller_init(&pr->rx.poll, cf->poll, tx->clk.hz, pr->api, NULL) ||
	    poller_init(&tx->poll, cf->poll, tx->clk.hz, NULL, NULL))
		goto out;
	poller_expect(&pr->rx.poll, cf->rate);   /* its own frames come back at its pace */
	/* one loop (the generator's, probe_poll() its idle time) or two */
	pr->thread = cf->threads == 2;
	pr->rx.stalls.pollers = pr->thread;
	tx->poll.stalls = &tx->stalls;
	pr->rx.poll.stalls = pr->thread ? &pr->rx.stalls : &tx->stalls;
	run_ready(tx);
	/* both timelines start at the same tick; only tx ends by duration */
	uint64_t now = clock_ticks();
	run_start(&pr->rx, now);
	pr->rx.t_end = 0;
	pr->rx.t_next = now;
	rc = exchange(pr, tx);

	/* the measured window is the sender's */
	pr->rx.measuring = tx->measuring;
	pr->rx.t_measure = tx->t_measure;
	pr->rx.t_stop = tx->t_stop;
	pr->rx.poll_more = tx->poll.s;
	stalls_merge(&pr->rx.stalls, &tx->stalls);
	collect(&pr->rx);
	uint64_t back = pr->rx.c.rx_packets - pr->rx.c.seq.duplicate;
	pr->rx.c.seq.lost = pr->rx.c.tx_packets > back ? (int64_t)(pr->rx.c.tx_packets - back) : 0;
	if (rc == 0)
		run_summary(&pr->rx);
	rc = rc ? rc : pr->err;
out:
	poller_free(&tx->poll);
	poller_free(&pr->rx.poll);
	run_free(&pr->rx);
	return rc;
}
