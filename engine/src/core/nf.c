#include "nf.h"

#include <string.h>

#include "packet.h"

bool nf_route_add(struct nf_routes *t, uint32_t net, unsigned len, unsigned port)
{
	uint32_t mask = len ? ~0u << (32 - len) : 0;
	unsigned i;

	for (i = 0; i < t->n; i++) {
		if (t->r[i].len == len && t->r[i].net == net) {
			t->r[i].port = (uint8_t)port;
			return true;
		}
	}
	if (t->n == NF_MAX_ROUTES)
		return false;
	/* after every route at least as long: longest first, ties as given */
	for (i = t->n; i > 0 && t->r[i - 1].len < len; i--)
		t->r[i] = t->r[i - 1];
	t->r[i] = (struct nf_route){ net & mask, mask, (uint8_t)len, (uint8_t)port };
	t->n++;
	return true;
}

const struct nf_route *nf_route_lookup(const struct nf_routes *t, uint32_t dst)
{
	for (unsigned i = 0; i < t->n; i++)
		if ((dst & t->r[i].mask) == t->r[i].net)
			return &t->r[i];
	return NULL;
}

void nf_ttl_decrement(uint8_t *frame)
{
	uint8_t *ip = frame + OFF_IP;
	uint16_t old = (uint16_t)(ip[8] << 8 | ip[9]);   /* TTL and protocol: one 16-bit word */

	ip[8]--;
	wr16(frame + OFF_IP_CSUM, csum_adjust(rd16(frame + OFF_IP_CSUM), old, (uint16_t)(old - 0x100)));
}

static inline bool is_ipv4(const struct pkt *p)
{
	return p->len >= OFF_IP + 20 && p->data[OFF_ETH_TYPE] == 0x08 && p->data[OFF_ETH_TYPE + 1] == 0x00;
}

/* counted by reason, given back after the burst */
#define DROP(o, p, reason) ((reason)++, (o)->drop[(o)->ndrop++] = (p))
#define SEND(o, e, p) ((o)->tx[e][(o)->ntx[e]++] = (p))

/* Every IPv4 frame out of the other port, its first `len` bytes replaced by
 * that port's header (next hop's MAC, own MAC, IPv4 type); the rest dropped.
 * Inlined with a constant len into each kind below. */
static inline void rewrite(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
			   struct nf_out *out, struct nf_drops *d, const size_t len)
{
	const unsigned e = nf->egress[in];
	const uint8_t *h = nf->hdr[e];

	for (uint16_t i = 0; i < n; i++) {
		if (!is_ipv4(&pkts[i])) {
			DROP(out, pkts[i], d->other);
			continue;
		}
		memcpy(pkts[i].data, h, len);
		SEND(out, e, pkts[i]);
	}
}

/* l2: the MACs rewritten, the type left as it was */
static void burst_l2(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
		     struct nf_out *out, struct nf_drops *d)
{
	rewrite(nf, in, pkts, n, out, d, 12);
}

static void burst_mirror(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
			 struct nf_out *out, struct nf_drops *d)
{
	(void)nf;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *f = pkts[i].data, t[6];
		if (!is_ipv4(&pkts[i])) {
			DROP(out, pkts[i], d->other);
			continue;
		}
		memcpy(t, f + OFF_ETH_DST, 6);
		memcpy(f + OFF_ETH_DST, f + OFF_ETH_SRC, 6);
		memcpy(f + OFF_ETH_SRC, t, 6);
		SEND(out, in, pkts[i]);
	}
}

/* Strip(14) -> EtherEncap: the IPv4 packet that is left gets a whole new
 * 14-byte header in front, which is where the old one was: the frame keeps its
 * place and length, and all 14 bytes are written. */
static void burst_strip_encap(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
			      struct nf_out *out, struct nf_drops *d)
{
	rewrite(nf, in, pkts, n, out, d, 14);
}

static void burst_l3(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
		     struct nf_out *out, struct nf_drops *d)
{
	(void)in;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *f = pkts[i].data;
		if (pkts[i].len < OFF_IP || f[OFF_ETH_TYPE] != 0x08 || f[OFF_ETH_TYPE + 1] != 0x00) {
			DROP(out, pkts[i], d->other);
			continue;
		}
		/* the header whole, and its checksum holds: a router drops a header
		 * it cannot trust (RFC 1812, 5.2.2), as Linux does before it routes */
		unsigned total, ihl = ipv4_header(f, pkts[i].len, &total);
		if (!ihl || !ip_header_ok(f, ihl)) {
			DROP(out, pkts[i], d->bad);
			continue;
		}
		const struct nf_route *r = nf_route_lookup(nf->routes, ntohl(rd32n(f + OFF_IP_DST)));
		if (!r) {
			DROP(out, pkts[i], d->no_route);
			continue;
		}
		if (f[OFF_IP + 8] <= 1) {
			DROP(out, pkts[i], d->ttl);
			continue;
		}
		nf_ttl_decrement(f);
		memcpy(f, nf->hdr[r->port], 12);
		SEND(out, r->port, pkts[i]);
	}
}

/* Every kind; a new one is its burst function above and one line here. */
static const struct nf_kind kinds[] = {
	{ .name = "l2", .burst = burst_l2, .next_hop = true },
	{ .name = "mirror", .burst = burst_mirror, .hairpin = true },
	{ .name = "strip-encap", .burst = burst_strip_encap, .next_hop = true },
	{ .name = "l3", .burst = burst_l3, .next_hop = true, .routed = true },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct nf_kind *nf_kind_at(size_t i)
{
	return i < NKINDS ? &kinds[i] : NULL;
}

const struct nf_kind *nf_kind_find(const char *name)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

void nf_init(struct nf *nf, const struct nf_kind *kind, unsigned nports, const uint8_t mac[2][6],
	     const uint8_t next_hop[2][6], const struct nf_routes *routes)
{
	memset(nf, 0, sizeof(*nf));
	nf->kind = kind;
	nf->nports = nports;
	nf->routes = routes;
	nf->burst = kind->burst;
	for (unsigned e = 0; e < 2; e++) {
		memcpy(nf->hdr[e], next_hop[e], 6);
		memcpy(nf->hdr[e] + 6, mac[e], 6);
		nf->hdr[e][12] = 0x08;
		nf->hdr[e][13] = 0x00;
		nf->egress[e] = kind->hairpin || nports == 1 ? e : 1 - e;
	}
}
