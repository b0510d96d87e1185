/* nf: a network function between one or two ports, in one thread. With two,
 * it forwards both ways: what comes in on port 1 leaves by port 2 and the
 * other way round (l3: by its route); with one it hairpins, and mirror always
 * does. What it does to a frame is its kind (core/nf.h), chosen once.
 *
 * Frames move without a copy when they stay on one api instance or the
 * egress api accepts foreign frames (tx_foreign); otherwise they are copied
 * into egress buffers and given back to the ingress instance. nf counts every
 * frame per port (rx and drops at the ingress port, tx and tx_refused at the
 * egress one); it does not read payload headers, so it has no warm-up split.
 *
 * --policer drops the frames of an ingress port beyond its token bucket
 * before they are forwarded; --shaper holds what would leave an egress port
 * beyond its bucket in a queue of its own (copies: no api's ring is held) and
 * sends it when tokens come, dropping what finds the queue full. Both count
 * at the ingress port with the other drops (`policer`, `shaper`); what waited
 * is `delayed` at the egress port (core/bucket.h). */
#include "roles.h"
#include "../core/json.h"
#include "../core/bucket.h"
#include "../core/nf.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct port_counts {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_refused;
	struct nf_drops drop;
	uint64_t policer, shaper;   /* drops: beyond the policer's bucket, the shaper's queue */
};

struct nf_run {
	struct nf nf;
	struct api *port[2];
	unsigned nports;
	struct port_counts pc[2];
	uint64_t first_tx_wall_ns;     /* CLOCK_REALTIME of the first frame forwarded, 0 = none yet */
	struct nf_out out;
	struct pkt pkts[2][API_MAX_BURST];
	bool police, shape;
	struct bucket policer[2];      /* per ingress port */
	struct shaper shaper[2];       /* per egress port */
};

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sent_wall(struct nf_run *s)
{
	if (!s->first_tx_wall_ns)
		s->first_tx_wall_ns = wall_ns();
}

/* Sends the n frames in f, received on port `in`, out of port e. */
static void send_out(struct nf_run *s, unsigned in, unsigned e, struct pkt *f, uint16_t n)
{
	struct api *src = s->port[in], *dst = s->port[e];
	struct pkt *sent = f, tx[API_MAX_BURST];
	uint16_t m = n, k;

	if (dst != src && !dst->ops->tx_foreign) {
		uint16_t got = dst->ops->tx_alloc(dst, tx, n);
		m = 0;
		for (uint16_t i = 0; i < got; i++) {
			if (f[i].len > tx[m].len) /* larger than egress buffers: refused below */
				continue;
			memcpy(tx[m].data, f[i].data, f[i].len);
			tx[m].len = f[i].len;
			m++;
		}
		if (m < got)
			dst->ops->release(dst, tx + m, (uint16_t)(got - m));
		src->ops->release(src, f, n);
		sent = tx;
	}
	k = m ? dst->ops->tx_burst(dst, sent, m) : 0;
	if (k < m)
		dst->ops->release(dst, sent + k, (uint16_t)(m - k));
	s->pc[e].tx_packets += k;
	s->pc[e].tx_refused += n - k;
	for (uint16_t i = 0; i < k; i++)
		s->pc[e].tx_bytes += wire_bytes(sent[i].len);
	if (k)
		sent_wall(s);
}

/* What the shaper of egress port e lets go at tick now: copied into the
 * port's buffers and sent; what the port refuses stays queued (its tokens
 * untaken) for the next round. */
static void shaper_flush(struct nf_run *s, unsigned e, uint64_t now)
{
	struct shaper *sh = &s->shaper[e];
	struct api *dst = s->port[e];
	struct pkt tx[API_MAX_BURST];
	unsigned k;

	while ((k = shaper_ready(sh, now, API_MAX_BURST))) {
		uint16_t got = dst->ops->tx_alloc(dst, tx, (uint16_t)k), sent;
		for (uint16_t i = 0; i < got; i++) {
			uint16_t len;
			const uint8_t *f = shaper_peek(sh, i, &len);
			if (len > tx[i].len)   /* never: the queue's slots are no larger */
				len = tx[i].len;
			memcpy(tx[i].data, f, len);
			tx[i].len = len;
		}
		sent = got ? dst->ops->tx_burst(dst, tx, got) : 0;
		if (sent < got)
			dst->ops->release(dst, tx + sent, (uint16_t)(got - sent));
		shaper_done(sh, sent, now);
		s->pc[e].tx_packets += sent;
		for (uint16_t i = 0; i < sent; i++)
			s->pc[e].tx_bytes += wire_bytes(tx[i].len);
		if (sent)
			sent_wall(s);
		if (sent < k)
			break;
	}
}

/* The burst for egress port e into its shaper's queue (the frames go back to
 * the ingress port's api), then what may leave now. */
static void shape_out(struct nf_run *s, unsigned in, unsigned e, struct pkt *f, uint16_t n, uint64_t now)
{
	for (uint16_t i = 0; i < n; i++)
		if (!shaper_in(&s->shaper[e], f[i].data, f[i].len, now))
			s->pc[in].shaper++;
	s->port[in]->ops->release(s->port[in], f, n);
	shaper_flush(s, e, now);
}

static void forward(struct nf_run *s, unsigned in, struct pkt *pkts, uint16_t n, uint64_t now)
{
	struct port_counts *pc = &s->pc[in];

	pc->rx_packets += n;
	for (uint16_t i = 0; i < n; i++)
		pc->rx_bytes += wire_bytes(pkts[i].len);
	if (s->police) {
		uint16_t k = (uint16_t)bucket_pass(&s->policer[in], now, n);
		if (k < n) {
			s->port[in]->ops->release(s->port[in], pkts + k, (uint16_t)(n - k));
			pc->policer += n - k;
			n = k;
		}
		if (!n)
			return;
	}
	nf_burst(&s->nf, in, pkts, n, &s->out, &pc->drop);
	if (s->out.ndrop)
		s->port[in]->ops->release(s->port[in], s->out.drop, s->out.ndrop);
	for (unsigned e = 0; e < s->nports; e++) {
		if (!s->out.ntx[e])
			continue;
		if (s->shape)
			shape_out(s, in, e, s->out.tx[e], s->out.ntx[e], now);
		else
			send_out(s, in, e, s->out.tx[e], s->out.ntx[e]);
	}
}

/* Sends what the shapers let go by now; the tick the next frame may leave. */
static uint64_t shapers_due(struct nf_run *s, uint64_t now)
{
	uint64_t due = UINT64_MAX;

	if (!s->shape)
		return due;
	for (unsigned e = 0; e < s->nports; e++) {
		if (s->shaper[e].n)
			shaper_flush(s, e, now);
		uint64_t d = shaper_due(&s->shaper[e]);
		if (d < due)
			due = d;
	}
	return due;
}

/* The run's totals are the ports' sums (for interval records and the summary). */
static void collect(struct run *r)
{
	const struct nf_run *s = r->collect_arg;
	struct counters *c = &r->c;

	c->rx_packets = c->rx_bytes = c->tx_packets = c->tx_bytes = c->tx_refused = c->other = c->bad = 0;
	for (unsigned i = 0; i < s->nports; i++) {
		const struct port_counts *pc = &s->pc[i];
		c->rx_packets += pc->rx_packets;
		c->rx_bytes += pc->rx_bytes;
		c->tx_packets += pc->tx_packets;
		c->tx_bytes += pc->tx_bytes;
		c->tx_refused += pc->tx_refused;
		c->other += pc->drop.other;
		c->bad += pc->drop.bad;
	}
}

static void summary_more(struct run *r, struct json *j)
{
	const struct nf_run *s = r->collect_arg;

	json_str(j, "nf", s->nf.kind->name);
	if (s->first_tx_wall_ns)
		json_u64(j, "first_tx_wall_ns", s->first_tx_wall_ns);
	else
		json_null(j, "first_tx_wall_ns");
	json_open(j, "ports", '[');
	for (unsigned i = 0; i < s->nports; i++) {
		const struct port_counts *pc = &s->pc[i];
		json_open(j, NULL, '{');
		json_u64(j, "port", i + 1);
		json_u64(j, "rx_packets", pc->rx_packets);
		json_u64(j, "rx_bytes", pc->rx_bytes);
		json_u64(j, "tx_packets", pc->tx_packets);
		json_u64(j, "tx_bytes", pc->tx_bytes);
		json_u64(j, "tx_refused", pc->tx_refused);
		json_open(j, "dropped", '{');
		json_u64(j, "other", pc->drop.other);
		json_u64(j, "bad", pc->drop.bad);
		json_u64(j, "no_route", pc->drop.no_route);
		json_u64(j, "ttl", pc->drop.ttl);
		json_u64(j, "policer", pc->policer);
		json_u64(j, "shaper", pc->shaper);
		json_close(j, '{');
		json_u64(j, "delayed", s->shape ? s->shaper[i].delayed : 0);
		json_close(j, '{');
	}
	json_close(j, '[');
	const struct conf *cf = r->conf;
	if (s->police) {
		json_open(j, "policer", '{');
		json_num(j, "rate_pps", cf->policer.rate, 1);
		json_u64(j, "bucket", cf->policer.size);
		json_u64(j, "dropped", s->pc[0].policer + s->pc[1].policer);
		json_close(j, '{');
	}
	if (s->shape) {
		uint64_t delayed = 0, queued = 0, longest = 0;
		for (unsigned i = 0; i < s->nports; i++) {
			delayed += s->shaper[i].delayed;
			queued += s->shaper[i].n;
			if (s->shaper[i].delay_max > longest)
				longest = s->shaper[i].delay_max;
		}
		json_open(j, "shaper", '{');
		json_num(j, "rate_pps", cf->shaper.rate, 1);
		json_u64(j, "bucket", cf->shaper.size);
		json_u64(j, "queue", cf->shaper.queue);
		json_u64(j, "dropped", s->pc[0].shaper + s->pc[1].shaper);
		json_u64(j, "delayed", delayed);
		json_u64(j, "queued", queued);
		json_u64(j, "delay_max_ns", (uint64_t)(clock_ticks_to_s(&r->clk, longest) * 1e9 + 0.5));
		json_close(j, '{');
	}
}

static void release_all(struct nf_run *s, const uint16_t *n)
{
	for (unsigned i = 0; i < s->nports; i++)
		if (n[i])
			s->port[i]->ops->release(s->port[i], s->pkts[i], n[i]);
}

/* The queue's slots hold the frames --size says, or a standard Ethernet frame
 * if that is more (a larger one is dropped as one beyond the queue). */
#define SHAPER_SLOT_MIN 1518

static int setup(struct nf_run *s, const struct run *r)
{
	const struct conf *cf = r->conf;
	uint8_t mac[2][6], hop[2][6];

	s->port[0] = r->api;
	s->port[1] = r->api2 ? r->api2 : r->api;
	s->nports = r->api2 ? 2 : 1;
	memcpy(mac[0], cf->src_mac.given ? cf->src_mac.addr : r->api->mac, 6);
	memcpy(mac[1], cf->src_mac2.given ? cf->src_mac2.addr : s->port[1]->mac, 6);
	memcpy(hop[0], cf->dst_mac.addr, 6);
	memcpy(hop[1], cf->dst_mac2.addr, 6);
	nf_init(&s->nf, cf->nf, s->nports, (const uint8_t (*)[6])mac, (const uint8_t (*)[6])hop, &cf->routes);
	if ((s->police = cf->policer.given))
		for (unsigned i = 0; i < 2; i++)
			bucket_init(&s->policer[i], cf->policer.rate, cf->policer.size, r->clk.hz);
	if ((s->shape = cf->shaper.given)) {
		unsigned slot = cf->size - FCS_LEN > SHAPER_SLOT_MIN ? cf->size - FCS_LEN : SHAPER_SLOT_MIN;
		for (unsigned i = 0; i < s->nports; i++)
			if (shaper_init(&s->shaper[i], cf->shaper.rate, cf->shaper.size, cf->shaper.queue, slot,
					r->clk.hz)) {
				fprintf(stderr, "cnfperf-engine: out of memory for the shaper's queue\n");
				return -1;
			}
	}
	return 0;
}

static void teardown(struct nf_run *s)
{
	for (unsigned i = 0; i < 2; i++)
		shaper_free(&s->shaper[i]);
	free(s);
}

int role_nf(struct run *r)
{
	const struct conf *cf = r->conf;
	const uint16_t burst = (uint16_t)cf->burst;
	struct nf_run *s = calloc(1, sizeof(*s));

	if (!s) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		return 1;
	}
	if (setup(s, r) || poller_init(&r->poll, cf->poll, r->clk.hz, r->api, r->api2)) {
		teardown(s);
		return 1;
	}
	poller_expect(&r->poll, cf->rate);
	poller_streams(&r->poll, s->nports);
	r->poll.stalls = &r->stalls;
	r->rx_window = true;
	r->collect = collect;
	r->collect_arg = s;
	r->summary_more = summary_more;
	run_ready(r);
	for (;;) {
		uint16_t n[2] = { 0, 0 };
		for (unsigned i = 0; i < s->nports; i++)
			n[i] = s->port[i]->ops->rx_burst(s->port[i], s->pkts[i], burst);
		uint64_t now = clock_ticks();
		unsigned got = n[0] + n[1];

		if (s->nports > 1)   /* each port's pace apart (poll.h) */
			for (unsigned i = 0; i < 2; i++)
				if (n[i])
					poller_arrived(&r->poll, i, now);
		r->wake = shapers_due(s, now);

		enum rx_step step = run_rx_step(r, got, now);

		if (step == RX_STOP) {
			release_all(s, n);
			break;
		}
		if (step == RX_IDLE)
			continue;
		for (unsigned i = 0; i < s->nports; i++)
			if (n[i])
				forward(s, i, s->pkts[i], n[i], now);
		run_rx_window(r, now, got);
	}
	run_summary(r);
	poller_free(&r->poll);
	teardown(s);
	return 0;
}
