/* fwd: a network function. IPv4 frames get the next hop's MAC as
 * destination (and --src-mac / --src-ip as source when given, checksums kept
 * right) and leave by the same interface (hairpin) or by --iface2/--port2.
 * Other frames (ARP, IPv6 ND) are dropped and counted as `other`.
 *
 * Frames move without a copy when they stay on one api instance or the
 * egress api accepts foreign frames (tx_foreign); otherwise they are copied
 * into egress buffers and given back to the ingress instance. fwd counts
 * every frame (it does not read payload headers, so no warm-up split). */
#include "roles.h"

static inline void rewrite(const struct opts *o, uint8_t *d, unsigned len)
{
	memcpy(d + OFF_ETH_DST, o->dst_mac, 6);
	if (o->has_src_mac)
		memcpy(d + OFF_ETH_SRC, o->src_mac, 6);
	if (o->src_ip && d[OFF_IP] == 0x45) {
		if (d[OFF_IP_PROTO] == 17 && len >= FRAME_HDR_LEN)
			frame_set_src_ip(d, o->src_ip);
		else {
			wr32n(d + OFF_IP_SRC, o->src_ip);
			wr16(d + OFF_IP_CSUM, ip_checksum(d));
		}
	}
}

static inline bool ipv4(const struct pkt *p)
{
	return p->len >= OFF_IP + 20 && p->data[OFF_ETH_TYPE] == 0x08 && p->data[OFF_ETH_TYPE + 1] == 0x00;
}

int role_fwd(struct run *r)
{
	const struct opts *o = r->o;
	struct api *in = r->api, *out = r->api2 ? r->api2 : r->api;
	const bool copy = out != in && !out->ops->tx_foreign;
	const uint16_t burst = (uint16_t)o->burst;
	struct counters *c = &r->c;
	struct pkt pkts[API_MAX_BURST], fwd[API_MAX_BURST], drop[API_MAX_BURST];

	r->rx_window = true;
	run_ready(r);
	for (;;) {
		uint16_t n = in->ops->rx_burst(in, pkts, burst);
		uint64_t now = clock_ticks();

		if (!run_keep_going(r, n, now)) {
			if (n)
				in->ops->release(in, pkts, n);
			break;
		}
		if (now >= r->t_next) {
			run_tick(r, now);
			if (r->done) {
				if (n)
					in->ops->release(in, pkts, n);
				break;
			}
		}
		if (!n)
			continue;
		if (!r->started)
			run_start(r, now);
		uint16_t m = 0, nd = 0;
		for (uint16_t i = 0; i < n; i++) {
			c->rx_packets++;
			c->rx_bytes += wire_bytes(pkts[i].len);
			if (ipv4(&pkts[i]))
				fwd[m++] = pkts[i];
			else
				drop[nd++] = pkts[i];
		}
		c->other += nd;
		if (copy) {
			struct pkt tx[API_MAX_BURST];
			uint16_t got = m ? out->ops->tx_alloc(out, tx, m) : 0, t = 0;
			for (uint16_t i = 0; i < got; i++) {
				if (fwd[i].len > tx[t].len) /* larger than egress buffers: refused below */
					continue;
				memcpy(tx[t].data, fwd[i].data, fwd[i].len);
				tx[t].len = fwd[i].len;
				rewrite(o, tx[t].data, tx[t].len);
				t++;
			}
			if (t < got)
				out->ops->release(out, tx + t, (uint16_t)(got - t));
			in->ops->release(in, pkts, n);
			uint16_t k = t ? out->ops->tx_burst(out, tx, t) : 0;
			if (k < t)
				out->ops->release(out, tx + k, (uint16_t)(t - k));
			c->tx_packets += k;
			c->tx_refused += m - k;
			for (uint16_t i = 0; i < k; i++)
				c->tx_bytes += wire_bytes(tx[i].len);
		} else {
			if (nd)
				in->ops->release(in, drop, nd);
			for (uint16_t i = 0; i < m; i++)
				rewrite(o, fwd[i].data, fwd[i].len);
			uint16_t k = m ? out->ops->tx_burst(out, fwd, m) : 0;
			if (k < m)
				out->ops->release(out, fwd + k, (uint16_t)(m - k));
			c->tx_packets += k;
			c->tx_refused += m - k;
			for (uint16_t i = 0; i < k; i++)
				c->tx_bytes += wire_bytes(fwd[i].len);
		}
		run_rx_window(r, now, n);
	}
	run_summary(r);
	return 0;
}
