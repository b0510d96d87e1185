/* The nf kinds on crafted frames: where each frame goes, what it looks like
 * after, and why the others were dropped; l3's longest prefix match and its
 * TTL decrement, whose incremental checksum must equal a full recompute. */
#include <stdlib.h>

#include "check.h"
#include "../src/core/nf.h"
#include "../src/core/packet.h"

static const uint8_t MAC[2][6] = { { 2, 0, 0, 0, 1, 1 }, { 2, 0, 0, 0, 2, 2 } };  /* ours, per port */
static const uint8_t HOP[2][6] = { { 2, 0, 0, 0, 1, 9 }, { 2, 0, 0, 0, 2, 9 } };  /* next hops */
static const uint8_t PEER[6] = { 2, 0, 0, 0, 0, 7 };                            /* the sender */

#define LEN 100

static uint8_t bufs[8][LEN];

static struct pkt frame(unsigned i, const char *dst, uint8_t ttl)
{
	struct frame_addr a = { .sport = 9000, .dport = 9000 };

	memcpy(a.src_mac, PEER, 6);
	memcpy(a.dst_mac, MAC[0], 6);
	inet_pton(AF_INET, "198.18.1.1", &a.src_ip);
	inet_pton(AF_INET, dst, &a.dst_ip);
	frame_build(bufs[i], LEN, &a);
	bufs[i][OFF_IP + 8] = ttl;
	wr16(bufs[i] + OFF_IP_CSUM, ip_checksum(bufs[i]));
	for (unsigned k = FRAME_MIN_LEN; k < LEN; k++)
		bufs[i][k] = (uint8_t)k;
	return (struct pkt){ bufs[i], LEN, (void *)(uintptr_t)(i + 1) };
}

static bool payload_intact(const struct pkt *p)
{
	for (unsigned k = FRAME_MIN_LEN; k < LEN; k++)
		if (p->data[k] != (uint8_t)k)
			return false;
	return p->len == LEN;
}

static void l2_and_strip_encap(const struct nf_kind *kind)
{
	struct nf nf;
	static struct nf_out out;
	struct nf_drops d = { 0 };
	struct pkt p[3];

	/* two ports: port 1's frames leave by port 2, and back */
	nf_init(&nf, kind, 2, MAC, HOP, NULL);
	p[0] = frame(0, "198.18.2.1", 64);
	p[1] = frame(1, "198.18.2.1", 64);
	wr16(p[1].data + OFF_ETH_TYPE, 0x0806);             /* ARP */
	p[2] = frame(2, "198.18.2.1", 64);
	p[2].len = OFF_IP + 19;                             /* too short for an IPv4 header */
	nf_burst(&nf, 0, p, 3, &out, &d);
	CHECK(out.ntx[1] == 1 && out.ntx[0] == 0 && out.ndrop == 2, "%s: %u/%u sent, %u dropped",
	      kind->name, out.ntx[0], out.ntx[1], out.ndrop);
	CHECK(d.other == 2 && d.bad == 0 && d.no_route == 0 && d.ttl == 0, "not IPv4: other");
	struct pkt *o = &out.tx[1][0];
	CHECK(o->data == bufs[0] && o->priv == p[0].priv && payload_intact(o), "the same buffer, same frame");
	CHECK(!memcmp(o->data + OFF_ETH_DST, HOP[1], 6) && !memcmp(o->data + OFF_ETH_SRC, MAC[1], 6),
	      "%s: next hop of port 2, its MAC", kind->name);
	CHECK(rd16(o->data + OFF_ETH_TYPE) == 0x0800 && o->data[OFF_IP + 8] == 64 && ip_header_ok(o->data, 20),
	      "IPv4, TTL and checksum untouched");
	CHECK(out.drop[0].data == bufs[1] && out.drop[1].data == bufs[2], "drops in order");

	p[0] = frame(0, "198.18.1.1", 64);
	nf_burst(&nf, 1, p, 1, &out, &d);
	CHECK(out.ntx[0] == 1 && out.ntx[1] == 0 && !memcmp(out.tx[0][0].data, HOP[0], 6) &&
	      !memcmp(out.tx[0][0].data + 6, MAC[0], 6), "port 2 -> port 1");

	/* one port: hairpin */
	nf_init(&nf, kind, 1, MAC, HOP, NULL);
	p[0] = frame(0, "198.18.2.1", 64);
	nf_burst(&nf, 0, p, 1, &out, &d);
	CHECK(out.ntx[0] == 1 && !memcmp(out.tx[0][0].data, HOP[0], 6) && !memcmp(out.tx[0][0].data + 6, MAC[0], 6),
	      "one port: back out of it");
}

static void mirror(void)
{
	struct nf nf;
	static struct nf_out out;
	struct nf_drops d = { 0 };
	struct pkt p[2] = { frame(0, "198.18.2.1", 64), frame(1, "198.18.2.1", 64) };

	wr16(p[1].data + OFF_ETH_TYPE, 0x86dd);
	nf_init(&nf, nf_kind_find("mirror"), 1, MAC, HOP, NULL);
	nf_burst(&nf, 0, p, 2, &out, &d);
	CHECK(out.ntx[0] == 1 && out.ndrop == 1 && d.other == 1, "IPv6 is other");
	const uint8_t *f = out.tx[0][0].data;
	CHECK(!memcmp(f + OFF_ETH_DST, PEER, 6) && !memcmp(f + OFF_ETH_SRC, MAC[0], 6), "MACs swapped");
	CHECK(ip_header_ok(f, 20) && f[OFF_IP + 8] == 64 && payload_intact(&out.tx[0][0]), "nothing else touched");
}

/* ones' complement checksum of an IPv4 header, the obvious way */
static bool header_ok(const uint8_t *ip, unsigned len)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < len; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static void l3(void)
{
	struct nf nf;
	static struct nf_out out;
	static struct nf_routes t;
	struct nf_drops d = { 0 };
	struct pkt p[8];

	memset(&t, 0, sizeof(t));
	/* given in any order: the longest matching prefix wins */
	CHECK(nf_route_add(&t, 0xc6120000, 15, 0), "198.18.0.0/15 -> 1");
	CHECK(nf_route_add(&t, 0xc6120280, 25, 0), "198.18.2.128/25 -> 1");
	CHECK(nf_route_add(&t, 0xc6120200, 24, 1), "198.18.2.0/24 -> 2");
	CHECK(t.n == 3 && t.r[0].len == 25 && t.r[1].len == 24 && t.r[2].len == 15, "kept longest first");
	CHECK(nf_route_lookup(&t, 0xcb007101) == NULL, "203.0.113.1 unrouted");
	nf_init(&nf, nf_kind_find("l3"), 2, MAC, HOP, &t);

	p[0] = frame(0, "198.18.2.1", 64);      /* /24 -> port 2 */
	p[1] = frame(1, "198.18.2.200", 64);    /* /25 -> port 1 */
	p[2] = frame(2, "198.19.0.1", 2);       /* /15 -> port 1, TTL 2 -> 1 */
	p[3] = frame(3, "203.0.113.1", 64);     /* no route */
	p[4] = frame(4, "198.18.2.1", 1);       /* TTL 1: dropped */
	p[5] = frame(5, "198.18.2.1", 0);       /* TTL 0: dropped */
	p[6] = frame(6, "198.18.2.1", 64);
	p[6].data[OFF_IP] = 0x65;               /* version 6 in an IPv4 frame */
	p[7] = frame(7, "198.18.2.1", 64);
	wr16(p[7].data + OFF_ETH_TYPE, 0x0806);
	nf_burst(&nf, 0, p, 8, &out, &d);
	CHECK(out.ntx[1] == 1 && out.ntx[0] == 2 && out.ndrop == 5, "%u/%u sent, %u dropped", out.ntx[0], out.ntx[1],
	      out.ndrop);
	CHECK(d.no_route == 1 && d.ttl == 2 && d.bad == 1 && d.other == 1, "drops: no_route %llu ttl %llu bad %llu other %llu",
	      (unsigned long long)d.no_route, (unsigned long long)d.ttl, (unsigned long long)d.bad,
	      (unsigned long long)d.other);
	CHECK(out.tx[1][0].data == bufs[0] && out.tx[0][0].data == bufs[1] && out.tx[0][1].data == bufs[2],
	      "longest prefix decides the port");
	CHECK(out.drop[0].data == bufs[3] && out.drop[1].data == bufs[4] && out.drop[2].data == bufs[5], "drop order");
	const uint8_t *f = out.tx[1][0].data;
	CHECK(!memcmp(f, HOP[1], 6) && !memcmp(f + 6, MAC[1], 6), "MACs of the egress port");
	CHECK(f[OFF_IP + 8] == 63 && rd16(f + OFF_IP_CSUM) == ip_checksum(f) && payload_intact(&out.tx[1][0]),
	      "TTL 63, checksum as recomputed");
	CHECK(out.tx[0][1].data[OFF_IP + 8] == 1 && ip_header_ok(out.tx[0][1].data, 20), "TTL 2 leaves with 1");

	/* malformed: IHL below 5, total length beyond the frame or below the
	 * header, a frame too short for a header */
	p[0] = frame(0, "198.18.2.1", 64);
	p[0].data[OFF_IP] = 0x44;
	p[1] = frame(1, "198.18.2.1", 64);
	wr16(p[1].data + OFF_IP_LEN, LEN - OFF_IP + 1);
	p[2] = frame(2, "198.18.2.1", 64);
	wr16(p[2].data + OFF_IP_LEN, 19);
	p[3] = frame(3, "198.18.2.1", 64);
	p[3].len = OFF_IP + 10;
	p[4] = frame(4, "198.18.2.1", 64);
	p[4].data[OFF_IP] = 0x46;               /* 24-byte header: options are fine */
	wr16(p[4].data + OFF_IP_CSUM, 0);
	uint8_t *ip = p[4].data + OFF_IP;
	wr16(ip + 10, 0);
	{
		uint32_t s = 0;
		for (unsigned i = 0; i < 24; i += 2)
			s += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		wr16(ip + 10, (uint16_t)~s);
	}
	/* a header checksum that does not hold: a router drops it (RFC 1812),
	 * routed or not, whatever its TTL */
	p[5] = frame(5, "198.18.2.1", 64);
	wr16(p[5].data + OFF_IP_CSUM, rd16(p[5].data + OFF_IP_CSUM) ^ 0x0100);
	p[6] = frame(6, "203.0.113.1", 1);
	wr16(p[6].data + OFF_IP_CSUM, rd16(p[6].data + OFF_IP_CSUM) + 1);
	memset(&d, 0, sizeof(d));
	nf_burst(&nf, 1, p, 7, &out, &d);
	CHECK(d.bad == 6 && d.no_route == 0 && d.ttl == 0 && out.ntx[1] == 1 && out.ndrop == 6,
	      "malformed is bad (%llu)", (unsigned long long)d.bad);
	CHECK(out.drop[4].data == bufs[5] && out.drop[5].data == bufs[6] && bufs[5][OFF_IP + 8] == 64,
	      "a bad header checksum is dropped untouched");
	CHECK(header_ok(out.tx[1][0].data + OFF_IP, 24) && out.tx[1][0].data[OFF_IP + 8] == 63,
	      "a header with options is routed, its checksum kept right");

	/* a default route catches the rest */
	CHECK(nf_route_add(&t, 0, 0, 1) && t.r[t.n - 1].len == 0, "0.0.0.0/0 last");
	p[0] = frame(0, "203.0.113.1", 64);
	nf_burst(&nf, 0, p, 1, &out, &d);
	CHECK(out.ntx[1] == 1, "default route");
	CHECK(nf_route_add(&t, 0xc6120200, 24, 0) && t.n == 4 && nf_route_lookup(&t, 0xc6120201)->port == 0,
	      "the same prefix again replaces its port");
}

/* One header through nf_ttl_decrement(): false (after a CHECK) if the
 * incremental checksum is not what recomputing gives. */
static bool decrement_ok(uint8_t *f)
{
	uint8_t ttl = f[OFF_IP + 8];

	wr16(f + OFF_IP_CSUM, ip_checksum(f));
	nf_ttl_decrement(f);
	uint16_t inc = rd16(f + OFF_IP_CSUM), full = ip_checksum(f);
	CHECK(f[OFF_IP + 8] == ttl - 1 && inc == full, "TTL %u: incremental %#x, recomputed %#x", ttl, inc, full);
	return inc == full;
}

/* RFC 1624: the incremental update equals recomputing. Sweeping the 16-bit
 * identification field of one header takes its checksum through every value
 * (0x0000 and 0xffff's neighbours included), for a few TTLs; then random
 * headers. */
static void ttl_checksum(void)
{
	uint8_t f[60];
	static const uint8_t ttls[] = { 2, 3, 64, 128, 255 };
	unsigned seen_zero = 0;

	for (unsigned t = 0; t < sizeof(ttls); t++) {
		for (unsigned id = 0; id <= 0xffff; id++) {
			struct pkt p = frame(0, "198.18.2.1", ttls[t]);
			memcpy(f, p.data, sizeof(f));
			wr16(f + OFF_IP + 4, (uint16_t)id);
			if (!decrement_ok(f))
				return;
			seen_zero += rd16(f + OFF_IP_CSUM) == 0;
		}
	}
	CHECK(seen_zero == sizeof(ttls), "a checksum of 0 met once per TTL: %u", seen_zero);
	srand(11);
	for (int t = 0; t < 100000; t++) {
		for (unsigned i = 0; i < sizeof(f); i++)
			f[i] = (uint8_t)rand();
		f[OFF_IP] = 0x45;
		f[OFF_IP + 8] = (uint8_t)(2 + rand() % 254);
		if (!decrement_ok(f))
			return;
	}
}

int main(void)
{
	l2_and_strip_encap(nf_kind_find("l2"));
	l2_and_strip_encap(nf_kind_find("strip-encap"));
	mirror();
	l3();
	ttl_checksum();
	return check_done("nf");
}
