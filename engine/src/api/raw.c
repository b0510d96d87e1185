/* raw: one AF_PACKET socket bound to an interface; the engine builds whole
 * frames. PACKET_QDISC_BYPASS hands tx frames straight to the driver, and
 * PACKET_IGNORE_OUTGOING keeps our own transmissions (and those of other
 * sockets on the interface) out of rx. A socket that only transmits is bound
 * with protocol 0 so the kernel queues nothing to it.
 *
 * rx asks for PACKET_AUXDATA, a control message per frame, to hand out frames
 * as the wire carried them (pktsock.h): checksums the sender's kernel left
 * unfinished are finished (nf), VLAN tags the kernel took out are put back. */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "api.h"
#include "iface.h"
#include "pktsock.h"
#include "sock.h"
#include "../core/packet.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* room for one PACKET_AUXDATA control message */
#define CTRL_LEN CMSG_SPACE(sizeof(struct tpacket_auxdata))
#define RX_SLOT (PKTSOCK_HEADROOM + FRAME_MAX)

struct raw {
	int fd;
	bool mmsg;
	unsigned slot_tx, burst;
	uint8_t *txbuf, *rxbuf, *ctrl;
	struct mmsghdr *txm, *rxm;
	struct iovec *txiov, *rxiov;
	uint64_t tx_errors, rx_dropped;
};

static void raw_close(struct api *a)
{
	struct raw *r = a->priv;

	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->txbuf); free(r->rxbuf); free(r->ctrl); free(r->txm); free(r->rxm); free(r->txiov); free(r->rxiov);
}

static int fail(struct api *a, const char *what, int err)
{
	fprintf(stderr, "cnfperf-engine: raw: %s: %s\n", what, strerror(err));
	raw_close(a);
	return -err;
}

static int iface_facts(const char *iface, int *ifindex, int *mtu, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		err = -errno;
	*ifindex = ifr.ifr_ifindex;
	if (!err && ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	*mtu = ifr.ifr_mtu;
	if (!err && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

static int raw_open(struct api *a, const struct api_conf *c)
{
	struct raw *r = a->priv;
	const struct sock_own *own = a->own;
	unsigned n = c->burst ? c->burst : 1;
	int ifindex = 0, mtu = 0, one = 1, err;
	char what[96];

	r->fd = -1;
	r->burst = n;
	r->mmsg = own->mmsg;
	r->slot_tx = c->frame_size > FRAME_MIN_LEN ? c->frame_size : FRAME_MIN_LEN;
	if ((err = iface_facts(c->iface, &ifindex, &mtu, a->mac))) {
		snprintf(what, sizeof(what), "interface %s", c->iface);
		return fail(a, what, -err);
	}
	/* nf copies what it receives into these buffers (iface.h) */
	if (c->rx && c->tx && r->slot_tx < iface_frame_max(mtu))
		r->slot_tx = iface_frame_max(mtu);
	if (c->tx && c->frame_size > (unsigned)mtu + 14) {
		snprintf(what, sizeof(what), "%u-byte frames do not fit the MTU %d of %s", c->frame_size + FCS_LEN,
			 mtu, c->iface);
		return fail(a, what, EMSGSIZE);
	}
	uint16_t proto = c->rx ? htons(ETH_P_ALL) : 0;
	if ((r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto)) < 0)
		return fail(a, "AF_PACKET socket (needs CAP_NET_RAW)", errno);
	sock_setup(r->fd, c->rx);
	if (c->tx && setsockopt(r->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)))
		return fail(a, "PACKET_QDISC_BYPASS", errno);
	if (c->rx && setsockopt(r->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
		return fail(a, "PACKET_IGNORE_OUTGOING (Linux >= 4.20)", errno);
	if (c->rx && setsockopt(r->fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)))
		return fail(a, "PACKET_AUXDATA", errno);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = proto, .sll_ifindex = ifindex };
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		snprintf(what, sizeof(what), "bind to %s", c->iface);
		return fail(a, what, errno);
	}
	if (c->rx && (err = pktsock_fanout(r->fd, c->queues, c->egress))) {
		snprintf(what, sizeof(what), "PACKET_FANOUT on %s (queue %u of %u)", c->iface, c->queue, c->queues);
		return fail(a, what, -err);
	}
	r->txbuf = calloc(n, r->slot_tx);
	r->rxbuf = calloc(n, RX_SLOT);
	r->ctrl = calloc(n, CTRL_LEN);
	r->txm = calloc(n, sizeof(*r->txm));
	r->rxm = calloc(n, sizeof(*r->rxm));
	r->txiov = calloc(n, sizeof(*r->txiov));
	r->rxiov = calloc(n, sizeof(*r->rxiov));
	if (!r->txbuf || !r->rxbuf || !r->ctrl || !r->txm || !r->rxm || !r->txiov || !r->rxiov)
		return fail(a, "buffers", ENOMEM);
	for (unsigned i = 0; i < n; i++) {
		r->rxiov[i].iov_base = r->rxbuf + (size_t)i * RX_SLOT + PKTSOCK_HEADROOM;
		r->rxiov[i].iov_len = FRAME_MAX;
		r->rxm[i].msg_hdr.msg_iov = &r->rxiov[i];
		r->rxm[i].msg_hdr.msg_iovlen = 1;
		r->rxm[i].msg_hdr.msg_control = r->ctrl + (size_t)i * CTRL_LEN;
		r->txm[i].msg_hdr.msg_iov = &r->txiov[i];
		r->txm[i].msg_hdr.msg_iovlen = 1;
	}
	return 0;
}

static uint16_t raw_tx_alloc(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct raw *r = a->priv;

	if (n > r->burst)
		n = (uint16_t)r->burst;
	for (uint16_t i = 0; i < n; i++) {
		pkts[i].data = r->txbuf + (size_t)i * r->slot_tx;
		pkts[i].len = (uint16_t)r->slot_tx;
		pkts[i].priv = NULL;
	}
	return n;
}

static uint16_t raw_tx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct raw *r = a->priv;

	if (!r->mmsg) {
		for (uint16_t i = 0; i < n; i++) {
			if (send(r->fd, pkts[i].data, pkts[i].len, MSG_DONTWAIT) < 0) {
				if (!sock_full(errno))
					r->tx_errors++;
				return i;
			}
		}
		return n;
	}
	uint16_t done = 0;
	while (done < n) {
		unsigned left = (unsigned)(n - done), k = left > r->burst ? r->burst : left;
		for (unsigned i = 0; i < k; i++) {
			r->txiov[i].iov_base = pkts[done + i].data;
			r->txiov[i].iov_len = pkts[done + i].len;
		}
		int s = sendmmsg(r->fd, r->txm, k, MSG_DONTWAIT);
		if (s < 0) {
			if (!sock_full(errno))
				r->tx_errors++;
			return done;
		}
		done = (uint16_t)(done + s);
		if ((unsigned)s < k)
			break;
	}
	return done;
}

/* The frame of message m as the wire carried it, after its PACKET_AUXDATA. */
static inline void wire_form(struct pkt *p, struct msghdr *m, bool finish)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	struct tpacket_auxdata aux;

	if (!c || c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA)
		return;
	memcpy(&aux, CMSG_DATA(c), sizeof(aux));
	p->data = pktsock_wire(p->data, &p->len, aux.tp_status, aux.tp_vlan_tci, aux.tp_vlan_tpid, finish);
}

static uint16_t raw_rx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct raw *r = a->priv;
	uint16_t got = 0;

	if (n > r->burst)
		n = (uint16_t)r->burst;
	for (uint16_t i = 0; i < n; i++)
		r->rxm[i].msg_hdr.msg_controllen = CTRL_LEN;  /* the kernel writes what it used */
	if (r->mmsg) {
		int s = recvmmsg(r->fd, r->rxm, n, MSG_DONTWAIT, NULL);
		got = s > 0 ? (uint16_t)s : 0;
		for (uint16_t i = 0; i < got; i++)
			pkts[i].len = (uint16_t)r->rxm[i].msg_len;
	} else {
		for (; got < n; got++) {
			ssize_t s = recvmsg(r->fd, &r->rxm[got].msg_hdr, MSG_DONTWAIT);
			if (s < 0)
				break;
			pkts[got].len = (uint16_t)s;
		}
	}
	for (uint16_t i = 0; i < got; i++) {
		pkts[i].data = r->rxiov[i].iov_base;
		pkts[i].priv = NULL;
		wire_form(&pkts[i], &r->rxm[i].msg_hdr, a->conf.forwards);
	}
	return got;
}

static int raw_rx_fds(struct api *a, int *fds, int max)
{
	return api_one_rx_fd(a->conf.rx ? ((struct raw *)a->priv)->fd : -1, fds, max);
}

static void raw_release(struct api *a, struct pkt *pkts, uint16_t n)
{
	(void)a; (void)pkts; (void)n; /* buffers belong to the api and are reused */
}

static void raw_stats(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	struct raw *r = a->priv;
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	/* the kernel resets these counters on every read: accumulate */
	if (a->conf.rx && getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		r->rx_dropped += st.tp_drops;
	*rx_dropped = r->rx_dropped;
	*tx_errors = r->tx_errors;
}

const struct api_ops api_raw_ops = {
	.name = "raw",
	.l2 = true,
	.thread_safe_rxtx = true,
	.needs_iface = true,
	.queues = true,                  /* PACKET_FANOUT (pktsock.h) */
	.opts = sock_opts,
	.own_size = sizeof(struct sock_own),
	.priv_size = sizeof(struct raw),
	.open = raw_open,
	.tx_alloc = raw_tx_alloc,
	.tx_burst = raw_tx_burst,
	.rx_burst = raw_rx_burst,
	.release = raw_release,
	.rx_fds = raw_rx_fds,
	.stats = raw_stats,
	.close = raw_close,
};
