/* send: the paced generator. client and tester run it too: on the client's
 * tx thread, or as the whole loop of a one-thread client or the tester (its
 * idle hook then takes the echoes, or what came through the path).
 *
 * Per burst: one tick read, one timestamp, one pacer check; per packet: a
 * copy of the prebuilt frame and two 8-byte stores (seq, timestamp). Flows
 * take turns by burst, so a burst leaves through one socket (udp: one
 * sendmmsg) and each flow's sequence stays contiguous. Frames the api refuses
 * give their sequence numbers back: receivers never see a gap for a packet
 * that was not sent. */
#include "roles.h"

#include <stdio.h>
#include <stdlib.h>

#include "../core/pacer.h"

void role_addresses(const struct run *r, struct frame_addr *fa)
{
	const struct conf *cf = r->conf;

	memcpy(fa->src_mac, cf->src_mac.given ? cf->src_mac.addr : r->api->mac, 6);
	memcpy(fa->dst_mac, cf->dst_mac.addr, 6);
	fa->src_ip = cf->src_ip;
	fa->dst_ip = cf->dst_ip;
	fa->sport = cf->sport;
	fa->dport = cf->dport;
}

static void publish(struct gen_pub *pub, const struct counters *c)
{
	atomic_store_explicit(&pub->tx_packets, c->tx_packets, memory_order_relaxed);
	atomic_store_explicit(&pub->tx_bytes, c->tx_bytes, memory_order_relaxed);
	atomic_store_explicit(&pub->tx_refused, c->tx_refused, memory_order_relaxed);
	atomic_store_explicit(&pub->warmup_tx_packets, c->warmup_tx_packets, memory_order_relaxed);
}

int gen_run(struct run *r, struct gen_pub *pub, const struct gen_idle *idle)
{
	const struct conf *cf = r->conf;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const unsigned len = cf->size - FCS_LEN, wire = wire_bytes(len), flows = cf->flows;
	const uint16_t burst = (uint16_t)cf->burst;
	struct counters *c = &r->c;
	uint64_t *fseq = calloc(flows, sizeof(*fseq));
	uint8_t *tmpl = calloc(1, len);
	struct pkt pkts[API_MAX_BURST];
	struct frame_addr fa;
	struct pacer p;
	unsigned flow = 0;

	if (!fseq || !tmpl) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		free(fseq);
		free(tmpl);
		return 1;
	}
	role_addresses(r, &fa);
	frame_build(tmpl, len, &fa);

	uint64_t now = clock_ticks();
	run_start(r, now);
	pacer_init(&p, cf->rate, burst, r->clk.hz, now);
	while (!run_stop) {
		now = clock_ticks();
		if (now >= r->t_next) {
			run_tick(r, now);
			if (r->done)
				break;
		}
		if (!pacer_due(&p, now)) {
			/* back by the next burst, record or end; with --poll other than
			 * busy the poller sleeps until then instead of spinning, and
			 * leaves the core to others (a client's receive thread) */
			uint64_t until = now + pacer_wait(&p, now);
			if (r->t_next < until)
				until = r->t_next;
			if (idle)
				idle->fn(idle->arg, until);
			else
				poller_pause(&r->poll, now, until);
			continue;
		}
		uint16_t n = ops->tx_alloc(a, pkts, burst);
		uint64_t ts = clock_ns(&r->clk, now);
		uint64_t seq = fseq[flow] | (r->measuring ? 0 : SEQ_WARMUP);

		wr16(tmpl + OFF_UDP_SPORT, (uint16_t)(cf->sport + flow));
		for (uint16_t i = 0; i < n; i++) {
			uint8_t *d = pkts[i].data;
			memcpy(d, tmpl, len);
			pkts[i].len = (uint16_t)len;
			wr64(d + OFF_SEQ, seq + i);
			wr64(d + OFF_TS, ts);
			if (cf->touch)
				frame_touch(d, len, seq + i);
		}
		uint16_t k = n ? ops->tx_burst(a, pkts, n) : 0;
		if (k < n)
			ops->release(a, pkts + k, (uint16_t)(n - k));
		fseq[flow] += k;
		if (r->measuring) {
			c->tx_packets += k;
			c->tx_bytes += (uint64_t)k * wire;
			c->tx_refused += burst - k;
		} else {
			c->warmup_packets += k;
			c->warmup_tx_packets += k;
		}
		if (pub)
			publish(pub, c);
		/* at or above what the core can send the pacer is always due:
		 * without this, echoes would wait in the ring until the end */
		if (idle)
			idle->fn(idle->arg, now);
		flow = flow + 1 == flows ? 0 : flow + 1;
	}
	r->t_stop = clock_ticks();
	free(fseq);
	free(tmpl);
	return 0;
}

int role_send(struct run *r)
{
	if (poller_init(&r->poll, r->conf->poll, r->clk.hz, NULL, NULL))
		return 1;
	run_ready(r);
	int rc = gen_run(r, NULL, NULL);
	if (rc == 0)
		run_summary(r);
	poller_free(&r->poll);
	return rc;
}
