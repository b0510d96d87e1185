/* recv: counting sink. Frames not addressed to us (ARP, IPv6 ND, someone
 * else's flow on a bridge) count as `other`; ours but malformed as `bad`.
 * A frame is warm-up when its sender marked it or when it arrives during
 * our own --warmup; warm-up frames keep sequence tracking continuous but
 * count only in warmup_packets. With --clock other its sender is on another
 * host: timestamps move onto our clock, and no one-way latency (seq.h). */
#include "roles.h"
#include "../core/rx.h"

#include <stdio.h>

/* The receive loop, built twice (other_clock a constant in each): the
 * one-clock loop pays nothing for the other. */
static inline __attribute__((always_inline)) void recv_loop(struct run *r, const struct rx_filter *f,
							     bool other_clock)
{
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const uint16_t burst = (uint16_t)r->conf->burst;
	struct pkt pkts[API_MAX_BURST];
	struct rx_known known;

	rx_known_init(&known);
	for (;;) {
		uint16_t n = ops->rx_burst(a, pkts, burst);
		uint64_t now = clock_ticks();

		enum rx_step step = run_rx_step(r, n, now);

		if (step == RX_STOP) {
			if (n)
				ops->release(a, pkts, n);
			break;
		}
		if (step == RX_IDLE)
			continue;
		uint64_t now_ns = clock_ns(&r->clk, now);
		unsigned measured = rx_measure_burst(r, &known, pkts, n, f, OFF_UDP_SPORT, !r->measuring,
						     now_ns, other_clock);
		ops->release(a, pkts, n);
		run_rx_window(r, now, measured);
		run_conform(r, now, measured);
	}
}

/* A queue's run: its own tracker, and a poller over its own port instance
 * that expects its share of the rate. */
static int recv_prepare(struct run *r)
{
	const struct conf *cf = r->conf;

	if (!(r->seq = seq_new(r->open_ns))) {
		fprintf(stderr, "cnfperf-engine: out of memory for sequence tracking\n");
		return 1;
	}
	if (poller_init(&r->poll, cf->poll, r->clk.hz, r->api, NULL))
		return 1;
	poller_expect(&r->poll, cf->rate / (r->queues ? r->queues : 1));
	r->poll.stalls = &r->stalls;
	return 0;
}

static int recv_run(struct run *r)
{
	const struct conf *cf = r->conf;
	const struct rx_filter f = { .ip = cf->src_ip, .ip_more = cf->ip_span - 1,
				     .port_lo = cf->sport, .port_hi = cf->sport,
				     .l2 = r->api->ops->l2 };

	if (cf->clock_other)
		recv_loop(r, &f, true);
	else
		recv_loop(r, &f, false);
	return 0;
}

static void recv_finish(struct run *r)
{
	poller_free(&r->poll);
}

int role_recv(struct run *r)
{
	static const struct queue_role qr = { recv_prepare, recv_run, recv_finish };

	r->rx_window = true;
	r->lat_kind = "one_way";   /* none with --clock other: main.c keeps no histograms */
	return queues_run(r, &qr);
}
