/* mmap: AF_PACKET with PACKET_MMAP rings on a kernel interface.
 *
 * Two sockets, because the ring version is per socket: rx uses a TPACKET_V3
 * block ring (the kernel hands over whole blocks, few wake-ups), tx a
 * TPACKET_V2 frame ring kicked with one sendto() per burst, bypassing the
 * qdisc. The rx socket is used by the rx thread only and the tx socket by the
 * tx thread only, so the client role may split them.
 *
 * tx_alloc hands out buffers of a small staging area, not ring slots: the
 * kernel sends ring slots strictly in order and stops at the first one not
 * marked for sending, so a slot handed out and then released (or sent after a
 * later one) would stall the ring. tx_burst copies each frame into the next
 * free slot; for a 64-byte frame that copy is a few ns next to the kernel's
 * own per-packet work, and received frames (server, nf) need it anyway.
 *
 * A V3 block is given back to the kernel only when it has been walked to the
 * end and every frame handed out from it has been released or sent.
 *
 * rx hands out frames as the wire carried them (pktsock.h), from each frame
 * header's status: checksums left unfinished are finished (nf), VLAN tags put back
 * into the PACKET_RESERVE bytes the kernel leaves before each frame. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "api.h"
#include "iface.h"
#include "pktsock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RX_BLOCK_SIZE (1u << 16)
#define RX_BLOCKS 64
#define RX_BLOCK_TIMEOUT_MS 1    /* the kernel's smallest: bounds added latency at low rates */
#define TX_BLOCK_SIZE (1u << 16)
#define TX_SLOTS 1024
#define TX_DATA_OFFSET (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
#define FLUSH_MS 200

#define unlikely(x) __builtin_expect(!!(x), 0)

/* pkt.priv: rx frames carry (block + 1) << 1, staging buffers (index << 1) | 1. */
#define TAG_STAGE(i) ((void *)(((uintptr_t)(i) << 1) | 1))
#define TAG_BLOCK(b) ((void *)(((uintptr_t)(b) + 1) << 1))

struct mmap_api {
	int rx_fd, tx_fd;
	/* rx: TPACKET_V3 block ring */
	uint8_t *rx_map;
	size_t rx_size;
	uint32_t cur;            /* block being walked */
	uint32_t left;           /* frames of it not yet handed out */
	uint8_t *next;           /* next frame in it */
	uint32_t held[RX_BLOCKS];
	bool walked[RX_BLOCKS];
	uint64_t rx_dropped;
	/* tx: TPACKET_V2 frame ring */
	uint8_t *tx_map;
	size_t tx_size;
	uint32_t tx_slot_size, tx_slots, tx_head;
	uint16_t capacity;
	/* staging buffers for tx_alloc */
	uint8_t *stage;
	uint32_t *stage_free;
	uint32_t stage_n, stage_count;
};

static inline struct tpacket_block_desc *block(struct mmap_api *m, uint32_t b)
{
	return (struct tpacket_block_desc *)(m->rx_map + (size_t)b * RX_BLOCK_SIZE);
}

static inline struct tpacket2_hdr *slot(struct mmap_api *m, uint32_t s)
{
	return (struct tpacket2_hdr *)(m->tx_map + (size_t)s * m->tx_slot_size);
}

static void give_back(struct mmap_api *m, uint32_t b)
{
	m->walked[b] = false;
	__atomic_store_n(&block(m, b)->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

static int packet_socket(const char *what, int version)
{
	/* Protocol 0: nothing is queued before the ring exists and bind() says
	 * which interface and protocol to receive. */
	int fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		fprintf(stderr, "mmap: cannot open an AF_PACKET %s socket: %s%s\n", what, strerror(errno),
			errno == EPERM ? " (needs root or CAP_NET_RAW)" : "");
		return -1;
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0) {
		fprintf(stderr, "mmap: TPACKET_V%d not supported: %s\n", version + 1, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int bind_iface(int fd, int ifindex, uint16_t proto, const char *iface)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = ifindex,
	};
	if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
		fprintf(stderr, "mmap: cannot bind to %s: %s\n", iface, strerror(errno));
		return -1;
	}
	return 0;
}

static int open_rx(struct mmap_api *m, int ifindex, const struct api_conf *conf)
{
	const char *iface = conf->iface;
	struct tpacket_req3 req = {
		.tp_block_size = RX_BLOCK_SIZE, .tp_block_nr = RX_BLOCKS,
		.tp_frame_size = 2048, .tp_frame_nr = RX_BLOCK_SIZE / 2048 * RX_BLOCKS,
		.tp_retire_blk_tov = RX_BLOCK_TIMEOUT_MS,
	};
	int one = 1;

	m->rx_fd = packet_socket("rx", TPACKET_V3);
	if (m->rx_fd < 0)
		return -1;
	/* Frames this host sends out of the interface are not ours to count. */
	setsockopt(m->rx_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
	/* Room before each frame to put its VLAN tag back. */
	unsigned reserve = PKTSOCK_HEADROOM;
	if (setsockopt(m->rx_fd, SOL_PACKET, PACKET_RESERVE, &reserve, sizeof reserve) != 0) {
		fprintf(stderr, "mmap: PACKET_RESERVE: %s\n", strerror(errno));
		return -1;
	}
	if (setsockopt(m->rx_fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
		fprintf(stderr, "mmap: cannot create a %u MB rx ring: %s\n",
			RX_BLOCK_SIZE * RX_BLOCKS >> 20, strerror(errno));
		return -1;
	}
	m->rx_size = (size_t)RX_BLOCK_SIZE * RX_BLOCKS;
	m->rx_map = mmap(NULL, m->rx_size, PROT_READ | PROT_WRITE, MAP_SHARED, m->rx_fd, 0);
	if (m->rx_map == MAP_FAILED) {
		m->rx_map = NULL;
		fprintf(stderr, "mmap: cannot map the rx ring: %s\n", strerror(errno));
		return -1;
	}
	if (bind_iface(m->rx_fd, ifindex, ETH_P_ALL, iface) != 0)
		return -1;
	int err = pktsock_fanout(m->rx_fd, conf->queues, conf->egress);
	if (err) {
		fprintf(stderr, "mmap: PACKET_FANOUT on %s (queue %u of %u): %s\n", iface, conf->queue,
			conf->queues, strerror(-err));
		return -1;
	}
	return 0;
}

static int open_tx(struct mmap_api *m, int ifindex, const char *iface, unsigned frame_size, unsigned burst)
{
	struct tpacket_req req;
	int one = 1;

	m->tx_slot_size = 2048;
	while (m->tx_slot_size < TX_DATA_OFFSET + frame_size)
		m->tx_slot_size <<= 1;
	m->tx_slots = TX_SLOTS;
	req = (struct tpacket_req){
		.tp_block_size = TX_BLOCK_SIZE > m->tx_slot_size ? TX_BLOCK_SIZE : m->tx_slot_size,
		.tp_frame_size = m->tx_slot_size, .tp_frame_nr = TX_SLOTS,
	};
	req.tp_block_nr = TX_SLOTS / (req.tp_block_size / m->tx_slot_size);
	m->capacity = (uint16_t)(m->tx_slot_size - TX_DATA_OFFSET);

	m->tx_fd = packet_socket("tx", TPACKET_V2);
	if (m->tx_fd < 0)
		return -1;
	if (setsockopt(m->tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
		fprintf(stderr, "mmap: PACKET_QDISC_BYPASS not available (%s), frames go through the qdisc\n",
			strerror(errno));
	/* A frame the kernel rejects is skipped instead of blocking the ring. */
	setsockopt(m->tx_fd, SOL_PACKET, PACKET_LOSS, &one, sizeof one);
	if (setsockopt(m->tx_fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) != 0) {
		fprintf(stderr, "mmap: cannot create a tx ring of %u x %u B: %s\n",
			TX_SLOTS, m->tx_slot_size, strerror(errno));
		return -1;
	}
	m->tx_size = (size_t)req.tp_block_size * req.tp_block_nr;
	m->tx_map = mmap(NULL, m->tx_size, PROT_READ | PROT_WRITE, MAP_SHARED, m->tx_fd, 0);
	if (m->tx_map == MAP_FAILED) {
		m->tx_map = NULL;
		fprintf(stderr, "mmap: cannot map the tx ring: %s\n", strerror(errno));
		return -1;
	}
	m->stage_count = 2 * (burst ? burst : API_MAX_BURST);
	m->stage = malloc((size_t)m->stage_count * m->capacity);
	m->stage_free = malloc(sizeof(uint32_t) * m->stage_count);
	if (!m->stage || !m->stage_free) {
		fprintf(stderr, "mmap: out of memory\n");
		return -1;
	}
	for (uint32_t i = 0; i < m->stage_count; i++)
		m->stage_free[m->stage_n++] = m->stage_count - 1 - i;
	/* Protocol 0 keeps this socket from receiving; the kernel reads the
	 * protocol of each frame from its Ethernet header. */
	return bind_iface(m->tx_fd, ifindex, 0, iface);
}

static void kick(struct mmap_api *m)
{
	/* ENOBUFS/EAGAIN: frames stay marked and go with the next kick. */
	sendto(m->tx_fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
}

static bool tx_pending(struct mmap_api *m)
{
	for (uint32_t s = 0; s < m->tx_slots; s++)
		if (__atomic_load_n(&slot(m, s)->tp_status, __ATOMIC_ACQUIRE) &
		    (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))
			return true;
	return false;
}

static void mmap_free(struct mmap_api *m)
{
	if (m->tx_map) {
		/* Frames tx_burst accepted must leave before the ring goes away. */
		for (int ms = 0; ms < FLUSH_MS && tx_pending(m); ms++) {
			kick(m);
			nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
		}
		munmap(m->tx_map, m->tx_size);
	}
	if (m->rx_map)
		munmap(m->rx_map, m->rx_size);
	if (m->rx_fd >= 0)
		close(m->rx_fd);
	if (m->tx_fd >= 0)
		close(m->tx_fd);
	free(m->stage);
	free(m->stage_free);
	memset(m, 0, sizeof *m);
	m->rx_fd = m->tx_fd = -1;
}

static int mmap_open(struct api *a, const struct api_conf *conf)
{
	struct mmap_api *m = a->priv;
	int ifindex;

	memset(m, 0, sizeof *m);
	m->rx_fd = m->tx_fd = -1;
	if (!conf->iface || !*conf->iface || (ifindex = (int)if_nametoindex(conf->iface)) == 0) {
		fprintf(stderr, "mmap: no interface '%s'\n", conf->iface ? conf->iface : "");
		return -1;
	}
	if (conf->tx && iface_check_frame("mmap", conf->iface, conf->frame_size) != 0)
		return -1;
	/* A tx slot must also hold any frame received here (server, nf send
	 * them back: iface.h). */
	unsigned largest = conf->frame_size;
	int mtu = iface_mtu(conf->iface);
	if (conf->rx && mtu > 0 && iface_frame_max(mtu) > largest)
		largest = iface_frame_max(mtu);
	if ((conf->rx && open_rx(m, ifindex, conf) != 0) ||
	    (conf->tx && open_tx(m, ifindex, conf->iface, largest, conf->burst) != 0)) {
		mmap_free(m);
		return -1;
	}
	return 0;
}

static uint16_t mmap_tx_alloc(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct mmap_api *m = a->priv;

	if (n > m->stage_n)
		n = (uint16_t)m->stage_n;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t s = m->stage_free[--m->stage_n];
		pkts[i].data = m->stage + (size_t)s * m->capacity;
		pkts[i].len = m->capacity;
		pkts[i].priv = TAG_STAGE(s);
	}
	return n;
}

static inline void put_back(struct mmap_api *m, void *priv)
{
	uintptr_t tag = (uintptr_t)priv;

	if (tag & 1) {
		m->stage_free[m->stage_n++] = (uint32_t)(tag >> 1);
	} else {
		uint32_t b = (uint32_t)(tag >> 1) - 1;
		if (--m->held[b] == 0 && m->walked[b])
			give_back(m, b);
	}
}

static uint16_t mmap_tx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct mmap_api *m = a->priv;
	uint16_t i;

	for (i = 0; i < n; i++) {
		struct tpacket2_hdr *h = slot(m, m->tx_head);
		if (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))
			break;                   /* ring full: the kernel still owns this slot */
		if (unlikely(pkts[i].len > m->capacity))
			break;                   /* cannot happen: slots fit the MTU; refuse, never overrun */
		memcpy((uint8_t *)h + TX_DATA_OFFSET, pkts[i].data, pkts[i].len);
		h->tp_len = pkts[i].len;
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		if (++m->tx_head == m->tx_slots)
			m->tx_head = 0;
		put_back(m, pkts[i].priv);
	}
	kick(m);
	return i;
}

static uint16_t mmap_rx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct mmap_api *m = a->priv;
	uint16_t k = 0;

	while (k < n) {
		if (m->left == 0) {
			struct tpacket_block_desc *bd = block(m, m->cur);
			/* walked[] set: still ours, frames of it are held (ring full) */
			if (m->walked[m->cur] ||
			    !(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
				break;
			m->left = bd->hdr.bh1.num_pkts;
			m->next = (uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt;
			if (m->left == 0) {      /* retired empty by the timer */
				give_back(m, m->cur);
				m->cur = (m->cur + 1) % RX_BLOCKS;
				continue;
			}
		}
		struct tpacket3_hdr *h = (struct tpacket3_hdr *)m->next;
		pkts[k].len = (uint16_t)h->tp_snaplen;
		pkts[k].data = pktsock_wire(m->next + h->tp_mac, &pkts[k].len, h->tp_status,
					    h->hv1.tp_vlan_tci, h->hv1.tp_vlan_tpid, a->conf.forwards);
		pkts[k].priv = TAG_BLOCK(m->cur);
		m->held[m->cur]++;
		k++;
		m->next += h->tp_next_offset;
		if (--m->left == 0) {
			m->walked[m->cur] = true;
			m->cur = (m->cur + 1) % RX_BLOCKS;
		}
	}
	return k;
}

static void mmap_release(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct mmap_api *m = a->priv;

	for (uint16_t i = 0; i < n; i++)
		put_back(m, pkts[i].priv);
}

/* A TPACKET_V3 socket is readable once the kernel has handed a block over. */
static int mmap_rx_fds(struct api *a, int *fds, int max)
{
	return api_one_rx_fd(((struct mmap_api *)a->priv)->rx_fd, fds, max);
}

static void mmap_stats(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	struct mmap_api *m = a->priv;
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof st;

	/* Reading the counters resets them in the kernel. */
	if (m->rx_fd >= 0 && getsockopt(m->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		m->rx_dropped += st.tp_drops;
	*rx_dropped = m->rx_dropped;
	(void)tx_errors;
}

static void mmap_close(struct api *a)
{
	mmap_free(a->priv);
}

const struct api_ops api_mmap_ops = {
	.name = "mmap",
	.l2 = true,
	.thread_safe_rxtx = true,        /* one socket and ring per direction */
	.tx_foreign = false,             /* priv is this instance's own bookkeeping */
	.needs_iface = true,
	.queues = true,                  /* PACKET_FANOUT (pktsock.h) */
	.priv_size = sizeof(struct mmap_api),
	.open = mmap_open,
	.tx_alloc = mmap_tx_alloc,
	.tx_burst = mmap_tx_burst,
	.rx_burst = mmap_rx_burst,
	.release = mmap_release,
	.rx_fds = mmap_rx_fds,
	.stats = mmap_stats,
	.close = mmap_close,
};
