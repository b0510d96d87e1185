/* client: round-trip time. The paced generator (gen.c) sends; the echoes are
 * taken by echo_poll(), which measures RTT and prints the interval records.
 *
 * --threads 1 (the default unless sockets block): one loop. The generator
 * calls echo_poll() whenever no burst is due and after each burst, so a
 * poll-mode api costs one spinning core, not two: with two spinning threads
 * and a server on a 2-core machine, RTT measures the scheduler's time slice.
 * --threads 2: the generator on the main thread, echo_poll() in a loop on a
 * receive thread; needed when rx blocks (-B), where it frees the core.
 *
 * Shared clock: both threads read one calibration made before they start
 * and never re-anchored (read-only, so no locking), and the TSC it is based
 * on is invariant and synchronised across cores (clock.c requires
 * constant_tsc and nonstop_tsc), so a timestamp taken on the tx core is
 * comparable with a tick read on the rx core. Without such a TSC both read
 * CLOCK_MONOTONIC.
 *
 * The echoes of the last packets are awaited for --drain seconds after the
 * last send (also after SIGINT); lost = sent - echoed over the measured
 * window. */
#include "roles.h"
#include "../core/rx.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct client {
	struct run rx;            /* the echoes' timeline: owned by whoever calls echo_poll() */
	struct gen_pub pub;       /* written by the generator */
	_Atomic uint64_t tx_stop; /* tick the generator stopped at, 0 while sending */
	struct rx_filter f;
	uint64_t drain;           /* ticks */
	int err;
};

static void collect(struct run *r)
{
	struct client *cl = r->collect_arg;

	r->c.tx_packets = atomic_load_explicit(&cl->pub.tx_packets, memory_order_relaxed);
	r->c.tx_bytes = atomic_load_explicit(&cl->pub.tx_bytes, memory_order_relaxed);
	r->c.tx_refused = atomic_load_explicit(&cl->pub.tx_refused, memory_order_relaxed);
}

/* One burst of echoes; false once the drain after the last send is over. */
static bool echo_poll(struct client *cl)
{
	struct run *r = &cl->rx;
	const struct opts *o = r->o;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	struct counters *c = &r->c;
	struct pkt pkts[API_MAX_BURST];
	uint16_t n = ops->rx_burst(a, pkts, (uint16_t)o->burst);
	uint64_t now = clock_ticks();
	uint64_t stop = atomic_load_explicit(&cl->tx_stop, memory_order_acquire);

	if (now >= r->t_next)
		run_tick(r, now);
	if (stop && now >= stop + cl->drain) {
		if (n)
			ops->release(a, pkts, n);
		return false;
	}
	if (!n)
		return true;
	uint64_t now_ns = clock_ns(&r->clk, now);
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *d = pkts[i].data;
		/* the echo of flow sport+i comes back to port sport+i; the
		 * sender's warm-up mark is the only one that counts */
		if (rx_classify(c, d, pkts[i].len, &cl->f) == RX_OURS)
			rx_measure(r, d, rd16(d + OFF_UDP_DPORT), false, now_ns);
	}
	ops->release(a, pkts, n);
	return true;
}

static void echo_idle(void *arg)
{
	echo_poll(arg);
}

static void *rx_thread(void *arg)
{
	struct client *cl = arg;
	int cpu = cl->rx.o->rx_cpu;

	if (run_pin(cpu)) {
		fprintf(stderr, "cnfperf-engine: --rx-cpu %d: cannot pin the receive thread\n", cpu);
		cl->err = 1;
	}
	while (echo_poll(cl))
		;
	return NULL;
}

static void tx_done(struct client *cl, const struct run *tx)
{
	atomic_store_explicit(&cl->tx_stop, tx->t_stop ? tx->t_stop : clock_ticks(), memory_order_release);
}

/* Runs the generator, and echo_poll() until the drain is over. */
static int exchange(struct client *cl, struct run *tx)
{
	pthread_t th;
	int rc;

	if (tx->o->threads == 1) {
		const struct gen_idle idle = { echo_idle, cl };
		rc = gen_run(tx, &cl->pub, &idle);
		tx_done(cl, tx);
		while (echo_poll(cl))
			;
		return rc;
	}
	if ((errno = pthread_create(&th, NULL, rx_thread, cl))) {
		perror("cnfperf-engine: receive thread");
		return 1;
	}
	rc = gen_run(tx, &cl->pub, NULL);
	tx_done(cl, tx);
	pthread_join(th, NULL);
	return rc;
}

int role_client(struct run *tx)
{
	const struct opts *o = tx->o;
	struct client cl = { 0 };

	if (o->threads == 2 && !tx->api->ops->thread_safe_rxtx) {
		fprintf(stderr, "cnfperf-engine: --api %s: cannot receive and send from two threads (use --threads 1)\n",
			o->api);
		return 1;
	}
	/* the echoes' run carries the histograms and prints the records */
	cl.rx = *tx;
	tx->lat = tx->lat_ival = NULL;
	cl.rx.lat_kind = "rtt";
	cl.rx.reanchor = false;
	cl.rx.collect = collect;
	cl.rx.collect_arg = &cl;
	cl.f = (struct rx_filter){ .ip = o->src_ip, .port_lo = o->sport,
				   .port_hi = (uint16_t)(o->sport + o->flows - 1), .l2 = tx->api->ops->l2 };
	cl.drain = clock_s_to_ticks(&tx->clk, o->drain);
	tx->reanchor = false;
	tx->silent = true;
	if (!(cl.rx.seq = seq_new())) {
		fprintf(stderr, "cnfperf-engine: out of memory for sequence tracking\n");
		return 1;
	}
	run_ready(tx);
	/* both timelines start at the same tick; only tx ends by duration */
	uint64_t now = clock_ticks();
	run_start(&cl.rx, now);
	cl.rx.t_end = 0;
	cl.rx.t_next = now;
	int rc = exchange(&cl, tx);

	/* the measured window is the sender's */
	cl.rx.measuring = tx->measuring;
	cl.rx.t_measure = tx->t_measure;
	cl.rx.t_stop = tx->t_stop;
	collect(&cl.rx);
	uint64_t echoed = cl.rx.c.rx_packets - cl.rx.c.seq.duplicate;
	cl.rx.c.seq.lost = cl.rx.c.tx_packets > echoed ? (int64_t)(cl.rx.c.tx_packets - echoed) : 0;
	if (rc == 0)
		run_summary(&cl.rx);
	run_free(&cl.rx);
	return rc ? rc : cl.err;
}
