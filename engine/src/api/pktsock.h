/* What the kernel tells a packet socket about a frame besides its bytes
 * (raw: PACKET_AUXDATA; mmap: the ring's frame header), and how an api turns
 * that into the frame as the wire carried it (core/packet.h):
 *  - TP_STATUS_CSUMNOTREADY: the sender's kernel left a checksum for the
 *    device to finish (checksum offload): finished here for a role that
 *    sends frames on (nf), or the next kernel to receive them would drop
 *    them; no other role reads it. The status does not say which checksum:
 *    the outer UDP header's only when its field holds its pseudo-header sum
 *    (frame_csum_unfinished), not when it is 0 (a VXLAN or Geneve tunnel's
 *    outer UDP, the one left unfinished inside);
 *  - TP_STATUS_VLAN_VALID: the receiving kernel took the 802.1Q tag out of
 *    the frame (it always does, offload or not): put back, so that a tagged
 *    frame is `other` to every role, as it is on apis that see tags inline. */
#ifndef CNFPERF_PKTSOCK_H
#define CNFPERF_PKTSOCK_H

#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/packet.h"

#define PKTSOCK_HEADROOM 4       /* bytes before a received frame for its VLAN tag */

#ifndef TP_STATUS_VLAN_TPID_VALID
#define TP_STATUS_VLAN_TPID_VALID (1 << 6)
#endif

/* The frame at data (len bytes, PKTSOCK_HEADROOM writable bytes before it)
 * as the wire carried it: its start (4 bytes earlier when tagged); *len grows.
 * finish: the role sends frames on (api_conf.forwards), or the checksum stays
 * as it came. */
static inline uint8_t *pktsock_wire(uint8_t *data, uint16_t *len, uint32_t status, uint16_t tci,
				    uint16_t tpid, bool finish)
{
	if (__builtin_expect(status & TP_STATUS_CSUMNOTREADY, 0) && finish &&
	    frame_csum_unfinished(data, *len))
		frame_csum_finish(data, *len);
	if (__builtin_expect(status & TP_STATUS_VLAN_VALID, 0)) {
		*len = (uint16_t)(*len + 4);
		return frame_vlan_insert(data, status & TP_STATUS_VLAN_TPID_VALID ? tpid : ETH_P_8021Q, tci);
	}
	return data;
}

/* Queue `queue` of `queues` (api_conf): the port's sockets of this process
 * join one PACKET_FANOUT group, and the kernel hands each frame to one of
 * them by its flow's hash (a flow stays on one thread, in order), as a NIC's
 * RSS spreads a flow over its queues. A group is its id, per network
 * namespace, bound to one interface: the id is this process's and the
 * port's (egress). 0, or -errno. */
static inline int pktsock_fanout(int fd, unsigned queues, bool egress)
{
	if (queues < 2)
		return 0;
	int arg = (int)((((unsigned)getpid() << 1 | egress) & 0xffff) | (PACKET_FANOUT_HASH << 16));
	return setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) ? -errno : 0;
}

#endif
