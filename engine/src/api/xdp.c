/* xdp: AF_XDP socket through libxdp on one queue of a kernel interface.
 *
 * One umem holds every frame. Frames below rx_limit belong to the fill ring
 * (rx pool), the rest to tx_alloc (tx pool); a frame always goes back to the
 * pool it came from, whoever frees it. That keeps rx on one thread and tx on
 * another race-free (client role) as long as a thread only transmits frames
 * it allocated or received itself, which is what api.h promises. A received
 * frame transmitted as is (server, nf) returns to the rx pool when the
 * kernel completes it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "api.h"
#include "iface.h"
#include "../core/packet.h"

#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#define RX_RING 4096            /* room for a few ms of descheduling at 1 Mpps */
#define FILL_RING 4096
#define TX_RING 1024
#define COMP_RING 2048
#define RX_FRAMES (FILL_RING + RX_RING + API_MAX_BURST)
#define TX_FRAMES (TX_RING + API_MAX_BURST)
#define BUSY_RETRIES 100         /* x 10 ms */

/* --xdp-mode, in order: zero (auto) is the default. */
enum xdp_mode { MODE_AUTO, MODE_COPY, MODE_ZEROCOPY, MODE_SKB };
static const char *const mode_names[] = { "auto", "copy", "zerocopy", "skb" };

/* Its own options (api_ops.opts). */
struct xdp_own {
	enum xdp_mode mode;
	unsigned queue;
};

struct frame_stack {
	uint64_t *addr;
	uint32_t n;
};

struct xdp {
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	uint8_t *area;
	size_t area_size;
	uint64_t frame_mask;     /* clears the offset inside a frame */
	uint64_t rx_limit;       /* frames below this address belong to the rx pool */
	uint32_t frame_size;
	struct frame_stack rx_free, tx_free;
	int fd;
};

static inline void push(struct xdp *x, uint64_t addr)
{
	uint64_t base = addr & x->frame_mask;
	struct frame_stack *s = base < x->rx_limit ? &x->rx_free : &x->tx_free;
	s->addr[s->n++] = base;
}

static void refill(struct xdp *x)
{
	uint32_t idx, k = x->rx_free.n;

	if (k == 0)
		return;
	k = xsk_prod_nb_free(&x->fq, k);
	if (k > x->rx_free.n)
		k = x->rx_free.n;
	if (k == 0 || xsk_ring_prod__reserve(&x->fq, k, &idx) != k)
		return;
	for (uint32_t i = 0; i < k; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = x->rx_free.addr[--x->rx_free.n];
	xsk_ring_prod__submit(&x->fq, k);
}

static void reap_completions(struct xdp *x)
{
	uint32_t idx, k = xsk_ring_cons__peek(&x->cq, COMP_RING, &idx);

	for (uint32_t i = 0; i < k; i++)
		push(x, *xsk_ring_cons__comp_addr(&x->cq, idx + i));
	if (k)
		xsk_ring_cons__release(&x->cq, k);
}

/* Keep libxdp's and libbpf's warnings, drop their chatter. Without a bpffs
 * (network namespaces made by `ip netns exec`, containers) libxdp attaches its
 * program directly instead of through its dispatcher: fine for the one
 * socket per queue we open, so that warning is chatter too. */
static int print_warning(const char *fmt, va_list ap)
{
	char line[256];

	vsnprintf(line, sizeof line, fmt, ap);
	if (strstr(line, "bpffs"))
		return 0;
	return fprintf(stderr, "xdp: %s", line);
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return level == LIBXDP_WARN ? print_warning(fmt, ap) : 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? print_warning(fmt, ap) : 0;
}

/* A socket closed a moment ago still holds its queue until the kernel's
 * deferred release has run; back-to-back runs would see EBUSY. */
static int create_socket(struct xdp *x, const struct api_conf *conf, unsigned queue,
			 const struct xsk_socket_config *scfg)
{
	int err;

	for (int tries = 0;; tries++) {
		err = xsk_socket__create(&x->xsk, conf->iface, queue, x->umem,
					 conf->rx ? &x->rx : NULL, conf->tx ? &x->tx : NULL, scfg);
		if (err != -EBUSY || tries == BUSY_RETRIES)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	if (err)
		x->xsk = NULL;
	return err;
}

/* --xdp-mode -> where libxdp attaches its program and how the socket binds. */
static void mode_flags(enum xdp_mode mode, struct xsk_socket_config *cfg)
{
	cfg->bind_flags = XDP_USE_NEED_WAKEUP;
	switch (mode) {
	case MODE_AUTO:                                 /* native if the driver has it, zero-copy if it can */
		break;
	case MODE_COPY:
		cfg->xdp_flags = XDP_FLAGS_DRV_MODE;
		cfg->bind_flags |= XDP_COPY;
		break;
	case MODE_ZEROCOPY:
		cfg->xdp_flags = XDP_FLAGS_DRV_MODE;
		cfg->bind_flags |= XDP_ZEROCOPY;
		break;
	case MODE_SKB:
		cfg->xdp_flags = XDP_FLAGS_SKB_MODE;
		cfg->bind_flags |= XDP_COPY;
		break;
	}
}

static const char *bind_hint(int err, enum xdp_mode mode)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return " (needs root, or CAP_NET_ADMIN, CAP_BPF and CAP_SYS_ADMIN)";
	case EOPNOTSUPP:
	case EINVAL:
		if (mode == MODE_ZEROCOPY)
			return " (the driver has no AF_XDP zero-copy: use --xdp-mode copy)";
		if (mode == MODE_COPY)
			return " (the driver has no native XDP: use --xdp-mode skb)";
		return "";
	case EBUSY:
		return " (another XDP program or AF_XDP socket holds this queue)";
	case ENOMEM:
		return " (umem could not be locked: raise RLIMIT_MEMLOCK)";
	default:
		return "";
	}
}

static void xdp_free(struct xdp *x)
{
	if (x->xsk)
		xsk_socket__delete(x->xsk);        /* also detaches libxdp's program */
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area)
		munmap(x->area, x->area_size);
	free(x->rx_free.addr);
	free(x->tx_free.addr);
	memset(x, 0, sizeof *x);
}

/* The umem registered anew over the same area, for a second try at a
 * socket; 0, or -1 after saying why. */
static int remake_umem(struct xdp *x, const struct xsk_umem_config *ucfg)
{
	int err = xsk_umem__delete(x->umem);

	if (err) {
		fprintf(stderr, "xdp: cannot release the umem to try skb mode: %s\n", strerror(-err));
		return -1;
	}
	x->umem = NULL;
	err = xsk_umem__create(&x->umem, x->area, x->area_size, &x->fq, &x->cq, ucfg);
	if (err) {
		x->umem = NULL;
		fprintf(stderr, "xdp: cannot register the umem again to try skb mode: %s%s\n", strerror(-err),
			bind_hint(-err, MODE_SKB));
		return -1;
	}
	return 0;
}

static int xdp_open(struct api *a, const struct api_conf *conf)
{
	struct xdp *x = a->priv;
	const struct xdp_own *own = a->own;
	struct xsk_umem_config ucfg = {
		.fill_size = FILL_RING, .comp_size = COMP_RING,
		.frame_headroom = 0, .flags = 0,
	};
	struct xsk_socket_config scfg = { .rx_size = RX_RING, .tx_size = TX_RING };
	uint32_t rx_frames = conf->rx ? RX_FRAMES : 0;
	uint32_t tx_frames = conf->tx ? TX_FRAMES : 0;
	int err;

	if (!conf->iface || !*conf->iface || if_nametoindex(conf->iface) == 0) {
		fprintf(stderr, "xdp: no interface '%s'\n", conf->iface ? conf->iface : "");
		return -1;
	}
	if (conf->tx && iface_check_frame("xdp", conf->iface, conf->frame_size) != 0)
		return -1;
	mode_flags(own->mode, &scfg);
	/* A role that sends what it receives (nf) takes any frame the interface
	 * carries (iface.h), up to what one frame of umem holds. */
	unsigned largest = conf->frame_size;
	int mtu = iface_mtu(conf->iface);
	if (conf->rx && conf->tx && mtu > 0 && iface_frame_max(mtu) > largest)
		largest = iface_frame_max(mtu) + XDP_PACKET_HEADROOM <= 4096 ? iface_frame_max(mtu) :
			  4096 - XDP_PACKET_HEADROOM;
	/* The kernel puts received data XDP_PACKET_HEADROOM into a frame. */
	if (largest + XDP_PACKET_HEADROOM <= 2048)
		x->frame_size = 2048;
	else if (largest + XDP_PACKET_HEADROOM <= 4096)
		x->frame_size = 4096;
	else {
		fprintf(stderr, "xdp: frames over %d bytes need multi-buffer AF_XDP, which this api does not use\n",
			4096 - XDP_PACKET_HEADROOM);
		return -1;
	}
	ucfg.frame_size = x->frame_size;
	x->frame_mask = ~(uint64_t)(x->frame_size - 1);
	x->rx_limit = (uint64_t)rx_frames * x->frame_size;
	x->area_size = (size_t)(rx_frames + tx_frames) * x->frame_size;
	x->area = mmap(NULL, x->area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	x->rx_free.addr = malloc(sizeof(uint64_t) * (rx_frames + tx_frames));
	x->tx_free.addr = malloc(sizeof(uint64_t) * (rx_frames + tx_frames));
	if (x->area == MAP_FAILED || !x->rx_free.addr || !x->tx_free.addr) {
		if (x->area == MAP_FAILED)
			x->area = NULL;
		fprintf(stderr, "xdp: cannot allocate a %zu MB umem\n", x->area_size >> 20);
		goto fail;
	}
	for (uint32_t i = rx_frames + tx_frames; i-- > 0;)
		push(x, (uint64_t)i * x->frame_size);

	libxdp_set_print(libxdp_print);
	libbpf_set_print(libbpf_print);
	err = xsk_umem__create(&x->umem, x->area, x->area_size, &x->fq, &x->cq, &ucfg);
	if (err) {
		x->umem = NULL;
		fprintf(stderr, "xdp: cannot register umem: %s%s\n", strerror(-err), bind_hint(-err, MODE_AUTO));
		goto fail;
	}
	/* A sender needs no program: without one the interface's received
	 * traffic (ARP replies...) still reaches the kernel stack. */
	if (!conf->rx)
		scfg.libxdp_flags |= XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
	enum xdp_mode mode = own->mode;
	err = create_socket(x, conf, own->queue + conf->queue, &scfg);
	if (err == -EOPNOTSUPP && mode == MODE_AUTO && conf->rx) {
		/* libxdp asks for native mode and gives up when the driver has none
		 * (macvlan): auto means generic then, as --xdp-mode skb would. The
		 * failed socket was the umem's own descriptor, still bound to the
		 * queue, so the umem is made again. */
		mode = MODE_SKB;
		if (remake_umem(x, &ucfg) != 0)
			goto fail;
		mode_flags(MODE_SKB, &scfg);
		err = create_socket(x, conf, own->queue + conf->queue, &scfg);
	}
	if (err) {
		fprintf(stderr, "xdp: cannot open an AF_XDP socket on %s queue %u in %s mode%s: %s%s\n",
			conf->iface, own->queue + conf->queue, mode_names[mode],
			mode != own->mode ? " (auto's fallback: the driver has no native XDP)" : "",
			strerror(-err), bind_hint(-err, mode));
		goto fail;
	}
	x->fd = xsk_socket__fd(x->xsk);
	refill(x);
	if (conf->rx && mtu > 0 && iface_frame_max(mtu) > 4096 - XDP_PACKET_HEADROOM)
		/* Native XDP refuses such an MTU (veth) or asks for multi-buffer;
		 * generic XDP takes it, and drops what a frame of umem cannot hold
		 * with nothing said but the socket's counters. */
		fprintf(stderr, "xdp: %s carries frames of up to %u bytes (MTU %d): those over %d bytes do not "
			"fit a frame of umem and are dropped (api_rx_dropped)\n", conf->iface, iface_frame_max(mtu),
			mtu, 4096 - XDP_PACKET_HEADROOM);
	return 0;

fail:
	xdp_free(x);
	return -1;
}

static uint16_t xdp_tx_alloc(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct xdp *x = a->priv;

	if (x->tx_free.n < n)
		reap_completions(x);
	if (n > x->tx_free.n)
		n = (uint16_t)x->tx_free.n;
	for (uint16_t i = 0; i < n; i++) {
		uint64_t addr = x->tx_free.addr[--x->tx_free.n];
		pkts[i].data = x->area + addr;
		pkts[i].len = (uint16_t)x->frame_size;
		pkts[i].priv = (void *)(uintptr_t)addr;
	}
	return n;
}

static uint16_t xdp_tx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct xdp *x = a->priv;
	uint32_t idx, k;

	reap_completions(x);
	k = xsk_prod_nb_free(&x->tx, n);
	if (k > n)
		k = n;
	if (k && xsk_ring_prod__reserve(&x->tx, k, &idx) == k) {
		for (uint32_t i = 0; i < k; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
			d->addr = (uint64_t)(pkts[i].data - x->area);
			d->len = pkts[i].len;
			d->options = 0;
		}
		xsk_ring_prod__submit(&x->tx, k);
	} else {
		k = 0;
	}
	/* In copy mode the kernel transmits only inside this call; EAGAIN and
	 * ENOBUFS just mean "try again", the frames stay queued in the ring. */
	if (xsk_ring_prod__needs_wakeup(&x->tx))
		sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
	return (uint16_t)k;
}

static uint16_t xdp_rx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct xdp *x = a->priv;
	const bool finish = a->conf.forwards;
	uint32_t idx, k;

	refill(x);
	k = xsk_ring_cons__peek(&x->rx, n, &idx);
	if (k == 0) {
		if (xsk_ring_prod__needs_wakeup(&x->fq))
			recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		return 0;
	}
	for (uint32_t i = 0; i < k; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		pkts[i].data = x->area + d->addr;
		pkts[i].len = (uint16_t)d->len;
		pkts[i].priv = (void *)(uintptr_t)d->addr;
		/* A frame as the wire carries it (core/packet.h), for a role that
		 * sends it on (nf). On a veth the XDP program gets the sender's
		 * bytes with its UDP checksum unfinished, native mode and skb mode
		 * alike, and AF_XDP hands over no mark. */
		if (finish && frame_csum_unfinished(pkts[i].data, pkts[i].len))
			frame_csum_finish(pkts[i].data, pkts[i].len);
	}
	xsk_ring_cons__release(&x->rx, k);
	return (uint16_t)k;
}

static void xdp_release(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct xdp *x = a->priv;

	for (uint16_t i = 0; i < n; i++)
		push(x, (uint64_t)(pkts[i].data - x->area));
}

/* An AF_XDP socket is readable while its rx ring holds frames. */
static int xdp_rx_fds(struct api *a, int *fds, int max)
{
	return api_one_rx_fd(a->conf.rx ? ((struct xdp *)a->priv)->fd : -1, fds, max);
}

static void xdp_stats(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	struct xdp *x = a->priv;
	struct xdp_statistics st;
	socklen_t len = sizeof st;

	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0)
		return;
	*rx_dropped = st.rx_dropped + st.rx_ring_full;
	*tx_errors = st.tx_invalid_descs;
}

static void xdp_close(struct api *a)
{
	xdp_free(a->priv);
}

static bool set_mode(void *own, const char *arg, char *why, size_t whylen)
{
	for (unsigned m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++) {
		if (!strcmp(arg, mode_names[m])) {
			((struct xdp_own *)own)->mode = (enum xdp_mode)m;
			return true;
		}
	}
	snprintf(why, whylen, "'%s' is not one of auto, copy, zerocopy, skb", arg);
	return false;
}

static bool set_queue(void *own, const char *arg, char *why, size_t whylen)
{
	unsigned long v;

	return api_opt_uint(arg, 65535, &v, why, whylen) && (((struct xdp_own *)own)->queue = (unsigned)v, true);
}

static const struct api_opt xdp_opts[] = {
	{ .name = "xdp-mode", .value = "MODE", .help = "auto|copy|zerocopy|skb (default auto: the best the driver has)",
	  .set = set_mode },
	{ .name = "queue", .value = "N", .help = "NIC queue (default 0; --threads T: N to N+T-1)", .set = set_queue },
	{ .name = NULL },
};

const struct api_ops api_xdp_ops = {
	.name = "xdp",
	.l2 = true,
	.thread_safe_rxtx = true,        /* see the pool rule at the top */
	.tx_foreign = false,             /* priv is this instance's own bookkeeping */
	.needs_iface = true,
	.queues = true,                  /* --queue N on, one socket per queue */
	.opts = xdp_opts,
	.own_size = sizeof(struct xdp_own),
	.priv_size = sizeof(struct xdp),
	.open = xdp_open,
	.tx_alloc = xdp_tx_alloc,
	.tx_burst = xdp_tx_burst,
	.rx_burst = xdp_rx_burst,
	.release = xdp_release,
	.rx_fds = xdp_rx_fds,
	.stats = xdp_stats,
	.close = xdp_close,
};
