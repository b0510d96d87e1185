#include "packet.h"

static uint16_t fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Ones' complement sum of n bytes as big-endian 16-bit words, added to sum.
 * Reads 32-bit words in host order and swaps once at the end (the sum does
 * not care about byte order, RFC 1071), so a 1500-byte frame costs ~400 adds. */
static uint32_t sum16(const uint8_t *p, unsigned n, uint32_t sum)
{
	uint64_t acc = 0;
	uint32_t w;
	uint16_t h;

	for (; n >= 4; p += 4, n -= 4) {
		memcpy(&w, p, 4);
		acc += w;
	}
	if (n >= 2) {
		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		n -= 2;
	}
	if (n) {
		uint8_t last[2] = { p[0], 0 };
		memcpy(&h, last, 2);
		acc += h;
	}
	return sum + ntohs(fold(acc));
}

uint16_t ip_checksum(const uint8_t *frame)
{
	const uint8_t *ip = frame + OFF_IP;
	uint32_t sum = sum16(ip, 10, 0);

	sum = sum16(ip + 12, 8, sum); /* skip the checksum field itself */
	return (uint16_t)~fold(sum);
}

uint16_t udp_checksum(const uint8_t *frame)
{
	unsigned ulen = rd16(frame + OFF_UDP_LEN);
	uint32_t sum = sum16(frame + OFF_IP_SRC, 8, 0); /* src and dst address */

	sum += 17 + ulen;
	sum = sum16(frame + OFF_UDP, 6, sum);           /* ports and length, not the checksum */
	sum = sum16(frame + OFF_UDP + 8, ulen - 8, sum);
	uint16_t c = (uint16_t)~fold(sum);
	return c ? c : 0xffff; /* 0 would mean "no checksum" */
}

void frame_fix_checksums(uint8_t *frame)
{
	wr16(frame + OFF_IP_CSUM, ip_checksum(frame));
	wr16(frame + OFF_UDP_CSUM, udp_checksum(frame));
}

uint16_t csum_adjust(uint16_t csum, uint16_t old, uint16_t new)
{
	return (uint16_t)~fold((uint32_t)(uint16_t)~csum + (uint16_t)~old + new);
}

static void set_ip(uint8_t *frame, unsigned off, uint32_t ip)
{
	uint8_t old[4];
	uint16_t ucsum = rd16(frame + OFF_UDP_CSUM);

	memcpy(old, frame + off, 4);
	wr32n(frame + off, ip);
	wr16(frame + OFF_IP_CSUM, ip_checksum(frame));
	if (ucsum == 0) /* no UDP checksum stays none */
		return;
	for (int i = 0; i < 4; i += 2)
		ucsum = csum_adjust(ucsum, rd16(old + i), rd16(frame + off + i));
	wr16(frame + OFF_UDP_CSUM, ucsum ? ucsum : 0xffff);
}

void frame_set_src_ip(uint8_t *frame, uint32_t ip)
{
	set_ip(frame, OFF_IP_SRC, ip);
}

void frame_set_dst_ip(uint8_t *frame, uint32_t ip)
{
	set_ip(frame, OFF_IP_DST, ip);
}

void frame_build(uint8_t *buf, unsigned len, const struct frame_addr *a)
{
	memset(buf, 0, len);
	memcpy(buf + OFF_ETH_DST, a->dst_mac, 6);
	memcpy(buf + OFF_ETH_SRC, a->src_mac, 6);
	wr16(buf + OFF_ETH_TYPE, 0x0800);
	buf[OFF_IP] = 0x45;
	wr16(buf + OFF_IP_LEN, (uint16_t)(len - OFF_IP));
	wr16(buf + OFF_IP_FRAG, 0x4000);   /* DF: these frames are never fragmented */
	buf[OFF_IP + 8] = 64;              /* TTL */
	buf[OFF_IP_PROTO] = 17;
	wr32n(buf + OFF_IP_SRC, a->src_ip);
	wr32n(buf + OFF_IP_DST, a->dst_ip);
	wr16(buf + OFF_IP_CSUM, ip_checksum(buf));
	wr16(buf + OFF_UDP_SPORT, a->sport);
	wr16(buf + OFF_UDP_DPORT, a->dport);
	wr16(buf + OFF_UDP_LEN, (uint16_t)(len - OFF_UDP));
	wr16(buf + OFF_MAGIC, PAYLOAD_MAGIC);
}

/* The pattern depends on the sequence number so that a stale or swapped
 * buffer is caught, not just a flipped bit. */
void frame_touch(uint8_t *frame, unsigned len, uint64_t seq)
{
	uint8_t b = (uint8_t)seq;

	for (unsigned i = FRAME_MIN_LEN; i < len; i++)
		frame[i] = b++;
}

bool frame_touch_ok(const uint8_t *frame, unsigned len, uint64_t seq)
{
	uint8_t b = (uint8_t)seq;
	unsigned diff = 0;

	for (unsigned i = FRAME_MIN_LEN; i < len; i++)
		diff |= frame[i] ^ b++;
	return diff == 0;
}

/* The L4 header of an unfragmented IPv4 UDP or TCP frame: where it starts,
 * where the IP packet ends and where its checksum field is; false for
 * anything else. */
static bool l4_of(const uint8_t *f, unsigned len, unsigned *l4, unsigned *end, unsigned *field)
{
	unsigned total, ihl;

	if (len < OFF_IP || rd16(f + OFF_ETH_TYPE) != 0x0800 || !(ihl = ipv4_header(f, len, &total)) ||
	    (rd16(f + OFF_IP_FRAG) & 0x3fff))
		return false;
	unsigned at = f[OFF_IP_PROTO] == 17 ? 6 : f[OFF_IP_PROTO] == 6 ? 16 : 0;
	if (!at || total - ihl < (at == 6 ? 8u : 20u))
		return false;
	*l4 = OFF_IP + ihl;
	*end = OFF_IP + total;
	*field = *l4 + at;
	return true;
}

bool frame_csum_finish(uint8_t *frame, unsigned len)
{
	unsigned l4, end, field;

	if (!l4_of(frame, len, &l4, &end, &field))
		return false;
	/* the field's pseudo-header sum is part of what is summed */
	uint16_t c = (uint16_t)~fold(sum16(frame + l4, end - l4, 0));
	wr16(frame + field, c ? c : 0xffff);
	return true;
}

bool frame_csum_holds_pseudo(const uint8_t *frame, unsigned len)
{
	unsigned l4, end, field;

	if (!l4_of(frame, len, &l4, &end, &field))
		return false;
	uint16_t v = rd16(frame + field);
	if (v == 0 && frame[OFF_IP_PROTO] == 17)
		return false;
	uint32_t pseudo = sum16(frame + OFF_IP_SRC, 8, 0) + frame[OFF_IP_PROTO] + (end - l4);
	return v == fold(pseudo);
}
