/* udp: kernel UDP sockets, one per flow (source port sport .. sport+flows-1).
 *
 * The kernel builds the headers, so roles still see whole frames: on tx the
 * payload after the 42 header bytes goes out of the socket bound to the
 * frame's source port, to the frame's destination; on rx synthetic headers
 * (peer address/port as source, ours as destination, true lengths) are
 * written in front of the payload. A socket is connected to the peer when the
 * role names one and transmits (send, client): connected sends skip the
 * per-packet route lookup and the client hears only its server. */
#include <linux/sock_diag.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "sock.h"
#include "../core/packet.h"

struct udp {
	int *fd;
	unsigned nfd, rr;
	uint16_t sport0;
	uint32_t peer_ip;         /* connected peer (network order), 0 = none */
	uint16_t peer_port;
	bool mmsg;
	unsigned slot_tx, burst;
	uint8_t *txbuf, *rxbuf;
	struct mmsghdr *txm, *rxm;
	struct iovec *txiov, *rxiov;
	struct sockaddr_in *txaddr, *rxaddr;
	uint64_t tx_errors;
};

static void udp_close(struct api *a)
{
	struct udp *u = a->priv;

	for (unsigned i = 0; u->fd && i < u->nfd; i++)
		if (u->fd[i] >= 0)
			close(u->fd[i]);
	free(u->fd); free(u->txbuf); free(u->rxbuf);
	free(u->txm); free(u->rxm); free(u->txiov); free(u->rxiov);
	free(u->txaddr); free(u->rxaddr);
}

static int fail(struct api *a, const char *what, int err)
{
	fprintf(stderr, "cnfperf-engine: udp: %s: %s\n", what, strerror(err));
	udp_close(a);
	return -err;
}

static int open_socket(struct udp *u, const struct api_conf *c, unsigned i, char *what, size_t wlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = c->src_ip,
				   .sin_port = htons((uint16_t)(c->sport + i)) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	u->fd[i] = fd;
	if (fd < 0)
		return snprintf(what, wlen, "socket"), -errno;
	if (c->iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, c->iface, (socklen_t)strlen(c->iface) + 1))
		return snprintf(what, wlen, "bind to device %s", c->iface), -errno;
	sock_setup(fd, c->rx);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
		return snprintf(what, wlen, "bind to port %u", c->sport + i), -errno;
	if (u->peer_ip) {
		struct sockaddr_in peer = { .sin_family = AF_INET, .sin_addr.s_addr = u->peer_ip,
					    .sin_port = htons(u->peer_port) };
		if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)))
			return snprintf(what, wlen, "connect"), -errno;
	}
	return 0;
}

static int udp_open(struct api *a, const struct api_conf *c)
{
	struct udp *u = a->priv;
	const struct sock_own *own = a->own;
	unsigned n = c->burst ? c->burst : 1, nfd = c->flows ? c->flows : 1;
	char what[64];

	u->nfd = nfd;
	u->burst = n;
	u->sport0 = c->sport;
	u->mmsg = own->mmsg;
	u->slot_tx = c->frame_size > FRAME_MIN_LEN ? c->frame_size : FRAME_MIN_LEN;
	if (c->tx && c->dst_ip && c->dport) {
		u->peer_ip = c->dst_ip;
		u->peer_port = c->dport;
	}
	u->fd = malloc(nfd * sizeof(*u->fd));
	u->txbuf = calloc(n, u->slot_tx);
	u->rxbuf = calloc(n, FRAME_MAX);
	u->txm = calloc(n, sizeof(*u->txm));
	u->rxm = calloc(n, sizeof(*u->rxm));
	u->txiov = calloc(n, sizeof(*u->txiov));
	u->rxiov = calloc(n, sizeof(*u->rxiov));
	u->txaddr = calloc(n, sizeof(*u->txaddr));
	u->rxaddr = calloc(n, sizeof(*u->rxaddr));
	if (!u->fd || !u->txbuf || !u->rxbuf || !u->txm || !u->rxm || !u->txiov || !u->rxiov ||
	    !u->txaddr || !u->rxaddr)
		return fail(a, "buffers", ENOMEM);
	for (unsigned i = 0; i < nfd; i++)
		u->fd[i] = -1;
	for (unsigned i = 0; i < nfd; i++) {
		int err = open_socket(u, c, i, what, sizeof(what));
		if (err)
			return fail(a, what, -err);
	}
	for (unsigned i = 0; i < n; i++) {
		u->rxiov[i].iov_base = u->rxbuf + (size_t)i * FRAME_MAX + FRAME_HDR_LEN;
		u->rxiov[i].iov_len = FRAME_MAX - FRAME_HDR_LEN;
		u->rxm[i].msg_hdr.msg_iov = &u->rxiov[i];
		u->rxm[i].msg_hdr.msg_iovlen = 1;
		u->txm[i].msg_hdr.msg_iov = &u->txiov[i];
		u->txm[i].msg_hdr.msg_iovlen = 1;
	}
	return 0;
}

static uint16_t udp_tx_alloc(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct udp *u = a->priv;

	if (n > u->burst)
		n = (uint16_t)u->burst;
	for (uint16_t i = 0; i < n; i++) {
		pkts[i].data = u->txbuf + (size_t)i * u->slot_tx;
		pkts[i].len = (uint16_t)u->slot_tx;
		pkts[i].priv = NULL;
	}
	return n;
}

static inline int fd_of(const struct udp *u, const uint8_t *frame)
{
	unsigned i = (unsigned)(rd16(frame + OFF_UDP_SPORT) - u->sport0);

	return i < u->nfd ? u->fd[i] : u->fd[0];
}

/* NULL when the connected peer is the frame's destination */
static inline struct sockaddr_in *dest_of(struct udp *u, const uint8_t *frame, struct sockaddr_in *sin)
{
	uint32_t ip = rd32n(frame + OFF_IP_DST);
	uint16_t port = rd16(frame + OFF_UDP_DPORT);

	if (u->peer_ip && ip == u->peer_ip && port == u->peer_port)
		return NULL;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = ip;
	sin->sin_port = htons(port);
	return sin;
}

static void tx_error(struct udp *u, int err)
{
	if (!sock_full(err))
		u->tx_errors++;
}

static uint16_t tx_single(struct udp *u, struct pkt *pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *d = pkts[i].data;
		struct sockaddr_in *to = dest_of(u, d, &u->txaddr[0]);
		ssize_t r = sendto(fd_of(u, d), d + FRAME_HDR_LEN, pkts[i].len - FRAME_HDR_LEN, MSG_DONTWAIT,
				   (struct sockaddr *)to, to ? sizeof(*to) : 0);
		if (r < 0) {
			tx_error(u, errno);
			return i;
		}
	}
	return n;
}

static uint16_t tx_mmsg(struct udp *u, struct pkt *pkts, uint16_t n)
{
	uint16_t done = 0;

	while (done < n) {
		int fd = fd_of(u, pkts[done].data);
		unsigned k = 0;
		/* one sendmmsg per run of frames leaving the same socket */
		for (; done + k < n && fd_of(u, pkts[done + k].data) == fd; k++) {
			const uint8_t *d = pkts[done + k].data;
			struct msghdr *h = &u->txm[k].msg_hdr;
			struct sockaddr_in *to = dest_of(u, d, &u->txaddr[k]);
			u->txiov[k].iov_base = (void *)(d + FRAME_HDR_LEN);
			u->txiov[k].iov_len = pkts[done + k].len - FRAME_HDR_LEN;
			h->msg_name = to;
			h->msg_namelen = to ? sizeof(*to) : 0;
		}
		int r = sendmmsg(fd, u->txm, k, MSG_DONTWAIT);
		if (r < 0) {
			tx_error(u, errno);
			return done;
		}
		done = (uint16_t)(done + r);
		if ((unsigned)r < k)
			return done;
	}
	return done;
}

static uint16_t udp_tx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct udp *u = a->priv;

	return u->mmsg ? tx_mmsg(u, pkts, n) : tx_single(u, pkts, n);
}

/* Headers as if the datagram had come off the wire to this socket. */
static inline void synth(const struct udp *u, uint8_t *f, unsigned payload, const struct sockaddr_in *from,
			 uint32_t local_ip, unsigned sock)
{
	memset(f, 0, FRAME_HDR_LEN);
	f[OFF_ETH_TYPE] = 0x08;
	f[OFF_IP] = 0x45;
	wr16(f + OFF_IP_LEN, (uint16_t)(payload + 28));
	f[OFF_IP + 8] = 64;
	f[OFF_IP_PROTO] = 17;
	wr32n(f + OFF_IP_SRC, from->sin_addr.s_addr);
	wr32n(f + OFF_IP_DST, local_ip);
	memcpy(f + OFF_UDP_SPORT, &from->sin_port, 2);
	wr16(f + OFF_UDP_DPORT, (uint16_t)(u->sport0 + sock));
	wr16(f + OFF_UDP_LEN, (uint16_t)(payload + 8));
}

static uint16_t rx_one_socket(struct api *a, unsigned s, struct pkt *pkts, uint16_t n)
{
	struct udp *u = a->priv;
	uint16_t got = 0;

	if (u->mmsg) {
		for (uint16_t i = 0; i < n; i++) {
			u->rxm[i].msg_hdr.msg_name = &u->rxaddr[i];
			u->rxm[i].msg_hdr.msg_namelen = sizeof(u->rxaddr[i]);
		}
		int r = recvmmsg(u->fd[s], u->rxm, n, MSG_DONTWAIT, NULL);
		got = r > 0 ? (uint16_t)r : 0;
		for (uint16_t i = 0; i < got; i++)
			pkts[i].len = (uint16_t)(u->rxm[i].msg_len + FRAME_HDR_LEN);
	} else {
		for (; got < n; got++) {
			socklen_t alen = sizeof(u->rxaddr[got]);
			ssize_t r = recvfrom(u->fd[s], u->rxiov[got].iov_base, u->rxiov[got].iov_len,
					     MSG_DONTWAIT, (struct sockaddr *)&u->rxaddr[got], &alen);
			if (r < 0)
				break;
			pkts[got].len = (uint16_t)(r + FRAME_HDR_LEN);
		}
	}
	for (uint16_t i = 0; i < got; i++) {
		pkts[i].data = u->rxbuf + (size_t)i * FRAME_MAX;
		pkts[i].priv = NULL;
		synth(u, pkts[i].data, pkts[i].len - FRAME_HDR_LEN, &u->rxaddr[i], a->conf.src_ip, s);
	}
	return got;
}

static uint16_t udp_rx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct udp *u = a->priv;

	if (n > u->burst)
		n = (uint16_t)u->burst;
	/* several sockets (a client's flows): take turns, one socket per burst */
	for (unsigned k = 0; k < u->nfd; k++) {
		unsigned s = (u->rr + k) % u->nfd;
		uint16_t got = rx_one_socket(a, s, pkts, n);
		if (got) {
			u->rr = s + 1;
			return got;
		}
	}
	return 0;
}

static int udp_rx_fds(struct api *a, int *fds, int max)
{
	struct udp *u = a->priv;

	for (int i = 0; i < max && i < (int)u->nfd; i++)
		fds[i] = u->fd[i];
	return a->conf.rx ? (int)u->nfd : 0;
}

static void udp_release(struct api *a, struct pkt *pkts, uint16_t n)
{
	(void)a; (void)pkts; (void)n; /* buffers belong to the api and are reused */
}

static void udp_stats(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	struct udp *u = a->priv;
	uint64_t drops = 0;

	for (unsigned i = 0; i < u->nfd; i++) {
		uint32_t mem[SK_MEMINFO_VARS] = { 0 };
		socklen_t len = sizeof(mem);
		if (getsockopt(u->fd[i], SOL_SOCKET, SO_MEMINFO, mem, &len) == 0 &&
		    len > SK_MEMINFO_DROPS * sizeof(uint32_t))
			drops += mem[SK_MEMINFO_DROPS];
	}
	*rx_dropped = drops;
	*tx_errors = u->tx_errors;
}

const struct api_ops api_udp_ops = {
	.name = "udp",
	.l2 = false,
	.thread_safe_rxtx = true,
	.opts = sock_opts,
	.own_size = sizeof(struct sock_own),
	.priv_size = sizeof(struct udp),
	.open = udp_open,
	.tx_alloc = udp_tx_alloc,
	.tx_burst = udp_tx_burst,
	.rx_burst = udp_rx_burst,
	.release = udp_release,
	.rx_fds = udp_rx_fds,
	.stats = udp_stats,
	.close = udp_close,
};
