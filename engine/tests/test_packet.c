/* Frame build/parse round trip and checksums against independent references. */
#include <stdlib.h>

#include "check.h"
#include "../src/core/packet.h"
#include "../src/api/pktsock.h"

/* byte-at-a-time RFC 1071 sum: the obvious version, to check the fast one */
static uint16_t ref_sum(const uint8_t *p, unsigned n, uint32_t sum)
{
	for (unsigned i = 0; i < n; i++)
		sum += i % 2 ? p[i] : (uint32_t)p[i] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static bool udp_ok(const uint8_t *f)
{
	unsigned ulen = rd16(f + OFF_UDP_LEN);
	uint8_t pseudo[12];

	memcpy(pseudo, f + OFF_IP_SRC, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	wr16(pseudo + 10, (uint16_t)ulen);
	uint32_t s = ref_sum(pseudo, 12, 0);
	return ref_sum(f + OFF_UDP, ulen, s) == 0xffff;
}

static struct frame_addr addr(void)
{
	struct frame_addr a = { .src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
				.sport = 9000, .dport = 9001 };
	inet_pton(AF_INET, "198.18.0.1", &a.src_ip);
	inet_pton(AF_INET, "198.18.0.2", &a.dst_ip);
	return a;
}

static void known_answer(void)
{
	/* the classic example header: checksum 0xb861 */
	uint8_t f[60] = { 0 };
	static const uint8_t ip[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
					0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	memcpy(f + OFF_IP, ip, 20);
	CHECK(ip_checksum(f) == 0xb861, "got %#x", ip_checksum(f));
	wr16(f + OFF_IP_CSUM, 0xb861);
	CHECK(ip_header_ok(f, 20), "valid header not accepted");
}

static void build_and_classify(unsigned len)
{
	uint8_t *f = calloc(1, len);
	struct frame_addr a = addr();
	struct rx_filter flt = { .ip = a.dst_ip, .port_lo = 9001, .port_hi = 9001, .l2 = true };

	frame_build(f, len, &a);
	CHECK(rd16(f + OFF_ETH_TYPE) == 0x0800, "ethertype");
	CHECK(rd16(f + OFF_IP_LEN) == len - 14, "ip total length %u for frame %u", rd16(f + OFF_IP_LEN), len);
	CHECK(rd16(f + OFF_UDP_LEN) == len - 34, "udp length");
	CHECK(ip_header_ok(f, 20), "ip checksum of built frame (len %u)", len);
	CHECK(ref_sum(f + OFF_IP, 20, 0) == 0xffff, "reference disagrees on ip checksum");
	CHECK(!memcmp(f + OFF_IP_SRC, &a.src_ip, 4) && f[OFF_IP_SRC] == 198 && f[OFF_IP_SRC + 3] == 1,
	      "source address in network order");
	CHECK(f[OFF_UDP_SPORT] == 9000 >> 8 && f[OFF_UDP_SPORT + 1] == (9000 & 0xff), "source port in network order");
	CHECK(rd16(f + OFF_UDP_CSUM) == 0, "udp checksum left 0 by the sender");

	wr64(f + OFF_SEQ, 0x0102030405060708ull);
	wr64(f + OFF_TS, 42);
	CHECK(f[OFF_SEQ] == 1 && f[OFF_SEQ + 7] == 8, "seq big-endian");
	CHECK(rd64(f + OFF_SEQ) == 0x0102030405060708ull && rd64(f + OFF_TS) == 42, "seq/ts round trip");
	CHECK(frame_classify(f, len, &flt) == RX_OURS, "own frame accepted (len %u)", len);

	/* checksums: fast == reference, and a fixed frame verifies */
	frame_fix_checksums(f);
	CHECK(ip_header_ok(f, 20) && udp_ok(f), "fixed checksums verify (len %u)", len);
	uint32_t ip2;
	inet_pton(AF_INET, "203.0.113.77", &ip2);
	frame_set_src_ip(f, ip2);
	CHECK(ip_header_ok(f, 20) && udp_ok(f), "incremental update after source rewrite (len %u)", len);

	/* touch pattern */
	frame_touch(f, len, 77);
	CHECK(frame_touch_ok(f, len, 77), "touched payload verifies");
	if (len > FRAME_MIN_LEN) {
		f[len - 1] ^= 0x10;
		CHECK(!frame_touch_ok(f, len, 77), "flipped payload bit caught");
		f[len - 1] ^= 0x10;
		CHECK(!frame_touch_ok(f, len, 78), "pattern of another seq caught");
	}

	/* classification: other vs bad */
	struct rx_filter other_port = flt;
	other_port.port_lo = other_port.port_hi = 9999;
	CHECK(frame_classify(f, len, &other_port) == RX_OTHER, "other port is other");
	struct rx_filter other_ip = flt;
	other_ip.ip = a.src_ip;
	CHECK(frame_classify(f, len, &other_ip) == RX_OTHER, "other address is other");
	struct rx_filter any = flt;
	any.ip = 0;
	CHECK(frame_classify(f, len, &any) == RX_OURS, "wildcard address");
	/* --ip-span: the destination one of a span of addresses */
	uint8_t keep[4];
	memcpy(keep, f + OFF_IP_DST, 4);
	struct rx_filter span = flt;
	span.ip_more = 2;
	frame_set_dst_ip(f, htonl(ntohl(flt.ip) + 2));
	CHECK(ip_header_ok(f, 20) && rd32n(f + OFF_IP_DST) == htonl(ntohl(flt.ip) + 2),
	      "destination rewritten, checksum kept right (len %u)", len);
	CHECK(frame_classify(f, len, &span) == RX_OURS, "the span's last address is ours");
	CHECK(frame_classify(f, len, &flt) == RX_OTHER, "without a span it is other");
	frame_set_dst_ip(f, htonl(ntohl(flt.ip) + 3));
	CHECK(frame_classify(f, len, &span) == RX_OTHER, "past the span is other");
	frame_set_dst_ip(f, htonl(ntohl(flt.ip) - 1));
	CHECK(frame_classify(f, len, &span) == RX_OTHER, "before the span is other");
	uint32_t back;
	memcpy(&back, keep, 4);
	frame_set_dst_ip(f, back);
	CHECK(frame_classify(f, len, &flt) == RX_OURS, "its own address again");
	wr16(f + OFF_MAGIC, 0x1234);
	CHECK(frame_classify(f, len, &flt) == RX_BAD, "wrong magic is bad");
	wr16(f + OFF_MAGIC, PAYLOAD_MAGIC);
	f[OFF_IP + 8]--; /* TTL changed without fixing the checksum */
	CHECK(frame_classify(f, len, &flt) == RX_BAD, "broken ip checksum is bad");
	struct rx_filter l3 = flt;
	l3.l2 = false;
	CHECK(frame_classify(f, len, &l3) == RX_OURS, "no checksum check when the kernel built headers");
	f[OFF_IP + 8]++;
	CHECK(frame_classify(f, len - 1, &flt) == RX_BAD, "truncated frame is bad");
	wr16(f + OFF_ETH_TYPE, 0x0806);
	CHECK(frame_classify(f, len, &flt) == RX_OTHER, "ARP is other");
	wr16(f + OFF_ETH_TYPE, 0x86dd);
	CHECK(frame_classify(f, len, &flt) == RX_OTHER, "IPv6 is other");
	free(f);
}

static void random_checksums(void)
{
	srand(7);
	for (int t = 0; t < 200; t++) {
		unsigned len = FRAME_MIN_LEN + (unsigned)rand() % 1455;
		uint8_t *f = malloc(len);
		struct frame_addr a = addr();
		frame_build(f, len, &a);
		for (unsigned i = OFF_MAGIC; i < len; i++)
			f[i] = (uint8_t)rand();
		frame_fix_checksums(f);
		CHECK(udp_ok(f), "udp checksum of random payload, len %u", len);
		CHECK(rd16(f + OFF_UDP_CSUM) != 0, "computed udp checksum is never 0");
		free(f);
	}
}

/* The sum of the pseudo-header (addresses, protocol, L4 length), folded and
 * not complemented: what a kernel writes into the field it leaves to the
 * device (Linux: ~csum_tcpudp_magic(saddr, daddr, len, proto, 0)). */
static uint16_t pseudo_sum(const uint8_t *f, uint8_t proto, unsigned l4len)
{
	uint8_t pseudo[12];

	memcpy(pseudo, f + OFF_IP_SRC, 8);
	pseudo[8] = 0;
	pseudo[9] = proto;
	wr16(pseudo + 10, (uint16_t)l4len);
	return ref_sum(pseudo, 12, 0);
}

/* A frame as a kernel with checksum offload sends it: random payload, the
 * UDP field holding its pseudo-header sum. */
static uint8_t *partial_frame(unsigned len)
{
	uint8_t *f = malloc(len);
	struct frame_addr a = addr();

	frame_build(f, len, &a);
	for (unsigned i = OFF_MAGIC; i < len; i++)
		f[i] = (uint8_t)rand();
	wr16(f + OFF_UDP_CSUM, pseudo_sum(f, 17, len - OFF_UDP));
	return f;
}

static void unfinished_checksums(void)
{
	srand(11);
	for (int t = 0; t < 300; t++) {
		unsigned len = FRAME_MIN_LEN + (unsigned)rand() % (9216 - FRAME_MIN_LEN);
		uint8_t *f = partial_frame(len);
		CHECK(!udp_ok(f), "a partial checksum does not verify (len %u)", len);
		CHECK(frame_csum_unfinished(f, len), "partial checksum seen (len %u)", len);
		CHECK(frame_csum_finish(f, len) && udp_ok(f), "finished checksum verifies (len %u)", len);
		CHECK(!frame_csum_unfinished(f, len), "a finished checksum is not unfinished (len %u)", len);
		free(f);
	}
}

/* Valid frames stay as they are: the test of the value never fires on a
 * finished checksum unless it equals the pseudo-header sum, and finishing
 * one that does writes the same value again. */
static void finished_checksums_stay(void)
{
	unsigned len = 200;
	uint8_t *f = partial_frame(len), *copy = malloc(len);
	uint16_t p = rd16(f + OFF_UDP_CSUM);

	/* a payload word chosen so that the partial value is also the valid one */
	wr16(f + len - 2, 0);
	uint8_t pseudo[12];
	memcpy(pseudo, f + OFF_IP_SRC, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	wr16(pseudo + 10, (uint16_t)(len - OFF_UDP));
	wr16(f + len - 2, (uint16_t)~ref_sum(f + OFF_UDP, len - OFF_UDP, ref_sum(pseudo, 12, 0)));
	CHECK(udp_ok(f) && rd16(f + OFF_UDP_CSUM) == p, "valid frame whose checksum is its pseudo sum");
	memcpy(copy, f, len);
	CHECK(frame_csum_unfinished(f, len), "looks unfinished");
	CHECK(frame_csum_finish(f, len) && !memcmp(f, copy, len), "finishing it changes nothing");

	f[len - 1] ^= 1;
	frame_fix_checksums(f);
	CHECK(!frame_csum_unfinished(f, len), "an ordinary valid checksum is left alone");
	wr16(f + OFF_UDP_CSUM, 0);
	CHECK(!frame_csum_unfinished(f, len), "UDP without a checksum (0) is left alone");
	free(f);
	free(copy);
}

static void finish_what_it_can(void)
{
	unsigned len = 120;
	uint8_t *f = partial_frame(len);

	/* TCP: the field 16 bytes into its header */
	f[OFF_IP_PROTO] = 6;
	wr16(f + OFF_IP_CSUM, ip_checksum(f));
	wr16(f + OFF_UDP + 16, pseudo_sum(f, 6, len - OFF_UDP));
	CHECK(frame_csum_unfinished(f, len) && frame_csum_finish(f, len), "TCP is finished too");
	CHECK(ref_sum(f + OFF_UDP, len - OFF_UDP, pseudo_sum(f, 6, len - OFF_UDP)) == 0xffff, "TCP checksum verifies");
	free(f);

	/* frames it cannot finish are left as they are */
	f = partial_frame(len);
	uint8_t *copy = malloc(len);
	wr16(f + OFF_IP_FRAG, 0x2000);      /* a first fragment: the checksum covers what follows */
	memcpy(copy, f, len);
	CHECK(!frame_csum_unfinished(f, len) && !frame_csum_finish(f, len) && !memcmp(f, copy, len), "fragment");
	wr16(f + OFF_IP_FRAG, 0x4000);
	f[OFF_IP_PROTO] = 1;
	CHECK(!frame_csum_finish(f, len), "ICMP");
	f[OFF_IP_PROTO] = 17;
	wr16(f + OFF_ETH_TYPE, 0x86dd);
	CHECK(!frame_csum_finish(f, len), "not IPv4");
	wr16(f + OFF_ETH_TYPE, 0x0800);
	wr16(f + OFF_IP_LEN, (uint16_t)(len - OFF_IP + 1));
	CHECK(!frame_csum_unfinished(f, len) && !frame_csum_finish(f, len), "IP length beyond the frame");
	wr16(f + OFF_IP_LEN, 24);
	CHECK(!frame_csum_finish(f, len), "too short for a UDP header");
	wr16(f + OFF_IP_LEN, (uint16_t)(len - OFF_IP - 10));   /* trailing padding is not summed */
	wr16(f + OFF_UDP_LEN, (uint16_t)(len - OFF_UDP - 10));
	wr16(f + OFF_UDP_CSUM, pseudo_sum(f, 17, len - OFF_UDP - 10));
	wr16(f + OFF_IP_CSUM, 0);
	wr16(f + OFF_IP_CSUM, ip_checksum(f));
	CHECK(frame_csum_finish(f, len) && udp_ok(f), "padding after the IP packet is left out");
	free(f);
	free(copy);
}

static void vlan_insert(void)
{
	uint8_t buf[4 + 60];
	struct frame_addr a = addr();

	frame_build(buf + 4, 60, &a);
	uint8_t *f = frame_vlan_insert(buf + 4, 0x8100, 0x2005);
	CHECK(f == buf && !memcmp(f, a.dst_mac, 6) && !memcmp(f + 6, a.src_mac, 6), "MACs moved to the front");
	CHECK(rd16(f + 12) == 0x8100 && rd16(f + 14) == 0x2005 && rd16(f + 16) == 0x0800, "tag, then the type");
	struct rx_filter flt = { .ip = 0, .port_lo = 9001, .port_hi = 9001, .l2 = true };
	CHECK(frame_classify(f, 64, &flt) == RX_OTHER, "a tagged frame is other");
}

/* What raw and mmap make of a packet socket's status (pktsock.h). */
static void wire_form(void)
{
	uint8_t buf[PKTSOCK_HEADROOM + 200];
	uint8_t *f = partial_frame(200), *data = buf + PKTSOCK_HEADROOM;
	uint16_t len = 200;

	memcpy(data, f, 200);
	CHECK(pktsock_wire(data, &len, TP_STATUS_USER, 0, 0, true) == data && len == 200 && !memcmp(data, f, 200),
	      "nothing said, nothing done");
	CHECK(pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_CSUMNOTREADY, 0, 0, false) == data &&
	      !memcmp(data, f, 200), "for a role that does not send frames on, it stays unfinished");
	CHECK(pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_CSUMNOTREADY, 0, 0, true) == data && udp_ok(data),
	      "a checksum the kernel calls unfinished is finished");
	uint8_t *w = pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_VLAN_VALID, 0x0064, 0, false);
	CHECK(w == buf && len == 204 && rd16(w + 12) == 0x8100 && rd16(w + 14) == 0x0064 && udp_ok(w + 4),
	      "a VLAN tag goes back in, 802.1Q unless the kernel says which");
	memcpy(data, f, 200);
	len = 200;
	w = pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID, 5, 0x88a8, false);
	CHECK(w == buf && rd16(w + 12) == 0x88a8 && rd16(w + 14) == 5, "an 802.1ad tag as the kernel says");
	/* the status says a checksum is unfinished, not which one: a tunnel's
	 * outer UDP without a checksum (0), the one left inside, stays as it is */
	memcpy(data, f, 200);
	len = 200;
	wr16(data + OFF_UDP_CSUM, 0);
	CHECK(pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_CSUMNOTREADY, 0, 0, true) == data &&
	      rd16(data + OFF_UDP_CSUM) == 0, "UDP's 0 stays 0 (was %#x)", rd16(data + OFF_UDP_CSUM));
	memcpy(data, f, 200);
	frame_fix_checksums(data);
	uint8_t copy[200];
	memcpy(copy, data, 200);
	CHECK(pktsock_wire(data, &len, TP_STATUS_USER | TP_STATUS_CSUMNOTREADY, 0, 0, true) == data &&
	      !memcmp(data, copy, 200), "a field that is not its pseudo-header sum is not the one");
	free(f);
}

int main(void)
{
	known_answer();
	static const unsigned lens[] = { 60, 61, 124, 507, 1514, 9216 };
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		build_and_classify(lens[i]);
	random_checksums();
	unfinished_checksums();
	finished_checksums_stay();
	finish_what_it_can();
	vlan_insert();
	wire_form();
	CHECK(wire_bytes(60) == 64 && wire_bytes(1514) == 1518 && wire_bytes(42) == 64, "RFC 2544 sizes");
	return check_done("packet");
}
