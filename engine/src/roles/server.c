/* server: reflector. Frames addressed to us get MACs, IP addresses and UDP
 * ports swapped and both checksums recomputed (a sender may have left the
 * UDP checksum 0 or, on a veth, only partial), then go back out of the same
 * api without a copy. Everything else is dropped and counted. Warm-up
 * frames are reflected but counted only in warmup_packets. */
#include "roles.h"
#include "../core/rx.h"

static inline void swap(uint8_t *d, unsigned off, unsigned n)
{
	uint8_t t[6];

	memcpy(t, d + off, n);
	memmove(d + off, d + off + n, n);
	memcpy(d + off + n, t, n);
}

int role_server(struct run *r)
{
	const struct conf *cf = r->conf;
	struct api *a = r->api;
	const struct api_ops *ops = a->ops;
	const struct rx_filter f = { .ip = cf->src_ip, .ip_more = cf->ip_span - 1, .port_lo = cf->sport,
				     .port_hi = cf->sport, .l2 = ops->l2 };
	const uint16_t burst = (uint16_t)cf->burst;
	struct counters *c = &r->c;
	struct pkt pkts[API_MAX_BURST], out[API_MAX_BURST], drop[API_MAX_BURST];
	bool warm[API_MAX_BURST];

	r->rx_window = true;
	if (poller_init(&r->poll, cf->poll, r->clk.hz, a, NULL))
		return 1;
	poller_expect(&r->poll, cf->rate);
	r->poll.stalls = &r->stalls;
	run_ready(r);
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
		uint16_t m = 0, nd = 0;
		unsigned measured = 0;
		for (uint16_t i = 0; i < n; i++) {
			uint8_t *d = pkts[i].data;
			if (rx_classify(c, d, pkts[i].len, &f) != RX_OURS) {
				drop[nd++] = pkts[i];
				continue;
			}
			swap(d, OFF_ETH_DST, 6);
			swap(d, OFF_IP_SRC, 4);
			swap(d, OFF_UDP_SPORT, 2);
			if (ops->l2)
				frame_fix_checksums(d);
			warm[m] = (rd64(d + OFF_SEQ) & SEQ_WARMUP) || !r->measuring;
			if (warm[m]) {
				c->warmup_packets++;
			} else {
				c->rx_packets++;
				c->rx_bytes += wire_bytes(pkts[i].len);
				measured++;
			}
			out[m++] = pkts[i];
		}
		if (nd)
			ops->release(a, drop, nd);
		uint16_t k = m ? ops->tx_burst(a, out, m) : 0;
		if (k < m)
			ops->release(a, out + k, (uint16_t)(m - k));
		for (uint16_t i = 0; i < m; i++) {
			if (warm[i])
				continue;
			if (i < k) {
				c->tx_packets++;
				c->tx_bytes += wire_bytes(out[i].len);
			} else {
				c->tx_refused++;
			}
		}
		run_rx_window(r, now, measured);
	}
	run_summary(r);
	poller_free(&r->poll);
	return 0;
}
