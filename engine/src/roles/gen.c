/* Paced generator: the send role, and the client's tx thread (or, in a
 * one-thread client, its whole loop: the idle hook then takes the echoes).
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
#include <sys/prctl.h>
#include <time.h>

#include "../core/pacer.h"

void role_addresses(const struct run *r, struct frame_addr *fa)
{
	const struct opts *o = r->o;

	memcpy(fa->src_mac, o->has_src_mac ? o->src_mac : r->api->mac, 6);
	memcpy(fa->dst_mac, o->dst_mac, 6);
	fa->src_ip = o->src_ip;
	fa->dst_ip = o->dst_ip;
	fa->sport = o->sport;
	fa->dport = o->dport;
}

/* Only with --blocking: sleep until the next burst is due instead of
 * spinning, leaving the core to others (the client's receive thread may share
 * it). Pacing then rests on timer wake-ups (tens of us); timer slack is cut to
 * 1 ns (gen_run) so the kernel does not add its default 50 us on top. */
void role_sleep_until(const struct run *r, uint64_t ahead)
{
	uint64_t margin = r->clk.hz / 500000; /* 2 us: not worth a syscall */

	if (ahead <= margin) {
		cpu_relax();
		return;
	}
	uint64_t at = clock_ns(&r->clk, clock_ticks() + ahead);
	struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void publish(struct gen_pub *pub, const struct counters *c)
{
	atomic_store_explicit(&pub->tx_packets, c->tx_packets, memory_order_relaxed);
	atomic_store_explicit(&pub->tx_bytes, c->tx_bytes, memory_order_relaxed);
	atomic_store_explicit(&pub->tx_refused, c->tx_refused, memory_order_relaxed);
	atomic_store_explicit(&pub->warmup_packets, c->warmup_packets, memory_order_relaxed);
}

int gen_run(struct run *r, struct gen_pub *pub, const struct gen_idle *idle)
{
	const struct opts *o = r->o;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const unsigned len = o->size - FCS_LEN, wire = wire_bytes(len), flows = o->flows;
	const uint16_t burst = (uint16_t)o->burst;
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
	if (o->blocking)
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	uint64_t now = clock_ticks();
	run_start(r, now);
	pacer_init(&p, o->rate, burst, r->clk.hz, now);
	while (!run_stop) {
		now = clock_ticks();
		if (now >= r->t_next) {
			run_tick(r, now);
			if (r->done)
				break;
		}
		if (!pacer_due(&p, now)) {
			if (o->blocking) {
				uint64_t ahead = pacer_wait(&p, now);
				if (r->t_next - now < ahead) /* wake for records and the end too */
					ahead = r->t_next - now;
				role_sleep_until(r, ahead);
			} else if (idle) {
				idle->fn(idle->arg);
			} else {
				cpu_relax();
			}
			continue;
		}
		uint16_t n = ops->tx_alloc(a, pkts, burst);
		uint64_t ts = clock_ns(&r->clk, now);
		uint64_t seq = fseq[flow] | (r->measuring ? 0 : SEQ_WARMUP);

		wr16(tmpl + OFF_UDP_SPORT, (uint16_t)(o->sport + flow));
		for (uint16_t i = 0; i < n; i++) {
			uint8_t *d = pkts[i].data;
			memcpy(d, tmpl, len);
			pkts[i].len = (uint16_t)len;
			wr64(d + OFF_SEQ, seq + i);
			wr64(d + OFF_TS, ts);
			if (o->touch)
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
		}
		if (pub)
			publish(pub, c);
		/* at or above what the core can send the pacer is always due:
		 * without this, echoes would wait in the ring until the end */
		if (idle)
			idle->fn(idle->arg);
		flow = flow + 1 == flows ? 0 : flow + 1;
	}
	r->t_stop = clock_ticks();
	free(fseq);
	free(tmpl);
	return 0;
}

int role_send(struct run *r)
{
	run_ready(r);
	int rc = gen_run(r, NULL, NULL);
	if (rc == 0)
		run_summary(r);
	return rc;
}
