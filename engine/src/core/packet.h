/* The engine's frame: Ethernet / IPv4 (no options) / UDP / payload header.
 *
 *   0  dst MAC, 6 src MAC, 12 ethertype 0x0800
 *  14  IPv4: 0x45, tos, total length, id, DF, ttl 64, proto 17, checksum, src, dst
 *  34  UDP: sport, dport, length, checksum (0 = none, legal in IPv4)
 *  42  magic u16, seq u64, timestamp u64 (ns), all network byte order
 *  60  payload bytes up to the frame length (written and checked with --touch)
 *
 * Offsets, not packed structs: frames sit at any alignment in API buffers. */
#ifndef CNFPERF_PACKET_H
#define CNFPERF_PACKET_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <endian.h>

#define OFF_ETH_DST 0
#define OFF_ETH_SRC 6
#define OFF_ETH_TYPE 12
#define OFF_IP 14
#define OFF_IP_LEN 16
#define OFF_IP_FRAG 20
#define OFF_IP_PROTO 23
#define OFF_IP_CSUM 24
#define OFF_IP_SRC 26
#define OFF_IP_DST 30
#define OFF_UDP 34
#define OFF_UDP_SPORT 34
#define OFF_UDP_DPORT 36
#define OFF_UDP_LEN 38
#define OFF_UDP_CSUM 40
#define OFF_MAGIC 42
#define OFF_SEQ 44
#define OFF_TS 52
#define FRAME_HDR_LEN 42         /* what the kernel builds for the udp api */
#define FRAME_MIN_LEN 60         /* headers + payload header: a 64-byte frame with FCS */
#define FCS_LEN 4

#define PAYLOAD_MAGIC 0xCF7Eu
#define SEQ_WARMUP (UINT64_C(1) << 63)

struct frame_addr {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip;  /* network byte order */
	uint16_t sport, dport;    /* host byte order */
};

void frame_build(uint8_t *buf, unsigned len, const struct frame_addr *a);
uint16_t ip_checksum(const uint8_t *frame);          /* of the IPv4 header, field as 0 */
uint16_t udp_checksum(const uint8_t *frame);         /* over pseudo-header, header and data */
void frame_fix_checksums(uint8_t *frame);            /* both, in place (udp never 0) */
void frame_set_src_ip(uint8_t *frame, uint32_t ip);  /* keeps both checksums right */
void frame_set_dst_ip(uint8_t *frame, uint32_t ip);  /* the same for the destination */
/* RFC 1624 (eqn. 3) incremental update of a checksum for a 16-bit word that
 * changed from old to new: ~(~csum + ~old + new) in ones' complement. */
uint16_t csum_adjust(uint16_t csum, uint16_t old, uint16_t new);
void frame_touch(uint8_t *frame, unsigned len, uint64_t seq);

/* Checksums a sending kernel left to the hardware. With checksum offload (a
 * veth's default, and a bridge's or macvlan's on top of one) a kernel sends
 * UDP and TCP with the checksum field holding only the sum of the pseudo
 * header and the packet marked for the device to finish (CHECKSUM_PARTIAL).
 * A packet socket or AF_XDP hands over the bytes without the mark; sent on
 * as they are, they leave the mark behind, and the next kernel to receive
 * them checks the checksum and drops every datagram (UDP InCsumErrors). So
 * an api hands out frames as a wire carries them: finished.
 *
 * frame_csum_finish: the checksum of an unfragmented IPv4 UDP or TCP frame
 * whose field holds its pseudo-header sum, finished as a NIC finishes it:
 * the sum from the L4 header to the end of the IP packet, complemented (0 is
 * sent as 0xffff, as Linux's skb_checksum_help does). false when the frame is
 * not such a frame (left as it is). Apis call it when the kernel says so
 * (raw: PACKET_AUXDATA, mmap: the ring's status, TP_STATUS_CSUMNOTREADY).
 *
 * frame_csum_unfinished: for apis the kernel tells nothing (AF_XDP, DPDK's
 * af_packet and af_xdp PMDs): whether the field holds exactly the sum of its
 * pseudo-header, the value a kernel writes there for the device. A finished
 * checksum holds that value for one frame in 65,536, and finishing such a
 * frame writes the same value again (the sum over a valid packet is 0xffff),
 * so the test never breaks a good frame; it would repair a corrupted one
 * whose bad checksum happened to be that value. UDP's 0 (no checksum, what
 * the engine's own senders send) is never unfinished. */
bool frame_csum_finish(uint8_t *frame, unsigned len);
bool frame_csum_holds_pseudo(const uint8_t *frame, unsigned len);

/* frame_csum_holds_pseudo() with the engine's own frames decided inline: IPv4
 * without options, UDP, no checksum (0) is never unfinished. */
static inline bool frame_csum_unfinished(const uint8_t *frame, unsigned len)
{
	if (len >= FRAME_HDR_LEN && frame[OFF_IP] == 0x45 && frame[OFF_IP_PROTO] == 17 &&
	    frame[OFF_UDP_CSUM] == 0 && frame[OFF_UDP_CSUM + 1] == 0)
		return false;
	return frame_csum_holds_pseudo(frame, len);
}

/* The VLAN tag a kernel took out of a frame (802.1Q offload: the packet
 * socket sees the frame without it), put back where it was on the wire:
 * 4 bytes before frame must be the caller's to write. Returns the frame's new
 * start. Tagged frames are then `other` to every role, as on an api that
 * sees the tag inline (xdp, dpdk): no scenario asks for VLANs. */
static inline uint8_t *frame_vlan_insert(uint8_t *frame, uint16_t tpid, uint16_t tci)
{
	uint8_t *f = frame - 4;

	memmove(f, frame, 12);
	f[12] = (uint8_t)(tpid >> 8);
	f[13] = (uint8_t)tpid;
	f[14] = (uint8_t)(tci >> 8);
	f[15] = (uint8_t)tci;
	return f;
}
bool frame_touch_ok(const uint8_t *frame, unsigned len, uint64_t seq);

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return ntohs(v); }
static inline void wr16(uint8_t *p, uint16_t v) { v = htons(v); memcpy(p, &v, 2); }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }
static inline void wr64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static inline uint32_t rd32n(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; } /* stays in network order */
static inline void wr32n(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* What a receiver accepts as addressed to it. */
struct rx_filter {
	uint32_t ip;              /* network order; 0 = any address */
	uint32_t ip_more;         /* and this many after it (--ip-span - 1) */
	uint16_t port_lo, port_hi;/* UDP destination port range (host order) */
	bool l2;                  /* headers came from the wire: check the IP checksum */
};

enum rx_class { RX_OURS, RX_OTHER, RX_BAD };

/* The IPv4 header of a frame of len bytes whose type is IPv4, if it is whole:
 * version 4, IHL >= 5, IHL <= total length <= what the frame holds. Its length
 * in bytes (IHL) and the packet's total length in *total; 0 for a malformed
 * header. Its checksum is ip_header_ok()'s to check. */
static inline unsigned ipv4_header(const uint8_t *f, unsigned len, unsigned *total)
{
	if (len < OFF_IP + 20 || (f[OFF_IP] >> 4) != 4)
		return 0;
	unsigned ihl = (f[OFF_IP] & 0xfu) * 4u;
	*total = rd16(f + OFF_IP_LEN);
	return ihl >= 20 && *total >= ihl && *total <= len - OFF_IP ? ihl : 0;
}

/* The IPv4 header's checksum holds, over its ihl bytes (options too). */
static inline bool ip_header_ok(const uint8_t *frame, unsigned ihl)
{
	const uint8_t *ip = frame + OFF_IP;
	uint32_t sum = 0;

	for (unsigned i = 0; i < ihl; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* Not IPv4/UDP to our address and port -> RX_OTHER (ARP, IPv6 ND, someone
 * else's traffic on a bridge). Ours but malformed -> RX_BAD. */
static inline enum rx_class frame_classify(const uint8_t *d, unsigned len, const struct rx_filter *f)
{
	if (len < FRAME_HDR_LEN || d[OFF_ETH_TYPE] != 0x08 || d[OFF_ETH_TYPE + 1] != 0x00 ||
	    d[OFF_IP] != 0x45 || d[OFF_IP_PROTO] != 17)
		return RX_OTHER;
	if (f->ip && rd32n(d + OFF_IP_DST) != f->ip &&
	    (!f->ip_more || ntohl(rd32n(d + OFF_IP_DST)) - ntohl(f->ip) > f->ip_more))
		return RX_OTHER;
	uint16_t dport = rd16(d + OFF_UDP_DPORT);
	if (dport < f->port_lo || dport > f->port_hi)
		return RX_OTHER;
	unsigned ip_len = rd16(d + OFF_IP_LEN);
	if (len < FRAME_MIN_LEN || ip_len > len - OFF_IP || ip_len < FRAME_MIN_LEN - OFF_IP ||
	    rd16(d + OFF_UDP_LEN) != ip_len - 20 || (rd16(d + OFF_IP_FRAG) & 0x3fff) ||
	    rd16(d + OFF_MAGIC) != PAYLOAD_MAGIC)
		return RX_BAD;
	if (f->l2 && !ip_header_ok(d, 20))
		return RX_BAD;
	return RX_OURS;
}

/* Bytes as RFC 2544 counts a frame: with FCS, never below the 64-byte minimum. */
static inline unsigned wire_bytes(unsigned len)
{
	return len + FCS_LEN < 64 ? 64 : len + FCS_LEN;
}

#endif
