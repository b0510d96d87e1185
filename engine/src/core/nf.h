/* What the nf role does to a burst, apart from moving it: one function per
 * kind, chosen once at start (nf->burst), so the burst loop never branches on
 * the kind. Pure frame work, no api calls: unit-tested on crafted frames.
 * The kinds are one table (nf.c): --nf, --help and --version read it.
 *
 *   l2           dst MAC := next hop of the egress port, src MAC := that
 *                port's MAC (testpmd's `mac` forwarding mode)
 *   mirror       swap the MACs, back out of the port it came in on (Click's
 *                EtherMirror)
 *   strip-encap  strip the 14-byte Ethernet header and put a new one on: dst
 *                next hop, src egress MAC, type IPv4 (Click's Strip(14) ->
 *                EtherEncap(0x0800, ...))
 *   l3           IPv4 router: longest prefix match over --route, TTL
 *                decremented (checksum updated, RFC 1624), MACs as for l2
 *
 * Frames that are not IPv4 are dropped as `other`, whatever the kind; l3 also
 * drops malformed IPv4 and headers whose checksum is wrong (`bad`), unrouted
 * destinations (`no_route`) and frames whose TTL would reach 0 (`ttl`). Ports
 * are numbered 0 and 1 here, 1 and 2 on the command line. */
#ifndef CNFPERF_NF_H
#define CNFPERF_NF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../api/api.h"

#define NF_MAX_ROUTES 256

struct nf_route {
	uint32_t net, mask;      /* host byte order; net has no bits outside mask */
	uint8_t len;             /* prefix length, 0..32 */
	uint8_t port;            /* egress port, 0 or 1 */
};

/* The routing table: routes sorted by prefix length, longest first, so a
 * linear scan's first match is the longest. At most NF_MAX_ROUTES routes
 * (a handful in practice: a few ns each), correctness before speed. */
struct nf_routes {
	struct nf_route r[NF_MAX_ROUTES];
	unsigned n;
};

/* Adds net/len -> port (net in host order, no bits past len). The same prefix
 * again replaces its port. false when the table is full. */
bool nf_route_add(struct nf_routes *t, uint32_t net, unsigned len, unsigned port);
const struct nf_route *nf_route_lookup(const struct nf_routes *t, uint32_t dst);

struct nf_drops {
	uint64_t other, bad, no_route, ttl;
};

/* Where the frames of one burst go: per egress port, and those to release. */
struct nf_out {
	uint16_t ntx[2], ndrop;
	struct pkt tx[2][API_MAX_BURST];
	struct pkt drop[API_MAX_BURST];
};

struct nf;
typedef void (*nf_burst_fn)(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
			    struct nf_out *out, struct nf_drops *d);

/* A kind: its name (--nf), its burst function, and what the option parser
 * checks a command line against. */
struct nf_kind {
	const char *name;
	nf_burst_fn burst;
	bool hairpin;    /* frames leave by the port they came in on: one port only */
	bool next_hop;   /* writes the next hop's MAC: --dst-mac (and --dst-mac2) needed */
	bool routed;     /* egress by --route (one at least); next hops only of the ports routes name */
};

/* The table, in the order --help and --version list them; the first is the
 * default. The i-th (NULL past the last), or the one of that name (or NULL). */
const struct nf_kind *nf_kind_at(size_t i);
const struct nf_kind *nf_kind_find(const char *name);

struct nf {
	const struct nf_kind *kind;
	unsigned nports;            /* 1: frames leave by the port they came in on */
	uint8_t hdr[2][14];         /* per egress port: next hop, its MAC, type IPv4 */
	unsigned egress[2];         /* all but routed kinds: the port frames from port i leave by */
	const struct nf_routes *routes;
	nf_burst_fn burst;
};

/* mac[i]: the source MAC of frames leaving port i; next_hop[i]: their
 * destination (unused by mirror). routes: l3's table (kept by the caller). */
void nf_init(struct nf *nf, const struct nf_kind *kind, unsigned nports, const uint8_t mac[2][6],
	     const uint8_t next_hop[2][6], const struct nf_routes *routes);

/* Empties out (counts), then sorts the burst of n frames that came in on port
 * `in` into out and counts the drops in d. Frames are rewritten in place. */
static inline void nf_burst(const struct nf *nf, unsigned in, struct pkt *pkts, uint16_t n,
			    struct nf_out *out, struct nf_drops *d)
{
	out->ntx[0] = out->ntx[1] = out->ndrop = 0;
	nf->burst(nf, in, pkts, n, out, d);
}

/* The IPv4 header at frame + 14 with its TTL one lower and its checksum
 * updated incrementally (RFC 1624, eqn. 3): equal to a full recompute when the
 * checksum was right. The caller has checked that the TTL is above 1. */
void nf_ttl_decrement(uint8_t *frame);

#endif
