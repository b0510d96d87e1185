/* send: the paced generator. client and tester run it too: on the client's
 * tx thread, or as the whole loop of a one-thread client or the tester (its
 * idle hook then takes the echoes, or what came through the path).
 *
 * Per burst: one tick read, one timestamp, one pacer check; per packet: a
 * copy of the prebuilt frame and two 8-byte stores (seq, timestamp). The
 * copy has a constant size for 64-byte frames (the size a generator's rate
 * is measured at), so the compiler makes it four stores instead of a call
 * to memcpy. Flows take turns by burst, so a burst leaves through one
 * socket (udp: one sendmmsg) and each flow's sequence stays contiguous.
 * Frames the api refuses give their sequence numbers back: receivers never
 * see a gap for a packet that was not sent. An api whose buffers may be held
 * across tx_alloc() (tx_keeps: dpdk) keeps them: they go first in the next
 * burst, restamped with that burst's numbers and time, and cost no second
 * trip through the pool (a sender into a full ring would otherwise spend
 * its time freeing and reallocating). */
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
	atomic_store_explicit(&pub->tx_skipped, c->tx_skipped, memory_order_relaxed);
	atomic_store_explicit(&pub->warmup_tx_packets, c->warmup_tx_packets, memory_order_relaxed);
}

static inline __attribute__((always_inline)) void stamp(uint8_t *d, unsigned len, uint64_t seq, uint64_t ts,
							bool touch)
{
	wr64(d + OFF_SEQ, seq);
	wr64(d + OFF_TS, ts);
	if (touch)
		frame_touch(d, len, seq);
}

/* Copies the frame template into frames [from, n) and stamps frames [0, n):
 * frames before `from` were built for an earlier burst (tx_keeps) and need
 * only this burst's source port, numbers and time. Inline, with len a
 * constant where it is called with one (gen_run). */
static inline __attribute__((always_inline)) void fill(struct pkt *pkts, uint16_t from, uint16_t n,
						       const uint8_t *tmpl, unsigned len, uint16_t sport,
						       uint64_t seq, uint64_t ts, bool touch)
{
	for (uint16_t i = 0; i < from; i++) {
		wr16(pkts[i].data + OFF_UDP_SPORT, sport);
		stamp(pkts[i].data, len, seq + i, ts, touch);
	}
	for (uint16_t i = from; i < n; i++) {
		memcpy(pkts[i].data, tmpl, len);
		pkts[i].len = (uint16_t)len;
		stamp(pkts[i].data, len, seq + i, ts, touch);
	}
}

/* --settle: a switch may forward on a port only some time after its peer
 * connected (OVS reconfigures a vhost-user port then, which takes up to half
 * a second when it makes a jumbo MTU's buffer pool), and what is sent
 * meanwhile piles up in a ring or is dropped. So one warm-up frame every
 * SETTLE_GAP_S until one of ours is back (pub->back), at most --settle: little
 * waits in a ring that has not moved yet, and the warm-up starts once the
 * path carries frames. Only roles that take their frames back have a pub. */
#define SETTLE_GAP_S 0.01

static void settle(struct run *r, struct gen_pub *pub, const struct gen_idle *idle,
		   const uint8_t *tmpl, unsigned len, uint64_t *fseq)
{
	const struct conf *cf = r->conf;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const uint64_t start = clock_ticks(), gap = clock_s_to_ticks(&r->clk, SETTLE_GAP_S);
	const uint64_t end = start + clock_s_to_ticks(&r->clk, cf->settle);
	uint64_t now = start;
	bool back = false;

	while (!run_stop && !back && now < end) {
		struct pkt pkt;
		if (ops->tx_alloc(a, &pkt, 1) == 1) {
			fill(&pkt, 0, 1, tmpl, len, cf->sport, fseq[0] | SEQ_WARMUP, clock_ns(&r->clk, now),
			     cf->touch);
			uint16_t k = ops->tx_burst(a, &pkt, 1);
			if (!k)
				ops->release(a, &pkt, 1);
			fseq[0] += k;
			r->c.warmup_packets += k;
			r->c.warmup_tx_packets += k;
			publish(pub, &r->c);
		}
		const uint64_t until = now + gap < end ? now + gap : end;
		while (!run_stop && now < until &&
		       !(back = atomic_load_explicit(&pub->back, memory_order_acquire))) {
			if (idle)
				idle->fn(idle->arg, until);
			else
				poller_pause(&r->poll, now, until);
			now = clock_ticks();
		}
	}
	pub->settle_ticks = clock_ticks() - start;
	if (!back && !run_stop)
		fprintf(stderr, "cnfperf-engine: nothing came back within --settle %g s; "
			"the warm-up starts anyway\n", cf->settle);
}

int gen_run(struct run *r, struct gen_pub *pub, const struct gen_idle *idle)
{
	const struct conf *cf = r->conf;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const unsigned len = cf->size - FCS_LEN, wire = wire_bytes(len), flows = cf->flows;
	const unsigned span = cf->ip_span;
	const uint16_t burst = (uint16_t)cf->burst;
	const bool touch = cf->touch, keeps = ops->tx_keeps;
	struct counters *c = &r->c;
	uint64_t *fseq = calloc(flows, sizeof(*fseq));
	uint8_t *tmpl = calloc(1, len);
	struct pkt pkts[API_MAX_BURST];
	struct frame_addr fa;
	struct pacer p;
	/* on several queues (queues.c) this run's flows are every queues-th from
	 * its queue on, and its rate their share */
	const unsigned step = r->queues > 1 ? r->queues : 1, first = step > 1 ? r->queue : 0;
	const unsigned mine = (flows - first + step - 1) / step;
	const double rate = step > 1 ? cf->rate * (double)mine / flows : cf->rate;
	unsigned flow = first;
	uint16_t held = 0;       /* refused frames kept for the next burst (keeps) */

	if (!fseq || !tmpl) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		free(fseq);
		free(tmpl);
		return 1;
	}
	role_addresses(r, &fa);
	frame_build(tmpl, len, &fa);
	if (pub && cf->settle > 0)
		settle(r, pub, idle, tmpl, len, fseq);

	if (!r->queue)   /* one record for every queue's */
		run_started(r);
	/* --onoff N: the pacer's period holds N frames, sent back to back in
	 * bursts of --burst (as fast as the api takes them), then nothing until
	 * the next period: the same mean rate, in clumps */
	const unsigned period_frames = cf->onoff ? cf->onoff : burst;
	unsigned todo = 0;       /* frames of the current period still to send */
	uint64_t now = clock_ticks();
	run_start(r, now);
	pacer_init(&p, rate, period_frames, r->clk.hz, now);
	pacer_count_from(&p, r->t_measure);
	while (!run_stop) {
		now = clock_ticks();
		stalls_see(&r->stalls, now);
		if (now >= r->t_next) {
			run_tick(r, now);
			if (r->done)
				break;
		}
		if (!todo) {
			const uint64_t forgiven = p.forgiven;
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
			if (__builtin_expect(p.forgiven != forgiven, 0) && r->measuring)
				c->tx_skipped += (p.forgiven - forgiven) * period_frames;
			todo = period_frames;
		}
		uint16_t want = todo < burst ? (uint16_t)todo : burst;
		if (held > want)
			want = held;
		uint16_t n = held < want ? (uint16_t)(held + ops->tx_alloc(a, pkts + held, (uint16_t)(want - held)))
					 : held;
		uint64_t ts = clock_ns(&r->clk, now);
		uint64_t seq = fseq[flow] | (r->measuring ? 0 : SEQ_WARMUP);
		uint16_t sport = (uint16_t)(cf->sport + flow);

		todo -= want < todo ? want : todo;
		wr16(tmpl + OFF_UDP_SPORT, sport);
		if (span > 1) {   /* each flow to its destination (a router's prefix) */
			const uint32_t dst = htonl(ntohl(cf->dst_ip) + flow % span);
			frame_set_dst_ip(tmpl, dst);
			for (uint16_t i = 0; i < held; i++)
				frame_set_dst_ip(pkts[i].data, dst);
		}
		if (len == FRAME_MIN_LEN)
			fill(pkts, held, n, tmpl, FRAME_MIN_LEN, sport, seq, ts, touch);
		else
			fill(pkts, held, n, tmpl, len, sport, seq, ts, touch);
		uint16_t k = n ? ops->tx_burst(a, pkts, n) : 0;
		held = 0;
		if (k < n) {
			if (keeps) {
				held = (uint16_t)(n - k);
				memmove(pkts, pkts + k, held * sizeof(*pkts));
			} else {
				ops->release(a, pkts + k, (uint16_t)(n - k));
			}
		}
		fseq[flow] += k;
		if (r->measuring) {
			c->tx_packets += k;
			c->tx_bytes += (uint64_t)k * wire;
			c->tx_refused += want - k;
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
		flow = flow + step >= flows ? first : flow + step;
	}
	if (held)
		ops->release(a, pkts, held);
	/* the window closed while bursts were still owed (a stall across its
	 * end): they count as skipped, so that sent + skipped is the schedule */
	if (r->done && r->t_end)
		c->tx_skipped += pacer_owed(&p, r->t_end) * period_frames;
	r->t_stop = clock_ticks();
	r->stalls.kept = r->stalls.live;
	free(fseq);
	free(tmpl);
	return 0;
}

static int send_prepare(struct run *r)
{
	if (poller_init(&r->poll, r->conf->poll, r->clk.hz, NULL, NULL))
		return 1;
	r->poll.stalls = &r->stalls;
	return 0;
}

static int send_loop(struct run *r)
{
	return gen_run(r, NULL, NULL);
}

static void send_finish(struct run *r)
{
	poller_free(&r->poll);
}

int role_send(struct run *r)
{
	static const struct queue_role qr = { send_prepare, send_loop, send_finish };

	return queues_run(r, &qr);
}
